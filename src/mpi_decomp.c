// SPDX-License-Identifier: MIT
// The decomposition of nearby_mpi: recursive coordinate bisection (RCB) of a sample into one
// brick per rank, for any rank count.
//
// A node holding n ranks and s sample points cuts its box across its widest axis into
// floor(n / 2) ranks below the cut and ceil(n / 2) above, giving the lower side
// floor(s * floor(n / 2) / n) of the sample sorted along that axis. The cut lies halfway
// between the last sample point below and the first above (at the first above when they are
// equal), so points are split by count, not by space: clustered data is balanced too. A point
// belongs to the lower side when x < cut and to the upper side otherwise, so a point exactly on
// a cut has one owner, and every rank computes the same owner from the same tree.
#include "mpi_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void *nbi_mpi_malloc(size_t size, size_t align, void *user)
{
    (void)align; // malloc's alignment (16 on the platforms nearby supports) is what we ask for
    (void)user;
    return malloc(size);
}

static void nbi_mpi_mfree(void *ptr, size_t size, void *user)
{
    (void)size;
    (void)user;
    free(ptr);
}

void *nbi_mpi_alloc(const nbAllocator *a, size_t count, size_t elem)
{
    if (elem != 0 && count > SIZE_MAX / elem) return NULL;
    const size_t bytes = count * elem == 0 ? 1 : count * elem;
    if (a == NULL || a->alloc == NULL) return nbi_mpi_malloc(bytes, 16, NULL);
    return a->alloc(bytes, 16, a->user);
}

void nbi_mpi_free(const nbAllocator *a, void *ptr, size_t count, size_t elem)
{
    if (ptr == NULL) return;
    const size_t bytes = count * elem == 0 ? 1 : count * elem;
    if (a == NULL || a->free == NULL) {
        nbi_mpi_mfree(ptr, bytes, NULL);
        return;
    }
    a->free(ptr, bytes, a->user);
}

static int nbi_cmp_double(const void *pa, const void *pb)
{
    const double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

// Rearranges v[0, n) so that v[k] is the k-th smallest (0-based), with v[i] <= v[k] for i < k
// and v[i] >= v[k] for i > k: quickselect with Hoare partitions around a median of three,
// O(n) expected. After 64 rounds (an input built against the pivot rule) it sorts what is left,
// so the worst case stays O(n log n). Deterministic: the result depends only on v.
static void nbi_select(double *v, size_t n, size_t k)
{
    int64_t lo = 0, hi = (int64_t)n - 1;
    const int64_t kk = (int64_t)k;
    for (int round = 0; hi > lo; round++) {
        if (round == 64) {
            qsort(v + lo, (size_t)(hi - lo + 1), sizeof(double), nbi_cmp_double);
            return;
        }
        const double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi];
        const double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) {
                const double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                j--;
            }
        }
        // Now v[lo, j] <= pivot <= v[i, hi], and v(j, i) == pivot.
        if (kk <= j)
            hi = j;
        else if (kk >= i)
            lo = i;
        else
            return;
    }
}

typedef struct nbiRcb {
    nbiDecomp *d;
    double *vals; // scratch: one coordinate of the node's sample, sorted
    int32_t next; // next free cut
} nbiRcb;

// The cut between the sample's lower k values and the rest (see the top of the file). Reorders v.
static double nbi_cut_value(double *v, size_t ns, size_t k, double lo, double hi)
{
    double c;
    if (ns == 0) {
        c = 0.5 * lo + 0.5 * hi;
    } else {
        nbi_select(v, ns, k);
        const double b = v[k];
        double a = b;
        if (k > 0) {
            a = v[0];
            for (size_t i = 1; i < k; i++) a = v[i] > a ? v[i] : a;
        }
        c = 0.5 * a + 0.5 * b;
        if (!(c > a) || c > b) c = b;
    }
    if (c < lo) c = lo;
    if (c > hi) c = hi;
    return c;
}

// Splits ranks [rank0, rank0 + nr) over the box [lo, hi] with sample s[0, ns); returns the
// child code of this node (see nbiCut).
static int32_t nbi_rcb(nbiRcb *t, int32_t rank0, int32_t nr, const double *lo, const double *hi,
                       double *s, size_t ns)
{
    nbiDecomp *d = t->d;
    const int32_t dim = d->dim;
    if (nr == 1) {
        for (int32_t a = 0; a < 3; a++) {
            d->lo[3 * rank0 + a] = lo[a];
            d->hi[3 * rank0 + a] = hi[a];
        }
        return -(rank0 + 1);
    }
    int32_t axis = 0;
    for (int32_t a = 1; a < dim; a++)
        if (hi[a] - lo[a] > hi[axis] - lo[axis]) axis = a;
    for (size_t i = 0; i < ns; i++) t->vals[i] = s[i * (size_t)dim + (size_t)axis];
    const int32_t nl = nr / 2;
    const size_t k = (size_t)(((uint64_t)ns * (uint64_t)nl) / (uint64_t)nr);
    const double cut = nbi_cut_value(t->vals, ns, k, lo[axis], hi[axis]);
    // Partition the sample in place: x < cut first (the order within each side is fixed by
    // the input order, so every rank gets the same).
    size_t below = 0;
    for (size_t i = 0; i < ns; i++) {
        double *p = s + i * (size_t)dim;
        if (p[axis] < cut) {
            if (i != below) {
                double tmp[3];
                memcpy(tmp, p, (size_t)dim * sizeof(double));
                memcpy(p, s + below * (size_t)dim, (size_t)dim * sizeof(double));
                memcpy(s + below * (size_t)dim, tmp, (size_t)dim * sizeof(double));
            }
            below++;
        }
    }
    const int32_t node = t->next++;
    double mid_hi[3], mid_lo[3];
    memcpy(mid_hi, hi, sizeof(mid_hi));
    memcpy(mid_lo, lo, sizeof(mid_lo));
    mid_hi[axis] = cut;
    mid_lo[axis] = cut;
    d->cuts[node].axis = axis;
    d->cuts[node].cut = cut;
    d->cuts[node].lower = nbi_rcb(t, rank0, nl, lo, mid_hi, s, below);
    d->cuts[node].upper =
        nbi_rcb(t, rank0 + nl, nr - nl, mid_lo, hi, s + below * (size_t)dim, ns - below);
    return node;
}

nbStatus nbi_decomp_build(nbiDecomp *d, const nbAllocator *a, int32_t size, int32_t dim,
                          const double *root_lo, const double *root_hi, double *sample, size_t ns)
{
    memset(d, 0, sizeof(*d));
    d->size = size;
    d->dim = dim;
    for (int32_t k = 0; k < 3; k++) {
        d->root_lo[k] = root_lo[k];
        d->root_hi[k] = root_hi[k];
    }
    d->cuts = nbi_mpi_alloc(a, (size_t)size, sizeof(nbiCut)); // size - 1 used
    d->lo = nbi_mpi_alloc(a, 3 * (size_t)size, sizeof(double));
    d->hi = nbi_mpi_alloc(a, 3 * (size_t)size, sizeof(double));
    nbiRcb t = {d, nbi_mpi_alloc(a, ns, sizeof(double)), 0};
    if (d->cuts == NULL || d->lo == NULL || d->hi == NULL || t.vals == NULL) {
        nbi_mpi_free(a, t.vals, ns, sizeof(double));
        nbi_decomp_free(d, a);
        return NB_ERR_OUT_OF_MEMORY;
    }
    (void)nbi_rcb(&t, 0, size, root_lo, root_hi, sample, ns);
    nbi_mpi_free(a, t.vals, ns, sizeof(double));
    return NB_OK;
}

void nbi_decomp_free(nbiDecomp *d, const nbAllocator *a)
{
    nbi_mpi_free(a, d->cuts, (size_t)d->size, sizeof(nbiCut));
    nbi_mpi_free(a, d->lo, 3 * (size_t)d->size, sizeof(double));
    nbi_mpi_free(a, d->hi, 3 * (size_t)d->size, sizeof(double));
    d->cuts = NULL;
    d->lo = NULL;
    d->hi = NULL;
}

int32_t nbi_decomp_owner(const nbiDecomp *d, const double *x)
{
    if (d->size == 1) return 0;
    int32_t node = 0;
    for (;;) {
        const nbiCut *c = &d->cuts[node];
        const int32_t next = x[c->axis] < c->cut ? c->lower : c->upper;
        if (next < 0) return -(next + 1);
        node = next;
    }
}

double nbi_decomp_dist2(const nbiDecomp *d, int32_t k, const double *x)
{
    double d2 = 0.0;
    for (int32_t a = 0; a < d->dim; a++) {
        const double lo = d->lo[3 * k + a], hi = d->hi[3 * k + a];
        const double g = x[a] < lo ? lo - x[a] : x[a] > hi ? x[a] - hi : 0.0;
        d2 = d2 + g * g;
    }
    return d2;
}

void nbi_decomp_near(const nbiDecomp *d, const double *x, double reach,
                     void (*fn)(int32_t rank, void *user), void *user)
{
    const double reach2 = reach * reach;
    if (d->size == 1) {
        if (nbi_decomp_dist2(d, 0, x) <= reach2) fn(0, user);
        return;
    }
    // Depth-first, lower side first. The tree is balanced (floor / ceil halves), so its depth
    // is ceil(log2(size)) <= 31 and the stack holds at most one pending node per level.
    int32_t stack[64];
    int32_t top = 0;
    stack[top++] = 0;
    while (top > 0) {
        const int32_t code = stack[--top];
        if (code < 0) {
            const int32_t k = -(code + 1);
            if (nbi_decomp_dist2(d, k, x) <= reach2) fn(k, user);
            continue;
        }
        const nbiCut *c = &d->cuts[code];
        const double v = x[c->axis];
        // Upper pushed first so the lower side is visited first.
        if (v + reach >= c->cut) stack[top++] = c->upper;
        if (v - reach <= c->cut) stack[top++] = c->lower;
    }
}
