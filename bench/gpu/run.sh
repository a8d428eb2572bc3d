#!/usr/bin/env bash
# Runs on the GPU machine from a folder made by bench/gpu/bundle.sh: the
# GPU-against-CPU tests of every cell, then cellc-gpu and the PyTorch/cuDNN
# peers on the benchmark workloads. Results go to $1 (default: here).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results=${1:-$here}
mkdir -p "$results"
[ -f "$here/lib/libdnnl.so.2" ] || xz -dc "$here/lib/libdnnl.so.2.xz" >"$here/lib/libdnnl.so.2"
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
