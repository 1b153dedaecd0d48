#!/usr/bin/env python3
"""Merges a newer bench_table.py output into bench/RESULTS.md, in place.

usage: scripts/bench_merge.py RESULTS.md NEW_TABLE.md [NEW_TABLE.md ...]

Each row of a new table replaces the row of RESULTS.md with the same op, dtype, shape and
reference (the main table and the CuPy table are matched separately, by the reference's name);
rows not there yet are added at the end of their table. The lines listed under the tables
("- op/dtype/shape: impl ..." variants and the GEMM error lines) are matched by what precedes
their first figure and replaced or added the same way. RESULTS.md's header is left to the
writer, who names the run of each row there.
"""
import re
import sys


def row_key(line):
    """(op, dtype, shape, reference impl) of a table row, or None for any other line."""
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) != 6 or cells[0] in ("op", "---") or set(cells[0]) <= {"-"}:
        return None
    ref = re.search(r"\(([^)]*)\)\s*$", cells[4])
    return (cells[0], cells[1], cells[2], ref.group(1) if ref else "")


def item_key(line):
    """What precedes the first figure of a "- name: impl figure ..." line, or None."""
    if not line.startswith("- "):
        return None
    m = re.match(r"- (\S+: \S+)", line)
    return m.group(1) if m else None


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    path = argv[1]
    lines = open(path).read().split("\n")
    for new_path in argv[2:]:
        for new in open(new_path).read().split("\n"):
            key = row_key(new) if new.startswith("|") else item_key(new)
            if key is None:
                continue
            is_row = new.startswith("|")
            match = [i for i, l in enumerate(lines) if (row_key(l) if is_row else item_key(l)) == key]
            if match:
                lines[match[0]] = new
                continue
            # Append after the last line of the same kind that shares the reference (rows: the
            # CuPy table vs the main one) or the op (items).
            if is_row:
                peers = [i for i, l in enumerate(lines) if l.startswith("|") and row_key(l) and
                         (row_key(l)[3] == "cupy") == (key[3] == "cupy")]
            else:
                same = [i for i, l in enumerate(lines) if item_key(l) and item_key(l).split("/")[0] == key.split("/")[0]]
                peers = same or [i for i, l in enumerate(lines) if item_key(l)]
            at = peers[-1] + 1 if peers else len(lines)
            lines.insert(at, new)
    open(path, "w").write("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv)
