// SPDX-License-Identifier: MIT
// The grid's category/mask filters and cross pairs against the brute-force oracle: filtered all
// pairs, radius, box and kNN with a query filter, set A against set B (different cell sizes and
// layouts, one side filtered, the same grid twice), filter bits read through their own strides
// from an array of structs, and the bad-input cases of the new fields.
#include <nearby/grid.h>

#include "nb_oracle.h"
#include "nb_test.h"

#include <math.h>

// A unit in the caller's own layout: coordinates and filter bits side by side.
typedef struct Unit {
    double pos[3];
    uint32_t cat, mask;
} Unit;

// Random filter bits over 3 groups: one category bit (sometimes none), a random mask.
static void random_bits(nboSet *s)
{
    nbo_set_add_filters(s);
    for (int32_t i = 0; i < s->n; i++) {
        s->cat[i] = nbt_int(16) == 0 ? 0u : 1u << nbt_int(3);
        s->mask[i] = (uint32_t)nbt_int(8);
    }
}

// n points: uniform in [0, side)^dim, or in a few tight clusters, or spread far apart (hashed),
// or uniform in a box of about 16 cells of `side` a point (ranked).
static nboSet random_set(int32_t n, int dim, int kind, double side)
{
    nboSet s = nbo_set_new(n, dim);
    double centre[4][3];
    for (int c = 0; c < 4; c++)
        for (int d = 0; d < 3; d++) centre[c][d] = nbt_range(-side, side);
    for (int32_t i = 0; i < n; i++)
        for (int d = 0; d < dim; d++) {
            double *x = &s.p[(size_t)i * (size_t)dim + (size_t)d];
            if (kind == 0) *x = nbt_range(0.0, side);
            if (kind == 1) *x = centre[i % 4][d] + 0.3 * nbt_gauss();
            if (kind == 2) *x = nbt_range(-1e6, 1e6) + (i % 3 == 0 ? 0.0 : 1e9);
            if (kind == 3)
                *x = side * nbt_range(-0.5, 0.5) * (dim == 2 ? sqrt(16.0 * n) : cbrt(16.0 * n));
        }
    return s;
}

// The set as an array of Units (the caller's layout), and the nbPoints view reading it.
static Unit *to_units(const nboSet *s, nbPoints *view)
{
    Unit *u = (Unit *)calloc((size_t)s->n + 1, sizeof(Unit));
    for (int32_t i = 0; i < s->n; i++) {
        memcpy(u[i].pos, nbo_pt(s, i), (size_t)s->dim * sizeof(double));
        u[i].cat = nbo_cat(s, i);
        u[i].mask = nbo_mask(s, i);
    }
    nbPoints v = {.data = u[0].pos, .count = s->n, .dim = s->dim, .stride = sizeof(Unit)};
    if (s->cat != NULL) {
        v.category = &u[0].cat;
        v.category_stride = sizeof(Unit);
    }
    if (s->mask != NULL) {
        v.mask = &u[0].mask;
        v.mask_stride = sizeof(Unit);
    }
    *view = v;
    return u;
}

static nbGrid *grid_of(const nboSet *s, double cell, double r)
{
    nbGridDesc desc = {0};
    desc.cell_size = cell;
    desc.dim = s->dim;
    nbGrid *g = NULL;
    if (nb_grid_create(&desc, &g) != NB_OK) return NULL;
    nbPoints view;
    Unit *u = to_units(s, &view);
    const nbStatus st = nb_grid_build(g, &view, r);
    free(u);
    if (st != NB_OK || nb_grid_validate(g) != NB_OK) {
        nb_grid_destroy(g);
        return NULL;
    }
    return g;
}

// The buffer, count and visit forms of one pair call agree with the oracle and with each other
// (same order), and a short buffer or an early stop gives a prefix of that order. cross: a vs b.
static int check_pair_forms(const nbGrid *ga, const nbGrid *gb, double r, const nbPair *want,
                            int64_t want_n)
{
    const bool cross = gb != NULL;
    nbPair *got = (nbPair *)malloc((size_t)(want_n + 1) * sizeof(nbPair));
    int64_t found = -1, count = -1;
    const nbStatus st = cross ? nb_grid_cross_pairs(ga, gb, r, got, want_n + 1, &found)
                              : nb_grid_pairs(ga, r, got, want_n + 1, &found);
    if (st != NB_OK)
        fprintf(stderr, "  %s r=%.17g: %s, want %lld found %lld\n", cross ? "cross" : "pairs", r,
                nb_status_str(st), (long long)want_n, (long long)found);
    NB_CHECK_OK(st);
    NB_CHECK_OK(cross ? nb_grid_count_cross_pairs(ga, gb, r, &count)
                      : nb_grid_count_pairs(ga, r, &count));
    if (found != want_n || count != want_n)
        fprintf(stderr, "  %s r=%.17g: want %lld found %lld counted %lld\n",
                cross ? "cross" : "pairs", r, (long long)want_n, (long long)found,
                (long long)count);
    NB_CHECK(found == want_n && count == want_n);
    nboPairLog log = {NULL, 0, 0, 0};
    NB_CHECK_OK(cross ? nb_grid_visit_cross_pairs(ga, gb, r, nbo_log_pair, &log)
                      : nb_grid_visit_pairs(ga, r, nbo_log_pair, &log));
    NB_CHECK(nbo_same_pairs(log.p, log.n, got, found)); // same order as the buffer
    if (want_n > 2) { // a short buffer holds the prefix; an early stop visits the prefix
        nbPair *part = (nbPair *)malloc((size_t)(want_n / 2) * sizeof(nbPair));
        int64_t part_found = -1;
        NB_CHECK_STATUS(cross ? nb_grid_cross_pairs(ga, gb, r, part, want_n / 2, &part_found)
                              : nb_grid_pairs(ga, r, part, want_n / 2, &part_found),
                        NB_ERR_BUFFER_TOO_SMALL);
        NB_CHECK(part_found == want_n && nbo_same_pairs(part, want_n / 2, got, want_n / 2));
        nboPairLog early = {NULL, 0, 0, want_n / 3};
        NB_CHECK_OK(cross ? nb_grid_visit_cross_pairs(ga, gb, r, nbo_log_pair, &early)
                          : nb_grid_visit_pairs(ga, r, nbo_log_pair, &early));
        NB_CHECK(nbo_same_pairs(early.p, early.n, got, want_n / 3));
        free(early.p);
        free(part);
    }
    for (int64_t t = 0; t < found && !cross; t++) NB_CHECK(got[t].i < got[t].j);
    nbo_sort_pairs(got, found);
    NB_CHECK(nbo_same_pairs(got, found, want, want_n));
    free(log.p);
    free(got);
    return 0;
}

static nbFilter random_filter(void)
{
    nbFilter f = {nbt_int(8) == 0 ? 0u : 1u << nbt_int(3), (uint32_t)nbt_int(8)};
    return f;
}

// Radius, box and kNN with query filters against the oracle.
static int check_queries(const nbGrid *g, const nboSet *s, double r, double side)
{
    int32_t *got = (int32_t *)malloc(((size_t)s->n + 1) * sizeof(int32_t));
    nbNeighbor *nb = (nbNeighbor *)malloc(((size_t)s->n + 1) * sizeof(nbNeighbor));
    for (int q = 0; q < 20; q++) {
        const nbFilter f = q == 0 ? NB_FILTER_ALL : random_filter();
        double c[3], lo[3], hi[3];
        const int32_t pick = nbt_int(s->n);
        for (int d = 0; d < s->dim; d++) {
            c[d] = q % 2 ? nbo_pt(s, pick)[d] : nbt_range(-0.1 * side, 1.1 * side);
            lo[d] = c[d] - nbt_range(0.0, 2.0 * r);
            hi[d] = c[d] + nbt_range(0.0, 2.0 * r);
        }
        int32_t want_n = 0, found = -1;
        int32_t *want = nbo_radius_filtered(s, c, r, f, &want_n);
        NB_CHECK_OK(nb_grid_query_radius(g, c, r, f, got, s->n + 1, &found));
        nbo_sort_indices(got, found);
        NB_CHECK(nbo_same_indices(got, found, want, want_n));
        free(want);
        want = nbo_box_filtered(s, lo, hi, f, &want_n);
        NB_CHECK_OK(nb_grid_query_box(g, NBT_BOX(lo, hi, s->dim), f, got, s->n + 1, &found));
        nbo_sort_indices(got, found);
        NB_CHECK(nbo_same_indices(got, found, want, want_n));
        free(want);
        const int32_t k = 1 + nbt_int(12);
        nbNeighbor *wk = nbo_knn_filtered(s, c, k, f, &want_n);
        NB_CHECK_OK(nb_grid_knn(g, c, f, (double)INFINITY, nb, k, &found));
        NB_CHECK(nbo_same_neighbors(nb, found, wk, want_n)); // kNN order is the oracle's
        free(wk);
    }
    free(got);
    free(nb);
    return 0;
}

static int test_filtered_pairs_and_queries(void)
{
    for (int round = 0; round < 48; round++) {
        const int dim = 2 + round % 2, kind = (round / 2) % 4;
        const int32_t n = 50 + nbt_int(500);
        const double r = kind == 2 ? 3e5 : nbt_range(0.2, 1.5);
        const double cells[3] = {0.0, r / 3.0, 4.0 * r};
        const double cell = cells[(round / 8) % 3];
        const double side = kind == 3 ? (cell > 0.0 ? cell : r) : 10.0;
        nboSet s = random_set(n, dim, kind, side);
        random_bits(&s);
        if (round % 6 == 5) { // masks only, or categories only: the other is all bits
            uint32_t **drop = round % 12 == 5 ? &s.cat : &s.mask;
            free(*drop);
            *drop = NULL;
        }
        nbGrid *g = grid_of(&s, cell, r);
        NB_CHECK(g != NULL);
        nbGridInfo info;
        NB_CHECK_OK(nb_grid_info(g, &info));
        NB_CHECK(kind != 3 || info.ranked); // (tight clusters may be ranked too)
        int64_t want_n = 0;
        nbPair *want = nbo_pairs(&s, r, &want_n);
        if (check_pair_forms(g, NULL, r, want, want_n)) return 1;
        free(want);
        if (check_queries(g, &s, r, side)) return 1;
        nb_grid_destroy(g);
        nbo_set_free(&s);
    }
    return 0;
}

static int test_cross_pairs(void)
{
    for (int round = 0; round < 48; round++) {
        const int dim = 2 + round % 2, kind = (round / 2) % 4;
        const double r = kind == 2 ? 3e5 : nbt_range(0.2, 1.5), side = kind == 3 ? r : 10.0;
        nboSet a = random_set(20 + nbt_int(300), dim, kind, side);
        nboSet b = random_set(20 + nbt_int(300), dim, round % 3 == 0 ? 2 : kind, side);
        if (round % 4 == 1 || round % 4 == 3) random_bits(&a); // A filtered, B not; both; ...
        if (round % 4 == 2 || round % 4 == 3) random_bits(&b);
        const double ca[3] = {0.0, r / 2.5, 3.0 * r}, cb[3] = {0.0, 2.0 * r, r / 3.5};
        nbGrid *ga = grid_of(&a, ca[round % 3], r), *gb = grid_of(&b, cb[(round / 3) % 3], r);
        NB_CHECK(ga != NULL && gb != NULL);
        int64_t want_n = 0;
        nbPair *want = nbo_cross_pairs(&a, &b, r, &want_n);
        if (check_pair_forms(ga, gb, r, want, want_n)) return 1;
        free(want);
        // the same grid twice: two sets, every ordered (i, j), (i, i) included
        want = nbo_cross_pairs(&a, &a, r, &want_n);
        if (check_pair_forms(ga, ga, r, want, want_n)) return 1;
        free(want);
        nb_grid_destroy(ga);
        nb_grid_destroy(gb);
        nbo_set_free(&a);
        nbo_set_free(&b);
    }
    return 0;
}

// Pairs exactly r apart across the two sets are included; the cells of the two grids do not
// line up (different sizes, offsets, negative coordinates).
static int test_cross_pairs_boundaries(void)
{
    nboSet a = nbo_set_new(200, 2), b = nbo_set_new(200, 2);
    const double r = 0.75;
    for (int32_t i = 0; i < 200; i++) {
        a.p[2 * i] = -7.5 + 0.25 * (i % 20);
        a.p[2 * i + 1] = -2.0 + 0.25 * (i / 20);
        b.p[2 * i] = a.p[2 * i] + (i % 2 ? r : -r); // exactly r to the side (0.25 steps are exact)
        b.p[2 * i + 1] = a.p[2 * i + 1];
    }
    const double cells[4] = {0.0, 0.25, 0.7, 3.0};
    for (int ia = 0; ia < 4; ia++)
        for (int ib = 0; ib < 4; ib++) {
            nbGrid *ga = grid_of(&a, cells[ia], r), *gb = grid_of(&b, cells[ib], r);
            NB_CHECK(ga != NULL && gb != NULL);
            int64_t want_n = 0;
            nbPair *want = nbo_cross_pairs(&a, &b, r, &want_n);
            NB_CHECK(want_n >= 200); // at least each point and its partner
            if (check_pair_forms(ga, gb, r, want, want_n)) return 1;
            free(want);
            nb_grid_destroy(ga);
            nb_grid_destroy(gb);
        }
    nbo_set_free(&a);
    nbo_set_free(&b);
    return 0;
}

static int test_cross_pairs_bad_input(void)
{
    nboSet a = random_set(30, 2, 0, 3.0), c = random_set(30, 3, 0, 3.0);
    nboSet none = nbo_set_new(0, 2);
    nbGrid *ga = grid_of(&a, 0.0, 1.0), *gc = grid_of(&c, 0.0, 1.0), *ge = grid_of(&none, 0, 1);
    NB_CHECK(ga != NULL && gc != NULL && ge != NULL);
    nbPair out[4];
    int64_t found = -1;
    NB_CHECK_STATUS(nb_grid_cross_pairs(ga, gc, 1.0, out, 4, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(found == 0);
    found = -1;
    NB_CHECK_STATUS(nb_grid_cross_pairs(ga, ge, 1.0, out, 4, &found), NB_OK);
    NB_CHECK(found == 0);
    found = -1;
    NB_CHECK_STATUS(nb_grid_cross_pairs(ge, ga, 1.0, out, 4, &found), NB_OK);
    NB_CHECK(found == 0);
    NB_CHECK_STATUS(nb_grid_cross_pairs(ga, ga, (double)NAN, out, -1, &found), NB_ERR_NOT_FINITE);
    NB_CHECK_STATUS(nb_grid_cross_pairs(ga, ga, -1.0, out, 4, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_cross_pairs(ga, ga, 1.0, out, -1, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_cross_pairs(ga, NULL, 1.0, out, 4, &found), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_visit_cross_pairs(ga, ga, 1.0, NULL, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_OK(nb_grid_validate(ga));
    nb_grid_destroy(ga);
    nb_grid_destroy(gc);
    nb_grid_destroy(ge);
    nbo_set_free(&a);
    nbo_set_free(&c);
    nbo_set_free(&none);
    return 0;
}

// Filter bits need a stride that keeps them aligned; a refused build leaves the grid as it was.
// A later build without bits filters nothing (no stale bits).
static int test_filter_fields(void)
{
    nboSet s = random_set(64, 2, 0, 4.0);
    random_bits(&s);
    nbGrid *g = grid_of(&s, 0.0, 1.0);
    NB_CHECK(g != NULL);
    int64_t before = -1, want_n = 0;
    NB_CHECK_OK(nb_grid_count_pairs(g, 1.0, &before));
    nbPair *want = nbo_pairs(&s, 1.0, &want_n);
    NB_CHECK(before == want_n);
    free(want);
    nbPoints bad = nbo_points(&s);
    bad.category_stride = 2; // not a multiple of 4
    NB_CHECK_STATUS(nb_grid_build(g, &bad, 1.0), NB_ERR_OUT_OF_RANGE);
    bad = nbo_points(&s);
    bad.mask = (const uint32_t *)(const void *)((const char *)s.mask + 1); // misaligned
    NB_CHECK_STATUS(nb_grid_build(g, &bad, 1.0), NB_ERR_OUT_OF_RANGE);
    bad = nbo_points(&s);
    bad.category_stride = 6;
    NB_CHECK_STATUS(nb_grid_build(g, &bad, 1.0), NB_ERR_OUT_OF_RANGE);
    int64_t after = -1;
    NB_CHECK_OK(nb_grid_validate(g));
    NB_CHECK_OK(nb_grid_count_pairs(g, 1.0, &after));
    NB_CHECK(after == before);
    // rebuild without bits: every pair within r again
    nboSet plain = s;
    plain.cat = plain.mask = NULL;
    nbPoints view = nbo_points(&plain);
    NB_CHECK_OK(nb_grid_build(g, &view, 1.0));
    want = nbo_pairs(&plain, 1.0, &want_n);
    NB_CHECK_OK(nb_grid_count_pairs(g, 1.0, &after));
    NB_CHECK(after == want_n && want_n >= before);
    free(want);
    // a filter that no point without bits can pass: nothing found
    const double c[2] = {2.0, 2.0};
    int32_t found = -1, out[64];
    nbFilter closed = {0u, 0xFFFFFFFFu};
    NB_CHECK_OK(nb_grid_query_radius(g, c, 10.0, closed, out, 64, &found));
    NB_CHECK(found == 0);
    NB_CHECK_OK(nb_grid_query_radius(g, c, 10.0, NB_FILTER_ALL, out, 64, &found));
    NB_CHECK(found == 64);
    nb_grid_destroy(g);
    nbo_set_free(&s);
    return 0;
}

// Once a grid has been built with bits, reserve covers them: no later build allocates.
static int test_filtered_rebuilds_allocate_nothing(void)
{
    nbtAlloc counter = {0};
    nbAllocator al = nbt_allocator(&counter);
    nbGridDesc desc = {0};
    desc.allocator = &al;
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nboSet s = random_set(300, 2, 0, 10.0);
    random_bits(&s);
    nbPoints view = nbo_points(&s);
    view.count = 10;
    NB_CHECK_OK(nb_grid_build(g, &view, 1.0));
    NB_CHECK_OK(nb_grid_reserve(g, 300));
    const int64_t before = counter.allocs;
    for (int frame = 0; frame < 5; frame++) {
        for (int32_t i = 0; i < s.n; i++) s.p[2 * i] += nbt_range(-0.5, 0.5);
        view = nbo_points(&s);
        NB_CHECK_OK(nb_grid_build(g, &view, 1.0));
        int64_t count = 0;
        NB_CHECK_OK(nb_grid_count_pairs(g, 1.0, &count));
    }
    NB_CHECK(counter.allocs == before);
    nb_grid_destroy(g);
    NB_CHECK(counter.live_bytes == 0 && counter.allocs == counter.frees);
    nbo_set_free(&s);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"filtered_pairs_and_queries", test_filtered_pairs_and_queries},
        {"cross_pairs", test_cross_pairs},
        {"cross_pairs_boundaries", test_cross_pairs_boundaries},
        {"cross_pairs_bad_input", test_cross_pairs_bad_input},
        {"filter_fields", test_filter_fields},
        {"filtered_rebuilds_allocate_nothing", test_filtered_rebuilds_allocate_nothing},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
