// SPDX-License-Identifier: MIT
// Radius, box and k-nearest queries over a cell-sorted view (view.h), with a filter.
//
// Range queries turn the query's extent into a box of cells and test every point in it. The box
// comes from the same monotone cell map that placed the points: a point p with lo <= p <= hi
// (exactly) has cell(fl(lo)) <= cell(p) <= cell(fl(hi)), so no margin is needed. For a radius
// query the extent is center +- reach(r), the largest true distance the double test can accept.
// The box is clipped to the occupied cells; in a hashed view a box with more cells than are
// occupied is answered by a pass over the occupied cells instead, so no query costs more than
// O(N + cells).
//
// kNN searches rings of cells outward from the query's cell, keeping the k best in the caller's
// buffer as a max-heap ordered by (dist2, index). After ring m, every unvisited point is at least
// the distance from the query to the visited block's faces (less a rounding margin); the search
// stops once the k-th best is strictly closer. If the rings would cost more than scanning every
// point (hashed, far-flung data), it scans every point instead.
//
// The filter is tested per candidate, before the distance is reported. A view without filter
// bits has every point at all bits, so the filter reduces to one test per query.
#include "pair_kernels.h" // the two-lane distance test
#include "view.h"

bool nbi_view_cell_box(const nbiView *v, const double *lo, const double *hi, int64_t cl[3],
                       int64_t ch[3])
{
    for (int a = 0; a < 3; a++) {
        cl[a] = v->lo[a];
        ch[a] = v->hi[a];
    }
    for (int a = 0; a < v->dim; a++) {
        const double l = nbi_cell_f(&v->cm, lo[a]), h = nbi_cell_f(&v->cm, hi[a]);
        // Compare as doubles: l and h may be infinite or beyond int64.
        if (!(l <= (double)v->hi[a]) || !(h >= (double)v->lo[a]) || l > h) return false;
        if (l > (double)v->lo[a]) cl[a] = (int64_t)l;
        if (h < (double)v->hi[a]) ch[a] = (int64_t)h;
    }
    return true;
}

// What a range query tests each candidate with. `per_point`: the view has filter bits, so each
// point is tested against the query's filter; otherwise the filter was settled once up front.
typedef struct nbiRangeCtx {
    const nbiView *v;
    const double *c, *lo, *hi; // centre (radius) or bounds (box)
    double r2;
    nbFilter f;
    bool per_point;
    nbiHitSink *sink;
} nbiRangeCtx;

// One candidate within r: the filter (when the view has bits), then the sink. False: stop.
NBI_INLINE bool nbi_radius_take(const nbiRangeCtx *x, int32_t p)
{
    if (x->per_point && !nbi_view_passes(x->v, p, x->f)) return true;
    nbi_hit(x->sink, x->v->idx[p]);
    return !x->sink->stop;
}

// The candidates [b0, b1) against the centre, two at a time with SSE2 (the pair kernels' lane
// test: each lane computes d2 exactly as nbi_dist2 does), the rest one by one.
NBI_INLINE bool nbi_radius_run_dim(const nbiRangeCtx *x, int dim, int32_t b0, int32_t b1)
{
    const double *pts = x->v->pts;
    int32_t p = b0;
#if defined(__SSE2__)
    const nbiPoint2 c = nbi_point2(x->c, dim, x->r2);
    for (; p + 2 <= b1; p += 2) {
        const int m = nbi_d2_mask2(&c, pts, p, dim);
        if (m != 0) {
            if ((m & 1) && !nbi_radius_take(x, p)) return false;
            if ((m & 2) && !nbi_radius_take(x, p + 1)) return false;
        }
    }
#endif
    for (; p < b1; p++)
        if (nbi_dist2(x->c, pts + (size_t)p * (size_t)dim, dim) <= x->r2 && !nbi_radius_take(x, p))
            return false;
    return true;
}

static bool nbi_radius_run(int32_t b0, int32_t b1, void *vctx)
{
    const nbiRangeCtx *x = (const nbiRangeCtx *)vctx;
    return x->v->dim == 2 ? nbi_radius_run_dim(x, 2, b0, b1) : nbi_radius_run_dim(x, 3, b0, b1);
}

// The fast path of a radius query into a buffer or a count (no visitor): no call per hit, and
// no branch on the distance test. Every candidate's index is stored at the write position,
// which advances only for a hit, so a query costs its candidates, not its mispredicted
// branches (about a third of the candidates hit, at random). Past the room left in the buffer
// the write is skipped; the count goes on. The filter, when the view has bits, joins the test as
// a 0/1 factor. d2 is computed exactly as nbi_dist2 does (same operations, same order).
typedef struct nbiFastCtx {
    const nbiView *v;
    double c[3];
    double r2;
    nbFilter f;
    int32_t *out; // NULL: count only
    int32_t cap;
    int32_t found;
    const int32_t *idx; // what a hit reports: idx[p], or p itself when NULL (sink positions)
} nbiFastCtx;

NBI_INLINE bool nbi_fast_run_dim(nbiFastCtx *x, int dim, bool flt, int32_t b0, int32_t b1)
{
    const double *pts = x->v->pts;
    const int32_t *idx = x->idx;
    const uint32_t *cat = x->v->cat, *mask = x->v->mask;
    const double cx = x->c[0], cy = x->c[1], cz = x->c[2], r2 = x->r2;
    int32_t *out = x->out;
    int32_t found = x->found;
    const bool room = out != NULL && x->cap - found >= b1 - b0;
    for (int32_t p = b0; p < b1; p++) {
        const double *q = pts + (size_t)p * (size_t)dim;
        const double dx = cx - q[0], dy = cy - q[1];
        double d2 = dx * dx + dy * dy;
        if (dim == 3) {
            const double dz = cz - q[2];
            d2 += dz * dz;
        }
        int32_t hit = d2 <= r2;
        if (flt) hit &= ((cat[p] & x->f.mask) != 0) & ((x->f.category & mask[p]) != 0);
        if (out != NULL && (room || found < x->cap)) out[found] = idx != NULL ? idx[p] : p;
        found += hit;
    }
    x->found = found;
    return true;
}

static bool nbi_fast_run2(int32_t b0, int32_t b1, void *x)
{
    return nbi_fast_run_dim((nbiFastCtx *)x, 2, false, b0, b1);
}
static bool nbi_fast_run3(int32_t b0, int32_t b1, void *x)
{
    return nbi_fast_run_dim((nbiFastCtx *)x, 3, false, b0, b1);
}
static bool nbi_fast_run2f(int32_t b0, int32_t b1, void *x)
{
    return nbi_fast_run_dim((nbiFastCtx *)x, 2, true, b0, b1);
}
static bool nbi_fast_run3f(int32_t b0, int32_t b1, void *x)
{
    return nbi_fast_run_dim((nbiFastCtx *)x, 3, true, b0, b1);
}

static bool nbi_box_run(int32_t b0, int32_t b1, void *vctx)
{
    const nbiRangeCtx *x = (const nbiRangeCtx *)vctx;
    const nbiView *v = x->v;
    const int dim = v->dim;
    for (int32_t p = b0; p < b1; p++) {
        const double *q = v->pts + (size_t)p * (size_t)dim;
        bool in = true;
        for (int a = 0; a < dim; a++) in &= q[a] >= x->lo[a] && q[a] <= x->hi[a];
        if (in && (!x->per_point || nbi_view_passes(v, p, x->f))) {
            nbi_hit(x->sink, v->idx[p]);
            if (x->sink->stop) return false;
        }
    }
    return true;
}

// Whether any point of a view without filter bits can pass f (all bits against f).
static bool nbi_filter_open(nbFilter f)
{
    return f.category != 0 && f.mask != 0;
}

nbStatus nbi_walk_radius(const nbiView *v, const double *center, double radius, nbFilter f,
                         nbiHitSink *s)
{
    for (int a = 0; a < v->dim; a++)
        if (!isfinite(center[a])) return NB_ERR_NOT_FINITE;
    if (!isfinite(radius)) return NB_ERR_NOT_FINITE;
    if (radius < 0.0 || s->cap < 0) return NB_ERR_OUT_OF_RANGE;
    const bool per_point = v->cat != NULL;
    if (v->n == 0 || (!per_point && !nbi_filter_open(f))) return NB_OK;
    const double reach = nbi_reach(radius);
    double lo[3], hi[3];
    for (int a = 0; a < v->dim; a++) {
        lo[a] = center[a] - reach; // rounding is monotone: every p >= center - reach is >= lo
        hi[a] = center[a] + reach;
    }
    int64_t cl[3], ch[3];
    if (!nbi_view_cell_box(v, lo, hi, cl, ch)) return NB_OK;
    if (s->mode != NBI_SINK_VISIT && (!per_point || v->mask != NULL)) {
        nbiFastCtx x = {v,
                        {center[0], center[1], v->dim == 3 ? center[2] : 0.0},
                        radius * radius,
                        f,
                        s->mode == NBI_SINK_BUFFER ? s->out : NULL,
                        s->cap,
                        s->found,
                        s->positions ? NULL : v->idx};
        const bool flt = per_point;
        nbiRunFn *fn = v->dim == 2 ? (flt ? nbi_fast_run2f : nbi_fast_run2)
                                   : (flt ? nbi_fast_run3f : nbi_fast_run3);
        nbi_view_box_runs(v, cl, ch, fn, &x);
        s->found = x.found;
        return NB_OK;
    }
    nbiRangeCtx x = {v, center, NULL, NULL, radius * radius, f, per_point, s};
    nbi_view_box_runs(v, cl, ch, nbi_radius_run, &x);
    return NB_OK;
}

nbStatus nbi_walk_box(const nbiView *v, const double *lo, const double *hi, nbFilter f,
                      nbiHitSink *s)
{
    for (int a = 0; a < v->dim; a++)
        if (isnan(lo[a]) || isnan(hi[a])) return NB_ERR_NOT_FINITE;
    if (s->cap < 0) return NB_ERR_OUT_OF_RANGE;
    const bool per_point = v->cat != NULL;
    if (v->n == 0 || (!per_point && !nbi_filter_open(f))) return NB_OK;
    int64_t cl[3], ch[3];
    if (!nbi_view_cell_box(v, lo, hi, cl, ch)) return NB_OK;
    nbiRangeCtx x = {v, NULL, lo, hi, 0.0, f, per_point, s};
    nbi_view_box_runs(v, cl, ch, nbi_box_run, &x);
    return NB_OK;
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
    const nbiView *v;
    const double *q;
    nbFilter f;
    bool per_point;
    nbNeighbor *heap; // max-heap by nbi_worse
    int32_t size, k;
} nbiKnnCtx;

static bool nbi_knn_run(int32_t b0, int32_t b1, void *vctx)
{
    nbiKnnCtx *x = (nbiKnnCtx *)vctx;
    const nbiView *v = x->v;
    const int dim = v->dim;
    for (int32_t p = b0; p < b1; p++) {
        if (x->per_point && !nbi_view_passes(v, p, x->f)) continue;
        nbNeighbor cand = {v->idx[p], nbi_dist2(x->q, v->pts + (size_t)p * (size_t)dim, dim)};
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

// Whether any of the view's cells lie outside the visited block [cl, ch]; if so, *bound is a
// lower bound on the true distance from q to any point in them, less a rounding margin (it may
// be <= 0, or +inf when the gap overflows: "unknown" and "huge" both just mean "keep going").
static bool nbi_unvisited_bound(const nbiView *v, const double *q, const int64_t cl[3],
                                const int64_t ch[3], double *bound)
{
    bool outside = false;
    double b = (double)INFINITY;
    const double c = v->cm.cell;
    // p / c may underflow: its rounding then moves p by up to c * 2^-1075, whatever p is.
    const double slack = c * 0x1p-1070 + 0x1p-1000;
    for (int a = 0; a < v->dim; a++) {
        if (ch[a] < v->hi[a]) { // cells above: their points have p / c >= ch + 1, less rounding
            const double edge = (double)(ch[a] + 1) * c;
            const double gap = edge - q[a] - (fabs(edge) + fabs(q[a])) * 0x1p-50 - slack;
            b = gap < b ? gap : b;
            outside = true;
        }
        if (cl[a] > v->lo[a]) { // cells below: their points have p / c < cl, plus rounding
            const double edge = (double)cl[a] * c;
            const double gap = q[a] - edge - (fabs(edge) + fabs(q[a])) * 0x1p-50 - slack;
            b = gap < b ? gap : b;
            outside = true;
        }
    }
    *bound = b;
    return outside;
}

// Visits ring m (cells at Chebyshev distance exactly m from qc), clipped to the view's box, as
// at most 6 boxes: for the axis `a` taken as outermost, the face with d_a = +-m, axes before a
// within (-m, m) and axes after a within [-m, m]. Each ring cell belongs to exactly one face.
// Returns the work in cells examined.
static double nbi_ring_visit(const nbiView *v, const int64_t qc[3], int64_t m, nbiKnnCtx *x)
{
    double work = 0.0;
    int64_t cl[3], ch[3];
    const int dim = v->dim;
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
                if (l < v->lo[b]) l = v->lo[b];
                if (h > v->hi[b]) h = v->hi[b];
                if (l > h) empty = true;
                cl[b] = l;
                ch[b] = h;
            }
            if (!empty) work += nbi_view_box_runs(v, cl, ch, nbi_knn_run, x);
            if (m == 0) return work;
        }
    }
    return work;
}

nbStatus nbi_walk_knn(const nbiView *v, const double *point, int32_t k, nbFilter f, nbNeighbor *out,
                      int32_t *found)
{
    *found = 0;
    for (int a = 0; a < v->dim; a++)
        if (!isfinite(point[a])) return NB_ERR_NOT_FINITE;
    if (k < 0) return NB_ERR_OUT_OF_RANGE;
    const bool per_point = v->cat != NULL;
    if (k == 0 || v->n == 0 || (!per_point && !nbi_filter_open(f))) return NB_OK;
    nbiKnnCtx x = {v, point, f, per_point, out, 0, k < v->n ? k : v->n};

    // The query's cell, clipped to one cell outside the box so rings start near the data.
    int64_t qc[3] = {0, 0, 0};
    for (int a = 0; a < v->dim; a++) {
        const double c = nbi_cell_f(&v->cm, point[a]);
        qc[a] = c < (double)v->lo[a]   ? v->lo[a] - 1
                : c > (double)v->hi[a] ? v->hi[a] + 1
                                       : (int64_t)c;
    }
    const double budget = 2.0 * (double)v->ncells + 64.0;
    double work = 0.0;
    for (int64_t m = 0;; m++) {
        work += nbi_ring_visit(v, qc, m, &x);
        int64_t cl[3], ch[3];
        for (int a = 0; a < 3; a++) {
            cl[a] = a < v->dim ? qc[a] - m : 0;
            ch[a] = a < v->dim ? qc[a] + m : 0;
        }
        double bound;
        if (!nbi_unvisited_bound(v, point, cl, ch, &bound)) break; // every cell visited
        if (x.size == x.k && bound > 0.0) {
            const double b2 = bound * bound * (1.0 - 0x1p-40);
            if (b2 > 0x1p-1000 && x.heap[0].dist2 < b2) break;
        }
        if (work > budget) { // far-flung data: a scan of every point is cheaper
            x.size = 0;
            for (int32_t c = 0; c < v->ncells; c++)
                nbi_knn_run(v->start[c], nbi_view_end(v, c), &x);
            break;
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
