#!/usr/bin/env bash
# The main job: build cellc, compile every cell in cells/ to an object and a
# header, show each cell's plan (GEMMs and fused kernels), and run the
# compiled ATR cell over a sample batch.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
bash scripts/build.sh >/dev/null
bin=$BUILD_DIR/bin
out=$BUILD_DIR/cells
mkdir -p "$out"
echo "== compiling cells/*.cell"
for cell in cells/*.cell; do
  name=$(basename "$cell" .cell)
  start=$(date +%s%N)
  "$bin/cellc" "$cell" -o "$out/$name.o"
  "$bin/cellc" "$cell" -emit=header -o "$out/$name.h"
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  plan=$("$bin/cellc" "$cell" -emit=plan)
  printf '%-8s %5d ms  hoisted GEMMs: %d  per-step GEMMs: %d  kernels: %d (%s)\n' \
    "$name" "$ms" \
    "$(grep -c '^pre gemm' <<<"$plan" || true)" \
    "$(grep -c '^step gemm' <<<"$plan" || true)" \
    "$(grep -c ' kernel ' <<<"$plan" || true)" "$out/$name.o"
done
echo
echo "== ATR over a sample batch (examples/atr_forward.cpp)"
"$bin/atr_forward"
