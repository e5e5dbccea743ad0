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
#if defined(__linux__)
#include <sys/mman.h>
#endif

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
#define NBPY_BIG_MIN ((size_t)1 << 20)
#define NBPY_BIG_SLOTS 8
#define NBPY_BIG_KEEP ((size_t)512 << 20)

static struct {
    void *ptr;
    size_t bytes;
} nbpy_big[NBPY_BIG_SLOTS];
static size_t nbpy_big_kept;
static pthread_mutex_t nbpy_big_lock = PTHREAD_MUTEX_INITIALIZER;

void *nbpy_big_alloc(size_t bytes, size_t *got)
{
    *got = bytes;
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
            nbpy_big_kept -= *got;
            nbpy_big[best].ptr = NULL;
        }
        pthread_mutex_unlock(&nbpy_big_lock);
        if (p != NULL) return p;
    }
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes > 0 ? bytes : 1) != 0) return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    // Advice only: with transparent huge pages in "madvise" mode, 2 MiB pages fault in faster.
    if (bytes >= NBPY_BIG_MIN) (void)madvise(p, bytes & ~(size_t)4095, MADV_HUGEPAGE);
#endif
    return p;
}

void nbpy_big_free(void *ptr, size_t bytes)
{
    if (ptr == NULL) return;
    if (bytes >= NBPY_BIG_MIN) {
        pthread_mutex_lock(&nbpy_big_lock);
        bool kept = false;
        for (int i = 0; i < NBPY_BIG_SLOTS && !kept; i++) {
            if (nbpy_big[i].ptr == NULL && nbpy_big_kept + bytes <= NBPY_BIG_KEEP) {
                nbpy_big[i].ptr = ptr;
                nbpy_big[i].bytes = bytes;
                nbpy_big_kept += bytes;
                kept = true;
            }
        }
        pthread_mutex_unlock(&nbpy_big_lock);
        if (kept) return;
    }
    free(ptr);
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

static PyMethodDef nbpy_methods[] = {
    {"_set_alloc_budget", nbpy_set_alloc_budget, METH_O,
     "_set_alloc_budget(n)\n--\n\nFor tests: the library's next n allocations succeed, then "
     "every one fails until reset with -1."},
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
