#!/usr/bin/env bash
# Data-parallel training on this machine: `nmt train` as 1 process x 2
# threads against `mpirun -np 2` x 1 thread, on the embedded task (the
# default model) and, when ../shared/data has it, the Multi30k recipe
# (models/nmt/multi30k.sh's model, 256 wide). Prints training words/s of
# each layout (updates 100 to UPDATES, from OUT.jsonl), the seconds per
# update, and a model of the gradient reduction's cost on N machines:
# a ring all-reduce sends and receives 2 (N-1)/N x the gradients' bytes per
# update on each machine's link.
#
#   bench/mpi-scaling.sh              # UPDATES=300 by default
# Run it on an otherwise idle machine: it measures speed.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BUILD_DIR:-build}/bin
UPDATES=${UPDATES:-300}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
# Root in a container, and no ssh needed for ranks on this machine.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_plm_rsh_agent=${OMPI_MCA_plm_rsh_agent:-false}
M30K=${DATA:-../shared/data/multi30k/tok}

task_args() {
  case $1 in
  numbers) echo "--task numbers" ;;
  multi30k)
    echo "--task files --tokenizer bpe --bpe-src 8000 --bpe-tgt 8000" \
      "--train-src $M30K/train.lc.norm.tok.en" \
      "--train-tgt $M30K/train.lc.norm.tok.de" \
      "--valid-src $M30K/val.lc.norm.tok.en" \
      "--valid-tgt $M30K/val.lc.norm.tok.de" \
      "--emb 256 --hidden 256 --att 256 --readout 256" ;;
  esac
}

# words/s and seconds per update between update 100 and the last.
rate() {
  python3 - "$1" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
ups = [e for e in events if e["event"] == "update"]
a, b = ups[0], ups[-1]
print(f"{b['words_per_s']:.0f} {(b['seconds'] - a['seconds']) / (b['update'] - a['update']):.4f}")
PY
}

printf "%-9s %-22s %10s %9s %10s %s\n" task layout "words/s" "s/update" params \
  "reduction (rank 0)"
for task in numbers multi30k; do
  if [ $task = multi30k ] && [ ! -f "$M30K/train.lc.norm.tok.en" ]; then
    echo "multi30k: no data at $M30K: skipped"
    continue
  fi
  args="$(task_args $task) --max-updates $UPDATES --log-every 100 --no-progress"
  for layout in "1 process x 2 threads" "2 processes x 1 thread"; do
    out=$OUT/$task-${layout// /-}.ckpt
    if [[ $layout == 1* ]]; then
      "$BIN/nmt" train $args --threads 2 --out "$out" 2>"$out.err"
    else
      mpirun --oversubscribe -np 2 "$BIN/nmt" train $args --threads 1 \
        --out "$out" 2>"$out.err"
    fi
    read -r wps seconds < <(rate "$out.jsonl")
    params=$(grep -oE '[0-9]+ parameters' "$out.log" | head -1 | cut -d' ' -f1)
    reduction=$(grep -oE '[0-9.]+ ms per update' "$out.log" || true)
    printf "%-9s %-22s %10s %9s %10s %s\n" $task "$layout" "$wps" "$seconds" \
      "$params" "${reduction:--}"
    echo "$task $params $seconds" >>"$OUT/sizes"
  done
done

echo
echo "Gradient reduction per update (ring all-reduce, fp32, no overlap):"
python3 - "$OUT/sizes" <<'PY'
import sys
seen = {}
for line in open(sys.argv[1]):
    task, params, seconds = line.split()
    seen.setdefault(task, (int(params), float(seconds)))
# The ATR paper's RNNSearch on WMT14 En-De (67.8M parameters, its Table 3).
seen["paper-size"] = (67_800_000, None)
print(f"{'model':<11} {'MB/update':>9} {'Gb/s':>5} {'N=2':>8} {'N=8':>8} {'N=64':>8}  compute/update")
for task, (params, seconds) in seen.items():
    mb = params * 4 / 1e6
    for gbps in (10, 25, 100):
        cells = []
        for n in (2, 8, 64):
            t = 2 * (n - 1) / n * params * 4 * 8 / (gbps * 1e9)
            cells.append(f"{t * 1000:6.1f}ms")
        compute = f"{seconds * 1000:.0f} ms" if seconds else "-"
        print(f"{task:<11} {mb:9.1f} {gbps:5d} {cells[0]:>8} {cells[1]:>8} {cells[2]:>8}  {compute}")
PY
