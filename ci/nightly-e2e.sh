#!/usr/bin/env bash
# End-to-end check of the nightly job: ci/nightly.sh runs both targets on a short budget with
# two Burn bugs planted in the harness's op calls (the `planted-faults` feature, built only
# here: harness/src/interpreter/planted.rs), and each must come out of it as a new bucket of
# its class, minimized into the store's pending/ with the right backends, the job exiting 1:
#
#   - a wgpu-only wrong value (unary exp one too large on wgpu): a `flex-wgpu-divergence` of the
#     dispatch_ops_wgpu target, decoded with its wgpu steps and recorded with its adapter;
#   - a Flex-side hang (unary cos never returns on Flex): a `timeout` of the plain target (and of
#     the wgpu one where its run met it), run again and minimized in processes of their own
#     under the target's time limit.
#
# Each target also reads a seed of the bug it must meet (--seeds), so neither rests on a short
# run's mutations. The store is a scratch copy of regressions/ and the corpus is left as it is (--no-merge);
# the targets run under copies of their options with shorter timeouts (5 s for dispatch_ops,
# 15 s for dispatch_ops_wgpu, whose first attention kernel compiles for about 5 s on llvmpipe),
# so a hang costs seconds, not the nightly's 10-30. At exit the CLI and the targets are rebuilt without the
# planted bugs (a relink: both builds stay cached), so no later run meets them.
#
# Usage: ci/nightly-e2e.sh [--duration SECONDS] [--out DIR]
#   --duration  seconds of fuzzing per target (default 90: about 3 minutes in all)
#   --out       output folder (default target/nightly-e2e, emptied first)
set -uo pipefail
cd "$(dirname "$0")/.."

duration=90
out=target/nightly-e2e
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "nightly-e2e: unknown flag $1 (see --help)" >&2; exit 2 ;;
  esac
done
command -v jq >/dev/null || { echo "nightly-e2e: needs jq" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out/options"
out="$(cd "$out" && pwd)"
store="$out/store"
cp -r regressions "$store"
rm -rf "$store/pending" "$store/reports"
# The targets' own options with shorter timeouts: one file each, as the nightly reads them.
sed 's/^timeout = .*/timeout = 5/' fuzz/dispatch_ops.options >"$out/options/dispatch_ops.options"
sed 's/^timeout = .*/timeout = 15/' fuzz/dispatch_ops_wgpu.options \
  >"$out/options/dispatch_ops_wgpu.options"
cp fuzz/*.dict "$out/options/"

# One seed per planted bug, for the target that must meet it: a short run on a slow machine
# need not mutate its way to them (CI's first try at this check met no wgpu exp in 90 s). Each
# target runs only its own: a seed that fails stops its worker at every start.
planted="$out/planted"
program() { # file, unary op
  printf '{"steps":[%s,%s]}\n' \
    '{"create":{"out":0,"kind":"float","shape":[4],"fill":"arange","device":"flex"}}' \
    "{\"op\":{\"out\":1,\"op\":{\"unary\":{\"op\":\"$2\",\"src\":0}}}}" >"$1"
}
mkdir -p "$out/programs/dispatch_ops" "$out/programs/dispatch_ops_wgpu"
program "$out/programs/dispatch_ops/flex-cos.json" cos
program "$out/programs/dispatch_ops_wgpu/flex-exp.json" exp
for target in dispatch_ops dispatch_ops_wgpu; do
  cargo run -q -p dispatch-fuzz -- seed-corpus --regressions "$out/programs/$target" \
    --out "$planted/$target" --dict "$out/programs/$target.dict" >/dev/null \
    || { echo "nightly-e2e: cannot encode the planted seeds" >&2; exit 2; }
done

unplant() {
  echo "== nightly-e2e: rebuilding without the planted bugs"
  cargo build -p dispatch-fuzz >/dev/null 2>&1
  for target in $(cargo fuzz list); do
    features="$(ci/target-features.sh "$target")"
    cargo fuzz build -s none ${features:+--features "$features"} "$target" >/dev/null 2>&1
  done
}
trap unplant EXIT

echo "== nightly-e2e: ci/nightly.sh, both targets, ${duration} s each, planted bugs in"
ci/nightly.sh --duration "$duration" --targets "dispatch_ops dispatch_ops_wgpu" --out "$out/night" \
  --no-coverage --no-merge --options-dir "$out/options" --features planted-faults --store "$store" \
  --seeds "$planted"
status=$?
echo "== nightly-e2e: ci/nightly.sh exited $status"

failed=0
fail() { echo "FAIL: $*"; failed=1; }
[ "$status" = 1 ] || fail "the job exited $status, not 1 (new findings)"

echo "== nightly-e2e: buckets"
for target in dispatch_ops dispatch_ops_wgpu; do
  triage="$out/night/triage-$target.json"
  [ -f "$triage" ] || { fail "no $triage"; continue; }
  jq -r --arg t "$target" '.buckets[] | "\($t)\t\(.status)\t\(.count)\t\(.signature)\t\(.case // .promote_error // "-")"' "$triage"
done

# One planted bug: a bucket of `class` with status `statuses` (a jq regex) whose signature holds
# `what` in `target`'s triage, with a case in pending/ of that class that `check` accepts.
expect() {
  local target="$1" statuses="$2" class="$3" what="$4" check="$5" triage case
  triage="$out/night/triage-$target.json"
  case="$(jq -r --arg c "$class" --arg w "$what" --arg s "$statuses" \
    '[.buckets[] | select(.class == $c and (.status | test($s)) and (.signature | contains($w)))][0].case // empty' \
    "$triage" 2>/dev/null)"
  if [ -z "$case" ] || [ ! -f "$case" ]; then
    fail "$target: no $class bucket ($statuses) with '$what' and a case in pending/"
    return
  fi
  local steps
  steps="$(jq '.steps | length' "$case")"
  echo "$target: $class '$what' -> $(basename "$case"), $steps steps after minimization"
  jq -e "$check" "$case" >/dev/null || fail "$target: $(basename "$case") fails the check $check"
}
expect dispatch_ops_wgpu '^new$' flex-wgpu-divergence "unary exp" \
  '.class == "flex-wgpu-divergence" and (.adapters | length) == 1'
expect dispatch_ops '^new$' timeout "unary cos" \
  '.class == "timeout" and .limits.timeout_s >= 5'
# The wgpu target meets the hang too when a program of its short run computes a Flex cos: then
# its bucket is new there, or the pending case the plain target's triage (first) just made.
if jq -e '.buckets[] | select(.class == "timeout")' "$out/night/triage-dispatch_ops_wgpu.json" \
    >/dev/null 2>&1; then
  expect dispatch_ops_wgpu '^(new|known)$' timeout "unary cos" \
    '.class == "timeout" and .limits.timeout_s >= 5'
fi

if [ "$failed" = 0 ]; then
  echo "== nightly-e2e: every planted bug came out as a new, minimized pending case"
fi
exit "$failed"
