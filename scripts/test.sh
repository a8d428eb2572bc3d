#!/usr/bin/env bash
# Builds cellc and runs every test: lit + FileCheck, GoogleTest unit tests,
# and the numerics tests against LibTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
start=$(date +%s)
bash scripts/build.sh
echo "build: $(( $(date +%s) - start )) s"
cd "$BUILD_DIR"
ctest --output-on-failure -j "$(nproc)"
