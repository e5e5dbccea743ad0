// SPDX-License-Identifier: MIT
// Option parsing for every command, and the help text of the options commands share, written
// once here and composed into each command's --help.
#ifndef NEARBY_TOOLS_OPTIONS_H
#define NEARBY_TOOLS_OPTIONS_H

#include <stdint.h>

#include "cli.h"
#include "io/reader.h"
#include "structures.h"

/// The options, as bits: a command lists those it accepts (cliCommand.options), and
/// cliOptions.given says which were seen.
enum {
    CLI_OPT_RADIUS = 1 << 0,
    CLI_OPT_COUNT = 1 << 1,
    CLI_OPT_DIM = 1 << 2,
    CLI_OPT_STRUCTURE = 1 << 3,
    CLI_OPT_FORMAT = 1 << 4,
    CLI_OPT_AT = 1 << 5,
    CLI_OPT_K = 1 << 6,
    CLI_OPT_N = 1 << 7,
    CLI_OPT_SEED = 1 << 8,
    CLI_OPT_SAVE_POINTS = 1 << 9,
    CLI_OPT_INPUT = 1 << 10, ///< takes one INPUT argument
    CLI_OPT_FRAMES = 1 << 11,
    CLI_OPT_SVG = 1 << 12,
    CLI_OPT_NO_SVG = 1 << 13,
    CLI_OPT_OUTPUT = 1 << 14,
    CLI_OPT_QUERY = 1 << 15,
    CLI_OPT_THREADS = 1 << 16,
    CLI_OPT_PERIOD = 1 << 18,
    CLI_OPT_QUERY_FILE = 1 << 17, ///< --query QUERIES: a file of query rectangles (boxes)
    CLI_OPT_QUERIES = 1 << 19,    ///< --queries Q: a file of query points (within, knn)
    CLI_OPT_INPUT2 = 1 << 20,     ///< takes a second INPUT argument (join A B)
};

/// What the command line said. Zero-initialise, set any defaults, then parse.
typedef struct cliOptions {
    unsigned given; ///< CLI_OPT_* bits seen
    const char *input;
    double radius;
    const char *radius_text;       ///< --radius as given
    int32_t dim;                   ///< 0 = not given
    const cliStructure *structure; ///< --structure, else the command's default
    nbioFormat format;
    double at[3];
    int32_t at_count; ///< 0 = no --at
    int64_t k;
    int64_t n;
    uint64_t seed;
    const char *save_points; ///< --save-points FILE
    int64_t frames;          ///< --frames
    const char *svg;         ///< --svg PATH
    const char *output;      ///< -o PATH
    double query[6];         ///< --query: a point (dim values) or a window (2 * dim values)
    int32_t query_count;     ///< values in --query; 0 = none
    double period[3];        ///< --period: per axis, 0 = not periodic
    int32_t period_count;    ///< values in --period; 0 = none
    int32_t threads;         ///< --threads; 0 = one per online CPU
    const char *query_file;  ///< --query QUERIES (boxes)
    const char *queries;     ///< --queries Q (within, knn)
    const char *input2;      ///< the second INPUT (join)
} cliOptions;

/// Parses argv[0, argc) (the words after the command name) against the options `cmd` accepts,
/// left to right, checking each value as it goes (and that --structure answers cmd->needs).
/// Returns -1 to go on, or an exit status: CLI_EXIT_OK after printing the help (--help, -h),
/// CLI_EXIT_BAD_INPUT after printing a usage error.
int cli_parse_options(const cliCommand *cmd, int argc, char **argv, cliOptions *o);

/// CLI_EXIT_OK if every option in `bits` (an OR of CLI_OPT_*) was given, else reports the
/// first one missing, in the order of the option table, by its name there.
int cli_require(const cliCommand *cmd, const cliOptions *o, unsigned bits);

/// Prints `usage: nearby NAME ARGS` followed by the usage of the shared options cmd accepts
/// (--dim, --structure, --format), wrapped at 80 columns under the first argument.
void cli_print_usage(const cliCommand *cmd, const char *args);

/// Prints the shared help lines of the options in `bits` (an OR of CLI_OPT_*), in a fixed
/// order: --radius, --at, --dim, --structure, --format.
void cli_print_option_help(unsigned bits);

/// Prints what INPUT may be (formats, standard input).
void cli_print_input_help(void);

/// Prints the help of -o FILE for the commands that print rows.
void cli_print_output_help(void);

#endif
