#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Whole processes on files, as a user with a shell runs them: `nearby knn --k 8` (the kNN
graph), `within --queries` and `join`, against a numpy + cKDTree script that does the same and
writes the same CSV (bench/cli_files_ckdtree.py), and the same `nearby` rows written as .npy.

  bench_cli_files.py NEARBY [--n 44691] [--queries 2000] [--stores 100000] [--rounds 5]
  bench_cli_files.py NEARBY --million [--rounds 3]

The data stand in for a file of world cities: N points uniform on a sphere of radius 6371 (3D
coordinates, km), QUERIES stations and STORES shops uniform on the same sphere (fixed seeds),
written as .f64 to a temporary directory. Radii: 50 km for the stations, 5 km for the stores.
With --million: 1M points and 1M queries uniform in a cube of side 100 (density 1), `within
--queries --radius 1` and `knn --queries --k 8`, instead.
Every command of a case runs once per round, alternating; the CSV files of nearby and cKDTree
must hold the same rows (distances compared as numbers: numpy's "%.17g" and ours can differ
in the last digit only where they print the same double). Prints the medians (wall seconds).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def sphere(n, seed):
    v = np.random.default_rng(seed).normal(size=(n, 3))
    return 6371.0 * v / np.linalg.norm(v, axis=1)[:, None]


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def same_rows(a, b):
    x = np.loadtxt(a, delimiter=",", ndmin=2)
    y = np.loadtxt(b, delimiter=",", ndmin=2)
    return x.shape == y.shape and np.array_equal(x, y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("nearby")
    ap.add_argument("--n", type=int, default=44691)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--stores", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--million", action="store_true")
    a = ap.parse_args()
    peer = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "cli_files_ckdtree.py")]
    with tempfile.TemporaryDirectory() as tmp:
        f = lambda name: os.path.join(tmp, name)
        sphere(a.n, 1).tofile(f("cities.f64"))
        sphere(a.queries, 2).tofile(f("stations.f64"))
        sphere(a.stores, 3).tofile(f("stores.f64"))
        def case(args, peer_args, stem):
            """nearby ARGS -o STEM.csv / STEM.npy, and the peer writing STEM_peer.csv."""
            return {"nearby csv": [a.nearby] + args + ["-o", f(stem + ".csv")],
                    "nearby npy": [a.nearby] + args + ["-o", f(stem + ".npy")],
                    "ckdtree csv": peer + peer_args + [f(stem + "_peer.csv")]}

        cities, stations, stores = f("cities.f64"), f("stations.f64"), f("stores.f64")
        cases = {
            "knn --k 8 (graph)": case(["knn", cities, "--dim", "3", "--k", "8"],
                                      ["graph", cities, "3", "8"], "g"),
            "within --queries (r 50)": case(
                ["within", cities, "--dim", "3", "--radius", "50", "--queries", stations],
                ["within", cities, stations, "3", "50"], "w"),
            "join stores cities (r 5)": case(
                ["join", stores, cities, "--dim", "3", "--radius", "5"],
                ["join", stores, cities, "3", "5"], "j"),
        }
        if a.million:
            rng = np.random.default_rng(4)
            (100.0 * rng.random((1000000, 3))).tofile(f("points.f64"))
            (100.0 * rng.random((1000000, 3))).tofile(f("queries.f64"))
            points, queries = f("points.f64"), f("queries.f64")
            cases = {
                "within --queries 1M (r 1)": case(
                    ["within", points, "--dim", "3", "--radius", "1", "--queries", queries],
                    ["within", points, queries, "3", "1"], "w"),
                "knn --queries 1M (k 8)": case(
                    ["knn", points, "--dim", "3", "--k", "8", "--queries", queries],
                    ["knn", points, queries, "3", "8"], "k"),
            }
            print("1M points and 1M queries uniform in a cube of side 100; %d rounds; medians "
                  "of wall seconds" % a.rounds)
        else:
            print("%d cities, %d stations, %d stores on a sphere of radius 6371; %d rounds; "
                  "medians of wall seconds" % (a.n, a.queries, a.stores, a.rounds))
        print("%-26s %12s %12s %12s %9s %9s %8s" % ("case", "nearby csv", "nearby npy",
                                                     "ckdtree csv", "x ckdtree", "csv/npy",
                                                     "rows"))
        ok = True
        for name, cmds in cases.items():
            times = {k: [] for k in cmds}
            for _ in range(a.rounds):
                for k, cmd in cmds.items():
                    times[k].append(timed(cmd))
            outs = [c[-1] for c in cmds.values()]
            rows = sum(1 for _ in open(outs[0]))
            if not same_rows(outs[0], outs[2]):
                print("MISMATCH in %s: nearby and cKDTree wrote different rows" % name)
                ok = False
            med = {k: statistics.median(v) for k, v in times.items()}
            print("%-26s %12.3f %12.3f %12.3f %9.1f %9.1f %8d" % (
                name, med["nearby csv"], med["nearby npy"], med["ckdtree csv"],
                med["ckdtree csv"] / med["nearby csv"], med["nearby csv"] / med["nearby npy"],
                rows))
        return 0 if ok else 1


sys.exit(main())
