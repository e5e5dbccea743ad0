// SPDX-License-Identifier: MIT
// Cell math: floor (never truncation), the power-of-two fast path, the reach of the double
// distance test, ring counts and the default cell edge.
#include "cell.h"
#include "nb_oracle.h"
#include "nb_test.h"

#include <float.h>
#include <math.h>

static int test_floor_not_truncation(void)
{
    nbiCellMath m = nbi_cell_math(1.0);
    NB_CHECK(nbi_cell_i(&m, -0.5) == -1);
    NB_CHECK(nbi_cell_i(&m, 0.5) == 0);
    NB_CHECK(nbi_cell_i(&m, -0.0) == 0);
    NB_CHECK(nbi_cell_i(&m, -1.0) == -1);
    NB_CHECK(nbi_cell_i(&m, -1.0000000000000002) == -2);
    NB_CHECK(nbi_cell_i(&m, 3.9999999999999996) == 3);
    nbiCellMath m3 = nbi_cell_math(3.0);
    NB_CHECK(!m3.pow2);
    NB_CHECK(nbi_cell_i(&m3, -0.1) == -1 && nbi_cell_i(&m3, 0.1) == 0);
    NB_CHECK(nbi_cell_i(&m3, -3.0) == -1 && nbi_cell_i(&m3, -3.0000000000000004) == -2);
    NB_CHECK(nbi_floor_i64(0x1p61) == (int64_t)1 << 61);
    NB_CHECK(nbi_floor_i64(-0x1p61 - 1024.0) == -((int64_t)1 << 61) - 1024);
    NB_CHECK(nbi_floor_i64(-0x1p-1074) == -1);
    return 0;
}

static int test_pow2_path_is_exact_division(void)
{
    const double cells[] = {1.0, 0.5, 2.0, 0x1p-20, 0x1p40, 0.25, 1024.0};
    for (size_t c = 0; c < sizeof cells / sizeof cells[0]; c++) {
        nbiCellMath m = nbi_cell_math(cells[c]);
        NB_CHECK(m.pow2);
        for (int i = 0; i < 20000; i++) {
            double x = nbt_range(-1e6, 1e6) * pow(2.0, (double)nbt_int(60) - 30.0);
            NB_CHECK(nbi_cell_f(&m, x) == floor(x / cells[c]));
        }
    }
    NB_CHECK(!nbi_cell_math(0.3).pow2 && !nbi_cell_math(1.75).pow2);
    NB_CHECK(!nbi_cell_math(0x1p-1074).pow2); // reciprocal overflows: divide instead
    NB_CHECK(!nbi_cell_math(DBL_MAX).pow2);
    return 0;
}

// Every pair accepted by the double test lies within nbi_reach(r) per axis, including where
// the squares underflow (tiny r) or are subnormal.
static int test_reach_covers_accepted_pairs(void)
{
    int accepted = 0;
    for (int t = 0; t < 200000; t++) {
        double r = pow(10.0, nbt_range(-320.0, 150.0));
        if (t % 7 == 0) r = 0.0;
        double x = nbt_range(-1.0, 1.0) * pow(10.0, nbt_range(-320.0, 150.0));
        double dx = r * nbt_range(0.0, 1.5) + (t % 5 == 0 ? 0x1p-537 * nbt_unit() : 0.0);
        double y = x + dx;
        const double a[2] = {x, 0.0}, b[2] = {y, 0.0};
        if (nbo_within(a, b, 2, r)) {
            NB_CHECK(fabs(y - x) <= nbi_reach(r));
            accepted++;
        }
    }
    NB_CHECK(accepted > 100000); // about 85% of the draws: the check above really ran
    NB_CHECK(nbi_reach(1e160) == (double)INFINITY);
    NB_CHECK(nbi_reach(0.0) > 0.0 && nbi_reach(0.0) < 1e-150);
    return 0;
}

static int test_default_cell_needs_one_ring(void)
{
    for (int t = 0; t < 100000; t++) {
        double r = t % 11 == 0 ? 0.0 : pow(10.0, nbt_range(-300.0, 150.0));
        double m = t % 3 == 0 ? 0.0 : pow(10.0, nbt_range(-300.0, 300.0));
        double c = nbi_cell_for_radius(r, m);
        NB_CHECK(c > 0.0 && c <= DBL_MAX);
        NB_CHECK(c >= nbi_reach(r) || c == DBL_MAX);
        if (c < DBL_MAX) NB_CHECK(nbi_rings(nbi_reach(r), c, m) == 1.0);
    }
    // Rings grow as the cell shrinks: k = ceil(r / cell) plus the margin.
    NB_CHECK(nbi_rings(nbi_reach(1.0), 0.5, 10.0) == 3.0); // 2 + margin crosses into 3
    NB_CHECK(nbi_rings(nbi_reach(1.0), 0.4, 10.0) == 3.0);
    NB_CHECK(nbi_rings(nbi_reach(1.0), 0.3, 10.0) == 4.0);
    NB_CHECK(nbi_rings(nbi_reach(1.0), 10.0, 10.0) == 1.0);
    return 0;
}

// A chosen cell of exactly r / k is nudged up just enough to need k rings, not k + 1; a cell
// that gains nothing keeps its exact value (and so a power of two its fast path).
static int test_cell_snap_saves_a_ring(void)
{
    for (int k = 1; k <= 4; k++) {
        for (int t = 0; t < 1000; t++) {
            const double r = pow(10.0, nbt_range(-6.0, 6.0)), m = r * nbt_range(0.0, 1e5);
            const double cell = r / k, snapped = nbi_cell_snap(cell, r, m);
            NB_CHECK(nbi_rings(nbi_reach(r), cell, m) == (double)k + 1.0); // the trap
            NB_CHECK(snapped == cell * (1.0 + 0x1p-30));
            NB_CHECK(nbi_rings(nbi_reach(r), snapped, m) == (double)k);
        }
    }
    NB_CHECK(nbi_cell_snap(4.0, 1.75, 100.0) == 4.0); // one ring either way: untouched
    NB_CHECK(nbi_cell_snap(0.5, 1.75, 100.0) == 0.5); // 4 rings either way
    NB_CHECK(nbi_cell_snap(1.0, 0.0, 100.0) == 1.0);  // no radius to tune for
    NB_CHECK(nbi_cell_snap(DBL_MAX, 1.0, 1.0) == DBL_MAX);
    return 0;
}

// Two points exactly r apart on either side of a cell edge are never more than `rings` cells
// apart, including far from the origin where x / cell rounds.
static int test_rings_cover_rounding(void)
{
    int checked = 0;
    for (int t = 0; t < 200000; t++) {
        double base = nbt_range(-1.0, 1.0) * pow(10.0, nbt_range(-5.0, 15.0));
        double r = pow(10.0, nbt_range(-3.0, 3.0));
        double cell = t % 2 ? nbi_cell_for_radius(r, fabs(base) + 2 * r) : r * nbt_range(0.2, 3.0);
        nbiCellMath m = nbi_cell_math(cell);
        const double x = base, y = base + r;
        const double a[2] = {x, 0.0}, b[2] = {y, 0.0};
        if (!nbo_within(a, b, 2, r)) continue; // base + r rounded up: not a pair
        checked++;
        double k = nbi_rings(nbi_reach(r), cell, fabs(base) + 2 * r);
        double diff = fabs(nbi_cell_f(&m, x) - nbi_cell_f(&m, y));
        NB_CHECK(diff <= k);
    }
    NB_CHECK(checked > 100000); // about 65% of the draws are pairs
    return 0;
}

static int test_hash_spreads(void)
{
    // Neighbouring cells land in different slots of a small table far more often than not.
    int same = 0;
    for (int64_t x = -50; x < 50; x++)
        for (int64_t y = -50; y < 50; y++)
            same += (nbi_cell_hash(x, y, 0) >> 54) == (nbi_cell_hash(x + 1, y, 0) >> 54);
    NB_CHECK(same < 100);
    return 0;
}

// Cells crafted so that a linear hash (x*A ^ y*B) collides in every bit: x a multiple of 2^47
// and y solved from x. A hash that mixes each coordinate in turn spreads them like random cells.
static int test_hash_resists_linear_collisions(void)
{
    const uint64_t a = 0x9E3779B97F4A7C15u, b = 0xC2B2AE3D27D4EB4Fu;
    uint64_t binv = b;
    for (int i = 0; i < 6; i++) binv *= 2 - b * binv; // inverse of b mod 2^64 (Newton)
    enum { BITS = 16, SLOTS = 1 << BITS };
    static uint8_t seen[SLOTS];
    int distinct = 0;
    for (int64_t xp = -(1 << 14); xp < (1 << 14); xp++) {
        uint64_t yv = ((uint64_t)xp * a * binv) & ((1u << 17) - 1);
        int64_t yp = (int64_t)yv >= (1 << 16) ? (int64_t)yv - (1 << 17) : (int64_t)yv;
        uint64_t h =
            nbi_cell_hash(xp * ((int64_t)1 << 47), yp * ((int64_t)1 << 47), 0) >> (64 - BITS);
        distinct += !seen[h];
        seen[h] = 1;
    }
    // 32768 random keys in 65536 slots fill about 65536 * (1 - e^-0.5) = 25786 distinct slots.
    NB_CHECK(distinct > 24000);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"floor_not_truncation", test_floor_not_truncation},
        {"pow2_path_is_exact_division", test_pow2_path_is_exact_division},
        {"reach_covers_accepted_pairs", test_reach_covers_accepted_pairs},
        {"default_cell_needs_one_ring", test_default_cell_needs_one_ring},
        {"cell_snap_saves_a_ring", test_cell_snap_saves_a_ring},
        {"rings_cover_rounding", test_rings_cover_rounding},
        {"hash_spreads", test_hash_spreads},
        {"hash_resists_linear_collisions", test_hash_resists_linear_collisions},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
