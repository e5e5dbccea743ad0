// SPDX-License-Identifier: MIT
// nearby._nearby._Tiles: a thin class over the tile grid (entities by group that move, stored by
// handle, and static waypoints with 64-bit ids). Handles are Python ints (the nbHandle's 64
// bits). An entity's category is its group's bit and its mask what it finds, as in tiles.h.
// An entity's user value is any Python object: the grid's 64-bit user value holds a strong
// reference to it, dropped on remove and when the grid is freed (every entity is found by
// visiting the tiles, except those whose mask is 0, which no filter reaches: their handles are
// kept in `muted`).
//
// Every call is small and holds the GIL (as the hash's small calls do): the object references
// in the grid are touched only with the GIL held.
#include "nbpy.h"

#include <math.h>
#include <nearby/tiles.h>
#include <stdlib.h>
#include <string.h>

// Invariants: tiles is NULL only before __init__; every entity's user value is a PyObject * the
// grid owns one reference to; muted holds the handles (ints) of the live entities with mask 0.
typedef struct nbpyTiles {
    PyObject_HEAD nbTiles *tiles;
    int32_t dim;
    PyObject *muted;
} nbpyTiles;

static bool drop_user(nbHit hit, void *unused)
{
    (void)unused;
    Py_DECREF((PyObject *)(uintptr_t)hit.user);
    return true;
}

static void tiles_dealloc(nbpyTiles *t)
{
    if (t->tiles != NULL) {
        nbTilesInfo info;
        nb_tiles_info(t->tiles, &info);
        for (int32_t i = 0; i < info.tiles; i++)
            nb_tiles_visit_tile(t->tiles, i, NB_FILTER_ALL, drop_user, NULL);
        PyObject *it = t->muted != NULL ? PyObject_GetIter(t->muted) : NULL, *h;
        while (it != NULL && (h = PyIter_Next(it)) != NULL) {
            uint64_t user;
            if (nb_tiles_get(t->tiles, (nbHandle){PyLong_AsUnsignedLongLong(h)}, NULL, &user,
                             NULL) == NB_OK)
                Py_DECREF((PyObject *)(uintptr_t)user);
            Py_DECREF(h);
        }
        Py_XDECREF(it);
        PyErr_Clear();
        nb_tiles_destroy(t->tiles);
    }
    Py_XDECREF(t->muted);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

// A pair of numbers (or one number for both axes) into out[2].
static int tiles_pair_d(PyObject *obj, const char *name, double out[2])
{
    if (PyTuple_Check(obj) || PyList_Check(obj)) {
        if (PySequence_Size(obj) != 2) {
            PyErr_Format(PyExc_ValueError, "%s must have 2 entries (the tiled axes)", name);
            return -1;
        }
        for (int i = 0; i < 2; i++) {
            PyObject *v = PySequence_GetItem(obj, i);
            if (v == NULL) return -1;
            int rc = nbpy_double(v, name, &out[i]);
            Py_DECREF(v);
            if (rc < 0) return -1;
        }
        return 0;
    }
    if (nbpy_double(obj, name, &out[0]) < 0) return -1;
    out[1] = out[0];
    return 0;
}

static int tiles_pair_i(PyObject *obj, const char *name, int32_t out[2])
{
    double d[2];
    if (tiles_pair_d(obj, name, d) < 0) return -1;
    for (int i = 0; i < 2; i++) {
        if (!(d[i] >= 1.0 && d[i] <= (double)NB_TILES_MAX_TILES) || d[i] != floor(d[i])) {
            PyErr_Format(PyExc_ValueError, "%s must be whole numbers in [1, %d]", name,
                         NB_TILES_MAX_TILES);
            return -1;
        }
        out[i] = (int32_t)d[i];
    }
    return 0;
}

static int tiles_init(nbpyTiles *t, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"origin", "size", "tiles", "tile_size", "groups", "dim", NULL};
    PyObject *origin_o, *size_o, *count_o = Py_None, *edge_o = Py_None;
    int groups = 1, dim = 2;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|OOii:Tiles", kwlist, &origin_o, &size_o,
                                     &count_o, &edge_o, &groups, &dim))
        return -1;
    if (t->tiles != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Tiles.__init__ may be called only once");
        return -1;
    }
    nbTilesDesc desc = {0};
    if (tiles_pair_d(origin_o, "origin", desc.origin) < 0 ||
        tiles_pair_d(size_o, "size", desc.size) < 0)
        return -1;
    if (count_o != Py_None && tiles_pair_i(count_o, "tiles", desc.tile_count) < 0) return -1;
    if (edge_o != Py_None && tiles_pair_d(edge_o, "tile_size", desc.tile_size) < 0) return -1;
    if (count_o == Py_None && edge_o == Py_None) {
        PyErr_SetString(PyExc_ValueError, "give tiles (per axis) or tile_size");
        return -1;
    }
    if (dim != 2 && dim != 3) {
        PyErr_SetString(PyExc_ValueError, "dim must be 2 or 3");
        return -1;
    }
    if (groups < 1 || groups > NB_TILES_MAX_GROUPS) {
        PyErr_Format(PyExc_ValueError, "groups must be in [1, %d]", NB_TILES_MAX_GROUPS);
        return -1;
    }
    desc.dim = dim;
    desc.groups = groups;
    desc.allocator = &nbpy_allocator;
    t->muted = PySet_New(NULL);
    if (t->muted == NULL) return -1;
    nbStatus st = nb_tiles_create(&desc, &t->tiles);
    if (st != NB_OK) return nbpy_error(st, "Tiles"), -1;
    t->dim = dim;
    return 0;
}

static int tiles_ready(nbpyTiles *t)
{
    if (t->tiles != NULL) return 0;
    PyErr_SetString(PyExc_RuntimeError, "Tiles was not initialised");
    return -1;
}

static int tiles_handle(PyObject *obj, nbHandle *out)
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

static int tiles_point(nbpyTiles *t, PyObject *obj, const char *name, double *out)
{
    int fast = nbpy_point_fast(obj, t->dim, out);
    if (fast != 0) return fast < 0 ? -1 : 0;
    PyArrayObject *a = nbpy_as_double(obj, NPY_ARRAY_CARRAY_RO, name);
    if (a == NULL) return -1;
    if (PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) != t->dim) {
        PyErr_Format(PyExc_ValueError, "%s must have shape (%d,)", name, t->dim);
        Py_DECREF(a);
        return -1;
    }
    memcpy(out, PyArray_DATA(a), (size_t)t->dim * sizeof(double));
    Py_DECREF(a);
    return 0;
}

static PyObject *tiles_insert(nbpyTiles *t, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"pos", "user", "category", "mask", NULL};
    PyObject *pos_o, *user = Py_None, *cat_o = NULL, *mask_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O$OO:insert", kwlist, &pos_o, &user, &cat_o,
                                     &mask_o))
        return NULL;
    double pos[3];
    nbFilter f;
    if (tiles_ready(t) < 0 || tiles_point(t, pos_o, "pos", pos) < 0 ||
        nbpy_filter(cat_o != NULL ? cat_o : Py_None, mask_o, &f) < 0)
        return NULL;
    if (cat_o == NULL) f.category = 1u; // group 0
    nbHandle handle;
    nbStatus st = nb_tiles_insert(t->tiles, pos, (uint64_t)(uintptr_t)user, f, &handle);
    if (st != NB_OK) return nbpy_error(st, "insert");
    PyObject *h = PyLong_FromUnsignedLongLong(handle.bits);
    if (h == NULL || (f.mask == 0 && PySet_Add(t->muted, h) < 0)) {
        Py_XDECREF(h);
        nb_tiles_remove(t->tiles, handle);
        return NULL;
    }
    Py_INCREF(user);
    return h;
}

static PyObject *tiles_move(nbpyTiles *t, PyObject *args)
{
    PyObject *handle_o, *pos_o;
    if (!PyArg_ParseTuple(args, "OO:move", &handle_o, &pos_o)) return NULL;
    nbHandle handle;
    double pos[3];
    if (tiles_ready(t) < 0 || tiles_handle(handle_o, &handle) < 0 ||
        tiles_point(t, pos_o, "pos", pos) < 0)
        return NULL;
    nbStatus st = nb_tiles_move(t->tiles, handle, pos);
    if (st != NB_OK) return nbpy_error(st, "move");
    Py_RETURN_NONE;
}

static PyObject *tiles_remove(nbpyTiles *t, PyObject *handle_o)
{
    nbHandle handle;
    uint64_t user;
    if (tiles_ready(t) < 0 || tiles_handle(handle_o, &handle) < 0) return NULL;
    nbStatus st = nb_tiles_get(t->tiles, handle, NULL, &user, NULL);
    if (st == NB_OK) st = nb_tiles_remove(t->tiles, handle);
    if (st != NB_OK) return nbpy_error(st, "remove");
    Py_DECREF((PyObject *)(uintptr_t)user);
    if (PySet_Discard(t->muted, handle_o) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *tiles_get(nbpyTiles *t, PyObject *handle_o)
{
    nbHandle handle;
    if (tiles_ready(t) < 0 || tiles_handle(handle_o, &handle) < 0) return NULL;
    double pos[3];
    nbFilter f;
    uint64_t user;
    nbStatus st = nb_tiles_get(t->tiles, handle, pos, &user, &f);
    if (st != NB_OK) return nbpy_error(st, "get");
    PyObject *p = t->dim == 2 ? Py_BuildValue("(dd)", pos[0], pos[1])
                              : Py_BuildValue("(ddd)", pos[0], pos[1], pos[2]);
    if (p == NULL) return NULL;
    return Py_BuildValue("(NOkk)", p, (PyObject *)(uintptr_t)user, (unsigned long)f.category,
                         (unsigned long)f.mask);
}

static int tiles_contains(nbpyTiles *t, PyObject *handle_o)
{
    if (t->tiles == NULL || !PyLong_Check(handle_o)) return 0;
    unsigned long long bits = PyLong_AsUnsignedLongLong(handle_o);
    if (bits == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return nb_tiles_get(t->tiles, (nbHandle){bits}, NULL, NULL, NULL) == NB_OK;
}

static Py_ssize_t tiles_len(nbpyTiles *t)
{
    return nb_tiles_count(t->tiles);
}

// Collects hits into a list: the entities' user objects, or the waypoints' ids as ints.
typedef struct HitList {
    PyObject *list;
    bool ids;
} HitList;

static bool hit_append(nbHit hit, void *ctx)
{
    HitList *h = ctx;
    PyObject *o;
    if (h->ids) {
        o = PyLong_FromUnsignedLongLong(hit.user);
        if (o == NULL) return false;
    } else {
        o = (PyObject *)(uintptr_t)hit.user;
        Py_INCREF(o);
    }
    int rc = PyList_Append(h->list, o);
    Py_DECREF(o);
    return rc == 0;
}

// The hits of one query (radius, neighbours of a handle, waypoints) as a list.
enum { NBPY_RADIUS, NBPY_NEIGHBORS, NBPY_WAYPOINTS };

static PyObject *tiles_within(nbpyTiles *t, int kind, PyObject *at_o, PyObject *r_o,
                              PyObject *cat_o, PyObject *mask_o)
{
    static const char *what[] = {"query_radius", "neighbors", "waypoints_within"};
    double c[3], r;
    nbHandle handle = NB_HANDLE_NULL;
    nbFilter f = NB_FILTER_ALL;
    if (tiles_ready(t) < 0 ||
        (kind == NBPY_NEIGHBORS ? tiles_handle(at_o, &handle) : tiles_point(t, at_o, "center", c)) <
            0 ||
        nbpy_double(r_o, "r", &r) < 0 ||
        (kind != NBPY_WAYPOINTS && nbpy_filter(cat_o, mask_o, &f) < 0))
        return NULL;
    HitList h = {PyList_New(0), kind == NBPY_WAYPOINTS};
    if (h.list == NULL) return NULL;
    nbStatus st = kind == NBPY_WAYPOINTS ? nb_tiles_visit_waypoints(t->tiles, c, r, hit_append, &h)
                  : kind == NBPY_RADIUS
                      ? nb_tiles_visit_radius(t->tiles, c, r, f, hit_append, &h)
                      : nb_tiles_visit_neighbors(t->tiles, handle, r, f, hit_append, &h);
    if (PyErr_Occurred()) {
        Py_DECREF(h.list);
        return NULL;
    }
    if (st != NB_OK) {
        Py_DECREF(h.list);
        return nbpy_error(st, what[kind]);
    }
    return h.list;
}

static PyObject *tiles_query_radius(nbpyTiles *t, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"center", "r", "category", "mask", NULL};
    PyObject *c_o, *r_o, *cat_o = Py_None, *mask_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|$OO:query_radius", kwlist, &c_o, &r_o, &cat_o,
                                     &mask_o))
        return NULL;
    return tiles_within(t, NBPY_RADIUS, c_o, r_o, cat_o, mask_o);
}

static PyObject *tiles_neighbors(nbpyTiles *t, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"handle", "r", "category", "mask", NULL};
    PyObject *h_o, *r_o, *cat_o = Py_None, *mask_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|$OO:neighbors", kwlist, &h_o, &r_o, &cat_o,
                                     &mask_o))
        return NULL;
    return tiles_within(t, NBPY_NEIGHBORS, h_o, r_o, cat_o, mask_o);
}

static PyObject *tiles_waypoints_within(nbpyTiles *t, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"center", "r", NULL};
    PyObject *c_o, *r_o;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:waypoints_within", kwlist, &c_o, &r_o))
        return NULL;
    return tiles_within(t, NBPY_WAYPOINTS, c_o, r_o, NULL, NULL);
}

// Collects kNN answers into a list of (user, distance): the entities' user objects, or the
// waypoints' ids as ints.
static bool knn_append(nbHit hit, double dist2, void *ctx)
{
    HitList *h = ctx;
    PyObject *pair = h->ids ? Py_BuildValue("(Kd)", (unsigned long long)hit.user, sqrt(dist2))
                            : Py_BuildValue("(Od)", (PyObject *)(uintptr_t)hit.user, sqrt(dist2));
    if (pair == NULL) return false;
    int rc = PyList_Append(h->list, pair);
    Py_DECREF(pair);
    return rc == 0;
}

static PyObject *tiles_knn_common(nbpyTiles *t, bool waypoints, PyObject *pos_o, int k,
                                  PyObject *cat_o, PyObject *mask_o, PyObject *max_o)
{
    double pos[3], max_distance = (double)INFINITY;
    nbFilter f = NB_FILTER_ALL;
    if (tiles_ready(t) < 0 || tiles_point(t, pos_o, "pos", pos) < 0 ||
        (!waypoints && nbpy_filter(cat_o, mask_o, &f) < 0) ||
        (max_o != NULL && nbpy_double(max_o, "max_distance", &max_distance) < 0))
        return NULL;
    HitList h = {PyList_New(0), waypoints};
    if (h.list == NULL) return NULL;
    nbStatus st = waypoints
                      ? nb_tiles_visit_knn_waypoints(t->tiles, pos, max_distance, k, knn_append, &h)
                      : nb_tiles_visit_knn(t->tiles, pos, f, max_distance, k, knn_append, &h);
    if (PyErr_Occurred()) {
        Py_DECREF(h.list);
        return NULL;
    }
    if (st != NB_OK) {
        Py_DECREF(h.list);
        return nbpy_error(st, waypoints ? "knn_waypoints" : "knn");
    }
    return h.list;
}

static PyObject *tiles_knn(nbpyTiles *t, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"pos", "k", "category", "mask", "max_distance", NULL};
    PyObject *pos_o, *cat_o = Py_None, *mask_o = Py_None, *max_o = NULL;
    int k = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|i$OOO:knn", kwlist, &pos_o, &k, &cat_o, &mask_o,
                                     &max_o))
        return NULL;
    return tiles_knn_common(t, false, pos_o, k, cat_o, mask_o, max_o);
}

static PyObject *tiles_knn_waypoints(nbpyTiles *t, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"pos", "k", "max_distance", NULL};
    PyObject *pos_o, *max_o = NULL;
    int k = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|i$O:knn_waypoints", kwlist, &pos_o, &k, &max_o))
        return NULL;
    return tiles_knn_common(t, true, pos_o, k, NULL, NULL, max_o);
}

static PyObject *tiles_add_waypoints(nbpyTiles *t, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"points", "ids", NULL};
    PyObject *pts_o, *ids_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:add_waypoints", kwlist, &pts_o, &ids_o))
        return NULL;
    if (tiles_ready(t) < 0) return NULL;
    PyArrayObject *pts = nbpy_as_double(pts_o, NPY_ARRAY_CARRAY_RO, "points");
    if (pts == NULL) return NULL;
    if (PyArray_NDIM(pts) != 2 || PyArray_DIM(pts, 1) != t->dim ||
        PyArray_DIM(pts, 0) > (1 << 28)) {
        PyErr_Format(PyExc_ValueError, "points must have shape (N, %d)", t->dim);
        Py_DECREF(pts);
        return NULL;
    }
    npy_intp n = PyArray_DIM(pts, 0);
    PyArrayObject *ids = NULL;
    if (ids_o != Py_None) {
        ids = (PyArrayObject *)PyArray_FROMANY(ids_o, NPY_UINT64, 1, 1, NPY_ARRAY_CARRAY_RO);
        if (ids == NULL || PyArray_DIM(ids, 0) != n) {
            if (ids != NULL) PyErr_SetString(PyExc_ValueError, "ids must have one entry per point");
            Py_XDECREF(ids);
            Py_DECREF(pts);
            return NULL;
        }
    }
    nbStatus st = nb_tiles_add_waypoints(t->tiles, PyArray_DATA(pts),
                                         ids != NULL ? PyArray_DATA(ids) : NULL, (int32_t)n);
    Py_XDECREF(ids);
    Py_DECREF(pts);
    if (st != NB_OK) return nbpy_error(st, "add_waypoints");
    Py_RETURN_NONE;
}

static PyObject *tiles_validate(nbpyTiles *t, PyObject *unused)
{
    (void)unused;
    if (tiles_ready(t) < 0) return NULL;
    nbStatus st = nb_tiles_validate(t->tiles);
    if (st != NB_OK) return nbpy_error(st, "validate");
    Py_RETURN_NONE;
}

static PyObject *tiles_get_dim(nbpyTiles *t, void *closure)
{
    (void)closure;
    return PyLong_FromLong(t->dim);
}

static PyObject *tiles_get_waypoints(nbpyTiles *t, void *closure)
{
    (void)closure;
    return PyLong_FromLong(nb_tiles_waypoint_count(t->tiles));
}

#define NBPY_KW(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS

static PyMethodDef tiles_methods[] = {
    {"insert", NBPY_KW(tiles_insert),
     "insert(pos, user=None, *, category=1, mask=None)\n--\n\n"
     "Stores an entity with any Python object as its user value; category is its group's bit "
     "(1 << g), mask what it finds (None: everything). Returns its handle (an int)."},
    {"move", (PyCFunction)tiles_move, METH_VARARGS, "move(handle, pos)\n--\n\nMoves an entity."},
    {"remove", (PyCFunction)tiles_remove, METH_O,
     "remove(handle)\n--\n\nRemoves an entity; its handle goes stale."},
    {"get", (PyCFunction)tiles_get, METH_O,
     "get(handle)\n--\n\nThe entity's position (a tuple), user value, category and mask."},
    {"query_radius", NBPY_KW(tiles_query_radius),
     "query_radius(center, r, *, category=None, mask=None)\n--\n\n"
     "User values of the entities within r of center that pass the filter (mask: the groups "
     "searched, 1 << g each; None: all)."},
    {"neighbors", NBPY_KW(tiles_neighbors),
     "neighbors(handle, r, *, category=None, mask=None)\n--\n\n"
     "User values of the entities within r of a stored one, itself left out, that pass the "
     "filter."},
    {"knn", NBPY_KW(tiles_knn),
     "knn(pos, k=1, *, category=None, mask=None, max_distance=inf)\n--\n\n"
     "[(user, distance)] of the k nearest entities that pass the filter within max_distance, "
     "nearest first. The nearest other than a stored entity: k=2 from its position, skipping "
     "it."},
    {"add_waypoints", NBPY_KW(tiles_add_waypoints),
     "add_waypoints(points, ids=None)\n--\n\n"
     "Adds static waypoints (N, dim) with uint64 ids (default: their numbers in the order "
     "added). All or nothing."},
    {"knn_waypoints", NBPY_KW(tiles_knn_waypoints),
     "knn_waypoints(pos, k=1, *, max_distance=inf)\n--\n\n"
     "[(id, distance)] of the k nearest waypoints within max_distance, nearest first."},
    {"waypoints_within", NBPY_KW(tiles_waypoints_within),
     "waypoints_within(center, r)\n--\n\nIds of the waypoints within r of center."},
    {"validate", (PyCFunction)tiles_validate, METH_NOARGS,
     "validate()\n--\n\nChecks every invariant; RuntimeError if one is broken."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef tiles_getset[] = {
    {"dim", (getter)tiles_get_dim, NULL, "2 or 3.", NULL},
    {"waypoint_count", (getter)tiles_get_waypoints, NULL, "Number of waypoints.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods tiles_as_sequence = {
    .sq_length = (lenfunc)tiles_len,
    .sq_contains = (objobjproc)tiles_contains,
};

PyTypeObject nbpy_TilesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nearby._nearby._Tiles",
    .tp_basicsize = sizeof(nbpyTiles),
    .tp_dealloc = (destructor)tiles_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C core of nearby.Tiles.",
    .tp_methods = tiles_methods,
    .tp_getset = tiles_getset,
    .tp_as_sequence = &tiles_as_sequence,
    .tp_init = (initproc)tiles_init,
    .tp_new = PyType_GenericNew,
};
