// SPDX-License-Identifier: MIT
// nb_grid_pairs_wide on large outputs, serially: the first WIDE_CACHED rows go through the cache,
// the rest by streaming stores (src/grid_queries.c). Against nb_grid_pairs (the same pairs in the
// same order) and brute force (the same set), in 2D and 3D, on uniform points and on clusters of
// duplicates (large, odd-sized blocks from the kernels); capacities on both sides of the switch
// to streaming and of the total, with nothing written past them; rows at an address that is not
// 16-byte aligned (no streaming); and no allocation by the call.
#include "nb_oracle.h"
#include "nb_test.h"

#include <nearby/grid.h>

enum { WIDE_CACHED = 32768 }; // NBI_WIDE_CACHED in src/grid_queries.c: rows before streaming

static const int64_t SENTINEL = -7;

// The rows at out (cap of them, then 3 sentinels) against want (n32 nbPairs); 0 or 1.
static int check_rows(const int64_t *out, int64_t cap, const nbPair *want, int64_t n32)
{
    const int64_t rows = cap < n32 ? cap : n32;
    for (int64_t k = 0; k < rows; k++)
        NB_CHECK(out[2 * k] == want[k].i && out[2 * k + 1] == want[k].j);
    for (int64_t e = 2 * rows; e < 2 * (cap + 3); e++) NB_CHECK(out[e] == SENTINEL);
    return 0;
}

// Every capacity of interest on one grid, into rows 16-byte aligned and (shift 1) 8 bytes off.
static int wide_capacities(const nbGrid *g, const nboSet *s, double r, nbtAlloc *counted)
{
    int64_t n32 = 0;
    NB_CHECK_OK(nb_grid_count_pairs(g, r, &n32));
    NB_CHECK(n32 > 2 * WIDE_CACHED); // the streamed rows are the most of them
    nbPair *want = nbo_xalloc((size_t)n32 * sizeof *want);
    int64_t found = -1;
    NB_CHECK_OK(nb_grid_pairs(g, r, want, n32, &found));
    NB_CHECK(found == n32);
    // Brute force: the same set of pairs.
    int64_t nb = 0;
    nbPair *brute = nbo_pairs(s, r, &nb);
    nbPair *sorted = nbo_xalloc((size_t)n32 * sizeof *sorted);
    memcpy(sorted, want, (size_t)n32 * sizeof *sorted);
    nbo_sort_pairs(sorted, n32);
    NB_CHECK(nbo_same_pairs(sorted, n32, brute, nb));
    free(brute);
    free(sorted);

    int64_t *buf = nbo_xalloc((size_t)(n32 + 5) * 2 * sizeof *buf + 16);
    const int64_t caps[] = {0,
                            1,
                            WIDE_CACHED - 1,
                            WIDE_CACHED,
                            WIDE_CACHED + 1,
                            WIDE_CACHED + 1023,
                            n32 / 2 + 1,
                            n32 - 1,
                            n32,
                            n32 + 1};
    for (int shift = 0; shift < 2; shift++) {
        // buf is malloc'd, so 16-byte aligned: shift 1 puts the rows 8 bytes off.
        int64_t *out = buf + shift;
        for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
            const int64_t cap = caps[c];
            for (int64_t e = 0; e < 2 * (cap + 3); e++) out[e] = SENTINEL;
            const int64_t allocs = counted->allocs;
            NB_CHECK_STATUS(nb_grid_pairs_wide(g, r, out, cap, &found),
                            n32 > cap ? NB_ERR_BUFFER_TOO_SMALL : NB_OK);
            NB_CHECK(counted->allocs == allocs); // nothing allocated, nothing to fail
            NB_CHECK(found == n32);
            if (check_rows(out, cap, want, n32)) {
                fprintf(stderr, "pairs_wide_stream: capacity %" PRId64 " of %" PRId64 ", rows %s\n",
                        cap, n32, shift ? "8 bytes off" : "aligned");
                return 1;
            }
        }
    }
    free(buf);
    free(want);
    return 0;
}

static int test_large_outputs(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        for (int shape = 0; shape < 2; shape++) {
            // Uniform: about 100k pairs; clustered: groups of 40 duplicates (780 pairs each,
            // and their neighbours'), as dups2d has.
            const int32_t n = shape == 0 ? 10000 : 6000;
            nboSet s = nbo_set_new(n, dim);
            const double side = dim == 2 ? 50.0 : 13.0, r = dim == 2 ? 1.3 : 1.0;
            double c[3] = {0, 0, 0};
            for (int32_t i = 0; i < n; i++) {
                if (shape == 0 || i % 40 == 0)
                    for (int a = 0; a < dim; a++) c[a] = nbt_range(0.0, side);
                for (int a = 0; a < dim; a++) s.p[(size_t)i * (size_t)dim + (size_t)a] = c[a];
            }
            const nbPoints pts = nbo_points(&s);
            nbtAlloc counted = {0};
            const nbAllocator al = nbt_allocator(&counted);
            nbGridDesc d = {0};
            d.dim = dim;
            d.allocator = &al;
            nbGrid *g = NULL;
            NB_CHECK_OK(nb_grid_create(&d, &g));
            NB_CHECK_OK(nb_grid_build(g, &pts, r));
            const int bad = wide_capacities(g, &s, r, &counted);
            nb_grid_destroy(g);
            nbo_set_free(&s);
            if (bad) {
                fprintf(stderr, "pairs_wide_stream: dim %d %s\n", dim,
                        shape == 0 ? "uniform" : "duplicates");
                return 1;
            }
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"pairs_wide_large_outputs", test_large_outputs},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
