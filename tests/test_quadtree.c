// SPDX-License-Identifier: MIT
// The quadtree of rectangles against brute force: random operation sequences (insert, move,
// teleport, resize, remove, set, clear) over rectangles of mixed sizes (0.1 to 10, a few spanning
// the world, zero-size ones, duplicates, and some far outside the root), with every query
// compared to a brute-force model after each step: window, point, radius, kNN, ray (first and
// all), pairs and cross pairs, with filters. Both placements (loose and tight) and several
// split thresholds. Then a failing-allocator sweep over every call that can allocate, and zero
// allocations for a steady moving workload once reserved.
#include <nearby/quadtree.h>

#include "nb_oracle.h"
#include "nb_test.h"

#include <float.h>
#include <math.h>

enum { MAXN = 600, QCAP = 1024 };

typedef struct Model {
    nbRect r[MAXN];
    nbHandle h[MAXN];
    uint64_t user[MAXN];
    nbFilter f[MAXN];
    bool live[MAXN];
    int32_t n; // entries used (live or not)
} Model;

static Model M;

static uint32_t slot_of(nbHandle h)
{
    return (uint32_t)h.bits;
}

// The tree's pair count against brute force over rectangles [0, n), all in it, no filter.
static int check_pairs(const nbQuadtree *qt, const nbRect *r, int32_t n)
{
    int64_t pairs = -1, want = 0;
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = i + 1; j < n; j++) want += nbo_rect_touch(&r[i], &r[j]);
    NB_CHECK_OK(nb_quadtree_count_pairs(qt, &pairs));
    NB_CHECK(pairs == want);
    return 0;
}

// A point query at p against brute force over rectangles [0, n) (hits: room for n).
static int check_point(const nbQuadtree *qt, const nbRect *r, int32_t n, const double p[2],
                       nbHit *hits)
{
    const nbRect pw = {{p[0], p[1]}, {p[0], p[1]}};
    int32_t want = 0, found = -1;
    for (int32_t k = 0; k < n; k++) want += nbo_rect_touch(&r[k], &pw);
    NB_CHECK_OK(nb_quadtree_query_point(qt, p, NB_FILTER_ALL, hits, n, &found));
    NB_CHECK(found == want);
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

// Sorted handle bits of hits.
static void sort_hits(const nbHit *hits, int32_t n, uint64_t *keys)
{
    for (int32_t i = 0; i < n; i++) keys[i] = hits[i].handle.bits;
    qsort(keys, (size_t)n, sizeof *keys, cmp_u64);
}

// A rectangle centred uniformly in [-world, world]^2, each side log-uniform in [0.1, 0.1 spread].
static nbRect sized_rect(double world, double spread)
{
    nbRect r;
    const double c[2] = {nbt_range(-world, world), nbt_range(-world, world)};
    for (int a = 0; a < 2; a++) {
        const double side = 0.1 * pow(spread, nbt_unit());
        r.min[a] = c[a] - 0.5 * side;
        r.max[a] = c[a] + 0.5 * side;
    }
    return r;
}

// A random rectangle of the workload's mix, around a random centre in [-world, world].
static nbRect random_rect(double world)
{
    nbRect r;
    int kind = nbt_int(100);
    double c[2] = {nbt_range(-world, world), nbt_range(-world, world)};
    double w[2];
    for (int a = 0; a < 2; a++) w[a] = 0.1 * pow(100.0, nbt_unit());
    if (kind < 4) { // spans the world
        w[0] = nbt_range(2.0, 3.0) * world;
        w[1] = nbt_range(0.0, 3.0) * world;
    } else if (kind < 10) { // zero-size: a point or a segment
        w[0] = 0.0;
        if (kind < 7) w[1] = 0.0;
    } else if (kind < 14 && M.n > 0) { // a duplicate of an existing one
        int32_t j = nbt_int(M.n);
        if (M.live[j]) return M.r[j];
    } else if (kind < 17) { // outside the root, sometimes absurdly far
        double far = kind == 16 ? 1e30 : 1e5;
        c[0] = far * (nbt_unit() < 0.5 ? -1.0 : 1.0);
    } else if (kind < 20) { // on the root's middle lines
        c[0] = 0.0;
    }
    for (int a = 0; a < 2; a++) {
        r.min[a] = c[a] - 0.5 * w[a];
        r.max[a] = c[a] + 0.5 * w[a];
    }
    return r;
}

static nbFilter random_filter(void)
{
    static const uint32_t bits[] = {0xFFFFFFFFu, 1u, 2u, 3u, 0u, 4u};
    nbFilter f = {bits[nbt_int(5)], bits[nbt_int(6)]};
    if (nbt_int(3) == 0) f = NB_FILTER_ALL;
    return f;
}

typedef struct PairCheck {
    uint64_t *keys;
    int64_t n, cap;
} PairCheck;

// nb_quadtree_visit_knn's neighbours (or nb_quadtree_visit_raycast_all's hits, t for dist2)
// against the buffer form's, one by one; with stop > 0 the visitor stops after that many.
typedef struct NnSeen {
    const nbHitNeighbor *want;
    int32_t cap, n, wrong, stop;
} NnSeen;

static bool seen_nn(nbHit hit, double dist2, void *user)
{
    NnSeen *s = (NnSeen *)user;
    if (s->n >= s->cap || s->want[s->n].hit.handle.bits != hit.handle.bits ||
        s->want[s->n].dist2 != dist2)
        s->wrong++;
    s->n++;
    return s->stop == 0 || s->n < s->stop;
}

static bool count_visit(nbHit hit, void *user)
{
    (void)hit;
    ++*(int64_t *)user;
    return true;
}

static uint64_t pair_key(nbHit a, nbHit b)
{
    return ((uint64_t)(uint32_t)a.handle.bits << 32) | (uint32_t)b.handle.bits;
}

static int check_queries(const nbQuadtree *qt, double world)
{
    static nbHit hits[QCAP];
    static uint64_t got[QCAP], want[QCAP];
    int32_t found = 0;
    for (int rep = 0; rep < 4; rep++) {
        nbFilter qf = rep == 0 ? NB_FILTER_ALL : random_filter();
        // Window (sometimes zero-size, sometimes infinite).
        nbRect w = random_rect(world);
        if (rep == 3) {
            w.min[0] = -(double)INFINITY;
            w.max[1] = (double)INFINITY;
        }
        NB_CHECK_OK(nb_quadtree_query_box(qt, NBT_RECT_BOX(&w), qf, hits, QCAP, &found));
        int32_t nw = 0;
        for (int32_t i = 0; i < M.n; i++)
            if (M.live[i] && nbo_rect_touch(&M.r[i], &w) && nbo_item_passes(qf, M.f[i]))
                want[nw++] = M.h[i].bits;
        NB_CHECK(found == nw);
        sort_hits(hits, found, got);
        qsort(want, (size_t)nw, sizeof *want, cmp_u64);
        NB_CHECK(memcmp(got, want, (size_t)nw * sizeof *got) == 0);
        for (int32_t i = 0; i < found; i++) {
            nbRect r;
            uint64_t u;
            NB_CHECK_OK(nb_quadtree_get(qt, hits[i].handle, &r, &u, NULL));
            NB_CHECK(u == hits[i].user);
        }
        // Point: a live rectangle's corner sometimes, to hit edges exactly.
        double p[2] = {nbt_range(-world, world), nbt_range(-world, world)};
        if (M.n > 0 && nbt_int(2) == 0) {
            int32_t j = nbt_int(M.n);
            p[0] = M.r[j].max[0];
            p[1] = M.r[j].min[1];
        }
        int64_t visited = 0; // the callback form finds as many
        NB_CHECK_OK(nb_quadtree_visit_point(qt, p, qf, count_visit, &visited));
        NB_CHECK_OK(nb_quadtree_query_point(qt, p, qf, hits, QCAP, &found));
        NB_CHECK(visited == found);
        nbRect pr = {{p[0], p[1]}, {p[0], p[1]}};
        nw = 0;
        for (int32_t i = 0; i < M.n; i++)
            if (M.live[i] && nbo_rect_touch(&M.r[i], &pr) && nbo_item_passes(qf, M.f[i]))
                want[nw++] = M.h[i].bits;
        NB_CHECK(found == nw);
        sort_hits(hits, found, got);
        qsort(want, (size_t)nw, sizeof *want, cmp_u64);
        NB_CHECK(memcmp(got, want, (size_t)nw * sizeof *got) == 0);
        // Radius.
        double rad = nbt_int(4) == 0 ? 0.0 : nbt_range(0.0, 0.2 * world);
        NB_CHECK_OK(nb_quadtree_query_radius(qt, p, rad, qf, hits, QCAP, &found));
        nw = 0;
        for (int32_t i = 0; i < M.n; i++)
            if (M.live[i] && nbo_rect_d2(p, &M.r[i]) <= rad * rad && nbo_item_passes(qf, M.f[i]))
                want[nw++] = M.h[i].bits;
        NB_CHECK(found == nw);
        sort_hits(hits, found, got);
        qsort(want, (size_t)nw, sizeof *want, cmp_u64);
        NB_CHECK(memcmp(got, want, (size_t)nw * sizeof *got) == 0);
        // kNN with a max distance: nearest first, ties by lower slot.
        int32_t k = 1 + nbt_int(12);
        double maxd = nbt_int(3) == 0 ? (double)INFINITY : nbt_range(0.0, world);
        nbHitNeighbor nn[16];
        NB_CHECK_OK(nb_quadtree_knn(qt, p, qf, maxd, nn, k, &found));
        typedef struct {
            double d;
            uint32_t s;
            uint64_t bits;
        } Cand;
        static Cand cand[MAXN];
        int32_t nc = 0;
        for (int32_t i = 0; i < M.n; i++) {
            if (!M.live[i] || !nbo_item_passes(qf, M.f[i])) continue;
            double d = nbo_rect_d2(p, &M.r[i]);
            if (d <= maxd * maxd) cand[nc++] = (Cand){d, slot_of(M.h[i]), M.h[i].bits};
        }
        for (int32_t i = 1; i < nc; i++) // insertion sort by (d, slot)
            for (int32_t j = i;
                 j > 0 && (cand[j].d < cand[j - 1].d ||
                           (cand[j].d == cand[j - 1].d && cand[j].s < cand[j - 1].s));
                 j--) {
                Cand t = cand[j];
                cand[j] = cand[j - 1];
                cand[j - 1] = t;
            }
        NB_CHECK(found == (nc < k ? nc : k));
        for (int32_t i = 0; i < found; i++) {
            NB_CHECK(nn[i].hit.handle.bits == cand[i].bits);
            NB_CHECK(nn[i].dist2 == cand[i].d);
        }
        // The callback form: the same neighbours in the same order.
        NnSeen seen = {nn, found, 0, 0, 0};
        NB_CHECK_OK(nb_quadtree_visit_knn(qt, p, qf, maxd, k, seen_nn, &seen));
        NB_CHECK(seen.n == found && seen.wrong == 0);
        // Rays: the first hit and all hits sorted.
        double dir[2] = {nbt_gauss(), nbt_gauss()};
        if (rep == 1) dir[1] = 0.0;
        if (dir[0] == 0.0 && dir[1] == 0.0) dir[0] = 1.0;
        double tmax = nbt_int(3) == 0 ? (double)INFINITY : nbt_range(0.0, 2.0 * world);
        nc = 0;
        for (int32_t i = 0; i < M.n; i++) {
            if (!M.live[i] || !nbo_item_passes(qf, M.f[i])) continue;
            double t = nbo_ray_enter(p, dir, tmax, &M.r[i]);
            if (t >= 0.0) cand[nc++] = (Cand){t, slot_of(M.h[i]), M.h[i].bits};
        }
        for (int32_t i = 1; i < nc; i++)
            for (int32_t j = i;
                 j > 0 && (cand[j].d < cand[j - 1].d ||
                           (cand[j].d == cand[j - 1].d && cand[j].s < cand[j - 1].s));
                 j--) {
                Cand t = cand[j];
                cand[j] = cand[j - 1];
                cand[j - 1] = t;
            }
        nbRayHit first;
        NB_CHECK_OK(nb_quadtree_raycast(qt, p, dir, tmax, qf, &first, &found));
        NB_CHECK(found == (nc > 0 ? 1 : 0));
        if (nc > 0) NB_CHECK(first.hit.handle.bits == cand[0].bits && first.t == cand[0].d);
        static nbRayHit rays[QCAP];
        NB_CHECK_OK(nb_quadtree_raycast_all(qt, p, dir, tmax, qf, rays, QCAP, &found));
        NB_CHECK(found == nc);
        for (int32_t i = 0; i < nc; i++)
            NB_CHECK(rays[i].hit.handle.bits == cand[i].bits && rays[i].t == cand[i].d);
        // The callback form: the same hits in the same order; a visitor that stops after one.
        static nbHitNeighbor as_nn[QCAP];
        for (int32_t i = 0; i < nc; i++) as_nn[i] = (nbHitNeighbor){rays[i].hit, rays[i].t};
        NnSeen seen_rays = {as_nn, nc, 0, 0, 0};
        NB_CHECK_OK(nb_quadtree_visit_raycast_all(qt, p, dir, tmax, qf, seen_nn, &seen_rays));
        NB_CHECK(seen_rays.n == nc && seen_rays.wrong == 0);
        seen_rays = (NnSeen){as_nn, nc, 0, 0, 1};
        NB_CHECK_OK(nb_quadtree_visit_raycast_all(qt, p, dir, tmax, qf, seen_nn, &seen_rays));
        NB_CHECK(seen_rays.n == (nc > 0 ? 1 : 0) && seen_rays.wrong == 0);
        if (nc > 2) { // a short buffer keeps the nearest
            NB_CHECK_STATUS(nb_quadtree_raycast_all(qt, p, dir, tmax, qf, rays, 2, &found),
                            NB_ERR_BUFFER_TOO_SMALL);
            NB_CHECK(found == nc && rays[0].hit.handle.bits == cand[0].bits &&
                     rays[1].hit.handle.bits == cand[1].bits);
        }
    }
    // Pairs, each once, lower slot first, with the pair rule.
    static nbHitPair pairs[MAXN * 40];
    static uint64_t pk[MAXN * 40], wk[MAXN * 40];
    int64_t np = 0, nw = 0;
    NB_CHECK_OK(nb_quadtree_pairs(qt, pairs, MAXN * 40, &np));
    for (int32_t i = 0; i < M.n; i++)
        for (int32_t j = 0; j < M.n; j++) {
            if (i == j || !M.live[i] || !M.live[j] || slot_of(M.h[i]) > slot_of(M.h[j])) continue;
            if (!nbo_rect_touch(&M.r[i], &M.r[j])) continue;
            if ((M.f[i].category & M.f[j].mask) == 0 || (M.f[j].category & M.f[i].mask) == 0)
                continue;
            wk[nw++] = ((uint64_t)slot_of(M.h[i]) << 32) | slot_of(M.h[j]);
        }
    NB_CHECK(np == nw);
    for (int64_t i = 0; i < np; i++) {
        NB_CHECK(slot_of(pairs[i].a.handle) < slot_of(pairs[i].b.handle));
        pk[i] = pair_key(pairs[i].a, pairs[i].b);
    }
    qsort(pk, (size_t)np, sizeof *pk, cmp_u64);
    qsort(wk, (size_t)nw, sizeof *wk, cmp_u64);
    NB_CHECK(memcmp(pk, wk, (size_t)nw * sizeof *pk) == 0);
    int64_t counted = -1;
    NB_CHECK_OK(nb_quadtree_count_pairs(qt, &counted));
    NB_CHECK(counted == np);
    // Cross pairs between masks 1 and 2 (roles kept, an item in both sets meets both ways).
    NB_CHECK_OK(nb_quadtree_cross_pairs(qt, 1u, 2u, pairs, MAXN * 40, &np));
    nw = 0;
    for (int32_t i = 0; i < M.n; i++)
        for (int32_t j = 0; j < M.n; j++) {
            if (i == j || !M.live[i] || !M.live[j] || !nbo_rect_touch(&M.r[i], &M.r[j])) continue;
            if ((M.f[i].category & 1u) == 0 || M.f[i].mask == 0) continue;
            if ((M.f[j].category & 2u) == 0 || M.f[j].mask == 0) continue;
            wk[nw++] = ((uint64_t)slot_of(M.h[i]) << 32) | slot_of(M.h[j]);
        }
    NB_CHECK(np == nw);
    for (int64_t i = 0; i < np; i++) pk[i] = pair_key(pairs[i].a, pairs[i].b);
    qsort(pk, (size_t)np, sizeof *pk, cmp_u64);
    qsort(wk, (size_t)nw, sizeof *wk, cmp_u64);
    NB_CHECK(memcmp(pk, wk, (size_t)nw * sizeof *pk) == 0);
    NB_CHECK_OK(nb_quadtree_count_cross_pairs(qt, 1u, 2u, &counted));
    NB_CHECK(counted == np);
    return 0;
}

static bool count_one(nbHit hit, void *user)
{
    (void)hit;
    ++*(int32_t *)user;
    return true;
}

// One random operation sequence against the model.
static int run_sequence(int placement, int32_t threshold, int32_t steps)
{
    memset(&M, 0, sizeof M);
    const double world = 100.0;
    nbQuadtreeDesc desc = {0};
    desc.placement = placement;
    desc.split_threshold = threshold;
    desc.max_depth = 10;
    desc.bounds = (nbRect){{-world, -world}, {world, world}};
    nbQuadtree *qt = NULL;
    NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
    for (int32_t step = 0; step < steps; step++) {
        int op = nbt_int(100);
        int32_t j = M.n > 0 ? nbt_int(M.n) : 0;
        if (op < 45 && M.n < MAXN) {
            nbRect r = random_rect(world);
            nbFilter f = nbt_int(4) == 0 ? random_filter() : NB_FILTER_ALL;
            uint64_t u = nbt_u64();
            NB_CHECK_OK(nb_quadtree_insert(qt, &r, u, f, &M.h[M.n]));
            M.r[M.n] = r;
            M.user[M.n] = u;
            M.f[M.n] = f;
            M.live[M.n++] = true;
        } else if (op < 75 && M.n > 0 && M.live[j]) { // small step, teleport or resize
            nbRect r = M.r[j];
            if (op < 65 && r.max[0] - r.min[0] < world) {
                double dx = nbt_range(-1.0, 1.0), dy = nbt_range(-1.0, 1.0);
                r.min[0] += dx;
                r.max[0] += dx;
                r.min[1] += dy;
                r.max[1] += dy;
            } else {
                r = random_rect(world);
            }
            NB_CHECK_OK(nb_quadtree_move(qt, M.h[j], &r));
            M.r[j] = r;
        } else if (op < 92 && M.n > 0 && M.live[j]) {
            NB_CHECK_OK(nb_quadtree_remove(qt, M.h[j]));
            NB_CHECK_STATUS(nb_quadtree_remove(qt, M.h[j]), NB_ERR_BAD_HANDLE);
            M.live[j] = false;
        } else if (op < 98 && M.n > 0 && M.live[j]) {
            nbFilter f = random_filter();
            NB_CHECK_OK(nb_quadtree_set(qt, M.h[j], 7u, f));
            M.f[j] = f;
            M.user[j] = 7u;
        } else if (op == 98) { // rebuild from the live rectangles at once
            static nbRect rs[MAXN];
            static uint64_t us[MAXN];
            static nbFilter fs[MAXN];
            static nbHandle hs[MAXN];
            static int32_t which[MAXN];
            int32_t m = 0;
            for (int32_t i = 0; i < M.n; i++) {
                if (!M.live[i]) continue;
                rs[m] = M.r[i];
                us[m] = M.user[i];
                fs[m] = M.f[i];
                which[m++] = i;
            }
            NB_CHECK_OK(nb_quadtree_build(qt, rs, m, us, fs, hs));
            for (int32_t k = 0; k < m; k++) {
                NB_CHECK_STATUS(nb_quadtree_remove(qt, M.h[which[k]]), NB_ERR_BAD_HANDLE);
                M.h[which[k]] = hs[k];
            }
        } else if (op == 99 && nbt_int(4) == 0) {
            nb_quadtree_clear(qt);
            for (int32_t i = 0; i < M.n; i++) {
                if (M.live[i])
                    NB_CHECK_STATUS(nb_quadtree_move(qt, M.h[i], &M.r[i]), NB_ERR_BAD_HANDLE);
                M.live[i] = false;
            }
        }
        NB_CHECK_OK(nb_quadtree_validate(qt));
        int32_t live = 0;
        for (int32_t i = 0; i < M.n; i++) live += M.live[i];
        NB_CHECK(nb_quadtree_count(qt) == live);
        if (step % 7 == 0 || step == steps - 1) {
            if (check_queries(qt, world) != 0) {
                fprintf(stderr, "  at step %d (placement %d, threshold %d)\n", (int)step, placement,
                        (int)threshold);
                return 1;
            }
            int32_t all = 0;
            NB_CHECK_OK(nb_quadtree_visit_all(qt, count_one, &all));
            NB_CHECK(all == live);
            for (int32_t i = 0; i < M.n; i++) {
                if (!M.live[i]) continue;
                nbRect r;
                uint64_t u;
                nbFilter f;
                NB_CHECK_OK(nb_quadtree_get(qt, M.h[i], &r, &u, &f));
                NB_CHECK(memcmp(&r, &M.r[i], sizeof r) == 0 && u == M.user[i]);
                NB_CHECK(f.category == M.f[i].category && f.mask == M.f[i].mask);
            }
        }
    }
    nbQuadtreeInfo info;
    NB_CHECK_OK(nb_quadtree_info(qt, &info));
    NB_CHECK(info.count == nb_quadtree_count(qt));
    nb_quadtree_destroy(qt);
    return 0;
}

static int test_loose_sequences(void)
{
    static const int32_t thresholds[] = {1, 2, 8, 0};
    for (int t = 0; t < 4; t++)
        if (run_sequence(NB_QUADTREE_LOOSE, thresholds[t], 900) != 0) return 1;
    return 0;
}

static int test_tight_sequences(void)
{
    static const int32_t thresholds[] = {1, 3, 0};
    for (int t = 0; t < 3; t++)
        if (run_sequence(NB_QUADTREE_TIGHT, thresholds[t], 900) != 0) return 1;
    return 0;
}

// Many duplicates and zero-size rectangles at one point: the depth limit stops the splitting,
// and removing them all collapses the tree back to its root.
static int test_duplicates_depth(void)
{
    for (int placement = 1; placement <= 2; placement++) {
        nbQuadtreeDesc desc = {0};
        desc.placement = placement;
        desc.split_threshold = 1;
        nbQuadtree *qt = NULL;
        NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
        nbHandle h[300];
        nbRect r = {{3.25, 3.25}, {3.25, 3.25}};
        for (int i = 0; i < 300; i++)
            NB_CHECK_OK(nb_quadtree_insert(qt, &r, 0, NB_FILTER_ALL, &h[i]));
        NB_CHECK_OK(nb_quadtree_validate(qt));
        nbQuadtreeInfo info;
        NB_CHECK_OK(nb_quadtree_info(qt, &info));
        NB_CHECK(info.depth <= 24 && info.depth >= 20);
        nbHit hits[300];
        int32_t found = 0;
        NB_CHECK_OK(nb_quadtree_query_point(qt, r.min, NB_FILTER_ALL, hits, 300, &found));
        NB_CHECK(found == 300);
        for (int i = 0; i < 300; i++) NB_CHECK_OK(nb_quadtree_remove(qt, h[i]));
        NB_CHECK_OK(nb_quadtree_info(qt, &info));
        NB_CHECK(info.nodes == 1 && info.count == 0);
        NB_CHECK_OK(nb_quadtree_validate(qt));
        nb_quadtree_destroy(qt);
    }
    return 0;
}

// The node visitor: a node's children follow it (depth + 1) in quadrant order, each child's
// cell a quarter of its parent's split at the middle and its bounds within the parent's (equal
// to its cell when tight); the counts add up to every rectangle not in the outside list; a
// false return stops the walk.
typedef struct NodeWalk {
    nbQuadtreeNode path[NB_QUADTREE_MAX_DEPTH + 80]; // the last node seen at each depth
    int32_t next_child[NB_QUADTREE_MAX_DEPTH + 80];  // which quadrant comes next below it
    int64_t nodes, held, leaves, stop_after;
    int32_t max_depth;
    bool tight, ok;
} NodeWalk;

static bool check_node(const nbQuadtreeNode *n, void *user)
{
    NodeWalk *w = user;
    const int32_t d = n->depth;
    if (d < 0 || d >= NB_QUADTREE_MAX_DEPTH + 80 || (w->nodes == 0) != (d == 0)) w->ok = false;
    if (!w->ok) return false;
    if (d > 0) { // the quadrant of its parent that comes next
        const nbQuadtreeNode *p = &w->path[d - 1];
        const int32_t k = w->next_child[d - 1]++;
        if (p->leaf || k > 3) w->ok = false;
        for (int a = 0; a < 2 && w->ok; a++) {
            const double mid = 0.5 * (p->cell.min[a] + p->cell.max[a]);
            const bool high = ((a == 0 ? k : k >> 1) & 1) != 0;
            if (n->cell.min[a] != (high ? mid : p->cell.min[a]) ||
                n->cell.max[a] != (high ? p->cell.max[a] : mid))
                w->ok = false;
            if (n->bounds.min[a] < p->bounds.min[a] || n->bounds.max[a] > p->bounds.max[a])
                w->ok = false;
        }
    }
    if (w->tight && memcmp(&n->cell, &n->bounds, sizeof n->cell) != 0) w->ok = false;
    w->path[d] = *n;
    w->next_child[d] = 0;
    w->nodes++;
    w->held += n->count;
    w->leaves += n->leaf;
    if (d > w->max_depth) w->max_depth = d;
    return w->ok && w->nodes != w->stop_after;
}

static int test_visit_nodes(void)
{
    for (int placement = 1; placement <= 2; placement++) {
        nbQuadtreeDesc desc = {0};
        desc.placement = placement;
        desc.split_threshold = 4;
        nbQuadtree *qt = NULL;
        NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
        static nbRect rects[2000];
        for (int i = 0; i < 2000; i++) {
            const double x = nbt_range(-50.0, 50.0), y = nbt_range(-50.0, 50.0);
            const double side = 0.05 * pow(200.0, nbt_unit());
            rects[i] = (nbRect){{x, y}, {x + side, y + 0.5 * side}};
        }
        NB_CHECK_OK(nb_quadtree_build(qt, rects, 2000, NULL, NULL, NULL));
        nbQuadtreeInfo info;
        NB_CHECK_OK(nb_quadtree_info(qt, &info));
        static NodeWalk w;
        memset(&w, 0, sizeof w);
        w.tight = placement == NB_QUADTREE_TIGHT;
        w.ok = true;
        NB_CHECK_OK(nb_quadtree_visit_nodes(qt, check_node, &w));
        NB_CHECK(w.ok);
        NB_CHECK(w.nodes > 100 && w.leaves > 50 && w.max_depth >= 3);
        NB_CHECK(w.held + info.outside == 2000);
        NB_CHECK(w.nodes == info.nodes && w.leaves == info.leaves && w.max_depth == info.depth);
        NB_CHECK(memcmp(&w.path[0].cell, &info.root, sizeof info.root) == 0);
        NB_CHECK((w.nodes - w.leaves) * 4 == w.nodes - 1); // four children to each inner node
        memset(&w, 0, sizeof w);
        w.ok = true;
        w.stop_after = 3;
        NB_CHECK_OK(nb_quadtree_visit_nodes(qt, check_node, &w));
        NB_CHECK(w.ok && w.nodes == 3);
        nb_quadtree_destroy(qt);
    }
    return 0;
}

// Rectangles far outside the root grow it, or land in the outside list, and are still found.
static int test_outside(void)
{
    nbQuadtree *qt = NULL;
    nbQuadtreeDesc desc = {0};
    NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
    nbRect far = {{1e9, 1e9}, {1e9 + 1.0, 1e9 + 1.0}};
    nbRect huge = {{-1e300, 0.0}, {1e300, 1.0}};
    nbRect near = {{0.0, 0.0}, {1.0, 1.0}};
    nbHandle a, b, c;
    NB_CHECK_OK(nb_quadtree_insert(qt, &far, 1, NB_FILTER_ALL, &a));
    NB_CHECK_OK(nb_quadtree_insert(qt, &huge, 2, NB_FILTER_ALL, &b));
    NB_CHECK_OK(nb_quadtree_insert(qt, &near, 3, NB_FILTER_ALL, &c));
    NB_CHECK_OK(nb_quadtree_validate(qt));
    nbQuadtreeInfo info;
    NB_CHECK_OK(nb_quadtree_info(qt, &info));
    NB_CHECK(info.root_grown > 0 && info.outside == 1);
    nbHit hits[4];
    int32_t found = 0;
    NB_CHECK_OK(nb_quadtree_query_point(qt, far.max, NB_FILTER_ALL, hits, 4, &found));
    NB_CHECK(found == 1 && hits[0].user == 1);
    double p[2] = {0.5, 0.5};
    NB_CHECK_OK(nb_quadtree_query_point(qt, p, NB_FILTER_ALL, hits, 4, &found));
    NB_CHECK(found == 2);
    int64_t np = 0;
    NB_CHECK_OK(nb_quadtree_count_pairs(qt, &np));
    NB_CHECK(np == 1);
    // Moving the far one home, and the huge one back to a normal size.
    NB_CHECK_OK(nb_quadtree_move(qt, a, &near));
    nbRect small = {{0.5, 0.5}, {2.0, 2.0}};
    NB_CHECK_OK(nb_quadtree_move(qt, b, &small));
    NB_CHECK_OK(nb_quadtree_info(qt, &info));
    NB_CHECK(info.outside == 0);
    NB_CHECK_OK(nb_quadtree_count_pairs(qt, &np));
    NB_CHECK(np == 3);
    NB_CHECK_OK(nb_quadtree_validate(qt));
    nb_quadtree_destroy(qt);
    return 0;
}

// Inverted, NaN and infinite rectangles are refused and change nothing.
static int test_refused(void)
{
    nbQuadtree *qt = NULL;
    nbQuadtreeDesc desc = {0};
    NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
    nbRect ok = {{0.0, 0.0}, {1.0, 1.0}};
    nbHandle h;
    NB_CHECK_OK(nb_quadtree_insert(qt, &ok, 1, NB_FILTER_ALL, &h));
    nbRect bad[] = {{{1.0, 0.0}, {0.0, 1.0}},
                    {{0.0, 2.0}, {1.0, 1.0}},
                    {{(double)NAN, 0.0}, {1.0, 1.0}},
                    {{0.0, 0.0}, {1.0, (double)INFINITY}},
                    {{-(double)INFINITY, 0.0}, {1.0, 1.0}}};
    const nbStatus want[] = {NB_ERR_OUT_OF_RANGE, NB_ERR_OUT_OF_RANGE, NB_ERR_NOT_FINITE,
                             NB_ERR_NOT_FINITE, NB_ERR_NOT_FINITE};
    for (int i = 0; i < 5; i++) {
        nbHandle x = {123};
        NB_CHECK_STATUS(nb_quadtree_insert(qt, &bad[i], 0, NB_FILTER_ALL, &x), want[i]);
        NB_CHECK(x.bits == 0);
        NB_CHECK_STATUS(nb_quadtree_move(qt, h, &bad[i]), want[i]);
        nbRect got;
        NB_CHECK_OK(nb_quadtree_get(qt, h, &got, NULL, NULL));
        NB_CHECK(memcmp(&got, &ok, sizeof ok) == 0);
        NB_CHECK(nb_quadtree_count(qt) == 1);
        NB_CHECK_OK(nb_quadtree_validate(qt));
    }
    nb_quadtree_destroy(qt);
    return 0;
}

// A tree of the default desc but for its split threshold, allocating through al.
static nbQuadtree *counted_tree(nbtAlloc *al, nbAllocator *a, int32_t threshold)
{
    *a = nbt_allocator(al);
    nbQuadtreeDesc desc = {0};
    desc.allocator = a;
    desc.split_threshold = threshold;
    nbQuadtree *qt = NULL;
    return nb_quadtree_create(&desc, &qt) == NB_OK ? qt : NULL;
}

// A fingerprint of the whole tree's contents, to check "unchanged".
static uint64_t fingerprint(const nbQuadtree *qt)
{
    static nbHit hits[4096];
    int32_t found = 0;
    const double inf = (double)INFINITY;
    nbRect all = {{-inf, -inf}, {inf, inf}};
    if (nb_quadtree_query_box(qt, NBT_RECT_BOX(&all), NB_FILTER_ALL, hits, 4096, &found) != NB_OK)
        return 1;
    uint64_t keys[4096];
    sort_hits(hits, found, keys);
    uint64_t h = 1469598103934665603u;
    for (int32_t i = 0; i < found; i++) {
        nbRect r;
        nb_quadtree_get(qt, hits[i].handle, &r, NULL, NULL);
        uint64_t v[5];
        v[0] = keys[i];
        memcpy(&v[1], &r, sizeof r);
        for (int k = 0; k < 5; k++) h = (h ^ v[k]) * 1099511628211u;
    }
    return h;
}

// Every call that can allocate, failing each allocation in turn: NB_ERR_OUT_OF_MEMORY and an
// unchanged tree, until the call succeeds; nothing leaks.
static int test_failing_allocator(void)
{
    for (int op = 0; op < 5; op++) {
        bool succeeded = false;
        for (int64_t fail = 1; fail < 200 && !succeeded; fail++) {
            nbtAlloc al = {0};
            nbAllocator a = nbt_allocator(&al);
            nbQuadtreeDesc desc = {0};
            desc.allocator = &a;
            desc.split_threshold = 2;
            nbQuadtree *qt = NULL;
            if (op == 0) {
                al.fail_at = fail;
                nbStatus st = nb_quadtree_create(&desc, &qt);
                if (st == NB_OK) {
                    succeeded = true;
                    nb_quadtree_destroy(qt);
                } else {
                    NB_CHECK(st == NB_ERR_OUT_OF_MEMORY && qt == NULL);
                }
                NB_CHECK(al.live_bytes == 0 && !al.size_mismatch);
                continue;
            }
            NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
            nbHandle h[40];
            for (int i = 0; i < 40; i++) {
                nbRect r = {{i * 3.0, 1.0}, {i * 3.0 + 2.0, 2.0 + i}};
                NB_CHECK_OK(nb_quadtree_insert(qt, &r, (uint64_t)i, NB_FILTER_ALL, &h[i]));
            }
            uint64_t before = fingerprint(qt);
            int32_t count = nb_quadtree_count(qt);
            al.fail_at = al.allocs + fail;
            nbStatus st;
            if (op == 1) { // an insert far away (grows the root) or into a full leaf (splits)
                nbRect r = {{fail % 2 ? 5000.0 : 7.0, 1.5}, {fail % 2 ? 5001.0 : 7.5, 1.6}};
                nbHandle x;
                for (int rep = 0; rep < 64; rep++) { // until an insert needs to allocate
                    before = fingerprint(qt);
                    count = nb_quadtree_count(qt);
                    st = nb_quadtree_insert(qt, &r, 99, NB_FILTER_ALL, &x);
                    if (st != NB_OK || al.allocs >= al.fail_at) break;
                }
            } else if (op == 2) {
                nbRect r = {{-9000.0, -9000.0}, {-8999.0, -8999.0}};
                st = nb_quadtree_move(qt, h[fail % 40], &r);
            } else if (op == 3) {
                st = nb_quadtree_reserve(qt, 100000);
            } else {
                nbRect rs[300];
                for (int i = 0; i < 300; i++)
                    rs[i] = (nbRect){{i * 0.5, -i * 0.25}, {i * 0.5 + 1.0, 3.0 - i * 0.25}};
                rs[7] = (nbRect){{1e30, 0.0}, {1e30, 0.0}};       // one in the outside list
                rs[9] = (nbRect){{-5000.0, 0.0}, {-4000.0, 1.0}}; // the root grows
                nbHandle bh[300];                                 // written on success only
                for (int i = 0; i < 300; i++) bh[i].bits = 0x5EEDu;
                st = nb_quadtree_build(qt, rs, 300, NULL, NULL, bh);
                if (st == NB_OK) NB_CHECK(nb_quadtree_count(qt) == 300);
                for (int i = 0; st != NB_OK && i < 300; i++) NB_CHECK(bh[i].bits == 0x5EEDu);
                for (int i = 0; st == NB_OK && i < 300; i++) {
                    nbRect got;
                    uint64_t user;
                    NB_CHECK_OK(nb_quadtree_get(qt, bh[i], &got, &user, NULL));
                    NB_CHECK(user == (uint64_t)i && memcmp(&got, &rs[i], sizeof got) == 0);
                }
            }
            if (st == NB_OK && !nbt_alloc_failed(&al)) succeeded = true;
            if (st != NB_OK) {
                NB_CHECK(st == NB_ERR_OUT_OF_MEMORY);
                NB_CHECK(fingerprint(qt) == before);
                NB_CHECK(nb_quadtree_count(qt) == count);
            }
            NB_CHECK_OK(nb_quadtree_validate(qt));
            nb_quadtree_destroy(qt);
            NB_CHECK(al.live_bytes == 0 && !al.size_mismatch);
        }
        NB_CHECK(succeeded);
    }
    return 0;
}

// A window against brute force over rectangles r[0, n), whose user values are their indices.
static int check_window(const nbQuadtree *qt, const nbRect *r, int32_t n, const nbRect *w,
                        nbHit *hits)
{
    int32_t want = 0, found = -1;
    uint64_t sum = 0, got = 0;
    for (int32_t k = 0; k < n; k++) {
        if (!nbo_rect_touch(&r[k], w)) continue;
        want++;
        sum += ((uint64_t)k + 1u) * 0x9E3779B97F4A7C15u;
    }
    NB_CHECK_OK(nb_quadtree_query_box(qt, NBT_RECT_BOX(w), NB_FILTER_ALL, hits, n, &found));
    NB_CHECK(found == want);
    for (int32_t i = 0; i < found; i++) got += (hits[i].user + 1u) * 0x9E3779B97F4A7C15u;
    NB_CHECK(got == sum);
    return 0;
}

// Rebuilding every frame (a game that builds its rectangles anew each frame): with a capacity
// hint, every build after the first (which makes the second layout) of as many rectangles or
// fewer allocates nothing; without, the two layouts settle after the second build (one may
// still grow once if a frame's tree outgrows both: at most 10 allocations in 10 rebuilds,
// where a build used to allocate 20 and more). Each build's answers match brute force, and the
// handles of the builds before it (the layout it reused among them) are stale.
static int test_rebuild_no_alloc(void)
{
    enum { N = 4000, FRAMES = 10 };
    static nbRect r[N];
    static nbHit hits[N];
    static nbHandle h[3][N];
    for (int hint = 0; hint < 2; hint++) {
        nbtAlloc al = {0};
        nbAllocator a = nbt_allocator(&al);
        nbQuadtreeDesc desc = {0};
        desc.allocator = &a;
        desc.capacity_hint = hint ? N : 0;
        nbQuadtree *qt = NULL;
        NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
        for (int i = 0; i < N; i++) { // sizes 0.1 to 10, every 50th spanning the world
            r[i] = sized_rect(100.0, 100.0);
            if (i % 50 == 0) r[i].max[0] = r[i].min[0] + 250.0;
        }
        NB_CHECK_OK(nb_quadtree_build(qt, r, N, NULL, NULL, h[0]));
        const int64_t first = al.allocs;
        if (!hint) NB_CHECK_OK(nb_quadtree_build(qt, r, N, NULL, NULL, h[1])); // its 2nd layout
        const int64_t warm = al.allocs;
        for (int f = 0; f < FRAMES; f++) {
            for (int i = 0; i < N; i++) {
                const double d[2] = {nbt_range(-3.0, 3.0), nbt_range(-3.0, 3.0)};
                for (int ax = 0; ax < 2; ax++) {
                    r[i].min[ax] += d[ax];
                    r[i].max[ax] += d[ax];
                }
            }
            const int32_t n = f >= FRAMES - 3 ? N - 300 * (f - FRAMES + 4) : N; // then fewer
            nbHandle *now = h[(f + 2) % 3], *prev = h[(f + 1) % 3], *prev2 = h[f % 3];
            NB_CHECK_OK(nb_quadtree_build(qt, r, n, NULL, NULL, now));
            NB_CHECK(nb_quadtree_count(qt) == n);
            for (int32_t i = 0; i < n; i += 7) {
                nbRect got;
                NB_CHECK_OK(nb_quadtree_get(qt, now[i], &got, NULL, NULL));
                NB_CHECK(memcmp(&got, &r[i], sizeof got) == 0);
                NB_CHECK(nb_quadtree_get(qt, prev[i], NULL, NULL, NULL) == NB_ERR_BAD_HANDLE);
                if (f > 0 || !hint)
                    NB_CHECK(nb_quadtree_get(qt, prev2[i], NULL, NULL, NULL) == NB_ERR_BAD_HANDLE);
            }
            for (int k = 0; k < 40; k++) {
                const double c[2] = {nbt_range(-120.0, 120.0), nbt_range(-120.0, 120.0)};
                const double s = 0.5 * pow(200.0, nbt_unit());
                const nbRect w = {{c[0] - s, c[1] - s}, {c[0] + s, c[1] + s}};
                NB_CHECK(check_window(qt, r, n, &w, hits) == 0);
            }
            if (f == 0 || f == FRAMES - 1) NB_CHECK(check_pairs(qt, r, n) == 0); // O(n^2)
            NB_CHECK_OK(nb_quadtree_validate(qt));
        }
        printf("  %s: allocations %lld in the first build, %lld in the second, %lld in %d "
               "rebuilds\n",
               hint ? "capacity_hint" : "no hint", (long long)first, (long long)(warm - first),
               (long long)(al.allocs - warm), FRAMES);
        NB_CHECK(hint ? al.allocs == warm : al.allocs - warm <= 10);
        nb_quadtree_destroy(qt);
        NB_CHECK(al.live_bytes == 0 && !al.size_mismatch);
    }
    return 0;
}

// A build that fails leaves the tree as it was, once the tree has been built twice (its second
// layout holds the build before last): a bad rectangle anywhere, a NaN, and every allocation
// of a larger build failing in turn. The old handles still name their rectangles, and the next
// build succeeds.
static int test_rebuild_fails(void)
{
    enum { N = 400, BIG = 3 * N };
    static nbRect r[BIG], old[N];
    static nbHandle h[N], nh[BIG];
    static nbHit hits[BIG];
    bool succeeded = false;
    int oom = 0; // builds refused for memory
    for (int64_t fail = 0; fail < 100 && !succeeded; fail++) {
        nbtAlloc al = {0};
        nbAllocator a;
        nbQuadtree *qt = counted_tree(&al, &a, 8);
        NB_CHECK(qt != NULL);
        for (int i = 0; i < BIG; i++) r[i] = sized_rect(50.0, 50.0);
        NB_CHECK_OK(nb_quadtree_build(qt, r + N, N, NULL, NULL, h)); // the layout to be reused
        NB_CHECK_OK(nb_quadtree_build(qt, r, N, NULL, NULL, h));
        memcpy(old, r, sizeof old);
        const uint64_t before = fingerprint(qt);
        nbQuadtreeInfo info0;
        NB_CHECK_OK(nb_quadtree_info(qt, &info0));
        nbStatus st;
        if (fail == 0) { // bad rectangles, the last one or in the middle: nothing allocates
            const int64_t allocs = al.allocs;
            const nbRect keep = r[BIG - 1];
            r[BIG - 1].min[0] = r[BIG - 1].max[0] + 1.0;
            NB_CHECK(nb_quadtree_build(qt, r, BIG, NULL, NULL, nh) == NB_ERR_OUT_OF_RANGE);
            r[BIG - 1] = keep;
            r[N].max[1] = (double)NAN;
            NB_CHECK(nb_quadtree_build(qt, r, BIG, NULL, NULL, nh) == NB_ERR_NOT_FINITE);
            r[N].max[1] = (double)INFINITY;
            st = nb_quadtree_build(qt, r, BIG, NULL, NULL, nh);
            NB_CHECK(st == NB_ERR_NOT_FINITE);
            NB_CHECK(al.allocs == allocs);
            r[N] = sized_rect(50.0, 50.0);
        } else {
            al.fail_at = al.allocs + fail;
            st = nb_quadtree_build(qt, r, BIG, NULL, NULL, nh);
            if (st == NB_OK) {
                succeeded = !nbt_alloc_failed(&al); // else a retry got by without it
                NB_CHECK(nb_quadtree_count(qt) == BIG);
                for (int k = 0; k < 30; k++) {
                    const nbRect w = sized_rect(50.0, 400.0);
                    NB_CHECK(check_window(qt, r, BIG, &w, hits) == 0);
                }
            } else {
                NB_CHECK(st == NB_ERR_OUT_OF_MEMORY);
                oom++;
            }
        }
        if (st != NB_OK) { // unchanged: contents, shape, handles and answers
            NB_CHECK(fingerprint(qt) == before);
            nbQuadtreeInfo info;
            NB_CHECK_OK(nb_quadtree_info(qt, &info));
            info.bytes = info0.bytes; // storage grown for the failed build is kept
            NB_CHECK(memcmp(&info, &info0, sizeof info) == 0);
            for (int i = 0; i < N; i++) {
                nbRect got;
                uint64_t user;
                NB_CHECK_OK(nb_quadtree_get(qt, h[i], &got, &user, NULL));
                NB_CHECK(user == (uint64_t)i && memcmp(&got, &old[i], sizeof got) == 0);
            }
            for (int k = 0; k < 30; k++) {
                const nbRect w = sized_rect(50.0, 400.0);
                NB_CHECK(check_window(qt, old, N, &w, hits) == 0);
            }
            al.fail_at = 0; // and the next build works, into the layout the failure left
            NB_CHECK_OK(nb_quadtree_build(qt, r, BIG, NULL, NULL, nh));
            NB_CHECK(check_pairs(qt, r, BIG) == 0);
            NB_CHECK(nb_quadtree_get(qt, h[0], NULL, NULL, NULL) == NB_ERR_BAD_HANDLE);
        }
        NB_CHECK_OK(nb_quadtree_validate(qt));
        nb_quadtree_destroy(qt);
        NB_CHECK(al.live_bytes == 0 && !al.size_mismatch);
    }
    printf("  %d builds refused for memory before one succeeded\n", oom);
    NB_CHECK(succeeded && oom >= 3);
    return 0;
}

// The whole tree in the order a search reports it: user values and boxes, so that two trees
// built by the same calls (whose handles differ by their owner tag) can be compared.
static int tree_walk(const nbQuadtree *qt, uint64_t *users, nbRect *rects, int32_t *n)
{
    static nbHit hits[MAXN];
    const double inf = (double)INFINITY;
    const nbRect all = {{-inf, -inf}, {inf, inf}};
    NB_CHECK_OK(nb_quadtree_query_box(qt, NBT_RECT_BOX(&all), NB_FILTER_ALL, hits, MAXN, n));
    for (int32_t i = 0; i < *n; i++) {
        users[i] = hits[i].user;
        NB_CHECK_OK(nb_quadtree_get(qt, hits[i].handle, &rects[i], NULL, NULL));
    }
    return 0;
}

// Whether two trees that took the same moves (one batched, one single) hold the same rectangles
// with the same user values in the same order, each at its model rectangle.
static int same_trees(const nbQuadtree *a, const nbQuadtree *b)
{
    static uint64_t ua[MAXN], ub[MAXN];
    static nbRect ra[MAXN], rb[MAXN];
    int32_t na = 0, nb = 0;
    if (tree_walk(a, ua, ra, &na) != 0 || tree_walk(b, ub, rb, &nb) != 0) return 1;
    NB_CHECK(na == nb);
    NB_CHECK(memcmp(ua, ub, (size_t)na * sizeof *ua) == 0);
    NB_CHECK(memcmp(ra, rb, (size_t)na * sizeof *ra) == 0);
    for (int32_t i = 0; i < na; i++) NB_CHECK(memcmp(&ra[i], &M.r[ua[i]], sizeof *ra) == 0);
    return 0;
}

// Two trees of desc with the same n rectangles of the workload's mix (random_rect), user value
// = index, half of them with random filter bits, inserted in the same order, and the model of
// them (M: handles of *a). h1: *b's.
static int twins(const nbQuadtreeDesc *desc, int32_t n, double world, nbQuadtree **a,
                 nbQuadtree **b, nbHandle *h1)
{
    NB_CHECK_OK(nb_quadtree_create(desc, a));
    NB_CHECK_OK(nb_quadtree_create(desc, b));
    for (int32_t i = 0; i < n; i++) {
        const nbRect r = random_rect(world);
        const nbFilter f = nbt_int(2) == 0 ? NB_FILTER_ALL : random_filter();
        NB_CHECK_OK(nb_quadtree_insert(*a, &r, (uint64_t)i, f, &M.h[i]));
        NB_CHECK_OK(nb_quadtree_insert(*b, &r, (uint64_t)i, f, &h1[i]));
        M.r[i] = r;
        M.user[i] = (uint64_t)i;
        M.f[i] = f;
        M.live[i] = true;
        M.n = i + 1;
    }
    return 0;
}

// nb_quadtree_move_many over batches of 1 to 12 live rectangles (repeats allowed; small steps,
// teleports far outside the root, resizes) against the model and against a second tree given
// the same moves one nb_quadtree_move at a time: the same contents in the same layout. A batch
// with one bad entry (stale, removed, foreign or null handle; NaN, infinite or inverted
// rectangle) anywhere in it returns that entry's status, moves nothing and says so.
static int test_move_many(void)
{
    static const int32_t thresholds[] = {1, 4, 0};
    for (int t = 0; t < 3; t++) {
        memset(&M, 0, sizeof M);
        const double world = 100.0;
        nbQuadtreeDesc desc = {0};
        desc.split_threshold = thresholds[t];
        desc.max_depth = 10;
        desc.bounds = (nbRect){{-world, -world}, {world, world}};
        nbQuadtree *qt = NULL, *one = NULL;
        static nbHandle h1[MAXN];
        if (twins(&desc, 160, world, &qt, &one, h1) != 0) return 1;
        for (int32_t i = 0; i < 160; i += 9) { // some handles go stale
            NB_CHECK_OK(nb_quadtree_remove(qt, M.h[i]));
            NB_CHECK_OK(nb_quadtree_remove(one, h1[i]));
            M.live[i] = false;
        }
        for (int32_t b = 0; b < 120; b++) {
            nbHandle items[13], items1[13];
            nbRect to[13];
            int32_t idx[13];
            const int32_t k = 1 + nbt_int(12);
            for (int32_t e = 0; e < k; e++) {
                int32_t j = nbt_int(M.n);
                while (!M.live[j]) j = nbt_int(M.n);
                if (e > 0 && nbt_int(6) == 0) j = idx[nbt_int(e)]; // a repeat
                nbRect r = M.r[j];
                const int kind = nbt_int(10);
                if (kind < 7 && r.max[0] - r.min[0] < world) { // a small step
                    const double dx = nbt_range(-1.0, 1.0), dy = nbt_range(-1.0, 1.0);
                    r = (nbRect){{r.min[0] + dx, r.min[1] + dy}, {r.max[0] + dx, r.max[1] + dy}};
                } else {
                    r = random_rect(world); // a teleport, a resize, far outside
                }
                idx[e] = j;
                items[e] = M.h[j];
                items1[e] = h1[j];
                to[e] = r;
            }
            int32_t moved = -1;
            if (nbt_int(4) == 0) { // one bad entry: nothing moves
                const uint64_t before = fingerprint(qt);
                const int32_t at = nbt_int(k);
                nbStatus want = NB_ERR_BAD_HANDLE;
                switch (nbt_int(6)) {
                case 0: items[at] = M.h[nbt_int(18) * 9]; break; // removed
                case 1: items[at] = h1[idx[at]]; break;          // foreign
                case 2: items[at] = NB_HANDLE_NULL; break;
                case 3:
                    to[at].max[nbt_int(2)] = (double)NAN;
                    want = NB_ERR_NOT_FINITE;
                    break;
                case 4:
                    to[at].min[1] = -(double)INFINITY;
                    want = NB_ERR_NOT_FINITE;
                    break;
                default:
                    to[at].min[0] = to[at].max[0] + 1.0 + fabs(to[at].max[0]);
                    want = NB_ERR_OUT_OF_RANGE;
                    break;
                }
                NB_CHECK_STATUS(nb_quadtree_move_many(qt, items, to, k, &moved), want);
                NB_CHECK(moved == 0);
                NB_CHECK(fingerprint(qt) == before);
                NB_CHECK_OK(nb_quadtree_validate(qt));
                continue;
            }
            NB_CHECK_OK(nb_quadtree_move_many(qt, items, to, k, &moved));
            NB_CHECK(moved == k);
            for (int32_t e = 0; e < k; e++) {
                NB_CHECK_OK(nb_quadtree_move(one, items1[e], &to[e]));
                M.r[idx[e]] = to[e]; // a repeat ends at its last rectangle
            }
            NB_CHECK_OK(nb_quadtree_validate(qt));
            if (same_trees(qt, one) != 0) return 1;
            if (b % 10 == 0 && check_queries(qt, world) != 0) {
                fprintf(stderr, "  after batch %d (threshold %d)\n", (int)b, (int)thresholds[t]);
                return 1;
            }
        }
        nb_quadtree_destroy(qt);
        nb_quadtree_destroy(one);
    }
    return 0;
}

// A batch whose moves allocate (far moves grow the root, moves into a leaf split it), failing
// each allocation in turn: NB_ERR_OUT_OF_MEMORY with *moved the moves made, those at their new
// rectangles and the rest at their old ones, the tree valid, nothing leaked; until it succeeds.
static int test_move_many_oom(void)
{
    enum { N = 40, K = 12 };
    bool succeeded = false;
    for (int64_t fail = 1; fail < 200 && !succeeded; fail++) {
        nbtAlloc al = {0};
        nbAllocator a;
        nbQuadtree *qt = counted_tree(&al, &a, 2);
        NB_CHECK(qt != NULL);
        nbHandle h[N];
        nbRect r[N];
        for (int i = 0; i < N; i++) {
            r[i] = (nbRect){{i * 3.0, 1.0}, {i * 3.0 + 2.0, 2.0 + i}};
            NB_CHECK_OK(nb_quadtree_insert(qt, &r[i], (uint64_t)i, NB_FILTER_ALL, &h[i]));
        }
        nbHandle items[K];
        nbRect to[K];
        for (int e = 0; e < K; e++) { // distinct rectangles: in place, far away, into a cluster
            const int i = (e * 7) % N;
            items[e] = h[i];
            to[e] = r[i];
            if (e % 3 == 0) {
                to[e].min[1] += 0.25;
                to[e].max[1] += 0.25;
            } else if (e % 3 == 1) {
                to[e] = (nbRect){{-9000.0 * e, 5.0}, {-8999.0 * e, 6.0}};
            } else {
                to[e] = (nbRect){{50.0 + 0.01 * e, 50.0}, {50.5, 50.5}};
            }
        }
        al.fail_at = al.allocs + fail;
        int32_t moved = -1;
        const nbStatus st = nb_quadtree_move_many(qt, items, to, K, &moved);
        if (st == NB_OK && !nbt_alloc_failed(&al)) succeeded = true;
        if (st == NB_OK) {
            NB_CHECK(moved == K);
        } else {
            NB_CHECK(st == NB_ERR_OUT_OF_MEMORY);
            NB_CHECK(moved >= 0 && moved < K);
        }
        for (int e = 0; e < K; e++) {
            nbRect got;
            NB_CHECK_OK(nb_quadtree_get(qt, items[e], &got, NULL, NULL));
            NB_CHECK(memcmp(&got, e < moved ? &to[e] : &r[(e * 7) % N], sizeof got) == 0);
        }
        NB_CHECK(nb_quadtree_count(qt) == N);
        NB_CHECK_OK(nb_quadtree_validate(qt));
        nb_quadtree_destroy(qt);
        NB_CHECK(al.live_bytes == 0 && !al.size_mismatch);
    }
    NB_CHECK(succeeded);
    return 0;
}

// A steady moving workload allocates nothing once the tree is reserved and warmed up, whether
// it moves one rectangle a call (even frames) or a frame's moves in one batch (odd frames).
static int test_zero_alloc_moving(void)
{
    enum { N = 3000, FRAMES = 60 };
    nbtAlloc al = {0};
    nbAllocator a = nbt_allocator(&al);
    nbQuadtreeDesc desc = {0};
    desc.allocator = &a;
    desc.bounds = (nbRect){{-100.0, -100.0}, {100.0, 100.0}};
    nbQuadtree *qt = NULL;
    NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
    NB_CHECK_OK(nb_quadtree_reserve(qt, N));
    const int64_t after_reserve = al.allocs;
    static nbRect r[N];
    static nbHandle h[N];
    for (int i = 0; i < N; i++) {
        double cx = nbt_range(-100.0, 100.0), cy = nbt_range(-100.0, 100.0);
        double w = 0.1 * pow(100.0, nbt_unit()), hh = 0.1 * pow(100.0, nbt_unit());
        r[i] = (nbRect){{cx - w / 2, cy - hh / 2}, {cx + w / 2, cy + hh / 2}};
        NB_CHECK_OK(nb_quadtree_insert(qt, &r[i], (uint64_t)i, NB_FILTER_ALL, &h[i]));
    }
    const int64_t after_insert = al.allocs;
    static nbHit hits[N];
    int64_t steady = 0;
    for (int frame = 0; frame < FRAMES; frame++) {
        if (frame == 10) steady = al.allocs;
        for (int i = 0; i < N; i++) {
            double dx = nbt_range(-0.5, 0.5), dy = nbt_range(-0.5, 0.5);
            double cx = 0.5 * (r[i].min[0] + r[i].max[0]), cy = 0.5 * (r[i].min[1] + r[i].max[1]);
            if (fabs(cx + dx) > 100.0) dx = -dx;
            if (fabs(cy + dy) > 100.0) dy = -dy;
            r[i].min[0] += dx;
            r[i].max[0] += dx;
            r[i].min[1] += dy;
            r[i].max[1] += dy;
            if (frame % 2 == 0) NB_CHECK_OK(nb_quadtree_move(qt, h[i], &r[i]));
        }
        int32_t moved = 0;
        if (frame % 2 == 1) NB_CHECK_OK(nb_quadtree_move_many(qt, h, r, N, &moved));
        NB_CHECK(moved == (frame % 2 == 1 ? N : 0));
        int32_t found = 0;
        for (int i = 0; i < N; i += 10)
            NB_CHECK_OK(
                nb_quadtree_query_box(qt, NBT_RECT_BOX(&r[i]), NB_FILTER_ALL, hits, N, &found));
        int64_t np = 0;
        NB_CHECK_OK(nb_quadtree_count_pairs(qt, &np));
    }
    printf("  allocations: %lld while inserting after reserve, %lld in frames 0-9, %lld in "
           "frames 10-%d\n",
           (long long)(after_insert - after_reserve), (long long)(steady - after_insert),
           (long long)(al.allocs - steady), FRAMES - 1);
    NB_CHECK(al.allocs == steady);
    NB_CHECK(after_insert == al.allocs); // reserve was enough from the start
    NB_CHECK_OK(nb_quadtree_validate(qt));
    nb_quadtree_destroy(qt);
    NB_CHECK(al.live_bytes == 0);
    return 0;
}

// Visitors stop when told; buffers too small report the full count.
static int test_stop_and_buffers(void)
{
    nbQuadtree *qt = NULL;
    nbQuadtreeDesc desc = {0};
    NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
    nbHandle h;
    for (int i = 0; i < 50; i++) {
        nbRect r = {{0.0, 0.0}, {1.0 + i, 1.0}};
        NB_CHECK_OK(nb_quadtree_insert(qt, &r, (uint64_t)i, NB_FILTER_ALL, &h));
    }
    nbHit hits[10];
    int32_t found = 0;
    nbRect w = {{0.5, 0.5}, {0.5, 0.5}};
    NB_CHECK_STATUS(nb_quadtree_query_box(qt, NBT_RECT_BOX(&w), NB_FILTER_ALL, hits, 10, &found),
                    NB_ERR_BUFFER_TOO_SMALL);
    NB_CHECK(found == 50);
    NB_CHECK_STATUS(nb_quadtree_query_box(qt, NBT_RECT_BOX(&w), NB_FILTER_ALL, NULL, 0, &found),
                    NB_ERR_BUFFER_TOO_SMALL);
    NB_CHECK(found == 50);
    nbHitPair pairs[5];
    int64_t np = 0;
    NB_CHECK_STATUS(nb_quadtree_pairs(qt, pairs, 5, &np), NB_ERR_BUFFER_TOO_SMALL);
    NB_CHECK(np == 50 * 49 / 2);
    int32_t seen = 0;
    NB_CHECK_OK(nb_quadtree_visit_box(qt, NBT_RECT_BOX(&w), NB_FILTER_ALL, count_one, &seen));
    NB_CHECK(seen == 50);
    nb_quadtree_destroy(qt);
    return 0;
}

// Squares that underflow: a rectangle 1e-170 from the centre is within radius 0 by the test
// dx*dx + dy*dy <= r*r (1e-340 rounds to 0), and must be found (a case the fuzzer found).
static int test_radius_underflow(void)
{
    nbQuadtree *qt = NULL;
    nbQuadtreeDesc desc = {0};
    NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
    const double tiny[] = {1e-170, 2.2250738585072014e-308, 4.9406564584124654e-324, 1e-150};
    nbHandle h;
    for (int i = 0; i < 4; i++) {
        nbRect r = {{tiny[i], 0.0}, {1.0, 1.0}};
        NB_CHECK_OK(nb_quadtree_insert(qt, &r, (uint64_t)i, NB_FILTER_ALL, &h));
    }
    nbHit hits[4];
    int32_t found = 0;
    const double c[2] = {0.0, 0.5};
    NB_CHECK_OK(nb_quadtree_query_radius(qt, c, 0.0, NB_FILTER_ALL, hits, 4, &found));
    NB_CHECK(found == 3); // 1e-150 squared is 1e-300, not 0
    NB_CHECK_OK(nb_quadtree_query_radius(qt, c, 1e-170, NB_FILTER_ALL, hits, 4, &found));
    NB_CHECK(found == 3);
    NB_CHECK_OK(nb_quadtree_query_radius(qt, c, 1e-150, NB_FILTER_ALL, hits, 4, &found));
    NB_CHECK(found == 4);
    nbHitNeighbor nn[4];
    NB_CHECK_OK(nb_quadtree_knn(qt, c, NB_FILTER_ALL, 0.0, nn, 4, &found));
    NB_CHECK(found == 3);
    nb_quadtree_destroy(qt);
    return 0;
}

// Edges on values that floats cannot hold (the tree prefilters by boxes rounded outwards to
// floats, then tests exactly in double): a window that touches a rectangle only at such a value
// finds it, one that misses it by one double step does not, whether the tree was built or
// filled by inserts and moves, and whether the value lies inside float's range or beyond it.
// float_edges on values vals[0, nv), the rectangles' other sides and the windows' at base + 0 to
// 3 and base - 1, base + 4.
static int float_edges_at(const double *vals, int nv, double base)
{
    enum { MAXV = 16 };
    static nbRect rects[5 * MAXV];
    static nbHit hits[5 * MAXV];
    NB_CHECK(nv <= MAXV);
    const int NV = nv, NR = 5 * nv;
    const double b0 = base, b1 = base + 1.0, b2 = base + 2.0, b3 = base + 3.0;
    const double bm = base - 1.0, b4 = base + 4.0;
    const double inf = (double)INFINITY;
    for (int i = 0; i < NV; i++) {
        const double v = vals[i], d = fabs(v - base) * 1e-3 + 1.0;
        rects[5 * i + 0] = (nbRect){{v - d, b0}, {v, b1}}; // max x on v
        rects[5 * i + 1] = (nbRect){{v, b2}, {v + d, b3}}; // min x on v
        rects[5 * i + 2] = (nbRect){{b0, v - d}, {b1, v}}; // max y on v
        rects[5 * i + 3] = (nbRect){{b2, v}, {b3, v + d}}; // min y on v
        rects[5 * i + 4] = (nbRect){{v, v}, {v, v}};       // a point, often alone in its leaf
    }
    for (int way = 0; way < 3; way++) { // build; inserts; inserts then moves onto the edges
        nbQuadtreeDesc desc = {0};
        desc.split_threshold = 1; // deep trees: every level's boxes get tested
        nbQuadtree *qt = NULL;
        NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
        nbHandle h[5 * MAXV];
        if (way == 0) NB_CHECK_OK(nb_quadtree_build(qt, rects, NR, NULL, NULL, h));
        for (int32_t i = 0; way > 0 && i < NR; i++) {
            nbRect r = rects[i];
            if (way == 2) { // somewhere else first
                r.min[0] += 0.5;
                r.max[0] += 0.5;
            }
            NB_CHECK_OK(nb_quadtree_insert(qt, &r, (uint64_t)i, NB_FILTER_ALL, &h[i]));
            if (way == 2) NB_CHECK_OK(nb_quadtree_move(qt, h[i], &rects[i]));
        }
        NB_CHECK_OK(nb_quadtree_validate(qt));
        for (int i = 0; i < NV; i++) {
            const double v = vals[i], up = nextafter(v, inf), down = nextafter(v, -inf);
            const nbRect wins[] = {
                {{v, bm}, {v, b4}},
                {{up, bm}, {up, b4}},
                {{down, bm}, {down, b4}},
                {{bm, v}, {b4, v}},
                {{bm, up}, {b4, up}},
                {{bm, down}, {b4, down}},
                {{v, v}, {v, v}},
                {{down, down}, {v, v}},
                {{v, v}, {up, up}},
                {{-inf, v}, {v, inf}},
                {{up, up}, {inf, inf}},       // would hold the point's leaf, were the
                {{-inf, -inf}, {down, down}}, // floats rounded to nearest
            };
            for (size_t w = 0; w < sizeof wins / sizeof wins[0]; w++) {
                int32_t want = 0, found = -1;
                for (int32_t j = 0; j < NR; j++) want += nbo_rect_touch(&rects[j], &wins[w]);
                NB_CHECK_OK(nb_quadtree_query_box(qt, NBT_RECT_BOX(&wins[w]), NB_FILTER_ALL, hits,
                                                  NR, &found));
                if (found != want)
                    fprintf(stderr, "value %.17g, window %d: %d found, %d touch\n", v, (int)w,
                            (int)found, (int)want);
                NB_CHECK(found == want);
                const double p[2] = {wins[w].min[0], wins[w].min[1]};
                if (!isfinite(p[0]) || !isfinite(p[1])) continue;
                if (check_point(qt, rects, NR, p, hits)) return 1;
            }
        }
        if (check_pairs(qt, rects, NR)) return 1;
        nb_quadtree_destroy(qt);
    }
    return 0;
}

static int test_float_edges(void)
{
    const double vals[] = {
        0.1,    -0.1,   1.0 / 3.0, 16777217.0, -16777217.0,           1e-40,
        -1e-45, 1e-300, -1e-300,   0.0,        3.4028235677973366e38, -3.4028235677973366e38,
        1e39,   -1e300, 1e300};
    if (float_edges_at(vals, sizeof vals / sizeof vals[0], 0.0) != 0) return 1;
    // Far from the origin, where the float copies are taken from an origin in the data's
    // middle: edges on values no float holds relative to it, and on its float steps.
    const double far = 1e9;
    const double fars[] = {far + 0.1,    far - 0.1, far + 1.0 / 3.0, far + 64.0,  far - 32.0,
                           far + 1e-6,   far,       far + 0.5,       far + 77.25, far - 123.4,
                           far + 2048.0, far + 3e4};
    return float_edges_at(fars, sizeof fars / sizeof fars[0], far);
}

// The 16-bit boxes (runs of 8 in a node's frame, src/quadtree.c): a window decides a rectangle
// from them alone unless a field equals the window's, when the exact test in double decides.
// With bounds [-16000, 16000] the root's bounds are [-32000, 32000] and its frame maps x to x
// exactly (centre 0, one step per unit), a child's to 2 * (x - its centre): edges on whole
// numbers and a float step either side of them sit on and next to the steps'
// boundaries, at the clamp (beyond +-32766 steps) and past the root (which then grows). Windows
// with the same edges, points, and pairs, in a single leaf, a deep tree, and after moves; each
// against brute force. Trusting the 16-bit test where a field equals the window's (no exact
// test), or rounding a field inwards, fails here.
static int test_q16_edges(void)
{
    const double vals[] = {0.0,    1.0,     -1.0,    2.5,     -2.5,    7.0,      1000.0,
                           -999.0, 16000.0, 32765.0, 32766.0, 32767.0, -32767.0, 40000.0};
    // Four copies of each rectangle: the single leaf holds more than 32 segments of 16.
    enum { NV = sizeof vals / sizeof vals[0], NE = 3 * NV, NR = 4 * 5 * NE };
    static nbRect rects[NR];
    static nbHit hits[NR];
    double edges[NE];
    const double inf = (double)INFINITY;
    for (int i = 0; i < NV; i++) {
        edges[3 * i] = vals[i];
        edges[3 * i + 1] = nextafter(vals[i], inf);
        edges[3 * i + 2] = nextafter(vals[i], -inf);
    }
    for (int i = 0; i < NE; i++) {
        const double v = edges[i];
        rects[5 * i + 0] = (nbRect){{v - 1.0, 0.0}, {v, 1.0}}; // max x on v
        rects[5 * i + 1] = (nbRect){{v, 2.0}, {v + 1.0, 3.0}}; // min x on v
        rects[5 * i + 2] = (nbRect){{0.0, v - 1.0}, {1.0, v}}; // max y on v
        rects[5 * i + 3] = (nbRect){{2.0, v}, {3.0, v + 1.0}}; // min y on v
        rects[5 * i + 4] = (nbRect){{v, v}, {v, v}};           // a point
    }
    for (int32_t i = 5 * NE; i < NR; i++) rects[i] = rects[i % (5 * NE)];
    for (int way = 0; way < 4; way++) { // one leaf built; deep built; inserted; moved onto
        nbQuadtreeDesc desc = {0};
        desc.bounds = (nbRect){{-16000.0, -16000.0}, {16000.0, 16000.0}};
        desc.split_threshold = way == 0 ? 1 << 20 : 4;
        nbQuadtree *qt = NULL;
        NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
        nbHandle h[NR];
        if (way < 2) NB_CHECK_OK(nb_quadtree_build(qt, rects, NR, NULL, NULL, h));
        for (int32_t i = 0; way >= 2 && i < NR; i++) {
            nbRect r = rects[i];
            if (way == 3) { // a step off first
                r.min[1] += 0.25;
                r.max[1] += 0.25;
            }
            NB_CHECK_OK(nb_quadtree_insert(qt, &r, (uint64_t)i, NB_FILTER_ALL, &h[i]));
            if (way == 3) NB_CHECK_OK(nb_quadtree_move(qt, h[i], &rects[i]));
        }
        NB_CHECK_OK(nb_quadtree_validate(qt));
        for (int i = 0; i < NE; i++) {
            for (int j = 0; j < 3; j++) {
                const double v = edges[i], e = edges[3 * (i / 3) + j];
                const nbRect wins[] = {
                    {{e, -1.0}, {e, 4.0}},   {{-1.0, e}, {4.0, e}},    {{e, e}, {e, e}},
                    {{e, -1.0}, {inf, 4.0}}, {{-inf, -1.0}, {e, 4.0}}, {{v - 0.5, v - 0.5}, {e, e}},
                };
                for (size_t w = 0; w < sizeof wins / sizeof wins[0]; w++) {
                    int32_t want = 0, found = -1;
                    for (int32_t k = 0; k < NR; k++) want += nbo_rect_touch(&rects[k], &wins[w]);
                    NB_CHECK_OK(nb_quadtree_query_box(qt, NBT_RECT_BOX(&wins[w]), NB_FILTER_ALL,
                                                      hits, NR, &found));
                    if (found != want)
                        fprintf(stderr, "way %d, edge %.17g, window %d: %d found, %d touch\n", way,
                                e, (int)w, (int)found, (int)want);
                    NB_CHECK(found == want);
                    for (int32_t k = 0; k < found; k++)
                        NB_CHECK(nbo_rect_touch(&rects[hits[k].user], &wins[w]));
                }
                const double p[2] = {e, v};
                if (check_point(qt, rects, NR, p, hits)) return 1;
            }
        }
        if (check_pairs(qt, rects, NR)) return 1;
        nb_quadtree_destroy(qt);
    }
    return 0;
}

// Big leaves (the default threshold): a node's rectangles are scanned by segments of 16, each
// with a float box that grows as rectangles move in place, arrive (a removal's swap, an insert)
// or spill into a larger block, and that a window may hold whole. A built tree (segments sorted
// along a curve), then rounds of small steps, jumps within the world, resizes, removes and
// inserts, each round checked by validate (every position within its segment's box, the
// unused rest of each block empty) and by windows of every size, with and without filters,
// and pairs, against brute force.
static int test_segments(void)
{
    enum { N = 1500, ROUNDS = 25 };
    static nbRect r[N];
    static nbHandle h[N];
    static nbFilter f[N];
    static bool live[N];
    static nbHit hits[N];
    const double world = 40.0;
    for (int32_t i = 0; i < N; i++) {
        r[i] = sized_rect(world, 50.0);
        f[i] = nbt_int(4) == 0 ? (nbFilter){1u, 0xFFFFFFFFu} : NB_FILTER_ALL;
        live[i] = true;
    }
    nbQuadtreeDesc desc = {0};
    desc.bounds = (nbRect){{-world, -world}, {world, world}};
    nbQuadtree *qt = NULL;
    NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
    NB_CHECK_OK(nb_quadtree_build(qt, r, N, NULL, f, h));
    for (int round = 0; round <= ROUNDS; round++) {
        for (int op = 0; round > 0 && op < 150; op++) {
            const int32_t i = nbt_int(N);
            if (!live[i]) { // back in
                NB_CHECK_OK(nb_quadtree_insert(qt, &r[i], (uint64_t)i, f[i], &h[i]));
                live[i] = true;
                continue;
            }
            const int kind = nbt_int(10);
            if (kind == 0) {
                NB_CHECK_OK(nb_quadtree_remove(qt, h[i]));
                live[i] = false;
                continue;
            }
            nbRect m = r[i];
            for (int a = 0; a < 2; a++) {
                const double step = kind < 6 ? nbt_range(-1.0, 1.0) // small
                                    : kind < 8
                                        ? nbt_range(-world, world) - 0.5 * (m.min[a] + m.max[a])
                                        : 0.0; // a jump, or a resize
                m.min[a] += step;
                m.max[a] += step;
                if (kind >= 8) m.max[a] = m.min[a] + 0.1 * pow(100.0, nbt_unit());
            }
            NB_CHECK_OK(nb_quadtree_move(qt, h[i], &m));
            r[i] = m;
        }
        NB_CHECK_OK(nb_quadtree_validate(qt));
        for (int w = 0; w < 60; w++) {
            const double c[2] = {nbt_range(-world, world), nbt_range(-world, world)};
            const double side = w % 10 == 0 ? 4.0 * world : 0.2 * pow(150.0, nbt_unit());
            const nbRect win = {{c[0] - 0.5 * side, c[1] - 0.5 * side},
                                {c[0] + 0.5 * side, c[1] + 0.5 * side}};
            const nbFilter qf = w % 3 == 0 ? (nbFilter){1u, 2u} : NB_FILTER_ALL;
            int32_t found = -1;
            NB_CHECK_OK(nb_quadtree_query_box(qt, NBT_RECT_BOX(&win), qf, hits, N, &found));
            int32_t want = 0;
            for (int32_t i = 0; i < N; i++)
                want += live[i] && nbo_rect_touch(&r[i], &win) && nbo_item_passes(qf, f[i]);
            NB_CHECK(found == want);
            for (int32_t k = 0; k < found; k++) { // each hit touches, and once
                const int32_t i = (int32_t)hits[k].user;
                NB_CHECK(i >= 0 && i < N && live[i] && hits[k].handle.bits == h[i].bits);
                NB_CHECK(nbo_rect_touch(&r[i], &win) && nbo_item_passes(qf, f[i]));
                for (int32_t j = 0; j < k; j++) NB_CHECK(hits[j].user != hits[k].user);
            }
        }
        int64_t pairs = -1, want_pairs = 0;
        for (int32_t i = 0; i < N; i++)
            for (int32_t j = i + 1; j < N; j++)
                want_pairs += live[i] && live[j] && nbo_rect_touch(&r[i], &r[j]) &&
                              (f[i].category & f[j].mask) && (f[j].category & f[i].mask);
        NB_CHECK_OK(nb_quadtree_count_pairs(qt, &pairs));
        NB_CHECK(pairs == want_pairs);
    }
    nb_quadtree_destroy(qt);
    return 0;
}

// Rectangles wandering about (the moving workload's small steps, every rectangle every round)
// in big leaves: the moves stay in their nodes, so segment boxes and the float boxes of nodes
// and their ancestors are computed anew as rectangles leave them (nbi_box_move). Each round is
// checked by validate and by windows (each rectangle's own box, as the benchmark asks) and
// pairs against brute force.
static int test_wander(void)
{
    enum { N = 2500, ROUNDS = 40 };
    static nbRect r[N];
    static nbHandle h[N];
    static nbHit hits[N];
    const double world = 30.0;
    for (int32_t i = 0; i < N; i++) r[i] = sized_rect(world, 30.0);
    nbQuadtreeDesc desc = {0};
    desc.bounds = (nbRect){{-world, -world}, {world, world}};
    nbQuadtree *qt = NULL;
    NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
    NB_CHECK_OK(nb_quadtree_build(qt, r, N, NULL, NULL, h));
    for (int round = 0; round <= ROUNDS; round++) {
        for (int32_t i = 0; round > 0 && i < N; i++) {
            const double step[2] = {nbt_range(-0.5, 0.5), nbt_range(-0.5, 0.5)};
            for (int a = 0; a < 2; a++) {
                r[i].min[a] += step[a];
                r[i].max[a] += step[a];
            }
            NB_CHECK_OK(nb_quadtree_move(qt, h[i], &r[i]));
        }
        NB_CHECK_OK(nb_quadtree_validate(qt));
        for (int32_t w = 0; w < N; w += 7) {
            int32_t found = -1;
            NB_CHECK_OK(
                nb_quadtree_query_box(qt, NBT_RECT_BOX(&r[w]), NB_FILTER_ALL, hits, N, &found));
            int32_t want = 0;
            for (int32_t i = 0; i < N; i++) want += nbo_rect_touch(&r[i], &r[w]);
            NB_CHECK(found == want);
            for (int32_t k = 0; k < found; k++) {
                const int32_t i = (int32_t)hits[k].user;
                NB_CHECK(i >= 0 && i < N && hits[k].handle.bits == h[i].bits);
                NB_CHECK(nbo_rect_touch(&r[i], &r[w]));
            }
        }
        if (check_pairs(qt, r, N)) return 1;
    }
    nb_quadtree_destroy(qt);
    return 0;
}

// A visitor that keeps what it sees and stops after `left` hits.
typedef struct StopAfter {
    nbHit seen[64];
    int32_t n, left;
} StopAfter;

static bool stop_after(nbHit hit, void *user)
{
    StopAfter *s = user;
    if (s->n < 64) s->seen[s->n] = hit;
    s->n++;
    return --s->left > 0;
}

// A search gathers up to 16 nodes before scanning them (nbi_search_as). With many small nodes,
// windows that meet dozens of them (and hold some whole), and a node of more than 32 segments at
// the depth limit: every window against brute force; a visitor told to stop after k hits gets
// exactly k calls, and they are the first k hits of query_box, in its order (the stop lands in
// the middle of a batch, in a held subtree or a scan).
static int test_batches(void)
{
    enum { N = 3000, DUPS = 700 };
    static nbRect r[N];
    static nbHit hits[N];
    static uint64_t got[N], want[N];
    nbQuadtree *qt = NULL;
    nbQuadtreeDesc desc = {
        .bounds = {{-100.0, -100.0}, {100.0, 100.0}}, .split_threshold = 4, .max_depth = 6};
    NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
    nbHandle h;
    for (int32_t i = 0; i < N; i++) {
        const double x = i < DUPS ? 3.0 : nbt_range(-100.0, 100.0);
        const double y = i < DUPS ? -7.0 : nbt_range(-100.0, 100.0);
        const double s = i < DUPS ? 0.0 : nbt_range(0.0, 2.0);
        r[i] = (nbRect){{x, y}, {x + s, y + s}};
        NB_CHECK_OK(nb_quadtree_insert(qt, &r[i], (uint64_t)i, NB_FILTER_ALL, &h));
    }
    for (int rep = 0; rep < 60; rep++) {
        const double cx = rep == 0 ? 3.0 : nbt_range(-100.0, 100.0);
        const double cy = rep == 0 ? -7.0 : nbt_range(-100.0, 100.0);
        const double half = nbt_range(1.0, 60.0);
        const nbRect w = {{cx - half, cy - half}, {cx + half, cy + half}};
        int32_t found = 0;
        NB_CHECK_OK(nb_quadtree_query_box(qt, NBT_RECT_BOX(&w), NB_FILTER_ALL, hits, N, &found));
        int32_t nw = 0;
        for (int32_t i = 0; i < N; i++)
            if (nbo_rect_touch(&r[i], &w)) want[nw++] = (uint64_t)i;
        NB_CHECK(found == nw);
        for (int32_t i = 0; i < found; i++) got[i] = hits[i].user;
        qsort(got, (size_t)found, sizeof *got, cmp_u64);
        NB_CHECK(memcmp(got, want, (size_t)nw * sizeof *got) == 0);
        if (found == 0) continue;
        const int32_t k = 1 + nbt_int(found < 64 ? found : 64);
        StopAfter st = {.n = 0, .left = k};
        NB_CHECK_OK(nb_quadtree_visit_box(qt, NBT_RECT_BOX(&w), NB_FILTER_ALL, stop_after, &st));
        NB_CHECK(st.n == k);
        for (int32_t i = 0; i < k; i++) NB_CHECK(st.seen[i].handle.bits == hits[i].handle.bits);
    }
    NB_CHECK_OK(nb_quadtree_validate(qt));
    nb_quadtree_destroy(qt);
    return 0;
}

// Every capacity from 0 to `most` for window w (total hits): the status, the full count, the
// first `capacity` hits in query order (as `full` has them), and nothing written past the
// capacity.
static int check_capacities(const nbQuadtree *qt, const nbRect *w, const nbHit *full, int32_t total,
                            int32_t most, nbHit *buf, size_t buf_bytes)
{
    for (int32_t cap = 0; cap <= most; cap++) {
        int32_t found = 0;
        memset(buf, 0xA5, buf_bytes);
        const nbStatus st =
            nb_quadtree_query_box(qt, NBT_RECT_BOX(w), NB_FILTER_ALL, buf, cap, &found);
        NB_CHECK(st == (total <= cap ? NB_OK : NB_ERR_BUFFER_TOO_SMALL));
        NB_CHECK(found == total);
        const int32_t kept = total < cap ? total : cap;
        NB_CHECK(memcmp(buf, full, (size_t)kept * sizeof *buf) == 0);
        const unsigned char *past = (const unsigned char *)(buf + cap);
        for (size_t b = 0; b < 8 * sizeof *buf; b++) NB_CHECK(past[b] == 0xA5);
    }
    return 0;
}

// Buffers of every capacity around a window's count (a search copies a run's hits eight at a
// time while the buffer has room for eight; this fails when that room is misjudged).
static int test_buffer_edges(void)
{
    enum { N = 1200, CAP = 480 };
    static nbHit full[N], buf[CAP + 8];
    nbQuadtree *qt = NULL;
    nbQuadtreeDesc desc = {.bounds = {{0.0, 0.0}, {64.0, 64.0}}};
    NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
    nbHandle h;
    for (int32_t i = 0; i < N; i++) {
        const double x = nbt_range(0.0, 64.0), y = nbt_range(0.0, 64.0), s = nbt_range(0.0, 3.0);
        const nbRect r = {{x, y}, {x + s, y + s}};
        NB_CHECK_OK(nb_quadtree_insert(qt, &r, (uint64_t)i, NB_FILTER_ALL, &h));
    }
    for (int rep = 0; rep < 6; rep++) {
        const double cx = nbt_range(0.0, 64.0), cy = nbt_range(0.0, 64.0);
        const double half = nbt_range(2.0, 12.0);
        const nbRect w = {{cx - half, cy - half}, {cx + half, cy + half}};
        int32_t total = 0;
        NB_CHECK_OK(nb_quadtree_query_box(qt, NBT_RECT_BOX(&w), NB_FILTER_ALL, full, N, &total));
        const int32_t most = total + 9 < CAP ? total + 9 : CAP;
        NB_CHECK(check_capacities(qt, &w, full, total, most, buf, sizeof buf) == 0);
    }
    // Dense runs: one leaf (a block of 512 positions, searched by its run boxes) where every 16
    // rectangles are 15 copies of a box and one far rectangle, so a window on the copies meets
    // every run without holding it: half the runs are all hits, the other half 7 of 8.
    nb_quadtree_clear(qt);
    for (int32_t i = 0; i < 480; i++) {
        const nbRect r = i % 16 == 15 ? (nbRect){{60.0, 60.0}, {61.0, 61.0}}
                                      : (nbRect){{10.0, 10.0}, {11.0, 11.0}};
        NB_CHECK_OK(nb_quadtree_insert(qt, &r, (uint64_t)i, NB_FILTER_ALL, &h));
    }
    const nbRect w = {{10.5, 10.5}, {10.5, 10.5}};
    int32_t total = 0;
    NB_CHECK_OK(nb_quadtree_query_box(qt, NBT_RECT_BOX(&w), NB_FILTER_ALL, full, N, &total));
    NB_CHECK(total == 450);
    NB_CHECK(check_capacities(qt, &w, full, total, total + 9, buf, sizeof buf) == 0);
    NB_CHECK_OK(nb_quadtree_validate(qt));
    nb_quadtree_destroy(qt);
    return 0;
}

// Moves tidy the tree as they add up (nodes of 32 to 1024 rectangles sorted along the curve
// again, their run boxes computed anew): frames of small steps (and now and then a teleport) of
// every rectangle of a few hundred in leaves of about 150, by one nb_quadtree_move_many a frame
// in one tree and one nb_quadtree_move a rectangle in another. Both stay valid, hold the same
// rectangles in the same order (a batch leaves the tree the single moves leave) and answer
// every query as brute force does.
static int test_tidy(void)
{
    memset(&M, 0, sizeof M);
    const double world = 60.0;
    nbQuadtreeDesc desc = {0};
    desc.bounds = (nbRect){{-world, -world}, {world, world}};
    nbQuadtree *qt = NULL, *one = NULL;
    static nbHandle h1[MAXN], items[MAXN], items1[MAXN];
    static nbRect to[MAXN];
    if (twins(&desc, MAXN, world, &qt, &one, h1) != 0) return 1;
    for (int frame = 0; frame < 40; frame++) {
        for (int32_t i = 0; i < MAXN; i++) {
            nbRect r = M.r[i];
            if (nbt_int(50) == 0) {
                r = random_rect(world);
            } else {
                const double dx = nbt_range(-1.0, 1.0), dy = nbt_range(-1.0, 1.0);
                r = (nbRect){{r.min[0] + dx, r.min[1] + dy}, {r.max[0] + dx, r.max[1] + dy}};
            }
            M.r[i] = to[i] = r;
            items[i] = M.h[i];
            items1[i] = h1[i];
        }
        NB_CHECK_OK(nb_quadtree_move_many(qt, items, to, MAXN, NULL));
        for (int32_t i = 0; i < MAXN; i++) NB_CHECK_OK(nb_quadtree_move(one, items1[i], &to[i]));
        NB_CHECK_OK(nb_quadtree_validate(qt));
        NB_CHECK_OK(nb_quadtree_validate(one));
        NB_CHECK(nb_quadtree_count(qt) == MAXN && same_trees(qt, one) == 0);
        if (frame % 4 == 3) NB_CHECK(check_queries(qt, world) == 0);
    }
    // 24,000 moves at 8 for each of about 150 rectangles a node: some 20 tidyings, more than
    // one round of the nodes.
    nbQuadtreeInfo info;
    NB_CHECK_OK(nb_quadtree_info(qt, &info));
    NB_CHECK(info.tidied >= 10);
    nb_quadtree_destroy(qt);
    nb_quadtree_destroy(one);
    return 0;
}

// -0 and +0 are equal as doubles, so a rectangle at y = -0 lies within a root whose bounds
// start at +0; when the root then grows, the old root's float box is made from its bounds and
// must still hold the rectangle's float box (fuzz_quadtree found a tree where it did not: -0
// rounded down was one float step below +0 rounded down).
static int test_minus_zero(void)
{
    for (int way = 0; way < 2; way++) {
        nbQuadtree *qt = NULL;
        // A root cell of [7.5, 22.5]^2, so loose bounds of [0, 30]^2.
        nbQuadtreeDesc desc = {.bounds = {{7.5, 7.5}, {22.5, 22.5}}, .split_threshold = 1};
        NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
        nbHandle h;
        const nbRect in = {{5.0, 5.0}, {6.0, 6.0}}, far = {{-50.0, -50.0}, {-49.0, -49.0}};
        const nbRect z = {{24.5, -0.0}, {27.25, 0.0}}, z2 = {{-0.0, 3.0}, {0.0, 4.0}};
        NB_CHECK_OK(nb_quadtree_insert(qt, &in, 0, NB_FILTER_ALL, &h));
        NB_CHECK_OK(nb_quadtree_insert(qt, way == 0 ? &z : &z2, 2, NB_FILTER_ALL, &h));
        NB_CHECK_OK(nb_quadtree_validate(qt));
        NB_CHECK_OK(nb_quadtree_insert(qt, &far, 1, NB_FILTER_ALL, &h)); // the root grows
        NB_CHECK_OK(nb_quadtree_validate(qt));
        nbHit hits[4];
        int32_t found = 0;
        const nbRect w = {{-0.0, -0.0}, {30.0, 0.0}}; // touches z and z2 on their zero edges
        NB_CHECK_OK(nb_quadtree_query_box(qt, NBT_RECT_BOX(&w), NB_FILTER_ALL, hits, 4, &found));
        NB_CHECK(found == (way == 0 ? 1 : 0) && (found == 0 || hits[0].user == 2));
        nb_quadtree_destroy(qt);
    }
    return 0;
}

// A build gives rectangle i slot i (nb_quadtree_build), so the ties that go by lower slot go by
// lower index. Every even rectangle holds the query point (distance 0: all tie), and they grow
// with the index, so the layout, which places the larger ones in higher nodes and lays a node
// out before its children, puts them in about the reverse order; the odd ones lie apart, so
// that the tree splits.
static int test_build_slot_order(void)
{
    enum { N = 2000, K = 40 };
    static nbRect rs[N];
    static uint64_t users[N];
    static nbHandle hs[N];
    for (int32_t i = 0; i < N; i++) {
        if (i % 2 == 0) {
            const double half = 0.05 + 0.005 * i;
            rs[i] = (nbRect){{32.0 - half, 32.0 - half}, {32.0 + half, 32.0 + half}};
        } else {
            const double x = nbt_range(45.0, 62.0), y = nbt_range(45.0, 62.0);
            rs[i] = (nbRect){{x, y}, {x + 1.0, y + 1.0}};
        }
        users[i] = (uint64_t)(N - i); // not the index: the slot decides, not the user value
    }
    nbQuadtree *qt = NULL;
    nbQuadtreeDesc desc = {.bounds = {{0.0, 0.0}, {64.0, 64.0}}};
    NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
    NB_CHECK_OK(nb_quadtree_build(qt, rs, N, users, NULL, hs));
    for (int32_t i = 0; i < N; i++) NB_CHECK((uint32_t)hs[i].bits - 1u == (uint32_t)i);
    nbHitNeighbor out[K];
    int32_t found = 0;
    const double p[2] = {32.0, 32.0};
    NB_CHECK_OK(nb_quadtree_knn(qt, p, NB_FILTER_ALL, (double)INFINITY, out, K, &found));
    NB_CHECK(found == K);
    for (int32_t k = 0; k < K; k++)
        NB_CHECK(out[k].dist2 == 0.0 && out[k].hit.user == (uint64_t)(N - 2 * k));
    NB_CHECK_OK(nb_quadtree_validate(qt));
    nb_quadtree_destroy(qt);
    return 0;
}

// A build fills each node's block at once (every per-position copy, then the run boxes or the
// one segment box from what the block holds): counts about the block classes' edges (8, 16, 32)
// and small thresholds, so that nodes of every class hold rectangles, each with its own user
// value and filter bits. Validate, then each handle's rectangle, user value and filter, and
// filtered windows against brute force.
static int test_build_blocks(void)
{
    enum { BN = 700 };
    static nbRect r[BN];
    static uint64_t users[BN];
    static nbFilter filters[BN];
    static nbHandle h[BN];
    static nbHit hits[BN];
    static const int32_t counts[] = {1, 7, 8, 9, 16, 17, 31, 32, 33, 64, 65, 300, BN};
    static const int32_t thresholds[] = {8, 16, 40, 0};
    for (int placement = NB_QUADTREE_LOOSE; placement <= NB_QUADTREE_TIGHT; placement++)
        for (size_t t = 0; t < sizeof thresholds / sizeof thresholds[0]; t++)
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                const int32_t n = counts[c];
                for (int32_t i = 0; i < n; i++) {
                    const double x = nbt_range(-50.0, 50.0), y = nbt_range(-50.0, 50.0);
                    const double w = 0.1 * pow(300.0, nbt_unit()), v = 0.1 * pow(300.0, nbt_unit());
                    r[i] = (nbRect){{x - w, y - v}, {x + w, y + v}};
                    if (i % 5 == 0) r[i] = (nbRect){{-w, -v}, {w, v}}; // centred on the middle
                    users[i] = 1000003u * (uint64_t)i + 7u;
                    filters[i] = (nbFilter){1u << (i % 3), i % 4 == 0 ? 1u : NB_FILTER_ALL.mask};
                }
                nbQuadtreeDesc desc = {.split_threshold = thresholds[t], .placement = placement};
                nbQuadtree *qt = NULL;
                NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
                NB_CHECK_OK(nb_quadtree_build(qt, r, n, users, filters, h));
                NB_CHECK_OK(nb_quadtree_validate(qt));
                for (int32_t i = 0; i < n; i++) {
                    nbRect got;
                    uint64_t user = 0;
                    nbFilter f = {0, 0};
                    NB_CHECK_OK(nb_quadtree_get(qt, h[i], &got, &user, &f));
                    NB_CHECK(memcmp(&got, &r[i], sizeof got) == 0 && user == users[i]);
                    NB_CHECK(f.category == filters[i].category && f.mask == filters[i].mask);
                }
                for (int k = 0; k < 20; k++) {
                    const double x = nbt_range(-60.0, 60.0), y = nbt_range(-60.0, 60.0);
                    const double e = nbt_range(0.0, 30.0);
                    const nbRect win = {{x - e, y - e}, {x + e, y + e}};
                    const nbFilter q = {k % 2 == 0 ? 1u : 6u, k % 3 == 0 ? 2u : NB_FILTER_ALL.mask};
                    int32_t found = -1, want = 0;
                    uint64_t sum = 0, wsum = 0;
                    NB_CHECK_OK(nb_quadtree_query_box(qt, NBT_RECT_BOX(&win), q, hits, BN, &found));
                    for (int32_t i = 0; i < n; i++)
                        if (nbo_rect_touch(&r[i], &win) && (q.category & filters[i].mask) != 0 &&
                            (filters[i].category & q.mask) != 0) {
                            want++;
                            wsum += users[i];
                        }
                    for (int32_t i = 0; i < found; i++) sum += hits[i].user;
                    NB_CHECK(found == want && sum == wsum);
                }
                int64_t pairs = -1, want = 0; // the pair rule: each's category in the other's mask
                for (int32_t i = 0; i < n; i++)
                    for (int32_t j = i + 1; j < n; j++)
                        want += nbo_rect_touch(&r[i], &r[j]) &&
                                (filters[i].category & filters[j].mask) != 0 &&
                                (filters[j].category & filters[i].mask) != 0;
                NB_CHECK_OK(nb_quadtree_count_pairs(qt, &pairs));
                NB_CHECK(pairs == want);
                nb_quadtree_destroy(qt);
            }
    return 0;
}

// ---- the root finds the data ----

enum { PN = 12000, PW = 120 };

// Touching pairs among r[0, n) by a sweep along x (sorted by min x): independent of the tree.
static int cmp_min_x(const void *a, const void *b)
{
    const nbRect *x = a, *y = b;
    return x->min[0] < y->min[0] ? -1 : x->min[0] > y->min[0];
}

static int64_t sweep_pairs(const nbRect *r, int32_t n)
{
    static nbRect s[PN + PN / 2];
    memcpy(s, r, (size_t)n * sizeof *r);
    qsort(s, (size_t)n, sizeof *s, cmp_min_x);
    int64_t pairs = 0;
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = i + 1; j < n && s[j].min[0] <= s[i].max[0]; j++)
            pairs += nbo_rect_touch(&s[i], &s[j]);
    return pairs;
}

// A tree holding r[0, n) (handle h[i] for r[i], user value i): windows over the data's box
// against brute force, pairs against the sweep, validate, and at most 2% of the rectangles held
// above the leaves (the loose placement; the tight one holds every rectangle that straddles a
// split line above it, a few per cent of these: at most 10%).
static int check_placed(const nbQuadtree *qt, int placement, const nbRect *r, int32_t n,
                        const double *box, const char *what)
{
    const int32_t most = placement == NB_QUADTREE_TIGHT ? n / 10 : n / 50;
    static nbHit hits[PN + PN / 2];
    nbQuadtreeInfo info;
    NB_CHECK_OK(nb_quadtree_validate(qt));
    NB_CHECK_OK(nb_quadtree_info(qt, &info));
    if (!(info.count == n && info.held_above <= most && info.outside == 0)) {
        fprintf(stderr, "  %s: %d of %d held above the leaves, %d outside, depth %d\n", what,
                (int)info.held_above, (int)n, (int)info.outside, (int)info.depth);
        return 1;
    }
    const double sx = box[2] - box[0], sy = box[3] - box[1];
    for (int k = 0; k < PW; k++) {
        const double cx = box[0] + sx * nbt_unit(), cy = box[1] + sy * nbt_unit();
        const double hx = 0.002 * sx * (1.0 + 20.0 * nbt_unit()), hy = 0.002 * sy * nbt_unit();
        const nbRect w = {{cx - hx, cy - hy}, {cx + hx, cy + hy}};
        int32_t found = -1, want = 0;
        NB_CHECK_OK(
            nb_quadtree_query_box(qt, NBT_RECT_BOX(&w), NB_FILTER_ALL, hits, PN + PN / 2, &found));
        uint64_t sum = 0, wsum = 0;
        for (int32_t i = 0; i < n; i++)
            if (nbo_rect_touch(&r[i], &w)) {
                want++;
                wsum += (uint64_t)i;
            }
        for (int32_t i = 0; i < found; i++) sum += hits[i].user;
        NB_CHECK(found == want && sum == wsum);
    }
    int64_t pairs = -1;
    NB_CHECK_OK(nb_quadtree_count_pairs(qt, &pairs));
    NB_CHECK(pairs == sweep_pairs(r, n));
    return 0;
}

// Rectangles of sides log-uniform in [0.1, 10] (in units of a 2000-wide box: scaled by its side
// / 2000) with centres uniform over box.
static void placed_rects(nbRect *r, int32_t n, const double *box)
{
    const double unit = (box[2] - box[0]) / 2000.0;
    for (int32_t i = 0; i < n; i++) {
        const double c[2] = {nbt_range(box[0], box[2]), nbt_range(box[1], box[3])};
        for (int a = 0; a < 2; a++) {
            const double half = 0.05 * unit * pow(100.0, nbt_unit());
            r[i].min[a] = c[a] - half;
            r[i].max[a] = c[a] + half;
        }
    }
}

// A default desc (the root's hint [-1024, 1024]^2) on data placed elsewhere: a build, inserts one
// by one, and moves (frames of small steps, reflected at the box's edges, then a drift of the
// whole set by a tenth of the box) each leave at most 2% of the rectangles above the leaves, and
// answer windows and pairs as brute force does. It fails when the root keeps the hint's cell
// (rectangles whose centre lies outside it can never go down).
static int test_root_fits(void)
{
    static const double boxes[][4] = {
        {0.0, 0.0, 2000.0, 2000.0},                                   // all positive
        {-3e7 - 1000.0, -3e7 - 1000.0, -3e7 + 1000.0, -3e7 + 1000.0}, // far from the origin
        {1e9, 1e9, 1e9 + 2000.0, 1e9 + 2000.0},                       // far, positive
        {0.0, 0.0, 1920.0, 1080.0},                                   // a screen
        {-50.0, -50.0, 50.0, 50.0},                                   // well inside the hint
        {5e5, 4e6, 5e5 + 20000.0, 4e6 + 20000.0}, // UTM-like, wider than the hint
    };
    enum { ALL = PN + PN / 2 };
    static nbRect r[ALL];
    static nbHandle h[ALL];
    static uint64_t users[ALL];
    for (int32_t i = 0; i < ALL; i++) users[i] = (uint64_t)i;
    for (size_t b = 0; b < sizeof boxes / sizeof boxes[0]; b++) {
        const double *box = boxes[b];
        placed_rects(r, PN, box);
        for (int placement = 1; placement <= 2; placement++) {
            nbQuadtreeDesc desc = {0}; // the bounds left to their default
            desc.placement = placement;
            desc.split_threshold = 128; // a deeper tree than the default's, more splits
            nbQuadtree *qt = NULL;
            NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
            NB_CHECK_OK(nb_quadtree_build(qt, r, PN, users, NULL, h));
            if (check_placed(qt, placement, r, PN, box, "build") != 0) return 1;
            // The same by inserts, into the tree emptied by removals, and into a new tree.
            for (int32_t i = 0; i < PN; i++) NB_CHECK_OK(nb_quadtree_remove(qt, h[i]));
            for (int32_t i = 0; i < PN; i++)
                NB_CHECK_OK(nb_quadtree_insert(qt, &r[i], (uint64_t)i, NB_FILTER_ALL, &h[i]));
            if (check_placed(qt, placement, r, PN, box, "inserts after removals") != 0) return 1;
            nbQuadtree *fresh = NULL;
            NB_CHECK_OK(nb_quadtree_create(&desc, &fresh));
            nbHandle hf;
            for (int32_t i = 0; i < PN; i++)
                NB_CHECK_OK(nb_quadtree_insert(fresh, &r[i], (uint64_t)i, NB_FILTER_ALL, &hf));
            if (check_placed(fresh, placement, r, PN, box, "inserts") != 0) return 1;
            nb_quadtree_destroy(fresh);
            // Frames of moves: small steps reflected at the box's edges, then a drift by a tenth
            // of the box (the whole set leaves the root it was built for).
            NB_CHECK_OK(nb_quadtree_build(qt, r, PN, users, NULL, h));
            const double step = (box[2] - box[0]) / 400.0;
            for (int f = 0; f < 4; f++) {
                for (int32_t i = 0; i < PN; i++)
                    for (int a = 0; a < 2; a++) {
                        double d = f < 3 ? nbt_range(-step, step) : 0.1 * (box[2] - box[0]);
                        const double c = 0.5 * (r[i].min[a] + r[i].max[a]);
                        if (f < 3 && (c + d < box[a] || c + d > box[2 + a])) d = -d;
                        r[i].min[a] += d;
                        r[i].max[a] += d;
                    }
                int32_t moved = -1;
                NB_CHECK_OK(nb_quadtree_move_many(qt, h, r, PN, &moved));
                NB_CHECK(moved == PN);
            }
            const double drifted[4] = {
                box[0] + 0.1 * (box[2] - box[0]), box[1] + 0.1 * (box[2] - box[0]),
                box[2] + 0.1 * (box[2] - box[0]), box[3] + 0.1 * (box[2] - box[0])};
            if (check_placed(qt, placement, r, PN, drifted, "moves") != 0) {
                fprintf(stderr, "  (box %d, placement %d)\n", (int)b, placement);
                return 1;
            }
            // A spread: every rectangle moves away from the middle by a tenth of its distance
            // (many into the margins of their nodes' bounds, out of their quadrants), then half
            // as many again come in among them, so that leaves split: a rectangle kept by a move
            // outside its node's quadrant would be held above the leaves from then on.
            const double mid[2] = {0.5 * (drifted[0] + drifted[2]),
                                   0.5 * (drifted[1] + drifted[3])};
            for (int32_t i = 0; i < PN; i++)
                for (int a = 0; a < 2; a++) {
                    const double d = 0.1 * (0.5 * (r[i].min[a] + r[i].max[a]) - mid[a]);
                    r[i].min[a] += d;
                    r[i].max[a] += d;
                }
            NB_CHECK_OK(nb_quadtree_move_many(qt, h, r, PN, NULL));
            const double spread[4] = {mid[0] - 0.55 * (drifted[2] - drifted[0]),
                                      mid[1] - 0.55 * (drifted[3] - drifted[1]),
                                      mid[0] + 0.55 * (drifted[2] - drifted[0]),
                                      mid[1] + 0.55 * (drifted[3] - drifted[1])};
            placed_rects(r + PN, ALL - PN, spread);
            for (int32_t i = PN; i < ALL; i++)
                NB_CHECK_OK(nb_quadtree_insert(qt, &r[i], (uint64_t)i, NB_FILTER_ALL, &h[i]));
            if (check_placed(qt, placement, r, ALL, spread, "spread") != 0) {
                fprintf(stderr, "  (box %d, placement %d)\n", (int)b, placement);
                return 1;
            }
            nb_quadtree_destroy(qt);
            placed_rects(r, PN, box); // back where they were
        }
    }
    return 0;
}

// Bulk calls check every item before changing anything, and the first bad item decides; within
// one item: its handle (move_many), then finiteness, then range.
static int test_check_order(void)
{
    nbQuadtree *qt = NULL;
    nbQuadtreeDesc desc = {0};
    NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
    nbRect rs[6];
    nbHandle h[6];
    for (int i = 0; i < 6; i++) rs[i] = (nbRect){{i, i}, {i + 1.0, i + 1.0}};
    NB_CHECK_OK(nb_quadtree_build(qt, rs, 6, NULL, NULL, h));
    const uint64_t before = fingerprint(qt);
    const nbRect inv = {{1.0, 0.0}, {0.0, 1.0}}, nan = {{(double)NAN, 0.0}, {1.0, 1.0}};
    const nbRect both = {{1.0, (double)NAN}, {0.0, 1.0}}; // inverted in x, NaN in y
    const nbRect inf = {{0.0, 0.0}, {(double)INFINITY, 1.0}};
    struct {
        int at1, at2; // where the two bad rectangles go (-1: none)
        const nbRect *bad1, *bad2;
        nbStatus want;
    } cases[] = {
        {1, 4, &inv, &nan, NB_ERR_OUT_OF_RANGE}, {1, 4, &nan, &inv, NB_ERR_NOT_FINITE},
        {0, 5, &inv, &inf, NB_ERR_OUT_OF_RANGE}, {2, -1, &both, NULL, NB_ERR_NOT_FINITE},
        {3, 2, &inv, &both, NB_ERR_NOT_FINITE},  {5, 0, &nan, &inv, NB_ERR_OUT_OF_RANGE},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        nbRect t[6];
        memcpy(t, rs, sizeof t);
        t[cases[c].at1] = *cases[c].bad1;
        if (cases[c].at2 >= 0) t[cases[c].at2] = *cases[c].bad2;
        nbHandle out[6] = {{7}, {7}, {7}, {7}, {7}, {7}};
        NB_CHECK_STATUS(nb_quadtree_build(qt, t, 6, NULL, NULL, out), cases[c].want);
        NB_CHECK(out[0].bits == 7 && out[5].bits == 7 && fingerprint(qt) == before);
        int32_t moved = -1;
        NB_CHECK_STATUS(nb_quadtree_move_many(qt, h, t, 6, &moved), cases[c].want);
        NB_CHECK(moved == 0 && fingerprint(qt) == before);
    }
    // A stale handle is the item's first check: before its own rectangle's, after an earlier
    // item's.
    nbHandle stale[6];
    memcpy(stale, h, sizeof stale);
    NB_CHECK_OK(nb_quadtree_remove(qt, h[3]));
    nbRect t[6];
    memcpy(t, rs, sizeof t);
    t[3] = nan;
    int32_t moved = -1;
    NB_CHECK_STATUS(nb_quadtree_move_many(qt, stale, t, 6, &moved), NB_ERR_BAD_HANDLE);
    t[1] = inv;
    NB_CHECK_STATUS(nb_quadtree_move_many(qt, stale, t, 6, &moved), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(moved == 0);
    NB_CHECK_STATUS(nb_quadtree_build(qt, NULL, 6, NULL, NULL, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_OK(nb_quadtree_validate(qt));
    nb_quadtree_destroy(qt);
    return 0;
}

// Narrows [*t0, *t1] to where a ray from o along d lies within [lo, hi] on one axis, in long
// double (whose range holds every difference of two doubles).
static void slab_ld(long double o, long double d, long double lo, long double hi, long double *t0,
                    long double *t1)
{
    if (d == 0.0L) {
        if (o < lo || o > hi) { // never within: an empty interval
            *t0 = (long double)INFINITY;
            *t1 = -(long double)INFINITY;
        }
        return;
    }
    const long double ta = (lo - o) / d, tb = (hi - o) / d;
    *t0 = fmaxl(*t0, fminl(ta, tb));
    *t1 = fminl(*t1, fmaxl(ta, tb));
}

// Rays and rectangles near the largest double: the slab test's differences overflow there. Each
// ray's hits against the same test in long double (whose range holds every difference), with
// the rectangles kept apart from the rays by far more than a rounding: the same rectangles hit,
// t as near as double allows, +infinity only for a hit beyond the largest double.
static int test_ray_huge(void)
{
    enum { N = 48, RAYS = 3000 };
    static nbRect r[N];
    const double big = 1.7e308;
    for (int i = 0; i < N; i++)
        for (int a = 0; a < 2; a++) {
            const double lo = big * (2.0 * nbt_unit() - 1.0), side = nbt_range(1e305, 2e307);
            r[i].min[a] = lo;
            r[i].max[a] = lo + side < DBL_MAX ? lo + side : DBL_MAX;
        }
    r[0] = (nbRect){{-big, -1.0e308}, {-1.6e308, -0.9e308}}; // missed by the diagonal below
    nbQuadtree *qt = NULL;
    nbQuadtreeDesc desc = {0};
    NB_CHECK_OK(nb_quadtree_create(&desc, &qt));
    NB_CHECK_OK(nb_quadtree_build(qt, r, N, NULL, NULL, NULL));
    static nbRayHit hits[N];
    for (int k = 0; k < RAYS; k++) {
        double o[2] = {big * (2.0 * nbt_unit() - 1.0), big * (2.0 * nbt_unit() - 1.0)};
        double dir[2] = {nbt_gauss(), nbt_gauss()};
        if (k == 0) {
            o[0] = o[1] = big;
            dir[0] = dir[1] = -1.0;
        }
        if (dir[0] == 0.0 && dir[1] == 0.0) dir[0] = 1.0;
        const double m = fmax(fabs(dir[0]), fabs(dir[1]));
        const double x = dir[0] / m, y = dir[1] / m, len = sqrt(x * x + y * y);
        const long double d[2] = {(long double)(x / len), (long double)(y / len)};
        bool want[N];
        long double wt[N];
        bool near = false; // an edge too close to call in double: skip the ray
        for (int i = 0; i < N; i++) {
            long double t0 = 0.0L, t1 = (long double)INFINITY;
            for (int a = 0; a < 2; a++)
                slab_ld((long double)o[a], d[a], (long double)r[i].min[a], (long double)r[i].max[a],
                        &t0, &t1);
            const long double gap = fabsl(t1 - t0) / (fabsl(t0) + fabsl(t1) + 1.0L);
            if (gap < 1e-9L) near = true;
            want[i] = t0 <= t1;
            wt[i] = t0;
        }
        if (near) continue;
        int32_t found = -1;
        NB_CHECK_OK(
            nb_quadtree_raycast_all(qt, o, dir, (double)INFINITY, NB_FILTER_ALL, hits, N, &found));
        int32_t nw = 0;
        for (int i = 0; i < N; i++) nw += want[i];
        if (found != nw) {
            fprintf(stderr, "  ray %d: %d hits, want %d\n", k, (int)found, (int)nw);
            return 1;
        }
        for (int32_t j = 0; j < found; j++) {
            const int i = (int)hits[j].hit.user;
            NB_CHECK(want[i]);
            if (wt[i] > (long double)DBL_MAX)
                NB_CHECK(hits[j].t == (double)INFINITY);
            else
                NB_CHECK(fabsl((long double)hits[j].t - wt[i]) <= 1e-12L * wt[i] + 1e-300L);
        }
    }
    nb_quadtree_destroy(qt);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"loose_sequences", test_loose_sequences},
        {"tight_sequences", test_tight_sequences},
        {"duplicates_depth", test_duplicates_depth},
        {"outside", test_outside},
        {"visit_nodes", test_visit_nodes},
        {"refused", test_refused},
        {"failing_allocator", test_failing_allocator},
        {"zero_alloc_moving", test_zero_alloc_moving},
        {"rebuild_no_alloc", test_rebuild_no_alloc},
        {"rebuild_fails", test_rebuild_fails},
        {"stop_and_buffers", test_stop_and_buffers},
        {"radius_underflow", test_radius_underflow},
        {"float_edges", test_float_edges},
        {"q16_edges", test_q16_edges},
        {"segments", test_segments},
        {"wander", test_wander},
        {"batches", test_batches},
        {"buffer_edges", test_buffer_edges},
        {"move_many", test_move_many},
        {"move_many_oom", test_move_many_oom},
        {"build_slot_order", test_build_slot_order},
        {"build_blocks", test_build_blocks},
        {"tidy", test_tidy},
        {"minus_zero", test_minus_zero},
        {"root_fits", test_root_fits},
        {"check_order", test_check_order},
        {"ray_huge", test_ray_huge},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
