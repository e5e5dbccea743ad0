// SPDX-License-Identifier: MIT
// Built against an *installed* nearby by the install test, once through CMake's find_package
// and once through pkg-config. Checks that the headers and the library agree on the version
// and that a few queries on known points give the known answers. Exit status 0 when they do.
#include <nearby/grid.h>
#include <nearby/neighbors.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define EXPECT(c)                                                                                  \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "consumer.c:%d: check failed: %s\n", __LINE__, #c);                    \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static int pair_cmp(const void *a, const void *b)
{
    const nbPair *p = a;
    const nbPair *q = b;
    if (p->i != q->i) return p->i < q->i ? -1 : 1;
    if (p->j != q->j) return p->j < q->j ? -1 : 1;
    return 0;
}

int main(void)
{
    // The header we compiled against and the library we linked must be the same release.
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", NB_VERSION_MAJOR, NB_VERSION_MINOR, NB_VERSION_PATCH);
    EXPECT(nb_version() == (uint32_t)NB_VERSION);
    EXPECT(strcmp(want, NB_VERSION_STRING) == 0);
    EXPECT(strcmp(nb_status_str(NB_OK), "NB_OK") == 0);
    EXPECT(strcmp(nb_status_str(NB_ERR_BUFFER_TOO_SMALL), "NB_ERR_BUFFER_TOO_SMALL") == 0);

    // Six points; with r = 1 exactly three pairs are within r. Two of them are exactly 1 apart,
    // and the contract says a pair at distance r is included.
    const double xy[] = {
        0.0,  0.0, // 0
        1.0,  0.0, // 1: 1 from point 0
        0.0,  1.0, // 2: 1 from point 0, sqrt(2) from point 1
        3.0,  3.0, // 3
        3.0,  3.5, // 4: 0.5 from point 3
        -9.0, 9.0  // 5: alone
    };
    const nbPair want_pairs[] = {{0, 1}, {0, 2}, {3, 4}};
    nbPoints pts = {.data = xy, .count = 6, .dim = 2};
    nbGridDesc desc = {.dim = 2};
    nbGrid *grid = NULL;
    EXPECT(nb_grid_create(&desc, &grid) == NB_OK);
    if (grid == NULL) return 1;
    EXPECT(nb_grid_build(grid, &pts, 1.0) == NB_OK);
    EXPECT(nb_grid_count(grid) == 6);
    EXPECT(nb_grid_validate(grid) == NB_OK);

    int64_t n = -1;
    EXPECT(nb_grid_count_pairs(grid, 1.0, &n) == NB_OK);
    EXPECT(n == 3);

    // Too small a buffer says so and reports the full count.
    nbPair pairs[8];
    int64_t found = -1;
    EXPECT(nb_grid_pairs(grid, 1.0, pairs, 1, &found) == NB_ERR_BUFFER_TOO_SMALL);
    EXPECT(found == 3);
    EXPECT(nb_grid_pairs(grid, 1.0, pairs, 8, &found) == NB_OK);
    EXPECT(found == 3);
    if (found == 3) {
        qsort(pairs, 3, sizeof pairs[0], pair_cmp);
        for (int k = 0; k < 3; k++)
            EXPECT(pairs[k].i == want_pairs[k].i && pairs[k].j == want_pairs[k].j);
    }

    // Within 1 of (0.5, 0.5): points 0, 1 and 2.
    const double c[2] = {0.5, 0.5};
    int32_t idx[8];
    int32_t nidx = -1;
    EXPECT(nb_grid_query_radius(grid, c, 1.0, NB_FILTER_ALL, idx, 8, &nidx) == NB_OK);
    EXPECT(nidx == 3);
    int seen = 0;
    for (int32_t k = 0; k < nidx && k < 8; k++)
        if (idx[k] >= 0 && idx[k] < 3) seen |= 1 << idx[k];
    EXPECT(seen == 7);

    // The two nearest to (3, 3.4): point 4 (0.1 away), then point 3 (0.4 away).
    const double q[2] = {3.0, 3.4};
    nbNeighbor nn[2];
    int32_t nfound = -1;
    EXPECT(nb_grid_knn(grid, q, NB_FILTER_ALL, (double)INFINITY, nn, 2, &nfound) == NB_OK);
    EXPECT(nfound == 2);
    if (nfound == 2) EXPECT(nn[0].index == 4 && nn[1].index == 3 && nn[0].dist2 <= nn[1].dist2);

    // The same pairs as rows, both directions: 0: {1, 2}, 1: {0}, 2: {0}, 3: {4}, 4: {3}, 5: {}.
    int32_t offsets[7], nbrs[8];
    EXPECT(nb_grid_neighbor_rows(grid, 1.0, offsets, nbrs, 8, &found) == NB_OK);
    EXPECT(found == 6 && offsets[1] == 2 && offsets[5] == 6 && offsets[6] == 6);
    EXPECT(nbrs[0] == 1 && nbrs[1] == 2 && nbrs[2] == 0 && nbrs[5] == 3);

    // Bad input is a status, not a crash.
    EXPECT(nb_grid_pairs(grid, -1.0, pairs, 8, &found) == NB_ERR_OUT_OF_RANGE);

    nb_grid_destroy(grid);
    if (failures != 0) {
        fprintf(stderr, "consumer: %d check(s) failed\n", failures);
        return 1;
    }
    printf("consumer: nearby %s ok\n", NB_VERSION_STRING);
    return 0;
}
