#!/bin/bash -eu
# ClusterFuzzLite build: the same targets as ci/nightly.sh, with the sanitizer ClusterFuzzLite
# asks for ($SANITIZER: address for fuzzing, coverage for coverage reports), plus each target's
# seed corpus (the class seeds and the regression seeds; ClusterFuzzLite keeps the merged corpus
# in its own storage), dictionary and libFuzzer options (fuzz/<target>.options, the one place
# they are kept).
cd "$SRC/dispatch-fuzz"
minor="$(rustc -vV | sed -n 's/^release: 1\.\([0-9]*\).*/\1/p')"
if [ "${minor:-0}" -lt 95 ]; then
  echo "rustc $(rustc -vV | sed -n 's/^release: //p') is too old: burn 0.23.0-pre.1 needs 1.95 (see the Dockerfile's NIGHTLY)" >&2
  exit 1
fi
host="$(rustc -vV | sed -n 's/^host: //p')"
target_dir="$(cargo metadata --format-version 1 --no-deps | jq -r .target_directory)"
# An assignment, so a failing `cargo fuzz list` fails the build (a loop over its output would
# just build nothing).
targets="$(cargo fuzz list)"
[ -n "$targets" ] || { echo "cargo fuzz list names no target" >&2; exit 1; }
for target in $targets; do
  # Each target with only the features it needs: dispatch_ops links no wgpu, cubecl or naga
  # (a smaller, faster sanitizer build), dispatch_ops_wgpu gets `--features wgpu`.
  features="$(ci/target-features.sh "$target")"
  if [ "$SANITIZER" = coverage ]; then
    # In coverage mode the image's cargo wrapper turns `cargo fuzz build` into a plain `cargo
    # build --bins` in fuzz/ and drops every argument, --features with them, so a target with
    # required-features is never built (google/oss-fuzz infra/base-images/base-builder/cargo).
    # Build the coverage binaries as it would, each with its features (its `cargo build` still
    # goes through the wrapper, which maps the source paths). Debug assertions stay on: the
    # catalogue has panics only they raise, so the covered paths are the fuzzed ones.
    (
      cd fuzz
      RUSTFLAGS="$RUSTFLAGS --remap-path-prefix fuzz_targets=$PWD/fuzz_targets" \
        cargo build --bins ${features:+--features "$features"}
    )
    cp "$target_dir/debug/$target" "$OUT/"
  else
    # -O alone drops debug assertions and overflow checks (cargo-fuzz adds them only without -O
    # or with -a); the catalogue has panics only they raise (Flex's dtype assertions, the int
    # cumulative overflow), so classes would differ from `cargo test` and the nightly job.
    cargo fuzz build -O --debug-assertions ${features:+--features "$features"} "$target"
    cp "$target_dir/$host/release/$target" "$OUT/"
  fi
  cp "fuzz/$target.options" "$OUT/"
  # Both targets read the same byte format, so they share the dictionary and the seeds.
  cp fuzz/dispatch_ops.dict "$OUT/"
  (cd corpus/dispatch_ops && find . -path ./nightly -prune -o -type f ! -name '*.json' -print0 \
    | xargs -0 zip -q -j "$OUT/${target}_seed_corpus.zip")
done
