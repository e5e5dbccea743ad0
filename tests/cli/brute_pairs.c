// SPDX-License-Identifier: MIT
// An independent oracle for the CLI consistency test: generates random points, writes them as
// CSV and raw float64, and writes the answers `nearby` must give, found by brute force over
// every pair. It shares no code with the tool or the library.
//
//   brute_pairs SEED N DIM PREFIX R1 [R2 ...]
// writes PREFIX.csv, PREFIX.f64, PREFIX.at (the query point, "x,y[,z]"), PREFIX.knn (the
// 7 nearest to it, "index,distance"), and for each radius Rk (k = 1, 2, ...):
// PREFIX.rk.pairs ("i,j" sorted by i then j) and PREFIX.rk.within (indices, ascending).
//
//   brute_pairs count FILE N DIM R
// reads FILE, N points of DIM raw little-endian doubles (as `nearby demo --save-points`
// writes them), and prints the number of pairs at distance <= R, counted over every pair.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KNN_K 7

// xorshift64* (Vigna): a different generator from the one in `nearby demo`.
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dULL;
}

static double uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(next_random(s) >> 11) / 9007199254740992.0);
}

static double dist2(const double *a, const double *b, int dim)
{
    double s = 0.0;
    for (int d = 0; d < dim; d++) {
        double t = a[d] - b[d];
        s = s + t * t;
    }
    return s;
}

typedef struct Ranked {
    double d2;
    int index;
} Ranked;

static int compare_ranked(const void *a, const void *b)
{
    const Ranked *x = a;
    const Ranked *y = b;
    if (x->d2 != y->d2) return x->d2 < y->d2 ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static FILE *open_out(const char *prefix, const char *suffix)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s", prefix, suffix);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    return f;
}

static void close_out(FILE *f)
{
    if (fclose(f) != 0) {
        perror("brute_pairs: write");
        exit(1);
    }
}

// `brute_pairs count FILE N DIM R`: the pairs within R among the points in FILE.
static int count_mode(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: brute_pairs count FILE N DIM R\n");
        return 2;
    }
    const char *path = argv[2];
    long n = atol(argv[3]);
    int dim = atoi(argv[4]);
    double r = strtod(argv[5], NULL);
    if (n < 0 || (dim != 2 && dim != 3) || !(r >= 0.0)) {
        fprintf(stderr, "brute_pairs: bad N, DIM or R\n");
        return 2;
    }
    size_t values = (size_t)n * (size_t)dim;
    double *p = malloc(values > 0 ? values * sizeof(double) : 1);
    FILE *f = fopen(path, "rb");
    if (p == NULL || f == NULL) {
        perror(path);
        return 1;
    }
    // Decode the bytes ourselves (little-endian), independently of the tool's reader.
    for (size_t k = 0; k < values; k++) {
        uint64_t bits = 0;
        for (int b = 0; b < 8; b++) {
            int c = fgetc(f);
            if (c == EOF) {
                fprintf(stderr, "brute_pairs: %s holds fewer than %ld points\n", path, n);
                return 1;
            }
            bits |= (uint64_t)(unsigned char)c << (8 * b);
        }
        memcpy(&p[k], &bits, sizeof bits);
    }
    if (fgetc(f) != EOF) {
        fprintf(stderr, "brute_pairs: %s holds more than %ld points\n", path, n);
        return 1;
    }
    fclose(f);
    double rr = r * r;
    long long count = 0;
    for (long i = 0; i < n; i++)
        for (long j = i + 1; j < n; j++)
            count += dist2(p + (size_t)i * (size_t)dim, p + (size_t)j * (size_t)dim, dim) <= rr;
    printf("%lld\n", count);
    free(p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "count") == 0) return count_mode(argc, argv);
    if (argc < 6) {
        fprintf(stderr, "usage: brute_pairs SEED N DIM PREFIX R1 [R2 ...]\n"
                        "       brute_pairs count FILE N DIM R\n");
        return 2;
    }
    uint64_t seed = strtoull(argv[1], NULL, 10) * 0x9e3779b97f4a7c15ULL + 1;
    int n = atoi(argv[2]);
    int dim = atoi(argv[3]);
    const char *prefix = argv[4];
    if (n < 1 || (dim != 2 && dim != 3)) {
        fprintf(stderr, "brute_pairs: bad N or DIM\n");
        return 2;
    }
    double *p = malloc((size_t)n * (size_t)dim * sizeof(double));
    if (p == NULL) return 1;

    // A mix that exercises the edge cases: lattice points (distances exactly r), uniform
    // points, exact duplicates, copies offset by exactly (0.75, 1) (1.25 apart), and a far
    // cluster that makes the bounding box huge.
    for (int i = 0; i < n; i++) {
        double *q = p + (size_t)i * (size_t)dim;
        int kind = (int)(next_random(&seed) % 20);
        if (i > 0 && kind < 3) {
            memcpy(q, p + (size_t)(next_random(&seed) % (uint64_t)i) * (size_t)dim,
                   (size_t)dim * sizeof(double));
        } else if (i > 0 && kind < 5) {
            const double *src = p + (size_t)(next_random(&seed) % (uint64_t)i) * (size_t)dim;
            for (int d = 0; d < dim; d++) q[d] = src[d] + (d == 0 ? 0.75 : d == 1 ? 1.0 : 0.0);
        } else if (kind < 13) {
            for (int d = 0; d < dim; d++)
                q[d] = (double)((int)(next_random(&seed) % 41) - 20) * 0.25;
        } else if (kind < 18) {
            for (int d = 0; d < dim; d++) q[d] = uniform(&seed, -5.0, 5.0);
        } else {
            for (int d = 0; d < dim; d++) q[d] = 1e6 + uniform(&seed, 0.0, 4.0);
        }
    }

    FILE *csv = open_out(prefix, ".csv");
    FILE *raw = open_out(prefix, ".f64");
    for (int i = 0; i < n; i++) {
        for (int d = 0; d < dim; d++) {
            double v = p[(size_t)i * (size_t)dim + (size_t)d];
            fprintf(csv, d == 0 ? "%.17g" : ",%.17g", v);
            uint64_t bits;
            memcpy(&bits, &v, sizeof bits);
            for (int b = 0; b < 8; b++) fputc((int)((bits >> (8 * b)) & 0xff), raw);
        }
        fputc('\n', csv);
    }
    close_out(csv);
    close_out(raw);

    // The query point: point 0 itself, so lattice ties at exact distances are likely.
    const double *c = p;
    FILE *at = open_out(prefix, ".at");
    for (int d = 0; d < dim; d++) fprintf(at, d == 0 ? "%.17g" : ",%.17g", c[d]);
    close_out(at);

    Ranked *rank = malloc((size_t)n * sizeof(Ranked));
    if (rank == NULL) return 1;
    for (int i = 0; i < n; i++) {
        rank[i].d2 = dist2(p + (size_t)i * (size_t)dim, c, dim);
        rank[i].index = i;
    }
    qsort(rank, (size_t)n, sizeof(Ranked), compare_ranked);
    FILE *knn = open_out(prefix, ".knn");
    for (int i = 0; i < n && i < KNN_K; i++)
        fprintf(knn, "%d,%.17g\n", rank[i].index, sqrt(rank[i].d2));
    close_out(knn);

    for (int k = 5; k < argc; k++) {
        double r = strtod(argv[k], NULL);
        double rr = r * r;
        char suffix[64];
        snprintf(suffix, sizeof suffix, ".r%d.pairs", k - 4);
        FILE *pairs = open_out(prefix, suffix);
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                if (dist2(p + (size_t)i * (size_t)dim, p + (size_t)j * (size_t)dim, dim) <= rr)
                    fprintf(pairs, "%d,%d\n", i, j);
        close_out(pairs);
        snprintf(suffix, sizeof suffix, ".r%d.within", k - 4);
        FILE *within = open_out(prefix, suffix);
        for (int i = 0; i < n; i++)
            if (dist2(p + (size_t)i * (size_t)dim, c, dim) <= rr) fprintf(within, "%d\n", i);
        close_out(within);
    }
    free(rank);
    free(p);
    return 0;
}
