#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Per-call cost of small queries: the C extension (nearby._nearby) against cffi bindings of the
same C library, ABI mode (dlopen) and API mode (a compiled cffi module), and cKDTree.

    /usr/bin/python3 python/bench/call_overhead.py [--calls N]

Builds the C library's sources into a temporary shared object (cc -O3) for cffi, and the
cffi API-mode module next to it. Each binding answers the same two questions over 100k uniform
2D points: the indices within r = 1 of one point (a Python list, about 3 points), and the
nearest point (index and distance). The cffi wrappers are written as tightly as cffi allows:
preallocated C buffers, no per-call ffi.new. Prints the minimum over 7 repeats, in ns a call.
Needs python3-cffi (Debian) and a C compiler; the extension must be importable (installed, or
PYTHONPATH=python after `python3 setup.py build_ext --inplace` in python/).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import timeit

import numpy as np
from scipy.spatial import cKDTree

import nearby

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CDEF = """
typedef enum { NB_OK = 0, NB_ERR_BUFFER_TOO_SMALL = 6 } nbStatus;
typedef struct { double cell_size; int32_t dim; int32_t capacity_hint; const void *allocator; }
    nbGridDesc;
typedef struct { const double *data; int32_t count; int32_t dim; size_t stride;
    const uint32_t *category; size_t category_stride; const uint32_t *mask; size_t mask_stride; }
    nbPoints;
typedef struct { int32_t index; double dist2; } nbNeighbor;
typedef struct { uint32_t category; uint32_t mask; } nbFilter;
typedef struct nbGrid nbGrid;
int nb_grid_create(const nbGridDesc *desc, nbGrid **out);
int nb_grid_build(nbGrid *grid, const nbPoints *points, double radius);
int nb_grid_query_radius(const nbGrid *grid, const double *center, double radius,
                         nbFilter filter, int32_t *out, int32_t capacity, int32_t *found);
int nb_grid_knn(const nbGrid *grid, const double *point, nbFilter filter, double max_distance,
                nbNeighbor *out, int32_t k, int32_t *found);
"""


def build_shared(tmp):
    cmake = open(os.path.join(ROOT, "CMakeLists.txt")).read()
    version = re.search(r"project\(nearby VERSION (\d+)\.(\d+)\.(\d+)", cmake).groups()
    sources = re.search(r"set\(NB_SOURCES([^)]*)\)", cmake).group(1).split()
    inc = os.path.join(tmp, "inc", "nearby")
    os.makedirs(inc)
    text = open(os.path.join(ROOT, "include", "nearby", "nb_version.h.in")).read()
    for key, v in zip(("MAJOR", "MINOR", "PATCH"), version):
        text = text.replace("@PROJECT_VERSION_%s@" % key, v)
    open(os.path.join(inc, "nb_version.h"), "w").write(
        text.replace("@PROJECT_VERSION@", ".".join(version)))
    so = os.path.join(tmp, "libnearby_cffi.so")
    subprocess.run(["cc", "-std=c11", "-O3", "-ffp-contract=off", "-fPIC", "-shared",
                    "-DNB_BUILDING", "-I", os.path.join(tmp, "inc"),
                    "-I", os.path.join(ROOT, "include"), "-o", so] +
                   [os.path.join(ROOT, s) for s in sources] + ["-lm"], check=True)
    return so


def binding(ffi, lib, pts, r):
    """A grid over pts through cffi and the two small queries as Python functions."""
    desc = ffi.new("nbGridDesc *")
    desc.dim = 2
    gp = ffi.new("nbGrid **")
    assert lib.nb_grid_create(desc, gp) == 0
    view = ffi.new("nbPoints *")
    keep = np.ascontiguousarray(pts)
    view.data = ffi.cast("const double *", ffi.from_buffer(keep))
    view.count = len(pts)
    view.dim = 2
    assert lib.nb_grid_build(gp[0], view, r) == 0
    grid = gp[0]
    center = ffi.new("double[2]")
    cap = 1024
    out = ffi.new("int32_t[]", cap)
    found = ffi.new("int32_t *")
    nb = ffi.new("nbNeighbor[1]")
    query_radius = lib.nb_grid_query_radius
    knn = lib.nb_grid_knn
    every = ffi.new("nbFilter *", {"category": 0xFFFFFFFF, "mask": 0xFFFFFFFF})[0]
    inf = float("inf")

    def ball(x, radius):
        center[0], center[1] = x
        st = query_radius(grid, center, radius, every, out, cap, found)
        if st != 0:
            raise ValueError(st)
        return sorted(ffi.unpack(out, found[0]))

    def nearest(x):
        center[0], center[1] = x
        if knn(grid, center, every, inf, nb, 1, found) != 0:
            raise ValueError
        return (nb[0].dist2 ** 0.5, nb[0].index)

    return ball, nearest, (keep, gp, view)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args(argv[1:])
    import cffi

    pts = np.random.default_rng(1).random((100000, 2)) * 316.0
    qs = [tuple(p) for p in np.random.default_rng(2).random((args.calls, 2)) * 316.0]
    r = 1.0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        so = build_shared(tmp)
        ffi_abi = cffi.FFI()
        ffi_abi.cdef(CDEF)
        lib_abi = ffi_abi.dlopen(so)
        ffi_api = cffi.FFI()
        ffi_api.cdef(CDEF)
        ffi_api.set_source("_nb_cffi_api", '#include <nearby/grid.h>',
                           include_dirs=[os.path.join(tmp, "inc"), os.path.join(ROOT, "include")],
                           library_dirs=[tmp], libraries=["nearby_cffi"],
                           extra_link_args=["-Wl,-rpath," + tmp])
        ffi_api.compile(tmpdir=tmp, verbose=False)
        sys.path.insert(0, tmp)
        import _nb_cffi_api

        grid = nearby.Grid(pts, radius=r)
        tree = cKDTree(pts)
        abi_ball, abi_nearest, keep1 = binding(ffi_abi, lib_abi, pts, r)
        api_ball, api_nearest, keep2 = binding(_nb_cffi_api.ffi, _nb_cffi_api.lib, pts, r)
        for q in qs[:200]:  # the same answers everywhere
            want = grid.query_ball_point(q, r)
            assert abi_ball(q, r) == want and api_ball(q, r) == want
            assert sorted(tree.query_ball_point(q, r)) == want
            assert abi_nearest(q)[1] == grid.query(q)[1] == api_nearest(q)[1]
        cases = [
            ("C extension: grid.query_ball_point(p, r)", lambda q: grid.query_ball_point(q, r)),
            ("cffi API mode, same query", lambda q: api_ball(q, r)),
            ("cffi ABI mode, same query", lambda q: abi_ball(q, r)),
            ("cKDTree.query_ball_point(p, r)", lambda q: tree.query_ball_point(q, r)),
            ("C extension: grid.query(p)", grid.query),
            ("cffi API mode, same query", api_nearest),
            ("cffi ABI mode, same query", abi_nearest),
            ("cKDTree.query(p)", tree.query),
        ]
        for name, fn in cases:
            best = min(timeit.repeat(lambda: [fn(q) for q in qs], number=1, repeat=7))
            rows.append((name, best / len(qs) * 1e9))
    print("| call (100k uniform 2D points, one point a call) | ns a call (min of 7) |")
    print("|---|---:|")
    for name, ns in rows:
        print("| %s | %.0f |" % (name, ns))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
