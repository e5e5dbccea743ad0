// SPDX-License-Identifier: MIT
// Cell math: see cell.h for the contract. The margins here are what keep pruning exact.
#include "cell.h"

#include <float.h>

nbiCellMath nbi_cell_math(double cell)
{
    nbiCellMath m = {cell, 1.0, false};
    int e = 0;
    double mant = frexp(cell, &e);
    double inv = 1.0 / cell;
    // A power of two has mantissa 0.5; its reciprocal is exact when finite and normal.
    if (mant == 0.5 && isfinite(inv) && inv >= DBL_MIN) {
        m.inv = inv;
        m.pow2 = true;
    }
    return m;
}

double nbi_reach(double r)
{
    // With u = 2^-53: an accepted pair has fl(dx^2) <= fl(r^2) for each axis, and the sum of the
    // true squares is at most r^2 (1 + 9u) + 6 * 2^-1075 (underflow of each square to zero costs
    // at most 2^-1075). Hence d <= r (1 + 5u) + 2^-536. We return a generous superset of that.
    if (!isfinite(r * r)) return (double)INFINITY;
    return (r + 0x1p-530) * (1.0 + 0x1p-40);
}

double nbi_rings(double reach, double cell, double max_abs)
{
    // Two points at true distance <= reach differ in x / cell by at most reach / cell; each
    // rounded quotient is off by at most u |x| / cell (+ an underflow term), so their floors
    // differ by at most ceil(D) with D = (reach + 2 u max_abs) / cell. We use 3 u max_abs + 2 u
    // reach at u = 2^-52, then widen D by 2^-50 for the rounding of this very computation.
    double d = (reach + (3.0 * max_abs + 2.0 * reach) * 0x1p-52 + 0x1p-1000) / cell;
    d *= 1.0 + 0x1p-50;
    return ceil(d);
}

double nbi_cell_for_radius(double r, double max_abs)
{
    double reach = nbi_reach(r);
    double cell = (reach + (3.0 * max_abs + 2.0 * reach) * 0x1p-52 + 0x1p-1000) * (1.0 + 0x1p-47);
    if (!isfinite(cell)) return DBL_MAX;
    while (nbi_rings(reach, cell, max_abs) > 1.0 && cell < DBL_MAX) // never taken in practice
        cell = nextafter(cell, (double)INFINITY) * (1.0 + 0x1p-50);
    return cell < DBL_MAX ? cell : DBL_MAX;
}

double nbi_cell_snap(double cell, double r, double max_abs)
{
    const double nudged = cell * (1.0 + 0x1p-30);
    if (!isfinite(nudged) || !(r > 0.0)) return cell;
    const double reach = nbi_reach(r);
    return nbi_rings(reach, nudged, max_abs) < nbi_rings(reach, cell, max_abs) ? nudged : cell;
}

double nbi_wrap_rings1(double reach, double p, double e, int64_t m)
{
    return ceil(((reach + p * 0x1p-50) / e) * (1.0 + 0x1p-50) + (double)(m + 2) * 0x1p-50);
}
