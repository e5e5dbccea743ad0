// SPDX-License-Identifier: MIT
// nb_grid_pairs_wide against nb_grid_pairs: the same pairs in the same order, widened to int64
// rows, serially and on a scheduler (the parallel path writes 32-bit pairs and widens them in
// place), on uniform and clustered points in 2D and 3D, dense and hashed layouts, with filters;
// a buffer too small (the full count, the first `capacity` pairs, nothing written past them);
// and the contract cases (pointers, radius, capacity).
#include "nb_oracle.h"
#include "nb_test.h"

#include <nearby/grid.h>

#include <math.h>

enum { N_BIG = 20000 }; // above the size below which the grid's pairs stay serial

// Runs every range backwards on the calling thread, with worker ids in [0, 3).
static void sched_backwards(nbTaskFn *task, int32_t count, int32_t min_range, void *ctx, void *user)
{
    (void)min_range;
    (void)user;
    for (int32_t i = count - 1; i >= 0; i--) task(i, i + 1, (count - 1 - i) % 3, ctx);
}

// Wide rows of one grid against its nbPairs; 0 or 1.
static int same_as_pairs(const nbGrid *g, double r)
{
    int64_t n32 = 0;
    NB_CHECK_OK(nb_grid_count_pairs(g, r, &n32));
    nbPair *want = nbo_xalloc((size_t)n32 * sizeof *want);
    int64_t *got = nbo_xalloc((size_t)(n32 + 3) * 2 * sizeof *got);
    int64_t found = -1;
    NB_CHECK_OK(nb_grid_pairs(g, r, want, n32, &found));
    NB_CHECK(found == n32);
    for (int64_t e = 0; e < 2 * (n32 + 3); e++) got[e] = -7;
    NB_CHECK_OK(nb_grid_pairs_wide(g, r, got, n32 + 3, &found));
    NB_CHECK(found == n32);
    for (int64_t k = 0; k < n32; k++)
        NB_CHECK(got[2 * k] == want[k].i && got[2 * k + 1] == want[k].j);
    for (int64_t e = 2 * n32; e < 2 * (n32 + 3); e++) NB_CHECK(got[e] == -7); // nothing past
    // Too small: the full count, the first cap pairs, nothing past them.
    const int64_t cap = n32 / 3;
    for (int64_t e = 0; e < 2 * (n32 + 3); e++) got[e] = -7;
    NB_CHECK_STATUS(nb_grid_pairs_wide(g, r, got, cap, &found),
                    n32 > cap ? NB_ERR_BUFFER_TOO_SMALL : NB_OK);
    NB_CHECK(found == n32);
    for (int64_t k = 0; k < cap; k++)
        NB_CHECK(got[2 * k] == want[k].i && got[2 * k + 1] == want[k].j);
    for (int64_t e = 2 * cap; e < 2 * (n32 + 3); e++) NB_CHECK(got[e] == -7);
    NB_CHECK_STATUS(nb_grid_pairs_wide(g, r, NULL, 0, &found),
                    n32 > 0 ? NB_ERR_BUFFER_TOO_SMALL : NB_OK);
    NB_CHECK(found == n32);
    free(want);
    free(got);
    return 0;
}

static int test_against_pairs(void)
{
    const nbTasks tasks = {sched_backwards, NULL, 3};
    for (int dim = 2; dim <= 3; dim++) {
        for (int shape = 0; shape < 2; shape++) {
            for (int filtered = 0; filtered < 2; filtered++) {
                nboSet s = nbo_set_new(N_BIG, dim);
                double c[3] = {0, 0, 0};
                for (int32_t i = 0; i < s.n; i++) {
                    if (i % 50 == 0)
                        for (int a = 0; a < dim; a++) c[a] = nbt_range(0.0, 1e4);
                    for (int a = 0; a < dim; a++)
                        s.p[(size_t)i * (size_t)dim + (size_t)a] =
                            shape == 0 ? nbt_range(0.0, 200.0) : c[a] + nbt_gauss();
                }
                if (filtered) {
                    nbo_set_add_filters(&s);
                    for (int32_t i = 0; i < s.n; i++) {
                        s.cat[i] = 1u << nbt_int(3);
                        s.mask[i] = (uint32_t)nbt_int(8);
                    }
                }
                const nbPoints pts = nbo_points(&s);
                const double r = shape == 0 ? (dim == 2 ? 2.0 : 6.0) : 0.5;
                for (int par = 0; par < 2; par++) {
                    nbGridDesc d = {0};
                    d.dim = dim;
                    d.tasks = par ? &tasks : NULL;
                    nbGrid *g = NULL;
                    NB_CHECK_OK(nb_grid_create(&d, &g));
                    NB_CHECK_OK(nb_grid_build(g, &pts, r));
                    const int bad = same_as_pairs(g, r);
                    nb_grid_destroy(g);
                    if (bad) {
                        fprintf(stderr, "pairs_wide: dim %d shape %d filtered %d %s\n", dim, shape,
                                filtered, par ? "on the scheduler" : "serial");
                        nbo_set_free(&s);
                        return 1;
                    }
                }
                nbo_set_free(&s);
            }
        }
    }
    return 0;
}

static int test_contract(void)
{
    nboSet s = nbo_set_new(30, 2);
    for (int32_t i = 0; i < 60; i++) s.p[i] = nbt_range(0.0, 3.0);
    const nbPoints pts = nbo_points(&s);
    nbGridDesc d = {0};
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&d, &g));
    NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
    int64_t out[8], found = 5;
    NB_CHECK_STATUS(nb_grid_pairs_wide(NULL, 1.0, out, 4, &found), NB_ERR_NULL_ARG);
    NB_CHECK(found == 0);
    NB_CHECK_STATUS(nb_grid_pairs_wide(g, 1.0, out, 4, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_pairs_wide(g, 1.0, NULL, 4, &found), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_pairs_wide(g, NAN, out, 4, &found), NB_ERR_NOT_FINITE);
    NB_CHECK_STATUS(nb_grid_pairs_wide(g, -1.0, out, 4, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_pairs_wide(g, 1.0, out, -1, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(found == 0);
    NB_CHECK_OK(nb_grid_pairs_wide(g, 0.0, out, 4, &found)); // distinct random points: none
    NB_CHECK(found == 0);
    nb_grid_destroy(g);
    nbo_set_free(&s);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"against_pairs", test_against_pairs},
        {"contract", test_contract},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
