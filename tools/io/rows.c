// SPDX-License-Identifier: MIT
#include "io/rows.h"

#include <ctype.h>
#include <string.h>

nbioOutFormat nbio_out_format_for_path(const char *path)
{
    static const struct {
        const char *ext;
        nbioOutFormat format;
    } known[] = {{".csv", NBIO_OUT_CSV},
                 {".npy", NBIO_OUT_NPY},
                 {".f64", NBIO_OUT_F64},
                 {".i64", NBIO_OUT_I64}};
    const size_t len = strlen(path);
    if (len < 4) return NBIO_OUT_UNKNOWN;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        bool same = true;
        for (size_t c = 0; c < 4 && same; c++)
            same = tolower((unsigned char)path[len - 4 + c]) == known[k].ext[c];
        if (same) return known[k].format;
    }
    return NBIO_OUT_UNKNOWN;
}

void nbio_npy_header(char *dst, const nbioRowShape *shape, int64_t rows)
{
    char dict[NBIO_NPY_HEADER_SIZE];
    int n;
    if (shape->distance) { // a structured array of (N,): int32 indices, a float64 distance
        char descr[160] = "[";
        for (int c = 0; c < shape->columns; c++) {
            const bool last = c == shape->columns - 1;
            char field[48];
            snprintf(field, sizeof field, "%s('%s', '%s')", c > 0 ? ", " : "", shape->names[c],
                     last ? "<f8" : "<i4");
            strncat(descr, field, sizeof descr - strlen(descr) - 1);
        }
        strncat(descr, "]", sizeof descr - strlen(descr) - 1);
        n = snprintf(dict, sizeof dict, "{'descr': %s, 'fortran_order': False, 'shape': (%lld,), }",
                     descr, (long long)rows);
    } else if (shape->columns == 1) {
        n = snprintf(dict, sizeof dict,
                     "{'descr': '<i4', 'fortran_order': False, 'shape': (%lld,), }",
                     (long long)rows);
    } else {
        n = snprintf(dict, sizeof dict,
                     "{'descr': '<i4', 'fortran_order': False, 'shape': (%lld, %d), }",
                     (long long)rows, shape->columns);
    }
    // Magic, version 1.0, the header length, the dict, spaces, '\n': NBIO_NPY_HEADER_SIZE bytes
    // (a multiple of 64, as NumPy aligns the data). The dict is at most ~130 bytes.
    const size_t text = NBIO_NPY_HEADER_SIZE - 10;
    memcpy(dst, "\x93NUMPY\x01\x00", 8);
    dst[8] = (char)(text & 0xff);
    dst[9] = (char)(text >> 8);
    memset(dst + 10, ' ', text);
    memcpy(dst + 10, dict, (size_t)n < text - 1 ? (size_t)n : text - 1);
    dst[NBIO_NPY_HEADER_SIZE - 1] = '\n';
}

bool nbio_rows_start(nbioRows *r, FILE *stream, nbioOutFormat format, const nbioRowShape *shape,
                     char *buf, size_t cap, const char **why)
{
    nbio_writer_init(&r->w, stream, buf, cap);
    r->format = format;
    r->shape = *shape;
    r->rows = 0;
    *why = NULL;
    if (format == NBIO_OUT_I64 && shape->distance) {
        *why = "the rows hold a distance, which .i64 cannot: use .csv, .npy or .f64";
        return false;
    }
    if (format == NBIO_OUT_NPY) {
        char header[NBIO_NPY_HEADER_SIZE];
        nbio_npy_header(header, shape, 0);
        nbio_write_bytes(&r->w, header, sizeof header);
    }
    return true;
}

void nbio_rows_start_part(nbioRows *part, nbioOutFormat format, const nbioRowShape *shape,
                          char *buf, size_t cap)
{
    nbio_writer_init(&part->w, NULL, buf, cap); // no stream: a drain marks it failed
    part->format = format;
    part->shape = *shape;
    part->rows = 0;
}

void nbio_rows_append(nbioRows *r, nbioRows *part)
{
    if (part->w.failed) r->w.failed = true;
    nbio_write_bytes(&r->w, part->w.buf, part->w.used);
    r->rows += part->rows;
    part->w.used = 0;
    part->rows = 0;
}

// Little-endian bytes of v into p, whatever the host's order.
static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int k = 0; k < bytes; k++) p[k] = (unsigned char)(v >> (8 * k));
}

static void put_double(unsigned char *p, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    put_le(p, bits, 8);
}

void nbio_rows_put(nbioRows *r, int64_t a, int64_t b, double d)
{
    const int cols = r->shape.columns;
    const int ints = r->shape.distance ? cols - 1 : cols;
    const int64_t idx[2] = {a, b};
    unsigned char row[24];
    size_t len = 0;
    r->rows++;
    switch (r->format) {
    case NBIO_OUT_NPY: // int32 indices, a float64 distance
    case NBIO_OUT_F64: // every value a float64
        for (int c = 0; c < ints; c++) {
            if (r->format == NBIO_OUT_NPY) {
                put_le(row + len, (uint64_t)idx[c], 4);
                len += 4;
            } else {
                put_double(row + len, (double)idx[c]);
                len += 8;
            }
        }
        if (r->shape.distance) {
            put_double(row + len, d);
            len += 8;
        }
        break;
    case NBIO_OUT_I64:
        for (int c = 0; c < ints; c++, len += 8) put_le(row + len, (uint64_t)idx[c], 8);
        break;
    default: // CSV
        for (int c = 0; c < ints; c++) {
            if (c > 0) nbio_write_char(&r->w, ',');
            nbio_write_i64(&r->w, idx[c]);
        }
        if (r->shape.distance) {
            nbio_write_char(&r->w, ',');
            nbio_write_double(&r->w, d);
        }
        nbio_write_char(&r->w, '\n');
        return;
    }
    nbio_write_bytes(&r->w, (const char *)row, len);
}

bool nbio_rows_finish(nbioRows *r)
{
    nbio_writer_drain(&r->w);
    if (r->format == NBIO_OUT_NPY && !r->w.failed) {
        char header[NBIO_NPY_HEADER_SIZE];
        nbio_npy_header(header, &r->shape, r->rows);
        if (fflush(r->w.stream) != 0 || fseek(r->w.stream, 0, SEEK_SET) != 0 ||
            fwrite(header, 1, sizeof header, r->w.stream) != sizeof header)
            r->w.failed = true;
    }
    return nbio_writer_finish(&r->w);
}
