// SPDX-License-Identifier: MIT
// The two-lane (SSE2, or scalar) pair kernels of pair_kernels.h, one per (dimension, filter,
// mode), in a translation unit of their own so that they compile beside the walkers (the
// periodic ones: pairs_wrap.c).
#include "pair_kernels.h"

NBI_KERNEL_DEFINE(nbi_pairs_2, , 2, false, false, false, 0)
NBI_KERNEL_DEFINE(nbi_pairs_2x, , 2, false, true, false, 0)
NBI_KERNEL_DEFINE(nbi_pairs_2f, , 2, true, false, false, 0)
NBI_KERNEL_DEFINE(nbi_pairs_2fx, , 2, true, true, false, 0)
NBI_KERNEL_DEFINE(nbi_pairs_3, , 3, false, false, false, 0)
NBI_KERNEL_DEFINE(nbi_pairs_3x, , 3, false, true, false, 0)
NBI_KERNEL_DEFINE(nbi_pairs_3f, , 3, true, false, false, 0)
NBI_KERNEL_DEFINE(nbi_pairs_3fx, , 3, true, true, false, 0)
