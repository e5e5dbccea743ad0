// SPDX-License-Identifier: MIT
// The Python extension's shared declarations: the two types, argument helpers, the status to
// exception mapping and a small parallel-for. Internal to the extension; not installed.
#ifndef NEARBY_PY_NBPY_H
#define NEARBY_PY_NBPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL nbpy_ARRAY_API
#ifndef NBPY_MODULE_FILE
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <nearby/grid.h>
#include <nearby/hash.h>
#include <nearby/neighbors.h>

extern PyTypeObject nbpy_GridType;

/// The allocator every structure the extension creates uses: posix_memalign/free, failing on
/// purpose once the tests' budget (_set_alloc_budget) runs out.
extern const nbAllocator nbpy_allocator;
extern PyTypeObject nbpy_HashType;
extern PyTypeObject nbpy_QuadtreeType;
extern PyTypeObject nbpy_TilesType;

/// A block of at least `bytes`, 64-byte aligned (*got: its real size, to pass to nbpy_big_free):
/// blocks of 1 MiB or more come from a small cache of freed ones when one fits. NULL when out
/// of memory. Thread-safe, no GIL needed.
void *nbpy_big_alloc(size_t bytes, size_t *got);
/// Frees a block from nbpy_big_alloc, keeping big ones for reuse. NULL is a no-op.
void nbpy_big_free(void *ptr, size_t bytes);
/// nbpy_big_alloc for a block its users may write only in part (the pairs' rows, reserved by a
/// bound): *used gets how many of its bytes earlier users wrote (0 for a new block).
void *nbpy_big_alloc_used(size_t bytes, size_t *got, size_t *used);
/// nbpy_big_free for a block written only in its first `used` bytes (from nbpy_big_alloc_used:
/// at least the *used it gave): the cache's budget counts those, not the whole block.
void nbpy_big_free_used(void *ptr, size_t bytes, size_t used);

/// Sets the exception a status maps to (ValueError, MemoryError or RuntimeError) with the
/// library's message, prefixed by `what`, and returns NULL.
PyObject *nbpy_error(nbStatus st, const char *what);

/// A single point given as a plain tuple or list of `dim` Python floats or ints: parses it into
/// `out` and returns 1. Returns 0 when `obj` is anything else (the caller then goes through
/// numpy), -1 with an exception set on an error.
int nbpy_point_fast(PyObject *obj, int dim, double *out);

/// Converts query points to a C-contiguous float64 array whose last axis has `dim` entries.
/// *single is 1 for one point given as shape (dim,). *m receives the number of points and
/// `lead`/`lead_nd` the leading shape (all but the last axis). New reference or NULL.
PyArrayObject *nbpy_query_points(PyObject *obj, int dim, const char *name, int *single, npy_intp *m,
                                 npy_intp *lead, int *lead_nd);

/// Converts any real number array to a float64 array: TypeError for a dtype that is not a
/// number. `flags` as for PyArray_FROM_OTF. New reference or NULL.
PyArrayObject *nbpy_as_double(PyObject *obj, int flags, const char *name);

/// Parses a real number: TypeError when it is not one.
int nbpy_double(PyObject *obj, const char *name, double *out);

/// Parses the query filter keywords (None = all bits): ValueError outside [0, 2^32).
int nbpy_filter(PyObject *category, PyObject *mask, nbFilter *out);

/// Parses `workers` as scipy does: >= 1, or -1 for every CPU.
int nbpy_workers(PyObject *obj, int *out);

/// Checks scipy's p and eps: p must be 2 (NotImplementedError otherwise), eps >= 0 (exact
/// answers meet any eps, so it is accepted and ignored).
int nbpy_check_p_eps(PyObject *p, PyObject *eps);

/// Runs fn(ctx, begin, end) over [0, count) split into `workers` contiguous parts, one per
/// thread (the calling thread runs the first). Call without the GIL. Returns 0, or -1 when a
/// thread could not be started (the caller then runs single-threaded).
typedef void nbpyRangeFn(void *ctx, int64_t begin, int64_t end, int part);
int nbpy_parallel(int workers, int64_t count, nbpyRangeFn *fn, void *ctx);

/// Calls a METH_VARARGS | METH_KEYWORDS function with vectorcall arguments: the slow path of
/// the methods whose common calls (positional only) are parsed by hand.
PyObject *nbpy_call_kw(PyCFunctionWithKeywords fn, PyObject *self, PyObject *const *args,
                       Py_ssize_t nargs, PyObject *kwnames);

/// Sorts n int32 values ascending.
void nbpy_sort_i32(int32_t *v, int64_t n);

#endif
