// SPDX-License-Identifier: MIT
// Reordering a simulation's arrays into cell order (nb_grid_cell_order + nb_gather), measured:
// N points (uniform 2D, density 1) take a random walk for STEPS steps; each step moves every
// point, rebuilds the grid and counts the pairs within r = 1.75. Three runs on the same walk:
//   none     the arrays keep their original (random) order;
//   rowmajor every EVERY steps the arrays are reordered by nb_grid_cell_order (the grid's own
//            cell order: rows of cells, x fastest);
//   morton   the same, but cells in Morton (Z-curve) order, computed here, to compare the curve.
// Prints one CSV line per run: order,n,steps,every,build_ns_per_point (median over steps),
// pairs_ms (median), reorder_ms (median over the reorders), pairs (last step).
//   bench_reorder [N] [STEPS] [EVERY]   (defaults 1000000 100 10)
#include "bench_common.h"

#include <nearby/grid.h>

#include <math.h>

static double median(int64_t *v, int n)
{
    if (n == 0) return 0.0;
    qsort(v, (size_t)n, sizeof *v, nbb_cmp_i64);
    return (double)v[(n - 1) / 2];
}

// Uniform in [0, 1) from splitmix64.
static double unit(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

// Interleaves the low 21 bits of x and y (x in the even bits).
static uint64_t morton2(uint32_t x, uint32_t y)
{
    uint64_t k = 0;
    for (int b = 0; b < 21; b++)
        k |= (uint64_t)((x >> b) & 1u) << (2 * b) | (uint64_t)((y >> b) & 1u) << (2 * b + 1);
    return k;
}

typedef struct keyed {
    uint64_t key;
    int32_t index;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed *x = (const keyed *)a, *y = (const keyed *)b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

// The Morton order of the points' cells (cell edge `cell`, from the box's corner -half).
static void morton_order(const double *p, int32_t n, double half, double cell, keyed *k,
                         int32_t *order)
{
    for (int32_t i = 0; i < n; i++) {
        const uint32_t cx = (uint32_t)floor((p[2 * i] + half) / cell);
        const uint32_t cy = (uint32_t)floor((p[2 * i + 1] + half) / cell);
        k[i].key = morton2(cx, cy);
        k[i].index = i;
    }
    qsort(k, (size_t)n, sizeof *k, cmp_keyed);
    for (int32_t i = 0; i < n; i++) order[i] = k[i].index;
}

int main(int argc, char **argv)
{
    const int32_t n = argc > 1 ? atoi(argv[1]) : 1000000;
    const int steps = argc > 2 ? atoi(argv[2]) : 100;
    const int every = argc > 3 ? atoi(argv[3]) : 10;
    if (n < 1 || steps < 1 || steps > 10000 || every < 1) {
        fprintf(stderr, "usage: bench_reorder [N] [STEPS] [EVERY]\n");
        return 2;
    }
    const double r = 1.75, half = sqrt((double)n) / 2.0, step = 0.05;
    double *start = malloc(sizeof(double) * 2 * (size_t)n);
    double *p = malloc(sizeof(double) * 2 * (size_t)n);
    double *q = malloc(sizeof(double) * 2 * (size_t)n);
    uint64_t *seed = malloc(sizeof(uint64_t) * (size_t)n); // each point's own walk
    uint64_t *seed2 = malloc(sizeof(uint64_t) * (size_t)n);
    int32_t *order = malloc(sizeof(int32_t) * (size_t)n);
    keyed *k = malloc(sizeof(keyed) * (size_t)n);
    int64_t *t_build = malloc(sizeof(int64_t) * (size_t)steps);
    int64_t *t_pairs = malloc(sizeof(int64_t) * (size_t)steps);
    int64_t *t_order = malloc(sizeof(int64_t) * (size_t)steps);
    if (!start || !p || !q || !seed || !seed2 || !order || !k || !t_build || !t_pairs || !t_order)
        return 1;
    uint64_t s = 0x72656f72646572ULL;
    for (int32_t i = 0; i < 2 * n; i++) start[i] = (2.0 * unit(&s) - 1.0) * half;
    const char *names[3] = {"none", "rowmajor", "morton"};
    printf("order,n,steps,every,build_ns_per_point,pairs_ms,reorder_ms,pairs\n");
    for (int run = 0; run < 3; run++) {
        memcpy(p, start, sizeof(double) * 2 * (size_t)n);
        for (int32_t i = 0; i < n; i++) seed[i] = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
        nbGridDesc desc = {.dim = 2};
        nbGrid *g;
        if (nb_grid_create(&desc, &g) != NB_OK) return 1;
        int64_t pairs = 0;
        int reorders = 0;
        for (int t = 0; t < steps; t++) {
            for (int32_t i = 0; i < n; i++) { // the walk follows the point, not its slot
                for (int a = 0; a < 2; a++) {
                    double v = p[2 * i + a] + (2.0 * unit(&seed[i]) - 1.0) * step;
                    p[2 * i + a] = v > half ? 2 * half - v : v < -half ? -2 * half - v : v;
                }
            }
            const nbPoints pts = {.data = p, .count = n, .dim = 2};
            const int64_t t0 = nbb_now_ns();
            if (nb_grid_build(g, &pts, r) != NB_OK) return 1;
            const int64_t t1 = nbb_now_ns();
            if (nb_grid_count_pairs(g, r, &pairs) != NB_OK) return 1;
            t_build[t] = t1 - t0;
            t_pairs[t] = nbb_now_ns() - t1;
            if (run > 0 && t % every == every - 1) {
                const int64_t t2 = nbb_now_ns();
                if (run == 1) {
                    if (nb_grid_cell_order(g, order, n, &(int32_t){0}) != NB_OK) return 1;
                } else {
                    nbGridInfo info;
                    nb_grid_info(g, &info);
                    morton_order(p, n, half, info.cell_size, k, order);
                }
                if (nb_gather(order, n, p, 0, q, 0, 2 * sizeof(double)) != NB_OK ||
                    nb_gather(order, n, seed, 0, seed2, 0, sizeof(uint64_t)) != NB_OK)
                    return 1;
                double *tp = p;
                p = q;
                q = tp;
                uint64_t *ts = seed;
                seed = seed2;
                seed2 = ts;
                t_order[reorders++] = nbb_now_ns() - t2;
            }
        }
        printf("%s,%d,%d,%d,%.2f,%.2f,%.2f,%lld\n", names[run], (int)n, steps, every,
               median(t_build, steps) / n, median(t_pairs, steps) * 1e-6,
               median(t_order, reorders) * 1e-6, (long long)pairs);
        fflush(stdout);
        nb_grid_destroy(g);
    }
    free(start);
    free(p);
    free(q);
    free(seed);
    free(seed2);
    free(order);
    free(k);
    free(t_build);
    free(t_pairs);
    free(t_order);
    return 0;
}
