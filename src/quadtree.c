// SPDX-License-Identifier: MIT
// The quadtree of rectangles (include/nearby/quadtree.h).
//
// Nodes live in one array and link by index. Node 0 is the root, node 1 the outside list (a
// leaf with infinite bounds that every query visits and that never splits); children come in
// groups of four contiguous nodes, child k covering the quadrant x-half (k & 1), y-half (k >> 1)
// of its parent. Each node keeps two boxes: its cell (the quadrant, which only places
// rectangles) and its bounds (what every rectangle of its subtree lies in; kNN and rays prune
// by them). Tight placement: bounds = cell, and a rectangle goes into the child whose cell holds
// all of it. Loose placement: bounds = cell enlarged by half its side per edge, clamped to the
// parent's bounds, and a rectangle goes into the child that holds its centre if that child's
// bounds hold all of it. Placement tests the stored bounds in double.
//
// Window, point, radius and pair searches prune by a third box per node below the root: the box
// of what its subtree holds, as floats rounded outwards, grown as rectangles come in (nbiQtGb,
// nbi_bbox_grow; a move within its node computes it anew instead, nbi_box_move), four
// children's side by side so that one test covers a group. Each position also has its box in
// 16 bits in its node's frame, by runs of eight (nbi_fb_put, nbi_q4), so one test covers eight
// rectangles and tells most of them apart; only those it leaves open read the doubles and take
// the exact test. Each run of eight has a 16-bit box too (nbi_rb_at, blocks of 32 and more), so
// one test tells which of eight runs a search must load. A float copy of each box, by runs of
// four, serves the node boxes, the segment boxes of small blocks and the pairs.
//
// Rectangles of a node are contiguous: the node owns a block of 2^cls positions in an arena and
// its rectangles fill the block's front. Per position we keep the box, the handle bits, the user
// value, the filter bits and the owning node. An insert appends (a full block moves to one twice
// as large); a removal moves the node's last rectangle into the hole; a node that empties gives
// its block back. Freed blocks wait on a free list per size and are reused before the arena
// grows, so a steady moving workload stops allocating. nb_quadtree_build lays a whole tree out
// at once, nodes and blocks in depth-first order, so that a query walks memory mostly forwards,
// each node's rectangles along a curve; changes pay for sorting nodes along it again as they
// undo that order (tidying, nbi_tidy_pay).
//
// Everything a change can allocate is prepared first (nbi_qt_room), so a failure leaves the tree
// as it was. Traversals are iterative: the root grows at most NBI_QT_GROW_MAX times and levels
// go at most to NB_QUADTREE_MAX_DEPTH, so a depth-first stack of NBI_QT_STACK entries suffices.
//
// Invariants (nb_quadtree_validate): the pool's own; count == live handles == rectangles in
// nodes; nodes 0 and 1 are never free; a group's four nodes have the same parent, the next
// level, bounds within the parent's bounds; a node with rectangles owns a block that holds them
// (count <= 2^cls), a node without owns none; each position in use holds a live slot whose pool
// value is that position, names its node and has its box within the node's bounds, its float
// box holding it and within the node's float box; a node's float box lies within its parent's;
// live blocks plus free blocks cover [0, top) exactly; free groups are chained and counted.
#include <nearby/quadtree.h>

#include "cell.h"
#include "handle_pool.h"

#include <float.h>
#include <math.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum {
    NBI_QT_ROOT = 0,        // node index of the root
    NBI_QT_OUT = 1,         // node index of the outside list
    NBI_QT_GROUPS = 2,      // first node index of the groups
    NBI_QT_FIT_LEVELS = 20, // a root fitted to data is at least 2^-20 of the desc's side
    NBI_QT_GROW_MAX = 48 + NBI_QT_FIT_LEVELS, // times the root may double: 2^48 desc sides
    NBI_QT_MAX_ITEMS = 1 << 28,
    NBI_QT_STACK = 4 * (NB_QUADTREE_MAX_DEPTH + NBI_QT_GROW_MAX + 4),
    NBI_QT_DEFAULT_THRESHOLD = 512, // measured: docs/quadtree.md
    NBI_QT_DEFAULT_DEPTH = 24,
    NBI_QT_CLASSES = 31,   // block sizes 2^0 .. 2^30
    NBI_QT_MIN_CLS = 3,    // a node's first block holds 8 (a run of 16-bit boxes)
    NBI_QT_QMAX = 32766,   // 16-bit box fields lie in [-NBI_QT_QMAX, NBI_QT_QMAX]
    NBI_QT_QEMPTY = 32767, // every field of a position without a box: fails every test
};

// What a build's root spares on each edge past the data, a fraction of its side: rectangles
// that then move a little beyond the data's box (a wall they bounce off) need no doubling.
#define NBI_QT_FIT_MARGIN (1.0 / 32.0)

typedef struct nbiQtNode {
    double lo[2], hi[2];   // bounds: every rectangle of the subtree lies within (closed)
    int32_t child;         // first node of the children's group, -1 for a leaf; free: next free
    int32_t start;         // first position of its block (when cls >= 0)
    int32_t count;         // rectangles held by this node
    int32_t cls;           // log2 of its block's size, -1 when it has none
    double clo[2], chi[2]; // cell: the quadrant; children split it at its middle
    int32_t parent;        // -1 for the root and the outside list, -2 in a free group
    int32_t level;         // depth: the first root is 0, a grown root negative
} nbiQtNode;

// What a traversal reads of a node besides its bounds, apart (16 bytes): its children, its block
// and its level. A mirror of the node's fields, refreshed by nbi_sync after every change
// (validate checks it).
// It also holds the frame the node's 16-bit boxes are measured in (nbi_frame): the centre of its
// bounds and the steps per unit, per axis (32 bytes: a group's four in two cache lines).
// And its block's class, for where its run boxes are (nbi_rb_at); the level is clamped to 16 bits
// (the outside list's, INT32_MIN, stays below every other).
typedef struct nbiQtHot {
    int32_t child, start, count;
    int16_t level, cls;
    float fc[2], finv[2];
} nbiQtHot;

NBI_INLINE int16_t nbi_level16(int32_t level)
{
    return (int16_t)(level < INT16_MIN ? INT16_MIN : level > INT16_MAX ? INT16_MAX : level);
}

// What searches prune a group's four nodes by: the box of everything in each node's subtree, as
// floats rounded outwards, field by field (structure of arrays: lo x of the four, lo y, -hi x,
// -hi y), so that one group's 16 floats test all four children against a window at once
// (nbi_group_test). Node n >= NBI_QT_GROUPS has 4 floats of the buffer, its group's 16 start
// at 4 * (first node of the group - NBI_QT_GROUPS). The box grows as a rectangle is put into
// the subtree (nbi_bbox_grow), is computed anew from what it holds when a move within the node
// leaves it (nbi_node_refit), and starts empty (+infinity in every field) when a group is
// taken, so it always holds every rectangle of the subtree (and lies within its parent's):
// a window that misses it misses them all, and one that holds it holds them all. It is much
// tighter than the loose bounds near the top of the tree, where a node's bounds reach half a
// side past its quadrant but its rectangles only their own half size.
typedef struct nbiQtGb {
    float v[4];
} nbiQtGb;

// A rectangle's box in double (min x, min y, max x, max y). What a query reports of it (handle
// and user value) is kept apart, as the nbHit it copies out: most hits are decided by the float
// copy alone (nbi_run_test), so a window reads these 32 bytes only for the rare candidate whose
// float box leaves the answer open.
typedef struct nbiQtBox {
    double b[4];
} nbiQtBox;

struct nbQuadtree {
    nbAllocator alloc;
    int32_t threshold, max_depth, placement;
    int32_t count;
    int32_t grown;
    nbRect root0; // the root's first cell (clear restores it)
    double fo[2]; // the float copies' origin: they hold x - fo[0], y - fo[1] (nbi_f_fields)

    nbiPool pool; // a slot's value is its rectangle's position
    nbiBuf nodes; // nbiQtNode
    nbiBuf hot;   // nbiQtHot, one per node
    nbiBuf gb;    // nbiQtGb, one per node: the groups' float bounds
    int32_t node_top, free_group, free_groups;
    nbiBuf box;        // nbiQtBox per position
    nbiBuf cat, mask;  // uint32_t per position
    int32_t nfiltered; // rectangles whose bits are not all ones: 0 lets queries skip the bits
    nbiBuf own;        // int32_t per position: its node; a free block's first: the next free block
    nbiBuf fb;         // by runs of 4 positions: their float boxes (nbi_fb_at)
    nbiBuf qb;         // by runs of 8 positions: their 16-bit boxes, then their nbHits (nbi_qb_at)
    nbiBuf sb;         // 1 float per position: segment boxes (nbi_seg_of)
    int32_t top;       // positions [0, top) belong to blocks, live or free
    int32_t tidy_next; // the node moves' tidying looks at next (nbi_tidy_pay)
    int64_t tidy_credit; // moves not yet paid for by tidying
    int64_t tidy_due;    // the credit at which the next tidying is looked for
    int64_t tidied;      // nodes tidied since the tree was made, cleared or built (info)
    int32_t free_block[NBI_QT_CLASSES];
    int32_t free_count[NBI_QT_CLASSES];
};

#define NBI_NODES(q) ((nbiQtNode *)(q)->nodes.ptr)
#define NBI_HOT(q) ((nbiQtHot *)(q)->hot.ptr)
#define NBI_GB(q) ((float *)(q)->gb.ptr)
#define NBI_FB(q) ((float *)(q)->fb.ptr)
#define NBI_SB(q) ((float *)(q)->sb.ptr)
#define NBI_BOX(q) ((nbiQtBox *)(q)->box.ptr)
#define NBI_QB(q) ((int16_t *)(q)->qb.ptr)
// A run of 4 positions (r = p >> 2) is 64 bytes of fb: the 16 floats of their boxes (nbi_fb_put).
// A run of 8 positions (p >> 3) is 192 bytes of qb: the 32 int16 of their 16-bit boxes (one cache
// line), then the 8 nbHits a query reports (handle and user value), so that a search that starts
// loading a run gets its hits in the lines that follow.
enum { NBI_QT_RUN_FLOATS = 16, NBI_QT_QRUN = 96 };

// Position p's first float field; the others follow at a stride of 4.
NBI_INLINE float *nbi_fb_at(const nbQuadtree *q, int32_t p)
{
    return NBI_FB(q) + (size_t)NBI_QT_RUN_FLOATS * (size_t)(p >> 2) + (p & 3);
}

// What position p reports.
NBI_INLINE nbHit *nbi_hit_of(const nbQuadtree *q, int32_t p)
{
    return (nbHit *)(void *)(NBI_QB(q) + (size_t)NBI_QT_QRUN * (size_t)(p >> 3) + 32) + (p & 7);
}

// Position p's first 16-bit field; the others follow at a stride of 8.
NBI_INLINE int16_t *nbi_qb_at(const nbQuadtree *q, int32_t p)
{
    return NBI_QB(q) + (size_t)NBI_QT_QRUN * (size_t)(p >> 3) + (p & 7);
}
#define NBI_CAT(q) ((uint32_t *)(q)->cat.ptr)
#define NBI_MASK(q) ((uint32_t *)(q)->mask.ptr)
#define NBI_OWN(q) ((int32_t *)(q)->own.ptr)

// ---- geometry ----

static nbStatus nbi_rect_check(const nbRect *r)
{
#if defined(__SSE2__)
    // x - x is 0 for a finite x and NaN for an infinite or NaN one (under any rounding mode).
    const __m128d lo = _mm_loadu_pd(r->min), hi = _mm_loadu_pd(r->max), z = _mm_setzero_pd();
    if (_mm_movemask_pd(_mm_and_pd(_mm_cmpeq_pd(_mm_sub_pd(lo, lo), z),
                                   _mm_cmpeq_pd(_mm_sub_pd(hi, hi), z))) != 3)
        return NB_ERR_NOT_FINITE;
    return _mm_movemask_pd(_mm_cmple_pd(lo, hi)) == 3 ? NB_OK : NB_ERR_OUT_OF_RANGE;
#else
    for (int a = 0; a < 2; a++)
        if (!isfinite(r->min[a]) || !isfinite(r->max[a])) return NB_ERR_NOT_FINITE;
    for (int a = 0; a < 2; a++)
        if (r->min[a] > r->max[a]) return NB_ERR_OUT_OF_RANGE;
    return NB_OK;
#endif
}

// Whether box b (min x, min y, max x, max y) lies within the node's bounds.
NBI_INLINE bool nbi_within(const nbiQtNode *n, const double *b)
{
#if defined(__SSE2__)
    return _mm_movemask_pd(_mm_and_pd(_mm_cmpge_pd(_mm_loadu_pd(b), _mm_loadu_pd(n->lo)),
                                      _mm_cmple_pd(_mm_loadu_pd(b + 2), _mm_loadu_pd(n->hi)))) == 3;
#else
    return b[0] >= n->lo[0] && b[1] >= n->lo[1] && b[2] <= n->hi[0] && b[3] <= n->hi[1];
#endif
}

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

// v[0..3] rounded to floats, out[i] <= v[i] (dir < 0) or out[i] >= v[i] (dir > 0): the nearest
// float (under any rounding mode, within one step of v[i]) and then |dir| steps further that
// way, so a float box built with dir = +-1 holds the double box. Beyond float's range the
// largest float is the start (one step past it is infinity, two or more a NaN, which every
// comparison fails). v may be infinite, not NaN. Steps are taken on the floats' bits mapped to
// integers in the order of the floats (negatives' magnitude bits flipped), so the signs need no
// case. A zero of either sign is taken as +0 (-0 maps one step below it), so that a box at -0
// and a box at +0, equal as doubles, get the same fields: a node's box made from its bounds at
// +0 must hold a rectangle at -0 (found by fuzz_quadtree).
#if defined(__SSE2__)
// Each lane, with a zero of either sign made +0 (its bits cleared: no rounding mode involved).
NBI_INLINE __m128d nbi_plus_zero(__m128d v)
{
    return _mm_andnot_pd(_mm_cmpeq_pd(v, _mm_setzero_pd()), v);
}
#endif

static void nbi_f_round4(const double *v, float *out, int dir)
{
#if defined(__SSE2__)
    const __m128d big = _mm_set1_pd((double)FLT_MAX), nbig = _mm_set1_pd(-(double)FLT_MAX);
    const __m128d a = _mm_min_pd(_mm_max_pd(nbi_plus_zero(_mm_loadu_pd(v)), nbig), big);
    const __m128d b = _mm_min_pd(_mm_max_pd(nbi_plus_zero(_mm_loadu_pd(v + 2)), nbig), big);
    __m128i i = _mm_castps_si128(_mm_movelh_ps(_mm_cvtpd_ps(a), _mm_cvtpd_ps(b)));
    __m128i key = _mm_xor_si128(i, _mm_srli_epi32(_mm_srai_epi32(i, 31), 1));
    key = _mm_add_epi32(key, _mm_set1_epi32(dir));
    i = _mm_xor_si128(key, _mm_srli_epi32(_mm_srai_epi32(key, 31), 1));
    _mm_storeu_ps(out, _mm_castsi128_ps(i));
#else
    for (int k = 0; k < 4; k++) {
        const double x = v[k] < -(double)FLT_MAX  ? -(double)FLT_MAX
                         : v[k] > (double)FLT_MAX ? (double)FLT_MAX
                         : v[k] == 0.0            ? 0.0 // -0 as +0
                                                  : v[k];
        float f = (float)x;
        int32_t i;
        memcpy(&i, &f, sizeof i);
        int32_t key = i < 0 ? i ^ 0x7FFFFFFF : i;
        key += dir;
        i = key < 0 ? key ^ 0x7FFFFFFF : key;
        memcpy(&f, &i, sizeof f);
        out[k] = f;
    }
#endif
}

// A box (min x, min y, max x, max y) as the float fields searches test: min x and min y rounded
// down, -max x and -max y rounded down (that is, the maxima rounded up), each taken from the
// tree's float origin fo first. Far from the origin (1e9) a float step is 64 units, more than
// the rectangles and the windows: from an origin in the data's middle, it is the data's size
// that sets the steps. The subtraction, in double, is rounded but keeps the order of any two
// values (x <= y gives x - o <= y - o), so every float test below keeps its meaning (those that
// prove an inequality prove it strictly, by whole float steps, which no such rounding undoes).
NBI_INLINE void nbi_f_fields(const nbQuadtree *q, const double *b, float *out)
{
    const double v[4] = {b[0] - q->fo[0], b[1] - q->fo[1], -(b[2] - q->fo[0]), -(b[3] - q->fo[1])};
    nbi_f_round4(v, out, -1);
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

// The float bounds of group g (its first node).
NBI_INLINE const float *nbi_group_gb(const nbQuadtree *q, int32_t g)
{
    return NBI_GB(q) + 4 * (size_t)(g - NBI_QT_GROUPS);
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

// ---- 16-bit boxes ----
//
// Each position also keeps its box in 16 bits, measured in its node's frame (nbi_frame):
// t(x) = (x - c) * inv in double, c the centre of the node's bounds and inv about 64000 steps
// over their side, both floats. The fields are floor(t(min x)), floor(t(min y)), -ceil(t(max x)),
// -ceil(t(max y)), clamped to [-NBI_QT_QMAX, NBI_QT_QMAX]; a window gets the same treatment
// with its edges swapped (nbi_q_window): floor(t(its max x)), ..., -ceil(t(its min y)). Each
// step of t (a subtraction, a product by a positive number, both rounded) never reverses the
// order of two values, nor do floor, ceil, negation (reversing both sides) and clamping. So
// for a field f and the window's value v: the exact test passing implies f <= v (the 16-bit
// test keeps every rectangle that touches), and f < v implies the exact test passes (from
// floor(t(a)) < floor(t(b)) follows t(a) < t(b), hence a <= b). A rectangle whose four fields
// are below the window's touches it; one with a field above does not; the few with a field
// equal take the exact test in double. No margins, no error bounds: only monotonicity.
// A frame need not contain the node's rectangles (clamped fields only decide less), so the
// outside list and frames that do not fit in floats use c = 0, inv = 1.

// Node n's frame: fc (centre) and finv (steps per unit) per axis.
static void nbi_frame(const nbiQtNode *n, float fc[2], float finv[2])
{
    for (int a = 0; a < 2; a++) {
        const float c = (float)(0.5 * n->lo[a] + 0.5 * n->hi[a]);
        // The steps reach from c to the farther edge: far from the origin c, a float, lies off
        // the middle by up to half a float step (32 units at 1e9), which may be more than the
        // node's side, and a frame that fell short of an edge would clamp what lies there.
        const double reach = fmax(n->hi[a] - (double)c, (double)c - n->lo[a]);
        const float inv = (float)(32000.0 / reach);
        const bool ok = isfinite(c) && isfinite(inv) && inv > 0.0f;
        fc[a] = ok ? c : 0.0f;
        finv[a] = ok ? inv : 1.0f;
    }
}

// floor(v) and ceil(v) clamped to [-NBI_QT_QMAX, NBI_QT_QMAX] (v is not NaN; it may be infinite).
NBI_INLINE int nbi_q_floor(double v)
{
    v = v < -NBI_QT_QMAX - 1.0 ? -NBI_QT_QMAX - 1.0 : v > NBI_QT_QMAX + 1.0 ? NBI_QT_QMAX + 1.0 : v;
    int t = (int)v; // towards zero
    t -= (double)t > v;
    return t < -NBI_QT_QMAX ? -NBI_QT_QMAX : t > NBI_QT_QMAX ? NBI_QT_QMAX : t;
}

NBI_INLINE int nbi_q_ceil(double v)
{
    v = v < -NBI_QT_QMAX - 1.0 ? -NBI_QT_QMAX - 1.0 : v > NBI_QT_QMAX + 1.0 ? NBI_QT_QMAX + 1.0 : v;
    int t = (int)v;
    t += (double)t < v;
    return t < -NBI_QT_QMAX ? -NBI_QT_QMAX : t > NBI_QT_QMAX ? NBI_QT_QMAX : t;
}

// nbi_q4 one value at a time (validate checks the vector version against it).
static void nbi_q4_ref(const nbiQtHot *h, const double *lo, const double *hi, int out[4])
{
    const double cx = (double)h->fc[0], cy = (double)h->fc[1];
    const double ix = (double)h->finv[0], iy = (double)h->finv[1];
    out[0] = nbi_q_floor((lo[0] - cx) * ix);
    out[1] = nbi_q_floor((lo[1] - cy) * iy);
    out[2] = -nbi_q_ceil((hi[0] - cx) * ix);
    out[3] = -nbi_q_ceil((hi[1] - cy) * iy);
}

// floor(t(lo[0])), floor(t(lo[1])), -ceil(t(hi[0])), -ceil(t(hi[1])) in node h's frame, each
// clamped to [-NBI_QT_QMAX, NBI_QT_QMAX] (not NaN; infinities allowed).
NBI_INLINE void nbi_q4(const nbiQtHot *h, const double *lo, const double *hi, int out[4])
{
#if defined(__SSE2__)
    const __m128d c = _mm_set_pd((double)h->fc[1], (double)h->fc[0]);
    const __m128d inv = _mm_set_pd((double)h->finv[1], (double)h->finv[0]);
    const __m128d lim = _mm_set1_pd(NBI_QT_QMAX + 1.0), nlim = _mm_set1_pd(-NBI_QT_QMAX - 1.0);
    __m128d a = _mm_mul_pd(_mm_sub_pd(_mm_loadu_pd(lo), c), inv);
    __m128d b = _mm_mul_pd(_mm_sub_pd(_mm_loadu_pd(hi), c), inv);
    a = _mm_min_pd(_mm_max_pd(a, nlim), lim);
    b = _mm_min_pd(_mm_max_pd(b, nlim), lim);
    __m128i ia = _mm_cvttpd_epi32(a), ib = _mm_cvttpd_epi32(b); // towards zero, lanes 0 and 1
    // Minus one where truncation went up (floor), plus one where it went down (ceil): the
    // comparisons' 64-bit masks moved to the 32-bit lanes 0 and 1.
    const __m128i down = _mm_shuffle_epi32(_mm_castpd_si128(_mm_cmpgt_pd(_mm_cvtepi32_pd(ia), a)),
                                           _MM_SHUFFLE(3, 3, 2, 0));
    const __m128i up = _mm_shuffle_epi32(_mm_castpd_si128(_mm_cmplt_pd(_mm_cvtepi32_pd(ib), b)),
                                         _MM_SHUFFLE(3, 3, 2, 0));
    ia = _mm_add_epi32(ia, down);
    ib = _mm_sub_epi32(_mm_setzero_si128(), _mm_sub_epi32(ib, up));
    const __m128i qmax = _mm_set1_epi32(NBI_QT_QMAX), qmin = _mm_set1_epi32(-NBI_QT_QMAX);
    __m128i v = _mm_unpacklo_epi64(ia, ib);
    const __m128i over = _mm_cmpgt_epi32(v, qmax), under = _mm_cmplt_epi32(v, qmin);
    v = _mm_or_si128(_mm_andnot_si128(_mm_or_si128(over, under), v),
                     _mm_or_si128(_mm_and_si128(over, qmax), _mm_and_si128(under, qmin)));
    _mm_storeu_si128((__m128i *)(void *)out, v);
#else
    nbi_q4_ref(h, lo, hi, out);
#endif
}

// The 16-bit fields of box b (min x, min y, max x, max y) in a node's frame. b is finite.
NBI_INLINE void nbi_q_fields(const nbiQtHot *h, const double *b, int16_t out[4])
{
    int v[4];
    nbi_q4(h, b, b + 2, v);
    for (int i = 0; i < 4; i++) out[i] = (int16_t)v[i];
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

#if defined(__SSE2__)
// Eight 16-bit boxes laid out as a run's (f: 32 fields, field i of box k at f[8 * i + k]) as four
// vectors: a[i] holds field i of the eight.
NBI_INLINE void nbi_q8_load(const int16_t *f, __m128i a[4])
{
    for (int i = 0; i < 4; i++) a[i] = _mm_loadu_si128((const __m128i *)(const void *)(f + 8 * i));
}
#endif

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

// The block class that holds n rectangles.
static int nbi_cls_for(int64_t n)
{
    int c = NBI_QT_MIN_CLS;
    while (((int64_t)1 << c) < n) c++;
    return c;
}

// ---- storage ----

enum { NBI_QT_POS_BUFS = 7 };

static void nbi_qt_pos_bufs(nbQuadtree *q, nbiBuf *buf[NBI_QT_POS_BUFS],
                            size_t elem[NBI_QT_POS_BUFS])
{
    nbiBuf *b[NBI_QT_POS_BUFS] = {&q->box, &q->cat, &q->mask, &q->own, &q->fb, &q->sb, &q->qb};
    const size_t e[NBI_QT_POS_BUFS] = {sizeof(nbiQtBox),
                                       sizeof(uint32_t),
                                       sizeof(uint32_t),
                                       sizeof(int32_t),
                                       NBI_QT_RUN_FLOATS / 4 * sizeof(float),
                                       sizeof(float),
                                       NBI_QT_QRUN / 8 * sizeof(int16_t)};
    for (int i = 0; i < NBI_QT_POS_BUFS; i++) {
        buf[i] = b[i];
        elem[i] = e[i];
    }
}

// What a change needs: handles, node groups, and blocks by class (served by the free lists
// first, then from the arena's end).
typedef struct nbiQtNeed {
    int32_t items;
    int64_t groups;
    int64_t positions; // positions from the arena's end beyond the blocks below
    int nblocks;
    int8_t cls[8];
} nbiQtNeed;

static void nbi_need_block(nbiQtNeed *need, int cls)
{
    NB_ASSERT(need->nblocks < 8);
    need->cls[need->nblocks++] = (int8_t)cls;
}

// Makes room for `need`, all or nothing. Afterwards the change that asked cannot fail.
static nbStatus nbi_qt_room(nbQuadtree *q, const nbiQtNeed *need)
{
    if ((int64_t)q->count + need->items > NBI_QT_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    int64_t positions = (int64_t)q->top + need->positions;
    for (int b = 0; b < need->nblocks; b++) {
        int same = 0; // earlier requests of the same class use up its free list first
        for (int e = 0; e < b; e++) same += need->cls[e] == need->cls[b];
        if (q->free_count[need->cls[b]] <= same) positions += (int64_t)1 << need->cls[b];
    }
    const int64_t groups = need->groups > q->free_groups ? need->groups - q->free_groups : 0;
    const int64_t node_need = (int64_t)q->node_top + 4 * groups;
    if (positions > INT32_MAX || node_need > INT32_MAX) return NB_ERR_OUT_OF_RANGE;
    nbiBuf *pos[NBI_QT_POS_BUFS];
    size_t elem[NBI_QT_POS_BUFS];
    nbi_qt_pos_bufs(q, pos, elem);
    bool room = nbi_pool_room(&q->pool) >= need->items && (size_t)node_need <= q->nodes.cap &&
                (size_t)node_need <= q->hot.cap && (size_t)node_need <= q->gb.cap;
    for (int b = 0; b < NBI_QT_POS_BUFS && room; b++) room = (size_t)positions <= pos[b]->cap;
    if (room) return NB_OK;

    nbiPoolPrep prep;
    nbStatus st = nbi_pool_prepare(&q->pool, need->items, &prep);
    if (st != NB_OK) return st;
    nbiBuf *nodes[3] = {&q->nodes, &q->hot, &q->gb};
    const size_t node_elem[3] = {sizeof(nbiQtNode), sizeof(nbiQtHot), sizeof(nbiQtGb)};
    const size_t node_size[3] = {(size_t)node_need, (size_t)node_need, (size_t)node_need};
    nbiBuf next_nodes[3], next_pos[NBI_QT_POS_BUFS];
    bool ok = nbi_bufs_prepare(&q->alloc, nodes, next_nodes, node_size, node_elem, 3);
    if (ok) {
        // Every position buffer gets the capacity the first one got, so they stay in step.
        ok = nbi_buf_prepare(&q->alloc, pos[0], &next_pos[0], (size_t)positions, elem[0]);
        if (ok) {
            size_t pos_size[NBI_QT_POS_BUFS];
            for (int b = 1; b < NBI_QT_POS_BUFS; b++) pos_size[b] = next_pos[0].cap;
            ok = nbi_bufs_prepare(&q->alloc, pos + 1, next_pos + 1, pos_size + 1, elem + 1,
                                  NBI_QT_POS_BUFS - 1);
            if (!ok) nbi_buf_abandon(&q->alloc, pos[0], &next_pos[0], elem[0]);
        }
        if (!ok) nbi_bufs_abandon(&q->alloc, nodes, next_nodes, node_elem, 3);
    }
    if (!ok) {
        nbi_pool_abandon(&q->pool, &prep);
        return NB_ERR_OUT_OF_MEMORY;
    }
    nbi_pool_commit(&q->pool, &prep);
    nbi_bufs_commit(&q->alloc, pos, next_pos, elem, NBI_QT_POS_BUFS, true);
    nbi_bufs_commit(&q->alloc, nodes, next_nodes, node_elem, 3, true);
    return NB_OK;
}

// A block of class c (room prepared): from its free list, else from the arena's end.
static int32_t nbi_block_take(nbQuadtree *q, int c)
{
    int32_t s = q->free_block[c];
    if (s >= 0) {
        q->free_block[c] = NBI_OWN(q)[s];
        q->free_count[c]--;
        return s;
    }
    NB_ASSERT((size_t)q->top + ((size_t)1 << c) <= q->own.cap);
    s = q->top;
    q->top += (int32_t)1 << c;
    return s;
}

static void nbi_block_give(nbQuadtree *q, int32_t start, int c)
{
    NBI_OWN(q)[start] = q->free_block[c];
    q->free_block[c] = start;
    q->free_count[c]++;
}

// Segments: a block's positions by sixteens from its start (a block of 4 or 8 is one segment).
// A block of at most 16 positions (one segment) keeps a float box of what it holds (the fields
// of nbi_fb_put: lo x, lo y, -hi x, -hi y, the least of its positions'); a search tests it
// before the block's runs. A put widens it; a move in place that leaves it computes it anew
// (nbi_seg_refit). Larger blocks are searched by their run boxes instead (below) and keep no
// segment boxes. The box lies in sb at the block's start (nbi_seg_box): a block of 2^c >= 4
// positions owns 2^c floats of sb.
enum { NBI_QT_SEG = 16 };

// The first position of the segment that holds position p of a block starting at `start`.
NBI_INLINE int32_t nbi_seg_of(int32_t start, int32_t p)
{
    return start + ((p - start) & ~(NBI_QT_SEG - 1));
}

// Where in sb the box of the segment starting at position g of a block at `start` is.
NBI_INLINE int32_t nbi_seg_box(int32_t start, int32_t g)
{
    return start + ((g - start) >> 2);
}

// Run boxes: a block of 2^c >= 32 positions also keeps, for each run of eight positions, the
// 16-bit box of what the run holds (each field the least of its positions', in the node's frame),
// by groups of eight runs laid out as a run's positions are (min x of the eight, min y, -max x,
// -max y: 64 bytes), so that one test (nbi_q8_may) tells which of eight runs may hold a hit, and
// a search loads only those runs. They take 2^c / 4 of the block's 2^c floats of sb, from float
// max(16, 2^c / 4) of it: the place the segment boxes of such blocks, since dropped, left free.
// A put widens its run's box (nbi_rb_grow); a move in place that leaves it computes it anew from
// the run's eight positions (nbi_rb_refit); runs past the node's count keep stale boxes, which
// searches mask off.
enum { NBI_QT_RB_MIN_CLS = 5 };

// The first field of the run box of run `run` of the block at `start` of class c (>= 5); the
// other fields follow at a stride of 8.
NBI_INLINE int16_t *nbi_rb_at(const nbQuadtree *q, int32_t start, int c, int32_t run)
{
    const size_t off = c > 6 ? (size_t)1 << (c - 2) : 16;
    int16_t *base = (int16_t *)(void *)(NBI_SB(q) + (size_t)start + off);
    return base + 32 * (size_t)(run >> 3) + (run & 7);
}

// Readies a block of class c at `start` for puts: its positions from `from` on (by whole runs)
// hold no box (NaN floats, which fail every test, so a search scans a partly filled run without
// masking), and its segment box (c < NBI_QT_RB_MIN_CLS) or its run boxes are empty.
static void nbi_block_init(nbQuadtree *q, int32_t start, int c, int32_t from)
{
    const int32_t end = start + ((int32_t)1 << c);
    float *fb = NBI_FB(q), *sb = NBI_SB(q);
    for (int32_t r = from >> 2; r < end >> 2; r++)
        for (int i = 0; i < 16; i++) fb[(size_t)NBI_QT_RUN_FLOATS * (size_t)r + (size_t)i] = NAN;
    for (int32_t p = from; p < end; p++) {
        int16_t *f = nbi_qb_at(q, p);
        for (int i = 0; i < 4; i++) f[8 * i] = NBI_QT_QEMPTY;
    }
    if (c < NBI_QT_RB_MIN_CLS) {
        for (int i = 0; i < 4; i++) sb[nbi_seg_box(start, start) + i] = (float)INFINITY;
    } else {
        for (int32_t r = 0; r < (end - start) >> 3; r += 8)
            for (int i = 0; i < 32; i++) nbi_rb_at(q, start, c, r)[i] = NBI_QT_QEMPTY;
    }
}

// Widens the run box of position p (of a block at `start` of class c) to hold p's 16-bit box.
NBI_INLINE void nbi_rb_grow(nbQuadtree *q, int32_t start, int c, int32_t p)
{
    int16_t *r = nbi_rb_at(q, start, c, (p - start) >> 3);
    const int16_t *e = nbi_qb_at(q, p);
    for (int i = 0; i < 4; i++) r[8 * i] = e[8 * i] < r[8 * i] ? e[8 * i] : r[8 * i];
}

// Computes anew the run box of the run that holds position p from its eight positions' fields
// (a position without a box holds NBI_QT_QEMPTY, which the minimum skips). A tidying calls it
// for every run of its node; with SSE2, nbi_box_move computes a moved position's run box itself.
static void nbi_rb_refit(nbQuadtree *q, int32_t start, int c, int32_t p)
{
    int16_t *r = nbi_rb_at(q, start, c, (p - start) >> 3);
    const int16_t *e = nbi_qb_at(q, p & ~7);
    for (int i = 0; i < 4; i++) {
        int16_t m = NBI_QT_QEMPTY;
        for (int k = 0; k < 8; k++) m = e[8 * i + k] < m ? e[8 * i + k] : m;
        r[8 * i] = m;
    }
}

// Position p no longer holds a box (the last of its node's, taken out).
NBI_INLINE void nbi_fb_clear(nbQuadtree *q, int32_t p)
{
    float *f = nbi_fb_at(q, p);
    int16_t *e = nbi_qb_at(q, p);
    for (int i = 0; i < 4; i++) {
        f[4 * i] = NAN;
        e[8 * i] = NBI_QT_QEMPTY;
    }
}

static void nbi_node_init(nbiQtNode *n, int32_t parent, int32_t level)
{
    n->child = -1;
    n->parent = parent;
    n->start = 0;
    n->count = 0;
    n->cls = -1;
    n->level = level;
}

// Refreshes node n's hot record.
static void nbi_sync(nbQuadtree *q, int32_t n)
{
    const nbiQtNode *node = &NBI_NODES(q)[n];
    nbiQtHot *h = &NBI_HOT(q)[n];
    h->child = node->child;
    h->start = node->start;
    h->count = node->count;
    h->level = nbi_level16(node->level);
    h->cls = (int16_t)node->cls;
    nbi_frame(node, h->fc, h->finv);
}

// Node n's float box (n >= NBI_QT_GROUPS): its four fields at a stride of 4 floats.
NBI_INLINE float *nbi_gb_of(const nbQuadtree *q, int32_t n)
{
    const uint32_t k = (uint32_t)(n - NBI_QT_GROUPS); // n >= NBI_QT_GROUPS
    return NBI_GB(q) + 16 * (size_t)(k >> 2) + (k & 3u);
}

// Grows the float boxes of node n and its ancestors to hold the rectangle at position p, up to
// the first that holds it already (its own ancestors then hold it too).
NBI_INLINE void nbi_bbox_grow(nbQuadtree *q, int32_t n, int32_t p)
{
    const float *f = nbi_fb_at(q, p);
    const nbiQtNode *nodes = NBI_NODES(q);
    while (n >= NBI_QT_GROUPS) {
        float *g = nbi_gb_of(q, n);
        bool grew = false;
        for (int i = 0; i < 4; i++) {
            if (f[4 * i] < g[4 * i]) {
                g[4 * i] = f[4 * i];
                grew = true;
            }
        }
        if (!grew) return;
        n = nodes[n].parent;
    }
}

static int32_t nbi_group_take(nbQuadtree *q)
{
    int32_t g;
    if (q->free_group >= 0) {
        g = q->free_group;
        q->free_group = NBI_NODES(q)[g].child;
        q->free_groups--;
    } else {
        NB_ASSERT((size_t)q->node_top + 4 <= q->nodes.cap);
        g = q->node_top;
        q->node_top += 4;
    }
    float *gb = nbi_gb_of(q, g);
    for (int i = 0; i < 16; i++) gb[i] = (float)INFINITY; // four empty boxes
    return g;
}

static void nbi_group_give(nbQuadtree *q, int32_t g)
{
    nbiQtNode *n = &NBI_NODES(q)[g];
    for (int k = 0; k < 4; k++) {
        NB_ASSERT(n[k].count == 0 && n[k].cls < 0 && n[k].child < 0);
        n[k].parent = -2;
    }
    n[0].child = q->free_group;
    q->free_group = g;
    q->free_groups++;
}

// Writes box b's float copy for position p: positions come in runs of 4 (p >> 2; blocks start
// at multiples of 4, so a run never straddles two blocks), and a run's 16 floats hold min x of
// the four, min y, -max x, -max y, rounded outwards, so that one run is tested against a
// window at once (nbi_scan). The float box holds the double one, so the float test passes
// every rectangle the exact test passes; the exact test then decides.
// Also writes its 16-bit box in the frame of node n (whose hot record is in sync).
NBI_INLINE void nbi_fb_put(nbQuadtree *q, int32_t n, int32_t p, const double *b)
{
    float *f = nbi_fb_at(q, p);
    float v[4];
    nbi_f_fields(q, b, v);
    f[0] = v[0];
    f[4] = v[1];
    f[8] = v[2];
    f[12] = v[3];
    int16_t *e = nbi_qb_at(q, p);
    int16_t u[4];
    nbi_q_fields(&NBI_HOT(q)[n], b, u);
    for (int i = 0; i < 4; i++) e[8 * i] = u[i];
}

// Writes a rectangle's box at position p of node n's block starting at `start` (every copy),
// and widens p's run box (blocks of 32 or more) or its block's segment box to hold it.
NBI_INLINE void nbi_box_put(nbQuadtree *q, int32_t n, int32_t start, int32_t p, const double *b)
{
    memcpy(NBI_BOX(q)[p].b, b, 4 * sizeof(double));
    nbi_fb_put(q, n, p, b);
    const int c = NBI_NODES(q)[n].cls; // the class of the block at `start`
    if (c >= NBI_QT_RB_MIN_CLS) {
        nbi_rb_grow(q, start, c, p);
        return;
    }
    const float *f = nbi_fb_at(q, p);
    float *g = NBI_SB(q) + nbi_seg_box(start, nbi_seg_of(start, p));
    for (int i = 0; i < 4; i++) g[i] = f[4 * i] < g[i] ? f[4 * i] : g[i];
}

// Whether the float box g (fields at a stride of 1) holds the float box at f (a stride of 4).
NBI_INLINE bool nbi_f_holds(const float *g, const float *f)
{
    return g[0] <= f[0] && g[1] <= f[4] && g[2] <= f[8] && g[3] <= f[12];
}

// The least of each float field of positions from .. to - 1 (from a multiple of 4; positions
// without a box hold NaN, which the minimum skips): the box of what they hold.
static void nbi_fb_min(const nbQuadtree *q, int32_t from, int32_t to, float m[4])
{
    for (int i = 0; i < 4; i++) m[i] = (float)INFINITY;
#if defined(__SSE2__)
    // Field i of the run's four positions in one vector; min(f, m) is m where f is NaN.
    __m128 v[4];
    for (int i = 0; i < 4; i++) v[i] = _mm_set1_ps((float)INFINITY);
    for (int32_t r = from; r < to; r += 4) {
        const float *f = NBI_FB(q) + (size_t)NBI_QT_RUN_FLOATS * (size_t)(r >> 2);
        for (int i = 0; i < 4; i++) v[i] = _mm_min_ps(_mm_loadu_ps(f + 4 * i), v[i]);
    }
    for (int i = 0; i < 4; i++) {
        __m128 x = _mm_min_ps(v[i], _mm_movehl_ps(v[i], v[i]));
        x = _mm_min_ss(x, _mm_shuffle_ps(x, x, 1));
        m[i] = _mm_cvtss_f32(x);
    }
#else
    for (int32_t r = from; r < to; r += 4) {
        const float *f = NBI_FB(q) + (size_t)NBI_QT_RUN_FLOATS * (size_t)(r >> 2);
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 4; k++) m[i] = f[4 * i + k] < m[i] ? f[4 * i + k] : m[i];
    }
#endif
}

// Computes anew the box of the segment starting at position g of node n's block from its
// positions' float boxes.
static void nbi_seg_refit(nbQuadtree *q, const nbiQtNode *n, int32_t g)
{
    const int32_t end = n->start + n->count;
    float m[4];
    nbi_fb_min(q, g, end - g < NBI_QT_SEG ? end : g + NBI_QT_SEG, m);
    memcpy(NBI_SB(q) + nbi_seg_box(n->start, g), m, sizeof m);
}

// Computes anew node n's float box (n >= NBI_QT_GROUPS) from its segment box (or, in a block with
// run boxes, its positions' float boxes) and its children's float boxes.
static void nbi_node_refit(nbQuadtree *q, int32_t n)
{
    const nbiQtNode *node = &NBI_NODES(q)[n];
    float m[4] = {(float)INFINITY, (float)INFINITY, (float)INFINITY, (float)INFINITY};
    const float *sb = NBI_SB(q);
    if (node->cls >= NBI_QT_RB_MIN_CLS) { // no segment box: its positions' float boxes
        nbi_fb_min(q, node->start, node->start + node->count, m);
    } else if (node->count > 0) {
        const float *sg = sb + nbi_seg_box(node->start, node->start);
        for (int i = 0; i < 4; i++) m[i] = sg[i] < m[i] ? sg[i] : m[i];
    }
    if (node->child >= 0) {
        const float *gb = nbi_group_gb(q, node->child);
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 4; k++) m[i] = gb[4 * i + k] < m[i] ? gb[4 * i + k] : m[i];
    }
    float *g = nbi_gb_of(q, n);
    for (int i = 0; i < 4; i++) g[4 * i] = m[i];
}

// Moves the rectangle at position `at` of node n to box b within n's bounds: rewrites its boxes
// and nothing else of the node. Where its run's box, its block's segment box, or the float box
// of n or of an ancestor no longer holds it, that box is computed anew from what it holds rather
// than grown, so boxes follow rectangles that wander about inside their node instead of widening
// step by step (a window would meet more runs and nodes every frame).
static void nbi_box_move(nbQuadtree *q, int32_t n, int32_t at, const double *b)
{
    const nbiQtNode *node = &NBI_NODES(q)[n];
    memcpy(NBI_BOX(q)[at].b, b, 4 * sizeof(double));
#if defined(__SSE2__)
    // The run's fields, read before this position's are written: a load of a line's 16 bytes
    // that stores of 2 bytes just wrote waits for the stores to complete (it was most of what a
    // move spent, measured: docs/quadtree.md).
    __m128i run[4];
    const int16_t *e0 = nbi_qb_at(q, at & ~7);
    if (node->cls >= NBI_QT_RB_MIN_CLS) nbi_q8_load(e0, run);
#endif
    nbi_fb_put(q, n, at, b);
    const float *f = nbi_fb_at(q, at);
    if (node->cls >= NBI_QT_RB_MIN_CLS) { // its run's box, computed anew if the box left it
        int16_t *r = nbi_rb_at(q, node->start, node->cls, (at - node->start) >> 3);
        const int16_t *e = nbi_qb_at(q, at);
        if ((e[0] < r[0]) | (e[8] < r[8]) | (e[16] < r[16]) | (e[24] < r[24])) {
#if defined(__SSE2__)
            // Lane at % 8 of each field takes the new value, then the least of the eight.
            const __m128i lane = _mm_cmpeq_epi16(_mm_set_epi16(7, 6, 5, 4, 3, 2, 1, 0),
                                                 _mm_set1_epi16((short)(at & 7)));
            for (int i = 0; i < 4; i++) {
                __m128i v = _mm_or_si128(_mm_andnot_si128(lane, run[i]),
                                         _mm_and_si128(lane, _mm_set1_epi16(e[8 * i])));
                v = _mm_min_epi16(v, _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 0, 3, 2)));
                v = _mm_min_epi16(v, _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 3, 0, 1)));
                v = _mm_min_epi16(v, _mm_srli_epi32(v, 16));
                r[8 * i] = (int16_t)_mm_cvtsi128_si32(v);
            }
#else
            nbi_rb_refit(q, node->start, node->cls, at);
#endif
        }
    } else { // its segment's box, likewise
        const int32_t g = nbi_seg_of(node->start, at);
        if (!nbi_f_holds(NBI_SB(q) + nbi_seg_box(node->start, g), f)) nbi_seg_refit(q, node, g);
    }
    // An ancestor whose box holds the rectangle holds every refitted box below it: each holds
    // only what the subtree held before and the rectangle.
    for (int32_t c = n; c >= NBI_QT_GROUPS; c = NBI_NODES(q)[c].parent) {
        const float *gc = nbi_gb_of(q, c);
        if (gc[0] <= f[0] && gc[4] <= f[4] && gc[8] <= f[8] && gc[12] <= f[12]) return;
        nbi_node_refit(q, c);
    }
}

// Writes a rectangle's data at position `to` of node n, whose block starts at `start`; its slot
// is left to the caller (nbi_put).
static void nbi_put_data(nbQuadtree *q, int32_t start, int32_t to, int32_t n, const double *b,
                         uint64_t hnd, uint64_t user, uint32_t cat, uint32_t mask)
{
    nbHit *r = nbi_hit_of(q, to);
    nbi_box_put(q, n, start, to, b);
    r->handle.bits = hnd;
    r->user = user;
    NBI_CAT(q)[to] = cat;
    NBI_MASK(q)[to] = mask;
    NBI_OWN(q)[to] = n;
    nbi_bbox_grow(q, n, to);
}

// nbi_put_data, and points the rectangle's slot there.
static void nbi_put(nbQuadtree *q, int32_t start, int32_t to, int32_t n, const double *b,
                    uint64_t hnd, uint64_t user, uint32_t cat, uint32_t mask)
{
    nbi_put_data(q, start, to, n, b, hnd, user, cat, mask);
    nbi_pool_set_slot_value(&q->pool, (int32_t)((uint32_t)hnd - 1u), to);
}

// Moves the rectangle at `from` to `to`, now of node n, whose block starts at `start`.
static void nbi_move_pos(nbQuadtree *q, int32_t from, int32_t start, int32_t to, int32_t n)
{
    double b[4];
    memcpy(b, NBI_BOX(q)[from].b, sizeof b);
    const nbHit h = *nbi_hit_of(q, from);
    nbi_put(q, start, to, n, b, h.handle.bits, h.user, NBI_CAT(q)[from], NBI_MASK(q)[from]);
}

// The block an append to node n needs: -1 if it has room.
static int nbi_append_cls(const nbiQtNode *n)
{
    if (n->cls < 0) return NBI_QT_MIN_CLS;
    return n->count < ((int32_t)1 << n->cls) ? -1 : n->cls + 1;
}

// Appends a rectangle to node n (room prepared); returns its position.
static int32_t nbi_append(nbQuadtree *q, int32_t n, const double *b, uint64_t hnd, uint64_t user,
                          uint32_t cat, uint32_t mask)
{
    const int c = nbi_append_cls(&NBI_NODES(q)[n]);
    if (c >= 0) {
        const int32_t s = nbi_block_take(q, c);
        nbi_block_init(q, s, c, s);
        nbiQtNode *node = &NBI_NODES(q)[n];
        const int32_t old = node->start, old_cls = node->cls;
        node->start = s; // first: a put reads the class of the node's block
        node->cls = c;
        for (int32_t i = 0; i < node->count; i++) nbi_move_pos(q, old + i, s, s + i, n);
        if (old_cls >= 0) nbi_block_give(q, old, old_cls);
    }
    nbiQtNode *node = &NBI_NODES(q)[n];
    const int32_t at = node->start + node->count++;
    nbi_put(q, node->start, at, n, b, hnd, user, cat, mask);
    nbi_sync(q, n);
    return at;
}

// Takes the rectangle at position `at` out of its node: the node's last rectangle moves into
// the hole; a node left empty gives its block back.
static void nbi_take_out(nbQuadtree *q, int32_t at)
{
    const int32_t n = NBI_OWN(q)[at];
    nbiQtNode *node = &NBI_NODES(q)[n];
    const int32_t last = node->start + node->count - 1;
    if (last != at) nbi_move_pos(q, last, node->start, at, n);
    nbi_fb_clear(q, last);
    if (--node->count == 0) {
        nbi_block_give(q, node->start, node->cls);
        node->cls = -1;
        node->start = 0;
    }
    nbi_sync(q, n);
}

// The step of box b's centre along a Morton curve over node nd's cell, 16 x 16 steps (sx, sy:
// 16 over the cell's sides), centres outside the cell clamped. Huge coordinates may overflow to
// infinity or NaN here: those take a corner (the order only groups rectangles, it decides no
// answer).
NBI_INLINE uint8_t nbi_curve_key(const nbiQtNode *nd, double sx, double sy, const double *b)
{
    const double cx = (0.5 * b[0] + 0.5 * b[2] - nd->clo[0]) * sx;
    const double cy = (0.5 * b[1] + 0.5 * b[3] - nd->clo[1]) * sy;
    const unsigned x = cx >= 15.0 ? 15u : cx >= 0.0 ? (unsigned)cx : 0u;
    const unsigned y = cy >= 15.0 ? 15u : cy >= 0.0 ? (unsigned)cy : 0u;
    unsigned k = 0;
    for (int i = 0; i < 4; i++) k |= ((x >> i) & 1u) << (2 * i) | ((y >> i) & 1u) << (2 * i + 1);
    return (uint8_t)k;
}

// ---- tidying: a node's rectangles back in curve order ----
//
// A build lays each node's rectangles out along a Morton curve over the node's cell
// (nbi_build_sort), so that a run of eight holds rectangles near each other and its run box is
// small. Moves undo that: rectangles wander inside their node (their run boxes grow with them)
// and those that change node are appended at the end of their new node's block. A window then
// meets more runs every frame (in the moving benchmark 42 rectangles tested a window after the
// build, 56 on average over 100 frames). Tidying a node sorts its rectangles along the curve
// again, in place, and computes its run boxes anew: the node holds the same rectangles, so no
// other box changes, and handles stay valid (their slots follow the moved positions).

// Which nodes are tidied: those with run boxes and from NBI_QT_TIDY_MIN to NBI_QT_TIDY_MAX
// rectangles (a node with more is left as it is: its curve keys would be too coarse anyway).
// How often: moves pay for it, NBI_QT_TIDY_RATIO moves for each rectangle a tidying moves
// (nbi_tidy_pay), so that in a tree whose rectangles all move, each node is tidied about every
// NBI_QT_TIDY_RATIO frames, at about 1/8 of a move's cost. Measured: docs/quadtree.md.
#ifndef NBI_QT_TIDY_RATIO_SET // the fuzz build sets 1, to reach the tidying often (tests/fuzz)
#define NBI_QT_TIDY_RATIO_SET 8
#endif
enum { NBI_QT_TIDY_MIN = 32, NBI_QT_TIDY_MAX = 1024, NBI_QT_TIDY_RATIO = NBI_QT_TIDY_RATIO_SET };

// Swaps the rectangles at positions a and b of one block: every per-position copy moves with
// its rectangle (no box is computed again), and their slots follow.
static void nbi_swap_pos(nbQuadtree *q, int32_t a, int32_t b)
{
    nbiQtBox *box = NBI_BOX(q);
    const nbiQtBox tb = box[a];
    box[a] = box[b];
    box[b] = tb;
    float *fa = nbi_fb_at(q, a), *fb = nbi_fb_at(q, b);
    int16_t *ea = nbi_qb_at(q, a), *eb = nbi_qb_at(q, b);
    for (int i = 0; i < 4; i++) {
        const float tf = fa[4 * i];
        fa[4 * i] = fb[4 * i];
        fb[4 * i] = tf;
        const int16_t te = ea[8 * i];
        ea[8 * i] = eb[8 * i];
        eb[8 * i] = te;
    }
    nbHit *ha = nbi_hit_of(q, a), *hb = nbi_hit_of(q, b);
    const nbHit th = *ha;
    *ha = *hb;
    *hb = th;
    uint32_t *cat = NBI_CAT(q), *mask = NBI_MASK(q);
    const uint32_t tc = cat[a], tm = mask[a];
    cat[a] = cat[b];
    mask[a] = mask[b];
    cat[b] = tc;
    mask[b] = tm;
    nbi_pool_set_slot_value(&q->pool, (int32_t)((uint32_t)ha->handle.bits - 1u), a);
    nbi_pool_set_slot_value(&q->pool, (int32_t)((uint32_t)hb->handle.bits - 1u), b);
}

// Whether node n is one that tidying sorts.
static bool nbi_tidy_fits(const nbQuadtree *q, int32_t n)
{
    const nbiQtNode *nd = &NBI_NODES(q)[n];
    return n != NBI_QT_OUT && nd->cls >= NBI_QT_RB_MIN_CLS && nd->count >= NBI_QT_TIDY_MIN &&
           nd->count <= NBI_QT_TIDY_MAX;
}

// Sorts node n's rectangles (nbi_tidy_fits) along the curve again and computes its run boxes
// anew.
static void nbi_tidy(nbQuadtree *q, int32_t n)
{
    const nbiQtNode *nd = &NBI_NODES(q)[n];
    const int32_t count = nd->count, start = nd->start;
    const double sx = 16.0 / (nd->chi[0] - nd->clo[0]), sy = 16.0 / (nd->chi[1] - nd->clo[1]);
    if (!(isfinite(sx) && isfinite(sy))) return;
    uint8_t key[NBI_QT_TIDY_MAX];
    int16_t to[NBI_QT_TIDY_MAX];
    int32_t at[257];
    memset(at, 0, sizeof at);
    const nbiQtBox *box = NBI_BOX(q);
    for (int32_t i = 0; i < count; i++) {
        key[i] = nbi_curve_key(nd, sx, sy, box[start + i].b);
        at[key[i] + 1]++;
    }
    for (int k = 0; k < 256; k++) at[k + 1] += at[k];
    for (int32_t i = 0; i < count; i++) to[i] = (int16_t)at[key[i]]++;
    // The permutation by its cycles: the rectangle at i goes to to[i].
    for (int32_t i = 0; i < count; i++)
        while (to[i] != i) {
            const int32_t j = to[i];
            nbi_swap_pos(q, start + i, start + j);
            to[i] = to[j];
            to[j] = (int16_t)j;
        }
    for (int32_t r = 0; r < (count + 7) >> 3; r++) nbi_rb_refit(q, start, nd->cls, start + 8 * r);
}

// Tidies the nodes the moves so far pay for, round the nodes from where the last call stopped,
// looking at NBI_QT_TIDY_LOOK nodes at most, and sets the credit the next call is due at: what
// the node at the cursor costs, or, when none in reach could be tidied, NBI_QT_TIDY_RATIO *
// NBI_QT_TIDY_MIN more moves. So a tree with few or no such nodes (small leaves) costs a move a
// quarter of a node record's look at most, and the credit, capped, never pays for more than a
// few nodes at once (no long pause in one move).
enum { NBI_QT_TIDY_LOOK = 64, NBI_QT_TIDY_CAP = 4 * NBI_QT_TIDY_RATIO * NBI_QT_TIDY_MAX };

static void nbi_tidy_run(nbQuadtree *q)
{
    if (q->tidy_credit > NBI_QT_TIDY_CAP) q->tidy_credit = NBI_QT_TIDY_CAP;
    const int32_t look = q->node_top < NBI_QT_TIDY_LOOK ? q->node_top : NBI_QT_TIDY_LOOK;
    for (int32_t looked = 0; looked < look; looked++) { // one round at most: a node once a call
        if (q->tidy_next >= q->node_top) q->tidy_next = 0;
        const int32_t n = q->tidy_next;
        if (nbi_tidy_fits(q, n)) {
            const int64_t cost = (int64_t)NBI_QT_TIDY_RATIO * NBI_NODES(q)[n].count;
            if (q->tidy_credit < cost) {
                q->tidy_due = cost;
                return;
            }
            q->tidy_credit -= cost;
            nbi_tidy(q, n);
            q->tidied++;
        }
        q->tidy_next++;
    }
    q->tidy_due = q->tidy_credit + (int64_t)NBI_QT_TIDY_RATIO * NBI_QT_TIDY_MIN;
}

// One change made (an insert, a remove, a move): its share of the tidying. Inserts append to a
// node's block and removals fill the hole with its last rectangle, so they undo the order too.
// nb_quadtree_move and nb_quadtree_move_many both pay after each move, so that a batch leaves
// the same tree as the single moves.
NBI_INLINE void nbi_tidy_pay(nbQuadtree *q)
{
    if (++q->tidy_credit >= q->tidy_due) nbi_tidy_run(q);
}

// ---- placement ----

// Fills child k's cell and bounds from its parent.
static void nbi_child_geometry(const nbQuadtree *q, const nbiQtNode *parent, int k, nbiQtNode *c)
{
    for (int a = 0; a < 2; a++) {
        const double mid = 0.5 * (parent->clo[a] + parent->chi[a]);
        const bool upper = a == 0 ? (k & 1) != 0 : (k & 2) != 0;
        c->clo[a] = upper ? mid : parent->clo[a];
        c->chi[a] = upper ? parent->chi[a] : mid;
        if (q->placement == NB_QUADTREE_TIGHT) {
            c->lo[a] = c->clo[a];
            c->hi[a] = c->chi[a];
        } else {
            const double half = 0.5 * (c->chi[a] - c->clo[a]);
            c->lo[a] = c->clo[a] - half;
            c->hi[a] = c->chi[a] + half;
        }
        c->lo[a] = c->lo[a] > parent->lo[a] ? c->lo[a] : parent->lo[a];
        c->hi[a] = c->hi[a] < parent->hi[a] ? c->hi[a] : parent->hi[a];
    }
}

// Which of the four children `kids` of node n takes box b: 0..3, or -1 when b stays in n.
NBI_INLINE int nbi_pick(const nbQuadtree *q, const nbiQtNode *n, const nbiQtNode *kids,
                        const double *b)
{
    int k = 0;
    for (int a = 0; a < 2; a++) {
        const double mid = 0.5 * (n->clo[a] + n->chi[a]);
        if (q->placement == NB_QUADTREE_TIGHT) {
            if (b[2 + a] <= mid) continue;
            if (b[a] < mid) return -1;
        } else if (0.5 * (b[a] + b[2 + a]) < mid) {
            continue;
        }
        k |= 1 << a;
    }
    return nbi_within(&kids[k], b) ? k : -1;
}

// The node that takes box b, descending from `from` (whose bounds hold b).
static int32_t nbi_descend(const nbQuadtree *q, int32_t from, const double *b)
{
    const nbiQtNode *nodes = NBI_NODES(q);
    int32_t n = from;
    for (;;) {
        const nbiQtNode *node = &nodes[n];
        if (node->child < 0) return n;
        const int k = nbi_pick(q, node, &nodes[node->child], b);
        if (k < 0) return n;
        n = node->child + k;
    }
}

// The root's bounds for its cell (the root has no parent to clamp to).
static void nbi_root_bounds(const nbQuadtree *q, nbiQtNode *r)
{
    for (int a = 0; a < 2; a++) {
        const double half = q->placement == NB_QUADTREE_TIGHT ? 0.0 : 0.5 * (r->chi[a] - r->clo[a]);
        r->lo[a] = r->clo[a] - half;
        r->hi[a] = r->chi[a] + half;
    }
}

// Whether node n keeps box b: its bounds hold b and, loose, its cell holds b's centre (as
// nbi_pick computes it). A move within a node that keeps it changes nothing else, and the root
// takes b without growing. A centre outside the cell would hold b above the leaves for good:
// where the node splits, b fits no child's bounds unless it lies within a quarter of the node's
// side past the cell, and a level further down within an eighth, and so on.
static bool nbi_keeps(const nbQuadtree *q, const nbiQtNode *n, const double *b)
{
    if (!nbi_within(n, b)) return false;
    if (q->placement == NB_QUADTREE_TIGHT) return true; // bounds = cell
    for (int a = 0; a < 2; a++) {
        const double c = 0.5 * (b[a] + b[2 + a]);
        if (!(c >= n->clo[a] && c <= n->chi[a])) return false;
    }
    return true;
}

// Whether a root r that does not take b grows downwards on axis a (else upwards): towards the
// side b sticks out of, or where neither, the side its centre is nearer to.
static bool nbi_grows_down(const nbiQtNode *r, const double *b, int a)
{
    if (b[a] < r->lo[a]) return true;
    if (b[2 + a] > r->hi[a]) return false;
    return 0.5 * (b[a] + b[2 + a]) < 0.5 * (r->clo[a] + r->chi[a]);
}

// How many doublings the root needs before it takes b (nbi_keeps): 0 if it does now, -1 if
// more than the limit allows (b then goes to the outside list).
static int nbi_growth(const nbQuadtree *q, const double *b)
{
    nbiQtNode r = NBI_NODES(q)[NBI_QT_ROOT];
    if (nbi_keeps(q, &r, b)) return 0;
    for (int g = 1; g <= NBI_QT_GROW_MAX - q->grown; g++) {
        for (int a = 0; a < 2; a++) {
            const double side = r.chi[a] - r.clo[a];
            if (nbi_grows_down(&r, b, a))
                r.clo[a] -= side;
            else
                r.chi[a] += side;
        }
        nbi_root_bounds(q, &r);
        if (!isfinite(r.lo[0] + r.lo[1] + r.hi[0] + r.hi[1])) return -1;
        if (nbi_keeps(q, &r, b)) return g;
    }
    return -1;
}

// A root cell for rectangles whose centres (as nbi_pick computes them) span cb and whose union is
// u, into r's cell and bounds: a square at least `least` on a side, centred on the centres (tight:
// on the union), whose cell holds every centre and whose bounds hold u, so that it takes every
// one of them (nbi_keeps), with `margin` (a fraction of the side) to spare on each edge.
// False, r unchanged, when no finite one exists.
static bool nbi_root_fit(const nbQuadtree *q, const double *cb, const double *u, double least,
                         double margin, nbiQtNode *out)
{
    nbiQtNode fit = *out, *r = &fit;
    const bool tight = q->placement == NB_QUADTREE_TIGHT;
    double c[2], side = least;
    for (int a = 0; a < 2; a++) {
        const double *m = tight ? u : cb;
        c[a] = 0.5 * m[a] + 0.5 * m[2 + a];
        double need = tight ? u[2 + a] - u[a] : cb[2 + a] - cb[a];
        if (!tight) need = fmax(need, fmax(c[a] - u[a], u[2 + a] - c[a])); // bounds: c +- side
        side = fmax(side, need);
    }
    side += 2.0 * margin * side;
    // Rounding may leave a centre or an edge a step outside: a larger side then.
    for (int k = 0; k < 64 && side > 0.0 && isfinite(side); k++, side *= 2.0) {
        for (int a = 0; a < 2; a++) {
            r->clo[a] = c[a] - 0.5 * side;
            r->chi[a] = c[a] + 0.5 * side;
        }
        nbi_root_bounds(q, r);
        const bool finite = isfinite(r->lo[0] + r->lo[1] + r->hi[0] + r->hi[1]);
        if (finite && r->clo[0] < r->chi[0] && r->clo[1] < r->chi[1] && nbi_within(r, u) &&
            (tight || (cb[0] >= r->clo[0] && cb[1] >= r->clo[1] && cb[2] <= r->chi[0] &&
                       cb[3] <= r->chi[1]))) {
            *out = fit;
            return true;
        }
    }
    return false;
}

// Doubles the root once towards b (a group prepared): the old root becomes one of the new
// root's four children.
static void nbi_grow(nbQuadtree *q, const double *b)
{
    const int32_t g = nbi_group_take(q);
    nbiQtNode *nodes = NBI_NODES(q);
    const nbiQtNode old = nodes[NBI_QT_ROOT];
    nbiQtNode *root = &nodes[NBI_QT_ROOT];
    int k = 0;
    for (int a = 0; a < 2; a++) {
        const double side = old.chi[a] - old.clo[a];
        if (nbi_grows_down(&old, b, a)) {
            root->clo[a] = old.clo[a] - side;
            k |= 1 << a; // the old root is the upper half
        } else {
            root->chi[a] = old.chi[a] + side;
        }
    }
    nbi_root_bounds(q, root);
    root->child = g;
    root->start = 0;
    root->count = 0;
    root->cls = -1;
    root->level = old.level - 1;
    for (int c = 0; c < 4; c++) {
        nbiQtNode *ch = &nodes[g + c];
        if (c == k) {
            *ch = old;
            ch->parent = NBI_QT_ROOT;
            float *gb = nbi_gb_of(q, g + c); // the old root's bounds hold its subtree
            const double ob[4] = {old.lo[0], old.lo[1], old.hi[0], old.hi[1]};
            float v[4];
            nbi_f_fields(q, ob, v);
            for (int i = 0; i < 4; i++) gb[4 * i] = v[i];
            if (ch->child >= 0)
                for (int j = 0; j < 4; j++) nodes[ch->child + j].parent = g + c;
            for (int32_t i = 0; i < ch->count; i++) NBI_OWN(q)[ch->start + i] = g + c;
            continue;
        }
        nbi_node_init(ch, NBI_QT_ROOT, old.level);
        nbi_child_geometry(q, root, c, ch);
    }
    for (int c = 0; c < 4; c++) nbi_sync(q, g + c);
    nbi_sync(q, NBI_QT_ROOT);
    q->grown++;
}

// Whether leaf n splits when it receives one more rectangle.
static bool nbi_splits(const nbQuadtree *q, int32_t n)
{
    const nbiQtNode *node = &NBI_NODES(q)[n];
    return n != NBI_QT_OUT && node->child < 0 && node->count + 1 > q->threshold &&
           node->level < q->max_depth;
}

// The blocks a split of leaf n needs, with b (the rectangle that triggers it) counted in.
static void nbi_split_need(const nbQuadtree *q, int32_t n, const double *b, nbiQtNeed *need)
{
    const nbiQtNode *node = &NBI_NODES(q)[n];
    nbiQtNode kids[4];
    for (int k = 0; k < 4; k++) nbi_child_geometry(q, node, k, &kids[k]);
    int64_t per[5] = {0, 0, 0, 0, 0}; // per child, then those that stay
    for (int32_t i = 0; i < node->count; i++) {
        const int k = nbi_pick(q, node, kids, NBI_BOX(q)[node->start + i].b);
        per[k < 0 ? 4 : k]++;
    }
    const int kb = nbi_pick(q, node, kids, b);
    per[kb < 0 ? 4 : kb]++;
    need->groups += 1;
    for (int k = 0; k < 4; k++)
        if (per[k] > 0) nbi_need_block(need, nbi_cls_for(per[k]));
    if (per[4] > ((int64_t)1 << node->cls)) nbi_need_block(need, node->cls + 1);
}

// Splits leaf n (a group and the children's blocks prepared): its rectangles go down where they
// fit, each child getting a block that holds exactly what comes to it, `extra` (the rectangle
// whose insert splits n) included; the rest stay in order.
static void nbi_split(nbQuadtree *q, int32_t n, const double *extra)
{
    const int32_t g = nbi_group_take(q);
    nbiQtNode *nodes = NBI_NODES(q);
    for (int k = 0; k < 4; k++) {
        nbi_node_init(&nodes[g + k], n, nodes[n].level + 1);
        nbi_child_geometry(q, &nodes[n], k, &nodes[g + k]);
        nbi_sync(q, g + k); // the frame its rectangles' 16-bit boxes are put in
    }
    nodes[n].child = g;
    nbiQtNode *node = &nodes[n];
    int64_t per[4] = {0, 0, 0, 0};
    int8_t pick[64];
    const bool small = node->count <= 64;
    for (int32_t i = 0; i < node->count; i++) {
        const int k = nbi_pick(q, node, &nodes[g], NBI_BOX(q)[node->start + i].b);
        if (small) pick[i] = (int8_t)k;
        if (k >= 0) per[k]++;
    }
    // The rectangle about to come in counts too, as nbi_split_need counted it.
    const int ke = nbi_pick(q, node, &nodes[g], extra);
    if (ke >= 0) per[ke]++;
    for (int k = 0; k < 4; k++) {
        if (per[k] == 0) continue;
        const int c = nbi_cls_for(per[k]);
        nodes[g + k].start = nbi_block_take(q, c);
        nodes[g + k].cls = c;
        nbi_block_init(q, nodes[g + k].start, c, nodes[g + k].start);
    }
    int32_t w = 0;
    const int32_t count = node->count;
    for (int32_t i = 0; i < count; i++) {
        const int32_t at = node->start + i;
        const int k = small ? pick[i] : nbi_pick(q, node, &nodes[g], NBI_BOX(q)[at].b);
        if (k < 0) {
            if (w != i) nbi_move_pos(q, at, node->start, node->start + w, n);
            w++;
            continue;
        }
        nbiQtNode *c = &nodes[g + k];
        nbi_move_pos(q, at, c->start, c->start + c->count++, g + k);
    }
    for (int32_t i = w; i < count; i++) nbi_fb_clear(q, node->start + i);
    node->count = w;
    if (w == 0 && ke >= 0) { // emptied, and `extra` goes down too (else it comes here next)
        nbi_block_give(q, node->start, node->cls);
        node->cls = -1;
        node->start = 0;
    }
    nbi_sync(q, n);
    for (int k = 0; k < 4; k++) nbi_sync(q, g + k);
}

// The least side of a root fitted to data, a fraction of the desc's side (the hint): data that
// all lies in one point, or nearly, gets a root no smaller, so that the root can still grow
// NBI_QT_GROW_MAX - NBI_QT_FIT_LEVELS times past the hint's side.
static double nbi_fit_least(const nbQuadtree *q)
{
    const double side = fmax(q->root0.max[0] - q->root0.min[0], q->root0.max[1] - q->root0.min[1]);
    return ldexp(side, -NBI_QT_FIT_LEVELS);
}

// Puts node n's rectangles' boxes anew (their float copies, their 16-bit boxes in its frame, its
// run or segment boxes), after its frame or the float origin changed. Not for a node with a
// float box (nbi_gb_of), which would keep the old.
static void nbi_node_reput(nbQuadtree *q, int32_t n)
{
    const nbiQtNode *r = &NBI_NODES(q)[n];
    NB_ASSERT(n < NBI_QT_GROUPS);
    if (r->count == 0) return;
    nbi_block_init(q, r->start, r->cls, r->start + r->count);
    for (int32_t p = r->start; p < r->start + r->count; p++) {
        double b[4];
        memcpy(b, NBI_BOX(q)[p].b, sizeof b);
        nbi_box_put(q, n, r->start, p, b);
    }
}

// Gives the root (a leaf) the cell and bounds of `geom` and level 0 (the doublings count from 0
// again), and the float copies the origin fo: the root's and the outside list's rectangles'
// boxes are put anew (nbi_node_reput). Every rectangle the root holds must lie within the new
// bounds.
static void nbi_root_reframe(nbQuadtree *q, const nbiQtNode *geom, const double *fo)
{
    nbiQtNode *r = &NBI_NODES(q)[NBI_QT_ROOT];
    NB_ASSERT(r->child < 0);
    for (int a = 0; a < 2; a++) {
        r->clo[a] = geom->clo[a];
        r->chi[a] = geom->chi[a];
        r->lo[a] = geom->lo[a];
        r->hi[a] = geom->hi[a];
    }
    r->level = 0;
    q->grown = 0;
    nbi_sync(q, NBI_QT_ROOT);
    const bool moved = fo[0] != q->fo[0] || fo[1] != q->fo[1];
    q->fo[0] = fo[0];
    q->fo[1] = fo[1];
    nbi_node_reput(q, NBI_QT_ROOT);
    if (moved) nbi_node_reput(q, NBI_QT_OUT);
}

// The middle of a node's cell: a float origin (nbQuadtree.fo) for a root.
static void nbi_cell_middle(const nbiQtNode *r, double *out)
{
    for (int a = 0; a < 2; a++) out[a] = 0.5 * r->clo[a] + 0.5 * r->chi[a];
}

// Before rectangle b comes in by an insert, while the root is a leaf: an empty tree's root goes
// back to the desc's if that takes b (nbi_keeps), else to one of the desc's side around b; a
// root about to split (the threshold reached) is fitted to what it holds and b, with the build's
// margin (nbi_root_fit). So data far from the hint, or much smaller or larger than it, gets a
// root of its own size before the first split fixes the tree's grid, instead of hanging below a
// chain of doublings or filling a corner of the hint. Does nothing when no finite root fits.
// O(threshold), once a split of the root.
static void nbi_root_refit(nbQuadtree *q, const double *b)
{
    const nbiQtNode *r = &NBI_NODES(q)[NBI_QT_ROOT];
    if (r->child >= 0) return;
    nbiQtNode fit = *r;
    if (r->count == 0) {
        for (int a = 0; a < 2; a++) {
            fit.clo[a] = q->root0.min[a];
            fit.chi[a] = q->root0.max[a];
        }
        nbi_root_bounds(q, &fit);
        const double cx = 0.5 * (b[0] + b[2]), cy = 0.5 * (b[1] + b[3]);
        const double cb[4] = {cx, cy, cx, cy};
        const double side = ldexp(nbi_fit_least(q), NBI_QT_FIT_LEVELS);
        if (!nbi_keeps(q, &fit, b)) nbi_root_fit(q, cb, b, side, 0.0, &fit);
        double fo[2];
        nbi_cell_middle(&fit, fo);
        nbi_root_reframe(q, &fit, fo);
        return;
    }
    if (!nbi_splits(q, NBI_QT_ROOT)) return;
    double u[4], cb[4];
    for (int a = 0; a < 2; a++) {
        u[a] = b[a];
        u[2 + a] = b[2 + a];
        cb[a] = cb[2 + a] = 0.5 * (b[a] + b[2 + a]);
    }
    for (int32_t p = r->start; p < r->start + r->count; p++) {
        const double *e = NBI_BOX(q)[p].b;
        for (int a = 0; a < 2; a++) {
            const double c = 0.5 * (e[a] + e[2 + a]);
            u[a] = fmin(u[a], e[a]);
            u[2 + a] = fmax(u[2 + a], e[2 + a]);
            cb[a] = fmin(cb[a], c);
            cb[2 + a] = fmax(cb[2 + a], c);
        }
    }
    if (nbi_root_fit(q, cb, u, nbi_fit_least(q), NBI_QT_FIT_MARGIN, &fit)) {
        double fo[2];
        nbi_cell_middle(&fit, fo);
        nbi_root_reframe(q, &fit, fo);
    }
}

// A placement decided before anything changes: the root's growth, or the target node (and
// whether it splits first), and the room all of it needs.
typedef struct nbiQtPlan {
    int grow;       // doublings of the root first
    int32_t target; // the node when grow == 0
    bool split;     // the target splits before the rectangle goes in
    nbiQtNeed need;
} nbiQtPlan;

static void nbi_plan(const nbQuadtree *q, const double *b, int32_t items, nbiQtPlan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->need.items = items;
    plan->grow = nbi_growth(q, b);
    plan->target = -1;
    if (plan->grow < 0) {
        plan->grow = 0;
        plan->target = NBI_QT_OUT;
    } else if (plan->grow > 0) {
        // It lands in the new root or a new, empty child of it.
        plan->need.groups = plan->grow;
        nbi_need_block(&plan->need, NBI_QT_MIN_CLS);
        return;
    } else {
        plan->target = nbi_descend(q, NBI_QT_ROOT, b);
    }
    if (nbi_splits(q, plan->target)) {
        plan->split = true;
        nbi_split_need(q, plan->target, b, &plan->need);
        // After the split the rectangle lands in a child sized for it, or stays in the target,
        // whose block the need above grew if it had to.
        return;
    }
    const int c = nbi_append_cls(&NBI_NODES(q)[plan->target]);
    if (c >= 0) nbi_need_block(&plan->need, c);
}

// Carries out a plan whose room is prepared: returns the new position.
static int32_t nbi_place(nbQuadtree *q, const nbiQtPlan *plan, const double *b, uint64_t hnd,
                         uint64_t user, uint32_t cat, uint32_t mask)
{
    int32_t target = plan->target;
    if (target < 0) {
        for (int g = 0; g < plan->grow; g++) nbi_grow(q, b);
        target = nbi_descend(q, NBI_QT_ROOT, b);
    } else if (plan->split) {
        nbi_split(q, target, b);
        target = nbi_descend(q, target, b);
    }
    return nbi_append(q, target, b, hnd, user, cat, mask);
}

// After node n lost a rectangle: frees groups of four empty leaves, upwards.
static void nbi_collapse(nbQuadtree *q, int32_t n)
{
    nbiQtNode *nodes = NBI_NODES(q);
    if (n == NBI_QT_OUT) return;
    if (nodes[n].child < 0) n = nodes[n].parent;
    while (n >= 0) {
        nbiQtNode *node = &nodes[n];
        const int32_t g = node->child;
        if (g < 0) break;
        for (int k = 0; k < 4; k++)
            if (nodes[g + k].child >= 0 || nodes[g + k].count > 0) return;
        nbi_group_give(q, g);
        node->child = -1;
        nbi_sync(q, n);
        if (node->count > 0) return;
        n = node->parent;
    }
}

// ---- create, destroy, reserve ----

static void nbi_reset(nbQuadtree *q)
{
    q->count = 0;
    q->nfiltered = 0;
    q->top = 0;
    for (int c = 0; c < NBI_QT_CLASSES; c++) {
        q->free_block[c] = -1;
        q->free_count[c] = 0;
    }
    q->node_top = NBI_QT_GROUPS;
    q->tidy_next = 0;
    q->tidy_credit = 0;
    q->tidy_due = (int64_t)NBI_QT_TIDY_RATIO * NBI_QT_TIDY_MIN;
    q->tidied = 0;
    q->free_group = -1;
    q->free_groups = 0;
    nbiQtNode *nodes = NBI_NODES(q);
    nbiQtNode *r = &nodes[NBI_QT_ROOT];
    nbi_node_init(r, -1, 0);
    for (int a = 0; a < 2; a++) {
        r->clo[a] = q->root0.min[a];
        r->chi[a] = q->root0.max[a];
    }
    nbi_root_bounds(q, r);
    nbi_cell_middle(r, q->fo);
    nbiQtNode *o = &nodes[NBI_QT_OUT];
    nbi_node_init(o, -1, INT32_MIN);
    for (int a = 0; a < 2; a++) {
        o->clo[a] = o->lo[a] = -(double)INFINITY;
        o->chi[a] = o->hi[a] = (double)INFINITY;
    }
    nbi_sync(q, NBI_QT_ROOT);
    nbi_sync(q, NBI_QT_OUT);
    q->grown = 0;
}

// The part of create after the desc was checked: an empty tree with the same settings.
static nbStatus nbi_create(const nbAllocator *alloc, const nbRect *root0, int32_t threshold,
                           int32_t max_depth, int32_t placement, nbQuadtree **out)
{
    *out = NULL;
    nbQuadtree *q = nbi_alloc(alloc, 1, sizeof *q);
    if (q == NULL) return NB_ERR_OUT_OF_MEMORY;
    memset(q, 0, sizeof *q);
    q->alloc = *alloc;
    q->threshold = threshold;
    q->max_depth = max_depth;
    q->placement = placement;
    q->root0 = *root0;
    nbStatus st = nbi_pool_init(&q->pool, alloc, 0);
    if (st == NB_OK) {
        q->node_top = NBI_QT_GROUPS;
        q->free_group = -1;
        const nbiQtNeed need = {0, 0, 0, 0, {0}};
        st = nbi_qt_room(q, &need); // the root and the outside list
    }
    if (st != NB_OK) {
        nb_quadtree_destroy(q);
        return st;
    }
    nbi_reset(q);
    *out = q;
    return NB_OK;
}

nbStatus nb_quadtree_create(const nbQuadtreeDesc *desc, nbQuadtree **out)
{
    if (out == NULL) return NB_ERR_NULL_ARG;
    *out = NULL;
    if (desc == NULL) return NB_ERR_NULL_ARG;
    nbAllocator alloc;
    if (!nbi_allocator(desc->allocator, &alloc)) return NB_ERR_NULL_ARG;
    const nbRect *b = &desc->bounds;
    for (int a = 0; a < 2; a++)
        if (!isfinite(b->min[a]) || !isfinite(b->max[a])) return NB_ERR_NOT_FINITE;
    const bool zero = b->min[0] == 0.0 && b->min[1] == 0.0 && b->max[0] == 0.0 && b->max[1] == 0.0;
    if (!zero && !(b->min[0] < b->max[0] && b->min[1] < b->max[1])) return NB_ERR_OUT_OF_RANGE;
    if (!zero && !(isfinite(b->max[0] - b->min[0]) && isfinite(b->max[1] - b->min[1])))
        return NB_ERR_OUT_OF_RANGE;
    if (desc->split_threshold < 0 || desc->split_threshold > (1 << 20) || desc->max_depth < 0 ||
        desc->max_depth > NB_QUADTREE_MAX_DEPTH || desc->capacity_hint < 0 ||
        desc->capacity_hint > NBI_QT_MAX_ITEMS || desc->placement < 0 ||
        desc->placement > NB_QUADTREE_TIGHT)
        return NB_ERR_OUT_OF_RANGE;
    nbRect root0 = *b;
    if (zero) {
        root0.min[0] = root0.min[1] = -1024.0;
        root0.max[0] = root0.max[1] = 1024.0;
    }
    nbQuadtree *q = NULL;
    nbStatus st = nbi_create(
        &alloc, &root0,
        desc->split_threshold > 0 ? desc->split_threshold : NBI_QT_DEFAULT_THRESHOLD,
        desc->max_depth > 0 ? desc->max_depth : NBI_QT_DEFAULT_DEPTH,
        desc->placement == NB_QUADTREE_TIGHT ? NB_QUADTREE_TIGHT : NB_QUADTREE_LOOSE, &q);
    if (st == NB_OK && desc->capacity_hint > 0) st = nb_quadtree_reserve(q, desc->capacity_hint);
    if (st != NB_OK) {
        nb_quadtree_destroy(q);
        return st;
    }
    *out = q;
    return NB_OK;
}

void nb_quadtree_destroy(nbQuadtree *q)
{
    if (q == NULL) return;
    nbiBuf *pos[NBI_QT_POS_BUFS];
    size_t elem[NBI_QT_POS_BUFS];
    nbi_qt_pos_bufs(q, pos, elem);
    for (int b = 0; b < NBI_QT_POS_BUFS; b++)
        nbi_free(&q->alloc, pos[b]->ptr, pos[b]->cap, elem[b]);
    nbi_free(&q->alloc, q->nodes.ptr, q->nodes.cap, sizeof(nbiQtNode));
    nbi_free(&q->alloc, q->hot.ptr, q->hot.cap, sizeof(nbiQtHot));
    nbi_free(&q->alloc, q->gb.ptr, q->gb.cap, sizeof(nbiQtGb));
    nbi_pool_destroy(&q->pool);
    const nbAllocator a = q->alloc;
    nbi_free(&a, q, 1, sizeof *q);
}

nbStatus nb_quadtree_reserve(nbQuadtree *q, int32_t count)
{
    if (q == NULL) return NB_ERR_NULL_ARG;
    if (count < 0 || count > NBI_QT_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    nbiQtNeed need = {0, 0, 0, 0, {0}};
    need.items = count > q->count ? count - q->count : 0;
    // Blocks are at most twice what they hold, plus what waits on the free lists.
    const int64_t positions = 3 * (int64_t)count + 64;
    need.positions = positions > q->top ? positions - q->top : 0;
    const int64_t groups = (int64_t)count / 8 + 16;
    const int64_t used_groups = (q->node_top - NBI_QT_GROUPS) / 4 - q->free_groups;
    need.groups = groups > used_groups ? groups - used_groups : 0;
    return nbi_qt_room(q, &need);
}

void nb_quadtree_clear(nbQuadtree *q)
{
    if (q == NULL) return;
    nbi_pool_clear(&q->pool);
    nbi_reset(q);
}

int32_t nb_quadtree_count(const nbQuadtree *q)
{
    return q == NULL ? 0 : q->count;
}

size_t nb_quadtree_memory_bytes(const nbQuadtree *q)
{
    if (q == NULL) return 0;
    size_t bytes = sizeof *q + nbi_pool_memory_bytes(&q->pool) + q->nodes.cap * sizeof(nbiQtNode) +
                   q->hot.cap * sizeof(nbiQtHot) + q->gb.cap * sizeof(nbiQtGb);
    nbiBuf *pos[NBI_QT_POS_BUFS];
    size_t elem[NBI_QT_POS_BUFS];
    nbi_qt_pos_bufs((nbQuadtree *)q, pos, elem);
    for (int b = 0; b < NBI_QT_POS_BUFS; b++) bytes += pos[b]->cap * elem[b];
    return bytes;
}

nbStatus nb_quadtree_info(const nbQuadtree *q, nbQuadtreeInfo *out)
{
    if (out != NULL) memset(out, 0, sizeof *out);
    if (q == NULL || out == NULL) return NB_ERR_NULL_ARG;
    const nbiQtNode *nodes = NBI_NODES(q);
    out->count = q->count;
    out->outside = nodes[NBI_QT_OUT].count;
    out->root_grown = q->grown;
    for (int a = 0; a < 2; a++) {
        out->root.min[a] = nodes[NBI_QT_ROOT].clo[a];
        out->root.max[a] = nodes[NBI_QT_ROOT].chi[a];
    }
    out->bytes = nb_quadtree_memory_bytes(q);
    out->tidied = q->tidied;
    int32_t stack[NBI_QT_STACK];
    int top = 0;
    stack[top++] = NBI_QT_ROOT;
    const int32_t root_level = nodes[NBI_QT_ROOT].level;
    while (top > 0) {
        const nbiQtNode *n = &nodes[stack[--top]];
        out->nodes++;
        if (n->level - root_level > out->depth) out->depth = n->level - root_level;
        if (n->child < 0) {
            out->leaves++;
            continue;
        }
        out->held_above += n->count;
        for (int k = 3; k >= 0; k--) stack[top++] = n->child + k;
    }
    return NB_OK;
}

// ---- insert, move, remove ----

nbStatus nb_quadtree_insert(nbQuadtree *q, const nbRect *rect, uint64_t user, nbFilter filter,
                            nbHandle *out)
{
    if (out != NULL) *out = NB_HANDLE_NULL;
    if (q == NULL || rect == NULL || out == NULL) return NB_ERR_NULL_ARG;
    nbStatus st = nbi_rect_check(rect);
    if (st != NB_OK) return st;
    const double b[4] = {rect->min[0], rect->min[1], rect->max[0], rect->max[1]};
    // While the root is a leaf, it may be fitted first (nbi_root_refit); kept to undo that.
    const bool leaf = NBI_NODES(q)[NBI_QT_ROOT].child < 0;
    nbiQtNode root;
    int32_t grown = 0;
    double fo[2] = {0.0, 0.0};
    if (leaf) {
        root = NBI_NODES(q)[NBI_QT_ROOT];
        grown = q->grown;
        fo[0] = q->fo[0];
        fo[1] = q->fo[1];
        nbi_root_refit(q, b);
    }
    nbiQtPlan plan;
    nbi_plan(q, b, 1, &plan);
    st = nbi_qt_room(q, &plan.need);
    if (st != NB_OK) {
        if (leaf) { // the root as it was
            nbi_root_reframe(q, &root, fo);
            NBI_NODES(q)[NBI_QT_ROOT].level = root.level;
            q->grown = grown;
        }
        return st;
    }
    nbHandle h;
    st = nbi_pool_alloc(&q->pool, 0, &h);
    if (st != NB_OK) return st; // cannot happen: room was prepared
    nbi_place(q, &plan, b, h.bits, user, filter.category, filter.mask);
    q->count++;
    q->nfiltered += !nbi_filter_all_bits(filter.category, filter.mask);
    *out = h;
    nbi_tidy_pay(q);
    return NB_OK;
}

// Moves the rectangle of a live slot to box b (checked): the body of nb_quadtree_move.
static nbStatus nbi_move_slot(nbQuadtree *q, int32_t slot, const double *b)
{
    const int32_t at = nbi_pool_value_live(&q->pool, slot);
    const int32_t n = NBI_OWN(q)[at];
    const nbiQtNode *node = &NBI_NODES(q)[n];
    if (n != NBI_QT_OUT && nbi_keeps(q, node, b)) {
        // It stays: nothing else changes.
        nbi_box_move(q, n, at, b);
        return NB_OK;
    }
    nbiQtPlan plan;
    nbi_plan(q, b, 0, &plan);
    if (plan.target == NBI_QT_OUT && n == NBI_QT_OUT) {
        nbi_box_put(q, n, NBI_NODES(q)[n].start, at, b);
        return NB_OK;
    }
    const nbStatus st = nbi_qt_room(q, &plan.need);
    if (st != NB_OK) return st;
    // Take the old copy out first (this never allocates nor moves other nodes' blocks), but keep
    // its node from collapsing until the new copy is in: the plan was made with it in place.
    const uint64_t hnd = nbi_hit_of(q, at)->handle.bits, user = nbi_hit_of(q, at)->user;
    const uint32_t cat = NBI_CAT(q)[at], mask = NBI_MASK(q)[at];
    nbi_take_out(q, at);
    nbi_place(q, &plan, b, hnd, user, cat, mask);
    // The root may have grown: the old node's index is the same unless it was the root.
    int32_t old = n;
    if (n == NBI_QT_ROOT && plan.grow > 0) old = -1; // an old root never needs collapsing
    if (old >= 0) nbi_collapse(q, old);
    return NB_OK;
}

nbStatus nb_quadtree_move(nbQuadtree *q, nbHandle item, const nbRect *rect)
{
    if (q == NULL || rect == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    nbStatus st = nbi_pool_lookup(&q->pool, item, &slot);
    if (st != NB_OK) return st;
    st = nbi_rect_check(rect);
    if (st != NB_OK) return st;
    const double b[4] = {rect->min[0], rect->min[1], rect->max[0], rect->max[1]};
    st = nbi_move_slot(q, slot, b);
    if (st == NB_OK) nbi_tidy_pay(q);
    return st;
}

// How far ahead a batched move asks for the memory of the moves to come, one link of the chain
// handle -> pool slot -> position -> node a stage: the pool slot NBI_QT_AHEAD_SLOT moves
// ahead; the position's owner, boxes and 16-bit and float copies NBI_QT_AHEAD_POS ahead (its
// slot has arrived by then); the node's bounds, hot record and float box NBI_QT_AHEAD_NODE
// ahead (its owner has arrived). Measured: docs/quadtree.md.
enum { NBI_QT_AHEAD_SLOT = 16, NBI_QT_AHEAD_POS = 8, NBI_QT_AHEAD_NODE = 4, NBI_QT_AHEAD_RUN = 2 };
_Static_assert(NBI_QT_AHEAD_POS <= 8 && NBI_QT_AHEAD_NODE < NBI_QT_AHEAD_POS &&
                   NBI_QT_AHEAD_RUN < NBI_QT_AHEAD_NODE,
               "the ring of 8");

// The position of the slot a handle names, or -1: a hint, read without the generation check
// (the handle was checked, but an earlier move of the batch may have moved its rectangle).
NBI_INLINE int32_t nbi_pos_hint(const nbQuadtree *q, nbHandle e)
{
    const uint32_t s = (uint32_t)e.bits - 1u;
    if (s >= (uint32_t)q->pool.used) return -1;
    const int32_t p = ((const nbiPoolSlot *)q->pool.slots.ptr)[s].value;
    return p >= 0 && p < q->top ? p : -1;
}

nbStatus nb_quadtree_move_many(nbQuadtree *q, const nbHandle *items, const nbRect *rects,
                               int32_t count, int32_t *moved)
{
    if (moved != NULL) *moved = 0;
    if (q == NULL || ((items == NULL || rects == NULL) && count > 0)) return NB_ERR_NULL_ARG;
    if (count < 0) return NB_ERR_OUT_OF_RANGE;
    // 1. Every entry is checked before anything moves (the first bad one's status).
    for (int32_t i = 0; i < count; i++) {
        if (i + NBI_QT_AHEAD_SLOT < count) {
            const uint32_t s = (uint32_t)items[i + NBI_QT_AHEAD_SLOT].bits - 1u;
            if (s < (uint32_t)q->pool.used)
                nbi_prefetch((const nbiPoolSlot *)q->pool.slots.ptr + s);
        }
        int32_t slot;
        nbStatus st = nbi_pool_lookup(&q->pool, items[i], &slot);
        if (st != NB_OK) return st;
        st = nbi_rect_check(&rects[i]);
        if (st != NB_OK) return st;
    }
    // 2. The moves, in order. For movers in random order each link of the chain is a cache miss
    //    after the one before; asking for the links of later moves while this one is made puts
    //    several misses in flight at once. Storage may move (a move that leaves its node can
    //    grow it), so every pointer is taken from the tree anew.
    // pos[e % 8]: the position of entry e, as the slot said when the lines of its position were
    // asked for (a hint: an earlier move of the batch may move it), read again for its node.
    int32_t pos[8];
    for (int32_t e = 0; e < count && e < NBI_QT_AHEAD_POS; e++) pos[e] = nbi_pos_hint(q, items[e]);
    nbStatus st = NB_OK;
    int32_t i = 0;
    for (; i < count; i++) {
        if (i + NBI_QT_AHEAD_SLOT < count) {
            const uint32_t s = (uint32_t)items[i + NBI_QT_AHEAD_SLOT].bits - 1u; // checked
            nbi_prefetch((const nbiPoolSlot *)q->pool.slots.ptr + s);
        }
        if (i + NBI_QT_AHEAD_POS < count) {
            const int32_t p = nbi_pos_hint(q, items[i + NBI_QT_AHEAD_POS]);
            pos[(i + NBI_QT_AHEAD_POS) & 7] = p;
            if (p >= 0) {
                nbi_prefetch(NBI_OWN(q) + p);
                nbi_prefetch_w(NBI_BOX(q) + p);
                nbi_prefetch_w(nbi_fb_at(q, p));
                nbi_prefetch_w(nbi_qb_at(q, p & ~7));
                nbi_prefetch_w(nbi_qb_at(q, p & ~7) + 31); // in case the run straddles lines
            }
        }
        if (i + NBI_QT_AHEAD_NODE < count) {
            const int32_t p = pos[(i + NBI_QT_AHEAD_NODE) & 7];
            const int32_t n = p >= 0 && p < q->top ? NBI_OWN(q)[p] : -1;
            if (n >= 0 && n < q->node_top) {
                nbi_prefetch(NBI_NODES(q) + n);
                nbi_prefetch(NBI_HOT(q) + n);
                if (n >= NBI_QT_GROUPS) nbi_prefetch(nbi_gb_of(q, n));
            }
        }
        if (i + NBI_QT_AHEAD_RUN < count) { // the node's hot record has arrived: its run box
            const int32_t p = pos[(i + NBI_QT_AHEAD_RUN) & 7];
            const int32_t n = p >= 0 && p < q->top ? NBI_OWN(q)[p] : -1;
            if (n >= 0 && n < q->node_top) {
                const nbiQtHot *h = NBI_HOT(q) + n;
                const int32_t run = (p - h->start) >> 3;
                if (h->cls >= NBI_QT_RB_MIN_CLS && run >= 0 && run < ((int32_t)1 << h->cls) >> 3)
                    nbi_prefetch_w(nbi_rb_at(q, h->start, h->cls, run));
            }
        }
        const nbRect *r = &rects[i];
        const double b[4] = {r->min[0], r->min[1], r->max[0], r->max[1]};
        st = nbi_move_slot(q, (int32_t)((uint32_t)items[i].bits - 1u), b); // checked above
        if (st != NB_OK) break;
        nbi_tidy_pay(q);
    }
    if (moved != NULL) *moved = i;
    return st;
}

nbStatus nb_quadtree_remove(nbQuadtree *q, nbHandle item)
{
    if (q == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    nbStatus st = nbi_pool_lookup(&q->pool, item, &slot);
    if (st != NB_OK) return st;
    const int32_t at = nbi_pool_slot_value(&q->pool, slot);
    const int32_t n = NBI_OWN(q)[at];
    q->nfiltered -= !nbi_filter_all_bits(NBI_CAT(q)[at], NBI_MASK(q)[at]);
    nbi_take_out(q, at);
    nbi_pool_free(&q->pool, item, NULL);
    q->count--;
    nbi_collapse(q, n);
    nbi_tidy_pay(q);
    return NB_OK;
}

nbStatus nb_quadtree_get(const nbQuadtree *q, nbHandle item, nbRect *rect, uint64_t *user,
                         nbFilter *filter)
{
    if (q == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    nbStatus st = nbi_pool_lookup(&q->pool, item, &slot);
    if (st != NB_OK) return st;
    const int32_t at = nbi_pool_slot_value(&q->pool, slot);
    const double *b = NBI_BOX(q)[at].b;
    if (rect != NULL) {
        rect->min[0] = b[0];
        rect->min[1] = b[1];
        rect->max[0] = b[2];
        rect->max[1] = b[3];
    }
    if (user != NULL) *user = nbi_hit_of(q, at)->user;
    if (filter != NULL) {
        filter->category = NBI_CAT(q)[at];
        filter->mask = NBI_MASK(q)[at];
    }
    return NB_OK;
}

nbStatus nb_quadtree_set(nbQuadtree *q, nbHandle item, uint64_t user, nbFilter filter)
{
    if (q == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    nbStatus st = nbi_pool_lookup(&q->pool, item, &slot);
    if (st != NB_OK) return st;
    const int32_t at = nbi_pool_slot_value(&q->pool, slot);
    nbi_hit_of(q, at)->user = user;
    q->nfiltered += !nbi_filter_all_bits(filter.category, filter.mask) -
                    !nbi_filter_all_bits(NBI_CAT(q)[at], NBI_MASK(q)[at]);
    NBI_CAT(q)[at] = filter.category;
    NBI_MASK(q)[at] = filter.mask;
    return NB_OK;
}

// ---- build ----

typedef struct nbiQtRange {
    int32_t node, lo, hi;
    int32_t in; // which of the two item arrays holds the range: 0 work, 1 scratch
} nbiQtRange;

// A rectangle on its way into a build: its box travels with it, so that each level's partition
// reads and writes memory in order rather than looking the box up by index.
typedef struct nbiQtItem {
    double b[4];
    int32_t i;
} nbiQtItem;

// in[0, n) into out[0, n) in the order of their centres along a Morton curve over the node's
// cell (16 x 16 steps; centres outside it clamped), by one counting sort; key is scratch.
static void nbi_build_sort(const nbiQtNode *nd, const nbiQtItem *in, nbiQtItem *out, uint8_t *key,
                           int32_t n)
{
    const double sx = 16.0 / (nd->chi[0] - nd->clo[0]), sy = 16.0 / (nd->chi[1] - nd->clo[1]);
    if (n <= NBI_QT_SEG || !(isfinite(sx) && isfinite(sy))) { // one segment, or the outside list
        memcpy(out, in, (size_t)n * sizeof *in);
        return;
    }
    int32_t at[257];
    memset(at, 0, sizeof at);
    for (int32_t i = 0; i < n; i++) {
        key[i] = nbi_curve_key(nd, sx, sy, in[i].b);
        at[key[i] + 1]++;
    }
    for (int k = 0; k < 256; k++) at[k + 1] += at[k];
    for (int32_t i = 0; i < n; i++) out[at[key[i]]++] = in[i];
}

// Lays the rectangles work[lo, hi) of `range` out under its node, depth first: the node splits
// while it holds more than the threshold (a stable counting sort of its range by child, those
// that stay first), and each node's own rectangles get a block at the arena's end as the walk
// reaches it, so nodes and their rectangles sit in memory in the order queries visit them.
static nbStatus nbi_build_into(nbQuadtree *s, nbiQtItem *work, nbiQtItem *scratch, uint8_t *pick,
                               const uint64_t *users, const nbFilter *filters, nbiQtRange first)
{
    nbiQtRange stack[NBI_QT_STACK];
    int top = 0;
    stack[top++] = first;
    while (top > 0) {
        const nbiQtRange r = stack[--top];
        int32_t stay = r.hi - r.lo;
        const nbiQtItem *items = r.in ? scratch : work; // where the rectangles that stay are
        const nbiQtNode *node = &NBI_NODES(s)[r.node];
        // A node with children already (the root and its line after growing) always passes its
        // rectangles down.
        if (r.node != NBI_QT_OUT &&
            (node->child >= 0 || (stay > s->threshold && node->level < s->max_depth))) {
            if (node->child < 0) {
                nbiQtNeed need = {0, 1, 0, 0, {0}};
                nbStatus st = nbi_qt_room(s, &need);
                if (st != NB_OK) return st;
                const int32_t g = nbi_group_take(s);
                nbiQtNode *nodes = NBI_NODES(s);
                for (int k = 0; k < 4; k++) {
                    nbi_node_init(&nodes[g + k], r.node, nodes[r.node].level + 1);
                    nbi_child_geometry(s, &nodes[r.node], k, &nodes[g + k]);
                    nbi_sync(s, g + k);
                }
                nodes[r.node].child = g;
                nbi_sync(s, r.node);
            }
            const nbiQtNode *nodes = NBI_NODES(s);
            const int32_t g = nodes[r.node].child;
            int32_t per[5] = {0, 0, 0, 0, 0};
            // Partitioned from one array into the other, so nothing is copied back.
            nbiQtItem *to = r.in ? work : scratch;
            for (int32_t i = r.lo; i < r.hi; i++) {
                const int k = nbi_pick(s, &nodes[r.node], &nodes[g], items[i].b) + 1;
                pick[i] = (uint8_t)k;
                per[k]++;
            }
            int32_t at[5];
            at[0] = r.lo;
            for (int k = 1; k < 5; k++) at[k] = at[k - 1] + per[k - 1];
            int32_t fill[5];
            memcpy(fill, at, sizeof fill);
            for (int32_t i = r.lo; i < r.hi; i++) to[fill[pick[i]]++] = items[i];
            items = to;
            stay = per[0];
            for (int k = 3; k >= 0; k--)
                if (per[k + 1] > 0)
                    stack[top++] = (nbiQtRange){g + k, at[k + 1], at[k + 1] + per[k + 1], 1 - r.in};
        }
        if (stay == 0) continue;
        const int c = nbi_cls_for(stay);
        nbiQtNeed need = {0, 0, 0, 1, {(int8_t)c}};
        nbStatus st = nbi_qt_room(s, &need);
        if (st != NB_OK) return st;
        const int32_t start = nbi_block_take(s, c);
        nbi_block_init(s, start, c, start + stay);
        nbiQtNode *nd = &NBI_NODES(s)[r.node];
        nd->start = start;
        nd->cls = c;
        nd->count = stay;
        // Along a curve, so that each segment of the block holds rectangles near each other.
        nbiQtItem *sorted = items == work ? scratch : work; // free over this range
        nbi_build_sort(nd, items + r.lo, sorted + r.lo, pick + r.lo, stay);
        for (int32_t j = 0; j < stay; j++) {
            const nbiQtItem *it = &sorted[r.lo + j];
            const nbHandle h = nbi_pool_handle_first(&s->pool, it->i); // slot i: rectangle i's
            const nbFilter f = filters != NULL ? filters[it->i] : NB_FILTER_ALL;
            nbi_put_data(s, start, start + j, r.node, it->b, h.bits,
                         users != NULL ? users[it->i] : (uint64_t)it->i, f.category, f.mask);
        }
        nbi_sync(s, r.node);
    }
    return NB_OK;
}

// Points every slot of a built tree at its rectangle's position, node by node: the slots in the
// order of the positions, a random order, in one loop of their own. Done in the layout, one by
// one amid its stores, such random stores (then into the caller's handles) cost a build of 1M
// about 30% (docs/quadtree.md).
enum { NBI_QT_AHEAD_SLOTS = 16 };

static void nbi_build_slots(nbQuadtree *s)
{
    const nbiQtNode *nodes = NBI_NODES(s);
    nbiPoolSlot *slots = (nbiPoolSlot *)s->pool.slots.ptr;
    for (int32_t n = 0; n < s->node_top; n++) {
        const int32_t p0 = nodes[n].start, p1 = p0 + nodes[n].count;
        for (int32_t p = p0; p < p1; p++) {
#if defined(__GNUC__)
            if (p + NBI_QT_AHEAD_SLOTS < p1)
                __builtin_prefetch(
                    slots + ((uint32_t)nbi_hit_of(s, p + NBI_QT_AHEAD_SLOTS)->handle.bits - 1u), 1);
#endif
            slots[(uint32_t)nbi_hit_of(s, p)->handle.bits - 1u].value = p;
        }
    }
}

nbStatus nb_quadtree_build(nbQuadtree *q, const nbRect *rects, int32_t n, const uint64_t *users,
                           const nbFilter *filters, nbHandle *handles)
{
    if (q == NULL || (rects == NULL && n > 0)) return NB_ERR_NULL_ARG;
    if (n < 0 || n > NBI_QT_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    // The first bad rectangle decides (nbi_rect_check: finiteness, then range).
    double u[4] = {0.0, 0.0, 0.0, 0.0};  // the union of every rectangle
    double cb[4] = {0.0, 0.0, 0.0, 0.0}; // the box of their centres
    for (int32_t i = 0; i < n; i++) {
        const nbStatus st = nbi_rect_check(&rects[i]);
        if (st != NB_OK) return st;
        for (int a = 0; a < 2; a++) {
            const double c = 0.5 * (rects[i].min[a] + rects[i].max[a]); // as nbi_pick
            if (i == 0 || rects[i].min[a] < u[a]) u[a] = rects[i].min[a];
            if (i == 0 || rects[i].max[a] > u[2 + a]) u[2 + a] = rects[i].max[a];
            if (i == 0 || c < cb[a]) cb[a] = c;
            if (i == 0 || c > cb[2 + a]) cb[2 + a] = c;
        }
    }
    // A new tree with the same settings, swapped in only when it is complete: a failure leaves
    // q as it was.
    nbQuadtree *s = NULL;
    nbStatus st = nbi_create(&q->alloc, &q->root0, q->threshold, q->max_depth, q->placement, &s);
    if (st != NB_OK) return st;
    // Its root fits the data (the desc's bounds are only a hint), with a little to spare for
    // rectangles that then move about. Where no finite root fits, the desc's root grows towards
    // the data.
    if (n > 0) {
        nbiQtNode *r = &NBI_NODES(s)[NBI_QT_ROOT];
        nbiQtNode fit = *r;
        if (nbi_root_fit(s, cb, u, nbi_fit_least(s), NBI_QT_FIT_MARGIN, &fit)) {
            *r = fit;
            nbi_sync(s, NBI_QT_ROOT);
            nbi_cell_middle(r, s->fo); // nothing is stored yet
        }
    }
    const size_t un = (size_t)n;
    nbiQtItem *work = n > 0 ? nbi_alloc(&q->alloc, 2 * un, sizeof(nbiQtItem)) : NULL;
    uint8_t *pick = n > 0 ? nbi_alloc(&q->alloc, un, 1) : NULL;
    if (n > 0 && (work == NULL || pick == NULL)) st = NB_ERR_OUT_OF_MEMORY;
    if (st == NB_OK) {
        nbiQtNeed need = {n, 0, 2 * (int64_t)n + 64, 0, {0}};
        st = nbi_qt_room(s, &need);
    }
    const int g = n > 0 ? nbi_growth(s, u) : 0;
    if (st == NB_OK && g > 0) {
        nbiQtNeed need = {0, g, 0, 0, {0}};
        st = nbi_qt_room(s, &need);
        for (int k = 0; k < g && st == NB_OK; k++) nbi_grow(s, u);
    }
    if (st == NB_OK && n > 0) {
        // Rectangles outside the root go to the outside list, after the others.
        nbiQtItem *scratch = work + un;
        int32_t inside = 0, outside = 0;
        for (int32_t i = 0; i < n; i++) {
            nbiQtItem it;
            memcpy(it.b, &rects[i], sizeof it.b);
            it.i = i;
            if (nbi_within(&NBI_NODES(s)[NBI_QT_ROOT], it.b))
                work[inside++] = it;
            else
                scratch[outside++] = it;
        }
        memcpy(work + inside, scratch, (size_t)outside * sizeof *work);
        s->count = n;
        // Rectangle i takes slot i (a fresh pool gives out 0, 1, ... in order): moves and
        // removes in the caller's order then read the slots in order. Their positions are set
        // after the layout (nbi_build_slots).
        for (int32_t i = 0; i < n && st == NB_OK; i++) {
            nbHandle h;
            st = nbi_pool_alloc(&s->pool, 0, &h); // cannot fail: room was made
            NB_ASSERT(st != NB_OK || (uint32_t)h.bits - 1u == (uint32_t)i);
        }
        for (int32_t i = 0; filters != NULL && i < n; i++)
            s->nfiltered += !nbi_filter_all_bits(filters[i].category, filters[i].mask);
        if (st == NB_OK && outside > 0)
            st = nbi_build_into(s, work, scratch, pick, users, filters,
                                (nbiQtRange){NBI_QT_OUT, inside, n, 0});
        if (st == NB_OK && inside > 0)
            st = nbi_build_into(s, work, scratch, pick, users, filters,
                                (nbiQtRange){NBI_QT_ROOT, 0, inside, 0});
    }
    if (st == NB_OK && n > 0) {
        nbi_build_slots(s);
        for (int32_t i = 0; handles != NULL && i < n; i++)
            handles[i] = nbi_pool_handle_first(&s->pool, i);
    }
    if (work != NULL) nbi_free(&q->alloc, work, 2 * un, sizeof(nbiQtItem));
    if (pick != NULL) nbi_free(&q->alloc, pick, un, 1);
    if (st != NB_OK) {
        nb_quadtree_destroy(s);
        return st;
    }
    const nbQuadtree old = *q;
    *q = *s;
    *s = old;
    nb_quadtree_destroy(s); // the old contents, in the struct s was allocated as
    return NB_OK;
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

// ---- nearest: kNN and rays share a bounded max-heap keyed by (distance, slot) ----

typedef struct nbiQtHeap {
    double *key;   // the distance of entry i, read through `at`
    nbHit *hit;    // entry i's hit
    size_t stride; // bytes from one entry to the next
    int32_t cap, n;
    int64_t total; // every match seen (ray casts report it)
} nbiQtHeap;

#define NBI_HKEY(h, i) (*(double *)((char *)(h)->key + (size_t)(i) * (h)->stride))
#define NBI_HHIT(h, i) (*(nbHit *)((char *)(h)->hit + (size_t)(i) * (h)->stride))

// a before b: nearer, or as near with the lower slot.
NBI_INLINE bool nbi_before(double da, uint64_t ha, double db, uint64_t hb)
{
    return da < db || (da == db && (uint32_t)ha < (uint32_t)hb);
}

static void nbi_heap_sift_down(nbiQtHeap *h, int32_t i)
{
    for (;;) {
        int32_t l = 2 * i + 1, m = i;
        if (l < h->n && nbi_before(NBI_HKEY(h, m), NBI_HHIT(h, m).handle.bits, NBI_HKEY(h, l),
                                   NBI_HHIT(h, l).handle.bits))
            m = l;
        if (l + 1 < h->n && nbi_before(NBI_HKEY(h, m), NBI_HHIT(h, m).handle.bits,
                                       NBI_HKEY(h, l + 1), NBI_HHIT(h, l + 1).handle.bits))
            m = l + 1;
        if (m == i) return;
        double k = NBI_HKEY(h, i);
        nbHit t = NBI_HHIT(h, i);
        NBI_HKEY(h, i) = NBI_HKEY(h, m);
        NBI_HHIT(h, i) = NBI_HHIT(h, m);
        NBI_HKEY(h, m) = k;
        NBI_HHIT(h, m) = t;
        i = m;
    }
}

static void nbi_heap_offer(nbiQtHeap *h, double d, nbHit hit)
{
    h->total++;
    if (h->cap == 0) return;
    if (h->n < h->cap) {
        int32_t i = h->n++;
        while (i > 0) {
            int32_t p = (i - 1) / 2;
            if (!nbi_before(NBI_HKEY(h, p), NBI_HHIT(h, p).handle.bits, d, hit.handle.bits)) break;
            NBI_HKEY(h, i) = NBI_HKEY(h, p);
            NBI_HHIT(h, i) = NBI_HHIT(h, p);
            i = p;
        }
        NBI_HKEY(h, i) = d;
        NBI_HHIT(h, i) = hit;
        return;
    }
    if (!nbi_before(d, hit.handle.bits, NBI_HKEY(h, 0), NBI_HHIT(h, 0).handle.bits)) return;
    NBI_HKEY(h, 0) = d;
    NBI_HHIT(h, 0) = hit;
    nbi_heap_sift_down(h, 0);
}

// Sorts the heap ascending in place (heapsort: the max goes to the end).
static void nbi_heap_sort(nbiQtHeap *h)
{
    const int32_t n = h->n;
    for (int32_t end = n - 1; end > 0; end--) {
        double k = NBI_HKEY(h, 0);
        nbHit t = NBI_HHIT(h, 0);
        NBI_HKEY(h, 0) = NBI_HKEY(h, end);
        NBI_HHIT(h, 0) = NBI_HHIT(h, end);
        NBI_HKEY(h, end) = k;
        NBI_HHIT(h, end) = t;
        h->n = end;
        nbi_heap_sift_down(h, 0);
    }
    h->n = n;
}

// The farthest distance that can still enter the heap (ties included).
NBI_INLINE double nbi_heap_bound(const nbiQtHeap *h, double limit)
{
    return h->cap > 0 && h->n == h->cap && NBI_HKEY(h, 0) < limit ? NBI_HKEY(h, 0) : limit;
}

enum { NBI_N_KNN, NBI_N_RAY };

// Depth-first, children nearest first, pruning by the heap's bound. kNN: distances are squared
// distances to p and `limit` is max_distance^2. Ray: distances are entry points t. When
// `count_all` is set (all ray hits), nodes are pruned by the limit only, so total counts
// every hit.
static void nbi_nearest(const nbQuadtree *q, int kind, const double *p, const nbiRay *ray,
                        double limit, bool count_all, nbFilter f, nbiQtHeap *h)
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
        const double bound = count_all ? limit : nbi_heap_bound(h, limit);
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
                nbi_heap_offer(h, d, nbi_hit_at(q, i));
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

nbStatus nb_quadtree_knn(const nbQuadtree *q, const double *point, nbFilter filter,
                         double max_distance, nbHitNeighbor *out, int32_t k, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || point == NULL || found == NULL || (out == NULL && k > 0))
        return NB_ERR_NULL_ARG;
    if (!isfinite(point[0]) || !isfinite(point[1]) || isnan(max_distance)) return NB_ERR_NOT_FINITE;
    if (k < 0 || max_distance < 0.0) return NB_ERR_OUT_OF_RANGE;
    if (k == 0) return NB_OK;
    nbiQtHeap h;
    h.key = &out[0].dist2;
    h.hit = &out[0].hit;
    h.stride = sizeof *out;
    h.cap = k;
    h.n = 0;
    h.total = 0;
    const double limit = max_distance * max_distance;
    nbi_nearest(q, NBI_N_KNN, point, NULL, limit, false, filter, &h);
    nbi_heap_sort(&h);
    *found = h.n;
    return NB_OK;
}

// The callback form's search, on the heap nbi_visit_hit_knn gives it.
typedef struct nbiQtKnnAsk {
    const nbQuadtree *q;
    const double *point;
    nbFilter filter;
    double max_distance;
} nbiQtKnnAsk;

static nbStatus nbi_qt_knn_ask(const void *ctx, nbHitNeighbor *out, int32_t k, int32_t *found)
{
    const nbiQtKnnAsk *a = (const nbiQtKnnAsk *)ctx;
    return nb_quadtree_knn(a->q, a->point, a->filter, a->max_distance, out, k, found);
}

nbStatus nb_quadtree_visit_knn(const nbQuadtree *q, const double *point, nbFilter filter,
                               double max_distance, int32_t k, nbHitNeighborFn *visit, void *user)
{
    if (q == NULL || point == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    if (!isfinite(point[0]) || !isfinite(point[1]) || isnan(max_distance)) return NB_ERR_NOT_FINITE;
    if (k < 0 || max_distance < 0.0) return NB_ERR_OUT_OF_RANGE;
    const nbiQtKnnAsk ask = {q, point, filter, max_distance};
    return nbi_visit_hit_knn(&q->alloc, k < q->count ? k : q->count, nbi_qt_knn_ask, &ask, visit,
                             user);
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
    nbiQtHeap h;
    h.key = &out[0].t;
    h.hit = &out[0].hit;
    h.stride = sizeof *out;
    h.cap = 1;
    h.n = 0;
    h.total = 0;
    nbi_nearest(q, NBI_N_RAY, NULL, &ray, max_distance, false, filter, &h);
    *found = h.n;
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
    nbRayHit dummy;
    nbiQtHeap h;
    h.key = capacity > 0 ? &out[0].t : &dummy.t;
    h.hit = capacity > 0 ? &out[0].hit : &dummy.hit;
    h.stride = sizeof *out;
    h.cap = capacity;
    h.n = 0;
    h.total = 0;
    nbi_nearest(q, NBI_N_RAY, NULL, &ray, max_distance, true, filter, &h);
    nbi_heap_sort(&h);
    if (h.total > INT32_MAX) return NB_ERR_INTERNAL; // cannot happen: at most 2^28 rectangles
    *found = (int32_t)h.total;
    return h.total > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
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

// ---- validate ----

static nbStatus nbi_validate_node(const nbQuadtree *q, int32_t n, int64_t *items, int64_t *blocks)
{
    const nbiQtNode *nodes = NBI_NODES(q);
    const nbiQtNode *node = &nodes[n];
    NBI_CHECK(node->parent != -2);
    NBI_CHECK(node->count >= 0);
    const nbiQtHot *h = &NBI_HOT(q)[n];
    NBI_CHECK(h->child == node->child && h->count == node->count &&
              h->level == nbi_level16(node->level));
    NBI_CHECK(node->count == 0 || (h->start == node->start && h->cls == node->cls));
    float fc[2], finv[2];
    nbi_frame(node, fc, finv);
    NBI_CHECK(memcmp(fc, h->fc, sizeof fc) == 0 && memcmp(finv, h->finv, sizeof finv) == 0);
    const float *gb = n >= NBI_QT_GROUPS ? nbi_gb_of(q, n) : NULL;
    const float *pgb = node->parent >= NBI_QT_GROUPS ? nbi_gb_of(q, node->parent) : NULL;
    if (gb != NULL && pgb != NULL && gb[0] != (float)INFINITY) // a box within its parent's
        for (int i = 0; i < 4; i++) NBI_CHECK(pgb[4 * i] <= gb[4 * i]);
    if (node->count == 0) {
        NBI_CHECK(node->cls == -1);
    } else {
        NBI_CHECK(node->cls >= NBI_QT_MIN_CLS && node->cls < NBI_QT_CLASSES);
        NBI_CHECK(node->count <= ((int64_t)1 << node->cls));
        NBI_CHECK(node->start >= 0 && (int64_t)node->start + ((int64_t)1 << node->cls) <= q->top);
        *blocks += (int64_t)1 << node->cls;
    }
    for (int32_t i = 0; i < node->count; i++) {
        const int32_t at = node->start + i;
        NBI_CHECK(NBI_OWN(q)[at] == n);
        nbHandle handle = nbi_hit_of(q, at)->handle;
        int32_t slot;
        NBI_CHECK(nbi_pool_lookup(&q->pool, handle, &slot) == NB_OK);
        NBI_CHECK(nbi_pool_slot_value(&q->pool, slot) == at);
        const double *b = NBI_BOX(q)[at].b;
        NBI_CHECK(b[0] <= b[2] && b[1] <= b[3]);
        NBI_CHECK(nbi_within(node, b));
        int u[4]; // its 16-bit box, in its node's frame
        nbi_q4_ref(h, b, b + 2, u);
        for (int k = 0; k < 4; k++) NBI_CHECK(nbi_qb_at(q, at)[8 * k] == u[k]);
        const float *f = nbi_fb_at(q, at); // nbi_fb_put
        NBI_CHECK((double)f[0] <= b[0] - q->fo[0] && (double)f[4] <= b[1] - q->fo[1]);
        NBI_CHECK(b[2] - q->fo[0] <= -(double)f[8] && b[3] - q->fo[1] <= -(double)f[12]);
        if (gb != NULL) // the node's box holds it
            for (int k = 0; k < 4; k++) NBI_CHECK(gb[4 * k] <= f[4 * k]);
        if (node->cls >= NBI_QT_RB_MIN_CLS) { // its run's box holds its 16-bit box
            const int16_t *r = nbi_rb_at(q, node->start, node->cls, i >> 3);
            for (int k = 0; k < 4; k++) NBI_CHECK(r[8 * k] <= nbi_qb_at(q, at)[8 * k]);
        } else { // its segment's box holds its float box
            const float *sg = NBI_SB(q) + nbi_seg_box(node->start, nbi_seg_of(node->start, at));
            for (int k = 0; k < 4; k++) NBI_CHECK(sg[k] <= f[4 * k]);
        }
    }
    // The rest of its block holds no box (searches scan whole runs).
    for (int64_t i = node->count; node->count > 0 && i < ((int64_t)1 << node->cls); i++) {
        const int32_t at = node->start + (int32_t)i;
        const float *f = nbi_fb_at(q, at);
        for (int k = 0; k < 4; k++) NBI_CHECK(isnan(f[4 * k]));
        for (int k = 0; k < 4; k++) NBI_CHECK(nbi_qb_at(q, at)[8 * k] == NBI_QT_QEMPTY);
    }
    *items += node->count;
    if (node->child >= 0) {
        NBI_CHECK(n != NBI_QT_OUT);
        NBI_CHECK(node->child >= NBI_QT_GROUPS && node->child + 4 <= q->node_top);
        NBI_CHECK((node->child - NBI_QT_GROUPS) % 4 == 0);
        NBI_CHECK(node->level < q->max_depth);
        for (int k = 0; k < 4; k++) {
            const nbiQtNode *c = &nodes[node->child + k];
            NBI_CHECK(c->parent == n && c->level == node->level + 1);
            for (int a = 0; a < 2; a++)
                NBI_CHECK(c->lo[a] >= node->lo[a] && c->hi[a] <= node->hi[a]);
        }
    }
    return NB_OK;
}

nbStatus nb_quadtree_validate(const nbQuadtree *q)
{
    if (q == NULL) return NB_ERR_NULL_ARG;
    nbStatus st = nbi_pool_validate(&q->pool);
    if (st != NB_OK) return st;
    NBI_CHECK(q->count == nbi_pool_count(&q->pool));
    NBI_CHECK(q->node_top >= NBI_QT_GROUPS && (size_t)q->node_top <= q->nodes.cap);
    NBI_CHECK(q->top >= 0 && (size_t)q->top <= q->own.cap && (size_t)q->top <= q->box.cap);
    const nbiQtNode *nodes = NBI_NODES(q);
    NBI_CHECK(nodes[NBI_QT_ROOT].parent == -1 && nodes[NBI_QT_OUT].parent == -1);
    NBI_CHECK(nodes[NBI_QT_OUT].child == -1);
    NBI_CHECK(nodes[NBI_QT_ROOT].level == -q->grown);
    int64_t items = 0, blocks = 0, reached = 0;
    int32_t stack[NBI_QT_STACK];
    int top = 0;
    stack[top++] = NBI_QT_OUT;
    stack[top++] = NBI_QT_ROOT;
    while (top > 0) {
        const int32_t n = stack[--top];
        st = nbi_validate_node(q, n, &items, &blocks);
        if (st != NB_OK) return st;
        reached++;
        if (nodes[n].child >= 0) {
            NBI_CHECK(top + 4 <= NBI_QT_STACK);
            for (int k = 3; k >= 0; k--) stack[top++] = nodes[n].child + k;
        }
    }
    NBI_CHECK(items == q->count);
    int64_t filtered = 0;
    for (int32_t p = 0; p < q->top; p++) {
        const int32_t n = NBI_OWN(q)[p];
        if (n < 0 || n >= q->node_top) continue; // a free block's link, or a stale position
        const nbiQtNode *node = &nodes[n];
        if (node->parent == -2 || node->count == 0 || p < node->start ||
            p >= node->start + node->count)
            continue;
        filtered += !nbi_filter_all_bits(NBI_CAT(q)[p], NBI_MASK(q)[p]);
    }
    NBI_CHECK(filtered == q->nfiltered);
    for (int c = 0; c < NBI_QT_CLASSES; c++) {
        int64_t len = 0;
        for (int32_t s = q->free_block[c]; s >= 0; s = NBI_OWN(q)[s]) {
            NBI_CHECK((int64_t)s + ((int64_t)1 << c) <= q->top);
            NBI_CHECK(++len <= q->free_count[c]);
        }
        NBI_CHECK(len == q->free_count[c]);
        blocks += len << c;
    }
    NBI_CHECK(blocks == q->top); // live and free blocks tile the arena (sizes add up)
    int64_t free_groups = 0;
    for (int32_t g = q->free_group; g >= 0; g = nodes[g].child) {
        NBI_CHECK(g >= NBI_QT_GROUPS && g + 4 <= q->node_top && nodes[g].parent == -2);
        NBI_CHECK(++free_groups <= q->node_top / 4);
    }
    NBI_CHECK(free_groups == q->free_groups);
    NBI_CHECK(reached - 2 + 4 * free_groups == q->node_top - NBI_QT_GROUPS);
    return NB_OK;
}
