// SPDX-License-Identifier: MIT
// The AVX512 copies of the unfiltered pair kernels (pair_kernels.h: 8 lanes a step over the
// gathered candidates; a crowded cell takes the two-lane kernel's path), plain and periodic,
// compiled with a target attribute and chosen at run time (simd.h).
#include "pair_kernels.h"

#if defined(NBI_AVX512)
#define NBI_KERNEL_WIDE(name, dim, cross, wrap)                                                    \
    NBI_TARGET_AVX512 void name(const nbiSpanList *l)                                              \
    {                                                                                              \
        nbi_cell_pairs_dim(l, dim, false, cross, wrap, 8);                                         \
    }
NBI_KERNEL_WIDE(nbi_pairs_2_avx512, 2, false, false)
NBI_KERNEL_WIDE(nbi_pairs_2x_avx512, 2, true, false)
NBI_KERNEL_WIDE(nbi_pairs_3_avx512, 3, false, false)
NBI_KERNEL_WIDE(nbi_pairs_3x_avx512, 3, true, false)
NBI_KERNEL_WIDE(nbi_pairs_2w_avx512, 2, false, true)
NBI_KERNEL_WIDE(nbi_pairs_2xw_avx512, 2, true, true)
NBI_KERNEL_WIDE(nbi_pairs_3w_avx512, 3, false, true)
NBI_KERNEL_WIDE(nbi_pairs_3xw_avx512, 3, true, true)
#else
typedef int nbi_no_avx512_kernels; // ISO C wants something in a translation unit
#endif
