// SPDX-License-Identifier: MIT
// Messages, exit statuses, input loading and output finishing for every command.
#define _POSIX_C_SOURCE 199309L

#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int cli_load_input(const char *cmd, const cliOptions *o, cliInput *in)
{
    nbioError err;
    cli_display_name(in->name, sizeof in->name, strcmp(o->input, "-") == 0 ? "<stdin>" : o->input);
    nbioResult r = nbio_read(o->input, o->format, o->dim, &in->points, &err);
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
    if (in->points.dim == 0)
        in->points.dim = o->dim != 0 ? o->dim : o->at_count != 0 ? o->at_count : 2;
    if (o->at_count != 0 && o->at_count != in->points.dim) {
        cli_fail("%s: --at: expected %d values (the points in %s are %dD), found %d", cmd,
                 (int)in->points.dim, in->name, (int)in->points.dim, (int)o->at_count);
        nbio_points_free(&in->points);
        return CLI_EXIT_BAD_INPUT;
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
            for (int32_t i = 0; i < in->points.count && p > 0.0 && r == CLI_EXIT_OK; i++) {
                const double x = in->points.coords[(size_t)i * (size_t)dim + (size_t)a];
                if (!(x >= 0.0 && x < p)) {
                    cli_fail("%s: point %lld: NB_ERR_OUT_OF_RANGE: %c = %.17g is outside the "
                             "periodic box [0, %.17g)",
                             in->name, (long long)i, axis[a], x, p);
                    r = CLI_EXIT_BAD_INPUT;
                }
            }
        }
    }
    if (r != CLI_EXIT_OK) {
        nbio_points_free(&in->points);
        return r;
    }
    cli_structure_set_period(o->period);
    return CLI_EXIT_OK;
}

int cli_start(const cliCommand *cmd, int argc, char **argv, unsigned required, cliOptions *o,
              cliInput *in)
{
    int r = cli_parse_options(cmd, argc, argv, o);
    if (r >= 0) return r;
    if ((r = cli_require(cmd, o, required)) != CLI_EXIT_OK) return r;
    if (!(cmd->options & CLI_OPT_INPUT)) return -1;
    if ((r = cli_load_input(cmd->name, o, in)) != CLI_EXIT_OK) return r;
    if ((r = cli_apply_period(cmd->name, o, in)) != CLI_EXIT_OK) return r;
    return -1;
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
