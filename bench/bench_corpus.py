#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The corpus benchmark, Python side: nearby's package against scipy's cKDTree on every point
set of the corpus, in one process.

    bench_corpus.py LIST.csv [--runs K] [--queries Q] [--budget S] [--only SET,...]

LIST.csv is what `gen_data --corpus DIR N NRECTS` writes (set,kind,dim,n,radius,file); the
rectangle sets in it are skipped (the C side runs them). Every operation includes building the
structure, as a user's one-liner does, with each library's defaults; r is the set's radius and
the queries are the set's first Q points:

  pairs    nearby.Grid(x).query_pairs(r, output_type='ndarray')
           cKDTree(x).query_pairs(r, output_type='ndarray')
  count    nearby.Grid(x).count_pairs(r)
           (t.count_neighbors(t, r) - N) // 2 with t = cKDTree(x)
  radius   Grid(x).query_ball_point(q, r, return_length=True), and cKDTree's
  knnK     Grid(x).query(q, k=K) and cKDTree(x).query(q, k=K), K = 1, 8, 32

The runs alternate (nearby, cKDTree, nearby, ...) and stop early once an operation has taken S
seconds (default 4); where nearby's queries are so slow that all Q would take more than S / 4
(a cliff), both peers run as many as fit (stderr says so). Answers are checked: the same pairs (count and checksum), counts, lengths,
and kNN distances (to 1e-12, relative). Prints CSV rows in bench_corpus.cpp's format on stdout
(peers nearby_py and ckdtree) and `mismatches,K` last; exit status 1 on a mismatch.
"""
import argparse
import csv
import sys
import time

import numpy as np
from scipy.spatial import cKDTree

import nearby
from bench_python import checksum, median, timed


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


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("list")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--queries", type=int, default=20000)
    ap.add_argument("--budget", type=float, default=4.0)
    ap.add_argument("--only", default="")
    args = ap.parse_args(argv[1:])
    only = set(filter(None, args.only.split(",")))
    budget = args.budget * 1e9
    mismatches = 0
    print("set,kind,dim,n,radius,operation,peer,median_ms,min_ms,runs,count,checksum")
    with open(args.list) as f:
        sets = [row for row in csv.DictReader(f) if row["kind"] == "points"]
    for row in sets:
        name = row["set"]
        if only and name not in only:
            continue
        x = np.load(row["file"])
        n, dim, r = len(x), x.shape[1], float(row["radius"])
        q = x[: min(args.queries, n)]
        start = time.perf_counter()

        def emit(op, peer, ts, count, chk):
            print("%s,points,%d,%d,%.17g,%s,%s,%.4f,%.4f,%d,%d,%016x"
                  % (name, dim, n, r, op, peer, median(ts) / 1e6, ts[0] / 1e6, len(ts), count,
                     chk))

        def check(op, same, what):
            nonlocal mismatches
            if not same:
                mismatches += 1
                print("bench_corpus.py: MISMATCH %s %s: %s" % (name, op, what), file=sys.stderr)

        def count_ckdtree():
            t = cKDTree(x)
            return (int(t.count_neighbors(t, r)) - n) // 2

        def fit(op, nearby_fn):
            """The queries for op: all of q, unless a probe of nearby (build included) on 1
            and on 200 of them (the faster of two each) says all would take more than a quarter of the budget (a
            cliff): then as many as fit, for both peers."""
            t1 = min(timed(lambda: nearby_fn(q[:1]))[0] for _ in range(2))
            t200 = min(timed(lambda: nearby_fn(q[:200]))[0] for _ in range(2))
            per = max(t200 - t1, 1) / 199.0
            m = len(q) if t1 + per * len(q) <= budget / 4 else max(200, int(budget / 4 / per))
            if m < len(q):
                print("bench_corpus.py: %s %s: %d of %d queries (%.0f us a query)"
                      % (name, op, m, len(q), per / 1e3), file=sys.stderr)
            return q[:m]

        def radius_nearby(qs):
            return nearby.Grid(x).query_ball_point(qs, r, return_length=True)

        def knn_nearby(qs, k):
            return nearby.Grid(x).query(qs, k=k)

        ops = [
            ("pairs", lambda: nearby.Grid(x).query_pairs(r, output_type="ndarray"),
             lambda: cKDTree(x).query_pairs(r, output_type="ndarray")),
            ("count", lambda: nearby.Grid(x).count_pairs(r), count_ckdtree),
        ]
        qr = fit("radius", radius_nearby)
        ops.append(("radius", lambda: radius_nearby(qr),
                    lambda: cKDTree(x).query_ball_point(qr, r, return_length=True)))
        for k in (1, 8, 32):
            qk = fit("knn%d" % k, lambda qs, k=k: knn_nearby(qs, k))
            ops.append(("knn%d" % k, lambda k=k, qk=qk: knn_nearby(qk, k),
                        lambda k=k, qk=qk: cKDTree(x).query(qk, k=k)))
        for op, fa, fb in ops:
            ta, tb, ra, rb = alternate(fa, fb, args.runs, budget)
            if op == "pairs":
                ca, cb = len(ra), len(rb)
                sa, sb = checksum(ra), checksum(rb)
            elif op == "count":
                ca, cb, sa, sb = int(ra), int(rb), 0, 0
            elif op == "radius":
                ca, cb = int(ra.sum()), int(rb.sum())
                w = np.arange(len(ra), dtype=np.int64)
                sa, sb = int((ra * w).sum()), int((rb * w).sum())
            else:
                same = np.allclose(ra[0], rb[0], rtol=1e-12, atol=0)
                check(op, same, "kNN distances differ")
                ca = cb = int(np.isfinite(ra[0]).sum())
                sa = sb = 0
            check(op, ca == cb and sa == sb, "nearby %d/%x, cKDTree %d/%x" % (ca, sa, cb, sb))
            emit(op, "nearby_py", ta, ca, sa & (2**64 - 1))
            emit(op, "ckdtree", tb, cb, sb & (2**64 - 1))
            sys.stdout.flush()
        print("bench_corpus.py: %-13s %7d points: %.1f s" % (name, n, time.perf_counter() - start),
              file=sys.stderr)
    print("mismatches,%d" % mismatches)
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
