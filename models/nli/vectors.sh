#!/usr/bin/env bash
# In-domain word vectors for the NLI recipe, since only a 100-word GloVe
# sample is available here: fastText skip-gram (Debian's fasttext) on
# unlabelled training-side text only, lower-cased as nli reads it: the
# English side of Multi30k train (Flickr30k captions, SNLI's premise
# domain), the SNLI train_small sentences and the SICK train sentences.
# No dev or test sentence is read.
#
#   models/nli/vectors.sh [OUT.vec]       # default nli-runs/indomain100.vec
#   EMBEDDINGS=nli-runs/indomain100.vec THREADS=1 models/nli/snli.sh
#
# SHARED is the shared data folder (default ../shared/data); relative paths
# are taken from the repository's root.
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED=${SHARED:-../shared/data}
OUT=${1:-nli-runs/indomain100.vec}
DIM=${DIM:-100}
case "$OUT" in
  *.vec) ;;
  *) echo "vectors.sh: the output must end in .vec (fastText adds it)" >&2; exit 2 ;;
esac
command -v fasttext > /dev/null ||
  { echo "vectors.sh: no fasttext (scripts/setup.sh installs it)" >&2; exit 1; }
for f in multi30k/tok/train.lc.norm.tok.en nli/snli/s1.train_small \
         nli/snli/s2.train_small nli/sick/train.tsv; do
  [ -f "$SHARED/$f" ] ||
    { echo "vectors.sh: $SHARED/$f is absent; set SHARED" >&2; exit 1; }
done
mkdir -p "$(dirname "$OUT")"
corpus=$(mktemp)
trap 'rm -f "$corpus"' EXIT
{
  cat "$SHARED/multi30k/tok/train.lc.norm.tok.en"
  cat "$SHARED/nli/snli/s1.train_small" "$SHARED/nli/snli/s2.train_small" |
    awk '!seen[$0]++' | tr 'A-Z' 'a-z'
  # SICK is untokenised: split off every ASCII punctuation mark but ' and -,
  # as nli's tokenizer does (its sentences hold only , . ' and -).
  cut -f1,2 "$SHARED/nli/sick/train.tsv" | tr '\t' '\n' | awk '!seen[$0]++' |
    tr 'A-Z' 'a-z' | perl -pe 's/([!-&(-,.\/:-@\[-`{-~])/ $1 /g'
} > "$corpus"
echo "vectors.sh: $(wc -w < "$corpus") words of training-side text"
# One thread: the same vectors on every machine (fastText is
# nondeterministic with more).
fasttext skipgram -input "$corpus" -output "${OUT%.vec}" -dim "$DIM" \
  -epoch 20 -minCount 2 -thread 1 -verbose 1
rm -f "${OUT%.vec}.bin"
echo "vectors.sh: wrote $OUT ($(head -1 "$OUT" | cut -d' ' -f1) words)"
