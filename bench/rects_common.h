// SPDX-License-Identifier: MIT
// The rectangles workload (issue: the quadtree), shared by nearby's runner and every peer's
// (Box2D's b2DynamicTree, Boost.Geometry's rtrees, libspatialindex, and, through a data file,
// flatbush and rbush on node): the same rectangles, windows and moves for every peer.
// Header-only, C11 and C++17. Everything comes from splitmix64 with fixed seeds, so every peer
// sees bit-identical data (the build uses -ffp-contract=off).
//
// Static set (nbr_make_rects): N rectangles with centres uniform over the square
// [-h, h]^2, h = 1000 * sqrt(N / 1e6) (so 1M rectangles cover 2000 x 2000, and smaller sets keep
// the same density), and sides log-uniform in [0.1, 10], drawn per axis.
// Windows (nbr_make_windows): M windows with centres uniform over the same square and sides
// uniform in [5, 20], drawn per axis.
// A rectangle touches a window when their closed intervals overlap on both axes:
// a.min <= b.max && b.min <= a.max per axis (touching counts).
//
// Moving workload (nbr_move): each frame every rectangle's centre takes a step uniform in
// [-0.5, 0.5] per axis (its size kept), reflected at the walls; then each rectangle, in index
// order, asks for every rectangle touching it (itself included).
//
// Each peer reports per figure the number of (window, rectangle) hits and the sum of the hit
// rectangles' indices (pairs: the number of pairs and the sum of i * N + j over pairs i < j,
// wrapping mod 2^64): cheap numbers every exact peer must reproduce.
#ifndef NB_BENCH_RECTS_COMMON_H
#define NB_BENCH_RECTS_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define NBR_SEED_RECTS 0x7265637473000001ULL
#define NBR_SEED_WINDOWS 0x77696e646f770002ULL
#define NBR_SEED_MOVES 0x6d6f766573000003ULL
#define NBR_N_STATIC 1000000 // rectangles in the static set
#define NBR_N_WINDOWS 10000  // windows queried against it
#define NBR_N_PAIRS 100000   // overlap pairs run on the first this-many rectangles
#define NBR_N_MOVING 100000  // rectangles in the moving workload
#define NBR_FRAMES 100       // frames of the moving workload
#define NBR_STEP 0.5         // largest step per axis per frame

static inline uint64_t nbr_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// Uniform in [0, 1), 53 bits.
static inline double nbr_unit(uint64_t *s)
{
    return (double)(nbr_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

/// Half the side of the square that holds n rectangles at the static set's density.
static inline double nbr_half(int32_t n)
{
    return 1000.0 * sqrt((double)n / 1e6);
}

/// Rectangles as minx, miny, maxx, maxy (4 doubles each) into r[4n].
static inline void nbr_make_rects(double *r, int32_t n)
{
    uint64_t s = NBR_SEED_RECTS;
    double h = nbr_half(n);
    for (int32_t i = 0; i < n; i++) {
        double cx = (2.0 * nbr_unit(&s) - 1.0) * h;
        double cy = (2.0 * nbr_unit(&s) - 1.0) * h;
        double wx = 0.1 * pow(100.0, nbr_unit(&s)); // log-uniform in [0.1, 10)
        double wy = 0.1 * pow(100.0, nbr_unit(&s));
        r[4 * i + 0] = cx - 0.5 * wx;
        r[4 * i + 1] = cy - 0.5 * wy;
        r[4 * i + 2] = cx + 0.5 * wx;
        r[4 * i + 3] = cy + 0.5 * wy;
    }
}

/// Windows over the square of n rectangles, as minx, miny, maxx, maxy into w[4m].
static inline void nbr_make_windows(double *w, int32_t m, int32_t n)
{
    uint64_t s = NBR_SEED_WINDOWS;
    double h = nbr_half(n);
    for (int32_t i = 0; i < m; i++) {
        double cx = (2.0 * nbr_unit(&s) - 1.0) * h;
        double cy = (2.0 * nbr_unit(&s) - 1.0) * h;
        double wx = 5.0 + 15.0 * nbr_unit(&s);
        double wy = 5.0 + 15.0 * nbr_unit(&s);
        w[4 * i + 0] = cx - 0.5 * wx;
        w[4 * i + 1] = cy - 0.5 * wy;
        w[4 * i + 2] = cx + 0.5 * wx;
        w[4 * i + 3] = cy + 0.5 * wy;
    }
}

/// Whether two closed rectangles touch.
static inline int nbr_touch(const double *a, const double *b)
{
    return a[0] <= b[2] && b[0] <= a[2] && a[1] <= b[3] && b[1] <= a[3];
}

/// Moves a set elsewhere: adds (ox, oy) to every rectangle (or window) of r[4n]. The runners'
/// --offset X,Y puts the static set, the windows and the moving set (before its first frame)
/// there, and the moving set's frames then keep to its square moved likewise (nbr_move_at).
static inline void nbr_shift(double *r, int32_t n, double ox, double oy)
{
    for (int32_t i = 0; i < n; i++) {
        r[4 * i + 0] += ox;
        r[4 * i + 1] += oy;
        r[4 * i + 2] += ox;
        r[4 * i + 3] += oy;
    }
}

/// One step of the moving workload for n rectangles r[4n] in the square of n moved by (ox, oy);
/// *s starts at NBR_SEED_MOVES before the first frame. Centres step uniformly in [-NBR_STEP,
/// NBR_STEP] per axis and are reflected at the walls o +- h; sizes are kept. With o = 0 the
/// arithmetic is the same as before there was an offset (bit for bit).
static inline void nbr_move_at(double *r, int32_t n, uint64_t *s, double ox, double oy)
{
    double h = nbr_half(n);
    for (int32_t i = 0; i < n; i++) {
        for (int a = 0; a < 2; a++) {
            const double o = a == 0 ? ox : oy;
            double lo = r[4 * i + a], hi = r[4 * i + 2 + a];
            double half = 0.5 * (hi - lo), c = 0.5 * (hi + lo);
            c += (2.0 * nbr_unit(s) - 1.0) * NBR_STEP;
            if (c > o + h) c = 2.0 * (o + h) - c;
            if (c < o - h) c = 2.0 * (o - h) - c;
            r[4 * i + a] = c - half;
            r[4 * i + 2 + a] = c + half;
        }
    }
}

/// nbr_move_at in the square around the origin.
static inline void nbr_move(double *r, int32_t n, uint64_t *s)
{
    nbr_move_at(r, n, s, 0.0, 0.0);
}

/// Folds one (query, hit) into a tally: count and index sum.
typedef struct nbrTally {
    uint64_t count;
    uint64_t sum;
} nbrTally;

static inline void nbr_tally_hit(nbrTally *t, uint64_t index)
{
    t->count++;
    t->sum += index;
}

static inline void nbr_tally_pair(nbrTally *t, uint64_t i, uint64_t j, uint64_t n)
{
    t->count++;
    t->sum += i < j ? i * n + j : j * n + i;
}

#endif
