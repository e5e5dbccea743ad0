// SPDX-License-Identifier: MIT
// The tile grid against a brute-force model: random insert / move / remove / set / clear
// sequences over several worlds (square and non-square tiles, a tile size that does not divide
// the world, one tile, 3D on x-z and on y-z, 32 groups), with positions inside, on tile
// boundaries, duplicated, just outside and far outside the world, and entities with and without
// masks of their own; every query (radius and neighbours of an entity by filter, knn and
// visit_knn with max distance, pairs by the stored rule, cross pairs between masks, waypoints
// within and k nearest) compared with the oracle (nb_oracle.h), asked from inside and outside
// the world.
// Also: neighbour tiles (corners, edges, rings, non-square radius rings), bad handles, the
// order of results is deterministic, no allocation in a steady state, and a failing allocator
// at every allocation of every operation that can allocate leaves the grid as it was.
#include <nearby/tiles.h>

#include "nb_oracle.h"
#include "nb_test.h"

#include <math.h>
#include <time.h>

enum { MAXN = 600, MAXW = 300 };

typedef struct Model {
    nbTilesDesc desc;
    int dim, groups;
    bool masked;         // entities get masks of their own (else all ones)
    double lo[2], hi[2]; // the world on the tiled axes (for generating positions)
    int32_t n;
    bool alive[MAXN];
    double pos[MAXN][3];
    int32_t group[MAXN];
    uint32_t mask[MAXN];
    nbHandle handle[MAXN];
    int32_t nw;
    double wpos[MAXW][3];
    uint64_t wid[MAXW];
} Model;

// An entity of group g that finds everything; a query for the groups in `groups`.
static nbFilter grp(int32_t g)
{
    const nbFilter f = {1u << g, 0xFFFFFFFFu};
    return f;
}

static nbFilter find(uint32_t groups)
{
    const nbFilter f = {0xFFFFFFFFu, groups};
    return f;
}

static int32_t slot_of(nbHandle h)
{
    return (int32_t)(uint32_t)h.bits - 1;
}

// A coordinate on tiled axis t: inside, on a tile boundary, just outside, far outside.
static double random_coord(const Model *m, int t)
{
    const double lo = m->lo[t], hi = m->hi[t], w = hi - lo;
    switch (nbt_int(12)) {
    case 0: return lo - nbt_range(0.0, 2.0 * w);
    case 1: return hi + nbt_range(0.0, 2.0 * w);
    case 2: return nbt_int(2) ? -1e6 : 1e6;
    case 3: return lo + w * (double)nbt_int(9) / 8.0; // boundaries of 8 or 4 tiles
    case 4: return nbt_int(2) ? lo : hi;
    default: return nbt_range(lo, hi);
    }
}

static void random_pos(const Model *m, double *p)
{
    int32_t ax[2];
    nbTilesDesc d = m->desc;
    ax[0] = d.axes[0];
    ax[1] = d.axes[1];
    if (ax[0] == 0 && ax[1] == 0) ax[1] = m->dim == 3 ? 2 : 1;
    for (int a = 0; a < m->dim; a++) p[a] = nbt_range(-3.0, 3.0);
    if (m->n > 0 && nbt_int(10) == 0) { // a duplicate
        memcpy(p, m->pos[nbt_int(m->n)], sizeof(double) * 3);
        return;
    }
    p[ax[0]] = random_coord(m, 0);
    p[ax[1]] = random_coord(m, 1);
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

// Sorted user values of hits against sorted expected ones.
static int same_set(uint64_t *got, uint64_t *want, int32_t n)
{
    qsort(got, (size_t)n, sizeof(uint64_t), cmp_u64);
    qsort(want, (size_t)n, sizeof(uint64_t), cmp_u64);
    for (int32_t i = 0; i < n; i++) NB_CHECK(got[i] == want[i]);
    return 0;
}

static uint32_t random_mask(const Model *m)
{
    switch (nbt_int(4)) {
    case 0: return 0xFFFFFFFFu;
    case 1: return 1u << nbt_int(m->groups);
    case 2: return (uint32_t)nbt_u64();
    default: return nbt_int(20) == 0 ? 0u : ~(1u << nbt_int(m->groups));
    }
}

static nbFilter random_filter(const Model *m)
{
    nbFilter f = NB_FILTER_ALL;
    if (nbt_int(3) != 0) f.mask = random_mask(m);
    if (nbt_int(4) == 0) f.category = random_mask(m);
    return f;
}

// The model as the oracle sees it: entity slots as point indices (the order ties are broken
// in), a dead slot with category 0 (it matches nothing); slot_user maps a slot to the model's
// entity. Waypoints in the order added.
static nboSet ents, wps;
static uint64_t slot_user[MAXN];

static void oracle_sets(const Model *m)
{
    nbo_set_free(&ents);
    nbo_set_free(&wps);
    int32_t n = 0;
    for (int32_t i = 0; i < m->n; i++)
        if (m->alive[i] && slot_of(m->handle[i]) + 1 > n) n = slot_of(m->handle[i]) + 1;
    ents = nbo_set_new(n, m->dim);
    nbo_set_add_filters(&ents);
    for (int32_t s = 0; s < n; s++) ents.cat[s] = 0;
    for (int32_t i = 0; i < m->n; i++) {
        if (!m->alive[i]) continue;
        const int32_t s = slot_of(m->handle[i]);
        memcpy(ents.p + (size_t)s * (size_t)m->dim, m->pos[i], sizeof(double) * (size_t)m->dim);
        ents.cat[s] = 1u << m->group[i];
        ents.mask[s] = m->mask[i];
        slot_user[s] = (uint64_t)i;
    }
    wps = nbo_set_new(m->nw, m->dim);
    for (int32_t w = 0; w < m->nw; w++)
        memcpy(wps.p + (size_t)w * (size_t)m->dim, m->wpos[w], sizeof(double) * (size_t)m->dim);
}

static nbHitNeighbor knn_buf[MAXN + MAXW], visit_buf[MAXN + MAXW];
static nbHit hit_buf[MAXN + MAXW];
static uint64_t got_u[MAXN * MAXN + MAXN], want_u[MAXN * MAXN + MAXN];
static nbHitPair pair_buf[MAXN * MAXN];

typedef struct Collect {
    nbHitNeighbor *out;
    int32_t n, stop_after;
} Collect;

static bool collect(nbHit hit, double dist2, void *user)
{
    Collect *c = (Collect *)user;
    c->out[c->n].hit = hit;
    c->out[c->n++].dist2 = dist2;
    return c->n != c->stop_after;
}

// Hits (entities: user = the model's index, handle its handle) against the oracle's slots.
static int same_hits(const Model *m, const nbHit *hits, int32_t found, const int32_t *want,
                     int32_t nwant)
{
    NB_CHECK(found == nwant);
    for (int32_t i = 0; i < found; i++) {
        got_u[i] = hits[i].user;
        NB_CHECK(m->handle[hits[i].user].bits == hits[i].handle.bits);
        want_u[i] = slot_user[want[i]];
    }
    return same_set(got_u, want_u, found);
}

// The oracle's k nearest with max_distance: its sorted list cut at maxd.
static int32_t within_maxd(const nbNeighbor *all, int32_t n, double maxd)
{
    int32_t w = 0;
    while (w < n && (maxd == (double)INFINITY || all[w].dist2 <= maxd * maxd)) w++;
    return w;
}

// kNN answers (buffer and callback) against the oracle's (dist2, index) list; `user_of`
// maps an oracle index to the expected user value, `entity` whether handles are live.
static int same_knn(const Model *m, const nbHitNeighbor *got, int32_t found, const nbNeighbor *want,
                    int32_t nwant, bool entity)
{
    NB_CHECK(found == nwant);
    for (int32_t i = 0; i < found; i++) {
        NB_CHECK(got[i].dist2 == want[i].dist2);
        if (entity) {
            NB_CHECK(got[i].hit.user == slot_user[want[i].index]);
            NB_CHECK(got[i].hit.handle.bits == m->handle[got[i].hit.user].bits);
        } else {
            NB_CHECK(got[i].hit.user == m->wid[want[i].index] && got[i].hit.handle.bits == 0);
        }
    }
    return 0;
}

// Every query against the oracle, at a query point q.
static int check_queries(const nbTiles *t, const Model *m, const double *q)
{
    NB_CHECK_OK(nb_tiles_validate(t));
    int32_t live = 0;
    for (int32_t i = 0; i < m->n; i++) live += m->alive[i];
    NB_CHECK(nb_tiles_count(t) == live);
    oracle_sets(m);
    const double radii[] = {0.0, nbt_range(0.0, 2.0), nbt_range(0.0, 20.0), 1e7};
    const double r = radii[nbt_int(4)];
    const nbFilter f = random_filter(m);

    // radius
    int32_t found = -1, nwant = 0;
    NB_CHECK_OK(nb_tiles_query_radius(t, q, r, f, hit_buf, MAXN, &found));
    int32_t *want = nbo_radius_filtered(&ents, q, r, f, &nwant);
    const int bad = same_hits(m, hit_buf, found, want, nwant);
    free(want);
    if (bad) return 1;

    // neighbours of a live entity: the radius query at its position, itself left out
    if (live > 0) {
        int32_t i;
        do i = nbt_int(m->n);
        while (!m->alive[i]);
        NB_CHECK_OK(nb_tiles_query_neighbors(t, m->handle[i], r, f, hit_buf, MAXN, &found));
        want = nbo_radius_filtered(&ents, m->pos[i], r, f, &nwant);
        int32_t w = 0;
        for (int32_t j = 0; j < nwant; j++)
            if (want[j] != slot_of(m->handle[i])) want[w++] = want[j];
        const int nbad = same_hits(m, hit_buf, found, want, w);
        free(want);
        if (nbad) return 1;
    }

    // knn with a max distance, and its callback form (whole, and stopped early)
    const double maxd = nbt_int(3) == 0 ? (double)INFINITY : nbt_range(0.0, 30.0);
    const int32_t k = nbt_int(3) == 0 ? nbt_int(MAXN) : nbt_int(6);
    nbNeighbor *all = nbo_knn_filtered(&ents, q, ents.n, f, &nwant);
    nwant = within_maxd(all, nwant, maxd);
    nwant = nwant < k ? nwant : k;
    NB_CHECK_OK(nb_tiles_knn(t, q, f, maxd, knn_buf, k, &found));
    int kbad = same_knn(m, knn_buf, found, all, nwant, true);
    Collect c = {visit_buf, 0, -1};
    if (!kbad) {
        NB_CHECK_OK(nb_tiles_visit_knn(t, q, f, maxd, k, collect, &c));
        kbad = same_knn(m, visit_buf, c.n, all, nwant, true);
    }
    if (!kbad && nwant > 1) {
        c.n = 0;
        c.stop_after = 1;
        NB_CHECK_OK(nb_tiles_visit_knn(t, q, f, maxd, k, collect, &c));
        kbad = same_knn(m, visit_buf, c.n, all, 1, true);
    }
    free(all);
    if (kbad) return 1;

    // waypoints within and k nearest
    NB_CHECK(nb_tiles_waypoint_count(t) == m->nw);
    NB_CHECK_OK(nb_tiles_query_waypoints(t, q, r, hit_buf, MAXW, &found));
    want = nbo_radius(&wps, q, r, &nwant);
    NB_CHECK(found == nwant);
    for (int32_t i = 0; i < found; i++) {
        NB_CHECK(hit_buf[i].handle.bits == 0);
        got_u[i] = hit_buf[i].user;
        want_u[i] = m->wid[want[i]];
    }
    free(want);
    if (same_set(got_u, want_u, found)) return 1;
    all = nbo_knn(&wps, q, wps.n, &nwant);
    nwant = within_maxd(all, nwant, maxd);
    nwant = nwant < k ? nwant : k;
    NB_CHECK_OK(nb_tiles_knn_waypoints(t, q, maxd, knn_buf, k, &found));
    kbad = same_knn(m, knn_buf, found, all, nwant, false);
    c.n = 0;
    c.stop_after = -1;
    if (!kbad) {
        NB_CHECK_OK(nb_tiles_visit_knn_waypoints(t, q, maxd, k, collect, &c));
        kbad = same_knn(m, visit_buf, c.n, all, nwant, false);
    }
    free(all);
    return kbad;
}

// Pairs by the stored rule (a the lower slot) and cross pairs between two masks (every (a, b)
// of the sets, roles kept) against the oracle.
static int check_pairs(const nbTiles *t, const Model *m)
{
    oracle_sets(m);
    const double r = nbt_int(5) == 0 ? 0.0 : nbt_range(0.0, 6.0);
    int64_t found = -1, count = -1, nwant = 0;
    NB_CHECK_OK(nb_tiles_pairs(t, r, pair_buf, MAXN * MAXN, &found));
    NB_CHECK_OK(nb_tiles_count_pairs(t, r, &count));
    NB_CHECK(count == found);
    nbPair *want = nbo_pairs(&ents, r, &nwant);
    NB_CHECK(found == nwant);
    for (int64_t p = 0; p < found; p++) {
        NB_CHECK(pair_buf[p].a.handle.bits == m->handle[pair_buf[p].a.user].bits);
        NB_CHECK(pair_buf[p].b.handle.bits == m->handle[pair_buf[p].b.user].bits);
        NB_CHECK(slot_of(pair_buf[p].a.handle) < slot_of(pair_buf[p].b.handle));
        got_u[p] = pair_buf[p].a.user * MAXN + pair_buf[p].b.user;
        want_u[p] = slot_user[want[p].i] * MAXN + slot_user[want[p].j];
    }
    free(want);
    if (same_set(got_u, want_u, (int32_t)found)) return 1;

    // cross pairs: set A and set B as category-1 copies of the entities each mask picks
    const uint32_t ma = random_mask(m), mb = nbt_int(2) ? ma : random_mask(m);
    nboSet a = nbo_set_new(ents.n, m->dim), b = nbo_set_new(ents.n, m->dim);
    nbo_set_add_filters(&a);
    nbo_set_add_filters(&b);
    for (int32_t s = 0; s < ents.n; s++) {
        memcpy(a.p + (size_t)s * (size_t)m->dim, nbo_pt(&ents, s), sizeof(double) * (size_t)m->dim);
        memcpy(b.p + (size_t)s * (size_t)m->dim, nbo_pt(&ents, s), sizeof(double) * (size_t)m->dim);
        a.cat[s] = (ents.cat[s] & ma) != 0 && ents.mask[s] != 0;
        b.cat[s] = (ents.cat[s] & mb) != 0 && ents.mask[s] != 0;
    }
    NB_CHECK_OK(nb_tiles_cross_pairs(t, r, ma, mb, pair_buf, MAXN * MAXN, &found));
    NB_CHECK_OK(nb_tiles_count_cross_pairs(t, r, ma, mb, &count));
    NB_CHECK(count == found);
    want = nbo_cross_pairs(&a, &b, r, &nwant);
    int64_t w = 0;
    for (int64_t p = 0; p < nwant; p++)
        if (want[p].i != want[p].j)
            want_u[w++] = slot_user[want[p].i] * MAXN + slot_user[want[p].j];
    free(want);
    nbo_set_free(&a);
    nbo_set_free(&b);
    NB_CHECK(found == w);
    for (int64_t p = 0; p < found; p++) got_u[p] = pair_buf[p].a.user * MAXN + pair_buf[p].b.user;
    return same_set(got_u, want_u, (int32_t)found);
}

static nbTilesDesc world(int kind, Model *m)
{
    nbTilesDesc d = {0};
    d.origin[0] = -10.0;
    d.origin[1] = 5.0;
    d.size[0] = 40.0;
    d.size[1] = 24.0;
    d.tile_count[0] = 8;
    d.tile_count[1] = 4; // tiles of 5 x 6
    d.groups = 4;
    switch (kind) {
    case 1: // a tile size that does not divide the world: the far side grows
        d.tile_count[0] = d.tile_count[1] = 0;
        d.tile_size[0] = 3.0;
        d.tile_size[1] = 7.0;
        break;
    case 2: // one tile
        d.tile_count[0] = d.tile_count[1] = 1;
        d.groups = 1;
        break;
    case 3: // 3D, tiles on x and z
        d.dim = 3;
        break;
    case 4: // 3D, tiles on y and z, 32 groups
        d.dim = 3;
        d.axes[0] = 1;
        d.axes[1] = 2;
        d.groups = 32;
        break;
    case 5: // thin tiles, many of them
        d.tile_count[0] = 64;
        d.tile_count[1] = 2;
        d.groups = 2;
        break;
    default: break;
    }
    memset(m, 0, sizeof *m);
    m->desc = d;
    m->masked = nbt_int(2) != 0;
    m->dim = d.dim == 0 ? 2 : d.dim;
    m->groups = d.groups;
    for (int a = 0; a < 2; a++) {
        m->lo[a] = d.origin[a];
        m->hi[a] = d.origin[a] + d.size[a];
    }
    return d;
}

// Inserts an entity at p into the grid and the model: a random group, a mask of its own when
// the model's entities have them.
static int model_insert(nbTiles *t, Model *m, const double p[3])
{
    const int32_t g = nbt_int(m->groups);
    const nbFilter f = {1u << g, m->masked ? random_mask(m) : 0xFFFFFFFFu};
    NB_CHECK_OK(nb_tiles_insert(t, p, (uint64_t)m->n, f, &m->handle[m->n]));
    memcpy(m->pos[m->n], p, sizeof(double) * 3);
    m->group[m->n] = g;
    m->mask[m->n] = f.mask;
    m->alive[m->n++] = true;
    return 0;
}

static int random_step(nbTiles *t, Model *m)
{
    const int op = nbt_int(20);
    double p[3];
    random_pos(m, p);
    if ((op < 7 || m->n == 0) && m->n < MAXN) return model_insert(t, m, p);
    const int32_t i = nbt_int(m->n);
    if (op < 15) {
        if (!m->alive[i]) {
            NB_CHECK_STATUS(nb_tiles_move(t, m->handle[i], p), NB_ERR_BAD_HANDLE);
            return 0;
        }
        if (nbt_int(3) == 0) // a small step, mostly inside the tile
            for (int a = 0; a < m->dim; a++) p[a] = m->pos[i][a] + nbt_range(-1.0, 1.0);
        NB_CHECK_OK(nb_tiles_move(t, m->handle[i], p));
        memcpy(m->pos[i], p, sizeof p);
    } else if (op < 18) {
        NB_CHECK_STATUS(nb_tiles_remove(t, m->handle[i]), m->alive[i] ? NB_OK : NB_ERR_BAD_HANDLE);
        m->alive[i] = false;
    } else if (op == 18 && m->alive[i]) {
        const int32_t g = nbt_int(m->groups);
        const nbFilter f = {1u << g, m->masked && nbt_int(2) ? random_mask(m) : 0xFFFFFFFFu};
        NB_CHECK_OK(nb_tiles_set(t, m->handle[i], (uint64_t)i, f));
        nbFilter back;
        NB_CHECK_OK(nb_tiles_get(t, m->handle[i], NULL, NULL, &back));
        NB_CHECK(back.category == f.category && back.mask == f.mask);
        m->group[i] = g;
        m->mask[i] = f.mask;
    } else if (m->nw < MAXW - 40) { // waypoints, one or a batch
        const int32_t c = nbt_int(2) ? 1 : 1 + nbt_int(30);
        double wp[40 * 3]; // packed: dim doubles a waypoint
        uint64_t ids[40];
        for (int32_t w = 0; w < c; w++) {
            double p3[3];
            random_pos(m, p3);
            memcpy(wp + (size_t)w * (size_t)m->dim, p3, sizeof(double) * (size_t)m->dim);
            ids[w] = nbt_u64();
            memcpy(m->wpos[m->nw + w], p3, sizeof p3);
            m->wid[m->nw + w] = ids[w];
        }
        if (c == 1)
            NB_CHECK_OK(nb_tiles_add_waypoint(t, wp, ids[0]));
        else
            NB_CHECK_OK(nb_tiles_add_waypoints(t, wp, ids, c));
        m->nw += c;
    }
    return 0;
}

static Model model;

// A new grid of world `kind` (world()), empty, and the model emptied for it; NULL on failure.
static nbTiles *model_world(int kind, Model *m)
{
    const nbTilesDesc d = world(kind, m);
    nbTiles *t = NULL;
    return nb_tiles_create(&d, &t) == NB_OK ? t : NULL;
}

static int test_random_sequences(void)
{
    for (int kind = 0; kind < 6; kind++) {
        for (int run = 0; run < 6; run++) {
            Model *m = &model;
            nbTiles *t = model_world(kind, m);
            NB_CHECK(t != NULL);
            const int steps = 150 + nbt_int(400);
            for (int s = 0; s < steps; s++) {
                if (m->dim == 2 && nbt_int(20) == 0 && m->nw < MAXW - 40) {
                    // a 2D batch: packed 2 doubles each
                    const int32_t c = 1 + nbt_int(30);
                    double wp[40 * 2];
                    for (int32_t w = 0; w < c; w++) {
                        double p[3];
                        random_pos(m, p);
                        wp[2 * w] = p[0];
                        wp[2 * w + 1] = p[1];
                        memcpy(m->wpos[m->nw + w], p, sizeof p);
                        m->wid[m->nw + w] = (uint64_t)(m->nw + w); // ids NULL: the number
                    }
                    NB_CHECK_OK(nb_tiles_add_waypoints(t, wp, NULL, c));
                    m->nw += c;
                } else if (m->dim == 3 || nbt_int(20) != 0) {
                    if (random_step(t, m)) return 1;
                }
                if (s % 25 == 0) {
                    double q[3];
                    random_pos(m, q);
                    if (check_queries(t, m, q)) return 1;
                    if (m->n > 0) { // from an entity's own position
                        if (check_queries(t, m, m->pos[nbt_int(m->n)])) return 1;
                    }
                }
                if (s % 100 == 0 && check_pairs(t, m)) return 1;
                if (nbt_int(400) == 0) { // clear: handles go stale, waypoints stay
                    nb_tiles_clear(t);
                    for (int32_t i = 0; i < m->n; i++) m->alive[i] = false;
                    if (m->n > 0) {
                        double p[3] = {0, 0, 0};
                        NB_CHECK_STATUS(nb_tiles_move(t, m->handle[0], p), NB_ERR_BAD_HANDLE);
                    }
                }
            }
            if (check_pairs(t, m)) return 1;
            for (int i = 0; i < 20; i++) {
                double q[3];
                random_pos(m, q);
                if (check_queries(t, m, q)) return 1;
            }
            nb_tiles_destroy(t);
        }
    }
    return 0;
}

// Waypoints in 2D are read 2 doubles a point; max_distance limits the nearest.
static int test_waypoints_2d_packing(void)
{
    nbTilesDesc d = {0};
    d.size[0] = d.size[1] = 10.0;
    d.tile_count[0] = d.tile_count[1] = 5;
    nbTiles *t = NULL;
    NB_CHECK_OK(nb_tiles_create(&d, &t));
    const double wp[6] = {1, 1, 9, 9, 5, 5};
    const uint64_t ids[3] = {10, 20, 30};
    NB_CHECK_OK(nb_tiles_add_waypoints(t, wp, ids, 3));
    nbHitNeighbor nb;
    int32_t found = 0;
    const double q[2] = {8.5, 8.0};
    NB_CHECK_OK(nb_tiles_knn_waypoints(t, q, (double)INFINITY, &nb, 1, &found));
    NB_CHECK(found == 1 && nb.hit.user == 20 && nb.dist2 == 0.25 + 1.0);
    NB_CHECK_OK(nb_tiles_knn_waypoints(t, q, 1.0, &nb, 1, &found));
    NB_CHECK(found == 0);
    nb_tiles_destroy(t);
    return 0;
}

// A square world [0, size)^2 of tiles x tiles tiles and `groups` groups; NULL on failure.
static nbTiles *square_world(double size, int32_t tiles, int32_t groups)
{
    nbTilesDesc d = {0};
    d.size[0] = d.size[1] = size;
    d.tile_count[0] = d.tile_count[1] = tiles;
    d.groups = groups;
    nbTiles *t = NULL;
    return nb_tiles_create(&d, &t) == NB_OK ? t : NULL;
}

// Entities and waypoints far outside the world, asked from far outside: the edge tiles reach to
// infinity, and the rings must not stop at a tile's nominal box.
static int test_outside(void)
{
    nbTiles *t = square_world(100.0, 10, 2);
    NB_CHECK(t != NULL);
    nbHandle h[4];
    const double p0[2] = {-1000.0, 50.0}, p1[2] = {5.0, 50.0}, p2[2] = {-1000.0, 95.0},
                 p3[2] = {55.0, 55.0};
    NB_CHECK_OK(nb_tiles_insert(t, p0, 0, grp(0), &h[0])); // far left, tile (0, 5)
    NB_CHECK_OK(nb_tiles_insert(t, p1, 1, grp(0), &h[1])); // inside, tile (0, 5)
    NB_CHECK_OK(nb_tiles_insert(t, p2, 2, grp(1), &h[2])); // far left, tile (0, 9)
    NB_CHECK_OK(nb_tiles_insert(t, p3, 3, grp(1), &h[3]));
    nbHitNeighbor nb, two[2];
    int32_t found = 0;
    // From far left next to entity 2 (tile (0, 9)), group 0: entity 0 is 45 away in a tile
    // 4 rows down; entity 1 is nearer to the tile's box but 1005 away.
    const double q[2] = {-1000.0, 96.0};
    NB_CHECK_OK(nb_tiles_knn(t, q, find(1u), (double)INFINITY, &nb, 1, &found));
    NB_CHECK(found == 1 && nb.hit.user == 0 && nb.dist2 == 46.0 * 46.0);
    // From entity 3's place, tile (5, 5), the nearest other of group 1 (the recipe: k = 2 and
    // skip the asker) is entity 2, a far-outside one; within 1000 only the asker.
    const double q2[2] = {55.0, 55.0};
    NB_CHECK_OK(nb_tiles_knn(t, q2, find(2u), (double)INFINITY, two, 2, &found));
    NB_CHECK(found == 2 && two[0].hit.handle.bits == h[3].bits && two[1].hit.user == 2);
    NB_CHECK_OK(nb_tiles_knn(t, q2, find(2u), 1000.0, two, 2, &found));
    NB_CHECK(found == 1 && two[0].hit.user == 3);
    // From far right, the nearest of all is entity 3.
    const double q3[2] = {1e9, 55.0};
    NB_CHECK_OK(nb_tiles_knn(t, q3, NB_FILTER_ALL, (double)INFINITY, &nb, 1, &found));
    NB_CHECK(found == 1 && nb.hit.user == 3);
    // A radius query from far outside reaches entities inside.
    nbHit hits[4];
    NB_CHECK_OK(nb_tiles_query_radius(t, q3, 1e9 - 50.0, find(3u), hits, 4, &found));
    NB_CHECK(found == 1 && hits[0].user == 3);
    NB_CHECK_OK(nb_tiles_validate(t));
    nb_tiles_destroy(t);
    return 0;
}

// A position in direction `dir` off the world (0-3 the sides: x low, x high, y low, y high;
// 4-7 the corners; 8 inside) by `far` on the axes it leaves, anywhere along the others.
static void off_world(const Model *m, int dir, double far, double *p)
{
    static const int8_t side[9][2] = {{-1, 0}, {1, 0},  {0, -1}, {0, 1}, {-1, -1},
                                      {1, -1}, {-1, 1}, {1, 1},  {0, 0}};
    int32_t ax[2] = {m->desc.axes[0], m->desc.axes[1]};
    if (ax[0] == 0 && ax[1] == 0) ax[1] = m->dim == 3 ? 2 : 1;
    for (int a = 0; a < m->dim; a++) p[a] = nbt_range(-3.0, 3.0);
    for (int a = 0; a < 2; a++) {
        const double lo = m->lo[a], hi = m->hi[a];
        const int sd = side[dir][a];
        p[ax[a]] = sd < 0   ? lo - far * nbt_range(1.0, 1.5)
                   : sd > 0 ? hi + far * nbt_range(1.0, 1.5)
                            : nbt_range(lo, hi);
    }
}

// Radius queries from q at the distances of its nearest (the k-th for a few k), a hair under
// and over, against the oracle (oracle_sets done).
static int check_radius_at_data(const nbTiles *t, const Model *m, const double *q)
{
    const nbFilter f = random_filter(m);
    int32_t nall = 0, found = -1, nwant = 0;
    nbNeighbor *all = nbo_knn_filtered(&ents, q, ents.n, f, &nall);
    for (int j = 0; j < 3 && nall > 0; j++) {
        const double d = sqrt(all[nbt_int(nall < 6 ? nall : 6)].dist2);
        const double radii[3] = {d, nextafter(d, 0.0), d * (1.0 + 1e-9)};
        for (int i = 0; i < 3; i++) {
            NB_CHECK_OK(nb_tiles_query_radius(t, q, radii[i], f, hit_buf, MAXN, &found));
            int32_t *want = nbo_radius_filtered(&ents, q, radii[i], f, &nwant);
            const int bad = same_hits(m, hit_buf, found, want, nwant);
            free(want);
            if (bad) {
                free(all);
                return 1;
            }
        }
    }
    free(all);
    if (wps.n == 0) return 0;
    all = nbo_knn(&wps, q, wps.n, &nall);
    const double d = sqrt(all[nbt_int(nall < 4 ? nall : 4)].dist2) * (1.0 + 1e-9);
    free(all);
    NB_CHECK_OK(nb_tiles_query_waypoints(t, q, d, hit_buf, MAXW, &found));
    int32_t *want = nbo_radius(&wps, q, d, &nwant);
    free(want);
    NB_CHECK(found == nwant && nwant >= 1);
    return 0;
}

// Askers far off the world, on its diagonals and along its axes, with entities and waypoints
// inside it and beyond every side and corner (just beyond, a world's width, 1e6), moving out
// and back in: kNN (entities by group and filter, waypoints), radius and waypoint queries
// against the oracle, also at the distances of the nearest. The searches measure the asker
// against the box every entity lies in; once no entity is beyond a side, that side of the box
// is the world's again (validate checks it), and the answers stay exact throughout.
static int test_far_askers(void)
{
    static const double far_asks[] = {0.5, 3.0, 1e3, 1e6, 1e12};
    for (int kind = 0; kind < 6; kind++) {
        for (int run = 0; run < 3; run++) {
            Model *m = &model;
            nbTiles *t = model_world(kind, m);
            NB_CHECK(t != NULL);
            const double w = m->hi[0] - m->lo[0];
            const double dists[] = {1e-9 * w, 0.3 * w, w, 1e6};
            for (int i = 0; i < 160; i++) { // entities: most inside, the rest beyond
                double p[3];
                const int dir = nbt_int(3) == 0 ? nbt_int(8) : 8;
                off_world(m, dir, dists[nbt_int(4)], p);
                if (model_insert(t, m, p)) return 1;
            }
            double wp[60 * 3];
            for (int i = 0; i < 60; i++) { // waypoints: a corner's worth beyond, on one side
                double p[3];
                off_world(m, nbt_int(4) == 0 ? 4 + run : 8, dists[nbt_int(4)], p);
                memcpy(wp + (size_t)i * (size_t)m->dim, p, sizeof(double) * (size_t)m->dim);
                memcpy(m->wpos[m->nw], p, sizeof p);
                m->wid[m->nw] = (uint64_t)m->nw;
                m->nw++;
            }
            NB_CHECK_OK(nb_tiles_add_waypoints(t, wp, NULL, 60));
            for (int phase = 0; phase < 3; phase++) {
                // phase 1: moves and removes; phase 2: every entity back inside the world
                for (int32_t i = 0; phase > 0 && i < m->n; i++) {
                    if (!m->alive[i]) continue;
                    double p[3];
                    off_world(m, phase == 2 || nbt_int(2) ? 8 : nbt_int(8), dists[nbt_int(4)], p);
                    if (phase == 1 && nbt_int(10) == 0) {
                        NB_CHECK_OK(nb_tiles_remove(t, m->handle[i]));
                        m->alive[i] = false;
                        continue;
                    }
                    NB_CHECK_OK(nb_tiles_move(t, m->handle[i], p));
                    memcpy(m->pos[i], p, sizeof p);
                }
                NB_CHECK_OK(nb_tiles_validate(t));
                for (int dir = 0; dir < 8; dir++) {
                    for (size_t k = 0; k < sizeof far_asks / sizeof far_asks[0]; k++) {
                        double q[3];
                        off_world(m, dir, far_asks[k] * (k < 2 ? w : 1.0), q);
                        if (check_queries(t, m, q)) return 1;
                        if (check_radius_at_data(t, m, q)) return 1;
                    }
                }
            }
            nb_tiles_destroy(t);
        }
    }
    return 0;
}

// What a query far off a corner of the world costs: 50k entities inside a world of 100 x 100
// tiles, one more 1e6 beyond the opposite corner, and a few that went 1e6 beyond the asked
// corner and came back. 1200 askers 1e6 off the corners on the diagonals (the nearest enemy,
// the nearest waypoint, a radius reaching 5 entities) take less time than 40 scans of every
// entity's distance: each a small part of a scan. Before the searches measured the asker
// against the entities' box, the edge tiles (reaching out to infinity) let the bound take in
// every tile and each such query took 10 scans and more (725 us against 0.35 us inside).
// Processor time, the least of three rounds, so that a busy machine does not fail it.
static int test_far_costs_little(void)
{
    enum { N = 50000, W = 5000, ASK = 400, SCANS = 40 };
    nbTiles *t = square_world(1000.0, 100, 4);
    NB_CHECK(t != NULL);
    double *pos = (double *)malloc(sizeof(double) * 2 * (N + 1)),
           *wp = (double *)malloc(sizeof(double) * 2 * W);
    NB_CHECK(pos != NULL && wp != NULL);
    static nbHandle h[N + 1];
    for (int i = 0; i < N; i++) {
        pos[2 * i] = nbt_range(0.0, 1000.0);
        pos[2 * i + 1] = nbt_range(0.0, 1000.0);
        NB_CHECK_OK(nb_tiles_insert(t, pos + 2 * i, (uint64_t)i, grp(i % 4), &h[i]));
    }
    pos[2 * N] = pos[2 * N + 1] = 1e6 + 1000.0; // beyond the far corner, for good
    NB_CHECK_OK(nb_tiles_insert(t, pos + 2 * N, (uint64_t)N, grp(0), &h[N]));
    for (int i = 0; i < 2 * W; i++) wp[i] = nbt_range(0.0, 1000.0);
    NB_CHECK_OK(nb_tiles_add_waypoints(t, wp, NULL, W));
    for (int i = 0; i < 10; i++) { // out beyond the asked corner and back
        const double out[2] = {-1e6, -1e6};
        NB_CHECK_OK(nb_tiles_move(t, h[i], out));
        NB_CHECK_OK(nb_tiles_move(t, h[i], pos + 2 * i));
    }
    NB_CHECK_OK(nb_tiles_validate(t));
    double best_far = (double)INFINITY, best_scan = (double)INFINITY;
    static nbHit hits[N];
    for (int round = 0; round < 3; round++) {
        clock_t t0 = clock();
        for (int a = 0; a < ASK; a++) {
            const double q[2] = {(a & 1) ? -1e6 : 1e6 + 1000.0 - 2e6 * (a & 1),
                                 (a & 2) ? -1e6 - a : 2e6 + a};
            nbHitNeighbor e[5];
            int32_t found = 0;
            NB_CHECK_OK(nb_tiles_knn(t, q, find(0xEu), (double)INFINITY, e, 1, &found));
            NB_CHECK(found == 1);
            NB_CHECK_OK(nb_tiles_knn_waypoints(t, q, (double)INFINITY, e, 1, &found));
            NB_CHECK(found == 1);
            NB_CHECK_OK(nb_tiles_knn(t, q, NB_FILTER_ALL, (double)INFINITY, e, 5, &found));
            NB_CHECK(found == 5);
            NB_CHECK_OK(nb_tiles_query_radius(t, q, sqrt(e[4].dist2) * (1.0 + 1e-12), NB_FILTER_ALL,
                                              hits, N, &found));
            NB_CHECK(found >= 5 && found < 50);
        }
        const double far = (double)(clock() - t0) / CLOCKS_PER_SEC;
        t0 = clock();
        double sink = 0.0;
        for (int k = 0; k < SCANS; k++) { // a scan: every entity's distance, as a walk's
            const double q[2] = {-1e6 - k, -1e6};
            double best = (double)INFINITY;
            for (int i = 0; i <= N; i++) {
                const double dx = pos[2 * i] - q[0], dy = pos[2 * i + 1] - q[1];
                const double e = dx * dx + dy * dy;
                best = e < best ? e : best;
            }
            sink += best;
        }
        const double scan = (double)(clock() - t0) / CLOCKS_PER_SEC;
        NB_CHECK(sink > 0.0);
        best_far = far < best_far ? far : best_far;
        best_scan = scan < best_scan ? scan : best_scan;
    }
    printf("  %d far askers x 4 queries: %.3f ms; %d scans of %d entities: %.3f ms\n", ASK,
           best_far * 1e3, SCANS, N, best_scan * 1e3);
    NB_CHECK(best_far < best_scan);
    free(pos);
    free(wp);
    nb_tiles_destroy(t);
    return 0;
}

// Exactly r apart across a tile boundary, and ties broken by slot.
static int test_boundaries_and_ties(void)
{
    nbTilesDesc d = {0};
    d.size[0] = d.size[1] = 8.0;
    d.tile_count[0] = d.tile_count[1] = 8;
    nbTiles *t = NULL;
    NB_CHECK_OK(nb_tiles_create(&d, &t));
    nbHandle h[4];
    const double a[2] = {2.0, 2.0}, b[2] = {4.0, 2.0}, c[2] = {0.0, 2.0}, e[2] = {2.0, 4.0};
    NB_CHECK_OK(nb_tiles_insert(t, b, 1, grp(0), &h[0]));
    NB_CHECK_OK(nb_tiles_insert(t, c, 2, grp(0), &h[1]));
    NB_CHECK_OK(nb_tiles_insert(t, e, 3, grp(0), &h[2]));
    NB_CHECK_OK(nb_tiles_insert(t, a, 0, grp(0), &h[3]));
    nbHitNeighbor out[4];
    int32_t found = 0;
    NB_CHECK_OK(nb_tiles_knn(t, a, find(1u), (double)INFINITY, out, 4, &found));
    NB_CHECK(found == 4 && out[0].hit.user == 0);
    NB_CHECK(out[1].hit.user == 1 && out[2].hit.user == 2 && out[3].hit.user == 3); // by slot
    nbHit hits[4];
    NB_CHECK_OK(nb_tiles_query_radius(t, a, 2.0, find(1u), hits, 4, &found));
    NB_CHECK(found == 4);
    NB_CHECK_OK(nb_tiles_query_radius(t, a, nextafter(2.0, 0.0), find(1u), hits, 4, &found));
    NB_CHECK(found == 1);
    NB_CHECK_OK(nb_tiles_query_neighbors(t, h[3], 2.0, NB_FILTER_ALL, hits, 4, &found));
    NB_CHECK(found == 3 && hits[0].user != 0 && hits[1].user != 0 && hits[2].user != 0);
    // max_distance exactly 2 keeps the three at 2 (the test d2 <= 2 * 2), a hair less drops them
    NB_CHECK_OK(nb_tiles_knn(t, a, NB_FILTER_ALL, 2.0, out, 4, &found));
    NB_CHECK(found == 4);
    NB_CHECK_OK(nb_tiles_knn(t, a, NB_FILTER_ALL, nextafter(2.0, 0.0), out, 4, &found));
    NB_CHECK(found == 1 && out[0].hit.user == 0);
    int64_t pairs = 0;
    NB_CHECK_OK(nb_tiles_count_pairs(t, 2.0, &pairs));
    NB_CHECK(pairs == 3);
    // a mask that refuses group 0: entity 0 finds no one, and no pair holds it
    nbFilter f = {1u, 0u};
    NB_CHECK_OK(nb_tiles_set(t, h[3], 0, f));
    NB_CHECK_OK(nb_tiles_count_pairs(t, 2.0, &pairs));
    NB_CHECK(pairs == 0);
    NB_CHECK_OK(nb_tiles_query_radius(t, a, 2.0, find(1u), hits, 4, &found));
    NB_CHECK(found == 3); // a query whose category entity 0's mask 0 refuses
    NB_CHECK_OK(nb_tiles_count_cross_pairs(t, 2.0, 1u, 1u, &pairs));
    NB_CHECK(pairs == 0); // an entity whose mask is 0 plays no role
    f.mask = 0xFFFFFFFFu;
    NB_CHECK_OK(nb_tiles_set(t, h[3], 0, f));
    NB_CHECK_OK(nb_tiles_count_cross_pairs(t, 2.0, 1u, 1u, &pairs));
    NB_CHECK(pairs == 6); // both roles
    nb_tiles_destroy(t);
    return 0;
}

// The tiles a visitor is given against a buffer form's, one by one; with stop > 0 it stops after
// that many.
typedef struct TileSeen {
    const int32_t *want;
    int32_t n, wrong, stop;
} TileSeen;

static bool seen_tile(int32_t tile, void *user)
{
    TileSeen *s = (TileSeen *)user;
    s->wrong += s->want[s->n] != tile;
    s->n++;
    return s->stop == 0 || s->n < s->stop;
}

static int test_neighbors(void)
{
    nbTilesDesc d = {0};
    d.size[0] = 40.0;
    d.size[1] = 20.0;
    d.tile_count[0] = 8;
    d.tile_count[1] = 2; // tiles 5 x 10
    nbTiles *t = NULL;
    NB_CHECK_OK(nb_tiles_create(&d, &t));
    int32_t out[64], found = 0;
    NB_CHECK_OK(nb_tiles_neighbor_tiles(t, 0, 1, out, 64, &found)); // corner
    NB_CHECK(found == 4 && out[0] == 0 && out[1] == 1 && out[2] == 8 && out[3] == 9);
    NB_CHECK_OK(nb_tiles_neighbor_tiles(t, 3, 1, out, 64, &found)); // bottom edge
    NB_CHECK(found == 6 && out[0] == 2 && out[5] == 12);
    NB_CHECK_OK(nb_tiles_neighbor_tiles(t, 15, 0, out, 64, &found));
    NB_CHECK(found == 1 && out[0] == 15);
    NB_CHECK_STATUS(nb_tiles_neighbor_tiles(t, 4, 2, out, 3, &found), NB_ERR_BUFFER_TOO_SMALL);
    NB_CHECK(found == 10 && out[0] == 2 && out[2] == 4);
    // radius 10: 2 rings across (edge 5), 1 ring down (edge 10)
    NB_CHECK_OK(nb_tiles_neighbor_tiles_radius(t, 4, 10.0, out, 64, &found));
    NB_CHECK(found == 10 && out[0] == 2 && out[4] == 6 && out[5] == 10);
    NB_CHECK_OK(nb_tiles_neighbor_tiles_radius(t, 4, 0.0, out, 64, &found));
    NB_CHECK(found == 1 && out[0] == 4);
    NB_CHECK_OK(nb_tiles_neighbor_tiles_radius(t, 4, 1e300, out, 64, &found));
    NB_CHECK(found == 16);
    // The callback forms: the same tiles in the same order, and a visitor that stops.
    TileSeen seen = {out, 0, 0, 0};
    NB_CHECK_OK(nb_tiles_neighbor_tiles(t, 4, 2, out, 64, &found));
    NB_CHECK_OK(nb_tiles_visit_neighbor_tiles(t, 4, 2, seen_tile, &seen));
    NB_CHECK(found == 10 && seen.n == found && seen.wrong == 0);
    NB_CHECK_OK(nb_tiles_neighbor_tiles_radius(t, 4, 10.0, out, 64, &found));
    seen = (TileSeen){out, 0, 0, 0};
    NB_CHECK_OK(nb_tiles_visit_neighbor_tiles_radius(t, 4, 10.0, seen_tile, &seen));
    NB_CHECK(seen.n == found && seen.wrong == 0);
    seen = (TileSeen){out, 0, 0, 3};
    NB_CHECK_OK(nb_tiles_visit_neighbor_tiles_radius(t, 4, 10.0, seen_tile, &seen));
    NB_CHECK(seen.n == 3 && seen.wrong == 0);
    // a 3x3 grid: the centre has 8 neighbours
    d.tile_count[0] = d.tile_count[1] = 3;
    nbTiles *t3 = NULL;
    NB_CHECK_OK(nb_tiles_create(&d, &t3));
    NB_CHECK_OK(nb_tiles_neighbor_tiles(t3, 4, 1, out, 64, &found));
    NB_CHECK(found == 9);
    int32_t tile = -2;
    const double p[2] = {-5.0, 100.0};
    NB_CHECK_OK(nb_tiles_tile_of(t3, p, &tile));
    NB_CHECK(tile == 6);
    nb_tiles_destroy(t3);
    nb_tiles_destroy(t);
    return 0;
}

static bool count_hit(nbHit hit, void *user)
{
    (void)hit;
    (*(int32_t *)user)++;
    return true;
}

static bool count_neighbor(nbHit hit, double dist2, void *user)
{
    (void)dist2;
    return count_hit(hit, user);
}

static int test_bad_handles(void)
{
    nbTilesDesc d = {0};
    d.size[0] = d.size[1] = 10.0;
    d.tile_count[0] = d.tile_count[1] = 2;
    d.groups = 2;
    nbTiles *t = NULL, *other = NULL;
    NB_CHECK_OK(nb_tiles_create(&d, &t));
    NB_CHECK_OK(nb_tiles_create(&d, &other));
    const double p[2] = {1, 1};
    nbHandle h, o;
    NB_CHECK_OK(nb_tiles_insert(t, p, 7, grp(1), &h));
    NB_CHECK_OK(nb_tiles_insert(other, p, 7, grp(1), &o));
    NB_CHECK_STATUS(nb_tiles_move(t, o, p), NB_ERR_BAD_HANDLE);
    NB_CHECK_STATUS(nb_tiles_remove(t, NB_HANDLE_NULL), NB_ERR_BAD_HANDLE);
    int32_t found = 5;
    NB_CHECK_STATUS(nb_tiles_query_neighbors(t, o, 1.0, NB_FILTER_ALL, NULL, 0, &found),
                    NB_ERR_BAD_HANDLE);
    NB_CHECK(found == 0);
    // a category must be one bit of an existing group (2 groups here)
    const nbFilter bad[4] = {{0u, ~0u}, {3u, ~0u}, {4u, ~0u}, {0x80000000u, ~0u}};
    nbHandle none = {77};
    for (int i = 0; i < 4; i++) {
        NB_CHECK_STATUS(nb_tiles_insert(t, p, 1, bad[i], &none), NB_ERR_OUT_OF_RANGE);
        NB_CHECK(none.bits == 0);
        NB_CHECK_STATUS(nb_tiles_set(t, h, 1, bad[i]), NB_ERR_OUT_OF_RANGE);
    }
    NB_CHECK_OK(nb_tiles_remove(t, h));
    NB_CHECK_STATUS(nb_tiles_remove(t, h), NB_ERR_BAD_HANDLE);
    NB_CHECK_STATUS(nb_tiles_set(t, h, 1, grp(0)), NB_ERR_BAD_HANDLE);
    NB_CHECK_STATUS(nb_tiles_get(t, h, NULL, NULL, NULL), NB_ERR_BAD_HANDLE);
    nbHandle h2;
    const nbFilter f0 = {1u, 2u};
    NB_CHECK_OK(nb_tiles_insert(t, p, 8, f0, &h2)); // reuses the slot, new generation
    NB_CHECK(h2.bits != h.bits);
    NB_CHECK_STATUS(nb_tiles_move(t, h, p), NB_ERR_BAD_HANDLE);
    nbFilter g = {0, 0};
    uint64_t u = 0;
    double at[2];
    NB_CHECK_OK(nb_tiles_get(t, h2, at, &u, &g));
    NB_CHECK(g.category == 1u && g.mask == 2u && u == 8 && at[0] == 1.0);
    found = 0;
    NB_CHECK_OK(nb_tiles_visit_tile(t, 0, find(1u), count_hit, &found));
    NB_CHECK(found == 1);
    found = 0; // its mask 2 refuses a query of category 1
    const nbFilter cat1 = {1u, ~0u};
    NB_CHECK_OK(nb_tiles_visit_tile(t, 0, cat1, count_hit, &found));
    NB_CHECK(found == 0);
    NB_CHECK_OK(nb_tiles_validate(t));
    nb_tiles_destroy(t);
    nb_tiles_destroy(other);
    return 0;
}

// The same calls give the same results in the same order.
static int test_deterministic(void)
{
    uint64_t digest[2] = {0, 0};
    for (int run = 0; run < 2; run++) {
        nbt_rng_state = 12345;
        Model *m = &model;
        nbTilesDesc d = world(0, m);
        nbTiles *t = NULL;
        NB_CHECK_OK(nb_tiles_create(&d, &t));
        for (int s = 0; s < 400; s++)
            if (random_step(t, m)) return 1;
        const double q[2] = {5.0, 10.0};
        int32_t found = 0;
        NB_CHECK_OK(nb_tiles_query_radius(t, q, 15.0, NB_FILTER_ALL, hit_buf, MAXN, &found));
        for (int32_t i = 0; i < found; i++) digest[run] = digest[run] * 31 + hit_buf[i].user;
        int64_t np = 0;
        NB_CHECK_OK(nb_tiles_cross_pairs(t, 3.0, 1u, 6u, pair_buf, MAXN * MAXN, &np));
        for (int64_t i = 0; i < np; i++)
            digest[run] = digest[run] * 31 + pair_buf[i].a.user * 7 + pair_buf[i].b.user;
        NB_CHECK_OK(nb_tiles_pairs(t, 3.0, pair_buf, MAXN * MAXN, &np));
        for (int64_t i = 0; i < np; i++)
            digest[run] = digest[run] * 31 + pair_buf[i].a.user * 7 + pair_buf[i].b.user;
        nb_tiles_destroy(t);
    }
    NB_CHECK(digest[0] == digest[1] && digest[0] != 0);
    return 0;
}

static int test_steady_state_allocates_nothing(void)
{
    nbtAlloc counter = {0};
    nbAllocator al = nbt_allocator(&counter);
    nbTilesDesc d = {0};
    d.size[0] = d.size[1] = 80.0;
    d.tile_count[0] = d.tile_count[1] = 20;
    d.groups = 4;
    d.capacity_hint = 3000;
    d.allocator = &al;
    nbTiles *t = NULL;
    NB_CHECK_OK(nb_tiles_create(&d, &t));
    enum { N = 3000 };
    static double pos[N][2];
    static nbHandle hd[N];
    double wp[200][2];
    for (int w = 0; w < 200; w++) {
        wp[w][0] = nbt_range(0, 80);
        wp[w][1] = nbt_range(0, 80);
    }
    NB_CHECK_OK(nb_tiles_add_waypoints(t, &wp[0][0], NULL, 200));
    for (int32_t i = 0; i < N; i++) {
        pos[i][0] = nbt_range(0, 80);
        pos[i][1] = nbt_range(0, 80);
        NB_CHECK_OK(nb_tiles_insert(t, pos[i], (uint64_t)i, grp(i % 4), &hd[i]));
    }
    int64_t before = 0;
    for (int frame = 0; frame < 400; frame++) {
        if (frame == 200) before = counter.allocs;
        for (int32_t i = 0; i < N; i++) {
            for (int a = 0; a < 2; a++) pos[i][a] += nbt_range(-1.0, 1.0); // and out of bounds
            NB_CHECK_OK(nb_tiles_move(t, hd[i], pos[i]));
        }
        for (int32_t i = frame; i < N; i += 100) {
            nbHitNeighbor nb;
            int32_t found = 0;
            NB_CHECK_OK(
                nb_tiles_knn(t, pos[i], find(~(1u << (i % 4))), (double)INFINITY, &nb, 1, &found));
            NB_CHECK(found == 1);
            NB_CHECK_OK(nb_tiles_knn_waypoints(t, pos[i], (double)INFINITY, &nb, 1, &found));
            NB_CHECK(found == 1);
            found = 0;
            NB_CHECK_OK(nb_tiles_visit_radius(t, pos[i], 3.0, NB_FILTER_ALL, count_hit, &found));
            NB_CHECK(found >= 1);
            found = 0; // a heap of NB_KNN_STACK stays on the stack
            NB_CHECK_OK(nb_tiles_visit_knn(t, pos[i], NB_FILTER_ALL, (double)INFINITY, NB_KNN_STACK,
                                           count_neighbor, &found));
            NB_CHECK(found == NB_KNN_STACK);
            found = 0;
            NB_CHECK_OK(nb_tiles_visit_neighbors(t, hd[i], 3.0, NB_FILTER_ALL, count_hit, &found));
        }
    }
    NB_CHECK(counter.allocs == before);
    NB_CHECK_OK(nb_tiles_validate(t));
    nb_tiles_destroy(t);
    NB_CHECK(counter.live_bytes == 0 && counter.allocs == counter.frees && !counter.size_mismatch);
    return 0;
}

// The answers to a fixed probe, to show a failed call left the grid unchanged.
static uint64_t fingerprint(const nbTiles *t)
{
    uint64_t f =
        (uint64_t)nb_tiles_count(t) * 0x9E3779B97F4A7C15u + (uint64_t)nb_tiles_waypoint_count(t);
    int64_t pairs = 0;
    if (nb_tiles_count_pairs(t, 1.5, &pairs) != NB_OK) return 0;
    f ^= (uint64_t)pairs * 0xBF58476D1CE4E5B9u;
    static nbHit hits[256];
    int32_t found = 0;
    const double c[2] = {3.0, 3.0};
    if (nb_tiles_query_radius(t, c, 6.0, NB_FILTER_ALL, hits, 256, &found) != NB_OK) return 0;
    for (int32_t i = 0; i < found; i++) f = f * 31 + hits[i].user + hits[i].handle.bits;
    if (nb_tiles_query_waypoints(t, c, 60.0, hits, 256, &found) != NB_OK) return 0;
    for (int32_t i = 0; i < found; i++) f = f * 31 + hits[i].user;
    return f;
}

// Fail allocation i of each operation that can allocate, for every i: NB_ERR_OUT_OF_MEMORY, the
// grid as it was, no leaks; each sweep ends on a try that succeeds.
static int test_allocation_failure(void)
{
    for (int op = 0; op < 6; op++) {
        bool succeeded = false;
        for (int64_t fail = 1; fail < 400 && !succeeded; fail++) {
            nbtAlloc counter = {0};
            nbAllocator al = nbt_allocator(&counter);
            nbTilesDesc d = {0};
            d.size[0] = d.size[1] = 20.0;
            d.tile_count[0] = d.tile_count[1] = 10;
            d.groups = 3;
            d.allocator = &al;
            d.capacity_hint = op == 0 ? 50 : 0;
            nbTiles *t = NULL;
            if (op == 0) counter.fail_at = fail;
            const nbStatus cst = nb_tiles_create(&d, &t);
            if (op == 0) {
                if (cst == NB_OK) {
                    succeeded = !nbt_alloc_failed(&counter);
                    NB_CHECK_OK(nb_tiles_validate(t));
                    nb_tiles_destroy(t);
                } else {
                    NB_CHECK(cst == NB_ERR_OUT_OF_MEMORY && t == NULL &&
                             nbt_alloc_failed(&counter));
                }
                NB_CHECK(counter.live_bytes == 0);
                continue;
            }
            NB_CHECK_OK(cst);
            static nbHandle hd[40];
            for (int32_t i = 0; i < 40; i++) {
                const double p[2] = {(double)(i % 7) * 0.9, (double)(i / 7) * 0.8};
                NB_CHECK_OK(nb_tiles_insert(t, p, (uint64_t)i, grp(i % 3), &hd[i]));
            }
            counter.fail_at = counter.allocs + fail;
            nbStatus st = NB_OK;
            for (int32_t s = 0; s < 60 && st == NB_OK; s++) {
                const double p[2] = {(double)(s % 10) * 2.0 + 0.5, 19.5 - (double)(s % 10) * 2.0};
                const uint64_t before = fingerprint(t);
                const size_t bytes = nb_tiles_memory_bytes(t);
                nbHandle extra = {1};
                if (op == 1) st = nb_tiles_insert(t, p, 100 + (uint64_t)s, grp(s % 3), &extra);
                if (op == 2) st = nb_tiles_move(t, hd[s % 40], p);
                if (op == 3) st = nb_tiles_reserve(t, 1000 + 100 * s);
                if (op == 4) st = nb_tiles_add_waypoints(t, p, NULL, 1);
                if (op == 5) st = nb_tiles_set(t, hd[s % 40], 5, grp((s + 1) % 3));
                if (st != NB_OK) {
                    NB_CHECK(st == NB_ERR_OUT_OF_MEMORY && nbt_alloc_failed(&counter));
                    NB_CHECK(op != 1 || extra.bits == 0);
                    NB_CHECK(fingerprint(t) == before && nb_tiles_memory_bytes(t) == bytes);
                }
            }
            succeeded = st == NB_OK && !nbt_alloc_failed(&counter);
            NB_CHECK_OK(nb_tiles_validate(t));
            nb_tiles_destroy(t);
            NB_CHECK(counter.live_bytes == 0 && !counter.size_mismatch);
        }
        if (!succeeded) fprintf(stderr, "op %d never succeeded\n", op);
        NB_CHECK(succeeded);
    }
    return 0;
}

// visit_knn above NB_KNN_STACK takes its heap from the grid's allocator: a failure is
// NB_ERR_OUT_OF_MEMORY before any callback; otherwise one allocation, freed before returning.
// At NB_KNN_STACK or fewer (or k beyond what is stored, capped) nothing allocates.
static int test_visit_knn_heap(void)
{
    nbtAlloc counter = {0};
    nbAllocator al = nbt_allocator(&counter);
    nbTilesDesc d = {0};
    d.size[0] = d.size[1] = 50.0;
    d.tile_count[0] = d.tile_count[1] = 5;
    d.allocator = &al;
    nbTiles *t = NULL;
    NB_CHECK_OK(nb_tiles_create(&d, &t));
    enum { N = 2 * NB_KNN_STACK };
    static double wp[N][2];
    for (int32_t i = 0; i < N; i++) {
        const double p[2] = {(double)(i % 16) * 3.0, (double)(i / 16) * 3.0};
        nbHandle h;
        NB_CHECK_OK(nb_tiles_insert(t, p, (uint64_t)i, grp(0), &h));
        wp[i][0] = p[0];
        wp[i][1] = p[1];
    }
    NB_CHECK_OK(nb_tiles_add_waypoints(t, &wp[0][0], NULL, N));
    const double q[2] = {20.0, 20.0};
    for (int way = 0; way < 2; way++) {
        int32_t visits = 0;
        const int64_t allocs = counter.allocs;
        const int64_t live = counter.live_bytes;
        counter.fail_at = counter.allocs + 1;
        const nbStatus st =
            way == 0 ? nb_tiles_visit_knn(t, q, NB_FILTER_ALL, (double)INFINITY, NB_KNN_STACK + 1,
                                          count_neighbor, &visits)
                     : nb_tiles_visit_knn_waypoints(t, q, (double)INFINITY, NB_KNN_STACK + 1,
                                                    count_neighbor, &visits);
        NB_CHECK_STATUS(st, NB_ERR_OUT_OF_MEMORY);
        NB_CHECK(visits == 0 && nbt_alloc_failed(&counter));
        counter.fail_at = 0;
        NB_CHECK_OK(way == 0 ? nb_tiles_visit_knn(t, q, NB_FILTER_ALL, (double)INFINITY, N + 5,
                                                  count_neighbor, &visits)
                             : nb_tiles_visit_knn_waypoints(t, q, (double)INFINITY, N + 5,
                                                            count_neighbor, &visits));
        NB_CHECK(visits == N && counter.live_bytes == live);
        visits = 0;
        const int64_t mid = counter.allocs;
        NB_CHECK(mid > allocs);
        NB_CHECK_OK(way == 0 ? nb_tiles_visit_knn(t, q, NB_FILTER_ALL, (double)INFINITY,
                                                  NB_KNN_STACK, count_neighbor, &visits)
                             : nb_tiles_visit_knn_waypoints(t, q, (double)INFINITY, NB_KNN_STACK,
                                                            count_neighbor, &visits));
        NB_CHECK(visits == NB_KNN_STACK && counter.allocs == mid);
    }
    nb_tiles_destroy(t);
    NB_CHECK(counter.live_bytes == 0 && !counter.size_mismatch);
    return 0;
}

static int test_create_checks(void)
{
    nbTiles *t = (nbTiles *)(uintptr_t)1;
    nbTilesDesc d = {0};
    d.size[0] = d.size[1] = 10.0;
    NB_CHECK_STATUS(nb_tiles_create(&d, &t), NB_ERR_OUT_OF_RANGE); // no tile count or size
    NB_CHECK(t == NULL);
    d.tile_count[0] = d.tile_count[1] = 4;
    d.origin[0] = (double)NAN;
    NB_CHECK_STATUS(nb_tiles_create(&d, &t), NB_ERR_NOT_FINITE);
    d.origin[0] = 0.0;
    d.size[1] = -1.0;
    NB_CHECK_STATUS(nb_tiles_create(&d, &t), NB_ERR_OUT_OF_RANGE);
    d.size[1] = 10.0;
    d.groups = 33;
    NB_CHECK_STATUS(nb_tiles_create(&d, &t), NB_ERR_OUT_OF_RANGE);
    d.groups = 0;
    d.dim = 3;
    d.axes[0] = 2;
    d.axes[1] = 2;
    NB_CHECK_STATUS(nb_tiles_create(&d, &t), NB_ERR_OUT_OF_RANGE);
    d.axes[1] = 3;
    NB_CHECK_STATUS(nb_tiles_create(&d, &t), NB_ERR_OUT_OF_RANGE);
    d.axes[1] = 0; // z and x
    NB_CHECK_OK(nb_tiles_create(&d, &t));
    nbTilesInfo info;
    NB_CHECK_OK(nb_tiles_info(t, &info));
    NB_CHECK(info.tile_count[0] == 4 && info.edge[1] == 2.5 && info.axes[0] == 2 &&
             info.axes[1] == 0);
    NB_CHECK(info.dim == 3 && info.groups == 1 && info.tiles == 16 && info.count == 0);
    NB_CHECK(info.bytes == nb_tiles_memory_bytes(t) && info.origin[0] == 0.0);
    nb_tiles_destroy(t);
    d.tile_count[0] = d.tile_count[1] = 4096;
    NB_CHECK_STATUS(nb_tiles_create(&d, &t), NB_ERR_OUT_OF_RANGE); // 2^24 tiles
    d.tile_count[0] = d.tile_count[1] = 0;
    d.tile_size[0] = d.tile_size[1] = 3.0; // 10 / 3: 4 tiles, the world grows to 12
    d.dim = 2;
    d.axes[0] = d.axes[1] = 0;
    NB_CHECK_OK(nb_tiles_create(&d, &t));
    NB_CHECK_OK(nb_tiles_info(t, &info));
    NB_CHECK(info.tile_count[0] == 4 && info.tile_count[1] == 4 && info.edge[0] == 3.0 &&
             info.axes[1] == 1);
    nb_tiles_destroy(t);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"random_sequences", test_random_sequences},
        {"waypoints_2d_packing", test_waypoints_2d_packing},
        {"outside", test_outside},
        {"far_askers", test_far_askers},
        {"far_costs_little", test_far_costs_little},
        {"boundaries_and_ties", test_boundaries_and_ties},
        {"neighbors", test_neighbors},
        {"bad_handles", test_bad_handles},
        {"deterministic", test_deterministic},
        {"steady_state_allocates_nothing", test_steady_state_allocates_nothing},
        {"allocation_failure", test_allocation_failure},
        {"visit_knn_heap", test_visit_knn_heap},
        {"create_checks", test_create_checks},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
