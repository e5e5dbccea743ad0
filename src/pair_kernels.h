// SPDX-License-Identifier: MIT
// The all-pairs kernels, shared by every structure that keeps its points sorted by cell (the
// dense grid today, the spatial hash next): a cell's points against runs of candidate
// positions, each pair within r emitted once through a sink that counts, fills the caller's
// buffer, or calls the caller's visitor. The structure walks its own cells and hands each
// cell's runs over through an nbiSpanList; the half-neighbour stencil is the walker's job.
// Header-only, so each structure's walker gets its own inlined copy, specialised for 2D and 3D.
// Never installed.
#ifndef NEARBY_PAIR_KERNELS_H
#define NEARBY_PAIR_KERNELS_H

#include "cell.h"

#include <string.h>

enum { NBI_SINK_COUNT, NBI_SINK_BUFFER, NBI_SINK_VISIT };
enum { NBI_SCRATCH = 1024 };

// Where pairs go. Buffer mode writes straight into `out` while it has room (so the common case
// copies nothing) and keeps counting past it; visit mode calls `fn` from a scratch block.
typedef struct nbiPairSink {
    int mode;
    bool stop;
    nbPair *out;
    int64_t cap;
    int64_t found; // pairs accepted so far; in buffer mode min(found, cap) are in out
    nbPairFn *fn;
    void *user;
    nbPair scratch[NBI_SCRATCH];
} nbiPairSink;

// What the kernels read: the points in cell order (dim doubles each), their input indices, r*r.
typedef struct nbiPairCtx {
    const double *pts;
    const int32_t *idx;
    double r2;
    nbiPairSink *sink;
} nbiPairCtx;

// A run of positions [b0, b1): a neighbour cell, or a row of adjacent cells.
typedef struct nbiSpan {
    int32_t b0, b1;
} nbiSpan;

enum { NBI_MAX_SPANS = 32 };

// One cell's runs, collected and handed to nbi_cell_pairs in batches of NBI_MAX_SPANS.
typedef struct nbiSpanList {
    const nbiPairCtx *x;
    int dim;
    int32_t a0, a1, self_end;
    int ns;
    nbiSpan sp[NBI_MAX_SPANS];
} nbiSpanList;

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// Where the next `len` (<= NBI_SCRATCH) candidates may be written.
NBI_INLINE nbPair *nbi_reserve(nbiPairSink *s, int64_t len)
{
    if (s->mode == NBI_SINK_BUFFER && s->cap - s->found >= len) return s->out + s->found;
    return s->scratch;
}

// Accepts `m` pairs just written at `w` (from nbi_reserve).
static inline void nbi_commit(nbiPairSink *s, const nbPair *w, int64_t m)
{
    if (w != s->scratch) { // written in place
        s->found += m;
        return;
    }
    if (s->mode == NBI_SINK_BUFFER) {
        int64_t room = s->cap - s->found;
        if (room > 0) memcpy(s->out + s->found, w, (size_t)(room < m ? room : m) * sizeof(nbPair));
        s->found += m;
        return;
    }
    for (int64_t t = 0; t < m; t++) {
        s->found++;
        if (!s->fn(w[t].i, w[t].j, s->user)) {
            s->stop = true;
            return;
        }
    }
}

// ---- kernels: one point against a run of positions ----

// Branch-free emission: stores the pair (min(a, b), max(a, b)) at w[m] whether or not it
// matched, and returns m advanced by `hit` (0 or 1), so only matches are kept.
NBI_INLINE int64_t nbi_emit(nbPair *w, int64_t m, int32_t a, int32_t b, int hit)
{
    w[m].i = a < b ? a : b;
    w[m].j = a < b ? b : a;
    return m + hit;
}

#if defined(__SSE2__)
// Takes a two-lane mask (bit 0: index j0, bit 1: j1): counts its matches when w is NULL, else
// emits both pairs.
NBI_INLINE int64_t nbi_take2(nbPair *w, int64_t m, int32_t ii, int32_t j0, int32_t j1, int mask)
{
    if (w == NULL) return m + (mask & 1) + (mask >> 1);
    m = nbi_emit(w, m, ii, j0, mask & 1);
    return nbi_emit(w, m, ii, j1, mask >> 1);
}
#endif

// Each kernel computes d2 = dx*dx + dy*dy (+ dz*dz) in exactly the brute-force order
// (nbi_dist2), lane by lane, so SIMD changes nothing in the answer. With SSE2 two candidates go
// at once: the interleaved (x, y[, z]) records are transposed into x and y[, z] lanes.

#if defined(__SSE2__)
// Point i broadcast to both lanes, and r*r: set up once per run, not per candidate.
typedef struct nbiPoint2 {
    __m128d x, y, z, r2;
} nbiPoint2;

NBI_INLINE nbiPoint2 nbi_point2(const double *pi, int dim, double r2)
{
    nbiPoint2 v;
    v.x = _mm_set1_pd(pi[0]);
    v.y = _mm_set1_pd(pi[1]);
    v.z = _mm_set1_pd(dim == 3 ? pi[2] : 0.0);
    v.r2 = _mm_set1_pd(r2);
    return v;
}

// The two-lane mask (bit 0: q, bit 1: q + 1) of candidates q, q+1 within r of point v.
NBI_INLINE int nbi_d2_mask2(const nbiPoint2 *v, const double *pts, int32_t q, int dim)
{
    const double *b = pts + (size_t)q * (size_t)dim;
    __m128d x, y, d2;
    if (dim == 2) {
        const __m128d u = _mm_loadu_pd(b), w = _mm_loadu_pd(b + 2);
        x = _mm_unpacklo_pd(u, w);
        y = _mm_unpackhi_pd(u, w);
        const __m128d dx = _mm_sub_pd(v->x, x), dy = _mm_sub_pd(v->y, y);
        d2 = _mm_add_pd(_mm_mul_pd(dx, dx), _mm_mul_pd(dy, dy));
    } else {
        const __m128d u = _mm_loadu_pd(b), w = _mm_loadu_pd(b + 2), t = _mm_loadu_pd(b + 4);
        x = _mm_shuffle_pd(u, w, 2);
        y = _mm_shuffle_pd(u, t, 1);
        const __m128d z = _mm_shuffle_pd(w, t, 2);
        const __m128d dx = _mm_sub_pd(v->x, x), dy = _mm_sub_pd(v->y, y);
        const __m128d dz = _mm_sub_pd(v->z, z);
        d2 = _mm_add_pd(_mm_add_pd(_mm_mul_pd(dx, dx), _mm_mul_pd(dy, dy)), _mm_mul_pd(dz, dz));
    }
    return _mm_movemask_pd(_mm_cmple_pd(d2, v->r2));
}
#endif

// Point pi (index ii) against positions [q0, q1): counts those within r, or with w != NULL
// also writes them to w (see nbi_emit; room for q1 - q0 pairs). Returns how many matched.
NBI_INLINE int64_t nbi_scan(const nbiPairCtx *x, int dim, const double *pi, int32_t ii, int32_t q0,
                            int32_t q1, nbPair *w)
{
    int64_t m = 0;
    int32_t q = q0;
#if defined(__SSE2__)
    const nbiPoint2 v = nbi_point2(pi, dim, x->r2);
    for (; q + 2 <= q1; q += 2) {
        m = nbi_take2(w, m, ii, x->idx[q], x->idx[q + 1], nbi_d2_mask2(&v, x->pts, q, dim));
    }
#endif
    for (; q < q1; q++) {
        const int hit = nbi_dist2(pi, x->pts + (size_t)q * (size_t)dim, dim) <= x->r2;
        m = w == NULL ? m + hit : nbi_emit(w, m, ii, x->idx[q], hit);
    }
    return m;
}

// ---- the gathered path ----
// A cell's candidates are copied once into small contiguous x / y / z / index lanes: own cell
// first, then the cells to its right, then the neighbour rows. Point p at offset i of the cell
// then pairs with exactly the lanes after i, so each point needs one tight loop instead of one
// per span, and the lanes are aligned for two-at-a-time SIMD. Two NaN sentinels pad the end: a
// two-lane step may read one past the last candidate, and NaN never passes d2 <= r2.
enum { NBI_GATHER = 512 };
// Measured (1M uniform points, best of 9 runs): in 3D, with five runs per cell, gathering saves
// about a quarter of the time; in 2D, with two runs per cell, the copy costs what it saves, so
// 2D scans the runs in place.
#ifndef NBI_USE_GATHER
#define NBI_USE_GATHER 1
#endif

typedef struct nbiGather {
    double x[NBI_GATHER], y[NBI_GATHER], z[NBI_GATHER];
    int32_t idx[NBI_GATHER];
    int32_t n;
} nbiGather;

NBI_INLINE void nbi_gather_run(nbiGather *gt, const nbiPairCtx *x, int dim, int32_t b0, int32_t b1)
{
    const double *pts = x->pts;
    int32_t n = gt->n;
    for (int32_t q = b0; q < b1; q++, n++) {
        gt->x[n] = pts[(size_t)q * (size_t)dim];
        gt->y[n] = pts[(size_t)q * (size_t)dim + 1];
        if (dim == 3) gt->z[n] = pts[(size_t)q * (size_t)dim + 2];
        gt->idx[n] = x->idx[q];
    }
    gt->n = n;
}

#if defined(__SSE2__)
// The two-lane mask of gathered candidates q, q+1 within r of point v.
NBI_INLINE int nbi_gather_mask2(const nbiGather *gt, const nbiPoint2 *v, int32_t q, int dim)
{
    const __m128d dx = _mm_sub_pd(v->x, _mm_loadu_pd(gt->x + q));
    const __m128d dy = _mm_sub_pd(v->y, _mm_loadu_pd(gt->y + q));
    __m128d d2 = _mm_add_pd(_mm_mul_pd(dx, dx), _mm_mul_pd(dy, dy));
    if (dim == 3) {
        const __m128d dz = _mm_sub_pd(v->z, _mm_loadu_pd(gt->z + q));
        d2 = _mm_add_pd(d2, _mm_mul_pd(dz, dz));
    }
    return _mm_movemask_pd(_mm_cmple_pd(d2, v->r2));
}
#endif

// Point pi (index ii) against the gathered candidates from q0 on: counts the matches, or with
// w != NULL also writes them (see nbi_emit; room for n - q0 + 1 pairs).
NBI_INLINE int64_t nbi_gather_scan(const nbiGather *gt, int dim, const double *pi, int32_t ii,
                                   int32_t q0, double r2, nbPair *w)
{
    const int32_t n = gt->n;
    int64_t m = 0;
#if defined(__SSE2__)
    const nbiPoint2 v = nbi_point2(pi, dim, r2);
    for (int32_t q = q0; q < n; q += 2) {
        m = nbi_take2(w, m, ii, gt->idx[q], gt->idx[q + 1], nbi_gather_mask2(gt, &v, q, dim));
    }
#else
    for (int32_t q = q0; q < n; q++) {
        const double pq[3] = {gt->x[q], gt->y[q], gt->z[q]};
        const int hit = nbi_dist2(pi, pq, dim) <= r2;
        m = w == NULL ? m + hit : nbi_emit(w, m, ii, gt->idx[q], hit);
    }
#endif
    return m;
}

// The gathered path for cell A = [a0, a1) whose own run ends at self_end (>= a1).
NBI_INLINE void nbi_cell_pairs_gathered(const nbiPairCtx *x, int dim, int32_t a0, int32_t a1,
                                        int32_t self_end, const nbiSpan *sp, int ns)
{
    nbiPairSink *s = x->sink;
    nbiGather gt;
    gt.n = 0;
    nbi_gather_run(&gt, x, dim, a0, self_end);
    for (int t = 0; t < ns; t++) nbi_gather_run(&gt, x, dim, sp[t].b0, sp[t].b1);
    for (int32_t t = gt.n; t < gt.n + 2; t++) { // sentinels
        gt.x[t] = gt.y[t] = gt.z[t] = (double)NAN;
        gt.idx[t] = 0;
    }
    const double *pts = x->pts;
    const int32_t na = a1 - a0;
    if (s->mode == NBI_SINK_COUNT) {
        int64_t m = 0;
        for (int32_t i = 0; i < na; i++)
            m += nbi_gather_scan(&gt, dim, pts + (size_t)(a0 + i) * (size_t)dim, 0, i + 1, x->r2,
                                 NULL);
        s->found += m;
        return;
    }
    // at most n - i candidates (+1 for the sentinel step) for the point at offset i
    const int64_t bound = (int64_t)na * (gt.n + 1);
    if (bound <= NBI_SCRATCH) {
        nbPair *w = nbi_reserve(s, bound);
        int64_t m = 0;
        for (int32_t i = 0; i < na; i++)
            m += nbi_gather_scan(&gt, dim, pts + (size_t)(a0 + i) * (size_t)dim, gt.idx[i], i + 1,
                                 x->r2, w + m);
        nbi_commit(s, w, m);
        return;
    }
    for (int32_t i = 0; i < na && !s->stop; i++) {
        nbPair *w = nbi_reserve(s, gt.n + 1);
        nbi_commit(s, w,
                   nbi_gather_scan(&gt, dim, pts + (size_t)(a0 + i) * (size_t)dim, gt.idx[i], i + 1,
                                   x->r2, w));
    }
}

// All candidate pairs of cell A = [a0, a1): each p with q in (p, self_end) (its own cell after p,
// plus any cells that follow it in the same run) and with every q in the spans.
NBI_INLINE void nbi_cell_pairs_dim(const nbiPairCtx *x, int dim, int32_t a0, int32_t a1,
                                   int32_t self_end, const nbiSpan *sp, int ns)
{
    nbiPairSink *s = x->sink;
    const double *pts = x->pts;
    int64_t width = self_end > a0 ? self_end - a0 : 0;
    for (int t = 0; t < ns; t++) width += sp[t].b1 - sp[t].b0;
    if (width == 0 || s->stop) return;
    if (NBI_USE_GATHER && dim == 3 && self_end >= a1 && width + 2 <= NBI_GATHER) {
        nbi_cell_pairs_gathered(x, dim, a0, a1, self_end, sp, ns);
        return;
    }
    if (s->mode == NBI_SINK_COUNT) {
        int64_t m = 0;
        for (int32_t p = a0; p < a1; p++) {
            const double *pi = pts + (size_t)p * (size_t)dim;
            m += nbi_scan(x, dim, pi, 0, p + 1, self_end, NULL);
            for (int t = 0; t < ns; t++) m += nbi_scan(x, dim, pi, 0, sp[t].b0, sp[t].b1, NULL);
        }
        s->found += m;
        return;
    }
    const int64_t bound = (int64_t)(a1 - a0) * width;
    if (bound <= NBI_SCRATCH) { // the common case: the whole cell in one reservation
        nbPair *w = nbi_reserve(s, bound);
        int64_t m = 0;
        for (int32_t p = a0; p < a1; p++) {
            const double *pi = pts + (size_t)p * (size_t)dim;
            const int32_t ii = x->idx[p];
            m += nbi_scan(x, dim, pi, ii, p + 1, self_end, w + m);
            for (int t = 0; t < ns; t++) m += nbi_scan(x, dim, pi, ii, sp[t].b0, sp[t].b1, w + m);
        }
        nbi_commit(s, w, m);
        return;
    }
    for (int32_t p = a0; p < a1; p++) { // a crowded cell: run by run, in scratch-sized pieces
        const double *pi = pts + (size_t)p * (size_t)dim;
        const int32_t ii = x->idx[p];
        for (int t = -1; t < ns; t++) {
            const int32_t b0 = t < 0 ? p + 1 : sp[t].b0, b1 = t < 0 ? self_end : sp[t].b1;
            for (int32_t q0 = b0; q0 < b1; q0 += NBI_SCRATCH) {
                if (s->stop) return;
                const int32_t q1 = b1 - q0 > NBI_SCRATCH ? q0 + NBI_SCRATCH : b1;
                nbPair *w = nbi_reserve(s, q1 - q0);
                nbi_commit(s, w, nbi_scan(x, dim, pi, ii, q0, q1, w));
            }
        }
    }
}

static inline void nbi_cell_pairs(const nbiPairCtx *x, int dim, int32_t a0, int32_t a1,
                                  int32_t self_end, const nbiSpan *sp, int ns)
{
    if (dim == 2)
        nbi_cell_pairs_dim(x, 2, a0, a1, self_end, sp, ns);
    else
        nbi_cell_pairs_dim(x, 3, a0, a1, self_end, sp, ns);
}

// Runs the collected spans (and, the first time, the own run) and empties the list.
static inline void nbi_spans_flush(nbiSpanList *l)
{
    nbi_cell_pairs(l->x, l->dim, l->a0, l->a1, l->self_end, l->sp, l->ns);
    l->ns = 0;
    l->self_end = 0; // the own-cell part is done
}

// Starts a sink in `mode` (NBI_SINK_*); `out`/`cap` for buffer mode, `fn`/`user` for visit mode.
static inline void nbi_pair_sink_init(nbiPairSink *s, int mode, nbPair *out, int64_t cap,
                                      nbPairFn *fn, void *user)
{
    s->mode = mode;
    s->stop = false;
    s->out = out;
    s->cap = cap;
    s->found = 0;
    s->fn = fn;
    s->user = user;
}

NBI_INLINE void nbi_spans_add(nbiSpanList *l, int32_t b0, int32_t b1)
{
    if (b0 >= b1) return;
    if (l->ns == NBI_MAX_SPANS) nbi_spans_flush(l);
    l->sp[l->ns].b0 = b0;
    l->sp[l->ns].b1 = b1;
    l->ns++;
}

#endif
