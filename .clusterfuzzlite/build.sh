#!/bin/bash -eu
# ClusterFuzzLite build: the same targets as ci/nightly.sh, with the sanitizer ClusterFuzzLite
# asks for ($SANITIZER: address for fuzzing, coverage for coverage reports), plus each target's
# seed corpus (the class seeds, the regression seeds and the last nightly merge).
cd "$SRC/dispatch-fuzz"
cargo fuzz build -O
for target in $(cargo fuzz list); do
  cp "target/x86_64-unknown-linux-gnu/release/$target" "$OUT/"
  if [ -d "corpus/$target" ]; then
    (cd "corpus/$target" && find . -type f ! -name '*.json' -print0 | xargs -0 zip -q -j "$OUT/${target}_seed_corpus.zip")
  fi
done
