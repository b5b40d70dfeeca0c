#!/usr/bin/env bash
# Compares `bench`'s all-oracles figure of this work tree with a baseline revision's, in two ways
# that a shared machine's speed drift (a third, minutes apart, on the 2-core VM) cannot skew:
#   - instructions: callgrind counts what one all-oracles `check` of each program in the
#     bench set executes (the warm-up pass both revisions' bench run before timing anything);
#     deterministic, so one run is the figure, but blind to cache misses;
#   - execs/s: both benches run at the same time, each pinned to its own core and swapped every
#     round, the work tree's all-oracles path timed over the same seconds as the baseline's.
#
#   ci/bench-vs.sh REV [OUT]    REV: the baseline git revision; OUT: output folder
#   BASELINE_BIN                a baseline dispatch-fuzz binary already built (REV then only names it)
#   ROUNDS, SECONDS_PER_PATH    concurrent rounds (default 4) and `bench --seconds` (default 5)
#
# The baseline builds once in its own target dir (a full release build: 12-22 min on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:?usage: ci/bench-vs.sh REV [OUT]}"
out="${2:-target/bench-vs/$rev}"
rounds="${ROUNDS:-4}"
seconds="${SECONDS_PER_PATH:-5}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

base="${BASELINE_BIN:-}"
if [ -z "$base" ]; then
  src="$out/src"
  . ci/worktree.sh
  checkout_rev "$rev" "$src"
  (cd "$src" && CARGO_TARGET_DIR="$out/target" cargo build --release --bin dispatch-fuzz)
  base="$out/target/release/dispatch-fuzz"
fi
cargo build --release --bin dispatch-fuzz
now="$PWD/target/release/dispatch-fuzz"

if command -v valgrind >/dev/null; then
  for side in base now; do
    bin="${!side}"
    # The bench's warm-up calls `check` in a session (revisions before sessions: `check_with`).
    symbols=$(nm -C "$bin")
    if grep -q ' dispatch_fuzz::check_with$' <<<"$symbols"; then
      entry=dispatch_fuzz::check_with
    elif grep -q ' dispatch_fuzz::check$' <<<"$symbols"; then
      entry=dispatch_fuzz::check
    else
      echo "bench-vs: $bin has no dispatch_fuzz::check to count" >&2; exit 2
    fi
    # --seconds 0: the warm-up pass only (one check per program), no timed path.
    valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.$side" \
      --toggle-collect="$entry" "$bin" bench --seconds 0 \
      >"$out/callgrind.$side.log" 2>&1
  done
  ir() { sed -n 's/^==[0-9]*== Collected : \([0-9]*\).*/\1/p' "$out/callgrind.$1.log"; }
  programs() { sed -n 's/^bench: \([0-9]*\) programs.*/\1/p' "$out/callgrind.$1.log"; }
  awk -v b="$(ir base)" -v n="$(ir now)" -v pb="$(programs base)" -v pn="$(programs now)" 'BEGIN {
    printf "instructions per all-oracles check: baseline %.0f, now %.0f; now runs %.1f%% of the baseline'"'"'s execs/s by this count\n",
      b / pb, n / pn, 100 * (b / pb) / (n / pn) }'
else
  echo "bench-vs: no valgrind, so no instruction counts"
fi

# The baseline's timed paths run one after another or in turns, depending on its age: the work
# tree's all path starts when the baseline's last path does (its last line but one printed).
paths=$("$base" bench --seconds 0 | grep -c 'execs/s' || true)
[ "$paths" -ge 1 ] || { echo "bench-vs: the baseline's bench prints no paths" >&2; exit 2; }
if grep -q -- '--only' < <("$base" bench --help); then
  base_args=(--only all)
  paths=1
else
  base_args=()
fi
sum_base=0
sum_now=0
for round in $(seq 1 "$rounds"); do
  a=$((round % 2))
  b=$((1 - a))
  log="$out/round$round"
  taskset -c "$a" "$base" bench --seconds "$seconds" "${base_args[@]}" >"$log.base" 2>&1 &
  pid=$!
  until [ "$(grep -c 'execs/s' "$log.base" || true)" -ge $((paths - 1)) ]; do sleep 0.05; done
  taskset -c "$b" "$now" bench --seconds "$seconds" --only all >"$log.now" 2>&1
  wait "$pid"
  rate() { sed -n 's/^check, all oracles: *\([0-9]*\) execs.*/\1/p' "$1"; }
  rb=$(rate "$log.base")
  rn=$(rate "$log.now")
  echo "round $round: baseline $rb, now $rn execs/s (all oracles)"
  sum_base=$((sum_base + rb))
  sum_now=$((sum_now + rn))
done
awk -v b="$sum_base" -v n="$sum_now" 'BEGIN {
  printf "execs/s, all oracles, %d rounds: now runs %.1f%% of the baseline'"'"'s\n", '"$rounds"', 100 * n / b }'
