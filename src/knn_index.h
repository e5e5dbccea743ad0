// SPDX-License-Identifier: MIT
// The kNN index of a cell-sorted view (the grid's; the spatial hash's, for far queries): its
// points in fine Z order under a binary radix tree of exact boxes, leaves of a few points
// (knn_index.c).
// Built lazily by the first kNN query after a build, from whichever thread runs it, and published
// with an atomic state, so that queries on a const grid stay safe from many threads. Never
// installed.
#ifndef NEARBY_KNN_INDEX_H
#define NEARBY_KNN_INDEX_H

#include "view.h"

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
#define NBI_KNN_INDEX 1
#else
#define NBI_KNN_INDEX 0 // no atomics: kNN walks the cells
#endif

// Most points a leaf holds.
enum { NBI_KNN_LEAF_PTS = 32 }; // (8, 16 and 64 measured slower: up to 1.3x on 2D blobs)
// Levels the tree may have at most (knn_index.c, nbi_ix_tree, says why it has fewer).
enum { NBI_IX_DEPTH = 128 };

// A node of the tree: a leaf (left == 0) holds positions [first, end); an inner node's children
// are nodes left and left + 1.
typedef struct nbiKnnNode {
    int32_t left, first, end;
} nbiKnnNode;

// Invariants (of a ready index):
// - n points, pts / idx / pos / bits (cat and mask, when filtered) in index order: a permutation of
//   the view's positions sorted by their Z-order code, each code in code[0, n); within a run of
//   one code, sorted by the second level's codes in code[n, 2n) (0 outside such runs: the
//   paths of the run's k-d splits, knn_index.c). Where that tree would run deeper than
//   nbi_ix_depth_cap(n) (a heavy tail), every first-level code is 0 instead: the points are
//   one such run, in k-d order.
// - node 0 is the root, over [0, n). An inner node's range splits at the first position whose
//   code has the highest bit set in which its first and last codes differ (the first level's;
//   when they are equal, the second level's; when those are equal too, at its middle), into
//   its two children, numbered after it; a range of at most
//   NBI_KNN_LEAF_PTS points is a leaf. `root` is the exact box of every point (lo[3], hi[3]);
//   box[t] holds the exact boxes of inner node t's two children, interleaved (for axis a: lo of
//   left, lo of right, hi of left, hi of right); filtered: nbits[t] their ORs of categories and
//   of masks (left category, left mask, right category, right mask).
typedef struct nbiKnnIndex {
    int32_t n, dim, nnodes;
    int depth; // the levels of its deepest leaf (the root's: 0)
    bool filtered;
    double origin[3];  // the points' box's low corner
    double scale;      // code units a unit of distance (one for every axis)
    double root[6];    // the box of every point
    uint64_t max_cell; // the largest per-axis code value
    nbiBuf pts;        // double, dim * n: every x, then every y (then every z)
    nbiBuf idx;        // int32_t, n: the caller's index of each point
    nbiBuf bits;       // uint32_t, 2n (filtered): category, mask
    nbiBuf node;       // nbiKnnNode, nnodes
    nbiBuf box;        // double, nnodes * 4 dim
    nbiBuf nbits;      // uint32_t, nnodes * 4 (filtered)
    nbiBuf code;       // uint64_t, 3n: the codes of both levels, then scratch
    nbiBuf hist;       // int32_t: the radix sort's counts
    nbiBuf pos;        // int32_t, n: the view position of each point (radius queries report
                       // their hits in the view's order: nbi_knn_index_ball)
} nbiKnnIndex;

// The index and its state: stale (the points changed since it was built), being built by one
// query, ready, failed (allocation), cells (tests said never: nbi_knn_index_use), or counting:
// the cells suit the points (nbi_knn_index_wanted) or are crowded by duplicates (nbi_ix_build),
// and kNN walks them until it has answered NBI_KNN_AFTER(n) queries, or far queries have run up
// the debt of NBI_KNN_FAR_GAP, then builds the index for the rest (a batch of queries, as a kNN of
// every point, pays for it). After failed or cells,
// kNN walks the cells until the next build.
enum {
    NBI_KNN_STALE,
    NBI_KNN_BUILDING,
    NBI_KNN_READY,
    NBI_KNN_FAILED,
    NBI_KNN_CELLS,
    NBI_KNN_COUNTING
};

// Whether kNN on the view is better served by the index than by its cells: a hashed layout
// (clustered or surface data, Z-ordered blocks of cells), any 3D grid (a ring there is 26
// cells and more: the index measured 1.3x the walk on uniform 3D points), or 2D cells whose
// occupancy varies (the occupancy of a random point's cell is above twice the mean: blobs;
// nbi_ix_build then declines, at first, when the crowding is duplicates, which the ring walk
// scans faster on small cells). On evenly filled 2D cells (uniform data) the ring walk costs about
// what the tree's descent does for a few queries, and the index's build is not worth it; for many
// (a kNN of every point) the descent is cheaper, so the walk counts its queries and the index is
// built after NBI_KNN_AFTER(n) of them. Tests set nbi_knn_index_use to 1 (always the index) or -1
// (never); 0 is this rule.
bool nbi_knn_index_wanted(const nbiView *v);
extern int nbi_knn_index_use;
// The levels of k-d splits of a run of one code recorded as second-level codes before exact
// medians take over (knn_index.c, nbi_ix_order_runs): at most its default, 48; tests lower it
// to reach the medians.
extern int nbi_knn_path_bits;
// The most levels the tree over n points may have (twice a balanced tree's, and 16 more): a
// deeper tree over the Z-order codes (a heavy tail) is built as a k-d tree (knn_index.c).
int nbi_ix_depth_cap(int32_t n);
// The queries the walk answers on evenly filled 2D cells (or crowded by duplicates) before the
// index is built: a sixteenth of the points, counting only queries in or beside the cell of the
// query before them: a batch answered in cell order (as the Python package and the CLI order
// theirs), where the index's tree and leaves stay in cache from one query to the next. Queries
// in random order keep the walk: there the index took more time a query than the rings (1.25x
// on 200k uniform points, cells of the radius for 10 neighbours), fewer instructions but more
// cache misses. (The build costs about 300 instructions a point; at k = 8 a query through the
// index saves about 1500 against the ring walk on cells of the spacing times sqrt(k), so the
// build pays for itself after about n / 5 more queries. A kNN of every point in cell order, the
// batch this serves, ran 7% fewer instructions in all at n / 16 than at n / 4, on 100k uniform,
// offset, screen and duplicate 2D points; a batch of n / 16 to n / 4 queries pays for the
// build without recovering it.)
#define NBI_KNN_AFTER(n) ((n) / 16)
// A query farther than this many cells outside the view's box is a far one: the rings from there
// cross the box's faces before they can stop, while the tree's descent goes straight to the near
// face or corner. While counting, each far query adds the instructions the index would have saved
// it (nbi_knn_far_saving) to a debt, and the index is built once the debt reaches the build's
// cost (NBI_KNN_BUILD_COST a point): a batch of far queries pays at most about twice what it
// would with the index from the start, and a few cost nothing extra. An index built so serves
// the far queries only; queries in or near the box keep the walk and its counting until their
// own rule holds (then the index serves them too, without a second build).
enum { NBI_KNN_FAR_GAP = 2, NBI_KNN_BUILD_COST = 300 };
typedef struct nbiKnnLazy {
#if NBI_KNN_INDEX
    atomic_int state;
    atomic_int walked;   // queries in cell order the walk answered while counting (a racy
                         // tally: relaxed loads and stores; a count lost only delays it)
    atomic_llong last;   // the last query's cell (nbi_knn_index_get), relaxed as well
    atomic_int crowded;  // the cells' occupancy for this build (knn_index.c): 0 not known yet
    atomic_llong debt;   // far queries' expected savings while counting (racy as `walked`)
    atomic_int far_only; // the ready index serves far queries only (set before it is published)
#endif
    nbiKnnIndex ix;
} nbiKnnLazy;

// The instructions the index is expected to save the cell walk on the k nearest of q: 0 for a
// query within NBI_KNN_FAR_GAP cells of the view's box on every axis. Beyond it, a model in
// cell units: the k nearest lie in the cap of the box within E of the query's gap G to it, whose
// reach along an axis on which the query lies outside by o is sqrt(o^2 + 2 G E) - o (linear in E
// beside a corner, sqrt(2 G E) along a face the query faces square on), clipped to the box; E is
// where half the product of the reaches holds k points at the box's mean density (bisection).
// The walk crosses as many rings as the longest reach, each about NBI_KNN_RING_COST
// instructions (face clipping, bounds; measured 1100-1700 on 25k uniform 2D points); the index
// costs about NBI_KNN_DESCENT_COST plus NBI_KNN_DESCENT_K a neighbour.
enum { NBI_KNN_RING_COST = 1500, NBI_KNN_DESCENT_COST = 1000, NBI_KNN_DESCENT_K = 400 };
double nbi_knn_far_saving(const nbiView *v, const double *q, int32_t k);

// The index of the view's points for the k nearest of `point`, built on first use: NULL while
// another thread builds it, or when it cannot be had (the caller then walks the cells: the same
// answers). Thread-safe against other calls of it on the same z; the view must not change
// meanwhile.
const nbiKnnIndex *nbi_knn_index_get(nbiKnnLazy *z, const nbiView *v, const nbAllocator *a,
                                     const double *point, int32_t k);
// Whether the view's cells are crowded for a nearest neighbour (k = 1): the cell of a point taken
// at random holds more than NBI_KNN_CROWDED points on average (cells sized for the sparse part
// of a heavy-tailed set, whose dense core then fills a few of them with thousands). The cell
// walk scans a query's whole cell, so k = 1 goes through the index there too. Worked out once
// a build (a pass over the cells), thread-safe as nbi_knn_index_get is.
enum { NBI_KNN_CROWDED = 64 };
bool nbi_knn_crowded(nbiKnnLazy *z, const nbiView *v);
// The points changed: the next kNN builds the index anew (storage kept), the far queries' debt
// starts over. Not thread-safe.
void nbi_knn_index_stale(nbiKnnLazy *z);
// nbi_knn_index_stale unless it is stale already (one load: for a hot path that changes points).
NBI_INLINE void nbi_knn_index_touch(nbiKnnLazy *z)
{
#if NBI_KNN_INDEX
    if (atomic_load_explicit(&z->state, memory_order_relaxed) != NBI_KNN_STALE)
#endif
        nbi_knn_index_stale(z);
}

// The spatial hash's use of the index (hash.c), for far queries only: the index when it is
// ready, else NULL; and the charge of a far query's walk, `saving` instructions, to the debt,
// the index built (by this call, over the view's n items at positions [0, positions), slack
// skipped) once the debt reaches the build's cost. Thread-safe as nbi_knn_index_get is.
NBI_INLINE const nbiKnnIndex *nbi_knn_index_ready(nbiKnnLazy *z)
{
#if NBI_KNN_INDEX
    if (atomic_load_explicit(&z->state, memory_order_acquire) == NBI_KNN_READY) return &z->ix;
#else
    (void)z;
#endif
    return NULL;
}
void nbi_knn_index_charge(nbiKnnLazy *z, const nbiView *v, const nbAllocator *a, int32_t positions,
                          double saving);
// Frees the storage.
void nbi_knn_index_free(nbiKnnLazy *z, const nbAllocator *a);
// Bytes held.
size_t nbi_knn_index_bytes(const nbiKnnLazy *z);

#if NBI_KNN_INDEX
// Whether the filter f rules out inner node t's child `side` (its ORed bits say no point in it
// can pass): never when the index holds no filter bits.
NBI_INLINE bool nbi_ix_bits_out(const nbiKnnIndex *ix, nbFilter f, int32_t t, int side)
{
    if (!ix->filtered) return false;
    const uint32_t *nb = (const uint32_t *)ix->nbits.ptr + 4 * (size_t)t + 2 * side;
    return !nbi_filter_match(f.category, f.mask, nb[0], nb[1]);
}

// What a search in some distance gives the walk: the gaps from its query to an inner node's two
// child boxes (cb, the node's slot of `box`) into g[0] (left) and g[1] (right), never above the
// distance of any point in the box; and the scan of a leaf's positions [p0, p1), which offers
// its points and lowers the search's bound.
typedef void nbiIxGapsFn(void *search, const double *cb, double g[2]);
typedef void nbiIxLeafFn(void *search, int32_t p0, int32_t p1);

// The walk from the root, nearer child first, that the Euclidean kNN and the other norms' share:
// depth first, the farther child kept on a stack with its gap and skipped when, by the time it
// comes up, its gap is beyond *bound (the search's k-th best once full; strictly beyond, so a
// tie may still enter with a lower index). The stack holds at most one node a level. Inlined
// with constant `gaps` and `leaf`, so each search compiles to its own loop.
NBI_INLINE void nbi_ix_walk(const nbiKnnIndex *ix, nbFilter f, void *search, const double *bound,
                            nbiIxGapsFn *gaps, nbiIxLeafFn *leaf)
{
    const nbiKnnNode *node = (const nbiKnnNode *)ix->node.ptr;
    const double *box = (const double *)ix->box.ptr;
    const size_t bw = 4 * (size_t)ix->dim;
    int32_t st[NBI_IX_DEPTH];
    double sg[NBI_IX_DEPTH];
    int sp = 0;
    int32_t t = 0;
    for (;;) {
        const nbiKnnNode nd = node[t];
        if (nd.left == 0) {
            leaf(search, nd.first, nd.end);
        } else {
            double g[2];
            gaps(search, box + (size_t)t * bw, g);
            // The nearer child as a branch, not as data: the processor then runs ahead into
            // the child it predicts instead of waiting for the boxes' loads.
            if (g[1] < g[0]) {
                if (!(g[0] > *bound) && !nbi_ix_bits_out(ix, f, t, 0)) {
                    st[sp] = nd.left;
                    sg[sp++] = g[0];
                }
                if (!(g[1] > *bound) && !nbi_ix_bits_out(ix, f, t, 1)) {
                    t = nd.left + 1;
                    continue;
                }
            } else {
                if (!(g[1] > *bound) && !nbi_ix_bits_out(ix, f, t, 1)) {
                    st[sp] = nd.left + 1;
                    sg[sp++] = g[1];
                }
                if (!(g[0] > *bound) && !nbi_ix_bits_out(ix, f, t, 0)) {
                    t = nd.left;
                    continue;
                }
            }
        }
        for (;;) {
            if (sp == 0) return;
            sp--;
            if (!(sg[sp] > *bound)) break;
        }
        t = st[sp];
    }
}
#endif

// The k nearest as nbi_walk_knn finds them (arguments checked, k >= 1, the filter open or the
// index filtered), into the heap `out` of k entries, sorted.
int32_t nbi_knn_index_query(const nbiKnnIndex *ix, const double *point, nbFilter f,
                            double max_distance, nbNeighbor *out, int32_t k);

// The points within a ball (d2 <= r2, d2 as nbi_dist2 computes it) that pass f (the filter
// open or the index filtered): their view positions (`pos`), in no particular order, into out (of
// `size` entries, at least cap; the scan writes no further, and is fastest where out has room for
// a leaf and four more past cap: NBI_BALL_SLACK) while at most cap of them are found. Returns how
// many were found; with out, a number above cap means they did not fit (the walk stopped there);
// without out (count only), the exact count.
enum { NBI_BALL_SLACK = NBI_KNN_LEAF_PTS + 8 };
int32_t nbi_knn_index_ball(const nbiKnnIndex *ix, const double *center, double r2, nbFilter f,
                           int32_t *out, int32_t cap, int32_t size);

// The instructions the index is expected to save the cells' walk on a radius query whose centre
// lies more than NBI_KNN_FAR_GAP cells outside the view's box on some axis (nbi_ball_far: the
// caller has tested it; 0: walk the cells): NBI_BALL_FAR_SAVING for such a far ball (its cap
// is a thin slab across a face or a corner of the data, crossing many cells, empty or crowded, for
// a few hits), where the cells are those kNN would rather leave for the index
// (nbi_knn_index_wanted's rule: the hashed layout, 3D, or 2D cells whose occupancy varies; worked
// out once a build, as nbi_knn_crowded is). On evenly filled 2D cells the rows clipped to the ball
// cost less than the tree's descent through the slab (25k uniform 2D points, far balls: 2.7k
// instructions a ball against 3.4k). On the dense layout (cells at least a quarter full) a cap
// expected to hold more than NBI_BALL_CAP_POINTS points at the box's mean density (knn_index.c,
// nbi_ix_cap_points) keeps the cells too: a slab of full cells, which their rows answer in order at
// a few instructions a hit, where the tree's would be sorted (25k uniform 3D points, balls from
// beyond a face, 1163 hits each: 48k instructions a ball on the cells, 58k for the tree's walk
// alone; far balls in random directions, 42 hits on average: 14.3k on the cells, 10.0k with this
// rule at 256, with a comparison sort 9.4k all through the tree and 10.3k at a bound of 64; since
// the leaves are scanned without a branch a point and the hits ranked, 9.0k at 256, 8.3k at
// 512, 8.6k at any number, where balls from beyond a face took 71k through the tree). On the ranked
// and hashed layouts (clustered data) the mean density says little of a cap, and every far ball
// takes the tree, which stops early where a cap holds many (query.c, NBI_BALL_SORTED). The
// saving is a floor of what was measured (25k points, far balls: blobs2d 4.1k instructions a
// ball on the cells, 1.5k through the tree; uniform3d 14.3k, 10.0k; powerlaw3d 13.5k, 2.8k).
enum { NBI_BALL_FAR_SAVING = 2000, NBI_BALL_CAP_POINTS = 512 };
double nbi_knn_ball_saving(nbiKnnLazy *z, const nbiView *v, const double *center, double radius);
// A far ball through the index where it suits it (nbi_knn_ball_saving; any ball the index can
// answer when tests say so), else nbi_walk_radius (query.c); the index of z built through alloc
// once far balls' savings pay for it. Tests set nbi_ball_index_use to 1 (through the index
// whenever it can answer) or -1 (never); 0 is the rule.
nbStatus nbi_walk_radius_far(const nbiView *v, nbiKnnLazy *z, const nbAllocator *alloc,
                             const double *center, double radius, nbFilter f, nbiHitSink *s);
extern int nbi_ball_index_use;

// Whether q lies more than NBI_KNN_FAR_GAP cells outside the view's box on some axis (a far
// ball's centre, or a far kNN query). The tests are ORed, not short-circuited: from queries in
// every direction a branch on each axis would go either way.
NBI_INLINE bool nbi_ball_far(const nbiView *v, const double *q)
{
    const double c = v->cm.cell;
    bool far = false;
    for (int a = 0; a < v->dim; a++)
        far |= (q[a] < ((double)v->lo[a] - NBI_KNN_FAR_GAP) * c) |
               (q[a] > ((double)v->hi[a] + 1.0 + NBI_KNN_FAR_GAP) * c);
    return far;
}

// nbi_walk_radius with the index of z (NULL: none): the same answers in the same order, a far
// ball found through the index (nbi_walk_radius_far). Inline, so that a ball among the data pays
// one test for it: a ball from a centre more than NBI_KNN_FAR_GAP cells outside the box reaches
// no point unless its radius is wider than that.
NBI_INLINE nbStatus nbi_walk_radius_indexed(const nbiView *v, nbiKnnLazy *z,
                                            const nbAllocator *alloc, const double *center,
                                            double radius, nbFilter f, nbiHitSink *s)
{
    if (nbi_ball_index_use > 0 || (radius > NBI_KNN_FAR_GAP * v->cm.cell &&
                                   nbi_ball_index_use == 0 && nbi_ball_far(v, center)))
        if (z != NULL && v->wrap == NULL && !s->positions && s->found == 0)
            return nbi_walk_radius_far(v, z, alloc, center, radius, f, s);
    return nbi_walk_radius(v, center, radius, f, s);
}
// nbi_walk_knn / nbi_visit_knn (query.c) with the index of z (NULL: none), built on first use
// through alloc: the same answers, found through the index when it can be had.
nbStatus nbi_walk_knn_indexed(const nbiView *v, nbiKnnLazy *z, const nbAllocator *alloc,
                              const double *point, nbFilter f, double max_distance, nbNeighbor *out,
                              int32_t k, int32_t *found);
nbStatus nbi_visit_knn_indexed(const nbiView *v, nbiKnnLazy *z, const double *point, nbFilter f,
                               double max_distance, int32_t k, const nbAllocator *alloc,
                               nbNeighborFn *visit, void *user);

#endif
