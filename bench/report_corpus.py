#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The corpus benchmark's table: bench_corpus (C) and bench_corpus.py (Python) rows, joined.

    report_corpus.py C.csv [PY.csv] [--out CSV] [--machine NAME] [--commit SHA] [--load TEXT]

For every (set, operation): nearby's median and the peer's, and the ratio peer / nearby (above 1:
nearby is faster); for pairs and count, where both sides time the same work (build included),
the Python package's time over the C library's (the binding's share). Targets: at least 1.0x
nanoflann and 1.5x cKDTree on point sets, 1.5x the packed Boost rtree on rectangle sets; a ratio
below its target is printed in bold and counted. The scenarios (kinds far, axis, periodic,
corr: corpus.h) get a table of their own, with the same targets, and for the periodic rows from
C, whose measure is nearby's own periodic grid on uniform points of the same N
(periodic_uniform), at least 0.67x (the clump costing at most 1.5x the uniform box).
Prints Markdown tables; --out writes every row with the machine, commit, date and load.
"""
import argparse
import csv
import datetime
import statistics
import sys

TARGETS = {"nanoflann": 1.0, "ckdtree": 1.5, "rtree_packed": 1.5, "periodic_uniform": 0.67}
NEARBY = {"nanoflann": "nearby", "ckdtree": "nearby_py", "rtree_packed": "nearby",
          "periodic_uniform": "nearby"}
SCENARIOS = ("far", "axis", "periodic", "corr")


def read(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("set,") or line.startswith("mismatches,"):
                continue
            rows.append(dict(zip(["set", "kind", "dim", "n", "radius", "operation", "peer",
                                  "median_ms", "min_ms", "runs", "count", "checksum"],
                                 line.split(","))))
    return rows


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("c_rows")
    ap.add_argument("py_rows", nargs="?")
    ap.add_argument("--out")
    ap.add_argument("--machine", default="")
    ap.add_argument("--commit", default="")
    ap.add_argument("--load", default="")
    args = ap.parse_args(argv[1:])
    rows = read(args.c_rows) + (read(args.py_rows) if args.py_rows else [])
    ms = {(r["kind"], r["set"], r["operation"], r["peer"]): float(r["median_ms"]) for r in rows}
    info = {}
    order = []
    for r in rows:
        key = (r["kind"], r["set"], r["operation"])
        if key not in info:
            info[key] = r
            order.append(key)

    below = []
    ratios = {}  # (table, peer) -> ratios

    def cell(key, peer, table):
        """'nearby ms | peer ms | ratio' for one peer, or blanks."""
        kind, s, op = key
        mine, theirs = ms.get(key + (NEARBY[peer],)), ms.get(key + (peer,))
        if mine is None or theirs is None or mine <= 0:
            return ["", "", ""] if mine is None else ["%.1f" % mine, "", ""]
        ratio = theirs / mine
        ratios.setdefault((table, peer), []).append(ratio)
        text = "%.2fx" % ratio
        if ratio < TARGETS[peer]:
            where = s if kind in ("points", "rects") else "%s %s" % (kind, s)
            below.append("%s %s vs %s: %.2fx (target %.2gx)" % (where, op, peer, ratio,
                                                               TARGETS[peer]))
            text = "**%s**" % text
        return ["%.1f" % mine, "%.1f" % theirs, text]

    print("Point sets (ms, medians; ratio = peer / nearby, bold below the target: 1.0x "
          "nanoflann, 1.5x cKDTree)\n")
    print("| set | N | r | operation | nearby C | nanoflann | ratio | nearby Python | cKDTree "
          "| ratio | Python / C |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for key in order:
        kind, s, op = key
        r = info[key]
        if kind != "points":
            continue
        # the binding's share: only where both sides time the same work (build included)
        c_ms, py_ms = ms.get(key + ("nearby",)), ms.get(key + ("nearby_py",))
        over = "%.2f" % (py_ms / c_ms) if op in ("pairs", "count") and c_ms and py_ms else ""
        print("| %s | %s | %.4g | %s | %s | %s |" % (s, r["n"], float(r["radius"]), op,
                                                     " | ".join(cell(key, "nanoflann", "sets") +
                                                                cell(key, "ckdtree", "sets")),
                                                     over))
    print("\nRectangle sets (ms, medians; ratio = packed Boost rtree / nearby's quadtree, bold "
          "below 1.5x)\n")
    print("| set | N | operation | nearby | packed rtree | ratio |")
    print("|---|---:|---|---:|---:|---:|")
    for key in order:
        kind, s, op = key
        if kind != "rects":
            continue
        print("| %s | %s | %s | %s |" % (s, info[key]["n"], op,
                                         " | ".join(cell(key, "rtree_packed", "sets"))))
    if any(key[0] in SCENARIOS for key in order):
        print("\nScenarios (ms, medians; ratio = peer / nearby, bold below the target: 1.0x "
              "nanoflann, 1.5x cKDTree, 0.67x nearby's periodic grid on uniform points)\n")
        print("| scenario | set | N | operation | nearby C | C peer | peer | ratio "
              "| nearby Python | cKDTree | ratio |")
        print("|---|---|---:|---|---:|---|---:|---:|---:|---:|---:|")
        for key in order:
            kind, s, op = key
            if kind not in SCENARIOS:
                continue
            peer = "periodic_uniform" if kind == "periodic" else "nanoflann"
            c_cells = cell(key, peer, "scenarios")
            name = ("uniform" if kind == "periodic" else "nanoflann") if c_cells[1] else ""
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                  % (kind, s, info[key]["n"], op, c_cells[0], name, c_cells[1], c_cells[2],
                     " | ".join(cell(key, "ckdtree", "scenarios"))))
    print()
    for (table, peer), rs in ratios.items():
        print("%s, %s: %d cells, median ratio %.2fx, worst %.2fx"
              % (table, peer, len(rs), statistics.median(rs), min(rs)))
    print("%d cells below their target%s" % (len(below), ":" if below else ""))
    for b in below:
        print("  " + b)
    if args.out:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
        with open(args.out, "w", newline="") as f:
            w = csv.writer(f)
            cols = ["set", "kind", "dim", "n", "radius", "operation", "peer", "median_ms",
                    "min_ms", "runs", "count", "checksum"]
            w.writerow(cols + ["machine", "commit", "date", "load"])
            for r in rows:
                w.writerow([r[c] for c in cols] + [args.machine, args.commit, stamp, args.load])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
