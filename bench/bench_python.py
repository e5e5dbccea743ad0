#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""nearby.cKDTree against scipy's cKDTree, every method, on the corpus's point sets, in one
process.

    bench_python.py LIST.csv [--runs N] [--only SET,...] [--ops OP,...] [--out CSV]
                    [--machine NAME]

LIST.csv is what `gen_data --corpus DIR N NRECTS` writes (set,kind,dim,n,radius,file; the
rectangle sets are skipped). The import line is the only difference between the two peers:
each operation is `T(x).method(...)` with T = nearby.cKDTree or scipy.spatial.cKDTree, building
included, as a user's one-liner does; r is the set's radius (about 10 neighbours a point):

  knn        T(x).query(x, k=8)
  knn_inf    T(x).query(x[:n/10], k=8, p=inf)
  ball       T(x).query_ball_point(x[:n/10], r)                  (lists)
  ball_len   T(x).query_ball_point(x, r, return_length=True)
  ball_tree  T(x).query_ball_tree(T(x[:n/10]), r)
  pairs      T(x).query_pairs(r, output_type='ndarray')
  pairs_set  T(x).query_pairs(r)                                 (a set of tuples)
  count      t.count_neighbors(t, r), t = T(x)
  count_r    t.count_neighbors(t, [r/4, r/2, r])
  sdm        t.sparse_distance_matrix(t, r, output_type='coo_matrix')
  sdm_arr    t.sparse_distance_matrix(t, r, output_type='ndarray')

Runs alternate (nearby, scipy, nearby, ...) so both see the same load; the figure is the ratio of
the medians. Answers are checked against each other (counts, sorted pairs, distances to 1e-12).
Targets: every operation at least 2x cKDTree on every set; count and sdm at least 5x on uniform
data. Prints a Markdown table; --out writes the CSV; exit status 1 on a mismatch.
"""
import argparse
import csv
import os
import platform
import sys
import time

import numpy as np
import scipy
from scipy.spatial import cKDTree as SciTree

import nearby

OPS = ("knn", "knn_inf", "ball", "ball_len", "ball_tree", "pairs", "pairs_set", "count",
       "count_r", "sdm", "sdm_arr")
FIVE_X = ("count", "count_r", "sdm", "sdm_arr")


def operations(T, x, r):
    n = len(x)
    tenth = x[:max(1, n // 10)]
    return {
        "knn": lambda: T(x).query(x, k=8),
        "knn_inf": lambda: T(x).query(tenth, k=8, p=np.inf),
        "ball": lambda: T(x).query_ball_point(tenth, r),
        "ball_len": lambda: T(x).query_ball_point(x, r, return_length=True),
        "ball_tree": lambda: T(x).query_ball_tree(T(tenth), r),
        "pairs": lambda: T(x).query_pairs(r, output_type="ndarray"),
        "pairs_set": lambda: T(x).query_pairs(r),
        "count": lambda: (lambda t: t.count_neighbors(t, r))(T(x)),
        "count_r": lambda: (lambda t: t.count_neighbors(t, [r / 4, r / 2, r]))(T(x)),
        "sdm": lambda: (lambda t: t.sparse_distance_matrix(t, r, output_type="coo_matrix"))(T(x)),
        "sdm_arr": lambda: (lambda t: t.sparse_distance_matrix(t, r, output_type="ndarray"))(
            T(x)),
    }


def digest(op, res):
    """What must agree between the peers, in an order-independent form."""
    if op in ("knn", "knn_inf"):
        return res[0]
    if op == "ball" or op == "ball_tree":
        return np.array([len(v) for v in res]), sum(int(np.sum(v)) for v in res)
    if op == "pairs":
        return len(res), checksum(res)
    if op == "pairs_set":
        return len(res)
    if op == "sdm":
        return res.nnz, float(np.sort(res.data).sum())
    if op == "sdm_arr":
        return len(res), float(np.sort(res["v"]).sum())
    return res


def agree(a, b):
    if isinstance(a, tuple):
        return all(agree(u, v) for u, v in zip(a, b))
    if isinstance(a, float):
        return abs(a - b) <= 1e-9 * max(1.0, abs(a))
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        return bool(np.allclose(a, b, rtol=1e-12, atol=0))
    return bool((a == b).all())


def median(ts):
    return sorted(ts)[(len(ts) - 1) // 2]


def timed(fn):
    """(nanoseconds, result) of one call (bench_corpus.py uses it too)."""
    t0 = time.perf_counter_ns()
    out = fn()
    return time.perf_counter_ns() - t0, out


def checksum(pairs):
    """Order-independent checksum of (K, 2) pairs: a mixed hash of each (min, max) pair,
    summed mod 2^64 (bench_corpus.py uses it too)."""
    a = pairs[:, 0].astype(np.uint64)
    b = pairs[:, 1].astype(np.uint64)
    x = (np.minimum(a, b) << np.uint64(32)) | np.maximum(a, b)
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(33)
        x *= np.uint64(0xFF51AFD7ED558CCD)
        x ^= x >> np.uint64(33)
        return int(x.sum(dtype=np.uint64))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--ops", default="")
    ap.add_argument("--out")
    ap.add_argument("--machine", default="c-%dcore" % os.cpu_count())
    args = ap.parse_args(argv[1:])
    only = set(filter(None, args.only.split(",")))
    ops = [op for op in OPS if not args.ops or op in args.ops.split(",")]
    with open(args.corpus) as f:
        sets = [row for row in csv.DictReader(f) if row["kind"] == "points"
                and (not only or row["set"] in only)]
    print("bench_python: %d sets, %d runs; nearby %s, scipy %s, numpy %s, CPython %s"
          % (len(sets), args.runs, nearby.__version__, scipy.__version__, np.__version__,
             platform.python_version()), file=sys.stderr)
    ok = True
    rows, table = [], {}
    for s in sets:
        x = np.ascontiguousarray(np.load(s["file"]), dtype=np.float64)
        r = float(s["radius"])
        ours, theirs = operations(nearby.cKDTree, x, r), operations(SciTree, x, r)
        for op in ops:
            tn, ts = [], []
            res_n = res_s = None
            for _ in range(args.runs):
                res_n = res_s = None  # free the last results before the next run
                t, res_n = timed(ours[op])
                tn.append(t)
                t, res_s = timed(theirs[op])
                ts.append(t)
            if not agree(digest(op, res_n), digest(op, res_s)):
                ok = False
                print("bench_python: MISMATCH in %s on %s" % (op, s["set"]), file=sys.stderr)
            ratio = median(ts) / median(tn)
            table[(s["set"], op)] = ratio
            print("bench_python: %-10s %-9s nearby %8.1f ms  cKDTree %8.1f ms  %5.1fx"
                  % (s["set"], op, median(tn) / 1e6, median(ts) / 1e6, ratio), file=sys.stderr)
            rows.append([s["set"], op, len(x), args.runs, min(tn), median(tn), min(ts),
                         median(ts), "%.2f" % ratio, args.machine])
    names = [s["set"] for s in sets]
    print("\n| cKDTree time / nearby.cKDTree time | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    missed = []
    for op in ops:
        cells = []
        for name in names:
            ratio = table[(name, op)]
            goal = 5.0 if op in FIVE_X and name.startswith("uniform") else 2.0
            if ratio < goal:
                missed.append("%s/%s %.1fx < %gx" % (name, op, ratio, goal))
            cells.append(("%.1f" if ratio < 10 else "%.0f") % ratio)
        print("| `%s` | %s |" % (op, " | ".join(cells)))
    print("\ntargets (2x everywhere, 5x for count/sdm on uniform): %s"
          % ("all met" if not missed else "NOT met: " + ", ".join(missed)))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["set", "operation", "n_points", "runs", "nearby_min_ns",
                        "nearby_median_ns", "ckdtree_min_ns", "ckdtree_median_ns", "ratio",
                        "machine"])
            w.writerows(rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
