#!/usr/bin/env bash
# Every architecture of the Multi30k tables through multi30k.sh: the same
# data and BPE for all. TABLE=256 (the default; issue #42): width 256 for
# the embedding, state, attention and readout, until validation perplexity
# has not improved for 3 validations or 25 epochs, in $OUT (default
# BUILD_DIR/m30k-w256, apart from the recipe's own runs). TABLE=128: the
# history tables of issues #14 and #15 (width 128, 10 epochs, --plateau-
# metric either), in BUILD_DIR/m30k. Each run resumes where it stopped, so
# the script can be interrupted and started again; a width-256 run takes
# about 4 min an epoch on one idle core of this 2-core machine (DeepGRU
# 2+2, 2026-11-28). RUNS picks some (default: all); JOBS (default 1) runs
# that many at once from one queue, each writing $OUT/table-RUN.out; with
# the default THREADS=1 and JOBS=2 each run gets one core, e.g.
#   JOBS=2 RUNS="w256-rnnsearch w256-lstm" models/nmt/multi30k-table.sh
# SEED (default 1) is every run's --seed; another seed's runs are named
# -sSEED (the second seeds the issue asks for where a gap is small).
set -euo pipefail
cd "$(dirname "$0")/../.."
TABLE=${TABLE:-256}
case "$TABLE" in
  256)
    P=w256
    BUDGET="WIDTH=256 PLATEAU=ppl EPOCHS=25"
    export OUT=${OUT:-${BUILD_DIR:-build}/m30k-w256} ;;
  128)
    P=c128
    BUDGET="WIDTH=128 PLATEAU=either EPOCHS=10" ;;
  *)
    echo "multi30k-table.sh: TABLE is 256 or 128, not '$TABLE'" >&2
    exit 2 ;;
esac
SEED=${SEED:-1}
if [ "$SEED" != 1 ]; then
  BUDGET="$BUDGET SEED_FLAG='--seed $SEED' SEED_SUFFIX=-s$SEED"
fi
SR4="CELLS=atr ARCH=srnmt LAYERS=4"
declare -A RECIPE=(
  # Cells, context-aware encoder, deep stacks, SR-NMT, SRU (issue #14).
  [$P-rnnsearch]="CELLS='atr gru' $BUDGET"
  [$P-lstm]="CELLS=lstm $BUDGET"
  [$P-ran]="CELLS=ran $BUDGET"
  [$P-lau]="CELLS=lau $BUDGET"
  [$P-ca]="CELLS=atr ARCH=ca $BUDGET"
  [$P-ca-gru]="CELLS=gru ARCH=ca $BUDGET"
  [$P-gnmt-2]="CELLS=atr ARCH=gnmt LAYERS=2 $BUDGET"
  [$P-gnmt-4]="CELLS=atr ARCH=gnmt LAYERS=4 $BUDGET"
  [$P-deeplau-2]="CELLS=lau ARCH=deep LAYERS=2 $BUDGET"
  [$P-deepgru-2]="CELLS=gru ARCH=deep LAYERS=2 $BUDGET"
  [$P-srnmt-1]="CELLS=atr ARCH=srnmt LAYERS=1 $BUDGET"
  [$P-srnmt-2]="CELLS=atr ARCH=srnmt LAYERS=2 $BUDGET"
  [$P-srnmt-4]="$SR4 $BUDGET"
  [$P-srnmt-4-nolayernorm]="$SR4 $BUDGET FLAGS=--no-layernorm RUN_SUFFIX=-nolayernorm"
  [$P-srnmt-4-singleattention]="$SR4 $BUDGET FLAGS=--single-attention RUN_SUFFIX=-singleattention"
  [$P-srnmt-4-nohighway]="$SR4 $BUDGET FLAGS=--no-highway RUN_SUFFIX=-nohighway"
  [$P-sru-3]="CELLS=sru ARCH=gnmt LAYERS=3 $BUDGET"
  # RNNSearch's rivals of Cseq2seq with ATR and GRU (issue #15).
  [$P-i-ls]="CELLS='atr gru' $BUDGET ARCH=cseq2seq-1 FLAGS='--context last' RUN_SUFFIX=-ls"
  [$P-i-mp]="CELLS='atr gru' $BUDGET ARCH=cseq2seq-1 FLAGS='--context mean' RUN_SUFFIX=-mp"
  [$P-ii]="CELLS='atr gru' $BUDGET ARCH=cseq2seq-2"
  [$P-ii-sgru]="CELLS='atr gru' $BUDGET ARCH=cseq2seq-2 FLAGS=--share-cell RUN_SUFFIX=-sgru"
  [$P-ii-sword]="CELLS='atr gru' $BUDGET ARCH=cseq2seq-2 FLAGS=--tie-output RUN_SUFFIX=-sword"
  [$P-ii-both]="CELLS='atr gru' $BUDGET ARCH=cseq2seq-2 FLAGS='--share-cell --tie-output' RUN_SUFFIX=-sgru-sword"
)
ORDER="$P-rnnsearch $P-lstm $P-ran $P-lau $P-ca $P-ca-gru $P-gnmt-2
  $P-gnmt-4 $P-deeplau-2 $P-deepgru-2 $P-srnmt-1 $P-srnmt-2
  $P-srnmt-4 $P-srnmt-4-nolayernorm $P-srnmt-4-singleattention
  $P-srnmt-4-nohighway $P-sru-3 $P-i-ls $P-i-mp $P-ii
  $P-ii-sgru $P-ii-sword $P-ii-both"
for run in ${RUNS:-$ORDER}; do
  if [ -z "${RECIPE[$run]:-}" ]; then
    echo "multi30k-table.sh: no run '$run' (runs: $ORDER)" >&2
    exit 2
  fi
done
export THREADS=${THREADS:-1}

runOne() {
  echo "== $1: ${RECIPE[$1]}"
  eval "env ${RECIPE[$1]} bash models/nmt/multi30k.sh"
}

if [ "${JOBS:-1}" = 1 ]; then
  for run in ${RUNS:-$ORDER}; do runOne "$run"; done
  exit 0
fi
# A queue of run names; each of JOBS workers takes the next one under a lock.
OUT=${OUT:-${BUILD_DIR:-build}/m30k}
mkdir -p "$OUT"
queue=$(mktemp)
trap 'rm -f "$queue" "$queue.lock"' EXIT
printf '%s\n' ${RUNS:-$ORDER} >"$queue"
# The lock is its own file: sed -i replaces the queue's, so a lock on the
# queue itself would not be the same lock for every worker.
nextRun() {
  flock "$queue.lock" bash -c 'head -1 "$1"; sed -i 1d "$1"' _ "$queue"
}
worker() {
  local run
  while run=$(nextRun) && [ -n "$run" ]; do
    if runOne "$run" >"$OUT/table-$run.out" 2>&1; then
      echo "$run: done ($(tail -1 "$OUT/table-$run.out"))"
    else
      echo "$run: FAILED, see $OUT/table-$run.out" >&2
    fi
  done
}
for _ in $(seq "$JOBS"); do worker & done
wait
