// SPDX-License-Identifier: MIT
// What every fuzz target shares: failure reporting and tracing, the input reader (u8, u16, raw
// doubles, edge-value doubles), the checking allocator, and status-set expectations. Include it
// once, from the target's .c file, after defining _POSIX_C_SOURCE (the allocator uses
// posix_memalign). The brute-force oracle is tests/nb_oracle.h.
//
// A target's LLVMFuzzerTestOneInput calls nbf_begin_input() first; checks call NBF_CHECK /
// NBF_FAIL, which print one line naming the file, line, operation number and name (nbf_step,
// nbf_op, which the target keeps up to date) and then abort().
#ifndef NEARBY_NB_FUZZ_H
#define NEARBY_NB_FUZZ_H

#include <nearby/nearby.h>

#include "../nb_box.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/// Requests above this many bytes are refused (counted as an injected failure), so a huge
/// capacity hint or reserve exercises the out-of-memory path instead of the machine's memory.
/// A target may define its own limit before including this header.
#ifndef NBF_ALLOC_LIMIT
#define NBF_ALLOC_LIMIT ((size_t)8 << 20)
#endif

// ---- failure reporting and tracing ----

static const char *nbf_op = "start"; ///< the operation being checked, for messages
static int nbf_step;                 ///< its number in the input (0: create)
static int nbf_trace = -1;           ///< NB_FUZZ_TRACE: 1 prints the decoded calls
static const char *nbf_skip_tags;    ///< NB_FUZZ_SKIP, see nbf_skip

#if defined(__GNUC__)
#define NBF_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define NBF_PRINTF(f, a)
#endif

static inline _Noreturn void nbf_fail(const char *file, int line, const char *fmt, ...)
    NBF_PRINTF(3, 4);
static inline void nbf_log(const char *fmt, ...) NBF_PRINTF(1, 2);

/// Prints "file.c:line: op #step (name): message" to stderr and aborts.
static inline _Noreturn void nbf_fail(const char *file, int line, const char *fmt, ...)
{
    const char *base = strrchr(file, '/');
    va_list ap;
    fprintf(stderr, "%s:%d: op #%d (%s): ", base != NULL ? base + 1 : file, line, nbf_step, nbf_op);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

#define NBF_FAIL(...) nbf_fail(__FILE__, __LINE__, __VA_ARGS__)
#define NBF_CHECK(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) nbf_fail(__FILE__, __LINE__, __VA_ARGS__);                                    \
    } while (0)

/// Prints to stderr when NB_FUZZ_TRACE is set.
static inline void nbf_log(const char *fmt, ...)
{
    if (nbf_trace <= 0) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

/// NB_FUZZ_SKIP="tag,tag" turns off the checks with those tags, so a campaign can go on past
/// a known, reported bug. Each target documents its tags (tests/fuzz/README.md).
static inline bool nbf_skip(const char *tag)
{
    if (nbf_skip_tags == NULL || nbf_skip_tags[0] == '\0') return false;
    size_t len = strlen(tag);
    for (const char *p = nbf_skip_tags; (p = strstr(p, tag)) != NULL; p += len) {
        bool starts = p == nbf_skip_tags || p[-1] == ',';
        bool ends = p[len] == '\0' || p[len] == ',';
        if (starts && ends) return true;
    }
    return false;
}

// ---- status expectations ----

#define NBF_BIT(s) (1u << (unsigned)(s))

/// Fails unless `got` is one of the statuses in the `allowed` bit set (NBF_BIT(status) | ...);
/// the message names the caller's line.
#define nbf_expect(got, allowed, call) nbf_expect_at(__FILE__, __LINE__, got, allowed, call)

static inline void nbf_expect_at(const char *file, int line, nbStatus got, unsigned allowed,
                                 const char *call)
{
    if ((unsigned)got < (unsigned)NB_STATUS_COUNT && (allowed & NBF_BIT(got))) return;
    char want[256] = "";
    for (int s = 0; s < NB_STATUS_COUNT; s++) {
        if (!(allowed & NBF_BIT(s))) continue;
        if (want[0]) strcat(want, " or ");
        strcat(want, nb_status_str((nbStatus)s));
    }
    nbf_fail(file, line, "%s returned %s (%d), expected %s", call, nb_status_str(got), (int)got,
             want);
}

// ---- the input reader: past the end it yields zeros ----

typedef struct nbfReader {
    const uint8_t *p;
    size_t n; ///< bytes left
} nbfReader;

static inline uint8_t nbf_u8(nbfReader *r)
{
    if (r->n == 0) return 0;
    r->n--;
    return *r->p++;
}

/// Little-endian.
static inline uint16_t nbf_u16(nbfReader *r)
{
    uint16_t lo = nbf_u8(r);
    return (uint16_t)(lo | (uint16_t)(nbf_u8(r) << 8));
}

/// Eight bytes, little-endian, as the bits of a double (any value: NaN payloads included).
static inline double nbf_raw(nbfReader *r)
{
    uint64_t bits = 0;
    for (int b = 0; b < 8; b++) bits |= (uint64_t)nbf_u8(r) << (8 * b);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/// Values that sit on an edge: zeros, NaNs, infinities, the extremes, subnormals, radii whose
/// square underflows or overflows, cell-number limits, far-from-origin values.
static inline double nbf_special(uint8_t k)
{
    switch (k % 28) {
    case 0: return 0.0;
    case 1: return -0.0;
    case 2: return (double)NAN;
    case 3: return -(double)NAN;
    case 4: return (double)INFINITY;
    case 5: return -(double)INFINITY;
    case 6: return DBL_MAX;
    case 7: return -DBL_MAX;
    case 8: return DBL_MIN;
    case 9: return DBL_TRUE_MIN;
    case 10: return -DBL_TRUE_MIN;
    case 11: return 1e-170; // r*r underflows to 0
    case 12: return 1e160;  // r*r overflows to inf
    case 13: return 0x1p62; // the cell-number limit at cell 1
    case 14: return -0x1p62;
    case 15: return 0x1p61;
    case 16: return 1e15 + 0.5;
    case 17: return 1e300;
    case 18: return -1e300;
    case 19: return 1.3407807929942596e154; // about sqrt(DBL_MAX)
    case 20: return nextafter(1.0, 0.0);
    case 21: return nextafter(1.0, 2.0);
    case 22: return 1e-300;
    case 23: return 0x1p-1023; // subnormal
    case 24: return -1.0;
    case 25: return 0.5;
    case 26: return 0x1p63;
    default: return -0.5;
    }
}

// ---- the checking allocator ----

typedef struct nbfBlock {
    void *ptr;
    size_t size;
} nbfBlock;

typedef struct nbfHeap {
    nbfBlock *blocks; ///< the live blocks
    size_t live;
    size_t cap;
    size_t live_bytes;
    uint64_t calls;   ///< alloc calls since the input started
    uint64_t frees;   ///< free calls since the input started
    uint64_t fail_at; ///< 0: never fail; else fail alloc call number fail_at (1-based)
    bool fail_all;    ///< also fail every call after fail_at
    bool failed;      ///< an alloc was refused since the last nbf_mark()
} nbfHeap;

/// The one heap of the input; nbf_allocator() hands it to the library.
static nbfHeap nbf_heap;

/// Checks the user pointer and the alignment, refuses the allocation the schedule (fail_at,
/// fail_all) or NBF_ALLOC_LIMIT asks for, records the block and fills it with garbage.
static inline void *nbf_alloc(size_t size, size_t align, void *user)
{
    nbfHeap *h = (nbfHeap *)user;
    NBF_CHECK(h == &nbf_heap, "alloc hook got user %p, not the one in the desc", user);
    NBF_CHECK(align != 0 && (align & (align - 1)) == 0 && align <= 64,
              "alloc hook got alignment %zu (not a power of two <= 64)", align);
    h->calls++;
    bool refuse = size > NBF_ALLOC_LIMIT;
    if (h->fail_at != 0 && (h->calls == h->fail_at || (h->fail_all && h->calls > h->fail_at)))
        refuse = true;
    if (refuse) {
        nbf_log("    alloc #%llu (%zu bytes, align %zu) -> NULL (injected)\n",
                (unsigned long long)h->calls, size, align);
        h->failed = true;
        return NULL;
    }
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1) != 0)
        p = NULL;
    if (p == NULL) {
        h->failed = true;
        return NULL;
    }
    memset(p, 0xA5, size); // never hand out zeroed memory
    if (h->live == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        nbfBlock *b = (nbfBlock *)realloc(h->blocks, cap * sizeof *b);
        if (b == NULL) abort();
        h->blocks = b;
        h->cap = cap;
    }
    h->blocks[h->live].ptr = p;
    h->blocks[h->live].size = size;
    h->live++;
    h->live_bytes += size;
    return p;
}

/// Checks that ptr is a live block and that size is the size it was allocated with, then
/// scribbles over it and frees it.
static inline void nbf_free(void *ptr, size_t size, void *user)
{
    nbfHeap *h = (nbfHeap *)user;
    NBF_CHECK(h == &nbf_heap, "free hook got user %p, not the one in the desc", user);
    NBF_CHECK(ptr != NULL, "free hook called with NULL (size %zu)", size);
    h->frees++;
    for (size_t b = 0; b < h->live; b++) {
        if (h->blocks[b].ptr != ptr) continue;
        NBF_CHECK(h->blocks[b].size == size,
                  "free(%p) with size %zu, but it was allocated with %zu", ptr, size,
                  h->blocks[b].size);
        h->live_bytes -= size;
        h->blocks[b] = h->blocks[--h->live];
        memset(ptr, 0x5A, size);
        free(ptr);
        return;
    }
    NBF_FAIL("free hook got %p (size %zu), which is not a live allocation", ptr, size);
}

/// The checking allocator, for a desc.
static inline nbAllocator nbf_allocator(void)
{
    nbAllocator a = {nbf_alloc, nbf_free, &nbf_heap};
    return a;
}

/// Schedules a refusal: alloc call number (calls so far + after) fails, and with `all` every
/// later one too. after == 0 clears the schedule.
static inline void nbf_fail_alloc_after(uint64_t after, bool all)
{
    nbf_heap.fail_at = after != 0 ? nbf_heap.calls + after : 0;
    nbf_heap.fail_all = after != 0 && all;
}

/// Allocator activity around one API call.
typedef struct nbfMark {
    uint64_t calls;
    uint64_t frees;
} nbfMark;

/// Marks the heap before a call (and clears nbf_heap.failed).
static inline nbfMark nbf_mark(void)
{
    nbf_heap.failed = false;
    nbfMark m = {nbf_heap.calls, nbf_heap.frees};
    return m;
}

/// Fails if anything was allocated or freed since mark m.
static inline void nbf_check_no_alloc(nbfMark m, const char *what)
{
    NBF_CHECK(nbf_heap.calls == m.calls && nbf_heap.frees == m.frees,
              "%s allocated %llu and freed %llu blocks; it must not allocate", what,
              (unsigned long long)(nbf_heap.calls - m.calls),
              (unsigned long long)(nbf_heap.frees - m.frees));
}

/// The leak check: fails if any block is still live.
static inline void nbf_check_no_leak(const char *what)
{
    NBF_CHECK(nbf_heap.live == 0, "%s left %zu blocks (%zu bytes) allocated", what, nbf_heap.live,
              nbf_heap.live_bytes);
}

/// Call first in LLVMFuzzerTestOneInput: reads NB_FUZZ_TRACE / NB_FUZZ_SKIP once, empties the
/// heap's books and resets nbf_op / nbf_step.
static inline void nbf_begin_input(void)
{
    if (nbf_trace < 0) {
        const char *t = getenv("NB_FUZZ_TRACE");
        nbf_trace = (t != NULL && t[0] != '\0' && t[0] != '0') ? 1 : 0;
        nbf_skip_tags = getenv("NB_FUZZ_SKIP");
    }
    free(nbf_heap.blocks);
    memset(&nbf_heap, 0, sizeof nbf_heap);
    nbf_op = "start";
    nbf_step = 0;
}

#endif
