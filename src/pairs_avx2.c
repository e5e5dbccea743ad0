// SPDX-License-Identifier: MIT
// The AVX2 copies of the unfiltered pair kernels (pair_kernels.h: 4 lanes a step over the
// gathered candidates; a crowded cell over larger lanes), plain and periodic,
// compiled with a target attribute and chosen at run time (simd.h).
#include "pair_kernels.h"

#if defined(NBI_AVX2)
NBI_KERNELS_WIDE(_avx2, NBI_TARGET_AVX2, 4)
NBI_CROWDED_DEFINE(nbi_pairs_crowded_avx2, NBI_TARGET_AVX2, 4)
#else
typedef int nbi_no_avx2_kernels; // ISO C wants something in a translation unit
#endif
