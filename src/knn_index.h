// SPDX-License-Identifier: MIT
// The kNN index of a cell-sorted view (the grid's): its points in fine Z order, cut into leaves of a few consecutive points
// with tight boxes, under an implicit binary tree of boxes (knn_index.c). Built lazily by the
// first kNN query after a build, from whichever thread runs it, and published with an atomic
// state, so that queries on a const grid stay safe from many threads. Never installed.
#ifndef NEARBY_KNN_INDEX_H
#define NEARBY_KNN_INDEX_H

#include "view.h"

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
#define NBI_KNN_INDEX 1
#else
#define NBI_KNN_INDEX 0 // no atomics: kNN walks the cells
#endif

// Points a leaf holds (the last leaf fewer).
enum { NBI_KNN_LEAF_PTS = 8 };

// Invariants (of a ready index):
// - n points, pts / idx / bits (cat and mask, when filtered) in index order: a permutation of
//   the view's positions sorted by their Z-order code (ties: view order), each code in `code`.
// - leaf j holds positions [j B, min(n, (j + 1) B)) (B = NBI_KNN_LEAF_PTS) and is tree node
//   top + j; `top` is the least power of two >= the leaves; node t's children are 2t and 2t + 1;
//   node 1 is the root. box[t] (lo[dim], hi[dim]) bounds every point under t, exactly (double
//   min / max); a node with no point has lo = +inf, hi = -inf. Filtered: nbits[t] holds the OR
//   of the categories and the OR of the masks under t (0 and 0 without a point).
typedef struct nbiKnnIndex {
    int32_t n, dim, nleaves, top;
    bool filtered;
    double origin[3]; // the points' box's low corner
    double scale;     // code units a unit of distance (one for every axis)
    uint64_t max_cell; // the largest per-axis code value
    nbiBuf pts;        // double, n * dim
    nbiBuf idx;        // int32_t, n: the caller's index of each point
    nbiBuf bits;       // uint32_t, 2n (filtered): category, mask
    nbiBuf box;        // double, 2 top * 2 dim
    nbiBuf nbits;      // uint32_t, 2 top * 2 (filtered)
    nbiBuf code;       // uint64_t, 2n: the sorted keys, then the sort's scratch
    nbiBuf hist;       // int32_t: the radix sort's counts
} nbiKnnIndex;

// The index and its state: stale (the points changed since it was built), being built by one
// query, ready, or failed (allocation; kNN walks the cells until the next build).
enum { NBI_KNN_STALE, NBI_KNN_BUILDING, NBI_KNN_READY, NBI_KNN_FAILED };
typedef struct nbiKnnLazy {
#if NBI_KNN_INDEX
    atomic_int state;
#endif
    nbiKnnIndex ix;
} nbiKnnLazy;

// The index of the view's points, built on first use: NULL while another thread builds it, or
// when it cannot be had (the caller then walks the cells: the same answers). Thread-safe
// against other calls of it on the same z; the view must not change meanwhile.
const nbiKnnIndex *nbi_knn_index_get(nbiKnnLazy *z, const nbiView *v, const nbAllocator *a);
// The points changed: the next kNN builds the index anew (storage kept). Not thread-safe.
void nbi_knn_index_stale(nbiKnnLazy *z);
// Frees the storage.
void nbi_knn_index_free(nbiKnnLazy *z, const nbAllocator *a);
// Bytes held.
size_t nbi_knn_index_bytes(const nbiKnnLazy *z);

// The k nearest as nbi_walk_knn finds them (arguments checked, k >= 1, the filter open or the
// index filtered), into the heap `out` of k entries, sorted.
int32_t nbi_knn_index_query(const nbiKnnIndex *ix, const double *point, nbFilter f,
                            double max_distance, nbNeighbor *out, int32_t k);

// nbi_walk_knn / nbi_visit_knn (query.c) with the index of z (NULL: none), built on first use
// through alloc: the same answers, found through the index when it can be had.
nbStatus nbi_walk_knn_indexed(const nbiView *v, nbiKnnLazy *z, const nbAllocator *alloc,
                              const double *point, nbFilter f, double max_distance,
                              nbNeighbor *out, int32_t k, int32_t *found);
nbStatus nbi_visit_knn_indexed(const nbiView *v, nbiKnnLazy *z, const double *point, nbFilter f,
                               double max_distance, int32_t k, const nbAllocator *alloc,
                               nbNeighborFn *visit, void *user);

#endif
