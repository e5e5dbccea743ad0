// SPDX-License-Identifier: MIT
// Counting the pairs within a radius that spans many points (a two-point correlation out to the
// box's size), where testing every pair costs O(N^2): whole blocks of pairs are counted at once.
#ifndef NB_GRID_COUNT_BULK_H
#define NB_GRID_COUNT_BULK_H

#include "nb_internal.h"
#include "view.h"

// The pairs within `radius` (>= 0, finite or not) among the points of view a (b == NULL: each
// unordered pair i < j once), or between a's and b's (every (i, j)): the same count the pair
// walks give, d2 <= fl(radius * radius) with d2 as nbi_dist2 computes it. It bins the points in
// cells of radius / NBI_BULK_PER_RADIUS over their bounding box and takes the cells by pairs:
// a pair of cells whose points' boxes lie wholly within the radius adds the product of their
// counts, one wholly beyond it nothing, and only the others test their points. False (count
// untouched) when that would not pay, or the views have filters or a periodic axis, or the
// scratch memory is not available: the caller walks the pairs instead.
bool nbi_count_bulk(const nbiView *a, const nbiView *b, double radius, const nbAllocator *alloc,
                    int64_t *count);

#endif
