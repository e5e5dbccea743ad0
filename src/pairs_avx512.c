// SPDX-License-Identifier: MIT
// The AVX512 copies of the unfiltered pair kernels (pair_kernels.h: 8 lanes a step over the
// gathered candidates; a crowded cell over larger lanes), plain and periodic,
// compiled with a target attribute and chosen at run time (simd.h).
#include "pair_kernels.h"

#if defined(NBI_AVX512)
NBI_KERNELS_WIDE(_avx512, NBI_TARGET_AVX512, 8)
NBI_CROWDED_DEFINE(nbi_pairs_crowded_avx512, NBI_TARGET_AVX512, 8)
#else
typedef int nbi_no_avx512_kernels; // ISO C wants something in a translation unit
#endif
