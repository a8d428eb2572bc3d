#!/usr/bin/env bash
# The NLI recipe: word-by-word attention with each cell and the bag-of-words
# baseline, trained on SNLI train_small (9,987 pairs: the full 550k are not
# available here) and on SICK train, accuracy on each dev set. The held-out
# test splits are never used here.
#
#   models/nli/snli.sh                      # all models, both data sets
#   MODELS="atr bow" EPOCHS=10 models/nli/snli.sh
#   EMBEDDINGS=nli-runs/indomain100.vec models/nli/snli.sh   # models/nli/vectors.sh
#
# Writes OUT/{snli,sick}-MODEL.ckpt{,.best,.log} and prints a table.
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=${DATA:-../shared/data/nli}
OUT=${OUT:-nli-runs}
MODELS=${MODELS:-"atr gru lstm bow"}
EPOCHS=${EPOCHS:-10}
THREADS=${THREADS:-2}
NLI=${NLI:-build/bin/nli}
vectors=()
[ -z "${EMBEDDINGS:-}" ] || vectors=(--embeddings "$EMBEDDINGS")
mkdir -p "$OUT"
if [ ! -d "$DATA/snli" ]; then
  echo "snli.sh: $DATA/snli is absent; set DATA" >&2
  exit 1
fi
printf "%-6s %-5s %12s %12s %10s %10s\n" data model params recurrent "dev acc" "train s"
for set in snli sick; do
  if [ "$set" = snli ]; then train=$DATA/snli/train_small; valid=$DATA/snli/dev
  else train=$DATA/sick/train; valid=$DATA/sick/dev; fi
  for model in $MODELS; do
    kind=attention; cell=$model
    if [ "$model" = bow ]; then kind=bow; cell=atr; fi
    ckpt=$OUT/$set-$model.ckpt
    start=$SECONDS
    "$NLI" train --train "$train" --valid "$valid" --model $kind --cell $cell \
      --emb 100 --hidden 100 --lr 2e-3 --dropout 0.3 --epochs "$EPOCHS" \
      --threads "$THREADS" --out "$ckpt" --force --no-progress "${vectors[@]}" \
      2> "$OUT/$set-$model.stderr"
    seconds=$((SECONDS - start))
    params=$(grep -o '[0-9]* parameters' "$OUT/$set-$model.stderr" | cut -d' ' -f1)
    recurrent=$(grep -o '[0-9]* recurrent' "$OUT/$set-$model.stderr" | cut -d' ' -f1)
    acc=$("$NLI" eval --model "$ckpt.best" --data "$valid" | head -1 |
          grep -o 'accuracy [0-9.]*%' | cut -d' ' -f2)
    printf "%-6s %-5s %12s %12s %10s %10s\n" $set $model "$params" "$recurrent" "$acc" "$seconds"
  done
done
