#!/usr/bin/env bash
# Every architecture of issues #14's and #15's Multi30k tables through
# multi30k.sh: the same data, BPE and budget for all (width 128 for the
# embedding, state, attention and readout, 10 epochs, --plateau-metric
# either, since greedy BLEU stays near 0 for a narrow model's first epochs).
# Each run resumes where it stopped, so the script can be interrupted and
# started again. A run took 9-25 min on one core of this 2-core machine
# (2026-11-23). RUNS picks some (default: all); JOBS (default 1) runs that
# many at once from one queue, each writing $OUT/table-RUN.out; with the
# default THREADS=1 and JOBS=2 each run gets one core, e.g.
#   JOBS=2 RUNS="c128-gnmt-2 c128-srnmt-2" models/nmt/multi30k-table.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
C128="WIDTH=128 PLATEAU=either EPOCHS=10"
SR4="CELLS=atr ARCH=srnmt LAYERS=4"
declare -A RECIPE=(
  # Issue #14: cells, context-aware encoder, deep stacks, SR-NMT, SRU.
  [c128-lstm]="CELLS=lstm $C128"
  [c128-ran]="CELLS=ran $C128"
  [c128-lau]="CELLS=lau $C128"
  [c128-ca]="CELLS=atr ARCH=ca $C128"
  [c128-gnmt-2]="CELLS=atr ARCH=gnmt LAYERS=2 $C128"
  [c128-gnmt-4]="CELLS=atr ARCH=gnmt LAYERS=4 $C128"
  [c128-deeplau-2]="CELLS=lau ARCH=deep LAYERS=2 $C128"
  [c128-deepgru-2]="CELLS=gru ARCH=deep LAYERS=2 $C128"
  [c128-srnmt-1]="CELLS=atr ARCH=srnmt LAYERS=1 $C128"
  [c128-srnmt-2]="CELLS=atr ARCH=srnmt LAYERS=2 $C128"
  [c128-srnmt-4]="$SR4 $C128"
  [c128-srnmt-4-nolayernorm]="$SR4 $C128 FLAGS=--no-layernorm RUN_SUFFIX=-nolayernorm"
  [c128-srnmt-4-singleattention]="$SR4 $C128 FLAGS=--single-attention RUN_SUFFIX=-singleattention"
  [c128-srnmt-4-nohighway]="$SR4 $C128 FLAGS=--no-highway RUN_SUFFIX=-nohighway"
  [c128-sru-3]="CELLS=sru ARCH=gnmt LAYERS=3 $C128"
  # Issue #15: RNNSearch and every Cseq2seq variant with ATR and GRU.
  [c128-rnnsearch]="CELLS='atr gru' $C128"
  [c128-i-ls]="CELLS='atr gru' $C128 ARCH=cseq2seq-1 FLAGS='--context last' RUN_SUFFIX=-ls"
  [c128-i-mp]="CELLS='atr gru' $C128 ARCH=cseq2seq-1 FLAGS='--context mean' RUN_SUFFIX=-mp"
  [c128-ii]="CELLS='atr gru' $C128 ARCH=cseq2seq-2"
  [c128-ii-sgru]="CELLS='atr gru' $C128 ARCH=cseq2seq-2 FLAGS=--share-cell RUN_SUFFIX=-sgru"
  [c128-ii-sword]="CELLS='atr gru' $C128 ARCH=cseq2seq-2 FLAGS=--tie-output RUN_SUFFIX=-sword"
  [c128-ii-both]="CELLS='atr gru' $C128 ARCH=cseq2seq-2 FLAGS='--share-cell --tie-output' RUN_SUFFIX=-sgru-sword"
)
ORDER="c128-rnnsearch c128-lstm c128-ran c128-lau c128-ca c128-gnmt-2
  c128-gnmt-4 c128-deeplau-2 c128-deepgru-2 c128-srnmt-1 c128-srnmt-2
  c128-srnmt-4 c128-srnmt-4-nolayernorm c128-srnmt-4-singleattention
  c128-srnmt-4-nohighway c128-sru-3 c128-i-ls c128-i-mp c128-ii
  c128-ii-sgru c128-ii-sword c128-ii-both"
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
