// SPDX-License-Identifier: MIT
// Counting pairs at radii that span many points (nb_grid_count_pairs, nb_grid_count_cross_pairs
// through nbi_count_bulk): whole pairs of bins counted at once must give brute force's count
// exactly, at radii that make many pair distances tie with r (lattices), on duplicates, far from
// the origin, and out to radii covering every pair. And the bulk path is the one taken.
#include "grid_count_bulk.h"
#include "grid_internal.h" // the grid's view
#include "nb_oracle.h"
#include "nb_test.h"
#include "nbt_grid.h"

#include <nearby/grid.h>

#include <math.h>

enum { SHAPES = 5 };

// n points of a shape: uniform, clumps, an integer lattice (many distances exactly r), heavy
// duplicates, and uniform 1e9 from the origin.
static nboSet make(int shape, int32_t n, int dim)
{
    nboSet s = nbo_set_new(n, dim);
    double c[3] = {0, 0, 0};
    for (int32_t i = 0; i < n; i++) {
        if (shape == 1 && i % 200 == 0)
            for (int a = 0; a < dim; a++) c[a] = nbt_range(0.0, 100.0);
        for (int a = 0; a < dim; a++) {
            double x = nbt_range(0.0, 100.0);
            if (shape == 1) x = c[a] + 3.0 * nbt_gauss();
            if (shape == 2) x = (double)nbt_int(dim == 2 ? 40 : 14) * 2.5;
            if (shape == 3) x = (double)nbt_int(4) * 30.0;
            if (shape == 4) x = 1e9 + nbt_range(0.0, 100.0);
            s.p[(size_t)i * (size_t)dim + (size_t)a] = x;
        }
    }
    return s;
}

static int64_t brute_self(const nboSet *s, double r)
{
    int64_t n = 0;
    for (int32_t i = 0; i < s->n; i++)
        for (int32_t j = i + 1; j < s->n; j++)
            n += nbo_within(nbo_pt(s, i), nbo_pt(s, j), s->dim, r);
    return n;
}

static int64_t brute_cross(const nboSet *a, const nboSet *b, double r)
{
    int64_t n = 0;
    for (int32_t i = 0; i < a->n; i++)
        for (int32_t j = 0; j < b->n; j++) n += nbo_within(nbo_pt(a, i), nbo_pt(b, j), a->dim, r);
    return n;
}

static int test_against_brute_force(void)
{
    // Radii: a lattice step's multiples (ties), and out to every pair.
    static const double radii[] = {2.5, 5.0, 12.5, 25.0, 37.5, 70.0, 200.0, 1e300};
    for (int dim = 2; dim <= 3; dim++)
        for (int shape = 0; shape < SHAPES; shape++) {
            nboSet s = make(shape, 1500, dim);
            nboSet t = make(shape, 1000, dim);
            for (size_t ri = 0; ri < sizeof radii / sizeof radii[0]; ri++) {
                const double r = radii[ri];
                nbGrid *g = nbt_grid_build(&s, r), *h = nbt_grid_build(&t, r);
                NB_CHECK(g != NULL && h != NULL);
                int64_t got = -1, bulk = -1;
                NB_CHECK_OK(nb_grid_count_pairs(g, r, &got));
                const int64_t want = brute_self(&s, r);
                const bool took = nbi_count_bulk(&g->view, NULL, r, &g->alloc, &bulk);
                if (got != want || (took && bulk != want)) {
                    fprintf(stderr,
                            "  self: dim %d shape %d r %g: %lld (bulk %d: %lld), want %lld\n", dim,
                            shape, r, (long long)got, took, (long long)bulk, (long long)want);
                    return 1;
                }
                NB_CHECK_OK(nb_grid_count_cross_pairs(g, h, r, &got));
                const int64_t wantx = brute_cross(&s, &t, r);
                if (got != wantx) {
                    fprintf(stderr, "  cross: dim %d shape %d r %g: %lld, want %lld\n", dim, shape,
                            r, (long long)got, (long long)wantx);
                    return 1;
                }
                // From 70 up the radius spans enough points a bin that the bulk count runs.
                if (r >= 70.0) NB_CHECK(took);
                nb_grid_destroy(g);
                nb_grid_destroy(h);
            }
            nbo_set_free(&s);
            nbo_set_free(&t);
        }
    return 0;
}

// Filters and periodic axes keep the pair walk (the bulk count has neither); a failed
// allocation falls back to it too, with the same count. Sets wholly apart or wholly within the
// radius are counted at once.
static int test_declines(void)
{
    nboSet s = make(0, 3000, 2);
    nbtAlloc counter = {0};
    nbGridDesc desc = {0};
    desc.dim = 2;
    nbAllocator al = nbt_allocator(&counter);
    desc.allocator = &al;
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints pts = nbo_points(&s);
    NB_CHECK_OK(nb_grid_build(g, &pts, 50.0));
    int64_t bulk = -1, walked = -1;
    const int64_t live = counter.live_bytes;
    NB_CHECK(nbi_count_bulk(&g->view, NULL, 50.0, &g->alloc, &bulk));
    NB_CHECK(counter.live_bytes == live && !counter.size_mismatch);
    for (int fail = 1; fail <= 4; fail++) { // each of its scratch arrays failing in turn
        counter.fail_at = counter.allocs + fail;
        NB_CHECK(!nbi_count_bulk(&g->view, NULL, 50.0, &g->alloc, &walked));
        NB_CHECK(walked == -1 && counter.live_bytes == live && !counter.size_mismatch);
        NB_CHECK_OK(nb_grid_count_pairs(g, 50.0, &walked)); // and the count again
        NB_CHECK(walked == bulk);
        walked = -1;
    }
    counter.fail_at = 0;
    NB_CHECK_OK(nb_grid_count_pairs(g, 50.0, &walked));
    NB_CHECK(walked == bulk && bulk == brute_self(&s, 50.0));
    nb_grid_destroy(g);

    // Sets whose boxes lie wholly beyond the radius, or wholly within it: decided at once.
    nboSet far = make(0, 2000, 2);
    for (int32_t i = 0; i < far.n; i++) far.p[2 * i] += 150.0; // x in [150, 250)
    nbGrid *h = nbt_grid_build(&far, 50.0), *k = nbt_grid_build(&s, 50.0);
    NB_CHECK(h != NULL && k != NULL);
    NB_CHECK(nbi_count_bulk(&k->view, &h->view, 50.0, &k->alloc, &bulk) && bulk == 0);
    NB_CHECK(nbi_count_bulk(&k->view, &h->view, 400.0, &k->alloc, &bulk) &&
             bulk == (int64_t)s.n * far.n);
    NB_CHECK(nbi_count_bulk(&k->view, &h->view, 100.0, &k->alloc, &bulk) &&
             bulk == brute_cross(&s, &far, 100.0));
    nb_grid_destroy(h);
    nb_grid_destroy(k);
    nbo_set_free(&far);

    nbo_set_add_filters(&s);
    nbGrid *f = nbt_grid_build(&s, 50.0);
    NB_CHECK(f != NULL);
    NB_CHECK(!nbi_count_bulk(&f->view, NULL, 50.0, &f->alloc, &bulk));
    nb_grid_destroy(f);
    nbo_set_free(&s);
    return 0;
}

// A heavy-tailed set spreads over a vast box, so its grid, built for a short radius, is hashed;
// counted at radii many of its cells wide, the walk would probe far more cells than there are
// points (and refuse past its budget), while the bins over the whole box would be too many for
// the points. The bulk count widens its bins instead, and must still be exact.
static int test_heavy_tail_long_radii(void)
{
    enum { N = 12000, M = 3000 };
    nboSet s = nbo_set_new(N, 3), t = nbo_set_new(M, 3);
    for (int32_t i = 0; i < N + M; i++) {
        double *p = i < N ? s.p + (size_t)i * 3 : t.p + (size_t)(i - N) * 3;
        const double scale = 0.05 * pow(nbt_range(1e-6, 1.0), -1.5); // Pareto: most near 0
        for (int a = 0; a < 3; a++) p[a] = scale * nbt_gauss();
    }
    nbGrid *g = nbt_grid_build(&s, 0.02), *h = nbt_grid_build(&t, 0.02);
    NB_CHECK(g != NULL && h != NULL && g->view.table != NULL && h->view.table != NULL);
    static const double radii[] = {0.5, 3.0};
    for (size_t ri = 0; ri < sizeof radii / sizeof radii[0]; ri++) {
        const double r = radii[ri];
        int64_t got = -1, bulk = -1;
        NB_CHECK_OK(nb_grid_count_pairs(g, r, &got));
        NB_CHECK(nbi_count_bulk(&g->view, NULL, r, &g->alloc, &bulk) && bulk == got);
        NB_CHECK(got == brute_self(&s, r));
        NB_CHECK_OK(nb_grid_count_cross_pairs(g, h, r, &got));
        NB_CHECK(got == brute_cross(&s, &t, r));
    }
    nb_grid_destroy(g);
    nb_grid_destroy(h);
    nbo_set_free(&s);
    nbo_set_free(&t);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"against_brute_force", test_against_brute_force},
        {"declines", test_declines},
        {"heavy_tail_long_radii", test_heavy_tail_long_radii},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
