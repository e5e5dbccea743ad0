// SPDX-License-Identifier: MIT
// Commands on rectangles (4 values a record: minx, miny, maxx, maxy):
//   `nearby boxes RECTS --query QUERIES [--count]`  every (query, rectangle) that touch
//   `nearby overlaps RECTS [--count]`               every pair of touching rectangles
// Rectangles are closed: a shared edge or corner counts. Both read CSV, .f64 (4 doubles a
// rectangle) or .npy of shape (N, 4), as the point commands read points, and refuse a
// rectangle with min > max.
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "structures.h"

static int run_boxes(int argc, char **argv);
static int run_overlaps(int argc, char **argv);
static void help_boxes(void);
static void help_overlaps(void);

const cliCommand cli_cmd_boxes = {
    .name = "boxes",
    .brief = "RECTS --query QUERIES [--count]",
    .summary = "the rectangles touching each query rectangle",
    .options = CLI_OPT_INPUT | CLI_OPT_QUERY_FILE | CLI_OPT_COUNT | CLI_OPT_OUTPUT |
               CLI_OPT_STRUCTURE | CLI_OPT_FORMAT,
    .needs = CLI_QUERY_BOXES,
    .run = run_boxes,
    .help = help_boxes,
};

const cliCommand cli_cmd_overlaps = {
    .name = "overlaps",
    .brief = "RECTS [--count]",
    .summary = "every pair of touching rectangles",
    .options = CLI_OPT_INPUT | CLI_OPT_COUNT | CLI_OPT_OUTPUT | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT,
    .needs = CLI_QUERY_OVERLAPS,
    .run = run_overlaps,
    .help = help_overlaps,
};

static const char rect_help[] =
    "RECTS and QUERIES hold rectangles, one a record: CSV lines \"minx,miny,maxx,maxy\"\n"
    "(an optional header line), .f64 with 4 doubles a rectangle, or .npy of shape\n"
    "(N, 4); \"-\" is standard input (CSV). Rectangles are closed: touching counts.\n"
    "--format applies to RECTS; QUERIES is read by its extension.\n"
    "\n";

static void help_boxes(void)
{
    cli_print_usage(&cli_cmd_boxes, cli_cmd_boxes.brief);
    fputs("Prints \"q,i\" for each query rectangle q and each rectangle i that touches it\n"
          "(0-based input order), sorted by q then i, each pair once.\n"
          "\n",
          stdout);
    fputs(rect_help, stdout);
    fputs("  --query QUERIES   the file of query rectangles (required)\n"
          "  --count           print only the number of (q, i) pairs\n",
          stdout);
    cli_print_output_help();
    cli_print_option_help(CLI_OPT_STRUCTURE | CLI_OPT_FORMAT);
    cli_print_structures(stdout, cli_cmd_boxes.needs);
}

static void help_overlaps(void)
{
    cli_print_usage(&cli_cmd_overlaps, cli_cmd_overlaps.brief);
    fputs("Prints every pair of touching rectangles, one \"i,j\" a line (0-based input order,\n"
          "i < j, each pair once), sorted by i then j.\n"
          "\n",
          stdout);
    fputs(rect_help, stdout);
    fputs("  --count           print only the number of pairs\n", stdout);
    cli_print_output_help();
    cli_print_option_help(CLI_OPT_STRUCTURE | CLI_OPT_FORMAT);
    cli_print_structures(stdout, cli_cmd_overlaps.needs);
}

static int compare_pair(const void *a, const void *b)
{
    const nbPair *x = a, *y = b;
    if (x->i != y->i) return (x->i > y->i) - (x->i < y->i);
    return (x->j > y->j) - (x->j < y->j);
}

static int run_boxes(int argc, char **argv)
{
    const cliCommand *cmd = &cli_cmd_boxes;
    cliOptions o = {0};
    int r = cli_parse_options(cmd, argc, argv, &o);
    if (r >= 0) return r;
    if ((r = cli_require(cmd, &o, CLI_OPT_QUERY_FILE)) != CLI_EXIT_OK) return r;
    if ((r = cli_check_count_output(cmd, &o)) != CLI_EXIT_OK) return r;
    char name[256], qname[256];
    nbioPoints rects, queries;
    if ((r = cli_load_rects(o.input, o.format, name, sizeof name, &rects)) != CLI_EXIT_OK) return r;
    r = cli_load_rects(o.query_file, NBIO_FORMAT_AUTO, qname, sizeof qname, &queries);
    if (r != CLI_EXIT_OK) {
        nbio_points_free(&rects);
        return r;
    }
    const cliStructure *s = o.structure;
    const int32_t n = rects.count;
    void *index = NULL;
    nbStatus st = s->build_rects(&index, rects.coords, n);
    nbio_points_free(&rects);
    if (st != NB_OK) {
        nbio_points_free(&queries);
        return cli_fail_status(name, st, "building the index");
    }
    // Capacity n: a query can never find more rectangles than there are. Every query's hits
    // are gathered (and checked) before anything is printed, so a failure prints nothing.
    int32_t *hits = cli_result_buffer(name, n, sizeof(int32_t));
    int64_t total = 0;
    int32_t *all = NULL;
    int64_t all_cap = 0;
    int64_t *first = calloc((size_t)queries.count + 1, sizeof(int64_t));
    if (hits == NULL || first == NULL) st = NB_ERR_OUT_OF_MEMORY;
    for (int32_t q = 0; q < queries.count && st == NB_OK; q++) {
        int32_t found = 0;
        st = s->boxes(index, queries.coords + 4 * (size_t)q, hits, n, &found);
        if (st == NB_OK && (found < 0 || found > n)) st = NB_ERR_INTERNAL;
        for (int32_t k = 0; k < found && st == NB_OK; k++)
            if (hits[k] < 0 || hits[k] >= n) st = NB_ERR_INTERNAL;
        if (st != NB_OK) break;
        first[q] = total;
        if (!(o.given & CLI_OPT_COUNT) && found > 0) {
            if (total + found > all_cap) {
                int64_t cap = all_cap * 2 > total + found ? all_cap * 2 : total + found + 64;
                int32_t *grown = realloc(all, (size_t)cap * sizeof(int32_t));
                if (grown == NULL) {
                    st = NB_ERR_OUT_OF_MEMORY;
                    break;
                }
                all = grown;
                all_cap = cap;
            }
            cli_sort_indices(hits, found);
            memcpy(all + total, hits, (size_t)found * sizeof(int32_t));
        }
        total += found;
    }
    s->destroy(index);
    free(hits);
    const int32_t nq = queries.count;
    nbio_points_free(&queries);
    if (st != NB_OK) {
        free(all);
        free(first);
        return st == NB_ERR_OUT_OF_MEMORY ? cli_out_of_memory(name, "for the results")
                                          : cli_fail_status(qname, st, "querying");
    }
    first[nq] = total;
    const nbioRowShape shape = {2, {"q", "i", NULL}, false};
    cliRows rows;
    r = cli_rows_open(cmd->name, &o, &shape, &rows);
    if (r == CLI_EXIT_OK && (o.given & CLI_OPT_COUNT)) {
        nbio_write_i64(&rows.rows.w, total);
        nbio_write_char(&rows.rows.w, '\n');
    } else if (r == CLI_EXIT_OK) {
        for (int32_t q = 0; q < nq; q++)
            nbio_rows_put_run(&rows.rows, q, all + first[q], first[q + 1] - first[q]);
    }
    free(all);
    free(first);
    return r == CLI_EXIT_OK ? cli_rows_close(&rows, CLI_EXIT_OK) : r;
}

static int run_overlaps(int argc, char **argv)
{
    const cliCommand *cmd = &cli_cmd_overlaps;
    cliOptions o = {0};
    int r = cli_parse_options(cmd, argc, argv, &o);
    if (r >= 0) return r;
    if ((r = cli_check_count_output(cmd, &o)) != CLI_EXIT_OK) return r;
    char name[256];
    nbioPoints rects;
    if ((r = cli_load_rects(o.input, o.format, name, sizeof name, &rects)) != CLI_EXIT_OK) return r;
    const cliStructure *s = o.structure;
    const int32_t n = rects.count;
    void *index = NULL;
    nbStatus st = s->build_rects(&index, rects.coords, n);
    nbio_points_free(&rects);
    if (st != NB_OK) return cli_fail_status(name, st, "building the index");
    nbioWriter w;
    if (o.given & CLI_OPT_COUNT) {
        int64_t count = 0;
        st = s->overlaps(index, NULL, 0, &count);
        s->destroy(index);
        if (st != NB_OK) return cli_fail_status(name, st, "finding the pairs");
        cli_writer_init(&w);
        nbio_write_i64(&w, count);
        nbio_write_char(&w, '\n');
        return cli_finish_output(&w);
    }
    // Try a buffer of 4 pairs a rectangle; on NB_ERR_BUFFER_TOO_SMALL, once more at the total.
    int64_t capacity = 4 * (int64_t)n + 16;
    nbPair *pairs = NULL;
    int64_t found = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        free(pairs);
        pairs = cli_result_buffer(name, capacity, sizeof(nbPair));
        if (pairs == NULL) {
            s->destroy(index);
            return CLI_EXIT_RUNTIME;
        }
        st = s->overlaps(index, pairs, capacity, &found);
        if (st != NB_ERR_BUFFER_TOO_SMALL) break;
        capacity = found;
    }
    s->destroy(index);
    if (st == NB_OK && (found < 0 || found > capacity)) st = NB_ERR_INTERNAL;
    for (int64_t k = 0; k < found && st == NB_OK; k++)
        if (pairs[k].i < 0 || pairs[k].j >= n || pairs[k].i >= pairs[k].j) st = NB_ERR_INTERNAL;
    if (st != NB_OK) {
        free(pairs);
        return cli_fail_status(name, st, "finding the pairs");
    }
    qsort(pairs, (size_t)found, sizeof(nbPair), compare_pair);
    const nbioRowShape shape = {2, {"i", "j", NULL}, false};
    cliRows rows;
    if ((r = cli_rows_open(cmd->name, &o, &shape, &rows)) == CLI_EXIT_OK) {
        for (int64_t k = 0; k < found; k++) nbio_rows_put(&rows.rows, pairs[k].i, pairs[k].j, 0.0);
        r = cli_rows_close(&rows, CLI_EXIT_OK);
    }
    free(pairs);
    return r;
}
