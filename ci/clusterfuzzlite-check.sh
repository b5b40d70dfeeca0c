#!/usr/bin/env bash
# Runs what ClusterFuzzLite's image runs, on a machine with no Docker daemon: the Dockerfile's
# rustup command as written (with its NIGHTLY), then .clusterfuzzlite/build.sh under the
# environment the image's compile step gives it ($SRC, $OUT, $SANITIZER, RUSTFLAGS as
# infra/base-images/base-builder/compile sets them for Rust) and behind a `cargo` that behaves
# as the image's wrapper does (infra/base-images/base-builder/cargo in google/oss-fuzz: in
# coverage mode it turns `cargo fuzz build ...` into `cargo build --bins` in fuzz/, dropping
# every argument, and copies the debug build where cargo fuzz's release build would be). Then
# it checks that $OUT holds every target, its options, the dictionary and its seed corpus.
#
# Usage: ci/clusterfuzzlite-check.sh [--sanitizer address|coverage] ... [--plan]
#   --sanitizer  the modes to run (default: both)
#   --plan       cargo plans each build (`--unit-graph`: the units, binaries included, that the
#                same arguments would build) instead of compiling it, and the binaries it plans
#                are written as empty files where the build would put them: build.sh's own
#                steps run for real, in seconds instead of two nightly builds (what CI runs)
# Each sanitizer builds in its own target folder (target/cflite-<sanitizer>), so the nightly
# toolchain and its RUSTFLAGS never invalidate the stable builds.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

sanitizers=()
plan=0
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitizer) sanitizers+=("$2"); shift 2 ;;
    --plan) plan=1; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "clusterfuzzlite-check: unknown flag $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#sanitizers[@]} -gt 0 ] || sanitizers=(address coverage)
command -v jq >/dev/null || { echo "clusterfuzzlite-check: needs jq (the image has it)" >&2; exit 2; }

# The targets every mode must put in $OUT, named here so that a build.sh which finds none fails.
targets="$(cargo fuzz list)" || { echo "clusterfuzzlite-check: needs cargo-fuzz" >&2; exit 2; }
[ -n "$targets" ] || { echo "FAIL: cargo fuzz list names no target" >&2; exit 1; }

dockerfile=.clusterfuzzlite/Dockerfile
nightly="$(sed -n 's/^ARG NIGHTLY=//p' "$dockerfile")"
[ -n "$nightly" ] || { echo "FAIL: $dockerfile has no ARG NIGHTLY" >&2; exit 1; }

echo "== clusterfuzzlite-check: the Dockerfile's rustup command, NIGHTLY=$nightly"
# Every RUN line that calls rustup, continuation lines joined, run as the image's shell would.
rustup_cmd="$(awk '
  /^RUN / { cmd = substr($0, 5); while (cmd ~ /\\$/) { sub(/\\$/, "", cmd); getline line; cmd = cmd line } if (cmd ~ /rustup/) print cmd }
' "$dockerfile")"
[ -n "$rustup_cmd" ] || { echo "FAIL: no RUN rustup line in $dockerfile" >&2; exit 1; }
echo "$ $rustup_cmd"
# As written, but `rustup default` is the image's to change, not this machine's: it only checks
# that the toolchain it names is installed.
NIGHTLY="$nightly" bash -euc '
  rustup() {
    if [ "$1" = default ]; then command rustup run "$2" rustc -V >/dev/null; else command rustup "$@"; fi
  }
  '"$rustup_cmd"
rustc +"$nightly" -vV | sed -n 's/^\(release\|LLVM version\): /  \1: /p'

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The image's cargo wrapper, as its source behaves (see the header).
mkdir -p "$work/bin"
real_cargo="$(command -v cargo)"
cat >"$work/bin/cargo" <<WRAPPER
#!/bin/bash -eu
if [ "\$SANITIZER" = coverage ] && [ "\${1:-}" = build ]; then
  root="\$("$real_cargo" metadata --no-deps --format-version 1 | jq -r .workspace_root)"
  export RUSTFLAGS="\$RUSTFLAGS --remap-path-prefix src=\$root/src"
fi
if [ "\$SANITIZER" = coverage ] && [ "\${1:-}" = fuzz ] && [ "\${2:-}" = build ]; then
  (
    cd fuzz || true
    export RUSTFLAGS="\$RUSTFLAGS --remap-path-prefix fuzz_targets=\$PWD/fuzz_targets -C debug-assertions=no"
    "\$0" build --bins
    cd "\$("$real_cargo" metadata --format-version 1 --no-deps | jq -r .target_directory)"
    mkdir -p x86_64-unknown-linux-gnu/release
    cp -r debug/* x86_64-unknown-linux-gnu/release/
  )
  exit 0
fi
if [ "\${1:-}" = build ] && [ "\${PLAN:-0}" = 1 ]; then
  # Plan mode: the units these very arguments would build, and an empty file for each binary
  # where cargo would write it (target folder, triple, profile).
  dir="\$("$real_cargo" metadata --format-version 1 --no-deps | jq -r .target_directory)"
  "$real_cargo" "\$@" -Z unstable-options --unit-graph \
    | jq -r --arg dir "\$dir" '.units[] | select(.mode == "build" and (.target.kind | index("bin")))
             | [\$dir, (.platform // empty),
                (if .profile.name == "dev" then "debug" else .profile.name end), .target.name]
             | join("/")' \
    | while read -r bin; do
        mkdir -p "\${bin%/*}"
        : >"\$bin"
        echo "planned \$bin" >&2
      done
  exit "\${PIPESTATUS[0]}"
fi
exec "$real_cargo" "\$@"
WRAPPER
chmod +x "$work/bin/cargo"

status=0
for sanitizer in "${sanitizers[@]}"; do
  case "$sanitizer" in
    address) flags="--cfg fuzzing -Zsanitizer=address -Cdebuginfo=1 -Cforce-frame-pointers" ;;
    coverage) flags="--cfg fuzzing -Cdebuginfo=1 -Cforce-frame-pointers -Cinstrument-coverage" ;;
    *) echo "clusterfuzzlite-check: unknown sanitizer $sanitizer (address, coverage)" >&2; exit 2 ;;
  esac
  echo "== clusterfuzzlite-check: build.sh with SANITIZER=$sanitizer"
  src="$work/src-$sanitizer"
  out="$work/out-$sanitizer"
  mkdir -p "$src" "$out"
  ln -s "$repo" "$src/dispatch-fuzz"
  cp .clusterfuzzlite/build.sh "$src/build.sh"
  if ! (
    export SRC="$src" OUT="$out" SANITIZER="$sanitizer" RUSTFLAGS="$flags"
    export RUSTUP_TOOLCHAIN="$nightly" CARGO_TARGET_DIR="$repo/target/cflite-$sanitizer"
    export PLAN="$plan"
    export PATH="$work/bin:$PATH"
    cd "$src/dispatch-fuzz" && bash -eu "$src/build.sh"
  ); then
    echo "FAIL: build.sh failed with SANITIZER=$sanitizer"
    status=1
    continue
  fi
  for target in $targets; do
    for f in "$target" "$target.options" dispatch_ops.dict "${target}_seed_corpus.zip"; do
      [ -e "$out/$f" ] || { echo "FAIL: \$OUT/$f missing after SANITIZER=$sanitizer"; status=1; }
    done
    # A planned binary is an empty file: only a built one runs.
    if [ "$plan" = 0 ] && ! "$out/$target" -help=1 >/dev/null 2>&1; then
      echo "FAIL: $target does not run"
      status=1
    fi
  done
  ls -l "$out"
done
[ "$status" = 0 ] && echo "== clusterfuzzlite-check: the image's commands succeed in every mode checked"
exit "$status"
