// SPDX-License-Identifier: MIT
// The naive baseline: a "list per cell" uniform grid written the way guides on spatial partitioning
// warn against. Each frame it frees the previous grid, callocs a dense array of cells over the
// bounding box, and push_backs every point index into its cell's own malloc'd growable vector
// (realloc on doubling). The pair pass visits, for every occupied cell, all 3^d neighbour
// cells (including itself) and keeps j > i to deduplicate, reading coordinates from the
// caller's array through the index. Nothing here is tuned; it is the common first version.
#include "naive_grid.h"

#include <stdio.h>
#include <stdlib.h>

void naive_free(NaiveGrid *g)
{
    if (g->cells == NULL) return;
    int64_t total = g->n[0] * g->n[1] * g->n[2];
    for (int64_t c = 0; c < total; c++) free(g->cells[c].items);
    free(g->cells);
    g->cells = NULL;
}

static int64_t naive_axis_cell(const NaiveGrid *g, double v, int d)
{
    int64_t c = (int64_t)((v - g->lo[d]) * g->inv_cell);
    return c < g->n[d] - 1 ? c : g->n[d] - 1;
}

void naive_build(NaiveGrid *g, const double *p, int32_t n, int dim, double radius)
{
    naive_free(g);
    g->dim = dim;
    double hi[3] = {0.0, 0.0, 0.0};
    for (int d = 0; d < 3; d++) g->lo[d] = 0.0;
    for (int d = 0; d < dim; d++) g->lo[d] = hi[d] = p[d];
    for (int32_t i = 0; i < n; i++)
        for (int d = 0; d < dim; d++) {
            double v = p[(size_t)i * (size_t)dim + (size_t)d];
            if (v < g->lo[d]) g->lo[d] = v;
            if (v > hi[d]) hi[d] = v;
        }
    // Cells a hair wider than r, so that two points within r always land in adjacent cells
    // despite rounding in (v - lo) / cell: the baseline must be exact to be compared.
    double cell = radius * (1.0 + 1e-9);
    g->inv_cell = 1.0 / cell;
    for (int d = 0; d < 3; d++)
        g->n[d] = d < dim ? (int64_t)((hi[d] - g->lo[d]) * g->inv_cell) + 1 : 1;
    int64_t total = g->n[0] * g->n[1] * g->n[2];
    g->cells = calloc((size_t)total, sizeof(Cell));
    if (g->cells == NULL) {
        fprintf(stderr, "bench_naive: out of memory (%lld cells)\n", (long long)total);
        exit(1);
    }
    for (int32_t i = 0; i < n; i++) {
        const double *q = p + (size_t)i * (size_t)dim;
        int64_t c = naive_axis_cell(g, q[0], 0) +
                    g->n[0] * (naive_axis_cell(g, q[1], 1) +
                               (dim == 3 ? g->n[1] * naive_axis_cell(g, q[2], 2) : 0));
        Cell *cl = &g->cells[c];
        if (cl->count == cl->cap) {
            cl->cap = cl->cap ? cl->cap * 2 : 4;
            cl->items = realloc(cl->items, (size_t)cl->cap * sizeof(int32_t));
            if (cl->items == NULL) exit(1);
        }
        cl->items[cl->count++] = i;
    }
}

int64_t naive_pairs(const NaiveGrid *g, const double *p, double radius, NaivePair *out, int64_t cap)
{
    const double r2 = radius * radius;
    const int dim = g->dim;
    const int64_t nx = g->n[0], ny = g->n[1], nz = g->n[2];
    int64_t found = 0;
    for (int64_t cz = 0; cz < nz; cz++)
        for (int64_t cy = 0; cy < ny; cy++)
            for (int64_t cx = 0; cx < nx; cx++) {
                const Cell *home = &g->cells[cx + nx * (cy + ny * cz)];
                if (home->count == 0) continue;
                for (int64_t oz = cz - (dim == 3); oz <= cz + (dim == 3); oz++)
                    for (int64_t oy = cy - 1; oy <= cy + 1; oy++)
                        for (int64_t ox = cx - 1; ox <= cx + 1; ox++) {
                            if (ox < 0 || oy < 0 || oz < 0 || ox >= nx || oy >= ny || oz >= nz)
                                continue;
                            const Cell *nb = &g->cells[ox + nx * (oy + ny * oz)];
                            for (int32_t a = 0; a < home->count; a++) {
                                int32_t i = home->items[a];
                                const double *pi = p + (size_t)i * (size_t)dim;
                                for (int32_t b = 0; b < nb->count; b++) {
                                    int32_t j = nb->items[b];
                                    if (j <= i) continue;
                                    const double *pj = p + (size_t)j * (size_t)dim;
                                    double dx = pj[0] - pi[0];
                                    double dy = pj[1] - pi[1];
                                    double d2 = dx * dx + dy * dy;
                                    if (dim == 3) {
                                        double dz = pj[2] - pi[2];
                                        d2 += dz * dz;
                                    }
                                    if (d2 <= r2) {
                                        if (found < cap) {
                                            out[found].i = i;
                                            out[found].j = j;
                                        }
                                        found++;
                                    }
                                }
                            }
                        }
            }
    return found;
}
