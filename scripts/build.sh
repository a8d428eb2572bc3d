#!/usr/bin/env bash
# Configures (once) and builds cellc into ${BUILD_DIR:-build}: everything,
# or the ninja targets given (setup.py builds only _cellc).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
export CCACHE_BASEDIR=$PWD
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-16/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-16/build/utils/lit/lit.py \
    -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 \
    -DLLVM_USE_LINKER=lld
fi
ninja -C "$BUILD_DIR" -j "$(nproc)" "$@"
