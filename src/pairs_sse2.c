// SPDX-License-Identifier: MIT
// The two-lane (SSE2, or scalar) pair kernels of pair_kernels.h, one per (dimension, filter,
// mode), in a translation unit of their own so that they compile beside the walkers (the
// periodic ones: pairs_wrap.c).
#include "pair_kernels.h"

NBI_KERNELS_TWO_LANE(, false)
