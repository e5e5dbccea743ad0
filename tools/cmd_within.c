// SPDX-License-Identifier: MIT
// `nearby within INPUT --radius R --at X,Y[,Z]`: the points within R of a point, ascending.
// `nearby within INPUT --radius R --queries Q`: "q,i" for every query q and point i within R,
// sorted by q then i, one query at a time (memory: the inputs, the index and one query's hits).
#include <stdlib.h>

#include "cli.h"
#include "options.h"
#include "queries.h"
#include "structures.h"

static int run(int argc, char **argv);
static void help(void);

const cliCommand cli_cmd_within = {
    .name = "within",
    .brief = "INPUT --radius R (--at X,Y[,Z] | --queries Q)",
    .summary = "the points within R of a point, or of each query",
    .options = CLI_OPT_INPUT | CLI_OPT_RADIUS | CLI_OPT_AT | CLI_OPT_QUERIES | CLI_OPT_OUTPUT |
               CLI_OPT_DIM | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT | CLI_OPT_PERIOD | CLI_OPT_THREADS,
    .needs = CLI_QUERY_WITHIN,
    .run = run,
    .help = help,
};

static void help(void)
{
    cli_print_usage(&cli_cmd_within, cli_cmd_within.brief);
    fputs("Prints the indices of the points at distance <= R from the point X,Y[,Z], one a\n"
          "line, ascending; with --queries Q, \"q,i\" for each query q (0-based, in Q's\n"
          "order) and each point i within R of it, sorted by q then i.\n"
          "\n",
          stdout);
    cli_print_option_help(CLI_OPT_RADIUS | CLI_OPT_AT | CLI_OPT_QUERIES);
    cli_print_output_help();
    cli_print_option_help(CLI_OPT_DIM | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT | CLI_OPT_PERIOD |
                          CLI_OPT_THREADS);
    cli_print_structures(stdout, cli_cmd_within.needs);
}

static int run(int argc, char **argv)
{
    const cliCommand *cmd = &cli_cmd_within;
    cliOptions o = {0};
    cliInput in, queries;
    int r = cli_start(cmd, argc, argv, CLI_OPT_RADIUS, &o, &in);
    if (r >= 0) return r;
    if (!(o.given & (CLI_OPT_AT | CLI_OPT_QUERIES))) {
        cli_fail("within: missing --at X,Y[,Z] or --queries Q (see %s within --help)", cli_program);
        nbio_points_free(&in.points);
        return CLI_EXIT_BAD_INPUT;
    }
    if ((r = cli_load_queries(cmd->name, &o, &in, &queries)) != CLI_EXIT_OK) {
        nbio_points_free(&in.points);
        return r;
    }
    const bool one = !(o.given & CLI_OPT_QUERIES); // --at: the indices alone
    const nbioRowShape shape = {one ? 1 : 2, {"q", "i", NULL}, false};
    return cli_within_run(cmd, &o, &in, &queries, &shape, "queries");
}
