// SPDX-License-Identifier: MIT
// Writes the benchmark data sets as raw little-endian float64 files of interleaved coordinates
// (x0 y0 [z0] x1 y1 ...), from a fixed-seed generator, so every peer reads identical points.
//
//   gen_data SET N OUT.f64
//
//   uniform2d   N points uniform in a square of side sqrt(N): density 1 (N = 1M: side 1000)
//   uniform3d   N points uniform in a cube of side cbrt(N): density 1 (N = 1M: side 100)
//   lattice2d   the integer lattice {0..s-1}^2 + (1e6, 1e6), s = floor(sqrt(N)), shuffled: with
//               r = 1 every pair is exactly r apart (d2 == r*r in double), so it checks that
//               every peer counts boundary pairs (distance <= r), far from the origin
//   clusters2d  N points in 200 Gaussian clusters of N/200 points each; each cluster's sigma is
//               log-uniform in [NBB_SIGMA_MIN, 100 * NBB_SIGMA_MIN] (two decades), centres
//               uniform in a square of side NBB_CLUSTER_SIDE. With N = 1M and r = 1 this gives
//               a few hundred million pairs, most of them in the tightest clusters.
//
// The generator is splitmix64 (a 64-bit counter through a fixed mixing function), seeded per
// set; Gaussians come from the Box-Muller transform. Points are written in generation order,
// which is random in space: a structure gets no locality it did not build itself.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBB_CLUSTERS 200
#define NBB_SIGMA_MIN 0.5
#define NBB_SIGMA_DECADES 2.0
#define NBB_CLUSTER_SIDE 4000.0

static const double nbb_pi = 3.14159265358979323846;

typedef struct Rng {
    uint64_t state;
} Rng;

static uint64_t rng_next(Rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// Uniform in [0, 1), 53 random bits.
static double rng_unit(Rng *r)
{
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/// Standard normal pair by Box-Muller; u1 in (0, 1] so the log is finite.
static void rng_gauss2(Rng *r, double *g0, double *g1)
{
    double u1 = 1.0 - rng_unit(r);
    double u2 = rng_unit(r);
    double m = sqrt(-2.0 * log(u1));
    *g0 = m * cos(2.0 * nbb_pi * u2);
    *g1 = m * sin(2.0 * nbb_pi * u2);
}

/// Fisher-Yates shuffle of n 2D points.
static void shuffle2(double *p, long n, Rng *rng)
{
    for (long k = n - 1; k > 0; k--) {
        long j = (long)(rng_next(rng) % (uint64_t)(k + 1));
        double tx = p[2 * k];
        double ty = p[2 * k + 1];
        p[2 * k] = p[2 * j];
        p[2 * k + 1] = p[2 * j + 1];
        p[2 * j] = tx;
        p[2 * j + 1] = ty;
    }
}

static int write_all(const char *path, const double *p, size_t count)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        fprintf(stderr, "gen_data: cannot create %s\n", path);
        return 1;
    }
    size_t w = fwrite(p, sizeof(double), count, f);
    if (fclose(f) != 0 || w != count) {
        fprintf(stderr, "gen_data: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: gen_data uniform2d|uniform3d|clusters2d|lattice2d N OUT.f64\n");
        return 2;
    }
    const char *set = argv[1];
    long n = strtol(argv[2], NULL, 10);
    if (n < NBB_CLUSTERS || n > 100000000) {
        fprintf(stderr, "gen_data: N must be in [%d, 1e8]\n", NBB_CLUSTERS);
        return 2;
    }
    // The files are little-endian float64; refuse to write anything else.
    const uint16_t probe = 1;
    if (*(const unsigned char *)&probe != 1) {
        fprintf(stderr, "gen_data: big-endian hosts are not supported\n");
        return 2;
    }
    int dim = strcmp(set, "uniform3d") == 0 ? 3 : 2;
    if (strcmp(set, "lattice2d") == 0) {
        long s = (long)sqrt((double)n);
        while (s * s > n) s--;
        while ((s + 1) * (s + 1) <= n) s++;
        n = s * s;
    }
    double *p = malloc((size_t)n * (size_t)dim * sizeof(double));
    if (p == NULL) return 1;
    Rng rng;
    if (strcmp(set, "uniform2d") == 0) {
        rng.state = 0x6e6561726279ULL ^ 2; // "nearby" ^ set
        double side = sqrt((double)n);
        for (long i = 0; i < 2 * n; i++) p[i] = rng_unit(&rng) * side;
    } else if (strcmp(set, "uniform3d") == 0) {
        rng.state = 0x6e6561726279ULL ^ 3;
        double side = cbrt((double)n);
        for (long i = 0; i < 3 * n; i++) p[i] = rng_unit(&rng) * side;
    } else if (strcmp(set, "lattice2d") == 0) {
        rng.state = 0x6e6561726279ULL ^ 5;
        long s = (long)sqrt((double)n);
        for (long i = 0; i < n; i++) {
            p[2 * i] = 1e6 + (double)(i % s);
            p[2 * i + 1] = 1e6 + (double)(i / s);
        }
        shuffle2(p, n, &rng);
    } else if (strcmp(set, "clusters2d") == 0) {
        rng.state = 0x6e6561726279ULL ^ 7;
        long per = n / NBB_CLUSTERS;
        long i = 0;
        for (int c = 0; c < NBB_CLUSTERS; c++) {
            double cx = rng_unit(&rng) * NBB_CLUSTER_SIDE;
            double cy = rng_unit(&rng) * NBB_CLUSTER_SIDE;
            double sigma = NBB_SIGMA_MIN * pow(10.0, NBB_SIGMA_DECADES * rng_unit(&rng));
            long count = c == NBB_CLUSTERS - 1 ? n - i : per;
            for (long k = 0; k < count; k++, i++) {
                double g0;
                double g1;
                rng_gauss2(&rng, &g0, &g1);
                p[2 * i] = cx + sigma * g0;
                p[2 * i + 1] = cy + sigma * g1;
            }
        }
        shuffle2(p, n, &rng); // so the file is not sorted by cluster
    } else {
        fprintf(stderr, "gen_data: unknown set '%s'\n", set);
        free(p);
        return 2;
    }
    int rc = write_all(argv[3], p, (size_t)n * (size_t)dim);
    free(p);
    return rc;
}
