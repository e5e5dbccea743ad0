// SPDX-License-Identifier: MIT
// The two-lane (SSE2, or scalar) pair kernels of pair_kernels.h for periodic walks (the minimum
// image), one per (dimension, filter, mode): their own instantiations, so that the plain ones
// (pairs_sse2.c) stay as fast, in a translation unit of their own.
#include "pair_kernels.h"

NBI_KERNELS_TWO_LANE(w, true)
