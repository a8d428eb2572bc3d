#!/usr/bin/python3
"""Validation perplexity and greedy BLEU by epoch, from `nmt train` event
logs and nmt_reference.py's output, on one picture.

  plot_epochs.py OUT_STEM LABEL=RUN [LABEL=RUN ...] [--title TEXT]

RUN is an `nmt train` OUT.jsonl (its "epoch" events), a file of
nmt_reference.py's output, or FILE#SECTION: the lines after "## SECTION"
in a file that holds several runs (results-h200.txt). Writes OUT_STEM.png
and OUT_STEM.svg. Perplexities compare only between runs of one
vocabulary (nmt's --tokenizer space --min-count 2 is the reference's).
Uses Debian's python3-matplotlib.
"""

import json
import re
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import NullFormatter, ScalarFormatter  # noqa: E402

EPOCH = re.compile(r"^epoch (\d+) train loss [0-9.]+ valid ppl ([0-9.]+) valid BLEU ([0-9.]+)")


def referenceLines(path):
    path, _, section = path.partition("#")
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not section:
        return lines
    out, inside = [], False
    for line in lines:
        if line.startswith("#"):  # a section's header, or a comment
            inside = line.startswith("## ") and line[3:].strip() == section
        elif inside:
            out.append(line)
    if not out:
        sys.exit(f"plot_epochs.py: no section '## {section}' in {path}")
    return out


def readRun(path):
    """[(epoch, valid ppl, valid BLEU)] of one run."""
    points = []
    if path.endswith(".jsonl"):
        with open(path, encoding="utf-8") as f:
            for line in f:
                event = json.loads(line) if line.strip() else {}
                if event.get("event") == "epoch":
                    points.append((event["epoch"], event["valid_ppl"], event["valid_bleu"]))
    else:
        for line in referenceLines(path):
            m = EPOCH.match(line)
            if m:
                points.append((int(m[1]), float(m[2]), float(m[3])))
    if not points:
        sys.exit(f"plot_epochs.py: no epochs in {path}")
    return points


def main(argv):
    title = None
    if "--title" in argv:
        i = argv.index("--title")
        if i + 1 == len(argv):
            sys.exit("plot_epochs.py: --title needs a text")
        title = argv[i + 1]
        del argv[i:i + 2]
    if len(argv) < 2 or any("=" not in a for a in argv[1:]):
        sys.exit(__doc__)
    fig, (ppl, bleu) = plt.subplots(1, 2, figsize=(11, 4.2))
    for arg in argv[1:]:
        label, path = arg.split("=", 1)
        points = readRun(path)
        epochs = [p[0] for p in points]
        style = "--" if not path.endswith(".jsonl") else "-"
        line, = ppl.plot(epochs, [p[1] for p in points], style, marker=".", label=label)
        bleu.plot(epochs, [p[2] for p in points], style, marker=".", color=line.get_color())
    ppl.set_yscale("log")
    low, high = ppl.get_ylim()
    ppl.set_yticks([t for t in (3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300)
                    if low <= t <= high])
    ppl.yaxis.set_major_formatter(ScalarFormatter())
    ppl.yaxis.set_minor_formatter(NullFormatter())
    ppl.set_xlabel("epoch")
    ppl.set_ylabel("validation perplexity")
    bleu.set_xlabel("epoch")
    bleu.set_ylabel("validation BLEU (greedy)")
    ppl.legend(fontsize=8)
    for ax in (ppl, bleu):
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{argv[0]}.{ext}", dpi=110)


if __name__ == "__main__":
    main(sys.argv[1:])
