// SPDX-License-Identifier: MIT
// Fuzz target for periodic boxes in the dense grid (nbGridDesc.period, grid.h "periodic boxes").
//
// The input is a little program. A header decodes the dim, a period per axis (0 = open, a
// choice of small and odd periods, or raw bits: NaN, infinities and negatives included), the
// desc's cell size (0, a fraction or multiple of the period: 1, 2 or 3 cells, or raw bits) and
// the checking allocator's failure schedule. Then each byte picks an operation: a build (points
// mostly inside [0, P), on the faces, on a lattice with pairs exactly r apart across a face,
// duplicated, or now and then outside the box, NaN or huge; a radius up to a little beyond
// P / 2), all pairs (buffer, count, visit, unit ranges) at a radius around P / 2, radius, box
// (across the faces, wider than P, out of [-P, 2P)) and kNN queries anywhere, cross pairs
// against a second grid of the same or other periods.
//
// Checked after every call: the status is the one grid.h gives for these arguments (pointers,
// then finiteness, then range; periodic rules: points in [0, P), r <= P / 2, query points in
// [0, P), boxes), nb_grid_validate() passes, every successful answer equals the brute-force
// minimum-image oracle (nb_oracle.h, nbo_wrap_*) over the last successful build, a refused
// build changes nothing, queries never allocate, and nothing leaks.

#define _POSIX_C_SOURCE 200809L

#include <nearby/grid.h>

#include "nb_fuzz.h"
#include "nb_oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NBF_PMAX = 160, NBF_OPS = 48 };

typedef struct nbfP {
    nbGrid *grid;
    int dim;
    double period[3];
    double min_half; // min over periodic axes of P / 2 (inf when none)
    double cell;     // the desc's cell_size
    int32_t n;
    double pts[NBF_PMAX * 3];
    bool built;
} nbfP;

static double nbf_period(nbfReader *r)
{
    const uint8_t k = nbf_u8(r);
    switch (k % 8) {
    case 0: return 0.0;
    case 1: return 1.0;
    case 2: return 10.0;
    case 3: return 7.25;
    case 4: return 0.1;
    case 5: return 1e6;
    case 6: return nbf_special(nbf_u8(r));
    default: return fabs(nbf_raw(r));
    }
}

// A coordinate on axis a: mostly in [0, P), on the faces, on a lattice; now and then outside.
static double nbf_coord(nbfReader *r, double p)
{
    const uint8_t k = nbf_u8(r);
    const double box = p > 0.0 ? p : 20.0;
    switch (k % 16) {
    case 0: return 0.0;
    case 1: return nextafter(box, 0.0);
    case 2: return -0.0;
    case 3: return box * (double)(nbf_u8(r) % 8) / 8.0; // a lattice of P / 8
    case 4: return box * (double)(nbf_u8(r) % 5) / 5.0;
    case 5: return nbf_u8(r) < 16 ? nbf_special(nbf_u8(r)) : box * 0.5;
    case 6: return nbf_u8(r) < 24 ? box : 0.25 * box; // the face itself: outside
    default: return box * (double)nbf_u16(r) / 65536.0;
    }
}

static double nbf_radius(nbfReader *r, const nbfP *s)
{
    const uint8_t k = nbf_u8(r);
    const double half = s->min_half < 1e300 ? s->min_half : 10.0;
    switch (k % 8) {
    case 0: return half;
    case 1: return nextafter(half, 0.0);
    case 2: return nextafter(half, (double)INFINITY);
    case 3: return nbf_special(nbf_u8(r));
    case 4: return half * (double)(nbf_u8(r) % 9) / 8.0;
    default: return half * (double)nbf_u8(r) / 256.0;
    }
}

static bool nbf_inside(const nbfP *s, const double *q)
{
    for (int a = 0; a < s->dim; a++)
        if (s->period[a] > 0.0 && !(q[a] >= 0.0 && q[a] < s->period[a])) return false;
    return true;
}

static bool nbf_finite(const double *q, int dim)
{
    for (int a = 0; a < dim; a++)
        if (!isfinite(q[a])) return false;
    return true;
}

static nboSet nbf_set(const nbfP *s)
{
    nboSet set = {(double *)s->pts, s->n, s->dim, 0, NULL, NULL};
    return set;
}

static bool nbf_pair_visit(int32_t i, int32_t j, void *user)
{
    nboPairList *l = user;
    nbo_pair_push(l, i, j);
    return true;
}

static void nbf_check_pairs(const nbfP *s, double r)
{
    int64_t count = -1;
    const nbStatus st = nb_grid_count_pairs(s->grid, r, &count);
    const unsigned want = !isfinite(r)                 ? NBF_BIT(NB_ERR_NOT_FINITE)
                          : r < 0.0 || r > s->min_half ? NBF_BIT(NB_ERR_OUT_OF_RANGE)
                                                       : NBF_BIT(NB_OK);
    nbf_expect(st, want, "nb_grid_count_pairs");
    if (st != NB_OK) {
        NBF_CHECK(count == 0, "count_pairs refused but wrote %lld", (long long)count);
        return;
    }
    const nboSet set = nbf_set(s);
    int64_t wn = 0;
    nbPair *want_pairs = nbo_wrap_pairs(&set, r, s->period, &wn);
    NBF_CHECK(count == wn, "count_pairs(r=%.17g) = %lld, oracle %lld", r, (long long)count,
              (long long)wn);
    nbPair *buf = malloc((size_t)(wn + 1) * sizeof(nbPair));
    int64_t found = -1;
    nbf_expect(nb_grid_pairs(s->grid, r, buf, wn + 1, &found), NBF_BIT(NB_OK), "nb_grid_pairs");
    NBF_CHECK(found == wn, "pairs found %lld, oracle %lld", (long long)found, (long long)wn);
    nboPairList vis = {NULL, 0, 0};
    const int32_t units = nb_grid_pair_units(s->grid);
    for (int32_t u = 0; u < units; u += 1 + units / 3)
        nbf_expect(nb_grid_visit_pairs_range(s->grid, r, u,
                                             u + 1 + units / 3 < units ? u + 1 + units / 3 : units,
                                             nbf_pair_visit, &vis),
                   NBF_BIT(NB_OK), "nb_grid_visit_pairs_range");
    NBF_CHECK(vis.n == wn, "unit ranges gave %lld pairs, oracle %lld", (long long)vis.n,
              (long long)wn);
    nbo_sort_pairs(buf, found);
    nbo_sort_pairs(vis.p, vis.n);
    NBF_CHECK(nbo_same_pairs(buf, found, want_pairs, wn), "pairs differ from the oracle");
    NBF_CHECK(nbo_same_pairs(vis.p, vis.n, want_pairs, wn), "unit pairs differ from the oracle");
    free(vis.p);
    free(buf);
    free(want_pairs);
}

static void nbf_op_build(nbfP *s, nbfReader *r)
{
    double pts[NBF_PMAX * 3];
    const uint8_t k = nbf_u8(r);
    const int32_t n = k % 4 == 0 ? 0 : (int32_t)(nbf_u8(r) % NBF_PMAX);
    for (int32_t i = 0; i < n; i++) {
        const bool dup = i > 0 && nbf_u8(r) < 32;
        for (int a = 0; a < s->dim; a++)
            pts[i * s->dim + a] = dup ? pts[(i - 1) * s->dim + a] : nbf_coord(r, s->period[a]);
    }
    const double radius = nbf_radius(r, s);
    bool finite = isfinite(radius), inside = true;
    for (int32_t i = 0; i < n; i++) {
        finite &= nbf_finite(pts + i * s->dim, s->dim);
        inside &= nbf_inside(s, pts + i * s->dim);
    }
    // A grid without periodic axes refuses cells beyond +-2^62 (grid.h); a periodic one widens
    // its cells instead.
    double max_abs = 0.0;
    for (int32_t i = 0; i < n * s->dim; i++) max_abs = fmax(max_abs, fabs(pts[i]));
    const bool cell_limit = s->min_half > 1e300 && s->cell > 0.0 && max_abs / s->cell > 0x1p60;
    const unsigned want = !finite ? NBF_BIT(NB_ERR_NOT_FINITE)
                          : radius < 0.0 || radius > s->min_half || !inside
                              ? NBF_BIT(NB_ERR_OUT_OF_RANGE)
                              : NBF_BIT(NB_OK) | NBF_BIT(NB_ERR_OUT_OF_MEMORY) |
                                    (cell_limit ? NBF_BIT(NB_ERR_OUT_OF_RANGE) : 0);
    const nbPoints view = {.data = pts, .count = n, .dim = s->dim};
    const int32_t before = nb_grid_count(s->grid);
    const nbStatus st = nb_grid_build(s->grid, &view, radius);
    if (nbf_trace) {
        nbf_log("build n=%d r=%.17g P=(%.17g,%.17g,%.17g) -> %s\n", n, radius, s->period[0],
                s->period[1], s->period[2], nb_status_str(st));
        for (int32_t i = 0; i < n && i < 8; i++)
            nbf_log("  (%.17g, %.17g, %.17g)\n", pts[i * s->dim], pts[i * s->dim + 1],
                    s->dim == 3 ? pts[i * s->dim + 2] : 0.0);
    }
    nbf_expect(st, want, "nb_grid_build");
    nbf_expect(nb_grid_validate(s->grid), NBF_BIT(NB_OK), "nb_grid_validate");
    if (st != NB_OK) {
        NBF_CHECK(nb_grid_count(s->grid) == before, "a refused build changed the grid");
        return;
    }
    s->n = n;
    memcpy(s->pts, pts, (size_t)n * (size_t)s->dim * sizeof(double));
    s->built = true;
    if (n <= 80) nbf_check_pairs(s, radius);
}

static void nbf_op_queries(nbfP *s, nbfReader *r, uint8_t op)
{
    double q[3] = {0, 0, 0}, lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int a = 0; a < s->dim; a++) {
        q[a] = nbf_coord(r, s->period[a]);
        const double p = s->period[a] > 0.0 ? s->period[a] : 20.0;
        const uint8_t b = nbf_u8(r);
        lo[a] = b % 5 == 0 ? nbf_special(nbf_u8(r)) : q[a] - p * (double)(b % 13) / 8.0;
        hi[a] = b % 7 == 0 ? nbf_special(nbf_u8(r)) : q[a] + p * (double)(nbf_u8(r) % 13) / 8.0;
    }
    const nboSet set = nbf_set(s);
    const size_t bytes = nb_grid_memory_bytes(s->grid);
    const nbfMark m = nbf_mark();
    const bool finite = nbf_finite(q, s->dim), inside = nbf_inside(s, q);
    int32_t out[NBF_PMAX + 1];
    int32_t found = -1, wn = 0;
    if (op == 0) { // radius
        const double radius = nbf_radius(r, s);
        const nbStatus st =
            nb_grid_query_radius(s->grid, q, radius, NB_FILTER_ALL, out, NBF_PMAX + 1, &found);
        const unsigned want = !finite || !isfinite(radius) ? NBF_BIT(NB_ERR_NOT_FINITE)
                              : radius < 0.0 || radius > s->min_half || !inside
                                  ? NBF_BIT(NB_ERR_OUT_OF_RANGE)
                                  : NBF_BIT(NB_OK);
        if (nbf_trace)
            nbf_log("radius q=(%.17g,%.17g,%.17g) r=%.17g -> %s\n", q[0], q[1], q[2], radius,
                    nb_status_str(st));
        nbf_expect(st, want, "nb_grid_query_radius");
        if (st == NB_OK) {
            int32_t *w = nbo_wrap_radius(&set, q, radius, s->period, &wn);
            nbo_sort_indices(out, found);
            NBF_CHECK(nbo_same_indices(out, found, w, wn), "radius r=%.17g: %d found, oracle %d",
                      radius, found, wn);
            free(w);
        } else {
            NBF_CHECK(found == 0, "a refused radius query wrote found = %d", found);
        }
    } else if (op == 1) { // box
        const nbStatus st = nb_grid_query_box(s->grid, NBT_BOX(lo, hi, s->dim), NB_FILTER_ALL, out,
                                              NBF_PMAX + 1, &found);
        bool nan = false, range = false;
        for (int a = 0; a < s->dim; a++) {
            nan |= isnan(lo[a]) || isnan(hi[a]);
            const double p = s->period[a];
            const bool whole = !(hi[a] - lo[a] < p) || isinf(lo[a]) || isinf(hi[a]);
            if (p > 0.0 && lo[a] <= hi[a] && !whole) range |= !(lo[a] >= -p && hi[a] < 2.0 * p);
        }
        const unsigned want = nan     ? NBF_BIT(NB_ERR_NOT_FINITE)
                              : range ? NBF_BIT(NB_ERR_OUT_OF_RANGE)
                                      : NBF_BIT(NB_OK);
        nbf_expect(st, want, "nb_grid_query_box");
        if (st == NB_OK) {
            int32_t *w = nbo_wrap_box(&set, lo, hi, s->period, &wn);
            nbo_sort_indices(out, found);
            NBF_CHECK(nbo_same_indices(out, found, w, wn), "box: %d found, oracle %d", found, wn);
            free(w);
        }
    } else { // kNN
        const int32_t k = (int32_t)(nbf_u8(r) % (NBF_PMAX + 8)) - 2;
        nbNeighbor nn[NBF_PMAX + 8];
        const nbStatus st =
            nb_grid_knn(s->grid, q, NB_FILTER_ALL, (double)INFINITY, k > 0 ? nn : NULL, k, &found);
        const unsigned want = !finite            ? NBF_BIT(NB_ERR_NOT_FINITE)
                              : k < 0 || !inside ? NBF_BIT(NB_ERR_OUT_OF_RANGE)
                                                 : NBF_BIT(NB_OK);
        nbf_expect(st, want, "nb_grid_knn");
        if (st == NB_OK) {
            nbNeighbor *w = nbo_wrap_knn(&set, q, k, s->period, &wn);
            NBF_CHECK(nbo_same_neighbors(nn, found, w, wn), "knn k=%d: %d found, oracle %d", k,
                      found, wn);
            free(w);
        }
    }
    // A query allocates nothing, but for a kNN's index growing (grid.h, nb_grid_knn).
    if (nb_grid_memory_bytes(s->grid) == bytes && !nbf_heap.failed)
        nbf_check_no_alloc(m, "a periodic query");
}

static void nbf_op_cross(nbfP *s, nbfReader *r)
{
    const uint8_t k = nbf_u8(r);
    nbGridDesc d = {0};
    d.dim = s->dim;
    double period[3] = {s->period[0], s->period[1], s->period[2]};
    if (k % 4 == 1) period[0] = period[0] > 0.0 ? 0.0 : 5.0; // other boxes
    for (int a = 0; a < s->dim; a++) d.period[a] = period[a];
    d.cell_size = k % 3 == 0 ? 0.0 : (s->period[0] > 0.0 ? s->period[0] : 10.0) / (k % 3);
    nbGrid *b = NULL;
    if (nb_grid_create(&d, &b) != NB_OK) return;
    double pts[40 * 3];
    const int32_t n = nbf_u8(r) % 40;
    for (int32_t i = 0; i < n * s->dim; i++) {
        const double p = period[i % s->dim] > 0.0 ? period[i % s->dim] : 20.0;
        pts[i] = p * (double)nbf_u16(r) / 65536.0;
    }
    const nbPoints view = {.data = pts, .count = n, .dim = s->dim};
    if (nb_grid_build(b, &view, 0.0) == NB_OK) {
        const double radius = nbf_radius(r, s);
        int64_t found = -1;
        nbPair buf[40 * NBF_PMAX + 1];
        const nbStatus st = nb_grid_cross_pairs(s->grid, b, radius, buf, 40 * NBF_PMAX + 1, &found);
        const bool same = memcmp(period, s->period, sizeof period) == 0;
        const unsigned want = !isfinite(radius) ? NBF_BIT(NB_ERR_NOT_FINITE)
                              : radius < 0.0 || !same || radius > s->min_half
                                  ? NBF_BIT(NB_ERR_OUT_OF_RANGE)
                                  : NBF_BIT(NB_OK);
        nbf_expect(st, want, "nb_grid_cross_pairs");
        if (st == NB_OK) {
            const nboSet sa = nbf_set(s), sb = {pts, n, s->dim, 0, NULL, NULL};
            int64_t wn = 0;
            nbPair *w = nbo_wrap_cross_pairs(&sa, &sb, radius, s->period, &wn);
            nbo_sort_pairs(buf, found);
            NBF_CHECK(nbo_same_pairs(buf, found, w, wn), "cross: %lld found, oracle %lld",
                      (long long)found, (long long)wn);
            free(w);
        }
    }
    nb_grid_destroy(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nbf_begin_input();
    nbfReader r = {data, size};
    static nbfP s;
    memset(&s, 0, sizeof s);
    s.dim = nbf_u8(&r) % 2 ? 3 : 2;
    nbGridDesc d = {0};
    d.dim = s.dim;
    bool bad_nan = false, bad_range = false;
    s.min_half = (double)INFINITY;
    for (int a = 0; a < s.dim; a++) {
        d.period[a] = nbf_period(&r);
        bad_nan |= !isfinite(d.period[a]);
        bad_range |= d.period[a] < 0.0;
        s.period[a] = d.period[a] > 0.0 ? d.period[a] : 0.0;
        if (s.period[a] > 0.0 && 0.5 * s.period[a] < s.min_half) s.min_half = 0.5 * s.period[a];
    }
    const uint8_t c = nbf_u8(&r);
    const double p0 = s.period[0] > 0.0 ? s.period[0] : 1.0;
    d.cell_size = c % 6 == 0 ? 0.0 : c % 6 == 5 ? fabs(nbf_raw(&r)) : p0 / (double)(c % 6);
    if (!isfinite(d.cell_size)) d.cell_size = 0.0;
    s.cell = d.cell_size;
    const nbAllocator al = nbf_allocator();
    d.allocator = &al;
    const uint8_t fail = nbf_u8(&r);
    if (fail % 4 == 1) nbf_fail_alloc_after(1 + fail / 16, fail & 2);
    const nbStatus st = nb_grid_create(&d, &s.grid);
    nbf_expect(st,
               bad_nan     ? NBF_BIT(NB_ERR_NOT_FINITE)
               : bad_range ? NBF_BIT(NB_ERR_OUT_OF_RANGE)
                           : NBF_BIT(NB_OK) | NBF_BIT(NB_ERR_OUT_OF_MEMORY),
               "nb_grid_create");
    if (st != NB_OK) {
        nbf_check_no_leak("a refused create");
        return 0;
    }
    for (int step = 1; step <= NBF_OPS && r.n > 0; step++) {
        nbf_step = step;
        const uint8_t op = nbf_u8(&r) % 8;
        if (op <= 2) {
            nbf_op = "build";
            nbf_op_build(&s, &r);
        } else if (op == 3) {
            nbf_op = "pairs";
            if (s.n <= 80) nbf_check_pairs(&s, nbf_radius(&r, &s));
        } else if (op <= 6) {
            nbf_op = "query";
            nbf_op_queries(&s, &r, (uint8_t)(op - 4));
        } else {
            nbf_op = "cross";
            nbf_op_cross(&s, &r);
        }
        nbf_expect(nb_grid_validate(s.grid), NBF_BIT(NB_OK), "nb_grid_validate");
    }
    nb_grid_destroy(s.grid);
    nbf_check_no_leak("nb_grid_destroy");
    return 0;
}
