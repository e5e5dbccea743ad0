// SPDX-License-Identifier: MIT
/// The tile grid: a bounded game world cut into tiles, each holding its moving entities by group
/// and its static waypoints, so that "enemies near me" or "the nearest waypoint" looks only at
/// the tiles around the asker.
///
/// World. A rectangle on two axes: origin and size per axis, cut into a number of tiles per axis
/// (or tiles of a chosen edge; they need not be square). 2D worlds tile x and y; 3D worlds tile
/// two chosen axes (x and z by default, as top-down games do) and test distances in full 3D.
/// A position's tile is floor((p - origin) * (1 / edge)) per tiled axis, clamped to the world: a
/// position outside the world lives in the nearest edge (or corner) tile, so the edge tiles
/// reach out to infinity. Every query stays exact for such positions (askers and entities
/// alike). The searches bound what they visit by the world's box and, per side, the box of the
/// entities (waypoints) beyond it, so an asker far outside, on a diagonal too, visits only the
/// tiles near it; entities outside cost a little more, since an edge tile holds all of its
/// outside.
///
/// Entities. Up to 32 groups, fixed at create (teams, kinds). An entity's group is its category
/// bit: its nbFilter's category has exactly that one bit (group g: 1u << g), and its mask says
/// which groups it wants to find (NB_FILTER_ALL's mask for all). Each tile keeps its entities per
/// group in a contiguous block (coordinates inline), so a query visits only the blocks of the
/// groups in its filter's mask of the nearby tiles. Insert returns a handle; move and remove
/// take it, in O(1): a remove fills the hole with the block's last entity; a move inside its
/// tile rewrites the coordinates and touches nothing else. Once capacity suffices
/// (nb_tiles_reserve), and the entities have spread over the world, nothing allocates: blocks
/// emptied by moves are reused.
///
/// Waypoints. Static points with your 64-bit id, added once (one at a time or in a batch) and
/// stored per tile in one compact array (count, prefix sum, scatter): never rebuilt per frame.
/// A waypoint result is an nbHit whose handle is null and whose user value is the id.
///
/// Filters follow nearby.h's rule: an entity e matches a query's filter f when
/// `(f.category & e.mask) && (e.category & f.mask)`; NB_FILTER_ALL finds every entity whose mask
/// is not 0. While every entity's mask is all ones, the groups alone decide and the masks are
/// never read.
///
/// Exactness: a point is within r of another when dx*dx + dy*dy (+ dz*dz) <= r*r in double.
/// Tiles only prune. kNN queries search rings of tiles outward and stop once no unvisited
/// tile can hold anything closer: exact, also from outside the world.
///
/// Order of results (deterministic: the same calls give the same results in the same order):
/// radius queries and pairs by tile (row-major over the tiled axes, the first axis fastest),
/// then group, then position in the tile's block; waypoints by tile, then in the order added.
/// kNN: nearest first, equal distances by the lower slot (the entity inserted first on
/// a fresh grid), or for waypoints by the order added.
///
/// Thread safety: queries take a const grid and keep no scratch in it, so any number of threads
/// may query at once. Everything that changes the grid needs exclusive access.
#ifndef NEARBY_TILES_H
#define NEARBY_TILES_H

#include "nearby.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The tile grid. Opaque.
typedef struct nbTiles nbTiles;

/// The most groups a grid can have; group g's bit in a group mask is 1u << g.
#define NB_TILES_MAX_GROUPS 32
/// The most tiles a grid can have (tiles per axis multiplied), and the most tiles times groups.
#define NB_TILES_MAX_TILES (1 << 22)
#define NB_TILES_MAX_TILE_GROUPS (1 << 24)

/// Zero-initialise, then set what you need. Per tiled axis t (0 and 1, in the order of `axes`):
/// the world covers [origin[t], origin[t] + size[t]). Either give tile_count[t] (the edge is then
/// size[t] / tile_count[t]) or tile_size[t] (the count is ceil(size[t] / tile_size[t]) and the
/// world's far side grows to a whole tile); tile_count wins when both are set.
typedef struct nbTilesDesc {
    double origin[2];             ///< the world's low corner on the tiled axes: finite
    double size[2];               ///< the world's extent on the tiled axes: finite and > 0
    int32_t tile_count[2];        ///< tiles per axis, > 0; or 0 to use tile_size
    double tile_size[2];          ///< tile edge per axis (when tile_count is 0): finite, > 0
    int32_t dim;                  ///< 2 or 3; 0 means 2
    int32_t axes[2];              ///< the tiled coordinate axes; {0, 0} means {0, 1} in 2D and
                                  ///< {0, 2} in 3D
    int32_t groups;               ///< entity groups, 1 .. 32; 0 means 1
    int32_t capacity_hint;        ///< entities to reserve for; 0 = grow as needed
    const nbAllocator *allocator; ///< NULL = malloc/free; copied, must outlive the grid
} nbTilesDesc;

/// Creates an empty grid. NB_ERR_NULL_ARG for a NULL desc or out, or an allocator with one hook
/// set; NB_ERR_NOT_FINITE for a NaN or infinite origin, size or (used) tile_size, or an origin +
/// size that overflows; NB_ERR_OUT_OF_RANGE for a size or tile_size <= 0, a negative tile count,
/// dim not 0, 2 or 3, bad or equal axes, groups outside 0 .. 32, a negative capacity_hint or
/// one beyond 2^28, more than NB_TILES_MAX_TILES tiles or NB_TILES_MAX_TILE_GROUPS tiles times
/// groups; NB_ERR_OUT_OF_MEMORY. On error *out is NULL.
NB_API nbStatus nb_tiles_create(const nbTilesDesc *desc, nbTiles **out);

/// Frees the grid and everything it owns. NULL is a no-op. Every handle it issued is dead.
NB_API void nb_tiles_destroy(nbTiles *tiles);

/// Grows storage so that inserting entities until the grid holds `entities` allocates nothing
/// (it sets aside 4 block positions an entity: a crowded tile's block grows by doubling).
/// Moves reuse the blocks tiles give up, so entities wandering the world reach a steady state
/// in which nothing allocates. NB_ERR_OUT_OF_RANGE for a negative count or one beyond 2^28;
/// NB_ERR_OUT_OF_MEMORY leaves the grid unchanged.
NB_API nbStatus nb_tiles_reserve(nbTiles *tiles, int32_t entities);

/// Removes every entity (their handles go stale) and keeps the waypoints and the storage.
NB_API void nb_tiles_clear(nbTiles *tiles);

/// Entities in the grid (0 for NULL).
NB_API int32_t nb_tiles_count(const nbTiles *tiles);
/// Waypoints in the grid (0 for NULL).
NB_API int32_t nb_tiles_waypoint_count(const nbTiles *tiles);
/// Bytes the grid holds, including its struct (0 for NULL).
NB_API size_t nb_tiles_memory_bytes(const nbTiles *tiles);

/// A summary of a grid, from nb_tiles_info.
typedef struct nbTilesInfo {
    int32_t dim;           ///< 2 or 3
    int32_t count;         ///< entities
    int32_t waypoints;     ///< waypoints
    int32_t groups;        ///< entity groups, 1 .. 32
    int32_t tiles;         ///< tile_count[0] * tile_count[1]
    int32_t tile_count[2]; ///< tiles per tiled axis
    double edge[2];        ///< tile edges; the world's far side is origin + tile_count * edge
    int32_t axes[2];       ///< the tiled coordinate axes
    double origin[2];      ///< the world's low corner on the tiled axes
    size_t bytes;          ///< nb_tiles_memory_bytes
} nbTilesInfo;

/// Fills *info. NB_ERR_NULL_ARG for a NULL grid or info.
NB_API nbStatus nb_tiles_info(const nbTiles *tiles, nbTilesInfo *info);

// ---- entities ----

/// Inserts an entity at `pos` (dim doubles) with your user value and filter, and writes its
/// handle. filter.category names its group: exactly one bit, 1u << g for a group g of the grid;
/// filter.mask is what the entity wants to find (NB_FILTER_ALL's mask: every group).
/// NB_ERR_NOT_FINITE for a NaN or infinite coordinate; NB_ERR_OUT_OF_RANGE for a category that
/// is not one bit of an existing group, or a grid already holding 2^28 entities;
/// NB_ERR_OUT_OF_MEMORY. On error *out is null and the grid is unchanged.
NB_API nbStatus nb_tiles_insert(nbTiles *tiles, const double *pos, uint64_t user, nbFilter filter,
                                nbHandle *out);

/// Moves an entity to `pos`. Inside its tile: rewrites its coordinates, nothing else. To
/// another tile: O(1), may allocate when capacity does not suffice. Checks in this order:
/// pointers (NB_ERR_NULL_ARG), the handle (NB_ERR_BAD_HANDLE), finiteness (NB_ERR_NOT_FINITE);
/// then NB_ERR_OUT_OF_MEMORY. On error the grid is unchanged.
NB_API nbStatus nb_tiles_move(nbTiles *tiles, nbHandle entity, const double *pos);

/// Removes an entity; its handle goes stale. O(1), never allocates. NB_ERR_BAD_HANDLE.
NB_API nbStatus nb_tiles_remove(nbTiles *tiles, nbHandle entity);

/// An entity's position (dim doubles), user value and filter (category: its group's bit);
/// any output may be NULL. NB_ERR_BAD_HANDLE leaves the outputs untouched.
NB_API nbStatus nb_tiles_get(const nbTiles *tiles, nbHandle entity, double *pos, uint64_t *user,
                             nbFilter *filter);

/// Changes an entity's user value and filter (a unit that changes sides: a new category moves
/// it to that group's block). May allocate when the group changes. NB_ERR_BAD_HANDLE, then
/// NB_ERR_OUT_OF_RANGE for a category as nb_tiles_insert refuses, then NB_ERR_OUT_OF_MEMORY; on
/// error the grid is unchanged.
NB_API nbStatus nb_tiles_set(nbTiles *tiles, nbHandle entity, uint64_t user, nbFilter filter);

// ---- tiles ----

/// The tile of a position (clamped to the world), numbered row-major: tx + count[0] * ty.
/// NB_ERR_NOT_FINITE; *tile = -1 on error.
NB_API nbStatus nb_tiles_tile_of(const nbTiles *tiles, const double *pos, int32_t *tile);

/// The tiles within `rings` rings of `tile`, clipped at the world's edges, the tile itself
/// included, in row-major order: rings 1 gives 9 tiles inside, 6 on an edge, 4 in a corner.
/// Writes up to `capacity` tile numbers and the total to *found (NB_ERR_BUFFER_TOO_SMALL when
/// it exceeds capacity). NB_ERR_OUT_OF_RANGE for a tile outside 0 .. tiles - 1 or a negative
/// rings or capacity. Does not allocate.
NB_API nbStatus nb_tiles_neighbor_tiles(const nbTiles *tiles, int32_t tile, int32_t rings,
                                        int32_t *out, int32_t capacity, int32_t *found);

/// The same tiles, in the same order, each to `visit` (its index argument the tile number)
/// until it returns false. NB_ERR_NULL_ARG for a NULL visit.
NB_API nbStatus nb_tiles_visit_neighbor_tiles(const nbTiles *tiles, int32_t tile, int32_t rings,
                                              nbVisitFn *visit, void *user);

/// The same, with rings per axis for a radius: k[t] = ceil(radius / edge[t]) (0 for radius 0),
/// so that the result covers every point within `radius` of any point of the tile's box.
/// NB_ERR_NOT_FINITE for a NaN or infinite radius, NB_ERR_OUT_OF_RANGE for a negative one.
NB_API nbStatus nb_tiles_neighbor_tiles_radius(const nbTiles *tiles, int32_t tile, double radius,
                                               int32_t *out, int32_t capacity, int32_t *found);

/// nb_tiles_neighbor_tiles_radius's tiles, each to `visit` until it returns false.
NB_API nbStatus nb_tiles_visit_neighbor_tiles_radius(const nbTiles *tiles, int32_t tile,
                                                     double radius, nbVisitFn *visit, void *user);

/// Calls `visit` for every entity stored in `tile` that passes `filter`, group by group, until
/// it returns false. NB_ERR_OUT_OF_RANGE for a bad tile.
NB_API nbStatus nb_tiles_visit_tile(const nbTiles *tiles, int32_t tile, nbFilter filter,
                                    nbHitFn *visit, void *user);

// ---- entity queries ----

/// Entities within `radius` of `center` that pass `filter`. Writes up to `capacity` hits to
/// `out` and the total to *found; if the total exceeds capacity, returns
/// NB_ERR_BUFFER_TOO_SMALL with `out` holding the first `capacity` (`out` may be NULL when
/// capacity is 0). NB_ERR_NOT_FINITE for a NaN or infinite center or radius;
/// NB_ERR_OUT_OF_RANGE for a negative radius or capacity. Does not allocate.
NB_API nbStatus nb_tiles_query_radius(const nbTiles *tiles, const double *center, double radius,
                                      nbFilter filter, nbHit *out, int32_t capacity,
                                      int32_t *found);
/// The callback form of nb_tiles_query_radius.
NB_API nbStatus nb_tiles_visit_radius(const nbTiles *tiles, const double *center, double radius,
                                      nbFilter filter, nbHitFn *visit, void *user);

/// The entities within `radius` of a stored entity, the entity itself left out, that pass
/// `filter`. Same contract as nb_tiles_query_radius, plus NB_ERR_BAD_HANDLE. Checks in this
/// order: pointers (NB_ERR_NULL_ARG), the handle, then finiteness, then range.
NB_API nbStatus nb_tiles_query_neighbors(const nbTiles *tiles, nbHandle entity, double radius,
                                         nbFilter filter, nbHit *out, int32_t capacity,
                                         int32_t *found);
/// The callback form of nb_tiles_query_neighbors, with the same order of checks.
NB_API nbStatus nb_tiles_visit_neighbors(const nbTiles *tiles, nbHandle entity, double radius,
                                         nbFilter filter, nbHitFn *visit, void *user);

/// The k entities nearest to `point` that pass `filter` and lie within max_distance of it
/// (d2 <= max_distance^2; INFINITY for no limit), nearest first (equal distances by lower
/// slot). `out` holds k entries; *found = min(k, entities that qualify). NB_ERR_NOT_FINITE for
/// a NaN or infinite point or a NaN max_distance; NB_ERR_OUT_OF_RANGE for a negative
/// max_distance or k. Does not allocate. The nearest other entity than a stored one (the
/// asker): k = 2 from its position, skipping its own handle in the answer.
NB_API nbStatus nb_tiles_knn(const nbTiles *tiles, const double *point, nbFilter filter,
                             double max_distance, nbHitNeighbor *out, int32_t k, int32_t *found);
/// The callback form of nb_tiles_knn: the same neighbours in the same order, each handed to
/// `visit`. The search keeps its k best on the stack up to NB_KNN_STACK and in memory from the
/// grid's allocator above that (NB_ERR_OUT_OF_MEMORY if it fails).
NB_API nbStatus nb_tiles_visit_knn(const nbTiles *tiles, const double *point, nbFilter filter,
                                   double max_distance, int32_t k, nbHitNeighborFn *visit,
                                   void *user);

/// Every unordered pair of entities within `radius` that pass the pair rule
/// `(cat[a] & mask[b]) && (cat[b] & mask[a])` (cat: the group's bit), each once, `a` the entity
/// in the lower slot. Same buffer contract as nb_tiles_query_radius with 64-bit counts;
/// NB_ERR_NOT_FINITE; NB_ERR_OUT_OF_RANGE for a negative radius or capacity. Cost: a radius
/// search per entity. Does not allocate.
NB_API nbStatus nb_tiles_pairs(const nbTiles *tiles, double radius, nbHitPair *out,
                               int64_t capacity, int64_t *found);
/// Counts the pairs nb_tiles_pairs would report. Same statuses.
NB_API nbStatus nb_tiles_count_pairs(const nbTiles *tiles, double radius, int64_t *count);
/// Calls `visit` for each pair nb_tiles_pairs would report, in the same order.
NB_API nbStatus nb_tiles_visit_pairs(const nbTiles *tiles, double radius, nbHitPairFn *visit,
                                     void *user);

/// Cross pairs between two sets chosen by mask (bullets against enemies): every (a, b) with
/// `cat[a] & mask_a`, `cat[b] & mask_b` (that is: a of a group in mask_a, b of a group in
/// mask_b), a != b and distance <= radius, each once, roles kept. An entity in both sets meets
/// the others in both roles. An entity whose own mask is 0 matches nothing, as everywhere;
/// otherwise the entities' masks are not consulted. Same buffer contract and statuses as
/// nb_tiles_pairs. Cost: a radius search per entity of set A.
NB_API nbStatus nb_tiles_cross_pairs(const nbTiles *tiles, double radius, uint32_t mask_a,
                                     uint32_t mask_b, nbHitPair *out, int64_t capacity,
                                     int64_t *found);
/// Counts the pairs nb_tiles_cross_pairs would report. Same statuses.
NB_API nbStatus nb_tiles_count_cross_pairs(const nbTiles *tiles, double radius, uint32_t mask_a,
                                           uint32_t mask_b, int64_t *count);
/// Calls `visit` for each pair nb_tiles_cross_pairs would report, in the same order.
NB_API nbStatus nb_tiles_visit_cross_pairs(const nbTiles *tiles, double radius, uint32_t mask_a,
                                           uint32_t mask_b, nbHitPairFn *visit, void *user);

// ---- waypoints ----

/// Adds `count` waypoints (positions: count * dim doubles) with their ids (NULL: each gets its
/// number, the count of waypoints added before it). All or nothing: NB_ERR_NOT_FINITE for a NaN
/// or infinite coordinate anywhere, NB_ERR_OUT_OF_RANGE for a negative count or a total beyond
/// 2^28, NB_ERR_OUT_OF_MEMORY leave the waypoints as they were. Rebuilds the compact per-tile
/// array once per call: O(waypoints + tiles), so add many at once.
NB_API nbStatus nb_tiles_add_waypoints(nbTiles *tiles, const double *pos, const uint64_t *ids,
                                       int32_t count);
/// Adds one waypoint: nb_tiles_add_waypoints with count 1.
NB_API nbStatus nb_tiles_add_waypoint(nbTiles *tiles, const double *pos, uint64_t id);
/// Removes every waypoint and keeps the storage.
NB_API void nb_tiles_clear_waypoints(nbTiles *tiles);

/// Waypoints within `radius` of `center`, as hits with a null handle and user = id. Same contract
/// as nb_tiles_query_radius.
NB_API nbStatus nb_tiles_query_waypoints(const nbTiles *tiles, const double *center, double radius,
                                         nbHit *out, int32_t capacity, int32_t *found);
/// The callback form of nb_tiles_query_waypoints.
NB_API nbStatus nb_tiles_visit_waypoints(const nbTiles *tiles, const double *center, double radius,
                                         nbHitFn *visit, void *user);
/// The k waypoints nearest to `point` within max_distance (INFINITY for no limit), nearest
/// first (equal distances in the order added), as hits with a null handle and user = id. Same
/// contract as nb_tiles_knn.
NB_API nbStatus nb_tiles_knn_waypoints(const nbTiles *tiles, const double *point,
                                       double max_distance, nbHitNeighbor *out, int32_t k,
                                       int32_t *found);
/// The callback form of nb_tiles_knn_waypoints, as nb_tiles_visit_knn.
NB_API nbStatus nb_tiles_visit_knn_waypoints(const nbTiles *tiles, const double *point,
                                             double max_distance, int32_t k, nbHitNeighborFn *visit,
                                             void *user);

/// Checks every invariant (handles, blocks, tiles of every entity, the arena's accounting, the
/// waypoint array). NB_OK or NB_ERR_INTERNAL; NB_ERR_NULL_ARG for NULL. O(entities + tiles).
NB_API nbStatus nb_tiles_validate(const nbTiles *tiles);

#ifdef __cplusplus
}
#endif

#endif
