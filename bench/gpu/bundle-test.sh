#!/usr/bin/env bash
# The gpu-bundle test: bundle.sh packs every cell the GPU tests and
# benchmarks load, and run.sh unpacks the bundle's oneDNN before it runs any
# binary. The GPU machine has no oneDNN of its own: when `run.sh --check`
# listed the tests before unpacking it, every check there failed with
# "libdnnl.so.2: cannot open shared object file" (H200, 2026-11-29).
# Usage: bundle-test.sh BUILD_DIR OUT_DIR
set -euo pipefail
build=$1
out=$2
BUNDLE_NO_BUILD=1 BUNDLE_NO_DNNL=1 bash "$(dirname "$0")/bundle.sh" "$build" "$out"
# xz -0: the fastest level; the test needs the file, not its size.
xz -0 -T2 -c "$(readlink -f /lib/x86_64-linux-gnu/libdnnl.so.2)" >"$out/lib/libdnnl.so.2.xz"
bash "$out/run.sh" --check
if [ ! -f "$out/lib/libdnnl.so.2" ]; then
  echo "bundle-test: run.sh --check did not unpack lib/libdnnl.so.2" >&2
  exit 1
fi
