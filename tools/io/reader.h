// SPDX-License-Identifier: MIT
// Point readers for the command-line tool: CSV, raw little-endian float64 (.f64) and NumPy .npy.
// Each reader turns a whole file into one interleaved double array, checking every value as it
// reads it, or stops at the first problem with a one-line description and where it is.
#ifndef NEARBY_TOOLS_IO_READER_H
#define NEARBY_TOOLS_IO_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/// The `dim` that asks a reader for rectangles instead of points: 4 values a record, minx, miny,
/// maxx, maxy (CSV lines of 4 fields, .f64 of 4 doubles a rectangle, .npy of shape (N, 4)).
/// Each rectangle is also checked for min <= max (else "NB_ERR_OUT_OF_RANGE: minx > maxx").
#define NBIO_RECTS 4

/// The name of value k of a record of `dim` values: "x", "y", "z", or for rectangles "minx",
/// "miny", "maxx", "maxy".
const char *nbio_column_name(int32_t dim, int32_t k);

/// For rectangles (dim == NBIO_RECTS): the first axis on which record r has min > max, or -1.
int nbio_rect_inverted(const double *r);

/// Input formats. NBIO_FORMAT_AUTO picks one from the file name's extension.
typedef enum nbioFormat {
    NBIO_FORMAT_AUTO = 0,
    NBIO_FORMAT_CSV,
    NBIO_FORMAT_F64,
    NBIO_FORMAT_NPY
} nbioFormat;

/// What a read returns: success, a problem with the input (the user's to fix), or no memory.
typedef enum nbioResult { NBIO_OK = 0, NBIO_BAD_INPUT, NBIO_NO_MEMORY } nbioResult;

/// Points read from a file. `coords` holds count * dim doubles, point after point, all finite;
/// it is NULL when count is 0 and is released with nbio_points_free().
typedef struct nbioPoints {
    double *coords;
    int32_t count;
    int32_t dim; ///< 2 or 3; 0 when the input is an empty CSV that does not say (no header)
    /// Non-NULL when `coords` points into the input file itself, mapped read-only (a .f64
    /// or little-endian float64 .npy file on a little-endian host): no copy, no decoding, and
    /// nbio_points_free unmaps it; `coords` must then not be written. Readers over memory see
    /// it set when `data` is such a mapping.
    void *mapping;
    size_t mapping_size;
} nbioPoints;

/// Where and what the problem is. The tool prints `nearby: FILE:LINE: text` for CSV and
/// `nearby: FILE: point P: text` or `nearby: FILE: text` for the binary formats.
typedef struct nbioError {
    int64_t line;   ///< 1-based CSV line number, 0 when the problem is not on a line
    int64_t point;  ///< 0-based point index (binary formats), -1 when not about one point
    char text[320]; ///< e.g. "NB_ERR_NOT_FINITE: y is NaN" or "expected 2 columns, found 3"
} nbioError;

/// The most points any input may hold: indices are int32_t.
#define NBIO_MAX_POINTS INT32_MAX

/// "csv", "f64" or "npy" to its format; NBIO_FORMAT_AUTO for anything else.
nbioFormat nbio_format_from_name(const char *name);

/// The format a path's extension implies (case-insensitive .csv/.f64/.npy); anything else,
/// and "-" (standard input), is CSV.
nbioFormat nbio_format_for_path(const char *path);

/// Reads the whole of `path` ("-" is standard input) in `format` (AUTO: by extension).
/// `dim` is 0 (any) or the 2 or 3 the caller requires; for .f64 it is the dimension (0 = 2).
/// On success fills *out; otherwise *out is empty and *err says what is wrong.
nbioResult nbio_read(const char *path, nbioFormat format, int32_t dim, nbioPoints *out,
                     nbioError *err);

/// The readers behind nbio_read, over bytes already in memory. `data[size]` must be readable
/// and hold 0 (a terminator), so number parsing can never run past the end.
nbioResult nbio_parse_csv(const char *data, size_t size, int32_t dim, nbioPoints *out,
                          nbioError *err);
nbioResult nbio_parse_f64(const char *data, size_t size, int32_t dim, nbioPoints *out,
                          nbioError *err);
nbioResult nbio_parse_npy(const char *data, size_t size, int32_t dim, nbioPoints *out,
                          nbioError *err);

/// Where the points of a binary file lie, found without reading them: for a reader of one
/// slice of the rows (nearby-mpi: each rank reads and decodes only its own byte range, with
/// nbio_decode_points).
typedef struct nbioLayout {
    uint64_t data_at; ///< byte offset of point 0 in the file
    int64_t count;    ///< points in the file, at most NBIO_MAX_POINTS
    int32_t dim;      ///< values a point: 2 or 3 (NBIO_RECTS for rectangles)
    int item_size;    ///< 8 or 4 bytes a value
    bool big_endian;
} nbioLayout;

/// The layout of a .f64 file of `size` bytes read with `dim` (0 = 2), with nbio_parse_f64's
/// checks and messages.
nbioResult nbio_layout_f64(uint64_t size, int32_t dim, nbioLayout *out, nbioError *err);

/// The layout of a .npy file of `file_size` bytes from its first `size` bytes `data`, which
/// must hold the whole header (else "malformed .npy header: truncated"), with nbio_parse_npy's
/// checks and messages, decoding nothing.
nbioResult nbio_layout_npy(const char *data, size_t size, uint64_t file_size, int32_t dim,
                           nbioLayout *out, nbioError *err);

/// Shared by the binary readers: decodes `count` points of `dim` IEEE floats (`item_size` 8 or
/// 4 bytes, little- or big-endian) from `src` into a fresh array, rejecting NaN and infinity
/// with the point's index in err->point.
nbioResult nbio_decode_points(const unsigned char *src, int64_t count, int32_t dim, int item_size,
                              bool big_endian, nbioPoints *out, nbioError *err);

/// Frees the coordinates and empties the struct. Safe on an empty or already freed struct.
void nbio_points_free(nbioPoints *points);

/// How a text number parsed.
typedef enum nbioNumber {
    NBIO_NUMBER_OK = 0,
    NBIO_NUMBER_EMPTY,    ///< nothing but spaces and tabs
    NBIO_NUMBER_INVALID,  ///< not a decimal number (hex floats, trailing junk, "1e" ...)
    NBIO_NUMBER_NAN,      ///< "nan", "NaN", "-nan(...)"
    NBIO_NUMBER_INFINITE, ///< "inf", "-Infinity"
    NBIO_NUMBER_OVERFLOW  ///< a decimal number too large for a double, e.g. "1e400"
} nbioNumber;

/// Parses s[0, len) as one decimal number: optional spaces and tabs around it, an optional
/// sign, digits with an optional point, an optional exponent. Nothing else: no hex floats,
/// no empty field, no thousands separators. `s[len]` must be readable (any byte that cannot
/// continue a number, such as ',', '\n' or 0). Underflow to 0 or a subnormal is accepted.
nbioNumber nbio_parse_number(const char *s, size_t len, double *out);

/// Writes `s[0, len)` into `dst` (size `cap`) as a quoted, escaped, possibly shortened
/// string for an error message: "abc", "1.2\x00", "0123456789012345678901234567890...".
void nbio_quote(char *dst, size_t cap, const char *s, size_t len);

#endif
