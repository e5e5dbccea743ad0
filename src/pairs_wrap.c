// SPDX-License-Identifier: MIT
// The two-lane (SSE2, or scalar) pair kernels of pair_kernels.h for periodic walks (the minimum
// image), one per (dimension, filter, mode): their own instantiations, so that the plain ones
// (pairs_sse2.c) stay as fast, in a translation unit of their own.
#include "pair_kernels.h"

NBI_KERNEL_DEFINE(nbi_pairs_2w, , 2, false, false, true, 0)
NBI_KERNEL_DEFINE(nbi_pairs_2xw, , 2, false, true, true, 0)
NBI_KERNEL_DEFINE(nbi_pairs_2fw, , 2, true, false, true, 0)
NBI_KERNEL_DEFINE(nbi_pairs_2fxw, , 2, true, true, true, 0)
NBI_KERNEL_DEFINE(nbi_pairs_3w, , 3, false, false, true, 0)
NBI_KERNEL_DEFINE(nbi_pairs_3xw, , 3, false, true, true, 0)
NBI_KERNEL_DEFINE(nbi_pairs_3fw, , 3, true, false, true, 0)
NBI_KERNEL_DEFINE(nbi_pairs_3fxw, , 3, true, true, true, 0)
