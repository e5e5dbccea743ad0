#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# What a numpy user writes today for the questions `nearby` answers on real files, writing the
# same CSV rows the tool writes (bench/bench_cli_files.py times the whole process):
#   cli_files_ckdtree.py graph POINTS.f64 DIM K OUT.csv          "i,j,distance": the K nearest
#                                                                 of every point, among the others
#   cli_files_ckdtree.py within POINTS.f64 QUERIES.f64 DIM R OUT.csv   "q,i" sorted
#   cli_files_ckdtree.py join A.f64 B.f64 DIM R OUT.csv          "a,b" sorted
#   cli_files_ckdtree.py knn POINTS.f64 QUERIES.f64 DIM K OUT.csv "q,i,distance", nearest first
# One worker (scipy's default), as `nearby` runs these commands.
import sys

import numpy as np
from scipy.spatial import cKDTree


def load(path, dim):
    return np.fromfile(path, dtype=np.float64).reshape(-1, dim)


def ball_rows(tree, queries, r, out):
    hits = tree.query_ball_point(queries, r, return_sorted=True)
    lens = np.fromiter((len(h) for h in hits), dtype=np.int64, count=len(hits))
    q = np.repeat(np.arange(len(hits)), lens)
    i = np.concatenate([np.asarray(h, dtype=np.int64) for h in hits]) if lens.sum() else q
    np.savetxt(out, np.column_stack([q, i]), fmt="%d,%d")


def main():
    mode = sys.argv[1]
    if mode == "graph":
        p = load(sys.argv[2], int(sys.argv[3]))
        k = int(sys.argv[4])
        d, j = cKDTree(p).query(p, k=k + 1)
        keep = j != np.arange(len(p))[:, None]  # drop the point itself
        keep[keep.sum(axis=1) > k, -1] = False  # (if it was not among them, the last goes)
        rows = np.column_stack([np.repeat(np.arange(len(p)), k), j[keep], d[keep]])
        np.savetxt(sys.argv[5], rows, fmt="%d,%d,%.17g")
    elif mode == "within":
        dim = int(sys.argv[4])
        ball_rows(cKDTree(load(sys.argv[2], dim)), load(sys.argv[3], dim), float(sys.argv[5]),
                  sys.argv[6])
    elif mode == "join":
        dim = int(sys.argv[4])
        ball_rows(cKDTree(load(sys.argv[3], dim)), load(sys.argv[2], dim), float(sys.argv[5]),
                  sys.argv[6])
    elif mode == "knn":
        dim, k = int(sys.argv[4]), int(sys.argv[5])
        q = load(sys.argv[3], dim)
        d, j = cKDTree(load(sys.argv[2], dim)).query(q, k=k)
        rows = np.column_stack([np.repeat(np.arange(len(q)), k), j.ravel(), d.ravel()])
        np.savetxt(sys.argv[6], rows, fmt="%d,%d,%.17g")
    else:
        sys.exit("unknown mode " + mode)


main()
