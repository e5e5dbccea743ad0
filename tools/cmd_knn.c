// SPDX-License-Identifier: MIT
// `nearby knn INPUT --k K --at X,Y[,Z]`: the K nearest points, "index,distance", nearest first.
// `nearby knn INPUT --k K --queries Q`: "q,i,distance" for each query, nearest first.
// `nearby knn INPUT --k K`: the K nearest of every point among the others (a kNN graph),
// "i,j,distance". The workers of --threads answer batches of queries, each part of a batch
// formatted into its own buffer, written in query order: memory is the inputs, the index and
// a few MiB of rows, whatever the output's size.
#define _POSIX_C_SOURCE 200809L // sysconf and pthreads (the --threads pool) under -std=c11
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "nb_pthreads.h"
#include "options.h"
#include "queries.h"
#include "structures.h"

static int run(int argc, char **argv);
static void help(void);

const cliCommand cli_cmd_knn = {
    .name = "knn",
    .brief = "INPUT --k K [--at X,Y[,Z] | --queries Q]",
    .summary = "the K nearest of a point, of each query, or of every point",
    .options = CLI_OPT_INPUT | CLI_OPT_K | CLI_OPT_AT | CLI_OPT_QUERIES | CLI_OPT_OUTPUT |
               CLI_OPT_DIM | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT | CLI_OPT_PERIOD | CLI_OPT_THREADS,
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
    cli_print_option_help(CLI_OPT_DIM | CLI_OPT_STRUCTURE | CLI_OPT_FORMAT | CLI_OPT_PERIOD |
                          CLI_OPT_THREADS);
    cli_print_structures(stdout, cli_cmd_knn.needs);
}

static int compare_neighbor(const void *a, const void *b)
{
    const nbNeighbor *x = a;
    const nbNeighbor *y = b;
    if (x->dist2 != y->dist2) return x->dist2 < y->dist2 ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

// A scale for a kNN index, which has no radius: a little more than the radius of the ball that
// holds `k` points if they were spread evenly over their bounding box (axes of zero extent are
// left out), and never below the mean spacing. Then ring 1 around a query's cell (3^dim cells)
// usually holds the k nearest and proves it, and the cells hold few points to look at: on 1M
// uniform points in 3D with k = 8, about a third less work than cells of twice the spacing.
static double knn_scale(const nbioPoints *p, int32_t k)
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
    const double spacing = exp((log_sum - log((double)p->count)) / axes);
    // The radius, in spacings, of the ball of volume k: k / 2 on a line, sqrt(k / pi) in a
    // plane, cbrt(3k / 4pi) in space.
    const double pi = 3.14159265358979323846;
    const double kk = k > 0 ? (double)k : 1.0;
    const double ball = axes == 1   ? kk / 2.0
                        : axes == 2 ? sqrt(kk / pi)
                                    : cbrt(3.0 * kk / (4.0 * pi));
    const double scale = spacing * fmax(1.0, 1.2 * ball);
    return isfinite(scale) && scale > 0.0 ? scale : 1.0;
}

// What the queries share: the index, the queries, what to ask, and each worker's answers.
typedef struct KnnRun {
    const cliStructure *s;
    const void *index;
    const nbioPoints *queries;
    int32_t n, k, ask; // points indexed; answers a row set holds; answers asked of the index
    bool graph, one;   // the kNN graph (leave the point itself out); --at ("i,distance")
    nbNeighbor *heaps; // ask answers per worker
    int32_t *ids;      // k rows per worker: the indices
    double *dists;     //                    and the distances
} KnnRun;

// Sorts by (distance, index): insertion sort, as the answers come nearly sorted already.
static void sort_neighbors(nbNeighbor *nb, int32_t count)
{
    if (count > 64) {
        qsort(nb, (size_t)count, sizeof(nbNeighbor), compare_neighbor);
        return;
    }
    for (int32_t i = 1; i < count; i++) {
        const nbNeighbor x = nb[i];
        int32_t j = i;
        for (; j > 0 && compare_neighbor(&x, &nb[j - 1]) < 0; j--) nb[j] = nb[j - 1];
        nb[j] = x;
    }
}

// Query q's answers, checked and sorted, as rows.
static nbStatus answer_knn(void *ctx, int32_t worker, int32_t q, nbioRows *rows)
{
    const KnnRun *u = ctx;
    nbNeighbor *nb = u->heaps + (size_t)worker * (size_t)u->ask;
    int32_t found = 0;
    nbStatus st = u->s->knn(u->index, u->queries->coords + (size_t)q * (size_t)u->queries->dim,
                            u->ask, nb, &found);
    if (st == NB_OK && found != u->ask) st = NB_ERR_INTERNAL; // min(ask, N) exactly
    for (int32_t i = 0; i < found && st == NB_OK; i++)
        if (nb[i].index < 0 || nb[i].index >= u->n || !(nb[i].dist2 >= 0.0)) st = NB_ERR_INTERNAL;
    if (st != NB_OK) return st;
    // The API promises this order already; sorting again keeps every structure's output
    // byte-identical even if one breaks ties differently.
    sort_neighbors(nb, found);
    int32_t *ids = u->ids + (size_t)worker * (size_t)u->k;
    double *dists = u->dists + (size_t)worker * (size_t)u->k;
    int32_t put = 0;
    for (int32_t i = 0; i < found && put < u->k; i++) {
        if (u->graph && nb[i].index == q) continue; // among the others
        ids[put] = nb[i].index;
        dists[put++] = sqrt(nb[i].dist2);
    }
    if (u->one) { // "index,distance"
        for (int32_t i = 0; i < put; i++) nbio_rows_put(rows, ids[i], ids[i], dists[i]);
    } else {
        nbio_rows_put_dists(rows, q, ids, dists, put);
    }
    return NB_OK;
}

// Answers every query in batches (on the pool when there is one) and writes the rows in
// query order. Memory: per worker ask answers, per part about 1 MiB of rows.
#define KNN_PART_BYTES ((int64_t)1 << 20)
static int answer(KnnRun *u, nbioRows *out, nbxPool *pool, const char *name, const char *cmd)
{
    const int32_t nq = u->k > 0 ? u->queries->count : 0;
    const int32_t workers = pool != NULL ? pool->workers : 1;
    const int64_t row_bytes = (int64_t)(u->k > 0 ? u->k : 1) * NBIO_ROW_MAX;
    int64_t per = KNN_PART_BYTES / row_bytes;
    per = per < 1 ? 1 : per > 1024 ? 1024 : per;
    // A K too large for the address space (only where size_t is 32 bits) is out of memory.
    const bool fits = (uint64_t)workers * (uint64_t)u->ask < SIZE_MAX / 2 / sizeof(nbNeighbor);
    const size_t slots = fits ? (size_t)workers * (size_t)u->ask + 1 : 0;
    u->heaps = fits ? malloc(slots * sizeof(nbNeighbor)) : NULL;
    u->ids = fits ? malloc(slots * sizeof(int32_t)) : NULL;
    u->dists = fits ? malloc(slots * sizeof(double)) : NULL;
    nbStatus st =
        u->heaps == NULL || u->ids == NULL || u->dists == NULL ? NB_ERR_OUT_OF_MEMORY : NB_OK;
    if (st == NB_OK) {
        // Parts start at their rows' worst case up to 1 MiB (larger K grows them as needed).
        const int64_t want = per * row_bytes + NBIO_WRITER_SLACK + NBIO_DOUBLE_MAX;
        const size_t part_bytes = want < KNN_PART_BYTES ? (size_t)want : (size_t)KNN_PART_BYTES;
        st = cli_answer_in_batches(answer_knn, u, nq, (int32_t)per, part_bytes, u->queries, out,
                                   pool, cmd, u->graph ? "points" : "queries");
    }
    free(u->heaps);
    free(u->ids);
    free(u->dists);
    u->heaps = NULL;
    u->ids = NULL;
    u->dists = NULL;
    if (st == NB_ERR_OUT_OF_MEMORY) return cli_out_of_memory(name, "for the results");
    if (st != NB_OK) return cli_fail_status(name, st, "querying");
    return CLI_EXIT_OK;
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
    const int32_t n = in.points.count;
    // min(k, N) answers are all there are; the graph asks for one more, the point itself.
    const int32_t k = o.k < n ? (int32_t)o.k : n;
    const int32_t ask = graph && k < n ? k + 1 : k;
    // The workers (examples/nb_pthreads.h) build the index and answer the queries; if threads
    // cannot be had, one thread does it all.
    nbxPool pool;
    const bool pooled = nbx_pool_start(&pool, o.threads) == 0;
    const nbTasks tasks = pooled ? nbx_pool_tasks(&pool) : (nbTasks){0};
    cli_structure_set_tasks(&tasks);
    void *index;
    r = cli_build(s, &in, knn_scale(&in.points, ask), &index);
    cli_structure_set_tasks(NULL);
    if (r == CLI_EXIT_OK) {
        KnnRun job = {s, index, &queries.points, n, k, ask, graph, one, NULL, NULL, NULL};
        r = answer(&job, &rows.rows, pooled ? &pool : NULL, in.name, cmd->name);
        s->destroy(index);
    }
    if (pooled) nbx_pool_stop(&pool);
    nbio_points_free(&queries.points);
    return cli_rows_close(&rows, r);
}
