#!/usr/bin/env bash
# Every architecture of issue #14's Multi30k table through multi30k.sh (same
# data, BPE, widths and budget), one run after another; each run resumes
# where it stopped, so the script can be interrupted and started again.
# About 30-80 min of 2 cores per run. RUNS picks some (default: all), e.g.
#   RUNS="gnmt-2 srnmt-2" models/nmt/multi30k-table.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
declare -A RECIPE=(
  [rnnsearch-ran]="CELLS=ran"
  [rnnsearch-lau]="CELLS=lau"
  [gnmt-2]="CELLS=atr ARCH=gnmt LAYERS=2"
  [gnmt-4]="CELLS=atr ARCH=gnmt LAYERS=4"
  [deeplau-2]="CELLS=lau ARCH=deep LAYERS=2"
  [deepgru-2]="CELLS=gru ARCH=deep LAYERS=2"
  [srnmt-1]="CELLS=atr ARCH=srnmt LAYERS=1"
  [srnmt-2]="CELLS=atr ARCH=srnmt LAYERS=2"
  [srnmt-4]="CELLS=atr ARCH=srnmt LAYERS=4"
  [srnmt-4-nolayernorm]="CELLS=atr ARCH=srnmt LAYERS=4 FLAGS=--no-layernorm RUN_SUFFIX=-nolayernorm"
  [srnmt-4-singleattention]="CELLS=atr ARCH=srnmt LAYERS=4 FLAGS=--single-attention RUN_SUFFIX=-singleattention"
  [srnmt-4-nohighway]="CELLS=atr ARCH=srnmt LAYERS=4 FLAGS=--no-highway RUN_SUFFIX=-nohighway"
  [sru-3]="CELLS=sru ARCH=gnmt LAYERS=3"
  [cseq2seq-1]="CELLS=gru ARCH=cseq2seq-1"
  [cseq2seq-2]="CELLS=gru ARCH=cseq2seq-2"
  [cseq2seq-2-shared]="CELLS=gru ARCH=cseq2seq-2 FLAGS=--share-cell RUN_SUFFIX=-sgru"
)
ORDER="rnnsearch-ran rnnsearch-lau gnmt-2 gnmt-4 deeplau-2 deepgru-2 srnmt-1
  srnmt-2 srnmt-4 srnmt-4-nolayernorm srnmt-4-singleattention
  srnmt-4-nohighway sru-3 cseq2seq-1 cseq2seq-2 cseq2seq-2-shared"
for run in ${RUNS:-$ORDER}; do
  if [ -z "${RECIPE[$run]:-}" ]; then
    echo "multi30k-table.sh: no run '$run' (runs: $ORDER)" >&2
    exit 2
  fi
  echo "== $run: ${RECIPE[$run]}"
  env ${RECIPE[$run]} bash models/nmt/multi30k.sh
done
