#!/usr/bin/python3
"""Draws the ATR paper's gate pictures from `nmt analyze` output.

  plot_gates.py ANALYSIS.json OUTDIR

ANALYSIS.json (written by `nmt analyze`, see models/nmt/README.md):
  {"cell": "atr", "sides": [{"side": "decoder",
     "gates": {"i": [mean per position], "f": [...]},
     "pearson": {"per_position": r, "all_steps": r},          (optional)
     "sentences": [{"words": [...], "links": [k or -1 per word],
                    "weights": [[w(t, k) for k <= t] per t]}]}],
   "attention": {"entropy": ..., "examples": [{"source": [...],
     "target": [...], "weights": [[w(j, t) per source word] per j]}]}}
                                                                (optional)
Writes, per side, OUTDIR/SIDE-gates.{png,svg} (Figure 3: the mean of each
probed gate by position, r in the legend) and OUTDIR/SIDE-arcs-N.{png,svg}
for the first sentences (Figure 4: each word linked to the earlier word
with the largest Eq. 10 weight, the arc's width by that weight), and
OUTDIR/attention-N.{png,svg}: each target word's attention weights over
the source.
Uses Debian's python3-matplotlib (scripts/setup.sh).
"""

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Arc  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402


def save(figure, path_stem):
    for extension in ("png", "svg"):
        figure.savefig(f"{path_stem}.{extension}", bbox_inches="tight")
    plt.close(figure)
    print(f"wrote {path_stem}.png and .svg")


def plot_gates(cell, side, out_dir):
    figure, axes = plt.subplots(figsize=(6, 3.5))
    pearson = side.get("pearson", {})
    for name, means in side["gates"].items():
        axes.plot(range(1, len(means) + 1), means, marker="o", markersize=3,
                  label=f"{name} gate")
    title = f"{cell} {side['side']}: gate means by position"
    if "per_position" in pearson:
        title += f"\nPearson r = {pearson['per_position']:.4f} (per position)"
        if "all_steps" in pearson:
            title += f", {pearson['all_steps']:.4f} (all steps)"
    axes.set_title(title, fontsize=9)
    axes.set_xlabel("position")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylabel("mean activation")
    axes.set_ylim(0, 1)
    axes.legend(fontsize=8)
    save(figure, os.path.join(out_dir, f"{side['side']}-gates"))


def plot_arcs(cell, side, index, sentence, out_dir):
    words, links = sentence["words"], sentence["links"]
    weights = sentence.get("weights", [])
    figure, axes = plt.subplots(figsize=(max(4, 0.7 * len(words)), 2.6))
    strongest = max([weights[t][k] for t, k in enumerate(links) if k >= 0]
                    or [1.0])
    for t, k in enumerate(links):
        if k < 0:
            continue
        weight = weights[t][k] if weights else 1.0
        width = 0.5 + 3.0 * weight / strongest if strongest > 0 else 1.0
        axes.add_patch(Arc(((t + k) / 2, 0), t - k, (t - k) * 0.8,
                           theta1=0, theta2=180, linewidth=width,
                           color="tab:blue"))
    for t, word in enumerate(words):
        axes.text(t, -0.15, word, ha="center", va="top", rotation=45,
                  fontsize=8)
    axes.set_xlim(-0.7, len(words) - 0.3)
    axes.set_ylim(-1.2, max(1.0, 0.45 * len(words)))
    axes.axis("off")
    axes.set_title(f"{cell} {side['side']}: each word and its strongest "
                   "earlier word (Eq. 10)", fontsize=9)
    save(figure, os.path.join(out_dir, f"{side['side']}-arcs-{index}"))


def plot_attention(cell, attention, index, example, out_dir):
    source, target = example["source"], example["target"]
    weights = example["weights"]
    figure, axes = plt.subplots(
        figsize=(max(3, 0.35 * len(source) + 1.5),
                 max(3, 0.3 * len(target) + 1.2)))
    image = axes.imshow(weights, cmap="Greys", vmin=0, vmax=1,
                        aspect="auto")
    axes.set_xticks(range(len(source)), source, rotation=60, ha="right",
                    fontsize=7)
    axes.set_yticks(range(len(target)), target, fontsize=7)
    axes.set_xlabel("source")
    axes.set_ylabel("target")
    axes.set_title(f"{cell}: attention weights (all sentences: entropy "
                   f"{attention['normalized_entropy']:.2f} of uniform,\n"
                   f"largest weight {attention['max_weight']:.2f}, on the "
                   f"last source word {attention['on_last_word']:.2f})",
                   fontsize=8)
    figure.colorbar(image, ax=axes, fraction=0.04)
    save(figure, os.path.join(out_dir, f"attention-{index}"))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        analysis = json.load(f)
    os.makedirs(sys.argv[2], exist_ok=True)
    for side in analysis["sides"]:
        if side.get("gates"):
            plot_gates(analysis["cell"], side, sys.argv[2])
        for index, sentence in enumerate(side.get("sentences", [])[:3]):
            plot_arcs(analysis["cell"], side, index, sentence, sys.argv[2])
    attention = analysis.get("attention")
    for index, example in enumerate((attention or {}).get("examples",
                                                          [])[:3]):
        plot_attention(analysis["cell"], attention, index, example,
                       sys.argv[2])


if __name__ == "__main__":
    main()
