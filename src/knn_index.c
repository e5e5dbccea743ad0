// SPDX-License-Identifier: MIT
// The kNN index (knn_index.h): a bounding-volume tree over the points in fine Z order, whose
// leaves adapt to the density as a k-d tree's do, where the cells of a grid sized for a radius
// cannot (a blob's core holds hundreds of points a cell; clustered 3D data scatters a query's
// neighbours over many blocks of cells).
//
// Build, O(n) but for dense cores: each point's Morton code (14 bits an axis in 3D, 22 in 2D:
// four radix passes; fewer when n needs the bits: the code and the point's view position share
// one 64-bit key) over the points' box, scaled alike on every axis so that code blocks are
// cubes; an LSD radix sort of the keys on the code's bits only (the positions below them keep
// ties in view order, which is cell order: points of one code stay spatially together); the
// coordinates (by axis), indices and filter bits copied into that order, so a leaf is a few
// contiguous cache lines; runs of one code longer than a leaf split as a k-d tree's nodes,
// their splits kept as a second level of codes (nbi_ix_order_runs); a binary radix tree over
// the sorted codes (a range splits at the first code with the highest bit in which its first
// and last codes differ, the first level's, else the second's: an aligned block of the Z order
// or a k-d split, so boxes stay compact; a range of at most NBI_KNN_LEAF_PTS points is a leaf);
// each inner node's two children's exact boxes, merged bottom-up, kept side by side in the
// node's slot.
//
// Query: from the root, nearest child first, the farther child kept on a stack with its gap
// and dropped when the k-th best is nearer by the time it comes up. A box's squared gap to the
// query is computed in the order nbi_dist2 computes a point's d2, from per-axis gaps that are
// each at most the point's |difference| (rounding is monotone), so it is never above the d2 of
// any point in the box: pruning a box whose gap is strictly above the k-th best loses no
// answer, ties included, and needs no margin. (Starting from the leaf at the query's own place
// in the Z order and climbing was measured too: the same instructions, the tree being deeper
// than log2 of its leaves on clustered data.)
#include "knn_index.h"

#include "knn_heap.h"
#include "simd.h"

#include <math.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// ---- build ----

enum { NBI_RADIX_BITS = 11, NBI_RADIX_MAX_PASSES = 6 };
// The bits a Z-order code of the index spans at most: four radix passes of NBI_RADIX_BITS (14
// bits an axis in 3D, 22 in 2D; a fifth pass for a finer first level measured no better, as
// runs of one code get codes of their own: nbi_ix_order_runs).
enum { NBI_IX_CODE_WIDTH = 4 * NBI_RADIX_BITS };

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
    if (passes == 4) { // (the index's codes: NBI_IX_CODE_WIDTH) the passes' counts unrolled
        int32_t *h1 = hist + buckets, *h2 = h1 + buckets, *h3 = h2 + buckets;
        for (int32_t i = 0; i < n; i++) {
            const uint64_t d = a[i] >> lo;
            hist[d & dmask]++;
            h1[(d >> bits) & dmask]++;
            h2[(d >> 2 * bits) & dmask]++;
            h3[(d >> 3 * bits) & dmask]++;
        }
    } else {
        for (int32_t i = 0; i < n; i++)
            for (int p = 0; p < passes; p++)
                hist[(size_t)p * buckets + ((a[i] >> (lo + p * bits)) & dmask)]++;
    }
    uint64_t *src = a, *dst = tmp;
    for (int p = 0; p < passes; p++) {
        if (!nbi_radix_pass(src, dst, n, lo + p * bits, dmask, hist + (size_t)p * buckets))
            continue; // one digit for all
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
}

// A frame of Z-order codes: a box's low corner, code units a unit of distance (one for every
// axis, so that code blocks are cubes) and the largest per-axis code value.
typedef struct nbiIxFrame {
    double origin[3], scale;
    uint64_t max_cell;
} nbiIxFrame;

// The per-axis code of coordinate x on axis a: its offset from the frame's low corner in code
// units, clamped to [0, max_cell] (a query may lie outside the box).
NBI_INLINE uint64_t nbi_ix_cell(const nbiIxFrame *fr, int a, double x)
{
    const double u = (x - fr->origin[a]) * fr->scale;
    if (!(u > 0.0)) return 0;
    // (through int64_t: below 2^32, where the unsigned conversion costs a branch more)
    return u >= (double)fr->max_cell ? fr->max_cell : (uint64_t)(int64_t)u;
}

// The Z-order code of the point (x, y, z) in the frame (z unused in 2D).
NBI_INLINE uint64_t nbi_ix_frame_code(const nbiIxFrame *fr, int dim, double x, double y, double z)
{
    if (dim == 2)
        return nbi_spread2(nbi_ix_cell(fr, 0, x)) | nbi_spread2(nbi_ix_cell(fr, 1, y)) << 1;
    return nbi_spread3(nbi_ix_cell(fr, 0, x)) | nbi_spread3(nbi_ix_cell(fr, 1, y)) << 1 |
           nbi_spread3(nbi_ix_cell(fr, 2, z)) << 2;
}

// The frame of the box [lo, hi] for codes of `bits` bits an axis: the widest axis spans them.
static void nbi_ix_frame(nbiIxFrame *fr, int dim, const double *lo, const double *hi, int bits)
{
    fr->max_cell = ((uint64_t)1 << bits) - 1;
    double span = 0.0;
    for (int a = 0; a < 3; a++) {
        fr->origin[a] = a < dim ? lo[a] : 0.0;
        if (a < dim && hi[a] - lo[a] > span) span = hi[a] - lo[a]; // (+inf: every code 0)
    }
    fr->scale = span > 0.0 && span < (double)INFINITY ? (double)fr->max_cell / span : 0.0;
}

NBI_INLINE nbiIxFrame nbi_ix_own_frame(const nbiKnnIndex *ix)
{
    const nbiIxFrame fr = {{ix->origin[0], ix->origin[1], ix->origin[2]}, ix->scale, ix->max_cell};
    return fr;
}

// The index's own code of point p (the first level's).
NBI_INLINE uint64_t nbi_ix_code(const nbiKnnIndex *ix, const double *p)
{
    const nbiIxFrame fr = nbi_ix_own_frame(ix);
    return nbi_ix_frame_code(&fr, ix->dim, p[0], p[1], ix->dim == 3 ? p[2] : 0.0);
}

#if defined(__SSE2__) && defined(__x86_64__)
// The index's code of point p as nbi_ix_code computes it, x and y in two lanes: the same
// offsets (max and min are the comparisons nbi_ix_cell makes; max_cell < 2^31, so the 32-bit
// conversion truncates as its conversion does), spread by the same steps.
NBI_INLINE uint64_t nbi_ix_code_sse2(const nbiKnnIndex *ix, const double *p)
{
    const __m128d zero = _mm_setzero_pd(), top = _mm_set1_pd((double)ix->max_cell);
    __m128d u =
        _mm_mul_pd(_mm_sub_pd(_mm_loadu_pd(p), _mm_loadu_pd(ix->origin)), _mm_set1_pd(ix->scale));
    u = _mm_min_pd(_mm_max_pd(u, zero), top); // (NaN: max gives its second operand, 0)
    __m128i c = _mm_unpacklo_epi32(_mm_cvttpd_epi32(u), _mm_setzero_si128());
#define NBI_STEP(s, m)                                                                             \
    c = _mm_and_si128(_mm_or_si128(c, _mm_slli_epi64(c, s)), _mm_set1_epi64x((long long)(m)))
    if (ix->dim == 2) {
        NBI_STEP(16, 0x0000FFFF0000FFFFu);
        NBI_STEP(8, 0x00FF00FF00FF00FFu);
        NBI_STEP(4, 0x0F0F0F0F0F0F0F0Fu);
        NBI_STEP(2, 0x3333333333333333u);
        NBI_STEP(1, 0x5555555555555555u);
        return (uint64_t)_mm_cvtsi128_si64(c) |
               (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(c, c)) << 1;
    }
    NBI_STEP(32, 0x1F00000000FFFFu);
    NBI_STEP(16, 0x1F0000FF0000FFu);
    NBI_STEP(8, 0x100F00F00F00F00Fu);
    NBI_STEP(4, 0x10C30C30C30C30C3u);
    NBI_STEP(2, 0x1249249249249249u);
#undef NBI_STEP
    const uint64_t xy =
        (uint64_t)_mm_cvtsi128_si64(c) | (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(c, c)) << 1;
    const nbiIxFrame fr = nbi_ix_own_frame(ix);
    return xy | nbi_spread3(nbi_ix_cell(&fr, 2, p[2])) << 2;
}
#endif

// Bits that hold every value below n (at least 1).
static int nbi_bits_for(int32_t n)
{
    return n > 1 ? nbi_top_bit64((uint64_t)(n - 1)) + 1 : 1;
}

// The bits an axis of the code of a key that holds positions below n beside it: as many as fit
// in 64 bits and NBI_IX_CODE_WIDTH.
static int nbi_ix_axis_bits(int32_t n, int dim)
{
    int bits = (64 - nbi_bits_for(n)) / dim;
    if (bits > NBI_IX_CODE_WIDTH / dim) bits = NBI_IX_CODE_WIDTH / dim;
    return bits > NBI_CODE_BITS(dim) ? NBI_CODE_BITS(dim) : bits;
}

// Grows the index's storage for n points of the view (nodes: 0 until they are counted), all or
// nothing.
static bool nbi_ix_grow(nbiKnnIndex *ix, int32_t n, int dim, bool filtered, int32_t nodes,
                        const nbAllocator *alloc)
{
    nbiBuf *cur[9] = {&ix->pts,   &ix->idx,  &ix->bits, &ix->node, &ix->box,
                      &ix->nbits, &ix->code, &ix->hist, &ix->pos};
    const size_t need[9] = {(size_t)n * (size_t)dim,
                            (size_t)n,
                            filtered ? 2 * (size_t)n : 0,
                            (size_t)nodes,
                            (size_t)nodes * 4 * (size_t)dim,
                            filtered ? 4 * (size_t)nodes : 0,
                            3 * (size_t)n,
                            (size_t)NBI_RADIX_MAX_PASSES << NBI_RADIX_BITS,
                            (size_t)n};
    const size_t elem[9] = {sizeof(double),     sizeof(int32_t), sizeof(uint32_t),
                            sizeof(nbiKnnNode), sizeof(double),  sizeof(uint32_t),
                            sizeof(uint64_t),   sizeof(int32_t), sizeof(int32_t)};
    nbiBuf next[9];
    if (!nbi_bufs_prepare(alloc, cur, next, need, elem, 9)) return false;
    nbi_bufs_commit(alloc, cur, next, elem, 9, true);
    return true;
}

// Where the sorted range [a, b) of the codes c splits (a < result < b): at the first code with
// the highest bit in which the first and last differ; -1 when they are equal.
static int32_t nbi_ix_split_on(const uint64_t *c, int32_t a, int32_t b)
{
    const uint64_t diff = c[a] ^ c[b - 1];
    if (diff == 0) return -1;
    const uint64_t bit = (uint64_t)1 << nbi_top_bit64(diff);
    int32_t lo = a + 1, hi = b - 1; // c[a] has the bit clear, c[b - 1] set
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (c[mid] & bit)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

// Where the range [a, b) splits: by the first level's codes (code[0, n)), or within a run of one
// such code by the second level's (code[n, 2n), nbi_ix_order_runs), or when both are equal at
// the middle.
static int32_t nbi_ix_split(const uint64_t *code, int32_t n, int32_t a, int32_t b)
{
    int32_t m = nbi_ix_split_on(code, a, b);
    if (m < 0) m = nbi_ix_split_on(code + n, a, b);
    return m < 0 ? a + (b - a) / 2 : m;
}

// The tree over the sorted codes (both levels), in preorder: its node count; with `node`, the
// nodes too. The stack holds at most one entry a level: the first level's code bits (at most
// 64 - nbi_bits_for(n)), the second's (64 - nbi_bits_for(m) for a run of m), then halvings of
// equal codes (under nbi_bits_for(m) + 1): below NBI_IX_DEPTH, as a tree exists only past a
// leaf's NBI_KNN_LEAF_PTS points (nbi_bits_for(n) >= 6). With `depth`, the deepest leaf's level.
static int32_t nbi_ix_tree(const uint64_t *code, int32_t n, nbiKnnNode *node, int *depth)
{
    int32_t st[3 * NBI_IX_DEPTH];
    int lv[NBI_IX_DEPTH]; // each entry's level
    int sp = 0, deepest = 0;
    int32_t count = 1;
    st[0] = 0;
    st[1] = 0;
    st[2] = n;
    lv[0] = 0;
    sp = 1;
    while (sp > 0) {
        sp--;
        const int32_t t = st[3 * sp], a = st[3 * sp + 1], b = st[3 * sp + 2];
        const int level = lv[sp];
        deepest = level > deepest ? level : deepest;
        int32_t left = 0;
        if (b - a > NBI_KNN_LEAF_PTS) {
            const int32_t m = nbi_ix_split(code, n, a, b);
            left = count;
            count += 2;
            st[3 * sp] = left + 1; // the right child waits below the left
            st[3 * sp + 1] = m;
            st[3 * sp + 2] = b;
            st[3 * sp + 3] = left;
            st[3 * sp + 4] = a;
            st[3 * sp + 5] = m;
            lv[sp] = lv[sp + 1] = level + 1;
            sp += 2;
        }
        if (node != NULL) {
            node[t].left = left;
            node[t].first = a;
            node[t].end = b;
        }
    }
    if (depth != NULL) *depth = deepest;
    return count;
}

// Node t's two children's boxes are kept in t's slot of `box`, interleaved so that one load
// reads an axis's bound of both: for axis a, lo of the left and right child, then hi of both.
static void nbi_ix_set_child(nbiKnnIndex *ix, int32_t t, int side, const double b[6],
                             const uint32_t cb[2])
{
    const int dim = ix->dim;
    double *cbox = (double *)ix->box.ptr + (size_t)t * 4 * (size_t)dim;
    for (int a = 0; a < dim; a++) {
        cbox[4 * a + side] = b[a];
        cbox[4 * a + 2 + side] = b[3 + a];
    }
    if (ix->filtered) {
        uint32_t *nb = (uint32_t *)ix->nbits.ptr + 4 * (size_t)t;
        nb[2 * side] = cb[0];
        nb[2 * side + 1] = cb[1];
    }
}

// The exact box of positions [r0, r1) into lo[3], hi[3] (0 on axes past dim).
static void nbi_ix_run_box(const nbiKnnIndex *ix, int32_t r0, int32_t r1, double lo[3],
                           double hi[3])
{
    const double *pts = (const double *)ix->pts.ptr;
    for (int d = 0; d < 3; d++) {
        lo[d] = hi[d] = 0.0;
        if (d >= ix->dim) continue;
        const double *x = pts + (size_t)d * (size_t)ix->n;
        double l = x[r0], h = l;
        int32_t p = r0 + 1;
#if defined(__SSE2__)
        // Two lanes (minpd is x < l ? x : l, as below), folded at the end.
        if (r1 - p >= 4) {
            __m128d vl = _mm_loadu_pd(x + p), vh = vl;
            for (p += 2; p + 2 <= r1; p += 2) {
                const __m128d v = _mm_loadu_pd(x + p);
                vl = _mm_min_pd(v, vl);
                vh = _mm_max_pd(v, vh);
            }
            double fl[2], fh[2];
            _mm_storeu_pd(fl, vl);
            _mm_storeu_pd(fh, vh);
            for (int k = 0; k < 2; k++) {
                l = fl[k] < l ? fl[k] : l;
                h = fh[k] > h ? fh[k] : h;
            }
        }
#endif
        for (; p < r1; p++) {
            l = x[p] < l ? x[p] : l;
            h = x[p] > h ? x[p] : h;
        }
        lo[d] = l;
        hi[d] = h;
    }
}

// Node c's box (lo[3], hi[3]; 0 on axes past dim) and bits (the OR of its categories, of its
// masks): a leaf's from its points (each axis's coordinates contiguous), an inner node's from
// its children's, already in its slot.
static void nbi_ix_node_box(const nbiKnnIndex *ix, const nbiKnnNode *node, int32_t c, double b[6],
                            uint32_t cb[2])
{
    const int dim = ix->dim;
    for (int a = 0; a < 6; a++) b[a] = 0.0;
    cb[0] = cb[1] = 0;
    if (node[c].left != 0) {
        const double *s = (const double *)ix->box.ptr + (size_t)c * 4 * (size_t)dim;
        for (int a = 0; a < dim; a++) {
            b[a] = s[4 * a] < s[4 * a + 1] ? s[4 * a] : s[4 * a + 1];
            b[3 + a] = s[4 * a + 2] > s[4 * a + 3] ? s[4 * a + 2] : s[4 * a + 3];
        }
        if (ix->filtered) {
            const uint32_t *nb = (const uint32_t *)ix->nbits.ptr + 4 * (size_t)c;
            cb[0] = nb[0] | nb[2];
            cb[1] = nb[1] | nb[3];
        }
        return;
    }
    const int32_t p0 = node[c].first, p1 = node[c].end;
    nbi_ix_run_box(ix, p0, p1, b, b + 3);
    if (ix->filtered) {
        const uint32_t *bits = (const uint32_t *)ix->bits.ptr;
        for (int32_t p = p0; p < p1; p++) {
            cb[0] |= bits[2 * (size_t)p];
            cb[1] |= bits[2 * (size_t)p + 1];
        }
    }
}

// ---- runs of one code ----
// Points far closer together than the code's unit (the core of a heavy-tailed set, a tight
// cluster in a wide box: the codes span the whole box) share one code, and the tree has no bit
// to split them on. nbi_ix_order_runs splits every run longer than a leaf as a k-d tree does:
// at a pivot on the widest axis of its box (the median of three of its coordinates there), by
// one partition pass, and each part again, down to leaves; and records the splits as a second
// level of codes (code[n, 2n)): a part's path from the run, bit 62 - d set in the right side of
// a split at depth d, so that nbi_ix_split, where the first level's codes are equal, finds each
// split as the highest bit in which a range's ends differ. The parts come out within about
// 1:3 of balanced and as tight as median splits, at one pass a level instead of a quickselect's
// several (the core of a log-normal set at 200k points: 59M instructions with exact medians).
// Past NBI_IX_PATH_BITS levels (pivots that kept missing) a part is split at its middle position
// by an exact median and no bit, as nbi_ix_tree halves a range of equal codes. Left in the
// order they came (cell order, which is no order at that scale), the run's parts' boxes would
// cover the whole run, and every query near it would scan all of it (a run of 20k points in the
// core of a log-normal 2D set made a kNN query cost 4x what it costs on blobs). Answers do not
// depend on it: ties are broken by index, not position.
enum { NBI_IX_PATH_BITS = 48 };
int nbi_knn_path_bits = NBI_IX_PATH_BITS;

// The orders work on the run's positions (perm), and the points are moved once at the end: a
// swap of positions is one 8-byte swap, where moving the points would move every coordinate,
// the index and the filter bits.

// Moves the points of positions perm[0, m) to positions [r0, r0 + m) (perm: a permutation of
// those), one array at a time through tmp (m entries of scratch).
static void nbi_ix_permute(nbiKnnIndex *ix, const uint64_t *perm, int32_t r0, int32_t m,
                           uint64_t *tmp)
{
    const int32_t n = ix->n;
    double *pts = (double *)ix->pts.ptr;
    for (int d = 0; d < ix->dim; d++) {
        double *x = pts + (size_t)d * (size_t)n;
        for (int32_t i = 0; i < m; i++) memcpy(&tmp[i], &x[perm[i]], sizeof(double));
        for (int32_t i = 0; i < m; i++) memcpy(&x[r0 + i], &tmp[i], sizeof(double));
    }
    int32_t *idx = (int32_t *)ix->idx.ptr, *pos = (int32_t *)ix->pos.ptr;
    for (int32_t i = 0; i < m; i++)
        tmp[i] = (uint64_t)(uint32_t)idx[perm[i]] << 32 | (uint32_t)pos[perm[i]];
    for (int32_t i = 0; i < m; i++) {
        idx[r0 + i] = (int32_t)(uint32_t)(tmp[i] >> 32);
        pos[r0 + i] = (int32_t)(uint32_t)tmp[i];
    }
    if (ix->filtered) {
        uint32_t *bits = (uint32_t *)ix->bits.ptr; // category, mask
        for (int32_t i = 0; i < m; i++)
            tmp[i] = (uint64_t)bits[2 * perm[i]] << 32 | bits[2 * perm[i] + 1];
        for (int32_t i = 0; i < m; i++) {
            bits[2 * (size_t)(r0 + i)] = (uint32_t)(tmp[i] >> 32);
            bits[2 * (size_t)(r0 + i) + 1] = (uint32_t)tmp[i];
        }
    }
}

NBI_INLINE double nbi_ix_median3(double u, double v, double w)
{
    return u < v ? (v < w ? v : u < w ? w : u) : (u < w ? u : v < w ? w : v);
}

// The median of the coordinates on axis x of perm[lo], perm[lo + (hi - lo) / 2] and perm[hi].
static double nbi_ix_pivot(const double *x, const uint64_t *perm, int32_t lo, int32_t hi)
{
    return nbi_ix_median3(x[perm[lo]], x[perm[lo + (hi - lo) / 2]], x[perm[hi]]);
}

// Hoare's partition of perm[*i, *j] (inclusive) around p, one of its coordinates on axis x:
// after it, *i > *j, no point before *i is above p, none after *j below it, and any between is
// p itself. The first swap (p is one of the values) moves both ends inward, and *i stops at most
// one past *j: the first's start < *i <= the last's end.
static void nbi_ix_hoare(const double *x, uint64_t *perm, int32_t *pi, int32_t *pj, double p)
{
    int32_t i = *pi, j = *pj;
    while (i <= j) { // a value equal to p on each side stops both scans
        while (x[perm[i]] < p) i++;
        while (x[perm[j]] > p) j--;
        if (i <= j) {
            const uint64_t t = perm[i];
            perm[i++] = perm[j];
            perm[j--] = t;
        }
    }
    *pi = i;
    *pj = j;
}

// Reorders perm[a, b) so that no point of perm[a, m) has a coordinate on axis x above one of
// perm[m, b): a quickselect (Hoare's partition around the median of three).
static void nbi_ix_select(const double *x, uint64_t *perm, int32_t a, int32_t b, int32_t m)
{
    int32_t lo = a, hi = b - 1;
    while (lo < hi) {
        int32_t i = lo, j = hi;
        nbi_ix_hoare(x, perm, &i, &j, nbi_ix_pivot(x, perm, lo, hi));
        if (m <= j)
            hi = j;
        else if (m >= i)
            lo = i;
        else
            return;
    }
}

// Splits the run [r0, r1) (all of one code) as the comment above says, its path codes into
// code2[r0, r1). perm: room for r1 - r0 positions; the run's own codes serve as
// the scratch the moves need, and are restored.
static void nbi_ix_order_run(nbiKnnIndex *ix, uint64_t *code, uint64_t *code2, uint64_t *perm,
                             int32_t r0, int32_t r1)
{
    const int32_t n = ix->n, dim = ix->dim, m = r1 - r0;
    const double *pts = (const double *)ix->pts.ptr;
    for (int32_t i = 0; i < m; i++) perm[i] = (uint64_t)(r0 + i);
    // Each pending part with its depth, its path, and the bounds of its points (the run's box,
    // cut at the pivots above it: a bound, not the exact box, but enough to choose the widest
    // axis). One pending part a level: NBI_IX_PATH_BITS, then halvings (under 32).
    enum { PENDING = NBI_IX_PATH_BITS + 34 };
    int32_t st[3 * PENDING];
    uint64_t path[PENDING];
    double sb[6 * PENDING];
    int sp = 0;
    nbi_ix_run_box(ix, r0, r1, sb, sb + 3);
    st[0] = 0;
    st[1] = m;
    st[2] = 0;
    path[0] = 0;
    sp = 1;
    while (sp > 0) {
        sp--;
        const int32_t a = st[3 * sp], b = st[3 * sp + 1], depth = st[3 * sp + 2];
        const uint64_t at = path[sp];
        double box[6];
        memcpy(box, sb + 6 * sp, sizeof box);
        int axis = 0;
        double widest = 0.0;
        for (int d = 0; d < dim; d++)
            if (box[3 + d] - box[d] > widest) {
                widest = box[3 + d] - box[d];
                axis = d;
            }
        if (b - a <= NBI_KNN_LEAF_PTS || !(widest > 0.0)) { // a leaf, or one place: done
            for (int32_t i = a; i < b; i++) code2[r0 + i] = at;
            continue;
        }
        const double *x = pts + (size_t)axis * (size_t)n;
        int32_t mid;
        double cut;
        uint64_t bit = 0;
        if (depth < nbi_knn_path_bits && depth < NBI_IX_PATH_BITS) {
            // (Tukey's ninther on large parts: closer to the median, so shallower trees)
            const int32_t e = (b - a) / 8;
            cut = b - a < 256 ? nbi_ix_pivot(x, perm, a, b - 1)
                              : nbi_ix_median3(nbi_ix_pivot(x, perm, a, a + 2 * e),
                                               nbi_ix_pivot(x, perm, a + 3 * e, a + 5 * e),
                                               nbi_ix_pivot(x, perm, b - 1 - 2 * e, b - 1));
            int32_t j = b - 1;
            mid = a; // (a < mid < b)
            nbi_ix_hoare(x, perm, &mid, &j, cut);
            bit = (uint64_t)1 << (62 - depth);
        } else {
            mid = a + (b - a) / 2; // as nbi_ix_split halves equal codes
            nbi_ix_select(x, perm, a, b, mid);
            cut = x[perm[mid]]; // the least of the upper half
        }
        st[3 * sp] = mid;
        st[3 * sp + 1] = b;
        st[3 * sp + 2] = depth + 1;
        path[sp] = at | bit;
        memcpy(sb + 6 * sp, box, sizeof box);
        sb[6 * sp + axis] = cut;
        st[3 * sp + 3] = a;
        st[3 * sp + 4] = mid;
        st[3 * sp + 5] = depth + 1;
        path[sp + 1] = at;
        memcpy(sb + 6 * (sp + 1), box, sizeof box);
        sb[6 * (sp + 1) + 3 + axis] = cut;
        sp += 2;
    }
    const uint64_t c = code[r0];
    nbi_ix_permute(ix, perm, r0, m, code + r0);
    for (int32_t i = 0; i < m; i++) code[r0 + i] = c;
}

// Splits each run of equal codes longer than a leaf (code: the n sorted codes, then n entries
// for the second level's, 0 outside such runs, then n entries of scratch).
static void nbi_ix_order_runs(nbiKnnIndex *ix, uint64_t *code)
{
    const int32_t n = ix->n;
    uint64_t *code2 = code + n, *scratch = code + 2 * (size_t)n;
    for (int32_t r0 = 0, r1; r0 < n; r0 = r1) {
        for (r1 = r0 + 1; r1 < n && code[r1] == code[r0];) r1++;
        if (r1 - r0 > NBI_KNN_LEAF_PTS)
            nbi_ix_order_run(ix, code, code2, scratch, r0, r1);
        else
            for (int32_t i = r0; i < r1; i++) code2[i] = 0;
    }
}

// The most levels a tree over the codes of n points may have before nbi_ix_build splits them
// as one run instead: twice those of a balanced tree's, and 16 more.
int nbi_ix_depth_cap(int32_t n)
{
    return 2 * nbi_bits_for(n / NBI_KNN_LEAF_PTS + 1) + 16;
}

// What nbi_ix_build made: the index, nothing (allocation failed), or nothing by choice.
enum { NBI_IX_FAILED, NBI_IX_BUILT, NBI_IX_UNWANTED };

// Builds the index of the view's n points, found at positions [0, positions): every position
// but the slack the hash keeps between its cells (NaN coordinates; none in a grid's view, where
// positions is n).
static int nbi_ix_build(nbiKnnIndex *ix, const nbiView *v, int32_t positions,
                        const nbAllocator *alloc, bool decline_duplicates)
{
    const int32_t n = v->n;
    const int dim = v->dim;
    const bool filtered = v->cat != NULL;
    if (!nbi_ix_grow(ix, n, dim, filtered, 0, alloc)) return NBI_IX_FAILED;
    ix->n = n;
    ix->dim = dim;
    ix->filtered = filtered;

    // The box, and the code's scale: the widest axis spans the codes.
    double mn[3] = {0, 0, 0}, mx[3] = {0, 0, 0};
    for (int a = 0; a < dim; a++) {
        mn[a] = (double)INFINITY;
        mx[a] = -(double)INFINITY;
    }
    for (int32_t p = 0; p < positions; p++)
        for (int a = 0; a < dim; a++) { // (slack: NaN fails both tests)
            const double x = v->pts[(size_t)p * (size_t)dim + (size_t)a];
            mn[a] = x < mn[a] ? x : mn[a];
            mx[a] = x > mx[a] ? x : mx[a];
        }
    const int pos_bits = nbi_bits_for(positions), axis_bits = nbi_ix_axis_bits(positions, dim);
    nbiIxFrame fr;
    nbi_ix_frame(&fr, dim, mn, mx, axis_bits);
    memcpy(ix->origin, fr.origin, sizeof ix->origin);
    ix->scale = fr.scale;
    ix->max_cell = fr.max_cell;

    uint64_t *key = (uint64_t *)ix->code.ptr;
#if defined(__SSE2__) && defined(__x86_64__)
#define NBI_IX_KEY(x) nbi_ix_code_sse2(ix, x)
#else
#define NBI_IX_KEY(x) nbi_ix_code(ix, x)
#endif
    if (positions == n) {
        for (int32_t p = 0; p < n; p++)
            key[p] = NBI_IX_KEY(v->pts + (size_t)p * (size_t)dim) << pos_bits | (uint64_t)p;
    } else { // the hash's: slack (NaN) skipped
        int32_t m = 0;
        for (int32_t p = 0; p < positions; p++) {
            const double *x = v->pts + (size_t)p * (size_t)dim;
            if (x[0] != x[0]) continue;
            if (m == n) return NBI_IX_FAILED; // (cannot happen: n points in all)
            key[m++] = NBI_IX_KEY(x) << pos_bits | (uint64_t)p;
        }
        if (m != n) return NBI_IX_FAILED;
    }
#undef NBI_IX_KEY
    nbi_radix_sort(key, key + n, n, pos_bits, pos_bits + axis_bits * dim, (int32_t *)ix->hist.ptr);

    // Crowded cells made of duplicates (more than half the points share their code with the
    // one before) on a dense or ranked grid: the ring walk scans such a cell as one contiguous
    // run, where the tree descends to leaves of equal boxes; on cells of about the query
    // radius the walk measured faster on the corpus's heavy duplicates (about 4 copies a
    // site), so it answers the first NBI_KNN_AFTER(n) queries and the index is built only for
    // a batch (on cells sized for k, as the Python package builds them, the index measured
    // 1.2x the walk at k = 8 and 1.5x at k = 32). The hashed layout keeps the index: its cells
    // are no better there; so does 3D, where a ring is 26 cells and more (and codes of 14 bits
    // an axis would take a dense core for duplicates). (Tests that force the index skip the
    // check.)
    if (decline_duplicates && dim == 2 && v->table == NULL && nbi_knn_index_use == 0) {
        int32_t same = 0;
        for (int32_t i = 1; i < n; i++) same += (key[i] >> pos_bits) == (key[i - 1] >> pos_bits);
        if (2 * (int64_t)same > (int64_t)n) return NBI_IX_UNWANTED;
    }

    double *pts = (double *)ix->pts.ptr;
    int32_t *idx = (int32_t *)ix->idx.ptr, *pos = (int32_t *)ix->pos.ptr;
    uint32_t *bits = (uint32_t *)ix->bits.ptr;
    const uint64_t pmask = ((uint64_t)1 << pos_bits) - 1;
    for (int32_t i = 0; i < n; i++) {
        const int32_t p = (int32_t)(key[i] & pmask);
        for (int a = 0; a < dim; a++)
            pts[(size_t)a * (size_t)n + (size_t)i] = v->pts[(size_t)p * (size_t)dim + (size_t)a];
        idx[i] = v->idx[p];
        pos[i] = p;
        if (filtered) {
            bits[2 * (size_t)i] = v->cat[p];
            bits[2 * (size_t)i + 1] = v->mask[p];
        }
        key[i] >>= pos_bits; // the code alone
    }

    // The tree's depth before the runs are split (each run halved at its middle, about as deep
    // as its k-d splits will be), to choose between the codes' tree and one k-d run.
    int depth = 0;
    for (int32_t i = 0; i < n; i++) key[n + i] = 0;
    (void)nbi_ix_tree(key, n, NULL, &depth);
    if (depth > nbi_ix_depth_cap(n)) {
        // A heavy tail (points at distances spread over many octaves from a centre): each bit
        // of the codes peels off a few outer points, and leaves sit 58 levels deep on 100k
        // log-normal 3D points (13 on uniform ones), every query testing the boxes of the
        // lopsided levels above it. The points are split as one run of one code instead, by
        // nbi_ix_order_run's pivots: a k-d tree of about log2(n / leaf) levels (a kNN query at
        // k = 8 there: 5.6k instructions against 8.0k). Only past the cap: on uniform 3D
        // points the k-d tree's queries cost 13% more than the codes' tree's.
        for (int32_t i = 0; i < n; i++) key[i] = 0;
    }
    nbi_ix_order_runs(ix, key);

    // The nodes (counted first, to hold just them), then the boxes from the last node up:
    // every node's children are numbered after it, so their boxes are known by then.
    const int32_t nodes = nbi_ix_tree(key, n, NULL, &depth);
    if (!nbi_ix_grow(ix, n, dim, filtered, nodes, alloc)) return NBI_IX_FAILED;
    key = (uint64_t *)ix->code.ptr; // (grown with its contents: `keep`)
    pts = (double *)ix->pts.ptr;
    bits = (uint32_t *)ix->bits.ptr;
    nbiKnnNode *node = (nbiKnnNode *)ix->node.ptr;
    ix->nnodes = nbi_ix_tree(key, n, node, NULL);
    ix->depth = depth;
    for (int32_t t = ix->nnodes - 1; t >= 0; t--) {
        if (node[t].left == 0) continue; // a leaf: its parent takes its box
        for (int side = 0; side < 2; side++) {
            double b[6];
            uint32_t cb[2];
            nbi_ix_node_box(ix, node, node[t].left + side, b, cb);
            nbi_ix_set_child(ix, t, side, b, cb);
        }
    }
    uint32_t rb[2];
    nbi_ix_node_box(ix, node, 0, ix->root, rb);
    return NBI_IX_BUILT;
}

int nbi_knn_index_use = 0;

// The occupancy of the cell of a point taken at random: the cells' counts squared, summed,
// over n.
static double nbi_ix_crowding(const nbiView *v)
{
    double sq = 0.0;
    for (int32_t c = 0; c < v->ncells; c++) {
        const double m = (double)(nbi_view_end(v, c) - v->start[c]);
        sq += m * m;
    }
    return v->n > 0 ? sq / (double)v->n : 0.0;
}

bool nbi_knn_index_wanted(const nbiView *v)
{
    if (nbi_knn_index_use != 0) return nbi_knn_index_use > 0;
    if (v->table != NULL || v->dim == 3) return true;
    return nbi_ix_crowding(v) * (double)v->ncells > 2.0 * (double)v->n; // twice the mean
}

// The view's occupancy, worked out once a build (z->crowded): NBI_IX_KNOWN, with NBI_IX_CROWDED
// (nbi_knn_crowded) and NBI_IX_UNEVEN (nbi_knn_index_wanted's rule for 2D cells) when they hold.
enum { NBI_IX_KNOWN = 1, NBI_IX_CROWDED = 2, NBI_IX_UNEVEN = 4 };
static int nbi_ix_occupancy(nbiKnnLazy *z, const nbiView *v)
{
#if NBI_KNN_INDEX
    int c = atomic_load_explicit(&z->crowded, memory_order_relaxed);
    if (c == 0) {
        const double crowding = nbi_ix_crowding(v);
        c = NBI_IX_KNOWN | (crowding > (double)NBI_KNN_CROWDED ? NBI_IX_CROWDED : 0) |
            (crowding * (double)v->ncells > 2.0 * (double)v->n ? NBI_IX_UNEVEN : 0);
        atomic_store_explicit(&z->crowded, c, memory_order_relaxed);
    }
    return c;
#else
    (void)z;
    (void)v;
    return NBI_IX_KNOWN;
#endif
}

bool nbi_knn_crowded(nbiKnnLazy *z, const nbiView *v)
{
    if (nbi_knn_index_use != 0) return nbi_knn_index_use > 0;
    return (nbi_ix_occupancy(z, v) & NBI_IX_CROWDED) != 0;
}

#if NBI_KNN_INDEX
// The cell of q, packed 21 bits an axis from one below the view's box (clamped: only whether two
// queries' cells touch matters).
static int64_t nbi_ix_cell_key(const nbiView *v, const double *q)
{
    int64_t key = 0;
    for (int a = 0; a < v->dim; a++) {
        const double c = nbi_cell_f(&v->cm, q[a]) - (double)v->lo[a] + 1.0;
        const int64_t u = c > 0.0 ? (c < 2097151.0 ? (int64_t)c : 2097151) : 0;
        key |= u << (21 * a);
    }
    return key;
}

// Whether the cells packed in keys a and b are the same or touch (a Chebyshev step of 1).
static bool nbi_ix_cells_touch(int64_t a, int64_t b)
{
    for (int s = 0; s < 63; s += 21) {
        const int64_t d = ((a >> s) & 0x1FFFFF) - ((b >> s) & 0x1FFFFF);
        if (d < -1 || d > 1) return false;
    }
    return true;
}
#endif

// The cap's reach along axis a within E of the gap g (nbi_knn_far_saving), clipped to the box;
// `both`: the sum of the reaches on the query's two sides (an axis it lies within).
static double nbi_ix_reach(const nbiView *v, const double *q, const double *o, int a, double g,
                           double e, bool both)
{
    const double ext = (double)v->ext[a];
    if (o[a] > 0.0) {
        const double r = sqrt(o[a] * o[a] + 2.0 * g * e) - o[a];
        return r < ext ? r : ext;
    }
    const double s = sqrt(2.0 * g * e), u = q[a] / v->cm.cell;
    const double lo = u - (double)v->lo[a], hi = (double)(v->hi[a] + 1) - u;
    if (!both) return s < (lo > hi ? lo : hi) ? s : (lo > hi ? lo : hi);
    return (s < lo ? s : lo) + (s < hi ? s : hi);
}

double nbi_knn_far_saving(const nbiView *v, const double *q, int32_t k)
{
    if (v->n == 0 || !nbi_ball_far(v, q)) return 0.0;
    double o[3] = {0, 0, 0}, g2 = 0.0; // the offsets outside the box, in cells (0 within it)
    for (int a = 0; a < v->dim; a++) {
        const double u = q[a] / v->cm.cell;
        const double below = (double)v->lo[a] - u, above = u - (double)(v->hi[a] + 1);
        o[a] = below > 0.0 ? below : above > 0.0 ? above : 0.0;
        g2 += o[a] * o[a];
    }
    const double g = sqrt(g2);
    const int dim = v->dim;
    double cells = 1.0, span = 0.0;
    for (int a = 0; a < dim; a++) {
        cells *= (double)v->ext[a];
        span = (double)v->ext[a] > span ? (double)v->ext[a] : span;
    }
    const double want = 2.0 * (double)k * cells / (double)v->n; // the reaches' product for k
    double elo = 0x1p-30, ehi = (double)dim * span;             // E in cells, bisected
    for (int it = 0; it < 16 && ehi > 2.0 * elo; it++) {
        const double e = sqrt(elo * ehi);
        double prod = 1.0;
        for (int a = 0; a < dim; a++) prod *= nbi_ix_reach(v, q, o, a, g, e, true);
        if (prod < want)
            elo = e;
        else
            ehi = e;
    }
    double rings = 0.0;
    for (int a = 0; a < dim; a++) {
        const double r = nbi_ix_reach(v, q, o, a, g, ehi, false);
        rings = r > rings ? r : rings;
    }
    const double walk = (rings + 2.0) * NBI_KNN_RING_COST; // (+2: the ring outside the box, the
                                                           // one that finds nothing nearer)
    const double descent = NBI_KNN_DESCENT_COST + (double)NBI_KNN_DESCENT_K * (double)k;
    return walk > descent ? walk - descent : 0.0;
}

// The points a far ball's cap holds at the mean density of the box [lo, hi] (the index's exact
// box once it is ready, else the occupied cells'): from the far centre the ball's surface across
// the box is about a plane at the depth h = r - (the centre's distance to the box) past the box's
// nearest face, edge or corner. The cap's reach along axis a is h / u_a (u: the unit direction
// from the box to the centre), clipped to the box's extent; the cap is the corner's simplex over
// the reaches not clipped (the product of the reaches over their count's factorial: a face's
// slab, an edge's prism and a corner's simplex alike).
static double nbi_ix_cap_points(const nbiView *v, const double *lo, const double *hi,
                                const double *q, double r)
{
    double o[3] = {0, 0, 0}, g2 = 0.0, ext[3] = {1, 1, 1};
    for (int a = 0; a < v->dim; a++) {
        o[a] = q[a] < lo[a] ? lo[a] - q[a] : q[a] > hi[a] ? q[a] - hi[a] : 0.0;
        g2 += o[a] * o[a];
        ext[a] = hi[a] - lo[a] > v->cm.cell ? hi[a] - lo[a] : v->cm.cell;
    }
    const double g = sqrt(g2), h = r - g;
    if (!(h > 0.0)) return 0.0;
    double vol = 1.0, box = 1.0;
    int free_axes = 0;
    for (int a = 0; a < v->dim; a++) {
        const double reach = o[a] * ext[a] > h * g ? h * g / o[a] : ext[a];
        free_axes += reach < ext[a];
        vol *= reach;
        box *= ext[a];
    }
    vol /= free_axes == 3 ? 6.0 : free_axes == 2 ? 2.0 : 1.0;
    return vol / box * (double)v->n;
}

double nbi_knn_ball_saving(nbiKnnLazy *z, const nbiView *v, const double *center, double radius)
{
    if (v->table == NULL && v->dim == 2 && !(nbi_ix_occupancy(z, v) & NBI_IX_UNEVEN)) return 0.0;
    if (v->n == 0) return 0.0; // (the centre is far: nbi_walk_radius_indexed tested it)
    if (v->table != NULL || v->occ != NULL) return NBI_BALL_FAR_SAVING; // (clustered)
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    const nbiKnnIndex *ix = nbi_knn_index_ready(z);
    for (int a = 0; a < v->dim; a++) {
        lo[a] = ix != NULL ? ix->root[a] : (double)v->lo[a] * v->cm.cell;
        hi[a] = ix != NULL ? ix->root[3 + a] : (double)(v->hi[a] + 1) * v->cm.cell;
    }
    if (nbi_ix_cap_points(v, lo, hi, center, radius) > NBI_BALL_CAP_POINTS) return 0.0;
    return NBI_BALL_FAR_SAVING;
}

#if NBI_KNN_INDEX
// Counts a query in or near the box towards the batch in cell order (nbi_knn_index_get): whether
// the batch has passed NBI_KNN_AFTER(n) with it.
NBI_INLINE bool nbi_ix_batch_count(nbiKnnLazy *z, const nbiView *v, const double *point)
{
    const int64_t key = nbi_ix_cell_key(v, point);
    const int64_t last = atomic_load_explicit(&z->last, memory_order_relaxed);
    atomic_store_explicit(&z->last, key, memory_order_relaxed);
    if (!nbi_ix_cells_touch(key, last)) return false;
    const int walked = atomic_load_explicit(&z->walked, memory_order_relaxed) + 1;
    atomic_store_explicit(&z->walked, walked, memory_order_relaxed);
    return walked > NBI_KNN_AFTER(v->n);
}
#endif

const nbiKnnIndex *nbi_knn_index_get(nbiKnnLazy *z, const nbiView *v, const nbAllocator *a,
                                     const double *point, int32_t k)
{
#if NBI_KNN_INDEX
    int s = atomic_load_explicit(&z->state, memory_order_acquire);
    if (s == NBI_KNN_READY) {
        if (!atomic_load_explicit(&z->far_only, memory_order_relaxed)) return &z->ix;
        if (nbi_ball_far(v, point)) return &z->ix;
        if (!nbi_ix_batch_count(z, v, point)) return NULL; // near: the walk, counting
        atomic_store_explicit(&z->far_only, 0, memory_order_relaxed);
        return &z->ix;
    }
    bool far = false;
    if (s == NBI_KNN_COUNTING) { // a far query's saving, or the walk's tally of a batch in cell
                                 // order; past either, build
        const double save = nbi_ball_far(v, point) ? nbi_knn_far_saving(v, point, k) : 0.0;
        if (save > 0.0) {
            const long long debt = atomic_load_explicit(&z->debt, memory_order_relaxed) +
                                   (save < 0x1p60 ? (long long)save : (long long)1 << 60);
            atomic_store_explicit(&z->debt, debt, memory_order_relaxed);
            if ((double)debt <= (double)NBI_KNN_BUILD_COST * (double)v->n) return NULL;
            far = true;
        } else if (!nbi_ix_batch_count(z, v, point)) {
            return NULL;
        }
    } else if (s != NBI_KNN_STALE || v->n == 0) {
        return NULL;
    }
    const int was = s;
    if (!atomic_compare_exchange_strong_explicit(&z->state, &s, NBI_KNN_BUILDING,
                                                 memory_order_acquire, memory_order_acquire))
        return s == NBI_KNN_READY ? &z->ix : NULL; // another query built it, or is building it
    // Not wanted, or crowded by duplicates: walk the cells, counting (never, when tests say so).
    const int made = was == NBI_KNN_STALE && !nbi_knn_index_wanted(v)
                         ? NBI_IX_UNWANTED
                         : nbi_ix_build(&z->ix, v, v->n, a, was == NBI_KNN_STALE);
    if (made == NBI_IX_UNWANTED) {
        atomic_store_explicit(&z->walked, 0, memory_order_relaxed);
        atomic_store_explicit(&z->debt, 0, memory_order_relaxed);
    }
    atomic_store_explicit(&z->far_only, far, memory_order_relaxed);
    const int state = made == NBI_IX_BUILT    ? NBI_KNN_READY
                      : made == NBI_IX_FAILED ? NBI_KNN_FAILED
                      : nbi_knn_index_use < 0 ? NBI_KNN_CELLS
                                              : NBI_KNN_COUNTING;
    atomic_store_explicit(&z->state, state, memory_order_release);
    return made == NBI_IX_BUILT ? &z->ix : NULL;
#else
    (void)z;
    (void)v;
    (void)a;
    (void)point;
    (void)k;
    return NULL;
#endif
}

void nbi_knn_index_charge(nbiKnnLazy *z, const nbiView *v, const nbAllocator *a, int32_t positions,
                          double saving)
{
#if NBI_KNN_INDEX
    int s = atomic_load_explicit(&z->state, memory_order_acquire);
    if ((s != NBI_KNN_STALE && s != NBI_KNN_COUNTING) || v->n == 0 || !(saving > 0.0) ||
        nbi_knn_index_use < 0)
        return;
    const long long debt = atomic_load_explicit(&z->debt, memory_order_relaxed) +
                           (saving < 0x1p60 ? (long long)saving : (long long)1 << 60);
    atomic_store_explicit(&z->debt, debt, memory_order_relaxed);
    if ((double)debt <= (double)NBI_KNN_BUILD_COST * (double)v->n) return;
    if (!atomic_compare_exchange_strong_explicit(&z->state, &s, NBI_KNN_BUILDING,
                                                 memory_order_acquire, memory_order_acquire))
        return; // another query builds it
    const int made = nbi_ix_build(&z->ix, v, positions, a, false);
    atomic_store_explicit(&z->far_only, 1, memory_order_relaxed);
    atomic_store_explicit(&z->state, made == NBI_IX_BUILT ? NBI_KNN_READY : NBI_KNN_FAILED,
                          memory_order_release);
#else
    (void)z;
    (void)v;
    (void)a;
    (void)positions;
    (void)saving;
#endif
}

void nbi_knn_index_stale(nbiKnnLazy *z)
{
#if NBI_KNN_INDEX
    atomic_store_explicit(&z->state, NBI_KNN_STALE, memory_order_relaxed);
    atomic_store_explicit(&z->crowded, 0, memory_order_relaxed);
    atomic_store_explicit(&z->debt, 0, memory_order_relaxed);
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
    nbi_free(a, ix->node.ptr, ix->node.cap, sizeof(nbiKnnNode));
    nbi_free(a, ix->box.ptr, ix->box.cap, sizeof(double));
    nbi_free(a, ix->nbits.ptr, ix->nbits.cap, sizeof(uint32_t));
    nbi_free(a, ix->code.ptr, ix->code.cap, sizeof(uint64_t));
    nbi_free(a, ix->hist.ptr, ix->hist.cap, sizeof(int32_t));
    nbi_free(a, ix->pos.ptr, ix->pos.cap, sizeof(int32_t));
    memset(ix, 0, sizeof *ix);
    nbi_knn_index_stale(z);
}

size_t nbi_knn_index_bytes(const nbiKnnLazy *z)
{
    const nbiKnnIndex *ix = &z->ix;
    return ix->pts.cap * sizeof(double) + ix->idx.cap * sizeof(int32_t) +
           ix->bits.cap * sizeof(uint32_t) + ix->node.cap * sizeof(nbiKnnNode) +
           ix->box.cap * sizeof(double) + ix->nbits.cap * sizeof(uint32_t) +
           ix->code.cap * sizeof(uint64_t) + ix->hist.cap * sizeof(int32_t) +
           ix->pos.cap * sizeof(int32_t);
}

// ---- query ----

typedef struct nbiIxQuery {
    const nbiKnnIndex *ix;
    double q[3];
    nbFilter f;
    double lim2;   // max_distance squared
    double bound;  // nbi_best_bound: a candidate farther than this cannot enter
    uint64_t code; // the query's Z-order code (nbi_ix_code), once `coded`
    bool coded;
    bool whole;      // the first leaf is scanned whole (nbi_ix_leaf1_avx2 finds its nearest)
    nbiKnnHeap heap; // the k best so far
} nbiIxQuery;

// The squared gaps from the query to a node's two children's boxes (the node's slot of `box`),
// into g[0] (left) and g[1] (right). Per axis the gap is lo - q, q - hi or 0: each at most the
// |difference| of any point in the box from the query, as rounding is monotone; they are
// squared and summed in nbi_dist2's order, so a gap is never above the d2 of any point in the
// box. Two lanes with SSE2 (the same operations in each lane), one by one without.
NBI_INLINE void nbi_ix_gaps(const nbiIxQuery *x, const double *cb, int dim, double g[2])
{
#if defined(__SSE2__)
    const __m128d zero = _mm_setzero_pd();
    __m128d d2 = zero;
    for (int a = 0; a < dim; a++) {
        const __m128d q = _mm_set1_pd(x->q[a]);
        const __m128d below = _mm_sub_pd(_mm_loadu_pd(cb + 4 * a), q);
        const __m128d above = _mm_sub_pd(q, _mm_loadu_pd(cb + 4 * a + 2));
        const __m128d gap = _mm_max_pd(_mm_max_pd(below, above), zero);
        d2 = a == 0 ? _mm_mul_pd(gap, gap) : _mm_add_pd(d2, _mm_mul_pd(gap, gap));
    }
    _mm_storeu_pd(g, d2);
#else
    for (int side = 0; side < 2; side++) {
        double s = 0.0;
        for (int a = 0; a < dim; a++) {
            const double below = cb[4 * a + side] - x->q[a];
            const double above = x->q[a] - cb[4 * a + 2 + side];
            double gap = below > above ? below : above;
            gap = gap > 0.0 ? gap : 0.0;
            s = a == 0 ? gap * gap : s + gap * gap;
        }
        g[side] = s;
    }
#endif
}

#if defined(__SSE2__)
// The d2 of positions p and p + 1 from (qx, qy, qz) in two lanes, as nbi_dist2 computes it (q - p
// per axis, squared, summed in axis order); px, py, pz: the index's coordinates by axis.
NBI_INLINE __m128d nbi_ix_d2x2(const double *px, const double *py, const double *pz, __m128d qx,
                               __m128d qy, __m128d qz, int dim, int32_t p)
{
    const __m128d dx = _mm_sub_pd(qx, _mm_loadu_pd(px + p));
    const __m128d dy = _mm_sub_pd(qy, _mm_loadu_pd(py + p));
    __m128d d2 = _mm_add_pd(_mm_mul_pd(dx, dx), _mm_mul_pd(dy, dy));
    if (dim == 3) {
        const __m128d dz = _mm_sub_pd(qz, _mm_loadu_pd(pz + p));
        d2 = _mm_add_pd(d2, _mm_mul_pd(dz, dz));
    }
    return d2;
}
#endif

#if NBI_AVX2
// nbi_ix_d2x2 for positions p .. p + 3 in four lanes.
NBI_TARGET_AVX2 NBI_INLINE __m256d nbi_ix_d2x4(const double *px, const double *py, const double *pz,
                                               __m256d qx, __m256d qy, __m256d qz, int dim,
                                               int32_t p)
{
    const __m256d dx = _mm256_sub_pd(qx, _mm256_loadu_pd(px + p));
    const __m256d dy = _mm256_sub_pd(qy, _mm256_loadu_pd(py + p));
    __m256d d2 = _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy));
    if (dim == 3) {
        const __m256d dz = _mm256_sub_pd(qz, _mm256_loadu_pd(pz + p));
        d2 = _mm256_add_pd(d2, _mm256_mul_pd(dz, dz));
    }
    return d2;
}
#endif

// Offers position p at squared distance d2.
NBI_INLINE void nbi_ix_offer(nbiIxQuery *x, int32_t p, double d2)
{
    const nbiKnnIndex *ix = x->ix;
    if (!(d2 <= x->bound)) return;
    if (ix->filtered) {
        const uint32_t *bits = (const uint32_t *)ix->bits.ptr + 2 * (size_t)p;
        if (!nbi_filter_match(x->f.category, x->f.mask, bits[0], bits[1])) return;
    }
    const nbNeighbor cand = {((const int32_t *)ix->idx.ptr)[p], d2};
    nbi_best_offer(&x->heap, cand);
    x->bound = nbi_best_bound(&x->heap, x->lim2);
}

// Scans positions [p0, p1): d2 as nbi_dist2 computes it (q - p per axis, squared, summed in
// axis order), two at a time with SSE2.
NBI_INLINE void nbi_ix_leaf(nbiIxQuery *x, int dim, int32_t p0, int32_t p1)
{
    const nbiKnnIndex *ix = x->ix;
    const double *px = (const double *)ix->pts.ptr, *py = px + ix->n, *pz = py + ix->n;
    int32_t p = p0;
#if defined(__SSE2__)
    const __m128d qx = _mm_set1_pd(x->q[0]), qy = _mm_set1_pd(x->q[1]);
    const __m128d qz = _mm_set1_pd(x->q[2]);
    for (; p + 2 <= p1; p += 2) {
        const __m128d d2 = nbi_ix_d2x2(px, py, pz, qx, qy, qz, dim, p);
        if (_mm_movemask_pd(_mm_cmple_pd(d2, _mm_set1_pd(x->bound))) == 0) continue;
        double d[2];
        _mm_storeu_pd(d, d2);
        nbi_ix_offer(x, p, d[0]);
        nbi_ix_offer(x, p + 1, d[1]);
    }
#endif
    for (; p < p1; p++) {
        const double dx = x->q[0] - px[p], dy = x->q[1] - py[p];
        double d2 = dx * dx + dy * dy;
        if (dim == 3) {
            const double dz = x->q[2] - pz[p];
            d2 = d2 + dz * dz;
        }
        nbi_ix_offer(x, p, d2);
    }
}

// Scans the leaf [p0, p1) while the heap is not full (the first leaf the walk reaches) from the
// query's place in it: first the window of as many positions as the heap lacks around the first
// whose code is at least the query's, then the rest. Points near in Z order are mostly near in
// space, so the k best fill with near points first and the bound is tight early: fewer
// candidates enter the sorted list, and those that do move fewer entries.
// `scan` is nbi_ix_leaf or a wider copy of it.
typedef void nbiIxScanFn(nbiIxQuery *x, int dim, int32_t p0, int32_t p1);
NBI_INLINE void nbi_ix_leaf_out(nbiIxQuery *x, int dim, int32_t p0, int32_t p1, nbiIxScanFn *scan)
{
    const int32_t lack = x->heap.k - x->heap.size;
    if (lack == 0 || p1 - p0 < 2 * lack) { // (a window of most of the leaf gains nothing)
        scan(x, dim, p0, p1);
        return;
    }
    if (!x->coded) {
        x->code = nbi_ix_code(x->ix, x->q);
        x->coded = true;
    }
    const uint64_t *code = (const uint64_t *)x->ix->code.ptr;
    int32_t a = p0, b = p1; // the first code >= the query's lies in [a, b]
    while (a < b) {
        const int32_t m = a + (b - a) / 2;
        if (code[m] < x->code)
            a = m + 1;
        else
            b = m;
    }
    int32_t w0 = a - lack / 2;
    w0 = w0 < p0 ? p0 : w0 > p1 - lack ? p1 - lack : w0;
    scan(x, dim, w0, w0 + lack);
    scan(x, dim, p0, w0);
    scan(x, dim, w0 + lack, p1);
}

#if NBI_AVX2
// The nearest alone (k = 1, no filter bits) among positions [p0, p1), at least 4 of them: the
// leaf's least d2 is found first without a branch a point (a lane-wise minimum of every four,
// the last four ending at p1), and only the lanes that hold it are offered, when it can enter:
// the scan's branches then no longer depend on where in the leaf the bound falls.
NBI_TARGET_AVX2 NBI_INLINE void nbi_ix_leaf1_avx2(nbiIxQuery *x, int dim, int32_t p0, int32_t p1)
{
    const nbiKnnIndex *ix = x->ix;
    const double *px = (const double *)ix->pts.ptr, *py = px + ix->n, *pz = py + ix->n;
    const __m256d qx = _mm256_set1_pd(x->q[0]), qy = _mm256_set1_pd(x->q[1]);
    const __m256d qz = _mm256_set1_pd(x->q[2]);
    const int32_t b = p1 - 4;
    __m256d least = nbi_ix_d2x4(px, py, pz, qx, qy, qz, dim, b);
    for (int32_t p = p0; p < b; p += 4)
        least = _mm256_min_pd(least, nbi_ix_d2x4(px, py, pz, qx, qy, qz, dim, p));
    __m128d m = _mm_min_pd(_mm256_castpd256_pd128(least), _mm256_extractf128_pd(least, 1));
    m = _mm_min_sd(m, _mm_unpackhi_pd(m, m));
    const double d = _mm_cvtsd_f64(m);
    if (!(d <= x->bound)) return;
    const __m256d want = _mm256_set1_pd(d);
    for (int32_t p = p0; p < p1; p += 4) {
        const int32_t at = p < b ? p : b; // (the last four: the lanes before p masked off)
        int in = _mm256_movemask_pd(
            _mm256_cmp_pd(nbi_ix_d2x4(px, py, pz, qx, qy, qz, dim, at), want, _CMP_EQ_OQ));
        in &= (0xF << (p - at)) & 0xF;
        for (; in != 0; in &= in - 1) nbi_ix_offer(x, at + __builtin_ctz((unsigned)in), d);
    }
}

// nbi_ix_leaf four points at a time (the same d2 in each lane, in the same order), the rest
// through nbi_ix_leaf.
NBI_TARGET_AVX2 NBI_INLINE void nbi_ix_leaf_avx2(nbiIxQuery *x, int dim, int32_t p0, int32_t p1)
{
    const nbiKnnIndex *ix = x->ix;
    const double *px = (const double *)ix->pts.ptr, *py = px + ix->n, *pz = py + ix->n;
    const __m256d qx = _mm256_set1_pd(x->q[0]), qy = _mm256_set1_pd(x->q[1]);
    const __m256d qz = _mm256_set1_pd(x->q[2]);
    int32_t p = p0;
    for (; p + 4 <= p1; p += 4) {
        const __m256d d2 = nbi_ix_d2x4(px, py, pz, qx, qy, qz, dim, p);
        int in = _mm256_movemask_pd(_mm256_cmp_pd(d2, _mm256_set1_pd(x->bound), _CMP_LE_OQ));
        if (in == 0) continue;
        double d[4];
        _mm256_storeu_pd(d, d2);
        for (; in != 0; in &= in - 1) {
            const int j = __builtin_ctz((unsigned)in);
            nbi_ix_offer(x, p + j, d[j]);
        }
    }
    nbi_ix_leaf(x, dim, p, p1);
}
#endif

// The Euclidean search's parts for nbi_ix_walk, one per dimension (so that each walk compiles
// with its dimension known).
NBI_INLINE void nbi_ix_gaps2(void *x, const double *cb, double g[2])
{
    nbi_ix_gaps((const nbiIxQuery *)x, cb, 2, g);
}
NBI_INLINE void nbi_ix_gaps3(void *x, const double *cb, double g[2])
{
    nbi_ix_gaps((const nbiIxQuery *)x, cb, 3, g);
}
NBI_INLINE void nbi_ix_leaf2(void *x, int32_t p0, int32_t p1)
{
    nbi_ix_leaf_out((nbiIxQuery *)x, 2, p0, p1, nbi_ix_leaf);
}
NBI_INLINE void nbi_ix_leaf3(void *x, int32_t p0, int32_t p1)
{
    nbi_ix_leaf_out((nbiIxQuery *)x, 3, p0, p1, nbi_ix_leaf);
}
#if NBI_AVX2
NBI_TARGET_AVX2 NBI_INLINE void nbi_ix_leaf2_avx2(void *x, int32_t p0, int32_t p1)
{
    nbi_ix_leaf_out((nbiIxQuery *)x, 2, p0, p1, nbi_ix_leaf_avx2);
}
NBI_TARGET_AVX2 NBI_INLINE void nbi_ix_leaf3_avx2(void *x, int32_t p0, int32_t p1)
{
    nbi_ix_leaf_out((nbiIxQuery *)x, 3, p0, p1, nbi_ix_leaf_avx2);
}

// The nearest alone (k = 1, no filter bits): every leaf through nbi_ix_leaf1_avx2, whole (no
// window: its least distance is found without a branch a point).
NBI_TARGET_AVX2 NBI_INLINE void nbi_ix_leaf1_any_avx2(nbiIxQuery *x, int dim, int32_t p0,
                                                      int32_t p1)
{
    if (p1 - p0 >= 4)
        nbi_ix_leaf1_avx2(x, dim, p0, p1);
    else
        nbi_ix_leaf(x, dim, p0, p1);
}
NBI_TARGET_AVX2 NBI_INLINE void nbi_ix_leaf2_1_avx2(void *x, int32_t p0, int32_t p1)
{
    nbi_ix_leaf1_any_avx2((nbiIxQuery *)x, 2, p0, p1);
}
NBI_TARGET_AVX2 NBI_INLINE void nbi_ix_leaf3_1_avx2(void *x, int32_t p0, int32_t p1)
{
    nbi_ix_leaf1_any_avx2((nbiIxQuery *)x, 3, p0, p1);
}

// The walks with the AVX2 scans (nbi_knn_index_query picks them where the CPU has AVX2).
NBI_TARGET_AVX2 static void nbi_ix_walk_avx2(const nbiKnnIndex *ix, nbFilter f, nbiIxQuery *x)
{
    if (x->heap.k == 1 && !ix->filtered) {
        if (ix->dim == 2)
            nbi_ix_walk(ix, f, x, &x->bound, nbi_ix_gaps2, nbi_ix_leaf2_1_avx2);
        else
            nbi_ix_walk(ix, f, x, &x->bound, nbi_ix_gaps3, nbi_ix_leaf3_1_avx2);
        return;
    }
    if (ix->dim == 2)
        nbi_ix_walk(ix, f, x, &x->bound, nbi_ix_gaps2, nbi_ix_leaf2_avx2);
    else
        nbi_ix_walk(ix, f, x, &x->bound, nbi_ix_gaps3, nbi_ix_leaf3_avx2);
}
#endif

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
    x.bound = nbi_best_bound(&x.heap, x.lim2);
    x.code = 0;
    x.coded = false;
#if NBI_AVX2
    if (nbi_use_avx2())
        nbi_ix_walk_avx2(ix, f, &x);
    else
#endif
        if (ix->dim == 2)
        nbi_ix_walk(ix, f, &x, &x.bound, nbi_ix_gaps2, nbi_ix_leaf2);
    else
        nbi_ix_walk(ix, f, &x, &x.bound, nbi_ix_gaps3, nbi_ix_leaf3);
    nbi_best_sort(&x.heap);
    return x.heap.size;
}

// ---- radius ----
// A ball walks the tree from the root: a child whose box's squared gap to the centre (nbi_ix_gaps'
// lower bound: never above the d2 of any point in it) exceeds r2 is skipped unread; a child whose
// box's farthest corner is within r2 is reported whole, without a test a point; the rest are
// descended, and leaves the ball cuts are scanned point by point. The corner is exact: per axis,
// the corner's difference max(q - lo, hi - q) is computed with the same rounded subtraction a
// point's is, and every true |q - p| of a point in the box lies between |q - lo| and |q - hi|, so,
// rounding being monotone, the point's rounded |difference| is at most the corner's; squared and
// summed in nbi_dist2's order, the point's d2 is then at most the corner's (ties at r2 included).

typedef struct nbiIxBall {
    const nbiKnnIndex *ix;
    double q[3], r2;
    nbFilter f;
    int32_t *out;      // NULL: count only
    int32_t cap, size; // the hits wanted at most (more: stop), the entries out holds (>= cap)
    int32_t found;
} nbiIxBall;

// The squared gaps (g) and farthest corners' d2 (far) from the centre to a node's two children's
// boxes (the node's slot of `box`), left then right.
NBI_INLINE void nbi_ix_ball_gaps(const nbiIxBall *x, const double *cb, int dim, double g[2],
                                 double far[2])
{
#if defined(__SSE2__)
    const __m128d zero = _mm_setzero_pd();
    __m128d g2 = zero, f2 = zero;
    for (int a = 0; a < dim; a++) {
        const __m128d q = _mm_set1_pd(x->q[a]);
        const __m128d lo = _mm_loadu_pd(cb + 4 * a), hi = _mm_loadu_pd(cb + 4 * a + 2);
        const __m128d gap = _mm_max_pd(_mm_max_pd(_mm_sub_pd(lo, q), _mm_sub_pd(q, hi)), zero);
        const __m128d fd = _mm_max_pd(_mm_sub_pd(q, lo), _mm_sub_pd(hi, q));
        g2 = a == 0 ? _mm_mul_pd(gap, gap) : _mm_add_pd(g2, _mm_mul_pd(gap, gap));
        f2 = a == 0 ? _mm_mul_pd(fd, fd) : _mm_add_pd(f2, _mm_mul_pd(fd, fd));
    }
    _mm_storeu_pd(g, g2);
    _mm_storeu_pd(far, f2);
#else
    for (int side = 0; side < 2; side++) {
        double s = 0.0, t = 0.0;
        for (int a = 0; a < dim; a++) {
            const double lo = cb[4 * a + side], hi = cb[4 * a + 2 + side];
            const double below = lo - x->q[a], above = x->q[a] - hi;
            double gap = below > above ? below : above;
            gap = gap > 0.0 ? gap : 0.0;
            const double nl = x->q[a] - lo, nh = hi - x->q[a];
            const double fd = nl > nh ? nl : nh;
            s = a == 0 ? gap * gap : s + gap * gap;
            t = a == 0 ? fd * fd : t + fd * fd;
        }
        g[side] = s;
        far[side] = t;
    }
#endif
}

// Whether position p passes the filter (always, on an index without filter bits).
NBI_INLINE bool nbi_ix_passes(const nbiIxBall *x, int32_t p)
{
    if (!x->ix->filtered) return true;
    const uint32_t *bits = (const uint32_t *)x->ix->bits.ptr + 2 * (size_t)p;
    return nbi_filter_match(x->f.category, x->f.mask, bits[0], bits[1]);
}

// Reports positions [p0, p1), every one within the ball: their view positions stored while there
// is room. False once the hits overflow the room (the walk stops).
static bool nbi_ix_ball_all(nbiIxBall *x, int32_t p0, int32_t p1)
{
    const int32_t *pos = (const int32_t *)x->ix->pos.ptr;
    if (x->ix->filtered) {
        for (int32_t p = p0; p < p1; p++) {
            if (!nbi_ix_passes(x, p)) continue;
            if (x->out != NULL && x->found < x->size) x->out[x->found] = pos[p];
            x->found++;
        }
    } else {
        const int32_t m = p1 - p0;
        if (x->out != NULL && m <= x->size - x->found)
            memcpy(x->out + x->found, pos + p0, (size_t)m * sizeof *pos);
        x->found += m;
    }
    return x->out == NULL || x->found <= x->cap;
}

// Stores position p as hit number x->found while there is room, and counts it.
NBI_INLINE void nbi_ix_ball_put(nbiIxBall *x, int32_t p)
{
    if (x->out != NULL && x->found < x->size)
        x->out[x->found] = ((const int32_t *)x->ix->pos.ptr)[p];
    x->found++;
}

#if defined(__SSE2__) || NBI_AVX2
// The hits among positions p, p + 1, ... whose bits are set in `in` (a lane mask of the distance
// test), the filter tested here.
NBI_INLINE void nbi_ix_ball_lanes(nbiIxBall *x, int32_t p, unsigned in)
{
    for (; in != 0; in &= in - 1) {
        const int32_t q = p + __builtin_ctz(in);
        if (nbi_ix_passes(x, q)) nbi_ix_ball_put(x, q);
    }
}
#endif

// Scans positions [p0, p1): d2 as nbi_dist2 computes it (q - p per axis, squared, summed in axis
// order), two at a time with SSE2 (the same operations in each lane). Hits are few in a cap (a
// branch on a pair's mask is mostly not taken). False once the hits overflow the room.
NBI_INLINE bool nbi_ix_ball_leaf(nbiIxBall *x, int dim, int32_t p0, int32_t p1)
{
    const nbiKnnIndex *ix = x->ix;
    const double *px = (const double *)ix->pts.ptr, *py = px + ix->n, *pz = py + ix->n;
    int32_t p = p0;
#if defined(__SSE2__)
    const __m128d qx = _mm_set1_pd(x->q[0]), qy = _mm_set1_pd(x->q[1]);
    const __m128d qz = _mm_set1_pd(x->q[2]), r2 = _mm_set1_pd(x->r2);
    for (; p + 2 <= p1; p += 2) {
        const __m128d d2 = nbi_ix_d2x2(px, py, pz, qx, qy, qz, dim, p);
        const int in = _mm_movemask_pd(_mm_cmple_pd(d2, r2));
        if (in != 0) nbi_ix_ball_lanes(x, p, (unsigned)in);
    }
#endif
    for (; p < p1; p++) {
        const double dx = x->q[0] - px[p], dy = x->q[1] - py[p];
        double d2 = dx * dx + dy * dy;
        if (dim == 3) {
            const double dz = x->q[2] - pz[p];
            d2 = d2 + dz * dz;
        }
        if (d2 <= x->r2 && nbi_ix_passes(x, p)) nbi_ix_ball_put(x, p);
    }
    return x->out == NULL || x->found <= x->cap;
}

#if NBI_AVX2
// The shuffles that move the int32 lanes set in a 4-bit mask to the front, in order.
static const uint8_t nbi_ix_pack[16][16] = {
#define NBI_L(i) 4 * (i), 4 * (i) + 1, 4 * (i) + 2, 4 * (i) + 3
#define NBI_Z 0x80, 0x80, 0x80, 0x80
    {NBI_Z, NBI_Z, NBI_Z, NBI_Z},          {NBI_L(0), NBI_Z, NBI_Z, NBI_Z},
    {NBI_L(1), NBI_Z, NBI_Z, NBI_Z},       {NBI_L(0), NBI_L(1), NBI_Z, NBI_Z},
    {NBI_L(2), NBI_Z, NBI_Z, NBI_Z},       {NBI_L(0), NBI_L(2), NBI_Z, NBI_Z},
    {NBI_L(1), NBI_L(2), NBI_Z, NBI_Z},    {NBI_L(0), NBI_L(1), NBI_L(2), NBI_Z},
    {NBI_L(3), NBI_Z, NBI_Z, NBI_Z},       {NBI_L(0), NBI_L(3), NBI_Z, NBI_Z},
    {NBI_L(1), NBI_L(3), NBI_Z, NBI_Z},    {NBI_L(0), NBI_L(1), NBI_L(3), NBI_Z},
    {NBI_L(2), NBI_L(3), NBI_Z, NBI_Z},    {NBI_L(0), NBI_L(2), NBI_L(3), NBI_Z},
    {NBI_L(1), NBI_L(2), NBI_L(3), NBI_Z}, {NBI_L(0), NBI_L(1), NBI_L(2), NBI_L(3)}};
#undef NBI_L
#undef NBI_Z
static const uint8_t nbi_ix_pop4[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};

// nbi_ix_ball_leaf four points at a time (the same d2 in each lane, in the same order). Where
// out has room for the whole leaf and four more (no filter bits, at least 4 points), without a
// branch a point: each four's hits are moved to the front of their lanes' positions (a shuffle)
// and stored at once, and the count moves on by as many (a cap holds few of a leaf's points, at
// no predictable place: a branch on each four's mask went either way); the last four end at p1,
// the lanes already scanned masked off. Else through nbi_ix_ball_leaf.
NBI_TARGET_AVX2 NBI_INLINE bool nbi_ix_ball_leaf_avx2(nbiIxBall *x, int dim, int32_t p0, int32_t p1)
{
    const nbiKnnIndex *ix = x->ix;
    if (ix->filtered || x->out == NULL || p1 - p0 < 4 || x->found > x->size - (p1 - p0) - 4)
        return nbi_ix_ball_leaf(x, dim, p0, p1);
    const double *px = (const double *)ix->pts.ptr, *py = px + ix->n, *pz = py + ix->n;
    const int32_t *pos = (const int32_t *)ix->pos.ptr;
    const __m256d qx = _mm256_set1_pd(x->q[0]), qy = _mm256_set1_pd(x->q[1]);
    const __m256d qz = _mm256_set1_pd(x->q[2]), r2 = _mm256_set1_pd(x->r2);
    int32_t *out = x->out, found = x->found;
    const int32_t b = p1 - 4;
    for (int32_t p = p0; p < p1; p += 4) {
        const int32_t at = p < b ? p : b;
        const __m256d d2 = nbi_ix_d2x4(px, py, pz, qx, qy, qz, dim, at);
        const unsigned in = (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(d2, r2, _CMP_LE_OQ)) &
                            (0xFu << (p - at)) & 0xFu;
        const __m128i lanes = _mm_loadu_si128((const __m128i *)(const void *)(pos + at));
        const __m128i pick = _mm_loadu_si128((const __m128i *)(const void *)nbi_ix_pack[in]);
        _mm_storeu_si128((__m128i *)(void *)(out + found), _mm_shuffle_epi8(lanes, pick));
        found += nbi_ix_pop4[in];
    }
    x->found = found;
    return found <= x->cap;
}
#endif

typedef bool nbiIxBallLeafFn(nbiIxBall *x, int dim, int32_t p0, int32_t p1);

// Leaves the ball cuts, gathered before they are scanned (nbi_ix_ball_walk).
enum { NBI_IX_CUT_BATCH = 32 };

// Scans the leaves cut[0, m): false once the hits overflow the room (the walk stops).
NBI_INLINE bool nbi_ix_ball_cut(nbiIxBall *x, int dim, nbiIxBallLeafFn *leaf, const int32_t *cut,
                                int m)
{
    const nbiKnnNode *node = (const nbiKnnNode *)x->ix->node.ptr;
    for (int i = 0; i < m; i++)
        if (!leaf(x, dim, node[cut[i]].first, node[cut[i]].end)) return false;
    return true;
}

// The walk below the root (an inner node), depth first; `leaf` scans a leaf the ball cuts
// (inlined as a constant, so each walk compiles to its own loop). A child beyond the ball is
// dropped, one wholly within it reported whole, and the rest are pushed: an inner node on the
// stack, a leaf on a list scanned a batch at a time (the scans' loops then run back to back).
// The tests are branches: taken as data (the stack's height moved by a comparison's result)
// they chain each node's loads to the last node's gaps, and far balls on 2D blobs took 1.4x the
// time, though callgrind counted 3.9 mispredicted branches a ball against 9.4 as branches.
NBI_INLINE void nbi_ix_ball_walk(nbiIxBall *x, int dim, nbiIxBallLeafFn *leaf)
{
    const nbiKnnIndex *ix = x->ix;
    const nbiKnnNode *node = (const nbiKnnNode *)ix->node.ptr;
    const double *box = (const double *)ix->box.ptr;
    const size_t bw = 4 * (size_t)dim;
    int32_t st[NBI_IX_DEPTH + 4]; // (at most one waiting node a level, and the two just pushed)
    int32_t cut[NBI_IX_CUT_BATCH + 2];
    int sp = 0, nc = 0;
    st[sp++] = 0;
    while (sp > 0) {
        const int32_t t = st[--sp];
        const int32_t left = node[t].left;
        double g[2], far[2];
        nbi_ix_ball_gaps(x, box + (size_t)t * bw, dim, g, far);
        for (int side = 0; side < 2; side++) {
            const int32_t c = left + side;
            bool in = !(g[side] > x->r2);
            if (ix->filtered) in &= !nbi_ix_bits_out(ix, x->f, t, side);
            if (in & (far[side] <= x->r2)) {
                if (!nbi_ix_ball_all(x, node[c].first, node[c].end)) return;
                continue;
            }
            if (!in) continue;
            if (node[c].left == 0)
                cut[nc++] = c;
            else
                st[sp++] = c;
        }
        if (nc >= NBI_IX_CUT_BATCH) {
            if (!nbi_ix_ball_cut(x, dim, leaf, cut, nc)) return;
            nc = 0;
        }
    }
    (void)nbi_ix_ball_cut(x, dim, leaf, cut, nc);
}

#if NBI_AVX2
NBI_TARGET_AVX2 static void nbi_ix_ball_walk_avx2(nbiIxBall *x)
{
    if (x->ix->dim == 2)
        nbi_ix_ball_walk(x, 2, nbi_ix_ball_leaf_avx2);
    else
        nbi_ix_ball_walk(x, 3, nbi_ix_ball_leaf_avx2);
}
#endif

int32_t nbi_knn_index_ball(const nbiKnnIndex *ix, const double *center, double r2, nbFilter f,
                           int32_t *out, int32_t cap, int32_t size)
{
    nbiIxBall x;
    x.ix = ix;
    x.q[0] = center[0];
    x.q[1] = center[1];
    x.q[2] = ix->dim == 3 ? center[2] : 0.0;
    x.r2 = r2;
    x.f = f;
    x.out = out;
    x.cap = cap;
    x.size = size;
    x.found = 0;
    if (ix->n == 0) return 0;
    // (The root's box is not tested: its children's are, and a ball missing the data, or taking
    // it whole, costs one node more.)
    const nbiKnnNode root = ((const nbiKnnNode *)ix->node.ptr)[0];
    if (root.left == 0) (void)nbi_ix_ball_leaf(&x, ix->dim, 0, ix->n);
#if NBI_AVX2
    else if (nbi_use_avx2())
        nbi_ix_ball_walk_avx2(&x);
#endif
    else if (ix->dim == 2)
        nbi_ix_ball_walk(&x, 2, nbi_ix_ball_leaf);
    else
        nbi_ix_ball_walk(&x, 3, nbi_ix_ball_leaf);
    return x.found;
}
