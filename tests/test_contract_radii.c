// SPDX-License-Identifier: MIT
// The error contract of the counts at many radii (nb_grid_count_pairs_radii,
// nb_grid_count_cross_pairs_radii, nb_grid_sum_pairs_radii, nb_grid_sum_cross_pairs_radii):
// pointers first (the output zeroed when given), then finiteness (a NaN or infinite radius or
// weight, a NaN p), then ranges (a negative nradii, p < 1, a negative radius, radii that
// decrease, grids of different dims or periods), then memory (every allocation failed in turn:
// NB_ERR_OUT_OF_MEMORY, nothing leaked, the output zeroed); -0.0 as a radius gives what 0.0
// gives; the grids answer as before afterwards.
#include "nb_test.h"

#include <nearby/grid.h>

#include <math.h>

enum { N = 80, M = 3 };

#define D_NAN ((double)NAN)
#define D_INF ((double)INFINITY)

static nbGrid *grid_of(int dim, double period, const nbAllocator *alloc)
{
    nbGridDesc desc = {0};
    desc.dim = dim;
    desc.allocator = alloc;
    for (int a = 0; a < dim; a++) desc.period[a] = period;
    nbGrid *g = NULL;
    if (nb_grid_create(&desc, &g) != NB_OK) return NULL;
    double p[N * 3];
    for (int i = 0; i < N * dim; i++) p[i] = nbt_range(0.0, 1.0);
    const nbPoints pts = {p, N, dim, 0, NULL, 0, NULL, 0};
    if (nb_grid_build(g, &pts, 0.2) != NB_OK) {
        nb_grid_destroy(g);
        return NULL;
    }
    return g;
}

// Calls form `f` (0: count, 1: count cross, 2: sum, 3: sum cross) with a, b, weights, radii,
// nradii, p into counts or sums (whichever the form fills; the other ignored).
static nbStatus call(int f, const nbGrid *a, const nbGrid *b, const double *w, const double *r,
                     int32_t m, double p, int64_t *counts, double *sums)
{
    switch (f) {
    case 0: return nb_grid_count_pairs_radii(a, r, m, p, true, counts);
    case 1: return nb_grid_count_cross_pairs_radii(a, b, r, m, p, true, counts);
    case 2: return nb_grid_sum_pairs_radii(a, w, r, m, p, true, sums);
    default: return nb_grid_sum_cross_pairs_radii(a, b, w, w, r, m, p, true, sums);
    }
}

// The output of form f zeroed (or untouched where it was not given).
static bool zeroed(int f, const int64_t *counts, const double *sums)
{
    for (int k = 0; k < M; k++)
        if (f < 2 ? counts[k] != 0 : sums[k] != 0.0) return false;
    return true;
}

static int test_contract(void)
{
    nbGrid *a = grid_of(2, 0.0, NULL), *b = grid_of(2, 0.0, NULL), *c = grid_of(3, 0.0, NULL);
    nbGrid *per = grid_of(2, 1.0, NULL), *per2 = grid_of(2, 2.0, NULL);
    NB_CHECK(a != NULL && b != NULL && c != NULL && per != NULL && per2 != NULL);
    double w[N];
    for (int i = 0; i < N; i++) w[i] = 1.0 + i;
    const double r[M] = {0.1, 0.3, 0.9};
    int64_t want[M], counts[M];
    double sums[M];
    NB_CHECK_OK(nb_grid_count_pairs_radii(a, r, M, 2.0, true, want));
    for (int f = 0; f < 4; f++) {
        const nbGrid *other = f % 2 == 1 ? b : NULL;
#define RESET()                                                                                    \
    do {                                                                                           \
        for (int k = 0; k < M; k++) {                                                              \
            counts[k] = -777;                                                                      \
            sums[k] = -777.0;                                                                      \
        }                                                                                          \
    } while (0)
        // pointers: the output zeroed whenever it is given
        RESET();
        NB_CHECK_STATUS(call(f, NULL, other, w, r, M, 2.0, counts, sums), NB_ERR_NULL_ARG);
        NB_CHECK(zeroed(f, counts, sums));
        RESET();
        NB_CHECK_STATUS(call(f, a, other, w, NULL, M, D_NAN, counts, sums), NB_ERR_NULL_ARG);
        NB_CHECK(zeroed(f, counts, sums));
        NB_CHECK_STATUS(call(f, a, other, w, r, M, 2.0, NULL, NULL), NB_ERR_NULL_ARG);
        if (f % 2 == 1)
            NB_CHECK_STATUS(call(f, a, NULL, w, r, M, -1.0, counts, sums), NB_ERR_NULL_ARG);
        // finiteness, before ranges
        const double nan_r[M] = {0.1, D_NAN, -1.0}, inf_r[M] = {0.1, 0.3, D_INF};
        RESET();
        NB_CHECK_STATUS(call(f, a, other, w, nan_r, M, 2.0, counts, sums), NB_ERR_NOT_FINITE);
        NB_CHECK(zeroed(f, counts, sums));
        NB_CHECK_STATUS(call(f, a, other, w, inf_r, M, 0.5, counts, sums), NB_ERR_NOT_FINITE);
        NB_CHECK_STATUS(call(f, a, other, w, r, M, D_NAN, counts, sums), NB_ERR_NOT_FINITE);
        if (f >= 2) {
            double bad[N];
            for (int i = 0; i < N; i++) bad[i] = i == N - 1 ? D_INF : 1.0;
            NB_CHECK_STATUS(call(f, a, other, bad, r, M, 0.5, counts, sums), NB_ERR_NOT_FINITE);
            bad[N - 1] = D_NAN;
            NB_CHECK_STATUS(call(f, a, other, bad, r, M, 2.0, counts, sums), NB_ERR_NOT_FINITE);
        }
        // ranges
        const double neg_r[M] = {-0.1, 0.3, 0.9}, down_r[M] = {0.3, 0.1, 0.9};
        RESET();
        NB_CHECK_STATUS(call(f, a, other, w, neg_r, M, 2.0, counts, sums), NB_ERR_OUT_OF_RANGE);
        NB_CHECK(zeroed(f, counts, sums));
        NB_CHECK_STATUS(call(f, a, other, w, down_r, M, 2.0, counts, sums), NB_ERR_OUT_OF_RANGE);
        NB_CHECK_STATUS(call(f, a, other, w, r, M, 0.999, counts, sums), NB_ERR_OUT_OF_RANGE);
        NB_CHECK_STATUS(call(f, a, other, w, r, M, -D_INF, counts, sums), NB_ERR_OUT_OF_RANGE);
        NB_CHECK_STATUS(call(f, a, other, w, r, -1, 2.0, counts, sums), NB_ERR_OUT_OF_RANGE);
        NB_CHECK_STATUS(call(f, a, other, w, NULL, -1, 2.0, NULL, NULL), NB_ERR_OUT_OF_RANGE);
        if (f % 2 == 1) {
            NB_CHECK_STATUS(call(f, a, c, w, r, M, 2.0, counts, sums), NB_ERR_OUT_OF_RANGE);
            NB_CHECK_STATUS(call(f, a, per, w, r, M, 2.0, counts, sums), NB_ERR_OUT_OF_RANGE);
            NB_CHECK_STATUS(call(f, per, per2, w, r, M, 2.0, counts, sums), NB_ERR_OUT_OF_RANGE);
        }
        // accepted edges: no radii (NULL arrays), -0.0, p = INFINITY, a periodic radius past
        // half the period
        NB_CHECK_OK(call(f, a, other, w, NULL, 0, 2.0, NULL, NULL));
        const double zero_r[M] = {-0.0, 0.0, 0.3};
        NB_CHECK_OK(call(f, a, other, NULL, zero_r, M, 2.0, counts, sums));
        if (f < 2)
            NB_CHECK(counts[0] == counts[1]);
        else
            NB_CHECK(sums[0] == sums[1]);
        NB_CHECK_OK(call(f, a, other, w, r, M, D_INF, counts, sums));
        NB_CHECK_OK(call(f, per, f % 2 == 1 ? per : NULL, w, (const double[M]){0.2, 0.6, 2.0}, M,
                         2.0, counts, sums));
        if (f == 0) NB_CHECK(counts[M - 1] == (int64_t)N * (N - 1) / 2);
#undef RESET
    }
    // the grids answer as before
    NB_CHECK_OK(nb_grid_count_pairs_radii(a, r, M, 2.0, true, counts));
    for (int k = 0; k < M; k++) NB_CHECK(counts[k] == want[k]);
    NB_CHECK_OK(nb_grid_validate(a));
    nb_grid_destroy(a);
    nb_grid_destroy(b);
    nb_grid_destroy(c);
    nb_grid_destroy(per);
    nb_grid_destroy(per2);
    return 0;
}

// Every allocation failed in turn: NB_ERR_OUT_OF_MEMORY, nothing leaked, the output zeroed; and
// the answer once none fails.
static int test_out_of_memory(void)
{
    nbtAlloc st = {0};
    const nbAllocator al = nbt_allocator(&st);
    nbGrid *a = grid_of(3, 0.0, &al), *b = grid_of(3, 0.0, &al);
    NB_CHECK(a != NULL && b != NULL);
    double w[N];
    for (int i = 0; i < N; i++) w[i] = 0.5;
    const double r[M] = {0.1, 0.3, 0.9};
    for (int f = 0; f < 4; f++) {
        int64_t counts[M], want[M];
        double sums[M];
        st.fail_at = 0;
        NB_CHECK_OK(call(f, a, b, w, r, M, 2.0, want, sums));
        for (int64_t k = 1;; k++) {
            const int64_t live = st.live_bytes;
            st.allocs = 0;
            st.fail_at = k;
            for (int j = 0; j < M; j++) {
                counts[j] = -777;
                sums[j] = -777.0;
            }
            const nbStatus s = call(f, a, b, w, r, M, 2.0, counts, sums);
            NB_CHECK(st.live_bytes == live && !st.size_mismatch && !st.misaligned);
            if (s == NB_OK) break;
            NB_CHECK(s == NB_ERR_OUT_OF_MEMORY);
            NB_CHECK(zeroed(f, counts, sums));
        }
        st.fail_at = 0;
    }
    nb_grid_destroy(a);
    nb_grid_destroy(b);
    NB_CHECK(st.live_bytes == 0);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"contract", test_contract},
        {"out_of_memory", test_out_of_memory},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
