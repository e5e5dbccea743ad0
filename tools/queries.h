// SPDX-License-Identifier: MIT
// Queries in bulk for `within --queries`, `join` and `knn`: the queries go to the workers in
// batches, each batch cut into parts that the workers format into their own buffers, and the
// parts are written in query order, so the output is the same bytes for any number of workers
// and memory is the inputs, the index and about two batches of rows (one written while the
// next is answered).
#ifndef NEARBY_TOOLS_QUERIES_H
#define NEARBY_TOOLS_QUERIES_H

#include <stdint.h>

#include "cli.h"

struct nbxPool;

/// Answers query q, writing its rows to `rows` (a part of the output); `worker` (0 to the
/// pool's workers - 1) picks the caller's scratch for it. Returns a status (NB_OK to go on).
typedef nbStatus (*cliAnswerFn)(void *ctx, int32_t worker, int32_t q, nbioRows *rows);

/// Answers queries [0, count) with `answer`, on the pool's workers (serially if pool is NULL):
/// batches of parts of `per_part` queries, each part's rows formatted into its own buffer of
/// `part_bytes` to start with (it grows as needed), the parts written to `out` in query order.
/// With `order_by` (the queries' coordinates, or NULL), each batch (about 64Ki queries) is
/// answered in the Z order of its queries, so that neighbouring queries run one after the
/// other and find the index's memory in cache, and each query's rows are then written in
/// query order: the same bytes as without, in less time.
/// A progress line names `cmd` and counts `unit`. Returns NB_OK, the status of the first query
/// that failed, or NB_ERR_OUT_OF_MEMORY.
nbStatus cli_answer_in_batches(cliAnswerFn answer, void *ctx, int32_t count, int32_t per_part,
                               size_t part_bytes, const nbioPoints *order_by, nbioRows *out,
                               struct nbxPool *pool, const char *cmd, const char *unit);

/// Radius queries in bulk (within, join), after the inputs are read: opens the rows of `shape`
/// (cli_rows_open), indexes `points` at o->radius (freeing them), then for each point q of
/// `queries` writes the points within o->radius, ascending, as rows (q, i), or (i) alone for a
/// 1-column shape; with --count only their number. The queries run on o->threads workers
/// (cli_answer_in_batches). A progress line counts `unit`. Frees both inputs; returns the exit
/// status (failures reported).
int cli_within_run(const struct cliCommand *cmd, const struct cliOptions *o, cliInput *points,
                   cliInput *queries, const nbioRowShape *shape, const char *unit);

#endif
