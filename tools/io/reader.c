// SPDX-License-Identifier: MIT
// The reader front end: picks a format, slurps the file (or standard input) into memory with a
// terminating 0, and hands the bytes to csv.c, f64.c or npy.c. Also the strict number parser
// that CSV fields and the tool's option values share, so both accept exactly the same numbers.
#define _DEFAULT_SOURCE // fileno, fstat, mmap (MAP_POPULATE) under -std=c11
#include "io/reader.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

// Maps a regular, non-empty file read-only, its pages read in ahead (MAP_POPULATE where the
// system has it). NULL for anything else (a pipe, an empty file, no mmap): then it is read.
static void *nbio_map(FILE *f, size_t *size)
{
    struct stat st;
    const int fd = fileno(f);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) return NULL;
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) return NULL;
    int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
    flags |= MAP_POPULATE;
#endif
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, flags, fd, 0);
    if (p == MAP_FAILED) return NULL;
    *size = (size_t)st.st_size;
    return p;
}

static void nbio_unmap(void *p, size_t size)
{
    munmap(p, size);
}

static char lower_ascii(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static bool equal_ignoring_case(const char *a, size_t len, const char *word)
{
    size_t n = strlen(word);
    if (len != n) return false;
    for (size_t k = 0; k < n; k++)
        if (lower_ascii(a[k]) != word[k]) return false;
    return true;
}

nbioFormat nbio_format_from_name(const char *name)
{
    if (strcmp(name, "csv") == 0) return NBIO_FORMAT_CSV;
    if (strcmp(name, "f64") == 0) return NBIO_FORMAT_F64;
    if (strcmp(name, "npy") == 0) return NBIO_FORMAT_NPY;
    return NBIO_FORMAT_AUTO;
}

nbioFormat nbio_format_for_path(const char *path)
{
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (dot == NULL || (slash != NULL && dot < slash)) return NBIO_FORMAT_CSV;
    size_t len = strlen(dot + 1);
    if (equal_ignoring_case(dot + 1, len, "f64")) return NBIO_FORMAT_F64;
    if (equal_ignoring_case(dot + 1, len, "npy")) return NBIO_FORMAT_NPY;
    return NBIO_FORMAT_CSV;
}

void nbio_points_free(nbioPoints *points)
{
    if (points == NULL) return;
    if (points->mapping != NULL)
        nbio_unmap(points->mapping, points->mapping_size);
    else
        free(points->coords);
    points->mapping = NULL;
    points->mapping_size = 0;
    points->coords = NULL;
    points->count = 0;
    points->dim = 0;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

// "nan", "nan(chars)" or "inf"/"infinity" after an optional sign, any case: what strtod would
// turn into a non-finite value. We name them instead of calling them "not a number" text.
static nbioNumber classify_word(const char *s, size_t len)
{
    if (len >= 3 && equal_ignoring_case(s, 3, "nan")) {
        if (len == 3) return NBIO_NUMBER_NAN;
        if (s[3] != '(' || s[len - 1] != ')') return NBIO_NUMBER_INVALID;
        for (size_t k = 4; k + 1 < len; k++) {
            char c = lower_ascii(s[k]);
            if (!is_digit(c) && !(c >= 'a' && c <= 'z') && c != '_') return NBIO_NUMBER_INVALID;
        }
        return NBIO_NUMBER_NAN;
    }
    if (equal_ignoring_case(s, len, "inf") || equal_ignoring_case(s, len, "infinity"))
        return NBIO_NUMBER_INFINITE;
    return NBIO_NUMBER_INVALID;
}

nbioNumber nbio_parse_number(const char *s, size_t len, double *out)
{
    size_t b = 0;
    size_t e = len;
    while (b < e && (s[b] == ' ' || s[b] == '\t')) b++;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) e--;
    if (b == e) return NBIO_NUMBER_EMPTY;

    // Check the grammar ourselves: strtod alone would also take hex floats, "nan", "inf" and
    // stop silently at trailing junk.
    // On the way, the digits as an integer (while 19 fit), how many follow the point, and the
    // exponent (while 5 digits fit), for the fast path below.
    size_t p = b;
    const bool negative = s[p] == '-';
    if (s[p] == '+' || s[p] == '-') p++;
    if (p < e && !is_digit(s[p]) && s[p] != '.') return classify_word(s + p, e - p);
    size_t digits = 0, fraction = 0;
    uint64_t mantissa = 0;
    while (p < e && is_digit(s[p])) {
        if (digits < 19) mantissa = mantissa * 10 + (uint64_t)(s[p] - '0');
        p++, digits++;
    }
    if (p < e && s[p] == '.') {
        p++;
        while (p < e && is_digit(s[p])) {
            if (digits < 19) mantissa = mantissa * 10 + (uint64_t)(s[p] - '0');
            p++, digits++, fraction++;
        }
    }
    if (digits == 0) return NBIO_NUMBER_INVALID;
    long exponent = 0;
    size_t exp_digits = 0;
    if (p < e && (s[p] == 'e' || s[p] == 'E')) {
        p++;
        const bool down = p < e && s[p] == '-';
        if (p < e && (s[p] == '+' || s[p] == '-')) p++;
        while (p < e && is_digit(s[p])) {
            if (exp_digits < 5) exponent = exponent * 10 + (s[p] - '0');
            p++, exp_digits++;
        }
        if (exp_digits == 0) return NBIO_NUMBER_INVALID;
        if (down) exponent = -exponent;
    }
    if (p != e) return NBIO_NUMBER_INVALID;

#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    // The fast path (Clinger's): an integer of at most 2^53 and a power of ten of at most 10^22
    // are both exact doubles, so one multiplication or division, correctly rounded, gives the
    // double nearest the decimal, as strtod does (in double evaluation only: x87's wider
    // registers would round twice). "12.5", "0.001", "-3e5" and most short fields take it.
    static const double pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const long scale = exponent - (long)fraction;
    if (digits <= 19 && exp_digits <= 5 && mantissa <= ((uint64_t)1 << 53) && scale >= -22 &&
        scale <= 22) {
        const double m = (double)mantissa;
        const double v = scale >= 0 ? m * pow10[scale] : m / pow10[-scale];
        *out = negative ? -v : v;
        return NBIO_NUMBER_OK;
    }
#endif

    // The token is a plain decimal number followed by a byte that cannot extend it, so strtod
    // (always in the "C" locale here: the tool never calls setlocale) consumes exactly it.
    char *end = NULL;
    double v = strtod(s + b, &end);
    if (end != s + e) return NBIO_NUMBER_INVALID;
    if (!isfinite(v)) return NBIO_NUMBER_OVERFLOW;
    *out = v;
    return NBIO_NUMBER_OK;
}

void nbio_quote(char *dst, size_t cap, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const size_t shown = 40;
    size_t o = 0;
    if (cap < 16) {
        if (cap > 0) dst[0] = 0;
        return;
    }
    dst[o++] = '"';
    for (size_t k = 0; k < len && k < shown && o + 10 < cap; k++) {
        unsigned char c = (unsigned char)s[k];
        if (c == '"' || c == '\\') {
            dst[o++] = '\\';
            dst[o++] = (char)c;
        } else if (c >= 0x20 && c < 0x7f) {
            dst[o++] = (char)c;
        } else {
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hex[c >> 4];
            dst[o++] = hex[c & 15];
        }
    }
    dst[o++] = '"';
    if (len > shown && o + 4 < cap) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    dst[o] = 0;
}

// Reads all of `f` into a fresh buffer with one extra 0 byte at the end.
static nbioResult slurp(FILE *f, char **data, size_t *size, nbioError *err)
{
    size_t cap = 1 << 16;
    size_t used = 0;
    char *buf = malloc(cap);
    if (buf == NULL) return NBIO_NO_MEMORY;
    for (;;) {
        if (cap - used < 2) {
            if (cap > SIZE_MAX / 2) {
                free(buf);
                return NBIO_NO_MEMORY;
            }
            char *grown = realloc(buf, cap * 2);
            if (grown == NULL) {
                free(buf);
                return NBIO_NO_MEMORY;
            }
            buf = grown;
            cap *= 2;
        }
        size_t want = cap - used - 1;
        size_t got = fread(buf + used, 1, want, f);
        used += got;
        if (got < want) {
            if (ferror(f)) {
                int e = errno;
                free(buf);
                snprintf(err->text, sizeof err->text, "cannot read: %s",
                         e != 0 ? strerror(e) : "read error");
                return NBIO_BAD_INPUT;
            }
            break; // end of file
        }
    }
    buf[used] = 0;
    *data = buf;
    *size = used;
    return NBIO_OK;
}

const char *nbio_column_name(int32_t dim, int32_t k)
{
    static const char *const point[3] = {"x", "y", "z"};
    static const char *const rect[4] = {"minx", "miny", "maxx", "maxy"};
    return dim == NBIO_RECTS ? rect[k & 3] : point[k % 3];
}

int nbio_rect_inverted(const double *r)
{
    for (int a = 0; a < 2; a++)
        if (r[a] > r[2 + a]) return a;
    return -1;
}

nbioResult nbio_read(const char *path, nbioFormat format, int32_t dim, nbioPoints *out,
                     nbioError *err)
{
    out->coords = NULL;
    out->count = 0;
    out->dim = 0;
    out->mapping = NULL;
    out->mapping_size = 0;
    err->line = 0;
    err->point = -1;
    err->text[0] = 0;

    bool is_stdin = strcmp(path, "-") == 0;
    if (format == NBIO_FORMAT_AUTO)
        format = is_stdin ? NBIO_FORMAT_CSV : nbio_format_for_path(path);

    FILE *f = stdin;
    if (!is_stdin) {
        errno = 0;
        f = fopen(path, "rb");
        if (f == NULL) {
            int e = errno;
            snprintf(err->text, sizeof err->text, "cannot open: %s",
                     e != 0 ? strerror(e) : "unknown error");
            return NBIO_BAD_INPUT;
        }
    }
    char *data = NULL;
    size_t size = 0;
    errno = 0;
    // A binary file is mapped rather than read: its coordinates can then be used where they lie.
    const bool binary = format == NBIO_FORMAT_F64 || format == NBIO_FORMAT_NPY;
    void *mapping = !is_stdin && binary ? nbio_map(f, &size) : NULL;
    nbioResult r = NBIO_OK;
    if (mapping != NULL) {
        data = (char *)mapping;
        out->mapping = mapping; // the parsers may borrow from it
        out->mapping_size = size;
    } else {
        r = slurp(f, &data, &size, err);
    }
    if (!is_stdin) fclose(f);
    if (r != NBIO_OK) return r;

    switch (format) {
    case NBIO_FORMAT_F64: r = nbio_parse_f64(data, size, dim, out, err); break;
    case NBIO_FORMAT_NPY: r = nbio_parse_npy(data, size, dim, out, err); break;
    default: r = nbio_parse_csv(data, size, dim, out, err); break;
    }
    if (mapping == NULL) {
        free(data);
    } else if (r != NBIO_OK || out->count == 0 || (const char *)out->coords < data ||
               (const char *)out->coords >= data + size) {
        nbio_unmap(mapping, size); // the points were copied (or there are none): let it go
        out->mapping = NULL;
        out->mapping_size = 0;
    }
    return r;
}
