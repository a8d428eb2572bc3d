#!/usr/bin/python3
"""Learning curves from training event logs (nmt train's OUT.jsonl).

  plot_training.py OUT_STEM RUN.jsonl [RUN.jsonl ...] [--label NAME ...]

Writes OUT_STEM.png and OUT_STEM.svg: training loss by update, and the
validation perplexity (log scale) and BLEU by epoch and by training time
(added up across resumes), one line per run (several runs on one plot
compare cells or settings). Labels
default to the file names. Uses Debian's python3-matplotlib
(scripts/setup.sh).
"""

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402


def read_events(path):
    events = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError as error:
                    sys.exit(f"{path}:{number}: not JSON: {error}")
    return events


def run_seconds(events):
    """Gives each event its seconds since the run began, across resumes.

    A resumed run's process counts `seconds` from its own start again; the
    time before it is the last event's seconds of the previous process.
    """
    offset, last = 0.0, 0.0
    for event in events:
        seconds = event.get("seconds")
        if seconds is None:
            continue
        if seconds < last:
            offset += last
        last = seconds
        event["run_seconds"] = offset + seconds
    return events


def series(events, kind, x, y):
    points = [(e[x], e[y]) for e in events
              if e.get("event") == kind and e.get(x) is not None
              and e.get(y) is not None]
    return [p[0] for p in points], [p[1] for p in points]


def main():
    args = sys.argv[1:]
    labels = []
    while "--label" in args:
        at = args.index("--label")
        labels.append(args[at + 1])
        del args[at:at + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    stem, runs = args[0], args[1:]
    labels += [os.path.basename(path).split(".")[0]
               for path in runs[len(labels):]]
    figure, axes = plt.subplots(2, 2, figsize=(10, 7))
    panels = [
        (axes[0][0], "update", "update", "loss", "training loss (epoch mean)"),
        (axes[0][1], "epoch", "epoch", "valid_ppl", "validation perplexity"),
        (axes[1][0], "epoch", "epoch", "valid_bleu", "validation BLEU"),
        (axes[1][1], "epoch", "run_seconds", "valid_bleu",
         "validation BLEU by training time (s, across resumes)"),
    ]
    for path, label in zip(runs, labels):
        events = run_seconds(read_events(path))
        for panel, kind, x, y, _ in panels:
            xs, ys = series(events, kind, x, y)
            if xs:
                panel.plot(xs, ys, marker="o", markersize=3, label=label)
    for panel, _, x, _, title in panels:
        panel.set_title(title, fontsize=9)
        panel.set_xlabel("seconds" if x == "run_seconds" else x)
        if x in ("update", "epoch"):
            panel.xaxis.set_major_locator(MaxNLocator(integer=True))
        if panel.lines:
            panel.legend(fontsize=8)
    # Early perplexities are 10x the final ones: a log scale shows the end.
    if axes[0][1].lines:
        axes[0][1].set_yscale("log")
    figure.tight_layout()
    for extension in ("png", "svg"):
        figure.savefig(f"{stem}.{extension}")
    print(f"wrote {stem}.png and .svg ({len(runs)} runs)")


if __name__ == "__main__":
    main()
