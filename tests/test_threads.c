// SPDX-License-Identifier: MIT
// Read-only queries are thread-safe: several threads query one grid at once (radius, box, kNN,
// and all pairs split by units) and every answer matches the single-threaded one. make test also
// runs this under ThreadSanitizer, which reports any write a query makes to shared state.
#define _POSIX_C_SOURCE 200809L
#include <nearby/grid.h>

#include "nb_test.h"

#include <pthread.h>

enum { N = 20000, THREADS = 4, QUERIES = 200 };

typedef struct Shared {
    const nbGrid *grid;
    double centers[QUERIES][2];
    int32_t want_radius[QUERIES];
    int32_t want_knn[QUERIES];
    int64_t want_pairs;
} Shared;

typedef struct Job {
    const Shared *sh;
    int id;
    int failures;
    int64_t pairs;
} Job;

static bool count_pair(int32_t i, int32_t j, void *user)
{
    (void)i;
    (void)j;
    (*(int64_t *)user)++;
    return true;
}

static void *worker(void *arg)
{
    Job *job = (Job *)arg;
    const Shared *sh = job->sh;
    int32_t out[512];
    nbNeighbor nn[8];
    for (int rep = 0; rep < 3; rep++)
        for (int q = 0; q < QUERIES; q++) {
            int32_t found = -1;
            if (nb_grid_query_radius(sh->grid, sh->centers[q], 2.0, out, 512, &found) != NB_OK ||
                found != sh->want_radius[q])
                job->failures++;
            if (nb_grid_knn(sh->grid, sh->centers[q], 8, nn, &found) != NB_OK || found != 8 ||
                nn[7].index != sh->want_knn[q])
                job->failures++;
        }
    // this thread's share of the pair units
    const int32_t units = nb_grid_pair_units(sh->grid);
    const int32_t u0 = (int32_t)((int64_t)units * job->id / THREADS);
    const int32_t u1 = (int32_t)((int64_t)units * (job->id + 1) / THREADS);
    if (nb_grid_visit_pairs_range(sh->grid, 1.5, u0, u1, count_pair, &job->pairs) != NB_OK)
        job->failures++;
    return NULL;
}

static int test_concurrent_queries(void)
{
    static double pts[2 * N];
    for (int i = 0; i < 2 * N; i++) pts[i] = nbt_range(0, 140);
    nbGridDesc desc = {0};
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints view = {.data = pts, .count = N, .dim = 2, .stride = 0};
    NB_CHECK_OK(nb_grid_build(g, &view, 1.5));
    static Shared sh;
    sh.grid = g;
    for (int q = 0; q < QUERIES; q++) {
        sh.centers[q][0] = nbt_range(-5, 145);
        sh.centers[q][1] = nbt_range(-5, 145);
        int32_t out[512], found = 0;
        nbNeighbor nn[8];
        NB_CHECK_OK(nb_grid_query_radius(g, sh.centers[q], 2.0, out, 512, &found));
        sh.want_radius[q] = found;
        NB_CHECK_OK(nb_grid_knn(g, sh.centers[q], 8, nn, &found));
        NB_CHECK(found == 8);
        sh.want_knn[q] = nn[7].index;
    }
    NB_CHECK_OK(nb_grid_count_pairs(g, 1.5, &sh.want_pairs));
    NB_CHECK(sh.want_pairs > 0);
    pthread_t tid[THREADS];
    Job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t].sh = &sh;
        jobs[t].id = t;
        jobs[t].failures = 0;
        jobs[t].pairs = 0;
        NB_CHECK(pthread_create(&tid[t], NULL, worker, &jobs[t]) == 0);
    }
    int64_t pairs = 0;
    for (int t = 0; t < THREADS; t++) {
        NB_CHECK(pthread_join(tid[t], NULL) == 0);
        NB_CHECK(jobs[t].failures == 0);
        pairs += jobs[t].pairs;
    }
    NB_CHECK(pairs == sh.want_pairs);
    NB_CHECK_OK(nb_grid_validate(g));
    nb_grid_destroy(g);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"concurrent_queries", test_concurrent_queries},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
