// SPDX-License-Identifier: MIT
// nearby._nearby._Quadtree: a thin class over the quadtree of rectangles, built once from an
// (N, 4) array of minx, miny, maxx, maxy; rectangle i carries the user value i, so every result
// names rectangles by row. The Python class (nearby.Quadtree) sorts what these return.
#include "nbpy.h"

#include <math.h>
#include <nearby/quadtree.h>
#include <stdlib.h>
#include <string.h>

typedef struct nbpyQuadtree {
    PyObject_HEAD nbQuadtree *tree;
    int32_t n;
} nbpyQuadtree;

static void qt_dealloc(nbpyQuadtree *q)
{
    nb_quadtree_destroy(q->tree);
    Py_TYPE(q)->tp_free((PyObject *)q);
}

static int qt_init(nbpyQuadtree *q, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"rects", NULL};
    PyObject *rects_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:Quadtree", kwlist, &rects_o)) return -1;
    if (q->tree != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Quadtree.__init__ may be called only once");
        return -1;
    }
    PyArrayObject *a = nbpy_as_double(rects_o, NPY_ARRAY_CARRAY_RO, "rects");
    if (a == NULL) return -1;
    if (PyArray_NDIM(a) != 2 || PyArray_DIM(a, 1) != 4 || PyArray_DIM(a, 0) > (1 << 28)) {
        PyErr_SetString(PyExc_ValueError,
                        "rects must have shape (N, 4): minx, miny, maxx, maxy, N <= 2**28");
        Py_DECREF(a);
        return -1;
    }
    int32_t n = (int32_t)PyArray_DIM(a, 0);
    nbQuadtreeDesc desc = {0};
    desc.allocator = &nbpy_allocator;
    nbQuadtree *tree = NULL;
    nbStatus st = nb_quadtree_create(&desc, &tree);
    // Each row is min[0], min[1], max[0], max[1]: the layout of nbRect.
    if (st == NB_OK)
        st = nb_quadtree_build(tree, (const nbRect *)PyArray_DATA(a), n, NULL, NULL, NULL);
    Py_DECREF(a);
    if (st != NB_OK) {
        nb_quadtree_destroy(tree);
        nbpy_error(st, "rects");
        return -1;
    }
    q->tree = tree;
    q->n = n;
    return 0;
}

static int qt_ready(nbpyQuadtree *q)
{
    if (q->tree != NULL) return 0;
    PyErr_SetString(PyExc_RuntimeError, "Quadtree was not initialised");
    return -1;
}

// A growable array of intp values: the hits (or pairs) a callback collects.
typedef struct Collect {
    npy_intp *v;
    npy_intp len, cap;
    bool oom;
} Collect;

static bool collect_push(Collect *c, npy_intp x)
{
    if (c->len == c->cap) {
        npy_intp cap = c->cap ? c->cap * 2 : 64;
        npy_intp *v = (npy_intp *)realloc(c->v, (size_t)cap * sizeof *v);
        if (v == NULL) {
            c->oom = true;
            return false;
        }
        c->v = v;
        c->cap = cap;
    }
    c->v[c->len++] = x;
    return true;
}

static bool collect_hit(nbHit hit, void *user)
{
    return collect_push((Collect *)user, (npy_intp)hit.user);
}

static bool collect_pair(nbHit a, nbHit b, void *user)
{
    npy_intp i = (npy_intp)a.user, j = (npy_intp)b.user;
    return collect_push((Collect *)user, i < j ? i : j) &&
           collect_push((Collect *)user, i < j ? j : i);
}

// The collected values as a new intp array of shape (len / width, width) (or (len,) for 1).
static PyObject *collect_array(Collect *c, nbStatus st, int width)
{
    if (c->oom) st = NB_ERR_OUT_OF_MEMORY;
    if (st != NB_OK) {
        free(c->v);
        return nbpy_error(st, width == 1 ? "window" : "overlaps");
    }
    npy_intp dims[2] = {c->len / width, width};
    PyObject *out = PyArray_SimpleNew(width == 1 ? 1 : 2, dims, NPY_INTP);
    if (out != NULL && c->len > 0)
        memcpy(PyArray_DATA((PyArrayObject *)out), c->v, (size_t)c->len * sizeof *c->v);
    free(c->v);
    return out;
}

static PyObject *qt_query_window(nbpyQuadtree *q, PyObject *args)
{
    double w[4];
    if (qt_ready(q) < 0 ||
        !PyArg_ParseTuple(args, "(dddd):query_window", &w[0], &w[1], &w[2], &w[3]))
        return NULL;
    nbBox window = {{w[0], w[1]}, {w[2], w[3]}};
    Collect c = {0};
    nbStatus st = nb_quadtree_visit_box(q->tree, &window, NB_FILTER_ALL, collect_hit, &c);
    return collect_array(&c, st, 1);
}

static PyObject *qt_overlaps(nbpyQuadtree *q, PyObject *unused)
{
    (void)unused;
    if (qt_ready(q) < 0) return NULL;
    Collect c = {0};
    nbStatus st;
    Py_BEGIN_ALLOW_THREADS st = nb_quadtree_visit_pairs(q->tree, collect_pair, &c);
    Py_END_ALLOW_THREADS return collect_array(&c, st, 2);
}

static PyObject *qt_ray_cast(nbpyQuadtree *q, PyObject *args)
{
    double o[2], d[2], max_distance = (double)INFINITY;
    if (qt_ready(q) < 0 ||
        !PyArg_ParseTuple(args, "(dd)(dd)|d:ray_cast", &o[0], &o[1], &d[0], &d[1], &max_distance))
        return NULL;
    nbRayHit hit;
    int32_t found = 0;
    nbStatus st = nb_quadtree_raycast(q->tree, o, d, max_distance, NB_FILTER_ALL, &hit, &found);
    if (st != NB_OK) return nbpy_error(st, "ray_cast");
    if (found == 0) return Py_BuildValue("(nd)", (Py_ssize_t)-1, (double)INFINITY);
    return Py_BuildValue("(nd)", (Py_ssize_t)hit.hit.user, hit.t);
}

static PyObject *qt_get_n(nbpyQuadtree *q, void *closure)
{
    (void)closure;
    return PyLong_FromLong(q->n);
}

static PyMethodDef qt_methods[] = {
    {"_query_window", (PyCFunction)qt_query_window, METH_VARARGS,
     "Indices of the rectangles touching a closed window (minx, miny, maxx, maxy), unsorted."},
    {"_overlaps", (PyCFunction)qt_overlaps, METH_NOARGS,
     "(M, 2) intp pairs i < j of touching rectangles, unsorted."},
    {"_ray_cast", (PyCFunction)qt_ray_cast, METH_VARARGS,
     "(index, distance) of the first rectangle a ray hits, or (-1, inf)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef qt_getset[] = {
    {"n", (getter)qt_get_n, NULL, "Number of rectangles.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject nbpy_QuadtreeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nearby._nearby._Quadtree",
    .tp_basicsize = sizeof(nbpyQuadtree),
    .tp_dealloc = (destructor)qt_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C core of nearby.Quadtree.",
    .tp_methods = qt_methods,
    .tp_getset = qt_getset,
    .tp_init = (initproc)qt_init,
    .tp_new = PyType_GenericNew,
};
