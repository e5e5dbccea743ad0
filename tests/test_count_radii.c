// SPDX-License-Identifier: MIT
// Pairs counted at many radii in one walk (nb_grid_count_pairs_radii, nb_grid_count_cross_pairs_
// radii and their weighted forms nb_grid_sum_*) against brute force: every radius, cumulative or
// not, self and cross, with weights (one side, both, none), in the L_p norms p = 1, 2, 3.5, inf,
// on periodic boxes, with filter bits; on uniform points, clumps (whole boxes counted at once),
// an integer lattice with integer radii (many distances exactly at a radius), duplicates and
// points 1e9 from the origin; radii that repeat, 0, and beyond every pair. Plus the contract
// cases of the four functions (tests/contract_coverage.sh looks for them in test_contract*.c;
// they are in test_contract_radii.c).
#include "nb_oracle.h"
#include "nb_test.h"

#include <nearby/grid.h>

#include <math.h>

enum { SHAPES = 5, MAXR = 24 };

// n points of a shape in [0, 100) per axis: uniform, clumps, a lattice of step 2 (integer
// distances squared), heavy duplicates, uniform 1e9 from the origin (never periodic).
static nboSet make(int shape, int32_t n, int dim)
{
    nboSet s = nbo_set_new(n, dim);
    double c[3] = {0, 0, 0};
    for (int32_t i = 0; i < n; i++) {
        if (shape == 1 && i % 40 == 0)
            for (int a = 0; a < dim; a++) c[a] = nbt_range(10.0, 90.0);
        for (int a = 0; a < dim; a++) {
            double x = nbt_range(0.0, 100.0);
            if (shape == 1) x = fmin(99.0, fmax(0.0, c[a] + 2.0 * nbt_gauss()));
            if (shape == 2) x = 2.0 * (double)nbt_int(dim == 2 ? 30 : 10);
            if (shape == 3) x = 30.0 * (double)nbt_int(3);
            if (shape == 4) x = 1e9 + nbt_range(0.0, 100.0);
            s.p[(size_t)i * (size_t)dim + (size_t)a] = x;
        }
    }
    return s;
}

// The raw p-distance, as a brute-force loop computes it (minimum image where per[a] > 0).
static double raw_dist(const double *a, const double *b, int dim, double p, const double *per)
{
    double s = 0.0;
    for (int ax = 0; ax < dim; ax++) {
        double d = fabs(a[ax] - b[ax]);
        if (per[ax] > 0.0 && per[ax] - d < d) d = per[ax] - d;
        const double t = p == 2.0 ? d * d : p == 1.0 || isinf(p) ? d : pow(d, p);
        s = isinf(p) ? (t > s ? t : s) : s + t;
    }
    return s;
}

static double raw_radius(double r, double p)
{
    return p == 2.0 ? r * r : p == 1.0 || isinf(p) ? r : pow(r, p);
}

// Brute force: out[k] = the sum over pairs (i < j of a when b == NULL, else every (i, j)) with
// raw distance <= raw radius k of wa[i] * wb[j] (NULL: 1), cumulative or per shell.
static void brute(const nboSet *a, const nboSet *b, const double *wa, const double *wb,
                  const double *radii, int m, double p, const double *per, bool cumulative,
                  double *out)
{
    double rr[MAXR];
    for (int k = 0; k < m; k++) {
        rr[k] = raw_radius(radii[k], p);
        out[k] = 0.0;
    }
    const nboSet *o = b != NULL ? b : a;
    for (int32_t i = 0; i < a->n; i++)
        for (int32_t j = b != NULL ? 0 : i + 1; j < o->n; j++) {
            if (a->cat != NULL && !nbo_pair_passes(a, i, o, j)) continue;
            const double d = raw_dist(nbo_pt(a, i), nbo_pt(o, j), a->dim, p, per);
            const double w = (wa != NULL ? wa[i] : 1.0) * (wb != NULL ? wb[j] : 1.0);
            for (int k = 0; k < m; k++)
                if (d <= rr[k] && (cumulative || k == 0 || !(d <= rr[k - 1]))) out[k] += w;
        }
}

static nbGrid *build(const nboSet *s, const double *period, double cell)
{
    nbGridDesc desc = {0};
    desc.dim = s->dim;
    for (int a = 0; a < 3; a++) desc.period[a] = period[a];
    nbGrid *g = NULL;
    if (nb_grid_create(&desc, &g) != NB_OK) return NULL;
    nbPoints pts = {s->p, s->n, s->dim, 0, s->cat, 0, s->mask, 0};
    if (nb_grid_build(g, &pts, cell) != NB_OK) {
        nb_grid_destroy(g);
        return NULL;
    }
    return g;
}

// m sorted radii for a shape: random ones up to the data's extent, with repeats, 0, integers
// on the lattice (distances tie with them) and one beyond every pair.
static int make_radii(int shape, double *radii)
{
    const int m = 4 + nbt_int(MAXR - 4);
    for (int k = 0; k < m; k++) {
        double r = nbt_range(0.0, 60.0) * nbt_unit();
        if (shape == 2 || shape == 3) r = (double)nbt_int(shape == 2 ? 20 : 60);
        radii[k] = r;
    }
    radii[0] = 0.0;
    radii[m - 1] = 400.0;
    if (m > 5) radii[2] = radii[3];
    for (int k = 1; k < m; k++) // insertion sort
        for (int j = k; j > 0 && radii[j] < radii[j - 1]; j--) {
            const double t = radii[j];
            radii[j] = radii[j - 1];
            radii[j - 1] = t;
        }
    return m;
}

static bool close_to(double got, double want)
{
    return fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want));
}

// Every form at once on sets a (and b) with radii: counts exact, sums close.
static int check_forms(const nboSet *a, const nboSet *b, const double *per, double cell, double p,
                       const double *radii, int m)
{
    nbGrid *ga = build(a, per, cell), *gb = build(b, per, cell * 1.7);
    NB_CHECK(ga != NULL && gb != NULL);
    double *wa = nbo_xalloc((size_t)a->n * sizeof(double));
    double *wb = nbo_xalloc((size_t)b->n * sizeof(double));
    for (int32_t i = 0; i < a->n; i++) wa[i] = nbt_range(-1.0, 2.0);
    for (int32_t i = 0; i < b->n; i++) wb[i] = nbt_range(0.0, 3.0);
    double *wc = nbo_xalloc((size_t)a->n * sizeof(double)); // a's second weighting
    for (int32_t i = 0; i < a->n; i++) wc[i] = nbt_range(0.0, 3.0);
    double want[MAXR], sums[MAXR];
    int64_t counts[MAXR];
    for (int cum = 0; cum < 2; cum++) {
        brute(a, NULL, NULL, NULL, radii, m, p, per, cum, want);
        NB_CHECK_OK(nb_grid_count_pairs_radii(ga, radii, m, p, cum, counts));
        for (int k = 0; k < m; k++) NB_CHECK((double)counts[k] == want[k]);
        brute(a, b, NULL, NULL, radii, m, p, per, cum, want);
        NB_CHECK_OK(nb_grid_count_cross_pairs_radii(ga, gb, radii, m, p, cum, counts));
        for (int k = 0; k < m; k++) NB_CHECK((double)counts[k] == want[k]);
        // the same grid twice: every ordered pair, (i, i) included
        brute(a, a, NULL, NULL, radii, m, p, per, cum, want);
        NB_CHECK_OK(nb_grid_count_cross_pairs_radii(ga, ga, radii, m, p, cum, counts));
        for (int k = 0; k < m; k++) NB_CHECK((double)counts[k] == want[k]);
        brute(a, NULL, wa, wa, radii, m, p, per, cum, want);
        NB_CHECK_OK(nb_grid_sum_pairs_radii(ga, wa, radii, m, p, cum, sums));
        for (int k = 0; k < m; k++) NB_CHECK(close_to(sums[k], want[k]));
        brute(a, b, wa, wb, radii, m, p, per, cum, want);
        NB_CHECK_OK(nb_grid_sum_cross_pairs_radii(ga, gb, wa, wb, radii, m, p, cum, sums));
        for (int k = 0; k < m; k++) NB_CHECK(close_to(sums[k], want[k]));
        brute(a, b, NULL, wb, radii, m, p, per, cum, want);
        NB_CHECK_OK(nb_grid_sum_cross_pairs_radii(ga, gb, NULL, wb, radii, m, p, cum, sums));
        for (int k = 0; k < m; k++) NB_CHECK(close_to(sums[k], want[k]));
        brute(a, a, wa, wc, radii, m, p, per, cum, want); // one grid, two weightings
        NB_CHECK_OK(nb_grid_sum_cross_pairs_radii(ga, ga, wa, wc, radii, m, p, cum, sums));
        for (int k = 0; k < m; k++) NB_CHECK(close_to(sums[k], want[k]));
    }
    free(wa);
    free(wb);
    free(wc);
    nb_grid_destroy(ga);
    nb_grid_destroy(gb);
    return 0;
}

// Random sets of a shape (a of na + [0, na) points, b of 1 + [0, nb)) and radii, every form.
static int check_shape(int shape, int dim, int32_t na, int32_t nb, const double *per, double cell,
                       double p)
{
    nboSet a = make(shape, na + nbt_int(na), dim);
    nboSet b = make(shape, 1 + nbt_int(nb), dim);
    double radii[MAXR];
    const int m = make_radii(shape, radii);
    const int r = check_forms(&a, &b, per, cell, p, radii, m);
    nbo_set_free(&a);
    nbo_set_free(&b);
    if (r != 0)
        fprintf(stderr, "dim %d shape %d p %g period %g %g %g\n", dim, shape, p, per[0], per[1],
                per[2]);
    return r;
}

static const double PS[] = {2.0, 1.0, 3.5, (double)INFINITY};
enum { NPS = sizeof PS / sizeof PS[0] };

// Each shape and dim in two of the norms (p = 2 and 3.5, or 1 and inf, by turns).
static int test_against_brute_force(void)
{
    const double none[3] = {0, 0, 0};
    for (int dim = 2; dim <= 3; dim++)
        for (int shape = 0; shape < SHAPES; shape++)
            for (int pi = (shape + dim) % 2; pi < NPS; pi += 2)
                if (check_shape(shape, dim, 60, 100, none, 4.0, PS[pi]) != 0) return 1;
    return 0;
}

// Periodic boxes: [0, 100) on every axis (p = 2, 3.5), or on x only (p = 1, inf); radii up to
// and past half a period (every pair counts once, by its nearest image).
static int test_periodic(void)
{
    for (int dim = 2; dim <= 3; dim++)
        for (int shape = 0; shape < 4; shape++)
            for (int axes = 0; axes < 2; axes++)
                for (int pi = axes; pi < NPS; pi += 2) {
                    const double per[3] = {100.0, axes ? 0.0 : 100.0,
                                           axes || dim == 2 ? 0.0 : 100.0};
                    if (check_shape(shape, dim, 60, 80, per, 10.0, PS[pi]) != 0) return 1;
                }
    return 0;
}

// Filter bits (on one side, or both): each pair tested against the rule.
static int test_filters(void)
{
    const double none[3] = {0, 0, 0};
    for (int dim = 2; dim <= 3; dim++)
        for (int shape = 0; shape < 4; shape++)
            for (int sides = 0; sides < 2; sides++) {
                nboSet a = make(shape, 120, dim), b = make(shape, 70, dim);
                nbo_set_add_filters(&a);
                for (int32_t i = 0; i < a.n; i++) {
                    a.cat[i] = 1u << nbt_int(3);
                    a.mask[i] = (uint32_t)nbt_int(8);
                }
                if (sides) {
                    nbo_set_add_filters(&b);
                    for (int32_t i = 0; i < b.n; i++) {
                        b.cat[i] = 1u << nbt_int(3);
                        b.mask[i] = (uint32_t)nbt_int(8);
                    }
                }
                double radii[MAXR];
                const int m = make_radii(shape, radii);
                const int r = check_forms(&a, &b, none, 5.0, 2.0, radii, m);
                nbo_set_free(&a);
                nbo_set_free(&b);
                if (r != 0) return r;
            }
    return 0;
}

// Larger clumped sets, where most pairs of boxes are counted whole: still exact, and the
// cumulative counts reach every pair at a radius past the extent.
static int test_bulk(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        nboSet a = make(1, 2000, dim);
        nbGrid *g = build(&a, (const double[3]){0, 0, 0}, 2.0);
        NB_CHECK(g != NULL);
        const double radii[] = {0.5, 1.0, 3.0, 10.0, 40.0, 80.0, 200.0};
        const int m = (int)(sizeof radii / sizeof radii[0]);
        double want[MAXR];
        int64_t counts[MAXR];
        brute(&a, NULL, NULL, NULL, radii, m, 2.0, (const double[3]){0, 0, 0}, true, want);
        NB_CHECK_OK(nb_grid_count_pairs_radii(g, radii, m, 2.0, true, counts));
        for (int k = 0; k < m; k++) NB_CHECK((double)counts[k] == want[k]);
        NB_CHECK(counts[m - 1] == (int64_t)a.n * (a.n - 1) / 2);
        nb_grid_destroy(g);
        nbo_set_free(&a);
    }
    return 0;
}

// Empty grids and no radii: zeros, NB_OK.
static int test_empty(void)
{
    nboSet a = make(0, 50, 3), e = make(0, 0, 3);
    const double per[3] = {0, 0, 0};
    nbGrid *g = build(&a, per, 5.0), *h = build(&e, per, 5.0);
    NB_CHECK(g != NULL && h != NULL);
    const double radii[] = {1.0, 500.0};
    int64_t counts[2] = {7, 7};
    double sums[2] = {7, 7};
    NB_CHECK_OK(nb_grid_count_cross_pairs_radii(g, h, radii, 2, 2.0, true, counts));
    NB_CHECK(counts[0] == 0 && counts[1] == 0);
    NB_CHECK_OK(nb_grid_sum_pairs_radii(h, NULL, radii, 2, 2.0, true, sums));
    NB_CHECK(sums[0] == 0.0 && sums[1] == 0.0);
    NB_CHECK_OK(nb_grid_count_pairs_radii(g, NULL, 0, 2.0, true, NULL));
    NB_CHECK_OK(nb_grid_count_pairs_radii(g, radii, 2, 2.0, false, counts));
    NB_CHECK(counts[1] == 50 * 49 / 2 - counts[0]);
    nb_grid_destroy(g);
    nb_grid_destroy(h);
    nbo_set_free(&a);
    nbo_set_free(&e);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"against_brute_force", test_against_brute_force},
        {"periodic", test_periodic},
        {"filters", test_filters},
        {"bulk", test_bulk},
        {"empty", test_empty},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
