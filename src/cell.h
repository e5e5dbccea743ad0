// SPDX-License-Identifier: MIT
// Coordinate -> cell math, ring counts and cell hashing: the one place every structure uses.
//
// A coordinate's cell is floor(x / cell) computed in double. When the cell edge is a power of two
// (and its reciprocal is finite), x * (1 / cell) is the same correctly rounded quotient, so the
// cheaper multiply is used; anywhere else the division is. Either way the map x -> cell is
// monotone (rounding is monotone), which the range queries rely on: a point p with
// lo <= p <= hi (exactly) has cell(lo_rounded) <= cell(p) <= cell(hi_rounded).
#ifndef NEARBY_CELL_H
#define NEARBY_CELL_H

#include "nb_internal.h"

#include <math.h>
#include <stdint.h>

// Cells beyond +-2^62 are refused (NB_ERR_OUT_OF_RANGE): it leaves room for ring offsets
// without int64 overflow.
#define NBI_CELL_LIMIT 0x1p62

typedef struct nbiCellMath {
    double cell; // edge length, finite and > 0
    double inv;  // 1 / cell, used only when pow2
    bool pow2;   // cell is a power of two with a finite reciprocal: x * inv == x / cell
} nbiCellMath;

nbiCellMath nbi_cell_math(double cell);

// floor(x / cell) as a double: exact for every finite x; +-inf for infinite x.
NBI_INLINE double nbi_cell_f(const nbiCellMath *m, double x)
{
    return floor(m->pow2 ? x * m->inv : x / m->cell);
}

// floor(v) for |v| < 2^62, without a libm call: truncate, then step down for negatives.
NBI_INLINE int64_t nbi_floor_i64(double v)
{
    int64_t t = (int64_t)v;
    return t - ((double)t > v);
}

// The cell of a finite coordinate already known to map within +-NBI_CELL_LIMIT.
NBI_INLINE int64_t nbi_cell_i(const nbiCellMath *m, double x)
{
    return nbi_floor_i64(m->pow2 ? x * m->inv : x / m->cell);
}

// The distance test every query uses, in one place: dx*dx + dy*dy (+ dz*dz) in double, summed
// left to right, exactly as a brute-force loop computes it (-ffp-contract=off keeps it unfused).
NBI_INLINE double nbi_dist2(const double *a, const double *b, int dim)
{
    const double dx = a[0] - b[0], dy = a[1] - b[1];
    double d2 = dx * dx + dy * dy;
    if (dim == 3) {
        const double dz = a[2] - b[2];
        d2 = d2 + dz * dz;
    }
    return d2;
}

// The minimum image on one axis: a = |x - y|, min(a, p - a) (p = +inf: a). NaN stays NaN.
NBI_INLINE double nbi_wrap_d(double x, double y, double p)
{
    const double a = fabs(x - y), b = p - a;
    return b < a ? b : a;
}

// The periodic distance test (grid.h): the minimum image per axis, squared, summed in axis
// order. `per` holds P or +inf per axis (view.h: nbiWrap.kper).
NBI_INLINE double nbi_dist2_wrap(const double *a, const double *b, int dim, const double *per)
{
    const double dx = nbi_wrap_d(a[0], b[0], per[0]), dy = nbi_wrap_d(a[1], b[1], per[1]);
    double d2 = dx * dx + dy * dy;
    if (dim == 3) {
        const double dz = nbi_wrap_d(a[2], b[2], per[2]);
        d2 = d2 + dz * dz;
    }
    return d2;
}

// The largest true (real-number) distance d at which the double-precision test
// fl(dx*dx + dy*dy (+ dz*dz)) <= fl(r*r) can still accept a pair, over-estimated: rounding of
// the subtraction, the squares and the sums, and underflow of tiny squares to zero. +inf when
// r*r overflows (then every pair passes). Cells only ever prune with this reach.
double nbi_reach(double r);

// Rings of cells to search around a point's own cell so that every pair within true distance
// `reach` is covered, for points whose coordinates are at most `max_abs` in magnitude:
// ceil((reach + rounding of x / cell) / cell). Returned as a double (may be huge or inf).
double nbi_rings(double reach, double cell, double max_abs);

// The default cell edge for query radius r: the reach, widened by the rounding margin so that
// nbi_rings(nbi_reach(r), cell, max_abs) == 1. DBL_MAX when that would overflow.
double nbi_cell_for_radius(double r, double max_abs);

// A cell edge the caller chose, nudged up by 2^-30 of itself when that saves a ring of cells
// at radius r: an edge of exactly r (or r/2, r/3, ...) would otherwise need one ring more, since
// the reach of a query at r is a hair above r. Unchanged when it saves nothing (a power-of-two
// edge keeps its fast path then).
double nbi_cell_snap(double cell, double r, double max_abs);

// Rings of cells on a periodic axis (period p, m cells of edge e) that cover every pair the
// minimum-image test can accept at `reach` (nbi_reach of the radius): an accepted pair is within
// true distance reach + 2u p (the rounding of |x - y| and p - a), and each cell number is off by
// at most (m + 1) u of the true x / e (the last cell's clamp included). As a double; may be huge.
double nbi_wrap_rings1(double reach, double p, double e, int64_t m);

// A strong 64-bit mix (the splitmix64 finaliser): every input bit affects every output bit.
NBI_INLINE uint64_t nbi_mix64(uint64_t z)
{
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9u;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

// Hash of a cell's integer coordinates (z = 0 in 2D), well mixed in the high bits: take the top
// `bits` bits for a table of 2^bits slots. Each coordinate is mixed in turn, not combined
// linearly first: a linear combination (x*A ^ y*B) lets crafted coordinates, e.g. multiples of
// a large power of two, collide in every bit and make the table's probes quadratic.
// It is computed in two steps, z and y first, then x, so that a row of cells (the same y and z:
// what a range query and the pair stencil look up in turn) shares the first step:
//     const uint64_t row = nbi_cell_hash_row(y, z);  ...  nbi_cell_hash_x(row, x)
NBI_INLINE uint64_t nbi_cell_hash_row(int64_t y, int64_t z)
{
    // Every 2D cell has z = 0: its round is skipped.
    const uint64_t h = z == 0 ? 0x9E3779B97F4A7C15u : nbi_mix64((uint64_t)z + 0x9E3779B97F4A7C15u);
    return nbi_mix64(h ^ (uint64_t)y);
}
NBI_INLINE uint64_t nbi_cell_hash_x(uint64_t row, int64_t x)
{
    return nbi_mix64(row ^ (uint64_t)x);
}
NBI_INLINE uint64_t nbi_cell_hash(int64_t x, int64_t y, int64_t z)
{
    return nbi_cell_hash_x(nbi_cell_hash_row(y, z), x);
}

// ---- Z order over a box of cells ----
// Morton codes of cells' offsets from a box's corner, and the offsets back from a code: the
// grid's hashed layout keeps its cells in this order (view.h), and a coded cell table keys its
// entries by these codes (cell_table.h).

// A cell's code interleaves the bits of its offsets from lo, each shifted right by `shift` so
// that they fit (NBI_CODE_BITS(dim) bits an axis): bit b of axis a's offset is bit b * dim + a
// of the code. Cells whose codes share all but their low L * dim bits form an aligned block of
// 2^L (shifted) cells a side.
#define NBI_CODE_BITS(dim) ((dim) == 3 ? 21 : 32)

// The bits of x (below 2^21 / 2^32) spread to every third / second bit, and gathered back:
// five steps of shift, or and mask each way (written out: a table-driven loop cost the hashed
// build 250 instructions a cell more).
NBI_INLINE uint64_t nbi_spread3(uint64_t x)
{
    x &= 0x1FFFFFu;
    x = (x | x << 32) & 0x1F00000000FFFFu;
    x = (x | x << 16) & 0x1F0000FF0000FFu;
    x = (x | x << 8) & 0x100F00F00F00F00Fu;
    x = (x | x << 4) & 0x10C30C30C30C30C3u;
    return (x | x << 2) & 0x1249249249249249u;
}

NBI_INLINE uint64_t nbi_spread2(uint64_t x)
{
    x &= 0xFFFFFFFFu;
    x = (x | x << 16) & 0x0000FFFF0000FFFFu;
    x = (x | x << 8) & 0x00FF00FF00FF00FFu;
    x = (x | x << 4) & 0x0F0F0F0F0F0F0F0Fu;
    x = (x | x << 2) & 0x3333333333333333u;
    return (x | x << 1) & 0x5555555555555555u;
}

NBI_INLINE uint64_t nbi_gather3(uint64_t x)
{
    x &= 0x1249249249249249u;
    x = (x ^ x >> 2) & 0x10C30C30C30C30C3u;
    x = (x ^ x >> 4) & 0x100F00F00F00F00Fu;
    x = (x ^ x >> 8) & 0x1F0000FF0000FFu;
    x = (x ^ x >> 16) & 0x1F00000000FFFFu;
    return (x ^ x >> 32) & 0x1FFFFFu;
}

NBI_INLINE uint64_t nbi_gather2(uint64_t x)
{
    x &= 0x5555555555555555u;
    x = (x ^ x >> 1) & 0x3333333333333333u;
    x = (x ^ x >> 2) & 0x0F0F0F0F0F0F0F0Fu;
    x = (x ^ x >> 4) & 0x00FF00FF00FF00FFu;
    x = (x ^ x >> 8) & 0x0000FFFF0000FFFFu;
    return (x ^ x >> 16) & 0xFFFFFFFFu;
}

// The code of the cell at key k (within lo .. hi) of a box starting at lo.
NBI_INLINE uint64_t nbi_code_of(const int64_t k[3], const int64_t lo[3], int dim, int shift)
{
    const uint64_t x = (uint64_t)(k[0] - lo[0]) >> shift, y = (uint64_t)(k[1] - lo[1]) >> shift;
    if (dim == 2) return nbi_spread2(x) | nbi_spread2(y) << 1;
    const uint64_t z = (uint64_t)(k[2] - lo[2]) >> shift;
    return nbi_spread3(x) | nbi_spread3(y) << 1 | nbi_spread3(z) << 2;
}

// Axis a's (shifted) offset in a code.
NBI_INLINE uint64_t nbi_code_axis(uint64_t code, int dim, int a)
{
    return dim == 2 ? nbi_gather2(code >> a) : nbi_gather3(code >> a);
}

#endif
