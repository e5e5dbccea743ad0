// SPDX-License-Identifier: MIT
// The walkers over a view no structure built: a hashed view laid out the way an incremental
// structure keeps its cells (cell numbers in any order, slack between cells, empty cells, cell
// coordinates in their own array, filter bits), answered by nbi_walk_pairs, nbi_walk_cross,
// nbi_walk_radius, nbi_walk_box and nbi_walk_knn and compared with the brute-force oracle. The
// slack holds decoys within reach of everything, so a walker that read past a cell's end would
// report them.
#include "view.h"

#include <nearby/grid.h>

#include "grid_internal.h"
#include "nb_oracle.h"
#include "nb_test.h"

typedef struct Built {
    nbiView v;
    nbiCellTable table;
    double *pts;
    int32_t *idx, *start, *end;
    uint32_t *cat, *mask;
    int64_t *keys;
} Built;

static void built_free(Built *b, const nbAllocator *a)
{
    nbi_ctab_free(&b->table, a);
    free(b->pts);
    free(b->idx);
    free(b->start);
    free(b->end);
    free(b->cat);
    free(b->mask);
    free(b->keys);
}

// Lays out s by cells of edge `cell`: cells numbered in a shuffled order, each followed by
// 0-3 decoy slots, plus `empties` empty cells.
static void build_view(Built *b, const nboSet *s, double cell, int32_t empties,
                       const nbAllocator *a)
{
    const int dim = s->dim;
    const nbiCellMath cm = nbi_cell_math(cell);
    int64_t(*key)[3] = (int64_t(*)[3])calloc((size_t)s->n + 1, sizeof *key);
    int32_t *cell_of = (int32_t *)calloc((size_t)s->n + 1, sizeof(int32_t));
    memset(&b->table, 0, sizeof b->table);
    nbi_ctab_grow(&b->table, a, (size_t)s->n + (size_t)empties);
    const int32_t maxc = s->n + empties;
    b->keys = (int64_t *)calloc((size_t)maxc * 3 + 3, sizeof(int64_t));
    int32_t ncells = 0;
    // cells in order of first appearance, then shuffled numbers
    for (int32_t i = 0; i < s->n; i++) {
        for (int d = 0; d < 3; d++) key[i][d] = d < dim ? nbi_cell_i(&cm, nbo_pt(s, i)[d]) : 0;
        bool ins;
        const int64_t slot =
            nbi_ctab_insert(&b->table, key[i][0], key[i][1], key[i][2], ncells, &ins);
        if (ins) ncells++;
        cell_of[i] = nbi_ctab_slots(&b->table)[slot].value;
    }
    for (int32_t e = 0; e < empties; e++) { // empty cells far away
        bool ins;
        nbi_ctab_insert(&b->table, 1000000 + e, -7, 0, ncells, &ins);
        if (ins) ncells++;
    }
    int32_t *perm = (int32_t *)malloc(((size_t)ncells + 1) * sizeof(int32_t));
    for (int32_t c = 0; c < ncells; c++) perm[c] = c;
    for (int32_t c = ncells - 1; c > 0; c--) {
        const int32_t u = nbt_int(c + 1), t = perm[c];
        perm[c] = perm[u];
        perm[u] = t;
    }
    const nbiCellSlot *slots = nbi_ctab_slots(&b->table);
    for (size_t h = 0; h < ((size_t)1 << b->table.bits); h++) {
        if (slots[h].value < 0) continue;
        const int32_t c = perm[slots[h].value];
        nbi_ctab_set(&b->table, (int64_t)h, c);
        memcpy(b->keys + (size_t)c * 3, slots[h].key, sizeof slots[h].key);
    }
    // counts, then blocks with slack
    int32_t *count = (int32_t *)calloc((size_t)ncells + 1, sizeof(int32_t));
    for (int32_t i = 0; i < s->n; i++) count[perm[cell_of[i]]]++;
    b->start = (int32_t *)calloc((size_t)ncells + 1, sizeof(int32_t));
    b->end = (int32_t *)calloc((size_t)ncells + 1, sizeof(int32_t));
    int32_t pos = 0;
    for (int32_t c = 0; c < ncells; c++) {
        b->start[c] = b->end[c] = pos;
        pos += count[c] + nbt_int(4);
    }
    const size_t room = (size_t)pos + 1;
    b->pts = (double *)calloc(room * (size_t)dim, sizeof(double));
    b->idx = (int32_t *)calloc(room, sizeof(int32_t));
    b->cat = (uint32_t *)calloc(room, sizeof(uint32_t));
    b->mask = (uint32_t *)calloc(room, sizeof(uint32_t));
    for (size_t p = 0; p < room; p++) { // decoys: point 0's place, every bit, index -1
        memcpy(b->pts + p * (size_t)dim, nbo_pt(s, 0), (size_t)dim * sizeof(double));
        b->idx[p] = -1;
        b->cat[p] = b->mask[p] = 0xFFFFFFFFu;
    }
    double max_abs = 0.0;
    int64_t lo[3] = {INT64_MAX, INT64_MAX, INT64_MAX}, hi[3] = {INT64_MIN, INT64_MIN, INT64_MIN};
    for (int32_t i = 0; i < s->n; i++) {
        const int32_t c = perm[cell_of[i]], p = b->end[c]++;
        memcpy(b->pts + (size_t)p * (size_t)dim, nbo_pt(s, i), (size_t)dim * sizeof(double));
        b->idx[p] = i;
        b->cat[p] = nbo_cat(s, i);
        b->mask[p] = nbo_mask(s, i);
        for (int d = 0; d < dim; d++) {
            const double x = fabs(nbo_pt(s, i)[d]);
            max_abs = x > max_abs ? x : max_abs;
        }
    }
    for (int32_t c = 0; c < ncells; c++)
        for (int d = 0; d < 3; d++) {
            lo[d] = b->keys[(size_t)c * 3 + d] < lo[d] ? b->keys[(size_t)c * 3 + d] : lo[d];
            hi[d] = b->keys[(size_t)c * 3 + d] > hi[d] ? b->keys[(size_t)c * 3 + d] : hi[d];
        }
    nbiView v = {0};
    v.dim = dim;
    v.n = s->n;
    v.pts = b->pts;
    v.idx = b->idx;
    v.cat = s->cat != NULL || s->mask != NULL ? b->cat : NULL;
    v.mask = v.cat != NULL ? b->mask : NULL;
    v.start = b->start;
    v.end = b->end;
    v.ncells = ncells;
    v.cm = cm;
    v.max_abs = max_abs;
    for (int d = 0; d < 3; d++) {
        v.lo[d] = lo[d];
        v.hi[d] = hi[d];
        v.ext[d] = hi[d] - lo[d] + 1;
    }
    v.table = &b->table;
    v.cell_keys = b->keys;
    b->v = v;
    free(key);
    free(cell_of);
    free(perm);
    free(count);
}

static bool collect(int32_t i, int32_t j, void *user)
{
    nbo_pair_push((nboPairList *)user, i, j);
    return true;
}

static int check_pairs(nbiPairSink *sink, nboPairList *got, const nbPair *want, int64_t want_n)
{
    int64_t n = 0;
    nbPair *g = nbo_pair_finish(got, &n);
    nbo_sort_pairs(g, n);
    NB_CHECK(sink->found == want_n && nbo_same_pairs(g, n, want, want_n));
    free(g);
    return 0;
}

static int test_walkers_on_a_slack_view(void)
{
    nbAllocator a;
    NB_CHECK(nbi_allocator(NULL, &a));
    static nbiPairSink sink;
    for (int round = 0; round < 40; round++) {
        const int dim = 2 + round % 2;
        const int32_t n = 2 + nbt_int(300);
        nboSet s = nbo_set_new(n, dim);
        for (int32_t i = 0; i < n * dim; i++) s.p[i] = nbt_range(-5.0, 5.0);
        if (round % 3 > 0) {
            nbo_set_add_filters(&s);
            for (int32_t i = 0; i < n; i++) {
                s.cat[i] = 1u << nbt_int(3);
                s.mask[i] = (uint32_t)nbt_int(8);
            }
        }
        const double r = nbt_range(0.1, 2.0), cell = nbt_range(0.3, 3.0);
        Built b;
        build_view(&b, &s, cell, nbt_int(5), &a);
        // all pairs, by units in two halves
        int64_t want_n = 0;
        nbPair *want = nbo_pairs(&s, r, &want_n);
        nboPairList got = {NULL, 0, 0};
        nbi_pair_sink_init(&sink, NBI_SINK_VISIT, NULL, 0, collect, &got);
        const int32_t half = b.v.ncells / 2;
        NB_CHECK_OK(nbi_walk_pairs(&b.v, r, 0, half, &sink));
        NB_CHECK_OK(nbi_walk_pairs(&b.v, r, half, b.v.ncells, &sink));
        if (check_pairs(&sink, &got, want, want_n)) return 1;
        free(want);
        // cross with itself: every ordered pair, (i, i) included
        want = nbo_cross_pairs(&s, &s, r, &want_n);
        got.p = NULL;
        got.n = got.cap = 0;
        nbi_pair_sink_init(&sink, NBI_SINK_VISIT, NULL, 0, collect, &got);
        NB_CHECK_OK(nbi_walk_cross(&b.v, &b.v, r, &sink));
        if (check_pairs(&sink, &got, want, want_n)) return 1;
        free(want);
        // radius, box, kNN with filters
        for (int q = 0; q < 10; q++) {
            const nbFilter f =
                q == 0 ? NB_FILTER_ALL : (nbFilter){1u << nbt_int(3), 1u + (uint32_t)nbt_int(7)};
            double c[3], lo[3], hi[3];
            for (int d = 0; d < dim; d++) {
                c[d] = nbt_range(-6.0, 6.0);
                lo[d] = c[d] - nbt_range(0.0, 3.0);
                hi[d] = c[d] + nbt_range(0.0, 3.0);
            }
            int32_t *out = (int32_t *)malloc(((size_t)n + 1) * sizeof(int32_t));
            int32_t wn = 0;
            int32_t *w = nbo_radius_filtered(&s, c, r, f, &wn);
            nbiHitSink hs;
            nbi_hit_sink_init(&hs, NBI_SINK_BUFFER, out, n + 1, NULL, NULL);
            NB_CHECK_OK(nbi_walk_radius(&b.v, c, r, f, &hs));
            nbo_sort_indices(out, hs.found);
            NB_CHECK(nbo_same_indices(out, hs.found, w, wn));
            free(w);
            w = nbo_box_filtered(&s, lo, hi, f, &wn);
            nbi_hit_sink_init(&hs, NBI_SINK_BUFFER, out, n + 1, NULL, NULL);
            NB_CHECK_OK(nbi_walk_box(&b.v, lo, hi, f, &hs));
            nbo_sort_indices(out, hs.found);
            NB_CHECK(nbo_same_indices(out, hs.found, w, wn));
            free(w);
            const int32_t k = 1 + nbt_int(10);
            nbNeighbor nb[12];
            int32_t found = -1;
            nbNeighbor *wk = nbo_knn_filtered(&s, c, k, f, &wn);
            NB_CHECK_OK(nbi_walk_knn(&b.v, c, f, (double)INFINITY, nb, k, &found));
            NB_CHECK(nbo_same_neighbors(nb, found, wk, wn));
            free(wk);
            free(out);
        }
        built_free(&b, &a);
        nbo_set_free(&s);
    }
    return 0;
}

static bool collect_visit(int32_t index, void *user)
{
    nboPairList *l = (nboPairList *)user;
    nbo_pair_push(l, index, 0);
    return true;
}

static bool stop_after_two(int32_t index, void *user)
{
    int32_t *seen = (int32_t *)user;
    seen[1 + seen[0]++] = index;
    return seen[0] < 2;
}

// Radius queries on the grid's hashed layout, whose small boxes are found through the table's
// blocks (cell_table.h): clustered points in a box far wider than they fill, 2D and 3D, with
// and without filter bits, at radii of a box of 3 and of 2 cells a side, in a grid whose table
// storage has room for the blocks (reserved for more points) and in one without. Every sink mode
// (buffer, count, truncated buffer, visitor, a visitor that stops) against the oracle, and the
// hits in the order the box's cells are looked up one at a time (the table without blocks).
static int test_hashed_grid_blocks(void)
{
    for (int dim = 2; dim <= 3; dim++)
        for (int variant = 0; variant < 4; variant++) {
            // Without and with room for the blocks: a grid reserved for 4x its points has it.
            const int filtered = variant & 1, roomy = variant >> 1;
            const int32_t n = 3000;
            nboSet s = nbo_set_new(n, dim);
            if (filtered) nbo_set_add_filters(&s);
            for (int32_t i = 0; i < n; i++) {
                double *p = s.p + (size_t)i * (size_t)dim;
                const int32_t blob = i / 100; // blobs of 100 points, 1e4 apart
                for (int d = 0; d < dim; d++)
                    p[d] = (double)((blob * (7 + 3 * d)) % 29) * 1e4 + nbt_gauss() * 2.0;
                if (filtered) {
                    s.cat[i] = 1u << nbt_int(3);
                    s.mask[i] = nbt_int(4) == 0 ? 1u : 7u;
                }
            }
            nbGridDesc desc = {0};
            desc.dim = dim;
            nbGrid *g = NULL;
            NB_CHECK_OK(nb_grid_create(&desc, &g));
            if (roomy) NB_CHECK_OK(nb_grid_reserve(g, 4 * n));
            const nbPoints pts = nbo_points(&s);
            const double r = 0.5;
            NB_CHECK_OK(nb_grid_build(g, &pts, r));
            NB_CHECK(g->hashed);
            int32_t *out = (int32_t *)malloc((size_t)n * sizeof(int32_t));
            int32_t *cells = (int32_t *)malloc((size_t)n * sizeof(int32_t));
            NB_CHECK(out != NULL && cells != NULL);
            for (int q = 0; q < 400; q++) {
                double c[3];
                const int32_t at = nbt_int(n);
                for (int d = 0; d < dim; d++) c[d] = nbo_pt(&s, at)[d] + nbt_gauss() * 0.3;
                const double rq = q % 2 == 0 ? r : 0.3 * r;
                const nbFilter f = {q % 3 == 0 ? 1u : 7u, q % 5 == 0 ? 2u : 7u};
                int32_t want_n = 0, found = 0;
                int32_t *want = nbo_radius_filtered(&s, c, rq, f, &want_n);
                NB_CHECK_OK(nb_grid_query_radius(g, c, rq, f, out, n, &found));
                NB_CHECK(!roomy || g->table.block_bits > 0);
                NB_CHECK(found == want_n);
                memcpy(cells, out, (size_t)found * sizeof(int32_t));
                nbo_sort_indices(cells, found);
                NB_CHECK(nbo_same_indices(cells, found, want, want_n));
                // The order the box's cells give looked up one at a time.
                const int32_t bits = g->table.block_bits;
                g->table.block_bits = 0;
                int32_t cell_n = 0;
                NB_CHECK_OK(nb_grid_query_radius(g, c, rq, f, cells, n, &cell_n));
                g->table.block_bits = bits;
                NB_CHECK(nbo_same_indices(out, found, cells, cell_n));
                // Count only, truncated, visited, stopped.
                int32_t count = -1;
                NB_CHECK_STATUS(nb_grid_query_radius(g, c, rq, f, NULL, 0, &count),
                                want_n > 0 ? NB_ERR_BUFFER_TOO_SMALL : NB_OK);
                NB_CHECK(count == want_n);
                int32_t few[3] = {-1, -1, -1};
                const nbStatus st = nb_grid_query_radius(g, c, rq, f, few, 2, &count);
                NB_CHECK(count == want_n && st == (want_n > 2 ? NB_ERR_BUFFER_TOO_SMALL : NB_OK));
                for (int32_t i = 0; i < 2 && i < want_n; i++) NB_CHECK(few[i] == out[i]);
                NB_CHECK(few[2] == -1);
                nboPairList l = {NULL, 0, 0};
                NB_CHECK_OK(nb_grid_visit_radius(g, c, rq, f, collect_visit, &l));
                int64_t visited = 0;
                nbPair *v = nbo_pair_finish(&l, &visited);
                NB_CHECK(visited == want_n);
                for (int32_t i = 0; i < want_n; i++) NB_CHECK(v[i].i == out[i]);
                free(v);
                int32_t seen[4] = {0, -1, -1, -1};
                NB_CHECK_OK(nb_grid_visit_radius(g, c, rq, f, stop_after_two, seen));
                NB_CHECK(seen[0] == (want_n < 2 ? want_n : 2));
                for (int32_t i = 0; i < seen[0]; i++) NB_CHECK(seen[1 + i] == out[i]);
                free(want);
            }
            NB_CHECK_OK(nb_grid_validate(g));
            free(out);
            free(cells);
            nb_grid_destroy(g);
            nbo_set_free(&s);
        }
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"walkers_on_a_slack_view", test_walkers_on_a_slack_view},
        {"hashed_grid_blocks", test_hashed_grid_blocks},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
