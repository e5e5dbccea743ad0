// SPDX-License-Identifier: MIT
// Neighbour lists (neighbors.h): compressed rows from the grid's cross-pair walker, a list that
// keeps them in storage it grows, and the Verlet list.
//
// Rows. A set against itself is the set against a second copy of itself: the cross walker
// (pairs.c) meets every (i, j) within r once with roles kept, so each unordered pair comes in
// both directions, and the pairs (i, i) are dropped. The walker's pairs come a block at a time
// (sink.h, block mode) and go through a counting sort by i:
//   1. count: offsets[i + 1] += 1 for every pair (i, j);
//   2. prefix: offsets[i + 1] becomes row i's first entry;
//   3. fill: the walk again, neighbors[offsets[i + 1]++] = j, after which offsets[i + 1] is row
//      i's end, i.e. row i + 1's start, and offsets is final;
//   4. sort: each row ascending (insertion sort: rows are short and, for points in cell order,
//      nearly sorted already).
// Walking twice costs less than keeping the pairs in between (no allocation, and the pairs of
// 1M points would be 60 MB of memory traffic each way). With a scheduler, passes 1, 3 and 4
// run on chunks of a's cells (1, 3: each point's row belongs to one chunk, so no two workers
// touch one counter) and of the rows (4); the result is the serial one.
//
// Verlet. The candidates are the rows of a list at r + skin from the positions of the last
// build, kept with those positions. A pair within r now was within r + 2 d_max then, where
// d_max is the largest displacement since: within r + skin while d_max <= skin / 2. The
// displacement is measured in double, so the threshold keeps a margin of a few ulps of the
// lengths involved (nbi_verlet_margin), and the candidates are searched at the grid's radius
// r + skin whose test accepts every pair its reach does. The rows are the candidates with
// d2 <= r*r from the current positions, in their (ascending) order: filtered into rows by
// index, or in cell order marked by a keep bit each, re-tested only where the displacement
// can have changed the answer (see struct nbVerlet). In candidates form the rows are the
// candidates themselves (the list's own rows at r + skin) and the reader tests them: an update
// without a rebuild is one streaming pass over the points beside the rebuild's copy of them.
#include <nearby/neighbors.h>

#include "grid_internal.h"
#include "simd.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// Below this many points the passes run serially even with a scheduler.
enum { NBI_ROWS_PARALLEL_MIN = 4096 };

// ---- rows into the caller's buffers ----

typedef struct nbiRowsCtx {
    const nbiView *a, *b;
    double radius;
    bool self;        // drop (i, i)
    int32_t *offsets; // a->n + 1
    int32_t *nb;      // the fill pass's destination
    int32_t chunks;   // runs of a's cells
    int32_t unit[NBI_MAX_CHUNKS + 1];
    nbStatus status[NBI_MAX_CHUNKS];
} nbiRowsCtx;

static void nbi_rows_count_block(const nbPair *w, int64_t m, void *user)
{
    const nbiRowsCtx *x = (const nbiRowsCtx *)user;
    int32_t *cnt = x->offsets + 1;
    if (x->self) {
        for (int64_t t = 0; t < m; t++) cnt[w[t].i] += w[t].i != w[t].j;
        return;
    }
    for (int64_t t = 0; t < m; t++) cnt[w[t].i]++;
}

static void nbi_rows_fill_block(const nbPair *w, int64_t m, void *user)
{
    const nbiRowsCtx *x = (const nbiRowsCtx *)user;
    int32_t *cur = x->offsets + 1, *nb = x->nb;
    if (x->self) {
        for (int64_t t = 0; t < m; t++)
            if (w[t].i != w[t].j) nb[cur[w[t].i]++] = w[t].j;
        return;
    }
    for (int64_t t = 0; t < m; t++) nb[cur[w[t].i]++] = w[t].j;
}

// The half stencil (a set against itself, serially): each unordered pair once, into both rows.
static void nbi_rows_count_half(const nbPair *w, int64_t m, void *user)
{
    int32_t *cnt = ((const nbiRowsCtx *)user)->offsets + 1;
    for (int64_t t = 0; t < m; t++) {
        cnt[w[t].i]++;
        cnt[w[t].j]++;
    }
}

static void nbi_rows_fill_half(const nbPair *w, int64_t m, void *user)
{
    const nbiRowsCtx *x = (const nbiRowsCtx *)user;
    int32_t *cur = x->offsets + 1, *nb = x->nb;
    for (int64_t t = 0; t < m; t++) {
        nb[cur[w[t].i]++] = w[t].j;
        nb[cur[w[t].j]++] = w[t].i;
    }
}

// One chunk of a's cells through the walker, in the block mode `block`.
static void nbi_rows_walk(nbiRowsCtx *x, int32_t k, nbiPairBlockFn *block)
{
    nbiPairSink s;
    // One chunk of a set against itself: the half stencil meets each pair once, at half the
    // distance tests of the cross walk (whose chunks never share a row: the scheduler's).
    if (x->self && x->chunks == 1) {
        nbi_pair_sink_block(
            &s, block == nbi_rows_count_block ? nbi_rows_count_half : nbi_rows_fill_half, x);
        x->status[k] = nbi_walk_pairs(x->a, x->radius, x->unit[k], x->unit[k + 1], &s);
        return;
    }
    nbi_pair_sink_block(&s, block, x);
    x->status[k] = nbi_walk_cross_range(x->a, x->b, x->radius, x->unit[k], x->unit[k + 1], &s);
}

static void nbi_rows_count_task(int32_t k0, int32_t k1, int32_t worker, void *ctx)
{
    (void)worker;
    for (int32_t k = k0; k < k1; k++) nbi_rows_walk((nbiRowsCtx *)ctx, k, nbi_rows_count_block);
}

static void nbi_rows_fill_task(int32_t k0, int32_t k1, int32_t worker, void *ctx)
{
    (void)worker;
    for (int32_t k = k0; k < k1; k++) nbi_rows_walk((nbiRowsCtx *)ctx, k, nbi_rows_fill_block);
}

// Sorts a[0 .. n) ascending: insertion sort, linear on the nearly sorted rows of points in
// cell order; long rows take a shell sort's larger gaps first. For int32_t indices, and for
// uint64_t keys (an index above a position: the list sorts its entries with their positions).
#define NBI_SORT_ROW(name, T)                                                                      \
    static void name(T *a, int32_t n)                                                              \
    {                                                                                              \
        static const int32_t gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};                           \
        for (int g = n > 32 ? 0 : 7; g < 8; g++) {                                                 \
            const int32_t h = gaps[g];                                                             \
            for (int32_t t = h; t < n; t++) {                                                      \
                const T v = a[t];                                                                  \
                int32_t u = t;                                                                     \
                for (; u >= h && a[u - h] > v; u -= h) a[u] = a[u - h];                            \
                a[u] = v;                                                                          \
            }                                                                                      \
        }                                                                                          \
    }
NBI_SORT_ROW(nbi_sort_row, int32_t)
NBI_SORT_ROW(nbi_sort_keys, uint64_t)
#undef NBI_SORT_ROW

#if defined(NBI_AVX512)
// Rows of up to 32 entries by a bitonic sorting network in AVX-512 registers (16 lanes each):
// ten compare-exchange stages sort 16 lanes, padded with INT32_MAX; two sorted registers merge
// in five more. About 20 instructions a row where insertion sort mispredicts a branch per
// entry on rows in random index order.
// The network's stages (k, j) = (2, 1), (4, 2), (4, 1), ..., (16, 1): lane l meets lane l ^ j
// and keeps the larger of the two when (l & j != 0) != (l & k != 0), the smaller otherwise.
static const int32_t nbi_bitonic_partner[10][16]
    __attribute__((aligned(64))) = {{1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14},
                                    {2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13},
                                    {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14},
                                    {4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11},
                                    {2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13},
                                    {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14},
                                    {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7},
                                    {4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11},
                                    {2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13},
                                    {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14}};
static const uint16_t nbi_bitonic_max[10] = {0x6666, 0x3c3c, 0x5a5a, 0xff0,  0x33cc,
                                             0x55aa, 0xff00, 0xf0f0, 0xcccc, 0xaaaa};

// Stages [s0, 10) on v: all ten sort 16 lanes; the last four (s0 = 6) sort a bitonic register.
NBI_TARGET_AVX512 static inline __m512i nbi_bitonic16(__m512i v, int s0)
{
    for (int t = s0; t < 10; t++) {
        const __m512i other =
            _mm512_permutexvar_epi32(_mm512_load_si512(nbi_bitonic_partner[t]), v);
        v = _mm512_mask_blend_epi32(nbi_bitonic_max[t], _mm512_min_epi32(v, other),
                                    _mm512_max_epi32(v, other));
    }
    return v;
}

// Rows of 1 to 32 entries, unsorted in lo (entries 0 .. 15) and hi (16 .. 31), padded with
// INT32_MAX: sorted into out[0 .. 32).
NBI_TARGET_AVX512 static void nbi_bitonic32(__m512i lo, __m512i hi, int32_t n, int32_t *out)
{
    lo = nbi_bitonic16(lo, 0);
    if (n <= 16) {
        _mm512_storeu_epi32(out, lo);
        return;
    }
    hi = nbi_bitonic16(hi, 0);
    const __m512i rev = _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    hi = _mm512_permutexvar_epi32(rev, hi); // lo ascending, hi descending: min and max bitonic
    const __m512i l = _mm512_min_epi32(lo, hi), h = _mm512_max_epi32(lo, hi);
    _mm512_storeu_epi32(out, nbi_bitonic16(l, 6));
    _mm512_storeu_epi32(out + 16, nbi_bitonic16(h, 6));
}

// The masks of a row's first and second sixteen of n <= 32 entries.
NBI_INLINE void nbi_row_masks(int32_t n, __mmask16 *m0, __mmask16 *m1)
{
    *m0 = (__mmask16)(n >= 16 ? 0xFFFF : (1u << n) - 1);
    *m1 = (__mmask16)(n >= 32 ? 0xFFFF : n <= 16 ? 0 : (1u << (n - 16)) - 1);
}

// Sorted rows leave through a buffer on the stack: a masked store to a line not in the caches
// holds every later load that the CPU cannot tell apart from it (a row written and then read
// back waited for its line from memory, row after row); plain copies do not.
NBI_TARGET_AVX512 static void nbi_sort_row_avx512(int32_t *a, int32_t n)
{
    const __m512i pad = _mm512_set1_epi32(INT32_MAX);
    __mmask16 m0, m1;
    nbi_row_masks(n, &m0, &m1);
    int32_t out[32];
    nbi_bitonic32(_mm512_mask_loadu_epi32(pad, m0, a), _mm512_mask_loadu_epi32(pad, m1, a + 16), n,
                  out);
    _mm256_zeroupper();
    memcpy(a, out, (size_t)n * sizeof(int32_t));
}

// Positions q[0 .. n) as indices idx[q], sorted, into dst: gathered and sorted in registers,
// so the destination, anywhere in memory, is only written.
NBI_TARGET_AVX512 static void nbi_place_row_avx512(const int32_t *q, int32_t n, const int32_t *idx,
                                                   int32_t *dst)
{
    const __m512i pad = _mm512_set1_epi32(INT32_MAX);
    __mmask16 m0, m1;
    nbi_row_masks(n, &m0, &m1);
    int32_t out[32];
    nbi_bitonic32(
        _mm512_mask_i32gather_epi32(pad, m0, _mm512_maskz_loadu_epi32(m0, q), idx, 4),
        _mm512_mask_i32gather_epi32(pad, m1, _mm512_maskz_loadu_epi32(m1, q + 16), idx, 4), n, out);
    _mm256_zeroupper();
    memcpy(dst, out, (size_t)n * sizeof(int32_t));
}

// nbi_bitonic16 on keys k carrying values v along (the keys distinct but for the padding).
NBI_TARGET_AVX512 static inline void nbi_bitonic16_kv(__m512i *k, __m512i *v, int s0)
{
    for (int t = s0; t < 10; t++) {
        const __m512i perm = _mm512_load_si512(nbi_bitonic_partner[t]);
        const __m512i ok = _mm512_permutexvar_epi32(perm, *k);
        const __m512i ov = _mm512_permutexvar_epi32(perm, *v);
        const __mmask16 mx = nbi_bitonic_max[t];
        // a lane keeping the larger takes its partner's when larger, and the other way round
        const __mmask16 take = (__mmask16)((_mm512_cmpgt_epi32_mask(ok, *k) & mx) |
                                           (_mm512_cmplt_epi32_mask(ok, *k) & (__mmask16)~mx));
        *k = _mm512_mask_blend_epi32(take, *k, ok);
        *v = _mm512_mask_blend_epi32(take, *v, ov);
    }
}

// Sixteen (key, value) lanes as uint64_t key << 32 | value, the first `m` stored to out.
NBI_TARGET_AVX512 static inline void nbi_store_keys16(__m512i k, __m512i v, int32_t m,
                                                      uint64_t *out)
{
    const __m512i z0 = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i z1 =
        _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    const __mmask8 a = (__mmask8)(m >= 8 ? 0xFF : (1u << m) - 1);
    const __mmask8 b = (__mmask8)(m >= 16 ? 0xFF : m <= 8 ? 0 : (1u << (m - 8)) - 1);
    _mm512_mask_storeu_epi64(out, a, _mm512_permutex2var_epi32(v, z0, k));
    _mm512_mask_storeu_epi64(out + 8, b, _mm512_permutex2var_epi32(v, z1, k));
}

// nbi_key_row for rows of up to 32 entries.
NBI_TARGET_AVX512 static void nbi_key_row_avx512(const int32_t *q, int32_t n, const int32_t *idx,
                                                 uint64_t *out)
{
    const __m512i pad = _mm512_set1_epi32(INT32_MAX);
    __mmask16 m0, m1;
    nbi_row_masks(n, &m0, &m1);
    __m512i lv = _mm512_maskz_loadu_epi32(m0, q), hv = _mm512_maskz_loadu_epi32(m1, q + 16);
    __m512i lk = _mm512_mask_i32gather_epi32(pad, m0, lv, idx, 4);
    nbi_bitonic16_kv(&lk, &lv, 0);
    if (n <= 16) {
        nbi_store_keys16(lk, lv, n, out);
        return;
    }
    __m512i hk = _mm512_mask_i32gather_epi32(pad, m1, hv, idx, 4);
    nbi_bitonic16_kv(&hk, &hv, 0);
    const __m512i rev = _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    hk = _mm512_permutexvar_epi32(rev, hk);
    hv = _mm512_permutexvar_epi32(rev, hv);
    const __mmask16 take = _mm512_cmpgt_epi32_mask(lk, hk); // lo's lane is the larger
    const __m512i k0 = _mm512_mask_blend_epi32(take, lk, hk),
                  v0 = _mm512_mask_blend_epi32(take, lv, hv);
    __m512i k1 = _mm512_mask_blend_epi32(take, hk, lk), v1 = _mm512_mask_blend_epi32(take, hv, lv);
    __m512i k0s = k0, v0s = v0;
    nbi_bitonic16_kv(&k0s, &v0s, 6);
    nbi_bitonic16_kv(&k1, &v1, 6);
    nbi_store_keys16(k0s, v0s, 16, out);
    nbi_store_keys16(k1, v1, n - 16, out + 16);
}
#endif

// Whether rows are sorted by the AVX-512 network (the CPU has it, and tests did not turn it off).
static bool nbi_sort_wide(void)
{
#if defined(NBI_AVX512)
    return nbi_use_avx512();
#else
    return false;
#endif
}

#if defined(NBI_AVX512)
// Rows longer than the network's 32 entries (crowded places: clusters, duplicates) up to this
// many: runs of 32 sorted by the network, then merged through a buffer on the stack. Longer
// rows take the shell sort.
enum { NBI_ROW_LONG = 1024 };

// a[0 .. n) made of ascending runs of `run` entries: merged pairwise into one ascending run,
// through tmp (n entries). For int32_t rows and uint64_t keys.
#define NBI_MERGE_RUNS(name, T)                                                                    \
    static void name(T *a, int32_t n, int32_t run, T *tmp)                                         \
    {                                                                                              \
        T *src = a, *dst = tmp;                                                                    \
        for (; run < n; run *= 2) {                                                                \
            for (int32_t lo = 0; lo < n; lo += 2 * run) {                                          \
                const int32_t mid = n - lo > run ? lo + run : n;                                   \
                const int32_t hi = n - mid > run ? mid + run : n;                                  \
                int32_t i = lo, j = mid, k = lo;                                                   \
                while (i < mid && j < hi) {                                                        \
                    const T x = src[i], y = src[j];                                                \
                    const bool second = y < x;                                                     \
                    dst[k++] = second ? y : x;                                                     \
                    i += !second;                                                                  \
                    j += second;                                                                   \
                }                                                                                  \
                while (i < mid) dst[k++] = src[i++];                                               \
                while (j < hi) dst[k++] = src[j++];                                                \
            }                                                                                      \
            T *t = src;                                                                            \
            src = dst;                                                                             \
            dst = t;                                                                               \
        }                                                                                          \
        if (src != a) memcpy(a, src, (size_t)n * sizeof(T));                                       \
    }
NBI_MERGE_RUNS(nbi_merge_rows, int32_t)
NBI_MERGE_RUNS(nbi_merge_keys, uint64_t)
#undef NBI_MERGE_RUNS

// A row of 1 to NBI_ROW_LONG entries by the network, 32 at a time, the runs then merged: the
// row `rows` in place or, with keys != NULL, the keys of positions q (nbi_key_row) into keys.
static void nbi_sort_runs(int32_t *rows, const int32_t *q, const int32_t *idx, uint64_t *keys,
                          int32_t n)
{
    for (int32_t c = 0; c < n; c += 32) {
        const int32_t len = n - c < 32 ? n - c : 32;
        if (keys != NULL)
            nbi_key_row_avx512(q + c, len, idx, keys + c);
        else
            nbi_sort_row_avx512(rows + c, len);
    }
    if (n <= 32) return;
    union {
        uint64_t keys[NBI_ROW_LONG];
        int32_t rows[NBI_ROW_LONG];
    } tmp;
    if (keys != NULL)
        nbi_merge_keys(keys, n, 32, tmp.keys);
    else
        nbi_merge_rows(rows, n, 32, tmp.rows);
}
#endif

// By the widest sort the CPU has (`wide`: nbi_sort_wide()): the row `rows` ascending in place,
// or with keys != NULL, positions q[0 .. n) as keys idx[q] << 32 | q into keys, ascending (by
// index, each with its position).
static void nbi_sort_any(int32_t *rows, const int32_t *q, const int32_t *idx, uint64_t *keys,
                         int32_t n, bool wide)
{
#if defined(NBI_AVX512)
    if (wide && n > 0 && n <= NBI_ROW_LONG) {
        nbi_sort_runs(rows, q, idx, keys, n);
        return;
    }
#endif
    (void)wide;
    if (keys == NULL) {
        nbi_sort_row(rows, n);
        return;
    }
    for (int32_t t = 0; t < n; t++) keys[t] = (uint64_t)idx[q[t]] << 32 | (uint32_t)q[t];
    nbi_sort_keys(keys, n);
}

static void nbi_sort_row_any(int32_t *a, int32_t n, bool wide)
{
    nbi_sort_any(a, NULL, NULL, NULL, n, wide);
}

static void nbi_key_row(const int32_t *q, int32_t n, const int32_t *idx, uint64_t *out, bool wide)
{
    nbi_sort_any(NULL, q, idx, out, n, wide);
}

// Positions q[0 .. n) as indices idx[q] into dst, ascending (`wide`: nbi_sort_wide()).
static void nbi_place_row(const int32_t *q, int32_t n, const int32_t *idx, int32_t *dst, bool wide)
{
#if defined(NBI_AVX512)
    if (wide && n > 0 && n <= 32) {
        nbi_place_row_avx512(q, n, idx, dst);
        return;
    }
#endif
    for (int32_t t = 0; t < n; t++) dst[t] = idx[q[t]]; // (longer rows sorted in place)
    nbi_sort_row_any(dst, n, wide);
}

// Pass 4 over rows [rows * k0 / chunks, rows * k1 / chunks).
typedef struct nbiSortCtx {
    const int32_t *offsets;
    int32_t *nb;
    int32_t rows, chunks;
} nbiSortCtx;

static void nbi_rows_sort_task(int32_t k0, int32_t k1, int32_t worker, void *ctx)
{
    (void)worker;
    const nbiSortCtx *x = (const nbiSortCtx *)ctx;
    const bool wide = nbi_sort_wide();
    const int32_t i0 = (int32_t)((int64_t)x->rows * k0 / x->chunks);
    const int32_t i1 = (int32_t)((int64_t)x->rows * k1 / x->chunks);
    for (int32_t i = i0; i < i1; i++) {
        const int32_t o = x->offsets[i];
        nbi_sort_row_any(x->nb + o, x->offsets[i + 1] - o, wide);
    }
}

// Chunks for the passes over grid a: one without a scheduler or for small sets.
static int32_t nbi_rows_chunks(const nbGrid *a, const nbTasks *t)
{
    if (t == NULL || t->parallel_for == NULL || t->workers <= 1 || a->n < NBI_ROWS_PARALLEL_MIN)
        return 1;
    return 4 * t->workers < NBI_MAX_CHUNKS ? 4 * t->workers : NBI_MAX_CHUNKS;
}

// The first failing chunk's status (they all check the same radius first).
static nbStatus nbi_rows_status(const nbiRowsCtx *x)
{
    for (int32_t k = 0; k < x->chunks; k++)
        if (x->status[k] != NB_OK) return x->status[k];
    return NB_OK;
}

// Pass 1 and 2: offsets[i + 1] = row i's first entry (offsets[0] = 0); *entries = the total.
// The caller has checked the pointers and arguments.
static nbStatus nbi_rows_count(nbiRowsCtx *x, const nbGrid *a, const nbTasks *t, int64_t *entries)
{
    const int32_t n = a->n;
    memset(x->offsets, 0, ((size_t)n + 1) * sizeof(int32_t));
    *entries = 0;
    x->chunks = nbi_rows_chunks(a, t);
    nbi_grid_cell_chunks(a, x->chunks, x->unit);
    nbi_tasks_run(t, nbi_rows_count_task, x->chunks, x);
    const nbStatus st = nbi_rows_status(x);
    int64_t run = 0;
    for (int32_t i = 0; i < n; i++) {
        const int32_t c = x->offsets[i + 1];
        x->offsets[i + 1] = (int32_t)(run < INT32_MAX ? run : INT32_MAX);
        run += c;
    }
    if (st == NB_OK && run > INT32_MAX) {
        memset(x->offsets, 0, ((size_t)n + 1) * sizeof(int32_t));
        return NB_ERR_OUT_OF_RANGE;
    }
    if (st != NB_OK) memset(x->offsets, 0, ((size_t)n + 1) * sizeof(int32_t));
    *entries = st == NB_OK ? run : 0;
    return st;
}

// Pass 3 into nb (room for every entry): afterwards offsets is in its final form (the fill
// advances offsets[i + 1] from row i's start to its end).
static void nbi_rows_fill(nbiRowsCtx *x, const nbTasks *t, int32_t *nb)
{
    x->nb = nb;
    nbi_tasks_run(t, nbi_rows_fill_task, x->chunks, x);
}

// Offsets as starts (offsets[i + 1] = row i's first entry) to the final form (row ends).
static void nbi_rows_starts_to_ends(int32_t *offsets, int32_t n, int64_t entries)
{
    memmove(offsets, offsets + 1, (size_t)n * sizeof(int32_t));
    offsets[n] = (int32_t)entries;
}

static void nbi_rows_ctx(nbiRowsCtx *x, const nbGrid *a, const nbGrid *b, bool self, double radius,
                         int32_t *offsets)
{
    memset(x, 0, sizeof *x);
    x->a = &a->view;
    x->b = &b->view;
    x->radius = radius;
    x->self = self;
    x->offsets = offsets;
}

// Checks shared by every rows call after its pointers: the radius, the capacity, the grids.
static nbStatus nbi_rows_check(const nbGrid *a, const nbGrid *b, double radius, int64_t capacity)
{
    const nbStatus st = nbi_check_pairs(radius, capacity);
    if (st != NB_OK) return st;
    return a->dim != b->dim ? NB_ERR_OUT_OF_RANGE : NB_OK;
}

// Rows of a against b (a == b && self: a set against itself) into the caller's buffers.
static nbStatus nbi_grid_rows(const nbGrid *a, const nbGrid *b, bool self, double radius,
                              int32_t *offsets, int32_t *neighbors, int64_t capacity,
                              int64_t *found)
{
    nbStatus st = nbi_rows_check(a, b, radius, capacity);
    if (st != NB_OK) {
        memset(offsets, 0, ((size_t)a->n + 1) * sizeof(int32_t));
        return st;
    }
    nbiRowsCtx x;
    nbi_rows_ctx(&x, a, b, self, radius, offsets);
    int64_t entries;
    st = nbi_rows_count(&x, a, &a->tasks, &entries);
    if (st != NB_OK) return st;
    *found = entries;
    if (entries > capacity || entries == 0) { // too small, or nothing to place (nor a buffer)
        nbi_rows_starts_to_ends(offsets, a->n, entries);
        return entries > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
    }
    nbi_rows_fill(&x, &a->tasks, neighbors);
    nbiSortCtx sx = {offsets, neighbors, a->n, x.chunks};
    nbi_tasks_run(&a->tasks, nbi_rows_sort_task, x.chunks, &sx);
    return NB_OK;
}

static nbStatus nbi_rows_api(const nbGrid *a, const nbGrid *b, bool self, bool cell, double radius,
                             int32_t *offsets, int32_t *neighbors, int64_t capacity,
                             int64_t *found);

nbStatus nb_grid_neighbor_rows(const nbGrid *grid, double radius, int32_t *offsets,
                               int32_t *neighbors, int64_t capacity, int64_t *found)
{
    return nbi_rows_api(grid, grid, true, false, radius, offsets, neighbors, capacity, found);
}

nbStatus nb_grid_cross_neighbor_rows(const nbGrid *a, const nbGrid *b, double radius,
                                     int32_t *offsets, int32_t *neighbors, int64_t capacity,
                                     int64_t *found)
{
    return nbi_rows_api(a, b, false, false, radius, offsets, neighbors, capacity, found);
}

// ---- rows in cell order ----
// Rows by position: row p lists the positions q of b within radius of position p of a,
// ascending. Each of a's cells collects the runs of b's cells its points can reach (the box of
// its points widened by the reach, as the cross walker takes it), sorted by their first position;
// then each of its points scans those runs in memory order, so its row comes out ascending, is
// written once, sequentially, after the last. No count, no scatter, no sort. On a dense grid
// against itself with AVX-512, the cells along a row of cells take their candidates from a slab
// gathered once for several of them (nbiSlab). A cell whose stencil has more runs than a batch
// holds (a hashed layout's cells much smaller than the radius) takes its points one at a time
// through every run, each row then sorted.
enum { NBI_RUNS_MAX = 256 };

typedef struct nbiRunList {
    int32_t b0[NBI_RUNS_MAX], b1[NBI_RUNS_MAX];
    int32_t n;
    int64_t cand; // candidates in the runs
    bool over;    // more runs than the batch holds
} nbiRunList;

static bool nbi_run_add(int32_t b0, int32_t b1, void *ctx)
{
    nbiRunList *l = (nbiRunList *)ctx;
    if (l->n == NBI_RUNS_MAX) {
        l->over = true;
        return false;
    }
    l->b0[l->n] = b0;
    l->b1[l->n] = b1;
    l->n++;
    l->cand += b1 - b0;
    return true;
}

// Sorted by first position, touching runs joined (the runs of distinct cells never overlap).
static void nbi_runs_sort(nbiRunList *l)
{
    for (int32_t t = 1; t < l->n; t++) {
        const int32_t s0 = l->b0[t], s1 = l->b1[t];
        int32_t u = t;
        for (; u > 0 && l->b0[u - 1] > s0; u--) {
            l->b0[u] = l->b0[u - 1];
            l->b1[u] = l->b1[u - 1];
        }
        l->b0[u] = s0;
        l->b1[u] = s1;
    }
    int32_t k = 0;
    for (int32_t t = 1; t < l->n; t++) {
        if (l->b0[t] == l->b1[k]) {
            l->b1[k] = l->b1[t];
        } else {
            k++;
            l->b0[k] = l->b0[t];
            l->b1[k] = l->b1[t];
        }
    }
    l->n = l->n > 0 ? k + 1 : 0;
}

typedef struct nbiOrderCtx {
    const nbiView *a, *b;
    double r2, reach;
    bool self;        // a set against itself: p is not in its own row
    bool wrap;        // the minimum image
    bool flt;         // either side carries filter bits
    int64_t rings;    // > 0: a set against itself in a dense view, this many rings of cells
    int32_t *offsets; // a->n + 1: offsets[p + 1] = row p's end (written for every row)
    int32_t *nb;      // entries while they fit `cap` (NULL: counted only)
    double *d2;       // NULL, or the entries' squared distances
    int64_t cap;
    int32_t chunks;
    int32_t *unit; // chunks + 1: chunk k is a's cells [unit[k], unit[k + 1])
    int64_t *base; // chunks + 1: the chunks' first entries
    int64_t *end;  // chunks: one past their last (a count pass: from 0), each its chunk's own
} nbiOrderCtx;

// The chunks' tables, apart from the context each chunk copies (and so reads only its own).
typedef struct nbiOrderChunks {
    int32_t unit[NBI_MAX_CHUNKS + 1];
    int64_t base[NBI_MAX_CHUNKS + 1];
    int64_t end[NBI_MAX_CHUNKS];
} nbiOrderChunks;

// Position p of a against positions [q0, q1) of b, scalar: the hits appended at m (stored
// while below cap; branch-free when the whole run fits). Returns the new m.
NBI_INLINE int64_t nbi_order_scan(const nbiOrderCtx *x, int32_t p, int32_t q0, int32_t q1,
                                  int64_t m, int dim, bool wrap)
{
    const nbiView *a = x->a, *b = x->b;
    const double *pa = a->pts + (size_t)p * (size_t)dim;
    const uint32_t pc = a->cat != NULL ? a->cat[p] : 0xFFFFFFFFu;
    const uint32_t pm = a->mask != NULL ? a->mask[p] : 0xFFFFFFFFu;
    const bool fast = x->nb != NULL && m + (q1 - q0) <= x->cap && !x->flt;
    for (int32_t q = q0; q < q1; q++) {
        const double *pb = b->pts + (size_t)q * (size_t)dim;
        const double e = wrap ? nbi_dist2_wrap(pa, pb, dim, a->wrap->kper) : nbi_dist2(pa, pb, dim);
        int keep = (e <= x->r2) & !(x->self && q == p);
        if (fast) {
            x->nb[m] = q;
            if (x->d2 != NULL) x->d2[m] = e;
            m += keep;
            continue;
        }
        if (x->flt && keep)
            keep = nbi_filter_match(pc, pm, b->cat != NULL ? b->cat[q] : 0xFFFFFFFFu,
                                    b->mask != NULL ? b->mask[q] : 0xFFFFFFFFu);
        if (!keep) continue;
        if (x->nb != NULL && m < x->cap) {
            x->nb[m] = q;
            if (x->d2 != NULL) x->d2[m] = e;
        }
        m++;
    }
    return m;
}

// A dense view's stencil (x->rings rings) of the cell at cc, clipped to the box: cells lo..hi.
static void nbi_dense_box(const nbiOrderCtx *x, const int64_t cc[3], int64_t lo[3], int64_t hi[3])
{
    const nbiView *v = x->b;
    for (int d = 0; d < 3; d++) {
        const int64_t kd = d < v->dim ? x->rings : 0;
        lo[d] = cc[d] - kd > 0 ? cc[d] - kd : 0;
        hi[d] = cc[d] + kd < v->ext[d] - 1 ? cc[d] + kd : v->ext[d] - 1;
    }
}

#if defined(NBI_AVX512)
// A cell's candidates gathered once for all its points: the coordinates of the runs' points
// axis by axis (x, y, z: `len` each, padded with NaN to a multiple of 8, which fails every test)
// and their positions, in the runs' order. A cell of 4 points pays a quarter of a copy per
// candidate where each point would otherwise split interleaved coordinates itself.
enum { NBI_SOA_MAX = 1024 };

typedef struct nbiSoa {
    double c[3][NBI_SOA_MAX] __attribute__((aligned(64)));
    int32_t pos[NBI_SOA_MAX] __attribute__((aligned(64)));
    int32_t len; // padded
} nbiSoa;

// The runs l (at most NBI_SOA_MAX - 8 candidates) into s.
NBI_TARGET_AVX512 static void nbi_soa_gather(const double *pts, const nbiRunList *l, int dim,
                                             nbiSoa *s)
{
    const __m256i iota = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0);
    int32_t t = 0;
    for (int32_t r = 0; r < l->n; r++) {
        const int32_t q1 = l->b1[r];
        for (int32_t q = l->b0[r]; q < q1; q += 8) {
            const int32_t left = q1 - q, take = left >= 8 ? 8 : left;
            const double *at = pts + (size_t)q * (size_t)dim;
            const int32_t nd = take * dim; // doubles to read
            const __mmask8 m0 = (__mmask8)(nd >= 8 ? 0xFF : (1u << nd) - 1);
            const __mmask8 m1 = (__mmask8)(nd >= 16 ? 0xFF : nd <= 8 ? 0 : (1u << (nd - 8)) - 1);
            const __mmask8 m2 = (__mmask8)(nd >= 24 ? 0xFF : nd <= 16 ? 0 : (1u << (nd - 16)) - 1);
            __m512d v[3];
            nbi_split8(dim, _mm512_maskz_loadu_pd(m0, at), _mm512_maskz_loadu_pd(m1, at + 8),
                       dim == 3 ? _mm512_maskz_loadu_pd(m2, at + 16) : _mm512_setzero_pd(), v);
            for (int d = 0; d < dim; d++) _mm512_storeu_pd(s->c[d] + t, v[d]);
            _mm256_storeu_si256((__m256i *)(void *)(s->pos + t),
                                _mm256_add_epi32(_mm256_set1_epi32(q), iota));
            t += take;
        }
    }
    const __m512d nan = _mm512_set1_pd((double)NAN);
    for (int d = 0; d < dim; d++) _mm512_storeu_pd(s->c[d] + t, nan);
    s->len = (t + 7) & ~7;
}

// Position p against the gathered candidates s (t_self: p's own slot there, or -1), its hits
// compressed in registers and stored eight lanes wide at m (the caller has room for the
// candidates and 8 more), the lanes past them rewritten by the next step; without `store`,
// only counted. Each distance is computed as nbi_dist2 (nbi_dist2_wrap) does: the same answers.
NBI_TARGET_AVX512 static inline int64_t nbi_order_soa8_k(const nbiOrderCtx *x, const nbiSoa *s,
                                                         int32_t p, int32_t t_self, int64_t m,
                                                         int dim, bool wrap, bool store, bool dist)
{
    const double *pa = x->a->pts + (size_t)p * (size_t)dim;
    const __m512d c0 = _mm512_set1_pd(pa[0]), c1 = _mm512_set1_pd(pa[1]),
                  c2 = _mm512_set1_pd(dim == 3 ? pa[2] : 0.0);
    const double *kper = wrap ? x->a->wrap->kper : NULL;
    const __m512d per0 = _mm512_set1_pd(wrap ? kper[0] : 0.0),
                  per1 = _mm512_set1_pd(wrap ? kper[1] : 0.0),
                  per2 = _mm512_set1_pd(wrap ? kper[2] : 0.0);
    const __m512d vr2 = _mm512_set1_pd(x->r2);
    int32_t *nb = x->nb;
    double *d2 = x->d2;
    for (int32_t t = 0; t < s->len; t += 8) {
        __m512d dx = _mm512_sub_pd(c0, _mm512_load_pd(s->c[0] + t));
        __m512d dy = _mm512_sub_pd(c1, _mm512_load_pd(s->c[1] + t));
        __m512d dz = dim == 3 ? _mm512_sub_pd(c2, _mm512_load_pd(s->c[2] + t)) : dx;
        if (wrap) {
            __m512d u = _mm512_abs_pd(dx);
            dx = _mm512_min_pd(_mm512_sub_pd(per0, u), u);
            u = _mm512_abs_pd(dy);
            dy = _mm512_min_pd(_mm512_sub_pd(per1, u), u);
            if (dim == 3) {
                u = _mm512_abs_pd(dz);
                dz = _mm512_min_pd(_mm512_sub_pd(per2, u), u);
            }
        }
        __m512d e = _mm512_add_pd(_mm512_mul_pd(dx, dx), _mm512_mul_pd(dy, dy));
        if (dim == 3) e = _mm512_add_pd(e, _mm512_mul_pd(dz, dz));
        __mmask8 hit = _mm512_cmp_pd_mask(e, vr2, _CMP_LE_OQ);
        if ((uint32_t)(t_self - t) < 8u) hit &= (__mmask8) ~(1u << (t_self - t));
        const __m256i pos = _mm256_load_si256((const __m256i *)(const void *)(s->pos + t));
        if (store)
            _mm256_storeu_si256((__m256i *)(void *)(nb + m), _mm256_maskz_compress_epi32(hit, pos));
        if (dist) _mm512_storeu_pd(d2 + m, _mm512_maskz_compress_pd(hit, e));
        m += _mm_popcnt_u32(hit);
    }
    return m;
}

// nbi_order_soa8_k with or without the entries and distances, for a dimension.
#define NBI_SOA8_DIM(name, dim)                                                                    \
    NBI_TARGET_AVX512 static int64_t name(const nbiOrderCtx *x, const nbiSoa *s, int32_t p,        \
                                          int32_t t_self, int64_t m, bool wrap)                    \
    {                                                                                              \
        const bool w = wrap, st = x->nb != NULL, d = x->d2 != NULL;                                \
        if (!st) return nbi_order_soa8_k(x, s, p, t_self, m, dim, w, false, false);                \
        if (w) return nbi_order_soa8_k(x, s, p, t_self, m, dim, true, true, d);                    \
        if (d) return nbi_order_soa8_k(x, s, p, t_self, m, dim, false, true, true);                \
        return nbi_order_soa8_k(x, s, p, t_self, m, dim, false, true, false);                      \
    }
NBI_SOA8_DIM(nbi_order_soa8_2d, 2)
NBI_SOA8_DIM(nbi_order_soa8_3d, 3)
#undef NBI_SOA8_DIM

// A slab: a dense view's cells [x, x + w) of one row of cells share their stencil's rows of
// cells but for the ends, so the candidates of all w cells are gathered once (each row of the
// stencil as one segment, the cells [x - rings, x + w + rings) of that row), and each cell reads
// its own part of every segment: a candidate is copied about (2 rings + w) / w times instead of
// once for every cell that reaches it (2 rings + 1 times).
typedef struct nbiSlab {
    int32_t c_end;             // the cells [c_end - w, c_end) of a's row use it (-1: none)
    int32_t nseg;              // segments, in ascending rows of cells, so in memory order
    int64_t row[NBI_RUNS_MAX]; // each segment's first cell of its row of cells
    int32_t at[NBI_RUNS_MAX];  // where each segment starts in the gathered lanes, less its
                               // first position (lane = at + position)
} nbiSlab;

// The slab for a dense view's cell cc (number c) and the cells after it in its row, at most up
// to cell c_last, widest first: false when even one cell's candidates do not fit.
static bool nbi_slab_fill(const nbiOrderCtx *x, const int64_t cc[3], int32_t c, int32_t c_last,
                          nbiSlab *sl, nbiRunList *l, nbiSoa *soa)
{
    const nbiView *v = x->b;
    const int64_t k = x->rings;
    int64_t lo[3], hi[3];
    nbi_dense_box(x, cc, lo, hi);
    int64_t w = v->ext[0] - cc[0] < 32 ? v->ext[0] - cc[0] : 32;
    if (w > (int64_t)c_last - c + 1) w = (int64_t)c_last - c + 1;
    const int64_t x0 = lo[0];
    for (; w >= 1; w /= 2) {
        const int64_t x1 = cc[0] + w - 1 + k < v->ext[0] - 1 ? cc[0] + w - 1 + k : v->ext[0] - 1;
        int64_t total = 0;
        l->n = 0;
        for (int64_t z = lo[2]; z <= hi[2]; z++)
            for (int64_t y = lo[1]; y <= hi[1]; y++) {
                const int64_t row = (y + z * v->ext[1]) * v->ext[0];
                const int32_t b0 = v->start[row + x0], b1 = v->start[row + x1 + 1];
                sl->row[l->n] = row;
                sl->at[l->n] = (int32_t)total - b0;
                l->b0[l->n] = b0;
                l->b1[l->n] = b1;
                l->n++;
                total += b1 - b0;
            }
        if (total > NBI_SOA_MAX - 8) continue;
        nbi_soa_gather(v->pts, l, v->dim, soa);
        sl->nseg = l->n;
        sl->c_end = c + (int32_t)w;
        return true;
    }
    sl->c_end = -1;
    return false;
}

// Lanes [u, u + 8) of s to [v, v + 8) of d.
NBI_TARGET_AVX512 static inline void nbi_soa_copy8(const nbiSoa *s, int32_t u, nbiSoa *d, int32_t v,
                                                   int dim)
{
    _mm512_storeu_pd(d->c[0] + v, _mm512_loadu_pd(s->c[0] + u));
    _mm512_storeu_pd(d->c[1] + v, _mm512_loadu_pd(s->c[1] + u));
    if (dim == 3) _mm512_storeu_pd(d->c[2] + v, _mm512_loadu_pd(s->c[2] + u));
    _mm256_storeu_si256((__m256i *)(void *)(d->pos + v),
                        _mm256_loadu_si256((const __m256i *)(const void *)(s->pos + u)));
}

// A cell's candidates from the slab sl (gathered in s) into d, as nbi_soa_gather leaves them:
// its cells [lo, hi] of every segment, in order, NaN past them. Returns p == a0's lane in d
// (`self`), or -1. A segment's part of at most 16 lanes is copied as two blocks of eight
// whatever its length (the lanes past it are overwritten next): a loop of one, two or three
// blocks would mispredict its end about once a segment.
NBI_TARGET_AVX512 static int32_t nbi_slab_take(const nbiOrderCtx *x, const nbiSlab *sl,
                                               const nbiSoa *s, int64_t lo, int64_t hi, int32_t a0,
                                               int dim, nbiSoa *d)
{
    const int32_t *start = x->b->start;
    int32_t t = 0, own = -1;
    for (int32_t g = 0; g < sl->nseg; g++) {
        const int32_t q0 = start[sl->row[g] + lo], q1 = start[sl->row[g] + hi + 1];
        if (x->self && a0 >= q0 && a0 < q1) own = t + (a0 - q0);
        const int32_t u0 = sl->at[g] + q0, len = q1 - q0;
        if (len <= 16 && u0 + 16 <= NBI_SOA_MAX && t + 16 <= NBI_SOA_MAX) {
            nbi_soa_copy8(s, u0, d, t, dim);
            nbi_soa_copy8(s, u0 + 8, d, t + 8, dim);
        } else {
            for (int32_t k = 0; k < len; k += 8) nbi_soa_copy8(s, u0 + k, d, t + k, dim);
        }
        t += len;
    }
    const __m512d nan = _mm512_set1_pd((double)NAN);
    for (int k = 0; k < dim; k++) _mm512_storeu_pd(d->c[k] + t, nan);
    d->len = (t + 7) & ~7;
    return own;
}
#endif

// The rows of position p: through the runs l (which are sorted), or, when l overflowed, through
// every run of the cell's stencil (box: the argument for nbi_order_runs), then sorted.
typedef struct nbiOrderRow {
    const nbiOrderCtx *x;
    int32_t p;
    int64_t m;
    int dim;
} nbiOrderRow;

static bool nbi_order_row_run(int32_t b0, int32_t b1, void *ctx)
{
    nbiOrderRow *r = (nbiOrderRow *)ctx;
    r->m = nbi_order_scan(r->x, r->p, b0, b1, r->m, r->dim, r->x->wrap);
    return true;
}

// The stencil of a's cell holding [a0, a1): lo, hi its points' box widened by the reach; the
// runs of b's cells there handed to fn. False when nothing of b is near.
typedef struct nbiStencil {
    int64_t cl[3], ch[3];
    nbiCellRange wr[3];
} nbiStencil;

static bool nbi_order_stencil(const nbiOrderCtx *x, int32_t a0, int32_t a1, nbiStencil *s)
{
    const nbiView *a = x->a, *b = x->b;
    const int dim = a->dim;
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int d = 0; d < dim; d++) lo[d] = hi[d] = a->pts[(size_t)a0 * (size_t)dim + d];
    for (int32_t p = a0 + 1; p < a1; p++)
        for (int d = 0; d < dim; d++) {
            const double q = a->pts[(size_t)p * (size_t)dim + d];
            lo[d] = q < lo[d] ? q : lo[d];
            hi[d] = q > hi[d] ? q : hi[d];
        }
    for (int d = 0; d < dim; d++) {
        lo[d] -= x->reach;
        hi[d] += x->reach;
    }
    if (!x->wrap) return nbi_view_cell_box(b, lo, hi, s->cl, s->ch);
    bool any = true;
    for (int d = 0; d < 3; d++) {
        s->wr[d] = nbi_wrap_cover(b, d, lo[d], hi[d]);
        any &= s->wr[d].n > 0;
    }
    return any;
}

static void nbi_order_runs(const nbiOrderCtx *x, const nbiStencil *s, nbiRunFn *fn, void *ctx)
{
    if (x->wrap)
        nbi_wrap_box_runs(x->b, s->wr, fn, ctx);
    else
        nbi_view_box_runs(x->b, s->cl, s->ch, fn, ctx);
}

// A dense view's stencil (x->rings rings, clipped to the box) of the cell at (cx, cy, cz): one
// run a row of cells, in ascending rows, so in memory order.
static void nbi_dense_runs(const nbiOrderCtx *x, const int64_t cc[3], nbiRunList *l)
{
    const nbiView *v = x->b;
    int64_t lo[3], hi[3];
    nbi_dense_box(x, cc, lo, hi);
    l->n = 0;
    l->cand = 0;
    l->over = false;
    for (int64_t z = lo[2]; z <= hi[2]; z++)
        for (int64_t y = lo[1]; y <= hi[1]; y++) {
            const int64_t row = (y + z * v->ext[1]) * v->ext[0];
            const int32_t b0 = v->start[row + lo[0]], b1 = v->start[row + hi[0] + 1];
            if (b0 == b1) continue;
            if (l->n > 0 && l->b1[l->n - 1] == b0)
                l->b1[l->n - 1] = b1;
            else {
                l->b0[l->n] = b0;
                l->b1[l->n] = b1;
                l->n++;
            }
            l->cand += b1 - b0;
        }
}

// The next cell's coordinates in a dense box, x fastest.
static inline void nbi_cell_step(int64_t cc[3], int64_t e0, int64_t e1)
{
    if (++cc[0] < e0) return;
    cc[0] = 0;
    if (++cc[1] < e1) return;
    cc[1] = 0;
    ++cc[2];
}

// a's cells [c0, c1), their entries from m on: returns the end.
NBI_INLINE int64_t nbi_order_cells(const nbiOrderCtx *x, int32_t c0, int32_t c1, int64_t m, int dim,
                                   bool wrap)
{
    const nbiView *a = x->a;
    const bool wide = nbi_sort_wide();
    nbiRunList l;
#if defined(NBI_AVX512)
    nbiSoa soa, slab; // a cell's candidates; a slab's
    nbiSlab sl;
    sl.c_end = -1;
    const bool slab_ok = wide && x->rings > 0 && !x->flt;
#endif
    const int64_t e0 = a->ext[0], e1 = a->ext[1];
    int64_t cc[3] = {c0 % e0, (c0 / e0) % e1, c0 / (e0 * e1)}; // a dense view's cell c
    for (int32_t c = c0; c < c1; c++, nbi_cell_step(cc, e0, e1)) {
        const int32_t a0 = a->start[c], a1 = nbi_view_end(a, c);
        if (a0 == a1) continue;
        nbiStencil s;
#if defined(NBI_AVX512)
        if (slab_ok && (c < sl.c_end || nbi_slab_fill(x, cc, c, c1 - 1, &sl, &l, &slab))) {
            // This cell's part of every segment: its stencil's cells [cc[0] - k, cc[0] + k].
            const int64_t k = x->rings, ext0 = a->ext[0];
            const int64_t lo = cc[0] - k > 0 ? cc[0] - k : 0;
            const int64_t hi = cc[0] + k < ext0 - 1 ? cc[0] + k : ext0 - 1;
            int64_t cand = 0;
            for (int32_t g = 0; g < sl.nseg; g++)
                cand += x->b->start[sl.row[g] + hi + 1] - x->b->start[sl.row[g] + lo];
            if (x->nb == NULL || m + (a1 - a0) * (cand + 8) <= x->cap) {
                const int32_t own = nbi_slab_take(x, &sl, &slab, lo, hi, a0, dim, &soa);
                for (int32_t p = a0; p < a1; p++) {
                    m = (dim == 2 ? nbi_order_soa8_2d : nbi_order_soa8_3d)(
                        x, &soa, p, own < 0 ? -1 : own + (p - a0), m, false);
                    x->offsets[p + 1] = (int32_t)(m < INT32_MAX ? m : INT32_MAX);
                }
                continue;
            }
        }
#endif
        if (x->rings > 0) {
            nbi_dense_runs(x, cc, &l);
        } else {
            l.n = 0;
            l.cand = 0;
            l.over = false;
            if (nbi_order_stencil(x, a0, a1, &s)) nbi_order_runs(x, &s, nbi_run_add, &l);
            if (!l.over) nbi_runs_sort(&l);
        }
#if defined(NBI_AVX512)
        // The gathered kernel: p's own slot is its offset in the runs before a0's run.
        const bool gathered =
            wide && !l.over && !x->flt && l.cand <= NBI_SOA_MAX - 8 &&
            (x->nb == NULL || m + (a1 - a0) * (l.cand + 8) <= x->cap); // (nb NULL: a count)
        int32_t own = -1;
        if (gathered) {
            nbi_soa_gather(x->b->pts, &l, dim, &soa);
            if (x->self)
                for (int32_t r = 0, t = 0; r < l.n; t += l.b1[r] - l.b0[r], r++)
                    if (a0 >= l.b0[r] && a0 < l.b1[r]) own = t + (a0 - l.b0[r]);
        }
#endif
        for (int32_t p = a0; p < a1; p++) {
            const int64_t m0 = m;
            if (l.over) { // every run, in the walk's order, then the row sorted
                nbiOrderRow r = {x, p, m, dim};
                nbi_order_runs(x, &s, nbi_order_row_run, &r);
                m = r.m;
                if (x->nb != NULL && m <= x->cap && m > m0) {
                    nbi_sort_row_any(x->nb + m0, (int32_t)(m - m0), wide);
                    const double *pa = a->pts + (size_t)p * (size_t)dim;
                    for (int64_t t = m0; t < m && x->d2 != NULL; t++) {
                        const double *pb = x->b->pts + (size_t)x->nb[t] * (size_t)dim;
                        x->d2[t] = wrap ? nbi_dist2_wrap(pa, pb, dim, a->wrap->kper)
                                        : nbi_dist2(pa, pb, dim);
                    }
                }
            }
#if defined(NBI_AVX512)
            else if (gathered)
                m = (dim == 2 ? nbi_order_soa8_2d : nbi_order_soa8_3d)(
                    x, &soa, p, own < 0 ? -1 : own + (p - a0), m, wrap);
#endif
            else
                for (int32_t r = 0; r < l.n; r++)
                    m = nbi_order_scan(x, p, l.b0[r], l.b1[r], m, dim, wrap);
            x->offsets[p + 1] = (int32_t)(m < INT32_MAX ? m : INT32_MAX);
        }
    }
    return m;
}

// Chunk k's cells from its base (a count pass, nb NULL: from 0) to end[k]. A chunk of a fill
// with several writes nothing at or past the next chunk's base, which that chunk may have
// written already: its cap is that base (the wide kernels store past a row's end only below
// the cap).
static void nbi_order_task(int32_t k0, int32_t k1, int32_t worker, void *ctx)
{
    (void)worker;
    nbiOrderCtx *x = (nbiOrderCtx *)ctx;
    const int dim = x->a->dim;
    for (int32_t k = k0; k < k1; k++) {
        nbiOrderCtx y = *x;
        if (x->chunks > 1 && x->nb != NULL) y.cap = x->base[k + 1];
        const int32_t c0 = x->unit[k], c1 = x->unit[k + 1];
        const int64_t m0 = x->nb != NULL ? x->base[k] : 0;
        int64_t m;
        if (dim == 2)
            m = x->wrap ? nbi_order_cells(&y, c0, c1, m0, 2, true)
                        : nbi_order_cells(&y, c0, c1, m0, 2, false);
        else
            m = x->wrap ? nbi_order_cells(&y, c0, c1, m0, 3, true)
                        : nbi_order_cells(&y, c0, c1, m0, 3, false);
        x->end[k] = m;
    }
}

// The statuses nb_grid_pairs (a set against itself) or nb_grid_cross_pairs gives for radius:
// the walkers' guards, over no cells.
static nbStatus nbi_order_guard(const nbiView *a, const nbiView *b, bool self, double radius)
{
    nbiPairSink s;
    nbi_pair_sink_block(&s, NULL, NULL);
    return self ? nbi_walk_pairs(a, radius, 0, 0, &s)
                : nbi_walk_cross_range(a, b, radius, 0, 0, &s);
}

static void nbi_order_ctx(nbiOrderCtx *x, const nbiView *a, const nbiView *b, bool self,
                          double radius, int32_t *offsets)
{
    memset(x, 0, sizeof *x);
    x->a = a;
    x->b = b;
    x->r2 = radius * radius;
    x->reach = nbi_reach(radius);
    x->self = self;
    x->wrap = a->wrap != NULL;
    x->flt = a->cat != NULL || b->cat != NULL;
    x->offsets = offsets;
    // A dense view against itself: the fixed stencil of rings, as the all-pairs walker takes it
    // (at most as many rows of cells as a batch of runs holds).
    const double rings = nbi_rings(x->reach, a->cm.cell, a->max_abs);
    const double rows = a->dim == 3 ? (2.0 * rings + 1.0) * (2.0 * rings + 1.0) : 2.0 * rings + 1.0;
    if (self && a == b && !x->wrap && a->table == NULL && a->occ == NULL && a->end == NULL &&
        rows <= NBI_RUNS_MAX)
        x->rings = rings >= 1.0 ? (int64_t)rings : 1;
}

// More than INT32_MAX entries: NB_ERR_OUT_OF_RANGE, offsets zeroed.
static nbStatus nbi_order_done(int32_t *offsets, int32_t n, int64_t *entries)
{
    if (*entries <= INT32_MAX) return NB_OK;
    memset(offsets, 0, ((size_t)n + 1) * sizeof(int32_t));
    *entries = 0;
    return NB_ERR_OUT_OF_RANGE;
}

// The rows by position of a against b into offsets (a->n + 1, always written) and nb (up to
// cap entries; d2 beside them when not NULL); *entries = their number, which may exceed cap.
// On `chunks` chunks of a's cells (scheduler t): a count pass first, then the fill at each
// chunk's base. The caller has checked the arguments and run the guard.
static nbStatus nbi_order_rows(const nbGrid *ga, const nbiView *a, const nbiView *b, bool self,
                               double radius, const nbTasks *t, int32_t *offsets, int32_t *nb,
                               double *d2, int64_t cap, int64_t *entries)
{
    nbiOrderCtx x;
    nbiOrderChunks ch;
    nbi_order_ctx(&x, a, b, self, radius, offsets);
    memset(&ch, 0, sizeof ch);
    x.unit = ch.unit;
    x.base = ch.base;
    x.end = ch.end;
    offsets[0] = 0;
    x.chunks = nbi_rows_chunks(ga, t);
    nbi_grid_cell_chunks(ga, x.chunks, x.unit);
    if (a->n == 0 || b->n == 0) {
        memset(offsets, 0, ((size_t)a->n + 1) * sizeof(int32_t));
        *entries = 0;
        return NB_OK;
    }
    if (x.chunks > 1) { // the chunks' totals, so that each knows where its entries go
        nbi_tasks_run(t, nbi_order_task, x.chunks, &x);
        for (int32_t k = 0; k < x.chunks; k++) x.base[k + 1] = x.base[k] + x.end[k];
        *entries = x.base[x.chunks];
        if (*entries > cap || nb == NULL || *entries > INT32_MAX) { // offsets from the counts
            for (int32_t k = 1; k < x.chunks; k++)
                for (int32_t p = a->start[x.unit[k]]; p < a->start[x.unit[k + 1]]; p++)
                    offsets[p + 1] = (int32_t)(offsets[p + 1] + x.base[k] < INT32_MAX
                                                   ? offsets[p + 1] + x.base[k]
                                                   : INT32_MAX);
            return nbi_order_done(offsets, a->n, entries);
        }
    }
    x.nb = nb;
    x.d2 = d2;
    x.cap = cap;
    nbi_tasks_run(t, nbi_order_task, x.chunks, &x);
    *entries = x.chunks > 1 ? x.base[x.chunks] : x.end[0];
    return nbi_order_done(offsets, a->n, entries);
}

// Rows in cell order of a against b (a == b && self: a set against itself), into the caller's
// buffers.
static nbStatus nbi_grid_order_rows(const nbGrid *a, const nbGrid *b, bool self, double radius,
                                    int32_t *offsets, int32_t *neighbors, int64_t capacity,
                                    int64_t *found)
{
    nbStatus st = nbi_rows_check(a, b, radius, capacity);
    if (st == NB_OK) st = nbi_order_guard(&a->view, &b->view, self, radius);
    if (st != NB_OK) {
        memset(offsets, 0, ((size_t)a->n + 1) * sizeof(int32_t));
        return st;
    }
    int64_t entries = 0;
    st = nbi_order_rows(a, &a->view, &b->view, self, radius, &a->tasks, offsets, neighbors, NULL,
                        capacity, &entries);
    if (st != NB_OK) return st;
    *found = entries;
    return entries > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

// The rows calls' common start: outputs zeroed, pointers checked, then rows by index or in
// cell order.
static nbStatus nbi_rows_api(const nbGrid *a, const nbGrid *b, bool self, bool cell, double radius,
                             int32_t *offsets, int32_t *neighbors, int64_t capacity, int64_t *found)
{
    if (found != NULL) *found = 0;
    if (a == NULL || b == NULL || offsets == NULL || found == NULL ||
        (neighbors == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    return cell ? nbi_grid_order_rows(a, b, self, radius, offsets, neighbors, capacity, found)
                : nbi_grid_rows(a, b, self, radius, offsets, neighbors, capacity, found);
}

nbStatus nb_grid_neighbor_rows_cell_order(const nbGrid *grid, double radius, int32_t *offsets,
                                          int32_t *neighbors, int64_t capacity, int64_t *found)
{
    return nbi_rows_api(grid, grid, true, true, radius, offsets, neighbors, capacity, found);
}

nbStatus nb_grid_cross_neighbor_rows_cell_order(const nbGrid *a, const nbGrid *b, double radius,
                                                int32_t *offsets, int32_t *neighbors,
                                                int64_t capacity, int64_t *found)
{
    return nbi_rows_api(a, b, false, true, radius, offsets, neighbors, capacity, found);
}

// ---- the list ----

// The list works by position: the rows in cell order (nbi_order_rows) go to its scratch (spare
// and tq), and are either the rows themselves (cell_order: swapped in) or placed by index: row
// p goes to row idx[p], its entries mapped to indices and sorted in registers (with distances,
// as keys index << 32 | position, the distances computed from the positions after the sort).
//
// Invariants: offsets holds rows + 1 entries (0 rows: offsets may be empty, then read as {0}),
// offsets[rows] == entries, nb (and with distances d2) hold `entries`; spare, tq and td2 are
// scratch.
struct nbNeighborList {
    nbAllocator alloc;
    nbTasks tasks;
    bool distances;
    int32_t rows;
    int64_t entries;
    nbiBuf offsets; // int32_t, rows + 1
    nbiBuf spare;   // int32_t
    nbiBuf nb;      // int32_t, entries
    nbiBuf d2;      // double, entries
    nbiBuf tq;      // int32_t, entries: the rows by position, of positions
    // Rows in cell order (cell_order): the rows are by position, order (a's, rows entries) and
    // border (b's, when the last build was of two grids) map positions to the caller's points;
    // td2 is the distances' scratch.
    bool cell_order, two_orders;
    nbiBuf order;  // int32_t
    nbiBuf border; // int32_t
    nbiBuf td2;    // double
};

// What an empty list's rows point at (offsets {0}, no entries): never NULL.
static const int32_t nbi_zero_offset = 0;
static const double nbi_zero_dist2 = 0.0;

// *rows from a list's (or Verlet list's) storage; `owner` is the list, checked for NULL.
static nbStatus nbi_rows_view(const void *owner, nbNeighborRows *rows, int32_t n, int64_t entries,
                              const nbiBuf *offsets, const nbiBuf *nb, const nbiBuf *d2,
                              bool distances, const int32_t *order, const int32_t *border,
                              const uint64_t *keep)
{
    if (rows != NULL) memset(rows, 0, sizeof *rows);
    if (owner == NULL || rows == NULL) return NB_ERR_NULL_ARG;
    rows->rows = n;
    rows->entries = entries;
    rows->offsets = offsets->ptr != NULL ? (const int32_t *)offsets->ptr : &nbi_zero_offset;
    rows->neighbors = nb->ptr != NULL ? (const int32_t *)nb->ptr : &nbi_zero_offset;
    rows->dist2 = !distances ? NULL : d2->ptr != NULL ? (const double *)d2->ptr : &nbi_zero_dist2;
    rows->order = order;
    rows->neighbor_order = border;
    rows->keep = keep;
    return NB_OK;
}

// nbi_buf_prepare for entries, whose count moves a little from step to step: a buffer that
// must grow gets a quarter more than asked (the exact size if that fails), so the next steps
// fit.
static bool nbi_entries_prepare(const nbAllocator *a, const nbiBuf *cur, nbiBuf *next, size_t need,
                                size_t elem)
{
    if (need > cur->cap && nbi_buf_prepare(a, cur, next, need + need / 4, elem)) return true;
    return nbi_buf_prepare(a, cur, next, need, elem);
}

static bool nbi_tasks_ok(const nbTasks *t)
{
    return t == NULL || t->workers >= 0;
}

nbStatus nb_neighbor_list_create(const nbNeighborListDesc *desc, nbNeighborList **out)
{
    if (out == NULL) return NB_ERR_NULL_ARG;
    *out = NULL;
    if (desc == NULL) return NB_ERR_NULL_ARG;
    nbAllocator a;
    if (!nbi_allocator(desc->allocator, &a)) return NB_ERR_NULL_ARG;
    if (desc->capacity_hint < 0 || !nbi_tasks_ok(desc->tasks)) return NB_ERR_OUT_OF_RANGE;
    nbNeighborList *l = (nbNeighborList *)nbi_alloc(&a, 1, sizeof(nbNeighborList));
    if (l == NULL) return NB_ERR_OUT_OF_MEMORY;
    memset(l, 0, sizeof *l);
    l->alloc = a;
    if (desc->tasks != NULL) l->tasks = *desc->tasks;
    l->distances = desc->distances;
    l->cell_order = desc->cell_order;
    if (desc->capacity_hint > 0) {
        nbiBuf nb, d2 = l->d2;
        const size_t need = (size_t)desc->capacity_hint;
        if (!nbi_buf_prepare(&a, &l->nb, &nb, need, sizeof(int32_t)) ||
            (l->distances && !nbi_buf_prepare(&a, &l->d2, &d2, need, sizeof(double)))) {
            nbi_buf_abandon(&a, &l->nb, &nb, sizeof(int32_t));
            nbi_free(&a, l, 1, sizeof(nbNeighborList));
            return NB_ERR_OUT_OF_MEMORY;
        }
        nbi_buf_commit(&a, &l->nb, &nb, sizeof(int32_t));
        nbi_buf_commit(&a, &l->d2, &d2, sizeof(double));
    }
    *out = l;
    return NB_OK;
}

void nb_neighbor_list_destroy(nbNeighborList *list)
{
    if (list == NULL) return;
    const nbAllocator a = list->alloc;
    nbi_free(&a, list->offsets.ptr, list->offsets.cap, sizeof(int32_t));
    nbi_free(&a, list->spare.ptr, list->spare.cap, sizeof(int32_t));
    nbi_free(&a, list->nb.ptr, list->nb.cap, sizeof(int32_t));
    nbi_free(&a, list->d2.ptr, list->d2.cap, sizeof(double));
    nbi_free(&a, list->tq.ptr, list->tq.cap, sizeof(int32_t));
    nbi_free(&a, list->order.ptr, list->order.cap, sizeof(int32_t));
    nbi_free(&a, list->border.ptr, list->border.cap, sizeof(int32_t));
    nbi_free(&a, list->td2.ptr, list->td2.cap, sizeof(double));
    nbi_free(&a, list, 1, sizeof(nbNeighborList));
}

// Rows by position placed by index (see above), positions [p0, p1) of view a.
typedef struct nbiPlaceCtx {
    const nbiView *a, *b;
    const int32_t *pos_off; // a->n + 1: the rows by position
    const int32_t *tq;      // their entries: positions of b
    const int32_t *off;     // a->n + 1: the rows by index
    int32_t *nb;
    double *d2; // NULL: no distances
    int32_t chunks;
} nbiPlaceCtx;

static void nbi_place_task(int32_t k0, int32_t k1, int32_t worker, void *ctx)
{
    (void)worker;
    const nbiPlaceCtx *x = (const nbiPlaceCtx *)ctx;
    const bool wide = nbi_sort_wide();
    const nbiView *a = x->a, *b = x->b;
    const int dim = a->dim;
    const int32_t p0 = (int32_t)((int64_t)a->n * k0 / x->chunks);
    const int32_t p1 = (int32_t)((int64_t)a->n * k1 / x->chunks);
    for (int32_t p = p0; p < p1; p++) {
        // Each row lands at a random place: its offset is asked for 32 rows ahead and its
        // destination 16 ahead, so that the misses overlap instead of stalling each row.
        if (p + 32 < p1) nbi_prefetch(x->off + a->idx[p + 32]);
        if (p + 16 < p1) {
            const int32_t ahead = x->off[a->idx[p + 16]];
            nbi_prefetch_w(x->nb + ahead);
            nbi_prefetch_w(x->nb + ahead + 15);
            if (x->d2 != NULL) {
                nbi_prefetch_w(x->d2 + ahead);
                nbi_prefetch_w(x->d2 + ahead + 7);
                nbi_prefetch_w(x->d2 + ahead + 15);
            }
        }
        const int32_t o = x->pos_off[p], len = x->pos_off[p + 1] - o, at = x->off[a->idx[p]];
        const int32_t *q = x->tq + o;
        int32_t *dst = x->nb + at;
        if (x->d2 == NULL) {
            nbi_place_row(q, len, b->idx, dst, wide);
            continue;
        }
        // The keys in the distances' place (allocated memory, as wide as a double), sorted,
        // then split: the index to nb, the distance from the two positions to d2.
        uint64_t *key = (uint64_t *)(void *)(x->d2 + at);
        nbi_key_row(q, len, b->idx, key, wide);
        const double *pa = a->pts + (size_t)p * (size_t)dim;
        for (int32_t t = 0; t < len; t++) {
            const uint64_t k = key[t];
            const double *pb = b->pts + (size_t)(uint32_t)k * (size_t)dim;
            dst[t] = (int32_t)(k >> 32);
            x->d2[at + t] = a->wrap != NULL ? nbi_dist2_wrap(pa, pb, dim, a->wrap->kper)
                                            : nbi_dist2(pa, pb, dim);
        }
    }
}

// The rows by position of a against b (nbi_order_rows) into the list's scratch: spare (the
// offsets), tq (the entries) and, with `dist`, td2; the scratch grown, and the walk run again,
// when the entries outgrew it. *entries = their number.
static nbStatus nbi_list_walk(nbNeighborList *l, const nbGrid *a, const nbGrid *b, bool self,
                              double radius, bool dist, int64_t *entries)
{
    *entries = 0;
    nbStatus st = nbi_rows_check(a, b, radius, 0);
    if (st == NB_OK) st = nbi_order_guard(&a->view, &b->view, self, radius);
    if (st != NB_OK) return st;
    const nbAllocator *al = &l->alloc;
    nbiBuf spare = l->spare;
    if (!nbi_buf_prepare(al, &l->spare, &spare, (size_t)a->n + 1, sizeof(int32_t)))
        return NB_ERR_OUT_OF_MEMORY;
    nbi_buf_commit(al, &l->spare, &spare, sizeof(int32_t)); // scratch
    for (int round = 0; round < 2; round++) {
        const int64_t cap =
            dist && l->td2.cap < l->tq.cap ? (int64_t)l->td2.cap : (int64_t)l->tq.cap;
        st = nbi_order_rows(a, &a->view, &b->view, self, radius, &l->tasks, (int32_t *)l->spare.ptr,
                            (int32_t *)l->tq.ptr, dist ? (double *)l->td2.ptr : NULL, cap, entries);
        if (st != NB_OK || *entries <= cap) return st;
        // Room for the entries and the wide kernel's last stores past them.
        const size_t need = (size_t)*entries + 8;
        nbiBuf tq = l->tq, td2 = l->td2;
        bool ok = nbi_entries_prepare(al, &l->tq, &tq, need, sizeof(int32_t));
        ok = ok && (!dist || nbi_entries_prepare(al, &l->td2, &td2, need, sizeof(double)));
        if (!ok) {
            nbi_buf_abandon(al, &l->tq, &tq, sizeof(int32_t));
            nbi_buf_abandon(al, &l->td2, &td2, sizeof(double));
            return NB_ERR_OUT_OF_MEMORY;
        }
        nbi_buf_commit(al, &l->tq, &tq, sizeof(int32_t)); // scratch
        nbi_buf_commit(al, &l->td2, &td2, sizeof(double));
    }
    NB_ASSERT(!"the second walk did not fit");
    return NB_ERR_INTERNAL;
}

// The list's build. Without `place`, it stops at the rows by position (spare: offsets, tq:
// entries, *entries of them), and the list's rows stay as they were.
static nbStatus nbi_list_build(nbNeighborList *l, const nbGrid *a, const nbGrid *b, bool self,
                               double radius, bool place, int64_t *entries_out)
{
    int64_t entries = 0;
    nbStatus st = nbi_list_walk(l, a, b, self, radius, false, &entries);
    if (st != NB_OK) return st;
    const nbAllocator *al = &l->alloc;
    const int32_t n = a->n;
    // Everything the rows need, before anything changes.
    nbiBuf off = l->offsets, nb = l->nb, d2 = l->d2;
    bool ok = !place || nbi_buf_prepare(al, &l->offsets, &off, (size_t)n + 1, sizeof(int32_t));
    ok = ok && (!place || nbi_entries_prepare(al, &l->nb, &nb, (size_t)entries, sizeof(int32_t)));
    ok = ok && (!place || !l->distances ||
                nbi_entries_prepare(al, &l->d2, &d2, (size_t)entries, sizeof(double)));
    if (!ok) {
        nbi_buf_abandon(al, &l->offsets, &off, sizeof(int32_t));
        nbi_buf_abandon(al, &l->nb, &nb, sizeof(int32_t));
        nbi_buf_abandon(al, &l->d2, &d2, sizeof(double));
        return NB_ERR_OUT_OF_MEMORY;
    }
    nbi_buf_commit(al, &l->offsets, &off, sizeof(int32_t));
    nbi_buf_commit(al, &l->nb, &nb, sizeof(int32_t));
    nbi_buf_commit(al, &l->d2, &d2, sizeof(double));

    *entries_out = entries;
    if (!place) return NB_OK;
    // The rows by index: each row's length from its position, a prefix sum, then each placed.
    const int32_t *pos_off = (const int32_t *)l->spare.ptr;
    int32_t *o = (int32_t *)l->offsets.ptr;
    o[0] = 0;
    for (int32_t p = 0; p < n; p++) o[a->view.idx[p] + 1] = pos_off[p + 1] - pos_off[p];
    for (int32_t i = 0; i < n; i++) o[i + 1] += o[i];
    nbiPlaceCtx px = {&a->view,
                      &b->view,
                      pos_off,
                      (const int32_t *)l->tq.ptr,
                      o,
                      (int32_t *)l->nb.ptr,
                      l->distances ? (double *)l->d2.ptr : NULL,
                      nbi_rows_chunks(a, &l->tasks)};
    if (entries > 0) nbi_tasks_run(&l->tasks, nbi_place_task, px.chunks, &px); // (no buffers yet)
    l->rows = n;
    l->entries = entries;
    return NB_OK;
}

// The list's build in cell order: the rows by position straight into the scratch (spare, tq,
// td2), then swapped with the rows, and the grids' orders copied.
static nbStatus nbi_list_build_cells(nbNeighborList *l, const nbGrid *a, const nbGrid *b, bool self,
                                     double radius)
{
    const nbAllocator *al = &l->alloc;
    const int32_t n = a->n;
    const bool two = !self && a != b;
    nbiBuf order = l->order, border = l->border;
    bool ok = nbi_buf_prepare(al, &l->order, &order, (size_t)n, sizeof(int32_t));
    ok = ok && (!two || nbi_buf_prepare(al, &l->border, &border, (size_t)b->n, sizeof(int32_t)));
    int64_t entries = 0;
    const nbStatus st =
        ok ? nbi_list_walk(l, a, b, self, radius, l->distances, &entries) : NB_ERR_OUT_OF_MEMORY;
    if (st != NB_OK) { // the orders stay those of the rows
        nbi_buf_abandon(al, &l->order, &order, sizeof(int32_t));
        nbi_buf_abandon(al, &l->border, &border, sizeof(int32_t));
        return st;
    }
    nbi_buf_commit(al, &l->order, &order, sizeof(int32_t));
    nbi_buf_commit(al, &l->border, &border, sizeof(int32_t));
    const nbiBuf t0 = l->offsets, t1 = l->nb, t2 = l->d2;

    l->offsets = l->spare;
    l->spare = t0;
    l->nb = l->tq;
    l->tq = t1;
    if (l->distances) {
        l->d2 = l->td2;
        l->td2 = t2;
    }
    if (n > 0) memcpy(l->order.ptr, a->view.idx, (size_t)n * sizeof(int32_t));
    if (two && b->n > 0) memcpy(l->border.ptr, b->view.idx, (size_t)b->n * sizeof(int32_t));
    l->two_orders = two;
    l->rows = n;
    l->entries = entries;
    return NB_OK;
}

nbStatus nb_neighbor_list_build(nbNeighborList *list, const nbGrid *grid, double radius)
{
    if (list == NULL || grid == NULL) return NB_ERR_NULL_ARG;
    if (list->cell_order) return nbi_list_build_cells(list, grid, grid, true, radius);
    int64_t entries;
    return nbi_list_build(list, grid, grid, true, radius, true, &entries);
}

nbStatus nb_neighbor_list_build_cross(nbNeighborList *list, const nbGrid *a, const nbGrid *b,
                                      double radius)
{
    if (list == NULL || a == NULL || b == NULL) return NB_ERR_NULL_ARG;
    if (list->cell_order) return nbi_list_build_cells(list, a, b, false, radius);
    int64_t entries;
    return nbi_list_build(list, a, b, false, radius, true, &entries);
}

nbStatus nb_neighbor_list_rows(const nbNeighborList *list, nbNeighborRows *rows)
{
    static const nbNeighborList none = {0};
    const nbNeighborList *l = list != NULL ? list : &none;
    // In cell order, never NULL (an empty grid's order reads as the empty array).
    const nbiBuf *ob = l->two_orders ? &l->border : &l->order;
    const int32_t *order = !l->cell_order         ? NULL
                           : l->order.ptr != NULL ? (const int32_t *)l->order.ptr
                                                  : &nbi_zero_offset;
    const int32_t *border = !l->cell_order    ? NULL
                            : ob->ptr != NULL ? (const int32_t *)ob->ptr
                                              : &nbi_zero_offset;
    return nbi_rows_view(list, rows, l->rows, l->entries, &l->offsets, &l->nb, &l->d2, l->distances,
                         order, border, NULL);
}

size_t nb_neighbor_list_memory_bytes(const nbNeighborList *list)
{
    if (list == NULL) return 0;
    return sizeof(nbNeighborList) +
           (list->offsets.cap + list->spare.cap + list->nb.cap + list->tq.cap + list->order.cap +
            list->border.cap) *
               sizeof(int32_t) +
           (list->d2.cap + list->td2.cap) * sizeof(double);
}

// ---- Verlet lists ----

// Invariants: when `built`, the grid was built at radius + skin from the points of the last
// rebuild (its pts, in cell order, are those positions: the reference the displacements are
// measured from), and its rows at radius + skin are kept by position: row p (the point at
// position p, index idx[p]) spans the list cand's position offsets (its scratch `spare`, which
// only the next rebuild changes) and lists in pck each candidate as its index << 32 | its
// position, in the walk's order. The rows (offsets, nb, d2) hold the rows at
// radius of the last successful update's points; cur, tco, tnb and td2 are the update's
// scratch (the points gathered into cell order, and the rows by position).
//
// In cell order (cell_order) the rows are the candidates themselves: offsets and nb are the
// list's rows by position at radius + skin (swapped out of its scratch after a rebuild), order
// the build's cell order, and keep one bit a candidate, set when it is within radius. A
// rebuild tests every candidate from the build's positions and sorts the ones whose distance
// d lay within skin of radius into bands by |d - radius| (NBI_BANDS of width skin / NBI_BANDS),
// block by block of NBI_BLOCK rows (shell: p, q, t a candidate; block k's band b starts at
// bstart[k * NBI_BANDS + b]). Later updates re-test in each block only the bands that the
// largest displacement since the build (moved2, squared) can have carried across radius: a
// pair's distance moved by at most twice that, so a candidate farther from radius than
// 2 sqrt(moved2) (plus the rounding margin) keeps its bit. By blocks, the positions each
// re-test reads stay in the caches. Updates read your points in your order, against ref (the
// build's positions by index), and write them to their positions in cur (pos: index ->
// position). td2, tkeep and band are a rebuild's scratch.
//
// In candidates form (candidates) the rows are cand's own, at radius + skin, by index or in
// cell order as cand was created, and ref holds the rebuild's points by index: an update
// reads your points beside it, in your order, and changes nothing else unless it rebuilds.
enum { NBI_BANDS = 16, NBI_BLOCK = 4096 };
struct nbVerlet {
    nbAllocator alloc;
    double radius, skin;
    double half; // rebuild when a point moved more than this (< 0: at every update)
    int32_t dim;
    bool wrapped, distances;
    double kper[3]; // P or +inf per axis
    nbGrid *grid;
    nbNeighborList *cand;
    bool built;
    int32_t n;
    nbiBuf pck;     // uint64_t, the candidates: index << 32 | position
    nbiBuf cur;     // double, n * dim: the points in cell order
    nbiBuf tco;     // int32_t, n + 1
    nbiBuf tnb;     // int32_t, room for the candidates
    nbiBuf td2;     // double, as many (distances)
    nbiBuf offsets; // int32_t, rows + 1
    nbiBuf nb;      // int32_t, room for the candidates
    nbiBuf d2;      // double, as many (distances)
    int32_t rows;
    int64_t entries;
    double margin; // the rounding margin of the displacement tests (nbi_verlet_margin)
    bool cell_order;
    nbiBuf keep, tkeep; // uint64_t, a bit a candidate
    nbiBuf shell;       // int32_t, 3 a candidate in a band
    nbiBuf order;       // int32_t, n
    nbiBuf band;        // uint8_t, a candidate, and 16 to read past the last
    nbiBuf bstart;      // int32_t, NBI_BANDS a block + 1
    nbiBuf pos;         // int32_t, n
    nbiBuf ref;         // double, n * dim
    int32_t shell_len;  // each of the shell's three arrays' length
    double moved2;
    bool candidates;
};

// The shell's three arrays: rows, positions and entries of its candidates.
static void nbi_verlet_shell_arrays(const nbVerlet *v, const int32_t **sp, const int32_t **sq,
                                    const int32_t **st)
{
    *sp = (const int32_t *)v->shell.ptr;
    *sq = *sp + v->shell_len;
    *st = *sq + v->shell_len;
}

// What the re-tests read and write: the positions, the shell's arrays and the keep bits.
typedef struct nbiShellIn {
    const double *cur;
    const int32_t *sp, *sq, *st;
    uint64_t *keep;
} nbiShellIn;

static nbiShellIn nbi_shell_in(const nbVerlet *v)
{
    nbiShellIn in = {(const double *)v->cur.ptr, NULL, NULL, NULL, (uint64_t *)v->keep.ptr};
    nbi_verlet_shell_arrays(v, &in.sp, &in.sq, &in.st);
    return in;
}

// Where block g's candidates of the bands below `bands` end in the shell (bands 0: where they
// start).
static inline int32_t nbi_verlet_band_end(const nbVerlet *v, int32_t g, int bands)
{
    return ((const int32_t *)v->bstart.ptr)[(size_t)g * NBI_BANDS + (size_t)bands];
}

// A margin of a few ulps of the lengths the tests round (the distances, the displacements and,
// on periodic axes, P - a). The displacement past which a pair now within r may have been
// beyond the candidates' reach is skin / 2 less this margin.
static double nbi_verlet_margin(double radius, double skin, const double *period)
{
    double len = radius + skin;
    for (int d = 0; d < 3; d++) len = period[d] > len ? period[d] : len;
    return 16.0 * DBL_EPSILON * len;
}

nbStatus nb_verlet_create(const nbVerletDesc *desc, nbVerlet **out)
{
    if (out == NULL) return NB_ERR_NULL_ARG;
    *out = NULL;
    if (desc == NULL) return NB_ERR_NULL_ARG;
    nbAllocator a;
    if (!nbi_allocator(desc->allocator, &a)) return NB_ERR_NULL_ARG;
    if (!isfinite(desc->radius) || !isfinite(desc->skin)) return NB_ERR_NOT_FINITE;
    for (int d = 0; d < 3; d++)
        if (!isfinite(desc->period[d])) return NB_ERR_NOT_FINITE;
    if (desc->radius < 0.0 || desc->skin < 0.0 || !nbi_tasks_ok(desc->tasks))
        return NB_ERR_OUT_OF_RANGE;
    if (desc->dim != 0 && desc->dim != 2 && desc->dim != 3) return NB_ERR_OUT_OF_RANGE;
    if (desc->candidates && desc->distances) return NB_ERR_OUT_OF_RANGE;
    const int32_t dim = desc->dim == 0 ? 2 : desc->dim;
    const double reach = desc->radius + desc->skin;
    for (int d = 0; d < 3; d++) {
        const double p = desc->period[d];
        if (p < 0.0 || (d >= dim && p != 0.0) || (p > 0.0 && reach > 0.5 * p))
            return NB_ERR_OUT_OF_RANGE;
    }
    nbVerlet *v = (nbVerlet *)nbi_alloc(&a, 1, sizeof(nbVerlet));
    if (v == NULL) return NB_ERR_OUT_OF_MEMORY;
    memset(v, 0, sizeof *v);
    v->alloc = a;
    v->radius = desc->radius;
    v->skin = desc->skin;
    v->margin = nbi_verlet_margin(desc->radius, desc->skin, desc->period);
    v->half = 0.5 * desc->skin - v->margin;
    v->dim = dim;
    v->distances = desc->distances;
    v->cell_order = desc->cell_order;
    v->candidates = desc->candidates;
    for (int d = 0; d < 3; d++) {
        v->wrapped |= desc->period[d] > 0.0;
        v->kper[d] = desc->period[d] > 0.0 ? desc->period[d] : (double)INFINITY;
    }
    nbGridDesc gd = {.dim = dim, .allocator = desc->allocator, .tasks = desc->tasks};
    memcpy(gd.period, desc->period, sizeof gd.period);
    const nbNeighborListDesc ld = {.allocator = desc->allocator,
                                   .tasks = desc->tasks,
                                   .cell_order = desc->candidates && desc->cell_order};
    nbStatus st = nb_grid_create(&gd, &v->grid);
    if (st == NB_OK) st = nb_neighbor_list_create(&ld, &v->cand);
    if (st != NB_OK) {
        nb_verlet_destroy(v);
        return st;
    }
    *out = v;
    return NB_OK;
}

// The Verlet list's buffers, for freeing and counting.
#define NBI_VERLET_I32(v)                                                                          \
    {                                                                                              \
        &(v)->tco, &(v)->tnb, &(v)->offsets, &(v)->nb, &(v)->shell, &(v)->order, &(v)->bstart,     \
            &(v)->pos                                                                              \
    }
#define NBI_VERLET_B8(v)                                                                           \
    {                                                                                              \
        &(v)->pck, &(v)->cur, &(v)->td2, &(v)->d2, &(v)->keep, &(v)->tkeep, &(v)->ref              \
    }

void nb_verlet_destroy(nbVerlet *verlet)
{
    if (verlet == NULL) return;
    const nbAllocator a = verlet->alloc;
    nb_grid_destroy(verlet->grid);
    nb_neighbor_list_destroy(verlet->cand);
    nbiBuf *i32[] = NBI_VERLET_I32(verlet), *b8[] = NBI_VERLET_B8(verlet);
    for (size_t k = 0; k < sizeof i32 / sizeof i32[0]; k++)
        nbi_free(&a, i32[k]->ptr, i32[k]->cap, sizeof(int32_t));
    for (size_t k = 0; k < sizeof b8 / sizeof b8[0]; k++)
        nbi_free(&a, b8[k]->ptr, b8[k]->cap, sizeof(double));
    nbi_free(&a, verlet->band.ptr, verlet->band.cap, 1);
    nbi_free(&a, verlet, 1, sizeof(nbVerlet));
}

// Whether coordinate x lies in the box on an axis of period kper (+inf: any finite x).
static bool nbi_verlet_inside(double x, double kper)
{
    return kper == (double)INFINITY || (x >= 0.0 && x < kper);
}

// One pass over the points in input order: finite, inside a periodic box.
static nbStatus nbi_verlet_check(const nbVerlet *v, const double *data, size_t step, int32_t n)
{
    bool finite = true, inside = true;
    for (int32_t i = 0; i < n; i++)
        for (int d = 0; d < v->dim; d++) {
            const double x = data[(size_t)i * step + d];
            finite &= isfinite(x) != 0;
            inside &= nbi_verlet_inside(x, v->kper[d]);
        }
    if (!finite) return NB_ERR_NOT_FINITE;
    return inside ? NB_OK : NB_ERR_OUT_OF_RANGE;
}

// Grows the Verlet list's buffers bufs[k] to need[k] elements of elem[k] bytes, all or nothing
// (entries-sized ones a quarter more, as nbi_entries_prepare).
static bool nbi_verlet_grow(nbVerlet *v, nbiBuf *const *bufs, const size_t *need,
                            const size_t *elem, int count)
{
    nbiBuf next[8];
    NB_ASSERT(count <= 8);
    bool ok = true;
    for (int k = 0; k < count; k++) {
        next[k] = *bufs[k];
        ok = ok && nbi_entries_prepare(&v->alloc, bufs[k], &next[k], need[k], elem[k]);
    }
    for (int k = 0; k < count; k++) {
        if (ok)
            nbi_buf_commit(&v->alloc, bufs[k], &next[k], elem[k]);
        else
            nbi_buf_abandon(&v->alloc, bufs[k], &next[k], elem[k]);
    }
    return ok;
}

// Every candidate tested from the positions in cur: its bit into keep, its squared distance
// into d2 and its band into band (NBI_BANDS: never re-tested) when not NULL.
NBI_INLINE void nbi_verlet_test(const nbVerlet *v, int dim, bool wrap, const int32_t *pco,
                                const int32_t *tq, uint64_t *keep, double *d2, uint8_t *band)
{
    const double r = v->radius, r2 = r * r, inv = NBI_BANDS / v->skin;
    const double lo = r > v->skin ? (r - v->skin) * (r - v->skin) : -1.0;
    const double *cur = (const double *)v->cur.ptr;
    uint64_t w = 0;
    int32_t t = 0;
    for (int32_t p = 0; p < v->n; p++) {
        const double *cp = cur + (size_t)p * (size_t)dim;
        for (; t < pco[p + 1]; t++) {
            const double *cq = cur + (size_t)tq[t] * (size_t)dim;
            const double e = wrap ? nbi_dist2_wrap(cp, cq, dim, v->kper) : nbi_dist2(cp, cq, dim);
            w |= (uint64_t)(e <= r2) << (t & 63);
            if ((t & 63) == 63) {
                keep[t >> 6] = w;
                w = 0;
            }
            if (d2 != NULL) d2[t] = e;
            if (band != NULL) {
                const double u = fabs(sqrt(e) - r) * inv;
                band[t] = (uint8_t)(e <= lo || !(u < (double)NBI_BANDS) ? NBI_BANDS : (int)u);
            }
        }
    }
    if ((t & 63) != 0) keep[t >> 6] = w;
}

#if defined(NBI_AVX512)
// Eight candidate positions' (q) coordinates gathered from cur, and their squared distances to
// the point c, as nbi_dist2 (nbi_dist2_wrap) computes them (the same operations in the same
// order, so the same answers).
NBI_TARGET_AVX512 static inline __m512d nbi_verlet_d2x8(const double *cur, int dim, bool wrap,
                                                        const __m512d c[3], const __m512d per[3],
                                                        __m512i q64, __mmask8 k)
{
    const __m512i at =
        dim == 2 ? _mm512_slli_epi64(q64, 1) : _mm512_add_epi64(_mm512_slli_epi64(q64, 1), q64);
    __m512d d[3] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
    for (int a = 0; a < dim; a++) {
        const __m512d g = _mm512_mask_i64gather_pd(_mm512_setzero_pd(), k, at, cur + a, 8);
        d[a] = _mm512_sub_pd(c[a], g);
        if (wrap) {
            const __m512d u = _mm512_abs_pd(d[a]);
            d[a] = _mm512_min_pd(_mm512_sub_pd(per[a], u), u);
        }
    }
    __m512d d2 = _mm512_add_pd(_mm512_mul_pd(d[0], d[0]), _mm512_mul_pd(d[1], d[1]));
    if (dim == 3) d2 = _mm512_add_pd(d2, _mm512_mul_pd(d[2], d[2]));
    return d2;
}

// nbi_verlet_test eight candidates a step; the bands counted afterwards (nbi_verlet_shell).
NBI_TARGET_AVX512 static void nbi_verlet_test8(const nbVerlet *v, int dim, bool wrap,
                                               const int32_t *pco, const int32_t *tq,
                                               uint64_t *keep, double *d2o, uint8_t *band)
{
    const double r = v->radius;
    const __m512d vr2 = _mm512_set1_pd(r * r), vr = _mm512_set1_pd(r);
    const __m512d inv = _mm512_set1_pd(NBI_BANDS / v->skin), top = _mm512_set1_pd(NBI_BANDS);
    const __m512d lo = _mm512_set1_pd(r > v->skin ? (r - v->skin) * (r - v->skin) : -1.0);
    const __m256i fixed = _mm256_set1_epi32(NBI_BANDS);
    const __m512d per[3] = {_mm512_set1_pd(v->kper[0]), _mm512_set1_pd(v->kper[1]),
                            _mm512_set1_pd(v->kper[2])};
    const double *cur = (const double *)v->cur.ptr;
    uint64_t w = 0;
    int32_t t = 0;
    for (int32_t p = 0; p < v->n; p++) {
        const double *cp = cur + (size_t)p * (size_t)dim;
        const __m512d c[3] = {_mm512_set1_pd(cp[0]), _mm512_set1_pd(cp[1]),
                              _mm512_set1_pd(dim == 3 ? cp[2] : 0.0)};
        const int32_t t1 = pco[p + 1];
        for (; t < t1; t += 8) {
            const int cnt = t1 - t >= 8 ? 8 : t1 - t;
            const __mmask8 k = (__mmask8)((1u << cnt) - 1);
            const __m256i q = _mm256_maskz_loadu_epi32(k, tq + t);
            const __m512d d2 = nbi_verlet_d2x8(cur, dim, wrap, c, per, _mm512_cvtepi32_epi64(q), k);
            const uint64_t hit = _mm512_mask_cmp_pd_mask(k, d2, vr2, _CMP_LE_OQ);
            const int off = t & 63;
            w |= hit << off;
            if (off + cnt >= 64) {
                keep[t >> 6] = w;
                w = off + cnt > 64 ? hit >> (64 - off) : 0;
            }
            if (d2o != NULL) _mm512_mask_storeu_pd(d2o + t, k, d2);
            if (band != NULL) {
                const __m512d u =
                    _mm512_mul_pd(_mm512_abs_pd(_mm512_sub_pd(_mm512_sqrt_pd(d2), vr)), inv);
                __m256i b = _mm512_cvttpd_epi32(_mm512_min_pd(u, top));
                b = _mm256_mask_mov_epi32(b, _mm512_cmp_pd_mask(d2, lo, _CMP_LE_OQ), fixed);
                _mm256_mask_cvtepi32_storeu_epi8(band + t, k, b);
            }
        }
        t = t1;
    }
    if ((t & 63) != 0) keep[t >> 6] = w;
    _mm256_zeroupper();
}

// nbi_verlet_retest eight shell candidates a step.
NBI_TARGET_AVX512 static void nbi_verlet_retest8(nbVerlet *v, int dim, bool wrap, int bands)
{
    const __m512d vr2 = _mm512_set1_pd(v->radius * v->radius);
    const __m512d per[3] = {_mm512_set1_pd(v->kper[0]), _mm512_set1_pd(v->kper[1]),
                            _mm512_set1_pd(v->kper[2])};
    const nbiShellIn in = nbi_shell_in(v);
    const double *cur = in.cur;
    const int32_t *sp = in.sp, *sq = in.sq, *st = in.st;
    for (int32_t g = 0; g <= (v->n - 1) / NBI_BLOCK; g++) {
        const int32_t end = nbi_verlet_band_end(v, g, bands);
        for (int32_t k0 = nbi_verlet_band_end(v, g, 0); k0 < end; k0 += 8) {
            const int cnt = end - k0 >= 8 ? 8 : end - k0;
            const __mmask8 k = (__mmask8)((1u << cnt) - 1);
            const __m512i p64 = _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(k, sp + k0));
            const __m512i pa = dim == 2 ? _mm512_slli_epi64(p64, 1)
                                        : _mm512_add_epi64(_mm512_slli_epi64(p64, 1), p64);
            __m512d c[3];
            for (int a = 0; a < dim; a++)
                c[a] = _mm512_mask_i64gather_pd(_mm512_setzero_pd(), k, pa, cur + a, 8);
            const __m512d d2 =
                nbi_verlet_d2x8(cur, dim, wrap, c, per,
                                _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(k, sq + k0)), k);
            const unsigned hit = _mm512_mask_cmp_pd_mask(k, d2, vr2, _CMP_LE_OQ);
            for (int j = 0; j < cnt; j++) {
                const int32_t t = st[k0 + j];
                const uint64_t bit = (uint64_t)1 << (t & 63);
                uint64_t *word = in.keep + (t >> 6);
                *word = (*word & ~bit) | ((uint64_t)((hit >> j) & 1u) << (t & 63));
            }
        }
    }
    _mm256_zeroupper();
}
#endif

// nbi_verlet_test by the widest kernel the CPU has (once a rebuild, or with distances once an
// update: not specialised, the gathers outweigh the branches).
static void nbi_verlet_test_any(const nbVerlet *v, const int32_t *pco, const int32_t *tq,
                                uint64_t *keep, double *d2, uint8_t *band)
{
#if defined(NBI_AVX512)
    if (nbi_sort_wide()) {
        nbi_verlet_test8(v, v->dim, v->wrapped, pco, tq, keep, d2, band);
        return;
    }
#endif
    nbi_verlet_test(v, v->dim, v->wrapped, pco, tq, keep, d2, band);
}

// The candidates of rows [p0, p1) in a band (band[t] < NBI_BANDS), in candidate order: their
// rows, positions, entries and bands into xp, xq, xt, xb; returns how many.
NBI_INLINE int32_t nbi_verlet_stage(const uint8_t *band, const int32_t *pco, const int32_t *tq,
                                    int32_t p0, int32_t p1, int32_t *xp, int32_t *xq, int32_t *xt,
                                    int32_t *xb)
{
    int32_t m = 0;
    for (int32_t p = p0; p < p1; p++)
        for (int32_t t = pco[p]; t < pco[p + 1]; t++) {
            const int b = band[t];
            xp[m] = p; // (a fixed candidate's slot is overwritten by the next)
            xq[m] = tq[t];
            xt[m] = t;
            xb[m] = b;
            m += b < NBI_BANDS;
        }
    return m;
}

#if defined(NBI_AVX512)
// nbi_verlet_stage sixteen candidates a step, compressed.
NBI_TARGET_AVX512 static int32_t nbi_verlet_stage16(const uint8_t *band, const int32_t *pco,
                                                    const int32_t *tq, int32_t p0, int32_t p1,
                                                    int32_t *xp, int32_t *xq, int32_t *xt,
                                                    int32_t *xb)
{
    const __m512i top = _mm512_set1_epi32(NBI_BANDS);
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    int32_t m = 0;
    for (int32_t p = p0; p < p1; p++) {
        const __m512i vp = _mm512_set1_epi32(p);
        const int32_t t1 = pco[p + 1];
        for (int32_t t = pco[p]; t < t1; t += 16) {
            const int cnt = t1 - t >= 16 ? 16 : t1 - t;
            const __mmask16 k = (__mmask16)((1u << cnt) - 1);
            const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(band + t)));
            const __mmask16 in = _mm512_mask_cmplt_epi32_mask(k, b, top);
            _mm512_mask_compressstoreu_epi32(xp + m, in, vp);
            _mm512_mask_compressstoreu_epi32(xq + m, in, _mm512_maskz_loadu_epi32(k, tq + t));
            _mm512_mask_compressstoreu_epi32(xt + m, in,
                                             _mm512_add_epi32(_mm512_set1_epi32(t), iota));
            _mm512_mask_compressstoreu_epi32(xb + m, in, b);
            m += _mm_popcnt_u32(in);
        }
    }
    _mm256_zeroupper();
    return m;
}
#endif

// The shell from the bands, block by block: its candidates first gathered in candidate order
// (scratch tnb: rows, positions, entries, bands; the count moves in a register), then placed
// band after band by a counting sort, each as its row p, position q and entry t (sp, sq, st:
// see nbi_verlet_shell_arrays); bstart gets each block's bands' starts. false: out of memory.
static bool nbi_verlet_shell(nbVerlet *v, const int32_t *pco, const int32_t *tq)
{
    const int32_t n = v->n, blocks = n == 0 ? 0 : (n - 1) / NBI_BLOCK + 1;
    const uint8_t *band = (const uint8_t *)v->band.ptr;
    int32_t total = 0, most = 0;
    for (int32_t g = 0; g < blocks; g++) {
        const int32_t t1 = pco[g == blocks - 1 ? n : (g + 1) * NBI_BLOCK];
        int32_t m = 0;
        for (int32_t t = pco[g * NBI_BLOCK]; t < t1; t++) m += band[t] < NBI_BANDS;
        total += m;
        most = m > most ? m : most;
    }
    nbiBuf *sb[] = {&v->shell, &v->tnb};
    const size_t need[] = {3 * ((size_t)total + 1), 4 * ((size_t)most + 1)};
    const size_t elem[] = {sizeof(int32_t), sizeof(int32_t)};
    if (!nbi_verlet_grow(v, sb, need, elem, 2)) return false;
    v->shell_len = total + 1;
    int32_t *sp, *sq, *st, *bs = (int32_t *)v->bstart.ptr, base = 0;
    nbi_verlet_shell_arrays(v, (const int32_t **)&sp, (const int32_t **)&sq, (const int32_t **)&st);
    int32_t *xp = (int32_t *)v->tnb.ptr, *xq = xp + most + 1, *xt = xq + most + 1;
    int32_t *xb = xt + most + 1;
    const bool wide = nbi_sort_wide();
    (void)wide;
    for (int32_t g = 0; g < blocks; g++) {
        const int32_t p0 = g * NBI_BLOCK, p1 = g == blocks - 1 ? n : p0 + NBI_BLOCK;
#if defined(NBI_AVX512)
        const int32_t m = wide ? nbi_verlet_stage16(band, pco, tq, p0, p1, xp, xq, xt, xb)
                               : nbi_verlet_stage(band, pco, tq, p0, p1, xp, xq, xt, xb);
#else
        const int32_t m = nbi_verlet_stage(band, pco, tq, p0, p1, xp, xq, xt, xb);
#endif
        int32_t at[NBI_BANDS] = {0};
        for (int32_t k = 0; k < m; k++) at[xb[k]]++;
        for (int b = 0; b < NBI_BANDS; b++) {
            const int32_t c = at[b];
            bs[(size_t)g * NBI_BANDS + b] = at[b] = base;
            base += c;
        }
        for (int32_t k = 0; k < m; k++) {
            const int32_t to = at[xb[k]]++;
            sp[to] = xp[k];
            sq[to] = xq[k];
            st[to] = xt[k];
        }
    }
    bs[(size_t)blocks * NBI_BANDS] = base;
    return true;
}

// The points' coordinates copied by index into ref, `dim` a point.
static void nbi_verlet_copy(double *ref, const nbPoints *points, int dim)
{
    const size_t step = points->stride == 0 ? (size_t)dim : points->stride / sizeof(double);
    const size_t n = (size_t)points->count;
    if (step == (size_t)dim) {
        if (n > 0) memcpy(ref, points->data, n * (size_t)dim * sizeof(double));
        return;
    }
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < dim; d++) ref[i * (size_t)dim + d] = points->data[i * step + d];
}

// Cell order, after a search (the candidates in the list's scratch): every candidate tested
// from the build's positions, the shell sorted by block and band, then the candidates swapped
// in as the rows. The rows stay the old ones until everything is allocated.
static nbStatus nbi_verlet_rebuild_cells(nbVerlet *v, const nbPoints *points, int64_t cand)
{
    const int32_t n = v->n, dim = v->dim;
    const size_t entries = (size_t)cand, words = entries / 64 + 1;
    const size_t groups = ((size_t)n / NBI_BLOCK + 1) * NBI_BANDS + 1; // (blocks, bands) + 1
    const bool bands = v->half >= 0.0;
    nbiBuf *bufs[] = {&v->cur,   &v->tkeep,  &v->td2, &v->band,
                      &v->order, &v->bstart, &v->pos, &v->ref};
    const size_t need[] = {(size_t)n * (size_t)dim,
                           words,
                           v->distances ? entries : 0,
                           bands ? entries + 16 : 0,
                           (size_t)n,
                           groups,
                           (size_t)n,
                           (size_t)n * (size_t)dim};
    const size_t elem[] = {sizeof(double),  sizeof(uint64_t), sizeof(double),  1,
                           sizeof(int32_t), sizeof(int32_t),  sizeof(int32_t), sizeof(double)};
    if (!nbi_verlet_grow(v, bufs, need, elem, 8)) return NB_ERR_OUT_OF_MEMORY;
    memcpy(v->cur.ptr, v->grid->view.pts, (size_t)n * (size_t)dim * sizeof(double));
    const int32_t *pco = (const int32_t *)v->cand->spare.ptr;
    const int32_t *tq = (const int32_t *)v->cand->tq.ptr;
    uint8_t *band = bands ? (uint8_t *)v->band.ptr : NULL;
    if (cand > 0)
        nbi_verlet_test_any(v, pco, tq, (uint64_t *)v->tkeep.ptr,
                            v->distances ? (double *)v->td2.ptr : NULL, band);
    if (bands && cand > 0 && !nbi_verlet_shell(v, pco, tq)) return NB_ERR_OUT_OF_MEMORY;
    // The candidates become the rows (the old rows become the list's scratch).
    nbiBuf t0 = v->offsets, t1 = v->nb, t2 = v->keep, t3 = v->d2;
    v->offsets = v->cand->spare;
    v->cand->spare = t0;
    v->nb = v->cand->tq;
    v->cand->tq = t1;
    v->keep = v->tkeep;
    v->tkeep = t2;
    if (v->distances) {
        v->d2 = v->td2;
        v->td2 = t3;
    }
    // The order, its inverse, and the build's positions by index (those the grid copied).
    const int32_t *idx = v->grid->view.idx;
    int32_t *order = (int32_t *)v->order.ptr, *pos = (int32_t *)v->pos.ptr;
    double *ref = (double *)v->ref.ptr;
    for (int32_t p = 0; p < n; p++) {
        order[p] = idx[p];
        pos[idx[p]] = p;
    }
    nbi_verlet_copy(ref, points, dim);
    v->rows = n;
    v->entries = cand;
    v->moved2 = 0.0;
    v->built = true;
    return NB_OK;
}

// Candidates form, after the grid's build at radius + skin: the rows are the list's own at
// radius + skin, and ref the points by index. The storage is had first, so that the rows stay
// the old ones on any failure.
static nbStatus nbi_verlet_rebuild_candidates(nbVerlet *v, const nbPoints *points)
{
    nbiBuf *bufs[] = {&v->ref};
    const size_t need[] = {(size_t)points->count * (size_t)v->dim}, elem[] = {sizeof(double)};
    if (!nbi_verlet_grow(v, bufs, need, elem, 1)) return NB_ERR_OUT_OF_MEMORY;
    const nbStatus st = nb_neighbor_list_build(v->cand, v->grid, v->radius + v->skin);
    if (st != NB_OK) return st;
    nbi_verlet_copy((double *)v->ref.ptr, points, v->dim);
    v->n = points->count;
    v->built = true;
    return NB_OK;
}

// A fresh search at radius + skin from the points; on success `built`, with the candidates by
// position and the storage every update needs.
static nbStatus nbi_verlet_rebuild(nbVerlet *v, const nbPoints *points)
{
    v->built = false;
    const double reach = v->radius + v->skin;
    int64_t cand = 0;
    nbStatus st = nb_grid_build(v->grid, points, reach);
    if (st == NB_OK && v->candidates) return nbi_verlet_rebuild_candidates(v, points);
    if (st == NB_OK) st = nbi_list_build(v->cand, v->grid, v->grid, true, reach, false, &cand);
    if (st != NB_OK) return st;
    const int32_t n = points->count;
    v->n = n;
    if (v->cell_order) return nbi_verlet_rebuild_cells(v, points, cand);
    const size_t entries = (size_t)cand, rows = (size_t)n + 1;
    nbiBuf *bufs[] = {&v->tco, &v->tnb, &v->offsets, &v->nb, &v->pck, &v->cur, &v->td2, &v->d2};
    const size_t need[] = {rows,
                           entries,
                           rows,
                           entries,
                           entries,
                           (size_t)n * (size_t)v->dim,
                           v->distances ? entries : 0,
                           v->distances ? entries : 0};
    const size_t elem[] = {sizeof(int32_t),  sizeof(int32_t), sizeof(int32_t), sizeof(int32_t),
                           sizeof(uint64_t), sizeof(double),  sizeof(double),  sizeof(double)};
    if (!nbi_verlet_grow(v, bufs, need, elem, 8)) return NB_ERR_OUT_OF_MEMORY;
    // The list's rows by position, each entry with its index, sorted by index here once: one
    // pass in cell order, every read near the last. Filtering keeps the order, so no update
    // sorts.
    const int32_t *idx = v->grid->view.idx, *pco = (const int32_t *)v->cand->spare.ptr;
    const int32_t *tq = (const int32_t *)v->cand->tq.ptr;
    uint64_t *pck = (uint64_t *)v->pck.ptr;
    const bool wide = nbi_sort_wide();
    for (int32_t p = 0; p < n && cand > 0; p++) // (no candidates: the buffers may not exist)
        nbi_key_row(tq + pco[p], pco[p + 1] - pco[p], idx, pck + pco[p], wide);
    memcpy(v->cur.ptr, v->grid->view.pts, (size_t)n * (size_t)v->dim * sizeof(double));
    v->built = true;
    return NB_OK;
}

// Cell order, an update that did not rebuild: in each block, the candidates of the bands
// below `bands` re-tested from the positions in cur, their bits set or cleared.
NBI_INLINE void nbi_verlet_retest(nbVerlet *v, int dim, bool wrap, int bands)
{
    const double r2 = v->radius * v->radius;
    const nbiShellIn in = nbi_shell_in(v);
    const double *cur = in.cur;
    const int32_t *sp = in.sp, *sq = in.sq, *st = in.st;
    for (int32_t g = 0; g <= (v->n - 1) / NBI_BLOCK; g++) {
        const int32_t end = nbi_verlet_band_end(v, g, bands);
        for (int32_t k = nbi_verlet_band_end(v, g, 0); k < end; k++) {
            const double *cp = cur + (size_t)sp[k] * (size_t)dim;
            const double *cq = cur + (size_t)sq[k] * (size_t)dim;
            const double d2 = wrap ? nbi_dist2_wrap(cp, cq, dim, v->kper) : nbi_dist2(cp, cq, dim);
            const uint64_t bit = (uint64_t)1 << (st[k] & 63);
            uint64_t *w = in.keep + (st[k] >> 6);
            *w = d2 <= r2 ? *w | bit : *w & ~bit;
        }
    }
}

static void nbi_verlet_step_cells(nbVerlet *v, double max_d2)
{
    v->moved2 = max_d2 > v->moved2 ? max_d2 : v->moved2;
    if (v->entries == 0) return;
    if (v->distances) { // every candidate, for its distance
        nbi_verlet_test_any(v, (const int32_t *)v->offsets.ptr, (const int32_t *)v->nb.ptr,
                            (uint64_t *)v->keep.ptr, (double *)v->d2.ptr, NULL);
        return;
    }
    // The bands up to 2 sqrt(moved2) from radius, with the margin twice (the band numbers
    // were rounded too).
    const double w = (2.0 * sqrt(v->moved2) + 2.0 * v->margin) * (NBI_BANDS / v->skin);
    const int bands = w < (double)(NBI_BANDS - 1) ? (int)w + 1 : NBI_BANDS;
    const bool w3 = v->dim == 3, wr = v->wrapped;
#if defined(NBI_AVX512)
    if (nbi_sort_wide()) {
        if (!w3)
            wr ? nbi_verlet_retest8(v, 2, true, bands) : nbi_verlet_retest8(v, 2, false, bands);
        else
            wr ? nbi_verlet_retest8(v, 3, true, bands) : nbi_verlet_retest8(v, 3, false, bands);
        return;
    }
#endif
    if (!w3)
        wr ? nbi_verlet_retest(v, 2, true, bands) : nbi_verlet_retest(v, 2, false, bands);
    else
        wr ? nbi_verlet_retest(v, 3, true, bands) : nbi_verlet_retest(v, 3, false, bands);
}

// One pass over the points: the checks of nbi_verlet_check, each point's coordinates copied
// into cur, and the largest squared displacement from the build's positions. By index
// (!scatter): in the last build's cell order, gathered (idx[p]) against the grid's copy. In
// cell order (scatter): in your order, against the build's positions by index (ref), each
// written to its position (pos[i]).
NBI_INLINE nbStatus nbi_verlet_read(nbVerlet *v, const double *data, size_t step, bool scatter,
                                    double *max_d2)
{
    const int dim = v->dim;
    const int32_t *map = scatter ? (const int32_t *)v->pos.ptr : v->grid->view.idx;
    const double *ref = scatter ? (const double *)v->ref.ptr : v->grid->view.pts;
    double *cur = (double *)v->cur.ptr, m = 0.0;
    bool finite = true, inside = true;
    for (int32_t k = 0; k < v->n; k++) {
        if (!scatter && k + 16 < v->n) nbi_prefetch(data + (size_t)map[k + 16] * step);
        const double *x = data + (size_t)(scatter ? k : map[k]) * step;
        double *c = cur + (size_t)(scatter ? map[k] : k) * (size_t)dim;
        for (int d = 0; d < dim; d++) {
            c[d] = x[d];
            finite &= isfinite(x[d]) != 0;
            inside &= nbi_verlet_inside(x[d], v->kper[d]);
        }
        const double e = nbi_dist2_wrap(x, ref + (size_t)k * (size_t)dim, dim, v->kper);
        m = e > m ? e : m;
    }
    *max_d2 = m;
    if (!finite) return NB_ERR_NOT_FINITE;
    return inside ? NB_OK : NB_ERR_OUT_OF_RANGE;
}

// Candidates form, an update: one pass over the points in your order beside ref (the
// rebuild's copy by index), both read in memory order: the checks of nbi_verlet_check and the
// largest squared displacement as nbi_verlet_read measures it; nothing is written.
// Specialised by dimension, periodicity and a packed layout (step == dim), branch-free, so
// that it vectorises.
NBI_INLINE nbStatus nbi_verlet_scan(const nbVerlet *v, int dim, bool wrap, size_t step,
                                    const double *data, double *max_d2)
{
    const double *ref = (const double *)v->ref.ptr;
    double lo[3], per[3];
    for (int d = 0; d < 3; d++) {
        per[d] = v->kper[d];
        lo[d] = per[d] == (double)INFINITY ? -(double)INFINITY : 0.0;
    }
    double m = 0.0;
    int nonfinite = 0, outside = 0;
    for (size_t i = 0; i < (size_t)v->n; i++) {
        const double *x = data + i * step, *y = ref + i * (size_t)dim;
        double e = 0.0;
        for (int d = 0; d < dim; d++) {
            nonfinite |= !(x[d] - x[d] == 0.0);
            if (wrap) outside |= !(x[d] >= lo[d]) | !(x[d] < per[d]);
            const double a = wrap ? nbi_wrap_d(x[d], y[d], per[d]) : x[d] - y[d];
            e = d == 0 ? a * a : e + a * a; // summed in axis order, as nbi_dist2_wrap
        }
        m = e > m ? e : m;
    }
    *max_d2 = m;
    if (nonfinite) return NB_ERR_NOT_FINITE;
    return outside ? NB_ERR_OUT_OF_RANGE : NB_OK;
}

// nbi_verlet_scan specialised for the list's dimension, periodicity and the points' layout.
static nbStatus nbi_verlet_scan_any(const nbVerlet *v, const double *data, size_t step,
                                    double *max_d2)
{
    const bool w = v->wrapped;
    if (v->dim == 2 && step == 2)
        return w ? nbi_verlet_scan(v, 2, true, 2, data, max_d2)
                 : nbi_verlet_scan(v, 2, false, 2, data, max_d2);
    if (v->dim == 3 && step == 3)
        return w ? nbi_verlet_scan(v, 3, true, 3, data, max_d2)
                 : nbi_verlet_scan(v, 3, false, 3, data, max_d2);
    return nbi_verlet_scan(v, v->dim, w, step, data, max_d2);
}

// What the filters read: the points in cell order, the candidate rows by position (pco) and
// their keys index << 32 | position (pck).
typedef struct nbiKeepIn {
    const double *cur;
    const int32_t *pco;
    const uint64_t *pck;
} nbiKeepIn;

static nbiKeepIn nbi_keep_in(const nbVerlet *v)
{
    const nbiKeepIn in = {(const double *)v->cur.ptr, (const int32_t *)v->cand->spare.ptr,
                          (const uint64_t *)v->pck.ptr};
    return in;
}

// Rows by position filtered from the candidates: tco[p + 1] is row p's end; returns the
// entries (specialised by dimension and periodicity where it is inlined).
NBI_INLINE int32_t nbi_verlet_keep(const nbVerlet *v, int dim, bool wrap, int32_t *tco,
                                   int32_t *tnb, double *td2)
{
    const double r2 = v->radius * v->radius;
    const nbiKeepIn in = nbi_keep_in(v);
    int32_t m = 0;
    tco[0] = 0;
    for (int32_t p = 0; p < v->n; p++) {
        const double *cp = in.cur + (size_t)p * (size_t)dim;
        for (int32_t t = in.pco[p]; t < in.pco[p + 1]; t++) {
            const uint64_t k = in.pck[t];
            const double *cq = in.cur + (size_t)(uint32_t)k * (size_t)dim;
            const double e = wrap ? nbi_dist2_wrap(cp, cq, dim, v->kper) : nbi_dist2(cp, cq, dim);
            tnb[m] = (int32_t)(k >> 32);
            if (td2 != NULL) td2[m] = e;
            m += e <= r2;
        }
        tco[p + 1] = m;
    }
    return m;
}

#if defined(NBI_AVX512)
// nbi_verlet_keep eight candidates a step: their positions and indices from the keys, their
// coordinates gathered from cur, each distance computed as nbi_dist2 (nbi_dist2_wrap) does
// (the same operations in the same order, so the same answers), and the ones within radius
// compressed to the row's end.
NBI_TARGET_AVX512 static int32_t nbi_verlet_keep8(const nbVerlet *v, int dim, bool wrap,
                                                  int32_t *tco, int32_t *tnb, double *td2)
{
    const __m512d vr2 = _mm512_set1_pd(v->radius * v->radius);
    const __m512d per[3] = {_mm512_set1_pd(v->kper[0]), _mm512_set1_pd(v->kper[1]),
                            _mm512_set1_pd(v->kper[2])};
    const __m512i low = _mm512_set1_epi64(0xFFFFFFFF);
    const nbiKeepIn in = nbi_keep_in(v);
    const double *cur = in.cur;
    int32_t m = 0;
    tco[0] = 0;
    for (int32_t p = 0; p < v->n; p++) {
        const double *cp = cur + (size_t)p * (size_t)dim;
        const __m512d c[3] = {_mm512_set1_pd(cp[0]), _mm512_set1_pd(cp[1]),
                              _mm512_set1_pd(dim == 3 ? cp[2] : 0.0)};
        const int32_t t1 = in.pco[p + 1];
        for (int32_t t = in.pco[p]; t < t1; t += 8) {
            const __mmask8 k = (__mmask8)(t1 - t >= 8 ? 0xFF : (1u << (t1 - t)) - 1);
            const __m512i key = _mm512_maskz_loadu_epi64(k, in.pck + t);
            const __m512i q = _mm512_and_si512(key, low);
            const __m512d d2 = nbi_verlet_d2x8(cur, dim, wrap, c, per, q, k);
            const __mmask8 hit = _mm512_mask_cmp_pd_mask(k, d2, vr2, _CMP_LE_OQ);
            const __m256i ix = _mm512_cvtepi64_epi32(_mm512_srli_epi64(key, 32));
            _mm256_mask_compressstoreu_epi32(tnb + m, hit, ix);
            if (td2 != NULL) _mm512_mask_compressstoreu_pd(td2 + m, hit, d2);
            m += _mm_popcnt_u32(hit);
        }
        tco[p + 1] = m;
    }
    _mm256_zeroupper();
    return m;
}
#endif

// nbi_verlet_keep by the widest kernel the CPU has, specialised by dimension and periodicity.
static int32_t nbi_verlet_keep_any(const nbVerlet *v, int32_t *tco, int32_t *tnb, double *td2)
{
    const bool w = v->wrapped;
#if defined(NBI_AVX512)
    if (nbi_sort_wide()) {
        if (v->dim == 2)
            return w ? nbi_verlet_keep8(v, 2, true, tco, tnb, td2)
                     : nbi_verlet_keep8(v, 2, false, tco, tnb, td2);
        return w ? nbi_verlet_keep8(v, 3, true, tco, tnb, td2)
                 : nbi_verlet_keep8(v, 3, false, tco, tnb, td2);
    }
#endif
    if (v->dim == 2)
        return w ? nbi_verlet_keep(v, 2, true, tco, tnb, td2)
                 : nbi_verlet_keep(v, 2, false, tco, tnb, td2);
    return w ? nbi_verlet_keep(v, 3, true, tco, tnb, td2)
             : nbi_verlet_keep(v, 3, false, tco, tnb, td2);
}

// The rows: the candidates within radius of each other at the positions in cur. Filtered by
// position (a row's candidates lie near it in cell order, so their coordinates are in the
// caches), into rows by position (tco, tnb, td2); then each row copied to its place by index
// and sorted there.
static void nbi_verlet_filter(nbVerlet *v)
{
    const int32_t n = v->n;
    const int32_t *idx = v->grid->view.idx;
    int32_t *tco = (int32_t *)v->tco.ptr, *tnb = (int32_t *)v->tnb.ptr;
    int32_t *off = (int32_t *)v->offsets.ptr, *nb = (int32_t *)v->nb.ptr;
    double *td2 = v->distances ? (double *)v->td2.ptr : NULL;
    double *d2 = v->distances ? (double *)v->d2.ptr : NULL;
    const int32_t m = nbi_verlet_keep_any(v, tco, tnb, td2);
    off[0] = 0;
    for (int32_t p = 0; p < n; p++) off[idx[p] + 1] = tco[p + 1] - tco[p];
    for (int32_t i = 0; i < n; i++) off[i + 1] += off[i];
    for (int32_t p = 0; p < n && m > 0; p++) { // (no entries: the buffers may not exist yet)
        if (p + 32 < n) nbi_prefetch(off + idx[p + 32]); // as nbi_place_task: rows land anywhere
        if (p + 16 < n) {
            const int32_t ahead = off[idx[p + 16]];
            nbi_prefetch_w(nb + ahead);
            nbi_prefetch_w(nb + ahead + 15);
            if (d2 != NULL) {
                nbi_prefetch_w(d2 + ahead);
                nbi_prefetch_w(d2 + ahead + 15);
            }
        }
        const int32_t at = off[idx[p]], o = tco[p], len = tco[p + 1] - o;
        memcpy(nb + at, tnb + o, (size_t)len * sizeof(int32_t));
        if (d2 != NULL) memcpy(d2 + at, td2 + o, (size_t)len * sizeof(double));
    }
    v->rows = n;
    v->entries = m;
}

nbStatus nb_verlet_update(nbVerlet *verlet, const nbPoints *points, bool *rebuilt)
{
    if (rebuilt != NULL) *rebuilt = false;
    if (verlet == NULL || points == NULL || (points->data == NULL && points->count > 0))
        return NB_ERR_NULL_ARG;
    nbVerlet *v = verlet;
    const int32_t dim = v->dim;
    const size_t stride = points->stride == 0 ? (size_t)dim * sizeof(double) : points->stride;
    const bool layout_ok = points->count >= 0 && (points->dim == 0 || points->dim == dim) &&
                           stride >= (size_t)dim * sizeof(double) && stride % sizeof(double) == 0;
    const size_t step = stride / sizeof(double);
    const bool same = v->built && points->count == v->n;
    double max_d2 = 0.0;
    if (layout_ok) { // finiteness before any range, as nb_grid_build checks
        const nbStatus st = !same           ? nbi_verlet_check(v, points->data, step, points->count)
                            : v->candidates ? nbi_verlet_scan_any(v, points->data, step, &max_d2)
                            : v->cell_order
                                ? nbi_verlet_read(v, points->data, step, true, &max_d2)
                                : nbi_verlet_read(v, points->data, step, false, &max_d2);
        if (st != NB_OK) return st;
    }
    if (!layout_ok) return NB_ERR_OUT_OF_RANGE;
    if (!same || v->half < 0.0 || max_d2 > v->half * v->half) {
        const nbStatus st = nbi_verlet_rebuild(v, points);
        if (st != NB_OK) return st;
        if (rebuilt != NULL) *rebuilt = true;
        if (v->cell_order || v->candidates) return NB_OK; // the build's test is this update's
    }
    if (v->candidates) return NB_OK; // the rows are the candidates: nothing to do
    if (v->cell_order)
        nbi_verlet_step_cells(v, max_d2);
    else
        nbi_verlet_filter(v);
    return NB_OK;
}

nbStatus nb_verlet_rows(const nbVerlet *verlet, nbNeighborRows *rows)
{
    static const nbVerlet none = {0};
    const nbVerlet *v = verlet != NULL ? verlet : &none;
    if (v->candidates) {
        const nbStatus st = nb_neighbor_list_rows(v->cand, rows);
        if (st == NB_OK) rows->candidates = true;
        return st;
    }
    static const uint64_t no_bits = 0;
    const int32_t *order = !v->cell_order         ? NULL
                           : v->order.ptr != NULL ? (const int32_t *)v->order.ptr
                                                  : &nbi_zero_offset;
    const uint64_t *keep = !v->cell_order        ? NULL
                           : v->keep.ptr != NULL ? (const uint64_t *)v->keep.ptr
                                                 : &no_bits;
    return nbi_rows_view(verlet, rows, v->rows, v->entries, &v->offsets, &v->nb, &v->d2,
                         v->distances, order, order, keep);
}

size_t nb_verlet_memory_bytes(const nbVerlet *verlet)
{
    if (verlet == NULL) return 0;
    nbVerlet *v = (nbVerlet *)verlet; // the macros name the buffers; nothing is written
    const nbiBuf *i32[] = NBI_VERLET_I32(v), *b8[] = NBI_VERLET_B8(v);
    size_t bytes =
        sizeof(nbVerlet) + nb_grid_memory_bytes(v->grid) + nb_neighbor_list_memory_bytes(v->cand);
    for (size_t k = 0; k < sizeof i32 / sizeof i32[0]; k++) bytes += i32[k]->cap * sizeof(int32_t);
    for (size_t k = 0; k < sizeof b8 / sizeof b8[0]; k++) bytes += b8[k]->cap * sizeof(double);
    return bytes + v->band.cap;
}

nbStatus nb_verlet_row(const nbVerlet *verlet, const nbPoints *points, int32_t row,
                       int32_t *neighbors, double *dist2, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (verlet == NULL || points == NULL || neighbors == NULL || found == NULL ||
        (points->data == NULL && points->count > 0))
        return NB_ERR_NULL_ARG;
    nbNeighborRows rows;
    nb_verlet_rows(verlet, &rows);
    const nbVerlet *v = verlet;
    const int dim = v->dim;
    const size_t stride = points->stride == 0 ? (size_t)dim * sizeof(double) : points->stride;
    if (row < 0 || row >= rows.rows || capacity < 0 || points->count != rows.rows ||
        (points->dim != 0 && points->dim != dim) || stride < (size_t)dim * sizeof(double) ||
        stride % sizeof(double) != 0)
        return NB_ERR_OUT_OF_RANGE;
    const size_t step = stride / sizeof(double);
    const double r2 = v->radius * v->radius;
    const int32_t *map = rows.order; // NULL: by index
    const double *a = points->data + (size_t)(map != NULL ? map[row] : row) * step;
    int32_t m = 0;
    for (int32_t t = rows.offsets[row]; t < rows.offsets[row + 1]; t++) {
        const int32_t q = rows.neighbors[t];
        const double *b = points->data + (size_t)(map != NULL ? map[q] : q) * step;
        const double e = nbi_dist2_wrap(a, b, dim, v->kper);
        const bool in = rows.candidates     ? e <= r2
                        : rows.keep != NULL ? ((rows.keep[t >> 6] >> (t & 63)) & 1) != 0
                                            : true;
        if (!in) continue;
        if (m < capacity) {
            neighbors[m] = q;
            if (dist2 != NULL) dist2[m] = rows.dist2 != NULL ? rows.dist2[t] : e;
        }
        m++;
    }
    *found = m;
    return m > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}
