// SPDX-License-Identifier: MIT
// The pair kernels (src/pair_kernels.h) on their own, against brute force: one cell's points
// against runs of candidates, in self mode (pairs as (min, max), own run after p) and cross mode
// (roles kept), with and without filter bits, into each sink mode (count, buffer, visit), for
// candidate sets that fit the gather lanes and sets far beyond them (the chunked path). Where
// the four-lane AVX2 kernels run, every case runs twice, with and without them, and the buffers
// must match pair for pair, in order.
#include "pair_kernels.h"

#include "nb_oracle.h"
#include "nb_test.h"

enum { MAXP = 3000, CELL_MAX = 300 };

// Side A (the cell) and side B (the candidates) as plain arrays; self mode uses A for both.
typedef struct Sides {
    double pa[MAXP * 3], pb[MAXP * 3];
    int32_t ia[MAXP], ib[MAXP];
    uint32_t ca[MAXP], ma[MAXP], cb[MAXP], mb[MAXP];
} Sides;

static bool collect(int32_t i, int32_t j, void *user)
{
    nboPairList *l = (nboPairList *)user;
    nbo_pair_push(l, i, j);
    return true;
}

static bool match(const Sides *s, bool flt, int32_t p, int32_t q)
{
    return !flt || nbo_match(s->ca[p], s->ma[p], s->cb[q], s->mb[q]);
}

// One case: cell [a0, a1) of side A; candidates: the own run (self mode) and spans, a random mix
// of runs over side B. `wrap`: distances by the minimum image, with a period of 2.0
// (the points' range) on each axis, or on a random subset of them (+inf in the kernels' per, 0
// in the oracle's period: no wrap).
static int run_case(Sides *s, int dim, bool flt, bool cross, bool wrap, int32_t na, int32_t nb,
                    double r)
{
    double per[3] = {(double)INFINITY, (double)INFINITY, (double)INFINITY};
    double period[3] = {0.0, 0.0, 0.0};
    const int wrapped = wrap ? 1 + nbt_int((1 << dim) - 1) : 0; // which axes wrap
    for (int d = 0; d < dim; d++)
        if (wrapped >> d & 1) per[d] = period[d] = 2.0;
    for (int32_t p = 0; p < na; p++) {
        for (int d = 0; d < dim; d++) s->pa[p * dim + d] = nbt_range(0.0, 2.0);
        s->ia[p] = 1000 + 7 * p; // caller indices unlike positions
        s->ca[p] = 1u << nbt_int(3);
        s->ma[p] = (uint32_t)nbt_int(8);
    }
    for (int32_t q = 0; q < nb; q++) {
        for (int d = 0; d < dim; d++) s->pb[q * dim + d] = nbt_range(0.0, 2.0);
        s->ib[q] = 50000 + 3 * q;
        s->cb[q] = 1u << nbt_int(3);
        s->mb[q] = (uint32_t)nbt_int(8);
    }
    if (!cross) { // one set: side B is side A
        memcpy(s->pb, s->pa, sizeof s->pa);
        memcpy(s->ib, s->ia, sizeof s->ia);
        memcpy(s->cb, s->ca, sizeof s->ca);
        memcpy(s->mb, s->ma, sizeof s->ma);
        nb = na;
    }
    // Self mode: the cell is A's first `cell` positions, its own run ends at self_end; the spans
    // cover the rest of B (so each unordered pair is met once). Cross: the cell is all of A.
    const int32_t cell = cross ? na : 1 + nbt_int(na < CELL_MAX ? na : CELL_MAX);
    const int32_t self_end = cross ? 0 : cell + nbt_int(na - cell + 1);
    nbiSpan spans[NBI_MAX_SPANS];
    int ns = 0;
    int32_t next = self_end;
    while (next < nb && ns < NBI_MAX_SPANS - 1) { // runs of random lengths
        const int32_t len = 1 + nbt_int(nb - next);
        spans[ns].b0 = next;
        spans[ns].b1 = next + len;
        next += len;
        ns++;
    }
    if (next < nb) { // the rest in one run
        spans[ns].b0 = next;
        spans[ns].b1 = nb;
        ns++;
    }
    // Expected: brute force over the same candidates.
    nboPairList want = {NULL, 0, 0};
    for (int32_t p = 0; p < cell; p++) {
        for (int32_t q = 0; q < nb; q++) {
            const bool in_own = !cross && q > p && q < self_end;
            const bool in_span = q >= self_end;
            if (!(in_own || in_span) || !match(s, flt, p, q)) continue;
            if (nbo_wrap_d2(s->pa + p * dim, s->pb + q * dim, dim, period) > r * r) continue;
            const int32_t a = s->ia[p], b = s->ib[q];
            if (cross)
                nbo_pair_push(&want, a, b);
            else
                nbo_pair_push(&want, a < b ? a : b, a < b ? b : a);
        }
    }
    int64_t want_n = 0;
    nbPair *w = nbo_pair_finish(&want, &want_n);
    nbo_sort_pairs(w, want_n);
    nbiPairCtx x = {s->pa, s->ia, flt ? s->ca : NULL,      flt ? s->ma : NULL,
                    s->pb, s->ib, flt ? s->cb : NULL,      flt ? s->mb : NULL,
                    r * r, NULL,  {per[0], per[1], per[2]}};
    static nbiPairSink sink;
    nbPair *first = NULL; // the buffer mode's output of the first pass, in order
#if defined(NBI_AVX2)
    // every kernel copy: the widest the CPU runs, then at most AVX2, then SSE2 (half the big
    // cases only the widest)
    const bool big_case = na > 60 || nb > 60;
    const int passes = big_case ? 1 + (na + nb) % 2 * 2 : 3;
#else
    const int passes = 1;
#endif
    for (int pass = 0; pass < passes * 3; pass++) {
        const int mode = pass % 3;
#if defined(NBI_AVX2)
        const int copy = pass / 3;
        nbi_avx2_off = copy == 2;
#if defined(NBI_AVX512)
        nbi_avx512_off = copy >= 1;
#endif
#endif
        nbPair *buf = (nbPair *)malloc((size_t)(want_n + 1) * sizeof(nbPair));
        nboPairList got = {NULL, 0, 0};
        nbi_pair_sink_init(&sink,
                           mode == 0   ? NBI_SINK_COUNT
                           : mode == 1 ? NBI_SINK_BUFFER
                                       : NBI_SINK_VISIT,
                           buf, want_n + 1, collect, &got);
        x.sink = &sink;
        nbiSpanList l;
        nbi_span_list_init(&l, &x, dim, cross);
        NB_CHECK(l.filtered == flt);
        l.wrap = wrap;
        l.a0 = 0;
        l.a1 = cell;
        l.self_end = cross ? 0 : self_end;
        l.ns = 0;
        for (int t = 0; t < ns; t++) nbi_spans_add(&l, spans[t].b0, spans[t].b1);
        nbi_spans_flush(&l);
        if (sink.found != want_n)
            fprintf(stderr,
                    "  dim %d flt %d cross %d wrap %d mode %d cell %d nb %d: want %lld got %lld\n",
                    dim, flt, cross, wrapped, mode, cell, nb, (long long)want_n,
                    (long long)sink.found);
        NB_CHECK(sink.found == want_n);
        if (mode == 1 && pass < 3) {
            first = (nbPair *)malloc((size_t)(want_n + 1) * sizeof(nbPair));
            memcpy(first, buf, (size_t)want_n * sizeof(nbPair));
        } else if (mode == 1) {
            NB_CHECK(memcmp(first, buf, (size_t)want_n * sizeof(nbPair)) == 0);
        }
        if (mode > 0) {
            int64_t n = 0;
            nbPair *g = mode == 1 ? buf : nbo_pair_finish(&got, &n);
            if (mode == 1) n = sink.found;
            nbo_sort_pairs(g, n);
            NB_CHECK(nbo_same_pairs(g, n, w, want_n));
            if (mode == 2) free(g);
        }
        free(buf);
    }
#if defined(NBI_AVX2)
    nbi_avx2_off = 0;
#if defined(NBI_AVX512)
    nbi_avx512_off = 0;
#endif
#endif
    free(first);
    free(w);
    return 0;
}

static int test_kernels_against_brute_force(void)
{
    static Sides s;
    for (int round = 0; round < 400; round++) {
        const int dim = 2 + round % 2;
        const bool flt = (round / 2) % 2, cross = (round / 4) % 2, wrap = (round / 8) % 2;
        // small sets use the gather lanes; large ones (past NBI_GATHER and NBI_SCRATCH) the
        // chunked path
        const int32_t big = round % 10 == 9 ? MAXP : 60;
        // the cell's own points at most CELL_MAX: the chunked path is decided by the candidates
        // (own run and spans), and a cell of thousands only multiplied the brute force's work
        const int32_t nb = 1 + nbt_int(big),
                      na = cross ? 1 + nbt_int(big < CELL_MAX ? big : CELL_MAX) : 1 + nbt_int(big);
        const double r = nbt_range(0.05, 0.8);
        if (run_case(&s, dim, flt, cross, wrap, na, nb, r)) return 1;
    }
    return 0;
}

#if defined(NBI_AVX2)
#include <nearby/grid.h>

// Whole grids, the widest lanes the CPU runs against four (AVX2) and two: the pairs of a set, into
// a full buffer, a short one and a count, and the cross pairs of two sets, must be the same pair
// for pair and in order. The sets: uniform, clustered (cells far past the gather lanes),
// duplicates, and a lattice at exactly r.
static int grid_pairs_both(const nbGrid *a, const nbGrid *b, double r, nbPair *buf[3], int64_t cap)
{
    int64_t found[3], count[3];
    for (int off = 0; off < 3; off++) {
        nbi_avx2_off = off == 2;
#if defined(NBI_AVX512)
        nbi_avx512_off = off >= 1;
#endif
        if (b == NULL) {
            NB_CHECK(nb_grid_pairs(a, r, buf[off], cap, &found[off]) == NB_OK || found[off] > cap);
            NB_CHECK_OK(nb_grid_count_pairs(a, r, &count[off]));
        } else {
            NB_CHECK(nb_grid_cross_pairs(a, b, r, buf[off], cap, &found[off]) == NB_OK ||
                     found[off] > cap);
            NB_CHECK_OK(nb_grid_count_cross_pairs(a, b, r, &count[off]));
        }
    }
    nbi_avx2_off = 0;
#if defined(NBI_AVX512)
    nbi_avx512_off = 0;
#endif
    for (int off = 1; off < 3; off++)
        NB_CHECK(found[0] == found[off] && count[0] == count[off] && found[0] == count[0]);
    const int64_t kept = found[0] < cap ? found[0] : cap;
    for (int off = 1; off < 3; off++)
        NB_CHECK(memcmp(buf[0], buf[off], (size_t)kept * sizeof(nbPair)) == 0);
    return 0;
}

static int test_wide_matches_narrow_on_grids(void)
{
    enum { N = 3000 };
    static double pa[N * 3], pb[N * 3];
    nbPair *buf[3] = {malloc(sizeof(nbPair) * 400000), malloc(sizeof(nbPair) * 400000),
                      malloc(sizeof(nbPair) * 400000)};
    for (int round = 0; round < 8; round++) {
        const int dim = 2 + round % 2, kind = (round / 2) % 4;
        const int32_t n = 200 + nbt_int(N - 200);
        double r = 1.0;
        for (int32_t i = 0; i < n; i++)
            for (int d = 0; d < dim; d++) {
                double v = nbt_range(0.0, 30.0);
                if (kind == 1) v = nbt_int(3) * 10.0 + nbt_gauss() * 0.3; // crowded cells
                if (kind == 2) v = (double)nbt_int(12);                   // duplicates
                if (kind == 3) v = (double)((i >> (4 * d)) & 15);         // lattice: d = r
                pa[i * dim + d] = v;
                pb[i * dim + d] = nbt_range(0.0, 30.0);
            }
        nbGridDesc desc = {.dim = dim};
        nbGrid *ga = NULL, *gb = NULL;
        NB_CHECK_OK(nb_grid_create(&desc, &ga));
        NB_CHECK_OK(nb_grid_create(&desc, &gb));
        const nbPoints a = {.data = pa, .count = n, .dim = dim};
        const nbPoints b = {.data = pb, .count = n / 2, .dim = dim};
        NB_CHECK_OK(nb_grid_build(ga, &a, r));
        NB_CHECK_OK(nb_grid_build(gb, &b, r));
        if (grid_pairs_both(ga, NULL, r, buf, 400000)) return 1;
        if (grid_pairs_both(ga, NULL, r, buf, 1 + nbt_int(50))) return 1;
        if (grid_pairs_both(ga, gb, r, buf, 400000)) return 1;
        if (grid_pairs_both(gb, ga, r, buf, 1 + nbt_int(50))) return 1;
        nb_grid_destroy(ga);
        nb_grid_destroy(gb);
    }
    for (int k = 0; k < 3; k++) free(buf[k]);
    return 0;
}
#endif

#if defined(NBI_AVX512)
// Radius queries (the grid's fast path) with the eight-lane copy against the two-lane one: the
// same indices in the same order, into a roomy buffer, a short one (the capacity path) and a
// count; on dense and hashed grids, 2D and 3D, points on the circle included.
static int test_wide_radius_matches_narrow(void)
{
    enum { N = 2000, CAP = 4096 };
    static double pts[N * 3];
    static int32_t got[2][CAP];
    for (int round = 0; round < 12; round++) {
        const int dim = 2 + round % 2, kind = (round / 2) % 3;
        const int32_t n = 1 + nbt_int(N);
        for (int32_t i = 0; i < n; i++)
            for (int d = 0; d < dim; d++) {
                double v = nbt_range(-20.0, 20.0);
                if (kind == 1) v = (double)nbt_int(9);   // lattice: distances exactly r
                if (kind == 2) v = nbt_range(-1e6, 1e6); // sparse: a hashed layout
                pts[i * dim + d] = v;
            }
        nbGridDesc desc = {.dim = dim};
        nbGrid *g = NULL;
        NB_CHECK_OK(nb_grid_create(&desc, &g));
        const nbPoints p = {.data = pts, .count = n, .dim = dim};
        NB_CHECK_OK(nb_grid_build(g, &p, kind == 2 ? 5e4 : 1.0));
        for (int q = 0; q < 200; q++) {
            double c[3];
            for (int d = 0; d < dim; d++)
                c[d] = kind == 1 ? (double)nbt_int(9) : pts[nbt_int(n) * dim + d] + nbt_gauss();
            const double r =
                kind == 1 ? (double)(1 + nbt_int(3)) : nbt_range(0.0, kind == 2 ? 2e5 : 6.0);
            const int32_t cap = q % 3 == 0 ? nbt_int(8) : CAP;
            int32_t found[2], count[2];
            nbStatus st[2];
            for (int off = 0; off < 2; off++) {
                nbi_avx512_off = off;
                st[off] = nb_grid_query_radius(g, c, r, NB_FILTER_ALL, got[off], cap, &found[off]);
                const nbStatus sc =
                    nb_grid_query_radius(g, c, r, NB_FILTER_ALL, NULL, 0, &count[off]);
                NB_CHECK(sc == (count[off] > 0 ? NB_ERR_BUFFER_TOO_SMALL : NB_OK));
            }
            nbi_avx512_off = 0;
            NB_CHECK(st[0] == st[1] && found[0] == found[1]);
            NB_CHECK(count[0] == found[0] && count[1] == found[0]);
            NB_CHECK(memcmp(got[0], got[1], (size_t)(found[0] < cap ? found[0] : cap) * 4) == 0);
        }
        nb_grid_destroy(g);
    }
    return 0;
}
#endif

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"kernels_against_brute_force", test_kernels_against_brute_force},
#if defined(NBI_AVX2)
        {"wide_matches_narrow_on_grids", test_wide_matches_narrow_on_grids},
#endif
#if defined(NBI_AVX512)
        {"wide_radius_matches_narrow", test_wide_radius_matches_narrow},
#endif
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
