#!/bin/bash -eu
# ClusterFuzzLite build: the same targets as ci/nightly.sh, with the sanitizer ClusterFuzzLite
# asks for ($SANITIZER: address for fuzzing, coverage for coverage reports), plus each target's
# seed corpus (the class seeds, the regression seeds and the last nightly merge), dictionary and
# libFuzzer options.
cd "$SRC/dispatch-fuzz"
minor="$(rustc -vV | sed -n 's/^release: 1\.\([0-9]*\).*/\1/p')"
if [ "${minor:-0}" -lt 95 ]; then
  echo "rustc $(rustc -vV | sed -n 's/^release: //p') is too old: burn 0.23.0-pre.1 needs 1.95 (see the Dockerfile's NIGHTLY)" >&2
  exit 1
fi
# -O alone drops debug assertions and overflow checks (cargo-fuzz adds them only without -O or
# with -a); the catalogue has panics only they raise (Flex's dtype assertions, the int
# cumulative overflow), so classes would differ from `cargo test` and the nightly job.
host="$(rustc -vV | sed -n 's/^host: //p')"
for target in $(cargo fuzz list); do
  # Each target with only the features it needs: dispatch_ops links no wgpu, cubecl or naga
  # (a smaller, faster sanitizer build), dispatch_ops_wgpu gets `--features wgpu`.
  features="$(ci/target-features.sh "$target")"
  cargo fuzz build -O --debug-assertions ${features:+--features "$features"} "$target"
  cp "target/$host/release/$target" "$OUT/"
  [ -f "fuzz/$target.options" ] && cp "fuzz/$target.options" "$OUT/"
  # Both targets read the same byte format, so they share the dictionary and the seeds.
  cp fuzz/dispatch_ops.dict "$OUT/"
  (cd corpus/dispatch_ops && find . -type f ! -name '*.json' -print0 | xargs -0 zip -q -j "$OUT/${target}_seed_corpus.zip")
done
