// SPDX-License-Identifier: MIT
// The k nearest of a query far outside the points' box: a query set that is not the data set
// (a map's points asked about from anywhere), in the Euclidean norm and the others. The ring walk
// must stop once the k-th best is nearer than every unvisited cell, counting the query's distance
// to the box on every axis, not one: with one axis's gap, a query 1000 boxes away walked every
// ring of the box and then scanned every point (0.7 ms a query over 100k points, 300x a query
// beside the data). Its answers against brute force at distances up to 1e9 boxes, in directions
// along the axes and between them, on dense and hashed layouts; and its cost against a scan,
// also for queries far outside along one axis only (inside the box on the others).
#include "knn_index.h" // nbi_knn_index_use: the ring walk for every k
#include "nb_oracle.h"
#include "nb_test.h"

#include <nearby/grid.h>

#include <math.h>
#include <string.h>
#include <time.h>

static double raw_term(double d, double p)
{
    return p == 1.0 || isinf(p) ? d : p == 2.0 ? d * d : pow(d, p);
}

// Brute force in the norm p (the raw distance a loop over the axes computes), the k nearest.
static int32_t brute(const nboSet *s, const double *q, double p, nbNeighbor *out, int32_t k)
{
    nbNeighbor *all = (nbNeighbor *)nbo_xalloc((size_t)s->n * sizeof *all);
    for (int32_t i = 0; i < s->n; i++) {
        double r = 0.0;
        for (int a = 0; a < s->dim; a++) {
            const double t = raw_term(fabs(q[a] - nbo_pt(s, i)[a]), p);
            r = isinf(p) ? (t > r ? t : r) : r + t;
        }
        all[i] = (nbNeighbor){i, r};
    }
    const int32_t got = nbo_select_neighbors(all, s->n, k);
    for (int32_t j = 0; j < got; j++) out[j] = all[j];
    free(all);
    return got;
}

// n points in [0, 1)^dim: uniform (dense cells) or in a few tight clusters (hashed cells).
static nboSet make(int32_t n, int dim, bool clustered)
{
    nboSet s = nbo_set_new(n, dim);
    double c[3] = {0.5, 0.5, 0.5};
    for (int32_t i = 0; i < n; i++) {
        if (clustered && i % 500 == 0)
            for (int a = 0; a < dim; a++) c[a] = nbt_range(0.0, 1.0);
        for (int a = 0; a < dim; a++)
            s.p[(size_t)i * (size_t)dim + (size_t)a] =
                clustered ? c[a] + 1e-4 * nbt_gauss() : nbt_range(0.0, 1.0);
    }
    return s;
}

static nbGrid *build(const nboSet *s, double cell)
{
    nbGridDesc desc = {0};
    desc.dim = s->dim;
    desc.cell_size = cell;
    nbGrid *g = NULL;
    if (nb_grid_create(&desc, &g) != NB_OK) return NULL;
    nbPoints pts = nbo_points(s);
    if (nb_grid_build(g, &pts, cell) != NB_OK) {
        nb_grid_destroy(g);
        return NULL;
    }
    return g;
}

// A query at `dist` from the box's centre: along an axis (t % 4 == 0), or in a random direction
// with every component at least a third of the largest (outside the box on every axis).
static void far_query(int dim, int t, double dist, double *q)
{
    double u[3] = {0, 0, 0}, len = 0.0;
    for (int a = 0; a < dim; a++) {
        if (t % 4 == 0) {
            u[a] = a == (t / 4) % dim ? (t % 8 == 0 ? 1.0 : -1.0) : 0.0;
        } else {
            u[a] = nbt_range(1.0 / 3.0, 1.0) * (nbt_int(2) == 0 ? 1.0 : -1.0);
        }
        len += u[a] * u[a];
    }
    for (int a = 0; a < dim; a++) q[a] = 0.5 + dist * u[a] / sqrt(len);
    if (t % 4 == 0) // off the axis a little, so the nearest are not all ties
        for (int a = 0; a < dim; a++) q[a] += nbt_range(-0.3, 0.3);
}

static int test_far_against_brute_force(void)
{
    static const double ps[] = {2.0, 1.0, 3.5, (double)INFINITY};
    static const int32_t ks[] = {1, 8, 40};
    static const double dists[] = {2.0, 1e3, 1e6, 1e9};
    for (int dim = 2; dim <= 3; dim++)
        for (int clustered = 0; clustered <= 1; clustered++) {
            nboSet s = make(3000, dim, clustered != 0);
            nbGrid *g = build(&s, clustered ? 2e-4 : dim == 2 ? 0.02 : 0.08);
            NB_CHECK(g != NULL);
            nbGridInfo info;
            NB_CHECK_OK(nb_grid_info(g, &info));
            NB_CHECK(info.hashed == (clustered != 0));
            nbNeighbor got[40], want[40];
            for (int t = 0; t < 48; t++) {
                double q[3] = {0, 0, 0};
                far_query(dim, t, dists[t % 4], q);
                const double p = ps[(t / 4) % 4];
                const int32_t k = ks[t % 3];
                int32_t found = -1;
                NB_CHECK_OK(
                    nb_grid_knn_norm(g, q, p, NB_FILTER_ALL, (double)INFINITY, got, k, &found));
                const int32_t n = brute(&s, q, p, want, k);
                if (!nbo_same_neighbors(got, found, want, n)) {
                    fprintf(stderr, "  dim %d clustered %d query %d (dist %g) p %g k %d\n", dim,
                            clustered, t, dists[t % 4], p, k);
                    return 1;
                }
            }
            nb_grid_destroy(g);
            nbo_set_free(&s);
        }
    return 0;
}

// Far queries through the index onto points that stand 1 to 5 times at one place (copies whose
// indices are scattered): at k = 1 a leaf is scanned for its least distance first and then the
// points at it are offered, so every copy at the nearest place must be, and the lowest index
// comes first; at k = 3 the copies fill the list in index order. 2D and 3D, from 50 and 1000
// box widths, along an axis and in any direction.
static int test_far_ties_take_the_lowest_index(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        const int32_t n = 6000, places = n / 3;
        nboSet s = nbo_set_new(n, dim);
        double *at = (double *)nbo_xalloc((size_t)places * (size_t)dim * sizeof *at);
        for (int32_t i = 0; i < places * dim; i++) at[i] = nbt_range(0.0, 1.0);
        for (int32_t i = 0; i < n; i++)
            memcpy(s.p + (size_t)i * (size_t)dim, at + (size_t)nbt_int(places) * (size_t)dim,
                   (size_t)dim * sizeof *at);
        nbGrid *g = build(&s, dim == 2 ? 0.03 : 0.1);
        NB_CHECK(g != NULL);
        nbi_knn_index_use = 1;
        nbNeighbor got[3], want[3];
        for (int t = 0; t < 96; t++) {
            double q[3] = {0, 0, 0};
            far_query(dim, t, t % 2 ? 1e3 : 50.0, q);
            const int32_t k = t % 3 == 0 ? 3 : 1;
            int32_t found = -1;
            NB_CHECK_OK(nb_grid_knn(g, q, NB_FILTER_ALL, (double)INFINITY, got, k, &found));
            const int32_t m = brute(&s, q, 2.0, want, k);
            if (!nbo_same_neighbors(got, found, want, m)) {
                fprintf(stderr, "  dim %d query %d k %d: index %d, want %d\n", dim, t, k,
                        found > 0 ? got[0].index : -1, want[0].index);
                return 1;
            }
        }
        nbi_knn_index_use = 0;
        nb_grid_destroy(g);
        free(at);
        nbo_set_free(&s);
    }
    return 0;
}

// The time of `scans` scans of every point (each point's distance, as the walk computes it)
// from the first points of s.
static double scan_seconds(const nboSet *s, int scans)
{
    const double t0 = nbt_seconds();
    double sink = 0.0;
    for (int t = 0; t < scans; t++) {
        const double *q = nbo_pt(s, t);
        double best = (double)INFINITY;
        for (int32_t i = 0; i < s->n; i++) {
            const double d = nbo_d2(q, nbo_pt(s, i), s->dim);
            best = d > 0.0 && d < best ? d : best;
        }
        sink += best;
    }
    const double scan = nbt_seconds() - t0;
    return sink > 0.0 ? scan : (double)INFINITY; // (the sink keeps the loop)
}

// Whether the queries' best time `far` is not below the scans' best `scan` (said on stderr).
static bool over_bound(const char *queries, double far, const char *scans, double scan)
{
    if (far < scan) return false;
    fprintf(stderr, "  %s %.2f ms, %s %.2f ms\n", queries, far * 1e3, scans, scan * 1e3);
    return true;
}

// Queries outside the box on every axis cost a small part of a scan of every point (a few
// cells at the box's near corner or edge): in the Euclidean and p = 1 norms 400 of them take
// less time than 80 scans. In the Chebyshev norm the nearest from afar tie along a whole face of
// the box (a point's distance is its gap on the one axis that dominates), so the rings must
// cross the face, and p = 3.5 pays a pow a term: there 400 take less than 400 scans (under
// AddressSanitizer 0.1-0.4 of a scan each). Before the bound counted every axis's gap, each far
// query took more than a scan in every norm (the Euclidean 907 ms for 400 against 43 ms for 80
// scans; p = 3.5 over ten scans each). The least of three rounds, so that a busy machine does
// not fail it.
static int test_far_costs_little(void)
{
    static const double ps[] = {2.0, 1.0, 3.5, (double)INFINITY};
    for (int dim = 2; dim <= 3; dim++) {
        nboSet s = make(160000, dim, false);
        nbGrid *g = build(&s, dim == 2 ? 0.003 : 0.02);
        NB_CHECK(g != NULL);
        nbNeighbor out[8];
        for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
            const int scans = ps[pi] == 1.0 || ps[pi] == 2.0 ? 80 : 400;
            double best_far = (double)INFINITY, best_scan = (double)INFINITY;
            for (int round = 0; round < 3; round++) {
                double t0 = nbt_seconds();
                for (int t = 0; t < 400; t++) {
                    double q[3] = {0, 0, 0};
                    far_query(dim, 2 * t + 1, 1e3, q); // odd t: between the axes
                    int32_t found = 0;
                    NB_CHECK_OK(nb_grid_knn_norm(g, q, ps[pi], NB_FILTER_ALL, (double)INFINITY, out,
                                                 8, &found));
                    NB_CHECK(found == 8);
                }
                const double far = nbt_seconds() - t0;
                const double scan = scan_seconds(&s, scans);
                best_far = far < best_far ? far : best_far;
                best_scan = scan < best_scan ? scan : best_scan;
                if (far < scan) break; // one round that passes is enough
            }
            if (!(best_far < best_scan)) {
                fprintf(stderr, "  dim %d p %g: 400 far queries %.2f ms, %d scans %.2f ms\n", dim,
                        ps[pi], best_far * 1e3, scans, best_scan * 1e3);
                return 1;
            }
        }
        nb_grid_destroy(g);
        nbo_set_free(&s);
    }
    return 0;
}

// A query far outside the box along one axis and inside it on the others (a point above a
// terrain): answers against brute force, k = 1 (the ring walk in 3D) and k = 8 with the index
// off; and a cost bound, 400 of them under 80 scans of every point (measured about 0.07 of a
// scan each on these uniform points, cells of a point and a half; 20-40x a query inside the
// box, as the rings' stopping bound takes the query's gap to the box of cells, not to the
// points, and the ball reaches across the top rows of the box).
static int test_far_along_an_axis(void)
{
    nboSet s = make(160000, 3, false);
    nbGrid *g = build(&s, 0.02);
    NB_CHECK(g != NULL);
    nbNeighbor got[8], want[8];
    for (int use = 0; use >= -1; use--) {
        nbi_knn_index_use = use;
        for (int t = 0; t < 24; t++) {
            double q[3];
            for (int a = 0; a < 3; a++) q[a] = nbt_range(0.0, 1.0);
            q[t % 3] = t % 2 ? -1e3 : 1e3 + 0.5;
            const int32_t k = use == 0 ? 1 : 8;
            int32_t found = -1;
            NB_CHECK_OK(nb_grid_knn(g, q, NB_FILTER_ALL, (double)INFINITY, got, k, &found));
            const int32_t n = brute(&s, q, 2.0, want, k);
            if (!nbo_same_neighbors(got, found, want, n)) {
                fprintf(stderr, "  along an axis: query %d k %d: %d found\n", t, k, found);
                return 1;
            }
        }
    }
    double best_far = (double)INFINITY, best_scan = (double)INFINITY;
    for (int round = 0; round < 3; round++) {
        double t0 = nbt_seconds();
        for (int t = 0; t < 400; t++) {
            double q[3];
            for (int a = 0; a < 3; a++) q[a] = nbt_range(0.0, 1.0);
            q[t % 3] = t % 2 ? -1e3 : 1e3 + 0.5;
            int32_t found = 0;
            nbi_knn_index_use = t % 4 < 2 ? 0 : -1;
            NB_CHECK_OK(
                nb_grid_knn(g, q, NB_FILTER_ALL, (double)INFINITY, got, t % 4 < 2 ? 1 : 8, &found));
            NB_CHECK(found >= 1);
        }
        const double far = nbt_seconds() - t0;
        const double scan = scan_seconds(&s, 80);
        best_far = far < best_far ? far : best_far;
        best_scan = scan < best_scan ? scan : best_scan;
        if (far < scan) break; // one round that passes is enough
    }
    nbi_knn_index_use = 0;
    if (getenv("NB_FAR_VERBOSE") != NULL)
        fprintf(stderr, "  400 far along an axis %.2f ms, 80 scans %.2f ms\n", best_far * 1e3,
                best_scan * 1e3);
    if (over_bound("400 queries far along an axis", best_far, "80 scans", best_scan)) return 1;
    nb_grid_destroy(g);
    nbo_set_free(&s);
    return 0;
}

// Queries beyond a face of 2D points whose cells are evenly filled (where the grid keeps its ring
// walk for in-box queries and the index is not wanted): from 1e3 boxes along an axis, inside the
// box on the other, and from 1e3 boxes in any direction, k = 1 and 8, alternately. The rings
// from there cross the face before they can stop (55 rings a query, 93k instructions, on 25k
// points of 3 a cell: a third of a scan each), the index's descent does not (1-7k); the far
// queries' expected savings build the index once they reach its cost. 12000 queries take less
// time than 400 scans of every point (measured the time of 150-190 with the rule, 1300 without;
// under AddressSanitizer, which slows the index's build and walk more than the scan, about 530
// on a loaded machine: there the bound is 1000 scans). The first round that passes is enough.
static int test_far_on_even_cells(void)
{
    nboSet s = make(25000, 2, false);
    nbGrid *g = build(&s, sqrt(3.0 / 25000.0));
    NB_CHECK(g != NULL);
    nbNeighbor out[8];
    double best_far = (double)INFINITY, best_scan = (double)INFINITY;
    for (int round = 0; round < 3; round++) {
        if (round > 0) { // a new build: the rule starts over
            nbPoints pts = nbo_points(&s);
            NB_CHECK_OK(nb_grid_build(g, &pts, sqrt(3.0 / 25000.0)));
        }
        const double t0 = nbt_seconds();
        for (int t = 0; t < 12000; t++) {
            double q[3] = {0, 0, 0};
            if (t % 4 < 2) {
                for (int a = 0; a < 2; a++) q[a] = nbt_range(0.0, 1.0);
                q[t % 2] = nbt_int(2) ? 1e3 : -1e3;
            } else {
                far_query(2, 2 * t + 1, 1e3, q);
            }
            int32_t found = 0;
            const int32_t k = t % 8 < 4 ? 1 : 8;
            NB_CHECK_OK(nb_grid_knn(g, q, NB_FILTER_ALL, (double)INFINITY, out, k, &found));
            NB_CHECK(found == k);
        }
        const double far = nbt_seconds() - t0;
        const double scan = scan_seconds(&s, NBT_SANITIZED ? 1000 : 400);
        best_far = far < best_far ? far : best_far;
        best_scan = scan < best_scan ? scan : best_scan;
        if (getenv("NB_FAR_VERBOSE") != NULL)
            fprintf(stderr, "  12000 far queries %.2f ms, 400 scans %.2f ms\n", far * 1e3,
                    scan * 1e3);
        if (far < scan) break; // one round that passes is enough
    }
    if (over_bound("12000 far queries on even cells", best_far,
                   NBT_SANITIZED ? "1000 scans" : "400 scans", best_scan))
        return 1;
    nb_grid_destroy(g);
    nbo_set_free(&s);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"far_against_brute_force", test_far_against_brute_force},
        {"far_costs_little", test_far_costs_little},
        {"far_along_an_axis", test_far_along_an_axis},
        {"far_on_even_cells", test_far_on_even_cells},
        {"far_ties_take_the_lowest_index", test_far_ties_take_the_lowest_index},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
