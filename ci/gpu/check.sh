#!/usr/bin/env bash
# wgpu-on-GPU check, for a machine with a GPU and no Rust toolchain: the adapter that the
# default (`DISPATCH_FUZZ_WGPU=auto`) picks, wgpu vs Flex results on one program, and a 60 s fuzz
# session on flex + capture + wgpu.
#
#   BIN   the dispatch-fuzz binary to run (default target/release/dispatch-fuzz; a gzip file
#         ending in .gz is unpacked first, to fit a size-limited transfer)
#   OUT   where to write run.txt, fuzz.json and fuzz.err (default: a temporary directory)
#
# Vulkan loaders: where `ldconfig -p | grep libvulkan` prints nothing, unpack libvulkan1 (and
# the GL/EGL dispatch libraries) first, e.g. `for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig`.
set -u
cd "$(dirname "$0")/../.."
bin="${BIN:-target/release/dispatch-fuzz}"
out="${OUT:-$(mktemp -d)}"
if [[ "$bin" == *.gz ]]; then
  gunzip -c "$bin" > /tmp/dispatch-fuzz && chmod +x /tmp/dispatch-fuzz && bin=/tmp/dispatch-fuzz
fi
if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && [ -z "${VK_DRIVER_FILES:-}" ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L
export DISPATCH_FUZZ_BACKENDS=flex,capture,wgpu
status=0
echo "== wgpu vs flex on one program (the sums read on wgpu, on Flex and moved back must agree)"
time "$bin" run ci/gpu/wgpu-vs-flex.json | tee "$out/run.txt"
# The three reads print `#<digest>`: one value, three times, and no finding.
digests="$(grep -o '#[0-9a-f]\{16\}' "$out/run.txt")"
if [ "$(printf '%s\n' "$digests" | grep -c .)" -ne 3 ] || [ "$(printf '%s\n' "$digests" | sort -u | grep -c .)" -ne 1 ]; then
  echo "FAIL: expected one digest three times, got: $(echo $digests)"
  status=1
fi
grep -q '^finding: none$' "$out/run.txt" || { echo "FAIL: the program has a finding"; status=1; }
echo "== fuzz 60 s on flex + capture + wgpu"
"$bin" fuzz --seconds 60 --seed 1 --json --out "$out/findings" 2> "$out/fuzz.err" | tee "$out/fuzz.json"
head -1 "$out/fuzz.err"
if [ "$status" -eq 0 ]; then echo "== check: digests agree"; fi
exit "$status"
