// SPDX-License-Identifier: MIT
// Status names, version, and allocation through the per-structure hooks.
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE // posix_memalign and madvise under -std=c11
#endif
#include "nb_internal.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <stdalign.h>
#include <stdint.h>
#include <string.h>

const char *nb_status_str(nbStatus status)
{
    switch (status) {
    case NB_OK: return "NB_OK";
    case NB_ERR_NULL_ARG: return "NB_ERR_NULL_ARG";
    case NB_ERR_NOT_FINITE: return "NB_ERR_NOT_FINITE";
    case NB_ERR_OUT_OF_RANGE: return "NB_ERR_OUT_OF_RANGE";
    case NB_ERR_BAD_HANDLE: return "NB_ERR_BAD_HANDLE";
    case NB_ERR_OUT_OF_MEMORY: return "NB_ERR_OUT_OF_MEMORY";
    case NB_ERR_BUFFER_TOO_SMALL: return "NB_ERR_BUFFER_TOO_SMALL";
    case NB_ERR_INTERNAL: return "NB_ERR_INTERNAL";
    case NB_STATUS_COUNT: break;
    }
    return "NB_ERR_UNKNOWN";
}

const char *nb_status_message(nbStatus status)
{
    switch (status) {
    case NB_OK: return "success";
    case NB_ERR_NULL_ARG: return "a required pointer was NULL";
    case NB_ERR_NOT_FINITE: return "NaN or infinity in a coordinate, radius or size";
    case NB_ERR_OUT_OF_RANGE: return "a value is finite but outside the accepted range";
    case NB_ERR_BAD_HANDLE: return "the handle is null, stale, or from another structure";
    case NB_ERR_OUT_OF_MEMORY: return "out of memory; the structure is unchanged";
    case NB_ERR_BUFFER_TOO_SMALL: return "output truncated to capacity; the count is complete";
    case NB_ERR_INTERNAL: return "internal error: a bug in nearby, please report it";
    case NB_STATUS_COUNT: break;
    }
    return "unknown status";
}

uint32_t nb_version(void)
{
    return (uint32_t)NB_VERSION;
}

// Big buffers (a million points' coordinates, indices, cells) on Linux are aligned to 2 MiB and
// marked for transparent huge pages where the system grants them on request (the common
// "madvise" setting): a cold build then takes one page fault per 2 MiB instead of 512, which
// is most of a first frame's kernel time. Elsewhere, and for small buffers, plain malloc.
enum { NBI_HUGE = 2 << 20, NBI_HUGE_MIN = 4 << 20 };

static void *nbi_default_alloc(size_t size, size_t align, void *user)
{
    (void)user;
    (void)align; // malloc's alignment covers max_align_t, all nearby asks for
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= NBI_HUGE_MIN) {
        void *p = NULL;
        if (posix_memalign(&p, NBI_HUGE, size) != 0) return NULL;
        (void)madvise(p, size - size % NBI_HUGE, MADV_HUGEPAGE); // advice: failure is harmless
        return p;
    }
#endif
    return malloc(size);
}

static void nbi_default_free(void *ptr, size_t size, void *user)
{
    (void)size;
    (void)user;
    free(ptr);
}

bool nbi_allocator(const nbAllocator *user, nbAllocator *out)
{
    if (user == NULL) {
        nbAllocator a = {nbi_default_alloc, nbi_default_free, NULL};
        *out = a;
        return true;
    }
    // A half-set allocator is a mistake, not a request for malloc: memory from one hook handed
    // to the other side's malloc/free would corrupt the heap.
    if (user->alloc == NULL || user->free == NULL) return false;
    *out = *user;
    return true;
}

void *nbi_alloc(const nbAllocator *a, size_t count, size_t elem)
{
    if (count == 0) return NULL;
    if (count > SIZE_MAX / elem) return NULL;
    return a->alloc(count * elem, alignof(max_align_t), a->user);
}

void nbi_free(const nbAllocator *a, void *ptr, size_t count, size_t elem)
{
    if (ptr != NULL) a->free(ptr, count * elem, a->user);
}

size_t nbi_buf_grown_cap(const nbiBuf *cur, size_t need)
{
    if (need <= cur->cap) return cur->cap;
    size_t cap = cur->cap + cur->cap / 2; // grow by 1.5x so repeated growth stays O(N)
    if (cap < need) cap = need;
    return cap < 16 ? 16 : cap;
}

bool nbi_buf_prepare(const nbAllocator *a, const nbiBuf *cur, nbiBuf *next, size_t need,
                     size_t elem)
{
    *next = *cur;
    if (need <= cur->cap) return true;
    size_t cap = nbi_buf_grown_cap(cur, need);
    void *p = nbi_alloc(a, cap, elem);
    if (p == NULL && cap > need) { // the geometric extra may be what does not fit
        cap = need;
        p = nbi_alloc(a, cap, elem);
    }
    if (p == NULL) return false;
    next->ptr = p;
    next->cap = cap;
    return true;
}

void nbi_buf_commit(const nbAllocator *a, nbiBuf *cur, const nbiBuf *next, size_t elem)
{
    if (next->ptr != cur->ptr) nbi_free(a, cur->ptr, cur->cap, elem);
    *cur = *next;
}

void nbi_buf_abandon(const nbAllocator *a, const nbiBuf *cur, const nbiBuf *next, size_t elem)
{
    if (next->ptr != cur->ptr) nbi_free(a, next->ptr, next->cap, elem);
}

nbStatus nbi_visit_hit_knn(const nbAllocator *alloc, int32_t want, nbiHitKnnFn *knn,
                           const void *ctx, nbHitNeighborFn *visit, void *user)
{
    nbHitNeighbor stack[NB_KNN_STACK];
    nbHitNeighbor *heap = stack;
    if (want > NB_KNN_STACK) {
        heap = (nbHitNeighbor *)nbi_alloc(alloc, (size_t)want, sizeof *heap);
        if (heap == NULL) return NB_ERR_OUT_OF_MEMORY;
    }
    int32_t found = 0;
    const nbStatus st = knn(ctx, heap, want, &found);
    for (int32_t i = 0; st == NB_OK && i < found; i++)
        if (!visit(heap[i].hit, heap[i].dist2, user)) break;
    if (heap != stack) nbi_free(alloc, heap, (size_t)want, sizeof *heap);
    return st;
}

bool nbi_bufs_prepare(const nbAllocator *a, nbiBuf *const *cur, nbiBuf *next, const size_t *need,
                      const size_t *elem, int count)
{
    for (int b = 0; b < count; b++) {
        if (!nbi_buf_prepare(a, cur[b], &next[b], need[b], elem[b])) {
            nbi_bufs_abandon(a, cur, next, elem, b);
            return false;
        }
    }
    return true;
}

void nbi_bufs_commit(const nbAllocator *a, nbiBuf *const *cur, const nbiBuf *next,
                     const size_t *elem, int count, bool keep)
{
    for (int b = 0; b < count; b++) {
        if (keep && next[b].ptr != cur[b]->ptr && cur[b]->ptr != NULL)
            memcpy(next[b].ptr, cur[b]->ptr, cur[b]->cap * elem[b]);
        nbi_buf_commit(a, cur[b], &next[b], elem[b]);
    }
}

void nbi_bufs_abandon(const nbAllocator *a, nbiBuf *const *cur, const nbiBuf *next,
                      const size_t *elem, int count)
{
    for (int b = 0; b < count; b++) nbi_buf_abandon(a, cur[b], &next[b], elem[b]);
}
