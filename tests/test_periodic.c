// SPDX-License-Identifier: MIT
// Periodic boxes in the grid (nbGridDesc.period) against a brute-force minimum-image oracle
// (nb_oracle.h, nbo_wrap_*): every query (all pairs, count, visit, units, short buffers, cross
// pairs, radius, box, kNN in the Euclidean norm and p = 1, 3.5, inf), 2D and 3D, on random and
// adversarial sets: points on the faces of the box, lattices with pairs exactly r apart across a
// face, r = P / 2 and just below, 1, 2 and 3 cells per axis (the stencil meets a cell twice through
// the wrap), duplicates, mixed periodic and open axes, clustered points in a sparse box, clumps (in
// the middle, across the faces, at opposite ends, duplicated; the ranked layout) queried from
// anywhere in the box, filters. Plus the statuses (bad periods, points outside the box, radii the
// minimum image cannot answer), the unchanged grid after a refused build, memory of a sparse box,
// the cost of a clump, zero-allocation frames. All pairs are also compared, pair for pair and in
// order, across the SIMD copies of the kernels (simd.h).
#include <nearby/grid.h>

#include "nb_oracle.h"
#include "nb_test.h"
#include "simd.h"

#include <float.h>
#include <math.h>
#include <time.h>

// ---- checks against the oracle ----

static nbGrid *make_grid(const nboSet *s, const double *period, double cell, double r)
{
    nbGridDesc desc = {0};
    desc.dim = s->dim;
    desc.cell_size = cell;
    for (int a = 0; a < s->dim; a++) desc.period[a] = period[a];
    nbGrid *g = NULL;
    if (nb_grid_create(&desc, &g) != NB_OK) return NULL;
    const nbPoints pts = nbo_points(s);
    if (nb_grid_build(g, &pts, r) != NB_OK || nb_grid_validate(g) != NB_OK) {
        nb_grid_destroy(g);
        return NULL;
    }
    return g;
}

// Every all-pairs entry point agrees with the oracle and with each other.
static int check_pairs(const nbGrid *g, const nboSet *s, const double *period, double r)
{
    int64_t want_n = 0, found = -1, count = -1;
    nbPair *want = nbo_wrap_pairs(s, r, period, &want_n);
    nbPair *got = (nbPair *)malloc((size_t)(want_n + 1) * sizeof(nbPair));
    NB_CHECK(got != NULL);
    NB_CHECK_OK(nb_grid_pairs(g, r, got, want_n + 1, &found));
    NB_CHECK_OK(nb_grid_count_pairs(g, r, &count));
    if (found != want_n || count != want_n)
        fprintf(stderr,
                "  pairs: n=%d dim=%d r=%.17g P=(%g,%g,%g) want %lld found %lld count %lld\n", s->n,
                s->dim, r, period[0], period[1], period[2], (long long)want_n, (long long)found,
                (long long)count);
    NB_CHECK(found == want_n && count == want_n);
    nboPairLog log = {NULL, 0, 0, 0};
    NB_CHECK_OK(nb_grid_visit_pairs(g, r, nbo_log_pair, &log));
    NB_CHECK(log.n == want_n);
    NB_CHECK(want_n == 0 || memcmp(log.p, got, (size_t)want_n * sizeof(nbPair)) == 0);
    const int32_t units = nb_grid_pair_units(g);
    nboPairLog part = {NULL, 0, 0, 0};
    for (int32_t u = 0; u < units;) {
        const int32_t e = u + 1 + nbt_int(units - u);
        NB_CHECK_OK(nb_grid_visit_pairs_range(g, r, u, e, nbo_log_pair, &part));
        u = e;
    }
    NB_CHECK(part.n == want_n);
#if defined(NBI_AVX2)
    for (int off = 1; off <= 2; off++) { // the narrower kernel copies: the same pairs, in order
        nbi_avx2_off = off == 2;
#if defined(NBI_AVX512)
        nbi_avx512_off = 1;
#endif
        nbPair *narrow = (nbPair *)malloc((size_t)(want_n + 1) * sizeof(nbPair));
        int64_t narrow_n = -1;
        NB_CHECK(narrow != NULL);
        NB_CHECK_OK(nb_grid_pairs(g, r, narrow, want_n + 1, &narrow_n));
        NB_CHECK(narrow_n == want_n);
        NB_CHECK(want_n == 0 || memcmp(narrow, got, (size_t)want_n * sizeof(nbPair)) == 0);
        free(narrow);
    }
    nbi_avx2_off = 0;
#if defined(NBI_AVX512)
    nbi_avx512_off = 0;
#endif
#endif
    for (int64_t t = 0; t < want_n; t++) NB_CHECK(got[t].i < got[t].j);
    nbo_sort_pairs(got, want_n);
    NB_CHECK(nbo_same_pairs(got, want_n, want, want_n));
    nbo_sort_pairs(part.p, part.n);
    NB_CHECK(nbo_same_pairs(part.p, part.n, want, want_n));
    if (want_n > 1) { // a short buffer: the first pairs of the full order, and the full count
        const int64_t cap = 1 + nbt_int((int32_t)(want_n < 100000 ? want_n - 1 : 99999));
        nbPair *short_buf = (nbPair *)malloc((size_t)cap * sizeof(nbPair));
        NB_CHECK(short_buf != NULL);
        NB_CHECK_STATUS(nb_grid_pairs(g, r, short_buf, cap, &found), NB_ERR_BUFFER_TOO_SMALL);
        NB_CHECK(found == want_n);
        NB_CHECK(memcmp(short_buf, log.p, (size_t)cap * sizeof(nbPair)) == 0);
        free(short_buf);
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

static int check_radius(const nbGrid *g, const nboSet *s, const double *period, const double *c,
                        double r)
{
    int32_t wn = 0, found = -1;
    int32_t *want = nbo_wrap_radius(s, c, r, period, &wn);
    int32_t *got = (int32_t *)malloc(((size_t)s->n + 1) * sizeof(int32_t));
    NB_CHECK(got != NULL);
    NB_CHECK_OK(nb_grid_query_radius(g, c, r, NB_FILTER_ALL, got, s->n + 1, &found));
    if (found != wn)
        fprintf(stderr, "  radius: c=(%.17g,%.17g) r=%.17g want %d found %d\n", c[0], c[1], r, wn,
                found);
    NB_CHECK(found == wn);
    nbo_sort_indices(got, found);
    NB_CHECK(nbo_same_indices(got, found, want, wn));
    if (wn > 1) {
        NB_CHECK_STATUS(nb_grid_query_radius(g, c, r, NB_FILTER_ALL, got, wn - 1, &found),
                        NB_ERR_BUFFER_TOO_SMALL);
        NB_CHECK(found == wn);
    }
    free(want);
    free(got);
    return 0;
}

static int check_box(const nbGrid *g, const nboSet *s, const double *period, const double *lo,
                     const double *hi)
{
    int32_t wn = 0, found = -1;
    int32_t *want = nbo_wrap_box(s, lo, hi, period, &wn);
    int32_t *got = (int32_t *)malloc(((size_t)s->n + 1) * sizeof(int32_t));
    NB_CHECK(got != NULL);
    NB_CHECK_OK(
        nb_grid_query_box(g, NBT_BOX(lo, hi, s->dim), NB_FILTER_ALL, got, s->n + 1, &found));
    if (found != wn)
        fprintf(stderr, "  box: [%.17g,%.17g]x[%.17g,%.17g] want %d found %d\n", lo[0], hi[0],
                lo[1], hi[1], wn, found);
    NB_CHECK(found == wn);
    nbo_sort_indices(got, found);
    NB_CHECK(nbo_same_indices(got, found, want, wn));
    free(want);
    free(got);
    return 0;
}

// The k nearest by brute force in the norm p != 2 (raw: sum |d|^p, max |d| for p = inf), d by
// the minimum image as the library takes it: a = |q - x|, d = min(a, P - a).
static nbNeighbor *brute_norm(const nboSet *s, const double *q, double p, const double *period,
                              int32_t k, int32_t *found)
{
    nbNeighbor *all = (nbNeighbor *)nbo_xalloc(((size_t)s->n + 1) * sizeof *all);
    for (int32_t i = 0; i < s->n; i++) {
        double raw = 0.0;
        for (int a = 0; a < s->dim; a++) {
            double d = fabs(q[a] - nbo_pt(s, i)[a]);
            if (period[a] > 0.0 && d > period[a] - d) d = period[a] - d;
            const double t = p == 1.0 || isinf(p) ? d : pow(d, p);
            raw = isinf(p) ? (t > raw ? t : raw) : raw + t;
        }
        all[i] = (nbNeighbor){i, raw};
    }
    *found = nbo_select_neighbors(all, s->n, k);
    return all;
}

static int check_knn_norms(const nbGrid *g, const nboSet *s, const double *period, const double *q,
                           int32_t k)
{
    const double norms[] = {1.0, 3.5, (double)INFINITY};
    nbNeighbor *got = (nbNeighbor *)malloc(((size_t)k + 1) * sizeof(nbNeighbor));
    NB_CHECK(got != NULL);
    for (int t = 0; t < 3; t++) {
        int32_t want = 0, found = -1;
        nbNeighbor *all = brute_norm(s, q, norms[t], period, k, &want);
        NB_CHECK_OK(
            nb_grid_knn_norm(g, q, norms[t], NB_FILTER_ALL, (double)INFINITY, got, k, &found));
        NB_CHECK(found == want);
        for (int32_t j = 0; j < want; j++) {
            if (got[j].index != all[j].index || got[j].dist2 != all[j].dist2)
                fprintf(stderr, "  knn p=%g k=%d rank %d: want %d (%.17g) got %d (%.17g)\n",
                        norms[t], k, j, all[j].index, all[j].dist2, got[j].index, got[j].dist2);
            NB_CHECK(got[j].index == all[j].index && got[j].dist2 == all[j].dist2);
        }
        free(all);
    }
    free(got);
    return 0;
}

static int check_knn(const nbGrid *g, const nboSet *s, const double *period, const double *q,
                     int32_t k)
{
    if (k <= 40 && check_knn_norms(g, s, period, q, k)) return 1;
    int32_t want = 0, found = -1;
    nbNeighbor *all = nbo_wrap_knn(s, q, k, period, &want);
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
    free(all);
    free(got);
    return 0;
}

// A coordinate for queries on axis a: anywhere in [0, P) on a periodic axis, often on a face or
// on a data point; around the data on an open axis.
static double query_coord(const nboSet *s, const double *period, int a, int t)
{
    const double p = period[a];
    if (t % 5 == 0 && s->n > 0) return nbo_pt(s, nbt_int(s->n))[a];
    if (p > 0.0) {
        if (t % 7 == 1) return 0.0;
        if (t % 7 == 2) return nextafter(p, 0.0);
        return nbt_range(0.0, p) * (1.0 - 0x1p-52);
    }
    return nbt_range(-20.0, 20.0);
}

// Builds s with `period` and `cell` (0 = default) at r, and checks every query against the
// oracle at r and at other radii up to P / 2.
static int check_all(const nboSet *s, const double *period, double cell, double r, int queries)
{
    nbGrid *g = make_grid(s, period, cell, r);
    NB_CHECK(g != NULL);
    double half = (double)INFINITY;
    for (int a = 0; a < s->dim; a++)
        if (period[a] > 0.0 && 0.5 * period[a] < half) half = 0.5 * period[a];
    if (check_pairs(g, s, period, r)) return 1;
    if (check_pairs(g, s, period, r * 0.5)) return 1;
    if (s->n <= 800 && half < (double)INFINITY && check_pairs(g, s, period, half)) return 1;
    if (s->n <= 800 && r * 2.5 <= half && check_pairs(g, s, period, r * 2.5)) return 1;
    for (int t = 0; t < queries; t++) {
        double c[3] = {0, 0, 0}, lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
        for (int a = 0; a < s->dim; a++) {
            c[a] = query_coord(s, period, a, t);
            const double p = period[a] > 0.0 ? period[a] : 40.0;
            const int kind = (t + a) % 6;
            if (kind == 0) { // a box crossing the lower face
                lo[a] = -nbt_range(0.0, 0.4) * p;
                hi[a] = lo[a] + nbt_range(0.0, 0.9) * p;
            } else if (kind == 1) { // crossing the upper face
                hi[a] = p + nbt_range(0.0, 0.4) * p;
                lo[a] = hi[a] - nbt_range(0.0, 0.9) * p;
            } else if (kind == 2) { // the whole axis, by width or by an infinite bound
                lo[a] = t % 2 ? -(double)INFINITY : c[a];
                hi[a] = t % 2 ? c[a] : c[a] + p;
            } else if (kind == 3 && s->n > 0) { // faces exactly on data points
                const double u = nbo_pt(s, nbt_int(s->n))[a], v = nbo_pt(s, nbt_int(s->n))[a];
                lo[a] = u < v ? u : v;
                hi[a] = u < v ? v : u;
            } else {
                lo[a] = c[a] - nbt_range(0.0, 0.3) * p;
                hi[a] = c[a] + nbt_range(0.0, 0.3) * p;
            }
            if (period[a] <= 0.0 && kind < 3) { // an open axis: a plain box
                lo[a] = c[a] - 5.0;
                hi[a] = c[a] + 5.0;
            }
        }
        double qr = t % 3 == 0 ? r : nbt_range(0.0, 1.0) * (half < 1e300 ? half : 3.0 * r);
        if (t % 11 == 4 && half < 1e300) qr = half;
        if (check_radius(g, s, period, c, qr)) return 1;
        if (check_box(g, s, period, lo, hi)) return 1;
        const int32_t k = t % 5 == 0 ? s->n + 3 : 1 + nbt_int(t % 2 ? 5 : 40);
        if (check_knn(g, s, period, c, k)) return 1;
    }
    NB_CHECK_OK(nb_grid_validate(g));
    nb_grid_destroy(g);
    return 0;
}

// The default cell, a cell of half the radius (2 rings), and 1, 2 and 3 cells per periodic axis.
static int check_cells(const nboSet *s, const double *period, double r, int queries)
{
    if (check_all(s, period, 0.0, r, queries)) return 1;
    if (r > 0.0 && check_all(s, period, r * 0.5, r, queries / 2)) return 1;
    double pmax = 0.0;
    for (int a = 0; a < s->dim; a++) pmax = period[a] > pmax ? period[a] : pmax;
    for (int m = 1; m <= 3; m++)
        if (check_all(s, period, pmax / m, r, queries / 2)) return 1;
    return 0;
}

static void fill_uniform(nboSet *s, const double *period)
{
    for (int32_t i = 0; i < s->n; i++)
        for (int a = 0; a < s->dim; a++) {
            const double p = period[a] > 0.0 ? period[a] : 30.0;
            double x = nbt_range(0.0, p);
            if (period[a] > 0.0 && x >= p) x = 0.0;
            if (period[a] <= 0.0) x -= 15.0; // open axes go negative too
            s->p[(size_t)i * s->dim + a] = x;
        }
}

// ---- data sets ----

static int test_uniform_2d(void)
{
    const double periods[][3] = {{10, 10, 0}, {7.5, 13, 0}, {1, 100, 0}};
    for (int t = 0; t < 3; t++) {
        nboSet s = nbo_set_new(600, 2);
        fill_uniform(&s, periods[t]);
        const double r = t == 2 ? 0.3 : nbt_range(0.3, 1.5);
        if (check_cells(&s, periods[t], r, 40)) return 1;
        nbo_set_free(&s);
    }
    return 0;
}

static int test_uniform_3d(void)
{
    const double periods[][3] = {{6, 6, 6}, {4, 9, 5.5}};
    for (int t = 0; t < 2; t++) {
        nboSet s = nbo_set_new(700, 3);
        fill_uniform(&s, periods[t]);
        if (check_cells(&s, periods[t], nbt_range(0.5, 1.2), 30)) return 1;
        nbo_set_free(&s);
    }
    return 0;
}

// Some axes wrap, others do not (and go negative).
static int test_mixed_axes(void)
{
    const double p2[3] = {0, 8, 0}, p3[3] = {5, 0, 7};
    nboSet s = nbo_set_new(500, 2);
    fill_uniform(&s, p2);
    if (check_cells(&s, p2, 1.0, 30)) return 1;
    nbo_set_free(&s);
    nboSet t = nbo_set_new(500, 3);
    fill_uniform(&t, p3);
    if (check_cells(&t, p3, 1.1, 30)) return 1;
    nbo_set_free(&t);
    return 0;
}

// Points exactly on the faces: x = 0 and x = nextafter(P, 0), on every periodic axis, with
// duplicates, and pairs exactly r apart across a face (0 and P - r), at r = P / 2 too.
static int test_faces(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        const double period[3] = {10, 10, dim == 3 ? 10 : 0};
        const double top = nextafter(10.0, 0.0);
        const double vals[] = {0.0, top, 0.5, 9.5, 5.0, 2.5, 7.5, 0.0, top, 9.0, 1.0};
        const int nv = (int)(sizeof vals / sizeof vals[0]);
        nboSet s = nbo_set_new(dim == 2 ? nv * nv : 400, dim);
        for (int32_t i = 0; i < s.n; i++)
            for (int a = 0; a < dim; a++) {
                int pick = dim == 2 ? (a == 0 ? i % nv : i / nv) : nbt_int(nv);
                s.p[(size_t)i * dim + a] = vals[pick];
            }
        const double radii[] = {0.5, 1.0, 2.5, 5.0, nextafter(5.0, 0.0), 1e-300, 0.0};
        for (size_t t = 0; t < sizeof radii / sizeof radii[0]; t++)
            if (check_cells(&s, period, radii[t], 8)) return 1;
        nbo_set_free(&s);
    }
    return 0;
}

// A lattice of spacing h filling the box: every neighbour is exactly h away, across the faces
// as well (0 and P - h), and exactly P / 2 away when r = P / 2.
static int test_lattice_across_faces(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        const int side = dim == 2 ? 12 : 6;
        const double h = 0.5, p = side * h;
        const double period[3] = {p, p, dim == 3 ? p : 0};
        int32_t n = 1;
        for (int a = 0; a < dim; a++) n *= side;
        nboSet s = nbo_set_new(n + 20, dim);
        for (int32_t i = 0; i < n; i++) {
            int32_t r = i;
            for (int a = 0; a < dim; a++) {
                s.p[(size_t)i * dim + a] = (r % side) * h;
                r /= side;
            }
        }
        for (int32_t i = n; i < s.n; i++) // duplicates of lattice points
            for (int a = 0; a < dim; a++)
                s.p[(size_t)i * dim + a] = s.p[(size_t)nbt_int(n) * dim + a];
        const double radii[] = {h,       nextafter(h, 0.0),       2 * h,
                                0.5 * p, nextafter(0.5 * p, 0.0), h * sqrt(2.0)};
        for (size_t t = 0; t < sizeof radii / sizeof radii[0]; t++) {
            if (check_all(&s, period, 0.0, radii[t], 10)) return 1;
            for (int m = 1; m <= 3; m++)
                if (check_all(&s, period, p / m, radii[t], 4)) return 1;
        }
        // The counts are known: each lattice point has 2 * dim neighbours at h.
        nboSet l = s;
        l.n = n;
        nbGrid *g = make_grid(&l, period, 0.0, h);
        NB_CHECK(g != NULL);
        int64_t count = -1;
        NB_CHECK_OK(nb_grid_count_pairs(g, h, &count));
        NB_CHECK(count == (int64_t)n * dim);
        NB_CHECK_OK(nb_grid_count_pairs(g, nextafter(h, 0.0), &count));
        NB_CHECK(count == 0);
        nb_grid_destroy(g);
        nbo_set_free(&s);
    }
    return 0;
}

// Clustered points in a box far larger than the radius: memory stays O(N) (the cell edge grows
// instead), and every query stays exact.
static int test_sparse_box(void)
{
    const double period[3] = {1e6, 1e6, 0};
    nboSet s = nbo_set_new(1000, 2);
    for (int32_t i = 0; i < s.n; i++) {
        const double cx = i < 500 ? 3.0 : 999998.0, cy = i % 3 == 0 ? 999999.5 : 200.0;
        double x = cx + nbt_gauss() * 2.0, y = cy + nbt_gauss() * 2.0;
        x = x - 1e6 * floor(x / 1e6);
        y = y - 1e6 * floor(y / 1e6);
        s.p[2 * i] = x < 1e6 ? x : 0.0;
        s.p[2 * i + 1] = y < 1e6 ? y : 0.0;
    }
    if (check_all(&s, period, 0.0, 1.0, 30)) return 1;
    nbGrid *g = make_grid(&s, period, 0.0, 1.0);
    NB_CHECK(g != NULL);
    nbGridInfo info;
    NB_CHECK_OK(nb_grid_info(g, &info));
    NB_CHECK(!info.hashed && info.cells <= 4 * s.n + 64);
    NB_CHECK(nb_grid_memory_bytes(g) < 200000);
    nb_grid_destroy(g);
    nbo_set_free(&s);
    return 0;
}

// ---- clustered data: the box holds the occupied arc of each periodic axis ----

// x wrapped into [0, P).
static double wrap_into(double x, double p)
{
    x -= p * floor(x / p);
    return x < p ? x : 0.0;
}

// Clumps of width sigma * P per axis about the given centres (fractions of P; a centre of 0
// splits its clump across the faces), the points spread over them in turn; every `dup`-th point
// repeats the one before.
static void fill_clumps(nboSet *s, const double *period, const double (*centre)[3], int clumps,
                        double sigma, int dup)
{
    for (int32_t i = 0; i < s->n; i++)
        for (int a = 0; a < s->dim; a++) {
            double *x = &s->p[(size_t)i * s->dim + a];
            if (dup > 0 && i % dup == dup - 1) {
                *x = x[-s->dim];
                continue;
            }
            const double p = period[a] > 0.0 ? period[a] : 30.0;
            const double c = centre[i % clumps][a] * p + nbt_gauss() * sigma * p;
            *x = period[a] > 0.0 ? wrap_into(c, p) : c;
        }
}

// The layout of a build: its cells and their edge.
static nbGridInfo info_of(const nbGrid *g)
{
    nbGridInfo info;
    memset(&info, 0, sizeof info);
    nb_grid_info(g, &info);
    return info;
}

// Clumps in the middle, across the faces, at opposite ends, in a box they fill, duplicated, a
// single point and all points equal; 2D and 3D; every query from anywhere in the box (most of
// them far from the arcs), against the oracle.
static int test_clumps(void)
{
    static const double centres[][4][3] = {
        {{0.5, 0.5, 0.5}},                                                        // the middle
        {{0.0, 0.0, 0.0}},                                                        // across 0 / P
        {{0.02, 0.3, 0.98}, {0.98, 0.7, 0.02}},                                   // opposite ends
        {{0.1, 0.5, 0.9}, {0.6, 0.0, 0.4}, {0.35, 0.99, 0.5}, {0.85, 0.25, 0.0}}, // spread
    };
    static const int count[] = {1, 1, 2, 4};
    for (int dim = 2; dim <= 3; dim++) {
        const double period[3] = {10, 7, dim == 3 ? 12 : 0};
        for (int t = 0; t < 4; t++) {
            for (int dup = 0; dup <= 3; dup += 3) {
                nboSet s = nbo_set_new(dim == 2 ? 500 : 600, dim);
                fill_clumps(&s, period, centres[t], count[t], 0.01, dup);
                const double r = dim == 2 ? 0.02 : 0.05;
                if (check_all(&s, period, 0.0, r, 30)) return 1;
                if (dup == 0 && check_all(&s, period, r * 0.5, r, 15)) return 1;
                if (dup == 0 && check_all(&s, period, 0.0, 0.3, 15)) return 1; // wide cells
                nbo_set_free(&s);
            }
        }
        const double mixed[3] = {0, 7, dim == 3 ? 12 : 0}; // an open axis beside periodic ones
        nboSet m = nbo_set_new(400, dim);
        fill_clumps(&m, mixed, centres[2], count[2], 0.01, 0);
        if (check_all(&m, mixed, 0.0, 0.05, 30)) return 1;
        nbo_set_free(&m);
        for (int32_t n = 1; n <= 2; n++) { // one point; two equal points
            nboSet s = nbo_set_new(n, dim);
            for (int a = 0; a < dim; a++) s.p[a] = s.p[(size_t)(n - 1) * dim + a] = 0.3 * a + 0.1;
            if (check_all(&s, period, 0.0, 0.05, 40)) return 1;
            nbo_set_free(&s);
        }
    }
    return 0;
}

// A clump small enough that the box of its arcs has more than 4 N + 64 cells of the radius:
// the ranked layout, at the radius's cells.
static int test_clump_ranked(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        const double period[3] = {1, 1, 1}, centre[2][3] = {{0.0, 0.99, 0.01}, {0.5, 0.5, 0.5}};
        nboSet s = nbo_set_new(dim == 2 ? 1500 : 2500, dim);
        fill_clumps(&s, period, centre, 1, 0.01, 0);
        const double r = dim == 2 ? 0.0004 : 0.002;
        if (check_all(&s, period, 0.0, r, 60)) return 1;
        nbGrid *g = make_grid(&s, period, 0.0, r);
        NB_CHECK(g != NULL);
        const nbGridInfo info = info_of(g);
        NB_CHECK(info.ranked && info.cell_size <= 1.01 * r);
        nb_grid_destroy(g);
        // cross pairs between it and another clump, both ways
        nboSet b = nbo_set_new(400, dim);
        fill_clumps(&b, period, centre + 1, 1, 0.01, 0);
        nbGrid *ga = make_grid(&s, period, 0.0, r), *gb = make_grid(&b, period, 0.0, 0.01);
        NB_CHECK(ga != NULL && gb != NULL);
        for (int k = 0; k < 2; k++) {
            const double rr = k == 0 ? r : 0.01;
            int64_t want_n = 0, found = -1, back = -1;
            nbPair *want = nbo_wrap_cross_pairs(&s, &b, rr, period, &want_n);
            nbPair *got = (nbPair *)malloc((size_t)(want_n + 1) * sizeof(nbPair));
            NB_CHECK(got != NULL);
            NB_CHECK_OK(nb_grid_cross_pairs(ga, gb, rr, got, want_n + 1, &found));
            NB_CHECK_OK(nb_grid_count_cross_pairs(gb, ga, rr, &back));
            NB_CHECK(found == want_n && back == want_n);
            nbo_sort_pairs(got, found);
            NB_CHECK(nbo_same_pairs(got, found, want, want_n));
            free(got);
            free(want);
        }
        nb_grid_destroy(ga);
        nb_grid_destroy(gb);
        nbo_set_free(&b);
        nbo_set_free(&s);
    }
    return 0;
}

// The cost of a clump in a large periodic box: its cells are those of the radius, not cells
// doubled until the whole box had 4 N + 64 of them (20k points in one clump of sigma = 1% of
// the box then sat in about 8 cells, and a kNN of every point scanned most of them: 12 scans of
// every point a query). The k nearest of every point, and of queries from anywhere in the box
// (far from the clump on some axis), cost less than a fifth of a scan each; the least of three
// rounds, so that a busy machine does not fail it.
static int test_clump_costs_little(void)
{
    const double period[3] = {1, 1, 1}, centre[1][3] = {{0.5, 0.5, 0.5}};
    nboSet s = nbo_set_new(20000, 3);
    fill_clumps(&s, period, centre, 1, 0.01, 0);
    const double r = 0.002; // about 10 neighbours a point in the clump's core
    nbGrid *g = make_grid(&s, period, 0.0, r);
    NB_CHECK(g != NULL);
    const nbGridInfo info = info_of(g);
    NB_CHECK(info.cell_size <= 1.01 * r && info.cells <= 64 * (int64_t)s.n);
    enum { QUERIES = 2000, SCANS = 400 };
    double best_knn = (double)INFINITY, best_scan = (double)INFINITY, sink = 0.0;
    for (int round = 0; round < 3; round++) {
        double t0 = nbt_seconds();
        for (int q = 0; q < QUERIES; q++) {
            double far[3];
            const double *at = nbo_pt(&s, (q * 7919) % s.n);
            for (int a = 0; a < 3; a++) far[a] = nbt_range(0.0, 1.0) * (1.0 - 0x1p-52);
            nbNeighbor out[8];
            int32_t found = 0;
            NB_CHECK_OK(
                nb_grid_knn(g, q % 2 ? far : at, NB_FILTER_ALL, (double)INFINITY, out, 8, &found));
            NB_CHECK(found == 8);
            sink += out[7].dist2;
        }
        const double knn = nbt_seconds() - t0;
        t0 = nbt_seconds();
        for (int k = 0; k < SCANS; k++) { // a brute-force scan of every point
            const double *q = nbo_pt(&s, k);
            double least = (double)INFINITY;
            for (int32_t i = 0; i < s.n; i++) {
                const double d = nbo_wrap_d2(q, nbo_pt(&s, i), 3, period);
                least = d < least && i != k ? d : least;
            }
            sink += least;
        }
        const double scan = nbt_seconds() - t0;
        best_knn = knn < best_knn ? knn : best_knn;
        best_scan = scan < best_scan ? scan : best_scan;
        if (knn < scan) break; // one round that passes is enough
    }
    if (!(best_knn < best_scan))
        fprintf(stderr, "  %d clump kNN queries %.1f ms, %d scans %.1f ms (%g)\n", QUERIES,
                best_knn * 1e3, SCANS, best_scan * 1e3, sink);
    NB_CHECK(best_knn < best_scan);
    nb_grid_destroy(g);
    nbo_set_free(&s);
    return 0;
}

// Boxes at the limits of the accepted bounds: lo = -P, hi just below 2P, and ranges that the
// candidate margin pushes past a face (once read a cell before the first: caught by ASan).
static int test_box_limits(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        const double period[3] = {4, 3, dim == 3 ? 5 : 0};
        nboSet s = nbo_set_new(300, dim);
        fill_uniform(&s, period);
        nbGrid *g = make_grid(&s, period, 0.0, 0.5);
        NB_CHECK(g != NULL);
        for (int t = 0; t < 40; t++) {
            double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
            for (int a = 0; a < dim; a++) {
                const double p = period[a];
                switch ((t + a) % 4) {
                case 0: lo[a] = -p, hi[a] = -p + nbt_range(0.0, 0.9) * p; break;
                case 1:
                    hi[a] = nextafter(2.0 * p, 0.0), lo[a] = hi[a] - nbt_range(0.0, 0.9) * p;
                    break;
                case 2: lo[a] = -p, hi[a] = nextafter(0.0, -1.0); break;
                default: lo[a] = p, hi[a] = nextafter(2.0 * p, 0.0); break;
                }
            }
            if (check_box(g, &s, period, lo, hi)) return 1;
        }
        nb_grid_destroy(g);
        nbo_set_free(&s);
    }
    return 0;
}

// Categories and masks: the periodic kernels with the filter.
static int test_filters(void)
{
    const double period[3] = {6, 6, 6};
    for (int dim = 2; dim <= 3; dim++) {
        nboSet s = nbo_set_new(500, dim);
        fill_uniform(&s, period);
        nbo_set_add_filters(&s);
        for (int32_t i = 0; i < s.n; i++) {
            s.cat[i] = 1u << nbt_int(3);
            s.mask[i] = (uint32_t)nbt_int(8);
        }
        for (int m = 0; m <= 3; m++) {
            nbGrid *g = make_grid(&s, period, m == 0 ? 0.0 : 6.0 / m, 1.0);
            NB_CHECK(g != NULL);
            if (check_pairs(g, &s, period, 1.0)) return 1;
            if (check_pairs(g, &s, period, 3.0)) return 1;
            nb_grid_destroy(g);
        }
        nbo_set_free(&s);
    }
    return 0;
}

// Cross pairs: two periodic sets with the same periods, different cells; refused across
// different periods or against an open grid.
static int test_cross_pairs(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        const double period[3] = {8, 5, dim == 3 ? 6 : 0};
        nboSet a = nbo_set_new(300, dim), b = nbo_set_new(250, dim);
        fill_uniform(&a, period);
        fill_uniform(&b, period);
        const double cells[] = {0.0, 0.4, 8.0, 2.5};
        for (int t = 0; t < 4; t++) {
            nbGrid *ga = make_grid(&a, period, cells[t], 1.0);
            nbGrid *gb = make_grid(&b, period, cells[3 - t], 0.7);
            NB_CHECK(ga != NULL && gb != NULL);
            const double radii[] = {1.0, 0.3, 2.5};
            for (int k = 0; k < 3; k++) {
                int64_t want_n = 0, found = -1, count = -1;
                nbPair *want = nbo_wrap_cross_pairs(&a, &b, radii[k], period, &want_n);
                nbPair *got = (nbPair *)malloc((size_t)(want_n + 1) * sizeof(nbPair));
                NB_CHECK_OK(nb_grid_cross_pairs(ga, gb, radii[k], got, want_n + 1, &found));
                NB_CHECK_OK(nb_grid_count_cross_pairs(ga, gb, radii[k], &count));
                NB_CHECK(found == want_n && count == want_n);
                nbo_sort_pairs(got, found);
                NB_CHECK(nbo_same_pairs(got, found, want, want_n));
                free(got);
                free(want);
            }
            NB_CHECK_STATUS(nb_grid_count_cross_pairs(ga, gb, 2.5 + 1e-9, &(int64_t){0}),
                            NB_ERR_OUT_OF_RANGE);
            nb_grid_destroy(ga);
            nb_grid_destroy(gb);
        }
        const double other[3] = {8, 5.5, dim == 3 ? 6 : 0}, open[3] = {0, 0, 0};
        nbGrid *ga = make_grid(&a, period, 0.0, 1.0);
        nbGrid *go = make_grid(&b, other, 0.0, 1.0), *gn = make_grid(&b, open, 0.0, 1.0);
        NB_CHECK(ga != NULL && go != NULL && gn != NULL);
        int64_t count = -1;
        NB_CHECK_STATUS(nb_grid_count_cross_pairs(ga, go, 1.0, &count), NB_ERR_OUT_OF_RANGE);
        NB_CHECK_STATUS(nb_grid_count_cross_pairs(ga, gn, 1.0, &count), NB_ERR_OUT_OF_RANGE);
        NB_CHECK_STATUS(nb_grid_count_cross_pairs(gn, ga, 1.0, &count), NB_ERR_OUT_OF_RANGE);
        nb_grid_destroy(ga);
        nb_grid_destroy(go);
        nb_grid_destroy(gn);
        // -0.0 is 0.0: an open axis either way, the same box (found by fuzz_periodic)
        const double pz[3] = {8, 0.0, 0.0}, nz[3] = {8, -0.0, -0.0};
        nbGrid *gz = make_grid(&a, pz, 0.0, 1.0), *gm = make_grid(&b, nz, 0.0, 1.0);
        NB_CHECK(gz != NULL && gm != NULL);
        NB_CHECK_OK(nb_grid_count_cross_pairs(gz, gm, 1.0, &count));
        NB_CHECK_OK(nb_grid_count_cross_pairs(gm, gz, 1.0, &count));
        nb_grid_destroy(gz);
        nb_grid_destroy(gm);
        nbo_set_free(&a);
        nbo_set_free(&b);
    }
    return 0;
}

// ---- statuses ----

// The grid's answers for a fixed probe, to show a refused call left it unchanged.
static int64_t fingerprint(const nbGrid *g)
{
    int64_t count = 0;
    if (nb_grid_count_pairs(g, 1.0, &count) != NB_OK) return -1;
    return count * 1000003 + nb_grid_count(g);
}

static int test_create_statuses(void)
{
    nbGrid *g = (nbGrid *)&g;
    nbGridDesc d = {0};
    d.period[0] = (double)NAN;
    NB_CHECK_STATUS(nb_grid_create(&d, &g), NB_ERR_NOT_FINITE);
    NB_CHECK(g == NULL);
    d.period[0] = (double)INFINITY;
    NB_CHECK_STATUS(nb_grid_create(&d, &g), NB_ERR_NOT_FINITE);
    d.period[0] = -(double)INFINITY;
    NB_CHECK_STATUS(nb_grid_create(&d, &g), NB_ERR_NOT_FINITE);
    d.period[0] = -1.0;
    NB_CHECK_STATUS(nb_grid_create(&d, &g), NB_ERR_OUT_OF_RANGE);
    d.period[0] = 10.0;
    d.period[2] = 10.0; // z in 2D
    NB_CHECK_STATUS(nb_grid_create(&d, &g), NB_ERR_OUT_OF_RANGE);
    d.dim = 3;
    NB_CHECK_OK(nb_grid_create(&d, &g));
    nb_grid_destroy(g);
    d.dim = 2;
    d.period[2] = 0.0;
    d.period[1] = -0.0; // -0 is 0: not periodic
    NB_CHECK_OK(nb_grid_create(&d, &g));
    nb_grid_destroy(g);
    return 0;
}

static int test_build_and_query_statuses(void)
{
    const double period[3] = {10, 4, 0};
    nboSet s = nbo_set_new(200, 2);
    fill_uniform(&s, period);
    s.p[0] = -0.0; // -0 is inside [0, P)
    s.p[1] = nextafter(4.0, 0.0);
    nbGrid *g = make_grid(&s, period, 0.0, 1.0);
    NB_CHECK(g != NULL);
    const int64_t before = fingerprint(g);
    NB_CHECK(before >= 0);
    const double bad[][2] = {{10.0, 1.0}, {-1e-300, 1.0}, {3.0, 4.0}, {3.0, -0.5}, {1e300, 1.0}};
    nboSet t = nbo_set_new(5, 2);
    for (int b = 0; b < 5; b++) {
        fill_uniform(&t, period);
        t.p[2 * (b % 5)] = bad[b][0];
        t.p[2 * (b % 5) + 1] = bad[b][1];
        const nbPoints pts = nbo_points(&t);
        NB_CHECK_STATUS(nb_grid_build(g, &pts, 1.0), NB_ERR_OUT_OF_RANGE);
        NB_CHECK(fingerprint(g) == before);
        NB_CHECK_OK(nb_grid_validate(g));
    }
    t.p[0] = (double)NAN; // finiteness first
    const nbPoints nan_pts = nbo_points(&t);
    NB_CHECK_STATUS(nb_grid_build(g, &nan_pts, 1.0), NB_ERR_NOT_FINITE);
    // a build radius beyond P / 2 on the smallest period (4)
    fill_uniform(&t, period);
    const nbPoints good = nbo_points(&t);
    NB_CHECK_STATUS(nb_grid_build(g, &good, nextafter(2.0, 3.0)), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(fingerprint(g) == before);
    nbo_set_free(&t);

    // radii: r == P / 2 is answered, just above is refused, on every radius call
    int64_t count = -1, found = -1;
    nbPair pair;
    int32_t hits[4];
    nbNeighbor nb[4];
    const double c[2] = {5.0, 2.0};
    NB_CHECK_OK(nb_grid_count_pairs(g, 2.0, &count));
    if (check_pairs(g, &s, period, 2.0)) return 1;
    if (check_pairs(g, &s, period, nextafter(2.0, 0.0))) return 1;
    const double over = nextafter(2.0, 3.0);
    NB_CHECK_STATUS(nb_grid_count_pairs(g, over, &count), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_pairs(g, over, &pair, 1, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(found == 0);
    NB_CHECK_STATUS(nb_grid_visit_pairs(g, over, nbo_log_pair, NULL), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_visit_pairs_range(g, over, 0, 1, nbo_log_pair, NULL),
                    NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_query_radius(g, c, over, NB_FILTER_ALL, hits, 4, &(int32_t){0}),
                    NB_ERR_OUT_OF_RANGE);
    if (check_radius(g, &s, period, c, 2.0)) return 1;
    // query points outside [0, P) on a periodic axis
    const double outside[][2] = {{10.0, 1.0}, {-1e-9, 1.0}, {1.0, 4.0}, {1.0, -3.0}};
    for (int b = 0; b < 4; b++) {
        NB_CHECK_STATUS(
            nb_grid_query_radius(g, outside[b], 1.0, NB_FILTER_ALL, hits, 4, &(int32_t){0}),
            NB_ERR_OUT_OF_RANGE);
        NB_CHECK_STATUS(
            nb_grid_knn(g, outside[b], NB_FILTER_ALL, (double)INFINITY, nb, 4, &(int32_t){0}),
            NB_ERR_OUT_OF_RANGE);
    }
    // boxes: a box of width < P must lie within [-P, 2P); NaN first; lo > hi finds nothing
    const double blo[2] = {-10.5, 0.0}, bhi[2] = {-10.0, 1.0};
    NB_CHECK_STATUS(
        nb_grid_query_box(g, NBT_BOX(blo, bhi, 2), NB_FILTER_ALL, hits, 4, &(int32_t){0}),
        NB_ERR_OUT_OF_RANGE);
    const double blo2[2] = {19.0, 0.0}, bhi2[2] = {20.0, 1.0};
    NB_CHECK_STATUS(
        nb_grid_query_box(g, NBT_BOX(blo2, bhi2, 2), NB_FILTER_ALL, hits, 4, &(int32_t){0}),
        NB_ERR_OUT_OF_RANGE);
    const double blo3[2] = {(double)NAN, 0.0};
    NB_CHECK_STATUS(
        nb_grid_query_box(g, NBT_BOX(blo3, bhi2, 2), NB_FILTER_ALL, hits, 4, &(int32_t){0}),
        NB_ERR_NOT_FINITE);
    const double blo4[2] = {3.0, 0.0}, bhi4[2] = {2.0, 100.0};
    int32_t none = -1;
    NB_CHECK_OK(nb_grid_query_box(g, NBT_BOX(blo4, bhi4, 2), NB_FILTER_ALL, hits, 4, &none));
    NB_CHECK(none == 0);
    NB_CHECK(fingerprint(g) == before);
    NB_CHECK_OK(nb_grid_validate(g));
    nb_grid_destroy(g);
    nbo_set_free(&s);
    return 0;
}

// ---- memory ----

static int test_zero_allocation_frames(void)
{
    nbtAlloc counter = {0};
    const nbAllocator al = nbt_allocator(&counter);
    nbGridDesc d = {0};
    d.dim = 3;
    d.allocator = &al;
    d.period[0] = d.period[1] = d.period[2] = 12.0;
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&d, &g));
    const double period[3] = {12, 12, 12};
    nboSet s = nbo_set_new(3000, 3);
    fill_uniform(&s, period);
    const nbPoints pts = nbo_points(&s);
    NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
    const int64_t allocs = counter.allocs;
    for (int frame = 0; frame < 5; frame++) {
        for (int32_t i = 0; i < s.n * 3; i++) { // every point moves and wraps
            double x = s.p[i] + nbt_range(-0.5, 0.5);
            x = x < 0.0 ? x + 12.0 : x >= 12.0 ? x - 12.0 : x;
            s.p[i] = x >= 0.0 && x < 12.0 ? x : 0.0;
        }
        NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
        int64_t count = 0;
        NB_CHECK_OK(nb_grid_count_pairs(g, 1.0, &count));
        int32_t hits[16], found = 0;
        NB_CHECK_STATUS(nb_grid_query_radius(g, s.p, 3.0, NB_FILTER_ALL, hits, 16, &found),
                        found > 16 ? NB_ERR_BUFFER_TOO_SMALL : NB_OK);
        nbNeighbor nb[8];
        NB_CHECK_OK(nb_grid_knn(g, s.p, NB_FILTER_ALL, (double)INFINITY, nb, 8, &found));
    }
    NB_CHECK(counter.allocs == allocs);
    // allocation failure: every allocation of a fresh grid's first build, the grid unchanged
    for (int64_t fail = 1;; fail++) {
        nbtAlloc f = {0};
        const nbAllocator fa = nbt_allocator(&f);
        d.allocator = &fa;
        nbGrid *h = NULL;
        f.fail_at = 0;
        NB_CHECK_OK(nb_grid_create(&d, &h));
        f.fail_at = f.allocs + fail;
        const nbStatus st = nb_grid_build(h, &pts, 1.0);
        if (st == NB_OK) {
            NB_CHECK(!nbt_alloc_failed(&f));
            nb_grid_destroy(h);
            NB_CHECK(f.live_bytes == 0 && !f.size_mismatch);
            break;
        }
        NB_CHECK(st == NB_ERR_OUT_OF_MEMORY && nb_grid_count(h) == 0);
        NB_CHECK_OK(nb_grid_validate(h));
        nb_grid_destroy(h);
        NB_CHECK(f.live_bytes == 0 && !f.size_mismatch);
    }
    nb_grid_destroy(g);
    NB_CHECK(counter.live_bytes == 0);
    nbo_set_free(&s);
    return 0;
}

// A scheduler that runs the ranges in reverse order on "workers" 0..3, serially: enough to
// take the parallel paths (a periodic build stays serial; pairs split by units).
static void reverse_for(nbTaskFn *task, int32_t count, int32_t min_range, void *task_ctx,
                        void *user)
{
    (void)user;
    const int32_t step = min_range > 0 ? min_range : 1;
    int32_t worker = 0;
    for (int32_t end = count; end > 0; end -= step, worker = (worker + 1) % 4)
        task(end - step > 0 ? end - step : 0, end, worker, task_ctx);
}

// With the caller's scheduler (nbGridDesc.tasks), a periodic grid gives the serial pairs, in
// the same order: uniform points (dense), and a clump whose arcs' box takes the ranked layout.
static int test_tasks(void)
{
    for (int t = 0; t < 2; t++) {
        const double period[3] = {150, 150, 0}, centre[1][3] = {{0.0, 0.5, 0.0}};
        const double r = t == 0 ? 1.5 : 0.02;
        nboSet s = nbo_set_new(20000, 2);
        if (t == 0)
            fill_uniform(&s, period);
        else
            fill_clumps(&s, period, centre, 1, 0.01, 0);
        const nbTasks tasks = {reverse_for, NULL, 4};
        nbGridDesc d = {0};
        d.period[0] = d.period[1] = 150.0;
        nbGrid *serial = NULL, *par = NULL;
        NB_CHECK_OK(nb_grid_create(&d, &serial));
        d.tasks = &tasks;
        NB_CHECK_OK(nb_grid_create(&d, &par));
        const nbPoints pts = nbo_points(&s);
        NB_CHECK_OK(nb_grid_build(serial, &pts, r));
        NB_CHECK_OK(nb_grid_build(par, &pts, r));
        NB_CHECK_OK(nb_grid_validate(par));
        NB_CHECK(info_of(par).ranked == (t == 1) && info_of(serial).ranked == (t == 1));
        int64_t n1 = -1, n2 = -1;
        NB_CHECK_OK(nb_grid_count_pairs(serial, r, &n1));
        NB_CHECK_OK(nb_grid_count_pairs(par, r, &n2));
        NB_CHECK(n1 == n2 && n1 > 0);
        nbPair *a = (nbPair *)malloc((size_t)n1 * sizeof(nbPair));
        nbPair *b = (nbPair *)malloc((size_t)n1 * sizeof(nbPair));
        NB_CHECK(a != NULL && b != NULL);
        NB_CHECK_OK(nb_grid_pairs(serial, r, a, n1, &n1));
        NB_CHECK_OK(nb_grid_pairs(par, r, b, n2, &n2));
        NB_CHECK(nbo_same_pairs(a, n1, b, n2));
        free(a);
        free(b);
        nb_grid_destroy(serial);
        nb_grid_destroy(par);
        nbo_set_free(&s);
    }
    return 0;
}

// Same input, same results in the same order.
static int test_deterministic(void)
{
    const double period[3] = {9, 9, 0};
    nboSet s = nbo_set_new(2000, 2);
    fill_uniform(&s, period);
    nbGrid *a = make_grid(&s, period, 0.0, 1.0), *b = make_grid(&s, period, 0.0, 1.0);
    NB_CHECK(a != NULL && b != NULL);
    nboPairLog la = {NULL, 0, 0, 0}, lb = {NULL, 0, 0, 0};
    NB_CHECK_OK(nb_grid_visit_pairs(a, 1.0, nbo_log_pair, &la));
    NB_CHECK_OK(nb_grid_visit_pairs(b, 1.0, nbo_log_pair, &lb));
    NB_CHECK(la.n > 0 && nbo_same_pairs(la.p, la.n, lb.p, lb.n));
    free(la.p);
    free(lb.p);
    nb_grid_destroy(a);
    nb_grid_destroy(b);
    nbo_set_free(&s);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"uniform_2d", test_uniform_2d},
        {"uniform_3d", test_uniform_3d},
        {"mixed_axes", test_mixed_axes},
        {"faces", test_faces},
        {"lattice_across_faces", test_lattice_across_faces},
        {"sparse_box", test_sparse_box},
        {"clumps", test_clumps},
        {"clump_ranked", test_clump_ranked},
        {"clump_costs_little", test_clump_costs_little},
        {"box_limits", test_box_limits},
        {"filters", test_filters},
        {"cross_pairs", test_cross_pairs},
        {"create_statuses", test_create_statuses},
        {"build_and_query_statuses", test_build_and_query_statuses},
        {"zero_allocation_frames", test_zero_allocation_frames},
        {"deterministic", test_deterministic},
        {"tasks", test_tasks},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
