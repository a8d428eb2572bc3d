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
# The drivers, where they were built (models/ needs sentencepiece): `nmt
# train` on the embedded task and `nmt analyze` of it, from the prefix alone
# (the build tree off PATH), drawing with the installed plot scripts.
prefix=$work/prefix
if [ ! -x "$prefix/bin/nmt" ]; then
  echo "drivers not built (sentencepiece missing?): their install untested"
  exit 0
fi
# A file the prefix must hold, by name when it does not.
expect() { [ -f "$1" ] || { echo "install test: no $1"; exit 1; }; }
mkdir "$work/run" && cd "$work/run"
export PATH=$prefix/bin:/usr/bin:/bin
quiet nmt train --out m.ckpt --epochs 1 --max-updates 6 --threads 1 \
  --no-progress --task-train 200 --task-valid 10 --task-test 10 --emb 8 \
  --hidden 8 --att 8 --readout 8 --max-tokens 100 --log-every 2
nmt task --split valid --side src --task-valid 10 > src.txt
nmt task --split valid --side tgt --task-valid 10 > tgt.txt
nli --version > /dev/null
cws --version > /dev/null
expect "$prefix/share/doc/cellc/nmt/README.md"
if ! /usr/bin/python3 -c "import matplotlib" 2> /dev/null; then
  quiet nmt analyze --model m.ckpt --src src.txt --ref tgt.txt --out a \
    --sentences 1 --no-plots
  exit 0
fi
# A line added to the installed plot_gates.py shows that analyze ran the
# prefix's copy, not the source tree's.
echo 'print("plot_gates.py: the installed one", file=sys.stderr)' \
  >> "$prefix/share/cellc/plot_gates.py"
quiet nmt analyze --model m.ckpt --src src.txt --ref tgt.txt --out a \
  --sentences 1
grep -q "plot_gates.py: the installed one" "$work/log" ||
  { cat "$work/log"; exit 1; }
expect a/decoder-gates.png
expect a/encoder-arcs-0.svg
quiet "$prefix/share/cellc/plot_training.py" curves m.ckpt.jsonl
expect curves.png
quiet "$prefix/share/cellc/plot_table.py" \
  "$prefix/share/doc/cellc/nmt/README.md" "The table so far" table
expect table.png
