#!/usr/bin/env bash
# Installs cellc from the build tree into a scratch prefix, then configures,
# builds and runs a user's project (test/install/external) against it.
set -euo pipefail
build=$1
source=$(cd "$(dirname "$0")" && pwd)/external
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Quiet on success, the whole log of the failing step otherwise.
quiet() { "$@" > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }; }
quiet cmake --install "$build" --prefix "$work/prefix"
quiet cmake -S "$source" -B "$work/build" -G Ninja \
  -DCMAKE_C_COMPILER=clang-16 -DCMAKE_PREFIX_PATH="$work/prefix"
quiet cmake --build "$work/build"
"$work/build/user"
(cd "$work" && "$work/build/jit_user")
# The Python package, where it was built: imported from the install alone.
package=$work/prefix/lib/python3/dist-packages
if [ -d "$package/cellc" ]; then
  cd "$work"
  PYTHONPATH=$package CELLC_CACHE_DIR= /usr/bin/python3 -c "
import numpy as np, cellc
cell = cellc.compile('cell c(x: [H]) { state h: [H]; param W: [H, H]; h\' = tanh(W @ x + h) }')
out, (h,) = cell.forward([np.ones((2, 1, 3), np.float32)], {'W': np.eye(3, dtype=np.float32)})
assert cell.__module__ == 'cellc._cellc' and abs(h[0, 0] - np.tanh(1 + np.tanh(1))) < 1e-6, h
assert cellc.cell_path('atr').startswith('$package/cellc/cells/'), cellc.cell_path('atr')
print('python package: ok')"
fi
