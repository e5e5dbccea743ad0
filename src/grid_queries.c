// SPDX-License-Identifier: MIT
// The grid's public queries: each checks its pointers and sets its outputs to safe values first
// (the library's check order: pointers, then finiteness, then ranges), then hands the grid's view
// to the shared walkers (pairs.c, query.c), which do the work.
#include "grid_count_bulk.h"
#include "grid_internal.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// Below this many points all pairs run serially even with a scheduler.
enum { NBI_PARALLEL_MIN_PAIRS = 4096 };

// ---- all pairs ----

// Finishes a buffer-mode pair call: the full count, and whether it fit.
static nbStatus nbi_pair_result(nbStatus st, const nbiPairSink *s, int64_t *found)
{
    if (st != NB_OK) return st;
    *found = s->found;
    return s->mode == NBI_SINK_BUFFER && s->found > s->cap ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

static nbStatus nbi_grid_pairs_range(const nbGrid *g, double radius, int32_t u0, int32_t u1,
                                     nbiPairSink *s)
{
    return nbi_walk_pairs(&g->view, radius, u0, u1, s);
}

// The buffer forms' start: *found zeroed, pointers, radius and capacity checked.
static nbStatus nbi_pairs_start(const nbGrid *grid, double radius, const void *out,
                                int64_t capacity, int64_t *found)
{
    if (found != NULL) *found = 0;
    if (grid == NULL || found == NULL || (out == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    return nbi_check_pairs(radius, capacity);
}

// The buffer forms on the grid's scheduler, when it has one and enough points: *done then says
// whether they ran there (the first `capacity` nbPairs in out, *found the total).
static nbStatus nbi_pairs_on_workers(const nbGrid *grid, double radius, nbPair *out,
                                     int64_t capacity, int64_t *found, bool *done)
{
    *done = false;
    if (!nbi_grid_parallel(grid) || grid->n < NBI_PARALLEL_MIN_PAIRS) return NB_OK;
    return nbi_grid_pairs_parallel(grid, radius, NBI_SINK_BUFFER, out, capacity, found, done);
}

nbStatus nb_grid_pairs(const nbGrid *grid, double radius, nbPair *out, int64_t capacity,
                       int64_t *found)
{
    nbStatus st = nbi_pairs_start(grid, radius, out, capacity, found);
    if (st != NB_OK) return st;
    bool done;
    st = nbi_pairs_on_workers(grid, radius, out, capacity, found, &done);
    if (st != NB_OK || done) return st == NB_OK && *found > capacity ? NB_ERR_BUFFER_TOO_SMALL : st;
    nbiPairSink s;
    nbi_pair_sink_init(&s, NBI_SINK_BUFFER, out, capacity, NULL, NULL);
    st = nbi_grid_pairs_range(grid, radius, 0, nb_grid_pair_units(grid), &s);
    return nbi_pair_result(st, &s, found);
}

// Wide pairs, serially: the kernels' blocks (in the sink's scratch, hot in the cache) widened
// into the caller's int64 rows while they have room; the count goes on past them.
typedef struct nbiWideOut {
    int64_t *out;
    int64_t cap, at;
} nbiWideOut;

// The first rows of an output (512 KiB) are written through the cache, where a small result
// is read again soon; the rest with streaming stores (see nbi_widen).
enum { NBI_WIDE_CACHED = 32768 };

// Widens m pairs from w into the rows at dst (indices are >= 0: zero-extended), two at a time
// with SSE2. dst must not overlap w. With `stream` (dst 16-byte aligned) the rows go to memory
// by streaming stores, without their cache lines first being read in: half the memory traffic
// of a large output, which is what the 64-bit rows cost beyond the 32-bit pairs.
NBI_INLINE void nbi_widen(int64_t *dst, const nbPair *w, int64_t m, bool stream)
{
    int64_t t = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    for (; t + 2 <= m; t += 2) {
        const __m128i two = _mm_loadu_si128((const __m128i *)(const void *)(w + t));
        const __m128i lo = _mm_unpacklo_epi32(two, zero), hi = _mm_unpackhi_epi32(two, zero);
        __m128i *row = (__m128i *)(void *)(dst + 2 * t);
        if (stream) {
            _mm_stream_si128(row, lo);
            _mm_stream_si128(row + 1, hi);
        } else {
            _mm_storeu_si128(row, lo);
            _mm_storeu_si128(row + 1, hi);
        }
    }
    if (stream && t < m) { // the odd last row streamed too: a plain store into a line being
                           // streamed costs the line's whole round trip
        const __m128i one = _mm_loadl_epi64((const __m128i *)(const void *)(w + t));
        _mm_stream_si128((__m128i *)(void *)(dst + 2 * t), _mm_unpacklo_epi32(one, zero));
        return;
    }
#else
    (void)stream;
#endif
    for (; t < m; t++) {
        dst[2 * t] = w[t].i;
        dst[2 * t + 1] = w[t].j;
    }
}

static void nbi_wide_block(const nbPair *w, int64_t m, void *user)
{
    nbiWideOut *o = (nbiWideOut *)user;
    const int64_t room = o->cap - o->at;
    const bool stream = o->at >= NBI_WIDE_CACHED && ((uintptr_t)o->out & 15u) == 0;
    nbi_widen(o->out + 2 * o->at, w, room < m ? (room > 0 ? room : 0) : m, stream);
    o->at += m;
}

// Widens the `m` nbPairs at the start of `out` into m int64 rows, in place, from the back: row k
// (bytes [16k, 16k + 16)) covers the pairs 2k and 2k + 1, which k running down has read already,
// except within the block being widened, which is copied out first.
static void nbi_widen_in_place(int64_t *out, int64_t m)
{
    for (int64_t k1 = m; k1 > 0;) {
        nbPair tmp[512];
        const int64_t k0 = k1 > 512 ? k1 - 512 : 0;
        memcpy(tmp, (const nbPair *)(void *)out + k0, (size_t)(k1 - k0) * sizeof(nbPair));
        nbi_widen(out + 2 * k0, tmp, k1 - k0, false);
        k1 = k0;
    }
}

nbStatus nb_grid_pairs_wide(const nbGrid *grid, double radius, int64_t *out, int64_t capacity,
                            int64_t *found)
{
    nbStatus st = nbi_pairs_start(grid, radius, out, capacity, found);
    if (st != NB_OK) return st;
    // On workers, nbPairs are written into the first half of the rows, then widened.
    bool done;
    st = nbi_pairs_on_workers(grid, radius, (nbPair *)(void *)out, capacity, found, &done);
    if (st != NB_OK) return st;
    if (done) {
        nbi_widen_in_place(out, *found < capacity ? *found : capacity);
        return *found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
    }
    nbiWideOut o = {out, capacity, 0};
    nbiPairSink s;
    nbi_pair_sink_block(&s, nbi_wide_block, &o);
    st = nbi_grid_pairs_range(grid, radius, 0, nb_grid_pair_units(grid), &s);
#if defined(__SSE2__)
    _mm_sfence(); // the streaming stores ordered before whatever the caller does next
#endif
    if (st != NB_OK) return st;
    *found = s.found;
    return s.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

nbStatus nb_grid_count_pairs(const nbGrid *grid, double radius, int64_t *count)
{
    if (count != NULL) *count = 0;
    if (grid == NULL || count == NULL) return NB_ERR_NULL_ARG;
    nbStatus st = nbi_check_pairs(radius, 0);
    if (st != NB_OK) return st;
    if (nbi_count_bulk(&grid->view, NULL, radius, &grid->alloc, count)) return NB_OK;
    if (nbi_grid_parallel(grid) && grid->n >= NBI_PARALLEL_MIN_PAIRS) {
        bool done;
        st = nbi_grid_pairs_parallel(grid, radius, NBI_SINK_COUNT, NULL, 0, count, &done);
        if (st != NB_OK || done) return st;
    }
    nbiPairSink s;
    nbi_pair_sink_init(&s, NBI_SINK_COUNT, NULL, 0, NULL, NULL);
    st = nbi_grid_pairs_range(grid, radius, 0, nb_grid_pair_units(grid), &s);
    return nbi_pair_result(st, &s, count);
}

int32_t nb_grid_pair_units(const nbGrid *grid)
{
    return grid == NULL || grid->n == 0 ? 0 : grid->ncells;
}

nbStatus nb_grid_visit_pairs_range(const nbGrid *grid, double radius, int32_t unit_begin,
                                   int32_t unit_end, nbPairFn *visit, void *user)
{
    if (grid == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbStatus st = nbi_check_pairs(radius, 0);
    if (st != NB_OK) return st;
    const int32_t units = nb_grid_pair_units(grid);
    if (unit_begin < 0 || unit_end < unit_begin || unit_end > units) return NB_ERR_OUT_OF_RANGE;
    nbiPairSink s;
    nbi_pair_sink_init(&s, NBI_SINK_VISIT, NULL, 0, visit, user);
    return nbi_grid_pairs_range(grid, radius, unit_begin, unit_end, &s);
}

nbStatus nb_grid_visit_pairs(const nbGrid *grid, double radius, nbPairFn *visit, void *user)
{
    if (grid == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    return nb_grid_visit_pairs_range(grid, radius, 0, nb_grid_pair_units(grid), visit, user);
}

// ---- cross pairs ----

static nbStatus nbi_grid_cross(const nbGrid *a, const nbGrid *b, double radius, int64_t capacity,
                               nbiPairSink *s)
{
    nbStatus st = nbi_check_pairs(radius, capacity);
    if (st != NB_OK) return st;
    if (a->dim != b->dim) return NB_ERR_OUT_OF_RANGE;
    const nbiView *va = &a->view, *vb = &b->view;
    return nbi_walk_cross(va, vb, radius, s);
}

nbStatus nb_grid_cross_pairs(const nbGrid *a, const nbGrid *b, double radius, nbPair *out,
                             int64_t capacity, int64_t *found)
{
    if (found != NULL) *found = 0;
    if (a == NULL || b == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    nbiPairSink s;
    nbi_pair_sink_init(&s, NBI_SINK_BUFFER, out, capacity, NULL, NULL);
    return nbi_pair_result(nbi_grid_cross(a, b, radius, capacity, &s), &s, found);
}

nbStatus nb_grid_count_cross_pairs(const nbGrid *a, const nbGrid *b, double radius, int64_t *count)
{
    if (count != NULL) *count = 0;
    if (a == NULL || b == NULL || count == NULL) return NB_ERR_NULL_ARG;
    if (nbi_check_pairs(radius, 0) == NB_OK && a->dim == b->dim &&
        nbi_count_bulk(&a->view, &b->view, radius, &a->alloc, count))
        return NB_OK;
    nbiPairSink s;
    nbi_pair_sink_init(&s, NBI_SINK_COUNT, NULL, 0, NULL, NULL);
    return nbi_pair_result(nbi_grid_cross(a, b, radius, 0, &s), &s, count);
}

nbStatus nb_grid_visit_cross_pairs(const nbGrid *a, const nbGrid *b, double radius, nbPairFn *visit,
                                   void *user)
{
    if (a == NULL || b == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiPairSink s;
    nbi_pair_sink_init(&s, NBI_SINK_VISIT, NULL, 0, visit, user);
    return nbi_grid_cross(a, b, radius, 0, &s);
}

// ---- radius and box ----

nbStatus nb_grid_query_radius(const nbGrid *grid, const double *center, double radius,
                              nbFilter filter, int32_t *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (grid == NULL || center == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    nbiHitSink s;
    nbi_hit_sink_init(&s, NBI_SINK_BUFFER, out, capacity, NULL, NULL);
    const nbStatus st = nbi_walk_radius_indexed(&grid->view, nbi_grid_knn_lazy(grid), &grid->alloc,
                                                center, radius, filter, &s);
    if (st != NB_OK) return st;
    *found = s.found;
    return s.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

nbStatus nb_grid_visit_radius(const nbGrid *grid, const double *center, double radius,
                              nbFilter filter, nbVisitFn *visit, void *user)
{
    if (grid == NULL || center == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiHitSink s;
    nbi_hit_sink_init(&s, NBI_SINK_VISIT, NULL, 0, visit, user);
    return nbi_walk_radius_indexed(&grid->view, nbi_grid_knn_lazy(grid), &grid->alloc, center,
                                   radius, filter, &s);
}

nbStatus nb_grid_query_box(const nbGrid *grid, const nbBox *box, nbFilter filter, int32_t *out,
                           int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (grid == NULL || box == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    nbiHitSink s;
    nbi_hit_sink_init(&s, NBI_SINK_BUFFER, out, capacity, NULL, NULL);
    const nbStatus st = nbi_walk_box(&grid->view, box->min, box->max, filter, &s);
    if (st != NB_OK) return st;
    *found = s.found;
    return s.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

nbStatus nb_grid_visit_box(const nbGrid *grid, const nbBox *box, nbFilter filter, nbVisitFn *visit,
                           void *user)
{
    if (grid == NULL || box == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiHitSink s;
    nbi_hit_sink_init(&s, NBI_SINK_VISIT, NULL, 0, visit, user);
    return nbi_walk_box(&grid->view, box->min, box->max, filter, &s);
}

// ---- k nearest ----

nbStatus nb_grid_knn(const nbGrid *grid, const double *point, nbFilter filter, double max_distance,
                     nbNeighbor *out, int32_t k, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (grid == NULL || point == NULL || found == NULL || (out == NULL && k > 0))
        return NB_ERR_NULL_ARG;
    return nbi_walk_knn_indexed(&grid->view, nbi_grid_knn_lazy(grid), &grid->alloc, point, filter,
                                max_distance, out, k, found);
}

nbStatus nb_grid_visit_knn(const nbGrid *grid, const double *point, nbFilter filter,
                           double max_distance, int32_t k, nbNeighborFn *visit, void *user)
{
    if (grid == NULL || point == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    return nbi_visit_knn_indexed(&grid->view, nbi_grid_knn_lazy(grid), point, filter, max_distance,
                                 k, &grid->alloc, visit, user);
}
