#!/usr/bin/env bash
# The Multi30k En->De recipe for ATR, GRU and LSTM side by side (the atr
# paper's Table 4 comparison on this machine): trains each cell, translates
# test_2016_flickr with beam 5 and scores it (multi-bleu on the tokenised,
# lower-cased text). EPOCHS (default 15; early stopping usually ends it
# sooner), LR (default 1e-3), THREADS (default 2), CELLS, ARCH (any of
# `nmt train --arch`), LAYERS (gnmt, deep: N encoder and N decoder layers),
# FLAGS (more train options, e.g. "--share-cell --tie-output"), WIDTH (the
# embedding, state, attention and readout width, default 256; another
# width adds -wWIDTH to the name); runs are named CELL, CELL-ARCH or
# CELL-ARCH-LAYERS, and RUN_SUFFIX is appended (then SEED_SUFFIX, with
# SEED_FLAG="--seed N" the run's seed). BIN (default BUILD_DIR/bin) holds
# the nmt to run: a copy of it keeps a long table on one binary while the
# build changes. PLATEAU (default ppl, as
# nmt's) is --plateau-metric: greedy BLEU stays near 0 for a narrow
# model's first epochs. It cannot change on --resume: a run started with
# another value is refused.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${DATA:-../shared/data/multi30k/tok}
if [ ! -f "$D/train.lc.norm.tok.en" ]; then
  echo "multi30k.sh: no Multi30k at $D: skipped"
  exit 0
fi
BIN=${BIN:-${BUILD_DIR:-build}/bin}
OUT=${OUT:-${BUILD_DIR:-build}/m30k}
mkdir -p "$OUT"
ARCH=${ARCH:-rnnsearch}
for cell in ${CELLS:-atr gru lstm}; do
  run=$cell
  [ "$ARCH" = rnnsearch ] || run=$cell-$ARCH
  layers=()
  if [ -n "${LAYERS:-}" ]; then
    run=$run-$LAYERS
    layers=(--enc-layers "$LAYERS" --dec-layers "$LAYERS")
  fi
  width=${WIDTH:-256}
  [ "$width" = 256 ] || run=$run-w$width
  run=$run${RUN_SUFFIX:-}${SEED_SUFFIX:-}
  start=$(date +%s)
  "$BIN/nmt" train --task files --threads "${THREADS:-2}" \
    --out "$OUT/$run.ckpt" --no-progress --arch "$ARCH" \
    --train-src "$D/train.lc.norm.tok.en" --train-tgt "$D/train.lc.norm.tok.de" \
    --valid-src "$D/val.lc.norm.tok.en" --valid-tgt "$D/val.lc.norm.tok.de" \
    --tokenizer bpe --bpe-src 8000 --bpe-tgt 8000 \
    --cell "$cell" --emb "$width" --hidden "$width" --att "$width" \
    --readout "$width" \
    --max-tokens 2000 --epochs "${EPOCHS:-15}" --lr "${LR:-1e-3}" \
    --lr-decay plateau --plateau-metric "${PLATEAU:-ppl}" --patience 3 \
    --resume "${layers[@]}" ${FLAGS:-} ${SEED_FLAG:-}
  trained=$(date +%s)
  "$BIN/nmt" translate --model "$OUT/$run.ckpt.best" --threads "${THREADS:-2}" \
    --beam 5 --input "$D/test_2016_flickr.lc.norm.tok.en" \
    --output "$OUT/$run.hyp.de"
  echo "$run: trained in $((trained - start)) s; $(grep -E 'epoch [0-9]+ done' "$OUT/$run.ckpt.log" | tail -1)"
  echo -n "$run test_2016_flickr: "
  "$BIN/nmt" score --ref "$D/test_2016_flickr.lc.norm.tok.de" \
    --hyp "$OUT/$run.hyp.de" --tokenize none
done
