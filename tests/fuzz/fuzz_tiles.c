// SPDX-License-Identifier: MIT
// Fuzz target for the tile grid (include/nearby/tiles.h).
//
// The input is a little program over one grid. A header decodes the desc (dim, axes, groups,
// origin, size, tile counts or tile sizes; edge values and raw doubles included, so bad descs
// are refused with a status) and whether the checking allocator is used; each following byte
// picks an operation: insert and set (a category of one group's bit, or a bad one, and a mask
// of the entity's own), move, remove, clear, add waypoints (one or a batch), reserve, an
// allocation-failure schedule, radius queries and neighbours of an entity by filter, knn and
// visit_knn with max distance, waypoint queries (within, k nearest, visit), pairs by the stored
// rule and cross pairs between two masks, neighbour tiles. Coordinates come from the world's own
// scale (inside, on tile boundaries, outside, far outside) or are edge values and raw bits (NaN,
// inf). Reading past the end yields zeros, so every input is valid.
//
// A model keeps every live entity and waypoint. Each status must be one tiles.h allows for the
// arguments; a failed call changes nothing (count, validate, a fingerprint of every entity);
// after every op nb_tiles_validate() passes; every query is compared exactly with brute force
// on the model with the oracle's distance and filter rule (nb_oracle.h): sets of hits, knn
// order by dist2 then slot or waypoint number, pairs as sets with the lower slot first, cross
// pairs as sets of (a, b) with roles kept. NB_FUZZ_TRACE=1 prints the decoded calls.
#define _POSIX_C_SOURCE 200809L

#include <nearby/tiles.h>

#include "nb_fuzz.h"
#include "nb_oracle.h"

enum { TF_MAX = 160, TF_WMAX = 200, TF_OPS = 600 };

typedef struct tfModel {
    nbTiles *t;
    int dim, groups, ax[2];
    int64_t blocks;        // tiles x groups: what a validate walks
    double lo[2], span[2]; // the world on the tiled axes, for generating coordinates
    int32_t n;
    double pos[TF_MAX][3];
    int32_t group[TF_MAX];
    uint32_t mask[TF_MAX];
    uint64_t user[TF_MAX];
    nbHandle hd[TF_MAX];
    nbHandle stale;
    int32_t nw;
    double wpos[TF_WMAX][3];
    uint64_t wid[TF_WMAX];
} tfModel;

static tfModel tf;

static bool tf_finite(const double *p, int dim)
{
    for (int d = 0; d < dim; d++)
        if (!isfinite(p[d])) return false;
    return true;
}

static int32_t tf_slot(nbHandle h)
{
    return (int32_t)(uint32_t)h.bits - 1;
}

// A coordinate on tiled axis t (or any axis when t < 0).
static double tf_coord(nbfReader *r, int t)
{
    const uint8_t k = nbf_u8(r);
    const double lo = t >= 0 ? tf.lo[t] : -4.0, span = t >= 0 ? tf.span[t] : 8.0;
    if (k < 160) return lo + span * ((double)k - 24.0) / 112.0; // inside, boundaries, outside
    if (k < 200) return lo + span * ((double)nbf_u16(r) / 65535.0 * 3.0 - 1.0);
    if (k < 240) return nbf_special(nbf_u8(r));
    return nbf_raw(r);
}

static void tf_pos(nbfReader *r, double *p)
{
    p[0] = p[1] = p[2] = 0.0;
    for (int d = 0; d < tf.dim; d++) p[d] = tf_coord(r, d == tf.ax[0] ? 0 : d == tf.ax[1] ? 1 : -1);
}

static double tf_radius(nbfReader *r)
{
    const uint8_t k = nbf_u8(r);
    const double s = tf.span[0] > tf.span[1] ? tf.span[0] : tf.span[1];
    if (k < 200) return s * (double)k / 400.0;
    if (k < 240) return nbf_special(nbf_u8(r));
    return nbf_raw(r);
}

static uint32_t tf_mask(nbfReader *r)
{
    const uint8_t k = nbf_u8(r);
    if (k < 64) return 0xFFFFFFFFu;
    if (k < 192) return 1u << (k % 32);
    return (uint32_t)nbf_u16(r) | ((uint32_t)nbf_u16(r) << 16);
}

// An entity's category from a group byte: the group's bit, or (g == groups) a bad one: 0, two
// bits, or the bit past the last group.
static uint32_t tf_category(int32_t g)
{
    if (g < tf.groups) return 1u << g;
    const int k = nbf_step % 3;
    return k == 0 ? 0u : k == 1 ? 3u : tf.groups < 32 ? 1u << tf.groups : 0u;
}

// Does entity i pass a query's filter (nearby.h's rule, the group's bit as its category)?
static bool tf_passes(int32_t i, nbFilter f)
{
    return nbo_match(1u << tf.group[i], tf.mask[i], f.category, f.mask);
}

// A handle: a live one, the last stale one, null, or a forged one.
static nbHandle tf_handle(nbfReader *r, int32_t *idx)
{
    const uint8_t k = nbf_u8(r);
    *idx = -1;
    if (tf.n > 0 && k < 200) {
        *idx = k % tf.n;
        return tf.hd[*idx];
    }
    if (k < 220) return tf.stale;
    if (k < 240) return NB_HANDLE_NULL;
    nbHandle h = {((uint64_t)nbf_u16(r) << 48) | nbf_u16(r)};
    for (int32_t i = 0; i < tf.n; i++)
        if (tf.hd[i].bits == h.bits) *idx = i;
    return h;
}

static uint64_t tf_fingerprint(void)
{
    uint64_t f = (uint64_t)nb_tiles_count(tf.t) * 0x9E3779B97F4A7C15u;
    f += (uint64_t)nb_tiles_waypoint_count(tf.t);
    for (int32_t i = 0; i < tf.n; i++) {
        double p[3] = {0, 0, 0};
        nbFilter g = {0, 0};
        uint64_t u = 0;
        nbf_expect(nb_tiles_get(tf.t, tf.hd[i], p, &u, &g), NBF_BIT(NB_OK), "get");
        uint64_t b[3];
        memcpy(b, p, sizeof b);
        f = f * 0x100000001B3u + (b[0] ^ (b[1] << 1) ^ (b[2] << 2)) + g.category +
            ((uint64_t)g.mask << 32) + u;
    }
    return f;
}

// A validate walks every (tile, group) block. In a world of millions of them (tiny tiles) it takes
// a second under the sanitizers, so there it runs every k-th step, k = blocks / 2^16 (at most
// 64), and after the last one.
static void tf_check_state(bool last)
{
    const int64_t every = tf.blocks >> 16 < 64 ? tf.blocks >> 16 : 64;
    if (last || every <= 1 || nbf_step % every == 0)
        nbf_expect(nb_tiles_validate(tf.t), NBF_BIT(NB_OK), "validate");
    NBF_CHECK(nb_tiles_count(tf.t) == tf.n, "count %d, model %d", nb_tiles_count(tf.t), tf.n);
    NBF_CHECK(nb_tiles_waypoint_count(tf.t) == tf.nw, "waypoints %d, model %d",
              nb_tiles_waypoint_count(tf.t), tf.nw);
}

static int tf_cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t tf_got[TF_MAX * TF_MAX], tf_want[TF_MAX * TF_MAX];

static void tf_same_sets(int64_t n, const char *what)
{
    qsort(tf_got, (size_t)n, sizeof(uint64_t), tf_cmp_u64);
    qsort(tf_want, (size_t)n, sizeof(uint64_t), tf_cmp_u64);
    for (int64_t i = 0; i < n; i++)
        NBF_CHECK(tf_got[i] == tf_want[i], "%s: result %lld differs from brute force", what,
                  (long long)i);
}

typedef struct tfCand {
    double d2;
    uint64_t key, user;
} tfCand;

static int tf_cmp_cand(const void *a, const void *b)
{
    const tfCand *x = (const tfCand *)a, *y = (const tfCand *)b;
    if (x->d2 != y->d2) return x->d2 < y->d2 ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

static tfCand tf_cands[TF_WMAX + TF_MAX];
static nbHitNeighbor tf_nn[TF_WMAX + TF_MAX];
static nbHit tf_hits[TF_WMAX + TF_MAX];
static nbHitPair tf_pairs[TF_MAX * TF_MAX];

typedef struct tfCollect {
    nbHitNeighbor *out;
    int32_t n;
} tfCollect;

static bool tf_collect(nbHit hit, double dist2, void *user)
{
    tfCollect *c = (tfCollect *)user;
    c->out[c->n].hit = hit;
    c->out[c->n++].dist2 = dist2;
    return true;
}

static nbHitNeighbor tf_visited[TF_WMAX + TF_MAX];

// A kNN answer (buffer or callback) against the sorted candidates: the same entries in order.
static void tf_same_knn(const nbHitNeighbor *got, int32_t found, int32_t nc, int32_t k,
                        bool waypoints, const char *what)
{
    NBF_CHECK(found == (k < nc ? k : nc), "%s found %d of %d", what, found, nc);
    for (int32_t i = 0; i < found; i++)
        NBF_CHECK((waypoints ? got[i].hit.user : got[i].hit.handle.bits) == tf_cands[i].user &&
                      got[i].dist2 == tf_cands[i].d2,
                  "%s entry %d differs from brute force", what, i);
}

static void tf_queries(nbfReader *r)
{
    double q[3];
    tf_pos(r, q);
    const double radius = tf_radius(r);
    nbFilter f = NB_FILTER_ALL;
    f.mask = tf_mask(r);
    if (nbf_u8(r) >= 192) f.category = tf_mask(r);
    const bool qok = tf_finite(q, tf.dim);
    const nbStatus rst = !qok || !isfinite(radius) ? NB_ERR_NOT_FINITE
                         : radius < 0.0            ? NB_ERR_OUT_OF_RANGE
                                                   : NB_OK;
    // entities within
    int32_t found = -1;
    nbStatus st = nb_tiles_query_radius(tf.t, q, radius, f, tf_hits, TF_MAX, &found);
    nbf_expect(st, NBF_BIT(rst), "query_radius");
    if (rst == NB_OK) {
        int32_t want = 0;
        for (int32_t i = 0; i < tf.n; i++)
            if (tf_passes(i, f) && nbo_within(tf.pos[i], q, tf.dim, radius))
                tf_want[want++] = tf.hd[i].bits;
        NBF_CHECK(found == want, "query_radius found %d, brute force %d", found, want);
        for (int32_t i = 0; i < found; i++) tf_got[i] = tf_hits[i].handle.bits;
        tf_same_sets(found, "query_radius");
    }
    // waypoints within
    st = nb_tiles_query_waypoints(tf.t, q, radius, tf_hits, TF_WMAX, &found);
    nbf_expect(st, NBF_BIT(rst), "query_waypoints");
    if (rst == NB_OK) {
        int32_t want = 0;
        for (int32_t w = 0; w < tf.nw; w++)
            if (nbo_within(tf.wpos[w], q, tf.dim, radius)) tf_want[want++] = tf.wid[w];
        NBF_CHECK(found == want, "query_waypoints found %d, brute force %d", found, want);
        for (int32_t i = 0; i < found; i++) tf_got[i] = tf_hits[i].user;
        tf_same_sets(found, "query_waypoints");
    }
    // neighbours of an entity: its handle is checked right after the pointers
    int32_t ex;
    const nbHandle e = tf_handle(r, &ex);
    const nbStatus nst = ex < 0              ? NB_ERR_BAD_HANDLE
                         : !isfinite(radius) ? NB_ERR_NOT_FINITE
                         : radius < 0.0      ? NB_ERR_OUT_OF_RANGE
                                             : NB_OK;
    st = nb_tiles_query_neighbors(tf.t, e, radius, f, tf_hits, TF_MAX, &found);
    nbf_expect(st, NBF_BIT(nst), "query_neighbors");
    if (nst == NB_OK) {
        int32_t want = 0;
        for (int32_t i = 0; i < tf.n; i++)
            if (i != ex && tf_passes(i, f) && nbo_within(tf.pos[i], tf.pos[ex], tf.dim, radius))
                tf_want[want++] = tf.hd[i].bits;
        NBF_CHECK(found == want, "query_neighbors found %d, brute force %d", found, want);
        for (int32_t i = 0; i < found; i++) tf_got[i] = tf_hits[i].handle.bits;
        tf_same_sets(found, "query_neighbors");
    }
    // knn of entities and of waypoints, with a max distance (the radius read above)
    const double maxd = nbf_u8(r) & 1 ? (double)INFINITY : radius;
    const int32_t k = (int32_t)(nbf_u8(r) % 12) - 1;
    const nbStatus kst = !qok || isnan(maxd)   ? NB_ERR_NOT_FINITE
                         : k < 0 || maxd < 0.0 ? NB_ERR_OUT_OF_RANGE
                                               : NB_OK;
    st = nb_tiles_knn(tf.t, q, f, maxd, tf_nn, k, &found);
    nbf_expect(st, NBF_BIT(kst), "knn");
    tfCollect c = {tf_visited, 0};
    st = nb_tiles_visit_knn(tf.t, q, f, maxd, k, tf_collect, &c);
    nbf_expect(st, NBF_BIT(kst), "visit_knn");
    if (kst == NB_OK) {
        int32_t nc = 0;
        for (int32_t i = 0; i < tf.n; i++) {
            const double d2 = nbo_d2(tf.pos[i], q, tf.dim);
            if (!tf_passes(i, f) || (maxd < (double)INFINITY && !(d2 <= maxd * maxd))) continue;
            tfCand cand = {d2, (uint64_t)tf_slot(tf.hd[i]), tf.hd[i].bits};
            tf_cands[nc++] = cand;
        }
        qsort(tf_cands, (size_t)nc, sizeof(tfCand), tf_cmp_cand);
        tf_same_knn(tf_nn, found, nc, k, false, "knn");
        tf_same_knn(tf_visited, c.n, nc, k, false, "visit_knn");
    }
    st = nb_tiles_knn_waypoints(tf.t, q, maxd, tf_nn, k, &found);
    nbf_expect(st, NBF_BIT(kst), "knn_waypoints");
    c.n = 0;
    st = nb_tiles_visit_knn_waypoints(tf.t, q, maxd, k, tf_collect, &c);
    nbf_expect(st, NBF_BIT(kst), "visit_knn_waypoints");
    if (kst == NB_OK) {
        int32_t nc = 0;
        for (int32_t w = 0; w < tf.nw; w++) {
            const double d2 = nbo_d2(tf.wpos[w], q, tf.dim);
            if (maxd < (double)INFINITY && !(d2 <= maxd * maxd)) continue;
            tfCand cand = {d2, (uint64_t)w, tf.wid[w]};
            tf_cands[nc++] = cand;
        }
        qsort(tf_cands, (size_t)nc, sizeof(tfCand), tf_cmp_cand);
        tf_same_knn(tf_nn, found, nc, k, true, "knn_waypoints");
        tf_same_knn(tf_visited, c.n, nc, k, true, "visit_knn_waypoints");
    }
}

// The model's index of a live handle, or -1.
static int32_t tf_index(nbHandle h)
{
    for (int32_t i = 0; i < tf.n; i++)
        if (tf.hd[i].bits == h.bits) return i;
    return -1;
}

// Pairs (and counts) against the want list already in tf_want.
static void tf_same_pairs(int64_t found, int64_t want, const char *what)
{
    NBF_CHECK(found == want, "%s found %lld, brute force %lld", what, (long long)found,
              (long long)want);
    for (int64_t p = 0; p < found; p++) {
        const int32_t a = tf_index(tf_pairs[p].a.handle), b = tf_index(tf_pairs[p].b.handle);
        NBF_CHECK(a >= 0 && b >= 0, "%s names a dead entity", what);
        tf_got[p] = (uint64_t)a * TF_MAX + (uint64_t)b;
    }
    tf_same_sets(found, what);
}

static void tf_pairs_check(nbfReader *r)
{
    const double radius = tf_radius(r);
    const uint32_t ga = tf_mask(r), gb = nbf_u8(r) & 1 ? ga : tf_mask(r);
    const nbStatus want_st = !isfinite(radius) ? NB_ERR_NOT_FINITE
                             : radius < 0.0    ? NB_ERR_OUT_OF_RANGE
                                               : NB_OK;
    // all pairs by the stored rule, the lower slot first
    int64_t found = -1, count = -1;
    nbStatus st = nb_tiles_pairs(tf.t, radius, tf_pairs, TF_MAX * TF_MAX, &found);
    nbf_expect(st, NBF_BIT(want_st), "pairs");
    st = nb_tiles_count_pairs(tf.t, radius, &count);
    nbf_expect(st, NBF_BIT(want_st), "count_pairs");
    if (want_st != NB_OK) return;
    NBF_CHECK(count == found, "count_pairs %lld, pairs %lld", (long long)count, (long long)found);
    int64_t want = 0;
    for (int32_t i = 0; i < tf.n; i++)
        for (int32_t j = 0; j < tf.n; j++) {
            if (tf_slot(tf.hd[j]) <= tf_slot(tf.hd[i])) continue;
            if (!nbo_within(tf.pos[i], tf.pos[j], tf.dim, radius)) continue;
            if (nbo_match(1u << tf.group[i], tf.mask[i], 1u << tf.group[j], tf.mask[j]))
                tf_want[want++] = (uint64_t)i * TF_MAX + (uint64_t)j;
        }
    tf_same_pairs(found, want, "pairs");
    // cross pairs: every (a, b) of the two sets, roles kept; a mask of 0 plays no role
    st = nb_tiles_cross_pairs(tf.t, radius, ga, gb, tf_pairs, TF_MAX * TF_MAX, &found);
    nbf_expect(st, NBF_BIT(NB_OK), "cross_pairs");
    st = nb_tiles_count_cross_pairs(tf.t, radius, ga, gb, &count);
    nbf_expect(st, NBF_BIT(NB_OK), "count_cross_pairs");
    NBF_CHECK(count == found, "count_cross_pairs %lld, cross_pairs %lld", (long long)count,
              (long long)found);
    want = 0;
    for (int32_t i = 0; i < tf.n; i++)
        for (int32_t j = 0; j < tf.n; j++) {
            if (i == j || tf.mask[i] == 0 || tf.mask[j] == 0) continue;
            if (!((ga >> tf.group[i]) & 1u) || !((gb >> tf.group[j]) & 1u)) continue;
            if (nbo_within(tf.pos[i], tf.pos[j], tf.dim, radius))
                tf_want[want++] = (uint64_t)i * TF_MAX + (uint64_t)j;
        }
    tf_same_pairs(found, want, "cross_pairs");
}

static void tf_remove_at(int32_t i)
{
    tf.stale = tf.hd[i];
    tf.n--;
    memmove(tf.pos[i], tf.pos[i + 1], (size_t)(tf.n - i) * sizeof tf.pos[0]);
    memmove(&tf.group[i], &tf.group[i + 1], (size_t)(tf.n - i) * sizeof tf.group[0]);
    memmove(&tf.mask[i], &tf.mask[i + 1], (size_t)(tf.n - i) * sizeof tf.mask[0]);
    memmove(&tf.user[i], &tf.user[i + 1], (size_t)(tf.n - i) * sizeof tf.user[0]);
    memmove(&tf.hd[i], &tf.hd[i + 1], (size_t)(tf.n - i) * sizeof tf.hd[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nbf_begin_input();
    nbfReader rd = {data, size}, *r = &rd;
    memset(&tf, 0, sizeof tf);
    // ---- the desc ----
    const uint8_t h = nbf_u8(r);
    nbTilesDesc d = {0};
    d.dim = (h & 1) ? 3 : 2;
    if (h & 2) {
        d.axes[0] = nbf_u8(r) % 4;
        d.axes[1] = nbf_u8(r) % 4;
    }
    d.groups = (int32_t)(nbf_u8(r) % 34);
    for (int t = 0; t < 2; t++) {
        const uint8_t k = nbf_u8(r);
        d.origin[t] = k < 200 ? (double)k - 100.0 : nbf_special(nbf_u8(r));
        const uint8_t s = nbf_u8(r);
        d.size[t] = s < 200 ? 1.0 + (double)s : nbf_special(nbf_u8(r));
        const uint8_t c = nbf_u8(r);
        if (c < 128)
            d.tile_count[t] = c % 17;
        else
            d.tile_size[t] = c < 240 ? (double)(c - 127) * 4.0 : nbf_special(nbf_u8(r));
    }
    const bool checking = (h & 4) != 0;
    nbAllocator al = nbf_allocator();
    if (checking) d.allocator = &al;
    nbf_op = "create";
    const nbStatus cst = nb_tiles_create(&d, &tf.t);
    nbf_expect(cst,
               NBF_BIT(NB_OK) | NBF_BIT(NB_ERR_NOT_FINITE) | NBF_BIT(NB_ERR_OUT_OF_RANGE) |
                   NBF_BIT(NB_ERR_OUT_OF_MEMORY),
               "create");
    if (cst != NB_OK) {
        NBF_CHECK(tf.t == NULL, "failed create wrote a grid");
        return 0;
    }
    tf.dim = d.dim;
    tf.groups = d.groups == 0 ? 1 : d.groups;
    nbTilesInfo info;
    nbf_expect(nb_tiles_info(tf.t, &info), NBF_BIT(NB_OK), "info");
    const int32_t *count = info.tile_count;
    for (int t = 0; t < 2; t++) {
        tf.ax[t] = info.axes[t];
        tf.lo[t] = info.origin[t];
        tf.span[t] = (double)count[t] * info.edge[t];
    }
    tf.blocks = (int64_t)count[0] * count[1] * tf.groups;
    nbf_log("create dim %d groups %d tiles %dx%d\n", tf.dim, tf.groups, count[0], count[1]);
    // ---- the program ----
    for (nbf_step = 1; nbf_step <= TF_OPS && r->n > 0; nbf_step++) {
        const uint8_t op = nbf_u8(r) % 14;
        const uint64_t fp = tf_fingerprint();
        nbStatus st = NB_OK;
        double p[3];
        int32_t idx;
        switch (op) {
        case 0:
        case 1: { // insert
            nbf_op = "insert";
            tf_pos(r, p);
            const int32_t g = (int32_t)(nbf_u8(r) % (tf.groups + 1));
            const nbFilter ef = {tf_category(g), nbf_u8(r) < 160 ? 0xFFFFFFFFu : tf_mask(r)};
            nbHandle out = {7};
            st = nb_tiles_insert(tf.t, p, 1000u + (uint64_t)nbf_step, ef, &out);
            const nbStatus want = !tf_finite(p, tf.dim) ? NB_ERR_NOT_FINITE
                                  : g >= tf.groups      ? NB_ERR_OUT_OF_RANGE
                                                        : NB_OK;
            nbf_expect(st, NBF_BIT(want) | NBF_BIT(NB_ERR_OUT_OF_MEMORY), "insert");
            if (st == NB_OK && tf.n < TF_MAX) {
                memcpy(tf.pos[tf.n], p, sizeof p);
                tf.group[tf.n] = g;
                tf.mask[tf.n] = ef.mask;
                tf.user[tf.n] = 1000u + (uint64_t)nbf_step;
                tf.hd[tf.n++] = out;
            } else if (st == NB_OK) { // the model is full: take it out again
                nbf_expect(nb_tiles_remove(tf.t, out), NBF_BIT(NB_OK), "remove");
            } else {
                NBF_CHECK(out.bits == 0, "failed insert wrote a handle");
            }
            break;
        }
        case 2:
        case 3: { // move
            nbf_op = "move";
            const nbHandle e = tf_handle(r, &idx);
            tf_pos(r, p);
            if (idx >= 0 && nbf_u8(r) < 128) // a small step
                for (int a = 0; a < tf.dim; a++) p[a] = tf.pos[idx][a] + (double)(p[a] > 0) * 0.25;
            st = nb_tiles_move(tf.t, e, p);
            const nbStatus want = idx < 0                 ? NB_ERR_BAD_HANDLE
                                  : !tf_finite(p, tf.dim) ? NB_ERR_NOT_FINITE
                                                          : NB_OK;
            nbf_expect(st, NBF_BIT(want) | NBF_BIT(NB_ERR_OUT_OF_MEMORY), "move");
            if (st == NB_OK) memcpy(tf.pos[idx], p, sizeof p);
            break;
        }
        case 4: // remove
            nbf_op = "remove";
            {
                const nbHandle e = tf_handle(r, &idx);
                st = nb_tiles_remove(tf.t, e);
                nbf_expect(st, NBF_BIT(idx < 0 ? NB_ERR_BAD_HANDLE : NB_OK), "remove");
                if (st == NB_OK) tf_remove_at(idx);
            }
            break;
        case 5: { // set
            nbf_op = "set";
            const nbHandle e = tf_handle(r, &idx);
            const int32_t g = (int32_t)(nbf_u8(r) % (tf.groups + 1));
            const nbFilter ef = {tf_category(g), nbf_u8(r) < 160 ? 0xFFFFFFFFu : tf_mask(r)};
            st = nb_tiles_set(tf.t, e, 5u, ef);
            const nbStatus want = idx < 0          ? NB_ERR_BAD_HANDLE
                                  : g >= tf.groups ? NB_ERR_OUT_OF_RANGE
                                                   : NB_OK;
            nbf_expect(st, NBF_BIT(want) | NBF_BIT(NB_ERR_OUT_OF_MEMORY), "set");
            if (st == NB_OK) {
                tf.group[idx] = g;
                tf.mask[idx] = ef.mask;
                tf.user[idx] = 5u;
            }
            break;
        }
        case 6: { // add waypoints
            nbf_op = "add_waypoints";
            const int32_t c = (int32_t)(nbf_u8(r) % 9) - 1;
            double w[8 * 3];
            uint64_t ids[8];
            bool ok = true;
            for (int32_t i = 0; i < c; i++) {
                tf_pos(r, p);
                memcpy(w + (size_t)i * (size_t)tf.dim, p, (size_t)tf.dim * sizeof(double));
                ok &= tf_finite(p, tf.dim);
                ids[i] = (uint64_t)nbf_u16(r);
            }
            const bool with_ids = nbf_u8(r) & 1;
            st = nb_tiles_add_waypoints(tf.t, c > 0 ? w : NULL, with_ids ? ids : NULL, c);
            const nbStatus want = !ok ? NB_ERR_NOT_FINITE : c < 0 ? NB_ERR_OUT_OF_RANGE : NB_OK;
            nbf_expect(st, NBF_BIT(want) | NBF_BIT(NB_ERR_OUT_OF_MEMORY), "add_waypoints");
            if (st == NB_OK && tf.nw + c <= TF_WMAX) {
                for (int32_t i = 0; i < c; i++) {
                    memset(tf.wpos[tf.nw], 0, sizeof tf.wpos[0]);
                    memcpy(tf.wpos[tf.nw], w + (size_t)i * (size_t)tf.dim,
                           (size_t)tf.dim * sizeof(double));
                    tf.wid[tf.nw] = with_ids ? ids[i] : (uint64_t)tf.nw;
                    tf.nw++;
                }
            } else if (st == NB_OK) { // the model is full: start the waypoints over
                nb_tiles_clear_waypoints(tf.t);
                tf.nw = 0;
            }
            break;
        }
        case 7: // reserve
            nbf_op = "reserve";
            st = nb_tiles_reserve(tf.t, (int32_t)nbf_u16(r) - 100);
            break;
        case 8: // an allocation-failure schedule (checking allocator only)
            nbf_op = "fail schedule";
            {
                const uint8_t k = nbf_u8(r);
                nbf_fail_alloc_after(k & 0x7F, (k & 0x80) != 0);
            }
            break;
        case 9: // clear
            nbf_op = "clear";
            if (nbf_u8(r) & 1) {
                nb_tiles_clear(tf.t);
                if (tf.n > 0) tf.stale = tf.hd[0];
                tf.n = 0;
            } else {
                nb_tiles_clear_waypoints(tf.t);
                tf.nw = 0;
            }
            break;
        case 10:
        case 11:
        case 12: // queries
            nbf_op = "queries";
            tf_queries(r);
            break;
        default: { // pairs and neighbour tiles
            nbf_op = "pairs";
            tf_pairs_check(r);
            nbf_op = "neighbors";
            int32_t tiles[64], found = 0;
            const int32_t tile = (int32_t)nbf_u16(r) % (count[0] * count[1] + 1);
            st = nb_tiles_neighbor_tiles(tf.t, tile, nbf_u8(r) % 3, tiles, 64, &found);
            nbf_expect(st,
                       tile >= count[0] * count[1]
                           ? NBF_BIT(NB_ERR_OUT_OF_RANGE)
                           : NBF_BIT(NB_OK) | NBF_BIT(NB_ERR_BUFFER_TOO_SMALL),
                       "neighbors");
            st = NB_OK;
            break;
        }
        }
        if (st != NB_OK && op != 7)
            NBF_CHECK(tf_fingerprint() == fp, "a failed %s changed the grid", nbf_op);
        if (op == 7 && st != NB_OK) {
            nbf_expect(st, NBF_BIT(NB_ERR_OUT_OF_RANGE) | NBF_BIT(NB_ERR_OUT_OF_MEMORY), "reserve");
            NBF_CHECK(tf_fingerprint() == fp, "a failed reserve changed the grid");
        }
        if (!checking) nbf_fail_alloc_after(0, false);
        tf_check_state(false);
    }
    tf_check_state(true);
    nbf_fail_alloc_after(0, false);
    nb_tiles_destroy(tf.t);
    if (checking) nbf_check_no_leak("destroy");
    return 0;
}
