// SPDX-License-Identifier: MIT
// Read-only queries are thread-safe: several threads query one grid at once (radius, box, kNN,
// and all pairs split by units), or one spatial hash (every query: radius, box, kNN, neighbours,
// pairs, count, cross pairs, visit_all, filtered and not), and every answer matches the
// single-threaded one. make test also runs this under ThreadSanitizer, which reports any write a
// query makes to shared state.
#define _POSIX_C_SOURCE 200809L
#include <nearby/grid.h>
#include <nearby/hash.h>
#include <nearby/quadtree.h>
#include <nearby/tiles.h>

#include "nb_oracle.h"
#include "nb_test.h"

#include <math.h>
#include <pthread.h>

// Density about 1: N points in a square of side SIDE. N is kept small enough for the O(N^2)
// pair oracle to stay quick under the sanitizers.
enum { N = 10000, THREADS = 4, QUERIES = 200, MAX_WITHIN = 512, K = 8 };
#define SIDE 100.0
#define RADIUS 2.0
#define PAIR_RADIUS 1.5

// What every thread must see: the single-threaded answers, each checked against the oracle.
typedef struct Shared {
    const nbGrid *grid;
    double centers[QUERIES][2];
    int32_t want_radius[QUERIES][MAX_WITHIN]; // in the grid's order
    int32_t want_radius_n[QUERIES];
    nbNeighbor want_knn[QUERIES][K];
} Shared;

typedef struct Job {
    const Shared *sh;
    int id;
    int failures;
    int64_t pairs;
    uint64_t pair_sum; // an order-free checksum of the pairs seen
} Job;

static uint64_t pair_key(int32_t i, int32_t j)
{
    return (uint64_t)i * 1000003u + (uint64_t)j;
}

static bool count_pair(int32_t i, int32_t j, void *user)
{
    Job *job = (Job *)user;
    job->pairs++;
    job->pair_sum += pair_key(i, j);
    return true;
}

static void *worker(void *arg)
{
    Job *job = (Job *)arg;
    const Shared *sh = job->sh;
    int32_t out[MAX_WITHIN];
    nbNeighbor nn[K];
    for (int rep = 0; rep < 3; rep++)
        for (int q = 0; q < QUERIES; q++) {
            int32_t found = -1;
            if (nb_grid_query_radius(sh->grid, sh->centers[q], RADIUS, NB_FILTER_ALL, out,
                                     MAX_WITHIN, &found) != NB_OK ||
                !nbo_same_indices(out, found, sh->want_radius[q], sh->want_radius_n[q]))
                job->failures++;
            if (nb_grid_knn(sh->grid, sh->centers[q], NB_FILTER_ALL, (double)INFINITY, nn, K,
                            &found) != NB_OK ||
                !nbo_same_neighbors(nn, found, sh->want_knn[q], K))
                job->failures++;
        }
    // this thread's share of the pair units
    const int32_t units = nb_grid_pair_units(sh->grid);
    const int32_t u0 = (int32_t)((int64_t)units * job->id / THREADS);
    const int32_t u1 = (int32_t)((int64_t)units * (job->id + 1) / THREADS);
    if (nb_grid_visit_pairs_range(sh->grid, PAIR_RADIUS, u0, u1, count_pair, job) != NB_OK)
        job->failures++;
    return NULL;
}

// The grid built with cells of `cell` (0: the pair radius), in layout `ranked` or dense.
static int concurrent_queries_on(double cell, bool ranked)
{
    nboSet s = nbo_set_new(N, 2);
    for (int i = 0; i < 2 * N; i++) s.p[i] = nbt_range(0, SIDE);
    nbGridDesc desc = {0};
    desc.cell_size = cell;
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints view = nbo_points(&s);
    NB_CHECK_OK(nb_grid_build(g, &view, PAIR_RADIUS));
    nbGridInfo info;
    NB_CHECK_OK(nb_grid_info(g, &info));
    NB_CHECK(info.ranked == ranked && info.hashed == ranked);
    static Shared sh;
    sh.grid = g;
    for (int q = 0; q < QUERIES; q++) {
        sh.centers[q][0] = nbt_range(-5, SIDE + 5);
        sh.centers[q][1] = nbt_range(-5, SIDE + 5);
        int32_t found = -1, want_n = 0;
        NB_CHECK_OK(nb_grid_query_radius(g, sh.centers[q], RADIUS, NB_FILTER_ALL, sh.want_radius[q],
                                         MAX_WITHIN, &found));
        int32_t *want = nbo_radius(&s, sh.centers[q], RADIUS, &want_n);
        int32_t sorted[MAX_WITHIN];
        NB_CHECK(found == want_n);
        memcpy(sorted, sh.want_radius[q], (size_t)found * sizeof(int32_t));
        nbo_sort_indices(sorted, found);
        NB_CHECK(nbo_same_indices(sorted, found, want, want_n));
        free(want);
        sh.want_radius_n[q] = found;
        NB_CHECK_OK(nb_grid_knn(g, sh.centers[q], NB_FILTER_ALL, (double)INFINITY, sh.want_knn[q],
                                K, &found));
        nbNeighbor *want_nn = nbo_knn(&s, sh.centers[q], K, &want_n);
        NB_CHECK(want_n == K && nbo_same_neighbors(sh.want_knn[q], found, want_nn, want_n));
        free(want_nn);
    }
    int64_t want_pairs = 0;
    nbPair *all = nbo_pairs(&s, PAIR_RADIUS, &want_pairs);
    uint64_t want_sum = 0;
    for (int64_t t = 0; t < want_pairs; t++) want_sum += pair_key(all[t].i, all[t].j);
    free(all);
    NB_CHECK(want_pairs > 0);
    pthread_t tid[THREADS];
    Job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t].sh = &sh;
        jobs[t].id = t;
        jobs[t].failures = 0;
        jobs[t].pairs = 0;
        jobs[t].pair_sum = 0;
        NB_CHECK(pthread_create(&tid[t], NULL, worker, &jobs[t]) == 0);
    }
    int64_t pairs = 0;
    uint64_t sum = 0;
    for (int t = 0; t < THREADS; t++) {
        NB_CHECK(pthread_join(tid[t], NULL) == 0);
        NB_CHECK(jobs[t].failures == 0);
        pairs += jobs[t].pairs;
        sum += jobs[t].pair_sum;
    }
    NB_CHECK(pairs == want_pairs && sum == want_sum);
    NB_CHECK_OK(nb_grid_validate(g));
    nb_grid_destroy(g);
    nbo_set_free(&s);
    return 0;
}

static int test_concurrent_queries(void)
{
    return concurrent_queries_on(0.0, false);
}

// Cells of a sixth of the pair radius: a box of 16 cells a point, the ranked layout.
static int test_concurrent_ranked_queries(void)
{
    return concurrent_queries_on(PAIR_RADIUS / 6.0, true);
}

// ---- the spatial hash ----

enum { HN = 3000, HQUERIES = 60, HMAX_HITS = 1024 };
#define HSIDE 60.0
#define HRADIUS 2.0
#define HPAIR_RADIUS 1.0

static uint64_t hmix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15u + (h << 6) + (h >> 2);
    return h * 0x100000001B3u;
}

static uint64_t hhit(nbHit hit)
{
    return hmix(hit.handle.bits, hit.user);
}

// One sweep of every query over the shared hash, reduced to checksums in a fixed order: equal
// digests mean equal answers in the same order.
typedef struct HashDigest {
    uint64_t radius[HQUERIES], radius_f[HQUERIES], box[HQUERIES], knn[HQUERIES], knn_f[HQUERIES];
    uint64_t neighbors[HQUERIES], visit_neighbors[HQUERIES], visit_radius[HQUERIES];
    uint64_t visit_box[HQUERIES];
    uint64_t pairs, visit_pairs, cross, visit_cross, all;
    int64_t count_pairs, count_cross;
    nbStatus bad; // the first status that was not NB_OK, else NB_OK
} HashDigest;

typedef struct HashShared {
    const nbHash *hash;
    double centers[HQUERIES][2];
    nbHandle items[HQUERIES];
    HashDigest want;
} HashShared;

static bool digest_hit(nbHit hit, void *user)
{
    uint64_t *h = (uint64_t *)user;
    *h = hmix(*h, hhit(hit));
    return true;
}

static bool digest_pair(nbHit a, nbHit b, void *user)
{
    uint64_t *h = (uint64_t *)user;
    *h = hmix(hmix(*h, hhit(a)), hhit(b));
    return true;
}

static void note_status(HashDigest *d, nbStatus st)
{
    if (st != NB_OK && d->bad == NB_OK) d->bad = st;
}

static uint64_t hits_digest(const nbHit *hits, int32_t n)
{
    uint64_t h = (uint64_t)n;
    for (int32_t t = 0; t < n; t++) h = hmix(h, hhit(hits[t]));
    return h;
}

static uint64_t nn_digest(const nbHitNeighbor *nn, int32_t n)
{
    uint64_t h = (uint64_t)n;
    for (int32_t t = 0; t < n; t++) {
        uint64_t bits;
        memcpy(&bits, &nn[t].dist2, sizeof bits);
        h = hmix(hmix(h, hhit(nn[t].hit)), bits);
    }
    return h;
}

static uint64_t pairs_digest(const nbHitPair *p, int64_t n)
{
    uint64_t h = (uint64_t)n;
    for (int64_t t = 0; t < n; t++) h = hmix(hmix(h, hhit(p[t].a)), hhit(p[t].b));
    return h;
}

static void hash_sweep(const HashShared *sh, HashDigest *d, nbHit *hits, nbHitPair *pairs,
                       int64_t pair_cap)
{
    memset(d, 0, sizeof *d);
    const nbHash *h = sh->hash;
    const nbFilter f = {0x1u, 0x3u};
    nbHitNeighbor nn[K];
    for (int q = 0; q < HQUERIES; q++) {
        const double *c = sh->centers[q];
        const double lo[2] = {c[0] - 2.5, c[1] - 1.5}, hi[2] = {c[0] + 1.5, c[1] + 2.5};
        int32_t n = -1;
        note_status(d, nb_hash_query_radius(h, c, HRADIUS, NB_FILTER_ALL, hits, HMAX_HITS, &n));
        d->radius[q] = hits_digest(hits, n);
        note_status(d, nb_hash_query_radius(h, c, HRADIUS, f, hits, HMAX_HITS, &n));
        d->radius_f[q] = hits_digest(hits, n);
        const nbBox box = {{lo[0], lo[1], 0.0}, {hi[0], hi[1], 0.0}};
        note_status(d, nb_hash_query_box(h, &box, NB_FILTER_ALL, hits, HMAX_HITS, &n));
        d->box[q] = hits_digest(hits, n);
        note_status(d, nb_hash_knn(h, c, NB_FILTER_ALL, (double)INFINITY, nn, K, &n));
        d->knn[q] = nn_digest(nn, n);
        note_status(d, nb_hash_knn(h, c, f, (double)INFINITY, nn, K, &n));
        d->knn_f[q] = nn_digest(nn, n);
        note_status(d, nb_hash_query_neighbors(h, sh->items[q], HRADIUS, NB_FILTER_ALL, hits,
                                               HMAX_HITS, &n));
        d->neighbors[q] = hits_digest(hits, n);
        note_status(d, nb_hash_visit_neighbors(h, sh->items[q], HRADIUS, f, digest_hit,
                                               &d->visit_neighbors[q]));
        note_status(d, nb_hash_visit_radius(h, c, HRADIUS, f, digest_hit, &d->visit_radius[q]));
        note_status(d, nb_hash_visit_box(h, &box, f, digest_hit, &d->visit_box[q]));
    }
    int64_t np = -1;
    note_status(d, nb_hash_pairs(h, HPAIR_RADIUS, pairs, pair_cap, &np));
    d->pairs = pairs_digest(pairs, np);
    note_status(d, nb_hash_visit_pairs(h, HPAIR_RADIUS, digest_pair, &d->visit_pairs));
    note_status(d, nb_hash_count_pairs(h, HPAIR_RADIUS, &d->count_pairs));
    note_status(d, nb_hash_cross_pairs(h, HRADIUS, 0x1u, 0x2u, pairs, pair_cap, &np));
    d->cross = pairs_digest(pairs, np);
    note_status(d, nb_hash_visit_cross_pairs(h, HRADIUS, 0x1u, 0x2u, digest_pair, &d->visit_cross));
    note_status(d, nb_hash_count_cross_pairs(h, HRADIUS, 0x1u, 0x2u, &d->count_cross));
    note_status(d, nb_hash_visit_all(h, digest_hit, &d->all));
}

typedef struct HashJob {
    const HashShared *sh;
    int failures;
} HashJob;

static void *hash_worker(void *arg)
{
    HashJob *job = (HashJob *)arg;
    nbHit *hits = (nbHit *)malloc(HMAX_HITS * sizeof(nbHit));
    const int64_t cap = 32 * (int64_t)HN;
    nbHitPair *pairs = (nbHitPair *)malloc((size_t)cap * sizeof(nbHitPair));
    HashDigest *d = (HashDigest *)malloc(sizeof(HashDigest));
    if (hits == NULL || pairs == NULL || d == NULL) {
        job->failures++;
    } else {
        for (int rep = 0; rep < 2; rep++) {
            hash_sweep(job->sh, d, hits, pairs, cap);
            if (memcmp(d, &job->sh->want, sizeof *d) != 0) job->failures++;
        }
    }
    free(hits);
    free(pairs);
    free(d);
    return NULL;
}

static int test_concurrent_hash_queries(void)
{
    nbHashDesc desc = {HRADIUS, 2, 0, NULL};
    nbHash *h = NULL;
    NB_CHECK_OK(nb_hash_create(&desc, &h));
    static nbHandle handles[HN];
    for (int i = 0; i < HN; i++) {
        double p[2] = {nbt_range(0, HSIDE), nbt_range(0, HSIDE)};
        if (i % 50 == 0) p[0] = -1e6 + nbt_range(0, 4.0); // a far-away group
        nbFilter f = NB_FILTER_ALL;
        if (i % 3 != 0) {
            f.category = 1u << nbt_int(2);
            f.mask = 1u + (uint32_t)nbt_int(3);
        }
        NB_CHECK_OK(nb_hash_insert(h, p, (uint64_t)i, f, &handles[i]));
    }
    // some churn first, so the queries see moved items, reused slots and emptied cells
    for (int i = 0; i < HN; i += 7) {
        const double p[2] = {nbt_range(0, HSIDE), nbt_range(0, HSIDE)};
        NB_CHECK_OK(nb_hash_move(h, handles[i], p));
    }
    for (int i = 5; i < HN; i += 11) {
        NB_CHECK_OK(nb_hash_remove(h, handles[i]));
        const double p[2] = {nbt_range(0, HSIDE), nbt_range(0, HSIDE)};
        NB_CHECK_OK(nb_hash_insert(h, p, (uint64_t)i, NB_FILTER_ALL, &handles[i]));
    }
    NB_CHECK_OK(nb_hash_validate(h));
    static HashShared sh;
    sh.hash = h;
    for (int q = 0; q < HQUERIES; q++) {
        sh.centers[q][0] = nbt_range(-3, HSIDE + 3);
        sh.centers[q][1] = nbt_range(-3, HSIDE + 3);
        sh.items[q] = handles[nbt_int(HN)];
    }
    const int64_t cap = 32 * (int64_t)HN;
    nbHit *hits = (nbHit *)malloc(HMAX_HITS * sizeof(nbHit));
    nbHitPair *pairs = (nbHitPair *)malloc((size_t)cap * sizeof(nbHitPair));
    NB_CHECK(hits != NULL && pairs != NULL);
    hash_sweep(&sh, &sh.want, hits, pairs, cap);
    NB_CHECK_OK(sh.want.bad);
    // the answers are not trivial: pairs and cross pairs found, their counts agree
    int64_t np = -1;
    NB_CHECK_OK(nb_hash_pairs(h, HPAIR_RADIUS, pairs, cap, &np));
    NB_CHECK(np > 0 && np == sh.want.count_pairs);
    NB_CHECK_OK(nb_hash_cross_pairs(h, HRADIUS, 0x1u, 0x2u, pairs, cap, &np));
    NB_CHECK(np > 0 && np == sh.want.count_cross);
    free(hits);
    free(pairs);
    pthread_t tid[THREADS];
    HashJob jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t].sh = &sh;
        jobs[t].failures = 0;
        NB_CHECK(pthread_create(&tid[t], NULL, hash_worker, &jobs[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++) {
        NB_CHECK(pthread_join(tid[t], NULL) == 0);
        NB_CHECK(jobs[t].failures == 0);
    }
    NB_CHECK_OK(nb_hash_validate(h));
    nb_hash_destroy(h);
    return 0;
}

// ---- the tile grid (include/nearby/tiles.h) ----
// Several threads run every tiles query (radius by group, nearest with exclude and limit, knn,
// pairs between groups, waypoints within / nearest / k nearest, neighbour tiles, visit_tile) on
// one grid with entities inside and outside its world; each thread's digest of the answers, in
// order, must equal the single-threaded one.

enum { TN = 4000, TW = 500, TQUERIES = 150, TMAX_HITS = 4096 };
#define TSIDE 60.0

typedef struct TilesShared {
    const nbTiles *tiles;
    double centers[TQUERIES][2];
    nbHandle askers[TQUERIES];
    uint64_t want;
} TilesShared;

static bool tdigest_hit(nbHit hit, void *user)
{
    uint64_t *d = (uint64_t *)user;
    *d = hmix(*d, hit.handle.bits ^ (hit.user << 1));
    return true;
}

static bool tdigest_pair(nbHit a, nbHit b, void *user)
{
    uint64_t *d = (uint64_t *)user;
    *d = hmix(hmix(*d, a.handle.bits), b.handle.bits);
    return true;
}

static bool tdigest_neighbor(nbHit hit, double dist2, void *user)
{
    uint64_t *d = (uint64_t *)user;
    *d = hmix(*d, hit.handle.bits ^ (uint64_t)(dist2 * 16.0));
    return true;
}

static uint64_t tiles_sweep(const TilesShared *sh, nbHit *hits, nbHitNeighbor *nn)
{
    uint64_t d = 1;
    for (int q = 0; q < TQUERIES; q++) {
        const double *c = sh->centers[q];
        const nbFilter f = {q % 5 == 0 ? 2u : 0xFFFFFFFFu,
                            1u << (q % 4) | (q % 3 == 0 ? 0xFu : 0u)};
        const nbFilter others = {f.category, ~f.mask};
        int32_t found = 0;
        nbStatus st = nb_tiles_query_radius(sh->tiles, c, 3.0, f, hits, TMAX_HITS, &found);
        d = hmix(hmix(d, (uint64_t)st), (uint64_t)found);
        for (int32_t i = 0; i < found; i++) d = hmix(d, hits[i].handle.bits);
        if (sh->askers[q].bits != 0) {
            st = nb_tiles_query_neighbors(sh->tiles, sh->askers[q], 2.0, others, hits, TMAX_HITS,
                                          &found);
            d = hmix(hmix(d, (uint64_t)st), (uint64_t)found);
            for (int32_t i = 0; i < found; i++) d = hmix(d, hits[i].handle.bits);
        }
        st = nb_tiles_knn(sh->tiles, c, others, q % 2 ? 5.0 : (double)INFINITY, nn, 1, &found);
        d = hmix(hmix(d, (uint64_t)st), found ? nn[0].hit.handle.bits : 0u);
        st = nb_tiles_knn(sh->tiles, c, f, (double)INFINITY, nn, 8, &found);
        d = hmix(d, (uint64_t)st);
        for (int32_t i = 0; i < found; i++) d = hmix(d, nn[i].hit.handle.bits);
        if (q % 10 == 0) // a heap above NB_KNN_STACK: from the allocator, one per call
            st = nb_tiles_visit_knn(sh->tiles, c, f, 20.0, NB_KNN_STACK + 40, tdigest_neighbor, &d);
        d = hmix(d, (uint64_t)st);
        st = nb_tiles_query_waypoints(sh->tiles, c, 6.0, hits, TMAX_HITS, &found);
        d = hmix(hmix(d, (uint64_t)st), (uint64_t)found);
        for (int32_t i = 0; i < found; i++) d = hmix(d, hits[i].user);
        st = nb_tiles_visit_knn_waypoints(sh->tiles, c, (double)INFINITY, 1, tdigest_neighbor, &d);
        d = hmix(d, (uint64_t)st);
        st = nb_tiles_knn_waypoints(sh->tiles, c, (double)INFINITY, nn, 3, &found);
        for (int32_t i = 0; i < found; i++) d = hmix(d, nn[i].hit.user);
        int32_t tile = -1, tl[64];
        st = nb_tiles_tile_of(sh->tiles, c, &tile);
        d = hmix(d, (uint64_t)tile);
        st = nb_tiles_neighbor_tiles(sh->tiles, tile, 2, tl, 64, &found);
        for (int32_t i = 0; i < found; i++) d = hmix(d, (uint64_t)tl[i]);
        st = nb_tiles_visit_tile(sh->tiles, tile, f, tdigest_hit, &d);
        st = nb_tiles_visit_radius(sh->tiles, c, 2.0, NB_FILTER_ALL, tdigest_hit, &d);
        d = hmix(d, (uint64_t)st);
    }
    int64_t count = 0;
    nbStatus st = nb_tiles_count_cross_pairs(sh->tiles, 1.0, 1u, 6u, &count);
    d = hmix(hmix(d, (uint64_t)st), (uint64_t)count);
    st = nb_tiles_visit_pairs(sh->tiles, 0.8, tdigest_pair, &d);
    return hmix(d, (uint64_t)st);
}

typedef struct TilesJob {
    const TilesShared *sh;
    int failures;
} TilesJob;

static void *tiles_worker(void *arg)
{
    TilesJob *job = (TilesJob *)arg;
    nbHit *hits = (nbHit *)malloc(TMAX_HITS * sizeof(nbHit));
    nbHitNeighbor *nn = (nbHitNeighbor *)malloc(16 * sizeof(nbHitNeighbor));
    if (hits == NULL || nn == NULL) job->failures++;
    for (int rep = 0; rep < 2 && hits != NULL && nn != NULL; rep++)
        if (tiles_sweep(job->sh, hits, nn) != job->sh->want) job->failures++;
    free(hits);
    free(nn);
    return NULL;
}

static int test_concurrent_tiles_queries(void)
{
    nbTilesDesc desc = {0};
    desc.size[0] = desc.size[1] = TSIDE;
    desc.tile_count[0] = 20;
    desc.tile_count[1] = 15;
    desc.groups = 4;
    nbTiles *t = NULL;
    NB_CHECK_OK(nb_tiles_create(&desc, &t));
    static nbHandle handles[TN];
    for (int i = 0; i < TN; i++) {
        double p[2] = {nbt_range(0, TSIDE), nbt_range(0, TSIDE)};
        if (i % 40 == 0) p[0] = -500.0 + nbt_range(0, 4.0); // outside the world
        // every fifth entity finds only groups 1 and 3: the per-entity masks are read
        const nbFilter f = {1u << (i % 4), i % 5 == 0 ? 0xAu : 0xFFFFFFFFu};
        NB_CHECK_OK(nb_tiles_insert(t, p, (uint64_t)i, f, &handles[i]));
    }
    for (int i = 0; i < TN; i += 7) { // churn: moved, removed and reinserted entities
        const double p[2] = {nbt_range(-5, TSIDE + 5), nbt_range(0, TSIDE)};
        NB_CHECK_OK(nb_tiles_move(t, handles[i], p));
    }
    for (int i = 5; i < TN; i += 11) {
        NB_CHECK_OK(nb_tiles_remove(t, handles[i]));
        const double p[2] = {nbt_range(0, TSIDE), nbt_range(0, TSIDE)};
        const nbFilter f = {1u << (i % 4), 0xFFFFFFFFu};
        NB_CHECK_OK(nb_tiles_insert(t, p, (uint64_t)i, f, &handles[i]));
    }
    static double wp[TW][2];
    for (int w = 0; w < TW; w++) {
        wp[w][0] = nbt_range(-10, TSIDE + 10);
        wp[w][1] = nbt_range(0, TSIDE);
    }
    NB_CHECK_OK(nb_tiles_add_waypoints(t, &wp[0][0], NULL, TW));
    NB_CHECK_OK(nb_tiles_validate(t));
    static TilesShared sh;
    sh.tiles = t;
    for (int q = 0; q < TQUERIES; q++) {
        sh.centers[q][0] = nbt_range(-20, TSIDE + 20);
        sh.centers[q][1] = nbt_range(-3, TSIDE + 3);
        sh.askers[q] = q % 3 ? handles[nbt_int(TN)] : NB_HANDLE_NULL;
    }
    nbHit *hits = (nbHit *)malloc(TMAX_HITS * sizeof(nbHit));
    nbHitNeighbor nn[16];
    NB_CHECK(hits != NULL);
    sh.want = tiles_sweep(&sh, hits, nn);
    int64_t np = 0;
    NB_CHECK_OK(nb_tiles_count_cross_pairs(t, 1.0, 1u, 6u, &np));
    NB_CHECK(np > 0); // the answers are not trivial
    free(hits);
    pthread_t tid[THREADS];
    TilesJob jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i].sh = &sh;
        jobs[i].failures = 0;
        NB_CHECK(pthread_create(&tid[i], NULL, tiles_worker, &jobs[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        NB_CHECK(pthread_join(tid[i], NULL) == 0);
        NB_CHECK(jobs[i].failures == 0);
    }
    NB_CHECK_OK(nb_tiles_validate(t));
    nb_tiles_destroy(t);
    return 0;
}

// ---- the quadtree of rectangles ----
// One tree (mixed sizes, filter bits, churn, one rectangle in the outside list); each thread
// runs every query (window, point, radius, kNN, rays, pairs, cross pairs, visit_all, filtered
// and not) and reduces the answers, in order, to one digest that must equal the
// single-threaded one.

enum { QN = 3000, QQ = 60 };
#define QSIDE 100.0

typedef struct QtShared {
    const nbQuadtree *t;
    double at[QQ][2];
    uint64_t want;
} QtShared;

static uint64_t qt_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15u + (h << 6) + (h >> 2);
    return h;
}

static bool qt_digest_hit(nbHit hit, void *user)
{
    uint64_t *d = (uint64_t *)user;
    *d = qt_mix(*d, hit.handle.bits ^ hit.user);
    return true;
}

static bool qt_digest_pair(nbHit a, nbHit b, void *user)
{
    uint64_t *d = (uint64_t *)user;
    *d = qt_mix(*d, a.handle.bits * 31u + b.handle.bits);
    return true;
}

static uint64_t qt_sweep(const QtShared *sh, nbHit *hits, nbHitPair *pairs)
{
    const nbQuadtree *t = sh->t;
    uint64_t d = 1;
    const nbFilter f = {1u, 3u};
    for (int q = 0; q < QQ; q++) {
        const double *c = sh->at[q];
        const nbRect w = {{c[0] - 4.0, c[1] - 3.0}, {c[0] + 4.0, c[1] + 3.0}};
        int32_t n = 0;
        d = qt_mix(
            d, (uint64_t)nb_quadtree_query_box(t, NBT_RECT_BOX(&w), NB_FILTER_ALL, hits, QN, &n));
        for (int32_t i = 0; i < n; i++) qt_digest_hit(hits[i], &d);
        d = qt_mix(d, (uint64_t)nb_quadtree_visit_box(t, NBT_RECT_BOX(&w), f, qt_digest_hit, &d));
        d = qt_mix(d, (uint64_t)nb_quadtree_query_point(t, c, NB_FILTER_ALL, hits, QN, &n));
        for (int32_t i = 0; i < n; i++) qt_digest_hit(hits[i], &d);
        d = qt_mix(d, (uint64_t)nb_quadtree_visit_radius(t, c, 5.0, f, qt_digest_hit, &d));
        nbHitNeighbor nn[8];
        d = qt_mix(d, (uint64_t)nb_quadtree_knn(t, c, NB_FILTER_ALL, (double)INFINITY, nn, 8, &n));
        for (int32_t i = 0; i < n; i++)
            d = qt_mix(d, nn[i].hit.handle.bits ^ (uint64_t)nn[i].dist2);
        const double dir[2] = {1.0, (double)(q % 5) - 2.0};
        nbRayHit rays[16];
        d = qt_mix(d, (uint64_t)nb_quadtree_raycast(t, c, dir, 50.0, f, rays, &n));
        if (n > 0) d = qt_mix(d, rays[0].hit.handle.bits);
        nb_quadtree_raycast_all(t, c, dir, 30.0, NB_FILTER_ALL, rays, 16, &n);
        for (int32_t i = 0; i < (n < 16 ? n : 16); i++) d = qt_mix(d, rays[i].hit.handle.bits);
    }
    int64_t np = 0;
    d = qt_mix(d, (uint64_t)nb_quadtree_pairs(t, pairs, 40 * (int64_t)QN, &np));
    for (int64_t i = 0; i < np; i++) qt_digest_pair(pairs[i].a, pairs[i].b, &d);
    d = qt_mix(d, (uint64_t)nb_quadtree_visit_cross_pairs(t, 1u, 2u, qt_digest_pair, &d));
    nb_quadtree_count_pairs(t, &np);
    d = qt_mix(d, (uint64_t)np);
    d = qt_mix(d, (uint64_t)nb_quadtree_visit_all(t, qt_digest_hit, &d));
    return d;
}

typedef struct QtJob {
    const QtShared *sh;
    int failures;
} QtJob;

static void *qt_worker(void *arg)
{
    QtJob *job = (QtJob *)arg;
    nbHit *hits = (nbHit *)malloc(QN * sizeof(nbHit));
    nbHitPair *pairs = (nbHitPair *)malloc(40 * (size_t)QN * sizeof(nbHitPair));
    if (hits == NULL || pairs == NULL)
        job->failures++;
    else
        for (int rep = 0; rep < 2; rep++)
            if (qt_sweep(job->sh, hits, pairs) != job->sh->want) job->failures++;
    free(hits);
    free(pairs);
    return NULL;
}

static int test_concurrent_quadtree_queries(void)
{
    nbQuadtreeDesc desc = {0};
    desc.bounds = (nbRect){{0.0, 0.0}, {QSIDE, QSIDE}};
    nbQuadtree *t = NULL;
    NB_CHECK_OK(nb_quadtree_create(&desc, &t));
    static nbHandle handles[QN];
    for (int i = 0; i < QN; i++) {
        const double x = nbt_range(0, QSIDE), y = nbt_range(0, QSIDE);
        const double w = 0.1 * pow(100.0, nbt_unit()), h = 0.1 * pow(100.0, nbt_unit());
        nbRect r = {{x, y}, {x + w, y + h}};
        if (i == 17) r = (nbRect){{1e300, 0.0}, {1e300, 1.0}}; // the outside list
        nbFilter f = NB_FILTER_ALL;
        if (i % 3 != 0) {
            f.category = 1u << nbt_int(2);
            f.mask = 1u + (uint32_t)nbt_int(3);
        }
        NB_CHECK_OK(nb_quadtree_insert(t, &r, (uint64_t)i, f, &handles[i]));
    }
    for (int i = 0; i < QN; i += 7) { // churn: moves and reused slots
        const double x = nbt_range(0, QSIDE), y = nbt_range(0, QSIDE);
        const nbRect r = {{x, y}, {x + 1.0, y + 2.0}};
        NB_CHECK_OK(nb_quadtree_move(t, handles[i], &r));
    }
    for (int i = 5; i < QN; i += 11) {
        NB_CHECK_OK(nb_quadtree_remove(t, handles[i]));
        const nbRect r = {{50.0, 50.0}, {50.0 + i * 0.001, 51.0}};
        NB_CHECK_OK(nb_quadtree_insert(t, &r, (uint64_t)i, NB_FILTER_ALL, &handles[i]));
    }
    NB_CHECK_OK(nb_quadtree_validate(t));
    static QtShared sh;
    sh.t = t;
    for (int q = 0; q < QQ; q++) {
        sh.at[q][0] = nbt_range(-3, QSIDE + 3);
        sh.at[q][1] = nbt_range(-3, QSIDE + 3);
    }
    nbHit *hits = (nbHit *)malloc(QN * sizeof(nbHit));
    nbHitPair *pairs = (nbHitPair *)malloc(40 * (size_t)QN * sizeof(nbHitPair));
    NB_CHECK(hits != NULL && pairs != NULL);
    sh.want = qt_sweep(&sh, hits, pairs);
    int64_t np = 0;
    NB_CHECK_OK(nb_quadtree_count_pairs(t, &np));
    NB_CHECK(np > 0);
    free(hits);
    free(pairs);
    pthread_t tid[THREADS];
    QtJob jobs[THREADS];
    for (int k = 0; k < THREADS; k++) {
        jobs[k].sh = &sh;
        jobs[k].failures = 0;
        NB_CHECK(pthread_create(&tid[k], NULL, qt_worker, &jobs[k]) == 0);
    }
    for (int k = 0; k < THREADS; k++) {
        NB_CHECK(pthread_join(tid[k], NULL) == 0);
        NB_CHECK(jobs[k].failures == 0);
    }
    NB_CHECK_OK(nb_quadtree_validate(t));
    nb_quadtree_destroy(t);
    return 0;
}

// ---- a periodic box (nbGridDesc.period): the same threads on a grid that wraps ----

static int test_concurrent_periodic(void)
{
    const double period[3] = {SIDE, SIDE, 0.0};
    nboSet s = nbo_set_new(N, 2);
    for (int i = 0; i < 2 * N; i++) {
        const double x = nbt_range(0, SIDE);
        s.p[i] = x < SIDE ? x : 0.0;
    }
    nbGridDesc desc = {0};
    desc.period[0] = desc.period[1] = SIDE;
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints view = nbo_points(&s);
    NB_CHECK_OK(nb_grid_build(g, &view, PAIR_RADIUS));
    static Shared sh;
    sh.grid = g;
    for (int q = 0; q < QUERIES; q++) {
        sh.centers[q][0] = q % 4 == 0 ? 0.0 : nbt_range(0, SIDE) * (1.0 - 0x1p-52);
        sh.centers[q][1] = q % 4 == 1 ? nextafter(SIDE, 0.0) : nbt_range(0, SIDE) * (1.0 - 0x1p-52);
        int32_t found = -1, want_n = 0;
        NB_CHECK_OK(nb_grid_query_radius(g, sh.centers[q], RADIUS, NB_FILTER_ALL, sh.want_radius[q],
                                         MAX_WITHIN, &found));
        int32_t *want = nbo_wrap_radius(&s, sh.centers[q], RADIUS, period, &want_n);
        int32_t sorted[MAX_WITHIN];
        NB_CHECK(found == want_n);
        memcpy(sorted, sh.want_radius[q], (size_t)found * sizeof(int32_t));
        nbo_sort_indices(sorted, found);
        NB_CHECK(nbo_same_indices(sorted, found, want, want_n));
        free(want);
        sh.want_radius_n[q] = found;
        NB_CHECK_OK(nb_grid_knn(g, sh.centers[q], NB_FILTER_ALL, (double)INFINITY, sh.want_knn[q],
                                K, &found));
        nbNeighbor *want_nn = nbo_wrap_knn(&s, sh.centers[q], K, period, &want_n);
        NB_CHECK(want_n == K && nbo_same_neighbors(sh.want_knn[q], found, want_nn, want_n));
        free(want_nn);
    }
    int64_t want_pairs = 0;
    nbPair *all = nbo_wrap_pairs(&s, PAIR_RADIUS, period, &want_pairs);
    uint64_t want_sum = 0;
    for (int64_t t = 0; t < want_pairs; t++) want_sum += pair_key(all[t].i, all[t].j);
    free(all);
    NB_CHECK(want_pairs > 0);
    pthread_t tid[THREADS];
    Job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t] = (Job){&sh, t, 0, 0, 0};
        NB_CHECK(pthread_create(&tid[t], NULL, worker, &jobs[t]) == 0);
    }
    int64_t pairs = 0;
    uint64_t sum = 0;
    for (int t = 0; t < THREADS; t++) {
        NB_CHECK(pthread_join(tid[t], NULL) == 0);
        NB_CHECK(jobs[t].failures == 0);
        pairs += jobs[t].pairs;
        sum += jobs[t].pair_sum;
    }
    NB_CHECK(pairs == want_pairs && sum == want_sum);
    NB_CHECK_OK(nb_grid_validate(g));
    nb_grid_destroy(g);
    nbo_set_free(&s);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"concurrent_queries", test_concurrent_queries},
        {"concurrent_ranked_queries", test_concurrent_ranked_queries},
        {"concurrent_hash_queries", test_concurrent_hash_queries},
        {"concurrent_periodic", test_concurrent_periodic},
        {"concurrent_quadtree_queries", test_concurrent_quadtree_queries},
        {"concurrent_tiles_queries", test_concurrent_tiles_queries},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
