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
  printf '%-8s %5d ms  hoisted GEMMs: %d  per-step GEMMs: %d  kernels: %d forward, %d backward (%s)\n' \
    "$name" "$ms" \
    "$(grep -c '^pre gemm' <<<"$plan" || true)" \
    "$(grep -c '^step gemm' <<<"$plan" || true)" \
    "$(grep -cE '^(pre|step|scan) kernel ' <<<"$plan" || true)" \
    "$(grep -cE '^(bpre|bstep) kernel ' <<<"$plan" || true)" "$out/$name.o"
done
echo
echo "== ATR over a sample batch (examples/atr_forward.cpp)"
"$bin/atr_forward"

echo
echo "== NMT: RNNSearch with the compiled ATR cell on the embedded task"
echo "   (English number words -> German; models/nmt/README.md)"
nmt=$BUILD_DIR/nmt
mkdir -p "$nmt"
# A fresh run each time: nmt refuses to overwrite an earlier run's checkpoint.
rm -f "$nmt"/numbers.ckpt*
"$bin/nmt" train --out "$nmt/numbers.ckpt" --threads 1 --lr 2e-3 --epochs 8 \
  --cell atr --no-progress
# (--no-progress still prints the model line and each epoch's summary; the
# log, numbers.ckpt.log, and numbers.ckpt.jsonl have every update too.)
"$bin/nmt" task --split test --side src > "$nmt/test.en"
"$bin/nmt" task --split test --side tgt > "$nmt/test.de.tok"
"$bin/nmt" translate --model "$nmt/numbers.ckpt.best" --threads 1 --beam 5 \
  --input "$nmt/test.en" --tokenized > "$nmt/hyp.de.tok"
"$bin/nmt" translate --model "$nmt/numbers.ckpt.best" --threads 1 --beam 5 \
  --input "$nmt/test.en" > "$nmt/hyp.de"
echo "held-out examples (source | reference | translation):"
paste -d'|' <(head -5 "$nmt/test.en") \
  <("$bin/nmt" task --split test --side tgt-raw | head -5) \
  <(head -5 "$nmt/hyp.de")
echo -n "test BLEU (beam 5, on the German number words): "
"$bin/nmt" score --ref "$nmt/test.de.tok" --hyp "$nmt/hyp.de.tok" --tokenize none
