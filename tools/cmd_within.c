// SPDX-License-Identifier: MIT
// `nearby within INPUT --radius R --at X,Y[,Z]`: the points within R of a point, ascending.
#include <stdlib.h>

#include "cli.h"
#include "options.h"
#include "structures.h"

static int run(int argc, char **argv);
static void help(void);

const cliCommand cli_cmd_within = {
    .name = "within",
    .brief = "INPUT --radius R --at X,Y[,Z]",
    .summary = "the points within R of a point",
    .options = CLI_OPT_INPUT | CLI_OPT_RADIUS | CLI_OPT_AT | CLI_OPT_DIM | CLI_OPT_STRUCTURE |
               CLI_OPT_FORMAT | CLI_OPT_PERIOD,
    .needs = CLI_QUERY_WITHIN,
    .run = run,
    .help = help,
};

static void help(void)
{
    cli_print_usage(&cli_cmd_within, cli_cmd_within.brief);
    fputs("Prints the indices of the points at distance <= R from the point X,Y[,Z], one a\n"
          "line, ascending.\n"
          "\n",
          stdout);
    cli_print_option_help(CLI_OPT_RADIUS | CLI_OPT_AT | CLI_OPT_DIM | CLI_OPT_STRUCTURE |
                          CLI_OPT_FORMAT | CLI_OPT_PERIOD);
    cli_print_structures(stdout, cli_cmd_within.needs);
}

static int compare_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a;
    int32_t y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int run(int argc, char **argv)
{
    const cliCommand *cmd = &cli_cmd_within;
    cliOptions o = {0};
    cliInput in;
    int r = cli_start(cmd, argc, argv, CLI_OPT_RADIUS | CLI_OPT_AT, &o, &in);
    if (r >= 0) return r;
    const cliStructure *s = o.structure;
    const int32_t n = in.points.count;
    void *index;
    if ((r = cli_build(s, &in, o.radius, &index)) != CLI_EXIT_OK) return r;

    // Capacity n: a query can never find more points than there are.
    int32_t *found_idx = cli_result_buffer(in.name, n, sizeof(int32_t));
    if (found_idx == NULL) {
        s->destroy(index);
        return CLI_EXIT_RUNTIME;
    }
    int32_t found = 0;
    nbStatus st = s->within(index, o.at, o.radius, found_idx, n, &found);
    s->destroy(index);
    if (st == NB_OK && (found < 0 || found > n)) st = NB_ERR_INTERNAL;
    for (int32_t k = 0; k < found && st == NB_OK; k++)
        if (found_idx[k] < 0 || found_idx[k] >= n) st = NB_ERR_INTERNAL;
    if (st != NB_OK) {
        free(found_idx);
        return cli_fail_status(in.name, st, "querying");
    }
    qsort(found_idx, (size_t)found, sizeof(int32_t), compare_int32);
    nbioWriter w;
    cli_writer_init(&w);
    for (int32_t k = 0; k < found; k++) {
        nbio_write_i64(&w, found_idx[k]);
        nbio_write_char(&w, '\n');
    }
    free(found_idx);
    return cli_finish_output(&w);
}
