// SPDX-License-Identifier: MIT
// The contract of nb_grid_knn_many (the k nearest of many queries at once): null pointers, then
// non-finite queries and max_distance, then ranges (k, max_distance, the view's count, dim and
// stride, a query outside a periodic box), then memory, each with found[] all zero, `out`
// untouched and the grid valid afterwards; no leak, and the allocator's failure at each of its
// allocations a clean NB_ERR_OUT_OF_MEMORY.
#include "nb_test.h"

#include <nearby/grid.h>

#include <math.h>

enum { N = 200, M = 50, K = 4 };

static double pts[N * 3], qs[M * 3];
static nbNeighbor out[N * K];
static int32_t found[N];

// A sentinel in every entry of out and found: a call that fails must leave out as it is and
// found all 0.
static void poison(void)
{
    for (int i = 0; i < N * K; i++) {
        out[i].index = -7;
        out[i].dist2 = -7.0;
    }
    for (int i = 0; i < N; i++) found[i] = -7;
}

static bool out_untouched(void)
{
    for (int i = 0; i < N * K; i++)
        if (out[i].index != -7 || out[i].dist2 != -7.0) return false;
    return true;
}

static bool found_zero(int32_t m)
{
    for (int32_t i = 0; i < m; i++)
        if (found[i] != 0) return false;
    return true;
}

static nbGrid *make_grid(int dim, bool periodic, const nbAllocator *alloc)
{
    nbGridDesc d = {0};
    d.dim = dim;
    d.allocator = alloc;
    if (periodic)
        for (int a = 0; a < dim; a++) d.period[a] = 1.0;
    nbGrid *g = NULL;
    if (nb_grid_create(&d, &g) != NB_OK) return NULL;
    const nbPoints p = {pts, N, dim, 0, NULL, 0, NULL, 0};
    if (nb_grid_build(g, &p, 0.1) != NB_OK) {
        nb_grid_destroy(g);
        return NULL;
    }
    return g;
}

// One failing call: the status, then found[] all zero (m entries), out untouched, grid valid.
#define EXPECT_FAIL(call, status, m)                                                               \
    do {                                                                                           \
        poison();                                                                                  \
        NB_CHECK_STATUS(call, status);                                                             \
        NB_CHECK(found_zero(m));                                                                   \
        NB_CHECK(out_untouched());                                                                 \
        NB_CHECK_OK(nb_grid_validate(g));                                                          \
    } while (0)

static int test_statuses(void)
{
    for (int i = 0; i < N * 3; i++) pts[i] = nbt_unit();
    for (int i = 0; i < M * 3; i++) qs[i] = nbt_unit();
    const double inf = (double)INFINITY, nan = (double)NAN;
    const nbFilter all = NB_FILTER_ALL;
    for (int dim = 2; dim <= 3; dim++) {
        nbGrid *g = make_grid(dim, false, NULL);
        NB_CHECK(g != NULL);
        nbPoints q = {qs, M, dim, 0, NULL, 0, NULL, 0};
        // pointers
        poison();
        NB_CHECK_STATUS(nb_grid_knn_many(NULL, &q, all, inf, out, K, found), NB_ERR_NULL_ARG);
        NB_CHECK(found[0] == -7 && out_untouched()); // no grid: nothing is known, nothing written
        EXPECT_FAIL(nb_grid_knn_many(g, &q, all, inf, out, K, NULL), NB_ERR_NULL_ARG, 0);
        EXPECT_FAIL(nb_grid_knn_many(g, &q, all, inf, NULL, K, found), NB_ERR_NULL_ARG, M);
        EXPECT_FAIL(nb_grid_knn_many(g, NULL, all, inf, NULL, K, found), NB_ERR_NULL_ARG, N);
        nbPoints nodata = q;
        nodata.data = NULL;
        EXPECT_FAIL(nb_grid_knn_many(g, &nodata, all, inf, out, K, found), NB_ERR_NULL_ARG, M);
        // finiteness, before any range
        const double bad[3] = {nan, inf, -inf};
        for (int b = 0; b < 3; b++) {
            const double keep = qs[(M - 1) * dim + dim - 1];
            qs[(M - 1) * dim + dim - 1] = bad[b]; // the last query's last coordinate
            EXPECT_FAIL(nb_grid_knn_many(g, &q, all, inf, out, K, found), NB_ERR_NOT_FINITE, M);
            EXPECT_FAIL(nb_grid_knn_many(g, &q, all, -1.0, out, -1, found), NB_ERR_NOT_FINITE, M);
            qs[(M - 1) * dim + dim - 1] = keep;
        }
        EXPECT_FAIL(nb_grid_knn_many(g, &q, all, nan, out, K, found), NB_ERR_NOT_FINITE, M);
        EXPECT_FAIL(nb_grid_knn_many(g, NULL, all, nan, out, -1, found), NB_ERR_NOT_FINITE, N);
        // ranges
        EXPECT_FAIL(nb_grid_knn_many(g, &q, all, inf, out, -1, found), NB_ERR_OUT_OF_RANGE, M);
        EXPECT_FAIL(nb_grid_knn_many(g, &q, all, -0.5, out, K, found), NB_ERR_OUT_OF_RANGE, M);
        EXPECT_FAIL(nb_grid_knn_many(g, NULL, all, inf, out, -1, found), NB_ERR_OUT_OF_RANGE, N);
        nbPoints v = q;
        v.count = -1;
        EXPECT_FAIL(nb_grid_knn_many(g, &v, all, inf, out, K, found), NB_ERR_OUT_OF_RANGE, 0);
        v = q;
        v.dim = dim == 2 ? 3 : 2;
        EXPECT_FAIL(nb_grid_knn_many(g, &v, all, inf, out, K, found), NB_ERR_OUT_OF_RANGE, M);
        v = q;
        v.stride = sizeof(double) * (size_t)dim - 8;
        EXPECT_FAIL(nb_grid_knn_many(g, &v, all, inf, out, K, found), NB_ERR_OUT_OF_RANGE, M);
        v.stride = sizeof(double) * (size_t)dim + 4;
        EXPECT_FAIL(nb_grid_knn_many(g, &v, all, inf, out, K, found), NB_ERR_OUT_OF_RANGE, M);
        // what succeeds: -0.0 and a zero max_distance, k = 0 with no buffer, no queries
        poison();
        qs[0] = -0.0;
        NB_CHECK_OK(nb_grid_knn_many(g, &q, all, 0.0, out, K, found));
        NB_CHECK_OK(nb_grid_knn_many(g, &q, all, inf, NULL, 0, found));
        NB_CHECK(found_zero(M));
        v = q;
        v.count = 0;
        v.data = NULL;
        NB_CHECK_OK(nb_grid_knn_many(g, &v, all, inf, NULL, K, found));
        NB_CHECK_OK(nb_grid_knn_many(g, &q, all, inf, out, K, found));
        for (int32_t i = 0; i < M; i++) NB_CHECK(found[i] == K);
        NB_CHECK_OK(nb_grid_validate(g));
        nb_grid_destroy(g);

        // a periodic box: queries in [0, P) only
        g = make_grid(dim, true, NULL);
        NB_CHECK(g != NULL);
        qs[dim] = 1.0; // query 1's x: on the box's face, outside [0, 1)
        EXPECT_FAIL(nb_grid_knn_many(g, &q, all, inf, out, K, found), NB_ERR_OUT_OF_RANGE, M);
        qs[dim] = -0.25;
        EXPECT_FAIL(nb_grid_knn_many(g, &q, all, inf, out, K, found), NB_ERR_OUT_OF_RANGE, M);
        qs[dim] = 0.25;
        NB_CHECK_OK(nb_grid_knn_many(g, &q, all, inf, out, K, found));
        nb_grid_destroy(g);
    }
    return 0;
}

// The allocator failing at each of the call's allocations: NB_ERR_OUT_OF_MEMORY with nothing
// written, then success; every allocation freed.
static int test_out_of_memory(void)
{
    for (int i = 0; i < N * 3; i++) pts[i] = nbt_unit();
    for (int i = 0; i < M * 3; i++) qs[i] = nbt_unit();
    for (int dim = 2; dim <= 3; dim++)
        for (int own = 0; own < 2; own++) {
            nbtAlloc a = {0};
            const nbAllocator al = nbt_allocator(&a);
            nbGrid *g = make_grid(dim, dim == 3, &al);
            NB_CHECK(g != NULL);
            const nbPoints q = {qs, M, dim, 0, NULL, 0, NULL, 0};
            const int32_t m = own ? N : M;
            int fails = 0;
            for (int64_t t = 1; t < 100; t++) { // the t-th allocation of this call fails
                a.fail_at = a.allocs + t;
                poison();
                const nbStatus st = nb_grid_knn_many(g, own ? NULL : &q, NB_FILTER_ALL,
                                                     (double)INFINITY, out, K, found);
                a.fail_at = 0;
                NB_CHECK_OK(nb_grid_validate(g));
                if (st == NB_OK) break;
                NB_CHECK(st == NB_ERR_OUT_OF_MEMORY && found_zero(m) && out_untouched());
                fails++;
            }
            NB_CHECK(fails >= 1);
            nb_grid_destroy(g);
            NB_CHECK(a.live_bytes == 0 && !a.size_mismatch);
        }
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"statuses", test_statuses},
        {"out_of_memory", test_out_of_memory},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
