// SPDX-License-Identifier: MIT
// The spatial hash filled with a lattice in order against the same points in random order:
//   build/bench/hash_fill 200000 [reserve] [ORDER]
// inserts a lattice of N points (cells of 1, one point a cell: a square in 2D, a cube in 3D)
// with nb_hash_insert, user value its index, in each order: rows up, rows down (from the top),
// columns, 3D layers, random 2D, random 3D; with `reserve`, capacity_hint = N. For each order it
// prints the median thread CPU time of 3 fills into a fresh hash, the relayouts a fill made, the
// most spare positions left in one cell, and after the fill the thread CPU time of
// nb_hash_count_pairs at r = 1 and of radius queries at r = 1.5 from every third lattice point
// (the medians of 3). With ORDER (rows, down, columns, layers, random2d, random3d) only that
// order, filled once, for callgrind:
//   valgrind --tool=callgrind --toggle-collect=fill build/bench/hash_fill 200000 0 rows
// Not part of nearby (it reads the hash's internal counters).
#include <nearby/hash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "hash_stats.h"

enum { ROUNDS = 3 };

static const char *const order_names[] = {"rows",   "down",     "columns",
                                          "layers", "random2d", "random3d"};
enum { NORDERS = (int)(sizeof order_names / sizeof order_names[0]) };

static int64_t cpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int dim_of(int order)
{
    return order == 3 || order == 5 ? 3 : 2;
}

// The lattice's points in the order's order (3 doubles each), and in *rowwise the same points
// in row order (the queries' centres).
static double *lattice(int order, int32_t n, double **rowwise)
{
    const int dim = dim_of(order);
    int32_t side = 1;
    while ((dim == 2 ? (int64_t)side * side : (int64_t)side * side * side) < n) side++;
    double *p = malloc((size_t)n * 3 * sizeof *p), *q = malloc((size_t)n * 3 * sizeof *q);
    if (p == NULL || q == NULL) exit(2);
    for (int32_t i = 0; i < n; i++) {
        const int32_t u = i % side, v = i / side % side, w = i / side / side;
        double *a = p + 3 * (size_t)i, *b = q + 3 * (size_t)i;
        b[0] = u;
        b[1] = v;
        b[2] = dim == 3 ? w : 0;
        a[0] = order == 2 ? v : u;
        a[1] = order == 1 ? side - 1 - v : order == 2 ? u : v;
        a[2] = b[2];
    }
    if (order >= 4)
        for (int32_t i = n - 1; i > 0; i--) {
            const int32_t j = (int32_t)(next_random() % (uint64_t)(i + 1));
            double t[3];
            memcpy(t, p + 3 * (size_t)i, sizeof t);
            memcpy(p + 3 * (size_t)i, p + 3 * (size_t)j, sizeof t);
            memcpy(p + 3 * (size_t)j, t, sizeof t);
        }
    *rowwise = q;
    return p;
}

// A fresh hash filled with p[0, n) in order (the function callgrind counts).
__attribute__((noinline)) static nbHash *fill(const double *p, int32_t n, int dim, bool reserve)
{
    nbHashDesc d = {0};
    d.dim = dim;
    d.cell_size = 1.0;
    if (reserve) d.capacity_hint = n;
    nbHash *h = NULL;
    if (nb_hash_create(&d, &h) != NB_OK) exit(2);
    for (int32_t i = 0; i < n; i++) {
        nbHandle handle;
        if (nb_hash_insert(h, p + 3 * (size_t)i, i, NB_FILTER_ALL, &handle) != NB_OK) {
            fprintf(stderr, "hash_fill: insert %d failed\n", (int)i);
            exit(1);
        }
    }
    return h;
}

static double median_ms(int64_t *t)
{
    int64_t mn, md;
    nbb_stats(t, ROUNDS, &mn, &md);
    return (double)md / 1e6;
}

static void run(int order, int32_t n, bool reserve)
{
    const int dim = dim_of(order);
    double *rowwise, *p = lattice(order, n, &rowwise);
    int64_t tf[ROUNDS], tp[ROUNDS], tq[ROUNDS], pairs = 0, hits = 0;
    nbiHashStats st;
    nbHash *h = NULL;
    for (int r = 0; r < ROUNDS; r++) {
        if (h != NULL) nb_hash_destroy(h);
        const int64_t t0 = cpu_now_ns();
        h = fill(p, n, dim, reserve);
        tf[r] = cpu_now_ns() - t0;
    }
    nbi_hash_stats(h, &st);
    for (int r = 0; r < ROUNDS; r++) {
        int64_t t0 = cpu_now_ns();
        nb_hash_count_pairs(h, 1.0, &pairs);
        tp[r] = cpu_now_ns() - t0;
        nbHit out[64];
        hits = 0;
        t0 = cpu_now_ns();
        for (int32_t i = 0; i < n; i += 3) {
            int32_t found = 0;
            nb_hash_query_radius(h, rowwise + 3 * (size_t)i, 1.5, NB_FILTER_ALL, out, 64, &found);
            hits += found;
        }
        tq[r] = cpu_now_ns() - t0;
    }
    printf("| %s%s | %d | %.1f | %lld | %d | %.2f | %.2f |\n", order_names[order],
           reserve ? ", reserved" : "", (int)n, median_ms(tf), (long long)st.relayouts,
           (int)st.max_slack, median_ms(tp), median_ms(tq));
    if (pairs <= 0 || hits <= 0) fprintf(stderr, "hash_fill: nothing found\n");
    nb_hash_destroy(h);
    free(p);
    free(rowwise);
}

int main(int argc, char **argv)
{
    const int32_t n = argc > 1 ? atoi(argv[1]) : 200000;
    const bool reserve = argc > 2 && atoi(argv[2]) != 0;
    if (n < 2) {
        fprintf(stderr, "usage: hash_fill N [reserve 0|1] [ORDER]\n");
        return 2;
    }
    if (argc > 3) {
        for (int o = 0; o < NORDERS; o++) {
            if (strcmp(argv[3], order_names[o]) != 0) continue;
            double *rowwise, *p = lattice(o, n, &rowwise);
            nbHash *h = fill(p, n, dim_of(o), reserve);
            nbiHashStats st;
            nbi_hash_stats(h, &st);
            printf("%s n=%d relayouts=%lld max_slack=%d\n", order_names[o], (int)n,
                   (long long)st.relayouts, (int)st.max_slack);
            nb_hash_destroy(h);
            free(p);
            free(rowwise);
            return 0;
        }
        fprintf(stderr, "hash_fill: unknown order %s\n", argv[3]);
        return 2;
    }
    printf("| order | N | fill ms | relayouts | most spare in a cell | pairs ms | queries ms |\n");
    printf("|---|--:|--:|--:|--:|--:|--:|\n");
    for (int o = 0; o < NORDERS; o++) run(o, n, reserve);
    return 0;
}
