// SPDX-License-Identifier: MIT
// A grid built over an oracle set (nb_oracle.h) for the tests that compare the grid's answers
// with brute force: the default desc but the set's dimension, built for radius r. Kept apart
// from nb_oracle.h, which stays free of the grid's API.
#ifndef NB_TEST_GRID_H
#define NB_TEST_GRID_H

#include "nb_oracle.h"

#include <nearby/grid.h>

// The grid of set s built for radius r, or NULL when the create or the build fails.
static inline nbGrid *nbt_grid_build(const nboSet *s, double r)
{
    nbGridDesc desc = {0};
    desc.dim = s->dim;
    nbGrid *g = NULL;
    if (nb_grid_create(&desc, &g) != NB_OK) return NULL;
    nbPoints pts = nbo_points(s);
    if (nb_grid_build(g, &pts, r) != NB_OK) {
        nb_grid_destroy(g);
        return NULL;
    }
    return g;
}

#endif
