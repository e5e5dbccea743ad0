// SPDX-License-Identifier: MIT
/// Neighbour lists for simulations: every point's neighbours as compressed rows (CSR), in both
/// directions, the way particle codes (SPH, molecular dynamics, DEM, crowds) loop over them.
///
/// Point i's neighbours are neighbors[offsets[i] .. offsets[i + 1]), ascending, each within the
/// radius by the grid's exact test (dx*dx + dy*dy (+ dz*dz) <= r*r in double; the minimum image
/// in a periodic box). A point is never its own neighbour in the rows of a set against itself.
/// Categories and masks the grid was built with apply as they do to nb_grid_pairs: row i holds
/// j exactly when nb_grid_pairs reports the pair (i, j) or (j, i).
///
/// Rows come in one of two orders:
/// - by the grid's **cell order** (nb_grid_neighbor_rows_cell_order, or a list with
///   nbNeighborListDesc.cell_order): row p is the point at position p of the grid's cell order,
///   and its entries are positions too; nb_grid_cell_order (or nbNeighborRows.order) maps a
///   position to your index. Each row is written once, in memory order, by one pass over the
///   cells: the fast form, for codes that keep their particles sorted by cell (SPH, MD: reorder
///   your arrays by the order after each build, nb_gather) or that only sum over rows;
/// - by **your index** (nb_grid_neighbor_rows, a list by default, nbVerlet): row i is your point
///   i. The same search, then each row placed at its index and sorted there: about twice the
///   cost of the cell order with points in random index order (a random write a row). Use it
///   when your arrays stay in their own order.
///
/// And in three forms:
/// - nb_grid_neighbor_rows[_cell_order] / nb_grid_cross_neighbor_rows[_cell_order] write into
///   the caller's buffers and never allocate;
/// - nbNeighborList keeps the rows (and, if asked, the squared distances) in storage it grows,
///   and allocates nothing once it is large enough;
/// - nbVerlet keeps a Verlet list: candidates within r + skin, rebuilt only when some point has
///   moved more than skin / 2 since the last build; its rows are exact at r after every update,
///   or (nbVerletDesc.candidates, the cheapest to keep) the candidates themselves, which the
///   reader tests at r (nb_verlet_row reads a row that way).
///
/// Thread safety: the grid calls take const grids and may run at once on one grid. A list or a
/// Verlet list needs exclusive access to build or update; reading its rows may be shared.
#ifndef NEARBY_NEIGHBORS_H
#define NEARBY_NEIGHBORS_H

#include "grid.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A read-only view of rows kept by a list: valid until the list's next build, update or
/// destroy.
typedef struct nbNeighborRows {
    int32_t rows;             ///< points with a row: offsets holds rows + 1 entries
    int64_t entries;          ///< offsets[rows], the neighbours in all rows
    const int32_t *offsets;   ///< rows + 1 entries, offsets[0] == 0, non-decreasing
    const int32_t *neighbors; ///< `entries` indices, ascending within each row
    const double *dist2;      ///< the squared distance of each entry, or NULL when not kept
    /// Rows in cell order (nbNeighborListDesc.cell_order): row p is the point order[p] of the
    /// (first) grid, and an entry q the point neighbor_order[q] of the grid it lists (the same
    /// array for a set against itself). NULL for rows by index, never NULL in cell order.
    const int32_t *order;
    const int32_t *neighbor_order;
    /// NULL: every entry is a neighbour (but see `candidates`). Else (a Verlet list in cell
    /// order with keep bits) the rows are the candidates within r + skin and entry t is a
    /// neighbour within r exactly when bit t % 64 of keep[t / 64] is set:
    /// `(keep[t >> 6] >> (t & 63)) & 1`. The rows filtered by keep are exactly the rows at r,
    /// ascending.
    const uint64_t *keep;
    /// true (a Verlet list with nbVerletDesc.candidates): the rows are the candidates, every
    /// pair within r + skin at the last rebuild; the neighbours within r now are among them and
    /// the reader tests each (d2 <= r*r, which a force loop computes anyway, or nb_verlet_row).
    bool candidates;
} nbNeighborRows;

/// Every point's neighbours within `radius` among the grid's own points, as compressed rows:
/// `offsets` (nb_grid_count(grid) + 1 entries, always written) and up to `capacity` entries in
/// `neighbors`. *found receives the number of entries (twice the pairs nb_grid_pairs reports).
/// If it exceeds `capacity`, returns NB_ERR_BUFFER_TOO_SMALL with `offsets` complete (so
/// offsets[n] is the size to allocate) and `neighbors` unspecified: grow and call again.
/// Does not allocate. Runs on the grid's scheduler (nbGridDesc.tasks) when it has one, with
/// the same result.
/// NB_ERR_NOT_FINITE / NB_ERR_OUT_OF_RANGE for a NaN, infinite or negative radius or a negative
/// capacity; NB_ERR_OUT_OF_RANGE as nb_grid_pairs for a radius the grid cannot answer (over
/// P / 2 in a periodic box, or too many cells of a hashed grid), and when there are more than
/// INT32_MAX entries (offsets are int32_t). On any error but NB_ERR_BUFFER_TOO_SMALL, offsets
/// holds zeros. Cost: a count and a fill pass of the search in both directions, each row then
/// sorted at its index; nb_grid_neighbor_rows_cell_order is faster (one pass, no sort).
NB_API nbStatus nb_grid_neighbor_rows(const nbGrid *grid, double radius, int32_t *offsets,
                                      int32_t *neighbors, int64_t capacity, int64_t *found);

/// Set A against set B: row i lists the points j of grid `b` within `radius` of point i of grid
/// `a` (fluid against boundary particles), ascending; `offsets` holds nb_grid_count(a) + 1
/// entries. The same grid twice gives every point itself too, as nb_grid_cross_pairs does.
/// The grids need the same dim and periods (else NB_ERR_OUT_OF_RANGE); their cell sizes and
/// layouts may differ. Runs on a's scheduler. Otherwise as nb_grid_neighbor_rows.
NB_API nbStatus nb_grid_cross_neighbor_rows(const nbGrid *a, const nbGrid *b, double radius,
                                            int32_t *offsets, int32_t *neighbors, int64_t capacity,
                                            int64_t *found);

/// ---- Rows in the grid's cell order (the fast form) ----
/// nb_grid_neighbor_rows by **position** in the grid's cell order instead of by your index:
/// position p holds your point order[p], where nb_grid_cell_order(grid, order, ...) gives order
/// (a permutation of 0 .. n - 1 that stays valid until the next build). Row p lists the
/// positions q (never p itself) within `radius` of position p, ascending; so your point order[p]
/// has the neighbours order[q]. This is how SPH and MD codes that keep their particles sorted by
/// cell use a list: gather your arrays by `order` (nb_gather) after the build, and positions are
/// your indices, near in memory when near in space.
/// Each row is written once, sequentially, in one pass over the grid's cells (no count pass,
/// no sort): the fastest way to full rows here, about the time of nb_grid_pairs plus writing
/// the entries. The rows by your index (nb_grid_neighbor_rows, or a list) cost more, since each
/// row then lands at a random place and must be sorted; use them when your arrays stay in
/// their own order. Same contract as nb_grid_neighbor_rows: `offsets` (nb_grid_count(grid) + 1)
/// always written, *found the number of entries, NB_ERR_BUFFER_TOO_SMALL with `offsets`
/// complete when it exceeds `capacity`, the same statuses. Does not allocate. On the grid's
/// scheduler (nbGridDesc.tasks) it counts first and then fills, with the same result.
NB_API nbStatus nb_grid_neighbor_rows_cell_order(const nbGrid *grid, double radius,
                                                 int32_t *offsets, int32_t *neighbors,
                                                 int64_t capacity, int64_t *found);

/// Set A against set B in cell order: row p lists the positions q of grid `b` within `radius`
/// of position p of grid `a`, ascending (a's order from nb_grid_cell_order(a, ...), b's from
/// nb_grid_cell_order(b, ...)). Otherwise as nb_grid_cross_neighbor_rows.
NB_API nbStatus nb_grid_cross_neighbor_rows_cell_order(const nbGrid *a, const nbGrid *b,
                                                       double radius, int32_t *offsets,
                                                       int32_t *neighbors, int64_t capacity,
                                                       int64_t *found);

/// Rows kept in storage the list grows. Opaque.
typedef struct nbNeighborList nbNeighborList;

/// Zero-initialise, then set what you need.
typedef struct nbNeighborListDesc {
    const nbAllocator *allocator; ///< NULL = malloc/free; copied, must outlive the list
    const nbTasks *tasks;         ///< NULL = serial; copied (its `user` must outlive the list)
    bool distances;               ///< also keep each entry's squared distance
    int64_t capacity_hint;        ///< entries to reserve for; 0 = grow on the first build
    /// Rows in the grid's cell order, as nb_grid_neighbor_rows_cell_order gives them (the fast
    /// form), with the orders kept in nbNeighborRows.order / neighbor_order; false: by index.
    bool cell_order;
} nbNeighborListDesc;

/// Creates an empty list (0 rows). NB_ERR_NULL_ARG for a half-set allocator;
/// NB_ERR_OUT_OF_RANGE for a negative capacity_hint or worker count; NB_ERR_OUT_OF_MEMORY. On error
/// *out is NULL.
NB_API nbStatus nb_neighbor_list_create(const nbNeighborListDesc *desc, nbNeighborList **out);

/// Frees the list. NULL is a no-op.
NB_API void nb_neighbor_list_destroy(nbNeighborList *list);

/// Replaces the rows with those of nb_grid_neighbor_rows(grid, radius): grows the list's
/// storage as needed (geometrically, so a simulation's builds soon allocate nothing). Same
/// statuses, plus NB_ERR_OUT_OF_MEMORY; on any error the list keeps its previous rows.
NB_API nbStatus nb_neighbor_list_build(nbNeighborList *list, const nbGrid *grid, double radius);

/// Replaces the rows with those of nb_grid_cross_neighbor_rows(a, b, radius). As above.
NB_API nbStatus nb_neighbor_list_build_cross(nbNeighborList *list, const nbGrid *a, const nbGrid *b,
                                             double radius);

/// The rows of the last successful build (0 rows before any). NB_ERR_NULL_ARG if either pointer
/// is NULL (then *rows, if given, is all zero).
NB_API nbStatus nb_neighbor_list_rows(const nbNeighborList *list, nbNeighborRows *rows);

/// Bytes the list holds, including its struct. 0 for NULL.
NB_API size_t nb_neighbor_list_memory_bytes(const nbNeighborList *list);

/// ---- Verlet lists ----
/// A neighbour list kept valid between steps. Each build searches at radius + skin from the
/// positions of that step (a grid it owns) and keeps those candidates. nb_verlet_update reads
/// the new positions, measures the largest displacement of any point since the build (the
/// minimum image on periodic axes), and rebuilds only when it exceeds skin / 2 (or when the
/// point count changed, or on the first update); otherwise no pair now within radius can be
/// missing from the candidates, and the rows are the candidates filtered at radius from the
/// new positions. Either way the rows are exactly those of nb_grid_neighbor_rows at radius on
/// the new positions (in candidates form, once each candidate is tested at radius).
typedef struct nbVerlet nbVerlet;

/// Zero-initialise, then set what you need.
typedef struct nbVerletDesc {
    double radius;    ///< r, finite and >= 0: the rows hold the neighbours within r
    double skin;      ///< finite and >= 0: candidates within r + skin (0: rebuild every update)
    int32_t dim;      ///< 2 or 3; 0 means 2
    double period[3]; ///< as nbGridDesc.period; r + skin must be <= P / 2
    const nbAllocator *allocator; ///< NULL = malloc/free; copied, must outlive the list
    const nbTasks *tasks;         ///< NULL = serial: builds and rebuilds on your workers
    bool distances;               ///< also keep each entry's squared distance
    /// Rows in the cell order of the last rebuild, as candidates with a keep mask (the fast
    /// form): row p is your point rows.order[p], its entries are positions (rows.order maps
    /// them to your indices), and rows.keep marks the entries within r. An update that does
    /// not rebuild rewrites no rows: it re-tests only the candidates whose distance at the
    /// build lay within twice the largest displacement since of r, and sets their bits.
    /// With `distances`, every candidate's squared distance is computed at every update
    /// (rows.dist2 beside each entry, kept or not). false: exact rows by your index.
    bool cell_order;
    /// The form MD codes use (the cheapest to keep): the rows are the candidates themselves,
    /// every pair within r + skin at the last rebuild, by your index (ascending) or, with
    /// `cell_order`, by position in the rebuild's cell order (rows.order; no keep bits).
    /// rows.candidates is true. Every pair within r now is among them, as long as it is within
    /// r by any test accurate to a few ulps; the reader tests each candidate (d2 <= r*r, from
    /// the positions it passed to the last update) or reads a row through nb_verlet_row. An
    /// update that does not rebuild reads your points once, in your order, beside the
    /// rebuild's copy of them (a streaming pass) and writes nothing else; a rebuild is the
    /// grid's build and the rows at r + skin (nb_neighbor_list_build) and that copy. Not with
    /// `distances` (they change at every step; NB_ERR_OUT_OF_RANGE).
    bool candidates;
} nbVerletDesc;

/// Creates an empty Verlet list (0 rows; the first update builds). NB_ERR_NOT_FINITE for a NaN
/// or infinite radius, skin or period; NB_ERR_OUT_OF_RANGE for a negative one, a dim other
/// than 0, 2 or 3, a period on an axis the dim does not have, or r + skin over P / 2 on a
/// periodic axis; NB_ERR_OUT_OF_MEMORY. On error *out is NULL.
NB_API nbStatus nb_verlet_create(const nbVerletDesc *desc, nbVerlet **out);

/// Frees the Verlet list. NULL is a no-op.
NB_API void nb_verlet_destroy(nbVerlet *verlet);

/// Brings the rows to `points` (the same points, in the same order, as every update; dim 0
/// means the list's). *rebuilt (if not NULL) says whether this update searched afresh.
/// Categories and masks are read by rebuilds only. Checks the points as nb_grid_build does:
/// NB_ERR_NOT_FINITE for a NaN or infinite coordinate, NB_ERR_OUT_OF_RANGE for a negative
/// count, another dim, a bad stride, a point outside [0, P) on a periodic axis, or more than
/// INT32_MAX entries; NB_ERR_OUT_OF_MEMORY. On any error the rows stay those of the last
/// successful update. An update that does not rebuild does not
/// allocate; rebuilds allocate only when the storage must grow. O(N + candidates) without a
/// rebuild.
NB_API nbStatus nb_verlet_update(nbVerlet *verlet, const nbPoints *points, bool *rebuilt);

/// The rows of the last successful update. NB_ERR_NULL_ARG if either pointer is NULL.
NB_API nbStatus nb_verlet_rows(const nbVerlet *verlet, nbNeighborRows *rows);

/// One row of a Verlet list read exactly at r: the entries of row `row` within r of it by the
/// rows' own test (dx*dx + dy*dy (+ dz*dz) <= r*r in double, the minimum image on periodic
/// axes), ascending, into `neighbors` and, if not NULL, their squared distances into `dist2`;
/// *found their number. `points` must be the points of the last successful update (of a list
/// in candidates form, nbVerletDesc.candidates: the rows' candidates are tested against
/// them; the other forms' rows are copied). The row is the one nb_grid_neighbor_rows gives
/// at r for those points (in cell order: its positions, mapped by rows.order). Up to
/// `capacity` entries are written; when the row has more, NB_ERR_BUFFER_TOO_SMALL with
/// *found the full count (a row's candidates, offsets[row + 1] - offsets[row], always fit).
/// NB_ERR_NULL_ARG for a NULL pointer (but dist2); NB_ERR_OUT_OF_RANGE for a row outside
/// [0, rows), a negative capacity, or points of another count or dim. Reads nothing but
/// the row and its points' coordinates; does not allocate; may run at once on one list.
NB_API nbStatus nb_verlet_row(const nbVerlet *verlet, const nbPoints *points, int32_t row,
                              int32_t *neighbors, double *dist2, int32_t capacity, int32_t *found);

/// Bytes the Verlet list holds (its grid, candidates, reference positions and rows). 0 for NULL.
NB_API size_t nb_verlet_memory_bytes(const nbVerlet *verlet);

#ifdef __cplusplus
}
#endif

#endif
