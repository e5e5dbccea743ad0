// SPDX-License-Identifier: MIT
// The two-lane (SSE2, or scalar) pair kernels of pair_kernels.h, one per (dimension, filter,
// mode), in a translation unit of their own so that they compile beside the walkers (the
// periodic ones: pairs_wrap.c).
#include "pair_kernels.h"

#define NBI_KERNEL(name, dim, flt, cross, wrap)                                                    \
    void name(const nbiSpanList *l)                                                                \
    {                                                                                              \
        nbi_cell_pairs_dim(l, dim, flt, cross, wrap, 0);                                           \
    }
NBI_KERNEL(nbi_pairs_2, 2, false, false, false)
NBI_KERNEL(nbi_pairs_2x, 2, false, true, false)
NBI_KERNEL(nbi_pairs_2f, 2, true, false, false)
NBI_KERNEL(nbi_pairs_2fx, 2, true, true, false)
NBI_KERNEL(nbi_pairs_3, 3, false, false, false)
NBI_KERNEL(nbi_pairs_3x, 3, false, true, false)
NBI_KERNEL(nbi_pairs_3f, 3, true, false, false)
NBI_KERNEL(nbi_pairs_3fx, 3, true, true, false)
