#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""nearby's Python package against scipy's cKDTree, in one process, on the same points.

    bench_python.py DATA.f64 [--runs N] [--knn-runs N] [--out CSV] [--machine NAME]

DATA.f64 is bench/gen_data.c's uniform2d set (1M points, density 1; run.sh makes it). Each
operation includes building the structure, as a user's one-liner does, and the runs of nearby
and cKDTree alternate so that both see the same noise from a shared machine:

  pairs   nearby.Grid(x).query_pairs(1.75, output_type='ndarray')
          cKDTree(x).query_pairs(1.75, output_type='ndarray')          (scipy's defaults)
          cKDTree(x, balanced_tree=False, compact_nodes=False)...      (its fastest build)
  knn     nearby.Grid(x).query(x, k=8)               and with workers=-1
          cKDTree(x).query(x, k=8, workers=1)        and workers=-1

Targets (issue 11): pairs >= 10x cKDTree, kNN >= 3x cKDTree with one worker each (ratios of
medians). Results are checked: the same pairs (count and an order-independent checksum) and
the same kNN distances. Prints a Markdown table; --out writes the CSV.
"""
import argparse
import csv
import os
import platform
import sys
import time

import numpy as np
import scipy
from scipy.spatial import cKDTree

import nearby

R = 1.75
K = 8


def checksum(pairs):
    """Order-independent: a mixed hash of each (min, max) pair, summed mod 2^64."""
    a = pairs[:, 0].astype(np.uint64)
    b = pairs[:, 1].astype(np.uint64)
    x = (np.minimum(a, b) << np.uint64(32)) | np.maximum(a, b)
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(33)
        x *= np.uint64(0xFF51AFD7ED558CCD)
        x ^= x >> np.uint64(33)
        return int(x.sum(dtype=np.uint64))


def timed(fn):
    t0 = time.perf_counter_ns()
    out = fn()
    return time.perf_counter_ns() - t0, out


def run_alternating(cases, runs):
    """cases: {name: fn}. Runs each once per round, round after round; returns
    {name: (sorted times, last result)}."""
    times = {name: [] for name in cases}
    results = {}
    for _ in range(runs):
        for name, fn in cases.items():
            results[name] = None  # free the last result before the next run
            t, results[name] = timed(fn)
            times[name].append(t)
    return {name: (sorted(times[name]), results[name]) for name in cases}


def median(ts):
    return ts[(len(ts) - 1) // 2]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--knn-runs", type=int, default=3)
    ap.add_argument("--out")
    ap.add_argument("--machine", default="c-%dcore" % os.cpu_count())
    args = ap.parse_args(argv[1:])
    x = np.fromfile(args.data, dtype="<f8").reshape(-1, 2)
    n = len(x)
    print("bench_python: %d points, r = %g, k = %d; nearby %s, scipy %s, numpy %s, CPython %s"
          % (n, R, K, nearby.__version__, scipy.__version__, np.__version__,
             platform.python_version()), file=sys.stderr)

    pairs = run_alternating({
        "nearby": lambda: nearby.Grid(x).query_pairs(R, output_type="ndarray"),
        "ckdtree": lambda: cKDTree(x).query_pairs(R, output_type="ndarray"),
        "ckdtree_fast": lambda: cKDTree(x, balanced_tree=False, compact_nodes=False)
        .query_pairs(R, output_type="ndarray"),
    }, args.runs)
    counts = {k: len(v[1]) for k, v in pairs.items()}
    sums = {k: checksum(v[1]) for k, v in pairs.items()}
    ok = len(set(counts.values())) == 1 and len(set(sums.values())) == 1
    if not ok:
        print("bench_python: MISMATCH in pairs: counts %s checksums %s" % (counts, sums),
              file=sys.stderr)
    pairs = {k: (v[0], counts[k]) for k, v in pairs.items()}

    knn = run_alternating({
        "nearby": lambda: nearby.Grid(x).query(x, k=K),
        "nearby_all": lambda: nearby.Grid(x).query(x, k=K, workers=-1),
        "ckdtree": lambda: cKDTree(x).query(x, k=K, workers=1),
        "ckdtree_all": lambda: cKDTree(x).query(x, k=K, workers=-1),
    }, args.knn_runs)
    ref = knn["ckdtree"][1][0]
    for name, (_, (d, _)) in knn.items():
        if not np.allclose(d, ref, rtol=1e-12, atol=0):
            ok = False
            print("bench_python: MISMATCH in kNN distances: %s" % name, file=sys.stderr)
    knn = {k: (v[0], K * n) for k, v in knn.items()}

    labels = {
        ("pairs", "nearby"): "`nearby.Grid(x).query_pairs(1.75, output_type='ndarray')`",
        ("pairs", "ckdtree"): "`cKDTree(x).query_pairs(1.75, output_type='ndarray')`",
        ("pairs", "ckdtree_fast"): "the same, `cKDTree(x, balanced_tree=False, "
                                   "compact_nodes=False)`",
        ("knn", "nearby"): "`nearby.Grid(x).query(x, k=8)`",
        ("knn", "nearby_all"): "`nearby.Grid(x).query(x, k=8, workers=-1)`",
        ("knn", "ckdtree"): "`cKDTree(x).query(x, k=8, workers=1)`",
        ("knn", "ckdtree_all"): "`cKDTree(x).query(x, k=8, workers=-1)`",
    }
    cpus = os.cpu_count()
    print("\n| operation (1M uniform 2D points, build included) | median | min | "
          "nearby is faster by |")
    print("|---|---:|---:|---:|")
    rows = []
    for op, table in (("pairs", pairs), ("knn", knn)):
        base = median(table["nearby"][0])
        for name, (ts, count) in table.items():
            speed = "" if name.startswith("nearby") else "**%.1fx**" % (median(ts) / base)
            print("| %s | %.0f ms | %.0f ms | %s |" % (labels[(op, name)], median(ts) / 1e6,
                                                      ts[0] / 1e6, speed))
            rows.append([name, op, n, len(ts), ts[0], median(ts), count, args.machine])
    pr = median(pairs["ckdtree"][0]) / median(pairs["nearby"][0])
    kr = median(knn["ckdtree"][0]) / median(knn["nearby"][0])
    print("\npairs: %.1fx cKDTree (target 10x: %s); kNN, one worker each: %.1fx cKDTree "
          "(target 3x: %s); %d CPUs for workers=-1"
          % (pr, "met" if pr >= 10 else "NOT met", kr, "met" if kr >= 3 else "NOT met", cpus))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["peer", "operation", "n_points", "runs", "min_ns", "median_ns",
                        "results", "machine"])
            w.writerows(rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
