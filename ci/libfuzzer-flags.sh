#!/usr/bin/env bash
# Prints the libFuzzer flags of a fuzz target from its options file, the one place they are
# kept (fuzz/<target>.options, which ClusterFuzzLite reads as it is): `-dict=... -timeout=...
# -rss_limit_mb=...`, the dictionary's path resolved beside the options file. Every runner reads
# them here: ci/nightly.sh, ci/fuzz-smoke.sh, and the command the README gives
# (`cargo fuzz run -s none dispatch_ops -- $(ci/libfuzzer-flags.sh dispatch_ops)`).
#
# Usage: ci/libfuzzer-flags.sh TARGET [OPTIONS_DIR]   (OPTIONS_DIR default: fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 TARGET [OPTIONS_DIR]" >&2; exit 2; }
dir="${2:-fuzz}"
file="$dir/$1.options"
[ -f "$file" ] || { echo "$0: no $file" >&2; exit 2; }
awk -v dir="$dir" -v file="$file" '
  /^[[:space:]]*(#|$)/ { next }
  /^[[:space:]]*\[/ { section = $0; gsub(/[[:space:]]/, "", section); next }
  section == "[libfuzzer]" {
    line = $0; key = line; sub(/=.*/, "", key); gsub(/[[:space:]]/, "", key)
    value = line; sub(/^[^=]*=/, "", value); gsub(/^[[:space:]]+|[[:space:]]+$/, "", value)
    if (key == "dict") value = dir "/" value
    flags = flags (flags == "" ? "" : " ") "-" key "=" value
    seen[key] = 1
  }
  END {
    if (!seen["timeout"] || !seen["rss_limit_mb"]) {
      print file ": the [libfuzzer] section needs timeout and rss_limit_mb" > "/dev/stderr"
      exit 2
    }
    print flags
  }
' "$file"
