#!/usr/bin/env python3
"""Scaling over GPU counts from bench_dist's `scale-*` rows (issue 16's shapes).

usage: scripts/scaling_table.py [--plot OUT.svg] RUN.json [RUN.json ...]

Each JSON file is one bench_dist run (on 2, 4 or 8 GPUs: each row carries a `gpus` counter).
Prints `| op | GPUs | shape | ours | reference | ratio | efficiency |`: ours on that many GPUs
against devmat on one GPU in the same run (ratio = speed-up; efficiency = speed-up / GPUs), and
the NCCL bus-bandwidth rows of the same runs. With --plot, draws the speed-up of each op against
the GPU count beside the ideal line (matplotlib, where installed).
"""
import sys

from bench_table import UNITS, entries  # the same JSON reading and units as the RESULTS table


def load(paths):
    runs = []  # (op, shape) -> {impl: (value, unit, gpus)}, one dict per file
    for path in paths:
        rows = {}
        for b, parts in entries(path):
            if parts[0].startswith("scale-"):
                rows.setdefault((parts[0], parts[2]), {})[parts[3]] = (
                    b["value"], UNITS.get(int(b.get("unit", 0)), "?"), int(b.get("gpus", 1)))
        runs.append(rows)
    return runs


def main(argv):
    plot = None
    if argv[:1] == ["--plot"]:
        plot, argv = argv[1], argv[2:]
    out = ["| op | GPUs | shape | ours | reference | ratio | efficiency |", "|---|---|---|---|---|---|---|"]
    curves = {}
    for rows in load(argv):
        for (op, shape), impls in rows.items():
            if "ours" in impls and "one-gpu" in impls:
                v, unit, g = impls["ours"]
                rv, _, _ = impls["one-gpu"]
                out.append(f"| {op} | {g} | {shape} | {v:.4g} {unit} | {rv:.4g} {unit} (one-gpu) | {v / rv:.3f} | {v / rv / g:.3f} |")
                curves.setdefault(op, {1: 1.0})[g] = v / rv
            elif "nccl" in impls:
                v, unit, g = impls["nccl"]
                out.append(f"| {op} | {g} | {shape} | - | {v:.4g} {unit} (nccl) | - | - |")
    print("\n".join(out))
    if plot and curves:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("scaling_table: matplotlib not installed, no plot", file=sys.stderr)
            return 0
        fig, ax = plt.subplots(figsize=(6, 4))
        top = max(max(c) for c in curves.values())
        ax.plot([1, top], [1, top], "k--", label="ideal")
        for op, c in sorted(curves.items()):
            xs = sorted(c)
            ax.plot(xs, [c[x] for x in xs], "o-", label=op)
        ax.set_xlabel("GPUs")
        ax.set_ylabel("speed-up over one GPU")
        ax.set_xticks(sorted({x for c in curves.values() for x in c}))
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(plot)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
