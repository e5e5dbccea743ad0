// SPDX-License-Identifier: MIT
// A tiny test harness: checks that name the file, line and test; a fixed default seed that every
// test prints and NB_SEED overrides; a PRNG; and allocators that count or fail on demand.
#ifndef NEARBY_NB_TEST_H
#define NEARBY_NB_TEST_H

#include <nearby/nearby.h>

#include "nb_box.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *nbt_name = "";

#define NB_CHECK(c)                                                                                \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: %s: check failed: %s\n", __FILE__, __LINE__, nbt_name, #c);    \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)
#define NB_CHECK_STATUS(expr, want)                                                                \
    do {                                                                                           \
        nbStatus nbt_st_ = (expr);                                                                 \
        if (nbt_st_ != (want)) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s returned %s, expected %s\n", __FILE__, __LINE__,        \
                    nbt_name, #expr, nb_status_str(nbt_st_), nb_status_str(want));                 \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)
#define NB_CHECK_OK(expr) NB_CHECK_STATUS(expr, NB_OK)

typedef int (*nbtFn)(void);
typedef struct nbtCase {
    const char *name;
    nbtFn fn;
} nbtCase;

static uint64_t nbt_seed = 0x6e656172627921u;
static uint64_t nbt_rng_state;

static inline uint64_t nbt_u64(void)
{
    uint64_t z = (nbt_rng_state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}
// 1 in a build with AddressSanitizer or ThreadSanitizer (gcc's macros, clang's feature test):
// the cost bounds against a scan allow for the instrumentation, which slows the library's
// walks more than a plain loop over the points.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NBT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define NBT_SANITIZED 1
#endif
#endif
#ifndef NBT_SANITIZED
#define NBT_SANITIZED 0
#endif

// Wall-clock seconds, for the tests that bound a query's cost against a scan.
static inline double nbt_seconds(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
// Uniform in [0, 1).
static inline double nbt_unit(void)
{
    return (double)(nbt_u64() >> 11) * 0x1p-53;
}
static inline double nbt_range(double lo, double hi)
{
    return lo + (hi - lo) * nbt_unit();
}
static inline int32_t nbt_int(int32_t n)
{
    return (int32_t)(nbt_u64() % (uint64_t)n);
}
// Approximately normal (sum of uniforms), mean 0, sd 1.
static inline double nbt_gauss(void)
{
    double s = 0.0;
    for (int i = 0; i < 12; i++) s += nbt_unit();
    return s - 6.0;
}

// ---- allocators ----
typedef struct nbtAlloc {
    int64_t allocs, frees, live_bytes;
    int64_t fail_at;    // the allocation number (1-based) that fails; 0 = never
    bool size_mismatch; // a free named another size than its alloc
    bool misaligned;    // an alloc asked for more alignment than the block got
} nbtAlloc;

typedef struct nbtHeader {
    size_t size;
    size_t pad;
} nbtHeader;

static void *nbt_alloc_fn(size_t size, size_t align, void *user)
{
    nbtAlloc *a = (nbtAlloc *)user;
    a->allocs++;
    if (a->fail_at > 0 && a->allocs == a->fail_at) return NULL;
    nbtHeader *h = (nbtHeader *)malloc(sizeof(nbtHeader) + size);
    if (h == NULL) return NULL;
    if (align == 0 || (align & (align - 1)) != 0 || (uintptr_t)(h + 1) % align != 0)
        a->misaligned = true;
    h->size = size;
    a->live_bytes += (int64_t)size;
    return h + 1;
}

static inline void nbt_free_fn(void *ptr, size_t size, void *user)
{
    nbtAlloc *a = (nbtAlloc *)user;
    if (ptr == NULL) return;
    nbtHeader *h = (nbtHeader *)ptr - 1;
    if (h->size != size) a->size_mismatch = true;
    a->frees++;
    a->live_bytes -= (int64_t)h->size;
    free(h);
}

// Was the allocation set to fail (fail_at) reached, and so refused?
static inline bool nbt_alloc_failed(const nbtAlloc *a)
{
    return a->fail_at > 0 && a->allocs >= a->fail_at;
}

static inline nbAllocator nbt_allocator(nbtAlloc *a)
{
    nbAllocator al = {nbt_alloc_fn, nbt_free_fn, a};
    return al;
}

static inline int nbt_run(const nbtCase *cases, size_t count, int argc, char **argv)
{
    const char *env = getenv("NB_SEED");
    if (env != NULL && *env != '\0') nbt_seed = strtoull(env, NULL, 0);
    printf("seed: NB_SEED=0x%" PRIx64 "\n", nbt_seed);
    int failed = 0, ran = 0;
    for (size_t i = 0; i < count; i++) {
        if (argc > 1 && strstr(cases[i].name, argv[1]) == NULL) continue;
        nbt_name = cases[i].name;
        nbt_rng_state = nbt_seed ^ (uint64_t)(i * 0x100000001b3u);
        double t0 = nbt_seconds();
        int r = cases[i].fn();
        ran++;
        failed += r != 0;
        printf("%s %s (%.2f s)\n", r == 0 ? "pass" : "FAIL", cases[i].name, nbt_seconds() - t0);
    }
    printf("%d passed, %d failed\n", ran - failed, failed);
    return failed == 0 ? 0 : 1;
}

#endif
