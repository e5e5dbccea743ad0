// SPDX-License-Identifier: MIT
#define _POSIX_C_SOURCE 200809L // sysconf and pthreads (the --threads pool) under -std=c11

#include "queries.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nb_pthreads.h"
#include "options.h"
#include "structures.h"

// How the queries are put in Z order, batch by batch: their box, and scratch for the sort.
typedef struct ZOrder {
    const nbioPoints *points; // NULL: the queries in file order
    double lo[3], inv[3];
    uint64_t *keys, *tmp_keys;
    int32_t *tmp_order;
} ZOrder;

// One batch of queries, cut into parts that the workers take in any order. With `order`, part
// p answers the queries first + order[p * per_part ...] (the batch in Z order) and `spans`
// says where each query's rows went; without, the queries first + p * per_part ... in turn.
// The first worker in writes `pending`, the batch before (answered, not yet written), to `out`
// and then makes `next` ready, the batch after (its range and its Z order), while the others
// answer this one.
typedef struct Batch Batch;
struct Batch {
    cliAnswerFn answer;
    void *ctx;
    int32_t first, count, per_part; // queries [first, first + count), per_part to a part
    int32_t *order;                 // NULL, or a permutation of [0, count)
    nbioSpan *spans;                // per query of the batch, when `order`
    nbioRows *parts;
    nbStatus *status;     // per part
    int32_t used;         // parts in this batch
    atomic_int next_part; // the next part not yet taken
    Batch *pending;       // NULL, or the batch before, to write to `out`
    nbioRows *out;
    Batch *next;                    // NULL, or the batch after, to make ready
    int32_t next_first, next_count; // its queries
    const ZOrder *z;                //
    atomic_bool first_in;           // a worker has taken the writing and the making ready
};

// Writes an answered batch to `out` in query order and empties its parts.
static void write_batch(Batch *x, nbioRows *out)
{
    if (x->spans != NULL) { // answered in Z order: each query's rows where they went
        nbio_rows_append_spans(out, x->parts, x->used, x->spans, x->count);
        return;
    }
    for (int32_t p = 0; p < x->used; p++) nbio_rows_append(out, &x->parts[p]);
}

static void order_batch(const ZOrder *z, Batch *x);

// Takes the batch's parts one at a time on `worker` until none is left (the range is unused:
// each worker runs this once), the first worker in writing the batch before and making the
// next one ready first. One part at a time, not a range: on a machine shared with other jobs,
// a worker that loses its core holds up the batch by one part at most.
static void answer_parts(int32_t b, int32_t e, int32_t worker, void *ctx)
{
    (void)b;
    (void)e;
    Batch *x = ctx;
    if (!atomic_exchange(&x->first_in, true)) {
        if (x->pending != NULL) write_batch(x->pending, x->out);
        if (x->next != NULL) { // (the batch just written, made ready for what comes after)
            x->next->first = x->next_first;
            x->next->count = x->next_count;
            order_batch(x->z, x->next);
        }
    }
    for (int32_t part; (part = atomic_fetch_add(&x->next_part, 1)) < x->used;) {
        const int32_t k0 = part * x->per_part;
        const int32_t k1 = x->count - k0 < x->per_part ? x->count : k0 + x->per_part;
        nbioRows *rows = &x->parts[part];
        nbStatus st = NB_OK;
        for (int32_t k = k0; k < k1 && st == NB_OK; k++) {
            const int32_t j = x->order != NULL ? x->order[k] : k;
            const size_t before = rows->w.used;
            st = x->answer(x->ctx, worker, x->first + j, rows);
            if (x->order != NULL) x->spans[j] = (nbioSpan){before, rows->w.used - before, part};
        }
        x->status[part] = st;
    }
}

// The low 21 bits of x spread to every third bit (bit b to bit 3b) when dim is 3, every
// second (2b) when 2: five shift-and-mask steps, each halving the blocks of bits.
static inline uint64_t spread(uint64_t x, int32_t dim)
{
    static const int shifts[2][5] = {{16, 8, 4, 2, 1}, {32, 16, 8, 4, 2}};
    static const uint64_t masks[2][5] = {
        {UINT64_C(0x0000ffff0000ffff), UINT64_C(0x00ff00ff00ff00ff), UINT64_C(0x0f0f0f0f0f0f0f0f),
         UINT64_C(0x3333333333333333), UINT64_C(0x5555555555555555)},
        {UINT64_C(0x001f00000000ffff), UINT64_C(0x001f0000ff0000ff), UINT64_C(0x100f00f00f00f00f),
         UINT64_C(0x10c30c30c30c30c3), UINT64_C(0x1249249249249249)}};
    const int t = dim == 3;
    x &= 0x1fffff;
    for (int k = 0; k < 5; k++) x = (x | x << shifts[t][k]) & masks[t][k];
    return x;
}

// The Z-order (Morton) code of a point of `dim` (1 to 3) coordinates in the box of z_box: 21
// bits an axis, NaN and values outside clamped.
static uint64_t z_code(const double *p, int32_t dim, const double *lo, const double *inv)
{
    uint64_t c[3] = {0, 0, 0};
    for (int32_t d = 0; d < dim; d++) {
        const double t = (p[d] - lo[d]) * inv[d];
        c[d] = t >= 2097151.0 ? 2097151u : t > 0.0 ? (uint64_t)t : 0u;
    }
    return dim == 1 ? c[0] : spread(c[0], dim) | spread(c[1], dim) << 1 | spread(c[2], dim) << 2;
}

// order[0, count) := the positions of `keys` in increasing key order, equal keys in position
// order (a least-significant-digit radix sort by bytes, skipping bytes all keys share); tmp
// holds count keys and count positions of scratch.
static void sort_by_key(uint64_t *keys, int32_t *order, uint64_t *tmp_keys, int32_t *tmp_order,
                        int32_t count)
{
    for (int32_t k = 0; k < count; k++) order[k] = k;
    for (int shift = 0; shift < 64; shift += 8) {
        size_t start[257] = {0};
        for (int32_t k = 0; k < count; k++) start[((keys[k] >> shift) & 0xffu) + 1]++;
        bool one_bucket = false;
        for (int c = 1; c <= 256; c++) one_bucket |= start[c] == (size_t)count;
        if (one_bucket) continue; // every key has this byte: the order stands
        for (int c = 1; c <= 256; c++) start[c] += start[c - 1];
        for (int32_t k = 0; k < count; k++) {
            const size_t to = start[(keys[k] >> shift) & 0xffu]++;
            tmp_keys[to] = keys[k];
            tmp_order[to] = order[k];
        }
        memcpy(keys, tmp_keys, (size_t)count * sizeof *keys);
        memcpy(order, tmp_order, (size_t)count * sizeof *order);
    }
}

// The queries' bounding box as lo and 2^21 / extent per axis (0 for an axis of no extent).
static void z_box(const nbioPoints *q, double lo[3], double inv[3])
{
    for (int32_t d = 0; d < q->dim; d++) {
        double a = q->coords[d];
        double b = a;
        for (int32_t i = 1; i < q->count; i++) {
            const double v = q->coords[(size_t)i * (size_t)q->dim + (size_t)d];
            a = v < a ? v : a;
            b = v > b ? v : b;
        }
        lo[d] = a;
        inv[d] = b - a > 0.0 && isfinite(b - a) ? 2097152.0 / (b - a) : 0.0;
    }
}

// x->order := the Z order of the queries x->first + [0, x->count), when z has points.
static void order_batch(const ZOrder *z, Batch *x)
{
    if (z->points == NULL) return;
    const int32_t dim = z->points->dim;
    for (int32_t j = 0; j < x->count; j++)
        z->keys[j] =
            z_code(z->points->coords + (size_t)(x->first + j) * (size_t)dim, dim, z->lo, z->inv);
    sort_by_key(z->keys, x->order, z->tmp_keys, z->tmp_order, x->count);
}

// Z order asks for batches of about this many queries: on 1M random queries into 1M points
// (3D, kNN, k = 8) a batch of 64Ki in Z order does 1.7 times less work than in file order,
// as neighbouring queries find the index's points still in cache. NEARBY_QUERY_BATCH (a whole
// number from 1) sets it, for the tests to cross batches on small inputs.
static int32_t ordered_batch(void)
{
    const char *e = getenv("NEARBY_QUERY_BATCH");
    char *end;
    const long v = e != NULL ? strtol(e, &end, 10) : 0;
    return e != NULL && end != e && *end == '\0' && v >= 1 && v <= 65536 ? (int32_t)v : 0;
}

nbStatus cli_answer_in_batches(cliAnswerFn answer, void *ctx, int32_t count, int32_t per_part,
                               size_t part_bytes, const nbioPoints *order_by, nbioRows *out,
                               nbxPool *pool, const char *cmd, const char *unit)
{
    const int32_t workers = pool != NULL ? pool->workers : 1;
    per_part = per_part < 1 ? 1 : per_part;
    // A few parts a worker (a slow one takes fewer); in Z order, parts enough for a batch of
    // about 64Ki queries, at most 64 (a batch holds at most 64 parts' rows).
    int32_t nparts = 4 * workers;
    const bool ordered =
        order_by != NULL && order_by->count > 1 && order_by->dim >= 1 && order_by->dim <= 3;
    if (ordered) {
        const int32_t set = ordered_batch();
        const int32_t want_queries = set > 0 ? set : 65536;
        per_part = per_part > want_queries ? want_queries : per_part;
        const int32_t want = (want_queries + per_part - 1) / per_part;
        nparts = want > 64 ? 64 : set > 0 || want > nparts ? want : nparts;
    }
    const int64_t batch = (int64_t)nparts * per_part;
    const size_t slots = (size_t)(batch < count ? batch : count);
    part_bytes = part_bytes < 64 ? 64 : part_bytes;
    // Two batches: one answered while the one before is written (by one of the workers).
    Batch x[2];
    nbStatus st = NB_OK;
    ZOrder z = {NULL, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, NULL, NULL, NULL};
    for (int b = 0; b < 2; b++) {
        x[b] = (Batch){answer, ctx, 0,    0,   per_part, NULL, NULL, NULL, NULL,
                       0,      0,   NULL, out, NULL,     0,    0,    &z,   false};
        x[b].parts = calloc((size_t)nparts, sizeof(nbioRows));
        x[b].status = calloc((size_t)nparts, sizeof(nbStatus));
        if (ordered) {
            x[b].spans = malloc(slots * sizeof *x[b].spans);
            x[b].order = malloc(slots * sizeof *x[b].order);
        }
        if (x[b].parts == NULL || x[b].status == NULL ||
            (ordered && (x[b].spans == NULL || x[b].order == NULL)))
            st = NB_ERR_OUT_OF_MEMORY;
        for (int32_t p = 0; p < nparts && st == NB_OK; p++) {
            char *buf = malloc(part_bytes);
            if (buf == NULL) st = NB_ERR_OUT_OF_MEMORY;
            if (buf != NULL)
                nbio_rows_start_part(&x[b].parts[p], out->format, &out->shape, buf, part_bytes);
        }
    }
    if (ordered) {
        z.keys = malloc(slots * sizeof *z.keys);
        z.tmp_keys = malloc(slots * sizeof *z.tmp_keys);
        z.tmp_order = malloc(slots * sizeof *z.tmp_order);
        if (z.keys == NULL || z.tmp_keys == NULL || z.tmp_order == NULL) st = NB_ERR_OUT_OF_MEMORY;
        if (st == NB_OK) {
            z.points = order_by;
            z_box(order_by, z.lo, z.inv);
        }
    }
    cliProgress progress;
    cli_progress_start(&progress, cmd, unit, count);
    Batch *y = &x[0], *pending = NULL; // answered, not yet written
    y->count = count < batch ? count : (int32_t)batch;
    if (st == NB_OK) order_batch(&z, y);
    while (y->count > 0 && st == NB_OK) {
        Batch *n = y == &x[0] ? &x[1] : &x[0]; // the same as pending, once it is written
        y->used = (int32_t)((y->count + per_part - 1) / per_part);
        y->pending = pending;
        y->next_first = y->first + y->count;
        y->next_count = count - y->next_first < batch ? count - y->next_first : (int32_t)batch;
        y->next = y->next_count > 0 ? n : NULL;
        atomic_store(&y->first_in, false);
        atomic_store(&y->next_part, 0);
        if (pool != NULL)
            nbx_parallel_for(answer_parts, workers, 1, y, pool); // each worker once
        else
            answer_parts(0, 1, 0, y);
        for (int32_t p = 0; p < y->used && st == NB_OK; p++) {
            st = y->status[p];
            if (st == NB_OK && y->parts[p].w.failed) st = NB_ERR_OUT_OF_MEMORY; // could not grow
        }
        cli_progress_show(&progress, y->first + y->count);
        pending = y;
        if (y->next == NULL) break;
        y = n;
    }
    if (pending != NULL && st == NB_OK) write_batch(pending, out);
    cli_progress_end(&progress);
    for (int b = 0; b < 2; b++) {
        for (int32_t p = 0; p < nparts && x[b].parts != NULL; p++) free(x[b].parts[p].w.buf);
        free(x[b].parts);
        free(x[b].status);
        free(x[b].spans);
        free(x[b].order);
    }
    free(z.keys);
    free(z.tmp_keys);
    free(z.tmp_order);
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
        const nbStatus st = cli_answer_in_batches(answer_within, &u, queries->points.count, 1024,
                                                  (size_t)64 << 10, &queries->points, &rows.rows,
                                                  pooled ? &pool : NULL, cmd->name, unit);
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
