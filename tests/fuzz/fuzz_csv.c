// SPDX-License-Identifier: MIT
// libFuzzer target for the command-line tool's CSV reader (tools/io/csv.c): points and
// rectangles from untrusted text. The first byte picks what the caller asks for (any dimension,
// 2D, 3D or rectangles); the rest is the file. Checked for every input:
//   - a refusal leaves the output empty and says why (a non-empty message, a line number or
//     none, never a point index: CSV problems are on lines);
//   - an accepted file gives count records of the asked (or a valid) dimension, every value
//     finite, rectangles with min <= max;
//   - writing the records back as CSV with "%.17g" and reading that gives the same values bit
//     for bit (the reader parses exactly what a writer of shortest-round-trip text wrote);
//   - the tool's own number writer (nbio_format_double, tools/io/writer.c) prints every value
//     read, and the input's bytes taken as raw doubles, as text that strtod reads back to the
//     same double bit for bit, in at most NBIO_DOUBLE_MAX bytes.
// AddressSanitizer catches a read past the input (the reader is given exactly size + 1 bytes,
// the last a 0, as its contract asks) and UBSan any overflow.
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/reader.h"
#include "io/writer.h"
#include "nb_fuzz.h"

static const int32_t dims[4] = {0, 2, 3, NBIO_RECTS};

// Checks one successful read: dimension, finiteness, rectangles.
static void check_points(const nbioPoints *p, int32_t asked)
{
    NBF_CHECK(p->count >= 0, "count %d", (int)p->count);
    NBF_CHECK(p->mapping == NULL, "a CSV read borrowed its input");
    if (p->count == 0) {
        NBF_CHECK(p->coords == NULL, "no points but coords %p", (const void *)p->coords);
        return;
    }
    NBF_CHECK(asked == 0 ? p->dim == 2 || p->dim == 3 : p->dim == asked, "dim %d asked %d",
              (int)p->dim, (int)asked);
    for (size_t k = 0; k < (size_t)p->count * (size_t)p->dim; k++)
        NBF_CHECK(isfinite(p->coords[k]), "value %zu is %g", k, p->coords[k]);
    for (int32_t i = 0; p->dim == NBIO_RECTS && i < p->count; i++)
        NBF_CHECK(nbio_rect_inverted(p->coords + 4 * (size_t)i) < 0, "rectangle %d inverted",
                  (int)i);
}

// nbio_format_double(v) reads back as v.
static void check_format(double v)
{
    if (!isfinite(v)) return;
    char text[NBIO_DOUBLE_MAX + 1];
    const size_t n = nbio_format_double(text, v);
    NBF_CHECK(n > 0 && n < NBIO_DOUBLE_MAX, "%a printed in %zu bytes", v, n);
    text[n] = 0;
    const double back = strtod(text, NULL);
    NBF_CHECK(memcmp(&back, &v, sizeof v) == 0, "%a printed as \"%s\", read back as %a", v, text,
              back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nbf_begin_input();
    if (size == 0) return 0;
    const int32_t asked = dims[data[0] & 3];
    const size_t len = size - 1;
    for (size_t k = 0; k + 8 <= len; k += 8) {
        double v;
        memcpy(&v, data + 1 + k, sizeof v);
        check_format(v);
    }
    char *text = malloc(len + 1); // exactly the file and its 0
    if (text == NULL) return 0;
    memcpy(text, data + 1, len);
    text[len] = 0;

    nbioPoints p = {0};
    nbioError err = {0};
    err.point = -1; // as nbio_read starts it
    const nbioResult r = nbio_parse_csv(text, len, asked, &p, &err);
    free(text);
    NBF_CHECK(r == NBIO_OK || r == NBIO_BAD_INPUT, "result %d", (int)r);
    if (r != NBIO_OK) {
        NBF_CHECK(p.coords == NULL && p.count == 0, "a refused read left %d points", (int)p.count);
        NBF_CHECK(err.text[0] != 0 && memchr(err.text, 0, sizeof err.text) != NULL, "no message");
        NBF_CHECK(err.line >= 0 && err.point == -1, "line %lld point %lld", (long long)err.line,
                  (long long)err.point);
        return 0;
    }
    check_points(&p, asked);
    for (size_t k = 0; k < (size_t)p.count * (size_t)p.dim; k++) check_format(p.coords[k]);

    // Round trip through "%.17g" text: the same values, bit for bit.
    const size_t values = (size_t)p.count * (size_t)p.dim;
    char *back = malloc(values * 26 + 1);
    NBF_CHECK(back != NULL, "out of memory");
    size_t at = 0;
    for (size_t k = 0; k < values; k++)
        at += (size_t)sprintf(back + at, "%.17g%c", p.coords[k],
                              (k + 1) % (size_t)p.dim == 0 ? '\n' : ',');
    back[at] = 0;
    nbioPoints q = {0};
    const nbioResult r2 = nbio_parse_csv(back, at, p.count > 0 ? p.dim : asked, &q, &err);
    NBF_CHECK(r2 == NBIO_OK, "the written-back CSV was refused: %s", err.text);
    NBF_CHECK(q.count == p.count, "read back %d points of %d", (int)q.count, (int)p.count);
    if (p.count > 0)
        NBF_CHECK(q.dim == p.dim && memcmp(q.coords, p.coords, values * sizeof(double)) == 0,
                  "the written-back values differ");
    free(back);
    nbio_points_free(&q);
    nbio_points_free(&p);
    return 0;
}
