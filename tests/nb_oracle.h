// SPDX-License-Identifier: MIT
// The brute-force oracle every structure's tests and fuzzers compare against: point sets with
// optional categories/masks, the exact distance test, the filter rules, O(N^2) all pairs and
// cross pairs, O(N) radius / box / kNN queries, and the orderings results are compared in.
//
// Every answer is what the contract says a structure built from nbo_points(set) must report:
// the set's categories and masks (NULL = all bits) apply to pairs and queries alike, exactly as
// they do in the library. Lists are returned sorted (pairs by (i, j), indices ascending,
// neighbours by (dist2, index)) in memory from malloc that the caller frees; *count gets the
// length. The oracle aborts when malloc fails: it is test code.
#ifndef NEARBY_NB_ORACLE_H
#define NEARBY_NB_ORACLE_H

#include <nearby/nearby.h>
#include <nearby/quadtree.h>

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/// All category or mask bits: what a NULL category or mask array means.
#define NBO_ALL_BITS 0xFFFFFFFFu

/// A point set: n points of dim (2 or 3) doubles, point i at p + i * stride (stride 0 = dim),
/// and optionally one category and one mask per point (NULL = NBO_ALL_BITS for every point).
typedef struct nboSet {
    double *p;
    int32_t n, dim;
    int32_t stride; // doubles from one point to the next; 0 means dim
    uint32_t *cat;  // n entries or NULL
    uint32_t *mask; // n entries or NULL
} nboSet;

static inline void *nbo_xalloc(size_t bytes)
{
    void *m = malloc(bytes > 0 ? bytes : 1);
    if (m == NULL) {
        fprintf(stderr, "nb_oracle: out of memory (%zu bytes)\n", bytes);
        abort();
    }
    return m;
}

/// n zeroed points of dim doubles, no categories or masks. Free with nbo_set_free.
static inline nboSet nbo_set_new(int32_t n, int dim)
{
    nboSet s = {NULL, n, (int32_t)dim, 0, NULL, NULL};
    s.p = (double *)calloc((size_t)n * (size_t)dim + 3, sizeof(double));
    if (s.p == NULL) {
        fprintf(stderr, "nb_oracle: out of memory (%d points)\n", (int)n);
        abort();
    }
    return s;
}

/// Gives s its own category and mask arrays, every entry NBO_ALL_BITS (replacing any).
static inline void nbo_set_add_filters(nboSet *s)
{
    s->cat = (uint32_t *)nbo_xalloc((size_t)s->n * sizeof(uint32_t));
    s->mask = (uint32_t *)nbo_xalloc((size_t)s->n * sizeof(uint32_t));
    for (int32_t i = 0; i < s->n; i++) s->cat[i] = s->mask[i] = NBO_ALL_BITS;
}

/// Frees what nbo_set_new and nbo_set_add_filters allocated.
static inline void nbo_set_free(nboSet *s)
{
    free(s->p);
    free(s->cat);
    free(s->mask);
    s->p = NULL;
    s->cat = s->mask = NULL;
}

/// The coordinates of point i.
static inline const double *nbo_pt(const nboSet *s, int32_t i)
{
    return s->p + (size_t)i * (size_t)(s->stride > 0 ? s->stride : s->dim);
}

/// Point i's category / mask bits (NBO_ALL_BITS when the set has none).
static inline uint32_t nbo_cat(const nboSet *s, int32_t i)
{
    return s->cat != NULL ? s->cat[i] : NBO_ALL_BITS;
}
static inline uint32_t nbo_mask(const nboSet *s, int32_t i)
{
    return s->mask != NULL ? s->mask[i] : NBO_ALL_BITS;
}

/// The library's view of the set, categories and masks included: what a structure is built from.
static inline nbPoints nbo_points(const nboSet *s)
{
    nbPoints v = {s->p, s->n, s->dim, (size_t)s->stride * sizeof(double), s->cat, 0, s->mask, 0};
    return v;
}

/// The contract's distance: dx*dx + dy*dy (+ dz*dz) in double, dx = a - b, summed left to right.
static inline double nbo_d2(const double *a, const double *b, int dim)
{
    double dx = a[0] - b[0], dy = a[1] - b[1];
    double d2 = dx * dx + dy * dy;
    if (dim == 3) {
        double dz = a[2] - b[2];
        d2 = d2 + dz * dz;
    }
    return d2;
}

/// The contract's distance test: nbo_d2(a, b) <= r * r (a pair exactly r apart is within).
static inline bool nbo_within(const double *a, const double *b, int dim, double r)
{
    return nbo_d2(a, b, dim) <= r * r;
}

/// The pair rule between two things with category/mask bits (Box2D's collision filter).
static inline bool nbo_match(uint32_t cat_a, uint32_t mask_a, uint32_t cat_b, uint32_t mask_b)
{
    return (cat_a & mask_b) != 0 && (cat_b & mask_a) != 0;
}

/// May point i of a pair with point j of b (a == b for all-pairs)?
static inline bool nbo_pair_passes(const nboSet *a, int32_t i, const nboSet *b, int32_t j)
{
    return nbo_match(nbo_cat(a, i), nbo_mask(a, i), nbo_cat(b, j), nbo_mask(b, j));
}

/// Does point p pass the query filter f: (cat[p] & f.mask) && (f.category & mask[p])?
static inline bool nbo_filter_passes(const nboSet *s, int32_t p, nbFilter f)
{
    return (nbo_cat(s, p) & f.mask) != 0 && (f.category & nbo_mask(s, p)) != 0;
}

/// Is x inside the box, bounds inclusive on every axis (a NaN coordinate or bound: no)?
static inline bool nbo_in_box(const double *x, const double *lo, const double *hi, int dim)
{
    for (int d = 0; d < dim; d++)
        if (!(lo[d] <= x[d] && x[d] <= hi[d])) return false;
    return true;
}

// ---- stored items and rectangles (the hash, the tile grid, the quadtree) ----

/// Does a stored item with filter `item` pass the query filter q: (q.category & item.mask) and
/// (item.category & q.mask) both nonzero?
static inline bool nbo_item_passes(nbFilter q, nbFilter item)
{
    return (q.category & item.mask) != 0 && (item.category & q.mask) != 0;
}

/// Do rectangles a and b touch (closed: sharing an edge or a corner counts)?
static inline bool nbo_rect_touch(const nbRect *a, const nbRect *b)
{
    return a->min[0] <= b->max[0] && b->min[0] <= a->max[0] && a->min[1] <= b->max[1] &&
           b->min[1] <= a->max[1];
}

/// The squared distance from point p to rectangle r (0 inside or on it).
static inline double nbo_rect_d2(const double *p, const nbRect *r)
{
    double dx = r->min[0] - p[0] > p[0] - r->max[0] ? r->min[0] - p[0] : p[0] - r->max[0];
    double dy = r->min[1] - p[1] > p[1] - r->max[1] ? r->min[1] - p[1] : p[1] - r->max[1];
    dx = dx > 0.0 ? dx : 0.0;
    dy = dy > 0.0 ? dy : 0.0;
    return dx * dx + dy * dy;
}

/// Where the documented ray enters rectangle r within [0, tmax], or -1 when it misses: the
/// direction scaled by its largest component, then normalised; the slab test in double.
static inline double nbo_ray_enter(const double *o, const double *dir, double tmax, const nbRect *r)
{
    const double m = fabs(dir[0]) > fabs(dir[1]) ? fabs(dir[0]) : fabs(dir[1]);
    const double x = dir[0] / m, y = dir[1] / m, len = sqrt(x * x + y * y);
    const double d[2] = {x / len, y / len};
    double t0 = 0.0, t1 = tmax;
    for (int a = 0; a < 2; a++) {
        if (d[a] == 0.0) {
            if (o[a] < r->min[a] || o[a] > r->max[a]) return -1.0;
            continue;
        }
        double ta = (r->min[a] - o[a]) / d[a], tb = (r->max[a] - o[a]) / d[a];
        if (ta > tb) {
            const double s = ta;
            ta = tb;
            tb = s;
        }
        t0 = ta > t0 ? ta : t0;
        t1 = tb < t1 ? tb : t1;
        if (t0 > t1) return -1.0;
    }
    return t0;
}

// ---- orderings ----

/// Pairs by (i, j).
static inline int nbo_cmp_pair(const void *a, const void *b)
{
    const nbPair *x = (const nbPair *)a, *y = (const nbPair *)b;
    if (x->i != y->i) return x->i < y->i ? -1 : 1;
    return x->j < y->j ? -1 : x->j > y->j;
}

/// Indices ascending.
static inline int nbo_cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/// Neighbours by (dist2, index): the order kNN results come in (a NaN dist2 last).
static inline int nbo_cmp_neighbor(const void *a, const void *b)
{
    const nbNeighbor *x = (const nbNeighbor *)a, *y = (const nbNeighbor *)b;
    bool xn = x->dist2 != x->dist2, yn = y->dist2 != y->dist2; // NaN sorts last
    if (xn != yn) return xn ? 1 : -1;
    if (!xn && x->dist2 != y->dist2) return x->dist2 < y->dist2 ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/// Pairs by (i, j): a radix sort of the 64-bit keys (i, j) in four passes of 16 bits, since
/// the suites sort millions of pairs (qsort's comparisons took most of some tests' time).
static inline void nbo_sort_pairs(nbPair *p, int64_t n)
{
    if (n < 64) {
        if (n > 1) qsort(p, (size_t)n, sizeof(nbPair), nbo_cmp_pair);
        return;
    }
    uint64_t *key = (uint64_t *)nbo_xalloc(2 * (size_t)n * sizeof(uint64_t)), *tmp = key + n;
    for (int64_t t = 0; t < n; t++) // the sign bit flipped: signed order as unsigned
        key[t] =
            (uint64_t)((uint32_t)p[t].i ^ 0x80000000u) << 32 | ((uint32_t)p[t].j ^ 0x80000000u);
    for (int shift = 0; shift < 64; shift += 16) {
        size_t *count = (size_t *)calloc(65537, sizeof(size_t));
        if (count == NULL) abort();
        for (int64_t t = 0; t < n; t++) count[((key[t] >> shift) & 0xffffu) + 1]++;
        for (int d = 0; d < 65536; d++) count[d + 1] += count[d];
        for (int64_t t = 0; t < n; t++) tmp[count[(key[t] >> shift) & 0xffffu]++] = key[t];
        free(count);
        uint64_t *swap = key;
        key = tmp;
        tmp = swap;
    }
    for (int64_t t = 0; t < n; t++) { // after four passes the sorted keys are back in key
        p[t].i = (int32_t)((uint32_t)(key[t] >> 32) ^ 0x80000000u);
        p[t].j = (int32_t)((uint32_t)key[t] ^ 0x80000000u);
    }
    free(key);
}
static inline void nbo_sort_indices(int32_t *p, int64_t n)
{
    if (n > 1) qsort(p, (size_t)n, sizeof(int32_t), nbo_cmp_i32);
}
static inline void nbo_sort_neighbors(nbNeighbor *p, int64_t n)
{
    if (n > 1) qsort(p, (size_t)n, sizeof(nbNeighbor), nbo_cmp_neighbor);
}

static inline void nbo_sift_down(nbNeighbor *h, int64_t n, int64_t at)
{
    for (;;) {
        int64_t big = at;
        const int64_t l = 2 * at + 1, r = l + 1;
        if (l < n && nbo_cmp_neighbor(&h[l], &h[big]) > 0) big = l;
        if (r < n && nbo_cmp_neighbor(&h[r], &h[big]) > 0) big = r;
        if (big == at) return;
        const nbNeighbor t = h[at];
        h[at] = h[big];
        h[big] = t;
        at = big;
    }
}

/// The min(k, n) first of p in (dist2, index) order, sorted, moved to its front: a max-heap of
/// the k best so far, which most candidates only compare against (a full sort of every point
/// per query took most of the kNN suites' time). Returns min(k, n).
static inline int32_t nbo_select_neighbors(nbNeighbor *p, int32_t n, int32_t k)
{
    if (k >= n / 4) {
        nbo_sort_neighbors(p, n);
        return k < n ? k : n;
    }
    if (k <= 0) return 0;
    for (int64_t at = k / 2 - 1; at >= 0; at--) nbo_sift_down(p, k, at);
    for (int32_t t = k; t < n; t++)
        if (nbo_cmp_neighbor(&p[t], &p[0]) < 0) {
            p[0] = p[t];
            nbo_sift_down(p, k, 0);
        }
    nbo_sort_neighbors(p, k);
    return k;
}

/// Same length and the same entries in the same order (neighbours: index and exact dist2).
static inline bool nbo_same_pairs(const nbPair *a, int64_t na, const nbPair *b, int64_t nb)
{
    if (na != nb) return false;
    for (int64_t k = 0; k < na; k++)
        if (a[k].i != b[k].i || a[k].j != b[k].j) return false;
    return true;
}
static inline bool nbo_same_indices(const int32_t *a, int64_t na, const int32_t *b, int64_t nb)
{
    if (na != nb) return false;
    for (int64_t k = 0; k < na; k++)
        if (a[k] != b[k]) return false;
    return true;
}
static inline bool nbo_same_neighbors(const nbNeighbor *a, int64_t na, const nbNeighbor *b,
                                      int64_t nb)
{
    if (na != nb) return false;
    for (int64_t k = 0; k < na; k++)
        if (a[k].index != b[k].index || a[k].dist2 != b[k].dist2) return false;
    return true;
}

// ---- brute force ----

/// A growing list of pairs.
typedef struct nboPairList {
    nbPair *p;
    int64_t n, cap;
} nboPairList;

static inline void nbo_pair_push(nboPairList *l, int32_t i, int32_t j)
{
    if (l->n == l->cap) {
        l->cap = l->cap > 0 ? 2 * l->cap : 256;
        nbPair *grown = (nbPair *)realloc(l->p, (size_t)l->cap * sizeof(nbPair));
        if (grown == NULL) {
            fprintf(stderr, "nb_oracle: out of memory (%lld pairs)\n", (long long)l->cap);
            abort();
        }
        l->p = grown;
    }
    l->p[l->n].i = i;
    l->p[l->n].j = j;
    l->n++;
}

static inline nbPair *nbo_pair_finish(nboPairList *l, int64_t *count)
{
    *count = l->n;
    return l->p != NULL ? l->p : (nbPair *)nbo_xalloc(sizeof(nbPair));
}

/// All pairs (i < j) within r that pass the pair rule (cat[i] & mask[j]) && (cat[j] & mask[i]);
/// for a set without categories/masks, simply every pair within r. Sorted by (i, j).
static inline nbPair *nbo_pairs(const nboSet *s, double r, int64_t *count)
{
    nboPairList l = {NULL, 0, 0};
    bool finite = s->n >= 256 && isfinite(r * r);
    for (int32_t i = 0; i < s->n && finite; i++)
        for (int a = 0; a < s->dim; a++) finite = finite && isfinite(nbo_pt(s, i)[a]);
    if (!finite) { // every pair, as the contract reads
        for (int32_t i = 0; i < s->n; i++)
            for (int32_t j = i + 1; j < s->n; j++)
                if (nbo_within(nbo_pt(s, i), nbo_pt(s, j), s->dim, r) &&
                    nbo_pair_passes(s, i, s, j))
                    nbo_pair_push(&l, i, j);
        return nbo_pair_finish(&l, count);
    }
    // The same test on fewer pairs: the points by x, and for each the ones after it while
    // dx * dx <= r * r. Exact: dx = x_j - x_i grows with x_j (rounding is monotone), and the
    // rounded sum d2 is at least its first term dx * dx, so once dx * dx > r * r no later point
    // is within (nbo_d2 takes a - b, the same magnitude as b - a).
    int32_t *by_x = (int32_t *)nbo_xalloc((size_t)s->n * sizeof(int32_t));
    nbNeighbor *key = (nbNeighbor *)nbo_xalloc((size_t)s->n * sizeof(nbNeighbor));
    for (int32_t i = 0; i < s->n; i++) key[i] = (nbNeighbor){i, nbo_pt(s, i)[0]};
    nbo_sort_neighbors(key, s->n); // by x (finite), ties by index
    for (int32_t u = 0; u < s->n; u++) by_x[u] = key[u].index;
    free(key);
    for (int32_t u = 0; u < s->n; u++) {
        const int32_t i = by_x[u];
        for (int32_t v = u + 1; v < s->n; v++) {
            const int32_t j = by_x[v];
            const double dx = nbo_pt(s, j)[0] - nbo_pt(s, i)[0];
            if (dx * dx > r * r) break;
            const int32_t lo = i < j ? i : j, hi = i < j ? j : i;
            if (nbo_within(nbo_pt(s, lo), nbo_pt(s, hi), s->dim, r) &&
                nbo_pair_passes(s, lo, s, hi))
                nbo_pair_push(&l, lo, hi);
        }
    }
    free(by_x);
    nbo_sort_pairs(l.p, l.n);
    return nbo_pair_finish(&l, count);
}

/// Cross pairs: every (i of a, j of b) within r, roles kept, that passes the pair rule across
/// the two sets (a's bits for i, b's for j). Sorted by (i, j). a and b must have the same dim;
/// a == b is allowed and gives every ordered (i, j), (i, i) included.
static inline nbPair *nbo_cross_pairs(const nboSet *a, const nboSet *b, double r, int64_t *count)
{
    nboPairList l = {NULL, 0, 0};
    for (int32_t i = 0; i < a->n; i++)
        for (int32_t j = 0; j < b->n; j++)
            if (nbo_within(nbo_pt(a, i), nbo_pt(b, j), a->dim, r) && nbo_pair_passes(a, i, b, j))
                nbo_pair_push(&l, i, j);
    return nbo_pair_finish(&l, count);
}

/// Indices p within r of center that pass filter f, ascending.
static inline int32_t *nbo_radius_filtered(const nboSet *s, const double *center, double r,
                                           nbFilter f, int32_t *count)
{
    int32_t *out = (int32_t *)nbo_xalloc((size_t)s->n * sizeof(int32_t));
    int32_t n = 0;
    for (int32_t p = 0; p < s->n; p++)
        if (nbo_within(center, nbo_pt(s, p), s->dim, r) && nbo_filter_passes(s, p, f)) out[n++] = p;
    *count = n;
    return out;
}

/// Indices within r of center, ascending: nbo_radius_filtered with NB_FILTER_ALL, which (as in
/// the library) still drops points whose category or mask is 0.
static inline int32_t *nbo_radius(const nboSet *s, const double *center, double r, int32_t *count)
{
    return nbo_radius_filtered(s, center, r, NB_FILTER_ALL, count);
}

/// Indices p with lo[d] <= p[d] <= hi[d] on every axis that pass filter f, ascending.
static inline int32_t *nbo_box_filtered(const nboSet *s, const double *lo, const double *hi,
                                        nbFilter f, int32_t *count)
{
    int32_t *out = (int32_t *)nbo_xalloc((size_t)s->n * sizeof(int32_t));
    int32_t n = 0;
    for (int32_t p = 0; p < s->n; p++)
        if (nbo_in_box(nbo_pt(s, p), lo, hi, s->dim) && nbo_filter_passes(s, p, f)) out[n++] = p;
    *count = n;
    return out;
}

/// nbo_box_filtered with NB_FILTER_ALL.
static inline int32_t *nbo_box(const nboSet *s, const double *lo, const double *hi, int32_t *count)
{
    return nbo_box_filtered(s, lo, hi, NB_FILTER_ALL, count);
}

/// The min(k, passing) points nearest to q that pass filter f, by (dist2, index); k >= 0.
static inline nbNeighbor *nbo_knn_filtered(const nboSet *s, const double *q, int32_t k, nbFilter f,
                                           int32_t *count)
{
    nbNeighbor *all = (nbNeighbor *)nbo_xalloc((size_t)s->n * sizeof(nbNeighbor));
    int32_t n = 0;
    for (int32_t p = 0; p < s->n; p++)
        if (nbo_filter_passes(s, p, f)) {
            all[n].index = p;
            all[n].dist2 = nbo_d2(q, nbo_pt(s, p), s->dim);
            n++;
        }
    *count = nbo_select_neighbors(all, n, k);
    return all;
}

/// nbo_knn_filtered with NB_FILTER_ALL.
static inline nbNeighbor *nbo_knn(const nboSet *s, const double *q, int32_t k, int32_t *count)
{
    return nbo_knn_filtered(s, q, k, NB_FILTER_ALL, count);
}

// ---- periodic boxes (grid.h: desc.period) ----
// The minimum image, written from its definition: per axis a = |x - y|, d = min(a, P - a) when
// the axis has a period P > 0, else d = a; d2 sums d * d in axis order. The queries below are
// the ones above with this distance (and, for boxes, the wrapped box of grid.h).

/// The minimum-image squared distance; period[a] = 0: axis a does not wrap.
static inline double nbo_wrap_d2(const double *a, const double *b, int dim, const double *period)
{
    double d2 = 0.0;
    for (int k = 0; k < dim; k++) {
        const double t = a[k] > b[k] ? a[k] - b[k] : b[k] - a[k];
        double d = t;
        if (period[k] > 0.0 && period[k] - t < t) d = period[k] - t;
        d2 = k == 0 ? d * d : d2 + d * d;
    }
    return d2;
}

static inline bool nbo_wrap_within(const double *a, const double *b, int dim, const double *period,
                                   double r)
{
    return nbo_wrap_d2(a, b, dim, period) <= r * r;
}

/// All pairs (i < j) within r by the minimum image, with the pair rule. Sorted by (i, j).
static inline nbPair *nbo_wrap_pairs(const nboSet *s, double r, const double *period,
                                     int64_t *count)
{
    nboPairList l = {NULL, 0, 0};
    for (int32_t i = 0; i < s->n; i++)
        for (int32_t j = i + 1; j < s->n; j++)
            if (nbo_wrap_within(nbo_pt(s, i), nbo_pt(s, j), s->dim, period, r) &&
                nbo_pair_passes(s, i, s, j))
                nbo_pair_push(&l, i, j);
    return nbo_pair_finish(&l, count);
}

/// Cross pairs by the minimum image (nbo_cross_pairs with the periodic distance).
static inline nbPair *nbo_wrap_cross_pairs(const nboSet *a, const nboSet *b, double r,
                                           const double *period, int64_t *count)
{
    nboPairList l = {NULL, 0, 0};
    for (int32_t i = 0; i < a->n; i++)
        for (int32_t j = 0; j < b->n; j++)
            if (nbo_wrap_within(nbo_pt(a, i), nbo_pt(b, j), a->dim, period, r) &&
                nbo_pair_passes(a, i, b, j))
                nbo_pair_push(&l, i, j);
    return nbo_pair_finish(&l, count);
}

/// Indices within r of center by the minimum image, ascending.
static inline int32_t *nbo_wrap_radius(const nboSet *s, const double *center, double r,
                                       const double *period, int32_t *count)
{
    int32_t *out = (int32_t *)nbo_xalloc((size_t)s->n * sizeof(int32_t));
    int32_t n = 0;
    for (int32_t p = 0; p < s->n; p++)
        if (nbo_wrap_within(center, nbo_pt(s, p), s->dim, period, r) &&
            nbo_filter_passes(s, p, NB_FILTER_ALL))
            out[n++] = p;
    *count = n;
    return out;
}

/// Whether x is in the wrapped box on every axis: on a periodic axis the whole axis when
/// hi - lo >= P or a bound is infinite (and lo <= hi), else lo <= x' <= hi for an image
/// x' in {x - P, x, x + P}; on the others lo <= x <= hi.
static inline bool nbo_wrap_in_box(const double *x, const double *lo, const double *hi, int dim,
                                   const double *period)
{
    for (int d = 0; d < dim; d++) {
        const double p = period[d];
        if (!(lo[d] <= hi[d])) return false;
        if (p > 0.0) {
            if (hi[d] - lo[d] >= p || lo[d] < -DBL_MAX || hi[d] > DBL_MAX) continue;
            bool in = false;
            for (int t = -1; t <= 1; t++) {
                const double img = t == 0 ? x[d] : t < 0 ? x[d] - p : x[d] + p;
                in |= lo[d] <= img && img <= hi[d];
            }
            if (!in) return false;
        } else if (!(lo[d] <= x[d] && x[d] <= hi[d])) {
            return false;
        }
    }
    return true;
}

/// Indices in the wrapped box, ascending.
static inline int32_t *nbo_wrap_box(const nboSet *s, const double *lo, const double *hi,
                                    const double *period, int32_t *count)
{
    int32_t *out = (int32_t *)nbo_xalloc((size_t)s->n * sizeof(int32_t));
    int32_t n = 0;
    for (int32_t p = 0; p < s->n; p++)
        if (nbo_wrap_in_box(nbo_pt(s, p), lo, hi, s->dim, period) &&
            nbo_filter_passes(s, p, NB_FILTER_ALL))
            out[n++] = p;
    *count = n;
    return out;
}

/// The min(k, N) nearest by the minimum image, by (dist2, index).
static inline nbNeighbor *nbo_wrap_knn(const nboSet *s, const double *q, int32_t k,
                                       const double *period, int32_t *count)
{
    nbNeighbor *all = (nbNeighbor *)nbo_xalloc((size_t)s->n * sizeof(nbNeighbor));
    int32_t n = 0;
    for (int32_t p = 0; p < s->n; p++)
        if (nbo_filter_passes(s, p, NB_FILTER_ALL)) {
            all[n].index = p;
            all[n].dist2 = nbo_wrap_d2(q, nbo_pt(s, p), s->dim, period);
            n++;
        }
    *count = nbo_select_neighbors(all, n, k);
    return all;
}

/// Records the pairs a visitor is given (nbo_log_pair is an nbPairFn), in order; with
/// stop_after > 0 it asks to stop after that many. Zero-initialise; free(log.p) afterwards.
typedef struct nboPairLog {
    nbPair *p;
    int64_t n, cap, stop_after;
} nboPairLog;

static inline bool nbo_log_pair(int32_t i, int32_t j, void *user)
{
    nboPairLog *l = (nboPairLog *)user;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        nbPair *grown = (nbPair *)realloc(l->p, (size_t)l->cap * sizeof(nbPair));
        if (grown == NULL) abort();
        l->p = grown;
    }
    l->p[l->n].i = i;
    l->p[l->n].j = j;
    l->n++;
    return l->stop_after <= 0 || l->n < l->stop_after;
}

#endif
