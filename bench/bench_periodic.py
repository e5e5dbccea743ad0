#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A periodic box: nearby's dense grid (nbGridDesc.period) against scipy's cKDTree(boxsize=...).

    bench_periodic.py BUILD_DIR [--n N] [--dim 2|3] [--radius R] [--runs RUNS] [--out CSV]

N uniform points (numpy's default_rng, seed 20261201) at density 1 in the box [0, L)^dim with
L = N^(1/dim); every pair within R by the minimum image. Each frame is a build plus all pairs:
  nearby:  BUILD_DIR/bench/bench_periodic (nb_grid_build + nb_grid_pairs into a buffer),
  cKDTree: cKDTree(points, boxsize=[L]*dim) + query_pairs(R, output_type='ndarray'),
           leafsize 16, balanced_tree=False, compact_nodes=False, copy_data=False (as
           bench_ckdtree.py), single-threaded.
Then both pair lists are sorted by (i, j) and compared pair for pair: the script exits 1 on any
difference (printing the counts and the first pairs that differ). Prints one CSV line per
(peer, operation) in bench_common.h's columns, the agreement, and the ratio of median times.
Run with Debian's /usr/bin/python3 (python3-scipy); bench/run.sh --periodic calls it.
"""
import argparse
import os
import platform
import subprocess
import sys
import time

import numpy as np
import scipy
from scipy.spatial import cKDTree

SEED = 20261201


def make_points(n, dim, box):
    rng = np.random.default_rng(SEED)
    pts = rng.uniform(0.0, box, size=(n, dim))
    # uniform() may round up to the box's edge: the box is half-open, [0, L)
    pts[pts >= box] = 0.0
    return np.ascontiguousarray(pts, dtype=np.float64)


def sorted_pairs(p):
    p = np.asarray(p, dtype=np.int64).reshape(-1, 2)
    order = np.lexsort((p[:, 1], p[:, 0]))
    return p[order]


def stats(samples):
    s = sorted(samples)
    return s[0], s[(len(s) - 1) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--dim", type=int, default=2, choices=(2, 3))
    ap.add_argument("--radius", type=float, default=1.75)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", help="also append the CSV lines to this file")
    a = ap.parse_args()

    box = float(a.n) ** (1.0 / a.dim)
    data_dir = os.path.join(a.build, "data")
    os.makedirs(data_dir, exist_ok=True)
    data = os.path.join(data_dir, "periodic%dd-%d.f64" % (a.dim, a.n))
    pts = make_points(a.n, a.dim, box)
    pts.tofile(data)
    pairs_file = os.path.join(data_dir, "periodic%dd-%d.pairs" % (a.dim, a.n))
    runner = os.path.join(a.build, "bench", "bench_periodic")
    period = ",".join(repr(box) for _ in range(a.dim))
    res = subprocess.run([runner, data, str(a.dim), repr(a.radius), period, str(a.runs),
                          pairs_file], stdout=subprocess.PIPE, universal_newlines=True)
    if res.returncode != 0:
        sys.stderr.write("bench_periodic.py: %s failed (%d)\n" % (runner, res.returncode))
        return 1
    lines = [l for l in res.stdout.splitlines() if l.strip()]
    nearby_ms = {}
    for l in lines:
        f = l.split(",")
        nearby_ms[f[2]] = (int(f[5]) / 1e6, int(f[6]) / 1e6)
    ours = sorted_pairs(np.fromfile(pairs_file, dtype=np.int32))

    leafsize = int(os.environ.get("NBB_CKDTREE_LEAFSIZE", "16"))
    samples, build_s, theirs = [], [], None
    for _ in range(a.runs):
        t0 = time.perf_counter()
        tree = cKDTree(pts, leafsize=leafsize, balanced_tree=False, compact_nodes=False,
                       copy_data=False, boxsize=[box] * a.dim)
        t1 = time.perf_counter()
        theirs = tree.query_pairs(a.radius, output_type="ndarray")
        t2 = time.perf_counter()
        samples.append(t2 - t0)
        build_s.append(t1 - t0)
        del tree
    theirs = sorted_pairs(theirs)
    flags = "scipy %s numpy %s python %s" % (scipy.__version__, np.__version__,
                                              platform.python_version())
    ck = []
    for op, s in (("build_pairs", samples), ("build", build_s)):
        mn, md = stats(s)
        ck.append("ckdtree,periodic,%s,%d,%d,%d,%d,,0,,%d,,python,%s" %
                  (op, a.n, a.runs, int(mn * 1e9), int(md * 1e9), len(theirs), flags))
    out = lines + ck
    for l in out:
        print(l)
    if a.out:
        with open(a.out, "a") as f:
            f.write("\n".join(out) + "\n")

    same = ours.shape == theirs.shape and bool(np.array_equal(ours, theirs))
    print("periodic: %dD, %d points, box %.6g, r = %g: nearby %d pairs, cKDTree %d pairs: %s" %
          (a.dim, a.n, box, a.radius, len(ours), len(theirs),
           "identical, pair for pair" if same else "MISMATCH"))
    if not same:
        a_set = set(map(tuple, ours.tolist()))
        b_set = set(map(tuple, theirs.tolist()))
        only_ours = sorted(a_set - b_set)[:5]
        only_theirs = sorted(b_set - a_set)[:5]
        for i, j in only_ours + only_theirs:
            pi, pj = pts[i], pts[j]
            d = np.abs(pi - pj)
            d = np.minimum(d, box - d)
            print("  (%d, %d): only in %s; min-image d2 = %.17g, r2 = %.17g" %
                  (i, j, "nearby" if (i, j) in a_set else "cKDTree", float(np.sum(d * d)),
                   a.radius * a.radius))
        return 1
    ck_md = stats(samples)[1] * 1e3
    nb_md = nearby_ms["build_pairs"][1]
    print("periodic: build + pairs, median of %d: nearby %.1f ms (build %.1f, pairs %.1f), "
          "cKDTree %.1f ms (build %.1f): %.1fx" %
          (a.runs, nb_md, nearby_ms["build"][1], nearby_ms["pairs"][1], ck_md,
           stats(build_s)[1] * 1e3, ck_md / nb_md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
