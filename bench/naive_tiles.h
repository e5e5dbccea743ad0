// SPDX-License-Identifier: MIT
// The tile system games commonly write (a bounded world of N x N tiles), as it is usually
// written, ported to C: entity objects allocated one by one, a list per (tile, group) holding
// pointers to them (a growable array, like C#'s List, reserved at 20), a list of waypoint ids
// per tile, List.Remove as a linear search that shifts the rest down, and neighbour tiles
// gathered into a fresh list for every query. That design has no nearest query; two exact ones
// are built on its lists: nt_nearest* search rings of tiles outward (a fresh list a ring) and
// stop on the tiles' nominal boxes (exact for the benchmark, whose agents stay inside the
// world); nt_nearest*_3x3 use only the usual GetNearbyTiles (the tile and its neighbours)
// and fall back to every tile when that block cannot prove the answer.
#ifndef NEARBY_BENCH_NAIVE_TILES_H
#define NEARBY_BENCH_NAIVE_TILES_H

#include <stdint.h>

typedef struct ntEntity {
    double x, y;
    int group;
    int tile;
    int id;
} ntEntity;

typedef struct ntList { // a List<T> of pointers or ints
    void **items;
    int count, cap;
} ntList;

typedef struct ntTiles {
    double tile_size, world_size;
    int rows; // tiles per side
    int groups;
    ntList *entities; // rows * rows * groups lists of ntEntity *
    int **waypoints;  // per tile: waypoint ids (count in wp_count)
    int *wp_count, *wp_cap;
    const double *wp_pos; // the caller's waypoint positions (x, y)
} ntTiles;

ntTiles *nt_create(int rows, double world_size, int groups, const double *wp_pos, int nwp);
void nt_destroy(ntTiles *t);
int nt_tile_index(const ntTiles *t, double x, double y);
void nt_add(ntTiles *t, ntEntity *e);
void nt_remove(ntTiles *t, ntEntity *e);
/// The entity updates itself after moving (as such code usually does).
void nt_moved(ntTiles *t, ntEntity *e);
/// The nearest entity of a group in `groups` (bit mask) to (x, y), or NULL; *d2 its distance^2.
const ntEntity *nt_nearest(const ntTiles *t, double x, double y, uint32_t groups, double *d2);
/// The nearest waypoint's id, or -1; *d2 its distance^2.
int nt_nearest_waypoint(const ntTiles *t, double x, double y, double *d2);

/// The same answers from the usual neighbourhood (GetNearbyTiles: the tile and its
/// neighbours, a fresh list), falling back to every tile when that cannot prove the answer.
const ntEntity *nt_nearest_3x3(const ntTiles *t, double x, double y, uint32_t groups, double *d2);
int nt_nearest_waypoint_3x3(const ntTiles *t, double x, double y, double *d2);

#endif
