// SPDX-License-Identifier: MIT
// One corpus set's radius queries, for instruction counts of the radius walk:
//   valgrind --tool=callgrind --toggle-collect=run_queries
//            build/bench/radius_profile blobs2d 25000 far [queries]
// builds the grid as bench_corpus does (zeroed desc but dim, built for the set's radius) and
// runs radius queries of one kind: `far`, from 1000 box widths away in uniform directions, each
// at its distance to its nearest point plus the set's radius (the corpus' far scenario, the
// same queries); `axis`, the same from beyond a face (its axis scenario); `inside`, at the
// points themselves at the set's radius (its radius rows' queries, every 10th point); `wide`,
// at the points at 8 times the set's radius; `xF`, at the points at F times the set's radius.
// Prints the grid's shape and the hits, so that callgrind's count divides into instructions a
// query (the table filled on first use is filled by one query before); with `time`, the median of 7
// runs of the queries in ns a query. Not part of nearby.
#include "corpus.h"

#include <nearby/grid.h>

#include <math.h>

#include "bench_common.h"

// The m queries q (radii rq) on g, their hits summed.
static int64_t run_queries(const nbGrid *g, int dim, const double *q, const double *rq, int32_t m,
                           int32_t *out, int32_t cap)
{
    int64_t total = 0;
    for (int32_t i = 0; i < m; i++) {
        int32_t found = 0;
        nb_grid_query_radius(g, q + (size_t)i * (size_t)dim, rq[i], NB_FILTER_ALL, out, cap,
                             &found);
        total += found;
    }
    return total;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: radius_profile SET N far|axis|inside|wide|xF [Q] [time]\n");
        return 2;
    }
    const int set = nbb_corpus_find(argv[1]);
    const int32_t n = (int32_t)atol(argv[2]);
    const char *kind = argv[3];
    const int32_t want = argc > 4 ? (int32_t)atol(argv[4]) : 1000;
    const int timed = argc > 5 && strcmp(argv[5], "time") == 0;
    nbbCorpus c;
    if (set < 0 || nbb_corpus_is_rects(set) || nbb_corpus_make(set, n, 0, &c) != 0 || want < 1) {
        fprintf(stderr, "radius_profile: no point set %s at %s\n", argv[1], argv[2]);
        return 2;
    }
    const int dim = c.dim;
    nbGridDesc desc = {0};
    desc.dim = dim;
    nbGrid *g = NULL;
    nbPoints v = {0};
    v.data = c.data;
    v.count = c.n;
    v.dim = dim;
    if (nb_grid_create(&desc, &g) != NB_OK || nb_grid_build(g, &v, c.radius) != NB_OK) {
        fprintf(stderr, "radius_profile: build failed\n");
        return 1;
    }
    const int far = strcmp(kind, "far") == 0, axis = strcmp(kind, "axis") == 0;
    const int32_t m = far || axis ? want : (c.n + 9) / 10 < want ? (c.n + 9) / 10 : want;
    double *q = malloc((size_t)m * (size_t)dim * sizeof *q), *rq = malloc((size_t)m * sizeof *rq);
    int32_t *out = malloc((size_t)c.n * sizeof *out);
    if (q == NULL || rq == NULL || out == NULL) return 1;
    if (far || axis) {
        nbb_corpus_far_queries(&c, axis, q, m, 0);
        for (int32_t i = 0; i < m; i++) {
            nbNeighbor nb;
            int32_t found = 0;
            nb_grid_knn(g, q + (size_t)i * (size_t)dim, NB_FILTER_ALL, (double)INFINITY, &nb, 1,
                        &found);
            rq[i] = sqrt(nb.dist2) + c.radius;
        }
    } else {
        const double r = strcmp(kind, "wide") == 0 ? 8.0 * c.radius
                         : kind[0] == 'x'          ? atof(kind + 1) * c.radius
                                                   : c.radius;
        for (int32_t i = 0; i < m; i++) {
            memcpy(q + (size_t)i * (size_t)dim, c.data + (size_t)i * 10 * (size_t)dim,
                   (size_t)dim * sizeof *q);
            rq[i] = r;
        }
    }
    // One query first, outside run_queries: the hashed layout fills its table on first use, a
    // one-time cost that callgrind's count of run_queries would otherwise spread over the queries.
    int32_t first_found = 0;
    nb_grid_query_radius(g, q, rq[0], NB_FILTER_ALL, out, c.n, &first_found);
    const int64_t hits = run_queries(g, dim, q, rq, m, out, c.n);
    if (timed) {
        enum { RUNS = 7 };
        int64_t t[RUNS], mn, md;
        for (int k = 0; k < RUNS; k++) {
            const int64_t t0 = nbb_now_ns();
            run_queries(g, dim, q, rq, m, out, c.n);
            t[k] = nbb_now_ns() - t0;
        }
        nbb_stats(t, RUNS, &mn, &md);
        printf("time %.1f ns a query (median of %d; min %.1f)\n", (double)md / m, RUNS,
               (double)mn / m);
    }
    nbGridInfo gi;
    nb_grid_info(g, &gi);
    printf("%s n=%d r=%.6g layout=%s cells=%lld %s queries=%d hits=%lld\n", c.name, (int)c.n,
           c.radius,
           gi.ranked   ? "ranked"
           : gi.hashed ? "hashed"
                       : "dense",
           (long long)gi.cells, kind, (int)m, (long long)hits);
    free(q);
    free(rq);
    free(out);
    nb_grid_destroy(g);
    nbb_corpus_free(&c);
    return 0;
}
