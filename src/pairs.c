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
// Results flow through a sink: counting, writing into the caller's buffer (directly while it
// has room, so the common case copies nothing), or calling the visitor from a small scratch
// block. Pairs are written branch-free: every candidate is stored, and the write position only
// advances when d2 <= r2.
#include "grid_internal.h"

#include <string.h>

enum { NBI_SINK_COUNT, NBI_SINK_BUFFER, NBI_SINK_VISIT };
enum { NBI_SCRATCH = 1024 };

typedef struct nbiPairSink {
    int mode;
    bool stop;
    nbPair *out;
    int64_t cap;
    int64_t found; // pairs accepted so far; in buffer mode min(found, cap) are in out
    nbPairFn *fn;
    void *user;
    nbPair scratch[NBI_SCRATCH];
} nbiPairSink;

typedef struct nbiPairCtx {
    const double *pts;
    const int32_t *idx;
    double r2;
    nbiPairSink *sink;
} nbiPairCtx;

// Where the next `len` (<= NBI_SCRATCH) candidates may be written.
NBI_INLINE nbPair *nbi_reserve(nbiPairSink *s, int64_t len)
{
    if (s->mode == NBI_SINK_BUFFER && s->cap - s->found >= len) return s->out + s->found;
    return s->scratch;
}

// Accepts `m` pairs just written at `w` (from nbi_reserve).
static void nbi_commit(nbiPairSink *s, const nbPair *w, int64_t m)
{
    if (w != s->scratch) { // written in place
        s->found += m;
        return;
    }
    if (s->mode == NBI_SINK_BUFFER) {
        int64_t room = s->cap - s->found;
        if (room > 0) memcpy(s->out + s->found, w, (size_t)(room < m ? room : m) * sizeof(nbPair));
        s->found += m;
        return;
    }
    for (int64_t t = 0; t < m; t++) {
        s->found++;
        if (!s->fn(w[t].i, w[t].j, s->user)) {
            s->stop = true;
            return;
        }
    }
}

// Candidates (p, q) for p in [a0, a1) and q in [b0, b1), q > p when `self`. Writes at most
// (a1 - a0) * (b1 - b0) pairs into w; returns how many pass.
NBI_INLINE int64_t nbi_block_write(const nbiPairCtx *x, int dim, int32_t a0, int32_t a1,
                                   int32_t b0, int32_t b1, bool self, nbPair *w)
{
    const double *pts = x->pts;
    const int32_t *idx = x->idx;
    const double r2 = x->r2;
    int64_t m = 0;
    for (int32_t p = a0; p < a1; p++) {
        const int32_t ii = idx[p];
        const double xi = pts[(size_t)p * dim], yi = pts[(size_t)p * dim + 1];
        const double zi = dim == 3 ? pts[(size_t)p * dim + 2] : 0.0;
        for (int32_t q = self ? p + 1 : b0; q < b1; q++) {
            const double dx = xi - pts[(size_t)q * dim], dy = yi - pts[(size_t)q * dim + 1];
            double d2 = dx * dx + dy * dy;
            if (dim == 3) {
                const double dz = zi - pts[(size_t)q * dim + 2];
                d2 = d2 + dz * dz;
            }
            const int32_t jj = idx[q];
            w[m].i = ii < jj ? ii : jj;
            w[m].j = ii < jj ? jj : ii;
            m += d2 <= r2;
        }
    }
    return m;
}

NBI_INLINE int64_t nbi_block_count(const nbiPairCtx *x, int dim, int32_t a0, int32_t a1,
                                   int32_t b0, int32_t b1, bool self)
{
    const double *pts = x->pts;
    const double r2 = x->r2;
    int64_t m = 0;
    for (int32_t p = a0; p < a1; p++) {
        const double xi = pts[(size_t)p * dim], yi = pts[(size_t)p * dim + 1];
        const double zi = dim == 3 ? pts[(size_t)p * dim + 2] : 0.0;
        for (int32_t q = self ? p + 1 : b0; q < b1; q++) {
            const double dx = xi - pts[(size_t)q * dim], dy = yi - pts[(size_t)q * dim + 1];
            double d2 = dx * dx + dy * dy;
            if (dim == 3) {
                const double dz = zi - pts[(size_t)q * dim + 2];
                d2 = d2 + dz * dz;
            }
            m += d2 <= r2;
        }
    }
    return m;
}

// One block through the sink, split so no write ever exceeds the reserved room.
static void nbi_block_dim(const nbiPairCtx *x, int dim, int32_t a0, int32_t a1, int32_t b0,
                          int32_t b1, bool self)
{
    nbiPairSink *s = x->sink;
    if (a0 >= a1 || b0 >= b1 || s->stop) return;
    if (s->mode == NBI_SINK_COUNT) {
        s->found += dim == 2 ? nbi_block_count(x, 2, a0, a1, b0, b1, self)
                             : nbi_block_count(x, 3, a0, a1, b0, b1, self);
        return;
    }
    if ((int64_t)(a1 - a0) * (b1 - b0) <= NBI_SCRATCH) {
        nbPair *w = nbi_reserve(s, (int64_t)(a1 - a0) * (b1 - b0));
        int64_t m = dim == 2 ? nbi_block_write(x, 2, a0, a1, b0, b1, self, w)
                             : nbi_block_write(x, 3, a0, a1, b0, b1, self, w);
        nbi_commit(s, w, m);
        return;
    }
    for (int32_t p = a0; p < a1 && !s->stop; p++) { // a big block: one row of q at a time
        for (int32_t q0 = self ? p + 1 : b0; q0 < b1 && !s->stop; q0 += NBI_SCRATCH) {
            int32_t q1 = b1 - q0 > NBI_SCRATCH ? q0 + NBI_SCRATCH : b1;
            nbPair *w = nbi_reserve(s, q1 - q0);
            int64_t m = dim == 2 ? nbi_block_write(x, 2, p, p + 1, q0, q1, false, w)
                                 : nbi_block_write(x, 3, p, p + 1, q0, q1, false, w);
            nbi_commit(s, w, m);
        }
    }
}

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
static void nbi_pairs_dense(const nbGrid *g, const nbiPairCtx *x, int64_t k, int32_t u0,
                            int32_t u1)
{
    const int32_t *start = nbi_grid_start(g);
    const int dim = g->dim;
    const int64_t e0 = g->ext[0], e1 = g->ext[1], e2 = g->ext[2], e01 = e0 * e1;
    const int64_t kx = nbi_min64(k, e0 - 1), ky = nbi_min64(k, e1 - 1), kz = nbi_min64(k, e2 - 1);
    int64_t cx = u0 % e0, cy = (u0 / e0) % e1, cz = u0 / e01;
    for (int32_t c = u0; c < u1 && !x->sink->stop; c++) {
        const int32_t a0 = start[c], a1 = start[c + 1];
        if (a0 < a1) {
            const int64_t xl = nbi_max64(cx - kx, 0), xr = nbi_min64(cx + kx, e0 - 1);
            const int64_t row0 = c - cx; // this row's first cell
            nbi_block_dim(x, dim, a0, a1, a0, start[row0 + xr + 1], true);
            for (int64_t dy = 1; dy <= ky && cy + dy < e1; dy++) {
                const int64_t row = row0 + dy * e0;
                nbi_block_dim(x, dim, a0, a1, start[row + xl], start[row + xr + 1], false);
            }
            for (int64_t dz = 1; dz <= kz && cz + dz < e2; dz++) {
                for (int64_t dy = nbi_max64(-ky, -cy); dy <= ky && cy + dy < e1; dy++) {
                    const int64_t row = row0 + dy * e0 + dz * e01;
                    nbi_block_dim(x, dim, a0, a1, start[row + xl], start[row + xr + 1], false);
                }
            }
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
    for (int32_t c = u0; c < u1 && !x->sink->stop; c++) {
        const int32_t a0 = start[c], a1 = start[c + 1];
        const int64_t *key = keys + (size_t)c * 3;
        nbi_block_dim(x, dim, a0, a1, a0, a1, true);
        if (!stencil) { // every later occupied cell within k rings
            for (int32_t b = c + 1; b < g->ncells && !x->sink->stop; b++) {
                const int64_t *kb = keys + (size_t)b * 3;
                bool near = true;
                for (int a = 0; a < 3; a++) {
                    const int64_t d = kb[a] - key[a];
                    near &= d <= k && -d <= k;
                }
                if (near) nbi_block_dim(x, dim, a0, a1, start[b], start[b + 1], false);
            }
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
                    if (b >= 0) nbi_block_dim(x, dim, a0, a1, start[b], start[b + 1], false);
                }
            }
        }
    }
}

// Checks the arguments shared by every pairs entry point and runs cells [u0, u1).
static nbStatus nbi_pairs_run(const nbGrid *g, double radius, int32_t u0, int32_t u1,
                              nbiPairSink *s)
{
    if (g->n == 0 || u0 >= u1) return NB_OK;
    const double rings = nbi_rings(nbi_reach(radius), g->cm.cell, g->max_abs);
    const int64_t k = rings < 0x1p62 ? (int64_t)rings : (int64_t)1 << 62;
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
    s.mode = NBI_SINK_BUFFER;
    s.stop = false;
    s.out = out;
    s.cap = capacity;
    s.found = 0;
    s.fn = NULL;
    s.user = NULL;
    nbi_pairs_run(grid, radius, 0, grid->n > 0 ? grid->ncells : 0, &s);
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
    s.mode = NBI_SINK_COUNT;
    s.stop = false;
    s.out = NULL;
    s.cap = 0;
    s.found = 0;
    s.fn = NULL;
    s.user = NULL;
    nbi_pairs_run(grid, radius, 0, grid->n > 0 ? grid->ncells : 0, &s);
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
    s.mode = NBI_SINK_VISIT;
    s.stop = false;
    s.out = NULL;
    s.cap = 0;
    s.found = 0;
    s.fn = visit;
    s.user = user;
    return nbi_pairs_run(grid, radius, unit_begin, unit_end, &s);
}

nbStatus nb_grid_visit_pairs(const nbGrid *grid, double radius, nbPairFn *visit, void *user)
{
    if (grid == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    return nb_grid_visit_pairs_range(grid, radius, 0, nb_grid_pair_units(grid), visit, user);
}
