// SPDX-License-Identifier: MIT
// Cell order for the caller's arrays: nb_grid_cell_order is a permutation that groups each
// cell's points in ascending index; reordering the points by it (nb_gather) makes the next
// build's order the identity, and every answer, mapped back through the order, is unchanged.
#include "nb_test.h"

#include <nearby/grid.h>

#include <math.h>

static int cmp_pair(const void *a, const void *b)
{
    const nbPair *x = (const nbPair *)a, *y = (const nbPair *)b;
    if (x->i != y->i) return x->i < y->i ? -1 : 1;
    return x->j < y->j ? -1 : x->j > y->j;
}

// All pairs of a grid over p, sorted; *m gets the count. free() the result.
static nbPair *sorted_pairs(nbGrid *g, const double *p, int32_t n, int dim, double r, int64_t *m)
{
    nbPoints pts = {.data = p, .count = n, .dim = dim};
    if (nb_grid_build(g, &pts, r) != NB_OK || nb_grid_count_pairs(g, r, m) != NB_OK) return NULL;
    nbPair *out = (nbPair *)malloc(sizeof(nbPair) * (size_t)(*m + 1));
    int64_t found;
    if (out == NULL || nb_grid_pairs(g, r, out, *m, &found) != NB_OK || found != *m) {
        free(out);
        return NULL;
    }
    qsort(out, (size_t)*m, sizeof(nbPair), cmp_pair);
    return out;
}

static int reorder_keeps_answers(int dim, int32_t n, double r, bool lattice)
{
    double *p = (double *)malloc(sizeof(double) * (size_t)(n * dim));
    double *q = (double *)malloc(sizeof(double) * (size_t)(n * dim));
    int32_t *order = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    int32_t *again = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    char *seen = (char *)calloc((size_t)n, 1);
    const double side = dim == 2 ? sqrt((double)n) : cbrt((double)n);
    for (int32_t i = 0; i < n * dim; i++) {
        p[i] = nbt_range(-side, side);
        if (lattice) p[i] = floor(p[i]);
    }
    nbGridDesc desc = {.dim = dim};
    nbGrid *g;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    int64_t m0, m1;
    nbPair *before = sorted_pairs(g, p, n, dim, r, &m0);
    NB_CHECK(before != NULL);
    NB_CHECK_OK(nb_grid_cell_order(g, order, n, &(int32_t){0}));
    for (int32_t k = 0; k < n; k++) {
        NB_CHECK(order[k] >= 0 && order[k] < n && !seen[order[k]]);
        seen[order[k]] = 1;
    }
    NB_CHECK_OK(nb_gather(order, n, p, 0, q, 0, sizeof(double) * (size_t)dim));
    for (int32_t k = 0; k < n; k++)
        for (int a = 0; a < dim; a++) NB_CHECK(q[k * dim + a] == p[order[k] * dim + a]);
    // Reordered points are already in cell order: the next order is the identity.
    nbPair *after = sorted_pairs(g, q, n, dim, r, &m1);
    NB_CHECK(after != NULL && m1 == m0);
    NB_CHECK_OK(nb_grid_cell_order(g, again, n, &(int32_t){0}));
    for (int32_t k = 0; k < n; k++) NB_CHECK(again[k] == k);
    // Pairs of the reordered points, mapped back, are the original pairs.
    for (int64_t t = 0; t < m1; t++) {
        int32_t i = order[after[t].i], j = order[after[t].j];
        after[t].i = i < j ? i : j;
        after[t].j = i < j ? j : i;
    }
    qsort(after, (size_t)m1, sizeof(nbPair), cmp_pair);
    NB_CHECK(memcmp(before, after, sizeof(nbPair) * (size_t)m0) == 0);
    nb_grid_destroy(g);
    free(before);
    free(after);
    free(p);
    free(q);
    free(order);
    free(again);
    free(seen);
    return 0;
}

static int test_reorder_2d(void)
{
    return reorder_keeps_answers(2, 5000, 1.5, false);
}
static int test_reorder_3d_lattice(void)
{
    return reorder_keeps_answers(3, 4000, 1.0, true);
}

// One field of an array of structs, gathered into another array of structs.
static int test_gather_strided(void)
{
    typedef struct body {
        double pos[2];
        int32_t id;
        float mass;
    } body;
    body a[5], b[5];
    memset(b, 0, sizeof b);
    for (int i = 0; i < 5; i++) {
        a[i].pos[0] = i;
        a[i].pos[1] = -i;
        a[i].id = 100 + i;
        a[i].mass = (float)i;
    }
    const int32_t order[5] = {4, 2, 0, 1, 3};
    NB_CHECK_OK(nb_gather(order, 5, &a[0].id, sizeof(body), &b[0].id, sizeof(body), 4));
    for (int i = 0; i < 5; i++) NB_CHECK(b[i].id == 100 + order[i] && b[i].pos[0] == 0.0);
    NB_CHECK_OK(nb_gather(order, 5, a, 0, b, 0, sizeof(body)));
    for (int i = 0; i < 5; i++) NB_CHECK(b[i].pos[1] == -(double)order[i]);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"reorder_2d", test_reorder_2d},
        {"reorder_3d_lattice", test_reorder_3d_lattice},
        {"gather_strided", test_gather_strided},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
