// SPDX-License-Identifier: MIT
// The k nearest of many queries at once (nb_grid_knn_many): the queries grouped by the grid's
// cell they lie in, each group's candidates gathered once and shared by its queries.
//
// A group is the queries in one occupied cell c (the grid's own points: the cell's points, in
// cell order; other queries: sorted into cells by a counting sort over the cell numbers). Its
// block is the cells within R of c on every axis (cyclically on a periodic axis), R chosen from
// c's count so that the block should hold about the k nearest of every query in c with room to
// spare: R cells >= 1.35 times the k-th distance the cell's density predicts. The block's points
// (those passing the filter) are copied once into arrays by axis, c's own first; then each query
// computes its distances to all of them in one loop the compiler vectorises (the same operations
// in the same order as nbi_dist2 / nbi_dist2_wrap: the same doubles), and offers them to its k
// best, its own cell's first (so that the bound is tight early).
//
// The answer is certified by the cells outside the block: on each axis where the block does not
// reach the edge of the occupied box (or cover a periodic axis's arc), every point beyond the
// block's face is at least the query's gap to that face away (less the rounding margins the
// ring walk uses, query.c). When the least such gap, squared, is beyond the k-th best (strictly:
// a tie could enter with a lower index) or beyond max_distance, no point outside can enter, and
// the k best of the block are the answer, ties by the lower index as nb_grid_knn breaks them
// (the same heap, the same rule). A query that does not certify (the cell's density misled R: a
// query at the edge of a cluster), a cell whose block would hold too many points for each query
// to test (crowded cells: there the kNN index answers better), and a query in no occupied cell,
// is answered by the one-query search (nbi_walk_knn_indexed), exactly as nb_grid_knn answers it.
#include "grid_internal.h"
#include "knn_heap.h"
#include "simd.h"

#include <math.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The most candidates a block may hold (its scratch), and the most a query of a group may test:
// NBI_MANY_PER_K per neighbour wanted, plus NBI_MANY_BASE. Above it the group's queries go one
// at a time.
enum {
    NBI_MANY_CAND = 8192,
    NBI_MANY_PER_K = 40,
    NBI_MANY_BASE = 160,
    NBI_MANY_RMAX = 6,
    NBI_MANY_HASHED = 27
};

// A group's block of candidates, by axis: coordinates, the caller's indices.
typedef struct nbiManyBlock {
    double *x[3];
    double *d2;
    int32_t *idx;
    int32_t *near; // scratch: the candidates within a query's threshold
    int32_t n, cap;
    int32_t own0, own1; // the query cell's candidates [own0, own1)
    int32_t cell0;      // the query cell's first position (to find own0 in the runs)
    int32_t cell_n;     // its points
    bool over;          // more than cap: the group goes one query at a time
} nbiManyBlock;

typedef struct nbiManyCtx {
    const nbGrid *g;
    const nbiView *v;
    nbFilter f;
    bool per_point;
    double max_distance, lim2;
    int32_t k, want; // the row length; the neighbours a query can have: min(k, n)
    nbNeighbor *out;
    int32_t *found;
    nbiManyBlock b;
    int32_t cap;  // the scratch's candidates
    bool avx2;    // the distances' AVX2 copy runs
    double guess; // the last query's k-th best distance, squared (inf: none yet)
} nbiManyCtx;

// Appends the points of positions [b0, b1) that pass the filter.
static bool nbi_many_gather(int32_t b0, int32_t b1, void *vctx)
{
    nbiManyCtx *x = (nbiManyCtx *)vctx;
    const nbiView *v = x->v;
    nbiManyBlock *b = &x->b;
    const int dim = v->dim;
    if (b->over || b->n + (b1 - b0) > b->cap) {
        b->over = true;
        return false;
    }
    if (b0 <= b->cell0 && b->cell0 < b1) {
        // (filtered: the cell's passing points are the ones copied from it)
        b->own0 = b->n;
        if (!x->per_point) {
            b->own0 += b->cell0 - b0;
            b->own1 = b->own0 + b->cell_n;
        }
    }
    for (int32_t p = b0; p < b1; p++) {
        if (x->per_point) {
            if (p == b->cell0) b->own0 = b->n;
            if (p == b->cell0 + b->cell_n) b->own1 = b->n;
            if (!nbi_view_passes(v, p, x->f)) continue;
        }
        const double *q = v->pts + (size_t)p * (size_t)dim;
        const int32_t j = b->n++;
        b->x[0][j] = q[0];
        b->x[1][j] = q[1];
        if (dim == 3) b->x[2][j] = q[2];
        b->idx[j] = v->idx[p];
    }
    if (x->per_point && b->cell0 + b->cell_n == b1 && b0 <= b->cell0) b->own1 = b->n;
    return true;
}

// The squared distances from q to every candidate, as nbi_dist2 (or, with per, nbi_dist2_wrap)
// computes each: loops of independent lanes the compiler vectorises, compiled twice (simd.h):
// for SSE2 and, with a target attribute, for AVX2 (4 lanes), the same operations in the same
// order either way, so the same doubles.
#define NBI_MANY_DIST(name, target)                                                                \
    target static void name(const nbiManyBlock *b, const double *q, int dim, const double *per)    \
    {                                                                                              \
        const int32_t n = b->n;                                                                    \
        double *restrict d2 = b->d2;                                                               \
        const double *restrict x0 = b->x[0], *restrict x1 = b->x[1], *restrict x2 = b->x[2];       \
        const double q0 = q[0], q1 = q[1], q2 = dim == 3 ? q[2] : 0.0;                             \
        if (per == NULL && dim == 2) {                                                             \
            for (int32_t j = 0; j < n; j++) {                                                      \
                const double dx = q0 - x0[j], dy = q1 - x1[j];                                     \
                d2[j] = dx * dx + dy * dy;                                                         \
            }                                                                                      \
        } else if (per == NULL) {                                                                  \
            for (int32_t j = 0; j < n; j++) {                                                      \
                const double dx = q0 - x0[j], dy = q1 - x1[j], dz = q2 - x2[j];                    \
                d2[j] = dx * dx + dy * dy + dz * dz;                                               \
            }                                                                                      \
        } else if (dim == 2) {                                                                     \
            const double p0 = per[0], p1 = per[1];                                                 \
            for (int32_t j = 0; j < n; j++) {                                                      \
                const double ax = fabs(q0 - x0[j]), ay = fabs(q1 - x1[j]);                         \
                const double bx = p0 - ax, by = p1 - ay;                                           \
                const double dx = bx < ax ? bx : ax, dy = by < ay ? by : ay;                       \
                d2[j] = dx * dx + dy * dy;                                                         \
            }                                                                                      \
        } else {                                                                                   \
            const double p0 = per[0], p1 = per[1], p2 = per[2];                                    \
            for (int32_t j = 0; j < n; j++) {                                                      \
                const double ax = fabs(q0 - x0[j]), ay = fabs(q1 - x1[j]), az = fabs(q2 - x2[j]);  \
                const double bx = p0 - ax, by = p1 - ay, bz = p2 - az;                             \
                const double dx = bx < ax ? bx : ax, dy = by < ay ? by : ay;                       \
                const double dz = bz < az ? bz : az;                                               \
                d2[j] = dx * dx + dy * dy + dz * dz;                                               \
            }                                                                                      \
        }                                                                                          \
    }

NBI_MANY_DIST(nbi_many_dist_base, )
#if defined(NBI_AVX2)
NBI_MANY_DIST(nbi_many_dist_avx2, NBI_TARGET_AVX2)
#endif

// The candidates whose distance is at most t, into b->near, ascending; returns their count.
// Four at a time by one AVX2 comparison, or two by SSE2.
#if defined(NBI_AVX2)
NBI_TARGET_AVX2 static int32_t nbi_many_near_avx2(const nbiManyBlock *b, double t)
{
    const double *d2 = b->d2;
    int32_t *near = b->near, c = 0, j = 0;
    const __m256d tv = _mm256_set1_pd(t);
    for (; j + 4 <= b->n; j += 4) {
        unsigned m =
            (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(d2 + j), tv, _CMP_LE_OQ));
        for (; m != 0; m &= m - 1) near[c++] = j + nbi_ctz32(m);
    }
    for (; j < b->n; j++)
        if (d2[j] <= t) near[c++] = j;
    return c;
}
#endif

static int32_t nbi_many_near_base(const nbiManyBlock *b, double t)
{
    const double *d2 = b->d2;
    int32_t *near = b->near, c = 0, j = 0;
#if defined(__SSE2__)
    const __m128d tv = _mm_set1_pd(t);
    for (; j + 2 <= b->n; j += 2) {
        const int m = _mm_movemask_pd(_mm_cmple_pd(_mm_loadu_pd(d2 + j), tv));
        if (m & 1) near[c++] = j;
        if (m & 2) near[c++] = j + 1;
    }
#endif
    for (; j < b->n; j++)
        if (d2[j] <= t) near[c++] = j;
    return c;
}

// Offers candidates [j0, j1) to the heap: only those within its bound (a tie may still enter),
// found two at a time by one SSE2 comparison (most candidates, once the heap is full, are
// beyond it).
NBI_INLINE void nbi_many_offer(const nbiManyBlock *b, nbiKnnHeap *h, double lim2, int32_t j0,
                               int32_t j1)
{
    const double *d2 = b->d2;
    double bound = nbi_best_bound(h, lim2);
    int32_t j = j0;
#if defined(__SSE2__)
    __m128d bv = _mm_set1_pd(bound);
    for (; j + 2 <= j1; j += 2) {
        const int mask = _mm_movemask_pd(_mm_cmple_pd(_mm_loadu_pd(d2 + j), bv));
        if (mask == 0) continue;
        for (int t = 0; t < 2; t++) {
            if (!((mask >> t) & 1) || !(d2[j + t] <= bound)) continue;
            const nbNeighbor cand = {b->idx[j + t], d2[j + t]};
            nbi_best_offer(h, cand);
            bound = nbi_best_bound(h, lim2);
        }
        bv = _mm_set1_pd(bound);
    }
#endif
    for (; j < j1; j++) {
        if (!(d2[j] <= bound)) continue;
        const nbNeighbor cand = {b->idx[j], d2[j]};
        nbi_best_offer(h, cand);
        bound = nbi_best_bound(h, lim2);
    }
}

// The squared distance from q (in cell kc) beyond which every point outside the block of cells
// within r of kc lies, less rounding margins: +inf when the block holds every stored cell, 0 when
// nothing is known.
static double nbi_many_reach2(const nbiView *v, const double *q, const int64_t kc[3], int64_t r)
{
    double least = (double)INFINITY;
    for (int a = 0; a < v->dim; a++) {
        const nbiWrap *w = v->wrap;
        if (w != NULL && w->m[a] > 0) {
            // Periodic: covered when the cyclic run of cells holds the arc; else the points of
            // the cells beyond it are at least the gap to the run's faces away, going up or down
            // (the minimum image takes the shorter), with the ring walk's margins.
            const nbiCellRange cr = nbi_wrap_near(v, a, kc[a], r);
            if (cr.n == 1 && cr.lo[0] == 0 && cr.hi[0] == v->hi[a]) continue;
            const double e = w->pcm[a].cell;
            const int64_t m = w->m[a], cc = (kc[a] + w->c0[a]) % m; // the circle's cell
            const double less = ((double)m + (double)r + 2.0) * e * 0x1p-46 +
                                (fabs(q[a]) + v->max_abs + w->period[a]) * 0x1p-46 +
                                nbi_cell_slack(e);
            const double up = (double)(cc + r + 1) * e - q[a] - less;
            const double down = q[a] - (double)(cc - r) * e - less;
            const double g = up < down ? up : down;
            if (!(g > 0.0)) return 0.0;
            least = g * g < least ? g * g : least;
            continue;
        }
        const double c = v->cm.cell, slack = nbi_cell_slack(c);
        if (kc[a] + r < v->hi[a]) { // cells above
            const double g = nbi_face_gap(q[a], (double)(kc[a] + r + 1) * c, slack);
            if (!(g > 0.0)) return 0.0;
            least = g * g < least ? g * g : least;
        }
        if (kc[a] - r > v->lo[a]) { // cells below
            const double g = nbi_face_gap((double)(kc[a] - r) * c, q[a], slack);
            if (!(g > 0.0)) return 0.0;
            least = g * g < least ? g * g : least;
        }
    }
    return least * (1.0 - 0x1p-40);
}

// The k nearest of q (a finite query, checked) one at a time, into its row.
static void nbi_many_single(nbiManyCtx *x, const double *q, int64_t row)
{
    nbNeighbor *out = x->out + row * (int64_t)x->k;
    int32_t found = 0;
    nbi_walk_knn_indexed(x->v, nbi_grid_knn_lazy(x->g), &x->g->alloc, q, x->f, x->max_distance, out,
                         x->want, &found);
    x->found[row] = found;
}

// The most candidates a query of the batch may test (nbi_many_rings): beyond them the one-query
// search, with the kNN index, costs less.
static int32_t nbi_many_limit(const nbiManyCtx *x)
{
    const int64_t lim = (int64_t)NBI_MANY_PER_K * x->want + NBI_MANY_BASE;
    return lim < NBI_MANY_CAND ? (int32_t)lim : NBI_MANY_CAND;
}

// The block's rings: the least r whose cells, at the cell's count of points, should hold the k
// nearest of a query anywhere in the cell with room (see the top of the file); 0 when the block
// would hold too many points for a query to test (more than the scratch, or where the kNN index
// answers better).
static int64_t nbi_many_rings(const nbiManyCtx *x, int32_t count)
{
    const nbiView *v = x->v;
    const double k = (double)x->want, c = count > 0 ? (double)count : 0.5;
    const double per = v->dim == 2 ? sqrt(k / (3.14159 * c)) : cbrt(k / (4.18879 * c));
    double r = ceil(1.35 * per);
    if (r < 1.0) r = 1.0;
    if (r > NBI_MANY_RMAX) return 0;
    const double side = 2.0 * r + 1.0, cells = v->dim == 2 ? side * side : side * side * side;
    // (A periodic grid has no kNN index: its one-query search walks the same crowded cells, so
    // its blocks are limited by the scratch alone.) A hashed grid finds each cell of a block in
    // its table: more than NBI_MANY_HASHED cells cost more lookups than the search's.
    if (v->wrap == NULL && cells * c > (double)nbi_many_limit(x)) return 0;
    if (v->table != NULL && cells > NBI_MANY_HASHED) return 0;
    return (int64_t)r;
}

// The queries of one group, all in cell c (coordinates kc, `count` points): the points at view
// positions [p0, p0 + nq) (own) or the query points qs[order[i]] for i in [0, nq).
static void nbi_many_group(nbiManyCtx *x, int32_t c, const int64_t kc[3], int32_t p0,
                           const double *qs, size_t qstride, const int32_t *order, int32_t nq)
{
    const nbiView *v = x->v;
    const int dim = v->dim;
    const int32_t count = nbi_view_end(v, c) - v->start[c];
    const int64_t r = nbi_many_rings(x, count);
    nbiManyBlock *b = &x->b;
    b->n = 0;
    b->over = r == 0;
    // A block past its estimate (crowded cells around an emptier one) stops at the limit.
    b->cap = v->wrap != NULL ? x->cap : nbi_many_limit(x) < x->cap ? nbi_many_limit(x) : x->cap;
    b->cell0 = v->start[c];
    b->cell_n = count;
    b->own0 = b->own1 = 0;
    if (!b->over) {
        if (v->wrap != NULL) {
            nbiCellRange cr[3];
            for (int a = 0; a < 3; a++) cr[a] = nbi_wrap_near(v, a, a < dim ? kc[a] : 0, r);
            nbi_wrap_box_runs(v, cr, nbi_many_gather, x);
        } else {
            int64_t cl[3] = {0, 0, 0}, ch[3] = {0, 0, 0};
            for (int a = 0; a < dim; a++) {
                cl[a] = kc[a] - r > v->lo[a] ? kc[a] - r : v->lo[a];
                ch[a] = kc[a] + r < v->hi[a] ? kc[a] + r : v->hi[a];
            }
            nbi_view_box_runs(v, cl, ch, nbi_many_gather, x);
        }
    }
    const double *per = v->wrap != NULL ? v->wrap->kper : NULL;
    for (int32_t i = 0; i < nq; i++) {
        const double *q =
            order != NULL
                ? (const double *)(const void *)((const char *)qs + (size_t)order[i] * qstride)
                : v->pts + (size_t)(p0 + i) * (size_t)dim;
        const int64_t row = order != NULL ? order[i] : v->idx[p0 + i];
        if (b->over) {
            nbi_many_single(x, q, row);
            continue;
        }
#if defined(NBI_AVX2)
        if (x->avx2)
            nbi_many_dist_avx2(b, q, dim, per);
        else
#endif
            nbi_many_dist_base(b, q, dim, per);
        nbiKnnHeap h = {x->out + row * (int64_t)x->k, 0, x->want};
        // First only the candidates within a guess (the last query's k-th distance, squared,
        // times NBI_MANY_GUESS: neighbouring queries see about the same density). Found k within
        // it, they are the k best of the block: every other candidate is beyond it. Else (or with
        // no guess yet) every candidate is offered, its own cell's first.
        const double guess = x->guess * (dim == 2 ? 2.0 : 1.6);
        if (guess < x->lim2) {
#if defined(NBI_AVX2)
            const int32_t nn =
                x->avx2 ? nbi_many_near_avx2(b, guess) : nbi_many_near_base(b, guess);
#else
            const int32_t nn = nbi_many_near_base(b, guess);
#endif
            if (nn >= h.k)
                for (int32_t t = 0; t < nn; t++) {
                    const int32_t j = b->near[t];
                    const nbNeighbor cand = {b->idx[j], b->d2[j]};
                    nbi_best_offer(&h, cand);
                }
        }
        if (h.size < h.k) {
            h.size = 0;
            nbi_many_offer(b, &h, x->lim2, b->own0, b->own1);
            nbi_many_offer(b, &h, x->lim2, 0, b->own0);
            nbi_many_offer(b, &h, x->lim2, b->own1, b->n);
        }
        if (h.size == h.k) x->guess = nbi_best_bound(&h, x->lim2);
        const double reach2 = nbi_many_reach2(v, q, kc, r);
        if (!(reach2 == (double)INFINITY) &&
            !(reach2 > 0x1p-1000 && reach2 > nbi_best_bound(&h, x->lim2))) {
            nbi_many_single(x, q, row); // not certified: the one-query search
            continue;
        }
        nbi_best_sort(&h);
        x->found[row] = h.size;
    }
}

// The cell of query q, or -1 when it lies in no occupied cell of the view; its coordinates in kc.
static int32_t nbi_many_cell(const nbiView *v, const double *q, int64_t kc[3])
{
    kc[0] = kc[1] = kc[2] = 0;
    for (int a = 0; a < v->dim; a++) {
        if (v->wrap != NULL && v->wrap->m[a] > 0) {
            kc[a] = nbi_view_axis_cell(v, a, q[a]);
        } else {
            const double f = nbi_cell_f(&v->cm, q[a]);
            if (!(f >= (double)v->lo[a] && f <= (double)v->hi[a])) return -1;
            kc[a] = (int64_t)f;
        }
        if (kc[a] < v->lo[a] || kc[a] > v->hi[a]) return -1;
    }
    const int32_t c = nbi_view_cell(v, kc[0], kc[1], kc[2]);
    return c >= 0 && nbi_view_end(v, c) > v->start[c] ? c : -1;
}

// Checks the queries in the documented order (finiteness, then ranges); *m gets their count.
static nbStatus nbi_many_check(const nbGrid *g, const nbPoints *qp, double max_distance, int32_t k)
{
    const nbiView *v = &g->view;
    const int dim = g->dim;
    if (qp != NULL) {
        const size_t stride = qp->stride == 0 ? (size_t)dim * sizeof(double) : qp->stride;
        const bool layout_ok = qp->count >= 0 && (qp->dim == 0 || qp->dim == dim) &&
                               stride >= (size_t)dim * sizeof(double) &&
                               stride % sizeof(double) == 0;
        if (layout_ok)
            for (int32_t i = 0; i < qp->count; i++) {
                const double *q =
                    (const double *)(const void *)((const char *)qp->data + (size_t)i * stride);
                for (int a = 0; a < dim; a++)
                    if (!isfinite(q[a])) return NB_ERR_NOT_FINITE;
            }
        if (isnan(max_distance)) return NB_ERR_NOT_FINITE;
        if (!layout_ok) return NB_ERR_OUT_OF_RANGE;
        if (v->wrap != NULL)
            for (int32_t i = 0; i < qp->count; i++)
                if (!nbi_wrap_point_ok(v, (const double *)(const void *)((const char *)qp->data +
                                                                         (size_t)i * stride)))
                    return NB_ERR_OUT_OF_RANGE;
    } else if (isnan(max_distance)) {
        return NB_ERR_NOT_FINITE;
    }
    if (k < 0 || max_distance < 0.0) return NB_ERR_OUT_OF_RANGE;
    return NB_OK;
}

// The groups of cells [c0, c1): their own points (head NULL), or the queries sorted into them
// (cell c's are order[head[c], head[c + 1])).
typedef struct nbiManyRun {
    nbiManyCtx *x; // one a worker
    const double *qs;
    size_t stride;
    const int32_t *order, *head;
    int32_t chunks;
} nbiManyRun;

static void nbi_many_cells(nbiManyCtx *x, const nbiManyRun *r, int32_t c0, int32_t c1)
{
    const nbiView *v = x->v;
    for (int32_t c = c0; c < c1; c++) {
        const int32_t p0 = r->head != NULL ? r->head[c] : v->start[c];
        const int32_t p1 = r->head != NULL ? r->head[c + 1] : nbi_view_end(v, c);
        if (p0 == p1) continue;
        int64_t kc[3];
        nbi_view_cell_key(v, c, kc);
        if (r->head == NULL)
            nbi_many_group(x, c, kc, p0, NULL, 0, NULL, p1 - p0);
        else
            nbi_many_group(x, c, kc, 0, r->qs, r->stride, r->order + p0, p1 - p0);
    }
}

// Chunk k of the cells, on the worker's own context and scratch.
static void nbi_many_task(int32_t k0, int32_t k1, int32_t worker, void *vctx)
{
    const nbiManyRun *r = (const nbiManyRun *)vctx;
    const int64_t cells = r->x[0].v->ncells;
    for (int32_t k = k0; k < k1; k++)
        nbi_many_cells(&r->x[worker], r, (int32_t)(cells * k / r->chunks),
                       (int32_t)(cells * (k + 1) / r->chunks));
}

// Queries a worker should have at least: fewer run serially.
enum { NBI_MANY_PARALLEL_MIN = 2048 };

nbStatus nb_grid_knn_many(const nbGrid *grid, const nbPoints *queries, nbFilter filter,
                          double max_distance, nbNeighbor *out, int32_t k, int32_t *found)
{
    if (grid == NULL || found == NULL) return NB_ERR_NULL_ARG;
    const int32_t m = queries != NULL ? queries->count : grid->n;
    if (m > 0) memset(found, 0, (size_t)m * sizeof *found);
    if ((queries != NULL && queries->data == NULL && m > 0) || (out == NULL && k > 0 && m > 0))
        return NB_ERR_NULL_ARG;
    const nbStatus bad = nbi_many_check(grid, queries, max_distance, k);
    if (bad != NB_OK) return bad;
    const nbiView *v = &grid->view;
    const bool per_point = v->cat != NULL;
    if (m == 0 || k == 0 || v->n == 0 || (!per_point && !nbi_filter_open(filter))) return NB_OK;

    // On the grid's scheduler, each worker takes chunks of cells with its own scratch (one for
    // every worker id the scheduler may hand out).
    int32_t workers = 1;
    if (nbi_grid_parallel(grid) && m >= 2 * NBI_MANY_PARALLEL_MIN &&
        grid->tasks.workers <= NBI_MAX_CHUNKS)
        workers = grid->tasks.workers;
    // Scratch: a block a worker (axes, distances, indices), and for outside queries their cells
    // and order (a counting sort over the cells).
    int32_t cap = NBI_MANY_CAND;
    if (cap > v->n) cap = v->n;
    const size_t per_cand = 4 * sizeof(double) + 2 * sizeof(int32_t);
    const size_t block = (size_t)cap * per_cand;
    const int64_t sort_ints = queries != NULL ? 2 * (int64_t)m + (int64_t)v->ncells + 2 : 0;
    const size_t bytes = block * (size_t)workers + (size_t)sort_ints * sizeof(int32_t) + 64;
    char *mem = (char *)nbi_alloc(&grid->alloc, bytes, 1);
    if (mem == NULL) return NB_ERR_OUT_OF_MEMORY;
    nbiManyCtx xs[NBI_MAX_CHUNKS];
    for (int32_t w = 0; w < workers; w++) {
        nbiManyCtx *x = &xs[w];
        memset(x, 0, sizeof *x);
        x->g = grid;
        x->v = v;
        x->f = filter;
        x->per_point = per_point;
        x->max_distance = max_distance;
        x->lim2 = max_distance * max_distance;
        x->k = k;
        x->want = k < v->n ? k : v->n;
        x->out = out;
        x->found = found;
        x->guess = (double)INFINITY;
#if defined(NBI_AVX2)
        x->avx2 = nbi_use_avx2();
#endif
        char *at = mem + block * (size_t)w;
        nbiManyBlock *b = &x->b;
        b->cap = x->cap = cap;
        for (int a = 0; a < 3; a++)
            b->x[a] = (double *)(void *)(at + (size_t)a * (size_t)cap * sizeof(double));
        b->d2 = (double *)(void *)(at + 3 * (size_t)cap * sizeof(double));
        b->idx = (int32_t *)(void *)(at + 4 * (size_t)cap * sizeof(double));
        b->near = b->idx + cap;
    }
    nbiManyRun run = {xs, NULL, 0, NULL, NULL, 1};
    if (queries != NULL) {
        const int dim = v->dim;
        const size_t stride = queries->stride == 0 ? (size_t)dim * sizeof(double) : queries->stride;
        int32_t *cell = (int32_t *)(void *)(mem + block * (size_t)workers), *order = cell + m;
        int32_t *head = order + m;
        memset(head, 0, ((size_t)v->ncells + 2) * sizeof *head);
        for (int32_t i = 0; i < m; i++) {
            const double *q =
                (const double *)(const void *)((const char *)queries->data + (size_t)i * stride);
            int64_t kc[3];
            cell[i] = nbi_many_cell(v, q, kc);
            head[cell[i] + 2]++; // (-1: bucket 0, the queries in no occupied cell)
        }
        for (int32_t c = 0; c <= v->ncells; c++) head[c + 1] += head[c];
        for (int32_t i = 0; i < m; i++) order[head[cell[i] + 1]++] = i;
        // head[c + 1] is now the end of cell c's queries (head[0]: of the outside ones).
        for (int32_t i = 0; i < head[0]; i++)
            nbi_many_single(&xs[0],
                            (const double *)(const void *)((const char *)queries->data +
                                                           (size_t)order[i] * stride),
                            order[i]);
        run.qs = queries->data;
        run.stride = stride;
        run.order = order;
        run.head = head;
    }
    if (workers == 1) {
        nbi_many_cells(&xs[0], &run, 0, v->ncells);
    } else {
        const int32_t most =
            8 * (m / NBI_MANY_PARALLEL_MIN < workers ? m / NBI_MANY_PARALLEL_MIN : workers);
        run.chunks = v->ncells < most ? v->ncells : most;
        nbi_tasks_run(&grid->tasks, nbi_many_task, run.chunks, &run);
    }
    nbi_free(&grid->alloc, mem, bytes, 1);
    return NB_OK;
}
