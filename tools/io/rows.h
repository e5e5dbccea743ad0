// SPDX-License-Identifier: MIT
// Result rows for the command-line tool: one to three columns a row (0-based indices, and for
// kNN a distance), written as they come, in bounded memory, as CSV text, a NumPy .npy array or
// raw little-endian .f64 / .i64 values. The format comes from the output file's extension.
//
// .npy: rows of index columns only are one int32 array of shape (N, C), or (N,) for one column
// (indices are below 2^31); rows with a distance are one structured array of shape (N,), the
// named fields int32 for indices and float64 for the distance, packed (no padding). The row
// count goes into the header when the rows are finished, so a .npy needs a seekable file.
// .f64 writes every column as a double (indices are exact), .i64 every column as an int64 (rows
// with a distance are refused).
#ifndef NEARBY_TOOLS_IO_ROWS_H
#define NEARBY_TOOLS_IO_ROWS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "io/writer.h"

/// Output formats.
typedef enum nbioOutFormat {
    NBIO_OUT_UNKNOWN = 0,
    NBIO_OUT_CSV,
    NBIO_OUT_NPY,
    NBIO_OUT_F64,
    NBIO_OUT_I64
} nbioOutFormat;

/// The format a path's extension names (.csv, .npy, .f64, .i64, any case), else
/// NBIO_OUT_UNKNOWN.
nbioOutFormat nbio_out_format_for_path(const char *path);

/// What the rows hold: `columns` (1 to 3) named columns, the last a distance when `distance`.
typedef struct nbioRowShape {
    int columns;
    const char *names[3]; ///< field names for a structured .npy ("q", "i", "distance")
    bool distance;        ///< the last column is a double, the others indices
} nbioRowShape;

/// A sink of rows in front of a stream.
typedef struct nbioRows {
    nbioWriter w;
    nbioOutFormat format;
    nbioRowShape shape;
    int64_t rows; ///< rows written so far
} nbioRows;

/// The size of a .npy header written by nbio_rows_start (magic to the data).
#define NBIO_NPY_HEADER_SIZE 256

/// Starts rows of `shape` on `stream` in `format` over the caller's buffer `buf` of `cap` (>= 64)
/// bytes. A .npy begins with a header for 0 rows, rewritten by nbio_rows_finish. False (and
/// `why` filled) if the format cannot hold the shape (.i64 and a distance).
bool nbio_rows_start(nbioRows *r, FILE *stream, nbioOutFormat format, const nbioRowShape *shape,
                     char *buf, size_t cap, const char **why);

/// Appends one row: a and b are indices (b unused with one column), d the distance (when the
/// shape has one). Not inline: one call a row costs little next to formatting it.
void nbio_rows_put(nbioRows *r, int64_t a, int64_t b, double d);

/// Appends the rows (a, ids[0]), ..., (a, ids[count - 1]) of a shape of two index columns, or
/// (ids[k]) alone for one column: the same bytes as nbio_rows_put row by row, faster (CSV
/// formats "a," once; a .npy stores its int32 pairs straight into the buffer).
void nbio_rows_put_run(nbioRows *r, int64_t a, const int32_t *ids, int64_t count);

/// Appends the rows (a, ids[0], dists[0]), ..., of a shape of three columns, the last a
/// distance: the same bytes as nbio_rows_put row by row, faster (CSV formats "a," once).
void nbio_rows_put_dists(nbioRows *r, int64_t a, const int32_t *ids, const double *dists,
                         int64_t count);

/// The most bytes one row takes in any format: two int64 indices and a distance in CSV.
#define NBIO_ROW_MAX (2 * 21 + NBIO_DOUBLE_MAX + 3)

/// Starts a part of the rows: rows of `shape` in `format` formatted into `buf` of `cap` (>= 64)
/// bytes from malloc alone, no stream and no .npy header, for a worker thread to fill while
/// others fill theirs; nbio_rows_append then writes the parts in order. The buffer doubles
/// (realloc) whenever it is full; the part owns it from here (free part->w.buf when done). If
/// it cannot grow the part is marked failed (w.failed), and nbio_rows_append passes that on.
/// The shape must suit the format (nbio_rows_start checked it).
void nbio_rows_start_part(nbioRows *part, nbioOutFormat format, const nbioRowShape *shape,
                          char *buf, size_t cap);

/// Writes the rows of `part` to `r` (its bytes and its row count) and empties the part for the
/// next batch.
void nbio_rows_append(nbioRows *r, nbioRows *part);

/// Where one query's rows lie among parts: part `part`'s bytes [off, off + len).
typedef struct nbioSpan {
    size_t off, len;
    int32_t part;
} nbioSpan;

/// Writes to `r` the bytes of `spans[0, count)` in that order (rows formatted out of order,
/// put back in order), then the row counts of parts[0, nparts), and empties those parts.
void nbio_rows_append_spans(nbioRows *r, nbioRows *parts, int32_t nparts, const nbioSpan *spans,
                            int64_t count);

/// Writes out the buffer, and for .npy rewrites the header with the row count (seeking to the
/// start of the stream). False if any write or the seek failed.
bool nbio_rows_finish(nbioRows *r);

/// The .npy header for `rows` rows of `shape` into dst (NBIO_NPY_HEADER_SIZE bytes): magic,
/// version 1.0, the dict padded with spaces to a newline at the end.
void nbio_npy_header(char *dst, const nbioRowShape *shape, int64_t rows);

#endif
