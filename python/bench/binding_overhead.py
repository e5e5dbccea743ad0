#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The Python binding's own cost: `nearby.Grid(x).query_pairs(r, output_type='ndarray')` and
`nearby.Grid(x).count_pairs(r)` against the C library doing the same from C (create, build,
nb_grid_pairs into a buffer of the exact size / nb_grid_count_pairs, destroy), on the corpus's
point sets, in one process, runs alternating.

    binding_overhead.py LIST.csv [--runs K] [--only SET,...] [--batches | --steps] [--cpu]
                        [--as-corpus]

LIST.csv is what `gen_data --corpus DIR N 1` writes. The C side is python/bench/binding_ref.c,
compiled here with the library's sources and the extension's flags (-O3, -ffp-contract=off)
into a shared object loaded by ctypes. It runs twice: with the cell size the binding chose
(`same cell`: the binding's overhead alone: checking and scanning the points, sizing its cells,
the GIL, the pairs' (K, 2) intp array and its block) and with the C default, cells of r
(the corpus table's "Python / C"). Both write into a buffer made and touched before the timing.
For pairs a third C run makes the binding's own output: 64-bit pairs (nb_grid_pairs_wide) into
memory allocated inside the timing, as a C caller that hands the pairs on must (`same output`;
it still knows the count beforehand, which the binding does not), and a fourth into a buffer made
and touched beforehand, as a C caller that reuses its buffer (`same output, warm`: the same job
as the binding's, whose block cache keeps its pairs' pages warm). Prints medians and the ratios
Python / C, and the ratio of the fastest runs (the least disturbed by other load on a shared
machine; --cpu times both sides by their thread's CPU time instead, leaving out the waits
for a core). Each op starts with an untimed round of every side. --steps times the C side's steps
alone on one grid (ref_steps): what writing the 32-bit and the 64-bit pairs cost beyond counting.
--lib PATH links the C side against that libnearby.so (the CMake Release build's, as the C
benchmarks run it) instead of compiling the library's sources with the extension's flags.
--as-corpus makes the package's other calls around each set's pairs and counts as the corpus
benchmark does in its one process (bench/bench_corpus.py's set_ops: its probes of the radius and
kNN batches before, the batches themselves after), so that the binding's memory is in the state
the corpus table measures in; the Python call's page faults are printed too.
"""
import argparse
import csv
import ctypes
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

import nearby

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def build_ref(lib_so=None):
    """Compiles binding_ref.c with the library into a shared object; returns the ctypes CDLL.
    With lib_so (a libnearby.so, e.g. the CMake Release build's), binding_ref.c is linked
    against it instead: the C side is then the library as the C benchmarks build it."""
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        cmake = f.read()
    sources = re.search(r"set\(NB_SOURCES([^)]*)\)", cmake).group(1).split()
    gen = os.path.join(ROOT, "python", "build", "generated")
    if not os.path.exists(os.path.join(gen, "nearby", "nb_version.h")):
        raise SystemExit("binding_overhead.py: run `python3 setup.py build_ext --inplace` in "
                         "python/ first (it writes nb_version.h)")
    out = os.path.join(tempfile.gettempdir(), "nearby_binding_ref_%d%s.so"
                       % (os.getuid(), "_lib" if lib_so else ""))
    cmd = [os.environ.get("CC", "cc"), "-std=c11", "-O3", "-g0", "-ffp-contract=off", "-fPIC",
           "-shared", "-DNDEBUG", "-I", os.path.join(ROOT, "include"), "-I", gen, "-o", out,
           os.path.join(HERE, "binding_ref.c")]
    if lib_so:
        lib_so = os.path.abspath(lib_so)
        cmd += [lib_so, "-Wl,-rpath," + os.path.dirname(lib_so)]
    else:
        cmd += [os.path.join(ROOT, s) for s in sources]
    cmd += ["-lm", "-lpthread"]
    subprocess.check_call(cmd)
    lib = ctypes.CDLL(out)
    lib.ref_pairs.restype = ctypes.c_int64
    lib.ref_pairs.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_double,
                              ctypes.c_double, ctypes.c_void_p, ctypes.c_int64,
                              ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_double)]
    lib.ref_pairs_wide.restype = ctypes.c_int64
    lib.ref_pairs_wide.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_double,
                                   ctypes.c_double, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64)]
    lib.ref_pairs_wide_into.restype = ctypes.c_int64
    lib.ref_pairs_wide_into.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                                        ctypes.c_double, ctypes.c_double, ctypes.c_void_p,
                                        ctypes.c_int64, ctypes.POINTER(ctypes.c_int64)]
    lib.ref_radius_counts.restype = ctypes.c_int64
    lib.ref_radius_counts.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                                      ctypes.c_double, ctypes.c_void_p, ctypes.c_int64,
                                      ctypes.c_void_p, ctypes.c_double, ctypes.c_void_p]
    lib.ref_steps.restype = ctypes.c_int
    lib.ref_steps.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_double,
                              ctypes.c_double, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                              ctypes.c_void_p, ctypes.c_void_p]
    lib.ref_knn.restype = ctypes.c_int64
    lib.ref_knn.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_double,
                            ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int32,
                            ctypes.c_void_p, ctypes.c_void_p]
    return lib


def cell_order(q, cell):
    """The queries' indices sorted by the cell of edge `cell` they fall in (row-major), as the
    binding orders a batch: the C reference gets the same locality, computed outside its time."""
    c = np.floor((q - q.min(axis=0)) / cell).astype(np.int64)
    return np.ascontiguousarray(np.lexsort(c.T[::-1]), dtype=np.int64)


def batches(lib, s, x, queries, runs):
    """The batch paths the corpus benchmark times: query_ball_point(q, r, return_length=True) and
    query(q, k) for k = 1, 8, 32, on the set's first `queries` points, against the same calls
    from C (binding_ref.c: create, build with the binding's cell, one nb_grid_query_radius /
    nb_grid_knn a query, destroy) in the given order and in cell order. Prints table rows."""
    n, dim, r = len(x), x.shape[1], float(s["radius"])
    q = np.ascontiguousarray(x[:min(queries, n)])
    m = len(q)
    for op, k in (("radius", 0), ("knn1", 1), ("knn8", 8), ("knn32", 32)):
        g = nearby.Grid(x)
        if k == 0:
            want = g.query_ball_point(q, r, return_length=True)
        else:
            want_d, want_i = g.query(q, k=k)
        cell = g.cell_sizes[-1]
        order = cell_order(q, cell)
        counts = np.empty(m, dtype=np.int64)
        dist = np.empty((m, max(k, 1)))
        index = np.empty((m, max(k, 1)), dtype=np.int64)

        def c_run(ordered):
            o = order.ctypes.data if ordered else None
            if k == 0:
                t = lib.ref_radius_counts(x.ctypes.data, n, dim, cell, q.ctypes.data, m, o, r,
                                          counts.ctypes.data)
                ok = t >= 0 and np.array_equal(counts, want)
            else:
                t = lib.ref_knn(x.ctypes.data, n, dim, cell, q.ctypes.data, m, o, k,
                                dist.ctypes.data, index.ctypes.data)
                ok = t >= 0 and np.array_equal(dist.reshape(want_d.shape), want_d)
            if not ok:
                raise SystemExit("binding_overhead.py: the C side differs on %s %s"
                                 % (s["set"], op))
            return t

        def py_run():
            t0 = now_ns()
            if k == 0:
                nearby.Grid(x).query_ball_point(q, r, return_length=True)
            else:
                nearby.Grid(x).query(q, k=k)
            return now_ns() - t0

        tp, tg, to = [], [], []
        for _ in range(runs):
            tp.append(py_run())
            tg.append(c_run(False))
            to.append(c_run(True))
        mp, mg, mo = median(tp) / 1e6, median(tg) / 1e6, median(to) / 1e6
        print("| %s | %s | %.1f | %.1f | %.2f | %.1f | %.2f | %.2f |"
              % (s["set"], op, mp, mg, mp / mg, mo, mp / mo, min(tp) / min(to)))
        sys.stdout.flush()


def steps(lib, s, x, runs):
    """The C side's steps on one grid (binding_ref.c's ref_steps): create + build, the count,
    the 32-bit pairs into a buffer made beforehand, the 64-bit rows into a block made
    beforehand and into one malloc'd in the step; medians of `runs` runs in ms, the writes as
    the time beyond the count, and the page faults of the last run. Prints a table row."""
    n, dim, r = len(x), x.shape[1], float(s["radius"])
    g = nearby.Grid(x)
    total = g.count_pairs(r)
    cell = g.cell_sizes[0]
    out32 = np.zeros((max(total, 1), 2), dtype=np.int32)
    out64 = np.zeros((max(total, 1), 2), dtype=np.int64)
    t = np.zeros(6, dtype=np.int64)
    f = np.zeros(6, dtype=np.int64)
    ts = []
    for _ in range(runs):
        if lib.ref_steps(x.ctypes.data, n, dim, cell, r, out32.ctypes.data, out64.ctypes.data,
                         total, t.ctypes.data, f.ctypes.data) != 0:
            raise SystemExit("binding_overhead.py: the C side failed on %s" % s["set"])
        ts.append(t.copy())
    m = [median([run[k] for run in ts]) / 1e6 for k in range(6)]
    w32, w64, fresh = m[2] - m[1], m[3] - m[1], m[4] - m[1]
    print("| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %s |"
          % (s["set"], total, m[0], m[1], w32, w64, fresh, w64 / w32 if w32 > 0 else 0.0,
             m[5], "/".join(str(v) for v in f)))
    sys.stdout.flush()


now_ns = time.perf_counter_ns  # --cpu: time.thread_time_ns (and the C side by its thread's CPU)


def median(ts):
    return sorted(ts)[(len(ts) - 1) // 2]


def main(argv):
    global now_ns
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("list")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--only", default="")
    ap.add_argument("--batches", action="store_true",
                    help="time the batch paths (radius counts, kNN) instead of all pairs")
    ap.add_argument("--queries", type=int, default=20000)
    ap.add_argument("--steps", action="store_true",
                    help="time the C side's steps alone (build, count, 32-bit and 64-bit pairs)")
    ap.add_argument("--cpu", action="store_true",
                    help="time by the thread's CPU time instead of the wall clock, both sides "
                    "(on a shared machine: the time the thread waited for a core left out)")
    ap.add_argument("--lib", default=None,
                    help="link the C side against this libnearby.so (e.g. build/libnearby.so)")
    ap.add_argument("--as-corpus", action="store_true",
                    help="before each set, run the corpus benchmark's other calls on it")
    args = ap.parse_args(argv[1:])
    only = set(filter(None, args.only.split(",")))
    lib = build_ref(args.lib)
    lib.ref_set_clock(1 if args.cpu else 0)
    if args.cpu:
        now_ns = time.thread_time_ns
    with open(args.list) as f:
        sets = [row for row in csv.DictReader(f) if row["kind"] == "points"
                and (not only or row["set"] in only)]
    if args.steps:
        print("| set | pairs | build ms | count ms | 32-bit write ms | 64-bit write ms "
              "| 64-bit fresh ms | 64 / 32 | destroy ms | page faults a step |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for s in sets:
            steps(lib, s, np.ascontiguousarray(np.load(s["file"]), dtype=np.float64), args.runs)
        return 0
    if args.batches:
        print("| set | op | Python ms | C given order ms | Python / C | C cell order ms "
              "| Python / C cell order | Python / C cell order, fastest runs |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for s in sets:
            x = np.ascontiguousarray(np.load(s["file"]), dtype=np.float64)
            batches(lib, s, x, args.queries, args.runs)
        return 0
    if args.as_corpus:
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        import bench_corpus
    print("| set | op | Python ms | C same cell ms | Python / C | C cells of r ms | Python / C(r) "
          "| cell / r | Python / C, fastest runs | C same output ms | Python / C same output "
          "| C same output, warm ms | Python / C same output, warm | Python page faults a call |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in sets:
        x = np.ascontiguousarray(np.load(s["file"]), dtype=np.float64)
        n, dim, r = len(x), x.shape[1], float(s["radius"])
        corpus_ops = []
        if args.as_corpus:  # the probes now, the batches after this set's rows
            corpus_ops = bench_corpus.set_ops(s["set"], x, r, 20000, 4e9)[2:]
        g = nearby.Grid(x)
        total = g.count_pairs(r)
        cell = g.cell_sizes[0]
        buf = np.empty((max(total, 1), 2), dtype=np.int32)
        buf64 = np.zeros((max(total, 1), 2), dtype=np.int64)
        found = ctypes.c_int64()
        got_cell = ctypes.c_double()

        def c_run(build_r, pairs):
            t = lib.ref_pairs(x.ctypes.data, n, dim, build_r, r,
                              buf.ctypes.data if pairs else None, len(buf),
                              ctypes.byref(found), ctypes.byref(got_cell))
            if t < 0 or found.value != total:
                raise SystemExit("binding_overhead.py: the C side failed on %s" % s["set"])
            return t

        def c_wide_run():
            t = lib.ref_pairs_wide(x.ctypes.data, n, dim, cell, r, total, ctypes.byref(found))
            if t < 0 or found.value != total:
                raise SystemExit("binding_overhead.py: the C side failed on %s" % s["set"])
            return t

        def c_warm_run():
            t = lib.ref_pairs_wide_into(x.ctypes.data, n, dim, cell, r, buf64.ctypes.data,
                                        len(buf64), ctypes.byref(found))
            if t < 0 or found.value != total:
                raise SystemExit("binding_overhead.py: the C side failed on %s" % s["set"])
            return t

        faults = []

        def py_run(pairs):
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = now_ns()
            if pairs:
                res = nearby.Grid(x).query_pairs(r, output_type="ndarray")
                k = len(res)
            else:
                k = nearby.Grid(x).count_pairs(r)
            t = now_ns() - t0
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
            res = None
            if k != total:
                raise SystemExit("binding_overhead.py: the count differs on %s" % s["set"])
            return t

        for op, pairs in (("pairs", True), ("count", False)):
            # One untimed round first: both sides' first calls fault their blocks in (the
            # binding's block cache, glibc's heap for the C side); the timed runs then compare
            # steady states, where getrusage counts no page faults on either side.
            py_run(pairs), c_run(cell, pairs), c_run(r, pairs)
            if pairs:
                c_wide_run(), c_warm_run()
            tp, tc, tr, tw, tww = [], [], [], [], []
            del faults[:]
            for _ in range(args.runs):
                tp.append(py_run(pairs))
                tc.append(c_run(cell, pairs))
                tr.append(c_run(r, pairs))
                if pairs:
                    tw.append(c_wide_run())
                    tww.append(c_warm_run())
            mp, mc, mr = median(tp) / 1e6, median(tc) / 1e6, median(tr) / 1e6
            mw = median(tw) / 1e6 if pairs else mc
            mww = median(tww) / 1e6 if pairs else mc
            print("| %s | %s | %.1f | %.1f | %.2f | %.1f | %.2f | %.2f | %.2f | %.1f | %.2f | %.1f "
                  "| %.2f | %d |"
                  % (s["set"], op, mp, mc, mp / mc, mr, mp / mr, cell / r, min(tp) / min(tc),
                     mw, mp / mw, mww, mp / mww, median(faults)))
            sys.stdout.flush()
        for _, _, nearby_fn, _ in corpus_ops:
            nearby_fn()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
