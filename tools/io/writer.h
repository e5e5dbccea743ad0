// SPDX-License-Identifier: MIT
// A small buffered text writer for the command-line tool's results. Millions of "i,j" lines
// must print fast, so integers are formatted by hand (two digits at a time) into a large
// buffer that goes to the stream with one fwrite per fill, instead of one printf per number.
#ifndef NEARBY_TOOLS_IO_WRITER_H
#define NEARBY_TOOLS_IO_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/// Output buffer in front of a stream. `failed` becomes true after a write error; later writes
/// are dropped and nbio_writer_finish() reports it. Without a stream the buffer is all there is:
/// when full it doubles (realloc) if `grows`, else the writer fails.
typedef struct nbioWriter {
    FILE *stream;
    char *buf;
    size_t used;
    size_t cap; ///< at least 64 bytes
    bool failed;
    bool grows; ///< no stream: buf is from malloc and doubles when full (failed if it cannot)
} nbioWriter;

/// Starts a writer over `stream` using the caller's `buf` of `cap` (>= 64) bytes.
void nbio_writer_init(nbioWriter *w, FILE *stream, char *buf, size_t cap);

/// Writes out what is buffered (no fflush of the stream); a growing buffer doubles instead.
void nbio_writer_drain(nbioWriter *w);

/// Drains, then flushes the stream. False if any write failed.
bool nbio_writer_finish(nbioWriter *w);

/// Appends `len` bytes.
void nbio_write_bytes(nbioWriter *w, const char *s, size_t len);

/// Appends a 0-terminated string.
void nbio_write_str(nbioWriter *w, const char *s);

/// The most bytes nbio_format_double writes ("-2.2250738585072014e-308" is 24).
#define NBIO_DOUBLE_MAX 32

/// Writes into dst (NBIO_DOUBLE_MAX bytes, any of which it may write; the text is not
/// 0-terminated) the shortest decimal that strtod
/// reads back to exactly v, the nearest to v of those; laid out as printf's "%.17g" would lay
/// out its digits: fixed point for decimal exponents -4 to 16 ("0.1", "1234.5", "0.00012"),
/// else "1.5e-07", "2e+20"; "0", "-0", "inf", "nan". Returns the length. Exact arithmetic in
/// 128-bit integers for 1e-5 <= |v| < 2^55, printf and strtod elsewhere (same result, slower).
size_t nbio_format_double(char *dst, double v);

/// Appends nbio_format_double(v).
void nbio_write_double(nbioWriter *w, double v);

/// Room for the longest single item (an int64 and a separator) before the buffer must drain.
#define NBIO_WRITER_SLACK 48

/// "00" "01" ... "99": the two digits of 0 to 99.
extern const char nbio_digit_pairs[201];

/// Writes the decimal digits of u backwards, two at a time, ending just before `end`; returns
/// where they start (at most 20 bytes before `end`).
static inline char *nbio_digits_before(char *end, uint64_t u)
{
    const char *pairs = nbio_digit_pairs;
    char *p = end;
    while (u >= 100) {
        unsigned r = (unsigned)(u % 100) * 2;
        u /= 100;
        *--p = pairs[r + 1];
        *--p = pairs[r];
    }
    if (u >= 10) {
        unsigned r = (unsigned)u * 2;
        *--p = pairs[r + 1];
        *--p = pairs[r];
    } else {
        *--p = (char)('0' + u);
    }
    return p;
}

/// Appends a decimal integer. Inline: this is the per-line hot path.
static inline void nbio_write_i64(nbioWriter *w, int64_t v)
{
    char tmp[24];
    char *p = nbio_digits_before(tmp + sizeof tmp, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
    if (v < 0) *--p = '-';
    size_t len = (size_t)(tmp + sizeof tmp - p);
    if (w->cap - w->used < NBIO_WRITER_SLACK) nbio_writer_drain(w);
    for (size_t k = 0; k < len; k++) w->buf[w->used + k] = p[k];
    w->used += len;
}

/// Appends one byte.
static inline void nbio_write_char(nbioWriter *w, char c)
{
    if (w->cap - w->used < NBIO_WRITER_SLACK) nbio_writer_drain(w);
    w->buf[w->used++] = c;
}

#endif
