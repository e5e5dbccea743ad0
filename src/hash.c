// SPDX-License-Identifier: MIT
// The spatial hash (include/nearby/hash.h): items by handle in an unbounded world, kept by cell
// so that the shared walkers answer every query from a cell-sorted view.
//
// Layout: one cell-sorted snapshot with slack. Items live in arrays of positions (coordinates,
// the item's slot, its filter bits, its handle and user value). Cell c owns the positions
// [start[c], start[c + 1]); its items fill [start[c], end[c]) and the rest is slack, whose
// coordinates are NaN: NaN fails every distance and box test without a branch, so the walkers
// may read a row of cells as one run, slack included, exactly as they read the dense grid's.
// Positions from start[ncells] to `cap` are the tail, free for the last cell.
//
// Cells are numbered in one of two ways (view.h):
// - dense: every cell of the box lo..hi, row-major, x fastest, when that box has at most
//   nbi_max_cells(count) cells (about 1.5 cells an item): a query reads 3 rows, no lookups;
// - hashed: occupied cells only, found through the cell table (coordinates -> cell number),
//   their coordinates in `keys`, for worlds too sparse or far-flung for a box. A cell that
//   empties stays (empty) until the next relayout drops it.
//
// Moves. Within its cell an item's coordinates are rewritten in place: nothing else changes.
// Whether it stays is read from its slot's cell_of and the new coordinates alone, so such a
// move reads the handle's slot and cell_of (side by side in time: both need only the handle)
// and writes the coordinates; it never waits for the old ones.
// To another cell: the item is appended at its new cell's end and the old cell's last item
// fills its place (the position left behind becomes slack, NaN). A full cell borrows a position
// from the nearest cell with slack (within NBI_HASH_REACH cells, or the tail): every cell in
// between hands its first item to its own end (or its last to the position before it), one
// copy per cell, so a borrow costs a few copies. A hashed cell's number says nothing about
// where it is, so a hashed cell with no slack within reach moves to the end of the numbering
// instead, its items into the tail (nbi_cell_renumber), where new cells take their positions
// too: a relayout keeps a tail for them. When no cell nearby has slack in a dense hash, an
// item leaves the dense box, or the tail or the hashed cell numbers run out, the hash is
// relaid out: every item placed by cell again, with fresh slack spread over the cells in
// proportion to their items, by an in-place permutation (nbi_relayout, O(items + cells)). A
// dense relayout made for an item while items arrive in order (each placement a repeat of the
// step before it: a lattice inserted in rows, columns or layers) plants the spare positions
// one a cell in the cells ahead of the fill instead (nbi_plant): such a fill relays out a few
// dozen times, not once a row or a point.
// Slack is about a quarter of the items, so relayouts are rare: the steady state of wandering
// agents allocates nothing and relays out seldom (nbi_hash_stats counts both).
//
// All or nothing: everything a call can allocate is prepared before anything changes
// (nbi_hash_room); a relayout allocates nothing itself. A failure leaves the hash as it was.
//
// Bounds. The view needs a box of cells covering every occupied cell (dense: the box itself;
// hashed: the union of its cells') and a bound on |coordinate|; both only grow until a
// relayout or clear recomputes or resets them (a superset keeps every walker exact).
//
// Invariants (nb_hash_validate): the pool's own; count == live handles == items in cells;
// 0 = start[0] <= start[c] <= end[c] <= start[c + 1], start[ncells] <= cap; every item
// position holds a live slot whose pool value is that position, whose cell_of is that cell,
// whose handle is the one stored there and whose coordinates map to the cell's key; every slack
// position has NaN coordinates and slot -1; posid[p] == p; dense: ncells is the box's size and the
// table is empty; hashed: the table maps the keys of cells 0 .. ncells - 1 to their numbers,
// all within lo..hi, except the empty numbers a renumbering left, whose key maps to a later one;
// live_cells counts the non-empty cells; nfiltered counts the items with bits other than
// NB_FILTER_ALL; max_abs bounds every item's coordinates; cell_of holds a slot for every pool slot;
// the cached view is the one nbi_hash_view_fill builds now.
#include <nearby/hash.h>

#include "handle_pool.h"
#include "hash_stats.h"
#include "knn_index.h"
#include "view.h"

#include <string.h>

// At most 2^28 items, so that positions (items plus slack) and cells fit int32.
enum { NBI_HASH_MAX_ITEMS = 1 << 28, NBI_HASH_REACH = 64, NBI_HASH_SCAN = 1024 };
// One cell in this many planted (nbi_plant) gets two spare positions.
enum { NBI_PLANT_EXTRA = 32 };

struct nbHash {
    nbAllocator alloc;
    int32_t dim;
    nbiCellMath cm;
    int32_t count;
    int32_t nfiltered; // items whose bits are not all ones: 0 lets queries skip the filter

    nbiPool pool;   // handles; a slot's value is its item's position
    nbiBuf cell_of; // int32_t per pool slot: the number of the cell a live slot's item is in

    // Per position, so that what a query reports (handle, user value) sits next to what it
    // tests (coordinates, filter bits), cell by cell.
    nbiBuf pts;       // double, dim per position; NaN in slack
    nbiBuf idx;       // int32_t: the slot of the item there, -1 in slack
    nbiBuf cat, mask; // uint32_t
    nbiBuf hit;       // nbHit: the item's handle and user value
    nbiBuf posid;     // int32_t: p at every position p (results are positions); relayout scratch
    int32_t cap;      // positions every one of them holds

    bool dense;
    int32_t ncells;      // dense: cells in the box; hashed: cell numbers in use
    int32_t live_cells;  // cells holding an item
    nbiBuf start, end;   // int32_t: ncells + 1 and ncells entries
    nbiBuf nstart, nend; // relayout scratch, the same capacity as start and end
    nbiBuf keys;         // hashed: int64_t, 3 per cell
    nbiCellTable table;  // hashed: the cells' keys -> their numbers
    int64_t lo[3], hi[3], ext[3];

    double max_abs;

    // The walkers' view of all of the above, kept current by every call that changes the hash
    // (nbi_hash_view_refresh), so that a query starts from it instead of building one.
    nbiView view;

    // The kNN index of the items, for far queries only (nb_hash_knn): built by far queries
    // once their walks' expected savings pay for it, stale after any change.
    nbiKnnLazy knn;

    int64_t relayouts, renumbers; // nbi_hash_stats
    int64_t borrows; // positions given to placed items since the last relayout (nbi_borrow)
    // The fill's trail (nbi_make_place): the last placement's cell and its step from the one
    // before, and the placements since the last relayout that repeated the step before them.
    int64_t last_key[3], last_step[3];
    int64_t repeats;
    // The axis and direction (+-1) of the last repeated step: the fill's lines (-1: none yet).
    int32_t line_axis, line_dir;
    bool planted;          // a relayout has planted (nbi_plant) since the hash was cleared
    int64_t plant_line[2]; // the slower coordinates of its line (nbi_plant), the slowest first
};

#define NBI_ARR(h, buf, type) ((type *)(h)->buf.ptr)

// Cells a dense box may have for n items.
static int64_t nbi_max_cells(int64_t n)
{
    return n + n / 2 + 1024;
}

// Slack a dense relayout spreads for n items (at least nbi_slack_min; more capacity is left as
// tail).
static int64_t nbi_slack_want(int64_t n)
{
    return n / 4 + 16;
}

// Hashed cell numbers (live and emptied) for n items before a relayout drops the empty ones:
// after one, at least n / 4 + 64 new cells can come before the next.
static int64_t nbi_hashed_max(int64_t n)
{
    return n + n / 4 + 64;
}

// A hashed hash turns dense again once its box has at most this many cells for n items: well
// inside nbi_max_cells, so that a world at the edge does not flip back and forth.
static int64_t nbi_dense_again(int64_t n)
{
    return nbi_max_cells(n) - nbi_max_cells(n) / 4;
}

static int64_t nbi_slack_min(int64_t n)
{
    return n / 8 + 16;
}

// Positions a relayout needs for n items. A hashed layout keeps a tail of at least
// nbi_slack_min(n) besides the slack it spreads: its new cells are numbered after the last one,
// so they take their positions from the tail (or from the few cells numbered just before them),
// never from the cells near them in space. Without a tail, the slack of the last cells lasted a
// few dozen new cells, and a wandering crowd with small cells relaid out every few moves.
static int64_t nbi_cap_min(int64_t n, bool dense)
{
    return n + nbi_slack_min(n) + (dense ? 0 : nbi_slack_min(n));
}

static int64_t nbi_cap_want(int64_t n, bool dense)
{
    return n + nbi_slack_want(n) + (dense ? 0 : nbi_slack_min(n));
}

// Writes the walkers' view of h into *v, field by field (a compound literal was measured to
// cost ~40 ns a query: the zeroing and then stores read back at another width).
static void nbi_hash_view_fill(const nbHash *h, nbiView *v)
{
    const bool any = h->count > 0, flt = h->nfiltered > 0;
    v->dim = h->dim;
    v->n = h->count;
    v->pts = (const double *)h->pts.ptr;
    v->idx = (const int32_t *)h->posid.ptr; // results name positions (see nbi_hash_hit)
    v->cat = flt ? (const uint32_t *)h->cat.ptr : NULL;
    v->mask = flt ? (const uint32_t *)h->mask.ptr : NULL;
    v->start = (const int32_t *)h->start.ptr;
    v->end = NULL; // rows are runs: slack is NaN and never matches
    v->ncells = any ? h->ncells : 0;
    v->cm = h->cm;
    v->max_abs = h->max_abs;
    for (int a = 0; a < 3; a++) {
        v->lo[a] = any ? h->lo[a] : 0;
        v->hi[a] = any ? h->hi[a] : 0;
        v->ext[a] = v->hi[a] - v->lo[a] + 1;
    }
    v->table = h->dense ? NULL : &h->table;
    v->cell_slot = NULL;
    v->cell_keys = h->dense ? NULL : (const int64_t *)h->keys.ptr;
    v->cell_code = NULL;
    v->code_shift = 0;
    v->cell_low = NULL;
    v->cell_seen = NULL;
    v->seen_bits = 0;
    v->cell_dir = NULL;
    v->cell_zseen = NULL;
    v->dir_bits = v->dir_shift = 0;
    v->occ = NULL;
    v->occ_rank = NULL;
    v->cell_box = NULL;
    v->wrap = NULL;
    v->row_span = NULL;
}

// Brings the cached view up to date: every public call that changes the hash ends here (a move
// within its cell changes only max_abs, which nbi_bounds_add keeps in step).
static void nbi_hash_view_refresh(nbHash *h)
{
    nbi_hash_view_fill(h, &h->view);
    nbi_knn_index_touch(&h->knn);
}

// A copy of the cached view, for a call that adjusts it (kNN) or runs long anyway (pairs).
static nbiView nbi_hash_view(const nbHash *h)
{
    return h->view;
}

// The item at position p as a result (the walkers report positions: the view's idx is posid).
static nbHit nbi_hash_hit(const nbHash *h, int32_t p)
{
    return NBI_ARR(h, hit, const nbHit)[p];
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

// ---- cells ----

// The number of the cell at `key`: -1 when it is outside the dense box or not a hashed cell.
static int32_t nbi_cell_find(const nbHash *h, const int64_t key[3])
{
    if (!h->dense) return nbi_ctab_find(&h->table, key[0], key[1], key[2]);
    if (h->ncells == 0) return -1;
    for (int a = 0; a < 3; a++)
        if (key[a] < h->lo[a] || key[a] > h->hi[a]) return -1;
    return (int32_t)((key[0] - h->lo[0]) +
                     h->ext[0] * ((key[1] - h->lo[1]) + h->ext[1] * (key[2] - h->lo[2])));
}

// Whether cell c is the cell at `key`. A move asks it of the item's cell (cell_of, which needs
// only the handle's slot), not of the item's old coordinates: one memory access fewer in turn
// before a move within its cell knows that it is one.
static bool nbi_in_cell(const nbHash *h, int32_t c, const int64_t key[3])
{
    if (h->dense) return nbi_cell_find(h, key) == c;
    const int64_t *k = NBI_ARR(h, keys, const int64_t) + (size_t)c * 3;
    return k[0] == key[0] && k[1] == key[1] && k[2] == key[2];
}

static void nbi_cell_key(const nbHash *h, int32_t c, int64_t key[3])
{
    if (!h->dense) {
        memcpy(key, NBI_ARR(h, keys, const int64_t) + (size_t)c * 3, 3 * sizeof(int64_t));
        return;
    }
    int64_t r = c;
    key[0] = h->lo[0] + r % h->ext[0];
    r /= h->ext[0];
    key[1] = h->lo[1] + r % h->ext[1];
    key[2] = h->lo[2] + r / h->ext[1];
}

// ---- storage ----

// The buffers of one position each, in one table so that growing, copying and freeing them
// cannot miss one.
enum { NBI_POS_BUFS = 6, NBI_CELL_BUFS = 4 };

static void nbi_pos_bufs(nbHash *h, nbiBuf *buf[NBI_POS_BUFS], size_t elem[NBI_POS_BUFS])
{
    nbiBuf *b[NBI_POS_BUFS] = {&h->pts, &h->idx, &h->cat, &h->mask, &h->hit, &h->posid};
    const size_t e[NBI_POS_BUFS] = {sizeof(double) * (size_t)h->dim,
                                    sizeof(int32_t),
                                    sizeof(uint32_t),
                                    sizeof(uint32_t),
                                    sizeof(nbHit),
                                    sizeof(int32_t)};
    for (int i = 0; i < NBI_POS_BUFS; i++) {
        buf[i] = b[i];
        elem[i] = e[i];
    }
}

static void nbi_cell_bufs(nbHash *h, nbiBuf *buf[NBI_CELL_BUFS])
{
    buf[0] = &h->start;
    buf[1] = &h->end;
    buf[2] = &h->nstart;
    buf[3] = &h->nend;
}

// What a change needs room for: more items (handles), positions, cell numbers (start / end
// and their scratch), and hashed cells (keys and table entries).
typedef struct nbiHashNeed {
    int32_t items;
    int64_t positions, cells, hashed;
} nbiHashNeed;

// Makes room for `need`, all or nothing: every buffer is prepared before any is replaced, and
// the table, which rehashes as it grows, grows only once the others are ready. Contents move
// along with grown buffers (positions keep their numbers; new positions are tail).
static nbStatus nbi_hash_room(nbHash *h, nbiHashNeed need)
{
    if (need.positions > INT32_MAX || need.cells + 1 > INT32_MAX || need.hashed > INT32_MAX)
        return NB_ERR_OUT_OF_RANGE;
    enum { NB = NBI_POS_BUFS + NBI_CELL_BUFS + 2, KEYS = NB - 2, CELL_OF = NB - 1 };
    nbiBuf *cur[NB];
    size_t elem[NB], size[NB];
    nbi_pos_bufs(h, cur, elem);
    nbi_cell_bufs(h, cur + NBI_POS_BUFS);
    cur[KEYS] = &h->keys;
    cur[CELL_OF] = &h->cell_of;
    for (int b = 0; b < NB; b++) {
        if (b < NBI_POS_BUFS) {
            size[b] = (size_t)(need.positions > h->cap ? need.positions : h->cap);
        } else if (b < KEYS) {
            elem[b] = sizeof(int32_t);
            size[b] = (size_t)need.cells + 1;
        } else if (b == KEYS) {
            elem[b] = 3 * sizeof(int64_t);
            size[b] = (size_t)need.hashed;
        } else { // one per pool slot: follows the pool's capacity
            elem[b] = sizeof(int32_t);
            size[b] = h->pool.slots.cap;
        }
    }
    // The common case, every frame: there is room already.
    bool room = nbi_pool_room(&h->pool) >= need.items &&
                (need.hashed == 0 ||
                 (h->table.bits > 0 && need.hashed <= ((int64_t)1 << (h->table.bits - 1))));
    for (int b = 0; b < NB && room; b++) room = size[b] <= cur[b]->cap;
    if (room) return NB_OK;
    nbiPoolPrep prep;
    nbStatus st = nbi_pool_prepare(&h->pool, need.items, &prep);
    if (st != NB_OK) return st;
    size[CELL_OF] = prep.next.cap;
    nbiBuf next[NB];
    if (!nbi_bufs_prepare(&h->alloc, cur, next, size, elem, NB)) {
        nbi_pool_abandon(&h->pool, &prep);
        return NB_ERR_OUT_OF_MEMORY;
    }
    if (need.hashed > 0 && !nbi_ctab_grow(&h->table, &h->alloc, (size_t)need.hashed)) {
        nbi_bufs_abandon(&h->alloc, cur, next, elem, NB);
        nbi_pool_abandon(&h->pool, &prep);
        return NB_ERR_OUT_OF_MEMORY;
    }
    nbi_pool_commit(&h->pool, &prep);
    nbi_bufs_commit(&h->alloc, cur, next, elem, NB, true);
    size_t cap = h->pts.cap; // every position buffer holds at least `size`; use the least
    for (int b = 1; b < NBI_POS_BUFS; b++) cap = cur[b]->cap < cap ? cur[b]->cap : cap;
    cap = cap > INT32_MAX ? INT32_MAX : cap;
    int32_t *posid = NBI_ARR(h, posid, int32_t);
    for (size_t p = (size_t)h->cap; p < cap; p++) posid[p] = (int32_t)p;
    h->cap = (int32_t)cap;
    if (h->start.ptr != NULL && h->ncells == 0) NBI_ARR(h, start, int32_t)[0] = 0;
    return NB_OK;
}

// Copies the item at position `from` to position `to` and tells its slot.
static void nbi_item_move(nbHash *h, int32_t from, int32_t to)
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

// Makes position p slack: NaN coordinates (no test accepts them), no slot.
static void nbi_slack_fill(nbHash *h, int32_t p)
{
    double *x = NBI_ARR(h, pts, double) + (size_t)p * (size_t)h->dim;
    for (int a = 0; a < h->dim; a++) x[a] = (double)NAN;
    NBI_ARR(h, idx, int32_t)[p] = -1;
    NBI_ARR(h, cat, uint32_t)[p] = 0;
    NBI_ARR(h, mask, uint32_t)[p] = 0;
    const nbHit none = {{0}, 0};
    NBI_ARR(h, hit, nbHit)[p] = none;
}

// One direction of nbi_donor's scan: the occupied cells a borrow from the next donor would shift
// (one copy each, nbi_borrow).
typedef struct nbiDonorScan {
    int32_t passed;
    bool on;
} nbiDonorScan;

// Whether a donor, itself shifting cnt items (a donor right of the cell shifts too), is near
// enough: a borrow copies at most `reach` items (any number when reach < 0).
static bool nbi_donor_near(const nbiDonorScan *s, int32_t cnt, int32_t reach)
{
    return reach < 0 || s->passed + (cnt > 0) <= reach;
}

// Passes a cell of cnt items at distance d; false once no donor beyond can be near enough.
static bool nbi_donor_pass(nbiDonorScan *s, int32_t cnt, int32_t d, int32_t reach)
{
    s->passed += cnt > 0;
    return reach < 0 || (d < NBI_HASH_SCAN && s->passed <= reach);
}

// The nearest cell to c that has slack, or ncells for the tail; -1 when there is none. c
// itself first. A borrow copies one item of each occupied cell that shifts (nbi_borrow), so
// `reach` bounds those (any number when reach < 0); empty cells are passed for free, within
// NBI_HASH_SCAN cells each way. So a cell that takes two items of a fill (nbi_plant) passes
// its lack down the line to the next planted cell, across the empty cells at a row's end.
static int32_t nbi_donor(const nbHash *h, int32_t c, int32_t reach)
{
    const int32_t *start = NBI_ARR(h, start, const int32_t);
    const int32_t *end = NBI_ARR(h, end, const int32_t);
    const int32_t n = h->ncells;
    if (end[c] < start[c + 1]) return c;
    // The common case first: a donor within `reach` cells (each passed cell copies one item at
    // most); the wider scan below only where there is none.
    for (int32_t d = 1; reach < 0 || d <= reach; d++) {
        const int64_t r = (int64_t)c + d, l = (int64_t)c - d;
        if (r > n && l < 0) return -1;
        if (r < n && end[r] < start[r + 1]) return (int32_t)r;
        if (r == n && h->cap > start[n]) return n;
        if (l >= 0 && end[l] < start[l + 1]) return (int32_t)l;
    }
    if (!h->dense) return -1; // a hashed cell moves to the end instead (nbi_cell_renumber)
    const int32_t own = end[c] - start[c];
    nbiDonorScan rs = {0, true}, ls = {own > 0, true}; // c shifts for a left donor
    for (int32_t d = 1; rs.on || ls.on; d++) {
        const int64_t r = (int64_t)c + d, l = (int64_t)c - d;
        rs.on = rs.on && r <= n;
        if (rs.on) {
            const bool slack = r < n ? end[r] < start[r + 1] : h->cap > start[n];
            const int32_t cnt = r < n ? end[r] - start[r] : 0;
            if (slack && nbi_donor_near(&rs, cnt, reach)) return (int32_t)r;
            rs.on = r < n && nbi_donor_pass(&rs, cnt, d, reach);
        }
        ls.on = ls.on && l >= 0;
        if (ls.on) {
            if (end[l] < start[l + 1] && nbi_donor_near(&ls, 0, reach)) return (int32_t)l;
            ls.on = nbi_donor_pass(&ls, end[l] - start[l], d, reach);
        }
    }
    return -1;
}

// Gives cell c a free position at end[c], taken from donor d (nbi_donor): each cell in between
// shifts by one, copying its first item to its end (or its last to the position before it). A
// hashed layout's tail stays where new cells take their positions.
static void nbi_borrow(nbHash *h, int32_t c, int32_t d)
{
    int32_t *start = NBI_ARR(h, start, int32_t), *end = NBI_ARR(h, end, int32_t);
    h->borrows++;
    if (d > c) {
        int32_t e = d;
        if (d == h->ncells) { // the tail's first position goes to the last cell (the tail is
            nbi_slack_fill(h, start[e]); // not kept NaN)
            start[e--]++;
        }
        for (; e > c; e--) { // e has slack at end[e]: its first item goes there
            if (end[e] > start[e]) nbi_item_move(h, start[e], end[e]);
            start[e]++;
            end[e]++;
        }
    } else {
        for (int32_t e = d + 1; e <= c; e++) { // the position before e is free: e's last goes there
            if (end[e] > start[e]) nbi_item_move(h, end[e] - 1, start[e] - 1);
            start[e]--;
            end[e]--;
        }
    }
}

// Takes the item at position p out of cell c: the cell's last item fills its place.
static void nbi_cell_take_out(nbHash *h, int32_t c, int32_t p)
{
    int32_t *end = NBI_ARR(h, end, int32_t);
    const int32_t last = --end[c];
    if (p != last) nbi_item_move(h, last, p);
    nbi_slack_fill(h, last);
    if (end[c] == NBI_ARR(h, start, const int32_t)[c]) h->live_cells--;
}

// Cell c (key) into the table (new there), and the box of occupied cells widened to hold it.
static void nbi_hash_index_cell(nbHash *h, const int64_t key[3], int32_t c)
{
    bool inserted;
    nbi_ctab_insert(&h->table, key[0], key[1], key[2], c, &inserted);
    NB_ASSERT(inserted);
    for (int a = 0; a < 3; a++) {
        h->lo[a] = key[a] < h->lo[a] ? key[a] : h->lo[a];
        h->hi[a] = key[a] > h->hi[a] ? key[a] : h->hi[a];
    }
}

// A new, empty hashed cell at the end of the numbering (room made).
static int32_t nbi_cell_new(nbHash *h, const int64_t key[3])
{
    const int32_t c = h->ncells++;
    int32_t *start = NBI_ARR(h, start, int32_t);
    start[c + 1] = start[c];
    NBI_ARR(h, end, int32_t)[c] = start[c];
    memcpy(NBI_ARR(h, keys, int64_t) + (size_t)c * 3, key, 3 * sizeof(int64_t));
    nbi_hash_index_cell(h, key, c);
    return c;
}

// Hashed cell c, which has no slack within reach, takes a new number at the end of the
// numbering (room made: a cell number, and tail positions for its items and one more). A hashed
// cell's number says nothing about where it is, so moving it costs only its items' copies: its
// items go to the tail, its old number stays behind empty until the next relayout drops it, and
// the table and its items' slots learn the new number. Returns the new number.
static int32_t nbi_cell_renumber(nbHash *h, int32_t c)
{
    int32_t *start = NBI_ARR(h, start, int32_t), *end = NBI_ARR(h, end, int32_t);
    int32_t *cell_of = NBI_ARR(h, cell_of, int32_t);
    const int32_t *idx = NBI_ARR(h, idx, const int32_t);
    int64_t *keys = NBI_ARR(h, keys, int64_t);
    const int32_t t = h->ncells++, cnt = end[c] - start[c];
    h->renumbers++;
    NB_ASSERT(h->cap - start[t] > cnt);
    for (int32_t i = 0; i < cnt; i++) {
        nbi_item_move(h, start[c] + i, start[t] + i);
        cell_of[idx[start[t] + i]] = t;
        nbi_slack_fill(h, start[c] + i);
    }
    end[c] = start[c];
    end[t] = start[t] + cnt;
    start[t + 1] = end[t];
    memcpy(keys + (size_t)t * 3, keys + (size_t)c * 3, 3 * sizeof(int64_t));
    const int64_t *k = keys + (size_t)t * 3;
    nbi_ctab_set(&h->table, nbi_ctab_find_slot(&h->table, k[0], k[1], k[2]), t);
    return t;
}

// ---- relayout ----

// Where a relayout puts the cells: a dense box or hashed cells, and the positions it needs.
typedef struct nbiLayout {
    bool dense;
    int64_t lo[3], hi[3];
    int64_t ncells;
    int64_t cap;  // position capacity afterwards
    int64_t want; // dense: the cell (new number) the call that relays out places an item in; -1
} nbiLayout;

// Whether relayout L plants (nbi_relayout): dense, for a placed item, while most placements
// since the last relayout repeated the step before them (nbi_trail).
static bool nbi_plants(const nbHash *h, const nbiLayout *L)
{
    return L->dense && L->want >= 0 && 2 * h->repeats >= h->borrows;
}

// Plans a relayout for n items that also covers the cell at `key` (if not NULL): a dense box
// over the occupied cells (with a margin, so that a crowd drifting outward does not relay out at
// every step) when it is small enough, else hashed cells. A hashed hash turns dense only when
// its box is well inside the limit, so that a world at the edge does not flip back and forth.
static nbStatus nbi_layout_plan(const nbHash *h, int64_t n, const int64_t *key, nbiLayout *L)
{
    memset(L, 0, sizeof *L);
    L->want = -1;
    int64_t lo[3] = {INT64_MAX, INT64_MAX, 0}, hi[3] = {INT64_MIN, INT64_MIN, 0};
    if (h->dim == 3) {
        lo[2] = INT64_MAX;
        hi[2] = INT64_MIN;
    }
    int64_t live = 0;
    bool beyond = false, out[3] = {false, false, false}; // the key outside the occupied box
    const int32_t *start = NBI_ARR(h, start, const int32_t);
    const int32_t *end = NBI_ARR(h, end, const int32_t);
    for (int32_t c = 0; c <= h->ncells; c++) {
        int64_t k[3];
        if (c < h->ncells) {
            if (end[c] == start[c]) continue;
            nbi_cell_key(h, c, k);
            live++;
        } else if (key != NULL) {
            memcpy(k, key, sizeof k);
            for (int a = 0; a < h->dim; a++) {
                out[a] = live > 0 && (k[a] < lo[a] || k[a] > hi[a]);
                beyond = beyond || out[a];
            }
        } else {
            break;
        }
        for (int a = 0; a < h->dim; a++) {
            lo[a] = k[a] < lo[a] ? k[a] : lo[a];
            hi[a] = k[a] > hi[a] ? k[a] : hi[a];
        }
    }
    const int64_t limit = nbi_max_cells(n);
    if (live == 0 && key == NULL) { // nothing to place: an empty dense box
        L->dense = true;
        for (int a = 0; a < 3; a++) L->hi[a] = -1;
    } else {
        double cells = 1.0;
        for (int a = 0; a < h->dim; a++) cells *= (double)hi[a] - (double)lo[a] + 1.0;
        L->dense = cells <= (double)(h->dense ? limit : nbi_dense_again(n));
        if (L->dense) {
            // A margin of a quarter of the box on every side, so that a crowd drifting outward
            // does not relay out at every step; where that is too many cells, twice as much on
            // the sides the placed item pushes the box out on (a lattice inserted row by row
            // grows it on one side only, a row a relayout without), halved until it fits.
            // A fill (nbi_trail's repeats) that leaves the occupied cells grows the box on the
            // sides it leaves them by only, by twice as much: it is going there.
            const bool fill = key != NULL && 2 * h->repeats >= h->borrows;
            int64_t below[3] = {0, 0, 0}, above[3] = {0, 0, 0};
            for (int a = 0; a < h->dim; a++) below[a] = above[a] = (hi[a] - lo[a] + 1) / 4 + 1;
            for (int round = 0; round < 64; round++) {
                double with = 1.0;
                bool any = false;
                for (int a = 0; a < h->dim; a++) {
                    with *= (double)(hi[a] - lo[a] + 1 + below[a] + above[a]);
                    any = any || below[a] > 0 || above[a] > 0;
                }
                if ((with <= (double)limit && !(round == 0 && fill && beyond)) || !any) break;
                for (int a = 0; a < h->dim; a++) {
                    if (round == 0) { // the pushed sides only
                        // (outside the occupied cells, only the sides it is outside of: a lattice
                        // inserted in columns starts a column at the foot, the edge of the
                        // box, and pushes it only sideways)
                        const int64_t m = 2 * below[a];
                        // (or, within them, not along the fill's lines: h->line_axis)
                        const bool push = key != NULL && (beyond ? out[a] : a != h->line_axis);
                        below[a] = push && key[a] == lo[a] ? m : 0;
                        above[a] = push && key[a] == hi[a] ? m : 0;
                    } else {
                        below[a] /= 2;
                        above[a] /= 2;
                    }
                }
            }
            cells = 1.0;
            for (int a = 0; a < 3; a++) {
                // The cell math keeps |key| < 2^62, so the margin cannot overflow.
                L->lo[a] = lo[a] - below[a];
                L->hi[a] = hi[a] + above[a];
                cells *= (double)(L->hi[a] - L->lo[a] + 1);
            }
            L->ncells = (int64_t)cells;
            L->want = -1;
            if (key != NULL)
                L->want =
                    (key[0] - L->lo[0]) +
                    (L->hi[0] - L->lo[0] + 1) *
                        ((key[1] - L->lo[1]) + (L->hi[1] - L->lo[1] + 1) * (key[2] - L->lo[2]));
        } else {
            L->ncells = live;
        }
    }
    // A fill (nbi_relayout plants) grows the capacity once the spare positions are fewer than
    // it plants, not only at the least a relayout needs: it uses them all.
    const int64_t want = nbi_cap_want(n, L->dense);
    const int64_t lo_cap = nbi_plants(h, L) ? want : nbi_cap_min(n, L->dense);
    L->cap = h->cap >= lo_cap ? h->cap : (want > h->cap + h->cap / 2 ? want : h->cap + h->cap / 2);
    if (L->cap > INT32_MAX || L->ncells + 2 > INT32_MAX) return NB_ERR_OUT_OF_RANGE;
    return NB_OK;
}

// Lines of a dense box for planting (nbi_plant): the box's cells ranked with axis `a` (the one
// the fill steps along) fastest, then the other axes in order; rank -> the cell's number.
typedef struct nbiLines {
    int64_t e[3];
    int a, b, c;
} nbiLines;

static uint64_t nbi_mag(int64_t x)
{
    return x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
}

static int32_t nbi_line_cell(const nbiLines *g, int64_t r)
{
    int64_t o[3];
    o[g->a] = r % g->e[g->a];
    r /= g->e[g->a];
    o[g->b] = r % g->e[g->b];
    o[g->c] = r / g->e[g->b];
    return (int32_t)(o[0] + g->e[0] * (o[1] + g->e[1] * o[2]));
}

// Marks (mark[t] = 1 or 2, the rest 0) up to `budget` positions in cells of layout L for a spare
// position each, nearest first in the line order of the fill (h->line_axis fastest, in the
// direction h->line_dir) from cell L->want: on along the line, line after line; or when the lines
// have been coming the other way (a lattice inserted in rows from the top), the rest of want's
// line and then back, line before line. Returns how many it marked.
static int64_t nbi_plant(nbHash *h, const nbiLayout *L, int32_t *mark, int64_t budget)
{
    nbiLines g;
    for (int k = 0; k < 3; k++) g.e[k] = L->hi[k] - L->lo[k] + 1;
    g.a = h->line_axis >= 0 ? h->line_axis : 0;
    const int64_t step = h->line_dir;
    g.b = g.a == 0 ? 1 : 0;
    g.c = g.a == 2 ? 1 : 2;
    const int64_t T = L->ncells, ea = g.e[g.a];
    int64_t o[3], t = L->want;
    o[0] = t % g.e[0];
    o[1] = (t / g.e[0]) % g.e[1];
    o[2] = t / (g.e[0] * g.e[1]);
    const int64_t line = o[g.b] + g.e[g.b] * o[g.c], w = o[g.a] + ea * line;
    const int64_t dir = step < 0 ? -1 : 1;
    // The line's place in space (the box moves between relayouts), against the last planting's.
    const int64_t at[2] = {L->lo[g.c] + o[g.c], L->lo[g.b] + o[g.b]};
    const bool before =
        at[0] < h->plant_line[0] || (at[0] == h->plant_line[0] && at[1] < h->plant_line[1]);
    const bool after =
        at[0] > h->plant_line[0] || (at[0] == h->plant_line[0] && at[1] > h->plant_line[1]);
    const bool back = h->planted && (dir > 0 ? before : after);
    h->planted = true;
    h->plant_line[0] = at[0];
    h->plant_line[1] = at[1];
    const int64_t stop = back ? (dir > 0 ? line * ea + ea - 1 : line * ea) : (dir > 0 ? T - 1 : 0);
    for (int64_t r = 0; r < T; r++) mark[r] = 0;
    int64_t f = w, k = w, got = 1, cells = 1;
    mark[L->want] = 1;
    while (got < budget) {
        const bool fwd = dir > 0 ? f < T - 1 : f > 0, bwd = dir > 0 ? k > 0 : k < T - 1;
        int64_t r;
        if (fwd && (f != stop || !bwd)) {
            r = f += dir;
        } else if (bwd) {
            r = k -= dir;
        } else {
            break;
        }
        // Every NBI_PLANT_EXTRA-th cell a second: a cell that takes two items (a lattice point
        // on a cell's edge shares the cell of its neighbour) borrows the next cell's position,
        // that one the next's, and so on down the line, until a cell with two stops it.
        const int32_t m = ++cells % NBI_PLANT_EXTRA == 0 && got + 1 < budget ? 2 : 1;
        mark[nbi_line_cell(&g, r)] = m;
        got += m;
    }
    return got;
}

// Places every item by layout L (room made: positions L->cap, cell arrays L->ncells + 2, and
// keys and table entries for a hashed L). Cells keep their relative order in a hashed layout
// (row-major in a dense one); each gets its items then slack in proportion to its items + 1.
// The items are permuted in place: posid, normally p at p, holds each position's destination
// (-1 for slack) while cycles of swaps put every item where it belongs; then it is restored.
static void nbi_relayout(nbHash *h, const nbiLayout *L)
{
    h->relayouts++;
    const int32_t *start = NBI_ARR(h, start, const int32_t);
    const int32_t *end = NBI_ARR(h, end, const int32_t);
    int32_t *nstart = NBI_ARR(h, nstart, int32_t), *nend = NBI_ARR(h, nend, int32_t);
    int64_t *keys = NBI_ARR(h, keys, int64_t);
    const int32_t T = (int32_t)L->ncells;
    // 1. Each new cell's source cell (in nend for now), and the hashed keys in their new order
    //    (in place: a hashed layout keeps the old order, so cell t comes from a cell >= t).
    int64_t weight = 0;
    if (L->dense) {
        const int64_t e0 = L->hi[0] - L->lo[0] + 1, e1 = L->hi[1] - L->lo[1] + 1;
        for (int32_t t = 0; t < T; t++) {
            const int64_t k[3] = {L->lo[0] + t % e0, L->lo[1] + (t / e0) % e1,
                                  L->lo[2] + t / (e0 * e1)};
            const int32_t src = nbi_cell_find(h, k);
            nend[t] = src >= 0 && end[src] > start[src] ? src : -1;
        }
    } else {
        int32_t t = 0;
        for (int32_t c = 0; c < h->ncells; c++) {
            if (end[c] == start[c]) continue;
            int64_t k[3];
            nbi_cell_key(h, c, k);
            memcpy(keys + (size_t)t * 3, k, sizeof k);
            nend[t++] = c;
        }
        NB_ASSERT(t == T);
    }
    for (int32_t t = 0; t < T; t++)
        if (nend[t] >= 0) weight += end[nend[t]] - start[nend[t]] + 1;
    // 2. New starts: items, then slack spread by weight (the running share, rounded down).
    const int64_t n = h->count;
    // Dense: up to nbi_slack_want spread, the rest is tail. Hashed: the tail keeps at least
    // nbi_slack_min for new cells (nbi_cap_min), and the cells get what is left up to the same.
    int64_t slack = (int64_t)h->cap - n - (L->dense ? 0 : nbi_slack_min(n));
    const int64_t want = nbi_slack_want(n);
    slack = slack < want ? slack : want;
    slack = slack > 0 ? slack : 0;
    // Dense, for a call placing an item (L->want), when most placements since the last relayout
    // repeated the step before them (a lattice inserted in rows, columns or layers: items
    // arriving in order where there was no slack to spread to), the tail and half the slack are
    // planted instead: one spare position in each of the cells nearest to the placed item's
    // along the fill's step (nbi_plant). Those cells take their next item with no borrow at
    // all, and what is left where no item came is one NaN a cell, which a walker pays for about
    // as it pays for an item. (Spare positions left as one run in the placed item's cell, for
    // the fill to carry along, cost all pairs the square of the run's length where the fill
    // stopped or never came: a run in a cell's slack is tested against itself.)
    int64_t plant = 0;
    if (nbi_plants(h, L)) {
        plant = (int64_t)h->cap - n;
        plant = plant < want ? plant : want;
        slack = 0;
        if (plant > 0) plant = nbi_plant(h, L, nstart, plant);
    }
    h->borrows = h->repeats = 0;
    int64_t pos = 0, acc = 0, given = 0;
    for (int32_t t = 0; t < T; t++) {
        const int32_t planted = plant > 0 ? nstart[t] : 0; // (nbi_plant's mark, overwritten here)
        nstart[t] = (int32_t)pos;
        if (nend[t] >= 0) {
            const int64_t cnt = end[nend[t]] - start[nend[t]];
            acc += cnt + 1;
            const int64_t share = weight > 0 ? slack * acc / weight : 0;
            pos += cnt + (share - given);
            given = share;
        }
        pos += planted;
    }
    nstart[T] = (int32_t)pos;
    // 3. Destinations, then the permutation.
    int32_t *dest = NBI_ARR(h, posid, int32_t);
    for (int32_t p = 0; p < h->cap; p++) dest[p] = -1;
    for (int32_t t = 0; t < T; t++) {
        const int32_t src = nend[t];
        if (src < 0) continue;
        for (int32_t i = 0; i < end[src] - start[src]; i++) dest[start[src] + i] = nstart[t] + i;
    }
    const size_t d = (size_t)h->dim;
    double *pts = NBI_ARR(h, pts, double);
    int32_t *idx = NBI_ARR(h, idx, int32_t);
    uint32_t *cat = NBI_ARR(h, cat, uint32_t), *mask = NBI_ARR(h, mask, uint32_t);
    nbHit *hit = NBI_ARR(h, hit, nbHit);
    for (int32_t p = 0; p < h->cap; p++) {
        while (dest[p] >= 0 && dest[p] != p) { // swap the item here with whatever is at its place
            const int32_t q = dest[p];
            double x[3];
            memcpy(x, pts + (size_t)p * d, d * sizeof(double));
            memcpy(pts + (size_t)p * d, pts + (size_t)q * d, d * sizeof(double));
            memcpy(pts + (size_t)q * d, x, d * sizeof(double));
            const int32_t i = idx[p];
            idx[p] = idx[q];
            idx[q] = i;
            const uint32_t c0 = cat[p], m0 = mask[p];
            cat[p] = cat[q];
            mask[p] = mask[q];
            cat[q] = c0;
            mask[q] = m0;
            const nbHit h0 = hit[p];
            hit[p] = hit[q];
            hit[q] = h0;
            dest[p] = dest[q];
            dest[q] = q;
        }
    }
    // 4. Ends, slack, the slots' positions; posid back to p at p.
    int32_t *cell_of = NBI_ARR(h, cell_of, int32_t);
    for (int32_t t = 0; t < T; t++) {
        const int32_t src = nend[t];
        const int32_t cnt = src >= 0 ? end[src] - start[src] : 0;
        nend[t] = nstart[t] + cnt;
        for (int32_t p = nstart[t]; p < nend[t]; p++) {
            nbi_pool_set_slot_value(&h->pool, idx[p], p);
            cell_of[idx[p]] = t;
        }
        for (int32_t p = nend[t]; p < nstart[t + 1]; p++) nbi_slack_fill(h, p);
    }
    for (int32_t p = 0; p < h->cap; p++) dest[p] = p;
    nbiBuf tmp = h->start;
    h->start = h->nstart;
    h->nstart = tmp;
    tmp = h->end;
    h->end = h->nend;
    h->nend = tmp;
    // 5. The numbering.
    h->ncells = T;
    h->live_cells = 0;
    const int32_t *ns = NBI_ARR(h, start, const int32_t), *ne = NBI_ARR(h, end, const int32_t);
    for (int32_t t = 0; t < T; t++) h->live_cells += ne[t] > ns[t];
    h->dense = L->dense;
    if (h->table.count > 0) nbi_ctab_reset(&h->table, h->table.bits); // (O(table): skip it empty)
    if (L->dense) {
        for (int a = 0; a < 3; a++) {
            h->lo[a] = L->lo[a];
            h->hi[a] = L->hi[a];
        }
    } else {
        for (int a = 0; a < 3; a++) {
            h->lo[a] = a < h->dim ? INT64_MAX : 0;
            h->hi[a] = a < h->dim ? INT64_MIN : 0;
        }
        for (int32_t t = 0; t < T; t++) nbi_hash_index_cell(h, keys + (size_t)t * 3, t);
    }
    for (int a = 0; a < 3; a++) h->ext[a] = h->hi[a] - h->lo[a] + 1;
}

// Records a placement in the cell at `key` on the fill's trail (whether nbi_relayout plants):
// whether it repeats the step before it (in wrapping arithmetic: keys may be 2^63 apart).
static void nbi_trail(nbHash *h, const int64_t key[3])
{
    bool same = true;
    for (int a = 0; a < 3; a++) {
        const int64_t step = (int64_t)((uint64_t)key[a] - (uint64_t)h->last_key[a]);
        same = same && step == h->last_step[a];
        h->last_step[a] = step;
        h->last_key[a] = key[a];
    }
    h->repeats += same;
    int a = -1; // a repeated step: the fill's line is along its least axis
    for (int k = 0; same && k < 3; k++)
        if (h->last_step[k] != 0 && (a < 0 || nbi_mag(h->last_step[k]) < nbi_mag(h->last_step[a])))
            a = k;
    if (a >= 0) {
        h->line_axis = a;
        h->line_dir = h->last_step[a] < 0 ? -1 : 1;
    }
}

// Makes sure the cell at `key` exists and has a free position at its end, for a call that adds
// `items` (0 or 1) items: borrows from a nearby cell, or creates the cell, or relays out. Only
// the room it makes first can fail (then nothing has changed). *cell is the cell's number.
static nbStatus nbi_make_place(nbHash *h, const int64_t key[3], int32_t items, int32_t *cell)
{
    const int64_t n = (int64_t)h->count + items;
    if (n > NBI_HASH_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    int32_t c = nbi_cell_find(h, key);
    if (c >= 0 && items == 0) { // a move to an existing cell with slack near: nothing to allocate
        const int32_t d = nbi_donor(h, c, NBI_HASH_REACH);
        if (d >= 0) {
            nbi_borrow(h, c, d);
            nbi_trail(h, key);
            *cell = c;
            return NB_OK;
        }
    }
    bool relayout = false, renumber = false;
    double box = 1.0; // hashed: the box of its cells (a superset), which may have become small
    for (int a = 0; a < h->dim; a++) box *= (double)h->hi[a] - (double)h->lo[a] + 1.0;
    if (!h->dense && h->ncells > 0 && box <= (double)nbi_dense_again(n)) {
        relayout = true; // a relayout turns it dense
    } else if (c >= 0) {
        relayout = nbi_donor(h, c, NBI_HASH_REACH) < 0;
        // hashed: the cell moves to the end, its items and one more into the tail
        const int32_t *start = NBI_ARR(h, start, const int32_t);
        renumber = relayout && !h->dense && h->ncells < nbi_hashed_max(n) &&
                   h->cap - start[h->ncells] > NBI_ARR(h, end, const int32_t)[c] - start[c];
        relayout = relayout && !renumber;
    } else if (h->dense || h->ncells >= nbi_hashed_max(n)) {
        relayout = true; // outside the box, or too many emptied hashed cells
    } else {             // a new hashed cell at the end: the tail, or slack before it
        relayout = h->cap <= NBI_ARR(h, start, const int32_t)[h->ncells] &&
                   (h->ncells == 0 || nbi_donor(h, h->ncells - 1, NBI_HASH_REACH - 1) < 0);
    }
    nbiLayout L;
    nbiHashNeed need = {items, h->cap, h->ncells + 1, 0};
    if (relayout) {
        const nbStatus st = nbi_layout_plan(h, n, key, &L);
        if (st != NB_OK) return st;
        need.positions = L.cap;
        need.cells = (L.ncells > h->ncells ? L.ncells : h->ncells) + 1;
        if (!L.dense) need.hashed = L.ncells + 1;
    } else if (!h->dense) {
        need.hashed = h->ncells + 1;
    }
    const nbStatus st = nbi_hash_room(h, need);
    if (st != NB_OK) return st;
    // Nothing can fail from here on.
    if (relayout) {
        nbi_relayout(h, &L);
        c = nbi_cell_find(h, key);
    }
    if (renumber) c = nbi_cell_renumber(h, c);
    if (c < 0) c = nbi_cell_new(h, key);
    const int32_t d = nbi_donor(h, c, -1); // the nearest: within reach, as checked above
    NB_ASSERT(d >= 0);
    nbi_borrow(h, c, d);
    nbi_trail(h, key);
    *cell = c;
    return NB_OK;
}

static void nbi_bounds_add(nbHash *h, const double *pos)
{
    for (int a = 0; a < h->dim; a++) {
        const double x = fabs(pos[a]);
        h->max_abs = x > h->max_abs ? x : h->max_abs;
    }
    h->view.max_abs = h->max_abs; // the one field a move within its cell changes
    nbi_knn_index_touch(&h->knn); // (and the coordinates the kNN index copied)
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
    nb_hash_clear(h);
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
    nbiBuf *buf[NBI_POS_BUFS];
    size_t elem[NBI_POS_BUFS];
    nbi_pos_bufs(hash, buf, elem);
    for (int i = 0; i < NBI_POS_BUFS; i++)
        nbi_free(&hash->alloc, buf[i]->ptr, buf[i]->cap, elem[i]);
    nbi_cell_bufs(hash, buf);
    for (int i = 0; i < NBI_CELL_BUFS; i++)
        nbi_free(&hash->alloc, buf[i]->ptr, buf[i]->cap, sizeof(int32_t));
    nbi_free(&hash->alloc, hash->keys.ptr, hash->keys.cap, 3 * sizeof(int64_t));
    nbi_free(&hash->alloc, hash->cell_of.ptr, hash->cell_of.cap, sizeof(int32_t));
    nbi_ctab_free(&hash->table, &hash->alloc);
    nbi_pool_destroy(&hash->pool);
    nbi_knn_index_free(&hash->knn, &hash->alloc);
    nbAllocator a = hash->alloc;
    nbi_free(&a, hash, 1, sizeof(nbHash));
}

nbStatus nb_hash_reserve(nbHash *hash, int32_t items)
{
    if (hash == NULL) return NB_ERR_NULL_ARG;
    if (items < 0 || items > NBI_HASH_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    // Inserting until the hash holds `items` items: handles for them, positions for them and
    // the slack of a relayout, cell numbers for the largest dense box of their size, and keys
    // and table entries for the most hashed cells (a far insert may turn a dense hash hashed).
    const int64_t n = items > hash->count ? items : hash->count;
    const int32_t more = items > hash->count ? items - hash->count : 0;
    const int64_t hashed = nbi_hashed_max(n) + 1;
    const int64_t cells = nbi_max_cells(n) > hashed ? nbi_max_cells(n) : hashed;
    const int64_t hashed_cap = nbi_cap_min(n, false), dense_cap = nbi_cap_want(n, true);
    const nbiHashNeed need = {more, hashed_cap > dense_cap ? hashed_cap : dense_cap, cells, hashed};
    const nbStatus st = nbi_hash_room(hash, need);
    nbi_hash_view_refresh(hash);
    return st;
}

void nb_hash_clear(nbHash *hash)
{
    if (hash == NULL) return;
    nbi_pool_clear(&hash->pool);
    if (hash->table.count > 0) nbi_ctab_reset(&hash->table, hash->table.bits);
    hash->count = hash->nfiltered = 0;
    hash->planted = false;
    hash->borrows = hash->repeats = 0;
    memset(hash->last_key, 0, sizeof hash->last_key);
    memset(hash->last_step, 0, sizeof hash->last_step);
    hash->line_axis = -1;
    hash->line_dir = 1;
    hash->dense = true;
    hash->ncells = hash->live_cells = 0;
    if (hash->start.ptr != NULL) NBI_ARR(hash, start, int32_t)[0] = 0;
    hash->max_abs = 0.0;
    for (int a = 0; a < 3; a++) {
        hash->lo[a] = 0;
        hash->hi[a] = -1;
        hash->ext[a] = 0;
    }
    nbi_hash_view_refresh(hash);
}

int32_t nb_hash_count(const nbHash *hash)
{
    return hash == NULL ? 0 : hash->count;
}

size_t nb_hash_memory_bytes(const nbHash *hash)
{
    if (hash == NULL) return 0;
    nbHash *h = (nbHash *)hash;
    nbiBuf *buf[NBI_POS_BUFS];
    size_t elem[NBI_POS_BUFS];
    size_t bytes = sizeof(nbHash) + nbi_pool_memory_bytes(&h->pool) +
                   h->table.buf.cap * sizeof(nbiCellSlot) + h->keys.cap * 3 * sizeof(int64_t) +
                   h->cell_of.cap * sizeof(int32_t);
    nbi_pos_bufs(h, buf, elem);
    for (int i = 0; i < NBI_POS_BUFS; i++) bytes += buf[i]->cap * elem[i];
    nbi_cell_bufs(h, buf);
    for (int i = 0; i < NBI_CELL_BUFS; i++) bytes += buf[i]->cap * sizeof(int32_t);
    return bytes + nbi_knn_index_bytes(&h->knn);
}

nbStatus nb_hash_info(const nbHash *hash, nbHashInfo *info)
{
    if (info != NULL) memset(info, 0, sizeof *info);
    if (hash == NULL || info == NULL) return NB_ERR_NULL_ARG;
    info->dim = hash->dim;
    info->count = hash->count;
    info->cells = hash->live_cells;
    info->hashed = !hash->dense;
    info->cell_size = hash->cm.cell;
    info->bytes = nb_hash_memory_bytes(hash);
    return NB_OK;
}

// ---- items ----

static void nbi_item_write(nbHash *h, int32_t p, int32_t slot, const double *pos, nbFilter f,
                           uint64_t handle, uint64_t user)
{
    memcpy(NBI_ARR(h, pts, double) + (size_t)p * (size_t)h->dim, pos,
           (size_t)h->dim * sizeof(double));
    NBI_ARR(h, idx, int32_t)[p] = slot;
    NBI_ARR(h, cat, uint32_t)[p] = f.category;
    NBI_ARR(h, mask, uint32_t)[p] = f.mask;
    NBI_ARR(h, hit, nbHit)[p].handle.bits = handle;
    NBI_ARR(h, hit, nbHit)[p].user = user;
    nbi_pool_set_slot_value(&h->pool, slot, p);
}

// The next position of cell c, which has one free (nbi_make_place).
static int32_t nbi_cell_append(nbHash *h, int32_t c)
{
    int32_t *end = NBI_ARR(h, end, int32_t);
    if (end[c] == NBI_ARR(h, start, const int32_t)[c]) h->live_cells++;
    return end[c]++;
}

nbStatus nb_hash_insert(nbHash *hash, const double *pos, uint64_t user, nbFilter filter,
                        nbHandle *out)
{
    if (out != NULL) out->bits = 0;
    if (hash == NULL || pos == NULL || out == NULL) return NB_ERR_NULL_ARG;
    int64_t key[3];
    nbStatus st = nbi_hash_key(hash, pos, key);
    if (st != NB_OK) return st;
    int32_t c;
    st = nbi_make_place(hash, key, 1, &c);
    if (st != NB_OK) return st;
    // Nothing can fail from here on.
    nbHandle h;
    st = nbi_pool_alloc(&hash->pool, 0, &h);
    NB_ASSERT(st == NB_OK);
    int32_t slot;
    nbi_pool_lookup(&hash->pool, h, &slot);
    nbi_item_write(hash, nbi_cell_append(hash, c), slot, pos, filter, h.bits, user);
    NBI_ARR(hash, cell_of, int32_t)[slot] = c;
    nbi_bounds_add(hash, pos);
    hash->count++;
    hash->nfiltered += !nbi_filter_all_bits(filter.category, filter.mask);
    nbi_hash_view_refresh(hash);
    *out = h;
    return NB_OK;
}

// Moves the live item in `slot` to pos, whose cell `key` has been checked. Returns whether it
// changed cell (then the cached view needs a refresh); on error the hash is unchanged.
static nbStatus nbi_hash_move_slot(nbHash *h, int32_t slot, const int64_t key[3], const double *pos,
                                   bool *crossed)
{
    *crossed = false;
    int32_t p = nbi_pool_value_live(&h->pool, slot);
    if (nbi_in_cell(h, NBI_ARR(h, cell_of, const int32_t)[slot], key)) { // in place
        memcpy(NBI_ARR(h, pts, double) + (size_t)p * (size_t)h->dim, pos,
               (size_t)h->dim * sizeof(double));
        nbi_bounds_add(h, pos);
        return NB_OK;
    }
    int32_t c;
    const nbStatus st = nbi_make_place(h, key, 0, &c);
    if (st != NB_OK) return st;
    // Making room may have moved the item and renumbered the cells.
    p = nbi_pool_value_live(&h->pool, slot);
    int32_t *cell_of = NBI_ARR(h, cell_of, int32_t);
    const int32_t from = cell_of[slot];
    NB_ASSERT(from >= 0 && from != c);
    const int32_t q = nbi_cell_append(h, c);
    nbi_item_move(h, p, q);
    cell_of[slot] = c;
    memcpy(NBI_ARR(h, pts, double) + (size_t)q * (size_t)h->dim, pos,
           (size_t)h->dim * sizeof(double));
    nbi_cell_take_out(h, from, p);
    nbi_bounds_add(h, pos);
    *crossed = true;
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
    bool crossed;
    st = nbi_hash_move_slot(hash, slot, key, pos, &crossed);
    if (crossed) nbi_hash_view_refresh(hash);
    return st;
}

// How far ahead a batched move asks for the lines of the moves to come: the handle's pool slot
// and cell_of at 2 * AHEAD, the item's coordinates (whose position the pool slot holds) at AHEAD.
enum { NBI_MOVE_AHEAD = 8 };

// Asks for the pool slot and cell_of of the slot a handle names (a hint: nothing is read when
// the handle is out of range).
static void nbi_prefetch_slot(const nbHash *h, nbHandle e)
{
    const uint32_t s = (uint32_t)e.bits - 1u;
    if (s >= (uint32_t)h->pool.used) return;
    nbi_prefetch((const nbiPoolSlot *)h->pool.slots.ptr + s);
    nbi_prefetch(NBI_ARR(h, cell_of, const int32_t) + s);
}

nbStatus nb_hash_move_many(nbHash *hash, const nbHandle *items, const double *positions,
                           int32_t count, int32_t *moved)
{
    if (moved != NULL) *moved = 0;
    if (hash == NULL || ((items == NULL || positions == NULL) && count > 0)) return NB_ERR_NULL_ARG;
    if (count < 0) return NB_ERR_OUT_OF_RANGE;
    const size_t d = (size_t)hash->dim;
    // 1. Every entry is checked before anything moves (the first bad one's status).
    for (int32_t i = 0; i < count; i++) {
        if (i + NBI_MOVE_AHEAD < count) nbi_prefetch_slot(hash, items[i + NBI_MOVE_AHEAD]);
        int32_t slot;
        nbStatus st = nbi_pool_lookup(&hash->pool, items[i], &slot);
        if (st != NB_OK) return st;
        int64_t key[3];
        st = nbi_hash_key(hash, positions + (size_t)i * d, key);
        if (st != NB_OK) return st;
    }
    // 2. The moves, in order, each with the lines of the ones to come already asked for: the
    //    chain handle -> pool slot -> coordinates is a miss after a miss for movers in random
    //    order, and here several of them are in flight at once.
    const nbiPoolSlot *slots = (const nbiPoolSlot *)hash->pool.slots.ptr;
    bool any = false;
    nbStatus st = NB_OK;
    int32_t i = 0;
    for (; i < count; i++) {
        if (i + 2 * NBI_MOVE_AHEAD < count) nbi_prefetch_slot(hash, items[i + 2 * NBI_MOVE_AHEAD]);
        if (i + NBI_MOVE_AHEAD < count) {
            const int32_t p = slots[(uint32_t)items[i + NBI_MOVE_AHEAD].bits - 1u].value;
            if (p >= 0 && p < hash->cap) nbi_prefetch_w(NBI_ARR(hash, pts, double) + (size_t)p * d);
        }
        const int32_t slot = (int32_t)((uint32_t)items[i].bits - 1u); // checked above
        int64_t key[3];
        nbi_hash_key(hash, positions + (size_t)i * d, key);
        bool crossed;
        st = nbi_hash_move_slot(hash, slot, key, positions + (size_t)i * d, &crossed);
        if (st != NB_OK) break;
        any |= crossed;
        slots = (const nbiPoolSlot *)hash->pool.slots.ptr; // (the pool's storage may have grown)
    }
    if (any) nbi_hash_view_refresh(hash);
    if (moved != NULL) *moved = i;
    return st;
}

nbStatus nb_hash_remove(nbHash *hash, nbHandle item)
{
    if (hash == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    const nbStatus st = nbi_pool_lookup(&hash->pool, item, &slot);
    if (st != NB_OK) return st;
    const int32_t p = nbi_pool_slot_value(&hash->pool, slot);
    hash->nfiltered -=
        !nbi_filter_all_bits(NBI_ARR(hash, cat, uint32_t)[p], NBI_ARR(hash, mask, uint32_t)[p]);
    nbi_cell_take_out(hash, NBI_ARR(hash, cell_of, const int32_t)[slot], p);
    nbi_pool_free(&hash->pool, item, NULL);
    if (--hash->count == 0) nb_hash_clear(hash); // a fresh start: bounds, cells
    nbi_hash_view_refresh(hash);
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
    hash->nfiltered +=
        !nbi_filter_all_bits(filter.category, filter.mask) - !nbi_filter_all_bits(cat[p], mask[p]);
    NBI_ARR(hash, hit, nbHit)[p].user = user;
    cat[p] = filter.category;
    mask[p] = filter.mask;
    nbi_hash_view_refresh(hash);
    return NB_OK;
}

nbStatus nb_hash_visit_all(const nbHash *hash, nbHitFn *visit, void *user)
{
    if (hash == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    if (hash->count == 0) return NB_OK;
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
    nbHit *out;
    int32_t cap, n, skip;
    nbHitFn *fn;
    void *user;
} nbiHashHits;

static bool nbi_hash_on_hit(int32_t slot, void *ctx)
{
    nbiHashHits *x = (nbiHashHits *)ctx;
    if (slot == x->skip) return true;
    const nbHit hit = nbi_hash_hit(x->h, slot);
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
    const nbiView *v = &h->view;
    nbiHitSink s;
    nbi_hit_sink_init(&s, NBI_SINK_VISIT, NULL, x->fn != NULL ? 0 : x->cap, nbi_hash_on_hit, x);
    return center != NULL ? nbi_walk_radius(v, center, radius, f, &s)
                          : nbi_walk_box(v, lo, hi, f, &s);
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
                                      const double *lo, const double *hi, nbFilter f, nbHit *out,
                                      int32_t capacity, int32_t *found)
{
    const nbiView *v = &h->view;
    nbiHitSink s;
    nbi_hit_sink_init(&s, NBI_SINK_BUFFER, (int32_t *)(void *)out, capacity, NULL, NULL);
    s.positions = true; // positions, not the view's idx (posid, the same numbers): one array less
    const nbStatus st =
        center != NULL ? nbi_walk_radius(v, center, radius, f, &s) : nbi_walk_box(v, lo, hi, f, &s);
    if (st != NB_OK) return st;
    unsigned char *bytes = (unsigned char *)out;
    const nbHit *hits = NBI_ARR(h, hit, const nbHit); // (read once: `out` may alias anything)
    for (int32_t t = (s.found < capacity ? s.found : capacity) - 1; t >= 0; t--) {
        int32_t p;
        memcpy(&p, bytes + (size_t)t * sizeof(int32_t), sizeof p);
        const nbHit hit = hits[p];
        memcpy(bytes + (size_t)t * sizeof(nbHit), &hit, sizeof hit);
    }
    *found = s.found;
    return s.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

nbStatus nb_hash_query_radius(const nbHash *hash, const double *center, double radius,
                              nbFilter filter, nbHit *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (hash == NULL || center == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    return nbi_hash_range_buffer(hash, center, radius, NULL, NULL, filter, out, capacity, found);
}

nbStatus nb_hash_visit_radius(const nbHash *hash, const double *center, double radius,
                              nbFilter filter, nbHitFn *visit, void *user)
{
    if (hash == NULL || center == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiHashHits x = {hash, NULL, 0, 0, -1, visit, user};
    return nbi_hash_range(hash, center, radius, NULL, NULL, filter, &x);
}

nbStatus nb_hash_query_box(const nbHash *hash, const nbBox *box, nbFilter filter, nbHit *out,
                           int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (hash == NULL || box == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    return nbi_hash_range_buffer(hash, NULL, 0.0, box->min, box->max, filter, out, capacity, found);
}

nbStatus nb_hash_visit_box(const nbHash *hash, const nbBox *box, nbFilter filter, nbHitFn *visit,
                           void *user)
{
    if (hash == NULL || box == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiHashHits x = {hash, NULL, 0, 0, -1, visit, user};
    return nbi_hash_range(hash, NULL, 0.0, box->min, box->max, filter, &x);
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
                                 nbHit *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (hash == NULL || found == NULL || (out == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    nbiHashHits x = {hash, out, capacity, 0, -1, NULL, NULL};
    return nbi_hash_finish(nbi_hash_neighbors(hash, item, radius, filter, &x), &x, found);
}

nbStatus nb_hash_visit_neighbors(const nbHash *hash, nbHandle item, double radius, nbFilter filter,
                                 nbHitFn *visit, void *user)
{
    if (hash == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiHashHits x = {hash, NULL, 0, 0, -1, visit, user};
    return nbi_hash_neighbors(hash, item, radius, filter, &x);
}

// The view kNN walks: items named by slot, so that equal distances are ordered by the lower
// slot (insertion order on a fresh hash), not by where the items happen to be stored.
static nbiView nbi_hash_knn_view(const nbHash *h)
{
    nbiView v = nbi_hash_view(h);
    v.idx = NBI_ARR(h, idx, const int32_t);
    return v;
}

// Instructions a cell of a ring costs the walk in the hash (a lookup and its run), and a
// position of the scan it falls back on when the rings would cost more.
enum { NBI_HASH_KNN_CELL = 20, NBI_HASH_KNN_SCAN = 4 };

// Whether the query is one the walk serves badly: its own cell holds no item (outside the box of
// cells, or in empty space within it: a world with an outlier has a box mostly empty).
static bool nbi_hash_knn_far(const nbHash *h, const double *q)
{
    int64_t key[3];
    if (nbi_hash_key(h, q, key) != NB_OK) return false; // (the walker refuses it)
    const int32_t c = nbi_cell_find(h, key);
    return c < 0 || NBI_ARR(h, end, const int32_t)[c] == NBI_ARR(h, start, const int32_t)[c];
}

// The instructions the kNN index would have saved the walk that found the k-th best at squared
// distance d2k from the far query q: beyond the box, the model of nbi_knn_far_saving; within it,
// the rings out to that distance (a cube of cells), or the walk's budget (twice the cells) and
// a scan of every position where the cube holds more.
static double nbi_hash_knn_saving(const nbHash *h, const nbiView *v, const double *q, int32_t k,
                                  double d2k)
{
    const double beyond = nbi_knn_far_saving(v, q, k);
    if (beyond > 0.0) return beyond;
    const double m = sqrt(d2k) / h->cm.cell + 1.0;
    double cells = 1.0;
    for (int a = 0; a < h->dim; a++) cells *= 2.0 * m + 1.0;
    const double budget = 2.0 * (double)v->ncells + 64.0;
    const double walk = cells <= budget
                            ? cells * NBI_HASH_KNN_CELL
                            : budget * NBI_HASH_KNN_CELL + (double)h->cap * NBI_HASH_KNN_SCAN;
    return walk - (NBI_KNN_DESCENT_COST + (double)NBI_KNN_DESCENT_K * (double)k);
}

// The k nearest items as slots into out (k entries), sorted: by the walk, or for a far query
// (nbi_hash_knn_far) through the kNN index when it is ready; a far query's walk is charged to
// the index's debt (nbi_knn_index_charge), so that a run of far queries between changes builds
// it once their walks would have paid for it.
NBI_INLINE nbStatus nbi_hash_knn_run(const nbHash *h, const double *point, nbFilter f,
                                     double max_distance, nbNeighbor *out, int32_t k, int32_t *n)
{
    const nbiView v = nbi_hash_knn_view(h);
    nbiKnnLazy *z = (nbiKnnLazy *)&h->knn; // (atomics: safe from concurrent queries)
    const nbiKnnIndex *ix = nbi_knn_index_ready(z);
    if (ix != NULL && k > 0 && nbi_hash_knn_far(h, point)) {
        // The walker checks the arguments (with k = 0 it finds nothing); an open filter or
        // per-item bits are what the index searches with.
        const nbStatus st = nbi_walk_knn(&v, point, f, max_distance, out, k < 0 ? k : 0, n);
        if (st != NB_OK || (v.cat == NULL && !nbi_filter_open(f))) return st;
        *n = nbi_knn_index_query(ix, point, f, max_distance, out, k);
        return NB_OK;
    }
    const nbStatus st = nbi_walk_knn(&v, point, f, max_distance, out, k, n);
    // Priced after the walk, by the k-th found (a limit or a filter may have stopped the walk
    // sooner, which prices it lower, never higher): within two cells it was cheap.
    const double near = 2.0 * h->cm.cell;
    if (st == NB_OK && *n > 0 && out[*n - 1].dist2 > near * near && nbi_hash_knn_far(h, point)) {
        const double saving = nbi_hash_knn_saving(h, &v, point, k, out[*n - 1].dist2);
        nbi_knn_index_charge(z, &v, &h->alloc, h->count > 0 ? v.start[v.ncells] : 0, saving);
    }
    return st;
}

nbStatus nb_hash_knn(const nbHash *hash, const double *point, nbFilter filter, double max_distance,
                     nbHitNeighbor *out, int32_t k, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (hash == NULL || point == NULL || found == NULL || (out == NULL && k > 0))
        return NB_ERR_NULL_ARG;
    // The search keeps its heap of (slot, dist2) in the caller's buffer, which is larger per
    // entry (sizeof(nbHitNeighbor) >= sizeof(nbNeighbor), both 8-aligned); the answers are
    // then widened in place from the last to the first, each read before it is overwritten.
    int32_t n = 0;
    const nbStatus st =
        nbi_hash_knn_run(hash, point, filter, max_distance, (nbNeighbor *)(void *)out, k, &n);
    if (st != NB_OK) return st;
    unsigned char *bytes = (unsigned char *)out;
    for (int32_t i = n - 1; i >= 0; i--) {
        nbNeighbor nb;
        memcpy(&nb, bytes + (size_t)i * sizeof(nbNeighbor), sizeof nb);
        const nbHitNeighbor wide = {nbi_hash_hit(hash, nbi_pool_slot_value(&hash->pool, nb.index)),
                                    nb.dist2};
        memcpy(bytes + (size_t)i * sizeof(nbHitNeighbor), &wide, sizeof wide);
    }
    *found = n;
    return NB_OK;
}

// nb_hash_visit_knn's callback: a slot's neighbour handed on as the item's hit.
typedef struct nbiHashKnnVisit {
    const nbHash *h;
    nbHitNeighborFn *fn;
    void *user;
} nbiHashKnnVisit;

static bool nbi_hash_on_neighbor(int32_t slot, double dist2, void *ctx)
{
    const nbiHashKnnVisit *x = (const nbiHashKnnVisit *)ctx;
    return x->fn(nbi_hash_hit(x->h, nbi_pool_slot_value(&x->h->pool, slot)), dist2, x->user);
}

nbStatus nb_hash_visit_knn(const nbHash *hash, const double *point, nbFilter filter,
                           double max_distance, int32_t k, nbHitNeighborFn *visit, void *user)
{
    if (hash == NULL || point == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    const nbiView v = nbi_hash_knn_view(hash);
    int32_t n = 0;
    nbStatus st = nbi_walk_knn(&v, point, filter, max_distance, NULL, k < 0 ? k : 0, &n);
    if (st != NB_OK) return st; // (the arguments, checked before anything is allocated)
    nbNeighbor stack[NB_KNN_STACK];
    nbNeighbor *heap = stack;
    const int32_t want = k < hash->count ? k : hash->count;
    if (want > NB_KNN_STACK) {
        heap = (nbNeighbor *)nbi_alloc(&hash->alloc, (size_t)want, sizeof *heap);
        if (heap == NULL) return NB_ERR_OUT_OF_MEMORY;
    }
    st = nbi_hash_knn_run(hash, point, filter, max_distance, heap, k, &n);
    nbiHashKnnVisit x = {hash, visit, user};
    for (int32_t i = 0; st == NB_OK && i < n; i++)
        if (!nbi_hash_on_neighbor(heap[i].index, heap[i].dist2, &x)) break;
    if (heap != stack) nbi_free(&hash->alloc, heap, (size_t)want, sizeof *heap);
    return st;
}

// ---- pairs ----

// Pairs of slots turned into pairs of hits, into the caller's buffer or visitor.
typedef struct nbiHashPairs {
    const nbHash *h;
    nbHitPair *out;
    int64_t cap, n;
    nbHitPairFn *fn;
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
    const nbHit ha = nbi_hash_hit(x->h, a), hb = nbi_hash_hit(x->h, b);
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

nbStatus nb_hash_pairs(const nbHash *hash, double radius, nbHitPair *out, int64_t capacity,
                       int64_t *found)
{
    if (found != NULL) *found = 0;
    if (hash == NULL || found == NULL || (out == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    const nbStatus st = nbi_check_pairs(radius, capacity);
    if (st != NB_OK) return st;
    // The kernels write (slot, slot) pairs straight into the front of the caller's buffer, as
    // for the grid (no callback per pair); each is then widened in place into an nbHitPair,
    // from the last to the first: pair t is read before anything overwrites it, since
    // sizeof(nbHitPair) > sizeof(nbPair) puts every later write at or after its own bytes.
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
        const nbHitPair wide = {nbi_hash_hit(hash, p.i), nbi_hash_hit(hash, p.j)};
        memcpy(bytes + (size_t)t * sizeof(nbHitPair), &wide, sizeof wide);
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

nbStatus nb_hash_visit_pairs(const nbHash *hash, double radius, nbHitPairFn *visit, void *user)
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
    const int32_t *end = NBI_ARR(h, end, const int32_t);
    for (int32_t c = 0; c < h->ncells && !x->stop; c++) {
        for (int32_t p = v.start[c]; p < end[c] && !x->stop; p++) {
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
                             nbHitPair *out, int64_t capacity, int64_t *found)
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
                                   uint32_t mask_b, nbHitPairFn *visit, void *user)
{
    if (hash == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiHashPairs x = {hash, NULL, 0, 0, visit, user, false, false};
    return nbi_hash_cross_run(hash, radius, mask_a, mask_b, 0, &x);
}

// ---- validate ----

void nbi_hash_stats(const nbHash *hash, nbiHashStats *out)
{
    out->relayouts = hash->relayouts;
    out->renumbers = hash->renumbers;
    out->dense = hash->dense;
    out->cells = hash->ncells;
    out->max_slack = 0;
    out->slack = 0;
    const int32_t *start = NBI_ARR(hash, start, const int32_t);
    const int32_t *end = NBI_ARR(hash, end, const int32_t);
    for (int32_t c = 0; c < hash->ncells; c++) {
        const int32_t s = start[c + 1] - end[c];
        out->max_slack = s > out->max_slack ? s : out->max_slack;
        out->slack += s;
    }
}

nbStatus nb_hash_validate(const nbHash *hash)
{
    if (hash == NULL) return NB_ERR_NULL_ARG;
    const nbHash *h = hash;
    NBI_CHECK(h->dim == 2 || h->dim == 3);
    NBI_CHECK(isfinite(h->cm.cell) && h->cm.cell > 0.0);
    NBI_CHECK(nbi_pool_validate(&h->pool) == NB_OK);
    NBI_CHECK(nbi_pool_count(&h->pool) == h->count && h->count >= 0);
    NBI_CHECK(h->cap >= 0 && h->cell_of.cap >= h->pool.slots.cap);
    nbiView fresh;
    nbi_hash_view_fill(h, &fresh);
    NBI_CHECK(nbi_view_same(&h->view, &fresh));
    nbiBuf *buf[NBI_POS_BUFS];
    size_t elem[NBI_POS_BUFS];
    nbi_pos_bufs((nbHash *)h, buf, elem);
    for (int b = 0; b < NBI_POS_BUFS; b++) NBI_CHECK((size_t)h->cap <= buf[b]->cap);
    const int32_t *posid = NBI_ARR(h, posid, const int32_t);
    for (int32_t p = 0; p < h->cap; p++) NBI_CHECK(posid[p] == p);
    if (h->count == 0) {
        NBI_CHECK(h->ncells == 0 && h->live_cells == 0 && h->dense && h->nfiltered == 0);
        return NB_OK;
    }
    NBI_CHECK(h->ncells > 0 && (size_t)h->ncells + 1 <= h->start.cap);
    NBI_CHECK((size_t)h->ncells <= h->end.cap && (size_t)h->ncells + 1 <= h->nstart.cap &&
              (size_t)h->ncells <= h->nend.cap);
    if (h->dense) {
        int64_t cells = 1;
        for (int a = 0; a < 3; a++) {
            NBI_CHECK(h->lo[a] <= h->hi[a] && h->ext[a] == h->hi[a] - h->lo[a] + 1);
            NBI_CHECK(a < h->dim || h->lo[a] == 0);
            cells *= h->ext[a];
        }
        NBI_CHECK(cells == h->ncells && h->table.count == 0);
    } else {
        NBI_CHECK(nbi_ctab_validate(&h->table) && h->table.count <= h->ncells);
        NBI_CHECK((size_t)h->ncells <= h->keys.cap);
    }
    const int32_t *start = NBI_ARR(h, start, const int32_t), *end = NBI_ARR(h, end, const int32_t);
    const int32_t *idx = NBI_ARR(h, idx, const int32_t);
    const double *pts = NBI_ARR(h, pts, const double);
    const uint32_t *cat = NBI_ARR(h, cat, const uint32_t), *mask = NBI_ARR(h, mask, const uint32_t);
    NBI_CHECK(start[0] == 0 && start[h->ncells] <= h->cap);
    int64_t items = 0, nfiltered = 0;
    int32_t live = 0, indexed = 0;
    for (int32_t c = 0; c < h->ncells; c++) {
        NBI_CHECK(start[c] <= end[c] && end[c] <= start[c + 1]);
        int64_t k[3];
        nbi_cell_key(h, c, k);
        for (int a = 0; a < 3; a++) NBI_CHECK(k[a] >= h->lo[a] && k[a] <= h->hi[a]);
        // A hashed cell is found at its key, or is an empty number left by nbi_cell_renumber,
        // whose key leads to a later number with the same key.
        const int32_t at = nbi_cell_find(h, k);
        indexed += at == c;
        if (at != c) {
            NBI_CHECK(!h->dense && end[c] == start[c] && at > c);
            int64_t ka[3];
            nbi_cell_key(h, at, ka);
            NBI_CHECK(ka[0] == k[0] && ka[1] == k[1] && ka[2] == k[2]);
        }
        live += end[c] > start[c];
        for (int32_t p = start[c]; p < end[c]; p++) {
            const int32_t s = idx[p];
            NBI_CHECK(s >= 0 && s < h->pool.used);
            NBI_CHECK(nbi_pool_handle_of(&h->pool, s).bits ==
                      NBI_ARR(h, hit, const nbHit)[p].handle.bits);
            NBI_CHECK(nbi_pool_slot_value(&h->pool, s) == p);
            NBI_CHECK(NBI_ARR(h, cell_of, const int32_t)[s] == c);
            for (int a = 0; a < h->dim; a++) {
                const double x = pts[(size_t)p * (size_t)h->dim + (size_t)a];
                NBI_CHECK(isfinite(x) && fabs(x) <= h->max_abs);
                NBI_CHECK(nbi_cell_f(&h->cm, x) == (double)k[a]);
            }
            nfiltered += !nbi_filter_all_bits(cat[p], mask[p]);
            items++;
        }
        for (int32_t p = end[c]; p < start[c + 1]; p++) {
            NBI_CHECK(idx[p] == -1);
            for (int a = 0; a < h->dim; a++) NBI_CHECK(isnan(pts[(size_t)p * (size_t)h->dim + a]));
        }
    }
    NBI_CHECK(live == h->live_cells && items == h->count && nfiltered == h->nfiltered);
    NBI_CHECK(h->dense || h->table.count == indexed);
    return NB_OK;
}
