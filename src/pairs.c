// SPDX-License-Identifier: MIT
// All pairs within r, each unordered pair exactly once, by the half-neighbour stencil.
//
// Every cell A is paired with itself (positions after i only) and with the neighbour cells at a
// lexicographically positive offset (z, then y, then x): the other half of the stencil is some
// other cell's positive half, so each unordered pair of cells is visited once and no sort or
// dedup pass is needed. With k rings the offsets span [-k, k] per axis (k = ceil(reach / cell)
// plus the rounding margin of cell.c).
//
// Dense mode walks rows: cells adjacent in x are adjacent in memory, so "own cell after i plus
// the k cells to its right" is one contiguous range, and each neighbour row x-k..x+k is another.
// In 2D with k = 1 that is two ranges per point. Hashed mode looks each neighbour cell up; when
// the stencil has more cells than the grid has occupied cells, it instead pairs cell A with
// every later cell B within k rings (each unordered cell pair still once).
//
// The kernels that test a cell's points against those runs, and the sinks the pairs go to,
// live in pair_kernels.c, shared with the structures to come.
#include "grid_internal.h"
#include "pair_kernels.h"

static int64_t nbi_min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t nbi_max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

// Dense mode, cells [u0, u1): each non-empty cell against its own row to the right and the
// k rows above it (2D), or the positive half of the (2k+1)^3 block in 3D.
static void nbi_pairs_dense(const nbGrid *g, const nbiPairCtx *x, int64_t k, int32_t u0, int32_t u1)
{
    const int32_t *start = nbi_grid_start(g);
    const int dim = g->dim;
    const int64_t e0 = g->ext[0], e1 = g->ext[1], e2 = g->ext[2], e01 = e0 * e1;
    const int64_t kx = nbi_min64(k, e0 - 1), ky = nbi_min64(k, e1 - 1), kz = nbi_min64(k, e2 - 1);
    int64_t cx = u0 % e0, cy = (u0 / e0) % e1, cz = u0 / e01;
    nbiSpanList l;
    l.x = x;
    l.dim = dim;
    for (int32_t c = u0; c < u1 && !x->sink->stop; c++) {
        const int32_t a0 = start[c], a1 = start[c + 1];
        if (a0 < a1) {
            const int64_t xl = nbi_max64(cx - kx, 0), xr = nbi_min64(cx + kx, e0 - 1);
            const int64_t row0 = c - cx; // this row's first cell
            l.a0 = a0;
            l.a1 = a1;
            l.self_end = start[row0 + xr + 1]; // own cell after p, then the cells to its right
            l.ns = 0;
            for (int64_t dy = 1; dy <= ky && cy + dy < e1; dy++) {
                const int64_t row = row0 + dy * e0;
                nbi_spans_add(&l, start[row + xl], start[row + xr + 1]);
            }
            for (int64_t dz = 1; dz <= kz && cz + dz < e2; dz++) {
                for (int64_t dy = nbi_max64(-ky, -cy); dy <= ky && cy + dy < e1; dy++) {
                    const int64_t row = row0 + dy * e0 + dz * e01;
                    nbi_spans_add(&l, start[row + xl], start[row + xr + 1]);
                }
            }
            nbi_spans_flush(&l);
        }
        if (++cx == e0) {
            cx = 0;
            if (++cy == e1) {
                cy = 0;
                cz++;
            }
        }
    }
}

// Hashed mode, cells [u0, u1).
static void nbi_pairs_hashed(const nbGrid *g, const nbiPairCtx *x, int64_t k, int32_t u0,
                             int32_t u1)
{
    const int32_t *start = nbi_grid_start(g);
    const int64_t *keys = (const int64_t *)g->keys.ptr;
    const int dim = g->dim;
    const int64_t kz = dim == 3 ? k : 0;
    const double side = 2.0 * (double)k + 1.0;
    const bool stencil = (dim == 3 ? side * side * side : side * side) <= (double)g->ncells;
    nbiSpanList l;
    l.x = x;
    l.dim = dim;
    for (int32_t c = u0; c < u1 && !x->sink->stop; c++) {
        const int32_t a0 = start[c], a1 = start[c + 1];
        const int64_t *key = keys + (size_t)c * 3;
        l.a0 = a0;
        l.a1 = a1;
        l.self_end = a1;
        l.ns = 0;
        if (!stencil) { // every later occupied cell within k rings
            for (int32_t b = c + 1; b < g->ncells && !x->sink->stop; b++) {
                const int64_t *kb = keys + (size_t)b * 3;
                bool near = true;
                for (int a = 0; a < 3; a++) {
                    const int64_t d = kb[a] - key[a];
                    near &= d <= k && -d <= k;
                }
                if (near) nbi_spans_add(&l, start[b], start[b + 1]);
            }
            nbi_spans_flush(&l);
            continue;
        }
        // Positive offsets (dz, dy, dx) > 0 lexicographically, clipped to the occupied box.
        for (int64_t dz = 0; dz <= kz && !x->sink->stop; dz++) {
            if (key[2] + dz > g->hi[2]) break;
            const int64_t ylo = dz > 0 ? nbi_max64(-k, g->lo[1] - key[1]) : 0;
            for (int64_t dy = ylo; dy <= k && key[1] + dy <= g->hi[1]; dy++) {
                const int64_t xlo = (dz > 0 || dy > 0) ? nbi_max64(-k, g->lo[0] - key[0]) : 1;
                for (int64_t dx = xlo; dx <= k && key[0] + dx <= g->hi[0]; dx++) {
                    const int32_t b = nbi_grid_lookup(g, key[0] + dx, key[1] + dy, key[2] + dz);
                    if (b >= 0) nbi_spans_add(&l, start[b], start[b + 1]);
                }
            }
        }
        nbi_spans_flush(&l);
    }
}

// Runs cells [u0, u1) at `radius` (already checked).
//
// Cost guard: in hashed mode a stencil costs one lookup per cell of it whether or not the cell
// is occupied, and the fallback pairs every cell with every later one, so a radius spanning
// very many cells of a sparse grid (a cell much smaller than the radius) would cost
// ncells * min(ncells, (2k+1)^d) however few pairs it finds. Past a budget of 64 N + 2^26 such
// steps the call returns NB_ERR_OUT_OF_RANGE (STYLE.md: a radius covering an absurd number of
// cells) instead of running for minutes; rebuilding with a cell near the radius fixes it. Dense
// mode needs no guard: its cells are at least a quarter occupied, so the candidates, which any
// method must test, dominate its cost.
static nbStatus nbi_pairs_run(const nbGrid *g, double radius, int32_t u0, int32_t u1,
                              nbiPairSink *s)
{
    if (g->n == 0) return NB_OK;
    const double rings = nbi_rings(nbi_reach(radius), g->cm.cell, g->max_abs);
    const int64_t k = rings < 0x1p63 ? (int64_t)rings : INT64_MAX;
    if (g->hashed) {
        const double side = 2.0 * rings + 1.0, cells = (double)g->ncells;
        const double stencil = g->dim == 3 ? side * side * side : side * side;
        const double work = cells * (stencil < cells ? stencil : cells);
        if (work > 64.0 * (double)g->n + 0x1p26) return NB_ERR_OUT_OF_RANGE;
    }
    if (u0 >= u1) return NB_OK;
    nbiPairCtx x = {nbi_grid_pts(g), nbi_grid_idx(g), radius * radius, s};
    if (g->hashed)
        nbi_pairs_hashed(g, &x, k, u0, u1);
    else
        nbi_pairs_dense(g, &x, k, u0, u1);
    return NB_OK;
}

static nbStatus nbi_check_radius(double radius)
{
    if (!isfinite(radius)) return NB_ERR_NOT_FINITE;
    if (radius < 0.0) return NB_ERR_OUT_OF_RANGE;
    return NB_OK;
}

nbStatus nb_grid_pairs(const nbGrid *grid, double radius, nbPair *out, int64_t capacity,
                       int64_t *found)
{
    if (grid == NULL || found == NULL || (out == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    *found = 0;
    nbStatus st = nbi_check_radius(radius);
    if (st != NB_OK) return st;
    if (capacity < 0) return NB_ERR_OUT_OF_RANGE;
    nbiPairSink s;
    nbi_pair_sink_init(&s, NBI_SINK_BUFFER, out, capacity, NULL, NULL);
    st = nbi_pairs_run(grid, radius, 0, grid->n > 0 ? grid->ncells : 0, &s);
    if (st != NB_OK) return st;
    *found = s.found;
    return s.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

nbStatus nb_grid_count_pairs(const nbGrid *grid, double radius, int64_t *count)
{
    if (grid == NULL || count == NULL) return NB_ERR_NULL_ARG;
    *count = 0;
    nbStatus st = nbi_check_radius(radius);
    if (st != NB_OK) return st;
    nbiPairSink s;
    nbi_pair_sink_init(&s, NBI_SINK_COUNT, NULL, 0, NULL, NULL);
    st = nbi_pairs_run(grid, radius, 0, grid->n > 0 ? grid->ncells : 0, &s);
    if (st != NB_OK) return st;
    *count = s.found;
    return NB_OK;
}

int32_t nb_grid_pair_units(const nbGrid *grid)
{
    return grid == NULL || grid->n == 0 ? 0 : grid->ncells;
}

nbStatus nb_grid_visit_pairs_range(const nbGrid *grid, double radius, int32_t unit_begin,
                                   int32_t unit_end, nbPairFn *visit, void *user)
{
    if (grid == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbStatus st = nbi_check_radius(radius);
    if (st != NB_OK) return st;
    const int32_t units = nb_grid_pair_units(grid);
    if (unit_begin < 0 || unit_end < unit_begin || unit_end > units) return NB_ERR_OUT_OF_RANGE;
    nbiPairSink s;
    nbi_pair_sink_init(&s, NBI_SINK_VISIT, NULL, 0, visit, user);
    return nbi_pairs_run(grid, radius, unit_begin, unit_end, &s);
}

nbStatus nb_grid_visit_pairs(const nbGrid *grid, double radius, nbPairFn *visit, void *user)
{
    if (grid == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    return nb_grid_visit_pairs_range(grid, radius, 0, nb_grid_pair_units(grid), visit, user);
}
