// SPDX-License-Identifier: MIT
// The C library's side of binding_overhead.py: build a grid and run all pairs (or their count)
// the way a C user does, timed in C, so that the script can set the binding's time beside the
// library's on the same data, the same cell size and in the same process.
#define _POSIX_C_SOURCE 199309L
#include <nearby/grid.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static clockid_t ref_clock = CLOCK_MONOTONIC;

// Times by the calling thread's CPU time (cpu != 0) or by the wall clock (0, the default): on
// a machine shared with other work the CPU time leaves out the time the thread waited.
void ref_set_clock(int cpu)
{
    ref_clock = cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(ref_clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// A grid over n points (row-major, dim 2 or 3) built for `build_r`, as a C user makes one.
static nbStatus ref_grid(const double *pts, int32_t n, int32_t dim, double build_r, nbGrid **grid)
{
    nbGridDesc desc = {0};
    desc.dim = dim;
    nbPoints v = {0};
    v.data = pts;
    v.count = n;
    v.dim = dim;
    v.stride = (size_t)dim * sizeof(double);
    nbStatus st = nb_grid_create(&desc, grid);
    return st == NB_OK ? nb_grid_build(*grid, &v, build_r) : st;
}

// Builds over n points (row-major, dim 2 or 3) for `build_r` (cells of about it), then counts
// (out == NULL) or writes (out: cap nbPairs) the pairs within r. Returns the nanoseconds taken
// by create + build + the pairs + destroy, or -1 on an error; *found gets the pair count.
int64_t ref_pairs(const double *pts, int32_t n, int32_t dim, double build_r, double r, nbPair *out,
                  int64_t cap, int64_t *found, double *cell)
{
    int64_t t0 = now_ns();
    nbGrid *grid = NULL;
    nbStatus st = ref_grid(pts, n, dim, build_r, &grid);
    if (st == NB_OK)
        st = out == NULL ? nb_grid_count_pairs(grid, r, found)
                         : nb_grid_pairs(grid, r, out, cap, found);
    nbGridInfo info;
    if (st == NB_OK && nb_grid_info(grid, &info) == NB_OK) *cell = info.cell_size;
    nb_grid_destroy(grid);
    int64_t t = now_ns() - t0;
    return st == NB_OK ? t : -1;
}

// The same output the binding returns: the pairs as 64-bit indices (nb_grid_pairs_wide), in a
// buffer of `cap` pairs allocated (and so first touched) inside the timing, as a caller that
// hands the pairs on must: create + build + malloc + the pairs + free + destroy. Nanoseconds,
// or -1 on an error.
int64_t ref_pairs_wide(const double *pts, int32_t n, int32_t dim, double build_r, double r,
                       int64_t cap, int64_t *found)
{
    int64_t t0 = now_ns();
    nbGrid *grid = NULL;
    int64_t *out = malloc((size_t)(cap > 0 ? cap : 1) * 2 * sizeof(int64_t));
    nbStatus st = out == NULL ? NB_ERR_OUT_OF_MEMORY : ref_grid(pts, n, dim, build_r, &grid);
    if (st == NB_OK) st = nb_grid_pairs_wide(grid, r, out, cap, found);
    free(out);
    nb_grid_destroy(grid);
    int64_t t = now_ns() - t0;
    return st == NB_OK ? t : -1;
}

// The binding's output from C on a warm buffer: create + build + nb_grid_pairs_wide into out
// (cap pairs of two int64, made and touched beforehand, as a C caller that reuses its buffer)
// + destroy. Nanoseconds, or -1 on an error.
int64_t ref_pairs_wide_into(const double *pts, int32_t n, int32_t dim, double build_r, double r,
                            int64_t *out, int64_t cap, int64_t *found)
{
    int64_t t0 = now_ns();
    nbGrid *grid = NULL;
    nbStatus st = ref_grid(pts, n, dim, build_r, &grid);
    if (st == NB_OK) st = nb_grid_pairs_wide(grid, r, out, cap, found);
    nb_grid_destroy(grid);
    int64_t t = now_ns() - t0;
    return st == NB_OK ? t : -1;
}

static int64_t minflt(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

// Step times on one grid: t[0] create + build, t[1] nb_grid_count_pairs, t[2] nb_grid_pairs
// into out32 (made beforehand), t[3] nb_grid_pairs_wide into out64 (made beforehand), t[4]
// malloc + nb_grid_pairs_wide + free, t[5] destroy; f[k] the page faults of each step.
int ref_steps(const double *pts, int32_t n, int32_t dim, double build_r, double r, nbPair *out32,
              int64_t *out64, int64_t cap, int64_t *t, int64_t *f)
{
    int64_t found = 0, t0 = now_ns(), f0 = minflt();
    nbGrid *grid = NULL;
    nbStatus st = ref_grid(pts, n, dim, build_r, &grid);
#define STEP(k)                                                                                    \
    do {                                                                                           \
        int64_t t1 = now_ns(), f1 = minflt();                                                      \
        t[k] = t1 - t0;                                                                            \
        f[k] = f1 - f0;                                                                            \
        t0 = now_ns();                                                                             \
        f0 = minflt();                                                                             \
    } while (0)
    STEP(0);
    if (st == NB_OK) st = nb_grid_count_pairs(grid, r, &found);
    STEP(1);
    if (st == NB_OK) st = nb_grid_pairs(grid, r, out32, cap, &found);
    STEP(2);
    if (st == NB_OK) st = nb_grid_pairs_wide(grid, r, out64, cap, &found);
    STEP(3);
    int64_t *fresh = malloc((size_t)(cap > 0 ? cap : 1) * 2 * sizeof(int64_t));
    if (st == NB_OK)
        st = fresh == NULL ? NB_ERR_OUT_OF_MEMORY : nb_grid_pairs_wide(grid, r, fresh, cap, &found);
    free(fresh);
    STEP(4);
    nb_grid_destroy(grid);
    STEP(5);
#undef STEP
    return st == NB_OK ? 0 : -1;
}

// A batch of m radius queries (q: m rows of dim doubles), counts only, as
// query_ball_point(q, r, return_length=True): create + build for `build_r` + one
// nb_grid_query_radius a query, in `order` (NULL: 0 .. m-1) + destroy. Nanoseconds, or -1.
int64_t ref_radius_counts(const double *pts, int32_t n, int32_t dim, double build_r,
                          const double *q, int64_t m, const int64_t *order, double r,
                          int64_t *counts)
{
    int64_t t0 = now_ns();
    nbGrid *grid = NULL;
    nbStatus st = ref_grid(pts, n, dim, build_r, &grid);
    for (int64_t a = 0; a < m && st == NB_OK; a++) {
        int64_t k = order != NULL ? order[a] : a;
        int32_t found = 0;
        st = nb_grid_query_radius(grid, q + k * dim, r, NB_FILTER_ALL, NULL, 0, &found);
        if (st == NB_ERR_BUFFER_TOO_SMALL) st = NB_OK;
        counts[k] = found;
    }
    nb_grid_destroy(grid);
    int64_t t = now_ns() - t0;
    return st == NB_OK ? t : -1;
}

// A batch of m k-nearest queries as query(q, k): create + build for `build_r` + one nb_grid_knn
// a query, in `order` (NULL: 0 .. m-1), into (m, k) distances (the roots) and int64 indices
// (made beforehand) + destroy. Nanoseconds, or -1.
int64_t ref_knn(const double *pts, int32_t n, int32_t dim, double build_r, const double *q,
                int64_t m, const int64_t *order, int32_t k, double *dist, int64_t *index)
{
    int64_t t0 = now_ns();
    nbGrid *grid = NULL;
    nbNeighbor *heap = malloc((size_t)k * sizeof *heap);
    nbStatus st = heap == NULL ? NB_ERR_OUT_OF_MEMORY : ref_grid(pts, n, dim, build_r, &grid);
    for (int64_t a = 0; a < m && st == NB_OK; a++) {
        int64_t at = order != NULL ? order[a] : a;
        int32_t found = 0;
        st = nb_grid_knn(grid, q + at * dim, NB_FILTER_ALL, (double)INFINITY, heap, k, &found);
        for (int32_t j = 0; j < k; j++) {
            dist[at * k + j] = j < found ? sqrt(heap[j].dist2) : (double)INFINITY;
            index[at * k + j] = j < found ? heap[j].index : n;
        }
    }
    free(heap);
    nb_grid_destroy(grid);
    int64_t t = now_ns() - t0;
    return st == NB_OK ? t : -1;
}
