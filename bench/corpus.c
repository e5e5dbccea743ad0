// SPDX-License-Identifier: MIT
// The corpus of distributions (corpus.h). Every set comes from one splitmix64 stream seeded per
// set (rects_common.h's generator), so a set is the same on every machine and compiler (the
// build uses -ffp-contract=off). Items are drawn in an order that is random in space (sets
// drawn along a path are shuffled), so a structure gets no locality it did not build itself.
//
// Point sets are made in a local frame at about one point a unit of area (or volume), then
// moved by the set's offset; rectangle sets take their centres from the matching 2D point
// generator at twice the scale (about 0.25 rectangles a unit of area: 1M uniform rectangles
// cover [0, 2000]^2) and sides log-uniform in [0.1, 10] per axis (rect_mixed: 0.01 to 1000).
#include "corpus.h"

#include "rects_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const double nbb_pi = 3.14159265358979323846;

uint64_t nbb_rng_next(uint64_t *state)
{
    return nbr_next(state);
}

double nbb_rng_unit(uint64_t *state)
{
    return nbr_unit(state);
}

void nbb_rng_gauss2(uint64_t *state, double *g0, double *g1)
{
    double u1 = 1.0 - nbr_unit(state); // (0, 1]: the log is finite
    double u2 = nbr_unit(state);
    double m = sqrt(-2.0 * log(u1));
    *g0 = m * cos(2.0 * nbb_pi * u2);
    *g1 = m * sin(2.0 * nbb_pi * u2);
}

static double gauss(uint64_t *s)
{
    double g0, g1;
    nbb_rng_gauss2(s, &g0, &g1);
    return g0;
}

/// A uniform direction in 3D into v[3].
static void unit_vector(uint64_t *s, double *v)
{
    double z = 2.0 * nbr_unit(s) - 1.0;
    double a = 2.0 * nbb_pi * nbr_unit(s);
    double q = sqrt(1.0 - z * z);
    v[0] = q * cos(a);
    v[1] = q * sin(a);
    v[2] = z;
}

/// Fisher-Yates shuffle of n items of `dim` doubles.
static void shuffle(double *p, int32_t n, int dim, uint64_t *s)
{
    for (int32_t k = n - 1; k > 0; k--) {
        int32_t j = (int32_t)(nbr_next(s) % (uint64_t)(k + 1));
        for (int d = 0; d < dim; d++) {
            double t = p[(size_t)k * dim + d];
            p[(size_t)k * dim + d] = p[(size_t)j * dim + d];
            p[(size_t)j * dim + d] = t;
        }
    }
}

// ---- the generators: n points of dim doubles into p, `scale` stretching the local frame ----

/// One anchor (a blob, cluster, town, road or site) per `per` points, at least one: *k of them,
/// `fields` doubles each, from malloc (NULL when memory runs out), the first `uniform` fields of
/// each drawn uniform in [0, side) (a position), the rest left for the caller.
static double *anchors(int32_t n, int32_t per, int fields, int uniform, double side, uint64_t *s,
                       int32_t *k)
{
    *k = n / per > 0 ? n / per : 1;
    double *a = malloc(sizeof(double) * (size_t)fields * (size_t)*k);
    if (a == NULL) return NULL;
    for (int32_t j = 0; j < *k; j++)
        for (int d = 0; d < uniform; d++) a[(size_t)j * fields + d] = nbr_unit(s) * side;
    return a;
}

typedef int GenFn(double *p, int32_t n, int dim, double scale, uint64_t *s);

/// Uniform in a cube of side scale * n^(1/dim): density 1 at scale 1 (bench/gen_data.c's
/// uniform2d and uniform3d, coordinate by coordinate in storage order).
static int gen_uniform(double *p, int32_t n, int dim, double scale, uint64_t *s)
{
    double side = scale * (dim == 2 ? sqrt((double)n) : cbrt((double)n));
    for (size_t i = 0; i < (size_t)n * (size_t)dim; i++) p[i] = nbr_unit(s) * side;
    return 0;
}

/// Gaussian blobs of log-normal sizes: one blob per 2000 points, centres uniform over a square
/// of side 1.5 sqrt(n) scale, each blob's sigma 8 scale exp(g) (g standard normal: the middle
/// two thirds of blobs between 3 and 22, the tails from under 1 to over 150), each point in a
/// blob drawn at random.
static int gen_blobs(double *p, int32_t n, int dim, double scale, uint64_t *s)
{
    (void)dim;
    int32_t k;
    double *b = anchors(n, 2000, 3, 2, 1.5 * sqrt((double)n) * scale, s, &k);
    if (b == NULL) return 1;
    for (int32_t c = 0; c < k; c++) b[3 * c + 2] = 8.0 * scale * exp(gauss(s));
    for (int32_t i = 0; i < n; i++) {
        const double *c = b + 3 * (size_t)(nbr_next(s) % (uint64_t)k);
        double g0, g1;
        nbb_rng_gauss2(s, &g0, &g1);
        p[2 * (size_t)i] = c[0] + c[2] * g0;
        p[2 * (size_t)i + 1] = c[1] + c[2] * g1;
    }
    free(b);
    return 0;
}

/// Power-law clusters in 3D: one cluster per 200 points, centres uniform in a cube of side
/// 2 cbrt(n) scale, each of radius 3 scale exp(0.7 g) with a density falling as 1 / d^2 from
/// its centre (d = radius u); heavy-tailed populations: a point joins cluster floor(k u^2) of k
/// (the largest holds about 1 / sqrt(k) of the points, most hold a few). 10% of the points are
/// uniform over the cube.
static int gen_powerlaw3d(double *p, int32_t n, int dim, double scale, uint64_t *s)
{
    (void)dim;
    int32_t k;
    const double side = 2.0 * cbrt((double)n) * scale;
    double *c = anchors(n, 200, 4, 3, side, s, &k);
    if (c == NULL) return 1;
    for (int32_t j = 0; j < k; j++) c[4 * j + 3] = 3.0 * scale * exp(0.7 * gauss(s));
    for (int32_t i = 0; i < n; i++) {
        double *q = p + 3 * (size_t)i;
        if (nbr_unit(s) < 0.1) {
            for (int d = 0; d < 3; d++) q[d] = nbr_unit(s) * side;
            continue;
        }
        double u = nbr_unit(s), v[3];
        const double *cj = c + 4 * (size_t)(int32_t)((double)k * u * u);
        double dist = cj[3] * nbr_unit(s);
        unit_vector(s, v);
        for (int d = 0; d < 3; d++) q[d] = cj[d] + dist * v[d];
    }
    free(c);
    return 0;
}

/// Heavy-tailed about one centre, in 3D: a uniform direction at a log-normal distance,
/// scale exp(3 g) (g standard normal: the middle two thirds from 0.05 to 20; of 200k points the
/// nearest about 1e-6 from the centre, the farthest 1e6), so the density falls over decades and the
/// core is far denser than the box's mean (a star cluster's or a city's falloff, seen from its
/// centre).
static int gen_tail3d(double *p, int32_t n, int dim, double scale, uint64_t *s)
{
    (void)dim;
    for (int32_t i = 0; i < n; i++) {
        double v[3];
        unit_vector(s, v);
        const double dist = scale * exp(3.0 * gauss(s));
        for (int d = 0; d < 3; d++) p[3 * (size_t)i + (size_t)d] = dist * v[d];
    }
    return 0;
}

/// Points on a sphere's surface, like the world's towns in Earth-centred coordinates: radius
/// 6371, a quarter of the points uniform over the surface, the rest in one town per 500 points
/// (centres uniform on the surface, sizes 1 to 31 Gaussian, populations heavy-tailed: town
/// floor(k u^2.5) of k), each pushed back onto the surface.
static int gen_sphere(double *p, int32_t n, int dim, double scale, uint64_t *s)
{
    (void)dim;
    (void)scale;
    const double radius = 6371.0;
    int32_t k;
    double *t = anchors(n, 500, 4, 0, 0.0, s, &k);
    if (t == NULL) return 1;
    for (int32_t c = 0; c < k; c++) {
        unit_vector(s, t + 4 * c);
        t[4 * c + 3] = 1.0 + 30.0 * nbr_unit(s);
    }
    for (int32_t i = 0; i < n; i++) {
        double v[3];
        if (nbr_unit(s) < 0.25) {
            unit_vector(s, v);
        } else {
            int32_t c = (int32_t)((double)k * pow(nbr_unit(s), 2.5));
            const double *tc = t + 4 * (size_t)(c < k ? c : k - 1);
            double g0, g1;
            nbb_rng_gauss2(s, &g0, &g1);
            double g2 = gauss(s);
            double sig = tc[3] / radius;
            v[0] = tc[0] + sig * g0;
            v[1] = tc[1] + sig * g1;
            v[2] = tc[2] + sig * g2;
            double len = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
            for (int d = 0; d < 3; d++) v[d] /= len;
        }
        for (int d = 0; d < 3; d++) p[3 * (size_t)i + d] = radius * v[d];
    }
    free(t);
    return 0;
}

/// Points along line segments (roads): one segment per 400 points, starts uniform over a square
/// of side 2 sqrt(n) scale, directions uniform, lengths log-normal around a tenth of the side;
/// each point on a segment drawn with probability proportional to its length, at a uniform
/// position along it, with Gaussian noise of 0.3 scale on each axis (GPS traces).
static int gen_roads(double *p, int32_t n, int dim, double scale, uint64_t *s)
{
    (void)dim;
    int32_t k;
    const double side = 2.0 * sqrt((double)n) * scale;
    double *seg = anchors(n, 400, 5, 2, side, s, &k); // x0 y0 dx dy cumulative length
    if (seg == NULL) return 1;
    double total = 0.0;
    for (int32_t c = 0; c < k; c++) {
        double a = 2.0 * nbb_pi * nbr_unit(s);
        double len = 0.1 * side * exp(0.8 * gauss(s));
        seg[5 * c + 2] = len * cos(a);
        seg[5 * c + 3] = len * sin(a);
        total += len;
        seg[5 * c + 4] = total;
    }
    for (int32_t i = 0; i < n; i++) {
        double u = nbr_unit(s) * total;
        int32_t lo = 0, hi = k - 1; // the first segment whose cumulative length exceeds u
        while (lo < hi) {
            int32_t mid = lo + (hi - lo) / 2;
            if (seg[5 * mid + 4] > u)
                hi = mid;
            else
                lo = mid + 1;
        }
        const double *g = seg + 5 * (size_t)lo;
        double t = nbr_unit(s), g0, g1;
        nbb_rng_gauss2(s, &g0, &g1);
        p[2 * (size_t)i] = g[0] + t * g[2] + 0.3 * scale * g0;
        p[2 * (size_t)i + 1] = g[1] + t * g[3] + 0.3 * scale * g1;
    }
    free(seg);
    return 0;
}

/// A scanned surface, like one terrestrial LiDAR station: a scanner 2 above the middle of a
/// square of side L = sqrt(n) / 2 (metres); 55% of the points on the gently sloping ground, at
/// a range 1 + (L / 2) u^2 (dense near the scanner, sparse far away, as a scan is); 25% on 12
/// vertical walls (widths 5 to 40, heights 3 to 15, at ranges L/8 to L/2); 20% on the visible
/// upper halves of 30 spheres (tree crowns, radii 1 to 4, 2 to 8 above the ground). Noise 0.005
/// on every axis.
static int gen_lidar(double *p, int32_t n, int dim, double scale, uint64_t *s)
{
    (void)dim;
    (void)scale;
    enum { WALLS = 12, CROWNS = 30 };
    double wall[WALLS][6]; // x y cos sin width height
    double crown[CROWNS][4];
    double L = 0.5 * sqrt((double)n), cx = 0.5 * L, cy = 0.5 * L;
    for (int w = 0; w < WALLS; w++) {
        double a = 2.0 * nbb_pi * nbr_unit(s), d = L * (0.125 + 0.375 * nbr_unit(s));
        double o = nbb_pi * nbr_unit(s);
        wall[w][0] = cx + d * cos(a);
        wall[w][1] = cy + d * sin(a);
        wall[w][2] = cos(o);
        wall[w][3] = sin(o);
        wall[w][4] = 5.0 + 35.0 * nbr_unit(s);
        wall[w][5] = 3.0 + 12.0 * nbr_unit(s);
    }
    for (int c = 0; c < CROWNS; c++) {
        double a = 2.0 * nbb_pi * nbr_unit(s), d = 3.0 + 0.5 * L * nbr_unit(s);
        crown[c][0] = cx + d * cos(a);
        crown[c][1] = cy + d * sin(a);
        crown[c][3] = 1.0 + 3.0 * nbr_unit(s);
        crown[c][2] = 2.0 + 6.0 * nbr_unit(s);
    }
    for (int32_t i = 0; i < n; i++) {
        double *q = p + 3 * (size_t)i, u = nbr_unit(s);
        if (u < 0.55) {
            double a = 2.0 * nbb_pi * nbr_unit(s), r = nbr_unit(s);
            r = 1.0 + 0.5 * L * r * r;
            q[0] = cx + r * cos(a);
            q[1] = cy + r * sin(a);
            q[2] = 0.0;
        } else if (u < 0.80) {
            const double *w = wall[nbr_next(s) % WALLS];
            double along = (nbr_unit(s) - 0.5) * w[4];
            q[0] = w[0] + along * w[2];
            q[1] = w[1] + along * w[3];
            q[2] = nbr_unit(s) * w[5];
        } else {
            const double *c = crown[nbr_next(s) % CROWNS];
            double v[3];
            unit_vector(s, v);
            q[0] = c[0] + c[3] * v[0];
            q[1] = c[1] + c[3] * v[1];
            q[2] = c[2] + c[3] * fabs(v[2]);
        }
        q[2] += 0.03 * (q[0] - cx) + 0.01 * (q[1] - cy); // the ground's slope under everything
        for (int d = 0; d < 3; d++) q[d] += 0.005 * gauss(s);
    }
    return 0;
}

/// Screen coordinates: uniform over [0, 1920] x [0, 1080] whatever n is.
static int gen_screen(double *p, int32_t n, int dim, double scale, uint64_t *s)
{
    (void)dim;
    (void)scale;
    for (int32_t i = 0; i < n; i++) {
        p[2 * (size_t)i] = 1920.0 * nbr_unit(s);
        p[2 * (size_t)i + 1] = 1080.0 * nbr_unit(s);
    }
    return 0;
}

/// Heavy duplicates: n / 4 distinct sites uniform over a square of side sqrt(n) scale, each
/// point a copy of a site drawn at random (about 4 copies a site, Poisson: snapped GPS fixes,
/// rounded positions, repeated readings).
static int gen_dups(double *p, int32_t n, int dim, double scale, uint64_t *s)
{
    (void)dim;
    int32_t k;
    double *site = anchors(n, 4, 2, 2, sqrt((double)n) * scale, s, &k);
    if (site == NULL) return 1;
    for (int32_t i = 0; i < n; i++) {
        const double *c = site + 2 * (size_t)(nbr_next(s) % (uint64_t)k);
        p[2 * (size_t)i] = c[0];
        p[2 * (size_t)i + 1] = c[1];
    }
    free(site);
    return 0;
}

/// bench/gen_data.c's clusters2d: n points in 200 Gaussian clusters, sigma log-uniform in
/// [0.5, 50], centres uniform over [0, 4000]^2, shuffled.
static int gen_clusters200(double *p, int32_t n, int dim, double scale, uint64_t *s)
{
    (void)dim;
    (void)scale;
    enum { CLUSTERS = 200 };
    int32_t per = n / CLUSTERS, i = 0;
    for (int c = 0; c < CLUSTERS; c++) {
        double cx = nbr_unit(s) * 4000.0, cy = nbr_unit(s) * 4000.0;
        double sigma = 0.5 * pow(10.0, 2.0 * nbr_unit(s));
        int32_t count = c == CLUSTERS - 1 ? n - i : per;
        for (int32_t k = 0; k < count; k++, i++) {
            double g0, g1;
            nbb_rng_gauss2(s, &g0, &g1);
            p[2 * (size_t)i] = cx + sigma * g0;
            p[2 * (size_t)i + 1] = cy + sigma * g1;
        }
    }
    shuffle(p, n, 2, s);
    return 0;
}

/// bench/gen_data.c's lattice2d: the integer lattice {0..s-1}^2 + (1e6, 1e6), n = s^2 (the
/// caller rounds n down), shuffled.
static int gen_lattice(double *p, int32_t n, int dim, double scale, uint64_t *s)
{
    (void)dim;
    (void)scale;
    int32_t side = (int32_t)sqrt((double)n);
    while ((int64_t)side * side > n) side--;
    for (int32_t i = 0; i < n; i++) {
        p[2 * (size_t)i] = 1e6 + (double)(i % side);
        p[2 * (size_t)i + 1] = 1e6 + (double)(i / side);
    }
    shuffle(p, n, 2, s);
    return 0;
}

/// The periodic sets' generators (unit box, every axis wraps): one Gaussian clump of sigma 0.01
/// about the origin (the set's offset is its centre), and uniform over [0, 1)^dim. nbb_corpus_make
/// wraps and rounds them onto multiples of 2^-32 after the offset.
static int gen_pclump(double *p, int32_t n, int dim, double scale, uint64_t *s)
{
    (void)scale;
    for (size_t i = 0; i < (size_t)n * (size_t)dim; i++) p[i] = 0.01 * gauss(s);
    return 0;
}

static int gen_puniform(double *p, int32_t n, int dim, double scale, uint64_t *s)
{
    (void)scale;
    for (size_t i = 0; i < (size_t)n * (size_t)dim; i++) p[i] = nbr_unit(s);
    return 0;
}

/// x wrapped into [0, 1) and rounded down onto a multiple of 2^-32.
static double unit_fixed(double x)
{
    x -= floor(x);
    x = floor(x * 4294967296.0) / 4294967296.0;
    return x < 1.0 ? x : 0.0; // x - floor(x) rounds up to 1 for a tiny negative x
}

// ---- the table of sets ----

enum { SIZES_NONE, SIZES_NORMAL, SIZES_MIXED };

typedef struct SetSpec {
    const char *name;
    const char *about;
    int dim;
    int sizes; // SIZES_NONE: points; else rectangles, sized as make_rects says
    GenFn *gen;
    uint64_t seed;    // the set's own seed (gen_data's for its older sets)
    double offset[3]; // added to every coordinate after the generator
} SetSpec;

#define NBB_SEED(k) (0x636f72707573ULL ^ ((uint64_t)(k) << 40)) // "corpus"

static const SetSpec sets[] = {
    {"uniform2d",
     "uniform, density 1 (gen_data's)",
     2,
     SIZES_NONE,
     gen_uniform,
     0x6e6561726279ULL ^ 2,
     {0, 0, 0}},
    {"uniform3d",
     "uniform in a cube, density 1 (gen_data's)",
     3,
     SIZES_NONE,
     gen_uniform,
     0x6e6561726279ULL ^ 3,
     {0, 0, 0}},
    {"blobs2d",
     "Gaussian blobs of log-normal sizes",
     2,
     SIZES_NONE,
     gen_blobs,
     NBB_SEED(1),
     {0, 0, 0}},
    {"powerlaw3d",
     "power-law clusters, 1/d^2 profiles",
     3,
     SIZES_NONE,
     gen_powerlaw3d,
     NBB_SEED(2),
     {0, 0, 0}},
    {"sphere3d",
     "towns on a sphere of radius 6371",
     3,
     SIZES_NONE,
     gen_sphere,
     NBB_SEED(3),
     {0, 0, 0}},
    {"roads2d", "points along line segments", 2, SIZES_NONE, gen_roads, NBB_SEED(4), {0, 0, 0}},
    {"lidar3d",
     "a scanned surface: ground, walls, crowns",
     3,
     SIZES_NONE,
     gen_lidar,
     NBB_SEED(5),
     {0, 0, 0}},
    {"tail3d",
     "heavy tail about one centre: log-normal distances",
     3,
     SIZES_NONE,
     gen_tail3d,
     NBB_SEED(14),
     {0, 0, 0}},
    {"utm2d",
     "blobs2d at UTM-like (5e5, 4e6)",
     2,
     SIZES_NONE,
     gen_blobs,
     NBB_SEED(1),
     {5e5, 4e6, 0}},
    {"screen2d",
     "uniform over [0, 1920] x [0, 1080]",
     2,
     SIZES_NONE,
     gen_screen,
     NBB_SEED(6),
     {0, 0, 0}},
    {"offset2d",
     "uniform2d moved by (1e9, 1e9)",
     2,
     SIZES_NONE,
     gen_uniform,
     0x6e6561726279ULL ^ 2,
     {1e9, 1e9, 0}},
    {"dups2d",
     "heavy duplicates: ~4 copies a site",
     2,
     SIZES_NONE,
     gen_dups,
     NBB_SEED(7),
     {0, 0, 0}},
    {"rect_uniform",
     "uniform centres over [0, 2 sqrt(N)]^2",
     2,
     SIZES_NORMAL,
     gen_uniform,
     NBB_SEED(8),
     {0, 0, 0}},
    {"rect_blobs", "centres in Gaussian blobs", 2, SIZES_NORMAL, gen_blobs, NBB_SEED(9), {0, 0, 0}},
    {"rect_roads", "centres along roads", 2, SIZES_NORMAL, gen_roads, NBB_SEED(10), {0, 0, 0}},
    {"rect_utm",
     "rect_blobs at UTM-like (5e5, 4e6)",
     2,
     SIZES_NORMAL,
     gen_blobs,
     NBB_SEED(9),
     {5e5, 4e6, 0}},
    {"rect_screen",
     "centres over [0, 1920] x [0, 1080]",
     2,
     SIZES_NORMAL,
     gen_screen,
     NBB_SEED(11),
     {0, 0, 0}},
    {"rect_offset",
     "rect_uniform moved by (1e9, 1e9)",
     2,
     SIZES_NORMAL,
     gen_uniform,
     NBB_SEED(8),
     {1e9, 1e9, 0}},
    {"rect_neg3e7",
     "rect_uniform moved by (-3e7, -3e7)",
     2,
     SIZES_NORMAL,
     gen_uniform,
     NBB_SEED(8),
     {-3e7, -3e7, 0}},
    {"rect_dups",
     "heavy duplicates: ~4 copies a rectangle",
     2,
     SIZES_NORMAL,
     gen_dups,
     NBB_SEED(12),
     {0, 0, 0}},
    {"rect_mixed",
     "uniform centres, sizes 0.01 to 1000 (Pareto)",
     2,
     SIZES_MIXED,
     gen_uniform,
     NBB_SEED(13),
     {0, 0, 0}},
    // the benchmarks' older sets (bench/gen_data.c), not in the corpus
    {"clusters2d",
     "200 Gaussian clusters (gen_data's)",
     2,
     SIZES_NONE,
     gen_clusters200,
     0x6e6561726279ULL ^ 7,
     {0, 0, 0}},
    {"lattice2d",
     "the integer lattice at (1e6, 1e6) (gen_data's)",
     2,
     SIZES_NONE,
     gen_lattice,
     0x6e6561726279ULL ^ 5,
     {0, 0, 0}},
    // the periodic sets of the scenarios (period 1), not in the corpus
    {"puniform2d",
     "uniform over the periodic unit square",
     2,
     SIZES_NONE,
     gen_puniform,
     NBB_SEED(20),
     {0, 0, 0}},
    {"puniform3d",
     "uniform over the periodic unit cube",
     3,
     SIZES_NONE,
     gen_puniform,
     NBB_SEED(21),
     {0, 0, 0}},
    {"pclump2d",
     "one Gaussian clump (sigma 0.01) mid-box, periodic",
     2,
     SIZES_NONE,
     gen_pclump,
     NBB_SEED(22),
     {0.5, 0.5, 0}},
    {"pclump3d",
     "one Gaussian clump (sigma 0.01) mid-box, periodic",
     3,
     SIZES_NONE,
     gen_pclump,
     NBB_SEED(23),
     {0.5, 0.5, 0.5}},
    {"pwrap2d",
     "the clump on the corner: across the wrap on every axis",
     2,
     SIZES_NONE,
     gen_pclump,
     NBB_SEED(24),
     {0, 0, 0}},
    {"pwrap3d",
     "the clump on the corner: across the wrap on every axis",
     3,
     SIZES_NONE,
     gen_pclump,
     NBB_SEED(25),
     {0, 0, 0}},
};

enum {
    ALL_SETS = (int)(sizeof sets / sizeof sets[0]),
    PERIODIC_SETS = 6,
    CORPUS_SETS = ALL_SETS - 2 - PERIODIC_SETS
};

static int is_periodic(const SetSpec *spec)
{
    return spec->gen == gen_pclump || spec->gen == gen_puniform;
}

static double radius_in(const double *p, int32_t n, int dim, double neighbours, double period);

int nbb_corpus_count(void)
{
    return CORPUS_SETS;
}

int nbb_corpus_count_all(void)
{
    return ALL_SETS;
}

int nbb_corpus_find(const char *name)
{
    for (int k = 0; k < ALL_SETS; k++)
        if (strcmp(sets[k].name, name) == 0) return k;
    return -1;
}

const char *nbb_corpus_name(int index)
{
    return index >= 0 && index < ALL_SETS ? sets[index].name : NULL;
}

int nbb_corpus_dim(int index)
{
    return index >= 0 && index < ALL_SETS ? sets[index].dim : 0;
}

int nbb_corpus_is_rects(int index)
{
    return index >= 0 && index < ALL_SETS && sets[index].sizes != SIZES_NONE;
}

/// The rectangles around the n centres c[2n], into r[4n]: sides log-uniform in [0.1, 10) per
/// axis, or (SIZES_MIXED) a size from 0.01 to 1000 with a Pareto tail, s = 0.01 u^(-1/0.7)
/// capped at 1000 (half under 0.03, 1 in 600 over 100, 1 in 3000 at 1000, as map features or
/// scene objects are), and an aspect ratio log-uniform in [0.5, 2]. The sides come from a
/// stream seeded by the centre's bits and `seed`, so equal centres (the duplicates set) make
/// equal rectangles.
static void make_rects(const double *c, int32_t n, int sizes, uint64_t seed, double *r)
{
    for (int32_t i = 0; i < n; i++) {
        double x = c[2 * (size_t)i], y = c[2 * (size_t)i + 1];
        uint64_t bx, by;
        memcpy(&bx, &x, sizeof bx);
        memcpy(&by, &y, sizeof by);
        uint64_t s = seed ^ bx;
        s = nbr_next(&s) ^ by;
        double wx, wy;
        if (sizes == SIZES_MIXED) {
            double size = 0.01 * pow(1.0 - nbr_unit(&s), -1.0 / 0.7);
            double aspect = pow(2.0, 2.0 * nbr_unit(&s) - 1.0);
            size = size < 1000.0 ? size : 1000.0;
            wx = size * aspect;
            wy = size / aspect;
        } else {
            wx = 0.1 * pow(100.0, nbr_unit(&s));
            wy = 0.1 * pow(100.0, nbr_unit(&s));
        }
        r[4 * (size_t)i] = x - 0.5 * wx;
        r[4 * (size_t)i + 1] = y - 0.5 * wy;
        r[4 * (size_t)i + 2] = x + 0.5 * wx;
        r[4 * (size_t)i + 3] = y + 0.5 * wy;
    }
}

int nbb_corpus_make(int index, int32_t n, uint64_t seed, nbbCorpus *out)
{
    memset(out, 0, sizeof *out);
    if (index < 0 || index >= ALL_SETS || n < 1) return -1;
    const SetSpec *spec = &sets[index];
    if (spec->gen == gen_lattice) { // a whole square
        int32_t side = (int32_t)sqrt((double)n);
        while ((int64_t)side * side > n) side--;
        n = side * side;
    }
    int rects = spec->sizes != SIZES_NONE;
    uint64_t s = spec->seed ^ seed;
    double *p = malloc(sizeof(double) * (size_t)spec->dim * (size_t)n);
    double *r = rects ? malloc(sizeof(double) * 4 * (size_t)n) : NULL;
    if (p == NULL || (rects && r == NULL) || spec->gen(p, n, spec->dim, rects ? 2.0 : 1.0, &s)) {
        free(p);
        free(r);
        return 1;
    }
    const double period = is_periodic(spec) ? 1.0 : 0.0;
    for (size_t i = 0; i < (size_t)n; i++)
        for (int d = 0; d < spec->dim; d++) {
            double *x = p + i * (size_t)spec->dim + d;
            *x += spec->offset[d];
            if (period > 0.0) *x = unit_fixed(*x);
        }
    out->period = period;
    out->name = spec->name;
    out->about = spec->about;
    out->dim = spec->dim;
    out->rects = rects;
    out->n = n;
    if (rects) {
        make_rects(p, n, spec->sizes, s, r);
        free(p);
        out->data = r;
    } else {
        out->data = p;
        out->radius = radius_in(p, n, spec->dim, NBB_CORPUS_NEIGHBOURS, period);
    }
    return 0;
}

void nbb_corpus_free(nbbCorpus *c)
{
    free(c->data);
    memset(c, 0, sizeof *c);
}

/// Sifts h[at] down a max-heap of `len` entries.
static void heap_down(double *h, int64_t len, int64_t at)
{
    for (;;) {
        int64_t big = at, l = 2 * at + 1, r = l + 1;
        if (l < len && h[l] > h[big]) big = l;
        if (r < len && h[r] > h[big]) big = r;
        if (big == at) return;
        double t = h[at];
        h[at] = h[big];
        h[big] = t;
        at = big;
    }
}

double nbb_corpus_radius(const double *p, int32_t n, int dim, double neighbours)
{
    return radius_in(p, n, dim, neighbours, 0.0);
}

/// nbb_corpus_radius, by the minimum image when period > 0 (every axis wraps).
static double radius_in(const double *p, int32_t n, int dim, double neighbours, double period)
{
    if (n < 2) return 0.0;
    // The points are in random order, so the first m are a uniform subsample. Among them, a
    // mean of `neighbours` in the whole set means about neighbours * m (m - 1) / (2 (n - 1))
    // pairs: the k-th smallest of their squared distances is r^2.
    int64_t m = n < 4000 ? n : 4000;
    double want = neighbours * (double)m * (double)(m - 1) / (2.0 * (double)(n - 1));
    int64_t k = (int64_t)(want + 0.5);
    if (k < 1) k = 1;
    if (k > m * (m - 1) / 2) k = m * (m - 1) / 2;
    double *heap = malloc(sizeof(double) * (size_t)k);
    if (heap == NULL) return 0.0;
    int64_t len = 0;
    for (int64_t i = 0; i < m; i++) {
        const double *a = p + i * dim;
        for (int64_t j = i + 1; j < m; j++) {
            const double *b = p + j * dim;
            double d2 = 0.0;
            for (int d = 0; d < dim; d++) {
                double t = fabs(a[d] - b[d]);
                t = period > 0.0 && period - t < t ? period - t : t;
                d2 += t * t;
            }
            if (len < k) {
                heap[len++] = d2;
                if (len == k)
                    for (int64_t at = k / 2; at-- > 0;) heap_down(heap, k, at);
            } else if (d2 < heap[0]) {
                heap[0] = d2;
                heap_down(heap, k, 0);
            }
        }
    }
    double r2 = heap[0];
    if (len < k) // fewer pairs than k: the largest of them
        for (int64_t i = 1; i < len; i++) r2 = heap[i] > r2 ? heap[i] : r2;
    free(heap);
    return sqrt(r2);
}

void nbb_corpus_windows(const nbbCorpus *c, double *w, int32_t m, uint64_t seed)
{
    uint64_t s = NBB_SEED(100) ^ seed;
    for (int32_t k = 0; k < m; k++) {
        const double *r = c->data + 4 * (size_t)(nbr_next(&s) % (uint64_t)c->n);
        double cx = 0.5 * (r[0] + r[2]) + 10.0 * (nbr_unit(&s) - 0.5);
        double cy = 0.5 * (r[1] + r[3]) + 10.0 * (nbr_unit(&s) - 0.5);
        double wx = 5.0 + 15.0 * nbr_unit(&s), wy = 5.0 + 15.0 * nbr_unit(&s);
        w[4 * (size_t)k] = cx - 0.5 * wx;
        w[4 * (size_t)k + 1] = cy - 0.5 * wy;
        w[4 * (size_t)k + 2] = cx + 0.5 * wx;
        w[4 * (size_t)k + 3] = cy + 0.5 * wy;
    }
}

void nbb_corpus_step(double *r, int32_t n, uint64_t *state)
{
    for (int32_t i = 0; i < n; i++) {
        double dx = (2.0 * nbr_unit(state) - 1.0) * NBR_STEP;
        double dy = (2.0 * nbr_unit(state) - 1.0) * NBR_STEP;
        r[4 * (size_t)i] += dx;
        r[4 * (size_t)i + 1] += dy;
        r[4 * (size_t)i + 2] += dx;
        r[4 * (size_t)i + 3] += dy;
    }
}

int nbb_corpus_unwrap(const nbbCorpus *c, double *out)
{
    int k = c->name != NULL ? nbb_corpus_find(c->name) : -1;
    if (k < 0 || sets[k].gen != gen_pclump) return -1;
    for (size_t i = 0; i < (size_t)c->n; i++)
        for (int d = 0; d < c->dim; d++) {
            // 0.5 - centre is a multiple of 2^-32 (the centres are 0 and 0.5), so is the sum
            const double x = c->data[i * (size_t)c->dim + d] + (0.5 - sets[k].offset[d]);
            out[i * (size_t)c->dim + d] = x >= 1.0 ? x - 1.0 : x < 0.0 ? x + 1.0 : x;
        }
    return 0;
}

/// The bounding box of point set c into lo[dim], hi[dim].
static void bounds(const nbbCorpus *c, double *lo, double *hi)
{
    for (int d = 0; d < c->dim; d++) {
        lo[d] = (double)INFINITY;
        hi[d] = -(double)INFINITY;
    }
    for (size_t i = 0; i < (size_t)c->n; i++)
        for (int d = 0; d < c->dim; d++) {
            const double x = c->data[i * (size_t)c->dim + d];
            lo[d] = x < lo[d] ? x : lo[d];
            hi[d] = x > hi[d] ? x : hi[d];
        }
}

void nbb_corpus_far_queries(const nbbCorpus *c, int along_axis, double *q, int32_t m, uint64_t seed)
{
    double lo[3], hi[3], w = 0.0;
    bounds(c, lo, hi);
    for (int d = 0; d < c->dim; d++) w = hi[d] - lo[d] > w ? hi[d] - lo[d] : w;
    uint64_t s = NBB_SEED(101) ^ seed;
    for (int32_t k = 0; k < m; k++) {
        double *qk = q + (size_t)k * c->dim;
        for (int d = 0; d < c->dim; d++) qk[d] = lo[d] + (hi[d] - lo[d]) * nbr_unit(&s);
        if (along_axis) {
            const int a = (int)(nbr_next(&s) % (uint64_t)c->dim);
            qk[a] += (nbr_unit(&s) < 0.5 ? -1000.0 : 1000.0) * w;
            continue;
        }
        double v[3];
        if (c->dim == 3) {
            unit_vector(&s, v);
        } else {
            const double a = 2.0 * nbb_pi * nbr_unit(&s);
            v[0] = cos(a);
            v[1] = sin(a);
        }
        for (int d = 0; d < c->dim; d++) qk[d] += 1000.0 * w * v[d];
    }
}

void nbb_corpus_radii(const nbbCorpus *c, double *radii, int m)
{
    double lo[3], hi[3], diag2 = 0.0;
    bounds(c, lo, hi);
    for (int d = 0; d < c->dim; d++) diag2 += (hi[d] - lo[d]) * (hi[d] - lo[d]);
    const double diag = sqrt(diag2);
    for (int k = 0; k < m; k++)
        radii[k] = m > 1 ? c->radius * pow(diag / c->radius, k / (m - 1.0)) : c->radius;
}

static const nbbScenario scenarios[] = {
    {"far", "uniform2d", NULL, 8},
    {"far", "uniform3d", NULL, 8},
    {"far", "blobs2d", NULL, 8},
    {"far", "powerlaw3d", NULL, 8},
    {"axis", "uniform2d", NULL, 8},
    {"axis", "uniform3d", NULL, 8},
    {"axis", "blobs2d", NULL, 8},
    {"axis", "powerlaw3d", NULL, 8},
    {"periodic", "puniform2d", "puniform2d", 10},
    {"periodic", "pclump2d", "puniform2d", 10},
    {"periodic", "pwrap2d", "puniform2d", 10},
    {"periodic", "puniform3d", "puniform3d", 10},
    {"periodic", "pclump3d", "puniform3d", 10},
    {"periodic", "pwrap3d", "puniform3d", 10},
    {"corr", "uniform3d", NULL, 20},
    {"corr", "powerlaw3d", NULL, 20},
    {"corr", "blobs2d", NULL, 20},
};

int nbb_scenario_count(void)
{
    return (int)(sizeof scenarios / sizeof scenarios[0]);
}

const nbbScenario *nbb_scenario(int k)
{
    return k >= 0 && k < nbb_scenario_count() ? &scenarios[k] : NULL;
}

int32_t nbb_scenario_n(const nbbScenario *s, int32_t corpus_n)
{
    const int32_t n = corpus_n / s->divisor;
    return n > 1000 ? n : 1000;
}
