#!/usr/bin/python3
"""A results table of a README as a picture: one bar per row.

  plot_table.py README.md "MARKER" OUT_STEM [--value COLUMN]
                [--seeds COLUMN,COLUMN] [--title TEXT] [--xlabel TEXT]

Reads the first markdown table after the first line of README.md that
contains MARKER (e.g. "The table so far") and writes OUT_STEM.png and
OUT_STEM.svg: a horizontal bar per row, labelled by the row's first two
cells ("model (cell)"), of length the row's --value column (default "test BLEU s1"), with
a dot for each --seeds column (default: the value column and "s2") that
has a number, and the row's bar drawn at the seeds' mean. Blank cells are
skipped; "**x**" reads as x. The README stays the one place the numbers
live. Uses Debian's python3-matplotlib (scripts/setup.sh).
"""

import argparse
import re
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def table_after(lines, marker):
    """The rows (dicts by header) of the first table after `marker`."""
    start = next((i for i, line in enumerate(lines) if marker in line), None)
    if start is None:
        sys.exit(f"plot_table.py: no line contains '{marker}'")
    rows, header = [], None
    for line in lines[start + 1:]:
        if not line.startswith("|"):
            if header:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not all(re.fullmatch(r":?-+:?", c) for c in cells):
            rows.append(dict(zip(header, cells)))
    if not header:
        sys.exit(f"plot_table.py: no table after '{marker}'")
    return header, rows


def number(text):
    """The cell's leading number, or None ('**36.02**', '7,931 (s2)')."""
    match = re.match(r"[*~]*(-?[\d,]*\.?\d+)", text or "")
    return float(match.group(1).replace(",", "")) if match else None


def label(model, cell):
    """The bar's name: the model, and its cell unless the model's first word
    names it ("DeepGRU 2+2", "SRU 3+3"); a later word that only ends in the
    cell's name ("+ SGRU") does not."""
    words = model.split()
    return model if words and words[0].endswith(cell) else f"{model} ({cell})"


def bars(header, rows, seed_columns):
    for column in seed_columns:
        if column not in header:
            sys.exit(f"plot_table.py: no column '{column}' (columns: "
                     f"{', '.join(header)})")
    found = []
    for row in rows:
        seeds = [v for v in (number(row.get(c)) for c in seed_columns)
                 if v is not None]
        if seeds:
            model, cell = (row[h] for h in header[:2])
            found.append((label(model, cell), sum(seeds) / len(seeds), seeds))
    if not found:
        sys.exit("plot_table.py: no row has a number in "
                 + ", ".join(seed_columns))
    return found


def draw(found, out_stem, xlabel, title):
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(found) + 1.6))
    y = range(len(found))[::-1]
    ax.barh(list(y), [mean for _, mean, _ in found], color="#9ecae1",
            label="mean of the seeds")
    for row_y, (_, _, seeds) in zip(y, found):
        ax.plot(seeds, [row_y] * len(seeds), "o", color="#08519c",
                markersize=4)
    ax.plot([], [], "o", color="#08519c", markersize=4, label="each seed")
    ax.set_yticks(list(y))
    ax.set_yticklabels([label for label, _, _ in found], fontsize=8)
    low = min(min(seeds) for _, _, seeds in found)
    high = max(max(seeds) for _, _, seeds in found)
    ax.set_xlim(max(0.0, low - 2), high + 1)
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1),
              ncol=2, frameon=False)
    fig.tight_layout()
    for suffix in (".png", ".svg"):
        fig.savefig(out_stem + suffix, dpi=110)
    print(f"wrote {out_stem}.png and .svg ({len(found)} rows)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("readme")
    parser.add_argument("marker")
    parser.add_argument("out_stem")
    parser.add_argument("--value", default="test BLEU s1")
    parser.add_argument("--seeds", help="columns with one seed's value each "
                        "(default: --value and s2)")
    parser.add_argument("--title", default="")
    parser.add_argument("--xlabel", default="test BLEU")
    args = parser.parse_args()
    with open(args.readme, encoding="utf-8") as f:
        header, rows = table_after(f.read().splitlines(), args.marker)
    seeds = args.seeds.split(",") if args.seeds else [args.value, "s2"]
    draw(bars(header, rows, seeds), args.out_stem, args.xlabel, args.title)


if __name__ == "__main__":
    main()
