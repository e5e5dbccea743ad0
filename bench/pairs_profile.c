// SPDX-License-Identifier: MIT
// One corpus set's build and all-pairs count, for instruction counts of the pair walk:
//   valgrind --tool=callgrind --toggle-collect=nb_grid_count_pairs
//            build/bench/pairs_profile sphere3d 200000 [cell_over_r] [pairs | time]
// builds the grid as a user would (zeroed desc but dim, or cell_size = cell_over_r * r) at the
// set's own radius, then counts its pairs (or, with `pairs`, writes them). Prints the grid's
// shape and the pairs found, so that callgrind's count of the walk divides into instructions a
// pair and a point. `time`: the median of 15 counts and of 15 writes of all pairs, in ms (for
// alternating runs of two builds). `build`: the minimum and median of 15 builds into a fresh grid
// (create + build + destroy) and of 15 rebuilds of one grid, in ms; on a loaded machine the
// minimum of alternating runs is the steadier figure. `cpu`: the minimum and median thread CPU
// time of 21 fresh builds and of 21 fresh builds + all pairs written (the corpus' `pairs` cell),
// in ms: the other jobs' load moves wall time far more than this thread's own time. `queries`:
// radius and 8-nearest queries at every 10th point, for callgrind (run_queries). Not part of
// nearby.
#include "corpus.h"

#include <nearby/grid.h>

#include <math.h>

#include "bench_common.h"

// The medians of 15 counts and 15 writes of all pairs on grid g.
static void time_pairs(const nbGrid *g, double r, int64_t found)
{
    enum { RUNS = 15 };
    int64_t tc[RUNS], tp[RUNS], mn, mc, mp;
    nbPair *out = malloc((size_t)(found > 0 ? found : 1) * sizeof *out);
    if (out == NULL) return;
    for (int i = 0; i < RUNS; i++) {
        int64_t m = 0, t0 = nbb_now_ns();
        nb_grid_count_pairs(g, r, &m);
        tc[i] = nbb_now_ns() - t0;
        t0 = nbb_now_ns();
        nb_grid_pairs(g, r, out, found, &m);
        tp[i] = nbb_now_ns() - t0;
    }
    free(out);
    nbb_stats(tc, RUNS, &mn, &mc);
    nbb_stats(tp, RUNS, &mn, &mp);
    printf("time count %.3f ms pairs %.3f ms (medians of %d)\n", (double)mc / 1e6, (double)mp / 1e6,
           RUNS);
}

// The minimum and median of 15 fresh builds and of 15 rebuilds of v at radius r.
static void time_builds(const nbGridDesc *desc, const nbPoints *v, double r)
{
    enum { RUNS = 15 };
    int64_t tf[RUNS], tr[RUNS], fmin, fmed, rmin, rmed;
    nbGrid *keep = NULL;
    if (nb_grid_create(desc, &keep) != NB_OK) return;
    for (int i = 0; i < RUNS; i++) {
        nbGrid *g = NULL;
        int64_t t0 = nbb_now_ns();
        if (nb_grid_create(desc, &g) == NB_OK) nb_grid_build(g, v, r);
        nb_grid_destroy(g);
        tf[i] = nbb_now_ns() - t0;
        t0 = nbb_now_ns();
        nb_grid_build(keep, v, r);
        tr[i] = nbb_now_ns() - t0;
    }
    nb_grid_destroy(keep);
    nbb_stats(tf, RUNS, &fmin, &fmed);
    nbb_stats(tr, RUNS, &rmin, &rmed);
    printf("time fresh build %.3f ms (median %.3f) rebuild %.3f ms (median %.3f), minima of %d\n",
           (double)fmin / 1e6, (double)fmed / 1e6, (double)rmin / 1e6, (double)rmed / 1e6, RUNS);
}

// This thread's CPU time in nanoseconds.
static int64_t cpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

// The minimum and median thread CPU time of 21 fresh builds of v at radius r, and of 21 fresh
// builds each followed by writing all `found` pairs.
static void time_cpu(const nbGridDesc *desc, const nbPoints *v, double r, int64_t found)
{
    enum { RUNS = 21 };
    int64_t tb[RUNS], tp[RUNS], bmin, bmed, pmin, pmed;
    nbPair *out = malloc((size_t)(found > 0 ? found : 1) * sizeof *out);
    if (out == NULL) return;
    for (int i = 0; i < RUNS; i++) {
        for (int with_pairs = 0; with_pairs <= 1; with_pairs++) {
            nbGrid *g = NULL;
            int64_t m = 0;
            const int64_t t0 = cpu_now_ns();
            if (nb_grid_create(desc, &g) == NB_OK && nb_grid_build(g, v, r) == NB_OK && with_pairs)
                nb_grid_pairs(g, r, out, found, &m);
            nb_grid_destroy(g);
            (with_pairs ? tp : tb)[i] = cpu_now_ns() - t0;
        }
    }
    free(out);
    nbb_stats(tb, RUNS, &bmin, &bmed);
    nbb_stats(tp, RUNS, &pmin, &pmed);
    printf("cpu build %.3f ms (median %.3f) build+pairs %.3f ms (median %.3f), minima of %d\n",
           (double)bmin / 1e6, (double)bmed / 1e6, (double)pmin / 1e6, (double)pmed / 1e6, RUNS);
}

// Radius queries (the set's radius) and 8-nearest searches centred on every 10th point, for
// callgrind (--toggle-collect=nb_grid_query_radius or nb_grid_knn). Returns what they found.
static int64_t run_queries(const nbGrid *g, const nbbCorpus *c)
{
    int32_t out[4096], found = 0;
    nbNeighbor nb[8];
    int64_t total = 0;
    const nbFilter all = NB_FILTER_ALL;
    for (int32_t i = 0; i < c->n; i += 10) {
        const double *q = c->data + (size_t)i * (size_t)c->dim;
        if (nb_grid_query_radius(g, q, c->radius, all, out, 4096, &found) == NB_OK) total += found;
        if (nb_grid_knn(g, q, all, INFINITY, nb, 8, &found) == NB_OK) total += found;
    }
    return total;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(
            stderr,
            "usage: pairs_profile SET N [cell_over_r] [pairs | time | build | cpu | queries]\n");
        return 2;
    }
    const int set = nbb_corpus_find(argv[1]);
    const int32_t n = (int32_t)atol(argv[2]);
    const double ratio = argc > 3 ? atof(argv[3]) : 0.0;
    const int write = argc > 4 && strcmp(argv[4], "pairs") == 0;
    const int timed = argc > 4 && strcmp(argv[4], "time") == 0;
    const int builds = argc > 4 && strcmp(argv[4], "build") == 0;
    const int cpu = argc > 4 && strcmp(argv[4], "cpu") == 0;
    const int queries = argc > 4 && strcmp(argv[4], "queries") == 0;
    nbbCorpus c;
    if (set < 0 || nbb_corpus_is_rects(set) || nbb_corpus_make(set, n, 0, &c) != 0) {
        fprintf(stderr, "pairs_profile: no point set %s at %s\n", argv[1], argv[2]);
        return 2;
    }
    nbGridDesc desc = {0};
    desc.dim = c.dim;
    desc.cell_size = ratio * c.radius;
    nbGrid *g = NULL;
    nbPoints v = {0};
    v.data = c.data;
    v.count = c.n;
    v.dim = c.dim;
    if (nb_grid_create(&desc, &g) != NB_OK || nb_grid_build(g, &v, c.radius) != NB_OK) {
        fprintf(stderr, "pairs_profile: build failed\n");
        return 1;
    }
    int64_t found = 0;
    nbStatus st = nb_grid_count_pairs(g, c.radius, &found);
    if (st == NB_OK && write) {
        nbPair *out = malloc((size_t)(found > 0 ? found : 1) * sizeof *out);
        st = out != NULL ? nb_grid_pairs(g, c.radius, out, found, &found) : NB_ERR_OUT_OF_MEMORY;
        free(out);
    }
    if (st == NB_OK && timed) time_pairs(g, c.radius, found);
    if (st == NB_OK && builds) time_builds(&desc, &v, c.radius);
    if (st == NB_OK && cpu) time_cpu(&desc, &v, c.radius, found);
    if (st == NB_OK && queries) printf("queries found %lld\n", (long long)run_queries(g, &c));
    nbGridInfo gi;
    nb_grid_info(g, &gi);
    printf("%s n=%d r=%.6g layout=%s cell=%.6g cells=%lld (%.3f a point) pairs=%lld status=%d\n",
           c.name, (int)c.n, c.radius,
           gi.ranked   ? "ranked"
           : gi.hashed ? "hashed"
                       : "dense",
           gi.cell_size, (long long)gi.cells, (double)gi.cells / c.n, (long long)found, (int)st);
    nb_grid_destroy(g);
    nbb_corpus_free(&c);
    return st == NB_OK ? 0 : 1;
}
