// SPDX-License-Identifier: MIT
// Neighbour rows (neighbors.h) against the brute-force oracle: a set against itself and against
// another set, the growable list (with distances), the Verlet list over many steps, the caller's
// scheduler, the buffer contract, and every allocation failing in turn.
#include <nearby/neighbors.h>

#include "simd.h"

#include "nb_oracle.h"
#include "nb_test.h"

#include <math.h>
#include <string.h>

// ---- point sets ----

enum { SET_UNIFORM, SET_CLUSTERS, SET_DUPLICATES, SET_LATTICE, SET_FAR, SET_KINDS };

// n points of kind `kind` in [0, side)^dim (far: shifted by 1e6; periodic sets stay inside).
static nboSet make_set(int kind, int32_t n, int dim, double side)
{
    nboSet s = nbo_set_new(n, dim);
    for (int32_t i = 0; i < n; i++) {
        double *p = s.p + (size_t)i * (size_t)dim;
        for (int d = 0; d < dim; d++) p[d] = nbt_unit() * side;
        if (kind == SET_CLUSTERS) {
            const int32_t c = nbt_int(4);
            for (int d = 0; d < dim; d++)
                p[d] = fmod(side * (0.2 + 0.2 * c) + 0.05 * side * nbt_gauss() + 4.0 * side, side);
        } else if (kind == SET_DUPLICATES && i > 0 && nbt_int(3) == 0) {
            memcpy(p, s.p + (size_t)nbt_int(i) * (size_t)dim, (size_t)dim * sizeof(double));
        } else if (kind == SET_LATTICE) {
            for (int d = 0; d < dim; d++) p[d] = floor(p[d]); // pairs exactly 1 and sqrt(2) apart
        } else if (kind == SET_FAR) {
            for (int d = 0; d < dim; d++) p[d] += 1e6;
        }
    }
    return s;
}

// The rows brute force gives: point i of a against the points of b (self: a against itself,
// without i), with the pair filter when the sets carry bits; period NULL = open.
static void oracle_rows(const nboSet *a, const nboSet *b, bool self, double r, const double *period,
                        int32_t **offsets, int32_t **nb, double **d2)
{
    int64_t cap = 16, m = 0;
    *offsets = (int32_t *)nbo_xalloc(((size_t)a->n + 1) * sizeof(int32_t));
    *nb = (int32_t *)nbo_xalloc((size_t)cap * sizeof(int32_t));
    *d2 = (double *)nbo_xalloc((size_t)cap * sizeof(double));
    (*offsets)[0] = 0;
    for (int32_t i = 0; i < a->n; i++) {
        for (int32_t j = 0; j < b->n; j++) {
            if (self && i == j) continue;
            const double e = period != NULL
                                 ? nbo_wrap_d2(nbo_pt(a, i), nbo_pt(b, j), a->dim, period)
                                 : nbo_d2(nbo_pt(a, i), nbo_pt(b, j), a->dim);
            if (!(e <= r * r) || !nbo_pair_passes(a, i, b, j)) continue;
            if (m == cap) {
                cap *= 2;
                *nb = (int32_t *)realloc(*nb, (size_t)cap * sizeof(int32_t));
                *d2 = (double *)realloc(*d2, (size_t)cap * sizeof(double));
                if (*nb == NULL || *d2 == NULL) abort();
            }
            (*nb)[m] = j;
            (*d2)[m++] = e;
        }
        (*offsets)[i + 1] = (int32_t)m;
    }
}

// Whether rows equal the oracle's (distances too when d2 is not NULL).
static bool same_rows(int32_t n, const int32_t *off, const int32_t *nb, const double *d2,
                      const int32_t *woff, const int32_t *wnb, const double *wd2)
{
    if (memcmp(off, woff, ((size_t)n + 1) * sizeof(int32_t)) != 0) {
        for (int32_t i = 0; i <= n; i++)
            if (off[i] != woff[i]) {
                fprintf(stderr, "offsets[%d] = %d, want %d\n", (int)i, (int)off[i], (int)woff[i]);
                break;
            }
        return false;
    }
    if (woff[n] > 0 && memcmp(nb, wnb, (size_t)woff[n] * sizeof(int32_t)) != 0) {
        fprintf(stderr, "neighbours differ\n");
        return false;
    }
    if (d2 != NULL && woff[n] > 0 && memcmp(d2, wd2, (size_t)woff[n] * sizeof(double)) != 0) {
        fprintf(stderr, "distances differ\n");
        return false;
    }
    return true;
}

// A scheduler that runs the chunks one at a time, last first, with odd worker ids: the result
// must not depend on the order.
static void reverse_for(nbTaskFn *task, int32_t count, int32_t min_range, void *ctx, void *user)
{
    (void)min_range;
    (void)user;
    for (int32_t k = count - 1; k >= 0; k--) task(k, k + 1, k % 3, ctx);
}

static const nbTasks reverse_tasks = {reverse_for, NULL, 3};

static nbGrid *make_grid(const nboSet *s, double r, double cell, const double *period,
                         const nbTasks *tasks)
{
    nbGridDesc desc = {.dim = s->dim, .cell_size = cell, .tasks = tasks};
    if (period != NULL) memcpy(desc.period, period, 3 * sizeof(double));
    nbGrid *g = NULL;
    nbPoints pts = nbo_points(s);
    if (nb_grid_create(&desc, &g) != NB_OK) return NULL;
    if (nb_grid_build(g, &pts, r) != NB_OK) {
        nb_grid_destroy(g);
        return NULL;
    }
    return g;
}

// Whether order (n entries) is a permutation of 0 .. n - 1.
static bool is_permutation(const int32_t *order, int32_t n)
{
    char *seen = (char *)nbo_xalloc((size_t)n + 1);
    memset(seen, 0, (size_t)n + 1);
    bool ok = true;
    for (int32_t p = 0; p < n && ok; p++) {
        ok = order[p] >= 0 && order[p] < n && !seen[order[p]];
        if (ok) seen[order[p]] = 1;
    }
    free(seen);
    return ok;
}

typedef struct entry {
    int32_t j;
    double d2;
} entry;

// A row's entries by index: insertion sort, since rows are short and sorted once per row of
// every step (qsort's calls took a third of the suite's time).
static void sort_by_index(entry *row, int32_t len)
{
    for (int32_t t = 1; t < len; t++) {
        const entry e = row[t];
        int32_t u = t;
        for (; u > 0 && row[u - 1].j > e.j; u--) row[u] = row[u - 1];
        row[u] = e;
    }
}

// Whether rows in cell order (row p: the point oa[p] of a; entries: positions q of b, the point
// ob[q]) are the oracle's: each row strictly ascending by position, and mapped to indices, the
// same rows (distances too when d2 is not NULL).
static bool same_cell_rows(int32_t n, const int32_t *off, const int32_t *nb, const double *d2,
                           const int32_t *oa, const int32_t *ob, const int32_t *woff,
                           const int32_t *wnb, const double *wd2)
{
    if (off[0] != 0 || off[n] != woff[n]) {
        fprintf(stderr, "cell order: %d entries, want %d\n", (int)off[n], (int)woff[n]);
        return false;
    }
    entry *row = (entry *)nbo_xalloc(((size_t)woff[n] + 1) * sizeof(entry));
    bool ok = true;
    for (int32_t p = 0; p < n && ok; p++) {
        const int32_t i = oa[p], len = off[p + 1] - off[p];
        ok = len == woff[i + 1] - woff[i];
        for (int32_t t = 0; t < len && ok; t++) {
            const int32_t q = nb[off[p] + t];
            ok = t == 0 || q > nb[off[p] + t - 1];
            row[t].j = ob[q];
            row[t].d2 = d2 != NULL ? d2[off[p] + t] : 0.0;
        }
        if (!ok) {
            fprintf(stderr, "cell order: row %d (point %d) differs\n", (int)p, (int)i);
            break;
        }
        sort_by_index(row, len);
        for (int32_t t = 0; t < len && ok; t++)
            ok = row[t].j == wnb[woff[i] + t] && (d2 == NULL || row[t].d2 == wd2[woff[i] + t]);
        if (!ok) fprintf(stderr, "cell order: row %d (point %d) differs\n", (int)p, (int)i);
    }
    free(row);
    return ok;
}

// The rows in cell order of a against b (the caller's buffers, through a too-small buffer
// first; on the scheduler) against the oracle.
static int check_cell_rows(const nbGrid *ga, const nbGrid *gb, const nbGrid *gp, const nbGrid *gpb,
                           bool self, double r, const int32_t *woff, const int32_t *wnb,
                           const double *wd2)
{
    const int32_t n = nb_grid_count(ga), nbn = nb_grid_count(gb);
    const int64_t want = woff[n];
    int32_t *off = (int32_t *)nbo_xalloc(((size_t)n + 1) * sizeof(int32_t));
    int32_t *nb = (int32_t *)nbo_xalloc(((size_t)want + 1) * sizeof(int32_t));
    int32_t *oa = (int32_t *)nbo_xalloc(((size_t)n + 1) * sizeof(int32_t));
    int32_t *ob = (int32_t *)nbo_xalloc(((size_t)nbn + 1) * sizeof(int32_t));
    int32_t got = -1;
    int64_t found = -1;
    NB_CHECK_OK(nb_grid_cell_order(ga, oa, n, &got));
    NB_CHECK_OK(nb_grid_cell_order(gb, ob, nbn, &got));
    NB_CHECK(is_permutation(oa, n) && is_permutation(ob, nbn));
    const nbGrid *g[2] = {ga, gp}, *h[2] = {gb, gpb};
    for (int k = 0; k < 2; k++) { // serially, then on the scheduler (its grids: the same order)
        if (want > 0) {
            memset(off, 0x55, ((size_t)n + 1) * sizeof(int32_t));
            const nbStatus st =
                self ? nb_grid_neighbor_rows_cell_order(g[k], r, off, nb, want - 1, &found)
                     : nb_grid_cross_neighbor_rows_cell_order(g[k], h[k], r, off, nb, want - 1,
                                                              &found);
            NB_CHECK_STATUS(st, NB_ERR_BUFFER_TOO_SMALL);
            NB_CHECK(found == want && off[n] == want);
        }
        memset(off, 0x55, ((size_t)n + 1) * sizeof(int32_t));
        NB_CHECK_OK(
            self ? nb_grid_neighbor_rows_cell_order(g[k], r, off, nb, want, &found)
                 : nb_grid_cross_neighbor_rows_cell_order(g[k], h[k], r, off, nb, want, &found));
        NB_CHECK(found == want);
        NB_CHECK(same_cell_rows(n, off, nb, NULL, oa, ob, woff, wnb, NULL));
    }
    // Lists in cell order: with distances serially, without on the scheduler; twice each (the
    // second build into the storage of the first).
    for (int k = 0; k < 2; k++) {
        nbNeighborList *l = NULL;
        const nbNeighborListDesc ld = {
            .cell_order = true, .distances = k == 0, .tasks = k == 1 ? &reverse_tasks : NULL};
        NB_CHECK_OK(nb_neighbor_list_create(&ld, &l));
        for (int round = 0; round < 2; round++) {
            NB_CHECK_OK(self ? nb_neighbor_list_build(l, g[k], r)
                             : nb_neighbor_list_build_cross(l, g[k], h[k], r));
            nbNeighborRows rows;
            NB_CHECK_OK(nb_neighbor_list_rows(l, &rows));
            NB_CHECK(rows.rows == n && rows.entries == want && (rows.dist2 != NULL) == (k == 0));
            NB_CHECK(rows.order != NULL && rows.neighbor_order != NULL);
            NB_CHECK(n == 0 || memcmp(rows.order, oa, (size_t)n * sizeof(int32_t)) == 0);
            NB_CHECK(nbn == 0 ||
                     memcmp(rows.neighbor_order, ob, (size_t)nbn * sizeof(int32_t)) == 0);
            NB_CHECK(same_cell_rows(n, rows.offsets, rows.neighbors, rows.dist2, oa, ob, woff, wnb,
                                    wd2));
        }
        nb_neighbor_list_destroy(l);
    }
    free(off);
    free(nb);
    free(oa);
    free(ob);
    return 0;
}

// Rows of a against b three ways (the caller's buffers, through a too-small buffer first; a
// list with distances; a list on the reverse scheduler), each against the oracle.
static int check_rows(const nboSet *a, const nboSet *b, bool self, double r, double cell_a,
                      double cell_b, const double *period)
{
    int32_t *woff, *wnb;
    double *wd2;
    oracle_rows(a, b, self, r, period, &woff, &wnb, &wd2);
    const int64_t want = woff[a->n];
    int rc = 1;
    nbGrid *ga = make_grid(a, r, cell_a, period, NULL);
    nbGrid *gb = self ? ga : make_grid(b, r, cell_b, period, NULL);
    nbGrid *gp = make_grid(a, r, cell_a, period, &reverse_tasks);
    nbGrid *gpb = self ? gp : make_grid(b, r, cell_b, period, NULL);
    int32_t *off = (int32_t *)nbo_xalloc(((size_t)a->n + 1) * sizeof(int32_t));
    int32_t *nb = (int32_t *)nbo_xalloc(((size_t)want + 1) * sizeof(int32_t));
    nbNeighborList *l = NULL, *lp = NULL;
    const nbNeighborListDesc ld = {.distances = true};
    const nbNeighborListDesc lpd = {.tasks = &reverse_tasks};
    NB_CHECK(ga != NULL && gb != NULL && gp != NULL && gpb != NULL);
    NB_CHECK_OK(nb_neighbor_list_create(&ld, &l));
    NB_CHECK_OK(nb_neighbor_list_create(&lpd, &lp));
    int64_t found = -1;
    // too small: the full count and complete offsets
    if (want > 0) {
        memset(off, 0x55, ((size_t)a->n + 1) * sizeof(int32_t));
        const nbStatus st = self
                                ? nb_grid_neighbor_rows(ga, r, off, nb, want - 1, &found)
                                : nb_grid_cross_neighbor_rows(ga, gb, r, off, nb, want - 1, &found);
        NB_CHECK_STATUS(st, NB_ERR_BUFFER_TOO_SMALL);
        NB_CHECK(found == want);
        NB_CHECK(memcmp(off, woff, ((size_t)a->n + 1) * sizeof(int32_t)) == 0);
    }
    memset(off, 0x55, ((size_t)a->n + 1) * sizeof(int32_t));
    NB_CHECK_OK(self ? nb_grid_neighbor_rows(ga, r, off, nb, want, &found)
                     : nb_grid_cross_neighbor_rows(ga, gb, r, off, nb, want, &found));
    NB_CHECK(found == want);
    NB_CHECK(same_rows(a->n, off, nb, NULL, woff, wnb, wd2));
    NB_CHECK(check_cell_rows(ga, gb, gp, gpb, self, r, woff, wnb, wd2) == 0);
    memset(off, 0x55, ((size_t)a->n + 1) * sizeof(int32_t));
    NB_CHECK_OK(self ? nb_grid_neighbor_rows(gp, r, off, nb, want, &found)
                     : nb_grid_cross_neighbor_rows(gp, gpb, r, off, nb, want, &found));
    NB_CHECK(same_rows(a->n, off, nb, NULL, woff, wnb, wd2));
    for (int round = 0; round < 2; round++) { // the second build reuses the storage
        NB_CHECK_OK(self ? nb_neighbor_list_build(l, ga, r)
                         : nb_neighbor_list_build_cross(l, ga, gb, r));
        nbNeighborRows rows;
        NB_CHECK_OK(nb_neighbor_list_rows(l, &rows));
        NB_CHECK(rows.rows == a->n && rows.entries == want && rows.dist2 != NULL);
        NB_CHECK(same_rows(a->n, rows.offsets, rows.neighbors, rows.dist2, woff, wnb, wd2));
        NB_CHECK_OK(self ? nb_neighbor_list_build(lp, gp, r)
                         : nb_neighbor_list_build_cross(lp, gp, gpb, r));
        NB_CHECK_OK(nb_neighbor_list_rows(lp, &rows));
        NB_CHECK(rows.dist2 == NULL);
        NB_CHECK(same_rows(a->n, rows.offsets, rows.neighbors, NULL, woff, wnb, wd2));
    }
    rc = 0;
    nb_neighbor_list_destroy(l);
    nb_neighbor_list_destroy(lp);
    if (gb != ga) nb_grid_destroy(gb);
    if (gpb != gp) nb_grid_destroy(gpb);
    nb_grid_destroy(ga);
    nb_grid_destroy(gp);
    free(off);
    free(nb);
    free(woff);
    free(wnb);
    free(wd2);
    return rc;
}

// ---- rows of a set against itself ----

static int test_rows_corpus(void)
{
#if defined(NBI_AVX512)
    // rows sorted by insertion (and shell) sort, then by the AVX-512 network where it runs
    nbi_avx512_off = 1;
    nboSet c = make_set(SET_CLUSTERS, 900, 2, 30.0);
    NB_CHECK(check_rows(&c, &c, true, 1.3, 0.0, 0.0, NULL) == 0);
    nbo_set_free(&c);
    nbi_avx512_off = 0;
#endif
    for (int dim = 2; dim <= 3; dim++)
        for (int kind = 0; kind < SET_KINDS; kind++) {
            const int32_t n = dim == 2 ? 900 : 700;
            const double side = dim == 2 ? 30.0 : 9.0;
            nboSet s = make_set(kind, n, dim, side);
            const double r = kind == SET_LATTICE ? 1.0 : 1.3;
            // default cells, cells much smaller than r (hashed or ranked), larger than r
            NB_CHECK(check_rows(&s, &s, true, r, 0.0, 0.0, NULL) == 0);
            NB_CHECK(check_rows(&s, &s, true, r, 0.31, 0.0, NULL) == 0);
            NB_CHECK(check_rows(&s, &s, true, r, 2.7, 0.0, NULL) == 0);
            nbo_set_free(&s);
        }
    return 0;
}

static int test_rows_periodic(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        const double period[3] = {10.0, 8.0, dim == 3 ? 6.0 : 0.0};
        nboSet s = make_set(SET_UNIFORM, 600, dim, 1.0);
        for (int32_t i = 0; i < s.n; i++)
            for (int d = 0; d < dim; d++) s.p[(size_t)i * (size_t)dim + d] *= period[d];
        s.p[0] = 0.0; // on the faces
        s.p[dim] = nextafter(period[0], 0.0);
        NB_CHECK(check_rows(&s, &s, true, 1.1, 0.0, 0.0, period) == 0);
        NB_CHECK(check_rows(&s, &s, true, 3.0, 0.0, 0.0, period) == 0); // r = P / 2 on z
        nbo_set_free(&s);
    }
    return 0;
}

static int test_rows_filters(void)
{
    nboSet s = make_set(SET_UNIFORM, 800, 2, 25.0);
    nbo_set_add_filters(&s);
    for (int32_t i = 0; i < s.n; i++) {
        s.cat[i] = 1u << nbt_int(3);
        s.mask[i] = (uint32_t)nbt_int(8);
    }
    NB_CHECK(check_rows(&s, &s, true, 1.5, 0.0, 0.0, NULL) == 0);
    nbo_set_free(&s);
    return 0;
}

static int test_rows_empty(void)
{
    nboSet e = nbo_set_new(0, 2), one = make_set(SET_UNIFORM, 1, 2, 1.0);
    nboSet far = make_set(SET_UNIFORM, 50, 2, 1000.0); // rows mostly empty
    NB_CHECK(check_rows(&e, &e, true, 1.0, 0.0, 0.0, NULL) == 0);
    NB_CHECK(check_rows(&one, &one, true, 1.0, 0.0, 0.0, NULL) == 0);
    NB_CHECK(check_rows(&far, &far, true, 1.0, 0.0, 0.0, NULL) == 0);
    NB_CHECK(check_rows(&far, &e, false, 1.0, 0.0, 0.0, NULL) == 0); // a set against none
    NB_CHECK(check_rows(&e, &far, false, 1.0, 0.0, 0.0, NULL) == 0);
    nbo_set_free(&e);
    nbo_set_free(&one);
    nbo_set_free(&far);
    return 0;
}

// Rows longer than the sorting network: up to NBI_ROW_LONG (runs of 32 merged) and beyond it
// (the shell sort), from a pile of duplicates, with and without the AVX-512 kernels.
static int test_rows_long(void)
{
    nboSet s = make_set(SET_UNIFORM, 1400, 2, 40.0);
    for (int32_t i = 0; i < 100; i++) { // rows of about 40 to 100
        s.p[2 * i] = 5.0 + 0.01 * (i % 40);
        s.p[2 * i + 1] = 5.0;
    }
    NB_CHECK(check_rows(&s, &s, true, 1.0, 0.0, 0.0, NULL) == 0);
#if defined(NBI_AVX512)
    nbi_avx512_off = 1; // every row by the shell sort
    NB_CHECK(check_rows(&s, &s, true, 1.0, 0.0, 0.0, NULL) == 0);
    nbi_avx512_off = 0;
#endif
    for (int32_t i = 300; i < 1330; i++) { // rows of 1029
        s.p[2 * i] = 20.0;
        s.p[2 * i + 1] = 20.0;
    }
    NB_CHECK(check_rows(&s, &s, true, 1.0, 0.0, 0.0, NULL) == 0);
    nbo_set_free(&s);
    return 0;
}

// Sets large enough for the scheduler's chunks (every form on the reverse scheduler runs a
// count pass, then fills each chunk at its base): no chunk may write into the next one's rows.
static int test_rows_chunks(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        nboSet s = make_set(SET_UNIFORM, 5000, dim, dim == 2 ? 60.0 : 15.0);
        nboSet t = make_set(SET_CLUSTERS, 4500, dim, dim == 2 ? 60.0 : 15.0);
        NB_CHECK(check_rows(&s, &s, true, 1.3, 0.0, 0.0, NULL) == 0);
        NB_CHECK(check_rows(&t, &s, false, 1.3, 0.0, 0.0, NULL) == 0);
        nbo_set_free(&s);
        nbo_set_free(&t);
    }
    return 0;
}

// Rows in cell order from slabs (a dense grid's cells along a row gathered together): rows of
// many cells (several slabs each), a row whose slab narrows around a clump, and a clump too
// crowded for any slab; in 2D and 3D, serially and in chunks.
static int test_rows_slabs(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        const int32_t n = dim == 2 ? 3000 : 2400;
        nboSet s = make_set(SET_UNIFORM, n, dim, 1.0);
        for (int32_t i = 0; i < n; i++) { // a box 80 x 40 (2D) or 60 x 4 x 4 (3D)
            double *p = s.p + (size_t)i * (size_t)dim;
            p[0] *= dim == 2 ? 80.0 : 60.0;
            for (int d = 1; d < dim; d++) p[d] *= dim == 2 ? 40.0 : 4.0;
        }
        for (int32_t i = 0; i < 150; i++) // a clump: its row's slabs narrow
            for (int d = 0; d < dim; d++)
                s.p[(size_t)i * (size_t)dim + d] = 2.0 + 0.8 * nbt_unit() + (d == 0 ? 20.0 : 0.0);
        NB_CHECK(check_rows(&s, &s, true, 1.3, 0.0, 0.0, NULL) == 0);
        for (int32_t i = 150; i < 1250; i++) // and one that fits no slab
            for (int d = 0; d < dim; d++)
                s.p[(size_t)i * (size_t)dim + d] = 1.0 + (d == 0 ? 40.0 + 0.001 * (i % 7) : 0.0);
        NB_CHECK(check_rows(&s, &s, true, 1.3, 0.0, 0.0, NULL) == 0);
        nbo_set_free(&s);
    }
    return 0;
}

// ---- set A against set B ----

static int test_cross_rows(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        const double side = dim == 2 ? 20.0 : 7.0;
        nboSet fluid = make_set(SET_CLUSTERS, 700, dim, side);
        nboSet wall = make_set(SET_UNIFORM, 300, dim, side);
        NB_CHECK(check_rows(&fluid, &wall, false, 1.2, 0.0, 0.0, NULL) == 0);
        NB_CHECK(check_rows(&wall, &fluid, false, 1.2, 0.7, 2.5, NULL) == 0);
        NB_CHECK(check_rows(&fluid, &fluid, false, 1.2, 0.0, 0.5, NULL) == 0); // i in its own row
        const double period[3] = {side, side, dim == 3 ? side : 0.0};
        NB_CHECK(check_rows(&fluid, &wall, false, 1.2, 0.0, 0.0, period) == 0);
        nbo_set_free(&fluid);
        nbo_set_free(&wall);
    }
    return 0;
}

// ---- the Verlet list ----

// Moves every point by a random vector of length at most `step`, wrapped into the box when
// periodic.
static void jiggle(nboSet *s, double step, const double *period)
{
    for (int32_t i = 0; i < s->n; i++) {
        double *p = s->p + (size_t)i * (size_t)s->dim;
        double v[3], len = 0.0;
        for (int d = 0; d < s->dim; d++) {
            v[d] = nbt_gauss();
            len += v[d] * v[d];
        }
        const double scale = step * nbt_unit() / sqrt(len);
        for (int d = 0; d < s->dim; d++) {
            p[d] += v[d] * scale;
            if (period != NULL && period[d] > 0.0) {
                p[d] -= period[d] * floor(p[d] / period[d]);
                if (p[d] >= period[d]) p[d] = 0.0;
            }
        }
    }
}

// The largest displacement between two copies of a set (the minimum image when periodic).
static double max_disp(const nboSet *s, const double *ref, const double *period)
{
    double m = 0.0;
    for (int32_t i = 0; i < s->n; i++) {
        const double *p = nbo_pt(s, i), *q = ref + (size_t)i * (size_t)s->dim;
        const double e = period != NULL ? nbo_wrap_d2(p, q, s->dim, period) : nbo_d2(p, q, s->dim);
        m = e > m ? e : m;
    }
    return sqrt(m);
}

// The rows of a Verlet list in cell order (candidates and their keep bits) as compact rows:
// the kept entries of each row, with their distances when kept. The caller frees them.
static void kept_rows(const nbNeighborRows *r, int32_t **off, int32_t **nb, double **d2)
{
    *off = (int32_t *)nbo_xalloc(((size_t)r->rows + 1) * sizeof(int32_t));
    *nb = (int32_t *)nbo_xalloc(((size_t)r->entries + 1) * sizeof(int32_t));
    *d2 = (double *)nbo_xalloc(((size_t)r->entries + 1) * sizeof(double));
    int32_t m = 0;
    (*off)[0] = 0;
    for (int32_t p = 0; p < r->rows; p++) {
        for (int32_t t = r->offsets[p]; t < r->offsets[p + 1]; t++) {
            if (((r->keep[t >> 6] >> (t & 63)) & 1u) == 0) continue;
            (*nb)[m] = r->neighbors[t];
            (*d2)[m++] = r->dist2 != NULL ? r->dist2[t] : 0.0;
        }
        (*off)[p + 1] = m;
    }
}

// A Verlet list in cell order against the oracle: the order a permutation, the candidates
// ascending, the kept ones exactly the oracle's rows (and distances).
static bool same_verlet_cells(const nbVerlet *v, int32_t n, const int32_t *woff, const int32_t *wnb,
                              const double *wd2)
{
    nbNeighborRows rows;
    if (nb_verlet_rows(v, &rows) != NB_OK || rows.rows != n || rows.keep == NULL ||
        rows.order != rows.neighbor_order || !is_permutation(rows.order, n))
        return false;
    int32_t *off, *nb;
    double *d2;
    kept_rows(&rows, &off, &nb, &d2);
    const bool ok = same_cell_rows(n, off, nb, rows.dist2 != NULL ? d2 : NULL, rows.order,
                                   rows.order, woff, wnb, wd2);
    free(off);
    free(nb);
    free(d2);
    return ok;
}

// A Verlet list in candidates form against the oracle: its rows exactly the oracle's rows at
// r + skin from the positions of the last rebuild (coff, cnb), by index or in cell order
// (mapped by rows.order, ascending by position); and every row read through nb_verlet_row from
// the current points `s` exactly the oracle's row at r (woff, wnb, wd2), with its distances, a
// buffer one entry short refused with the full count (when `read`).
static bool same_verlet_candidates(const nbVerlet *v, const nboSet *s, const int32_t *coff,
                                   const int32_t *cnb, const int32_t *woff, const int32_t *wnb,
                                   const double *wd2, bool read)
{
    nbNeighborRows rows;
    if (nb_verlet_rows(v, &rows) != NB_OK || rows.rows != s->n || !rows.candidates ||
        rows.keep != NULL || rows.dist2 != NULL || rows.order != rows.neighbor_order)
        return false;
    bool ok = rows.order == NULL
                  ? same_rows(s->n, rows.offsets, rows.neighbors, NULL, coff, cnb, NULL)
                  : is_permutation(rows.order, s->n) &&
                        same_cell_rows(s->n, rows.offsets, rows.neighbors, NULL, rows.order,
                                       rows.order, coff, cnb, NULL);
    if (!ok) fprintf(stderr, "candidates differ from the oracle's at r + skin\n");
    const nbPoints pts = nbo_points(s);
    int32_t *nb = (int32_t *)nbo_xalloc(((size_t)rows.entries + 1) * sizeof(int32_t));
    double *d2 = (double *)nbo_xalloc(((size_t)rows.entries + 1) * sizeof(double));
    entry *row = (entry *)nbo_xalloc(((size_t)rows.entries + 1) * sizeof(entry));
    for (int32_t p = 0; p < s->n && ok && read; p++) {
        const int32_t i = rows.order != NULL ? rows.order[p] : p;
        const int32_t cap = rows.offsets[p + 1] - rows.offsets[p];
        int32_t found = -1;
        ok = nb_verlet_row(v, &pts, p, nb, d2, cap, &found) == NB_OK &&
             found == woff[i + 1] - woff[i];
        for (int32_t t = 0; t < found && ok; t++) {
            ok = t == 0 || nb[t] > nb[t - 1];
            row[t].j = rows.order != NULL ? rows.order[nb[t]] : nb[t];
            row[t].d2 = d2[t];
        }
        if (ok) sort_by_index(row, found);
        for (int32_t t = 0; t < found && ok; t++)
            ok = row[t].j == wnb[woff[i] + t] && row[t].d2 == wd2[woff[i] + t];
        int32_t again = -1;
        if (ok && found > 0)
            ok =
                nb_verlet_row(v, &pts, p, nb, NULL, found - 1, &again) == NB_ERR_BUFFER_TOO_SMALL &&
                again == found;
        if (!ok) fprintf(stderr, "nb_verlet_row: row %d (point %d) differs\n", (int)p, (int)i);
    }
    free(nb);
    free(d2);
    free(row);
    return ok;
}

// Many steps of small random moves; every 7th step one point is put at just under skin / 2
// from where it was at the last build, every 11th just over, every 13th far away (three
// skins). The list rebuilds exactly when some point moved more than skin / 2, and its rows
// always equal the oracle's: by index (with and without distances), in cell order (the
// candidates' keep bits, with and without distances), and in candidates form (by index and in
// cell order, each serially and on a scheduler).
static int verlet_steps(int kind, int dim, const double *period, int steps)
{
    const double r = 1.0, skin = 0.3;
    nbVerletDesc desc = {.radius = r, .skin = skin, .dim = dim, .distances = true};
    if (period != NULL) memcpy(desc.period, period, sizeof desc.period);
    nbVerlet *v = NULL, *plain = NULL; // with and without distances
    nbVerlet *cells = NULL, *cells_d2 = NULL;
    NB_CHECK_OK(nb_verlet_create(&desc, &v));
    desc.cell_order = true;
    NB_CHECK_OK(nb_verlet_create(&desc, &cells_d2));
    desc.distances = false;
    NB_CHECK_OK(nb_verlet_create(&desc, &cells));
    desc.cell_order = false;
    NB_CHECK_OK(nb_verlet_create(&desc, &plain));
    nbVerlet *cand[4] = {NULL, NULL, NULL, NULL}; // by index, in cell order; serial, tasks
    for (int c = 0; c < 4; c++) {
        nbVerletDesc cd = desc;
        cd.candidates = true;
        cd.cell_order = c % 2 == 1;
        cd.tasks = c >= 2 ? &reverse_tasks : NULL;
        NB_CHECK_OK(nb_verlet_create(&cd, &cand[c]));
    }
    nboSet s = make_set(kind, 500, dim, dim == 2 ? 15.0 : 6.0);
    double *ref = (double *)nbo_xalloc((size_t)s.n * (size_t)dim * sizeof(double));
    const nbPoints pts = nbo_points(&s);
    int32_t *coff = NULL, *cnb = NULL;
    double *cd2 = NULL;
    int rebuilds = 0;
    for (int step = 0; step < steps; step++) {
        if (step > 0) jiggle(&s, 0.012, period);
        if (step > 0 && (step % 7 == 0 || step % 11 == 0)) {
            const int32_t i = nbt_int(s.n);
            const double f = step % 11 == 0 ? 1.001 : 0.999;
            double *p = s.p + (size_t)i * (size_t)dim;
            memcpy(p, ref + (size_t)i * (size_t)dim, (size_t)dim * sizeof(double));
            p[0] += p[0] < 0.5 * (dim == 2 ? 15.0 : 6.0) ? 0.5 * skin * f : -0.5 * skin * f;
        }
        if (step > 0 && step % 13 == 0) {
            double *p = s.p + (size_t)nbt_int(s.n) * (size_t)dim;
            p[1] += p[1] < 0.5 * (dim == 2 ? 15.0 : 6.0) ? 3.0 * skin : -3.0 * skin;
        }
        const double moved = step > 0 ? max_disp(&s, ref, period) : 0.0;
        bool rebuilt = false;
        NB_CHECK_OK(nb_verlet_update(v, &pts, &rebuilt));
        if (step == 0 || moved > 0.5 * skin * 1.0001) NB_CHECK(rebuilt);
        if (step > 0 && moved < 0.5 * skin * 0.9999) NB_CHECK(!rebuilt);
        if (rebuilt) {
            rebuilds++;
            memcpy(ref, s.p, (size_t)s.n * (size_t)dim * sizeof(double));
        }
        int32_t *woff, *wnb;
        double *wd2;
        oracle_rows(&s, &s, true, r, period, &woff, &wnb, &wd2);
        nbNeighborRows rows;
        NB_CHECK_OK(nb_verlet_rows(v, &rows));
        NB_CHECK(rows.rows == s.n && rows.entries == woff[s.n]);
        NB_CHECK(same_rows(s.n, rows.offsets, rows.neighbors, rows.dist2, woff, wnb, wd2));
        bool again = false;
        NB_CHECK_OK(nb_verlet_update(plain, &pts, &again));
        NB_CHECK(again == rebuilt);
        NB_CHECK_OK(nb_verlet_rows(plain, &rows));
        NB_CHECK(rows.dist2 == NULL);
        NB_CHECK(same_rows(s.n, rows.offsets, rows.neighbors, NULL, woff, wnb, wd2));
        nbVerlet *const in_cells[2] = {cells, cells_d2};
        for (int c = 0; c < 2; c++) {
            NB_CHECK_OK(nb_verlet_update(in_cells[c], &pts, &again));
            NB_CHECK(again == rebuilt);
            NB_CHECK(same_verlet_cells(in_cells[c], s.n, woff, wnb, wd2));
        }
        if (rebuilt) { // the candidates: the rows at r + skin of the points of this rebuild
            free(coff);
            free(cnb);
            free(cd2);
            oracle_rows(&s, &s, true, r + skin, period, &coff, &cnb, &cd2);
        }
        for (int c = 0; c < 4; c++) {
            NB_CHECK_OK(nb_verlet_update(cand[c], &pts, &again));
            NB_CHECK(again == rebuilt);
            NB_CHECK(same_verlet_candidates(cand[c], &s, coff, cnb, woff, wnb, wd2, c < 2));
        }
        free(woff);
        free(wnb);
        free(wd2);
    }
    NB_CHECK(rebuilds >= steps / 10 && rebuilds < steps / 2);
    nb_verlet_destroy(v);
    nb_verlet_destroy(plain);
    nb_verlet_destroy(cells);
    nb_verlet_destroy(cells_d2);
    for (int c = 0; c < 4; c++) nb_verlet_destroy(cand[c]);
    free(coff);
    free(cnb);
    free(cd2);
    free(ref);
    nbo_set_free(&s);
    return 0;
}

static int test_verlet_steps(void)
{
    const double p2[3] = {15.0, 15.0, 0.0}, p3[3] = {6.0, 6.0, 6.0};
    NB_CHECK(verlet_steps(SET_UNIFORM, 2, NULL, 50) == 0);
    NB_CHECK(verlet_steps(SET_UNIFORM, 3, NULL, 50) == 0);
    NB_CHECK(verlet_steps(SET_UNIFORM, 2, p2, 50) == 0);
    NB_CHECK(verlet_steps(SET_UNIFORM, 3, p3, 50) == 0);
    NB_CHECK(verlet_steps(SET_CLUSTERS, 2, NULL, 20) == 0); // rows of more than 32 candidates
#if defined(NBI_AVX512)
    // the filter and the candidates' sort without the AVX-512 kernels
    nbi_avx512_off = 1;
    NB_CHECK(verlet_steps(SET_UNIFORM, 2, NULL, 20) == 0);
    NB_CHECK(verlet_steps(SET_CLUSTERS, 3, p3, 20) == 0);
    nbi_avx512_off = 0;
#endif
    return 0;
}

// The entries of a Verlet list's rows that are neighbours within r of the points (all, the
// kept ones, or the candidates within r), as nb_verlet_row reads them.
static int64_t kept(const nbVerlet *v, const nbPoints *pts)
{
    nbNeighborRows rows;
    if (nb_verlet_rows(v, &rows) != NB_OK) return -1;
    int32_t nb[64], found = 0;
    int64_t m = 0;
    for (int32_t p = 0; p < rows.rows; p++) {
        if (nb_verlet_row(v, pts, p, nb, NULL, 64, &found) != NB_OK) return -1;
        m += found;
    }
    return m;
}

// Displacements of exactly a hair under and over skin / 2 decide the rebuild; rows stay exact
// (exact rows by index, keep bits in cell order, candidates by index and in cell order).
static int verlet_threshold(bool cell_order, bool candidates)
{
    const double r = 1.0, skin = 0.4;
    nbVerletDesc desc = {
        .radius = r, .skin = skin, .dim = 2, .cell_order = cell_order, .candidates = candidates};
    const bool all = cell_order || candidates; // the rows hold the candidates
    nbVerlet *v = NULL;
    NB_CHECK_OK(nb_verlet_create(&desc, &v));
    // two points r + skin - 1e-9 apart, moving toward each other
    double xy[4] = {0.0, 0.0, r + skin - 1e-9, 0.0};
    const nbPoints pts = {.data = xy, .count = 2, .dim = 2};
    bool rebuilt = false;
    nbNeighborRows rows;
    NB_CHECK_OK(nb_verlet_update(v, &pts, &rebuilt));
    NB_CHECK(rebuilt);
    NB_CHECK_OK(nb_verlet_rows(v, &rows));
    NB_CHECK(kept(v, &pts) == 0 && rows.entries == 2 * all);
    xy[0] = 0.5 * skin * (1.0 - 1e-6); // just under: no rebuild, still apart
    xy[2] -= 0.5 * skin * (1.0 - 1e-6);
    NB_CHECK_OK(nb_verlet_update(v, &pts, &rebuilt));
    NB_CHECK(!rebuilt);
    NB_CHECK_OK(nb_verlet_rows(v, &rows));
    NB_CHECK(kept(v, &pts) == 2 - 2 * (xy[2] - xy[0] > r)); // the candidates decide exactly
    NB_CHECK(rows.entries == 2 * all);
    xy[0] = 0.5 * skin * (1.0 + 1e-6); // just over: rebuild, now within r
    xy[2] = r + skin - 1e-9 - 0.5 * skin * (1.0 + 1e-6);
    NB_CHECK_OK(nb_verlet_update(v, &pts, &rebuilt));
    NB_CHECK(rebuilt);
    NB_CHECK_OK(nb_verlet_rows(v, &rows));
    NB_CHECK(kept(v, &pts) == 2 && rows.offsets[1] == 1 && rows.neighbors[0] == 1);
    // a NaN is refused and the rows stay
    xy[1] = (double)NAN;
    NB_CHECK_STATUS(nb_verlet_update(v, &pts, &rebuilt), NB_ERR_NOT_FINITE);
    NB_CHECK(!rebuilt);
    NB_CHECK_OK(nb_verlet_rows(v, &rows));
    xy[1] = 0.0;
    NB_CHECK(kept(v, &pts) == 2);
    // skin 0: every update rebuilds
    nb_verlet_destroy(v);
    desc.skin = 0.0;
    NB_CHECK_OK(nb_verlet_create(&desc, &v));
    xy[1] = 0.0;
    NB_CHECK_OK(nb_verlet_update(v, &pts, &rebuilt));
    NB_CHECK_OK(nb_verlet_update(v, &pts, &rebuilt));
    NB_CHECK(rebuilt);
    nb_verlet_destroy(v);
    return 0;
}

// The candidates form's contract: not with distances; an update checks every point (a NaN
// before a point outside the periodic box, whatever their order) and keeps the rows on error;
// points with a stride; nb_verlet_row's statuses.
static int test_verlet_candidates(void)
{
    nbVerletDesc desc = {.radius = 1.0, .skin = 0.2, .period = {8.0, 8.0, 0.0}};
    desc.candidates = desc.distances = true;
    nbVerlet *v = NULL;
    NB_CHECK_STATUS(nb_verlet_create(&desc, &v), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(v == NULL);
    desc.distances = false;
    NB_CHECK_OK(nb_verlet_create(&desc, &v));
    // four points, a stride of 3 doubles: 0 and 1 within r across the boundary, 2 and 3
    // exactly r apart (within)
    double xyz[12] = {0.2, 4.0, -1.0, 7.5, 4.0, -1.0, 4.0, 7.99, -1.0, 5.0, 7.99, -1.0};
    const nbPoints pts = {.data = xyz, .count = 4, .dim = 2, .stride = 3 * sizeof(double)};
    bool rebuilt = false;
    NB_CHECK_OK(nb_verlet_update(v, &pts, &rebuilt));
    NB_CHECK(rebuilt && kept(v, &pts) == 4);
    xyz[0] = 0.25; // a small move: no rebuild
    NB_CHECK_OK(nb_verlet_update(v, &pts, &rebuilt));
    NB_CHECK(!rebuilt && kept(v, &pts) == 4);
    xyz[7] = 8.0; // a small move outside [0, P): refused, the rows stay
    NB_CHECK_STATUS(nb_verlet_update(v, &pts, &rebuilt), NB_ERR_OUT_OF_RANGE);
    xyz[1] = (double)INFINITY; // a point before it not finite: that first
    NB_CHECK_STATUS(nb_verlet_update(v, &pts, &rebuilt), NB_ERR_NOT_FINITE);
    xyz[1] = 4.0;
    xyz[7] = -1e-300;
    NB_CHECK_STATUS(nb_verlet_update(v, &pts, &rebuilt), NB_ERR_OUT_OF_RANGE);
    xyz[7] = 7.99;
    NB_CHECK(!rebuilt && kept(v, &pts) == 4);
    nbNeighborRows rows;
    NB_CHECK_OK(nb_verlet_rows(v, &rows));
    NB_CHECK(rows.candidates && rows.rows == 4 && rows.entries == 4);
    int32_t nb[4], found = 7;
    double d2[4];
    NB_CHECK_OK(nb_verlet_row(v, &pts, 0, nb, d2, 4, &found));
    NB_CHECK(found == 1 && nb[0] == 1 && fabs(d2[0] - 0.75 * 0.75) < 1e-12);
    NB_CHECK_OK(nb_verlet_row(v, &pts, 3, nb, d2, 1, &found));
    NB_CHECK(found == 1 && nb[0] == 2 && d2[0] == 1.0);
    NB_CHECK_STATUS(nb_verlet_row(v, &pts, 1, nb, NULL, 0, &found), NB_ERR_BUFFER_TOO_SMALL);
    NB_CHECK(found == 1);
    NB_CHECK_STATUS(nb_verlet_row(NULL, &pts, 0, nb, NULL, 4, &found), NB_ERR_NULL_ARG);
    NB_CHECK(found == 0);
    NB_CHECK_STATUS(nb_verlet_row(v, NULL, 0, nb, NULL, 4, &found), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_verlet_row(v, &pts, 0, NULL, NULL, 4, &found), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_verlet_row(v, &pts, 0, nb, NULL, 4, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_verlet_row(v, &pts, -1, nb, NULL, 4, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_verlet_row(v, &pts, 4, nb, NULL, 4, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_verlet_row(v, &pts, 0, nb, NULL, -1, &found), NB_ERR_OUT_OF_RANGE);
    nbPoints other = pts;
    other.count = 3;
    NB_CHECK_STATUS(nb_verlet_row(v, &other, 0, nb, NULL, 4, &found), NB_ERR_OUT_OF_RANGE);
    other = pts;
    other.dim = 3;
    NB_CHECK_STATUS(nb_verlet_row(v, &other, 0, nb, NULL, 4, &found), NB_ERR_OUT_OF_RANGE);
    other = pts;
    other.stride = sizeof(double);
    NB_CHECK_STATUS(nb_verlet_row(v, &other, 0, nb, NULL, 4, &found), NB_ERR_OUT_OF_RANGE);
    nb_verlet_destroy(v);
    return 0;
}

static int test_verlet_threshold(void)
{
    NB_CHECK(verlet_threshold(false, false) == 0);
    NB_CHECK(verlet_threshold(true, false) == 0);
    NB_CHECK(verlet_threshold(false, true) == 0);
    NB_CHECK(verlet_threshold(true, true) == 0);
    return 0;
}

// ---- memory ----

// Steady state allocates nothing: builds of a list and Verlet updates without a rebuild.
static int test_no_allocation(void)
{
    nbtAlloc count = {0};
    const nbAllocator al = nbt_allocator(&count);
    nboSet s = make_set(SET_UNIFORM, 2000, 2, 40.0);
    nbGridDesc gd = {.dim = 2, .allocator = &al};
    nbGrid *g = NULL;
    nbNeighborList *l = NULL, *lc = NULL;
    nbVerlet *v = NULL, *vc = NULL;
    const nbNeighborListDesc ld = {.allocator = &al, .distances = true};
    const nbNeighborListDesc lcd = {.allocator = &al, .distances = true, .cell_order = true};
    const nbVerletDesc vd = {.radius = 1.5, .skin = 0.3, .allocator = &al};
    NB_CHECK_OK(nb_grid_create(&gd, &g));
    NB_CHECK_OK(nb_neighbor_list_create(&ld, &l));
    NB_CHECK_OK(nb_neighbor_list_create(&lcd, &lc));
    NB_CHECK_OK(nb_verlet_create(&vd, &v));
    const nbVerletDesc vcd = {.radius = 1.5, .skin = 0.3, .allocator = &al, .cell_order = true};
    NB_CHECK_OK(nb_verlet_create(&vcd, &vc));
    nbVerlet *vk[2] = {NULL, NULL}; // candidates by index and in cell order
    for (int c = 0; c < 2; c++) {
        const nbVerletDesc kd = {
            .radius = 1.5, .skin = 0.3, .allocator = &al, .candidates = true, .cell_order = c};
        NB_CHECK_OK(nb_verlet_create(&kd, &vk[c]));
    }
    const nbPoints pts = nbo_points(&s);
    bool rebuilt;
    for (int frame = 0; frame < 6; frame++) {
        const int64_t before = count.allocs;
        NB_CHECK_OK(nb_grid_build(g, &pts, 1.5));
        NB_CHECK_OK(nb_neighbor_list_build(l, g, 1.5));
        NB_CHECK_OK(nb_neighbor_list_build(lc, g, 1.5));
        NB_CHECK_OK(nb_verlet_update(v, &pts, &rebuilt));
        NB_CHECK_OK(nb_verlet_update(vc, &pts, &rebuilt));
        for (int c = 0; c < 2; c++) NB_CHECK_OK(nb_verlet_update(vk[c], &pts, &rebuilt));
        if (frame >= 2) NB_CHECK(count.allocs == before);
        jiggle(&s, 0.001, NULL);
    }
    NB_CHECK(nb_neighbor_list_memory_bytes(l) > 0 && nb_verlet_memory_bytes(v) > 0);
    NB_CHECK(nb_verlet_memory_bytes(vc) > 0 && nb_verlet_memory_bytes(vk[1]) > 0);
    nb_verlet_destroy(v);
    nb_verlet_destroy(vc);
    for (int c = 0; c < 2; c++) nb_verlet_destroy(vk[c]);
    nb_neighbor_list_destroy(l);
    nb_neighbor_list_destroy(lc);
    nb_grid_destroy(g);
    NB_CHECK(count.live_bytes == 0 && count.allocs == count.frees && !count.size_mismatch);
    nbo_set_free(&s);
    return 0;
}

// Every allocation failing in turn: create, build and update return NB_ERR_OUT_OF_MEMORY, keep
// the previous rows, and leak nothing; the sweep ends with a run that succeeds.
static int test_failing_allocator(void)
{
    nboSet s = make_set(SET_UNIFORM, 400, 2, 12.0), t = make_set(SET_UNIFORM, 800, 2, 12.0);
    int32_t *woff, *wnb;
    double *wd2;
    oracle_rows(&s, &s, true, 1.0, NULL, &woff, &wnb, &wd2);
    int32_t *ckoff, *cknb; // the candidates at r + skin
    double *ckd2;
    oracle_rows(&s, &s, true, 1.2, NULL, &ckoff, &cknb, &ckd2);
    nbGridDesc gd = {.dim = 2};
    nbGrid *gs = NULL, *gt = NULL;
    const nbPoints ps = nbo_points(&s), pt = nbo_points(&t);
    NB_CHECK_OK(nb_grid_create(&gd, &gs));
    NB_CHECK_OK(nb_grid_create(&gd, &gt));
    NB_CHECK_OK(nb_grid_build(gs, &ps, 1.0));
    NB_CHECK_OK(nb_grid_build(gt, &pt, 1.0));
    int32_t *order = (int32_t *)nbo_xalloc((size_t)s.n * sizeof(int32_t)), got = 0;
    NB_CHECK_OK(nb_grid_cell_order(gs, order, s.n, &got));
    bool done = false;
    for (int64_t fail = 1; !done && fail < 200; fail++) {
        nbtAlloc fa = {0};
        fa.fail_at = fail;
        const nbAllocator al = nbt_allocator(&fa);
        const nbNeighborListDesc ld = {.allocator = &al, .distances = true, .capacity_hint = 10};
        const nbNeighborListDesc lcd = {.allocator = &al, .distances = true, .cell_order = true};
        const nbVerletDesc vd = {.radius = 1.0, .skin = 0.2, .allocator = &al, .distances = true};
        const nbVerletDesc vcd = {.radius = 1.0, .skin = 0.2, .allocator = &al, .cell_order = true};
        nbNeighborList *l = NULL, *lc = NULL;
        nbVerlet *v = NULL, *vc = NULL;
        nbStatus st = nb_neighbor_list_create(&ld, &l);
        if (st == NB_OK) st = nb_neighbor_list_create(&lcd, &lc);
        nbNeighborList *lists[2] = {lc, l}; // in cell order, by index
        for (int w = 0; w < 2 && st == NB_OK; w++) {
            st = nb_neighbor_list_build(lists[w], gs, 1.0); // the rows to keep
            if (st != NB_OK) break;
            st = nb_neighbor_list_build(lists[w], gt, 1.0); // grows: may fail
            nbNeighborRows rows;
            NB_CHECK_OK(nb_neighbor_list_rows(lists[w], &rows));
            if (st != NB_OK)
                NB_CHECK(rows.rows == s.n &&
                         (w == 0 ? same_cell_rows(s.n, rows.offsets, rows.neighbors, rows.dist2,
                                                  rows.order, rows.order, woff, wnb, wd2) &&
                                       memcmp(rows.order, order, (size_t)s.n * sizeof(int32_t)) == 0
                                 : same_rows(s.n, rows.offsets, rows.neighbors, rows.dist2, woff,
                                             wnb, wd2)));
        }
        if (st == NB_OK) st = nb_verlet_create(&vd, &v);
        if (st == NB_OK) st = nb_verlet_update(v, &ps, NULL);
        if (st == NB_OK) {
            st = nb_verlet_update(v, &pt, NULL); // another count: rebuilds, grows
            nbNeighborRows rows;
            NB_CHECK_OK(nb_verlet_rows(v, &rows));
            if (st != NB_OK)
                NB_CHECK(rows.rows == s.n &&
                         same_rows(s.n, rows.offsets, rows.neighbors, rows.dist2, woff, wnb, wd2));
        }
        if (st == NB_OK) st = nb_verlet_create(&vcd, &vc);
        if (st == NB_OK) st = nb_verlet_update(vc, &ps, NULL);
        if (st == NB_OK) {
            st = nb_verlet_update(vc, &pt, NULL); // in cell order: the same
            if (st != NB_OK) NB_CHECK(same_verlet_cells(vc, s.n, woff, wnb, NULL));
        }
        for (int c = 0; c < 2 && st == NB_OK; c++) { // candidates by index, in cell order
            const nbVerletDesc kd = {
                .radius = 1.0, .skin = 0.2, .allocator = &al, .candidates = true, .cell_order = c};
            nbVerlet *vk = NULL;
            st = nb_verlet_create(&kd, &vk);
            if (st == NB_OK) st = nb_verlet_update(vk, &ps, NULL);
            if (st == NB_OK) {
                st = nb_verlet_update(vk, &pt, NULL); // another count: rebuilds, grows
                if (st != NB_OK)
                    NB_CHECK(same_verlet_candidates(vk, &s, ckoff, cknb, woff, wnb, wd2, true));
            }
            nb_verlet_destroy(vk);
        }
        if (st != NB_OK) {
            NB_CHECK_STATUS(st, NB_ERR_OUT_OF_MEMORY);
            NB_CHECK(nbt_alloc_failed(&fa));
        }
        done = st == NB_OK && !nbt_alloc_failed(&fa);
        nb_verlet_destroy(v);
        nb_verlet_destroy(vc);
        nb_neighbor_list_destroy(l);
        nb_neighbor_list_destroy(lc);
        NB_CHECK(fa.live_bytes == 0 && fa.allocs - (fa.fail_at <= fa.allocs) == fa.frees);
    }
    NB_CHECK(done);
    nb_grid_destroy(gs);
    nb_grid_destroy(gt);
    free(order);
    free(woff);
    free(wnb);
    free(wd2);
    free(ckoff);
    free(cknb);
    free(ckd2);
    nbo_set_free(&s);
    nbo_set_free(&t);
    return 0;
}

int main(int argc, char **argv)
{
    const nbtCase cases[] = {
        {"rows_corpus", test_rows_corpus},
        {"rows_periodic", test_rows_periodic},
        {"rows_filters", test_rows_filters},
        {"rows_empty", test_rows_empty},
        {"rows_long", test_rows_long},
        {"rows_chunks", test_rows_chunks},
        {"rows_slabs", test_rows_slabs},
        {"cross_rows", test_cross_rows},
        {"verlet_steps", test_verlet_steps},
        {"verlet_threshold", test_verlet_threshold},
        {"verlet_candidates", test_verlet_candidates},
        {"no_allocation", test_no_allocation},
        {"failing_allocator", test_failing_allocator},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
