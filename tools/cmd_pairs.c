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
    .options = CLI_OPT_INPUT | CLI_OPT_RADIUS | CLI_OPT_COUNT | CLI_OPT_DIM | CLI_OPT_STRUCTURE |
               CLI_OPT_FORMAT | CLI_OPT_PERIOD | CLI_OPT_THREADS,
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
    cli_print_option_help(CLI_OPT_DIM | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT | CLI_OPT_PERIOD |
                          CLI_OPT_THREADS);
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

// Sorts one i's j values.
static void sort_bucket(int32_t *b, int64_t len)
{
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
        return;
    }
    // Heap sort: O(len log len) with no recursion, for dense clusters and duplicates.
    for (int64_t root = len / 2; root-- > 0;) sift_down(b, root, len);
    for (int64_t end = len - 1; end > 0; end--) {
        int32_t t = b[0];
        b[0] = b[end];
        b[end] = t;
        sift_down(b, 0, end);
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
    for (int32_t i = 0; i < n; i++) sort_bucket(js + start[i], start[i + 1] - start[i]);
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

// Prints every pair by a radius query per point: point i's neighbours j > i, sorted, then the
// next i. Memory: the points, the index and one query's hits. The printed total must equal the
// count, or the run fails (NB_ERR_INTERNAL) rather than print a wrong answer silently.
static int stream_pairs(const cliStructure *s, const void *index, const cliInput *in, double radius,
                        int64_t count, nbioWriter *w)
{
    if (s->within == NULL) return cli_fail_status(in->name, NB_ERR_INTERNAL, "streaming pairs");
    const int32_t n = in->points.count, dim = in->points.dim;
    int32_t cap = 1024, found = 0;
    int32_t *hits = malloc((size_t)cap * sizeof(int32_t));
    if (hits == NULL) return cli_out_of_memory(in->name, "streaming the pairs");
    int64_t printed = 0;
    for (int32_t i = 0; i < n; i++) {
        const double *c = in->points.coords + (size_t)i * (size_t)dim;
        nbStatus st = s->within(index, c, radius, hits, cap, &found);
        if (st == NB_ERR_BUFFER_TOO_SMALL) { // grow to the reported total and ask again
            free(hits);
            cap = found;
            hits = malloc((size_t)cap * sizeof(int32_t));
            if (hits == NULL) return cli_out_of_memory(in->name, "streaming the pairs");
            st = s->within(index, c, radius, hits, cap, &found);
        }
        if (st != NB_OK) {
            free(hits);
            return cli_fail_status(in->name, st, "streaming pairs");
        }
        int32_t m = 0;
        for (int32_t t = 0; t < found; t++)
            if (hits[t] > i) hits[m++] = hits[t];
        sort_bucket(hits, m);
        for (int32_t t = 0; t < m; t++) {
            nbio_write_i64(w, i);
            nbio_write_char(w, ',');
            nbio_write_i64(w, hits[t]);
            nbio_write_char(w, '\n');
        }
        printed += m;
    }
    free(hits);
    if (printed != count) return cli_fail_status(in->name, NB_ERR_INTERNAL, "streaming pairs");
    return cli_finish_output(w);
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

    nbioWriter w;
    cli_writer_init(&w);
    int64_t count = 0;
    st = s->pairs(index, o.radius, NULL, 0, &count);
    if (st == NB_OK && !(o.given & CLI_OPT_COUNT) && count > pairs_in_memory()) {
        // Too many to hold: stream them, i after i, in O(N) memory plus one query's worth.
        r = stream_pairs(s, index, &in, o.radius, count, &w);
        s->destroy(index);
        nbio_points_free(&in.points);
        return r;
    }
    nbio_points_free(&in.points);
    if (st != NB_OK || (o.given & CLI_OPT_COUNT)) {
        s->destroy(index);
        if (st != NB_OK) return cli_fail_status(in.name, st, "counting pairs");
        nbio_write_i64(&w, count);
        nbio_write_char(&w, '\n');
        return cli_finish_output(&w);
    }

    nbPair *pairs = NULL;
    st = cli_collect_pairs(s, index, o.radius, count > 0 ? count : 1, &pairs, &count, NULL);
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
