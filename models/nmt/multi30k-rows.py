#!/usr/bin/env python3
"""Table rows of Multi30k runs from their logs (multi30k.sh, multi30k-table.sh).

    models/nmt/multi30k-rows.py build/m30k atr-gnmt-2-w128 lau-deep-2-w128 ...

For each run (checkpoint name without .ckpt): parameters, the epochs run
and the epoch of the best validation perplexity, that perplexity (what the
width-256 table stops on), the best validation BLEU and its epoch, test
BLEU, training minutes (the epochs' own seconds), the median epoch's
training words/s and the beam-5 decoding words/s, read from
OUT/RUN.ckpt.log and the table-*.out files multi30k-table.sh writes.
Prints one markdown row per run; a run without a test score yet is marked.
"""
import glob
import os
import re
import statistics
import sys
from collections import namedtuple

Epoch = namedtuple("Epoch", "number ppl bleu words_per_s seconds")


def epochs(log_path):
    rows = []
    params = None
    pattern = re.compile(r"epoch (\d+) done: .*valid ppl ([\d.]+), "
                         r"valid BLEU ([\d.]+).*?, (\d+) words/s, ([\d.]+) s")
    with open(log_path) as log:
        for line in log:
            if params is None:
                m = re.search(r"(\d+) parameters", line)
                if m:
                    params = int(m.group(1))
            m = pattern.search(line)
            if m:
                rows.append(Epoch(int(m.group(1)), float(m.group(2)),
                                  float(m.group(3)), int(m.group(4)),
                                  float(m.group(5))))
    return params, rows


def scores(out_dir):
    """run -> (test BLEU, decode words/s) from every table-*.out."""
    found = {}
    for path in glob.glob(os.path.join(out_dir, "table-*.out")):
        decode = None
        with open(path) as out:
            for line in out:
                m = re.search(r"\((\d+) words/s, beam", line)
                if m:
                    decode = int(m.group(1))
                m = re.match(r"(\S+) test_2016_flickr: BLEU = ([\d.]+)", line)
                if m:
                    found[m.group(1)] = (float(m.group(2)), decode)
    return found


def main():
    out_dir, runs = sys.argv[1], sys.argv[2:]
    tested = scores(out_dir)
    for run in runs:
        params, rows = epochs(os.path.join(out_dir, run + ".ckpt.log"))
        if not rows:
            print(f"| {run} | (no epoch yet) |")
            continue
        # The first epoch of the best score, as the driver keeps it.
        best_bleu = max(rows, key=lambda r: (r.bleu, -r.number))
        best_ppl = min(rows, key=lambda r: (r.ppl, r.number))
        minutes = sum(r.seconds for r in rows) / 60
        speed = statistics.median(r.words_per_s for r in rows)
        test, decode = tested.get(run, (None, None))
        test_text = f"**{test:.2f}**" if test is not None else "(running)"
        decode_text = f"{decode:,}" if decode else "—"
        print(f"| {run} | {params / 1e6:.2f}M | {max(r.number for r in rows)} "
              f"({best_ppl.number}) | {best_ppl.ppl:.2f} | "
              f"{best_bleu.bleu:.2f} ({best_bleu.number}) | "
              f"{test_text} | {minutes:.1f} min | {speed:,.0f} | "
              f"{decode_text} |")


if __name__ == "__main__":
    main()
