// SPDX-License-Identifier: MIT
// Messages, exit statuses, input loading and output finishing for every command.
#define _POSIX_C_SOURCE 200112L // clock_gettime, isatty, fileno

#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "options.h"
#include "structures.h"

const char *cli_program = "nearby";

void cli_fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", cli_program);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_exit_for_status(nbStatus st)
{
    return (st == NB_ERR_NOT_FINITE || st == NB_ERR_OUT_OF_RANGE) ? CLI_EXIT_BAD_INPUT
                                                                  : CLI_EXIT_RUNTIME;
}

int cli_fail_status(const char *where, nbStatus st, const char *doing)
{
    cli_fail("%s: %s: %s: %s", where, nb_status_str(st), doing, nb_status_message(st));
    return cli_exit_for_status(st);
}

int cli_out_of_memory(const char *where, const char *doing)
{
    cli_fail("%s: NB_ERR_OUT_OF_MEMORY: out of memory %s", where, doing);
    return CLI_EXIT_RUNTIME;
}

void cli_display_name(char *dst, size_t cap, const char *path)
{
    size_t k = 0;
    for (; path[k] != 0 && k + 1 < cap; k++) {
        unsigned char c = (unsigned char)path[k];
        dst[k] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    dst[k] = 0;
}

int cli_read_points(const char *path, nbioFormat format, int32_t dim, cliInput *in)
{
    nbioError err;
    cli_display_name(in->name, sizeof in->name, strcmp(path, "-") == 0 ? "<stdin>" : path);
    nbioResult r = nbio_read(path, format, dim, &in->points, &err);
    if (r == NBIO_NO_MEMORY) {
        cli_fail("%s: NB_ERR_OUT_OF_MEMORY: out of memory reading the input", in->name);
        return CLI_EXIT_RUNTIME;
    }
    if (r != NBIO_OK) {
        if (err.line > 0)
            cli_fail("%s:%lld: %s", in->name, (long long)err.line, err.text);
        else if (err.point >= 0)
            cli_fail("%s: point %lld: %s", in->name, (long long)err.point, err.text);
        else
            cli_fail("%s: %s", in->name, err.text);
        return CLI_EXIT_BAD_INPUT;
    }
    return CLI_EXIT_OK;
}

int cli_load_rects(const char *path, nbioFormat format, char *name, size_t name_cap,
                   nbioPoints *out)
{
    nbioError err;
    cli_display_name(name, name_cap, strcmp(path, "-") == 0 ? "<stdin>" : path);
    nbioResult r = nbio_read(path, format, NBIO_RECTS, out, &err);
    if (r == NBIO_NO_MEMORY) return cli_out_of_memory(name, "reading the input");
    if (r != NBIO_OK) {
        if (err.line > 0)
            cli_fail("%s:%lld: %s", name, (long long)err.line, err.text);
        else if (err.point >= 0)
            cli_fail("%s: rectangle %lld: %s", name, (long long)err.point, err.text);
        else
            cli_fail("%s: %s", name, err.text);
        return CLI_EXIT_BAD_INPUT;
    }
    out->dim = NBIO_RECTS; // an empty CSV says nothing
    return CLI_EXIT_OK;
}

int cli_load_input(const char *cmd, const cliOptions *o, cliInput *in)
{
    int r = cli_read_points(o->input, o->format, o->dim, in);
    if (r != CLI_EXIT_OK) return r;
    if (in->points.dim == 0)
        in->points.dim = o->dim != 0 ? o->dim : o->at_count != 0 ? o->at_count : 2;
    if (o->at_count != 0 && o->at_count != in->points.dim) {
        cli_fail("%s: --at: expected %d values (the points in %s are %dD), found %d", cmd,
                 (int)in->points.dim, in->name, (int)in->points.dim, (int)o->at_count);
        nbio_points_free(&in->points);
        return CLI_EXIT_BAD_INPUT;
    }
    // A structure that cannot hold points of this dimension is refused before any work.
    if (o->structure != NULL && o->structure->only_2d && in->points.dim != 2) {
        cli_fail("%s: structure %s holds 2D points only; the points in %s are %dD", cmd,
                 o->structure->name, in->name, (int)in->points.dim);
        nbio_points_free(&in->points);
        return CLI_EXIT_BAD_INPUT;
    }
    return CLI_EXIT_OK;
}

int cli_load_more(const char *cmd, const char *what, const char *path, const cliInput *in,
                  cliInput *more)
{
    if (strcmp(path, "-") == 0 && strcmp(in->name, "<stdin>") == 0) {
        cli_fail("%s: %s: standard input is already read for the points", cmd, what);
        return CLI_EXIT_BAD_INPUT;
    }
    // A .f64 file says no dimension: it is read as the points' one. CSV and .npy say theirs.
    const int32_t dim = in->points.dim;
    const bool raw = strcmp(path, "-") != 0 && nbio_format_for_path(path) == NBIO_FORMAT_F64;
    int r = cli_read_points(path, NBIO_FORMAT_AUTO, raw ? dim : 0, more);
    if (r != CLI_EXIT_OK) return r;
    if (more->points.dim == 0) more->points.dim = dim; // an empty CSV
    if (more->points.dim != dim) {
        cli_fail("%s: %s %s: the points there are %dD but those in %s are %dD", cmd, what,
                 more->name, (int)more->points.dim, in->name, (int)dim);
        nbio_points_free(&more->points);
        return CLI_EXIT_BAD_INPUT;
    }
    return CLI_EXIT_OK;
}

int cli_check_in_box(const cliOptions *o, const cliInput *in)
{
    static const char axis[3] = {'x', 'y', 'z'};
    if (!(o->given & CLI_OPT_PERIOD)) return CLI_EXIT_OK;
    const int32_t dim = in->points.dim;
    for (int32_t a = 0; a < dim; a++) {
        const double p = o->period[a];
        for (int32_t i = 0; i < in->points.count && p > 0.0; i++) {
            const double x = in->points.coords[(size_t)i * (size_t)dim + (size_t)a];
            if (!(x >= 0.0 && x < p)) {
                cli_fail("%s: point %lld: NB_ERR_OUT_OF_RANGE: %c = %.17g is outside the "
                         "periodic box [0, %.17g)",
                         in->name, (long long)i, axis[a], x, p);
                return CLI_EXIT_BAD_INPUT;
            }
        }
    }
    return CLI_EXIT_OK;
}

// --period: its count against the input's dimension, the structure, every point inside the
// box and the radius at most half of each period; then hands the box to the structures.
static int cli_apply_period(const char *cmd, const cliOptions *o, cliInput *in)
{
    static const char axis[3] = {'x', 'y', 'z'};
    if (!(o->given & CLI_OPT_PERIOD)) return CLI_EXIT_OK;
    const int32_t dim = in->points.dim;
    int r = CLI_EXIT_BAD_INPUT;
    if (o->period_count != dim) {
        cli_fail("%s: --period: expected %d values (the points in %s are %dD), found %d", cmd,
                 (int)dim, in->name, (int)dim, (int)o->period_count);
    } else if (!o->structure->periodic) {
        cli_fail("%s: structure %s does not support --period", cmd, o->structure->name);
    } else {
        r = CLI_EXIT_OK;
        for (int32_t a = 0; a < dim && r == CLI_EXIT_OK; a++) {
            const double p = o->period[a];
            if (p > 0.0 && (o->given & CLI_OPT_RADIUS) && o->radius > 0.5 * p) {
                cli_fail("%s: --radius %s: NB_ERR_OUT_OF_RANGE: more than half the %c period "
                         "%.17g: the minimum image answers radii up to P / 2",
                         cmd, o->radius_text, axis[a], p);
                r = CLI_EXIT_BAD_INPUT;
            }
        }
        if (r == CLI_EXIT_OK) r = cli_check_in_box(o, in);
    }
    if (r != CLI_EXIT_OK) {
        nbio_points_free(&in->points);
        return r;
    }
    cli_structure_set_period(o->period);
    return CLI_EXIT_OK;
}

int cli_check_count_output(const cliCommand *cmd, const cliOptions *o)
{
    if (!((o->given & CLI_OPT_COUNT) && (o->given & CLI_OPT_OUTPUT))) return CLI_EXIT_OK;
    cli_fail("%s: --count prints one number on standard output; -o FILE is for rows", cmd->name);
    return CLI_EXIT_BAD_INPUT;
}

int cli_start(const cliCommand *cmd, int argc, char **argv, unsigned required, cliOptions *o,
              cliInput *in)
{
    int r = cli_parse_options(cmd, argc, argv, o);
    if (r >= 0) return r;
    if ((r = cli_require(cmd, o, required)) != CLI_EXIT_OK) return r;
    if ((r = cli_check_count_output(cmd, o)) != CLI_EXIT_OK) return r;
    if (!(cmd->options & CLI_OPT_INPUT)) return -1;
    if ((r = cli_load_input(cmd->name, o, in)) != CLI_EXIT_OK) return r;
    if ((r = cli_apply_period(cmd->name, o, in)) != CLI_EXIT_OK) return r;
    return -1;
}

int cli_load_queries(const char *cmd, const cliOptions *o, const cliInput *in, cliInput *queries)
{
    memset(queries, 0, sizeof *queries);
    if ((o->given & CLI_OPT_AT) && (o->given & CLI_OPT_QUERIES)) {
        cli_fail("%s: --at and --queries: give one of them, not both", cmd);
        return CLI_EXIT_BAD_INPUT;
    }
    if (o->given & CLI_OPT_QUERIES) {
        int r = cli_load_more(cmd, "--queries", o->queries, in, queries);
        if (r == CLI_EXIT_OK && (r = cli_check_in_box(o, queries)) != CLI_EXIT_OK)
            nbio_points_free(&queries->points);
        return r;
    }
    if (!(o->given & CLI_OPT_AT)) return CLI_EXIT_OK;
    // --at is a file of one query.
    snprintf(queries->name, sizeof queries->name, "--at");
    queries->points.coords = malloc(3 * sizeof(double));
    if (queries->points.coords == NULL) return cli_out_of_memory(cmd, "for the query");
    memcpy(queries->points.coords, o->at, 3 * sizeof(double));
    queries->points.count = 1;
    queries->points.dim = in->points.dim;
    return CLI_EXIT_OK;
}

int cli_build(const cliStructure *s, cliInput *in, double scale, void **index)
{
    *index = NULL;
    nbStatus st =
        cli_index_build(s, in->points.coords, in->points.count, in->points.dim, scale, index);
    nbio_points_free(&in->points);
    if (st != NB_OK) return cli_fail_status(in->name, st, "building the index");
    return CLI_EXIT_OK;
}

void *cli_result_buffer(const char *where, int64_t count, size_t size)
{
    void *buf = malloc(count > 0 ? (size_t)count * size : size);
    if (buf == NULL) cli_out_of_memory(where, "for the results");
    return buf;
}

static char out_buffer[1 << 20];

void cli_writer_init(nbioWriter *w)
{
    nbio_writer_init(w, stdout, out_buffer, sizeof out_buffer);
}

int cli_finish_output(nbioWriter *w)
{
    if (nbio_writer_finish(w)) return CLI_EXIT_OK;
    cli_fail("error writing the output");
    return CLI_EXIT_RUNTIME;
}

int cli_finish_stdout(void)
{
    if (fflush(stdout) == 0 && !ferror(stdout)) return CLI_EXIT_OK;
    cli_fail("error writing the output");
    return CLI_EXIT_RUNTIME;
}

double cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void cli_sort_indices(int32_t *b, int64_t len)
{
    if (len <= 32) { // insertion sort: most lists are tiny
        for (int64_t x = 1; x < len; x++) {
            const int32_t v = b[x];
            int64_t y = x;
            while (y > 0 && b[y - 1] > v) {
                b[y] = b[y - 1];
                y--;
            }
            b[y] = v;
        }
        return;
    }
    qsort(b, (size_t)len, sizeof(int32_t), cli_compare_int32);
}

int cli_compare_int32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a;
    const int32_t y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

nbStatus cli_query_within(const cliStructure *s, const void *index, const double *center,
                          double radius, cliHits *h)
{
    h->found = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        if (h->ids == NULL) {
            h->cap = h->cap > 0 ? h->cap : 1024;
            h->ids = malloc((size_t)h->cap * sizeof(int32_t));
            if (h->ids == NULL) return NB_ERR_OUT_OF_MEMORY;
        }
        int32_t found = 0;
        const nbStatus st = s->within(index, center, radius, h->ids, h->cap, &found);
        if (st != NB_ERR_BUFFER_TOO_SMALL) {
            h->found = st == NB_OK ? found : 0;
            if (st == NB_OK && (found < 0 || found > h->cap)) return NB_ERR_INTERNAL;
            return st;
        }
        free(h->ids); // grow to the reported total and ask again
        h->ids = NULL;
        h->cap = found;
    }
    return NB_ERR_INTERNAL; // the total changed between two identical calls
}

void cli_hits_free(cliHits *h)
{
    free(h->ids);
    h->ids = NULL;
    h->cap = h->found = 0;
}

// ---------------------------------------------------------------------------------------------
// Rows out: standard output as CSV, or -o FILE in the format of its extension.

static char out_file_buffer[1 << 20];

int cli_rows_open(const char *cmd, const cliOptions *o, const nbioRowShape *shape, cliRows *rows)
{
    rows->file = NULL;
    rows->path = NULL;
    if (!(o->given & CLI_OPT_OUTPUT)) {
        const char *why = NULL;
        nbio_rows_start(&rows->rows, stdout, NBIO_OUT_CSV, shape, out_buffer, sizeof out_buffer,
                        &why);
        return CLI_EXIT_OK;
    }
    char name[256];
    cli_display_name(name, sizeof name, o->output);
    const nbioOutFormat format = nbio_out_format_for_path(o->output);
    if (format == NBIO_OUT_UNKNOWN) {
        cli_fail("%s: -o %s: the extension names no format (use .csv, .npy, .f64 or .i64)", cmd,
                 name);
        return CLI_EXIT_BAD_INPUT;
    }
    if (format == NBIO_OUT_I64 && shape->distance) {
        cli_fail("%s: -o %s: the rows hold a distance, which .i64 cannot (use .csv, .npy or "
                 ".f64)",
                 cmd, name);
        return CLI_EXIT_BAD_INPUT;
    }
    errno = 0;
    FILE *f = fopen(o->output, "wb");
    if (f == NULL) {
        const int e = errno;
        cli_fail("%s: -o %s: cannot create: %s", cmd, name, e != 0 ? strerror(e) : "unknown error");
        return CLI_EXIT_BAD_INPUT;
    }
    if (format == NBIO_OUT_NPY && fseek(f, 0, SEEK_SET) != 0) { // the header is written last
        fclose(f);
        cli_fail("%s: -o %s: a .npy needs a file it can seek in (not a pipe)", cmd, name);
        return CLI_EXIT_BAD_INPUT;
    }
    const char *why = NULL;
    nbio_rows_start(&rows->rows, f, format, shape, out_file_buffer, sizeof out_file_buffer, &why);
    rows->file = f;
    rows->path = o->output;
    return CLI_EXIT_OK;
}

int cli_rows_close(cliRows *rows, int status)
{
    const bool written = nbio_rows_finish(&rows->rows);
    if (rows->file != NULL && fclose(rows->file) != 0 && status == CLI_EXIT_OK)
        status = CLI_EXIT_RUNTIME;
    if (status == CLI_EXIT_OK && !written) {
        cli_fail("error writing the output");
        status = CLI_EXIT_RUNTIME;
    }
    if (status != CLI_EXIT_OK && rows->file != NULL) remove(rows->path); // no partial file
    rows->file = NULL;
    return status;
}

// ---------------------------------------------------------------------------------------------
// Progress on standard error

void cli_progress_start(cliProgress *p, const char *cmd, const char *unit, int64_t total)
{
    p->cmd = cmd;
    p->unit = unit;
    p->total = total;
    p->start_ms = cli_now_ms();
    p->shown_ms = 0.0;
    p->shown = false;
    p->tty = isatty(fileno(stderr)) != 0 && total > 0;
}

void cli_progress_show(cliProgress *p, int64_t done)
{
    if (!p->tty) return;
    const double now = cli_now_ms();
    if (now - p->start_ms < 1000.0 || now - p->shown_ms < 200.0) return;
    fprintf(stderr, "\r%s: %3d%% (%lld of %lld %s)", p->cmd, (int)(100 * done / p->total),
            (long long)done, (long long)p->total, p->unit);
    fflush(stderr);
    p->shown_ms = now;
    p->shown = true;
}

void cli_progress_end(cliProgress *p)
{
    if (!p->shown) return;
    fprintf(stderr, "\r%*s\r", 72, ""); // the line is cleared: the output is the record
    fflush(stderr);
    p->shown = false;
}
