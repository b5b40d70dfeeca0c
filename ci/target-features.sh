#!/usr/bin/env bash
# Prints the cargo features a fuzz target needs (its `required-features` in fuzz/Cargo.toml,
# comma-separated; nothing for a target that needs none), so each target is built with what it
# uses and no more: `cargo fuzz build ${f:+--features "$f"} <target>`.
#
# Usage: ci/target-features.sh TARGET
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 TARGET" >&2; exit 2; }
awk -v target="$1" '
  /^\[/ { name = "" }
  /^name *=/ { v = $0; sub(/^[^"]*"/, "", v); sub(/".*$/, "", v); name = v }
  name == target && /^required-features *=/ {
    v = $0; sub(/^[^[]*\[/, "", v); sub(/\].*$/, "", v); gsub(/[" ]/, "", v); print v
  }
' fuzz/Cargo.toml
