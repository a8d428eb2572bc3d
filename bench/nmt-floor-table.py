#!/usr/bin/env python3
"""Issue #47's NMT floor table: runs nmt-floor on each checkpoint at each
thread count and precision, and prints bench/README.md's table (markdown).

  bench/nmt-floor-table.py [--nmt-floor PATH] [--threads 1,2]
      [--precisions f32,bf16] [--updates 20] [--sentences 100] [--reps 3]
      NAME=CHECKPOINT ...

e.g. with issue #42's width-256 checkpoints (models/nmt/multi30k-table.sh):
  bench/nmt-floor-table.py "RNNSearch ATR=$OUT/atr.ckpt.best" \\
      "RNNSearch GRU=$OUT/gru.ckpt.best" "DeepGRU 2+2=$OUT/gru-deep-2.ckpt.best"

Each run's own output goes to stderr as it comes; the table to stdout.
Measure on an idle machine: the ratios are real time over the floor's.
"""

import argparse
import re
import subprocess
import sys
from pathlib import Path

# "  real  4.833 s  7330 target words/s" and the floor lines after it.
LINE = re.compile(r"^\s*(real|GEMM floor|flop floor)\s+([0-9.]+) s\s+([0-9]+) "
                  r"target words/s")
SECTION = re.compile(r"^(training|decoding): ")


def parse(output):
    """{(section, line): words/s} from nmt-floor's report."""
    found, section = {}, None
    for line in output.splitlines():
        head = SECTION.match(line)
        if head:
            section = head.group(1)
            continue
        match = LINE.match(line)
        if match and section:
            found[(section, match.group(1))] = float(match.group(3))
    return found


def measure(args, checkpoint, threads, precision):
    command = [args.nmt_floor, "--model", checkpoint, "--threads",
               str(threads), "--precision", precision, "--updates",
               str(args.updates), "--sentences", str(args.sentences),
               "--reps", str(args.reps)]
    print("$ " + " ".join(command), file=sys.stderr, flush=True)
    run = subprocess.run(command, capture_output=True, text=True)
    sys.stderr.write(run.stdout + run.stderr)
    if run.returncode != 0:
        raise SystemExit(f"nmt-floor-table: {checkpoint}: nmt-floor failed "
                         f"(exit {run.returncode})")
    found = parse(run.stdout)
    wanted = [(s, l) for s in ("training", "decoding")
              for l in ("real", "GEMM floor", "flop floor")]
    missing = [f"{s} {l}" for s, l in wanted if (s, l) not in found]
    if missing:
        raise SystemExit(f"nmt-floor-table: {checkpoint}: no "
                         f"{', '.join(missing)} in nmt-floor's output")
    return found


def row(name, threads, precision, m):
    cells = [name, str(threads), precision]
    for section in ("training", "decoding"):
        real = m[(section, "real")]
        gemm, flop = m[(section, "GEMM floor")], m[(section, "flop floor")]
        cells += [f"{real:,.0f}", f"{gemm:,.0f}", f"{gemm / real:.2f}x",
                  f"{flop / real:.2f}x"]
    return "| " + " | ".join(cells) + " |"


def main():
    parser = argparse.ArgumentParser(
        description="nmt-floor over checkpoints, threads and precisions, "
                    "as a markdown table (issue #47)")
    parser.add_argument("models", nargs="+", metavar="NAME=CHECKPOINT")
    parser.add_argument("--nmt-floor", default=str(
        Path(__file__).resolve().parent.parent / "build/bin/nmt-floor"))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--precisions", default="f32,bf16")
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    models = []
    for item in args.models:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            parser.error(f"'{item}' is not NAME=CHECKPOINT")
        if not Path(path).is_file():
            parser.error(f"{name}: no checkpoint {path}")
        models.append((name, path))
    rows = []
    for threads in args.threads.split(","):
        for precision in args.precisions.split(","):
            for name, path in models:
                rows.append(row(name, threads, precision,
                                measure(args, path, threads, precision)))
    print("| model | threads | precision | training words/s | GEMM floor | "
          "real / GEMM floor | real / flop floor | decoding words/s | "
          "GEMM floor | real / GEMM floor | real / flop floor |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
