// SPDX-License-Identifier: MIT
// See alloc_count.h. Defining malloc in the executable interposes it for every library the
// process loads (libstdc++'s operator new included); the counter is a plain global because
// the benchmarks are single-threaded.
#include "alloc_count.h"

#include <stddef.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void __libc_free(void *ptr);

void *malloc(size_t size);
void *calloc(size_t count, size_t size);
void *realloc(void *ptr, size_t size);
void free(void *ptr);

static uint64_t nbb_calls;

uint64_t nbb_alloc_calls(void)
{
    return nbb_calls;
}

void *malloc(size_t size)
{
    nbb_calls++;
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size)
{
    nbb_calls++;
    return __libc_calloc(count, size);
}

void *realloc(void *ptr, size_t size)
{
    nbb_calls++;
    return __libc_realloc(ptr, size);
}

void free(void *ptr)
{
    __libc_free(ptr);
}
