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
    nbio_writer_init(&part->w, NULL, buf, cap); // no stream: a drain grows the buffer
    part->w.grows = true;
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

void nbio_rows_append_spans(nbioRows *r, nbioRows *parts, int32_t nparts, const nbioSpan *spans,
                            int64_t count)
{
    for (int64_t k = 0; k < count; k++)
        nbio_write_bytes(&r->w, parts[spans[k].part].w.buf + spans[k].off, spans[k].len);
    for (int32_t p = 0; p < nparts; p++) {
        if (parts[p].w.failed) r->w.failed = true;
        r->rows += parts[p].rows;
        parts[p].w.used = 0;
        parts[p].rows = 0;
    }
}

// Little-endian bytes of v into p, whatever the host's order (compilers merge the byte stores
// into one store on a little-endian host).
static inline void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int k = 0; k < bytes; k++) p[k] = (unsigned char)(v >> (8 * k));
}

static inline void put_double(unsigned char *p, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    put_le(p, bits, 8);
}

// One row of a binary format into p (24 bytes of room); its length.
static inline size_t put_binary(const nbioRows *r, unsigned char *p, int64_t a, int64_t b, double d)
{
    const int ints = r->shape.distance ? r->shape.columns - 1 : r->shape.columns;
    size_t len = 0;
    for (int c = 0; c < ints; c++) {
        const int64_t v = c == 0 ? a : b;
        if (r->format == NBIO_OUT_NPY) { // int32 indices
            put_le(p + len, (uint64_t)v, 4);
            len += 4;
        } else if (r->format == NBIO_OUT_F64) { // every value a float64
            put_double(p + len, (double)v);
            len += 8;
        } else { // .i64
            put_le(p + len, (uint64_t)v, 8);
            len += 8;
        }
    }
    if (r->shape.distance) { // a float64 distance (.npy and .f64: .i64 refuses one)
        put_double(p + len, d);
        len += 8;
    }
    return len;
}

// Room for `bytes` more in the buffer, draining it if need be; false if the buffer is smaller
// than that even empty (a tiny writer, or a part that is full): then write through a bounce.
static inline bool room_for(nbioWriter *w, size_t bytes)
{
    if (w->cap - w->used >= bytes) return true;
    nbio_writer_drain(w);
    return w->cap - w->used >= bytes;
}

// The decimal digits of v (below 2^32) at dst; their count (at most 10).
static inline size_t put_u32(char *dst, uint32_t v)
{
    const size_t len = v < 10u           ? 1
                       : v < 100u        ? 2
                       : v < 1000u       ? 3
                       : v < 10000u      ? 4
                       : v < 100000u     ? 5
                       : v < 1000000u    ? 6
                       : v < 10000000u   ? 7
                       : v < 100000000u  ? 8
                       : v < 1000000000u ? 9
                                         : 10;
    nbio_digits_before(dst + len, v);
    return len;
}

// The decimal digits of v at dst (a '-' first if negative); their count (at most 20).
static inline size_t put_i64(char *dst, int64_t v)
{
    if (v >= 0 && v <= (int64_t)UINT32_MAX) return put_u32(dst, (uint32_t)v);
    char tmp[24];
    char *p = nbio_digits_before(tmp + sizeof tmp, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
    if (v < 0) *--p = '-';
    const size_t len = (size_t)(tmp + sizeof tmp - p);
    memcpy(dst, p, len);
    return len;
}

// One row as CSV text, straight into the buffer (NBIO_ROW_MAX bytes of room: the double's
// formatter may write all its NBIO_DOUBLE_MAX), or piece by piece into a tiny writer.
static void put_csv(nbioRows *r, int64_t a, int64_t b, double d)
{
    const int ints = r->shape.distance ? r->shape.columns - 1 : r->shape.columns;
    nbioWriter *w = &r->w;
    if (room_for(w, NBIO_ROW_MAX)) {
        char *p = w->buf + w->used;
        p += put_i64(p, a);
        if (ints > 1) {
            *p++ = ',';
            p += put_i64(p, b);
        }
        if (r->shape.distance) {
            *p++ = ',';
            p += nbio_format_double(p, d);
        }
        *p++ = '\n';
        w->used = (size_t)(p - w->buf);
        return;
    }
    nbio_write_i64(w, a);
    if (ints > 1) {
        nbio_write_char(w, ',');
        nbio_write_i64(w, b);
    }
    if (r->shape.distance) {
        nbio_write_char(w, ',');
        nbio_write_double(w, d);
    }
    nbio_write_char(w, '\n');
}

void nbio_rows_put(nbioRows *r, int64_t a, int64_t b, double d)
{
    r->rows++;
    if (r->format == NBIO_OUT_CSV) {
        put_csv(r, a, b, d);
        return;
    }
    nbioWriter *w = &r->w;
    if (room_for(w, 24)) { // straight into the buffer
        w->used += put_binary(r, (unsigned char *)w->buf + w->used, a, b, d);
        return;
    }
    unsigned char row[24];
    nbio_write_bytes(w, (const char *)row, put_binary(r, row, a, b, d));
}

// "a," at the start of prefix (24 bytes, the rest left as it was); its length.
static size_t csv_prefix(char prefix[24], int64_t a)
{
    char *p = nbio_digits_before(prefix + 23, a < 0 ? 0 - (uint64_t)a : (uint64_t)a);
    if (a < 0) *--p = '-';
    size_t len = (size_t)(prefix + 23 - p);
    memmove(prefix, p, len);
    prefix[len++] = ',';
    return len;
}

void nbio_rows_put_run(nbioRows *r, int64_t a, const int32_t *ids, int64_t count)
{
    nbioWriter *w = &r->w;
    const bool two = r->shape.columns == 2 && !r->shape.distance;
    if (r->format == NBIO_OUT_NPY && two) { // (a, id) as two int32: 8 bytes a row
        unsigned char prefix[4];
        put_le(prefix, (uint64_t)a, 4);
        int64_t k = 0;
        while (k < count) {
            if (!room_for(w, 8)) break;
            int64_t fit = (int64_t)((w->cap - w->used) / 8);
            if (fit > count - k) fit = count - k;
            unsigned char *p = (unsigned char *)w->buf + w->used;
            for (int64_t t = 0; t < fit; t++, p += 8) {
                memcpy(p, prefix, 4);
                put_le(p + 4, (uint64_t)(uint32_t)ids[k + t], 4);
            }
            w->used += (size_t)fit * 8;
            r->rows += fit;
            k += fit;
        }
        for (; k < count; k++) nbio_rows_put(r, a, ids[k], 0.0); // a tiny writer
        return;
    }
    if (r->format != NBIO_OUT_CSV || r->shape.distance) {
        for (int64_t k = 0; k < count; k++) nbio_rows_put(r, two ? a : ids[k], ids[k], 0.0);
        return;
    }
    // CSV: "a," formatted once, then each id and a newline.
    char prefix[24] = {0};
    const size_t plen = two ? csv_prefix(prefix, a) : 0;
    for (int64_t k = 0; k < count; k++) {
        if (ids[k] < 0 || !room_for(w, sizeof prefix + 12)) { // not for the fast path
            nbio_rows_put(r, two ? a : ids[k], ids[k], 0.0);
            continue;
        }
        char *p = w->buf + w->used;
        memcpy(p, prefix, sizeof prefix); // a fixed size: a few stores; plen of it counts
        p += plen;
        p += put_u32(p, (uint32_t)ids[k]);
        *p++ = '\n';
        w->used = (size_t)(p - w->buf);
        r->rows++;
    }
}

void nbio_rows_put_dists(nbioRows *r, int64_t a, const int32_t *ids, const double *dists,
                         int64_t count)
{
    nbioWriter *w = &r->w;
    if (r->format != NBIO_OUT_CSV || r->shape.columns != 3) {
        for (int64_t k = 0; k < count; k++) nbio_rows_put(r, a, ids[k], dists[k]);
        return;
    }
    // CSV: "a," formatted once, then each id, its distance and a newline.
    char prefix[24] = {0};
    const size_t plen = csv_prefix(prefix, a);
    for (int64_t k = 0; k < count; k++) {
        if (ids[k] < 0 || !room_for(w, sizeof prefix + 12 + NBIO_DOUBLE_MAX)) { // a tiny writer
            nbio_rows_put(r, a, ids[k], dists[k]);
            continue;
        }
        char *p = w->buf + w->used;
        memcpy(p, prefix, sizeof prefix); // a fixed size: a few stores; plen of it counts
        p += plen;
        p += put_u32(p, (uint32_t)ids[k]);
        *p++ = ',';
        p += nbio_format_double(p, dists[k]);
        *p++ = '\n';
        w->used = (size_t)(p - w->buf);
        r->rows++;
    }
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
