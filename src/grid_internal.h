// SPDX-License-Identifier: MIT
// The dense grid's layout, shared by its build (grid.c) and its public queries
// (grid_queries.c), which hand the walkers a view (view.h). Never installed.
#ifndef NEARBY_GRID_INTERNAL_H
#define NEARBY_GRID_INTERNAL_H

#include <nearby/grid.h>

#include "knn_index.h"
#include "view.h"

#include <string.h>

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
#define NBI_HAS_ATOMICS 1
#else
#define NBI_HAS_ATOMICS 0
#endif

// The hashed layout's occupancy filter: 2^NBI_SEEN_PER_SLOT_LOG2 bits a table slot (its table
// at most three quarters full: 10-20 bits a cell).
enum { NBI_SEEN_PER_SLOT_LOG2 = 3 };

// Most chunks a parallel call cuts its work into (grid_parallel.c).
enum { NBI_MAX_CHUNKS = 64 };

// A counting-sort grid. Points are copied, sorted by cell, into `pts` (interleaved, dim doubles
// each) with their input indices in `idx`; cell c holds positions [start[c], start[c + 1]).
//
// Dense mode: the cells are the whole box lo..hi of the points' cells, numbered row-major with x
// fastest (view.h). Used while the box has at most about 4 cells per point.
// Ranked mode (a box of up to 64 cells a point): only occupied cells are numbered, in the box's
// row-major order; occ holds a bit per box cell and occ_rank the cells before each 64-bit word
// (view.h), and cell_slot[c] holds cell c's box number.
// Hashed mode (larger boxes): only occupied cells are numbered, in Z order (ascending Morton
// code of the cell's offset from lo, shifted right by code_shift; view.h), each cell's code in
// cell_code; the cell table maps a cell's coordinates to its number, and cell_slot[c] names the
// table slot holding cell c's coordinates (the count-and-renumber build). The sorted builds fill
// their (coded) table on first use (table_lazy) and index the codes for all pairs instead
// (cell_dir, cell_zseen: view.h).
// Filtered (the last build passed categories or masks): cat / mask hold each position's bits.
//
// Invariants (nb_grid_validate checks them all):
// - 0 <= n, dim in {2, 3}, cell finite and > 0, cm matches cell.
// - start[0] == 0, start is non-decreasing, start[ncells] == n.
// - within a cell, idx is strictly ascending; when cells_kept, cell_of[idx[p]] is the cell
//   holding position p, which makes idx a permutation of 0..n-1.
// - pts[p] maps to its cell's coordinates under the cell math, within lo..hi.
// - hashed: every cell is non-empty, the table (once filled) holds exactly the ncells cells and
//   finds each at its own coordinates, cell_slot points back at it, and cell_code[c] is cell c's
//   code, the codes non-decreasing; the sorted builds' directory and code filter hold each cell;
//   with low codes (0 < code_shift <= NBI_CODE_LOW_MAX), cell_code[ncells + c] is cell c's low
//   code (nbi_code_low), and (code, low code) strictly ascending.
// - ranked: every cell is non-empty, box numbers ascend, and occ / occ_rank hold exactly those
//   cells' bits and ranks.
// - max_abs >= |every stored coordinate|.
struct nbGrid {
    nbAllocator alloc;
    int32_t dim;
    double desc_cell; // 0 = derive from the build radius

    int32_t n;
    bool hashed;
    bool ranked;
    bool filtered;
    bool row_spans; // ranked: row_span holds the box's row spans (view.h)
    bool had_bits;  // some build passed categories or masks: their arrays follow the capacity
    nbiCellMath cm;
    double max_abs;
    int64_t lo[3], hi[3]; // the box of the cells (z = 0 in 2D): the occupied cells' box, or
                          // after a rebuild on the last build's cells, a cell wider at most
    int64_t ext[3];       // hi - lo + 1 per axis (the dense and ranked modes' dimensions)
    int32_t ncells;
    int32_t rebuild_pause; // builds left before the next try of the last build's cells
    int32_t hashed_cells;  // cells of the last hashed build (0: none yet): sizes the next table
    bool cells_kept;       // cell_of is filled (blocked, ranked and sorted hashed builds skip it)
    int32_t code_shift;    // hashed: the bits a cell's offsets drop in its code
    bool low_codes;        // hashed, code_shift > 0: cell_code[ncells + c] is cell c's low code
    int32_t seen_bits;     // hashed: the occupancy filter's bits, log2

    nbiBuf pts;       // double, n * dim
    nbiBuf idx;       // int32_t, n
    nbiBuf cell_of;   // int32_t, n: cell of input point i, when cells_kept (for validate)
    nbiBuf start;     // int32_t, ncells + 2 (the extra slot serves the counting pass)
    nbiBuf cell_slot; // uint32_t, ncells (hashed mode: table slots; ranked: box numbers)
    nbiBuf cell_code; // uint64_t, 2 x cells (hashed mode: the codes, then the build's sort's, or
                      // with 0 < code_shift <= NBI_CODE_LOW_MAX, the low codes from ncells on)
    nbiBuf cell_seen; // uint64_t (hashed mode: the occupancy filter, NBI_SEEN_PER_SLOT bits a
                      // table slot; view.h, nbi_view_may_hold)
    nbiBuf occ;       // uint64_t, box cells / 64 + 1 (ranked mode)
    nbiBuf occ_rank;  // int32_t, as many + 2 (the build counts words in it first)
    nbiBuf row_span;  // int32_t, 2 x (rows + blocks of rows) (ranked mode with row_spans)
    nbiBuf cat;       // uint32_t, n (filtered)
    nbiBuf mask;      // uint32_t, n (filtered)
    nbiCellTable table;
    nbiBuf cell_dir;   // int32_t: the sorted hashed builds' directory of codes (view.h)
    nbiBuf cell_zseen; // uint64_t: their code filter, as many bits as cell_seen (view.h)
    int32_t dir_bits, dir_shift;
    nbiCtabLazy table_lazy; // the sorted hashed builds' table, filled on first use (cell_table.h)

    // Periodic boxes (desc.period): `wrapped` when any axis has a period. wrap.period and
    // wrap.kper are set at create; wrap.m, wrap.c0 and wrap.pcm by each build. A wrapped grid
    // is dense or ranked, with lo = 0 and ext <= m (the occupied arc, view.h) on each periodic
    // axis, and every stored coordinate in [0, P) there.
    bool wrapped;
    nbiWrap wrap;
    // Parallel calls (grid_parallel.c): the caller's scheduler; a parallel build's per-chunk
    // cell counts (int32_t, chunks x (cells + 2)); the pair chunks' scratch (nbPair each, chunk 0
    // unused), claimed by one call at a time through scratch_busy.
    nbTasks tasks;
    nbiBuf hist;
    // The walkers' view of the grid, kept current by every call that changes it (create,
    // reserve, build): a query starts from it instead of building one.
    nbiView view;
    // The kNN index of the points (knn_index.h): built by the first kNN query after a build
    // (from a const grid, hence its atomic state), made stale by every call that refreshes
    // the view.
    nbiKnnLazy knn;
    nbiBuf scratch[NBI_MAX_CHUNKS];
#if NBI_HAS_ATOMICS
    atomic_flag scratch_busy;
#endif
};

// What a build reads: the caller's points as the build's passes take them.
typedef struct nbiBuildIn {
    const double *data;
    size_t step; // doubles from one point to the next
    int32_t n;
    int dim;
    const uint32_t *category, *mask; // NULL = all bits
    size_t cat_stride, mask_stride;  // bytes
} nbiBuildIn;

// Whether the grid runs its builds and pair calls on a scheduler.
static inline bool nbi_grid_parallel(const nbGrid *g)
{
    return g->tasks.parallel_for != NULL && g->tasks.workers > 1;
}

// Pass 1 over n points (grid.c): finite, bounding box. False if any is not finite.
bool nbi_grid_scan(const double *data, size_t step, int32_t n, int dim, double mn[3], double mx[3]);
// Every cell number of the box [lo, hi] fits a 32-bit lane (nbi_count_packed's condition).
bool nbi_cells_fit_i32(const int64_t lo[3], const int64_t hi[3]);
#if defined(__SSE2__)
// Pass 2 over n packed points (step = dim, not periodic, nbi_cells_fit_i32): cell_of[i], and
// counts[c >> shift] incremented for each point's cell c (shift 0 but in a ranked build).
void nbi_count_packed(const double *data, int32_t n, int dim, const nbiCellMath *cm,
                      const int64_t lo[3], const int64_t ext[3], int32_t *cell_of, int32_t *counts,
                      int shift);
// A rebuild's passes 1 and 2 in one over n packed points, under the grid's cell math and box:
// the points' box and finiteness (false if any coordinate is not finite), cell_of[i], and each
// cell c counted in counts[c + 2] (a cell outside the box as -1, in counts[1]).
bool nbi_scan_count(const nbGrid *g, const double *data, int32_t n, int32_t *cell_of,
                    int32_t *counts, double mn[3], double mx[3]);
#endif
// Pass 4 over points [a, b): idx[next[cell_of[i]]++] = i, in input order (next[c] is cell c's
// next free position).
void nbi_grid_scatter(const int32_t *cell_of, int32_t *next, int32_t a, int32_t b, int32_t *idx);
// Pass 4b over positions [p0, p1): each position's coordinates (and filter bits, when the
// build has them) from the caller's point idx[p].
void nbi_grid_gather(const nbGrid *g, const nbiBuildIn *in, int32_t p0, int32_t p1);
// Dense builds of at least this many packed points sort in two cache-sized passes
// (grid.c, "large builds"); tests lower it to run that path on small inputs.
extern int32_t nbi_blocked_min_points;
// Runs of at least this many keys take the wide digits of the two-word sort (grid.c,
// nbi_msd_sort2); tests lower it to run them on small inputs.
extern int32_t nbi_msd_wide_min;
// Runs of at least this many keys are counted in four tables and dealt through two cursors
// (grid.c, nbi_msd_level); tests lower it to run that path on small inputs.
extern int32_t nbi_msd_split_min;
#if defined(__SSE2__)
// A blocked build's tables, all in the hist buffer: per chunk of points a row of block counts
// (then that chunk's cursors), the blocks' first positions, and per run of blocks a scratch area.
typedef struct nbiBlocks {
    int shift;       // a block is 2^shift consecutive cells
    int32_t nblocks; // blocks of the grid's ncells
    int32_t chunks;  // rows and scratch areas
    int32_t *counts; // chunks x nblocks
    int32_t *first;  // nblocks + 1: block j holds positions [first[j], first[j + 1])
    int32_t *scratch;
    size_t area; // int32_t entries of one scratch area
} nbiBlocks;
// The hist entries a blocked build of n points in `chunks` chunks may need, whatever its cells.
uint64_t nbi_blocks_hist(int32_t n, int dim, int32_t chunks);
// The tables for a build of n points into the grid's ncells cells (hist already that large).
nbiBlocks nbi_blocks_plan(nbGrid *g, int32_t n, int32_t chunks);
// Pass A over points [i0, i1) of packed data: block counts into row k.
void nbi_blocks_count(const nbGrid *g, const double *data, const nbiBlocks *b, int32_t k,
                      int32_t i0, int32_t i1);
// The rows become cursors and the blocks' first positions; false when a block holds too many
// points for a scratch area (the build must then run in one pass).
bool nbi_blocks_offsets(const nbiBlocks *b);
// Pass B over points [i0, i1) through row k's cursors.
void nbi_blocks_deal(const nbGrid *g, const double *data, const nbiBlocks *b, int32_t k, int32_t i0,
                     int32_t i1);
// Pass C over blocks [j0, j1) with scratch area `area`; sets start for their cells.
void nbi_blocks_sort(nbGrid *g, const nbiBlocks *b, int32_t j0, int32_t j1, int32_t area);
#endif
// ---- the ranked build's passes (grid.c, "ranked cells"; run serially or per chunk) ----

// Words of the grid's box of cells: 64 cells each, one more for the box's end.
static inline int64_t nbi_ranked_nwords(const nbGrid *g)
{
    return ((g->ext[0] * g->ext[1] * g->ext[2]) >> 6) + 1;
}
// Pass 2 over points [i0, i1): cell_of[i] (the box number) and each point's word w counted in
// counts[w + 2].
void nbi_ranked_count(const nbGrid *g, const nbiBuildIn *in, int32_t i0, int32_t i1,
                      int32_t *counts);
// Pass 4 over points [i0, i1): each point i of cell k to the next free position p of word
// k >> 6 (next[k >> 6]++), in input order, as at[p] = i << 6 | (k & 63): its index and its bit in
// the word in one 8-byte store (one random write a point, as the dense scatter's).
void nbi_ranked_scatter(const int32_t *cell_of, int32_t *next, int32_t i0, int32_t i1,
                        uint64_t *at);
// The occupied cells of words [w0, w1), whose points are at positions [first[w], first[w + 1]).
int32_t nbi_ranked_count_cells(const int32_t *first, int64_t w0, int64_t w1, const uint64_t *at);
// Pass 5 over words [w0, w1): on entry first[w] is word w's first position, the last word ends
// at p_end, and at[] holds each word's points in input order. Sorts each word's points by cell,
// stably (a counting sort on the 64 bits), into idx; numbers the occupied cells from `id` on
// (start, cell_slot as box numbers); writes occ[w] and, over first[w], the cells before word w.
// Returns the next cell number.
int32_t nbi_ranked_cells(nbGrid *g, int32_t *first, int64_t w0, int64_t w1, int32_t p_end,
                         int32_t id, const uint64_t *at);
// Passes 2 to 5 and the gather of a ranked build on the scheduler (hist holding chunks x
// (words + 2)); sets ncells.
void nbi_grid_build_ranked_parallel(nbGrid *g, const nbiBuildIn *in);

// The filter bits of positions [p0, p1), from the caller's point idx[p] (no-op unfiltered).
void nbi_grid_gather_bits(const nbGrid *g, const nbiBuildIn *in, int32_t p0, int32_t p1);

// Runs fn over chunks [0, count) through the scheduler t (serially when t is NULL or has fewer
// than two workers).
void nbi_tasks_run(const nbTasks *t, nbTaskFn *fn, int32_t count, void *ctx);
// Cuts the grid's cells into `chunks` runs of about equal point counts: run k is cells
// [unit[k], unit[k + 1]) (unit holds chunks + 1 entries; empty runs possible).
void nbi_grid_cell_chunks(const nbGrid *g, int32_t chunks, int32_t *unit);

// The parallel passes (grid_parallel.c). Chunks a build cuts its points into.
int32_t nbi_grid_build_chunks(const nbGrid *g);
// Pass 1 on the scheduler.
bool nbi_grid_scan_parallel(const nbGrid *g, const nbiBuildIn *in, double mn[3], double mx[3]);
// Passes 2 to 4 of a dense build on the scheduler; the grid's box, cells and storage are set
// (with `blocked`, hist also for a blocked build: tried first).
void nbi_grid_build_parallel(nbGrid *g, const nbiBuildIn *in, bool blocked);
#if defined(__SSE2__)
// A rebuild (grid.c, nbi_grid_rebuild) on the scheduler, for packed points under the last
// build's cell math and box: first the points' box and finiteness with each chunk's cells
// counted (nbi_scan_count) into its row of hist, rows of ncells + 2 (hist must hold that); then,
// once the caller has checked the box, the rest of the build.
bool nbi_grid_rescan_parallel(nbGrid *g, const nbiBuildIn *in, double mn[3], double mx[3]);
void nbi_grid_rebuild_parallel(nbGrid *g, const nbiBuildIn *in);
#endif
// All pairs counted (NBI_SINK_COUNT) or written into out (NBI_SINK_BUFFER) on the scheduler.
// *done = false (and NB_OK) when the call must run serially instead: the scratch is held by
// another call or cannot grow.
nbStatus nbi_grid_pairs_parallel(const nbGrid *g, double radius, int mode, nbPair *out, int64_t cap,
                                 int64_t *found, bool *done);

// The grid's kNN index holder. Queries take the grid const; the holder is the one part they
// may change (its state is atomic, and the grid itself was never defined const).
static inline nbiKnnLazy *nbi_grid_knn_lazy(const nbGrid *g)
{
    return (nbiKnnLazy *)&g->knn;
}

// The grid as the walkers see it.
nbiView nbi_grid_view(const nbGrid *g);
// Brings grid->view up to date.
void nbi_grid_view_refresh(nbGrid *g);

// The cell math of a periodic grid's last layout, as a view of no points, for
// nbi_grid_wrapped_cell.
static inline nbiView nbi_grid_wrap_view(const nbGrid *g)
{
    nbiView v;
    memset(&v, 0, sizeof v);
    v.dim = g->dim;
    v.cm = g->cm;
    v.wrap = &g->wrap;
    return v;
}

// The dense cell number of point q in a periodic grid's layout (v from nbi_grid_wrap_view).
static inline int64_t nbi_grid_wrapped_cell(const nbGrid *g, const nbiView *v, const double *q)
{
    const int64_t e0 = g->ext[0], e01 = g->ext[0] * g->ext[1];
    int64_t c = (nbi_view_axis_cell(v, 0, q[0]) - g->lo[0]) +
                e0 * (nbi_view_axis_cell(v, 1, q[1]) - g->lo[1]);
    if (g->dim == 3) c += e01 * (nbi_view_axis_cell(v, 2, q[2]) - g->lo[2]);
    return c;
}

#endif
