// SPDX-License-Identifier: MIT
// CSV points: one point a line, "x,y" or "x,y,z", LF or CRLF line ends.
//
// Rules (docs/cli.md repeats them for users):
// - A UTF-8 byte order mark at the very start is skipped.
// - Lines that are empty or hold only spaces and tabs are skipped (but still counted, so
//   line numbers in messages are the ones an editor shows).
// - The first non-blank line is a header, and skipped, when every one of its fields is a name:
//   it starts with a letter, '_' or '#' (inside optional quotes) and is not a spelling of NaN
//   or infinity ("x,y", "lon,lat,alt", "#x,y", "\"x\",\"y\""). "x,1" and "nan,inf" are not
//   headers: they are errors.
//   A header's column count sets the dimension just as a data line's would.
// - The first data line (or header) sets the dimension: 2 or 3 columns; every later line must
//   have the same count. Each field is one strict decimal number (nbio_parse_number).
#include "io/reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct CsvState {
    double *coords;
    size_t used;     // doubles stored
    size_t capacity; // doubles allocated
} CsvState;

static bool append_point(CsvState *st, const double *p, int32_t dim)
{
    if (st->capacity - st->used < (size_t)dim) {
        size_t grown = st->capacity < 1024 ? 1024 : st->capacity * 2;
        if (grown > SIZE_MAX / sizeof(double)) return false;
        double *next = realloc(st->coords, grown * sizeof(double));
        if (next == NULL) return false;
        st->coords = next;
        st->capacity = grown;
    }
    memcpy(st->coords + st->used, p, (size_t)dim * sizeof(double));
    st->used += (size_t)dim;
    return true;
}

// True if the field is a column name rather than data (see the header rule above): after
// trimming and removing one pair of matching quotes, it starts with a letter, '_' or '#', and
// is not a spelling of NaN or infinity.
static bool is_name(const char *s, size_t len)
{
    size_t b = 0;
    size_t e = len;
    while (b < e && (s[b] == ' ' || s[b] == '\t')) b++;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) e--;
    if (e - b >= 2 && (s[b] == '"' || s[b] == '\'') && s[e - 1] == s[b]) b++, e--;
    if (b == e) return false;
    char c = s[b];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '#')) return false;
    double ignored;
    return nbio_parse_number(s + b, e - b, &ignored) == NBIO_NUMBER_INVALID;
}

static bool is_blank(const char *s, size_t len)
{
    for (size_t k = 0; k < len; k++)
        if (s[k] != ' ' && s[k] != '\t') return false;
    return true;
}

static int64_t count_fields(const char *s, size_t len)
{
    int64_t n = 1;
    for (const char *p = s, *end = s + len; (p = memchr(p, ',', (size_t)(end - p))) != NULL; p++)
        n++;
    return n;
}

// Sets err->text for a field that did not parse as a finite number.
static void field_problem(nbioError *err, nbioNumber why, int32_t dim, int32_t column,
                          const char *s, size_t len)
{
    char quoted[200];
    const char *name = nbio_column_name(dim, column);
    nbio_quote(quoted, sizeof quoted, s, len);
    switch (why) {
    case NBIO_NUMBER_EMPTY: snprintf(err->text, sizeof err->text, "%s is empty", name); break;
    case NBIO_NUMBER_NAN:
        snprintf(err->text, sizeof err->text, "NB_ERR_NOT_FINITE: %s is NaN", name);
        break;
    case NBIO_NUMBER_INFINITE:
        snprintf(err->text, sizeof err->text, "NB_ERR_NOT_FINITE: %s is infinite", name);
        break;
    case NBIO_NUMBER_OVERFLOW:
        snprintf(err->text, sizeof err->text, "NB_ERR_NOT_FINITE: %s overflows a double: %s", name,
                 quoted);
        break;
    default: snprintf(err->text, sizeof err->text, "%s is not a number: %s", name, quoted); break;
    }
}

static void column_problem(nbioError *err, int32_t dim, bool dim_fixed, int64_t found)
{
    if (dim == 0)
        snprintf(err->text, sizeof err->text, "expected 2 or 3 columns, found %lld",
                 (long long)found);
    else if (dim == NBIO_RECTS)
        snprintf(err->text, sizeof err->text,
                 "expected 4 columns (minx,miny,maxx,maxy), found %lld", (long long)found);
    else if (dim_fixed)
        snprintf(err->text, sizeof err->text, "expected %d columns (--dim %d), found %lld",
                 (int)dim, (int)dim, (long long)found);
    else
        snprintf(err->text, sizeof err->text, "expected %d columns, found %lld", (int)dim,
                 (long long)found);
}

nbioResult nbio_parse_csv(const char *data, size_t size, int32_t dim, nbioPoints *out,
                          nbioError *err)
{
    CsvState st = {NULL, 0, 0};
    bool dim_fixed = dim != 0; // the caller insists on this dimension
    bool first = true;         // no non-blank line seen yet
    int64_t line_no = 0;
    int64_t count = 0;
    size_t pos = 0;

    out->coords = NULL;
    out->count = 0;
    out->dim = 0;
    if (size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) pos = 3;

    while (pos < size) {
        line_no++;
        const char *line = data + pos;
        const char *nl = memchr(line, '\n', size - pos);
        size_t len = nl != NULL ? (size_t)(nl - line) : size - pos;
        pos += len + 1;
        if (len > 0 && line[len - 1] == '\r') len--;
        if (is_blank(line, len)) continue;
        err->line = line_no;
        if (memchr(line, '\r', len) != NULL) {
            snprintf(err->text, sizeof err->text,
                     "carriage return inside a line (only LF or CRLF line ends are accepted)");
            goto bad_input;
        }

        int64_t nf = count_fields(line, len);
        bool header = false;
        if (first) {
            first = false;
            header = true;
            const char *f = line;
            for (int64_t k = 0; k < nf && header; k++) {
                const char *comma = memchr(f, ',', (size_t)(line + len - f));
                size_t flen = comma != NULL ? (size_t)(comma - f) : (size_t)(line + len - f);
                header = is_name(f, flen);
                f += flen + 1;
            }
        }
        if (dim == 0 && (nf == 2 || nf == 3)) dim = (int32_t)nf;
        if (nf != dim) {
            column_problem(err, dim, dim_fixed, nf);
            goto bad_input;
        }
        if (header) continue;

        double p[4];
        const char *f = line;
        for (int32_t k = 0; k < dim; k++) {
            const char *comma = memchr(f, ',', (size_t)(line + len - f));
            size_t flen = comma != NULL ? (size_t)(comma - f) : (size_t)(line + len - f);
            nbioNumber r = nbio_parse_number(f, flen, &p[k]);
            if (r != NBIO_NUMBER_OK) {
                field_problem(err, r, dim, k, f, flen);
                goto bad_input;
            }
            f += flen + 1;
        }
        const int bad = dim == NBIO_RECTS ? nbio_rect_inverted(p) : -1;
        if (bad >= 0) {
            snprintf(err->text, sizeof err->text, "NB_ERR_OUT_OF_RANGE: %s > %s",
                     nbio_column_name(dim, bad), nbio_column_name(dim, 2 + bad));
            goto bad_input;
        }
        if (count == NBIO_MAX_POINTS) {
            snprintf(err->text, sizeof err->text, "too many points (at most %d)",
                     (int)NBIO_MAX_POINTS);
            goto bad_input;
        }
        if (!append_point(&st, p, dim)) {
            free(st.coords);
            return NBIO_NO_MEMORY;
        }
        count++;
    }
    err->line = 0;
    out->coords = st.coords;
    out->count = (int32_t)count;
    out->dim = dim;
    return NBIO_OK;

bad_input:
    free(st.coords);
    return NBIO_BAD_INPUT;
}
