// SPDX-License-Identifier: MIT
// `nearby join A B --radius R [--count]`: every pair (a in A, b in B) within R, "a,b" sorted by
// a then b. B is indexed and each point of A asks for its neighbours in turn, so the rows go out
// in order as they are found: memory is the two inputs, the index and one query's hits.
#include <stdlib.h>

#include "cli.h"
#include "options.h"
#include "structures.h"

static int run(int argc, char **argv);
static void help(void);

const cliCommand cli_cmd_join = {
    .name = "join",
    .brief = "A B --radius R [--count]",
    .summary = "every pair (a in A, b in B) within R, \"a,b\"",
    .options = CLI_OPT_INPUT | CLI_OPT_INPUT2 | CLI_OPT_RADIUS | CLI_OPT_COUNT | CLI_OPT_OUTPUT |
               CLI_OPT_DIM | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT | CLI_OPT_PERIOD,
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
    cli_print_option_help(CLI_OPT_DIM | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT | CLI_OPT_PERIOD);
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
    const nbioRowShape shape = {2, {"a", "b", NULL}, false};
    cliRows rows;
    if ((r = cli_rows_open(cmd->name, &o, &shape, &rows)) != CLI_EXIT_OK) {
        nbio_points_free(&a.points);
        nbio_points_free(&b.points);
        return r;
    }
    const cliStructure *s = o.structure;
    const int32_t nb = b.points.count, dim = a.points.dim;
    void *index;
    if ((r = cli_build(s, &b, o.radius, &index)) != CLI_EXIT_OK) {
        nbio_points_free(&a.points);
        return cli_rows_close(&rows, r);
    }
    cliHits hits = {0};
    cliProgress progress;
    cli_progress_start(&progress, cmd->name, "points of A", a.points.count);
    int64_t total = 0;
    nbStatus st = NB_OK;
    for (int32_t q = 0; q < a.points.count && st == NB_OK; q++) {
        st = cli_query_within(s, index, a.points.coords + (size_t)q * (size_t)dim, o.radius, &hits);
        for (int32_t k = 0; k < hits.found && st == NB_OK; k++)
            if (hits.ids[k] < 0 || hits.ids[k] >= nb) st = NB_ERR_INTERNAL;
        if (st != NB_OK) break;
        total += hits.found;
        if (!(o.given & CLI_OPT_COUNT)) {
            cli_sort_indices(hits.ids, hits.found);
            for (int32_t k = 0; k < hits.found; k++) nbio_rows_put(&rows.rows, q, hits.ids[k], 0.0);
        }
        if ((q & 1023) == 0) cli_progress_show(&progress, q);
    }
    cli_progress_end(&progress);
    s->destroy(index);
    cli_hits_free(&hits);
    nbio_points_free(&a.points);
    if (st == NB_ERR_OUT_OF_MEMORY)
        return cli_rows_close(&rows, cli_out_of_memory(b.name, "for the results"));
    if (st != NB_OK) return cli_rows_close(&rows, cli_fail_status(b.name, st, "querying"));
    if (o.given & CLI_OPT_COUNT) {
        nbio_write_i64(&rows.rows.w, total);
        nbio_write_char(&rows.rows.w, '\n');
    }
    return cli_rows_close(&rows, CLI_EXIT_OK);
}
