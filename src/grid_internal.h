// SPDX-License-Identifier: MIT
// The dense grid's layout, shared by its build (dense_grid.c), its pair kernels (pairs.c) and
// its queries (query.c). Never installed.
#ifndef NEARBY_GRID_INTERNAL_H
#define NEARBY_GRID_INTERNAL_H

#include <nearby/grid.h>

#include "cell.h"

// A counting-sort grid. Points are copied, sorted by cell, into `pts` (interleaved, dim doubles
// each) with their input indices in `idx`; cell c holds positions [start[c], start[c + 1]).
//
// Dense mode: the cells are the whole box lo..hi of the points' cells, numbered row-major with x
// fastest: c = (x - lo[0]) + ext[0] * ((y - lo[1]) + ext[1] * (z - lo[2])). Used while the box
// has at most about 4 cells per point.
// Hashed mode: only occupied cells are numbered, in order of first appearance in the input;
// keys[c * 3 + a] holds cell c's integer coordinates, and `table` (2^bits slots, -1 = empty,
// linear probing) maps hash(coordinates) to c. Entries of other cells never share a cell's
// range, so foreign entries are skipped before any distance test.
//
// Invariants (nb_grid_validate checks them all):
// - 0 <= n, dim in {2, 3}, cell finite and > 0, cm matches cell.
// - start[0] == 0, start is non-decreasing, start[ncells] == n.
// - within a cell, idx is strictly ascending; cell_of[idx[p]] is the cell holding position p,
//   which makes idx a permutation of 0..n-1.
// - pts[p] maps to its cell's coordinates under the cell math, within lo..hi.
// - hashed: every cell is non-empty, and the table finds every cell at its own key.
// - max_abs >= |every stored coordinate|.
struct nbGrid {
    nbAllocator alloc;
    int32_t dim;
    double desc_cell; // 0 = derive from the build radius

    int32_t n;
    bool hashed;
    nbiCellMath cm;
    double max_abs;
    int64_t lo[3], hi[3]; // the box of occupied cells (z = 0 in 2D)
    int64_t ext[3];       // hi - lo + 1 per axis (dense mode's dimensions)
    int32_t ncells;
    int32_t table_bits;

    nbiBuf pts;     // double, n * dim
    nbiBuf idx;     // int32_t, n
    nbiBuf cell_of; // int32_t, n: cell of input point i (kept for validate and rebuild)
    nbiBuf start;   // int32_t, ncells + 2 (the extra slot serves the counting pass)
    nbiBuf table;   // int32_t, 2^table_bits (hashed mode)
    nbiBuf keys;    // int64_t, ncells * 3 (hashed mode)
};

NBI_INLINE const double *nbi_grid_pts(const nbGrid *g)
{
    return (const double *)g->pts.ptr;
}
NBI_INLINE const int32_t *nbi_grid_idx(const nbGrid *g)
{
    return (const int32_t *)g->idx.ptr;
}
NBI_INLINE const int32_t *nbi_grid_start(const nbGrid *g)
{
    return (const int32_t *)g->start.ptr;
}

// Hashed mode: the cell at integer coordinates (x, y, z), or -1 when none is occupied.
NBI_INLINE int32_t nbi_grid_lookup(const nbGrid *g, int64_t x, int64_t y, int64_t z)
{
    const int32_t *table = (const int32_t *)g->table.ptr;
    const int64_t *keys = (const int64_t *)g->keys.ptr;
    uint64_t mask = ((uint64_t)1 << g->table_bits) - 1;
    uint64_t h = nbi_cell_hash(x, y, z) >> (64 - g->table_bits);
    for (;;) {
        int32_t c = table[h];
        if (c < 0) return -1;
        const int64_t *k = keys + (size_t)c * 3;
        if (k[0] == x && k[1] == y && k[2] == z) return c;
        h = (h + 1) & mask;
    }
}

// A cell's integer coordinates.
void nbi_grid_cell_coords(const nbGrid *g, int32_t c, int64_t out[3]);

#endif
