// SPDX-License-Identifier: MIT
// Counting pairs in bulk (grid_count_bulk.h). The decisions are exact, with no margin: a cell's box
// is the box of the points binned into it (not the cell's nominal box), and d2 is monotone in
// each axis's |difference| (fl(x - y) is monotone in x and y, squares and sums are monotone,
// and the build never contracts them into fused multiply-adds), so the box distances computed
// the way nbi_dist2 computes a pair's bound every pair's d2 from above and below.
#include "grid_count_bulk.h"

#include "cell.h"

#include <float.h>
#include <math.h>

enum {
    NBI_BULK_MIN_POINTS = 1024, // smaller sets: the walk is quick anyway
    NBI_BULK_MIN_PER_CELL = 8,  // points per bin, on average, below which the walk is cheaper
    NBI_BULK_FINE = 1024,       // bins enough for a radius near the points' extent
    NBI_BULK_COSTLY_RINGS = 2,  // rings of a hashed view's cells past which its walk is costly
};

// Bins a radius wide per axis: 4 in 2D (11 x 11 bins to classify around each), 2 in 3D
// (7 x 7 x 7). More bins a radius leave fewer points in bins the radius cuts, but cost more
// pairs of bins.
static int nbi_bulk_per_radius(int dim)
{
    return dim == 3 ? 2 : 4;
}

// One set binned: its coordinates in bin order, and each bin's range and points' box.
typedef struct nbiBins {
    int32_t n;
    int32_t *start; // nbins + 1 entries: bin c holds positions [start[c], start[c + 1])
    double *xyz;    // n * dim coordinates, bin by bin
    double *box;    // per bin: lo then hi, dim each (only for bins with points)
} nbiBins;

// The bins shared by both sets: origin, edge and extent per axis.
typedef struct nbiBinning {
    int dim;
    double origin[3], edge;
    int64_t ext[3];
    int64_t nbins;
} nbiBinning;

// Whether the pair walk over view v at this radius visits many cells that may be empty: a
// hashed view, whose walk probes every cell of a stencil of 2 ceil(radius / cell) + 1 a side
// (the walk refuses past a budget), at a radius over NBI_BULK_COSTLY_RINGS of its cells.
static bool nbi_walk_costly(const nbiView *v, double radius)
{
    return v->table != NULL && radius > NBI_BULK_COSTLY_RINGS * v->cm.cell;
}

static void nbi_bounds(const nbiView *v, double lo[3], double hi[3])
{
    for (int32_t i = 0; i < v->n; i++)
        for (int a = 0; a < v->dim; a++) {
            const double x = v->pts[(size_t)i * (size_t)v->dim + (size_t)a];
            lo[a] = x < lo[a] ? x : lo[a];
            hi[a] = x > hi[a] ? x : hi[a];
        }
}

// The bins of edge g->edge over [lo, hi] (g's origin and extents set); +inf when too many.
static double nbi_bins_at(nbiBinning *g, const double lo[3], const double hi[3])
{
    double bins = 1.0;
    for (int a = 0; a < g->dim; a++) {
        g->origin[a] = lo[a];
        const double e = floor((hi[a] - lo[a]) / g->edge) + 1.0; // an infinite edge: 1 bin
        if (!(e >= 1.0 && e < 0x1p31)) return (double)INFINITY;
        g->ext[a] = (int64_t)e;
        bins *= e;
    }
    return bins;
}

static int64_t nbi_bin_of(const nbiBinning *g, const double *x)
{
    int64_t c = 0;
    for (int a = g->dim - 1; a >= 0; a--) {
        const double f = floor((x[a] - g->origin[a]) / g->edge); // >= 0: x is in the box
        const int64_t i = f < (double)(g->ext[a] - 1) ? (int64_t)f : g->ext[a] - 1;
        c = c * g->ext[a] + (i > 0 ? i : 0);
    }
    return c;
}

// The box of positions [p0, p1) of x: lo then hi, dim each.
static void nbi_box_of(const double *x, int32_t p0, int32_t p1, int dim, double *box)
{
    for (int a = 0; a < dim; a++) {
        box[a] = (double)INFINITY;
        box[dim + a] = -(double)INFINITY;
    }
    for (int32_t p = p0; p < p1; p++)
        for (int a = 0; a < dim; a++) {
            const double v = x[(size_t)p * (size_t)dim + (size_t)a];
            box[a] = v < box[a] ? v : box[a];
            box[dim + a] = v > box[dim + a] ? v : box[dim + a];
        }
}

// Counts, prefix sums and scatter (one pass each), then each bin's box. `cell` is scratch of
// n entries. The arrays come from the caller.
static void nbi_bin(const nbiBinning *g, const nbiView *v, nbiBins *out, int32_t *cell)
{
    const int dim = g->dim;
    out->n = v->n;
    for (int64_t c = 0; c <= g->nbins; c++) out->start[c] = 0;
    for (int32_t i = 0; i < v->n; i++) {
        cell[i] = (int32_t)nbi_bin_of(g, v->pts + (size_t)i * (size_t)dim);
        out->start[cell[i] + 1]++;
    }
    for (int64_t c = 0; c < g->nbins; c++) out->start[c + 1] += out->start[c];
    for (int32_t i = 0; i < v->n; i++) { // start[c] runs to the bin's end, then steps back
        const int32_t at = out->start[cell[i]]++;
        for (int a = 0; a < dim; a++)
            out->xyz[(size_t)at * (size_t)dim + (size_t)a] =
                v->pts[(size_t)i * (size_t)dim + (size_t)a];
    }
    for (int64_t c = g->nbins; c > 0; c--) out->start[c] = out->start[c - 1];
    out->start[0] = 0;
    for (int64_t c = 0; c < g->nbins; c++)
        nbi_box_of(out->xyz, out->start[c], out->start[c + 1], dim,
                   out->box + (size_t)c * 2 * (size_t)dim);
}

// The least and the greatest d2 any point of box p and any of box q can have, as nbi_dist2
// computes them (axis by axis, in order).
static void nbi_box_d2(const double *p, const double *q, int dim, double *least, double *most)
{
    double lo2 = 0.0, hi2 = 0.0;
    for (int a = 0; a < dim; a++) {
        const double up = q[dim + a] - p[a], down = p[dim + a] - q[a];
        const double far = up > down ? up : down;
        const double gap1 = q[a] - p[dim + a], gap2 = p[a] - q[dim + a];
        double gap = gap1 > gap2 ? gap1 : gap2;
        gap = gap > 0.0 ? gap : 0.0;
        lo2 = a == 0 ? gap * gap : lo2 + gap * gap;
        hi2 = a == 0 ? far * far : hi2 + far * far;
    }
    *least = lo2;
    *most = hi2;
}

// Pairs within r2 between positions [a0, a1) of x and [b0, b1) of y; same: x == y and a0 == b0,
// each unordered pair once.
static int64_t nbi_test_block(const double *x, int32_t a0, int32_t a1, const double *y, int32_t b0,
                              int32_t b1, bool same, int dim, double r2)
{
    int64_t n = 0;
    for (int32_t i = a0; i < a1; i++) {
        const double *p = x + (size_t)i * (size_t)dim;
        for (int32_t j = same ? i + 1 : b0; j < b1; j++)
            n += nbi_dist2(p, y + (size_t)j * (size_t)dim, dim) <= r2;
    }
    return n;
}

// Splits positions [p0, p1) of x at the middle of its box's widest axis: returns the first
// position of the upper part (p0 or p1 when the split leaves a side empty).
static int32_t nbi_split(double *x, int32_t p0, int32_t p1, int dim, const double *box)
{
    int w = 0;
    for (int a = 1; a < dim; a++)
        if (box[dim + a] - box[a] > box[dim + w] - box[w]) w = a;
    const double mid = box[w] + 0.5 * (box[dim + w] - box[w]);
    int32_t i = p0, j = p1 - 1;
    for (;;) {
        while (i <= j && x[(size_t)i * (size_t)dim + (size_t)w] <= mid) i++;
        while (i <= j && x[(size_t)j * (size_t)dim + (size_t)w] > mid) j--;
        if (i >= j) return i;
        for (int a = 0; a < dim; a++) {
            const double t = x[(size_t)i * (size_t)dim + (size_t)a];
            x[(size_t)i * (size_t)dim + (size_t)a] = x[(size_t)j * (size_t)dim + (size_t)a];
            x[(size_t)j * (size_t)dim + (size_t)a] = t;
        }
    }
}

enum { NBI_BULK_LEAF = 512 }; // pairs of points below which a cut pair of boxes tests them all

// The pairs within r2 between positions [a0, a1) of x (box pa) and [b0, b1) of y (box pb);
// same: the same range, each unordered pair once. Boxes wholly within or beyond the radius are
// decided at once; a pair of boxes the radius cuts, with many points, splits the wider box at
// its middle and takes the halves by pairs (a dual tree built as it goes: the points are
// reordered within their range, which no other pair of bins depends on).
static int64_t nbi_count_boxes(double *x, int32_t a0, int32_t a1, const double *pa, double *y,
                               int32_t b0, int32_t b1, const double *pb, bool same, int dim,
                               double r2)
{
    double least, most;
    nbi_box_d2(pa, pb, dim, &least, &most);
    if (least > r2) return 0;
    const int64_t na = a1 - a0, nb = b1 - b0;
    if (most <= r2) return same ? na * (na - 1) / 2 : na * nb;
    if (na * nb <= NBI_BULK_LEAF) return nbi_test_block(x, a0, a1, y, b0, b1, same, dim, r2);
    double b1box[6], b2box[6];
    if (same || (na >= nb)) { // split a (for the same range, both sides with it)
        const int32_t m = nbi_split(x, a0, a1, dim, pa);
        if (m == a0 || m == a1) return nbi_test_block(x, a0, a1, y, b0, b1, same, dim, r2);
        nbi_box_of(x, a0, m, dim, b1box);
        nbi_box_of(x, m, a1, dim, b2box);
        if (same)
            return nbi_count_boxes(x, a0, m, b1box, x, a0, m, b1box, true, dim, r2) +
                   nbi_count_boxes(x, m, a1, b2box, x, m, a1, b2box, true, dim, r2) +
                   nbi_count_boxes(x, a0, m, b1box, x, m, a1, b2box, false, dim, r2);
        return nbi_count_boxes(x, a0, m, b1box, y, b0, b1, pb, false, dim, r2) +
               nbi_count_boxes(x, m, a1, b2box, y, b0, b1, pb, false, dim, r2);
    }
    const int32_t m = nbi_split(y, b0, b1, dim, pb);
    if (m == b0 || m == b1) return nbi_test_block(x, a0, a1, y, b0, b1, false, dim, r2);
    nbi_box_of(y, b0, m, dim, b1box);
    nbi_box_of(y, m, b1, dim, b2box);
    return nbi_count_boxes(x, a0, a1, pa, y, b0, m, b1box, false, dim, r2) +
           nbi_count_boxes(x, a0, a1, pa, y, m, b1, b2box, false, dim, r2);
}

static int64_t nbi_count_bins(const nbiBinning *g, const nbiBins *A, const nbiBins *B, bool self,
                              double r2, int64_t reach)
{
    const int dim = g->dim;
    int64_t total = 0;
    for (int64_t c = 0; c < g->nbins; c++) {
        const int32_t a0 = A->start[c], a1 = A->start[c + 1];
        if (a0 == a1) continue;
        int64_t at[3] = {0, 0, 0}, rest = c;
        for (int a = 0; a < dim; a++) {
            at[a] = rest % g->ext[a];
            rest /= g->ext[a];
        }
        int64_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
        for (int a = 0; a < dim; a++) {
            lo[a] = at[a] - reach > 0 ? at[a] - reach : 0;
            hi[a] = at[a] + reach < g->ext[a] - 1 ? at[a] + reach : g->ext[a] - 1;
        }
        const double *pa = A->box + (size_t)c * 2 * (size_t)dim;
        for (int64_t k = lo[2]; k <= hi[2]; k++)
            for (int64_t j = lo[1]; j <= hi[1]; j++)
                for (int64_t i = lo[0]; i <= hi[0]; i++) {
                    const int64_t d = i + g->ext[0] * (j + g->ext[1] * k);
                    if (self && d < c) continue; // each pair of bins once
                    const int32_t b0 = B->start[d], b1 = B->start[d + 1];
                    if (b0 == b1) continue;
                    total += nbi_count_boxes(A->xyz, a0, a1, pa, B->xyz, b0, b1,
                                             B->box + (size_t)d * 2 * (size_t)dim, self && d == c,
                                             dim, r2);
                }
    }
    return total;
}

bool nbi_count_bulk(const nbiView *a, const nbiView *b, double radius, const nbAllocator *alloc,
                    int64_t *count)
{
    const bool self = b == NULL;
    if (self) b = a;
    const int dim = a->dim;
    if (a->cat != NULL || b->cat != NULL || a->wrap != NULL || b->wrap != NULL || b->dim != dim)
        return false;
    const int64_t points = (int64_t)a->n + (self ? 0 : (int64_t)b->n);
    if (a->n == 0 || b->n == 0 || points < NBI_BULK_MIN_POINTS || !(radius > 0.0)) return false;
    const double inf = (double)INFINITY;
    double lo[3] = {inf, inf, inf}, hi[3] = {-inf, -inf, -inf};
    nbi_bounds(a, lo, hi);
    // The sets' boxes (lo then hi, dim each) wholly within or beyond the radius: the count at
    // once, as any pair of bins below.
    double ba[6], bb[6];
    for (int ax = 0; ax < dim; ax++) {
        ba[ax] = lo[ax];
        ba[dim + ax] = hi[ax];
    }
    if (!self) {
        double blo[3] = {inf, inf, inf}, bhi[3] = {-inf, -inf, -inf};
        nbi_bounds(b, blo, bhi);
        for (int ax = 0; ax < dim; ax++) {
            bb[ax] = blo[ax];
            bb[dim + ax] = bhi[ax];
            lo[ax] = blo[ax] < lo[ax] ? blo[ax] : lo[ax];
            hi[ax] = bhi[ax] > hi[ax] ? bhi[ax] : hi[ax];
        }
    }
    const double r2 = radius * radius;
    double least, most;
    nbi_box_d2(ba, self ? ba : bb, dim, &least, &most);
    if (least > r2) {
        *count = 0;
        return true;
    }
    if (most <= r2) {
        *count = self ? (int64_t)a->n * ((int64_t)a->n - 1) / 2 : (int64_t)a->n * (int64_t)b->n;
        return true;
    }
    // Bins of radius / per_radius; where that leaves few bins (a radius near the points' whole
    // extent), finer ones, so that the pairs of bins the radius cuts hold few points: up to
    // NBI_BULK_FINE bins, still NBI_BULK_MIN_PER_CELL points a bin.
    nbiBinning g = {dim, {0, 0, 0}, radius / nbi_bulk_per_radius(dim), {1, 1, 1}, 1};
    double bins = nbi_bins_at(&g, lo, hi);
    if (!(bins * NBI_BULK_MIN_PER_CELL <= (double)points)) {
        // Too many bins for the points: the radius is short for the box. The walk is the better
        // way, unless a view it would take is hashed at cells much smaller than the radius
        // (a heavy-tailed set's box is vast, yet the radius spans many points of its core).
        // Then the bins widen until they hold enough points each; the boxes' split of the pairs
        // the radius cuts does the rest.
        if (!nbi_walk_costly(a, radius) && !nbi_walk_costly(b, radius)) return false;
        while (!(bins * NBI_BULK_MIN_PER_CELL <= (double)points)) {
            g.edge = g.edge < DBL_MAX / 2 ? 2.0 * g.edge : (double)INFINITY;
            bins = nbi_bins_at(&g, lo, hi);
        }
    }
    const double want = fmin((double)points / NBI_BULK_MIN_PER_CELL, NBI_BULK_FINE);
    if (bins < want) {
        const double coarse = g.edge;
        g.edge *= pow(bins / want, 1.0 / dim);
        const double fine = nbi_bins_at(&g, lo, hi);
        if (fine * NBI_BULK_MIN_PER_CELL <= (double)points) {
            bins = fine;
        } else { // the floors' rounding overshot: the coarse bins
            g.edge = coarse;
            bins = nbi_bins_at(&g, lo, hi);
        }
    }
    g.nbins = (int64_t)bins;
    // Points within the radius lie at most radius / edge + 1 bins apart on each axis (the +1
    // for the quotients' rounding); the boxes' test makes any extra bin harmless.
    const double reach = ceil(radius / g.edge) + 1.0;
    const int64_t rb = reach < 0x1p31 ? (int64_t)reach : INT32_MAX;

    // Scratch: per set its bins' starts and boxes and its coordinates; one cell number a point.
    const size_t nb = (size_t)g.nbins, d = (size_t)dim;
    nbiBins A = {0}, B = {0};
    int32_t *cell = (int32_t *)nbi_alloc(alloc, (size_t)(a->n > b->n ? a->n : b->n), 4);
    A.start = (int32_t *)nbi_alloc(alloc, nb + 1, 4);
    A.xyz = (double *)nbi_alloc(alloc, (size_t)a->n * d, 8);
    A.box = (double *)nbi_alloc(alloc, nb * 2 * d, 8);
    if (!self) {
        B.start = (int32_t *)nbi_alloc(alloc, nb + 1, 4);
        B.xyz = (double *)nbi_alloc(alloc, (size_t)b->n * d, 8);
        B.box = (double *)nbi_alloc(alloc, nb * 2 * d, 8);
    }
    const bool ok = cell != NULL && A.start != NULL && A.xyz != NULL && A.box != NULL &&
                    (self || (B.start != NULL && B.xyz != NULL && B.box != NULL));
    if (ok) {
        nbi_bin(&g, a, &A, cell);
        if (!self) nbi_bin(&g, b, &B, cell);
        *count = nbi_count_bins(&g, &A, self ? &A : &B, self, r2, rb);
    }
    nbi_free(alloc, cell, (size_t)(a->n > b->n ? a->n : b->n), 4);
    nbi_free(alloc, A.start, nb + 1, 4);
    nbi_free(alloc, A.xyz, (size_t)a->n * d, 8);
    nbi_free(alloc, A.box, nb * 2 * d, 8);
    if (!self) {
        nbi_free(alloc, B.start, nb + 1, 4);
        nbi_free(alloc, B.xyz, (size_t)b->n * d, 8);
        nbi_free(alloc, B.box, nb * 2 * d, 8);
    }
    return ok;
}
