// SPDX-License-Identifier: MIT
// nearby._nearby._Hash: a thin class over the spatial hash (insert / move / remove by handle,
// queries). Handles are Python ints (the nbHandle's 64 bits); results name items by handle, or
// by the user value given at insert with return_user=True.
//
// Small calls hold the GIL. All pairs and counts release it; while one runs, `readers` is
// above 0 and every mutation raises RuntimeError instead of changing the hash under it.
#include "nbpy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// Invariants: hash is NULL only before __init__; readers counts the calls running without the
// GIL, and is changed only with the GIL held.
typedef struct nbpyHash {
    PyObject_HEAD nbHash *hash;
    int32_t dim;
    int readers;
} nbpyHash;

static void hash_dealloc(nbpyHash *h)
{
    nb_hash_destroy(h->hash);
    Py_TYPE(h)->tp_free((PyObject *)h);
}

static int hash_init(nbpyHash *h, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"cell_size", "dim", "capacity", NULL};
    PyObject *cell_o;
    int dim = 2, capacity = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|ii:Hash", kwlist, &cell_o, &dim, &capacity))
        return -1;
    if (h->hash != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Hash.__init__ may be called only once");
        return -1;
    }
    nbHashDesc desc = {0};
    if (nbpy_double(cell_o, "cell_size", &desc.cell_size) < 0) return -1;
    desc.dim = dim;
    desc.capacity_hint = capacity;
    desc.allocator = &nbpy_allocator;
    if (dim != 2 && dim != 3) {
        PyErr_SetString(PyExc_ValueError, "dim must be 2 or 3");
        return -1;
    }
    nbStatus st = nb_hash_create(&desc, &h->hash);
    if (st != NB_OK) return nbpy_error(st, "Hash"), -1;
    h->dim = dim;
    return 0;
}

static int hash_ready(nbpyHash *h, bool mutate)
{
    if (h->hash == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Hash was not initialised");
        return -1;
    }
    if (mutate && h->readers > 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Hash changed while another thread runs query_pairs/count_pairs on it");
        return -1;
    }
    return 0;
}

static int hash_handle(PyObject *obj, nbHandle *out)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "a handle is an int, not %.100s", Py_TYPE(obj)->tp_name);
        return -1;
    }
    unsigned long long bits = PyLong_AsUnsignedLongLong(obj);
    if (bits == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return nbpy_error(NB_ERR_BAD_HANDLE, "handle"), -1;
    }
    out->bits = bits;
    return 0;
}

static int hash_point(nbpyHash *h, PyObject *obj, const char *name, double *out)
{
    int fast = nbpy_point_fast(obj, h->dim, out);
    if (fast != 0) return fast < 0 ? -1 : 0;
    PyArrayObject *a = nbpy_as_double(obj, NPY_ARRAY_CARRAY_RO, name);
    if (a == NULL) return -1;
    if (PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) != h->dim) {
        PyErr_Format(PyExc_ValueError, "%s must have shape (%d,)", name, h->dim);
        Py_DECREF(a);
        return -1;
    }
    memcpy(out, PyArray_DATA(a), (size_t)h->dim * sizeof(double));
    Py_DECREF(a);
    return 0;
}

static PyObject *hash_insert(nbpyHash *h, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"pos", "user", "category", "mask", NULL};
    PyObject *pos_o, *cat_o = Py_None, *mask_o = Py_None;
    unsigned long long user = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|K$OO:insert", kwlist, &pos_o, &user, &cat_o,
                                     &mask_o))
        return NULL;
    double pos[3];
    nbFilter filter;
    nbHandle handle;
    if (hash_ready(h, true) < 0 || hash_point(h, pos_o, "pos", pos) < 0 ||
        nbpy_filter(cat_o, mask_o, &filter) < 0)
        return NULL;
    nbStatus st = nb_hash_insert(h->hash, pos, user, filter, &handle);
    if (st != NB_OK) return nbpy_error(st, "insert");
    return PyLong_FromUnsignedLongLong(handle.bits);
}

static PyObject *hash_insert_many(nbpyHash *h, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"points", "user", NULL};
    PyObject *pts_o, *user_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:insert_many", kwlist, &pts_o, &user_o))
        return NULL;
    if (hash_ready(h, true) < 0) return NULL;
    PyArrayObject *pts = nbpy_as_double(pts_o, NPY_ARRAY_CARRAY_RO, "points");
    if (pts == NULL) return NULL;
    if (PyArray_NDIM(pts) != 2 || PyArray_DIM(pts, 1) != h->dim) {
        PyErr_Format(PyExc_ValueError, "points must have shape (N, %d)", h->dim);
        Py_DECREF(pts);
        return NULL;
    }
    npy_intp n = PyArray_DIM(pts, 0);
    PyArrayObject *users = NULL;
    if (user_o != Py_None) {
        users = (PyArrayObject *)PyArray_FROMANY(user_o, NPY_UINT64, 1, 1, NPY_ARRAY_CARRAY_RO);
        if (users == NULL || PyArray_DIM(users, 0) != n) {
            if (users != NULL)
                PyErr_SetString(PyExc_ValueError, "user must have one entry per point");
            Py_XDECREF(users);
            Py_DECREF(pts);
            return NULL;
        }
    }
    PyObject *res = PyArray_SimpleNew(1, &n, NPY_UINT64);
    if (res == NULL) goto done;
    const double *p = PyArray_DATA(pts);
    const uint64_t *u = users != NULL ? PyArray_DATA(users) : NULL;
    uint64_t *out = PyArray_DATA((PyArrayObject *)res);
    for (npy_intp i = 0; i < n; i++) {
        nbHandle handle;
        nbStatus st = nb_hash_insert(h->hash, p + i * h->dim, u != NULL ? u[i] : (uint64_t)i,
                                     NB_FILTER_ALL, &handle);
        if (st != NB_OK) { // all or nothing: take back what this call inserted
            for (npy_intp j = 0; j < i; j++) nb_hash_remove(h->hash, (nbHandle){out[j]});
            char what[64];
            snprintf(what, sizeof what, "insert_many: points[%lld]", (long long)i);
            Py_CLEAR(res);
            nbpy_error(st, what);
            goto done;
        }
        out[i] = handle.bits;
    }
done:
    Py_XDECREF(users);
    Py_DECREF(pts);
    return res;
}

static PyObject *hash_move(nbpyHash *h, PyObject *args)
{
    PyObject *handle_o, *pos_o;
    if (!PyArg_ParseTuple(args, "OO:move", &handle_o, &pos_o)) return NULL;
    nbHandle handle;
    double pos[3];
    if (hash_ready(h, true) < 0 || hash_handle(handle_o, &handle) < 0 ||
        hash_point(h, pos_o, "pos", pos) < 0)
        return NULL;
    nbStatus st = nb_hash_move(h->hash, handle, pos);
    if (st != NB_OK) return nbpy_error(st, "move");
    Py_RETURN_NONE;
}

static PyObject *hash_move_many(nbpyHash *h, PyObject *args)
{
    PyObject *handles_o, *pts_o;
    if (!PyArg_ParseTuple(args, "OO:move_many", &handles_o, &pts_o)) return NULL;
    if (hash_ready(h, true) < 0) return NULL;
    PyArrayObject *handles =
        (PyArrayObject *)PyArray_FROMANY(handles_o, NPY_UINT64, 1, 1, NPY_ARRAY_CARRAY_RO);
    if (handles == NULL) return NULL;
    PyArrayObject *pts = nbpy_as_double(pts_o, NPY_ARRAY_CARRAY_RO, "points");
    PyObject *res = NULL;
    if (pts == NULL) goto done;
    npy_intp n = PyArray_DIM(handles, 0);
    if (PyArray_NDIM(pts) != 2 || PyArray_DIM(pts, 1) != h->dim || PyArray_DIM(pts, 0) != n) {
        PyErr_Format(PyExc_ValueError, "points must have shape (%zd, %d), one row per handle",
                     (Py_ssize_t)n, h->dim);
        goto done;
    }
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "move_many: at most 2^31 - 1 rows a call");
        goto done;
    }
    // One nb_hash_move_many: every row checked before any moves, the moves' memory asked for
    // ahead of them.
    nbHandle *items = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof *items);
    if (items == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const uint64_t *hs = PyArray_DATA(handles);
    for (npy_intp i = 0; i < n; i++) items[i].bits = hs[i];
    int32_t moved = 0;
    const nbStatus st = nb_hash_move_many(h->hash, items, PyArray_DATA(pts), (int32_t)n, &moved);
    PyMem_Free(items);
    if (st != NB_OK) { // a bad row moves none; out of memory, the first `moved`
        char what[96];
        snprintf(what, sizeof what, "move_many (%ld rows moved)", (long)moved);
        nbpy_error(st, what);
        goto done;
    }
    res = Py_None;
    Py_INCREF(res);
done:
    Py_DECREF(handles);
    Py_XDECREF(pts);
    return res;
}

static PyObject *hash_remove(nbpyHash *h, PyObject *handle_o)
{
    nbHandle handle;
    if (hash_ready(h, true) < 0 || hash_handle(handle_o, &handle) < 0) return NULL;
    nbStatus st = nb_hash_remove(h->hash, handle);
    if (st != NB_OK) return nbpy_error(st, "remove");
    Py_RETURN_NONE;
}

static PyObject *hash_get(nbpyHash *h, PyObject *handle_o)
{
    nbHandle handle;
    if (hash_ready(h, false) < 0 || hash_handle(handle_o, &handle) < 0) return NULL;
    double pos[3];
    uint64_t user;
    nbStatus st = nb_hash_get(h->hash, handle, pos, &user, NULL);
    if (st != NB_OK) return nbpy_error(st, "get");
    PyObject *p = h->dim == 2 ? Py_BuildValue("(dd)", pos[0], pos[1])
                              : Py_BuildValue("(ddd)", pos[0], pos[1], pos[2]);
    if (p == NULL) return NULL;
    return Py_BuildValue("(NK)", p, (unsigned long long)user);
}

static int hash_contains(nbpyHash *h, PyObject *handle_o)
{
    if (h->hash == NULL || !PyLong_Check(handle_o)) return 0;
    unsigned long long bits = PyLong_AsUnsignedLongLong(handle_o);
    if (bits == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return nb_hash_get(h->hash, (nbHandle){bits}, NULL, NULL, NULL) == NB_OK;
}

static Py_ssize_t hash_len(nbpyHash *h)
{
    return nb_hash_count(h->hash);
}

static PyObject *hash_clear(nbpyHash *h, PyObject *unused)
{
    (void)unused;
    if (hash_ready(h, true) < 0) return NULL;
    nb_hash_clear(h->hash);
    Py_RETURN_NONE;
}

// A list of the hits' handles (or user values).
static PyObject *hit_list(const nbHit *hits, int32_t n, bool user)
{
    PyObject *list = PyList_New(n);
    for (int32_t i = 0; list != NULL && i < n; i++) {
        PyObject *o = PyLong_FromUnsignedLongLong(user ? hits[i].user : hits[i].handle.bits);
        if (o == NULL) Py_CLEAR(list);
        if (list != NULL) PyList_SET_ITEM(list, i, o);
    }
    return list;
}

enum { HASH_RADIUS, HASH_BOX, HASH_NEIGHBORS };

static nbStatus hash_run(nbpyHash *h, int kind, const double *a, const double *b, double r,
                         nbHandle item, nbFilter f, nbHit *out, int32_t cap, int32_t *found)
{
    nbBox box = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}};
    switch (kind) {
    case HASH_RADIUS: return nb_hash_query_radius(h->hash, a, r, f, out, cap, found);
    case HASH_BOX:
        memcpy(box.min, a, (size_t)h->dim * sizeof(double));
        memcpy(box.max, b, (size_t)h->dim * sizeof(double));
        return nb_hash_query_box(h->hash, &box, f, out, cap, found);
    default: return nb_hash_query_neighbors(h->hash, item, r, f, out, cap, found);
    }
}

// Runs a query into a stack buffer, growing it once when the count says so.
static PyObject *hash_hits(nbpyHash *h, int kind, const double *a, const double *b, double r,
                           nbHandle item, nbFilter f, bool user, const char *what)
{
    nbHit stack[128];
    nbHit *v = stack;
    int32_t found = 0;
    nbStatus st = hash_run(h, kind, a, b, r, item, f, v, 128, &found);
    if (st == NB_ERR_BUFFER_TOO_SMALL) {
        v = malloc((size_t)found * sizeof *v);
        if (v == NULL) return PyErr_NoMemory();
        st = hash_run(h, kind, a, b, r, item, f, v, found, &found);
    }
    PyObject *res = st == NB_OK ? hit_list(v, found, user) : nbpy_error(st, what);
    if (v != stack) free(v);
    return res;
}

static PyObject *hash_query_ball_point(nbpyHash *h, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"x", "r", "category", "mask", "return_user", NULL};
    PyObject *x_o, *r_o, *cat_o = Py_None, *mask_o = Py_None;
    int user = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|$OOp:query_ball_point", kwlist, &x_o, &r_o,
                                     &cat_o, &mask_o, &user))
        return NULL;
    double x[3], r;
    nbFilter f;
    if (hash_ready(h, false) < 0 || hash_point(h, x_o, "x", x) < 0 ||
        nbpy_double(r_o, "r", &r) < 0 || nbpy_filter(cat_o, mask_o, &f) < 0)
        return NULL;
    return hash_hits(h, HASH_RADIUS, x, NULL, r, NB_HANDLE_NULL, f, user, "query_ball_point");
}

static PyObject *hash_query_box(nbpyHash *h, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"lo", "hi", "category", "mask", "return_user", NULL};
    PyObject *lo_o, *hi_o, *cat_o = Py_None, *mask_o = Py_None;
    int user = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|$OOp:query_box", kwlist, &lo_o, &hi_o, &cat_o,
                                     &mask_o, &user))
        return NULL;
    double lo[3], hi[3];
    nbFilter f;
    if (hash_ready(h, false) < 0 || hash_point(h, lo_o, "lo", lo) < 0 ||
        hash_point(h, hi_o, "hi", hi) < 0 || nbpy_filter(cat_o, mask_o, &f) < 0)
        return NULL;
    return hash_hits(h, HASH_BOX, lo, hi, 0.0, NB_HANDLE_NULL, f, user, "query_box");
}

static PyObject *hash_neighbors(nbpyHash *h, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"handle", "r", "category", "mask", "return_user", NULL};
    PyObject *handle_o, *r_o, *cat_o = Py_None, *mask_o = Py_None;
    int user = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|$OOp:neighbors", kwlist, &handle_o, &r_o,
                                     &cat_o, &mask_o, &user))
        return NULL;
    nbHandle item;
    double r;
    nbFilter f;
    if (hash_ready(h, false) < 0 || hash_handle(handle_o, &item) < 0 ||
        nbpy_double(r_o, "r", &r) < 0 || nbpy_filter(cat_o, mask_o, &f) < 0)
        return NULL;
    return hash_hits(h, HASH_NEIGHBORS, NULL, NULL, r, item, f, user, "neighbors");
}

static PyObject *hash_query(nbpyHash *h, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"x", "k", "category", "mask", "return_user", NULL};
    PyObject *x_o, *cat_o = Py_None, *mask_o = Py_None;
    int k = 1, user = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|i$OOp:query", kwlist, &x_o, &k, &cat_o, &mask_o,
                                     &user))
        return NULL;
    double x[3];
    nbFilter f;
    if (hash_ready(h, false) < 0 || hash_point(h, x_o, "x", x) < 0 ||
        nbpy_filter(cat_o, mask_o, &f) < 0)
        return NULL;
    if (k < 1) {
        PyErr_SetString(PyExc_ValueError, "k must be >= 1");
        return NULL;
    }
    nbHitNeighbor *v = malloc((size_t)k * sizeof *v);
    if (v == NULL) return PyErr_NoMemory();
    int32_t found = 0;
    nbStatus st = nb_hash_knn(h->hash, x, f, (double)INFINITY, v, k, &found);
    PyObject *res = NULL;
    if (st != NB_OK) {
        nbpy_error(st, "query");
    } else {
        npy_intp dims[1] = {found};
        PyObject *d = PyArray_SimpleNew(1, dims, NPY_DOUBLE);
        PyObject *ids = PyList_New(found);
        if (d != NULL && ids != NULL) {
            double *dd = PyArray_DATA((PyArrayObject *)d);
            for (int32_t i = 0; i < found; i++) {
                dd[i] = sqrt(v[i].dist2);
                PyObject *o =
                    PyLong_FromUnsignedLongLong(user ? v[i].hit.user : v[i].hit.handle.bits);
                if (o == NULL) break;
                PyList_SET_ITEM(ids, i, o);
            }
            if (!PyErr_Occurred()) res = Py_BuildValue("(OO)", d, ids);
        }
        Py_XDECREF(d);
        Py_XDECREF(ids);
    }
    free(v);
    return res;
}

typedef struct HitPairBuf {
    uint64_t *v;
    int64_t len, cap;
    bool user, oom;
} HitPairBuf;

static bool hit_pair_push(nbHit a, nbHit b, void *ctx)
{
    HitPairBuf *p = ctx;
    if (p->len == p->cap) {
        int64_t cap = p->cap < 1024 ? 4096 : p->cap * 2;
        uint64_t *v = realloc(p->v, (size_t)cap * 2 * sizeof *v);
        if (v == NULL) {
            p->oom = true;
            return false;
        }
        p->v = v;
        p->cap = cap;
    }
    p->v[2 * p->len] = p->user ? a.user : a.handle.bits;
    p->v[2 * p->len + 1] = p->user ? b.user : b.handle.bits;
    p->len++;
    return true;
}

static PyObject *hash_pairs(nbpyHash *h, PyObject *args, PyObject *kwds, bool count_only)
{
    static char *kwlist[] = {"r", "return_user", NULL};
    PyObject *r_o;
    int user = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$p", kwlist, &r_o, &user)) return NULL;
    double r;
    if (hash_ready(h, false) < 0 || nbpy_double(r_o, "r", &r) < 0) return NULL;
    HitPairBuf buf = {NULL, 0, 0, user != 0, false};
    int64_t count = 0;
    nbStatus st;
    h->readers++;
    PyThreadState *ts = PyEval_SaveThread();
    if (count_only)
        st = nb_hash_count_pairs(h->hash, r, &count);
    else
        st = nb_hash_visit_pairs(h->hash, r, hit_pair_push, &buf);
    PyEval_RestoreThread(ts);
    h->readers--;
    PyObject *res = NULL;
    if (buf.oom) {
        PyErr_NoMemory();
    } else if (st != NB_OK) {
        nbpy_error(st, count_only ? "count_pairs" : "query_pairs");
    } else if (count_only) {
        res = PyLong_FromLongLong((long long)count);
    } else {
        npy_intp dims[2] = {(npy_intp)buf.len, 2};
        res = PyArray_SimpleNew(2, dims, NPY_UINT64);
        if (res != NULL && buf.len > 0)
            memcpy(PyArray_DATA((PyArrayObject *)res), buf.v,
                   (size_t)buf.len * 2 * sizeof(uint64_t));
    }
    free(buf.v);
    return res;
}

static PyObject *hash_query_pairs(nbpyHash *h, PyObject *args, PyObject *kwds)
{
    return hash_pairs(h, args, kwds, false);
}

static PyObject *hash_count_pairs(nbpyHash *h, PyObject *args, PyObject *kwds)
{
    return hash_pairs(h, args, kwds, true);
}

static PyObject *hash_memory_bytes(nbpyHash *h, PyObject *unused)
{
    (void)unused;
    return PyLong_FromSize_t(nb_hash_memory_bytes(h->hash));
}

static PyObject *hash_validate(nbpyHash *h, PyObject *unused)
{
    (void)unused;
    if (hash_ready(h, false) < 0) return NULL;
    nbStatus st = nb_hash_validate(h->hash);
    if (st != NB_OK) return nbpy_error(st, "validate");
    Py_RETURN_NONE;
}

static PyObject *hash_get_cell(nbpyHash *h, void *closure)
{
    (void)closure;
    nbHashInfo info;
    if (nb_hash_info(h->hash, &info) != NB_OK) info.cell_size = 0.0;
    return PyFloat_FromDouble(info.cell_size);
}

static PyObject *hash_get_dim(nbpyHash *h, void *closure)
{
    (void)closure;
    return PyLong_FromLong(h->dim);
}

#define NBPY_KW(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS

static PyMethodDef hash_methods[] = {
    {"insert", NBPY_KW(hash_insert),
     "insert(pos, user=0, *, category=None, mask=None)\n--\n\n"
     "Stores a point with a user value (uint64) and filter bits; returns its handle (an int)."},
    {"insert_many", NBPY_KW(hash_insert_many),
     "insert_many(points, user=None)\n--\n\n"
     "Stores N points (user values default to the row numbers); returns their handles as a "
     "uint64 array. All or nothing."},
    {"move", (PyCFunction)hash_move, METH_VARARGS, "move(handle, pos)\n--\n\nMoves an item."},
    {"move_many", (PyCFunction)hash_move_many, METH_VARARGS,
     "move_many(handles, points)\n--\n\nMoves items, in row order. A bad handle or point "
     "in any row raises and moves none of them."},
    {"remove", (PyCFunction)hash_remove, METH_O,
     "remove(handle)\n--\n\nRemoves an item; its handle goes stale."},
    {"get", (PyCFunction)hash_get, METH_O,
     "get(handle)\n--\n\nThe item's position (a tuple) and user value."},
    {"clear", (PyCFunction)hash_clear, METH_NOARGS, "clear()\n--\n\nRemoves every item."},
    {"query_ball_point", NBPY_KW(hash_query_ball_point),
     "query_ball_point(x, r, *, category=None, mask=None, return_user=False)\n--\n\n"
     "Handles (or user values) of the items within distance r of x."},
    {"query_box", NBPY_KW(hash_query_box),
     "query_box(lo, hi, *, category=None, mask=None, return_user=False)\n--\n\n"
     "Handles (or user values) of the items with lo <= p <= hi."},
    {"neighbors", NBPY_KW(hash_neighbors),
     "neighbors(handle, r, *, category=None, mask=None, return_user=False)\n--\n\n"
     "The items within r of a stored item, not itself."},
    {"query", NBPY_KW(hash_query),
     "query(x, k=1, *, category=None, mask=None, return_user=False)\n--\n\n"
     "(distances, handles) of the k nearest items, nearest first."},
    {"query_pairs", NBPY_KW(hash_query_pairs),
     "query_pairs(r, *, return_user=False)\n--\n\n"
     "Every pair of items within r that pass the filter rule, as a (K, 2) uint64 array."},
    {"count_pairs", NBPY_KW(hash_count_pairs),
     "count_pairs(r)\n--\n\nThe number of pairs query_pairs would return."},
    {"memory_bytes", (PyCFunction)hash_memory_bytes, METH_NOARGS,
     "memory_bytes()\n--\n\nBytes the hash holds."},
    {"validate", (PyCFunction)hash_validate, METH_NOARGS,
     "validate()\n--\n\nChecks every invariant; RuntimeError if one is broken."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef hash_getset[] = {
    {"cell_size", (getter)hash_get_cell, NULL, "The cell edge in use.", NULL},
    {"dim", (getter)hash_get_dim, NULL, "2 or 3.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods hash_as_sequence = {
    .sq_length = (lenfunc)hash_len,
    .sq_contains = (objobjproc)hash_contains,
};

PyTypeObject nbpy_HashType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nearby._nearby._Hash",
    .tp_basicsize = sizeof(nbpyHash),
    .tp_dealloc = (destructor)hash_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C core of nearby.Hash.",
    .tp_methods = hash_methods,
    .tp_getset = hash_getset,
    .tp_as_sequence = &hash_as_sequence,
    .tp_init = (initproc)hash_init,
    .tp_new = PyType_GenericNew,
};
