// SPDX-License-Identifier: MIT
// Fuzz target for the dense grid (include/nearby/grid.h).
//
// The input is a little program. A header decodes an nbGridDesc (dim 0/2/3/invalid, cell_size
// from raw bits, capacity_hint) and an allocation-failure schedule; then each following byte
// picks an operation (build, reserve, pairs, pair ranges, radius, box, kNN, info, NULL
// arguments, recreate) that decodes its own arguments from the bytes after it. Reading past
// the end yields zeros, so every input is valid. Builds may carry categories/masks in several
// layouts (nbf_read_bits); radius/box/kNN ops with bit 7 set use the _filtered forms; the info
// op's high nibble runs operations on a second grid B (nbf_op_second): cross pairs between
// the two grids (or one grid twice), B's own builds and queries.
//
// Every call is checked against the contract in grid.h and docs/errors.md:
//   - the status is one the contract allows for these arguments (pointers, then finiteness,
//     then range); outputs are zeroed on argument errors;
//   - nb_grid_validate() returns NB_OK after every operation;
//   - every successful result equals a brute-force oracle over the points (and categories and
//     masks) of the last successful build of each grid (the fuzzer keeps its own copy; a
//     failed build changes nothing);
//   - truncated buffers hold the prefix of the full result, visitors see the same order and
//     stop when told, pair ranges over a partition give every pair once;
//   - queries never allocate; builds allocate only as grid.h allows (see nbf_op_build); every free
//     matches an alloc (pointer and size) and nothing is left when the grid is destroyed.
// A violation prints one line to stderr and calls abort(). Set NB_FUZZ_TRACE=1 to print the
// decoded call sequence while replaying an input. NB_FUZZ_SKIP tags (see nbf_skip): build-alloc
// (no allocation checks on builds at all), knn-huge (no kNN oracle when a coordinate exceeds
// 2^1000). NB_FUZZ_BLOCKED=1 makes every dense build of packed points take the two-pass
// "large builds" path of grid.c, whatever its size (make test replays the corpus both
// ways). The reader, the checking allocator and the failure helpers are in nb_fuzz.h; the
// oracle is tests/nb_oracle.h.

#define _POSIX_C_SOURCE 200809L

#include <nearby/grid.h>
#include <nearby/neighbors.h>

#include "grid_internal.h"
#include "nb_fuzz.h"
#include "nb_oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    NBF_SMALL_POINTS = 64, ///< points of an ordinary build
    NBF_MAX_POINTS = 575,  ///< points of a crowd build (65 + 2 * 255)
    NBF_MAX_PAIRS = NBF_MAX_POINTS * (NBF_MAX_POINTS - 1) / 2,
    NBF_MAX_OPS = 64,
    NBF_MAX_CUTS = 8,
};

// ---- a second, simpler allocator for grid B ----

/// Grid B (the second grid of an input) never uses nbf_heap, whose books belong to grid A; it
/// gets either malloc/free or this counting allocator.
typedef struct nbfCountHeap {
    size_t live_bytes;
    size_t live_blocks;
    uint64_t calls;
} nbfCountHeap;

static nbfCountHeap nbf_bheap;

static void *nbf_b_alloc(size_t size, size_t align, void *user)
{
    nbfCountHeap *h = user;
    NBF_CHECK(h == &nbf_bheap, "grid B alloc hook got user %p", user);
    NBF_CHECK(align != 0 && (align & (align - 1)) == 0 && align <= 64,
              "grid B alloc hook got alignment %zu", align);
    void *p = NULL;
    if (size > NBF_ALLOC_LIMIT ||
        posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1) != 0)
        return NULL;
    memset(p, 0xA5, size);
    h->calls++;
    h->live_bytes += size;
    h->live_blocks++;
    return p;
}

static void nbf_b_free(void *ptr, size_t size, void *user)
{
    nbfCountHeap *h = user;
    NBF_CHECK(h == &nbf_bheap, "grid B free hook got user %p", user);
    NBF_CHECK(ptr != NULL && h->live_blocks > 0 && h->live_bytes >= size,
              "grid B free hook: %p (%zu bytes) with %zu blocks, %zu bytes live", ptr, size,
              h->live_blocks, h->live_bytes);
    h->calls++;
    h->live_bytes -= size;
    h->live_blocks--;
    free(ptr);
}

// ---- state: the grid and the oracle's copy of its points ----

typedef struct nbfState {
    nbGrid *grid;
    nbAllocator allocator;
    bool custom;              ///< the grid uses nbf_alloc/nbf_free (else malloc/free or nbf_bheap)
    bool second;              ///< grid B: never the checking allocator
    nbfCountHeap *count_heap; ///< grid B's counting allocator, or NULL
    int32_t dim;              ///< the grid's dimension
    double desc_cell;         ///< the accepted desc.cell_size (0: taken from the build radius)
    int64_t reserved;         ///< the largest successful reserve or capacity hint
    int32_t max_built;        ///< the most points of any successful build
    int64_t max_dense;        ///< the most cells of any successful dense build
    bool had_hashed;          ///< a successful build had the hashed layout's table
    bool had_ranked;          ///< a successful build had the ranked layout
    int32_t n;                ///< points of the last successful build
    double pts[NBF_MAX_POINTS][3];
    double build_radius; ///< radius of the last successful build
    bool built;          ///< a build has succeeded
    nbGridInfo info;     ///< nb_grid_info() after the last state change
    bool has_cat;        ///< the last successful build passed categories
    bool has_mask;       ///< ... and masks
    bool had_bits;       ///< some successful build passed categories or masks
    uint8_t space;       ///< the bit space of the last build with bits (see nbf_bits_value)
    uint32_t cat[NBF_MAX_POINTS];
    uint32_t mask[NBF_MAX_POINTS];
} nbfState;

static void nbf_no_alloc(const nbfState *s, nbfMark m, const char *what)
{
    if (!s->custom) return;
    nbf_check_no_alloc(m, what);
}

static void nbf_validate(const nbfState *s, const char *after)
{
    nbfMark m = nbf_mark();
    nbStatus st = nb_grid_validate(s->grid);
    NBF_CHECK(st == NB_OK, "nb_grid_validate after %s returned %s", after, nb_status_str(st));
    nbf_no_alloc(s, m, "nb_grid_validate");
}

// ---- the oracle ----

static bool nbf_same_point(const double *a, const double *b, int32_t dim)
{
    for (int32_t d = 0; d < dim; d++)
        if (!(a[d] == b[d])) return false;
    return true;
}

/// A radius, centre or box argument: the status it must produce (ignoring capacity).
static unsigned nbf_radius_status(double radius)
{
    if (!isfinite(radius)) return NBF_BIT(NB_ERR_NOT_FINITE);
    if (radius < 0.0) return NBF_BIT(NB_ERR_OUT_OF_RANGE);
    return NBF_BIT(NB_OK);
}

static bool nbf_finite_vec(const double *v, int32_t dim)
{
    for (int32_t d = 0; d < dim; d++)
        if (!isfinite(v[d])) return false;
    return true;
}

/// The oracle's view of the points of the last successful build.
static nboSet nbf_oracle_set(nbfState *s)
{
    nboSet set = {.p = &s->pts[0][0],
                  .n = s->n,
                  .dim = s->dim,
                  .stride = 3,
                  .cat = s->has_cat ? s->cat : NULL,
                  .mask = s->has_mask ? s->mask : NULL};
    return set;
}

/// Marks match[i][j] (i < j) for every pair the oracle finds within radius; returns the count.
static int64_t nbf_oracle_pairs(nbfState *s, double radius, uint8_t match[][NBF_MAX_POINTS])
{
    nboSet set = nbf_oracle_set(s);
    int64_t count = 0;
    nbPair *want = nbo_pairs(&set, radius, &count);
    for (int32_t i = 0; i < s->n; i++) memset(match[i], 0, (size_t)s->n);
    for (int64_t k = 0; k < count; k++) match[want[k].i][want[k].j] = 1;
    free(want);
    return count;
}

/// Checks that `got` holds exactly the oracle's pairs, each once, i < j. Fills pos[i][j] with
/// the position of each pair (for order checks).
static void nbf_check_pair_set(const nbfState *s, const nbPair *got, int64_t n,
                               uint8_t match[][NBF_MAX_POINTS], int64_t expected, double radius,
                               int32_t pos[][NBF_MAX_POINTS], const char *what)
{
    NBF_CHECK(n == expected, "%s: %lld pairs at radius %a (%.17g), oracle has %lld", what,
              (long long)n, radius, radius, (long long)expected);
    static uint8_t seen[NBF_MAX_POINTS][NBF_MAX_POINTS];
    for (int32_t i = 0; i < s->n; i++) memset(seen[i], 0, (size_t)s->n);
    for (int64_t k = 0; k < n; k++) {
        int32_t i = got[k].i;
        int32_t j = got[k].j;
        NBF_CHECK(i >= 0 && i < j && j < s->n, "%s: pair #%lld is (%d, %d) with %d points", what,
                  (long long)k, i, j, s->n);
        NBF_CHECK(!seen[i][j], "%s: pair (%d, %d) reported twice", what, i, j);
        seen[i][j] = 1;
        NBF_CHECK(match[i][j], "%s: pair (%d, %d) reported at radius %a but d2 = %a > r*r = %a",
                  what, i, j, radius, nbo_d2(s->pts[i], s->pts[j], s->dim), radius * radius);
        if (pos) pos[i][j] = (int32_t)k;
    }
}

static void nbf_check_same_pairs(const nbPair *a, const nbPair *b, int64_t n, const char *what)
{
    for (int64_t k = 0; k < n; k++)
        NBF_CHECK(a[k].i == b[k].i && a[k].j == b[k].j,
                  "%s: pair #%lld is (%d, %d), the full list has (%d, %d) there", what,
                  (long long)k, b[k].i, b[k].j, a[k].i, a[k].j);
}

/// Checks that `got` holds exactly the indices `match` marks, each once; points with identical
/// coordinates share a cell, so they must come out in ascending index order.
static void nbf_check_index_set(const nbfState *s, const int32_t *got, int64_t n,
                                const uint8_t *match, int64_t expected, const char *what)
{
    NBF_CHECK(n == expected, "%s: %lld points, oracle has %lld", what, (long long)n,
              (long long)expected);
    uint8_t seen[NBF_MAX_POINTS] = {0};
    for (int64_t k = 0; k < n; k++) {
        int32_t i = got[k];
        NBF_CHECK(i >= 0 && i < s->n, "%s: index %d with %d points", what, i, s->n);
        NBF_CHECK(!seen[i], "%s: index %d reported twice", what, i);
        NBF_CHECK(match[i], "%s: index %d reported but the oracle rejects it", what, i);
        seen[i] = 1;
        for (int64_t e = 0; e < k; e++)
            NBF_CHECK(!(got[e] > i && nbf_same_point(s->pts[got[e]], s->pts[i], s->dim)),
                      "%s: identical points %d and %d out of index order", what, got[e], i);
    }
}

static void nbf_check_same_indices(const int32_t *a, const int32_t *b, int64_t n, const char *what)
{
    for (int64_t k = 0; k < n; k++)
        NBF_CHECK(a[k] == b[k], "%s: result #%lld is %d, the full list has %d there", what,
                  (long long)k, b[k], a[k]);
}

// ---- visitors ----

typedef struct nbfPairSink {
    nbPair got[NBF_MAX_PAIRS + 1];
    int64_t n;
    int64_t stop_after; ///< return false on this call (1-based)
    int32_t points;
    bool overflow;
} nbfPairSink;

static bool nbf_pair_visit(int32_t i, int32_t j, void *user)
{
    nbfPairSink *k = user;
    NBF_CHECK(i >= 0 && i < j && j < k->points, "pair visitor got (%d, %d) with %d points", i, j,
              k->points);
    if (k->n >= NBF_MAX_PAIRS) {
        k->overflow = true; // more pairs than can exist: caught by the count check
        return false;
    }
    k->got[k->n++] = (nbPair){i, j};
    return k->n < k->stop_after;
}

typedef struct nbfIndexSink {
    int32_t got[NBF_MAX_POINTS + 1];
    int64_t n;
    int64_t stop_after;
    int32_t points;
} nbfIndexSink;

static bool nbf_index_visit(int32_t index, void *user)
{
    nbfIndexSink *k = user;
    NBF_CHECK(index >= 0 && index < k->points, "visitor got index %d with %d points", index,
              k->points);
    NBF_CHECK(k->n < k->points, "visitor called more than %d times", k->points);
    k->got[k->n++] = index;
    return k->n < k->stop_after;
}

static bool nbf_never_visit(int32_t index, void *user)
{
    (void)user;
    NBF_FAIL("visitor called (index %d) on a call that had to fail", index);
}

static bool nbf_never_visit_nn(int32_t index, double dist2, void *user)
{
    (void)user;
    NBF_FAIL("neighbour visitor called (index %d, %g) on a call that had to fail", index, dist2);
}

static bool nbf_never_visit_pair(int32_t i, int32_t j, void *user)
{
    (void)user;
    NBF_FAIL("pair visitor called (%d, %d) on a call that had to fail", i, j);
}

// ---- decoding arguments ----

static const double nbf_units[8] = {0.5, 1.0, 0.25, 0.1, 3.0, 1e-3, 0x1p-20, 1e5};
static const double nbf_bases[8] = {0.0, 0.0, 1e6, -1e9 + 0.5, 0x1p40, 1e15, -0x1p52, 1e-300};

/// A radius: mostly small half-integers and square roots of integers (so that many pairs are
/// exactly r apart on the half-integer lattice), plus the build radius, its neighbours, edge
/// values and raw bits.
static double nbf_read_radius(nbfReader *r, const nbfState *s)
{
    uint8_t m = nbf_u8(r);
    switch (m & 7) {
    case 0:
    case 1:
    case 2: return (double)(m >> 3) * 0.5;
    case 3: return sqrt((double)(m >> 3));
    case 4: return nbf_special(nbf_u8(r));
    case 5: return nbf_raw(r);
    case 6: return s->build_radius;
    default: {
        double base = (m & 8) ? s->build_radius : (double)(m >> 4);
        return nextafter(base, (m & 16) ? (double)INFINITY : 0.0);
    }
    }
}

/// One coordinate for axis d of point i of the build being decoded.
static double nbf_read_coord(nbfReader *r, double pts[][3], int32_t i, int32_t d, double base,
                             double unit)
{
    uint8_t m = nbf_u8(r);
    switch (m & 7) {
    case 0:
    case 1:
    case 2:
    case 3: return base + (double)((int)(m >> 3) - 16) * unit;
    case 4: {
        if (i == 0) return base;
        uint8_t b = nbf_u8(r);
        return pts[(m >> 3) % i][d] + (double)((int)(b % 9) - 4) * unit;
    }
    case 5: return nbf_special(nbf_u8(r));
    case 6: return nbf_raw(r);
    default: return (double)(int8_t)nbf_u8(r) * unit;
    }
}

/// A query point: near a data point, on the lattice, an edge value or raw bits.
static void nbf_read_center(nbfReader *r, const nbfState *s, double *c)
{
    uint8_t m = nbf_u8(r);
    int32_t from = s->n > 0 ? (int32_t)(nbf_u8(r) % (uint8_t)s->n) : -1;
    for (int32_t d = 0; d < s->dim; d++) {
        switch ((m >> (2 * d)) & 3) {
        case 0: c[d] = from >= 0 ? s->pts[from][d] : 0.0; break;
        case 1: {
            uint8_t b = nbf_u8(r);
            double at = from >= 0 ? s->pts[from][d] : 0.0;
            c[d] = at + (double)((int)(b & 31) - 16) * 0.5;
            break;
        }
        case 2: c[d] = nbf_special(nbf_u8(r)); break;
        default: c[d] = (m & 0x40) ? nbf_raw(r) : (double)(int8_t)nbf_u8(r) * 0.5; break;
        }
    }
}

/// A box bound: a data point's coordinate (exact boundaries), lattice, infinities or edges.
static double nbf_read_bound(nbfReader *r, const nbfState *s, int32_t d)
{
    uint8_t m = nbf_u8(r);
    switch (m & 7) {
    case 0:
    case 1: return s->n > 0 ? s->pts[(m >> 3) % s->n][d] : 0.0;
    case 2:
    case 3: return (double)((int)(m >> 3) - 16) * 0.5;
    case 4: return (m & 8) ? (double)INFINITY : -(double)INFINITY;
    case 5: return nbf_special(nbf_u8(r));
    case 6: return nbf_raw(r);
    default: return s->n > 0 ? nextafter(s->pts[(m >> 3) % s->n][d], 0.0) : 0.0;
    }
}

// ---- grid state checks ----

static void nbf_info(nbfState *s, nbGridInfo *info)
{
    nbfMark m = nbf_mark();
    memset(info, 0xCD, sizeof *info);
    nbStatus st = nb_grid_info(s->grid, info);
    nbf_expect(st, NBF_BIT(NB_OK), "nb_grid_info");
    nbf_no_alloc(s, m, "nb_grid_info");
    NBF_CHECK(info->dim == s->dim, "info.dim = %d, the grid is %dD", info->dim, s->dim);
    NBF_CHECK(info->points == s->n, "info.points = %d, the last successful build had %d",
              info->points, s->n);
    NBF_CHECK(nb_grid_count(s->grid) == s->n, "nb_grid_count = %d, the last build had %d",
              nb_grid_count(s->grid), s->n);
    NBF_CHECK(info->cells >= 0, "info.cells = %lld", (long long)info->cells);
    if (info->hashed)
        NBF_CHECK(info->cells <= s->n, "hashed grid reports %lld occupied cells for %d points",
                  (long long)info->cells, s->n);
    else
        NBF_CHECK(info->cells <= 8 * (int64_t)s->n + 64,
                  "dense grid holds %lld cells for %d points: storage must stay O(points)",
                  (long long)info->cells, s->n);
    size_t bytes = nb_grid_memory_bytes(s->grid);
    NBF_CHECK(info->bytes == bytes, "info.bytes = %zu but nb_grid_memory_bytes = %zu", info->bytes,
              bytes);
    if (s->count_heap != NULL)
        NBF_CHECK(bytes == s->count_heap->live_bytes,
                  "grid B: nb_grid_memory_bytes = %zu but it holds %zu bytes from its allocator",
                  bytes, s->count_heap->live_bytes);
    if (s->custom)
        NBF_CHECK(bytes == nbf_heap.live_bytes,
                  "nb_grid_memory_bytes = %zu but the grid holds %zu bytes from its allocator",
                  bytes, nbf_heap.live_bytes);
    NBF_CHECK(isfinite(info->cell_size) && info->cell_size >= 0.0, "info.cell_size = %a",
              info->cell_size);
    // A desc cell is used as given, or nudged up by 2^-30 of itself when that saves a ring at
    // the build radius (grid.h).
    if (s->built && s->desc_cell > 0.0)
        NBF_CHECK(info->cell_size == s->desc_cell ||
                      info->cell_size == s->desc_cell * (1.0 + 0x1p-30),
                  "info.cell_size = %a, the desc asked for %a", info->cell_size, s->desc_cell);
    // A cell taken from the radius is at least the radius (so a query at that radius needs
    // only the 3^d neighbouring cells); how much it is widened is the library's business.
    if (s->built && s->desc_cell == 0.0)
        NBF_CHECK(info->cell_size >= s->build_radius && info->cell_size > 0.0,
                  "info.cell_size = %a for build radius %a: the cell must be at least the radius",
                  info->cell_size, s->build_radius);
}

static void nbf_check_unchanged(nbfState *s, const char *what)
{
    nbGridInfo now;
    nbf_info(s, &now);
    NBF_CHECK(now.points == s->info.points && now.cells == s->info.cells &&
                  now.hashed == s->info.hashed && now.ranked == s->info.ranked &&
                  now.cell_size == s->info.cell_size,
              "%s failed but changed the grid: points %d->%d cells %lld->%lld hashed %d->%d "
              "cell %a->%a",
              what, s->info.points, now.points, (long long)s->info.cells, (long long)now.cells,
              s->info.hashed, now.hashed, s->info.cell_size, now.cell_size);
}

// ---- operations ----

/// Cell numbers: is floor(x / cell) surely within +-2^62 (ok), surely beyond (overflow), or
/// too close to tell given the few-ulp widening of a cell taken from the radius?
typedef struct nbfCellRisk {
    bool overflow;
    bool maybe;
} nbfCellRisk;

static void nbf_cell_risk(double x, double cell_lo, double cell_hi, nbfCellRisk *risk)
{
    if (cell_lo <= 0.0) { // cell from a zero radius: the library picks its own edge
        if (x != 0.0) risk->maybe = true;
        return;
    }
    double lo = fabs(x) / cell_hi;
    double hi = fabs(x) / cell_lo;
    if (lo > 0x1p62 * (1.0 + 1e-6))
        risk->overflow = true;
    else if (hi >= 0x1p62 * (1.0 - 1e-6))
        risk->maybe = true;
}

/// A category or mask value from one nibble, in one of 8 small bit spaces, so that matches,
/// misses and 0 (which matches nothing) are all common.
static uint32_t nbf_bits_value(uint8_t space, uint8_t nib)
{
    nib &= 15;
    switch (space & 7) {
    case 0: return nib & 3u;
    case 1: return nib & 1u;
    case 2: return nib & 7u;
    case 3: return 1u << (nib & 3);
    case 4: return nib;
    case 5: return (nib & 7) ? 0xFFFFFFFFu : 0u;
    case 6:
        return ((nib & 1) ? 0x80000000u : 0u) | ((nib & 2) ? 1u : 0u) | ((nib & 4) ? 0x10000u : 0u);
    default: return nib * 0x11111111u;
    }
}

/// The categories and masks of one build, and the arrays handed to the library.
typedef struct nbfBits {
    bool on;  ///< the build passes a category and/or a mask array
    bool bad; ///< a stride that is not a multiple of 4 or a misaligned array
    uint8_t space;
    int mode;
    const uint32_t *cat;
    size_t cat_stride;
    const uint32_t *mask;
    size_t mask_stride;
    uint32_t cv[NBF_MAX_POINTS];
    uint32_t mv[NBF_MAX_POINTS];
    unsigned char *own[2]; ///< blocks to free after the build
} nbfBits;

/// One bits array in its own exact-size block (garbage between the entries): n values at
/// byte offset `skew` + i * stride, written bytewise (the stride may be odd).
static const uint32_t *nbf_bits_array(nbfBits *b, int slot, const uint32_t *v, int32_t n,
                                      size_t stride, size_t skew)
{
    size_t bytes = skew + (n > 0 ? (size_t)(n - 1) * stride + sizeof(uint32_t) : 1);
    unsigned char *blk = malloc(bytes);
    if (blk == NULL) abort();
    memset(blk, 0xA5, bytes);
    for (int32_t i = 0; i < n; i++) memcpy(blk + skew + (size_t)i * stride, &v[i], sizeof v[i]);
    b->own[slot] = blk;
    return (const uint32_t *)(const void *)(blk + skew);
}

/// Decodes the categories/masks of a build. On when bits 6-7 of the view byte are set (and do
/// not pick a bad dim); then one byte: bits 0-1 which arrays (both, category only, mask only,
/// both), bits 2-4 the layout (packed with stride 0 / 4, interleaved {cat, mask} pairs, wide
/// strides, inside the point records next to the coordinates, a stride that is not a multiple
/// of 4, a misaligned pointer, 256-byte records), bits 5-7 the bit space; then one byte per
/// point (category nibble, mask nibble; a crowd repeats the first 64).
static void nbf_read_bits(nbfReader *r, uint8_t view, int32_t n, int32_t dec_dim, size_t stride,
                          size_t layout, unsigned char *pbuf, nbfBits *b)
{
    b->on = false;
    b->bad = false;
    b->cat = b->mask = NULL;
    b->cat_stride = b->mask_stride = 0;
    b->own[0] = b->own[1] = NULL;
    if ((view & 7) == 6 || (view >> 6) == 0) return;
    uint8_t fb = nbf_u8(r);
    b->on = true;
    b->space = (uint8_t)(fb >> 5);
    b->mode = (fb >> 2) & 7;
    bool want_cat = (fb & 3) != 2;
    bool want_mask = (fb & 3) != 1;
    for (int32_t i = 0; i < n; i++) {
        if (i < NBF_SMALL_POINTS) {
            uint8_t v = nbf_u8(r);
            b->cv[i] = nbf_bits_value(b->space, v & 15);
            b->mv[i] = nbf_bits_value(b->space, (uint8_t)(v >> 4));
        } else {
            b->cv[i] = b->cv[i % NBF_SMALL_POINTS];
            b->mv[i] = b->mv[i % NBF_SMALL_POINTS];
        }
    }
    size_t rec = (size_t)dec_dim * sizeof(double);
    int mode = b->mode;
    if (mode == 4 && !(stride != 0 && layout >= rec + 8 && layout % 4 == 0)) mode = 2;
    switch (mode) {
    case 0:
    case 1: {
        size_t given = mode == 0 ? 0 : sizeof(uint32_t);
        if (want_cat) b->cat = nbf_bits_array(b, 0, b->cv, n, 4, 0), b->cat_stride = given;
        if (want_mask) b->mask = nbf_bits_array(b, 1, b->mv, n, 4, 0), b->mask_stride = given;
        break;
    }
    case 2: { // array of {category, mask} structs
        size_t bytes = (size_t)(n > 0 ? n : 1) * 8;
        unsigned char *blk = malloc(bytes);
        if (blk == NULL) abort();
        memset(blk, 0xA5, bytes);
        for (int32_t i = 0; i < n; i++) {
            memcpy(blk + (size_t)i * 8, &b->cv[i], 4);
            memcpy(blk + (size_t)i * 8 + 4, &b->mv[i], 4);
        }
        b->own[0] = blk;
        if (want_cat) b->cat = (const uint32_t *)(const void *)blk, b->cat_stride = 8;
        if (want_mask) b->mask = (const uint32_t *)(const void *)(blk + 4), b->mask_stride = 8;
        break;
    }
    case 3:
        if (want_cat) b->cat = nbf_bits_array(b, 0, b->cv, n, 12, 0), b->cat_stride = 12;
        if (want_mask) b->mask = nbf_bits_array(b, 1, b->mv, n, 20, 0), b->mask_stride = 20;
        break;
    case 4: // inside the point records, right after the coordinates
        for (int32_t i = 0; i < n; i++) {
            memcpy(pbuf + (size_t)i * layout + rec, &b->cv[i], 4);
            memcpy(pbuf + (size_t)i * layout + rec + 4, &b->mv[i], 4);
        }
        if (want_cat) b->cat = (const uint32_t *)(const void *)(pbuf + rec), b->cat_stride = layout;
        if (want_mask)
            b->mask = (const uint32_t *)(const void *)(pbuf + rec + 4), b->mask_stride = layout;
        break;
    case 5: // not a multiple of 4
        b->bad = true;
        if (want_cat) b->cat = nbf_bits_array(b, 0, b->cv, n, 6, 0), b->cat_stride = 6;
        if (want_mask) b->mask = nbf_bits_array(b, 1, b->mv, n, 10, 0), b->mask_stride = 10;
        break;
    case 6: // misaligned
        b->bad = true;
        if (want_cat) b->cat = nbf_bits_array(b, 0, b->cv, n, 4, 2), b->cat_stride = 4;
        if (want_mask) b->mask = nbf_bits_array(b, 1, b->mv, n, 4, 1), b->mask_stride = 0;
        break;
    default:
        if (want_cat) b->cat = nbf_bits_array(b, 0, b->cv, n, 256, 0), b->cat_stride = 256;
        if (want_mask) b->mask = nbf_bits_array(b, 1, b->mv, n, 4, 0), b->mask_stride = 0;
        break;
    }
}

static void nbf_op_build(nbfReader *r, nbfState *s)
{
    nbf_op = "build";
    uint8_t count_byte = nbf_u8(r);
    uint8_t view = nbf_u8(r);
    uint8_t look = nbf_u8(r);
    double radius = nbf_read_radius(r, s);
    int32_t count = (int32_t)(count_byte % (NBF_SMALL_POINTS + 1));
    // A crowd (look bits 6-7 == 10): a few decoded points, each copied many times with lattice
    // jitter, so one cell neighbourhood holds hundreds of candidates (the kernels' long paths).
    bool crowd = (look & 0xC0) == 0x80;
    if (crowd) count = NBF_SMALL_POINTS + 1 + 2 * (int32_t)count_byte;
    int32_t gdim = s->dim;

    int32_t vdim = 0;
    switch (view & 7) {
    case 4: vdim = gdim; break;
    case 5: vdim = 5 - gdim; break;
    case 6: {
        static const int32_t bad[4] = {1, 4, -1, INT32_MAX};
        vdim = bad[(view >> 6) & 3];
        break;
    }
    default: vdim = 0; break;
    }
    int32_t dec_dim = (vdim == 2 || vdim == 3) ? vdim : gdim; // doubles decoded per point
    size_t stride = 0;
    switch ((view >> 3) & 7) {
    case 4: stride = (size_t)dec_dim * sizeof(double); break;
    case 5: stride = (size_t)(dec_dim + 1) * sizeof(double); break;
    case 6: // roomy, or (look bits 6-7 == 01) not a multiple of 8 bytes: misaligned points
        stride = (size_t)(dec_dim + 3) * sizeof(double);
        if ((look & 0xC0) == 0x40) stride = (size_t)dec_dim * sizeof(double) + 4;
        break;
    case 7: stride = (size_t)(dec_dim - 1) * sizeof(double); break; // too small
    default: stride = 0; break;
    }
    bool null_view = false;
    bool null_data = false;
    if ((look & 0xC0) == 0xC0) {
        switch (look & 3) {
        case 0: null_view = true; break;
        case 1: null_data = true; break;
        case 2: count = -1 - (int32_t)(count_byte & 0x7f); break;
        default: count = INT32_MIN + count_byte; break;
        }
    }
    double base = nbf_bases[look & 7];
    double unit = nbf_units[(look >> 3) & 7];

    // Decode the points; lay them out at the view's stride with NaN padding, in a buffer that
    // is freed right after the call (the grid must copy them).
    int32_t n = count > 0 ? count : 0;
    int32_t decoded = crowd ? 1 + (int32_t)(count_byte % 8) : n;
    static double dec[NBF_MAX_POINTS][3];
    for (int32_t i = 0; i < decoded; i++) {
        uint8_t pm = nbf_u8(r);
        if ((pm & 15) == 0 && i > 0) {
            memcpy(dec[i], dec[nbf_u8(r) % i], sizeof dec[i]);
        } else if ((pm & 15) == 1 && s->n > 0) {
            memcpy(dec[i], s->pts[nbf_u8(r) % s->n], sizeof dec[i]);
            if (dec_dim == 3 && gdim == 2) dec[i][2] = 0.0;
        } else {
            for (int32_t d = 0; d < 3; d++)
                dec[i][d] = d < dec_dim ? nbf_read_coord(r, dec, i, d, base, unit) : 0.0;
        }
    }
    if (crowd) {
        uint32_t rng = 0x9E3779B9u ^ nbf_u8(r);
        int32_t spread = 1 + (int32_t)(nbf_u8(r) % 8);
        for (int32_t i = decoded; i < n; i++) {
            rng = rng * 1664525u + 1013904223u;
            int32_t from = (int32_t)((rng >> 8) % (uint32_t)decoded);
            for (int32_t d = 0; d < 3; d++) {
                rng = rng * 1664525u + 1013904223u;
                int32_t step = (int32_t)((rng >> 16) % (uint32_t)(2 * spread + 1)) - spread;
                dec[i][d] = d < dec_dim ? dec[from][d] + (double)step * 0.5 * unit : 0.0;
            }
        }
    }
    size_t layout = stride ? stride : (size_t)dec_dim * sizeof(double);
    if (layout < (size_t)dec_dim * sizeof(double)) layout = (size_t)dec_dim * sizeof(double);
    size_t bytes = (size_t)n * layout + 4 * sizeof(double); // slack for a too-small stride
    unsigned char *buf = malloc(bytes);
    if (buf == NULL) abort();
    memset(buf, 0xFF, bytes); // NaN everywhere the library must not read
    for (int32_t i = 0; i < n; i++)
        memcpy(buf + (size_t)i * layout, dec[i], (size_t)dec_dim * sizeof(double));
    static nbfBits bits;
    nbf_read_bits(r, view, n, dec_dim, stride, layout, buf, &bits);
    nbPoints pts = {null_data ? NULL : (const double *)(const void *)buf,
                    count,
                    vdim,
                    stride,
                    bits.cat,
                    bits.cat_stride,
                    bits.mask,
                    bits.mask_stride};

    // The statuses the contract allows.
    unsigned allowed = 0;
    int32_t eff_dim = vdim == 0 ? gdim : vdim;
    bool view_ok = eff_dim == gdim &&
                   (stride == 0 ||
                    (stride >= (size_t)gdim * sizeof(double) && stride % sizeof(double) == 0)) &&
                   count >= 0;
    bool has_nf = false;
    nbfCellRisk risk = {false, false};
    double cell_lo = s->desc_cell > 0.0 ? s->desc_cell : radius;
    // A cell taken from the radius is "widened" by an amount the library picks (it may grow
    // with the data's magnitude), so only a desc cell can make overflow certain. A successful
    // build is checked against the cell it reports instead (below).
    double cell_hi = s->desc_cell > 0.0 ? s->desc_cell * (1.0 + 0x1p-30) : (double)INFINITY;
    for (int32_t i = 0; i < n; i++) {
        for (int32_t d = 0; d < dec_dim; d++) {
            if (!isfinite(dec[i][d]))
                has_nf = true;
            else if (isfinite(radius) && radius >= 0.0)
                nbf_cell_risk(dec[i][d], cell_lo, cell_hi, &risk);
        }
    }
    if (null_view || (null_data && count > 0)) {
        allowed = NBF_BIT(NB_ERR_NULL_ARG);
        if (null_data && count < 0) allowed |= NBF_BIT(NB_ERR_OUT_OF_RANGE);
    } else if (!isfinite(radius)) {
        allowed = NBF_BIT(NB_ERR_NOT_FINITE);
    } else if (radius < 0.0 || !view_ok) {
        allowed = NBF_BIT(NB_ERR_OUT_OF_RANGE);
        if (has_nf && count >= 0) allowed |= NBF_BIT(NB_ERR_NOT_FINITE);
    } else if (has_nf || risk.overflow) {
        if (has_nf) allowed |= NBF_BIT(NB_ERR_NOT_FINITE);
        if (risk.overflow || risk.maybe) allowed |= NBF_BIT(NB_ERR_OUT_OF_RANGE);
    } else {
        allowed = NBF_BIT(NB_OK);
        if (risk.maybe) allowed |= NBF_BIT(NB_ERR_OUT_OF_RANGE);
    }
    // Bad filter arrays are a range error, checked after the radius, view and coordinates.
    if (bits.bad && (allowed & NBF_BIT(NB_OK)))
        allowed = (allowed & ~NBF_BIT(NB_OK)) | NBF_BIT(NB_ERR_OUT_OF_RANGE);
    // The first build with categories/masks may allocate their copies (even within a reserve).
    bool first_bits = (bits.cat != NULL || bits.mask != NULL) && !s->had_bits;

    nbfMark m = nbf_mark();
    nbStatus st = nb_grid_build(s->grid, null_view ? NULL : &pts, radius);
    bool failed_alloc = nbf_heap.failed;
    nbf_log("  build(count=%d, dim=%d, stride=%zu, data=%s, radius=%a) -> %s\n", count, vdim,
            stride, null_data ? "NULL" : "buf", radius, nb_status_str(st));
    if (bits.on)
        nbf_log("    bits: space %u layout %d category %s stride %zu, mask %s stride %zu%s\n",
                (unsigned)bits.space, bits.mode, bits.cat ? "yes" : "NULL", bits.cat_stride,
                bits.mask ? "yes" : "NULL", bits.mask_stride, bits.bad ? " (bad)" : "");
    for (int32_t i = 0; i < n && nbf_trace > 0; i++)
        nbf_log("    p[%d] = (%a, %a, %a) cat %#x mask %#x\n", i, dec[i][0], dec[i][1], dec[i][2],
                bits.cat ? bits.cv[i] : 0xFFFFFFFFu, bits.mask ? bits.mv[i] : 0xFFFFFFFFu);
    free(buf);
    free(bits.own[0]);
    free(bits.own[1]);
    // A refused allocation allows NB_ERR_OUT_OF_MEMORY (the library may also retry smaller
    // and succeed); without one, out-of-memory is a lie.
    if (failed_alloc) allowed |= NBF_BIT(NB_ERR_OUT_OF_MEMORY);
    nbf_expect(st, allowed, "nb_grid_build");
    // grid.h: a build allocates only when it needs more room than every earlier build and
    // reserve (more points, more dense cells, or the first hashed or ranked layout); after
    // nb_grid_reserve(n) (or a capacity hint n) no build of up to n points allocates. A build
    // that fails before it needs room allocates nothing.
    if (!nbf_skip("build-alloc")) {
        if (count >= 0 && count <= s->reserved && s->reserved > 0 && !first_bits)
            nbf_no_alloc(s, m, "nb_grid_build of at most the reserved point count");
        else if (st != NB_OK && st != NB_ERR_OUT_OF_MEMORY)
            nbf_no_alloc(s, m, "nb_grid_build that failed its argument checks");
    }
    if (st == NB_OK) {
        s->n = count;
        for (int32_t i = 0; i < count; i++) memcpy(s->pts[i], dec[i], sizeof s->pts[i]);
        if (gdim == 2)
            for (int32_t i = 0; i < count; i++) s->pts[i][2] = 0.0;
        s->build_radius = radius;
        s->built = true;
        s->has_cat = bits.cat != NULL;
        s->has_mask = bits.mask != NULL;
        if (bits.on) s->space = bits.space;
        for (int32_t i = 0; i < count; i++) {
            s->cat[i] = s->has_cat ? bits.cv[i] : 0xFFFFFFFFu;
            s->mask[i] = s->has_mask ? bits.mv[i] : 0xFFFFFFFFu;
        }
        nbf_info(s, &s->info);
        nbf_log("    layout: %s, %lld cells\n",
                s->info.ranked   ? "ranked"
                : s->info.hashed ? "hashed"
                                 : "dense",
                (long long)s->info.cells);
        const bool table = s->info.hashed && !s->info.ranked;
        bool more = count > s->max_built || (!s->info.hashed && s->info.cells > s->max_dense) ||
                    (table && !s->had_hashed) || (s->info.ranked && !s->had_ranked) || first_bits;
        // grid.h/grid.md: the first build with categories/masks may allocate their copies, and
        // later reserves cover them, even after a 0-point build with bits
        // (found-empty-filtered-build-then-reserve.bin: the grid once forgot those).
        if (s->has_cat || s->has_mask) s->had_bits = true;
        if (!more && count > 0 && !(count <= s->reserved && s->reserved > 0) &&
            !nbf_skip("build-alloc"))
            nbf_no_alloc(s, m, "nb_grid_build needing no more room than an earlier build");
        if (count > s->max_built) s->max_built = count;
        if (!s->info.hashed && s->info.cells > s->max_dense) s->max_dense = s->info.cells;
        if (table) s->had_hashed = true;
        if (s->info.ranked) s->had_ranked = true;
        for (int32_t i = 0; i < count; i++)
            for (int32_t d = 0; d < gdim; d++)
                NBF_CHECK(fabs(floor(s->pts[i][d] / s->info.cell_size)) <= 0x1p62 * (1.0 + 1e-6),
                          "build accepted p[%d][%d] = %a whose cell at edge %a is beyond 2^62", i,
                          d, s->pts[i][d], s->info.cell_size);
    } else {
        nbf_check_unchanged(s, "nb_grid_build");
    }
}

static void nbf_op_reserve(nbfReader *r, nbfState *s)
{
    nbf_op = "reserve";
    uint8_t m = nbf_u8(r);
    int32_t want = 0;
    switch (m & 7) {
    case 5: want = -1 - (int32_t)(m >> 3); break;
    case 6:
    case 7:
        if (s->custom) {
            static const int32_t huge[4] = {1 << 14, 1 << 26, INT32_MAX, 1 << 30};
            want = huge[(m >> 3) & 3];
            break;
        }
        want = (int32_t)(m >> 3) * 16;
        break;
    default: want = (int32_t)(m >> 3) * 3; break;
    }
    nbfMark mark = nbf_mark();
    nbStatus st = nb_grid_reserve(s->grid, want);
    nbf_log("  reserve(%d) -> %s\n", want, nb_status_str(st));
    unsigned allowed = want < 0 ? NBF_BIT(NB_ERR_OUT_OF_RANGE) : NBF_BIT(NB_OK);
    if (nbf_heap.failed) allowed |= NBF_BIT(NB_ERR_OUT_OF_MEMORY);
    nbf_expect(st, allowed, "nb_grid_reserve");
    // A reserve within an earlier reserve (or the capacity hint) has nothing to grow. (One
    // within an earlier build may still size storage that build did not need.)
    if (want <= s->reserved && s->reserved > 0)
        nbf_no_alloc(s, mark, "nb_grid_reserve within an earlier reserve");
    if (st == NB_OK && want > s->reserved) s->reserved = want;
    nbf_check_unchanged(s, "nb_grid_reserve");
}

static nbPair nbf_full_pairs[NBF_MAX_PAIRS + 1];
static int32_t nbf_pair_pos[NBF_MAX_POINTS][NBF_MAX_POINTS];
static uint8_t nbf_match[NBF_MAX_POINTS][NBF_MAX_POINTS];
static nbfPairSink nbf_psink;

/// Runs nb_grid_pairs with the exact oracle capacity; on success leaves the list in
/// nbf_full_pairs and returns the count, else returns -1 after checking every pairs call
/// rejects the radius.
static int64_t nbf_full_pair_list(nbfState *s, double radius)
{
    int64_t expected = nbf_oracle_pairs(s, radius, nbf_match);
    // grid.h also allows NB_ERR_OUT_OF_RANGE on a hashed grid when the search would take more
    // than 64 N + 2^26 cell steps; with at most NBF_MAX_POINTS occupied cells it takes at most
    // NBF_MAX_POINTS^2 < 2^26, so success is required here.
    unsigned want = nbf_radius_status(radius);
    int64_t found = -7;
    nbPair *full = malloc((size_t)(expected > 0 ? expected : 1) * sizeof *full); // exact size
    if (full == NULL) abort();
    nbfMark m = nbf_mark();
    nbStatus st = nb_grid_pairs(s->grid, radius, full, expected, &found);
    nbf_no_alloc(s, m, "nb_grid_pairs");
    memcpy(nbf_full_pairs, full, (size_t)expected * sizeof *full);
    free(full);
    nbf_log("  pairs(radius=%a, capacity=%lld) -> %s, found %lld (oracle %lld)\n", radius,
            (long long)expected, nb_status_str(st), (long long)found, (long long)expected);
    nbf_expect(st, want, "nb_grid_pairs");
    if (st != NB_OK) {
        NBF_CHECK(found == 0, "nb_grid_pairs failed with %s but set *found = %lld",
                  nb_status_str(st), (long long)found);
        int64_t count = -7;
        st = nb_grid_count_pairs(s->grid, radius, &count);
        nbf_expect(st, want, "nb_grid_count_pairs");
        NBF_CHECK(count == 0, "nb_grid_count_pairs failed but set *count = %lld", (long long)count);
        st = nb_grid_visit_pairs(s->grid, radius, nbf_never_visit_pair, NULL);
        nbf_expect(st, want, "nb_grid_visit_pairs");
        st = nb_grid_visit_pairs_range(s->grid, radius, 0, nb_grid_pair_units(s->grid),
                                       nbf_never_visit_pair, NULL);
        nbf_expect(st, want, "nb_grid_visit_pairs_range");
        nbf_no_alloc(s, m, "pair queries");
        return -1;
    }
    NBF_CHECK(found == expected, "nb_grid_pairs radius %a (%.17g): found %lld, oracle %lld", radius,
              radius, (long long)found, (long long)expected);
    nbf_check_pair_set(s, nbf_full_pairs, found, nbf_match, expected, radius, nbf_pair_pos,
                       "nb_grid_pairs");
    return expected;
}

/// The same pairs as compressed rows (neighbors.h): row i holds every j with (i, j) or (j, i)
/// among the oracle's pairs (nbf_match), ascending; a buffer one short says so, with the offsets
/// complete and the full count. Does not allocate.
static void nbf_check_rows(const nbfState *s, double radius, bool short_buffer)
{
    static int32_t off[NBF_MAX_POINTS + 1], want_off[NBF_MAX_POINTS + 1];
    static int32_t got[2 * NBF_MAX_PAIRS + 1], want[2 * NBF_MAX_PAIRS + 1];
    int32_t k = 0;
    want_off[0] = 0;
    for (int32_t i = 0; i < s->n; i++) {
        for (int32_t j = 0; j < s->n; j++)
            if (j != i && nbf_match[i < j ? i : j][i < j ? j : i]) want[k++] = j;
        want_off[i + 1] = k;
    }
    const int64_t cap = short_buffer && k > 0 ? k - 1 : k;
    int64_t found = -7;
    nbfMark m = nbf_mark();
    nbStatus st = nb_grid_neighbor_rows(s->grid, radius, off, got, cap, &found);
    nbf_no_alloc(s, m, "nb_grid_neighbor_rows");
    nbf_log("  neighbor_rows(radius=%a, capacity=%lld) -> %s, found %lld\n", radius, (long long)cap,
            nb_status_str(st), (long long)found);
    nbf_expect(st, cap < k ? NBF_BIT(NB_ERR_BUFFER_TOO_SMALL) : NBF_BIT(NB_OK),
               "nb_grid_neighbor_rows");
    NBF_CHECK(found == k, "nb_grid_neighbor_rows: found %lld, oracle %d", (long long)found, k);
    for (int32_t i = 0; i <= s->n; i++)
        NBF_CHECK(off[i] == want_off[i], "nb_grid_neighbor_rows: offsets[%d] = %d, oracle %d", i,
                  off[i], want_off[i]);
    for (int32_t t = 0; st == NB_OK && t < k; t++)
        NBF_CHECK(got[t] == want[t], "nb_grid_neighbor_rows: entry %d is %d, oracle %d", t, got[t],
                  want[t]);
}

static void nbf_op_pairs(nbfReader *r, nbfState *s)
{
    nbf_op = "pairs";
    double radius = nbf_read_radius(r, s);
    uint8_t capm = nbf_u8(r);
    uint8_t stop = nbf_u8(r);
    int64_t total = nbf_full_pair_list(s, radius);
    if (total < 0) return;

    // A truncated (or roomy, or invalid) buffer: the found count is the total and the buffer
    // holds the prefix of the full list.
    int64_t cap = 0;
    switch (capm & 7) {
    case 0: cap = 0; break;
    case 1: cap = capm >> 3; break;
    case 2: cap = total > 0 ? total - 1 : 0; break;
    case 3: cap = total / 2; break;
    case 4: cap = total + (capm >> 3); break;
    case 5: cap = -1 - (capm >> 3); break;
    case 6: cap = total; break;
    default: cap = (capm >> 3) % (total + 1); break;
    }
    nbPair *out = NULL;
    if (cap > 0 || (cap == 0 && (capm & 0x80))) {
        out = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *out);
        if (out == NULL) abort();
    }
    int64_t found = -7;
    nbfMark m = nbf_mark();
    nbStatus st = nb_grid_pairs(s->grid, radius, out, cap, &found);
    nbf_no_alloc(s, m, "nb_grid_pairs");
    nbf_log("  pairs(radius=%a, out=%s, capacity=%lld) -> %s, found %lld\n", radius,
            out ? "buf" : "NULL", (long long)cap, nb_status_str(st), (long long)found);
    if (cap < 0) {
        nbf_expect(st, NBF_BIT(NB_ERR_OUT_OF_RANGE), "nb_grid_pairs (negative capacity)");
        NBF_CHECK(found == 0, "nb_grid_pairs failed but set *found = %lld", (long long)found);
    } else {
        nbf_expect(st, total > cap ? NBF_BIT(NB_ERR_BUFFER_TOO_SMALL) : NBF_BIT(NB_OK),
                   "nb_grid_pairs (capacity)");
        NBF_CHECK(found == total, "nb_grid_pairs capacity %lld: found %lld, full count %lld",
                  (long long)cap, (long long)found, (long long)total);
        nbf_check_same_pairs(nbf_full_pairs, out, cap < total ? cap : total,
                             "nb_grid_pairs (truncated)");
    }
    free(out);
    nbf_check_rows(s, radius, (capm & 0x40) != 0);

    int64_t count = -7;
    m = nbf_mark();
    st = nb_grid_count_pairs(s->grid, radius, &count);
    nbf_no_alloc(s, m, "nb_grid_count_pairs");
    nbf_expect(st, NBF_BIT(NB_OK), "nb_grid_count_pairs");
    NBF_CHECK(count == total, "nb_grid_count_pairs radius %a: %lld, oracle %lld", radius,
              (long long)count, (long long)total);

    // The visitor sees the same pairs in the same order; it stops when told.
    for (int pass = 0; pass < 2; pass++) {
        nbfPairSink *k = &nbf_psink;
        k->n = 0;
        k->points = s->n;
        k->overflow = false;
        k->stop_after = pass == 0 ? INT64_MAX : 1 + (int64_t)stop % (total + 1);
        m = nbf_mark();
        st = nb_grid_visit_pairs(s->grid, radius, nbf_pair_visit, k);
        nbf_no_alloc(s, m, "nb_grid_visit_pairs");
        nbf_expect(st, NBF_BIT(NB_OK), "nb_grid_visit_pairs");
        int64_t want = total < k->stop_after ? total : k->stop_after;
        NBF_CHECK(!k->overflow && k->n == want,
                  "nb_grid_visit_pairs (stop after %lld): %lld calls, expected %lld",
                  (long long)k->stop_after, (long long)k->n, (long long)want);
        nbf_check_same_pairs(nbf_full_pairs, k->got, k->n, "nb_grid_visit_pairs order");
    }
}

static void nbf_op_range(nbfReader *r, nbfState *s)
{
    nbf_op = "pairs_range";
    double radius = nbf_read_radius(r, s);
    uint8_t mode = nbf_u8(r);
    int32_t units = nb_grid_pair_units(s->grid);
    NBF_CHECK(units >= 0, "nb_grid_pair_units = %d", units);
    if (s->n == 0) NBF_CHECK(units == 0, "nb_grid_pair_units = %d for an empty grid", units);
    int64_t total = nbf_full_pair_list(s, radius);
    if (total < 0) return;

    // Out-of-range unit ranges are rejected before anything is visited.
    if (mode & 0x80) {
        int32_t b = 0;
        int32_t e = 0;
        bool empty_ok = false;
        switch (mode & 3) {
        case 0:
            b = -1;
            e = units;
            break;
        case 1:
            b = units == INT32_MAX ? -1 : 0;
            e = units == INT32_MAX ? units : units + 1;
            break;
        case 2:
            b = INT32_MIN;
            e = INT32_MIN;
            break;
        default:
            b = units;
            e = units > 0 ? units - 1 : -1;
            empty_ok = units > 0;
            break;
        }
        nbfMark m = nbf_mark();
        nbStatus st = nb_grid_visit_pairs_range(s->grid, radius, b, e, nbf_never_visit_pair, NULL);
        nbf_no_alloc(s, m, "nb_grid_visit_pairs_range");
        nbf_log("  visit_pairs_range(radius=%a, %d, %d) of %d units -> %s\n", radius, b, e, units,
                nb_status_str(st));
        nbf_expect(st, NBF_BIT(NB_ERR_OUT_OF_RANGE) | (empty_ok ? NBF_BIT(NB_OK) : 0u),
                   "nb_grid_visit_pairs_range (bad range)");
    }

    // A partition of [0, units): the union is every pair once, each range in list order.
    int32_t cuts[NBF_MAX_CUTS + 2];
    int ncut = (int)(mode & 7);
    cuts[0] = 0;
    for (int c = 1; c <= ncut; c++) {
        int64_t at = ((int64_t)nbf_u16(r) * ((int64_t)units + 1)) >> 16;
        cuts[c] = (int32_t)at;
    }
    cuts[ncut + 1] = units;
    for (int a = 1; a <= ncut; a++) // insertion sort
        for (int b = a; b > 0 && cuts[b] < cuts[b - 1]; b--) {
            int32_t t = cuts[b];
            cuts[b] = cuts[b - 1];
            cuts[b - 1] = t;
        }
    static uint8_t seen[NBF_MAX_POINTS][NBF_MAX_POINTS];
    for (int32_t i = 0; i < s->n; i++) memset(seen[i], 0, (size_t)s->n);
    int64_t got = 0;
    for (int c = 0; c <= ncut; c++) {
        nbfPairSink *k = &nbf_psink;
        k->n = 0;
        k->points = s->n;
        k->overflow = false;
        k->stop_after = INT64_MAX;
        nbfMark m = nbf_mark();
        nbStatus st =
            nb_grid_visit_pairs_range(s->grid, radius, cuts[c], cuts[c + 1], nbf_pair_visit, k);
        nbf_no_alloc(s, m, "nb_grid_visit_pairs_range");
        nbf_log("  visit_pairs_range(radius=%a, %d, %d) of %d units -> %s, %lld pairs\n", radius,
                cuts[c], cuts[c + 1], units, nb_status_str(st), (long long)k->n);
        nbf_expect(st, NBF_BIT(NB_OK), "nb_grid_visit_pairs_range");
        NBF_CHECK(!k->overflow, "nb_grid_visit_pairs_range reported more pairs than exist");
        int last = -1;
        for (int64_t q = 0; q < k->n; q++) {
            int32_t i = k->got[q].i;
            int32_t j = k->got[q].j;
            NBF_CHECK(nbf_match[i][j], "range [%d, %d): pair (%d, %d) is not within radius %a",
                      cuts[c], cuts[c + 1], i, j, radius);
            NBF_CHECK(!seen[i][j], "range [%d, %d): pair (%d, %d) already reported by a range",
                      cuts[c], cuts[c + 1], i, j);
            seen[i][j] = 1;
            NBF_CHECK(nbf_pair_pos[i][j] > last,
                      "range [%d, %d): pair (%d, %d) out of nb_grid_visit_pairs order", cuts[c],
                      cuts[c + 1], i, j);
            last = nbf_pair_pos[i][j];
        }
        got += k->n;
    }
    NBF_CHECK(got == total, "ranges over a partition of %d units gave %lld pairs, oracle %lld",
              units, (long long)got, (long long)total);
}

static int32_t nbf_full_index[NBF_MAX_POINTS + 1];

/// Shared driver for the radius and box queries: `query` fills a buffer, `visit` calls back.
typedef struct nbfQuery {
    bool box;
    double center[3];
    double radius;
    double lo[3];
    double hi[3];
    bool filtered; ///< call the _filtered form with f
    nbFilter f;
} nbfQuery;

/// A query filter in the bit space of the grid's last build with bits (0xFF: NB_FILTER_ALL).
static nbFilter nbf_read_filter(nbfReader *r, const nbfState *s)
{
    uint8_t fb = nbf_u8(r);
    if (fb == 0xFF) return NB_FILTER_ALL;
    nbFilter f = {nbf_bits_value(s->space, fb & 15), nbf_bits_value(s->space, (uint8_t)(fb >> 4))};
    return f;
}

static nbStatus nbf_run_query(const nbfState *s, const nbfQuery *q, int32_t *out, int32_t cap,
                              int32_t *found)
{
    // The point arguments live in exact-size heap blocks so that reading a third coordinate
    // of a 2D grid is caught by AddressSanitizer.
    size_t bytes = (size_t)s->dim * sizeof(double);
    double *a = malloc(bytes);
    double *b = malloc(bytes);
    if (a == NULL || b == NULL) abort();
    memcpy(a, q->box ? q->lo : q->center, bytes);
    memcpy(b, q->hi, bytes);
    nbStatus st;
    if (q->filtered)
        st = q->box ? nb_grid_query_box(s->grid, NBT_BOX(a, b, s->dim), q->f, out, cap, found)
                    : nb_grid_query_radius(s->grid, a, q->radius, q->f, out, cap, found);
    else
        st = q->box
                 ? nb_grid_query_box(s->grid, NBT_BOX(a, b, s->dim), NB_FILTER_ALL, out, cap, found)
                 : nb_grid_query_radius(s->grid, a, q->radius, NB_FILTER_ALL, out, cap, found);
    free(a);
    free(b);
    return st;
}

static nbStatus nbf_run_visit(const nbfState *s, const nbfQuery *q, nbVisitFn *fn, void *user)
{
    size_t bytes = (size_t)s->dim * sizeof(double);
    double *a = malloc(bytes);
    double *b = malloc(bytes);
    if (a == NULL || b == NULL) abort();
    memcpy(a, q->box ? q->lo : q->center, bytes);
    memcpy(b, q->hi, bytes);
    nbStatus st;
    if (q->filtered)
        st = q->box ? nb_grid_visit_box(s->grid, NBT_BOX(a, b, s->dim), q->f, fn, user)
                    : nb_grid_visit_radius(s->grid, a, q->radius, q->f, fn, user);
    else
        st = q->box ? nb_grid_visit_box(s->grid, NBT_BOX(a, b, s->dim), NB_FILTER_ALL, fn, user)
                    : nb_grid_visit_radius(s->grid, a, q->radius, NB_FILTER_ALL, fn, user);
    free(a);
    free(b);
    return st;
}

static void nbf_query_checks(nbfReader *r, nbfState *s, const nbfQuery *q)
{
    const char *qname =
        q->box ? (q->filtered ? "nb_grid_query_box filtered" : "nb_grid_query_box")
               : (q->filtered ? "nb_grid_query_radius filtered" : "nb_grid_query_radius");
    const char *vname =
        q->box ? (q->filtered ? "nb_grid_visit_box filtered" : "nb_grid_visit_box")
               : (q->filtered ? "nb_grid_visit_radius filtered" : "nb_grid_visit_radius");
    if (q->filtered) nbf_log("  filter category %#x mask %#x\n", q->f.category, q->f.mask);
    uint8_t capm = nbf_u8(r);
    uint8_t stop = nbf_u8(r);

    unsigned want = NBF_BIT(NB_OK);
    uint8_t match[NBF_MAX_POINTS] = {0};
    int64_t expected = 0;
    if (q->box) {
        for (int32_t d = 0; d < s->dim; d++)
            if (isnan(q->lo[d]) || isnan(q->hi[d])) want = NBF_BIT(NB_ERR_NOT_FINITE);
        nbf_log("  box lo=(%a, %a, %a) hi=(%a, %a, %a)\n", q->lo[0], q->lo[1],
                s->dim == 3 ? q->lo[2] : 0.0, q->hi[0], q->hi[1], s->dim == 3 ? q->hi[2] : 0.0);
    } else {
        if (!nbf_finite_vec(q->center, s->dim))
            want = NBF_BIT(NB_ERR_NOT_FINITE);
        else
            want = nbf_radius_status(q->radius);
        nbf_log("  radius center=(%a, %a, %a) r=%a\n", q->center[0], q->center[1],
                s->dim == 3 ? q->center[2] : 0.0, q->radius);
    }
    if (want == NBF_BIT(NB_OK)) {
        nboSet set = nbf_oracle_set(s);
        int32_t n = 0;
        nbFilter f = q->filtered ? q->f : NB_FILTER_ALL;
        int32_t *in = q->box ? nbo_box_filtered(&set, q->lo, q->hi, f, &n)
                             : nbo_radius_filtered(&set, q->center, q->radius, f, &n);
        for (int32_t k = 0; k < n; k++) match[in[k]] = 1;
        expected = n;
        free(in);
    }

    // Full buffer of exactly the oracle's size.
    int32_t found = -7;
    nbfMark m = nbf_mark();
    int32_t *full = malloc((size_t)(expected > 0 ? expected : 1) * sizeof(int32_t));
    if (full == NULL) abort();
    nbStatus st = nbf_run_query(s, q, full, (int32_t)expected, &found);
    nbf_no_alloc(s, m, qname);
    nbf_log("  %s(capacity=%lld) -> %s, found %d (oracle %lld)\n", qname, (long long)expected,
            nb_status_str(st), found, (long long)expected);
    nbf_expect(st, want, qname);
    if (st != NB_OK) {
        free(full);
        NBF_CHECK(found == 0, "%s failed with %s but set *found = %d", qname, nb_status_str(st),
                  found);
        st = nbf_run_visit(s, q, nbf_never_visit, NULL);
        nbf_no_alloc(s, m, vname);
        nbf_expect(st, want, vname);
        return;
    }
    NBF_CHECK(found == expected, "%s: found %d, oracle %lld", qname, found, (long long)expected);
    nbf_check_index_set(s, full, found, match, expected, qname);
    memcpy(nbf_full_index, full, (size_t)found * sizeof(int32_t));
    free(full);

    // Truncated, roomy or invalid capacity.
    int32_t cap = 0;
    switch (capm & 7) {
    case 0: cap = 0; break;
    case 1: cap = (int32_t)(capm >> 3); break;
    case 2: cap = found > 0 ? found - 1 : 0; break;
    case 3: cap = found / 2; break;
    case 4: cap = found + (int32_t)(capm >> 3); break;
    case 5: cap = -1 - (int32_t)(capm >> 3); break;
    case 6: cap = INT32_MIN; break;
    default: cap = (int32_t)(capm >> 3) % (found + 1); break;
    }
    int32_t *out = NULL;
    if (cap > 0 || (cap == 0 && (capm & 0x80))) {
        out = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *out);
        if (out == NULL) abort();
    }
    int32_t found2 = -7;
    m = nbf_mark();
    st = nbf_run_query(s, q, out, cap, &found2);
    nbf_no_alloc(s, m, qname);
    nbf_log("  %s(out=%s, capacity=%d) -> %s, found %d\n", qname, out ? "buf" : "NULL", cap,
            nb_status_str(st), found2);
    if (cap < 0) {
        nbf_expect(st, NBF_BIT(NB_ERR_OUT_OF_RANGE), qname);
        NBF_CHECK(found2 == 0, "%s failed but set *found = %d", qname, found2);
    } else {
        nbf_expect(st, found > cap ? NBF_BIT(NB_ERR_BUFFER_TOO_SMALL) : NBF_BIT(NB_OK), qname);
        NBF_CHECK(found2 == found, "%s capacity %d: found %d, full count %d", qname, cap, found2,
                  found);
        nbf_check_same_indices(nbf_full_index, out, cap < found ? cap : found, qname);
    }
    free(out);

    // The visitor: same order, stops when told.
    for (int pass = 0; pass < 2; pass++) {
        nbfIndexSink k;
        k.n = 0;
        k.points = s->n;
        k.stop_after = pass == 0 ? INT64_MAX : 1 + (int64_t)stop % (found + 1);
        m = nbf_mark();
        st = nbf_run_visit(s, q, nbf_index_visit, &k);
        nbf_no_alloc(s, m, vname);
        nbf_expect(st, NBF_BIT(NB_OK), vname);
        int64_t wantn = found < k.stop_after ? found : k.stop_after;
        NBF_CHECK(k.n == wantn, "%s (stop after %lld): %lld calls, expected %lld", vname,
                  (long long)k.stop_after, (long long)k.n, (long long)wantn);
        nbf_check_same_indices(nbf_full_index, k.got, k.n, vname);
    }
}

static void nbf_op_radius(nbfReader *r, nbfState *s, bool filtered)
{
    nbf_op = "query_radius";
    nbfQuery q;
    memset(&q, 0, sizeof q);
    q.filtered = filtered;
    if (filtered) q.f = nbf_read_filter(r, s);
    nbf_read_center(r, s, q.center);
    q.radius = nbf_read_radius(r, s);
    nbf_query_checks(r, s, &q);
}

static void nbf_op_box(nbfReader *r, nbfState *s, bool filtered)
{
    nbf_op = "query_box";
    nbfQuery q;
    memset(&q, 0, sizeof q);
    q.filtered = filtered;
    if (filtered) q.f = nbf_read_filter(r, s);
    q.box = true;
    for (int32_t d = 0; d < s->dim; d++) {
        q.lo[d] = nbf_read_bound(r, s, d);
        uint8_t m = nbf_u8(r);
        switch (m & 7) {
        case 0:
        case 1:
        case 2:
        case 3: q.hi[d] = q.lo[d] + (double)(m >> 3) * 0.5; break;
        case 4: q.hi[d] = nbf_read_bound(r, s, d); break;
        case 5: q.hi[d] = (double)INFINITY; break;
        case 6: q.hi[d] = q.lo[d]; break;
        default: q.hi[d] = q.lo[d] - (double)((m >> 3) + 1) * 0.25; break; // empty
        }
    }
    nbf_query_checks(r, s, &q);
}

static void nbf_op_knn(nbfReader *r, nbfState *s, bool filtered)
{
    nbf_op = "knn";
    nbFilter f = filtered ? nbf_read_filter(r, s) : NB_FILTER_ALL;
    double c[3] = {0.0, 0.0, 0.0};
    nbf_read_center(r, s, c);
    uint8_t km = nbf_u8(r);
    int32_t k = 0;
    switch (km & 7) {
    case 5: k = 0; break;
    case 6: k = (km & 8) ? INT32_MIN : -1 - (int32_t)(km >> 4); break;
    case 7: k = (int32_t)(km >> 3) * 5; break;
    default: k = (int32_t)(km >> 3) % (s->n + 4); break;
    }
    unsigned want = NBF_BIT(NB_OK);
    if (!nbf_finite_vec(c, s->dim))
        want = NBF_BIT(NB_ERR_NOT_FINITE);
    else if (k < 0)
        want = NBF_BIT(NB_ERR_OUT_OF_RANGE);

    nbNeighbor *out = NULL;
    if (k > 0 || (km & 0x80)) {
        out = malloc((size_t)(k > 0 ? k : 1) * sizeof *out);
        if (out == NULL) abort();
    }
    double *point = malloc((size_t)s->dim * sizeof(double));
    if (point == NULL) abort();
    memcpy(point, c, (size_t)s->dim * sizeof(double));
    int32_t found = -7;
    const size_t bytes = nb_grid_memory_bytes(s->grid);
    nbfMark m = nbf_mark();
    nbStatus st =
        filtered ? nb_grid_knn(s->grid, point, f, (double)INFINITY, out, k, &found)
                 : nb_grid_knn(s->grid, point, NB_FILTER_ALL, (double)INFINITY, out, k, &found);
    // Nothing allocated, but for the kNN index growing (grid.h, nb_grid_knn).
    if (nb_grid_memory_bytes(s->grid) == bytes && !nbf_heap.failed) nbf_no_alloc(s, m, "nb_grid_knn");
    if (filtered) nbf_log("  filter category %#x mask %#x\n", f.category, f.mask);
    free(point);
    nbf_log("  knn(point=(%a, %a, %a), k=%d, out=%s) -> %s, found %d\n", c[0], c[1],
            s->dim == 3 ? c[2] : 0.0, k, out ? "buf" : "NULL", nb_status_str(st), found);
    if (k <= 0 && out == NULL) want |= NBF_BIT(NB_ERR_NULL_ARG); // out "holds k entries"
    nbf_expect(st, want, "nb_grid_knn");
    if (st != NB_OK) {
        NBF_CHECK(found == 0, "nb_grid_knn failed with %s but set *found = %d", nb_status_str(st),
                  found);
        free(out);
        return;
    }
    if (nbf_skip("knn-huge")) { // known bug: coordinates near DBL_MAX
        bool huge = false;
        for (int32_t d = 0; d < s->dim; d++) huge = huge || fabs(c[d]) > 0x1p1000;
        for (int32_t i = 0; i < s->n; i++)
            for (int32_t d = 0; d < s->dim; d++) huge = huge || fabs(s->pts[i][d]) > 0x1p1000;
        if (huge) {
            free(out);
            return;
        }
    }
    // Oracle: the first min(k, N) of all points sorted by (dist2, index), dist2 bit for bit.
    nboSet set = nbf_oracle_set(s);
    int32_t want_found = 0;
    nbNeighbor *want_nb = nbo_knn_filtered(&set, c, k, f, &want_found);
    NBF_CHECK(found == want_found, "nb_grid_knn%s k=%d with %d points: found %d, oracle %d",
              filtered ? "_filtered" : "", k, s->n, found, want_found);
    for (int32_t q = 0; q < found; q++)
        NBF_CHECK(out[q].index == want_nb[q].index && out[q].dist2 == want_nb[q].dist2,
                  "nb_grid_knn k=%d: neighbour #%d is (index %d, dist2 %a), oracle (index %d, "
                  "dist2 %a)",
                  k, q, out[q].index, out[q].dist2, want_nb[q].index, want_nb[q].dist2);
    free(want_nb);
    free(out);
}

// ---- cross pairs between grid A and grid B ----

enum { NBF_MAX_CROSS = NBF_MAX_POINTS * NBF_MAX_POINTS };

typedef struct nbfCrossSink {
    nbPair got[NBF_MAX_CROSS + 1];
    int64_t n;
    int64_t stop_after;
    int32_t na;
    int32_t nb;
    bool overflow;
} nbfCrossSink;

static nbfCrossSink nbf_csink;
static nbPair nbf_cross_full[NBF_MAX_CROSS + 1];
static uint8_t nbf_cross_match[NBF_MAX_POINTS][NBF_MAX_POINTS];

static bool nbf_cross_visit(int32_t i, int32_t j, void *user)
{
    nbfCrossSink *k = user;
    NBF_CHECK(i >= 0 && i < k->na && j >= 0 && j < k->nb,
              "cross pair visitor got (%d, %d) with %d and %d points", i, j, k->na, k->nb);
    if (k->n >= NBF_MAX_CROSS) {
        k->overflow = true;
        return false;
    }
    k->got[k->n++] = (nbPair){i, j};
    return k->n < k->stop_after;
}

/// Cross-pair calls touch neither allocator.
static void nbf_cross_no_alloc(nbfMark m, uint64_t bcalls, const char *what)
{
    NBF_CHECK(nbf_heap.calls == m.calls && nbf_heap.frees == m.frees && nbf_bheap.calls == bcalls,
              "%s allocated or freed memory; it must not allocate", what);
}

/// Cross pairs: (A, B), (B, A), (A, A) or (B, B), at a decoded radius; the full list against
/// the brute-force cross oracle, truncated / roomy / negative capacities, count, visitor order
/// and early stop. Different dims give NB_ERR_OUT_OF_RANGE (after a non-finite radius).
static void nbf_op_cross(nbfReader *r, nbfState *ga, nbfState *gb)
{
    nbf_op = "cross_pairs";
    uint8_t mode = nbf_u8(r);
    nbfState *a = ga;
    nbfState *b = gb;
    switch (mode & 3) {
    case 0: break;
    case 1:
        a = gb;
        b = ga;
        break;
    case 2: b = ga; break;
    default: a = gb; break;
    }
    const char *pair_name = (mode & 3) == 0   ? "(A, B)"
                            : (mode & 3) == 1 ? "(B, A)"
                            : (mode & 3) == 2 ? "(A, A)"
                                              : "(B, B)";
    double radius = nbf_read_radius(r, a);
    uint8_t capm = nbf_u8(r);
    uint8_t stop = nbf_u8(r);
    unsigned want = NBF_BIT(NB_OK);
    if (!isfinite(radius))
        want = NBF_BIT(NB_ERR_NOT_FINITE);
    else if (radius < 0.0 || a->dim != b->dim)
        want = NBF_BIT(NB_ERR_OUT_OF_RANGE);
    int64_t total = 0;
    if (want == NBF_BIT(NB_OK)) {
        nboSet x = nbf_oracle_set(a);
        nboSet y = nbf_oracle_set(b);
        nbPair *w = nbo_cross_pairs(&x, &y, radius, &total);
        for (int32_t i = 0; i < a->n; i++) memset(nbf_cross_match[i], 0, (size_t)b->n);
        for (int64_t k = 0; k < total; k++) nbf_cross_match[w[k].i][w[k].j] = 1;
        free(w);
    }

    int64_t found = -7;
    nbPair *full = malloc((size_t)(total > 0 ? total : 1) * sizeof *full); // exact size
    if (full == NULL) abort();
    nbfMark m = nbf_mark();
    uint64_t bcalls = nbf_bheap.calls;
    nbStatus st = nb_grid_cross_pairs(a->grid, b->grid, radius, full, total, &found);
    nbf_cross_no_alloc(m, bcalls, "nb_grid_cross_pairs");
    nbf_log("  cross_pairs%s(dims %d, %d, points %d, %d, radius=%a, capacity=%lld) -> %s, found "
            "%lld (oracle %lld)\n",
            pair_name, a->dim, b->dim, a->n, b->n, radius, (long long)total, nb_status_str(st),
            (long long)found, (long long)total);
    nbf_expect(st, want, "nb_grid_cross_pairs");
    if (st != NB_OK) {
        free(full);
        NBF_CHECK(found == 0, "nb_grid_cross_pairs failed with %s but set *found = %lld",
                  nb_status_str(st), (long long)found);
        int64_t count = -7;
        st = nb_grid_count_cross_pairs(a->grid, b->grid, radius, &count);
        nbf_expect(st, want, "nb_grid_count_cross_pairs");
        NBF_CHECK(count == 0, "nb_grid_count_cross_pairs failed but set *count = %lld",
                  (long long)count);
        st = nb_grid_visit_cross_pairs(a->grid, b->grid, radius, nbf_never_visit_pair, NULL);
        nbf_expect(st, want, "nb_grid_visit_cross_pairs");
        nbf_cross_no_alloc(m, bcalls, "cross pair calls");
        return;
    }
    NBF_CHECK(found == total, "nb_grid_cross_pairs%s radius %a (%.17g): found %lld, oracle %lld",
              pair_name, radius, radius, (long long)found, (long long)total);
    static uint8_t seen[NBF_MAX_POINTS][NBF_MAX_POINTS];
    for (int32_t i = 0; i < a->n; i++) memset(seen[i], 0, (size_t)b->n);
    for (int64_t k = 0; k < found; k++) {
        int32_t i = full[k].i;
        int32_t j = full[k].j;
        NBF_CHECK(i >= 0 && i < a->n && j >= 0 && j < b->n,
                  "nb_grid_cross_pairs: pair #%lld is (%d, %d) with %d and %d points", (long long)k,
                  i, j, a->n, b->n);
        NBF_CHECK(!seen[i][j], "nb_grid_cross_pairs: pair (%d, %d) reported twice", i, j);
        seen[i][j] = 1;
        NBF_CHECK(nbf_cross_match[i][j],
                  "nb_grid_cross_pairs%s: pair (%d, %d) reported at radius %a but d2 = %a, r*r = "
                  "%a, bits a %#x/%#x b %#x/%#x",
                  pair_name, i, j, radius, nbo_d2(a->pts[i], b->pts[j], a->dim), radius * radius,
                  a->cat[i], a->mask[i], b->cat[j], b->mask[j]);
    }
    memcpy(nbf_cross_full, full, (size_t)total * sizeof *full);
    free(full);

    int64_t cap = 0;
    switch (capm & 7) {
    case 0: cap = 0; break;
    case 1: cap = capm >> 3; break;
    case 2: cap = total > 0 ? total - 1 : 0; break;
    case 3: cap = total / 2; break;
    case 4: cap = total + (capm >> 3); break;
    case 5: cap = -1 - (capm >> 3); break;
    case 6: cap = total > 0 ? 1 : 0; break;
    default: cap = (capm >> 3) % (total + 1); break;
    }
    nbPair *out = NULL;
    if (cap > 0 || (cap == 0 && (capm & 0x80))) {
        out = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *out);
        if (out == NULL) abort();
    }
    found = -7;
    m = nbf_mark();
    st = nb_grid_cross_pairs(a->grid, b->grid, radius, out, cap, &found);
    nbf_cross_no_alloc(m, bcalls, "nb_grid_cross_pairs");
    nbf_log("  cross_pairs(out=%s, capacity=%lld) -> %s, found %lld\n", out ? "buf" : "NULL",
            (long long)cap, nb_status_str(st), (long long)found);
    if (cap < 0) {
        nbf_expect(st, NBF_BIT(NB_ERR_OUT_OF_RANGE), "nb_grid_cross_pairs (negative capacity)");
        NBF_CHECK(found == 0, "nb_grid_cross_pairs failed but set *found = %lld", (long long)found);
    } else {
        nbf_expect(st, total > cap ? NBF_BIT(NB_ERR_BUFFER_TOO_SMALL) : NBF_BIT(NB_OK),
                   "nb_grid_cross_pairs (capacity)");
        NBF_CHECK(found == total, "nb_grid_cross_pairs capacity %lld: found %lld, full count %lld",
                  (long long)cap, (long long)found, (long long)total);
        nbf_check_same_pairs(nbf_cross_full, out, cap < total ? cap : total,
                             "nb_grid_cross_pairs (truncated)");
    }
    free(out);

    int64_t count = -7;
    st = nb_grid_count_cross_pairs(a->grid, b->grid, radius, &count);
    nbf_cross_no_alloc(m, bcalls, "nb_grid_count_cross_pairs");
    nbf_expect(st, NBF_BIT(NB_OK), "nb_grid_count_cross_pairs");
    NBF_CHECK(count == total, "nb_grid_count_cross_pairs%s radius %a: %lld, oracle %lld", pair_name,
              radius, (long long)count, (long long)total);

    for (int pass = 0; pass < 2; pass++) {
        nbfCrossSink *k = &nbf_csink;
        k->n = 0;
        k->na = a->n;
        k->nb = b->n;
        k->overflow = false;
        k->stop_after = pass == 0 ? INT64_MAX : 1 + (int64_t)stop % (total + 1);
        st = nb_grid_visit_cross_pairs(a->grid, b->grid, radius, nbf_cross_visit, k);
        nbf_cross_no_alloc(m, bcalls, "nb_grid_visit_cross_pairs");
        nbf_expect(st, NBF_BIT(NB_OK), "nb_grid_visit_cross_pairs");
        int64_t wantn = total < k->stop_after ? total : k->stop_after;
        NBF_CHECK(!k->overflow && k->n == wantn,
                  "nb_grid_visit_cross_pairs (stop after %lld): %lld calls, expected %lld",
                  (long long)k->stop_after, (long long)k->n, (long long)wantn);
        nbf_check_same_pairs(nbf_cross_full, k->got, k->n, "nb_grid_visit_cross_pairs order");
    }
}

static void nbf_op_info(nbfReader *r, nbfState *s)
{
    (void)r;
    nbf_op = "info";
    nbGridInfo info;
    nbf_info(s, &info);
    nbf_log("  info: dim %d points %d cells %lld hashed %d cell %a bytes %zu\n", info.dim,
            info.points, (long long)info.cells, info.hashed, info.cell_size, info.bytes);
    NBF_CHECK(info.points == s->info.points && info.cells == s->info.cells &&
                  info.hashed == s->info.hashed && info.cell_size == s->info.cell_size,
              "nb_grid_info changed without a build");
    int32_t units = nb_grid_pair_units(s->grid);
    NBF_CHECK(units >= 0 && (s->n > 0 || units == 0), "nb_grid_pair_units = %d with %d points",
              units, s->n);
}

static void nbf_op_fail(nbfReader *r, nbfState *s)
{
    nbf_op = "fail-schedule";
    uint8_t m = nbf_u8(r);
    (void)s;
    nbf_fail_alloc_after(m & 0x7f, (m & 0x80) != 0); // m == 0 clears the schedule
    nbf_log("  allocator: fail alloc #%llu%s\n", (unsigned long long)nbf_heap.fail_at,
            nbf_heap.fail_all ? " and every later one" : "");
}

/// NULL for each required pointer of each function (pointers are checked first, so the other
/// arguments, decoded from the input, may be anything), and the status string functions.
static void nbf_op_nulls(nbfReader *r, nbfState *s)
{
    nbf_op = "null-args";
    double radius = nbf_read_radius(r, s);
    nbGrid *g = s->grid;
    const unsigned na = NBF_BIT(NB_ERR_NULL_ARG);
    double c[3] = {0.0, 0.0, 0.0};
    nbPair pb[2];
    int32_t ib[2];
    nbNeighbor kb[2];
    int64_t f64 = -7;
    int32_t f32 = -7;
    nbGridInfo info;
    nbPoints pts = {c, 1, 0, 0, NULL, 0, NULL, 0};
    nbfMark m = nbf_mark();
    nbf_log("  null arguments (radius %a)\n", radius);

    nbf_expect(nb_grid_build(NULL, &pts, radius), na, "nb_grid_build(NULL grid)");
    nbf_expect(nb_grid_build(g, NULL, radius), na, "nb_grid_build(NULL points)");
    nbf_expect(nb_grid_reserve(NULL, 4), na, "nb_grid_reserve(NULL)");
    nbf_expect(nb_grid_info(NULL, &info), na, "nb_grid_info(NULL grid)");
    nbf_expect(nb_grid_info(g, NULL), na, "nb_grid_info(NULL info)");
    NBF_CHECK(nb_grid_count(NULL) == 0, "nb_grid_count(NULL) != 0");
    NBF_CHECK(nb_grid_memory_bytes(NULL) == 0, "nb_grid_memory_bytes(NULL) != 0");
    NBF_CHECK(nb_grid_pair_units(NULL) == 0, "nb_grid_pair_units(NULL) != 0");
    nbf_expect(nb_grid_validate(NULL), na, "nb_grid_validate(NULL)");
    nb_grid_destroy(NULL);

    nbf_expect(nb_grid_pairs(NULL, radius, pb, 2, &f64), na, "nb_grid_pairs(NULL grid)");
    nbf_expect(nb_grid_pairs(g, radius, NULL, 2, &f64), na, "nb_grid_pairs(NULL out, cap 2)");
    nbf_expect(nb_grid_pairs(g, radius, pb, 2, NULL), na, "nb_grid_pairs(NULL found)");
    nbf_expect(nb_grid_count_pairs(NULL, radius, &f64), na, "nb_grid_count_pairs(NULL grid)");
    nbf_expect(nb_grid_count_pairs(g, radius, NULL), na, "nb_grid_count_pairs(NULL count)");
    nbf_expect(nb_grid_visit_pairs(NULL, radius, nbf_never_visit_pair, NULL), na,
               "nb_grid_visit_pairs(NULL grid)");
    nbf_expect(nb_grid_visit_pairs(g, radius, NULL, NULL), na, "nb_grid_visit_pairs(NULL fn)");
    nbf_expect(nb_grid_visit_pairs_range(NULL, radius, 0, 0, nbf_never_visit_pair, NULL), na,
               "nb_grid_visit_pairs_range(NULL grid)");
    nbf_expect(nb_grid_visit_pairs_range(g, radius, 0, nb_grid_pair_units(g), NULL, NULL), na,
               "nb_grid_visit_pairs_range(NULL fn)");

    nbf_expect(nb_grid_query_radius(NULL, c, radius, NB_FILTER_ALL, ib, 2, &f32), na,
               "nb_grid_query_radius(NULL grid)");
    nbf_expect(nb_grid_query_radius(g, NULL, radius, NB_FILTER_ALL, ib, 2, &f32), na,
               "nb_grid_query_radius(NULL center)");
    nbf_expect(nb_grid_query_radius(g, c, radius, NB_FILTER_ALL, NULL, 2, &f32), na,
               "nb_grid_query_radius(NULL out, cap 2)");
    nbf_expect(nb_grid_query_radius(g, c, radius, NB_FILTER_ALL, ib, 2, NULL), na,
               "nb_grid_query_radius(NULL found)");
    nbf_expect(nb_grid_visit_radius(NULL, c, radius, NB_FILTER_ALL, nbf_never_visit, NULL), na,
               "nb_grid_visit_radius(NULL grid)");
    nbf_expect(nb_grid_visit_radius(g, NULL, radius, NB_FILTER_ALL, nbf_never_visit, NULL), na,
               "nb_grid_visit_radius(NULL center)");
    nbf_expect(nb_grid_visit_radius(g, c, radius, NB_FILTER_ALL, NULL, NULL), na,
               "nb_grid_visit_radius(NULL fn)");

    double lo[3] = {radius, radius, radius};
    double hi[3] = {radius, radius, radius};
    nbf_expect(nb_grid_query_box(NULL, NBT_BOX(lo, hi, 3), NB_FILTER_ALL, ib, 2, &f32), na,
               "nb_grid_query_box(NULL grid)");
    nbf_expect(nb_grid_query_box(g, NBT_BOX(NULL, hi, 3), NB_FILTER_ALL, ib, 2, &f32), na,
               "nb_grid_query_box(NULL lo)");
    nbf_expect(nb_grid_query_box(g, NBT_BOX(lo, NULL, 3), NB_FILTER_ALL, ib, 2, &f32), na,
               "nb_grid_query_box(NULL hi)");
    nbf_expect(nb_grid_query_box(g, NBT_BOX(lo, hi, 3), NB_FILTER_ALL, NULL, 2, &f32), na,
               "nb_grid_query_box(NULL out, cap 2)");
    nbf_expect(nb_grid_query_box(g, NBT_BOX(lo, hi, 3), NB_FILTER_ALL, ib, 2, NULL), na,
               "nb_grid_query_box(NULL found)");
    nbf_expect(nb_grid_visit_box(NULL, NBT_BOX(lo, hi, 3), NB_FILTER_ALL, nbf_never_visit, NULL),
               na, "nb_grid_visit_box(NULL grid)");
    nbf_expect(nb_grid_visit_box(g, NBT_BOX(NULL, hi, 3), NB_FILTER_ALL, nbf_never_visit, NULL), na,
               "nb_grid_visit_box(NULL lo)");
    nbf_expect(nb_grid_visit_box(g, NBT_BOX(lo, NULL, 3), NB_FILTER_ALL, nbf_never_visit, NULL), na,
               "nb_grid_visit_box(NULL hi)");
    nbf_expect(nb_grid_visit_box(g, NBT_BOX(lo, hi, 3), NB_FILTER_ALL, NULL, NULL), na,
               "nb_grid_visit_box(NULL fn)");

    nbf_expect(nb_grid_knn(NULL, c, NB_FILTER_ALL, (double)INFINITY, kb, 2, &f32), na,
               "nb_grid_knn(NULL grid)");
    nbf_expect(nb_grid_knn(g, NULL, NB_FILTER_ALL, (double)INFINITY, kb, 2, &f32), na,
               "nb_grid_knn(NULL point)");
    nbf_expect(nb_grid_knn(g, c, NB_FILTER_ALL, (double)INFINITY, NULL, 2, &f32), na,
               "nb_grid_knn(NULL out, k 2)");
    nbf_expect(nb_grid_knn(g, c, NB_FILTER_ALL, (double)INFINITY, kb, 2, NULL), na,
               "nb_grid_knn(NULL found)");

    nbf_expect(
        nb_grid_visit_knn(NULL, c, NB_FILTER_ALL, (double)INFINITY, 2, nbf_never_visit_nn, NULL),
        na, "nb_grid_visit_knn(NULL grid)");
    nbf_expect(
        nb_grid_visit_knn(g, NULL, NB_FILTER_ALL, (double)INFINITY, 2, nbf_never_visit_nn, NULL),
        na, "nb_grid_visit_knn(NULL point)");
    nbf_expect(nb_grid_visit_knn(g, c, NB_FILTER_ALL, (double)INFINITY, 2, NULL, NULL), na,
               "nb_grid_visit_knn(NULL fn)");

    nbf_expect(nb_grid_cross_pairs(NULL, g, radius, pb, 2, &f64), na,
               "nb_grid_cross_pairs(NULL a)");
    nbf_expect(nb_grid_cross_pairs(g, NULL, radius, pb, 2, &f64), na,
               "nb_grid_cross_pairs(NULL b)");
    nbf_expect(nb_grid_cross_pairs(g, g, radius, NULL, 2, &f64), na,
               "nb_grid_cross_pairs(NULL out, cap 2)");
    nbf_expect(nb_grid_cross_pairs(g, g, radius, pb, 2, NULL), na,
               "nb_grid_cross_pairs(NULL found)");
    nbf_expect(nb_grid_count_cross_pairs(NULL, g, radius, &f64), na,
               "nb_grid_count_cross_pairs(NULL a)");
    nbf_expect(nb_grid_count_cross_pairs(g, NULL, radius, &f64), na,
               "nb_grid_count_cross_pairs(NULL b)");
    nbf_expect(nb_grid_count_cross_pairs(g, g, radius, NULL), na,
               "nb_grid_count_cross_pairs(NULL count)");
    nbf_expect(nb_grid_visit_cross_pairs(NULL, g, radius, nbf_never_visit_pair, NULL), na,
               "nb_grid_visit_cross_pairs(NULL a)");
    nbf_expect(nb_grid_visit_cross_pairs(g, NULL, radius, nbf_never_visit_pair, NULL), na,
               "nb_grid_visit_cross_pairs(NULL b)");
    nbf_expect(nb_grid_visit_cross_pairs(g, g, radius, NULL, NULL), na,
               "nb_grid_visit_cross_pairs(NULL fn)");

    nbGrid *made = (nbGrid *)(void *)&info; // must be overwritten with NULL or a grid
    nbGridDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.allocator = s->custom ? &s->allocator : NULL;
    nbf_expect(nb_grid_create(&desc, NULL), na, "nb_grid_create(NULL out)");
    nbf_no_alloc(s, m, "calls with NULL arguments");
    nbStatus st = nb_grid_create(NULL, &made);
    nbf_expect(st, na | NBF_BIT(NB_OK) | NBF_BIT(NB_ERR_OUT_OF_MEMORY),
               "nb_grid_create(NULL desc)");
    if (st == NB_OK) {
        NBF_CHECK(made != NULL, "nb_grid_create(NULL desc) returned NB_OK and no grid");
        nb_grid_destroy(made);
    } else {
        NBF_CHECK(made == NULL, "nb_grid_create(NULL desc) failed but left *out non-NULL");
    }

    for (int v = -2; v <= (int)NB_STATUS_COUNT + 2; v++) {
        NBF_CHECK(nb_status_str((nbStatus)v) != NULL, "nb_status_str(%d) is NULL", v);
        NBF_CHECK(nb_status_message((nbStatus)v) != NULL, "nb_status_message(%d) is NULL", v);
    }
    NBF_CHECK(strcmp(nb_status_str(NB_ERR_NOT_FINITE), "NB_ERR_NOT_FINITE") == 0,
              "nb_status_str(NB_ERR_NOT_FINITE) is \"%s\"", nb_status_str(NB_ERR_NOT_FINITE));
    NBF_CHECK(nb_version() == NB_VERSION, "nb_version() = %#x, header says %#x",
              (unsigned)nb_version(), (unsigned)NB_VERSION);
}

// ---- create / destroy ----

/// Decodes a desc and creates the grid; when creation fails (as the input may ask), checks
/// the status and creates a plain grid instead so the operations still run.
static void nbf_create(nbfReader *r, nbfState *s, bool second)
{
    nbf_op = "create";
    uint8_t flags = nbf_u8(r);
    uint8_t failb = nbf_u8(r);
    nbGridDesc desc;
    memset(&desc, 0, sizeof desc);
    s->second = second;
    s->count_heap = NULL;
    if (second) { // grid B: malloc/free, or (bit 7 clear) the counting allocator
        s->custom = false;
        s->allocator = (nbAllocator){nbf_b_alloc, nbf_b_free, &nbf_bheap};
        if ((flags & 0x80) == 0) s->count_heap = &nbf_bheap;
        desc.allocator = s->count_heap != NULL ? &s->allocator : NULL;
    } else {
        s->custom = (flags & 0x80) == 0;
        s->allocator = nbf_allocator();
        desc.allocator = s->custom ? &s->allocator : NULL;
    }

    switch (flags & 3) {
    case 0: desc.dim = 0; break;
    case 1: desc.dim = 2; break;
    case 2: desc.dim = 3; break;
    default: {
        static const int32_t bad[8] = {1, 4, -1, 2, 3, INT32_MIN, 0, -3};
        desc.dim = bad[nbf_u8(r) & 7];
        break;
    }
    }
    switch ((flags >> 2) & 7) {
    case 0:
    case 1: desc.cell_size = 0.0; break;
    case 2: desc.cell_size = 0.25 + (double)nbf_u8(r) * 0.25; break;
    case 3: desc.cell_size = nbf_special(nbf_u8(r)); break;
    case 4: desc.cell_size = nbf_raw(r); break;
    case 5: desc.cell_size = 0.5 * (double)(1 + (nbf_u8(r) & 15)); break;
    case 6: desc.cell_size = ldexp(1.0, -(int)(nbf_u8(r) % 120)); break;
    default: desc.cell_size = 1.0; break;
    }
    switch ((flags >> 5) & 3) {
    case 0: desc.capacity_hint = 0; break;
    case 1: desc.capacity_hint = (int32_t)(nbf_u8(r) % 80); break;
    case 2: desc.capacity_hint = -1 - (int32_t)nbf_u8(r); break;
    default: {
        uint8_t b = nbf_u8(r);
        desc.capacity_hint = s->custom ? (b & 1 ? INT32_MAX : (1 << 20) << (b % 8)) : b;
        break;
    }
    }
    if (s->custom && failb != 0) nbf_fail_alloc_after(failb & 0x7f, (failb & 0x80) != 0);

    unsigned allowed = NBF_BIT(NB_OK);
    bool bad_dim = !(desc.dim == 0 || desc.dim == 2 || desc.dim == 3);
    if (!isfinite(desc.cell_size))
        allowed = NBF_BIT(NB_ERR_NOT_FINITE);
    else if (desc.cell_size < 0.0 || bad_dim || desc.capacity_hint < 0)
        allowed = NBF_BIT(NB_ERR_OUT_OF_RANGE);
    nbGrid *g = (nbGrid *)(void *)&desc; // must be overwritten
    (void)nbf_mark(); // clears nbf_heap.failed: did this create have an allocation refused?
    nbStatus st = nb_grid_create(&desc, &g);
    nbf_log("create%s(dim=%d, cell_size=%a, capacity_hint=%d, allocator=%s) -> %s\n",
            second ? " grid B" : "", desc.dim, desc.cell_size, desc.capacity_hint,
            s->custom ? "checking" : (s->count_heap ? "counting" : "NULL"), nb_status_str(st));
    if (nbf_heap.failed) allowed |= NBF_BIT(NB_ERR_OUT_OF_MEMORY);
    nbf_expect(st, allowed, "nb_grid_create");
    if (st != NB_OK) {
        NBF_CHECK(g == NULL, "nb_grid_create failed with %s but *out = %p", nb_status_str(st),
                  (void *)g);
        if (s->custom) nbf_check_no_leak("nb_grid_create (failed)");
        // Fall back to a valid desc so the rest of the input still runs.
        nbf_fail_alloc_after(0, false);
        if (bad_dim) desc.dim = (flags & 4) ? 3 : 2;
        if (!(desc.cell_size >= 0.0) || !isfinite(desc.cell_size)) desc.cell_size = 0.0;
        if (desc.capacity_hint < 0 || desc.capacity_hint > 4096) desc.capacity_hint = 0;
        st = nb_grid_create(&desc, &g);
        nbf_log("create(dim=%d, cell_size=%a, capacity_hint=%d) -> %s\n", desc.dim, desc.cell_size,
                desc.capacity_hint, nb_status_str(st));
        nbf_expect(st, NBF_BIT(NB_OK), "nb_grid_create (fallback)");
    }
    NBF_CHECK(g != NULL && g != (nbGrid *)(void *)&desc, "nb_grid_create returned NB_OK, no grid");
    s->grid = g;
    s->dim = desc.dim == 0 ? 2 : desc.dim;
    s->desc_cell = desc.cell_size; // -0.0 compares equal to 0: "from the radius"
    s->reserved = desc.capacity_hint;
    s->max_built = 0;
    s->max_dense = 0;
    s->had_hashed = false;
    s->had_ranked = false;
    s->n = 0;
    s->built = false;
    s->build_radius = 0.0;
    s->has_cat = false;
    s->has_mask = false;
    s->had_bits = false;
    s->space = 0;
    nbf_info(s, &s->info);
    NBF_CHECK(s->info.points == 0, "a new grid reports %d points", s->info.points);
    nbf_validate(s, "nb_grid_create");
}

static void nbf_destroy(nbfState *s)
{
    nb_grid_destroy(s->grid);
    s->grid = NULL;
    if (s->custom) nbf_check_no_leak("nb_grid_destroy");
    if (s->count_heap != NULL)
        NBF_CHECK(s->count_heap->live_blocks == 0 && s->count_heap->live_bytes == 0,
                  "nb_grid_destroy of grid B left %zu blocks (%zu bytes)",
                  s->count_heap->live_blocks, s->count_heap->live_bytes);
}

/// Operations on grid B (the info op's high nibble, 1-14), created from the input's next bytes
/// on first use: cross pairs (5 of 14), build B (3), recreate B, and the all-pairs, radius,
/// kNN, box and range ops run on B. Returns whether the op was quadratic.
static bool nbf_op_second(nbfReader *r, nbfState *s, nbfState *s2, uint8_t sub)
{
    if (s2->grid == NULL) nbf_create(r, s2, true);
    nbf_log("  [grid B op %u]\n", (unsigned)sub);
    switch (sub) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 13: nbf_op_cross(r, s, s2); return true;
    case 5:
    case 6:
    case 14: nbf_op_build(r, s2); return false;
    case 7:
        nbf_op = "recreate B";
        nbf_destroy(s2);
        nbf_create(r, s2, true);
        return false;
    case 8: nbf_op_pairs(r, s2); return true;
    case 9: nbf_op_radius(r, s2, true); return false;
    case 10: nbf_op_knn(r, s2, true); return true;
    case 11: nbf_op_box(r, s2, true); return false;
    default: nbf_op_range(r, s2); return true;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nbf_begin_input();
    static int blocked = -1;
    if (blocked < 0) {
        const char *e = getenv("NB_FUZZ_BLOCKED");
        blocked = e != NULL && e[0] == '1';
    }
    if (blocked) nbi_blocked_min_points = 1;
    static nbfState state;
    static nbfState state_b; // grid B, for cross pairs; created on first use
    nbfState *s = &state;
    nbfState *s2 = &state_b;
    memset(s, 0, sizeof *s);
    memset(s2, 0, sizeof *s2);
    memset(&nbf_bheap, 0, sizeof nbf_bheap);
    nbfReader rd = {data, size};
    nbfReader *r = &rd;

    nbf_step = 0;
    nbf_create(r, s, false);
    // Work budget in point pairs, so a crowd build does not make every input slow: the pair
    // operations (and kNN's insertion sort) cost about n^2 here and in the library's worst
    // case, the others about n.
    int64_t budget = 3 * (int64_t)NBF_MAX_POINTS * NBF_MAX_POINTS;
    for (nbf_step = 1; r->n > 0 && nbf_step <= NBF_MAX_OPS && budget > 0; nbf_step++) {
        uint8_t op = nbf_u8(r);
        bool quadratic = (op & 15) == 4 || (op & 15) == 5 || (op & 15) == 6 || (op & 15) == 10 ||
                         (op & 15) == 11;
        // Bit 7 of a radius, box or kNN op: its _filtered form (a filter byte follows).
        bool filtered = (op & 0x80) != 0;
        switch (op & 15) {
        case 0:
        case 1:
        case 2: nbf_op_build(r, s); break;
        case 3: nbf_op_reserve(r, s); break;
        case 4:
        case 5: nbf_op_pairs(r, s); break;
        case 6: nbf_op_range(r, s); break;
        case 7:
        case 8: nbf_op_radius(r, s, filtered); break;
        case 9: nbf_op_box(r, s, filtered); break;
        case 10:
        case 11: nbf_op_knn(r, s, filtered); break;
        case 12:
            if ((op >> 4) == 0 || (op >> 4) == 15)
                nbf_op_info(r, s);
            else
                quadratic = nbf_op_second(r, s, s2, (uint8_t)(op >> 4));
            break;
        case 13: nbf_op_fail(r, s); break;
        case 14: nbf_op_nulls(r, s); break;
        default:
            nbf_op = "recreate";
            nbf_destroy(s);
            nbf_create(r, s, false);
            break;
        }
        nbf_validate(s, nbf_op);
        if (s2->grid != NULL) nbf_validate(s2, nbf_op);
        int64_t n = s->n > s2->n ? s->n : s2->n;
        budget -= (quadratic ? n * n : 8 * n) + 64;
    }
    nbf_op = "destroy";
    nbf_destroy(s);
    if (s2->grid != NULL) nbf_destroy(s2);
    return 0;
}
