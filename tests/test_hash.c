// SPDX-License-Identifier: MIT
// The spatial hash against a brute-force model: thousands of random insert / move / remove /
// set / clear sequences (teleports, moves to the same spot, coordinates near +-1e12, -0.0,
// duplicates, filters), every query compared with the model after the steps; bad handles
// (null, stale, removed, foreign) change nothing, alone or in a batched move; no allocation in a
// steady state; a failing allocator at every allocation of every operation that can allocate leaves
// the hash as it was.
#include <nearby/hash.h>

#include "hash_stats.h"
#include "nb_oracle.h"
#include "nb_test.h"

#include <math.h>

enum { MAXN = 700 };

// The model: every item ever inserted, alive or not, by its user value (its index here).
typedef struct Model {
    int dim;
    int32_t n;
    bool alive[MAXN];
    double pos[MAXN][3];
    uint32_t cat[MAXN], mask[MAXN];
    nbHandle handle[MAXN];
} Model;

// The live items as an oracle set; map[i] is the model index of set point i.
static nboSet live_set(const Model *m, int32_t *map)
{
    int32_t n = 0;
    for (int32_t i = 0; i < m->n; i++) n += m->alive[i];
    nboSet s = nbo_set_new(n, m->dim);
    nbo_set_add_filters(&s);
    n = 0;
    for (int32_t i = 0; i < m->n; i++) {
        if (!m->alive[i]) continue;
        memcpy(s.p + (size_t)n * (size_t)m->dim, m->pos[i], (size_t)m->dim * sizeof(double));
        s.cat[n] = m->cat[i];
        s.mask[n] = m->mask[i];
        map[n++] = i;
    }
    return s;
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

// The hits' user values, sorted, against the oracle's indices mapped to model indices; every
// hit's handle must be the model's handle for that item.
static int same_hits(const Model *m, const nbHit *hits, int32_t n, const int32_t *want,
                     int32_t want_n, const int32_t *map)
{
    NB_CHECK(n == want_n);
    uint64_t *got = (uint64_t *)malloc(((size_t)n + 1) * sizeof(uint64_t));
    uint64_t *exp = (uint64_t *)malloc(((size_t)n + 1) * sizeof(uint64_t));
    for (int32_t t = 0; t < n; t++) {
        got[t] = hits[t].user;
        NB_CHECK(hits[t].user < (uint64_t)m->n &&
                 m->handle[hits[t].user].bits == hits[t].handle.bits);
        exp[t] = (uint64_t)map[want[t]];
    }
    qsort(got, (size_t)n, sizeof(uint64_t), cmp_u64);
    qsort(exp, (size_t)n, sizeof(uint64_t), cmp_u64);
    const bool same = n == 0 || memcmp(got, exp, (size_t)n * sizeof(uint64_t)) == 0;
    free(got);
    free(exp);
    NB_CHECK(same);
    return 0;
}

static nbFilter random_bits(void)
{
    if (nbt_int(3) == 0) return NB_FILTER_ALL;
    nbFilter f = {nbt_int(16) == 0 ? 0u : 1u << nbt_int(3), (uint32_t)nbt_int(8)};
    return f;
}

// A position: clustered near a few centres, or far away, -0.0, on a cell boundary, a
// duplicate of another item.
static void random_pos(const Model *m, double scale, double *p)
{
    const int kind = nbt_int(10);
    for (int d = 0; d < m->dim; d++) {
        if (kind < 5)
            p[d] = nbt_range(-scale, scale);
        else if (kind == 5)
            p[d] = (nbt_int(2) ? 1e12 : -1e12) + nbt_range(-scale, scale);
        else if (kind == 6)
            p[d] = nbt_int(2) ? -0.0 : 0.0;
        else if (kind == 7)
            p[d] = (double)(nbt_int(9) - 4); // cell boundaries (cell 1)
        else if (kind == 8 && m->n > 0)
            p[d] = m->pos[nbt_int(m->n)][d];
        else
            p[d] = nbt_range(-3.0, 3.0);
    }
}

typedef struct PairLog {
    nboPairList l;
} PairLog;

static bool log_pair(nbHit a, nbHit b, void *user)
{
    nbo_pair_push(&((PairLog *)user)->l, (int32_t)a.user, (int32_t)b.user);
    return true;
}

// visit_knn's neighbours against the buffer form's, one by one.
typedef struct KnnSeen {
    const nbHitNeighbor *want;
    int32_t n, cap, wrong;
} KnnSeen;

static bool same_neighbor(nbHit hit, double dist2, void *user)
{
    KnnSeen *s = (KnnSeen *)user;
    if (s->n >= s->cap || s->want[s->n].hit.handle.bits != hit.handle.bits ||
        s->want[s->n].dist2 != dist2)
        s->wrong++;
    s->n++;
    return true;
}

static bool count_hit(nbHit hit, void *user)
{
    (void)hit;
    (*(int32_t *)user)++;
    return true;
}

// Every query of the hash against the model.
static int check_queries(nbHash *h, const Model *m, double scale)
{
    NB_CHECK_OK(nb_hash_validate(h));
    static int32_t map[MAXN];
    nboSet s = live_set(m, map);
    NB_CHECK(nb_hash_count(h) == s.n);
    static nbHit hits[MAXN + 1];
    static nbHitNeighbor nbs[MAXN + 1];
    const double r = nbt_int(4) == 0 ? nbt_range(0.0, 4.0 * scale) : nbt_range(0.0, 2.0);
    for (int q = 0; q < 4; q++) {
        const nbFilter f = q == 0 ? NB_FILTER_ALL : random_bits();
        double c[3], lo[3], hi[3];
        random_pos(m, scale, c);
        for (int d = 0; d < m->dim; d++) {
            lo[d] = c[d] - nbt_range(0.0, 2.0);
            hi[d] = c[d] + nbt_range(0.0, 2.0);
        }
        int32_t found = -1, wn = 0;
        int32_t *w = nbo_radius_filtered(&s, c, r, f, &wn);
        NB_CHECK_OK(nb_hash_query_radius(h, c, r, f, hits, MAXN + 1, &found));
        if (same_hits(m, hits, found, w, wn, map)) return 1;
        int32_t visited = 0;
        NB_CHECK_OK(nb_hash_visit_radius(h, c, r, f, count_hit, &visited));
        NB_CHECK(visited == wn);
        if (wn > 1) {
            NB_CHECK_STATUS(nb_hash_query_radius(h, c, r, f, hits, wn - 1, &found),
                            NB_ERR_BUFFER_TOO_SMALL);
            NB_CHECK(found == wn);
        }
        if (wn > 0) { // a short buffer holds the first `cap` hits in order, and nothing past them
            static nbHit part[MAXN + 1];
            const int32_t cap = nbt_int(wn);
            for (int32_t t = 0; t <= cap && t <= MAXN; t++) part[t].user = UINT64_MAX; // canary
            NB_CHECK_STATUS(nb_hash_query_radius(h, c, r, f, part, cap, &found),
                            NB_ERR_BUFFER_TOO_SMALL);
            NB_CHECK(found == wn);
            for (int32_t t = 0; t < cap; t++)
                NB_CHECK(part[t].handle.bits == hits[t].handle.bits &&
                         part[t].user == hits[t].user);
            NB_CHECK(part[cap].user == UINT64_MAX);
        }
        free(w);
        w = nbo_box_filtered(&s, lo, hi, f, &wn);
        const nbBox box = {{lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}};
        NB_CHECK_OK(nb_hash_query_box(h, &box, f, hits, MAXN + 1, &found));
        if (same_hits(m, hits, found, w, wn, map)) return 1;
        free(w);
        const int32_t k = nbt_int(8);
        nbNeighbor *wk = nbo_knn_filtered(&s, c, k, f, &wn);
        NB_CHECK_OK(nb_hash_knn(h, c, f, (double)INFINITY, nbs, k, &found));
        NB_CHECK(found == wn);
        for (int32_t t = 0; t < found; t++) { // distances exactly the oracle's, in order
            NB_CHECK(nbs[t].dist2 == wk[t].dist2);
            NB_CHECK(m->handle[nbs[t].hit.user].bits == nbs[t].hit.handle.bits);
            NB_CHECK(nbo_d2(m->pos[nbs[t].hit.user], c, m->dim) == wk[t].dist2);
        }
        // Within max_distance r: the oracle's list cut where it passes r; the callback form
        // hands over the same neighbours in the same order.
        int32_t within = 0;
        while (within < wn && wk[within].dist2 <= r * r) within++;
        NB_CHECK_OK(nb_hash_knn(h, c, f, r, nbs, k, &found));
        NB_CHECK(found == within);
        for (int32_t t = 0; t < found; t++) NB_CHECK(nbs[t].dist2 == wk[t].dist2);
        KnnSeen seen = {nbs, 0, within, 0};
        NB_CHECK_OK(nb_hash_visit_knn(h, c, f, r, k, same_neighbor, &seen));
        NB_CHECK(seen.n == within && seen.wrong == 0);
        free(wk);
        if (s.n > 0) { // neighbours of a stored item, itself excluded
            const int32_t self = nbt_int(s.n);
            w = nbo_radius_filtered(&s, nbo_pt(&s, self), r, f, &wn);
            int32_t keep = 0;
            for (int32_t t = 0; t < wn; t++)
                if (w[t] != self) w[keep++] = w[t];
            NB_CHECK_OK(
                nb_hash_query_neighbors(h, m->handle[map[self]], r, f, hits, MAXN + 1, &found));
            if (same_hits(m, hits, found, w, keep, map)) return 1;
            free(w);
        }
    }
    // pairs: buffer, count and visit agree with the oracle (pairs as model indices)
    int64_t want_n = 0, count = -1, found = -1;
    nbPair *want = nbo_pairs(&s, r, &want_n);
    for (int64_t t = 0; t < want_n; t++) {
        const int32_t a = map[want[t].i], b = map[want[t].j];
        want[t].i = a < b ? a : b;
        want[t].j = a < b ? b : a;
    }
    nbo_sort_pairs(want, want_n);
    const nbStatus st = nb_hash_count_pairs(h, r, &count);
    if (st == NB_ERR_OUT_OF_RANGE) { // the cost guard: a radius of very many cells
        NB_CHECK(r > 8.0);
        free(want);
        nbo_set_free(&s);
        return 0;
    }
    NB_CHECK_OK(st);
    NB_CHECK(count == want_n);
    nbHitPair *pairs = (nbHitPair *)malloc((size_t)(want_n + 1) * sizeof(nbHitPair));
    NB_CHECK_OK(nb_hash_pairs(h, r, pairs, want_n + 1, &found));
    NB_CHECK(found == want_n);
    PairLog log = {{NULL, 0, 0}};
    NB_CHECK_OK(nb_hash_visit_pairs(h, r, log_pair, &log));
    int64_t logged = 0;
    nbPair *got = nbo_pair_finish(&log.l, &logged);
    NB_CHECK(logged == want_n);
    for (int64_t t = 0; t < found; t++) { // same order as the visit
        NB_CHECK(pairs[t].a.user == (uint64_t)got[t].i && pairs[t].b.user == (uint64_t)got[t].j);
        const int32_t a = got[t].i, b = got[t].j;
        got[t].i = a < b ? a : b;
        got[t].j = a < b ? b : a;
    }
    nbo_sort_pairs(got, logged);
    NB_CHECK(nbo_same_pairs(got, logged, want, want_n));
    free(got);
    free(want);
    free(pairs);
    // cross pairs by mask: (a in A, b in B), a != b, roles kept
    const uint32_t ma = 1u + (uint32_t)nbt_int(7), mb = 1u + (uint32_t)nbt_int(7);
    nboPairList cross = {NULL, 0, 0};
    for (int32_t i = 0; i < s.n; i++) {
        if (!(s.cat[i] & ma) || s.mask[i] == 0) continue;
        for (int32_t j = 0; j < s.n; j++)
            if (j != i && (s.cat[j] & mb) && s.mask[j] != 0 &&
                nbo_within(nbo_pt(&s, i), nbo_pt(&s, j), s.dim, r))
                nbo_pair_push(&cross, map[i], map[j]);
    }
    want = nbo_pair_finish(&cross, &want_n);
    nbo_sort_pairs(want, want_n);
    NB_CHECK_OK(nb_hash_count_cross_pairs(h, r, ma, mb, &count));
    NB_CHECK(count == want_n);
    log.l.p = NULL;
    log.l.n = log.l.cap = 0;
    NB_CHECK_OK(nb_hash_visit_cross_pairs(h, r, ma, mb, log_pair, &log));
    got = nbo_pair_finish(&log.l, &logged);
    nbo_sort_pairs(got, logged);
    NB_CHECK(nbo_same_pairs(got, logged, want, want_n));
    pairs = (nbHitPair *)malloc((size_t)(want_n + 1) * sizeof(nbHitPair));
    NB_CHECK_OK(nb_hash_cross_pairs(h, r, ma, mb, pairs, want_n + 1, &found));
    NB_CHECK(found == want_n);
    free(pairs);
    free(got);
    free(want);
    nbo_set_free(&s);
    return 0;
}

// One random step of the sequence.
// A move: a small step, a teleport, or the same spot.
static void random_move_pos(const Model *m, int32_t i, double scale, double *p)
{
    memcpy(p, m->pos[i], 3 * sizeof(double));
    const int how = nbt_int(3);
    for (int d = 0; d < m->dim; d++) p[d] += how == 0 ? nbt_range(-0.7, 0.7) : 0.0;
    if (how == 1) random_pos(m, scale, p);
}

// nb_hash_move_many over 1 to 40 random items (repeats allowed): all of them move, in order, or,
// when one is removed, none does (the model checks every query afterwards).
static int random_batch(nbHash *h, Model *m, double scale)
{
    enum { MAXB = 40 };
    nbHandle items[MAXB];
    int32_t who[MAXB];
    double pos[MAXB * 3];
    const int32_t k = 1 + nbt_int(nbt_int(4) == 0 ? MAXB : 4);
    bool dead = false;
    for (int32_t t = 0; t < k; t++) {
        who[t] = nbt_int(m->n);
        items[t] = m->handle[who[t]];
        dead |= !m->alive[who[t]];
        random_move_pos(m, who[t], scale, pos + (size_t)t * (size_t)m->dim);
    }
    int32_t moved = -1;
    const nbStatus st = nb_hash_move_many(h, items, pos, k, &moved);
    if (dead) {
        NB_CHECK(st == NB_ERR_BAD_HANDLE && moved == 0);
        return 0;
    }
    NB_CHECK_OK(st);
    NB_CHECK(moved == k);
    for (int32_t t = 0; t < k; t++)
        memcpy(m->pos[who[t]], pos + (size_t)t * (size_t)m->dim, (size_t)m->dim * sizeof(double));
    return 0;
}

static int random_step(nbHash *h, Model *m, double scale)
{
    const int op = nbt_int(20);
    double p[3];
    if (op < 5 || m->n == 0) { // insert
        if (m->n == MAXN) return 0;
        random_pos(m, scale, p);
        const nbFilter f = random_bits();
        nbHandle hd;
        NB_CHECK_OK(nb_hash_insert(h, p, (uint64_t)m->n, f, &hd));
        NB_CHECK(hd.bits != 0);
        const int32_t i = m->n++;
        m->alive[i] = true;
        memcpy(m->pos[i], p, sizeof p);
        m->cat[i] = f.category;
        m->mask[i] = f.mask;
        m->handle[i] = hd;
        return 0;
    }
    const int32_t i = nbt_int(m->n);
    if (op < 8) return random_batch(h, m, scale);
    if (op < 15) { // move: a small step, a teleport, or the same spot
        random_move_pos(m, i, scale, p);
        const nbStatus st = nb_hash_move(h, m->handle[i], p);
        if (!m->alive[i]) {
            NB_CHECK(st == NB_ERR_BAD_HANDLE);
            return 0;
        }
        NB_CHECK_OK(st);
        memcpy(m->pos[i], p, sizeof p);
        return 0;
    }
    if (op < 18) { // remove
        const nbStatus st = nb_hash_remove(h, m->handle[i]);
        NB_CHECK(st == (m->alive[i] ? NB_OK : NB_ERR_BAD_HANDLE));
        m->alive[i] = false;
        return 0;
    }
    if (op == 18) { // set
        const nbFilter f = random_bits();
        const nbStatus st = nb_hash_set(h, m->handle[i], (uint64_t)i, f);
        NB_CHECK(st == (m->alive[i] ? NB_OK : NB_ERR_BAD_HANDLE));
        if (m->alive[i]) {
            m->cat[i] = f.category;
            m->mask[i] = f.mask;
        }
        return 0;
    }
    if (nbt_int(30) == 0) { // clear, now and then
        nb_hash_clear(h);
        for (int32_t t = 0; t < m->n; t++) m->alive[t] = false;
    }
    return 0;
}

static int test_random_sequences(void)
{
    static Model m;
    for (int round = 0; round < 96; round++) { // 96 sequences of 600 random steps
        memset(&m, 0, sizeof m);
        m.dim = 2 + round % 2;
        nbHashDesc desc = {0};
        desc.dim = m.dim;
        desc.cell_size = round % 3 == 0 ? 1.0 : nbt_range(0.2, 3.0);
        nbHash *h = NULL;
        NB_CHECK_OK(nb_hash_create(&desc, &h));
        const double scale = round % 4 == 0 ? 5.0 : 30.0;
        for (int step = 0; step < 600; step++) {
            if (random_step(h, &m, scale)) return 1;
            if (step % 120 == 119 && check_queries(h, &m, scale)) return 1;
            if (step % 10 == 0) NB_CHECK_OK(nb_hash_validate(h));
        }
        if (check_queries(h, &m, scale)) return 1;
        nb_hash_destroy(h);
    }
    return 0;
}

// Null, stale, removed, never-issued and foreign handles change nothing.
static int test_bad_handles(void)
{
    nbHashDesc desc = {0};
    desc.cell_size = 1.0;
    nbHash *h = NULL, *other = NULL;
    NB_CHECK_OK(nb_hash_create(&desc, &h));
    NB_CHECK_OK(nb_hash_create(&desc, &other));
    const double a[2] = {0.5, 0.5}, b[2] = {3.0, -2.0};
    nbHandle ha, hb, ho, gone;
    NB_CHECK_OK(nb_hash_insert(h, a, 1, NB_FILTER_ALL, &ha));
    NB_CHECK_OK(nb_hash_insert(h, b, 2, NB_FILTER_ALL, &hb));
    NB_CHECK_OK(nb_hash_insert(h, b, 3, NB_FILTER_ALL, &gone));
    NB_CHECK_OK(nb_hash_remove(h, gone));
    NB_CHECK_OK(nb_hash_insert(other, a, 9, NB_FILTER_ALL, &ho));
    nbHandle forged = ha;
    forged.bits = (ha.bits & ~(uint64_t)0xFFFFFFFFu) | 100u; // a slot never issued
    const nbHandle bad[4] = {NB_HANDLE_NULL, gone, ho, forged};
    for (int t = 0; t < 4; t++) {
        double pos[2] = {-1, -1};
        uint64_t user = 77;
        NB_CHECK_STATUS(nb_hash_move(h, bad[t], b), NB_ERR_BAD_HANDLE);
        NB_CHECK_STATUS(nb_hash_remove(h, bad[t]), NB_ERR_BAD_HANDLE);
        NB_CHECK_STATUS(nb_hash_set(h, bad[t], 5, NB_FILTER_ALL), NB_ERR_BAD_HANDLE);
        NB_CHECK_STATUS(nb_hash_get(h, bad[t], pos, &user, NULL), NB_ERR_BAD_HANDLE);
        NB_CHECK(pos[0] == -1 && user == 77);
        nbHit out[4];
        int32_t found = -1;
        NB_CHECK_STATUS(nb_hash_query_neighbors(h, bad[t], 10.0, NB_FILTER_ALL, out, 4, &found),
                        NB_ERR_BAD_HANDLE);
        NB_CHECK(found == 0);
        // in a batch, after a good entry: nothing moves
        const nbHandle batch[2] = {ha, bad[t]};
        const double to[4] = {7.5, 7.5, 1.0, 1.0};
        int32_t moved = -1;
        NB_CHECK_STATUS(nb_hash_move_many(h, batch, to, 2, &moved), NB_ERR_BAD_HANDLE);
        NB_CHECK(moved == 0);
        NB_CHECK_OK(nb_hash_validate(h));
        NB_CHECK(nb_hash_count(h) == 2);
    }
    { // batches: the first bad entry's status, nothing moved; the count and the pointers
        const nbHandle batch[3] = {ha, hb, gone};
        const double to[6] = {9.5, 9.5, (double)NAN, 0.0, 1.0, 1.0};
        int32_t moved = -1;
        NB_CHECK_STATUS(nb_hash_move_many(h, batch, to, 3, &moved), NB_ERR_NOT_FINITE);
        NB_CHECK(moved == 0);
        const double to2[6] = {9.5, 9.5, 0x1p70, 0.0, (double)NAN, 1.0};
        NB_CHECK_STATUS(nb_hash_move_many(h, batch, to2, 3, &moved), NB_ERR_OUT_OF_RANGE);
        NB_CHECK_STATUS(nb_hash_move_many(h, batch, to2, -1, &moved), NB_ERR_OUT_OF_RANGE);
        NB_CHECK_STATUS(nb_hash_move_many(h, NULL, to2, 1, &moved), NB_ERR_NULL_ARG);
        NB_CHECK_STATUS(nb_hash_move_many(h, batch, NULL, 1, &moved), NB_ERR_NULL_ARG);
        NB_CHECK_STATUS(nb_hash_move_many(NULL, batch, to2, 1, &moved), NB_ERR_NULL_ARG);
        NB_CHECK_OK(nb_hash_move_many(h, NULL, NULL, 0, &moved));
        NB_CHECK(moved == 0);
        double q[2];
        NB_CHECK_OK(nb_hash_get(h, ha, q, NULL, NULL));
        NB_CHECK(q[0] == 0.5 && q[1] == 0.5);
        NB_CHECK_OK(nb_hash_validate(h));
        // a handle twice ends at its last position; NULL `moved` is allowed
        const nbHandle twice[2] = {hb, hb};
        const double to3[4] = {-20.0, 4.0, 3.0, -2.0};
        NB_CHECK_OK(nb_hash_move_many(h, twice, to3, 2, NULL));
        NB_CHECK_OK(nb_hash_get(h, hb, q, NULL, NULL));
        NB_CHECK(q[0] == 3.0 && q[1] == -2.0);
        NB_CHECK_OK(nb_hash_validate(h));
    }
    double pos[2];
    uint64_t user = 0;
    NB_CHECK_OK(nb_hash_get(h, ha, pos, &user, NULL));
    NB_CHECK(pos[0] == 0.5 && user == 1);
    NB_CHECK_OK(nb_hash_get(other, ho, pos, &user, NULL));
    NB_CHECK(user == 9);
    // a removed item's slot is reused with a new generation: the old handle stays dead
    nbHandle again;
    NB_CHECK_OK(nb_hash_insert(h, a, 4, NB_FILTER_ALL, &again));
    NB_CHECK(again.bits != gone.bits);
    NB_CHECK_STATUS(nb_hash_move(h, gone, a), NB_ERR_BAD_HANDLE);
    // bad coordinates change nothing either
    const double nan_pos[2] = {(double)NAN, 0.0}, far[2] = {0x1p70, 0.0};
    NB_CHECK_STATUS(nb_hash_move(h, ha, nan_pos), NB_ERR_NOT_FINITE);
    NB_CHECK_STATUS(nb_hash_move(h, ha, far), NB_ERR_OUT_OF_RANGE);
    nbHandle none;
    NB_CHECK_STATUS(nb_hash_insert(h, far, 0, NB_FILTER_ALL, &none), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(none.bits == 0);
    NB_CHECK_OK(nb_hash_get(h, ha, pos, NULL, NULL));
    NB_CHECK(pos[0] == 0.5 && pos[1] == 0.5);
    NB_CHECK_OK(nb_hash_validate(h));
    nb_hash_destroy(h);
    nb_hash_destroy(other);
    return 0;
}

// Agents on a random walk: after a warm-up nothing allocates, whether all move or a few, one by
// one or in batches.
static int test_steady_state_allocates_nothing(void)
{
    nbtAlloc counter = {0};
    nbAllocator al = nbt_allocator(&counter);
    nbHashDesc desc = {0};
    desc.cell_size = 2.0;
    desc.allocator = &al;
    nbHash *h = NULL;
    NB_CHECK_OK(nb_hash_create(&desc, &h));
    enum { N = 3000 };
    static double pos[N][2];
    static nbHandle hd[N];
    for (int32_t i = 0; i < N; i++) {
        pos[i][0] = nbt_range(-40, 40);
        pos[i][1] = nbt_range(-40, 40);
        NB_CHECK_OK(nb_hash_insert(h, pos[i], (uint64_t)i, NB_FILTER_ALL, &hd[i]));
    }
    static nbHandle bh[N];
    static double bp[N][2];
    int64_t before = 0;
    for (int frame = 0; frame < 400; frame++) {
        if (frame == 200) before = counter.allocs;
        const bool batch = frame % 4 >= 2; // two frames of single moves, two of batches
        int32_t nb = 0;
        for (int32_t i = 0; i < N; i++) {
            if (frame % 2 && nbt_int(10) != 0) continue; // every other frame only 10% move
            for (int d = 0; d < 2; d++) {
                pos[i][d] += nbt_range(-0.5, 0.5);
                pos[i][d] = pos[i][d] > 40 ? 40 : pos[i][d] < -40 ? -40 : pos[i][d];
            }
            if (!batch) {
                NB_CHECK_OK(nb_hash_move(h, hd[i], pos[i]));
                continue;
            }
            bh[nb] = hd[i];
            bp[nb][0] = pos[i][0];
            bp[nb++][1] = pos[i][1];
        }
        int32_t moved = -1;
        if (batch) NB_CHECK_OK(nb_hash_move_many(h, bh, &bp[0][0], nb, &moved));
        NB_CHECK(!batch || moved == nb);
        int32_t found = 0;
        NB_CHECK_OK(nb_hash_visit_radius(h, pos[frame], 2.0, NB_FILTER_ALL, count_hit, &found));
        NB_CHECK(found >= 1);
    }
    NB_CHECK(counter.allocs == before);
    NB_CHECK_OK(nb_hash_validate(h));
    nb_hash_destroy(h);
    NB_CHECK(counter.live_bytes == 0 && counter.allocs == counter.frees && !counter.size_mismatch);
    return 0;
}

// The answers a hash gives to a fixed probe, to show a failed call left it unchanged.
static uint64_t fingerprint(nbHash *h)
{
    uint64_t f = (uint64_t)nb_hash_count(h) * 0x9E3779B97F4A7C15u;
    int64_t pairs = 0;
    if (nb_hash_count_pairs(h, 1.5, &pairs) != NB_OK) return 0;
    f ^= (uint64_t)pairs * 0xBF58476D1CE4E5B9u;
    static nbHit hits[256];
    int32_t found = 0;
    const double c[2] = {0.0, 0.0};
    if (nb_hash_query_radius(h, c, 6.0, NB_FILTER_ALL, hits, 256, &found) != NB_OK) return 0;
    for (int32_t t = 0; t < found; t++) f = f * 31 + hits[t].user + hits[t].handle.bits;
    return f;
}

// Fail allocation i of each operation that can allocate, for every i: NB_ERR_OUT_OF_MEMORY, the
// hash as it was (validate, the same answers in the same order), no leaks; the sweep ends on a
// try that succeeds, so no allocation falls outside it. A batched move (op 4) stops at the move
// that fails: the ones before it are made, that one and the rest are not.
static int test_allocation_failure(void)
{
    for (int op = 0; op < 5; op++) {
        bool succeeded = false;
        for (int64_t fail = 1; fail < 200 && !succeeded; fail++) {
            nbtAlloc counter = {0};
            nbAllocator al = nbt_allocator(&counter);
            nbHashDesc desc = {0};
            desc.cell_size = 1.0;
            desc.allocator = &al;
            desc.capacity_hint = op == 0 ? 50 : 0;
            nbHash *h = NULL;
            if (op == 0) counter.fail_at = fail; // create with a hint
            const nbStatus cst = nb_hash_create(&desc, &h);
            if (op == 0) {
                if (cst == NB_OK) { // a refused growth retried at the exact size may succeed
                    succeeded = !nbt_alloc_failed(&counter);
                    NB_CHECK_OK(nb_hash_validate(h));
                    nb_hash_destroy(h);
                } else {
                    NB_CHECK(cst == NB_ERR_OUT_OF_MEMORY && h == NULL &&
                             nbt_alloc_failed(&counter));
                }
                NB_CHECK(counter.live_bytes == 0 &&
                         counter.allocs - nbt_alloc_failed(&counter) == counter.frees);
                continue;
            }
            NB_CHECK_OK(cst);
            static nbHandle hd[40];
            for (int32_t i = 0; i < 40; i++) {
                const double p[2] = {(double)(i % 7) * 0.9, (double)(i / 7) * 0.8};
                NB_CHECK_OK(nb_hash_insert(h, p, (uint64_t)i, NB_FILTER_ALL, &hd[i]));
            }
            counter.fail_at = counter.allocs + fail;
            nbStatus st = NB_OK;
            for (int32_t t = 0; t < 60 && st == NB_OK; t++) { // enough to need every buffer again
                const double p[2] = {100.0 + t * 3.0, -50.0 - t};
                const uint64_t before = fingerprint(h);
                const size_t bytes = nb_hash_memory_bytes(h);
                nbHandle extra = {1};
                if (op == 1) st = nb_hash_insert(h, p, 100 + (uint64_t)t, NB_FILTER_ALL, &extra);
                if (op == 2) st = nb_hash_move(h, hd[t % 40], p);
                if (op == 3) st = nb_hash_reserve(h, 1000 + 100 * t);
                int32_t moved = -1;
                double was[5][2];
                nbHandle batch[5];
                double to[10];
                if (op == 4) { // a batch of 5 far moves: the ones before a failure are made
                    for (int j = 0; j < 5; j++) {
                        batch[j] = hd[(t * 5 + j) % 40];
                        NB_CHECK_OK(nb_hash_get(h, batch[j], was[j], NULL, NULL));
                        to[2 * j] = p[0] + j * 2.5;
                        to[2 * j + 1] = p[1] - j * 40.0;
                    }
                    st = nb_hash_move_many(h, batch, to, 5, &moved);
                    NB_CHECK(moved == (st == NB_OK ? 5 : moved) && moved >= 0 && moved <= 5);
                    for (int j = 0; j < 5; j++) {
                        double q[2];
                        NB_CHECK_OK(nb_hash_get(h, batch[j], q, NULL, NULL));
                        const double *want = j < moved ? to + 2 * j : was[j];
                        NB_CHECK(q[0] == want[0] && q[1] == want[1]);
                    }
                    NB_CHECK_OK(nb_hash_validate(h));
                    if (st != NB_OK) {
                        NB_CHECK(st == NB_ERR_OUT_OF_MEMORY && nbt_alloc_failed(&counter));
                        break;
                    }
                }
                if (st != NB_OK) {
                    NB_CHECK(st == NB_ERR_OUT_OF_MEMORY && nbt_alloc_failed(&counter));
                    NB_CHECK(op != 1 || extra.bits == 0);
                    NB_CHECK(fingerprint(h) == before && nb_hash_memory_bytes(h) == bytes);
                }
            }
            succeeded = st == NB_OK && !nbt_alloc_failed(&counter);
            NB_CHECK_OK(nb_hash_validate(h));
            nb_hash_destroy(h);
            NB_CHECK(counter.live_bytes == 0 && !counter.size_mismatch);
        }
        NB_CHECK(succeeded);
    }
    return 0;
}

// Queries start from a view of the hash that it keeps cached: every kind of change must reach
// the next query at once (and validate compares the cached view with a fresh one).
static int count_near(const nbHash *h, double x, double y, nbFilter f, int32_t *found)
{
    nbHit hits[8];
    const double c[2] = {x, y};
    NB_CHECK_OK(nb_hash_query_radius(h, c, 1.0, f, hits, 8, found));
    NB_CHECK_OK(nb_hash_validate(h));
    return 0;
}

static int test_view_follows_changes(void)
{
    nbHashDesc desc = {0};
    desc.cell_size = 1.0;
    nbHash *h = NULL;
    NB_CHECK_OK(nb_hash_create(&desc, &h));
    const nbFilter bit0 = {0xFFFFFFFFu, 1u}; // finds items whose category has bit 0
    int32_t found = -1;
    if (count_near(h, 0.0, 0.0, NB_FILTER_ALL, &found)) return 1;
    NB_CHECK(found == 0);
    nbHandle a, b;
    NB_CHECK_OK(nb_hash_insert(h, (const double[]){0.0, 0.0}, 1, NB_FILTER_ALL, &a));
    NB_CHECK_OK(nb_hash_insert(h, (const double[]){0.5, 0.0}, 2, NB_FILTER_ALL, &b));
    if (count_near(h, 0.0, 0.0, bit0, &found)) return 1;
    NB_CHECK(found == 2);
    const nbFilter bit1 = {2u, 0xFFFFFFFFu};
    NB_CHECK_OK(nb_hash_set(h, b, 2, bit1)); // the first filtered item: queries test bits now
    if (count_near(h, 0.0, 0.0, bit0, &found)) return 1;
    NB_CHECK(found == 1);
    NB_CHECK_OK(nb_hash_set(h, b, 2, NB_FILTER_ALL)); // and stop again
    if (count_near(h, 0.0, 0.0, bit0, &found)) return 1;
    NB_CHECK(found == 2);
    NB_CHECK_OK(nb_hash_move(h, b, (const double[]){0.75, 0.25})); // within its cell
    if (count_near(h, 1.5, 0.25, NB_FILTER_ALL, &found)) return 1;
    NB_CHECK(found == 1);
    NB_CHECK_OK(nb_hash_move(h, b, (const double[]){-3e9, 7e9})); // far: a new layout
    if (count_near(h, -3e9, 7e9, NB_FILTER_ALL, &found)) return 1;
    NB_CHECK(found == 1);
    NB_CHECK_OK(nb_hash_reserve(h, 5000)); // new storage
    if (count_near(h, -3e9, 7e9 + 0.5, NB_FILTER_ALL, &found)) return 1;
    NB_CHECK(found == 1);
    NB_CHECK_OK(nb_hash_remove(h, a));
    if (count_near(h, 0.0, 0.0, NB_FILTER_ALL, &found)) return 1;
    NB_CHECK(found == 0);
    nb_hash_clear(h);
    if (count_near(h, -3e9, 7e9, NB_FILTER_ALL, &found)) return 1;
    NB_CHECK(found == 0);
    NB_CHECK_OK(nb_hash_insert(h, (const double[]){4.0, 4.0}, 3, NB_FILTER_ALL, &a));
    if (count_near(h, 4.0, 4.5, NB_FILTER_ALL, &found)) return 1;
    NB_CHECK(found == 1);
    nb_hash_destroy(h);
    return 0;
}

// A crowd wandering in a box of side `side`: n items, a step of up to 0.5 per axis each,
// reflected at the walls, moved through the hash; then the radius queries at `queries` random
// points against brute force (user values, sorted).
typedef struct Crowd {
    int32_t n;
    double side;
    double (*pos)[2];
    nbHandle *handle;
} Crowd;

// A 2D hash with cells of 1 (about one item each), the crowd inserted in random places.
static int crowd_insert(nbHash **out, Crowd *c)
{
    nbHashDesc desc = {0};
    desc.dim = 2;
    desc.cell_size = 1.0;
    NB_CHECK_OK(nb_hash_create(&desc, out));
    nbHash *h = *out;
    for (int32_t i = 0; i < c->n; i++) {
        c->pos[i][0] = nbt_range(0.0, c->side);
        c->pos[i][1] = nbt_range(0.0, c->side);
        NB_CHECK_OK(nb_hash_insert(h, c->pos[i], (uint64_t)i, NB_FILTER_ALL, &c->handle[i]));
    }
    return 0;
}

static int crowd_step(nbHash *h, Crowd *c)
{
    for (int32_t i = 0; i < c->n; i++) {
        for (int a = 0; a < 2; a++) {
            double x = c->pos[i][a] + nbt_range(-0.5, 0.5);
            x = x < 0.0 ? -x : x;
            c->pos[i][a] = x >= c->side ? 2.0 * c->side - x - 1e-9 : x;
        }
        NB_CHECK_OK(nb_hash_move(h, c->handle[i], c->pos[i]));
    }
    return nb_hash_validate(h) != NB_OK;
}

static int crowd_queries(const nbHash *h, const Crowd *c, int queries)
{
    const double r = 1.5;
    nbHit *hits = (nbHit *)malloc((size_t)c->n * sizeof *hits);
    uint64_t *got = (uint64_t *)malloc((size_t)c->n * sizeof *got);
    uint64_t *want = (uint64_t *)malloc((size_t)c->n * sizeof *want);
    NB_CHECK(hits != NULL && got != NULL && want != NULL);
    for (int q = 0; q < queries; q++) {
        const double at[2] = {nbt_range(-1.0, c->side + 1.0), nbt_range(-1.0, c->side + 1.0)};
        int32_t found = 0, expect = 0;
        NB_CHECK_OK(nb_hash_query_radius(h, at, r, NB_FILTER_ALL, hits, c->n, &found));
        for (int32_t i = 0; i < c->n; i++)
            if (nbo_within(c->pos[i], at, 2, r)) want[expect++] = (uint64_t)i;
        NB_CHECK(found == expect);
        for (int32_t t = 0; t < found; t++) got[t] = hits[t].user;
        qsort(got, (size_t)found, sizeof *got, cmp_u64);
        NB_CHECK(memcmp(got, want, (size_t)found * sizeof *got) == 0);
    }
    free(hits);
    free(got);
    free(want);
    return 0;
}

// Small cells (about one item each) wandering in a hashed hash, kept hashed by one far item:
// a move into a cell with no slack within reach moves that cell to the end of the numbering
// (its items into the tail) instead of relaying out everything. Before, the crowd relaid out
// every few dozen moves that crossed a cell (about 90 times a frame at 100k items).
static int test_hashed_crowd_relays_out_seldom(void)
{
    enum { N = 3000, FRAMES = 30 };
    static double pos[N + 1][2];
    static nbHandle handle[N + 1];
    Crowd c = {N, 70.0, pos, handle};
    nbHash *h = NULL;
    if (crowd_insert(&h, &c)) return 1;
    const double far[2] = {1e7, -1e7};
    NB_CHECK_OK(nb_hash_insert(h, far, N, NB_FILTER_ALL, &handle[N]));
    nbiHashStats before, after;
    nbi_hash_stats(h, &before);
    NB_CHECK(!before.dense);
    for (int f = 0; f < FRAMES; f++) {
        if (crowd_step(h, &c)) return 1;
        if (f % 10 == 9 && crowd_queries(h, &c, 40)) return 1;
    }
    nbi_hash_stats(h, &after);
    NB_CHECK(!after.dense && after.renumbers > before.renumbers);
    NB_CHECK(after.relayouts - before.relayouts <= FRAMES / 2); // 9 here; 113 without renumbering
    nb_hash_destroy(h);
    return 0;
}

// A crowd that grows in place turns dense. 2000 items in a box of 4900 cells of 1 are hashed
// (the box is too large for dense cells at that count); 2500 more on the same spots, with room
// reserved, need no relayout, so only the check that any room-making call makes (the box has
// at most nbi_dense_again cells now) can turn the hash dense, and the next moves do.
static int test_crowd_turns_dense(void)
{
    enum { N = 4500, FIRST = 2000 };
    static double pos[N][2];
    static nbHandle handle[N];
    Crowd c = {FIRST, 70.0, pos, handle};
    nbHash *h = NULL;
    if (crowd_insert(&h, &c)) return 1;
    nbiHashStats st;
    nbi_hash_stats(h, &st);
    NB_CHECK(!st.dense);
    NB_CHECK_OK(nb_hash_reserve(h, 2 * N));
    for (int32_t i = FIRST; i < N; i++) {
        memcpy(pos[i], pos[i - FIRST], sizeof pos[i]);
        NB_CHECK_OK(nb_hash_insert(h, pos[i], (uint64_t)i, NB_FILTER_ALL, &handle[i]));
    }
    c.n = N;
    for (int f = 0; f < 3; f++)
        if (crowd_step(h, &c)) return 1;
    nbi_hash_stats(h, &st);
    NB_CHECK(st.dense);
    if (crowd_queries(h, &c, 40)) return 1;
    nb_hash_destroy(h);
    return 0;
}

// The orders a lattice of side^dim points is inserted in, one point a cell (cells of 1 on an
// integer lattice): rows upward and downward, columns, 3D layers, and random (a fixed shuffle).
enum { LAT_ROWS_UP, LAT_ROWS_DOWN, LAT_COLUMNS, LAT_LAYERS, LAT_RANDOM, LAT_ORDERS };
static const char *const lat_name[LAT_ORDERS] = {"rows up", "rows down", "columns", "3D layers",
                                                 "random"};

// The lattice's points in `order`, 3 doubles each (z = 0 in 2D).
static double *lattice_points(int order, int dim, int side)
{
    const int32_t n = dim == 2 ? side * side : side * side * side;
    double *pos = (double *)malloc((size_t)n * 3 * sizeof *pos);
    if (pos == NULL) return NULL;
    for (int32_t i = 0; i < n; i++) {
        const int u = i % side, v = (i / side) % side, w = i / (side * side);
        double *p = pos + (size_t)i * 3;
        p[0] = order == LAT_COLUMNS ? v : u;
        p[1] = order == LAT_ROWS_DOWN ? -v : order == LAT_COLUMNS ? u : v;
        p[2] = w;
    }
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int32_t i = n - 1; order == LAT_RANDOM && i > 0; i--) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const int32_t j = (int32_t)(x % (uint64_t)(i + 1));
        double t[3];
        memcpy(t, pos + (size_t)i * 3, sizeof t);
        memcpy(pos + (size_t)i * 3, pos + (size_t)j * 3, sizeof t);
        memcpy(pos + (size_t)j * 3, t, sizeof t);
    }
    return pos;
}

// A new hash of cells of 1 holding the n points of pos (user value i), room for them reserved
// or not; NULL on failure.
static nbHash *lattice_hash(const double *pos, int32_t n, int dim, bool reserve)
{
    nbHashDesc desc = {0};
    desc.cell_size = 1.0;
    desc.dim = dim;
    desc.capacity_hint = reserve ? n : 0;
    nbHash *h = NULL;
    if (nb_hash_create(&desc, &h) != NB_OK) return NULL;
    for (int32_t i = 0; i < n; i++) {
        nbHandle hd;
        if (nb_hash_insert(h, pos + (size_t)i * 3, (uint64_t)i, NB_FILTER_ALL, &hd) != NB_OK) {
            nb_hash_destroy(h);
            return NULL;
        }
    }
    return h;
}

// A lattice filled in a new hash (lattice_hash), with the hash's stats after the fill.
typedef struct Lattice {
    int dim;
    int32_t n;
    double *pos; // lattice_points
    nbHash *h;
    nbiHashStats st;
} Lattice;

// The lattice of `order` in `dim` dimensions (side2^2 or side3^3 points) into *L, room reserved
// or not; false on failure.
static bool lattice_fill(Lattice *L, int order, int dim, bool reserve, int side2, int side3)
{
    L->dim = dim;
    const int side = L->dim == 2 ? side2 : side3;
    L->n = L->dim == 2 ? side * side : side * side * side;
    L->pos = lattice_points(order, L->dim, side);
    L->h = L->pos != NULL ? lattice_hash(L->pos, L->n, L->dim, reserve) : NULL;
    if (L->h != NULL) nbi_hash_stats(L->h, &L->st);
    return L->h != NULL;
}

// A lattice inserted in order, one point a cell: rows upward and downward, columns, and 3D
// layers, with and without room reserved, relays out at most twice as often as the same points
// in random order (19 in 2D and in 3D, here), and stays dense. A relayout for a fill plants a
// spare position in each of the cells ahead of the placed item along the fill's lines (hash.c,
// nbi_plant), and a fill leaving the box grows it on that side only: 22-36 relayouts here.
// Before, a run of at most 1024 spare positions followed the points from cell to cell: 35-68
// relayouts; before that, each row (or each point once the slack near the last row ran out)
// relaid out everything: 570 relayouts for 10k points in rows upward, and 200k in rows upward
// with room reserved took 130 s.
static int test_lattice_fills_relay_out_seldom(void)
{
    enum { SIDE2 = 150, SIDE3 = 28 };
    int64_t random_relayouts[4] = {0, 0, 0, 0};
    for (int dim = 2; dim <= 3; dim++) {
        Lattice L;
        NB_CHECK(lattice_fill(&L, LAT_RANDOM, dim, false, SIDE2, SIDE3));
        random_relayouts[dim] = L.st.relayouts;
        nb_hash_destroy(L.h);
        free(L.pos);
    }
    for (int order = 0; order < LAT_RANDOM; order++)
        for (int reserve = 0; reserve < 2; reserve++) {
            Lattice L;
            NB_CHECK(lattice_fill(&L, order, order == LAT_LAYERS ? 3 : 2, reserve, SIDE2, SIDE3));
            const int64_t most = 2 * random_relayouts[L.dim];
            if (L.st.relayouts > most)
                fprintf(stderr, "  %s%s: %lld relayouts (random order: %lld)\n", lat_name[order],
                        reserve ? ", reserved" : "", (long long)L.st.relayouts,
                        (long long)random_relayouts[L.dim]);
            NB_CHECK(L.st.dense && L.st.relayouts <= most);
            NB_CHECK_OK(nb_hash_validate(L.h));
            // some points' neighbours at distance 1 (the 4 or 6 lattice neighbours)
            nbHit hits[32];
            for (int32_t i = 0; i < L.n; i += 1999) {
                const double *q = L.pos + (size_t)i * 3;
                int32_t found = 0;
                NB_CHECK_OK(nb_hash_query_radius(L.h, q, 1.0, NB_FILTER_ALL, hits, 32, &found));
                int32_t want = 0;
                for (int32_t j = 0; j < L.n; j++)
                    want += nbo_within(q, L.pos + (size_t)j * 3, L.dim, 1.0);
                NB_CHECK(found == want);
            }
            free(L.pos);
            nb_hash_destroy(L.h);
        }
    return 0;
}

// After a lattice is inserted in order (rows up and down, columns, 3D layers) or in random
// order, reserved or not, no cell keeps more than a few spare positions, and all pairs, radius
// and box queries agree with brute force. The walkers read a cell's slack with its items (NaN,
// never matching): a run of slack in one cell costs every query that reads the cell, and all
// pairs the square of its length (its positions are tested against each other). Before, a
// relayout placing an item left up to 1024 spare positions as a run in the item's cell, which a
// fill carried along and which stayed where the fill stopped or, in random order, where no item
// came: 112-580 positions in one cell here after a fill in order, 160-667 in random order. Now
// a fill's spare positions are planted one a cell (two in one cell of 32), and other relayouts
// leave the tail as tail.
static int test_lattice_fill_leaves_no_run(void)
{
    enum { SIDE2 = 40, SIDE3 = 12 };
    for (int order = 0; order < LAT_ORDERS; order++)
        for (int reserve = 0; reserve < 2; reserve++) {
            Lattice L;
            NB_CHECK(lattice_fill(&L, order, order == LAT_LAYERS ? 3 : 2, reserve, SIDE2, SIDE3));
            nbHash *h = L.h;
            const int dim = L.dim;
            const int32_t n = L.n;
            const double *pos = L.pos;
            NB_CHECK_OK(nb_hash_validate(h));
            if (L.st.max_slack > 4)
                fprintf(stderr, "  %s%s: %d spare positions in one cell\n", lat_name[order],
                        reserve ? ", reserved" : "", L.st.max_slack);
            NB_CHECK(L.st.max_slack <= 4);
            nboSet s = nbo_set_new(n, dim);
            for (int32_t i = 0; i < n; i++)
                memcpy(s.p + (size_t)i * (size_t)dim, pos + (size_t)i * 3,
                       (size_t)dim * sizeof(double));
            for (int k = 0; k < 2; k++) {
                const double r = k == 0 ? 1.0 : 1.5;
                int64_t want_n = 0, found = -1;
                nbPair *want = nbo_pairs(&s, r, &want_n);
                nbHitPair *got = (nbHitPair *)malloc((size_t)(want_n + 1) * sizeof *got);
                NB_CHECK(got != NULL);
                NB_CHECK_OK(nb_hash_pairs(h, r, got, want_n + 1, &found));
                NB_CHECK(found == want_n);
                nbPair *gp = (nbPair *)malloc((size_t)(found + 1) * sizeof *gp);
                NB_CHECK(gp != NULL);
                for (int64_t t = 0; t < found; t++) {
                    const int32_t a = (int32_t)got[t].a.user, b = (int32_t)got[t].b.user;
                    gp[t].i = a < b ? a : b;
                    gp[t].j = a < b ? b : a;
                }
                nbo_sort_pairs(gp, found);
                nbo_sort_pairs(want, want_n);
                NB_CHECK(nbo_same_pairs(gp, found, want, want_n));
                free(gp);
                free(want);
                free(got);
                nbHit hits[64];
                for (int32_t i = 0; i < n; i += 37) {
                    const double *q = pos + (size_t)i * 3;
                    int32_t wn = 0, fn = 0;
                    int32_t *w = nbo_radius(&s, q, r, &wn);
                    NB_CHECK_OK(nb_hash_query_radius(h, q, r, NB_FILTER_ALL, hits, 64, &fn));
                    NB_CHECK(fn == wn);
                    int32_t *g = (int32_t *)malloc(((size_t)fn + 1) * sizeof *g);
                    NB_CHECK(g != NULL);
                    for (int32_t t = 0; t < fn; t++) g[t] = (int32_t)hits[t].user;
                    nbo_sort_indices(g, fn);
                    nbo_sort_indices(w, wn);
                    NB_CHECK(nbo_same_indices(g, fn, w, wn));
                    nbBox box = {{q[0] - r, q[1] - r, q[2] - r}, {q[0] + r, q[1] + r, q[2] + r}};
                    int32_t bn2 = 0;
                    int32_t *wb = nbo_box(&s, box.min, box.max, &bn2);
                    NB_CHECK_OK(nb_hash_query_box(h, &box, NB_FILTER_ALL, hits, 64, &fn));
                    NB_CHECK(fn == bn2);
                    free(wb);
                    free(g);
                    free(w);
                }
            }
            nbo_set_free(&s);
            free(L.pos);
            nb_hash_destroy(h);
        }
    return 0;
}

// Inserts the points of s (user value i, filter bits from s) into a new hash of cells `cell`.
static nbHash *hash_of(const nboSet *s, double cell, nbHandle *handles)
{
    nbHashDesc desc = {0};
    desc.cell_size = cell;
    desc.dim = s->dim;
    nbHash *h = NULL;
    if (nb_hash_create(&desc, &h) != NB_OK) return NULL;
    for (int32_t i = 0; i < s->n; i++) {
        const nbFilter f = {s->cat[i], s->mask[i]};
        if (nb_hash_insert(h, nbo_pt(s, i), (uint64_t)i, f, &handles[i]) != NB_OK) {
            nb_hash_destroy(h);
            return NULL;
        }
    }
    return h;
}

// The k nearest of q in s through nb_hash_knn and nb_hash_visit_knn, against brute force.
static int check_knn(const nbHash *h, const nboSet *s, const double *q, int32_t k, nbFilter f,
                     double md)
{
    int32_t wn = 0, found = -1;
    nbNeighbor *want = nbo_knn_filtered(s, q, k, f, &wn);
    if (isfinite(md))
        while (wn > 0 && !(want[wn - 1].dist2 <= md * md)) wn--;
    nbHitNeighbor *got = (nbHitNeighbor *)malloc((size_t)(k > 0 ? k : 1) * sizeof *got);
    NB_CHECK(got != NULL);
    NB_CHECK_OK(nb_hash_knn(h, q, f, md, got, k, &found));
    NB_CHECK(found == wn);
    for (int32_t t = 0; t < found; t++)
        NB_CHECK(got[t].hit.user == (uint64_t)want[t].index && got[t].dist2 == want[t].dist2);
    KnnSeen seen = {got, 0, found, 0};
    NB_CHECK_OK(nb_hash_visit_knn(h, q, f, md, k, same_neighbor, &seen));
    NB_CHECK(seen.n == found && seen.wrong == 0);
    free(got);
    free(want);
    return 0;
}

// kNN from far away (beyond a face or a corner, 10 to 1e6 boxes out, and in the empty space
// between the items and one outlier 1e6 away): a far query's walk is priced (rings out to its
// k-th best, or the walk's budget and a scan of every position) and charged to a kNN index of
// the items, built once the charges reach its cost and dropped by any change. Answers against
// brute force, 2D and 3D, with and without the outlier: filters, limits, k = 1 to past n, ties
// on a lattice; after a move within a cell and across cells (the index stale). Before, each such
// query walked rings across the box (with the outlier: its budget, then a scan, 0.8-1.5 ms on
// 25k items).
static int test_far_knn(void)
{
    for (int dim = 2; dim <= 3; dim++)
        for (int outlier = 0; outlier <= 1; outlier++) {
            const int32_t side = dim == 2 ? 30 : 9, n0 = dim == 2 ? 900 : 729;
            const int32_t n = n0 + outlier;
            nboSet s = nbo_set_new(n, dim);
            nbo_set_add_filters(&s);
            for (int32_t i = 0; i < n0; i++) { // a lattice (ties) of spacing 1
                double *p = s.p + (size_t)i * (size_t)dim;
                p[0] = (double)(i % side);
                p[1] = (double)((i / side) % side);
                if (dim == 3) p[2] = (double)(i / (side * side));
                s.cat[i] = 1u << (i % 3);
                s.mask[i] = i % 5 == 0 ? 1u : 0xFFFFFFFFu;
            }
            if (outlier)
                for (int a = 0; a < dim; a++) s.p[(size_t)n0 * (size_t)dim + (size_t)a] = 1e6;
            nbHandle *hd = (nbHandle *)malloc((size_t)n * sizeof *hd);
            NB_CHECK(hd != NULL);
            nbHash *h = hash_of(&s, 1.5, hd);
            NB_CHECK(h != NULL);
            const size_t bytes = nb_hash_memory_bytes(h);
            const nbFilter fs[3] = {NB_FILTER_ALL, {1u, 0xFFFFFFFFu}, {0xFFFFFFFFu, 1u}};
            const int32_t ks[4] = {1, 5, 40, n + 5};
            bool built = false;
            for (int j = 0; j < 150; j++) {
                double q[3] = {0, 0, 0};
                const double out = side * pow(10.0, (double)(1 + j % 6)); // 10 to 1e6 boxes
                for (int a = 0; a < dim; a++) // on the lattice or halfway: ties
                    q[a] = (double)nbt_int(side) + 0.5 * nbt_int(2);
                const int a = nbt_int(dim);
                if (j % 8 == 7 && outlier) { // between the items and the outlier
                    for (int b = 0; b < dim; b++) q[b] = nbt_range(5e4, 9e5);
                } else {
                    q[a] = nbt_int(2) ? side + out : -out;
                    if (j % 3 == 2) q[(a + 1) % dim] = -out * nbt_range(0.2, 1.0); // a corner
                }
                const double md = j % 5 == 4 ? out * 1.001 + side : (double)INFINITY;
                if (check_knn(h, &s, q, ks[j % 4], fs[j % 3], md)) {
                    fprintf(stderr, "  dim %d outlier %d query %d (%g, %g, %g)\n", dim, outlier, j,
                            q[0], q[1], q[2]);
                    return 1;
                }
                built = built || nb_hash_memory_bytes(h) > bytes;
                if (j == 100) { // the index built by then: changes drop it
                    NB_CHECK(built);
                    double p[3] = {0, 0, 0};
                    memcpy(p, nbo_pt(&s, n - 1), (size_t)dim * sizeof(double));
                    p[0] -= 0.25; // within its cell (the outlier, or the lattice's last point)
                    NB_CHECK_OK(nb_hash_move(h, hd[n - 1], p));
                    memcpy(s.p + (size_t)(n - 1) * (size_t)dim, p, (size_t)dim * sizeof(double));
                }
                if (j == 125) { // across cells: the lattice's first point beyond the -x face
                    double p[3] = {-3.0, 0.0, 0.0};
                    NB_CHECK_OK(nb_hash_move(h, hd[0], p));
                    memcpy(s.p, p, (size_t)dim * sizeof(double));
                }
            }
            NB_CHECK_OK(nb_hash_validate(h));
            nb_hash_destroy(h);
            free(hd);
            nbo_set_free(&s);
        }
    return 0;
}

// The cost of far queries with one outlier 1e6 away: 1000 queries from 1e3 boxes beyond the
// items (20k uniform 2D points, cells of about 3) take less time than 500 scans of every item
// (measured: about 1 us a query once the index is built after a few; 1 ms a query before, the
// walk's budget of rings through empty cells and then a scan). The first round that passes is
// enough.
static int test_far_knn_cost(void)
{
    const int32_t n = 20000;
    nboSet s = nbo_set_new(n + 1, 2);
    nbo_set_add_filters(&s);
    for (int32_t i = 0; i < n; i++) {
        s.p[2 * (size_t)i] = nbt_range(0.0, 100.0);
        s.p[2 * (size_t)i + 1] = nbt_range(0.0, 100.0);
    }
    s.p[2 * (size_t)n] = s.p[2 * (size_t)n + 1] = 1e6;
    nbHandle *hd = (nbHandle *)malloc((size_t)(n + 1) * sizeof *hd);
    NB_CHECK(hd != NULL);
    nbHash *h = hash_of(&s, 100.0 * sqrt(3.0 / n), hd);
    NB_CHECK(h != NULL);
    double best_far = (double)INFINITY, best_scan = (double)INFINITY;
    for (int round = 0; round < 3; round++) {
        NB_CHECK_OK(nb_hash_move(h, hd[0], nbo_pt(&s, 0))); // a change: the index starts over
        nbHitNeighbor out[8];
        double t0 = nbt_seconds();
        for (int t = 0; t < 1000; t++) {
            const double a = nbt_range(0.0, 6.283185307179586);
            const double q[2] = {50.0 + 1e5 * cos(a), 50.0 + 1e5 * sin(a)};
            int32_t found = 0;
            NB_CHECK_OK(nb_hash_knn(h, q, NB_FILTER_ALL, (double)INFINITY, out, 1 + t % 8, &found));
            NB_CHECK(found == 1 + t % 8);
        }
        const double far = nbt_seconds() - t0;
        t0 = nbt_seconds();
        double sink = 0.0;
        for (int t = 0; t < 500; t++) {
            double best = (double)INFINITY;
            for (int32_t i = 0; i <= n; i++) {
                const double d = nbo_d2(nbo_pt(&s, t), nbo_pt(&s, i), 2);
                best = d > 0.0 && d < best ? d : best;
            }
            sink += best;
        }
        const double scan = sink > 0.0 ? nbt_seconds() - t0 : (double)INFINITY;
        best_far = far < best_far ? far : best_far;
        best_scan = scan < best_scan ? scan : best_scan;
        if (getenv("NB_FAR_VERBOSE") != NULL)
            fprintf(stderr, "  1000 far queries %.2f ms, 500 scans %.2f ms\n", far * 1e3,
                    scan * 1e3);
        if (far < scan) break;
    }
    nb_hash_destroy(h);
    free(hd);
    nbo_set_free(&s);
    if (!(best_far < best_scan)) {
        fprintf(stderr, "  1000 far queries %.2f ms, 500 scans %.2f ms\n", best_far * 1e3,
                best_scan * 1e3);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"random_sequences", test_random_sequences},
        {"bad_handles", test_bad_handles},
        {"steady_state_allocates_nothing", test_steady_state_allocates_nothing},
        {"allocation_failure", test_allocation_failure},
        {"view_follows_changes", test_view_follows_changes},
        {"hashed_crowd_relays_out_seldom", test_hashed_crowd_relays_out_seldom},
        {"crowd_turns_dense", test_crowd_turns_dense},
        {"lattice_fills_relay_out_seldom", test_lattice_fills_relay_out_seldom},
        {"lattice_fill_leaves_no_run", test_lattice_fill_leaves_no_run},
        {"far_knn", test_far_knn},
        {"far_knn_cost", test_far_knn_cost},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
