// SPDX-License-Identifier: MIT
// The grid's k nearest in the Minkowski norms other than the Euclidean one (nb_grid_knn_norm).
// Distances are compared raw, as a brute-force loop in the norm compares them: sum |d_a|^p
// (|d_a| for p = 1), max |d_a| for p = inf, per axis in axis order. The searches are the
// Euclidean kNN's two, with the norm's distances and bounds: the kNN index's tree of boxes
// (knn_index.h) where the grid has one, else the cells ring by ring (Chebyshev rings: ring s
// is the cells whose offset from the query's cell is s on some axis and at most s on every
// other), stopping once every unvisited cell lies beyond the k-th best. Both bounds are
// per-axis gaps to a box, which no point in it can beat in any p-norm (each term is monotone
// in its gap; the sum of a point's terms is at least the sum of the gaps'). Periodic grids
// walk their cells ring by ring by cyclic levels (nbi_wrap_knn_walk), with the minimum image.
#include "grid_internal.h"
#include "knn_heap.h"
#include "knn_index.h"
#include "simd.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The norm's kind: p = 1 and p = inf need no pow; the tree's parts are compiled once per kind
// (below), so that they take no test of p per term either (a query of 8 nearest in the Chebyshev
// norm cost 14k instructions on a heavy-tailed 3D set through parts that tested p, 1.8x a
// Euclidean one).
enum { NBI_NORM_1, NBI_NORM_INF, NBI_NORM_P };

typedef struct nbiNormQuery {
    double q[3];
    int dim;
    double p; // in [1, inf], not 2
    int kind; // p's NBI_NORM_*
    nbFilter f;
    double lim;   // max_distance, raw: a candidate above it is never kept
    double bound; // raw: a candidate above it cannot enter (the k-th best once full, else lim)
    nbiKnnHeap heap;
    const nbiKnnIndex *ix; // the tree search's index
} nbiNormQuery;

// One axis's term of the raw distance, from |d| (or a gap), in the norm of kind `kind`.
NBI_INLINE double nbi_norm_term(double d, double p, int kind)
{
    return kind == NBI_NORM_P ? pow(d, p) : d;
}

// The raw distance accumulated over axes: s after axis a's term t.
NBI_INLINE double nbi_norm_sum(double s, double t, int kind)
{
    return kind == NBI_NORM_INF ? (t > s ? t : s) : s + t;
}

// Offers the caller's index id at raw distance raw (filter already passed).
NBI_INLINE void nbi_norm_offer(nbiNormQuery *x, int32_t id, double raw)
{
    if (!(raw <= x->bound)) return; // NaN (a hash's slack) included
    const nbNeighbor cand = {id, raw};
    nbi_best_offer(&x->heap, cand);
    x->bound = nbi_best_bound(&x->heap, x->lim);
}

// ---- through the kNN index ----

#if NBI_KNN_INDEX
// The raw gaps from the query to an inner node's two child boxes (cb: the node's slot of the
// index's boxes, axis a holding lo left, lo right, hi left, hi right).
NBI_INLINE void nbi_norm_gaps_k(const nbiNormQuery *x, const double *cb, double g[2], int kind)
{
#if defined(__SSE2__)
    if (kind !=
        NBI_NORM_P) { // both sides in two lanes: the same operations (max is `a > b ? a : b`)
        const __m128d zero = _mm_setzero_pd();
        __m128d s = zero;
        for (int a = 0; a < x->dim; a++) {
            const __m128d q = _mm_set1_pd(x->q[a]);
            const __m128d below = _mm_sub_pd(_mm_loadu_pd(cb + 4 * a), q);
            const __m128d above = _mm_sub_pd(q, _mm_loadu_pd(cb + 4 * a + 2));
            const __m128d gap = _mm_max_pd(_mm_max_pd(below, above), zero);
            s = kind == NBI_NORM_INF ? _mm_max_pd(gap, s) : _mm_add_pd(s, gap);
        }
        _mm_storeu_pd(g, s);
        return;
    }
#endif
    for (int side = 0; side < 2; side++) {
        double s = 0.0;
        for (int a = 0; a < x->dim; a++) {
            const double below = cb[4 * a + side] - x->q[a];
            const double above = x->q[a] - cb[4 * a + 2 + side];
            double gap = below > above ? below : above;
            gap = gap > 0.0 ? gap : 0.0;
            s = nbi_norm_sum(s, nbi_norm_term(gap, x->p, kind), kind);
        }
        g[side] = s;
    }
}

// Offers position p of the index at raw distance raw, if it passes the filter.
NBI_INLINE void nbi_norm_offer_at(nbiNormQuery *x, int32_t p, double raw)
{
    const nbiKnnIndex *ix = x->ix;
    if (!(raw <= x->bound)) return;
    const uint32_t *bits = (const uint32_t *)ix->bits.ptr;
    if (ix->filtered &&
        !nbi_filter_match(x->f.category, x->f.mask, bits[2 * (size_t)p], bits[2 * (size_t)p + 1]))
        return;
    nbi_norm_offer(x, ((const int32_t *)ix->idx.ptr)[p], raw);
}

NBI_INLINE void nbi_norm_leaf_k(nbiNormQuery *x, int32_t p0, int32_t p1, int kind)
{
    const nbiKnnIndex *ix = x->ix;
    const double *pts = (const double *)ix->pts.ptr;
    for (int32_t p = p0; p < p1; p++) {
        double s = 0.0;
        for (int a = 0; a < x->dim; a++)
            s = nbi_norm_sum(
                s, nbi_norm_term(fabs(x->q[a] - pts[(size_t)a * ix->n + p]), x->p, kind), kind);
        nbi_norm_offer_at(x, p, s);
    }
}

#if defined(__SSE2__)
// nbi_norm_leaf_k for p = 1 and p = inf, two points at a time (each lane's raw distance as the
// scalar loop computes it: |q - x| by clearing the sign, summed or maxed in axis order), in
// `dim` dimensions.
NBI_INLINE void nbi_norm_leaf_sse2(nbiNormQuery *x, int32_t p0, int32_t p1, int kind, int dim)
{
    const nbiKnnIndex *ix = x->ix;
    const double *px = (const double *)ix->pts.ptr;
    const __m128d abs = _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffffLL));
    int32_t p = p0;
    for (; p + 2 <= p1; p += 2) {
        __m128d s = _mm_setzero_pd();
        for (int a = 0; a < dim; a++) {
            const __m128d d = _mm_and_pd(
                _mm_sub_pd(_mm_set1_pd(x->q[a]), _mm_loadu_pd(px + (size_t)a * ix->n + p)), abs);
            s = kind == NBI_NORM_INF ? _mm_max_pd(d, s) : _mm_add_pd(s, d);
        }
        if (_mm_movemask_pd(_mm_cmple_pd(s, _mm_set1_pd(x->bound))) == 0) continue;
        double r[2];
        _mm_storeu_pd(r, s);
        nbi_norm_offer_at(x, p, r[0]);
        nbi_norm_offer_at(x, p + 1, r[1]);
    }
    nbi_norm_leaf_k(x, p, p1, kind);
}
#endif

#if NBI_AVX2
// The same four points at a time.
NBI_TARGET_AVX2 NBI_INLINE void nbi_norm_leaf_avx2(nbiNormQuery *x, int32_t p0, int32_t p1,
                                                   int kind, int dim)
{
    const nbiKnnIndex *ix = x->ix;
    const double *px = (const double *)ix->pts.ptr;
    const __m256d abs = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    int32_t p = p0;
    for (; p + 4 <= p1; p += 4) {
        __m256d s = _mm256_setzero_pd();
        for (int a = 0; a < dim; a++) {
            const __m256d d = _mm256_and_pd(
                _mm256_sub_pd(_mm256_set1_pd(x->q[a]), _mm256_loadu_pd(px + (size_t)a * ix->n + p)),
                abs);
            s = kind == NBI_NORM_INF ? _mm256_max_pd(d, s) : _mm256_add_pd(s, d);
        }
        int in = _mm256_movemask_pd(_mm256_cmp_pd(s, _mm256_set1_pd(x->bound), _CMP_LE_OQ));
        if (in == 0) continue;
        double r[4];
        _mm256_storeu_pd(r, s);
        for (; in != 0; in &= in - 1) {
            const int j = __builtin_ctz((unsigned)in);
            nbi_norm_offer_at(x, p + j, r[j]);
        }
    }
    nbi_norm_leaf_sse2(x, p, p1, kind, dim);
}

NBI_TARGET_AVX2 static void nbi_norm_leaf_1_avx2(void *search, int32_t p0, int32_t p1)
{
    nbiNormQuery *x = (nbiNormQuery *)search;
    if (x->dim == 3)
        nbi_norm_leaf_avx2(x, p0, p1, NBI_NORM_1, 3);
    else
        nbi_norm_leaf_avx2(x, p0, p1, NBI_NORM_1, 2);
}
NBI_TARGET_AVX2 static void nbi_norm_leaf_inf_avx2(void *search, int32_t p0, int32_t p1)
{
    nbiNormQuery *x = (nbiNormQuery *)search;
    if (x->dim == 3)
        nbi_norm_leaf_avx2(x, p0, p1, NBI_NORM_INF, 3);
    else
        nbi_norm_leaf_avx2(x, p0, p1, NBI_NORM_INF, 2);
}
#endif

static void nbi_norm_leaf_1(void *search, int32_t p0, int32_t p1)
{
    nbiNormQuery *x = (nbiNormQuery *)search;
#if defined(__SSE2__)
    if (x->dim == 3)
        nbi_norm_leaf_sse2(x, p0, p1, NBI_NORM_1, 3);
    else
        nbi_norm_leaf_sse2(x, p0, p1, NBI_NORM_1, 2);
#else
    nbi_norm_leaf_k(x, p0, p1, NBI_NORM_1);
#endif
}
static void nbi_norm_leaf_inf(void *search, int32_t p0, int32_t p1)
{
    nbiNormQuery *x = (nbiNormQuery *)search;
#if defined(__SSE2__)
    if (x->dim == 3)
        nbi_norm_leaf_sse2(x, p0, p1, NBI_NORM_INF, 3);
    else
        nbi_norm_leaf_sse2(x, p0, p1, NBI_NORM_INF, 2);
#else
    nbi_norm_leaf_k(x, p0, p1, NBI_NORM_INF);
#endif
}
static void nbi_norm_leaf_p(void *search, int32_t p0, int32_t p1)
{
    nbi_norm_leaf_k((nbiNormQuery *)search, p0, p1, NBI_NORM_P);
}
static void nbi_norm_gaps_1(void *search, const double *cb, double g[2])
{
    nbi_norm_gaps_k((const nbiNormQuery *)search, cb, g, NBI_NORM_1);
}
static void nbi_norm_gaps_inf(void *search, const double *cb, double g[2])
{
    nbi_norm_gaps_k((const nbiNormQuery *)search, cb, g, NBI_NORM_INF);
}
static void nbi_norm_gaps_p(void *search, const double *cb, double g[2])
{
    nbi_norm_gaps_k((const nbiNormQuery *)search, cb, g, NBI_NORM_P);
}

#if NBI_AVX2
// The walks of p = 1 and p = inf with the AVX2 scans (where the CPU has AVX2).
NBI_TARGET_AVX2 static void nbi_norm_walk_avx2(const nbiKnnIndex *ix, nbFilter f, nbiNormQuery *x)
{
    if (x->kind == NBI_NORM_1)
        nbi_ix_walk(ix, f, x, &x->bound, nbi_norm_gaps_1, nbi_norm_leaf_1_avx2);
    else
        nbi_ix_walk(ix, f, x, &x->bound, nbi_norm_gaps_inf, nbi_norm_leaf_inf_avx2);
}
#endif
#endif

// ---- through the cells ----

typedef struct nbiNormCells {
    nbiNormQuery *x;
    const nbiView *v;
    bool per_point;
    const double *kper; // the minimum image's period per axis (+inf: none), or NULL
} nbiNormCells;

static bool nbi_norm_run(int32_t b0, int32_t b1, void *vctx)
{
    const nbiNormCells *c = (const nbiNormCells *)vctx;
    nbiNormQuery *x = c->x;
    const nbiView *v = c->v;
    for (int32_t p = b0; p < b1; p++) {
        if (c->per_point && !nbi_view_passes(v, p, x->f)) continue;
        const double *pt = v->pts + (size_t)p * (size_t)x->dim;
        double s = 0.0;
        for (int a = 0; a < x->dim; a++) {
            double d = fabs(x->q[a] - pt[a]);
            if (c->kper != NULL && d > c->kper[a] - d) d = c->kper[a] - d;
            s = nbi_norm_sum(s, nbi_norm_term(d, x->p, x->kind), x->kind);
        }
        nbi_norm_offer(x, v->idx[p], s);
    }
    return true;
}

// A lower bound on |coordinate - face| for a coordinate whose cell lies beyond a face at
// `face` (a cell boundary, cell * edge) from q, less rounding: the coordinate's cell may be
// rounded across the face (relative 2^-50 of the magnitudes), or its quotient underflow.
NBI_INLINE double nbi_norm_face_gap(double face, double q, double edge)
{
    const double slack = edge > 0x1p70 ? (edge * 0x1p-535) * 0x1p-534 : 0x1p-999;
    return fabs(face - q) - (fabs(face) + fabs(q)) * 0x1p-50 - slack;
}

// The gap from q to the cells [l, h] along one axis (a lower bound, nbi_norm_face_gap; 0 when q
// may lie in them).
NBI_INLINE double nbi_norm_span_gap(double q, int64_t l, int64_t h, double edge)
{
    const double below = (double)l * edge, above = (double)(h + 1) * edge;
    const double g = q < below   ? nbi_norm_face_gap(below, q, edge)
                     : q > above ? nbi_norm_face_gap(above, q, edge)
                                 : 0.0;
    return g > 0.0 ? g : 0.0;
}

// The cells of layer `layer` along axis a that a point within the bound can lie in: [cl, ch]
// narrowed on the other axes to the ball of the bound where it crosses the layer. False when
// no point of the layer can be within the bound. The ball's half-width along an axis is the
// |d| whose term is what the layer's gap leaves of the bound, widened well past the rounding of
// the terms, their sum and q -+ it (a point beyond it has a raw distance above the bound).
static bool nbi_norm_layer_cap(const nbiNormQuery *x, const nbiView *v, int a, int64_t layer,
                               int64_t cl[3], int64_t ch[3])
{
    if (!(x->bound < (double)INFINITY)) return true;
    const double edge = v->cm.cell;
    const double t = nbi_norm_term(nbi_norm_span_gap(x->q[a], layer, layer, edge), x->p, x->kind);
    if (t > x->bound) return false;
    double half = x->bound; // INF: every axis's |d| is at most the bound
    if (x->kind != NBI_NORM_INF) {
        const double rest = x->bound - t + x->bound * 0x1p-40;
        half = x->kind == NBI_NORM_1 ? rest : pow(rest, 1.0 / x->p);
    }
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int b = 0; b < v->dim; b++) { // (the layer itself on a)
        const double w = half * (1.0 + 0x1p-30) + fabs(x->q[b]) * 0x1p-50;
        lo[b] = b == a ? -(double)INFINITY : x->q[b] - w;
        hi[b] = b == a ? (double)INFINITY : x->q[b] + w;
    }
    int64_t bl[3], bh[3];
    if (!nbi_view_cell_box(v, lo, hi, bl, bh)) return false;
    for (int b = 0; b < v->dim; b++) {
        if (b == a) continue;
        cl[b] = cl[b] > bl[b] ? cl[b] : bl[b];
        ch[b] = ch[b] < bh[b] ? ch[b] : bh[b];
    }
    return true;
}

// Visits ring s around cell qc, clipped to the view's box: per axis a, the two faces at
// qc[a] -+ s, over [qc - s + 1, qc + s - 1] on the axes before a (their faces come first) and
// [qc - s, qc + s] on those after, each clipped to where the bound's ball crosses it
// (nbi_norm_layer_cap: a query far outside the box meets the data in a thin cap).
static void nbi_norm_ring(nbiNormCells *c, const int64_t qc[3], int64_t s)
{
    const nbiView *v = c->v;
    if (s == 0) {
        for (int a = 0; a < 3; a++)
            if (qc[a] < v->lo[a] || qc[a] > v->hi[a]) return;
        nbi_view_box_runs(v, qc, qc, nbi_norm_run, c);
        return;
    }
    for (int a = 0; a < v->dim; a++) {
        for (int side = 0; side < 2; side++) {
            const int64_t face = side == 0 ? qc[a] - s : qc[a] + s;
            if (face < v->lo[a] || face > v->hi[a]) continue;
            int64_t cl[3], ch[3];
            for (int b = 0; b < 3; b++) {
                const int64_t in = b < a ? 1 : 0;
                cl[b] = b == a ? face : b < v->dim ? qc[b] - s + in : 0;
                ch[b] = b == a ? face : b < v->dim ? qc[b] + s - in : 0;
                cl[b] = cl[b] > v->lo[b] ? cl[b] : v->lo[b];
                ch[b] = ch[b] < v->hi[b] ? ch[b] : v->hi[b];
            }
            bool empty = !nbi_norm_layer_cap(c->x, v, a, face, cl, ch);
            for (int b = 0; b < 3; b++) empty = empty || cl[b] > ch[b];
            if (!empty) nbi_view_box_runs(v, cl, ch, nbi_norm_run, c);
        }
    }
}

// Rings outward from the query's cell (clipped to one cell outside the box), until the ring
// box holds every cell or no unvisited cell can hold a point within the bound. The cells past a
// face of the ring box lie within the view's box on the other axes, so the query's gaps to the
// box on those add to the face's (a query far outside the box would otherwise see one axis's
// gap and walk every ring).
static void nbi_norm_cells(nbiNormQuery *x, const nbiView *v)
{
    nbiNormCells c = {x, v, v->cat != NULL, NULL};
    const double edge = v->cm.cell;
    int64_t qc[3] = {0, 0, 0};
    double out[3] = {0.0, 0.0, 0.0}; // the terms of q's gaps to the box per axis
    for (int a = 0; a < v->dim; a++) {
        const double f = nbi_cell_f(&v->cm, x->q[a]);
        qc[a] = f < (double)v->lo[a]   ? v->lo[a] - 1
                : f > (double)v->hi[a] ? v->hi[a] + 1
                                       : (int64_t)f;
        out[a] = nbi_norm_term(nbi_norm_span_gap(x->q[a], v->lo[a], v->hi[a], edge), x->p, x->kind);
    }
    for (int64_t s = 0;; s++) {
        nbi_norm_ring(&c, qc, s);
        double least = (double)INFINITY;
        bool outside = false;
        for (int a = 0; a < v->dim; a++) {
            double rest = 0.0;
            for (int b = 0; b < v->dim; b++)
                if (b != a) rest = nbi_norm_sum(rest, out[b], x->kind);
            for (int side = 0; side < 2; side++) {
                const int64_t l = side == 0 ? qc[a] + s + 1 : v->lo[a];
                const int64_t h = side == 0 ? v->hi[a] : qc[a] - s - 1;
                if (l > h) continue;
                const double g = nbi_norm_span_gap(x->q[a], l, h, edge);
                const double raw = nbi_norm_sum(rest, nbi_norm_term(g, x->p, x->kind), x->kind);
                least = raw < least ? raw : least;
                outside = true;
            }
        }
        // Every unvisited point's raw distance is at least `least` (each term is monotone in
        // its gap; the terms were rounded, the margin covers their sum's rounding).
        if (!outside || least * (1.0 - 0x1p-40) > x->bound) return;
    }
}

// ---- periodic views: the cells ring by ring by cyclic levels (nbi_wrap_knn_walk) ----

// The raw distance of gaps g on the axes (those of a point at least g[a] away along each axis).
static double nbi_norm_gaps_raw(const nbiNormQuery *x, const double g[3])
{
    double s = 0.0;
    for (int a = 0; a < x->dim; a++)
        s = nbi_norm_sum(s, nbi_norm_term(g[a], x->p, x->kind), x->kind);
    return s;
}

static bool nbi_norm_wrap_beyond(void *vctx, const double g[3])
{
    const nbiNormQuery *x = ((const nbiNormCells *)vctx)->x;
    return nbi_norm_gaps_raw(x, g) * (1.0 - 0x1p-40) > x->bound;
}

// As nbi_norm_layer_cap's half-width: the |d| along b whose term is what the other axes' terms
// leave of the bound, widened well past the rounding of the terms and their sum.
static double nbi_norm_wrap_room(void *vctx, const double g[3], int b)
{
    const nbiNormQuery *x = ((const nbiNormCells *)vctx)->x;
    if (!(x->bound < (double)INFINITY)) return (double)INFINITY;
    if (x->kind == NBI_NORM_INF) return x->bound * (1.0 + 0x1p-30);
    double h[3] = {g[0], g[1], g[2]};
    h[b] = 0.0;
    const double rest = x->bound - nbi_norm_gaps_raw(x, h) + x->bound * 0x1p-40;
    if (!(rest > 0.0)) return 0.0;
    return (x->kind == NBI_NORM_1 ? rest : pow(rest, 1.0 / x->p)) * (1.0 + 0x1p-30);
}

static void nbi_norm_wrap_reset(void *vctx)
{
    nbiNormQuery *x = ((nbiNormCells *)vctx)->x;
    x->heap.size = 0;
    x->bound = nbi_best_bound(&x->heap, x->lim);
}

static void nbi_norm_wrap(nbiNormQuery *x, const nbiView *v)
{
    nbiNormCells c = {x, v, v->cat != NULL, v->wrap->kper};
    const nbiWrapKnnOps ops = {nbi_norm_run, &c, nbi_norm_wrap_beyond, nbi_norm_wrap_room,
                               nbi_norm_wrap_reset};
    nbi_wrap_knn_walk(v, x->q, &ops);
}

nbStatus nb_grid_knn_norm(const nbGrid *grid, const double *point, double p, nbFilter filter,
                          double max_distance, nbNeighbor *out, int32_t k, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (grid == NULL || point == NULL || found == NULL || (out == NULL && k > 0))
        return NB_ERR_NULL_ARG;
    const nbiView *v = &grid->view;
    for (int a = 0; a < v->dim; a++)
        if (!isfinite(point[a])) return NB_ERR_NOT_FINITE;
    if (isnan(p) || isnan(max_distance)) return NB_ERR_NOT_FINITE;
    if (k < 0 || max_distance < 0.0 || !(p >= 1.0)) return NB_ERR_OUT_OF_RANGE;
    if (v->wrap != NULL)
        for (int a = 0; a < v->dim; a++)
            if (v->wrap->period[a] > 0.0 && !(point[a] >= 0.0 && point[a] < v->wrap->period[a]))
                return NB_ERR_OUT_OF_RANGE;
    if (p == 2.0) return nb_grid_knn(grid, point, filter, max_distance, out, k, found);
    if (k == 0 || v->n == 0 || (v->cat == NULL && !nbi_filter_open(filter))) return NB_OK;
    nbiNormQuery x;
    x.q[0] = point[0];
    x.q[1] = point[1];
    x.q[2] = v->dim == 3 ? point[2] : 0.0;
    x.dim = v->dim;
    x.p = p;
    x.f = filter;
    x.kind = p == 1.0 ? NBI_NORM_1 : isinf(p) ? NBI_NORM_INF : NBI_NORM_P;
    x.lim = isinf(max_distance) ? (double)INFINITY : nbi_norm_term(max_distance, p, x.kind);
    x.heap.e = out;
    x.heap.size = 0;
    x.heap.k = k < v->n ? k : v->n;
    x.bound = nbi_best_bound(&x.heap, x.lim);
    const nbiKnnIndex *ix =
        v->wrap == NULL ? nbi_knn_index_get(nbi_grid_knn_lazy(grid), v, &grid->alloc, point, k)
                        : NULL;
    if (v->wrap != NULL) {
        nbi_norm_wrap(&x, v);
    } else if (ix != NULL) {
#if NBI_KNN_INDEX
        x.ix = ix;
#if NBI_AVX2
        if (x.kind != NBI_NORM_P && nbi_use_avx2())
            nbi_norm_walk_avx2(ix, filter, &x);
        else
#endif
            if (x.kind == NBI_NORM_1)
            nbi_ix_walk(ix, filter, &x, &x.bound, nbi_norm_gaps_1, nbi_norm_leaf_1);
        else if (x.kind == NBI_NORM_INF)
            nbi_ix_walk(ix, filter, &x, &x.bound, nbi_norm_gaps_inf, nbi_norm_leaf_inf);
        else
            nbi_ix_walk(ix, filter, &x, &x.bound, nbi_norm_gaps_p, nbi_norm_leaf_p);
#endif
    } else {
        nbi_norm_cells(&x, v);
    }
    nbi_best_sort(&x.heap);
    *found = x.heap.size;
    return NB_OK;
}
