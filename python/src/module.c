// SPDX-License-Identifier: MIT
// The nearby._nearby module: the status-to-exception mapping, argument helpers shared by the
// grid and the hash, a small parallel-for on pthreads, and the module's init.
#define NBPY_MODULE_FILE
#include "nbpy.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

PyObject *nbpy_error(nbStatus st, const char *what)
{
    PyObject *type = PyExc_ValueError;
    if (st == NB_ERR_OUT_OF_MEMORY) type = PyExc_MemoryError;
    if (st == NB_ERR_INTERNAL || st == NB_ERR_NULL_ARG) type = PyExc_RuntimeError;
    PyErr_Format(type, "%s: %s (%s)", what, nb_status_message(st), nb_status_str(st));
    return NULL;
}

int nbpy_double(PyObject *obj, const char *name, double *out)
{
    if (PyFloat_CheckExact(obj)) {
        *out = PyFloat_AS_DOUBLE(obj);
        return 0;
    }
    // Anything with __float__ or __index__ that is not a string: numpy scalars, ints, 0-d arrays.
    if (PyUnicode_Check(obj) || PyBytes_Check(obj) || PyComplex_Check(obj) ||
        PyArray_IsScalar(obj, ComplexFloating) ||
        (PyArray_Check(obj) && !PyArray_ISNUMBER((PyArrayObject *)obj))) {
        PyErr_Format(PyExc_TypeError, "%s must be a real number, not %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    double v = PyFloat_AsDouble(obj);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be a real number, not %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = v;
    return 0;
}

int nbpy_point_fast(PyObject *obj, int dim, double *out)
{
    if (!PyTuple_CheckExact(obj) && !PyList_CheckExact(obj)) return 0;
    if (PySequence_Fast_GET_SIZE(obj) != dim) return 0;
    PyObject **items = PySequence_Fast_ITEMS(obj);
    for (int d = 0; d < dim; d++) {
        PyObject *v = items[d];
        if (PyFloat_Check(v)) { // float and its subclasses, numpy.float64 among them
            out[d] = PyFloat_AS_DOUBLE(v);
        } else if (PyLong_CheckExact(v)) {
            out[d] = PyLong_AsDouble(v);
            if (out[d] == -1.0 && PyErr_Occurred()) return -1;
        } else {
            return 0; // numpy scalars, strings, nested lists: let numpy decide
        }
    }
    return 1;
}

PyArrayObject *nbpy_as_double(PyObject *obj, int flags, const char *name)
{
    if (PyArray_Check(obj) && PyArray_TYPE((PyArrayObject *)obj) == NPY_DOUBLE &&
        PyArray_CHKFLAGS((PyArrayObject *)obj, flags)) {
        Py_INCREF(obj);
        return (PyArrayObject *)obj;
    }
    PyArrayObject *any = (PyArrayObject *)PyArray_FROM_O(obj);
    if (any == NULL) return NULL;
    int t = PyArray_TYPE(any);
    if (!PyTypeNum_ISINTEGER(t) && !PyTypeNum_ISFLOAT(t) && !PyTypeNum_ISBOOL(t)) {
        PyObject *descr = PyObject_Repr((PyObject *)PyArray_DESCR(any));
        PyErr_Format(PyExc_TypeError, "%s must be an array of real numbers, got dtype %S", name,
                     descr != NULL ? descr : Py_None);
        Py_XDECREF(descr);
        Py_DECREF(any);
        return NULL;
    }
    PyArrayObject *out =
        (PyArrayObject *)PyArray_FROM_OTF((PyObject *)any, NPY_DOUBLE, flags | NPY_ARRAY_FORCECAST);
    Py_DECREF(any);
    return out;
}

PyArrayObject *nbpy_query_points(PyObject *obj, int dim, const char *name, int *single, npy_intp *m,
                                 npy_intp *lead, int *lead_nd)
{
    PyArrayObject *a = nbpy_as_double(obj, NPY_ARRAY_CARRAY_RO, name);
    if (a == NULL) return NULL;
    int nd = PyArray_NDIM(a);
    if (nd < 1 || PyArray_DIM(a, nd - 1) != dim || nd > NPY_MAXDIMS) {
        PyErr_Format(PyExc_ValueError,
                     "%s must have shape (%d,) or (..., %d) for this %dD structure, got ndim=%d "
                     "with last axis %zd",
                     name, dim, dim, dim, nd, nd >= 1 ? (Py_ssize_t)PyArray_DIM(a, nd - 1) : 0);
        Py_DECREF(a);
        return NULL;
    }
    *single = nd == 1;
    *lead_nd = nd - 1;
    npy_intp count = 1;
    for (int d = 0; d < nd - 1; d++) {
        lead[d] = PyArray_DIM(a, d);
        count *= lead[d];
    }
    *m = count;
    return a;
}

PyObject *nbpy_call_kw(PyCFunctionWithKeywords fn, PyObject *self, PyObject *const *args,
                       Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *tuple = PyTuple_New(nargs), *dict = NULL, *res = NULL;
    if (tuple == NULL) return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(tuple, i, args[i]);
    }
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nkw > 0) {
        dict = PyDict_New();
        for (Py_ssize_t i = 0; dict != NULL && i < nkw; i++)
            if (PyDict_SetItem(dict, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0)
                Py_CLEAR(dict);
        if (dict == NULL) goto done;
    }
    res = fn(self, tuple, dict);
done:
    Py_DECREF(tuple);
    Py_XDECREF(dict);
    return res;
}

static int nbpy_u32(PyObject *obj, const char *name, uint32_t *out)
{
    if (obj == NULL || obj == Py_None) {
        *out = 0xFFFFFFFFu;
        return 0;
    }
    PyObject *idx = PyNumber_Index(obj);
    if (idx == NULL) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be an integer, not %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(idx, &overflow);
    Py_DECREF(idx);
    if (overflow != 0 || v < 0 || v > 0xFFFFFFFFll) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "%s must be in [0, 2**32), got %R", name, obj);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

int nbpy_filter(PyObject *category, PyObject *mask, nbFilter *out)
{
    if (nbpy_u32(category, "category", &out->category) < 0) return -1;
    return nbpy_u32(mask, "mask", &out->mask);
}

int nbpy_workers(PyObject *obj, int *out)
{
    *out = 1;
    if (obj == NULL || obj == Py_None) return 0;
    long w = PyLong_AsLong(obj);
    if (w == -1 && PyErr_Occurred()) return -1;
    if (w == -1) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        *out = cpus > 0 ? (int)(cpus < 256 ? cpus : 256) : 1;
        return 0;
    }
    if (w < 1) {
        PyErr_SetString(PyExc_ValueError, "workers must be >= 1, or -1 for every CPU");
        return -1;
    }
    *out = w < 256 ? (int)w : 256;
    return 0;
}

int nbpy_check_p_eps(PyObject *p, PyObject *eps)
{
    double v;
    if (p != NULL && p != Py_None) {
        if (nbpy_double(p, "p", &v) < 0) return -1;
        if (v != 2.0) {
            PyErr_SetString(PyExc_NotImplementedError,
                            "nearby measures Euclidean distance only: p must be 2");
            return -1;
        }
    }
    if (eps != NULL && eps != Py_None) {
        if (nbpy_double(eps, "eps", &v) < 0) return -1;
        if (!(v >= 0.0)) {
            PyErr_SetString(PyExc_ValueError, "eps must be >= 0");
            return -1;
        }
    }
    return 0;
}

// ---- parallel-for: static contiguous parts, one thread each ----

typedef struct nbpyPart {
    nbpyRangeFn *fn;
    void *ctx;
    int64_t begin, end;
    int part;
} nbpyPart;

static void *nbpy_part_main(void *arg)
{
    nbpyPart *p = arg;
    p->fn(p->ctx, p->begin, p->end, p->part);
    return NULL;
}

int nbpy_parallel(int workers, int64_t count, nbpyRangeFn *fn, void *ctx)
{
    if (workers > count) workers = count > 0 ? (int)count : 1;
    if (workers <= 1) {
        fn(ctx, 0, count, 0);
        return 0;
    }
    nbpyPart parts[256];
    pthread_t threads[256];
    bool started[256];
    for (int p = 0; p < workers; p++) {
        parts[p] = (nbpyPart){fn, ctx, count * p / workers, count * (p + 1) / workers, p};
        started[p] = false;
    }
    for (int p = 1; p < workers; p++)
        started[p] = pthread_create(&threads[p], NULL, nbpy_part_main, &parts[p]) == 0;
    nbpy_part_main(&parts[0]);
    for (int p = 1; p < workers; p++) {
        if (started[p])
            pthread_join(threads[p], NULL);
        else
            nbpy_part_main(&parts[p]); // no thread: run that part here
    }
    return 0;
}

static int nbpy_cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

void nbpy_sort_i32(int32_t *v, int64_t n)
{
    if (n <= 16) { // insertion sort: most radius queries find a handful
        for (int64_t i = 1; i < n; i++) {
            int32_t x = v[i];
            int64_t j = i;
            for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    qsort(v, (size_t)n, sizeof *v, nbpy_cmp_i32);
}

// ---- big blocks: a small cache of freed ones ----

// A Grid built every frame (a simulation loop, or Grid(x).query_pairs(r) in a loop) allocates
// the same big arrays each time, and fresh pages cost a fault each: about 110 MB of them for
// 1M points and their 4.8M pairs. Freed blocks of 1 MiB or more are kept (up to 8 blocks and
// 512 MiB) and handed out again for a request between half their size and their size, so
// those pages stay warm, as the C library's own storage stays warm across nb_grid_build calls.
// The 512 MiB count the bytes ever written, not the address space: the pairs' block reserves
// 64 rows a point (1 GB at 1M points) and writes the rows found (77 MB for 4.8M pairs).
// When a freed block finds no room, the blocks freed longest ago are given back to the system
// to make it: blocks no request fits any more (another data set's, another query's) would
// otherwise hold every slot for good, and each new block of the current loop would be fresh
// memory on every call (the corpus benchmark's sets in one process: from the fourth set on,
// each query_pairs call faulted in its 16 MB of pairs anew, 4000 faults, 2.5x C's time).
#define NBPY_BIG_MIN ((size_t)1 << 20)
#define NBPY_BIG_SLOTS 8
#define NBPY_BIG_KEEP ((size_t)512 << 20)
#define NBPY_BIG_SPACE ((size_t)16 << 30) // the address space a kept block may span

// Invariants: kept = the sum of used over the slots with a block (ptr != NULL), <= KEEP;
// used <= bytes; freed orders the slots by when their block was kept (higher: later).
static struct {
    void *ptr;
    size_t bytes;
    size_t used; // bytes of it ever written (an upper bound)
    uint64_t freed;
} nbpy_big[NBPY_BIG_SLOTS];
static size_t nbpy_big_kept;
static uint64_t nbpy_big_clock;
static pthread_mutex_t nbpy_big_lock = PTHREAD_MUTEX_INITIALIZER;

void *nbpy_big_alloc_used(size_t bytes, size_t *got, size_t *used)
{
    *got = bytes;
    *used = 0;
    if (bytes >= NBPY_BIG_MIN) {
        pthread_mutex_lock(&nbpy_big_lock);
        int best = -1;
        for (int i = 0; i < NBPY_BIG_SLOTS; i++)
            if (nbpy_big[i].ptr != NULL && nbpy_big[i].bytes >= bytes &&
                nbpy_big[i].bytes / 2 <= bytes &&
                (best < 0 || nbpy_big[i].bytes < nbpy_big[best].bytes))
                best = i;
        void *p = NULL;
        if (best >= 0) {
            p = nbpy_big[best].ptr;
            *got = nbpy_big[best].bytes;
            *used = nbpy_big[best].used;
            nbpy_big_kept -= *used;
            nbpy_big[best].ptr = NULL;
        }
        pthread_mutex_unlock(&nbpy_big_lock);
        if (p != NULL) return p;
    }
    void *p = NULL;
    // No huge-page advice (MADV_HUGEPAGE): on a first call it took dups2d's 200k points from
    // 19 to 14 ms of CPU, but 1M uniform points from 135 to 150-310 ms (with "defrag" in
    // "madvise" mode each fault of a 2 MiB page may wait for the kernel to compact memory).
    if (posix_memalign(&p, 64, bytes > 0 ? bytes : 1) != 0) return NULL;
    return p;
}

void *nbpy_big_alloc(size_t bytes, size_t *got)
{
    size_t used;
    return nbpy_big_alloc_used(bytes, got, &used);
}

void nbpy_big_free_used(void *ptr, size_t bytes, size_t used)
{
    if (ptr == NULL) return;
    if (used > bytes) used = bytes;
    if (bytes < NBPY_BIG_MIN || bytes > NBPY_BIG_SPACE || used > NBPY_BIG_KEEP) {
        free(ptr);
        return;
    }
    void *evicted[NBPY_BIG_SLOTS];
    int n_evicted = 0;
    pthread_mutex_lock(&nbpy_big_lock);
    int slot = -1;
    for (;;) {
        int oldest = -1;
        for (int i = 0; i < NBPY_BIG_SLOTS; i++) {
            if (nbpy_big[i].ptr == NULL)
                slot = i;
            else if (oldest < 0 || nbpy_big[i].freed < nbpy_big[oldest].freed)
                oldest = i;
        }
        if (slot >= 0 && nbpy_big_kept + used <= NBPY_BIG_KEEP) break;
        // oldest >= 0 here: with every slot empty, kept is 0 and used fits
        evicted[n_evicted++] = nbpy_big[oldest].ptr;
        nbpy_big_kept -= nbpy_big[oldest].used;
        nbpy_big[oldest].ptr = NULL;
    }
    nbpy_big[slot].ptr = ptr;
    nbpy_big[slot].bytes = bytes;
    nbpy_big[slot].used = used;
    nbpy_big[slot].freed = ++nbpy_big_clock;
    nbpy_big_kept += used;
    pthread_mutex_unlock(&nbpy_big_lock);
    for (int i = 0; i < n_evicted; i++) free(evicted[i]); // outside the lock
}

void nbpy_big_free(void *ptr, size_t bytes)
{
    nbpy_big_free_used(ptr, bytes, bytes);
}

// _big_blocks(sizes): for tests, allocates a block of each size (bytes), frees them in order,
// and returns the sizes of the blocks the cache then keeps, ascending. An item (size, used)
// frees its block as written only in its first `used` bytes (nbpy_big_free_used).
static PyObject *nbpy_big_blocks(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *seq = PySequence_Fast(arg, "_big_blocks: a sequence of sizes");
    if (seq == NULL) return NULL;
    const Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    void **ptrs = PyMem_Calloc((size_t)m + 1, sizeof *ptrs);
    size_t *got = PyMem_Calloc(2 * (size_t)m + 1, sizeof *got); // sizes, then what was written
    bool failed = ptrs == NULL || got == NULL;
    for (Py_ssize_t i = 0; i < m && !failed; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        size_t bytes, used, prev;
        if (PyTuple_Check(item)) {
            Py_ssize_t b = 0, u = 0;
            failed = !PyArg_ParseTuple(item, "nn", &b, &u) || b < 0 || u < 0;
            if (failed && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "negative size");
            bytes = (size_t)b;
            used = (size_t)u;
        } else {
            bytes = used = PyLong_AsSize_t(item);
            failed = bytes == (size_t)-1 && PyErr_Occurred();
        }
        if (!failed && (ptrs[i] = nbpy_big_alloc_used(bytes, &got[i], &prev)) == NULL)
            failed = true;
        if (!failed) got[m + i] = used > prev ? used : prev;
    }
    for (Py_ssize_t i = 0; i < m && ptrs != NULL; i++)
        nbpy_big_free_used(ptrs[i], got[i], got[m + i]);
    PyMem_Free(ptrs);
    PyMem_Free(got);
    Py_DECREF(seq);
    if (failed) return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    size_t kept[NBPY_BIG_SLOTS];
    int k = 0;
    pthread_mutex_lock(&nbpy_big_lock);
    for (int i = 0; i < NBPY_BIG_SLOTS; i++)
        if (nbpy_big[i].ptr != NULL) kept[k++] = nbpy_big[i].bytes;
    pthread_mutex_unlock(&nbpy_big_lock);
    for (int i = 1; i < k; i++) // insertion sort: at most 8
        for (int j = i; j > 0 && kept[j - 1] > kept[j]; j--) {
            const size_t t = kept[j];
            kept[j] = kept[j - 1];
            kept[j - 1] = t;
        }
    PyObject *out = PyList_New(k);
    for (int i = 0; out != NULL && i < k; i++) {
        PyObject *v = PyLong_FromSize_t(kept[i]);
        if (v == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, v);
    }
    return out;
}

// ---- allocation: malloc, with a budget the tests set to fail the library's allocations ----

static _Atomic long long nbpy_budget = -1; // allocations left before failing; -1 = unlimited

static void *nbpy_alloc(size_t size, size_t align, void *user)
{
    (void)user;
    long long b = atomic_load(&nbpy_budget);
    while (b >= 0) {
        if (b == 0) return NULL;
        if (atomic_compare_exchange_weak(&nbpy_budget, &b, b - 1)) break;
    }
    size_t got;
    (void)align; // at most 64, which nbpy_big_alloc always gives
    return nbpy_big_alloc(size, &got);
}

static void nbpy_free(void *ptr, size_t size, void *user)
{
    (void)user;
    nbpy_big_free(ptr, size);
}

const nbAllocator nbpy_allocator = {nbpy_alloc, nbpy_free, NULL};

static PyObject *nbpy_set_alloc_budget(PyObject *self, PyObject *arg)
{
    (void)self;
    long long b = PyLong_AsLongLong(arg);
    if (b == -1 && PyErr_Occurred()) return NULL;
    atomic_store(&nbpy_budget, b < 0 ? -1 : b);
    Py_RETURN_NONE;
}

// ---- module ----

static PyObject *nbpy_version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    uint32_t v = nb_version();
    return PyUnicode_FromFormat("%u.%u.%u", (unsigned)(v >> 16), (unsigned)((v >> 8) & 0xffu),
                                (unsigned)(v & 0xffu));
}

// ---- pairs counted at many radii (cKDTree.count_neighbors) ----

// A grid over the float64 (n, dim) array `data` (C-contiguous), for the radii counts: they walk
// trees of their own, so the cells only need to keep the build's memory O(n). NULL with an
// exception set on an error.
static nbGrid *nbpy_radii_grid(PyArrayObject *data, const double *period)
{
    const int dim = (int)PyArray_DIM(data, 1);
    const npy_intp n = PyArray_DIM(data, 0);
    const double *x = (const double *)PyArray_DATA(data);
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0}, big = 0.0;
    for (npy_intp i = 0; i < n; i++)
        for (int a = 0; a < dim; a++) {
            const double v = x[i * dim + a];
            lo[a] = i == 0 || v < lo[a] ? v : lo[a];
            hi[a] = i == 0 || v > hi[a] ? v : hi[a];
            big = fabs(v) > big ? fabs(v) : big;
        }
    double wide = 0.0;
    for (int a = 0; a < dim; a++) wide = hi[a] - lo[a] > wide ? hi[a] - lo[a] : wide;
    double cell = n > 0 ? 2.0 * wide / pow((double)n, 1.0 / dim) : 1.0;
    cell = fmax(cell, big * 0x1p-40);
    if (!(cell > 0.0) || !isfinite(cell)) cell = isfinite(cell) ? 1.0 : 0x1p1000;
    nbGridDesc desc = {0};
    desc.dim = dim;
    desc.allocator = &nbpy_allocator;
    for (int a = 0; a < dim && period != NULL; a++) {
        desc.period[a] = period[a];
        if (period[a] > 0.0 && cell > 0.5 * period[a]) cell = 0.5 * period[a];
    }
    nbGrid *grid = NULL;
    nbStatus st = nb_grid_create(&desc, &grid);
    if (st == NB_OK) {
        const nbPoints pts = {x, (int32_t)n, dim, 0, NULL, 0, NULL, 0};
        st = nb_grid_build(grid, &pts, cell);
    }
    if (st != NB_OK) {
        nb_grid_destroy(grid);
        nbpy_error(st, "count_neighbors");
        return NULL;
    }
    return grid;
}

// A float64 1-D array of n entries, or NULL for None (*ok = 0 with an exception on an error).
static PyArrayObject *nbpy_radii_weights(PyObject *obj, npy_intp n, int *ok)
{
    if (obj == Py_None) return NULL;
    PyArrayObject *w = nbpy_as_double(obj, NPY_ARRAY_IN_ARRAY, "weights");
    if (w != NULL && (PyArray_NDIM(w) != 1 || PyArray_DIM(w, 0) != n)) {
        PyErr_SetString(PyExc_ValueError, "weights: one per point");
        Py_CLEAR(w);
    }
    if (w == NULL) *ok = 0;
    return w;
}

// _count_radii(a, b, radii, p, period, wa, wb, cumulative): the pairs of a's points (b None:
// unordered, i < j) or of (a, b) within each radius, through nb_grid_*_pairs_radii. int64 counts
// without weights, float64 sums with them.
static PyObject *nbpy_count_radii(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *a_o, *b_o, *r_o, *per_o, *wa_o, *wb_o;
    double p;
    int cumulative;
    if (!PyArg_ParseTuple(args, "OOOdOOOp:_count_radii", &a_o, &b_o, &r_o, &p, &per_o, &wa_o, &wb_o,
                          &cumulative))
        return NULL;
    PyArrayObject *a = NULL, *b = NULL, *r = NULL, *wa = NULL, *wb = NULL, *out = NULL;
    nbGrid *ga = NULL, *gb = NULL;
    double period[3] = {0, 0, 0};
    int ok = 1;
    a = nbpy_as_double(a_o, NPY_ARRAY_IN_ARRAY, "a");
    if (a != NULL && b_o != Py_None && b_o != a_o) b = nbpy_as_double(b_o, NPY_ARRAY_IN_ARRAY, "b");
    r = nbpy_as_double(r_o, NPY_ARRAY_IN_ARRAY, "r");
    if (a == NULL || r == NULL || (b_o != Py_None && b_o != a_o && b == NULL)) goto done;
    const int dim = PyArray_NDIM(a) == 2 ? (int)PyArray_DIM(a, 1) : 0;
    if ((dim != 2 && dim != 3) || PyArray_DIM(a, 0) > INT32_MAX || PyArray_NDIM(r) != 1 ||
        PyArray_DIM(r, 0) > INT32_MAX ||
        (b != NULL &&
         (PyArray_NDIM(b) != 2 || PyArray_DIM(b, 1) != dim || PyArray_DIM(b, 0) > INT32_MAX))) {
        PyErr_SetString(PyExc_ValueError, "_count_radii: (n, 2 or 3) points, 1-D radii");
        goto done;
    }
    if (per_o != Py_None) {
        PyArrayObject *per = nbpy_as_double(per_o, NPY_ARRAY_IN_ARRAY, "period");
        if (per == NULL) goto done;
        for (npy_intp i = 0; i < PyArray_SIZE(per) && i < dim; i++)
            period[i] = ((const double *)PyArray_DATA(per))[i];
        Py_DECREF(per);
    }
    wa = nbpy_radii_weights(wa_o, PyArray_DIM(a, 0), &ok);
    if (ok) wb = nbpy_radii_weights(wb_o, PyArray_DIM(b != NULL ? b : a, 0), &ok);
    if (!ok) goto done;
    ga = nbpy_radii_grid(a, per_o != Py_None ? period : NULL);
    if (ga == NULL) goto done;
    if (b != NULL && (gb = nbpy_radii_grid(b, per_o != Py_None ? period : NULL)) == NULL) goto done;
    const bool weighted = wa != NULL || wb != NULL;
    npy_intp m = PyArray_DIM(r, 0);
    out = (PyArrayObject *)PyArray_SimpleNew(1, &m, weighted ? NPY_DOUBLE : NPY_INT64);
    if (out == NULL) goto done;
    const double *radii = (const double *)PyArray_DATA(r);
    const double *pa = wa != NULL ? (const double *)PyArray_DATA(wa) : NULL;
    const double *pb = wb != NULL ? (const double *)PyArray_DATA(wb) : NULL;
    nbStatus st;
    Py_BEGIN_ALLOW_THREADS;
    if (b_o == Py_None && weighted)
        st = nb_grid_sum_pairs_radii(ga, pa, radii, (int32_t)m, p, cumulative != 0,
                                     (double *)PyArray_DATA(out));
    else if (b_o == Py_None)
        st = nb_grid_count_pairs_radii(ga, radii, (int32_t)m, p, cumulative != 0,
                                       (int64_t *)PyArray_DATA(out));
    else if (weighted)
        st = nb_grid_sum_cross_pairs_radii(ga, gb != NULL ? gb : ga, pa, pb, radii, (int32_t)m, p,
                                           cumulative != 0, (double *)PyArray_DATA(out));
    else
        st = nb_grid_count_cross_pairs_radii(ga, gb != NULL ? gb : ga, radii, (int32_t)m, p,
                                             cumulative != 0, (int64_t *)PyArray_DATA(out));
    Py_END_ALLOW_THREADS;
    if (st != NB_OK) {
        Py_CLEAR(out);
        nbpy_error(st, "count_neighbors");
    }
done:
    nb_grid_destroy(ga);
    nb_grid_destroy(gb);
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(r);
    Py_XDECREF(wa);
    Py_XDECREF(wb);
    return (PyObject *)out;
}

static PyMethodDef nbpy_methods[] = {
    {"_count_radii", nbpy_count_radii, METH_VARARGS,
     "_count_radii(a, b, radii, p, period, wa, wb, cumulative)\n--\n\nPairs of a's points (b "
     "None: i < j) or of (a, b) within each of the non-decreasing radii, in one walk: int64 "
     "counts, or float64 sums of wa[i] * wb[j] with weights."},
    {"_set_alloc_budget", nbpy_set_alloc_budget, METH_O,
     "_set_alloc_budget(n)\n--\n\nFor tests: the library's next n allocations succeed, then "
     "every one fails until reset with -1."},
    {"_big_blocks", nbpy_big_blocks, METH_O,
     "_big_blocks(sizes)\n--\n\nFor tests: allocates big blocks of these sizes, frees them, and "
     "returns the sizes of the blocks kept for reuse, ascending."},
    {"library_version", nbpy_version, METH_NOARGS,
     "library_version()\n--\n\nThe C library's compiled version, e.g. '0.1.0'."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef nbpy_module = {
    PyModuleDef_HEAD_INIT,
    "_nearby",
    "The C core of the nearby package.",
    -1,
    nbpy_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__nearby(void);
PyMODINIT_FUNC PyInit__nearby(void)
{
    import_array();
    if (PyType_Ready(&nbpy_GridType) < 0 || PyType_Ready(&nbpy_HashType) < 0 ||
        PyType_Ready(&nbpy_QuadtreeType) < 0 || PyType_Ready(&nbpy_TilesType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&nbpy_module);
    if (m == NULL) return NULL;
    Py_INCREF(&nbpy_GridType);
    Py_INCREF(&nbpy_HashType);
    Py_INCREF(&nbpy_QuadtreeType);
    Py_INCREF(&nbpy_TilesType);
    if (PyModule_AddObject(m, "_Grid", (PyObject *)&nbpy_GridType) < 0 ||
        PyModule_AddObject(m, "_Hash", (PyObject *)&nbpy_HashType) < 0 ||
        PyModule_AddObject(m, "_Quadtree", (PyObject *)&nbpy_QuadtreeType) < 0 ||
        PyModule_AddObject(m, "_Tiles", (PyObject *)&nbpy_TilesType) < 0 ||
        PyModule_AddIntConstant(m, "ALL", 0xFFFFFFFF) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
