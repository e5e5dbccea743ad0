// SPDX-License-Identifier: MIT
#define _POSIX_C_SOURCE 200809L // sysconf and pthreads (the --threads pool) under -std=c11

#include "queries.h"

#include <stdlib.h>

#include "nb_pthreads.h"
#include "options.h"
#include "structures.h"

// One batch of queries, cut into parts that the workers take in any order.
typedef struct Batch {
    cliAnswerFn answer;
    void *ctx;
    int32_t first, count, per_part; // queries [first, first + count), per_part to a part
    nbioRows *parts;
    nbStatus *status; // per part
} Batch;

// Parts [b, e) of a batch on `worker`.
static void answer_parts(int32_t b, int32_t e, int32_t worker, void *ctx)
{
    const Batch *x = ctx;
    for (int32_t part = b; part < e; part++) {
        const int32_t q0 = x->first + part * x->per_part;
        const int32_t q1 =
            x->count - part * x->per_part < x->per_part ? x->first + x->count : q0 + x->per_part;
        nbStatus st = NB_OK;
        for (int32_t q = q0; q < q1 && st == NB_OK; q++)
            st = x->answer(x->ctx, worker, q, &x->parts[part]);
        x->status[part] = st;
    }
}

nbStatus cli_answer_in_batches(cliAnswerFn answer, void *ctx, int32_t count, int32_t per_part,
                               size_t part_bytes, nbioRows *out, nbxPool *pool, const char *cmd,
                               const char *unit)
{
    const int32_t workers = pool != NULL ? pool->workers : 1;
    const int32_t nparts = 4 * workers; // a few parts a worker: a slow one takes fewer
    per_part = per_part < 1 ? 1 : per_part;
    part_bytes = part_bytes < 64 ? 64 : part_bytes;
    Batch x = {answer, ctx, 0, 0, per_part, NULL, NULL};
    x.parts = calloc((size_t)nparts, sizeof(nbioRows));
    x.status = calloc((size_t)nparts, sizeof(nbStatus));
    nbStatus st = x.parts == NULL || x.status == NULL ? NB_ERR_OUT_OF_MEMORY : NB_OK;
    for (int32_t p = 0; p < nparts && st == NB_OK; p++) {
        char *buf = malloc(part_bytes);
        if (buf == NULL) st = NB_ERR_OUT_OF_MEMORY;
        if (buf != NULL)
            nbio_rows_start_part(&x.parts[p], out->format, &out->shape, buf, part_bytes);
    }
    cliProgress progress;
    cli_progress_start(&progress, cmd, unit, count);
    for (int32_t first = 0; first < count && st == NB_OK; first += x.count) {
        const int64_t batch = (int64_t)nparts * per_part;
        x.first = first;
        x.count = count - first < batch ? count - first : (int32_t)batch;
        const int32_t used = (int32_t)((x.count + per_part - 1) / per_part);
        if (pool != NULL)
            nbx_parallel_for(answer_parts, used, 1, &x, pool);
        else
            answer_parts(0, used, 0, &x);
        for (int32_t p = 0; p < used && st == NB_OK; p++) {
            st = x.status[p];
            if (st == NB_OK && x.parts[p].w.failed) st = NB_ERR_OUT_OF_MEMORY; // could not grow
            nbio_rows_append(out, &x.parts[p]);
        }
        cli_progress_show(&progress, first + x.count);
    }
    cli_progress_end(&progress);
    for (int32_t p = 0; p < nparts && x.parts != NULL; p++) free(x.parts[p].w.buf);
    free(x.parts);
    free(x.status);
    return st;
}

// ---------------------------------------------------------------------------------------------
// within --queries, join

typedef struct WithinRun {
    const cliStructure *s;
    const void *index;
    const nbioPoints *queries;
    int32_t n; // points indexed
    double radius;
    cliHits *hits;  // per worker
    int64_t *total; // per worker: rows found
    bool count;     // --count: no rows
} WithinRun;

static nbStatus answer_within(void *ctx, int32_t worker, int32_t q, nbioRows *rows)
{
    const WithinRun *u = ctx;
    cliHits *h = &u->hits[worker];
    const double *center = u->queries->coords + (size_t)q * (size_t)u->queries->dim;
    const nbStatus st = cli_query_within(u->s, u->index, center, u->radius, h);
    if (st != NB_OK) return st;
    for (int32_t k = 0; k < h->found; k++)
        if (h->ids[k] < 0 || h->ids[k] >= u->n) return NB_ERR_INTERNAL;
    u->total[worker] += h->found;
    if (!u->count) {
        cli_sort_indices(h->ids, h->found);
        nbio_rows_put_run(rows, q, h->ids, h->found); // (i) alone for one column
    }
    return NB_OK;
}

int cli_within_run(const cliCommand *cmd, const cliOptions *o, cliInput *points, cliInput *queries,
                   const nbioRowShape *shape, const char *unit)
{
    cliRows rows;
    int r = cli_rows_open(cmd->name, o, shape, &rows);
    if (r != CLI_EXIT_OK) {
        nbio_points_free(&points->points);
        nbio_points_free(&queries->points);
        return r;
    }
    // The workers (examples/nb_pthreads.h) build the index and answer the queries; if threads
    // cannot be had, one thread does it all.
    nbxPool pool;
    const bool pooled = nbx_pool_start(&pool, o->threads) == 0;
    const nbTasks tasks = pooled ? nbx_pool_tasks(&pool) : (nbTasks){0};
    const int32_t workers = pooled ? pool.workers : 1;
    const cliStructure *s = o->structure;
    const int32_t n = points->points.count;
    void *index = NULL;
    cli_structure_set_tasks(&tasks);
    r = cli_build(s, points, o->radius, &index);
    cli_structure_set_tasks(NULL);
    WithinRun u = {
        s, index, &queries->points, n, o->radius, NULL, NULL, (o->given & CLI_OPT_COUNT) != 0};
    u.hits = calloc((size_t)workers, sizeof(cliHits));
    u.total = calloc((size_t)workers, sizeof(int64_t));
    if (r == CLI_EXIT_OK && (u.hits == NULL || u.total == NULL))
        r = cli_out_of_memory(points->name, "for the results");
    if (r == CLI_EXIT_OK) {
        // Parts of 1024 queries, 64 KiB of rows each to start with (about 8 hits a query).
        const nbStatus st =
            cli_answer_in_batches(answer_within, &u, queries->points.count, 1024, (size_t)64 << 10,
                                  &rows.rows, pooled ? &pool : NULL, cmd->name, unit);
        if (st == NB_ERR_OUT_OF_MEMORY)
            r = cli_out_of_memory(points->name, "for the results");
        else if (st != NB_OK)
            r = cli_fail_status(points->name, st, "querying");
    }
    if (pooled) nbx_pool_stop(&pool);
    int64_t total = 0;
    for (int32_t w = 0; w < workers && u.hits != NULL && u.total != NULL; w++) {
        cli_hits_free(&u.hits[w]);
        total += u.total[w];
    }
    free(u.hits);
    free(u.total);
    if (index != NULL) s->destroy(index);
    nbio_points_free(&queries->points);
    if (r == CLI_EXIT_OK && u.count) {
        nbio_write_i64(&rows.rows.w, total);
        nbio_write_char(&rows.rows.w, '\n');
    }
    return cli_rows_close(&rows, r);
}
