// SPDX-License-Identifier: MIT
// Every set of the benchmarks' corpus (bench/corpus.h) at small N, through the structures as a
// user calls them (default descs), against brute force (nb_oracle.h): point sets through the
// grid built for the set's radius (all pairs, count, radius queries at that radius and at 3x it,
// boxes, kNN for k = 1, 8, 32), rectangle sets through the quadtree (windows, overlap pairs).
// It also checks the generators: fixed seeds reproduce, another seed gives another draw, and
// the recorded radius gives 5 to 15 neighbours a point on average.
#include "corpus.h"
#include "nb_oracle.h"
#include "nb_test.h"
#include "rects_common.h"

#include <nearby/grid.h>
#include <nearby/quadtree.h>

#include <math.h>
#include <time.h>

enum { N_POINTS = 1500, N_RECTS = 1200, QUERIES = 24 };

/// A query point near data point `at` of the set (nudged by up to one radius).
static void query_point(const nbbCorpus *c, int32_t at, double *q)
{
    for (int d = 0; d < c->dim; d++)
        q[d] = c->data[(size_t)at * c->dim + d] + c->radius * (2.0 * nbt_unit() - 1.0);
}

static int check_points(const nbbCorpus *c)
{
    nboSet s = {c->data, c->n, c->dim, 0, NULL, NULL};
    nbGridDesc desc = {0};
    desc.dim = c->dim;
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints v = nbo_points(&s);
    NB_CHECK_OK(nb_grid_build(g, &v, c->radius));
    NB_CHECK_OK(nb_grid_validate(g));
    int rc = 1;
    int64_t want_n = 0, found = 0, counted = 0;
    nbPair *want = nbo_pairs(&s, c->radius, &want_n);
    nbPair *got = malloc(sizeof(nbPair) * (size_t)(want_n + 1));
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)c->n);
    nbNeighbor knn[32];
    if (got == NULL || idx == NULL) goto done;
    // the mean neighbours the radius was chosen for (exact below 4000 points)
    double mean = 2.0 * (double)want_n / (double)c->n;
    if (!(mean >= 5.0 && mean <= 15.0)) {
        fprintf(stderr, "%s: %.2f neighbours a point at r = %g\n", c->name, mean, c->radius);
        goto done;
    }
    if (nb_grid_pairs(g, c->radius, got, want_n + 1, &found) != NB_OK) goto done;
    nbo_sort_pairs(got, found);
    if (!nbo_same_pairs(got, found, want, want_n)) goto done;
    if (nb_grid_count_pairs(g, c->radius, &counted) != NB_OK || counted != want_n) goto done;
    for (int k = 0; k < QUERIES; k++) {
        double q[3], lo[3], hi[3];
        query_point(c, nbt_int(c->n), q);
        double r = k % 2 == 0 ? c->radius : 3.0 * c->radius;
        int32_t wn = 0, gn = 0;
        int32_t *w = nbo_radius(&s, q, r, &wn);
        bool same = nb_grid_query_radius(g, q, r, NB_FILTER_ALL, idx, c->n, &gn) == NB_OK;
        nbo_sort_indices(idx, gn);
        same = same && nbo_same_indices(idx, gn, w, wn);
        free(w);
        for (int d = 0; d < c->dim; d++) {
            lo[d] = q[d] - r * nbt_unit();
            hi[d] = q[d] + r * nbt_unit();
        }
        w = nbo_box(&s, lo, hi, &wn);
        same = same && nb_grid_query_box(g, NBT_BOX(lo, hi, c->dim), NB_FILTER_ALL, idx, c->n,
                                         &gn) == NB_OK;
        nbo_sort_indices(idx, gn);
        same = same && nbo_same_indices(idx, gn, w, wn);
        free(w);
        const int32_t ks[3] = {1, 8, 32};
        for (int j = 0; same && j < 3; j++) {
            int32_t kn = 0;
            nbNeighbor *wk = nbo_knn(&s, q, ks[j], &kn);
            same = nb_grid_knn(g, q, NB_FILTER_ALL, (double)INFINITY, knn, ks[j], &gn) == NB_OK &&
                   nbo_same_neighbors(knn, gn, wk, kn);
            free(wk);
        }
        if (!same) {
            fprintf(stderr, "%s: query %d at r = %g differs from brute force\n", c->name, k, r);
            goto done;
        }
    }
    rc = 0;
done:
    free(want);
    free(got);
    free(idx);
    nb_grid_destroy(g);
    return rc;
}

static bool count_hit(nbHit hit, void *user)
{
    (void)hit;
    (*(int64_t *)user)++;
    return true;
}

static int check_rects(const nbbCorpus *c)
{
    const nbRect *r = (const nbRect *)c->data; // minx miny maxx maxy is nbRect's layout
    nbQuadtreeDesc desc = {0};
    nbQuadtree *qt = NULL;
    NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
    NB_CHECK_OK(nb_quadtree_build(qt, r, c->n, NULL, NULL, NULL));
    NB_CHECK_OK(nb_quadtree_validate(qt));
    int rc = 1;
    double w[4 * QUERIES];
    nbb_corpus_windows(c, w, QUERIES, nbt_u64());
    for (int k = 0; k < QUERIES; k++) {
        const nbRect win = {{w[4 * k], w[4 * k + 1]}, {w[4 * k + 2], w[4 * k + 3]}};
        int64_t want = 0, got = 0;
        for (int32_t i = 0; i < c->n; i++) want += nbr_touch(c->data + 4 * (size_t)i, w + 4 * k);
        if (nb_quadtree_visit_box(qt, NBT_RECT_BOX(&win), NB_FILTER_ALL, count_hit, &got) !=
                NB_OK ||
            got != want) {
            fprintf(stderr, "%s: window %d: %lld hits, brute force %lld\n", c->name, k,
                    (long long)got, (long long)want);
            goto done;
        }
    }
    int64_t want = 0, got = 0;
    for (int32_t i = 0; i < c->n; i++)
        for (int32_t j = i + 1; j < c->n; j++)
            want += nbr_touch(c->data + 4 * (size_t)i, c->data + 4 * (size_t)j);
    if (nb_quadtree_count_pairs(qt, &got) != NB_OK || got != want) {
        fprintf(stderr, "%s: %lld overlapping pairs, brute force %lld\n", c->name, (long long)got,
                (long long)want);
        goto done;
    }
    rc = 0;
done:
    nb_quadtree_destroy(qt);
    return rc;
}

static int test_every_set(void)
{
    NB_CHECK(nbb_corpus_count() >= 20 && nbb_corpus_count() <= nbb_corpus_count_all());
    for (int k = 0; k < nbb_corpus_count_all(); k++) {
        const int rects = nbb_corpus_is_rects(k);
        nbbCorpus c;
        NB_CHECK(nbb_corpus_make(k, rects ? N_RECTS : N_POINTS, 0, &c) == 0);
        NB_CHECK(c.n > 0 && c.dim == nbb_corpus_dim(k) && c.rects == rects);
        NB_CHECK(nbb_corpus_find(c.name) == k);
        int rc = rects ? check_rects(&c) : check_points(&c);
        nbb_corpus_free(&c);
        NB_CHECK(rc == 0);
    }
    return 0;
}

static int test_seeds(void)
{
    for (int k = 0; k < nbb_corpus_count(); k++) {
        nbbCorpus a, b, other;
        NB_CHECK(nbb_corpus_make(k, 500, 0, &a) == 0);
        NB_CHECK(nbb_corpus_make(k, 500, 0, &b) == 0);
        NB_CHECK(nbb_corpus_make(k, 500, 7, &other) == 0);
        size_t bytes = sizeof(double) * (size_t)a.n * (size_t)(a.rects ? 4 : a.dim);
        bool same = memcmp(a.data, b.data, bytes) == 0 && a.radius == b.radius;
        bool differs = memcmp(a.data, other.data, bytes) != 0;
        bool finite = true;
        for (size_t i = 0; i < bytes / sizeof(double); i++) finite = finite && isfinite(a.data[i]);
        nbb_corpus_free(&a);
        nbb_corpus_free(&b);
        nbb_corpus_free(&other);
        NB_CHECK(same && differs && finite);
    }
    nbbCorpus c;
    NB_CHECK(nbb_corpus_make(-1, 10, 0, &c) == -1 && c.data == NULL);
    NB_CHECK(nbb_corpus_make(0, 0, 0, &c) == -1 && c.data == NULL);
    NB_CHECK(nbb_corpus_find("no such set") == -1);
    return 0;
}

// The best of three CPU times (clock(): a shared machine's waits do not count) of Q kNN
// queries (k = 8, at the set's first points) and of S scans of every point.
static void knn_and_scan_times(const nbGrid *g, const nbbCorpus *c, int32_t q, int32_t scans,
                               double *knn, double *scan)
{
    double sink = 0.0;
    *knn = *scan = (double)INFINITY;
    for (int rep = 0; rep < 3; rep++) {
        nbNeighbor nb[8];
        clock_t t0 = clock();
        for (int32_t i = 0; i < q; i++) {
            int32_t found = 0;
            nb_grid_knn(g, c->data + (size_t)i * c->dim, NB_FILTER_ALL, (double)INFINITY, nb, 8,
                        &found);
            sink += found > 0 ? nb[found - 1].dist2 : 0.0;
        }
        clock_t t1 = clock();
        for (int32_t i = 0; i < scans; i++) {
            double best = (double)INFINITY;
            for (int32_t j = 0; j < c->n; j++) {
                const double d2 =
                    nbo_d2(c->data + (size_t)i * c->dim, c->data + (size_t)j * c->dim, c->dim);
                best = d2 < best && j != i ? d2 : best;
            }
            sink += best;
        }
        clock_t t2 = clock();
        *knn = (double)(t1 - t0) < *knn ? (double)(t1 - t0) : *knn;
        *scan = (double)(t2 - t1) < *scan ? (double)(t2 - t1) : *scan;
    }
    volatile double keep = sink;
    (void)keep;
}

// kNN's cost follows the local density, not the empty space between clusters (query.c, "kNN
// over cells in Z order"): on the sets whose grid takes the hashed layout (clusters, a sphere's
// surface, a scan), a k = 8 query costs far less than a scan of every point. When kNN walked
// rings of cells there, a query in a sparse region crossed rings of empty cells until its work
// budget ran out, and then scanned every point: as much as the scan, or more.
static int test_knn_follows_density(void)
{
    static const char *const sets[] = {"powerlaw3d", "sphere3d", "lidar3d"};
    enum { N = 50000, Q = 2000, SCANS = 40 };
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        nbbCorpus c;
        NB_CHECK(nbb_corpus_make(nbb_corpus_find(sets[s]), N, 0, &c) == 0);
        nbGridDesc desc = {0};
        desc.dim = c.dim;
        nbGrid *g = NULL;
        NB_CHECK_OK(nb_grid_create(&desc, &g));
        const nbPoints v = {.data = c.data, .count = c.n, .dim = c.dim};
        NB_CHECK_OK(nb_grid_build(g, &v, c.radius));
        nbGridInfo info;
        NB_CHECK_OK(nb_grid_info(g, &info));
        double knn = 0.0, scan = 0.0;
        knn_and_scan_times(g, &c, Q, SCANS, &knn, &scan);
        const double ratio = (knn / Q) / (scan / SCANS);
        if (!(info.hashed && !info.ranked && ratio < 0.25))
            fprintf(stderr, "%s: %s layout, a kNN query costs %.3f scans\n", sets[s],
                    info.ranked   ? "ranked"
                    : info.hashed ? "hashed"
                                  : "dense",
                    ratio);
        nb_grid_destroy(g);
        nbb_corpus_free(&c);
        NB_CHECK(info.hashed && !info.ranked && ratio < 0.25);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"every_set", test_every_set},
        {"seeds", test_seeds},
        {"knn_follows_density", test_knn_follows_density},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
