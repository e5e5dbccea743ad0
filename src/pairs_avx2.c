// SPDX-License-Identifier: MIT
// The AVX2 copies of the unfiltered pair kernels (pair_kernels.h: 4 lanes a step over the
// gathered candidates; a crowded cell takes the two-lane kernel's path), plain and periodic,
// compiled with a target attribute and chosen at run time (simd.h).
#include "pair_kernels.h"

#if defined(NBI_AVX2)
#define NBI_KERNEL_WIDE(name, dim, cross, wrap)                                                    \
    NBI_TARGET_AVX2 void name(const nbiSpanList *l)                                                \
    {                                                                                              \
        nbi_cell_pairs_dim(l, dim, false, cross, wrap, 4);                                         \
    }
NBI_KERNEL_WIDE(nbi_pairs_2_avx2, 2, false, false)
NBI_KERNEL_WIDE(nbi_pairs_2x_avx2, 2, true, false)
NBI_KERNEL_WIDE(nbi_pairs_3_avx2, 3, false, false)
NBI_KERNEL_WIDE(nbi_pairs_3x_avx2, 3, true, false)
NBI_KERNEL_WIDE(nbi_pairs_2w_avx2, 2, false, true)
NBI_KERNEL_WIDE(nbi_pairs_2xw_avx2, 2, true, true)
NBI_KERNEL_WIDE(nbi_pairs_3w_avx2, 3, false, true)
NBI_KERNEL_WIDE(nbi_pairs_3xw_avx2, 3, true, true)
#else
typedef int nbi_no_avx2_kernels; // ISO C wants something in a translation unit
#endif
