// SPDX-License-Identifier: MIT
// Orders for the caller's arrays: the grid's cell order, and a gather that applies any order.
#include "grid_internal.h"

#include <string.h>

nbStatus nb_grid_cell_order(const nbGrid *grid, int32_t *order, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (grid == NULL || found == NULL || (order == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    if (capacity < 0) return NB_ERR_OUT_OF_RANGE;
    const int32_t n = capacity < grid->n ? capacity : grid->n;
    if (n > 0) memcpy(order, grid->idx.ptr, (size_t)n * sizeof(int32_t));
    *found = grid->n;
    return capacity < grid->n ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

// dst[p] = src[order[p]] with the element size and strides as constants where they are the
// common ones, so the copy is a load and a store.
NBI_INLINE void nbi_gather_elems(const int32_t *order, int32_t n, const char *src, size_t ss,
                                 char *dst, size_t ds, size_t size)
{
    for (int32_t p = 0; p < n; p++) memcpy(dst + (size_t)p * ds, src + (size_t)order[p] * ss, size);
}

nbStatus nb_gather(const int32_t *order, int32_t n, const void *src, size_t src_stride, void *dst,
                   size_t dst_stride, size_t size)
{
    if (n > 0 && (order == NULL || src == NULL || dst == NULL)) return NB_ERR_NULL_ARG;
    const size_t ss = src_stride == 0 ? size : src_stride;
    const size_t ds = dst_stride == 0 ? size : dst_stride;
    if (n < 0 || size == 0 || ss < size || ds < size) return NB_ERR_OUT_OF_RANGE;
    uint32_t bad = 0; // any order[p] outside [0, n), without a branch per element
    for (int32_t p = 0; p < n; p++) bad |= (uint32_t)order[p] >= (uint32_t)n;
    if (bad) return NB_ERR_OUT_OF_RANGE;
    const char *s = (const char *)src;
    char *d = (char *)dst;
    if (size == 16 && ss == 16 && ds == 16)
        nbi_gather_elems(order, n, s, 16, d, 16, 16); // 2D positions
    else if (size == 24 && ss == 24 && ds == 24)
        nbi_gather_elems(order, n, s, 24, d, 24, 24); // 3D positions
    else if (size == 8 && ss == 8 && ds == 8)
        nbi_gather_elems(order, n, s, 8, d, 8, 8);
    else if (size == 4 && ss == 4 && ds == 4)
        nbi_gather_elems(order, n, s, 4, d, 4, 4);
    else
        nbi_gather_elems(order, n, s, ss, d, ds, size);
    return NB_OK;
}
