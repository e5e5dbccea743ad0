// SPDX-License-Identifier: MIT
// What every part of the command-line tool shares: exit statuses, the one-line error messages,
// the command descriptor, reading the input and finishing the output.
//
// A command parses its options, reads the input, calls the public API through the structure
// table, and prints. Everything that can fail is done before the first byte goes to standard
// output, so a failed run prints one line on standard error and nothing else. docs/cli.md is
// the user's version of this.
#ifndef NEARBY_TOOLS_CLI_H
#define NEARBY_TOOLS_CLI_H

#include <nearby/nearby.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "io/reader.h"
#include "io/rows.h"
#include "io/writer.h"

/// Exit statuses: success; the machine failed us (out of memory, an output error, a library
/// status that means a bug in nearby); bad input or usage.
enum { CLI_EXIT_OK = 0, CLI_EXIT_RUNTIME = 1, CLI_EXIT_BAD_INPUT = 2 };

/// A command: its name, its line in `nearby --help`, what it accepts and what it needs.
typedef struct cliCommand {
    const char *name;    ///< "pairs"
    const char *brief;   ///< its arguments in the main help: "INPUT --radius R [--count]"
    const char *summary; ///< what it does, for the main help
    unsigned options;    ///< the CLI_OPT_* it accepts (options.h)
    unsigned needs;      ///< the CLI_QUERY_* a structure must answer for it (structures.h)
    int (*run)(int argc, char **argv); ///< the words after the command name; an exit status
    void (*help)(void);                ///< prints `nearby NAME --help` to standard output
} cliCommand;

extern const cliCommand cli_cmd_pairs;
extern const cliCommand cli_cmd_within;
extern const cliCommand cli_cmd_knn;
extern const cliCommand cli_cmd_join;
extern const cliCommand cli_cmd_demo;
extern const cliCommand cli_cmd_render;
extern const cliCommand cli_cmd_boxes;
extern const cliCommand cli_cmd_overlaps;

/// The program's name in messages, usage lines and "see NAME COMMAND --help": "nearby"
/// (nearby-mpi sets its own).
extern const char *cli_program;

/// Prints `nearby: ` (cli_program) and the message, one line, to standard error.
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
void cli_fail(const char *fmt, ...);

/// The exit status for a library status: the user's input for NB_ERR_NOT_FINITE and
/// NB_ERR_OUT_OF_RANGE, the machine or us for the rest.
int cli_exit_for_status(nbStatus st);

/// `nearby: WHERE: NB_ERR_...: DOING: what the status means`; returns the exit status.
int cli_fail_status(const char *where, nbStatus st, const char *doing);

/// `nearby: WHERE: NB_ERR_OUT_OF_MEMORY: out of memory DOING`; returns CLI_EXIT_RUNTIME.
int cli_out_of_memory(const char *where, const char *doing);

/// Copies `path` into dst for a message, with control bytes shown as '?' so the message stays
/// on one line.
void cli_display_name(char *dst, size_t cap, const char *path);

/// Points read from the command's INPUT, and the name messages give the file.
typedef struct cliInput {
    nbioPoints points;
    char name[256]; ///< "points.csv", "<stdin>"
} cliInput;

struct cliOptions;

/// Reads the points of `path` ("-": standard input) into *in and names it for messages;
/// `format` and `dim` as nbio_read takes them. CLI_EXIT_OK, or reports the problem and returns
/// its exit status (nothing to free).
int cli_read_points(const char *path, nbioFormat format, int32_t dim, cliInput *in);

/// Reads rectangles from `path` into *out (count records of 4 doubles: minx, miny, maxx, maxy),
/// naming the file in messages as `name`. CLI_EXIT_OK, or reports the problem and returns its
/// exit status.
int cli_load_rects(const char *path, nbioFormat format, char *name, size_t name_cap,
                   nbioPoints *out);

/// Reads a second file of points of the same dimension as `in` (the queries of --queries,
/// join's B) into *more: a .f64 is read in the points' dimension, a CSV or .npy must say the
/// same one (else `CMD: WHAT FILE: the points there are 3D but those in A are 2D`, exit 2).
/// An empty CSV takes the points' dimension. `what` names it in messages ("--queries", "B").
int cli_load_more(const char *cmd, const char *what, const char *path, const cliInput *in,
                  cliInput *more);

/// With --period: CLI_EXIT_OK if every point of `in` lies in the box, else reports the first
/// one outside and returns CLI_EXIT_BAD_INPUT. Without --period, CLI_EXIT_OK.
int cli_check_in_box(const struct cliOptions *o, const cliInput *in);

/// Reads the INPUT named in the options and settles its dimension: the file's, else --dim,
/// else the --at point's, else 2 (an empty CSV says nothing). Checks --at against it.
/// Returns CLI_EXIT_OK, or reports the problem and returns its exit status (nothing to free).
int cli_load_input(const char *cmd, const struct cliOptions *o, cliInput *in);

/// CLI_EXIT_OK unless both --count and -o were given (reported, CLI_EXIT_BAD_INPUT).
int cli_check_count_output(const cliCommand *cmd, const struct cliOptions *o);

/// What every command does first: parses argv[0, argc) (the words after the command name)
/// into *o (zero it and set any defaults first), checks that the options in `required` (an OR
/// of CLI_OPT_*) were given, and, if the command takes an INPUT, reads it into *in (else in
/// may be NULL).
/// Returns -1 to go on (then free in->points), or the exit status to return: CLI_EXIT_OK
/// after the help, else after reporting the problem (nothing to free).
int cli_start(const cliCommand *cmd, int argc, char **argv, unsigned required, struct cliOptions *o,
              cliInput *in);

/// The queries of a command that takes --at or --queries: with --queries Q the points of Q
/// (cli_load_more, and with --period each inside the box), with --at one point; neither
/// leaves *queries empty (count 0, dim 0). Both is a usage error. Returns CLI_EXIT_OK (free
/// queries->points after), or reports the problem and returns its exit status.
int cli_load_queries(const char *cmd, const struct cliOptions *o, const cliInput *in,
                     cliInput *queries);

struct cliStructure;

/// Builds structure s's index over the input's points at `scale` (cli_index_build), then frees
/// the points. Returns CLI_EXIT_OK with *index to destroy, or reports the failure
/// (`NAME: NB_ERR_...: building the index: ...`) and returns its exit status.
int cli_build(const struct cliStructure *s, cliInput *in, double scale, void **index);

/// A buffer for `count` results of `size` bytes (room for one if count is 0), or NULL after
/// reporting `WHERE: NB_ERR_OUT_OF_MEMORY: out of memory for the results`.
void *cli_result_buffer(const char *where, int64_t count, size_t size);

/// A writer on standard output over the tool's one big output buffer.
void cli_writer_init(nbioWriter *w);

/// Finishes the writer; CLI_EXIT_OK, or reports an output error and returns CLI_EXIT_RUNTIME.
int cli_finish_output(nbioWriter *w);

/// Flushes standard output (after printf); the same statuses as cli_finish_output.
int cli_finish_stdout(void);

/// A monotonic clock in milliseconds.
double cli_now_ms(void);

/// Sorts `len` indices ascending (insertion sort for short lists).
void cli_sort_indices(int32_t *b, int64_t len);

/// qsort's comparison of two int32_t.
int cli_compare_int32(const void *a, const void *b);

/// One radius query's hits in a buffer that grows to what a query finds and is kept for the
/// next: zero-initialise, free with cli_hits_free.
typedef struct cliHits {
    int32_t *ids;
    int32_t cap, found;
} cliHits;

/// The points of `index` within `radius` of `center` into h->ids[0, h->found), in the
/// structure's order, growing the buffer when a query finds more than it holds.
nbStatus cli_query_within(const struct cliStructure *s, const void *index, const double *center,
                          double radius, cliHits *h);

/// Frees the buffer and empties *h.
void cli_hits_free(cliHits *h);

/// Where a command's rows go: standard output (CSV), or -o FILE in its extension's format.
typedef struct cliRows {
    nbioRows rows;
    FILE *file;       ///< the -o file, NULL for standard output
    const char *path; ///< its path, removed if the command fails
} cliRows;

/// Starts the rows of `shape`: on standard output as CSV, or with -o on FILE in the format its
/// extension names. CLI_EXIT_OK, or reports a bad -o (unknown extension, .i64 with a distance,
/// a file that cannot be created, a .npy that cannot be seeked) and returns CLI_EXIT_BAD_INPUT.
int cli_rows_open(const char *cmd, const struct cliOptions *o, const nbioRowShape *shape,
                  cliRows *rows);

/// Finishes the rows (for .npy, the header with the row count) and closes the file. `status`
/// is the command's so far: when it is not CLI_EXIT_OK, or writing failed (reported here, exit
/// 1), a -o file is removed rather than left half written. Returns the final status.
int cli_rows_close(cliRows *rows, int status);

/// A progress line on standard error, shown only when it is a terminal and once the run has
/// taken more than a second; cleared at the end, so it never mixes with the results.
typedef struct cliProgress {
    const char *cmd, *unit;
    int64_t total;
    double start_ms, shown_ms;
    bool tty, shown;
} cliProgress;

/// Starts timing `total` units of work (`unit` names them: "queries", "points").
void cli_progress_start(cliProgress *p, const char *cmd, const char *unit, int64_t total);

/// `done` of the total are done (cheap when nothing is shown: call it every few hundred).
void cli_progress_show(cliProgress *p, int64_t done);

/// Clears the line if one was shown.
void cli_progress_end(cliProgress *p);

#endif
