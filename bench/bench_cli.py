#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Whole processes, as a user runs them (the CLI's speed and growth targets).

  bench_cli.py NEARBY SMALL.f64 BIG.f64 [--rounds R] [--out CSV]

1. `nearby pairs SMALL.f64 --radius 1.75 --count`, with the default threads and with
   `--threads 1`, against a Python script that loads the same file with numpy and counts
   cKDTree's pairs (`query_pairs(r, output_type='ndarray')`, bench/cli_ckdtree.py); the three
   alternate, R rounds, and must print the same count.
2. Then growth: `nearby pairs FILE --radius 1.75 --count --threads 1` on SMALL and BIG (uniform
   2D, density 1: the same neighbourhood per point), alternating, R rounds: nanoseconds a point.

Wall time is the process's; CPU time is its user + system time (getrusage of the child), which
other jobs on a shared machine disturb less. Prints one CSV line per measurement and a summary of
medians and ratios.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

RADIUS = "1.75"


def run(cmd):
    """(wall seconds, CPU seconds, stdout) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout.strip()


def points(path):
    return os.path.getsize(path) // 16


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("nearby")
    ap.add_argument("small")
    ap.add_argument("big")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    script = [sys.executable, os.path.join(here, "cli_ckdtree.py")]
    cases = {
        "nearby": [a.nearby, "pairs", a.small, "--radius", RADIUS, "--count"],
        "nearby_t1": [a.nearby, "pairs", a.small, "--radius", RADIUS, "--count", "--threads", "1"],
        "numpy_ckdtree": script + [a.small, RADIUS],
        "growth_small": [a.nearby, "pairs", a.small, "--radius", RADIUS, "--count", "--threads", "1"],
        "growth_big": [a.nearby, "pairs", a.big, "--radius", RADIUS, "--count", "--threads", "1"],
    }
    n = {"growth_big": points(a.big)}
    wall = {k: [] for k in cases}
    cpu = {k: [] for k in cases}
    counts = {}
    lines = ["case,n,round,wall_ms,cpu_ms,count"]
    # The comparison first, then the growth, each alternating within itself: a 16M process
    # frees about 600 MB, and on a VM the next process may pay to get fresh memory back.
    order = [k for k in cases if not k.startswith("growth")]
    order = [(r, k) for r in range(a.rounds) for k in order] + [
        (r, k) for r in range(a.rounds) for k in ("growth_small", "growth_big")
    ]
    for r, k in order:
        w, c, out = run(cases[k])
        wall[k].append(w)
        cpu[k].append(c)
        counts.setdefault(k, out)
        if counts[k] != out:
            sys.exit(f"bench_cli: {k}: count {out} in round {r}, {counts[k]} before")
        m = n.get(k, points(a.small))
        lines.append(f"{k},{m},{r},{w * 1e3:.1f},{c * 1e3:.1f},{out}")
    if len({counts["nearby"], counts["nearby_t1"], counts["numpy_ckdtree"]}) != 1:
        sys.exit(f"bench_cli: MISMATCH: {counts}")
    print("\n".join(lines))
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")

    med = {k: statistics.median(v) for k, v in wall.items()}
    cmed = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"\nwhole processes on {a.small}, r = {RADIUS}, medians of {a.rounds} alternating rounds:")
    for k in ("nearby", "nearby_t1", "numpy_ckdtree"):
        print(f"  {k:14s} wall {med[k] * 1e3:8.1f} ms   cpu {cmed[k] * 1e3:8.1f} ms")
    for k in ("nearby", "nearby_t1"):
        print(f"  numpy_ckdtree / {k}: {med['numpy_ckdtree'] / med[k]:.1f}x by wall time")
    ns = {}
    for k in ("growth_small", "growth_big"):
        m = n.get(k, points(a.small))
        ns[k] = (med[k] / m * 1e9, cmed[k] / m * 1e9)
        print(f"  {k:14s} {m:>9d} points: {ns[k][0]:6.1f} ns a point wall, {ns[k][1]:6.1f} cpu")
    print(f"  growth big / small: {ns['growth_big'][0] / ns['growth_small'][0]:.2f}x wall, "
          f"{ns['growth_big'][1] / ns['growth_small'][1]:.2f}x cpu")


if __name__ == "__main__":
    main()
