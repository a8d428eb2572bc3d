#!/usr/bin/python3
"""Learning curves from training event logs (nmt train's OUT.jsonl).

  plot_training.py OUT_STEM RUN.jsonl [RUN.jsonl ...] [--label NAME ...]
                   [--smoothing S]

Writes OUT_STEM.png and OUT_STEM.svg: the training loss by update,
smoothed; the validation perplexity (log scale) and BLEU by update, every
validation (the epochs' ends, marked, and those within an epoch,
--valid-every); BLEU by training time (added up across resumes); and,
where a run logged them, its attention's distance from the diagonal and
entropy at each validation (nmt train, models with an attention). One
line per run (several runs on one plot compare cells or settings). Labels
default to the file names. The loss is an exponential moving average over
the logged updates with weight S on the past (default 0.9; 0 plots the raw
losses). Uses Debian's python3-matplotlib (scripts/setup.sh).
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


def interval_losses(events):
    """(update, mean loss since the previous logged update) for every
    "update" event.

    An update event's `loss` is the mean over its epoch so far, which
    drops at each epoch's start (a staircase). The mean over the updates
    since the previous event is recovered from two such means, weighting
    updates alike (token batches are of similar sizes).
    """
    epoch_start = {1: 0}  # epoch -> updates before it
    for event in events:
        if event.get("event") == "epoch" and event.get("update") is not None:
            epoch_start[event["epoch"] + 1] = event["update"]
    points, previous = [], {}  # epoch -> (updates into it, running mean)
    for event in events:
        if event.get("event") != "update" or event.get("loss") is None:
            continue
        epoch, update, mean = event["epoch"], event["update"], event["loss"]
        start = epoch_start.get(epoch)
        if start is None:  # an epoch whose start is unknown: its mean
            points.append((update, mean))
            continue
        done = update - start
        before, before_mean = previous.get(epoch, (0, 0.0))
        if done > before:
            total = mean * done - before_mean * before
            points.append((update, total / (done - before)))
        previous[epoch] = (done, mean)
    return points


def smoothed(values, smoothing):
    """Exponential moving average with weight `smoothing` on the past,
    corrected for its start at 0 (the first value is itself)."""
    average, out = 0.0, []
    for count, value in enumerate(values, 1):
        average = smoothing * average + (1 - smoothing) * value
        out.append(average / (1 - smoothing ** count) if smoothing else value)
    return out


def validations(events):
    """Every validation, by update: (update, event) of the epochs' ends
    ("epoch") and of those within an epoch ("validation"). A validation at
    an epoch's last update is that epoch's end."""
    by_update = {}
    for event in events:
        kind = event.get("event")
        if kind in ("validation", "epoch") and event.get("update") is not None:
            if kind == "epoch" or event["update"] not in by_update:
                by_update[event["update"]] = event
    return [by_update[update] for update in sorted(by_update)]


def plot_validations(panel, found, x, y, label):
    points = [(e[x], e[y], e["event"] == "epoch") for e in found
              if e.get(x) is not None and e.get(y) is not None]
    if not points:
        return
    xs, ys, ends = zip(*points)
    line, = panel.plot(xs, ys, marker=".", markersize=3, label=label)
    # The epochs' ends, bigger: the mid-epoch ones fall between.
    panel.plot([p for p, end in zip(xs, ends) if end],
               [q for q, end in zip(ys, ends) if end], linestyle="none",
               marker="o", markersize=4, color=line.get_color())


def plot_loss(panel, events, smoothing, label):
    points = interval_losses(events)
    if not points:
        return
    updates, losses = zip(*points)
    color = None
    if smoothing:  # the raw losses faintly behind their average
        raw, = panel.plot(updates, losses, alpha=0.25, linewidth=0.8)
        color = raw.get_color()
    panel.plot(updates, smoothed(losses, smoothing), label=label, color=color)


def parse_args(args):
    labels, smoothing = [], 0.9
    while "--label" in args:
        at = args.index("--label")
        labels.append(args[at + 1])
        del args[at:at + 2]
    if "--smoothing" in args:
        at = args.index("--smoothing")
        smoothing = float(args[at + 1])
        del args[at:at + 2]
        if not 0 <= smoothing < 1:
            sys.exit("--smoothing: a weight in [0, 1)")
    if len(args) < 2:
        sys.exit(__doc__)
    stem, runs = args[0], args[1:]
    labels += [os.path.basename(path).split(".")[0]
               for path in runs[len(labels):]]
    return stem, runs, labels, smoothing


def main():
    stem, runs, labels, smoothing = parse_args(sys.argv[1:])
    all_events = [run_seconds(read_events(path)) for path in runs]
    # nmt logs its attention's summary at each validation (2026-11-30 on):
    # a third row draws it where any run has it.
    attention = any("valid_attention_off_diagonal" in e
                    for events in all_events for e in events)
    rows = 3 if attention else 2
    figure, axes = plt.subplots(rows, 2, figsize=(10, 3.5 * rows))
    loss_panel = axes[0][0]
    valid_panels = [
        (axes[0][1], "update", "valid_ppl",
         "validation perplexity (o: an epoch's end)"),
        (axes[1][0], "update", "valid_bleu",
         "validation BLEU (o: an epoch's end)"),
        (axes[1][1], "run_seconds", "valid_bleu",
         "validation BLEU by training time (across resumes)"),
    ]
    if attention:
        valid_panels += [
            (axes[2][0], "update", "valid_attention_off_diagonal",
             "attention: its argmax's distance from the diagonal"),
            (axes[2][1], "update", "valid_attention_entropy",
             "attention: entropy over a uniform weighting's"),
        ]
    for events, label in zip(all_events, labels):
        plot_loss(loss_panel, events, smoothing, label)
        found = validations(events)
        for panel, x, y, _ in valid_panels:
            plot_validations(panel, found, x, y, label)
    loss_title = ("training loss (moving average over updates, "
                  f"weight {smoothing:g})" if smoothing else "training loss")
    titles = [(loss_panel, "update", loss_title)] + [
        (panel, x, title) for panel, x, _, title in valid_panels]
    for panel, x, title in titles:
        panel.set_title(title, fontsize=9)
        panel.set_xlabel("seconds" if x == "run_seconds" else x)
        if x == "update":
            panel.xaxis.set_major_locator(MaxNLocator(integer=True))
        if panel.get_legend_handles_labels()[0]:
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
