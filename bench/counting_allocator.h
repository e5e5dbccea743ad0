// SPDX-License-Identifier: MIT
// The allocator hook nearby's benchmarks give their structures: it counts allocations (so a
// benchmark can report allocations per frame) and tracks the bytes held and their peak.
#ifndef NEARBY_BENCH_COUNTING_ALLOCATOR_H
#define NEARBY_BENCH_COUNTING_ALLOCATOR_H

#include <nearby/nearby.h>

#include <stdlib.h>

typedef struct CountingAllocator {
    uint64_t allocs;
    uint64_t frees;
    size_t live;
    size_t peak;
} CountingAllocator;

static void *counting_alloc(size_t size, size_t align, void *user)
{
    CountingAllocator *c = (CountingAllocator *)user;
    c->allocs++;
    if (align < sizeof(void *)) align = sizeof(void *);
    void *p = NULL;
    if (posix_memalign(&p, align, size ? size : 1) != 0) return NULL;
    c->live += size;
    if (c->live > c->peak) c->peak = c->live;
    return p;
}

static void counting_free(void *ptr, size_t size, void *user)
{
    CountingAllocator *c = (CountingAllocator *)user;
    if (ptr == NULL) return;
    c->frees++;
    c->live -= size;
    free(ptr);
}

#endif
