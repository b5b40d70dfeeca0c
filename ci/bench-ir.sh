#!/usr/bin/env bash
# What each `bench` path costs per program in instructions and cache misses, counted by callgrind
# with its cache model: deterministic, so a change of a percent shows, where this VM's execs/s
# drift by a third. The time ratio `bench` prints is larger than the instruction ratio by what
# the misses cost (on this machine mostly instruction-cache misses: Burn's code is large).
#
#   ci/bench-ir.sh [PATH...]    bench paths (`bench --only` names; default: bare off all)
#   PROGRAMS, SEED              the bench set (default 500 programs, seed 1)
#
# The `reads` column is the instructions spent reading Burn's values back (`read_data` and
# `read_copy` in harness/src/interpreter/mirror.rs, inclusive: the handle's clone and Burn's
# `into_data`): the Burn work an oracle exists to do, not its overhead. `own vs first` is the
# ratio with every path's reads left out.
#
# Each path runs alone (`bench --only PATH --seconds 1`: one pass under valgrind), with
# collection on only inside `bare_program` or `checked_program` (harness/src/cli/bench.rs), so
# the warm-up pass and the set's decoding are not counted.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "bench-ir: needs valgrind" >&2; exit 2; }
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(bare off all)
programs="${PROGRAMS:-500}"
seed="${SEED:-1}"
cargo build --release --bin dispatch-fuzz
bin="$PWD/target/release/dispatch-fuzz"
out="target/bench-ir"
mkdir -p "$out"

printf '%-18s %12s %10s %10s %10s %10s %13s\n' path instructions "I1 misses" "D1 misses" reads \
  "vs first" "own vs first"
first=""
first_own=""
for path in "${paths[@]}"; do
  fn=checked_program
  [ "$path" = bare ] && fn=bare_program
  log="$out/$path.log"
  valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file="$out/$path.callgrind" \
    --toggle-collect="dispatch_fuzz::cli::bench::$fn" \
    "$bin" bench --programs "$programs" --seed "$seed" --seconds 1 --only "$path" >"$log" 2>&1
  # Events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw.
  read -r -a ev < <(sed -n 's/^==[0-9]*== Collected : //p' "$log")
  execs=$(sed -n 's/.* execs\/s (\([0-9]*\) in .*/\1/p' "$log" | head -n 1)
  [ -n "$execs" ] && [ "${#ev[@]}" -ge 6 ] || { echo "bench-ir: no figures for $path (see $log)" >&2; exit 2; }
  ir=$((ev[0] / execs))
  # Inclusive Ir of the two read functions (disjoint: neither calls the other).
  reads=$(callgrind_annotate --inclusive=yes "$out/$path.callgrind" 2>/dev/null |
    awk '/dispatch_fuzz::interpreter::mirror::read_(data|copy) / { gsub(",", "", $1); s += $1 }
         END { print s + 0 }')
  reads=$((reads / execs))
  own=$((ir - reads))
  [ -n "$first" ] || first=$ir
  [ -n "$first_own" ] || first_own=$own
  awk -v p="$path" -v ir="$ir" -v i1="$((ev[3] / execs))" -v d1="$(((ev[4] + ev[5]) / execs))" \
    -v r="$reads" -v f="$first" -v o="$own" -v fo="$first_own" \
    'BEGIN { printf "%-18s %12d %10d %10d %10d %9.2fx %12.2fx\n", p, ir, i1, d1, r, ir / f, o / fo }'
done
echo "per program, over $programs programs (seed $seed)"
