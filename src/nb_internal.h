// SPDX-License-Identifier: MIT
// Private helpers shared by every structure: assertions, allocation through the hooks.
// Never installed.
#ifndef NEARBY_NB_INTERNAL_H
#define NEARBY_NB_INTERNAL_H

#include <nearby/nearby.h>

#include <stdio.h>
#include <stdlib.h>

// NB_ASSERT(cond) checks *our* invariants, never user input. On in debug builds; predefine
// NB_ASSERT to replace it. A "cannot happen" branch asserts and still returns a status.
#ifndef NB_ASSERT
#ifdef NDEBUG
#define NB_ASSERT(cond) ((void)0)
#else
#define NB_ASSERT(cond)                                                                            \
    ((cond) ? (void)0                                                                              \
            : (fprintf(stderr, "%s:%d: nearby assertion failed: %s\n", __FILE__, __LINE__, #cond), \
               abort()))
#endif
#endif

// In a validate function: one invariant. Asserts in debug builds (so a test stops where it
// broke) and returns NB_ERR_INTERNAL otherwise.
#define NBI_CHECK(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            NB_ASSERT(!"invariant broken: " #cond);                                                \
            return NB_ERR_INTERNAL;                                                                \
        }                                                                                          \
    } while (0)

// Hot helpers are forced inline in optimized builds. Sanitizer builds (NBI_NO_FORCE_INLINE, set
// by CMake with NB_SANITIZE) leave it to the compiler: instrumenting every forced copy of the
// kernels took pairs.c from 4 to 66 s to compile, for the same code paths.
#if defined(__GNUC__) && !defined(NBI_NO_FORCE_INLINE)
#define NBI_INLINE static inline __attribute__((always_inline))
#else
#define NBI_INLINE static inline
#endif

// Asks for the line holding p before it is read (nbi_prefetch) or written (nbi_prefetch_w): a
// hint, never a fault, so p may be any address near the data.
NBI_INLINE void nbi_prefetch(const void *p)
{
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

NBI_INLINE void nbi_prefetch_w(const void *p)
{
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p, 1);
#else
    (void)p;
#endif
}

// The index of the lowest set bit of m (m != 0).
NBI_INLINE int nbi_ctz64(uint64_t m)
{
#if defined(__GNUC__)
    return __builtin_ctzll(m);
#else
    int n = 0;
    while ((m & 1u) == 0) {
        m >>= 1;
        n++;
    }
    return n;
#endif
}

// The index of the highest set bit of m (m != 0).
NBI_INLINE int nbi_top_bit64(uint64_t m)
{
#if defined(__GNUC__)
    return 63 - __builtin_clzll(m);
#else
    int n = 0;
    while (m >>= 1) n++;
    return n;
#endif
}

NBI_INLINE int nbi_ctz32(uint32_t m)
{
    return nbi_ctz64(m);
}

// The number of set bits of m. Builds for a CPU without a popcount instruction (the x86-64
// baseline) get the bit-parallel sum inline rather than a call into the compiler's runtime.
NBI_INLINE int nbi_popcount64(uint64_t m)
{
#if defined(__GNUC__) && (defined(__POPCNT__) || !defined(__x86_64__))
    return __builtin_popcountll(m);
#else
    m = m - ((m >> 1) & 0x5555555555555555u);
    m = (m & 0x3333333333333333u) + ((m >> 2) & 0x3333333333333333u);
    m = (m + (m >> 4)) & 0x0F0F0F0F0F0F0F0Fu;
    return (int)((m * 0x0101010101010101u) >> 56);
#endif
}

// One stable pass of an LSD radix sort: the n keys of src placed into dst by their digit
// (key >> shift) & dmask, whose counts are in cnt (dmask + 1 entries, turned into the digit's
// next place). False, with nothing moved, when every key has the same digit (the pass would
// copy them as they are): the keys are then still in src.
NBI_INLINE bool nbi_radix_pass(const uint64_t *src, uint64_t *dst, int32_t n, int shift,
                               uint64_t dmask, int32_t *cnt)
{
    if (n < 1 || cnt[(src[0] >> shift) & dmask] == n) return false;
    int32_t sum = 0;
    for (uint64_t d = 0; d <= dmask; d++) {
        const int32_t c = cnt[d];
        cnt[d] = sum;
        sum += c;
    }
    for (int32_t i = 0; i < n; i++) dst[cnt[(src[i] >> shift) & dmask]++] = src[i];
    return true;
}

// The allocator a structure uses: the caller's hooks (NULL = malloc/free) into *out. False when
// only one of alloc / free is set: the caller returns NB_ERR_NULL_ARG.
bool nbi_allocator(const nbAllocator *user, nbAllocator *out);

// `count` elements of `elem` bytes through the hooks; NULL on failure or size overflow.
void *nbi_alloc(const nbAllocator *a, size_t count, size_t elem);
void nbi_free(const nbAllocator *a, void *ptr, size_t count, size_t elem);

// A growable buffer's storage: the pointer and how many elements it holds room for.
typedef struct nbiBuf {
    void *ptr;
    size_t cap;
} nbiBuf;

// The capacity nbi_buf_prepare gives a buffer that must hold `need` elements.
size_t nbi_buf_grown_cap(const nbiBuf *cur, size_t need);

// Prepares `next` with room for at least `need` elements of `elem` bytes, growing geometrically
// from `cur`. If `cur` already suffices, `next` = `cur` (no allocation). On failure returns false
// and leaves `cur` alone; the caller frees any other fresh buffers (see nbi_buf_commit).
bool nbi_buf_prepare(const nbAllocator *a, const nbiBuf *cur, nbiBuf *next, size_t need,
                     size_t elem);
// After every buffer was prepared: frees `cur` if `next` replaced it, and installs `next`.
void nbi_buf_commit(const nbAllocator *a, nbiBuf *cur, const nbiBuf *next, size_t elem);
// After a failure: frees `next` if it is a fresh buffer.
void nbi_buf_abandon(const nbAllocator *a, const nbiBuf *cur, const nbiBuf *next, size_t elem);

// A structure's set of buffers grown all or nothing: prepares cur[b] to hold need[b] elements
// of elem[b] bytes into next[b] for every b < count; on a failure frees what it prepared and
// returns false, every cur unchanged. The caller may then prepare more (a pool, a table) and
// either commit the set (with `keep`, each buffer's contents move along) or abandon it.
bool nbi_bufs_prepare(const nbAllocator *a, nbiBuf *const *cur, nbiBuf *next, const size_t *need,
                      const size_t *elem, int count);
void nbi_bufs_commit(const nbAllocator *a, nbiBuf *const *cur, const nbiBuf *next,
                     const size_t *elem, int count, bool keep);
void nbi_bufs_abandon(const nbAllocator *a, nbiBuf *const *cur, const nbiBuf *next,
                      const size_t *elem, int count);

// The callback form of a kNN over stored items, after its checks: `knn` fills a heap of `want`
// entries, kept on the stack up to NB_KNN_STACK and taken from `alloc` above that
// (NB_ERR_OUT_OF_MEMORY when it cannot be had); each neighbour, nearest first, then goes to
// `visit` until it says stop. (Index kNN has the same in query.c, nbi_visit_knn.)
typedef nbStatus nbiHitKnnFn(const void *ctx, nbHitNeighbor *out, int32_t k, int32_t *found);
nbStatus nbi_visit_hit_knn(const nbAllocator *alloc, int32_t want, nbiHitKnnFn *knn,
                           const void *ctx, nbHitNeighborFn *visit, void *user);

// ---- the filter rule (nbFilter in nearby.h), in one place for every structure and kernel ----

// Whether a thing with bits (cat_a, mask_a) and one with (cat_b, mask_b) may match: each one's
// category meets the other's mask. 0 or 1, without a branch.
NBI_INLINE int nbi_filter_match(uint32_t cat_a, uint32_t mask_a, uint32_t cat_b, uint32_t mask_b)
{
    return ((cat_a & mask_b) != 0) & ((cat_b & mask_a) != 0);
}

// Whether a query filter accepts a stored thing with bits (cat, mask).
NBI_INLINE bool nbi_filter_accepts(nbFilter f, uint32_t cat, uint32_t mask)
{
    return nbi_filter_match(f.category, f.mask, cat, mask) != 0;
}

// Whether bits are all ones: a thing that filters nothing (a structure counts the others, so
// that queries skip the per-point test while there are none).
NBI_INLINE bool nbi_filter_all_bits(uint32_t cat, uint32_t mask)
{
    return cat == 0xFFFFFFFFu && mask == 0xFFFFFFFFu;
}

// Whether a query filter can accept anything stored without filter bits (all ones).
NBI_INLINE bool nbi_filter_open(nbFilter f)
{
    return f.category != 0 && f.mask != 0;
}

#endif
