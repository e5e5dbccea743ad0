// SPDX-License-Identifier: MIT
// Radius, box and k-nearest queries on the dense grid.
//
// Range queries turn the query's extent into a box of cells and test every point in it. The box
// comes from the same monotone cell map that placed the points: a point p with lo <= p <= hi
// (exactly) has cell(fl(lo)) <= cell(p) <= cell(fl(hi)), so no margin is needed. For a radius
// query the extent is center +- reach(r), the largest true distance the double test can accept.
// The box is clipped to the occupied cells; in hashed mode a box with more cells than are
// occupied is answered by a pass over the occupied cells instead, so no query costs more than
// O(N + cells).
//
// kNN searches rings of cells outward from the query's cell, keeping the k best in the caller's
// buffer as a max-heap ordered by (dist2, index). After ring m, every unvisited point is at least
// the distance from the query to the visited block's faces (less a rounding margin); the search
// stops once the k-th best is strictly closer. If the rings would cost more than scanning every
// point (hashed, far-flung data), it scans every point instead.
#include "grid_internal.h"

typedef struct nbiHitSink {
    int32_t *out;
    int32_t cap;
    int32_t found;
    nbVisitFn *fn;
    void *user;
    bool stop;
} nbiHitSink;

NBI_INLINE void nbi_hit(nbiHitSink *s, int32_t index)
{
    if (s->fn != NULL) {
        if (!s->fn(index, s->user)) s->stop = true;
        return;
    }
    if (s->found < s->cap) s->out[s->found] = index;
    s->found++;
}

// Called for each run of positions [b0, b1) whose cells lie in a query box; false stops.
typedef bool nbiRangeFn(const nbGrid *g, int32_t b0, int32_t b1, void *ctx);

// The number of cells in the box [cl, ch] (inclusive, already clipped to lo..hi).
static double nbi_box_cells(const nbGrid *g, const int64_t cl[3], const int64_t ch[3])
{
    double cells = 1.0;
    for (int a = 0; a < 3; a++) cells *= (double)(ch[a] - cl[a] + 1);
    (void)g;
    return cells;
}

// Visits the positions of every cell in the box [cl, ch], in a deterministic order. Returns the
// work done, in cells examined.
static double nbi_box_visit(const nbGrid *g, const int64_t cl[3], const int64_t ch[3],
                            nbiRangeFn *fn, void *ctx)
{
    const int32_t *start = nbi_grid_start(g);
    const double cells = nbi_box_cells(g, cl, ch);
    if (!g->hashed) {
        const int64_t e0 = g->ext[0], e01 = g->ext[0] * g->ext[1];
        for (int64_t z = cl[2]; z <= ch[2]; z++) {
            for (int64_t y = cl[1]; y <= ch[1]; y++) {
                const int64_t row = (y - g->lo[1]) * e0 + (z - g->lo[2]) * e01 - g->lo[0];
                const int32_t b0 = start[row + cl[0]], b1 = start[row + ch[0] + 1];
                if (b0 < b1 && !fn(g, b0, b1, ctx)) return cells;
            }
        }
        return cells;
    }
    if (cells <= (double)g->ncells) {
        for (int64_t z = cl[2]; z <= ch[2]; z++)
            for (int64_t y = cl[1]; y <= ch[1]; y++)
                for (int64_t x = cl[0]; x <= ch[0]; x++) {
                    const int32_t c = nbi_grid_lookup(g, x, y, z);
                    if (c >= 0 && !fn(g, start[c], start[c + 1], ctx)) return cells;
                }
        return cells;
    }
    const int64_t *keys = (const int64_t *)g->keys.ptr;
    for (int32_t c = 0; c < g->ncells; c++) {
        const int64_t *k = keys + (size_t)c * 3;
        bool in = true;
        for (int a = 0; a < 3; a++) in &= k[a] >= cl[a] && k[a] <= ch[a];
        if (in && !fn(g, start[c], start[c + 1], ctx)) break;
    }
    return (double)g->ncells;
}

// The cell box covering [lo, hi] per axis (doubles, possibly infinite), clipped to the occupied
// cells. False when it is empty.
static bool nbi_cell_box(const nbGrid *g, const double *lo, const double *hi, int64_t cl[3],
                         int64_t ch[3])
{
    for (int a = 0; a < 3; a++) {
        cl[a] = g->lo[a];
        ch[a] = g->hi[a];
    }
    for (int a = 0; a < g->dim; a++) {
        const double l = nbi_cell_f(&g->cm, lo[a]), h = nbi_cell_f(&g->cm, hi[a]);
        // Compare as doubles: l and h may be infinite or beyond int64.
        if (!(l <= (double)g->hi[a]) || !(h >= (double)g->lo[a]) || l > h) return false;
        if (l > (double)g->lo[a]) cl[a] = (int64_t)l;
        if (h < (double)g->hi[a]) ch[a] = (int64_t)h;
    }
    return true;
}

typedef struct nbiRadiusCtx {
    const double *c;
    double r2;
    nbiHitSink *sink;
} nbiRadiusCtx;

static bool nbi_radius_range(const nbGrid *g, int32_t b0, int32_t b1, void *vctx)
{
    const nbiRadiusCtx *x = (const nbiRadiusCtx *)vctx;
    const double *pts = nbi_grid_pts(g);
    const int32_t *idx = nbi_grid_idx(g);
    const int dim = g->dim;
    for (int32_t p = b0; p < b1; p++) {
        if (nbi_dist2(x->c, pts + (size_t)p * dim, dim) <= x->r2) {
            nbi_hit(x->sink, idx[p]);
            if (x->sink->stop) return false;
        }
    }
    return true;
}

static nbStatus nbi_radius(const nbGrid *g, const double *center, double radius, nbiHitSink *s)
{
    for (int a = 0; a < g->dim; a++)
        if (!isfinite(center[a])) return NB_ERR_NOT_FINITE;
    if (!isfinite(radius)) return NB_ERR_NOT_FINITE;
    if (radius < 0.0 || s->cap < 0) return NB_ERR_OUT_OF_RANGE;
    if (g->n == 0) return NB_OK;
    const double reach = nbi_reach(radius);
    double lo[3], hi[3];
    for (int a = 0; a < g->dim; a++) {
        lo[a] = center[a] - reach; // rounding is monotone: every p >= center - reach is >= lo
        hi[a] = center[a] + reach;
    }
    int64_t cl[3], ch[3];
    if (!nbi_cell_box(g, lo, hi, cl, ch)) return NB_OK;
    nbiRadiusCtx x = {center, radius * radius, s};
    nbi_box_visit(g, cl, ch, nbi_radius_range, &x);
    return NB_OK;
}

nbStatus nb_grid_query_radius(const nbGrid *grid, const double *center, double radius, int32_t *out,
                              int32_t capacity, int32_t *found)
{
    if (grid == NULL || center == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    *found = 0;
    nbiHitSink s = {out, capacity, 0, NULL, NULL, false};
    nbStatus st = nbi_radius(grid, center, radius, &s);
    if (st != NB_OK) return st;
    *found = s.found;
    return s.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

nbStatus nb_grid_visit_radius(const nbGrid *grid, const double *center, double radius,
                              nbVisitFn *visit, void *user)
{
    if (grid == NULL || center == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiHitSink s = {NULL, 0, 0, visit, user, false};
    return nbi_radius(grid, center, radius, &s);
}

typedef struct nbiBoxCtx {
    const double *lo, *hi;
    nbiHitSink *sink;
} nbiBoxCtx;

static bool nbi_box_range(const nbGrid *g, int32_t b0, int32_t b1, void *vctx)
{
    const nbiBoxCtx *x = (const nbiBoxCtx *)vctx;
    const double *pts = nbi_grid_pts(g);
    const int32_t *idx = nbi_grid_idx(g);
    const int dim = g->dim;
    for (int32_t p = b0; p < b1; p++) {
        const double *q = pts + (size_t)p * dim;
        bool in = true;
        for (int a = 0; a < dim; a++) in &= q[a] >= x->lo[a] && q[a] <= x->hi[a];
        if (in) {
            nbi_hit(x->sink, idx[p]);
            if (x->sink->stop) return false;
        }
    }
    return true;
}

static nbStatus nbi_box(const nbGrid *g, const double *lo, const double *hi, nbiHitSink *s)
{
    for (int a = 0; a < g->dim; a++)
        if (isnan(lo[a]) || isnan(hi[a])) return NB_ERR_NOT_FINITE;
    if (s->cap < 0) return NB_ERR_OUT_OF_RANGE;
    if (g->n == 0) return NB_OK;
    int64_t cl[3], ch[3];
    if (!nbi_cell_box(g, lo, hi, cl, ch)) return NB_OK;
    nbiBoxCtx x = {lo, hi, s};
    nbi_box_visit(g, cl, ch, nbi_box_range, &x);
    return NB_OK;
}

nbStatus nb_grid_query_box(const nbGrid *grid, const double *lo, const double *hi, int32_t *out,
                           int32_t capacity, int32_t *found)
{
    if (grid == NULL || lo == NULL || hi == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    *found = 0;
    nbiHitSink s = {out, capacity, 0, NULL, NULL, false};
    nbStatus st = nbi_box(grid, lo, hi, &s);
    if (st != NB_OK) return st;
    *found = s.found;
    return s.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

nbStatus nb_grid_visit_box(const nbGrid *grid, const double *lo, const double *hi, nbVisitFn *visit,
                           void *user)
{
    if (grid == NULL || lo == NULL || hi == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiHitSink s = {NULL, 0, 0, visit, user, false};
    return nbi_box(grid, lo, hi, &s);
}

// ---- k nearest ----

// a is worse than b: farther, or as far with a higher index.
NBI_INLINE bool nbi_worse(const nbNeighbor *a, const nbNeighbor *b)
{
    return a->dist2 > b->dist2 || (a->dist2 == b->dist2 && a->index > b->index);
}

static void nbi_sift_down(nbNeighbor *h, int32_t size, int32_t i)
{
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < size && nbi_worse(&h[l], &h[m])) m = l;
        if (r < size && nbi_worse(&h[r], &h[m])) m = r;
        if (m == i) return;
        nbNeighbor t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

typedef struct nbiKnnCtx {
    const double *q;
    nbNeighbor *heap; // max-heap by nbi_worse
    int32_t size, k;
} nbiKnnCtx;

static bool nbi_knn_range(const nbGrid *g, int32_t b0, int32_t b1, void *vctx)
{
    nbiKnnCtx *x = (nbiKnnCtx *)vctx;
    const double *pts = nbi_grid_pts(g);
    const int32_t *idx = nbi_grid_idx(g);
    const int dim = g->dim;
    for (int32_t p = b0; p < b1; p++) {
        nbNeighbor cand = {idx[p], nbi_dist2(x->q, pts + (size_t)p * dim, dim)};
        if (x->size < x->k) { // sift up
            int32_t i = x->size++;
            while (i > 0 && nbi_worse(&cand, &x->heap[(i - 1) / 2])) {
                x->heap[i] = x->heap[(i - 1) / 2];
                i = (i - 1) / 2;
            }
            x->heap[i] = cand;
        } else if (nbi_worse(&x->heap[0], &cand)) {
            x->heap[0] = cand;
            nbi_sift_down(x->heap, x->size, 0);
        }
    }
    return true;
}

// Whether any of the grid's cells lie outside the visited block [cl, ch]; if so, *bound is a
// lower bound on the true distance from q to any point in them, less a rounding margin (it may
// be <= 0, or +inf when the gap overflows: "unknown" and "huge" both just mean "keep going").
static bool nbi_unvisited_bound(const nbGrid *g, const double *q, const int64_t cl[3],
                                const int64_t ch[3], double *bound)
{
    bool outside = false;
    double b = (double)INFINITY;
    const double c = g->cm.cell;
    // p / c may underflow: its rounding then moves p by up to c * 2^-1075, whatever p is.
    const double slack = c * 0x1p-1070 + 0x1p-1000;
    for (int a = 0; a < g->dim; a++) {
        if (ch[a] < g->hi[a]) { // cells above: their points have p / c >= ch + 1, less rounding
            const double edge = (double)(ch[a] + 1) * c;
            const double gap = edge - q[a] - (fabs(edge) + fabs(q[a])) * 0x1p-50 - slack;
            b = gap < b ? gap : b;
            outside = true;
        }
        if (cl[a] > g->lo[a]) { // cells below: their points have p / c < cl, plus rounding
            const double edge = (double)cl[a] * c;
            const double gap = q[a] - edge - (fabs(edge) + fabs(q[a])) * 0x1p-50 - slack;
            b = gap < b ? gap : b;
            outside = true;
        }
    }
    *bound = b;
    return outside;
}

// Visits ring m (cells at Chebyshev distance exactly m from qc), clipped to the grid's box, as
// at most 6 boxes. Returns the work in cells examined.
static double nbi_ring_visit(const nbGrid *g, const int64_t qc[3], int64_t m, nbiKnnCtx *x)
{
    double work = 0.0;
    int64_t cl[3], ch[3];
    const int dim = g->dim;
    // face boxes: for the axis `a` that is "outermost", cells with |d_a| == m, and |d_b| <= m
    // for b < a... use the split: axis a fixed at +-m, axes before a within (-m, m), after a
    // within [-m, m]. Each ring cell belongs to exactly one face.
    for (int a = 0; a < dim; a++) {
        for (int side = -1; side <= 1; side += 2) {
            if (m == 0 && side == 1) break; // ring 0 is a single cell
            bool empty = false;
            for (int b = 0; b < 3; b++) {
                int64_t l, h;
                if (b >= dim) {
                    l = h = 0;
                } else if (b == a) {
                    l = h = qc[b] + side * m;
                } else if (b < a) {
                    l = qc[b] - m + 1;
                    h = qc[b] + m - 1;
                } else {
                    l = qc[b] - m;
                    h = qc[b] + m;
                }
                if (m == 0) l = h = qc[b] * (b < dim);
                if (l < g->lo[b]) l = g->lo[b];
                if (h > g->hi[b]) h = g->hi[b];
                if (l > h) empty = true;
                cl[b] = l;
                ch[b] = h;
            }
            if (!empty) work += nbi_box_visit(g, cl, ch, nbi_knn_range, x);
            if (m == 0) return work;
        }
    }
    return work;
}

nbStatus nb_grid_knn(const nbGrid *grid, const double *point, int32_t k, nbNeighbor *out,
                     int32_t *found)
{
    if (grid == NULL || point == NULL || found == NULL || (out == NULL && k > 0))
        return NB_ERR_NULL_ARG;
    *found = 0;
    const nbGrid *g = grid;
    for (int a = 0; a < g->dim; a++)
        if (!isfinite(point[a])) return NB_ERR_NOT_FINITE;
    if (k < 0) return NB_ERR_OUT_OF_RANGE;
    if (k == 0 || g->n == 0) return NB_OK;
    nbiKnnCtx x = {point, out, 0, k < g->n ? k : g->n};

    // The query's cell, clipped to one cell outside the box so rings start near the data.
    int64_t qc[3] = {0, 0, 0};
    for (int a = 0; a < g->dim; a++) {
        const double f = nbi_cell_f(&g->cm, point[a]);
        qc[a] = f < (double)g->lo[a]   ? g->lo[a] - 1
                : f > (double)g->hi[a] ? g->hi[a] + 1
                                       : (int64_t)f;
    }
    const double budget = 2.0 * (double)g->ncells + 64.0;
    double work = 0.0;
    bool done = false;
    for (int64_t m = 0; !done; m++) {
        work += nbi_ring_visit(g, qc, m, &x);
        int64_t cl[3], ch[3];
        for (int a = 0; a < 3; a++) {
            cl[a] = a < g->dim ? qc[a] - m : 0;
            ch[a] = a < g->dim ? qc[a] + m : 0;
        }
        double bound;
        if (!nbi_unvisited_bound(g, point, cl, ch, &bound)) break; // every cell visited
        if (x.size == x.k && bound > 0.0) {
            const double b2 = bound * bound * (1.0 - 0x1p-40);
            if (b2 > 0x1p-1000 && x.heap[0].dist2 < b2) break;
        }
        if (work > budget) { // far-flung data: a scan of every point is cheaper
            x.size = 0;
            nbi_knn_range(g, 0, g->n, &x);
            done = true;
        }
    }
    // Heap sort in place: ascending by (dist2, index).
    for (int32_t end = x.size - 1; end > 0; end--) {
        nbNeighbor t = out[0];
        out[0] = out[end];
        out[end] = t;
        nbi_sift_down(out, end, 0);
    }
    *found = x.size;
    return NB_OK;
}
