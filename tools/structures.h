// SPDX-License-Identifier: MIT
// The structure table: every index the tool can run on, with the adapters that let a command
// use it without knowing which one it is. Adding a structure is one row in structures.c and
// its adapter functions; no command changes.
#ifndef NEARBY_TOOLS_STRUCTURES_H
#define NEARBY_TOOLS_STRUCTURES_H

#include <nearby/nearby.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/// What a command asks of a structure. A command's `needs` is an OR of these.
typedef enum cliQuery {
    CLI_QUERY_PAIRS = 1 << 0,    ///< all pairs within a radius (pairs, demo)
    CLI_QUERY_WITHIN = 1 << 1,   ///< the points within a radius of a point (within)
    CLI_QUERY_KNN = 1 << 2,      ///< the k nearest to a point (knn)
    CLI_QUERY_BOXES = 1 << 3,    ///< the rectangles touching a window (boxes)
    CLI_QUERY_OVERLAPS = 1 << 4, ///< every pair of touching rectangles (overlaps)
} cliQuery;

/// One structure: its name for --structure, a line for the help, and its adapters. An index is
/// the structure's own object behind a `void *`. A NULL query adapter means the structure does
/// not answer that query, and the commands that need it refuse it with a clear message.
/// Every adapter keeps the public API's contract for the call it forwards to (statuses,
/// deterministic results, nothing allocated in the query calls).
typedef struct cliStructure {
    const char *name;  ///< what --structure takes
    const char *about; ///< one line for the help
    /// Indexes `points`, tuned for queries near `scale` (the command's radius, or for kNN a
    /// typical spacing). With *index == NULL creates the index; otherwise rebuilds the same
    /// index in place, reusing its memory (a frame of `demo`). On error *index is unchanged
    /// (a rebuilt index keeps its previous contents; a failed create leaves NULL).
    /// A structure of rectangles (the quadtree) also has build_rects below, for boxes and
    /// overlaps.
    nbStatus (*build_points)(void **index, const nbPoints *points, double scale);
    void (*destroy)(void *index); ///< NULL is a no-op
    /// All pairs within `radius`, the nb_grid_pairs contract. With out == NULL (and capacity 0)
    /// only counts them (the count_pairs call, which is faster) and returns NB_OK.
    nbStatus (*pairs)(const void *index, double radius, nbPair *out, int64_t capacity,
                      int64_t *found);
    /// The points within `radius` of `center`, the nb_grid_query_radius contract.
    nbStatus (*within)(const void *index, const double *center, double radius, int32_t *out,
                       int32_t capacity, int32_t *found);
    /// The k nearest to `point`, the nb_grid_knn contract (`out` holds k).
    nbStatus (*knn)(const void *index, const double *point, int32_t k, nbNeighbor *out,
                    int32_t *found);
    /// Indexes `count` rectangles (4 doubles each: minx, miny, maxx, maxy), rectangle i named
    /// by its index i in the results. NULL: the structure holds points only.
    nbStatus (*build_rects)(void **index, const double *rects, int32_t count);
    /// The indices of the rectangles touching `window` (4 doubles, closed), the
    /// nb_grid_query_radius buffer contract.
    nbStatus (*boxes)(const void *index, const double *window, int32_t *out, int32_t capacity,
                      int32_t *found);
    /// Every pair of touching rectangles, i < j, the nb_grid_pairs buffer contract (out == NULL
    /// with capacity 0: only counts them).
    nbStatus (*overlaps)(const void *index, nbPair *out, int64_t capacity, int64_t *found);
    /// Points in 2D only (the quadtree): a command on 3D points that runs every structure
    /// (demo) leaves it out; asked for by name, its build refuses 3D points.
    bool only_2d;
    /// Builds in the periodic box set by cli_structure_set_period (--period).
    bool periodic;
} cliStructure;

/// The periodic box (per axis, 0 = not periodic) every later build of a structure with
/// `periodic` uses; the default is none. A build scale beyond half a period is clamped to it
/// (kNN's scale is only a tuning hint; pairs and within check their radius first).
void cli_structure_set_period(const double period[3]);
/// The scheduler that structures able to use one (the dense grid) are created with from now
/// on; NULL (the default) = serial. The pointer must stay valid while they are in use.
void cli_structure_set_tasks(const nbTasks *tasks);

/// The structure named `name`, or NULL.
const cliStructure *cli_structure_find(const char *name);

/// The k-th row of the table (k from 0), or NULL past its end: for a command that runs on
/// every structure (demo).
const cliStructure *cli_structure_at(int k);

/// The default for a command: the first structure in the table that answers all of `needs`.
const cliStructure *cli_structure_default(unsigned needs);

/// True if `s` answers every query in `needs` (an OR of cliQuery).
bool cli_structure_supports(const cliStructure *s, unsigned needs);

/// How messages name what a command needs: "pair queries", "radius queries", ...
const char *cli_query_name(unsigned needs);

/// Prints "structures:" and one line per structure that answers `needs`, marking the default.
void cli_print_structures(FILE *f, unsigned needs);

/// Builds (or, with *index != NULL, rebuilds) `s` over `count` points of `dim` doubles at
/// `coords`, through a zero-initialised nbPoints view (no categories or masks).
nbStatus cli_index_build(const cliStructure *s, const double *coords, int32_t count, int32_t dim,
                         double scale, void **index);

/// All pairs into a fresh buffer (free() it): tries `first_capacity`, and on
/// NB_ERR_BUFFER_TOO_SMALL grows to the reported total and runs once more. *ms, if not NULL,
/// receives the time of the final, complete call. NB_ERR_OUT_OF_MEMORY if a buffer cannot be
/// had; NB_ERR_INTERNAL if the total changes between two identical calls.
nbStatus cli_collect_pairs(const cliStructure *s, const void *index, double radius,
                           int64_t first_capacity, nbPair **pairs, int64_t *count, double *ms);

#endif
