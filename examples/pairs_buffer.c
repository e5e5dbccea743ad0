// SPDX-License-Identifier: MIT
// Every pair of points within r, into a buffer that grows when nearby says it is too small:
// ask with a guess, and on NB_ERR_BUFFER_TOO_SMALL `found` holds the full count, so grow to it
// and ask again. (When you only need to see the pairs once, nb_grid_visit_pairs needs no buffer
// at all: the README's first example.) Checks the pairs against brute force.
//
// Build and run: cc -std=c11 pairs_buffer.c -lnearby -lm && ./a.out
#include <nearby/grid.h>

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    // Points as interleaved doubles: x0, y0, x1, y1, ...
    const double xy[] = {0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 3.0, 3.0, 3.0, 3.5};
    const int32_t n = 5;
    nbPoints points = {.data = xy, .count = n, .dim = 2}; // stride 0: packed
    const double r = 1.0;

    nbGridDesc desc = {.dim = 2}; // zero fields are defaults: the cell edge is r
    nbGrid *grid = NULL;
    nbStatus status = nb_grid_create(&desc, &grid);
    if (status == NB_OK) status = nb_grid_build(grid, &points, r);

    // Ask with a guess; on NB_ERR_BUFFER_TOO_SMALL `found` holds the full count: grow, repeat.
    int64_t capacity = 2;
    int64_t found = 0;
    nbPair *pairs = malloc((size_t)capacity * sizeof *pairs);
    while (status == NB_OK && pairs != NULL) {
        status = nb_grid_pairs(grid, r, pairs, capacity, &found);
        if (status != NB_ERR_BUFFER_TOO_SMALL) break;
        free(pairs);
        capacity = found;
        pairs = malloc((size_t)capacity * sizeof *pairs);
        status = NB_OK;
    }
    if (status != NB_OK || pairs == NULL) {
        fprintf(stderr, "pairs_buffer: %s\n", pairs ? nb_status_message(status) : "out of memory");
        nb_grid_destroy(grid);
        free(pairs);
        return 1;
    }
    for (int64_t k = 0; k < found; k++) // (0, 1), (0, 2) and (3, 4); pairs exactly r apart count
        printf("%d %d\n", (int)pairs[k].i, (int)pairs[k].j);

    // Brute force: every pair tested, the same `<= r*r` rule; each must be among the found.
    int64_t expect = 0;
    int missing = 0;
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = i + 1; j < n; j++) {
            double dx = xy[2 * i] - xy[2 * j];
            double dy = xy[2 * i + 1] - xy[2 * j + 1];
            if (dx * dx + dy * dy > r * r) continue;
            expect++;
            int seen = 0;
            for (int64_t k = 0; k < found; k++) seen |= pairs[k].i == i && pairs[k].j == j;
            missing += !seen;
        }
    free(pairs);
    nb_grid_destroy(grid);
    if (found != expect || missing != 0) {
        fprintf(stderr, "pairs_buffer: found %lld pairs, brute force %lld (%d missing)\n",
                (long long)found, (long long)expect, missing);
        return 1;
    }
    return 0;
}
