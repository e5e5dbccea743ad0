// SPDX-License-Identifier: MIT
// Counts every malloc, calloc and realloc the process makes, by interposing those symbols in
// the benchmark executable and forwarding to glibc's __libc_* entry points. A runner reads the
// counter before and after its timed frames to report allocations per frame for peers that
// have no allocator hook (the naive grid, nanoflann). glibc only.
#ifndef NB_BENCH_ALLOC_COUNT_H
#define NB_BENCH_ALLOC_COUNT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Number of malloc/calloc/realloc calls so far (realloc counts as one allocation).
uint64_t nbb_alloc_calls(void);

#ifdef __cplusplus
}
#endif

#endif
