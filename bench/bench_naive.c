// SPDX-License-Identifier: MIT
// Times the naive baseline grid (naive_grid.c): each frame frees and rebuilds the per-cell
// lists, then finds all pairs (or counts them).
//
//   bench_naive DATA.f64 DIM RADIUS pairs|count RUNS DATASET_NAME
#include "alloc_count.h"
#include "bench_common.h"
#include "naive_grid.h"

int main(int argc, char **argv)
{
    nbbArgs a = nbb_parse_args(argc, argv, "bench_naive");
    double *p;
    int32_t n = nbb_load(a.file, a.dim, &p);
    NaiveGrid g;
    memset(&g, 0, sizeof g);

    // Warm-up frame: measures the bytes the grid holds (malloc'd bytes before and after, from
    // mallinfo2, so malloc's per-block overhead counts) and learns the pair count so the output
    // buffer can be sized exactly.
    size_t heap0 = nbb_heap_bytes();
    naive_build(&g, p, n, a.dim, a.radius);
    size_t bytes = nbb_heap_bytes() - heap0;
    int64_t expect = naive_pairs(&g, p, a.radius, NULL, 0);
    int64_t cap = a.count_only ? 0 : expect;
    NaivePair *out = cap ? malloc((size_t)cap * sizeof *out) : NULL;
    if (cap && out == NULL) return 1;
    if (!a.count_only) naive_pairs(&g, p, a.radius, out, cap); // touch the buffer

    int64_t t_build[NBB_MAX_RUNS];
    int64_t t_pairs[NBB_MAX_RUNS];
    int64_t t_frame[NBB_MAX_RUNS];
    int64_t found = 0;
    uint64_t allocs_build = 0;
    uint64_t allocs_pairs = 0;
    for (int run = 0; run < a.runs; run++) {
        uint64_t c0 = nbb_alloc_calls();
        int64_t t0 = nbb_now_ns(); // build includes freeing the previous frame's lists
        naive_build(&g, p, n, a.dim, a.radius);
        int64_t t1 = nbb_now_ns();
        uint64_t c1 = nbb_alloc_calls();
        found = naive_pairs(&g, p, a.radius, out, cap);
        int64_t t2 = nbb_now_ns();
        allocs_build += c1 - c0;
        allocs_pairs += nbb_alloc_calls() - c1;
        t_build[run] = t1 - t0;
        t_pairs[run] = t2 - t1;
        t_frame[run] = t2 - t0;
    }
    if (found != expect) fprintf(stderr, "bench_naive: pair count changed between runs\n");
    uint64_t sum = 0;
    for (int64_t k = 0; k < (found < cap ? found : cap); k++)
        sum += nbb_pair_hash((uint32_t)out[k].i, (uint32_t)out[k].j);
    const char *op = a.count_only ? "count" : "pairs";
    nbb_emit("naive", &a, "build", n, t_build, (double)allocs_build / a.runs, bytes, "mallinfo2",
             -1, 0);
    nbb_emit("naive", &a, op, n, t_pairs, (double)allocs_pairs / a.runs, bytes, "mallinfo2", found,
             sum);
    nbb_emit("naive", &a, "frame", n, t_frame, (double)(allocs_build + allocs_pairs) / a.runs,
             bytes, "mallinfo2", found, sum);
    naive_free(&g);
    free(out);
    free(p);
    return 0;
}
