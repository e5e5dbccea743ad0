// SPDX-License-Identifier: MIT
// The kNN index (knn_index.h): a bounding-volume tree over the points in fine Z order, whose
// leaves adapt to the density as a k-d tree's do, where the cells of a grid sized for a radius
// cannot (a blob's core holds hundreds of points a cell; clustered 3D data scatters a query's
// neighbours over many blocks of cells).
//
// Build, O(n): each point's Morton code (21 bits an axis in 3D, 32 in 2D, fewer when n needs
// the bits: the code and the point's view position share one 64-bit key) over the points' box,
// scaled alike on every axis so that code blocks are cubes; an LSD radix sort of the keys on
// the code's bits only (the positions below them keep ties in view order, which is cell order:
// points of one code stay spatially together); the coordinates, indices and filter bits
// copied into that order, so a leaf is a few contiguous cache lines; leaves of
// NBI_KNN_LEAF_PTS consecutive points with their exact boxes; the tree above them merged
// bottom-up, two children a node.
//
// Query: the leaf holding the query's own code (a binary search over the leaves' first codes)
// is scanned first, which gives a tight bound at once; then the search climbs from that leaf to
// the root and, at each level, searches the sibling subtree when its box is not beyond the k-th
// best, nearest child first. A box's squared gap to the query is computed in the order
// nbi_dist2 computes a point's d2, from gaps that are each at most the point's |difference|
// (rounding is monotone), so it is never above the d2 of any point in the box: pruning a box
// whose gap is strictly above the k-th best loses no answer, ties included, and needs no margin.
#include "knn_index.h"

#include "knn_heap.h"

#include <math.h>
#include <string.h>

// ---- build ----

enum { NBI_RADIX_BITS = 11, NBI_RADIX_MAX_PASSES = 6 };

// Sorts keys a[0..n) by bits [lo, hi) (LSD, stable; ties keep their order), using tmp (n
// entries) and hist (NBI_RADIX_MAX_PASSES << NBI_RADIX_BITS counts). The sorted keys end in a
// (copied back if the passes left them in tmp). A pass whose digit is the same for every key
// is skipped.
static void nbi_radix_sort(uint64_t *a, uint64_t *tmp, int32_t n, int lo, int hi, int32_t *hist)
{
    const int width = hi - lo;
    if (width <= 0 || n < 2) return;
    const int passes = (width + NBI_RADIX_BITS - 1) / NBI_RADIX_BITS;
    const int bits = (width + passes - 1) / passes;
    const uint64_t dmask = ((uint64_t)1 << bits) - 1;
    const size_t buckets = (size_t)1 << bits;
    memset(hist, 0, (size_t)passes * buckets * sizeof *hist);
    for (int32_t i = 0; i < n; i++)
        for (int p = 0; p < passes; p++) hist[(size_t)p * buckets + ((a[i] >> (lo + p * bits)) & dmask)]++;
    uint64_t *src = a, *dst = tmp;
    for (int p = 0; p < passes; p++) {
        int32_t *h = hist + (size_t)p * buckets;
        const int shift = lo + p * bits;
        if (h[(src[0] >> shift) & dmask] == n) continue; // one digit for all
        int32_t sum = 0;
        for (size_t b = 0; b < buckets; b++) {
            const int32_t c = h[b];
            h[b] = sum;
            sum += c;
        }
        for (int32_t i = 0; i < n; i++) dst[h[(src[i] >> shift) & dmask]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
}

// The per-axis code of coordinate x: its offset from the box's low corner in code units,
// clamped to [0, max_cell] (a query may lie outside the box).
NBI_INLINE uint64_t nbi_ix_cell(const nbiKnnIndex *ix, int a, double x)
{
    const double u = (x - ix->origin[a]) * ix->scale;
    if (!(u > 0.0)) return 0;
    return u >= (double)ix->max_cell ? ix->max_cell : (uint64_t)u;
}

NBI_INLINE uint64_t nbi_ix_code(const nbiKnnIndex *ix, const double *p)
{
    if (ix->dim == 2) return nbi_spread2(nbi_ix_cell(ix, 0, p[0])) | nbi_spread2(nbi_ix_cell(ix, 1, p[1])) << 1;
    return nbi_spread3(nbi_ix_cell(ix, 0, p[0])) | nbi_spread3(nbi_ix_cell(ix, 1, p[1])) << 1 |
           nbi_spread3(nbi_ix_cell(ix, 2, p[2])) << 2;
}

// Bits that hold every value below n (at least 1).
static int nbi_bits_for(int32_t n)
{
    return n > 1 ? nbi_top_bit64((uint64_t)(n - 1)) + 1 : 1;
}

// Grows the index's storage for n points of the view, all or nothing.
static bool nbi_ix_grow(nbiKnnIndex *ix, int32_t n, int dim, bool filtered, int32_t top,
                        const nbAllocator *alloc)
{
    nbiBuf *cur[7] = {&ix->pts, &ix->idx, &ix->bits, &ix->box, &ix->nbits, &ix->code, &ix->hist};
    const size_t need[7] = {(size_t)n * (size_t)dim,
                            (size_t)n,
                            filtered ? 2 * (size_t)n : 0,
                            2 * (size_t)top * 2 * (size_t)dim,
                            filtered ? 2 * (size_t)top * 2 : 0,
                            2 * (size_t)n,
                            (size_t)NBI_RADIX_MAX_PASSES << NBI_RADIX_BITS};
    const size_t elem[7] = {sizeof(double),   sizeof(int32_t),  sizeof(uint32_t), sizeof(double),
                            sizeof(uint32_t), sizeof(uint64_t), sizeof(int32_t)};
    nbiBuf next[7];
    if (!nbi_bufs_prepare(alloc, cur, next, need, elem, 7)) return false;
    nbi_bufs_commit(alloc, cur, next, elem, 7, false);
    return true;
}

static bool nbi_ix_build(nbiKnnIndex *ix, const nbiView *v, const nbAllocator *alloc)
{
    const int32_t n = v->n;
    const int dim = v->dim;
    const bool filtered = v->cat != NULL;
    const int32_t nleaves = (n + NBI_KNN_LEAF_PTS - 1) / NBI_KNN_LEAF_PTS;
    int32_t top = 1;
    while (top < nleaves) top *= 2;
    if (!nbi_ix_grow(ix, n, dim, filtered, top, alloc)) return false;
    ix->n = n;
    ix->dim = dim;
    ix->nleaves = nleaves;
    ix->top = top;
    ix->filtered = filtered;

    // The box, and the code's scale: the widest axis spans the codes.
    double mn[3] = {0, 0, 0}, mx[3] = {0, 0, 0};
    for (int a = 0; a < dim; a++) mn[a] = mx[a] = v->pts[a];
    for (int32_t p = 1; p < n; p++)
        for (int a = 0; a < dim; a++) {
            const double x = v->pts[(size_t)p * (size_t)dim + (size_t)a];
            mn[a] = x < mn[a] ? x : mn[a];
            mx[a] = x > mx[a] ? x : mx[a];
        }
    const int pos_bits = nbi_bits_for(n);
    int axis_bits = (64 - pos_bits) / dim;
    if (axis_bits > NBI_CODE_BITS(dim)) axis_bits = NBI_CODE_BITS(dim);
    ix->max_cell = ((uint64_t)1 << axis_bits) - 1;
    double span = 0.0;
    for (int a = 0; a < dim; a++) {
        ix->origin[a] = mn[a];
        span = mx[a] - mn[a] > span ? mx[a] - mn[a] : span; // (may be +inf: then every code is 0)
    }
    ix->origin[2] = dim == 3 ? mn[2] : 0.0;
    ix->scale = span > 0.0 && span < (double)INFINITY ? (double)ix->max_cell / span : 0.0;

    uint64_t *key = (uint64_t *)ix->code.ptr;
    for (int32_t p = 0; p < n; p++)
        key[p] = nbi_ix_code(ix, v->pts + (size_t)p * (size_t)dim) << pos_bits | (uint64_t)p;
    nbi_radix_sort(key, key + n, n, pos_bits, pos_bits + axis_bits * dim,
                   (int32_t *)ix->hist.ptr);

    double *pts = (double *)ix->pts.ptr;
    int32_t *idx = (int32_t *)ix->idx.ptr;
    uint32_t *bits = (uint32_t *)ix->bits.ptr;
    const uint64_t pmask = ((uint64_t)1 << pos_bits) - 1;
    for (int32_t i = 0; i < n; i++) {
        const int32_t p = (int32_t)(key[i] & pmask);
        for (int a = 0; a < dim; a++)
            pts[(size_t)i * (size_t)dim + (size_t)a] = v->pts[(size_t)p * (size_t)dim + (size_t)a];
        idx[i] = v->idx[p];
        if (filtered) {
            bits[2 * (size_t)i] = v->cat[p];
            bits[2 * (size_t)i + 1] = v->mask[p];
        }
        key[i] >>= pos_bits; // the code alone, for the query's binary search
    }

    // Leaves, then the nodes above them.
    double *box = (double *)ix->box.ptr;
    uint32_t *nbits = (uint32_t *)ix->nbits.ptr;
    const size_t bw = 2 * (size_t)dim; // doubles a box
    for (int32_t j = 0; j < top; j++) {
        double *b = box + (size_t)(top + j) * bw;
        uint32_t cat = 0, mask = 0;
        for (int a = 0; a < dim; a++) {
            b[a] = (double)INFINITY;
            b[dim + a] = -(double)INFINITY;
        }
        const int32_t p1 = (j + 1) * NBI_KNN_LEAF_PTS < n ? (j + 1) * NBI_KNN_LEAF_PTS : n;
        for (int32_t p = j * NBI_KNN_LEAF_PTS; p < p1; p++) {
            for (int a = 0; a < dim; a++) {
                const double x = pts[(size_t)p * (size_t)dim + (size_t)a];
                b[a] = x < b[a] ? x : b[a];
                b[dim + a] = x > b[dim + a] ? x : b[dim + a];
            }
            if (filtered) {
                cat |= bits[2 * (size_t)p];
                mask |= bits[2 * (size_t)p + 1];
            }
        }
        if (filtered) {
            nbits[2 * (size_t)(top + j)] = cat;
            nbits[2 * (size_t)(top + j) + 1] = mask;
        }
    }
    for (int32_t t = top - 1; t >= 1; t--) {
        double *b = box + (size_t)t * bw;
        const double *l = box + (size_t)(2 * t) * bw, *r = l + bw;
        for (int a = 0; a < dim; a++) {
            b[a] = l[a] < r[a] ? l[a] : r[a];
            b[dim + a] = l[dim + a] > r[dim + a] ? l[dim + a] : r[dim + a];
        }
        if (filtered) {
            nbits[2 * (size_t)t] = nbits[4 * (size_t)t] | nbits[4 * (size_t)t + 2];
            nbits[2 * (size_t)t + 1] = nbits[4 * (size_t)t + 1] | nbits[4 * (size_t)t + 3];
        }
    }
    return true;
}

const nbiKnnIndex *nbi_knn_index_get(nbiKnnLazy *z, const nbiView *v, const nbAllocator *a)
{
#if NBI_KNN_INDEX
    int s = atomic_load_explicit(&z->state, memory_order_acquire);
    if (s == NBI_KNN_READY) return &z->ix;
    if (s != NBI_KNN_STALE || v->n == 0) return NULL;
    if (!atomic_compare_exchange_strong_explicit(&z->state, &s, NBI_KNN_BUILDING,
                                                 memory_order_acquire, memory_order_acquire))
        return s == NBI_KNN_READY ? &z->ix : NULL; // another query built it, or is building it
    const bool ok = nbi_ix_build(&z->ix, v, a);
    atomic_store_explicit(&z->state, ok ? NBI_KNN_READY : NBI_KNN_FAILED, memory_order_release);
    return ok ? &z->ix : NULL;
#else
    (void)z;
    (void)v;
    (void)a;
    return NULL;
#endif
}

void nbi_knn_index_stale(nbiKnnLazy *z)
{
#if NBI_KNN_INDEX
    atomic_store_explicit(&z->state, NBI_KNN_STALE, memory_order_relaxed);
#else
    (void)z;
#endif
}

void nbi_knn_index_free(nbiKnnLazy *z, const nbAllocator *a)
{
    nbiKnnIndex *ix = &z->ix;
    nbi_free(a, ix->pts.ptr, ix->pts.cap, sizeof(double));
    nbi_free(a, ix->idx.ptr, ix->idx.cap, sizeof(int32_t));
    nbi_free(a, ix->bits.ptr, ix->bits.cap, sizeof(uint32_t));
    nbi_free(a, ix->box.ptr, ix->box.cap, sizeof(double));
    nbi_free(a, ix->nbits.ptr, ix->nbits.cap, sizeof(uint32_t));
    nbi_free(a, ix->code.ptr, ix->code.cap, sizeof(uint64_t));
    nbi_free(a, ix->hist.ptr, ix->hist.cap, sizeof(int32_t));
    memset(ix, 0, sizeof *ix);
    nbi_knn_index_stale(z);
}

size_t nbi_knn_index_bytes(const nbiKnnLazy *z)
{
    const nbiKnnIndex *ix = &z->ix;
    return ix->pts.cap * sizeof(double) + ix->idx.cap * sizeof(int32_t) +
           ix->bits.cap * sizeof(uint32_t) + ix->box.cap * sizeof(double) +
           ix->nbits.cap * sizeof(uint32_t) + ix->code.cap * sizeof(uint64_t) +
           ix->hist.cap * sizeof(int32_t);
}

// ---- query ----

typedef struct nbiIxQuery {
    const nbiKnnIndex *ix;
    double q[3];
    nbFilter f;
    double lim2;     // max_distance squared
    double bound;    // nbi_heap_bound: a candidate farther than this cannot enter
    nbiKnnHeap heap; // the k best so far
} nbiIxQuery;

// The squared gap from the query to box b (lo[dim], hi[dim]): per axis the gap is lo - q, q - hi
// or 0, each at most the |difference| of any point in the box (monotone rounding), squared and
// summed in nbi_dist2's order. An empty box (lo = +inf) is +inf away.
NBI_INLINE double nbi_ix_gap2(const double *q, const double *b, int dim)
{
    double g[3];
    for (int a = 0; a < dim; a++) {
        const double below = b[a] - q[a], above = q[a] - b[dim + a];
        g[a] = below > above ? below : above;
        g[a] = g[a] > 0.0 ? g[a] : 0.0;
    }
    double d2 = g[0] * g[0] + g[1] * g[1];
    if (dim == 3) d2 = d2 + g[2] * g[2];
    return d2;
}

// Whether node t's box or bits rule it out.
NBI_INLINE bool nbi_ix_beyond(const nbiIxQuery *x, double gap2)
{
    return gap2 > x->bound;
}

NBI_INLINE bool nbi_ix_bits_out(const nbiIxQuery *x, int32_t t)
{
    if (!x->ix->filtered) return false;
    const uint32_t *nb = (const uint32_t *)x->ix->nbits.ptr + 2 * (size_t)t;
    return !nbi_filter_match(x->f.category, x->f.mask, nb[0], nb[1]);
}

// Scans leaf j.
NBI_INLINE void nbi_ix_leaf(nbiIxQuery *x, int dim, int32_t j)
{
    const nbiKnnIndex *ix = x->ix;
    const int32_t p0 = j * NBI_KNN_LEAF_PTS;
    const int32_t p1 = p0 + NBI_KNN_LEAF_PTS < ix->n ? p0 + NBI_KNN_LEAF_PTS : ix->n;
    const double *pts = (const double *)ix->pts.ptr;
    const int32_t *idx = (const int32_t *)ix->idx.ptr;
    const uint32_t *bits = (const uint32_t *)ix->bits.ptr;
    for (int32_t p = p0; p < p1; p++) {
        const double d2 = nbi_dist2(x->q, pts + (size_t)p * (size_t)dim, dim);
        if (!(d2 <= x->bound)) continue;
        if (ix->filtered && !nbi_filter_match(x->f.category, x->f.mask, bits[2 * (size_t)p],
                                              bits[2 * (size_t)p + 1]))
            continue;
        const nbNeighbor cand = {idx[p], d2};
        nbi_heap_offer(&x->heap, cand);
        x->bound = nbi_heap_bound(&x->heap, x->lim2);
    }
}

// Searches the subtree of node t (its gap2 given), nearest child first. The stack holds at most
// one node a level.
NBI_INLINE void nbi_ix_down(nbiIxQuery *x, int dim, int32_t t, double gap2)
{
    const nbiKnnIndex *ix = x->ix;
    const double *box = (const double *)ix->box.ptr;
    const size_t bw = 2 * (size_t)dim;
    int32_t st[64];
    double sg[64];
    int sp = 0;
    for (;;) {
        if (!nbi_ix_beyond(x, gap2)) {
            if (t >= ix->top) {
                nbi_ix_leaf(x, dim, t - ix->top);
            } else {
                int32_t l = 2 * t, r = l + 1;
                double gl = nbi_ix_gap2(x->q, box + (size_t)l * bw, dim);
                double gr = nbi_ix_gap2(x->q, box + (size_t)r * bw, dim);
                if (gr < gl) {
                    const int32_t tt = l;
                    const double tg = gl;
                    l = r;
                    gl = gr;
                    r = tt;
                    gr = tg;
                }
                const bool lout = nbi_ix_bits_out(x, l), rout = nbi_ix_bits_out(x, r);
                if (!rout && !nbi_ix_beyond(x, gr)) {
                    st[sp] = r;
                    sg[sp++] = gr;
                }
                if (!lout) {
                    t = l;
                    gap2 = gl;
                    continue;
                }
            }
        }
        if (sp == 0) return;
        t = st[--sp];
        gap2 = sg[sp];
    }
}

NBI_INLINE void nbi_ix_search(nbiIxQuery *x, int dim)
{
    const nbiKnnIndex *ix = x->ix;
    const double *box = (const double *)ix->box.ptr;
    const size_t bw = 2 * (size_t)dim;
    // The leaf of the query's code: the last whose first code is at most it.
    const uint64_t *code = (const uint64_t *)ix->code.ptr;
    const uint64_t qc = nbi_ix_code(ix, x->q);
    int32_t lo = 0, hi = ix->nleaves; // the answer is in [lo, hi)
    while (hi - lo > 1) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (code[(size_t)mid * NBI_KNN_LEAF_PTS] <= qc)
            lo = mid;
        else
            hi = mid;
    }
    int32_t t = ix->top + lo;
    if (!nbi_ix_bits_out(x, t)) nbi_ix_leaf(x, dim, lo);
    for (; t > 1; t >>= 1) {
        const int32_t s = t ^ 1;
        if (nbi_ix_bits_out(x, s)) continue;
        const double g = nbi_ix_gap2(x->q, box + (size_t)s * bw, dim);
        if (!nbi_ix_beyond(x, g)) nbi_ix_down(x, dim, s, g);
    }
}

int32_t nbi_knn_index_query(const nbiKnnIndex *ix, const double *point, nbFilter f,
                            double max_distance, nbNeighbor *out, int32_t k)
{
    nbiIxQuery x;
    x.ix = ix;
    x.q[0] = point[0];
    x.q[1] = point[1];
    x.q[2] = ix->dim == 3 ? point[2] : 0.0;
    x.f = f;
    x.lim2 = max_distance * max_distance;
    x.heap.e = out;
    x.heap.size = 0;
    x.heap.k = k < ix->n ? k : ix->n;
    x.bound = nbi_heap_bound(&x.heap, x.lim2);
    if (ix->dim == 2)
        nbi_ix_search(&x, 2);
    else
        nbi_ix_search(&x, 3);
    nbi_heap_sort(&x.heap);
    return x.heap.size;
}
