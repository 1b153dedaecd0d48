#!/usr/bin/env python3
"""Turns Google Benchmark JSON files from devmat's benchmarks into the RESULTS.md table.

Benchmarks are named <op>/<dtype>/<shape>/<impl> (bench/support.hpp); "ours" is paired with
the first other impl of the same op/dtype/shape as its reference; ratio = ours / reference
(throughput). Other impls of ours ("ours-<config>") are listed under the table, with their
ratio to the same reference. A row may have several references: the second and later ones are
listed under the table too, except the peers of SECOND_TABLES (CuPy, from bench/cupy_peers.py),
which get a table of their own after the main one, in the same format.
Benchmarks with error counters (err and err_<ref>, bench_gemm's errors against an FP64
reference) are listed in a last section, ours beside the reference's.
"""
import json
import re
import sys

UNITS = {1: "GB/s", 2: "TFLOP/s", 3: "Mpix/s", 4: "Mop/s"}
# "dense": ours on a dense matrix of a view's shape, the reference of the view benchmarks
# (ratio = view throughput / dense throughput); "fused-kernel": a hand-written single-pass kernel;
# "npp": NVIDIA NPP, "cupy": cupyx.scipy.ndimage (the image operations' peers).
REF_ORDER = ["cublas", "cub", "thrust", "npp", "cupy", "fused-kernel", "dense", "memcpy", "launch-only", "cudamalloc", "eigen-cpu"]
# Peers with a table of their own (ratio = ours / peer): never the main table's reference.
SECOND_TABLES = {"cupy": "Against CuPy (cupyx.scipy.ndimage, or plain CuPy where ndimage has no such operation)"}


def entries(path):
    """(benchmark, [op, dtype, shape, impl...]) for each measured benchmark of a JSON file."""
    with open(path) as f:
        data = json.load(f)
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate" or "value" not in b:
            continue
        # Google Benchmark appends "/min_time:..." for benchmarks with their own MinTime.
        name = re.sub(r"/min_time:[^/]*", "", b["name"].split("/manual_time")[0])
        parts = name.split("/")
        if len(parts) >= 4:
            yield b, parts


def load(paths, errors=None):
    rows = {}
    order = []
    for path in paths:
        for b, parts in entries(path):
            op, dtype, shape, impl = parts[0], parts[1], parts[2], "/".join(parts[3:])
            key = (op, dtype, shape)
            if key not in rows:
                rows[key] = {}
                order.append(key)
            rows[key][impl] = (b["value"], UNITS.get(int(b.get("unit", 0)), "?"))
            if errors is not None:
                errs = [f"{c} {b[c]:.3g}" for c in sorted(b) if c == "err" or c.startswith("err_")]
                if errs:
                    errors.append(f"- {'/'.join(parts)}: " + ", ".join(errs))
    return rows, order


def main(paths):
    errors = []
    rows, order = load(paths, errors)
    out = ["| op | dtype | shape | ours | reference | ratio |", "|---|---|---|---|---|---|"]
    extra = []
    for key in order:
        impls = rows[key]
        refs = [i for i in impls if not i.startswith("ours") and i not in SECOND_TABLES]
        refs.sort(key=lambda i: REF_ORDER.index(i) if i in REF_ORDER else len(REF_ORDER))
        if "ours" in impls and refs:
            (v, unit), ref = impls["ours"], refs[0]
            rv, _ = impls[ref]
            out.append(f"| {key[0]} | {key[1]} | {key[2]} | {v:.4g} {unit} | {rv:.4g} {unit} ({ref}) | {v / rv:.3f} |")
            for other in refs[1:]:
                ov, _ = impls[other]
                extra.append(f"- {'/'.join(key)}: {other} {ov:.4g} {unit} (ours/{other} = {v / ov:.3f})")
        for impl, (v, unit) in impls.items():
            if impl.startswith("ours") and impl != "ours":
                # Against the row's reference too, where it has one (the view benchmarks' variants).
                vs = f" ({impl}/{refs[0]} = {v / impls[refs[0]][0]:.3f})" if refs else ""
                extra.append(f"- {'/'.join(key)}: {impl} {v:.4g} {unit}{vs}")
    print("\n".join(out))
    for peer, title in SECOND_TABLES.items():
        peer_rows = []
        for key in order:
            impls = rows[key]
            if "ours" in impls and peer in impls:
                (v, unit), (pv, _) = impls["ours"], impls[peer]
                peer_rows.append(f"| {key[0]} | {key[1]} | {key[2]} | {v:.4g} {unit} | {pv:.4g} {unit} ({peer}) | {v / pv:.3f} |")
        if peer_rows:
            print(f"\n{title}:\n")
            print("\n".join(out[:2] + peer_rows))
    if extra:
        print("\nOther variants measured in the same run:\n")
        print("\n".join(extra))
    if errors:
        print("\nErrors against an FP64 reference (||C - C64||_F / ||C64||_F; _pos: data in [0, 1)):\n")
        print("\n".join(errors))


if __name__ == "__main__":
    main(sys.argv[1:])
