// SPDX-License-Identifier: MIT
// The dense grid against a brute-force oracle: every query, 2D and 3D, dense and hashed cells,
// default and explicit cell sizes, on random and adversarial point sets. Plus the bad-input
// table, buffer and visitor contracts, zero-allocation rebuilds and allocation failure.
#include <nearby/grid.h>

#include "grid_internal.h"
#include "simd.h"

#include "nb_oracle.h"
#include "nb_test.h"

#include <float.h>
#include <math.h>
#if defined(NBT_THREADS)
#include <pthread.h>
#endif

// ---- checks against the oracle (nb_oracle.h) ----

// All pair entry points agree with brute force and with each other.
static int check_pairs(const nbGrid *g, const nboSet *s, double r)
{
    int64_t want_n = 0;
    nbPair *want = nbo_pairs(s, r, &want_n);
    int64_t found = -1, count = -1;
    nbPair *got = (nbPair *)malloc((size_t)(want_n + 1) * sizeof(nbPair));
    NB_CHECK(got != NULL);
    NB_CHECK_OK(nb_grid_pairs(g, r, got, want_n + 1, &found));
    NB_CHECK_OK(nb_grid_count_pairs(g, r, &count));
    if (found != want_n || count != want_n)
        fprintf(stderr, "  pairs: n=%d dim=%d r=%.17g want %lld found %lld counted %lld\n", s->n,
                s->dim, r, (long long)want_n, (long long)found, (long long)count);
    NB_CHECK(found == want_n && count == want_n);
    // visit gives the same pairs in the same order
    nboPairLog log = {NULL, 0, 0, 0};
    NB_CHECK_OK(nb_grid_visit_pairs(g, r, nbo_log_pair, &log));
    NB_CHECK(log.n == want_n);
    NB_CHECK(want_n == 0 || memcmp(log.p, got, (size_t)want_n * sizeof(nbPair)) == 0);
    // a partition of the units gives every pair once
    int32_t units = nb_grid_pair_units(g);
    nboPairLog part = {NULL, 0, 0, 0};
    for (int32_t u = 0; u < units;) {
        int32_t e = u + 1 + nbt_int(units - u);
        NB_CHECK_OK(nb_grid_visit_pairs_range(g, r, u, e, nbo_log_pair, &part));
        u = e;
    }
    NB_CHECK(part.n == want_n);
    for (int64_t t = 0; t < want_n; t++) NB_CHECK(got[t].i < got[t].j);
    nbo_sort_pairs(got, want_n);
    NB_CHECK(nbo_same_pairs(got, want_n, want, want_n));
    nbo_sort_pairs(part.p, part.n);
    NB_CHECK(nbo_same_pairs(part.p, part.n, want, want_n));
    // a short buffer: the first `cap` pairs of the full order, and the full count
    if (want_n > 1) {
        int64_t cap = 1 + nbt_int((int32_t)(want_n < 100000 ? want_n - 1 : 99999));
        nbPair *part_buf = (nbPair *)malloc((size_t)cap * sizeof(nbPair));
        NB_CHECK(part_buf != NULL);
        NB_CHECK_STATUS(nb_grid_pairs(g, r, part_buf, cap, &found), NB_ERR_BUFFER_TOO_SMALL);
        NB_CHECK(found == want_n);
        NB_CHECK(memcmp(part_buf, log.p, (size_t)cap * sizeof(nbPair)) == 0);
        free(part_buf);
        nboPairLog stop = {NULL, 0, 0, cap};
        NB_CHECK_OK(nb_grid_visit_pairs(g, r, nbo_log_pair, &stop));
        NB_CHECK(nbo_same_pairs(stop.p, stop.n, log.p, cap));
        free(stop.p);
    }
    free(part.p);
    free(log.p);
    free(got);
    free(want);
    return 0;
}

// The radius query finds the oracle's points; a short buffer gets the full count and the
// first entries of the full order.
static int check_radius(const nbGrid *g, const nboSet *s, const double *c, double r)
{
    int32_t wn = 0, found = -1;
    int32_t *want = nbo_radius(s, c, r, &wn);
    int32_t *got = (int32_t *)malloc(((size_t)s->n + 1) * sizeof(int32_t));
    int32_t *order = (int32_t *)malloc(((size_t)s->n + 1) * sizeof(int32_t));
    NB_CHECK(got != NULL && order != NULL);
    NB_CHECK_OK(nb_grid_query_radius(g, c, r, NB_FILTER_ALL, got, s->n + 1, &found));
    if (found != wn)
        fprintf(stderr, "  radius: c=(%.17g,%.17g) r=%.17g want %d found %d\n", c[0], c[1], r, wn,
                found);
    NB_CHECK(found == wn);
    memcpy(order, got, (size_t)found * sizeof(int32_t));
    nbo_sort_indices(got, found);
    NB_CHECK(nbo_same_indices(got, found, want, wn));
    if (wn > 1) {
        NB_CHECK_STATUS(nb_grid_query_radius(g, c, r, NB_FILTER_ALL, got, wn - 1, &found),
                        NB_ERR_BUFFER_TOO_SMALL);
        NB_CHECK(found == wn);
        NB_CHECK(nbo_same_indices(got, wn - 1, order, wn - 1));
    }
    free(order);
    free(want);
    free(got);
    return 0;
}

static int check_box(const nbGrid *g, const nboSet *s, const double *lo, const double *hi)
{
    int32_t wn = 0, found = -1;
    int32_t *want = nbo_box(s, lo, hi, &wn);
    int32_t *got = (int32_t *)malloc(((size_t)s->n + 1) * sizeof(int32_t));
    NB_CHECK(got != NULL);
    NB_CHECK_OK(
        nb_grid_query_box(g, NBT_BOX(lo, hi, s->dim), NB_FILTER_ALL, got, s->n + 1, &found));
    NB_CHECK(found == wn);
    nbo_sort_indices(got, found);
    NB_CHECK(nbo_same_indices(got, found, want, wn));
    free(want);
    free(got);
    return 0;
}

// kNN gives the oracle's first min(k, N) neighbours in (dist2, index) order, dist2 bit for bit.
// nb_grid_visit_knn's neighbours against the oracle's, one by one.
typedef struct KnnSeen {
    const nbNeighbor *want;
    int32_t n, cap, wrong;
} KnnSeen;

static bool same_neighbor(int32_t index, double dist2, void *user)
{
    KnnSeen *s = (KnnSeen *)user;
    if (s->n >= s->cap || s->want[s->n].index != index || s->want[s->n].dist2 != dist2) s->wrong++;
    s->n++;
    return true;
}

static int check_knn(const nbGrid *g, const nboSet *s, const double *q, int32_t k)
{
    int32_t want = 0, found = -1;
    nbNeighbor *all = nbo_knn(s, q, k, &want);
    nbNeighbor *got = (nbNeighbor *)malloc(((size_t)k + 1) * sizeof(nbNeighbor));
    NB_CHECK(got != NULL);
    NB_CHECK_OK(nb_grid_knn(g, q, NB_FILTER_ALL, (double)INFINITY, got, k, &found));
    NB_CHECK(found == want);
    for (int32_t t = 0; t < want; t++) {
        if (got[t].index != all[t].index || got[t].dist2 != all[t].dist2)
            fprintf(stderr, "  knn k=%d rank %d: want %d (%.17g) got %d (%.17g)\n", k, t,
                    all[t].index, all[t].dist2, got[t].index, got[t].dist2);
        NB_CHECK(got[t].index == all[t].index && got[t].dist2 == all[t].dist2);
    }
    // The callback form: the same neighbours in the same order (its heap is on the stack up to
    // NB_KNN_STACK and allocated above it: k = N + 3 takes that path on the larger sets).
    KnnSeen seen = {all, 0, want, 0};
    NB_CHECK_OK(nb_grid_visit_knn(g, q, NB_FILTER_ALL, (double)INFINITY, k, same_neighbor, &seen));
    NB_CHECK(seen.n == want && seen.wrong == 0);
    // Within max_distance: the oracle's list cut where it passes the limit. The limit is the
    // distance of one of the answers, so points right at it decide `<=`.
    if (want > 0) {
        const double md = sqrt(all[want / 2].dist2);
        int32_t within = 0;
        while (within < want && all[within].dist2 <= md * md) within++;
        NB_CHECK_OK(nb_grid_knn(g, q, NB_FILTER_ALL, md, got, k, &found));
        NB_CHECK(found == within);
        for (int32_t t = 0; t < within; t++)
            NB_CHECK(got[t].index == all[t].index && got[t].dist2 == all[t].dist2);
        KnnSeen cut = {all, 0, within, 0};
        NB_CHECK_OK(nb_grid_visit_knn(g, q, NB_FILTER_ALL, md, k, same_neighbor, &cut));
        NB_CHECK(cut.n == within && cut.wrong == 0);
    }
    free(all);
    free(got);
    return 0;
}

// Builds s into a grid (cell size `cell`, 0 = default) tuned for r and checks every query.
static int check_all(const nboSet *s, double r, double cell, int queries)
{
    nbGridDesc desc = {0};
    desc.dim = s->dim;
    desc.cell_size = cell;
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints pts = {.data = s->p, .count = s->n, .dim = s->dim, .stride = 0};
    NB_CHECK_OK(nb_grid_build(g, &pts, r));
    NB_CHECK_OK(nb_grid_validate(g));
    NB_CHECK(nb_grid_count(g) == s->n);
    if (check_pairs(g, s, r)) return 1;
    // other radii on the same grid stay exact
    if (check_pairs(g, s, r * 0.5)) return 1;
    if (s->n <= 600 && check_pairs(g, s, r * 2.5 + 1e-300)) return 1;
    double mn[3] = {0, 0, 0}, mx[3] = {0, 0, 0};
    for (int32_t i = 0; i < s->n; i++)
        for (int a = 0; a < s->dim; a++) {
            double v = s->p[(size_t)i * s->dim + a];
            if (i == 0 || v < mn[a]) mn[a] = v;
            if (i == 0 || v > mx[a]) mx[a] = v;
        }
    for (int t = 0; t < queries; t++) {
        double c[3], lo[3], hi[3];
        for (int a = 0; a < s->dim; a++) {
            double span = mx[a] - mn[a] + r + 1e-300;
            // inside, on a data point, or far outside the data
            if (t % 4 == 0 && s->n > 0)
                c[a] = s->p[(size_t)nbt_int(s->n) * s->dim + a];
            else if (t % 4 == 3)
                c[a] = mn[a] + nbt_range(-10.0, 10.0) * span;
            else
                c[a] = nbt_range(mn[a] - span * 0.1, mx[a] + span * 0.1);
            double w = span * nbt_unit() * 0.3;
            lo[a] = c[a] - w;
            hi[a] = c[a] + w;
        }
        if (t % 4 == 0 && s->n > 0) { // a box whose faces lie exactly on data points
            int32_t i = nbt_int(s->n), j = nbt_int(s->n);
            for (int a = 0; a < s->dim; a++) {
                double u = s->p[(size_t)i * s->dim + a], v = s->p[(size_t)j * s->dim + a];
                lo[a] = u < v ? u : v;
                hi[a] = u < v ? v : u;
            }
        }
        double qr = t % 3 == 0 ? r : r * nbt_range(0.0, 3.0);
        if (check_radius(g, s, c, qr)) return 1;
        if (check_box(g, s, lo, hi)) return 1;
        int32_t k = t % 5 == 0 ? s->n + 3 : 1 + nbt_int(t % 2 ? 5 : 40);
        if (check_knn(g, s, c, k)) return 1;
    }
    NB_CHECK_OK(nb_grid_validate(g));
    nb_grid_destroy(g);
    return 0;
}

// Checks a set at its radius with the default cell, a cell of half the radius (2+ rings), a
// power-of-two cell, and a cell much larger than the radius.
static int check_cells(const nboSet *s, double r, int queries)
{
    if (check_all(s, r, 0.0, queries)) return 1;
    if (r > 0.0) {
        if (check_all(s, r, r * 0.5, queries / 2)) return 1;
        if (check_all(s, r, pow(2.0, floor(log2(r))), queries / 2)) return 1;
        if (check_all(s, r, r * 7.0, queries / 2)) return 1;
    }
    return 0;
}

// ---- data sets ----

static int test_uniform(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        for (int rep = 0; rep < 3; rep++) {
            int32_t n = 300 + nbt_int(1500);
            nboSet s = nbo_set_new(n, dim);
            double side = dim == 2 ? sqrt((double)n) : cbrt((double)n);
            for (int32_t i = 0; i < n * dim; i++) s.p[i] = nbt_range(-side / 2, side / 2);
            if (check_cells(&s, dim == 2 ? 1.75 : 1.34, 40)) return 1;
            nbo_set_free(&s);
        }
    }
    return 0;
}

static int test_clustered(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        int32_t n = 2000;
        nboSet s = nbo_set_new(n, dim);
        for (int32_t i = 0; i < n;) {
            double c[3] = {nbt_range(-500, 500), nbt_range(-500, 500), nbt_range(-500, 500)};
            double sd = pow(10.0, nbt_range(-2.0, 1.0));
            for (int32_t m = 0; m < 100 && i < n; m++, i++)
                for (int a = 0; a < dim; a++) s.p[(size_t)i * dim + a] = c[a] + sd * nbt_gauss();
        }
        if (check_cells(&s, 1.0, 30)) return 1;
        nbo_set_free(&s);
    }
    return 0;
}

// Integer lattices: many pairs exactly r apart and points exactly on cell edges, at and around
// the origin (negative coordinates), with duplicates.
static int test_lattice_exact_distances(void)
{
    const double spacings[] = {1.0, 0.1, 0.3, 1.75, 0.5};
    for (int dim = 2; dim <= 3; dim++)
        for (size_t sp = 0; sp < sizeof spacings / sizeof spacings[0]; sp++) {
            double h = spacings[sp];
            int side = dim == 2 ? 24 : 8;
            int32_t n = dim == 2 ? side * side : side * side * side;
            nboSet s = nbo_set_new(n + 50, dim);
            int32_t i = 0;
            for (int z = 0; z < (dim == 3 ? side : 1); z++)
                for (int y = 0; y < side; y++)
                    for (int x = 0; x < side; x++, i++) {
                        s.p[(size_t)i * dim] = (x - side / 2) * h;
                        s.p[(size_t)i * dim + 1] = (y - side / 2) * h;
                        if (dim == 3) s.p[(size_t)i * dim + 2] = (z - side / 2) * h;
                    }
            for (int32_t d = 0; d < 50; d++, i++) // duplicates of random lattice points
                memcpy(s.p + (size_t)i * dim, s.p + (size_t)nbt_int(n) * dim,
                       (size_t)dim * sizeof(double));
            // r equal to the spacing, its diagonal, and the cell edge itself
            if (check_cells(&s, h, 20)) return 1;
            if (check_all(&s, h * sqrt(2.0), 0.0, 10)) return 1;
            if (check_all(&s, h, h, 10)) return 1;
            if (check_all(&s, 2 * h, h, 10)) return 1;
            nbo_set_free(&s);
        }
    return 0;
}

// Pairs exactly r apart straddling a cell edge, where x / cell rounds to the next cell.
static int test_rounding_at_cell_edges(void)
{
    for (int rep = 0; rep < 40; rep++) {
        int dim = 2 + rep % 2;
        int32_t n = 400;
        nboSet s = nbo_set_new(n, dim);
        double r = pow(10.0, nbt_range(-3, 3));
        double far = rep % 3 == 0 ? 1e12 : rep % 3 == 1 ? 1e6 : 0.0;
        for (int32_t i = 0; i + 1 < n; i += 2) {
            for (int a = 0; a < dim; a++) {
                // an edge of a cell of size r, then the pair straddling it exactly r apart
                double e = (far + (double)nbt_int(100) - 50.0) * r;
                double x = e - r * nbt_unit();
                s.p[(size_t)i * dim + a] = x;
                s.p[(size_t)(i + 1) * dim + a] = a == 0 ? x + r : x;
            }
        }
        if (check_all(&s, r, 0.0, 10)) return 1;
        if (check_all(&s, r, r, 5)) return 1;
        nbo_set_free(&s);
    }
    return 0;
}

static int test_far_from_origin(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        int32_t n = 800;
        nboSet s = nbo_set_new(n, dim);
        for (int32_t i = 0; i < n * dim; i++) s.p[i] = (i % 2 ? -1e12 : 1e12) + nbt_range(0, 20);
        if (check_cells(&s, 1.0, 20)) return 1;
        for (int32_t i = 0; i < n * dim; i++) s.p[i] = nbt_range(-1e12, 1e12); // far-flung: hashed
        if (check_all(&s, 1e9, 0.0, 20)) return 1;
        if (check_all(&s, 1.0, 0.0, 20)) return 1;
        nbo_set_free(&s);
    }
    return 0;
}

static int test_degenerate_extents(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        int32_t n = 500;
        nboSet s = nbo_set_new(n, dim);
        // all points on a line (zero-area extent), then all in one tiny cell, then one point
        for (int32_t i = 0; i < n; i++) {
            s.p[(size_t)i * dim] = nbt_range(-100, 100);
            s.p[(size_t)i * dim + 1] = 3.0;
            if (dim == 3) s.p[(size_t)i * dim + 2] = -2.0;
        }
        if (check_cells(&s, 0.5, 20)) return 1;
        for (int32_t i = 0; i < n * dim; i++) s.p[i] = 5.0 + nbt_range(0, 1e-3);
        if (check_cells(&s, 1.0, 20)) return 1; // all points in one cell
        if (check_all(&s, 1e-4, 0.0, 20)) return 1;
        if (check_all(&s, 1e6, 0.0, 10)) return 1; // r far larger than the extent
        if (check_all(&s, 0.0, 0.0, 10)) return 1; // r = 0: duplicates only
        for (int32_t i = 0; i < n * dim; i++) s.p[i] = (double)nbt_int(4); // heavy duplicates
        if (check_all(&s, 0.0, 0.0, 10)) return 1;
        if (check_cells(&s, 1.0, 10)) return 1;
        s.n = 1;
        if (check_cells(&s, 1.0, 10)) return 1;
        s.n = 0;
        if (check_cells(&s, 1.0, 10)) return 1;
        nbo_set_free(&s);
    }
    return 0;
}

// Radius 0 and subnormal radii where r*r underflows to 0 (the double test then accepts pairs
// whose squared distances underflow too); subnormal and huge coordinates; r*r overflowing.
static int test_extreme_magnitudes(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        int32_t n = 300;
        nboSet s = nbo_set_new(n, dim);
        for (int32_t i = 0; i < n * dim; i++) s.p[i] = nbt_range(-1.0, 1.0) * 0x1p-1060;
        if (check_all(&s, 0x1p-1065, 0.0, 10)) return 1;
        if (check_all(&s, 0.0, 0.0, 10)) return 1;
        for (int32_t i = 0; i < n * dim; i++) s.p[i] = nbt_range(-1.0, 1.0) * 1e-170;
        if (check_all(&s, 1e-200, 0.0, 10)) return 1; // squares underflow: all pairs match
        if (check_all(&s, 1e-170, 0.0, 10)) return 1;
        for (int32_t i = 0; i < n * dim; i++) s.p[i] = nbt_range(-1.0, 1.0) * 1e300;
        if (check_all(&s, 1e299, 0.0, 10)) return 1;
        if (check_all(&s, 1e200, 0.0, 10)) return 1; // r*r overflows: every pair matches
        if (check_all(&s, 1.0, 0.0, 10)) return 1;
        nbo_set_free(&s);
    }
    return 0;
}

// kNN where the squared distances overflow to infinity: every point still comes back, ordered
// by index among equal (infinite) distances. (Found by fuzz_grid: an overflowing bound once
// read as "every cell visited".)
static int test_knn_infinite_distances(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        nboSet s = nbo_set_new(4, dim);
        s.n = 2;
        s.p[dim + 1] = DBL_MAX; // (0, 0[, 0]) and (0, DBL_MAX[, 0])
        nbGridDesc desc = {0};
        desc.dim = dim;
        nbGrid *g = NULL;
        NB_CHECK_OK(nb_grid_create(&desc, &g));
        nbPoints pts = {.data = s.p, .count = 2, .dim = dim, .stride = 0};
        NB_CHECK_OK(nb_grid_build(g, &pts, 0.0));
        const double far[3] = {0.0, -DBL_MAX, 0.0}, near[3] = {0.0, 1.0, 0.0};
        if (check_knn(g, &s, far, 2)) return 1;
        if (check_knn(g, &s, far, 1)) return 1;
        if (check_knn(g, &s, near, 2)) return 1;
        for (int32_t i = 0; i < 4 * dim; i++) s.p[i] = (i % 3 ? DBL_MAX : -DBL_MAX) * nbt_unit();
        s.n = 4;
        pts.count = 4;
        NB_CHECK_OK(nb_grid_build(g, &pts, 0.0));
        if (check_knn(g, &s, far, 4)) return 1;
        if (check_knn(g, &s, near, 3)) return 1;
        nb_grid_destroy(g);
        nbo_set_free(&s);
    }
    return 0;
}

// A larger set, so dense rows and spans are long and the scratch blocks split.
static int test_larger(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        int32_t n = 6000;
        nboSet s = nbo_set_new(n, dim);
        double side = dim == 2 ? sqrt((double)n) : cbrt((double)n);
        for (int32_t i = 0; i < n * dim; i++) s.p[i] = nbt_range(0, side);
        if (check_all(&s, dim == 2 ? 1.75 : 1.34, 0.0, 20)) return 1;
        for (int32_t i = 0; i < n * dim; i++) s.p[i] = nbt_range(0, 3); // dense: big blocks
        if (check_all(&s, 1.0, 0.0, 5)) return 1;
        nbo_set_free(&s);
    }
    return 0;
}

// Both cell layouts are really exercised.
static int test_dense_and_hashed_paths(void)
{
    nboSet s = nbo_set_new(1000, 2);
    for (int32_t i = 0; i < 2000; i++) s.p[i] = nbt_range(0, 30);
    nbGridDesc desc = {0};
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints pts = {.data = s.p, .count = 1000, .dim = 2, .stride = 0};
    nbGridInfo info;
    NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
    NB_CHECK_OK(nb_grid_info(g, &info));
    NB_CHECK(!info.hashed && info.cells == 30 * 30 && info.points == 1000 && info.dim == 2);
    NB_CHECK(info.cell_size >= 1.0 && info.cell_size < 1.0 + 1e-9);
    NB_CHECK_OK(nb_grid_build(g, &pts, 0.01)); // 3000^2 cells for 1000 points: hashed
    NB_CHECK_OK(nb_grid_info(g, &info));
    NB_CHECK(info.hashed && info.cells <= 1000);
    NB_CHECK_OK(nb_grid_validate(g));
    NB_CHECK(nb_grid_memory_bytes(g) < 1000 * 200);
    nb_grid_destroy(g);
    nbo_set_free(&s);
    return 0;
}

// Clusters of points (spread 0.05 to 2) in the box [offset, offset + side)^dim.
static nboSet ranked_set(int32_t n, int dim, double side, double offset)
{
    nboSet s = nbo_set_new(n, dim);
    for (int32_t i = 0; i < n;) {
        double c[3], sd = pow(10.0, nbt_range(-1.3, 0.3));
        for (int a = 0; a < 3; a++) c[a] = offset + nbt_range(0.0, side);
        for (int32_t m = 0, size = 1 + nbt_int(60); m < size && i < n; m++, i++)
            for (int a = 0; a < dim; a++) {
                const double x = c[a] + sd * nbt_gauss();
                s.p[(size_t)i * dim + a] = x < offset ? offset : x >= offset + side ? c[a] : x;
            }
    }
    return s;
}

// The set's layout at radius r with the default cell is `want` (0 dense, 1 ranked, 2 hashed);
// a strided copy builds the same grid (same pairs in the same order, same cell order).
static int check_layout(const nboSet *s, double r, double cell, int want)
{
    nbGridDesc desc = {0};
    desc.dim = s->dim;
    desc.cell_size = cell;
    nbGrid *g = NULL, *h = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    NB_CHECK_OK(nb_grid_create(&desc, &h));
    nbPoints pts = {.data = s->p, .count = s->n, .dim = s->dim, .stride = 0};
    NB_CHECK_OK(nb_grid_build(g, &pts, r));
    nbGridInfo info;
    NB_CHECK_OK(nb_grid_info(g, &info));
    if (info.hashed != (want > 0) || info.ranked != (want == 1))
        fprintf(stderr, "  layout: n=%d dim=%d cells=%lld hashed=%d ranked=%d, want %d\n", s->n,
                s->dim, (long long)info.cells, info.hashed, info.ranked, want);
    NB_CHECK(info.hashed == (want > 0) && info.ranked == (want == 1));
    NB_CHECK_OK(nb_grid_validate(g));
    const int dim = s->dim, step = dim + 2;
    double *wide = (double *)calloc((size_t)s->n * (size_t)step + 1, sizeof(double));
    NB_CHECK(wide != NULL);
    for (int32_t i = 0; i < s->n; i++)
        memcpy(wide + (size_t)i * step, nbo_pt(s, i), dim * sizeof(double));
    nbPoints spts = {.data = wide, .count = s->n, .dim = dim, .stride = step * sizeof(double)};
    NB_CHECK_OK(nb_grid_build(h, &spts, r));
    NB_CHECK_OK(nb_grid_validate(h));
    int64_t ng = 0, nh = 0;
    NB_CHECK_OK(nb_grid_count_pairs(g, r, &ng));
    nbPair *pg = (nbPair *)malloc(((size_t)ng + 1) * 2 * sizeof(nbPair)), *ph = pg + ng + 1;
    int32_t *og = (int32_t *)malloc(((size_t)s->n + 1) * 2 * sizeof(int32_t)), *oh = og + s->n + 1;
    NB_CHECK(pg != NULL && og != NULL);
    NB_CHECK_OK(nb_grid_pairs(g, r, pg, ng + 1, &ng));
    NB_CHECK_OK(nb_grid_pairs(h, r, ph, ng + 1, &nh));
    NB_CHECK(ng == nh && memcmp(pg, ph, (size_t)ng * sizeof(nbPair)) == 0);
    NB_CHECK_OK(nb_grid_cell_order(g, og, s->n, &(int32_t){0}));
    NB_CHECK_OK(nb_grid_cell_order(h, oh, s->n, &(int32_t){0}));
    NB_CHECK(memcmp(og, oh, (size_t)s->n * sizeof(int32_t)) == 0);
    free(pg);
    free(og);
    free(wide);
    nb_grid_destroy(g);
    nb_grid_destroy(h);
    return 0;
}

// A box of 4 to 64 cells a point takes the ranked layout (only occupied cells numbered, found
// by rank in a bitmap of the box): every query against the oracle, 2D and 3D, around the origin,
// with negative coordinates, and far from it (cells beyond 32 bits: the scalar cell pass);
// packed and strided.
static int test_ranked_cells(void)
{
    const double offsets[3] = {0.0, -60.0, 3e9};
    for (int dim = 2; dim <= 3; dim++) {
        for (int t = 0; t < 3; t++) {
#if defined(NBI_AVX512)
            nbi_avx512_off = t == 0; // the two-lane count pass over every point too
#endif
            const int32_t n = 1500 + nbt_int(1000);
            // about 16 cells of 1 a point
            const double side = dim == 2 ? sqrt(16.0 * n) : cbrt(16.0 * n);
            nboSet s = ranked_set(n, dim, side, offsets[t]);
            if (check_layout(&s, 1.0, 0.0, 1)) return 1;
            if (check_all(&s, 1.0, 0.0, 30)) return 1;
            if (check_all(&s, 1.0, 1.0 / 1.5, 10)) return 1; // about 54 cells a point: ranked
            nbo_set_free(&s);
        }
    }
#if defined(NBI_AVX512)
    nbi_avx512_off = 0;
#endif
    return 0;
}

// Sparse sets that take the hashed layout, with many Z-order blocks: all pairs there find a
// cell's neighbours in its block's bitmap and only those across a block's face in the table
// (pairs.c, "hashed views in Z order"). Clusters that straddle the blocks' faces, a sphere's
// shell and two planes in 3D, clusters in 2D, at the default cell
// (one ring: the inner cells' fast path), at cells of r / 2.2 (three rings) and r / 9.5 (ten
// rings: the table walk), and with cells not a power of two apart from the origin.
static nboSet sparse_set(int dim, int shape, int32_t n)
{
    nboSet s = nbo_set_new(n, dim);
    double centre[64][3];
    for (int c = 0; c < 64; c++)
        for (int a = 0; a < 3; a++)
            centre[c][a] = 32.0 * nbt_int(dim == 3 ? 12 : 40) + nbt_range(-1.5, 1.5);
    for (int32_t i = 0; i < n; i++) {
        double *q = s.p + (size_t)i * dim, g[3] = {nbt_gauss(), nbt_gauss(), nbt_gauss()};
        if (shape == 0) { // clusters of a few cells around block corners and faces
            const double *c = centre[nbt_int(64)];
            for (int a = 0; a < dim; a++) q[a] = c[a] + 2.0 * g[a] - 7.0;
        } else if (shape == 1) { // a shell of radius 60 about (70, 70, 70)
            const double len = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]) + 1e-300;
            for (int a = 0; a < 3; a++) q[a] = 70.0 + 60.0 * g[a] / len;
        } else { // two planes, x = 33 and z = y / 2 + 1
            const double u = nbt_range(0, 120), w = nbt_range(0, 120);
            q[0] = nbt_int(2) ? 33.0 : u;
            q[1] = nbt_int(2) ? w : u;
            q[2] = q[0] == 33.0 ? w : q[1] * 0.5 + 1.0;
        }
    }
    return s;
}

static int test_hashed_blocks(void)
{
    static const double cells[3] = {0.0, 1.0 / 2.2, 1.0 / 9.5};
    for (int dim = 2; dim <= 3; dim++)
        for (int shape = 0; shape < (dim == 3 ? 3 : 1); shape++)
            for (int t = 0; t < 3; t++) {
                nboSet s = sparse_set(dim, shape, 3000);
                if (t == 1) // an offset off the cells' grid
                    for (int32_t i = 0; i < s.n * dim; i++) s.p[i] += 1000.3;
                if (check_layout(&s, 1.0, 0.0, 2)) return 1;
                if (check_all(&s, 1.0, cells[t], 4)) return 1;
                nbo_set_free(&s);
            }
    return 0;
}

// A grid of the set's points with cells of `cell`, built at radius r; NULL when that fails.
static nbGrid *grid_of(const nboSet *s, double cell, double r)
{
    nbGridDesc desc = {0};
    desc.dim = s->dim;
    desc.cell_size = cell;
    nbGrid *g = NULL;
    nbPoints pts = {.data = s->p, .count = s->n, .dim = s->dim, .stride = 0};
    if (nb_grid_create(&desc, &g) == NB_OK && nb_grid_build(g, &pts, r) == NB_OK) return g;
    nb_grid_destroy(g);
    return NULL;
}

// The hashed layout's table, filled on first use (cell_table.h, nbiCtabLazy): a build and all
// pairs in 3D at one ring leave it pending (they find a block's outside neighbours in the codes),
// and the first queries, from four threads at once (under ThreadSanitizer in the suite's TSan
// build), fill it once and agree with brute force; a rebuild makes it pending again.
enum { LAZY_THREADS = 4, LAZY_QUERIES = 48, LAZY_MAX = 3000 };
typedef struct LazyJob {
    const nbGrid *g;
    const double (*centre)[3];
    int32_t *const *want;
    const int32_t *want_n;
    int32_t first; // this thread starts at query `first`, so that the threads' first lookups race
    int failures;
} LazyJob;

static void *lazy_worker(void *arg)
{
    LazyJob *job = (LazyJob *)arg;
    int32_t *out = (int32_t *)malloc(LAZY_MAX * sizeof(int32_t));
    for (int32_t t = 0; t < LAZY_QUERIES && out != NULL; t++) {
        const int32_t q = (job->first + t) % LAZY_QUERIES;
        int32_t found = -1;
        if (nb_grid_query_radius(job->g, job->centre[q], 1.5, NB_FILTER_ALL, out, LAZY_MAX,
                                 &found) != NB_OK) {
            job->failures++;
            continue;
        }
        nbo_sort_indices(out, found);
        if (!nbo_same_indices(out, found, job->want[q], job->want_n[q])) job->failures++;
    }
    if (out == NULL) job->failures++;
    free(out);
    return NULL;
}

static int test_hashed_lazy_table(void)
{
    for (int shape = 0; shape < 3; shape++) {
        nboSet s = sparse_set(3, shape, 3000);
        nbGrid *g = grid_of(&s, 1.0, 1.0);
        NB_CHECK(g != NULL && g->hashed);
        for (int round = 0; round < 2; round++) {
            if (round == 1) { // a rebuild of moved points: pending again
                for (int32_t i = 0; i < s.n * 3; i++) s.p[i] += nbt_range(-0.3, 0.3);
                const nbPoints pts = nbo_points(&s);
                NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
                NB_CHECK(g->hashed);
            }
            NB_CHECK(nbi_ctab_is_filled(&g->table) == !NBI_CTAB_LAZY);
            int64_t count = -1, want = 0;
            NB_CHECK_OK(nb_grid_count_pairs(g, 1.0, &count));
            free(nbo_pairs(&s, 1.0, &want));
            NB_CHECK(count == want && want > 0);
            NB_CHECK(nbi_ctab_is_filled(&g->table) == !NBI_CTAB_LAZY); // all pairs: no lookup
            double centre[LAZY_QUERIES][3];
            int32_t *wanted[LAZY_QUERIES], wanted_n[LAZY_QUERIES];
            for (int q = 0; q < LAZY_QUERIES; q++) {
                const double *p = s.p + (size_t)nbt_int(s.n) * 3;
                for (int a = 0; a < 3; a++) centre[q][a] = p[a] + nbt_range(-1.0, 1.0);
                wanted[q] = nbo_radius(&s, centre[q], 1.5, &wanted_n[q]);
                NB_CHECK(wanted_n[q] <= LAZY_MAX);
            }
            LazyJob jobs[LAZY_THREADS];
            for (int t = 0; t < LAZY_THREADS; t++) {
                jobs[t].g = g;
                jobs[t].centre = (const double(*)[3])centre;
                jobs[t].want = wanted;
                jobs[t].want_n = wanted_n;
                jobs[t].first = t * (LAZY_QUERIES / LAZY_THREADS);
                jobs[t].failures = 0;
            }
#if defined(NBT_THREADS)
            pthread_t tid[LAZY_THREADS];
            for (int t = 0; t < LAZY_THREADS; t++)
                NB_CHECK(pthread_create(&tid[t], NULL, lazy_worker, &jobs[t]) == 0);
            for (int t = 0; t < LAZY_THREADS; t++) NB_CHECK(pthread_join(tid[t], NULL) == 0);
#else
            for (int t = 0; t < LAZY_THREADS; t++) lazy_worker(&jobs[t]);
#endif
            for (int t = 0; t < LAZY_THREADS; t++) NB_CHECK(jobs[t].failures == 0);
            for (int q = 0; q < LAZY_QUERIES; q++) free(wanted[q]);
            NB_CHECK(nbi_ctab_is_filled(&g->table));
            NB_CHECK_OK(nb_grid_validate(g));
        }
        nb_grid_destroy(g);
        nbo_set_free(&s);
    }
    return 0;
}

// Boxes wider than the codes reach (21 bits an axis in 3D, 32 in 2D): the clusters, shell and
// planes of hashed_blocks, with a few far points that widen the box to 2^w cells a side. Where a
// cell's low code fits a word with its number, the cells are in the Z order of their exact
// offsets and all pairs walks them block by block (grid.c, nbi_hashed_order; pairs.c); wider
// boxes keep no low codes and probe the table. Both against brute force, at 1, 3 and 10 rings.
static int test_hashed_beyond_codes(void)
{
    static const int widths[2][6] = {{33, 35, 40, 50, 60, 0}, {22, 24, 26, 31, 37, 45}};
    for (int dim = 2; dim <= 3; dim++)
        for (int t = 0; t < 6 && widths[dim - 2][t] > 0; t++) {
            const int w = widths[dim - 2][t];
            const int shape = t % (dim == 3 ? 3 : 1);
            nboSet s = sparse_set(dim, shape, 1000);
            for (int32_t i = 0; i < 6; i++) // far points: corners and a face of the wide box
                for (int a = 0; a < dim; a++)
                    s.p[(size_t)i * dim + a] = (i >> a & 1) ? ldexp(1.0, w) - 0.5 : -3.25 * i;
            if (check_layout(&s, 1.0, 1.0, 2)) return 1;
            nbGrid *g = grid_of(&s, 1.0, 1.0);
            NB_CHECK(g != NULL);
            const int shift = nbi_code_shift(g->ext, dim);
            const int idb = 64 - __builtin_clzll((uint64_t)g->ncells - 1);
            NB_CHECK(shift > 0 && g->low_codes == (dim * shift + idb <= 64));
            nb_grid_destroy(g);
            if (check_all(&s, 1.0, 1.0, 4)) return 1;
            if (check_all(&s, 2.5, 1.0, 4)) return 1; // 3 rings
            if (t % 2 == 0 && check_all(&s, 10.0, 1.0, 0)) return 1;
            nbo_set_free(&s);
        }
    return 0;
}

// A heavy tail about one centre (log-normal distances, as the corpus' tail3d) at `offset` on
// every axis: cells of `scale` far smaller than the spread, boxes beyond the codes' reach.
static nboSet tail_set(int dim, int32_t n, double offset, double scale)
{
    nboSet s = nbo_set_new(n, dim);
    for (int32_t i = 0; i < n; i++) {
        double g[3] = {nbt_gauss(), nbt_gauss(), dim == 3 ? nbt_gauss() : 0.0};
        const double len = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]) + 1e-300;
        const double dist = scale * exp(3.0 * nbt_gauss());
        for (int a = 0; a < dim; a++) s.p[(size_t)i * dim + a] = offset + dist * g[a] / len;
    }
    for (int32_t i = 0; i + 1 < n && i < 20; i += 2) // pairs exactly r = scale apart on x
        for (int a = 0; a < dim; a++)
            s.p[(size_t)(i + 1) * dim + a] = s.p[(size_t)i * dim + a] + (a == 0 ? scale : 0.0);
    return s;
}

// The hashed build by sorting on two words (code and low code, or codes exact but too wide to
// share a word with the points' numbers): heavy tails at 0 and at 1e9 (boxes of 2^22 to 2^40
// cells a side), and boxes of 2^18 to 2^20 cells a side in 3D (2^28 to 2^31 in 2D), against
// brute force at one and three rings, with the table keyed by the cells' codes.
static int test_hashed_sorted_wide(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        for (int t = 0; t < 4; t++) { // tails: the cell sets the box's width
            const double offset = t % 2 ? 1e9 : 0.0, scale = t < 2 ? 1e-3 : 1e-2;
            nboSet s = tail_set(dim, 1000, offset, scale);
            if (check_layout(&s, scale, scale, 2)) return 1;
            nbGrid *g = grid_of(&s, scale, scale);
            NB_CHECK(g != NULL);
            const int shift = nbi_code_shift(g->ext, dim);
            NB_CHECK_OK(nb_grid_validate(g)); // (fills the table: its codes are then set)
            NB_CHECK(g->table.codes != NULL && g->low_codes == (shift > 0));
            nb_grid_destroy(g);
            if (check_all(&s, scale, scale, 8)) return 1;
            if (check_all(&s, 2.5 * scale, scale, 4)) return 1; // 3 rings
            nbo_set_free(&s);
        }
        static const int widths[2][3] = {{28, 30, 31}, {18, 19, 20}};
        for (int t = 0; t < 3; t++) { // exact codes too wide for a word with 2^11 numbers
            const int w = widths[dim - 2][t];
            nboSet s = sparse_set(dim, t % (dim == 3 ? 3 : 1), 2000);
            for (int32_t i = 0; i < 6; i++)
                for (int a = 0; a < dim; a++)
                    s.p[(size_t)i * dim + a] = (i >> a & 1) ? ldexp(1.0, w) - 0.5 : 0.25 * i;
            nbGrid *g = grid_of(&s, 1.0, 1.0);
            NB_CHECK(g != NULL);
            NB_CHECK_OK(nb_grid_validate(g));
            NB_CHECK(nbi_code_shift(g->ext, dim) == 0 && g->table.codes != NULL && !g->low_codes);
            nb_grid_destroy(g);
            if (check_all(&s, 1.0, 1.0, 8)) return 1;
            if (check_all(&s, 2.5, 1.0, 4)) return 1;
            nbo_set_free(&s);
        }
    }
    return 0;
}

// tail_set with its last four points far out (corners of a box beyond the codes' reach), so
// that its cells have codes and low codes.
static nboSet far_tail_set(int dim, int32_t n, double offset, double scale)
{
    nboSet s = tail_set(dim, n, offset, scale);
    for (int32_t i = 0; i < 4; i++)
        for (int a = 0; a < dim; a++)
            s.p[(size_t)(s.n - 1 - i) * dim + a] =
                offset + ((i >> a & 1) ? scale : -scale) * ldexp(1.0, dim == 3 ? 23 : 34);
    return s;
}

// The two-word sort's wide digits (nbi_msd_sort2: runs of nbi_msd_wide_min keys or more, lowered
// here to 64 so that 1000 points take them): heavy tails at 0 and at 1e9, 2D and 3D, against
// brute force, and the same cell order and point order as the narrow digits give.
static int test_sorted_wide_digits(void)
{
    const int32_t keep = nbi_msd_wide_min;
    for (int dim = 2; dim <= 3; dim++)
        for (int t = 0; t < 2; t++) {
            const double offset = t ? 1e9 : 0.0, scale = 1e-3;
            nboSet s = far_tail_set(dim, 1000 + 537 * t, offset, scale);
            nbGrid *narrow = grid_of(&s, scale, scale);
            nbi_msd_wide_min = 64;
            nbGrid *g = grid_of(&s, scale, scale);
            int bad = g == NULL || narrow == NULL || check_all(&s, scale, scale, 4);
            if (!bad) {
                bad = g->ncells != narrow->ncells || !g->low_codes || nb_grid_validate(g) != NB_OK;
                bad = bad || memcmp(g->idx.ptr, narrow->idx.ptr, (size_t)s.n * sizeof(int32_t));
                bad = bad || memcmp(g->cell_code.ptr, narrow->cell_code.ptr,
                                    (size_t)g->ncells * sizeof(uint64_t));
            }
            nbi_msd_wide_min = keep;
            nb_grid_destroy(g);
            nb_grid_destroy(narrow);
            NB_CHECK(!bad);
            nbo_set_free(&s);
        }
    return 0;
}

// One point's place in the oracle of the two-word sort's layout: its cell's code and low code
// (nbi_code_of, nbi_code_low of the exact offsets) and its index.
typedef struct WideKey {
    uint64_t code, low;
    int32_t i;
} WideKey;

static int wide_key_cmp(const void *pa, const void *pb)
{
    const WideKey *a = (const WideKey *)pa, *b = (const WideKey *)pb;
    if (a->code != b->code) return a->code < b->code ? -1 : 1;
    if (a->low != b->low) return a->low < b->low ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

// Grid g's layout (idx, the cells' codes and low codes) against the oracle: the points sorted by
// their cells' (code, low code), then by index.
static int wide_layout_matches(const nbGrid *g, const nboSet *s)
{
    const int dim = s->dim, shift = g->code_shift;
    WideKey *w = (WideKey *)malloc((size_t)s->n * sizeof *w);
    NB_CHECK(w != NULL);
    for (int32_t i = 0; i < s->n; i++) {
        int64_t k[3] = {0, 0, 0};
        for (int a = 0; a < dim; a++) k[a] = nbi_cell_i(&g->cm, nbo_pt(s, i)[a]);
        w[i].code = nbi_code_of(k, g->lo, dim, shift);
        w[i].low = shift > 0 ? nbi_code_low(k, g->lo, dim, shift) : 0;
        w[i].i = i;
    }
    qsort(w, (size_t)s->n, sizeof *w, wide_key_cmp);
    const int32_t *idx = (const int32_t *)g->idx.ptr, *start = (const int32_t *)g->start.ptr;
    const uint64_t *code = (const uint64_t *)g->cell_code.ptr;
    int bad = 0;
    for (int32_t p = 0, c = -1; p < s->n && !bad; p++) {
        const bool first = p == 0 || w[p].code != w[p - 1].code || w[p].low != w[p - 1].low;
        c += first;
        bad = idx[p] != w[p].i || c >= g->ncells || (first && start[c] != p) ||
              code[c] != w[p].code || (g->low_codes && code[g->ncells + c] != w[p].low);
    }
    free(w);
    NB_CHECK(!bad);
    return 0;
}

// The two-word sort's paths (grid.c, nbi_hashed_sorted_wide) against an oracle of the layout
// and against brute force: heavy tails at 0 and at 1e9 with far points (boxes beyond the codes'
// reach, so codes and low codes), 2D and 3D. Its 3D keys come eight at a time (AVX-512, packed
// points, where the CPU runs it) or by table (strided points, or the AVX-512 copies off; 2D one
// by one); its runs are counted in four tables and dealt through two cursors from
// nbi_msd_split_min keys on (lowered to every run here, and to none) and take wide digits from
// nbi_msd_wide_min (lowered to 64). Strided builds give the packed ones' pairs and order
// (check_layout), and all pairs (the Z-order walk's stencil steps from a face cell's code to its
// neighbours outside its block) agree with brute force.
static int test_sorted_wide_paths(void)
{
    const int32_t keep_wide = nbi_msd_wide_min, keep_split = nbi_msd_split_min;
    for (int dim = 2; dim <= 3; dim++)
        for (int t = 0; t < 2; t++) {
            const double offset = t ? 1e9 : 0.0, scale = 1e-3;
            nboSet s = far_tail_set(dim, 1200 + 317 * t, offset, scale);
            for (int mode = 0; mode < 4; mode++) {
                nbi_msd_split_min = mode == 1 ? 2 : mode == 2 ? INT32_MAX : keep_split;
                nbi_msd_wide_min = mode == 1 ? 64 : keep_wide;
#if defined(NBI_AVX512)
                nbi_avx512_off = mode == 3;
#endif
                nbGrid *g = grid_of(&s, scale, scale);
                int bad = g == NULL || !g->low_codes || nb_grid_validate(g) != NB_OK ||
                          wide_layout_matches(g, &s) != 0;
                nb_grid_destroy(g);
                if (mode != 2) bad = bad || check_layout(&s, scale, scale, 2) != 0;
                if (mode == 1) bad = bad || check_all(&s, scale, scale, 2) != 0;
                nbi_msd_split_min = keep_split;
                nbi_msd_wide_min = keep_wide;
#if defined(NBI_AVX512)
                nbi_avx512_off = 0;
#endif
                if (bad) fprintf(stderr, "  dim %d offset %g mode %d\n", dim, offset, mode);
                NB_CHECK(!bad);
            }
            nbo_set_free(&s);
        }
    return 0;
}

// Cells with more candidates than a cell's gathered lanes hold (pair_kernels.h, NBI_GATHER):
// a dense blob of 700 points two cells wide, and in 3D a cell of 80 points whose 13 half-stencil
// cells hold 80 each in their far corners (1119 candidates, more than a point's writes may take
// at once, none of them a pair), among scattered points: 3D (dense, ranked and hashed: the
// scattered points up to 1e6 away) and 2D, at one ring and at three (more spans than a list
// holds, so a cell's own run is done before its last spans are scanned), with duplicates,
// against brute force in every pair mode and in cross pairs.
static int test_crowded_cells(void)
{
    static const double spread[3] = {14.0, 40.0, 1e6}; // dense, ranked, hashed
    for (int t = 0; t < 4; t++) {
        const int dim = t < 3 ? 3 : 2;
        nboSet s = nbo_set_new(dim == 3 ? 2020 : 900, dim);
        for (int32_t i = 0; i < s.n; i++)
            for (int a = 0; a < dim; a++)
                s.p[(size_t)i * dim + a] =
                    i < 700 ? 10.0 + 2.0 * nbt_unit() : spread[t % 3] * nbt_unit();
        for (int32_t i = 600; i < 700; i++) // duplicates in the blob
            memcpy(s.p + (size_t)i * dim, s.p + (size_t)(i - 300) * dim, dim * sizeof(double));
        for (int32_t i = 900; dim == 3 && i < s.n; i++) { // the cell at (3, 3, 3), its stencil
            const int g = (i - 900) / 80, h = g - 1;      // g = 0: the cell; h: a stencil cell
            // the half stencil: (1, 0, 0), (-1..1, 1, 0), (-1..1, -1..1, 1)
            const int off[3] = {g == 0   ? 0
                                : h == 0 ? 1
                                         : (h - 1) % 3 - 1,
                                g == 0 || h == 0 ? 0
                                : h < 4          ? 1
                                                 : (h - 4) / 3 - 1,
                                g == 0 || h < 4 ? 0 : 1};
            for (int a = 0; a < 3; a++) { // far from the cell's points, which lie by its corner
                const double u = 0.1 * nbt_unit();
                s.p[(size_t)i * 3 + a] = 3.0 + (g == 0       ? u
                                                : off[a] > 0 ? 1.85 + u
                                                : off[a] < 0 ? -0.95 + u
                                                             : 0.85 + u);
            }
        }
        if (check_layout(&s, 1.0, 1.0, t % 3)) return 1;
        if (check_all(&s, 1.0, 1.0, 2)) return 1;
        if (check_all(&s, 1.0, 1.0 / 2.5, 0)) return 1; // 3 rings
        for (int rings = 1; rings <= 3; rings += 2) {   // cross pairs: the set against itself
            nbGrid *g = grid_of(&s, rings == 1 ? 1.0 : 1.0 / 2.5, 1.0);
            NB_CHECK(g != NULL);
            int64_t want_n = 0, found = -1, count = -1;
            nbPair *want = nbo_cross_pairs(&s, &s, 1.0, &want_n);
            nbPair *got = (nbPair *)malloc((size_t)(want_n + 1) * sizeof(nbPair));
            NB_CHECK(got != NULL);
            NB_CHECK_OK(nb_grid_cross_pairs(g, g, 1.0, got, want_n + 1, &found));
            NB_CHECK_OK(nb_grid_count_cross_pairs(g, g, 1.0, &count));
            NB_CHECK(found == want_n && count == want_n);
            nbo_sort_pairs(got, want_n);
            NB_CHECK(nbo_same_pairs(got, want_n, want, want_n));
            free(got);
            free(want);
            nb_grid_destroy(g);
        }
        nbo_set_free(&s);
    }
    return 0;
}

// The ranked layout's edges: a box of exactly 64 cells a point is ranked, one more row of
// cells hashed; rows of cells that fill whole 64-cell words, and a row of 65 cells; cells whose
// bits are the first and the last of their word.
static int test_ranked_edges(void)
{
    const int32_t n = 100;
    const int64_t shapes[4][2] = {{64, 100}, {100, 64}, {65, 98}, {64, 101}}; // cells per axis
    for (int t = 0; t < 4; t++) {
        nboSet s = nbo_set_new(n, 2);
        const int64_t ex = shapes[t][0], ey = shapes[t][1];
        for (int32_t i = 0; i < n; i++) { // cell (x, y) at its centre, the corners first
            int64_t x = nbt_int((int32_t)ex), y = nbt_int((int32_t)ey);
            if (i < 4) {
                x = i % 2 ? ex - 1 : 0;
                y = i / 2 ? ey - 1 : 0;
            }
            if (i >= 4 && i < 8) x = 63 * (i % 2); // the first and last bits of a word
            s.p[2 * i] = (double)x + 0.5;
            s.p[2 * i + 1] = (double)y + 0.5;
        }
        const bool ranked = ex * ey <= 64 * n;
        if (check_layout(&s, 0.75, 1.0, ranked ? 1 : 2)) return 1;
        if (check_all(&s, 0.75, 1.0, 20)) return 1;
        if (check_all(&s, 2.5, 1.0, 20)) return 1; // 3 rings
        nbo_set_free(&s);
    }
    // A few points (a ranked box needs 2 at least) in rows of exactly one word, 2D and 3D (planes
    // of whole words): each point at the first or the last cell of its row.
    for (int32_t m = 2; m <= 12; m++) {
        for (int dim = 2; dim <= 3; dim++) {
            nboSet s = nbo_set_new(m, dim);
            int64_t top[3] = {0, 0, 0}; // the highest cell per axis
            for (int32_t i = 0; i < m; i++) {
                const int64_t c[3] = {i % 2 ? 63 : 0, (i / 2) % 3, i / 6};
                for (int a = 0; a < dim; a++) {
                    s.p[(size_t)i * dim + a] = (double)c[a] + 0.5;
                    top[a] = c[a] > top[a] ? c[a] : top[a];
                }
            }
            const int64_t box = (top[0] + 1) * (top[1] + 1) * (dim == 3 ? top[2] + 1 : 1);
            const int want = box <= 4 * m + 64 ? 0 : box <= 64 * m ? 1 : 2;
            if (check_layout(&s, 0.75, 1.0, want)) return 1;
            if (check_all(&s, 0.75, 1.0, 10)) return 1;
            if (check_all(&s, 70.0, 1.0, 10)) return 1; // rings past the box
            nbo_set_free(&s);
        }
    }
    return 0;
}

// Cells more than 2^62 apart (a user cell far smaller than the data's spread) still pair up.
static int test_cells_far_apart(void)
{
    nbGridDesc desc = {0};
    desc.cell_size = 0.0625;
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    double p[6] = {-2.5e17, 0.0, 2.5e17, 0.0, 2.5e17, 1.0};
    nbPoints pts = {.data = p, .count = 3, .dim = 2, .stride = 0};
    NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
    nboSet s = {.p = p, .n = 3, .dim = 2};
    if (check_pairs(g, &s, 1e18)) return 1;
    if (check_pairs(g, &s, 1e200)) return 1;
    if (check_pairs(g, &s, 1.0)) return 1;
    int64_t count = 0;
    NB_CHECK_OK(nb_grid_count_pairs(g, 1e18, &count));
    NB_CHECK(count == 3);
    nb_grid_destroy(g);
    return 0;
}

// A radius spanning far too many cells of a sparse (hashed) grid is refused at once by the pair
// walks instead of costing ncells^2 steps, and counted another way; the same grid still walks
// at sensible radii.
static int test_pairs_cost_guard(void)
{
    enum { N = 40000 };
    nboSet s = nbo_set_new(N, 2);
    for (int32_t i = 0; i < 2 * N; i++) s.p[i] = nbt_range(0, 1e6);
    nbGridDesc desc = {0};
    desc.cell_size = 1.0;
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints pts = {.data = s.p, .count = N, .dim = 2, .stride = 0};
    NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
    nbGridInfo info;
    NB_CHECK_OK(nb_grid_info(g, &info));
    NB_CHECK(info.hashed);
    int64_t found = 7;
    nbPair buf[16];
    nboPairLog log = {NULL, 0, 0, 0};
    NB_CHECK_STATUS(nb_grid_pairs(g, 100.0, buf, 16, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(found == 0);
    NB_CHECK_STATUS(nb_grid_visit_pairs(g, 100.0, nbo_log_pair, &log), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_visit_pairs_range(g, 100.0, 0, 1, nbo_log_pair, &log),
                    NB_ERR_OUT_OF_RANGE);
    NB_CHECK(log.n == 0);
    NB_CHECK_OK(nb_grid_count_pairs(g, 2.0, &found)); // a few rings: fine
    // ... and right: the same count as a grid whose cell is the radius (one ring)
    nbGridDesc one_ring = {0};
    nbGrid *g2 = NULL;
    int64_t found2 = -1;
    NB_CHECK_OK(nb_grid_create(&one_ring, &g2));
    NB_CHECK_OK(nb_grid_build(g2, &pts, 2.0));
    NB_CHECK_OK(nb_grid_count_pairs(g2, 2.0, &found2));
    NB_CHECK(found == found2);
    // Counting need not walk the cells: it bins the points afresh (grid_count_bulk.c), so it
    // answers the radius the walk refuses, with a grid whose cell is that radius's count.
    NB_CHECK_OK(nb_grid_count_pairs(g, 100.0, &found));
    NB_CHECK_OK(nb_grid_build(g2, &pts, 100.0));
    NB_CHECK_OK(nb_grid_count_pairs(g2, 100.0, &found2));
    NB_CHECK(found == found2 && found > 0);
    nb_grid_destroy(g2);
    nboSet sub = s;
    sub.n = 4000; // the oracle on a subset keeps the test quick
    nbPoints pts_sub = {.data = s.p, .count = sub.n, .dim = 2, .stride = 0};
    NB_CHECK_OK(nb_grid_build(g, &pts_sub, 1.0));
    if (check_pairs(g, &sub, 3.0)) return 1;
    nb_grid_destroy(g);
    nbo_set_free(&s);
    return 0;
}

// Same input, same results in the same order.
static int test_deterministic(void)
{
    nboSet s = nbo_set_new(3000, 2);
    for (int32_t i = 0; i < 6000; i++) s.p[i] = nbt_range(-30, 30);
    nbGrid *a = NULL, *b = NULL;
    nbGridDesc desc = {0};
    NB_CHECK_OK(nb_grid_create(&desc, &a));
    NB_CHECK_OK(nb_grid_create(&desc, &b));
    nbPoints pts = {.data = s.p, .count = 3000, .dim = 2, .stride = 0};
    NB_CHECK_OK(nb_grid_build(a, &pts, 1.5));
    NB_CHECK_OK(nb_grid_build(b, &pts, 1.5));
    NB_CHECK_OK(nb_grid_build(b, &pts, 1.5));
    static nbPair pa[100000], pb[100000];
    int64_t fa = 0, fb = 0;
    NB_CHECK_OK(nb_grid_pairs(a, 1.5, pa, 100000, &fa));
    NB_CHECK_OK(nb_grid_pairs(b, 1.5, pb, 100000, &fb));
    NB_CHECK(fa == fb && fa > 0 && memcmp(pa, pb, (size_t)fa * sizeof(nbPair)) == 0);
    int32_t qa[3000], qb[3000], na = 0, nb = 0;
    double c[2] = {1.0, -2.0};
    NB_CHECK_OK(nb_grid_query_radius(a, c, 7.0, NB_FILTER_ALL, qa, 3000, &na));
    NB_CHECK_OK(nb_grid_query_radius(b, c, 7.0, NB_FILTER_ALL, qb, 3000, &nb));
    NB_CHECK(na == nb && na > 0 && memcmp(qa, qb, (size_t)na * sizeof(int32_t)) == 0);
    nb_grid_destroy(a);
    nb_grid_destroy(b);
    nbo_set_free(&s);
    return 0;
}

// Points inside an array of structs, through the stride.
static int test_stride(void)
{
    typedef struct Unit {
        int32_t id;
        double pos[3];
        float hp;
    } Unit;
    Unit units[500];
    nboSet s = nbo_set_new(500, 3);
    for (int i = 0; i < 500; i++) {
        units[i].id = i;
        for (int a = 0; a < 3; a++) s.p[i * 3 + a] = units[i].pos[a] = nbt_range(0, 8);
    }
    nbGridDesc desc = {0};
    desc.dim = 3;
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints pts = {.data = units[0].pos, .count = 500, .dim = 3, .stride = sizeof(Unit)};
    NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
    NB_CHECK_OK(nb_grid_validate(g));
    if (check_pairs(g, &s, 1.0)) return 1;
    nb_grid_destroy(g);
    // 2D points taken from the first two of three coordinates
    nboSet s2 = nbo_set_new(500, 2);
    for (int i = 0; i < 500; i++) memcpy(s2.p + i * 2, units[i].pos, 2 * sizeof(double));
    desc.dim = 2;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    NB_CHECK_STATUS(nb_grid_build(g, &pts, 1.0), NB_ERR_OUT_OF_RANGE); // a 3D view, 2D grid
    nbPoints pts2 = {.data = units[0].pos, .count = 500, .dim = 2, .stride = sizeof(Unit)};
    NB_CHECK_OK(nb_grid_build(g, &pts2, 1.0));
    NB_CHECK_OK(nb_grid_validate(g));
    if (check_pairs(g, &s2, 1.0)) return 1;
    nb_grid_destroy(g);
    nbo_set_free(&s);
    nbo_set_free(&s2);
    return 0;
}

// ---- bad input ----

// The grid's answers for a fixed probe, to show a failed call left it unchanged.
static int64_t fingerprint(const nbGrid *g)
{
    int64_t pairs = -1;
    if (nb_grid_count_pairs(g, 1.0, &pairs) != NB_OK) return -2;
    int32_t found = -1;
    double c[3] = {0.5, 0.5, 0.5};
    nbStatus st = nb_grid_query_radius(g, c, 3.0, NB_FILTER_ALL, NULL, 0, &found);
    if (found < 0 || st != (found == 0 ? NB_OK : NB_ERR_BUFFER_TOO_SMALL)) return -3;
    return pairs * 100003 + found * 7 + nb_grid_count(g);
}

static int test_bad_input_table(void)
{
    const double nan = (double)NAN, inf = (double)INFINITY;
    nbGrid *g = NULL;
    nbGridDesc desc = {0};
    // create
    NB_CHECK_STATUS(nb_grid_create(NULL, &g), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_create(&desc, NULL), NB_ERR_NULL_ARG);
    const double bad_cells[] = {nan, inf, -inf};
    for (int t = 0; t < 3; t++) {
        desc.cell_size = bad_cells[t];
        NB_CHECK_STATUS(nb_grid_create(&desc, &g), NB_ERR_NOT_FINITE);
        NB_CHECK(g == NULL);
    }
    desc.cell_size = -1.0;
    NB_CHECK_STATUS(nb_grid_create(&desc, &g), NB_ERR_OUT_OF_RANGE);
    desc.cell_size = 0.0;
    desc.dim = 1;
    NB_CHECK_STATUS(nb_grid_create(&desc, &g), NB_ERR_OUT_OF_RANGE);
    desc.dim = 4;
    NB_CHECK_STATUS(nb_grid_create(&desc, &g), NB_ERR_OUT_OF_RANGE);
    desc.dim = -2;
    NB_CHECK_STATUS(nb_grid_create(&desc, &g), NB_ERR_OUT_OF_RANGE);
    desc.dim = 2;
    desc.capacity_hint = -1;
    NB_CHECK_STATUS(nb_grid_create(&desc, &g), NB_ERR_OUT_OF_RANGE);
    desc.capacity_hint = 0;
    desc.cell_size = -0.0; // -0.0 is zero: the default
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nb_grid_destroy(g);
    desc.cell_size = 0.0;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nb_grid_destroy(NULL);

    // a known good state
    double good[8] = {0, 0, 0.5, 0.5, 1, 1, -0.5, 0.25};
    nbPoints pts = {.data = good, .count = 4, .dim = 2, .stride = 0};
    NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
    const int64_t fp = fingerprint(g);
    NB_CHECK(fp >= 0);

    // build: each bad input is refused and the grid is unchanged
    NB_CHECK_STATUS(nb_grid_build(NULL, &pts, 1.0), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_build(g, NULL, 1.0), NB_ERR_NULL_ARG);
    nbPoints null_data = {.data = NULL, .count = 3, .dim = 2, .stride = 0};
    NB_CHECK_STATUS(nb_grid_build(g, &null_data, 1.0), NB_ERR_NULL_ARG);
    const double bad_r[] = {nan, inf, -inf};
    for (int t = 0; t < 3; t++)
        NB_CHECK_STATUS(nb_grid_build(g, &pts, bad_r[t]), NB_ERR_NOT_FINITE);
    NB_CHECK_STATUS(nb_grid_build(g, &pts, -1.0), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_build(g, &pts, -DBL_MIN), NB_ERR_OUT_OF_RANGE);
    const double bad_v[] = {nan, inf, -inf};
    for (int t = 0; t < 3; t++)
        for (int at = 0; at < 8; at++) {
            double pts_bad[8];
            memcpy(pts_bad, good, sizeof good);
            pts_bad[at] = bad_v[t];
            nbPoints pb = {.data = pts_bad, .count = 4, .dim = 2, .stride = 0};
            NB_CHECK_STATUS(nb_grid_build(g, &pb, 1.0), NB_ERR_NOT_FINITE);
        }
    nbPoints neg = {.data = good, .count = -1, .dim = 2, .stride = 0};
    NB_CHECK_STATUS(nb_grid_build(g, &neg, 1.0), NB_ERR_OUT_OF_RANGE);
    nbPoints wrong_dim = {.data = good, .count = 2, .dim = 3, .stride = 0};
    NB_CHECK_STATUS(nb_grid_build(g, &wrong_dim, 1.0), NB_ERR_OUT_OF_RANGE);
    nbPoints short_stride = {.data = good, .count = 2, .dim = 2, .stride = sizeof(double)};
    NB_CHECK_STATUS(nb_grid_build(g, &short_stride, 1.0), NB_ERR_OUT_OF_RANGE);
    nbPoints odd_stride = {.data = good, .count = 2, .dim = 2, .stride = 2 * sizeof(double) + 1};
    NB_CHECK_STATUS(nb_grid_build(g, &odd_stride, 1.0), NB_ERR_OUT_OF_RANGE);
    // a cell number that would overflow: tiny cell, huge coordinates
    nbGridDesc tiny = {0};
    tiny.cell_size = 1e-300;
    nbGrid *gt = NULL;
    NB_CHECK_OK(nb_grid_create(&tiny, &gt));
    double huge[4] = {1e10, 0, -1e10, 0};
    nbPoints ph = {.data = huge, .count = 2, .dim = 2, .stride = 0};
    NB_CHECK_STATUS(nb_grid_build(gt, &ph, 1.0), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_OK(nb_grid_validate(gt));
    nb_grid_destroy(gt);
    NB_CHECK(fingerprint(g) == fp);
    NB_CHECK_OK(nb_grid_validate(g));

    // queries
    double c[2] = {0, 0}, cn[2] = {nan, 0};
    int32_t out[8], found = 99;
    nbNeighbor nn[8];
    int64_t f64 = 99;
    nbPair pp[8];
    NB_CHECK_STATUS(nb_grid_query_radius(NULL, c, 1, NB_FILTER_ALL, out, 8, &found),
                    NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_query_radius(g, NULL, 1, NB_FILTER_ALL, out, 8, &found),
                    NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_query_radius(g, c, 1, NB_FILTER_ALL, out, 8, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_query_radius(g, c, 1, NB_FILTER_ALL, NULL, 8, &found), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_query_radius(g, cn, 1, NB_FILTER_ALL, out, 8, &found),
                    NB_ERR_NOT_FINITE);
    NB_CHECK(found == 0);
    // each rejected call sets *found to 0
    const double bad_c[][2] = {{0, -inf}, {0, 0}, {0, 0}, {0, 0}, {0, 0}};
    const double bad_qr[] = {1, nan, inf, -1, 1};
    const int32_t bad_cap[] = {8, 8, 8, 8, -1};
    const nbStatus bad_st[] = {NB_ERR_NOT_FINITE, NB_ERR_NOT_FINITE, NB_ERR_NOT_FINITE,
                               NB_ERR_OUT_OF_RANGE, NB_ERR_OUT_OF_RANGE};
    for (int t = 0; t < 5; t++) {
        found = 99;
        NB_CHECK_STATUS(
            nb_grid_query_radius(g, bad_c[t], bad_qr[t], NB_FILTER_ALL, out, bad_cap[t], &found),
            bad_st[t]);
        NB_CHECK(found == 0);
    }
    NB_CHECK_OK(nb_grid_query_radius(g, c, -0.0, NB_FILTER_ALL, out, 8, &found));
    NB_CHECK(found == 1 && out[0] == 0);
    NB_CHECK_STATUS(nb_grid_query_radius(g, c, 5, NB_FILTER_ALL, NULL, 0, &found),
                    NB_ERR_BUFFER_TOO_SMALL);
    NB_CHECK(found == 4);
    NB_CHECK_STATUS(nb_grid_visit_radius(g, c, 1, NB_FILTER_ALL, NULL, NULL), NB_ERR_NULL_ARG);
    double lo[2] = {-1, -1}, hi[2] = {1, 1}, lon[2] = {nan, 0};
    NB_CHECK_STATUS(nb_grid_query_box(g, NBT_BOX(lon, hi, 2), NB_FILTER_ALL, out, 8, &found),
                    NB_ERR_NOT_FINITE);
    NB_CHECK_STATUS(nb_grid_query_box(g, NBT_BOX(lo, lon, 2), NB_FILTER_ALL, out, 8, &found),
                    NB_ERR_NOT_FINITE);
    NB_CHECK_STATUS(nb_grid_query_box(g, NBT_BOX(lo, hi, 2), NB_FILTER_ALL, out, -3, &found),
                    NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_query_box(g, NBT_BOX(NULL, hi, 2), NB_FILTER_ALL, out, 8, &found),
                    NB_ERR_NULL_ARG);
    double all_lo[2] = {-inf, -inf}, all_hi[2] = {inf, inf};
    NB_CHECK_OK(nb_grid_query_box(g, NBT_BOX(all_lo, all_hi, 2), NB_FILTER_ALL, out, 8,
                                  &found)); // infinite = unbounded
    NB_CHECK(found == 4);
    NB_CHECK_OK(
        nb_grid_query_box(g, NBT_BOX(hi, lo, 2), NB_FILTER_ALL, out, 8, &found)); // lo > hi: empty
    NB_CHECK(found == 0);
    NB_CHECK_STATUS(nb_grid_knn(g, cn, NB_FILTER_ALL, (double)INFINITY, nn, 2, &found),
                    NB_ERR_NOT_FINITE);
    NB_CHECK_STATUS(nb_grid_knn(g, c, NB_FILTER_ALL, (double)INFINITY, nn, -1, &found),
                    NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_knn(g, c, NB_FILTER_ALL, (double)INFINITY, NULL, 2, &found),
                    NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_knn(NULL, c, NB_FILTER_ALL, (double)INFINITY, nn, 2, &found),
                    NB_ERR_NULL_ARG);
    found = 99;
    NB_CHECK_OK(nb_grid_knn(g, c, NB_FILTER_ALL, (double)INFINITY, NULL, 0, &found));
    NB_CHECK(found == 0);
    NB_CHECK_STATUS(nb_grid_pairs(g, nan, pp, 8, &f64), NB_ERR_NOT_FINITE);
    NB_CHECK(f64 == 0);
    NB_CHECK_STATUS(nb_grid_pairs(g, -2, pp, 8, &f64), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_pairs(g, 1, pp, -8, &f64), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_pairs(g, 1, NULL, 8, &f64), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_pairs(g, 1, pp, 8, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_count_pairs(g, inf, &f64), NB_ERR_NOT_FINITE);
    NB_CHECK_STATUS(nb_grid_count_pairs(g, 1, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_visit_pairs(g, 1, NULL, NULL), NB_ERR_NULL_ARG);
    int32_t units = nb_grid_pair_units(g);
    NB_CHECK(units > 0 && nb_grid_pair_units(NULL) == 0);
    nboPairLog log = {NULL, 0, 0, 0};
    NB_CHECK_STATUS(nb_grid_visit_pairs_range(g, 1, -1, 1, nbo_log_pair, &log),
                    NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_visit_pairs_range(g, 1, 1, 0, nbo_log_pair, &log), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_visit_pairs_range(g, 1, 0, units + 1, nbo_log_pair, &log),
                    NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_visit_pairs_range(g, nan, 0, 1, nbo_log_pair, &log), NB_ERR_NOT_FINITE);
    NB_CHECK(log.n == 0);
    NB_CHECK_STATUS(nb_grid_reserve(g, -1), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_reserve(NULL, 1), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_info(g, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_validate(NULL), NB_ERR_NULL_ARG);
    NB_CHECK(nb_grid_count(NULL) == 0 && nb_grid_memory_bytes(NULL) == 0);
    NB_CHECK(fingerprint(g) == fp);
    NB_CHECK_OK(nb_grid_validate(g));
    nb_grid_destroy(g);

    // status names
    for (int st = 0; st <= NB_STATUS_COUNT + 1; st++) {
        NB_CHECK(nb_status_str((nbStatus)st) != NULL && nb_status_message((nbStatus)st) != NULL);
    }
    NB_CHECK(strcmp(nb_status_str(NB_ERR_NOT_FINITE), "NB_ERR_NOT_FINITE") == 0);
    NB_CHECK(strcmp(nb_status_str((nbStatus)-1), "NB_ERR_UNKNOWN") == 0);
    NB_CHECK(nb_version() == NB_VERSION);
    return 0;
}

// Queries on a grid that was never built, or was built empty.
static int test_empty_grid(void)
{
    nbGridDesc desc = {0};
    desc.dim = 3;
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    for (int pass = 0; pass < 2; pass++) {
        double c[3] = {0, 0, 0};
        int32_t found = 7;
        int64_t f = 7;
        nbNeighbor nn[2];
        NB_CHECK_OK(nb_grid_query_radius(g, c, 1.0, NB_FILTER_ALL, NULL, 0, &found));
        NB_CHECK(found == 0);
        found = 7;
        NB_CHECK_OK(nb_grid_query_box(g, NBT_BOX(c, c, 3), NB_FILTER_ALL, NULL, 0, &found));
        NB_CHECK(found == 0);
        found = 7;
        NB_CHECK_OK(nb_grid_knn(g, c, NB_FILTER_ALL, (double)INFINITY, nn, 2, &found));
        NB_CHECK(found == 0);
        NB_CHECK_OK(nb_grid_pairs(g, 1.0, NULL, 0, &f));
        NB_CHECK(f == 0 && nb_grid_pair_units(g) == 0);
        f = 7;
        NB_CHECK_OK(nb_grid_count_pairs(g, 1.0, &f));
        NB_CHECK(f == 0);
        NB_CHECK_OK(nb_grid_validate(g));
        nbPoints none = {.data = NULL, .count = 0, .dim = 3, .stride = 0};
        NB_CHECK_OK(nb_grid_build(g, &none, 1.0));
    }
    nb_grid_destroy(g);
    return 0;
}

// ---- memory ----

// Builds of `big` (20000 points) hashed, dense, and ranked, each checked.
static int reserved_builds(nbGrid *g, nboSet *big)
{
    for (int32_t i = 0; i < 40000; i++) big->p[i] = nbt_range(0, 1e7); // hashed
    nbPoints pb = {.data = big->p, .count = 20000, .dim = 2, .stride = 0};
    NB_CHECK_OK(nb_grid_build(g, &pb, 1.0));
    for (int32_t i = 0; i < 40000; i++) big->p[i] = nbt_range(0, 100); // dense
    NB_CHECK_OK(nb_grid_build(g, &pb, 1.0));
    for (int32_t i = 0; i < 40000; i++) big->p[i] = nbt_range(0, 560); // dense, ~4 cells a point
    NB_CHECK_OK(nb_grid_build(g, &pb, 2.0));
    NB_CHECK_OK(nb_grid_build(g, &pb, 1.0)); // ranked, ~16 cells a point
    nbGridInfo info;
    NB_CHECK_OK(nb_grid_info(g, &info));
    NB_CHECK(info.ranked);
    return 0;
}

// After the first frame, rebuilding and querying allocate nothing; capacity grows only at a
// new maximum; everything is freed with matching sizes.
static int test_zero_allocation_frames(void)
{
    nbtAlloc counter = {0};
    nbAllocator al = nbt_allocator(&counter);
    nbGridDesc desc = {0};
    desc.allocator = &al;
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nboSet s = nbo_set_new(5000, 2);
    static nbPair pairs[200000];
    for (int frame = 0; frame < 30; frame++) {
        // Frames 0 to 2 reach the maximum point count in each cell layout (dense, then hashed
        // for far-flung points, then ranked for about 16 cells a point); later frames vary the
        // count and switch layouts freely.
        int32_t n = frame < 3 ? 5000 : 2000 + nbt_int(3001);
        double spread = frame == 1 || frame % 7 == 6 ? 1e6 : frame % 5 == 2 ? 280.0 : 60.0;
        for (int32_t i = 0; i < n * 2; i++) s.p[i] = nbt_range(0, spread);
        nbPoints pts = {.data = s.p, .count = n, .dim = 2, .stride = 0};
        int64_t before = counter.allocs;
        NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
        int64_t found = -1, counted = -2;
        NB_CHECK_OK(nb_grid_pairs(g, 1.0, pairs, 200000, &found));
        NB_CHECK_OK(nb_grid_count_pairs(g, 1.0, &counted));
        NB_CHECK(found == counted);
        int32_t near[64], nf = -1;
        double c[3] = {30, 30, 0}; // 3: the oracle reads c[2] when dim is 3
        nboSet cur = s;
        cur.n = n;
        nbStatus st = nb_grid_query_radius(g, c, 2.0, NB_FILTER_ALL, near, 64, &nf);
        NB_CHECK(st == (nf > 64 ? NB_ERR_BUFFER_TOO_SMALL : NB_OK));
        int32_t want_nf = 0;
        int32_t *want_near = nbo_radius(&cur, c, 2.0, &want_nf);
        NB_CHECK(nf == want_nf);
        if (nf <= 64) {
            nbo_sort_indices(near, nf);
            NB_CHECK(nbo_same_indices(near, nf, want_near, want_nf));
        }
        free(want_near);
        nbNeighbor nn[16];
        NB_CHECK_OK(nb_grid_knn(g, c, NB_FILTER_ALL, (double)INFINITY, nn, 16, &nf));
        nbNeighbor *want_nn = nbo_knn(&cur, c, 16, &want_nf);
        NB_CHECK(nbo_same_neighbors(nn, nf, want_nn, want_nf));
        free(want_nn);
        nbGridInfo info;
        NB_CHECK_OK(nb_grid_info(g, &info));
        NB_CHECK(info.hashed == (spread > 100.0) && info.ranked == (spread == 280.0));
        if (frame >= 3) NB_CHECK(counter.allocs == before);
    }
    // reserve up front: a bigger build then allocates nothing, also a blocked one (the tables
    // of grid.c's "large builds", which reserve sizes for any cells)
    const int32_t saved = nbi_blocked_min_points;
    nbi_blocked_min_points = 1;
    nboSet big = nbo_set_new(20000, 2);
    const nbStatus reserved = nb_grid_reserve(g, 20000);
    const int64_t before = counter.allocs;
    const int bad = reserved != NB_OK || reserved_builds(g, &big); // restored on every path
    nbi_blocked_min_points = saved;
    if (bad) return 1;
    NB_CHECK(counter.allocs == before);
    NB_CHECK(nb_grid_memory_bytes(g) > 20000 * 20);
    nb_grid_destroy(g);
    NB_CHECK(counter.live_bytes == 0 && counter.allocs == counter.frees && !counter.size_mismatch &&
             !counter.misaligned);
    nbo_set_free(&s);
    nbo_set_free(&big);
    return 0;
}

// Only the first hashed layout allocates: a later hashed build with more points than earlier
// hashed builds, but no more than some earlier build, reuses the room. (Found by fuzz_grid.)
static int test_hashed_layout_reuses_room(void)
{
    nbtAlloc counter = {0};
    nbAllocator al = nbt_allocator(&counter);
    nbGridDesc desc = {0};
    desc.allocator = &al;
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    double p[2000];
    for (int i = 0; i < 2000; i++) p[i] = nbt_range(-1e6, 1e6);
    nbPoints sparse_few = {.data = p, .count = 2, .dim = 2, .stride = 0},
             dense_many = {.data = p, .count = 1000, .dim = 2},
             sparse_many = {.data = p, .count = 1000, .dim = 2};
    NB_CHECK_OK(nb_grid_build(g, &sparse_few, 0.5)); // the first hashed layout: allocates
    nbGridInfo info;
    NB_CHECK_OK(nb_grid_info(g, &info));
    NB_CHECK(info.hashed);
    double line[2000];
    for (int i = 0; i < 1000; i++) {
        line[2 * i] = i * 0.5;
        line[2 * i + 1] = 3.0;
    }
    dense_many.data = line;
    NB_CHECK_OK(nb_grid_build(g, &dense_many, 1.0)); // more points: allocates
    NB_CHECK_OK(nb_grid_info(g, &info));
    NB_CHECK(!info.hashed);
    const int64_t before = counter.allocs;
    NB_CHECK_OK(nb_grid_build(g, &sparse_many, 0.5)); // no more room needed than before
    NB_CHECK_OK(nb_grid_info(g, &info));
    NB_CHECK(info.hashed && counter.allocs == before);
    NB_CHECK_OK(nb_grid_build(g, &dense_many, 1.0)); // and back: nothing either
    NB_CHECK(counter.allocs == before);
    NB_CHECK_OK(nb_grid_validate(g));
    nb_grid_destroy(g);
    NB_CHECK(counter.live_bytes == 0 && !counter.size_mismatch && !counter.misaligned);
    return 0;
}

// Failing allocation i, for every i: NB_ERR_OUT_OF_MEMORY, the grid unchanged, no leaks. The
// sweep goes on until a try makes every allocation before the one set to fail (nothing was
// refused, everything succeeded), so an allocation added to create, build or reserve can never
// fall outside it.
static int test_allocation_failure(void)
{
    enum { MAX_TRIES = 1000 };
    nboSet a = nbo_set_new(300, 2), b = nbo_set_new(3000, 2), c = nbo_set_new(3000, 2);
    nboSet d = tail_set(3, 2000, 1e9, 1e-2); // sorted on two words, a coded table
    for (int32_t i = 0; i < 600; i++) a.p[i] = nbt_range(0, 10);
    for (int32_t i = 0; i < 6000; i++) b.p[i] = nbt_range(0, i % 3 ? 30 : 1e7);
    for (int32_t i = 0; i < 6000; i++) c.p[i] = nbt_range(0, 200); // ~13 cells a point: ranked
    bool clean_run = false;
    int64_t fail = 1;
    for (; fail <= MAX_TRIES && !clean_run; fail++) {
        nbtAlloc counter = {0};
        counter.fail_at = fail;
        nbAllocator al = nbt_allocator(&counter);
        nbGridDesc desc = {0};
        desc.allocator = &al;
        desc.capacity_hint = fail % 2 ? 0 : 100;
        nbGrid *g = NULL;
        nbStatus st = nb_grid_create(&desc, &g);
        // NB_ERR_OUT_OF_MEMORY only once the failure was injected
        if (st == NB_ERR_OUT_OF_MEMORY) {
            NB_CHECK(nbt_alloc_failed(&counter));
            NB_CHECK(g == NULL && counter.live_bytes == 0);
            continue;
        }
        NB_CHECK_OK(st);
        nbPoints pa = {.data = a.p, .count = 300, .dim = 2, .stride = 0},
                 pb = {.data = b.p, .count = 3000, .dim = 2},
                 pc = {.data = c.p, .count = 3000, .dim = 2};
        st = nb_grid_build(g, &pa, 1.0);
        NB_CHECK(st == NB_OK || (st == NB_ERR_OUT_OF_MEMORY && nbt_alloc_failed(&counter)));
        int64_t fp = fingerprint(g);
        NB_CHECK(fp >= 0);
        NB_CHECK_OK(nb_grid_validate(g));
        st = nb_grid_build(g, &pb, 0.5); // needs more room, and hashed cells
        NB_CHECK(st == NB_OK || (st == NB_ERR_OUT_OF_MEMORY && nbt_alloc_failed(&counter)));
        NB_CHECK_OK(nb_grid_validate(g));
        if (st == NB_ERR_OUT_OF_MEMORY) NB_CHECK(fingerprint(g) == fp);
        fp = fingerprint(g);
        NB_CHECK(fp >= 0);
        st = nb_grid_build(g, &pc, 1.0); // the first ranked cells
        NB_CHECK(st == NB_OK || (st == NB_ERR_OUT_OF_MEMORY && nbt_alloc_failed(&counter)));
        NB_CHECK_OK(nb_grid_validate(g));
        if (st == NB_ERR_OUT_OF_MEMORY) NB_CHECK(fingerprint(g) == fp);
        fp = fingerprint(g);
        NB_CHECK(fp >= 0);
        nbPoints pd = {.data = d.p, .count = d.n, .dim = 3};
        nbGridDesc desc3 = {0};
        desc3.allocator = &al;
        desc3.dim = 3;
        nbGrid *g3 = NULL;
        st = nb_grid_create(&desc3, &g3);
        NB_CHECK(st == NB_OK || (st == NB_ERR_OUT_OF_MEMORY && nbt_alloc_failed(&counter)));
        if (st == NB_OK) {
            st = nb_grid_build(g3, &pd, 1e-2);
            NB_CHECK(st == NB_OK || (st == NB_ERR_OUT_OF_MEMORY && nbt_alloc_failed(&counter)));
            NB_CHECK_OK(nb_grid_validate(g3));
            NB_CHECK(nb_grid_count(g3) == (st == NB_OK ? d.n : 0));
            st = nb_grid_reserve(g3, 4000); // the coded table's keys move with the codes
            NB_CHECK(st == NB_OK || (st == NB_ERR_OUT_OF_MEMORY && nbt_alloc_failed(&counter)));
            NB_CHECK_OK(nb_grid_validate(g3));
            nb_grid_destroy(g3);
        }
        st = nb_grid_reserve(g, 50000); // reserve keeps the contents, whether it works or not
        NB_CHECK(st == NB_OK || (st == NB_ERR_OUT_OF_MEMORY && nbt_alloc_failed(&counter)));
        NB_CHECK_OK(nb_grid_validate(g));
        NB_CHECK(fingerprint(g) == fp);
        nb_grid_destroy(g);
        NB_CHECK(counter.live_bytes == 0 &&
                 counter.allocs - nbt_alloc_failed(&counter) == counter.frees);
        NB_CHECK(!counter.size_mismatch && !counter.misaligned);
        // every call above succeeded without reaching allocation `fail`: the sweep is complete
        clean_run = !nbt_alloc_failed(&counter);
    }
    if (!clean_run) fprintf(stderr, "  no try of %d made all its allocations\n", (int)MAX_TRIES);
    NB_CHECK(clean_run);
    NB_CHECK(fail > 2); // the sweep did inject failures before the clean run
    nbo_set_free(&a);
    nbo_set_free(&b);
    nbo_set_free(&c);
    nbo_set_free(&d);
    return 0;
}

// The build reads packed points (stride = dim) through two-lane SSE2 passes (the scan and the
// cell count) and strided ones through the scalar passes. Both must give the same grid: the
// same cell order, bit for bit, on coordinates placed to catch a wrong floor (exact multiples
// of the cell, -0.0, values a hair below a cell edge, both signs) near the origin and near the
// largest cell numbers the 32-bit lanes take, and every non-finite value at every position of
// every block of four (and the tail) refused.
static int test_packed_matches_strided(void)
{
    const double offsets[] = {0.0, -3.0, 1073741000.0, -1073741000.0, 2147483000.0, -2147483000.0};
    const double cells[] = {0.75, 1.0, 0.1};
    for (int dim = 2; dim <= 3; dim++)
        for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++)
            for (size_t c = 0; c < sizeof cells / sizeof cells[0]; c++)
                for (int n = 1; n <= 23; n += 2) {
                    const double cell = cells[c];
                    double packed[23 * 3], strided[23 * 4];
                    for (int i = 0; i < n; i++)
                        for (int a = 0; a < dim; a++) {
                            const double k = (double)(nbt_int(9) - 4);
                            double v;
                            switch (nbt_int(4)) {
                            case 0: v = k * cell; break; // a cell edge
                            case 1: v = nextafter(k * cell, -(double)INFINITY); break; // just below
                            case 2: v = -0.0; break;
                            default: v = k * cell * (1.0 + 0.37 * nbt_unit()); break;
                            }
                            packed[i * dim + a] = strided[i * 4 + a] = offsets[o] * cell + v;
                        }
                    nbGridDesc d = {.dim = dim, .cell_size = cell};
                    nbGrid *gp = NULL, *gs = NULL;
                    NB_CHECK_OK(nb_grid_create(&d, &gp));
                    NB_CHECK_OK(nb_grid_create(&d, &gs));
                    const nbPoints pp = {.data = packed, .count = n, .dim = dim};
                    const nbPoints ps = {
                        .data = strided, .count = n, .dim = dim, .stride = 4 * sizeof(double)};
                    NB_CHECK_OK(nb_grid_build(gp, &pp, cell));
                    NB_CHECK_OK(nb_grid_build(gs, &ps, cell));
                    int32_t op[23], os[23];
                    NB_CHECK_OK(nb_grid_cell_order(gp, op, n, &(int32_t){0}));
                    NB_CHECK_OK(nb_grid_cell_order(gs, os, n, &(int32_t){0}));
                    NB_CHECK(memcmp(op, os, (size_t)n * sizeof op[0]) == 0);
                    nbGridInfo ip, is;
                    NB_CHECK_OK(nb_grid_info(gp, &ip));
                    NB_CHECK_OK(nb_grid_info(gs, &is));
                    NB_CHECK(ip.cells == is.cells && ip.hashed == is.hashed &&
                             ip.cell_size == is.cell_size && ip.points == is.points);
                    int64_t np = -1, ns = -1;
                    NB_CHECK_OK(nb_grid_count_pairs(gp, cell, &np));
                    NB_CHECK_OK(nb_grid_count_pairs(gs, cell, &ns));
                    NB_CHECK(np == ns);
                    const double bad[] = {(double)NAN, (double)INFINITY, -(double)INFINITY};
                    for (int i = 0; i < n * dim; i++) {
                        double keep = packed[i];
                        packed[i] = bad[nbt_int(3)];
                        NB_CHECK_STATUS(nb_grid_build(gp, &pp, cell), NB_ERR_NOT_FINITE);
                        packed[i] = keep;
                    }
                    nb_grid_destroy(gp);
                    nb_grid_destroy(gs);
                }
    return 0;
}

// The hashed layout's build looks keys up a fixed distance ahead of the inserts (grid.c,
// NBI_HASH_AHEAD): every count around that distance, with points sharing cells, must give the
// oracle's pairs, each cell's points in ascending input order, and cells in Z order.
static int test_hashed_counts_around_lookahead(void)
{
    for (int dim = 2; dim <= 3; dim++)
        for (int32_t n = 1; n <= 40; n++) {
            nboSet s = nbo_set_new(n, dim);
            for (int32_t i = 0; i < n; i++) {
                // a few cells, far apart, each point well inside its cell (the cell edge is a
                // hair over the radius, see nbi_cell_for_radius); the first two in the first and
                // the last home, so that the box is never one cell whatever the draws
                const int32_t home = i < 2 ? i * (n / 3) : nbt_int(1 + n / 3);
                for (int a = 0; a < dim; a++) s.p[i * dim + a] = home * 1e6 + nbt_range(0.25, 0.75);
            }
            nbGridDesc d = {.dim = dim};
            nbGrid *g = NULL;
            NB_CHECK_OK(nb_grid_create(&d, &g));
            const nbPoints pts = {.data = s.p, .count = n, .dim = dim};
            NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
            nbGridInfo info;
            NB_CHECK_OK(nb_grid_info(g, &info));
            NB_CHECK(info.hashed || n < 4);
            NB_CHECK_OK(nb_grid_validate(g));
            NB_CHECK(check_pairs(g, &s, 1.0) == 0);
            int32_t order[40];
            NB_CHECK_OK(nb_grid_cell_order(g, order, n, &(int32_t){0}));
            // cells in Z order: these cells lie on the diagonal, so their homes ascend, each
            // cell once, and within a cell the indices ascend
            int32_t prev_cell = -1;
            for (int32_t p = 0; p < n; p++) {
                const int32_t cell = (int32_t)floor(s.p[order[p] * dim] / 1e6 + 0.5);
                if (p == 0 || cell != prev_cell) {
                    NB_CHECK(cell > prev_cell);
                    prev_cell = cell;
                } else {
                    NB_CHECK(order[p] > order[p - 1]);
                }
            }
            nb_grid_destroy(g);
            nbo_set_free(&s);
        }
    return 0;
}

// What a grid holds, seen from outside: its cell order, every pair within r, its info.
typedef struct gridShot {
    int32_t *order;
    nboPairLog pairs;
    nbGridInfo info;
} gridShot;

static gridShot grid_shot(const nbGrid *g, double r)
{
    gridShot t = {NULL, {NULL, 0, 0, 0}, {0}};
    const int32_t n = nb_grid_count(g);
    t.order = (int32_t *)malloc(sizeof(int32_t) * (size_t)(n + 1));
    if (t.order == NULL || nb_grid_cell_order(g, t.order, n, &(int32_t){0}) != NB_OK ||
        nb_grid_visit_pairs(g, r, nbo_log_pair, &t.pairs) != NB_OK ||
        nb_grid_info(g, &t.info) != NB_OK)
        t.info.points = -1;
    return t;
}

static bool same_shot(const gridShot *a, const gridShot *b)
{
    return a->info.points >= 0 && a->info.points == b->info.points &&
           a->info.cells == b->info.cells && a->info.cell_size == b->info.cell_size &&
           memcmp(a->order, b->order, sizeof(int32_t) * (size_t)a->info.points) == 0 &&
           nbo_same_pairs(a->pairs.p, a->pairs.n, b->pairs.p, b->pairs.n);
}

static void free_shot(gridShot *t)
{
    free(t->order);
    free(t->pairs.p);
}

// A simulation's rebuilds: the same grid rebuilt every step from points that drift (in a box
// that stays put, one that slowly grows and one that shrinks, with and without an explicit cell
// size, and now and then a new radius) reuses the last build's cells whenever it can
// (grid.c, "rebuilding"). Every step
// must equal a fresh grid's build of the same points: the same cell order and pairs (and, every
// sixth step, the oracle's pairs). Every step also puts a few coordinates on a cell's edge or an
// ulp either side of it, where the rebuild's eight-lane cell pass must divide (simd.h). It
// runs with that pass where the CPU has it, and again with the SSE2 one (the steady box only).
static int test_rebuild_follows_fresh(void)
{
    for (int wide = 0; wide < 2; wide++)
        for (int dim = 2; dim <= 3; dim++)
            for (int drift = 0; drift < (wide ? 3 : 1); drift++) // SSE2: the steady box only
                for (int explicit_cell = 0; explicit_cell < 2; explicit_cell++) {
                    const int32_t n = 1200; // several points a cell: runs of a cell once reordered
                    nboSet s = nbo_set_new(n, dim);
                    const double side = dim == 2 ? 8.0 : 3.5;
                    for (int32_t i = 0; i < n * dim; i++) s.p[i] = nbt_range(-side, side);
                    nbGridDesc d = {.dim = dim, .cell_size = explicit_cell ? 0.75 : 0.0};
                    nbGrid *g = NULL;
                    NB_CHECK_OK(nb_grid_create(&d, &g));
                    const nbPoints pts = {.data = s.p, .count = n, .dim = dim};
                    for (int step = 0; step < 24; step++) {
                        const double r = step % 10 == 9 ? 1.5 : 1.0; // a new radius: new cells
                        const double grow = drift == 1 ? 1.01 : drift == 2 ? 0.99 : 1.0;
                        for (int32_t i = 0; i < n * dim; i++)
                            s.p[i] = s.p[i] * grow + nbt_range(-0.05, 0.05);
                        if (step % 13 == 12)
                            s.p[nbt_int(n * dim)] = (double)(nbt_int(5) - 2) * 0.75;
                        if (step > 0) {
                            nbGridInfo info;
                            NB_CHECK_OK(nb_grid_info(g, &info));
                            for (int k = 0; k < 9; k++) {
                                const double e = (double)(nbt_int(5) - 2) * info.cell_size;
                                s.p[nbt_int(n * dim)] = k % 3 == 0 ? e
                                                        : k % 3 == 1
                                                            ? nextafter(e, (double)INFINITY)
                                                            : nextafter(e, -(double)INFINITY);
                            }
                        }
                        if (step % 8 ==
                            1) { // the points into the grid's cell order, as simulations do
                            int32_t *order = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
                            double *q = (double *)malloc(sizeof(double) * (size_t)(n * dim));
                            NB_CHECK(order != NULL && q != NULL);
                            NB_CHECK_OK(nb_grid_cell_order(g, order, n, &(int32_t){0}));
                            NB_CHECK_OK(
                                nb_gather(order, n, s.p, 0, q, 0, sizeof(double) * (size_t)dim));
                            memcpy(s.p, q, sizeof(double) * (size_t)(n * dim));
                            free(order);
                            free(q);
                        }
#if defined(NBI_AVX512)
                        nbi_avx512_off = !wide;
#endif
                        NB_CHECK_OK(nb_grid_build(g, &pts, r));
#if defined(NBI_AVX512)
                        nbi_avx512_off = 0;
#endif
                        NB_CHECK_OK(nb_grid_validate(g));
                        nbGrid *f = NULL;
                        NB_CHECK_OK(nb_grid_create(&d, &f));
                        NB_CHECK_OK(nb_grid_build(f, &pts, r));
                        gridShot a = grid_shot(g, r), b = grid_shot(f, r);
                        NB_CHECK(a.info.points == n && a.info.cell_size == b.info.cell_size);
                        NB_CHECK(memcmp(a.order, b.order, sizeof(int32_t) * (size_t)n) == 0);
                        NB_CHECK(nbo_same_pairs(a.pairs.p, a.pairs.n, b.pairs.p, b.pairs.n));
                        if (step % 6 == 5) { // and now and then the oracle itself
                            int64_t want_n = 0;
                            nbPair *want = nbo_pairs(&s, r, &want_n);
                            nbo_sort_pairs(a.pairs.p, a.pairs.n);
                            NB_CHECK(nbo_same_pairs(a.pairs.p, a.pairs.n, want, want_n));
                            free(want);
                        }
                        free_shot(&a);
                        free_shot(&b);
                        nb_grid_destroy(f);
                    }
                    nb_grid_destroy(g);
                    nbo_set_free(&s);
                }
    return 0;
}

// A large serial build sorts in two cache-sized passes (grid.c, "large builds"); it must
// lay the points out exactly as the one-pass build: the same cell order, the same pairs in the
// same order. Lowering nbi_blocked_min_points runs it on small sets: uniform (many blocks), 2D
// and 3D, a power-of-two cell and another, far from the origin, with filter bits, and a crowd
// in one block that sends the build back to one pass; then a rebuild of the moved points on the
// same cells. (The one-pass build is the one the oracle tests check.)
// Builds g blocked and f in one pass from the same points: the same layout and pairs.
static int builds_agree(nbGrid *g, nbGrid *f, const nbPoints *pts, double r)
{
    const int32_t saved = nbi_blocked_min_points;
    nbi_blocked_min_points = 1;
    const nbStatus sg = nb_grid_build(g, pts, r);
    nbi_blocked_min_points = INT32_MAX;
    const nbStatus sf = nb_grid_build(f, pts, r);
    nbi_blocked_min_points = saved;
    NB_CHECK(sg == NB_OK && sf == NB_OK);
    NB_CHECK_OK(nb_grid_validate(g));
    gridShot a = grid_shot(g, r), b = grid_shot(f, r);
    const bool same = same_shot(&a, &b) && a.pairs.n > pts->count / 2;
    free_shot(&a);
    free_shot(&b);
    NB_CHECK(same);
    return 0;
}

static int test_blocked_build_matches_one_pass(void)
{
    for (int dim = 2; dim <= 3; dim++)
        for (int kind = 0; kind < 4; kind++) {
            const int32_t n = 60000;
            nboSet s = nbo_set_new(n, dim);
            const double side = dim == 2 ? 120.0 : 20.0, at = kind == 2 ? -3e6 : 0.0;
            for (int32_t i = 0; i < n * dim; i++) s.p[i] = at + nbt_range(-side, side);
            if (kind == 3) // a third of the points in the first rows (2D) or layers (3D)
                for (int32_t i = 0; i < n / 3; i++)
                    s.p[(size_t)i * dim + dim - 1] = nbt_range(-side, -side + 3.0);
            uint32_t *cat = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)n);
            uint32_t *mask = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)n);
            NB_CHECK(cat != NULL && mask != NULL);
            for (int32_t i = 0; i < n; i++) {
                cat[i] = 1u << nbt_int(3);
                mask[i] = (uint32_t)nbt_int(8);
            }
            nbPoints pts = {.data = s.p, .count = n, .dim = dim};
            if (kind == 1) {
                pts.category = cat;
                pts.mask = mask;
            }
            const double r = kind == 0 ? 1.0 : 1.3; // 1.0: a power-of-two cell
            const nbGridDesc d = {.dim = dim};
            nbGrid *g = NULL, *f = NULL;
            NB_CHECK_OK(nb_grid_create(&d, &g));
            NB_CHECK_OK(nb_grid_create(&d, &f));
            NB_CHECK(builds_agree(g, f, &pts, r) == 0);
            // a step later, on the same cells (a large rebuild out of order builds afresh)
            for (int32_t i = 0; i < n * dim; i++) // all but the outermost: the same box and cells
                if (fabs(s.p[i] - at) < side - 0.1) s.p[i] += nbt_range(-0.05, 0.05);
            NB_CHECK(builds_agree(g, f, &pts, r) == 0);
            nb_grid_destroy(g);
            nb_grid_destroy(f);
            free(cat);
            free(mask);
            nbo_set_free(&s);
        }
    return 0;
}

// The eight-lane cell pass (grid.c, nbi_cells8: fresh dense builds and rebuilds)
// multiplies by the cell's reciprocal where that gives floor(x / cell), and divides elsewhere.
// This puts coordinates where the two differ: with cell 0.7, fl(m * 0.7) and the few doubles
// either side of it, on every axis, where for some m floor(x * fl(1 / 0.7)) != floor(x / 0.7),
// often with x * fl(1 / 0.7) an ulp or two below an integer rather than on it, so that only
// the pass's margin sends them to the division (found at run time; the test checks there are
// such traps). A fresh build and a rebuild of those points, at every SIMD width, in 2D and 3D,
// must number every cell as the scalar cell math does (nb_grid_validate) and lay the points out
// as the two-lane pass does.
static int test_cells_at_edges(void)
{
    const double cell = 0.7, inv = 1.0 / cell;
    for (int dim = 2; dim <= 3; dim++) {
        const int m_max = dim == 2 ? 170 : 40; // a dense grid: at most 4 cells a point
        const int32_t n = dim == 2 ? 40000 : 160000;
        const double side = m_max * cell + 1.0;
        nboSet s = nbo_set_new(n, dim);
        int32_t traps = 0, k = 0;
        for (int m = -m_max; m <= m_max; m++) {
            double lo = (double)m * cell, hi = lo;
            for (int u = 0; u < 4;
                 u++, lo = nextafter(lo, -(double)INFINITY), hi = nextafter(hi, (double)INFINITY))
                for (int up = 0; up < 2; up++) {
                    const double x = up ? hi : lo;
                    traps += floor(x * inv) != floor(x / cell) && x * inv != floor(x * inv);
                    for (int a = 0; a < dim; a++, k++) // on each axis, the others anywhere
                        for (int b = 0; b < dim; b++)
                            s.p[k * dim + b] = a == b ? x : nbt_range(-side, side);
                }
        }
        NB_CHECK(traps > (dim == 2 ? 50 : 5));
        for (int32_t i = k * dim; i < n * dim; i++) s.p[i] = nbt_range(-side, side);
        const nbPoints pts = {.data = s.p, .count = n, .dim = dim};
        const nbGridDesc d = {.dim = dim, .cell_size = cell};
        gridShot want = {0};
        for (int wide = 0; wide < 2; wide++) {
            nbGrid *g = NULL;
            NB_CHECK_OK(nb_grid_create(&d, &g));
#if defined(NBI_AVX512)
            nbi_avx512_off = !wide;
#endif
            for (int build = 0; build < 2; build++) { // fresh, then a rebuild on the same cells
                NB_CHECK_OK(nb_grid_build(g, &pts, 0.5));
                NB_CHECK_OK(nb_grid_validate(g));
                nbGridInfo info;
                NB_CHECK_OK(nb_grid_info(g, &info));
                NB_CHECK(!info.hashed);
                gridShot got = grid_shot(g, 0.5);
                if (wide == 0 && build == 0) {
                    want = got;
                    continue;
                }
                NB_CHECK(memcmp(got.order, want.order, sizeof(int32_t) * (size_t)n) == 0);
                NB_CHECK(nbo_same_pairs(got.pairs.p, got.pairs.n, want.pairs.p, want.pairs.n));
                free_shot(&got);
            }
#if defined(NBI_AVX512)
            nbi_avx512_off = 0;
#endif
            nb_grid_destroy(g);
        }
        free_shot(&want);
        nbo_set_free(&s);
    }
    return 0;
}

// The eight-lane cell pass at the top of the double range: a cell of 1.5e308, whose reciprocal
// is below DBL_MIN (nbi_cells8_dim then divides every lane), and one of 2^1000 (a power of two:
// the reciprocal is exact), with points on their multiples and the doubles next to them.
// Every build, at every width, must number every cell as the scalar cell math does.
static int test_cells_at_huge_edges(void)
{
    const double cells[2] = {1.5e308, 0x1p1000};
    for (int t = 0; t < 2; t++)
        for (int dim = 2; dim <= 3; dim++) {
            const int32_t n = 64;
            nboSet s = nbo_set_new(n, dim);
            for (int32_t i = 0; i < n * dim; i++) {
                double x = (double)(nbt_int(3) - 1) * cells[t];
                for (int u = nbt_int(4); u > 0; u--)
                    x = nextafter(x, nbt_int(2) ? (double)INFINITY : -(double)INFINITY);
                s.p[i] = nbt_int(4) == 0 ? nbt_range(-1.0, 1.0) * cells[t] : x;
            }
            const nbPoints pts = {.data = s.p, .count = n, .dim = dim};
            const nbGridDesc d = {.dim = dim, .cell_size = cells[t]};
            for (int wide = 0; wide < 2; wide++) {
#if defined(NBI_AVX512)
                nbi_avx512_off = !wide;
#endif
                nbGrid *g = NULL;
                NB_CHECK_OK(nb_grid_create(&d, &g));
                NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
                NB_CHECK_OK(nb_grid_validate(g));
                NB_CHECK_OK(nb_grid_build(g, &pts, 1.0)); // a rebuild on the same cells
                NB_CHECK_OK(nb_grid_validate(g));
#if defined(NBI_AVX512)
                nbi_avx512_off = 0;
#endif
                nb_grid_destroy(g);
            }
            nbo_set_free(&s);
        }
    return 0;
}

// A hashed build sizes its cell table by the last hashed build's cells (grid.c,
// nbi_hashed_count) and counts again in a table for every point when more cells come. One grid
// goes from few cells to many and back, in 2D and 3D, each build checked against a fresh grid
// (the same cell order and pairs), the oracle and validate.
static int test_hashed_table_follows_cells(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        const int32_t n = 1000;
        nbGridDesc d = {.dim = dim};
        nbGrid *g = NULL;
        NB_CHECK_OK(nb_grid_create(&d, &g));
        nboSet s = nbo_set_new(n, dim);
        const int32_t homes[] = {3, 500, n, 40, 1, n, 7, n - 1};
        for (size_t b = 0; b < sizeof homes / sizeof homes[0]; b++) {
            for (int32_t i = 0; i < n; i++) { // homes[b] cells far apart: a hashed layout
                const int32_t home = i % homes[b];
                for (int a = 0; a < dim; a++)
                    s.p[i * dim + a] = (home + a) * 1e5 + nbt_range(0.0, 3.0);
            }
            const nbPoints pts = {.data = s.p, .count = n, .dim = dim};
            NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
            NB_CHECK_OK(nb_grid_validate(g));
            nbGridInfo info;
            NB_CHECK_OK(nb_grid_info(g, &info));
            NB_CHECK(info.hashed || homes[b] == 1);
            nbGrid *f = NULL;
            NB_CHECK_OK(nb_grid_create(&d, &f));
            NB_CHECK_OK(nb_grid_build(f, &pts, 1.0));
            gridShot a = grid_shot(g, 1.0), want = grid_shot(f, 1.0);
            NB_CHECK(memcmp(a.order, want.order, sizeof(int32_t) * (size_t)n) == 0);
            NB_CHECK(nbo_same_pairs(a.pairs.p, a.pairs.n, want.pairs.p, want.pairs.n));
            NB_CHECK(check_pairs(g, &s, 1.0) == 0);
            free_shot(&a);
            free_shot(&want);
            nb_grid_destroy(f);
        }
        nb_grid_destroy(g);
        nbo_set_free(&s);
    }
    return 0;
}

// A hashed build sizes its cell table for the cells it finds, at most three quarters full
// (cell_table.h). Cell counts on both sides of each size's limit (12 and 13 cells: 16 or 32
// slots), four points a cell (two of them the same point), one grid rebuilt up and down through
// them, in both builds (by sort: a box whose codes are exact; by count: a box far wider, far from
// the origin), each build checked against a fresh grid, the oracle and validate. Then a rebuild
// with more points whose growth fails leaves the grid as it was.
static int test_hashed_table_limits(void)
{
    static const int32_t counts[] = {12,  13,  24,  25,  48, 49,  96, 97,
                                     192, 193, 384, 385, 25, 384, 13};
    enum { MOST = 385, PER = 4 };
    for (int dim = 2; dim <= 3; dim++)
        for (int wide = 0; wide <= 1; wide++) {
            nbtAlloc counter = {0};
            nbAllocator al = nbt_allocator(&counter);
            // cells of 2 (exact edges at the even coordinates, even at 1e12), radius 1
            nbGridDesc d = {.dim = dim, .allocator = &al, .cell_size = 2.0};
            nbGrid *g = NULL;
            NB_CHECK_OK(nb_grid_create(&d, &g));
            nboSet s = nbo_set_new(4 * MOST * PER, dim);
            const double base = wide ? -1e12 : 0.0, far = wide ? 1e8 : 1e3;
            for (size_t b = 0; b < sizeof counts / sizeof counts[0]; b++) {
                const int32_t cells = counts[b], n = cells * PER;
                for (int32_t c = 0; c < cells; c++) {
                    // cells 0 and 1 at the box's corners, the others on a lattice between them
                    double at[3] = {0, 0, 0};
                    for (int a = 0; a < dim; a++)
                        at[a] = c == 0   ? 0.0
                                : c == 1 ? far
                                         : 24.0 + 50.0 * (double)(a == 0 ? c % 20 : c / 20);
                    for (int32_t k = 0; k < PER; k++)
                        for (int a = 0; a < dim; a++)
                            s.p[(c * PER + k) * dim + a] = k == 1
                                                               ? s.p[c * PER * dim + a]
                                                               : base + at[a] + nbt_range(0.1, 0.6);
                }
                const nbPoints pts = {.data = s.p, .count = n, .dim = dim};
                NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
                NB_CHECK_OK(nb_grid_validate(g));
                nbGridInfo info;
                NB_CHECK_OK(nb_grid_info(g, &info));
                NB_CHECK(info.hashed && info.cells == cells);
                nbGrid *f = NULL;
                NB_CHECK_OK(nb_grid_create(&d, &f));
                NB_CHECK_OK(nb_grid_build(f, &pts, 1.0));
                gridShot now = grid_shot(g, 1.0), want = grid_shot(f, 1.0);
                NB_CHECK(same_shot(&now, &want));
                nboSet first = s; // the oracle over the first n points
                first.n = n;
                NB_CHECK(check_pairs(g, &first, 1.0) == 0);
                free_shot(&now);
                free_shot(&want);
                nb_grid_destroy(f);
            }
            gridShot before = grid_shot(g, 1.0);
            for (int32_t i = 0; i < 4 * MOST * PER * dim; i++) s.p[i] = base + nbt_range(0.0, far);
            const nbPoints more = {.data = s.p, .count = 4 * MOST * PER, .dim = dim};
            counter.fail_at = counter.allocs + 1;
            NB_CHECK_STATUS(nb_grid_build(g, &more, 1.0), NB_ERR_OUT_OF_MEMORY);
            NB_CHECK(nbt_alloc_failed(&counter));
            NB_CHECK_OK(nb_grid_validate(g));
            gridShot after = grid_shot(g, 1.0);
            NB_CHECK(same_shot(&before, &after));
            free_shot(&before);
            free_shot(&after);
            nb_grid_destroy(g);
            NB_CHECK(counter.live_bytes == 0);
            nbo_set_free(&s);
        }
    return 0;
}

// A rebuild that fails leaves the grid as it was: a NaN or infinity at any position (found by
// the rebuild's own pass), coordinates whose cells the cell math cannot number (the rebuild
// misses, then the fresh build refuses them), and a fresh build that cannot grow.
static int test_rebuild_failures_change_nothing(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        const int32_t n = 64;
        nboSet s = nbo_set_new(n, dim);
        for (int32_t i = 0; i < n * dim; i++) s.p[i] = nbt_range(0, 8) * 1e-300;
        nbtAlloc counter = {0};
        nbAllocator al = nbt_allocator(&counter);
        nbGridDesc d = {.dim = dim, .allocator = &al, .cell_size = dim == 2 ? 1e-300 : 2e-300};
        nbGrid *g = NULL;
        NB_CHECK_OK(nb_grid_create(&d, &g));
        const nbPoints pts = {.data = s.p, .count = n, .dim = dim};
        NB_CHECK_OK(nb_grid_build(g, &pts, 0.0)); // a dense box of cells of 1e-300
        NB_CHECK_OK(nb_grid_build(g, &pts, 0.0)); // now on the last build's cells
        gridShot before = grid_shot(g, 3e-300);
        NB_CHECK(before.info.points == n);
        const double bad[] = {(double)NAN, (double)INFINITY, -(double)INFINITY};
        for (int32_t at = 0; at < n * dim; at++) {
            const double keep = s.p[at];
            s.p[at] = bad[at % 3];
            NB_CHECK_STATUS(nb_grid_build(g, &pts, 0.0), NB_ERR_NOT_FINITE);
            s.p[at] = keep;
            NB_CHECK_OK(nb_grid_validate(g));
            gridShot now = grid_shot(g, 3e-300);
            NB_CHECK(same_shot(&before, &now));
            free_shot(&now);
        }
        // Far out, cells of 1e-300 cannot be numbered: the rebuild misses, the build refuses.
        s.p[0] = 1e300;
        NB_CHECK_STATUS(nb_grid_build(g, &pts, 0.0), NB_ERR_OUT_OF_RANGE);
        s.p[0] = 4e-300;
        NB_CHECK_OK(nb_grid_validate(g));
        gridShot now = grid_shot(g, 3e-300);
        NB_CHECK(same_shot(&before, &now));
        free_shot(&now);
        // A wider box needs more cells than the grid has: the rebuild misses, growth fails.
        free_shot(&before);
        nb_grid_destroy(g);
        d.cell_size = dim == 2 ? 0.5 : 2.0; // a dense box of cells to begin with
        NB_CHECK_OK(nb_grid_create(&d, &g));
        for (int32_t i = 0; i < n * dim; i++) s.p[i] = nbt_range(0, 8);
        for (int rebuilds = 0; rebuilds < 3; rebuilds++) NB_CHECK_OK(nb_grid_build(g, &pts, 0.5));
        before = grid_shot(g, 1.0);
        for (int32_t i = 0; i < n * dim; i++) s.p[i] *= 50.0;
        counter.fail_at = counter.allocs + 1;
        NB_CHECK_STATUS(nb_grid_build(g, &pts, 0.5), NB_ERR_OUT_OF_MEMORY);
        NB_CHECK_OK(nb_grid_validate(g));
        now = grid_shot(g, 1.0);
        NB_CHECK(same_shot(&before, &now));
        free_shot(&now);
        free_shot(&before);
        nb_grid_destroy(g);
        nbo_set_free(&s);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"uniform", test_uniform},
        {"hashed_table_limits", test_hashed_table_limits},
        {"clustered", test_clustered},
        {"lattice_exact_distances", test_lattice_exact_distances},
        {"rounding_at_cell_edges", test_rounding_at_cell_edges},
        {"far_from_origin", test_far_from_origin},
        {"degenerate_extents", test_degenerate_extents},
        {"extreme_magnitudes", test_extreme_magnitudes},
        {"knn_infinite_distances", test_knn_infinite_distances},
        {"larger", test_larger},
        {"dense_and_hashed_paths", test_dense_and_hashed_paths},
        {"ranked_cells", test_ranked_cells},
        {"ranked_edges", test_ranked_edges},
        {"hashed_blocks", test_hashed_blocks},
        {"hashed_beyond_codes", test_hashed_beyond_codes},
        {"hashed_sorted_wide", test_hashed_sorted_wide},
        {"hashed_lazy_table", test_hashed_lazy_table},
        {"sorted_wide_digits", test_sorted_wide_digits},
        {"sorted_wide_paths", test_sorted_wide_paths},
        {"crowded_cells", test_crowded_cells},
        {"deterministic", test_deterministic},
        {"cells_far_apart", test_cells_far_apart},
        {"pairs_cost_guard", test_pairs_cost_guard},
        {"stride", test_stride},
        {"bad_input_table", test_bad_input_table},
        {"empty_grid", test_empty_grid},
        {"zero_allocation_frames", test_zero_allocation_frames},
        {"hashed_layout_reuses_room", test_hashed_layout_reuses_room},
        {"allocation_failure", test_allocation_failure},
        {"packed_matches_strided", test_packed_matches_strided},
        {"rebuild_follows_fresh", test_rebuild_follows_fresh},
        {"hashed_counts_around_lookahead", test_hashed_counts_around_lookahead},
        {"rebuild_failures_change_nothing", test_rebuild_failures_change_nothing},
        {"cells_at_edges", test_cells_at_edges},
        {"cells_at_huge_edges", test_cells_at_huge_edges},
        {"hashed_table_follows_cells", test_hashed_table_follows_cells},
        {"blocked_build_matches_one_pass", test_blocked_build_matches_one_pass},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
