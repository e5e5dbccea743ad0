// SPDX-License-Identifier: MIT
// The pair kernels: one cell's points against runs of candidate positions,
// each pair within r that passes the filter emitted once through the pair sink (sink.h). Every
// walker uses them: the half stencil of all pairs (self mode: one view, pairs reported as
// (min, max) of the caller's indices) and set A against set B (cross mode: the cell's points
// from view A, candidates from view B, pairs reported as (a, b), roles kept). The half stencil
// and the choice of cells are the walker's job (pairs.c); this file only scans.
// Header-only, so each walker gets inlined copies specialised by dimension, filter and mode.
// Never installed.
#ifndef NEARBY_PAIR_KERNELS_H
#define NEARBY_PAIR_KERNELS_H

#include "cell.h"
#include "simd.h"
#include "sink.h"

// What the kernels read. Side A holds the cell being paired, side B the candidates; in self
// mode both sides are the same view. cat / mask are NULL when the views carry no filter bits
// (then the kernels are instantiated without the filter test).
typedef struct nbiPairCtx {
    const double *pa;
    const int32_t *ia;
    const uint32_t *ca, *ma;
    const double *pb;
    const int32_t *ib;
    const uint32_t *cb, *mb;
    double r2;
    nbiPairSink *sink;
    double per[3]; // periodic walks: the minimum image against P (+inf: not periodic) per axis
} nbiPairCtx;

// Candidates: positions [b0, b1) of side B.
typedef struct nbiSpan {
    int32_t b0, b1;
} nbiSpan;

enum { NBI_MAX_SPANS = 32 };

// One cell's candidates, collected and handed to the kernels in batches of NBI_MAX_SPANS.
// Self mode: the cell is [a0, a1) and its own run [a0, self_end) pairs each point with the
// positions after it (self_end >= a1 covers the cells to its right in the same row).
typedef struct nbiSpanList nbiSpanList;

// A kernel: all candidate pairs of one cell's list (the kernels are declared at the end).
typedef void nbiPairKernel(const nbiSpanList *l);

struct nbiSpanList {
    const nbiPairCtx *x;
    int dim;
    bool filtered, cross, wrap;
    int32_t a0, a1, self_end;
    int ns;
    nbiPairKernel *kernel[2]; // the kernel for the list's kind, plain and periodic (wrap)
    nbiSpan sp[NBI_MAX_SPANS];
};

// The two-lane kernels by nbi_kernel_index (pairs.c).
extern nbiPairKernel *const nbi_pair_kernels[16];

// Index into nbi_pair_kernels: periodic, dim == 3, filtered, cross.
NBI_INLINE int nbi_kernel_index(bool wrap, int dim, bool flt, bool cross)
{
    return (int)wrap << 3 | (dim == 3) << 2 | (int)flt << 1 | (int)cross;
}

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// ---- one point against a run ----

// Branch-free emission: stores the pair at w[m] whether or not it matched and returns m
// advanced by `hit` (0 or 1), so only matches are kept. Self mode stores (min, max).
NBI_INLINE int64_t nbi_emit(nbPair *w, int64_t m, int32_t a, int32_t b, int hit, bool cross)
{
    w[m].i = cross || a < b ? a : b;
    w[m].j = cross || a < b ? b : a;
    return m + hit;
}

// The filter rule between the asking point (category pc, mask pm) and candidate q of side B.
NBI_INLINE int nbi_pass(const nbiPairCtx *x, uint32_t pc, uint32_t pm, int32_t q)
{
    return nbi_filter_match(pc, pm, x->cb[q], x->mb[q]);
}

#if defined(__SSE2__)
// Takes a two-lane mask (bit 0: index j0, bit 1: j1): counts its matches when w is NULL, else
// emits both pairs.
NBI_INLINE int64_t nbi_take2(nbPair *w, int64_t m, int32_t ii, int32_t j0, int32_t j1, int mask,
                             bool cross)
{
    if (w == NULL) return m + (mask & 1) + (mask >> 1);
    m = nbi_emit(w, m, ii, j0, mask & 1, cross);
    return nbi_emit(w, m, ii, j1, mask >> 1, cross);
}

// Point i broadcast to both lanes, and r*r (and, for periodic walks, the periods): set up once
// per run, not per candidate.
typedef struct nbiPoint2 {
    __m128d x, y, z, r2;
    __m128d px, py, pz;
} nbiPoint2;

NBI_INLINE nbiPoint2 nbi_point2(const double *pi, int dim, double r2)
{
    nbiPoint2 v;
    v.x = _mm_set1_pd(pi[0]);
    v.y = _mm_set1_pd(pi[1]);
    v.z = _mm_set1_pd(dim == 3 ? pi[2] : 0.0);
    v.r2 = _mm_set1_pd(r2);
    v.px = v.py = v.pz = _mm_setzero_pd();
    return v;
}

// nbi_point2 with the periods of a periodic walk (per: P or +inf per axis).
NBI_INLINE nbiPoint2 nbi_point2_wrap(const double *pi, int dim, double r2, const double *per)
{
    nbiPoint2 v = nbi_point2(pi, dim, r2);
    v.px = _mm_set1_pd(per[0]);
    v.py = _mm_set1_pd(per[1]);
    v.pz = _mm_set1_pd(dim == 3 ? per[2] : 0.0);
    return v;
}

// The minimum image of two lanes of differences d against the period p: a = |d|, then
// min(p - a, a) exactly as nbi_wrap_d takes it (minpd keeps the second operand unless the first
// is smaller, NaN included).
NBI_INLINE __m128d nbi_wrap_pd(__m128d d, __m128d p)
{
    const __m128d a = _mm_andnot_pd(_mm_set1_pd(-0.0), d);
    return _mm_min_pd(_mm_sub_pd(p, a), a);
}

// The two-lane mask (bit 0: q, bit 1: q + 1) of candidates q, q+1 within r of point v. Each lane
// computes d2 exactly as nbi_dist2 (wrap: nbi_dist2_wrap) does (same operations, same order), so
// SIMD changes nothing.
NBI_INLINE int nbi_d2_mask2(const nbiPoint2 *v, const double *pts, int32_t q, int dim, bool wrap)
{
    const double *b = pts + (size_t)q * (size_t)dim;
    __m128d x, y, d2;
    if (dim == 2) {
        const __m128d u = _mm_loadu_pd(b), w = _mm_loadu_pd(b + 2);
        x = _mm_unpacklo_pd(u, w);
        y = _mm_unpackhi_pd(u, w);
        __m128d dx = _mm_sub_pd(v->x, x), dy = _mm_sub_pd(v->y, y);
        if (wrap) {
            dx = nbi_wrap_pd(dx, v->px);
            dy = nbi_wrap_pd(dy, v->py);
        }
        d2 = _mm_add_pd(_mm_mul_pd(dx, dx), _mm_mul_pd(dy, dy));
    } else {
        const __m128d u = _mm_loadu_pd(b), w = _mm_loadu_pd(b + 2), t = _mm_loadu_pd(b + 4);
        x = _mm_shuffle_pd(u, w, 2);
        y = _mm_shuffle_pd(u, t, 1);
        const __m128d z = _mm_shuffle_pd(w, t, 2);
        __m128d dx = _mm_sub_pd(v->x, x), dy = _mm_sub_pd(v->y, y);
        __m128d dz = _mm_sub_pd(v->z, z);
        if (wrap) {
            dx = nbi_wrap_pd(dx, v->px);
            dy = nbi_wrap_pd(dy, v->py);
            dz = nbi_wrap_pd(dz, v->pz);
        }
        d2 = _mm_add_pd(_mm_add_pd(_mm_mul_pd(dx, dx), _mm_mul_pd(dy, dy)), _mm_mul_pd(dz, dz));
    }
    return _mm_movemask_pd(_mm_cmple_pd(d2, v->r2));
}
#endif

// The kernels' scalar distance: nbi_dist2, or with wrap the minimum image against x->per.
NBI_INLINE double nbi_kdist2(const nbiPairCtx *x, const double *a, const double *b, int dim,
                             bool wrap)
{
    return wrap ? nbi_dist2_wrap(a, b, dim, x->per) : nbi_dist2(a, b, dim);
}

// Point pi (index ii, filter bits pc / pm) against positions [q0, q1) of side B: counts those
// within r that pass the filter, or with w != NULL also writes them (room for q1 - q0 pairs).
NBI_INLINE int64_t nbi_scan(const nbiPairCtx *x, int dim, bool flt, bool cross, bool wrap,
                            const double *pi, int32_t ii, uint32_t pc, uint32_t pm, int32_t q0,
                            int32_t q1, nbPair *w)
{
    int64_t m = 0;
    int32_t q = q0;
#if defined(__SSE2__)
    const nbiPoint2 v = wrap ? nbi_point2_wrap(pi, dim, x->r2, x->per) : nbi_point2(pi, dim, x->r2);
    for (; q + 2 <= q1; q += 2) {
        int mask = nbi_d2_mask2(&v, x->pb, q, dim, wrap);
        if (flt) mask &= nbi_pass(x, pc, pm, q) | nbi_pass(x, pc, pm, q + 1) << 1;
        m = nbi_take2(w, m, ii, x->ib[q], x->ib[q + 1], mask, cross);
    }
#endif
    for (; q < q1; q++) {
        int hit = nbi_kdist2(x, pi, x->pb + (size_t)q * (size_t)dim, dim, wrap) <= x->r2;
        if (flt) hit &= nbi_pass(x, pc, pm, q);
        m = w == NULL ? m + hit : nbi_emit(w, m, ii, x->ib[q], hit, cross);
    }
    return m;
}

// ---- the gathered path ----
// A cell's candidates are copied once into small contiguous x / y / z / index (/ filter) lanes:
// in self mode its own run first, then the spans. Point p at offset i of the cell then pairs
// with exactly the lanes after i (self mode) or with every lane (cross mode), one tight loop
// instead of one per span, aligned for SIMD. NaN sentinels pad the end: a two-, four- or
// eight-lane step may read up to seven past the last candidate, and NaN never passes d2 <= r2.
enum { NBI_GATHER = 512, NBI_GATHER_PAD = 8 };
// Measured (1M uniform points, best of 9 runs): in 3D, with five runs per cell, gathering saves
// about a quarter of the time; in 2D, with two runs per cell, the copy costs what it saves, so
// 2D scans contiguous runs in place, unless a wide (AVX2 or AVX-512) scan runs.
#ifndef NBI_USE_GATHER
#define NBI_USE_GATHER 1
#endif

typedef struct nbiGather {
    double x[NBI_GATHER], y[NBI_GATHER], z[NBI_GATHER];
    int32_t idx[NBI_GATHER];
    uint32_t cat[NBI_GATHER], mask[NBI_GATHER];
    int32_t n;
} nbiGather;

// The gathered lanes as the wide scans read them: an nbiGather's, or a crowded cell's larger
// set (nbi_cell_pairs_crowded).
typedef struct nbiLanes {
    const double *x, *y, *z;
    const int32_t *idx;
    int32_t n;
} nbiLanes;

NBI_INLINE nbiLanes nbi_lanes(const nbiGather *gt)
{
    const nbiLanes g = {gt->x, gt->y, gt->z, gt->idx, gt->n};
    return g;
}

// `ids`: the caller's indices too (a count needs only the coordinates and filter bits). Lane n
// gets candidate q.
NBI_INLINE void nbi_gather_one(nbiGather *gt, const nbiPairCtx *x, int dim, bool flt, bool ids,
                               int32_t n, int32_t q)
{
    gt->x[n] = x->pb[(size_t)q * (size_t)dim];
    gt->y[n] = x->pb[(size_t)q * (size_t)dim + 1];
    if (dim == 3) gt->z[n] = x->pb[(size_t)q * (size_t)dim + 2];
    if (ids) gt->idx[n] = x->ib[q];
    if (flt) {
        gt->cat[n] = x->cb[q];
        gt->mask[n] = x->mb[q];
    }
}

// The lane count is kept in a local while copying: gt->n is an int32_t like the index lanes, so
// every index store would otherwise make the compiler reload it.
NBI_INLINE void nbi_gather_span(nbiGather *gt, const nbiPairCtx *x, int dim, bool flt, bool ids,
                                const nbiSpan *sp)
{
    int32_t n = gt->n;
    int32_t q = sp->b0;
#if defined(__SSE2__)
    if (dim == 2) { // two points' x and y apart in one unpack each
        for (; q + 2 <= sp->b1; q += 2, n += 2) {
            const __m128d u = _mm_loadu_pd(x->pb + (size_t)q * 2);
            const __m128d w = _mm_loadu_pd(x->pb + (size_t)q * 2 + 2);
            _mm_storeu_pd(gt->x + n, _mm_unpacklo_pd(u, w));
            _mm_storeu_pd(gt->y + n, _mm_unpackhi_pd(u, w));
            if (ids) {
                gt->idx[n] = x->ib[q];
                gt->idx[n + 1] = x->ib[q + 1];
            }
            if (flt) {
                gt->cat[n] = x->cb[q];
                gt->cat[n + 1] = x->cb[q + 1];
                gt->mask[n] = x->mb[q];
                gt->mask[n + 1] = x->mb[q + 1];
            }
        }
    }
#endif
    for (; q < sp->b1; q++) nbi_gather_one(gt, x, dim, flt, ids, n++, q);
    gt->n = n;
}

// Whether gathered lane q passes the filter against (pc, pm).
NBI_INLINE int nbi_gather_pass(const nbiGather *gt, uint32_t pc, uint32_t pm, int32_t q)
{
    return ((pc & gt->mask[q]) != 0) & ((gt->cat[q] & pm) != 0);
}

#if defined(__SSE2__)
// The two-lane mask of gathered candidates q, q+1 within r of point v.
NBI_INLINE int nbi_gather_mask2(const nbiGather *gt, const nbiPoint2 *v, int32_t q, int dim,
                                bool wrap)
{
    __m128d dx = _mm_sub_pd(v->x, _mm_loadu_pd(gt->x + q));
    __m128d dy = _mm_sub_pd(v->y, _mm_loadu_pd(gt->y + q));
    if (wrap) {
        dx = nbi_wrap_pd(dx, v->px);
        dy = nbi_wrap_pd(dy, v->py);
    }
    __m128d d2 = _mm_add_pd(_mm_mul_pd(dx, dx), _mm_mul_pd(dy, dy));
    if (dim == 3) {
        __m128d dz = _mm_sub_pd(v->z, _mm_loadu_pd(gt->z + q));
        if (wrap) dz = nbi_wrap_pd(dz, v->pz);
        d2 = _mm_add_pd(d2, _mm_mul_pd(dz, dz));
    }
    return _mm_movemask_pd(_mm_cmple_pd(d2, v->r2));
}
#endif

// Point pi (index ii, filter bits pc / pm) against the gathered lanes from q0 on: counts the
// matches, or with w != NULL also writes them (room for n - q0 + 1 pairs).
NBI_INLINE int64_t nbi_gather_scan(const nbiGather *gt, const nbiPairCtx *x, int dim, bool flt,
                                   bool cross, bool wrap, const double *pi, int32_t ii, uint32_t pc,
                                   uint32_t pm, int32_t q0, nbPair *w)
{
    const int32_t n = gt->n;
    const double r2 = x->r2;
    int64_t m = 0;
#if defined(__SSE2__)
    const nbiPoint2 v = wrap ? nbi_point2_wrap(pi, dim, r2, x->per) : nbi_point2(pi, dim, r2);
    for (int32_t q = q0; q < n; q += 2) {
        int mask = nbi_gather_mask2(gt, &v, q, dim, wrap);
        if (flt) mask &= nbi_gather_pass(gt, pc, pm, q) | nbi_gather_pass(gt, pc, pm, q + 1) << 1;
        m = nbi_take2(w, m, ii, gt->idx[q], gt->idx[q + 1], mask, cross);
    }
#else
    for (int32_t q = q0; q < n; q++) {
        const double pq[3] = {gt->x[q], gt->y[q], gt->z[q]};
        int hit = nbi_kdist2(x, pi, pq, dim, wrap) <= r2;
        if (flt) hit &= nbi_gather_pass(gt, pc, pm, q);
        m = w == NULL ? m + hit : nbi_emit(w, m, ii, gt->idx[q], hit, cross);
    }
#endif
    return m;
}

// ---- four lanes with AVX2 ----
// On x86-64 the unfiltered kernels (plain and periodic) have a second copy compiled for AVX2 and
// chosen at run time (simd.h). It scans gathered lanes four at a time: each lane computes d2
// exactly as nbi_dist2 (periodic: nbi_dist2_wrap, the minimum image as nbi_wrap_pd takes it)
// does (subtract, square, add in the same order; -ffp-contract=off forbids fusing), so the
// answers are the same bit for bit, and in the same order. The four candidate pairs
// are built in one register ((min, max) of the indices in self mode) and the matching ones packed
// to the front by one permutation, then stored as a block: no branch and no store per lane.
#if defined(NBI_AVX2)
// Lane permutations that pack the pairs of a 4-bit match mask to the front, in lane order (each
// pair is two 32-bit lanes), and the number of matches.
#define NBI_P(a, b, c, d)                                                                          \
    {                                                                                              \
        2 * (a), 2 * (a) + 1, 2 * (b), 2 * (b) + 1, 2 * (c), 2 * (c) + 1, 2 * (d), 2 * (d) + 1     \
    }
static const int32_t nbi_pack4[16][8] __attribute__((aligned(32))) = {
    NBI_P(0, 0, 0, 0), NBI_P(0, 0, 0, 0), NBI_P(1, 0, 0, 0), NBI_P(0, 1, 0, 0),
    NBI_P(2, 0, 0, 0), NBI_P(0, 2, 0, 0), NBI_P(1, 2, 0, 0), NBI_P(0, 1, 2, 0),
    NBI_P(3, 0, 0, 0), NBI_P(0, 3, 0, 0), NBI_P(1, 3, 0, 0), NBI_P(0, 1, 3, 0),
    NBI_P(2, 3, 0, 0), NBI_P(0, 2, 3, 0), NBI_P(1, 2, 3, 0), NBI_P(0, 1, 2, 3)};
#undef NBI_P
static const int8_t nbi_count4[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};

// nbi_wrap_pd four lanes wide: min(p - |d|, |d|), minpd's rule.
NBI_TARGET_AVX2 static inline __m256d nbi_wrap4(__m256d d, __m256d p)
{
    const __m256d a = _mm256_andnot_pd(_mm256_set1_pd(-0.0), d);
    return _mm256_min_pd(_mm256_sub_pd(p, a), a);
}

// Gathered lanes q .. q+3 within r of centre c: all ones where d2 <= r2 (NaN: never). `wrap`:
// by the minimum image against the periods per.
NBI_TARGET_AVX2 static inline __m256d nbi_within4(const nbiLanes *gt, int32_t q, const __m256d c[3],
                                                  int dim, __m256d vr2, bool wrap,
                                                  const __m256d per[3])
{
    __m256d dx = _mm256_sub_pd(c[0], _mm256_loadu_pd(gt->x + q));
    __m256d dy = _mm256_sub_pd(c[1], _mm256_loadu_pd(gt->y + q));
    if (wrap) {
        dx = nbi_wrap4(dx, per[0]);
        dy = nbi_wrap4(dy, per[1]);
    }
    __m256d d2 = _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy));
    if (dim == 3) {
        __m256d dz = _mm256_sub_pd(c[2], _mm256_loadu_pd(gt->z + q));
        if (wrap) dz = nbi_wrap4(dz, per[2]);
        d2 = _mm256_add_pd(d2, _mm256_mul_pd(dz, dz));
    }
    return _mm256_cmp_pd(d2, vr2, _CMP_LE_OQ);
}

// nbi_gather_scan without a filter, four lanes at a time (`wrap`: by the minimum image against
// the periods per). The lanes past gt->n hold NaN sentinels (NBI_GATHER_PAD of them), so no
// tail loop; w needs room for n - q0 + 3 pairs (the last block is stored whole).
NBI_TARGET_AVX2 static inline int64_t nbi_gather_scan4(const nbiLanes *gt, double r2, int dim,
                                                       bool cross, bool wrap, const double *per,
                                                       const double *pi, int32_t ii, int32_t q0,
                                                       nbPair *w)
{
    const int32_t n = gt->n;
    const __m256d c[3] = {_mm256_set1_pd(pi[0]), _mm256_set1_pd(pi[1]),
                          _mm256_set1_pd(dim == 3 ? pi[2] : 0.0)};
    const __m256d pv[3] = {_mm256_set1_pd(per[0]), _mm256_set1_pd(per[1]), _mm256_set1_pd(per[2])};
    const __m256d vr2 = _mm256_set1_pd(r2);
    const __m128i vi = _mm_set1_epi32(ii);
    if (w == NULL) { // a count: the lanes' compare results (-1 for a match) summed per lane
        __m256i sum = _mm256_setzero_si256();
        for (int32_t q = q0; q < n; q += 4)
            sum = _mm256_sub_epi64(sum,
                                   _mm256_castpd_si256(nbi_within4(gt, q, c, dim, vr2, wrap, pv)));
        const __m128i s2 =
            _mm_add_epi64(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
        return _mm_cvtsi128_si64(_mm_add_epi64(s2, _mm_unpackhi_epi64(s2, s2)));
    }
    int64_t m = 0;
    for (int32_t q = q0; q < n; q += 4) {
        const int mask = _mm256_movemask_pd(nbi_within4(gt, q, c, dim, vr2, wrap, pv));
        const __m128i j = _mm_loadu_si128((const __m128i *)(gt->idx + q));
        const __m128i a = cross ? vi : _mm_min_epi32(vi, j);
        const __m128i b = cross ? j : _mm_max_epi32(vi, j);
        const __m256i pairs = _mm256_set_m128i(_mm_unpackhi_epi32(a, b), _mm_unpacklo_epi32(a, b));
        const __m256i perm = _mm256_load_si256((const __m256i *)nbi_pack4[mask]);
        _mm256_storeu_si256((__m256i *)(w + m), _mm256_permutevar8x32_epi32(pairs, perm));
        m += nbi_count4[mask];
    }
    return m;
}

// ---- eight lanes with AVX-512 ----
// Where the CPU has AVX-512 (F and VL), the same kernels have a third copy that scans eight
// gathered lanes a step: the compare gives a mask register, the eight candidate pairs are
// interleaved by one permutation and the matching ones compressed to the front. Each lane still
// computes d2 as nbi_dist2 does, so the answers and their order are the AVX2 copy's. Most points
// meet 9 to 16 lanes: two steps here against four there.
#if defined(NBI_AVX512)
// nbi_wrap_pd eight lanes wide: min(p - |d|, |d|), minpd's rule.
NBI_TARGET_AVX512 static inline __m512d nbi_wrap8(__m512d d, __m512d p)
{
    const __m512d a = _mm512_abs_pd(d);
    return _mm512_min_pd(_mm512_sub_pd(p, a), a);
}

// The mask of gathered lanes q .. q+7 within r of centre c (NaN: never). `wrap`: by the minimum
// image against the periods per.
NBI_TARGET_AVX512 static inline __mmask8 nbi_within8(const nbiLanes *gt, int32_t q,
                                                     const __m512d c[3], int dim, __m512d vr2,
                                                     bool wrap, const __m512d per[3])
{
    __m512d dx = _mm512_sub_pd(c[0], _mm512_loadu_pd(gt->x + q));
    __m512d dy = _mm512_sub_pd(c[1], _mm512_loadu_pd(gt->y + q));
    if (wrap) {
        dx = nbi_wrap8(dx, per[0]);
        dy = nbi_wrap8(dy, per[1]);
    }
    __m512d d2 = _mm512_add_pd(_mm512_mul_pd(dx, dx), _mm512_mul_pd(dy, dy));
    if (dim == 3) {
        __m512d dz = _mm512_sub_pd(c[2], _mm512_loadu_pd(gt->z + q));
        if (wrap) dz = nbi_wrap8(dz, per[2]);
        d2 = _mm512_add_pd(d2, _mm512_mul_pd(dz, dz));
    }
    return _mm512_cmp_pd_mask(d2, vr2, _CMP_LE_OQ);
}

// nbi_gather_scan4 eight lanes at a time: w needs room for n - q0 + 7 pairs.
NBI_TARGET_AVX512 static inline int64_t nbi_gather_scan8(const nbiLanes *gt, double r2, int dim,
                                                         bool cross, bool wrap, const double *per,
                                                         const double *pi, int32_t ii, int32_t q0,
                                                         nbPair *w)
{
    const int32_t n = gt->n;
    const __m512d c[3] = {_mm512_set1_pd(pi[0]), _mm512_set1_pd(pi[1]),
                          _mm512_set1_pd(dim == 3 ? pi[2] : 0.0)};
    const __m512d pv[3] = {_mm512_set1_pd(per[0]), _mm512_set1_pd(per[1]), _mm512_set1_pd(per[2])};
    const __m512d vr2 = _mm512_set1_pd(r2);
    int64_t m = 0;
    if (w == NULL) {
        for (int32_t q = q0; q < n; q += 8)
            m += _mm_popcnt_u32(nbi_within8(gt, q, c, dim, vr2, wrap, pv));
        return m;
    }
    const __m256i vi = _mm256_set1_epi32(ii);
    // pair k = (a[k], b[k]): a's lanes to the even places, b's (16 on) to the odd ones
    const __m512i zip = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    for (int32_t q = q0; q < n; q += 8) {
        const __mmask8 mask = nbi_within8(gt, q, c, dim, vr2, wrap, pv);
        const __m256i j = _mm256_loadu_si256((const __m256i *)(gt->idx + q));
        const __m256i a = cross ? vi : _mm256_min_epi32(vi, j);
        const __m256i b = cross ? j : _mm256_max_epi32(vi, j);
        const __m512i pairs =
            _mm512_permutex2var_epi32(_mm512_castsi256_si512(a), zip, _mm512_castsi256_si512(b));
        _mm512_storeu_si512((void *)(w + m), _mm512_maskz_compress_epi64(mask, pairs));
        m += _mm_popcnt_u32(mask);
    }
    return m;
}
#endif
#endif

// The filter bits of side A's position p (all bits when side A carries none).
NBI_INLINE uint32_t nbi_cat_a(const nbiPairCtx *x, int32_t p)
{
    return x->ca != NULL ? x->ca[p] : 0xFFFFFFFFu;
}
NBI_INLINE uint32_t nbi_mask_a(const nbiPairCtx *x, int32_t p)
{
    return x->ma != NULL ? x->ma[p] : 0xFFFFFFFFu;
}

// Whether side A's point p can match nothing. Only needed when the kernel runs without the
// per-candidate test (side B has no bits, so every candidate is all bits) but side A has them:
// then p matches every candidate unless its own category or mask is 0.
NBI_INLINE bool nbi_a_dead(const nbiPairCtx *x, bool flt, bool cross, int32_t p)
{
    // In self mode both sides are one view: bits on side A mean bits on side B, i.e. flt.
    return cross && !flt && x->ca != NULL && ((x->ca[p] == 0) | (x->ma[p] == 0));
}

// The gathered path for the cell [a0, a1) of side A (self mode: own run [a0, self_end) first).
// `wide`: 4 or 8 for the four-lane (AVX2) or eight-lane (AVX-512) scan (no filter), else 0.
NBI_INLINE void nbi_cell_pairs_gathered(const nbiSpanList *l, int dim, bool flt, bool cross,
                                        bool wrap, int wide)
{
    const nbiPairCtx *x = l->x;
    nbiPairSink *s = x->sink;
    const bool ids = s->mode != NBI_SINK_COUNT;
    nbiGather gt;
    gt.n = 0;
    if (!cross) {
        const nbiSpan own = {l->a0, l->self_end};
        nbi_gather_span(&gt, x, dim, flt, ids, &own);
    }
    for (int t = 0; t < l->ns; t++) nbi_gather_span(&gt, x, dim, flt, ids, &l->sp[t]);
    for (int32_t t = gt.n; t < gt.n + NBI_GATHER_PAD; t++) { // sentinels (the lanes read)
        gt.x[t] = gt.y[t] = gt.z[t] = (double)NAN;
        gt.idx[t] = 0;
        if (flt) gt.cat[t] = gt.mask[t] = 0;
    }
    const int32_t a0 = l->a0, na = l->a1 - l->a0;
#if defined(NBI_AVX2)
    const nbiLanes lanes = nbi_lanes(&gt);
#endif
#if defined(NBI_AVX512)
#define NBI_GSCAN8(i, w)                                                                           \
    wide == 8 ? nbi_gather_scan8(&lanes, x->r2, dim, cross, wrap, x->per,                          \
                                 x->pa + (size_t)(a0 + (i)) * (size_t)dim, x->ia[a0 + (i)],        \
                                 cross ? 0 : (i) + 1, w)                                           \
              :
#else
#define NBI_GSCAN8(i, w)
#endif
#if defined(NBI_AVX2)
#define NBI_GSCAN(i, w)                                                                            \
    (NBI_GSCAN8(i, w) wide == 4                                                                    \
         ? nbi_gather_scan4(&lanes, x->r2, dim, cross, wrap, x->per,                               \
                            x->pa + (size_t)(a0 + (i)) * (size_t)dim, x->ia[a0 + (i)],             \
                            cross ? 0 : (i) + 1, w)                                                \
         : nbi_gather_scan(&gt, x, dim, flt, cross, wrap,                                          \
                           x->pa + (size_t)(a0 + (i)) * (size_t)dim, x->ia[a0 + (i)],              \
                           nbi_cat_a(x, a0 + (i)), nbi_mask_a(x, a0 + (i)), cross ? 0 : (i) + 1,   \
                           w))
#else
    (void)wide;
#define NBI_GSCAN(i, w)                                                                            \
    nbi_gather_scan(&gt, x, dim, flt, cross, wrap, x->pa + (size_t)(a0 + (i)) * (size_t)dim,       \
                    x->ia[a0 + (i)], nbi_cat_a(x, a0 + (i)), nbi_mask_a(x, a0 + (i)),              \
                    cross ? 0 : (i) + 1, w)
#endif
    if (s->mode == NBI_SINK_COUNT) {
        int64_t m = 0;
        for (int32_t i = 0; i < na; i++)
            m += nbi_a_dead(x, flt, cross, a0 + i) ? 0 : NBI_GSCAN(i, NULL);
        s->found += m;
        return;
    }
    // at most n - q0 candidates, and the last step's block past them, for each point
    const int64_t bound = (int64_t)na * (gt.n + NBI_GATHER_PAD);
    if (bound <= NBI_SCRATCH) {
        nbPair *w = nbi_reserve(s, bound);
        int64_t m = 0;
        for (int32_t i = 0; i < na; i++)
            m += nbi_a_dead(x, flt, cross, a0 + i) ? 0 : NBI_GSCAN(i, w + m);
        nbi_commit(s, w, m);
        return;
    }
    for (int32_t i = 0; i < na && !s->stop; i++) {
        if (nbi_a_dead(x, flt, cross, a0 + i)) continue;
        nbPair *w = nbi_reserve(s, gt.n + NBI_GATHER_PAD);
        nbi_commit(s, w, NBI_GSCAN(i, w));
    }
#undef NBI_GSCAN
#undef NBI_GSCAN8
}

#if defined(NBI_AVX2)
// A crowded cell (more candidates than an nbiGather holds, at most NBI_GATHER_BIG) on the wide
// scans, no filter: the gathered path over larger lanes (x, y, z and index only: 56 KB of stack,
// taken only here), the same pairs in the same order. Such cells are few (a heavy tail's dense
// core), but each is long: on the two-lane kernel they cost a quarter of a heavy tail's pair walk
// (docs/grid.md, "Crowded cells and wider digits"). `wide`: 4 or 8.
enum { NBI_GATHER_BIG = 2048 };

NBI_INLINE void nbi_cell_pairs_crowded(const nbiSpanList *l, int dim, bool cross, bool wrap,
                                       int wide)
{
    const nbiPairCtx *x = l->x;
    nbiPairSink *s = x->sink;
    const bool ids = s->mode != NBI_SINK_COUNT;
    struct {
        double x[NBI_GATHER_BIG], y[NBI_GATHER_BIG], z[NBI_GATHER_BIG];
        int32_t idx[NBI_GATHER_BIG];
    } big;
    int32_t n = 0;
    for (int t = cross ? 0 : -1; t < l->ns; t++) { // the own run first (self mode), then the spans
        const int32_t b0 = t < 0 ? l->a0 : l->sp[t].b0, b1 = t < 0 ? l->self_end : l->sp[t].b1;
        for (int32_t q = b0; q < b1; q++, n++) {
            big.x[n] = x->pb[(size_t)q * (size_t)dim];
            big.y[n] = x->pb[(size_t)q * (size_t)dim + 1];
            if (dim == 3) big.z[n] = x->pb[(size_t)q * (size_t)dim + 2];
            if (ids) big.idx[n] = x->ib[q];
        }
    }
    for (int32_t t = n; t < n + NBI_GATHER_PAD; t++) { // sentinels (the lanes read)
        big.x[t] = big.y[t] = big.z[t] = (double)NAN;
        big.idx[t] = 0;
    }
    const int32_t a0 = l->a0, na = l->a1 - l->a0;
    // A point's lanes in pieces whose writes fit the sink's scratch: a piece that is not the last
    // is a whole number of steps long, so its last step reads no lane of the next.
    const int32_t piece = ids ? NBI_SCRATCH - NBI_GATHER_PAD : NBI_GATHER_BIG;
    int64_t m = 0;
    for (int32_t i = 0; i < na && !s->stop; i++) {
        const double *pi = x->pa + (size_t)(a0 + i) * (size_t)dim;
        for (int32_t q0 = cross ? 0 : i + 1; q0 < n && !s->stop; q0 += piece) {
            const nbiLanes lanes = {big.x, big.y, big.z, big.idx, n - q0 > piece ? q0 + piece : n};
            nbPair *w = ids ? nbi_reserve(s, lanes.n - q0 + NBI_GATHER_PAD) : NULL;
#if defined(NBI_AVX512)
            const int64_t got = wide == 8 ? nbi_gather_scan8(&lanes, x->r2, dim, cross, wrap,
                                                             x->per, pi, x->ia[a0 + i], q0, w)
                                          : nbi_gather_scan4(&lanes, x->r2, dim, cross, wrap,
                                                             x->per, pi, x->ia[a0 + i], q0, w);
#else
            (void)wide;
            const int64_t got =
                nbi_gather_scan4(&lanes, x->r2, dim, cross, wrap, x->per, pi, x->ia[a0 + i], q0, w);
#endif
            if (ids)
                nbi_commit(s, w, got);
            else
                m += got;
        }
    }
    s->found += m;
}

// nbi_cell_pairs_crowded out of line, one copy per width (pairs_avx2.c, pairs_avx512.c), so
// that the kernels' common path stays as it was: crowded cells are few and each is long.
void nbi_pairs_crowded_avx2(const nbiSpanList *l, int dim, bool cross, bool wrap);
#if defined(NBI_AVX512)
void nbi_pairs_crowded_avx512(const nbiSpanList *l, int dim, bool cross, bool wrap);
#endif
// Defines `name`: nbi_cell_pairs_crowded specialised on (dim, cross, wrap) for `lanes`.
#define NBI_CROWDED_DEFINE(name, target, lanes)                                                    \
    target void name(const nbiSpanList *l, int dim, bool cross, bool wrap)                         \
    {                                                                                              \
        if (dim == 3 && !cross && !wrap)                                                           \
            nbi_cell_pairs_crowded(l, 3, false, false, lanes);                                     \
        else if (dim == 3 && cross && !wrap)                                                       \
            nbi_cell_pairs_crowded(l, 3, true, false, lanes);                                      \
        else if (dim == 2 && !wrap)                                                                \
            nbi_cell_pairs_crowded(l, 2, cross, false, lanes);                                     \
        else                                                                                       \
            nbi_cell_pairs_crowded(l, dim, cross, wrap, lanes);                                    \
    }
#endif

// All candidate pairs of the list's cell: each point p with the positions after it in its own
// run (self mode) and with every candidate of the spans.
NBI_INLINE void nbi_cell_pairs_dim(const nbiSpanList *l, int dim, bool flt, bool cross, bool wrap,
                                   int wide)
{
    const nbiPairCtx *x = l->x;
    nbiPairSink *s = x->sink;
    const int32_t a0 = l->a0, a1 = l->a1;
    const int32_t self_end = cross ? a0 : l->self_end;
    int64_t width = self_end > a0 ? self_end - a0 : 0;
    for (int t = 0; t < l->ns; t++) width += l->sp[t].b1 - l->sp[t].b0;
    if (width == 0 || s->stop) return;
    const bool own_fits = cross || self_end >= a1;
    if (NBI_USE_GATHER && (wide != 0 || dim == 3 || cross) && own_fits &&
        width + NBI_GATHER_PAD <= NBI_GATHER) {
        nbi_cell_pairs_gathered(l, dim, flt, cross, wrap, wide);
        return;
    }
#if defined(NBI_AVX2)
    if (NBI_USE_GATHER && wide != 0 && own_fits && width + NBI_GATHER_PAD <= NBI_GATHER_BIG) {
#if defined(NBI_AVX512)
        if (wide == 8) {
            nbi_pairs_crowded_avx512(l, dim, cross, wrap);
            return;
        }
#endif
        nbi_pairs_crowded_avx2(l, dim, cross, wrap);
        return;
    }
#endif
    if (wide != 0) { // too crowded for the larger lanes: the two-lane kernel's path (nbi_scan)
        nbi_pair_kernels[nbi_kernel_index(wrap, dim, flt, cross)](l);
        return;
    }
    if (s->mode == NBI_SINK_COUNT) {
        int64_t m = 0;
        for (int32_t p = a0; p < a1; p++) {
            const double *pi = x->pa + (size_t)p * (size_t)dim;
            const uint32_t pc = nbi_cat_a(x, p), pm = nbi_mask_a(x, p);
            if (nbi_a_dead(x, flt, cross, p)) continue;
            m += nbi_scan(x, dim, flt, cross, wrap, pi, 0, pc, pm, p + 1, self_end, NULL);
            for (int t = 0; t < l->ns; t++)
                m += nbi_scan(x, dim, flt, cross, wrap, pi, 0, pc, pm, l->sp[t].b0, l->sp[t].b1,
                              NULL);
        }
        s->found += m;
        return;
    }
    const int64_t bound = (int64_t)(a1 - a0) * width;
    if (bound <= NBI_SCRATCH) { // the common case: the whole cell in one reservation
        nbPair *w = nbi_reserve(s, bound);
        int64_t m = 0;
        for (int32_t p = a0; p < a1; p++) {
            const double *pi = x->pa + (size_t)p * (size_t)dim;
            const int32_t ii = x->ia[p];
            const uint32_t pc = nbi_cat_a(x, p), pm = nbi_mask_a(x, p);
            if (nbi_a_dead(x, flt, cross, p)) continue;
            m += nbi_scan(x, dim, flt, cross, wrap, pi, ii, pc, pm, p + 1, self_end, w + m);
            for (int t = 0; t < l->ns; t++)
                m += nbi_scan(x, dim, flt, cross, wrap, pi, ii, pc, pm, l->sp[t].b0, l->sp[t].b1,
                              w + m);
        }
        nbi_commit(s, w, m);
        return;
    }
    // A crowded cell: run by run, in scratch-sized pieces (count mode counts only).
    for (int32_t p = a0; p < a1; p++) {
        const double *pi = x->pa + (size_t)p * (size_t)dim;
        const int32_t ii = x->ia[p];
        const uint32_t pc = nbi_cat_a(x, p), pm = nbi_mask_a(x, p);
        if (nbi_a_dead(x, flt, cross, p)) continue;
        for (int t = -1; t < l->ns; t++) {
            const nbiSpan *sp = t < 0 ? NULL : &l->sp[t];
            const int32_t b0 = t < 0 ? p + 1 : sp->b0, b1 = t < 0 ? self_end : sp->b1;
            for (int32_t q0 = b0; q0 < b1; q0 += NBI_SCRATCH) {
                if (s->stop) return;
                const int32_t q1 = b1 - q0 > NBI_SCRATCH ? q0 + NBI_SCRATCH : b1;
                nbPair *w = s->mode == NBI_SINK_COUNT ? NULL : nbi_reserve(s, q1 - q0);
                const int64_t m = nbi_scan(x, dim, flt, cross, wrap, pi, ii, pc, pm, q0, q1, w);
                if (w == NULL)
                    s->found += m;
                else
                    nbi_commit(s, w, m);
            }
        }
    }
}

// The kernels: one out-of-line copy per (dimension, filter, mode, periodic), each compiled with
// every branch on those folded away, and for the unfiltered ones an AVX2 and an AVX-512 copy
// (see nbi_gather_scan4). They live in their own translation units (pairs_sse2.c, pairs_wrap.c,
// pairs_avx2.c, pairs_avx512.c), so that they compile in parallel; pairs.c holds the tables
// that pick them.
#define NBI_KERNEL_NAMES(X, sfx)                                                                   \
    X(nbi_pairs_2##sfx)                                                                            \
    X(nbi_pairs_2x##sfx)                                                                           \
    X(nbi_pairs_3##sfx)                                                                            \
    X(nbi_pairs_3x##sfx)                                                                           \
    X(nbi_pairs_2w##sfx) X(nbi_pairs_2xw##sfx) X(nbi_pairs_3w##sfx) X(nbi_pairs_3xw##sfx)
#define NBI_KERNEL_DECLARE(name) void name(const nbiSpanList *l);
NBI_KERNEL_NAMES(NBI_KERNEL_DECLARE, )
NBI_KERNEL_DECLARE(nbi_pairs_2f)
NBI_KERNEL_DECLARE(nbi_pairs_2fx)
NBI_KERNEL_DECLARE(nbi_pairs_3f)
NBI_KERNEL_DECLARE(nbi_pairs_3fx)
NBI_KERNEL_DECLARE(nbi_pairs_2fw)
NBI_KERNEL_DECLARE(nbi_pairs_2fxw)
NBI_KERNEL_DECLARE(nbi_pairs_3fw)
NBI_KERNEL_DECLARE(nbi_pairs_3fxw)
#if defined(NBI_AVX2)
NBI_KERNEL_NAMES(NBI_KERNEL_DECLARE, _avx2)
#if defined(NBI_AVX512)
NBI_KERNEL_NAMES(NBI_KERNEL_DECLARE, _avx512)
#endif
#endif
#undef NBI_KERNEL_DECLARE

// Defines kernel `name` (in the translation units above): `lanes` 0 for a two-lane copy, 4 or 8
// for an AVX2 or AVX-512 one (no filter), compiled for `target`.
#define NBI_KERNEL_DEFINE(name, target, dim, flt, cross, wrap, lanes)                              \
    target void name(const nbiSpanList *l)                                                         \
    {                                                                                              \
        nbi_cell_pairs_dim(l, dim, flt, cross, wrap, lanes);                                       \
    }
// The eight two-lane copies, plain (sfx empty, wrap false) or periodic (sfx w, wrap true).
#define NBI_KERNELS_TWO_LANE(sfx, wrap)                                                            \
    NBI_KERNEL_DEFINE(nbi_pairs_2##sfx, , 2, false, false, wrap, 0)                                \
    NBI_KERNEL_DEFINE(nbi_pairs_2x##sfx, , 2, false, true, wrap, 0)                                \
    NBI_KERNEL_DEFINE(nbi_pairs_2f##sfx, , 2, true, false, wrap, 0)                                \
    NBI_KERNEL_DEFINE(nbi_pairs_2fx##sfx, , 2, true, true, wrap, 0)                                \
    NBI_KERNEL_DEFINE(nbi_pairs_3##sfx, , 3, false, false, wrap, 0)                                \
    NBI_KERNEL_DEFINE(nbi_pairs_3x##sfx, , 3, false, true, wrap, 0)                                \
    NBI_KERNEL_DEFINE(nbi_pairs_3f##sfx, , 3, true, false, wrap, 0)                                \
    NBI_KERNEL_DEFINE(nbi_pairs_3fx##sfx, , 3, true, true, wrap, 0)
// The eight unfiltered copies of one width: plain and periodic, 2D and 3D, one set or two.
#define NBI_KERNELS_WIDE(sfx, target, lanes)                                                       \
    NBI_KERNEL_DEFINE(nbi_pairs_2##sfx, target, 2, false, false, false, lanes)                     \
    NBI_KERNEL_DEFINE(nbi_pairs_2x##sfx, target, 2, false, true, false, lanes)                     \
    NBI_KERNEL_DEFINE(nbi_pairs_3##sfx, target, 3, false, false, false, lanes)                     \
    NBI_KERNEL_DEFINE(nbi_pairs_3x##sfx, target, 3, false, true, false, lanes)                     \
    NBI_KERNEL_DEFINE(nbi_pairs_2w##sfx, target, 2, false, false, true, lanes)                     \
    NBI_KERNEL_DEFINE(nbi_pairs_2xw##sfx, target, 2, false, true, true, lanes)                     \
    NBI_KERNEL_DEFINE(nbi_pairs_3w##sfx, target, 3, false, false, true, lanes)                     \
    NBI_KERNEL_DEFINE(nbi_pairs_3xw##sfx, target, 3, false, true, true, lanes)

#if defined(NBI_AVX2)
// The AVX2 and AVX-512 copies: [eight lanes][periodic][dim == 3, cross] (pairs.c; the AVX2 ones
// in the eight-lane row too where AVX-512 is not compiled).
extern nbiPairKernel *const nbi_pair_kernels_wide[2][2][4];
#endif

// The kernel for lists of one kind (periodic, dim, filtered, cross): the AVX-512 or AVX2 copy
// where the CPU runs it and no filter is asked, else the two-lane one. Chosen once a walk.
static inline nbiPairKernel *nbi_pick_kernel(bool wrap, int dim, bool flt, bool cross)
{
    const int k = nbi_kernel_index(wrap, dim, flt, cross);
#if defined(NBI_AVX2)
    if (!flt && nbi_use_avx2()) {
#if defined(NBI_AVX512)
        const int w8 = nbi_use_avx512();
#else
        const int w8 = 0;
#endif
        return nbi_pair_kernels_wide[w8][k >> 3][(k >> 1 & 2) | (k & 1)];
    }
#endif
    return nbi_pair_kernels[k];
}

// Runs the collected spans (and, the first time, the own run) and empties the list. A list
// that can hold no pair (no spans, and in self mode an own run of one point) calls nothing.
static inline void nbi_spans_flush(nbiSpanList *l)
{
    if (l->ns > 0 || (!l->cross && l->self_end - l->a0 > 1)) l->kernel[l->wrap](l);
    l->ns = 0;
    l->self_end = l->a0; // the own-cell part is done
}

// An empty list of one kind (self or cross mode; filtered when side B carries filter bits), its
// kernels chosen. `wrap` may change between cells: both kernels are at hand.
static inline void nbi_span_list_init(nbiSpanList *l, const nbiPairCtx *x, int dim, bool cross)
{
    l->x = x;
    l->dim = dim;
    l->filtered = x->cb != NULL;
    l->cross = cross;
    l->wrap = false;
    l->ns = 0;
    for (int w = 0; w < 2; w++) l->kernel[w] = nbi_pick_kernel(w == 1, dim, l->filtered, cross);
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
