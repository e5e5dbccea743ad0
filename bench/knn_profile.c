// SPDX-License-Identifier: MIT
// kNN from outside a corpus set's box, for instruction counts of the grid's and the hash's kNN:
//   valgrind --tool=callgrind --toggle-collect=first_pass --toggle-collect=run_queries
//            build/bench/knn_profile uniform2d 25000 axis 1 [grid | hash | outlier] [time]
// builds the set's grid at its radius (or a spatial hash with cells of it; `outlier`: the same
// hash with one more item 1e6 from the box), then answers the scenario's 10000 queries (far,
// axis as bench_corpus draws them, or `in`: at the set's own points, every 3rd) with the k
// nearest, twice (the first pass, first_pass, pays for any lazy index; the second, run_queries,
// is the cost once it is built: toggle only it for that). Prints the sum of the distances found,
// so that two builds can be compared. `time`: the minimum of 5 passes after the first, in ns a
// query. Not part of nearby.
#include "corpus.h"

#include <nearby/grid.h>
#include <nearby/hash.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

enum { QUERIES = 10000 };

typedef struct Target {
    const nbGrid *grid;
    const nbHash *hash;
    int dim;
} Target;

// The k nearest of each of the m queries q: the sum of their squared distances.
__attribute__((always_inline)) static inline double queries(const Target *t, const double *q,
                                                            int32_t m, int32_t k)
{
    nbNeighbor nb[64];
    nbHitNeighbor hn[64];
    double sum = 0.0;
    for (int32_t i = 0; i < m; i++) {
        int32_t found = 0;
        const double *qi = q + (size_t)i * (size_t)t->dim;
        if (t->grid != NULL) {
            nb_grid_knn(t->grid, qi, NB_FILTER_ALL, (double)INFINITY, nb, k, &found);
            for (int32_t j = 0; j < found; j++) sum += nb[j].dist2;
        } else {
            nb_hash_knn(t->hash, qi, NB_FILTER_ALL, (double)INFINITY, hn, k, &found);
            for (int32_t j = 0; j < found; j++) sum += hn[j].dist2;
        }
    }
    return sum;
}

// queries() as two functions, so that callgrind can count the first pass (which pays for any
// lazy index: --toggle-collect=first_pass), the second (run_queries) or both.
double first_pass(const Target *t, const double *q, int32_t m, int32_t k);
double first_pass(const Target *t, const double *q, int32_t m, int32_t k)
{
    return queries(t, q, m, k);
}
static int32_t later_passes; // (so that the two are not folded into one function)
double run_queries(const Target *t, const double *q, int32_t m, int32_t k);
double run_queries(const Target *t, const double *q, int32_t m, int32_t k)
{
    later_passes++;
    return queries(t, q, m, k);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: knn_profile SET N far|axis|in K [grid|hash|outlier] [time]\n");
        return 2;
    }
    const int set = nbb_corpus_find(argv[1]);
    const int32_t n = (int32_t)atoi(argv[2]);
    const char *kind = argv[3];
    const int32_t k = (int32_t)atoi(argv[4]);
    const char *what = argc > 5 ? argv[5] : "grid";
    const bool timed = argc > 6 && strcmp(argv[6], "time") == 0;
    nbbCorpus c;
    if (set < 0 || k < 1 || k > 64 || nbb_corpus_make(set, n, 0, &c) != 0) {
        fprintf(stderr, "knn_profile: bad set, N or K\n");
        return 2;
    }
    double *q = malloc((size_t)QUERIES * (size_t)c.dim * sizeof *q);
    int32_t m = QUERIES;
    if (strcmp(kind, "in") == 0) {
        m = 0;
        for (int32_t i = 0; i < c.n && m < QUERIES; i += 3, m++)
            memcpy(q + (size_t)m * (size_t)c.dim, c.data + (size_t)i * (size_t)c.dim,
                   (size_t)c.dim * sizeof *q);
    } else {
        nbb_corpus_far_queries(&c, strcmp(kind, "axis") == 0, q, m, 0);
    }
    if (getenv("NBK_USE") != NULL) { // the kNN index always (1) or never (-1), as tests set it
        extern int nbi_knn_index_use;
        nbi_knn_index_use = atoi(getenv("NBK_USE"));
    }
    Target t = {NULL, NULL, c.dim};
    nbGrid *g = NULL;
    nbHash *h = NULL;
    if (strcmp(what, "grid") == 0) {
        nbGridDesc d = {0};
        d.dim = c.dim;
        nbPoints v = {0};
        v.data = c.data;
        v.count = c.n;
        v.dim = c.dim;
        if (nb_grid_create(&d, &g) != NB_OK || nb_grid_build(g, &v, c.radius) != NB_OK) return 1;
        t.grid = g;
    } else {
        nbHashDesc d = {0};
        d.cell_size = c.radius;
        d.dim = c.dim;
        if (nb_hash_create(&d, &h) != NB_OK) return 1;
        nbHandle e;
        for (int32_t i = 0; i < c.n; i++)
            nb_hash_insert(h, c.data + (size_t)i * (size_t)c.dim, (uint64_t)i, NB_FILTER_ALL, &e);
        if (strcmp(what, "outlier") == 0) {
            const double far[3] = {1e6, 1e6, 1e6};
            nb_hash_insert(h, far, (uint64_t)c.n, NB_FILTER_ALL, &e);
        }
        t.hash = h;
    }
    if (argc > 6 && strcmp(argv[6], "bench") == 0 && g != NULL) { // bench_corpus's order
        for (int r = 0; r < 5; r++) {
            const int32_t qn = r < 2 ? 200 : m;
            const int64_t t1 = nbb_now_ns();
            first_pass(&t, q, qn, k);
            printf("run %d: %d queries %.3f ms, grid bytes %zu\n", r, (int)qn,
                   (double)(nbb_now_ns() - t1) / 1e6, nb_grid_memory_bytes(g));
        }
    }
    int64_t t0 = nbb_now_ns();
    double sum = first_pass(&t, q, m, k);
    const int64_t first = nbb_now_ns() - t0;
    sum += run_queries(&t, q, m, k);
    printf("%s %s n=%d k=%d %s: %d queries, sum %.17g\n", c.name, kind, (int)c.n, (int)k, what,
           (int)m, sum);
    if (timed) {
        int64_t best = INT64_MAX;
        for (int r = 0; r < 5; r++) {
            const int64_t t1 = nbb_now_ns();
            sum += run_queries(&t, q, m, k);
            const int64_t dt = nbb_now_ns() - t1;
            best = dt < best ? dt : best;
        }
        printf("first pass %.1f ns a query, then min %.1f\n", (double)first / (double)m,
               (double)best / (double)m);
    }
    nb_grid_destroy(g);
    nb_hash_destroy(h);
    free(q);
    nbb_corpus_free(&c);
    return 0;
}
