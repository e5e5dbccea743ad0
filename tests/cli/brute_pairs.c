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
//
//   brute_pairs cross Q NQ P NP DIM R
// prints "q,i" for every point q of Q and i of P within R, sorted by q then i (what `within P
// --queries Q` and `join Q P` print); Q and P are raw float64 files as above.
//
//   brute_pairs knn Q NQ P NP DIM K [graph]
// prints "q,i,distance" for the K nearest points of P to each point q of Q, nearest first, ties
// by index; with `graph` (Q is P), each point's K nearest among the others.
//
//   brute_pairs decode FILE npy|f64|i64 COLUMNS distance|none
// prints the rows of a binary output of `nearby ... -o FILE` as the CSV the tool prints, read
// by its own decoder (a .npy header is skipped by its length field).
#include <math.h>
#include <stdbool.h>
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

// A distance as the tool prints it, found the slow, plain way: the fewest significant digits
// p whose correctly rounded "%.*e" reads back to d (17 always does), shown in fixed point for
// decimal exponents -4 to 16 and in exponent form outside, as "%.17g" would show its digits.
static void print_distance(FILE *f, double d)
{
    char e[48];
    int p = 1;
    for (; p < 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, d);
        if (strtod(e, NULL) == d) break;
    }
    snprintf(e, sizeof e, "%.*e", p - 1, d);
    const int x = atoi(strchr(e, 'e') + 1);
    if (d == 0.0 || x < -4 || x >= 17) {
        fprintf(f, "%.*g", p, d); // "%g" at p digits shows them in exponent form here
    } else if (x < p - 1) {
        fprintf(f, "%.*f", p - 1 - x, d);
    } else { // an integer: the p digits, then zeros (not the double's own last digits)
        for (const char *c = e + (e[0] == '-'); *c != 'e'; c++)
            if (*c != '.') fputc(*c, f);
        for (int z = 0; z < x - (p - 1); z++) fputc('0', f);
    }
}

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

// Reads n points of dim raw little-endian doubles from path (exactly: no more, no fewer),
// decoding the bytes ourselves, independently of the tool's reader. Exits on a problem.
static double *read_f64(const char *path, long n, int dim)
{
    size_t values = (size_t)n * (size_t)dim;
    double *p = malloc(values > 0 ? values * sizeof(double) : 1);
    FILE *f = fopen(path, "rb");
    if (p == NULL || f == NULL) {
        perror(path);
        exit(1);
    }
    for (size_t k = 0; k < values; k++) {
        uint64_t bits = 0;
        for (int b = 0; b < 8; b++) {
            int c = fgetc(f);
            if (c == EOF) {
                fprintf(stderr, "brute_pairs: %s holds fewer than %ld points\n", path, n);
                exit(1);
            }
            bits |= (uint64_t)(unsigned char)c << (8 * b);
        }
        memcpy(&p[k], &bits, sizeof bits);
    }
    if (fgetc(f) != EOF) {
        fprintf(stderr, "brute_pairs: %s holds more than %ld points\n", path, n);
        exit(1);
    }
    fclose(f);
    return p;
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
    double *p = read_f64(path, n, dim);
    double rr = r * r;
    long long count = 0;
    for (long i = 0; i < n; i++)
        for (long j = i + 1; j < n; j++)
            count += dist2(p + (size_t)i * (size_t)dim, p + (size_t)j * (size_t)dim, dim) <= rr;
    printf("%lld\n", count);
    free(p);
    return 0;
}

// `brute_pairs cross Q NQ P NP DIM R` and `brute_pairs knn Q NQ P NP DIM K [graph]`.
static int query_mode(int argc, char **argv)
{
    const bool knn = strcmp(argv[1], "knn") == 0;
    const bool graph = knn && argc == 9 && strcmp(argv[8], "graph") == 0;
    if (argc != 8 && !graph) {
        fprintf(stderr, "usage: brute_pairs cross|knn Q NQ P NP DIM R|K [graph]\n");
        return 2;
    }
    const long nq = atol(argv[3]), np = atol(argv[5]);
    const int dim = atoi(argv[6]);
    if (nq < 0 || np < 0 || (dim != 2 && dim != 3)) {
        fprintf(stderr, "brute_pairs: bad NQ, NP or DIM\n");
        return 2;
    }
    double *q = read_f64(argv[2], nq, dim);
    double *p = read_f64(argv[4], np, dim);
    Ranked *rank = malloc(((size_t)np + 1) * sizeof(Ranked));
    if (rank == NULL) return 1;
    const double r = strtod(argv[7], NULL);
    const long k = atol(argv[7]);
    for (long a = 0; a < nq; a++) {
        long m = 0;
        for (long i = 0; i < np; i++) {
            if (graph && i == a) continue;
            const double d2 = dist2(q + (size_t)a * (size_t)dim, p + (size_t)i * (size_t)dim, dim);
            if (knn || d2 <= r * r) rank[m++] = (Ranked){d2, (int)i};
        }
        if (knn) {
            qsort(rank, (size_t)m, sizeof(Ranked), compare_ranked);
            for (long t = 0; t < m && t < k; t++) {
                printf("%ld,%d,", a, rank[t].index);
                print_distance(stdout, sqrt(rank[t].d2));
                putchar('\n');
            }
        } else {
            for (long t = 0; t < m; t++) printf("%ld,%d\n", a, rank[t].index); // i ascending
        }
    }
    free(rank);
    free(q);
    free(p);
    return 0;
}

// Little-endian bytes to an unsigned integer.
static uint64_t get_le(const unsigned char *b, int bytes)
{
    uint64_t v = 0;
    for (int k = 0; k < bytes; k++) v |= (uint64_t)b[k] << (8 * k);
    return v;
}

// `brute_pairs decode FILE npy|f64|i64 COLUMNS distance|none`.
static int decode_mode(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: brute_pairs decode FILE npy|f64|i64 COLUMNS distance|none\n");
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (f == NULL) {
        perror(argv[2]);
        return 1;
    }
    const char *fmt = argv[3];
    const int cols = atoi(argv[4]);
    const bool distance = strcmp(argv[5], "distance") == 0;
    const int ints = distance ? cols - 1 : cols;
    const bool npy = strcmp(fmt, "npy") == 0, i64 = strcmp(fmt, "i64") == 0;
    long long want = -1; // the .npy header's row count
    if (npy) {           // magic (6), version (2), header length (2, version 1.0), the header
        unsigned char pre[10];
        if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY\x01\x00", 8) != 0) {
            fprintf(stderr, "brute_pairs: %s is not a version 1.0 .npy\n", argv[2]);
            return 1;
        }
        char header[65536];
        const size_t len = (size_t)get_le(pre + 8, 2);
        if (fread(header, 1, len, f) != len) return 1;
        header[len] = 0;
        const char *shape = strstr(header, "'shape': (");
        if (shape == NULL) {
            fprintf(stderr, "brute_pairs: %s: no shape\n", argv[2]);
            return 1;
        }
        want = atoll(shape + 10);
    }
    const int int_size = npy ? 4 : 8;
    long long rows = 0;
    const size_t row = (size_t)ints * (size_t)int_size + (distance ? 8u : 0u);
    unsigned char b[64];
    size_t got;
    while ((got = fread(b, 1, row, f)) == row) {
        for (int c = 0; c < ints; c++) {
            const uint64_t v = get_le(b + (size_t)c * (size_t)int_size, int_size);
            double d;
            memcpy(&d, &v, sizeof d);
            const long long x = npy   ? (long long)(int32_t)(uint32_t)v
                                : i64 ? (long long)(int64_t)v
                                      : (long long)d;
            printf(c > 0 ? ",%lld" : "%lld", x);
        }
        if (distance) {
            const uint64_t v = get_le(b + (size_t)ints * (size_t)int_size, 8);
            double d;
            memcpy(&d, &v, sizeof d);
            putchar(',');
            print_distance(stdout, d);
        }
        putchar('\n');
        rows++;
    }
    fclose(f);
    if (want >= 0 && want != rows) {
        fprintf(stderr, "brute_pairs: %s: the header says %lld rows, the data holds %lld\n",
                argv[2], want, rows);
        return 1;
    }
    if (got != 0) {
        fprintf(stderr, "brute_pairs: %s ends inside a row\n", argv[2]);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "count") == 0) return count_mode(argc, argv);
    if (argc >= 2 && (strcmp(argv[1], "cross") == 0 || strcmp(argv[1], "knn") == 0))
        return query_mode(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "decode") == 0) return decode_mode(argc, argv);
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
    for (int i = 0; i < n && i < KNN_K; i++) {
        fprintf(knn, "%d,", rank[i].index);
        print_distance(knn, sqrt(rank[i].d2));
        fputc('\n', knn);
    }
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
