// SPDX-License-Identifier: MIT
// Fuzz target for the quadtree of rectangles (include/nearby/quadtree.h).
//
// The input is a little program over one tree. A header decodes the desc (placement, split
// threshold, max depth, root bounds, capacity hint) and an allocation-failure schedule; each
// following byte picks an operation and decodes its arguments: insert, move, a batch of moves
// (nb_quadtree_move_many), remove, set (live or stale handles), build (the live rectangles plus
// new ones, replacing everything), clear, reserve, an allocation-failure schedule, window / point /
// radius / kNN / ray (first and all) queries, pairs and cross pairs. Coordinates come mostly from a
// quarter-unit lattice (so edges and corners touch exactly, and duplicates and zero-size rectangles
// are common), sometimes from the edge values of nb_fuzz.h (NaN, infinities, huge, subnormal) or
// raw bits.
//
// A reference model keeps every live rectangle (bounds, user value, filter bits, handle) and a
// ring of stale handles. Every status must be one quadtree.h allows for the arguments; a failed
// call must change nothing (count, validate, every rectangle through nb_quadtree_get); after
// every op nb_quadtree_validate() passes and the count matches. Queries are checked exactly
// against brute force over the model: sets of hits, kNN and ray order (distance, then slot),
// pairs with the lower slot first, truncated buffers (the full count). NB_FUZZ_TRACE=1 prints
// the decoded calls.
#define _POSIX_C_SOURCE 200809L

#include <nearby/quadtree.h>

#include "nb_fuzz.h"
#include "nb_oracle.h"

enum {
    QF_MAX = 160,  ///< rectangles the fuzzer allows
    QF_STALE = 32, ///< stale handles remembered (a ring)
    QF_OPS = 800,  ///< operations per input
    QF_CAP = 512,  ///< query buffers
};

typedef struct qfModel {
    nbQuadtree *t;
    int32_t n;
    nbRect r[QF_MAX];
    uint64_t user[QF_MAX];
    nbFilter f[QF_MAX];
    nbHandle h[QF_MAX];
    nbHandle stale[QF_STALE];
    int32_t nstale, stale_next;
} qfModel;

static qfModel qm;
static uint64_t qf_user_seq;

#define QF_ALLOWED(s) (NBF_BIT(s) | NBF_BIT(NB_ERR_OUT_OF_MEMORY))

static double qf_coord(nbfReader *rd)
{
    const uint8_t k = nbf_u8(rd);
    if (k < 220) return (double)(int8_t)nbf_u8(rd) * 0.25;
    if (k < 245) return nbf_special(nbf_u8(rd));
    return nbf_raw(rd);
}

static nbRect qf_rect(nbfReader *rd)
{
    nbRect r;
    r.min[0] = qf_coord(rd);
    r.min[1] = qf_coord(rd);
    const uint8_t shape = nbf_u8(rd);
    for (int a = 0; a < 2; a++) {
        if (shape < 200) // a non-negative size from the lattice, now and then large
            r.max[a] = r.min[a] + (double)(nbf_u8(rd) & (shape < 180 ? 15 : 255)) * 0.25;
        else
            r.max[a] = qf_coord(rd); // anything, inverted included
    }
    return r;
}

static nbStatus qf_rect_status(const nbRect *r)
{
    for (int a = 0; a < 2; a++)
        if (!isfinite(r->min[a]) || !isfinite(r->max[a])) return NB_ERR_NOT_FINITE;
    for (int a = 0; a < 2; a++)
        if (r->min[a] > r->max[a]) return NB_ERR_OUT_OF_RANGE;
    return NB_OK;
}

static nbFilter qf_filter(nbfReader *rd)
{
    static const uint32_t bits[] = {0xFFFFFFFFu, 1u, 2u, 3u, 0u};
    const uint8_t b = nbf_u8(rd);
    if (b < 160) return NB_FILTER_ALL;
    nbFilter f = {bits[b % 5], bits[(b / 5) % 5]};
    return f;
}

static int qf_cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct qfCand {
    double d;
    uint64_t bits;
} qfCand;

static int qf_cmp_cand(const void *a, const void *b)
{
    const qfCand *x = a, *y = b;
    if (x->d != y->d) return x->d < y->d ? -1 : 1;
    const uint32_t sx = (uint32_t)x->bits, sy = (uint32_t)y->bits;
    return sx < sy ? -1 : sx > sy;
}

static void qf_stale_add(nbHandle h)
{
    qm.stale[qm.stale_next] = h;
    qm.stale_next = (qm.stale_next + 1) % QF_STALE;
    if (qm.nstale < QF_STALE) qm.nstale++;
}

// Every live rectangle, as the tree says, must be the model's; and the tree must validate.
static void qf_check_all(const char *what)
{
    NBF_CHECK(nb_quadtree_validate(qm.t) == NB_OK, "%s: validate failed", what);
    NBF_CHECK(nb_quadtree_count(qm.t) == qm.n, "%s: count %d, model %d", what,
              (int)nb_quadtree_count(qm.t), (int)qm.n);
    for (int32_t i = 0; i < qm.n; i++) {
        nbRect r;
        uint64_t u;
        nbFilter f;
        NBF_CHECK(nb_quadtree_get(qm.t, qm.h[i], &r, &u, &f) == NB_OK, "%s: get %d", what, i);
        NBF_CHECK(memcmp(&r, &qm.r[i], sizeof r) == 0 && u == qm.user[i] &&
                      f.category == qm.f[i].category && f.mask == qm.f[i].mask,
                  "%s: rectangle %d differs from the model", what, i);
    }
    for (int32_t s = 0; s < qm.nstale; s++) {
        nbRect r;
        NBF_CHECK(nb_quadtree_get(qm.t, qm.stale[s], &r, NULL, NULL) == NB_ERR_BAD_HANDLE,
                  "%s: a stale handle resolves", what);
    }
}

// A handle: live (index < n), stale, null or forged.
static nbHandle qf_handle(nbfReader *rd, int32_t *index)
{
    const uint8_t k = nbf_u8(rd);
    *index = -1;
    if (k < 200 && qm.n > 0) {
        *index = k % qm.n;
        return qm.h[*index];
    }
    if (k < 230 && qm.nstale > 0) return qm.stale[k % qm.nstale];
    nbHandle h = {k < 240 ? 0u : ((uint64_t)nbf_u16(rd) << 32) | nbf_u8(rd)};
    return h;
}

static void qf_check_hits(const char *what, const nbHit *hits, int32_t found, uint64_t *want,
                          int32_t nw)
{
    static uint64_t got[QF_MAX];
    NBF_CHECK(found == nw, "%s: found %d, brute force %d", what, (int)found, (int)nw);
    for (int32_t i = 0; i < found; i++) got[i] = hits[i].handle.bits;
    qsort(got, (size_t)found, sizeof *got, qf_cmp_u64);
    qsort(want, (size_t)nw, sizeof *want, qf_cmp_u64);
    NBF_CHECK(memcmp(got, want, (size_t)nw * sizeof *got) == 0, "%s: hits differ", what);
}

// nb_quadtree_move_many over 1 to 8 entries (handles of any kind, repeats, targets as the move
// op's): a bad entry (the first bad one's status) moves nothing and says *moved = 0; otherwise
// every entry moves, in order, or an allocation fails midway and the moves before it are made.
static void qf_move_many(nbfReader *rd)
{
    nbf_op = "move_many";
    nbHandle hs[8];
    nbRect to[8];
    int32_t idx[8];
    const int32_t k = 1 + nbf_u8(rd) % 8;
    nbStatus want = NB_OK;
    for (int32_t e = 0; e < k; e++) {
        hs[e] = qf_handle(rd, &idx[e]);
        to[e] = qf_rect(rd);
        if (idx[e] >= 0 && nbf_u8(rd) < 128) { // a small step from where it is now
            const double dx = (double)(int8_t)nbf_u8(rd) * 0.0625;
            to[e] = qm.r[idx[e]];
            to[e].min[0] += dx;
            to[e].max[0] += dx;
        }
        if (want == NB_OK) want = idx[e] < 0 ? NB_ERR_BAD_HANDLE : qf_rect_status(&to[e]);
    }
    if (nbf_u8(rd) < 30) nbf_fail_alloc_after(1 + nbf_u8(rd) % 4, false);
    int32_t moved = -1;
    const nbStatus st = nb_quadtree_move_many(qm.t, hs, to, k, &moved);
    nbf_log("  move_many %d -> %s (%d moved)\n", (int)k, nb_status_str(st), (int)moved);
    if (want != NB_OK) {
        nbf_expect(st, NBF_BIT(want), "move_many");
        NBF_CHECK(moved == 0, "move_many: refused but %d moved", (int)moved);
        return;
    }
    nbf_expect(st, QF_ALLOWED(NB_OK), "move_many");
    NBF_CHECK(st == NB_OK ? moved == k : moved >= 0 && moved < k, "move_many: %d of %d moved",
              (int)moved, (int)k);
    for (int32_t e = 0; e < moved; e++) qm.r[idx[e]] = to[e]; // a repeat ends at its last
}

static void qf_queries(nbfReader *rd, uint8_t op)
{
    static nbHit hits[QF_CAP];
    static uint64_t want[QF_MAX];
    static qfCand cand[QF_MAX];
    const nbFilter qf = qf_filter(rd);
    int32_t found = -1, nw = 0;
    nbStatus st;
    if (op == 0) { // window
        nbRect w = qf_rect(rd);
        if (nbf_u8(rd) > 200) w.min[0] = -(double)INFINITY;
        nbStatus want_st = NB_OK;
        for (int a = 0; a < 2; a++)
            if (isnan(w.min[a]) || isnan(w.max[a])) want_st = NB_ERR_NOT_FINITE;
        for (int a = 0; a < 2 && want_st == NB_OK; a++)
            if (w.min[a] > w.max[a]) want_st = NB_ERR_OUT_OF_RANGE;
        const int32_t cap = nbf_u8(rd) < 30 ? 1 : QF_CAP;
        st = nb_quadtree_query_box(qm.t, NBT_RECT_BOX(&w), qf, hits, cap, &found);
        nbf_log("  query_box -> %s, %d\n", nb_status_str(st), (int)found);
        if (want_st != NB_OK) {
            NBF_CHECK(st == want_st && found == 0, "query_box: %s", nb_status_str(st));
            return;
        }
        for (int32_t i = 0; i < qm.n; i++)
            if (nbo_rect_touch(&qm.r[i], &w) && nbo_item_passes(qf, qm.f[i]))
                want[nw++] = qm.h[i].bits;
        if (cap == 1 && nw > 1) {
            NBF_CHECK(st == NB_ERR_BUFFER_TOO_SMALL && found == nw, "query_box truncated");
            return;
        }
        NBF_CHECK(st == NB_OK, "query_box: %s", nb_status_str(st));
        qf_check_hits("query_box", hits, found, want, nw);
    } else if (op == 1 || op == 2) { // point, radius
        double p[2] = {qf_coord(rd), qf_coord(rd)};
        const double radius =
            op == 1 ? 0.0 : (nbf_u8(rd) < 240 ? nbf_u8(rd) * 0.125 : qf_coord(rd));
        if (op == 1)
            st = nb_quadtree_query_point(qm.t, p, qf, hits, QF_CAP, &found);
        else
            st = nb_quadtree_query_radius(qm.t, p, radius, qf, hits, QF_CAP, &found);
        nbf_log("  %s (%g, %g) r %g -> %s, %d\n", op == 1 ? "query_point" : "query_radius", p[0],
                p[1], radius, nb_status_str(st), (int)found);
        if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(radius)) {
            NBF_CHECK(st == NB_ERR_NOT_FINITE && found == 0, "point/radius: %s", nb_status_str(st));
            return;
        }
        if (radius < 0.0) {
            NBF_CHECK(st == NB_ERR_OUT_OF_RANGE, "radius < 0: %s", nb_status_str(st));
            return;
        }
        NBF_CHECK(st == NB_OK, "point/radius: %s", nb_status_str(st));
        const nbRect pr = {{p[0], p[1]}, {p[0], p[1]}}; // a point query asks for containment
        for (int32_t i = 0; i < qm.n; i++) {
            const bool in = op == 1 ? nbo_rect_touch(&qm.r[i], &pr)
                                    : nbo_rect_d2(p, &qm.r[i]) <= radius * radius;
            if (in && nbo_item_passes(qf, qm.f[i])) want[nw++] = qm.h[i].bits;
        }
        qf_check_hits("point/radius", hits, found, want, nw);
    } else if (op == 3 || op == 4) { // kNN, rays
        double p[2] = {qf_coord(rd), qf_coord(rd)};
        const uint8_t lim = nbf_u8(rd);
        const double maxd = lim < 60 ? (double)INFINITY : lim < 250 ? lim * 0.25 : qf_coord(rd);
        static nbHitNeighbor nn[QF_MAX + 1];
        static nbRayHit rays[QF_MAX + 1];
        double dir[2] = {0.0, 0.0};
        int32_t k = nbf_u8(rd) % (QF_MAX + 1);
        if (op == 3) {
            st = nb_quadtree_knn(qm.t, p, qf, maxd, nn, k, &found);
        } else {
            dir[0] = qf_coord(rd);
            dir[1] = qf_coord(rd);
            st = k % 2 ? nb_quadtree_raycast(qm.t, p, dir, maxd, qf, rays, &found)
                       : nb_quadtree_raycast_all(qm.t, p, dir, maxd, qf, rays, k, &found);
        }
        nbf_log("  %s k %d -> %s, %d\n", op == 3 ? "knn" : "raycast", (int)k, nb_status_str(st),
                (int)found);
        bool bad_finite = !isfinite(p[0]) || !isfinite(p[1]) || isnan(maxd);
        if (op == 4) bad_finite = bad_finite || !isfinite(dir[0]) || !isfinite(dir[1]);
        if (bad_finite) {
            NBF_CHECK(st == NB_ERR_NOT_FINITE && found == 0, "knn/ray: %s", nb_status_str(st));
            return;
        }
        if (maxd < 0.0 || (op == 4 && dir[0] == 0.0 && dir[1] == 0.0)) {
            NBF_CHECK(st == NB_ERR_OUT_OF_RANGE, "knn/ray range: %s", nb_status_str(st));
            return;
        }
        int32_t nc = 0;
        for (int32_t i = 0; i < qm.n; i++) {
            if (!nbo_item_passes(qf, qm.f[i])) continue;
            double d;
            if (op == 3) {
                d = nbo_rect_d2(p, &qm.r[i]);
                if (!(d <= maxd * maxd)) continue;
            } else {
                d = nbo_ray_enter(p, dir, maxd, &qm.r[i]);
                if (d < 0.0) continue;
            }
            cand[nc].d = d;
            cand[nc++].bits = qm.h[i].bits;
        }
        qsort(cand, (size_t)nc, sizeof *cand, qf_cmp_cand);
        if (op == 3) {
            NBF_CHECK(st == NB_OK && found == (nc < k ? nc : k), "knn: %s, %d of %d",
                      nb_status_str(st), (int)found, (int)nc);
            for (int32_t i = 0; i < found; i++)
                NBF_CHECK(nn[i].hit.handle.bits == cand[i].bits && nn[i].dist2 == cand[i].d,
                          "knn: neighbour %d differs", (int)i);
        } else if (k % 2) {
            NBF_CHECK(st == NB_OK && found == (nc > 0), "raycast: %s", nb_status_str(st));
            if (nc > 0)
                NBF_CHECK(rays[0].hit.handle.bits == cand[0].bits && rays[0].t == cand[0].d,
                          "raycast: first hit differs");
        } else {
            NBF_CHECK(found == nc && st == (nc > k ? NB_ERR_BUFFER_TOO_SMALL : NB_OK),
                      "raycast_all: %s, %d of %d", nb_status_str(st), (int)found, (int)nc);
            for (int32_t i = 0; i < (nc < k ? nc : k); i++)
                NBF_CHECK(rays[i].hit.handle.bits == cand[i].bits && rays[i].t == cand[i].d,
                          "raycast_all: hit %d differs", (int)i);
        }
    } else { // pairs and cross pairs
        static nbHitPair pairs[QF_MAX * QF_MAX + 1];
        static uint64_t got[QF_MAX * QF_MAX + 1], wantp[QF_MAX * QF_MAX + 1];
        const bool cross = nbf_u8(rd) & 1;
        const uint32_t ma = nbf_u8(rd) % 4, mb = nbf_u8(rd) % 4;
        int64_t np = -1, npw = 0;
        st = cross ? nb_quadtree_cross_pairs(qm.t, ma, mb, pairs, QF_MAX * QF_MAX, &np)
                   : nb_quadtree_pairs(qm.t, pairs, QF_MAX * QF_MAX, &np);
        nbf_log("  %s -> %s, %lld\n", cross ? "cross_pairs" : "pairs", nb_status_str(st),
                (long long)np);
        for (int32_t i = 0; i < qm.n; i++)
            for (int32_t j = 0; j < qm.n; j++) {
                if (i == j || !nbo_rect_touch(&qm.r[i], &qm.r[j])) continue;
                const uint32_t si = (uint32_t)qm.h[i].bits, sj = (uint32_t)qm.h[j].bits;
                if (cross) {
                    if ((qm.f[i].category & ma) == 0 || qm.f[i].mask == 0) continue;
                    if ((qm.f[j].category & mb) == 0 || qm.f[j].mask == 0) continue;
                } else {
                    if (si > sj) continue;
                    if ((qm.f[i].category & qm.f[j].mask) == 0 ||
                        (qm.f[j].category & qm.f[i].mask) == 0)
                        continue;
                }
                wantp[npw++] = ((uint64_t)si << 32) | sj;
            }
        NBF_CHECK(st == NB_OK && np == npw, "pairs: %s, %lld, brute force %lld", nb_status_str(st),
                  (long long)np, (long long)npw);
        for (int64_t i = 0; i < np; i++) {
            const uint32_t a = (uint32_t)pairs[i].a.handle.bits,
                           b = (uint32_t)pairs[i].b.handle.bits;
            if (!cross) NBF_CHECK(a < b, "pairs: not lower slot first");
            got[i] = ((uint64_t)a << 32) | b;
        }
        qsort(got, (size_t)np, sizeof *got, qf_cmp_u64);
        qsort(wantp, (size_t)npw, sizeof *wantp, qf_cmp_u64);
        NBF_CHECK(memcmp(got, wantp, (size_t)np * sizeof *got) == 0, "pairs differ");
        int64_t count = -1;
        st = cross ? nb_quadtree_count_cross_pairs(qm.t, ma, mb, &count)
                   : nb_quadtree_count_pairs(qm.t, &count);
        NBF_CHECK(st == NB_OK && count == np, "count_pairs: %lld", (long long)count);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nbf_begin_input();
    nbfReader rd = {data, size};
    memset(&qm, 0, sizeof qm);
    nbAllocator alloc = nbf_allocator();
    nbQuadtreeDesc desc = {0};
    desc.allocator = &alloc;
    desc.placement = nbf_u8(&rd) % 3;
    desc.split_threshold = nbf_u8(&rd) % 10;
    desc.max_depth = nbf_u8(&rd) % 12;
    const uint8_t b = nbf_u8(&rd);
    if (b >= 128) {
        const double lo = qf_coord(&rd), side = (double)(nbf_u8(&rd) % 64) * 0.5;
        desc.bounds = (nbRect){{lo, lo}, {lo + side, lo + side}};
    }
    desc.capacity_hint = nbf_u8(&rd) < 40 ? nbf_u8(&rd) : 0;
    nbf_op = "create";
    nbStatus st = nb_quadtree_create(&desc, &qm.t);
    if (st != NB_OK) {
        NBF_CHECK(qm.t == NULL, "create failed but wrote a tree");
        nbf_check_no_leak("failed create");
        return 0;
    }
    for (nbf_step = 1; nbf_step <= QF_OPS && rd.n > 0; nbf_step++) {
        const uint8_t raw = nbf_u8(&rd), op = raw % 12;
        nbf_fail_alloc_after(0, false);
        if (op <= 1) { // insert
            nbf_op = "insert";
            const nbRect r = qf_rect(&rd);
            const nbFilter f = qf_filter(&rd);
            nbHandle h = {123};
            const uint64_t u = ++qf_user_seq;
            if (nbf_u8(&rd) < 20) nbf_fail_alloc_after(1 + nbf_u8(&rd) % 4, false);
            st = qm.n < QF_MAX ? nb_quadtree_insert(qm.t, &r, u, f, &h) : NB_ERR_OUT_OF_RANGE;
            nbf_log("  insert [%g %g %g %g] -> %s\n", r.min[0], r.min[1], r.max[0], r.max[1],
                    nb_status_str(st));
            if (qm.n >= QF_MAX) continue;
            nbf_expect(st, QF_ALLOWED(qf_rect_status(&r)), "insert");
            if (st == NB_OK) {
                qm.r[qm.n] = r;
                qm.user[qm.n] = u;
                qm.f[qm.n] = f;
                qm.h[qm.n++] = h;
            } else {
                NBF_CHECK(h.bits == 0, "failed insert wrote a handle");
            }
        } else if (op == 3 && raw >= 128) { // move_many
            qf_move_many(&rd);
        } else if (op <= 3) { // move
            nbf_op = "move";
            int32_t i;
            const nbHandle h = qf_handle(&rd, &i);
            nbRect r = qf_rect(&rd);
            if (i >= 0 && nbf_u8(&rd) < 128) { // a small step, the common case
                const double dx = (double)(int8_t)nbf_u8(&rd) * 0.0625;
                r = qm.r[i];
                r.min[0] += dx;
                r.max[0] += dx;
            }
            if (nbf_u8(&rd) < 20) nbf_fail_alloc_after(1 + nbf_u8(&rd) % 4, false);
            st = nb_quadtree_move(qm.t, h, &r);
            nbf_log("  move #%d -> %s\n", (int)i, nb_status_str(st));
            if (i < 0) {
                nbf_expect(st, NBF_BIT(NB_ERR_BAD_HANDLE), "move");
            } else {
                nbf_expect(st, QF_ALLOWED(qf_rect_status(&r)), "move");
                if (st == NB_OK) qm.r[i] = r;
            }
        } else if (op == 4) { // remove
            nbf_op = "remove";
            int32_t i;
            const nbHandle h = qf_handle(&rd, &i);
            st = nb_quadtree_remove(qm.t, h);
            nbf_log("  remove #%d -> %s\n", (int)i, nb_status_str(st));
            nbf_expect(st, NBF_BIT(i < 0 ? NB_ERR_BAD_HANDLE : NB_OK), "remove");
            if (i >= 0) {
                qf_stale_add(h);
                qm.n--;
                qm.r[i] = qm.r[qm.n];
                qm.user[i] = qm.user[qm.n];
                qm.f[i] = qm.f[qm.n];
                qm.h[i] = qm.h[qm.n];
            }
        } else if (op == 5) { // set
            nbf_op = "set";
            int32_t i;
            const nbHandle h = qf_handle(&rd, &i);
            const nbFilter f = qf_filter(&rd);
            st = nb_quadtree_set(qm.t, h, 77u, f);
            nbf_expect(st, NBF_BIT(i < 0 ? NB_ERR_BAD_HANDLE : NB_OK), "set");
            if (i >= 0) {
                qm.user[i] = 77u;
                qm.f[i] = f;
            }
        } else if (op == 6) { // build
            nbf_op = "build";
            static nbRect rs[QF_MAX];
            static nbFilter fs[QF_MAX];
            static uint64_t us[QF_MAX];
            static nbHandle hs[QF_MAX];
            int32_t m = 0;
            for (int32_t i = 0; i < qm.n; i++, m++) {
                rs[m] = qm.r[i];
                fs[m] = qm.f[i];
                us[m] = qm.user[i];
            }
            const int32_t extra = nbf_u8(&rd) % 8;
            nbStatus want = NB_OK;
            for (int32_t e = 0; e < extra && m < QF_MAX; e++, m++) {
                rs[m] = qf_rect(&rd);
                fs[m] = qf_filter(&rd);
                us[m] = ++qf_user_seq;
                const nbStatus rs_st = qf_rect_status(&rs[m]);
                if (want == NB_OK || (want == NB_ERR_OUT_OF_RANGE && rs_st == NB_ERR_NOT_FINITE))
                    want = rs_st;
            }
            if (nbf_u8(&rd) < 40) nbf_fail_alloc_after(1 + nbf_u8(&rd) % 8, false);
            st = nb_quadtree_build(qm.t, rs, m, us, fs, hs);
            nbf_log("  build %d -> %s\n", (int)m, nb_status_str(st));
            nbf_expect(st, QF_ALLOWED(want), "build");
            if (st == NB_OK) {
                for (int32_t i = 0; i < qm.n; i++) qf_stale_add(qm.h[i]);
                for (int32_t i = 0; i < m; i++) {
                    qm.r[i] = rs[i];
                    qm.f[i] = fs[i];
                    qm.user[i] = us[i];
                    qm.h[i] = hs[i];
                }
                qm.n = m;
            }
        } else if (op == 7) { // clear, reserve
            const uint8_t k = nbf_u8(&rd);
            if (k < 40) {
                nbf_op = "clear";
                nb_quadtree_clear(qm.t);
                for (int32_t i = 0; i < qm.n; i++) qf_stale_add(qm.h[i]);
                qm.n = 0;
            } else {
                nbf_op = "reserve";
                const int32_t want = k < 250 ? nbf_u8(&rd) * 4 : (int32_t)nbf_u16(&rd) * 64;
                if (nbf_u8(&rd) < 60) nbf_fail_alloc_after(1 + nbf_u8(&rd) % 4, false);
                st = nb_quadtree_reserve(qm.t, want);
                nbf_expect(st, QF_ALLOWED(NB_OK), "reserve");
            }
        } else {
            nbf_op = "query";
            qf_queries(&rd, (uint8_t)(op - 8 + (nbf_u8(&rd) & 1) * 4) % 6);
        }
        nbf_fail_alloc_after(0, false);
        qf_check_all(nbf_op);
    }
    nb_quadtree_destroy(qm.t);
    nbf_check_no_leak("destroy");
    return 0;
}
