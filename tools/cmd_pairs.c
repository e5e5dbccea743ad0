// SPDX-License-Identifier: MIT
// `nearby pairs INPUT --radius R [--count]`: every pair within R, sorted, or their number.
#define _POSIX_C_SOURCE 200809L // sysconf and pthreads (the --threads pool) under -std=c11
#include <stdbool.h>
#include <stdlib.h>

#include "cli.h"
#include "nb_pthreads.h"
#include "options.h"
#include "structures.h"

static int run(int argc, char **argv);
static void help(void);

const cliCommand cli_cmd_pairs = {
    .name = "pairs",
    .brief = "INPUT --radius R [--count]",
    .summary = "all pairs at distance <= R, \"i,j\" a line",
    .options = CLI_OPT_INPUT | CLI_OPT_RADIUS | CLI_OPT_COUNT | CLI_OPT_OUTPUT | CLI_OPT_DIM |
               CLI_OPT_STRUCTURE | CLI_OPT_FORMAT | CLI_OPT_PERIOD | CLI_OPT_THREADS,
    .needs = CLI_QUERY_PAIRS,
    .run = run,
    .help = help,
};

static void help(void)
{
    cli_print_usage(&cli_cmd_pairs, cli_cmd_pairs.brief);
    fputs("Prints every pair of points at distance <= R, one \"i,j\" a line (0-based input\n"
          "order, i < j, each pair once), sorted by i then j.\n"
          "\n",
          stdout);
    cli_print_option_help(CLI_OPT_RADIUS);
    fputs("  --count           print only the number of pairs\n", stdout);
    cli_print_output_help();
    cli_print_option_help(CLI_OPT_DIM | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT | CLI_OPT_PERIOD |
                          CLI_OPT_THREADS);
    cli_print_structures(stdout, cli_cmd_pairs.needs);
}

// Sorts pairs by (i, j) without a comparison sort over all of them: a counting sort by i
// (the pairs' i values are < n), then a small sort of each i's j values. O(n + pairs + sum of
// b log b over buckets). Returns the j values in order and the bucket starts (n + 1 entries).
static bool sort_pairs(const nbPair *pairs, int64_t count, int32_t n, int32_t **js_out,
                       int64_t **start_out)
{
    int64_t *start = calloc((size_t)n + 1, sizeof(int64_t));
    int32_t *js = malloc(count > 0 ? (size_t)count * sizeof(int32_t) : 1);
    if (start == NULL || js == NULL) {
        free(start);
        free(js);
        return false;
    }
    for (int64_t p = 0; p < count; p++) start[pairs[p].i + 1]++;
    for (int32_t i = 0; i < n; i++) start[i + 1] += start[i];
    // Scatter using start[i] as a cursor, then shift back: bucket i ends up at
    // [start[i], start[i + 1]).
    for (int64_t p = 0; p < count; p++) js[start[pairs[p].i]++] = pairs[p].j;
    for (int32_t i = n; i > 0; i--) start[i] = start[i - 1];
    start[0] = 0;
    for (int32_t i = 0; i < n; i++) cli_sort_indices(js + start[i], start[i + 1] - start[i]);
    *js_out = js;
    *start_out = start;
    return true;
}

static int find_pairs(const cliOptions *o, cliInput *in);

static int run(int argc, char **argv)
{
    const cliCommand *cmd = &cli_cmd_pairs;
    cliOptions o = {0};
    cliInput in;
    int r = cli_start(cmd, argc, argv, CLI_OPT_RADIUS, &o, &in);
    if (r >= 0) return r;
    // The workers (examples/nb_pthreads.h); if threads cannot be had, one thread does it all.
    nbxPool pool;
    const bool pooled = nbx_pool_start(&pool, o.threads) == 0;
    const nbTasks tasks = pooled ? nbx_pool_tasks(&pool) : (nbTasks){0};
    cli_structure_set_tasks(&tasks);
    r = find_pairs(&o, &in);
    cli_structure_set_tasks(NULL);
    if (pooled) nbx_pool_stop(&pool);
    return r;
}

// The most pairs `nearby pairs` collects and sorts in memory (about 16 bytes each) before it
// streams them instead: NEARBY_PAIRS_IN_MEMORY if set (a whole number), else 2^24.
static int64_t pairs_in_memory(void)
{
    const char *e = getenv("NEARBY_PAIRS_IN_MEMORY");
    if (e != NULL && *e != 0) {
        char *end;
        long long v = strtoll(e, &end, 10);
        if (*end == 0 && v >= 0) return v;
    }
    return (int64_t)1 << 24;
}

// Writes every pair by a radius query per point: point i's neighbours j > i, sorted, then the
// next i. Memory: the points, the index and one query's hits. The written total must equal the
// count, or the run fails (NB_ERR_INTERNAL) rather than write a wrong answer silently.
static int stream_pairs(const cliStructure *s, const void *index, const cliInput *in, double radius,
                        int64_t count, nbioRows *rows)
{
    if (s->within == NULL) return cli_fail_status(in->name, NB_ERR_INTERNAL, "streaming pairs");
    const int32_t n = in->points.count, dim = in->points.dim;
    cliHits hits = {0};
    int64_t printed = 0;
    nbStatus st = NB_OK;
    cliProgress progress;
    cli_progress_start(&progress, "pairs", "points", n);
    for (int32_t i = 0; i < n && st == NB_OK; i++) {
        st = cli_query_within(s, index, in->points.coords + (size_t)i * (size_t)dim, radius, &hits);
        int32_t m = 0;
        for (int32_t t = 0; t < hits.found; t++)
            if (hits.ids[t] > i) hits.ids[m++] = hits.ids[t];
        cli_sort_indices(hits.ids, m);
        nbio_rows_put_run(rows, i, hits.ids, m);
        printed += m;
        if ((i & 1023) == 0) cli_progress_show(&progress, i);
    }
    cli_progress_end(&progress);
    cli_hits_free(&hits);
    if (st == NB_ERR_OUT_OF_MEMORY) return cli_out_of_memory(in->name, "streaming the pairs");
    if (st == NB_OK && printed != count) st = NB_ERR_INTERNAL;
    if (st != NB_OK) return cli_fail_status(in->name, st, "streaming pairs");
    return CLI_EXIT_OK;
}

static int find_pairs(const cliOptions *opts, cliInput *inp)
{
    const cliOptions o = *opts;
    cliInput in = *inp;
    int r;
    const cliStructure *s = o.structure;
    const int32_t n = in.points.count;
    void *index = NULL;
    nbStatus st = cli_index_build(s, in.points.coords, n, in.points.dim, o.radius, &index);
    if (st != NB_OK) {
        nbio_points_free(&in.points);
        return cli_fail_status(in.name, st, "building the index");
    }

    const nbioRowShape shape = {2, {"i", "j", NULL}, false};
    cliRows rows;
    if ((r = cli_rows_open("pairs", &o, &shape, &rows)) != CLI_EXIT_OK) {
        s->destroy(index);
        nbio_points_free(&in.points);
        return r;
    }
    int64_t count = 0;
    st = s->pairs(index, o.radius, NULL, 0, &count);
    if (st == NB_OK && !(o.given & CLI_OPT_COUNT) && count > pairs_in_memory()) {
        // Too many to hold: stream them, i after i, in O(N) memory plus one query's worth.
        r = stream_pairs(s, index, &in, o.radius, count, &rows.rows);
        s->destroy(index);
        nbio_points_free(&in.points);
        return cli_rows_close(&rows, r);
    }
    nbio_points_free(&in.points);
    if (st != NB_OK || (o.given & CLI_OPT_COUNT)) {
        s->destroy(index);
        if (st != NB_OK)
            return cli_rows_close(&rows, cli_fail_status(in.name, st, "counting pairs"));
        nbio_write_i64(&rows.rows.w, count);
        nbio_write_char(&rows.rows.w, '\n');
        return cli_rows_close(&rows, CLI_EXIT_OK);
    }

    nbPair *pairs = NULL;
    st = cli_collect_pairs(s, index, o.radius, count > 0 ? count : 1, &pairs, &count, NULL);
    s->destroy(index);
    if (st == NB_ERR_OUT_OF_MEMORY)
        return cli_rows_close(&rows, cli_out_of_memory(in.name, "storing the pairs"));
    // The sort indexes arrays by i and j: check the library's answer before trusting it.
    for (int64_t p = 0; p < count && st == NB_OK; p++)
        if (!(pairs[p].i >= 0 && pairs[p].i < pairs[p].j && pairs[p].j < n)) st = NB_ERR_INTERNAL;
    if (st != NB_OK) {
        free(pairs);
        return cli_rows_close(&rows, cli_fail_status(in.name, st, "finding pairs"));
    }
    int32_t *js = NULL;
    int64_t *start = NULL;
    bool sorted = sort_pairs(pairs, count, n, &js, &start);
    free(pairs);
    if (!sorted) return cli_rows_close(&rows, cli_out_of_memory(in.name, "sorting the pairs"));
    for (int32_t i = 0; i < n; i++)
        nbio_rows_put_run(&rows.rows, i, js + start[i], start[i + 1] - start[i]);
    free(js);
    free(start);
    return cli_rows_close(&rows, CLI_EXIT_OK);
}
