// SPDX-License-Identifier: MIT
// `nearby pairs INPUT --radius R [--count]`: every pair within R, sorted, or their number.
#include <stdbool.h>
#include <stdlib.h>

#include "cli.h"
#include "options.h"
#include "structures.h"

static int run(int argc, char **argv);
static void help(void);

const cliCommand cli_cmd_pairs = {
    .name = "pairs",
    .brief = "INPUT --radius R [--count]",
    .summary = "all pairs at distance <= R, \"i,j\" a line",
    .options = CLI_OPT_INPUT | CLI_OPT_RADIUS | CLI_OPT_COUNT | CLI_OPT_DIM | CLI_OPT_STRUCTURE |
               CLI_OPT_FORMAT | CLI_OPT_PERIOD,
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
    cli_print_option_help(CLI_OPT_DIM | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT | CLI_OPT_PERIOD);
    cli_print_structures(stdout, cli_cmd_pairs.needs);
}

// Restores the max-heap property of b[0, len) below `r`.
static void sift_down(int32_t *b, int64_t r, int64_t len)
{
    for (;;) {
        int64_t c = 2 * r + 1;
        if (c >= len) return;
        if (c + 1 < len && b[c + 1] > b[c]) c++;
        if (b[r] >= b[c]) return;
        int32_t t = b[r];
        b[r] = b[c];
        b[c] = t;
        r = c;
    }
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
    for (int32_t i = 0; i < n; i++) {
        int32_t *b = js + start[i];
        int64_t len = start[i + 1] - start[i];
        if (len <= 32) { // insertion sort: buckets are mostly tiny
            for (int64_t x = 1; x < len; x++) {
                int32_t v = b[x];
                int64_t y = x;
                while (y > 0 && b[y - 1] > v) {
                    b[y] = b[y - 1];
                    y--;
                }
                b[y] = v;
            }
        } else {
            // Heap sort: O(len log len) with no recursion, for dense clusters and duplicates.
            for (int64_t root = len / 2; root-- > 0;) sift_down(b, root, len);
            for (int64_t end = len - 1; end > 0; end--) {
                int32_t t = b[0];
                b[0] = b[end];
                b[end] = t;
                sift_down(b, 0, end);
            }
        }
    }
    *js_out = js;
    *start_out = start;
    return true;
}

static int run(int argc, char **argv)
{
    const cliCommand *cmd = &cli_cmd_pairs;
    cliOptions o = {0};
    cliInput in;
    int r = cli_start(cmd, argc, argv, CLI_OPT_RADIUS, &o, &in);
    if (r >= 0) return r;
    const cliStructure *s = o.structure;
    const int32_t n = in.points.count;
    void *index;
    if ((r = cli_build(s, &in, o.radius, &index)) != CLI_EXIT_OK) return r;

    nbioWriter w;
    cli_writer_init(&w);
    if (o.given & CLI_OPT_COUNT) {
        int64_t count = 0;
        nbStatus st = s->pairs(index, o.radius, NULL, 0, &count);
        s->destroy(index);
        if (st != NB_OK) return cli_fail_status(in.name, st, "counting pairs");
        nbio_write_i64(&w, count);
        nbio_write_char(&w, '\n');
        return cli_finish_output(&w);
    }

    nbPair *pairs = NULL;
    int64_t count = 0;
    nbStatus st =
        cli_collect_pairs(s, index, o.radius, 4 * (int64_t)n + 1024, &pairs, &count, NULL);
    s->destroy(index);
    if (st == NB_ERR_OUT_OF_MEMORY) return cli_out_of_memory(in.name, "storing the pairs");
    // The sort indexes arrays by i and j: check the library's answer before trusting it.
    for (int64_t p = 0; p < count && st == NB_OK; p++)
        if (!(pairs[p].i >= 0 && pairs[p].i < pairs[p].j && pairs[p].j < n)) st = NB_ERR_INTERNAL;
    if (st != NB_OK) {
        free(pairs);
        return cli_fail_status(in.name, st, "finding pairs");
    }
    int32_t *js = NULL;
    int64_t *start = NULL;
    bool sorted = sort_pairs(pairs, count, n, &js, &start);
    free(pairs);
    if (!sorted) return cli_out_of_memory(in.name, "sorting the pairs");
    for (int32_t i = 0; i < n; i++) {
        for (int64_t p = start[i]; p < start[i + 1]; p++) {
            nbio_write_i64(&w, i);
            nbio_write_char(&w, ',');
            nbio_write_i64(&w, js[p]);
            nbio_write_char(&w, '\n');
        }
    }
    free(js);
    free(start);
    return cli_finish_output(&w);
}
