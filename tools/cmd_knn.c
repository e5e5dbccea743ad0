// SPDX-License-Identifier: MIT
// `nearby knn INPUT --k K --at X,Y[,Z]`: the K nearest points, "index,distance", nearest first.
#include <math.h>
#include <stdlib.h>

#include "cli.h"
#include "options.h"
#include "structures.h"

static int run(int argc, char **argv);
static void help(void);

const cliCommand cli_cmd_knn = {
    .name = "knn",
    .brief = "INPUT --k K --at X,Y[,Z]",
    .summary = "the K nearest, \"index,distance\"",
    .options = CLI_OPT_INPUT | CLI_OPT_K | CLI_OPT_AT | CLI_OPT_DIM | CLI_OPT_STRUCTURE |
               CLI_OPT_FORMAT | CLI_OPT_PERIOD,
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
          "\n"
          "  --k K             how many, 0 to 2147483647 (required)\n",
          stdout);
    cli_print_option_help(CLI_OPT_AT | CLI_OPT_DIM | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT |
                          CLI_OPT_PERIOD);
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
    cliInput in;
    int r = cli_start(cmd, argc, argv, CLI_OPT_K | CLI_OPT_AT, &o, &in);
    if (r >= 0) return r;
    const cliStructure *s = o.structure;
    const int32_t n = in.points.count;
    void *index;
    if ((r = cli_build(s, &in, knn_scale(&in.points), &index)) != CLI_EXIT_OK) return r;

    int32_t k = o.k < n ? (int32_t)o.k : n; // min(k, N) answers are all there are
    nbNeighbor *nb = cli_result_buffer(in.name, k, sizeof(nbNeighbor));
    if (nb == NULL) {
        s->destroy(index);
        return CLI_EXIT_RUNTIME;
    }
    int32_t found = 0;
    nbStatus st = s->knn(index, o.at, k, nb, &found);
    s->destroy(index);
    if (st == NB_OK && found != k) st = NB_ERR_INTERNAL; // min(k, N) exactly
    for (int32_t i = 0; i < found && st == NB_OK; i++)
        if (nb[i].index < 0 || nb[i].index >= n || !(nb[i].dist2 >= 0.0)) st = NB_ERR_INTERNAL;
    if (st != NB_OK) {
        free(nb);
        return cli_fail_status(in.name, st, "querying");
    }
    // The API promises this order already; sorting again keeps every structure's output
    // byte-identical even if one breaks ties differently.
    qsort(nb, (size_t)found, sizeof(nbNeighbor), compare_neighbor);
    nbioWriter w;
    cli_writer_init(&w);
    for (int32_t i = 0; i < found; i++) {
        nbio_write_i64(&w, nb[i].index);
        nbio_write_char(&w, ',');
        nbio_write_double(&w, sqrt(nb[i].dist2));
        nbio_write_char(&w, '\n');
    }
    free(nb);
    return cli_finish_output(&w);
}
