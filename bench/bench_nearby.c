// SPDX-License-Identifier: MIT
// nearby's dense grid on the shared data sets: each frame is nb_grid_build (full rebuild from
// the caller's points) then nb_grid_pairs into a preallocated buffer, or nb_grid_count_pairs
// for the count-only set. The grid allocates through a counting nbAllocator, and the process's
// malloc is interposed as well (alloc_count.c), so "allocations per frame" covers both the
// hook and any allocation that bypasses it. Both must be 0 after the first frame.
//
//   bench_nearby DATA.f64 DIM RADIUS pairs|count RUNS DATASET_NAME
//       NBB_BUILDS_ONLY=1: RUNS builds back to back instead, one "build" line (the build's own
//       cost: in a frame it follows the pairs, whose length decides how much of the shared
//       cache the machine's other jobs take meanwhile); NBB_PAUSE_MS=T: a sleep of T ms before
//       each of those builds (the same wait for every data set).
//   bench_nearby --callgrind DATA.f64 DIM RADIUS    a first frame, then one steady-state
//                                                   frame of nearby and one of the naive
//                                                   grid (naive_grid.c), each phase in its
//                                                   own nbb_cg_* function for callgrind's
//                                                   --toggle-collect
#include "alloc_count.h"
#include "bench_common.h"
#include "counting_allocator.h"
#include "naive_grid.h"
#include "nb_pthreads.h"

#include <nearby/grid.h>

static void check(nbStatus s, const char *what)
{
    if (s != NB_OK) {
        fprintf(stderr, "bench_nearby: %s: %s\n", what, nb_status_str(s));
        exit(1);
    }
}

// ---- callgrind mode: the functions callgrind's --toggle-collect measures ----

/// Not static and never inlined, so callgrind can collect exactly these by name. Each returns
/// through an out parameter so the calls cannot be optimised away.
void nbb_cg_nearby_build(nbGrid *grid, const nbPoints *pts, double r);
void nbb_cg_nearby_pairs(const nbGrid *grid, double r, nbPair *out, int64_t cap, int64_t *found);
void nbb_cg_naive_build(NaiveGrid *g, const double *p, int32_t n, int dim, double r);
void nbb_cg_naive_pairs(const NaiveGrid *g, const double *p, double r, NaivePair *out, int64_t cap,
                        int64_t *found);

__attribute__((noinline)) void nbb_cg_nearby_build(nbGrid *grid, const nbPoints *pts, double r)
{
    check(nb_grid_build(grid, pts, r), "nb_grid_build");
}

__attribute__((noinline)) void nbb_cg_nearby_pairs(const nbGrid *grid, double r, nbPair *out,
                                                   int64_t cap, int64_t *found)
{
    check(nb_grid_pairs(grid, r, out, cap, found), "nb_grid_pairs");
}

__attribute__((noinline)) void nbb_cg_naive_build(NaiveGrid *g, const double *p, int32_t n, int dim,
                                                  double r)
{
    naive_build(g, p, n, dim, r);
}

__attribute__((noinline)) void nbb_cg_naive_pairs(const NaiveGrid *g, const double *p, double r,
                                                  NaivePair *out, int64_t cap, int64_t *found)
{
    *found = naive_pairs(g, p, r, out, cap);
}

static int callgrind_main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: bench_nearby --callgrind DATA.f64 DIM RADIUS\n");
        return 2;
    }
    int dim = atoi(argv[3]);
    double r = strtod(argv[4], NULL);
    double *p;
    int32_t n = nbb_load(argv[2], dim, &p);
    nbGridDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.dim = dim;
    nbGrid *grid;
    check(nb_grid_create(&desc, &grid), "nb_grid_create");
    nbPoints pts = {.data = p, .count = n, .dim = dim, .stride = 0};
    int64_t found = 0;
    check(nb_grid_build(grid, &pts, r), "nb_grid_build");
    nbStatus s = nb_grid_pairs(grid, r, NULL, 0, &found);
    if (s != NB_OK && s != NB_ERR_BUFFER_TOO_SMALL) check(s, "nb_grid_pairs");
    int64_t cap = found;
    nbPair *out = malloc((size_t)(cap ? cap : 1) * sizeof *out);
    if (out == NULL) return 1;
    int64_t f_nearby = 0;
    int64_t f_naive = 0;
    // The build and count above were the first frame (the one that allocates); measure the next.
    nbb_cg_nearby_build(grid, &pts, r);
    nbb_cg_nearby_pairs(grid, r, out, cap, &f_nearby);
    NaivePair *nout = malloc((size_t)(cap ? cap : 1) * sizeof *nout);
    if (nout == NULL) return 1;
    NaiveGrid g;
    memset(&g, 0, sizeof g);
    naive_build(&g, p, n, dim, r); // the naive grid's first frame; it rebuilds in the next
    nbb_cg_naive_build(&g, p, n, dim, r);
    nbb_cg_naive_pairs(&g, p, r, nout, cap, &f_naive);
    naive_free(&g);
    free(nout);
    printf("callgrind: N=%d r=%g pairs nearby=%lld naive=%lld%s\n", n, r, (long long)f_nearby,
           (long long)f_naive, f_nearby == f_naive ? "" : "  MISMATCH");
    nb_grid_destroy(grid);
    free(out);
    free(p);
    return f_nearby == f_naive ? 0 : 1;
}

// ---- timing mode ----

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--callgrind") == 0) return callgrind_main(argc, argv);
    nbbArgs a = nbb_parse_args(argc, argv, "bench_nearby");
    double *p;
    int32_t n = nbb_load(a.file, a.dim, &p);

    CountingAllocator counter;
    memset(&counter, 0, sizeof counter);
    nbAllocator alloc = {counting_alloc, counting_free, &counter};
    nbGridDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.dim = a.dim; // cell_size 0: the radius passed to nb_grid_build
    desc.allocator = &alloc;
    // NBB_THREADS=N (N > 1): the grid runs on a pool of N workers (examples/nb_pthreads.h), and
    // the lines name the peer nearby_tN.
    const char *threads_env = getenv("NBB_THREADS");
    const int threads = threads_env != NULL ? atoi(threads_env) : 1;
    char peer[32] = "nearby";
    nbxPool pool;
    nbTasks tasks;
    if (threads > 1) {
        if (nbx_pool_start(&pool, threads) != 0) return 1;
        tasks = nbx_pool_tasks(&pool);
        desc.tasks = &tasks;
        snprintf(peer, sizeof peer, "nearby_t%d", threads);
    }
    nbGrid *grid;
    check(nb_grid_create(&desc, &grid), "nb_grid_create");
    nbPoints pts = {.data = p, .count = n, .dim = a.dim, .stride = 0};

    // First frame: the only one allowed to allocate. It also sizes the output buffer.
    check(nb_grid_build(grid, &pts, a.radius), "nb_grid_build");
    int64_t expect = 0;
    check(nb_grid_count_pairs(grid, a.radius, &expect), "nb_grid_count_pairs");
    int64_t cap = a.count_only ? 0 : expect;
    nbPair *out = cap ? malloc((size_t)cap * sizeof *out) : NULL;
    if (cap && out == NULL) return 1;
    int64_t found = 0;
    if (!a.count_only) check(nb_grid_pairs(grid, a.radius, out, cap, &found), "nb_grid_pairs");
    const uint64_t first_frame_allocs = counter.allocs;

    int64_t t_build[NBB_MAX_RUNS];
    if (getenv("NBB_BUILDS_ONLY") != NULL && atoi(getenv("NBB_BUILDS_ONLY")) != 0) {
        const char *pause_env = getenv("NBB_PAUSE_MS");
        const long pause_ms = pause_env != NULL ? atol(pause_env) : 0;
        const uint64_t c0 = counter.allocs;
        for (int run = 0; run < a.runs; run++) {
            if (pause_ms > 0) {
                struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
                nanosleep(&ts, NULL);
            }
            const int64_t t0 = nbb_now_ns();
            check(nb_grid_build(grid, &pts, a.radius), "nb_grid_build");
            t_build[run] = nbb_now_ns() - t0;
        }
        nbb_emit(peer, &a, "build", n, t_build, (double)(counter.allocs - c0) / (double)a.runs,
                 nb_grid_memory_bytes(grid), "nb_grid_memory_bytes", -1, 0);
        nb_grid_destroy(grid);
        if (threads > 1) nbx_pool_stop(&pool);
        free(out);
        free(p);
        return 0;
    }
    int64_t t_pairs[NBB_MAX_RUNS];
    int64_t t_frame[NBB_MAX_RUNS];
    uint64_t hook_build = 0;
    uint64_t hook_pairs = 0;
    uint64_t malloc_calls = 0;
    for (int run = 0; run < a.runs; run++) {
        uint64_t m0 = nbb_alloc_calls();
        uint64_t c0 = counter.allocs;
        int64_t t0 = nbb_now_ns();
        nbStatus sb = nb_grid_build(grid, &pts, a.radius);
        int64_t t1 = nbb_now_ns();
        uint64_t c1 = counter.allocs;
        nbStatus sp = a.count_only ? nb_grid_count_pairs(grid, a.radius, &found)
                                   : nb_grid_pairs(grid, a.radius, out, cap, &found);
        int64_t t2 = nbb_now_ns();
        hook_build += c1 - c0;
        hook_pairs += counter.allocs - c1;
        malloc_calls += nbb_alloc_calls() - m0;
        check(sb, "nb_grid_build");
        check(sp, a.count_only ? "nb_grid_count_pairs" : "nb_grid_pairs");
        t_build[run] = t1 - t0;
        t_pairs[run] = t2 - t1;
        t_frame[run] = t2 - t0;
    }
    if (found != expect)
        fprintf(stderr, "bench_nearby: MISMATCH: nb_grid_pairs found %lld, count_pairs %lld\n",
                (long long)found, (long long)expect);
    // nb_grid_memory_bytes is what nearby says it holds; the counting allocator's live bytes
    // are what it actually has allocated. Report the larger, and say if they disagree.
    size_t bytes = nb_grid_memory_bytes(grid);
    if (counter.live > bytes + 4096)
        fprintf(stderr,
                "bench_nearby: note: nb_grid_memory_bytes=%zu but %zu bytes are allocated "
                "through the allocator (%s)\n",
                bytes, counter.live, a.dataset);
    const char *method = "nb_grid_memory_bytes";
    if (counter.live > bytes) {
        bytes = counter.live;
        method = "allocator_live";
    }
    if (malloc_calls != 0)
        fprintf(stderr, "bench_nearby: %llu malloc calls bypassed the allocator in %d frames\n",
                (unsigned long long)malloc_calls, a.runs);
    nbGridInfo info;
    if (nb_grid_info(grid, &info) == NB_OK)
        fprintf(stderr,
                "bench_nearby: %s: cells=%lld hashed=%d ranked=%d cell_size=%.17g bytes=%zu "
                "first-frame allocs=%llu\n",
                a.dataset, (long long)info.cells, (int)info.hashed, (int)info.ranked,
                info.cell_size, info.bytes, (unsigned long long)first_frame_allocs);
    uint64_t sum = 0;
    for (int64_t k = 0; k < (found < cap ? found : cap); k++)
        sum += nbb_pair_hash((uint32_t)out[k].i, (uint32_t)out[k].j);
    const char *op = a.count_only ? "count" : "pairs";
    double per_run = (double)a.runs;
    double extra = (double)malloc_calls / per_run; // allocations that bypassed the hook
    nbb_emit(peer, &a, "build", n, t_build, (double)hook_build / per_run + extra, bytes, method, -1,
             0);
    nbb_emit(peer, &a, op, n, t_pairs, (double)hook_pairs / per_run, bytes, method, found, sum);
    nbb_emit(peer, &a, "frame", n, t_frame, (double)(hook_build + hook_pairs) / per_run + extra,
             bytes, method, found, sum);
    nb_grid_destroy(grid);
    if (threads > 1) nbx_pool_stop(&pool);
    free(out);
    free(p);
    return 0;
}
