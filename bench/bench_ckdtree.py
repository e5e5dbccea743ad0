#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""scipy cKDTree peer (Debian's python3-scipy; run with /usr/bin/python3).

    bench_ckdtree.py DATA.f64 DIM RADIUS pairs|count RUNS DATASET_NAME

Each frame builds cKDTree(points) and then either
  pairs: tree.query_pairs(r, output_type='ndarray')  -- all pairs i < j with distance <= r,
         or, with NBB_CKDTREE_OUTPUT=set, tree.query_pairs(r): the default call, which returns a
         Python set of tuples (reported as peer "ckdtree_set", for reference: the ndarray form
         is the fast one the targets are measured against),
  count: tree.count_neighbors(tree, r)               -- a dual-tree count that never lists the
         pairs; it counts ordered pairs (i, j) with distance <= r, self-pairs included, so the
         unordered pair count is (c - N) / 2. Far faster than len(query_pairs(...)), which on
         the cluster set would also need gigabytes for the list.
Tree settings: leafsize 16, balanced_tree=False, compact_nodes=False, copy_data=False (the
fastest build+query on these sets; balanced/compact trees cost more to build than they save;
override with NBB_CKDTREE_LEAFSIZE / NBB_CKDTREE_BALANCED=1 / NBB_CKDTREE_COMPACT=1).
Single-threaded: query_pairs and count_neighbors have no workers; run.sh also sets
OMP/OPENBLAS_NUM_THREADS=1. Prints the same CSV lines as the C runners (bench_common.h).
Bytes held: glibc mallinfo2 (via ctypes) before and after the build, the tree's C++ nodes
and numpy index array included; the points themselves are not copied.
"""
import ctypes
import gc
import os
import platform
import sys
import time

import numpy as np
import scipy
from scipy.spatial import cKDTree


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _heap_fn():
    try:
        libc = ctypes.CDLL("libc.so.6")
        fn = libc.mallinfo2
        fn.restype = _Mallinfo2
        return fn
    except (OSError, AttributeError):
        return None


_MALLINFO2 = _heap_fn()


def heap_bytes():
    if _MALLINFO2 is None:
        return 0
    mi = _MALLINFO2()
    return mi.uordblks + mi.hblkhd


def pair_checksum(pairs):
    """Mirror of nbb_pair_hash in bench_common.h, summed mod 2^64."""
    if len(pairs) == 0:
        return 0
    a = pairs[:, 0].astype(np.uint64)
    b = pairs[:, 1].astype(np.uint64)
    lo = np.minimum(a, b)
    hi = np.maximum(a, b)
    with np.errstate(over="ignore"):
        x = (lo << np.uint64(32)) | hi
        x ^= x >> np.uint64(33)
        x *= np.uint64(0xff51afd7ed558ccd)
        x ^= x >> np.uint64(33)
        x *= np.uint64(0xc4ceb9fe1a85ec53)
        x ^= x >> np.uint64(33)
        return int(x.sum(dtype=np.uint64))


def main(argv):
    if len(argv) != 7:
        sys.stderr.write(__doc__)
        return 2
    path, dim, radius, mode, runs, dataset = argv[1:]
    dim, radius, runs = int(dim), float(radius), int(runs)
    count_only = mode == "count"
    as_set = os.environ.get("NBB_CKDTREE_OUTPUT", "ndarray") == "set"
    peer = "ckdtree_set" if as_set and not count_only else "ckdtree"
    pts = np.fromfile(path, dtype="<f8").reshape(-1, dim)
    n = len(pts)
    opts = dict(
        leafsize=int(os.environ.get("NBB_CKDTREE_LEAFSIZE", "16")),
        balanced_tree=os.environ.get("NBB_CKDTREE_BALANCED", "0") == "1",
        compact_nodes=os.environ.get("NBB_CKDTREE_COMPACT", "0") == "1",
        copy_data=False,
    )

    def query(tree):
        if count_only:
            c = int(tree.count_neighbors(tree, radius))
            return (c - n) // 2, None
        if as_set:
            pairs = tree.query_pairs(radius)
            return len(pairs), pairs
        pairs = tree.query_pairs(radius, output_type="ndarray")
        return len(pairs), pairs

    # Warm-up frame, which also measures what the tree holds.
    gc.collect()
    heap0 = heap_bytes()
    tree = cKDTree(pts, **opts)
    held = heap_bytes() - heap0
    expect, _ = query(tree)
    del tree, _

    t_build, t_pairs, t_frame = [], [], []
    found, pairs = 0, None
    for _ in range(runs):
        pairs = None
        gc.collect()
        t0 = time.perf_counter_ns()
        tree = cKDTree(pts, **opts)
        t1 = time.perf_counter_ns()
        found, pairs = query(tree)
        t2 = time.perf_counter_ns()
        del tree
        t_build.append(t1 - t0)
        t_pairs.append(t2 - t1)
        t_frame.append(t2 - t0)
    if found != expect:
        sys.stderr.write("bench_ckdtree: pair count changed between runs\n")
    if as_set and pairs is not None:  # outside the timing: the checksum wants an array
        pairs = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    checksum = pair_checksum(pairs) if pairs is not None else 0
    compiler = "cpython %s scipy %s numpy %s" % (platform.python_version(), scipy.__version__,
                                                np.__version__)
    flags = "leafsize=%d balanced_tree=%s compact_nodes=%s" % (
        opts["leafsize"], opts["balanced_tree"], opts["compact_nodes"])
    method = "mallinfo2" if _MALLINFO2 is not None else "none"
    op = "count" if count_only else "pairs"

    def emit(operation, samples, pair_count, csum):
        s = sorted(samples)
        print("%s,%s,%s,%d,%d,%d,%d,%s,%d,%s,%d,%016x,%s,%s" % (
            peer, dataset, operation, n, runs, s[0], s[(len(s) - 1) // 2], "", held, method,
            pair_count, csum, compiler, flags))

    emit("build", t_build, -1, 0)
    emit(op, t_pairs, found, checksum)
    emit("frame", t_frame, found, checksum)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
