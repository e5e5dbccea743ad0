// SPDX-License-Identifier: MIT
// Radius, box and k-nearest queries over a cell-sorted view (view.h), with a filter.
//
// Range queries turn the query's extent into a box of cells and test every point in it. The box
// comes from the same monotone cell map that placed the points: a point p with lo <= p <= hi
// (exactly) has cell(fl(lo)) <= cell(p) <= cell(fl(hi)), so no margin is needed. For a radius
// query the extent is center +- reach(r), the largest true distance the double test can accept.
// The box is clipped to the occupied cells; in a hashed view a box with more cells than are
// occupied is answered by a pass over the occupied cells instead, so no query costs more than
// O(N + cells). A ball many cells wide is clipped to the ball: plane by plane and row by row on
// the dense and ranked layouts, and on cells in Z order (the grid's hashed layout) by a descent
// of the Z order's blocks that skips every block beyond the ball.
//
// kNN keeps the k best in the caller's buffer as a max-heap ordered by (dist2, index). On cells
// in Z order (the grid's hashed layout: clustered, surface and far-flung data) it searches the
// aligned blocks of cells as a tree, nearest block first, and skips every block farther than
// the k-th best: an empty region costs one step whatever its size, and a query costs about what
// its k neighbours' blocks hold. Elsewhere it searches rings of cells outward from the query's
// cell. After ring m, every unvisited point is at least the distance from the query to the
// visited block's faces (less a rounding margin); the search stops once the k-th best is
// strictly closer. If the rings would cost more than scanning every point, it scans every point
// instead.
//
// The filter is tested per candidate, before the distance is reported. A view without filter
// bits has every point at all bits, so the filter reduces to one test per query.
#include "knn_heap.h"
#include "knn_index.h"
#include "pair_kernels.h" // the two-lane distance test
#include "view.h"

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
        const int m = nbi_d2_mask2(&c, pts, p, dim, false);
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
// no branch on the distance test. Every candidate's result is stored at the write position,
// which advances only for a hit, so a query costs its candidates, not its mispredicted branches
// (about a third of the candidates hit, at random). Candidates go two at a time through the
// SSE2 lane test (nbi_d2_mask2: each lane computes d2 exactly as nbi_dist2 does, same operations
// in the same order), the odd one through nbi_dist2. Storing always needs room for a whole run
// past the write position; a run that might not fit stores only below the capacity and counts
// on. The filter, when the view has bits, joins the test as a 0/1 factor.
//
// What a hit writes (`emit`): idx[p], the caller's index, or p itself (sink positions: the
// spatial hash, which turns positions into its own results afterwards). Writing the hash's
// 16-byte results here instead, for every candidate, was measured: it reads them for the misses
// and the slack too, and took 40% more cache misses (docs/hash.md).
enum { NBI_EMIT_IDX, NBI_EMIT_POS };

typedef struct nbiFastCtx {
    const double *pts;
    const int32_t *idx;
    const uint32_t *cat, *mask;
    nbFilter f;
    double c[3];
    double r2;
    int32_t *out; // NULL: count only
    int32_t cap;
    int32_t found;
#if defined(__SSE2__)
    nbiPoint2 c2; // the centre in both lanes, set up once per query
#endif
} nbiFastCtx;

NBI_INLINE void nbi_fast_put(const nbiFastCtx *x, int emit, ptrdiff_t w, int32_t p)
{
    x->out[w] = emit == NBI_EMIT_IDX ? x->idx[p] : p;
}

// Whether candidate p passes the query's filter, as 0 or 1.
NBI_INLINE int nbi_fast_pass(const nbiFastCtx *x, int32_t p)
{
    return nbi_filter_match(x->f.category, x->f.mask, x->cat[p], x->mask[p]);
}

NBI_INLINE int nbi_fast_hit(const nbiFastCtx *x, int dim, bool flt, int32_t p)
{
    int hit = nbi_dist2(x->c, x->pts + (size_t)p * (size_t)dim, dim) <= x->r2;
    if (flt) hit &= nbi_fast_pass(x, p);
    return hit;
}

#if defined(NBI_AVX512)
// The candidates [b0, b1) without a filter, eight at a time with AVX-512 (where the CPU has
// it): the eight points' coordinates are pulled apart by permutations (nbi_split8), each
// lane computes d2 exactly as nbi_dist2 does (subtract, square, add in the same order), and the
// hits are compressed straight to the write position, so only hits are stored. The last step
// masks the lanes past b1 (their loads and their compare).
NBI_TARGET_AVX512 static inline void nbi_fast_run8(nbiFastCtx *x, int dim, int emit, int32_t b0,
                                                   int32_t b1)
{
    const __m512d cx = _mm512_set1_pd(x->c[0]), cy = _mm512_set1_pd(x->c[1]);
    const __m512d cz = _mm512_set1_pd(x->c[2]), r2 = _mm512_set1_pd(x->r2);
    const __m256i step = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0);
    ptrdiff_t found = x->found;
    for (int32_t p = b0; p < b1; p += 8) {
        const int32_t left = b1 - p < 8 ? b1 - p : 8;
        const __mmask8 live = (__mmask8)((1u << left) - 1u);
        const double *q = x->pts + (size_t)p * (size_t)dim;
        __m512d d2;
        if (dim == 2) {
            const __mmask8 la = (__mmask8)(left >= 4 ? 0xFF : (1u << (2 * left)) - 1u);
            const __mmask8 lb = (__mmask8)(left <= 4 ? 0 : (1u << (2 * (left - 4))) - 1u);
            const __m512d a = _mm512_maskz_loadu_pd(la, q), b = _mm512_maskz_loadu_pd(lb, q + 8);
            __m512d v[3];
            nbi_split8(2, a, b, a, v);
            const __m512d dx = _mm512_sub_pd(cx, v[0]), dy = _mm512_sub_pd(cy, v[1]);
            d2 = _mm512_add_pd(_mm512_mul_pd(dx, dx), _mm512_mul_pd(dy, dy));
        } else {
            const int n3 = 3 * left; // doubles in this step
            const __mmask8 la = (__mmask8)(n3 >= 8 ? 0xFF : (1u << n3) - 1u);
            const __mmask8 lb = (__mmask8)(n3 >= 16 ? 0xFF : n3 <= 8 ? 0 : (1u << (n3 - 8)) - 1u);
            const __mmask8 lc = (__mmask8)(n3 <= 16 ? 0 : (1u << (n3 - 16)) - 1u);
            const __m512d a = _mm512_maskz_loadu_pd(la, q), b = _mm512_maskz_loadu_pd(lb, q + 8),
                          c = _mm512_maskz_loadu_pd(lc, q + 16);
            __m512d v[3];
            nbi_split8(3, a, b, c, v);
            const __m512d dx = _mm512_sub_pd(cx, v[0]), dy = _mm512_sub_pd(cy, v[1]);
            const __m512d dz = _mm512_sub_pd(cz, v[2]);
            d2 = _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(dx, dx), _mm512_mul_pd(dy, dy)),
                               _mm512_mul_pd(dz, dz));
        }
        const __mmask8 hit = _mm512_mask_cmp_pd_mask(live, d2, r2, _CMP_LE_OQ);
        if (x->out != NULL) {
            const __m256i id = emit == NBI_EMIT_IDX ? _mm256_maskz_loadu_epi32(live, x->idx + p)
                                                    : _mm256_add_epi32(_mm256_set1_epi32(p), step);
            _mm256_mask_compressstoreu_epi32(x->out + found, hit, id);
        }
        found += _mm_popcnt_u32(hit);
    }
    x->found = (int32_t)found;
}
#endif

// The candidates [b0, b1). `wide`: the eight-lane run (an AVX-512 copy, no filter).
NBI_INLINE void nbi_fast_run_dim(nbiFastCtx *x, int dim, bool flt, int emit, int wide, int32_t b0,
                                 int32_t b1)
{
    ptrdiff_t found = x->found; // (pointer-sized: no widening per store)
    int32_t p = b0;
    const bool store = x->out != NULL;
#if defined(NBI_AVX512)
    if (wide == 8 && !flt && (!store || x->cap - found >= b1 - b0)) {
        nbi_fast_run8(x, dim, emit, b0, b1);
        return;
    }
#else
    (void)wide;
#endif
    if (store && x->cap - found < b1 - b0) { // may not fit: store below the capacity only
        for (; p < b1; p++) {
            const int hit = nbi_fast_hit(x, dim, flt, p);
            if (hit && found < x->cap) nbi_fast_put(x, emit, found, p);
            found += hit;
        }
        x->found = (int32_t)found;
        return;
    }
#if defined(__SSE2__)
    for (; p + 2 <= b1; p += 2) {
        int m = nbi_d2_mask2(&x->c2, x->pts, p, dim, false);
        if (flt) m &= nbi_fast_pass(x, p) | nbi_fast_pass(x, p + 1) << 1;
        if (store) {
            nbi_fast_put(x, emit, found, p);
            found += m & 1;
            nbi_fast_put(x, emit, found, p + 1);
            found += m >> 1;
        } else {
            found += (m & 1) + (m >> 1);
        }
    }
#endif
    for (; p < b1; p++) {
        const int hit = nbi_fast_hit(x, dim, flt, p);
        if (store) nbi_fast_put(x, emit, found, p);
        found += hit;
    }
    x->found = (int32_t)found;
}

// A dense view without `end`: the cells of a row of the box are contiguous in cell order, so
// each row is one run, read straight from `start` with no call per run.
NBI_INLINE void nbi_fast_rows_dim(const nbiView *v, nbiFastCtx *x, const int64_t cl[3],
                                  const int64_t ch[3], int dim, bool flt, int emit, int wide)
{
    const int32_t *start = v->start;
    const int64_t e0 = v->ext[0], e01 = v->ext[0] * v->ext[1];
    const int64_t x0 = cl[0] - v->lo[0], x1 = ch[0] - v->lo[0] + 1;
    for (int64_t z = cl[2]; z <= ch[2]; z++)
        for (int64_t y = cl[1]; y <= ch[1]; y++) {
            const int32_t *row = start + ((y - v->lo[1]) * e0 + (z - v->lo[2]) * e01);
            nbi_fast_run_dim(x, dim, flt, emit, wide, row[x0], row[x1]);
        }
}

// A hashed view with blocks (view.h, nbi_view_has_blocks): the box's occupied cells that `want`
// keeps, found through the blocks, consecutive cells read as one run, with no call per run.
// False (nothing done) when the box is not one the blocks answer.
NBI_INLINE bool nbi_fast_blocks_dim(const nbiView *v, nbiFastCtx *x, const int64_t cl[3],
                                    const int64_t ch[3], uint64_t want, int dim, bool flt, int emit,
                                    int wide)
{
    int32_t c[NBI_BLOCK_BOX];
    const int n = nbi_view_block_cells(v, cl, ch, want, c, wide == 8);
    if (n < 0) return false;
    const int32_t *start = v->start;
    for (int i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && c[j] == c[j - 1] + 1;) j++;
        nbi_fast_run_dim(x, dim, flt, emit, wide, start[c[i]], start[c[j - 1] + 1]);
    }
    return true;
}

// Each (dim, filter, emit) variant three times: one run through nbi_view_box_runs (views whose
// cells are looked up: hashed, ranked, or with `end`), the rows of a dense view, and the cells
// of a hashed view's blocks.
#define NBI_FAST_FNS(suffix, dim, flt, emit, target, wide)                                         \
    target static bool nbi_fast_run##suffix(int32_t b0, int32_t b1, void *x)                       \
    {                                                                                              \
        nbi_fast_run_dim((nbiFastCtx *)x, dim, flt, emit, wide, b0, b1);                           \
        return true;                                                                               \
    }                                                                                              \
    target static void nbi_fast_rows##suffix(const nbiView *v, nbiFastCtx *x, const int64_t cl[3], \
                                             const int64_t ch[3])                                  \
    {                                                                                              \
        nbi_fast_rows_dim(v, x, cl, ch, dim, flt, emit, wide);                                     \
    }                                                                                              \
    target static bool nbi_fast_blocks##suffix(                                                    \
        const nbiView *v, nbiFastCtx *x, const int64_t cl[3], const int64_t ch[3], uint64_t want)  \
    {                                                                                              \
        return nbi_fast_blocks_dim(v, x, cl, ch, want, dim, flt, emit, wide);                      \
    }
NBI_FAST_FNS(2, 2, false, NBI_EMIT_IDX, , 0)
NBI_FAST_FNS(3, 3, false, NBI_EMIT_IDX, , 0)
NBI_FAST_FNS(2f, 2, true, NBI_EMIT_IDX, , 0)
NBI_FAST_FNS(3f, 3, true, NBI_EMIT_IDX, , 0)
NBI_FAST_FNS(2p, 2, false, NBI_EMIT_POS, , 0)
NBI_FAST_FNS(3p, 3, false, NBI_EMIT_POS, , 0)
NBI_FAST_FNS(2pf, 2, true, NBI_EMIT_POS, , 0)
NBI_FAST_FNS(3pf, 3, true, NBI_EMIT_POS, , 0)
#if defined(NBI_AVX512)
// The AVX-512 copies of the unfiltered ones (nbi_fast_run8), chosen at run time.
NBI_FAST_FNS(2_512, 2, false, NBI_EMIT_IDX, NBI_TARGET_AVX512, 8)
NBI_FAST_FNS(3_512, 3, false, NBI_EMIT_IDX, NBI_TARGET_AVX512, 8)
NBI_FAST_FNS(2p_512, 2, false, NBI_EMIT_POS, NBI_TARGET_AVX512, 8)
NBI_FAST_FNS(3p_512, 3, false, NBI_EMIT_POS, NBI_TARGET_AVX512, 8)
#endif
#undef NBI_FAST_FNS

typedef void nbiFastRowsFn(const nbiView *v, nbiFastCtx *x, const int64_t cl[3],
                           const int64_t ch[3]);
typedef bool nbiFastBlocksFn(const nbiView *v, nbiFastCtx *x, const int64_t cl[3],
                             const int64_t ch[3], uint64_t want);

// [emit][filtered][dim == 3]
static nbiFastRowsFn *const nbi_fast_rows[2][2][2] = {
    {{nbi_fast_rows2, nbi_fast_rows3}, {nbi_fast_rows2f, nbi_fast_rows3f}},
    {{nbi_fast_rows2p, nbi_fast_rows3p}, {nbi_fast_rows2pf, nbi_fast_rows3pf}},
};
static nbiRunFn *const nbi_fast_runs[2][2][2] = {
    {{nbi_fast_run2, nbi_fast_run3}, {nbi_fast_run2f, nbi_fast_run3f}},
    {{nbi_fast_run2p, nbi_fast_run3p}, {nbi_fast_run2pf, nbi_fast_run3pf}},
};
static nbiFastBlocksFn *const nbi_fast_blocks[2][2][2] = {
    {{nbi_fast_blocks2, nbi_fast_blocks3}, {nbi_fast_blocks2f, nbi_fast_blocks3f}},
    {{nbi_fast_blocks2p, nbi_fast_blocks3p}, {nbi_fast_blocks2pf, nbi_fast_blocks3pf}},
};

#if defined(NBI_AVX512)
// [emit][dim == 3], unfiltered
static nbiFastRowsFn *const nbi_fast_rows_512[2][2] = {{nbi_fast_rows2_512, nbi_fast_rows3_512},
                                                       {nbi_fast_rows2p_512, nbi_fast_rows3p_512}};
static nbiRunFn *const nbi_fast_runs_512[2][2] = {{nbi_fast_run2_512, nbi_fast_run3_512},
                                                  {nbi_fast_run2p_512, nbi_fast_run3p_512}};
static nbiFastBlocksFn *const nbi_fast_blocks_512[2][2] = {
    {nbi_fast_blocks2_512, nbi_fast_blocks3_512}, {nbi_fast_blocks2p_512, nbi_fast_blocks3p_512}};
#endif

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

static nbStatus nbi_wrap_radius(const nbiView *v, const double *center, double radius, nbFilter f,
                                nbiHitSink *s);
static nbStatus nbi_wrap_box(const nbiView *v, const double *lo, const double *hi, nbFilter f,
                             nbiHitSink *s);

static void nbi_ball_descend(const nbiView *v, const double *q, double r2, const int64_t cl[3],
                             const int64_t ch[3], nbiRunFn *fn, void *ctx);

// A radius query on cells in Z order (the hashed layout) whose box holds more than this many
// cells descends the Z order's blocks (nbi_ball_descend); a smaller one looks its cells up.
enum { NBI_BALL_ZORDER = 64 };

// A radius query whose box of cells is more than this many cells wide along x visits it row by
// row, each row clipped to the ball (nbi_ball_row); below it the clipping's square roots cost
// more than the cells they save.
enum { NBI_BALL_ROWS = 4 };

// A lower bound on the true distance along an axis from q to a point in cell rows j0 .. j1 of
// edge c, less a rounding margin (0 when q may lie in them).
NBI_INLINE double nbi_rows_gap(double q, int64_t j0, int64_t j1, double c, double slack)
{
    const double below = (double)j0 * c, above = (double)(j1 + 1) * c;
    const double gap = q < below   ? nbi_face_gap(q, below, slack)
                       : q > above ? nbi_face_gap(above, q, slack)
                                   : 0.0;
    return gap > 0.0 ? gap : 0.0;
}

// Narrows the cells [*lo, *hi] of axis a to where a point the test d2 <= r2 accepts around q can
// lie, given lower bounds ga and gb on its true distance from q along the other two axes (less
// rounding margins, nbi_rows_gap): the ball's chord there, with margins far above the rounding of
// the squares involved (as nbi_face_cap clips a face). False when no such point can lie in them.
static bool nbi_ball_clip(const nbiView *v, const double *q, int a, double r2, double ga, double gb,
                          int64_t *lo, int64_t *hi)
{
    const double g2 = (ga * ga + gb * gb) * (1.0 - 0x1p-40);
    if (g2 > r2) return false;
    const double half = nbi_reach(sqrt(r2 - g2 + r2 * 0x1p-40));
    const double l = nbi_cell_f(&v->cm, q[a] - half), h = nbi_cell_f(&v->cm, q[a] + half);
    if (!(l <= (double)*hi) || !(h >= (double)*lo)) return false;
    if (l > (double)*lo) *lo = (int64_t)l;
    if (h < (double)*hi) *hi = (int64_t)h;
    return *lo <= *hi;
}

// A radius query's box of cells [cl, ch], clipped to the ball a plane, then a row at a time: a
// ball reaching into the data from far outside meets it in a thin cap, and its box holds every
// cell. nbi_ball_planes narrows the planes z = l (3D) to those the ball reaches within the box's
// span of x and y; nbi_ball_plane gives the rows [*jl, *jh] of plane l it reaches within the span
// of x (a ball reaching into a corner then costs the rows near that corner); nbi_ball_row clips
// row (j, l) on x to the ball's chord over it ([rl, rh]).
static bool nbi_ball_planes(const nbiView *v, const double *q, double r2, int64_t cl[3],
                            int64_t ch[3])
{
    if (v->dim != 3) return true;
    const double c = v->cm.cell, slack = nbi_cell_slack(c);
    return nbi_ball_clip(v, q, 2, r2, nbi_rows_gap(q[0], cl[0], ch[0], c, slack),
                         nbi_rows_gap(q[1], cl[1], ch[1], c, slack), &cl[2], &ch[2]);
}

static bool nbi_ball_plane(const nbiView *v, const double *q, double r2, int64_t l,
                           const int64_t cl[3], const int64_t ch[3], int64_t *jl, int64_t *jh)
{
    const double c = v->cm.cell, slack = nbi_cell_slack(c);
    *jl = cl[1];
    *jh = ch[1];
    return nbi_ball_clip(v, q, 1, r2, nbi_rows_gap(q[0], cl[0], ch[0], c, slack),
                         v->dim == 3 ? nbi_rows_gap(q[2], l, l, c, slack) : 0.0, jl, jh);
}

static bool nbi_ball_row(const nbiView *v, const double *q, double r2, int64_t j, int64_t l,
                         const int64_t cl[3], const int64_t ch[3], int64_t rl[3], int64_t rh[3])
{
    const double c = v->cm.cell, slack = nbi_cell_slack(c);
    rl[0] = cl[0];
    rh[0] = ch[0];
    rl[1] = rh[1] = j;
    rl[2] = rh[2] = l;
    return nbi_ball_clip(v, q, 0, r2, nbi_rows_gap(q[1], j, j, c, slack),
                         v->dim == 3 ? nbi_rows_gap(q[2], l, l, c, slack) : 0.0, &rl[0], &rh[0]);
}

// Whether the ball can reach an occupied cell of span[0] .. span[1] (x offsets from lo[0], the
// row spans of view.h) within the box's x range [cl, ch], in the rows j0 .. j1 (gz: the gap
// along z). On success [*xl, *xh] is that range of cells. The gaps' margins are nbi_ball_clip's.
static bool nbi_span_reaches(const nbiView *v, const double *q, double r2, const int32_t *span,
                             int64_t cl, int64_t ch, int64_t j0, int64_t j1, double gz, int64_t *xl,
                             int64_t *xh)
{
    *xl = v->lo[0] + span[0] > cl ? v->lo[0] + span[0] : cl;
    *xh = v->lo[0] + span[1] < ch ? v->lo[0] + span[1] : ch;
    if (*xl > *xh) return false;
    const double c = v->cm.cell, slack = nbi_cell_slack(c);
    const double gx = nbi_rows_gap(q[0], *xl, *xh, c, slack);
    const double gy = nbi_rows_gap(q[1], j0, j1, c, slack);
    return (gx * gx + gy * gy + gz * gz) * (1.0 - 0x1p-40) <= r2;
}

// The rows jl .. jh of plane l of a ranked view with row spans, the box's x range [cl, ch]: a
// block of NBI_SPAN_ROWS rows, then a row, none of whose occupied cells the ball reaches is
// skipped on its span's gaps, and a row that is left is clipped to the ball within its span. A
// ball reaching into clustered data from far away then costs the blocks across the box's empty
// parts, not their rows. Stops early once *stop (when not NULL).
static void nbi_ball_span_rows(const nbiView *v, const double *q, double r2, int64_t l, int64_t jl,
                               int64_t jh, int64_t cl, int64_t ch, nbiRunFn *fn, void *ctx,
                               const bool *stop)
{
    const double c = v->cm.cell, slack = nbi_cell_slack(c);
    const double gz = v->dim == 3 ? nbi_rows_gap(q[2], l, l, c, slack) : 0.0;
    const int64_t e1 = v->ext[1], per_plane = (e1 + NBI_SPAN_ROWS - 1) / NBI_SPAN_ROWS;
    const int32_t *row = v->row_span + 2 * (l - v->lo[2]) * e1;
    const int32_t *block = v->row_span + 2 * (e1 * v->ext[2] + (l - v->lo[2]) * per_plane);
    for (int64_t j0 = jl, j1; j0 <= jh; j0 = j1 + 1) {
        const int64_t b = (j0 - v->lo[1]) / NBI_SPAN_ROWS;
        j1 = v->lo[1] + (b + 1) * NBI_SPAN_ROWS - 1;
        if (j1 > jh) j1 = jh;
        int64_t rl[3], rh[3];
        if (!nbi_span_reaches(v, q, r2, block + 2 * b, cl, ch, j0, j1, gz, &rl[0], &rh[0]))
            continue;
        for (int64_t j = j0; j <= j1; j++) {
            const int32_t *span = row + 2 * (j - v->lo[1]);
            if (!nbi_span_reaches(v, q, r2, span, cl, ch, j, j, gz, &rl[0], &rh[0])) continue;
            if (!nbi_ball_clip(v, q, 0, r2, nbi_rows_gap(q[1], j, j, c, slack), gz, &rl[0], &rh[0]))
                continue;
            rl[1] = rh[1] = j;
            rl[2] = rh[2] = l;
            nbi_view_box_runs(v, rl, rh, fn, ctx);
            if (stop != NULL && *stop) return;
        }
    }
}

// The box of cells [cl, ch] a radius query visits (its extent: center +- reach(r)), clipped to
// the occupied cells: false when it is empty.
NBI_INLINE bool nbi_ball_box(const nbiView *v, const double *center, double radius, int64_t cl[3],
                             int64_t ch[3])
{
    const double reach = nbi_reach(radius);
    double lo[3], hi[3];
    for (int a = 0; a < v->dim; a++) {
        lo[a] = center[a] - reach; // rounding is monotone: every p >= center - reach is >= lo
        hi[a] = center[a] + reach;
    }
    return nbi_view_cell_box(v, lo, hi, cl, ch);
}

// Whether a radius query's box of cells [cl, ch] descends cells in Z order (the hashed layout,
// more than NBI_BALL_ZORDER cells: nbi_ball_descend, whose hits come in the view's order); a
// smaller one looks its cells up row by row.
static bool nbi_ball_zorder(const nbiView *v, const int64_t cl[3], const int64_t ch[3])
{
    if (v->cell_code == NULL || v->end != NULL) return false;
    double cells = 1.0;
    for (int a = 0; a < v->dim; a++) cells *= (double)(ch[a] - cl[a] + 1);
    return cells > NBI_BALL_ZORDER;
}

// Whether a radius query's box of cells [cl, ch] (not descended) is found through a hashed
// view's blocks (view.h, nbi_view_block_cells).
static bool nbi_ball_blocks(const nbiView *v, const int64_t cl[3], const int64_t ch[3])
{
    if (v->table == NULL) return false;
    double cells = 1.0;
    for (int a = 0; a < v->dim; a++) cells *= (double)(ch[a] - cl[a] + 1);
    if (cells > NBI_BLOCK_BOX) return false;
    nbi_ctab_ready(v->table);
    return nbi_view_has_blocks(v);
}

nbStatus nbi_walk_radius(const nbiView *v, const double *center, double radius, nbFilter f,
                         nbiHitSink *s)
{
    for (int a = 0; a < v->dim; a++)
        if (!isfinite(center[a])) return NB_ERR_NOT_FINITE;
    if (!isfinite(radius)) return NB_ERR_NOT_FINITE;
    if (radius < 0.0 || s->cap < 0) return NB_ERR_OUT_OF_RANGE;
    if (v->wrap != NULL) return nbi_wrap_radius(v, center, radius, f, s);
    const bool per_point = v->cat != NULL;
    if (v->n == 0 || (!per_point && !nbi_filter_open(f))) return NB_OK;
    int64_t cl[3], ch[3];
    if (!nbi_ball_box(v, center, radius, cl, ch)) return NB_OK;
    // Row by row where the ball's box is wide along the rows (not on a hashed view: its box may
    // hold far more rows than it has cells, and it looks up only occupied cells anyway). A box
    // a few cells deep along x (a ball reaching in across the faces x = const) is cheaper
    // walked whole: each row would be a call for a cell or two.
    // A ranked view with row spans whose box holds a few blocks of rows goes by rows whatever
    // its width: its blocks of rows skip the empty parts of the box (nbi_ball_span_rows). A box
    // of fewer rows (a ball among the data) costs less walked as before.
    const bool spans = v->occ != NULL && v->row_span != NULL && ch[1] - cl[1] >= 2 * NBI_SPAN_ROWS;
    const bool by_rows = v->table == NULL && (ch[0] - cl[0] >= NBI_BALL_ROWS || spans);
    const double r2 = radius * radius;
    const bool zorder = nbi_ball_zorder(v, cl, ch);
    if (by_rows && !nbi_ball_planes(v, center, r2, cl, ch)) return NB_OK;
    int64_t rl[3], rh[3];
    if (s->mode != NBI_SINK_VISIT && (!per_point || v->mask != NULL)) {
        const int emit = s->positions ? NBI_EMIT_POS : NBI_EMIT_IDX;
        nbiFastCtx x;
        x.pts = v->pts;
        x.idx = v->idx;
        x.cat = v->cat;
        x.mask = v->mask;
        x.f = f;
        x.c[0] = center[0];
        x.c[1] = center[1];
        x.c[2] = v->dim == 3 ? center[2] : 0.0;
        x.r2 = radius * radius;
        x.out = s->mode == NBI_SINK_BUFFER ? s->out : NULL;
        x.cap = s->cap;
        x.found = s->found;
#if defined(__SSE2__)
        x.c2 = nbi_point2(x.c, v->dim, x.r2);
#endif
        const int flt = per_point, d3 = v->dim == 3;
        nbiFastRowsFn *rows = nbi_fast_rows[emit][flt][d3];
        nbiRunFn *runs = nbi_fast_runs[emit][flt][d3];
        nbiFastBlocksFn *blocks = nbi_fast_blocks[emit][flt][d3];
#if defined(NBI_AVX512)
        if (!flt && nbi_use_avx512()) {
            rows = nbi_fast_rows_512[emit][d3];
            runs = nbi_fast_runs_512[emit][d3];
            blocks = nbi_fast_blocks_512[emit][d3];
        }
#endif
        const bool dense = v->table == NULL && v->occ == NULL && v->end == NULL;
        for (int64_t l = cl[2], jl, jh; by_rows && l <= ch[2]; l++) {
            if (!nbi_ball_plane(v, center, r2, l, cl, ch, &jl, &jh)) continue;
            if (spans) {
                nbi_ball_span_rows(v, center, r2, l, jl, jh, cl[0], ch[0], runs, &x, NULL);
                continue;
            }
            for (int64_t j = jl; j <= jh; j++) {
                if (!nbi_ball_row(v, center, r2, j, l, cl, ch, rl, rh)) continue;
                if (dense)
                    rows(v, &x, rl, rh);
                else
                    nbi_view_box_runs(v, rl, rh, runs, &x);
            }
        }
        if (zorder)
            nbi_ball_descend(v, center, r2, cl, ch, runs, &x);
        else if (!by_rows && dense)
            rows(v, &x, cl, ch);
        else if (!by_rows && !(nbi_ball_blocks(v, cl, ch) && blocks(v, &x, cl, ch, ~(uint64_t)0)))
            nbi_view_box_runs(v, cl, ch, runs, &x);
        s->found = x.found;
        return NB_OK;
    }
    nbiRangeCtx x = {v, center, NULL, NULL, r2, f, per_point, s};
    for (int64_t l = cl[2], jl, jh; by_rows && l <= ch[2] && !s->stop; l++) {
        if (!nbi_ball_plane(v, center, r2, l, cl, ch, &jl, &jh)) continue;
        if (spans) {
            nbi_ball_span_rows(v, center, r2, l, jl, jh, cl[0], ch[0], nbi_radius_run, &x,
                               &s->stop);
            continue;
        }
        for (int64_t j = jl; j <= jh && !s->stop; j++)
            if (nbi_ball_row(v, center, r2, j, l, cl, ch, rl, rh))
                nbi_view_box_runs(v, rl, rh, nbi_radius_run, &x);
    }
    if (zorder)
        nbi_ball_descend(v, center, r2, cl, ch, nbi_radius_run, &x);
    else if (!by_rows)
        nbi_view_box_runs(v, cl, ch, nbi_radius_run, &x);
    return NB_OK;
}

// ---- radius queries through the kNN index ----
// A ball from far outside the data meets it in a thin cap across a face, yet its box of cells
// holds every cell; the rows, spans and blocks above clip that box to the ball, but still cost
// the cells the cap crosses, empty or crowded. The kNN index's tree (knn_index.h) goes to the
// cap's leaves, skips every box beyond the ball and reports a box wholly within it without a test
// a point (nbi_knn_index_ball). Its hits come in the index's order, so their view positions are
// sorted and turned into indices: the same answers in the same order as the cells' walk. Used for
// far balls only (nbi_knn_ball_saving), once the index is ready; until then each far ball adds
// its expected saving to the index's debt, as far kNN queries do (knn_index.h).

// Most hits a visit through the index sorts on the stack (more: the cells' walk).
enum { NBI_BALL_VISIT = 256 };
// Most hits a ball through the index sorts (more: the cells' walk answers instead), so that a
// cap the rule misjudged (knn_index.h, NBI_BALL_CAP_POINTS: a slab of full cells, which the
// cells' rows answer in order at a few instructions a hit) costs a short walk more: it stops as
// soon as it finds more hits than this.
enum { NBI_BALL_SORTED = 512 };

// Sorts a[0, m) ascending: insertion below 16 entries, else quicksort on the median of three
// (the smaller part first, the larger looped on: a stack of log2 m parts).
static void nbi_sort_positions(int32_t *a, int32_t m)
{
    while (m > 16) {
        const int32_t x = a[0], y = a[m / 2], z = a[m - 1];
        const int32_t piv = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        int32_t i = 0, j = m - 1;
        for (;;) { // Hoare: a[0, i) <= piv <= a(j, m)
            while (a[i] < piv) i++;
            while (a[j] > piv) j--;
            if (i >= j) break;
            const int32_t t = a[i];
            a[i++] = a[j];
            a[j--] = t;
        }
        const int32_t left = j + 1; // a[0, left) <= piv <= a[left, m)
        if (left < m - left) {
            nbi_sort_positions(a, left);
            a += left;
            m -= left;
        } else {
            nbi_sort_positions(a + left, m - left);
            m = left;
        }
    }
    for (int32_t i = 1; i < m; i++) {
        const int32_t t = a[i];
        int32_t j = i;
        for (; j > 0 && a[j - 1] > t; j--) a[j] = a[j - 1];
        a[j] = t;
    }
}

// Sorts a[0, m) ascending, every entry below n, through tmp (m entries): an LSD radix sort,
// where a comparison sort's branches would be mispredicted about
// once an entry (25k uniform 3D points, far balls of 42 hits on average: 66 mispredicted
// branches a ball in the quicksort, more than the tree's walk took; 0.9k instructions a ball).
// Below 9 entries, insertion.
static void nbi_radix_positions(int32_t *a, int32_t *tmp, int32_t m, int32_t n)
{
    if (m <= 8) {
        nbi_sort_positions(a, m);
        return;
    }
    int bits = 1;
    while (bits < 31 && ((int32_t)1 << bits) < n) bits++;
    // Each pass costs about twice its digits and three times the entries: digits of 5 bits for
    // a few dozen entries (3 passes over 15 bits: 0.55k instructions for 40 against 1.3k in 2
    // passes of 8), of 8 for more.
    const int most = m <= 96 ? 5 : 8, passes = (bits + most - 1) / most;
    const int w = (bits + passes - 1) / passes;
    const uint32_t digits = 1u << w, dmask = digits - 1;
    int32_t cnt[256];
    int32_t *src = a, *dst = tmp;
    for (int p = 0; p < passes; p++) {
        const int sh = p * w;
        memset(cnt, 0, digits * sizeof *cnt);
        for (int32_t i = 0; i < m; i++) cnt[((uint32_t)src[i] >> sh) & dmask]++;
        for (uint32_t d = 0, sum = 0; d < digits; d++) {
            const int32_t c = cnt[d];
            cnt[d] = (int32_t)sum;
            sum += (uint32_t)c;
        }
        for (int32_t i = 0; i < m; i++) dst[cnt[((uint32_t)src[i] >> sh) & dmask]++] = src[i];
        int32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, (size_t)m * sizeof *a);
}

#if NBI_AVX2
// Most hits sorted by their ranks (nbi_rank_positions) rather than by digits: the ranks cost
// about m * m / 8 comparisons, the digits' three passes about 40 instructions an entry.
enum { NBI_BALL_RANKED = 64 };

// Writes idx[a[i]] for i < m to out in ascending order of a[i] (distinct; a readable 7 entries
// past m): each entry's rank, how many entries are below it, counted eight entries at a time
// against every other, and the entry stored at its rank. No branch depends on the data, where
// the digits' passes and a comparison sort mispredict about once an entry.
NBI_TARGET_AVX2 static void nbi_rank_positions(const int32_t *a, int32_t m, const int32_t *idx,
                                               int32_t *out)
{
    for (int32_t i = 0; i < m; i += 8) {
        const __m256i ai = _mm256_loadu_si256((const __m256i *)(const void *)(a + i));
        __m256i rank = _mm256_setzero_si256();
        for (int32_t j = 0; j < m; j++)
            rank = _mm256_sub_epi32(rank, _mm256_cmpgt_epi32(ai, _mm256_set1_epi32(a[j])));
        int32_t r[8];
        _mm256_storeu_si256((__m256i *)(void *)r, rank);
        const int32_t e = m - i < 8 ? m - i : 8;
        for (int32_t l = 0; l < e; l++) out[r[l]] = idx[a[i + l]];
    }
}
#endif

// Writes v->idx[a[i]] for i < m (distinct view positions, at most NBI_BALL_SORTED; a readable
// 7 entries past m) to out in ascending order of a[i]: the cells' walk's order.
static void nbi_sort_hits(const nbiView *v, int32_t *a, int32_t m, int32_t *out)
{
#if NBI_AVX2
    if (m <= NBI_BALL_RANKED && nbi_use_avx2()) {
        nbi_rank_positions(a, m, v->idx, out);
        return;
    }
#endif
    int32_t tmp[NBI_BALL_SORTED];
    nbi_radix_positions(a, tmp, m, v->n);
    for (int32_t i = 0; i < m; i++) out[i] = v->idx[a[i]];
}

// The ball through the index into the sink (buffer, count or visit; not positions): false, having
// reported nothing, when its hits do not fit where they are sorted (NBI_BALL_SORTED, or
// NBI_BALL_VISIT for a visit), and the cells' walk is to answer instead. The hits are gathered
// on the stack (with room past the most wanted, so that the leaves' scans store without a test
// a point: nbi_knn_index_ball) and sorted into the caller's buffer.
static bool nbi_ball_indexed(const nbiView *v, const nbiKnnIndex *ix, const double *center,
                             double r2, nbFilter f, nbiHitSink *s)
{
    int32_t hits[NBI_BALL_SORTED + NBI_BALL_SLACK]; // (NBI_BALL_VISIT <= NBI_BALL_SORTED)
    int32_t room = s->mode == NBI_SINK_VISIT ? NBI_BALL_VISIT : s->cap - s->found;
    if (room > NBI_BALL_SORTED && nbi_ball_index_use == 0) room = NBI_BALL_SORTED;
    const bool store = s->mode == NBI_SINK_VISIT || (s->mode == NBI_SINK_BUFFER && room > 0);
    if (!store) { // (count only, or a buffer of no room: the count is the answer)
        s->found += nbi_knn_index_ball(ix, center, r2, f, NULL, room, 0);
        return true;
    }
    if (room > NBI_BALL_SORTED) { // (tests forcing the index: any number, in the caller's buffer)
        const int32_t m = nbi_knn_index_ball(ix, center, r2, f, s->out, room, room);
        if (m > room) return false;
        nbi_sort_positions(s->out, m);
        for (int32_t i = 0; i < m; i++) s->out[i] = v->idx[s->out[i]];
        s->found += m;
        return true;
    }
    const int32_t m =
        nbi_knn_index_ball(ix, center, r2, f, hits, room, (int32_t)(sizeof hits / sizeof *hits));
    if (m > room) return false;
    if (s->mode == NBI_SINK_VISIT) {
        int32_t sorted[NBI_BALL_VISIT];
        nbi_sort_hits(v, hits, m, sorted);
        for (int32_t i = 0; i < m && !s->stop; i++) nbi_hit(s, sorted[i]);
        return true;
    }
    nbi_sort_hits(v, hits, m, s->out);
    s->found += m;
    return true;
}

int nbi_ball_index_use = 0;

nbStatus nbi_walk_radius_far(const nbiView *v, nbiKnnLazy *z, const nbAllocator *alloc,
                             const double *center, double radius, nbFilter f, nbiHitSink *s)
{
    // (a NaN centre is never far; an infinite one, or a NaN radius, fails the checks below)
    const double save = nbi_ball_index_use > 0 ? 1.0 : nbi_knn_ball_saving(z, v, center, radius);
    bool fit = save > 0.0 && isfinite(radius) && radius >= 0.0 && s->cap >= 0 &&
               (v->cat == NULL ? nbi_filter_open(f) : v->mask != NULL);
    for (int a = 0; fit && a < v->dim; a++) fit = isfinite(center[a]);
    // The index's hits come sorted in the view's order, which is the cells' walk's but for a
    // small box of cells in Z order (the hashed layout), looked up row by row: that one keeps the
    // cells (a ball a few cells wide: nothing to save).
    int64_t cl[3], ch[3];
    if (fit && v->cell_code != NULL && v->end == NULL)
        fit = nbi_ball_box(v, center, radius, cl, ch) && nbi_ball_zorder(v, cl, ch);
    if (fit) {
        const nbiKnnIndex *ix = nbi_knn_index_ready(z);
        if (ix == NULL) {
            nbi_knn_index_charge(z, v, alloc, v->n,
                                 nbi_ball_index_use > 0 ? (double)INFINITY : save);
            ix = nbi_knn_index_ready(z);
        }
        if (ix != NULL && nbi_ball_indexed(v, ix, center, radius * radius, f, s)) return NB_OK;
    }
    return nbi_walk_radius(v, center, radius, f, s);
}

nbStatus nbi_walk_box(const nbiView *v, const double *lo, const double *hi, nbFilter f,
                      nbiHitSink *s)
{
    for (int a = 0; a < v->dim; a++)
        if (isnan(lo[a]) || isnan(hi[a])) return NB_ERR_NOT_FINITE;
    if (s->cap < 0) return NB_ERR_OUT_OF_RANGE;
    if (v->wrap != NULL) return nbi_wrap_box(v, lo, hi, f, s);
    const bool per_point = v->cat != NULL;
    if (v->n == 0 || (!per_point && !nbi_filter_open(f))) return NB_OK;
    int64_t cl[3], ch[3];
    if (!nbi_view_cell_box(v, lo, hi, cl, ch)) return NB_OK;
    nbiRangeCtx x = {v, NULL, lo, hi, 0.0, f, per_point, s};
    nbi_view_box_runs(v, cl, ch, nbi_box_run, &x);
    return NB_OK;
}

// ---- k nearest ----

typedef struct nbiKnnCtx {
    const nbiView *v;
    const double *q;
    nbFilter f;
    bool per_point;
    double lim2;     // max_distance squared: a candidate farther than this is never kept
    nbiKnnHeap heap; // the k best so far
} nbiKnnCtx;

// Offers candidate p (it passes the filter).
NBI_INLINE void nbi_knn_take(nbiKnnCtx *x, int32_t p)
{
    const nbiView *v = x->v;
    nbNeighbor cand = {v->idx[p], nbi_dist2(x->q, v->pts + (size_t)p * (size_t)v->dim, v->dim)};
    // Beyond max_distance, or slack between a hash's cells (NaN, not a point): not kept.
    if (!(cand.dist2 <= x->lim2)) return;
    nbi_best_offer(&x->heap, cand);
}

// The candidates [b0, b1). Without per-point filter bits, two at a time with SSE2 against the
// k-th best so far (nbi_best_bound; the lane test computes d2 exactly as nbi_dist2 does): once
// the k best are full most candidates are farther, and a pair of them costs one test instead of
// two distances and two offers. The points of a lane that passes are offered one by one (a tie at
// the bound may still enter with a lower index).
static bool nbi_knn_run(int32_t b0, int32_t b1, void *vctx)
{
    nbiKnnCtx *x = (nbiKnnCtx *)vctx;
    const nbiView *v = x->v;
    int32_t p = b0;
    if (x->per_point) {
        for (; p < b1; p++)
            if (nbi_view_passes(v, p, x->f)) nbi_knn_take(x, p);
        return true;
    }
#if defined(__SSE2__)
    if (b1 - b0 < 8) { // (a short run: the lanes' set-up costs more than they save)
        for (; p < b1; p++) nbi_knn_take(x, p);
        return true;
    }
    nbiPoint2 c = nbi_point2(x->q, v->dim, nbi_best_bound(&x->heap, x->lim2));
    for (; p + 2 <= b1; p += 2) {
        const int m = nbi_d2_mask2(&c, v->pts, p, v->dim, false);
        if (m == 0) continue;
        if (m & 1) nbi_knn_take(x, p);
        if (m & 2) nbi_knn_take(x, p + 1);
        c.r2 = _mm_set1_pd(nbi_best_bound(&x->heap, x->lim2));
    }
#endif
    for (; p < b1; p++) nbi_knn_take(x, p);
    return true;
}

static nbStatus nbi_wrap_knn(const nbiView *v, const double *point, nbiKnnCtx *x);

// Whether any of the view's cells lie outside the visited block [cl, ch]; if so, *bound is a
// lower bound on the true distance from q to any point in them, less a rounding margin (it may
// be <= 0, or +inf when the gap overflows: "unknown" and "huge" both just mean "keep going").
static bool nbi_unvisited_bound(const nbiView *v, const double *q, const int64_t cl[3],
                                const int64_t ch[3], double *bound)
{
    // The cells past a face of the block lie within the box on the other axes, so the query's
    // distance to the box along those axes adds to the face's gap. Without it, a query far
    // outside the box would see only its gap along one axis and walk every ring.
    const double c = v->cm.cell, slack = nbi_cell_slack(c);
    double out2[3] = {0.0, 0.0, 0.0}; // squared gap from q to the box along each axis
    for (int a = 0; a < v->dim; a++) {
        const double below = (double)v->lo[a] * c, above = (double)(v->hi[a] + 1) * c;
        const double gap = q[a] < below   ? nbi_face_gap(q[a], below, slack)
                           : q[a] > above ? nbi_face_gap(above, q[a], slack)
                                          : 0.0;
        out2[a] = gap > 0.0 ? gap * gap : 0.0;
    }
    bool outside = false;
    double b2 = (double)INFINITY;
    for (int a = 0; a < v->dim; a++) {
        double rest = 0.0;
        for (int o = 0; o < v->dim; o++) rest += o == a ? 0.0 : out2[o];
        if (ch[a] < v->hi[a]) { // cells above: their points have p / c >= ch + 1, less rounding
            const double gap = nbi_face_gap(q[a], (double)(ch[a] + 1) * c, slack);
            const double g2 = (gap > 0.0 ? gap * gap : 0.0) + rest;
            b2 = g2 < b2 ? g2 : b2;
            outside = true;
        }
        if (cl[a] > v->lo[a]) { // cells below: their points have p / c < cl, plus rounding
            const double gap = nbi_face_gap((double)cl[a] * c, q[a], slack);
            const double g2 = (gap > 0.0 ? gap * gap : 0.0) + rest;
            b2 = g2 < b2 ? g2 : b2;
            outside = true;
        }
    }
    *bound = sqrt(b2);
    return outside;
}

// A squared lower bound on the true distance from q to any point in the cells [cl, ch], less a
// rounding margin (0 when q may lie in their box): what a block's points cannot beat.
static double nbi_block_gap2(const nbiView *v, const double *q, const int64_t cl[3],
                             const int64_t ch[3])
{
    const double c = v->cm.cell, slack = nbi_cell_slack(c);
    double s = 0.0;
    for (int a = 0; a < v->dim; a++) {
        const double below = (double)cl[a] * c, above = (double)(ch[a] + 1) * c;
        const double gap = q[a] < below   ? nbi_face_gap(q[a], below, slack)
                           : q[a] > above ? nbi_face_gap(above, q[a], slack)
                                          : 0.0;
        if (gap > 0.0) s += gap * gap;
    }
    return s * (1.0 - 0x1p-40); // the sum's rounding
}

// Whether no point of a block whose squared gap (nbi_block_gap2) is b2 can enter the heap:
// farther than max_distance, or than the k-th best (a tie could enter: it may have a lower id).
NBI_INLINE bool nbi_knn_beyond(const nbiKnnCtx *x, double b2)
{
    return b2 > 0x1p-1000 && b2 > nbi_best_bound(&x->heap, x->lim2);
}

// ---- kNN over cells in Z order (view.h: cell_code) ----
// The cells whose codes agree above bit L dim (shifted right by L dim, the same key) form an
// aligned block of 2^L shifted cells a side at level L, and are one run of cell numbers. The
// search starts at the query's block at level 0 and widens it a level at a time (each wider
// block is found by galloping out from the last), searching what the wider block adds, until
// the blocks outside are beyond the k-th best (nbi_unvisited_bound of the block's box): a query
// costs about the blocks its k neighbours lie in, and an empty region one step per level.
// What a level adds is searched as a tree: a run of cells splits by the digit (dim bits) of the
// highest level where its first and last codes differ into child blocks; each child's box is
// tested first (nbi_block_gap2), and only the children not beyond the k-th best are found (two
// binary searches) and searched, nearest first. A run of at most NBI_KNN_LEAF points, or of one
// code, is scanned. The depth is at most 64 / dim + 1.
enum { NBI_KNN_LEAF = 32, NBI_KNN_SCAN = 128 };

// The first cell in [a, b) whose code, shifted right by `low`, is at least key (b if none).
static int32_t nbi_code_lower(const uint64_t *code, int32_t a, int32_t b, int low, uint64_t key)
{
    while (a < b) {
        const int32_t mid = a + (b - a) / 2;
        if ((code[mid] >> low) < key)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

// The box of cells of the level-`lvl` block whose first code is `first` (its low lvl dim bits
// clear), clipped to the view.
static void nbi_code_box(const nbiView *v, uint64_t first, int lvl, int64_t cl[3], int64_t ch[3])
{
    cl[2] = ch[2] = 0;
    for (int d = 0; d < v->dim; d++) {
        const uint64_t u = nbi_code_axis(first, v->dim, d);
        const uint64_t end = (((u >> lvl) + 1) << lvl) << v->code_shift; // may pass hi
        cl[d] = v->lo[d] + (int64_t)(u << v->code_shift);
        ch[d] =
            end - 1 < (uint64_t)(v->hi[d] - v->lo[d]) ? v->lo[d] + (int64_t)(end - 1) : v->hi[d];
    }
}

static void nbi_code_knn(nbiKnnCtx *x, int32_t a, int32_t b)
{
    const nbiView *v = x->v;
    const uint64_t *code = v->cell_code;
    if (a >= b) return;
    const uint64_t diff = code[a] ^ code[b - 1];
    if (diff == 0 || v->start[b] - v->start[a] <= NBI_KNN_LEAF) {
        nbi_knn_run(v->start[a], v->start[b], x);
        return;
    }
    const int dim = v->dim, lvl = nbi_top_bit64(diff) / dim, low = lvl * dim;
    const uint64_t base = (code[a] >> low) & ~(uint64_t)((1u << dim) - 1);
    int32_t first[8], last[8];
    double gap[8];
    int kids = 0;
    // A short run's children are found by reading it (a few cache lines), a long one's by
    // binary search, and only for the children not beyond the k-th best.
    const bool scan = b - a <= NBI_KNN_SCAN;
    int32_t i = a;
    for (uint64_t t = 0; t < (1u << dim) && i < b; t++) {
        const uint64_t key = base | t;
        if (scan && (code[i] >> low) != key) continue; // no such child
        int64_t cl[3], ch[3];
        nbi_code_box(v, key << low, lvl, cl, ch);
        const double g = nbi_block_gap2(v, x->q, cl, ch);
        const bool beyond = nbi_knn_beyond(x, g);
        if (beyond && !scan) continue;
        int32_t j;
        if (scan) {
            for (j = i + 1; j < b && (code[j] >> low) == key;) j++;
        } else {
            i = nbi_code_lower(code, i, b, low, key);
            j = nbi_code_lower(code, i, b, low, key + 1);
        }
        const int32_t from = i;
        i = j;
        if (beyond || from == j) continue;
        int at = kids++; // nearest first
        for (; at > 0 && gap[at - 1] > g; at--) {
            first[at] = first[at - 1];
            last[at] = last[at - 1];
            gap[at] = gap[at - 1];
        }
        first[at] = from;
        last[at] = j;
        gap[at] = g;
    }
    for (int t = 0; t < kids && !nbi_knn_beyond(x, gap[t]); t++) nbi_code_knn(x, first[t], last[t]);
}

static void nbi_code_knn_walk(const nbiView *v, nbiKnnCtx *x)
{
    const uint64_t *code = v->cell_code;
    const int dim = v->dim;
    const int32_t n = v->ncells;
    int64_t k[3] = {0, 0, 0}; // the query's cell, clamped to the box
    for (int a = 0; a < dim; a++) {
        const double c = nbi_cell_f(&v->cm, x->q[a]);
        k[a] = c < (double)v->lo[a] ? v->lo[a] : c > (double)v->hi[a] ? v->hi[a] : (int64_t)c;
    }
    const uint64_t qcode = nbi_code_of(k, v->lo, dim, v->code_shift);
    const int32_t pos = nbi_code_lower(code, 0, n, 0, qcode);
    int32_t a = pos, b = pos; // the cells searched: the query's block at the last level
    for (int lvl = 0; a > 0 || b < n; lvl++) {
        const int low = lvl * dim;
        if (low >= 64) { // (cannot happen: the codes have 64 / dim levels) everything else
            nbi_code_knn(x, 0, a);
            nbi_code_knn(x, b, n);
            break;
        }
        const uint64_t key = qcode >> low;
        // Gallop out from [a, b) to the block's ends.
        int32_t na = a, step = 1;
        while (na > 0 && (code[na - 1] >> low) == key) {
            const int32_t to = na - step > 0 ? na - step : 0;
            if ((code[to] >> low) == key) {
                na = to;
                step *= 2;
            } else {
                na = nbi_code_lower(code, to, na, low, key);
                break;
            }
        }
        int32_t nb = b;
        step = 1;
        while (nb < n && (code[nb] >> low) == key) {
            const int32_t to = nb + step < n ? nb + step : n;
            if (to == n || (code[to] >> low) != key) {
                nb = nbi_code_lower(code, nb, to, low, key + 1);
                break;
            }
            nb = to + 1;
            step *= 2;
        }
        nbi_code_knn(x, na, a);
        nbi_code_knn(x, b, nb);
        a = na;
        b = nb;
        int64_t cl[3], ch[3];
        nbi_code_box(v, key << low, lvl, cl, ch);
        double bound;
        if (!nbi_unvisited_bound(v, x->q, cl, ch, &bound)) break; // every cell visited
        if (bound > 0.0 && nbi_knn_beyond(x, bound * bound * (1.0 - 0x1p-40))) break;
    }
}

// ---- radius queries over cells in Z order ----
// A ball whose box spans many cells of the hashed layout (a ball from far outside reaching into
// the data meets it in a thin cap, yet its box holds every cell; a large radius from inside) is
// found by descending the aligned blocks of cells as kNN does: a run of cells splits by the digit
// of the highest level where its first and last codes differ into child blocks, and a child whose
// gap from the centre (as nbi_block_gap2 finds it: a lower bound less rounding margins) is
// beyond r, or that lies beyond the view's box, is skipped unread. The descent costs about the
// occupied blocks the ball's surface crosses, whatever the box's volume: an empty region or one
// beyond the ball is one test. A run of at most NBI_BALL_LEAF points, or of one cell, is tested
// point by point. Where the codes are coarser than the cells (code_shift > 0), a run of one code
// splits the same way by its cells' low codes, or, without them, tests each cell's box.
//
// The skip is exact: gap2 <= (1 - 2^-40) times the true squared distance of every point of the
// block, while the test's fl(d2) is within a few ulps of it, so gap2 > fl(r * r) means every
// point fails the test.
enum { NBI_BALL_LEAF = 128 };

typedef struct nbiBallWalk {
    const nbiView *v;
    const double *q;
    double r2;
    double c, slack;        // the cell edge, nbi_cell_slack of it
    const int64_t *cl, *ch; // the ball's box of cells
    nbiRunFn *fn;
    void *ctx;
} nbiBallWalk;

// Whether no point in the cells [bl, bh] can pass the test.
NBI_INLINE bool nbi_ball_misses(const nbiBallWalk *w, const int64_t bl[3], const int64_t bh[3])
{
    for (int a = 0; a < w->v->dim; a++)
        if (bh[a] < w->cl[a] || bl[a] > w->ch[a]) return true;
    return nbi_block_gap2(w->v, w->q, bl, bh) > w->r2;
}

// Cells [a, b) of one code, not ordered by low codes: each cell's box on its own, and the runs
// of cells that may hold a hit handed on.
static bool nbi_ball_each_cell(const nbiBallWalk *w, int32_t a, int32_t b)
{
    const int32_t *start = w->v->start;
    int32_t from = a;
    for (int32_t c = a; c < b; c++) {
        int64_t k[3];
        nbi_view_cell_key(w->v, c, k);
        if (!nbi_ball_misses(w, k, k)) continue;
        if (from < c && !w->fn(start[from], start[c], w->ctx)) return false;
        from = c + 1;
    }
    return from >= b || w->fn(start[from], start[b], w->ctx);
}

static bool nbi_ball_block(const nbiBallWalk *w, int32_t a, int32_t b);

// The first cell in [a, b) whose code is at least `first` (b if none), without a branch on the
// codes (nbi_code_lower's search, the key compared whole).
NBI_INLINE int32_t nbi_code_first(const uint64_t *code, int32_t a, int32_t b, uint64_t first)
{
    if (a >= b) return a;
    int32_t n = b - a;
    while (n > 1) {
        const int32_t half = n / 2;
        nbi_prefetch(code + a + half / 2);        // the next step's two candidates, asked of
        nbi_prefetch(code + a + half + half / 2); // the memory before this step is decided
        a = code[a + half - 1] < first ? a + half : a;
        n -= half;
    }
    return a + (code[a] < first);
}

// The children of a block (t < 2^dim, bit d of t: the upper half along axis d) in the upper half
// along axis d.
static const unsigned nbi_ball_upper[2][3] = {{0xAu, 0xCu, 0u}, {0xAAu, 0xCCu, 0xF0u}};

// The cells [a, b) that may hold a hit: a block of the Z order (or two adjacent ones) in `dim`
// (a constant where inlined). False: the sink stopped. The children's boxes come from the
// block's corner (one cell's code read per axis), their gaps from the two halves of the block
// along each axis (2 dim gaps, not 2^dim dim); then only the children that may hold a hit are
// found, by binary search for where one starts (unless the child before it was found) and ends.
NBI_INLINE bool nbi_ball_block_dim(const nbiBallWalk *w, const int dim, int32_t a, int32_t b)
{
    const nbiView *v = w->v;
    const int32_t *start = v->start;
    if (start[b] - start[a] <= NBI_BALL_LEAF) return w->fn(start[a], start[b], w->ctx);
    const uint64_t *key = v->cell_code;
    uint64_t diff = key[a] ^ key[b - 1];
    const bool lows = diff == 0 && v->code_shift > 0; // one code, many cells: split by low codes
    if (lows) {
        if (v->cell_low == NULL) return nbi_ball_each_cell(w, a, b);
        key = v->cell_low;
        diff = key[a] ^ key[b - 1];
    }
    if (diff == 0) return w->fn(start[a], start[b], w->ctx); // one cell
    const int lvl = nbi_top_bit64(diff) / dim, low = lvl * dim;
    const int side = lvl + (lows ? 0 : v->code_shift); // children 2^side cells a side
    const unsigned all = (1u << (1 << dim)) - 1;
    double g2[3][2];
    unsigned dead = 0; // bit t: child t cannot hold a hit
    for (int d = 0; d < dim; d++) {
        uint64_t u = nbi_code_axis(v->cell_code[a], dim, d) << v->code_shift;
        if (lows) u |= nbi_code_axis(v->cell_low[a], dim, d);
        u = u >> side >> 1 << 1 << side; // the block's corner (at most cell a's offset)
        const uint64_t span = (uint64_t)(v->hi[d] - v->lo[d]), m = u + ((uint64_t)1 << side);
        const int64_t l0 = v->lo[d] + (int64_t)u, l1 = v->lo[d] + (int64_t)m;
        const double g0 =
            nbi_rows_gap(w->q[d], l0, m - 1 < span ? l1 - 1 : v->hi[d], w->c, w->slack);
        g2[d][0] = g0 * g0;
        g2[d][1] = 0.0;
        if (m > span) { // no upper half
            dead |= nbi_ball_upper[dim == 3][d];
            continue;
        }
        const uint64_t top_off = m + (((uint64_t)1 << side) - 1);
        const double g1 = nbi_rows_gap(
            w->q[d], l1, top_off < span ? v->lo[d] + (int64_t)top_off : v->hi[d], w->c, w->slack);
        g2[d][1] = g1 * g1;
    }
    for (unsigned t = 0; t < (1u << dim); t++) {
        double s2 = 0.0; // as nbi_block_gap2 sums it
        for (int d = 0; d < dim; d++) s2 += g2[d][(t >> d) & 1u];
        dead |= (unsigned)(s2 * (1.0 - 0x1p-40) > w->r2) << t;
    }
    const uint64_t top = (key[a] >> low) & ~(uint64_t)((1u << dim) - 1);
    const unsigned last = (1u << dim) - 1;
    int32_t i = a;
    unsigned next = 0; // i is where child `next` starts
    for (unsigned live = all & ~dead; live != 0; live &= live - 1) {
        const unsigned t = (unsigned)nbi_ctz32(live);
        const uint64_t k = top | t; // (k + 1 << low overflows only for the last child)
        if (next != t) i = nbi_code_first(key, i, b, k << low);
        const int32_t j = t == last ? b : nbi_code_first(key, i, b, (k + 1) << low);
        if (i < j && !nbi_ball_block(w, i, j)) return false;
        i = j;
        next = t + 1;
    }
    return true;
}

static bool nbi_ball_block(const nbiBallWalk *w, int32_t a, int32_t b)
{
    return w->v->dim == 2 ? nbi_ball_block_dim(w, 2, a, b) : nbi_ball_block_dim(w, 3, a, b);
}

static void nbi_ball_descend(const nbiView *v, const double *q, double r2, const int64_t cl[3],
                             const int64_t ch[3], nbiRunFn *fn, void *ctx)
{
    const nbiBallWalk w = {v, q, r2, v->cm.cell, nbi_cell_slack(v->cm.cell), cl, ch, fn, ctx};
    nbi_ball_block(&w, 0, v->ncells);
}

// The box of cells holding every point the test d2 <= fl(r * r) can accept around q (as a radius
// query finds its cells), clipped to the view's occupied box; false when no cell is in it.
static bool nbi_ball_cells(const nbiView *v, const double *q, double r, int64_t cl[3],
                           int64_t ch[3])
{
    const double reach = nbi_reach(r);
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int a = 0; a < v->dim; a++) {
        lo[a] = q[a] - reach;
        hi[a] = q[a] + reach;
    }
    return nbi_view_cell_box(v, lo, hi, cl, ch);
}

// Rings from this one on clip each face to the k-th best's ball (nbi_face_cap): below it the
// saving is a few cells and the clipping's square root costs more.
enum { NBI_RING_CAP = 4 };

// The cells of layer `layer` along axis a that the k-th best's ball (or max_distance's) can reach:
// [fl, fh] on the other axes (and the layer itself on a). False when no point in that layer can
// enter the heap. The ball's radius within the layer comes from the query's gap to it (a lower
// bound, nbi_face_gap), with margins far above the rounding of the squares involved.
static bool nbi_face_cap(const nbiView *v, const nbiKnnCtx *x, int a, int64_t layer, int64_t fl[3],
                         int64_t fh[3])
{
    const double worst = nbi_best_bound(&x->heap, x->lim2);
    for (int b = 0; b < 3; b++) {
        fl[b] = INT64_MIN;
        fh[b] = INT64_MAX;
    }
    if (!(worst < (double)INFINITY)) return true;
    const double c = v->cm.cell, slack = nbi_cell_slack(c), q = x->q[a];
    const double below = (double)layer * c, above = (double)(layer + 1) * c;
    const double gap = q < below   ? nbi_face_gap(q, below, slack)
                       : q > above ? nbi_face_gap(above, q, slack)
                                   : 0.0;
    const double g2 = gap > 0.0 ? gap * gap * (1.0 - 0x1p-40) : 0.0;
    if (g2 > worst) return false;
    // The ball's box on the other axes (as nbi_ball_cells finds it); the layer itself on a.
    const double reach = nbi_reach(sqrt(worst - g2 + worst * 0x1p-40));
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int b = 0; b < v->dim; b++) {
        lo[b] = b == a ? -(double)INFINITY : x->q[b] - reach;
        hi[b] = b == a ? (double)INFINITY : x->q[b] + reach;
    }
    int64_t bl[3], bh[3];
    if (!nbi_view_cell_box(v, lo, hi, bl, bh)) return false;
    for (int b = 0; b < v->dim; b++) {
        fl[b] = b == a ? layer : bl[b];
        fh[b] = b == a ? layer : bh[b];
    }
    return true;
}

// Visits ring m (cells at Chebyshev distance exactly m from qc), clipped to [clip_lo, clip_hi]
// (within the view's box), as at most 6 boxes: for the axis `a` taken as outermost, the face
// with d_a = +-m, axes before a within (-m, m) and axes after a within [-m, m]. Each ring cell
// belongs to exactly one face. On wide rings each face is clipped further, to the k-th best's
// ball where it crosses the face's layer of cells: for a query far outside the box, whose ball
// meets the data in a thin cap, this keeps the rings to the cap rather than a square.
// Returns the work in cells examined.
static double nbi_ring_visit(const nbiView *v, const int64_t qc[3], int64_t m,
                             const int64_t clip_lo[3], const int64_t clip_hi[3], nbiKnnCtx *x)
{
    double work = 0.0;
    int64_t cl[3], ch[3];
    const int dim = v->dim;
    for (int a = 0; a < dim; a++) {
        for (int side = -1; side <= 1; side += 2) {
            if (m == 0 && side == 1) break; // ring 0 is a single cell
            bool empty = false;
            int64_t fl[3], fh[3];
            if (m >= NBI_RING_CAP && !nbi_face_cap(v, x, a, qc[a] + side * m, fl, fh)) continue;
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
                if (l < clip_lo[b]) l = clip_lo[b];
                if (h > clip_hi[b]) h = clip_hi[b];
                if (m >= NBI_RING_CAP && b < dim) {
                    if (l < fl[b]) l = fl[b];
                    if (h > fh[b]) h = fh[b];
                }
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

// A kNN query's arguments, checked in the documented order.
static nbStatus nbi_knn_check(const nbiView *v, const double *point, double max_distance, int32_t k)
{
    for (int a = 0; a < v->dim; a++)
        if (!isfinite(point[a])) return NB_ERR_NOT_FINITE;
    if (isnan(max_distance)) return NB_ERR_NOT_FINITE;
    if (k < 0 || max_distance < 0.0) return NB_ERR_OUT_OF_RANGE;
    if (v->wrap != NULL && !nbi_wrap_point_ok(v, point)) return NB_ERR_OUT_OF_RANGE;
    return NB_OK;
}

nbStatus nbi_walk_knn(const nbiView *v, const double *point, nbFilter f, double max_distance,
                      nbNeighbor *out, int32_t k, int32_t *found)
{
    return nbi_walk_knn_indexed(v, NULL, NULL, point, f, max_distance, out, k, found);
}

// Whether q lies more than NBI_KNN_FAR cells outside the view's box on some axis. (The axes'
// tests are ORed, not short-circuited: a branch on each would go either way from query to query.)
enum { NBI_KNN_FAR = 2 };
static bool nbi_knn_far_out(const nbiView *v, const double *q)
{
    bool out = false;
    for (int a = 0; a < v->dim; a++) {
        const double c = nbi_cell_f(&v->cm, q[a]);
        out |= (c < (double)v->lo[a] - NBI_KNN_FAR) | (c >= (double)v->hi[a] + 1.0 + NBI_KNN_FAR);
    }
    return out;
}

nbStatus nbi_walk_knn_indexed(const nbiView *v, nbiKnnLazy *z, const nbAllocator *alloc,
                              const double *point, nbFilter f, double max_distance, nbNeighbor *out,
                              int32_t k, int32_t *found)
{
    *found = 0;
    const nbStatus bad = nbi_knn_check(v, point, max_distance, k);
    if (bad != NB_OK) return bad;
    const bool per_point = v->cat != NULL;
    if (k == 0 || v->n == 0 || (!per_point && !nbi_filter_open(f))) return NB_OK;
    // k = 1 keeps the cell walk: a query at or beside a point ends within its own cell or
    // block, cheaper than the tree's descent (measured: about half the instructions). Not
    // where the hashed layout's codes are coarser than its cells (a box over 2^21 cells wide in
    // 3D, 2^32 in 2D): many cells then share a code, and the walk scans them all (a dense core
    // of a heavy-tailed set far from its outliers: 100k instructions a query), nor where the
    // cells are crowded (nbi_knn_crowded).
    // Nor from far outside the box (nbi_knn_far_out): the rings from there cross the box's
    // faces before they can stop, where the tree's descent goes straight to the near corner or
    // face (the index is built as for k > 1: at once where it is wanted, else after a share of
    // such queries).
    const nbiKnnIndex *ix =
        z != NULL && v->wrap == NULL &&
                (k > 1 || v->code_shift > 0 || nbi_knn_far_out(v, point) || nbi_knn_crowded(z, v))
            ? nbi_knn_index_get(z, v, alloc, point, k)
            : NULL;
    if (ix != NULL) {
        *found = nbi_knn_index_query(ix, point, f, max_distance, out, k);
        return NB_OK;
    }
    nbiKnnCtx x = {
        v, point, f, per_point, max_distance * max_distance, {out, 0, k < v->n ? k : v->n}};
    if (v->wrap != NULL) {
        const nbStatus st = nbi_wrap_knn(v, point, &x);
        *found = x.heap.size;
        return st;
    }
    if (v->cell_code != NULL && v->end == NULL) {
        nbi_code_knn_walk(v, &x);
        nbi_best_sort(&x.heap);
        *found = x.heap.size;
        return NB_OK;
    }

    // The query's cell, clipped to one cell outside the box so rings start near the data.
    int64_t qc[3] = {0, 0, 0};
    for (int a = 0; a < v->dim; a++) {
        const double c = nbi_cell_f(&v->cm, point[a]);
        qc[a] = c < (double)v->lo[a]   ? v->lo[a] - 1
                : c > (double)v->hi[a] ? v->hi[a] + 1
                                       : (int64_t)c;
    }
    // Work counts the cells of the rings visited. A ranked view walks them by rows, as a dense
    // one does, so its budget is the box's cells too, not the occupied ones.
    const double cells = v->occ != NULL ? (double)v->ext[0] * (double)v->ext[1] * (double)v->ext[2]
                                        : (double)v->ncells;
    const double budget = 2.0 * cells + 64.0;
    double work = 0.0;
    for (int64_t m = 0;; m++) {
        // Once the heap is full (or the distance limited), only the cells of the box around
        // the k-th best's ball can hold a point that enters: the ring is clipped to them.
        // (The radius's square rounds to at least the k-th best's: sqrt's and the product's
        // rounding are far below 2^-50.) No cell in that box: no point can enter any more.
        int64_t bl[3], bh[3];
        const double worst = nbi_best_bound(&x.heap, x.lim2);
        if (!(worst < (double)INFINITY)) {
            memcpy(bl, v->lo, sizeof bl);
            memcpy(bh, v->hi, sizeof bh);
        } else if (!nbi_ball_cells(v, point, sqrt(worst) * (1.0 + 0x1p-50), bl, bh)) {
            break;
        }
        work += nbi_ring_visit(v, qc, m, bl, bh, &x);
        int64_t cl[3], ch[3];
        for (int a = 0; a < 3; a++) {
            cl[a] = a < v->dim ? qc[a] - m : 0;
            ch[a] = a < v->dim ? qc[a] + m : 0;
        }
        double bound;
        if (!nbi_unvisited_bound(v, point, cl, ch, &bound)) break; // every cell visited
        if (bound > 0.0 && nbi_knn_beyond(&x, bound * bound * (1.0 - 0x1p-40))) break;
        if (work > budget) { // far-flung data: a scan of every point is cheaper
            x.heap.size = 0;
            for (int32_t c = 0; c < v->ncells; c++)
                nbi_knn_run(v->start[c], nbi_view_end(v, c), &x);
            break;
        }
    }
    nbi_best_sort(&x.heap);
    *found = x.heap.size;
    return NB_OK;
}

nbStatus nbi_visit_knn(const nbiView *v, const double *point, nbFilter f, double max_distance,
                       int32_t k, const nbAllocator *alloc, nbNeighborFn *visit, void *user)
{
    return nbi_visit_knn_indexed(v, NULL, point, f, max_distance, k, alloc, visit, user);
}

nbStatus nbi_visit_knn_indexed(const nbiView *v, nbiKnnLazy *z, const double *point, nbFilter f,
                               double max_distance, int32_t k, const nbAllocator *alloc,
                               nbNeighborFn *visit, void *user)
{
    const nbStatus bad = nbi_knn_check(v, point, max_distance, k);
    if (bad != NB_OK) return bad;
    nbNeighbor stack[NB_KNN_STACK];
    nbNeighbor *heap = stack;
    const int32_t want = k < v->n ? k : v->n;
    if (want > NB_KNN_STACK) {
        heap = (nbNeighbor *)nbi_alloc(alloc, (size_t)want, sizeof *heap);
        if (heap == NULL) return NB_ERR_OUT_OF_MEMORY;
    }
    int32_t found = 0;
    const nbStatus st =
        nbi_walk_knn_indexed(v, z, alloc, point, f, max_distance, heap, want, &found);
    for (int32_t i = 0; st == NB_OK && i < found; i++)
        if (!visit(heap[i].index, heap[i].dist2, user)) break;
    if (heap != stack) nbi_free(alloc, heap, (size_t)want, sizeof *heap);
    return st;
}

// ---- periodic views (view.h: nbiWrap) ----
// A periodic axis has cells 0 .. m - 1 and wraps: the cells near a cell, or covering a range of
// coordinates, are up to two intervals of cell numbers (the range split where it crosses a face
// of the box), merged when they meet so that no cell is visited twice. The walkers then visit
// the product of the per-axis intervals (at most 8 boxes of cells) and test every candidate by
// the minimum image. Periodic views are dense or ranked, their box (the occupied arcs) at most
// 64 cells a point, so no walk needs a cost guard.

bool nbi_wrap_radius_ok(const nbiView *v, double r)
{
    for (int a = 0; a < v->dim; a++)
        if (v->wrap->period[a] > 0.0 && r > 0.5 * v->wrap->period[a]) return false;
    return true;
}

bool nbi_wrap_point_ok(const nbiView *v, const double *p)
{
    for (int a = 0; a < v->dim; a++) {
        const double period = v->wrap->period[a];
        if (period > 0.0 && !(p[a] >= 0.0 && p[a] < period)) return false;
    }
    return true;
}

void nbi_wrap_rings(const nbiView *v, double reach, int64_t k[3])
{
    const nbiWrap *w = v->wrap;
    for (int a = 0; a < 3; a++) {
        double d = 0.0;
        if (a < v->dim && w->m[a] == 0) {
            d = nbi_rings(reach, v->cm.cell, v->max_abs);
        } else if (a < v->dim) {
            d = nbi_wrap_rings1(reach, w->period[a], w->pcm[a].cell, w->m[a]);
        }
        k[a] = d < 0x1p40 ? (int64_t)d : (int64_t)1 << 40; // beyond any axis: the whole axis
    }
}

static nbiCellRange nbi_range1(int64_t lo, int64_t hi)
{
    nbiCellRange r = {{lo, 0}, {hi, 0}, lo <= hi};
    return r;
}

static nbiCellRange nbi_range2(int64_t lo0, int64_t hi0, int64_t lo1, int64_t hi1)
{
    nbiCellRange r = {{lo0, lo1}, {hi0, hi1}, 2};
    if (lo1 <= hi0 + 1) { // they meet: one interval
        r.hi[0] = hi1 > hi0 ? hi1 : hi0;
        r.n = 1;
    }
    return r;
}

// The cells of the cyclic run s, s + 1, ..., s + len - 1 (mod m) on periodic axis a, clipped
// to the arc 0 .. hi: at most two intervals, each cell once (len >= m: the whole arc).
static nbiCellRange nbi_wrap_run(const nbiView *v, int a, int64_t s, int64_t len)
{
    const int64_t m = v->wrap->m[a], top = v->hi[a];
    if (len >= m) return nbi_range1(0, top);
    s = s < 0 ? s + m : s >= m ? s - m : s; // (-m < s < 2m: from a cell and fewer than m more)
    const int64_t e = s + len - 1;          // past m - 1: the run goes on from 0 to e - m
    if (e < m) return nbi_range1(s, e < top ? e : top);
    const int64_t low = e - m < top ? e - m : top;
    return s <= top ? nbi_range2(0, low, s, top) : nbi_range1(0, low);
}

nbiCellRange nbi_wrap_near(const nbiView *v, int a, int64_t c, int64_t k)
{
    if (a >= v->dim) return nbi_range1(0, 0);
    if (v->wrap->m[a] == 0) {
        const int64_t l = c - k > v->lo[a] ? c - k : v->lo[a];
        return nbi_range1(l, c + k < v->hi[a] ? c + k : v->hi[a]);
    }
    return nbi_wrap_run(v, a, c - k, 2 * k + 1);
}

// The circle cell of x on periodic axis a (not yet numbered from the arc), clamped: below 0 (a
// range widened by its margin), the first cell; P and above, the last.
static int64_t nbi_wrap_cell(const nbiView *v, int a, double x)
{
    if (!(x > 0.0)) return 0;
    const double q = nbi_cell_f(&v->wrap->pcm[a], x);
    return q < (double)v->wrap->m[a] ? (int64_t)q : v->wrap->m[a] - 1;
}

nbiCellRange nbi_wrap_cover(const nbiView *v, int a, double lo, double hi)
{
    if (a >= v->dim) return nbi_range1(0, 0);
    const int64_t m = v->wrap->m[a];
    if (m == 0) { // the monotone cell map, clipped to the occupied box (nbi_view_cell_box)
        const double l = nbi_cell_f(&v->cm, lo), h = nbi_cell_f(&v->cm, hi);
        if (!(l <= (double)v->hi[a]) || !(h >= (double)v->lo[a]) || l > h) return nbi_range1(1, 0);
        return nbi_range1(l > (double)v->lo[a] ? (int64_t)l : v->lo[a],
                          h < (double)v->hi[a] ? (int64_t)h : v->hi[a]);
    }
    // A margin far above the rounding of lo + P and hi - P: candidates are only a superset.
    const double p = v->wrap->period[a];
    lo -= p * 0x1p-50;
    hi += p * 0x1p-50;
    if (!(hi - lo < p)) return nbi_range1(0, v->hi[a]);
    // The circle cells from first to last (round past m - 1 to 0 when first > last).
    int64_t first, last;
    if (lo < 0.0) { // [lo + P, P) and [0, hi]
        first = nbi_wrap_cell(v, a, lo + p);
        last = nbi_wrap_cell(v, a, hi < 0.0 ? hi + p : hi);
    } else if (hi >= p) { // [lo, P) and [0, hi - P]
        first = nbi_wrap_cell(v, a, lo >= p ? lo - p : lo);
        last = nbi_wrap_cell(v, a, hi - p);
    } else {
        first = nbi_wrap_cell(v, a, lo);
        last = nbi_wrap_cell(v, a, hi);
    }
    const bool round = lo < 0.0 ? hi >= 0.0 : hi >= p && lo < p;
    const int64_t len = last - first + 1 + (round ? m : 0); // round and first <= last: >= m
    return nbi_wrap_run(v, a, first - v->wrap->c0[a], len);
}

// Runs fn through nbi_wrap_box_runs, remembering whether it asked to stop.
typedef struct nbiStopCtx {
    nbiRunFn *fn;
    void *ctx;
    bool stopped;
} nbiStopCtx;

static bool nbi_stop_run(int32_t b0, int32_t b1, void *vctx)
{
    nbiStopCtx *x = (nbiStopCtx *)vctx;
    x->stopped = !x->fn(b0, b1, x->ctx);
    return !x->stopped;
}

// Whether any of box cells k0 .. k1 - 1 is occupied in a ranked view (its bits, a word or two
// for the short rows of a ring's face: cheaper than the two ranks of an empty row).
static bool nbi_wrap_occupied(const nbiView *v, int64_t k0, int64_t k1)
{
    const uint64_t *occ = v->occ;
    int64_t w = k0 >> 6;
    const int64_t last = (k1 - 1) >> 6;
    uint64_t bits = occ[w] & (~UINT64_C(0) << (k0 & 63));
    for (; w < last; bits = occ[++w])
        if (bits != 0) return true;
    return (bits & (~UINT64_C(0) >> (63 - ((k1 - 1) & 63)))) != 0;
}

// nbi_wrap_box_runs on a ranked view: each row's runs, in the same order, an empty row skipped
// on its bits.
static double nbi_wrap_ranked_runs(const nbiView *v, const nbiCellRange r[3], nbiRunFn *fn,
                                   void *ctx)
{
    const int64_t e0 = v->ext[0], e01 = v->ext[0] * v->ext[1];
    double work = 0.0;
    for (int tz = 0; tz < r[2].n; tz++)
        for (int ty = 0; ty < r[1].n; ty++)
            for (int tx = 0; tx < r[0].n; tx++) {
                const int64_t xl = r[0].lo[tx], xh = r[0].hi[tx];
                work += (double)(xh - xl + 1) * (double)(r[1].hi[ty] - r[1].lo[ty] + 1) *
                        (double)(r[2].hi[tz] - r[2].lo[tz] + 1);
                for (int64_t z = r[2].lo[tz]; z <= r[2].hi[tz]; z++)
                    for (int64_t y = r[1].lo[ty]; y <= r[1].hi[ty]; y++) {
                        const int64_t row = (y - v->lo[1]) * e0 + (z - v->lo[2]) * e01 - v->lo[0];
                        if (!nbi_wrap_occupied(v, row + xl, row + xh + 1)) continue;
                        const int32_t b0 = nbi_view_box_start(v, row + xl);
                        const int32_t b1 = nbi_view_box_start(v, row + xh + 1);
                        if (b0 < b1 && !fn(b0, b1, ctx)) return work;
                    }
            }
    return work;
}

double nbi_wrap_box_runs(const nbiView *v, const nbiCellRange r[3], nbiRunFn *fn, void *ctx)
{
    if (v->occ != NULL && v->table == NULL) return nbi_wrap_ranked_runs(v, r, fn, ctx);
    nbiStopCtx x = {fn, ctx, false};
    double work = 0.0;
    for (int tz = 0; tz < r[2].n; tz++)
        for (int ty = 0; ty < r[1].n; ty++)
            for (int tx = 0; tx < r[0].n && !x.stopped; tx++) {
                const int64_t cl[3] = {r[0].lo[tx], r[1].lo[ty], r[2].lo[tz]};
                const int64_t ch[3] = {r[0].hi[tx], r[1].hi[ty], r[2].hi[tz]};
                work += nbi_view_box_runs(v, cl, ch, nbi_stop_run, &x);
            }
    return work;
}

static bool nbi_wrap_radius_run(int32_t b0, int32_t b1, void *vctx)
{
    const nbiRangeCtx *x = (const nbiRangeCtx *)vctx;
    const nbiView *v = x->v;
    for (int32_t p = b0; p < b1; p++)
        if (nbi_dist2_wrap(x->c, v->pts + (size_t)p * (size_t)v->dim, v->dim, v->wrap->kper) <=
                x->r2 &&
            !nbi_radius_take(x, p))
            return false;
    return true;
}

static nbStatus nbi_wrap_radius(const nbiView *v, const double *center, double radius, nbFilter f,
                                nbiHitSink *s)
{
    if (!nbi_wrap_radius_ok(v, radius) || !nbi_wrap_point_ok(v, center)) return NB_ERR_OUT_OF_RANGE;
    const bool per_point = v->cat != NULL;
    if (v->n == 0 || (!per_point && !nbi_filter_open(f))) return NB_OK;
    const double reach = nbi_reach(radius);
    nbiCellRange r[3];
    for (int a = 0; a < 3; a++) {
        r[a] = a < v->dim ? nbi_wrap_cover(v, a, center[a] - reach, center[a] + reach)
                          : nbi_range1(0, 0);
        if (r[a].n == 0) return NB_OK;
    }
    nbiRangeCtx x = {v, center, NULL, NULL, radius * radius, f, per_point, s};
    nbi_wrap_box_runs(v, r, nbi_wrap_radius_run, &x);
    return NB_OK;
}

// A box on a periodic view: per axis, the whole axis, or [lo, hi] and its images (grid.h).
typedef struct nbiWrapBoxCtx {
    nbiRangeCtx r;
    bool whole[3];
} nbiWrapBoxCtx;

NBI_INLINE bool nbi_wrap_in(double x, double lo, double hi, double p)
{
    const double up = x + p, down = x - p;
    return (lo <= x && x <= hi) || (lo <= up && up <= hi) || (lo <= down && down <= hi);
}

static bool nbi_wrap_box_run(int32_t b0, int32_t b1, void *vctx)
{
    const nbiWrapBoxCtx *x = (const nbiWrapBoxCtx *)vctx;
    const nbiView *v = x->r.v;
    const int dim = v->dim;
    for (int32_t p = b0; p < b1; p++) {
        const double *q = v->pts + (size_t)p * (size_t)dim;
        bool in = true;
        for (int a = 0; a < dim; a++)
            in &= x->whole[a] ||
                  (v->wrap->m[a] > 0 ? nbi_wrap_in(q[a], x->r.lo[a], x->r.hi[a], v->wrap->period[a])
                                     : q[a] >= x->r.lo[a] && q[a] <= x->r.hi[a]);
        if (in && (!x->r.per_point || nbi_view_passes(v, p, x->r.f))) {
            nbi_hit(x->r.sink, v->idx[p]);
            if (x->r.sink->stop) return false;
        }
    }
    return true;
}

static nbStatus nbi_wrap_box(const nbiView *v, const double *lo, const double *hi, nbFilter f,
                             nbiHitSink *s)
{
    nbiWrapBoxCtx x = {{v, NULL, lo, hi, 0.0, f, v->cat != NULL, s}, {false, false, false}};
    bool empty = false;
    for (int a = 0; a < v->dim; a++) {
        const double p = v->wrap->period[a];
        empty |= lo[a] > hi[a];
        if (!(p > 0.0) || lo[a] > hi[a]) continue; // (before any build, m is still 0)
        x.whole[a] = !(hi[a] - lo[a] < p) || isinf(lo[a]) || isinf(hi[a]);
        if (!x.whole[a] && !(lo[a] >= -p && hi[a] < 2.0 * p)) return NB_ERR_OUT_OF_RANGE;
    }
    if (empty || v->n == 0 || (!x.r.per_point && !nbi_filter_open(f))) return NB_OK;
    nbiCellRange r[3]; // (built: m > 0 on every periodic axis from here on)
    for (int a = 0; a < 3; a++) {
        r[a] = a >= v->dim  ? nbi_range1(0, 0)
               : x.whole[a] ? nbi_range1(0, v->hi[a])
                            : nbi_wrap_cover(v, a, lo[a], hi[a]);
        if (r[a].n == 0) return NB_OK;
    }
    nbi_wrap_box_runs(v, r, nbi_wrap_box_run, &x);
    return NB_OK;
}

// kNN on a periodic view: rings outward by the cyclic cell distance ("level") from the query's
// cell. Ring m is the cells whose largest level over the axes is m, visited as faces (the axis
// at level m, the axes before it below m, the axes after it at most m), so each cell once, and
// clipped to the arc. Cells not yet visited are at level m + 1 or more on some axis not yet
// covered whole: m whole cells lie between them and the query, so they are at least m cell
// edges away. A query outside the arc on an axis is at level `far` >= 1 from every stored cell
// there: the rings before the largest such level hold no cell and are skipped, and every
// unvisited cell is also far - 1 cell edges away on that axis (a query far from a clump stops
// as soon as its k nearest are found, not after walking the empty rings between).

// The cells at level exactly m from cell c on axis a.
static nbiCellRange nbi_wrap_level(const nbiView *v, int a, int64_t c, int64_t m)
{
    if (a >= v->dim) return m == 0 ? nbi_range1(0, 0) : nbi_range1(1, 0);
    const int64_t cells = v->wrap->m[a], top = v->hi[a];
    if (m == 0) return c >= v->lo[a] && c <= top ? nbi_range1(c, c) : nbi_range1(1, 0);
    if (cells > 0) {
        if (2 * m - 1 >= cells) return nbi_range1(1, 0); // all at a lower level
        const int64_t up = c + m < cells ? c + m : c + m - cells;
        const int64_t down = c - m >= 0 ? c - m : c - m + cells;
        const int64_t l = up < down ? up : down, h = up < down ? down : up;
        if (h > top) return l <= top ? nbi_range1(l, l) : nbi_range1(1, 0);
        return l == h ? nbi_range1(l, l) : nbi_range2(l, l, h, h);
    }
    const bool has_down = c - m >= v->lo[a] && c - m <= v->hi[a];
    const bool has_up = c + m >= v->lo[a] && c + m <= v->hi[a];
    if (has_down && has_up) return nbi_range2(c - m, c - m, c + m, c + m);
    if (has_down) return nbi_range1(c - m, c - m);
    return has_up ? nbi_range1(c + m, c + m) : nbi_range1(1, 0);
}

// Whether the cells within level m of c cover axis a whole (the arc, on a periodic axis).
static bool nbi_wrap_covered(const nbiView *v, int a, int64_t c, int64_t m)
{
    if (v->wrap->m[a] > 0) {
        if (2 * m + 1 < v->ext[a]) return false; // fewer cells than the arc's
        const nbiCellRange r = nbi_wrap_near(v, a, c, m);
        return r.n == 1 && r.lo[0] == 0 && r.hi[0] == v->hi[a];
    }
    return c - m <= v->lo[a] && c + m >= v->hi[a];
}

// The least level of a stored cell from cell c on periodic axis a: 0 on the arc 0 .. hi, else
// the steps to its nearer end.
static int64_t nbi_wrap_far(const nbiView *v, int a, int64_t c)
{
    const int64_t m = v->wrap->m[a], top = v->hi[a];
    if (m == 0 || c <= top) return 0;
    return c - top < m - c ? c - top : m - c;
}

// A query's distances to whole cells along each axis, worked out once: `gap` whole cells of
// edge e along axis a are at least gap * e less what the rounding of the cells and of the
// distance may take off, (gap + cells + 2) e 2^-46 + (|q| + max_abs + P) 2^-46 + the quotient's
// underflow; as gap * step - less, step = e (1 - 2^-46) (its own rounding far inside the slack).
typedef struct nbiWrapGaps {
    double edge[3], step[3], less[3];
} nbiWrapGaps;

static void nbi_wrap_gaps_init(const nbiView *v, const double *point, nbiWrapGaps *g)
{
    const nbiWrap *w = v->wrap;
    for (int a = 0; a < 3; a++) {
        const double e = a >= v->dim ? 1.0 : w->m[a] > 0 ? w->pcm[a].cell : v->cm.cell;
        g->edge[a] = e;
        g->step[a] = e * (1.0 - 0x1p-46);
        g->less[a] = a >= v->dim ? 0.0
                                 : ((double)w->m[a] + 2.0) * e * 0x1p-46 +
                                       (fabs(point[a]) + v->max_abs + w->period[a]) * 0x1p-46 +
                                       nbi_cell_slack(e);
    }
}

// At most the distance along axis a from the query to any point of a cell `gap` whole cells
// away from the query's.
NBI_INLINE double nbi_wrap_gap(const nbiWrapGaps *g, int a, int64_t gap)
{
    const double d = (double)gap * g->step[a] - g->less[a];
    return d > 0.0 ? d : 0.0;
}

static bool nbi_knn_run_wrap(int32_t b0, int32_t b1, void *vctx)
{
    nbiKnnCtx *x = (nbiKnnCtx *)vctx;
    const nbiView *v = x->v;
    const int dim = v->dim;
    for (int32_t p = b0; p < b1; p++) {
        if (x->per_point && !nbi_view_passes(v, p, x->f)) continue;
        const double *q = v->pts + (size_t)p * (size_t)dim;
        nbNeighbor cand = {v->idx[p], nbi_dist2_wrap(x->q, q, dim, v->wrap->kper)};
        if (cand.dist2 <= x->lim2) nbi_best_offer(&x->heap, cand);
    }
    return true;
}

// The face of ring m at level m on axis a, as the levels it spans on the other axes: reach[b]
// (the axes before a below m, those after at most m), each cut to where a point could still
// enter: its gap along a is at least that of level m, along every other axis at least out[]
// (so a query far from the data searches a small cap of the face, not the whole face). False
// when no cell of the face can hold a point that enters.
static bool nbi_wrap_face_reach(const nbiView *v, const nbiWrapKnnOps *ops, const nbiWrapGaps *gp,
                                const double out[3], int a, int64_t m, int64_t reach[3])
{
    for (int b = 0; b < 3; b++) reach[b] = b < a ? m - 1 : m;
    if (m == 0) return a == 0; // the query's own cell (in the arcs: out[] is 0)
    double g[3] = {out[0], out[1], out[2]};
    const double ga = nbi_wrap_gap(gp, a, m - 1);
    g[a] = ga > out[a] ? ga : out[a];
    if (ops->beyond(ops->ctx, g)) return false;
    const bool inside = out[0] == 0.0 && out[1] == 0.0 && out[2] == 0.0;
    double room = -1.0; // (inside: the same for every axis but a; the norms are symmetric)
    for (int b = 0; b < v->dim; b++) {
        if (b == a) continue;
        // Levels L on axis b are at least gap(L - 1) away: keep those whose gap(L - 1) is
        // within the room the bound leaves (one level more than the rounding could need).
        if (!inside || room < 0.0) room = ops->room(ops->ctx, g, b);
        if (!(room < (double)INFINITY)) break; // no bound yet
        const double lv =
            (room + (double)m * gp->edge[b] * 0x1p-46 + gp->less[b]) / gp->edge[b] + 2.0;
        if (lv < (double)reach[b]) reach[b] = (int64_t)lv;
    }
    return true;
}

void nbi_wrap_knn_walk(const nbiView *v, const double *point, const nbiWrapKnnOps *ops)
{
    const int dim = v->dim;
    const nbiWrap *w = v->wrap;
    int64_t qc[3] = {0, 0, 0}, m0 = 0;
    double out[3] = {0.0, 0.0, 0.0}; // per axis, at most the distance to every stored point
    nbiWrapGaps gp;
    nbi_wrap_gaps_init(v, point, &gp);
    for (int a = 0; a < dim; a++) {
        if (w->m[a] > 0) {
            qc[a] = nbi_view_axis_cell(v, a, point[a]);
            const int64_t far = nbi_wrap_far(v, a, qc[a]);
            m0 = far > m0 ? far : m0;
            out[a] = far > 0 ? nbi_wrap_gap(&gp, a, far - 1) : 0.0;
            continue;
        }
        const double c = nbi_cell_f(&v->cm, point[a]); // clipped to one cell outside the box
        qc[a] = c < (double)v->lo[a]   ? v->lo[a] - 1
                : c > (double)v->hi[a] ? v->hi[a] + 1
                                       : (int64_t)c;
    }
    const double budget = 2.0 * ((double)v->ncells + (double)v->n) + 64.0; // cells examined
    double work = 0.0;
    for (int64_t m = m0;; m++) {
        for (int a = 0; a < dim; a++) { // the faces of ring m
            int64_t reach[3];
            if (!nbi_wrap_face_reach(v, ops, &gp, out, a, m, reach)) continue;
            nbiCellRange r[3];
            bool empty = false;
            for (int b = 0; b < 3; b++) {
                r[b] = b == a                    ? nbi_wrap_level(v, b, qc[b], m)
                       : b < dim && reach[b] < 0 ? nbi_range1(1, 0)
                                                 : nbi_wrap_near(v, b, qc[b], reach[b]);
                empty |= r[b].n == 0;
            }
            if (!empty) work += nbi_wrap_box_runs(v, r, ops->run, ops->ctx);
        }
        // The unvisited cells: beyond level m on an axis a not yet covered whole, and at least
        // out[b] away on every axis b.
        // (With out[] all 0 the norms' symmetry leaves the least gap to test.)
        const bool inside = out[0] == 0.0 && out[1] == 0.0 && out[2] == 0.0;
        bool outside = false, done = true;
        double least[3] = {(double)INFINITY, 0.0, 0.0};
        for (int a = 0; a < dim && done; a++) {
            if (nbi_wrap_covered(v, a, qc[a], m)) continue;
            outside = true;
            const double ga = nbi_wrap_gap(&gp, a, m);
            if (inside) {
                least[0] = ga < least[0] ? ga : least[0];
                continue;
            }
            double g[3] = {out[0], out[1], out[2]};
            g[a] = ga > out[a] ? ga : out[a];
            done = ops->beyond(ops->ctx, g);
        }
        if (inside && outside) done = ops->beyond(ops->ctx, least);
        if (!outside || done) return; // every cell visited, or none left can hold a point
        if (work > budget) {          // a scan of every point is cheaper
            ops->reset(ops->ctx);
            for (int32_t c = 0; c < v->ncells; c++)
                ops->run(v->start[c], nbi_view_end(v, c), ops->ctx);
            return;
        }
    }
}

// The Euclidean norm's bounds for the walk: squared gaps against the k-th best (or the limit).
static bool nbi_wrap_knn_beyond(void *vctx, const double g[3])
{
    const nbiKnnCtx *x = (const nbiKnnCtx *)vctx;
    double d2 = 0.0;
    for (int a = 0; a < x->v->dim; a++) d2 += g[a] * g[a];
    return nbi_knn_beyond(x, d2 * (1.0 - 0x1p-40));
}

static double nbi_wrap_knn_room(void *vctx, const double g[3], int b)
{
    const nbiKnnCtx *x = (const nbiKnnCtx *)vctx;
    const double bound = nbi_best_bound(&x->heap, x->lim2);
    if (!(bound < (double)INFINITY)) return (double)INFINITY;
    double rest = 0.0;
    for (int a = 0; a < x->v->dim; a++) rest += a != b ? g[a] * g[a] : 0.0;
    const double left = bound - rest + (bound + rest) * 0x1p-40; // past the sum's rounding
    return left > 0.0 ? sqrt(left) * (1.0 + 0x1p-30) : 0.0;
}

static void nbi_wrap_knn_reset(void *vctx)
{
    ((nbiKnnCtx *)vctx)->heap.size = 0;
}

static nbStatus nbi_wrap_knn(const nbiView *v, const double *point, nbiKnnCtx *x)
{
    const nbiWrapKnnOps ops = {nbi_knn_run_wrap, x, nbi_wrap_knn_beyond, nbi_wrap_knn_room,
                               nbi_wrap_knn_reset};
    nbi_wrap_knn_walk(v, point, &ops);
    nbi_best_sort(&x->heap);
    return NB_OK;
}
