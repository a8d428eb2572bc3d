#!/usr/bin/env bash
# Runs on the GPU machine from a folder made by bench/gpu/bundle.sh: the
# GPU-against-CPU tests of every cell, then cellc-gpu and the PyTorch/cuDNN
# peers on the benchmark workloads. Results go to $1 (default: here).
# `run.sh --check` only checks that the bundle is whole (bundle.sh runs it).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# Every cell the GPU tests load (tests CudaGpu.Atr, AtrStep and
# AtrAtTranslationSize load ptx/atr.tables and ptx/atr.ptx) and every cell the benchmark runs must be in the bundle.
checkBundle() {
  local missing=0 cell
  for bin in cellrt-cuda-gpu-tests cellc-bench-gpu; do
    [ -x "$here/$bin" ] || { echo "run.sh: $here/$bin is missing" >&2; missing=1; }
  done
  local cells
  cells=$(LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$here/cellrt-cuda-gpu-tests" --gtest_list_tests | sed -n 's/^  \([A-Za-z]*\)$/\1/p' |
    sed 's/\(AtTranslationSize\|Step\)$//' | tr 'A-Z' 'a-z' | sort -u)
  [ -n "$cells" ] || { echo "run.sh: the GPU tests list no cells" >&2; missing=1; }
  for cell in $cells; do
    for ext in tables ptx; do
      [ -f "$here/ptx/$cell.$ext" ] || { echo "run.sh: ptx/$cell.$ext is missing" >&2; missing=1; }
    done
  done
  for cell in $(echo "${BENCH_CELLS:-atr,gru,lstm,lau,sru,srnmt}" | tr , ' '); do
    for ext in tables ptx; do
      [ -f "$here/bench-ptx/$cell.$ext" ] || { echo "run.sh: bench-ptx/$cell.$ext is missing" >&2; missing=1; }
    done
  done
  return $missing
}
# The GPU machine has no oneDNN: unpack the bundle's copy before anything
# runs a binary (the check lists the tests by running one).
if [ -f "$here/lib/libdnnl.so.2.xz" ] && [ ! -f "$here/lib/libdnnl.so.2" ]; then
  xz -dc "$here/lib/libdnnl.so.2.xz" >"$here/lib/libdnnl.so.2"
fi
if [ "${1:-}" = --check ]; then
  checkBundle && echo "run.sh: the bundle is whole"
  exit
fi
checkBundle || exit 1
results=${1:-$here}
mkdir -p "$results"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CELLC_PTX_DIR="$here/ptx" CELLC_BENCH_PTX_DIR="$here/bench-ptx"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee "$results/gpu.txt"
"$here/cellrt-cuda-gpu-tests" ${GPU_TEST_FILTER:+--gtest_filter=$GPU_TEST_FILTER} 2>&1 | tee "$results/tests.txt"
[ -n "${GPU_TESTS_ONLY:-}" ] && exit 0
"$here/cellc-bench-gpu" --impls cellc-gpu,cellc-gpu-resident --cells ${BENCH_CELLS:-atr,gru,lstm,lau,sru,srnmt} \
  --modes fwd,train --seq 50x64,100x64 --threads 1 --reps 20 --min-seconds 0 2>&1 | tee "$results/bench.txt"
"$here/cellc-bench-gpu" --impls cellc-gpu,cellc-gpu-resident --cells atr,gru,lstm --modes step \
  --step-batches 10,1 --threads 1 --reps 10 --min-seconds 0 2>&1 | tee "$results/step.txt"
[ -n "${SKIP_PEERS:-}" ] || python3 "$here/peers.py" 2>&1 | tee "$results/peers.txt"
[ -n "${SKIP_PEERS:-}" ] || python3 "$here/peers.py" --modes step 2>&1 | tee -a "$results/peers.txt"
