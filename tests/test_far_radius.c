// SPDX-License-Identifier: MIT
// Radius queries whose ball is many cells wide: from far outside the points' box, reaching into
// it (a ball 1000 boxes wide meets the data in a thin cap), and large radii from inside. The
// walk clips each plane and row of its box of cells to the ball; before, it visited the whole
// box, so a far ball reaching into a corner cost a scan of every cell and point. Answers against
// brute force (buffer, visit, filters), at radii exactly at a point's distance (an integer
// lattice: d2 == r * r), on the dense, ranked and hashed layouts, 1e9 from the origin; and the
// cost of far queries against a scan. On the hashed layout (clustered, sparse and heavy-tailed
// data, its cells in Z order) the walk descends the Z order's blocks, skipping those beyond the
// ball: there a far ball cost a test of every occupied cell and a scan of the points in its box.
#include "grid_internal.h" // the grid's view: whether the codes are coarser than the cells
#include "nb_oracle.h"
#include "nb_test.h"
#include "nbt_grid.h"

#include <nearby/grid.h>

#include <math.h>
#include <string.h>
#include <time.h>

enum { SHAPES = 4 };

// n points of a shape: uniform in [0, 100)^dim (dense), a few clusters (ranked or hashed), an
// integer lattice (ties at integer radii), uniform 1e9 from the origin.
static nboSet make(int shape, int32_t n, int dim)
{
    nboSet s = nbo_set_new(n, dim);
    double c[3] = {0, 0, 0};
    for (int32_t i = 0; i < n; i++) {
        if (shape == 1 && i % 300 == 0)
            for (int a = 0; a < dim; a++) c[a] = nbt_range(0.0, 100.0);
        for (int a = 0; a < dim; a++) {
            double x = nbt_range(0.0, 100.0);
            if (shape == 1) x = c[a] + 0.5 * nbt_gauss();
            if (shape == 2) x = (double)nbt_int(dim == 2 ? 60 : 16);
            if (shape == 3) x += 1e9;
            s.p[(size_t)i * (size_t)dim + (size_t)a] = x;
        }
    }
    return s;
}

// A query `dist` box widths (the points' box's longest side) from the box's centre: in a random
// direction (axis < 0), or along axis `axis` with the other coordinates inside the box.
static void far_query(const nboSet *s, int axis, double dist, double *q)
{
    const int dim = s->dim;
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0}, width = 0.0;
    for (int a = 0; a < dim; a++) {
        lo[a] = (double)INFINITY;
        hi[a] = -(double)INFINITY;
        for (int32_t i = 0; i < s->n; i++) {
            const double x = nbo_pt(s, i)[a];
            lo[a] = x < lo[a] ? x : lo[a];
            hi[a] = x > hi[a] ? x : hi[a];
        }
        width = hi[a] - lo[a] > width ? hi[a] - lo[a] : width;
    }
    double u[3] = {0, 0, 0}, len = 0.0;
    for (int a = 0; a < dim; a++) {
        u[a] = axis < 0 ? nbt_gauss() : a == axis ? (nbt_int(2) ? 1.0 : -1.0) : 0.0;
        len += u[a] * u[a];
    }
    len = sqrt(len);
    for (int a = 0; a < dim; a++) {
        const double mid = 0.5 * (lo[a] + hi[a]);
        q[a] = axis >= 0 && a != axis ? nbt_range(lo[a], hi[a]) : mid + dist * width * u[a] / len;
    }
}

// The distance from q to its nearest point, by brute force.
static double nearest(const nboSet *s, const double *q)
{
    double best = (double)INFINITY;
    for (int32_t i = 0; i < s->n; i++) {
        const double d = nbo_d2(q, nbo_pt(s, i), s->dim);
        best = d < best ? d : best;
    }
    return sqrt(best);
}

// The distance from q to its nearest point, by the grid's kNN (exact, and tested against brute
// force elsewhere): the cost tests' radii, quicker than a scan for each of their queries.
static double nearest_grid(const nbGrid *g, const double *q)
{
    nbNeighbor nb = {0, 0.0};
    int32_t found = 0;
    if (nb_grid_knn(g, q, NB_FILTER_ALL, (double)INFINITY, &nb, 1, &found) != NB_OK || found != 1)
        return (double)NAN;
    return sqrt(nb.dist2);
}

typedef struct {
    int32_t *ids;
    int32_t n;
    int32_t stop; // stop after this many (0: never)
} Hits;

static bool on_hit(int32_t id, void *user)
{
    Hits *h = (Hits *)user;
    h->ids[h->n++] = id;
    return h->n != h->stop;
}

// Whether each of ids[0, n) is one of the sorted want[0, want_n).
static bool all_in(const int32_t *ids, int32_t n, const int32_t *want, int32_t want_n)
{
    for (int32_t i = 0; i < n; i++) {
        int32_t lo = 0, hi = want_n;
        while (lo < hi) {
            const int32_t mid = lo + (hi - lo) / 2;
            if (want[mid] < ids[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == want_n || want[lo] != ids[i]) return false;
    }
    return true;
}

// The grid's answers at (q, r), buffered and visited, with and without a filter, against brute
// force.
static int check(const nbGrid *g, const nboSet *s, const double *q, double r)
{
    static const nbFilter filters[] = {{NBO_ALL_BITS, NBO_ALL_BITS}, {0x5u, 0x3u}};
    int32_t *out = (int32_t *)nbo_xalloc((size_t)s->n * sizeof(int32_t));
    Hits h = {(int32_t *)nbo_xalloc((size_t)s->n * sizeof(int32_t)), 0, 0};
    for (int fi = 0; fi < (s->cat != NULL ? 2 : 1); fi++) {
        const nbFilter f = filters[fi];
        int32_t want_n = 0, got = -1;
        int32_t *want = nbo_radius_filtered(s, q, r, f, &want_n);
        NB_CHECK_OK(nb_grid_query_radius(g, q, r, f, out, s->n, &got));
        nbo_sort_indices(out, got);
        h.n = h.stop = 0;
        NB_CHECK_OK(nb_grid_visit_radius(g, q, r, f, on_hit, &h));
        nbo_sort_indices(h.ids, h.n);
        if (!nbo_same_indices(out, got, want, want_n) ||
            !nbo_same_indices(h.ids, h.n, want, want_n)) {
            fprintf(stderr, "  q (%g, %g, %g) r %.17g: %d and %d hits, want %d\n", q[0], q[1],
                    s->dim == 3 ? q[2] : 0.0, r, got, h.n, want_n);
            return 1;
        }
        // A buffer of half the hits: the full count, and the first half of them; a count; a
        // visitor that stops at the first.
        const int32_t cap = want_n / 2;
        NB_CHECK_STATUS(nb_grid_query_radius(g, q, r, f, out, cap, &got),
                        want_n > cap ? NB_ERR_BUFFER_TOO_SMALL : NB_OK);
        NB_CHECK(got == want_n && all_in(out, cap, want, want_n));
        NB_CHECK_STATUS(nb_grid_query_radius(g, q, r, f, NULL, 0, &got),
                        want_n > 0 ? NB_ERR_BUFFER_TOO_SMALL : NB_OK);
        NB_CHECK(got == want_n);
        h.n = 0;
        h.stop = 1;
        NB_CHECK_OK(nb_grid_visit_radius(g, q, r, f, on_hit, &h));
        NB_CHECK(h.n == (want_n > 0) && all_in(h.ids, h.n, want, want_n));
        free(want);
    }
    free(out);
    free(h.ids);
    return 0;
}

// Random filter bits: a category and a mask of one bit in four each.
static void add_filters(nboSet *s)
{
    nbo_set_add_filters(s);
    for (int32_t i = 0; i < s->n; i++) {
        s->cat[i] = 1u << nbt_int(4);
        s->mask[i] = 1u << nbt_int(4);
    }
}

static int test_wide_balls_against_brute_force(void)
{
    for (int dim = 2; dim <= 3; dim++)
        for (int shape = 0; shape < SHAPES; shape++)
            for (int filtered = 0; filtered <= 1; filtered++) {
                nboSet s = make(shape, 3000, dim);
                if (filtered) add_filters(&s);
                nbGrid *g = nbt_grid_build(&s, dim == 2 ? 1.0 : 2.0);
                NB_CHECK(g != NULL);
                for (int t = 0; t < 60; t++) {
                    double q[3] = {0, 0, 0};
                    const int axis = t % 4 == 3 ? -1 : t % 4 < dim ? t % 4 : -1;
                    const double dist = t < 20 ? 10.0 : t < 40 ? 1e3 : 1e6;
                    far_query(&s, axis, dist, q);
                    if (shape == 2)
                        for (int a = 0; a < dim; a++) q[a] = round(q[a]); // integer d2
                    const double d = nearest(&s, q);
                    // Just reaching the nearest point (exactly, on the lattice), and a few cells
                    // in.
                    const double in = shape == 2 ? 3.0 : 3.0 * nbt_unit();
                    if (check(g, &s, q, shape == 2 ? round(d) : d)) return 1;
                    if (check(g, &s, q, (shape == 2 ? round(d) : d) + in)) return 1;
                }
                for (int t = 0; t < 30; t++) { // from a point of the data, radii many cells wide
                    const double *p = nbo_pt(&s, nbt_int(s.n));
                    const double r = shape == 2 ? (double)(1 + nbt_int(12)) : nbt_range(3.0, 40.0);
                    if (check(g, &s, p, r)) return 1;
                }
                nb_grid_destroy(g);
                nbo_set_free(&s);
            }
    return 0;
}

// Whether 400 balls from 1000 boxes away in random directions, reaching a cell past the nearest
// point, cost less than `scans` scans of every point, on the grid of set s built for `cell`. The
// least of three rounds, so that a busy machine does not fail it.
static int far_balls_cost_little(const nboSet *s, double cell, int scans, bool hashed)
{
    nbGrid *g = nbt_grid_build(s, cell);
    NB_CHECK(g != NULL);
    nbGridInfo gi;
    NB_CHECK_OK(nb_grid_info(g, &gi));
    NB_CHECK(!hashed || (gi.hashed && !gi.ranked)); // the layout the caller means to time
    double q[400][3], r[400];
    for (int t = 0; t < 400; t++) {
        far_query(s, -1, 1e3, q[t]);
        r[t] = nearest_grid(g, q[t]) + cell;
    }
    int32_t *out = (int32_t *)nbo_xalloc((size_t)s->n * sizeof(int32_t));
    double best_far = (double)INFINITY, best_scan = (double)INFINITY;
    for (int round = 0; round < 3; round++) {
        double t0 = nbt_seconds();
        for (int t = 0; t < 400; t++) {
            int32_t found = 0;
            NB_CHECK_OK(nb_grid_query_radius(g, q[t], r[t], NB_FILTER_ALL, out, s->n, &found));
            NB_CHECK(found >= 1);
        }
        const double far = nbt_seconds() - t0;
        t0 = nbt_seconds();
        int32_t sink = 0;
        for (int t = 0; t < scans; t++) // a scan: every point's distance against a ball
            for (int32_t i = 0; i < s->n; i++)
                sink += nbo_d2(q[t % 400], nbo_pt(s, i), s->dim) <= r[t % 400] * r[t % 400];
        const double scan = nbt_seconds() - t0;
        NB_CHECK(sink >= scans);
        best_far = far < best_far ? far : best_far;
        best_scan = scan < best_scan ? scan : best_scan;
        if (far < scan) break; // one round that passes is enough
    }
    if (!(best_far < best_scan)) {
        fprintf(stderr, "  dim %d: 400 far balls %.2f ms, %d scans %.2f ms\n", s->dim,
                best_far * 1e3, scans, best_scan * 1e3);
        return 1;
    }
    free(out);
    nb_grid_destroy(g);
    return 0;
}

// Far balls on dense uniform points: before the walk clipped its box to the ball, each took
// about a scan (0.3 ms a query over 160k 2D points, 100x less now).
static int test_far_balls_cost_little(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        nboSet s = make(0, 60000, dim);
        const int bad = far_balls_cost_little(&s, dim == 2 ? 0.3 : 2.0, 40, false);
        nbo_set_free(&s);
        if (bad) return 1;
    }
    return 0;
}

enum { HASHED_SHAPES = 7 };

// n points of a shape the grid keeps in its hashed layout (over 64 box cells a point at the
// cell it is built for, *r): clusters in 3D (0) and in 2D (1), a sparse integer lattice in 3D
// (2: ties at integer radii), clusters 1e9 from the origin (3), a heavy tail about one centre
// in 3D (4) and in 2D (5), its box wider than the codes reach (code_shift > 0, cells ordered
// by their low codes), and a clump with outliers 1e10 away (6: wider than the low codes reach).
static nboSet make_hashed(int shape, int32_t n, double *r)
{
    const int dim = shape == 1 || shape == 5 ? 2 : 3;
    nboSet s = nbo_set_new(n, dim);
    *r = shape == 2 ? 1.0 : shape >= 4 ? 1e-4 : 0.5;
    double c[3] = {0, 0, 0};
    for (int32_t i = 0; i < n; i++) {
        if (i % 300 == 0)
            for (int a = 0; a < dim; a++) c[a] = nbt_range(0.0, shape == 1 ? 2000.0 : 200.0);
        double u[3] = {0, 0, 0}, len = 0.0;
        for (int a = 0; a < dim; a++) {
            u[a] = nbt_gauss();
            len += u[a] * u[a];
        }
        const double tail = exp((shape == 5 ? 4.0 : 3.0) * nbt_gauss()) / sqrt(len);
        for (int a = 0; a < dim; a++) {
            double x = c[a] + 0.5 * nbt_gauss();
            if (shape == 2) x = (double)nbt_int(300);
            if (shape == 3) x += 1e9;
            if (shape == 4 || shape == 5) x = tail * u[a];
            if (shape == 6) x = i % 100 == 0 ? nbt_range(-1e10, 1e10) : nbt_gauss();
            s.p[(size_t)i * (size_t)dim + (size_t)a] = x;
        }
    }
    return s;
}

// Far query t of `rounds`: beyond each face in turn and in a random direction every fourth, from
// 10, then 1e3, then 1e6 box widths away (a third of the rounds each); on a lattice rounded to
// integers (integer d2).
static void far_round(const nboSet *s, int t, int rounds, bool lattice, double *q)
{
    const int axis = t % 4 == 3 ? -1 : t % 4 < s->dim ? t % 4 : -1;
    far_query(s, axis, 3 * t < rounds ? 10.0 : 3 * t < 2 * rounds ? 1e3 : 1e6, q);
    if (lattice)
        for (int a = 0; a < s->dim; a++) q[a] = round(q[a]);
}

// Far balls (from 10 to 1e6 box widths away, in random directions and beyond each face,
// reaching the nearest point and a few cells of edge r past it) and wide balls from the points
// on the grid of s, against brute force (check). On a lattice (integer coordinates) the queries
// and radii are integers: ties at exactly r.
static int far_and_wide(const nbGrid *g, const nboSet *s, bool lattice, double r)
{
    for (int t = 0; t < 40; t++) {
        double q[3] = {0, 0, 0};
        far_round(s, t, 40, lattice, q);
        const double d = nearest(s, q);
        const double in = lattice ? 3.0 : 3.0 * r * nbt_unit();
        if (check(g, s, q, lattice ? round(d) : d)) return 1;
        if (check(g, s, q, (lattice ? round(d) : d) + in)) return 1;
    }
    for (int t = 0; t < 30; t++) { // from a point of the data, radii many cells wide
        const double *p = nbo_pt(s, nbt_int(s->n));
        const double w = lattice ? (double)(1 + nbt_int(12)) : r * nbt_range(2.0, 40.0);
        if (check(g, s, p, t < 25 ? w : w * 1e4)) return 1;
    }
    return 0;
}

// Far balls (from 10 to 1e6 box widths away, reaching the nearest point and a few cells past
// it) and wide balls from the points, on the hashed layout, against brute force: buffers full
// and short, counts, visitors, with and without filters.
static int test_hashed_balls_against_brute_force(void)
{
    for (int shape = 0; shape < HASHED_SHAPES; shape++)
        for (int filtered = 0; filtered <= 1; filtered++) {
            double r = 0.0;
            nboSet s = make_hashed(shape, 3000, &r);
            if (filtered) add_filters(&s);
            nbGrid *g = nbt_grid_build(&s, r);
            NB_CHECK(g != NULL);
            nbGridInfo gi;
            NB_CHECK_OK(nb_grid_info(g, &gi));
            NB_CHECK(gi.hashed && !gi.ranked); // what this test is for
            NB_CHECK((g->view.code_shift > 0) == (shape >= 4));
            NB_CHECK((g->view.cell_low == NULL) == (shape != 4 && shape != 5));
            if (far_and_wide(g, &s, shape == 2, r)) return 1;
            nb_grid_destroy(g);
            nbo_set_free(&s);
        }
    return 0;
}

// Far balls on 100k clustered 3D points (the hashed layout), against 100 scans: before the
// descent, each tested every occupied cell and every point in its box (more than a scan: 0.5 ms
// a query on the corpus's powerlaw3d at 25k points, 100x less now). Its queries run at a lower
// rate of instructions than a scan, so the bound leaves room: a query costs about a twentieth
// of a scan here.
static int test_hashed_far_balls_cost_little(void)
{
    double cell = 0.0;
    nboSet s = make_hashed(0, 100000, &cell);
    const int bad = far_balls_cost_little(&s, cell, 100, true);
    nbo_set_free(&s);
    return bad;
}

enum { RANKED_SHAPES = 3 };

// n 2D points the grid keeps in its ranked layout at cell 1 (between 4 and 64 box cells a
// point): clusters in a box of w cells a side (0), the same 1e9 from the origin (1), a sparse
// integer lattice (2: ties at integer radii).
static nboSet make_ranked(int shape, int32_t n, double w)
{
    nboSet s = nbo_set_new(n, 2);
    double c[2] = {0, 0};
    for (int32_t i = 0; i < n; i++) {
        if (i % 300 == 0)
            for (int a = 0; a < 2; a++) c[a] = nbt_range(5.0, w - 5.0);
        for (int a = 0; a < 2; a++) {
            double x = c[a] + 0.7 * nbt_gauss();
            if (shape == 1) x += 1e9;
            if (shape == 2) x = (double)nbt_int((int)w);
            s.p[(size_t)i * 2 + (size_t)a] = x;
        }
    }
    return s;
}

// Far balls (10 to 1e6 box widths away, in random directions and beyond each face) and wide
// balls from the points on the ranked layout, whose walk skips blocks of rows on their
// occupied spans, against brute force: buffers full and short, counts, visitors, filters.
static int test_ranked_balls_against_brute_force(void)
{
    for (int shape = 0; shape < RANKED_SHAPES; shape++)
        for (int filtered = 0; filtered <= 1; filtered++) {
            nboSet s = make_ranked(shape, 3000, shape == 2 ? 300.0 : 400.0);
            if (filtered) add_filters(&s);
            nbGrid *g = nbt_grid_build(&s, 1.0);
            NB_CHECK(g != NULL);
            nbGridInfo gi;
            NB_CHECK_OK(nb_grid_info(g, &gi));
            NB_CHECK(gi.ranked && g->view.row_span != NULL); // what this test is for
            if (far_and_wide(g, &s, shape == 2, 1.0)) return 1;
            nb_grid_destroy(g);
            nbo_set_free(&s);
        }
    return 0;
}

// Far balls on 20k clustered 2D points (the ranked layout, a box of 1000 rows), against 80
// scans: each ball visited every row of its box the ball reaches (about 1000, most of them
// empty: 54k instructions a query on the corpus's blobs2d; 400 balls took the time of 140
// scans here); skipping blocks of rows on their occupied spans makes it about 4k, 20-40 scans
// for the 400 (the more where the scan's loop vectorises better: clang's build).
static int test_ranked_far_balls_cost_little(void)
{
    nboSet s = make_ranked(0, 20000, 1000.0);
    const int bad = far_balls_cost_little(&s, 1.0, 80, false);
    nbo_set_free(&s);
    return bad;
}

// ---- balls through the kNN index's tree ----

// The ball (q, r) on g through the index's tree (nbi_ball_index_use = 1: whenever the index can
// answer) and through the cells (-1): the same hits in the same order, buffered (full, short,
// none) and visited (all, stopped at the first); and against brute force (check, through the
// tree).
static int same_as_cells(const nbGrid *g, const nboSet *s, const double *q, double r)
{
    static const nbFilter filters[] = {{NBO_ALL_BITS, NBO_ALL_BITS}, {0x5u, 0x3u}};
    const size_t bytes = (size_t)s->n * sizeof(int32_t);
    int32_t *a = (int32_t *)nbo_xalloc(bytes), *b = (int32_t *)nbo_xalloc(bytes);
    Hits ha = {(int32_t *)nbo_xalloc(bytes), 0, 0}, hb = {(int32_t *)nbo_xalloc(bytes), 0, 0};
    int bad = 0;
    for (int fi = 0; fi < (s->cat != NULL ? 2 : 1) && !bad; fi++) {
        const nbFilter f = filters[fi];
        int32_t na = -1, nb = -2;
        nbi_ball_index_use = -1;
        NB_CHECK_OK(nb_grid_query_radius(g, q, r, f, b, s->n, &nb));
        NB_CHECK_OK(nb_grid_visit_radius(g, q, r, f, on_hit, &hb));
        nbi_ball_index_use = 1;
        NB_CHECK_OK(nb_grid_query_radius(g, q, r, f, a, s->n, &na));
        NB_CHECK_OK(nb_grid_visit_radius(g, q, r, f, on_hit, &ha));
        bad |= na != nb || memcmp(a, b, (size_t)na * sizeof *a) != 0;
        bad |= ha.n != hb.n || memcmp(ha.ids, hb.ids, (size_t)ha.n * sizeof *ha.ids) != 0;
        const int32_t cap = nb / 2; // a short buffer: the same first half, the same count
        for (int use = -1; use <= 1 && !bad; use += 2) {
            nbi_ball_index_use = use;
            int32_t got = -1;
            const nbStatus st = nb_grid_query_radius(g, q, r, f, use > 0 ? a : b, cap, &got);
            bad |= st != (nb > cap ? NB_ERR_BUFFER_TOO_SMALL : NB_OK) || got != nb;
        }
        bad |= memcmp(a, b, (size_t)cap * sizeof *a) != 0;
        for (int use = -1; use <= 1 && !bad; use += 2) { // a visitor that stops at the second
            nbi_ball_index_use = use;
            Hits *h = use > 0 ? &ha : &hb;
            h->n = 0;
            h->stop = 2;
            NB_CHECK_OK(nb_grid_visit_radius(g, q, r, f, on_hit, h));
        }
        bad |= ha.n != hb.n || memcmp(ha.ids, hb.ids, (size_t)ha.n * sizeof *ha.ids) != 0;
        if (bad)
            fprintf(stderr, "  q (%g, %g, %g) r %.17g: the tree's %d hits, the cells' %d\n", q[0],
                    q[1], s->dim == 3 ? q[2] : 0.0, r, na, nb);
        ha.n = hb.n = ha.stop = hb.stop = 0;
    }
    nbi_ball_index_use = 1;
    if (!bad) bad = check(g, s, q, r);
    nbi_ball_index_use = 0;
    free(a);
    free(b);
    free(ha.ids);
    free(hb.ids);
    return bad;
}

// The squared distance of q's k-th nearest point (1-based), by brute force.
static double kth_d2(const nboSet *s, const double *q, int32_t k)
{
    double *d = (double *)nbo_xalloc((size_t)s->n * sizeof(double));
    for (int32_t i = 0; i < s->n; i++) d[i] = nbo_d2(q, nbo_pt(s, i), s->dim);
    for (int32_t i = 0; i < k; i++) // (a partial selection: k is small)
        for (int32_t j = i + 1; j < s->n; j++)
            if (d[j] < d[i]) {
                const double t = d[i];
                d[i] = d[j];
                d[j] = t;
            }
    const double out = d[k - 1];
    free(d);
    return out;
}

// Far balls (10 to 1e6 box widths away, in random directions and beyond each face) and balls
// from the points on g, through the tree and the cells (same_as_cells). Their radii: the k-th
// nearest point's distance, a few ulps either side, so that the rounded d2 of points in the cap
// ties fl(r * r) or misses it by an ulp (a box the walk reports whole lies at its corner's d2,
// computed as a point's is); on a lattice, integers (ties at exactly r, and whole boxes of the
// lattice within the ball with a corner on its surface); and a few cells past the nearest.
static int tree_balls(const nbGrid *g, const nboSet *s, bool lattice, double cell)
{
    for (int t = 0; t < 24; t++) {
        double q[3] = {0, 0, 0};
        far_round(s, t, 24, lattice, q);
        double r = sqrt(kth_d2(s, q, 1 + nbt_int(40)));
        if (lattice)
            r = round(r) + (double)nbt_int(3);
        else
            for (int u = nbt_int(5) - 2; u != 0; u += u < 0 ? 1 : -1)
                r = nextafter(r, u < 0 ? 0.0 : (double)INFINITY);
        if (same_as_cells(g, s, q, r)) return 1;
        if (same_as_cells(g, s, q, nearest(s, q) + 3.0 * cell * nbt_unit())) return 1;
    }
    for (int t = 0; t < 16; t++) { // from the points: many boxes wholly within the ball
        const double *p = nbo_pt(s, nbt_int(s->n));
        const double r = lattice ? (double)(1 + nbt_int(12)) : cell * nbt_range(0.5, 30.0);
        if (same_as_cells(g, s, p, r)) return 1;
    }
    return 0;
}

// Balls through the kNN index's tree on every layout (dense, ranked, hashed), with and without
// filters: the same hits in the same order as the cells' walk, and brute force's.
static int test_tree_balls_match_the_cells(void)
{
    for (int filtered = 0; filtered <= 1; filtered++) {
        for (int dim = 2; dim <= 3; dim++)
            for (int shape = 0; shape < SHAPES; shape++) { // dense
                nboSet s = make(shape, 1500, dim);
                if (filtered) add_filters(&s);
                const double cell = dim == 2 ? 1.0 : 2.0;
                nbGrid *g = nbt_grid_build(&s, cell);
                NB_CHECK(g != NULL);
                if (tree_balls(g, &s, shape == 2, cell)) return 1;
                nb_grid_destroy(g);
                nbo_set_free(&s);
            }
        for (int shape = 0; shape < RANKED_SHAPES; shape++) {
            nboSet s = make_ranked(shape, 1500, shape == 2 ? 300.0 : 400.0);
            if (filtered) add_filters(&s);
            nbGrid *g = nbt_grid_build(&s, 1.0);
            NB_CHECK(g != NULL);
            nbGridInfo gi;
            NB_CHECK_OK(nb_grid_info(g, &gi));
            NB_CHECK(gi.ranked);
            if (tree_balls(g, &s, shape == 2, 1.0)) return 1;
            nb_grid_destroy(g);
            nbo_set_free(&s);
        }
        for (int shape = 0; shape < HASHED_SHAPES; shape++) {
            double r = 0.0;
            nboSet s = make_hashed(shape, 1500, &r);
            if (filtered) add_filters(&s);
            nbGrid *g = nbt_grid_build(&s, r);
            NB_CHECK(g != NULL);
            nbGridInfo gi;
            NB_CHECK_OK(nb_grid_info(g, &gi));
            NB_CHECK(gi.hashed && !gi.ranked);
            if (tree_balls(g, &s, shape == 2, r)) return 1;
            nb_grid_destroy(g);
            nbo_set_free(&s);
        }
    }
    return 0;
}

// Which radius queries the rule sends through the index: far balls on clustered data, once
// their savings have paid for its build (the index is then ready, and answers them); never balls
// among the data, nor far balls on evenly filled 2D cells (the rows clipped to the ball cost
// less there).
static int test_far_balls_take_the_index(void)
{
    for (int shape = 0; shape < 2; shape++) {
        // clusters in 3D (hashed), or uniform 2D points (dense, 2.5 a cell): the index, or not
        nboSet s = shape == 0 ? make(1, 4000, 3) : make(0, 4000, 2);
        nbGrid *g = nbt_grid_build(&s, shape == 0 ? 0.5 : 2.5);
        NB_CHECK(g != NULL);
        nbiKnnLazy *z = nbi_grid_knn_lazy(g);
        int32_t *out = (int32_t *)nbo_xalloc((size_t)s.n * sizeof(int32_t));
        for (int t = 0; t < 200; t++) { // balls among the data: no debt
            int32_t found = 0;
            NB_CHECK_OK(
                nb_grid_query_radius(g, nbo_pt(&s, t), 2.0, NB_FILTER_ALL, out, s.n, &found));
        }
        NB_CHECK(nbi_knn_index_ready(z) == NULL);
        // Far balls (16 of them, over and over): at NBI_BALL_FAR_SAVING each, the build's cost
        // is paid after NBI_KNN_BUILD_COST n / NBI_BALL_FAR_SAVING of them.
        double q[16][3], r[16];
        for (int t = 0; t < 16; t++) {
            far_query(&s, t % 4 == 3 ? -1 : t % 4 % s.dim, 1e3, q[t]);
            r[t] = nearest(&s, q[t]) + 1.0;
        }
        const int32_t pay = (int32_t)((int64_t)NBI_KNN_BUILD_COST * s.n / NBI_BALL_FAR_SAVING);
        for (int32_t t = 0; t <= pay + 1; t++) {
            int32_t found = 0;
            NB_CHECK_OK(
                nb_grid_query_radius(g, q[t % 16], r[t % 16], NB_FILTER_ALL, out, s.n, &found));
            NB_CHECK(found >= 1);
            if (t == pay / 2) NB_CHECK(nbi_knn_index_ready(z) == NULL);
        }
        NB_CHECK((nbi_knn_index_ready(z) != NULL) == (shape == 0));
        free(out);
        nb_grid_destroy(g);
        nbo_set_free(&s);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"wide_balls_against_brute_force", test_wide_balls_against_brute_force},
        {"far_balls_cost_little", test_far_balls_cost_little},
        {"hashed_balls_against_brute_force", test_hashed_balls_against_brute_force},
        {"hashed_far_balls_cost_little", test_hashed_far_balls_cost_little},
        {"ranked_balls_against_brute_force", test_ranked_balls_against_brute_force},
        {"ranked_far_balls_cost_little", test_ranked_far_balls_cost_little},
        {"tree_balls_match_the_cells", test_tree_balls_match_the_cells},
        {"far_balls_take_the_index", test_far_balls_take_the_index},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
