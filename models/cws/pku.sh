#!/usr/bin/env bash
# The segmentation recipe (models/cws/README.md) for each of CELLS (default
# "atr gru lstm"), one cell at a time:
#   1. PKU, the paper's model: train on pku_train_last10pct (its last 10%
#      held out for validation), segment pku_test with the best checkpoint,
#      score it against pku_test_gold with the bakeoff's OOV word list;
#   2. PKU with --dict pku_training_words (word-list features);
#   3. UD Chinese GSD: train on train.conll (last 10% held out), score dev.
# Nothing is chosen on a test set: every setting below was picked on the
# held-out validation. EPOCHS (default 20), DICT_EPOCHS (default 12),
# THREADS (default 1), SEED (default 1), OUT (default build/cws), DATA.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${DATA:-../shared/data/cws}
PKU=$D/sighan2005-pku
UD=$D/ud-chinese-gsd
if [ ! -f "$PKU/pku_train_last10pct.utf8" ]; then
  echo "pku.sh: no PKU data at $PKU: skipped"
  exit 0
fi
CWS=${BUILD_DIR:-build}/bin/cws
OUT=${OUT:-${BUILD_DIR:-build}/cws}
mkdir -p "$OUT"
COMMON=(--emb 300 --hidden 300 --dropout 0.2 --batch 16 --lr 1e-3
        --lr-decay 0.95 --threads "${THREADS:-1}" --seed "${SEED:-1}"
        --no-progress --resume)

# run NAME TRAIN GOLD RAW WORDS EPOCHS [train options...]: trains OUT/NAME,
# segments RAW, scores it against GOLD and prints a summary line.
run() {
  local name=$1 train=$2 gold=$3 raw=$4 words=$5 epochs=$6
  shift 6
  "$CWS" train --train "$train" --out "$OUT/$name.ckpt" --epochs "$epochs" \
    "${COMMON[@]}" "$@"
  "$CWS" segment --model "$OUT/$name.ckpt.best" --input "$raw" \
    --output "$OUT/$name.seg" --threads "${THREADS:-1}"
  "$CWS" score --gold "$gold" --test "$OUT/$name.seg" --words "$words" \
    --digits 4 > "$OUT/$name.score"
  local f r oov params seconds
  f=$(awk -F'\t' '/F MEASURE/ {print $2}' "$OUT/$name.score")
  oov=$(awk -F'\t' '/OOV Recall/ {print $2}' "$OUT/$name.score")
  # Log lines start with the time: the model line is found after it.
  params=$(grep -o ' cell [^:]*: [0-9]* parameters' "$OUT/$name.ckpt.log" |
           tail -1 | awk '{print $3}')
  seconds=$(grep -o '[0-9]* s training in all' "$OUT/$name.ckpt.log" |
            tail -1 | awk '{print $1}')
  echo "$name: F1 $f, OOV recall $oov, $params parameters, $seconds s training"
}

for cell in ${CELLS:-atr gru lstm}; do
  run "pku-$cell" "$PKU/pku_train_last10pct.utf8" "$PKU/pku_test_gold.utf8" \
    "$PKU/pku_test.utf8" "$PKU/pku_training_words.utf8" "${EPOCHS:-20}" \
    --cell "$cell"
  run "pku-dict-$cell" "$PKU/pku_train_last10pct.utf8" \
    "$PKU/pku_test_gold.utf8" "$PKU/pku_test.utf8" \
    "$PKU/pku_training_words.utf8" "${DICT_EPOCHS:-12}" --cell "$cell" \
    --dict "$PKU/pku_training_words.utf8" --dict-dropout 0.1
  run "ud-$cell" "$UD/train.conll" "$UD/dev.conll" "$UD/dev.conll" \
    "$UD/train.conll" "${EPOCHS:-20}" --cell "$cell"
done

# The bakeoff's baseline: forward maximum matching with the word list.
"$CWS" baseline --words "$PKU/pku_training_words.utf8" \
  --input "$PKU/pku_test.utf8" --output "$OUT/pku-mm.seg"
"$CWS" score --gold "$PKU/pku_test_gold.utf8" --test "$OUT/pku-mm.seg" \
  --words "$PKU/pku_training_words.utf8" --digits 4 > "$OUT/pku-mm.score"
echo "pku-mm: F1 $(awk -F'\t' '/F MEASURE/ {print $2}' "$OUT/pku-mm.score")"
"$CWS" baseline --words "$UD/train.conll" --input "$UD/dev.conll" \
  --output "$OUT/ud-mm.seg"
"$CWS" score --gold "$UD/dev.conll" --test "$OUT/ud-mm.seg" \
  --words "$UD/train.conll" --digits 4 > "$OUT/ud-mm.score"
echo "ud-mm: F1 $(awk -F'\t' '/F MEASURE/ {print $2}' "$OUT/ud-mm.score")"
