// SPDX-License-Identifier: MIT
// Helpers shared by the benchmark runners (C and C++): timing, loading the shared .f64 data
// files, heap accounting, an order-independent pair checksum and the raw CSV line every
// runner prints. Header-only so the C++ nanoflann runner can use it too. Not part of nearby.
#ifndef NB_BENCH_COMMON_H
#define NB_BENCH_COMMON_H

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef NBB_FLAGS
#define NBB_FLAGS "?"
#endif

#if defined(__clang__)
#define NBB_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define NBB_COMPILER "gcc " __VERSION__
#else
#define NBB_COMPILER "unknown"
#endif

#define NBB_MAX_RUNS 64

/// Monotonic wall-clock time in nanoseconds.
static inline int64_t nbb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

static inline int nbb_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a;
    int64_t y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/// Minimum and median of `n` samples (sorts a copy). For an even n, the lower median.
static inline void nbb_stats(const int64_t *samples, int n, int64_t *min_ns, int64_t *median_ns)
{
    int64_t tmp[NBB_MAX_RUNS];
    if (n > NBB_MAX_RUNS) n = NBB_MAX_RUNS;
    memcpy(tmp, samples, (size_t)n * sizeof tmp[0]);
    qsort(tmp, (size_t)n, sizeof tmp[0], nbb_cmp_i64);
    *min_ns = tmp[0];
    *median_ns = tmp[(n - 1) / 2];
}

/// Reads a raw little-endian float64 file of interleaved coordinates. Returns the number of
/// points (file size / (8 * dim)) and a malloc'd array in *out, or exits with a message.
static inline int32_t nbb_load(const char *path, int dim, double **out)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "bench: cannot open %s (run gen_data first)\n", path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    size_t per = (size_t)dim * sizeof(double);
    if (size <= 0 || (size_t)size % per != 0) {
        fprintf(stderr, "bench: %s: size %ld is not a multiple of %zu\n", path, size, per);
        exit(2);
    }
    size_t n = (size_t)size / per;
    double *p = (double *)malloc((size_t)size);
    if (p == NULL || fread(p, per, n, f) != n) {
        fprintf(stderr, "bench: cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    *out = p;
    return (int32_t)n;
}

/// Bytes currently allocated through malloc (arena + mmapped chunks), from glibc's mallinfo2.
/// The difference across a build is what the structure holds, malloc overhead included.
static inline size_t nbb_heap_bytes(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/// Order-independent checksum of a set of unordered pairs: the sum (mod 2^64) of a strong mix
/// of (min, max). Two peers with the same count and checksum found the same pairs (with
/// overwhelming probability). Mirrored in numpy by bench_ckdtree.py.
static inline uint64_t nbb_pair_hash(uint32_t a, uint32_t b)
{
    uint32_t lo = a < b ? a : b;
    uint32_t hi = a < b ? b : a;
    uint64_t x = ((uint64_t)lo << 32) | hi;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/// Which arguments every runner takes: DATA_FILE DIM RADIUS MODE RUNS DATASET_NAME.
typedef struct nbbArgs {
    const char *file;
    int dim;
    double radius;
    int count_only; // MODE "count": count pairs without writing them; "pairs": write them
    int runs;
    const char *dataset;
} nbbArgs;

static inline nbbArgs nbb_parse_args(int argc, char **argv, const char *prog)
{
    nbbArgs a;
    if (argc != 7) {
        fprintf(stderr, "usage: %s DATA.f64 DIM RADIUS pairs|count RUNS DATASET_NAME\n", prog);
        exit(2);
    }
    a.file = argv[1];
    a.dim = atoi(argv[2]);
    a.radius = strtod(argv[3], NULL);
    a.count_only = strcmp(argv[4], "count") == 0;
    a.runs = atoi(argv[5]);
    a.dataset = argv[6];
    if ((a.dim != 2 && a.dim != 3) || !(a.radius > 0.0) || a.runs < 1 || a.runs > NBB_MAX_RUNS ||
        (!a.count_only && strcmp(argv[4], "pairs") != 0)) {
        fprintf(stderr, "%s: bad arguments\n", prog);
        exit(2);
    }
    return a;
}

/// The columns of the runners' CSV lines, in order (bench/report.py: RAW_FIELDS). The lines
/// are printed without this header.
#define NBB_RAW_HEADER                                                                             \
    "peer,dataset,operation,n_points,runs,min_ns,median_ns,allocs_per_frame,bytes_held,"           \
    "bytes_method,pairs,checksum,compiler,flags"

/// One raw CSV line. allocs_per_frame < 0 and bytes_held == 0 mean "not measured".
static inline void nbb_emit(const char *peer, const nbbArgs *a, const char *op, int32_t n,
                            const int64_t *samples, double allocs_per_frame, size_t bytes,
                            const char *bytes_method, int64_t pairs, uint64_t checksum)
{
    int64_t mn;
    int64_t md;
    nbb_stats(samples, a->runs, &mn, &md);
    char allocs[32];
    if (allocs_per_frame < 0.0)
        snprintf(allocs, sizeof allocs, "%s", "");
    else
        snprintf(allocs, sizeof allocs, "%g", allocs_per_frame);
    printf("%s,%s,%s,%d,%d,%lld,%lld,%s,%zu,%s,%lld,%016llx,%s,%s\n", peer, a->dataset, op, n,
           a->runs, (long long)mn, (long long)md, allocs, bytes, bytes_method, (long long)pairs,
           (unsigned long long)checksum, NBB_COMPILER, NBB_FLAGS);
    fflush(stdout);
}

#endif
