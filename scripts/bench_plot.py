#!/usr/bin/env python3
"""Plots every ratio of a devmat benchmark table (bench/RESULTS.md, or the bench_table.md that
scripts/gpu-check writes) against its reference, as an SVG.

    scripts/bench_plot.py [TABLE.md] [-o OUT.svg]     (default: bench/RESULTS.md -> bench/ratios.svg)

Ratios come from the table's rows ("| op | dtype | shape | ours | reference (impl) | ratio |") and
from the "Other variants" lines that compare ours with a second reference ("(ours/<impl> = r)").
One row per ratio, grouped by op; the colour names the reference; the ratio axis is logarithmic,
with a line at 1.0 (left of it ours is slower than the reference, right of it faster).
Needs matplotlib (pip install matplotlib); exits 3 with a note when it is missing.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = "| op | dtype | shape | ours | reference | ratio |"
ROW = re.compile(r"^\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|[^|]*\|[^|]*\(([^)]+)\)\s*\|\s*([0-9.eE+-]+)\s*\|")
OTHER = re.compile(r"^- ([^/\s]+)/([^/\s]+)/([^:\s]+): \S+ .*\(ours/([^ ]+) = ([0-9.eE+-]+)\)")


def parse(path):
    """[(op, dtype, shape, reference, ratio)] in the order of the file, table rows first."""
    rows, others, in_table = [], [], False
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith(HEADER):
                in_table = True
                continue
            if in_table:
                if not line.startswith("|"):
                    in_table = False
                elif not line.startswith("|---"):
                    m = ROW.match(line)
                    if m:
                        op, dtype, shape, ref, ratio = m.groups()
                        rows.append((op, dtype, shape, ref, float(ratio)))
                continue
            m = OTHER.match(line)
            if m:
                op, dtype, shape, ref, ratio = m.groups()
                others.append((op, dtype, shape, ref, float(ratio)))
    return rows + others


def plot(entries, out, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker as ticker
    plt.rcParams["svg.hashsalt"] = "devmat"  # stable ids: the committed SVG changes only with the data

    ops = []  # in order of first appearance
    for e in entries:
        if e[0] not in ops:
            ops.append(e[0])
    refs = []
    for e in entries:
        if e[3] not in refs:
            refs.append(e[3])
    colours = plt.get_cmap("tab10")
    colour = {r: colours(i % 10) for i, r in enumerate(refs)}

    # y positions from the top: a heading line per op, then its rows.
    labels, ys, y = [], [], 0
    heads = []
    placed = []
    for op in ops:
        heads.append((y, op))
        y += 1
        for e in entries:
            if e[0] == op:
                placed.append((y, e))
                y += 1
        y += 0.4
    height = 0.22 * y + 1.2

    fig, ax = plt.subplots(figsize=(9, height))
    ax.set_xscale("log")
    ratios = [e[4] for _, e in placed]
    lo, hi = min(ratios + [1.0]), max(ratios + [1.0])
    ax.set_xlim(lo / 2.2, hi * 3.5)
    ax.axvline(1.0, color="black", linewidth=1)
    for yy, (op, dtype, shape, ref, ratio) in placed:
        ax.plot([1.0, ratio], [yy, yy], color=colour[ref], linewidth=2.5, solid_capstyle="butt")
        ax.plot([ratio], [yy], "o", color=colour[ref], markersize=4)
        ax.annotate(f"{ratio:.3g}" if ratio < 100 else f"{ratio:.0f}", (ratio, yy), xytext=(4 if ratio >= 1 else -4, 0),
                    textcoords="offset points", va="center", ha="left" if ratio >= 1 else "right",
                    fontsize=7)
        labels.append(f"{dtype} {shape} vs {ref}")
        ys.append(yy)
    for yy, op in heads:
        ax.annotate(op, (0.0, yy), xycoords=ax.get_yaxis_transform(), xytext=(-6, 0),
                    textcoords="offset points", ha="right", va="center", fontsize=9, fontweight="bold")
        ax.axhline(yy - 0.7, color="0.85", linewidth=0.8)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_ylim(y, -1)
    ax.tick_params(axis="y", length=0)
    ax.set_xlabel("ours / reference (throughput; > 1: faster than the reference), log scale")
    ax.set_title(title, fontsize=10)
    handles = [plt.Line2D([], [], color=colour[r], linewidth=2.5, marker="o", markersize=4) for r in refs]
    ax.legend(handles, [f"vs {r}" for r in refs], title="reference", fontsize=7, title_fontsize=8,
              loc="lower right", framealpha=0.9)
    ax.xaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", which="major", color="0.9")
    fig.tight_layout()
    fig.savefig(out, format="svg", metadata={"Date": None})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("table", nargs="?", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    p.add_argument("-o", "--output", default=None, help="SVG to write (default: bench/ratios.svg)")
    p.add_argument("--title", default="devmat: each benchmark against its reference (same run, same inputs)")
    args = p.parse_args()
    out = args.output or os.path.join(ROOT, "bench", "ratios.svg")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("bench_plot: matplotlib is not installed (pip install matplotlib); no plot written",
              file=sys.stderr)
        return 3
    entries = parse(args.table)
    if not entries:
        print(f"bench_plot: no ratio rows in {args.table}", file=sys.stderr)
        return 1
    plot(entries, out, args.title)
    print(f"bench_plot: {len(entries)} ratios -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
