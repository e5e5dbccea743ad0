// SPDX-License-Identifier: MIT
// Read-only queries are thread-safe: several threads query one grid at once (radius, box, kNN,
// and all pairs split by units) and every answer matches the single-threaded one. make test also
// runs this under ThreadSanitizer, which reports any write a query makes to shared state.
#define _POSIX_C_SOURCE 200809L
#include <nearby/grid.h>

#include "nb_oracle.h"
#include "nb_test.h"

#include <pthread.h>

// Density about 1: N points in a square of side SIDE. N is kept small enough for the O(N^2)
// pair oracle to stay quick under the sanitizers.
enum { N = 10000, THREADS = 4, QUERIES = 200, MAX_WITHIN = 512, K = 8 };
#define SIDE 100.0
#define RADIUS 2.0
#define PAIR_RADIUS 1.5

// What every thread must see: the single-threaded answers, each checked against the oracle.
typedef struct Shared {
    const nbGrid *grid;
    double centers[QUERIES][2];
    int32_t want_radius[QUERIES][MAX_WITHIN]; // in the grid's order
    int32_t want_radius_n[QUERIES];
    nbNeighbor want_knn[QUERIES][K];
} Shared;

typedef struct Job {
    const Shared *sh;
    int id;
    int failures;
    int64_t pairs;
    uint64_t pair_sum; // an order-free checksum of the pairs seen
} Job;

static uint64_t pair_key(int32_t i, int32_t j)
{
    return (uint64_t)i * 1000003u + (uint64_t)j;
}

static bool count_pair(int32_t i, int32_t j, void *user)
{
    Job *job = (Job *)user;
    job->pairs++;
    job->pair_sum += pair_key(i, j);
    return true;
}

static void *worker(void *arg)
{
    Job *job = (Job *)arg;
    const Shared *sh = job->sh;
    int32_t out[MAX_WITHIN];
    nbNeighbor nn[K];
    for (int rep = 0; rep < 3; rep++)
        for (int q = 0; q < QUERIES; q++) {
            int32_t found = -1;
            if (nb_grid_query_radius(sh->grid, sh->centers[q], RADIUS, out, MAX_WITHIN, &found) !=
                    NB_OK ||
                !nbo_same_indices(out, found, sh->want_radius[q], sh->want_radius_n[q]))
                job->failures++;
            if (nb_grid_knn(sh->grid, sh->centers[q], K, nn, &found) != NB_OK ||
                !nbo_same_neighbors(nn, found, sh->want_knn[q], K))
                job->failures++;
        }
    // this thread's share of the pair units
    const int32_t units = nb_grid_pair_units(sh->grid);
    const int32_t u0 = (int32_t)((int64_t)units * job->id / THREADS);
    const int32_t u1 = (int32_t)((int64_t)units * (job->id + 1) / THREADS);
    if (nb_grid_visit_pairs_range(sh->grid, PAIR_RADIUS, u0, u1, count_pair, job) != NB_OK)
        job->failures++;
    return NULL;
}

static int test_concurrent_queries(void)
{
    nboSet s = nbo_set_new(N, 2);
    for (int i = 0; i < 2 * N; i++) s.p[i] = nbt_range(0, SIDE);
    nbGridDesc desc = {0};
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints view = nbo_points(&s);
    NB_CHECK_OK(nb_grid_build(g, &view, PAIR_RADIUS));
    static Shared sh;
    sh.grid = g;
    for (int q = 0; q < QUERIES; q++) {
        sh.centers[q][0] = nbt_range(-5, SIDE + 5);
        sh.centers[q][1] = nbt_range(-5, SIDE + 5);
        int32_t found = -1, want_n = 0;
        NB_CHECK_OK(
            nb_grid_query_radius(g, sh.centers[q], RADIUS, sh.want_radius[q], MAX_WITHIN, &found));
        int32_t *want = nbo_radius(&s, sh.centers[q], RADIUS, &want_n);
        int32_t sorted[MAX_WITHIN];
        NB_CHECK(found == want_n);
        memcpy(sorted, sh.want_radius[q], (size_t)found * sizeof(int32_t));
        nbo_sort_indices(sorted, found);
        NB_CHECK(nbo_same_indices(sorted, found, want, want_n));
        free(want);
        sh.want_radius_n[q] = found;
        NB_CHECK_OK(nb_grid_knn(g, sh.centers[q], K, sh.want_knn[q], &found));
        nbNeighbor *want_nn = nbo_knn(&s, sh.centers[q], K, &want_n);
        NB_CHECK(want_n == K && nbo_same_neighbors(sh.want_knn[q], found, want_nn, want_n));
        free(want_nn);
    }
    int64_t want_pairs = 0;
    nbPair *all = nbo_pairs(&s, PAIR_RADIUS, &want_pairs);
    uint64_t want_sum = 0;
    for (int64_t t = 0; t < want_pairs; t++) want_sum += pair_key(all[t].i, all[t].j);
    free(all);
    NB_CHECK(want_pairs > 0);
    pthread_t tid[THREADS];
    Job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t].sh = &sh;
        jobs[t].id = t;
        jobs[t].failures = 0;
        jobs[t].pairs = 0;
        jobs[t].pair_sum = 0;
        NB_CHECK(pthread_create(&tid[t], NULL, worker, &jobs[t]) == 0);
    }
    int64_t pairs = 0;
    uint64_t sum = 0;
    for (int t = 0; t < THREADS; t++) {
        NB_CHECK(pthread_join(tid[t], NULL) == 0);
        NB_CHECK(jobs[t].failures == 0);
        pairs += jobs[t].pairs;
        sum += jobs[t].pair_sum;
    }
    NB_CHECK(pairs == want_pairs && sum == want_sum);
    NB_CHECK_OK(nb_grid_validate(g));
    nb_grid_destroy(g);
    nbo_set_free(&s);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"concurrent_queries", test_concurrent_queries},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
