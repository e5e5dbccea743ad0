// SPDX-License-Identifier: MIT
// The kNN index on points far closer together than its codes' unit: a dense core inside a wide
// box (a heavy-tailed set's centre, a tight cluster far from the rest), where thousands of points
// share one code. The index must still split them in space (nbi_ix_order_runs): a point of the
// core lies in the boxes of about one leaf, not of every leaf of the core. And its answers
// against brute force there, with filters (whose bits move with the points), 2D and 3D; and the
// nearest neighbour (k = 1) through the index where a hashed grid's codes are coarser than its
// cells, or where its cells are crowded.
#include "grid_internal.h" // the index's state (nbi_grid_knn_lazy)
#include "knn_index.h"
#include "nb_oracle.h"
#include "nb_test.h"

#include <nearby/grid.h>

#include <math.h>

enum { CORE = 4000, HALO = 2000 };

// CORE points in a cube of edge `core` at the origin, HALO spread over [-1e6, 1e6]^dim,
// shuffled together; categories 1 << (i % 3), masks all.
static nboSet make_core(int dim, double core)
{
    nboSet s = nbo_set_new(CORE + HALO, dim);
    s.cat = (uint32_t *)nbo_xalloc((size_t)s.n * sizeof *s.cat);
    s.mask = (uint32_t *)nbo_xalloc((size_t)s.n * sizeof *s.mask);
    for (int32_t i = 0; i < s.n; i++) {
        const bool in_core = nbt_int(CORE + HALO) < CORE;
        for (int a = 0; a < dim; a++)
            s.p[(size_t)i * (size_t)dim + (size_t)a] =
                in_core ? nbt_range(0.0, core) : nbt_range(-1e6, 1e6);
        s.cat[i] = 1u << (i % 3);
        s.mask[i] = ~0u;
    }
    return s;
}

// How many leaves' boxes hold the point q.
static int32_t leaves_holding(const nbiKnnIndex *ix, const double *q)
{
    const nbiKnnNode *node = (const nbiKnnNode *)ix->node.ptr;
    int32_t held = 0;
    for (int32_t t = 0; t < ix->nnodes; t++) {
        if (node[t].left == 0) continue;
        const double *cb = (const double *)ix->box.ptr + (size_t)t * 4 * (size_t)ix->dim;
        for (int side = 0; side < 2; side++) {
            if (node[node[t].left + side].left != 0) continue; // an inner child
            bool in = true;
            for (int a = 0; a < ix->dim; a++)
                in = in && cb[4 * a + side] <= q[a] && q[a] <= cb[4 * a + 2 + side];
            held += in;
        }
    }
    return held;
}

// path_bits: the k-d splits recorded as codes before exact medians take over (0: all medians).
static int core_is_split(int path_bits)
{
    nbi_knn_path_bits = path_bits;
    for (int dim = 2; dim <= 3; dim++) {
        nboSet s = make_core(dim, 1e-6);
        nbGridDesc desc = {0};
        desc.dim = dim;
        nbGrid *g = NULL;
        NB_CHECK_OK(nb_grid_create(&desc, &g));
        nbPoints pts = {0};
        pts.data = s.p;
        pts.count = s.n;
        pts.dim = dim;
        NB_CHECK_OK(nb_grid_build(g, &pts, 5e4));
        nbi_knn_index_use = 1;
        nbNeighbor got[8];
        int32_t found = 0;
        const double origin[3] = {0, 0, 0};
        NB_CHECK_OK(nb_grid_knn(g, origin, NB_FILTER_ALL, (double)INFINITY, got, 8, &found));
#if NBI_KNN_INDEX
        const nbiKnnLazy *z = nbi_grid_knn_lazy(g);
        NB_CHECK(atomic_load(&z->state) == NBI_KNN_READY);
        int64_t held = 0;
        const int queries = 200;
        for (int j = 0; j < queries; j++) {
            const double *p = s.p + (size_t)nbt_int(s.n) * (size_t)dim;
            if (!(fabs(p[0]) < 1.0)) { // a core point wanted: draw again
                j--;
                continue;
            }
            held += leaves_holding(&z->ix, p);
        }
        // split in space: about one leaf (a point on a split plane may lie in two); left in
        // the order the points came, each of the core's ~125 leaves would hold nearly any
        if (held > 3 * queries) {
            fprintf(stderr, "  %dD: a core point lies in %.1f leaves' boxes on average\n", dim,
                    (double)held / queries);
            return 1;
        }
#endif
        nbi_knn_index_use = 0;
        nb_grid_destroy(g);
        nbo_set_free(&s);
    }
    nbi_knn_path_bits = 48;
    return 0;
}

static int test_core_is_split(void)
{
    return core_is_split(48) || core_is_split(2) || core_is_split(0);
}

static int core_against_brute_force(int path_bits)
{
    nbi_knn_path_bits = path_bits;
    const double cores[3] = {1e-6, 1e-3, 0.0}; // 0: every core point at one place
    for (int dim = 2; dim <= 3; dim++)
        for (int c = 0; c < 3; c++)
            for (int use = path_bits == 48 ? -1 : 1; use <= 1; use++) { // (the walk: once)
                nboSet s = make_core(dim, cores[c]);
                nbGridDesc desc = {0};
                desc.dim = dim;
                nbGrid *g = NULL;
                NB_CHECK_OK(nb_grid_create(&desc, &g));
                nbPoints pts = {s.p, s.n, dim, 0, s.cat, 0, s.mask, 0};
                NB_CHECK_OK(nb_grid_build(g, &pts, 5e4));
                nbi_knn_index_use = use;
                for (int j = 0; j < 60; j++) {
                    double q[3] = {0, 0, 0};
                    const double *p = s.p + (size_t)nbt_int(s.n) * (size_t)dim;
                    for (int a = 0; a < dim; a++)
                        q[a] = j % 3 == 0   ? p[a]
                               : j % 3 == 1 ? p[a] + cores[c] * nbt_gauss()
                                            : nbt_range(-10.0, 10.0);
                    const int32_t ks[4] = {1, 8, 33, 150};
                    const int32_t k = ks[j % 4];
                    const nbFilter f = j % 5 == 4 ? (nbFilter){~0u, 2u} : NB_FILTER_ALL;
                    int32_t want = 0, found = -1;
                    nbNeighbor *all = nbo_knn_filtered(&s, q, k, f, &want);
                    nbNeighbor *got = (nbNeighbor *)nbo_xalloc((size_t)k * sizeof *got);
                    NB_CHECK_OK(nb_grid_knn(g, q, f, (double)INFINITY, got, k, &found));
                    if (!nbo_same_neighbors(got, found, all, want)) {
                        fprintf(stderr, "  %dD core %g index %d query %d k %d\n", dim, cores[c],
                                use, j, k);
                        return 1;
                    }
                    free(got);
                    free(all);
                }
                nbi_knn_index_use = 0;
                nb_grid_destroy(g);
                nbo_set_free(&s);
            }
    nbi_knn_path_bits = 48;
    return 0;
}

// The core's k-d splits recorded as second-level codes (the default), and past a few levels
// (2) or from the start (0) by exact medians at the middle.
static int test_core_against_brute_force(void)
{
    return core_against_brute_force(48) || core_against_brute_force(2) ||
           core_against_brute_force(0);
}

// On a grid whose cells are far smaller than the box (a radius of 1e-3 over 2e6: 2e9 cells an
// axis, past the hashed layout's 2^21 code steps in 3D and 2^32 in 2D), many cells share a
// code, and the cell walk would scan the whole core for one nearest neighbour: k = 1 goes
// through the index too, and answers exactly.
static int test_nearest_on_coarse_codes(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        nboSet s = make_core(dim, 1.0);
        nbGridDesc desc = {0};
        desc.dim = dim;
        nbGrid *g = NULL;
        NB_CHECK_OK(nb_grid_create(&desc, &g));
        nbPoints pts = {s.p, s.n, dim, 0, s.cat, 0, s.mask, 0};
        NB_CHECK_OK(nb_grid_build(g, &pts, dim == 3 ? 1e-3 : 1e-6));
        nbGridInfo info;
        NB_CHECK_OK(nb_grid_info(g, &info));
        NB_CHECK(info.hashed);
        for (int j = 0; j < 40; j++) {
            double q[3] = {0, 0, 0};
            const double *p = s.p + (size_t)nbt_int(s.n) * (size_t)dim;
            for (int a = 0; a < dim; a++) q[a] = j % 2 == 0 ? p[a] : p[a] + 0.01 * nbt_gauss();
            const nbFilter f = j % 5 == 4 ? (nbFilter){~0u, 4u} : NB_FILTER_ALL;
            int32_t want = 0, found = -1;
            nbNeighbor *all = nbo_knn_filtered(&s, q, 1, f, &want);
            nbNeighbor got[1];
            NB_CHECK_OK(nb_grid_knn(g, q, f, (double)INFINITY, got, 1, &found));
            NB_CHECK(nbo_same_neighbors(got, found, all, want));
            free(all);
        }
#if NBI_KNN_INDEX
        NB_CHECK(atomic_load(&nbi_grid_knn_lazy(g)->state) == NBI_KNN_READY);
#endif
        nb_grid_destroy(g);
        nbo_set_free(&s);
    }
    return 0;
}

// On cells far larger than the core (a dense grid of 20 cells an axis, the core's 4000 points in
// one; the core wide enough that its points' codes differ, as crowding by near-duplicates makes
// a 2D grid keep its walk), a point's cell holds thousands on average: k = 1 goes through the
// index, exactly; and on evenly filled cells it keeps the walk (the index is not built).
static int test_nearest_in_crowded_cells(void)
{
    for (int dim = 2; dim <= 3; dim++)
        for (int crowded = 0; crowded < 2; crowded++) {
            nboSet s = crowded ? make_core(dim, 1000.0) : nbo_set_new(CORE + HALO, dim);
            for (int32_t i = 0; !crowded && i < s.n * dim; i++) s.p[i] = nbt_range(0.0, 100.0);
            nbGridDesc desc = {0};
            desc.dim = dim;
            nbGrid *g = NULL;
            NB_CHECK_OK(nb_grid_create(&desc, &g));
            nbPoints pts = {s.p, s.n, dim, 0, s.cat, 0, s.mask, 0};
            NB_CHECK_OK(nb_grid_build(g, &pts, crowded ? 1e5 : 5.0));
            nbGridInfo info;
            NB_CHECK_OK(nb_grid_info(g, &info));
            NB_CHECK(!info.hashed);
            for (int j = 0; j < 40; j++) {
                double q[3] = {0, 0, 0};
                const double *p = s.p + (size_t)nbt_int(s.n) * (size_t)dim;
                for (int a = 0; a < dim; a++) q[a] = j % 2 == 0 ? p[a] : p[a] + 0.01 * nbt_gauss();
                int32_t want = 0, found = -1;
                nbNeighbor *all = nbo_knn(&s, q, 1, &want);
                nbNeighbor got[1];
                NB_CHECK_OK(nb_grid_knn(g, q, NB_FILTER_ALL, (double)INFINITY, got, 1, &found));
                NB_CHECK(nbo_same_neighbors(got, found, all, want));
                free(all);
            }
#if NBI_KNN_INDEX
            const int state = atomic_load(&nbi_grid_knn_lazy(g)->state);
            NB_CHECK(crowded ? state == NBI_KNN_READY : state == NBI_KNN_STALE);
#endif
            nb_grid_destroy(g);
            nbo_set_free(&s);
        }
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"core_is_split", test_core_is_split},
        {"core_against_brute_force", test_core_against_brute_force},
        {"nearest_on_coarse_codes", test_nearest_on_coarse_codes},
        {"nearest_in_crowded_cells", test_nearest_in_crowded_cells},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
