#!/usr/bin/env bash
# Every architecture of issues #14's and #15's Multi30k tables through
# multi30k.sh (same data, BPE and budget; #15's Cseq2seq table at width 128
# with ATR and GRU, where greedy BLEU stays near 0 for the first epochs, so
# perplexity too counts as progress), one run after another; each run
# resumes where it stopped, so the script can be interrupted and started
# again. About 30-80 min of 2 cores per 256-wide run; a 128-wide one took
# 10-20 min at THREADS=1 (2026-11-23). RUNS picks some (default: all), e.g.
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
  [c128-rnnsearch]="CELLS='atr gru' WIDTH=128 PLATEAU=either"
  [c128-i-ls]="CELLS='atr gru' WIDTH=128 PLATEAU=either ARCH=cseq2seq-1 FLAGS='--context last' RUN_SUFFIX=-ls"
  [c128-i-mp]="CELLS='atr gru' WIDTH=128 PLATEAU=either ARCH=cseq2seq-1 FLAGS='--context mean' RUN_SUFFIX=-mp"
  [c128-ii]="CELLS='atr gru' WIDTH=128 PLATEAU=either ARCH=cseq2seq-2"
  [c128-ii-sgru]="CELLS='atr gru' WIDTH=128 PLATEAU=either ARCH=cseq2seq-2 FLAGS=--share-cell RUN_SUFFIX=-sgru"
  [c128-ii-sword]="CELLS='atr gru' WIDTH=128 PLATEAU=either ARCH=cseq2seq-2 FLAGS=--tie-output RUN_SUFFIX=-sword"
  [c128-ii-both]="CELLS='atr gru' WIDTH=128 PLATEAU=either ARCH=cseq2seq-2 FLAGS='--share-cell --tie-output' RUN_SUFFIX=-sgru-sword"
)
ORDER="rnnsearch-ran rnnsearch-lau gnmt-2 gnmt-4 deeplau-2 deepgru-2 srnmt-1
  srnmt-2 srnmt-4 srnmt-4-nolayernorm srnmt-4-singleattention
  srnmt-4-nohighway sru-3 c128-rnnsearch c128-i-ls c128-i-mp c128-ii
  c128-ii-sgru c128-ii-sword c128-ii-both"
for run in ${RUNS:-$ORDER}; do
  if [ -z "${RECIPE[$run]:-}" ]; then
    echo "multi30k-table.sh: no run '$run' (runs: $ORDER)" >&2
    exit 2
  fi
  echo "== $run: ${RECIPE[$run]}"
  eval "env ${RECIPE[$run]} bash models/nmt/multi30k.sh"
done
