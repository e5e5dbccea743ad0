// SPDX-License-Identifier: MIT
// `nearby knn INPUT --k K --at X,Y[,Z]`: the K nearest points, "index,distance", nearest first.
// `nearby knn INPUT --k K --queries Q`: "q,i,distance" for each query, nearest first.
// `nearby knn INPUT --k K`: the K nearest of every point among the others (a kNN graph),
// "i,j,distance". Rows go out query by query: memory is the inputs, the index and K answers.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "structures.h"

static int run(int argc, char **argv);
static void help(void);

const cliCommand cli_cmd_knn = {
    .name = "knn",
    .brief = "INPUT --k K [--at X,Y[,Z] | --queries Q]",
    .summary = "the K nearest of a point, of each query, or of every point",
    .options = CLI_OPT_INPUT | CLI_OPT_K | CLI_OPT_AT | CLI_OPT_QUERIES | CLI_OPT_OUTPUT |
               CLI_OPT_DIM | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT | CLI_OPT_PERIOD,
    .needs = CLI_QUERY_KNN,
    .run = run,
    .help = help,
};

static void help(void)
{
    cli_print_usage(&cli_cmd_knn, cli_cmd_knn.brief);
    fputs("Prints the K points nearest to X,Y[,Z] as \"index,distance\" lines, nearest first;\n"
          "equal distances are ordered by the lower index. Fewer lines if there are fewer\n"
          "points. The distance is printed with 17 significant digits (it round-trips).\n"
          "With --queries Q: \"q,i,distance\" for each query q of Q in turn. With neither:\n"
          "the K nearest of every point i among the others, \"i,j,distance\" (a k-nearest-\n"
          "neighbour graph).\n"
          "\n"
          "  --k K             how many, 0 to 2147483647 (required)\n",
          stdout);
    cli_print_option_help(CLI_OPT_AT | CLI_OPT_QUERIES);
    cli_print_output_help();
    cli_print_option_help(CLI_OPT_DIM | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT | CLI_OPT_PERIOD);
    cli_print_structures(stdout, cli_cmd_knn.needs);
}

static int compare_neighbor(const void *a, const void *b)
{
    const nbNeighbor *x = a;
    const nbNeighbor *y = b;
    if (x->dist2 != y->dist2) return x->dist2 < y->dist2 ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

// A scale for a kNN index, which has no radius: the edge of a cube holding about 2^dim points
// if they were spread evenly over their bounding box (axes of zero extent are left out).
static double knn_scale(const nbioPoints *p)
{
    if (p->count < 2) return 1.0;
    double log_sum = 0.0;
    int axes = 0;
    for (int32_t d = 0; d < p->dim; d++) {
        double lo = p->coords[d];
        double hi = lo;
        for (int32_t i = 1; i < p->count; i++) {
            double v = p->coords[(size_t)i * (size_t)p->dim + (size_t)d];
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
        double extent = hi - lo;
        if (extent > 0.0) {
            log_sum += log(extent); // log(inf) = inf for far-flung data: caught below
            axes++;
        }
    }
    if (axes == 0) return 1.0;
    double scale = 2.0 * exp((log_sum - log((double)p->count)) / axes);
    return isfinite(scale) && scale > 0.0 ? scale : 1.0;
}

static int run(int argc, char **argv)
{
    const cliCommand *cmd = &cli_cmd_knn;
    cliOptions o = {0};
    cliInput in, queries;
    int r = cli_start(cmd, argc, argv, CLI_OPT_K, &o, &in);
    if (r >= 0) return r;
    if ((r = cli_load_queries(cmd->name, &o, &in, &queries)) != CLI_EXIT_OK) {
        nbio_points_free(&in.points);
        return r;
    }
    // The graph queries the points themselves: keep them apart from the index's copy.
    const bool graph = !(o.given & (CLI_OPT_AT | CLI_OPT_QUERIES));
    const bool one = (o.given & CLI_OPT_AT) != 0; // "index,distance" alone
    const nbioRowShape shape = {one ? 2 : 3,
                                {one     ? "i"
                                 : graph ? "i"
                                         : "q",
                                 one     ? "distance"
                                 : graph ? "j"
                                         : "i",
                                 "distance"},
                                true};
    if (graph && in.points.count > 0) {
        const size_t values = (size_t)in.points.count * (size_t)in.points.dim;
        queries.points.coords = malloc(values * sizeof(double));
        if (queries.points.coords == NULL) {
            nbio_points_free(&in.points);
            return cli_out_of_memory(in.name, "copying the points");
        }
        memcpy(queries.points.coords, in.points.coords, values * sizeof(double));
        queries.points.count = in.points.count;
    }
    queries.points.dim = in.points.dim;
    cliRows rows;
    if ((r = cli_rows_open(cmd->name, &o, &shape, &rows)) != CLI_EXIT_OK) {
        nbio_points_free(&in.points);
        nbio_points_free(&queries.points);
        return r;
    }
    const cliStructure *s = o.structure;
    const int32_t n = in.points.count, dim = in.points.dim;
    void *index;
    if ((r = cli_build(s, &in, knn_scale(&in.points), &index)) != CLI_EXIT_OK) {
        nbio_points_free(&queries.points);
        return cli_rows_close(&rows, r);
    }
    // min(k, N) answers are all there are; the graph asks for one more, the point itself.
    const int32_t k = o.k < n ? (int32_t)o.k : n;
    const int32_t ask = graph && k < n ? k + 1 : k;
    nbNeighbor *nb = cli_result_buffer(in.name, ask, sizeof(nbNeighbor));
    nbStatus st = nb == NULL ? NB_ERR_OUT_OF_MEMORY : NB_OK;
    cliProgress progress;
    cli_progress_start(&progress, cmd->name, graph ? "points" : "queries", queries.points.count);
    for (int32_t q = 0; q < queries.points.count && st == NB_OK && k > 0; q++) {
        int32_t found = 0;
        st = s->knn(index, queries.points.coords + (size_t)q * (size_t)dim, ask, nb, &found);
        if (st == NB_OK && found != ask) st = NB_ERR_INTERNAL; // min(ask, N) exactly
        for (int32_t i = 0; i < found && st == NB_OK; i++)
            if (nb[i].index < 0 || nb[i].index >= n || !(nb[i].dist2 >= 0.0)) st = NB_ERR_INTERNAL;
        if (st != NB_OK) break;
        // The API promises this order already; sorting again keeps every structure's output
        // byte-identical even if one breaks ties differently.
        qsort(nb, (size_t)found, sizeof(nbNeighbor), compare_neighbor);
        int32_t put = 0;
        for (int32_t i = 0; i < found && put < k; i++) {
            if (graph && nb[i].index == q) continue; // among the others
            nbio_rows_put(&rows.rows, one ? nb[i].index : q, nb[i].index, sqrt(nb[i].dist2));
            put++;
        }
        if ((q & 1023) == 0) cli_progress_show(&progress, q);
    }
    cli_progress_end(&progress);
    s->destroy(index);
    free(nb);
    nbio_points_free(&queries.points);
    if (st == NB_ERR_OUT_OF_MEMORY)
        return cli_rows_close(&rows, cli_out_of_memory(in.name, "for the results"));
    if (st != NB_OK) return cli_rows_close(&rows, cli_fail_status(in.name, st, "querying"));
    return cli_rows_close(&rows, CLI_EXIT_OK);
}
