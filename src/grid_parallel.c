// SPDX-License-Identifier: MIT
// The dense grid on the caller's workers (nbTasks): the parallel passes of a build, and all
// pairs counted or written into the caller's buffer. Everything here gives the serial result,
// bit for bit and in the same order, whatever the worker count and however the scheduler splits
// the work: the work is cut into chunks fixed by the data and the chunk count alone, and each
// chunk's output has a place computed from the chunks before it.
//
// Build (dense layout). The points are cut into K contiguous chunks (K = workers). Each chunk
// counts its points per cell into its own row of `hist` (K x (cells + 2)); per cell, the rows
// become each chunk's first position in that cell (chunk 0's points first, then chunk 1's, ...),
// which is where the serial counting sort would put them, since it scatters in input order. Each
// chunk then scatters its indices through its own row; the coordinates are gathered in position
// order. Cost: the serial passes' work spread over K workers, plus O(K x (cells + 2)) for the rows.
// A large build of packed points runs grid.c's two cache-sized passes instead (blocks of
// cells per chunk of points, then cells per run of blocks), with the same result.
//
// Pairs. The cells are cut into chunks of about equal point counts. Writing them, one lane (the
// front) takes chunks 0, 1, 2, ... in order and writes each straight into the caller's buffer
// behind the one before; the other lanes take chunks from the back, K-1, K-2, ..., into scratch
// buffers kept by the grid, until the two ends meet (each chunk is claimed once, by an atomic
// flag). The scratch chunks are then copied in behind the front's, in chunk order. Whoever is
// faster takes more chunks, and only the back's pairs are copied: about half of them on two
// workers, against all but the first chunk's when every lane wrote to scratch. The scratch is
// claimed with an atomic flag, so concurrent queries stay safe: a call that finds it taken, or
// cannot grow it, runs serially instead. A scratch chunk whose scratch was too small runs again
// once it has grown, so only the first calls (or a jump in the pair count) pay twice for those
// chunks.
#include "grid_internal.h"

#include <string.h>

// ---- the scheduler ----

typedef struct nbiChunks {
    nbTaskFn *fn;
    void *ctx;
} nbiChunks;

void nbi_tasks_run(const nbTasks *t, nbTaskFn *fn, int32_t count, void *ctx)
{
    if (count <= 0) return;
    if (t == NULL || t->parallel_for == NULL || t->workers <= 1)
        fn(0, count, 0, ctx);
    else
        t->parallel_for(fn, count, 1, ctx, t->user);
}

// Runs fn over chunks [0, count) through the grid's scheduler (serially without one).
static void nbi_run_chunks(const nbGrid *g, nbTaskFn *fn, int32_t count, void *ctx)
{
    nbi_tasks_run(&g->tasks, fn, count, ctx);
}

// Item k * n / parts, the start of chunk k of n items cut into `parts`.
static int32_t nbi_cut(int32_t n, int32_t parts, int32_t k)
{
    return (int32_t)((int64_t)n * k / parts);
}

// The first i in [lo, hi] with a[i] >= want, a non-decreasing over [lo, hi] (hi if none before).
static int64_t nbi_first_at_least(const int32_t *a, int64_t lo, int64_t hi, int32_t want)
{
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] >= want)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

// ---- build ----

typedef struct nbiBuildCtx {
    const nbiBuildIn *in;
    nbGrid *g;
    int32_t chunks;
    double mn[NBI_MAX_CHUNKS][3], mx[NBI_MAX_CHUNKS][3];
    bool ok[NBI_MAX_CHUNKS];
    int32_t base[NBI_MAX_CHUNKS + 1]; // range r of units: the points in the ranges before it
    int32_t stride, skip;             // chunk k's row: hist + k * stride + skip (nbi_row)
    int32_t units;                    // what the rows count: cells, or a ranked build's words
    int32_t *ends;                    // ends[u + 1]: unit u's end (start, or the ranked words')
} nbiBuildCtx;

// Chunk k's row of cell counts (then offsets, then positions) in hist.
static int32_t *nbi_row(const nbiBuildCtx *x, int32_t k)
{
    return (int32_t *)x->g->hist.ptr + (size_t)k * (size_t)x->stride + (size_t)x->skip;
}

static void nbi_scan_task(int32_t k0, int32_t k1, int32_t worker, void *vctx)
{
    (void)worker;
    nbiBuildCtx *x = (nbiBuildCtx *)vctx;
    const nbiBuildIn *in = x->in;
    for (int32_t k = k0; k < k1; k++) {
        const int32_t a = nbi_cut(in->n, x->chunks, k), b = nbi_cut(in->n, x->chunks, k + 1);
        x->ok[k] = true;
        if (b > a)
            x->ok[k] = nbi_grid_scan(in->data + (size_t)a * in->step, in->step, b - a, in->dim,
                                     x->mn[k], x->mx[k]);
        else
            x->mn[k][0] = (double)NAN; // empty chunk: skipped when combined
    }
}

// The chunks' boxes as one, and whether every chunk was finite.
static bool nbi_combine_boxes(const nbiBuildCtx *x, double mn[3], double mx[3])
{
    bool ok = true, first = true;
    for (int32_t k = 0; k < x->chunks; k++) {
        ok &= x->ok[k];
        if (isnan(x->mn[k][0])) continue;
        for (int a = 0; a < 3; a++) {
            mn[a] = first || x->mn[k][a] < mn[a] ? x->mn[k][a] : mn[a];
            mx[a] = first || x->mx[k][a] > mx[a] ? x->mx[k][a] : mx[a];
        }
        first = false;
    }
    return ok;
}

bool nbi_grid_scan_parallel(const nbGrid *g, const nbiBuildIn *in, double mn[3], double mx[3])
{
    nbiBuildCtx x;
    x.in = in;
    x.g = NULL;
    x.chunks = g->tasks.workers < NBI_MAX_CHUNKS ? g->tasks.workers : NBI_MAX_CHUNKS;
    nbi_run_chunks(g, nbi_scan_task, x.chunks, &x);
    return nbi_combine_boxes(&x, mn, mx);
}

int32_t nbi_grid_build_chunks(const nbGrid *g)
{
    return g->tasks.workers < NBI_MAX_CHUNKS ? g->tasks.workers : NBI_MAX_CHUNKS;
}

// Pass 2 per chunk: cells and the chunk's counts.
static void nbi_count_task(int32_t k0, int32_t k1, int32_t worker, void *vctx)
{
    (void)worker;
    const nbiBuildCtx *x = (const nbiBuildCtx *)vctx;
    const nbiBuildIn *in = x->in;
    nbGrid *g = x->g;
    const int32_t ncells = g->ncells;
    int32_t *cell_of = (int32_t *)g->cell_of.ptr;
    const int64_t e0 = g->ext[0], e01 = g->ext[0] * g->ext[1];
    const nbiView wv = nbi_grid_wrap_view(g);
    for (int32_t k = k0; k < k1; k++) {
        int32_t *h = nbi_row(x, k);
        memset(h, 0, (size_t)ncells * sizeof(int32_t));
        const int32_t a = nbi_cut(in->n, x->chunks, k), b = nbi_cut(in->n, x->chunks, k + 1);
#if defined(__SSE2__)
        if (!g->wrapped && in->step == (size_t)in->dim && nbi_cells_fit_i32(g->lo, g->hi)) {
            nbi_count_packed(in->data + (size_t)a * in->step, b - a, in->dim, &g->cm, g->lo, g->ext,
                             cell_of + a, h, 0);
            continue;
        }
#endif
        for (int32_t i = a; i < b; i++) {
            const double *q = in->data + (size_t)i * in->step;
            int64_t c;
            if (g->wrapped) {
                c = nbi_grid_wrapped_cell(g, &wv, q);
            } else {
                c = (nbi_cell_i(&g->cm, q[0]) - g->lo[0]) +
                    e0 * (nbi_cell_i(&g->cm, q[1]) - g->lo[1]);
                if (in->dim == 3) c += e01 * (nbi_cell_i(&g->cm, q[2]) - g->lo[2]);
            }
            cell_of[i] = (int32_t)c;
            h[c]++;
        }
    }
}

// Pass 3a per range of cells: each chunk's offset within the cell, and in start[c + 1] the
// points of the range's cells up to c (a prefix sum within the range; the range's total in
// base[r + 1] until the caller sums those up).
static void nbi_offsets_task(int32_t r0, int32_t r1, int32_t worker, void *vctx)
{
    (void)worker;
    nbiBuildCtx *x = (nbiBuildCtx *)vctx;
    const int32_t ncells = x->units;
    int32_t *start = x->ends;
    for (int32_t r = r0; r < r1; r++) {
        const int32_t c0 = nbi_cut(ncells, x->chunks, r), c1 = nbi_cut(ncells, x->chunks, r + 1);
        int32_t run = 0;
        for (int32_t c = c0; c < c1; c++) {
            for (int32_t k = 0; k < x->chunks; k++) {
                int32_t *h = nbi_row(x, k) + c;
                const int32_t t = *h;
                *h = run;
                run += t;
            }
            start[c + 1] = run;
        }
        x->base[r + 1] = run;
    }
}

// Pass 3b per range of cells: start[c + 1] becomes cell c's end, and the offsets positions.
static void nbi_positions_task(int32_t r0, int32_t r1, int32_t worker, void *vctx)
{
    (void)worker;
    const nbiBuildCtx *x = (const nbiBuildCtx *)vctx;
    const int32_t ncells = x->units;
    int32_t *start = x->ends;
    for (int32_t r = r0; r < r1; r++) {
        const int32_t c0 = nbi_cut(ncells, x->chunks, r), c1 = nbi_cut(ncells, x->chunks, r + 1);
        const int32_t base = x->base[r];
        for (int32_t c = c0; c < c1; c++) start[c + 1] += base;
        for (int32_t k = 0; k < x->chunks; k++) {
            int32_t *h = nbi_row(x, k);
            for (int32_t c = c0; c < c1; c++) h[c] += base;
        }
    }
}

// Pass 4a per chunk: the scatter of indices, in input order within the chunk.
static void nbi_scatter_task(int32_t k0, int32_t k1, int32_t worker, void *vctx)
{
    (void)worker;
    const nbiBuildCtx *x = (const nbiBuildCtx *)vctx;
    const nbiBuildIn *in = x->in;
    nbGrid *g = x->g;
    const int32_t *cell_of = (const int32_t *)g->cell_of.ptr;
    int32_t *idx = (int32_t *)g->idx.ptr;
    for (int32_t k = k0; k < k1; k++) {
        const int32_t a = nbi_cut(in->n, x->chunks, k), b = nbi_cut(in->n, x->chunks, k + 1);
        nbi_grid_scatter(cell_of, nbi_row(x, k), a, b, idx);
    }
}

// Pass 4b per range of positions: coordinates (and filter bits) gathered in position order.
static void nbi_gather_task(int32_t r0, int32_t r1, int32_t worker, void *vctx)
{
    (void)worker;
    const nbiBuildCtx *x = (const nbiBuildCtx *)vctx;
    const nbiBuildIn *in = x->in;
    const nbGrid *g = x->g;
    const int32_t a = nbi_cut(in->n, x->chunks, r0), b = nbi_cut(in->n, x->chunks, r1);
    nbi_grid_gather(g, in, a, b);
}

#if defined(__SSE2__)
// The blocked build (grid.c, "large builds"): passes A and B per chunk of points, C per
// run of blocks, chunk k's run using scratch area k.
typedef struct nbiBlocksCtx {
    const nbiBuildIn *in;
    nbGrid *g;
    nbiBlocks b;
    bool deal; // pass B (else A) in nbi_blocks_points_task
} nbiBlocksCtx;

// Pass A or B per chunk of points.
static void nbi_blocks_points_task(int32_t k0, int32_t k1, int32_t worker, void *vctx)
{
    (void)worker;
    const nbiBlocksCtx *x = (const nbiBlocksCtx *)vctx;
    for (int32_t k = k0; k < k1; k++) {
        const int32_t i0 = nbi_cut(x->in->n, x->b.chunks, k);
        const int32_t i1 = nbi_cut(x->in->n, x->b.chunks, k + 1);
        if (x->deal)
            nbi_blocks_deal(x->g, x->in->data, &x->b, k, i0, i1);
        else
            nbi_blocks_count(x->g, x->in->data, &x->b, k, i0, i1);
    }
}

static void nbi_blocks_sort_task(int32_t k0, int32_t k1, int32_t worker, void *vctx)
{
    (void)worker;
    const nbiBlocksCtx *x = (const nbiBlocksCtx *)vctx;
    for (int32_t k = k0; k < k1; k++) {
        const int32_t j0 = nbi_cut(x->b.nblocks, x->b.chunks, k);
        const int32_t j1 = nbi_cut(x->b.nblocks, x->b.chunks, k + 1);
        nbi_blocks_sort(x->g, &x->b, j0, j1, k);
        nbi_grid_gather_bits(x->g, x->in, x->b.first[j0], x->b.first[j1]);
    }
}

// False when a block is too crowded (then only hist has changed).
static bool nbi_grid_build_blocked_parallel(nbGrid *g, const nbiBuildIn *in)
{
    nbiBlocksCtx x = {in, g, nbi_blocks_plan(g, in->n, nbi_grid_build_chunks(g)), false};
    nbi_run_chunks(g, nbi_blocks_points_task, x.b.chunks, &x);
    if (!nbi_blocks_offsets(&x.b)) return false;
    x.deal = true;
    nbi_run_chunks(g, nbi_blocks_points_task, x.b.chunks, &x);
    nbi_run_chunks(g, nbi_blocks_sort_task, x.b.chunks, &x);
    g->cells_kept = false;
    return true;
}
#endif

static void nbi_build_positions(nbiBuildCtx *x);

void nbi_grid_build_parallel(nbGrid *g, const nbiBuildIn *in, bool blocked)
{
#if defined(__SSE2__)
    if (blocked && nbi_grid_build_blocked_parallel(g, in)) return;
#else
    (void)blocked;
#endif
    nbiBuildCtx x;
    x.in = in;
    x.g = g;
    x.chunks = nbi_grid_build_chunks(g);
    x.stride = g->ncells;
    x.skip = 0;
    x.units = g->ncells;
    x.ends = (int32_t *)g->start.ptr;
    nbi_run_chunks(g, nbi_count_task, x.chunks, &x);
    nbi_build_positions(&x);
}

// The rows' counts become each chunk's first position in each unit (ranges of units, then the
// ranges' bases), and x->ends[u + 1] unit u's end.
static void nbi_unit_positions(nbiBuildCtx *x)
{
    nbi_run_chunks(x->g, nbi_offsets_task, x->chunks, x);
    x->base[0] = 0;
    for (int32_t r = 0; r < x->chunks; r++) x->base[r + 1] += x->base[r];
    nbi_run_chunks(x->g, nbi_positions_task, x->chunks, x);
    x->ends[0] = 0;
}

// Passes 3 and 4 once every chunk's row holds its counts.
static void nbi_build_positions(nbiBuildCtx *x)
{
    nbGrid *g = x->g;
    int32_t *start = (int32_t *)g->start.ptr;
    nbi_unit_positions(x);
    start[g->ncells + 1] = start[g->ncells];
    // start[c + 1] is now cell c's end, so start[c] is cell c's first position.
    nbi_run_chunks(g, nbi_scatter_task, x->chunks, x);
    nbi_run_chunks(g, nbi_gather_task, x->chunks, x);
}

#if defined(__SSE2__)
// A rebuild's rows: ncells + 2 counts each, cell c's at c + 2 (nbi_scan_count's).
static void nbi_rebuild_ctx(nbiBuildCtx *x, nbGrid *g, const nbiBuildIn *in)
{
    x->in = in;
    x->g = g;
    x->chunks = nbi_grid_build_chunks(g);
    x->stride = g->ncells + 2;
    x->skip = 2;
    x->units = g->ncells;
    x->ends = (int32_t *)g->start.ptr;
}

static void nbi_rescan_task(int32_t k0, int32_t k1, int32_t worker, void *vctx)
{
    (void)worker;
    nbiBuildCtx *x = (nbiBuildCtx *)vctx;
    const nbiBuildIn *in = x->in;
    nbGrid *g = x->g;
    int32_t *cell_of = (int32_t *)g->cell_of.ptr;
    for (int32_t k = k0; k < k1; k++) {
        int32_t *h = nbi_row(x, k) - x->skip;
        memset(h, 0, (size_t)x->stride * sizeof(int32_t));
        const int32_t a = nbi_cut(in->n, x->chunks, k), b = nbi_cut(in->n, x->chunks, k + 1);
        x->ok[k] = true;
        if (b > a)
            x->ok[k] = nbi_scan_count(g, in->data + (size_t)a * in->step, b - a, cell_of + a, h,
                                      x->mn[k], x->mx[k]);
        else
            x->mn[k][0] = (double)NAN; // empty chunk: skipped when combined
    }
}

bool nbi_grid_rescan_parallel(nbGrid *g, const nbiBuildIn *in, double mn[3], double mx[3])
{
    nbiBuildCtx x;
    nbi_rebuild_ctx(&x, g, in);
    nbi_run_chunks(g, nbi_rescan_task, x.chunks, &x);
    return nbi_combine_boxes(&x, mn, mx);
}

void nbi_grid_rebuild_parallel(nbGrid *g, const nbiBuildIn *in)
{
    nbiBuildCtx x;
    nbi_rebuild_ctx(&x, g, in);
    nbi_build_positions(&x);
}
#endif

// ---- the ranked build (grid.c, "ranked cells") ----
//
// As the dense build, over words (64 box cells) instead of cells: each chunk of points counts
// its points per word into its row of hist (chunks x (words + 2), word w at w + 2), the rows
// become each chunk's first position in each word, and each chunk scatters through its row.
// Then the words are cut into ranges of about equal point counts: each range counts its
// occupied cells, the ranges' first cell numbers are summed from those, and each range sorts
// and numbers its words from its own (the ranges' ends are read before any range writes ranks
// over the words' first positions). The gather runs per range of positions.

typedef struct nbiRankedCtx {
    nbiBuildCtx b;
    const uint64_t *at;
    int64_t w[NBI_MAX_CHUNKS + 1];     // range r: words [w[r], w[r + 1])
    int32_t end[NBI_MAX_CHUNKS];       // range r's last position + 1
    int32_t cells[NBI_MAX_CHUNKS + 1]; // cells in range r, then the cells before it
} nbiRankedCtx;

static void nbi_ranked_count_task(int32_t k0, int32_t k1, int32_t worker, void *vctx)
{
    (void)worker;
    const nbiBuildCtx *x = (const nbiBuildCtx *)vctx;
    for (int32_t k = k0; k < k1; k++) {
        int32_t *h = nbi_row(x, k) - x->skip;
        memset(h, 0, (size_t)x->stride * sizeof(int32_t));
        const int32_t a = nbi_cut(x->in->n, x->chunks, k), b = nbi_cut(x->in->n, x->chunks, k + 1);
        nbi_ranked_count(x->g, x->in, a, b, h);
    }
}

static void nbi_ranked_scatter_task(int32_t k0, int32_t k1, int32_t worker, void *vctx)
{
    (void)worker;
    const nbiRankedCtx *x = (const nbiRankedCtx *)vctx;
    const nbiBuildCtx *b = &x->b;
    for (int32_t k = k0; k < k1; k++) {
        const int32_t i0 = nbi_cut(b->in->n, b->chunks, k),
                      i1 = nbi_cut(b->in->n, b->chunks, k + 1);
        nbi_ranked_scatter((const int32_t *)b->g->cell_of.ptr, nbi_row(b, k), i0, i1,
                           (uint64_t *)x->at);
    }
}

static void nbi_ranked_cells_count_task(int32_t r0, int32_t r1, int32_t worker, void *vctx)
{
    (void)worker;
    nbiRankedCtx *x = (nbiRankedCtx *)vctx;
    for (int32_t r = r0; r < r1; r++)
        x->cells[r + 1] = nbi_ranked_count_cells(x->b.ends, x->w[r], x->w[r + 1], x->at);
}

static void nbi_ranked_cells_task(int32_t r0, int32_t r1, int32_t worker, void *vctx)
{
    (void)worker;
    nbiRankedCtx *x = (nbiRankedCtx *)vctx;
    for (int32_t r = r0; r < r1; r++)
        nbi_ranked_cells(x->b.g, x->b.ends, x->w[r], x->w[r + 1], x->end[r], x->cells[r], x->at);
}

void nbi_grid_build_ranked_parallel(nbGrid *g, const nbiBuildIn *in)
{
    nbiRankedCtx x;
    const int64_t nwords = nbi_ranked_nwords(g);
    const int32_t n = in->n;
    int32_t *first = (int32_t *)g->occ_rank.ptr;
    x.b.in = in;
    x.b.g = g;
    x.b.chunks = nbi_grid_build_chunks(g);
    x.b.stride = (int32_t)nwords + 2;
    x.b.skip = 2;
    x.b.units = (int32_t)nwords;
    x.b.ends = first;
    x.at = (const uint64_t *)g->pts.ptr; // n entries of scratch until the gather
    NB_ASSERT((size_t)nwords + 2 <= g->occ_rank.cap && (size_t)nwords <= g->occ.cap &&
              g->hist.cap >= (size_t)x.b.chunks * (size_t)x.b.stride);
    nbi_run_chunks(g, nbi_ranked_count_task, x.b.chunks, &x.b);
    nbi_unit_positions(&x.b); // first[w] = word w's first position, first[nwords] = n
    nbi_run_chunks(g, nbi_ranked_scatter_task, x.b.chunks, &x);
    // Ranges of words cut at about equal point counts: range r starts at the first word whose
    // first position reaches r n / chunks.
    const int32_t ranges = x.b.chunks;
    x.w[0] = 0;
    x.w[ranges] = nwords;
    for (int32_t r = 1; r < ranges; r++)
        x.w[r] = nbi_first_at_least(first, x.w[r - 1], nwords, nbi_cut(n, ranges, r));
    for (int32_t r = 0; r < ranges; r++) x.end[r] = first[x.w[r + 1]];
    nbi_run_chunks(g, nbi_ranked_cells_count_task, ranges, &x);
    x.cells[0] = 0;
    for (int32_t r = 0; r < ranges; r++) x.cells[r + 1] += x.cells[r];
    nbi_run_chunks(g, nbi_ranked_cells_task, ranges, &x);
    g->ncells = x.cells[ranges];
    ((int32_t *)g->start.ptr)[g->ncells] = n;
    first[nwords] = g->ncells;
    first[nwords + 1] = n; // as the serial build leaves it
    nbi_run_chunks(g, nbi_gather_task, x.b.chunks, &x.b);
}

// ---- all pairs ----

typedef struct nbiPairsCtx {
    const nbGrid *g;
    nbiView v;
    double radius;
    int32_t chunks;
    int32_t unit[NBI_MAX_CHUNKS + 1]; // chunk k covers cells [unit[k], unit[k + 1])
    int mode;                         // NBI_SINK_COUNT or NBI_SINK_BUFFER
    nbPair *out;                      // the caller's buffer (buffer mode)
    int64_t cap;
    bool rerun[NBI_MAX_CHUNKS];  // only these chunks run (buffer mode, second round)
    bool direct[NBI_MAX_CHUNKS]; // written straight into the caller's buffer (buffer mode)
    int64_t found[NBI_MAX_CHUNKS];
    nbStatus status[NBI_MAX_CHUNKS];
    int64_t offset[NBI_MAX_CHUNKS];
} nbiPairsCtx;

static void nbi_pairs_task(int32_t k0, int32_t k1, int32_t worker, void *vctx)
{
    (void)worker;
    nbiPairsCtx *x = (nbiPairsCtx *)vctx;
    nbGrid *g = (nbGrid *)x->g; // only its scratch, claimed by this call
    for (int32_t k = k0; k < k1; k++) {
        if (!x->rerun[k]) continue;
        nbiPairSink s;
        if (x->mode == NBI_SINK_COUNT)
            nbi_pair_sink_init(&s, NBI_SINK_COUNT, NULL, 0, NULL, NULL);
        else // (a buffered call's second round: the scratch chunks that overflowed)
            nbi_pair_sink_init(&s, NBI_SINK_BUFFER, (nbPair *)g->scratch[k].ptr,
                               (int64_t)g->scratch[k].cap, NULL, NULL);
        x->status[k] = nbi_walk_pairs(&x->v, x->radius, x->unit[k], x->unit[k + 1], &s);
        x->found[k] = s.found;
    }
}

#if NBI_HAS_ATOMICS
// The first round of a buffered call: lane 0 is the front, the others the back (see the top).
typedef struct nbiLanes {
    nbiPairsCtx *x;
    atomic_flag claimed[NBI_MAX_CHUNKS];
    atomic_int back; // the next chunk from the back is back - 1
} nbiLanes;

// Chunk k into the sink (the front's place in the caller's buffer, or scratch k).
static void nbi_pairs_chunk(nbiPairsCtx *x, int32_t k, nbPair *to, int64_t cap)
{
    nbiPairSink s;
    nbi_pair_sink_init(&s, NBI_SINK_BUFFER, to, cap, NULL, NULL);
    x->status[k] = nbi_walk_pairs(&x->v, x->radius, x->unit[k], x->unit[k + 1], &s);
    x->found[k] = s.found;
}

static void nbi_lanes_task(int32_t l0, int32_t l1, int32_t worker, void *vctx)
{
    (void)worker;
    nbiLanes *ln = (nbiLanes *)vctx;
    nbiPairsCtx *x = ln->x;
    nbGrid *g = (nbGrid *)x->g; // only its scratch, claimed by this call
    for (int32_t lane = l0; lane < l1; lane++) {
        if (lane == 0) { // the front: in order, each chunk behind the last
            int64_t at = 0;
            for (int32_t k = 0; k < x->chunks; k++) {
                if (atomic_flag_test_and_set_explicit(&ln->claimed[k], memory_order_relaxed)) break;
                x->direct[k] = true;
                const int64_t room = x->cap > at ? x->cap - at : 0;
                nbi_pairs_chunk(x, k, room > 0 ? x->out + at : NULL, room);
                at += x->found[k];
            }
            continue;
        }
        for (;;) { // a back lane
            const int32_t k = atomic_fetch_sub_explicit(&ln->back, 1, memory_order_relaxed) - 1;
            if (k < 0 || atomic_flag_test_and_set_explicit(&ln->claimed[k], memory_order_relaxed))
                break;
            x->direct[k] = false;
            nbi_pairs_chunk(x, k, (nbPair *)g->scratch[k].ptr, (int64_t)g->scratch[k].cap);
        }
    }
}
#endif

// Copies each scratch chunk into the caller's buffer behind the chunks before it.
static void nbi_copy_task(int32_t k0, int32_t k1, int32_t worker, void *vctx)
{
    (void)worker;
    const nbiPairsCtx *x = (const nbiPairsCtx *)vctx;
    for (int32_t k = k0; k < k1; k++) {
        if (x->direct[k]) continue;
        const int64_t at = x->offset[k];
        int64_t m = x->found[k];
        if (at >= x->cap) continue;
        if (m > x->cap - at) m = x->cap - at;
        if (m > 0) memcpy(x->out + at, x->g->scratch[k].ptr, (size_t)m * sizeof(nbPair));
    }
}

void nbi_grid_cell_chunks(const nbGrid *g, int32_t chunks, int32_t *unit)
{
    const int32_t *start = (const int32_t *)g->start.ptr;
    const int32_t ncells = nb_grid_pair_units(g);
    unit[0] = 0;
    for (int32_t k = 1; k < chunks; k++)
        unit[k] = (int32_t)nbi_first_at_least(start, unit[k - 1], ncells, nbi_cut(g->n, chunks, k));
    unit[chunks] = ncells;
}

static bool nbi_grid_claim_scratch(const nbGrid *g)
{
#if NBI_HAS_ATOMICS
    nbGrid *m = (nbGrid *)g;
    return !atomic_flag_test_and_set_explicit(&m->scratch_busy, memory_order_acquire);
#else
    (void)g;
    return false;
#endif
}

static void nbi_grid_release_scratch(const nbGrid *g)
{
#if NBI_HAS_ATOMICS
    nbGrid *m = (nbGrid *)g;
    atomic_flag_clear_explicit(&m->scratch_busy, memory_order_release);
#else
    (void)g;
#endif
}

nbStatus nbi_grid_pairs_parallel(const nbGrid *g, double radius, int mode, nbPair *out, int64_t cap,
                                 int64_t *found, bool *done)
{
    *done = false;
    nbiPairsCtx ctx, *x = &ctx;
    memset(x, 0, sizeof *x);
    x->g = g;
    x->v = nbi_grid_view(g);
    x->radius = radius;
    x->chunks = 4 * g->tasks.workers < NBI_MAX_CHUNKS ? 4 * g->tasks.workers : NBI_MAX_CHUNKS;
    x->mode = mode;
    x->out = out;
    x->cap = cap;
    nbi_grid_cell_chunks(g, x->chunks, x->unit);
    for (int32_t k = 0; k < x->chunks; k++) x->rerun[k] = true;
    const bool buffered = mode == NBI_SINK_BUFFER;
    if (buffered && !nbi_grid_claim_scratch(g)) return NB_OK; // taken: run serially
#if NBI_HAS_ATOMICS
    if (buffered) {
        nbiLanes ln;
        ln.x = x;
        for (int32_t k = 0; k < x->chunks; k++) atomic_flag_clear(&ln.claimed[k]);
        atomic_init(&ln.back, x->chunks);
        const int32_t lanes = g->tasks.workers < x->chunks ? g->tasks.workers : x->chunks;
        nbi_run_chunks(g, nbi_lanes_task, lanes, &ln);
    } else
#endif
        nbi_run_chunks(g, nbi_pairs_task, x->chunks, x);
    nbStatus st = NB_OK;
    for (int32_t k = 0; k < x->chunks && st == NB_OK; k++) st = x->status[k];
    if (st == NB_OK && buffered) {
        // Grow the scratch of every scratch chunk that overflowed it, then run those again.
        nbGrid *m = (nbGrid *)g;
        bool again = false, grown = true;
        for (int32_t k = 0; k < x->chunks; k++) {
            x->rerun[k] = !x->direct[k] && x->found[k] > (int64_t)m->scratch[k].cap;
            if (!x->rerun[k]) continue;
            again = true;
            nbiBuf next;
            if (!nbi_buf_prepare(&m->alloc, &m->scratch[k], &next, (size_t)x->found[k],
                                 sizeof(nbPair))) {
                grown = false;
                break;
            }
            nbi_buf_commit(&m->alloc, &m->scratch[k], &next, sizeof(nbPair));
        }
        if (!grown) { // no memory for the scratch: the serial path needs none
            nbi_grid_release_scratch(g);
            return NB_OK;
        }
        if (again) nbi_run_chunks(g, nbi_pairs_task, x->chunks, x);
        for (int32_t k = 0; k < x->chunks && st == NB_OK; k++) st = x->status[k];
    }
    int64_t total = 0;
    for (int32_t k = 0; k < x->chunks; k++) {
        x->offset[k] = total;
        total += x->found[k];
    }
    if (st == NB_OK && buffered) nbi_run_chunks(g, nbi_copy_task, x->chunks, x);
    if (buffered) nbi_grid_release_scratch(g);
    if (st != NB_OK) return st;
    *found = total;
    *done = true;
    return NB_OK;
}
