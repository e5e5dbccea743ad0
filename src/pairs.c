// SPDX-License-Identifier: MIT
// The pair walkers over a cell-sorted view (view.h): all pairs by the half-neighbour stencil,
// and set A against set B. They choose which runs of candidates each cell meets; the kernels in
// pair_kernels.h scan them.
//
// All pairs: every cell A is paired with itself (positions after i only) and with the neighbour
// cells at a lexicographically positive offset (z, then y, then x): the other half of the
// stencil is some other cell's positive half, so each unordered pair of cells is visited once
// and no sort or dedup pass is needed. With k rings the offsets span [-k, k] per axis
// (k = ceil(reach / cell) plus the rounding margin of cell.c).
//
// Dense views walk rows: cells adjacent in x are adjacent in memory, so "own cell after i plus
// the k cells to its right" is one contiguous run, and each neighbour row x-k..x+k is another.
// In 2D with k = 1 that is two runs per point. Ranked views walk the same rows, their ends found
// by rank, and visit only the occupied cells. Hashed views look each neighbour cell up; when the
// stencil has more cells than the view has occupied cells, a cell is instead paired with every
// later cell within k rings (each unordered cell pair still once).
//
// Cross pairs: each cell of A meets every cell of B that the box around A's points, widened by
// the reach, covers (the same monotone cell map the range queries rely on, so no margin is
// needed and the two views may have different cell sizes). Each (a, b) is met once: a lives in
// one cell of A, b in one cell of B.
#include "pair_kernels.h"
#include "view.h"

#include <string.h>

#if defined(NBI_AVX2)
int nbi_avx2_off = 0;
#if defined(NBI_AVX512)
int nbi_avx512_off = 0;
#endif
#endif

nbiPairKernel *const nbi_pair_kernels[16] = {
    nbi_pairs_2,  nbi_pairs_2x,  nbi_pairs_2f,  nbi_pairs_2fx, nbi_pairs_3,   nbi_pairs_3x,
    nbi_pairs_3f, nbi_pairs_3fx, nbi_pairs_2w,  nbi_pairs_2xw, nbi_pairs_2fw, nbi_pairs_2fxw,
    nbi_pairs_3w, nbi_pairs_3xw, nbi_pairs_3fw, nbi_pairs_3fxw};

#if defined(NBI_AVX2)
nbiPairKernel *const nbi_pair_kernels_wide[2][2][4] = {
    {{nbi_pairs_2_avx2, nbi_pairs_2x_avx2, nbi_pairs_3_avx2, nbi_pairs_3x_avx2},
     {nbi_pairs_2w_avx2, nbi_pairs_2xw_avx2, nbi_pairs_3w_avx2, nbi_pairs_3xw_avx2}},
#if defined(NBI_AVX512)
    {{nbi_pairs_2_avx512, nbi_pairs_2x_avx512, nbi_pairs_3_avx512, nbi_pairs_3x_avx512},
     {nbi_pairs_2w_avx512, nbi_pairs_2xw_avx512, nbi_pairs_3w_avx512, nbi_pairs_3xw_avx512}},
#else
    {{nbi_pairs_2_avx2, nbi_pairs_2x_avx2, nbi_pairs_3_avx2, nbi_pairs_3x_avx2},
     {nbi_pairs_2w_avx2, nbi_pairs_2xw_avx2, nbi_pairs_3w_avx2, nbi_pairs_3xw_avx2}},
#endif
};
#endif

static int64_t nbi_min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t nbi_max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

// The first position of box cell b in a dense (ranked false) or ranked view: nbi_view_box_start
// with the mode known where the walker is compiled.
NBI_INLINE int32_t nbi_row_start(const nbiView *v, bool ranked, int64_t b)
{
    return v->start[ranked ? (int64_t)nbi_view_rank(v, b) : b];
}

// One non-empty cell of a dense or ranked view, box cell b at (cx, cy, cz) holding positions
// [a0, a1): against its own row to the right and the k rows above it (2D), or the positive half
// of the (2k+1)^3 block in 3D.
NBI_INLINE void nbi_pairs_rows_cell(const nbiView *v, bool ranked, nbiSpanList *l,
                                    const int64_t kk[3], int64_t b, int64_t cx, int64_t cy,
                                    int64_t cz, int32_t a0, int32_t a1)
{
    const int64_t e0 = v->ext[0], e1 = v->ext[1], e2 = v->ext[2], e01 = e0 * e1;
    const int64_t kx = kk[0], ky = kk[1], kz = kk[2];
    const int64_t xl = nbi_max64(cx - kx, 0), xr = nbi_min64(cx + kx, e0 - 1);
    const int64_t row0 = b - cx; // this row's first cell
    l->a0 = a0;
    l->a1 = a1;
    l->self_end = nbi_row_start(v, ranked, row0 + xr + 1); // own cell after p, then its right
    l->ns = 0;
    for (int64_t dy = 1; dy <= ky && cy + dy < e1; dy++) {
        const int64_t row = row0 + dy * e0;
        nbi_spans_add(l, nbi_row_start(v, ranked, row + xl),
                      nbi_row_start(v, ranked, row + xr + 1));
    }
    for (int64_t dz = 1; dz <= kz && cz + dz < e2; dz++) {
        for (int64_t dy = nbi_max64(-ky, -cy); dy <= ky && cy + dy < e1; dy++) {
            const int64_t row = row0 + dy * e0 + dz * e01;
            nbi_spans_add(l, nbi_row_start(v, ranked, row + xl),
                          nbi_row_start(v, ranked, row + xr + 1));
        }
    }
    nbi_spans_flush(l);
}

// Rings per axis, clipped to the box.
static void nbi_rows_rings(const nbiView *v, int64_t k, int64_t kk[3])
{
    for (int a = 0; a < 3; a++) kk[a] = nbi_min64(k, v->ext[a] - 1);
}

// Dense view, cells [u0, u1): each non-empty cell by nbi_pairs_rows_cell.
static void nbi_pairs_dense(const nbiView *v, const nbiPairCtx *x, int64_t k, int32_t u0,
                            int32_t u1)
{
    const int32_t *start = v->start;
    const int64_t e0 = v->ext[0], e1 = v->ext[1], e01 = e0 * e1;
    int64_t kk[3];
    nbi_rows_rings(v, k, kk);
    int64_t cx = u0 % e0, cy = (u0 / e0) % e1, cz = u0 / e01;
    nbiSpanList l;
    nbi_span_list_init(&l, x, v->dim, false);
    for (int32_t c = u0; c < u1 && !x->sink->stop; c++) {
        const int32_t a0 = start[c], a1 = start[c + 1];
        if (a0 < a1) nbi_pairs_rows_cell(v, false, &l, kk, c, cx, cy, cz, a0, a1);
        if (++cx == e0) {
            cx = 0;
            if (++cy == e1) {
                cy = 0;
                cz++;
            }
        }
    }
}

// Ranked view, cells [u0, u1) (every one occupied): as dense, each cell found in the box by its
// box number, and each row's ends by rank.
static void nbi_pairs_ranked(const nbiView *v, const nbiPairCtx *x, int64_t k, int32_t u0,
                             int32_t u1)
{
    const int32_t *start = v->start;
    const int64_t e0 = v->ext[0], e1 = v->ext[1];
    int64_t kk[3];
    nbi_rows_rings(v, k, kk);
    nbiSpanList l;
    nbi_span_list_init(&l, x, v->dim, false);
    for (int32_t c = u0; c < u1 && !x->sink->stop; c++) {
        const int64_t b = v->cell_box[c], row = b / e0;
        nbi_pairs_rows_cell(v, true, &l, kk, b, b - row * e0, row % e1, row / e1, start[c],
                            start[c + 1]);
    }
}

// The second pass of a hashed view's stencil: the n cells at[] (their hashes in hash[]) looked
// up, each one found added to the span list. Returns 0, the cells left.
static int nbi_pairs_probe(const nbiView *v, nbiSpanList *l, int64_t at[][3], const uint64_t *hash,
                           int n)
{
    for (int t = 0; t < n; t++) {
        const int32_t b = nbi_ctab_find_hashed(v->table, at[t][0], at[t][1], at[t][2], hash[t]);
        if (b < 0) continue;
        nbi_spans_add(l, v->start[b], nbi_view_end(v, b));
    }
    return 0;
}

// Hashed view, cells [u0, u1).
static void nbi_pairs_hashed(const nbiView *v, const nbiPairCtx *x, int64_t k, int32_t u0,
                             int32_t u1)
{
    const int32_t *start = v->start;
    const int64_t kz = v->dim == 3 ? k : 0;
    const double side = 2.0 * (double)k + 1.0;
    const bool stencil = (v->dim == 3 ? side * side * side : side * side) <= (double)v->ncells;
    nbi_ctab_ready(v->table);
    nbiSpanList l;
    nbi_span_list_init(&l, x, v->dim, false);
    for (int32_t c = u0; c < u1 && !x->sink->stop; c++) {
        if (start[c] == nbi_view_end(v, c)) continue; // an empty cell (a free id of a hash)
        int64_t key[3];
        nbi_view_cell_key(v, c, key);
        l.a0 = start[c];
        l.a1 = l.self_end = nbi_view_end(v, c);
        l.ns = 0;
        if (!stencil) { // every later occupied cell within k rings
            for (int32_t b = c + 1; b < v->ncells && !x->sink->stop; b++) {
                int64_t kb[3];
                nbi_view_cell_key(v, b, kb);
                bool near = true;
                for (int a = 0; a < 3; a++) {
                    const int64_t d = kb[a] - key[a];
                    near &= d <= k && -d <= k;
                }
                if (near) nbi_spans_add(&l, start[b], nbi_view_end(v, b));
            }
            nbi_spans_flush(&l);
            continue;
        }
        // Positive offsets (dz, dy, dx) > 0 lexicographically, clipped to the occupied box, in
        // two passes of up to NBI_LOOKUPS cells: the cells the occupancy filter may hold, each
        // slot asked of the memory at once, then the probes, so that the misses overlap.
        int64_t at[NBI_LOOKUPS][3];
        uint64_t hash[NBI_LOOKUPS];
        int n = 0;
        for (int64_t dz = 0; dz <= kz && !x->sink->stop; dz++) {
            if (key[2] + dz > v->hi[2]) break;
            const int64_t ylo = dz > 0 ? nbi_max64(-k, v->lo[1] - key[1]) : 0;
            for (int64_t dy = ylo; dy <= k && key[1] + dy <= v->hi[1]; dy++) {
                const int64_t xlo = (dz > 0 || dy > 0) ? nbi_max64(-k, v->lo[0] - key[0]) : 1;
                const uint64_t row = nbi_cell_hash_row(key[1] + dy, key[2] + dz);
                for (int64_t dx = xlo; dx <= k && key[0] + dx <= v->hi[0]; dx++) {
                    const uint64_t h = nbi_cell_hash_x(row, key[0] + dx);
                    if (!nbi_view_may_hold(v, h)) continue;
                    if (n == NBI_LOOKUPS) n = nbi_pairs_probe(v, &l, at, hash, n);
                    at[n][0] = key[0] + dx;
                    at[n][1] = key[1] + dy;
                    at[n][2] = key[2] + dz;
                    hash[n] = h;
                    nbi_ctab_prefetch(v->table, h, false);
                    n++;
                }
            }
        }
        nbi_pairs_probe(v, &l, at, hash, n);
        nbi_spans_flush(&l);
    }
}

// ---- hashed views in Z order: the stencil found in the cell's block, not the table ----
// With cell_code (and no shift, or with the low codes of a box wider than the codes reach) the
// cells are in the Z order of their exact offsets, so every aligned block of 2^L cells a side
// (L = 5 in 3D, 7 in 2D: 2^15 or 2^14 box cells) is one run of cell numbers. Walking a
// block, its cells' local codes (the low dim * L bits of their codes) are set in a bitmap with
// the cells before each word counted: a stencil cell inside the block is then a bit test and a
// popcount in a few kilobytes that stay in L1, where the table costs a miss a probe. Only the
// stencil cells outside the block (a few per cent on a 32-cell side) are looked up in the table,
// as nbi_pairs_hashed does. Cells and their candidates come in the same order as there, so the
// pairs are the same, in the same order. Only the grid's views have codes, and they keep no slack
// between cells (view.h: end is NULL), so cell c ends at start[c + 1].
enum { NBI_ZB_CELLS = 1 << 15, NBI_ZB_XYZ = 1 << 12 };

typedef struct nbiZBlock {
    uint64_t occ[NBI_ZB_CELLS / 64]; // bit = local code, set while the block is walked
    int32_t rank[NBI_ZB_CELLS / 64]; // the block's cells before each word (set words only)
    uint32_t rows[32 * 32 + 34];     // 3D: bit lx of row (ly, lz) at lz * 32 + ly (34 more: 0)
    uint32_t unspread[64];           // 6 bits of a 3D local code: 2 an axis, x | y << 8 | z << 16
    uint32_t out[32];                // 3D: nbi_half_out by faces
    uint64_t spread[128];            // each local coordinate's bits spread (nbi_spread2 / 3)
    int32_t id[NBI_LOOKUPS];         // the stencil cells met, in order: a cell, or -1 (probe)
    int64_t at[NBI_LOOKUPS][3];      // with -1: the cell's coordinates
    uint64_t hash[NBI_LOOKUPS];      // and its hash
    uint32_t xyz[NBI_ZB_XYZ];        // 3D: the first cells' nbi_zblock_xyz, while set in the bitmap
} nbiZBlock;

// The Z order of a view's exact offsets: a cell's code, shifted up by ds = dim * code_shift bits,
// and its low code (view.h, nbi_code_low: 0 without a shift) make one code wider than a word.
// Its low lbits bits are the cell's local code in its block, and two cells share a block when
// they agree above those: the code above its low ha bits, the low code above its low lb bits.
typedef struct nbiZOrd {
    const uint64_t *code, *low; // low: NULL without a shift
    int ds, ha, lb;
    uint64_t lmask;
    uint64_t cm[3], am[3]; // 3D: each axis's bits of a code and of a low code (nbi_zord_step)
} nbiZOrd;

static nbiZOrd nbi_zord(const nbiView *v, int lbits)
{
    nbiZOrd z;
    z.code = v->cell_code;
    z.low = v->code_shift > 0 ? v->cell_low : NULL;
    z.ds = z.low != NULL ? v->dim * v->code_shift : 0;
    z.ha = lbits > z.ds ? lbits - z.ds : 0;
    z.lb = z.ds < lbits ? z.ds : lbits; // below ds bits, the low code's bits are all local
    z.lmask = ((uint64_t)1 << lbits) - 1;
    for (int a = 0; a < 3; a++) {
        const int shift = z.low != NULL ? v->code_shift : 0;
        z.cm[a] = v->dim == 3 ? nbi_spread3(0x1FFFFF) << a : 0;
        z.am[a] = v->dim == 3 ? nbi_spread3(((uint64_t)1 << shift) - 1) << a : 0;
    }
    return z;
}

// `wide`: the view has low codes (a constant where the walk is specialised on it).
NBI_INLINE uint64_t nbi_zord_local(const nbiZOrd *z, int32_t c, bool wide)
{
    return wide ? (z->code[c] << z->ds | z->low[c]) & z->lmask : z->code[c] & z->lmask;
}

// The first cell of [b, e) whose Z order key (code, low code) is not below (kc, kl).
NBI_INLINE int32_t nbi_zord_lower(const nbiZOrd *z, int32_t b, int32_t e, uint64_t kc, uint64_t kl,
                                  bool wide)
{
    while (b < e) {
        const int32_t m = b + (int32_t)((uint32_t)(e - b) >> 1);
        if (z->code[m] < kc || (wide && z->code[m] == kc && z->low[m] < kl))
            b = m + 1;
        else
            e = m;
    }
    return b;
}

NBI_INLINE bool nbi_zord_same_block(const nbiZOrd *z, int32_t c, int32_t d, bool wide)
{
    if (!wide) return z->code[c] >> z->ha == z->code[d] >> z->ha;
    return z->code[c] >> z->ha == z->code[d] >> z->ha && z->low[c] >> z->lb == z->low[d] >> z->lb;
}

// nbi_spans_add for the Z-order walk, whose cells adjacent in x are often adjacent in memory: a
// run that continues the last one (or the own run) extends it, the same candidates in the same
// order in one span fewer. (The row walkers' runs seldom touch, and the test would cost them.)
NBI_INLINE void nbi_spans_add_merged(nbiSpanList *l, int32_t b0, int32_t b1)
{
    if (b0 >= b1) return;
    if (l->ns > 0 && l->sp[l->ns - 1].b1 == b0) {
        l->sp[l->ns - 1].b1 = b1;
        return;
    }
    if (l->ns == 0 && l->self_end == b0 && b0 > l->a0) { // self mode only here
        l->self_end = b1;
        return;
    }
    nbi_spans_add(l, b0, b1);
}

// Adds the n stencil cells of zb in order (probing the table for those outside the block).
// Returns 0, the cells left.
static int nbi_zblock_flush(const nbiView *v, nbiSpanList *l, const nbiZBlock *zb, int n)
{
    for (int t = 0; t < n; t++) {
        int32_t b = zb->id[t];
        if (b < 0) {
            b = nbi_ctab_find_hashed(v->table, zb->at[t][0], zb->at[t][1], zb->at[t][2],
                                     zb->hash[t]);
            if (b < 0) continue;
        }
        nbi_spans_add_merged(l, v->start[b], v->start[b + 1]);
    }
    return 0;
}

// One cell c of block [s0, ...) whose offsets from lo are off[]: the positive half of its
// stencil, as nbi_pairs_hashed walks it.
static void nbi_zblock_cell(const nbiView *v, nbiSpanList *l, nbiZBlock *zb, int64_t k, int32_t s0,
                            int32_t c, const int64_t off[3], int64_t side)
{
    const int dim = v->dim;
    const int64_t kz = dim == 3 ? k : 0;
    int64_t key[3], loc[3];
    for (int a = 0; a < 3; a++) {
        key[a] = v->lo[a] + off[a];
        loc[a] = off[a] & (side - 1);
    }
    l->a0 = v->start[c];
    l->a1 = l->self_end = v->start[c + 1];
    l->ns = 0;
    int n = 0;
    for (int64_t dz = 0; dz <= kz; dz++) {
        if (key[2] + dz > v->hi[2]) break;
        const int64_t lz = loc[2] + dz;
        const int64_t ylo = dz > 0 ? nbi_max64(-k, v->lo[1] - key[1]) : 0;
        for (int64_t dy = ylo; dy <= k && key[1] + dy <= v->hi[1]; dy++) {
            const int64_t ly = loc[1] + dy;
            const bool row_in = ly >= 0 && ly < side && lz < side;
            const uint64_t row =
                row_in ? zb->spread[ly] << 1 | (dim == 3 ? zb->spread[lz] << 2 : 0) : 0;
            const int64_t xlo = (dz > 0 || dy > 0) ? nbi_max64(-k, v->lo[0] - key[0]) : 1;
            uint64_t hrow = 0;
            bool have_hrow = false;
            for (int64_t dx = xlo; dx <= k && key[0] + dx <= v->hi[0]; dx++) {
                const int64_t lx = loc[0] + dx;
                if (n == NBI_LOOKUPS) n = nbi_zblock_flush(v, l, zb, n);
                if (row_in && lx >= 0 && lx < side) {
                    const uint64_t lc = row | zb->spread[lx];
                    const uint64_t w = zb->occ[lc >> 6];
                    if (((w >> (lc & 63)) & 1) == 0) continue;
                    zb->id[n++] = s0 + zb->rank[lc >> 6] +
                                  nbi_popcount64(w & ((UINT64_C(1) << (lc & 63)) - 1));
                    continue;
                }
                if (!have_hrow) {
                    hrow = nbi_cell_hash_row(key[1] + dy, key[2] + dz);
                    have_hrow = true;
                }
                const uint64_t h = nbi_cell_hash_x(hrow, key[0] + dx);
                if (!nbi_view_may_hold(v, h)) continue;
                zb->id[n] = -1;
                zb->at[n][0] = key[0] + dx;
                zb->at[n][1] = key[1] + dy;
                zb->at[n][2] = key[2] + dz;
                zb->hash[n] = h;
                nbi_ctab_prefetch(v->table, h, false);
                n++;
            }
        }
    }
    nbi_zblock_flush(v, l, zb, n);
    nbi_spans_flush(l);
}

// Adds block cell lc (a local code) to the list when it is occupied.
NBI_INLINE void nbi_zblock_take(nbiSpanList *l, const nbiView *v, const nbiZBlock *zb, int32_t s0,
                                uint64_t lc)
{
    const uint64_t w = zb->occ[lc >> 6];
    if (((w >> (lc & 63)) & 1) == 0) return;
    const int32_t b = s0 + zb->rank[lc >> 6] + nbi_popcount64(w & ((UINT64_C(1) << (lc & 63)) - 1));
    nbi_spans_add_merged(l, v->start[b], v->start[b + 1]);
}

// nbi_zblock_cell at k = 1 for a cell whose stencil lies inside its block (local coordinates
// lx, ly, lz), in the same order: every stencil cell a bit of the block's bitmap, no bounds to
// clip (a cell of the block outside the view's box is simply not occupied).
static void nbi_zblock_inner(const nbiView *v, nbiSpanList *l, const nbiZBlock *zb, int32_t s0,
                             int32_t c, int64_t lx, int64_t ly, int64_t lz)
{
    const uint64_t *sp = zb->spread;
    const uint64_t xm = sp[lx - 1], x0 = sp[lx], xp = sp[lx + 1];
    l->a0 = v->start[c];
    l->a1 = l->self_end = v->start[c + 1];
    l->ns = 0;
    // rows (dy, dz): (0, 0) right of the cell only, then (1, 0), and in 3D (-1..1, 1)
    const uint64_t z0 = v->dim == 3 ? sp[lz] << 2 : 0;
    nbi_zblock_take(l, v, zb, s0, sp[ly] << 1 | z0 | xp);
    uint64_t row[4];
    int rows = 1;
    row[0] = sp[ly + 1] << 1 | z0;
    if (v->dim == 3) {
        const uint64_t z1 = sp[lz + 1] << 2;
        row[1] = sp[ly - 1] << 1 | z1;
        row[2] = sp[ly] << 1 | z1;
        row[3] = sp[ly + 1] << 1 | z1;
        rows = 4;
    }
    for (int r = 0; r < rows; r++) {
        nbi_zblock_take(l, v, zb, s0, row[r] | xm);
        nbi_zblock_take(l, v, zb, s0, row[r] | x0);
        nbi_zblock_take(l, v, zb, s0, row[r] | xp);
    }
    nbi_spans_flush(l);
}

// The local coordinates of 3D block cell lc (15 bits), packed x | y << 8 | z << 16.
NBI_INLINE uint32_t nbi_zblock_xyz(const nbiZBlock *zb, uint64_t lc)
{
    return zb->unspread[lc & 63] | zb->unspread[(lc >> 6) & 63] << 2 | zb->unspread[lc >> 12] << 4;
}

// The half stencil at k = 1 in 3D, in nbi_pairs_hashed's order, as bits of a 13-bit mask:
// (+1, 0, 0), then rows (dy, dz) = (1, 0), (-1, 1), (0, 1), (1, 1), each dx = -1, 0, 1. For bit
// t: dx + 1, dy + 1 and dz.
static const uint8_t nbi_half_dx[13] = {2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2};
static const uint8_t nbi_half_dy[13] = {1, 2, 2, 2, 0, 0, 0, 1, 1, 1, 2, 2, 2};
static const uint8_t nbi_half_dz[13] = {0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1};

// nbi_zblock_inner in 3D for cell c at local (lx, ly, lz): which stencil cells are occupied is
// read from the block's rows, 3 bits a row, so a cell without neighbours costs a few loads; the
// occupied ones are found by rank, in order.
// `alone`: c is its block's only cell (the rows are empty: no mask to read).
NBI_INLINE void nbi_zblock_inner3(const nbiView *v, nbiSpanList *l, const nbiZBlock *zb, int32_t s0,
                                  int32_t c, uint32_t lx, uint32_t ly, uint32_t lz, bool alone)
{
    const uint32_t *r = zb->rows + lz * 32 + ly, sh = lx - 1;
    uint32_t m = alone ? 0
                       : (r[0] >> (lx + 1) & 1) | (r[1] >> sh & 7) << 1 | (r[31] >> sh & 7) << 4 |
                             (r[32] >> sh & 7) << 7 | (r[33] >> sh & 7) << 10;
    l->a0 = v->start[c];
    l->a1 = l->self_end = v->start[c + 1];
    l->ns = 0;
    if (m != 0) {
        const uint64_t *sp = zb->spread;
        const uint64_t xs[3] = {sp[lx - 1], sp[lx], sp[lx + 1]};
        const uint64_t ys[3] = {sp[ly - 1] << 1, sp[ly] << 1, sp[ly + 1] << 1};
        const uint64_t zs[2] = {sp[lz] << 2, sp[lz + 1] << 2};
        do {
            const int t = nbi_ctz32(m);
            m &= m - 1;
            const uint64_t lc = xs[nbi_half_dx[t]] | ys[nbi_half_dy[t]] | zs[nbi_half_dz[t]];
            const uint64_t w = zb->occ[lc >> 6];
            const int32_t b =
                s0 + zb->rank[lc >> 6] + nbi_popcount64(w & ((UINT64_C(1) << (lc & 63)) - 1));
            nbi_spans_add_merged(l, v->start[b], v->start[b + 1]);
        } while (m != 0);
    }
    nbi_spans_flush(l);
}

// The cell whose Z order key is (kc, kl), or -1: searched in its bucket of the view's directory
// of codes (a few cells), or in all of them without one.
NBI_INLINE int32_t nbi_zord_find(const nbiView *v, const nbiZOrd *z, uint64_t kc, uint64_t kl,
                                 bool wide)
{
    int32_t b = 0, e = v->ncells;
    if (v->cell_zseen != NULL && !nbi_view_zmay_hold(v, nbi_zkey_hash(kc, kl))) return -1;
    if (v->cell_dir != NULL) {
        const uint64_t i = kc >> v->dir_shift;
        if ((i >> v->dir_bits) != 0) return -1; // above every code
        b = v->cell_dir[i];
        e = v->cell_dir[i + 1];
    }
    b = nbi_zord_lower(z, b, e, kc, kl, wide);
    return b < e && z->code[b] == kc && (!wide || z->low[b] == kl) ? b : -1;
}

// The Z order key (code, low code) of the cell one step (d = -1 or 1) along axis a from the cell
// at (*kc, *kl), by arithmetic on the interleaved bits (a dilated add: the bits of the other axes
// held at one, so the carry runs through axis a's bits alone): the low code's bits first, a carry
// or borrow out of them into the code's. False when the step leaves the codes' range (an offset
// below 0, or one past the codes' reach: no cell there). z->am[a] and z->cm[a] are axis a's bits
// of a low code and of a code.
NBI_INLINE bool nbi_zord_step(const nbiZOrd *z, uint64_t *kc, uint64_t *kl, int a, int d, bool wide)
{
    const uint64_t one = (uint64_t)1 << a;
    if (wide) {
        const uint64_t m = z->am[a], x = *kl & m;
        if (x != (d > 0 ? m : 0)) { // no carry out of the low code
            *kl = (d > 0 ? ((*kl | ~m) + one) & m : (x - one) & m) | (*kl & ~m);
            return true;
        }
        *kl &= ~m; // d > 0: the low bits wrap to 0, d < 0 to all ones
        if (d < 0) *kl |= m;
    }
    const uint64_t m = z->cm[a], x = *kc & m;
    if (x == (d > 0 ? m : 0)) return false;
    *kc = (d > 0 ? ((*kc | ~m) + one) & m : (x - one) & m) | (*kc & ~m);
    return true;
}

// The stencil cells (bits as above) outside the block of a cell on the faces f: bit 0 lx = 0,
// 1 lx = 31, 2 ly = 0, 3 ly = 31, 4 lz = 31.
static uint32_t nbi_half_out(unsigned f)
{
    uint32_t m = 0;
    for (int t = 0; t < 13; t++) {
        const int dx = nbi_half_dx[t] - 1, dy = nbi_half_dy[t] - 1, dz = nbi_half_dz[t];
        const bool out = (dx < 0 && (f & 1)) || (dx > 0 && (f & 2)) || (dy < 0 && (f & 4)) ||
                         (dy > 0 && (f & 8)) || (dz > 0 && (f & 16));
        m |= (uint32_t)out << t;
    }
    return m;
}

// nbi_zblock_inner3 for a cell on its block's faces (local (lx, ly, lz) = loc): the stencil
// cells inside the block from its rows, the others looked up, all in the stencil's order.
NBI_INLINE void nbi_zblock_edge3(const nbiView *v, const nbiZOrd *z, nbiSpanList *l, nbiZBlock *zb,
                                 int32_t s0, int32_t c, const uint32_t loc[3], bool wide)
{
    const uint32_t lx = loc[0], ly = loc[1], lz = loc[2];
    const uint32_t *r = zb->rows + lz * 32 + ly; // rows past the block read 0 or are masked
    const unsigned f =
        (lx == 0) | (lx == 31) << 1 | (ly == 0) << 2 | (ly == 31) << 3 | (lz == 31) << 4;
    const uint32_t out = zb->out[f];
    const uint32_t in =
        (uint32_t)((uint64_t)r[0] >> (lx + 1) & 1) |
        (uint32_t)(((uint64_t)r[1] << 1 >> lx & 7) << 1 | ((uint64_t)r[31] << 1 >> lx & 7) << 4 |
                   ((uint64_t)r[32] << 1 >> lx & 7) << 7 | ((uint64_t)r[33] << 1 >> lx & 7) << 10);
    uint32_t m = (in & ~out) | out;
    l->a0 = v->start[c];
    l->a1 = l->self_end = v->start[c + 1];
    l->ns = 0;
    if (m == 0) {
        nbi_spans_flush(l);
        return;
    }
    const uint64_t *sp = zb->spread;
    const uint64_t xs[3] = {sp[(lx - 1) & 31], sp[lx], sp[(lx + 1) & 31]};
    const uint64_t ys[3] = {sp[(ly - 1) & 31] << 1, sp[ly] << 1, sp[(ly + 1) & 31] << 1};
    const uint64_t zs[2] = {sp[lz] << 2, sp[(lz + 1) & 31] << 2};
    const uint64_t kc0 = z->code[c], kl0 = wide ? z->low[c] : 0;
    do {
        const int t = nbi_ctz32(m);
        m &= m - 1;
        const uint64_t lc = xs[nbi_half_dx[t]] | ys[nbi_half_dy[t]] | zs[nbi_half_dz[t]];
        if ((out >> t & 1) == 0) { // occupied, in the block
            const uint64_t w = zb->occ[lc >> 6];
            const int32_t b =
                s0 + zb->rank[lc >> 6] + nbi_popcount64(w & ((UINT64_C(1) << (lc & 63)) - 1));
            nbi_spans_add_merged(l, v->start[b], v->start[b + 1]);
            continue;
        }
        // Outside the block: its code from the cell's, a step an axis, then found in the codes.
        const int dx = nbi_half_dx[t] - 1, dy = nbi_half_dy[t] - 1, dz = nbi_half_dz[t];
        uint64_t kc = kc0, kl = kl0;
        if ((dx != 0 && !nbi_zord_step(z, &kc, &kl, 0, dx, wide)) ||
            (dy != 0 && !nbi_zord_step(z, &kc, &kl, 1, dy, wide)) ||
            (dz != 0 && !nbi_zord_step(z, &kc, &kl, 2, dz, wide)))
            continue;
        const int b = nbi_zord_find(v, z, kc, kl, wide);
        if (b >= 0) nbi_spans_add_merged(l, v->start[b], v->start[b + 1]);
    } while (m != 0);
    nbi_spans_flush(l);
}

// Hashed view in Z order, cells [u0, u1): block by block (the first block's cells before u0
// are set in its bitmap too, as stencil cells). `wide`: with low codes.
NBI_INLINE void nbi_pairs_zorder_on(const nbiView *v, const nbiPairCtx *x, int64_t k, int32_t u0,
                                    int32_t u1, bool wide)
{
    const int dim = v->dim, lbits = dim == 3 ? 15 : 14;
    const int64_t side = (int64_t)1 << (lbits / dim);
    const nbiZOrd z = nbi_zord(v, lbits);
    nbiZBlock zb;
    memset(zb.occ, 0, sizeof zb.occ);
    for (int64_t i = 0; i < side; i++)
        zb.spread[i] = dim == 3 ? nbi_spread3((uint64_t)i) : nbi_spread2((uint64_t)i);
    if (dim == 3) {
        memset(zb.rows, 0, sizeof zb.rows);
        for (uint64_t i = 0; i < 64; i++)
            zb.unspread[i] =
                (uint32_t)(nbi_gather3(i) | nbi_gather3(i >> 1) << 8 | nbi_gather3(i >> 2) << 16);
        for (unsigned f = 0; f < 32; f++) zb.out[f] = nbi_half_out(f);
    }
    // 3D at one ring finds the stencil cells outside a block in the codes (nbi_zblock_edge3);
    // the other walks look them up in the table.
    if (dim != 3 || k != 1) nbi_ctab_ready(v->table);
    nbiSpanList l;
    nbi_span_list_init(&l, x, dim, false);
    int32_t c = u0;
    while (c < u1 && !x->sink->stop) {
        int32_t s0 = c, s1 = c + 1;
        // Only the first block may start before u0: the others start where the last one ended.
        while (c == u0 && s0 > 0 && nbi_zord_same_block(&z, s0 - 1, c, wide)) s0--;
        while (s1 < v->ncells && nbi_zord_same_block(&z, s1, c, wide)) s1++;
        // A block of one cell holds none of its stencil: its bitmap stays empty.
        const int32_t s_end = s1 - s0 > 1 ? s1 : s0;
        int64_t word = -1;
        for (int32_t s = s0; s < s_end; s++) {
            const uint64_t lc = nbi_zord_local(&z, s, wide);
            if ((int64_t)(lc >> 6) != word) {
                word = (int64_t)(lc >> 6);
                zb.rank[word] = s - s0;
            }
            zb.occ[word] |= UINT64_C(1) << (lc & 63);
            if (dim == 3) {
                const uint32_t p = nbi_zblock_xyz(&zb, lc);
                zb.rows[(p >> 16) * 32 + (p >> 8 & 31)] |= UINT32_C(1) << (p & 31);
                if (s - s0 < NBI_ZB_XYZ) zb.xyz[s - s0] = p; // read back below
            }
        }
        const int32_t e = s1 < u1 ? s1 : u1;
        for (; c < e && !x->sink->stop; c++) {
            if (v->start[c] == v->start[c + 1]) continue; // an empty cell (a free id)
            if (dim == 3 && k == 1) {
                const uint32_t p = c < s_end && c - s0 < NBI_ZB_XYZ
                                       ? zb.xyz[c - s0]
                                       : nbi_zblock_xyz(&zb, nbi_zord_local(&z, c, wide));
                const uint32_t loc[3] = {p & 31, p >> 8 & 31, p >> 16};
                if (loc[0] - 1 < 30 && loc[1] - 1 < 30 && loc[2] < 31)
                    nbi_zblock_inner3(v, &l, &zb, s0, c, loc[0], loc[1], loc[2], s_end == s0);
                else
                    nbi_zblock_edge3(v, &z, &l, &zb, s0, c, loc, wide);
                continue;
            }
            int64_t off[3] = {0, 0, 0};
            if (wide) {
                nbi_view_cell_key(v, c, off);
                for (int a = 0; a < 3; a++) off[a] -= v->lo[a];
            } else {
                for (int a = 0; a < dim; a++) off[a] = (int64_t)nbi_code_axis(z.code[c], dim, a);
            }
            const int64_t lx = off[0] & (side - 1), ly = off[1] & (side - 1);
            const int64_t lz = off[2] & (side - 1);
            if (k == 1 && lx > 0 && lx < side - 1 && ly < side - 1 && (dim == 2 || ly > 0) &&
                lz < side - 1)
                nbi_zblock_inner(v, &l, &zb, s0, c, lx, ly, lz);
            else
                nbi_zblock_cell(v, &l, &zb, k, s0, c, off, side);
        }
        for (int32_t s = s0; s < s_end; s++) {
            const uint64_t lc = nbi_zord_local(&z, s, wide);
            zb.occ[lc >> 6] = 0;
            if (dim == 3) {
                const uint32_t p = s - s0 < NBI_ZB_XYZ ? zb.xyz[s - s0] : nbi_zblock_xyz(&zb, lc);
                zb.rows[(p >> 16) * 32 + (p >> 8 & 31)] = 0;
            }
        }
        c = e;
    }
}

static void nbi_pairs_zorder(const nbiView *v, const nbiPairCtx *x, int64_t k, int32_t u0,
                             int32_t u1)
{
    NB_ASSERT(v->end == NULL);
    if (v->code_shift > 0)
        nbi_pairs_zorder_on(v, x, k, u0, u1, true);
    else
        nbi_pairs_zorder_on(v, x, k, u0, u1, false);
}

nbStatus nbi_check_radius(double radius)
{
    if (!isfinite(radius)) return NB_ERR_NOT_FINITE;
    if (radius < 0.0) return NB_ERR_OUT_OF_RANGE;
    return NB_OK;
}

nbStatus nbi_check_pairs(double radius, int64_t capacity)
{
    const nbStatus st = nbi_check_radius(radius);
    if (st != NB_OK) return st;
    return capacity < 0 ? NB_ERR_OUT_OF_RANGE : NB_OK;
}

// The work budget of a walk, in cell steps: 64 per point + 2^26. A radius spanning very many
// cells of a sparse (hashed) view costs a lookup per stencil cell whether or not it is occupied,
// so a cell much smaller than the radius could run for minutes however few pairs it finds; past
// the budget the walk returns NB_ERR_OUT_OF_RANGE at once (a radius covering an absurd
// number of cells). Dense views need no guard: their cells are at least a quarter occupied, so
// the candidates, which any method must test, dominate. Nor do ranked views: they walk rows as
// dense ones do, their box has at most 64 cells a point, and the stencil is clipped to it.
static bool nbi_over_budget(double work, double points)
{
    return work > 64.0 * points + 0x1p26;
}

static void nbi_pair_ctx(nbiPairCtx *x, const nbiView *a, const nbiView *b, double radius,
                         nbiPairSink *s)
{
    x->pa = a->pts;
    x->ia = a->idx;
    x->ca = a->cat;
    x->ma = a->mask;
    x->pb = b->pts;
    x->ib = b->idx;
    x->cb = b->cat;
    x->mb = b->mask;
    x->r2 = radius * radius;
    x->sink = s;
    for (int d = 0; d < 3; d++) x->per[d] = a->wrap != NULL ? a->wrap->kper[d] : 0.0;
}

static nbStatus nbi_walk_pairs_wrap(const nbiView *v, double radius, int32_t u0, int32_t u1,
                                    nbiPairSink *s);

nbStatus nbi_walk_pairs(const nbiView *v, double radius, int32_t u0, int32_t u1, nbiPairSink *s)
{
    if (v->wrap != NULL) return nbi_walk_pairs_wrap(v, radius, u0, u1, s);
    if (v->n == 0) return NB_OK;
    const double rings = nbi_rings(nbi_reach(radius), v->cm.cell, v->max_abs);
    const int64_t k = rings < 0x1p63 ? (int64_t)rings : INT64_MAX;
    if (v->table != NULL) {
        const double side = 2.0 * rings + 1.0, cells = (double)v->ncells;
        const double stencil = v->dim == 3 ? side * side * side : side * side;
        if (nbi_over_budget(cells * (stencil < cells ? stencil : cells), v->n))
            return NB_ERR_OUT_OF_RANGE;
    }
    if (u0 >= u1) return NB_OK;
    NB_ASSERT(v->table != NULL || v->end == NULL); // dense rows are contiguous runs
    nbiPairCtx x;
    nbi_pair_ctx(&x, v, v, radius, s);
    if (v->table != NULL && v->cell_code != NULL && (v->code_shift == 0 || v->cell_low != NULL) &&
        v->end == NULL && k <= 8 &&
        (v->dim == 3 ? (double)(2 * k + 1) * (2 * k + 1) * (2 * k + 1)
                     : (double)(2 * k + 1) * (2 * k + 1)) <= (double)v->ncells)
        nbi_pairs_zorder(v, &x, k, u0, u1);
    else if (v->table != NULL)
        nbi_pairs_hashed(v, &x, k, u0, u1);
    else if (v->occ != NULL)
        nbi_pairs_ranked(v, &x, k, u0, u1);
    else
        nbi_pairs_dense(v, &x, k, u0, u1);
    return NB_OK;
}

static bool nbi_cross_run(int32_t b0, int32_t b1, void *ctx)
{
    nbiSpanList *l = (nbiSpanList *)ctx;
    nbi_spans_add(l, b0, b1);
    return !l->x->sink->stop;
}

nbStatus nbi_walk_cross(const nbiView *a, const nbiView *b, double radius, nbiPairSink *s)
{
    return nbi_walk_cross_range(a, b, radius, 0, a->ncells, s);
}

nbStatus nbi_walk_cross_range(const nbiView *a, const nbiView *b, double radius, int32_t c0,
                              int32_t c1, nbiPairSink *s)
{
    if (a->wrap != NULL || b->wrap != NULL) return nbi_walk_cross_wrap(a, b, radius, c0, c1, s);
    if (a->n == 0 || b->n == 0) return NB_OK;
    const int dim = a->dim;
    const double reach = nbi_reach(radius);
    // Cells of B one cell of A can meet, per axis, and the cost of meeting them.
    const double side = (a->cm.cell + 2.0 * reach) / b->cm.cell + 2.0;
    double box = 1.0;
    for (int d = 0; d < dim; d++) box *= side < (double)b->ext[d] ? side : (double)b->ext[d];
    const double per_cell = b->table != NULL ? (box < b->ncells ? box : b->ncells)
                                             : box / (side < b->ext[0] ? side : b->ext[0]);
    if (nbi_over_budget((double)a->ncells * per_cell, (double)a->n + b->n))
        return NB_ERR_OUT_OF_RANGE;
    nbiPairCtx x;
    nbi_pair_ctx(&x, a, b, radius, s);
    nbiSpanList l;
    nbi_span_list_init(&l, &x, dim, true);
    for (int32_t c = c0; c < c1 && !s->stop; c++) {
        const int32_t a0 = a->start[c], a1 = nbi_view_end(a, c);
        if (a0 == a1) continue;
        // The box of this cell's points, widened by the reach: rounding is monotone, so every
        // point of B within reach of one of them lies in B's cells over [lo, hi].
        double lo[3], hi[3];
        for (int d = 0; d < dim; d++) lo[d] = hi[d] = a->pts[(size_t)a0 * (size_t)dim + d];
        for (int32_t p = a0 + 1; p < a1; p++) {
            for (int d = 0; d < dim; d++) {
                const double q = a->pts[(size_t)p * (size_t)dim + d];
                lo[d] = q < lo[d] ? q : lo[d];
                hi[d] = q > hi[d] ? q : hi[d];
            }
        }
        for (int d = 0; d < dim; d++) {
            lo[d] -= reach;
            hi[d] += reach;
        }
        int64_t cl[3], ch[3];
        if (!nbi_view_cell_box(b, lo, hi, cl, ch)) continue;
        l.a0 = a0;
        l.a1 = a1;
        l.self_end = a0;
        l.ns = 0;
        nbi_view_box_runs(b, cl, ch, nbi_cross_run, &l);
        nbi_spans_flush(&l);
    }
    return NB_OK;
}

// ---- periodic views (view.h: nbiWrap) ----
// All pairs: every cell A meets the distinct cells within k rings of it (cyclically on the
// periodic axes: nbi_wrap_near gives each once, however small m is) whose cell number is greater
// than A's, plus itself (positions after i only). The neighbour relation is symmetric, so each
// unordered pair of cells is met once, from its lower-numbered cell: the unit of a pair is still
// its first cell. Rows are visited in ascending (z, y); A's own row comes first, and the run of
// cells right after A in it joins A's own run.
//
// The cells are numbered from the occupied arc's first (view.h), and only the arc's are walked:
// the stencil's cyclic ranges are clipped to it.
//
// Interior cells take the plain kernels: when on every periodic axis A's stencil does not cross
// the face of the box (k <= c and c + k <= m - 1 for A's circle cell c, not its number from the
// arc) and the axis has at least 2k + 3 cells, every candidate pair is less than (k + 1) cell
// edges apart along it, and P - a is more than (k + 2) edges: the minimum image is a itself,
// and a * a is what the plain test squares, bit for bit. Only the cells within k of a face pay
// for the wrapped test.

// Whether cell coordinate c on axis a needs the wrapped test (see above).
static bool nbi_wrap_edge(const nbiView *v, int a, int64_t c, int64_t k)
{
    const int64_t m = v->wrap->m[a];
    if (m == 0) return false;
    c += v->wrap->c0[a]; // the circle cell
    c = c >= m ? c - m : c;
    return c < k || c + k > m - 1 || m < 2 * k + 3;
}

// Whether A's whole stencil lies inside the box on every axis (no clipping; with no wrap, the
// caller's test): then its higher-numbered neighbours are the positive offsets, walked as the
// dense walker does.
NBI_INLINE bool nbi_wrap_inside(const nbiView *v, const int64_t c[3], const int64_t k[3])
{
    bool in = true;
    for (int a = 0; a < v->dim; a++) in &= c[a] - k[a] >= v->lo[a] && c[a] + k[a] <= v->hi[a];
    return in;
}

// The next cell's offsets in a dense box, x fastest.
static inline void nbi_box_step(int64_t *ox, int64_t *oy, int64_t *oz, int64_t e0, int64_t e1)
{
    if (++*ox < e0) return;
    *ox = 0;
    if (++*oy < e1) return;
    *oy = 0;
    ++*oz;
}

// A dense or ranked view (ranked: only the occupied cells are numbered, and box cell k's run
// starts at nbi_view_box_start(v, k)): cell c's box number and its offsets in the box.
NBI_INLINE void nbi_pairs_wrapped_k(const nbiView *v, const nbiPairCtx *x, const int64_t k[3],
                                    int32_t u0, int32_t u1, bool ranked)
{
    const int32_t *start = v->start;
    const int64_t e0 = v->ext[0], e1 = v->ext[1], e01 = e0 * e1;
    nbiSpanList l;
    nbi_span_list_init(&l, x, v->dim, false);
    int64_t ox = u0 % e0, oy = (u0 / e0) % e1, oz = u0 / e01; // a dense cell's offsets, stepped
    for (int32_t c = u0; c < u1 && !x->sink->stop; c++, nbi_box_step(&ox, &oy, &oz, e0, e1)) {
        const int32_t a0 = start[c], a1 = start[c + 1];
        if (a0 == a1) continue;
        const int64_t bc = ranked ? (int64_t)v->cell_box[c] : c; // its box number
        if (ranked) {
            ox = bc % e0;
            oy = (bc / e0) % e1;
            oz = bc / e01;
        }
        const int64_t cx = v->lo[0] + ox, cy = v->lo[1] + oy, cz = v->lo[2] + oz;
        l.wrap = nbi_wrap_edge(v, 0, cx, k[0]) || nbi_wrap_edge(v, 1, cy, k[1]) ||
                 (v->dim == 3 && nbi_wrap_edge(v, 2, cz, k[2]));
        const int64_t cc[3] = {cx, cy, cz};
        if (!l.wrap && nbi_wrap_inside(v, cc, k)) { // the interior: the dense walker's rows
            const int64_t row0 = bc - ox;
            l.a0 = a0;
            l.a1 = a1;
            l.self_end = nbi_row_start(v, ranked, row0 + ox + k[0] + 1);
            l.ns = 0;
            for (int64_t dz = 0; dz <= k[2]; dz++)
                for (int64_t dy = dz > 0 ? -k[1] : 1; dy <= k[1]; dy++) {
                    const int64_t row = row0 + dy * e0 + dz * e01 + ox;
                    nbi_spans_add(&l, nbi_row_start(v, ranked, row - k[0]),
                                  nbi_row_start(v, ranked, row + k[0] + 1));
                }
            nbi_spans_flush(&l);
            continue;
        }
        const nbiCellRange rx = nbi_wrap_near(v, 0, cx, k[0]), ry = nbi_wrap_near(v, 1, cy, k[1]);
        const nbiCellRange rz = nbi_wrap_near(v, 2, cz, k[2]);
        l.a0 = a0;
        l.a1 = l.self_end = a1;
        l.ns = 0;
        for (int tz = 0; tz < rz.n; tz++)
            for (int64_t z = rz.lo[tz]; z <= rz.hi[tz]; z++)
                for (int ty = 0; ty < ry.n; ty++)
                    for (int64_t y = ry.lo[ty]; y <= ry.hi[ty]; y++) {
                        if (z < cz || (z == cz && y < cy)) continue; // a lower-numbered row
                        const bool own = z == cz && y == cy;
                        const int64_t row = (y - v->lo[1]) * e0 + (z - v->lo[2]) * e01 - v->lo[0];
                        for (int tx = 0; tx < rx.n; tx++) {
                            const int64_t xl = own && rx.lo[tx] <= cx ? cx + 1 : rx.lo[tx];
                            const int64_t xh = rx.hi[tx];
                            if (xl > xh) continue;
                            if (own && xl == cx + 1) // contiguous with A: extend its own run
                                l.self_end = nbi_row_start(v, ranked, row + xh + 1);
                            else
                                nbi_spans_add(&l, nbi_row_start(v, ranked, row + xl),
                                              nbi_row_start(v, ranked, row + xh + 1));
                        }
                    }
        nbi_spans_flush(&l);
    }
}

// (compiled once for each layout: a dense view reads start[] directly)
static void nbi_pairs_wrapped(const nbiView *v, const nbiPairCtx *x, const int64_t k[3], int32_t u0,
                              int32_t u1)
{
    if (v->occ != NULL)
        nbi_pairs_wrapped_k(v, x, k, u0, u1, true);
    else
        nbi_pairs_wrapped_k(v, x, k, u0, u1, false);
}

static nbStatus nbi_walk_pairs_wrap(const nbiView *v, double radius, int32_t u0, int32_t u1,
                                    nbiPairSink *s)
{
    if (!nbi_wrap_radius_ok(v, radius)) return NB_ERR_OUT_OF_RANGE;
    if (v->n == 0 || u0 >= u1) return NB_OK;
    int64_t k[3];
    nbi_wrap_rings(v, nbi_reach(radius), k);
    nbiPairCtx x;
    nbi_pair_ctx(&x, v, v, radius, s);
    nbi_pairs_wrapped(v, &x, k, u0, u1);
    return NB_OK;
}

// Cross pairs: each cell of A meets the cells of B covering its points' box widened by the
// reach, wrapped (nbi_wrap_cover: each cell of B once).
nbStatus nbi_walk_cross_wrap(const nbiView *a, const nbiView *b, double radius, int32_t c0,
                             int32_t c1, nbiPairSink *s)
{
    if (a->wrap == NULL || b->wrap == NULL || !nbi_wrap_radius_ok(a, radius))
        return NB_ERR_OUT_OF_RANGE;
    for (int d = 0; d < 3; d++)
        if (a->wrap->period[d] != b->wrap->period[d]) return NB_ERR_OUT_OF_RANGE;
    if (a->n == 0 || b->n == 0) return NB_OK;
    const int dim = a->dim;
    const double reach = nbi_reach(radius);
    nbiPairCtx x;
    nbi_pair_ctx(&x, a, b, radius, s);
    nbiSpanList l;
    nbi_span_list_init(&l, &x, dim, true);
    l.wrap = true;
    for (int32_t c = c0; c < c1 && !s->stop; c++) {
        const int32_t a0 = a->start[c], a1 = nbi_view_end(a, c);
        if (a0 == a1) continue;
        double lo[3], hi[3];
        for (int d = 0; d < dim; d++) lo[d] = hi[d] = a->pts[(size_t)a0 * (size_t)dim + d];
        for (int32_t p = a0 + 1; p < a1; p++) {
            for (int d = 0; d < dim; d++) {
                const double q = a->pts[(size_t)p * (size_t)dim + d];
                lo[d] = q < lo[d] ? q : lo[d];
                hi[d] = q > hi[d] ? q : hi[d];
            }
        }
        nbiCellRange r[3];
        bool empty = false;
        for (int d = 0; d < 3; d++) {
            r[d] =
                nbi_wrap_cover(b, d, d < dim ? lo[d] - reach : 0.0, d < dim ? hi[d] + reach : 0.0);
            empty |= r[d].n == 0;
        }
        if (empty) continue;
        l.a0 = a0;
        l.a1 = a1;
        l.self_end = a0;
        l.ns = 0;
        nbi_wrap_box_runs(b, r, nbi_cross_run, &l);
        nbi_spans_flush(&l);
    }
    return NB_OK;
}
