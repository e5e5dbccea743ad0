// SPDX-License-Identifier: MIT
// The quadtree's layout, shared by its parts (include/nearby/quadtree.h): storage
// (quadtree_storage.c: nodes, blocks, slots, create and info), build and changes
// (quadtree_build.c: placement, root fitting and growing, insert, move, remove, bulk build,
// tidying), queries and pairs (quadtree_queries.c) and validation (quadtree_validate.c).
// Never installed.
//
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
// as it was. A bulk build is all or nothing another way: it lays the new tree out in a second
// layout (the spare) and swaps the two when it is done, so a failure leaves the first as it was;
// the replaced layout becomes the next build's spare, storage and all, so that from the third
// build on a rebuild of as many rectangles allocates nothing (nbi_qt_spare). Traversals are
// iterative: the root grows at most NBI_QT_GROW_MAX times and levels go at most to
// NB_QUADTREE_MAX_DEPTH, so a depth-first stack of NBI_QT_STACK entries suffices.
//
// Invariants (nb_quadtree_validate): the pool's own; count == live handles == rectangles in
// nodes; nodes 0 and 1 are never free; a group's four nodes have the same parent, the next
// level, bounds within the parent's bounds; a node with rectangles owns a block that holds them
// (count <= 2^cls), a node without owns none; each position in use holds a live slot whose pool
// value is that position, names its node and has its box within the node's bounds, its float
// box holding it and within the node's float box; a node's float box lies within its parent's;
// live blocks plus free blocks cover [0, top) exactly; free groups are chained and counted.
#ifndef NEARBY_QUADTREE_INTERNAL_H
#define NEARBY_QUADTREE_INTERNAL_H

#include <nearby/quadtree.h>

#include "block_arena.h"
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
    nbiArena arena;    // the blocks of positions (block_arena.h), free ones linked through own
    int32_t tidy_next; // the node moves' tidying looks at next (nbi_tidy_pay)
    int64_t tidy_credit; // moves not yet paid for by tidying
    int64_t tidy_due;    // the credit at which the next tidying is looked for
    int64_t tidied;      // nodes tidied since the tree was made, cleared or built (info)

    // What nb_quadtree_build keeps from one build to the next, so that a rebuild of as many
    // rectangles allocates nothing: the layout it fills (the one it replaced last time, kept
    // with its storage; NULL before the first build; its own spare and scratch stay empty), and
    // its scratch (nbi_qt_spare).
    nbQuadtree *spare;
    nbiBuf scratch;   // bytes: 2 int32_t and 1 uint8_t per rectangle of the largest build
    int32_t reserved; // the largest count nb_quadtree_reserve was given: the spare's too
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

static inline void nbi_f_round4(const double *v, float *out, int dir)
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

// The float bounds of group g (its first node).
NBI_INLINE const float *nbi_group_gb(const nbQuadtree *q, int32_t g)
{
    return NBI_GB(q) + 4 * (size_t)(g - NBI_QT_GROUPS);
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
static inline void nbi_frame(const nbiQtNode *n, float fc[2], float finv[2])
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
static inline void nbi_q4_ref(const nbiQtHot *h, const double *lo, const double *hi, int out[4])
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
#if defined(__SSE2__)
// The four as the 32-bit lanes of a vector.
NBI_INLINE __m128i nbi_q4v(const nbiQtHot *h, const double *lo, const double *hi)
{
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
    return _mm_or_si128(_mm_andnot_si128(_mm_or_si128(over, under), v),
                        _mm_or_si128(_mm_and_si128(over, qmax), _mm_and_si128(under, qmin)));
}
#endif

NBI_INLINE void nbi_q4(const nbiQtHot *h, const double *lo, const double *hi, int out[4])
{
#if defined(__SSE2__)
    _mm_storeu_si128((__m128i *)(void *)out, nbi_q4v(h, lo, hi));
#else
    nbi_q4_ref(h, lo, hi, out);
#endif
}

// The 16-bit fields of box b (min x, min y, max x, max y) in a node's frame. b is finite.
NBI_INLINE void nbi_q_fields(const nbiQtHot *h, const double *b, int16_t out[4])
{
#if defined(__SSE2__) // the lanes lie within int16_t: the saturating pack keeps them
    const __m128i v = nbi_q4v(h, b, b + 2);
    _mm_storel_epi64((__m128i *)(void *)out, _mm_packs_epi32(v, v));
#else
    int v[4];
    nbi_q4(h, b, b + 2, v);
    for (int i = 0; i < 4; i++) out[i] = (int16_t)v[i];
#endif
}

#if defined(__SSE2__)
// Eight 16-bit boxes laid out as a run's (f: 32 fields, field i of box k at f[8 * i + k]) as four
// vectors: a[i] holds field i of the eight.
NBI_INLINE void nbi_q8_load(const int16_t *f, __m128i a[4])
{
    for (int i = 0; i < 4; i++) a[i] = _mm_loadu_si128((const __m128i *)(const void *)(f + 8 * i));
}
#endif

// ---- storage (quadtree_storage.c) ----

// What a change needs: handles, node groups, and blocks by class (served by the free lists
// first, then from the arena's end).
typedef struct nbiQtNeed {
    int32_t items;
    int64_t groups;
    int64_t positions; // positions from the arena's end beyond the blocks below
    int nblocks;
    int8_t cls[8];
} nbiQtNeed;

static inline void nbi_need_block(nbiQtNeed *need, int cls)
{
    NB_ASSERT(need->nblocks < 8);
    need->cls[need->nblocks++] = (int8_t)cls;
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

// Widens the run box of position p (of a block at `start` of class c) to hold p's 16-bit box.
NBI_INLINE void nbi_rb_grow(nbQuadtree *q, int32_t start, int c, int32_t p)
{
    int16_t *r = nbi_rb_at(q, start, c, (p - start) >> 3);
    const int16_t *e = nbi_qb_at(q, p);
    for (int i = 0; i < 4; i++) r[8 * i] = e[8 * i] < r[8 * i] ? e[8 * i] : r[8 * i];
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

// Node n's float box (n >= NBI_QT_GROUPS): its four fields at a stride of 4 floats.
NBI_INLINE float *nbi_gb_of(const nbQuadtree *q, int32_t n)
{
    const uint32_t k = (uint32_t)(n - NBI_QT_GROUPS); // n >= NBI_QT_GROUPS
    return NBI_GB(q) + 16 * (size_t)(k >> 2) + (k & 3u);
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

// Which nodes are tidied: those with run boxes and from NBI_QT_TIDY_MIN to NBI_QT_TIDY_MAX
// rectangles (a node with more is left as it is: its curve keys would be too coarse anyway).
// How often: moves pay for it, NBI_QT_TIDY_RATIO moves for each rectangle a tidying moves
// (nbi_tidy_pay), so that in a tree whose rectangles all move, each node is tidied about every
// NBI_QT_TIDY_RATIO frames, at about 1/8 of a move's cost. Measured: docs/quadtree.md.
#ifndef NBI_QT_TIDY_RATIO_SET // the fuzz build sets 1, to reach the tidying often (tests/fuzz)
#define NBI_QT_TIDY_RATIO_SET 8
#endif
enum { NBI_QT_TIDY_MIN = 32, NBI_QT_TIDY_MAX = 1024, NBI_QT_TIDY_RATIO = NBI_QT_TIDY_RATIO_SET };

// ---- what the parts call of each other ----

// quadtree_storage.c
nbStatus nbi_qt_room(nbQuadtree *q, const nbiQtNeed *need);
int32_t nbi_block_take(nbQuadtree *q, int c);
void nbi_block_give(nbQuadtree *q, int32_t start, int c);
void nbi_block_init(nbQuadtree *q, int32_t start, int c, int32_t from);
void nbi_rb_refit(nbQuadtree *q, int32_t start, int c, int32_t p);
void nbi_node_init(nbiQtNode *n, int32_t parent, int32_t level);
void nbi_sync(nbQuadtree *q, int32_t n);
int32_t nbi_group_take(nbQuadtree *q);
void nbi_group_give(nbQuadtree *q, int32_t g);
void nbi_put_data(nbQuadtree *q, int32_t start, int32_t to, int32_t n, const double *b,
                  uint64_t hnd, uint64_t user, uint32_t cat, uint32_t mask);
void nbi_bbox_grow_by(nbQuadtree *q, int32_t n, const float u[4]);
void nbi_move_pos(nbQuadtree *q, int32_t from, int32_t start, int32_t to, int32_t n);
int nbi_append_cls(const nbiQtNode *n);
int32_t nbi_append(nbQuadtree *q, int32_t n, const double *b, uint64_t hnd, uint64_t user,
                   uint32_t cat, uint32_t mask);
void nbi_take_out(nbQuadtree *q, int32_t at);
nbStatus nbi_create(const nbAllocator *alloc, const nbRect *root0, int32_t threshold,
                    int32_t max_depth, int32_t placement, nbQuadtree **out);
nbStatus nbi_qt_spare(nbQuadtree *q, int32_t n);
void nbi_qt_swap_spare(nbQuadtree *q);

// quadtree_build.c
void nbi_root_bounds(const nbQuadtree *q, nbiQtNode *r);
void nbi_cell_middle(const nbiQtNode *r, double *out);

#endif
