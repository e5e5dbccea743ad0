// SPDX-License-Identifier: MIT
/// The quadtree of rectangles: axis-aligned rectangles of mixed sizes (a unit's footprint, a
/// building, a sprite's bounds), stored by handle, each with your 64-bit user value and filter
/// bits. Insert returns a handle; move and remove take it, without searching.
///
/// Placement. By default the tree is loose (NB_QUADTREE_LOOSE): a node's bounds are its
/// quadrant enlarged by half its side on every edge, and a rectangle goes down to the child that
/// holds its centre while that child's bounds still hold all of it, so no rectangle is stuck
/// high in the tree because it straddles a split line. NB_QUADTREE_TIGHT is the classic rule
/// (the deepest quadrant that wholly contains the rectangle); docs/quadtree.md has the
/// measurement that chose the default. A leaf splits when it holds more than `split_threshold`
/// rectangles, unless it is at `max_depth`, so duplicates and zero-size rectangles never recurse
/// without end; a removal that leaves four sibling leaves empty frees them (collapsing upwards).
///
/// The root finds the data: nb_quadtree_build fits the root to the rectangles it is given, and
/// inserts fit it to what the tree holds when the root first splits (and to the first rectangle
/// of an empty tree that the desc's bounds do not hold), so the desc's bounds are only a hint.
/// Later, a rectangle whose centre lies outside the root's quadrant grows the root (doubling it
/// towards the rectangle, up to 68 times), so that nothing piles up above the leaves for lying
/// outside the root. Nothing is ever dropped: one that still does not fit (coordinates beyond
/// about 2^48 times the desc's side) is kept in an outside list that every query also searches.
///
/// Checks. A call checks its pointers, then each item's handle, finiteness, then range, and
/// returns the first failure's status. A bulk call (nb_quadtree_build, nb_quadtree_move_many)
/// checks every item before it changes anything, and the first bad item decides: item i's
/// checks all come before item i + 1's (an inverted rectangle before a NaN one gives
/// NB_ERR_OUT_OF_RANGE; a rectangle both inverted and NaN, NB_ERR_NOT_FINITE).
///
/// Rectangles are closed: a window, point, circle or ray that touches a rectangle's edge hits it.
/// Zero-width and zero-height rectangles are valid. A rectangle with min > max on an axis, or a
/// NaN or infinite coordinate, is refused (NB_ERR_OUT_OF_RANGE / NB_ERR_NOT_FINITE) and changes
/// nothing.
///
/// Filters: every query takes an nbFilter and applies Box2D's rule against each rectangle's bits
/// inside the traversal; pairs apply it between the two rectangles.
///
/// Results name rectangles by handle and user value (nbHit), in a deterministic order: the same
/// sequence of calls gives the same results in the same order. Traversal is iterative with a
/// stack bounded by the depth limits; queries never allocate.
///
/// Thread safety: queries take a const tree and keep no scratch in it, so any number of threads
/// may query at once. insert / build / move / move_many / remove / set / clear / reserve /
/// destroy need exclusive access.
#ifndef NEARBY_QUADTREE_H
#define NEARBY_QUADTREE_H

#include "nearby.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The deepest level a desc may ask for (max_depth).
#define NB_QUADTREE_MAX_DEPTH 40

/// The quadtree. Opaque.
typedef struct nbQuadtree nbQuadtree;

/// An axis-aligned rectangle, closed: the points with min[a] <= p[a] <= max[a] on both axes.
typedef struct nbRect {
    double min[2];
    double max[2];
} nbRect;

/// How a rectangle finds its node (nbQuadtreeDesc.placement).
typedef enum nbQuadtreePlacement {
    NB_QUADTREE_DEFAULT = 0, ///< NB_QUADTREE_LOOSE, the measured better (docs/quadtree.md)
    NB_QUADTREE_LOOSE = 1,   ///< node bounds = quadrant enlarged by half its side; by centre
    NB_QUADTREE_TIGHT = 2,   ///< the deepest quadrant that wholly contains the rectangle
} nbQuadtreePlacement;

/// Zero-initialise, then set what you need; zero means "default" for every field.
typedef struct nbQuadtreeDesc {
    nbRect bounds;                ///< the root's first quadrant; all zero = [-1024, 1024]^2. A
                                  ///< hint: the root moves to the data and grows as needed.
    int32_t split_threshold;      ///< a leaf splits above this many rectangles; 0 = 512
    int32_t max_depth;            ///< the deepest level below the (fitted) root; 0 = 24
    int32_t placement;            ///< nbQuadtreePlacement; 0 = NB_QUADTREE_DEFAULT
    int32_t capacity_hint;        ///< rectangles to reserve for (nb_quadtree_reserve); 0 = grow
    const nbAllocator *allocator; ///< NULL = malloc/free; copied, must outlive the tree
} nbQuadtreeDesc;

/// A hit from a ray cast: the rectangle and the distance `t` along the ray at which the ray
/// enters it (0 when the origin is inside).
typedef struct nbRayHit {
    nbHit hit;
    double t;
} nbRayHit;

/// A summary of the tree's shape (nb_quadtree_info).
typedef struct nbQuadtreeInfo {
    int32_t count;      ///< rectangles
    int32_t nodes;      ///< nodes in the tree (root included)
    int32_t leaves;     ///< nodes without children
    int32_t depth;      ///< levels from the root to the deepest node, the root's level 0
    int32_t held_above; ///< rectangles held by nodes that have children
    int32_t outside;    ///< rectangles in the outside list
    int32_t root_grown; ///< times the root has doubled since it was last fitted to the data
    nbRect root;        ///< the root's quadrant
    size_t bytes;       ///< nb_quadtree_memory_bytes
    int64_t tidied;     ///< nodes the changes' tidying re-sorted (nb_quadtree_move) since the
                        ///< tree was created, cleared or built
} nbQuadtreeInfo;

/// Creates an empty tree. NB_ERR_NULL_ARG for an allocator with only one hook set;
/// NB_ERR_NOT_FINITE for NaN or infinite bounds; NB_ERR_OUT_OF_RANGE for bounds that are not all
/// zero and not min < max on both axes, a negative split_threshold, max_depth or capacity_hint,
/// a max_depth above NB_QUADTREE_MAX_DEPTH, a split_threshold above 2^20, an unknown placement,
/// or a capacity_hint beyond 2^28; NB_ERR_OUT_OF_MEMORY. On error *out is NULL.
NB_API nbStatus nb_quadtree_create(const nbQuadtreeDesc *desc, nbQuadtree **out);

/// Frees the tree and everything it owns. NULL is a no-op. Every handle it issued is dead.
NB_API void nb_quadtree_destroy(nbQuadtree *tree);

/// Grows storage so that the tree can hold `count` rectangles, and move them about, without
/// allocating in the usual case: it sets aside 3 block positions a rectangle (a node's block is
/// at most twice what it holds, and freed blocks wait for reuse) and a group of four nodes per
/// 8 rectangles. A workload that needs more still works and allocates (geometrically) until its
/// blocks settle. A tree that has been built (nb_quadtree_build) reserves in both its layouts,
/// and the first build gives its second layout the largest count reserved so far, so that
/// rebuilds of up to `count` rectangles allocate nothing. NB_ERR_OUT_OF_RANGE for a negative
/// count or one beyond 2^28; NB_ERR_OUT_OF_MEMORY leaves the contents unchanged.
NB_API nbStatus nb_quadtree_reserve(nbQuadtree *tree, int32_t count);

/// Removes every rectangle (their handles go stale), resets the root to the desc's bounds and
/// keeps the storage. Never fails.
NB_API void nb_quadtree_clear(nbQuadtree *tree);

/// Rectangles in the tree (0 for NULL).
NB_API int32_t nb_quadtree_count(const nbQuadtree *tree);

/// Bytes the tree holds, including its struct and, once built, its second layout and the
/// build's scratch (nb_quadtree_build) (0 for NULL).
NB_API size_t nb_quadtree_memory_bytes(const nbQuadtree *tree);

/// The tree's shape. O(nodes).
NB_API nbStatus nb_quadtree_info(const nbQuadtree *tree, nbQuadtreeInfo *out);

/// One node of the tree, as nb_quadtree_visit_nodes reports it.
typedef struct nbQuadtreeNode {
    nbRect cell;   ///< its quadrant; its children split it at its middle
    nbRect bounds; ///< what every rectangle of its subtree lies in: the cell, enlarged by half
                   ///< its side per edge (clamped to the parent's) when the tree is loose
    int32_t depth; ///< levels below the root (the root's is 0)
    int32_t count; ///< rectangles the node holds itself (not its children's)
    bool leaf;     ///< true if it has no children
} nbQuadtreeNode;

/// Called once per node; return false to stop.
typedef bool nbQuadtreeNodeFn(const nbQuadtreeNode *node, void *user);

/// Reports every node of the tree, depth first, a node before its children and the children
/// in quadrant order (x low then high, y low, then x low then high, y high): what a picture of
/// the tree draws, or a check of its shape. The outside list (nb_quadtree_info's `outside`) is
/// not a node and is not reported. Does not allocate; the tree must not change during the call.
/// O(nodes).
NB_API nbStatus nb_quadtree_visit_nodes(const nbQuadtree *tree, nbQuadtreeNodeFn *visit,
                                        void *user);

/// Inserts a rectangle with your user value and filter bits (category: what it is; mask: what it
/// may match; NB_FILTER_ALL for no filtering) and writes its handle. NB_ERR_NOT_FINITE for a NaN
/// or infinite coordinate; NB_ERR_OUT_OF_RANGE for min > max on an axis or a tree already holding
/// 2^28 rectangles; NB_ERR_OUT_OF_MEMORY. On error *out is null and the tree is unchanged.
/// O(depth), plus a leaf split now and then, and its share of the tidying (nb_quadtree_move).
/// While the root is a leaf, its first split fits it to what it holds (O(split_threshold)).
NB_API nbStatus nb_quadtree_insert(nbQuadtree *tree, const nbRect *rect, uint64_t user,
                                   nbFilter filter, nbHandle *out);

/// Replaces the contents with `n` rectangles at once: every earlier handle goes stale, and
/// rectangle i gets the user value users[i] (users NULL: i), the filter bits filters[i]
/// (filters NULL: NB_FILTER_ALL) and its handle in handles[i] (handles may be NULL), whose slot is
/// i: what goes by lower handle slot (kNN and raycast ties, which of a pair comes first) goes by
/// lower index. Faster than
/// n inserts, and it lays nodes and rectangles out in memory in the order queries walk them, so
/// queries on a built tree run faster too. The root is fitted to the rectangles (the square
/// around their centres, with 1/32 of its side to spare on each edge), whatever the desc's
/// bounds. All or nothing: NB_ERR_NULL_ARG; NB_ERR_OUT_OF_RANGE for n < 0 or beyond 2^28; then
/// the first bad rectangle's NB_ERR_NOT_FINITE or NB_ERR_OUT_OF_RANGE (checked as
/// nb_quadtree_insert does, finiteness first); NB_ERR_OUT_OF_MEMORY; each leaving the tree (and
/// handles) unchanged.
/// Memory: a built tree keeps two layouts. The build lays the new tree out in the second one and
/// swaps them when it is done (so a failure leaves the first as it was), and the layout it
/// replaced, storage and all, is the next build's, with 9 bytes a rectangle of scratch kept
/// between builds. So rebuilding every frame allocates nothing once both layouts have held a
/// tree as large: from the third build on (with a capacity hint or nb_quadtree_reserve, from
/// the second), unless a frame's tree needs more nodes or blocks than either has held (then one
/// grows, by half again). The first build makes the second layout.
NB_API nbStatus nb_quadtree_build(nbQuadtree *tree, const nbRect *rects, int32_t n,
                                  const uint64_t *users, const nbFilter *filters,
                                  nbHandle *handles);

/// Moves (or resizes) a rectangle. If the new rectangle still lies within its node's bounds and
/// (loose placement) its centre within its node's quadrant, only its coordinates change;
/// otherwise it leaves its node and is placed anew, O(depth), growing the root if its centre
/// left the root's quadrant.
/// Tidying: moves, inserts and removes each add one to a credit that keeps the tree as quick to
/// search as a fresh build; round the nodes, each time the credit reaches 8 per rectangle of the
/// next node (of 32 to 1024 rectangles), that node's rectangles are sorted in memory along a
/// curve again. With every rectangle moving each frame, a node is tidied about every 8 frames.
/// No rectangle changes node, handles stay valid, and the order results come in may change
/// (deterministically). Amortised O(1) a change; one call sorts at most about 4000 rectangles.
/// NB_ERR_BAD_HANDLE; NB_ERR_NOT_FINITE; NB_ERR_OUT_OF_RANGE (min > max); NB_ERR_OUT_OF_MEMORY.
/// On error the tree is unchanged. Checks: pointers, the handle, finiteness, range.
NB_API nbStatus nb_quadtree_move(nbQuadtree *tree, nbHandle item, const nbRect *rect);

/// Moves `count` rectangles at once: items[i] to rects[i], in order (a handle given twice ends at
/// its last rectangle). The same as calling nb_quadtree_move for each, but faster for many movers
/// in random order: it asks for the memory of the moves to come while it makes the current one.
/// Every entry is checked first (its handle, then finiteness, then range, as nb_quadtree_move
/// does): if one is bad, nothing moves and the first bad entry's status is returned
/// (NB_ERR_BAD_HANDLE, NB_ERR_NOT_FINITE, NB_ERR_OUT_OF_RANGE). Making room is done move by
/// move: if it fails (NB_ERR_OUT_OF_MEMORY), the moves before it have been made and the rest
/// have not; the tree is valid either way. `*moved` (may be NULL) is the number of entries
/// moved: 0 on a check failure, `count` on NB_OK. NB_ERR_OUT_OF_RANGE for count < 0;
/// NB_ERR_NULL_ARG for a NULL tree, or NULL arrays with count > 0. Allocates only as the single
/// moves would.
NB_API nbStatus nb_quadtree_move_many(nbQuadtree *tree, const nbHandle *items, const nbRect *rects,
                                      int32_t count, int32_t *moved);

/// Removes a rectangle; its handle goes stale. O(1) plus the collapse of emptied leaves, and its
/// share of the tidying (nb_quadtree_move).
/// NB_ERR_BAD_HANDLE. Never allocates.
NB_API nbStatus nb_quadtree_remove(nbQuadtree *tree, nbHandle item);

/// A rectangle's bounds, user value and filter bits (each output may be NULL).
/// NB_ERR_BAD_HANDLE; outputs untouched on error.
NB_API nbStatus nb_quadtree_get(const nbQuadtree *tree, nbHandle item, nbRect *rect, uint64_t *user,
                                nbFilter *filter);

/// Replaces a rectangle's user value and filter bits. NB_ERR_BAD_HANDLE.
NB_API nbStatus nb_quadtree_set(nbQuadtree *tree, nbHandle item, uint64_t user, nbFilter filter);

/// Calls `visit` for every rectangle, node by node, until it returns false.
NB_API nbStatus nb_quadtree_visit_all(const nbQuadtree *tree, nbHitFn *visit, void *user);

/// Rectangles that touch `box` (closed on both sides: a shared edge or corner counts; the box's
/// first two axes) and pass `filter`. Writes up to `capacity` hits to `out` and the total to
/// *found; if the total exceeds capacity, returns NB_ERR_BUFFER_TOO_SMALL with `out` holding the
/// first `capacity`. Entries of `out` past *found (within `capacity`) are scratch: the search may
/// have written them. NB_ERR_NOT_FINITE for a NaN bound (infinite bounds are allowed: a half-plane,
/// everything); NB_ERR_OUT_OF_RANGE for min > max or a negative capacity. Does not allocate.
NB_API nbStatus nb_quadtree_query_box(const nbQuadtree *tree, const nbBox *box, nbFilter filter,
                                      nbHit *out, int32_t capacity, int32_t *found);
/// The callback form of nb_quadtree_query_box.
NB_API nbStatus nb_quadtree_visit_box(const nbQuadtree *tree, const nbBox *box, nbFilter filter,
                                      nbHitFn *visit, void *user);

/// Rectangles that contain the point (2 doubles; edges count). Same contract as
/// nb_quadtree_query_box; NB_ERR_NOT_FINITE for a NaN or infinite coordinate.
NB_API nbStatus nb_quadtree_query_point(const nbQuadtree *tree, const double *point,
                                        nbFilter filter, nbHit *out, int32_t capacity,
                                        int32_t *found);
/// The callback form of nb_quadtree_query_point.
NB_API nbStatus nb_quadtree_visit_point(const nbQuadtree *tree, const double *point,
                                        nbFilter filter, nbHitFn *visit, void *user);

/// Rectangles within `radius` of `center`: dx*dx + dy*dy <= radius*radius in double, where dx is
/// how far center[0] lies outside [min[0], max[0]] (0 inside), likewise dy. Same contract as
/// nb_quadtree_query_box; NB_ERR_NOT_FINITE for a NaN or infinite center or radius;
/// NB_ERR_OUT_OF_RANGE for a negative radius or capacity.
NB_API nbStatus nb_quadtree_query_radius(const nbQuadtree *tree, const double *center,
                                         double radius, nbFilter filter, nbHit *out,
                                         int32_t capacity, int32_t *found);
/// The callback form of nb_quadtree_query_radius.
NB_API nbStatus nb_quadtree_visit_radius(const nbQuadtree *tree, const double *center,
                                         double radius, nbFilter filter, nbHitFn *visit,
                                         void *user);

/// The k rectangles nearest to `point` that pass `filter`, by the distance to the rectangle (as
/// in nb_quadtree_query_radius, 0 inside), no farther than `max_distance` (+infinity: no limit).
/// Nearest first, ties by lower handle slot. `out` holds k and is the search's heap; *found is
/// min(k, matches). NB_ERR_NOT_FINITE for a NaN or infinite point or a NaN max_distance;
/// NB_ERR_OUT_OF_RANGE for k < 0 or a negative max_distance. Does not allocate.
NB_API nbStatus nb_quadtree_knn(const nbQuadtree *tree, const double *point, nbFilter filter,
                                double max_distance, nbHitNeighbor *out, int32_t k, int32_t *found);
/// The callback form of nb_quadtree_knn: the same neighbours in the same order, each handed to
/// `visit`. The search keeps its k best on the stack up to NB_KNN_STACK and in memory from the
/// tree's allocator above that (NB_ERR_OUT_OF_MEMORY if that fails, after the other checks).
NB_API nbStatus nb_quadtree_visit_knn(const nbQuadtree *tree, const double *point, nbFilter filter,
                                      double max_distance, int32_t k, nbHitNeighborFn *visit,
                                      void *user);

/// The first rectangle a ray hits: the ray starts at `origin` and goes along `direction`
/// (normalised by the call), up to `max_distance` (+infinity: no limit). `t` is where the ray
/// enters the rectangle (0 if it starts inside; +infinity for a hit farther than the largest
/// double, which coordinates near it can give); ties by lower handle slot. *found is 0 or 1.
/// NB_ERR_NOT_FINITE for a NaN or infinite origin or direction or a NaN max_distance;
/// NB_ERR_OUT_OF_RANGE for a zero direction or a negative max_distance.
NB_API nbStatus nb_quadtree_raycast(const nbQuadtree *tree, const double *origin,
                                    const double *direction, double max_distance, nbFilter filter,
                                    nbRayHit *out, int32_t *found);

/// Every rectangle the ray hits (as nb_quadtree_raycast), nearest first, ties by lower handle
/// slot. Writes the nearest `capacity` to `out` (its heap) and the total to *found;
/// NB_ERR_BUFFER_TOO_SMALL if the total exceeds capacity. Statuses as nb_quadtree_raycast, and
/// NB_ERR_OUT_OF_RANGE for a negative capacity.
NB_API nbStatus nb_quadtree_raycast_all(const nbQuadtree *tree, const double *origin,
                                        const double *direction, double max_distance,
                                        nbFilter filter, nbRayHit *out, int32_t capacity,
                                        int32_t *found);

/// Called with each rectangle a ray hits and the distance t at which the ray enters it
/// (nb_quadtree_visit_raycast_all); return false to stop.
typedef bool nbRayHitFn(nbHit hit, double t, void *user);

/// nb_quadtree_raycast_all's hits, nearest first (ties by lower handle slot), each to `visit`
/// until it returns false. Holds every hit at once: up to NB_KNN_STACK on the stack, more from
/// the tree's allocator (NB_ERR_OUT_OF_MEMORY when that fails, before any visit). Statuses as
/// nb_quadtree_raycast, NB_ERR_NULL_ARG for a NULL visit.
NB_API nbStatus nb_quadtree_visit_raycast_all(const nbQuadtree *tree, const double *origin,
                                              const double *direction, double max_distance,
                                              nbFilter filter, nbRayHitFn *visit, void *user);

/// Every unordered pair of touching rectangles (closed, as nb_quadtree_query_box) that pass the
/// pair rule `(cat[a] & mask[b]) && (cat[b] & mask[a])`, each once, `a` the lower handle slot:
/// a broad-phase. The usual buffer contract (NB_ERR_BUFFER_TOO_SMALL with the full count);
/// NB_ERR_OUT_OF_RANGE for a negative capacity. Does not allocate. Cost: a window search per
/// rectangle, each pair tested from one side only.
NB_API nbStatus nb_quadtree_pairs(const nbQuadtree *tree, nbHitPair *out, int64_t capacity,
                                  int64_t *found);
/// Counts the pairs nb_quadtree_pairs would report.
NB_API nbStatus nb_quadtree_count_pairs(const nbQuadtree *tree, int64_t *count);
/// Calls `visit` for each pair nb_quadtree_pairs would report, in the same order.
NB_API nbStatus nb_quadtree_visit_pairs(const nbQuadtree *tree, nbHitPairFn *visit, void *user);

/// Touching pairs between two sets chosen by mask (bullets against walls): every (a, b) with
/// `cat[a] & mask_a`, `cat[b] & mask_b`, a != b, each once, roles kept. A rectangle in both sets
/// meets the others in both roles. A rectangle whose own mask is 0 matches nothing; otherwise
/// the rectangles' masks are not consulted. Same buffer contract and statuses as
/// nb_quadtree_pairs. Cost: a window search per rectangle of set A.
NB_API nbStatus nb_quadtree_cross_pairs(const nbQuadtree *tree, uint32_t mask_a, uint32_t mask_b,
                                        nbHitPair *out, int64_t capacity, int64_t *found);
/// Counts the pairs nb_quadtree_cross_pairs would report.
NB_API nbStatus nb_quadtree_count_cross_pairs(const nbQuadtree *tree, uint32_t mask_a,
                                              uint32_t mask_b, int64_t *count);
/// Calls `visit` for each pair nb_quadtree_cross_pairs would report, in the same order.
NB_API nbStatus nb_quadtree_visit_cross_pairs(const nbQuadtree *tree, uint32_t mask_a,
                                              uint32_t mask_b, nbHitPairFn *visit, void *user);

/// Checks every invariant (handles, nodes, pages, every rectangle inside its node's bounds, the
/// storage's accounting). NB_OK or NB_ERR_INTERNAL; NB_ERR_NULL_ARG for NULL. O(size).
NB_API nbStatus nb_quadtree_validate(const nbQuadtree *tree);

#ifdef __cplusplus
}
#endif

#endif
