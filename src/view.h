// SPDX-License-Identifier: MIT
// The cell-sorted view: the one description of "points sorted by cell" that the walkers (all
// pairs, cross pairs, radius, box and kNN in pairs.c and query.c) take as input. A structure
// owns the storage and hands a view in; the walkers never see the structure itself. Never
// installed.
//
// The points sit in cell order: cell c holds positions [start[c], start[c + 1]), with their
// coordinates in pts (dim doubles each, interleaved), the caller's index of each in idx, and
// optionally their filter bits in cat / mask (both NULL: no filter, every point all bits).
// A structure that keeps slack between its cells may pass `end` too: cell c is then
// [start[c], end[c]), and positions between one cell's end and the next one's start are never
// read (tests/test_view.c holds the walkers to it). The spatial hash does not need it: its slack
// has NaN coordinates, which fail every test, so its rows of cells are read as runs. Cells may
// be empty.
//
// Cells are numbered in one of three ways:
// - dense (table == NULL, occ == NULL): the whole box lo..hi of cells, row-major with x
//   fastest; box cell k = (x - lo[0]) + ext[0] * ((y - lo[1]) + ext[1] * (z - lo[2])) is cell k;
// - ranked (occ != NULL): only the occupied cells of the box, in the same row-major order, so
//   that a row of box cells is still one run of positions. Bit k % 64 of occ[k / 64] says
//   whether box cell k is occupied, occ_rank[k / 64] counts the occupied cells before that word
//   (both hold the words of box cells 0 .. ncells-of-the-box inclusive), and cell_box[c] is cell
//   c's box number (the grid's sparse layout while the box has at most 64 cells a point);
// - hashed (table != NULL): only occupied cells, in any order; the cell table maps coordinates
//   to the cell number, and cell c's coordinates are cell_keys[3c .. 3c+2], or, without
//   cell_keys, the coordinates kept in table slot cell_slot[c] (the grid, whose table never
//   moves a slot). With cell_code (the grid's hashed layout), the cells are in Z order: cell_code
//   holds each cell's Morton code (nbi_code_of), ascending, so that every block of 2^L cells a
//   side aligned to its size is one run of cell numbers, and kNN searches the blocks as a tree.
//   Where the codes drop low bits (code_shift > 0), cell_low may hold each cell's code of those
//   bits (nbi_code_low), the cells ascending by (code, low code): the Z order of exact offsets.
// Either way lo..hi bounds every occupied cell (z = 0 in 2D), and max_abs bounds |coordinate|
// (the rounding margins in cell.c need it).
#ifndef NEARBY_VIEW_H
#define NEARBY_VIEW_H

#include "cell_table.h"

// Periodic axes (a grid with a period): axis a wraps when period[a] > 0. Its cells are
// 0 .. m[a] - 1 around the circle, of edge P / m (cell math pcm[a]); a coordinate x in [0, P)
// is in circle cell min(m - 1, floor(x / edge)), a monotone map. The cells are numbered from
// the start of the occupied arc: circle cell c is cell (c - c0[a]) mod m, an exact integer
// shift (coordinates are never shifted), so that the occupied cells are 0 .. ext - 1 and
// cells ext .. m - 1 (the largest run of empty cells found on the circle) are never stored.
// Data that fills the circle has c0 = 0 and ext = m. kper[a] is what the kernels take the
// minimum image against: P, or +inf on an axis that does not wrap (then min(a, inf - a) = a).
// A view with wrap != NULL is dense or ranked (never hashed), with lo = 0 and 1 <= ext <= m on
// each periodic axis; the walks clip their cyclic ranges of cells to the arc 0 .. ext - 1.
typedef struct nbiWrap {
    double period[3]; // 0 = not periodic (always 0 for z in 2D)
    double kper[3];   // P, or +inf
    nbiCellMath pcm[3];
    int64_t m[3];  // cells around the circle on a periodic axis; 0 on the others
    int64_t c0[3]; // the circle cell numbered 0 (the occupied arc's first); 0 on the others
} nbiWrap;

typedef struct nbiView {
    int32_t dim; // 2 or 3
    int32_t n;   // points
    const double *pts;
    const int32_t *idx;
    const uint32_t *cat, *mask; // both NULL or both n entries
    const int32_t *start;       // ncells + 1 entries (ncells with end)
    const int32_t *end;         // NULL: cell c ends at start[c + 1]
    int32_t ncells;
    nbiCellMath cm;
    double max_abs;
    int64_t lo[3], hi[3], ext[3];
    const nbiCellTable *table; // NULL: dense or ranked numbering
    const uint32_t *cell_slot; // hashed, without cell_keys: cell -> its slot in table
    const uint64_t *occ;       // ranked: the box's occupancy bits, or NULL
    const int32_t *occ_rank;   // ranked: occupied cells before each word of occ
    const uint32_t *cell_box;  // ranked: cell -> its box number
    const int64_t *cell_keys;  // hashed: 3 coordinates per cell, or NULL
    const uint64_t *cell_code; // hashed in Z order: each cell's Morton code, ascending; or NULL
    int32_t code_shift;        // with cell_code: the low bits of a cell's offset the code drops
    const uint64_t *cell_low; // with code_shift > 0: the code of those bits (nbi_code_low), or NULL
    const uint64_t *cell_seen; // hashed: the occupancy filter (nbi_view_may_hold), or NULL
    int32_t seen_bits;         // with cell_seen: it holds 2^seen_bits bits
    // With cell_code, optionally: a directory of the codes, 2^dir_bits + 1 entries, entry i the
    // first cell whose code >> dir_shift is at least i (nbi_view_dir), or NULL.
    // And a code filter of 2^seen_bits bits: the top bits of each cell's nbi_zkey_hash set
    // (nbi_view_zmay_hold), or NULL.
    const int32_t *cell_dir;
    int32_t dir_bits, dir_shift;
    const uint64_t *cell_zseen;
    const nbiWrap *wrap;     // NULL: no periodic axis
    const int32_t *row_span; // ranked, optional: the box's row spans (below), or NULL
} nbiView;

// Row spans of a ranked view: for each row (y, z) of the box, row r = (y - lo[1]) + ext[1] *
// (z - lo[2]), its first and last occupied cell's x - lo[0] in row_span[2r], row_span[2r + 1]
// (first > last when it is empty); then, from entry 2 * ext[1] * ext[2] on, the same for each
// block of NBI_SPAN_ROWS rows of a plane (block b = (y - lo[1]) / NBI_SPAN_ROWS + the blocks of
// a plane x (z - lo[2])): the least first and the greatest last of its rows. A radius query
// skips a block, then a row, none of whose occupied cells the ball can reach.
enum { NBI_SPAN_ROWS = 16 };

// ---- Z order beyond the codes' reach (the codes themselves: cell.h) ----

// The most bits an axis's offset may drop (code_shift) for the bits it drops to have a code of
// their own in one word (nbi_code_low): 63 bits of code in 3D, 62 in 2D.
#define NBI_CODE_LOW_MAX(dim) ((dim) == 3 ? 21 : 31)

// The code of the low `shift` bits of the offsets of cell k from lo (the bits nbi_code_of drops),
// 0 < shift <= NBI_CODE_LOW_MAX(dim). Cells ordered by (code, low code) are in the Z order of
// their exact offsets: the one code, wider than a word, of dim * (shift + NBI_CODE_BITS) bits.
NBI_INLINE uint64_t nbi_code_low(const int64_t k[3], const int64_t lo[3], int dim, int shift)
{
    const uint64_t m = ((uint64_t)1 << shift) - 1;
    const uint64_t x = (uint64_t)(k[0] - lo[0]) & m, y = (uint64_t)(k[1] - lo[1]) & m;
    if (dim == 2) return nbi_spread2(x) | nbi_spread2(y) << 1;
    const uint64_t z = (uint64_t)(k[2] - lo[2]) & m;
    return nbi_spread3(x) | nbi_spread3(y) << 1 | nbi_spread3(z) << 2;
}

// The shift that fits the offsets of a box of ext cells a side into NBI_CODE_BITS(dim) bits.
NBI_INLINE int nbi_code_shift(const int64_t ext[3], int dim)
{
    int s = 0;
    for (int a = 0; a < dim; a++)
        while (((uint64_t)(ext[a] - 1) >> s) >> NBI_CODE_BITS(dim) != 0) s++;
    return s;
}

// Whether two views describe the same thing (validate: a structure's cached view against a
// fresh one).
NBI_INLINE bool nbi_view_same(const nbiView *a, const nbiView *b)
{
    bool same = a->dim == b->dim && a->n == b->n && a->pts == b->pts && a->idx == b->idx &&
                a->cat == b->cat && a->mask == b->mask && a->start == b->start &&
                a->end == b->end && a->ncells == b->ncells && a->cm.cell == b->cm.cell &&
                a->cm.inv == b->cm.inv && a->cm.pow2 == b->cm.pow2 && a->max_abs == b->max_abs &&
                a->table == b->table && a->cell_slot == b->cell_slot &&
                a->cell_keys == b->cell_keys && a->occ == b->occ && a->occ_rank == b->occ_rank &&
                a->cell_box == b->cell_box && a->cell_code == b->cell_code &&
                a->code_shift == b->code_shift && a->cell_low == b->cell_low &&
                a->cell_seen == b->cell_seen && a->seen_bits == b->seen_bits &&
                a->wrap == b->wrap && a->row_span == b->row_span && a->cell_dir == b->cell_dir &&
                a->cell_zseen == b->cell_zseen && a->dir_bits == b->dir_bits &&
                a->dir_shift == b->dir_shift;
    for (int i = 0; i < 3; i++)
        same &= a->lo[i] == b->lo[i] && a->hi[i] == b->hi[i] && a->ext[i] == b->ext[i];
    return same;
}

// The cell of coordinate x on axis a of a view (periodic or not; x in [0, P) when periodic:
// then its number from the arc's start, in 0 .. m - 1, possibly outside the arc).
NBI_INLINE int64_t nbi_view_axis_cell(const nbiView *v, int a, double x)
{
    if (v->wrap == NULL || v->wrap->m[a] == 0) return nbi_cell_i(&v->cm, x);
    const int64_t m = v->wrap->m[a], c = nbi_cell_i(&v->wrap->pcm[a], x);
    const int64_t k = (c < m ? c : m - 1) - v->wrap->c0[a];
    return k < 0 ? k + m : k;
}

// One past cell c's last position.
NBI_INLINE int32_t nbi_view_end(const nbiView *v, int32_t c)
{
    return v->end != NULL ? v->end[c] : v->start[c + 1];
}

// Ranked view: the occupied cells before box cell k, 0 <= k <= the box's cells. Two loads (the
// word and its count) where a dense view reads start[k] directly.
NBI_INLINE int32_t nbi_view_rank(const nbiView *v, int64_t k)
{
    const uint64_t below = v->occ[k >> 6] & ((UINT64_C(1) << (k & 63)) - 1);
    return v->occ_rank[k >> 6] + nbi_popcount64(below);
}

// Dense or ranked view: the first position of box cell k, 0 <= k <= the box's cells (for an
// empty cell, the next occupied cell's first position): so [box_start(k0), box_start(k1)) is the
// run of box cells k0 .. k1 - 1.
NBI_INLINE int32_t nbi_view_box_start(const nbiView *v, int64_t k)
{
    return v->start[v->occ != NULL ? (int64_t)nbi_view_rank(v, k) : k];
}

// The cell at integer coordinates (x, y, z), or -1 when it is not in the view (outside the box,
// or not occupied in a hashed or ranked view).
NBI_INLINE int32_t nbi_view_cell(const nbiView *v, int64_t x, int64_t y, int64_t z)
{
    if (v->table != NULL) {
        nbi_ctab_ready(v->table);
        return nbi_ctab_find(v->table, x, y, z);
    }
    if (x < v->lo[0] || x > v->hi[0] || y < v->lo[1] || y > v->hi[1] || z < v->lo[2] ||
        z > v->hi[2])
        return -1;
    const int64_t k = (x - v->lo[0]) + v->ext[0] * ((y - v->lo[1]) + v->ext[1] * (z - v->lo[2]));
    if (v->occ == NULL) return (int32_t)k;
    return (v->occ[k >> 6] >> (k & 63)) & 1 ? nbi_view_rank(v, k) : -1;
}

// Cell c's integer coordinates.
NBI_INLINE void nbi_view_cell_key(const nbiView *v, int32_t c, int64_t out[3])
{
    if (v->cell_code != NULL && v->code_shift == 0) { // from the code: no miss on the table
        for (int a = 0; a < 3; a++)
            out[a] = a < v->dim ? v->lo[a] + (int64_t)nbi_code_axis(v->cell_code[c], v->dim, a) : 0;
        return;
    }
    if (v->cell_low != NULL) { // from the code and the low code
        for (int a = 0; a < 3; a++) {
            const uint64_t hi = nbi_code_axis(v->cell_code[c], v->dim, a) << v->code_shift;
            out[a] = a < v->dim
                         ? v->lo[a] + (int64_t)(hi | nbi_code_axis(v->cell_low[c], v->dim, a))
                         : 0;
        }
        return;
    }
    if (v->table != NULL) {
        const int64_t *k = v->cell_keys != NULL ? v->cell_keys + (size_t)c * 3
                                                : nbi_ctab_slots(v->table)[v->cell_slot[c]].key;
        out[0] = k[0];
        out[1] = k[1];
        out[2] = k[2];
        return;
    }
    int64_t r = v->occ != NULL ? (int64_t)v->cell_box[c] : c;
    out[0] = v->lo[0] + r % v->ext[0];
    r /= v->ext[0];
    out[1] = v->lo[1] + r % v->ext[1];
    r /= v->ext[1];
    out[2] = v->lo[2] + r;
}

// Whether a hashed view may hold the cell whose nbi_cell_hash is `hash`. The occupancy filter
// (the grid's hashed layout) has a bit for each value of the hash's top seen_bits bits, set when
// an occupied cell's hash has it: a clear bit means the cell is surely empty, and the table is
// not probed. It is a few times the table's slots in bits, small enough to stay in cache where
// the table (a miss a probe) does not: sparse data's stencils are mostly empty cells.
NBI_INLINE bool nbi_view_may_hold(const nbiView *v, uint64_t hash)
{
    if (v->cell_seen == NULL) return true;
    const uint64_t b = hash >> (64 - v->seen_bits);
    return (v->cell_seen[b >> 6] >> (b & 63)) & 1;
}

// The hash of a cell's Z order key (its code and low code: 0 without a shift) whose top bits
// the code filter keeps.
NBI_INLINE uint64_t nbi_zkey_hash(uint64_t code, uint64_t low)
{
    return nbi_mix64(code ^ low * 0x9E3779B97F4A7C15u);
}

// Whether a view with a code filter may hold the cell whose nbi_zkey_hash is `hash` (a clear bit:
// surely not).
NBI_INLINE bool nbi_view_zmay_hold(const nbiView *v, uint64_t hash)
{
    const uint64_t b = hash >> (64 - v->seen_bits);
    return (v->cell_zseen[b >> 6] >> (b & 63)) & 1;
}

// Whether the stored point at position p passes the query filter f (Box2D's rule).
NBI_INLINE bool nbi_view_passes(const nbiView *v, int32_t p, nbFilter f)
{
    const uint32_t cat = v->cat != NULL ? v->cat[p] : 0xFFFFFFFFu;
    const uint32_t mask = v->mask != NULL ? v->mask[p] : 0xFFFFFFFFu;
    return nbi_filter_accepts(f, cat, mask);
}

// Called for each run of positions [b0, b1) whose cells lie in a box; false stops.
typedef bool nbiRunFn(int32_t b0, int32_t b1, void *ctx);

// At least c 2^-1070 + 2^-1000, computed without a subnormal operand or result (each costs a
// microcode assist of some hundred cycles on x86): what p / c's underflow may move p by (up to
// c 2^-1075, whatever p is), with room.
NBI_INLINE double nbi_cell_slack(double c)
{
    return c > 0x1p70 ? (c * 0x1p-535) * 0x1p-534 : 0x1p-999;
}

// A lower bound on hi - lo for a true coordinate hi >= the face `hi` of a cell (or lo <= the
// face `lo`), less a rounding margin: p / c may be rounded across the face, or underflow
// (`slack`, nbi_cell_slack).
NBI_INLINE double nbi_face_gap(double lo, double hi, double slack)
{
    return hi - lo - (fabs(hi) + fabs(lo)) * 0x1p-50 - slack;
}

// The box of cells covering [lo, hi] per axis (doubles, possibly infinite), clipped to the
// view's occupied box. False when it is empty. A point p with lo <= p <= hi (exactly) lies in
// a cell of the box: the cell map is monotone. Inline: every radius and box query starts here.
NBI_INLINE bool nbi_view_cell_box(const nbiView *v, const double *lo, const double *hi,
                                  int64_t cl[3], int64_t ch[3])
{
    for (int a = 0; a < 3; a++) {
        cl[a] = v->lo[a];
        ch[a] = v->hi[a];
    }
    for (int a = 0; a < v->dim; a++) {
        const double l = nbi_cell_f(&v->cm, lo[a]), h = nbi_cell_f(&v->cm, hi[a]);
        // Compare as doubles: l and h may be infinite or beyond int64.
        if (!(l <= (double)v->hi[a]) || !(h >= (double)v->lo[a]) || l > h) return false;
        if (l > (double)v->lo[a]) cl[a] = (int64_t)l;
        if (h < (double)v->hi[a]) ch[a] = (int64_t)h;
    }
    return true;
}

enum { NBI_LOOKUPS = 32 }; // a hashed box of at most this many cells looks them up in two passes

// A hashed box of at most NBI_BLOCK_BOX cells spanning at most NBI_BLOCK_PROBES blocks is found
// through the table's blocks (nbi_view_block_cells), where the table has them.
enum { NBI_BLOCK_BOX = 64, NBI_BLOCK_PROBES = 16 };

// Whether a hashed view's table has blocks (cell_table.h), writing them on their first use.
// After nbi_ctab_ready.
NBI_INLINE bool nbi_view_has_blocks(const nbiView *v)
{
    if (v->table == NULL || v->end != NULL || v->table->codes == NULL) return false;
    nbi_ctab_blocks_ready(v->table);
    return v->table->block_bits > 0;
}

// The occupied cells of the box [cl, ch] (at most NBI_BLOCK_BOX cells, within the view's box) of
// a view with blocks (nbi_view_has_blocks), in the order nbi_view_box_runs visits them (z, then
// y, then x ascending), into cells[]; only those whose bit i is set in `want`, i counting the
// box's cells in that order. Returns how many, or -1 when the box spans more than
// NBI_BLOCK_PROBES blocks or a block beyond the keys' reach (then look its cells up one by one).
// The blocks' home slots are all asked of the memory first, then probed: the misses overlap.
// Branch-free per cell: a cell costs a bit test and a popcount.
// `popcnt`: the caller is compiled for a CPU with the popcount instruction (a function with a
// target attribute that has it: the AVX-512 copies of the radius walk), so that the rank of a
// cell in its block is one instruction there, not nbi_popcount64's dozen.
NBI_INLINE int nbi_view_block_cells(const nbiView *v, const int64_t cl[3], const int64_t ch[3],
                                    uint64_t want, int32_t cells[NBI_BLOCK_BOX], bool popcnt)
{
    const nbiCellTable *t = v->table;
    const int sb = NBI_BLOCK_SIDE_BITS(v->dim);
    uint64_t b0[3], nb[3];
    uint64_t blocks = 1;
    for (int a = 0; a < 3; a++) {
        b0[a] = (uint64_t)(cl[a] - v->lo[a]) >> sb;
        const uint64_t b1 = (uint64_t)(ch[a] - v->lo[a]) >> sb;
        if (b1 >> 32 != 0) return -1;
        nb[a] = b1 - b0[a] + 1;
        blocks *= nb[a];
    }
    if (blocks > NBI_BLOCK_PROBES) return -1;
    uint64_t hash[NBI_BLOCK_PROBES], mask[NBI_BLOCK_PROBES];
    int32_t first[NBI_BLOCK_PROBES];
    int n = 0;
    for (uint64_t z = b0[2]; z < b0[2] + nb[2]; z++)
        for (uint64_t y = b0[1]; y < b0[1] + nb[1]; y++)
            for (uint64_t x = b0[0]; x < b0[0] + nb[0]; x++, n++) {
                hash[n] = nbi_ctab_block_hash(x, y, z);
                nbi_ctab_block_prefetch(t, hash[n]);
            }
    n = 0;
    for (uint64_t z = b0[2]; z < b0[2] + nb[2]; z++)
        for (uint64_t y = b0[1]; y < b0[1] + nb[1]; y++)
            for (uint64_t x = b0[0]; x < b0[0] + nb[0]; x++, n++) {
                mask[n] = nbi_ctab_block_find(t, x, y, z, hash[n], &first[n]);
            }
    // A cell's local code: its offsets' low side bits interleaved (spread over every third or
    // every second bit), and its block's index among those probed, summed from per-axis parts
    // worked out once per box coordinate.
    static const uint8_t spread3[4] = {0, 1, 8, 9};
    static const uint8_t spread2[8] = {0, 1, 4, 5, 16, 17, 20, 21};
    const uint64_t side = ((uint64_t)1 << sb) - 1;
    uint8_t lpart[3][NBI_BLOCK_BOX], bpart[3][NBI_BLOCK_BOX];
    for (int a = 0; a < 3; a++) {
        const uint64_t step = a == 0 ? 1 : a == 1 ? nb[0] : nb[0] * nb[1];
        for (int64_t k = cl[a]; k <= ch[a]; k++) {
            const uint64_t o = (uint64_t)(k - v->lo[a]);
            const unsigned sp = v->dim == 3 ? spread3[o & side] : spread2[o & side];
            lpart[a][k - cl[a]] = (uint8_t)(a < v->dim ? sp << a : 0);
            bpart[a][k - cl[a]] = (uint8_t)(((o >> sb) - b0[a]) * step);
        }
    }
    const int64_t nx = ch[0] - cl[0] + 1, ny = ch[1] - cl[1] + 1, nz = ch[2] - cl[2] + 1;
    int found = 0, i = 0;
    for (int64_t kz = 0; kz < nz; kz++)
        for (int64_t ky = 0; ky < ny; ky++) {
            const unsigned lyz = lpart[2][kz] | lpart[1][ky], byz = bpart[2][kz] + bpart[1][ky];
            for (int64_t kx = 0; kx < nx; kx++, i++) {
                const unsigned l = lyz | lpart[0][kx], b = byz + bpart[0][kx];
                const uint64_t m = mask[b];
                const uint64_t below = m & (((uint64_t)1 << l) - 1);
#if defined(__GNUC__)
                cells[found] =
                    first[b] + (popcnt ? __builtin_popcountll(below) : nbi_popcount64(below));
#else
                (void)popcnt;
                cells[found] = first[b] + nbi_popcount64(below);
#endif
                found += (int)((m >> l) & (want >> i) & 1);
            }
        }
    return found;
}

// Calls fn for the runs of every occupied cell in the box [cl, ch], in a deterministic order
// (dense or ranked: one run per row). A hashed view looks each cell up, or, when the box has more
// cells than the view has occupied, tests every occupied cell instead. Returns the work done, in
// cells examined. Inline, so that a walker passing its own static fn gets it inlined into the
// loop (a query's per-cell cost is mostly this loop).
NBI_INLINE double nbi_view_box_runs(const nbiView *v, const int64_t cl[3], const int64_t ch[3],
                                    nbiRunFn *fn, void *ctx)
{
    const int32_t *start = v->start;
    double cells = 1.0;
    for (int a = 0; a < 3; a++) cells *= (double)(ch[a] - cl[a] + 1);
    if (v->table == NULL) {
        const int64_t e0 = v->ext[0], e01 = v->ext[0] * v->ext[1];
        for (int64_t z = cl[2]; z <= ch[2]; z++) {
            for (int64_t y = cl[1]; y <= ch[1]; y++) {
                const int64_t row = (y - v->lo[1]) * e0 + (z - v->lo[2]) * e01 - v->lo[0];
                const int32_t b0 = nbi_view_box_start(v, row + cl[0]);
                const int32_t b1 = nbi_view_box_start(v, row + ch[0] + 1);
                if (b0 < b1 && !fn(b0, b1, ctx)) return cells;
            }
        }
        return cells;
    }
    if (cells <= (double)v->ncells) nbi_ctab_ready(v->table);
    if (cells <= NBI_BLOCK_BOX && cells <= (double)v->ncells && nbi_view_has_blocks(v)) {
        // Through the blocks: the occupied cells in order, consecutive ones as one run.
        int32_t c[NBI_BLOCK_BOX];
        const int n = nbi_view_block_cells(v, cl, ch, ~(uint64_t)0, c, false);
        for (int i = 0, j; i < n; i = j) {
            for (j = i + 1; j < n && c[j] == c[j - 1] + 1;) j++;
            if (!fn(start[c[i]], start[c[j - 1] + 1], ctx)) return cells;
        }
        if (n >= 0) return cells;
    }
    if (cells <= NBI_LOOKUPS && cells <= (double)v->ncells && v->table->bits > 0) {
        // A small box (a query's few cells) in two passes: every cell's home slot, each asked
        // of the memory at once, then the probes, so that the table's misses overlap instead of
        // coming one after the other.
        uint64_t hash[NBI_LOOKUPS];
        int n = 0;
        for (int64_t z = cl[2]; z <= ch[2]; z++)
            for (int64_t y = cl[1]; y <= ch[1]; y++) {
                const uint64_t row = nbi_cell_hash_row(y, z);
                for (int64_t x = cl[0]; x <= ch[0]; x++, n++) {
                    hash[n] = nbi_cell_hash_x(row, x);
                    if (!nbi_view_may_hold(v, hash[n])) continue;
                    nbi_ctab_prefetch(v->table, hash[n], true);
                }
            }
        n = 0;
        for (int64_t z = cl[2]; z <= ch[2]; z++)
            for (int64_t y = cl[1]; y <= ch[1]; y++)
                for (int64_t x = cl[0]; x <= ch[0]; x++, n++) {
                    if (!nbi_view_may_hold(v, hash[n])) continue;
                    const int32_t c = nbi_ctab_find_hashed(v->table, x, y, z, hash[n]);
                    if (c < 0) continue;
                    if (!fn(start[c], nbi_view_end(v, c), ctx)) return cells;
                }
        return cells;
    }
    if (cells <= (double)v->ncells) {
        for (int64_t z = cl[2]; z <= ch[2]; z++)
            for (int64_t y = cl[1]; y <= ch[1]; y++) {
                const uint64_t row = nbi_cell_hash_row(y, z);
                for (int64_t x = cl[0]; x <= ch[0]; x++) {
                    const int32_t c = nbi_ctab_find_in_row(v->table, x, y, z, row);
                    if (c >= 0 && !fn(start[c], nbi_view_end(v, c), ctx)) return cells;
                }
            }
        return cells;
    }
    for (int32_t c = 0; c < v->ncells; c++) {
        int64_t k[3];
        nbi_view_cell_key(v, c, k);
        bool in = true;
        for (int a = 0; a < 3; a++) in &= k[a] >= cl[a] && k[a] <= ch[a];
        if (in && !fn(start[c], nbi_view_end(v, c), ctx)) break;
    }
    return (double)v->ncells;
}

// ---- the walkers (pairs.c, query.c): every structure's queries run through these ----
#include "sink.h"

// Numeric arguments every query checks after its pointers, in the documented order: the radius
// (NB_ERR_NOT_FINITE, then NB_ERR_OUT_OF_RANGE when negative), and for pair calls the capacity.
nbStatus nbi_check_radius(double radius);
nbStatus nbi_check_pairs(double radius, int64_t capacity);

// All pairs within `radius` whose first cell is in [u0, u1), each unordered pair once, through
// the sink. Units are cells: [0, v->ncells) covers everything. Checks nothing but the cost guard
// (a radius spanning an absurd number of hashed cells: NB_ERR_OUT_OF_RANGE).
nbStatus nbi_walk_pairs(const nbiView *v, double radius, int32_t u0, int32_t u1, nbiPairSink *s);

// Every (i in a, j in b) within `radius`, roles kept, once each. Same guard, over both views.
nbStatus nbi_walk_cross(const nbiView *a, const nbiView *b, double radius, nbiPairSink *s);
// The same for the points of a's cells [c0, c1) only (0 <= c0 <= c1 <= a->ncells): the pairs
// of a split of a's cells, for the caller's workers.
nbStatus nbi_walk_cross_range(const nbiView *a, const nbiView *b, double radius, int32_t c0,
                              int32_t c1, nbiPairSink *s);

// Radius and box queries with a filter, into a hit sink. They check their numeric arguments
// (finiteness, then range, with the sink's capacity) and return the first failing status.
nbStatus nbi_walk_radius(const nbiView *v, const double *center, double radius, nbFilter f,
                         nbiHitSink *s);
nbStatus nbi_walk_box(const nbiView *v, const double *lo, const double *hi, nbFilter f,
                      nbiHitSink *s);

// The k nearest points passing f and within max_distance (d2 <= max_distance^2; INFINITY for
// no limit), nearest first, ties by lower index, in out (k entries, the heap). Checks the point,
// max_distance and k; *found = how many were written.
nbStatus nbi_walk_knn(const nbiView *v, const double *point, nbFilter f, double max_distance,
                      nbNeighbor *out, int32_t k, int32_t *found);
// The callback form: nbi_walk_knn with its heap on the stack (k <= NB_KNN_STACK) or from
// `alloc`, then each neighbour, nearest first, handed to visit(index, dist2, user) until it says
// stop. NB_ERR_OUT_OF_MEMORY when the heap cannot be had.
nbStatus nbi_visit_knn(const nbiView *v, const double *point, nbFilter f, double max_distance,
                       int32_t k, const nbAllocator *alloc, nbNeighborFn *visit, void *user);

// ---- periodic views (wrap != NULL): the walkers above hand them to these (pairs.c, query.c) ----

// Up to two disjoint intervals of cell coordinates [lo[t], hi[t]], t < n, ascending.
typedef struct nbiCellRange {
    int64_t lo[2], hi[2];
    int n;
} nbiCellRange;

// Whether the minimum image can answer radius r: r <= P / 2 on every periodic axis.
bool nbi_wrap_radius_ok(const nbiView *v, double r);

// Whether p lies in [0, P) on every periodic axis (a query point the periodic tests accept).
bool nbi_wrap_point_ok(const nbiView *v, const double *p);

// Rings of cells per axis that cover every pair the periodic test can accept at `reach`
// (nbi_reach of the radius), rounding margins included.
void nbi_wrap_rings(const nbiView *v, double reach, int64_t k[3]);

// The cells within k of cell c on axis a (cyclically modulo m on a periodic axis, clipped to
// the arc; c may lie outside it), each once.
nbiCellRange nbi_wrap_near(const nbiView *v, int a, int64_t c, int64_t k);

// The cells holding any x with lo <= x <= hi on axis a, or an image x +- P of it on a periodic
// axis (lo >= -P, hi < 2 P; hi - lo >= P gives the whole axis), each once, clipped to the view
// (the arc, on a periodic axis).
nbiCellRange nbi_wrap_cover(const nbiView *v, int a, double lo, double hi);

// Calls fn for the runs of every cell in the product of the per-axis ranges (axes >= dim: the
// single cell 0), each cell once. Returns the cells examined.
double nbi_wrap_box_runs(const nbiView *v, const nbiCellRange r[3], nbiRunFn *fn, void *ctx);

// The k nearest on a periodic view in some norm: its candidates and bounds. The walk offers
// cells ring by ring outward from the query's (by cyclic levels, clipped to the arcs) through
// `run`, cutting each ring to what can still enter and stopping once nothing unvisited can.
typedef struct nbiWrapKnnOps {
    nbiRunFn *run; // offers the candidates [b0, b1) (the minimum image)
    void *ctx;
    // Whether no point whose distance along each axis a is at least g[a] can enter.
    bool (*beyond)(void *ctx, const double g[3]);
    // The largest distance along axis b a point can have and still enter, its distance along
    // each other axis a at least g[a] (at least that: a superset; INFINITY while unbounded).
    double (*room)(void *ctx, const double g[3], int b);
    void (*reset)(void *ctx); // forgets every offer (before a scan of every point instead)
} nbiWrapKnnOps;
void nbi_wrap_knn_walk(const nbiView *v, const double *point, const nbiWrapKnnOps *ops);

// Every (i in a, j in b) within `radius` by the minimum image, both views periodic alike, for
// a's cells [c0, c1).
nbStatus nbi_walk_cross_wrap(const nbiView *a, const nbiView *b, double radius, int32_t c0,
                             int32_t c1, nbiPairSink *s);

#endif
