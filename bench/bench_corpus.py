#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The corpus benchmark, Python side: nearby's package against scipy's cKDTree on every point
set of the corpus and every scenario, in one process.

    bench_corpus.py LIST.csv [--runs K] [--queries Q] [--budget S] [--only SET|KIND,...]
                    [--no-scenarios | --scenarios-only]

LIST.csv is what `gen_data --corpus DIR N NRECTS` writes (set,kind,dim,n,radius,file,extra);
the rectangle sets in it are skipped (the C side runs them). Every operation includes building
the structure, as a user's one-liner does, with each library's defaults; r is the set's radius
and the queries are the set's first Q points:

  pairs    nearby.Grid(x).query_pairs(r, output_type='ndarray')
           cKDTree(x).query_pairs(r, output_type='ndarray')
  count    nearby.Grid(x).count_pairs(r)
           (t.count_neighbors(t, r) - N) // 2 with t = cKDTree(x)
  radius   Grid(x).query_ball_point(q, r, return_length=True), and cKDTree's
  knnK     Grid(x).query(q, k=K) and cKDTree(x).query(q, k=K), K = 1, 8, 32

The scenarios (corpus.h; rows of kind far, axis, periodic, corr) run the drop-in nearby.cKDTree
against scipy's, T = either:
  far, axis  T(x).query_ball_point(q, rq, return_length=True), T(x).query(q, k=K), K = 1, 8,
             from the scenario's queries far outside the box (its extra file); rq is each
             query's distance to its nearest point plus r
  periodic   T(x, boxsize=L).query_pairs(r, output_type='ndarray') and .query(x, k=8), every
             point's 8 nearest (L the extra column)
  corr       self: t.count_neighbors(t, radii), t = T(x); cross: T(x).count_neighbors(T(y),
             radii), y the extra file (a second draw); radii as corpus.c's nbb_corpus_radii

The runs alternate (nearby, cKDTree, nearby, ...) and stop early once an operation has taken S
seconds (default 4; S / 4 for a scenario's); where nearby's queries are so slow that all would
take more than a quarter of that (a cliff), both peers run as many as fit (stderr says so).
Answers are checked: the same pairs (count and checksum), counts, lengths, and kNN distances (to
1e-12, relative). Prints CSV rows in bench_corpus.cpp's format on stdout (peers nearby_py and
ckdtree) and `mismatches,K` last; exit status 1 on a mismatch.
"""
import argparse
import csv
import math
import sys
import time

import numpy as np
from scipy.spatial import cKDTree

import nearby
from bench_python import checksum, median, timed

SCENARIOS = ("far", "axis", "periodic", "corr")
RADII = 8  # corpus.h's NBB_SCENARIO_RADII


def alternate(a, b, runs, budget_ns):
    """Runs a and b alternately; returns (times of a, times of b, last results)."""
    ta, tb = [], []
    ra = rb = None
    spent = 0
    for k in range(runs):
        if k > 0 and spent > budget_ns:
            break
        ra = rb = None  # free the last results first
        t, ra = timed(a)
        ta.append(t)
        t2, rb = timed(b)
        tb.append(t2)
        spent += t + t2
    return sorted(ta), sorted(tb), ra, rb


def fit(name, op, nearby_fn, q, budget):
    """The queries for op: all of q, unless a probe of nearby (build included) on 1 and on 200
    of them (the faster of two each) says all would take more than a quarter of the budget (a
    cliff): then as many as fit, for both peers."""
    t1 = min(timed(lambda: nearby_fn(q[:1]))[0] for _ in range(2))
    t200 = min(timed(lambda: nearby_fn(q[:200]))[0] for _ in range(2))
    per = max(t200 - t1, 1) / 199.0
    m = len(q) if t1 + per * len(q) <= budget / 4 else max(200, int(budget / 4 / per))
    if m < len(q):
        print("bench_corpus.py: %s %s: %d of %d queries (%.0f us a query)"
              % (name, op, m, len(q), per / 1e3), file=sys.stderr)
    return q[:m]


def set_ops(name, x, r, queries, budget):
    """The corpus set's operations: (op, check, nearby, cKDTree)."""
    n = len(x)
    q = x[: min(queries, n)]

    def count_ckdtree():
        t = cKDTree(x)
        return (int(t.count_neighbors(t, r)) - n) // 2

    def radius_nearby(qs):
        return nearby.Grid(x).query_ball_point(qs, r, return_length=True)

    def knn_nearby(qs, k):
        return nearby.Grid(x).query(qs, k=k)

    ops = [
        ("pairs", "pairs", lambda: nearby.Grid(x).query_pairs(r, output_type="ndarray"),
         lambda: cKDTree(x).query_pairs(r, output_type="ndarray")),
        ("count", "count", lambda: nearby.Grid(x).count_pairs(r), count_ckdtree),
    ]
    qr = fit(name, "radius", radius_nearby, q, budget)
    ops.append(("radius", "lengths", lambda: radius_nearby(qr),
                lambda: cKDTree(x).query_ball_point(qr, r, return_length=True)))
    for k in (1, 8, 32):
        qk = fit(name, "knn%d" % k, lambda qs, k=k: knn_nearby(qs, k), q, budget)
        ops.append(("knn%d" % k, "knn", lambda k=k, qk=qk: knn_nearby(qk, k),
                    lambda k=k, qk=qk: cKDTree(x).query(qk, k=k)))
    return ops


def corr_radii(x, r, m=RADII):
    """corpus.c's nbb_corpus_radii: m radii log-spaced from r to the diagonal of x's box."""
    diag = math.sqrt(float(((x.max(axis=0) - x.min(axis=0)) ** 2).sum()))
    return np.array([r * math.pow(diag / r, k / (m - 1.0)) if m > 1 else r for k in range(m)])


def scenario_ops(row, x, r, budget):
    """A scenario's operations (corpus.h), each building nearby.cKDTree or scipy's cKDTree."""
    name, kind = row["set"], row["kind"]
    ops = []
    if kind in ("far", "axis"):
        q = np.load(row["extra"])
        rq = cKDTree(x).query(q, k=1)[0] + r  # each ball reaches into the data

        def radius(T, qs):
            return T(x).query_ball_point(qs, rq[: len(qs)], return_length=True)

        qr = fit(name, kind + " radius", lambda qs: radius(nearby.cKDTree, qs), q, budget)
        ops.append(("radius", "lengths", lambda: radius(nearby.cKDTree, qr),
                    lambda: radius(cKDTree, qr)))
        for k in (1, 8):
            qk = fit(name, "%s knn%d" % (kind, k),
                     lambda qs, k=k: nearby.cKDTree(x).query(qs, k=k), q, budget)
            ops.append(("knn%d" % k, "knn", lambda k=k, qk=qk: nearby.cKDTree(x).query(qk, k=k),
                        lambda k=k, qk=qk: cKDTree(x).query(qk, k=k)))
    elif kind == "periodic":
        box = float(row["extra"])
        ops.append(("pairs", "pairs",
                    lambda: nearby.cKDTree(x, boxsize=box).query_pairs(r, output_type="ndarray"),
                    lambda: cKDTree(x, boxsize=box).query_pairs(r, output_type="ndarray")))
        qk = fit(name, "periodic knn8", lambda qs: nearby.cKDTree(x, boxsize=box).query(qs, k=8),
                 x, budget)
        ops.append(("knn8", "knn", lambda: nearby.cKDTree(x, boxsize=box).query(qk, k=8),
                    lambda: cKDTree(x, boxsize=box).query(qk, k=8)))
    elif kind == "corr":
        y = np.load(row["extra"])
        radii = corr_radii(x, r)

        def self_count(T):
            t = T(x)
            return t.count_neighbors(t, radii)

        ops.append(("self", "counts", lambda: self_count(nearby.cKDTree),
                    lambda: self_count(cKDTree)))
        ops.append(("cross", "counts", lambda: nearby.cKDTree(x).count_neighbors(
            nearby.cKDTree(y), radii), lambda: cKDTree(x).count_neighbors(cKDTree(y), radii)))
    return ops


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("list")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--queries", type=int, default=20000)
    ap.add_argument("--budget", type=float, default=4.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-scenarios", action="store_true")
    ap.add_argument("--scenarios-only", action="store_true")
    args = ap.parse_args(argv[1:])
    only = set(filter(None, args.only.split(",")))
    budget = args.budget * 1e9
    mismatches = 0
    print("set,kind,dim,n,radius,operation,peer,median_ms,min_ms,runs,count,checksum")
    with open(args.list) as f:
        rows = [row for row in csv.DictReader(f)
                if (row["kind"] == "points" and not args.scenarios_only)
                or (row["kind"] in SCENARIOS and not args.no_scenarios)]
    for row in rows:
        name, kind = row["set"], row["kind"]
        if only and name not in only and kind not in only:
            continue
        x = np.load(row["file"])
        n, dim, r = len(x), x.shape[1], float(row["radius"])
        start = time.perf_counter()
        if kind == "points":
            ops = set_ops(name, x, r, args.queries, budget)
            runs_budget = budget
        else:
            runs_budget = budget / 4  # a quarter of a set's, as bench_corpus: many rows, small N
            ops = scenario_ops(row, x, r, runs_budget)

        def emit(op, peer, ts, count, chk):
            print("%s,%s,%d,%d,%.17g,%s,%s,%.4f,%.4f,%d,%d,%016x"
                  % (name, kind, dim, n, r, op, peer, median(ts) / 1e6, ts[0] / 1e6, len(ts),
                     count, chk))

        def check(op, same, what):
            nonlocal mismatches
            if not same:
                mismatches += 1
                print("bench_corpus.py: MISMATCH %s %s %s: %s" % (kind, name, op, what),
                      file=sys.stderr)

        for op, how, fa, fb in ops:
            ta, tb, ra, rb = alternate(fa, fb, args.runs, runs_budget)
            if how == "pairs":
                ca, cb = len(ra), len(rb)
                sa, sb = checksum(ra), checksum(rb)
            elif how == "count":
                ca, cb, sa, sb = int(ra), int(rb), 0, 0
            elif how == "lengths":
                ca, cb = int(ra.sum()), int(rb.sum())
                w = np.arange(len(ra), dtype=np.int64)
                sa, sb = int((ra * w).sum()), int((rb * w).sum())
            elif how == "counts":  # count_neighbors at several radii: every count equal
                ca, cb = int(np.sum(ra)), int(np.sum(rb))
                sa = sb = 0
                check(op, np.array_equal(np.asarray(ra), np.asarray(rb)),
                      "counts %s, cKDTree %s" % (list(ra), list(rb)))
            else:
                same = np.allclose(ra[0], rb[0], rtol=1e-12, atol=0)
                check(op, same, "kNN distances differ")
                ca = cb = int(np.isfinite(ra[0]).sum())
                sa = sb = 0
            check(op, ca == cb and sa == sb, "nearby %d/%x, cKDTree %d/%x" % (ca, sa, cb, sb))
            emit(op, "nearby_py", ta, ca, sa & (2**64 - 1))
            emit(op, "ckdtree", tb, cb, sb & (2**64 - 1))
            sys.stdout.flush()
        print("bench_corpus.py: %-8s %-13s %7d points: %.1f s"
              % (kind, name, n, time.perf_counter() - start), file=sys.stderr)
    print("mismatches,%d" % mismatches)
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
