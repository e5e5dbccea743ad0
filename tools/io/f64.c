// SPDX-License-Identifier: MIT
// Raw little-endian float64 points (.f64): x0 y0 [z0] x1 y1 [z1] ..., no header. The file size
// must be a whole number of points. Bytes are assembled explicitly, so the reader gives the
// same answer on a big-endian host.
#include "io/reader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double load_f64(const unsigned char *b, bool big_endian)
{
    uint64_t u = 0;
    for (int k = 0; k < 8; k++) u |= (uint64_t)b[big_endian ? 7 - k : k] << (8 * k);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static double load_f32(const unsigned char *b, bool big_endian)
{
    uint32_t u = 0;
    for (int k = 0; k < 4; k++) u |= (uint32_t)b[big_endian ? 3 - k : k] << (8 * k);
    float v;
    memcpy(&v, &u, sizeof v);
    return (double)v; // exact: every float is a double
}

nbioResult nbio_decode_points(const unsigned char *src, int64_t count, int32_t dim, int item_size,
                              bool big_endian, nbioPoints *out, nbioError *err)
{
    out->coords = NULL;
    out->count = 0;
    out->dim = dim;
    if (count == 0) return NBIO_OK;
    size_t n = (size_t)count * (size_t)dim; // count <= INT32_MAX, checked by the callers
    if (n > SIZE_MAX / sizeof(double)) return NBIO_NO_MEMORY;
    // Native doubles in a mapped file are used where they lie, once checked: no copy.
    const uint16_t one = 1;
    const bool little = *(const unsigned char *)&one == 1;
    if (out->mapping != NULL && item_size == 8 && big_endian == !little &&
        (uintptr_t)src % sizeof(double) == 0) {
        const double *v = (const double *)(const void *)src;
        // v * 0 is 0 for finite v and NaN otherwise: one test at the end. Four sums, so the
        // additions do not wait on each other (and the compiler may use vector lanes).
        double sum[4] = {0.0, 0.0, 0.0, 0.0};
        size_t k = 0;
        for (; k + 4 <= n; k += 4)
            for (int t = 0; t < 4; t++) sum[t] += v[k + (size_t)t] * 0.0;
        for (; k < n; k++) sum[0] += v[k] * 0.0;
        double bad = (sum[0] + sum[1]) + (sum[2] + sum[3]);
        // Rectangles must also have min <= max; an inverted one takes the path that reports it.
        for (int64_t r = 0; bad == 0.0 && dim == NBIO_RECTS && r < count; r++)
            if (nbio_rect_inverted(v + 4 * r) >= 0) bad = 1.0;
        if (bad == 0.0) {
            out->coords = (double *)(void *)(uintptr_t)src; // read-only: never written
            out->count = (int32_t)count;
            return NBIO_OK;
        }
    }
    double *coords = malloc(n * sizeof(double));
    if (coords == NULL) return NBIO_NO_MEMORY;
    for (size_t k = 0; k < n; k++) {
        const unsigned char *b = src + k * (size_t)item_size;
        double v = item_size == 8 ? load_f64(b, big_endian) : load_f32(b, big_endian);
        if (!isfinite(v)) {
            err->point = (int64_t)(k / (size_t)dim);
            snprintf(err->text, sizeof err->text, "NB_ERR_NOT_FINITE: %s is %s",
                     nbio_column_name(dim, (int32_t)(k % (size_t)dim)),
                     isnan(v) ? "NaN" : "infinite");
            free(coords);
            out->dim = 0;
            return NBIO_BAD_INPUT;
        }
        coords[k] = v;
    }
    for (int64_t r = 0; dim == NBIO_RECTS && r < count; r++) {
        const int bad = nbio_rect_inverted(coords + 4 * r);
        if (bad >= 0) {
            err->point = r;
            snprintf(err->text, sizeof err->text, "NB_ERR_OUT_OF_RANGE: %s > %s",
                     nbio_column_name(dim, bad), nbio_column_name(dim, 2 + bad));
            free(coords);
            out->dim = 0;
            return NBIO_BAD_INPUT;
        }
    }
    out->coords = coords;
    out->count = (int32_t)count;
    return NBIO_OK;
}

nbioResult nbio_layout_f64(uint64_t size, int32_t dim, nbioLayout *out, nbioError *err)
{
    if (dim == 0) dim = 2;
    const uint64_t point_bytes = (uint64_t)dim * 8;
    if (size % point_bytes != 0) {
        if (dim == NBIO_RECTS)
            snprintf(err->text, sizeof err->text,
                     "truncated: %llu bytes is not a whole number of rectangles (32 bytes each)",
                     (unsigned long long)size);
        else
            snprintf(err->text, sizeof err->text,
                     "truncated: %llu bytes is not a whole number of %dD points (%llu bytes each)",
                     (unsigned long long)size, (int)dim, (unsigned long long)point_bytes);
        return NBIO_BAD_INPUT;
    }
    const uint64_t count = size / point_bytes;
    if (count > (uint64_t)NBIO_MAX_POINTS) {
        snprintf(err->text, sizeof err->text, "too many points: %llu (at most %d)",
                 (unsigned long long)count, (int)NBIO_MAX_POINTS);
        return NBIO_BAD_INPUT;
    }
    out->data_at = 0;
    out->count = (int64_t)count;
    out->dim = dim;
    out->item_size = 8;
    out->big_endian = false;
    return NBIO_OK;
}

nbioResult nbio_parse_f64(const char *data, size_t size, int32_t dim, nbioPoints *out,
                          nbioError *err)
{
    out->coords = NULL;
    out->count = 0;
    out->dim = 0;
    nbioLayout at;
    if (nbio_layout_f64((uint64_t)size, dim, &at, err) != NBIO_OK) return NBIO_BAD_INPUT;
    nbioResult r =
        nbio_decode_points((const unsigned char *)data, at.count, at.dim, 8, false, out, err);
    if (r == NBIO_OK) out->dim = at.dim;
    return r;
}
