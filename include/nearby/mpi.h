// SPDX-License-Identifier: MIT
/// Distributed all pairs and batched radius queries over MPI. Built as the separate
/// library `nearby_mpi` (CMake target nearby::nearby_mpi, pkg-config nearby-mpi) when CMake finds
/// MPI (`-DNB_WITH_MPI=AUTO|ON|OFF`); it links nearby and MPI. The core library never includes
/// <mpi.h>. Compile with your MPI's flags (mpicc, or MPI::MPI_C in CMake).
///
/// The scheme (what each rank does in nb_mpi_create, all collective over desc.comm):
///  1. Sample: each rank draws an evenly strided sample of its points, its share proportional to
///     its point count; MPI_Allgatherv gives every rank the same sample.
///  2. Decomposition: recursive coordinate bisection (RCB) of the sample into exactly `size`
///     bricks, one per rank, for any rank count: a box of n ranks is cut into floor(n/2) and
///     ceil(n/2) ranks, the sample proportionally, across the widest axis of the box. Every rank
///     computes the same tree from the same sample. Balanced by point count, so clustered data
///     is balanced too. A point belongs to exactly one brick: at each cut c, x < c goes to the
///     lower side and x >= c to the upper side (half-open), points exactly on a cut included.
///     The root box is the points' bounding box on an open axis and [0, P) on a periodic one.
///  3. Migration: every point (coordinates + id) moves to the rank owning its brick
///     (MPI_Alltoall of counts, then MPI_Alltoallv).
///  4. Half-shell halo: for every two bricks whose distance is <= radius, exactly one of the two
///     ranks receives the other's points within radius of its brick (a fixed rule on the pair of
///     ranks: the lower rank when their sum is even, else the higher; about half the neighbours
///     each), so each pair between two bricks is found on exactly one rank. On a periodic axis
///     the halo also holds the images of points across the box faces (minimum image), a rank's
///     own points included when its brick meets itself across a face.
///  5. Local pass: a dense grid (nb_grid) over the owned points gives the pairs among them; a
///     second grid over the halo gives the pairs between owned and halo points (cross pairs).
///
/// Exactness: a pair (i, j) is reported when its distance is <= radius by exactly the test the
/// single-process grid uses: dx*dx + dy*dy (+ dz*dz) <= r*r in double, and on a periodic axis the
/// minimum image d = min(|xi - xj|, P - |xi - xj|) as nbGridDesc.period defines it. The union of
/// all ranks' pairs is the single-process nb_grid_pairs answer on the same points (ids for
/// indices), each pair on exactly one rank.
///
/// Collective calls: nb_mpi_create, nb_mpi_update, nb_mpi_destroy, nb_mpi_count_pairs and
/// nb_mpi_query_radius must be called by every rank of the communicator, in the same order. Each
/// returns the SAME status on every rank (the ranks agree with an MPI_Allreduce before anything
/// that could leave a rank waiting): bad input on one rank is an error on all of them, never a
/// hang. The one exception is a NULL desc or nbMpi, which leaves no communicator to agree on: that
/// returns NB_ERR_NULL_ARG on the ranks that passed it (a programming error; the others would
/// wait). nb_mpi_pairs, nb_mpi_visit_pairs, nb_mpi_owned, nb_mpi_stats and nb_mpi_free are
/// local: no communication, and their status is this rank's.
///
/// Determinism: for the same rank count and the same input on each rank, the decomposition,
/// which rank reports each pair and the order of its pairs are the same on every run.
///
/// MPI errors: nearby calls MPI on a duplicate of desc.comm with that communicator's error
/// handler (MPI_ERRORS_ARE_FATAL by default); an MPI failure is not turned into a status.
/// Counts sent in one message must fit MPI's int; past that, create and query_radius return
/// NB_ERR_OUT_OF_RANGE on every rank (about 2^31 points a rank).
///
/// Thread safety: the collective calls use MPI from the calling thread only (MPI_THREAD_SINGLE
/// suffices); desc.tasks lets the local grid use your threads for its build and pair count. The
/// local calls read the index only, so any number of threads may call them at once, between
/// collective calls.
///
/// Time steps: nb_mpi_update keeps the bricks and redoes steps 3 to 5 only; with the points from
/// nb_mpi_owned (moved), only the points that left their brick migrate.
///
/// Notes for docs/distributed.md: the rule of step 4 and the half-open cut rule; nb_mpi_stats
/// for bytes and balance; the pairs on a rank come in the grid's order (not sorted: sort them
/// yourself when you write files); ids are the caller's int64 values, each point's id should be
/// unique (duplicates are the caller's business: pairs are still found, a pair of two points
/// with the same id comes out as (id, id)); r > P / 2 on a periodic axis is refused as nb_grid
/// refuses it; the sample holds 32768 + 256 size points (all points when fewer), so the balance
/// is exact up to ties for small sets and within about 1-3 % for large ones.
#ifndef NEARBY_MPI_H
#define NEARBY_MPI_H

#include <mpi.h>

#include "nearby.h"

#if defined(NB_STATIC_DEFINE) || !defined(__GNUC__)
#define NB_MPI_API
#else
#define NB_MPI_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/// The distributed index: this rank's brick, its owned points, its halo and their grids. Opaque.
typedef struct nbMpi nbMpi;

/// Zero-initialise, then set comm, dim and radius (and what else you need).
/// (Refined from the first sketch: `tasks` and `allocator` are pointers, as in nbGridDesc, so
/// that a zeroed desc means serial and malloc/free.)
typedef struct nbMpiDesc {
    MPI_Comm comm;                ///< required; every collective call is collective over it
                                  ///< (nearby works on its own duplicate)
    int32_t dim;                  ///< 2 or 3; 0 means 2
    double radius;                ///< pairs within radius (inclusive); also the halo width.
                                  ///< Finite and >= 0; <= P / 2 on a periodic axis
    double period[3];             ///< per axis: 0 = open; P > 0 = periodic box [0, P), as
                                  ///< nbGridDesc.period. Unused axes (z in 2D) must be 0
    const nbTasks *tasks;         ///< NULL = serial; else the local grids' scheduler (copied; its
                                  ///< user must outlive the nbMpi), as nbGridDesc.tasks
    const nbAllocator *allocator; ///< NULL = malloc/free; copied, must outlive the nbMpi
} nbMpiDesc;

/// A pair of points by their global ids, i < j.
typedef struct nbMpiPair {
    int64_t i;
    int64_t j;
} nbMpiPair;

/// Called once per pair of this rank, i < j (global ids). Return false to stop early.
typedef bool nbMpiPairFn(int64_t i, int64_t j, void *user);

/// What a rank holds and what create cost it, for benchmarks and load balance.
typedef struct nbMpiStats {
    int32_t rank;                 ///< this rank in desc.comm
    int32_t size;                 ///< ranks in desc.comm
    uint64_t total;               ///< points over all ranks
    size_t owned;                 ///< points this rank owns after migration
    size_t halo;                  ///< halo points this rank received from other ranks
    size_t images;                ///< halo entries in its halo grid: the received points plus
                                  ///< periodic images (one point may have several), own
                                  ///< points' images included
    uint64_t bytes_sent;          ///< by this rank to other ranks in create, all phases: sample
                                  ///< (Allgatherv: its share once per other rank), counts,
                                  ///< migration, halo. Messages to itself are not counted
    uint64_t bytes_received;      ///< the same, received
    uint64_t halo_bytes_sent;     ///< the halo phase's part of bytes_sent
    uint64_t halo_bytes_received; ///< the halo phase's part of bytes_received
    uint64_t migrate_bytes_sent;  ///< the migration phase's part of bytes_sent
    double lo[3];                 ///< this rank's brick: it owns the points p with
    double hi[3];                 ///< lo <= p < hi on every axis where lo, hi are cuts; the
                                  ///< outer faces are the root box (the data's bounding box on
                                  ///< an open axis, inclusive; [0, P) on a periodic one).
                                  ///< Unused axes are 0
} nbMpiStats;

/// Collective. Builds the distributed index over every rank's points: sample, decomposition,
/// migration, halo and local grids (see the top of this header). `xyz` holds this rank's `n`
/// points, `dim` doubles each (x, y[, z], packed); `ids` their global ids (any int64 values,
/// unique over all ranks). Ranks may pass n = 0. Both arrays are read during the call only.
/// Every rank gets the same status. On error *out is NULL on every rank.
/// NB_ERR_NULL_ARG: out NULL, or xyz or ids NULL with n > 0, on any rank (a NULL desc: see the
/// top of this header). NB_ERR_NOT_FINITE: a NaN or infinite radius, period or coordinate on
/// any rank. NB_ERR_OUT_OF_RANGE: dim not 0, 2 or 3, a negative radius or period, a period on an
/// axis the dim does not have, a coordinate outside [0, P) on a periodic axis (wrap first), a
/// radius > P / 2, more points than a rank or a message can hold, or a local grid refusing its
/// cells (nb_grid_build's limits). NB_ERR_OUT_OF_MEMORY: an allocation failed on some rank.
/// Communication: about ten MPI_Allreduce of a few bytes (the status agreements, the total and
/// the bounding box), one MPI_Allgatherv of the sample (32768 + 256 size points in all, or
/// every point when there are fewer), and two MPI_Alltoall + MPI_Alltoallv (migration, halo).
NB_MPI_API nbStatus nb_mpi_create(const nbMpiDesc *desc, const double *xyz, const int64_t *ids,
                                  size_t n, nbMpi **out);

/// Collective. Replaces the points and keeps the bricks: migration, halo and local grids again,
/// without the sample and the bisection (a time step of a simulation whose points moved a
/// little). Points go to the brick the existing cuts give them, so the balance is the old
/// one's as long as the points have not moved far: create again when it degrades (compare
/// nbMpiStats.owned over ranks). On an open axis the bricks on the outer faces grow to hold
/// points beyond them. Same input rules and statuses as nb_mpi_create (NB_ERR_NULL_ARG for a
/// NULL m on the ranks that pass it); on any error, on every rank, the index is unchanged.
/// Allocates the new arrays before it frees the old ones. The stats then describe this update
/// (no sample bytes).
NB_MPI_API nbStatus nb_mpi_update(nbMpi *m, const double *xyz, const int64_t *ids, size_t n);

/// Collective (it frees the duplicated communicator). Frees everything. NULL is a no-op (then
/// call it with NULL on every rank).
NB_MPI_API void nb_mpi_destroy(nbMpi *m);

/// Collective. *local = the pairs this rank reports, *global = the sum over all ranks (one
/// MPI_Allreduce). Either pointer may be NULL. Does not allocate.
/// NB_ERR_OUT_OF_RANGE if a local grid refuses the walk (a hashed grid with a table, `ranked`
/// false, whose radius spans too many cells: see nb_grid_pairs), agreed over all ranks; then
/// both outputs are 0.
NB_MPI_API nbStatus nb_mpi_count_pairs(nbMpi *m, uint64_t *local, uint64_t *global);

/// Local. This rank's pairs (global ids, i < j), each pair of the union exactly once over all
/// ranks, in the grid's deterministic order (owned pairs first, then owned-halo pairs; not
/// sorted). Writes up to `capacity` pairs and the total to *found; if *found > capacity,
/// returns NB_ERR_BUFFER_TOO_SMALL with `out` holding the first `capacity`. Does not allocate.
/// NB_ERR_NULL_ARG for m or found NULL, or out NULL with capacity > 0.
NB_MPI_API nbStatus nb_mpi_pairs(const nbMpi *m, nbMpiPair *out, size_t capacity, size_t *found);

/// Local. Calls `fn` for each pair nb_mpi_pairs would report, in the same order, until it
/// returns false. Does not allocate.
NB_MPI_API nbStatus nb_mpi_visit_pairs(const nbMpi *m, nbMpiPairFn *fn, void *user);

/// Collective. Batched radius queries: this rank's `nq` centres (dim doubles each, packed) are
/// sent to every brick within r of them (periodic images included), answered there by the
/// local grid, and the answers come back to this rank in its own query order: the ids within
/// r of centre q (same test as the pairs) are (*ids)[(*offsets)[q] .. (*offsets)[q + 1]),
/// ascending. *offsets has nq + 1 entries. Both arrays are allocated with the desc's allocator
/// and freed with nb_mpi_free(m, p), even when nq = 0. Ranks may pass nq = 0; r may differ
/// between ranks. Every rank gets the same status; on error *offsets and *ids are NULL.
/// NB_ERR_NULL_ARG: offsets or ids NULL, or centres NULL with nq > 0. NB_ERR_NOT_FINITE: a NaN
/// or infinite centre or r. NB_ERR_OUT_OF_RANGE: negative r, r > P / 2 or a centre outside
/// [0, P) on a periodic axis, counts past MPI's int. NB_ERR_OUT_OF_MEMORY.
NB_MPI_API nbStatus nb_mpi_query_radius(nbMpi *m, const double *centres, size_t nq, double r,
                                        size_t **offsets, int64_t **ids);

/// Local. Frees an array nb_mpi_query_radius returned. NULL is a no-op.
NB_MPI_API void nb_mpi_free(const nbMpi *m, void *p);

/// Local. This rank's owned points after the last create or update: *n points, their
/// coordinates at *xyz (dim doubles each, packed) and their ids at *ids, in the order they
/// arrived (by source rank, then in each source's order). Pointers into the index: read-only,
/// valid until the next nb_mpi_update or nb_mpi_destroy. A time-stepping simulation copies them,
/// moves its points and passes them to nb_mpi_update, so that only the points that left the
/// brick migrate (the pointers themselves may be passed back: update reads its input before it
/// frees anything). NB_ERR_NULL_ARG for a NULL pointer (the outputs are then zeroed).
NB_MPI_API nbStatus nb_mpi_owned(const nbMpi *m, const double **xyz, const int64_t **ids,
                                 size_t *n);

/// Local. Fills *out with this rank's figures (see nbMpiStats). NB_ERR_NULL_ARG for NULL.
NB_MPI_API nbStatus nb_mpi_stats(const nbMpi *m, nbMpiStats *out);

#ifdef __cplusplus
}
#endif

#endif
