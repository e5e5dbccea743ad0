// SPDX-License-Identifier: MIT
// The grid's kNN index (src/knn_index.c) against brute force: every shape of data a user brings
// (blobs of log-normal sizes, a sphere's surface, duplicates, all points equal, collinear,
// 1e9 offsets, uniform), k from 1 to past N, filters, max_distance, ties; the index forced on
// and off (nbi_knn_index_use) so both paths answer the same; allocation failing in turn (the
// index falls back to the cell walk, still exact); threads querying a grid right after a build
// (TSan runs this in `make test`); a rebuild making the index stale; the rule on evenly filled
// cells (2D walks them, 3D builds the index).
#include "grid_internal.h" // the index's state (nbi_grid_knn_lazy)
#include "knn_heap.h"
#include "knn_index.h"
#include "nb_oracle.h"
#include "nb_test.h"
#include "simd.h"

#include <nearby/grid.h>

#include <math.h>

#if defined(__has_include)
#if __has_include(<pthread.h>) && !defined(_WIN32)
#include <pthread.h>
#define NBT_THREADS 1
#endif
#endif
#ifndef NBT_THREADS
#define NBT_THREADS 0
#endif

enum { SHAPES = 8 };
static const char *const shape_name[SHAPES] = {"uniform",   "blobs",     "sphere", "duplicates",
                                               "all_equal", "collinear", "offset", "far_apart"};

// n points of shape `shape` in dim D.
static nboSet make_shape(int shape, int32_t n, int dim)
{
    nboSet s = nbo_set_new(n, dim);
    double c[3] = {0, 0, 0}, size = 1.0;
    for (int32_t i = 0; i < n; i++) {
        double *p = s.p + (size_t)i * (size_t)dim;
        switch (shape) {
        case 0:
            for (int a = 0; a < dim; a++) p[a] = nbt_range(0.0, 100.0);
            break;
        case 1: // Gaussian blobs of log-normal sizes, a new blob every 40 points
            if (i % 40 == 0) {
                for (int a = 0; a < dim; a++) c[a] = nbt_range(0.0, 1000.0);
                size = exp(2.0 * nbt_gauss());
            }
            for (int a = 0; a < dim; a++) p[a] = c[a] + size * nbt_gauss();
            break;
        case 2: { // a sphere's surface (a circle in 2D), radius 50
            double v[3] = {nbt_gauss(), nbt_gauss(), dim == 3 ? nbt_gauss() : 0.0}, len = 0.0;
            for (int a = 0; a < dim; a++) len += v[a] * v[a];
            len = len > 0.0 ? sqrt(len) : 1.0;
            for (int a = 0; a < dim; a++) p[a] = 50.0 * v[a] / len;
            break;
        }
        case 3: // a few distinct places, each held many times
            for (int a = 0; a < dim; a++) p[a] = (double)nbt_int(6);
            break;
        case 4:
            for (int a = 0; a < dim; a++) p[a] = 3.25;
            break;
        case 5: { // on one line
            const double t = nbt_range(-50.0, 50.0);
            for (int a = 0; a < dim; a++) p[a] = t * (double)(a + 1);
            break;
        }
        case 6:
            for (int a = 0; a < dim; a++) p[a] = 1e9 + nbt_range(0.0, 10.0);
            break;
        default: // clusters far apart: most of the box is empty
            for (int a = 0; a < dim; a++)
                p[a] = (double)(i % 3) * 1e6 * (a == 0 ? 1.0 : 0.5) + nbt_range(0.0, 1.0);
            break;
        }
    }
    return s;
}

// The grid's answer for one query against the oracle's, buffer and callback forms.
typedef struct Seen {
    const nbNeighbor *want;
    int32_t n, wrong;
} Seen;

static bool seen_one(int32_t index, double dist2, void *user)
{
    Seen *s = (Seen *)user;
    if (s->want[s->n].index != index || s->want[s->n].dist2 != dist2) s->wrong++;
    s->n++;
    return true;
}

static int check_query(const nbGrid *g, const nboSet *s, const double *q, int32_t k, nbFilter f,
                       double md)
{
    int32_t want = 0;
    nbNeighbor *all = nbo_knn_filtered(s, q, k, f, &want);
    if (isfinite(md))
        for (int32_t t = 0; t < want; t++)
            if (!(all[t].dist2 <= md * md)) want = t;
    nbNeighbor *got = (nbNeighbor *)malloc((size_t)(k > 0 ? k : 1) * sizeof *got);
    NB_CHECK(got != NULL);
    int32_t found = -1;
    NB_CHECK_OK(nb_grid_knn(g, q, f, md, got, k, &found));
    if (!nbo_same_neighbors(got, found, all, want)) {
        fprintf(stderr, "  k=%d found %d, want %d\n", k, found, want);
        for (int32_t t = 0; t < found && t < want; t++)
            if (got[t].index != all[t].index || got[t].dist2 != all[t].dist2)
                fprintf(stderr, "  rank %d: got %d (%.17g) want %d (%.17g)\n", t, got[t].index,
                        got[t].dist2, all[t].index, all[t].dist2);
        free(got);
        free(all);
        return 1;
    }
    Seen seen = {all, 0, 0};
    NB_CHECK_OK(nb_grid_visit_knn(g, q, f, md, k, seen_one, &seen));
    NB_CHECK(seen.n == want && seen.wrong == 0);
    free(got);
    free(all);
    return 0;
}

// Queries: points of the set, points beside them, and far outside.
static void query_point(const nboSet *s, int j, double *q)
{
    const double *p = s->p + (size_t)nbt_int(s->n) * (size_t)s->dim;
    for (int a = 0; a < s->dim; a++) {
        q[a] = p[a];
        if (j % 3 == 1) q[a] += nbt_gauss() * (1.0 + fabs(p[a]) * 1e-9);
        if (j % 7 == 6) q[a] = p[a] * 3.0 + 1e4;
    }
}

static nbGrid *build(const nboSet *s, double r, nbtAlloc *counter)
{
    nbGridDesc desc = {0};
    desc.dim = s->dim;
    nbAllocator al = nbt_allocator(counter);
    desc.allocator = &al;
    nbGrid *g = NULL;
    if (nb_grid_create(&desc, &g) != NB_OK) return NULL;
    nbPoints pts = {0};
    pts.data = s->p;
    pts.count = s->n;
    pts.dim = s->dim;
    pts.category = s->cat;
    pts.mask = s->mask;
    if (nb_grid_build(g, &pts, r) != NB_OK) {
        nb_grid_destroy(g);
        return NULL;
    }
    return g;
}

// Validates and destroys g, checks that it freed all it took, and frees s.
static int release(nbGrid *g, nboSet *s, const nbtAlloc *counter)
{
    NB_CHECK_OK(nb_grid_validate(g));
    nb_grid_destroy(g);
    NB_CHECK(counter->live_bytes == 0 && counter->allocs == counter->frees);
    nbo_set_free(s);
    return 0;
}

// Every shape in 2D and 3D, every k, with the index on, off and chosen by the rule.
static int test_shapes_against_brute_force(void)
{
    const int32_t n = 700;
    for (int dim = 2; dim <= 3; dim++)
        for (int shape = 0; shape < SHAPES; shape++)
            for (int use = -1; use <= 1; use++) {
                nbi_knn_index_use = use;
                nboSet s = make_shape(shape, n, dim);
                nbtAlloc counter = {0};
                nbGrid *g = build(&s, shape == 6 || shape == 3 ? 0.5 : 2.0, &counter);
                NB_CHECK(g != NULL);
                // (up to NBI_LIST_MAX the k best are a sorted list, past it a heap)
                const int32_t ks[] = {1, 2, 8, NBI_LIST_MAX, NBI_LIST_MAX + 1, n - 1, n, n + 5};
                for (int j = 0; j < 32; j++) {
                    double q[3];
                    query_point(&s, j, q);
                    const int32_t k = ks[j % 8];
                    if (check_query(g, &s, q, k, NB_FILTER_ALL, (double)INFINITY)) {
                        fprintf(stderr, "  shape %s dim %d use %d query %d\n", shape_name[shape],
                                dim, use, j);
                        return 1;
                    }
                }
                if (release(g, &s, &counter)) return 1;
            }
    nbi_knn_index_use = 0;
    return 0;
}

// Filters (per-point categories and masks: subtrees pruned by their bits), max_distance (a
// limit at one of the answers' own distance decides `<=`), and ties (a lattice: many points
// at equal distances, the lower index first).
static int test_filters_limits_ties(void)
{
    for (int dim = 2; dim <= 3; dim++)
        for (int use = -1; use <= 1; use += 2) { // the ring walk, then the index
            nbi_knn_index_use = use;
            nboSet s = make_shape(1, 900, dim);
            s.cat = (uint32_t *)malloc((size_t)s.n * sizeof(uint32_t));
            s.mask = (uint32_t *)malloc((size_t)s.n * sizeof(uint32_t));
            NB_CHECK(s.cat != NULL && s.mask != NULL);
            for (int32_t i = 0; i < s.n; i++) { // whole blobs share a category: bits prune subtrees
                s.cat[i] = 1u << ((i / 40) % 5);
                s.mask[i] = i % 11 == 0 ? 0u : 0xFFFFFFFFu;
            }
            nbtAlloc counter = {0};
            nbGrid *g = build(&s, 2.0, &counter);
            NB_CHECK(g != NULL);
            const nbFilter fs[] = {NB_FILTER_ALL, {1u, 0xFFFFFFFFu}, {0xFFFFFFFFu, 4u}, {0u, 0u}};
            for (int j = 0; j < 40; j++) {
                double q[3];
                query_point(&s, j, q);
                const int32_t k = 1 + nbt_int(40);
                const nbFilter f = fs[j % 4];
                if (check_query(g, &s, q, k, f, (double)INFINITY)) return 1;
                int32_t want = 0;
                nbNeighbor *all = nbo_knn_filtered(&s, q, k, f, &want);
                if (want > 0 && check_query(g, &s, q, k, f, sqrt(all[want / 2].dist2))) return 1;
                free(all);
                if (check_query(g, &s, q, k, f, 0.0)) return 1;
            }
            nb_grid_destroy(g);
            free(s.cat);
            free(s.mask);
            s.cat = s.mask = NULL;
            nbo_set_free(&s);
            // ties: a lattice queried at its points and at the centres of its squares
            nboSet t = nbo_set_new(20 * 20 * (dim == 3 ? 4 : 1), dim);
            for (int32_t i = 0; i < t.n; i++) {
                double *p = t.p + (size_t)i * (size_t)dim;
                p[0] = (double)(i % 20);
                p[1] = (double)((i / 20) % 20);
                if (dim == 3) p[2] = (double)(i / 400);
            }
            g = build(&t, 1.5, &counter);
            NB_CHECK(g != NULL);
            for (int j = 0; j < 30; j++) {
                double q[3] = {(double)nbt_int(20) + 0.5 * (j % 2),
                               (double)nbt_int(20) + 0.5 * (j % 2),
                               (double)nbt_int(dim == 3 ? 4 : 1)};
                if (check_query(g, &t, q, 1 + j, NB_FILTER_ALL, (double)INFINITY)) return 1;
                // a limit at a distance many lattice points share: `<=` keeps them all
                if (check_query(g, &t, q, 1 + j, NB_FILTER_ALL, j % 2 ? sqrt(0.5) : 1.0)) return 1;
            }
            nb_grid_destroy(g);
            nbo_set_free(&t);
        }
    nbi_knn_index_use = 0;
    return 0;
}

// The rule on a batch (NBI_KNN_AFTER): 2D cells evenly filled, or crowded by duplicates, are
// walked for queries in random order (however many); for a batch in cell order (each query in
// or beside the last one's cell) the walk counts, and after NBI_KNN_AFTER(n) queries (a
// sixteenth of the points) the index is built and answers the rest. Every answer exact: duplicates
// tie by index, k up to and past n; a rebuild starts the count anew.
static int test_batch_builds_the_index(void)
{
    nbi_knn_index_use = 0;
    const int32_t n = 1600;
    const int shapes[2] = {0, 3}; // uniform over [0, 100), duplicates on [0, 5]
    const double cell[2] = {5.0, 0.5}, side[2] = {100.0, 6.0};
    for (int i = 0; i < 2; i++) {
        nboSet s = make_shape(shapes[i], n, 2);
        nbtAlloc counter = {0};
        nbGrid *g = build(&s, cell[i], &counter);
        NB_CHECK(g != NULL);
        const nbiKnnLazy *z = nbi_grid_knn_lazy(g);
        (void)z;
        for (int round = 0; round < 2; round++) {
            for (int j = 0; j < n / 2; j++) { // random order: the walk, uncounted
                double q[3];
                query_point(&s, j, q);
                nbNeighbor got[8];
                int32_t found = 0, want = 0;
                NB_CHECK_OK(nb_grid_knn(g, q, NB_FILTER_ALL, (double)INFINITY, got, 8, &found));
                nbNeighbor *all = nbo_knn(&s, q, 8, &want);
                NB_CHECK(nbo_same_neighbors(got, found, all, want));
                free(all);
            }
#if NBI_KNN_INDEX
            NB_CHECK(atomic_load(&z->state) == NBI_KNN_COUNTING);
#endif
            int32_t queries = 0; // kNN calls with k > 1 (k = 1 keeps the walk, uncounted)
            int32_t built = -1;
            for (int32_t j = 0; built < 0 || j < built + 40; j++) {
                // along rows a third of a cell apart, a fifth of a cell a step
                const double t = 0.2 * cell[i] * j, row = floor(t / side[i]);
                const double q[3] = {t - row * side[i], fmod(row * cell[i] / 3.0, side[i]), 0.0};
                const int32_t ks[4] = {8, 1, 32, 20};
                const int32_t k = ks[j % 4];
                if (check_query(g, &s, q, k, NB_FILTER_ALL, (double)INFINITY)) {
                    fprintf(stderr, "  shape %s round %d query %d\n", shape_name[shapes[i]], round,
                            j);
                    return 1;
                }
                queries += k > 1 ? 2 : 0; // (check_query asks twice)
#if NBI_KNN_INDEX
                const int state = atomic_load(&z->state);
                NB_CHECK(state == NBI_KNN_COUNTING || state == NBI_KNN_READY);
                if (state == NBI_KNN_READY && built < 0) {
                    built = j;
                    // after NBI_KNN_AFTER(n) queries, less the few random ones that touched
                    // the cell before them (a row's first is not counted)
                    NB_CHECK(queries > NBI_KNN_AFTER(n) - n / 32 &&
                             queries <= NBI_KNN_AFTER(n) + 40);
                }
#else
                built = 0;
#endif
                NB_CHECK(queries < n); // (every step of the rows but a row's first is counted)
            }
            for (int j = 0; j < 6; j++) { // k = n - 1, n, past n
                double q[3];
                query_point(&s, j, q);
                if (check_query(g, &s, q, n - 1 + j % 3 * 3, NB_FILTER_ALL, (double)INFINITY))
                    return 1;
            }
            nbPoints pts = {s.p, s.n, 2, 0, NULL, 0, NULL, 0};
            NB_CHECK_OK(nb_grid_build(g, &pts, cell[i])); // counts anew
        }
        nb_grid_destroy(g);
        NB_CHECK(counter.live_bytes == 0 && counter.allocs == counter.frees);
        nbo_set_free(&s);
    }
    return 0;
}

// A query beyond the box of [0, side)^2 (cells of `cell`): t picks a face or a corner and a
// distance (a few cells out, tens of cells, 1e3 and 1e6 boxes); along a face the other coordinate
// lies within the box, on a lattice coordinate or halfway between two (ties) when `lattice`.
static void beyond_query(int t, double side, double cell, bool lattice, double *q)
{
    static const double out[4] = {3.5, 40.0, 0.0, 0.0}; // in cells; then in boxes
    const int kind = t % 4, corner = (t / 4) % 3 == 2;
    const double d = kind < 2 ? out[kind] * cell : (kind == 2 ? 1e3 : 1e6) * side;
    for (int a = 0; a < 2; a++)
        q[a] = lattice ? floor(nbt_range(0.0, side)) + 0.5 * nbt_int(2) : nbt_range(0.0, side);
    const int a = nbt_int(2);
    q[a] = nbt_int(2) ? side + d : -d;
    if (corner) q[1 - a] = nbt_int(2) ? side + d * nbt_range(0.1, 1.0) : -d * nbt_range(0.1, 1.0);
    q[2] = 0.0;
}

// The rule for far queries (nbi_knn_far_saving): on evenly filled 2D cells, where the index is
// not wanted, queries from beyond a face or a corner run up their expected savings and build the
// index once those reach its cost, long before the batch rule would (queries in random order
// are not a batch); that index then serves far queries only, in-box queries keep the walk (and
// their count), and a batch in cell order has it serve them too without a second build. Every
// answer exact against brute force: filters, k = 1 to past n, ties on a lattice. The old rule
// walked every such query (93k instructions each beyond a face of 25k points).
static int test_far_queries_build_the_index(void)
{
    nbi_knn_index_use = 0;
    for (int lattice = 0; lattice <= 1; lattice++) {
        const int32_t n = 1600;
        const double side = lattice ? 40.0 : 100.0, cell = lattice ? 2.0 : 5.0;
        nboSet s = lattice ? nbo_set_new(n, 2) : make_shape(0, n, 2);
        if (lattice)
            for (int32_t i = 0; i < n; i++) {
                s.p[2 * (size_t)i] = (double)(i % 40);
                s.p[2 * (size_t)i + 1] = (double)(i / 40);
            }
        s.cat = (uint32_t *)malloc((size_t)n * sizeof(uint32_t));
        s.mask = (uint32_t *)malloc((size_t)n * sizeof(uint32_t));
        NB_CHECK(s.cat != NULL && s.mask != NULL);
        for (int32_t i = 0; i < n; i++) {
            s.cat[i] = 1u << (i % 3);
            s.mask[i] = i % 7 == 0 ? 2u : 0xFFFFFFFFu;
        }
        nbtAlloc counter = {0};
        nbGrid *g = build(&s, cell, &counter);
        NB_CHECK(g != NULL);
        const nbiKnnLazy *z = nbi_grid_knn_lazy(g);
        (void)z;
        const nbFilter fs[4] = {NB_FILTER_ALL, {1u, 0xFFFFFFFFu}, {0xFFFFFFFFu, 2u}, {0u, 0u}};
        const int32_t ks[5] = {1, 2, 8, 33, n + 3};
        for (int j = 0; j < 40; j++) { // in the box, in random order: the walk
            double q[3];
            query_point(&s, j, q);
            if (check_query(g, &s, q, 8, NB_FILTER_ALL, (double)INFINITY)) return 1;
        }
        int built = -1;
        int64_t allocs = 0;
        for (int j = 0; j < 400; j++) {
            double q[3];
            beyond_query(j, side, cell, lattice != 0, q);
            const int32_t k = ks[j % 5];
            const nbFilter f = fs[(j / 5) % 4];
            // (one call a query: check_query's second would touch the first's cell, and
            // queries in touching cells count towards the batch rule)
            nbNeighbor *got = (nbNeighbor *)malloc((size_t)k * sizeof *got);
            NB_CHECK(got != NULL);
            int32_t found = -1, want = 0;
            NB_CHECK_OK(nb_grid_knn(g, q, f, (double)INFINITY, got, k, &found));
            nbNeighbor *all = nbo_knn_filtered(&s, q, k, f, &want);
            if (!nbo_same_neighbors(got, found, all, want)) {
                fprintf(stderr, "  lattice %d far query %d (%g, %g) k %d: %d found, %d wanted\n",
                        lattice, j, q[0], q[1], k, found, want);
                return 1;
            }
            free(got);
            free(all);
#if NBI_KNN_INDEX
            if (built < 0 && atomic_load(&z->state) == NBI_KNN_READY) {
                built = j;
                allocs = counter.allocs;
                NB_CHECK(atomic_load(&z->far_only) == 1);
            }
#else
            built = 0;
#endif
        }
        // built within 200 of these 400 far queries (about 20 from 1e3 boxes along a face would
        // do; queries a few cells out, from corners, or for more points than the set holds save
        // little); none of them counts towards the batch rule
        NB_CHECK(built >= 0 && built < 200);
        for (int j = 0; j < 30; j++) { // in the box again: still the walk
            double q[3];
            query_point(&s, 3 * j, q); // (j % 3 == 0: at a point)
            if (check_query(g, &s, q, 1 + nbt_int(20), fs[j % 4], (double)INFINITY)) return 1;
        }
#if NBI_KNN_INDEX
        NB_CHECK(atomic_load(&z->far_only) == 1);
        int32_t queries = 0;
        for (int32_t j = 0; atomic_load(&z->far_only) == 1; j++) { // a batch in cell order
            const double t = 0.2 * cell * j, row = floor(t / side);
            const double q[3] = {t - row * side, fmod(row * cell / 3.0, side), 0.0};
            if (check_query(g, &s, q, 8, fs[j % 4], (double)INFINITY)) return 1;
            queries += 2;
            NB_CHECK(queries < 4 * NBI_KNN_AFTER(n));
        }
        NB_CHECK(atomic_load(&z->state) == NBI_KNN_READY && counter.allocs == allocs);
#endif
        free(s.cat);
        free(s.mask);
        s.cat = s.mask = NULL;
        if (release(g, &s, &counter)) return 1;
    }
    return 0;
}

// The rule on evenly filled cells (nbi_knn_index_wanted): a 2D grid keeps its ring walk (the
// first kNN allocates nothing), a 3D grid builds the index (it allocates); both exact.
static int test_rule_on_even_cells(void)
{
    nbi_knn_index_use = 0;
    for (int dim = 2; dim <= 3; dim++) {
        nboSet s = make_shape(0, 3000, dim);
        nbtAlloc counter = {0};
        nbGrid *g = build(&s, dim == 2 ? 5.0 : 12.0, &counter);
        NB_CHECK(g != NULL);
        const int64_t before = counter.allocs;
        for (int j = 0; j < 8; j++) {
            double q[3];
            query_point(&s, j, q);
            if (check_query(g, &s, q, 8, NB_FILTER_ALL, (double)INFINITY)) return 1;
        }
        NB_CHECK((counter.allocs > before) == (NBI_KNN_INDEX && dim == 3));
        nb_grid_destroy(g);
        nbo_set_free(&s);
    }
    return 0;
}

// Allocation i fails, for every i the first kNN makes: the answer is still exact (the cell
// walk), no block leaks, and the next build makes the index anew.
static int test_allocation_failing_in_turn(void)
{
    nbi_knn_index_use = 1;
    nboSet s = make_shape(7, 600, 3);
    for (int64_t i = 1;; i++) {
        nbtAlloc counter = {0};
        nbGrid *g = build(&s, 1.0, &counter);
        NB_CHECK(g != NULL);
        counter.fail_at = counter.allocs + i;
        double q[3];
        query_point(&s, 1, q);
        if (check_query(g, &s, q, 9, NB_FILTER_ALL, (double)INFINITY)) return 1;
        const bool failed = nbt_alloc_failed(&counter);
        counter.fail_at = 0;
        if (check_query(g, &s, q, 9, NB_FILTER_ALL, (double)INFINITY)) return 1;
        NB_CHECK(nb_grid_memory_bytes(g) >= (size_t)counter.live_bytes);
        nbPoints pts = {s.p, s.n, 3, 0, NULL, 0, NULL, 0};
        NB_CHECK_OK(nb_grid_build(g, &pts, 1.0)); // stale: built anew by the next kNN
        if (check_query(g, &s, q, 9, NB_FILTER_ALL, (double)INFINITY)) return 1;
        nb_grid_destroy(g);
        NB_CHECK(counter.live_bytes == 0 && counter.allocs - (failed ? 1 : 0) == counter.frees);
        NB_CHECK(!counter.size_mismatch);
        if (!failed) break; // the first kNN made fewer than i allocations: every one failed once
    }
    nbo_set_free(&s);
    nbi_knn_index_use = 0;
    return 0;
}

// A rebuild with other points: the index goes stale, the next kNN answers for the new points;
// and once built, kNN allocates nothing more until the points grow past its room.
static int test_rebuild_and_steady_state(void)
{
    nbi_knn_index_use = 1;
    nbtAlloc counter = {0};
    nboSet a = make_shape(1, 800, 3), b = make_shape(2, 800, 3);
    nbGrid *g = build(&a, 2.0, &counter);
    NB_CHECK(g != NULL);
    double q[3];
    query_point(&a, 0, q);
    if (check_query(g, &a, q, 8, NB_FILTER_ALL, (double)INFINITY)) return 1;
    for (int frame = 0; frame < 6; frame++) {
        const nboSet *s = frame % 2 ? &a : &b;
        nbPoints pts = {s->p, s->n, 3, 0, NULL, 0, NULL, 0};
        NB_CHECK_OK(nb_grid_build(g, &pts, 2.0));
        const int64_t before = counter.allocs;
        for (int j = 0; j < 10; j++) {
            query_point(s, j, q);
            if (check_query(g, s, q, 8, NB_FILTER_ALL, (double)INFINITY)) return 1;
        }
        if (frame >= 2) NB_CHECK(counter.allocs == before);
    }
    nb_grid_destroy(g);
    NB_CHECK(counter.live_bytes == 0);
    nbo_set_free(&a);
    nbo_set_free(&b);
    nbi_knn_index_use = 0;
    return 0;
}

#if NBT_THREADS
typedef struct Job {
    const nbGrid *g;
    const nboSet *s;
    int32_t first, wrong;
} Job;

static void *job_run(void *arg)
{
    Job *j = (Job *)arg;
    nbNeighbor got[16];
    for (int32_t i = j->first; i < j->s->n; i += 12) {
        const double *q = j->s->p + (size_t)i * (size_t)j->s->dim;
        int32_t found = 0, want = 0;
        if (nb_grid_knn(j->g, q, NB_FILTER_ALL, (double)INFINITY, got, 16, &found) != NB_OK) {
            j->wrong++;
            continue;
        }
        nbNeighbor *all = nbo_knn(j->s, q, 16, &want);
        j->wrong += !nbo_same_neighbors(got, found, all, want);
        free(all);
    }
    return NULL;
}
#endif

// Four threads query a grid right after its build: one of them builds the index, the others
// walk the cells meanwhile or use the published index; every answer exact.
static int test_threads_right_after_build(void)
{
#if NBT_THREADS
    nbi_knn_index_use = 1;
    nboSet s = make_shape(1, 1200, 3);
    nbtAlloc counter = {0};
    nbGrid *g = build(&s, 2.0, &counter);
    NB_CHECK(g != NULL);
    for (int round = 0; round < 3; round++) {
        nbPoints pts = {s.p, s.n, 3, 0, NULL, 0, NULL, 0};
        NB_CHECK_OK(nb_grid_build(g, &pts, 2.0 + round));
        pthread_t tid[4];
        Job jobs[4];
        for (int t = 0; t < 4; t++) {
            jobs[t] = (Job){g, &s, 3 * t, 0};
            NB_CHECK(pthread_create(&tid[t], NULL, job_run, &jobs[t]) == 0);
        }
        for (int t = 0; t < 4; t++) {
            NB_CHECK(pthread_join(tid[t], NULL) == 0);
            NB_CHECK(jobs[t].wrong == 0);
        }
    }
    nb_grid_destroy(g);
    nbo_set_free(&s);
    nbi_knn_index_use = 0;
#endif
    return 0;
}

#if NBT_THREADS
enum { FAR_BALLS = 48 };
typedef struct BallJob {
    const nbGrid *g;
    const double (*q)[3];
    const double *r;
    int32_t *const *want; // brute force's answers, ascending
    const int32_t *want_n;
    int32_t n, first, wrong;
} BallJob;

// Far radius queries (and far kNN, which share the index's debt) in turn from `first`, each
// against brute force.
static void *ball_job_run(void *arg)
{
    BallJob *j = (BallJob *)arg;
    int32_t *got = (int32_t *)nbo_xalloc((size_t)j->n * sizeof(int32_t));
    for (int i = 0; i < 240; i++) {
        const int b = (j->first + i) % FAR_BALLS;
        int32_t found = 0;
        if (nb_grid_query_radius(j->g, j->q[b], j->r[b], NB_FILTER_ALL, got, j->n, &found) !=
            NB_OK) {
            j->wrong++;
            continue;
        }
        nbo_sort_indices(got, found);
        j->wrong += !nbo_same_indices(got, found, j->want[b], j->want_n[b]);
        nbNeighbor nb[4];
        j->wrong +=
            nb_grid_knn(j->g, j->q[b], NB_FILTER_ALL, (double)INFINITY, nb, 4, &found) != NB_OK ||
            found != 4;
    }
    free(got);
    return NULL;
}
#endif

// Four threads run far radius queries on a grid right after its build, by the rule: their debt
// builds the index partway (from whichever thread tips it), the others walk the cells meanwhile
// or go through the published index; every answer exact.
static int test_threads_far_balls(void)
{
#if NBT_THREADS
    nboSet s = make_shape(1, 1500, 3);
    nbtAlloc counter = {0};
    nbGrid *g = build(&s, 0.5, &counter);
    NB_CHECK(g != NULL);
    double q[FAR_BALLS][3], r[FAR_BALLS];
    int32_t *want[FAR_BALLS], want_n[FAR_BALLS];
    for (int b = 0; b < FAR_BALLS; b++) { // 1000 box widths away (the points lie within 100)
        double u[3], len = 0.0, near = (double)INFINITY;
        for (int a = 0; a < 3; a++) {
            u[a] = nbt_gauss();
            len += u[a] * u[a];
        }
        for (int a = 0; a < 3; a++) q[b][a] = 1e5 * u[a] / sqrt(len);
        for (int32_t i = 0; i < s.n; i++) {
            const double d2 = nbo_d2(q[b], nbo_pt(&s, i), 3);
            near = d2 < near ? d2 : near;
        }
        r[b] = sqrt(near) + nbt_range(0.0, 2.0);
        want[b] = nbo_radius(&s, q[b], r[b], &want_n[b]);
    }
    for (int round = 0; round < 2; round++) {
        nbPoints pts = {s.p, s.n, 3, 0, NULL, 0, NULL, 0};
        NB_CHECK_OK(nb_grid_build(g, &pts, 0.5));
        pthread_t tid[4];
        BallJob jobs[4];
        for (int t = 0; t < 4; t++) {
            jobs[t] = (BallJob){g, (const double(*)[3])q, r, want, want_n, s.n, 11 * t, 0};
            NB_CHECK(pthread_create(&tid[t], NULL, ball_job_run, &jobs[t]) == 0);
        }
        for (int t = 0; t < 4; t++) {
            NB_CHECK(pthread_join(tid[t], NULL) == 0);
            NB_CHECK(jobs[t].wrong == 0);
        }
        NB_CHECK(nbi_knn_index_ready(nbi_grid_knn_lazy(g)) != NULL); // the debt was paid
    }
    for (int b = 0; b < FAR_BALLS; b++) free(want[b]);
    nb_grid_destroy(g);
    nbo_set_free(&s);
#endif
    return 0;
}

// A heavy tail (distances exp(3g) from one centre, g normal, in uniform directions): the Z-order
// codes peel off a few outer points a level, and such a tree ran 58 levels deep on 100k 3D
// points (13 on uniform ones); the index stays within nbi_ix_depth_cap of a balanced tree's
// log2(n / leaf), and answers as brute force does.
static int test_heavy_tail_depth(void)
{
#if NBI_KNN_INDEX
    const int32_t n = 20000;
    for (int dim = 2; dim <= 3; dim++) {
        nbi_knn_index_use = 1;
        nboSet s = nbo_set_new(n, dim);
        for (int32_t i = 0; i < n; i++) {
            double v[3] = {nbt_gauss(), nbt_gauss(), dim == 3 ? nbt_gauss() : 0.0}, len = 0.0;
            for (int a = 0; a < dim; a++) len += v[a] * v[a];
            len = len > 0.0 ? sqrt(len) : 1.0;
            const double r = exp(3.0 * nbt_gauss());
            for (int a = 0; a < dim; a++) s.p[(size_t)i * (size_t)dim + (size_t)a] = r * v[a] / len;
        }
        nbtAlloc counter = {0};
        nbGrid *g = build(&s, 0.5, &counter);
        NB_CHECK(g != NULL);
        for (int j = 0; j < 60; j++) {
            double q[3];
            query_point(&s, j, q);
            const int32_t ks[3] = {1, 8, 40};
            if (check_query(g, &s, q, ks[j % 3], NB_FILTER_ALL, (double)INFINITY)) {
                fprintf(stderr, "  dim %d query %d\n", dim, j);
                return 1;
            }
        }
        const nbiKnnLazy *z = nbi_grid_knn_lazy(g);
        NB_CHECK(atomic_load(&z->state) == NBI_KNN_READY);
        if (z->ix.depth > nbi_ix_depth_cap(n)) {
            fprintf(stderr, "  dim %d: depth %d, above %d\n", dim, z->ix.depth,
                    nbi_ix_depth_cap(n));
            return 1;
        }
        if (release(g, &s, &counter)) return 1;
    }
    nbi_knn_index_use = 0;
#endif
    return 0;
}

// The wider copies of the leaf scans (AVX2 where the CPU has it) against the SSE2 ones and brute
// force, in every norm the index serves (p = 1, 2, 3.5, inf), at and beside points, far
// outside, with ties (duplicates, a lattice), filters and limits at an answer's own distance.
// A brute force in the norm: the raw distance as nb_grid_knn_norm documents it, the k best of
// the points passing f within lim (raw), by (raw, index).
static int32_t brute_norm(const nboSet *s, const double *q, double p, nbFilter f, double lim,
                          nbNeighbor *out, int32_t k)
{
    nbNeighbor *all = (nbNeighbor *)nbo_xalloc((size_t)s->n * sizeof *all);
    int32_t n = 0;
    for (int32_t i = 0; i < s->n; i++) {
        double r = 0.0;
        for (int a = 0; a < s->dim; a++) {
            const double d = fabs(q[a] - nbo_pt(s, i)[a]);
            const double t = p == 2.0 ? d * d : p == 1.0 || isinf(p) ? d : pow(d, p);
            r = isinf(p) ? (t > r ? t : r) : r + t;
        }
        if (nbo_filter_passes(s, i, f) && r <= lim) all[n++] = (nbNeighbor){i, r};
    }
    nbo_sort_neighbors(all, n);
    n = n < k ? n : k;
    for (int32_t j = 0; j < n; j++) out[j] = all[j];
    free(all);
    return n;
}

static int test_wide_copies(void)
{
    static const double ps[] = {1.0, 2.0, 3.5, (double)INFINITY};
    static const int32_t ks[] = {1, 3, 8, 33};
    nbNeighbor got[40], want[40];
    nbi_knn_index_use = 1;
    for (int dim = 2; dim <= 3; dim++)
        for (int shape = 0; shape < SHAPES + 1; shape++) {
            nboSet s = make_shape(shape < SHAPES ? shape : 0, 600, dim);
            if (shape == SHAPES) // a lattice: many points at equal distances
                for (int32_t i = 0; i < s.n; i++) {
                    double *x = s.p + (size_t)i * (size_t)dim;
                    x[0] = (double)(i % 10);
                    x[1] = (double)((i / 10) % 10);
                    if (dim == 3) x[2] = (double)(i / 100);
                }
            if (shape % 2 == 1) {
                nbo_set_add_filters(&s);
                for (int32_t i = 0; i < s.n; i++) {
                    s.cat[i] = 1u << (i % 3);
                    s.mask[i] = i % 7 == 0 ? 0u : 0xFFFFFFFFu;
                }
            }
            nbtAlloc counter = {0};
            nbGrid *g = build(&s, 2.0, &counter);
            NB_CHECK(g != NULL);
            for (int j = 0; j < 24; j++) {
                double q[3];
                query_point(&s, j, q);
                if (shape == SHAPES && j % 2 == 0)
                    for (int a = 0; a < dim; a++) q[a] = (double)nbt_int(10) + 0.5;
                const nbFilter f = j % 4 == 3 ? (nbFilter){1u, 0xFFFFFFFFu} : NB_FILTER_ALL;
                for (int pi = 0; pi < 4; pi++)
                    for (int ki = 0; ki < 4; ki++) {
                        const double p = ps[pi];
                        const int32_t k = ks[ki];
                        int32_t n = brute_norm(&s, q, p, f, (double)INFINITY, want, k);
                        // a limit at the middle answer's own distance: `<=` keeps its ties
                        double md = (double)INFINITY, lim = md;
                        if (j % 3 == 2 && n > 0) {
                            lim = want[n / 2].dist2;
                            md = p == 2.0 ? sqrt(lim) : p == 1.0 || isinf(p) ? lim : 0.0;
                            if (md == 0.0) md = lim = (double)INFINITY; // (no exact root)
                            if (p == 2.0) lim = md * md;                // (the search's own limit)
                            n = brute_norm(&s, q, p, f, lim, want, k);
                        }
                        for (int off = 0; off < 2; off++) {
#if NBI_AVX2
                            nbi_avx2_off = off;
#endif
                            int32_t found = -1;
                            NB_CHECK_OK(nb_grid_knn_norm(g, q, p, f, md, got, k, &found));
                            if (!nbo_same_neighbors(got, found, want, n)) {
                                fprintf(stderr,
                                        "  dim %d shape %d query %d p %g k %d off %d: %d found, "
                                        "%d wanted\n",
                                        dim, shape, j, p, k, off, found, n);
                                return 1;
                            }
                        }
                    }
            }
#if NBI_AVX2
            nbi_avx2_off = 0;
#endif
            if (release(g, &s, &counter)) return 1;
        }
    nbi_knn_index_use = 0;
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"shapes_against_brute_force", test_shapes_against_brute_force},
        {"filters_limits_ties", test_filters_limits_ties},
        {"rule_on_even_cells", test_rule_on_even_cells},
        {"batch_builds_the_index", test_batch_builds_the_index},
        {"far_queries_build_the_index", test_far_queries_build_the_index},
        {"allocation_failing_in_turn", test_allocation_failing_in_turn},
        {"rebuild_and_steady_state", test_rebuild_and_steady_state},
        {"threads_right_after_build", test_threads_right_after_build},
        {"threads_far_balls", test_threads_far_balls},
        {"heavy_tail_depth", test_heavy_tail_depth},
        {"wide_copies", test_wide_copies},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
