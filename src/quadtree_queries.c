// SPDX-License-Identifier: MIT
// The quadtree's queries and pairs: window, point and radius searches, kNN and rays, and the
// pairs, with the window tests they share (quadtree_internal.h has the layout).
#include "quadtree_internal.h"

#include "knn_heap.h"

#include <stddef.h>

// ---- window tests ----

NBI_INLINE bool nbi_touch(const double *a, const double *b)
{
    return a[0] <= b[2] && b[0] <= a[2] && a[1] <= b[3] && b[1] <= a[3];
}

NBI_INLINE bool nbi_node_touch(const nbiQtNode *n, const double *w)
{
    return n->lo[0] <= w[2] && w[0] <= n->hi[0] && n->lo[1] <= w[3] && w[1] <= n->hi[1];
}

// Whether window w holds the node's bounds whole.
NBI_INLINE bool nbi_node_held(const nbiQtNode *n, const double *w)
{
    return w[0] <= n->lo[0] && w[1] <= n->lo[1] && n->hi[0] <= w[2] && n->hi[1] <= w[3];
}

// A window as the group test reads it: `touch` = (up(max x), up(max y), -down(min x),
// -down(min y)), which a node's float fields (lo x, lo y, -hi x, -hi y) must not exceed for
// the node to meet the window; `held` = (up(min x), up(min y), -down(max x), -down(max y)),
// which they must not be below for the window to hold the node. Rounding both ways keeps each
// float test a superset (touch) or a subset (held) of the exact one.
//
// `sure` decides most rectangles from their float fields alone: each is the window's touch
// value rounded to the nearest float and then three steps down. A rectangle's field f (its
// double rounded to the nearest float, then one step outwards) lies less than two steps below
// the double it stands for, and the window's value lies less than one step above its nearest
// float, so f <= sure proves the double inequality the exact test asks: a rectangle whose four
// fields pass `sure` touches the window. Those that pass `touch` but not `sure` (within a few
// float steps of an edge) take the exact test in double.
typedef struct nbiQtWin {
    double w[4];
#if defined(__SSE2__)
    __m128 touch[4], held[4], sure[4]; // each float broadcast to four lanes
    __m128 touch1, held1;              // the four touch and held values, one per lane
#else
    float touch[4], held[4], sure[4];
#endif
} nbiQtWin;

#if defined(__SSE2__)
// nbi_f_round4's steps on four doubles (a's two, then b's): the nearest floats' bits mapped to
// integers in the order of the floats, to which a step count is added (nbi_f_unkey).
NBI_INLINE __m128i nbi_f_key4(__m128d a, __m128d b)
{
    const __m128d big = _mm_set1_pd((double)FLT_MAX), nbig = _mm_set1_pd(-(double)FLT_MAX);
    a = _mm_min_pd(_mm_max_pd(nbi_plus_zero(a), nbig), big);
    b = _mm_min_pd(_mm_max_pd(nbi_plus_zero(b), nbig), big);
    const __m128i i = _mm_castps_si128(_mm_movelh_ps(_mm_cvtpd_ps(a), _mm_cvtpd_ps(b)));
    return _mm_xor_si128(i, _mm_srli_epi32(_mm_srai_epi32(i, 31), 1));
}

NBI_INLINE __m128 nbi_f_unkey(__m128i key)
{
    return _mm_castsi128_ps(_mm_xor_si128(key, _mm_srli_epi32(_mm_srai_epi32(key, 31), 1)));
}
#endif

// The window's float values, from the tree's float origin (nbi_f_fields); `sure` only when
// `want_sure` (pairs: window and circle searches test 16-bit boxes instead).
static void nbi_win_make(const nbQuadtree *q, nbiQtWin *x, const double *w, bool want_sure)
{
    memcpy(x->w, w, sizeof x->w);
    const double wo[4] = {w[0] - q->fo[0], w[1] - q->fo[1], w[2] - q->fo[0], w[3] - q->fo[1]};
    w = wo;
#if defined(__SSE2__)
    // The same values as nbi_f_round4 gives (test_quadtree's float_edges), two conversions
    // instead of three: touch and sure round the same doubles.
    const __m128d lo = _mm_loadu_pd(w), hi = _mm_loadu_pd(w + 2), neg = _mm_set1_pd(-0.0);
    const __m128i kt = nbi_f_key4(hi, _mm_xor_pd(lo, neg)); // max x, max y, -min x, -min y
    const __m128i kh = nbi_f_key4(lo, _mm_xor_pd(hi, neg)); // min x, min y, -max x, -max y
    const __m128 t = nbi_f_unkey(_mm_add_epi32(kt, _mm_set1_epi32(1)));
    const __m128 h = nbi_f_unkey(_mm_add_epi32(kh, _mm_set1_epi32(1)));
    x->touch1 = t;
    x->held1 = h;
    x->touch[0] = _mm_shuffle_ps(t, t, _MM_SHUFFLE(0, 0, 0, 0));
    x->touch[1] = _mm_shuffle_ps(t, t, _MM_SHUFFLE(1, 1, 1, 1));
    x->touch[2] = _mm_shuffle_ps(t, t, _MM_SHUFFLE(2, 2, 2, 2));
    x->touch[3] = _mm_shuffle_ps(t, t, _MM_SHUFFLE(3, 3, 3, 3));
    x->held[0] = _mm_shuffle_ps(h, h, _MM_SHUFFLE(0, 0, 0, 0));
    x->held[1] = _mm_shuffle_ps(h, h, _MM_SHUFFLE(1, 1, 1, 1));
    x->held[2] = _mm_shuffle_ps(h, h, _MM_SHUFFLE(2, 2, 2, 2));
    x->held[3] = _mm_shuffle_ps(h, h, _MM_SHUFFLE(3, 3, 3, 3));
    if (want_sure) {
        const __m128 u = nbi_f_unkey(_mm_sub_epi32(kt, _mm_set1_epi32(3)));
        x->sure[0] = _mm_shuffle_ps(u, u, _MM_SHUFFLE(0, 0, 0, 0));
        x->sure[1] = _mm_shuffle_ps(u, u, _MM_SHUFFLE(1, 1, 1, 1));
        x->sure[2] = _mm_shuffle_ps(u, u, _MM_SHUFFLE(2, 2, 2, 2));
        x->sure[3] = _mm_shuffle_ps(u, u, _MM_SHUFFLE(3, 3, 3, 3));
    }
#else
    float t[4], h[4], u[4];
    const double tv[4] = {w[2], w[3], -w[0], -w[1]}, hv[4] = {w[0], w[1], -w[2], -w[3]};
    nbi_f_round4(tv, t, 1);
    nbi_f_round4(hv, h, 1);
    if (want_sure) nbi_f_round4(tv, u, -3);
    for (int i = 0; i < 4; i++) {
        x->touch[i] = t[i];
        x->held[i] = h[i];
        x->sure[i] = want_sure ? u[i] : 0.0f;
    }
#endif
}

#if defined(__SSE2__)
// Four lanes: all ones where a[k] <= b[k] for each of the four fields k.
NBI_INLINE __m128 nbi_all_le4(const __m128 a[4], const __m128 b[4])
{
    return _mm_and_ps(_mm_and_ps(_mm_cmple_ps(a[0], b[0]), _mm_cmple_ps(a[1], b[1])),
                      _mm_and_ps(_mm_cmple_ps(a[2], b[2]), _mm_cmple_ps(a[3], b[3])));
}
#endif

// The four nodes of a group against a window: bit k set when node k's bounds meet it, and with
// `held`, bit 4 + k when the window holds them whole.
NBI_INLINE int nbi_group_test(const float *gb, const nbiQtWin *x, bool held)
{
#if defined(__SSE2__)
    const __m128 g[4] = {_mm_loadu_ps(gb), _mm_loadu_ps(gb + 4), _mm_loadu_ps(gb + 8),
                         _mm_loadu_ps(gb + 12)};
    const __m128 t = nbi_all_le4(g, x->touch);
    const int m = _mm_movemask_ps(t);
    if (!held || m == 0) return m;
    return m | _mm_movemask_ps(_mm_and_ps(t, nbi_all_le4(x->held, g))) << 4;
#else
    int m = 0;
    for (int k = 0; k < 4; k++) {
        const int t = (gb[k] <= x->touch[0]) & (gb[4 + k] <= x->touch[1]) &
                      (gb[8 + k] <= x->touch[2]) & (gb[12 + k] <= x->touch[3]);
        const int h = held & (x->held[0] <= gb[k]) & (x->held[1] <= gb[4 + k]) &
                      (x->held[2] <= gb[8 + k]) & (x->held[3] <= gb[12 + k]);
        m |= t << k | (t & h) << (4 + k);
    }
    return m;
#endif
}

// A run of four positions, r .. r + 3 (r a multiple of 4), against the window by their float
// boxes (nbi_fb_put): bit k set when position r + k's box meets it (a superset of the exact
// test), and bit 4 + k when it surely touches (a subset: nbiQtWin's `sure`). The caller applies
// the exact test to the bits set in the first nibble only.
NBI_INLINE int nbi_run_test(const float *fb, int32_t r, const nbiQtWin *x)
{
    const float *f = fb + (size_t)NBI_QT_RUN_FLOATS * (size_t)(r >> 2);
#if defined(__SSE2__)
    const __m128 v[4] = {_mm_loadu_ps(f), _mm_loadu_ps(f + 4), _mm_loadu_ps(f + 8),
                         _mm_loadu_ps(f + 12)};
    const int touch = _mm_movemask_ps(nbi_all_le4(v, x->touch));
    return touch | _mm_movemask_ps(nbi_all_le4(v, x->sure)) << 4;
#else
    int bits = 0;
    for (int k = 0; k < 4; k++) {
        bits |= ((f[k] <= x->touch[0]) & (f[4 + k] <= x->touch[1]) & (f[8 + k] <= x->touch[2]) &
                 (f[12 + k] <= x->touch[3]))
                << k;
        bits |= ((f[k] <= x->sure[0]) & (f[4 + k] <= x->sure[1]) & (f[8 + k] <= x->sure[2]) &
                 (f[12 + k] <= x->sure[3]))
                << (4 + k);
    }
    return bits;
#endif
}

// A segment's box (nbi_seg_of) against the window: 1 when it meets it, 3 when with `held` the
// window holds it whole, else 0.
NBI_INLINE int nbi_seg_test(const float *g, const nbiQtWin *x, bool held)
{
#if defined(__SSE2__)
    const __m128 v = _mm_loadu_ps(g);
    if (_mm_movemask_ps(_mm_cmple_ps(v, x->touch1)) != 0xF) return 0;
    return held && _mm_movemask_ps(_mm_cmple_ps(x->held1, v)) == 0xF ? 3 : 1;
#else
    for (int i = 0; i < 4; i++)
        if (!(g[i] <= x->touch[i])) return 0;
    for (int i = 0; i < 4 && held; i++)
        if (!(x->held[i] <= g[i])) return 1;
    return held ? 3 : 1;
#endif
}

// A window in a node's frame, as nbi_q_run_test reads it.
typedef struct nbiQtQWin {
#if defined(__SSE2__)
    __m128i v[4]; // each value in eight lanes
#else
    int16_t v[4];
#endif
} nbiQtQWin;

// Window w (min x, min y, max x, max y; not NaN, maybe infinite) in node h's frame.
NBI_INLINE void nbi_q_window(const nbiQtHot *h, const double *w, nbiQtQWin *x)
{
    int v[4];
    nbi_q4(h, w + 2, w, v);
    for (int i = 0; i < 4; i++) {
#if defined(__SSE2__)
        x->v[i] = _mm_set1_epi16((short)v[i]);
#else
        x->v[i] = (int16_t)v[i];
#endif
    }
}

// Eight 16-bit boxes laid out as a run's against a window: bit k set when box k may touch it
// (every field <= the window's).
NBI_INLINE unsigned nbi_q8_may(const int16_t *f, const nbiQtQWin *x)
{
#if defined(__SSE2__)
    __m128i a[4];
    nbi_q8_load(f, a);
    const __m128i fail =
        _mm_or_si128(_mm_or_si128(_mm_cmpgt_epi16(a[0], x->v[0]), _mm_cmpgt_epi16(a[1], x->v[1])),
                     _mm_or_si128(_mm_cmpgt_epi16(a[2], x->v[2]), _mm_cmpgt_epi16(a[3], x->v[3])));
    return ~(unsigned)_mm_movemask_epi8(_mm_packs_epi16(fail, fail)) & 0xFFu;
#else
    unsigned bits = 0;
    for (int k = 0; k < 8; k++)
        bits |= (unsigned)((f[k] <= x->v[0]) & (f[8 + k] <= x->v[1]) & (f[16 + k] <= x->v[2]) &
                           (f[24 + k] <= x->v[3]))
                << k;
    return bits;
#endif
}

// A run of eight positions, r .. r + 7 (r a multiple of 8), against a window by their 16-bit
// boxes: bit k set when position r + k may touch it (every field <= the window's), bit 8 + k
// when it surely does (every field <) . Positions without a box (NBI_QT_QEMPTY) fail both.
NBI_INLINE unsigned nbi_q_run_test(const int16_t *qb, int32_t r, const nbiQtQWin *x)
{
    const int16_t *f = qb + (size_t)NBI_QT_QRUN * (size_t)(r >> 3);
    const unsigned may = nbi_q8_may(f, x);
    if (may == 0) return 0; // most runs of a met segment: the sure test is not needed
#if defined(__SSE2__)
    __m128i a[4];
    nbi_q8_load(f, a);
    const __m128i sure = _mm_and_si128(
        _mm_and_si128(_mm_cmpgt_epi16(x->v[0], a[0]), _mm_cmpgt_epi16(x->v[1], a[1])),
        _mm_and_si128(_mm_cmpgt_epi16(x->v[2], a[2]), _mm_cmpgt_epi16(x->v[3], a[3])));
    return may | ((unsigned)_mm_movemask_epi8(_mm_packs_epi16(sure, sure)) & 0xFFu) << 8;
#else
    unsigned sure = 0;
    for (int k = 0; k < 8; k++)
        sure |= (unsigned)((f[k] < x->v[0]) & (f[8 + k] < x->v[1]) & (f[16 + k] < x->v[2]) &
                           (f[24 + k] < x->v[3]))
                << k;
    return may | sure << 8;
#endif
}

// Squared distance from p to the box lo..hi (0 inside): monotone in the box, so a node's value
// never exceeds that of a rectangle within its bounds.
NBI_INLINE double nbi_box_dist2(const double *p, double lx, double ly, double hx, double hy)
{
    double dx = lx - p[0];
    double t = p[0] - hx;
    dx = dx > t ? dx : t;
    dx = dx > 0.0 ? dx : 0.0;
    double dy = ly - p[1];
    t = p[1] - hy;
    dy = dy > t ? dy : t;
    dy = dy > 0.0 ? dy : 0.0;
    return dx * dx + dy * dy;
}

// A ray: origin, unit direction and the largest t; the origin and the largest t also as a
// quarter of themselves (nbi_ray_enter).
typedef struct nbiRay {
    double o[2], d[2], tmax;
    double o4[2], tmax4;
} nbiRay;

// Where the ray enters the box (slab test), or -1 when it misses within [0, tmax]. Computed a
// quarter scale: t / 4 = (lo / 4 - o / 4) / d, which is exactly (lo - o) / d / 4 as rounded
// wherever that does not overflow (scaling by a power of two commutes with rounding, subnormals
// apart), and never overflows on the axis where |d| >= 1 / sqrt(2); so a slab whose ends overflow
// to infinity can no longer seem to meet another such slab "at infinity" (coordinates near the
// largest double). Then t itself is +infinity only for a real hit beyond the largest double.
// Monotone in the box (each bound enters through one scaling, one subtraction and one division),
// so nodes prune safely.
NBI_INLINE double nbi_ray_enter(const nbiRay *r, double lx, double ly, double hx, double hy)
{
    double t0 = 0.0, t1 = r->tmax4;
    const double lo[2] = {0.25 * lx, 0.25 * ly}, hi[2] = {0.25 * hx, 0.25 * hy};
    for (int a = 0; a < 2; a++) {
        if (r->d[a] == 0.0) {
            if (r->o[a] < (a == 0 ? lx : ly) || r->o[a] > (a == 0 ? hx : hy)) return -1.0;
            continue;
        }
        double ta = (lo[a] - r->o4[a]) / r->d[a];
        double tb = (hi[a] - r->o4[a]) / r->d[a];
        if (ta > tb) {
            double s = ta;
            ta = tb;
            tb = s;
        }
        t0 = ta > t0 ? ta : t0;
        t1 = tb < t1 ? tb : t1;
        if (t0 > t1) return -1.0;
    }
    t0 *= 4.0;
    return t0 <= r->tmax ? t0 : -1.0; // (a subnormal tmax may round up when quartered)
}

// ---- result sinks ----

enum { NBI_QS_COUNT, NBI_QS_BUFFER, NBI_QS_VISIT };

typedef struct nbiQtSink {
    int mode;
    bool stop;
    nbHit *out;
    int64_t cap;
    int64_t found;
    nbHitFn *fn;
    nbHitPairFn *pfn;
    nbHitPair *pout;
    void *user;
} nbiQtSink;

NBI_INLINE nbHit nbi_hit_at(const nbQuadtree *q, int32_t p)
{
    return *nbi_hit_of(q, p);
}

// `mode` is the sink's mode, passed apart so that a caller can make it a constant.
NBI_INLINE void nbi_sink_hit_as(nbiQtSink *s, const nbQuadtree *q, int32_t p, int mode)
{
    if (mode == NBI_QS_VISIT) {
        if (!s->fn(nbi_hit_at(q, p), s->user)) s->stop = true;
        return;
    }
    if (mode == NBI_QS_BUFFER && s->found < s->cap) s->out[s->found] = nbi_hit_at(q, p);
    s->found++;
}

NBI_INLINE void nbi_sink_hit(nbiQtSink *s, const nbQuadtree *q, int32_t p)
{
    nbi_sink_hit_as(s, q, p, s->mode);
}

NBI_INLINE void nbi_sink_pair(nbiQtSink *s, const nbQuadtree *q, int32_t pa, int32_t pb)
{
    if (s->mode == NBI_QS_VISIT) {
        if (!s->pfn(nbi_hit_at(q, pa), nbi_hit_at(q, pb), s->user)) s->stop = true;
        return;
    }
    if (s->mode == NBI_QS_BUFFER && s->found < s->cap) {
        s->pout[s->found].a = nbi_hit_at(q, pa);
        s->pout[s->found].b = nbi_hit_at(q, pb);
    }
    s->found++;
}

// ---- window and radius searches ----

#ifdef NBI_QT_STATS
// Nodes the window and radius searches looked at (bench_rects_stats only; not thread-safe).
int64_t nbi_qt_nodes_visited;
int64_t nbi_qt_items_tested;
#endif

enum { NBI_Q_BOX, NBI_Q_CIRCLE };

// Reports every rectangle of node `from`'s subtree that passes the filter (NULL: all), without
// a geometric test: the search's window holds the subtree's bounds. False when a visitor
// stopped.
static bool nbi_report_all(const nbQuadtree *q, int32_t from, const nbFilter *f, nbiQtSink *s)
{
    const nbiQtHot *nodes = NBI_HOT(q);
    const uint32_t *cat = NBI_CAT(q), *mask = NBI_MASK(q);
    int32_t stack[NBI_QT_STACK];
    int top = 0;
    stack[top++] = from;
    while (top > 0) {
        const nbiQtHot *n = &nodes[stack[--top]];
#ifdef NBI_QT_STATS
        nbi_qt_nodes_visited++;
        nbi_qt_items_tested += n->count;
#endif
        for (int32_t p = n->start, end = p + n->count; p < end; p++) {
            if (f != NULL && !nbi_filter_accepts(*f, cat[p], mask[p])) continue;
            nbi_sink_hit(s, q, p);
            if (s->stop) return false;
        }
        if (n->child >= 0)
            for (int k = 3; k >= 0; k--) stack[top++] = n->child + k;
    }
    return true;
}

// How many nodes a window or circle search gathers before scanning them (nbi_search_as).
enum { NBI_QT_BATCH = 16 };

// Starts loading run r of node n's block: its line of 16-bit boxes (to the L1) and its hits' two
// lines (to the L2 only: they are read later and only where a rectangle touches, and the L1's few
// miss buffers go to the boxes; measured: docs/quadtree.md).
NBI_INLINE void nbi_run_prefetch(const nbQuadtree *q, int32_t p)
{
#if defined(__GNUC__)
    const int16_t *run = nbi_qb_at(q, p);
    __builtin_prefetch(run);
    __builtin_prefetch(run + 32, 0, 1);
    __builtin_prefetch(run + 64, 0, 1);
#else
    (void)q;
    (void)p;
#endif
}

// Node n's runs r0 .. r0 + 31 (r0 a multiple of 32; n's block has 32 positions or more, so it
// has run boxes) against the search, by their run boxes (qx: the window in n's frame): bit j set
// when run r0 + j may hold a rectangle that touches it. Starts loading those runs.
NBI_INLINE uint32_t nbi_run_pass(const nbQuadtree *q, const nbiQtHot *n, int32_t r0,
                                 const nbiQtQWin *qx)
{
    const int32_t nrun = (n->count + 7) >> 3;
    const int32_t nr = nrun - r0 < 32 ? nrun - r0 : 32;
    uint32_t meet = 0;
    for (int32_t j = 0; j < nr; j += 8)
        meet |= (uint32_t)nbi_q8_may(nbi_rb_at(q, n->start, n->cls, r0 + j), qx) << j;
    meet &= nr == 32 ? ~0u : (1u << nr) - 1u; // runs past the count keep stale boxes
    for (uint32_t mt = meet; mt != 0; mt &= mt - 1u)
        nbi_run_prefetch(q, n->start + 8 * (r0 + nbi_ctz32(mt)));
    return meet;
}

// Reports what node n's runs r0 .. r0 + 31 marked in `meet` hold that touches the search (qx is
// the window in n's frame); with `held` (a node of at most 16 rectangles whose segment box the
// window holds), everything it holds. False when a visitor stopped.
NBI_INLINE bool nbi_run_scan(const nbQuadtree *q, const nbiQtHot *n, int32_t r0, uint32_t meet,
                             bool held, const nbiQtQWin *qx, int kind, const double *w,
                             const double *c, double r2, const nbFilter *f, int mode, nbiQtSink *sk)
{
    const nbiQtBox *rec = NBI_BOX(q);
    const int16_t *qb = NBI_QB(q);
    const uint32_t *cat = NBI_CAT(q), *mask = NBI_MASK(q);
    if (held) {
        for (int32_t p = n->start, end = p + n->count; p < end; p++) {
            if (f != NULL && !nbi_filter_accepts(*f, cat[p], mask[p])) continue;
            nbi_sink_hit_as(sk, q, p, mode);
            if (sk->stop) return false;
        }
        return true;
    }
    while (meet != 0) {
        // Blocks start at multiples of 8; a partly filled run's empty positions fail every test.
        const int32_t r = n->start + 8 * (r0 + nbi_ctz32(meet));
        meet &= meet - 1u;
#ifdef NBI_QT_STATS
        nbi_qt_items_tested += n->start + n->count - r < 8 ? n->start + n->count - r : 8;
#endif
        const unsigned m = nbi_q_run_test(qb, r, qx);
        unsigned bits = m & 0xFFu;
        if (bits == 0) continue;
        // A circle tests every candidate in double; a window only those its 16-bit test left
        // open.
        unsigned open = kind == NBI_Q_CIRCLE ? bits : bits & ~(m >> 8);
        while (open != 0) {
            const int k = nbi_ctz32(open);
            open &= open - 1u;
            const double *b = rec[r + k].b;
            if (!nbi_touch(b, w) ||
                (kind == NBI_Q_CIRCLE && nbi_box_dist2(c, b[0], b[1], b[2], b[3]) > r2))
                bits &= ~(1u << k);
        }
        // Into a buffer with room for eight more, without a filter: all eight hits copied, the
        // output advancing past those that touch, so no branch depends on which do.
        if (mode == NBI_QS_BUFFER && f == NULL && sk->cap - sk->found >= 8) {
            const nbHit *hr = nbi_hit_of(q, r);
            nbHit *o = sk->out + sk->found;
            for (int k = 0; k < 8; k++) {
                *o = hr[k];
                o += (bits >> k) & 1u;
            }
            sk->found += o - (sk->out + sk->found);
            continue;
        }
        while (bits != 0) {
            const int32_t p = r + nbi_ctz32(bits);
            bits &= bits - 1u;
            if (f != NULL && !nbi_filter_accepts(*f, cat[p], mask[p])) continue;
            nbi_sink_hit_as(sk, q, p, mode);
            if (sk->stop) return false;
        }
    }
    return true;
}

// Depth-first over the nodes whose bounds meet the search, root first, then the outside list.
// Box: w is the window. A NULL filter visits every rectangle (visit_all). Circle: w is the circle's
// bounding box, c its centre, r2 its radius^2. A group's four children are tested at once
// (nbi_group_test), a node's runs eight at a time by their run boxes (nbi_run_pass; a node of at
// most 16, by its one segment box), a run's rectangles eight at a time by their 16-bit boxes
// (nbi_q_run_test); only those it leaves open take the exact tests (the window in double, the
// circle), and the filter.
// The walk down is cheap (the nodes' records and boxes are few and stay in cache); what costs is
// the leaves' run boxes and runs, far apart in a big tree. So the walk gathers up to
// NBI_QT_BATCH nodes with rectangles, starting to load each one's run boxes; then tests the runs
// of all of them, starting to load every run that may meet; then scans those, in the walk's
// order: the cache misses of all these nodes overlap instead of following one another node by
// node. A subtree the window holds whole takes its place in the batch and is reported without
// tests.
// nbi_search's body, inlined once for the common case (a window into a buffer, no filter to
// test) with those as constants, and once for everything else.
NBI_INLINE void nbi_search_as(const nbQuadtree *q, int kind, const double *w, const double *c,
                              double r2, const nbFilter *f, int mode, nbiQtSink *s)
{
    const nbiQtHot *nodes = NBI_HOT(q);
    nbiQtWin x;
    nbi_win_make(q, &x, w, false);
    // The stack holds groups of nodes known to meet the search: a group's first node, and a
    // mask of which of its four to visit (bits 0 to 3, lowest first) and which of those the
    // window holds whole (bits 4 to 7), whose subtree is then reported without a test (box
    // searches only: a circle's window holding a node says nothing of the circle). One entry a
    // group, not one a child: a group's test pushes once. The root and the outside list go in
    // as groups of one.
    const bool held_ok = kind == NBI_Q_BOX;
    nbiQtSink sk = *s; // a local copy the compiler can keep in registers
    int32_t sg[NBI_QT_STACK];
    uint32_t sm[NBI_QT_STACK];
    int top = 0;
    sg[top] = NBI_QT_OUT; // the outside list, when it holds any
    sm[top] = 1;
    top += nodes[NBI_QT_OUT].count > 0;
    const nbiQtNode *root = &NBI_NODES(q)[NBI_QT_ROOT];
    if (nbi_node_touch(root, w)) {
        sg[top] = NBI_QT_ROOT;
        sm[top++] = held_ok && nbi_node_held(root, w) ? 0x11u : 1u;
    }
    // The batch: node i, or -1 - i for a subtree held whole, and the mask of its first 32 runs
    // that may meet the window.
    int32_t bn[NBI_QT_BATCH];
    uint32_t bmeet[NBI_QT_BATCH];
    bool bheld[NBI_QT_BATCH];
    nbiQtQWin bqx[NBI_QT_BATCH]; // the window in each node's frame
    int nb = 0;
    while (top > 0 || nb > 0) {
        if (top > 0) {
            const uint32_t gm = sm[top - 1];
            const int gk = nbi_ctz32(gm & 0xFu);
            const int32_t ni = sg[top - 1] + gk;
            const uint32_t rest = gm & ~(0x11u << gk);
            if ((rest & 0xFu) != 0)
                sm[top - 1] = rest;
            else
                top--;
            if ((gm >> (4 + gk)) & 1u) {
                bn[nb++] = -1 - ni;
            } else {
                const nbiQtHot *n = &nodes[ni];
#ifdef NBI_QT_STATS
                nbi_qt_nodes_visited++;
#endif
                if (n->child >= 0) {
                    const int32_t g = n->child;
                    const int t = nbi_group_test(nbi_group_gb(q, g), &x, held_ok);
                    sg[top] = g;
                    sm[top] = (uint32_t)t;
                    top += t != 0;
#if defined(__GNUC__)
                    // The children's records are read next.
                    if (t != 0) {
                        __builtin_prefetch(&nodes[g]);
                        __builtin_prefetch(&nodes[g + 3]);
                    }
#endif
                }
                if (n->count > 0) {
                    bn[nb++] = ni;
#if defined(__GNUC__)
                    // The boxes of its first 32 runs (64 bytes a group of eight), or for a node
                    // of at most 16 its segment box.
                    if (n->cls >= NBI_QT_RB_MIN_CLS) {
                        const int32_t nrun = (n->count + 7) >> 3;
                        for (int32_t r = 0; r < (nrun < 32 ? nrun : 32); r += 8)
                            __builtin_prefetch(nbi_rb_at(q, n->start, n->cls, r));
                    } else {
                        __builtin_prefetch(NBI_SB(q) + n->start);
                    }
#endif
                }
            }
            if (top > 0 && nb < NBI_QT_BATCH) continue;
        }
        // The batch is full, or the walk is over: test its nodes' runs, then scan them.
        for (int i = 0; i < nb; i++) {
            if (bn[i] < 0) continue;
            const nbiQtHot *n = &nodes[bn[i]];
            nbi_q_window(n, w, &bqx[i]);
            bheld[i] = false;
            if (n->cls >= NBI_QT_RB_MIN_CLS) {
                bmeet[i] = nbi_run_pass(q, n, 0, &bqx[i]);
                continue;
            }
            // One segment: its float box, which a window may hold whole.
            const int t = nbi_seg_test(NBI_SB(q) + n->start, &x, held_ok);
            bmeet[i] = t == 0 ? 0u : n->count > 8 ? 3u : 1u;
            bheld[i] = t == 3;
            for (uint32_t mt = bmeet[i]; mt != 0; mt &= mt - 1u)
                nbi_run_prefetch(q, n->start + 8 * nbi_ctz32(mt));
        }
        for (int i = 0; i < nb; i++) {
            if (bn[i] < 0) {
                if (!nbi_report_all(q, -1 - bn[i], f, &sk)) {
                    *s = sk;
                    return;
                }
                continue;
            }
            const nbiQtHot *n = &nodes[bn[i]];
            const int32_t nrun = (n->count + 7) >> 3;
            uint32_t meet = bmeet[i];
            for (int32_t r0 = 0;;) {
                if (!nbi_run_scan(q, n, r0, meet, bheld[i], &bqx[i], kind, w, c, r2, f, mode,
                                  &sk)) {
                    *s = sk;
                    return;
                }
                r0 += 32;
                if (r0 >= nrun) break;
                meet = nbi_run_pass(q, n, r0, &bqx[i]);
            }
        }
        nb = 0;
    }
    *s = sk;
}

static void nbi_search(const nbQuadtree *q, int kind, const double *w, const double *c, double r2,
                       const nbFilter *f, nbiQtSink *s)
{
    if (f != NULL && q->nfiltered == 0) { // every rectangle has all bits: one test decides
        if (f->category == 0 || f->mask == 0) return;
        f = NULL;
    }
    if (kind == NBI_Q_BOX && f == NULL && s->mode == NBI_QS_BUFFER)
        nbi_search_as(q, NBI_Q_BOX, w, NULL, 0.0, NULL, NBI_QS_BUFFER, s);
    else
        nbi_search_as(q, kind, w, c, r2, f, s->mode, s);
}

static nbStatus nbi_window_check(const nbBox *w)
{
    for (int a = 0; a < 2; a++)
        if (isnan(w->min[a]) || isnan(w->max[a])) return NB_ERR_NOT_FINITE;
    for (int a = 0; a < 2; a++)
        if (w->min[a] > w->max[a]) return NB_ERR_OUT_OF_RANGE;
    return NB_OK;
}

static nbStatus nbi_finish(const nbiQtSink *s, int32_t *found)
{
    if (s->found > INT32_MAX) { // cannot happen: at most 2^28 rectangles
        *found = INT32_MAX;
        return NB_ERR_INTERNAL;
    }
    *found = (int32_t)s->found;
    return s->mode == NBI_QS_BUFFER && s->found > s->cap ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

static void nbi_sink_init(nbiQtSink *s, int mode)
{
    memset(s, 0, sizeof *s);
    s->mode = mode;
}

// A checked window w = {x0, y0, x1, y1} searched into the caller's buffer, or handed to its
// visitor: the two forms of the box and point queries.
static nbStatus nbi_window_buffer(const nbQuadtree *q, const double w[4], nbFilter filter,
                                  nbHit *out, int32_t capacity, int32_t *found)
{
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_BUFFER);
    s.out = out;
    s.cap = capacity;
    nbi_search(q, NBI_Q_BOX, w, NULL, 0.0, &filter, &s);
    return nbi_finish(&s, found);
}

static nbStatus nbi_window_visit(const nbQuadtree *q, const double w[4], nbFilter filter,
                                 nbHitFn *visit, void *user)
{
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_VISIT);
    s.fn = visit;
    s.user = user;
    nbi_search(q, NBI_Q_BOX, w, NULL, 0.0, &filter, &s);
    return NB_OK;
}

nbStatus nb_quadtree_query_box(const nbQuadtree *q, const nbBox *window, nbFilter filter,
                               nbHit *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || window == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    nbStatus st = nbi_window_check(window);
    if (st != NB_OK) return st;
    if (capacity < 0) return NB_ERR_OUT_OF_RANGE;
    const double w[4] = {window->min[0], window->min[1], window->max[0], window->max[1]};
    return nbi_window_buffer(q, w, filter, out, capacity, found);
}

nbStatus nb_quadtree_visit_box(const nbQuadtree *q, const nbBox *window, nbFilter filter,
                               nbHitFn *visit, void *user)
{
    if (q == NULL || window == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbStatus st = nbi_window_check(window);
    if (st != NB_OK) return st;
    const double w[4] = {window->min[0], window->min[1], window->max[0], window->max[1]};
    return nbi_window_visit(q, w, filter, visit, user);
}

nbStatus nb_quadtree_query_point(const nbQuadtree *q, const double *point, nbFilter filter,
                                 nbHit *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || point == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    if (!isfinite(point[0]) || !isfinite(point[1])) return NB_ERR_NOT_FINITE;
    if (capacity < 0) return NB_ERR_OUT_OF_RANGE;
    const double w[4] = {point[0], point[1], point[0], point[1]};
    return nbi_window_buffer(q, w, filter, out, capacity, found);
}

nbStatus nb_quadtree_visit_point(const nbQuadtree *q, const double *point, nbFilter filter,
                                 nbHitFn *visit, void *user)
{
    if (q == NULL || point == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    if (!isfinite(point[0]) || !isfinite(point[1])) return NB_ERR_NOT_FINITE;
    const double w[4] = {point[0], point[1], point[0], point[1]};
    return nbi_window_visit(q, w, filter, visit, user);
}

static nbStatus nbi_circle_check(const double *center, double radius, double w[4])
{
    if (!isfinite(center[0]) || !isfinite(center[1]) || !isfinite(radius)) return NB_ERR_NOT_FINITE;
    if (radius < 0.0) return NB_ERR_OUT_OF_RANGE;
    // The window that holds every point the test dx*dx + dy*dy <= r*r can accept: the reach
    // of r (cell.h: rounding, and squares that underflow to 0), each edge one step outwards
    // for the rounding of center +- reach. The exact test then decides.
    const double reach = nbi_reach(radius);
    w[0] = nextafter(center[0] - reach, -(double)INFINITY);
    w[1] = nextafter(center[1] - reach, -(double)INFINITY);
    w[2] = nextafter(center[0] + reach, (double)INFINITY);
    w[3] = nextafter(center[1] + reach, (double)INFINITY);
    return NB_OK;
}

nbStatus nb_quadtree_query_radius(const nbQuadtree *q, const double *center, double radius,
                                  nbFilter filter, nbHit *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || center == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    double w[4];
    nbStatus st = nbi_circle_check(center, radius, w);
    if (st != NB_OK) return st;
    if (capacity < 0) return NB_ERR_OUT_OF_RANGE;
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_BUFFER);
    s.out = out;
    s.cap = capacity;
    nbi_search(q, NBI_Q_CIRCLE, w, center, radius * radius, &filter, &s);
    return nbi_finish(&s, found);
}

nbStatus nb_quadtree_visit_radius(const nbQuadtree *q, const double *center, double radius,
                                  nbFilter filter, nbHitFn *visit, void *user)
{
    if (q == NULL || center == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    double w[4];
    nbStatus st = nbi_circle_check(center, radius, w);
    if (st != NB_OK) return st;
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_VISIT);
    s.fn = visit;
    s.user = user;
    nbi_search(q, NBI_Q_CIRCLE, w, center, radius * radius, &filter, &s);
    return NB_OK;
}

nbStatus nb_quadtree_visit_all(const nbQuadtree *q, nbHitFn *visit, void *user)
{
    if (q == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    const double inf = (double)INFINITY;
    const double w[4] = {-inf, -inf, inf, inf};
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_VISIT);
    s.fn = visit;
    s.user = user;
    nbi_search(q, NBI_Q_BOX, w, NULL, 0.0, NULL, &s);
    return NB_OK;
}

// ---- nearest: kNN and rays ----
//
// Both keep their best in the one kNN heap (knn_heap.h) keyed by (distance, handle slot): kNN's
// distances are squared distances, a ray's the t at which it enters. The heap's entries
// (nbNeighbor: the slot and the distance) lie in the front of the caller's buffer, whose entries
// are larger (nbHitNeighbor and nbRayHit: a hit, then the distance); nbi_widen then turns them
// into hits in place, from the last to the first, each read before it is overwritten.

// The search's state: the heap and, for a ray cast, every hit counted.
typedef struct nbiQtNear {
    nbiKnnHeap heap;
    int64_t total;
} nbiQtNear;

_Static_assert(sizeof(nbHitNeighbor) == sizeof(nbRayHit) &&
                   offsetof(nbHitNeighbor, dist2) == offsetof(nbRayHit, t) &&
                   sizeof(nbNeighbor) <= sizeof(nbRayHit),
               "kNN and ray results share one layout, wider than the heap's entries");

// The heap's n entries at the front of `out` (nbHitNeighbor or nbRayHit) as hits, in place.
static void nbi_widen(const nbQuadtree *q, void *out, int32_t n)
{
    unsigned char *bytes = (unsigned char *)out;
    for (int32_t i = n - 1; i >= 0; i--) {
        nbNeighbor e;
        memcpy(&e, bytes + (size_t)i * sizeof(nbNeighbor), sizeof e);
        nbHitNeighbor wide;
        wide.hit = nbi_hit_at(q, nbi_pool_slot_value(&q->pool, e.index));
        wide.dist2 = e.dist2;
        memcpy(bytes + (size_t)i * sizeof(nbHitNeighbor), &wide, sizeof wide);
    }
}

enum { NBI_N_KNN, NBI_N_RAY };

// Depth-first, children nearest first, pruning by the heap's bound. kNN: distances are squared
// distances to p and `limit` is max_distance^2. Ray: distances are entry points t. When
// `count_all` is set (all ray hits), nodes are pruned by the limit only, so total counts
// every hit.
static void nbi_nearest(const nbQuadtree *q, int kind, const double *p, const nbiRay *ray,
                        double limit, bool count_all, nbFilter f, nbiQtNear *h)
{
    const nbiQtNode *nodes = NBI_NODES(q);
    const nbiQtBox *rec = NBI_BOX(q);
    const bool check = q->nfiltered > 0;
    if (!check && (f.category == 0 || f.mask == 0)) return;
    int32_t stack[NBI_QT_STACK];
    double sd[NBI_QT_STACK];
    int top = 0;
    stack[top] = NBI_QT_OUT;
    sd[top++] = 0.0;
    stack[top] = NBI_QT_ROOT;
    sd[top++] = 0.0;
    while (top > 0) {
        top--;
        const nbiQtNode *n = &nodes[stack[top]];
        const double bound = count_all ? limit : nbi_heap_bound(&h->heap, limit);
        if (sd[top] > bound) continue;
        {
            const int32_t base = n->start, end = base + n->count;
            for (int32_t i = base; i < end; i++) {
                const double *b = rec[i].b;
                double d;
                if (kind == NBI_N_KNN) {
                    d = nbi_box_dist2(p, b[0], b[1], b[2], b[3]);
                    if (d > limit) continue;
                } else {
                    d = nbi_ray_enter(ray, b[0], b[1], b[2], b[3]);
                    if (d < 0.0) continue;
                }
                if (check && !nbi_filter_accepts(f, NBI_CAT(q)[i], NBI_MASK(q)[i])) continue;
                h->total++;
                if (h->heap.k == 0) continue;
                const nbNeighbor cand = {(int32_t)((uint32_t)nbi_hit_of(q, i)->handle.bits - 1u),
                                         d};
                nbi_heap_offer(&h->heap, cand);
            }
        }
        if (n->child < 0) continue;
        double cd[4];
        int order[4];
        int m = 0;
        for (int k = 0; k < 4; k++) {
            const nbiQtNode *c = &nodes[n->child + k];
            const double lx = (double)c->lo[0], ly = (double)c->lo[1];
            const double hx = (double)c->hi[0], hy = (double)c->hi[1];
            double d;
            if (kind == NBI_N_KNN) {
                d = nbi_box_dist2(p, lx, ly, hx, hy);
                if (d > limit) continue;
            } else {
                d = nbi_ray_enter(ray, lx, ly, hx, hy);
                if (d < 0.0) continue;
            }
            // Insertion by distance, farthest first on the stack so the nearest pops first.
            int j = m++;
            while (j > 0 && cd[j - 1] < d) {
                cd[j] = cd[j - 1];
                order[j] = order[j - 1];
                j--;
            }
            cd[j] = d;
            order[j] = k;
        }
        for (int j = 0; j < m; j++) {
            stack[top] = n->child + order[j];
            sd[top++] = cd[j];
        }
    }
}

// One search, kNN or ray, and where its answers go: the nearest `cap` into `out` (nbHitNeighbor
// or nbRayHit), nearest first (nbi_near); the callback forms run it on the heap
// nbi_visit_hit_knn gives them (nbi_qt_ask).
typedef struct nbiQtAsk {
    const nbQuadtree *q;
    int kind;            // NBI_N_KNN, NBI_N_RAY
    const double *point; // kNN
    const nbiRay *ray;   // rays
    double limit;        // kNN: max_distance^2; rays: max_distance
    bool count_all;      // count every hit (all of a ray's): pruned by the limit only
    nbFilter filter;
} nbiQtAsk;

// Runs the search; returns how many hits it kept, or with count_all how many there are.
static int64_t nbi_near(const nbiQtAsk *a, void *out, int32_t cap)
{
    nbiQtNear h = {{(nbNeighbor *)out, 0, cap}, 0};
    nbi_nearest(a->q, a->kind, a->point, a->ray, a->limit, a->count_all, a->filter, &h);
    nbi_heap_sort(&h.heap);
    nbi_widen(a->q, out, h.heap.size);
    return a->count_all ? h.total : h.heap.size;
}

static nbStatus nbi_qt_ask(const void *ctx, nbHitNeighbor *out, int32_t k, int32_t *found)
{
    const int64_t n = nbi_near((const nbiQtAsk *)ctx, out, k);
    *found = (int32_t)(n < k ? n : k);
    return NB_OK;
}

nbStatus nb_quadtree_knn(const nbQuadtree *q, const double *point, nbFilter filter,
                         double max_distance, nbHitNeighbor *out, int32_t k, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || point == NULL || found == NULL || (out == NULL && k > 0))
        return NB_ERR_NULL_ARG;
    if (!isfinite(point[0]) || !isfinite(point[1]) || isnan(max_distance)) return NB_ERR_NOT_FINITE;
    if (k < 0 || max_distance < 0.0) return NB_ERR_OUT_OF_RANGE;
    if (k == 0) return NB_OK;
    const nbiQtAsk ask = {q, NBI_N_KNN, point, NULL, max_distance * max_distance, false, filter};
    *found = (int32_t)nbi_near(&ask, out, k);
    return NB_OK;
}

nbStatus nb_quadtree_visit_knn(const nbQuadtree *q, const double *point, nbFilter filter,
                               double max_distance, int32_t k, nbHitNeighborFn *visit, void *user)
{
    if (q == NULL || point == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    if (!isfinite(point[0]) || !isfinite(point[1]) || isnan(max_distance)) return NB_ERR_NOT_FINITE;
    if (k < 0 || max_distance < 0.0) return NB_ERR_OUT_OF_RANGE;
    const nbiQtAsk ask = {q, NBI_N_KNN, point, NULL, max_distance * max_distance, false, filter};
    return nbi_visit_hit_knn(&q->alloc, k < q->count ? k : q->count, nbi_qt_ask, &ask, visit, user);
}

static nbStatus nbi_ray_make(const double *origin, const double *direction, double max_distance,
                             nbiRay *r)
{
    for (int a = 0; a < 2; a++)
        if (!isfinite(origin[a]) || !isfinite(direction[a])) return NB_ERR_NOT_FINITE;
    if (isnan(max_distance)) return NB_ERR_NOT_FINITE;
    if (max_distance < 0.0) return NB_ERR_OUT_OF_RANGE;
    // Scaled first so that squaring neither overflows nor underflows.
    const double m = fmax(fabs(direction[0]), fabs(direction[1]));
    if (m == 0.0) return NB_ERR_OUT_OF_RANGE;
    const double x = direction[0] / m, y = direction[1] / m;
    const double len = sqrt(x * x + y * y);
    for (int a = 0; a < 2; a++) {
        r->o[a] = origin[a];
        r->o4[a] = 0.25 * origin[a];
    }
    r->d[0] = x / len;
    r->d[1] = y / len;
    r->tmax = max_distance;
    r->tmax4 = 0.25 * max_distance;
    return NB_OK;
}

nbStatus nb_quadtree_raycast(const nbQuadtree *q, const double *origin, const double *direction,
                             double max_distance, nbFilter filter, nbRayHit *out, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || origin == NULL || direction == NULL || out == NULL || found == NULL)
        return NB_ERR_NULL_ARG;
    nbiRay ray;
    nbStatus st = nbi_ray_make(origin, direction, max_distance, &ray);
    if (st != NB_OK) return st;
    const nbiQtAsk ask = {q, NBI_N_RAY, NULL, &ray, max_distance, false, filter};
    *found = (int32_t)nbi_near(&ask, out, 1);
    return NB_OK;
}

nbStatus nb_quadtree_raycast_all(const nbQuadtree *q, const double *origin, const double *direction,
                                 double max_distance, nbFilter filter, nbRayHit *out,
                                 int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || origin == NULL || direction == NULL || found == NULL ||
        (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    nbiRay ray;
    nbStatus st = nbi_ray_make(origin, direction, max_distance, &ray);
    if (st != NB_OK) return st;
    if (capacity < 0) return NB_ERR_OUT_OF_RANGE;
    const nbiQtAsk ask = {q, NBI_N_RAY, NULL, &ray, max_distance, true, filter};
    const int64_t total = nbi_near(&ask, out, capacity);
    if (total > INT32_MAX) return NB_ERR_INTERNAL; // cannot happen: at most 2^28 rectangles
    *found = (int32_t)total;
    return total > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

nbStatus nb_quadtree_visit_raycast_all(const nbQuadtree *q, const double *origin,
                                       const double *direction, double max_distance,
                                       nbFilter filter, nbRayHitFn *visit, void *user)
{
    if (q == NULL || origin == NULL || direction == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiRay ray;
    const nbStatus st = nbi_ray_make(origin, direction, max_distance, &ray);
    if (st != NB_OK) return st;
    // A counting cast first, so that the heap then holds every hit in the order they are visited.
    const nbiQtAsk ask = {q, NBI_N_RAY, NULL, &ray, max_distance, true, filter};
    const int64_t total = nbi_near(&ask, NULL, 0);
    return nbi_visit_hit_knn(&q->alloc, (int32_t)total, nbi_qt_ask, &ask, visit, user);
}

// ---- pairs ----

// The pairs of rectangle a (box w, window x) with positions from .. to - 1 (from a multiple of 4)
// that are p0 or later, by their float boxes four at a time, then the exact test where those
// leave it open. False when a visitor stopped.
NBI_INLINE bool nbi_pairs_span(const nbQuadtree *q, int32_t from, int32_t to, int32_t p0, int32_t a,
                               const double *w, const nbiQtWin *x, bool cross, bool rule,
                               uint32_t mask_b, nbiQtSink *s)
{
    const float *fb = NBI_FB(q);
    const nbiQtBox *rec = NBI_BOX(q);
    const uint32_t *cat = NBI_CAT(q), *mask = NBI_MASK(q);
    for (int32_t r = from; r < to; r += 4) {
        const unsigned m = (unsigned)nbi_run_test(fb, r, x);
        unsigned bits = m & 0xFu;
        if (r < p0) bits &= 0xFu << (p0 - r);
        const unsigned sure = m >> 4;
        while (bits != 0) {
            const int k = nbi_ctz32(bits);
            const int32_t b = r + k;
            bits &= bits - 1u;
            if (!((sure >> k) & 1u) && !nbi_touch(rec[b].b, w)) continue;
            if (cross) {
                if (b == a || (cat[b] & mask_b) == 0 || mask[b] == 0) continue;
                nbi_sink_pair(s, q, a, b);
            } else {
                if (rule && ((cat[a] & mask[b]) == 0 || (cat[b] & mask[a]) == 0)) continue;
                const bool a_first = (uint32_t)nbi_hit_of(q, a)->handle.bits <
                                     (uint32_t)nbi_hit_of(q, b)->handle.bits;
                nbi_sink_pair(s, q, a_first ? a : b, a_first ? b : a);
            }
            if (s->stop) return false;
        }
    }
    return true;
}

// Each touching pair once, from one side: the rectangle whose node is shallower (by level; the
// outside list is shallowest of all), or on the same level the lower node index, or in the same
// node the lower position, searches for the other. For each rectangle a the search walks every
// node meeting a's box and tests only rectangles that come after a in that order.
static void nbi_pairs(const nbQuadtree *q, bool cross, uint32_t mask_a, uint32_t mask_b,
                      nbiQtSink *s)
{
    const nbiQtHot *nodes = NBI_HOT(q);
    const nbiQtNode *root = &NBI_NODES(q)[NBI_QT_ROOT];
    const nbiQtBox *rec = NBI_BOX(q);
    const uint32_t *cat = NBI_CAT(q), *mask = NBI_MASK(q);
    const bool rule = q->nfiltered > 0; // else every pair passes the pair rule
    int32_t outer[NBI_QT_STACK];
    int32_t stack[NBI_QT_STACK];
    const float *sb = NBI_SB(q);
    int otop = 0;
    outer[otop++] = NBI_QT_ROOT;
    outer[otop++] = NBI_QT_OUT;
    while (otop > 0) {
        const int32_t na = outer[--otop];
        const nbiQtHot *a_node = &nodes[na];
        const int32_t a_level = a_node->level;
        if (a_node->child >= 0)
            for (int k = 3; k >= 0; k--) outer[otop++] = a_node->child + k;
        const int32_t abase = a_node->start, aend = abase + a_node->count;
        for (int32_t a = abase; a < aend; a++) {
            if (cross && ((cat[a] & mask_a) == 0 || mask[a] == 0)) continue;
            const double *w = rec[a].b;
            nbiQtWin x;
            nbi_win_make(q, &x, w, true);
            int top = 0;
            stack[top] = NBI_QT_OUT; // the outside list, when it holds any
            top += nodes[NBI_QT_OUT].count > 0;
            if (nbi_node_touch(root, w)) stack[top++] = NBI_QT_ROOT;
            while (top > 0) {
                const int32_t nb = stack[--top];
                const nbiQtHot *n = &nodes[nb];
                const int32_t g = n->child;
                if (g >= 0) {
                    const int t = nbi_group_test(nbi_group_gb(q, g), &x, false);
                    for (int k = 3; k >= 0; k--) {
                        stack[top] = g + k;
                        top += (t >> k) & 1;
                    }
                }
                if (n->count == 0) continue;
                int32_t p0 = n->start;
                const int32_t end = p0 + n->count;
                // In pairs mode only rectangles after a in the order above.
                if (!cross) {
                    if (n->level < a_level || (n->level == a_level && nb < na)) continue;
                    if (nb == na) p0 = a + 1;
                }
                if (n->cls >= NBI_QT_RB_MIN_CLS) { // by its run boxes, a's box in n's frame
                    nbiQtQWin qx;
                    nbi_q_window(n, w, &qx);
                    const int32_t r0 = (p0 - n->start) >> 3, nrun = (n->count + 7) >> 3;
                    for (int32_t g8 = r0 & ~7; g8 < nrun; g8 += 8) {
                        unsigned may = nbi_q8_may(nbi_rb_at(q, n->start, n->cls, g8), &qx);
                        if (g8 < r0) may &= 0xFFu << (r0 - g8);
                        if (nrun - g8 < 8) may &= (1u << (nrun - g8)) - 1u;
                        while (may != 0) {
                            const int32_t sg = n->start + 8 * (g8 + nbi_ctz32(may));
                            may &= may - 1u;
                            const int32_t gend = end - sg < 8 ? end : sg + 8;
                            if (!nbi_pairs_span(q, sg > (p0 & ~3) ? sg : p0 & ~3, gend, p0, a, w,
                                                &x, cross, rule, mask_b, s))
                                return;
                        }
                    }
                    continue;
                }
                for (int32_t sg = nbi_seg_of(n->start, p0); sg < end; sg += NBI_QT_SEG) {
                    if (nbi_seg_test(sb + nbi_seg_box(n->start, sg), &x, false) == 0) continue;
                    const int32_t gend = end - sg < NBI_QT_SEG ? end : sg + NBI_QT_SEG;
                    if (!nbi_pairs_span(q, sg > (p0 & ~3) ? sg : p0 & ~3, gend, p0, a, w, &x, cross,
                                        rule, mask_b, s))
                        return;
                }
            }
        }
    }
}

static nbStatus nbi_pairs_call(const nbQuadtree *q, bool cross, uint32_t ma, uint32_t mb,
                               nbHitPair *out, int64_t capacity, int64_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || found == NULL || (out == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    if (capacity < 0) return NB_ERR_OUT_OF_RANGE;
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_BUFFER);
    s.pout = out;
    s.cap = capacity;
    nbi_pairs(q, cross, ma, mb, &s);
    *found = s.found;
    return s.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

static nbStatus nbi_pairs_count(const nbQuadtree *q, bool cross, uint32_t ma, uint32_t mb,
                                int64_t *count)
{
    if (count != NULL) *count = 0;
    if (q == NULL || count == NULL) return NB_ERR_NULL_ARG;
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_COUNT);
    nbi_pairs(q, cross, ma, mb, &s);
    *count = s.found;
    return NB_OK;
}

static nbStatus nbi_pairs_visit(const nbQuadtree *q, bool cross, uint32_t ma, uint32_t mb,
                                nbHitPairFn *visit, void *user)
{
    if (q == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_VISIT);
    s.pfn = visit;
    s.user = user;
    nbi_pairs(q, cross, ma, mb, &s);
    return NB_OK;
}

nbStatus nb_quadtree_pairs(const nbQuadtree *q, nbHitPair *out, int64_t capacity, int64_t *found)
{
    return nbi_pairs_call(q, false, 0, 0, out, capacity, found);
}

nbStatus nb_quadtree_count_pairs(const nbQuadtree *q, int64_t *count)
{
    return nbi_pairs_count(q, false, 0, 0, count);
}

nbStatus nb_quadtree_visit_pairs(const nbQuadtree *q, nbHitPairFn *visit, void *user)
{
    return nbi_pairs_visit(q, false, 0, 0, visit, user);
}

nbStatus nb_quadtree_cross_pairs(const nbQuadtree *q, uint32_t mask_a, uint32_t mask_b,
                                 nbHitPair *out, int64_t capacity, int64_t *found)
{
    return nbi_pairs_call(q, true, mask_a, mask_b, out, capacity, found);
}

nbStatus nb_quadtree_count_cross_pairs(const nbQuadtree *q, uint32_t mask_a, uint32_t mask_b,
                                       int64_t *count)
{
    return nbi_pairs_count(q, true, mask_a, mask_b, count);
}

nbStatus nb_quadtree_visit_cross_pairs(const nbQuadtree *q, uint32_t mask_a, uint32_t mask_b,
                                       nbHitPairFn *visit, void *user)
{
    return nbi_pairs_visit(q, true, mask_a, mask_b, visit, user);
}
