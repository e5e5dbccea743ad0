// SPDX-License-Identifier: MIT
// The naive baseline grid, shared by bench_naive (timing) and bench_nearby --callgrind
// (instruction counts). See naive_grid.c.
#ifndef NB_BENCH_NAIVE_GRID_H
#define NB_BENCH_NAIVE_GRID_H

#include <stdint.h>

typedef struct Cell {
    int32_t *items;
    int32_t count;
    int32_t cap;
} Cell;

typedef struct NaiveGrid {
    Cell *cells;
    int64_t n[3]; // cells per axis (n[2] == 1 in 2D)
    double lo[3];
    double inv_cell;
    int dim;
} NaiveGrid;

typedef struct NaivePair {
    int32_t i;
    int32_t j;
} NaivePair;

/// Frees the previous frame's cells and lists, then bins `n` points of `dim` doubles into a
/// fresh calloc'd grid of cells of edge `radius` with one malloc'd growable vector per cell.
void naive_build(NaiveGrid *g, const double *p, int32_t n, int dim, double radius);

/// Frees every list and the cell array. A zeroed or already freed grid is a no-op.
void naive_free(NaiveGrid *g);

/// All pairs i < j within radius (d2 <= r*r): writes up to `cap` to `out` (NULL with cap 0:
/// count only) and returns the total.
int64_t naive_pairs(const NaiveGrid *g, const double *p, double radius, NaivePair *out,
                    int64_t cap);

#endif
