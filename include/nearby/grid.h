// SPDX-License-Identifier: MIT
/// The dense grid: a uniform grid rebuilt from the caller's points with a counting sort
/// (count, exclusive prefix sum, scatter). Rebuild it every frame; once its capacity suffices,
/// building and every query run without allocating.
///
/// Exactness: a point is within r of another when dx*dx + dy*dy (+ dz*dz) <= r*r in double,
/// computed from the coordinates the caller passed. Cells only prune candidates; any cell size
/// and any query radius give exactly the brute-force answer.
///
/// Thread safety: queries take a const grid and keep no scratch in it, so any number of threads
/// may query one grid at once. Building or destroying needs exclusive access.
#ifndef NEARBY_GRID_H
#define NEARBY_GRID_H

#include "nearby.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Uniform grid rebuilt from scratch each frame. Opaque.
typedef struct nbGrid nbGrid;

/// Zero-initialise, then set what you need; zero means "default" for every field.
typedef struct nbGridDesc {
    double cell_size;             ///< finite and >= 0; 0 = the radius passed to nb_grid_build
                                  ///< (a cell of r / k is nudged up by 2^-30 to save a ring)
    int32_t dim;                  ///< 2 or 3; 0 means 2
    int32_t capacity_hint;        ///< points to reserve for; 0 = grow on the first build
    const nbAllocator *allocator; ///< NULL = malloc/free; copied, must outlive the grid
    /// NULL = serial. Your scheduler (copied; its `user` must outlive the grid): builds of the
    /// dense and ranked layouts and nb_grid_pairs / nb_grid_count_pairs then run on your workers,
    /// with results identical, bit for bit and in order, to the serial ones. Small inputs run
    /// serially. The hashed layout's build and the other calls stay serial (split
    /// nb_grid_visit_pairs_range yourself to visit in parallel).
    const nbTasks *tasks;
    double period[3]; ///< per axis, the period P of a periodic box [0, P) (as
                      ///< cKDTree's boxsize); 0 = not periodic. See "periodic
                      ///< boxes" below. Unused axes (z in 2D) must be 0.
} nbGridDesc;

/// What a grid holds, for inspection and tuning. Filled by nb_grid_info().
typedef struct nbGridInfo {
    int32_t dim;      ///< 2 or 3
    int32_t points;   ///< points in the last successful build (0 before any)
    int64_t cells;    ///< cells indexed: the box's cells (dense) or the occupied cells (hashed)
    bool hashed;      ///< true when only the occupied cells are indexed, not the whole box
    bool ranked;      ///< hashed through a bitmap of the box's cells (a box of up to 64 cells a
                      ///< point) rather than a hash table (larger boxes: far-flung data)
    double cell_size; ///< the cell edge actually used (see nb_grid_build); on a periodic axis
                      ///< the edge is P / m instead (see "periodic boxes")
    size_t bytes;     ///< bytes held, as nb_grid_memory_bytes() reports
} nbGridInfo;

/// Creates an empty grid. Returns NB_ERR_NOT_FINITE for a NaN or infinite cell_size or period,
/// NB_ERR_OUT_OF_RANGE for a negative cell_size or period, a period on an axis the dim does not
/// have, a dim other than 0, 2 or 3, or a negative capacity_hint, NB_ERR_OUT_OF_MEMORY if the
/// allocator fails. On error *out is NULL.
NB_API nbStatus nb_grid_create(const nbGridDesc *desc, nbGrid **out);

/// Frees the grid and everything it owns. NULL is a no-op.
NB_API void nb_grid_destroy(nbGrid *grid);

/// Grows storage so that builds of up to `points` points allocate nothing.
/// NB_ERR_OUT_OF_RANGE for a negative count; NB_ERR_OUT_OF_MEMORY leaves the grid unchanged.
NB_API nbStatus nb_grid_reserve(nbGrid *grid, int32_t points);

/// Replaces the grid's contents with `points` (copied; the view is not kept).
///
/// `radius` is the query radius the grid is tuned for: when the desc's cell_size is 0 the cell
/// edge is this radius, widened by the rounding margin (a few ulps of the radius and of the
/// largest |coordinate|) so that a query at this radius needs only the 3^d neighbouring cells.
/// Queries at any other radius stay exact. radius may be 0.
///
/// When the points' bounding box would need more than about 4 cells per point (sparse or
/// clustered data, or a tiny radius), only the occupied cells are indexed, so memory stays
/// O(points), never O(area): found by rank in a bitmap of the box while it has at most 64 cells
/// a point (12 bytes a point at most), or hashed into a power-of-two table of about 2N slots
/// beyond that (far-flung data).
///
/// Categories and masks passed in `points` (see nbPoints) are copied too; all-pairs calls then
/// apply the filter rule (see the filters section below).
///
/// Checks every coordinate in the same pass that reads it. NB_ERR_NOT_FINITE for a NaN or
/// infinite coordinate or radius (checked before any range); NB_ERR_OUT_OF_RANGE for a negative
/// radius or count, a dim that is not the grid's, a stride smaller than dim doubles or not a
/// multiple of sizeof(double), a category or mask stride that is not a multiple of 4 or a
/// misaligned category or mask array, or a cell number beyond +-2^62;
/// NB_ERR_OUT_OF_MEMORY. On any error the grid keeps its previous contents.
/// Allocates only when this build needs more room than every earlier build and reserve: more
/// points, more dense cells, the first hashed or ranked layout or the first build with
/// categories/masks.
/// nb_grid_reserve(max_points) covers every layout (and the filter bits once the grid has had
/// them), after which no build of up to max_points points allocates. A growth that is refused
/// at the geometric size is retried at the exact size. O(N + cells).
NB_API nbStatus nb_grid_build(nbGrid *grid, const nbPoints *points, double radius);

/// Number of points in the grid.
NB_API int32_t nb_grid_count(const nbGrid *grid);

/// Fills *info. NB_ERR_NULL_ARG if either pointer is NULL.
NB_API nbStatus nb_grid_info(const nbGrid *grid, nbGridInfo *info);

/// Bytes the grid holds, including its struct. 0 for NULL.
NB_API size_t nb_grid_memory_bytes(const nbGrid *grid);

/// All unordered pairs (i, j), i < j, with distance <= radius, each exactly once, written to
/// `out` in a deterministic order (by cell, then by position). Does not allocate.
/// *found receives the total number of pairs. If it exceeds `capacity`, returns
/// NB_ERR_BUFFER_TOO_SMALL and `out` holds the first `capacity` pairs: grow and call again.
/// NB_ERR_NOT_FINITE / NB_ERR_OUT_OF_RANGE for a NaN, infinite or negative radius or a
/// negative capacity. Cost O(N + cells + candidates). On a hashed grid with a cell table (sparse
/// data, `ranked` false) a radius spanning so many cells that the search would take more than
/// 64 N + 2^26 cell steps returns NB_ERR_OUT_OF_RANGE at once; rebuild with a cell size near
/// the radius.
NB_API nbStatus nb_grid_pairs(const nbGrid *grid, double radius, nbPair *out, int64_t capacity,
                              int64_t *found);

/// nb_grid_pairs with 64-bit indices: the same pairs in the same order, pair k written as
/// out[2k] = i, out[2k + 1] = j (an (K, 2) int64 array: numpy's intp, a Fortran or Julia
/// Int64 matrix by rows), with no 32-bit buffer and no widening pass of the caller's.
/// `capacity` counts pairs (out holds 2 * capacity int64). The same buffer contract and
/// statuses: *found the total, NB_ERR_BUFFER_TOO_SMALL with the first `capacity` pairs written
/// when it exceeds `capacity`. Does not allocate. Serially, rows after the first 32768 are
/// written with streaming stores (x86 SSE2), which skip reading each line into the cache before
/// writing it: a large output costs half the memory traffic, and is not in the cache afterwards.
/// On the grid's scheduler (nbGridDesc.tasks) the workers write 32-bit pairs into out, widened in
/// place afterwards.
NB_API nbStatus nb_grid_pairs_wide(const nbGrid *grid, double radius, int64_t *out,
                                   int64_t capacity, int64_t *found);

/// Counts the pairs nb_grid_pairs would report, without writing them. Same statuses, but for one:
/// at a radius spanning many points, or more than two cells of a hashed grid (unfiltered, not
/// periodic), it counts whole boxes of points at once (exact; scratch memory from the grid's
/// allocator, the pair walk if that fails), so it answers where the walk would refuse a radius
/// of too many cell steps.
NB_API nbStatus nb_grid_count_pairs(const nbGrid *grid, double radius, int64_t *count);

/// Calls `visit` for each pair nb_grid_pairs would report, in the same order, until it returns
/// false. Does not allocate. Same statuses; on an error `visit` is never called.
NB_API nbStatus nb_grid_visit_pairs(const nbGrid *grid, double radius, nbPairFn *visit, void *user);

/// Number of work units for nb_grid_visit_pairs_range: split [0, units) among your threads.
/// Each pair belongs to exactly one unit. 0 for an empty or NULL grid.
NB_API int32_t nb_grid_pair_units(const nbGrid *grid);

/// nb_grid_visit_pairs restricted to units [unit_begin, unit_end), for the caller's own task
/// system: the union over a partition of [0, nb_grid_pair_units()) is every pair once.
/// NB_ERR_OUT_OF_RANGE if the range is not within [0, units].
NB_API nbStatus nb_grid_visit_pairs_range(const nbGrid *grid, double radius, int32_t unit_begin,
                                          int32_t unit_end, nbPairFn *visit, void *user);

/// ---- queries ----
/// Every query takes a filter after its geometry. Categories and masks come with the points
/// (nbPoints.category / .mask); the grid keeps a copy in cell order. A stored point p is a
/// candidate only when `(cat[p] & filter.mask) && (filter.category & mask[p])`; NB_FILTER_ALL
/// accepts every point whose mask is not 0 (every point of a build without filter bits).
/// All-pairs calls (nb_grid_pairs, count_pairs, visit_pairs, visit_pairs_range) report a pair
/// (i, j) only when `(cat[i] & mask[j]) && (cat[j] & mask[i])`. A build without them filters
/// nothing and stores nothing extra.

/// Indices of points with distance <= radius from `center` (dim doubles, anywhere, inside or
/// outside the data) that pass `filter`, in a deterministic order (by cell, then ascending index
/// within a cell). Writes up to `capacity` indices to `out` and the total to *found; if *found >
/// capacity, returns NB_ERR_BUFFER_TOO_SMALL and `out` holds the first `capacity`. Entries of
/// `out` past the hits may be overwritten (the test writes without a branch). Does not
/// allocate. NB_ERR_NOT_FINITE for a NaN/infinite center or radius; NB_ERR_OUT_OF_RANGE for a
/// negative radius or capacity. Cost O(cells covered + candidates), never more than O(N +
/// cells).
NB_API nbStatus nb_grid_query_radius(const nbGrid *grid, const double *center, double radius,
                                     nbFilter filter, int32_t *out, int32_t capacity,
                                     int32_t *found);

/// Calls `visit` for each point nb_grid_query_radius would report, in the same order, until it
/// returns false.
NB_API nbStatus nb_grid_visit_radius(const nbGrid *grid, const double *center, double radius,
                                     nbFilter filter, nbVisitFn *visit, void *user);

/// Indices of points p inside `box` (box->min[d] <= p[d] <= box->max[d] on every axis, bounds
/// inclusive) that pass `filter`, in the same order and with the same buffer contract as
/// nb_grid_query_radius. An empty box (some min[d] > max[d]) finds nothing. NB_ERR_NOT_FINITE
/// for a NaN bound (infinite bounds are allowed and mean "unbounded"); NB_ERR_OUT_OF_RANGE for
/// a negative capacity.
NB_API nbStatus nb_grid_query_box(const nbGrid *grid, const nbBox *box, nbFilter filter,
                                  int32_t *out, int32_t capacity, int32_t *found);

/// Calls `visit` for each point nb_grid_query_box would report, until it returns false.
NB_API nbStatus nb_grid_visit_box(const nbGrid *grid, const nbBox *box, nbFilter filter,
                                  nbVisitFn *visit, void *user);

/// The k points nearest to `point` that pass `filter` and lie within max_distance of it (d2 <=
/// max_distance^2; INFINITY for no limit), nearest first; equal distances are ordered by the
/// lower index. `out` must hold k entries and doubles as the search's store of the k best so
/// far (no allocation but the index's, below). *found = min(k, points that qualify). k = 0 finds
/// nothing. NB_ERR_NOT_FINITE for a NaN/infinite point or a NaN max_distance; NB_ERR_OUT_OF_RANGE
/// for a negative k or max_distance. Where the cells do not suit the data's density (clustered,
/// surface or far-flung points; 2D cells whose occupancy varies; any 3D grid) and k >= 2, the first
/// kNN after a build sorts the points into a tree of boxes whose leaves follow the density (O(N),
/// about a build's time; kept until the next build or reserve) and every later query searches it,
/// so a query costs about k and the local density. That first query allocates the tree through the
/// grid's allocator, on whichever thread runs it (concurrent queries meanwhile search the cells),
/// and again only when the points outgrow it; if that allocation fails, queries search the cells.
/// Elsewhere (k = 1, periodic grids) it searches outward ring by ring (or, on the hashed layout,
/// by aligned blocks of cells), stopping once what is left lies beyond the k-th best or
/// max_distance. On evenly filled 2D cells, and 2D cells crowded by duplicates, the rings answer
/// the first N / 16 queries with k >= 2 after a build, and the query after them builds the tree
/// for the rest: a few queries do not pay for it, a batch (the k nearest of every point) does.
/// The answers are the same either way.
NB_API nbStatus nb_grid_knn(const nbGrid *grid, const double *point, nbFilter filter,
                            double max_distance, nbNeighbor *out, int32_t k, int32_t *found);

/// The callback form of nb_grid_knn: the same neighbours in the same order, each handed to
/// `visit` with its squared distance. The search keeps its k best on the stack up to
/// NB_KNN_STACK and in memory from the grid's allocator above that (NB_ERR_OUT_OF_MEMORY if
/// that fails, after the other checks).
NB_API nbStatus nb_grid_visit_knn(const nbGrid *grid, const double *point, nbFilter filter,
                                  double max_distance, int32_t k, nbNeighborFn *visit, void *user);

/// The k nearest of each of many query points at once: row q of `out` (out + q * k, k entries)
/// gets what nb_grid_knn(grid, query q, filter, max_distance, row, k, &found[q]) would write,
/// the same neighbours in the same order (nearest first, equal distances by the lower index),
/// and found[q] their count (min(k, points that qualify)). `queries` is a view of m points (dim
/// doubles each, read during the call only; their category and mask arrays are ignored), or
/// NULL for the grid's own points as given to the last build (m = nb_grid_count(grid), query i
/// is point i: the k nearest of every point, itself included). `out` holds m * k entries and
/// `found` m; entries of a row past its found[q] may be overwritten.
/// The queries are grouped by the cell they lie in; each group's candidate cells are gathered
/// once, its queries' distances to them computed in one vectorised loop, and each answer is
/// certified by the distance to the cells not gathered, the one-query search answering the
/// queries that do not certify, crowded cells and queries outside the occupied cells (periodic
/// grids: by the minimum image). A kNN of every point costs about a third of the one-query calls
/// on evenly spread points (see docs/grid.md, "many queries at once").
/// Allocates its scratch (a few hundred kilobytes, plus 8 bytes a query and 4 a cell for a view
/// of queries) through the grid's allocator, and the kNN index as nb_grid_knn does: freed before
/// it returns. Checks, in order: NB_ERR_NULL_ARG (grid or found NULL, out NULL with k > 0, a
/// view whose data is NULL with points), then NB_ERR_NOT_FINITE for a NaN or infinite query
/// coordinate (any query) or a NaN max_distance, then NB_ERR_OUT_OF_RANGE for a negative count,
/// k or max_distance, a dim that is not the grid's, a stride smaller than dim doubles or not a
/// multiple of sizeof(double), or a query outside [0, P) on a periodic axis; then
/// NB_ERR_OUT_OF_MEMORY. On any error found[] is all 0 (when the count is known) and `out` is
/// untouched. Thread-safe as nb_grid_knn is: any number of threads may call it on one grid. On
/// the grid's scheduler (nbGridDesc.tasks, up to 64 workers), 4096 queries and more run on its
/// workers (chunks of cells, a scratch block a worker: the answers are the same).
NB_API nbStatus nb_grid_knn_many(const nbGrid *grid, const nbPoints *queries, nbFilter filter,
                                 double max_distance, nbNeighbor *out, int32_t k, int32_t *found);

/// The k points nearest to `point` in the L_p norm, 1 <= p <= INFINITY (cKDTree's Minkowski p:
/// 1 Manhattan, INFINITY Chebyshev), that pass `filter` and lie within max_distance (in that
/// norm, inclusive), nearest first, equal distances by the lower index, as nb_grid_knn. Each
/// out[j].dist2 holds the distance raw, as a brute-force loop compares it: sum |d_a|^p over the
/// axes in order (|d_a| for p = 1, d_a * d_a for p = 2, where this is nb_grid_knn), max |d_a|
/// for p = INFINITY; the distance is its p-th root. The search is nb_grid_knn's with the norm's
/// bounds: the kNN index where the grid has one, else the cells ring by ring (on a periodic grid
/// by the minimum image, the rings wrapping). NB_ERR_NOT_FINITE for a NaN/infinite point, a NaN p
/// or max_distance; NB_ERR_OUT_OF_RANGE for p < 1, a negative k or max_distance, or a point outside
/// a periodic axis's [0, P). No allocation but the index's (see nb_grid_knn).
NB_API nbStatus nb_grid_knn_norm(const nbGrid *grid, const double *point, double p, nbFilter filter,
                                 double max_distance, nbNeighbor *out, int32_t k, int32_t *found);

/// ---- cross pairs: set A against set B ----
/// Every pair (i, j) with point i of grid `a`, point j of grid `b` and distance <= radius, each
/// exactly once, roles kept: i indexes a's points and j indexes b's (bullets against enemies).
/// When both grids carry categories/masks the pair rule applies across them. The grids may have
/// different cell sizes and layouts, but the same dim (else NB_ERR_OUT_OF_RANGE). Passing the
/// same grid twice is allowed and treats it as two sets: every ordered (i, j), (i, i) included.
/// Order: deterministic (by a's cells, then a's position, then b's cells). Does not allocate.
/// Same buffer contract and radius statuses as nb_grid_pairs. Cost O(cells of a + candidates);
/// a radius covering more than 64 (Na + Nb) + 2^26 cell steps returns NB_ERR_OUT_OF_RANGE.
NB_API nbStatus nb_grid_cross_pairs(const nbGrid *a, const nbGrid *b, double radius, nbPair *out,
                                    int64_t capacity, int64_t *found);
/// Counts the pairs nb_grid_cross_pairs would report. Same statuses, and the same exception
/// as nb_grid_count_pairs: boxes of points counted at once at a radius spanning many.
NB_API nbStatus nb_grid_count_cross_pairs(const nbGrid *a, const nbGrid *b, double radius,
                                          int64_t *count);
/// Calls `visit` for each pair nb_grid_cross_pairs would report, in the same order, until it
/// returns false. Same statuses; on an error `visit` is never called.
NB_API nbStatus nb_grid_visit_cross_pairs(const nbGrid *a, const nbGrid *b, double radius,
                                          nbPairFn *visit, void *user);

/// ---- pairs counted at many radii (a two-point correlation) ----
/// The pairs within each of `nradii` radii (finite, >= 0, non-decreasing), in one walk however
/// many radii there are: counts[k] is the number of pairs with distance <= radii[k]
/// (cumulative), or with radii[k - 1] < distance <= radii[k] (not cumulative; the first: <=
/// radii[0]). The distance is the L_p norm, 1 <= p <= INFINITY, compared raw as a brute-force
/// loop compares it: d2 <= r*r for p = 2 (as nb_grid_count_pairs), sum |d_a| <= r for p = 1,
/// max |d_a| <= r for INFINITY, sum pow(|d_a|, p) <= pow(r, p) otherwise, over the axes in order.
/// On a periodic grid each |d_a| is the minimum image (see "periodic boxes"), at any radius:
/// every pair counts once, by its nearest image. Pairs follow the filter rule, as
/// nb_grid_count_pairs. The walk is a dual walk over kd-trees of the points' boxes: a pair of
/// boxes whose every pair of points falls between the same two consecutive radii is counted
/// at once, so the cost is about the pairs near the radii's shells' edges, not all the pairs
/// within the largest radius (unless the grid has filter bits, which each pair is tested
/// against). Allocates O(N) scratch (two trees for the cross forms) through the grid's
/// allocator: NB_ERR_OUT_OF_MEMORY. NB_ERR_NOT_FINITE for a NaN or infinite radius or weight or
/// a NaN p; NB_ERR_OUT_OF_RANGE for a negative nradii, p < 1, a negative radius or radii that
/// decrease. counts is zeroed first (its nradii entries, for nradii >= 0). Thread-safe on a grid
/// no one is building.
/// The unordered pairs (i, j), i < j, of one grid.
NB_API nbStatus nb_grid_count_pairs_radii(const nbGrid *grid, const double *radii, int32_t nradii,
                                          double p, bool cumulative, int64_t *counts);
/// Every (i of a, j of b), as nb_grid_cross_pairs (the same grid twice: every ordered pair, (i, i)
/// included). Also NB_ERR_OUT_OF_RANGE for grids of different dims or periods.
NB_API nbStatus nb_grid_count_cross_pairs_radii(const nbGrid *a, const nbGrid *b,
                                                const double *radii, int32_t nradii, double p,
                                                bool cumulative, int64_t *counts);
/// nb_grid_count_pairs_radii with weights: sums[k] adds weights[i] * weights[j] for each pair
/// instead of 1 (weights by input index, one per point; NULL: 1 each). Sums whole boxes at once
/// (a box's weights summed, then multiplied), so the rounding differs from a pair-by-pair sum.
NB_API nbStatus nb_grid_sum_pairs_radii(const nbGrid *grid, const double *weights,
                                        const double *radii, int32_t nradii, double p,
                                        bool cumulative, double *sums);
/// nb_grid_count_cross_pairs_radii with weights: weights_a[i] * weights_b[j] for each pair
/// (either may be NULL: 1 each).
NB_API nbStatus nb_grid_sum_cross_pairs_radii(const nbGrid *a, const nbGrid *b,
                                              const double *weights_a, const double *weights_b,
                                              const double *radii, int32_t nradii, double p,
                                              bool cumulative, double *sums);

/// ---- periodic boxes ----
/// With desc.period[a] = P > 0, axis a wraps: the box is [0, P) on that axis, and every query
/// measures distances by the minimum image, defined exactly as
///     a = |xi - xj|,  d = min(a, P - a)   (in double; d = a on an axis that does not wrap)
///     d2 = d0*d0 + d1*d1 (+ d2*d2), summed in axis order; within r when d2 <= r*r.
/// Builds refuse (NB_ERR_OUT_OF_RANGE, grid unchanged) a point outside [0, P) on a periodic
/// axis (wrap your points first, e.g. x - P * floor(x / P), then check x < P) and a build
/// radius r > P / 2, as cKDTree(boxsize=...) does.
/// Pairs (all pairs, count, visit, ranges), radius queries: NB_ERR_OUT_OF_RANGE for r > P / 2
/// on any periodic axis (the minimum image cannot answer it: a point would meet two images of
/// another). r == P / 2 is answered. Radius, box and kNN queries: NB_ERR_OUT_OF_RANGE for a
/// query point outside [0, P) on a periodic axis.
/// Box queries: on a periodic axis, a box [lo, hi] with hi - lo >= P (or an infinite bound)
/// spans the whole axis; otherwise it needs -P <= lo and hi < 2 P (else NB_ERR_OUT_OF_RANGE)
/// and holds x when lo <= x' <= hi for one of the images x' = x - P, x, x + P (in double): a
/// box that crosses a face of the periodic box wraps around to the other side. lo > hi finds
/// nothing.
/// kNN: nearest by the minimum-image d2, ties by the lower index.
/// Cross pairs: both grids must have the same periods (else NB_ERR_OUT_OF_RANGE).
/// Cells: a periodic axis has m = max(1, floor(P / cell)) cells of edge P / m (one fewer when
/// that saves a ring of cells at the build radius), and the search stencil wraps modulo m; a
/// cell met twice through the wrap (m < 2k + 1 for k rings) is visited once. The box holds only
/// the occupied arc of each periodic axis (the circle's cells less its largest run of empty
/// ones), so that clustered data in a large box keeps cells of the radius: the dense layout
/// while that box has at most 4 N + 64 cells, else the ranked one (nb_grid_info: hashed and
/// ranked true) up to 64 cells a point; beyond that the cell edge doubles until it fits, so
/// memory stays O(N).
/// The cell order of the last build: order[p] = the input index of the point at position p
/// (cells row-major with x fastest in the dense and ranked layouts, in Z order (Morton codes of
/// the cells' offsets) in the hashed one;
/// ascending input index within a cell). A simulation that reorders its arrays by it every few
/// steps (nb_gather, for positions, velocities, ids, ...) keeps points that are near in space
/// near in memory: the next builds scatter almost sequentially, and pairs come out in nearly
/// ascending index order. The buffer contract: *found = nb_grid_count(grid), the first
/// min(capacity, *found) entries are written, NB_ERR_BUFFER_TOO_SMALL when they are not all;
/// NB_ERR_OUT_OF_RANGE for a negative capacity.
NB_API nbStatus nb_grid_cell_order(const nbGrid *grid, int32_t *order, int32_t capacity,
                                   int32_t *found);

/// Checks every invariant of the grid (cell order, prefix sums, cell membership, index
/// permutation, hash table consistency). NB_OK or NB_ERR_INTERNAL. O(N + cells).
NB_API nbStatus nb_grid_validate(const nbGrid *grid);

#ifdef __cplusplus
}
#endif

#endif
