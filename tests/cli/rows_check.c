// SPDX-License-Identifier: MIT
// The tool's row writers (tools/io/rows.c): rows put a run at a time (nbio_rows_put_run, what
// pairs, within, join and boxes write with) must be the same bytes as the same rows put one by
// one (nbio_rows_put), in every format (CSV, .npy, .f64, .i64) and shape (one or two index
// columns), through writers of every size from the smallest (64 bytes: every row drains it)
// up, and into parts (a buffer without a stream, appended in order). The one-by-one rows are
// also checked against their bytes computed here: CSV text by printf, binary values by hand.
// Indices of every width: 0, 9, 10, 99, ..., 2^31 - 1, and runs of 0 to 300 rows.
// `rows_check --bench PREFIX` times the writers alone (below).
#define _POSIX_C_SOURCE 200809L // clock_gettime
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/rows.h"

static int failures;

static void fail(const char *what, nbioOutFormat f, int columns, size_t cap)
{
    if (failures++ < 10)
        fprintf(stderr, "FAIL %s: format %d, %d columns, writer of %zu bytes\n", what, (int)f,
                columns, cap);
}

// The whole content of a stream, from its start; *size its length. free() it.
static char *contents(FILE *f, size_t *size)
{
    fflush(f);
    fseek(f, 0, SEEK_END); // a .npy's header was written last, at the start
    const long end = ftell(f);
    char *buf = malloc(end > 0 ? (size_t)end : 1);
    if (buf == NULL) exit(1);
    rewind(f);
    *size = fread(buf, 1, (size_t)end, f);
    return buf;
}

// The bytes of row (a, b) as rows.h specifies them, appended at *out.
static void expect_row(char **out, nbioOutFormat f, int columns, int64_t a, int64_t b)
{
    const int64_t v[2] = {columns == 1 ? b : a, b};
    if (f == NBIO_OUT_CSV) {
        *out += columns == 1 ? sprintf(*out, "%" PRId64 "\n", v[0])
                             : sprintf(*out, "%" PRId64 ",%" PRId64 "\n", v[0], v[1]);
        return;
    }
    for (int c = 0; c < columns; c++) {
        const int bytes = f == NBIO_OUT_NPY ? 4 : 8;
        uint64_t bits = (uint64_t)v[c];
        if (f == NBIO_OUT_F64) {
            const double d = (double)v[c];
            memcpy(&bits, &d, sizeof bits);
        }
        for (int k = 0; k < bytes; k++) *(*out)++ = (char)(bits >> (8 * k));
    }
}

// `rows_check --bench PREFIX`: the writers alone on millions of rows, into PREFIX.csv and
// PREFIX.npy (and, for the floor, the .npy's bytes written from memory in 1 MiB fwrites to
// PREFIX.raw): 16M index pairs in runs of 16, as pairs and join write them, and 8M rows
// (q, i, distance) one by one, as knn writes them. Prints wall seconds of each.
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int bench(const char *prefix)
{
    enum { PAIRS = 16 << 20, RUN = 16, KNN = 8 << 20 };
    static char buf[1 << 20];
    static int32_t ids[RUN];
    char path[4096];
    const nbioOutFormat formats[2] = {NBIO_OUT_CSV, NBIO_OUT_NPY};
    const char *ext[2] = {"csv", "npy"};
    double secs[2][2];
    for (int fi = 0; fi < 2; fi++) {
        snprintf(path, sizeof path, "%s.%s", prefix, ext[fi]);
        // Index pairs: point a's 16 neighbours around it.
        const nbioRowShape two = {2, {"i", "j", NULL}, false};
        FILE *f = fopen(path, "wb");
        nbioRows r;
        const char *why;
        if (f == NULL) return 1;
        double t0 = now_s();
        nbio_rows_start(&r, f, formats[fi], &two, buf, sizeof buf, &why);
        for (int32_t a = 0; a < PAIRS / RUN; a++) {
            for (int k = 0; k < RUN; k++) ids[k] = a + 1 + 37 * k;
            nbio_rows_put_run(&r, a, ids, RUN);
        }
        bool ok = nbio_rows_finish(&r) && fclose(f) == 0;
        secs[fi][0] = now_s() - t0;
        // kNN rows: (q, i, distance), the distances as a kNN search gives them.
        const nbioRowShape three = {3, {"q", "i", "distance"}, true};
        f = fopen(path, "wb");
        if (f == NULL) return 1;
        t0 = now_s();
        nbio_rows_start(&r, f, formats[fi], &three, buf, sizeof buf, &why);
        for (int32_t q = 0; q < KNN / 8; q++) { // a query's 8 rows in one call, as knn puts them
            int32_t near[8];
            double dist[8];
            for (int32_t k = 0, row = 8 * q; k < 8; k++, row++) {
                near[k] = row * 7 % KNN;
                dist[k] = sqrt(0.25 + (double)(row % 1000) * 1e-3);
            }
            nbio_rows_put_dists(&r, q, near, dist, 8);
        }
        ok = ok && nbio_rows_finish(&r) && fclose(f) == 0;
        secs[fi][1] = now_s() - t0;
        if (!ok) return 1;
    }
    // The floor: as many bytes as the pairs' .npy, from memory, in 1 MiB writes.
    snprintf(path, sizeof path, "%s.raw", prefix);
    FILE *f = fopen(path, "wb");
    if (f == NULL) return 1;
    memset(buf, 1, sizeof buf);
    const double t0 = now_s();
    for (size_t left = (size_t)PAIRS * 8; left > 0; left -= left < sizeof buf ? left : sizeof buf)
        if (fwrite(buf, 1, left < sizeof buf ? left : sizeof buf, f) == 0) return 1;
    if (fclose(f) != 0) return 1;
    const double raw = now_s() - t0;
    printf("16M index pairs: csv %.3f s, npy %.3f s (%.1fx), the same bytes from memory %.3f s\n",
           secs[0][0], secs[1][0], secs[0][0] / secs[1][0], raw);
    printf("8M kNN rows:     csv %.3f s, npy %.3f s (%.1fx)\n", secs[0][1], secs[1][1],
           secs[0][1] / secs[1][1]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--bench") == 0) return bench(argv[2]);
    enum { RUNS = 40, MAX_RUN = 300 };
    static const int32_t widths[] = {
        0,      9,       10,      99,       100,      999,       1000,      99999,      100000,
        999999, 1000000, 9999999, 10000000, 99999999, 100000000, 999999999, 1000000000, 2147483647};
    const int nw = (int)(sizeof widths / sizeof widths[0]);
    static int32_t ids[RUNS][MAX_RUN];
    static int64_t first[RUNS], lens[RUNS];
    uint64_t s = 12345;
    for (int r = 0; r < RUNS; r++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        lens[r] = r < 3 ? r : (int64_t)((s >> 33) % MAX_RUN);
        first[r] = widths[r % nw];
        for (int64_t k = 0; k < lens[r]; k++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            ids[r][k] = widths[(s >> 33) % (uint64_t)nw];
        }
    }
    static const size_t caps[] = {64, 65, 100, 257, 4096, 1 << 20};
    const nbioOutFormat formats[] = {NBIO_OUT_CSV, NBIO_OUT_NPY, NBIO_OUT_F64, NBIO_OUT_I64};
    char *want = malloc((size_t)RUNS * MAX_RUN * 32 + NBIO_NPY_HEADER_SIZE);
    char *buf = malloc((size_t)1 << 20);
    if (want == NULL || buf == NULL) return 1;
    for (int fi = 0; fi < 4; fi++)
        for (int columns = 1; columns <= 2; columns++)
            for (size_t ci = 0; ci < sizeof caps / sizeof caps[0]; ci++) {
                const nbioOutFormat f = formats[fi];
                const nbioRowShape shape = {columns, {"a", "b", NULL}, false};
                FILE *one = tmpfile(), *run = tmpfile();
                if (one == NULL || run == NULL) return 1;
                nbioRows r1, r2;
                const char *why;
                char *w = want;
                nbio_rows_start(&r1, one, f, &shape, buf, caps[ci], &why);
                for (int r = 0; r < RUNS; r++)
                    for (int64_t k = 0; k < lens[r]; k++) {
                        // One column: the index alone, passed as a (rows.h).
                        nbio_rows_put(&r1, columns == 1 ? ids[r][k] : first[r], ids[r][k], 0.0);
                        expect_row(&w, f, columns, first[r], ids[r][k]);
                    }
                const bool ok1 = nbio_rows_finish(&r1);
                char *buf2 = malloc(caps[ci]);
                if (buf2 == NULL) return 1;
                nbio_rows_start(&r2, run, f, &shape, buf2, caps[ci], &why);
                for (int r = 0; r < RUNS; r++) nbio_rows_put_run(&r2, first[r], ids[r], lens[r]);
                const bool ok2 = nbio_rows_finish(&r2);
                size_t n1, n2;
                char *b1 = contents(one, &n1), *b2 = contents(run, &n2);
                const size_t head = f == NBIO_OUT_NPY ? NBIO_NPY_HEADER_SIZE : 0;
                if (!ok1 || !ok2) fail("a write failed", f, columns, caps[ci]);
                if (r1.rows != r2.rows) fail("row counts differ", f, columns, caps[ci]);
                if (n1 != n2 || memcmp(b1, b2, n1) != 0)
                    fail("a run's bytes differ from its rows'", f, columns, caps[ci]);
                if (n1 != head + (size_t)(w - want) || memcmp(b1 + head, want, n1 - head) != 0)
                    fail("the rows' bytes differ from the format's", f, columns, caps[ci]);
                free(b1);
                free(b2);
                free(buf2);
                fclose(one);
                fclose(run);
            }
    // Parts: runs into buffers without a stream, appended in order, give the same bytes; a
    // part of 64 bytes grows (doubling) to hold four runs.
    for (int fi = 0; fi < 4; fi++)
        for (size_t part_cap = 64; part_cap <= 4096; part_cap *= 64) {
            const nbioOutFormat f = formats[fi];
            const nbioRowShape shape = {2, {"a", "b", NULL}, false};
            FILE *one = tmpfile(), *parted = tmpfile();
            if (one == NULL || parted == NULL) return 1;
            nbioRows r1, r2, part;
            const char *why;
            nbio_rows_start(&r1, one, f, &shape, buf, 4096, &why);
            static char out2[4096];
            nbio_rows_start(&r2, parted, f, &shape, out2, sizeof out2, &why);
            char *pbuf = malloc(part_cap);
            if (pbuf == NULL) return 1;
            nbio_rows_start_part(&part, f, &shape, pbuf, part_cap);
            for (int r = 0; r < RUNS; r++) {
                for (int64_t k = 0; k < lens[r]; k++) nbio_rows_put(&r1, first[r], ids[r][k], 0.0);
                nbio_rows_put_run(&part, first[r], ids[r], lens[r]);
                if (r % 4 == 3 || r == RUNS - 1) nbio_rows_append(&r2, &part);
            }
            const bool ok = nbio_rows_finish(&r1) && nbio_rows_finish(&r2) && !part.w.failed;
            size_t n1, n2;
            char *b1 = contents(one, &n1), *b2 = contents(parted, &n2);
            if (!ok || r1.rows != r2.rows || n1 != n2 || memcmp(b1, b2, n1) != 0)
                fail("parts appended differ from the rows", f, 2, part_cap);
            free(b1);
            free(b2);
            free(part.w.buf); // grown: no longer pbuf
            fclose(one);
            fclose(parted);
        }
    // Rows with a distance as CSV (knn: "q,i,distance" and, for --at, "i,distance"): the
    // indices as printf prints them and the distance as the formatter (format_check tests it
    // against printf and strtod), through every writer size: a row fits whole, or goes piece
    // by piece into a writer too small for it.
    for (int columns = 2; columns <= 3; columns++)
        for (size_t ci = 0; ci < sizeof caps / sizeof caps[0]; ci++) {
            const nbioRowShape shape = {columns, {"q", "i", "distance"}, true};
            FILE *f = tmpfile();
            if (f == NULL) return 1;
            nbioRows r;
            const char *why;
            char *w = want;
            nbio_rows_start(&r, f, NBIO_OUT_CSV, &shape, buf, caps[ci], &why);
            for (int k = 0; k < RUNS * 20; k++) {
                const int64_t a = widths[k % nw], b = widths[(k * 7 + 3) % nw];
                const double d = k % 9 == 0 ? (double)k : sqrt(0.5 + k) * (k % 2 ? 1e-3 : 1e3);
                nbio_rows_put(&r, a, b, d);
                w += columns == 3 ? sprintf(w, "%" PRId64 ",%" PRId64 ",", a, b)
                                  : sprintf(w, "%" PRId64 ",", a);
                w += nbio_format_double(w, d);
                *w++ = '\n';
            }
            const bool ok = nbio_rows_finish(&r);
            size_t n;
            char *got = contents(f, &n);
            if (!ok || n != (size_t)(w - want) || memcmp(got, want, n) != 0)
                fail("rows with a distance differ from their text", NBIO_OUT_CSV, columns,
                     caps[ci]);
            free(got);
            fclose(f);
        }
    // Runs with a distance (knn's "q,i,distance", nbio_rows_put_dists) against the same rows
    // one at a time, in every format that holds a distance and every writer size.
    static double dists[RUNS][MAX_RUN];
    for (int r = 0; r < RUNS; r++)
        for (int64_t k = 0; k < lens[r]; k++)
            dists[r][k] = k % 5 == 0 ? (double)k : sqrt(0.5 + (double)(r * MAX_RUN + k)) * 1e-3;
    for (int fi = 0; fi < 3; fi++)
        for (size_t ci = 0; ci < sizeof caps / sizeof caps[0]; ci++) {
            const nbioOutFormat f = formats[fi];
            const nbioRowShape shape = {3, {"q", "i", "distance"}, true};
            FILE *one = tmpfile(), *run = tmpfile();
            if (one == NULL || run == NULL) return 1;
            nbioRows r1, r2;
            const char *why;
            nbio_rows_start(&r1, one, f, &shape, buf, caps[ci], &why);
            for (int r = 0; r < RUNS; r++)
                for (int64_t k = 0; k < lens[r]; k++)
                    nbio_rows_put(&r1, first[r], ids[r][k], dists[r][k]);
            char *buf2 = malloc(caps[ci]);
            if (buf2 == NULL) return 1;
            nbio_rows_start(&r2, run, f, &shape, buf2, caps[ci], &why);
            for (int r = 0; r < RUNS; r++)
                nbio_rows_put_dists(&r2, first[r], ids[r], dists[r], lens[r]);
            const bool ok = nbio_rows_finish(&r1) && nbio_rows_finish(&r2);
            size_t n1, n2;
            char *b1 = contents(one, &n1), *b2 = contents(run, &n2);
            if (!ok || r1.rows != r2.rows || n1 != n2 || memcmp(b1, b2, n1) != 0)
                fail("a run with distances differs from its rows", f, 3, caps[ci]);
            free(b1);
            free(b2);
            free(buf2);
            fclose(one);
            fclose(run);
        }
    // Spans: rows formatted into parts out of order are written in the order of their spans
    // (queries answered in Z order, written in query order), the parts' rows counted.
    for (int fi = 0; fi < 4; fi++) {
        const nbioOutFormat f = formats[fi];
        const nbioRowShape shape = {2, {"a", "b", NULL}, false};
        FILE *one = tmpfile(), *spanned = tmpfile();
        if (one == NULL || spanned == NULL) return 1;
        nbioRows r1, r2, parts[3];
        nbioSpan spans[RUNS];
        const char *why;
        nbio_rows_start(&r1, one, f, &shape, buf, 4096, &why);
        static char out3[4096];
        nbio_rows_start(&r2, spanned, f, &shape, out3, sizeof out3, &why);
        for (int p = 0; p < 3; p++) {
            char *pbuf = malloc(64);
            if (pbuf == NULL) return 1;
            nbio_rows_start_part(&parts[p], f, &shape, pbuf, 64);
        }
        for (int r = RUNS - 1; r >= 0; r--) { // last to first, run r into part r % 3
            nbioRows *part = &parts[r % 3];
            const size_t before = part->w.used;
            nbio_rows_put_run(part, first[r], ids[r], lens[r]);
            spans[r] = (nbioSpan){before, part->w.used - before, r % 3};
        }
        for (int r = 0; r < RUNS; r++) nbio_rows_put_run(&r1, first[r], ids[r], lens[r]);
        nbio_rows_append_spans(&r2, parts, 3, spans, RUNS);
        const bool ok = nbio_rows_finish(&r1) && nbio_rows_finish(&r2);
        size_t n1, n2;
        char *b1 = contents(one, &n1), *b2 = contents(spanned, &n2);
        if (!ok || r1.rows != r2.rows || n1 != n2 || memcmp(b1, b2, n1) != 0 ||
            parts[0].w.used != 0 || parts[0].rows != 0)
            fail("spans appended differ from the rows in order", f, 2, 64);
        free(b1);
        free(b2);
        for (int p = 0; p < 3; p++) free(parts[p].w.buf);
        fclose(one);
        fclose(spanned);
    }
    free(want);
    free(buf);
    if (failures > 0) {
        fprintf(stderr, "rows_check: %d failures\n", failures);
        return 1;
    }
    printf("rows_check: runs and rows agree in 4 formats, 2 shapes, 6 writer sizes, parts and "
           "spans; rows with a distance as CSV, and runs of them in 3 formats\n");
    return 0;
}
