#!/usr/bin/env bash
# Builds the libFuzzer target on the stable toolchain (no sanitizer), replays every checked-in
# corpus input through it, then fuzzes for a fixed seed and a bounded number of runs on a scratch
# copy of the corpus (cargo fuzz writes new inputs into its first corpus directory).
#
#   RUNS   mutated inputs after the corpus replay (default 2000)
#   SEED   libFuzzer's -seed (default 1: the same inputs every time)
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${RUNS:-2000}"
seed="${SEED:-1}"
target=dispatch_ops

cargo fuzz build -s none "$target"

# The class seeds: each reaches a catalogued class, so none may abort the target.
inputs=()
for f in corpus/"$target"/*; do
  [ -f "$f" ] && inputs+=("$f")
done
echo "replaying ${#inputs[@]} corpus inputs"
# The target's own libFuzzer settings (fuzz/<target>.options).
read -r -a flags <<<"$(ci/libfuzzer-flags.sh "$target")"
cargo fuzz run -s none "$target" "${inputs[@]}" -- "${flags[@]}"

# The regression seeds (every stored program, `dispatch-fuzz seed-corpus`): each stored bug is a
# known finding (its reviewed case's signature is compiled in), counted and passed, so none may
# abort the target either, as the README's plain `cargo fuzz run` over the corpus promises.
seeds=()
for f in corpus/"$target"/regressions/*; do
  [ -f "$f" ] && seeds+=("$f")
done
echo "replaying ${#seeds[@]} regression seeds"
cargo fuzz run -s none "$target" "${seeds[@]}" -- "${flags[@]}"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cp corpus/"$target"/* "$scratch"/ 2>/dev/null || true
cargo fuzz run -s none "$target" "$scratch" -- -seed="$seed" -runs="$runs" -max_total_time=300 \
  "${flags[@]}"
