#!/usr/bin/env bash
# Builds cellc and runs every test: lit + FileCheck, GoogleTest unit tests,
# the numerics tests against LibTorch, and a minute of fuzzing.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
start=$(date +%s)
bash scripts/build.sh
echo "build: $(( $(date +%s) - start )) s"
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)")

# A bounded fuzzing smoke run (scripts/fuzz.sh; README, "Testing"): the
# whole pipeline to object files, then cellc's own stages, about 60 s in
# all. CELLC_SKIP_FUZZ=1 skips it.
# A fresh corpus and a fixed seed: the same sequence of inputs every time.
if [ "${CELLC_SKIP_FUZZ:-0}" != 1 ]; then
  start=$(date +%s)
  FUZZ_CORPUS=$(mktemp -d)
  trap 'rm -rf "$FUZZ_CORPUS"' EXIT
  export FUZZ_CORPUS
  bash scripts/fuzz.sh 20 -seed=1
  CELLC_FUZZ_STAGE=passes bash scripts/fuzz.sh 40 -seed=1
  echo "fuzz: $(( $(date +%s) - start )) s"
fi
