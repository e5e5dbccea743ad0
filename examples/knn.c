// SPDX-License-Identifier: MIT
// knn: the k nearest neighbours of a few query points among N random points in 3D.
//
//   knn [N]     N points in the unit cube (default 100000), k = 5
//
// nb_grid_knn searches outward from the query's cell ring by ring and stops when no unseen
// cell can hold anything nearer. The caller's output array doubles as the search heap, so the
// query allocates nothing and many threads may run queries on one grid at once.
#include <nearby/grid.h>

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { K = 5 };

static void check(const char *call, nbStatus status)
{
    if (status == NB_OK) return;
    // For these calls: NB_ERR_NOT_FINITE means a NaN or infinite coordinate, NB_ERR_OUT_OF_RANGE
    // a negative k or a bad dim or cell size, NB_ERR_OUT_OF_MEMORY a failed allocation (the grid
    // is unchanged), NB_ERR_INTERNAL a bug in nearby. knn never returns NB_ERR_BUFFER_TOO_SMALL:
    // `out` must hold k entries, and *found = min(k, N).
    fprintf(stderr, "knn: %s: %s (%s)\n", call, nb_status_str(status), nb_status_message(status));
    exit(1);
}

static uint64_t rng_state = 11;
static double uniform01(void) // splitmix64: deterministic, so every run is the same
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

// Brute force for the check: is `index` at distance^2 `d2` among the k nearest of `q`? Counts
// the points strictly nearer (or equally near with a lower index, nearby's tie order).
static bool rank_matches(const double *xyz, int32_t n, const double *q, int32_t rank, int32_t index,
                         double d2)
{
    int32_t before = 0;
    for (int32_t i = 0; i < n; i++) {
        double dx = xyz[3 * i] - q[0];
        double dy = xyz[3 * i + 1] - q[1];
        double dz = xyz[3 * i + 2] - q[2];
        double e2 = dx * dx + dy * dy + dz * dz;
        before += e2 < d2 || (e2 == d2 && i < index);
    }
    return before == rank;
}

int main(int argc, char **argv)
{
    // The optional size argument: digits only.
    char *end = NULL;
    long n = argc > 1 ? strtol(argv[1], &end, 10) : 100000;
    bool bad = argc > 2 || (argc > 1 && (end == argv[1] || *end != '\0'));
    if (bad || n < 0 || n > INT32_MAX / 3) {
        fprintf(stderr, "usage: knn [N]   (N >= 0 points)\n");
        return 2;
    }
    const int32_t count = (int32_t)n;
    double *xyz = malloc((size_t)count * 3 * sizeof *xyz);
    if (xyz == NULL && count > 0) return 1;
    for (int32_t i = 0; i < 3 * count; i++) xyz[i] = uniform01();

    // For kNN there is no radius to tune for, so set the cell size directly: cells holding
    // about k points each let most queries finish within one ring of cells. The radius passed
    // to nb_grid_build only picks the cell size when desc.cell_size is 0, so here it is 0.
    nbGridDesc desc = {.dim = 3, .cell_size = cbrt(K / (count > 0 ? (double)count : 1.0))};
    nbGrid *grid = NULL;
    check("nb_grid_create", nb_grid_create(&desc, &grid));
    nbPoints points = {.data = xyz, .count = count, .dim = 3};
    check("nb_grid_build", nb_grid_build(grid, &points, 0.0));

    // Queries may lie anywhere: inside the cloud, on its edge, or far outside it.
    const double queries[][3] = {{0.5, 0.5, 0.5}, {0.0, 0.0, 0.0}, {0.9, 0.1, 0.3}, {5, -3, 2}};
    const int32_t nq = (int32_t)(sizeof queries / sizeof queries[0]);
    int status = 0;
    for (int32_t q = 0; q < nq; q++) {
        nbNeighbor nearest[K]; // the answer, and nearby's scratch heap while it searches
        int32_t found = 0;
        check("nb_grid_knn",
              nb_grid_knn(grid, queries[q], NB_FILTER_ALL, (double)INFINITY, nearest, K, &found));

        printf("nearest %" PRId32 " to (%g, %g, %g):", found, queries[q][0], queries[q][1],
               queries[q][2]);
        for (int32_t k = 0; k < found; k++) // nearest first; dist2 is the squared distance
            printf(" #%" PRId32 " at %.4f%s", nearest[k].index, sqrt(nearest[k].dist2),
                   k + 1 < found ? "," : "\n");
        if (found == 0) printf(" none\n");

        // Check against brute force while N is small enough for it to be quick.
        if (found != (count < K ? count : K)) status = 1;
        for (int32_t k = 0; k < found && count <= 50000; k++)
            if (!rank_matches(xyz, count, queries[q], k, nearest[k].index, nearest[k].dist2)) {
                fprintf(stderr, "knn: query %" PRId32 ": neighbour %" PRId32 " is wrong\n", q, k);
                status = 1;
            }
    }

    nb_grid_destroy(grid);
    free(xyz);
    return status;
}
