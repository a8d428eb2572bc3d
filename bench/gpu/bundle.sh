#!/usr/bin/env bash
# Packs what the GPU checks need into one folder that runs on a GPU machine
# without LLVM, MLIR or a build: the GPU test and benchmark binaries, the
# runtime libraries, the cells' plans and PTX, and the Debian libraries they
# load (oneDNN compressed). Usage: bench/gpu/bundle.sh [BUILD_DIR] [OUT_DIR]
# then, on the GPU machine: bash OUT_DIR/run.sh [results folder]
# BUNDLE_NO_BUILD=1 skips the ninja step (the build is current);
# BUNDLE_NO_DNNL=1 leaves oneDNN out (the bundle test, which runs nothing).
set -euo pipefail
build=${1:-build}
out=${2:-.gpu}
[ -n "${BUNDLE_NO_BUILD:-}" ] || ninja -C "$build" cellrt-cuda-gpu-tests cellc-bench-gpu
rm -rf "$out" && mkdir -p "$out/lib" "$out/ptx" "$out/bench-ptx"
cp "$build/bin/cellrt-cuda-gpu-tests" "$build/bin/cellc-bench-gpu" "$out/"
# -a keeps the versioned names (libcellrt-cuda.so.0.2) the binaries load.
cp -a "$build"/lib/libcellrt.so* "$build"/lib/libcellrt-cuda.so* "$out/lib/"
# A cell is its plan tables and its PTX; the runtime reads nothing else
# (a build folder may still hold older outputs, such as text plans).
copyCells() {
  for tables in "$1"/*.tables; do
    cp "$tables" "${tables%.tables}.ptx" "$2/"
  done
}
copyCells "$build/test/unit/ptx" "$out/ptx"
copyCells "$build/bench/gen-ptx" "$out/bench-ptx"
for lib in libgomp.so.1 libOpenCL.so.1; do
  cp -L "/lib/x86_64-linux-gnu/$lib" "$out/lib/"
done
[ -n "${BUNDLE_NO_DNNL:-}" ] ||
  xz -T2 -6 -c -L /lib/x86_64-linux-gnu/libdnnl.so.2 >"$out/lib/libdnnl.so.2.xz" 2>/dev/null ||
  xz -T2 -6 -c "$(readlink -f /lib/x86_64-linux-gnu/libdnnl.so.2)" >"$out/lib/libdnnl.so.2.xz"
cp "$(dirname "$0")/run.sh" "$(dirname "$0")/peers.py" "$out/"
bash "$out/run.sh" --check
du -sh "$out"
