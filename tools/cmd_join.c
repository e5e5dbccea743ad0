// SPDX-License-Identifier: MIT
// `nearby join A B --radius R [--count]`: every pair (a in A, b in B) within R, "a,b" sorted by
// a then b. B is indexed and each point of A asks for its neighbours in turn, so the rows go out
// in order as they are found: memory is the two inputs, the index and one query's hits.
#include <stdlib.h>

#include "cli.h"
#include "options.h"
#include "queries.h"
#include "structures.h"

static int run(int argc, char **argv);
static void help(void);

const cliCommand cli_cmd_join = {
    .name = "join",
    .brief = "A B --radius R [--count]",
    .summary = "every pair (a in A, b in B) within R, \"a,b\"",
    .options = CLI_OPT_INPUT | CLI_OPT_INPUT2 | CLI_OPT_RADIUS | CLI_OPT_COUNT | CLI_OPT_OUTPUT |
               CLI_OPT_DIM | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT | CLI_OPT_PERIOD | CLI_OPT_THREADS,
    .needs = CLI_QUERY_WITHIN,
    .run = run,
    .help = help,
};

static void help(void)
{
    cli_print_usage(&cli_cmd_join, cli_cmd_join.brief);
    fputs("Prints every pair of a point a of A and a point b of B at distance <= R, one\n"
          "\"a,b\" a line (0-based indices into each file), sorted by a then b. A and B\n"
          "must have the same dimension; --format and --dim apply to A (B is read by its\n"
          "extension, a .f64 in A's dimension).\n"
          "\n",
          stdout);
    cli_print_option_help(CLI_OPT_RADIUS);
    fputs("  --count           print only the number of pairs\n", stdout);
    cli_print_output_help();
    cli_print_option_help(CLI_OPT_DIM | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT | CLI_OPT_PERIOD |
                          CLI_OPT_THREADS);
    cli_print_structures(stdout, cli_cmd_join.needs);
}

static int run(int argc, char **argv)
{
    const cliCommand *cmd = &cli_cmd_join;
    cliOptions o = {0};
    cliInput a, b;
    int r = cli_start(cmd, argc, argv, CLI_OPT_RADIUS, &o, &a);
    if (r >= 0) return r;
    if ((r = cli_load_more(cmd->name, "B", o.input2, &a, &b)) != CLI_EXIT_OK) {
        nbio_points_free(&a.points);
        return r;
    }
    if ((r = cli_check_in_box(&o, &b)) != CLI_EXIT_OK) {
        nbio_points_free(&a.points);
        nbio_points_free(&b.points);
        return r;
    }
    // B is indexed and A's points are the queries: the rows (a, b) come sorted by a then b.
    const nbioRowShape shape = {2, {"a", "b", NULL}, false};
    return cli_within_run(cmd, &o, &b, &a, &shape, "points of A");
}
