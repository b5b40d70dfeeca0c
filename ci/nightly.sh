#!/usr/bin/env bash
# The nightly fuzz job: build, fuzz every target with one libFuzzer worker per core, merge new
# inputs into corpus/ (atomically), bucket every artifact by signature, minimize one reproducer
# per new bucket into regressions/pending/, measure line coverage, and write a report.
#
# Usage: ci/nightly.sh [--duration SECONDS] [--jobs N] [--targets "a b"] [--out DIR]
#                      [--no-coverage] [--no-merge] [--options-dir DIR] [--features LIST]
#                      [--store DIR] [--seeds DIR]
#
#   --duration  seconds of fuzzing per target          (default 600; $NIGHTLY_DURATION)
#   --jobs      parallel fuzzing workers                (default: all cores; $NIGHTLY_JOBS)
#   --targets   fuzz targets, space-separated           (default: every target in fuzz/)
#   --out       output folder; a second run on the same folder resumes: it keeps the working
#               corpus, artifacts and earlier logs (rotated), and re-triages everything
#                                                       (default nightly-out; $NIGHTLY_OUT)
#   --no-coverage  skip `cargo fuzz coverage` + llvm-cov (saves a coverage build)
#   --no-merge     leave corpus/ untouched (the merged corpus stays under OUT/merged/)
#   --options-dir  where each target's <target>.options (libFuzzer's dictionary and limits, read
#                  through ci/libfuzzer-flags.sh) is read from (default fuzz/; the end-to-end
#                  check passes copies with a shorter timeout)
#   --features     extra cargo features for every build, comma-separated (ci/nightly-e2e.sh:
#                  planted-faults)
#   --store        the regression store triage compares with and promotes into (its pending/)
#                  (default regressions)
#   --seeds        a folder of more seeds, read, never written: DIR/<target> for each target
#                  that has one (ci/nightly-e2e.sh: a program for each planted bug, so a short
#                  run meets it at its first input, however the mutations go)
#
# Each target starts from the shared seeds (corpus/dispatch_ops: the class seeds, every stored
# program under regressions/, the plain target's last merge; both targets read one byte format)
# and from its own last merge, corpus/<target>/nightly, which the merge phase rewrites.
#
# Exit status: 0 nothing new, 1 new finding(s) (a bucket no stored case has), 2 the job failed.
# Nothing under OUT/artifacts is ever deleted: an artifact is either promoted (minimized into
# regressions/pending/) or listed in the report with why it was not.
set -uo pipefail
cd "$(dirname "$0")/.."

duration="${NIGHTLY_DURATION:-600}"
jobs="${NIGHTLY_JOBS:-$(nproc)}"
targets=""
out="${NIGHTLY_OUT:-nightly-out}"
coverage=1
merge=1
options_dir=fuzz
extra_features=""
store=regressions
extra_seeds=""
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --no-coverage) coverage=0; shift ;;
    --no-merge) merge=0; shift ;;
    --options-dir) options_dir="$2"; shift 2 ;;
    --features) extra_features="$2"; shift 2 ;;
    --store) store="$2"; shift 2 ;;
    --seeds) extra_seeds="$2"; shift 2 ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "nightly: unknown flag $1 (see --help)" >&2; exit 2 ;;
  esac
done

fail() { echo "nightly: $*" >&2; exit 2; }
mkdir -p "$out"/{logs,artifacts,corpus,merged,coverage,state} || fail "cannot create $out"
out="$(cd "$out" && pwd)"
# Logs of an earlier run on the same folder are kept, numbered, never overwritten.
# The host triple cargo fuzz builds for, and the folder of a dependency crate (any version,
# registry, git or [patch]ed path), so a Burn bump or another machine needs no edit here.
host="$(rustc -vV | sed -n 's/^host: //p')"
crate_dir() {
  cargo metadata --format-version 1 2>/dev/null \
    | grep -o "\"manifest_path\":\"[^\"]*/$1\(-[0-9][^/\"]*\)\{0,1\}/Cargo.toml\"" | head -1 \
    | sed -e 's/^"manifest_path":"//' -e 's#/Cargo.toml"$##'
}
rotate() { local f="$1" n=1; [ -e "$f" ] || return 0; while [ -e "$f.$n" ]; do n=$((n + 1)); done; mv "$f" "$f.$n"; }
# One fuzzing worker: runs the target until `end` (epoch seconds), again after each finding,
# each line of its log stamped with the seconds since the worker began (libFuzzer prints no
# time outside fork mode; the report draws its chart from them).
# A wgpu process grows by every kernel it compiles (fuzz/dispatch_ops_wgpu.options: about 300
# MiB a minute on llvmpipe, the 4,096 MiB limit after about ten minutes), so it is started again
# after `wgpu_process_s` seconds, before libFuzzer would end it with an oom artifact.
wgpu_process_s=480
# The features a target's build takes: its own (ci/target-features.sh) and the extra ones.
features_of() {
  local own
  own="$(ci/target-features.sh "$1")"
  echo "${own}${own:+${extra_features:+,}}${extra_features}"
}
# The corpus folders a target reads (never writes): the shared seeds and its own last merge.
seed_dirs() {
  echo corpus/dispatch_ops
  [ "$1" = dispatch_ops ] || echo "corpus/$1/nightly"
  [ -z "$extra_seeds" ] || [ ! -d "$extra_seeds/$1" ] || echo "$extra_seeds/$1"
}
worker() {
  local bin="$1" target="$2" end="$3" log="$4" start left line run flags
  flags="$(ci/libfuzzer-flags.sh "$target" "$options_dir")" || return 2
  rotate "$log"
  start=$EPOCHSECONDS
  while left=$(( end - EPOCHSECONDS )); [ "$left" -gt 0 ]; do
    run="$left"
    if [ "$target" = dispatch_ops_wgpu ] && [ "$run" -gt "$wgpu_process_s" ]; then
      run="$wgpu_process_s"
    fi
    # shellcheck disable=SC2046,SC2086 # the seed folders and flags are words
    "$bin" "$out/corpus/$target" $(seed_dirs "$target") -max_total_time="$run" $flags \
      -artifact_prefix="$out/artifacts/$target/" -print_final_stats=1 2>&1 \
      | while IFS= read -r line; do printf '%d\t%s\n' $(( EPOCHSECONDS - start )) "$line"; done
  done >"$log"
}
timings="$out/timings.tsv"
rotate "$timings"
phase_start=0
phase() { phase_start=$(date +%s); echo "== nightly: $1"; }
phase_end() { echo -e "$1\t$(( $(date +%s) - phase_start ))" >>"$timings"; }

phase "setup"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked >>"$out/logs/setup.log" 2>&1 \
  || fail "cannot install cargo-fuzz (see $out/logs/setup.log)"
if [ "$coverage" = 1 ]; then
  rustup component add llvm-tools-preview >>"$out/logs/setup.log" 2>&1 \
    || { echo "nightly: no llvm-tools-preview: coverage skipped"; coverage=0; }
fi
[ -n "$targets" ] || targets="$(cargo fuzz list)"
phase_end setup

phase "build"
rotate "$out/logs/build.log"
# One release build of the instrumented targets (stable toolchain, no sanitizer) and one debug
# build of the CLI: promote records snapshots as `cargo test` sees them (debug assertions on).
# Each target with only the features it needs (ci/target-features.sh).
for target in $targets; do
  ci/libfuzzer-flags.sh "$target" "$options_dir" >/dev/null || fail "no options for $target in $options_dir"
  features="$(features_of "$target")"
  cargo fuzz build -s none ${features:+--features "$features"} "$target" >>"$out/logs/build.log" 2>&1 \
    || fail "fuzz build of $target failed (see $out/logs/build.log)"
done
cargo build -p dispatch-fuzz ${extra_features:+--features "$extra_features"} >>"$out/logs/build.log" 2>&1 \
  || fail "CLI build failed (see $out/logs/build.log)"
cli=target/debug/dispatch-fuzz
phase_end build

status=0
for target in $targets; do
  mkdir -p "$out/corpus/$target" "$out/artifacts/$target" corpus/"$target"/nightly
  phase "fuzz $target (${duration}s, $jobs workers)"
  # $jobs independent libFuzzer processes on one shared corpus folder (ours, under OUT: new
  # inputs land there and each worker reloads the others' every second); the checked-in corpus
  # (the shared seeds and this target's last merge) is read, never written. Not fork mode: its
  # jobs live min(300, n) seconds each, restart from sqrt(corpus) seeds and merge through a
  # third process, and ran at 36% of one process per job on 2 cores. A worker stopped by a new
  # finding (its artifact is kept) starts again for the time left, as fork mode's
  # -ignore_crashes went on.
  bin="target/$host/release/$target"
  [ -x "$bin" ] || fail "no $bin after the build"
  end=$(( EPOCHSECONDS + duration ))
  for w in $(seq 1 "$jobs"); do
    worker "$bin" "$target" "$end" "$out/logs/fuzz-$target.$w.log" &
  done
  wait
  # libFuzzer exits non-zero after a finding; only a run that never started is a failure. A
  # worker whose every start stopped on a seed's finding, while loading the corpus, left that
  # finding: it goes to triage, and the log says the target did no fuzzing.
  if ! grep -q "cov:" "$out/logs/fuzz-$target".*.log; then
    if [ -n "$(ls -A "$out/artifacts/$target" 2>/dev/null)" ]; then
      echo "nightly: $target stopped on a seed's finding at every start (no fuzzing; its artifacts go to triage)"
    else
      fail "fuzzing $target never started (see $out/logs/fuzz-$target.1.log)"
    fi
  fi
  phase_end "fuzz $target"

  phase "merge $target"
  # cmin by libFuzzer's -merge=1 into a fresh folder, resumable through its control file; the
  # checked-in folder is swapped only once the merge has succeeded, by two renames, so a failed
  # or interrupted merge never loses the old corpus (a leftover .old is restored on the next run).
  dest=corpus/"$target"/nightly
  [ -d "$dest.old" ] && [ ! -d "$dest" ] && mv "$dest.old" "$dest"
  rm -rf "$dest.old"
  mkdir -p "$dest"
  fresh="$out/merged/$target"
  [ -f "$out/state/merge-$target.ctl" ] || { rm -rf "$fresh"; mkdir -p "$fresh"; }
  bin="target/$host/release/$target"
  rotate "$out/logs/merge-$target.log"
  flags="$(ci/libfuzzer-flags.sh "$target" "$options_dir")"
  # shellcheck disable=SC2086 # the flags are words
  if "$bin" -merge=1 -merge_control_file="$out/state/merge-$target.ctl" $flags \
      -artifact_prefix="$out/artifacts/$target/" \
      "$fresh" "$dest" "$out/corpus/$target" >"$out/logs/merge-$target.log" 2>&1; then
    rm -f "$out/state/merge-$target.ctl"
    if [ "$merge" = 1 ]; then
      staged="$dest.new"
      rm -rf "$staged" && cp -r "$fresh" "$staged" && mv "$dest" "$dest.old" && mv "$staged" "$dest" && rm -rf "$dest.old"
    fi
  else
    echo "nightly: merge of $target failed; corpus/ left as it was (see $out/logs/merge-$target.log)"
    status=2
  fi
  phase_end "merge $target"

  phase "triage $target"
  # Each artifact is decoded and run with its target's own backends (the wgpu target's with
  # wgpu), a timeout or out-of-memory one again under the target's limits.
  "$cli" triage --target "$target" --artifacts "$out/artifacts/$target" \
    --options "$options_dir/$target.options" \
    --corpus corpus/"$target"/nightly --corpus "$out/corpus/$target" \
    --regressions "$store" --out "$out/triage-$target.json" --promote \
    >>"$out/logs/triage-$target.log" 2>&1
  case $? in
    0) ;;
    1) [ "$status" = 0 ] && status=1 ;;
    *) echo "nightly: triage of $target failed (see $out/logs/triage-$target.log)"; status=2 ;;
  esac
  tail -1 "$out/logs/triage-$target.log"
  phase_end "minimize and triage $target"

  if [ "$coverage" = 1 ]; then
    phase "coverage $target"
    rotate "$out/logs/coverage-$target.log"
    # cargo fuzz coverage reads each folder's files, not its subfolders: name them all.
    cov_dirs=()
    for d in $(seed_dirs "$target"); do
      cov_dirs+=("$d")
      for sub in "$d"/*/; do [ -d "$sub" ] && cov_dirs+=("${sub%/}"); done
    done
    # Findings in the corpus (tonight's crashes may be in it) print instead of aborting: an
    # aborted run writes no profile and cargo fuzz coverage gives up.
    features="$(features_of "$target")"
    if DISPATCH_FUZZ_NO_ABORT=1 cargo fuzz coverage -s none ${features:+--features "$features"} \
        "$target" "${cov_dirs[@]}" \
        >"$out/logs/coverage-$target.log" 2>&1; then
      llvm_bin="$(rustc --print sysroot)/lib/rustlib/$host/bin"
      covbin="$(find target -path "*coverage*/release/$target" -type f | head -1)"
      profdata="fuzz/coverage/$target/coverage.profdata"
      # Source folders of the Burn crates the harness builds, whatever their version or
      # location (registry, git or a [patch]ed checkout), from cargo metadata: the areas the
      # report totals and the crates whose catalogued guards it counts hits of.
      dirs=()
      for crate in burn-dispatch burn-capture burn-router burn-tensor burn-autodiff burn-flex; do
        dirs+=("$(crate_dir "$crate")/src")
      done
      "$llvm_bin/llvm-cov" export "$covbin" -instr-profile="$profdata" "${dirs[@]}" \
        >"$out/coverage/$target.json" 2>>"$out/logs/coverage-$target.log"
    else
      echo "nightly: coverage of $target failed (see $out/logs/coverage-$target.log)"
    fi
    phase_end "coverage $target"
  fi
done

phase "report"
report_args=()
for target in $targets; do report_args+=(--targets "$target"); done
"$cli" nightly-report --dir "$out" "${report_args[@]}" || status=2
phase_end report
echo "nightly: exit $status (0 nothing new, 1 new findings, 2 job failure); report in $out/report.md"
exit "$status"
