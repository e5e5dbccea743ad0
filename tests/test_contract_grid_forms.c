// SPDX-License-Identifier: MIT
// The grid's two other forms, against their plain twins and brute force, with their contract
// cases:
// - nb_grid_knn_norm (src/grid_knn_norms.c): the k nearest in the L_p norms against brute force
//   (the raw distance summed per axis in axis order, ties by index), p = 1, 1.5, 2, 3.5, inf, on
//   uniform, clustered, surface and duplicate points in 2D and 3D, cells from fine (the hashed
//   layout) to coarse, through the kNN index and through the cells (forced with
//   nbi_knn_index_use), with filters, max_distance and periodic boxes;
// - nb_grid_pairs_wide: the same pairs as nb_grid_pairs in the same order, widened to int64
//   rows, serially and on a scheduler (the parallel path writes 32-bit pairs and widens them in
//   place), uniform and clustered, 2D and 3D, with filters; a buffer too small (the full count,
//   the first `capacity` pairs, nothing written past them).
#include "knn_index.h"
#include "nb_oracle.h"
#include "nb_test.h"

#include <nearby/grid.h>

#include <math.h>

// One category bit of three and a random mask of them per point.
static void random_filters(nboSet *s)
{
    nbo_set_add_filters(s);
    for (int32_t i = 0; i < s->n; i++) {
        s->cat[i] = 1u << nbt_int(3);
        s->mask[i] = (uint32_t)nbt_int(8);
    }
}

static double raw_term(double d, double p)
{
    return p == 1.0 || isinf(p) ? d : p == 2.0 ? d * d : pow(d, p);
}

// The raw p-distance from q to x, minimum image on axes with a period.
static double raw_dist(const double *q, const double *x, int dim, double p, const double *period)
{
    double s = 0.0;
    for (int a = 0; a < dim; a++) {
        double d = fabs(q[a] - x[a]);
        if (period != NULL && period[a] > 0.0 && d > period[a] - d) d = period[a] - d;
        const double t = raw_term(d, p);
        s = isinf(p) ? (t > s ? t : s) : s + t;
    }
    return s;
}

// Brute force: every point of s passing f within max_distance of q in the norm, nearest first
// (ties by index); the k nearest are its first k. The caller frees the list.
static nbNeighbor *brute(const nboSet *s, const double *q, double p, nbFilter f, double maxd,
                         const double *period, int32_t *count)
{
    nbNeighbor *all = nbo_xalloc((size_t)s->n * sizeof *all);
    int32_t n = 0;
    const double lim = isinf(maxd) ? (double)INFINITY : raw_term(maxd, p);
    for (int32_t i = 0; i < s->n; i++) {
        if (!nbo_filter_passes(s, i, f)) continue;
        const double r = raw_dist(q, nbo_pt(s, i), s->dim, p, period);
        if (r <= lim) all[n++] = (nbNeighbor){i, r};
    }
    nbo_sort_neighbors(all, n);
    *count = n;
    return all;
}

static void make(nboSet *s, int shape, double box)
{
    double c[3] = {0, 0, 0}, size = 1.0;
    for (int32_t i = 0; i < s->n; i++) {
        double *x = s->p + (size_t)i * (size_t)s->dim;
        if (shape == 1 && i % 25 == 0) { // blobs of log-normal sizes
            for (int a = 0; a < s->dim; a++) c[a] = nbt_range(0.1 * box, 0.9 * box);
            size = 0.02 * box * exp(nbt_gauss());
        }
        double len = 0.0;
        for (int a = 0; a < s->dim; a++) {
            x[a] = shape == 0   ? nbt_range(0.0, box)
                   : shape == 1 ? c[a] + size * nbt_gauss()
                   : shape == 2 ? nbt_gauss()
                                : (double)nbt_int(5) * box / 5.0; // duplicates
            len += x[a] * x[a];
        }
        for (int a = 0; shape == 2 && a < s->dim; a++) // a sphere's surface, centred in the box
            x[a] = 0.5 * box + 0.4 * box * x[a] / (len > 0.0 ? sqrt(len) : 1.0);
        for (int a = 0; a < s->dim; a++) // inside [0, box) (the periodic grids want it)
            x[a] = x[a] < 0.0 ? 0.0 : x[a] >= box ? box * (1.0 - 0x1p-40) : x[a];
    }
}

enum { N_QUERIES = 12, N_NORMS = 5 };
static const double norms[N_NORMS] = {1.0, 1.5, 2.0, 3.5, (double)INFINITY};

// The queries of one set and their brute-force answers, made once and asked of every grid
// built over the set: queries at points (ties at distance 0), inside and outside the box, with
// and without max_distance and a filter.
typedef struct Plan {
    double q[N_QUERIES][3];
    nbFilter f[N_QUERIES];
    double maxd[N_QUERIES];
    nbNeighbor *want[N_QUERIES][N_NORMS];
    int32_t n[N_QUERIES][N_NORMS];
} Plan;

static void plan_make(Plan *pl, const nboSet *s, const double *period, double box)
{
    for (int t = 0; t < N_QUERIES; t++) {
        for (int a = 0; a < s->dim; a++)
            pl->q[t][a] = t < 4            ? nbo_pt(s, nbt_int(s->n))[a]
                          : period != NULL ? nbt_range(0.0, box * (1.0 - 0x1p-40))
                                           : nbt_range(-0.2 * box, 1.2 * box);
        pl->maxd[t] = t % 3 == 2 ? 0.05 * box : (double)INFINITY;
        pl->f[t] = s->cat != NULL && t % 2 == 1 ? (nbFilter){1u << (t % 3), 0x5u} : NB_FILTER_ALL;
        for (int pi = 0; pi < N_NORMS; pi++)
            pl->want[t][pi] =
                brute(s, pl->q[t], norms[pi], pl->f[t], pl->maxd[t], period, &pl->n[t][pi]);
    }
}

static void plan_free(Plan *pl)
{
    for (int t = 0; t < N_QUERIES; t++)
        for (int pi = 0; pi < N_NORMS; pi++) free(pl->want[t][pi]);
}

// Every query of the plan, in every norm and for several k, of one grid; 0 or 1 (with a
// message).
static int check_grid(const nbGrid *g, const Plan *pl)
{
    static const int32_t ks[] = {1, 2, 7, 40};
    nbNeighbor got[64];
    for (int t = 0; t < N_QUERIES; t++) {
        for (int pi = 0; pi < N_NORMS; pi++) {
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                int32_t found = -1;
                NB_CHECK_OK(nb_grid_knn_norm(g, pl->q[t], norms[pi], pl->f[t], pl->maxd[t], got,
                                             ks[ki], &found));
                const int32_t n = pl->n[t][pi] < ks[ki] ? pl->n[t][pi] : ks[ki];
                if (found != n || !nbo_same_neighbors(got, found, pl->want[t][pi], n)) {
                    fprintf(stderr, "knn_norm: p %g k %d query %d: %d found, %d wanted\n",
                            norms[pi], ks[ki], t, found, n);
                    return 1;
                }
            }
        }
    }
    return 0;
}

static int test_against_brute_force(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        // Fine (the hashed layout where sparse) to coarse. The fine 3D cell holds 2M cells of the
        // box for 600 points, still hashed; finer, the forced ring walks took 80% of the test.
        const double cells[] = {dim == 2 ? 0.3 : 0.8, 2.0, 9.0};
        for (int shape = 0; shape < 4; shape++) {
            for (int filtered = 0; filtered < 2; filtered++) {
                nboSet s = nbo_set_new(600, dim);
                make(&s, shape, 100.0);
                if (filtered) random_filters(&s);
                const nbPoints pts = nbo_points(&s);
                Plan pl;
                plan_make(&pl, &s, NULL, 100.0);
                for (size_t ci = 0; ci < sizeof cells / sizeof cells[0]; ci++) {
                    for (int use = -1; use <= 1; use += 2) { // the cells, then the index
                        nbi_knn_index_use = use;
                        nbGridDesc d = {0};
                        d.dim = dim;
                        nbGrid *g = NULL;
                        NB_CHECK_OK(nb_grid_create(&d, &g));
                        NB_CHECK_OK(nb_grid_build(g, &pts, cells[ci]));
                        const int bad = check_grid(g, &pl);
                        nb_grid_destroy(g);
                        if (bad) {
                            fprintf(stderr, "knn_norm: dim %d shape %d filtered %d cell %g %s\n",
                                    dim, shape, filtered, cells[ci], use > 0 ? "index" : "cells");
                            nbi_knn_index_use = 0;
                            plan_free(&pl);
                            nbo_set_free(&s);
                            return 1;
                        }
                    }
                }
                nbi_knn_index_use = 0;
                plan_free(&pl);
                nbo_set_free(&s);
            }
        }
    }
    return 0;
}

static int test_periodic(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        nboSet s = nbo_set_new(400, dim);
        make(&s, 0, 50.0);
        const nbPoints pts = nbo_points(&s);
        nbGridDesc d = {0};
        d.dim = dim;
        d.period[0] = 50.0; // x wraps, the other axes do not
        nbGrid *g = NULL;
        NB_CHECK_OK(nb_grid_create(&d, &g));
        NB_CHECK_OK(nb_grid_build(g, &pts, 4.0));
        Plan pl;
        plan_make(&pl, &s, d.period, 50.0);
        const int bad = check_grid(g, &pl);
        plan_free(&pl);
        nb_grid_destroy(g);
        nbo_set_free(&s);
        NB_CHECK(!bad);
    }
    return 0;
}

static int test_norm_contract(void)
{
    nboSet s = nbo_set_new(50, 2);
    make(&s, 0, 10.0);
    const nbPoints pts = nbo_points(&s);
    nbGridDesc d = {0};
    d.period[0] = 10.0;
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&d, &g));
    NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
    nbNeighbor out[4];
    int32_t found = 7;
    const double q[2] = {1.0, 1.0}, nan_q[2] = {(double)NAN, 1.0}, outside[2] = {10.0, 1.0};
    const double inf = (double)INFINITY;
    NB_CHECK_STATUS(nb_grid_knn_norm(NULL, q, 1.0, NB_FILTER_ALL, inf, out, 4, &found),
                    NB_ERR_NULL_ARG);
    NB_CHECK(found == 0);
    NB_CHECK_STATUS(nb_grid_knn_norm(g, NULL, 1.0, NB_FILTER_ALL, inf, out, 4, &found),
                    NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_knn_norm(g, q, 1.0, NB_FILTER_ALL, inf, NULL, 4, &found),
                    NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_knn_norm(g, q, 1.0, NB_FILTER_ALL, inf, out, 4, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_knn_norm(g, nan_q, 1.0, NB_FILTER_ALL, inf, out, 4, &found),
                    NB_ERR_NOT_FINITE);
    NB_CHECK_STATUS(nb_grid_knn_norm(g, q, (double)NAN, NB_FILTER_ALL, inf, out, 4, &found),
                    NB_ERR_NOT_FINITE);
    NB_CHECK_STATUS(nb_grid_knn_norm(g, q, 1.0, NB_FILTER_ALL, (double)NAN, out, 4, &found),
                    NB_ERR_NOT_FINITE);
    NB_CHECK_STATUS(nb_grid_knn_norm(g, q, 0.5, NB_FILTER_ALL, inf, out, 4, &found),
                    NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_knn_norm(g, q, 1.0, NB_FILTER_ALL, -1.0, out, 4, &found),
                    NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_knn_norm(g, q, 1.0, NB_FILTER_ALL, inf, out, -1, &found),
                    NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_knn_norm(g, outside, 1.0, NB_FILTER_ALL, inf, out, 4, &found),
                    NB_ERR_OUT_OF_RANGE);
    // k = 0 finds nothing; a closed filter finds nothing.
    NB_CHECK_OK(nb_grid_knn_norm(g, q, inf, NB_FILTER_ALL, inf, NULL, 0, &found));
    NB_CHECK(found == 0);
    NB_CHECK_OK(nb_grid_knn_norm(g, q, inf, (nbFilter){0, 0}, inf, out, 4, &found));
    NB_CHECK(found == 0);
    NB_CHECK_OK(nb_grid_knn_norm(g, q, inf, NB_FILTER_ALL, inf, out, 4, &found));
    NB_CHECK(found == 4);
    nb_grid_destroy(g);
    nbo_set_free(&s);
    return 0;
}

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
                if (filtered) random_filters(&s);
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

static int test_wide_contract(void)
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
    NB_CHECK_STATUS(nb_grid_pairs_wide(g, (double)NAN, out, 4, &found), NB_ERR_NOT_FINITE);
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
        {"knn_norm_against_brute_force", test_against_brute_force},
        {"knn_norm_periodic", test_periodic},
        {"knn_norm_contract", test_norm_contract},
        {"pairs_wide_against_pairs", test_against_pairs},
        {"pairs_wide_contract", test_wide_contract},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
