// SPDX-License-Identifier: MIT
// nearby._nearby._Grid: the dense grid over a numpy array, with cKDTree's query methods.
//
// The points are read where they lie (any row stride; float64, aligned, native byte order);
// anything else is converted once, at construction. With neither radius nor cell_size given,
// the grid is built lazily, tuned to the queries it gets: a radius query at r uses a grid
// built for about r (cells within [r / 2, 1.25 r]), a kNN query one with about k points a cell.
// Each built grid is kept (up to NBPY_MAX_GRIDS) and never changed again, so queries on it can
// run without the GIL while another thread builds the next one under the grid's lock.
#include "nbpy.h"

#include <float.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NBPY_MAX_GRIDS 8
#define NBPY_MAX_PARTS 256

// Invariants: data holds the points that view reads (kept alive as long as the object); grids
// [0, count) are built from view and never modified until dealloc; tuned[i] is the radius
// grid i was built for; fixed = 1 means one grid, built at construction, answers every query.
typedef struct nbpyGrid {
    PyObject_HEAD PyArrayObject *data;
    PyArrayObject *category;
    PyArrayObject *mask;
    nbPoints view;
    int32_t n;
    int32_t dim;
    double spacing;       // distance between neighbouring points where they are (> 0): see
                          // grid_local_spacing; floors the cells of radius queries
    double knn_spacing;   // the same at the 3rd quartile of the sample's nearest distances (> 0):
                          // sizes the grids for kNN, which must also reach the sparse regions
    double dense_spacing; // the same at the 1st decile (> 0): where most pairs are; floors the
                          // cells of all-pairs walks
    double box_spacing;   // the bounding box's mean spacing (> 0): the cells of 3D kNN grids
    double lo[3], hi[3];  // the points' bounding box (0 when there are none): ball_depth
    double floor_abs;     // the smallest spacing the coordinates allow (max |x| * 2^-40)
    int spacing_known;    // 0: spacing and knn_spacing are still the bounding box's mean spacing
                          // (grid_spacings computes the local ones on first need)
    double period[3];     // nbGridDesc.period: 0 = the axis does not wrap (boxsize=None: all 0)
    double half;          // the smallest period / 2 over the periodic axes; infinity when none
    int fixed;
    int count;
    nbGrid *grids[NBPY_MAX_GRIDS];
    double tuned[NBPY_MAX_GRIDS];
    PyThread_type_lock lock;
} nbpyGrid;

// Point i of a view.
static const double *point_at(const nbPoints *pts, int32_t i)
{
    return (const double *)((const char *)pts->data + (size_t)i * pts->stride);
}

static PyObject *grid_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)args;
    (void)kwds;
    nbpyGrid *g = (nbpyGrid *)type->tp_alloc(type, 0);
    if (g == NULL) return NULL;
    g->lock = PyThread_allocate_lock();
    if (g->lock == NULL) {
        Py_DECREF(g);
        return PyErr_NoMemory();
    }
    return (PyObject *)g;
}

static void grid_dealloc(nbpyGrid *g)
{
    for (int i = 0; i < g->count; i++) nb_grid_destroy(g->grids[i]);
    Py_XDECREF(g->data);
    Py_XDECREF(g->category);
    Py_XDECREF(g->mask);
    if (g->lock != NULL) PyThread_free_lock(g->lock);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

// The points as an (N, 2) or (N, 3) float64 array nbPoints can read in place: column stride 8,
// row stride a multiple of 8 and at least a row, aligned, native byte order. Anything else
// (float32, ints, Fortran order, negative or zero strides, byte-swapped) is copied once.
static PyArrayObject *grid_points(PyObject *obj)
{
    PyArrayObject *a = nbpy_as_double(obj, 0, "points");
    if (a == NULL) return NULL;
    if (PyArray_NDIM(a) != 2 || (PyArray_DIM(a, 1) != 2 && PyArray_DIM(a, 1) != 3)) {
        PyErr_Format(PyExc_ValueError,
                     "points must have shape (N, 2) or (N, 3), got an array of ndim %d%s",
                     PyArray_NDIM(a), PyArray_NDIM(a) == 2 ? " with another second axis" : "");
        Py_DECREF(a);
        return NULL;
    }
    if (PyArray_DIM(a, 0) > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "points: at most 2**31 - 1 points");
        Py_DECREF(a);
        return NULL;
    }
    npy_intp dim = PyArray_DIM(a, 1), s0 = PyArray_STRIDE(a, 0), s1 = PyArray_STRIDE(a, 1);
    bool readable = PyArray_ISALIGNED(a) && PyArray_ISNOTSWAPPED(a) && s1 == 8 &&
                    (PyArray_DIM(a, 0) <= 1 || (s0 >= 8 * dim && s0 % 8 == 0));
    if (readable) return a;
    PyArrayObject *c = (PyArrayObject *)PyArray_FROM_OTF(
        (PyObject *)a, NPY_DOUBLE, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_ENSURECOPY);
    Py_DECREF(a);
    return c;
}

// A uint32 array of n entries from the Python side (which converts and range-checks), or None.
static int grid_bits(PyObject *obj, const char *name, npy_intp n, PyArrayObject **out)
{
    *out = NULL;
    if (obj == NULL || obj == Py_None) return 0;
    if (!PyArray_Check(obj) || PyArray_TYPE((PyArrayObject *)obj) != NPY_UINT32 ||
        PyArray_NDIM((PyArrayObject *)obj) != 1 || !PyArray_ISCARRAY_RO((PyArrayObject *)obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous uint32 array", name);
        return -1;
    }
    if (PyArray_DIM((PyArrayObject *)obj, 0) != n) {
        PyErr_Format(PyExc_ValueError, "%s must have one entry per point (%zd), got %zd", name,
                     (Py_ssize_t)n, (Py_ssize_t)PyArray_DIM((PyArrayObject *)obj, 0));
        return -1;
    }
    Py_INCREF(obj);
    *out = (PyArrayObject *)obj;
    return 0;
}

// One pass over the points: the first non-finite one (or -1), the bounding box and max |x|.
static int64_t grid_scan(const nbPoints *v, double *lo, double *hi, double *maxabs)
{
    double l[3] = {(double)INFINITY, (double)INFINITY, (double)INFINITY};
    double h[3] = {-(double)INFINITY, -(double)INFINITY, -(double)INFINITY};
    const int dim = v->dim;
    *maxabs = 0.0;
    // Branch-free min / max over blocks; `bad` sums the block's coordinates, which is finite
    // unless one is NaN or infinite (or the sum overflows: a block of coordinates beyond 1e304),
    // and the block is then searched again for a non-finite one. (A NaN may leave NaN in the
    // box, which then goes unused: the points are refused.)
    for (int32_t b = 0; b < v->count; b += 4096) {
        int32_t e = v->count - b < 4096 ? v->count : b + 4096;
        double bad = 0.0;
        int32_t i = b;
#if defined(__SSE2__)
        // SSE2, any row stride: x and y of a point in one register, z (3D) in the low lane of a
        // second; four points a step, each into its own running min, max and sum, so that no
        // step waits on the one before (a single chain ran at a third of the speed). Each running
        // value is updated in place from the point's register (min(lo, x), not min(x, lo); the
        // sum, not x - x), so SSE2's two-operand instructions need no copies, and the rows are
        // walked by a pointer stepped by the stride, 2D and 3D in loops of their own. This scan
        // is the binding's one pass of its own over the points: with the copies and each row's
        // address computed anew it took 11.8 instructions a 2D point (4.5% of those of
        // Grid(x).count_pairs(r) on 200k points), now 5.3.
        __m128d lo_xy[4], hi_xy[4], bad_xy[4], lo_z[4], hi_z[4], bad_z[4];
        for (int u = 0; u < 4; u++) {
            lo_xy[u] = _mm_loadu_pd(l);
            hi_xy[u] = _mm_loadu_pd(h);
            lo_z[u] = _mm_set1_pd(l[2]);
            hi_z[u] = _mm_set1_pd(h[2]);
            bad_xy[u] = bad_z[u] = _mm_setzero_pd();
        }
        const size_t stride = v->stride;
        const char *row = (const char *)point_at(v, i);
        if (dim == 2) {
            for (; i + 4 <= e; i += 4, row += 4 * stride) {
                for (int u = 0; u < 4; u++) {
                    const __m128d xy =
                        _mm_loadu_pd((const double *)(const void *)(row + u * stride));
                    bad_xy[u] = _mm_add_pd(bad_xy[u], xy);
                    lo_xy[u] = _mm_min_pd(lo_xy[u], xy); // as l < x ? l : x
                    hi_xy[u] = _mm_max_pd(hi_xy[u], xy);
                }
            }
        } else {
            for (; i + 4 <= e; i += 4, row += 4 * stride) {
                for (int u = 0; u < 4; u++) {
                    const double *p = (const double *)(const void *)(row + u * stride);
                    const __m128d xy = _mm_loadu_pd(p), z = _mm_load_sd(p + 2); // z, 0
                    bad_xy[u] = _mm_add_pd(bad_xy[u], xy);
                    lo_xy[u] = _mm_min_pd(lo_xy[u], xy);
                    hi_xy[u] = _mm_max_pd(hi_xy[u], xy);
                    bad_z[u] = _mm_add_pd(bad_z[u], z);
                    lo_z[u] = _mm_min_pd(lo_z[u], z);
                    hi_z[u] = _mm_max_pd(hi_z[u], z);
                }
            }
        }
        for (int u = 0; u < 4; u++) {
            double a[2], c[2], z[2];
            _mm_storeu_pd(a, lo_xy[u]);
            _mm_storeu_pd(c, hi_xy[u]);
            for (int d = 0; d < 2; d++) {
                l[d] = a[d] < l[d] ? a[d] : l[d];
                h[d] = c[d] > h[d] ? c[d] : h[d];
            }
            _mm_storeu_pd(a, lo_z[u]);
            _mm_storeu_pd(c, hi_z[u]);
            l[2] = a[0] < l[2] ? a[0] : l[2];
            h[2] = c[0] > h[2] ? c[0] : h[2];
            _mm_storeu_pd(a, bad_xy[u]);
            _mm_storeu_pd(z, bad_z[u]);
            bad += a[0] + a[1] + z[0];
        }
#endif
        for (; i < e; i++) {
            const double *p = point_at(v, i);
            for (int d = 0; d < dim; d++) {
                double x = p[d];
                bad += x;
                l[d] = x < l[d] ? x : l[d];
                h[d] = x > h[d] ? x : h[d];
            }
        }
        if (!isfinite(bad)) {
            for (int32_t k = b; k < e; k++) {
                const double *p = point_at(v, k);
                for (int d = 0; d < dim; d++)
                    if (!isfinite(p[d])) return k;
            }
        }
    }
    for (int d = 0; d < dim && v->count > 0; d++) {
        lo[d] = l[d];
        hi[d] = h[d];
        if (fabs(l[d]) > *maxabs) *maxabs = fabs(l[d]);
        if (fabs(h[d]) > *maxabs) *maxabs = fabs(h[d]);
    }
    return -1;
}

// The mean spacing of the points: (volume / n)^(1 / dim) of their bounding box, with fallbacks
// for flat or degenerate boxes, and never so small against the coordinates that cell numbers
// would approach the library's 2^62 limit.
static double grid_spacing(int32_t n, int dim, const double *lo, const double *hi, double maxabs)
{
    double s = 1.0;
    if (n > 0) {
        double vol = 1.0, widest = 0.0;
        for (int d = 0; d < dim; d++) {
            double e = hi[d] - lo[d];
            vol *= e;
            if (e > widest) widest = e;
        }
        if (vol > 0.0 && isfinite(vol))
            s = pow(vol / n, 1.0 / dim);
        else if (widest > 0.0 && isfinite(widest))
            s = widest / n; // points on a line (or a plane in 3D)
    }
    double floor_s = maxabs * 0x1p-40;
    if (s < floor_s) s = floor_s;
    if (!(s > DBL_MIN)) s = 1.0;
    return s;
}

static int grid_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// nearest_pair: keeps in best[i] the smallest squared distance of point i to a point it pairs
// with (pts: packed rows of dim doubles); stops the walk, budget < 0, after `budget` pairs.
typedef struct NearestCtx {
    const double *pts;
    int dim;
    double *best;
    int64_t budget;
} NearestCtx;

static bool nearest_pair(int32_t i, int32_t j, void *user)
{
    NearestCtx *c = user;
    if (--c->budget < 0) return false;
    const double *a = c->pts + (size_t)i * c->dim, *b = c->pts + (size_t)j * c->dim;
    double d2 = 0.0;
    for (int d = 0; d < c->dim; d++) d2 += (a[d] - b[d]) * (a[d] - b[d]);
    if (d2 < c->best[i]) c->best[i] = d2;
    if (d2 < c->best[j]) c->best[j] = d2;
    return true;
}

// The typical distance between neighbouring points where the points are: from a sample of up
// to 2048 of them (every n / s-th), the median (*median) and the 3rd quartile (*upper) of the
// distances to the nearest other sample point, and their first decile (*dense), each scaled to the
// whole set's density by (s / n)^(1 / dim) and by the ratio of mean spacing to nearest-neighbour
// distance in uniform data (about 2 in 2D, 1.8 in 3D). Clustered, surface or road-like data then
// get cells sized to their points, not to their bounding box. Never above `box_spacing` (the
// bounding box's mean spacing); `box_spacing` itself when the sample says nothing (few points,
// duplicates, no memory). Where the density varies over decades (a heavy tail about a dense core),
// *median is at most 6 times the nearest distance at the first decile (the median is 1.9-2.5 times
// it in uniform data, 4-5 in the benchmarks' clustered sets, 42 with log-normal distances from one
// centre): a floor sized for the sparse majority would put thousands of points in each of the
// core's cells, which an all-pairs walk then tests pair by pair (on 100k such points: 0.8x
// cKDTree's query_pairs, 2.6x with the cap, query_ball_point's lengths 1.6x and 4x). Runs without
// the GIL.
static void grid_local_spacing(const nbPoints *v, double box_spacing, double *median, double *upper,
                               double *dense)
{
    const int32_t n = v->count, dim = v->dim;
    *median = *upper = *dense = box_spacing;
    if (n < 256) return;
    const int32_t s = n < 2048 ? n : 2048;
    double *pts = malloc((size_t)s * (size_t)dim * sizeof *pts);
    double *d1 = malloc((size_t)s * sizeof *d1);
    nbGrid *grid = NULL;
    if (pts == NULL || d1 == NULL) goto done;
    for (int32_t i = 0; i < s; i++) {
        const double *p =
            (const double *)((const char *)v->data + (size_t)((int64_t)i * n / s) * v->stride);
        for (int d = 0; d < dim; d++) pts[(size_t)i * dim + d] = p[d];
    }
    nbGridDesc desc = {0};
    desc.dim = dim;
    desc.allocator = &nbpy_allocator;
    nbPoints sv = {0};
    sv.data = pts;
    sv.count = s;
    sv.dim = dim;
    sv.stride = (size_t)dim * sizeof(double);
    if (nb_grid_create(&desc, &grid) != NB_OK ||
        nb_grid_build(grid, &sv, box_spacing * pow((double)n / s, 1.0 / dim)) != NB_OK)
        goto done;
    // A nearest distance beyond `reach` scales to a local spacing above box_spacing, which is
    // never used: the searches stop there (such a point counts as infinitely far, which gives
    // the same quantiles' verdict), and most of a kNN search's cost on sparse samples goes.
    const double factor = dim == 2 ? 2.0 : 1.8, shrink = pow((double)s / n, 1.0 / dim);
    const double reach = box_spacing / (factor * shrink) * (1.0 + 0x1p-20);
    // Where the sample's pairs within reach are few (at most 16 a point: spread data), one walk
    // over them finds every nearest distance up to reach; else (dense clusters: the walk stops
    // at that many) a kNN search a point, bounded by reach. Both give the exact distance, or
    // infinity beyond reach.
    NearestCtx nc = {pts, dim, d1, 16 * (int64_t)s};
    for (int32_t i = 0; i < s; i++) d1[i] = (double)INFINITY;
    if (nb_grid_visit_pairs(grid, reach, nearest_pair, &nc) == NB_OK && nc.budget >= 0) {
        for (int32_t i = 0; i < s; i++) d1[i] = sqrt(d1[i]);
    } else {
        for (int32_t i = 0; i < s; i++) {
            nbNeighbor heap[2];
            int32_t found = 0;
            d1[i] = (double)INFINITY;
            if (nb_grid_knn(grid, pts + (size_t)i * dim, NB_FILTER_ALL, reach, heap, 2, &found) ==
                    NB_OK &&
                found == 2)
                d1[i] = sqrt(heap[1].dist2);
        }
    }
    qsort(d1, (size_t)s, sizeof *d1, grid_cmp_double);
    const double quantile[3] = {0.5, 0.75, 0.1};
    double *out[3] = {median, upper, dense};
    for (int k = 0; k < 3; k++) {
        double q = d1[(int32_t)(quantile[k] * (s - 1))];
        if (k == 0) {
            const double q10 = d1[(int32_t)(0.1 * (s - 1))];
            if (q10 > 0.0 && 6.0 * q10 < q) q = 6.0 * q10;
        }
        double local = q * factor * shrink;
        if (q > 0.0 && isfinite(q) && local < box_spacing) *out[k] = local;
    }
done:
    nb_grid_destroy(grid);
    free(pts);
    free(d1);
}

// Parses boxsize (None, or the Python side's tuple of one float per axis, 0 = not periodic)
// into g->period, checks it the library's way (a grid created with it) and the points against
// it, as cKDTree(boxsize=...) does: every coordinate on a periodic axis must lie in [0, L).
static int grid_periods(nbpyGrid *g, PyObject *box_o, const double *lo, const double *hi)
{
    g->half = (double)INFINITY;
    if (box_o == Py_None) return 0;
    if (!PyTuple_Check(box_o) || PyTuple_GET_SIZE(box_o) != g->dim) {
        PyErr_Format(PyExc_ValueError, "boxsize must have one value per axis (%d)", (int)g->dim);
        return -1;
    }
    for (int d = 0; d < g->dim; d++)
        if (nbpy_double(PyTuple_GET_ITEM(box_o, d), "boxsize", &g->period[d]) < 0) return -1;
    nbGridDesc desc = {0};
    desc.dim = g->dim;
    desc.allocator = &nbpy_allocator;
    memcpy(desc.period, g->period, sizeof desc.period);
    nbGrid *probe = NULL;
    nbStatus st = nb_grid_create(&desc, &probe);
    nb_grid_destroy(probe);
    if (st != NB_OK) {
        nbpy_error(st, "boxsize");
        return -1;
    }
    for (int d = 0; d < g->dim; d++) {
        double p = g->period[d];
        if (p == 0.0) continue;
        if (p / 2.0 < g->half) g->half = p / 2.0;
        if (g->n == 0) continue;
        if (lo[d] < 0.0 || hi[d] >= p) {
            PyErr_Format(PyExc_ValueError,
                         "points: a coordinate on axis %d is %s the periodic box [0, %R) (%s); "
                         "wrap the points first, e.g. x %% boxsize",
                         d, lo[d] < 0.0 ? "negative, outside" : "at or beyond the end of",
                         PyTuple_GET_ITEM(box_o, d), nb_status_str(NB_ERR_OUT_OF_RANGE));
            return -1;
        }
    }
    return 0;
}

static int grid_init(nbpyGrid *g, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"points", "radius", "cell_size", "category", "mask", "boxsize", NULL};
    PyObject *points = NULL, *radius_o = Py_None, *cell_o = Py_None, *cat_o = Py_None;
    PyObject *mask_o = Py_None, *box_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OOOOO:Grid", kwlist, &points, &radius_o,
                                     &cell_o, &cat_o, &mask_o, &box_o))
        return -1;
    if (g->data != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Grid.__init__ may be called only once");
        return -1;
    }
    double radius = 0.0, cell = 0.0;
    if (radius_o != Py_None && nbpy_double(radius_o, "radius", &radius) < 0) return -1;
    if (cell_o != Py_None) {
        if (nbpy_double(cell_o, "cell_size", &cell) < 0) return -1;
        if (cell == 0.0) {
            PyErr_SetString(PyExc_ValueError, "cell_size must be > 0 (None chooses it)");
            return -1;
        }
    }
    PyArrayObject *data = grid_points(points);
    if (data == NULL) return -1;
    npy_intp n = PyArray_DIM(data, 0);
    if (grid_bits(cat_o, "category", n, &g->category) < 0 ||
        grid_bits(mask_o, "mask", n, &g->mask) < 0) {
        Py_DECREF(data);
        return -1;
    }
    g->data = data;
    g->n = (int32_t)n;
    g->dim = (int32_t)PyArray_DIM(data, 1);
    g->view = (nbPoints){0};
    g->view.data = (const double *)PyArray_DATA(data);
    g->view.count = g->n;
    g->view.dim = g->dim;
    g->view.stride = n > 1 ? (size_t)PyArray_STRIDE(data, 0) : 0;
    if (g->category != NULL) g->view.category = (const uint32_t *)PyArray_DATA(g->category);
    if (g->mask != NULL) g->view.mask = (const uint32_t *)PyArray_DATA(g->mask);

    double lo[3] = {0.0, 0.0, 0.0}, hi[3] = {0.0, 0.0, 0.0}, maxabs = 0.0;
    int64_t bad;
    PyThreadState *ts_ = PyEval_SaveThread();
    bad = grid_scan(&g->view, lo, hi, &maxabs);
    PyEval_RestoreThread(ts_);
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "points[%lld]: %s (%s)", (long long)bad,
                     nb_status_message(NB_ERR_NOT_FINITE), nb_status_str(NB_ERR_NOT_FINITE));
        return -1;
    }
    g->spacing = g->knn_spacing = g->dense_spacing = g->box_spacing =
        grid_spacing(g->n, g->dim, lo, hi, maxabs);
    g->floor_abs = maxabs * 0x1p-40;
    memcpy(g->lo, lo, sizeof lo);
    memcpy(g->hi, hi, sizeof hi);
    if (grid_periods(g, box_o, lo, hi) < 0) return -1;
    if (radius_o == Py_None && cell_o == Py_None) return 0; // lazy: built by the first query

    // Fixed: one grid, built now, for every query.
    g->fixed = 1;
    nbGridDesc desc = {0};
    desc.dim = g->dim;
    desc.cell_size = cell;
    desc.capacity_hint = g->n;
    desc.allocator = &nbpy_allocator;
    memcpy(desc.period, g->period, sizeof desc.period);
    // A cell_size alone builds for a radius of one cell, but never beyond half a period (the
    // library refuses such a build; a radius given is passed as is and refused the same way).
    double build_r = radius_o != Py_None ? radius : (cell < g->half ? cell : g->half);
    nbGrid *grid = NULL;
    nbStatus st;
    ts_ = PyEval_SaveThread();
    st = nb_grid_create(&desc, &grid);
    if (st == NB_OK) st = nb_grid_build(grid, &g->view, build_r);
    PyEval_RestoreThread(ts_);
    if (st != NB_OK) {
        nb_grid_destroy(grid);
        nbpy_error(st,
                   radius_o != Py_None && st != NB_ERR_OUT_OF_MEMORY ? "Grid(radius=...)" : "Grid");
        return -1;
    }
    g->grids[0] = grid;
    g->tuned[0] = radius_o != Py_None ? radius : cell;
    g->count = 1;
    return 0;
}

static int grid_ready(nbpyGrid *g)
{
    if (g->data != NULL) return 0;
    PyErr_SetString(PyExc_RuntimeError, "Grid was not initialised");
    return -1;
}

// The built grid whose tuned radius is nearest `want` within [want * lo, want * hi]; with
// `any`, the nearest of all. -1 when none. Call with the GIL.
static int grid_pick(const nbpyGrid *g, double want, double lo, double hi, bool any)
{
    int best = -1;
    double best_d = (double)INFINITY;
    for (int i = 0; i < g->count; i++) {
        double t = g->tuned[i];
        if (!any && (t < want * lo || t > want * hi)) continue;
        double d = fabs(log(t / want));
        if (d < best_d || best < 0) {
            best = i;
            best_d = d;
        }
    }
    return best;
}

// A grid to answer a query that wants cells of about `want` (> 0, finite): a built one within
// [want * lo, want * hi], or a new one built for `want` (GIL released while building).
static const nbGrid *grid_for(nbpyGrid *g, double want, double lo, double hi)
{
    if (grid_ready(g) < 0) return NULL;
    if (g->fixed) return g->grids[0];
    if (want > g->half) want = g->half; // a periodic grid is built for at most half a period
    int i = grid_pick(g, want, lo, hi, false);
    if (i >= 0) return g->grids[i];
    PyThreadState *ts_ = PyEval_SaveThread();
    PyThread_acquire_lock(g->lock, WAIT_LOCK);
    PyEval_RestoreThread(ts_);
    // Another thread may have built it while this one waited.
    i = grid_pick(g, want, lo, hi, false);
    if (i < 0 && g->count == NBPY_MAX_GRIDS) i = grid_pick(g, want, lo, hi, true);
    if (i < 0) {
        nbGridDesc desc = {0};
        desc.dim = g->dim;
        desc.allocator = &nbpy_allocator;
        memcpy(desc.period, g->period, sizeof desc.period);
        nbGrid *grid = NULL;
        nbStatus st;
        ts_ = PyEval_SaveThread();
        st = nb_grid_create(&desc, &grid);
        if (st == NB_OK) st = nb_grid_build(grid, &g->view, want);
        PyEval_RestoreThread(ts_);
        if (st != NB_OK) {
            nb_grid_destroy(grid);
            PyThread_release_lock(g->lock);
            nbpy_error(st, "building the grid");
            return NULL;
        }
        i = g->count;
        g->grids[i] = grid;
        g->tuned[i] = want;
        g->count = i + 1; // published under the GIL: readers look only below count
    }
    PyThread_release_lock(g->lock);
    return g->grids[i];
}

// Checks a query radius in the library's order (finite, then >= 0), with its messages.
static int grid_radius(double r)
{
    if (!isfinite(r)) return nbpy_error(NB_ERR_NOT_FINITE, "radius"), -1;
    if (r < 0.0) return nbpy_error(NB_ERR_OUT_OF_RANGE, "radius"), -1;
    return 0;
}

// The local spacings (grid_local_spacing), computed on first need: a sample's nearest-neighbour
// search costs about as much as a radius query over the whole set at 200k points, and most
// radius queries never need it. Call with the GIL (released while computing; two threads may
// both compute, and store the same values).
static void grid_spacings(nbpyGrid *g)
{
    if (g->spacing_known) return;
    double local, local_knn, local_dense;
    PyThreadState *ts_ = PyEval_SaveThread();
    grid_local_spacing(&g->view, g->spacing, &local, &local_knn, &local_dense);
    PyEval_RestoreThread(ts_);
    if (local > g->floor_abs && local > DBL_MIN) g->spacing = local;
    if (local_knn > g->floor_abs && local_knn > DBL_MIN) g->knn_spacing = local_knn;
    if (local_dense > g->floor_abs && local_dense > DBL_MIN) g->dense_spacing = local_dense;
    if (g->dense_spacing > g->spacing) g->dense_spacing = g->spacing; // decile at 0: duplicates
    g->spacing_known = 1;
}

// A grid for radius r: cells of r, as the C library's default, floored so that a small radius
// does not make cells far smaller than the gaps between points. All pairs and counts
// (RADIUS_PAIRS) floor at an eighth of the spacing at the first decile of the nearest distances
// (dense_spacing): the pairs lie where the points are closest, and on sets whose density varies
// over decades (a heavy tail about a dense core) the median's spacing, even capped, put cells of
// 3.3 r on pairs that cells of r walk 1.4-1.5x faster; elsewhere r is above that floor and the
// cells are the C default's. Batches of radius queries from points that are often in sparse
// regions gain up to 2x from cells of at least the median's spacing (RADIUS_QUERIES). The local
// spacings are at most the box's mean spacing, so radii above the floor at that never need them.
enum { RADIUS_PAIRS, RADIUS_QUERIES };
static const nbGrid *grid_for_radius(nbpyGrid *g, double r, int kind)
{
    const double factor = kind == RADIUS_PAIRS ? 0.125 : 1.0;
    const double *spacing = kind == RADIUS_PAIRS ? &g->dense_spacing : &g->spacing;
    if (r < *spacing * factor) grid_spacings(g);
    double want = r > *spacing * factor ? r : *spacing * factor;
    return grid_for(g, want, 0.5, 1.25);
}

// Whether the m query points xs (packed rows) are the grid's own points, in their order (the
// k nearest of every point: query(data), or a copy of data): see grid_for_knn.
static bool grid_own_points(const nbpyGrid *g, const double *xs, npy_intp m)
{
    const size_t row = (size_t)g->dim * sizeof(double);
    if (m != g->n || m == 0 || g->view.stride != row) return false;
    return xs == g->view.data || memcmp(xs, g->view.data, (size_t)m * row) == 0;
}

// A grid for the k nearest, from the spacing at the sample's 3rd quartile: in 3D cells of about
// k points for k = 1 and periodic boxes (3D k >= 2 elsewhere: below); in 2D cells of about
// k / 2.5 points and at least one: the ring walk
// visits fewer points, and a batch in cell order does not pass the walk's tally that builds the
// index (on the corpus's uniform and screen sets, 200k points and 20k queries at k = 8, 1.9x
// fewer instructions than cells of k points, the other 2D sets 0.84-1.01x; k = 32 0.97x).
// Whether query(x, k) of m points answers through the library's batch (nb_grid_knn_many): in 2D
// and in periodic boxes, for 64 queries and more. 3D open sets keep the kNN index a query at a
// time (the batch's block of 27 cells measured about even with the index's descent there).
static bool knn_batch_wanted(const nbpyGrid *g, npy_intp m)
{
    return m >= 64 && (g->dim == 2 || g->half < (double)INFINITY);
}

// The batch groups the queries by cell and gathers each group's block of cells once: in 2D it
// wants cells of about k points (at least four): a block of 3 x 3 cells then holds the k nearest
// of a query anywhere in the middle one, and a cell's queries share the block. 100k uniform 2D
// points, k = 8, the k nearest of every point: 1900 instructions a query on cells of 8 points,
// 2140 on 4, 2400 on 2 (the one-query walk: 2870 on its cells of k / 2.5). In 3D (periodic
// boxes) a block of 27 cells of k points is many candidates a query: cells of k / 3 points, at
// least two. 10k points in a periodic box, k = 8, against cKDTree: uniform 2.3x on cells of 2
// points, 2.5x on 4; a clump (sigma 1% of the box) 2.4x and 1.9x; across the box's corner 2.2x
// and 2.0x.
static const nbGrid *grid_for_batch(nbpyGrid *g, int64_t k)
{
    grid_spacings(g);
    double per_cell = g->dim == 2 ? (double)k : (double)k / 3.0;
    const double least = g->dim == 2 ? 4.0 : 2.0;
    if (per_cell < least) per_cell = least;
    return grid_for(g, g->knn_spacing * pow(per_cell, 1.0 / g->dim), 1.0 / 1.5, 1.5);
}

static const nbGrid *grid_for_knn(nbpyGrid *g, int64_t k, bool own)
{
    // 3D, k >= 2, not periodic: the library answers from its kNN index, built from the grid's
    // points whatever its cells, so the cells are whatever grid builds cheapest: the box's mean
    // spacing, about a point a cell, the dense layout, and no sample of nearest distances (a
    // heavy-tailed set's cells of k points took the hashed layout: 3.3x the build's
    // instructions, and the sample as many again).
    const bool open = !(g->half < (double)INFINITY);
    if (g->dim == 3 && k >= 2 && open) return grid_for(g, g->box_spacing, 1.0 / 3.0, 3.0);
    grid_spacings(g);
    // k = 1 walks the cells, unless they are crowded (more than 64 points in the cell of a
    // point taken at random: the library then searches its index). Where the box's mean
    // spacing is above 4x the local one (most of the box empty: a heavy tail, a sphere's
    // surface), its cells hold about 4^3 points or more where the points are, the index
    // answers, and that grid is the cheapest: 0.88x and 0.94x the instructions of cells of the
    // local spacing on the corpus's tail3d and sphere3d, build and 100k queries. (Below the
    // ratio the local cells' walk is cheaper: lidar3d 2.0x, powerlaw3d 1.7x, 0.77x and 0.71x.)
    if (g->dim == 3 && open && g->box_spacing > 4.0 * g->knn_spacing)
        return grid_for(g, g->box_spacing, 1.0 / 3.0, 3.0);
    double per_cell = (double)(k > 0 ? k : 1);
    if (g->dim == 2) per_cell = per_cell > 2.5 ? per_cell / 2.5 : 1.0;
    // A periodic 3D grid has no kNN index: its rings answer, on cells of at most four points.
    // 50k points in one clump of a periodic box, k = 8 (bench/bench_periodic_clump.py), against
    // cKDTree: a kNN of every point 0.72x on cells of k points, 0.99x of four, 1.37x of two;
    // 20k queries from anywhere in the box (walking rings towards the clump) 0.77x, 0.81x and
    // 0.49x. Four is better than k at both; uniform points 1.37x -> 1.5x.
    if (g->dim == 3 && !open && per_cell > 4.0) per_cell = 4.0;
    double want = g->knn_spacing * pow(per_cell, 1.0 / g->dim);
    // The k nearest of every point (`own`: the queries are the grid's own points) among points
    // that fill a small part of a periodic box (a clump: more than 64 cells of the box a point)
    // take cells of 0.7 times that edge. 20k points in one Gaussian clump (sigma 1% of the box),
    // in the middle or across the faces, k = 8: 0.59x and 0.55x the instructions in 3D, 0.86x
    // in 2D; uniform points keep their cells (there 0.7 costs 1.3x). Not for other queries:
    // from the empty part of the box they walk more rings on the smaller cells (1.5x the time).
    if (!open && own && k >= 2) {
        double cells = 1.0;
        for (int d = 0; d < g->dim; d++) {
            double extent = g->period[d] > 0.0 ? g->period[d] : g->hi[d] - g->lo[d];
            cells *= extent / want > 1.0 ? extent / want : 1.0;
        }
        if (cells > 64.0 * (double)g->n) want *= 0.7;
    }
    return grid_for(g, want, 1.0 / 3.0, 3.0);
}

// ---- shared index objects ----

// One int object per index 0 .. n-1, made on first use and shared by every tuple or list of a
// result that holds the index (ints are immutable): a result with many entries a point then
// allocates one object an index, not one an entry.
typedef struct IntTable {
    PyObject **v;
    int32_t n;
} IntTable;

static int int_table_init(IntTable *t, int32_t n)
{
    t->n = n;
    t->v = calloc((size_t)(n > 0 ? n : 1), sizeof *t->v);
    if (t->v == NULL) return PyErr_NoMemory(), -1;
    return 0;
}

// A new reference to index i's object, or NULL with the error set.
static PyObject *int_table_get(IntTable *t, int32_t i)
{
    if (t->v[i] == NULL) t->v[i] = PyLong_FromLong(i);
    Py_XINCREF(t->v[i]);
    return t->v[i];
}

static void int_table_free(IntTable *t)
{
    if (t->v != NULL)
        for (int32_t i = 0; i < t->n; i++) Py_XDECREF(t->v[i]);
    free(t->v);
    t->v = NULL;
}

// ---- all pairs ----

typedef struct PairBuf {
    npy_intp *v; // 2 * cap entries
    int64_t len, cap;
    bool oom;
    bool big;    // v is from nbpy_big_alloc_used (else malloc / realloc)
    size_t used; // big: the bytes of v ever written, by this search or earlier users
} PairBuf;

static bool pair_grow(PairBuf *b, int64_t cap)
{
    npy_intp *v = realloc(b->v, (size_t)cap * 2 * sizeof *v);
    if (v == NULL) return false;
    b->v = v;
    b->cap = cap;
    return true;
}

static bool pair_push(int32_t i, int32_t j, void *user)
{
    PairBuf *b = user;
    if (b->len == b->cap && !pair_grow(b, b->cap < 1024 ? 4096 : b->cap * 2)) {
        b->oom = true;
        return false;
    }
    b->v[2 * b->len] = i;
    b->v[2 * b->len + 1] = j;
    b->len++;
    return true;
}

// A pair array's block, as nbpy_big_free_used takes it back (bytes 0: a malloc'd block).
typedef struct PairBlock {
    size_t bytes, used;
} PairBlock;

static void pair_free(PyObject *capsule)
{
    PairBlock *k = PyCapsule_GetContext(capsule);
    void *v = PyCapsule_GetPointer(capsule, "nearby.pairs");
    if (k == NULL) { // never set: free() takes any block
        free(v);
        return;
    }
    nbpy_big_free_used(v, k->bytes, k->used);
    free(k);
}

// An (len, 2) intp array that owns b->v (given back to the big-block cache with it).
static PyObject *pair_array(PairBuf *b)
{
    npy_intp dims[2] = {(npy_intp)b->len, 2};
    size_t bytes = (size_t)b->cap * 2 * sizeof(npy_intp);
    if (!b->big) { // a malloc'd block: shrink it to the pairs found, then hand it over
        if (b->len > 0 && b->len < b->cap) pair_grow(b, b->len); // keeps the block on failure
        bytes = 0; // below the cache's minimum: nbpy_big_free frees it
    }
    if (b->len == 0) {
        nbpy_big_free_used(b->v, bytes, b->used);
        b->v = NULL;
        return PyArray_SimpleNew(2, dims, NPY_INTP);
    }
    PairBlock *k = malloc(sizeof *k);
    PyObject *capsule = k != NULL ? PyCapsule_New(b->v, "nearby.pairs", pair_free) : NULL;
    if (capsule == NULL) {
        nbpy_big_free_used(b->v, bytes, b->used);
        free(k);
        return k == NULL ? PyErr_NoMemory() : NULL;
    }
    *k = (PairBlock){bytes, b->used};
    if (PyCapsule_SetContext(capsule, k) < 0) { // never for a new capsule
        free(k);
        Py_DECREF(capsule); // frees v
        return NULL;
    }
    PyObject *arr = PyArray_SimpleNewFromData(2, dims, NPY_INTP, b->v);
    if (arr == NULL || PyArray_SetBaseObject((PyArrayObject *)arr, capsule) < 0) {
        Py_XDECREF(arr);
        Py_DECREF(capsule);
        return NULL;
    }
    return arr;
}

typedef struct PairsCtx {
    const nbGrid *grid;
    double r;
    int32_t units;
    int parts;
    PairBuf buf[NBPY_MAX_PARTS];
    nbStatus st[NBPY_MAX_PARTS];
} PairsCtx;

static void pairs_part(void *vctx, int64_t begin, int64_t end, int part)
{
    PairsCtx *c = vctx;
    // parts split the units, not the [0, parts) range the parallel-for hands out
    (void)end;
    int32_t u0 = (int32_t)((int64_t)c->units * begin / c->parts);
    int32_t u1 = (int32_t)((int64_t)c->units * (begin + 1) / c->parts);
    c->st[part] = nb_grid_visit_pairs_range(c->grid, c->r, u0, u1, pair_push, &c->buf[part]);
}

// A bound on the pairs of n points worth reserving address space for: 64 a point (about 128
// neighbours each; the corpus's radii find 5-15), at most every pair. Its untouched pages cost
// nothing but address space (a fresh big block is mapped on demand).
static int64_t pairs_reserve(int32_t n)
{
    int64_t every = (int64_t)n * (n - 1) / 2;
    int64_t bound = (int64_t)n * 64 + 4096;
    return every < bound ? (every > 0 ? every : 1) : bound;
}

// All pairs on one thread through the library's wide buffer form (nb_grid_pairs_wide: the
// int64 rows of the (K, 2) intp array written directly, no 32-bit pass), the GIL released.
// The block is reserved for `cap` pairs (pairs_reserve), else, when that much address space is
// refused, for `guess`; when the pairs do not fit, *found is exact and the search runs again
// into a block of that size.
_Static_assert(sizeof(npy_intp) == sizeof(int64_t), "the pair arrays are int64 rows: 64-bit only");
static nbStatus pairs_buffer(const nbGrid *grid, double r, int64_t cap, int64_t guess, PairBuf *out)
{
    int64_t *found = &out->len;
    for (;;) {
        size_t got, used;
        npy_intp *v = nbpy_big_alloc_used((size_t)cap * 2 * sizeof *v, &got, &used);
        if (v == NULL && guess < cap) {
            cap = guess;
            continue;
        }
        if (v == NULL) return NB_ERR_OUT_OF_MEMORY;
        cap = (int64_t)(got / (2 * sizeof *v)); // a cached block may be larger: use it all
        nbStatus st = nb_grid_pairs_wide(grid, r, (int64_t *)v, cap, found);
        const size_t wrote = (size_t)(*found < cap ? *found : cap) * 2 * sizeof *v;
        if (wrote > used) used = wrote;
        if (st == NB_ERR_BUFFER_TOO_SMALL) { // *found is exact now
            nbpy_big_free_used(v, got, used);
            cap = guess = *found;
            continue;
        }
        if (st != NB_OK) {
            nbpy_big_free_used(v, got, used);
            return st;
        }
        out->v = v;
        out->cap = cap;
        out->big = true;
        out->used = used;
        return NB_OK;
    }
}

static PyObject *grid_query_pairs_array(nbpyGrid *g, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"r", "workers", NULL};
    double r;
    PyObject *workers_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "d|O:_query_pairs", kwlist, &r, &workers_o))
        return NULL;
    int workers;
    if (nbpy_workers(workers_o, &workers) < 0 || grid_radius(r) < 0) return NULL;
    const nbGrid *grid = grid_for_radius(g, r, RADIUS_PAIRS);
    if (grid == NULL) return NULL;
    PairsCtx *c = calloc(1, sizeof *c);
    if (c == NULL) return PyErr_NoMemory();
    c->grid = grid;
    c->r = r;
    c->units = nb_grid_pair_units(grid);
    c->parts = workers < c->units ? workers : (c->units > 0 ? c->units : 1);
    // First guess at the pair count: n * (points in a ball of radius r) / 2 at the mean spacing.
    double ball = g->dim == 2 ? 3.14159 * r * r : 4.18879 * r * r * r;
    double guess = 0.5 * g->n * ball / pow(g->spacing, g->dim) * 1.1 / c->parts + 1024.0;
    double cap_max = 64.0 * g->n / c->parts + 4096.0;
    int64_t cap = (int64_t)(guess < cap_max ? guess : cap_max);
    if (c->parts == 1) {
        PairBuf b = {NULL, 0, 0, false, false, 0};
        free(c);
        PyThreadState *ts = PyEval_SaveThread();
        nbStatus st = pairs_buffer(grid, r, pairs_reserve(g->n), cap > 1 ? cap : 1, &b);
        PyEval_RestoreThread(ts);
        if (st != NB_OK) return nbpy_error(st, "query_pairs");
        return pair_array(&b);
    }
    bool oom = false;
    for (int p = 0; p < c->parts; p++) oom = oom || !pair_grow(&c->buf[p], cap);
    if (!oom) {
        PyThreadState *ts_ = PyEval_SaveThread();
        nbpy_parallel(c->parts, c->parts, pairs_part, c);
        PyEval_RestoreThread(ts_);
    }
    nbStatus st = NB_OK;
    int64_t total = 0;
    for (int p = 0; p < c->parts; p++) {
        oom = oom || c->buf[p].oom;
        if (st == NB_OK) st = c->st[p];
        total += c->buf[p].len;
    }
    PyObject *res = NULL;
    if (oom) {
        PyErr_NoMemory();
    } else if (st != NB_OK) {
        nbpy_error(st, "query_pairs");
    } else if (c->parts == 1) {
        res = pair_array(&c->buf[0]);
        c->buf[0].v = NULL;
    } else {
        npy_intp dims[2] = {(npy_intp)total, 2};
        res = PyArray_SimpleNew(2, dims, NPY_INTP);
        if (res != NULL) {
            char *dst = PyArray_DATA((PyArrayObject *)res);
            for (int p = 0; p < c->parts; p++) {
                size_t bytes = (size_t)c->buf[p].len * 2 * sizeof(npy_intp);
                if (bytes > 0) memcpy(dst, c->buf[p].v, bytes);
                dst += bytes;
            }
        }
    }
    for (int p = 0; p < c->parts; p++) free(c->buf[p].v);
    free(c);
    return res;
}

static double ball_raw(const double *a, const double *b, int dim, const double *period, double p);

// The pairs within the radius parsed from args (format fmt: "d:name"), through the buffer form
// into *b (free b->v with nbpy_big_free), the GIL released. 0, or -1 with the error set.
static int pairs_of(nbpyGrid *g, PyObject *args, const char *fmt, const char *what, PairBuf *b)
{
    double r;
    if (!PyArg_ParseTuple(args, fmt, &r) || grid_ready(g) < 0 || grid_radius(r) < 0) return -1;
    const nbGrid *grid = grid_for_radius(g, r, RADIUS_PAIRS);
    if (grid == NULL) return -1;
    *b = (PairBuf){NULL, 0, 0, false, false, 0};
    PyThreadState *ts = PyEval_SaveThread();
    nbStatus st = pairs_buffer(grid, r, pairs_reserve(g->n), (int64_t)g->n * 4 + 1024, b);
    PyEval_RestoreThread(ts);
    if (st != NB_OK) return nbpy_error(st, what), -1;
    return 0;
}

// _pair_matrix(r): the entries of the tree's sparse distance matrix against itself at r, as
// three arrays (i, j, v) of 2K + n entries: every pair within r both ways with its distance
// (the root of ball_raw at p = 2: the minimum image on periodic axes), then the diagonal with
// 0. The pairs come from the buffer form of all pairs; the GIL is released throughout. i and j
// are int32 (point numbers are): scipy's coo_matrix keeps int32 indices for any matrix of
// fewer than 2^31 rows, and given int64 ones it copies them down (measured: 8x the time of
// making the matrix from int32 indices, a fifth of sparse_distance_matrix on the corpus).
static PyObject *grid_pair_matrix(nbpyGrid *g, PyObject *args)
{
    PairBuf b;
    if (pairs_of(g, args, "d:_pair_matrix", "sparse_distance_matrix", &b) < 0) return NULL;
    PyThreadState *ts;
    npy_intp total = (npy_intp)(2 * b.len + g->n);
    PyObject *i_arr = PyArray_SimpleNew(1, &total, NPY_INT32);
    PyObject *j_arr = PyArray_SimpleNew(1, &total, NPY_INT32);
    PyObject *v_arr = PyArray_SimpleNew(1, &total, NPY_DOUBLE);
    if (i_arr != NULL && j_arr != NULL && v_arr != NULL) {
        int32_t *ii = PyArray_DATA((PyArrayObject *)i_arr);
        int32_t *jj = PyArray_DATA((PyArrayObject *)j_arr);
        double *vv = PyArray_DATA((PyArrayObject *)v_arr);
        const nbPoints *pts = &g->view;
        const int64_t k = b.len;
        ts = PyEval_SaveThread();
        for (int64_t e = 0; e < k; e++) {
            int32_t a = (int32_t)b.v[2 * e], c = (int32_t)b.v[2 * e + 1];
            double d = sqrt(ball_raw(point_at(pts, a), point_at(pts, c), g->dim, g->period, 2.0));
            ii[e] = jj[k + e] = a;
            jj[e] = ii[k + e] = c;
            vv[e] = vv[k + e] = d;
        }
        for (int32_t q = 0; q < g->n; q++) {
            ii[2 * k + q] = jj[2 * k + q] = q;
            vv[2 * k + q] = 0.0;
        }
        PyEval_RestoreThread(ts);
    }
    nbpy_big_free_used(b.v, (size_t)b.cap * 2 * sizeof(npy_intp), b.used);
    if (i_arr == NULL || j_arr == NULL || v_arr == NULL) {
        Py_XDECREF(i_arr);
        Py_XDECREF(j_arr);
        Py_XDECREF(v_arr);
        return NULL;
    }
    return Py_BuildValue("(NNN)", i_arr, j_arr, v_arr);
}

// _pairs_set(r): query_pairs' default output, a set of (i, j) tuples, i < j, built in C from
// the buffer form of all pairs, with one int object an index shared by all its tuples. Each
// insertion misses the cache (the set's table is far larger than it for many pairs, and the
// tuples' hashes spread over it), so the tuples are made PAIRS_AHEAD pairs ahead of their
// insertion and their table slots prefetched (the table as it is then: a resize meanwhile only
// wastes the prefetch). The cyclic collector is paused meanwhile: the new tuples are untracked
// (two ints never form a cycle), but each one's allocation still counts towards the next
// collection, and the older generations' collections walk every tracked object of the process.
#define PAIRS_AHEAD 16
static PyObject *grid_pairs_set(nbpyGrid *g, PyObject *args)
{
    PairBuf b;
    if (pairs_of(g, args, "d:_pairs_set", "query_pairs", &b) < 0) return NULL;
    IntTable ints;
    PyObject *set = int_table_init(&ints, g->n) == 0 ? PySet_New(NULL) : NULL;
    PyObject *ring[PAIRS_AHEAD] = {NULL};
#if PY_VERSION_HEX >= 0x030A0000
    const int collecting = PyGC_Disable();
#endif
    for (int64_t e = 0; set != NULL && e < b.len + PAIRS_AHEAD; e++) {
        if (e >= PAIRS_AHEAD) { // the pair made PAIRS_AHEAD ago, then its slot's next
            PyObject **slot = &ring[e % PAIRS_AHEAD];
            if (PySet_Add(set, *slot) < 0) Py_CLEAR(set);
            Py_CLEAR(*slot);
        }
        if (set != NULL && e < b.len) {
            PyObject *pair = PyTuple_New(2);
            for (int side = 0; pair != NULL && side < 2; side++) {
                PyObject *o = int_table_get(&ints, (int32_t)b.v[2 * e + side]);
                if (o == NULL) {
                    Py_CLEAR(pair);
                    break;
                }
                PyTuple_SET_ITEM(pair, side, o);
            }
            if (pair == NULL) {
                Py_CLEAR(set);
                break;
            }
            PyObject_GC_UnTrack(pair);
            ring[e % PAIRS_AHEAD] = pair;
#if !defined(Py_LIMITED_API)
            const Py_hash_t h = PyObject_Hash(pair); // an int pair's hash never fails
            const PySetObject *so = (const PySetObject *)set;
            __builtin_prefetch(&so->table[(size_t)h & (size_t)so->mask], 1);
#endif
        }
    }
#if PY_VERSION_HEX >= 0x030A0000
    if (collecting) PyGC_Enable();
#endif
    for (int r = 0; r < PAIRS_AHEAD; r++) Py_XDECREF(ring[r]);
    int_table_free(&ints);
    nbpy_big_free_used(b.v, (size_t)b.cap * 2 * sizeof(npy_intp), b.used);
    return set;
}

static PyObject *grid_count_pairs(nbpyGrid *g, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"r", NULL};
    PyObject *r_o;
    double r;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:count_pairs", kwlist, &r_o)) return NULL;
    if (nbpy_double(r_o, "r", &r) < 0 || grid_radius(r) < 0) return NULL;
    const nbGrid *grid = grid_for_radius(g, r, RADIUS_PAIRS);
    if (grid == NULL) return NULL;
    int64_t count = 0;
    nbStatus st;
    PyThreadState *ts_ = PyEval_SaveThread();
    st = nb_grid_count_pairs(grid, r, &count);
    PyEval_RestoreThread(ts_);
    if (st != NB_OK) return nbpy_error(st, "count_pairs");
    return PyLong_FromLongLong((long long)count);
}

// The pairs (i of this grid's points, j of other's) within r, counted in C (each pair of sets'
// grids for r: the library counts whole boxes of points at once where r spans many of them).
static PyObject *grid_count_cross(nbpyGrid *g, PyObject *args)
{
    nbpyGrid *o;
    double r;
    if (!PyArg_ParseTuple(args, "O!d:_count_cross", &nbpy_GridType, &o, &r)) return NULL;
    if (grid_radius(r) < 0) return NULL;
    if (o->dim != g->dim) {
        PyErr_SetString(PyExc_ValueError, "_count_cross: the grids' dimensions differ");
        return NULL;
    }
    const nbGrid *a = grid_for_radius(g, r, RADIUS_PAIRS);
    if (a == NULL) return NULL;
    const nbGrid *b = grid_for_radius(o, r, RADIUS_PAIRS);
    if (b == NULL) return NULL;
    int64_t count = 0;
    PyThreadState *ts_ = PyEval_SaveThread();
    const nbStatus st = nb_grid_count_cross_pairs(a, b, r, &count);
    PyEval_RestoreThread(ts_);
    if (st != NB_OK) return nbpy_error(st, "count_neighbors");
    return PyLong_FromLongLong((long long)count);
}

// ---- neighbour lists ----

// A new 1-D numpy array of n entries of `type`, filled from src (n * size bytes).
static PyObject *rows_array(npy_intp n, int type, const void *src, size_t size)
{
    PyObject *a = PyArray_SimpleNew(1, &n, type);
    if (a != NULL && n > 0) memcpy(PyArray_DATA((PyArrayObject *)a), src, (size_t)n * size);
    return a;
}

// (offsets, neighbours[, dist2][, order]): every point's neighbours within r as compressed rows,
// through a neighbour list (neighbors.h) built without the GIL: by index, or with cell_order in
// the grid's cell order (row p is the point order[p], entries are positions; the list's fast
// form: one pass, no sort).
static PyObject *grid_neighbour_lists(nbpyGrid *g, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"r", "distances", "cell_order", NULL};
    double r;
    int distances = 0, cell_order = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "d|pp:_neighbour_lists", kwlist, &r, &distances,
                                     &cell_order))
        return NULL;
    if (grid_radius(r) < 0) return NULL;
    const nbGrid *grid = grid_for_radius(g, r, RADIUS_PAIRS);
    if (grid == NULL) return NULL;
    const nbNeighborListDesc desc = {.distances = distances != 0, .cell_order = cell_order != 0};
    nbNeighborList *list = NULL;
    nbStatus st = nb_neighbor_list_create(&desc, &list);
    if (st == NB_OK) {
        PyThreadState *ts = PyEval_SaveThread();
        st = nb_neighbor_list_build(list, grid, r);
        PyEval_RestoreThread(ts);
    }
    nbNeighborRows rows;
    if (st == NB_OK) st = nb_neighbor_list_rows(list, &rows);
    if (st != NB_OK) {
        nb_neighbor_list_destroy(list);
        return nbpy_error(st, "neighbour_lists");
    }
    PyObject *part[4] = {NULL, NULL, NULL, NULL};
    int parts = 0;
    part[parts++] = rows_array((npy_intp)rows.rows + 1, NPY_INT32, rows.offsets, sizeof(int32_t));
    part[parts++] = rows_array((npy_intp)rows.entries, NPY_INT32, rows.neighbors, sizeof(int32_t));
    if (distances)
        part[parts++] = rows_array((npy_intp)rows.entries, NPY_DOUBLE, rows.dist2, sizeof(double));
    if (cell_order)
        part[parts++] = rows_array((npy_intp)rows.rows, NPY_INT32, rows.order, sizeof(int32_t));
    nb_neighbor_list_destroy(list);
    PyObject *res = PyTuple_New(parts);
    for (int k = 0; k < parts; k++) {
        if (part[k] == NULL) Py_CLEAR(res);
        if (res != NULL)
            PyTuple_SET_ITEM(res, k, part[k]);
        else
            Py_XDECREF(part[k]);
    }
    return res;
}

// ---- query order ----

// A processing order for a batch of m query points: by bucket of a grid over the queries'
// bounding box (row-major, buckets about one cell wide, at most about 2m of them), by a
// counting sort, and any bucket holding more than QUERY_BUCKET queries again by a grid over
// its own queries' box, and so on down (an adaptive tree of grids: where the density varies
// over decades, a heavy tail's core lands in one bucket of the top grid, and the order inside
// it would be the caller's). Consecutive queries then read the same few rows of cells or
// leaves of the kNN index, which is what makes a large batch of random queries fast (about
// twice, measured on 1M kNN queries; the refinement: 2.6 -> 2.1 us a query on 100k points at
// log-normal distances from one centre); the results still go to each query's own row.
// Non-finite queries go first (the query reports them). Returns NULL when out of memory (the
// caller then keeps the given order). No GIL.
#define QUERY_BUCKET 64

// Orders order[a, b) by buckets of a grid over those queries' box, of edge at least e (below
// the top, `refine`: about one query a bucket), and pushes each bucket of finite queries that
// still holds more than QUERY_BUCKET onto the stack st (*sp entries: pairs of bounds).
// Returns false when the grid cannot be made (infinite coordinates, or one bucket: the
// queries sit at one place); order[a, b) is then as it was.
static bool query_order_range(const double *x, int dim, int64_t *order, int64_t *tmp, int64_t *key,
                              int64_t *start, int64_t a, int64_t b, double e, bool refine,
                              int64_t *st, int64_t *sp)
{
    const int64_t m = b - a;
    double lo[3] = {(double)INFINITY, (double)INFINITY, (double)INFINITY},
           hi[3] = {-(double)INFINITY, -(double)INFINITY, -(double)INFINITY};
    for (int64_t i = a; i < b; i++)
        for (int d = 0; d < dim; d++) {
            double v = x[order[i] * dim + d];
            if (v < lo[d]) lo[d] = v; // NaN compares false: skipped
            if (v > hi[d]) hi[d] = v;
        }
    double span[3] = {0.0, 0.0, 0.0}, widest = 0.0;
    for (int d = 0; d < dim; d++) {
        span[d] = hi[d] > lo[d] ? hi[d] - lo[d] : 0.0;
        if (!isfinite(span[d])) return false; // infinite coordinates: keep the given order
        widest = span[d] > widest ? span[d] : widest;
    }
    if (refine) e = widest / pow((double)m, 1.0 / dim);
    if (!(e > 0.0)) return false;
    double cells = 1.0;
    for (int tries = 0; tries < 64; tries++) {
        cells = 1.0;
        for (int d = 0; d < dim; d++) cells *= floor(span[d] / e) + 1.0;
        if (cells <= 2.0 * (double)m + 16.0) break;
        e *= 1.5;
    }
    if (cells > 2.0 * (double)m + 16.0 || (refine && cells < 2.0)) return false;
    int64_t nb[3] = {1, 1, 1};
    for (int d = 0; d < dim; d++) nb[d] = (int64_t)(floor(span[d] / e) + 1.0);
    const int64_t buckets = nb[0] * nb[1] * nb[2] + 1; // + 1: bucket 0 for non-finite queries
    memset(start, 0, (size_t)(buckets + 1) * sizeof *start);
    for (int64_t i = a; i < b; i++) {
        const int64_t q = order[i];
        int64_t k = 0;
        bool finite = true;
        for (int d = dim - 1; d >= 0; d--) {
            double v = x[q * dim + d];
            finite = finite && isfinite(v);
            int64_t c = finite ? (int64_t)((v - lo[d]) / e) : 0;
            if (c >= nb[d]) c = nb[d] - 1;
            k = k * nb[d] + c;
        }
        key[i - a] = finite ? k + 1 : 0;
        start[key[i - a] + 1]++;
    }
    for (int64_t c = 0; c < buckets; c++) start[c + 1] += start[c];
    for (int64_t i = a; i < b; i++) tmp[start[key[i - a]]++] = order[i];
    memcpy(order + a, tmp, (size_t)m * sizeof *order);
    // start[c] is now the end of bucket c
    for (int64_t c = 1; c < buckets; c++) {
        if (start[c] - start[c - 1] <= QUERY_BUCKET) continue;
        st[(*sp)++] = a + start[c - 1];
        st[(*sp)++] = a + start[c];
    }
    return true;
}

static int64_t *query_order(const double *x, int64_t m, int dim, double cell)
{
    // The pending buckets are disjoint and each holds more than QUERY_BUCKET queries.
    const int64_t stack = 2 * (m / QUERY_BUCKET + 1);
    int64_t *start = malloc((size_t)(2 * m + 20) * sizeof *start);
    int64_t *key = malloc((size_t)m * sizeof *key);
    int64_t *tmp = malloc((size_t)m * sizeof *tmp);
    int64_t *st = malloc((size_t)stack * sizeof *st);
    int64_t *order = malloc((size_t)m * sizeof *order);
    bool ok = start != NULL && key != NULL && tmp != NULL && st != NULL && order != NULL;
    int64_t sp = 0;
    if (ok) {
        for (int64_t q = 0; q < m; q++) order[q] = q;
        ok = query_order_range(x, dim, order, tmp, key, start, 0, m, cell > 0.0 ? cell : 1.0, false,
                               st, &sp);
    }
    while (ok && sp > 0) {
        const int64_t b = st[--sp], a = st[--sp];
        query_order_range(x, dim, order, tmp, key, start, a, b, 0.0, true, st, &sp);
    }
    free(start);
    free(key);
    free(tmp);
    free(st);
    if (!ok) {
        free(order);
        return NULL;
    }
    return order;
}

// ---- radius queries ----

// Radii for m query points: one scalar or one per point (shape == the points' leading shape).
static int grid_radii(PyObject *r_o, int lead_nd, const npy_intp *lead, PyArrayObject **arr,
                      double *scalar)
{
    *arr = NULL;
    if (PyFloat_Check(r_o) || PyLong_Check(r_o)) return nbpy_double(r_o, "r", scalar);
    PyArrayObject *a = nbpy_as_double(r_o, NPY_ARRAY_CARRAY_RO, "r");
    if (a == NULL) return -1;
    if (PyArray_NDIM(a) == 0) {
        *scalar = *(const double *)PyArray_DATA(a);
        Py_DECREF(a);
        return 0;
    }
    bool same = PyArray_NDIM(a) == lead_nd;
    for (int d = 0; same && d < lead_nd; d++) same = PyArray_DIM(a, d) == lead[d];
    if (!same) {
        PyErr_SetString(PyExc_ValueError,
                        "r must be a number or an array shaped like x without its last axis");
        Py_DECREF(a);
        return -1;
    }
    *arr = a;
    return 0;
}

typedef struct BallPart {
    int32_t *v;
    int64_t len, cap;
    double *raw; // with a norm: the raw distance of each entry of v (raw_cap entries)
    int64_t raw_cap;
    nbStatus st;
    int64_t bad; // the query that failed
} BallPart;

typedef struct BallCtx {
    const nbGrid *grid;
    const double *x;
    const double *r; // NULL: every query at radius r0
    double r0;
    int dim;
    nbFilter filter;
    bool sort, length_only;
    int64_t *counts;
    int64_t *offs;        // where query q's indices start in its part's buffer
    uint16_t *owner;      // the part that ran query q
    const int64_t *order; // processing order (query_order), or NULL for 0 .. m-1
    // A Minkowski norm (norm = true): each query keeps only the points whose raw distance in it
    // (ball_raw) is <= lim[q] (or lim0), and records it. points / period: the grid's own.
    bool norm;
    double p;
    const double *lim;
    double lim0;
    const nbPoints *points;
    const double *period;
    int parts;
    BallPart part[NBPY_MAX_PARTS];
} BallCtx;

// The raw distance between a and b in the L_p norm, summed axis by axis as a brute-force loop
// does: sum |d|^p (d*d for p = 2, |d| for p = 1), or max |d| for p = inf; on a periodic axis d is
// the minimum image. The cKDTree methods compare it with r^p (r*r, r) and take its root.
static double ball_raw(const double *a, const double *b, int dim, const double *period, double p)
{
    double total = 0.0;
    for (int d = 0; d < dim; d++) {
        double diff = fabs(a[d] - b[d]);
        if (period[d] > 0.0 && diff > 0.5 * period[d]) diff = period[d] - diff;
        double term = p == 2.0 ? diff * diff : (p == 1.0 || isinf(p)) ? diff : pow(diff, p);
        if (isinf(p))
            total = term > total ? term : total;
        else
            total += term;
    }
    return total;
}

// A radius as the raw distance ball_raw compares with: r*r, r^p (the same pow), r; -1 (nothing
// is within) for a negative or NaN r.
static double ball_raw_limit(double r, double p)
{
    if (!(r >= 0.0)) return -1.0;
    return p == 2.0 ? r * r : (p == 1.0 || isinf(p)) ? r : pow(r, p);
}

// Keeps the found points v[0, found) within the query's limit in the ctx's norm, sorted if
// asked, with their raw distances in raw[0, kept). Returns the number kept.
static int32_t ball_keep(const BallCtx *c, const double *center, double lim, int32_t *v,
                         int32_t found, double *raw)
{
    const nbPoints *pts = c->points;
    int32_t kept = found;
    if (c->p != 2.0 || c->r != NULL || lim != c->r0 * c->r0) { // else the grid's own test
        kept = 0;
        for (int32_t j = 0; j < found; j++) {
            if (ball_raw(center, point_at(pts, v[j]), c->dim, c->period, c->p) <= lim)
                v[kept++] = v[j];
        }
    }
    if (c->sort) nbpy_sort_i32(v, kept);
    for (int32_t j = 0; j < kept; j++) {
        raw[j] = ball_raw(center, point_at(pts, v[j]), c->dim, c->period, c->p);
    }
    return kept;
}

static void ball_part(void *vctx, int64_t begin, int64_t end, int part)
{
    BallCtx *c = vctx;
    BallPart *p = &c->part[part];
    for (int64_t at = begin; at < end; at++) {
        int64_t q = c->order != NULL ? c->order[at] : at;
        const double *center = c->x + q * c->dim;
        double r = c->r != NULL ? c->r[q] : c->r0;
        c->offs[q] = p->len;
        c->owner[q] = (uint16_t)part;
        int32_t found = 0;
        nbStatus st;
        if (c->length_only) {
            st = nb_grid_query_radius(c->grid, center, r, c->filter, NULL, 0, &found);
            if (st == NB_ERR_BUFFER_TOO_SMALL) st = NB_OK;
        } else {
            int64_t room = p->cap - p->len;
            int32_t cap = room < INT32_MAX ? (int32_t)room : INT32_MAX;
            st = nb_grid_query_radius(c->grid, center, r, c->filter, p->v + p->len, cap, &found);
            if (st == NB_ERR_BUFFER_TOO_SMALL) {
                int64_t want = p->len + found;
                int64_t grow = p->cap * 2 > want ? p->cap * 2 : want;
                int32_t *v = realloc(p->v, (size_t)grow * sizeof *v);
                if (v == NULL) {
                    st = NB_ERR_OUT_OF_MEMORY;
                } else {
                    p->v = v;
                    p->cap = grow;
                    st = nb_grid_query_radius(c->grid, center, r, c->filter, p->v + p->len, found,
                                              &found);
                }
            }
            if (st == NB_OK && c->norm && p->raw_cap < p->cap) {
                double *raw = realloc(p->raw, (size_t)p->cap * sizeof *raw);
                if (raw == NULL) {
                    st = NB_ERR_OUT_OF_MEMORY;
                } else {
                    p->raw = raw;
                    p->raw_cap = p->cap;
                }
            }
            if (st == NB_OK && c->norm)
                found = ball_keep(c, center, c->lim != NULL ? c->lim[q] : c->lim0, p->v + p->len,
                                  found, p->raw + p->len);
            else if (st == NB_OK && c->sort)
                nbpy_sort_i32(p->v + p->len, found);
            if (st == NB_OK) p->len += found;
        }
        if (st != NB_OK) {
            p->st = st;
            p->bad = q;
            return;
        }
        c->counts[q] = found;
    }
}

// A list of the n indices v, their objects from `ints` (NULL: new ones).
static PyObject *list_of(const int32_t *v, int64_t n, IntTable *ints)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL) return NULL;
    for (int64_t i = 0; i < n; i++) {
        PyObject *o = ints != NULL ? int_table_get(ints, v[i]) : PyLong_FromLong(v[i]);
        if (o == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, o);
    }
    return list;
}

// How deep ball q (centre x, radius r) reaches into the points' bounding box: r less the
// centre's distance to the box (r itself from inside it; <= 0 when the ball misses it).
static double ball_depth(const nbpyGrid *g, const double *x, double r)
{
    double d2 = 0.0;
    for (int d = 0; d < g->dim; d++) {
        const double below = g->lo[d] - x[d], above = x[d] - g->hi[d];
        const double gap = below > above ? below : above;
        if (gap > 0.0) d2 += gap * gap;
    }
    return d2 > 0.0 ? r - sqrt(d2) : r;
}

// The k-th smallest of v[0, n) (0 <= k < n), reordering v: quickselect (Hoare's partition).
static double select_kth(double *v, int64_t n, int64_t k)
{
    int64_t a = 0, b = n - 1;
    while (a < b) {
        const double pivot = v[a + (b - a) / 2];
        int64_t i = a, j = b;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) {
                const double t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (k <= j)
            b = j;
        else if (k >= i)
            a = i;
        else
            break;
    }
    return v[k];
}

// The radius to size the cells of a batch of radius queries for (grid_for_radius): the largest
// radius r_max, as the C library's cells of r, unless the balls come from outside the points'
// box. A ball from far away meets the points in a thin cap, however large its radius: cells of
// r_max held every point in a cell or a few, and each query tested them all (queries from about
// 1000 box widths away, each reaching a little into the data: 0.22-0.49x cKDTree). Then the
// median depth the balls reach into the box (ball_depth) sizes them, but never below about 16
// points a cell at the box's mean density: the walk clips the ball's box of cells row by row,
// so a deep ball on small cells costs about the cells its answer fills, while the cap of a
// shallow one spans a whole face of the box, a row or a short run of cells each (on the
// corpus's far and axis queries, cells of 1, 4, 16 and 64 points at the mean density: 16 is
// the best or near it on every set, 3.5-78x cKDTree; cells of the depth alone took 0.26x on
// clustered sets, whose sparse faces it cut into thousands of empty cells). x: m points;
// radii: one each, or NULL for r. Periodic grids keep r_max (their queries are wrapped into
// the box).
static double ball_cells(const nbpyGrid *g, const double *x, npy_intp m, const double *radii,
                         double r, double r_max)
{
    if (g->half < (double)INFINITY || g->n == 0 || m <= 0) return r_max;
    npy_intp outside = 0;
    for (npy_intp q = 0; q < m && outside == 0; q++) {
        const double rq = radii != NULL ? radii[q] : r;
        outside = ball_depth(g, x + q * g->dim, rq) < rq;
    }
    if (outside == 0) return r_max; // every centre in the box: the common case
    double *depth = malloc((size_t)m * sizeof *depth);
    if (depth == NULL) return r_max; // only a tuning: the answer is the same
    npy_intp reach = 0;              // the balls that reach the box at all
    for (npy_intp q = 0; q < m; q++) {
        const double dq = ball_depth(g, x + q * g->dim, radii != NULL ? radii[q] : r);
        if (dq > 0.0) depth[reach++] = dq; // NaN: not counted
    }
    double want = reach > 0 ? select_kth(depth, reach, reach / 2) : r_max;
    free(depth);
    const double floor_c = g->box_spacing * pow(16.0, 1.0 / g->dim);
    want = want > floor_c ? want : floor_c;
    return want < r_max ? want : r_max;
}

// One point, holding the GIL: small queries cost less than releasing it.
static PyObject *ball_one(nbpyGrid *g, const double *x, double r, nbFilter filter, bool sort,
                          bool length_only)
{
    if (grid_radius(r) < 0) return NULL;
    const nbGrid *grid = grid_for_radius(g, ball_cells(g, x, 1, NULL, r, r), RADIUS_QUERIES);
    if (grid == NULL) return NULL;
    int32_t stack[256];
    int32_t *v = stack, found = 0;
    nbStatus st = nb_grid_query_radius(grid, x, r, filter, length_only ? NULL : v,
                                       length_only ? 0 : 256, &found);
    if (st == NB_ERR_BUFFER_TOO_SMALL && length_only) return PyLong_FromLong(found);
    if (st == NB_ERR_BUFFER_TOO_SMALL) {
        v = malloc((size_t)found * sizeof *v);
        if (v == NULL) return PyErr_NoMemory();
        PyThreadState *ts_ = PyEval_SaveThread();
        st = nb_grid_query_radius(grid, x, r, filter, v, found, &found);
        PyEval_RestoreThread(ts_);
    }
    PyObject *res = NULL;
    if (st != NB_OK) {
        nbpy_error(st, "query_ball_point");
    } else if (length_only) {
        res = PyLong_FromLong(found);
    } else {
        if (sort) nbpy_sort_i32(v, found);
        res = list_of(v, found, NULL);
    }
    if (v != stack) free(v);
    return res;
}

static void ball_free(BallCtx *c)
{
    if (c == NULL) return;
    for (int p = 0; p < c->parts; p++) {
        free(c->part[p].v);
        free(c->part[p].raw);
    }
    free(c->offs);
    free(c->owner);
    free(c->counts);
    free(c);
}

// Runs m radius queries (x: m contiguous points; radii: one each, or NULL for r) on one grid
// built for the largest radius, with one GIL release for all of them, in cell order for large
// batches. Returns the filled context (ball_free it), or NULL with the error set.
static BallCtx *ball_batch(nbpyGrid *g, const double *x, npy_intp m, const double *radii, double r,
                           nbFilter filter, bool sort, bool length_only, int workers,
                           const BallCtx *norm)
{
    double r_max = r;
    if (radii != NULL) {
        r_max = 0.0;
        for (npy_intp q = 0; q < m; q++) {
            if (grid_radius(radii[q]) < 0) return NULL;
            if (radii[q] > r_max) r_max = radii[q];
        }
    } else if (grid_radius(r) < 0) {
        return NULL;
    }
    const nbGrid *grid = grid_for_radius(g, ball_cells(g, x, m, radii, r, r_max), RADIUS_QUERIES);
    if (grid == NULL) return NULL;
    BallCtx *c = calloc(1, sizeof *c);
    size_t each = (size_t)(m > 0 ? m : 1);
    if (c != NULL) {
        c->counts = malloc(each * sizeof *c->counts);
        c->offs = malloc(each * sizeof *c->offs);
        c->owner = malloc(each * sizeof *c->owner);
    }
    if (c == NULL || c->counts == NULL || c->offs == NULL || c->owner == NULL) {
        ball_free(c);
        PyErr_NoMemory();
        return NULL;
    }
    c->grid = grid;
    c->x = x;
    c->r = radii;
    c->r0 = r;
    c->dim = g->dim;
    c->filter = filter;
    c->sort = sort;
    c->length_only = length_only;
    if (norm != NULL) {
        c->norm = true;
        c->p = norm->p;
        c->lim = norm->lim;
        c->lim0 = norm->lim0;
        c->points = &g->view;
        c->period = g->period;
    }
    c->parts = workers < m ? workers : (m > 0 ? (int)m : 1);
    PyThreadState *ts_ = PyEval_SaveThread();
    int64_t *order = NULL;
    nbGridInfo info;
    if (m >= 1024 && nb_grid_info(grid, &info) == NB_OK)
        order = query_order(c->x, m, g->dim, info.cell_size);
    c->order = order;
    nbpy_parallel(c->parts, m, ball_part, c);
    free(order);
    PyEval_RestoreThread(ts_);
    for (int p = 0; p < c->parts; p++) {
        if (c->part[p].st != NB_OK) {
            char what[64];
            snprintf(what, sizeof what, "query_ball_point: x[%lld]", (long long)c->part[p].bad);
            nbpy_error(c->part[p].st, what);
            ball_free(c);
            return NULL;
        }
    }
    return c;
}

static PyObject *grid_query_ball_point(nbpyGrid *g, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {
        "x",        "r",    "p", "eps", "workers", "return_sorted", "return_length",
        "category", "mask", NULL};
    PyObject *x_o, *r_o, *p_o = Py_None, *eps_o = Py_None, *workers_o = Py_None;
    PyObject *sorted_o = Py_None, *cat_o = Py_None, *mask_o = Py_None;
    int length_only = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|OOOOp$OO:query_ball_point", kwlist, &x_o, &r_o,
                                     &p_o, &eps_o, &workers_o, &sorted_o, &length_only, &cat_o,
                                     &mask_o))
        return NULL;
    if (grid_ready(g) < 0) return NULL;
    nbFilter filter;
    int workers;
    if (nbpy_check_p_eps(p_o, eps_o) < 0 || nbpy_filter(cat_o, mask_o, &filter) < 0 ||
        nbpy_workers(workers_o, &workers) < 0)
        return NULL;
    bool sort = sorted_o == Py_None || PyObject_IsTrue(sorted_o);
    double x1[3], r;
    int fast = nbpy_point_fast(x_o, g->dim, x1);
    if (fast < 0) return NULL;
    if (fast == 1 && (PyFloat_Check(r_o) || PyLong_Check(r_o))) {
        if (nbpy_double(r_o, "r", &r) < 0) return NULL;
        return ball_one(g, x1, r, filter, sort, length_only);
    }
    int single, lead_nd;
    npy_intp m, lead[NPY_MAXDIMS];
    PyArrayObject *x = nbpy_query_points(x_o, g->dim, "x", &single, &m, lead, &lead_nd);
    if (x == NULL) return NULL;
    PyArrayObject *r_arr;
    if (grid_radii(r_o, lead_nd, lead, &r_arr, &r) < 0) {
        Py_DECREF(x);
        return NULL;
    }
    if (single) {
        PyObject *res = ball_one(g, PyArray_DATA(x), r, filter, sort, length_only);
        Py_DECREF(x);
        return res;
    }
    // A batch: every radius checked, one grid for the largest, one GIL release for all.
    BallCtx *c = ball_batch(g, PyArray_DATA(x), m, r_arr != NULL ? PyArray_DATA(r_arr) : NULL, r,
                            filter, sort, length_only, workers, NULL);
    PyObject *res = NULL;
    if (c == NULL) {
        // the error is set
    } else if (length_only) {
        res = PyArray_SimpleNew(lead_nd, lead, NPY_INTP);
        if (res != NULL) {
            npy_intp *out = PyArray_DATA((PyArrayObject *)res);
            for (npy_intp q = 0; q < m; q++) out[q] = (npy_intp)c->counts[q];
        }
    } else {
        res = PyArray_SimpleNew(lead_nd, lead, NPY_OBJECT);
        // shared index objects when the lists hold more entries than an eighth of the points
        // (below that, the table would cost more than it saves)
        IntTable ints = {NULL, 0};
        int64_t entries = 0;
        for (npy_intp q = 0; q < m; q++) entries += c->counts[q];
        bool share = entries >= g->n / 8;
        if (res != NULL && share && int_table_init(&ints, g->n) < 0) Py_CLEAR(res);
        if (res != NULL) {
            PyObject **out = PyArray_DATA((PyArrayObject *)res);
            for (npy_intp q = 0; q < m; q++) {
                PyObject *list = list_of(c->part[c->owner[q]].v + c->offs[q], c->counts[q],
                                         share ? &ints : NULL);
                if (list == NULL) {
                    Py_CLEAR(res);
                    break;
                }
                Py_XSETREF(out[q], list);
            }
        }
        int_table_free(&ints);
    }
    ball_free(c);
    Py_DECREF(x);
    Py_XDECREF(r_arr);
    return res;
}

// _rows(x, r, sort=True, workers=1, p=None, limit=None): the radius queries of a batch as
// compressed rows, the form the cKDTree methods filter and count with numpy: (offsets,
// indices), int64 offsets of m + 1 entries and the intp indices of query q in
// indices[offsets[q]:offsets[q + 1]] (ascending with sort). x is an (m, dim) array, r a number
// or one radius per query. With p (1 <= p <= inf), only the points within distance `limit` (a
// number or one per query) in the L_p norm are kept (raw distance, see ball_raw, <= the raw
// limit: limit^p, limit*limit, or limit; nothing for a negative one), and a third array holds
// those raw distances.
static PyObject *grid_rows(nbpyGrid *g, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"x", "r", "sort", "workers", "p", "limit", NULL};
    PyObject *x_o, *r_o, *workers_o = Py_None, *p_o = Py_None, *lim_o = Py_None;
    int sort = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|pOOO:_rows", kwlist, &x_o, &r_o, &sort,
                                     &workers_o, &p_o, &lim_o))
        return NULL;
    int workers;
    if (grid_ready(g) < 0 || nbpy_workers(workers_o, &workers) < 0) return NULL;
    int single, lead_nd;
    npy_intp m, lead[NPY_MAXDIMS];
    PyArrayObject *x = nbpy_query_points(x_o, g->dim, "x", &single, &m, lead, &lead_nd);
    if (x == NULL) return NULL;
    PyArrayObject *r_arr = NULL, *lim_arr = NULL;
    double r;
    npy_intp one = m;
    BallCtx norm = {0};
    BallCtx *c = NULL;
    if (grid_radii(r_o, 1, &one, &r_arr, &r) < 0) goto out;
    if (p_o != Py_None) {
        if (nbpy_double(p_o, "p", &norm.p) < 0 ||
            grid_radii(lim_o, 1, &one, &lim_arr, &norm.lim0) < 0)
            goto out;
        if (!(norm.p >= 1.0)) {
            PyErr_SetString(PyExc_ValueError, "Only p-norms with 1<=p<=infinity permitted");
            goto out;
        }
        // the limits as raw distances, in place in our own copy (one pow, as the distances')
        if (lim_arr != NULL) {
            PyArrayObject *own = (PyArrayObject *)PyArray_NewCopy(lim_arr, NPY_CORDER);
            Py_SETREF(lim_arr, own);
            if (lim_arr == NULL) goto out;
            double *v = PyArray_DATA(lim_arr);
            for (npy_intp q = 0; q < m; q++) v[q] = ball_raw_limit(v[q], norm.p);
            norm.lim = v;
        }
        norm.lim0 = ball_raw_limit(norm.lim0, norm.p);
    }
    c = ball_batch(g, PyArray_DATA(x), m, r_arr != NULL ? PyArray_DATA(r_arr) : NULL, r,
                   NB_FILTER_ALL, sort, false, workers, p_o != Py_None ? &norm : NULL);
out:
    Py_DECREF(x);
    Py_XDECREF(r_arr);
    Py_XDECREF(lim_arr);
    if (c == NULL) return NULL;
    npy_intp rows = m + 1, total = 0;
    for (npy_intp q = 0; q < m; q++) total += (npy_intp)c->counts[q];
    PyObject *off = PyArray_SimpleNew(1, &rows, NPY_INT64);
    PyObject *idx = PyArray_SimpleNew(1, &total, NPY_INTP);
    PyObject *raw = c->norm ? PyArray_SimpleNew(1, &total, NPY_DOUBLE) : NULL;
    if (off != NULL && idx != NULL && (raw != NULL || !c->norm)) {
        int64_t *o = PyArray_DATA((PyArrayObject *)off);
        npy_intp *v = PyArray_DATA((PyArrayObject *)idx);
        double *w = raw != NULL ? PyArray_DATA((PyArrayObject *)raw) : NULL;
        o[0] = 0;
        for (npy_intp q = 0; q < m; q++) {
            const BallPart *part = &c->part[c->owner[q]];
            const int32_t *src = part->v + c->offs[q];
            for (int64_t j = 0; j < c->counts[q]; j++) v[o[q] + j] = src[j];
            if (w != NULL && c->counts[q] > 0)
                memcpy(w + o[q], part->raw + c->offs[q], (size_t)c->counts[q] * sizeof *w);
            o[q + 1] = o[q] + c->counts[q];
        }
    }
    bool norm_out = c->norm;
    ball_free(c);
    if (off == NULL || idx == NULL || (norm_out && raw == NULL)) {
        Py_XDECREF(off);
        Py_XDECREF(idx);
        Py_XDECREF(raw);
        return NULL;
    }
    return norm_out ? Py_BuildValue("(NNN)", off, idx, raw) : Py_BuildValue("(NN)", off, idx);
}

// ---- k nearest ----

typedef struct KnnCtx {
    const nbGrid *grid;
    const nbPoints *points; // the grid's points (knn_seed)
    const double *x;
    int dim;
    int32_t kmax;
    int32_t kout;
    const npy_intp *kth; // kout 0-based ranks, or NULL for 0 .. kout-1
    double dub2;         // keep a neighbour when dist2 < dub2
    nbFilter filter;
    npy_intp n;
    const int64_t *order; // processing order of the queries, or NULL for 0 .. m-1
    double *dist;
    npy_intp *index;
    nbNeighbor *heap[NBPY_MAX_PARTS];
    nbStatus st[NBPY_MAX_PARTS];
    int64_t bad[NBPY_MAX_PARTS];
    bool own;     // the batch: the queries are the grid's own points (one part)
    int64_t rows; // the batch: queries a call answers at most (its buffers' rows)
    int32_t *found[NBPY_MAX_PARTS];
} KnnCtx;

// Query q's row of the results from its `found` nearest (heap), as scipy shapes them: the
// ranks asked for, a missing neighbour (or one not below the strict bound) as inf and n.
static void knn_row(const KnnCtx *c, int64_t q, const nbNeighbor *heap, int32_t found)
{
    double *dist = c->dist + q * c->kout;
    npy_intp *index = c->index + q * c->kout;
    for (int32_t j = 0; j < c->kout; j++) {
        npy_intp rank = c->kth != NULL ? c->kth[j] : j;
        if (rank < found && heap[rank].dist2 < c->dub2) {
            dist[j] = sqrt(heap[rank].dist2);
            index[j] = heap[rank].index;
        } else {
            dist[j] = (double)INFINITY;
            index[j] = c->n;
        }
    }
}

// A bound on the k-th nearest distance of query x from the k points found for the query before
// it (prev, k distinct points): the farthest of them from x. A search given it as its
// max_distance prunes every box beyond it from the start, where one without must first fill its
// k best (k = 8 of every point of the corpus's tail3d, sphere3d and screen2d, in the batch's
// order: 10-15% fewer instructions in the kNN index's walk, 5% fewer in all; a 3D clump in a
// periodic box, whose ring walk is clipped to the bound from its first ring: 16%; an exact
// bound would save about 21%). Only a hint: a search that finds fewer than k within it is run
// again without it (knn_part).
static double knn_seed(const KnnCtx *c, const nbNeighbor *prev, const double *x)
{
    const char *base = (const char *)c->points->data;
    const size_t stride = c->points->stride;
    double worst = 0.0;
    if (c->dim == 3) {
        for (int32_t j = 0; j < c->kmax; j++) {
            const double *p = (const double *)(base + (size_t)prev[j].index * stride);
            const double dx = x[0] - p[0], dy = x[1] - p[1], dz = x[2] - p[2];
            const double d2 = dx * dx + dy * dy + dz * dz;
            worst = d2 > worst ? d2 : worst;
        }
    } else {
        for (int32_t j = 0; j < c->kmax; j++) {
            const double *p = (const double *)(base + (size_t)prev[j].index * stride);
            const double dx = x[0] - p[0], dy = x[1] - p[1];
            const double d2 = dx * dx + dy * dy;
            worst = d2 > worst ? d2 : worst;
        }
    }
    return sqrt(worst) * (1.0 + 0x1p-40);
}

static void knn_part(void *vctx, int64_t begin, int64_t end, int part)
{
    KnnCtx *c = vctx;
    nbNeighbor *heap = c->heap[part];
    // The user's bound, with room for the rounding of its root: a neighbour beyond it is
    // dropped below anyway (dub2 is strict, the search's max_distance inclusive).
    const double dub = sqrt(c->dub2) * (1.0 + 0x1p-40);
    bool seeded = false; // heap holds the previous query's k neighbours
    for (int64_t at = begin; at < end; at++) {
        int64_t q = c->order != NULL ? c->order[at] : at;
        const double *x = c->x + q * c->dim;
        // Found k within the seed's bound, they are the k nearest: every point not found is
        // beyond it, strictly farther than all k.
        const double seed = seeded ? knn_seed(c, heap, x) : (double)INFINITY;
        int32_t found = 0;
        nbStatus st =
            nb_grid_knn(c->grid, x, c->filter, seed < dub ? seed : dub, heap, c->kmax, &found);
        if (st == NB_OK && found < c->kmax && seed < dub)
            st = nb_grid_knn(c->grid, x, c->filter, dub, heap, c->kmax, &found);
        seeded = found == c->kmax && (int64_t)c->kmax < (int64_t)c->n;
        if (st != NB_OK) {
            c->st[part] = st;
            c->bad[part] = q;
            return;
        }
        knn_row(c, q, heap, found);
    }
}

// Queries [begin, end) through nb_grid_knn_many, c->rows at a time (the grid's own points: all
// at once). A failing call leaves its status in st[part] (the caller then runs knn_part, which
// names the query).
static void knn_batch_part(void *vctx, int64_t begin, int64_t end, int part)
{
    KnnCtx *c = vctx;
    const double dub = sqrt(c->dub2) * (1.0 + 0x1p-40); // as knn_part
    for (int64_t at = begin; at < end; at += c->rows) {
        const int64_t to = end - at < c->rows ? end : at + c->rows;
        const nbPoints view = {c->x + at * c->dim, (int32_t)(to - at), c->dim, 0, NULL, 0, NULL, 0};
        const nbStatus st = nb_grid_knn_many(c->grid, c->own ? NULL : &view, c->filter, dub,
                                             c->heap[part], c->kmax, c->found[part]);
        if (st != NB_OK) {
            c->st[part] = st;
            c->bad[part] = at;
            return;
        }
        for (int64_t q = at; q < to; q++)
            knn_row(c, q, c->heap[part] + (q - at) * c->kmax, c->found[part][q - at]);
    }
}

static PyObject *grid_query(nbpyGrid *g, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"x",       "k",        "eps",  "p", "distance_upper_bound",
                             "workers", "category", "mask", NULL};
    PyObject *x_o, *k_o = NULL, *eps_o = Py_None, *p_o = Py_None, *dub_o = Py_None;
    PyObject *workers_o = Py_None, *cat_o = Py_None, *mask_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OOOOO$OO:query", kwlist, &x_o, &k_o, &eps_o,
                                     &p_o, &dub_o, &workers_o, &cat_o, &mask_o))
        return NULL;
    if (grid_ready(g) < 0) return NULL;
    nbFilter filter;
    int workers;
    double dub = (double)INFINITY;
    if (nbpy_check_p_eps(p_o, eps_o) < 0 || nbpy_filter(cat_o, mask_o, &filter) < 0 ||
        nbpy_workers(workers_o, &workers) < 0)
        return NULL;
    if (dub_o != Py_None) {
        if (nbpy_double(dub_o, "distance_upper_bound", &dub) < 0) return NULL;
        if (isnan(dub) || dub < 0.0) {
            PyErr_SetString(PyExc_ValueError, "distance_upper_bound must be >= 0");
            return NULL;
        }
    }
    // k: an int (the k nearest) or a sequence of 1-based ranks (scipy's "k-th nearest").
    long long kint = 1;
    PyArrayObject *k_arr = NULL;
    int32_t kmax, kout;
    if (k_o == NULL || k_o == Py_None || PyLong_Check(k_o) || PyArray_IsScalar(k_o, Integer)) {
        if (k_o != NULL && k_o != Py_None) {
            kint = PyLong_AsLongLong(k_o);
            if (kint == -1 && PyErr_Occurred()) return NULL;
        }
        if (kint < 1 || kint > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "k must be >= 1 (and below 2**31)");
            return NULL;
        }
        kmax = kout = (int32_t)kint;
    } else {
        // A private copy, always: the ranks are made 0-based in place below, and the caller's
        // array must not change.
        k_arr = (PyArrayObject *)PyArray_FROMANY(k_o, NPY_INTP, 1, 1,
                                                 NPY_ARRAY_CARRAY | NPY_ARRAY_ENSURECOPY);
        if (k_arr == NULL) return NULL;
        npy_intp *ks = PyArray_DATA(k_arr);
        npy_intp nk = PyArray_DIM(k_arr, 0), big = 0;
        for (npy_intp j = 0; j < nk; j++) {
            if (ks[j] < 1 || ks[j] > INT32_MAX) {
                Py_DECREF(k_arr);
                PyErr_SetString(PyExc_ValueError, "every k must be >= 1 (and below 2**31)");
                return NULL;
            }
            if (ks[j] > big) big = ks[j];
            ks[j] -= 1;
        }
        if (nk == 0 || nk > INT32_MAX) {
            Py_DECREF(k_arr);
            PyErr_SetString(PyExc_ValueError, "k must not be empty");
            return NULL;
        }
        kmax = (int32_t)big;
        kout = (int32_t)nk;
    }
    int single = 1, lead_nd = 0;
    npy_intp m = 1, lead[NPY_MAXDIMS + 1];
    double x1[3];
    PyArrayObject *x = NULL;
    const double *xs = x1;
    int fast = nbpy_point_fast(x_o, g->dim, x1);
    if (fast < 0) goto fail;
    if (fast == 0) {
        x = nbpy_query_points(x_o, g->dim, "x", &single, &m, lead, &lead_nd);
        if (x == NULL) goto fail;
        xs = PyArray_DATA(x);
    }
    const bool own = x != NULL && grid_own_points(g, xs, m);
    const bool batch = x != NULL && knn_batch_wanted(g, m);
    const nbGrid *grid = batch ? grid_for_batch(g, kmax) : grid_for_knn(g, kmax, own);
    if (grid == NULL) goto fail;
    // Outputs: lead + (kout,), or lead alone for an int k of 1, as scipy shapes them.
    bool squeeze = k_arr == NULL && kint == 1;
    int out_nd = lead_nd + (squeeze ? 0 : 1);
    lead[lead_nd] = kout;
    PyObject *d_arr = PyArray_SimpleNew(out_nd, lead, NPY_DOUBLE);
    PyObject *i_arr = PyArray_SimpleNew(out_nd, lead, NPY_INTP);
    KnnCtx *c = calloc(1, sizeof *c);
    int parts = workers < m ? workers : (m > 0 ? (int)m : 1);
    if (d_arr == NULL || i_arr == NULL || c == NULL) goto fail_out;
    c->grid = grid;
    c->points = &g->view;
    c->x = xs;
    c->dim = g->dim;
    c->kmax = kmax;
    c->kout = kout;
    c->kth = k_arr != NULL ? PyArray_DATA(k_arr) : NULL;
    c->dub2 = dub * dub;
    c->filter = filter;
    c->n = g->n;
    c->dist = PyArray_DATA((PyArrayObject *)d_arr);
    c->index = PyArray_DATA((PyArrayObject *)i_arr);
    // The batch: the grid's own points in one call (it groups them by the grid's cells) while
    // its rows of neighbours take at most 64 MB, other queries (and more rows) in calls of up to
    // 2^16 a part (grouped within each call).
    c->own = batch && own && parts == 1 && (int64_t)m * kmax <= ((int64_t)1 << 22);
    c->rows = !batch ? 1 : c->own ? (int64_t)m : (m / parts + 1 < 65536 ? m / parts + 1 : 65536);
    for (int p = 0; p < parts; p++) {
        c->heap[p] = malloc((size_t)c->rows * (size_t)kmax * sizeof(nbNeighbor));
        c->found[p] = batch ? malloc((size_t)c->rows * sizeof(int32_t)) : NULL;
        if (c->heap[p] == NULL || (batch && c->found[p] == NULL)) {
            PyErr_NoMemory();
            goto fail_out;
        }
    }
    if (batch) {
        PyThreadState *ts_ = PyEval_SaveThread();
        nbpy_parallel(parts, m, knn_batch_part, c);
        bool failed = false;
        for (int p = 0; p < parts; p++) failed |= c->st[p] != NB_OK;
        if (failed) { // a bad query: the one-query path below names it
            for (int p = 0; p < parts; p++) c->st[p] = NB_OK;
            nbpy_parallel(parts, m, knn_part, c);
        }
        PyEval_RestoreThread(ts_);
    } else if (single && m == 1 && kmax <= 64) {
        knn_part(c, 0, 1, 0); // small: not worth releasing the GIL
    } else {
        PyThreadState *ts_ = PyEval_SaveThread();
        int64_t *order = NULL;
        nbGridInfo info;
        if (m >= 1024 && nb_grid_info(grid, &info) == NB_OK)
            order = query_order(xs, m, g->dim, info.cell_size);
        c->order = order;
        nbpy_parallel(parts, m, knn_part, c);
        free(order);
        PyEval_RestoreThread(ts_);
    }
    for (int p = 0; p < parts; p++) {
        if (c->st[p] != NB_OK) {
            char what[64];
            if (single)
                snprintf(what, sizeof what, "query: x");
            else
                snprintf(what, sizeof what, "query: x[%lld]", (long long)c->bad[p]);
            nbpy_error(c->st[p], what);
            goto fail_out;
        }
    }
    for (int p = 0; p < parts; p++) {
        free(c->heap[p]);
        free(c->found[p]);
    }
    free(c);
    Py_XDECREF(x);
    Py_XDECREF(k_arr);
    if (single && squeeze) { // one point, k = 1: Python scalars, as scipy returns
        PyObject *res =
            Py_BuildValue("(dn)", *(double *)PyArray_DATA((PyArrayObject *)d_arr),
                          (Py_ssize_t) * (npy_intp *)PyArray_DATA((PyArrayObject *)i_arr));
        Py_DECREF(d_arr);
        Py_DECREF(i_arr);
        return res;
    }
    return Py_BuildValue("(NN)", d_arr, i_arr);
fail_out:
    if (c != NULL)
        for (int p = 0; p < parts; p++) {
            free(c->heap[p]);
            free(c->found[p]);
        }
    free(c);
    Py_XDECREF(d_arr);
    Py_XDECREF(i_arr);
fail:
    Py_XDECREF(x);
    Py_XDECREF(k_arr);
    return NULL;
}

// ---- k nearest in a Minkowski norm ----

// The k nearest in the L_p norm (p != 2, 1 <= p <= inf) through nb_grid_knn_norm (the kNN index
// or the cells, searched with the norm's own distances and bounds), a query at a time.
typedef struct KnnPPart {
    nbNeighbor *heap; // k
    nbStatus st;
    int64_t bad;
} KnnPPart;

typedef struct KnnPCtx {
    const nbGrid *grid;
    const double *x;
    int dim;
    int32_t k;
    double p;
    double dub;     // the search's max_distance (inclusive there)
    double dub_raw; // keep a neighbour when raw < dub_raw (strict, as scipy)
    npy_intp n;
    int64_t *order; // processing order of the queries (query_order), or NULL for 0 .. m-1
    double *dist;
    npy_intp *index;
    KnnPPart part[NBPY_MAX_PARTS];
} KnnPCtx;

static void knnp_part(void *vctx, int64_t begin, int64_t end, int part)
{
    KnnPCtx *c = vctx;
    KnnPPart *w = &c->part[part];
    const bool root = c->p != 1.0 && !isinf(c->p);
    for (int64_t at = begin; at < end; at++) {
        int64_t q = c->order != NULL ? c->order[at] : at;
        int32_t found = 0;
        nbStatus st = nb_grid_knn_norm(c->grid, c->x + q * c->dim, c->p, NB_FILTER_ALL, c->dub,
                                       w->heap, c->k, &found);
        if (st != NB_OK) {
            w->st = st;
            w->bad = q;
            return;
        }
        double *dist = c->dist + q * c->k;
        npy_intp *index = c->index + q * c->k;
        for (int32_t j = 0; j < c->k; j++) {
            bool hit = j < found && w->heap[j].dist2 < c->dub_raw;
            double raw = hit ? w->heap[j].dist2 : 0.0;
            dist[j] = !hit ? (double)INFINITY : root ? pow(raw, 1.0 / c->p) : raw;
            index[j] = hit ? w->heap[j].index : c->n;
        }
    }
}

// _knn_p(x, k, p, distance_upper_bound, workers): (distances, indices), each (m, k), of the k
// nearest in the L_p norm (1 <= p <= inf, p != 2) for the (m, dim) finite points x; a missing
// neighbour is inf and index n; distance_upper_bound is strict. The GIL is released.
static PyObject *grid_knn_p(nbpyGrid *g, PyObject *args)
{
    PyObject *x_o, *workers_o;
    int k;
    double p, dub;
    if (!PyArg_ParseTuple(args, "OiddO:_knn_p", &x_o, &k, &p, &dub, &workers_o)) return NULL;
    int workers;
    if (grid_ready(g) < 0 || nbpy_workers(workers_o, &workers) < 0) return NULL;
    if (k < 1 || !(p >= 1.0) || p == 2.0 || !(dub >= 0.0)) {
        PyErr_SetString(PyExc_ValueError, "_knn_p: k >= 1, p >= 1 (not 2), bound >= 0");
        return NULL;
    }
    int single, lead_nd;
    npy_intp m, lead[NPY_MAXDIMS + 1];
    PyArrayObject *x = nbpy_query_points(x_o, g->dim, "x", &single, &m, lead, &lead_nd);
    if (x == NULL) return NULL;
    const bool own = grid_own_points(g, PyArray_DATA(x), m);
    const nbGrid *grid = grid_for_knn(g, k, own);
    npy_intp dims[2] = {m, k};
    PyObject *d_arr = grid != NULL ? PyArray_SimpleNew(2, dims, NPY_DOUBLE) : NULL;
    PyObject *i_arr = grid != NULL ? PyArray_SimpleNew(2, dims, NPY_INTP) : NULL;
    KnnPCtx *c = calloc(1, sizeof *c);
    int parts = workers < m ? workers : (m > 0 ? (int)m : 1);
    PyObject *res = NULL;
    if (grid == NULL || d_arr == NULL || i_arr == NULL) goto out;
    if (c == NULL) {
        PyErr_NoMemory();
        goto out;
    }
    c->grid = grid;
    c->x = PyArray_DATA(x);
    c->dim = g->dim;
    c->k = k;
    c->p = p;
    c->dub = dub;
    c->dub_raw = isinf(dub) ? (double)INFINITY : ball_raw_limit(dub, p);
    c->n = g->n;
    c->dist = PyArray_DATA((PyArrayObject *)d_arr);
    c->index = PyArray_DATA((PyArrayObject *)i_arr);
    for (int t = 0; t < parts; t++) {
        c->part[t].heap = malloc((size_t)k * sizeof(nbNeighbor));
        if (c->part[t].heap == NULL) {
            PyErr_NoMemory();
            goto out;
        }
    }
    PyThreadState *ts_ = PyEval_SaveThread();
    nbGridInfo info;
    if (m >= 1024 && nb_grid_info(grid, &info) == NB_OK)
        c->order = query_order(c->x, m, g->dim, info.cell_size);
    nbpy_parallel(parts, m, knnp_part, c);
    free(c->order);
    PyEval_RestoreThread(ts_);
    for (int t = 0; t < parts; t++) {
        if (c->part[t].st != NB_OK) {
            char what[64];
            snprintf(what, sizeof what, "query: x[%lld]", (long long)c->part[t].bad);
            nbpy_error(c->part[t].st, what);
            goto out;
        }
    }
    res = PyTuple_Pack(2, d_arr, i_arr);
out:
    if (c != NULL)
        for (int t = 0; t < parts; t++) {
            free(c->part[t].heap);
        }
    free(c);
    Py_XDECREF(d_arr);
    Py_XDECREF(i_arr);
    Py_DECREF(x);
    return res;
}

// ---- the common calls, parsed by hand ----

// One point, k <= 64, no filter: the k nearest without arrays for k = 1 (Python scalars, as
// scipy returns) and without any allocation but the results.
static PyObject *knn_one(nbpyGrid *g, const double *x, int32_t k)
{
    const nbGrid *grid = grid_for_knn(g, k, false);
    if (grid == NULL) return NULL;
    nbNeighbor heap[64];
    int32_t found = 0;
    nbStatus st = nb_grid_knn(grid, x, NB_FILTER_ALL, (double)INFINITY, heap, k, &found);
    if (st != NB_OK) return nbpy_error(st, "query: x");
    if (k == 1) {
        PyObject *d = PyFloat_FromDouble(found > 0 ? sqrt(heap[0].dist2) : (double)INFINITY);
        PyObject *i = PyLong_FromLong(found > 0 ? heap[0].index : g->n);
        PyObject *res = d != NULL && i != NULL ? PyTuple_Pack(2, d, i) : NULL;
        Py_XDECREF(d);
        Py_XDECREF(i);
        return res;
    }
    npy_intp dims[1] = {k};
    PyObject *d = PyArray_SimpleNew(1, dims, NPY_DOUBLE);
    PyObject *i = PyArray_SimpleNew(1, dims, NPY_INTP);
    if (d == NULL || i == NULL) {
        Py_XDECREF(d);
        Py_XDECREF(i);
        return NULL;
    }
    double *dd = PyArray_DATA((PyArrayObject *)d);
    npy_intp *ii = PyArray_DATA((PyArrayObject *)i);
    for (int32_t j = 0; j < k; j++) {
        dd[j] = j < found ? sqrt(heap[j].dist2) : (double)INFINITY;
        ii[j] = j < found ? heap[j].index : g->n;
    }
    return Py_BuildValue("(NN)", d, i);
}

// query(x) and query(x, k) with x a tuple or list of numbers and k <= 64; the rest goes through
// the keyword parser.
static PyObject *grid_query_fc(nbpyGrid *g, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    if (kwnames == NULL && (nargs == 1 || (nargs == 2 && PyLong_CheckExact(args[1]))) &&
        g->data != NULL) {
        long k = nargs == 2 ? PyLong_AsLong(args[1]) : 1;
        double x[3];
        if (k >= 1 && k <= 64) {
            int fast = nbpy_point_fast(args[0], g->dim, x);
            if (fast < 0) return NULL;
            if (fast == 1) return knn_one(g, x, (int32_t)k);
        }
        PyErr_Clear(); // an overflowing k: the slow path says so
    }
    return nbpy_call_kw((PyCFunctionWithKeywords)grid_query, (PyObject *)g, args, nargs, kwnames);
}

// query_ball_point(x, r) with x a tuple or list of numbers and r a Python number.
static PyObject *grid_query_ball_point_fc(nbpyGrid *g, PyObject *const *args, Py_ssize_t nargs,
                                          PyObject *kwnames)
{
    if (kwnames == NULL && nargs == 2 && g->data != NULL &&
        (PyFloat_Check(args[1]) || PyLong_CheckExact(args[1]))) {
        double x[3], r = PyFloat_AsDouble(args[1]);
        if (r == -1.0 && PyErr_Occurred()) return NULL;
        int fast = nbpy_point_fast(args[0], g->dim, x);
        if (fast < 0) return NULL;
        if (fast == 1) return ball_one(g, x, r, NB_FILTER_ALL, true, false);
    }
    return nbpy_call_kw((PyCFunctionWithKeywords)grid_query_ball_point, (PyObject *)g, args, nargs,
                        kwnames);
}

// ---- box ----

static int grid_corner(PyObject *obj, int dim, const char *name, double *out)
{
    int fast = nbpy_point_fast(obj, dim, out);
    if (fast != 0) return fast < 0 ? -1 : 0;
    PyArrayObject *a = nbpy_as_double(obj, NPY_ARRAY_CARRAY_RO, name);
    if (a == NULL) return -1;
    if (PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) != dim) {
        PyErr_Format(PyExc_ValueError, "%s must have shape (%d,)", name, dim);
        Py_DECREF(a);
        return -1;
    }
    memcpy(out, PyArray_DATA(a), (size_t)dim * sizeof(double));
    Py_DECREF(a);
    return 0;
}

static PyObject *grid_query_box(nbpyGrid *g, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"lo", "hi", "category", "mask", NULL};
    PyObject *lo_o, *hi_o, *cat_o = Py_None, *mask_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|$OO:query_box", kwlist, &lo_o, &hi_o, &cat_o,
                                     &mask_o))
        return NULL;
    if (grid_ready(g) < 0) return NULL;
    nbBox box = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}};
    nbFilter filter;
    if (grid_corner(lo_o, g->dim, "lo", box.min) < 0 ||
        grid_corner(hi_o, g->dim, "hi", box.max) < 0 || nbpy_filter(cat_o, mask_o, &filter) < 0)
        return NULL;
    // Any built grid answers a box; the first query builds one at the mean spacing.
    const nbGrid *grid =
        g->count > 0 ? g->grids[0] : grid_for(g, g->spacing, 0.0, (double)INFINITY);
    if (grid == NULL) return NULL;
    int32_t cap = 1024, found = 0;
    int32_t *v = malloc((size_t)cap * sizeof *v);
    if (v == NULL) return PyErr_NoMemory();
    nbStatus st;
    PyThreadState *ts_ = PyEval_SaveThread();
    st = nb_grid_query_box(grid, &box, filter, v, cap, &found);
    if (st == NB_ERR_BUFFER_TOO_SMALL) {
        int32_t *w = realloc(v, (size_t)found * sizeof *v);
        if (w == NULL) {
            st = NB_ERR_OUT_OF_MEMORY;
        } else {
            v = w;
            st = nb_grid_query_box(grid, &box, filter, v, found, &found);
        }
    }
    if (st == NB_OK) nbpy_sort_i32(v, found);
    PyEval_RestoreThread(ts_);
    PyObject *res = NULL;
    if (st != NB_OK) {
        nbpy_error(st, "query_box");
    } else {
        npy_intp dims[1] = {found};
        res = PyArray_SimpleNew(1, dims, NPY_INTP);
        if (res != NULL) {
            npy_intp *out = PyArray_DATA((PyArrayObject *)res);
            for (int32_t i = 0; i < found; i++) out[i] = v[i];
        }
    }
    free(v);
    return res;
}

// ---- attributes ----

static PyObject *grid_get_data(nbpyGrid *g, void *closure)
{
    (void)closure;
    if (grid_ready(g) < 0) return NULL;
    Py_INCREF(g->data);
    return (PyObject *)g->data;
}

static PyObject *grid_get_bits(nbpyGrid *g, void *closure)
{
    PyObject *o = closure != NULL ? (PyObject *)g->mask : (PyObject *)g->category;
    if (o == NULL) o = Py_None;
    Py_INCREF(o);
    return o;
}

static PyObject *grid_get_n(nbpyGrid *g, void *closure)
{
    (void)closure;
    return PyLong_FromLong(g->n);
}

static PyObject *grid_get_m(nbpyGrid *g, void *closure)
{
    (void)closure;
    return PyLong_FromLong(g->dim);
}

static PyObject *grid_get_cells(nbpyGrid *g, void *closure)
{
    (void)closure;
    PyObject *list = PyList_New(g->count);
    for (int i = 0; list != NULL && i < g->count; i++) {
        nbGridInfo info;
        nb_grid_info(g->grids[i], &info);
        PyObject *o = PyFloat_FromDouble(info.cell_size);
        if (o == NULL) Py_CLEAR(list);
        if (list != NULL) PyList_SET_ITEM(list, i, o);
    }
    return list;
}

static PyObject *grid_memory_bytes(nbpyGrid *g, PyObject *unused)
{
    (void)unused;
    size_t total = 0;
    for (int i = 0; i < g->count; i++) total += nb_grid_memory_bytes(g->grids[i]);
    return PyLong_FromSize_t(total);
}

static PyMethodDef grid_methods[] = {
    {"_query_pairs", (PyCFunction)(void (*)(void))grid_query_pairs_array,
     METH_VARARGS | METH_KEYWORDS, "_query_pairs(r, workers=1): the pairs as an (K, 2) array."},
    {"_neighbour_lists", (PyCFunction)(void (*)(void))grid_neighbour_lists,
     METH_VARARGS | METH_KEYWORDS,
     "_neighbour_lists(r, distances=False, cell_order=False): (offsets, neighbours[, dist2][, "
     "order]) as compressed rows."},
    {"_rows", (PyCFunction)(void (*)(void))grid_rows, METH_VARARGS | METH_KEYWORDS,
     "_rows(x, r, sort=True, workers=1): (offsets, indices), the radius queries as rows."},
    {"_pair_matrix", (PyCFunction)grid_pair_matrix, METH_VARARGS,
     "_pair_matrix(r): (i, j, v), every pair within r both ways with its distance, then the "
     "diagonal."},
    {"_knn_p", (PyCFunction)grid_knn_p, METH_VARARGS,
     "_knn_p(x, k, p, distance_upper_bound, workers): the k nearest in the L_p norm, (m, k) "
     "arrays."},
    {"_pairs_set", (PyCFunction)grid_pairs_set, METH_VARARGS,
     "_pairs_set(r): the pairs within r as a set of (i, j) tuples."},
    {"_count_cross", (PyCFunction)grid_count_cross, METH_VARARGS,
     "_count_cross(other, r): pairs (i of self, j of other) within r (p = 2)."},
    {"count_pairs", (PyCFunction)(void (*)(void))grid_count_pairs, METH_VARARGS | METH_KEYWORDS,
     "count_pairs(r)\n--\n\nThe number of pairs (i, j), i < j, with distance <= r."},
    {"query_ball_point", (PyCFunction)(void (*)(void))grid_query_ball_point_fc,
     METH_FASTCALL | METH_KEYWORDS,
     "query_ball_point(x, r, p=2.0, eps=0, workers=1, return_sorted=None, "
     "return_length=False, *, category=None, mask=None)\n--\n\n"
     "Indices of the points within distance r of x (one point, or an (..., m) array)."},
    {"query", (PyCFunction)(void (*)(void))grid_query_fc, METH_FASTCALL | METH_KEYWORDS,
     "query(x, k=1, eps=0, p=2, distance_upper_bound=inf, workers=1, *, category=None, "
     "mask=None)\n--\n\nDistances and indices of the k nearest points, as cKDTree.query."},
    {"query_box", (PyCFunction)(void (*)(void))grid_query_box, METH_VARARGS | METH_KEYWORDS,
     "query_box(lo, hi, *, category=None, mask=None)\n--\n\n"
     "Indices (ascending) of the points with lo <= p <= hi on every axis."},
    {"memory_bytes", (PyCFunction)grid_memory_bytes, METH_NOARGS,
     "memory_bytes()\n--\n\nBytes held by the grids built so far."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef grid_getset[] = {
    {"data", (getter)grid_get_data, NULL, "The points as the grid reads them (N, m).", NULL},
    {"n", (getter)grid_get_n, NULL, "Number of points.", NULL},
    {"m", (getter)grid_get_m, NULL, "Dimension: 2 or 3.", NULL},
    {"category", (getter)grid_get_bits, NULL, "Category bits per point (uint32) or None.", NULL},
    {"mask", (getter)grid_get_bits, NULL, "Mask bits per point (uint32) or None.", "mask"},
    {"cell_sizes", (getter)grid_get_cells, NULL, "Cell edges of the grids built so far.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject nbpy_GridType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "nearby._nearby._Grid",
    .tp_basicsize = sizeof(nbpyGrid),
    .tp_dealloc = (destructor)grid_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C core of nearby.Grid.",
    .tp_methods = grid_methods,
    .tp_getset = grid_getset,
    .tp_init = (initproc)grid_init,
    .tp_new = grid_new,
};
