#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Clustered points in a periodic box: nearby.cKDTree(boxsize=1) against scipy's cKDTree.

    bench_periodic_clump.py LIB_DIR [--shape clump|clump0|uniform] [--n N] [--dim 2|3]
                            [--k K] [--runs RUNS]

LIB_DIR holds the built Python package (python/README.md; e.g.
`(cd python && /usr/bin/python3 setup.py -q build --build-lib LIB_DIR --build-temp TMP)`).
N points (numpy's default_rng, seed 20261206) in the unit periodic box, dim 2 or 3:
  clump:   one Gaussian clump, sigma = 0.01, centred at 0.5 on every axis;
  clump0:  the same clump centred at 0 (split across the faces of the box);
  uniform: uniform over the box.
Coordinates are wrapped into [0, 1). r is the median distance to the 10th nearest other point
(about 10 neighbours a point). Each side builds its tree and answers, every run (build
included): the k nearest of every point (query(x, k)) and all pairs within r
(query_pairs(r, output_type='ndarray')), and the k nearest of 20k points uniform over the
box ("anywhere": mostly far from a clump). Runs alternate between the two; the medians are
printed with the ratio. The answers are compared (kNN distances and indices, pairs as sorted
lists): the script exits 1 on any difference. Run with Debian's /usr/bin/python3 (scipy 1.10).
"""
import argparse
import sys
import time

import numpy as np
from scipy.spatial import cKDTree as ScipyTree

SEED = 20261206


def make_points(shape, n, dim):
    rng = np.random.default_rng(SEED)
    if shape == "uniform":
        pts = rng.uniform(0.0, 1.0, size=(n, dim))
    else:
        centre = 0.5 if shape == "clump" else 0.0
        pts = rng.normal(centre, 0.01, size=(n, dim))
    pts = pts - np.floor(pts)
    pts[pts >= 1.0] = 0.0
    return np.ascontiguousarray(pts, dtype=np.float64)


def sorted_pairs(p):
    p = np.asarray(p, dtype=np.int64).reshape(-1, 2)
    return p[np.lexsort((p[:, 1], p[:, 0]))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lib")
    ap.add_argument("--shape", default="clump", choices=("clump", "clump0", "uniform"))
    ap.add_argument("--n", type=int, default=50000)
    ap.add_argument("--dim", type=int, default=3, choices=(2, 3))
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    sys.path.insert(0, a.lib)
    from nearby import cKDTree as NearbyTree

    pts = make_points(a.shape, a.n, a.dim)
    box = [1.0] * a.dim
    d10, _ = ScipyTree(pts, boxsize=box).query(pts, k=11)
    r = float(np.median(d10[:, 10]))

    def knn(cls):
        return cls(pts, boxsize=box).query(pts, k=a.k)

    def pairs(cls):
        return cls(pts, boxsize=box).query_pairs(r, output_type="ndarray")

    anywhere = np.random.default_rng(SEED + 1).uniform(0.0, 1.0, size=(20000, a.dim))
    anywhere[anywhere >= 1.0] = 0.0

    def far(cls):
        return cls(pts, boxsize=box).query(anywhere, k=a.k)

    bad = False
    for name, op in (("knn k=%d" % a.k, knn), ("pairs", pairs), ("anywhere", far)):
        times = {"nearby": [], "cKDTree": []}
        answer = {}
        for _ in range(a.runs):
            for who, cls in (("nearby", NearbyTree), ("cKDTree", ScipyTree)):
                t0 = time.perf_counter()
                answer[who] = op(cls)
                times[who].append(time.perf_counter() - t0)
        if op is not pairs:
            (dn, inn), (ds, ins) = answer["nearby"], answer["cKDTree"]
            same = np.array_equal(dn, ds) and np.array_equal(inn, ins)
        else:
            same = np.array_equal(sorted_pairs(answer["nearby"]), sorted_pairs(answer["cKDTree"]))
        bad |= not same
        nb, ck = float(np.median(times["nearby"])), float(np.median(times["cKDTree"]))
        print("%s %dD n=%d r=%.4g %-9s nearby %8.1f ms  cKDTree %8.1f ms  %6.2fx  %s" %
              (a.shape, a.dim, a.n, r, name, nb * 1e3, ck * 1e3, ck / nb,
               "same answers" if same else "MISMATCH"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
