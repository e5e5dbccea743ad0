// SPDX-License-Identifier: MIT
// libFuzzer target for the command-line tool's binary readers (tools/io/npy.c, f64.c): NumPy
// .npy and raw .f64 files from untrusted bytes. The first byte picks what the caller asks for
// (any dimension, 2D, 3D or rectangles) and bit 2 the reader (.npy, else .f64); the rest is the
// file. Checked for every input:
//   - a refusal leaves the output empty with a message; the .npy layout (nbio_layout_npy, what
//     nearby-mpi reads first) agrees with the whole read: both accept the header or both refuse
//     it, with the same count, dimension and data offset;
//   - an accepted file gives count records of the asked (or a valid) dimension, all finite,
//     rectangles with min <= max, and exactly as many data bytes as the header promised;
//   - the points written back as a '<f8' .npy (and as .f64) read back bit for bit.
// AddressSanitizer catches a read past the input and UBSan any overflow (a 19-digit shape axis
// once overflowed a signed 64-bit integer: corpus/npy/regression-shape-19-digits.npy).
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/reader.h"
#include "nb_fuzz.h"

static const int32_t dims[4] = {0, 2, 3, NBIO_RECTS};

// A version 1.0 '<f8' .npy of p's points (a little-endian host is assumed by the fuzz build).
static char *npy_of(const nbioPoints *p, size_t *size)
{
    char dict[128];
    int n =
        snprintf(dict, sizeof dict, "{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), }",
                 (int)p->count, (int)p->dim);
    const size_t header = 10 + (size_t)n + 1, pad = (64 - header % 64) % 64;
    const size_t data = (size_t)p->count * (size_t)p->dim * sizeof(double);
    char *out = malloc(header + pad + data + 1);
    NBF_CHECK(out != NULL, "out of memory");
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (char)((n + 1 + pad) & 0xff);
    out[9] = (char)((n + 1 + pad) >> 8);
    memcpy(out + 10, dict, (size_t)n);
    memset(out + 10 + n, ' ', pad);
    out[header + pad - 1] = '\n';
    if (data > 0) memcpy(out + header + pad, p->coords, data);
    out[header + pad + data] = 0;
    *size = header + pad + data;
    return out;
}

static void check_same(const nbioPoints *p, const nbioPoints *q, const char *what)
{
    NBF_CHECK(q->count == p->count, "%s: %d points read back of %d", what, (int)q->count,
              (int)p->count);
    if (p->count > 0)
        NBF_CHECK(q->dim == p->dim &&
                      memcmp(q->coords, p->coords,
                             (size_t)p->count * (size_t)p->dim * sizeof(double)) == 0,
                  "%s: the values differ", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nbf_begin_input();
    if (size == 0) return 0;
    const int32_t asked = dims[data[0] & 3];
    const bool npy = (data[0] & 4) == 0;
    const size_t len = size - 1;
    char *file = malloc(len + 1);
    if (file == NULL) return 0;
    memcpy(file, data + 1, len);
    file[len] = 0;

    nbioPoints p = {0};
    nbioError err = {0};
    const nbioResult r = npy ? nbio_parse_npy(file, len, asked, &p, &err)
                             : nbio_parse_f64(file, len, asked == 0 ? 2 : asked, &p, &err);
    nbioLayout at = {0};
    nbioError lerr = {0};
    const nbioResult lr =
        npy ? nbio_layout_npy(file, len, (uint64_t)len, asked, &at, &lerr) : NBIO_OK;
    free(file);
    NBF_CHECK(r == NBIO_OK || r == NBIO_BAD_INPUT, "result %d", (int)r);
    if (npy && lr != NBIO_OK)
        NBF_CHECK(r != NBIO_OK && strcmp(err.text, lerr.text) == 0,
                  "the layout refused (%s) what the read says: %s", lerr.text, err.text);
    if (r != NBIO_OK) {
        NBF_CHECK(p.coords == NULL && p.count == 0, "a refused read left %d points", (int)p.count);
        NBF_CHECK(err.text[0] != 0, "no message");
        return 0;
    }
    NBF_CHECK(!npy || lr == NBIO_OK, "the layout refused an accepted file: %s", lerr.text);
    if (npy)
        NBF_CHECK(at.count == p.count && at.dim == p.dim && at.data_at <= len &&
                      len - at.data_at ==
                          (uint64_t)p.count * (uint64_t)p.dim * (uint64_t)at.item_size,
                  "layout count %lld dim %d at %llu for %d points of %d", (long long)at.count,
                  (int)at.dim, (unsigned long long)at.data_at, (int)p.count, (int)p.dim);
    NBF_CHECK(p.count == 0 || (asked == 0 ? p.dim == 2 || p.dim == 3 : p.dim == asked),
              "dim %d asked %d", (int)p.dim, (int)asked);
    for (size_t k = 0; k < (size_t)p.count * (size_t)p.dim; k++)
        NBF_CHECK(isfinite(p.coords[k]), "value %zu is %g", k, p.coords[k]);
    for (int32_t i = 0; p.dim == NBIO_RECTS && i < p.count; i++)
        NBF_CHECK(nbio_rect_inverted(p.coords + 4 * (size_t)i) < 0, "rectangle %d inverted",
                  (int)i);

    if (p.count > 0) { // round trips: '<f8' .npy and raw .f64
        size_t n = 0;
        char *again = npy_of(&p, &n);
        nbioPoints q = {0};
        NBF_CHECK(nbio_parse_npy(again, n, p.dim, &q, &err) == NBIO_OK, "written .npy refused: %s",
                  err.text);
        check_same(&p, &q, ".npy");
        nbio_points_free(&q);
        const size_t header = n - (size_t)p.count * (size_t)p.dim * sizeof(double);
        NBF_CHECK(nbio_parse_f64(again + header, n - header, p.dim, &q, &err) == NBIO_OK,
                  "written .f64 refused: %s", err.text);
        check_same(&p, &q, ".f64");
        nbio_points_free(&q);
        free(again);
    }
    nbio_points_free(&p);
    return 0;
}
