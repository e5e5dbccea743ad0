// SPDX-License-Identifier: MIT
// Pairs counted at many radii in one walk (nb_grid_count_pairs_radii and its cross and weighted
// forms): a dual walk over two kd-trees of boxes (the technique of Gray and Moore's n-point
// correlation, which scipy's cKDTree.count_neighbors also uses). Each pair of nodes has bounds
// on the distance of every pair of their points; where both bounds fall in the same shell
// between two consecutive radii, the pair of nodes adds |A| |B| (or its weight sums) to that
// shell at once, with no distance computed. Only pairs of leaves the bounds leave undecided test
// their points, each distance binned by a binary search among the radii the bounds still allow.
//
// Exactness. A pair's distance is computed as a brute-force loop does (nbi_dist2 for p = 2 off a
// periodic box; otherwise the minimum image per axis, then d*d, |d|, max |d| or pow(|d|, p)
// summed in axis order), and compared with r*r, r or pow(r, p). The bounds of a pair of boxes
// are computed by the same operations from the boxes' corners: fl(x - y) is monotone in x and
// y, |t| and min(|t|, fl(P - |t|)) (rising, then falling) take their extremes over an interval
// at its ends or at 0, squares, sums and max are monotone, and the build never contracts them
// into fused multiply-adds; so every pair's computed distance lies within its boxes' computed
// bounds. For other p the bounds widen by 2^-40 of themselves, so that pow's rounding can
// never matter: a pair near a shell's edge is tested.
#include "grid_internal.h"

#include "cell.h"

#include <math.h>

enum {
    NBI_RADII_LEAF = 16, // points in a leaf of the tree
    NBI_RADII_LANES = 4, // copies of the shells' accumulators (a power of two)
    NBI_RADII_SCAN = 3,  // radii a row's shells span up to which it counts under each
};

// How a distance is computed (see the top of this file).
typedef enum nbiRKind { NBI_RK_2, NBI_RK_1, NBI_RK_INF, NBI_RK_P } nbiRKind;

// A node of the tree: its points are positions [begin, end) of the tree's arrays; box is their
// bounding box (lo then hi, 3 each); w and w2 the sums of their weights and of the weights'
// squares (weighted trees only). kid: the first child (the second is kid + 1), or -1 for a leaf.
typedef struct nbiRNode {
    double box[6];
    double w, w2;
    int32_t begin, end;
    int32_t kid;
} nbiRNode;

// A kd-tree over one grid's points, split at the median of the box's widest axis down to
// leaves of at most NBI_RADII_LEAF points. The points, their weights and filter bits are
// copied in the tree's order.
typedef struct nbiRTree {
    int32_t n, nodes;
    double *xyz;          // n * dim: axis a's coordinates at xyz + a * n (by axis, so that a
                          // leaf's distances vectorize)
    double *w;            // n, or NULL: weight 1 each
    uint32_t *cat, *mask; // n each, or NULL: all bits
    int32_t *perm;        // n: the grid position at each tree position (scratch of the build)
    nbiRNode *node;       // nodes
} nbiRTree;

// One walk: the trees, the norm, the squared (raw) radii and the shells' accumulators.
typedef struct nbiRWalk {
    const nbiRTree *a, *b;
    int dim;
    nbiRKind kind;
    bool wrap;     // a periodic axis: the minimum image, per[] = P or +inf
    bool loose;    // NBI_RK_P: the bounds widen (see the top of this file)
    bool filtered; // either grid carries filter bits: every pair is tested against the rule
    double p;
    double per[3];
    const double *rr; // m raw radii, non-decreasing
    int32_t m;
    // The shells by table: a raw distance d lies in shell >= shell_at[c], c = min(floor(d *
    // scale), cells), shell_at[c] the radii k with floor(rr[k] * scale) < c (fl(rr * scale) is
    // monotone in rr, so those radii are all < d); a few steps up from there find its shell.
    const int32_t *shell_at; // cells + 1 entries
    double scale;
    int32_t cells;
    int64_t *count; // m + 1 shells (the last: beyond every radius), or NULL; the pairs of
                    // leaves add to NBI_RADII_LANES copies of them, one after another
    double *sum;    // the same when weighted, else NULL
} nbiRWalk;

static int32_t nbi_rtree_nodes(int32_t n)
{
    if (n <= NBI_RADII_LEAF) return 1;
    return 1 + nbi_rtree_nodes(n / 2) + nbi_rtree_nodes(n - n / 2);
}

// Reorders perm[lo, hi) so that perm[k] holds the point whose coordinate on axis ax is k-th
// smallest, those before it no greater and those after no smaller (Hoare's selection).
static void nbi_rselect(int32_t *perm, int32_t lo, int32_t hi, int32_t k, const double *pts,
                        int dim, int ax)
{
    hi--;
    while (hi > lo) {
        const double pivot = pts[(size_t)perm[lo + (hi - lo) / 2] * (size_t)dim + (size_t)ax];
        int32_t i = lo, j = hi;
        while (i <= j) {
            while (pts[(size_t)perm[i] * (size_t)dim + (size_t)ax] < pivot) i++;
            while (pts[(size_t)perm[j] * (size_t)dim + (size_t)ax] > pivot) j--;
            if (i <= j) {
                const int32_t t = perm[i];
                perm[i++] = perm[j];
                perm[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

// Builds node `at` over perm[begin, end) (the grid's points pts); *next: the next free node.
static void nbi_rbuild(nbiRTree *t, int32_t at, int32_t begin, int32_t end, const double *pts,
                       int dim, int32_t *next)
{
    nbiRNode *nd = &t->node[at];
    nd->begin = begin;
    nd->end = end;
    nd->kid = -1;
    for (int a = 0; a < 3; a++) {
        nd->box[a] = a < dim ? (double)INFINITY : 0.0;
        nd->box[3 + a] = a < dim ? -(double)INFINITY : 0.0;
    }
    for (int32_t i = begin; i < end; i++)
        for (int a = 0; a < dim; a++) {
            const double v = pts[(size_t)t->perm[i] * (size_t)dim + (size_t)a];
            nd->box[a] = v < nd->box[a] ? v : nd->box[a];
            nd->box[3 + a] = v > nd->box[3 + a] ? v : nd->box[3 + a];
        }
    if (end - begin <= NBI_RADII_LEAF) return;
    int w = 0;
    for (int a = 1; a < dim; a++)
        if (nd->box[3 + a] - nd->box[a] > nd->box[3 + w] - nd->box[w]) w = a;
    const int32_t mid = begin + (end - begin) / 2;
    nbi_rselect(t->perm, begin, end, mid, pts, dim, w);
    const int32_t kid = *next;
    *next += 2;
    t->node[at].kid = kid;
    nbi_rbuild(t, kid, begin, mid, pts, dim, next);
    nbi_rbuild(t, kid + 1, mid, end, pts, dim, next);
}

// The weight sums of node `at` and its subtree.
static void nbi_rweigh(nbiRTree *t, int32_t at)
{
    nbiRNode *nd = &t->node[at];
    if (nd->kid < 0) {
        double w = 0.0, w2 = 0.0;
        for (int32_t i = nd->begin; i < nd->end; i++) {
            w += t->w[i];
            w2 += t->w[i] * t->w[i];
        }
        nd->w = w;
        nd->w2 = w2;
        return;
    }
    nbi_rweigh(t, nd->kid);
    nbi_rweigh(t, nd->kid + 1);
    nd->w = t->node[nd->kid].w + t->node[nd->kid + 1].w;
    nd->w2 = t->node[nd->kid].w2 + t->node[nd->kid + 1].w2;
}

static void nbi_rtree_free(nbiRTree *t, int dim, const nbAllocator *alloc)
{
    const size_t n = (size_t)t->n;
    nbi_free(alloc, t->xyz, n * (size_t)dim, 8);
    nbi_free(alloc, t->w, n, 8);
    nbi_free(alloc, t->cat, n, 4);
    nbi_free(alloc, t->mask, n, 4);
    nbi_free(alloc, t->perm, n, 4);
    nbi_free(alloc, t->node, (size_t)t->nodes, sizeof(nbiRNode));
}

// The tree of view v's points, with weights w (by input index; NULL: none) and filter bits when
// `bits`. False when out of memory (t then holds nothing to free).
static bool nbi_rtree_make(nbiRTree *t, const nbiView *v, const double *w, bool bits,
                           const nbAllocator *alloc)
{
    const int dim = v->dim;
    const size_t n = (size_t)v->n;
    *t = (nbiRTree){.n = v->n, .nodes = v->n > 0 ? nbi_rtree_nodes(v->n) : 0};
    t->xyz = (double *)nbi_alloc(alloc, n * (size_t)dim, 8);
    t->perm = (int32_t *)nbi_alloc(alloc, n, 4);
    t->node = (nbiRNode *)nbi_alloc(alloc, (size_t)t->nodes, sizeof(nbiRNode));
    if (w != NULL) t->w = (double *)nbi_alloc(alloc, n, 8);
    if (bits) {
        t->cat = (uint32_t *)nbi_alloc(alloc, n, 4);
        t->mask = (uint32_t *)nbi_alloc(alloc, n, 4);
    }
    if (n > 0 && (t->xyz == NULL || t->perm == NULL || t->node == NULL ||
                  (w != NULL && t->w == NULL) || (bits && (t->cat == NULL || t->mask == NULL)))) {
        nbi_rtree_free(t, dim, alloc);
        return false;
    }
    if (n == 0) return true;
    for (int32_t i = 0; i < v->n; i++) t->perm[i] = i;
    int32_t next = 1;
    nbi_rbuild(t, 0, 0, v->n, v->pts, dim, &next);
    for (int32_t i = 0; i < v->n; i++) {
        const int32_t p = t->perm[i];
        for (int a = 0; a < dim; a++)
            t->xyz[(size_t)a * n + (size_t)i] = v->pts[(size_t)p * (size_t)dim + (size_t)a];
        if (w != NULL) t->w[i] = w[v->idx[p]];
        if (bits) {
            t->cat[i] = v->cat != NULL ? v->cat[p] : 0xFFFFFFFFu;
            t->mask[i] = v->mask != NULL ? v->mask[p] : 0xFFFFFFFFu;
        }
    }
    if (w != NULL) nbi_rweigh(t, 0);
    return true;
}

// ---- distances and bounds ----

// One axis's term of the distance, from |d| (the minimum image where periodic).
NBI_INLINE double nbi_rterm(double d, nbiRKind kind, double p)
{
    return kind == NBI_RK_2 ? d * d : kind == NBI_RK_P ? pow(d, p) : d;
}

// The distance of points a and b, raw (compared with r*r, r or pow(r, p)).
NBI_INLINE double nbi_rdist(const double *a, const double *b, int dim, nbiRKind kind, bool wrap,
                            double p, const double *per)
{
    if (kind == NBI_RK_2) return wrap ? nbi_dist2_wrap(a, b, dim, per) : nbi_dist2(a, b, dim);
    double total = 0.0;
    for (int ax = 0; ax < dim; ax++) {
        const double t = nbi_rterm(nbi_wrap_d(a[ax], b[ax], per[ax]), kind, p);
        if (kind == NBI_RK_INF)
            total = t > total ? t : total;
        else
            total += t;
    }
    return total;
}

// The least and the greatest raw distance any point of box pa and any of box pb can have, as
// nbi_rdist computes it (widened for NBI_RK_P).
static void nbi_rbounds(const nbiRWalk *x, const double *pa, const double *pb, double *least,
                        double *most)
{
    double lo = 0.0, hi = 0.0;
    for (int ax = 0; ax < x->dim; ax++) {
        const double l = pa[ax] - pb[3 + ax], h = pa[3 + ax] - pb[ax]; // fl(x - y) lies in [l, h]
        double amin, amax; // |fl(x - y)| lies in [amin, amax]
        if (l >= 0.0) {
            amin = l;
            amax = h;
        } else if (h <= 0.0) {
            amin = -h;
            amax = -l;
        } else {
            amin = 0.0;
            amax = -l > h ? -l : h;
        }
        double dlo = amin, dhi = amax;
        const double P = x->per[ax];
        if (P < (double)INFINITY) { // min(a, P - a): rising, then falling
            const double g0 = amin < P - amin ? amin : P - amin;
            const double g1 = amax < P - amax ? amax : P - amax;
            dlo = g0 < g1 ? g0 : g1;
            dhi = amax < P - amin ? amax : P - amin;
        }
        const double tlo = nbi_rterm(dlo, x->kind, x->p), thi = nbi_rterm(dhi, x->kind, x->p);
        if (x->kind == NBI_RK_INF) {
            lo = tlo > lo ? tlo : lo;
            hi = thi > hi ? thi : hi;
        } else {
            lo = ax == 0 ? tlo : lo + tlo;
            hi = ax == 0 ? thi : hi + thi;
        }
    }
    if (x->loose) {
        lo *= 1.0 - 0x1p-40;
        hi *= 1.0 + 0x1p-40;
    }
    *least = lo;
    *most = hi;
}

// The first shell in [lo, hi] whose radius is >= d (hi when none of rr[lo, hi) is).
NBI_INLINE int32_t nbi_rshell(const double *rr, int32_t lo, int32_t hi, double d)
{
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (rr[mid] < d)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// ---- the walk ----

// Every pair of node A's points and node B's (same: A == B, each unordered pair once) into
// shell k, with no distance computed.
static void nbi_rbulk(const nbiRWalk *x, const nbiRNode *A, const nbiRNode *B, bool same, int32_t k)
{
    if (x->filtered) {
        const nbiRTree *ta = x->a, *tb = x->b;
        for (int32_t i = A->begin; i < A->end; i++)
            for (int32_t j = same ? i + 1 : B->begin; j < B->end; j++) {
                if (!nbi_filter_match(ta->cat[i], ta->mask[i], tb->cat[j], tb->mask[j])) continue;
                if (x->sum != NULL)
                    x->sum[k] +=
                        (ta->w != NULL ? ta->w[i] : 1.0) * (tb->w != NULL ? tb->w[j] : 1.0);
                else
                    x->count[k]++;
            }
        return;
    }
    const int64_t na = A->end - A->begin, nb = B->end - B->begin;
    if (x->sum == NULL) {
        x->count[k] += same ? na * (na - 1) / 2 : na * nb;
        return;
    }
    const double wa = x->a->w != NULL ? A->w : (double)na;
    const double wb = x->b->w != NULL ? B->w : (double)nb;
    if (!same)
        x->sum[k] += wa * wb;
    else if (x->a->w != NULL)
        x->sum[k] += 0.5 * (wa * wa - A->w2);
    else
        x->sum[k] += (double)(na * (na - 1) / 2);
}

// The shell of raw distance d by the table: from shell_at, a step up past each radius below d
// in the same cell (rr[m] = +inf stops it).
NBI_INLINE int32_t nbi_rfind(const nbiRWalk *x, double d)
{
    const double f = d * x->scale;
    int32_t k = x->shell_at[f < (double)x->cells ? (int32_t)f : x->cells];
    while (x->rr[k] < d) k++;
    return k;
}

// Distances d[0, nj) into their shells: from the table's start, a step up past each radius
// below d in the same cell (rr[m] = +inf stops it: no bound needed, the walk knows the shell
// is at most its hi). Weighted: wi * wj[j] (wj NULL: 1 each); filtered (cj != NULL): only the
// pairs the filter rule lets through. The pairs of two leaves often share a shell: the
// accumulators come in NBI_RADII_LANES copies, taken in turn, so that adding to one shell does
// not wait for the previous add to it.
static void nbi_rbin(const nbiRWalk *x, const double *d, int32_t nj, double wi, const double *wj,
                     uint32_t ci, uint32_t mi, const uint32_t *cj, const uint32_t *mj)
{
    const double *rr = x->rr, scale = x->scale, top = (double)x->cells;
    const int32_t *at = x->shell_at, cells = x->cells;
    const size_t lane = (size_t)x->m + 1;
    int64_t *count = x->count;
    double *sum = x->sum;
    for (int32_t j = 0; j < nj; j++) {
        if (cj != NULL && !nbi_filter_match(ci, mi, cj[j], mj[j])) continue;
        const double f = d[j] * scale; // nbi_rfind, with the walk's fields at hand
        int32_t k = at[f < top ? (int32_t)f : cells];
        k += rr[k] < d[j];
        while (rr[k] < d[j]) k++;
        const size_t at_lane = (size_t)(j & (NBI_RADII_LANES - 1)) * lane + (size_t)k;
        if (sum == NULL)
            count[at_lane]++;
        else
            sum[at_lane] += wi * (wj != NULL ? wj[j] : 1.0);
    }
}

// Distances d[0, nj) whose shells lie in [lo, hi] (few), by a count under each radius between:
// the pairs within rr[k] less those within rr[k - 1] are shell k's (none is within rr[lo - 1],
// every one within rr[hi]). Each count is one comparison a pair, vectorized, with no table.
static void nbi_rscan(const nbiRWalk *x, const double *d, int32_t nj, double wi, const double *wj,
                      int32_t lo, int32_t hi)
{
    const double *rr = x->rr;
    if (x->sum == NULL) {
        int64_t below = 0;
        for (int32_t k = lo; k < hi; k++) {
            const double r = rr[k];
            int32_t c = 0;
            for (int32_t j = 0; j < nj; j++) c += d[j] <= r;
            x->count[k] += c - below;
            below = c;
        }
        x->count[hi] += nj - below;
        return;
    }
    double below = 0.0, all = 0.0;
    for (int32_t j = 0; j < nj; j++) all += wj != NULL ? wj[j] : 1.0;
    for (int32_t k = lo; k < hi; k++) {
        const double r = rr[k];
        double c = 0.0;
        for (int32_t j = 0; j < nj; j++) c += d[j] <= r ? (wj != NULL ? wj[j] : 1.0) : 0.0;
        x->sum[k] += wi * (c - below);
        below = c;
    }
    x->sum[hi] += wi * (all - below);
}

// Every pair of leaf A's points and leaf B's tested, each distance into its shell.
// KIND and WRAP are constants where the callers below inline it.
NBI_INLINE void nbi_rleaf_kind(const nbiRWalk *x, const nbiRNode *A, const nbiRNode *B, bool same,
                               int32_t lo, int32_t hi, nbiRKind kind, bool wrap)
{
    const nbiRTree *ta = x->a, *tb = x->b;
    const int dim = x->dim;
    const double *ax = ta->xyz, *ay = ax + ta->n, *az = ay + ta->n;
    const double *bx = tb->xyz, *by = bx + tb->n, *bz = by + tb->n;
    double d[NBI_RADII_LEAF];
    for (int32_t i = A->begin; i < A->end; i++) {
        const double pi[3] = {ax[i], ay[i], dim == 3 ? az[i] : 0.0};
        const double wi = ta->w != NULL ? ta->w[i] : 1.0;
        const int32_t j0 = same ? i + 1 : B->begin, nj = B->end - j0;
        int32_t rlo = lo, rhi = hi; // the row's shells
        if (!same && !x->filtered) {
            // The point against B's box: beyond every radius (the common case at radii of a
            // few neighbours), or all in one shell, decided for the row at once.
            const double pbox[6] = {pi[0], pi[1], pi[2], pi[0], pi[1], pi[2]};
            double least, most;
            nbi_rbounds(x, pbox, B->box, &least, &most);
            const int32_t slo = nbi_rfind(x, least);
            if (slo == x->m) continue;
            const int32_t shi = nbi_rfind(x, most);
            if (slo == shi) {
                if (x->sum != NULL)
                    x->sum[slo] += wi * (tb->w != NULL ? B->w : (double)nj);
                else
                    x->count[slo] += nj;
                continue;
            }
            rlo = slo > rlo ? slo : rlo;
            rhi = shi < rhi ? shi : rhi;
        }
        if (kind == NBI_RK_2 && !wrap && dim == 3) {
            for (int32_t j = 0; j < nj; j++) {
                const double dx = pi[0] - bx[j0 + j], dy = pi[1] - by[j0 + j];
                const double dz = pi[2] - bz[j0 + j];
                d[j] = (dx * dx + dy * dy) + dz * dz;
            }
        } else if (kind == NBI_RK_2 && !wrap) {
            for (int32_t j = 0; j < nj; j++) {
                const double dx = pi[0] - bx[j0 + j], dy = pi[1] - by[j0 + j];
                d[j] = dx * dx + dy * dy;
            }
        } else {
            for (int32_t j = 0; j < nj; j++) {
                const double q[3] = {bx[j0 + j], by[j0 + j], dim == 3 ? bz[j0 + j] : 0.0};
                d[j] = nbi_rdist(pi, q, dim, kind, wrap, x->p, x->per);
            }
        }
        if (!x->filtered && rhi - rlo <= NBI_RADII_SCAN)
            nbi_rscan(x, d, nj, wi, tb->w != NULL ? tb->w + j0 : NULL, rlo, rhi);
        else
            nbi_rbin(x, d, nj, wi, tb->w != NULL ? tb->w + j0 : NULL, x->filtered ? ta->cat[i] : 0,
                     x->filtered ? ta->mask[i] : 0, x->filtered ? tb->cat + j0 : NULL,
                     x->filtered ? tb->mask + j0 : NULL);
    }
}

static void nbi_rleaf(const nbiRWalk *x, const nbiRNode *A, const nbiRNode *B, bool same,
                      int32_t lo, int32_t hi)
{
    if (x->kind == NBI_RK_2 && !x->wrap)
        nbi_rleaf_kind(x, A, B, same, lo, hi, NBI_RK_2, false);
    else if (x->kind == NBI_RK_2)
        nbi_rleaf_kind(x, A, B, same, lo, hi, NBI_RK_2, true);
    else
        nbi_rleaf_kind(x, A, B, same, lo, hi, x->kind, x->wrap);
}

// The pairs of node ia of tree a and node ib of tree b (distinct sets of points), their shells
// known to lie in [lo, hi].
static void nbi_rcross(const nbiRWalk *x, int32_t ia, int32_t ib, int32_t lo, int32_t hi)
{
    const nbiRNode *A = &x->a->node[ia], *B = &x->b->node[ib];
    double least, most;
    nbi_rbounds(x, A->box, B->box, &least, &most);
    const int32_t slo = nbi_rshell(x->rr, lo, hi, least);
    if (slo == x->m) return; // beyond every radius
    const int32_t shi = nbi_rshell(x->rr, slo, hi, most);
    if (slo == shi) {
        nbi_rbulk(x, A, B, false, slo);
        return;
    }
    if (A->kid < 0 && B->kid < 0) {
        nbi_rleaf(x, A, B, false, slo, shi);
        return;
    }
    if (B->kid < 0 || (A->kid >= 0 && A->end - A->begin >= B->end - B->begin)) {
        nbi_rcross(x, A->kid, ib, slo, shi);
        nbi_rcross(x, A->kid + 1, ib, slo, shi);
    } else {
        nbi_rcross(x, ia, B->kid, slo, shi);
        nbi_rcross(x, ia, B->kid + 1, slo, shi);
    }
}

// The unordered pairs of node ia's points (x->a == x->b).
static void nbi_rself(const nbiRWalk *x, int32_t ia)
{
    const nbiRNode *A = &x->a->node[ia];
    double least, most;
    nbi_rbounds(x, A->box, A->box, &least, &most);
    const int32_t slo = nbi_rshell(x->rr, 0, x->m, least);
    const int32_t shi = nbi_rshell(x->rr, slo, x->m, most);
    if (slo == shi) {
        if (slo < x->m) nbi_rbulk(x, A, A, true, slo);
        return;
    }
    if (A->kid < 0) {
        nbi_rleaf(x, A, A, true, slo, shi);
        return;
    }
    nbi_rself(x, A->kid);
    nbi_rself(x, A->kid + 1);
    nbi_rcross(x, A->kid, A->kid + 1, slo, shi);
}

// ---- the public calls ----

// The checks every form makes, in the contract's order, after the pointers and the zeroing of
// the output: the radii, p and the weights finite; then nradii, p and the radii in range (the
// radii non-negative and non-decreasing), the grids' dims and periods alike.
static nbStatus nbi_radii_check(const nbGrid *a, const nbGrid *b, const double *wa,
                                const double *wb, const double *radii, int32_t nradii, double p)
{
    if (isnan(p)) return NB_ERR_NOT_FINITE;
    for (int32_t k = 0; k < nradii; k++)
        if (!isfinite(radii[k])) return NB_ERR_NOT_FINITE;
    for (int s = 0; s < 2; s++) {
        const double *w = s == 0 ? wa : wb;
        const nbGrid *g = s == 0 ? a : b;
        if (w == NULL || g == NULL) continue;
        for (int32_t i = 0; i < g->n; i++)
            if (!isfinite(w[i])) return NB_ERR_NOT_FINITE;
    }
    if (nradii < 0 || !(p >= 1.0)) return NB_ERR_OUT_OF_RANGE;
    for (int32_t k = 0; k < nradii; k++)
        if (radii[k] < 0.0 || (k > 0 && radii[k] < radii[k - 1])) return NB_ERR_OUT_OF_RANGE;
    if (b != NULL && b != a) {
        if (a->dim != b->dim || a->wrapped != b->wrapped) return NB_ERR_OUT_OF_RANGE;
        for (int ax = 0; ax < 3; ax++)
            if (a->wrapped && a->wrap.period[ax] != b->wrap.period[ax]) return NB_ERR_OUT_OF_RANGE;
    }
    return NB_OK;
}

// The walk, after the checks: b == NULL for the unordered pairs of a; weights only when
// `sums` (the weighted forms), count only otherwise.
static nbStatus nbi_radii_run(const nbGrid *a, const nbGrid *b, const double *wa, const double *wb,
                              const double *radii, int32_t m, double p, bool cumulative,
                              int64_t *counts, double *sums)
{
    if (m == 0 || a->n == 0 || (b != NULL && b->n == 0)) return NB_OK;
    const nbAllocator *alloc = &a->alloc;
    const int dim = a->dim;
    const nbiView *va = &a->view, *vb = b != NULL ? &b->view : va;
    nbiRWalk x = {.dim = dim, .p = p, .m = m, .wrap = a->wrapped};
    x.kind = p == 2.0 ? NBI_RK_2 : p == 1.0 ? NBI_RK_1 : isinf(p) ? NBI_RK_INF : NBI_RK_P;
    x.loose = x.kind == NBI_RK_P;
    x.filtered = va->cat != NULL || vb->cat != NULL;
    for (int ax = 0; ax < 3; ax++)
        x.per[ax] = a->wrapped && a->wrap.period[ax] > 0.0 ? a->wrap.period[ax] : (double)INFINITY;
    // One tree when both sides are one grid with the same weights (every ordered pair).
    const bool one = b == NULL || (b == a && wa == wb);
    // The table of shells: 16 cells a radius (at most 2^16), so that few radii share a cell.
    x.cells = m < 4096 ? 16 * m : 65536;
    double *rr = (double *)nbi_alloc(alloc, (size_t)m + 1, 8);
    int32_t *shell_at = (int32_t *)nbi_alloc(alloc, (size_t)x.cells + 1, 4);
    const size_t shells = NBI_RADII_LANES * ((size_t)m + 1);
    int64_t *count = sums == NULL ? (int64_t *)nbi_alloc(alloc, shells, 8) : NULL;
    double *sum = sums != NULL ? (double *)nbi_alloc(alloc, shells, 8) : NULL;
    nbiRTree ta = {0}, tb = {0};
    bool ok = rr != NULL && shell_at != NULL && (count != NULL || sum != NULL) &&
              nbi_rtree_make(&ta, va, sums != NULL ? wa : NULL, x.filtered, alloc);
    if (ok && !one && !nbi_rtree_make(&tb, vb, sums != NULL ? wb : NULL, x.filtered, alloc)) {
        nbi_rtree_free(&ta, dim, alloc);
        ta = (nbiRTree){0};
        ok = false;
    }
    if (ok) {
        for (int32_t k = 0; k < m; k++) {
            const double r = radii[k];
            rr[k] = x.kind == NBI_RK_2 ? r * r : x.kind == NBI_RK_P ? pow(r, p) : r;
        }
        rr[m] = (double)INFINITY; // the shells' search stops here
        // scale: the largest radius at the table's last cell (0 when it is 0: one cell)
        x.scale = rr[m - 1] > 0.0 ? (double)x.cells / rr[m - 1] : 0.0;
        if (!isfinite(x.scale)) x.scale = 0.0;
        for (int32_t c = 0, k = 0; c <= x.cells; c++) {
            while (k < m && floor(rr[k] * x.scale) < (double)c) k++;
            shell_at[c] = k;
        }
        x.shell_at = shell_at;
        for (size_t k = 0; k < shells; k++) {
            if (count != NULL) count[k] = 0;
            if (sum != NULL) sum[k] = 0.0;
        }
        x.rr = rr;
        x.count = count;
        x.sum = sum;
        x.a = &ta;
        x.b = one ? &ta : &tb;
        if (b == NULL)
            nbi_rself(&x, 0);
        else
            nbi_rcross(&x, 0, 0, 0, m);
        int64_t c = 0;
        double s = 0.0;
        for (int32_t k = 0; k < m; k++) {
            int64_t ck = 0;
            double sk = 0.0;
            for (size_t l = 0; l < NBI_RADII_LANES; l++) {
                if (count != NULL) ck += count[l * ((size_t)m + 1) + (size_t)k];
                if (sum != NULL) sk += sum[l * ((size_t)m + 1) + (size_t)k];
            }
            if (counts != NULL) {
                c = cumulative ? c + ck : ck;
                counts[k] = c;
            } else {
                s = cumulative ? s + sk : sk;
                sums[k] = s;
            }
        }
        nbi_rtree_free(&ta, dim, alloc);
        if (!one) nbi_rtree_free(&tb, dim, alloc);
    }
    nbi_free(alloc, rr, (size_t)m + 1, 8);
    nbi_free(alloc, shell_at, (size_t)x.cells + 1, 4);
    nbi_free(alloc, count, shells, 8);
    nbi_free(alloc, sum, shells, 8);
    return ok ? NB_OK : NB_ERR_OUT_OF_MEMORY;
}

nbStatus nb_grid_count_pairs_radii(const nbGrid *grid, const double *radii, int32_t nradii,
                                   double p, bool cumulative, int64_t *counts)
{
    if (counts != NULL)
        for (int32_t k = 0; k < nradii; k++) counts[k] = 0;
    if (grid == NULL || (nradii > 0 && (radii == NULL || counts == NULL))) return NB_ERR_NULL_ARG;
    const nbStatus st = nbi_radii_check(grid, NULL, NULL, NULL, radii, nradii, p);
    if (st != NB_OK) return st;
    return nbi_radii_run(grid, NULL, NULL, NULL, radii, nradii, p, cumulative, counts, NULL);
}

nbStatus nb_grid_count_cross_pairs_radii(const nbGrid *a, const nbGrid *b, const double *radii,
                                         int32_t nradii, double p, bool cumulative, int64_t *counts)
{
    if (counts != NULL)
        for (int32_t k = 0; k < nradii; k++) counts[k] = 0;
    if (a == NULL || b == NULL || (nradii > 0 && (radii == NULL || counts == NULL)))
        return NB_ERR_NULL_ARG;
    const nbStatus st = nbi_radii_check(a, b, NULL, NULL, radii, nradii, p);
    if (st != NB_OK) return st;
    return nbi_radii_run(a, b, NULL, NULL, radii, nradii, p, cumulative, counts, NULL);
}

nbStatus nb_grid_sum_pairs_radii(const nbGrid *grid, const double *weights, const double *radii,
                                 int32_t nradii, double p, bool cumulative, double *sums)
{
    if (sums != NULL)
        for (int32_t k = 0; k < nradii; k++) sums[k] = 0.0;
    if (grid == NULL || (nradii > 0 && (radii == NULL || sums == NULL))) return NB_ERR_NULL_ARG;
    const nbStatus st = nbi_radii_check(grid, NULL, weights, NULL, radii, nradii, p);
    if (st != NB_OK) return st;
    return nbi_radii_run(grid, NULL, weights, weights, radii, nradii, p, cumulative, NULL, sums);
}

nbStatus nb_grid_sum_cross_pairs_radii(const nbGrid *a, const nbGrid *b, const double *weights_a,
                                       const double *weights_b, const double *radii, int32_t nradii,
                                       double p, bool cumulative, double *sums)
{
    if (sums != NULL)
        for (int32_t k = 0; k < nradii; k++) sums[k] = 0.0;
    if (a == NULL || b == NULL || (nradii > 0 && (radii == NULL || sums == NULL)))
        return NB_ERR_NULL_ARG;
    const nbStatus st = nbi_radii_check(a, b, weights_a, weights_b, radii, nradii, p);
    if (st != NB_OK) return st;
    return nbi_radii_run(a, b, weights_a, weights_b, radii, nradii, p, cumulative, NULL, sums);
}
