#!/usr/bin/python3
"""Draws bench/results.txt's speed ratios as a chart.

  chart.py RESULTS OUT_STEM

Writes OUT_STEM.png and OUT_STEM.svg: for every sequence workload (forward
and forward + backward, each shape and thread count) and the decoding step,
one bar per peer with the peer's time over cellc's (right of 1: cellc is
faster), and the GEMM floor's (how close cellc is to the floor). Reads the
results with bench/report.py's parser. Uses Debian's python3-matplotlib
(scripts/setup.sh); bench/run calls it after report.py.
"""

import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

SERIES = ["floor"] + report.PEERS


def ratios(data):
    """{workload: {series: time / cellc time}} in report.py's order."""
    table = {}
    res = data["results"]
    for (impl, cell, mode, T, B, threads), r in sorted(
            res.items(), key=lambda item: (item[0][2], item[0][3],
                                           item[0][4], item[0][5],
                                           report.CELLS.index(item[0][1])
                                           if item[0][1] in report.CELLS
                                           else 99)):
        if impl not in SERIES:
            continue
        cellc = res.get(("cellc", cell, mode, T, B, threads))
        if cellc is None or report.ms(cellc) == 0:
            continue
        name = report.workload_name(cell, mode, T, B, threads)
        table.setdefault(name, {})[impl] = report.ms(r) / report.ms(cellc)
    return table


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = report.parse(sys.argv[1])
    table = ratios(data)
    if not table:
        sys.exit(f"{sys.argv[1]}: no comparisons to draw")
    names = list(table)
    height = 0.8 / len(SERIES)
    figure, axes = plt.subplots(figsize=(9, 0.32 * len(names) + 1.5))
    for k, series in enumerate(SERIES):
        ys = [i + k * height for i, name in enumerate(names)
              if series in table[name]]
        xs = [table[name][series] for name in names if series in table[name]]
        if xs:
            axes.barh(ys, xs, height=height,
                      label=report.LABEL.get(series, series))
    axes.axvline(1.0, color="black", linewidth=0.8)
    axes.set_yticks([i + 0.4 - height / 2 for i in range(len(names))])
    axes.set_yticklabels(names, fontsize=7)
    axes.invert_yaxis()
    axes.set_xlabel("time / cellc's time (> 1: cellc is faster)")
    meta = data["meta"]
    axes.set_title(f"cellc against its peers and the GEMM floor "
                   f"({meta.get('DATE', '?')}, commit "
                   f"{meta.get('COMMIT', '?')})", fontsize=9)
    axes.legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    for extension in ("png", "svg"):
        figure.savefig(f"{sys.argv[2]}.{extension}")
    print(f"wrote {sys.argv[2]}.png and .svg ({len(names)} workloads)")


if __name__ == "__main__":
    main()
