// SPDX-License-Identifier: MIT
// Tests and fuzz targets keep box bounds as lo / hi arrays; the API takes one nbBox. NBT_BOX(lo,
// hi, dim) is a pointer to the nbBox of their first dim entries (the other axes 0), valid to
// the end of the enclosing block; a NULL lo or hi gives NULL, so a NULL-box case reads as one.
#ifndef NEARBY_TEST_BOX_H
#define NEARBY_TEST_BOX_H

#include <nearby/nearby.h>

#include <string.h>

static inline const nbBox *nbt_box(nbBox *b, const double *lo, const double *hi, int dim)
{
    if (lo == NULL || hi == NULL) return NULL;
    memset(b, 0, sizeof *b);
    memcpy(b->min, lo, (size_t)dim * sizeof(double));
    memcpy(b->max, hi, (size_t)dim * sizeof(double));
    return b;
}

#define NBT_BOX(lo, hi, dim) nbt_box(&(nbBox){{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}, (lo), (hi), (dim))

// The same for a quadtree rectangle used as a query window (an nbRect, or anything with min[2]
// and max[2]): NBT_RECT_BOX(&rect).
#define NBT_RECT_BOX(r) NBT_BOX((r)->min, (r)->max, 2)

#endif
