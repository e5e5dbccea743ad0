// SPDX-License-Identifier: MIT
// What `demo` and `render` draw alike: the occupied cells shaded by occupancy, a sample of
// points, a sample of pairs. Samples are chosen by a hash of each point's index (of each pair's
// two indices), never by order, so the picture does not depend on which structure found them,
// and drawn in index order, so the same input always gives the same bytes.
#ifndef NEARBY_TOOLS_PICTURE_H
#define NEARBY_TOOLS_PICTURE_H

#include <nearby/nearby.h>

#include <stdbool.h>
#include <stdint.h>

#include "io/svg.h"

enum {
    CLI_PICTURE_MAX_POINTS = 40000, ///< points drawn at most (about 1.5 MB)
    CLI_PICTURE_MAX_PAIRS = 40000,  ///< pairs drawn at most (about 1 MB)
    CLI_PICTURE_MAX_CELLS = 20000,  ///< occupied cells drawn at most (coarser cells beyond)
};

/// True for about `cap` of `total` keys, the same ones whatever the order they come in.
bool cli_sample_keep(uint64_t key, int64_t total, int64_t cap);

/// What cli_picture_cells drew.
typedef struct cliCells {
    bool drawn;            ///< false: the cell is 0, or the coordinates overflow cell numbers
    int64_t factor;        ///< drawn cells are factor x the cell (to stay within the cap)
    int64_t occupied;      ///< occupied cells drawn
    int64_t max_occupancy; ///< points in the fullest one
} cliCells;

/// Shades the occupied cells of edge `cell` in x,y (3D points projected) by how many of the
/// `n` points fall in each. NB_ERR_OUT_OF_MEMORY if the scratch cannot be had.
nbStatus cli_picture_cells(nbioSvg *svg, const double *coords, int32_t n, int32_t dim, double cell,
                           cliCells *out);

/// Draws up to CLI_PICTURE_MAX_PAIRS of `pairs` as segments in `color`; returns how many.
/// NB_ERR_OUT_OF_MEMORY if the scratch cannot be had.
nbStatus cli_picture_pairs(nbioSvg *svg, const double *coords, int32_t dim, const nbPair *pairs,
                           int64_t count, const char *color, int64_t *drawn);

/// Draws up to `cap` of the points whose `group[i]` (NULL: all 0) equals `which`, as dots of
/// `r_px` in `color`; `total` is how many there are in that group. Returns how many it drew.
int64_t cli_picture_points(nbioSvg *svg, const double *coords, int32_t n, int32_t dim,
                           const uint8_t *group, uint8_t which, int64_t total, int64_t cap,
                           double r_px, const char *color);

#endif
