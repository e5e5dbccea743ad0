// SPDX-License-Identifier: MIT
// The spatial hash (include/nearby/hash.h): items by handle in an unbounded world, kept by cell
// so that the shared walkers answer every query from a cell-sorted view.
//
// Layout. Items live in an arena of positions (coordinates, the item's slot, its filter bits),
// grouped by cell: cell c owns the block [start[c], start[c] + 2^cls[c]) and its items fill
// [start[c], end[c]). That is exactly the view's "cells with slack" (view.h), so pairs, cross
// pairs, radius, box and kNN need no code of their own here. Handles come from the handle pool;
// a slot's pool value is the item's position, and per slot we keep its cell and user value.
// Occupied cells are found through the cell table (coordinates -> cell id). Cell ids are reused
// through a free list; a free id is an empty cell (start == end) the walkers step over.
//
// Blocks are powers of two. A full cell moves to a block twice as large (its items are copied,
// their pool values updated: amortised O(1) per insert); the old block, and the block of a cell
// that empties, go onto a free list per size, and new blocks come from those lists before the
// arena's end. So in a steady state (agents wandering, cells emptying and filling) the arena
// stops growing and nothing allocates; positions never move except when a cell's block does.
//
// Moves. Within its cell an item's coordinates are rewritten in place: nothing shared changes.
// To another cell: the item leaves its block (the cell's last item takes its position) and is
// appended to the new cell's block. Everything that can allocate is prepared first
// (nbi_hash_room), so a failure leaves the hash exactly as it was.
//
// Bounds. The view needs a box of cells covering every occupied cell and a bound on |coordinate|.
// Both only grow (a superset keeps every walker exact, just prunes a little less) and are reset
// when the hash empties.
//
// Invariants (nb_hash_validate): the pool's own; count == live handles == items in cells; for a
// live cell: 0 < end - start <= 2^cls, its block inside [0, top), the table maps its key to it,
// every position in it holds a live slot whose pool value is that position, whose cell is c and
// whose coordinates map to the cell's key; the table holds exactly the live cells; free cell ids
// are empty and chained; live blocks plus free blocks cover [0, top) exactly (by size);
// nfiltered counts the items with bits other than NB_FILTER_ALL; the bounds cover every item.
#include <nearby/hash.h>

#include "handle_pool.h"
#include "view.h"

#include <string.h>

// At most 2^28 items, so that 4 positions an item (what reserve sets aside) fit int32 positions.
enum { NBI_HASH_CLASSES = 31, NBI_HASH_MAX_ITEMS = 1 << 28 };

struct nbHash {
    nbAllocator alloc;
    int32_t dim;
    nbiCellMath cm;
    int32_t count;
    int32_t nfiltered; // items whose bits are not all ones: 0 lets queries skip the filter

    nbiPool pool; // handles; a slot's value is its item's position
    nbiBuf cell;  // int32_t per slot: the item's cell

    // Per position, so that what a query reports (handle, user value) sits next to what it
    // tests (coordinates, filter bits), block by block, rather than behind the item's slot.
    nbiBuf pts;                           // double, dim per position
    nbiBuf idx;                           // int32_t per position: the slot of the item there
    nbiBuf cat, mask;                     // uint32_t per position
    nbiBuf hit;                           // nbHit per position: the item's handle and user value
    nbiBuf posid;                         // int32_t: p at every position p (results are positions)
    int32_t top;                          // positions [0, top) belong to blocks, live or free
    int32_t free_block[NBI_HASH_CLASSES]; // free blocks per size class, chained through idx
    int64_t free_positions;               // positions in free blocks

    nbiBuf start, end; // int32_t per cell id
    nbiBuf cls;        // int8_t per cell id: log2 of its block; -1 for a free id
    nbiBuf keys;       // int64_t, 3 per cell id (a free id keeps its successor in keys[3c])
    int32_t ncells;    // ids ever used
    int32_t live_cells;
    int32_t free_cell; // first free id, -1 when none
    nbiCellTable table;

    double max_abs;
    int64_t lo[3], hi[3];
};

// ---- typed access ----

#define NBI_ARR(h, buf, type) ((type *)(h)->buf.ptr)

static nbiView nbi_hash_view(const nbHash *h)
{
    nbiView v;
    memset(&v, 0, sizeof v);
    v.dim = h->dim;
    v.n = h->count;
    v.pts = (const double *)h->pts.ptr;
    v.idx = (const int32_t *)h->posid.ptr; // results name positions (see nbi_hash_hit)
    v.cat = h->nfiltered > 0 ? (const uint32_t *)h->cat.ptr : NULL;
    v.mask = h->nfiltered > 0 ? (const uint32_t *)h->mask.ptr : NULL;
    v.start = (const int32_t *)h->start.ptr;
    v.end = (const int32_t *)h->end.ptr;
    v.ncells = h->count > 0 ? h->ncells : 0;
    v.cm = h->cm;
    v.max_abs = h->max_abs;
    for (int a = 0; a < 3; a++) { // an empty hash has no box (its bounds are reset)
        v.lo[a] = h->count > 0 ? h->lo[a] : 0;
        v.hi[a] = h->count > 0 ? h->hi[a] : 0;
        v.ext[a] = v.hi[a] - v.lo[a] + 1;
    }
    v.table = &h->table;
    v.cell_keys = (const int64_t *)h->keys.ptr;
    return v;
}

// The item at position p as a result (the walkers report positions: the view's idx is posid).
static nbHashHit nbi_hash_hit(const nbHash *h, int32_t p)
{
    nbHashHit hit;
    hit = NBI_ARR(h, hit, const nbHit)[p];
    return hit;
}

// The cell of a point: NB_ERR_NOT_FINITE or NB_ERR_OUT_OF_RANGE (beyond +-2^62) when it has none.
static nbStatus nbi_hash_key(const nbHash *h, const double *pos, int64_t key[3])
{
    for (int a = 0; a < h->dim; a++)
        if (!isfinite(pos[a])) return NB_ERR_NOT_FINITE;
    key[2] = 0;
    for (int a = 0; a < h->dim; a++) {
        const double c = nbi_cell_f(&h->cm, pos[a]);
        if (!(fabs(c) < NBI_CELL_LIMIT)) return NB_ERR_OUT_OF_RANGE;
        key[a] = (int64_t)c;
    }
    return NB_OK;
}

static bool nbi_bits_all(nbFilter f)
{
    return f.category == 0xFFFFFFFFu && f.mask == 0xFFFFFFFFu;
}

// ---- storage ----

// Every buffer the hash owns, with its element size and what it is sized by, in one table so
// that growing, checking and freeing them cannot miss one. The cell table's storage grows apart.
enum { NBI_PER_SLOT, NBI_PER_POSITION, NBI_PER_CELL_ID };
enum { NBI_HASH_BUFS = 11 };

static void nbi_hash_bufs(nbHash *h, nbiBuf *buf[NBI_HASH_BUFS], size_t elem[NBI_HASH_BUFS],
                          int kind[NBI_HASH_BUFS])
{
    nbiBuf *b[NBI_HASH_BUFS] = {&h->cell,  &h->pts,   &h->idx, &h->cat, &h->mask, &h->hit,
                                &h->posid, &h->start, &h->end, &h->cls, &h->keys};
    const size_t e[NBI_HASH_BUFS] = {sizeof(int32_t),    sizeof(double) * (size_t)h->dim,
                                     sizeof(int32_t),    sizeof(uint32_t),
                                     sizeof(uint32_t),   sizeof(nbHit),
                                     sizeof(int32_t),    sizeof(int32_t),
                                     sizeof(int32_t),    sizeof(int8_t),
                                     sizeof(int64_t) * 3};
    const int k[NBI_HASH_BUFS] = {NBI_PER_SLOT,     NBI_PER_POSITION, NBI_PER_POSITION,
                                  NBI_PER_POSITION, NBI_PER_POSITION, NBI_PER_POSITION,
                                  NBI_PER_POSITION, NBI_PER_CELL_ID,  NBI_PER_CELL_ID,
                                  NBI_PER_CELL_ID,  NBI_PER_CELL_ID};
    for (int i = 0; i < NBI_HASH_BUFS; i++) {
        buf[i] = b[i];
        elem[i] = e[i];
        kind[i] = k[i];
    }
}

// What a change needs room for: items (slots), cells (ids and table entries), arena positions.
typedef struct nbiHashNeed {
    int32_t items, cells;
    int64_t positions;
} nbiHashNeed;

// Makes room for `need` more, all or nothing: every buffer is prepared before any is replaced,
// and the table, which rehashes as it grows, grows only once the others are ready. Afterwards
// the change cannot fail. Contents move along with grown buffers (positions never change).
static nbStatus nbi_hash_room(nbHash *h, nbiHashNeed need)
{
    const int64_t items = (int64_t)h->count + need.items;
    if (items > NBI_HASH_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    const int64_t ids = h->free_cell >= 0 && need.cells <= 1 ? h->ncells : h->ncells + need.cells;
    const int64_t top = (int64_t)h->top + need.positions;
    if (top > INT32_MAX || ids > INT32_MAX) return NB_ERR_OUT_OF_RANGE;
    nbiBuf *cur[NBI_HASH_BUFS];
    size_t elem[NBI_HASH_BUFS];
    int kind[NBI_HASH_BUFS];
    nbi_hash_bufs(h, cur, elem, kind);
    // The common case, every frame: there is room already. (Each buffer is checked on its own:
    // a growth retried at the exact size can leave siblings with different capacities.)
    const int64_t cells = (int64_t)h->live_cells + need.cells;
    bool room = nbi_pool_room(&h->pool) >= need.items && h->table.bits > 0 &&
                cells <= ((int64_t)1 << (h->table.bits - 1));
    const size_t size_now[3] = {h->pool.slots.cap, (size_t)top, (size_t)ids};
    for (int b = 0; b < NBI_HASH_BUFS && room; b++) room = size_now[kind[b]] <= cur[b]->cap;
    if (room) return NB_OK;
    nbiPoolPrep prep;
    nbStatus st = nbi_pool_prepare(&h->pool, need.items, &prep);
    if (st != NB_OK) return st;
    const size_t size[3] = {prep.next.cap, (size_t)top, (size_t)ids};
    nbiBuf next[NBI_HASH_BUFS];
    for (int b = 0; b < NBI_HASH_BUFS; b++) {
        if (!nbi_buf_prepare(&h->alloc, cur[b], &next[b], size[kind[b]], elem[b])) {
            for (int f = 0; f < b; f++) nbi_buf_abandon(&h->alloc, cur[f], &next[f], elem[f]);
            nbi_pool_abandon(&h->pool, &prep);
            return NB_ERR_OUT_OF_MEMORY;
        }
    }
    if (!nbi_ctab_grow(&h->table, &h->alloc, (size_t)h->live_cells + (size_t)need.cells)) {
        for (int f = 0; f < NBI_HASH_BUFS; f++)
            nbi_buf_abandon(&h->alloc, cur[f], &next[f], elem[f]);
        nbi_pool_abandon(&h->pool, &prep);
        return NB_ERR_OUT_OF_MEMORY;
    }
    nbi_pool_commit(&h->pool, &prep);
    const size_t had = h->posid.cap;
    for (int b = 0; b < NBI_HASH_BUFS; b++) {
        if (next[b].ptr != cur[b]->ptr && cur[b]->ptr != NULL)
            memcpy(next[b].ptr, cur[b]->ptr, cur[b]->cap * elem[b]);
        nbi_buf_commit(&h->alloc, cur[b], &next[b], elem[b]);
    }
    int32_t *posid = NBI_ARR(h, posid, int32_t);
    for (size_t p = had; p < h->posid.cap; p++) posid[p] = (int32_t)p;
    return NB_OK;
}

// Positions a new block of class k needs from the arena's end (0 when its free list has one).
static int64_t nbi_block_need(const nbHash *h, int k)
{
    return h->free_block[k] >= 0 ? 0 : (int64_t)1 << k;
}

// Takes a block of class k (room already made).
static int32_t nbi_block_take(nbHash *h, int k)
{
    int32_t b = h->free_block[k];
    if (b >= 0) {
        h->free_block[k] = NBI_ARR(h, idx, int32_t)[b];
        h->free_positions -= (int64_t)1 << k;
        return b;
    }
    b = h->top;
    h->top += 1 << k;
    return b;
}

static void nbi_block_give(nbHash *h, int32_t b, int k)
{
    NBI_ARR(h, idx, int32_t)[b] = h->free_block[k];
    h->free_block[k] = b;
    h->free_positions += (int64_t)1 << k;
}

// Copies the item at position `from` to position `to` and tells its slot.
static void nbi_item_copy(nbHash *h, int32_t from, int32_t to)
{
    const size_t d = (size_t)h->dim;
    double *pts = NBI_ARR(h, pts, double);
    int32_t *idx = NBI_ARR(h, idx, int32_t);
    memcpy(pts + (size_t)to * d, pts + (size_t)from * d, d * sizeof(double));
    idx[to] = idx[from];
    NBI_ARR(h, cat, uint32_t)[to] = NBI_ARR(h, cat, uint32_t)[from];
    NBI_ARR(h, mask, uint32_t)[to] = NBI_ARR(h, mask, uint32_t)[from];
    NBI_ARR(h, hit, nbHit)[to] = NBI_ARR(h, hit, nbHit)[from];
    nbi_pool_set_slot_value(&h->pool, idx[to], to);
}

// The room placing one item into the cell at `key` needs: a new cell and its first block, or a
// larger block when the cell is full.
static nbiHashNeed nbi_place_need(const nbHash *h, const int64_t key[3], int32_t items)
{
    nbiHashNeed need = {items, 0, 0};
    const int32_t c = nbi_ctab_find(&h->table, key[0], key[1], key[2]);
    if (c < 0) {
        need.cells = 1;
        need.positions = nbi_block_need(h, 0);
    } else {
        const int k = NBI_ARR(h, cls, const int8_t)[c];
        const int32_t n = NBI_ARR(h, end, const int32_t)[c] - NBI_ARR(h, start, const int32_t)[c];
        if (n == 1 << k) need.positions = nbi_block_need(h, k + 1);
    }
    return need;
}

// The cell at `key`, created (with an empty block of one) when absent. Room already made.
static int32_t nbi_cell_get(nbHash *h, const int64_t key[3])
{
    int32_t c = nbi_ctab_find(&h->table, key[0], key[1], key[2]);
    if (c >= 0) return c;
    int64_t *keys = NBI_ARR(h, keys, int64_t);
    if (h->free_cell >= 0) {
        c = h->free_cell;
        h->free_cell = (int32_t)keys[(size_t)c * 3];
    } else {
        c = h->ncells++;
    }
    bool inserted;
    nbi_ctab_insert(&h->table, key[0], key[1], key[2], c, &inserted);
    NB_ASSERT(inserted);
    memcpy(keys + (size_t)c * 3, key, 3 * sizeof(int64_t));
    const int32_t b = nbi_block_take(h, 0);
    NBI_ARR(h, start, int32_t)[c] = NBI_ARR(h, end, int32_t)[c] = b;
    NBI_ARR(h, cls, int8_t)[c] = 0;
    h->live_cells++;
    for (int a = 0; a < 3; a++) {
        h->lo[a] = key[a] < h->lo[a] ? key[a] : h->lo[a];
        h->hi[a] = key[a] > h->hi[a] ? key[a] : h->hi[a];
    }
    return c;
}

// Appends the item of `slot` to cell c (growing its block when full; room already made) and
// returns its position.
static int32_t nbi_cell_append(nbHash *h, int32_t c, int32_t slot)
{
    int32_t *start = NBI_ARR(h, start, int32_t), *end = NBI_ARR(h, end, int32_t);
    int8_t *cls = NBI_ARR(h, cls, int8_t);
    const int32_t n = end[c] - start[c];
    if (n == 1 << cls[c]) { // full: move to a block twice as large
        const int32_t b = nbi_block_take(h, cls[c] + 1);
        for (int32_t t = 0; t < n; t++) nbi_item_copy(h, start[c] + t, b + t);
        nbi_block_give(h, start[c], cls[c]);
        start[c] = b;
        end[c] = b + n;
        cls[c]++;
    }
    const int32_t p = end[c]++;
    NBI_ARR(h, idx, int32_t)[p] = slot;
    NBI_ARR(h, cell, int32_t)[slot] = c;
    nbi_pool_set_slot_value(&h->pool, slot, p);
    return p;
}

// Takes the item at position p out of cell c: the cell's last item fills its place. An emptied
// cell gives back its block, its table entry and its id.
static void nbi_cell_take_out(nbHash *h, int32_t c, int32_t p)
{
    int32_t *start = NBI_ARR(h, start, int32_t), *end = NBI_ARR(h, end, int32_t);
    const int32_t last = --end[c];
    if (p != last) nbi_item_copy(h, last, p);
    if (end[c] > start[c]) return;
    int8_t *cls = NBI_ARR(h, cls, int8_t);
    int64_t *keys = NBI_ARR(h, keys, int64_t);
    nbi_block_give(h, start[c], cls[c]);
    const bool removed = nbi_ctab_remove(&h->table, keys[(size_t)c * 3], keys[(size_t)c * 3 + 1],
                                         keys[(size_t)c * 3 + 2]);
    NB_ASSERT(removed);
    (void)removed;
    start[c] = end[c] = 0;
    cls[c] = -1;
    keys[(size_t)c * 3] = h->free_cell;
    h->free_cell = c;
    h->live_cells--;
}

static void nbi_bounds_reset(nbHash *h)
{
    h->max_abs = 0.0;
    for (int a = 0; a < 3; a++) {
        h->lo[a] = a < h->dim ? INT64_MAX : 0;
        h->hi[a] = a < h->dim ? INT64_MIN : 0;
    }
}

static void nbi_bounds_add(nbHash *h, const double *pos)
{
    for (int a = 0; a < h->dim; a++) {
        const double x = fabs(pos[a]);
        h->max_abs = x > h->max_abs ? x : h->max_abs;
    }
}

// ---- lifetime ----

nbStatus nb_hash_create(const nbHashDesc *desc, nbHash **out)
{
    if (out == NULL) return NB_ERR_NULL_ARG;
    *out = NULL;
    if (desc == NULL) return NB_ERR_NULL_ARG;
    nbAllocator a;
    if (!nbi_allocator(desc->allocator, &a)) return NB_ERR_NULL_ARG;
    if (!isfinite(desc->cell_size)) return NB_ERR_NOT_FINITE;
    if (desc->cell_size <= 0.0 || desc->capacity_hint < 0 ||
        desc->capacity_hint > NBI_HASH_MAX_ITEMS)
        return NB_ERR_OUT_OF_RANGE;
    if (desc->dim != 0 && desc->dim != 2 && desc->dim != 3) return NB_ERR_OUT_OF_RANGE;
    nbHash *h = (nbHash *)nbi_alloc(&a, 1, sizeof(nbHash));
    if (h == NULL) return NB_ERR_OUT_OF_MEMORY;
    memset(h, 0, sizeof *h);
    h->alloc = a;
    h->dim = desc->dim == 0 ? 2 : desc->dim;
    // The edge is nudged up (by 2^-30 of itself, for coordinates up to 2^20 cells from the
    // origin) when that saves a ring: the reach of a query at radius cell_size is a hair above
    // cell_size, and without it such a query would need two rings of cells instead of one.
    h->cm =
        nbi_cell_math(nbi_cell_snap(desc->cell_size, desc->cell_size, desc->cell_size * 0x1p20));
    nbi_pool_init(&h->pool, &a, NBI_HASH_MAX_ITEMS);
    h->free_cell = -1;
    for (int k = 0; k < NBI_HASH_CLASSES; k++) h->free_block[k] = -1;
    nbi_bounds_reset(h);
    if (desc->capacity_hint > 0) {
        const nbStatus st = nb_hash_reserve(h, desc->capacity_hint);
        if (st != NB_OK) {
            nb_hash_destroy(h);
            return st;
        }
    }
    *out = h;
    return NB_OK;
}

void nb_hash_destroy(nbHash *hash)
{
    if (hash == NULL) return;
    nbiBuf *buf[NBI_HASH_BUFS];
    size_t elem[NBI_HASH_BUFS];
    int kind[NBI_HASH_BUFS];
    nbi_hash_bufs(hash, buf, elem, kind);
    for (int i = 0; i < NBI_HASH_BUFS; i++)
        nbi_free(&hash->alloc, buf[i]->ptr, buf[i]->cap, elem[i]);
    nbi_ctab_free(&hash->table, &hash->alloc);
    nbi_pool_destroy(&hash->pool);
    nbAllocator a = hash->alloc;
    nbi_free(&a, hash, 1, sizeof(nbHash));
}

nbStatus nb_hash_reserve(nbHash *hash, int32_t items)
{
    if (hash == NULL) return NB_ERR_NULL_ARG;
    if (items < 0 || items > NBI_HASH_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    // Inserting until the hash holds `items` items takes at most 4 new positions an item: a cell
    // growing from B to hold c items takes blocks 2B, 4B, ... up to the first >= c, less than
    // 4c positions in all (the blocks it leaves go to the free lists, not back to the arena's
    // end), and a new cell takes a block of one. Up to `items` cells, ids and table entries.
    const int32_t more = items > hash->count ? items - hash->count : 0;
    const nbiHashNeed need = {more, items > hash->live_cells ? items - hash->live_cells : 0,
                              4 * (int64_t)items};
    return nbi_hash_room(hash, need);
}

void nb_hash_clear(nbHash *hash)
{
    if (hash == NULL) return;
    nbi_pool_clear(&hash->pool);
    if (hash->table.bits > 0) nbi_ctab_reset(&hash->table, hash->table.bits);
    hash->count = hash->nfiltered = 0;
    hash->top = 0;
    hash->free_positions = 0;
    for (int k = 0; k < NBI_HASH_CLASSES; k++) hash->free_block[k] = -1;
    hash->ncells = hash->live_cells = 0;
    hash->free_cell = -1;
    nbi_bounds_reset(hash);
}

int32_t nb_hash_count(const nbHash *hash)
{
    return hash == NULL ? 0 : hash->count;
}

size_t nb_hash_memory_bytes(const nbHash *hash)
{
    if (hash == NULL) return 0;
    nbiBuf *buf[NBI_HASH_BUFS];
    size_t elem[NBI_HASH_BUFS], bytes = sizeof(nbHash) + nbi_pool_memory_bytes(&hash->pool) +
                                        hash->table.buf.cap * sizeof(nbiCellSlot);
    int kind[NBI_HASH_BUFS];
    nbi_hash_bufs((nbHash *)hash, buf, elem, kind);
    for (int i = 0; i < NBI_HASH_BUFS; i++) bytes += buf[i]->cap * elem[i];
    return bytes;
}

double nb_hash_cell_size(const nbHash *hash)
{
    return hash == NULL ? 0.0 : hash->cm.cell;
}

// ---- items ----

static void nbi_item_write(nbHash *h, int32_t p, const double *pos, nbFilter f, uint64_t handle,
                           uint64_t user)
{
    memcpy(NBI_ARR(h, pts, double) + (size_t)p * (size_t)h->dim, pos,
           (size_t)h->dim * sizeof(double));
    NBI_ARR(h, cat, uint32_t)[p] = f.category;
    NBI_ARR(h, mask, uint32_t)[p] = f.mask;
    NBI_ARR(h, hit, nbHit)[p].handle.bits = handle;
    NBI_ARR(h, hit, nbHit)[p].user = user;
}

nbStatus nb_hash_insert(nbHash *hash, const double *pos, uint64_t user, nbFilter filter,
                        nbHandle *out)
{
    if (out != NULL) out->bits = 0;
    if (hash == NULL || pos == NULL || out == NULL) return NB_ERR_NULL_ARG;
    int64_t key[3];
    nbStatus st = nbi_hash_key(hash, pos, key);
    if (st != NB_OK) return st;
    st = nbi_hash_room(hash, nbi_place_need(hash, key, 1));
    if (st != NB_OK) return st;
    // Nothing can fail from here on.
    nbHandle h;
    st = nbi_pool_alloc(&hash->pool, 0, &h);
    NB_ASSERT(st == NB_OK);
    int32_t slot;
    nbi_pool_lookup(&hash->pool, h, &slot);
    const int32_t p = nbi_cell_append(hash, nbi_cell_get(hash, key), slot);
    nbi_item_write(hash, p, pos, filter, h.bits, user);
    nbi_bounds_add(hash, pos);
    hash->count++;
    hash->nfiltered += !nbi_bits_all(filter);
    *out = h;
    return NB_OK;
}

nbStatus nb_hash_move(nbHash *hash, nbHandle item, const double *pos)
{
    if (hash == NULL || pos == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    nbStatus st = nbi_pool_lookup(&hash->pool, item, &slot);
    if (st != NB_OK) return st;
    int64_t key[3];
    st = nbi_hash_key(hash, pos, key);
    if (st != NB_OK) return st;
    const int32_t c = NBI_ARR(hash, cell, int32_t)[slot];
    const int32_t p = nbi_pool_slot_value(&hash->pool, slot);
    const int64_t *k = NBI_ARR(hash, keys, const int64_t) + (size_t)c * 3;
    double *at = NBI_ARR(hash, pts, double) + (size_t)p * (size_t)hash->dim;
    if (k[0] == key[0] && k[1] == key[1] && k[2] == key[2]) { // same cell: in place
        memcpy(at, pos, (size_t)hash->dim * sizeof(double));
        nbi_bounds_add(hash, pos);
        return NB_OK;
    }
    st = nbi_hash_room(hash, nbi_place_need(hash, key, 0));
    if (st != NB_OK) return st;
    const nbFilter f = {NBI_ARR(hash, cat, uint32_t)[p], NBI_ARR(hash, mask, uint32_t)[p]};
    const uint64_t user = NBI_ARR(hash, hit, nbHit)[p].user;
    // Into the new cell first (the old one may be emptied and its id reused afterwards).
    const int32_t to = nbi_cell_get(hash, key);
    const int32_t q = nbi_cell_append(hash, to, slot);
    nbi_item_write(hash, q, pos, f, item.bits, user);
    nbi_cell_take_out(hash, c, p);
    nbi_bounds_add(hash, pos);
    return NB_OK;
}

nbStatus nb_hash_remove(nbHash *hash, nbHandle item)
{
    if (hash == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    const nbStatus st = nbi_pool_lookup(&hash->pool, item, &slot);
    if (st != NB_OK) return st;
    const int32_t p = nbi_pool_slot_value(&hash->pool, slot);
    hash->nfiltered -= !(NBI_ARR(hash, cat, uint32_t)[p] == 0xFFFFFFFFu &&
                         NBI_ARR(hash, mask, uint32_t)[p] == 0xFFFFFFFFu);
    nbi_cell_take_out(hash, NBI_ARR(hash, cell, int32_t)[slot], p);
    nbi_pool_free(&hash->pool, item, NULL);
    if (--hash->count == 0) nb_hash_clear(hash); // a fresh start: bounds, blocks, ids
    return NB_OK;
}

nbStatus nb_hash_get(const nbHash *hash, nbHandle item, double *pos, uint64_t *user,
                     nbFilter *filter)
{
    if (hash == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    const nbStatus st = nbi_pool_lookup(&hash->pool, item, &slot);
    if (st != NB_OK) return st;
    const int32_t p = nbi_pool_slot_value(&hash->pool, slot);
    if (pos != NULL)
        memcpy(pos, NBI_ARR(hash, pts, const double) + (size_t)p * (size_t)hash->dim,
               (size_t)hash->dim * sizeof(double));
    if (user != NULL) *user = NBI_ARR(hash, hit, const nbHit)[p].user;
    if (filter != NULL) {
        filter->category = NBI_ARR(hash, cat, const uint32_t)[p];
        filter->mask = NBI_ARR(hash, mask, const uint32_t)[p];
    }
    return NB_OK;
}

nbStatus nb_hash_set(nbHash *hash, nbHandle item, uint64_t user, nbFilter filter)
{
    if (hash == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    const nbStatus st = nbi_pool_lookup(&hash->pool, item, &slot);
    if (st != NB_OK) return st;
    const int32_t p = nbi_pool_slot_value(&hash->pool, slot);
    uint32_t *cat = NBI_ARR(hash, cat, uint32_t), *mask = NBI_ARR(hash, mask, uint32_t);
    hash->nfiltered += !nbi_bits_all(filter) - !(cat[p] == 0xFFFFFFFFu && mask[p] == 0xFFFFFFFFu);
    NBI_ARR(hash, hit, nbHit)[p].user = user;
    cat[p] = filter.category;
    mask[p] = filter.mask;
    return NB_OK;
}

nbStatus nb_hash_visit_all(const nbHash *hash, nbHashVisitFn *visit, void *user)
{
    if (hash == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    const int32_t *start = NBI_ARR(hash, start, const int32_t);
    const int32_t *end = NBI_ARR(hash, end, const int32_t);
    for (int32_t c = 0; c < hash->ncells; c++)
        for (int32_t p = start[c]; p < end[c]; p++)
            if (!visit(nbi_hash_hit(hash, p), user)) return NB_OK;
    return NB_OK;
}

// ---- queries: the walkers' slots turned into hits ----

// Collects hits into the caller's buffer (counting past its capacity) or hands them to its
// visitor; skips one position (the asker of a neighbours query) when `skip` >= 0.
typedef struct nbiHashHits {
    const nbHash *h;
    nbHashHit *out;
    int32_t cap, n, skip;
    nbHashVisitFn *fn;
    void *user;
} nbiHashHits;

static bool nbi_hash_on_hit(int32_t slot, void *ctx)
{
    nbiHashHits *x = (nbiHashHits *)ctx;
    if (slot == x->skip) return true;
    const nbHashHit hit = nbi_hash_hit(x->h, slot);
    if (x->fn != NULL) return x->fn(hit, x->user);
    if (x->n < x->cap) x->out[x->n] = hit;
    x->n++;
    return true;
}

// Runs a radius (center != NULL) or box query into hits; capacity < 0 is checked by the walker
// in its place in the order of checks.
static nbStatus nbi_hash_range(const nbHash *h, const double *center, double radius,
                               const double *lo, const double *hi, nbFilter f, nbiHashHits *x)
{
    const nbiView v = nbi_hash_view(h);
    nbiHitSink s;
    nbi_hit_sink_init(&s, NBI_SINK_VISIT, NULL, x->fn != NULL ? 0 : x->cap, nbi_hash_on_hit, x);
    return center != NULL ? nbi_walk_radius(&v, center, radius, f, &s)
                          : nbi_walk_box(&v, lo, hi, f, &s);
}

static nbStatus nbi_hash_finish(nbStatus st, const nbiHashHits *x, int32_t *found)
{
    if (st != NB_OK) return st;
    *found = x->n;
    return x->n > x->cap ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

// A radius (center != NULL) or box query into the caller's buffer with no callback per hit: the
// walker writes slots into the front of the buffer, which are then widened in place into hits
// from the last to the first (a hit is wider than a slot, so each slot is read before anything
// overwrites it).
static nbStatus nbi_hash_range_buffer(const nbHash *h, const double *center, double radius,
                                      const double *lo, const double *hi, nbFilter f,
                                      nbHashHit *out, int32_t capacity, int32_t *found)
{
    const nbiView v = nbi_hash_view(h);
    nbiHitSink s;
    nbi_hit_sink_init(&s, NBI_SINK_BUFFER, (int32_t *)(void *)out, capacity, NULL, NULL);
    s.positions = true; // positions, not the view's idx (posid, the same numbers): one array less
    const nbStatus st = center != NULL ? nbi_walk_radius(&v, center, radius, f, &s)
                                       : nbi_walk_box(&v, lo, hi, f, &s);
    if (st != NB_OK) return st;
    unsigned char *bytes = (unsigned char *)out;
    for (int32_t t = (s.found < capacity ? s.found : capacity) - 1; t >= 0; t--) {
        int32_t slot;
        memcpy(&slot, bytes + (size_t)t * sizeof(int32_t), sizeof slot);
        const nbHashHit hit = nbi_hash_hit(h, slot);
        memcpy(bytes + (size_t)t * sizeof(nbHashHit), &hit, sizeof hit);
    }
    *found = s.found;
    return s.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

nbStatus nb_hash_query_radius(const nbHash *hash, const double *center, double radius,
                              nbFilter filter, nbHashHit *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (hash == NULL || center == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    return nbi_hash_range_buffer(hash, center, radius, NULL, NULL, filter, out, capacity, found);
}

nbStatus nb_hash_visit_radius(const nbHash *hash, const double *center, double radius,
                              nbFilter filter, nbHashVisitFn *visit, void *user)
{
    if (hash == NULL || center == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiHashHits x = {hash, NULL, 0, 0, -1, visit, user};
    return nbi_hash_range(hash, center, radius, NULL, NULL, filter, &x);
}

nbStatus nb_hash_query_box(const nbHash *hash, const double *lo, const double *hi, nbFilter filter,
                           nbHashHit *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (hash == NULL || lo == NULL || hi == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    return nbi_hash_range_buffer(hash, NULL, 0.0, lo, hi, filter, out, capacity, found);
}

nbStatus nb_hash_visit_box(const nbHash *hash, const double *lo, const double *hi, nbFilter filter,
                           nbHashVisitFn *visit, void *user)
{
    if (hash == NULL || lo == NULL || hi == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiHashHits x = {hash, NULL, 0, 0, -1, visit, user};
    return nbi_hash_range(hash, NULL, 0.0, lo, hi, filter, &x);
}

// Neighbours of a stored item: a radius query at its position that skips the item itself.
static nbStatus nbi_hash_neighbors(const nbHash *h, nbHandle item, double radius, nbFilter f,
                                   nbiHashHits *x)
{
    int32_t slot;
    const nbStatus st = nbi_pool_lookup(&h->pool, item, &slot);
    if (st != NB_OK) return st;
    const int32_t p = nbi_pool_slot_value(&h->pool, slot);
    x->skip = p; // results are positions
    return nbi_hash_range(h, NBI_ARR(h, pts, const double) + (size_t)p * (size_t)h->dim, radius,
                          NULL, NULL, f, x);
}

nbStatus nb_hash_query_neighbors(const nbHash *hash, nbHandle item, double radius, nbFilter filter,
                                 nbHashHit *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (hash == NULL || found == NULL || (out == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    nbiHashHits x = {hash, out, capacity, 0, -1, NULL, NULL};
    return nbi_hash_finish(nbi_hash_neighbors(hash, item, radius, filter, &x), &x, found);
}

nbStatus nb_hash_visit_neighbors(const nbHash *hash, nbHandle item, double radius, nbFilter filter,
                                 nbHashVisitFn *visit, void *user)
{
    if (hash == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiHashHits x = {hash, NULL, 0, 0, -1, visit, user};
    return nbi_hash_neighbors(hash, item, radius, filter, &x);
}

nbStatus nb_hash_knn(const nbHash *hash, const double *point, int32_t k, nbFilter filter,
                     nbHashNeighbor *out, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (hash == NULL || point == NULL || found == NULL || (out == NULL && k > 0))
        return NB_ERR_NULL_ARG;
    // The walker keeps its heap of (slot, dist2) in the caller's buffer, which is larger per
    // entry (sizeof(nbHashNeighbor) >= sizeof(nbNeighbor), both 8-aligned); the answers are
    // then widened in place from the last to the first, each read before it is overwritten.
    // Here the view names items by slot, so that equal distances are ordered by the lower slot
    // (insertion order on a fresh hash), not by where the items happen to be stored.
    nbiView v = nbi_hash_view(hash);
    v.idx = NBI_ARR(hash, idx, const int32_t);
    int32_t n = 0;
    const nbStatus st = nbi_walk_knn(&v, point, k, filter, (nbNeighbor *)(void *)out, &n);
    if (st != NB_OK) return st;
    unsigned char *bytes = (unsigned char *)out;
    for (int32_t i = n - 1; i >= 0; i--) {
        nbNeighbor nb;
        memcpy(&nb, bytes + (size_t)i * sizeof(nbNeighbor), sizeof nb);
        const nbHashNeighbor wide = {nbi_hash_hit(hash, nbi_pool_slot_value(&hash->pool, nb.index)),
                                     nb.dist2};
        memcpy(bytes + (size_t)i * sizeof(nbHashNeighbor), &wide, sizeof wide);
    }
    *found = n;
    return NB_OK;
}

// ---- pairs ----

// Pairs of slots turned into pairs of hits, into the caller's buffer or visitor.
typedef struct nbiHashPairs {
    const nbHash *h;
    nbHashPair *out;
    int64_t cap, n;
    nbHashPairFn *fn;
    void *user;
    bool stop;
    bool by_slot; // all pairs: `a` is the item in the lower slot (cross pairs keep their roles)
} nbiHashPairs;

// An unordered pair of positions as the documented (lower slot, higher slot).
static void nbi_pair_by_slot(const nbHash *h, int32_t *a, int32_t *b)
{
    const int32_t *idx = NBI_ARR(h, idx, const int32_t);
    if (idx[*a] > idx[*b]) {
        const int32_t t = *a;
        *a = *b;
        *b = t;
    }
}

static bool nbi_hash_on_pair(int32_t a, int32_t b, void *ctx)
{
    nbiHashPairs *x = (nbiHashPairs *)ctx;
    if (x->by_slot) nbi_pair_by_slot(x->h, &a, &b);
    const nbHashHit ha = nbi_hash_hit(x->h, a), hb = nbi_hash_hit(x->h, b);
    if (x->fn != NULL) {
        x->stop = !x->fn(ha, hb, x->user);
        return !x->stop;
    }
    if (x->out != NULL && x->n < x->cap) { // counting: no buffer, unbounded capacity
        x->out[x->n].a = ha;
        x->out[x->n].b = hb;
    }
    x->n++;
    return true;
}

static nbStatus nbi_hash_pairs_run(const nbHash *h, double radius, int64_t capacity,
                                   nbiHashPairs *x)
{
    const nbStatus st = nbi_check_pairs(radius, capacity);
    if (st != NB_OK) return st;
    const nbiView v = nbi_hash_view(h);
    nbiPairSink s;
    nbi_pair_sink_init(&s, NBI_SINK_VISIT, NULL, 0, nbi_hash_on_pair, x);
    return nbi_walk_pairs(&v, radius, 0, v.ncells, &s);
}

static nbStatus nbi_hash_pairs_finish(nbStatus st, const nbiHashPairs *x, int64_t *found)
{
    if (st != NB_OK) return st;
    *found = x->n;
    return x->n > x->cap ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

nbStatus nb_hash_pairs(const nbHash *hash, double radius, nbHashPair *out, int64_t capacity,
                       int64_t *found)
{
    if (found != NULL) *found = 0;
    if (hash == NULL || found == NULL || (out == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    const nbStatus st = nbi_check_pairs(radius, capacity);
    if (st != NB_OK) return st;
    // The kernels write (slot, slot) pairs straight into the front of the caller's buffer, as
    // for the grid (no callback per pair); each is then widened in place into an nbHashPair,
    // from the last to the first: pair t is read before anything overwrites it, since
    // sizeof(nbHashPair) > sizeof(nbPair) puts every later write at or after its own bytes.
    const nbiView v = nbi_hash_view(hash);
    nbiPairSink s;
    nbi_pair_sink_init(&s, NBI_SINK_BUFFER, (nbPair *)(void *)out, capacity, NULL, NULL);
    const nbStatus wst = nbi_walk_pairs(&v, radius, 0, v.ncells, &s);
    if (wst != NB_OK) return wst;
    unsigned char *bytes = (unsigned char *)out;
    for (int64_t t = (s.found < capacity ? s.found : capacity) - 1; t >= 0; t--) {
        nbPair p;
        memcpy(&p, bytes + (size_t)t * sizeof(nbPair), sizeof p);
        nbi_pair_by_slot(hash, &p.i, &p.j);
        const nbHashPair wide = {nbi_hash_hit(hash, p.i), nbi_hash_hit(hash, p.j)};
        memcpy(bytes + (size_t)t * sizeof(nbHashPair), &wide, sizeof wide);
    }
    *found = s.found;
    return s.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

nbStatus nb_hash_count_pairs(const nbHash *hash, double radius, int64_t *count)
{
    if (count != NULL) *count = 0;
    if (hash == NULL || count == NULL) return NB_ERR_NULL_ARG;
    const nbStatus st = nbi_check_pairs(radius, 0);
    if (st != NB_OK) return st;
    const nbiView v = nbi_hash_view(hash);
    nbiPairSink s;
    nbi_pair_sink_init(&s, NBI_SINK_COUNT, NULL, 0, NULL, NULL);
    const nbStatus wst = nbi_walk_pairs(&v, radius, 0, v.ncells, &s);
    if (wst == NB_OK) *count = s.found;
    return wst;
}

nbStatus nb_hash_visit_pairs(const nbHash *hash, double radius, nbHashPairFn *visit, void *user)
{
    if (hash == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiHashPairs x = {hash, NULL, 0, 0, visit, user, false, true};
    return nbi_hash_pairs_run(hash, radius, 0, &x);
}

// Cross pairs by mask: a radius search from each item of set A for the items of set B.
typedef struct nbiCrossAsk {
    nbiHashPairs *pairs;
    int32_t a; // the asking slot
} nbiCrossAsk;

static bool nbi_hash_on_cross(int32_t b, void *ctx)
{
    const nbiCrossAsk *q = (const nbiCrossAsk *)ctx;
    if (b == q->a) return true;
    return nbi_hash_on_pair(q->a, b, q->pairs);
}

static nbStatus nbi_hash_cross_run(const nbHash *h, double radius, uint32_t mask_a, uint32_t mask_b,
                                   int64_t capacity, nbiHashPairs *x)
{
    nbStatus st = nbi_check_pairs(radius, capacity);
    if (st != NB_OK) return st;
    if (h->count == 0 || mask_a == 0 || mask_b == 0) return NB_OK;
    // The same cost guard as all pairs: each search may look at up to (2k+1)^d cells.
    const double rings = nbi_rings(nbi_reach(radius), h->cm.cell, h->max_abs);
    const double side = 2.0 * rings + 1.0, cells = (double)h->live_cells;
    const double stencil = h->dim == 3 ? side * side * side : side * side;
    if ((double)h->count * (stencil < cells ? stencil : cells) > 64.0 * h->count + 0x1p26)
        return NB_ERR_OUT_OF_RANGE;
    const nbiView v = nbi_hash_view(h);
    const nbFilter to_b = {0xFFFFFFFFu, mask_b}; // B: cat & mask_b, own mask not 0
    const uint32_t *cat = NBI_ARR(h, cat, const uint32_t), *mask = NBI_ARR(h, mask, const uint32_t);
    const double *pts = NBI_ARR(h, pts, const double);
    for (int32_t c = 0; c < h->ncells && !x->stop; c++) {
        for (int32_t p = v.start[c]; p < v.end[c] && !x->stop; p++) {
            if ((cat[p] & mask_a) == 0 || mask[p] == 0) continue;
            nbiCrossAsk ask = {x, p};
            nbiHitSink s;
            nbi_hit_sink_init(&s, NBI_SINK_VISIT, NULL, 0, nbi_hash_on_cross, &ask);
            st = nbi_walk_radius(&v, pts + (size_t)p * (size_t)h->dim, radius, to_b, &s);
            if (st != NB_OK) return st;
        }
    }
    return NB_OK;
}

nbStatus nb_hash_cross_pairs(const nbHash *hash, double radius, uint32_t mask_a, uint32_t mask_b,
                             nbHashPair *out, int64_t capacity, int64_t *found)
{
    if (found != NULL) *found = 0;
    if (hash == NULL || found == NULL || (out == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    nbiHashPairs x = {hash, out, capacity, 0, NULL, NULL, false, false};
    return nbi_hash_pairs_finish(nbi_hash_cross_run(hash, radius, mask_a, mask_b, capacity, &x), &x,
                                 found);
}

nbStatus nb_hash_count_cross_pairs(const nbHash *hash, double radius, uint32_t mask_a,
                                   uint32_t mask_b, int64_t *count)
{
    if (count != NULL) *count = 0;
    if (hash == NULL || count == NULL) return NB_ERR_NULL_ARG;
    nbiHashPairs x = {hash, NULL, INT64_MAX, 0, NULL, NULL, false, false};
    return nbi_hash_pairs_finish(nbi_hash_cross_run(hash, radius, mask_a, mask_b, 0, &x), &x,
                                 count);
}

nbStatus nb_hash_visit_cross_pairs(const nbHash *hash, double radius, uint32_t mask_a,
                                   uint32_t mask_b, nbHashPairFn *visit, void *user)
{
    if (hash == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiHashPairs x = {hash, NULL, 0, 0, visit, user, false, false};
    return nbi_hash_cross_run(hash, radius, mask_a, mask_b, 0, &x);
}

// ---- validate ----

nbStatus nb_hash_validate(const nbHash *hash)
{
    if (hash == NULL) return NB_ERR_NULL_ARG;
    const nbHash *h = hash;
    NBI_CHECK(h->dim == 2 || h->dim == 3);
    NBI_CHECK(isfinite(h->cm.cell) && h->cm.cell > 0.0);
    NBI_CHECK(nbi_pool_validate(&h->pool) == NB_OK);
    NBI_CHECK(nbi_pool_count(&h->pool) == h->count && h->count >= 0);
    NBI_CHECK(nbi_ctab_validate(&h->table) && h->table.count == h->live_cells);
    NBI_CHECK(h->ncells >= h->live_cells && (size_t)h->ncells <= h->start.cap);
    NBI_CHECK(h->top >= 0 && (size_t)h->top <= h->idx.cap);
    NBI_CHECK((size_t)h->pool.used <= h->cell.cap && (size_t)h->top <= h->posid.cap);
    NBI_CHECK((size_t)h->top <= h->hit.cap);
    const int32_t *start = NBI_ARR(h, start, const int32_t), *end = NBI_ARR(h, end, const int32_t);
    const int8_t *cls = NBI_ARR(h, cls, const int8_t);
    const int64_t *keys = NBI_ARR(h, keys, const int64_t);
    const int32_t *idx = NBI_ARR(h, idx, const int32_t), *cell = NBI_ARR(h, cell, const int32_t);
    const double *pts = NBI_ARR(h, pts, const double);
    const uint32_t *cat = NBI_ARR(h, cat, const uint32_t), *mask = NBI_ARR(h, mask, const uint32_t);
    int64_t items = 0, block_positions = 0, nfiltered = 0;
    int32_t live = 0;
    for (int32_t c = 0; c < h->ncells; c++) {
        if (cls[c] < 0) {
            NBI_CHECK(start[c] == 0 && end[c] == 0);
            continue;
        }
        live++;
        NBI_CHECK(cls[c] < NBI_HASH_CLASSES);
        const int64_t size = (int64_t)1 << cls[c];
        NBI_CHECK(start[c] >= 0 && start[c] + size <= h->top);
        NBI_CHECK(end[c] > start[c] && end[c] - start[c] <= size);
        const int64_t *k = keys + (size_t)c * 3;
        NBI_CHECK(nbi_ctab_find(&h->table, k[0], k[1], k[2]) == c);
        for (int a = 0; a < 3; a++) NBI_CHECK(k[a] >= h->lo[a] && k[a] <= h->hi[a]);
        block_positions += size;
        for (int32_t p = start[c]; p < end[c]; p++) {
            const int32_t s = idx[p];
            NBI_CHECK(s >= 0 && s < h->pool.used);
            NBI_CHECK(nbi_pool_handle_of(&h->pool, s).bits ==
                      NBI_ARR(h, hit, const nbHit)[p].handle.bits);
            NBI_CHECK(NBI_ARR(h, posid, const int32_t)[p] == p);
            NBI_CHECK(nbi_pool_slot_value(&h->pool, s) == p && cell[s] == c);
            for (int a = 0; a < h->dim; a++) {
                const double x = pts[(size_t)p * (size_t)h->dim + (size_t)a];
                NBI_CHECK(isfinite(x) && fabs(x) <= h->max_abs);
                NBI_CHECK(nbi_cell_f(&h->cm, x) == (double)k[a]);
            }
            nfiltered += !(cat[p] == 0xFFFFFFFFu && mask[p] == 0xFFFFFFFFu);
            items++;
        }
    }
    NBI_CHECK(live == h->live_cells && items == h->count && nfiltered == h->nfiltered);
    // free ids: a chain of exactly the ids not live
    int32_t free_ids = 0;
    for (int32_t c = h->free_cell; c >= 0; c = (int32_t)keys[(size_t)c * 3]) {
        NBI_CHECK(c < h->ncells && cls[c] < 0 && ++free_ids <= h->ncells);
    }
    NBI_CHECK(free_ids == h->ncells - h->live_cells);
    // free blocks: inside the arena, and with the live blocks they account for all of it
    int64_t free_positions = 0;
    for (int k = 0; k < NBI_HASH_CLASSES; k++) {
        int64_t steps = 0;
        for (int32_t b = h->free_block[k]; b >= 0; b = idx[b]) {
            NBI_CHECK(b + ((int64_t)1 << k) <= h->top && ++steps <= h->top);
            free_positions += (int64_t)1 << k;
        }
    }
    NBI_CHECK(free_positions == h->free_positions);
    NBI_CHECK(block_positions + free_positions == h->top);
    return NB_OK;
}
