// SPDX-License-Identifier: MIT
/// The spatial hash: points that move, stored by handle, in an unbounded world. Cells are
/// indexed densely while the items' box of cells is small (at most about 1.5 cells an item),
/// else only occupied cells exist, found through a hash of their integer coordinates; either
/// way memory follows the item count, never the area: items may be anywhere whose cell fits the
/// cell math (|x / cell| below 2^62), far from the origin, negative, and may teleport across
/// the world.
///
/// Each item is a 2D or 3D point with your 64-bit user value and filter bits (category and
/// mask, nbFilter). Insert returns a handle; move and remove take it. A move that stays in its
/// cell rewrites the item's coordinates and touches nothing else; a move to another cell, an
/// insert and a remove are O(1) (amortised: a full cell borrows a position from a nearby cell,
/// and the storage is laid out again now and then). Once capacity suffices (nb_hash_reserve),
/// nothing allocates.
///
/// Exactness: an item is within r of a point when dx*dx + dy*dy (+ dz*dz) <= r*r in double.
/// Cells only prune; hash collisions cost probes, never an answer. Every query runs on the same
/// walkers as the dense grid's.
///
/// Results name items by handle and user value (nbHit), in a deterministic order: the same
/// sequence of calls gives the same results in the same order.
///
/// Thread safety: queries take a const hash and keep no scratch in it, so any number of threads
/// may query at once. insert / move / remove / clear / reserve / destroy need exclusive access.
#ifndef NEARBY_HASH_H
#define NEARBY_HASH_H

#include "nearby.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The spatial hash. Opaque.
typedef struct nbHash nbHash;

/// Zero-initialise, then set what you need.
typedef struct nbHashDesc {
    double cell_size;             ///< required: finite and > 0; about your usual query radius
    int32_t dim;                  ///< 2 or 3; 0 means 2
    int32_t capacity_hint;        ///< items to reserve for; 0 = grow as needed
    const nbAllocator *allocator; ///< NULL = malloc/free; copied, must outlive the hash
} nbHashDesc;

/// Results name items as nbHit (handle and user value), pairs as nbHitPair, kNN results as
/// nbHitNeighbor, all from nearby.h. From nb_hash_pairs each unordered pair comes once, `a` the
/// item inserted into the lower slot; from nb_hash_cross_pairs `a` is from set A, `b` from set
/// B, roles kept.

/// Creates an empty hash. NB_ERR_NULL_ARG for an allocator with only one hook set;
/// NB_ERR_NOT_FINITE for a NaN or infinite cell_size; NB_ERR_OUT_OF_RANGE for a cell_size <= 0,
/// a dim other than 0, 2 or 3, or a capacity_hint that is negative or beyond 2^28;
/// NB_ERR_OUT_OF_MEMORY. On error *out is NULL.
NB_API nbStatus nb_hash_create(const nbHashDesc *desc, nbHash **out);

/// Frees the hash and everything it owns. NULL is a no-op. Every handle it issued is dead.
NB_API void nb_hash_destroy(nbHash *hash);

/// Grows storage so that inserting items until the hash holds `items` allocates nothing, however
/// they crowd into cells and wherever they are (it sets aside 1.25 positions an item, a dense
/// index of up to 1.5 cells an item, and a cell table for as many hashed cells). Moves never
/// need more, so items wandering over a region reach a steady state in which nothing
/// allocates; a move that finds no room allocates (or returns NB_ERR_OUT_OF_MEMORY with the
/// item where it was). NB_ERR_OUT_OF_RANGE for a negative count or one beyond 2^28;
/// NB_ERR_OUT_OF_MEMORY leaves the hash unchanged.
NB_API nbStatus nb_hash_reserve(nbHash *hash, int32_t items);

/// Removes every item (their handles go stale) and keeps the storage. Never fails.
NB_API void nb_hash_clear(nbHash *hash);

/// Items in the hash (0 for NULL).
NB_API int32_t nb_hash_count(const nbHash *hash);

/// Bytes the hash holds, including its struct (0 for NULL).
NB_API size_t nb_hash_memory_bytes(const nbHash *hash);

/// A summary of a hash, from nb_hash_info.
typedef struct nbHashInfo {
    int32_t dim;      ///< 2 or 3
    int32_t count;    ///< items
    int32_t cells;    ///< cells holding at least one item
    bool hashed;      ///< true when cells are found through a table (a far-flung world), false
                      ///< while they are numbered densely over the items' box
    double cell_size; ///< the cell edge in use: the desc's cell_size, nudged up by 2^-30 of
                      ///< itself so that a query at radius cell_size needs only the 3^d
                      ///< neighbouring cells. A point's cell is floor(x / cell_size) per axis.
    size_t bytes;     ///< nb_hash_memory_bytes
} nbHashInfo;

/// Fills *info. NB_ERR_NULL_ARG for a NULL hash or info.
NB_API nbStatus nb_hash_info(const nbHash *hash, nbHashInfo *info);

/// Inserts a point (dim doubles) with your user value and filter bits (category: what it is;
/// mask: what it may match; NB_FILTER_ALL for no filtering) and writes its handle.
/// NB_ERR_NOT_FINITE for a NaN or infinite coordinate; NB_ERR_OUT_OF_RANGE for a cell beyond
/// +-2^62, a hash already holding 2^28 items or storage beyond 2^31 positions;
/// NB_ERR_OUT_OF_MEMORY. On error *out is null and
/// the hash is unchanged.
NB_API nbStatus nb_hash_insert(nbHash *hash, const double *pos, uint64_t user, nbFilter filter,
                               nbHandle *out);

/// Moves an item to `pos`. Within its cell: rewrites its coordinates, nothing else. To another
/// cell: O(1) amortised, may allocate when capacity does not suffice. NB_ERR_BAD_HANDLE for a
/// null, stale, removed or foreign handle; NB_ERR_NOT_FINITE; NB_ERR_OUT_OF_RANGE for a cell
/// beyond +-2^62; NB_ERR_OUT_OF_MEMORY. On error the hash is unchanged. Checks in this order:
/// pointers (NB_ERR_NULL_ARG), the handle, then finiteness, then range.
NB_API nbStatus nb_hash_move(nbHash *hash, nbHandle item, const double *pos);

/// Moves `count` items at once: items[i] to positions[i * dim .. i * dim + dim - 1], in order
/// (a handle given twice ends at its last position). The same as calling nb_hash_move for each,
/// but faster for many movers in random order: it asks for the memory of the moves to come
/// while it makes the current one. Every entry is checked first (its handle, then finiteness,
/// then range, as nb_hash_move does): if one is bad, nothing moves and the first bad entry's
/// status is returned (NB_ERR_BAD_HANDLE, NB_ERR_NOT_FINITE, NB_ERR_OUT_OF_RANGE). Making room
/// is done move by move: if it fails (NB_ERR_OUT_OF_MEMORY, or NB_ERR_OUT_OF_RANGE for storage
/// beyond 2^31 positions), the moves before it have been made and the rest have not; the hash is
/// valid either way. `*moved` (may be NULL) is the number of entries moved: 0 on a check
/// failure, `count` on NB_OK. NB_ERR_OUT_OF_RANGE for count < 0; NB_ERR_NULL_ARG for a NULL
/// hash, or NULL arrays with count > 0. Allocates only as the single moves would.
NB_API nbStatus nb_hash_move_many(nbHash *hash, const nbHandle *items, const double *positions,
                                  int32_t count, int32_t *moved);

/// Removes an item; its handle goes stale. O(1). NB_ERR_BAD_HANDLE. Never allocates. Checks the
/// pointer (NB_ERR_NULL_ARG), then the handle.
NB_API nbStatus nb_hash_remove(nbHash *hash, nbHandle item);

/// An item's position (dim doubles, may be NULL), user value (may be NULL) and filter bits (may
/// be NULL). NB_ERR_BAD_HANDLE; outputs untouched on error. Checks the hash pointer
/// (NB_ERR_NULL_ARG), then the handle.
NB_API nbStatus nb_hash_get(const nbHash *hash, nbHandle item, double *pos, uint64_t *user,
                            nbFilter *filter);

/// Replaces an item's user value and filter bits. NB_ERR_BAD_HANDLE. Checks the pointer
/// (NB_ERR_NULL_ARG), then the handle.
NB_API nbStatus nb_hash_set(nbHash *hash, nbHandle item, uint64_t user, nbFilter filter);

/// Calls `visit` for every item, by cell, until it returns false.
NB_API nbStatus nb_hash_visit_all(const nbHash *hash, nbHitFn *visit, void *user);

/// Items within `radius` of `center` that pass `filter` (Box2D's rule against each item's bits;
/// NB_FILTER_ALL for all). Writes up to `capacity` hits to `out` and the total to *found; if the
/// total exceeds capacity, returns NB_ERR_BUFFER_TOO_SMALL with `out` holding the first
/// `capacity`; entries of `out` past the hits may be overwritten. NB_ERR_NOT_FINITE for a NaN or
/// infinite center or radius; NB_ERR_OUT_OF_RANGE for a negative radius or capacity. Does not
/// allocate.
NB_API nbStatus nb_hash_query_radius(const nbHash *hash, const double *center, double radius,
                                     nbFilter filter, nbHit *out, int32_t capacity, int32_t *found);
/// The callback form of nb_hash_query_radius.
NB_API nbStatus nb_hash_visit_radius(const nbHash *hash, const double *center, double radius,
                                     nbFilter filter, nbHitFn *visit, void *user);

/// Items inside `box` (bounds inclusive, the first dim axes) that pass `filter`; same contract as
/// nb_hash_query_radius (NB_ERR_NOT_FINITE for a NaN bound; infinite bounds are allowed).
NB_API nbStatus nb_hash_query_box(const nbHash *hash, const nbBox *box, nbFilter filter, nbHit *out,
                                  int32_t capacity, int32_t *found);
/// The callback form of nb_hash_query_box.
NB_API nbStatus nb_hash_visit_box(const nbHash *hash, const nbBox *box, nbFilter filter,
                                  nbHitFn *visit, void *user);

/// The k items nearest to `point` that pass `filter` and lie within max_distance of it (d2 <=
/// max_distance^2; INFINITY for no limit), nearest first, ties by lower slot. `out` holds k
/// entries. *found = min(k, items that qualify). NB_ERR_NOT_FINITE for a NaN or infinite point
/// or a NaN max_distance; NB_ERR_OUT_OF_RANGE for a negative k or max_distance. Allocates only
/// a kNN index of the items, which a run of queries far from them builds once their walks would
/// have paid for it (any change drops it; its storage is kept; if it cannot be had, the walk
/// answers, the same).
NB_API nbStatus nb_hash_knn(const nbHash *hash, const double *point, nbFilter filter,
                            double max_distance, nbHitNeighbor *out, int32_t k, int32_t *found);
/// The callback form of nb_hash_knn: the same neighbours in the same order, each handed to
/// `visit`. The search keeps its k best on the stack up to NB_KNN_STACK and in memory from the
/// hash's allocator above that (NB_ERR_OUT_OF_MEMORY if it fails).
NB_API nbStatus nb_hash_visit_knn(const nbHash *hash, const double *point, nbFilter filter,
                                  double max_distance, int32_t k, nbHitNeighborFn *visit,
                                  void *user);

/// The items within `radius` of a stored item, excluding the item itself, that pass `filter`.
/// Same contract as nb_hash_query_radius, plus NB_ERR_BAD_HANDLE. Checks in this order: pointers
/// (NB_ERR_NULL_ARG), the handle, then finiteness, then range.
NB_API nbStatus nb_hash_query_neighbors(const nbHash *hash, nbHandle item, double radius,
                                        nbFilter filter, nbHit *out, int32_t capacity,
                                        int32_t *found);
/// The callback form of nb_hash_query_neighbors, with the same order of checks.
NB_API nbStatus nb_hash_visit_neighbors(const nbHash *hash, nbHandle item, double radius,
                                        nbFilter filter, nbHitFn *visit, void *user);

/// Every unordered pair of items within `radius` that pass the pair rule
/// `(cat[a] & mask[b]) && (cat[b] & mask[a])`, each once. Same buffer contract as the grid's
/// nb_grid_pairs (NB_ERR_BUFFER_TOO_SMALL with the full count); NB_ERR_NOT_FINITE;
/// NB_ERR_OUT_OF_RANGE for a negative radius or capacity, or a radius spanning so many cells
/// that the search would cost more than 64 N + 2^26 cell steps. Does not allocate.
NB_API nbStatus nb_hash_pairs(const nbHash *hash, double radius, nbHitPair *out, int64_t capacity,
                              int64_t *found);
/// Counts the pairs nb_hash_pairs would report. Same statuses.
NB_API nbStatus nb_hash_count_pairs(const nbHash *hash, double radius, int64_t *count);
/// Calls `visit` for each pair nb_hash_pairs would report, in the same order.
NB_API nbStatus nb_hash_visit_pairs(const nbHash *hash, double radius, nbHitPairFn *visit,
                                    void *user);

/// Cross pairs between two sets chosen by mask (bullets against enemies): every (a, b) with
/// `cat[a] & mask_a`, `cat[b] & mask_b`, a != b and distance <= radius, each once, roles kept.
/// An item in both sets meets the others in both roles. An item whose own mask is 0 matches
/// nothing, as everywhere; otherwise the items' masks are not consulted: the two masks say who
/// meets whom. Same buffer contract and statuses as nb_hash_pairs. Cost: a radius search per
/// item of set A.
NB_API nbStatus nb_hash_cross_pairs(const nbHash *hash, double radius, uint32_t mask_a,
                                    uint32_t mask_b, nbHitPair *out, int64_t capacity,
                                    int64_t *found);
/// Counts the pairs nb_hash_cross_pairs would report. Same statuses.
NB_API nbStatus nb_hash_count_cross_pairs(const nbHash *hash, double radius, uint32_t mask_a,
                                          uint32_t mask_b, int64_t *count);
/// Calls `visit` for each pair nb_hash_cross_pairs would report, in the same order.
NB_API nbStatus nb_hash_visit_cross_pairs(const nbHash *hash, double radius, uint32_t mask_a,
                                          uint32_t mask_b, nbHitPairFn *visit, void *user);

/// Checks every invariant (handles, cells, the cell table, item positions, the storage's
/// accounting). NB_OK or NB_ERR_INTERNAL; NB_ERR_NULL_ARG for NULL. O(items + cells + slots).
NB_API nbStatus nb_hash_validate(const nbHash *hash);

#ifdef __cplusplus
}
#endif

#endif
