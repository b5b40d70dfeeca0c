#!/usr/bin/env bash
# Measures how much of Burn's dispatch and capture code a fixed fuzz session reaches: builds the
# CLI of a revision with LLVM source coverage (a debug build, so the catalogue's debug-assertion
# panics fire), runs `fuzz --runs RUNS --seed SEED` on Flex + capture from no corpus, exports the
# profile with `llvm-cov export` and prints the nightly report's coverage tables for it.
#
#   ci/reach.sh [REV] [OUT]   REV: a git revision (default: the work tree); OUT: output folder
#   RUNS, SEED                programs to run (default 20000) and the session's seed (default 1)
#
# Two revisions measured with the same RUNS and SEED give a before/after of an op-table change.
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:-}"
out="${2:-target/reach/${rev:-worktree}}"
runs="${RUNS:-20000}"
seed="${SEED:-1}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

src="$PWD"
if [ -n "$rev" ]; then
  src="$out/src"
  . ci/worktree.sh
  checkout_rev "$rev" "$src"
fi

rustup component add llvm-tools-preview >/dev/null 2>&1 || true
llvm_bin="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
[ -x "$llvm_bin/llvm-cov" ] || { echo "reach: llvm-tools-preview is missing" >&2; exit 2; }

# Its own target dir: instrumented objects must not mix with the normal build's.
# Build scripts are instrumented too: their profiles go to the output folder, not the work tree.
(cd "$src" && CARGO_TARGET_DIR="$out/target" RUSTFLAGS="-C instrument-coverage" \
  LLVM_PROFILE_FILE="$out/build/%p-%m.profraw" cargo build -p dispatch-fuzz --bin dispatch-fuzz)
bin="$out/target/debug/dispatch-fuzz"
rm -f "$out"/*.profraw
# Exit 1 means the session saved findings: the measure stands, the findings are in $out.
# One worker, so a revision's session is the same programs every time (a revision from before
# --jobs has one worker anyway).
jobs=()
help=$(LLVM_PROFILE_FILE=/dev/null "$bin" fuzz --help)
[[ $help == *--jobs* ]] && jobs=(--jobs 1)
(cd "$src" && LLVM_PROFILE_FILE="$out/reach-%p.profraw" "$bin" fuzz --runs "$runs" --seed "$seed" "${jobs[@]}" \
  --seconds 3600 --out "$out/findings" | tail -n 3) || [ $? -eq 1 ]
"$llvm_bin/llvm-profdata" merge -sparse -o "$out/reach.profdata" "$out"/*.profraw

crate_dir() {
  (cd "$src" && cargo metadata --format-version 1 2>/dev/null) \
    | grep -o "\"manifest_path\":\"[^\"]*/$1\(-[0-9][^/\"]*\)\{0,1\}/Cargo.toml\"" | head -1 \
    | sed -e 's/^"manifest_path":"//' -e 's#/Cargo.toml"$##'
}
dirs=()
for crate in burn-dispatch burn-capture burn-router burn-tensor burn-autodiff burn-flex; do
  dirs+=("$(crate_dir "$crate")/src")
done
mkdir -p "$out/coverage"
"$llvm_bin/llvm-cov" export "$bin" -instr-profile="$out/reach.profdata" "${dirs[@]}" \
  >"$out/coverage/reach.json"
cargo run -q -p dispatch-fuzz -- nightly-report --dir "$out" --targets reach >/dev/null
sed -n '/^### Coverage reached/,/^<details>/p' "$out/report.md"
