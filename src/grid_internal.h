// SPDX-License-Identifier: MIT
// The dense grid's layout, shared by its build (dense_grid.c) and its public queries
// (grid_queries.c), which hand the walkers a view (view.h). Never installed.
#ifndef NEARBY_GRID_INTERNAL_H
#define NEARBY_GRID_INTERNAL_H

#include <nearby/grid.h>

#include "view.h"

// A counting-sort grid. Points are copied, sorted by cell, into `pts` (interleaved, dim doubles
// each) with their input indices in `idx`; cell c holds positions [start[c], start[c + 1]).
//
// Dense mode: the cells are the whole box lo..hi of the points' cells, numbered row-major with x
// fastest (view.h). Used while the box has at most about 4 cells per point.
// Hashed mode: only occupied cells are numbered, in order of first appearance in the input;
// the cell table maps a cell's coordinates to its number, and cell_slot[c] names the table slot
// holding cell c's coordinates.
// Filtered (the last build passed categories or masks): cat / mask hold each position's bits.
//
// Invariants (nb_grid_validate checks them all):
// - 0 <= n, dim in {2, 3}, cell finite and > 0, cm matches cell.
// - start[0] == 0, start is non-decreasing, start[ncells] == n.
// - within a cell, idx is strictly ascending; cell_of[idx[p]] is the cell holding position p,
//   which makes idx a permutation of 0..n-1.
// - pts[p] maps to its cell's coordinates under the cell math, within lo..hi.
// - hashed: every cell is non-empty, the table holds exactly the ncells cells and finds each at
//   its own coordinates, and cell_slot points back at it.
// - max_abs >= |every stored coordinate|.
struct nbGrid {
    nbAllocator alloc;
    int32_t dim;
    double desc_cell; // 0 = derive from the build radius

    int32_t n;
    bool hashed;
    bool filtered;
    bool had_bits; // some build passed categories or masks: their arrays follow the capacity
    nbiCellMath cm;
    double max_abs;
    int64_t lo[3], hi[3]; // the box of occupied cells (z = 0 in 2D)
    int64_t ext[3];       // hi - lo + 1 per axis (dense mode's dimensions)
    int32_t ncells;

    nbiBuf pts;       // double, n * dim
    nbiBuf idx;       // int32_t, n
    nbiBuf cell_of;   // int32_t, n: cell of input point i (kept for validate)
    nbiBuf start;     // int32_t, ncells + 2 (the extra slot serves the counting pass)
    nbiBuf cell_slot; // uint32_t, ncells (hashed mode)
    nbiBuf cat;       // uint32_t, n (filtered)
    nbiBuf mask;      // uint32_t, n (filtered)
    nbiCellTable table;

    // Periodic boxes (desc.period): `wrapped` when any axis has a period. wrap.period and
    // wrap.kper are set at create; wrap.m and wrap.pcm by each build. A wrapped grid is always
    // dense, with lo = 0 and ext = m on each periodic axis, and every stored coordinate in
    // [0, P) there.
    bool wrapped;
    nbiWrap wrap;
};

// The grid as the walkers see it.
nbiView nbi_grid_view(const nbGrid *g);

#endif
