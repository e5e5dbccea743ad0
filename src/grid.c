// SPDX-License-Identifier: MIT
// The dense grid: a counting sort of points into cells, rebuilt from scratch every frame.
//
// Build = three passes over the input and one over the cells:
//   1. read and check every coordinate (finite), track the bounding box and max |coordinate|;
//   2. map each point to its cell and count points per cell;
//   3. exclusive prefix sum of the counts -> each cell's first position;
//   4. scatter: copy each point (and its index) to its cell's next free position.
// Large builds of packed points do 2 to 4 in two cache-sized passes instead (blocks of cells,
// then cells within each block: "large builds" below), with the same result.
// Storage is a handful of flat arrays reused across builds: nothing is allocated once the
// capacity suffices, memory is contiguous, and cost is O(points + cells). Cells stay O(points):
// when the bounding box would need more than about 4 cells per point, only occupied cells are
// numbered, through a hash table of about 2N slots (see grid_internal.h).
#include "grid_internal.h"

#include <float.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "simd.h"

enum { NBI_DENSE_CELLS_PER_POINT = 4, NBI_DENSE_MIN_CELLS = 64 };
// A box with more cells than the dense layout may have, but at most this many a point (and
// fewer than 2^31 in all), takes the ranked layout: a bit a cell (see "ranked cells" below).
enum { NBI_RANKED_CELLS_PER_POINT = 64 };

// Words of occupancy bits (and their counts) a ranked build of up to `room` points may need: a
// box of at most NBI_RANKED_CELLS_PER_POINT cells a point, a word per 64 cells, one more for the
// box's end, and two the build's count pass uses.
static uint64_t nbi_ranked_words(uint64_t room)
{
    return room * (NBI_RANKED_CELLS_PER_POINT / 64) + 3;
}
// The row spans' room (int32_t entries, 4 bytes a point) for a ranked build of up to `room`
// points: a build keeps them while they fit (nbi_ranked_spans_fit).
static uint64_t nbi_ranked_span_room(uint64_t room)
{
    return room + 2;
}
// Dense builds of at least this many packed points sort in two passes ("large builds" below;
// SSE2 builds only). Measured: below it the one-pass build is as fast.
int32_t nbi_blocked_min_points = 3 << 20;
// How many points ahead a hashed build computes keys and prefetches their table slots.
enum { NBI_HASH_AHEAD = 16 };
// How many points ahead the eight-lane cell pass prefetches its input. On the machine measured
// the hardware prefetcher alone left a sequential pass over data no longer in the caches
// waiting on memory: the dense build of the 1M uniform set took 9.9-10.4 ms without it and
// 9.4-9.6 with it (2026-12-02, three alternating runs).
enum { NBI_STREAM_AHEAD = 128 };

enum { NBI_GRID_BUFS = 16 };
// Below this many points a build runs serially even with a scheduler: the passes are too short
// to pay for waking the workers.
enum { NBI_PARALLEL_MIN_POINTS = 16384 };

// Every buffer the grid owns, with its element size, in one table so that growing and freeing
// them cannot miss one.
static void nbi_grid_bufs(nbGrid *g, nbiBuf *buf[NBI_GRID_BUFS], size_t elem[NBI_GRID_BUFS])
{
    nbiBuf *b[NBI_GRID_BUFS] = {&g->pts,       &g->idx,       &g->cell_of,   &g->start,
                                &g->cell_slot, &g->cat,       &g->mask,      &g->occ,
                                &g->occ_rank,  &g->table.buf, &g->cell_code, &g->cell_seen,
                                &g->hist,      &g->row_span,  &g->cell_dir,  &g->cell_zseen};
    const size_t e[NBI_GRID_BUFS] = {
        sizeof(double),   sizeof(int32_t),     sizeof(int32_t),  sizeof(int32_t),
        sizeof(uint32_t), sizeof(uint32_t),    sizeof(uint32_t), sizeof(uint64_t),
        sizeof(int32_t),  sizeof(nbiCellSlot), sizeof(uint64_t), sizeof(uint64_t),
        sizeof(int32_t),  sizeof(int32_t),     sizeof(int32_t),  sizeof(uint64_t)};
    for (int i = 0; i < NBI_GRID_BUFS; i++) {
        buf[i] = b[i];
        elem[i] = e[i];
    }
}

static void nbi_grid_free_all(nbGrid *g)
{
    nbiBuf *buf[NBI_GRID_BUFS];
    size_t elem[NBI_GRID_BUFS];
    nbi_grid_bufs(g, buf, elem);
    for (int i = 0; i < NBI_GRID_BUFS; i++) nbi_free(&g->alloc, buf[i]->ptr, buf[i]->cap, elem[i]);
    for (int k = 0; k < NBI_MAX_CHUNKS; k++)
        nbi_free(&g->alloc, g->scratch[k].ptr, g->scratch[k].cap, sizeof(nbPair));
    nbi_knn_index_free(&g->knn, &g->alloc);
}

// Room for a build of n points whose index needs `cells` cells; hashed: `slots` table slots (and
// their occupancy filter),
// `keyed` cell slots and `coded` cell codes (twice: the sort's), and in hist the sort's
// scratch; ranked: `words` occupancy words and their counts, and `keyed` cells; filtered: `bits`
// categories and masks; a parallel dense build: `hist` per-chunk cell counts; a ranked build
// with row spans: `spans` entries of them (nbi_ranked_spans).
typedef struct nbiGridNeed {
    uint64_t n, cells, slots, keyed, bits, words, coded, hist, spans;
} nbiGridNeed;

// The hashed build's sort of its cells by code (nbi_hashed_order): 10-bit digits (a box beyond
// the codes' reach sorts its low codes too: 10 passes for the 200k tail3d set, whose build took
// 28-30 ms with twelve passes of 8 bits, 27-28 with 11 bits, which need more scratch), each
// digit's counts taken in one pass; in hist, two arrays of cell numbers and the counts of the
// digits (7 of the code, 7 of the low code). nbi_hashed_sorted's digit counts (below) take as
// much scratch.
enum { NBI_CODE_DIGIT = 10, NBI_CODE_DIGITS = 16 };
enum { NBI_ZSORT_DIGIT = 11, NBI_ZSORT_PASSES = 8 };
static uint64_t nbi_code_scratch(uint64_t cells)
{
    return 2 * cells + ((uint64_t)NBI_ZSORT_PASSES << NBI_ZSORT_DIGIT); // = the codes' digits
}

// Grows every buffer to `need`, all or nothing. With `keep`, the contents move along (reserve);
// a build overwrites them anyway.
static bool nbi_grid_grow(nbGrid *g, nbiGridNeed need, bool keep)
{
    nbiBuf *cur[NBI_GRID_BUFS];
    size_t elem[NBI_GRID_BUFS];
    nbi_grid_bufs(g, cur, elem);
    const size_t count[NBI_GRID_BUFS] = {need.n * (size_t)g->dim,
                                         need.n,
                                         need.n,
                                         need.cells + 2,
                                         need.keyed,
                                         need.bits,
                                         need.bits,
                                         need.words,
                                         need.words,
                                         need.slots,
                                         2 * need.coded,
                                         need.slots >> (6 - NBI_SEEN_PER_SLOT_LOG2),
                                         need.hist,
                                         need.spans,
                                         need.coded > 0 ? need.coded / 2 + 3 : 0,
                                         need.slots >> (6 - NBI_SEEN_PER_SLOT_LOG2)};
    nbiBuf next[NBI_GRID_BUFS];
    if (!nbi_bufs_prepare(&g->alloc, cur, next, count, elem, NBI_GRID_BUFS)) return false;
    nbi_bufs_commit(&g->alloc, cur, next, elem, NBI_GRID_BUFS, keep);
    return true;
}

nbStatus nb_grid_create(const nbGridDesc *desc, nbGrid **out)
{
    if (out == NULL) return NB_ERR_NULL_ARG;
    *out = NULL;
    if (desc == NULL) return NB_ERR_NULL_ARG;
    nbAllocator a;
    if (!nbi_allocator(desc->allocator, &a)) return NB_ERR_NULL_ARG; // a pointer check: first
    if (!isfinite(desc->cell_size)) return NB_ERR_NOT_FINITE;
    for (int d = 0; d < 3; d++)
        if (!isfinite(desc->period[d])) return NB_ERR_NOT_FINITE;
    if (desc->cell_size < 0.0 || desc->capacity_hint < 0) return NB_ERR_OUT_OF_RANGE;
    if (desc->tasks != NULL && desc->tasks->workers < 0) return NB_ERR_OUT_OF_RANGE;
    if (desc->dim != 0 && desc->dim != 2 && desc->dim != 3) return NB_ERR_OUT_OF_RANGE;
    const int32_t dim = desc->dim == 0 ? 2 : desc->dim;
    for (int d = 0; d < 3; d++)
        if (desc->period[d] < 0.0 || (d >= dim && desc->period[d] != 0.0))
            return NB_ERR_OUT_OF_RANGE;
    nbGrid *g = (nbGrid *)nbi_alloc(&a, 1, sizeof(nbGrid));
    if (g == NULL) return NB_ERR_OUT_OF_MEMORY;
    memset(g, 0, sizeof *g);
    g->alloc = a;
    g->dim = desc->dim == 0 ? 2 : desc->dim;
    g->desc_cell = desc->cell_size;
    if (desc->tasks != NULL) g->tasks = *desc->tasks;
    g->cm = nbi_cell_math(desc->cell_size > 0.0 ? desc->cell_size : 1.0);
    for (int d = 0; d < 3; d++) {
        g->wrapped |= desc->period[d] > 0.0;
        g->wrap.period[d] = desc->period[d] > 0.0 ? desc->period[d] : 0.0; // -0.0 is 0.0
        g->wrap.kper[d] = desc->period[d] > 0.0 ? desc->period[d] : (double)INFINITY;
    }
    if (desc->capacity_hint > 0 && nb_grid_reserve(g, desc->capacity_hint) != NB_OK) {
        nbi_grid_free_all(g);
        nbi_free(&a, g, 1, sizeof(nbGrid));
        return NB_ERR_OUT_OF_MEMORY;
    }
    nbi_grid_view_refresh(g);
    *out = g;
    return NB_OK;
}

void nb_grid_destroy(nbGrid *grid)
{
    if (grid == NULL) return;
    nbAllocator a = grid->alloc;
    nbi_grid_free_all(grid);
    nbi_free(&a, grid, 1, sizeof(nbGrid));
}

nbStatus nb_grid_reserve(nbGrid *grid, int32_t points)
{
    if (grid == NULL) return NB_ERR_NULL_ARG;
    if (points < 0) return NB_ERR_OUT_OF_RANGE;
    // Enough for every mode: dense needs up to 4N + 64 cells; ranked needs N cells and N + 3
    // words; hashed needs N cells and a table for them, sized (as builds size them) for the
    // capacity the index array will have. Filter bits are covered once the grid has been built
    // with them.
    const uint64_t n = (uint64_t)points;
    const uint64_t room = nbi_buf_grown_cap(&grid->idx, (size_t)points);
    const int32_t bits = nbi_ctab_bits_for(room < INT32_MAX ? (size_t)room : INT32_MAX);
    // Hashed cells need up to `room` cell starts too: builds keep that true once hashed.
    const uint64_t cells = NBI_DENSE_CELLS_PER_POINT * n + NBI_DENSE_MIN_CELLS;
    // The hist tables: a parallel build's counts per chunk and cell, and a blocked build's.
    const bool parallel = nbi_grid_parallel(grid) && points >= NBI_PARALLEL_MIN_POINTS;
    const int32_t chunks = parallel ? nbi_grid_build_chunks(grid) : 1;
    uint64_t hist = parallel ? (uint64_t)chunks * (cells + 2) : 0; // (a rebuild's rows: + 2)
#if defined(__SSE2__)
    if (points >= nbi_blocked_min_points) {
        const uint64_t want = nbi_blocks_hist(points, grid->dim, chunks);
        hist = want > hist ? want : hist;
    }
#endif
    if (hist < nbi_code_scratch(room)) hist = nbi_code_scratch(room); // a hashed build's sort
    nbiGridNeed need = {n,
                        cells > room ? cells : room,
                        (uint64_t)1 << bits,
                        room,
                        grid->had_bits ? room : 0,
                        nbi_ranked_words(room),
                        room,
                        hist,
                        nbi_ranked_span_room(room)};
    const bool grown = nbi_grid_grow(grid, need, true);
    nbi_grid_view_refresh(grid); // the buffers may have moved
    return grown ? NB_OK : NB_ERR_OUT_OF_MEMORY;
}

int32_t nb_grid_count(const nbGrid *grid)
{
    return grid == NULL ? 0 : grid->n;
}

// Pass 1: every coordinate finite; bounding box and max |coordinate|. `step` is the distance
// between points in doubles; `dim` and `step` are constants at each call site, so the loop is
// specialised (and vectorised) per layout. Finiteness is checked without branches:
// v * 0.0 is 0 for finite v and NaN for NaN or infinity, and NaN survives the sum.
NBI_INLINE bool nbi_scan_layout(const double *data, size_t step, int32_t n, int dim, double mn[3],
                                double mx[3])
{
    double lo[3] = {data[0], data[1], dim == 3 ? data[2] : 0.0};
    double hi[3] = {lo[0], lo[1], lo[2]};
    double nan_if_bad[3] = {0.0, 0.0, 0.0};
    for (int32_t i = 0; i < n; i++) {
        for (int a = 0; a < dim; a++) {
            const double v = data[(size_t)i * step + (size_t)a];
            nan_if_bad[a] = nan_if_bad[a] + v * 0.0;
            lo[a] = v < lo[a] ? v : lo[a];
            hi[a] = v > hi[a] ? v : hi[a];
        }
    }
    for (int a = 0; a < 3; a++) {
        mn[a] = a < dim ? lo[a] : 0.0;
        mx[a] = a < dim ? hi[a] : 0.0;
    }
    return nan_if_bad[0] == 0.0 && nan_if_bad[1] == 0.0 && nan_if_bad[2] == 0.0;
}

// Pass 2 (dense): each point's cell number, counted into start[(cell >> shift) + 2] (shift 0
// but in a ranked build, which counts 64-cell words).
NBI_INLINE void nbi_count_dense(const double *data, size_t step, int32_t n, int dim,
                                const nbiCellMath *cm, const int64_t lo[3], const int64_t ext[3],
                                int32_t *cell_of, int32_t *start, int shift)
{
    const int64_t e0 = ext[0], e01 = ext[0] * ext[1];
    for (int32_t i = 0; i < n; i++) {
        const double *q = data + (size_t)i * step;
        int64_t c = (nbi_cell_i(cm, q[0]) - lo[0]) + e0 * (nbi_cell_i(cm, q[1]) - lo[1]);
        if (dim == 3) c += e01 * (nbi_cell_i(cm, q[2]) - lo[2]);
        cell_of[i] = (int32_t)c;
        start[(c >> shift) + 2]++;
    }
}

#if defined(__SSE2__)
// The cells of x and y (lanes 0 and 1) as 32-bit integers: one division by the cell (`by`; a
// multiplication by its inverse when pow2) and one truncation for both, and floor as the
// truncation stepped down where it rounded up, the rule of nbi_floor_i64. The quotients are
// the scalar ones (IEEE division is exact-rounded in either width). A quotient beyond the
// 32-bit range, or NaN, gives INT32_MIN (or INT32_MAX once stepped down).
NBI_INLINE __m128i nbi_floor_xy(__m128d v, __m128d by, bool pow2)
{
    const __m128d f = pow2 ? _mm_mul_pd(v, by) : _mm_div_pd(v, by);
    const __m128i t = _mm_cvttpd_epi32(f);
    const __m128d up = _mm_cmpgt_pd(_mm_cvtepi32_pd(t), f);
    return _mm_add_epi32(t, _mm_shuffle_epi32(_mm_castpd_si128(up), _MM_SHUFFLE(3, 3, 2, 0)));
}

// Counting a cell is a cache miss in random input order once the cells outgrow the caches.
// The packed count passes count each point NBI_HASH_AHEAD points late: point i's counter is
// prefetched as soon as its cell is known, and point i - NBI_HASH_AHEAD's is incremented.
// Cell c is counted in counts[c >> shift]: 0 but in a ranked build, which counts 64-cell words.
NBI_INLINE void nbi_count_lagged(const int32_t *cell_of, int32_t *counts, int shift, int64_t c,
                                 int32_t i)
{
    nbi_prefetch_w(counts + (c >> shift));
    if (i >= NBI_HASH_AHEAD) counts[cell_of[i - NBI_HASH_AHEAD] >> shift]++;
}

// The last NBI_HASH_AHEAD points' counts.
NBI_INLINE void nbi_count_lagged_end(const int32_t *cell_of, int32_t *counts, int shift, int32_t n)
{
    for (int32_t i = n > NBI_HASH_AHEAD ? n - NBI_HASH_AHEAD : 0; i < n; i++)
        counts[cell_of[i] >> shift]++;
}

// Every cell number of the box [lo, hi] fits a 32-bit lane, with room: a quotient beyond the
// lanes' range truncates to INT32_MIN, which then can never pass for a cell of the box.
bool nbi_cells_fit_i32(const int64_t lo[3], const int64_t hi[3])
{
    for (int a = 0; a < 3; a++)
        if (lo[a] <= -0x40000000 || hi[a] >= 0x40000000) return false;
    return true;
}

// The cell numbers of packed points whose cells all have 32-bit numbers on every axis (the
// caller checks lo and hi, nbi_cells_fit_i32): x and y through nbi_floor_xy, z in 3D by the
// scalar path; every cell number is the scalar pass's.
typedef struct nbiPackedCells {
    __m128d by;
    bool pow2;
    int32_t e0, e01;
    __m128i lo01;
    int64_t lo2;
    const nbiCellMath *cm;
} nbiPackedCells;

NBI_INLINE nbiPackedCells nbi_packed_cells(const nbiCellMath *cm, const int64_t lo[3],
                                           const int64_t ext[3])
{
    const nbiPackedCells pc = {_mm_set1_pd(cm->pow2 ? cm->inv : cm->cell),
                               cm->pow2,
                               (int32_t)ext[0],
                               (int32_t)(ext[0] * ext[1]),
                               _mm_set_epi32(0, 0, (int32_t)lo[1], (int32_t)lo[0]),
                               lo[2],
                               cm};
    return pc;
}

NBI_INLINE int32_t nbi_packed_cell(const nbiPackedCells *pc, const double *q, int dim)
{
    const __m128i t = _mm_sub_epi32(nbi_floor_xy(_mm_loadu_pd(q), pc->by, pc->pow2), pc->lo01);
    int32_t c = _mm_cvtsi128_si32(t) + pc->e0 * _mm_cvtsi128_si32(_mm_srli_si128(t, 4));
    if (dim == 3) c += pc->e01 * (int32_t)(nbi_cell_i(pc->cm, q[2]) - pc->lo2);
    return c;
}

#if defined(NBI_AVX512)
// ---- cells eight points at a time (AVX-512, where the CPU has it: simd.h) ----
//
// A division per coordinate bounds the two-lane cell pass (a vector divider is no faster per
// lane), so this one multiplies by the cell's reciprocal, and keeps floor(y) only where it must
// equal floor(x / cell) in IEEE double: with y = x * fl(1 / cell), both y and fl(x / cell) lie
// within 3.02 u |x / cell| of x / cell (u = 2^-53: two roundings against one), so within 4 u |y|
// of each other, and their floors differ only if an integer lies within that of y. A lane whose
// y is farther than (|y| + 1) 2^-50 from both neighbouring integers (the `+ 1` covers the
// rounding of y - floor(y) and of 1 - tol) keeps floor(y); any other lane (an integer quotient,
// a coordinate on a cell's edge or an ulp off it, zero, NaN, infinity) divides. On random data
// no lane does. So every cell is nbi_cell_f's. (The bound needs fl(1 / cell) to be a normal
// double; the callers pass NaN for inv otherwise, and every lane divides.)
NBI_TARGET_AVX512 static inline __m512d nbi_floor8(__m512d v, __m512d inv, __m512d by)
{
    enum { floor_mode = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC };
    const __m512d one = _mm512_set1_pd(1.0);
    const __m512d q = _mm512_mul_pd(v, inv), f = _mm512_roundscale_pd(q, floor_mode);
    const __m512d tol =
        _mm512_mul_pd(_mm512_add_pd(_mm512_abs_pd(q), one), _mm512_set1_pd(0x1p-50));
    const __m512d r = _mm512_sub_pd(q, f);
    const __mmask8 ok = _mm512_cmp_pd_mask(r, tol, _CMP_GT_OQ) &
                        _mm512_cmp_pd_mask(r, _mm512_sub_pd(one, tol), _CMP_LT_OQ);
    if (ok == 0xFF) return f;
    return _mm512_mask_roundscale_pd(f, (__mmask8)~ok, _mm512_div_pd(v, by), floor_mode);
}

// The reciprocal nbi_floor8 multiplies by for cell math m: NaN (every lane divides) when
// fl(1 / cell) is below DBL_MIN (a cell past 2^1022), whose bits are lost.
NBI_TARGET_AVX512 static inline __m512d nbi_floor8_inv(const nbiCellMath *m)
{
    const double iv = m->pow2 ? m->inv : 1.0 / m->cell;
    return _mm512_set1_pd(iv >= DBL_MIN ? iv : (double)NAN);
}

// Packed points i .. i + 7 of n (2D or 3D) split by axis into v, after prefetching the 2 or 3
// lines of the points NBI_STREAM_AHEAD on.
NBI_TARGET_AVX512 static inline void nbi_load8(const double *data, int32_t i, int32_t n, int dim,
                                               __m512d v[3])
{
    const double *q = data + (size_t)i * (size_t)dim;
    if (i + NBI_STREAM_AHEAD + 8 <= n) {
        const double *ahead = q + (size_t)NBI_STREAM_AHEAD * (size_t)dim;
        nbi_prefetch(ahead);
        nbi_prefetch(ahead + 8);
        if (dim == 3) nbi_prefetch(ahead + 16);
    }
    const __m512d a = _mm512_loadu_pd(q), b = _mm512_loadu_pd(q + 8);
    nbi_split8(dim, a, b, dim == 3 ? _mm512_loadu_pd(q + 16) : a, v);
}

// The first of nbi_count_packed_dim's, nbi_scan_count_packed's and nbi_count_wrapped's points,
// eight at a time: points [0, n - n % 8) of packed 2D or 3D points. Returns how many it took;
// the caller goes on from there, counting lagged as before, so every cell and count is the
// two-lane (or scalar) pass's. Each cell goes to cell_of and is counted (nbi_count_lagged) in
// counts; a cell outside the box [lo, lo + ext) on any axis (any quotient beyond 32 bits
// converts to INT32_MIN) is -1, counted at counts[-1]. `wrap` (periodic grids, else NULL): a
// periodic axis takes its own cell math, its last cell holds what rounds up to the period and
// its cells are numbered from the arc's first, as nbi_view_axis_cell has it (m below 2^31). `scan`
// (nbi_scan_count_packed): also the points' box into mn and mx and the sum of every coordinate
// times zero into *bad (NaN when any is not finite).
NBI_TARGET_AVX512 static inline int32_t
nbi_cells8_dim(const double *data, int32_t n, int dim, bool scan, const nbiCellMath *cm,
               const nbiWrap *wrap, const int64_t lo[3], const int64_t ext[3], int32_t *cell_of,
               int32_t *counts, int shift, double mn[3], double mx[3], double *bad)
{
    const __m512d zero = _mm512_setzero_pd();
    __m512d inv[3], by[3];
    __m256i lo8[3], ext8[3], top[3], mod8[3];
    for (int a = 0; a < 3; a++) {
        const bool p = wrap != NULL && wrap->m[a] > 0;
        const nbiCellMath *m = p ? &wrap->pcm[a] : cm;
        inv[a] = nbi_floor8_inv(m);
        by[a] = _mm512_set1_pd(m->cell);
        top[a] = _mm256_set1_epi32(p ? (int32_t)(wrap->m[a] - 1) : INT32_MAX);
        lo8[a] = _mm256_set1_epi32((int32_t)(p ? wrap->c0[a] : lo[a])); // lo = 0 when periodic
        ext8[a] = _mm256_set1_epi32((int32_t)ext[a]);
        mod8[a] = _mm256_set1_epi32(p ? (int32_t)wrap->m[a] : 0);
    }
    const __m256i e01 = _mm256_set1_epi32((int32_t)(ext[0] * ext[1])), none = _mm256_set1_epi32(-1);
    __m512d vlo[3], vhi[3], sum = zero;
    for (int a = 0; a < 3; a++) {
        vlo[a] = _mm512_set1_pd((double)INFINITY);
        vhi[a] = _mm512_set1_pd(-(double)INFINITY);
    }
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d v[3];
        nbi_load8(data, i, n, dim, v);
        __mmask8 in = 0xFF;
        __m256i cell = _mm256_setzero_si256();
        for (int d = dim - 1; d >= 0; d--) {
            if (scan) {
                vlo[d] = _mm512_min_pd(v[d], vlo[d]);
                vhi[d] = _mm512_max_pd(v[d], vhi[d]);
                sum = _mm512_add_pd(sum, _mm512_mul_pd(v[d], zero));
            }
            const __m256i f = _mm512_cvtpd_epi32(nbi_floor8(v[d], inv[d], by[d]));
            __m256i k = _mm256_sub_epi32(_mm256_min_epi32(f, top[d]), lo8[d]);
            k = _mm256_add_epi32(k, _mm256_and_si256(_mm256_srai_epi32(k, 31), mod8[d])); // c0
            in &= _mm256_cmplt_epu32_mask(k, ext8[d]);
            cell = d == 2   ? _mm256_mullo_epi32(k, e01)
                   : d == 1 ? _mm256_add_epi32(cell, _mm256_mullo_epi32(k, ext8[0]))
                            : _mm256_add_epi32(cell, k);
        }
        _mm256_storeu_si256((__m256i *)(cell_of + i), _mm256_mask_mov_epi32(none, in, cell));
        for (int32_t k = i; k < i + 8; k++) nbi_count_lagged(cell_of, counts, shift, cell_of[k], k);
    }
    if (scan) {
        for (int a = 0; a < dim; a++) {
            mn[a] = _mm512_reduce_min_pd(vlo[a]);
            mx[a] = _mm512_reduce_max_pd(vhi[a]);
        }
        *bad = _mm512_reduce_add_pd(sum);
    }
    return i;
}

NBI_TARGET_AVX512 static int32_t nbi_cells8(const double *data, int32_t n, int dim, bool scan,
                                            const nbiCellMath *cm, const nbiWrap *wrap,
                                            const int64_t lo[3], const int64_t ext[3],
                                            int32_t *cell_of, int32_t *counts, int shift,
                                            double mn[3], double mx[3], double *bad)
{
    if (dim == 2)
        return scan ? nbi_cells8_dim(data, n, 2, true, cm, wrap, lo, ext, cell_of, counts, shift,
                                     mn, mx, bad)
                    : nbi_cells8_dim(data, n, 2, false, cm, wrap, lo, ext, cell_of, counts, shift,
                                     mn, mx, bad);
    return scan ? nbi_cells8_dim(data, n, 3, true, cm, wrap, lo, ext, cell_of, counts, shift, mn,
                                 mx, bad)
                : nbi_cells8_dim(data, n, 3, false, cm, wrap, lo, ext, cell_of, counts, shift, mn,
                                 mx, bad);
}
#endif

// Pass 2 for packed points whose cells have 32-bit numbers: cell c is counted in
// counts[c >> shift]. The serial build, each chunk of the parallel one and a ranked build run it.
NBI_INLINE void nbi_count_packed_dim(const double *data, int32_t n, int dim, const nbiCellMath *cm,
                                     const int64_t lo[3], const int64_t ext[3], int32_t *cell_of,
                                     int32_t *counts, int shift)
{
    const nbiPackedCells pc = nbi_packed_cells(cm, lo, ext);
    int32_t i = 0;
#if defined(NBI_AVX512)
    if (n >= 8 && nbi_use_avx512())
        i = nbi_cells8(data, n, dim, false, cm, NULL, lo, ext, cell_of, counts, shift, NULL, NULL,
                       NULL);
#endif
    for (; i < n; i++) {
        const int32_t c = nbi_packed_cell(&pc, data + (size_t)i * (size_t)dim, dim);
        cell_of[i] = c;
        nbi_count_lagged(cell_of, counts, shift, c, i);
    }
    nbi_count_lagged_end(cell_of, counts, shift, n);
}

void nbi_count_packed(const double *data, int32_t n, int dim, const nbiCellMath *cm,
                      const int64_t lo[3], const int64_t ext[3], int32_t *cell_of, int32_t *counts,
                      int shift)
{
    if (dim == 2)
        nbi_count_packed_dim(data, n, 2, cm, lo, ext, cell_of, counts, shift);
    else
        nbi_count_packed_dim(data, n, 3, cm, lo, ext, cell_of, counts, shift);
}

// ---- large builds: the counting sort in two cache-sized passes ----
//
// Past the caches, every point of a one-pass build costs a DRAM miss in the count, two in the
// scatter (counter and destination) and one in the gather (the source), however far ahead they
// are prefetched. A large dense build of packed points sorts as a two-pass radix sort does.
// Blocks are runs of 2^shift consecutive cell numbers, about NBI_BLOCK_POINTS points each:
//   A. the points of each block counted (a table the caches hold);
//   B. each point's coordinates and index dealt, in input order, to its block's positions: one
//      write stream per block, each a cached line at a time (the cells are computed again
//      rather than kept from A: cell_of would add 8 bytes of traffic a point, and its pages);
//   C. block by block, the block's positions copied into scratch and dealt from there to their
//      cells: counters, scratch and destination all fit the caches.
// Both passes keep the input order, so every cell's points come in input order, and the layout
// is exactly a one-pass build's. A parallel build (grid_parallel.c) runs A and B per chunk of
// points, each chunk with its own row of block counts (chunk 0's points first in every block,
// then chunk 1's, as in one pass), and C per run of blocks, each run with its own scratch.
// Everything lives in the hist buffer (nbiBlocks). A block of more than NBI_BLOCK_MOST points
// (clustered data) sends the build back to one pass.
enum { NBI_BLOCK_POINTS = 8192, NBI_BLOCK_MOST = 2 * NBI_BLOCK_POINTS };

// The shift that makes a block of 2^shift cells hold about NBI_BLOCK_POINTS points on average
// (and no more cells than there are).
static int nbi_block_shift(int32_t ncells, int32_t n)
{
    int shift = 0;
    while (shift < 30 && ((int64_t)1 << (shift + 1)) <= ncells &&
           ((int64_t)n << (shift + 1)) <= (int64_t)NBI_BLOCK_POINTS * ncells)
        shift++;
    return shift;
}

// One scratch area, in int32_t entries: NBI_BLOCK_MOST points (dim doubles), their indices and
// cells, a counter per cell of a block; even, so that every area's doubles are aligned.
static size_t nbi_block_area(int shift, int dim)
{
    const size_t area = (size_t)NBI_BLOCK_MOST * (2 * (size_t)dim + 2) + ((size_t)1 << shift);
    return area + (area & 1);
}

// hist holds: chunks rows of block counts, the blocks' first positions (one more entry), padding
// to an even offset, then chunks scratch areas.
static size_t nbi_block_table(int32_t nblocks, int32_t chunks)
{
    const size_t t = (size_t)chunks * (size_t)nblocks + (size_t)nblocks + 1;
    return t + (t & 1);
}

uint64_t nbi_blocks_hist(int32_t n, int dim, int32_t chunks)
{
    // Blocks: either ncells / 2^shift < 2 n / NBI_BLOCK_POINTS (shift as large as the points
    // allow) or 2^(shift + 1) > ncells (at most 2 blocks). A block's cells, 2^shift: at most
    // ncells <= NBI_DENSE_CELLS_PER_POINT n + NBI_DENSE_MIN_CELLS, and at most NBI_BLOCK_POINTS
    // ncells / n; whichever n is, one of the two is at most NBI_BLOCK_POINTS
    // NBI_DENSE_CELLS_PER_POINT + NBI_DENSE_MIN_CELLS. So the need grows with n alone.
    const int32_t nblocks = (int32_t)(2 * (int64_t)n / NBI_BLOCK_POINTS + 2);
    const uint64_t span =
        (uint64_t)NBI_BLOCK_POINTS * NBI_DENSE_CELLS_PER_POINT + NBI_DENSE_MIN_CELLS;
    const uint64_t area = (uint64_t)NBI_BLOCK_MOST * (2 * (uint64_t)dim + 2) + span + 1;
    return nbi_block_table(nblocks, chunks) + (uint64_t)chunks * area;
}

nbiBlocks nbi_blocks_plan(nbGrid *g, int32_t n, int32_t chunks)
{
    nbiBlocks b;
    b.shift = nbi_block_shift(g->ncells, n);
    b.nblocks = ((g->ncells - 1) >> b.shift) + 1;
    b.chunks = chunks;
    b.counts = (int32_t *)g->hist.ptr;
    b.first = b.counts + (size_t)chunks * (size_t)b.nblocks;
    b.scratch = b.counts + nbi_block_table(b.nblocks, chunks);
    b.area = nbi_block_area(b.shift, g->dim);
    return b;
}

NBI_INLINE void nbi_copy_point(double *to, const double *from, int dim)
{
    _mm_storeu_pd(to, _mm_loadu_pd(from));
    if (dim == 3) to[2] = from[2];
}

NBI_INLINE void nbi_blocks_count_dim(const nbGrid *g, const double *data, int dim,
                                     const nbiBlocks *b, int32_t *counts, int32_t i0, int32_t i1)
{
    const nbiPackedCells pc = nbi_packed_cells(&g->cm, g->lo, g->ext);
    memset(counts, 0, (size_t)b->nblocks * sizeof(int32_t));
    for (int32_t i = i0; i < i1; i++)
        counts[nbi_packed_cell(&pc, data + (size_t)i * dim, dim) >> b->shift]++;
}

void nbi_blocks_count(const nbGrid *g, const double *data, const nbiBlocks *b, int32_t k,
                      int32_t i0, int32_t i1)
{
    int32_t *counts = b->counts + (size_t)k * (size_t)b->nblocks;
    if (g->dim == 2)
        nbi_blocks_count_dim(g, data, 2, b, counts, i0, i1);
    else
        nbi_blocks_count_dim(g, data, 3, b, counts, i0, i1);
}

bool nbi_blocks_offsets(const nbiBlocks *b)
{
    int32_t at = 0;
    for (int32_t j = 0; j < b->nblocks; j++) {
        b->first[j] = at;
        for (int32_t k = 0; k < b->chunks; k++) {
            int32_t *count = b->counts + (size_t)k * (size_t)b->nblocks + j;
            const int32_t m = *count;
            *count = at; // chunk k's cursor in block j
            at += m;
        }
        if (at - b->first[j] > NBI_BLOCK_MOST) return false;
    }
    b->first[b->nblocks] = at;
    return true;
}

NBI_INLINE void nbi_blocks_deal_dim(const nbGrid *g, const double *data, int dim, int shift,
                                    int32_t *cursor, int32_t i0, int32_t i1)
{
    const nbiPackedCells pc = nbi_packed_cells(&g->cm, g->lo, g->ext);
    int32_t *idx = (int32_t *)g->idx.ptr;
    double *pts = (double *)g->pts.ptr;
    for (int32_t i = i0; i < i1; i++) {
        const double *q = data + (size_t)i * dim;
        const int32_t p = cursor[nbi_packed_cell(&pc, q, dim) >> shift]++;
        nbi_copy_point(pts + (size_t)p * dim, q, dim);
        idx[p] = i;
    }
}

void nbi_blocks_deal(const nbGrid *g, const double *data, const nbiBlocks *b, int32_t k, int32_t i0,
                     int32_t i1)
{
    int32_t *cursor = b->counts + (size_t)k * (size_t)b->nblocks;
    if (g->dim == 2)
        nbi_blocks_deal_dim(g, data, 2, b->shift, cursor, i0, i1);
    else
        nbi_blocks_deal_dim(g, data, 3, b->shift, cursor, i0, i1);
}

// Pass C for blocks [j0, j1) through scratch area `area`. Each block's cells get their first
// positions in start.
NBI_INLINE void nbi_blocks_sort_dim(const nbGrid *g, int dim, const nbiBlocks *b, int32_t j0,
                                    int32_t j1, int32_t area)
{
    const nbiPackedCells pc = nbi_packed_cells(&g->cm, g->lo, g->ext);
    int32_t *start = (int32_t *)g->start.ptr, *idx = (int32_t *)g->idx.ptr;
    double *pts = (double *)g->pts.ptr;
    const int32_t ncells = g->ncells, span = (int32_t)1 << b->shift;
    int32_t *s_idx = b->scratch + (size_t)area * b->area, *s_cell = s_idx + NBI_BLOCK_MOST;
    int32_t *next = s_cell + NBI_BLOCK_MOST;
    double *s_pts = (double *)(void *)(next + span + (span & 1)); // areas start even
    for (int32_t j = j0; j < j1; j++) {
        const int32_t p0 = b->first[j], m = b->first[j + 1] - p0;
        const int32_t c0 = j << b->shift, cells = ncells - c0 < span ? ncells - c0 : span;
        memcpy(s_pts, pts + (size_t)p0 * dim, (size_t)m * dim * sizeof(double));
        memcpy(s_idx, idx + p0, (size_t)m * sizeof(int32_t));
        memset(next, 0, (size_t)cells * sizeof(int32_t));
        for (int32_t k = 0; k < m; k++) {
            const int32_t c = nbi_packed_cell(&pc, s_pts + (size_t)k * dim, dim) - c0;
            s_cell[k] = c;
            next[c]++;
        }
        int32_t p = p0;
        for (int32_t c = 0; c < cells; c++) {
            const int32_t count = next[c];
            start[c0 + c] = next[c] = p;
            p += count;
        }
        for (int32_t k = 0; k < m; k++) {
            const int32_t to = next[s_cell[k]]++;
            nbi_copy_point(pts + (size_t)to * dim, s_pts + (size_t)k * dim, dim);
            idx[to] = s_idx[k];
        }
    }
}

void nbi_blocks_sort(nbGrid *g, const nbiBlocks *b, int32_t j0, int32_t j1, int32_t area)
{
    if (g->dim == 2)
        nbi_blocks_sort_dim(g, 2, b, j0, j1, area);
    else
        nbi_blocks_sort_dim(g, 3, b, j0, j1, area);
    if (j1 == b->nblocks) {
        int32_t *start = (int32_t *)g->start.ptr;
        start[g->ncells] = start[g->ncells + 1] = b->first[b->nblocks];
    }
}

// Passes 2 to 4 of a serial dense build of packed points, blocked. Returns false when a block
// holds more than NBI_BLOCK_MOST points; then only hist has changed.
static bool nbi_build_blocked(nbGrid *g, const double *data, int32_t n)
{
    const nbiBlocks b = nbi_blocks_plan(g, n, 1);
    nbi_blocks_count(g, data, &b, 0, 0, n);
    if (!nbi_blocks_offsets(&b)) return false;
    nbi_blocks_deal(g, data, &b, 0, 0, n);
    nbi_blocks_sort(g, &b, 0, b.nblocks, 0);
    g->cells_kept = false;
    return true;
}
#endif

#if defined(__SSE2__)
// Passes 1 and 2 in one read, for a rebuild that keeps the last build's cells (see
// nbi_grid_rebuild): each point's coordinates go into the box and the finiteness sum as in
// nbi_scan_packed, and its cell, under the last build's cell math and box, is counted into
// counts[cell + 2]. The pass does not check that each point lies in that box: the caller
// checks the box of all of them afterwards. A point outside it only needs to stay inside the
// arrays, so a cell number outside [0, ncells) is counted at counts[1], which the caller then
// never reads. Returns false if any coordinate is not finite.
// (nbi_count_lagged counts cell c at counts[c]: hence counts + 2 below, where c = -1 is
// counts[1].)
NBI_INLINE bool nbi_scan_count_packed(const double *data, int32_t n, int dim, const nbiCellMath *cm,
                                      const int64_t lo[3], const int64_t ext[3], int32_t ncells,
                                      int32_t *cell_of, int32_t *counts, double mn[3], double mx[3])
{
    const __m128d by = _mm_set1_pd(cm->pow2 ? cm->inv : cm->cell), zero = _mm_setzero_pd();
    const bool pow2 = cm->pow2;
    const int64_t e0 = ext[0], e01 = ext[0] * ext[1];
    const int64_t base = -(lo[0] + e0 * lo[1] + (dim == 3 ? e01 * lo[2] : 0));
    __m128d vlo = _mm_loadu_pd(data), vhi = vlo, bad = zero;
    double zlo = dim == 3 ? data[2] : 0.0, zhi = zlo, zbad = 0.0;
    int32_t i = 0;
#if defined(NBI_AVX512)
    if (n >= 8 && nbi_use_avx512()) {
        double m8[3], x8[3];
        i = nbi_cells8(data, n, dim, true, cm, NULL, lo, ext, cell_of, counts + 2, 0, m8, x8,
                       &zbad);
        vlo = _mm_loadu_pd(m8);
        vhi = _mm_loadu_pd(x8);
        if (dim == 3) {
            zlo = m8[2];
            zhi = x8[2];
        }
    }
#endif
    for (; i < n; i++) {
        const double *q = data + (size_t)i * (size_t)dim;
        const __m128d v = _mm_loadu_pd(q);
        vlo = _mm_min_pd(v, vlo);
        vhi = _mm_max_pd(v, vhi);
        bad = _mm_add_pd(bad, _mm_mul_pd(v, zero));
        const __m128i t = nbi_floor_xy(v, by, pow2);
        // In unsigned arithmetic: a point outside the box may wrap around (harmless: its cell is
        // out of range or, if not, the box check discards the count); one inside gets its cell.
        uint64_t c = (uint64_t)base + (uint64_t)(int64_t)_mm_cvtsi128_si32(t) +
                     (uint64_t)e0 * (uint64_t)(int64_t)_mm_cvtsi128_si32(_mm_srli_si128(t, 4));
        if (dim == 3) {
            const double z = q[2];
            zlo = z < zlo ? z : zlo;
            zhi = z > zhi ? z : zhi;
            zbad = zbad + z * 0.0;
            const double fz = pow2 ? z * cm->inv : z / cm->cell;
            // kept within the 64-bit floor's range; a cell that far is outside the box anyway
            c += (uint64_t)e01 * (uint64_t)nbi_floor_i64(fz > -0x1p40 && fz < 0x1p40 ? fz : 0x1p40);
        }
        const int64_t cell = c < (uint64_t)ncells ? (int64_t)c : -1;
        cell_of[i] = (int32_t)cell;
        nbi_count_lagged(cell_of, counts + 2, 0, cell, i);
    }
    nbi_count_lagged_end(cell_of, counts + 2, 0, n);
    double b[2];
    _mm_storeu_pd(mn, vlo);
    _mm_storeu_pd(mx, vhi);
    _mm_storeu_pd(b, bad);
    mn[2] = zlo;
    mx[2] = zhi;
    return b[0] == 0.0 && b[1] == 0.0 && zbad == 0.0;
}
#endif

// Pass 4: scatter the indices in input order, so they ascend within each cell; then (pass 4b,
// nbi_grid_gather) copy each position's coordinates from the caller's array. Scattering 4-byte
// indices and reading the coordinates in position order moves less memory than scattering the
// coordinates themselves (random writes cost a read and a write-back of a whole line each).
//
// In random input order each point's counter and destination are cache misses once the cells
// outgrow the caches, so the loop prefetches ahead: the counter NBI_HASH_AHEAD * 2 points
// ahead, and the destination (by the counter's value now, usually still right) NBI_HASH_AHEAD
// ahead, so that the misses overlap.
void nbi_grid_scatter(const int32_t *cell_of, int32_t *next, int32_t a, int32_t b, int32_t *idx)
{
    const int32_t far = 2 * NBI_HASH_AHEAD, near = NBI_HASH_AHEAD;
    int32_t i = a;
    for (; i + far < b; i++) {
        nbi_prefetch_w(next + cell_of[i + far]);
        nbi_prefetch_w(idx + next[cell_of[i + near]]);
        idx[next[cell_of[i]]++] = i;
    }
    for (; i < b; i++) idx[next[cell_of[i]]++] = i;
}

NBI_INLINE void nbi_gather_layout(const double *data, size_t step, int32_t p0, int dim, int32_t p1,
                                  const int32_t *idx, double *pts)
{
#if defined(__SSE2__)
    if (step == (size_t)dim) { // x and y move as one two-lane load and store
        for (int32_t p = p0; p < p1; p++) {
            // the point NBI_HASH_AHEAD positions on: a cache miss in random input order
            if (p + NBI_HASH_AHEAD < p1)
                nbi_prefetch(data + (size_t)idx[p + NBI_HASH_AHEAD] * step);
            const double *q = data + (size_t)idx[p] * step;
            _mm_storeu_pd(pts + (size_t)p * (size_t)dim, _mm_loadu_pd(q));
            if (dim == 3) pts[(size_t)p * 3 + 2] = q[2];
        }
        return;
    }
#endif
    for (int32_t p = p0; p < p1; p++) {
        const double *q = data + (size_t)idx[p] * step;
        for (int a = 0; a < dim; a++) pts[(size_t)p * (size_t)dim + (size_t)a] = q[a];
    }
}

// Calls F(data, step, n, DIM, ...) with dim and, for packed points, step as constants.
#define NBI_BY_LAYOUT(F, data, step, n, dim, ...)                                                  \
    do {                                                                                           \
        if ((dim) == 2 && (step) == 2)                                                             \
            F(data, 2, n, 2, __VA_ARGS__);                                                         \
        else if ((dim) == 3 && (step) == 3)                                                        \
            F(data, 3, n, 3, __VA_ARGS__);                                                         \
        else if ((dim) == 2)                                                                       \
            F(data, step, n, 2, __VA_ARGS__);                                                      \
        else                                                                                       \
            F(data, step, n, 3, __VA_ARGS__);                                                      \
    } while (0)

#if defined(__SSE2__)
// Pass 1 for packed points (step == dim), two lanes at a time: the n * dim doubles are read as
// blocks of four points, 2 * dim vectors, and vector k of a block always holds the axes
// (2k) % dim and (2k + 1) % dim, so each vector keeps its own running min, max and NaN sum and
// the lanes are folded into axes at the end. minpd(v, lo) is `v < lo ? v : lo`, the scalar
// rule, so the box is the same (up to which of -0.0 and 0.0 an extreme of zero keeps, which no
// cell number sees).
static bool nbi_scan_packed(const double *data, int32_t n, int dim, double mn[3], double mx[3])
{
    const int nv = 2 * dim;
    __m128d lo[6], hi[6], bad[6];
    const __m128d zero = _mm_setzero_pd();
    for (int k = 0; k < nv; k++) {
        const double a = data[(2 * k) % dim], b = data[(2 * k + 1) % dim];
        lo[k] = hi[k] = _mm_set_pd(b, a);
        bad[k] = zero;
    }
    const int32_t blocks = n / 4;
    for (int32_t i = 0; i < blocks; i++) {
        const double *q = data + (size_t)i * 4 * (size_t)dim;
        for (int k = 0; k < nv; k++) {
            const __m128d v = _mm_loadu_pd(q + 2 * k);
            lo[k] = _mm_min_pd(v, lo[k]);
            hi[k] = _mm_max_pd(v, hi[k]);
            bad[k] = _mm_add_pd(bad[k], _mm_mul_pd(v, zero));
        }
    }
    double l[12], h[12], b[12];
    for (int k = 0; k < nv; k++) {
        _mm_storeu_pd(l + 2 * k, lo[k]);
        _mm_storeu_pd(h + 2 * k, hi[k]);
        _mm_storeu_pd(b + 2 * k, bad[k]);
    }
    // The last n % 4 points by the scalar pass; its box seeds the fold (else the first point).
    const int32_t rest = n - blocks * 4;
    double tl[3] = {data[0], data[1], dim == 3 ? data[2] : 0.0}, th[3] = {tl[0], tl[1], tl[2]};
    const bool tail_ok = rest == 0 || nbi_scan_layout(data + (size_t)blocks * 4 * (size_t)dim,
                                                      (size_t)dim, rest, dim, tl, th);
    for (int a = 0; a < 3; a++) {
        mn[a] = a < dim ? tl[a] : 0.0;
        mx[a] = a < dim ? th[a] : 0.0;
    }
    double nan_if_bad = 0.0;
    for (int e = 0; e < 2 * nv; e++) {
        const int a = e % dim;
        mn[a] = l[e] < mn[a] ? l[e] : mn[a];
        mx[a] = h[e] > mx[a] ? h[e] : mx[a];
        nan_if_bad += b[e];
    }
    return tail_ok && nan_if_bad == 0.0;
}
#endif

bool nbi_grid_scan(const double *data, size_t step, int32_t n, int dim, double mn[3], double mx[3])
{
#if defined(__SSE2__)
    if (step == (size_t)dim && n >= 4) return nbi_scan_packed(data, n, dim, mn, mx);
#endif
    bool ok = true;
#define NBI_SCAN(d, st, nn, dm, a, b) ok = nbi_scan_layout(d, st, nn, dm, a, b)
    NBI_BY_LAYOUT(NBI_SCAN, data, step, n, dim, mn, mx);
#undef NBI_SCAN
    return ok;
}

// A filter-bits view of the caller's points: the uint32_t at byte i * stride from base.
NBI_INLINE uint32_t nbi_bits_at(const uint32_t *base, size_t stride, int32_t i)
{
    return *(const uint32_t *)(const void *)((const char *)base + (size_t)i * stride);
}

// Checks an optional filter array's stride and alignment; *stride gets the effective stride.
static bool nbi_bits_layout(const uint32_t *base, size_t given, size_t *stride)
{
    *stride = given == 0 ? sizeof(uint32_t) : given;
    return base == NULL ||
           (*stride % sizeof(uint32_t) == 0 && (uintptr_t)base % sizeof(uint32_t) == 0);
}

// ---- periodic boxes (grid.h) ----

// The occupied arc of each periodic axis, as coordinates: every point's x lies on the arc from
// from[a] up to to[a] (past P and round to 0 when from[a] > to[a]), and none in the gap between
// to[a] and from[a], the largest gap found between the points around the circle; whole[a] when
// there is none worth keeping. One pass over the points into bins of P / B (B <= NBI_ARC_BINS)
// keeping each bin's least and greatest x: the largest gap between the points of two
// consecutive occupied bins is exact (a gap within one bin, under P / B, is not sought). The
// pass stops once every bin of every periodic axis is occupied (data filling the circle: a few
// thousand points), and then there is no gap of two bins.
enum { NBI_ARC_BINS = 512 };

static void nbi_wrap_arcs(const nbiWrap *w, int dim, const nbiBuildIn *in, double from[3],
                          double to[3], bool whole[3])
{
    double least[3][NBI_ARC_BINS], most[3][NBI_ARC_BINS], scale[3] = {0, 0, 0};
    const int32_t n = in->n, bins = n < NBI_ARC_BINS / 2 ? 2 * n : NBI_ARC_BINS;
    int32_t open[3] = {0, 0, 0}, open_axes = 0;
    for (int a = 0; a < 3; a++) {
        whole[a] = true;
        from[a] = to[a] = 0.0;
        if (a >= dim || !(w->period[a] > 0.0) || n == 0) continue;
        scale[a] = (double)bins / w->period[a];
        open[a] = bins;
        open_axes++;
        for (int32_t b = 0; b < bins; b++) {
            least[a][b] = (double)INFINITY;
            most[a][b] = -(double)INFINITY;
        }
    }
    for (int32_t i = 0; i < n && open_axes > 0; i++) {
        const double *q = in->data + (size_t)i * in->step;
        for (int a = 0; a < dim; a++) {
            if (open[a] == 0) continue;
            int32_t b = (int32_t)(q[a] * scale[a]); // q in [0, P): rounds to at most bins
            b = b < bins ? b : bins - 1;
            if (q[a] < least[a][b]) {
                if (least[a][b] == (double)INFINITY && --open[a] == 0) open_axes--;
                least[a][b] = q[a];
            }
            if (q[a] > most[a][b]) most[a][b] = q[a];
        }
    }
    for (int a = 0; a < dim; a++) {
        if (open[a] == 0) continue; // every bin occupied, or not periodic
        double gap = -1.0, prev = 0.0, first = 0.0;
        bool seen = false;
        for (int32_t b = 0; b < bins; b++) {
            if (least[a][b] == (double)INFINITY) continue;
            if (seen && least[a][b] - prev > gap) {
                gap = least[a][b] - prev;
                from[a] = least[a][b];
                to[a] = prev;
            }
            if (!seen) first = least[a][b];
            seen = true;
            prev = most[a][b];
        }
        if (first + w->period[a] - prev > gap) { // the gap round the face of the box
            from[a] = first;
            to[a] = prev;
        }
        whole[a] = false;
    }
}

// The cells of periodic axis a at the layout's edge: m cells round the circle, numbered from
// the occupied arc's first (c0), of which the first ext are the arc's (nbi_wrap_arcs). The cells
// strictly between to's and from's hold no point: the arc is every other cell.
static void nbi_wrap_axis_arc(nbiWrap *w, int a, double from, double to, bool whole, int64_t *ext)
{
    const int64_t m = w->m[a];
    w->c0[a] = 0;
    *ext = m;
    if (whole) return;
    int64_t c0 = nbi_cell_i(&w->pcm[a], from), ce = nbi_cell_i(&w->pcm[a], to);
    c0 = c0 < m ? c0 : m - 1;
    ce = ce < m ? ce : m - 1;
    const int64_t arc = from <= to ? ce - c0 + 1 : m - c0 + ce + 1;
    if (arc >= m) return; // no whole cell in the gap
    w->c0[a] = c0;
    *ext = arc;
}

// The layout of a periodic build. Checks every point is in [0, P) and the build radius at most
// P / 2 on each periodic axis (NB_ERR_OUT_OF_RANGE), then picks the cells: on a periodic axis
// m = max(1, floor(P / pcell)) cells of edge P / m round the circle, one fewer when that saves
// a ring of cells at the build radius, of which the box holds the occupied arc's
// (nbi_wrap_arcs, nbi_wrap_axis_arc); the usual cells of edge `cell` on the others. While the
// box would have more than `limit` cells (the ranked layout's most) both edges double, so that
// memory stays O(points): a periodic grid is dense or ranked, never hashed.
static nbStatus nbi_wrap_layout(const nbGrid *g, const nbiBuildIn *in, const double mn[3],
                                const double mx[3], double radius, double cell, double pcell,
                                double limit, nbiWrap *w, nbiCellMath *cm, int64_t lo[3],
                                int64_t hi[3], int64_t ext[3], double *box_cells)
{
    *w = g->wrap;
    const int32_t n = in->n;
    for (int a = 0; a < g->dim; a++) {
        const double p = w->period[a];
        if (p > 0.0 && (radius > 0.5 * p || (n > 0 && !(mn[a] >= 0.0 && mx[a] < p))))
            return NB_ERR_OUT_OF_RANGE;
    }
    double from[3], to[3];
    bool whole[3];
    nbi_wrap_arcs(w, g->dim, in, from, to, whole);
    const double reach = nbi_reach(radius);
    for (;;) {
        *cm = nbi_cell_math(cell);
        double box = 1.0;
        bool fits = true;
        for (int a = 0; a < 3; a++) {
            lo[a] = hi[a] = 0;
            w->m[a] = w->c0[a] = 0;
            ext[a] = 1;
            if (a < g->dim && w->period[a] > 0.0) {
                const double p = w->period[a];
                double m = floor(p / pcell);
                m = m < 1.0 ? 1.0 : m > 0x1p40 ? 0x1p40 : m;
                if (m > 1.0 && nbi_wrap_rings1(reach, p, p / (m - 1.0), (int64_t)m - 1) <
                                   nbi_wrap_rings1(reach, p, p / m, (int64_t)m))
                    m -= 1.0;
                w->m[a] = (int64_t)m;
                w->pcm[a] = nbi_cell_math(p / m);
                nbi_wrap_axis_arc(w, a, from[a], to[a], whole[a], &ext[a]);
                hi[a] = ext[a] - 1;
            } else if (a < g->dim && n > 0) {
                const double l = nbi_cell_f(cm, mn[a]), h = nbi_cell_f(cm, mx[a]);
                fits &= fabs(l) < NBI_CELL_LIMIT && fabs(h) < NBI_CELL_LIMIT;
                lo[a] = fits ? (int64_t)l : 0;
                hi[a] = fits ? (int64_t)h : 0;
                ext[a] = hi[a] - lo[a] + 1;
            }
            box *= (double)ext[a];
        }
        if (fits && box <= limit) {
            *box_cells = box;
            return NB_OK;
        }
        if (!(cell < DBL_MAX / 2 && pcell < DBL_MAX / 2)) return NB_ERR_OUT_OF_RANGE;
        cell *= 2.0;
        pcell *= 2.0;
    }
}

// Pass 2 of a periodic build: each point's cell number, counted into counts[cell >> shift]
// (shift 0, counts = start + 2; a ranked build counts 64-cell words, shift 6).
static void nbi_count_wrapped(const nbGrid *g, const double *data, size_t step, int32_t n,
                              int32_t *cell_of, int32_t *counts, int shift)
{
    const nbiView v = nbi_grid_wrap_view(g);
    int32_t i = 0;
#if defined(NBI_AVX512)
    bool fit = nbi_cells_fit_i32(g->lo, g->hi);
    for (int a = 0; a < 3; a++) fit &= g->wrap.m[a] < INT32_MAX;
    if (step == (size_t)g->dim && n >= 8 && fit && nbi_use_avx512()) {
        i = nbi_cells8(data, n, g->dim, false, &g->cm, &g->wrap, g->lo, g->ext, cell_of, counts,
                       shift, NULL, NULL, NULL);
        nbi_count_lagged_end(cell_of, counts, shift, i);
    }
#endif
    for (; i < n; i++) {
        const int64_t c = nbi_grid_wrapped_cell(g, &v, data + (size_t)i * step);
        cell_of[i] = (int32_t)c;
        counts[c >> shift]++;
    }
}

// Empties a hashed build's cell table (2^bits slots) and its occupancy filter; returns the
// filter's bits, log2.
static int32_t nbi_hashed_reset(nbGrid *g, int32_t bits)
{
    g->table.lazy = NULL; // filled here, point by point
    g->seen_bits = bits + NBI_SEEN_PER_SLOT_LOG2;
    memset(g->cell_seen.ptr, 0, ((size_t)1 << g->seen_bits) / 8);
    nbi_ctab_reset(&g->table, bits);
    return g->seen_bits;
}

// Pass 2 of a hashed build the sort does not take (nbi_hashed_sorted, below: a box whose codes
// are not exact, or too wide for a key): each point's cell numbered in order of first appearance,
// through the cell table reset to 2^bits slots, its number in cell_of and its count in its slot's
// aux, each cell's slot in cell_slot, its code in cell_code and its bit in the occupancy filter (so
// that nbi_hashed_order need not read the slots back). Returns the number of cells, or -1 (and the
// table, cell_of and cell_slot half written) as soon as the table holds as many cells as it may
// (nbi_ctab_most) with points left. The table is far larger than the caches once N is, so each
// point's slot is a miss: keys and home slots are computed NBI_HASH_AHEAD points ahead and
// prefetched, so that the misses overlap instead of queueing.
static int32_t nbi_hashed_count(nbGrid *g, const double *data, size_t step, int32_t n, int32_t bits)
{
    nbiCellTable *table = &g->table;
    const int dim = g->dim, shift = nbi_code_shift(g->ext, dim);
    const nbiCellMath *cm = &g->cm;
    int32_t *cell_of = (int32_t *)g->cell_of.ptr;
    uint32_t *cell_slot = (uint32_t *)g->cell_slot.ptr;
    uint64_t *code = (uint64_t *)g->cell_code.ptr;
    // Low codes (nbi_hashed_order) in pts, which the gather fills only later (2N words at least).
    uint64_t *low = shift > 0 && shift <= NBI_CODE_LOW_MAX(dim) ? (uint64_t *)g->pts.ptr : NULL;
    // The occupancy filter (view.h, nbi_view_may_hold): a bit for each new cell's hash.
    const int32_t seen_bits = nbi_hashed_reset(g, bits);
    uint64_t *seen = (uint64_t *)g->cell_seen.ptr;
    const int32_t most =
        (int32_t)(nbi_ctab_most(bits) < INT32_MAX ? nbi_ctab_most(bits) : INT32_MAX);
    int32_t ncells = 0;
    int64_t ahead[NBI_HASH_AHEAD][3];
    uint64_t hash[NBI_HASH_AHEAD];
    for (int32_t i = 0; i < n + NBI_HASH_AHEAD; i++) {
        const int32_t j = i - NBI_HASH_AHEAD; // the point inserted now, whose key is ready
        if (j >= 0) {
            if (ncells == most) return -1; // full: this point might need one more
            bool inserted;
            const uint64_t h = hash[j % NBI_HASH_AHEAD];
            const int64_t *k = ahead[j % NBI_HASH_AHEAD];
            nbiCellSlot *at =
                nbi_ctab_insert_home(table, (size_t)(h >> (64 - bits)), k, ncells, &inserted);
            if (inserted) { // its code and its filter bit, while its key is at hand
                code[ncells] = nbi_code_of(k, g->lo, dim, shift);
                if (low != NULL) low[ncells] = nbi_code_low(k, g->lo, dim, shift);
                seen[(h >> (64 - seen_bits)) >> 6] |= (uint64_t)1 << ((h >> (64 - seen_bits)) & 63);
                cell_slot[ncells++] = (uint32_t)(at - nbi_ctab_slots(table));
            }
            cell_of[j] = at->value;
            at->aux++;
        }
        if (i < n) { // its ring entry is free now: point i's key
            const double *q = data + (size_t)i * step;
            int64_t *k = ahead[i % NBI_HASH_AHEAD];
            k[0] = nbi_cell_i(cm, q[0]);
            k[1] = nbi_cell_i(cm, q[1]);
            k[2] = dim == 3 ? nbi_cell_i(cm, q[2]) : 0;
            hash[i % NBI_HASH_AHEAD] = nbi_cell_hash(k[0], k[1], k[2]);
            nbi_prefetch(nbi_ctab_slots(table) + (hash[i % NBI_HASH_AHEAD] >> (64 - bits)));
        }
    }
    return ncells;
}

// ---- ranked cells ----
//
// A box with more cells than the dense layout may have, but at most NBI_RANKED_CELLS_PER_POINT a
// point, numbers only its occupied cells, in the box's row-major order, and finds them by rank
// in a bitmap of the box (view.h): a row of cells is still one run of positions, and no table
// is probed. The build is a counting sort on words (a word: 64 consecutive box cells): pass 2
// counts each point in its cell's word (the dense count pass, with a 64th of the counters),
// pass 3 gives each word its first position, pass 4 scatters the points by word, each with its
// bit in the word, and pass 5 takes the words in order, sorts each word's points by cell into
// idx, numbers the cells, and writes each word's bits and rank. A hashed build
// probed a table far larger than the caches for every point instead (docs/grid.md).

void nbi_ranked_scatter(const int32_t *cell_of, int32_t *next, int32_t i0, int32_t i1, uint64_t *at)
{
    const int32_t far = 2 * NBI_HASH_AHEAD, near = NBI_HASH_AHEAD;
    int32_t i = i0;
    for (; i + far < i1; i++) {
        nbi_prefetch_w(next + (cell_of[i + far] >> 6));
        nbi_prefetch_w(at + next[cell_of[i + near] >> 6]);
        const int32_t k = cell_of[i];
        at[next[k >> 6]++] = (uint64_t)i << 6 | (uint64_t)(k & 63);
    }
    for (; i < i1; i++) {
        const int32_t k = cell_of[i];
        at[next[k >> 6]++] = (uint64_t)i << 6 | (uint64_t)(k & 63);
    }
}

int32_t nbi_ranked_count_cells(const int32_t *first, int64_t w0, int64_t w1, const uint64_t *at)
{
    int32_t cells = 0;
    for (int64_t w = w0; w < w1; w++) {
        uint64_t bits = 0;
        for (int32_t p = first[w]; p < first[w + 1]; p++) bits |= UINT64_C(1) << (at[p] & 63);
        cells += nbi_popcount64(bits);
    }
    return cells;
}

int32_t nbi_ranked_cells(nbGrid *g, int32_t *first, int64_t w0, int64_t w1, int32_t p_end,
                         int32_t id, const uint64_t *at)
{
    int32_t *idx = (int32_t *)g->idx.ptr, *start = (int32_t *)g->start.ptr;
    uint64_t *occ = (uint64_t *)g->occ.ptr;
    uint32_t *cell_box = (uint32_t *)g->cell_slot.ptr;
    if (w0 >= w1) return id; // (first[w0] may be another range's to write)
    int32_t count[64] = {0}; // zero again after each word
    int32_t p0 = first[w0];
    for (int64_t w = w0; w < w1; w++) {
        const int32_t p1 = w + 1 < w1 ? first[w + 1] : p_end;
        const uint32_t base = (uint32_t)w << 6;
        first[w] = id;
        uint64_t bits = 0;
        if (p1 - p0 == 1) { // the common case in sparse data
            bits = UINT64_C(1) << (at[p0] & 63);
            idx[p0] = (int32_t)(at[p0] >> 6);
            start[id] = p0;
            cell_box[id++] = base + (uint32_t)(at[p0] & 63);
        } else if (p1 > p0) {
            for (int32_t p = p0; p < p1; p++) {
                bits |= UINT64_C(1) << (at[p] & 63);
                count[at[p] & 63]++;
            }
            int32_t run = p0;
            for (uint64_t m = bits; m != 0; m &= m - 1) { // each cell's first position
                const int b = nbi_ctz64(m), c = count[b];
                count[b] = run;
                start[id] = run;
                cell_box[id++] = base + (uint32_t)b;
                run += c;
            }
            for (int32_t p = p0; p < p1; p++) idx[count[at[p] & 63]++] = (int32_t)(at[p] >> 6);
            for (uint64_t m = bits; m != 0; m &= m - 1) count[nbi_ctz64(m)] = 0;
        }
        occ[w] = bits;
        p0 = p1;
    }
    return id;
}

void nbi_ranked_count(const nbGrid *g, const nbiBuildIn *in, int32_t i0, int32_t i1,
                      int32_t *counts)
{
    const double *data = in->data + (size_t)i0 * in->step;
    int32_t *cell_of = (int32_t *)g->cell_of.ptr + i0;
    if (g->wrapped) {
        nbi_count_wrapped(g, data, in->step, i1 - i0, cell_of, counts + 2, 6);
        return;
    }
#if defined(__SSE2__)
    if (in->step == (size_t)g->dim && nbi_cells_fit_i32(g->lo, g->hi)) {
        nbi_count_packed(data, i1 - i0, g->dim, &g->cm, g->lo, g->ext, cell_of, counts + 2, 6);
        return;
    }
#endif
    NBI_BY_LAYOUT(nbi_count_dense, data, in->step, i1 - i0, g->dim, &g->cm, g->lo, g->ext, cell_of,
                  counts, 6);
}

// Passes 2 to 5 of a ranked build of the grid's box, serially. Returns the cells.
static int32_t nbi_ranked_build(nbGrid *g, const nbiBuildIn *in)
{
    const int32_t n = in->n;
    const int64_t nwords = nbi_ranked_nwords(g);
    int32_t *first = (int32_t *)g->occ_rank.ptr;
    uint64_t *at = (uint64_t *)g->pts.ptr; // n entries of scratch until the gather
    NB_ASSERT((size_t)nwords + 2 <= g->occ_rank.cap && (size_t)nwords <= g->occ.cap);
    memset(first, 0, ((size_t)nwords + 2) * sizeof(int32_t));
    nbi_ranked_count(g, in, 0, n, first);
    for (int64_t w = 2; w < nwords + 2; w++) first[w] += first[w - 1];
    nbi_ranked_scatter((const int32_t *)g->cell_of.ptr, first + 1, 0, n, at);
    const int32_t cells = nbi_ranked_cells(g, first, 0, nwords, n, 0, at);
    ((int32_t *)g->start.ptr)[cells] = n;
    first[nwords] = cells;
    return cells;
}

// The row spans of a ranked build (view.h, row_span): the first and last occupied cell of each
// row of the box, then of each block of NBI_SPAN_ROWS rows of a plane, so that a radius query
// skips the empty parts of its box a block at a time (query.c). One pass over the cells, which
// are in row-major order, and one over the rows: O(cells + rows), rows <= points.
static void nbi_ranked_spans(nbGrid *g)
{
    if (!g->row_spans) return;
    const int64_t e0 = g->ext[0], e1 = g->ext[1], rows = e1 * g->ext[2];
    const int64_t blocks = (e1 + NBI_SPAN_ROWS - 1) / NBI_SPAN_ROWS * g->ext[2];
    int32_t *span = (int32_t *)g->row_span.ptr, *block = span + 2 * rows;
    NB_ASSERT((size_t)(2 * (rows + blocks)) <= g->row_span.cap);
    for (int64_t r = 0; r < rows + blocks; r++) {
        span[2 * r] = (int32_t)e0; // empty: first > last
        span[2 * r + 1] = -1;
    }
    const uint32_t *cell_box = (const uint32_t *)g->cell_slot.ptr;
    int64_t r = 0, row0 = 0; // the row of the cell at hand and its first box number
    for (int32_t c = 0; c < g->ncells; c++) {
        const int64_t k = cell_box[c];
        while (k >= row0 + e0) {
            r++;
            row0 += e0;
        }
        const int32_t x = (int32_t)(k - row0);
        if (span[2 * r + 1] < 0) span[2 * r] = x;
        span[2 * r + 1] = x;
    }
    const int64_t per_plane = (e1 + NBI_SPAN_ROWS - 1) / NBI_SPAN_ROWS;
    for (int64_t z = 0; z < g->ext[2]; z++)
        for (int64_t y = 0; y < e1; y++) {
            const int32_t *s = span + 2 * (z * e1 + y);
            int32_t *b = block + 2 * (z * per_plane + y / NBI_SPAN_ROWS);
            if (s[0] < b[0]) b[0] = s[0];
            if (s[1] > b[1]) b[1] = s[1];
        }
}

// Whether the row spans (nbi_ranked_spans) are exact: each row's first and last occupied cell
// (first > last when it has none), and each block's least first and greatest last.
static bool nbi_ranked_spans_hold(const nbGrid *g, const uint64_t *occ)
{
    const int64_t e0 = g->ext[0], e1 = g->ext[1], rows = e1 * g->ext[2];
    const int64_t per_plane = (e1 + NBI_SPAN_ROWS - 1) / NBI_SPAN_ROWS;
    if ((size_t)(2 * (rows + per_plane * g->ext[2])) > g->row_span.cap) return false;
    const int32_t *span = (const int32_t *)g->row_span.ptr, *block = span + 2 * rows;
    for (int64_t b = 0; b < per_plane * g->ext[2]; b++) {
        int32_t first = (int32_t)e0, last = -1;
        const int64_t z = b / per_plane, y0 = b % per_plane * NBI_SPAN_ROWS;
        for (int64_t y = y0; y < y0 + NBI_SPAN_ROWS && y < e1; y++) {
            int32_t f = (int32_t)e0, l = -1;
            for (int64_t x = 0; x < e0; x++) {
                const int64_t k = x + e0 * (y + e1 * z);
                if ((occ[k >> 6] >> (k & 63)) & 1) {
                    f = f < (int32_t)x ? f : (int32_t)x;
                    l = (int32_t)x;
                }
            }
            const int32_t *s = span + 2 * (z * e1 + y);
            if (s[0] != f || s[1] != l) return false;
            first = f < first ? f : first;
            last = l > last ? l : last;
        }
        if (block[2 * b] != first || block[2 * b + 1] != last) return false;
    }
    return true;
}

// Whether a ranked build of `room` points keeps row spans: not on a periodic grid (a periodic
// query walks its own ranges), and only while the box's rows and blocks of rows take at most
// room / 2 pairs of entries, so that the spans' room (nbi_ranked_span_room) follows the points.
static bool nbi_ranked_spans_fit(bool ranked, bool wrapped, const int64_t ext[3], uint64_t room)
{
    if (!ranked || wrapped) return false;
    const int64_t rows = ext[1] * ext[2];
    return (uint64_t)(rows + (ext[1] + NBI_SPAN_ROWS - 1) / NBI_SPAN_ROWS * ext[2]) <= room / 2;
}

// What a fresh build will do, decided before anything changes: the checked input, the cell
// math, the occupied box and its layout, the room it needs, and which of the build paths runs.
typedef struct nbiGridPlan {
    nbiBuildIn in; // the points, with their filter bits' strides
    nbiCellMath cm;
    double max_abs;
    int64_t lo[3], hi[3], ext[3];
    double box_cells;
    nbiWrap wrap; // periodic grids: their cells
    bool sparse, ranked, hashed, filtered;
    bool spans;    // ranked: keeps row spans (nbi_ranked_spans)
    bool parallel; // on the caller's scheduler
    bool blocked;  // a large dense build of packed points: two cache-sized passes
    nbiGridNeed need;
} nbiGridPlan;

// Checks the build's input in the documented order (pointers, finiteness, ranges) and plans it.
// Changes nothing in the grid.
static nbStatus nbi_grid_plan(const nbGrid *grid, const nbPoints *points, double radius,
                              nbiGridPlan *plan)
{
    if (grid == NULL || points == NULL || (points->data == NULL && points->count > 0))
        return NB_ERR_NULL_ARG;
    // Finiteness (the radius, then every coordinate) before any range check.
    if (!isfinite(radius)) return NB_ERR_NOT_FINITE;
    const int32_t dim = grid->dim;
    const size_t stride = points->stride == 0 ? (size_t)dim * sizeof(double) : points->stride;
    const bool layout_ok = points->count >= 0 && (points->dim == 0 || points->dim == dim) &&
                           stride >= (size_t)dim * sizeof(double) && stride % sizeof(double) == 0;
    double mn[3] = {0, 0, 0}, mx[3] = {0, 0, 0}, max_abs = 0.0;
    nbiBuildIn in = {points->data,
                     stride / sizeof(double),
                     points->count,
                     dim,
                     points->category,
                     points->mask,
                     0,
                     0};
    const bool parallel = nbi_grid_parallel(grid) && points->count >= NBI_PARALLEL_MIN_POINTS;
    // The scan needs a sound layout to read the points; without one there is nothing to scan.
    if (layout_ok && points->count > 0 &&
        !(parallel ? nbi_grid_scan_parallel(grid, &in, mn, mx)
                   : nbi_grid_scan(in.data, in.step, in.n, dim, mn, mx)))
        return NB_ERR_NOT_FINITE;
    if (radius < 0.0 || !layout_ok) return NB_ERR_OUT_OF_RANGE;
    if (!nbi_bits_layout(points->category, points->category_stride, &in.cat_stride) ||
        !nbi_bits_layout(points->mask, points->mask_stride, &in.mask_stride))
        return NB_ERR_OUT_OF_RANGE;
    for (int a = 0; a < dim; a++) {
        max_abs = fabs(mn[a]) > max_abs ? fabs(mn[a]) : max_abs;
        max_abs = fabs(mx[a]) > max_abs ? fabs(mx[a]) : max_abs;
    }

    memset(plan, 0, sizeof *plan);
    plan->in = in;
    plan->max_abs = max_abs;
    plan->parallel = parallel;
    const double cell = grid->desc_cell > 0.0 ? nbi_cell_snap(grid->desc_cell, radius, max_abs)
                                              : nbi_cell_for_radius(radius, max_abs);
    plan->cm = nbi_cell_math(cell);
    const int32_t n = points->count;
    for (int a = 0; a < 3; a++) plan->ext[a] = 1;
    plan->box_cells = 1.0;
    double dense_limit = (double)NBI_DENSE_CELLS_PER_POINT * n + NBI_DENSE_MIN_CELLS;
    if (dense_limit > (double)(INT32_MAX - 2)) dense_limit = (double)(INT32_MAX - 2);
    double ranked_limit = (double)NBI_RANKED_CELLS_PER_POINT * n;
    if (ranked_limit > (double)(INT32_MAX - 256)) ranked_limit = (double)(INT32_MAX - 256);
    plan->wrap = grid->wrap;
    if (grid->wrapped) { // periodic: its own cells, dense or ranked (see nbi_wrap_layout)
        const double pcell = grid->desc_cell > 0.0 ? grid->desc_cell : cell;
        const double limit = ranked_limit > dense_limit ? ranked_limit : dense_limit;
        const nbStatus wst =
            nbi_wrap_layout(grid, &in, mn, mx, radius, cell, pcell, limit, &plan->wrap, &plan->cm,
                            plan->lo, plan->hi, plan->ext, &plan->box_cells);
        if (wst != NB_OK) return wst;
    }
    for (int a = 0; a < dim && n > 0 && !grid->wrapped; a++) {
        double l = nbi_cell_f(&plan->cm, mn[a]), h = nbi_cell_f(&plan->cm, mx[a]);
        if (!(fabs(l) < NBI_CELL_LIMIT && fabs(h) < NBI_CELL_LIMIT)) return NB_ERR_OUT_OF_RANGE;
        plan->lo[a] = (int64_t)l;
        plan->hi[a] = (int64_t)h;
        plan->ext[a] = plan->hi[a] - plan->lo[a] + 1;
        plan->box_cells *= (double)plan->ext[a];
    }
    plan->sparse = plan->box_cells > dense_limit;
    plan->ranked = plan->sparse && plan->box_cells <= ranked_limit; // (always, when periodic)
    plan->hashed = plan->sparse && !plan->ranked;
    plan->filtered = points->category != NULL || points->mask != NULL;

    // The arrays of a sparse layout, once first needed, are kept sized for every point the grid
    // has room for (growing along with it, even in a dense build), so only the first hashed or
    // ranked layout allocates; the table in use is still sized for this build, so clearing it
    // costs O(N), not O(capacity). Filter bits likewise, once a build has had them.
    const uint64_t room = nbi_buf_grown_cap(&grid->idx, (size_t)n);
    const int32_t room_bits = nbi_ctab_bits_packed(room < INT32_MAX ? (size_t)room : INT32_MAX);
    const bool keep_hashed = plan->hashed || grid->table.buf.cap > 0;
    const bool keep_ranked = plan->ranked || grid->occ.cap > 0;
    const bool keep_sparse = keep_hashed || keep_ranked;
    const bool keep_bits = plan->filtered || grid->had_bits;
    const uint64_t cells = plan->sparse ? (uint64_t)n : (uint64_t)plan->box_cells;
    // A large dense build of packed points sorts in two cache-sized passes. Every build of that
    // many points makes room for its tables, so that the room depends on the point count alone
    // (a later dense packed build with fewer points allocates nothing).
    const int32_t chunks = parallel ? nbi_grid_build_chunks(grid) : 1;
    uint64_t hist = parallel && !plan->sparse ? (uint64_t)chunks * (cells + 2) : 0; // rebuilds: +2
    if (parallel && plan->ranked)
        hist = (uint64_t)chunks * ((uint64_t)plan->box_cells / 64 + 3); // words + 2
#if defined(__SSE2__)
    if (n >= nbi_blocked_min_points) {
        const uint64_t want = nbi_blocks_hist(n, dim, chunks);
        hist = want > hist ? want : hist;
        plan->blocked = !plan->sparse && !grid->wrapped && in.step == (size_t)dim &&
                        nbi_cells_fit_i32(plan->lo, plan->hi);
    }
#endif
    if (keep_hashed && hist < nbi_code_scratch(room)) hist = nbi_code_scratch(room);
    const nbiGridNeed need = {(uint64_t)n,
                              keep_sparse && room > cells ? room : cells,
                              keep_hashed ? (uint64_t)1 << room_bits : 0,
                              keep_sparse ? room : 0,
                              keep_bits ? room : 0,
                              keep_ranked ? nbi_ranked_words(room) : 0,
                              keep_hashed ? room : 0,
                              hist,
                              keep_ranked ? nbi_ranked_span_room(room) : 0};
    plan->spans = nbi_ranked_spans_fit(plan->ranked, grid->wrapped, plan->ext, room);
    ;
    plan->need = need;
    return NB_OK;
}

// Pass 2b of a hashed build: the cells renumbered in Z order (ascending code, view.h), so that
// cells near in space are near in memory (the pair walk's neighbours) and kNN can search aligned
// blocks of cells as a tree (query.c). An LSD radix sort of the codes with their cell numbers,
// digit by digit over the code's bits (a digit every code shares is skipped); a box wider than
// the codes reach (code_shift > 0, up to NBI_CODE_LOW_MAX) sorts by the low codes first (the
// count pass left them in pts, whose 2N words are free until the gather), so that the cells are
// in the Z order of their exact offsets (the pair walk's blocks), and keeps them after the codes
// (nbi_grid_view: cell_low). Then the table's values, cell_slot and cell_of follow
// the new numbers, and each cell's count (its slot's aux) goes into start[c + 2].
// O(cells x digits + N).
static void nbi_hashed_order(nbGrid *g, int32_t ncells)
{
    const int dim = g->dim, shift = nbi_code_shift(g->ext, dim);
    const int idb = ncells > 1 ? nbi_top_bit64((uint64_t)(ncells - 1)) + 1 : 1;
    const size_t room = g->cell_code.cap / 2;
    uint64_t *code = (uint64_t *)g->cell_code.ptr, *ka = code, *kb = code + room;
    // Low codes, where a low code fits one word with a cell's number (else the cells keep none).
    uint64_t *low = shift > 0 && shift <= NBI_CODE_LOW_MAX(dim) ? (uint64_t *)g->pts.ptr : NULL;
    if (dim * shift + idb > 64) low = NULL;
    g->low_codes = low != NULL;
    uint32_t *ia = (uint32_t *)g->hist.ptr, *ib = ia + ncells;
    int32_t *count = (int32_t *)(ib + ncells);
    uint32_t *cell_slot = (uint32_t *)g->cell_slot.ptr;
    nbiCellSlot *slots = (nbiCellSlot *)g->table.buf.ptr;
    uint64_t any = 0, lany = 0; // every code's bits, every low code's (from the count pass)
    for (int32_t c = 0; c < ncells; c++) {
        ia[c] = (uint32_t)c;
        any |= ka[c];
        if (low != NULL) lany |= low[c];
    }
    const int top = any == 0 ? 0 : nbi_top_bit64(any) + 1; // bits of the largest code
    const int ltop = lany == 0 ? 0 : nbi_top_bit64(lany) + 1;
    const uint64_t dmask = ((uint64_t)1 << NBI_CODE_DIGIT) - 1;
    const int ldigits = (ltop + NBI_CODE_DIGIT - 1) / NBI_CODE_DIGIT; // the low code's, first
    const int digits = ldigits + (top + NBI_CODE_DIGIT - 1) / NBI_CODE_DIGIT;
    memset(count, 0, (sizeof(int32_t) * NBI_CODE_DIGITS) << NBI_CODE_DIGIT);
    for (int32_t c = 0; c < ncells; c++) {
        for (int t = 0; t < ldigits; t++)
            count[((size_t)t << NBI_CODE_DIGIT) + ((low[c] >> (t * NBI_CODE_DIGIT)) & dmask)]++;
        for (int t = ldigits; t < digits; t++)
            count[((size_t)t << NBI_CODE_DIGIT) +
                  ((ka[c] >> ((t - ldigits) * NBI_CODE_DIGIT)) & dmask)]++;
    }
    if (low != NULL) { // the low digits first, on one word a cell: its low code above its number
        uint64_t *pa = low + ncells, *pb = kb;
        for (int32_t c = 0; c < ncells; c++) pa[c] = low[c] << idb | (uint64_t)c;
        for (int t = 0; t < ldigits; t++)
            if (nbi_radix_pass(pa, pb, ncells, idb + t * NBI_CODE_DIGIT, dmask,
                               count + ((size_t)t << NBI_CODE_DIGIT))) {
                uint64_t *pt = pa;
                pa = pb;
                pb = pt;
            }
        // The codes in that order (in kb: pa's entry is read before it is overwritten).
        const uint64_t id_mask = ((uint64_t)1 << idb) - 1;
        for (int32_t j = 0; j < ncells; j++) {
            ia[j] = (uint32_t)(pa[j] & id_mask);
            kb[j] = code[ia[j]];
        }
        ka = kb;
        kb = code;
    }
    for (int t = ldigits; t < digits; t++) {
        const int at = (t - ldigits) * NBI_CODE_DIGIT;
        int32_t *cnt = count + ((size_t)t << NBI_CODE_DIGIT);
        if (cnt[(ka[0] >> at) & dmask] == ncells) continue; // one digit: already in order
        int32_t sum = 0;
        for (uint64_t d = 0; d <= dmask; d++) {
            const int32_t k = cnt[d];
            cnt[d] = sum;
            sum += k;
        }
        for (int32_t c = 0; c < ncells; c++) {
            const int32_t to = cnt[(ka[c] >> at) & dmask]++;
            kb[to] = ka[c];
            ib[to] = ia[c];
        }
        uint64_t *kt = ka;
        ka = kb;
        kb = kt;
        uint32_t *it = ia;
        ia = ib;
        ib = it;
    }
    if (ka != code) memcpy(code, ka, (size_t)ncells * sizeof *code);
    // New cell j was old cell ia[j]: its slot into ib[j], its number into the slot and into
    // perm[old], its count into start.
    uint64_t *perm = code == ka ? kb : ka; // the sort's other half, free now
    int32_t *start = (int32_t *)g->start.ptr;
    start[0] = start[1] = 0;
    for (int32_t j = 0; j < ncells; j++) {
        if (j + NBI_HASH_AHEAD < ncells) nbi_prefetch(slots + cell_slot[ia[j + NBI_HASH_AHEAD]]);
        const uint32_t slot = cell_slot[ia[j]];
        ib[j] = slot;
        slots[slot].value = j;
        start[j + 2] = slots[slot].aux;
        perm[ia[j]] = (uint64_t)j;
    }
    int32_t *cell_of = (int32_t *)g->cell_of.ptr;
    for (int32_t i = 0; i < g->n; i++) cell_of[i] = (int32_t)perm[cell_of[i]];
    memcpy(cell_slot, ib, (size_t)ncells * sizeof *cell_slot);
    for (int32_t j = 0; j < ncells && low != NULL; j++) code[ncells + j] = low[ia[j]];
    g->code_shift = shift;
}

// ---- the hashed build by sorting ----
//
// While a cell's code is exact (code_shift 0) and the code and a point's number fit one 64-bit
// key together, equal codes are equal cells, so sorting the points by code both numbers the
// cells in Z order and places the points: pass 1 computes each point's key (its code above its
// number) and counts the digits of every key at once; an LSD radix sort of the keys, a digit of
// at most NBI_ZSORT_DIGIT bits a pass over only the code's bits (three passes for boxes of up to
// 2^11 cells an axis), puts them in code order, and in input order within a cell (the number
// breaks ties); one pass over the sorted keys writes idx, the cells' starts and codes; and the
// table, sized for the cells found, gets one insert a cell, its slot computed NBI_HASH_AHEAD
// cells ahead and prefetched. No table slot is touched a point, and the cells need no sort of
// their own. Other boxes take nbi_hashed_count and nbi_hashed_order.

// Bits of the codes of a box of ext cells (code_shift 0), or 0 when the box's codes are not exact.
static int nbi_zsort_code_bits(const int64_t ext[3], int dim)
{
    if (nbi_code_shift(ext, dim) != 0) return 0;
    int64_t most = 0;
    for (int a = 0; a < dim; a++) most = ext[a] - 1 > most ? ext[a] - 1 : most;
    return most == 0 ? 0 : (nbi_top_bit64((uint64_t)most) + 1) * dim;
}

#if defined(__SSE2__)
// nbi_spread3 (3D) or nbi_spread2 (2D) of both 64-bit lanes.
NBI_INLINE __m128i nbi_spread_xy(__m128i v, int dim)
{
#define NBI_SPREAD_STEP(s, m)                                                                      \
    v = _mm_and_si128(_mm_or_si128(v, _mm_slli_epi64(v, s)), _mm_set1_epi64x(m))
    if (dim == 3) {
        v = _mm_and_si128(v, _mm_set1_epi64x(0x1FFFFF));
        NBI_SPREAD_STEP(32, 0x1F00000000FFFF);
        NBI_SPREAD_STEP(16, 0x1F0000FF0000FF);
        NBI_SPREAD_STEP(8, 0x100F00F00F00F00F);
        NBI_SPREAD_STEP(4, 0x10C30C30C30C30C3);
        NBI_SPREAD_STEP(2, 0x1249249249249249);
    } else {
        v = _mm_and_si128(v, _mm_set1_epi64x(0xFFFFFFFF));
        NBI_SPREAD_STEP(16, 0x0000FFFF0000FFFF);
        NBI_SPREAD_STEP(8, 0x00FF00FF00FF00FF);
        NBI_SPREAD_STEP(4, 0x0F0F0F0F0F0F0F0F);
        NBI_SPREAD_STEP(2, 0x3333333333333333);
        NBI_SPREAD_STEP(1, 0x5555555555555555);
    }
#undef NBI_SPREAD_STEP
    return v;
}

// nbi_code_of (code_shift 0) of the cell of point q, whose cells fit 32-bit lanes
// (nbi_cells_fit_i32): x and y through nbi_floor_xy and spread side by side.
NBI_INLINE uint64_t nbi_packed_code(const nbiPackedCells *pc, const double *q, int dim)
{
    const __m128i t = _mm_sub_epi32(nbi_floor_xy(_mm_loadu_pd(q), pc->by, pc->pow2), pc->lo01);
    const __m128i v = nbi_spread_xy(_mm_unpacklo_epi32(t, _mm_setzero_si128()), dim);
    const uint64_t x = (uint64_t)_mm_cvtsi128_si64(v);
    const uint64_t y = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v));
    if (dim == 2) return x | y << 1;
    return x | y << 1 | nbi_spread3((uint64_t)(nbi_cell_i(pc->cm, q[2]) - pc->lo2)) << 2;
}
#endif

// The key of point i (nbi_hashed_sorted): its cell's code above i.
NBI_INLINE uint64_t nbi_zsort_key(const nbGrid *g, const double *q, int32_t i, int id_bits)
{
    const int64_t k[3] = {nbi_cell_i(&g->cm, q[0]), nbi_cell_i(&g->cm, q[1]),
                          g->dim == 3 ? nbi_cell_i(&g->cm, q[2]) : 0};
    return nbi_code_of(k, g->lo, g->dim, 0) << id_bits | (uint64_t)i;
}

// Stores a key and counts its digits (digit t: key bits at[t] .. at[t + 1] - 1, its counts at
// count[t << NBI_ZSORT_DIGIT]).
NBI_INLINE void nbi_zsort_count(int32_t *count, uint64_t *to, uint64_t key, const int *at,
                                int passes)
{
    *to = key;
    for (int t = 0; t < passes; t++)
        count[((size_t)t << NBI_ZSORT_DIGIT) +
              ((key >> at[t]) & (((uint64_t)1 << (at[t + 1] - at[t])) - 1))]++;
}

// Whether nbi_zsort_cell may take x and y through 32-bit lanes: the box's cells fit them.
NBI_INLINE bool nbi_zsort_xy_fit(const nbGrid *g)
{
    return g->lo[0] > -0x40000000 && g->hi[0] < 0x40000000 && g->lo[1] > -0x40000000 &&
           g->hi[1] < 0x40000000;
}

// The cell of point q, into k (z = 0 in 2D); `fit`: nbi_zsort_xy_fit.
NBI_INLINE void nbi_zsort_cell(const nbGrid *g, const double *q, int64_t k[3], bool fit)
{
#if defined(__SSE2__)
    if (fit) {
        const __m128d by = _mm_set1_pd(g->cm.pow2 ? g->cm.inv : g->cm.cell);
        const __m128i t = nbi_floor_xy(_mm_loadu_pd(q), by, g->cm.pow2);
        k[0] = _mm_cvtsi128_si32(t);
        k[1] = _mm_cvtsi128_si32(_mm_srli_si128(t, 4));
        k[2] = g->dim == 3 ? nbi_cell_i(&g->cm, q[2]) : 0;
        return;
    }
#else
    (void)fit;
#endif
    k[0] = nbi_cell_i(&g->cm, q[0]);
    k[1] = nbi_cell_i(&g->cm, q[1]);
    k[2] = g->dim == 3 ? nbi_cell_i(&g->cm, q[2]) : 0;
}

// The coded cell table of a sorted hashed build (a slot is a cell's number, its key the cell's
// code in cell_code and, with code_shift > 0, its low code) and the occupancy filter, filled on
// first use (nbiCtabLazy: all pairs in Z order needs neither): a cell at a time, each key from
// the cell's first point (gathered: in cell order), its home slot prefetched NBI_HASH_AHEAD
// cells ahead.
static void nbi_hashed_fill(void *owner)
{
    nbGrid *g = (nbGrid *)owner;
    const int dim = g->dim, shift = g->code_shift;
    const int32_t ncells = g->ncells, seen_bits = g->seen_bits;
    const double *pts = (const double *)g->pts.ptr;
    const int32_t *start = (const int32_t *)g->start.ptr;
    const uint64_t *code = (const uint64_t *)g->cell_code.ptr;
    nbiCellTable *table = &g->table;
    memset(g->cell_seen.ptr, 0, ((size_t)1 << seen_bits) / 8);
    nbi_ctab_reset_coded(table, table->bits, code, g->low_codes ? code + ncells : NULL, shift,
                         g->lo, dim);
    uint64_t *seen = (uint64_t *)g->cell_seen.ptr;
    uint64_t hash[NBI_HASH_AHEAD], key[NBI_HASH_AHEAD];
    uint32_t low[NBI_HASH_AHEAD];
    const bool fit = nbi_zsort_xy_fit(g);
    const int b = NBI_CODE_BITS(dim); // exact codes (shift 0): the key is the offsets packed
    for (int32_t c = 0; c < ncells + NBI_HASH_AHEAD; c++) {
        const int32_t j = c - NBI_HASH_AHEAD; // the cell inserted now
        if (j >= 0) {
            const uint64_t h = hash[j % NBI_HASH_AHEAD];
            nbi_ctab_insert_coded(table, h, key[j % NBI_HASH_AHEAD], low[j % NBI_HASH_AHEAD], j);
            seen[(h >> (64 - seen_bits)) >> 6] |= (uint64_t)1 << ((h >> (64 - seen_bits)) & 63);
        }
        if (c < ncells) {
            int64_t k[3];
            nbi_zsort_cell(g, pts + (size_t)start[c] * dim, k, fit);
            hash[c % NBI_HASH_AHEAD] = nbi_cell_hash(k[0], k[1], k[2]);
            if (shift == 0) { // nbi_ctab_key of a cell in the box, and no bits dropped
                key[c % NBI_HASH_AHEAD] = (uint64_t)(k[0] - g->lo[0]) |
                                          (uint64_t)(k[1] - g->lo[1]) << b |
                                          (dim == 3 ? (uint64_t)(k[2] - g->lo[2]) << 2 * b : 0);
                low[c % NBI_HASH_AHEAD] = 0;
            } else {
                nbi_ctab_key(table, k[0], k[1], k[2], &key[c % NBI_HASH_AHEAD]);
                low[c % NBI_HASH_AHEAD] = nbi_ctab_low_bits(table, k[0], k[1], k[2]);
            }
            nbi_ctab_prefetch(table, hash[c % NBI_HASH_AHEAD], false);
        }
    }
}

// The index of a sorted hashed build's codes (view.h: cell_dir, cell_zseen), for the lookups
// of all pairs without the table: the directory, dir[i] the first cell whose code >> dir_shift
// is at least i, for 2^dir_bits + 1 entries (at most ncells / 2 + 1, or 3: the buffer's room), and
// the code filter, a bit for the top seen_bits bits of every cell's nbi_zkey_hash. One pass
// over the codes each.
static void nbi_hashed_dir(nbGrid *g)
{
    const int32_t ncells = g->ncells;
    const uint64_t *code = (const uint64_t *)g->cell_code.ptr;
    const uint64_t *low = g->low_codes ? code + ncells : NULL;
    uint64_t *zseen = (uint64_t *)g->cell_zseen.ptr;
    const int32_t seen_bits = g->seen_bits;
    memset(zseen, 0, ((size_t)1 << seen_bits) / 8);
    for (int32_t c = 0; c < ncells; c++) {
        const uint64_t b = nbi_zkey_hash(code[c], low != NULL ? low[c] : 0) >> (64 - seen_bits);
        zseen[b >> 6] |= (uint64_t)1 << (b & 63);
    }
    int32_t bits = 0;
    while (((int64_t)2 << bits) <= ncells / 2) bits++;
    int top = 0; // the codes' bits
    while (ncells > 0 && top < 64 && (code[ncells - 1] >> top) != 0) top++;
    if (top - bits > 63) bits = top - 63; // (a shift of 64 would be undefined)
    const int shift = top > bits ? top - bits : 0;
    int32_t *dir = (int32_t *)g->cell_dir.ptr;
    const int64_t entries = ((int64_t)1 << bits) + 1;
    int64_t i = 0;
    for (int32_t c = 0; c < ncells; c++)
        for (const int64_t b = (int64_t)(code[c] >> shift); i <= b; i++) dir[i] = c;
    for (; i < entries; i++) dir[i] = ncells;
    g->dir_bits = bits;
    g->dir_shift = shift;
}

// The last step of a sorted hashed build (nbi_hashed_sorted, nbi_hashed_sorted_wide), once
// ncells, code_shift and low_codes are set: the table sized (at most half full: docs/grid.md,
// "The coded table", in the room of a packed table of 32-byte slots), its filter as for that
// table, both left to nbi_hashed_fill on first use.
static void nbi_hashed_table(nbGrid *g)
{
    g->table.bits = nbi_ctab_bits_for((size_t)g->ncells);
    g->table.count = 0;
    g->seen_bits = nbi_ctab_bits_packed((size_t)g->ncells) + NBI_SEEN_PER_SLOT_LOG2;
    nbi_hashed_dir(g);
    g->table_lazy.fill = nbi_hashed_fill;
    g->table_lazy.owner = g;
    nbi_ctab_defer(&g->table, &g->table_lazy);
}

#if defined(NBI_AVX512)
// nbi_spread_xy on eight lanes.
NBI_TARGET_AVX512 static inline __m512i nbi_spread8(__m512i v, int dim)
{
#define NBI_SPREAD_STEP8(s, m)                                                                     \
    v = _mm512_and_si512(_mm512_or_si512(v, _mm512_slli_epi64(v, s)), _mm512_set1_epi64(m))
    if (dim == 3) {
        NBI_SPREAD_STEP8(32, 0x1F00000000FFFF);
        NBI_SPREAD_STEP8(16, 0x1F0000FF0000FF);
        NBI_SPREAD_STEP8(8, 0x100F00F00F00F00F);
        NBI_SPREAD_STEP8(4, 0x10C30C30C30C30C3);
        NBI_SPREAD_STEP8(2, 0x1249249249249249);
    } else {
        NBI_SPREAD_STEP8(16, 0x0000FFFF0000FFFF);
        NBI_SPREAD_STEP8(8, 0x00FF00FF00FF00FF);
        NBI_SPREAD_STEP8(4, 0x0F0F0F0F0F0F0F0F);
        NBI_SPREAD_STEP8(2, 0x3333333333333333);
        NBI_SPREAD_STEP8(1, 0x5555555555555555);
    }
#undef NBI_SPREAD_STEP8
    return v;
}

// Pass 1 of nbi_hashed_sorted over packed points whose cells fit 32-bit lanes
// (nbi_cells_fit_i32), eight at a time: each cell through nbi_floor8 (every cell nbi_cell_f's,
// see there), the offsets spread by lanes, into keys stored at ka and counted. Returns how many
// points it took (a multiple of 8); the caller goes on from there.
NBI_TARGET_AVX512 static int32_t nbi_zsort_keys8(const double *data, int32_t n, int dim,
                                                 const nbiCellMath *cm, const int64_t lo[3],
                                                 int id_bits, uint64_t *ka, int32_t *count,
                                                 const int *at, int passes)
{
    const __m512d inv = nbi_floor8_inv(cm), by = _mm512_set1_pd(cm->cell);
    const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d v[3];
        nbi_load8(data, i, n, dim, v);
        __m512i code = _mm512_setzero_si512();
        for (int d = 0; d < dim; d++) {
            const __m256i f = _mm256_sub_epi32(_mm512_cvtpd_epi32(nbi_floor8(v[d], inv, by)),
                                               _mm256_set1_epi32((int32_t)lo[d]));
            const __m512i k = nbi_spread8(_mm512_cvtepu32_epi64(f), dim);
            code = _mm512_or_si512(code, _mm512_sll_epi64(k, _mm_cvtsi32_si128(d)));
        }
        const __m512i key = _mm512_or_si512(_mm512_sll_epi64(code, _mm_cvtsi32_si128(id_bits)),
                                            _mm512_add_epi64(lane, _mm512_set1_epi64(i)));
        _mm512_storeu_si512((void *)(ka + i), key);
        for (int32_t j = i; j < i + 8; j++) nbi_zsort_count(count, ka + j, ka[j], at, passes);
    }
    return i;
}
#endif

// The hashed build by sorting, when the points' keys fit (see above): idx, start, cell_code, the
// table, cell_slot and the occupancy filter. Returns the number of cells, or -1 (nothing
// written) when the keys do not fit.
static int32_t nbi_hashed_sorted(nbGrid *g, const nbiBuildIn *in)
{
    const double *data = in->data;
    const size_t step = in->step;
    const int32_t n = in->n;
    const int dim = g->dim, code_bits = nbi_zsort_code_bits(g->ext, dim);
    const int id_bits = n > 1 ? nbi_top_bit64((uint64_t)(n - 1)) + 1 : 1;
    if (code_bits == 0 || code_bits + id_bits > 64) return -1;
    // Digits of at most NBI_ZSORT_DIGIT bits, fewer for few points (their counts are cleared
    // and summed once a pass), as few passes as that allows, the bits shared out evenly.
    const int width = id_bits - 4 < 8                 ? 8
                      : id_bits - 4 > NBI_ZSORT_DIGIT ? NBI_ZSORT_DIGIT
                                                      : id_bits - 4;
    const int passes = (code_bits + width - 1) / width;
    const size_t room = g->cell_code.cap / 2;
    uint64_t *ka = (uint64_t *)g->cell_code.ptr, *kb = ka + room;
    int32_t *count = (int32_t *)g->hist.ptr; // passes x 2^NBI_ZSORT_DIGIT
    int at[NBI_ZSORT_PASSES + 1];            // digit t: key bits at[t] .. at[t + 1] - 1
    for (int t = 0; t <= passes; t++) at[t] = id_bits + code_bits * t / passes;
    memset(count, 0, ((size_t)passes * sizeof(int32_t)) << NBI_ZSORT_DIGIT);
    // Pass 1: every point's key, and its digits counted.
    int32_t i = 0;
#if defined(__SSE2__)
    if (nbi_cells_fit_i32(g->lo, g->hi)) {
#if defined(NBI_AVX512)
        if (step == (size_t)dim && n >= 8 && nbi_use_avx512())
            i = nbi_zsort_keys8(data, n, dim, &g->cm, g->lo, id_bits, ka, count, at, passes);
#endif
        const nbiPackedCells pc = nbi_packed_cells(&g->cm, g->lo, g->ext);
        for (; i < n; i++) {
            const uint64_t key = nbi_packed_code(&pc, data + (size_t)i * step, dim) << id_bits;
            nbi_zsort_count(count, ka + i, key | (uint64_t)i, at, passes);
        }
    }
#endif
    for (; i < n; i++)
        nbi_zsort_count(count, ka + i, nbi_zsort_key(g, data + (size_t)i * step, i, id_bits), at,
                        passes);
    // The sort: stable passes, digit by digit (a digit every key shares is skipped).
    for (int t = 0; t < passes; t++) {
        const uint64_t dmask = ((uint64_t)1 << (at[t + 1] - at[t])) - 1;
        if (!nbi_radix_pass(ka, kb, n, at[t], dmask, count + ((size_t)t << NBI_ZSORT_DIGIT)))
            continue;
        uint64_t *kt = ka;
        ka = kb;
        kb = kt;
    }
    // The cells, in Z order: each new code starts one.
    uint64_t *code = (uint64_t *)g->cell_code.ptr; // ka or free
    int32_t *idx = (int32_t *)g->idx.ptr, *start = (int32_t *)g->start.ptr;
    const uint64_t id_mask = ((uint64_t)1 << id_bits) - 1;
    int32_t ncells = 0;
    uint64_t last = ~(uint64_t)0;
    for (int32_t p = 0; p < n; p++) {
        const uint64_t key = ka[p], c = key >> id_bits;
        idx[p] = (int32_t)(key & id_mask);
        if (c != last) {
            code[ncells] = c;
            start[ncells++] = p;
            last = c;
        }
    }
    start[ncells] = start[ncells + 1] = n;
    g->ncells = ncells;
    nbi_grid_gather(g, in, 0, n);
    g->code_shift = 0;
    g->low_codes = false;
    nbi_hashed_table(g);
    return ncells;
}

// ---- the hashed build by sorting, on two words ----
//
// A box wider than the codes reach (0 < code_shift <= NBI_CODE_LOW_MAX) names a cell exactly by
// two words, its code and its low code (view.h): ordered by both, the cells are in the Z order
// of their exact offsets. Where the low code and a point's number fit one word, a point's key is
// the pair (code, low code above the number), and sorting the pairs numbers the cells and places
// the points as nbi_hashed_sorted's one-word keys do (the same serves codes that are exact but
// too wide to share a word with the numbers). The count-and-renumber build it replaces there
// probed a table far larger than the caches for every point, then sorted its cells in up to
// thirteen passes of 10 bits. The keys span up to 127 bits, of which such sets share many in
// places (a dense core and far outliers: the corpus' tail3d), so the sort is MSD: a run of keys
// is split by a digit of the bits below those it shares, and runs of at most NBI_MSD_SMALL keys
// are finished by insertion. No pass is spent on bits a run shares: where every key of a run
// has the same digit (its count is the run's), the highest bit in which its keys differ is found
// and the digit taken below it. A heavy tail's keys spread over every scale, so a run seldom
// skips: each digit peels off a part of it, and the passes a key takes are about its differing
// bits over the digit's width. Runs of at least nbi_msd_wide_min keys take digits of
// NBI_MSD_WIDE bits (fewer passes over the many), smaller ones at most NBI_MSD_DIGIT bits
// (counts that stay cheap to clear and sum), about a run's own bits below 256 keys.
typedef struct nbiKey2 {
    uint64_t hi, lo;
} nbiKey2;

enum {
    NBI_MSD_SMALL = 16,
    NBI_MSD_DIGIT = 8,
    NBI_MSD_WIDE = 11,
};

int32_t nbi_msd_wide_min = 1 << 13;

NBI_INLINE bool nbi_key2_less(nbiKey2 a, nbiKey2 b)
{
    return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}

// The digit of key k at bits [at, at + w) of its 128 (hi above lo), a window within one word.
NBI_INLINE uint32_t nbi_key2_digit(nbiKey2 k, int at, uint64_t dmask)
{
    return (uint32_t)((at >= 64 ? k.hi >> (at - 64) : k.lo >> at) & dmask);
}

// The highest bit (of 128) in which the n > 1 keys a[] differ, or -1 when they are all equal.
static int nbi_key2_top_diff(const nbiKey2 *a, int32_t n)
{
    uint64_t dh = 0, dl = 0;
    for (int32_t i = 1; i < n; i++) {
        dh |= a[i].hi ^ a[0].hi;
        dl |= a[i].lo ^ a[0].lo;
    }
    if (dh != 0) return 64 + nbi_top_bit64(dh);
    return dl != 0 ? nbi_top_bit64(dl) : -1;
}

static void nbi_msd_sort2(nbiKey2 *a, nbiKey2 *t, int32_t n, bool back, int below, int32_t *aux);

// Runs of at least this many keys are counted into four tables and dealt through two cursors a
// digit (nbi_msd_level): a heavy tail's core gives long stretches of keys with one digit, whose
// counter or cursor each key would otherwise wait on (a store and a load of one address a key).
int32_t nbi_msd_split_min = 1024;

// One level of nbi_msd_sort2 with digits of `width` bits (end[] holds 2^width + 1 counts; aux
// 3 x 2^width, shared by every level): the run split by bits [at, below), each part sorted on.
// A digit that every key shares moves on to the bits below the highest in which the keys
// differ, without a pass.
static void nbi_msd_level(nbiKey2 *a, nbiKey2 *t, int32_t n, bool back, int below, int width,
                          int32_t *end, int32_t *aux)
{
    for (;;) {
        // The digit's window within one word, at most `width` bits below `below`.
        int at = below - width > 0 ? below - width : 0;
        if (at < 64 && below > 64) at = 64;
        const int w = below - at;
        const uint64_t dmask = ((uint64_t)1 << w) - 1;
        const size_t nd = (size_t)1 << w;
        // end[d]: first the count of digit d - 1, then each digit's first position, then (after
        // the scatter) each digit's end.
        memset(end, 0, nd * sizeof *end + sizeof *end);
        const bool split = n >= nbi_msd_split_min;
        int32_t i = 0;
        if (split) { // four tables: end (shifted by one) and aux's three, added up below
            int32_t *c1 = aux, *c2 = aux + nd, *c3 = aux + 2 * nd;
            memset(aux, 0, 3 * nd * sizeof *aux);
            for (; i + 4 <= n; i += 4) {
                end[nbi_key2_digit(a[i], at, dmask) + 1]++;
                c1[nbi_key2_digit(a[i + 1], at, dmask)]++;
                c2[nbi_key2_digit(a[i + 2], at, dmask)]++;
                c3[nbi_key2_digit(a[i + 3], at, dmask)]++;
            }
        }
        for (; i < n; i++) end[nbi_key2_digit(a[i], at, dmask) + 1]++;
        if (split)
            for (size_t d = 0; d < nd; d++) end[d + 1] += aux[d] + aux[nd + d] + aux[2 * nd + d];
        if (end[nbi_key2_digit(a[0], at, dmask) + 1] == n) { // one digit: skip to where they differ
            const int top = nbi_key2_top_diff(a, n);
            if (top < 0) { // equal keys (not for distinct ones): in order already
                if (!back) memcpy(t, a, (size_t)n * sizeof *a);
                return;
            }
            below = top + 1;
            continue;
        }
        for (uint32_t d = 1; d <= dmask + 1; d++) end[d] += end[d - 1];
        if (split) { // the first half from each digit's start up, the second from its end down
            // (The keys of a digit are in another order than one cursor leaves them: they are
            // distinct, and the runs are sorted on.)
            int32_t *hi = aux, *stop = aux + nd;
            for (size_t d = 0; d < nd; d++) hi[d] = stop[d] = end[d + 1];
            const int32_t h = n / 2;
            for (i = 0; i < h; i++) {
                t[end[nbi_key2_digit(a[i], at, dmask)]++] = a[i];
                t[--hi[nbi_key2_digit(a[n - 1 - i], at, dmask)]] = a[n - 1 - i];
            }
            if (n & 1) t[end[nbi_key2_digit(a[h], at, dmask)]++] = a[h];
            memcpy(end, stop, nd * sizeof *end);
        } else {
            for (i = 0; i < n; i++) t[end[nbi_key2_digit(a[i], at, dmask)]++] = a[i];
        }
        for (uint32_t d = 0; d <= dmask; d++) { // each run, now in t, to where it belongs
            const int32_t b0 = d == 0 ? 0 : end[d - 1], m = end[d] - b0;
            if (m > 1)
                nbi_msd_sort2(t + b0, a + b0, m, !back, at, aux);
            else if (m == 1 && back)
                a[b0] = t[b0];
        }
        return;
    }
}

// Sorts the n distinct keys a[] ascending, into a[] (`back`) or into t[], the other's scratch:
// each pass scatters from one to the other, and the runs go on from there (no copy back). The
// keys share their bits from `below` up (128: none). Each level's runs share the bits their
// parent split by, so the recursion is at most 128 / NBI_MSD_DIGIT + 1 deep (a kilobyte of stack
// a level; 8 KB for the levels of nbi_msd_wide_min keys or more, at most 128 / NBI_MSD_WIDE + 2).
// aux: 3 x 2^NBI_MSD_WIDE entries of scratch, shared by the levels.
static void nbi_msd_sort2(nbiKey2 *a, nbiKey2 *t, int32_t n, bool back, int below, int32_t *aux)
{
    if (n <= NBI_MSD_SMALL) {
        nbiKey2 *to = back ? a : t;
        for (int32_t i = 0; i < n; i++) {
            const nbiKey2 k = a[i];
            int32_t j = i;
            for (; j > 0 && nbi_key2_less(k, to[j - 1]); j--) to[j] = to[j - 1];
            to[j] = k;
        }
        return;
    }
    if (below <= 0) { // equal keys (not for distinct ones)
        if (!back) memcpy(t, a, (size_t)n * sizeof *a);
        return;
    }
    if (n >= nbi_msd_wide_min) {
        int32_t end[(1 << NBI_MSD_WIDE) + 1];
        nbi_msd_level(a, t, n, back, below, NBI_MSD_WIDE, end, aux);
    } else { // a digit of about a run's bits: few keys a part, few parts to walk
        int32_t end[(1 << NBI_MSD_DIGIT) + 1];
        const int w = nbi_top_bit64((uint64_t)n);
        nbi_msd_level(a, t, n, back, below, w < NBI_MSD_DIGIT ? w : NBI_MSD_DIGIT, end, aux);
    }
}

// A 3D key's spreads by table: spread[j] = nbi_spread3(j) for j < 2^11, so that an offset of up
// to 22 bits spreads in two loads (nbi_spread3 takes five steps of shift, or and mask): about 90
// instructions a key, floors included, against 200.
enum { NBI_SPREAD_BITS = 11, NBI_SPREAD_TABLE = 1 << NBI_SPREAD_BITS };

NBI_INLINE uint64_t nbi_spread3_by(const uint64_t *spread, uint64_t x)
{
    return spread[x & (NBI_SPREAD_TABLE - 1)] | spread[x >> NBI_SPREAD_BITS]
                                                    << (3 * NBI_SPREAD_BITS);
}

// The key of point i at q in 3D (nbi_hashed_sorted_wide): its cell's code, and its low code
// (0 < shift: nbi_code_low) above i, as nbi_code_of and nbi_code_low give them.
NBI_INLINE nbiKey2 nbi_wide_key3(const uint64_t *spread, const nbiCellMath *cm, const int64_t lo[3],
                                 const double *q, int shift, int id_bits, int32_t i)
{
    const uint64_t x = (uint64_t)(nbi_cell_i(cm, q[0]) - lo[0]);
    const uint64_t y = (uint64_t)(nbi_cell_i(cm, q[1]) - lo[1]);
    const uint64_t z = (uint64_t)(nbi_cell_i(cm, q[2]) - lo[2]);
    const uint64_t m = ((uint64_t)1 << shift) - 1;
    nbiKey2 k;
    k.hi = nbi_spread3_by(spread, x >> shift) | nbi_spread3_by(spread, y >> shift) << 1 |
           nbi_spread3_by(spread, z >> shift) << 2;
    const uint64_t low = nbi_spread3_by(spread, x & m) | nbi_spread3_by(spread, y & m) << 1 |
                         nbi_spread3_by(spread, z & m) << 2;
    k.lo = low << id_bits | (uint64_t)i;
    return k;
}

#if defined(NBI_AVX512)
// nbi_wide_key3 for packed 3D points, eight at a time: each cell through nbi_floor8 (every cell
// nbi_cell_i's), its offset from lo subtracted in double (exact: both are integers in double,
// lo a floor itself, and the offset below 2^42) and taken as an integer through the bits of
// offset + 2^52, the offsets spread by lanes. Returns how many points it took (a multiple of 8).
NBI_TARGET_AVX512 static int32_t nbi_wide_keys8(const double *data, int32_t n,
                                                const nbiCellMath *cm, const int64_t lo[3],
                                                int shift, int id_bits, nbiKey2 *key)
{
    const __m512d inv = nbi_floor8_inv(cm), by = _mm512_set1_pd(cm->cell);
    const __m512d magic = _mm512_set1_pd(0x1p52);
    const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i m = _mm512_set1_epi64((int64_t)(((uint64_t)1 << shift) - 1));
    const __m512i first = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
    const __m512i second = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
    const __m128i sh = _mm_cvtsi32_si128(shift);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d v[3];
        nbi_load8(data, i, n, 3, v);
        __m512i hi = _mm512_setzero_si512(), low = _mm512_setzero_si512();
        for (int d = 0; d < 3; d++) {
            const __m512d off =
                _mm512_sub_pd(nbi_floor8(v[d], inv, by), _mm512_set1_pd((double)lo[d]));
            const __m512i k = _mm512_sub_epi64(_mm512_castpd_si512(_mm512_add_pd(off, magic)),
                                               _mm512_castpd_si512(magic));
            const __m128i ad = _mm_cvtsi32_si128(d);
            hi = _mm512_or_si512(hi, _mm512_sll_epi64(nbi_spread8(_mm512_srl_epi64(k, sh), 3), ad));
            low =
                _mm512_or_si512(low, _mm512_sll_epi64(nbi_spread8(_mm512_and_si512(k, m), 3), ad));
        }
        const __m512i lw = _mm512_or_si512(_mm512_sll_epi64(low, _mm_cvtsi32_si128(id_bits)),
                                           _mm512_add_epi64(lane, _mm512_set1_epi64(i)));
        _mm512_storeu_si512((void *)(key + i), _mm512_permutex2var_epi64(hi, first, lw));
        _mm512_storeu_si512((void *)(key + i + 4), _mm512_permutex2var_epi64(hi, second, lw));
    }
    return i;
}
#endif

// The hashed build by sorting on two words, when the keys fit (see above): as
// nbi_hashed_sorted. Returns the number of cells, or -1 (nothing written) when they do not.
static int32_t nbi_hashed_sorted_wide(nbGrid *g, const nbiBuildIn *in)
{
    const int dim = g->dim, shift = nbi_code_shift(g->ext, dim);
    const int32_t n = in->n;
    const int id_bits = n > 1 ? nbi_top_bit64((uint64_t)(n - 1)) + 1 : 1;
    if (n <= 0 || shift > NBI_CODE_LOW_MAX(dim) || dim * shift + id_bits > 64) return -1;
    // The keys in cell_code (2N words at least), the sort's scratch in pts (N * dim doubles),
    // which the gather fills only at the end.
    nbiKey2 *key = (nbiKey2 *)g->cell_code.ptr;
    int32_t i = 0;
#if defined(NBI_AVX512)
    if (dim == 3 && in->step == 3 && n >= 8 && nbi_use_avx512())
        i = nbi_wide_keys8(in->data, n, &g->cm, g->lo, shift, id_bits, key);
#endif
    if (dim == 3) { // the spreads by table (in hist, free until the cells' directory)
        uint64_t *spread = (uint64_t *)g->hist.ptr;
        for (uint64_t j = 0; j < NBI_SPREAD_TABLE; j++) spread[j] = nbi_spread3(j);
        for (; i < n; i++) {
            const double *q = in->data + (size_t)i * in->step;
            key[i] = nbi_wide_key3(spread, &g->cm, g->lo, q, shift, id_bits, i);
        }
    }
    for (; i < n; i++) {
        const double *q = in->data + (size_t)i * in->step;
        const int64_t k[3] = {nbi_cell_i(&g->cm, q[0]), nbi_cell_i(&g->cm, q[1]),
                              dim == 3 ? nbi_cell_i(&g->cm, q[2]) : 0};
        key[i].hi = nbi_code_of(k, g->lo, dim, shift);
        key[i].lo = (shift > 0 ? nbi_code_low(k, g->lo, dim, shift) << id_bits : 0) | (uint64_t)i;
    }
    nbi_msd_sort2(key, (nbiKey2 *)g->pts.ptr, n, true, 128, (int32_t *)g->hist.ptr);
    // The cells: each new pair of codes starts one. Cell c's code overwrites word c of the keys,
    // which key c / 2 held (read already); the low codes wait in pts.
    uint64_t *code = (uint64_t *)g->cell_code.ptr, *low = (uint64_t *)g->pts.ptr;
    int32_t *idx = (int32_t *)g->idx.ptr, *start = (int32_t *)g->start.ptr;
    const uint64_t id_mask = ((uint64_t)1 << id_bits) - 1;
    int32_t ncells = 0;
    uint64_t last_hi = 0, last_lo = 0;
    for (int32_t p = 0; p < n; p++) {
        const nbiKey2 kp = key[p];
        const uint64_t lc = kp.lo >> id_bits;
        idx[p] = (int32_t)(kp.lo & id_mask);
        if (p == 0 || kp.hi != last_hi || lc != last_lo) {
            code[ncells] = last_hi = kp.hi;
            low[ncells] = last_lo = lc;
            start[ncells++] = p;
        }
    }
    start[ncells] = start[ncells + 1] = n;
    g->ncells = ncells;
    if (shift > 0) memcpy(code + ncells, low, (size_t)ncells * sizeof *code);
    nbi_grid_gather(g, in, 0, n);
    g->code_shift = shift;
    g->low_codes = shift > 0;
    nbi_hashed_table(g);
    return ncells;
}

// Pass 2 of a serial dense, periodic or hashed build: the cell of each point, counted into
// start[cell + 2]. Returns the cells, or -1 when a large dense build sorted in blocks instead
// (the build is then complete but for the filter bits).
static int32_t nbi_grid_count_serial(nbGrid *grid, const nbiGridPlan *plan)
{
    const nbiBuildIn *in = &plan->in;
    const int32_t n = in->n, dim = grid->dim;
    int32_t *cell_of = (int32_t *)grid->cell_of.ptr;
    int32_t *start = (int32_t *)grid->start.ptr;
    if (grid->wrapped) {
        const int32_t ncells = (int32_t)plan->box_cells;
        memset(start, 0, ((size_t)ncells + 2) * sizeof(int32_t));
        nbi_count_wrapped(grid, in->data, in->step, n, cell_of, start + 2, 0);
        return ncells;
    }
    if (!plan->hashed) {
        const int32_t ncells = (int32_t)plan->box_cells;
#if defined(__SSE2__)
        grid->ncells = ncells;
        if (plan->blocked && nbi_build_blocked(grid, in->data, n)) return -1;
#endif
        memset(start, 0, ((size_t)ncells + 2) * sizeof(int32_t));
#if defined(__SSE2__)
        if (in->step == (size_t)dim && nbi_cells_fit_i32(grid->lo, grid->hi)) {
            nbi_count_packed(in->data, n, dim, &grid->cm, grid->lo, grid->ext, cell_of, start + 2,
                             0);
            return ncells;
        }
#endif
        NBI_BY_LAYOUT(nbi_count_dense, in->data, in->step, n, dim, &grid->cm, grid->lo, grid->ext,
                      cell_of, start, 0);
        return ncells;
    }
    // A table for the last hashed build's cells and a quarter more (if smaller than one for n
    // cells) is cleared in a fraction of the time; a build that finds more cells than it holds
    // counts again in the full one.
    const int32_t full = nbi_ctab_bits_packed((size_t)n);
    const int32_t last = grid->hashed_cells;
    int32_t bits = last > 0 ? nbi_ctab_bits_packed((size_t)last + (size_t)last / 4 + 16) : full;
    bits = bits < full ? bits : full;
    int32_t ncells = nbi_hashed_count(grid, in->data, in->step, n, bits);
    if (ncells < 0) ncells = nbi_hashed_count(grid, in->data, in->step, n, full);
    grid->hashed_cells = ncells;
    nbi_hashed_order(grid, ncells);
    return ncells;
}

// Sorts the planned points into the grid (room made, fields set): on the caller's scheduler,
// ranked, or serially by count, prefix sum and scatter. Cannot fail.
static void nbi_grid_fill(nbGrid *grid, const nbiGridPlan *plan)
{
    const nbiBuildIn *in = &plan->in;
    const int32_t n = in->n;
    if (plan->parallel && !plan->sparse) { // dense, periodic or not
        grid->ncells = (int32_t)plan->box_cells;
        nbi_grid_build_parallel(grid, in, plan->blocked);
        return;
    }
    if (plan->ranked) {
        grid->cells_kept = false;
        if (plan->parallel) {
            nbi_grid_build_ranked_parallel(grid, in);
            nbi_ranked_spans(grid);
            return;
        }
        grid->ncells = nbi_ranked_build(grid, in);
        nbi_grid_gather(grid, in, 0, n);
        nbi_ranked_spans(grid);
        return;
    }
    if (plan->hashed) { // sorted by code, where the keys fit in one word or two
        int32_t sorted = nbi_hashed_sorted(grid, in);
        if (sorted < 0) sorted = nbi_hashed_sorted_wide(grid, in);
        if (sorted > 0) {
            grid->cells_kept = false;
            grid->hashed_cells = sorted;
            return;
        }
    }
    const int32_t ncells = nbi_grid_count_serial(grid, plan);
    if (ncells < 0) { // sorted in blocks
        nbi_grid_gather_bits(grid, in, 0, n);
        return;
    }
    grid->ncells = ncells;
    int32_t *start = (int32_t *)grid->start.ptr;
    // Pass 3: exclusive prefix sum, shifted by one: start[c + 1] = first position of cell c.
    for (int64_t c = 2; c < (int64_t)ncells + 2; c++) start[c] += start[c - 1];
    // Pass 4: the scatter. Afterwards start[c + 1] has advanced to the end of cell c, i.e.
    // start[c] is cell c's first position.
    nbi_grid_scatter((const int32_t *)grid->cell_of.ptr, start + 1, 0, n, (int32_t *)grid->idx.ptr);
    nbi_grid_gather(grid, in, 0, n);
}

// A build from scratch: plan (all checks), make room (all or nothing), then replace the
// contents.
static nbStatus nbi_grid_build_fresh(nbGrid *grid, const nbPoints *points, double radius)
{
    nbiGridPlan plan;
    const nbStatus st = nbi_grid_plan(grid, points, radius, &plan);
    if (st != NB_OK) return st;
    if (!nbi_grid_grow(grid, plan.need, false)) return NB_ERR_OUT_OF_MEMORY;

    // Nothing can fail from here on: replace the contents.
    grid->n = plan.in.n;
    grid->cm = plan.cm;
    grid->max_abs = plan.max_abs;
    grid->hashed = plan.hashed;
    grid->ranked = plan.ranked;
    grid->cells_kept = true; // until a blocked or ranked build says otherwise
    grid->filtered = plan.filtered;
    grid->row_spans = plan.spans;
    grid->had_bits |= plan.filtered;
    memcpy(grid->lo, plan.lo, sizeof plan.lo);
    memcpy(grid->hi, plan.hi, sizeof plan.hi);
    memcpy(grid->ext, plan.ext, sizeof plan.ext);
    if (grid->wrapped) grid->wrap = plan.wrap;
    nbi_grid_fill(grid, &plan);
    return NB_OK;
}

#if defined(__SSE2__)
// ---- rebuilding on the last build's cells ----
//
// A simulation rebuilds every step from points that have barely moved: the box, and so the
// cells, are those of the last build. A rebuild then reads the points once instead of twice:
// nbi_scan_count_packed checks and bounds them while counting them into the last build's cells
// and the result
// is kept when the cell edge the points call for is the same and their box lies within the last
// one, at most a cell wider on each side. The cell order is the same as a fresh build's (cells are
// numbered row-major in either box), so every answer is too. Otherwise the build starts afresh, and
// a miss pauses the attempts for a few builds, so that a box on the move pays the extra read only
// now and then.
enum { NBI_REBUILD_PAUSE = 8 };

// Whether packed points' cells, under the last build's cell math and box, mostly ascend in
// input order, as in a simulation that keeps its arrays in cell order (nb_grid_cell_order):
// fewer than one in eight of (up to) 1024 sampled neighbours steps back. The cell numbers are
// taken in double, exact for every cell of the box and harmless for any other coordinate.
static bool nbi_mostly_ordered(const nbGrid *g, const double *data, int32_t n)
{
    const int32_t samples = n - 1 < 1024 ? n - 1 : 1024, dim = g->dim;
    int32_t back = 0;
    double cell[2];
    for (int32_t k = 0; k < samples; k++) {
        const int32_t i = (int32_t)((int64_t)k * (n - 1) / samples);
        for (int32_t j = 0; j < 2; j++) {
            const double *q = data + (size_t)(i + j) * (size_t)dim;
            double c = 0.0;
            for (int a = dim - 1; a >= 0; a--)
                c = c * (double)g->ext[a] + (nbi_cell_f(&g->cm, q[a]) - (double)g->lo[a]);
            cell[j] = c;
        }
        back += cell[1] < cell[0];
    }
    return samples > 0 && back < samples / 8;
}

// Whether a build of `points` may try the last build's cells: packed points without filter
// bits, the last build dense and not periodic, every buffer already large enough, and on a
// scheduler fewer points than a large (blocked) build and rows of ncells + 2 per chunk in hist.
static bool nbi_grid_may_rebuild(nbGrid *g, const nbPoints *points, double radius)
{
    if (g == NULL || points == NULL || points->data == NULL || !(radius >= 0.0) ||
        !isfinite(radius))
        return false;
    const int32_t n = points->count, dim = g->dim;
    if (n <= 0 || g->n <= 0 || g->hashed || g->ranked || g->wrapped ||
        (points->dim != 0 && points->dim != dim) ||
        (points->stride != 0 && points->stride != (size_t)dim * sizeof(double)) ||
        points->category != NULL || points->mask != NULL)
        return false;
    // On the scheduler: below the large builds' size (their blocked passes, already parallel,
    // beat a rebuild's count in random order), with rows for every chunk.
    const bool parallel = nbi_grid_parallel(g) && n >= NBI_PARALLEL_MIN_POINTS;
    if (parallel && (n >= nbi_blocked_min_points ||
                     g->hist.cap < (size_t)nbi_grid_build_chunks(g) * ((size_t)g->ncells + 2)))
        return false;
    if ((size_t)n > g->idx.cap || (size_t)n > g->cell_of.cap || (size_t)n * dim > g->pts.cap ||
        (g->had_bits && ((size_t)n > g->cat.cap || (size_t)n > g->mask.cap)) ||
        !nbi_cells_fit_i32(g->lo, g->hi) ||
        (double)g->ncells > (double)NBI_DENSE_CELLS_PER_POINT * n + NBI_DENSE_MIN_CELLS)
        return false;
    if (g->rebuild_pause > 0) {
        g->rebuild_pause--;
        return false;
    }
    // A large build out of cell order is cheaper afresh: the rebuild's count would miss the
    // caches on every point, where a fresh build sorts in blocks (see "large builds").
    return n < nbi_blocked_min_points || nbi_mostly_ordered(g, points->data, n);
}

bool nbi_scan_count(const nbGrid *g, const double *data, int32_t n, int32_t *cell_of,
                    int32_t *counts, double mn[3], double mx[3])
{
    if (g->dim == 2)
        return nbi_scan_count_packed(data, n, 2, &g->cm, g->lo, g->ext, g->ncells, cell_of, counts,
                                     mn, mx);
    return nbi_scan_count_packed(data, n, 3, &g->cm, g->lo, g->ext, g->ncells, cell_of, counts, mn,
                                 mx);
}

// Puts back start and cell_of, which a rebuild's pass overwrote, for the grid's contents: its
// points are still in pts, in cell order, so one pass over them recounts every cell.
static void nbi_grid_restore(nbGrid *g)
{
    int32_t *start = (int32_t *)g->start.ptr, *cell_of = (int32_t *)g->cell_of.ptr;
    const int32_t *idx = (const int32_t *)g->idx.ptr;
    const double *pts = (const double *)g->pts.ptr;
    const int64_t e0 = g->ext[0], e01 = g->ext[0] * g->ext[1];
    memset(start, 0, ((size_t)g->ncells + 2) * sizeof(int32_t));
    for (int32_t p = 0; p < g->n; p++) {
        const double *q = pts + (size_t)p * (size_t)g->dim;
        int64_t c =
            (nbi_cell_i(&g->cm, q[0]) - g->lo[0]) + e0 * (nbi_cell_i(&g->cm, q[1]) - g->lo[1]);
        if (g->dim == 3) c += e01 * (nbi_cell_i(&g->cm, q[2]) - g->lo[2]);
        cell_of[idx[p]] = (int32_t)c;
        start[c + 1]++;
    }
    for (int32_t c = 1; c <= g->ncells; c++) start[c] += start[c - 1];
    g->cells_kept = true;
}

// Passes 4 and 4b in one, for packed points mostly in cell order already: each point's index
// and coordinates go straight to its position, which lies near its own index, so the writes
// stream (in random order the two passes move less memory: see nbi_grid_scatter). The points
// that moved to another cell since the reordering write far from the stream, each a miss: their
// lines are prefetched (by the counter's value now, 2 * NBI_HASH_AHEAD points ahead) so that the
// misses overlap. Measured on 1M points a few steps after a reordering: 30% off this pass.
NBI_INLINE void nbi_scatter_points(const int32_t *cell_of, int32_t *next, int32_t n,
                                   const double *data, int dim, int32_t *idx, double *pts)
{
    const int32_t far = 2 * NBI_HASH_AHEAD;
    for (int32_t i = 0; i < n; i++) {
        if (i + far < n) {
            const int32_t f = next[cell_of[i + far]];
            nbi_prefetch_w(idx + f);
            nbi_prefetch_w(pts + (size_t)f * (size_t)dim);
        }
        const int32_t p = next[cell_of[i]]++;
        idx[p] = i;
        const double *q = data + (size_t)i * (size_t)dim;
        _mm_storeu_pd(pts + (size_t)p * (size_t)dim, _mm_loadu_pd(q));
        if (dim == 3) pts[(size_t)p * 3 + 2] = q[2];
    }
}

// Tries the rebuild. Returns true when it has answered the call (*st: NB_OK, or
// NB_ERR_NOT_FINITE with the grid as it was); false when the build must start afresh, with
// start and cell_of overwritten (the caller restores them if that build fails).
static bool nbi_grid_rebuild(nbGrid *g, const nbPoints *points, double radius, nbStatus *st)
{
    const int32_t n = points->count, dim = g->dim, ncells = g->ncells;
    int32_t *start = (int32_t *)g->start.ptr;
    double mn[3], mx[3];
    int32_t *cell_of = (int32_t *)g->cell_of.ptr;
    // On the scheduler, each chunk counts into its own row of hist (nbi_grid_may_rebuild).
    const bool parallel = nbi_grid_parallel(g) && n >= NBI_PARALLEL_MIN_POINTS;
    const nbiBuildIn in = {points->data, (size_t)dim, n, dim, NULL, NULL, 0, 0};
    bool finite;
    if (parallel) {
        finite = nbi_grid_rescan_parallel(g, &in, mn, mx);
    } else {
        memset(start, 0, ((size_t)ncells + 2) * sizeof(int32_t));
        finite = nbi_scan_count(g, points->data, n, cell_of, start, mn, mx);
    }
    if (!finite) {
        nbi_grid_restore(g);
        *st = NB_ERR_NOT_FINITE;
        return true;
    }
    double max_abs = 0.0;
    for (int a = 0; a < dim; a++) {
        max_abs = fabs(mn[a]) > max_abs ? fabs(mn[a]) : max_abs;
        max_abs = fabs(mx[a]) > max_abs ? fabs(mx[a]) : max_abs;
    }
    const double cell = g->desc_cell > 0.0 ? nbi_cell_snap(g->desc_cell, radius, max_abs)
                                           : nbi_cell_for_radius(radius, max_abs);
    bool keep = cell == g->cm.cell; // and every point in the box:
    for (int a = 0; a < dim && keep; a++) {
        const double l = nbi_cell_f(&g->cm, mn[a]), h = nbi_cell_f(&g->cm, mx[a]);
        keep = l >= (double)g->lo[a] && h <= (double)g->hi[a] &&
               (double)g->ext[a] <= h - l + 3.0; // at most a cell of slack on each side
    }
    if (!keep) {
        g->rebuild_pause = NBI_REBUILD_PAUSE;
        return false;
    }
    // Nothing can fail from here on: passes 3 and 4 as in a fresh build.
    g->n = n;
    g->max_abs = max_abs;
    g->filtered = false;
    g->cells_kept = true;
    if (parallel) {
        nbi_grid_rebuild_parallel(g, &in);
        *st = NB_OK;
        return true;
    }
    for (int64_t c = 2; c < (int64_t)ncells + 2; c++) start[c] += start[c - 1];
    int32_t *idx = (int32_t *)g->idx.ptr;
    if (nbi_mostly_ordered(g, points->data, n)) {
        if (dim == 2)
            nbi_scatter_points(cell_of, start + 1, n, points->data, 2, idx, (double *)g->pts.ptr);
        else
            nbi_scatter_points(cell_of, start + 1, n, points->data, 3, idx, (double *)g->pts.ptr);
    } else {
        nbi_grid_scatter(cell_of, start + 1, 0, n, idx);
        nbi_grid_gather(g, &in, 0, n);
    }
    *st = NB_OK;
    return true;
}
#endif

static nbStatus nbi_grid_build_any(nbGrid *grid, const nbPoints *points, double radius)
{
#if defined(__SSE2__)
    if (nbi_grid_may_rebuild(grid, points, radius)) {
        nbStatus st;
        if (nbi_grid_rebuild(grid, points, radius, &st)) return st;
        st = nbi_grid_build_fresh(grid, points, radius);
        if (st != NB_OK) nbi_grid_restore(grid);
        return st;
    }
#endif
    return nbi_grid_build_fresh(grid, points, radius);
}

nbStatus nb_grid_build(nbGrid *grid, const nbPoints *points, double radius)
{
    const nbStatus st = nbi_grid_build_any(grid, points, radius);
    if (grid != NULL) nbi_grid_view_refresh(grid);
    return st;
}

void nbi_grid_gather(const nbGrid *g, const nbiBuildIn *in, int32_t p0, int32_t p1)
{
    const int32_t *idx = (const int32_t *)g->idx.ptr;
    NBI_BY_LAYOUT(nbi_gather_layout, in->data, in->step, p0, in->dim, p1, idx,
                  (double *)g->pts.ptr);
    nbi_grid_gather_bits(g, in, p0, p1);
}

// The filter bits follow the points into cell order (NULL means all bits).
void nbi_grid_gather_bits(const nbGrid *g, const nbiBuildIn *in, int32_t p0, int32_t p1)
{
    if (!g->filtered) return;
    const int32_t *idx = (const int32_t *)g->idx.ptr;
    uint32_t *cat = (uint32_t *)g->cat.ptr, *mask = (uint32_t *)g->mask.ptr;
    for (int32_t p = p0; p < p1; p++) {
        cat[p] = in->category ? nbi_bits_at(in->category, in->cat_stride, idx[p]) : 0xFFFFFFFFu;
        mask[p] = in->mask ? nbi_bits_at(in->mask, in->mask_stride, idx[p]) : 0xFFFFFFFFu;
    }
}

void nbi_grid_view_refresh(nbGrid *g)
{
    if (g->table.codes != NULL) { // coded: its keys' arrays may have moved
        g->table.codes = (const uint64_t *)g->cell_code.ptr;
        if (g->table.lows != NULL) g->table.lows = g->table.codes + g->ncells;
    }
    g->view = nbi_grid_view(g);
    nbi_knn_index_stale(&g->knn);
}

nbiView nbi_grid_view(const nbGrid *g)
{
    nbiView v;
    v.dim = g->dim;
    v.n = g->n;
    v.pts = (const double *)g->pts.ptr;
    v.idx = (const int32_t *)g->idx.ptr;
    v.cat = g->filtered ? (const uint32_t *)g->cat.ptr : NULL;
    v.mask = g->filtered ? (const uint32_t *)g->mask.ptr : NULL;
    v.start = (const int32_t *)g->start.ptr;
    v.ncells = g->n > 0 ? g->ncells : 0;
    v.cm = g->cm;
    v.max_abs = g->max_abs;
    memcpy(v.lo, g->lo, sizeof v.lo);
    memcpy(v.hi, g->hi, sizeof v.hi);
    memcpy(v.ext, g->ext, sizeof v.ext);
    v.table = g->hashed ? &g->table : NULL;
    v.cell_slot = (const uint32_t *)g->cell_slot.ptr;
    v.occ = g->ranked ? (const uint64_t *)g->occ.ptr : NULL;
    v.occ_rank = g->ranked ? (const int32_t *)g->occ_rank.ptr : NULL;
    v.cell_box = g->ranked ? (const uint32_t *)g->cell_slot.ptr : NULL;
    v.cell_keys = NULL;
    v.cell_code = g->hashed ? (const uint64_t *)g->cell_code.ptr : NULL;
    v.code_shift = g->code_shift;
    v.cell_low = g->hashed && g->low_codes ? (const uint64_t *)g->cell_code.ptr + g->ncells : NULL;
    v.cell_seen = g->hashed ? (const uint64_t *)g->cell_seen.ptr : NULL;
    v.seen_bits = g->seen_bits;
    const bool indexed = g->hashed && g->table.lazy != NULL; // the sorted builds (nbi_hashed_dir)
    v.cell_dir = indexed ? (const int32_t *)g->cell_dir.ptr : NULL;
    v.cell_zseen = indexed ? (const uint64_t *)g->cell_zseen.ptr : NULL;
    v.dir_bits = g->dir_bits;
    v.dir_shift = g->dir_shift;
    v.end = NULL;
    v.wrap = g->wrapped ? &g->wrap : NULL;
    v.row_span = g->ranked && g->row_spans ? (const int32_t *)g->row_span.ptr : NULL;
    return v;
}

size_t nb_grid_memory_bytes(const nbGrid *grid)
{
    if (grid == NULL) return 0;
    nbiBuf *buf[NBI_GRID_BUFS];
    size_t elem[NBI_GRID_BUFS], bytes = sizeof(nbGrid);
    nbi_grid_bufs((nbGrid *)grid, buf, elem);
    for (int i = 0; i < NBI_GRID_BUFS; i++) bytes += buf[i]->cap * elem[i];
    for (int k = 0; k < NBI_MAX_CHUNKS; k++) bytes += grid->scratch[k].cap * sizeof(nbPair);
    return bytes + nbi_knn_index_bytes(&grid->knn);
}

nbStatus nb_grid_info(const nbGrid *grid, nbGridInfo *info)
{
    if (grid == NULL || info == NULL) return NB_ERR_NULL_ARG;
    info->dim = grid->dim;
    info->points = grid->n;
    info->cells = grid->n > 0 ? grid->ncells : 0;
    info->hashed = grid->hashed || grid->ranked;
    info->ranked = grid->ranked;
    info->cell_size = grid->cm.cell;
    info->bytes = nb_grid_memory_bytes(grid);
    return NB_OK;
}

nbStatus nb_grid_validate(const nbGrid *grid)
{
    if (grid == NULL) return NB_ERR_NULL_ARG;
    const nbGrid *g = grid;
    NBI_CHECK(g->dim == 2 || g->dim == 3);
    NBI_CHECK(g->n >= 0);
    NBI_CHECK(isfinite(g->cm.cell) && g->cm.cell > 0.0);
    if (g->n == 0) return NB_OK;
    NBI_CHECK(g->ncells > 0 && (size_t)g->ncells + 2 <= g->start.cap);
    NBI_CHECK((size_t)g->n * (size_t)g->dim <= g->pts.cap && (size_t)g->n <= g->idx.cap);
    const int32_t *start = (const int32_t *)g->start.ptr, *idx = (const int32_t *)g->idx.ptr;
    const int32_t *cell_of = (const int32_t *)g->cell_of.ptr;
    const double *pts = (const double *)g->pts.ptr;
    NBI_CHECK(start[0] == 0 && start[g->ncells] == g->n);
    for (int a = 0; a < 3; a++)
        NBI_CHECK(g->lo[a] <= g->hi[a] && g->ext[a] == g->hi[a] - g->lo[a] + 1);
    const nbiView v = nbi_grid_view(g);
    NBI_CHECK(nbi_view_same(&v, &g->view));
    if (g->hashed) {
        nbi_ctab_ready(&g->table); // a table filled on first use: fill it now
        NBI_CHECK(g->table.lazy == NULL || g->table.lazy == &g->table_lazy);
        NBI_CHECK(g->ncells <= g->n && (size_t)g->ncells <= g->cell_slot.cap);
        NBI_CHECK(2 * (size_t)g->ncells <= g->cell_code.cap &&
                  g->code_shift == nbi_code_shift(g->ext, g->dim));
        const int32_t seen_packed = // a coded table is sized at most half full (one bit more)
            g->table.codes != NULL ? nbi_ctab_bits_packed((size_t)g->ncells) : g->table.bits;
        NBI_CHECK(g->seen_bits == seen_packed + NBI_SEEN_PER_SLOT_LOG2 &&
                  ((size_t)1 << g->seen_bits) / 64 <= g->cell_seen.cap);
        NBI_CHECK(nbi_ctab_validate(&g->table) && g->table.count == g->ncells);
    } else if (g->ranked) {
        const int64_t box = g->ext[0] * g->ext[1] * g->ext[2], nwords = (box >> 6) + 1;
        NBI_CHECK(!g->hashed && box < INT32_MAX && g->ncells <= g->n);
        NBI_CHECK((size_t)g->ncells <= g->cell_slot.cap && (size_t)nwords <= g->occ.cap &&
                  (size_t)nwords <= g->occ_rank.cap);
        const uint64_t *occ = (const uint64_t *)g->occ.ptr;
        const int32_t *rank = (const int32_t *)g->occ_rank.ptr;
        int32_t before = 0;
        for (int64_t w = 0; w < nwords; w++) {
            NBI_CHECK(rank[w] == before);
            before += nbi_popcount64(occ[w]);
        }
        NBI_CHECK(before == g->ncells && (occ[nwords - 1] >> (box & 63)) == 0);
        if (g->row_spans) NBI_CHECK(nbi_ranked_spans_hold(g, occ));
    } else {
        NBI_CHECK((int64_t)g->ncells == g->ext[0] * g->ext[1] * g->ext[2]);
    }
    for (int a = 0; a < 3 && g->wrapped; a++) { // periodic axes: the arc's cells 0 .. ext - 1
        const int64_t m = g->wrap.m[a], c0 = g->wrap.c0[a];
        NBI_CHECK(!g->hashed && m >= 0 && (m > 0) == (g->wrap.period[a] > 0));
        if (m > 0)
            NBI_CHECK(g->lo[a] == 0 && g->ext[a] >= 1 && g->ext[a] <= m && c0 >= 0 && c0 < m &&
                      (g->ext[a] < m || c0 == 0));
        else
            NBI_CHECK(c0 == 0);
    }
    if (g->filtered) NBI_CHECK((size_t)g->n <= g->cat.cap && (size_t)g->n <= g->mask.cap);
    for (int32_t c = 0; c < g->ncells; c++) {
        NBI_CHECK(start[c] <= start[c + 1]);
        int64_t k[3];
        nbi_view_cell_key(&v, c, k);
        if (g->hashed) { // the codes against the coordinates the table keeps (or its codes)
            const uint64_t *code = (const uint64_t *)g->cell_code.ptr;
            if (g->table.codes != NULL) {
                NBI_CHECK(g->table.codes == code && g->table.shift == g->code_shift &&
                          g->table.lows == v.cell_low && g->table.dim == g->dim);
                for (int a = 0; a < 3; a++) NBI_CHECK(g->table.lo[a] == g->lo[a]);
            } else {
                const uint32_t slot = ((const uint32_t *)g->cell_slot.ptr)[c];
                NBI_CHECK(((uint64_t)slot >> g->table.bits) == 0);
                const int64_t *key = nbi_ctab_slots(&g->table)[slot].key;
                NBI_CHECK(key[0] == k[0] && key[1] == k[1] && key[2] == k[2]);
            }
            NBI_CHECK(code[c] == nbi_code_of(k, g->lo, g->dim, g->code_shift));
            NBI_CHECK(nbi_view_may_hold(&v, nbi_cell_hash(k[0], k[1], k[2])));
            NBI_CHECK(c == 0 || code[c - 1] <= code[c]);
            if (v.cell_dir != NULL) { // the sorted builds' index of the codes (nbi_hashed_dir)
                const uint64_t i = code[c] >> v.dir_shift;
                NBI_CHECK(v.dir_bits < 31 && (i >> v.dir_bits) == 0 && v.cell_zseen != NULL &&
                          ((size_t)1 << v.dir_bits) + 1 <= g->cell_dir.cap &&
                          ((size_t)1 << g->seen_bits) / 64 <= g->cell_zseen.cap);
                NBI_CHECK(v.cell_dir[i] <= c && c < v.cell_dir[i + 1]);
                NBI_CHECK(c == 0 || (code[c - 1] >> v.dir_shift) == i || v.cell_dir[i] == c);
                const uint64_t h = nbi_zkey_hash(code[c], v.cell_low != NULL ? v.cell_low[c] : 0);
                NBI_CHECK(nbi_view_zmay_hold(&v, h));
            }
            if (v.cell_low != NULL) {
                NBI_CHECK(v.cell_low[c] == nbi_code_low(k, g->lo, g->dim, g->code_shift));
                NBI_CHECK(c == 0 || code[c - 1] < code[c] || v.cell_low[c - 1] < v.cell_low[c]);
            }
        }
        for (int a = 0; a < 3; a++) NBI_CHECK(k[a] >= g->lo[a] && k[a] <= g->hi[a]);
        NBI_CHECK(nbi_view_cell(&v, k[0], k[1], k[2]) == c);
        if (g->hashed || g->ranked) NBI_CHECK(start[c] < start[c + 1]);
        if (g->ranked && c > 0) {
            const uint32_t *box = (const uint32_t *)g->cell_slot.ptr;
            NBI_CHECK(box[c - 1] < box[c]);
        }
        for (int32_t p = start[c]; p < start[c + 1]; p++) {
            NBI_CHECK(idx[p] >= 0 && idx[p] < g->n);
            NBI_CHECK(p == start[c] || idx[p - 1] < idx[p]);
            NBI_CHECK(!g->cells_kept || cell_of[idx[p]] == c);
            for (int a = 0; a < g->dim; a++) {
                double x = pts[(size_t)p * g->dim + a];
                NBI_CHECK(isfinite(x) && fabs(x) <= g->max_abs);
                if (g->wrapped && g->wrap.m[a] > 0)
                    NBI_CHECK(x >= 0.0 && x < g->wrap.period[a] &&
                              nbi_view_axis_cell(&v, a, x) == k[a]);
                else
                    NBI_CHECK(nbi_cell_f(&g->cm, x) == (double)k[a]);
            }
        }
    }
    return NB_OK;
}
