// SPDX-License-Identifier: MIT
// Writes the benchmark data sets as files, from the fixed-seed generators of corpus.c, so every
// peer (C, C++, Python) reads identical points.
//
//   gen_data SET N OUT.f64|OUT.npy       one set; its radius (rectangles: 0) on stderr
//   gen_data --corpus DIR N NRECTS       every corpus set (point sets with N points, rectangle
//                                        sets with NRECTS) as DIR/SET-N.npy, then what the
//                                        scenarios (corpus.h) run on, and the list
//                                        DIR/corpus-N-NRECTS.csv: set,kind,dim,n,radius,file,
//                                        extra; kind is points or rects for the sets, the
//                                        scenario's kind for its rows, whose extra is: far and
//                                        axis, the file of queries (SET-KIND-N.npy); periodic,
//                                        the period; corr, the file of the second draw
//                                        (SET-cross-N.npy, N/2 points)
//
// .f64: raw little-endian float64, interleaved coordinates (x0 y0 [z0] x1 y1 ...; rectangles
// minx miny maxx maxy). .npy: the same numbers as an (N, dim) or (N, 4) '<f8' array.
//
// The sets bench/run.sh has always used (corpus.h names them all; `gen_data` with a bad SET
// lists them):
//   uniform2d   N points uniform in a square of side sqrt(N): density 1 (N = 1M: side 1000)
//   uniform3d   N points uniform in a cube of side cbrt(N): density 1 (N = 1M: side 100)
//   lattice2d   the integer lattice {0..s-1}^2 + (1e6, 1e6), s = floor(sqrt(N)), shuffled: with
//               r = 1 every pair is exactly r apart (d2 == r*r in double), so it checks that
//               every peer counts boundary pairs (distance <= r), far from the origin
//   clusters2d  N points in 200 Gaussian clusters of N/200 points each; each cluster's sigma is
//               log-uniform in [0.5, 50] (two decades), centres uniform over [0, 4000]^2. With
//               N = 1M and r = 1 this gives a few hundred million pairs, most of them in the
//               tightest clusters.
// The corpus's sets are described in corpus.c and docs/benchmarking.md ("Corpus").
#include "corpus.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// Writes `count` doubles as OUT.f64, or as an (rows, cols) array when the name ends in .npy.
static int write_all(const char *path, const double *p, int32_t rows, int cols)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        fprintf(stderr, "gen_data: cannot create %s\n", path);
        return 1;
    }
    size_t len = strlen(path), count = (size_t)rows * (size_t)cols;
    int ok = 1;
    if (len >= 4 && strcmp(path + len - 4, ".npy") == 0) {
        // NPY 1.0: magic, version, header length, then a dict padded with spaces to a multiple
        // of 64 bytes (with the 10 bytes before it) and ended by a newline.
        char dict[128];
        int dl = snprintf(dict, sizeof dict,
                          "{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), }",
                          (int)rows, cols);
        int total = (10 + dl + 1 + 63) / 64 * 64;
        unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
        head[8] = (unsigned char)((total - 10) & 0xff);
        head[9] = (unsigned char)((total - 10) >> 8);
        ok = fwrite(head, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)dl, f) == (size_t)dl;
        for (int k = 10 + dl; ok && k < total - 1; k++) ok = fputc(' ', f) != EOF;
        ok = ok && fputc('\n', f) != EOF;
    }
    ok = ok && fwrite(p, sizeof(double), count, f) == count;
    if (fclose(f) != 0 || !ok) {
        fprintf(stderr, "gen_data: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: gen_data SET N OUT.f64|OUT.npy\n"
                    "       gen_data --corpus DIR N NRECTS\nsets:");
    for (int k = 0; k < nbb_corpus_count_all(); k++) fprintf(stderr, " %s", nbb_corpus_name(k));
    fprintf(stderr, "\n");
    return 2;
}

static int32_t parse_n(const char *s)
{
    long n = strtol(s, NULL, 10);
    return n >= 1 && n <= 100000000 ? (int32_t)n : -1;
}

/// Makes set k with n items (draw `seed`) and writes it to path; the set's radius into *radius
/// and its actual count into *made.
static int write_set(int k, int32_t n, uint64_t seed, const char *path, double *radius,
                     int32_t *made)
{
    nbbCorpus c;
    int rc = nbb_corpus_make(k, n, seed, &c);
    if (rc != 0) {
        fprintf(stderr, "gen_data: cannot make %s (%s)\n", nbb_corpus_name(k),
                rc > 0 ? "out of memory" : "bad arguments");
        return 1;
    }
    rc = write_all(path, c.data, c.n, c.rects ? 4 : c.dim);
    *radius = c.radius;
    *made = c.n;
    nbb_corpus_free(&c);
    return rc;
}

/// The files of one scenario at the corpus's N into dir, and its row of the list.
static int write_scenario(const nbbScenario *sc, int32_t corpus_n, const char *dir, FILE *list)
{
    const int k = nbb_corpus_find(sc->set);
    const int32_t n = nbb_scenario_n(sc, corpus_n);
    char path[4096], extra[4096];
    nbbCorpus c;
    if (k < 0 || nbb_corpus_make(k, n, 0, &c) != 0) {
        fprintf(stderr, "gen_data: cannot make %s for the %s scenario\n", sc->set, sc->kind);
        return 1;
    }
    snprintf(path, sizeof path, "%s/%s-%d.npy", dir, sc->set, (int)c.n);
    int rc = write_all(path, c.data, c.n, c.dim);
    if (strcmp(sc->kind, "periodic") == 0) {
        snprintf(extra, sizeof extra, "%.17g", c.period);
    } else if (strcmp(sc->kind, "corr") == 0) {
        double r2;
        int32_t made2;
        snprintf(extra, sizeof extra, "%s/%s-cross-%d.npy", dir, sc->set, (int)(n / 2));
        rc = rc || write_set(k, n / 2, NBB_SCENARIO_CROSS_SEED, extra, &r2, &made2);
    } else { // far, axis
        double *q = malloc(sizeof(double) * (size_t)c.dim * NBB_SCENARIO_QUERIES);
        snprintf(extra, sizeof extra, "%s/%s-%s-%d.npy", dir, sc->set, sc->kind, (int)c.n);
        rc = rc || q == NULL;
        if (q != NULL) {
            nbb_corpus_far_queries(&c, strcmp(sc->kind, "axis") == 0, q, NBB_SCENARIO_QUERIES, 0);
            rc = rc || write_all(extra, q, NBB_SCENARIO_QUERIES, c.dim);
        }
        free(q);
    }
    if (rc == 0)
        fprintf(list, "%s,%s,%d,%d,%.17g,%s,%s\n", sc->set, sc->kind, c.dim, (int)c.n, c.radius,
                path, extra);
    nbb_corpus_free(&c);
    return rc;
}

int main(int argc, char **argv)
{
    // The files are little-endian float64; refuse to write anything else.
    const uint16_t probe = 1;
    if (*(const unsigned char *)&probe != 1) {
        fprintf(stderr, "gen_data: big-endian hosts are not supported\n");
        return 2;
    }
    double radius;
    int32_t made;
    if (argc == 5 && strcmp(argv[1], "--corpus") == 0) {
        int32_t n = parse_n(argv[3]), nr = parse_n(argv[4]);
        if (n < 0 || nr < 0) return usage();
        char path[4096];
        snprintf(path, sizeof path, "%s/corpus-%d-%d.csv", argv[2], (int)n, (int)nr);
        FILE *list = fopen(path, "w");
        if (list == NULL) {
            fprintf(stderr, "gen_data: cannot create %s\n", path);
            return 1;
        }
        fprintf(list, "set,kind,dim,n,radius,file,extra\n");
        for (int k = 0; k < nbb_corpus_count(); k++) {
            int rects = nbb_corpus_is_rects(k);
            snprintf(path, sizeof path, "%s/%s-%d.npy", argv[2], nbb_corpus_name(k),
                     (int)(rects ? nr : n));
            if (write_set(k, rects ? nr : n, 0, path, &radius, &made) != 0) {
                fclose(list);
                return 1;
            }
            fprintf(list, "%s,%s,%d,%d,%.17g,%s,\n", nbb_corpus_name(k), rects ? "rects" : "points",
                    nbb_corpus_dim(k), (int)made, radius, path);
        }
        for (int k = 0; k < nbb_scenario_count(); k++)
            if (write_scenario(nbb_scenario(k), n, argv[2], list) != 0) {
                fclose(list);
                return 1;
            }
        return fclose(list) == 0 ? 0 : 1;
    }
    if (argc != 4) return usage();
    int k = nbb_corpus_find(argv[1]);
    int32_t n = parse_n(argv[2]);
    if (k < 0 || n < 0) return usage();
    if (write_set(k, n, 0, argv[3], &radius, &made) != 0) return 1;
    fprintf(stderr, "gen_data: %s, %d items, radius %.6g\n", argv[1], (int)made, radius);
    return 0;
}
