#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The same rows written as CSV and as .npy (`-o out.csv` against `-o out.npy`), whole processes,
on outputs of millions of rows: `pairs`, `within --queries`, `join`, `knn --queries` and the kNN
graph on 1M points uniform in a cube of side 100 (3D, density 1; 1M queries for within, join
and knn). Every command runs once per round, CSV and .npy alternating; the two files of a case
must hold the same rows (the CSV parsed back as numbers: its distances are the shortest
round-trip decimals, so they must equal the .npy's doubles exactly). Where the command has
--count (pairs, join), the run with --count (the same search, nothing written) gives the cost of
writing alone: (CSV - count) / (npy - count). Prints medians of wall seconds.

  bench_cli_output.py NEARBY [--rounds 3] [--threads N]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def csv_rows(path, columns):
    with open(path, "rb") as f:
        text = f.read()
    values = np.array(text.replace(b"\n", b",").split(b",")[:-1], dtype=np.float64)
    return values.reshape(-1, columns)


def same(csv_path, npy_path):
    a = np.load(npy_path)
    if a.dtype.names:  # a structured array: indices and a distance
        cols = np.column_stack([a[n].astype(np.float64) for n in a.dtype.names])
    else:
        cols = a.reshape(len(a), -1).astype(np.float64)
    b = csv_rows(csv_path, cols.shape[1])
    return cols.shape == b.shape and np.array_equal(cols, b), len(a)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("nearby")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        f = lambda name: os.path.join(tmp, name)
        rng = np.random.default_rng(4)
        (100.0 * rng.random((1000000, 3))).tofile(f("points.f64"))
        (100.0 * rng.random((1000000, 3))).tofile(f("queries.f64"))
        p, q = f("points.f64"), f("queries.f64")
        threads = ["--threads", str(a.threads)] if a.threads > 0 else []
        cases = {
            "pairs --radius 2": (["pairs", p, "--dim", "3", "--radius", "2"], True),
            "within --queries --radius 1": (
                ["within", p, "--dim", "3", "--radius", "1", "--queries", q], False),
            "join --radius 1": (["join", q, p, "--dim", "3", "--radius", "1"], True),
            "knn --queries --k 8": (["knn", p, "--dim", "3", "--k", "8", "--queries", q], False),
            "knn --k 8 (graph)": (["knn", p, "--dim", "3", "--k", "8"], False),
        }
        print("1M points (and 1M queries) uniform in a cube of side 100, 3D; %d rounds; medians "
              "of wall seconds; load %.1f at the start" % (a.rounds, os.getloadavg()[0]))
        print("%-28s %9s %9s %9s %9s %9s %9s" % ("case", "rows", "csv", "npy", "count",
                                               "csv/npy", "writing"))
        ok = True
        for name, (args, has_count) in cases.items():
            cmds = {"csv": [a.nearby] + args + threads + ["-o", f("out.csv")],
                    "npy": [a.nearby] + args + threads + ["-o", f("out.npy")]}
            if has_count:
                cmds["count"] = [a.nearby] + args + threads + ["--count"]
            times = {k: [] for k in cmds}
            for _ in range(a.rounds):
                for k, cmd in cmds.items():
                    times[k].append(timed(cmd))
            equal, rows = same(f("out.csv"), f("out.npy"))
            if not equal:
                print("MISMATCH in %s: the .csv and the .npy hold different rows" % name)
                ok = False
            med = {k: statistics.median(v) for k, v in times.items()}
            writing = ""
            if has_count and med["npy"] > med["count"]:
                writing = "%.1f" % ((med["csv"] - med["count"]) / (med["npy"] - med["count"]))
            print("%-28s %9d %9.3f %9.3f %9s %9.2f %9s" % (
                name, rows, med["csv"], med["npy"],
                "%.3f" % med["count"] if has_count else "-", med["csv"] / med["npy"], writing))
        return 0 if ok else 1


sys.exit(main())
