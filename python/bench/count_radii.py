#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""count_neighbors at many radii: nearby.cKDTree against scipy's cKDTree, the tree built in
each timed run (t = T(x); t.count_neighbors(t, radii)).

    PYTHONPATH=build/py:python/tests /usr/bin/python3 python/bench/count_radii.py [--runs 7]
        [--only TEXT]

Sets: 4000 uniform 3D points in the unit cube with radii 0.05 .. sqrt(3) (out to every pair),
and the corpus's uniform3d and powerlaw3d (clustered) at 4000 and 10000 points with radii from
a tenth of the ~10-neighbour radius out to the sets' extent; 1, 8, 20 and 100 radii each
(linearly spaced). Runs alternate (nearby, scipy, nearby, ...) in one process so that both see
the same load; prints the medians of wall time and of CPU time (time.process_time, less
disturbed by other processes on a shared machine) and the ratios scipy / nearby. The answers are
checked to agree.
"""
import argparse
import os
import sys
import time

import numpy as np
from scipy.spatial import cKDTree as SciTree

import nearby

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import corpus  # noqa: E402


def sets():
    g = np.random.default_rng(20261207)
    yield "cube4000", g.random((4000, 3)), 0.05, np.sqrt(3.0)
    for name in ("uniform3d", "powerlaw3d"):
        for n in (4000, 10000):
            x = corpus.make(name, n)
            sample = x[np.random.default_rng(1).choice(n, 1500, replace=False)]
            r10 = corpus.radius(sample) * (1500.0 / n) ** (1.0 / 3.0)
            span = float(np.linalg.norm(x.max(axis=0) - x.min(axis=0)))
            yield "%s-%d" % (name, n), x, 0.1 * r10, span


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--only", default="", help="sets whose label holds this text")
    args = ap.parse_args()
    print("| set | radii | nearby ms (wall / cpu) | cKDTree ms (wall / cpu) | ratio wall | "
          "ratio cpu |")
    print("|---|---|---|---|---|---|")
    for label, x, lo, hi in sets():
        if args.only not in label:
            continue
        for count in (1, 8, 20, 100):
            radii = np.linspace(lo, hi, count) if count > 1 else np.array([lo * 10.0])
            times = {"nearby": ([], []), "scipy": ([], [])}
            answers = {}
            for _ in range(args.runs):
                for peer, T in (("nearby", nearby.cKDTree), ("scipy", SciTree)):
                    out, wall, cpu = timed(lambda: (lambda t: t.count_neighbors(t, radii))(T(x)))
                    answers[peer] = out
                    times[peer][0].append(wall)
                    times[peer][1].append(cpu)
            if not np.array_equal(answers["nearby"], answers["scipy"]):
                print("MISMATCH", label, count, file=sys.stderr)
                return 1
            med = {k: (1e3 * np.median(v[0]), 1e3 * np.median(v[1])) for k, v in times.items()}
            print("| %s | %d | %.1f / %.1f | %.1f / %.1f | %.2f | %.2f |" % (
                label, count, med["nearby"][0], med["nearby"][1], med["scipy"][0],
                med["scipy"][1], med["scipy"][0] / med["nearby"][0],
                med["scipy"][1] / med["nearby"][1]))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
