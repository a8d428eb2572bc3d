#!/usr/bin/python3
"""Draws the attention of several models on one sentence, side by side.

  plot_attention.py OUT_STEM ANALYSIS.json... [--label NAME]... [--sentence N]

Each ANALYSIS.json is `nmt analyze` output of a model with an attention
(its "attention" key; `--sentences K` keeps the first K sentences). Draws
sentence N (default 0) of each as a panel: a row per target word, a
column per source word, the weight as grey, and over each panel the
model's summary over all sentences (distance of the argmax from the
diagonal, entropy over uniform's). Writes OUT_STEM.png and .svg. Uses
Debian's python3-matplotlib (scripts/setup.sh).
"""

import argparse
import json

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def load(path, sentence):
    with open(path, encoding="utf-8") as f:
        analysis = json.load(f)
    attention = analysis.get("attention")
    if attention is None:
        raise SystemExit(f"{path}: no attention (a model without one, or "
                         "written by an nmt analyze before 2026-11-30)")
    examples = attention["examples"]
    if sentence >= len(examples):
        raise SystemExit(f"{path}: sentence {sentence} not kept (it has "
                         f"{len(examples)}; nmt analyze --sentences K)")
    return attention, examples[sentence]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("analyses", nargs="+")
    parser.add_argument("--label", action="append", default=[])
    parser.add_argument("--sentence", type=int, default=0)
    args = parser.parse_args()
    if args.label and len(args.label) != len(args.analyses):
        raise SystemExit("give one --label per analysis, or none")
    labels = args.label or args.analyses
    panels = [load(path, args.sentence) for path in args.analyses]
    source = panels[0][1]["source"]
    target = panels[0][1]["target"]
    width = max(3.0, 0.32 * len(source) + 1.2)
    height = max(3.0, 0.28 * len(target) + 1.6)
    figure, axes = plt.subplots(1, len(panels),
                                figsize=(width * len(panels), height),
                                squeeze=False)
    for column, ((attention, example), label) in enumerate(zip(panels,
                                                               labels)):
        ax = axes[0][column]
        image = ax.imshow(example["weights"], cmap="Greys", vmin=0, vmax=1,
                          aspect="auto")
        ax.set_xticks(range(len(example["source"])), example["source"],
                      rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(example["target"])), example["target"],
                      fontsize=7)
        ax.set_title(f"{label}\noff the diagonal "
                     f"{attention['diagonal_distance']:.2f}, entropy "
                     f"{attention['normalized_entropy']:.2f} of uniform",
                     fontsize=8)
        ax.set_xlabel("source")
    axes[0][0].set_ylabel("target")
    figure.colorbar(image, ax=axes[0][-1], fraction=0.04)
    for extension in ("png", "svg"):
        figure.savefig(f"{args.out}.{extension}", bbox_inches="tight")
    print(f"wrote {args.out}.png and .svg")


if __name__ == "__main__":
    main()
