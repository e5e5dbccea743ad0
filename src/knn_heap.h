// SPDX-License-Identifier: MIT
// The one kNN heap: the k best candidates so far as a max-heap of nbNeighbor in the caller's
// buffer, worst on top, and one tie rule: nearer first, and at equal squared distance the lower
// id (the grid's point index; a stored-item structure's handle slot). Every kNN search keeps its
// answers here and sorts them at the end; the grid's kNN keeps them as a sorted list instead
// when k is small (nbi_best_*, below). Never installed.
#ifndef NEARBY_KNN_HEAP_H
#define NEARBY_KNN_HEAP_H

#include "nb_internal.h"

typedef struct nbiKnnHeap {
    nbNeighbor *e; // k entries (the caller's output buffer)
    int32_t size, k;
} nbiKnnHeap;

// a is worse than b: farther, or as far with a higher id.
NBI_INLINE bool nbi_worse(const nbNeighbor *a, const nbNeighbor *b)
{
    return a->dist2 > b->dist2 || (a->dist2 == b->dist2 && a->index > b->index);
}

// Puts x at i and moves it down to its place: the worse child moves up into the hole until x is
// worse than both children.
static inline void nbi_sift_down(nbNeighbor *h, int32_t size, int32_t i, nbNeighbor x)
{
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= size) break;
        if (c + 1 < size && nbi_worse(&h[c + 1], &h[c])) c++;
        if (!nbi_worse(&h[c], &x)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

// Keeps cand if it is among the k best so far.
NBI_INLINE void nbi_heap_offer(nbiKnnHeap *h, nbNeighbor cand)
{
    if (h->size < h->k) { // sift up
        int32_t i = h->size++;
        while (i > 0 && nbi_worse(&cand, &h->e[(i - 1) / 2])) {
            h->e[i] = h->e[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        h->e[i] = cand;
    } else if (nbi_worse(&h->e[0], &cand)) {
        nbi_sift_down(h->e, h->size, 0, cand);
    }
}

// The squared distance a candidate must not exceed to enter: the worst kept once full (ties are
// then decided by id), else `limit2`.
NBI_INLINE double nbi_heap_bound(const nbiKnnHeap *h, double limit2)
{
    return h->size == h->k && h->k > 0 ? h->e[0].dist2 : limit2;
}

// Sorts the kept entries ascending by (dist2, id), in place (heap sort: the worst to the end).
static inline void nbi_heap_sort(nbiKnnHeap *h)
{
    for (int32_t end = h->size - 1; end > 0; end--) {
        const nbNeighbor last = h->e[end];
        h->e[end] = h->e[0];
        nbi_sift_down(h->e, end, 0, last);
    }
}

// The same k best kept sorted instead (nearest first, the tie rule above), for k up to
// NBI_LIST_MAX: an insertion moves the worse entries up by one, which for small k costs less
// than the heap's sifts and its final sort, whose branches no predictor learns (measured on
// the grid's kNN: k = 8 and 32 faster, the answers the same). nbi_best_* pick the form by k.
enum { NBI_LIST_MAX = 32 };

NBI_INLINE void nbi_list_offer(nbiKnnHeap *h, nbNeighbor cand)
{
    int32_t i = h->size;
    if (i < h->k)
        h->size++;
    else if (!nbi_worse(&h->e[--i], &cand))
        return;
    while (i > 0 && nbi_worse(&h->e[i - 1], &cand)) {
        h->e[i] = h->e[i - 1];
        i--;
    }
    h->e[i] = cand;
}

// Keeps cand if it is among the k best so far: a sorted list for small k, else the heap.
NBI_INLINE void nbi_best_offer(nbiKnnHeap *h, nbNeighbor cand)
{
    if (h->k <= NBI_LIST_MAX)
        nbi_list_offer(h, cand);
    else
        nbi_heap_offer(h, cand);
}

// nbi_heap_bound for either form: the worst kept once full, else `limit2`.
NBI_INLINE double nbi_best_bound(const nbiKnnHeap *h, double limit2)
{
    if (h->size < h->k || h->k == 0) return limit2;
    return h->e[h->k <= NBI_LIST_MAX ? h->k - 1 : 0].dist2;
}

// Sorts the kept entries ascending (a list already is).
static inline void nbi_best_sort(nbiKnnHeap *h)
{
    if (h->k > NBI_LIST_MAX) nbi_heap_sort(h);
}

#endif
