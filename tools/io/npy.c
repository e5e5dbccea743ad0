// SPDX-License-Identifier: MIT
// NumPy .npy points: a 2-D array of shape (N, 2) or (N, 3), C order, float64 or float32.
//
// Layout: "\x93NUMPY", major, minor, header length (2 bytes little-endian in version 1.0, 4 in
// 2.0 and 3.0), then the header: a Python dict literal such as
//   {'descr': '<f8', 'fortran_order': False, 'shape': (1000, 2), }
// padded with spaces and a newline, then the raw data. We parse that literal with a small
// hand-written scanner (strings, True/False, tuples of integers) and accept nothing else.
#include "io/reader.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct Cursor {
    const char *p;
    const char *end;
} Cursor;

static void skip_space(Cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool take(Cursor *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

// A Python string literal in ' or " quotes without escapes (all numpy ever writes here).
static bool take_string(Cursor *c, const char **s, size_t *len)
{
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
    char q = *c->p++;
    const char *b = c->p;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\') return false;
        c->p++;
    }
    if (c->p >= c->end) return false;
    *s = b;
    *len = (size_t)(c->p - b);
    c->p++;
    return true;
}

static bool take_word(Cursor *c, const char *word)
{
    size_t n = strlen(word);
    skip_space(c);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return false;
    c->p += n;
    return true;
}

#define MAX_AXES 8
#define DIM_SATURATED ((int64_t)1 << 62) // axis lengths at or above this are shown as >= 2^62

// A tuple of non-negative integers, e.g. "()", "(5,)", "(5, 2)" (Python 2 wrote "5L").
static bool take_shape(Cursor *c, int64_t *axes, int *naxes)
{
    *naxes = 0;
    if (!take(c, '(')) return false;
    for (;;) {
        if (take(c, ')')) return true;
        skip_space(c);
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') return false;
        int64_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            // Guard before multiplying: v * 10 + 9 must fit int64_t (a 19-digit axis would not).
            if (v < DIM_SATURATED)
                v = v <= (INT64_MAX - 9) / 10 ? v * 10 + (*c->p - '0') : DIM_SATURATED;
            c->p++;
        }
        if (c->p < c->end && *c->p == 'L') c->p++;
        if (*naxes == MAX_AXES) return false;
        axes[(*naxes)++] = v < DIM_SATURATED ? v : DIM_SATURATED;
        if (take(c, ',')) continue;
        return take(c, ')');
    }
}

static void shape_text(char *dst, size_t cap, const int64_t *axes, int naxes)
{
    size_t o = 0;
    o += (size_t)snprintf(dst + o, cap - o, "(");
    for (int k = 0; k < naxes && o < cap; k++)
        o += (size_t)snprintf(dst + o, cap - o, "%s%lld", k > 0 ? ", " : "", (long long)axes[k]);
    if (o < cap) snprintf(dst + o, cap - o, naxes == 1 ? ",)" : ")");
}

static nbioResult malformed(nbioError *err, const char *what)
{
    snprintf(err->text, sizeof err->text, "malformed .npy header: %s", what);
    return NBIO_BAD_INPUT;
}

nbioResult nbio_layout_npy(const char *data, size_t size, uint64_t file_size, int32_t dim,
                           nbioLayout *out, nbioError *err)
{
    const unsigned char *u = (const unsigned char *)data;
    if (size < 10 || memcmp(data, "\x93NUMPY", 6) != 0) {
        snprintf(err->text, sizeof err->text, "not a NumPy .npy file (no \\x93NUMPY magic)");
        return NBIO_BAD_INPUT;
    }
    int major = u[6];
    int minor = u[7];
    size_t header_at;
    size_t header_len;
    if (major == 1 && minor == 0) {
        header_at = 10;
        header_len = (size_t)u[8] | (size_t)u[9] << 8;
    } else if ((major == 2 || major == 3) && minor == 0) {
        if (size < 12) return malformed(err, "truncated");
        header_at = 12;
        header_len = (size_t)u[8] | (size_t)u[9] << 8 | (size_t)u[10] << 16 | (size_t)u[11] << 24;
    } else {
        snprintf(err->text, sizeof err->text,
                 "unsupported .npy version %d.%d (1.0, 2.0 and 3.0 are read)", major, minor);
        return NBIO_BAD_INPUT;
    }
    if (header_len > size - header_at) return malformed(err, "truncated");

    // The header dict: three known keys, in any order, each once.
    Cursor c = {data + header_at, data + header_at + header_len};
    const char *descr = NULL;
    size_t descr_len = 0;
    int fortran = -1;
    int64_t axes[MAX_AXES];
    int naxes = -1;
    if (!take(&c, '{')) return malformed(err, "expected '{'");
    while (!take(&c, '}')) {
        const char *key;
        size_t key_len;
        if (!take_string(&c, &key, &key_len)) return malformed(err, "expected a quoted key");
        if (!take(&c, ':')) return malformed(err, "expected ':'");
        if (key_len == 5 && memcmp(key, "descr", 5) == 0 && descr == NULL) {
            if (!take_string(&c, &descr, &descr_len))
                return malformed(err, "'descr' is not a simple type string");
        } else if (key_len == 13 && memcmp(key, "fortran_order", 13) == 0 && fortran < 0) {
            if (take_word(&c, "True"))
                fortran = 1;
            else if (take_word(&c, "False"))
                fortran = 0;
            else
                return malformed(err, "'fortran_order' is not True or False");
        } else if (key_len == 5 && memcmp(key, "shape", 5) == 0 && naxes < 0) {
            if (!take_shape(&c, axes, &naxes))
                return malformed(err, "'shape' is not a tuple of integers");
        } else {
            char quoted[120];
            char what[200];
            nbio_quote(quoted, sizeof quoted, key, key_len);
            snprintf(what, sizeof what, "unexpected or repeated key %s", quoted);
            return malformed(err, what);
        }
        if (take(&c, ',')) continue;
        if (!take(&c, '}')) return malformed(err, "expected ',' or '}'");
        break;
    }
    skip_space(&c);
    if (c.p != c.end) return malformed(err, "text after the closing '}'");
    if (descr == NULL) return malformed(err, "no 'descr'");
    if (fortran < 0) return malformed(err, "no 'fortran_order'");
    if (naxes < 0) return malformed(err, "no 'shape'");

    int item_size = 0;
    bool big_endian = false;
    if (descr_len == 3 && (descr[0] == '<' || descr[0] == '>') && descr[1] == 'f' &&
        (descr[2] == '8' || descr[2] == '4')) {
        item_size = descr[2] - '0';
        big_endian = descr[0] == '>';
    } else {
        char quoted[120];
        nbio_quote(quoted, sizeof quoted, descr, descr_len);
        snprintf(err->text, sizeof err->text,
                 "unsupported dtype %s (expected '<f8' or '<f4'; '>f8' and '>f4' also work)",
                 quoted);
        return NBIO_BAD_INPUT;
    }
    if (fortran == 1) {
        snprintf(err->text, sizeof err->text,
                 "fortran_order True is not supported (save a C-ordered array)");
        return NBIO_BAD_INPUT;
    }
    char shape[200];
    shape_text(shape, sizeof shape, axes, naxes);
    if (dim == NBIO_RECTS && (naxes != 2 || axes[1] != 4)) {
        snprintf(err->text, sizeof err->text, "shape %s is not (N, 4) (minx, miny, maxx, maxy)",
                 shape);
        return NBIO_BAD_INPUT;
    }
    if (dim != NBIO_RECTS && (naxes != 2 || (axes[1] != 2 && axes[1] != 3))) {
        snprintf(err->text, sizeof err->text, "shape %s is not (N, 2) or (N, 3)", shape);
        return NBIO_BAD_INPUT;
    }
    if (dim != 0 && axes[1] != dim) {
        snprintf(err->text, sizeof err->text, "shape %s does not match --dim %d", shape, (int)dim);
        return NBIO_BAD_INPUT;
    }
    if (axes[0] > NBIO_MAX_POINTS) {
        snprintf(err->text, sizeof err->text, "too many points: %s%lld (at most %d)",
                 axes[0] >= DIM_SATURATED ? ">= " : "", (long long)axes[0], (int)NBIO_MAX_POINTS);
        return NBIO_BAD_INPUT;
    }

    // At most 2^31 * 3 * 8 bytes: fits uint64_t, and compared before any size_t arithmetic.
    const uint64_t data_at = (uint64_t)(header_at + header_len);
    const uint64_t have = file_size - data_at;
    const uint64_t need = (uint64_t)axes[0] * (uint64_t)axes[1] * (uint64_t)item_size;
    if (have < need) {
        snprintf(err->text, sizeof err->text, "truncated: expected %llu data bytes, found %llu",
                 (unsigned long long)need, (unsigned long long)have);
        return NBIO_BAD_INPUT;
    }
    if (have > need) {
        snprintf(err->text, sizeof err->text, "%llu unexpected bytes after the data",
                 (unsigned long long)(have - need));
        return NBIO_BAD_INPUT;
    }
    out->data_at = data_at;
    out->count = axes[0];
    out->dim = (int32_t)axes[1];
    out->item_size = item_size;
    out->big_endian = big_endian;
    return NBIO_OK;
}

nbioResult nbio_parse_npy(const char *data, size_t size, int32_t dim, nbioPoints *out,
                          nbioError *err)
{
    out->coords = NULL;
    out->count = 0;
    out->dim = 0;
    nbioLayout at;
    if (nbio_layout_npy(data, size, (uint64_t)size, dim, &at, err) != NBIO_OK)
        return NBIO_BAD_INPUT;
    return nbio_decode_points((const unsigned char *)data + at.data_at, at.count, at.dim,
                              at.item_size, at.big_endian, out, err);
}
