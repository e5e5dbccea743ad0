// SPDX-License-Identifier: MIT
// The tile grid (include/nearby/tiles.h): a bounded world of tiles, entities by group in
// per-(tile, group) blocks, static waypoints in one compact per-tile array.
//
// Filters. An entity's category is its group's bit, so a query's filter.mask picks the blocks
// to visit; the other half of the rule, filter.category & the entity's mask, is read per entity
// only while some entity has a mask other than all ones (nfiltered > 0).
//
// Tiles. A coordinate's tile on tiled axis t is floor((x - origin[t]) * inv[t]) clamped to
// [0, count[t] - 1]. Every step is monotone in x (rounding is monotone, and so are floor and
// the clamp), and that is all exactness needs: a stored point p with |p - q| <= reach on an
// axis has q - reach <= p <= q + reach there, hence (monotone) a tile between those of the
// rounded ends. The clamp is what puts outside positions into the edge tiles; it is monotone
// too, so one rule covers points inside and outside the world, askers and entities alike. The
// queries never reason about a tile's nominal box: the range of tiles a query must see is
// always the tiles of [q - reach, q + reach], reach = nbi_reach(r) (the largest true distance
// the double test d2 <= r*r can accept).
//
// Nearest (and knn) search rings of tiles around the asker's (clamped) tile. After each ring
// the tiles visited form a box; with the k-th best so far at dist2 w, anything that could still
// enter the answer has dist2 <= w, so it is accepted by the test at a radius rw with
// fl(rw * rw) >= w, so it lies within reach(rw) of the asker. Once the tiles that can hold such
// a point are inside the visited box the search stops. Those tiles are measured against boxes
// that hold the points, not against the tiles (whose edges reach out to infinity at the
// world's edges): the world's box holds every point not beyond it, and per side a box holds
// those beyond it (nbiTilesBeyond). From an asker outside a box by g[0] on one axis and g[1]
// on the other, a point of the box within reach lies within sqrt(reach^2 - g[1]^2) - g[0] of
// the box's nearest edge on the first axis (likewise the second; nbi_tile_range_box), so an
// asker far off a corner of the world sees only the tiles at that corner, where the plain range
// q +- reach would take in every edge tile and so every tile between. The points within the
// world are searched in the tiles the world's box allows (in the edge tiles, only those within
// the world: nbi_keep), then those beyond each side in the edge tiles that side's box allows,
// so that each point is offered once. Radius queries take the same ranges.
//
// Entities. Block b = tile * groups + group holds the entities of that group in that tile at
// arena positions [start[b], end[b]), inside a power-of-two block of 2^cls[b] positions (cls
// -1: no block, start == end == 0). Per position: the coordinates (dim doubles, inline, read by
// the query loops) and the entity's slot. Per slot (the handle pool's value is the position):
// its block, its user value and its mask. A full block moves to one twice as large; blocks given up
// go onto a free list per size and are taken before the arena's end, so entities wandering the
// world reach a steady state in which the arena stops growing (the spatial hash's scheme).
// Remove: the block's last entity fills the hole (its slot learns its new position). Everything
// that may allocate is made room for first (nbi_tiles_room), so failures change nothing.
//
// Waypoints: wstart[tile] .. wstart[tile + 1] are tile's waypoints in wpts / wnum (their
// number = the order added, which orders ties), rebuilt by count, prefix sum and scatter on
// each add call; wid holds their ids by number.
//
// Invariants (nb_tiles_validate): the pool's own; count == live handles == entities in blocks;
// nfiltered == live entities whose mask is not all ones;
// a block with cls >= 0 lies inside [0, top) and 0 < end - start <= 2^cls; every position in it
// holds a live slot whose pool value is that position, whose block is b and whose coordinates
// are finite and map to b's tile; blocks of cls -1 are empty; live blocks plus free blocks
// cover [0, top) exactly; wstart rises from 0 to nwp and every waypoint maps to its tile.
#include <nearby/tiles.h>

#include "block_arena.h"
#include "handle_pool.h"
#include "knn_heap.h"
#include "view.h"

#include <string.h>

enum { NBI_TILES_MAX_ITEMS = 1 << 28 };

// The points (entities or waypoints) beyond the world's box, by the first side they lie beyond
// in the order x low, x high, y low, y high (nbi_side; tiled axes): n[s] of them, all within the
// box [lo[s], hi[s]], which grows as they come and is emptied (+inf, -inf) when the last of
// side s leaves, so that the bound shrinks back once the world's edges are clear again.
typedef struct nbiTilesBeyond {
    int32_t n[4];
    int32_t any; // n[0] + n[1] + n[2] + n[3]
    double lo[4][2], hi[4][2];
} nbiTilesBeyond;

// Which points a scan of a tile offers (nbi_keep): every one, those within the world's box, or
// those beyond side s (NBI_KEEP_SIDE + s).
enum { NBI_KEEP_ALL = -2, NBI_KEEP_INSIDE = -1, NBI_KEEP_SIDE = 0 };

struct nbTiles {
    nbAllocator alloc;
    int32_t dim;
    int32_t ax[2];    // the tiled coordinate axes
    int32_t nt[2];    // tiles per tiled axis
    int32_t ntiles;   // nt[0] * nt[1]
    int32_t groups;   // 1 .. 32
    uint32_t all;     // the bits of the existing groups
    double origin[2]; // the world's low corner on the tiled axes
    double edge[2];   // tile edges
    double inv[2];    // 1 / edge: the tile map multiplies (any monotone map would do)
    int32_t count;
    int32_t nfiltered; // entities whose mask is not all ones: 0 lets queries skip the masks

    // What the searches measure an asker's distance to (nbi_tile_range_box): the world's box
    // [wlo, whi] on the tiled axes (origin, origin + tiles * edge), which holds every entity and
    // waypoint not beyond it, and per side the box of those beyond it (nbiTilesBeyond).
    double wlo[2], whi[2];
    nbiTilesBeyond eb, wb; // the entities', the waypoints'

    nbiPool pool; // handles; a slot's value is its entity's position
    nbiBuf key;   // int32_t per slot: its block
    nbiBuf user;  // uint64_t per slot
    nbiBuf mask;  // uint32_t per slot: what the entity wants to find

    nbiBuf pts;     // double, dim per position
    nbiBuf idx;     // int32_t per position: the slot there (a free block: the next free block)
    nbiArena arena; // the blocks of positions (block_arena.h), free ones linked through idx

    nbiBuf start, end; // int32_t per block (ntiles * groups), made at create
    nbiBuf cls;        // int8_t per block
    nbiBuf occ;        // uint32_t per tile: bit g set when block (tile, g) holds entities

    int32_t nwp;
    nbiBuf wstart; // int32_t, ntiles + 1, made at create
    nbiBuf wpts;   // double, dim per waypoint, tile by tile
    nbiBuf wid;    // uint64_t per waypoint, by number
    nbiBuf wnum;   // int32_t per waypoint: its number
};

#define NBI_ARR(t, buf, type) ((type *)(t)->buf.ptr)

// ---- tile math ----

// The tile on tiled axis a of coordinate x (any double; +-inf clamp to the edges):
// floor(v) clamped to [0, n - 1] is 0 for v < 1 and n - 1 for v >= n - 1; in between it is the
// truncation, so no floor() call is needed.
NBI_INLINE int32_t nbi_tile_axis(const nbTiles *t, int a, double x)
{
    const double v = (x - t->origin[a]) * t->inv[a];
    if (!(v > 0.0)) return 0; // also -inf
    return v < (double)(t->nt[a] - 1) ? (int32_t)v : t->nt[a] - 1;
}

static int32_t nbi_tile_of(const nbTiles *t, const double *pos)
{
    return nbi_tile_axis(t, 0, pos[t->ax[0]]) + t->nt[0] * nbi_tile_axis(t, 1, pos[t->ax[1]]);
}

// The box of tiles a query must see around q for true distances up to `reach` (>= 0, maybe
// infinite): the tiles of [q - reach, q + reach] per tiled axis.
static void nbi_tile_range(const nbTiles *t, const double *q, double reach, int32_t lo[2],
                           int32_t hi[2])
{
    for (int a = 0; a < 2; a++) {
        const double x = q[t->ax[a]];
        lo[a] = nbi_tile_axis(t, a, x - reach);
        hi[a] = nbi_tile_axis(t, a, x + reach);
    }
}

// The box of tiles [lo, hi] that can hold a point within true distance `reach` (>= 0, maybe
// infinite) of q, for points that lie in the box [blo, bhi] on the tiled axes. Per tiled axis
// a, with c the asker moved into the box and g its gaps (a point p of the box has
// |p_a - q_a| = g_a + |p_a - c_a|): the tiles of [c_a - e_a, c_a + e_a], where
// (g_a + e_a)^2 + g_b^2 = reach^2, b the other axis. Each step is over-estimated through its
// rounding: g and g_b^2 rounded down, reach^2 and the difference and the root rounded up (each
// by 2^-50 of itself: one correctly rounded operation errs by 2^-53), plus 2^-520 for squares
// that underflow (their root's error). False, and an empty range, when no point of the box can
// be that near. An asker inside the box (both gaps zero) gets the plain tiles of q +- reach;
// one outside it no more than the tiles of the box.
static bool nbi_tile_range_box(const nbTiles *t, const double *q, double reach, const double *blo,
                               const double *bhi, int32_t lo[2], int32_t hi[2])
{
    double c[2], g[2];
    for (int a = 0; a < 2; a++) {
        const double x = q[t->ax[a]];
        c[a] = x < blo[a] ? blo[a] : x > bhi[a] ? bhi[a] : x;
        g[a] = fabs(x - c[a]) * (1.0 - 0x1p-50);
    }
    const double r2 = reach * reach * (1.0 + 0x1p-50);
    if ((g[0] == 0.0 && g[1] == 0.0) || !(r2 < (double)INFINITY)) {
        nbi_tile_range(t, q, reach, lo, hi);
        return true;
    }
    for (int a = 0; a < 2; a++) {
        const double gb = g[1 - a] * g[1 - a] * (1.0 - 0x1p-50);
        const double room = (r2 - gb) * (1.0 + 0x1p-50); // a negative one stays negative
        const double e = room >= 0.0 ? sqrt(room) * (1.0 + 0x1p-50) - g[a] : -1.0;
        if (!(e >= 0.0)) {
            lo[0] = lo[1] = 1;
            hi[0] = hi[1] = 0;
            return false;
        }
        const double ee = e * (1.0 + 0x1p-50) + 0x1p-520;
        // and no farther than the box's own tiles (the map is monotone: a point of the box
        // lies in a tile between those of its edges)
        const int32_t blo_t = nbi_tile_axis(t, a, blo[a]), bhi_t = nbi_tile_axis(t, a, bhi[a]);
        lo[a] = nbi_tile_axis(t, a, c[a] - ee);
        hi[a] = nbi_tile_axis(t, a, c[a] + ee);
        lo[a] = lo[a] > blo_t ? lo[a] : blo_t;
        hi[a] = hi[a] < bhi_t ? hi[a] : bhi_t;
    }
    return true;
}

// The first side of the world's box that the point p lies beyond (0 x low, 1 x high, 2 y low,
// 3 y high, on the tiled axes), or -1 within it.
NBI_INLINE int nbi_side(const nbTiles *t, const double *p)
{
    const double x = p[t->ax[0]], y = p[t->ax[1]];
    return x < t->wlo[0] ? 0 : x > t->whi[0] ? 1 : y < t->wlo[1] ? 2 : y > t->whi[1] ? 3 : -1;
}

// Whether a scan in `mode` (NBI_KEEP_*) offers the point p.
NBI_INLINE bool nbi_keep(const nbTiles *t, int mode, const double *p)
{
    return mode == NBI_KEEP_ALL || nbi_side(t, p) == mode;
}

// No point beyond the world's box.
static void nbi_beyond_reset(nbiTilesBeyond *b)
{
    b->any = 0;
    for (int s = 0; s < 4; s++) {
        b->n[s] = 0;
        b->lo[s][0] = b->lo[s][1] = (double)INFINITY;
        b->hi[s][0] = b->hi[s][1] = -(double)INFINITY;
    }
}

// Counts the point p in (sign 1) or out (-1) of b: one counted in widens its side's box to hold
// it; when the last of a side is counted out, that side's box is emptied.
static void nbi_beyond(const nbTiles *t, nbiTilesBeyond *b, const double *p, int sign)
{
    const int s = nbi_side(t, p);
    if (s < 0) return;
    b->n[s] += sign;
    b->any += sign;
    if (b->n[s] == 0) {
        b->lo[s][0] = b->lo[s][1] = (double)INFINITY;
        b->hi[s][0] = b->hi[s][1] = -(double)INFINITY;
        return;
    }
    for (int a = 0; sign > 0 && a < 2; a++) {
        const double x = p[t->ax[a]];
        b->lo[s][a] = x < b->lo[s][a] ? x : b->lo[s][a];
        b->hi[s][a] = x > b->hi[s][a] ? x : b->hi[s][a];
    }
}

// Part `part` of a search within `reach` of q over the points b counts beyond the world: the
// range of tiles it must scan and what to offer there (*mode). Part 0 the points within the
// world's box (every point when none lies beyond it), part 1 + s those beyond side s. False,
// with an empty range, when the part can hold nothing so near (or nothing at all).
static bool nbi_part_range(const nbTiles *t, const nbiTilesBeyond *b, int part, const double *q,
                           double reach, int32_t lo[2], int32_t hi[2], int *mode)
{
    if (part == 0) {
        *mode = b->any > 0 ? NBI_KEEP_INSIDE : NBI_KEEP_ALL;
        return nbi_tile_range_box(t, q, reach, t->wlo, t->whi, lo, hi);
    }
    *mode = NBI_KEEP_SIDE + part - 1;
    if (b->n[part - 1] == 0) {
        lo[0] = lo[1] = 1;
        hi[0] = hi[1] = 0;
        return false;
    }
    return nbi_tile_range_box(t, q, reach, b->lo[part - 1], b->hi[part - 1], lo, hi);
}

static bool nbi_finite(const double *p, int dim)
{
    for (int a = 0; a < dim; a++)
        if (!isfinite(p[a])) return false;
    return true;
}

// ---- storage ----

enum { NBI_PER_SLOT, NBI_PER_POSITION };
enum { NBI_TILES_BUFS = 5 };

static void nbi_tiles_bufs(nbTiles *t, nbiBuf *buf[NBI_TILES_BUFS], size_t elem[NBI_TILES_BUFS],
                           int kind[NBI_TILES_BUFS])
{
    buf[0] = &t->key;
    elem[0] = sizeof(int32_t);
    kind[0] = NBI_PER_SLOT;
    buf[1] = &t->user;
    elem[1] = sizeof(uint64_t);
    kind[1] = NBI_PER_SLOT;
    buf[2] = &t->pts;
    elem[2] = sizeof(double) * (size_t)t->dim;
    kind[2] = NBI_PER_POSITION;
    buf[3] = &t->idx;
    elem[3] = sizeof(int32_t);
    kind[3] = NBI_PER_POSITION;
    buf[4] = &t->mask;
    elem[4] = sizeof(uint32_t);
    kind[4] = NBI_PER_SLOT;
}

// Makes room for `items` more entities and `positions` more arena positions, all or nothing.
static nbStatus nbi_tiles_room(nbTiles *t, int32_t items, int64_t positions)
{
    if ((int64_t)t->count + items > NBI_TILES_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    const int64_t top = (int64_t)t->arena.top + positions;
    if (top > INT32_MAX) return NB_ERR_OUT_OF_RANGE;
    nbiBuf *cur[NBI_TILES_BUFS];
    size_t elem[NBI_TILES_BUFS];
    int kind[NBI_TILES_BUFS];
    nbi_tiles_bufs(t, cur, elem, kind);
    bool room = nbi_pool_room(&t->pool) >= items;
    const size_t now[2] = {t->pool.slots.cap, (size_t)top};
    for (int b = 0; b < NBI_TILES_BUFS && room; b++) room = now[kind[b]] <= cur[b]->cap;
    if (room) return NB_OK;
    nbiPoolPrep prep;
    const nbStatus st = nbi_pool_prepare(&t->pool, items, &prep);
    if (st != NB_OK) return st;
    const size_t per_kind[2] = {prep.next.cap, (size_t)top};
    size_t size[NBI_TILES_BUFS];
    for (int b = 0; b < NBI_TILES_BUFS; b++) size[b] = per_kind[kind[b]];
    nbiBuf next[NBI_TILES_BUFS];
    if (!nbi_bufs_prepare(&t->alloc, cur, next, size, elem, NBI_TILES_BUFS)) {
        nbi_pool_abandon(&t->pool, &prep);
        return NB_ERR_OUT_OF_MEMORY;
    }
    nbi_pool_commit(&t->pool, &prep);
    nbi_bufs_commit(&t->alloc, cur, next, elem, NBI_TILES_BUFS, true);
    return NB_OK;
}

static int64_t nbi_block_need(const nbTiles *t, int k)
{
    return nbi_arena_need(&t->arena, k, 0);
}

static int32_t nbi_block_take(nbTiles *t, int k)
{
    return nbi_arena_take(&t->arena, NBI_ARR(t, idx, int32_t), k);
}

static void nbi_block_give(nbTiles *t, int32_t b, int k)
{
    nbi_arena_give(&t->arena, NBI_ARR(t, idx, int32_t), b, k);
}

// Arena positions appending one entity to block b needs (a first block, or a larger one).
static int64_t nbi_place_need(const nbTiles *t, int32_t b)
{
    const int k = NBI_ARR(t, cls, const int8_t)[b];
    if (k < 0) return nbi_block_need(t, 0);
    const int32_t n = NBI_ARR(t, end, const int32_t)[b] - NBI_ARR(t, start, const int32_t)[b];
    return n == 1 << k ? nbi_block_need(t, k + 1) : 0;
}

static void nbi_item_copy(nbTiles *t, int32_t from, int32_t to)
{
    const size_t d = (size_t)t->dim;
    double *pts = NBI_ARR(t, pts, double);
    int32_t *idx = NBI_ARR(t, idx, int32_t);
    memcpy(pts + (size_t)to * d, pts + (size_t)from * d, d * sizeof(double));
    idx[to] = idx[from];
    nbi_pool_set_slot_value(&t->pool, idx[to], to);
}

// Appends the entity of `slot` at `pos` to block b (room already made).
static void nbi_block_append(nbTiles *t, int32_t b, int32_t slot, const double *pos)
{
    int32_t *start = NBI_ARR(t, start, int32_t), *end = NBI_ARR(t, end, int32_t);
    int8_t *cls = NBI_ARR(t, cls, int8_t);
    if (cls[b] < 0) {
        start[b] = end[b] = nbi_block_take(t, 0);
        cls[b] = 0;
        NBI_ARR(t, occ, uint32_t)[b / t->groups] |= 1u << (b % t->groups);
    } else if (end[b] - start[b] == 1 << cls[b]) { // full: move to a block twice as large
        const int32_t n = end[b] - start[b], nb = nbi_block_take(t, cls[b] + 1);
        for (int32_t i = 0; i < n; i++) nbi_item_copy(t, start[b] + i, nb + i);
        nbi_block_give(t, start[b], cls[b]);
        start[b] = nb;
        end[b] = nb + n;
        cls[b]++;
    }
    const int32_t p = end[b]++;
    memcpy(NBI_ARR(t, pts, double) + (size_t)p * (size_t)t->dim, pos,
           (size_t)t->dim * sizeof(double));
    NBI_ARR(t, idx, int32_t)[p] = slot;
    NBI_ARR(t, key, int32_t)[slot] = b;
    nbi_pool_set_slot_value(&t->pool, slot, p);
}

// Takes the entity at position p out of block b; the block's last entity fills the hole, and
// an emptied block goes back to its free list.
static void nbi_block_take_out(nbTiles *t, int32_t b, int32_t p)
{
    int32_t *start = NBI_ARR(t, start, int32_t), *end = NBI_ARR(t, end, int32_t);
    const int32_t last = --end[b];
    if (p != last) nbi_item_copy(t, last, p);
    if (end[b] > start[b]) return;
    int8_t *cls = NBI_ARR(t, cls, int8_t);
    nbi_block_give(t, start[b], cls[b]);
    start[b] = end[b] = 0;
    cls[b] = -1;
    NBI_ARR(t, occ, uint32_t)[b / t->groups] &= ~(1u << (b % t->groups));
}

// ---- lifetime ----

static size_t nbi_blocks(const nbTiles *t)
{
    return (size_t)t->ntiles * (size_t)t->groups;
}

nbStatus nb_tiles_create(const nbTilesDesc *desc, nbTiles **out)
{
    if (out == NULL) return NB_ERR_NULL_ARG;
    *out = NULL;
    if (desc == NULL) return NB_ERR_NULL_ARG;
    nbAllocator a;
    if (!nbi_allocator(desc->allocator, &a)) return NB_ERR_NULL_ARG;
    for (int i = 0; i < 2; i++) {
        if (!isfinite(desc->origin[i]) || !isfinite(desc->size[i])) return NB_ERR_NOT_FINITE;
        if (desc->tile_count[i] == 0 && !isfinite(desc->tile_size[i])) return NB_ERR_NOT_FINITE;
        if (!isfinite(desc->origin[i] + desc->size[i])) return NB_ERR_NOT_FINITE;
    }
    const int32_t dim = desc->dim == 0 ? 2 : desc->dim;
    if (dim != 2 && dim != 3) return NB_ERR_OUT_OF_RANGE;
    int32_t ax[2] = {desc->axes[0], desc->axes[1]};
    if (ax[0] == 0 && ax[1] == 0) ax[1] = dim == 3 ? 2 : 1;
    if (ax[0] < 0 || ax[0] >= dim || ax[1] < 0 || ax[1] >= dim || ax[0] == ax[1])
        return NB_ERR_OUT_OF_RANGE;
    const int32_t groups = desc->groups == 0 ? 1 : desc->groups;
    if (groups < 1 || groups > NB_TILES_MAX_GROUPS) return NB_ERR_OUT_OF_RANGE;
    if (desc->capacity_hint < 0 || desc->capacity_hint > NBI_TILES_MAX_ITEMS)
        return NB_ERR_OUT_OF_RANGE;
    int32_t nt[2];
    double edge[2];
    for (int i = 0; i < 2; i++) {
        if (!(desc->size[i] > 0.0) || desc->tile_count[i] < 0) return NB_ERR_OUT_OF_RANGE;
        double n;
        if (desc->tile_count[i] > 0) {
            n = (double)desc->tile_count[i];
            edge[i] = desc->size[i] / n;
        } else {
            if (!(desc->tile_size[i] > 0.0)) return NB_ERR_OUT_OF_RANGE;
            edge[i] = desc->tile_size[i];
            n = ceil(desc->size[i] / edge[i]);
            n = n < 1.0 ? 1.0 : n;
        }
        // An edge whose reciprocal overflows (a subnormal edge) cannot be tiled.
        if (!(n <= NB_TILES_MAX_TILES) || !(edge[i] > 0.0) || !isfinite(1.0 / edge[i]))
            return NB_ERR_OUT_OF_RANGE;
        nt[i] = (int32_t)n;
    }
    const int64_t ntiles = (int64_t)nt[0] * nt[1];
    if (ntiles > NB_TILES_MAX_TILES || ntiles * groups > NB_TILES_MAX_TILE_GROUPS)
        return NB_ERR_OUT_OF_RANGE;

    nbTiles *t = (nbTiles *)nbi_alloc(&a, 1, sizeof(nbTiles));
    if (t == NULL) return NB_ERR_OUT_OF_MEMORY;
    memset(t, 0, sizeof *t);
    t->alloc = a;
    t->dim = dim;
    t->groups = groups;
    t->all = groups == 32 ? 0xFFFFFFFFu : (1u << groups) - 1u;
    t->ntiles = (int32_t)ntiles;
    for (int i = 0; i < 2; i++) {
        t->ax[i] = ax[i];
        t->nt[i] = nt[i];
        t->origin[i] = desc->origin[i];
        t->edge[i] = edge[i];
        t->inv[i] = 1.0 / edge[i];
        t->wlo[i] = desc->origin[i];
        t->whi[i] = desc->origin[i] + (double)nt[i] * edge[i]; // may be +inf: then never passed
    }
    nbi_beyond_reset(&t->eb);
    nbi_beyond_reset(&t->wb);
    nbi_pool_init(&t->pool, &a, NBI_TILES_MAX_ITEMS);
    nbi_arena_reset(&t->arena);
    const size_t blocks = nbi_blocks(t);
    t->start.ptr = nbi_alloc(&a, blocks, sizeof(int32_t));
    t->end.ptr = nbi_alloc(&a, blocks, sizeof(int32_t));
    t->cls.ptr = nbi_alloc(&a, blocks, sizeof(int8_t));
    t->wstart.ptr = nbi_alloc(&a, (size_t)ntiles + 1, sizeof(int32_t));
    t->occ.ptr = nbi_alloc(&a, (size_t)ntiles, sizeof(uint32_t));
    t->occ.cap = t->occ.ptr != NULL ? (size_t)ntiles : 0;
    t->start.cap = t->start.ptr != NULL ? blocks : 0;
    t->end.cap = t->end.ptr != NULL ? blocks : 0;
    t->cls.cap = t->cls.ptr != NULL ? blocks : 0;
    t->wstart.cap = t->wstart.ptr != NULL ? (size_t)ntiles + 1 : 0;
    if (t->start.ptr == NULL || t->end.ptr == NULL || t->cls.ptr == NULL || t->wstart.ptr == NULL ||
        t->occ.ptr == NULL) {
        nb_tiles_destroy(t);
        return NB_ERR_OUT_OF_MEMORY;
    }
    memset(t->start.ptr, 0, blocks * sizeof(int32_t));
    memset(t->end.ptr, 0, blocks * sizeof(int32_t));
    memset(t->cls.ptr, -1, blocks);
    memset(t->wstart.ptr, 0, ((size_t)ntiles + 1) * sizeof(int32_t));
    memset(t->occ.ptr, 0, (size_t)ntiles * sizeof(uint32_t));
    if (desc->capacity_hint > 0) {
        const nbStatus st = nb_tiles_reserve(t, desc->capacity_hint);
        if (st != NB_OK) {
            nb_tiles_destroy(t);
            return st;
        }
    }
    *out = t;
    return NB_OK;
}

void nb_tiles_destroy(nbTiles *tiles)
{
    if (tiles == NULL) return;
    nbTiles *t = tiles;
    nbiBuf *buf[NBI_TILES_BUFS];
    size_t elem[NBI_TILES_BUFS];
    int kind[NBI_TILES_BUFS];
    nbi_tiles_bufs(t, buf, elem, kind);
    for (int i = 0; i < NBI_TILES_BUFS; i++) nbi_free(&t->alloc, buf[i]->ptr, buf[i]->cap, elem[i]);
    nbi_free(&t->alloc, t->start.ptr, t->start.cap, sizeof(int32_t));
    nbi_free(&t->alloc, t->end.ptr, t->end.cap, sizeof(int32_t));
    nbi_free(&t->alloc, t->cls.ptr, t->cls.cap, sizeof(int8_t));
    nbi_free(&t->alloc, t->wstart.ptr, t->wstart.cap, sizeof(int32_t));
    nbi_free(&t->alloc, t->occ.ptr, t->occ.cap, sizeof(uint32_t));
    nbi_free(&t->alloc, t->wpts.ptr, t->wpts.cap, sizeof(double) * (size_t)t->dim);
    nbi_free(&t->alloc, t->wid.ptr, t->wid.cap, sizeof(uint64_t));
    nbi_free(&t->alloc, t->wnum.ptr, t->wnum.cap, sizeof(int32_t));
    nbi_pool_destroy(&t->pool);
    nbAllocator a = t->alloc;
    nbi_free(&a, t, 1, sizeof(nbTiles));
}

nbStatus nb_tiles_reserve(nbTiles *tiles, int32_t entities)
{
    if (tiles == NULL) return NB_ERR_NULL_ARG;
    if (entities < 0 || entities > NBI_TILES_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    // Inserting until the grid holds `entities` takes at most 4 new positions an entity: a block
    // growing to hold c entities takes blocks 1, 2, 4, ... up to the first >= c, fewer than 4c
    // positions in all (the blocks it leaves go to the free lists).
    const int32_t more = entities > tiles->count ? entities - tiles->count : 0;
    return nbi_tiles_room(tiles, more, 4 * (int64_t)more);
}

void nb_tiles_clear(nbTiles *tiles)
{
    if (tiles == NULL) return;
    nbi_pool_clear(&tiles->pool);
    const size_t blocks = nbi_blocks(tiles);
    memset(tiles->start.ptr, 0, blocks * sizeof(int32_t));
    memset(tiles->end.ptr, 0, blocks * sizeof(int32_t));
    memset(tiles->cls.ptr, -1, blocks);
    memset(tiles->occ.ptr, 0, tiles->occ.cap * sizeof(uint32_t));
    nbi_arena_reset(&tiles->arena);
    tiles->count = tiles->nfiltered = 0;
    nbi_beyond_reset(&tiles->eb);
}

int32_t nb_tiles_count(const nbTiles *tiles)
{
    return tiles != NULL ? tiles->count : 0;
}

int32_t nb_tiles_waypoint_count(const nbTiles *tiles)
{
    return tiles != NULL ? tiles->nwp : 0;
}

size_t nb_tiles_memory_bytes(const nbTiles *tiles)
{
    if (tiles == NULL) return 0;
    const nbTiles *t = tiles;
    const size_t d = (size_t)t->dim;
    return sizeof(nbTiles) + nbi_pool_memory_bytes(&t->pool) + t->key.cap * sizeof(int32_t) +
           t->user.cap * sizeof(uint64_t) + t->mask.cap * sizeof(uint32_t) +
           t->pts.cap * d * sizeof(double) + t->idx.cap * sizeof(int32_t) +
           t->start.cap * sizeof(int32_t) + t->end.cap * sizeof(int32_t) + t->cls.cap +
           t->wstart.cap * sizeof(int32_t) + t->occ.cap * sizeof(uint32_t) +
           t->wpts.cap * d * sizeof(double) + t->wid.cap * sizeof(uint64_t) +
           t->wnum.cap * sizeof(int32_t);
}

nbStatus nb_tiles_info(const nbTiles *tiles, nbTilesInfo *info)
{
    if (tiles == NULL || info == NULL) return NB_ERR_NULL_ARG;
    memset(info, 0, sizeof *info);
    info->dim = tiles->dim;
    info->count = tiles->count;
    info->waypoints = tiles->nwp;
    info->groups = tiles->groups;
    info->tiles = tiles->ntiles;
    for (int a = 0; a < 2; a++) {
        info->tile_count[a] = tiles->nt[a];
        info->edge[a] = tiles->edge[a];
        info->axes[a] = tiles->ax[a];
        info->origin[a] = tiles->origin[a];
    }
    info->bytes = nb_tiles_memory_bytes(tiles);
    return NB_OK;
}

// ---- entities ----

// The group a category names (one bit of an existing group), or -1.
static int32_t nbi_group_of(const nbTiles *t, uint32_t category)
{
    if (category == 0 || (category & (category - 1)) != 0 || (category & t->all) == 0) return -1;
    return nbi_ctz32(category);
}

static bool nbi_mask_all(uint32_t mask)
{
    return mask == 0xFFFFFFFFu;
}

nbStatus nb_tiles_insert(nbTiles *tiles, const double *pos, uint64_t user, nbFilter filter,
                         nbHandle *out)
{
    if (out != NULL) *out = NB_HANDLE_NULL;
    if (tiles == NULL || pos == NULL || out == NULL) return NB_ERR_NULL_ARG;
    nbTiles *t = tiles;
    if (!nbi_finite(pos, t->dim)) return NB_ERR_NOT_FINITE;
    const int32_t group = nbi_group_of(t, filter.category);
    if (group < 0) return NB_ERR_OUT_OF_RANGE;
    const int32_t b = nbi_tile_of(t, pos) * t->groups + group;
    const nbStatus st = nbi_tiles_room(t, 1, nbi_place_need(t, b));
    if (st != NB_OK) return st;
    nbHandle h;
    const nbStatus ast = nbi_pool_alloc(&t->pool, 0, &h);
    if (ast != NB_OK) { // cannot happen: room was made
        NB_ASSERT(!"pool alloc after room");
        return NB_ERR_INTERNAL;
    }
    int32_t slot;
    nbi_pool_lookup(&t->pool, h, &slot);
    NBI_ARR(t, user, uint64_t)[slot] = user;
    NBI_ARR(t, mask, uint32_t)[slot] = filter.mask;
    t->nfiltered += !nbi_mask_all(filter.mask);
    nbi_block_append(t, b, slot, pos);
    nbi_beyond(t, &t->eb, pos, 1);
    t->count++;
    *out = h;
    return NB_OK;
}

// Moves the entity of `slot` into block b at `pos` (b differs from its block).
static nbStatus nbi_tiles_rehome(nbTiles *t, int32_t slot, int32_t b, const double *pos)
{
    double keep[3]; // pos may point into the arena, which making room may move
    memcpy(keep, pos, (size_t)t->dim * sizeof(double));
    const nbStatus st = nbi_tiles_room(t, 0, nbi_place_need(t, b));
    if (st != NB_OK) return st;
    nbi_block_take_out(t, NBI_ARR(t, key, int32_t)[slot], nbi_pool_slot_value(&t->pool, slot));
    nbi_block_append(t, b, slot, keep);
    return NB_OK;
}

nbStatus nb_tiles_move(nbTiles *tiles, nbHandle entity, const double *pos)
{
    if (tiles == NULL || pos == NULL) return NB_ERR_NULL_ARG;
    nbTiles *t = tiles;
    int32_t slot;
    const nbStatus st = nbi_pool_lookup(&t->pool, entity, &slot);
    if (st != NB_OK) return st;
    if (!nbi_finite(pos, t->dim)) return NB_ERR_NOT_FINITE;
    const int32_t cur = NBI_ARR(t, key, const int32_t)[slot];
    const int32_t b = nbi_tile_of(t, pos) * t->groups + cur % t->groups;
    double *at =
        NBI_ARR(t, pts, double) + (size_t)nbi_pool_slot_value(&t->pool, slot) * (size_t)t->dim;
    if (b == cur) { // the common case: same tile, rewrite the coordinates only
        nbi_beyond(t, &t->eb, at, -1);
        nbi_beyond(t, &t->eb, pos, 1);
        memcpy(at, pos, (size_t)t->dim * sizeof(double));
        return NB_OK;
    }
    double old[3];
    memcpy(old, at, (size_t)t->dim * sizeof(double));
    const nbStatus rst = nbi_tiles_rehome(t, slot, b, pos);
    if (rst != NB_OK) return rst;
    nbi_beyond(t, &t->eb, old, -1);
    nbi_beyond(t, &t->eb,
               NBI_ARR(t, pts, const double) +
                   (size_t)nbi_pool_slot_value(&t->pool, slot) * (size_t)t->dim,
               1);
    return NB_OK;
}

nbStatus nb_tiles_remove(nbTiles *tiles, nbHandle entity)
{
    if (tiles == NULL) return NB_ERR_NULL_ARG;
    nbTiles *t = tiles;
    int32_t slot;
    const nbStatus st = nbi_pool_lookup(&t->pool, entity, &slot);
    if (st != NB_OK) return st;
    const int32_t p = nbi_pool_slot_value(&t->pool, slot);
    nbi_beyond(t, &t->eb, NBI_ARR(t, pts, const double) + (size_t)p * (size_t)t->dim, -1);
    nbi_block_take_out(t, NBI_ARR(t, key, int32_t)[slot], p);
    nbi_pool_free(&t->pool, entity, NULL);
    t->nfiltered -= !nbi_mask_all(NBI_ARR(t, mask, const uint32_t)[slot]);
    t->count--;
    return NB_OK;
}

nbStatus nb_tiles_get(const nbTiles *tiles, nbHandle entity, double *pos, uint64_t *user,
                      nbFilter *filter)
{
    if (tiles == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    const nbStatus st = nbi_pool_lookup(&tiles->pool, entity, &slot);
    if (st != NB_OK) return st;
    const int32_t p = nbi_pool_slot_value(&tiles->pool, slot);
    if (pos != NULL)
        memcpy(pos, NBI_ARR(tiles, pts, const double) + (size_t)p * (size_t)tiles->dim,
               (size_t)tiles->dim * sizeof(double));
    if (user != NULL) *user = NBI_ARR(tiles, user, const uint64_t)[slot];
    if (filter != NULL) {
        filter->category = 1u << (NBI_ARR(tiles, key, const int32_t)[slot] % tiles->groups);
        filter->mask = NBI_ARR(tiles, mask, const uint32_t)[slot];
    }
    return NB_OK;
}

nbStatus nb_tiles_set(nbTiles *tiles, nbHandle entity, uint64_t user, nbFilter filter)
{
    if (tiles == NULL) return NB_ERR_NULL_ARG;
    nbTiles *t = tiles;
    int32_t slot;
    const nbStatus st = nbi_pool_lookup(&t->pool, entity, &slot);
    if (st != NB_OK) return st;
    const int32_t group = nbi_group_of(t, filter.category);
    if (group < 0) return NB_ERR_OUT_OF_RANGE;
    const int32_t cur = NBI_ARR(t, key, const int32_t)[slot];
    const int32_t b = cur - cur % t->groups + group;
    if (b != cur) {
        const int32_t p = nbi_pool_slot_value(&t->pool, slot);
        const nbStatus rst = nbi_tiles_rehome(
            t, slot, b, NBI_ARR(t, pts, const double) + (size_t)p * (size_t)t->dim);
        if (rst != NB_OK) return rst;
    }
    NBI_ARR(t, user, uint64_t)[slot] = user;
    uint32_t *mask = NBI_ARR(t, mask, uint32_t);
    t->nfiltered += !nbi_mask_all(filter.mask) - !nbi_mask_all(mask[slot]);
    mask[slot] = filter.mask;
    return NB_OK;
}

// ---- tiles ----

nbStatus nb_tiles_tile_of(const nbTiles *tiles, const double *pos, int32_t *tile)
{
    if (tile != NULL) *tile = -1;
    if (tiles == NULL || pos == NULL || tile == NULL) return NB_ERR_NULL_ARG;
    if (!nbi_finite(pos, tiles->dim)) return NB_ERR_NOT_FINITE;
    *tile = nbi_tile_of(tiles, pos);
    return NB_OK;
}

// The tiles within k[0] x k[1] rings of `tile` (checked), row-major: into out (counting past its
// capacity) or, with a visitor, to it until it stops.
static nbStatus nbi_neighbor_tiles(const nbTiles *t, int32_t tile, const int64_t k[2], int32_t *out,
                                   int32_t capacity, int32_t *found, nbVisitFn *visit, void *user)
{
    const int32_t c[2] = {tile % t->nt[0], tile / t->nt[0]};
    int32_t lo[2], hi[2];
    for (int a = 0; a < 2; a++) {
        lo[a] = c[a] - k[a] < 0 ? 0 : (int32_t)(c[a] - k[a]);
        hi[a] = c[a] + k[a] >= t->nt[a] ? t->nt[a] - 1 : (int32_t)(c[a] + k[a]);
    }
    int32_t n = 0;
    for (int32_t y = lo[1]; y <= hi[1]; y++)
        for (int32_t x = lo[0]; x <= hi[0]; x++, n++) {
            if (visit != NULL && !visit(x + t->nt[0] * y, user)) return NB_OK;
            if (n < capacity) out[n] = x + t->nt[0] * y;
        }
    if (visit != NULL) return NB_OK;
    *found = n;
    return n > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

// The rings per axis that cover `radius` (finite, >= 0) from any point of a tile.
static void nbi_radius_rings(const nbTiles *t, double radius, int64_t k[2])
{
    for (int a = 0; a < 2; a++) {
        const double r = ceil(radius / t->edge[a]);
        k[a] = r < (double)t->nt[a] ? (int64_t)r : t->nt[a];
    }
}

nbStatus nb_tiles_neighbor_tiles(const nbTiles *tiles, int32_t tile, int32_t rings, int32_t *out,
                                 int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (tiles == NULL || found == NULL || (out == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    if (tile < 0 || tile >= tiles->ntiles || rings < 0 || capacity < 0) return NB_ERR_OUT_OF_RANGE;
    const int64_t k[2] = {rings, rings};
    return nbi_neighbor_tiles(tiles, tile, k, out, capacity, found, NULL, NULL);
}

nbStatus nb_tiles_visit_neighbor_tiles(const nbTiles *tiles, int32_t tile, int32_t rings,
                                       nbVisitFn *visit, void *user)
{
    if (tiles == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    if (tile < 0 || tile >= tiles->ntiles || rings < 0) return NB_ERR_OUT_OF_RANGE;
    const int64_t k[2] = {rings, rings};
    return nbi_neighbor_tiles(tiles, tile, k, NULL, 0, NULL, visit, user);
}

nbStatus nb_tiles_neighbor_tiles_radius(const nbTiles *tiles, int32_t tile, double radius,
                                        int32_t *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (tiles == NULL || found == NULL || (out == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    if (!isfinite(radius)) return NB_ERR_NOT_FINITE;
    if (radius < 0.0 || tile < 0 || tile >= tiles->ntiles || capacity < 0)
        return NB_ERR_OUT_OF_RANGE;
    int64_t k[2];
    nbi_radius_rings(tiles, radius, k);
    return nbi_neighbor_tiles(tiles, tile, k, out, capacity, found, NULL, NULL);
}

nbStatus nb_tiles_visit_neighbor_tiles_radius(const nbTiles *tiles, int32_t tile, double radius,
                                              nbVisitFn *visit, void *user)
{
    if (tiles == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    if (!isfinite(radius)) return NB_ERR_NOT_FINITE;
    if (radius < 0.0 || tile < 0 || tile >= tiles->ntiles) return NB_ERR_OUT_OF_RANGE;
    int64_t k[2];
    nbi_radius_rings(tiles, radius, k);
    return nbi_neighbor_tiles(tiles, tile, k, NULL, 0, NULL, visit, user);
}

// Hits into the caller's buffer (counting past its capacity) or visitor.
typedef struct nbiTilesHits {
    nbHit *out;
    int32_t cap, n;
    nbHitFn *fn;
    void *user;
    bool stop;
} nbiTilesHits;

static void nbi_emit(nbiTilesHits *x, nbHit hit)
{
    if (x->fn != NULL) {
        x->stop = !x->fn(hit, x->user);
        return;
    }
    if (x->n < x->cap) x->out[x->n] = hit;
    x->n++;
}

static nbHit nbi_entity_hit(const nbTiles *t, int32_t slot)
{
    nbHit h;
    h.handle = nbi_pool_handle_live(&t->pool, slot);
    h.user = NBI_ARR(t, user, const uint64_t)[slot];
    return h;
}

// A query's filter as the loops apply it: the blocks of `groups` (the entities whose category
// meets filter.mask), and each entity's mask against `category`, read only while some entity
// has a mask other than all ones (`masks` NULL otherwise: then a non-zero category passes all).
typedef struct nbiTilesFilter {
    uint32_t groups;
    uint32_t category;
    const uint32_t *masks;
} nbiTilesFilter;

static nbiTilesFilter nbi_filter(const nbTiles *t, nbFilter f)
{
    nbiTilesFilter r;
    r.groups = f.category != 0 ? f.mask & t->all : 0;
    r.category = f.category;
    r.masks = t->nfiltered > 0 ? NBI_ARR(t, mask, const uint32_t) : NULL;
    return r;
}

NBI_INLINE bool nbi_passes(const nbiTilesFilter *f, int32_t slot)
{
    return f->masks == NULL || (f->masks[slot] & f->category) != 0;
}

nbStatus nb_tiles_visit_tile(const nbTiles *tiles, int32_t tile, nbFilter filter, nbHitFn *visit,
                             void *user)
{
    if (tiles == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    if (tile < 0 || tile >= tiles->ntiles) return NB_ERR_OUT_OF_RANGE;
    const int32_t *start = NBI_ARR(tiles, start, const int32_t);
    const int32_t *end = NBI_ARR(tiles, end, const int32_t);
    const int32_t *idx = NBI_ARR(tiles, idx, const int32_t);
    const nbiTilesFilter f = nbi_filter(tiles, filter);
    for (uint32_t m = f.groups; m != 0; m &= m - 1) {
        const int32_t b = tile * tiles->groups + nbi_ctz32(m);
        for (int32_t p = start[b]; p < end[b]; p++)
            if (nbi_passes(&f, idx[p]) && !visit(nbi_entity_hit(tiles, idx[p]), user)) return NB_OK;
    }
    return NB_OK;
}

// ---- radius queries ----

// Entities of tiles [lo, hi] that `mode` keeps (nbi_keep) and that pass f, within r2 of center,
// other than slot `skip` (or -1), into x. False once the visitor stops.
static bool nbi_radius_tiles(const nbTiles *t, const double *center, double r2, const int32_t lo[2],
                             const int32_t hi[2], int mode, const nbiTilesFilter *f, int32_t skip,
                             nbiTilesHits *x)
{
    const uint32_t *occ = NBI_ARR(t, occ, const uint32_t);
    const int32_t *start = NBI_ARR(t, start, const int32_t), *end = NBI_ARR(t, end, const int32_t);
    const int32_t *idx = NBI_ARR(t, idx, const int32_t);
    const double *pts = NBI_ARR(t, pts, const double);
    const int dim = t->dim;
    for (int32_t ty = lo[1]; ty <= hi[1]; ty++) {
        for (int32_t tx = lo[0]; tx <= hi[0]; tx++) {
            const int32_t tile = tx + t->nt[0] * ty, base = tile * t->groups;
            for (uint32_t m = occ[tile] & f->groups; m != 0; m &= m - 1) {
                const int32_t b = base + nbi_ctz32(m);
                for (int32_t p = start[b]; p < end[b]; p++) {
                    const double *pt = pts + (size_t)p * (size_t)dim;
                    if (nbi_dist2(pt, center, dim) > r2 || !nbi_keep(t, mode, pt)) continue;
                    if (idx[p] == skip || !nbi_passes(f, idx[p])) continue;
                    nbi_emit(x, nbi_entity_hit(t, idx[p]));
                    if (x->stop) return false;
                }
            }
        }
    }
    return true;
}

// Entities that pass `filter` within radius of center (checked), other than slot `skip` (or
// -1), into x: those within the world's box, then those beyond each side (nbi_part_range).
static nbStatus nbi_entity_radius(const nbTiles *t, const double *center, double radius,
                                  nbFilter filter, int32_t skip, nbiTilesHits *x)
{
    if (!nbi_finite(center, t->dim)) return NB_ERR_NOT_FINITE;
    const nbStatus st = nbi_check_radius(radius);
    if (st != NB_OK) return st;
    if (x->fn == NULL && x->cap < 0) return NB_ERR_OUT_OF_RANGE;
    const double r2 = radius * radius, reach = nbi_reach(radius);
    const nbiTilesFilter f = nbi_filter(t, filter);
    for (int part = 0; part < 5; part++) {
        int32_t lo[2], hi[2];
        int mode;
        if (!nbi_part_range(t, &t->eb, part, center, reach, lo, hi, &mode)) continue;
        if (!nbi_radius_tiles(t, center, r2, lo, hi, mode, &f, skip, x)) return NB_OK;
    }
    return NB_OK;
}

static nbStatus nbi_finish(nbStatus st, const nbiTilesHits *x, int32_t *found)
{
    if (st != NB_OK) return st;
    *found = x->n;
    return x->n > x->cap ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

nbStatus nb_tiles_query_radius(const nbTiles *tiles, const double *center, double radius,
                               nbFilter filter, nbHit *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (tiles == NULL || center == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    nbiTilesHits x = {out, capacity, 0, NULL, NULL, false};
    return nbi_finish(nbi_entity_radius(tiles, center, radius, filter, -1, &x), &x, found);
}

nbStatus nb_tiles_visit_radius(const nbTiles *tiles, const double *center, double radius,
                               nbFilter filter, nbHitFn *visit, void *user)
{
    if (tiles == NULL || center == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiTilesHits x = {NULL, 0, 0, visit, user, false};
    return nbi_entity_radius(tiles, center, radius, filter, -1, &x);
}

// Neighbours of a stored entity: a radius query at its position that skips it. The handle is
// checked right after the pointers, as for every call that names an item to act on.
static nbStatus nbi_entity_neighbors(const nbTiles *t, nbHandle entity, double radius,
                                     nbFilter filter, nbiTilesHits *x)
{
    int32_t slot;
    const nbStatus st = nbi_pool_lookup(&t->pool, entity, &slot);
    if (st != NB_OK) return st;
    const int32_t p = nbi_pool_slot_value(&t->pool, slot);
    return nbi_entity_radius(t, NBI_ARR(t, pts, const double) + (size_t)p * (size_t)t->dim, radius,
                             filter, slot, x);
}

nbStatus nb_tiles_query_neighbors(const nbTiles *tiles, nbHandle entity, double radius,
                                  nbFilter filter, nbHit *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (tiles == NULL || found == NULL || (out == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    nbiTilesHits x = {out, capacity, 0, NULL, NULL, false};
    return nbi_finish(nbi_entity_neighbors(tiles, entity, radius, filter, &x), &x, found);
}

nbStatus nb_tiles_visit_neighbors(const nbTiles *tiles, nbHandle entity, double radius,
                                  nbFilter filter, nbHitFn *visit, void *user)
{
    if (tiles == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiTilesHits x = {NULL, 0, 0, visit, user, false};
    return nbi_entity_neighbors(tiles, entity, radius, filter, &x);
}

static nbStatus nbi_waypoint_radius(const nbTiles *t, const double *center, double radius,
                                    nbiTilesHits *x)
{
    if (!nbi_finite(center, t->dim)) return NB_ERR_NOT_FINITE;
    const nbStatus st = nbi_check_radius(radius);
    if (st != NB_OK) return st;
    if (x->fn == NULL && x->cap < 0) return NB_ERR_OUT_OF_RANGE;
    const double r2 = radius * radius, reach = nbi_reach(radius);
    const int32_t *ws = NBI_ARR(t, wstart, const int32_t);
    const double *pts = NBI_ARR(t, wpts, const double);
    const uint64_t *id = NBI_ARR(t, wid, const uint64_t);
    const int32_t *num = NBI_ARR(t, wnum, const int32_t);
    const int dim = t->dim;
    for (int part = 0; part < 5; part++) { // as nbi_entity_radius
        int32_t lo[2], hi[2];
        int mode;
        if (!nbi_part_range(t, &t->wb, part, center, reach, lo, hi, &mode)) continue;
        for (int32_t ty = lo[1]; ty <= hi[1]; ty++) {
            const int32_t row = t->nt[0] * ty;
            // A row of tiles is one run of the compact array.
            for (int32_t w = ws[row + lo[0]]; w < ws[row + hi[0] + 1]; w++) {
                const double *pt = pts + (size_t)w * (size_t)dim;
                if (nbi_dist2(pt, center, dim) > r2 || !nbi_keep(t, mode, pt)) continue;
                const nbHit hit = {NB_HANDLE_NULL, id[num[w]]};
                nbi_emit(x, hit);
                if (x->stop) return NB_OK;
            }
        }
    }
    return NB_OK;
}

nbStatus nb_tiles_query_waypoints(const nbTiles *tiles, const double *center, double radius,
                                  nbHit *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (tiles == NULL || center == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    nbiTilesHits x = {out, capacity, 0, NULL, NULL, false};
    return nbi_finish(nbi_waypoint_radius(tiles, center, radius, &x), &x, found);
}

nbStatus nb_tiles_visit_waypoints(const nbTiles *tiles, const double *center, double radius,
                                  nbHitFn *visit, void *user)
{
    if (tiles == NULL || center == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiTilesHits x = {NULL, 0, 0, visit, user, false};
    return nbi_waypoint_radius(tiles, center, radius, &x);
}

// ---- nearest and knn ----

// The search's state: the k best so far in the one kNN heap (knn_heap.h), keyed by the entity's
// slot or the waypoint's number, in the front of the caller's buffer (its entries are larger),
// widened into hits at the end (nbi_knn_widen).
typedef struct nbiKnn {
    const nbTiles *t;
    const double *q;
    nbiKnnHeap heap;
    double maxd;      // max_distance (+inf: none)
    double bound2;    // candidates need dist2 <= bound2 = maxd * maxd, as in a radius query
    nbiTilesFilter f; // the entities searched; waypoints when `waypoints`
    bool waypoints;
    double worst;            // a candidate with a larger dist2 cannot enter the answer
    const nbiTilesBeyond *b; // the searched points beyond the world (entities' or waypoints')
    int mode;                // which points of a tile the scans offer (nbi_keep)
} nbiKnn;

// Offers one candidate: most are turned away by the first test (farther than the k-th best).
NBI_INLINE void nbi_knn_consider(nbiKnn *s, double d2, int32_t key)
{
    if (d2 > s->worst) return;
    const nbNeighbor cand = {key, d2};
    nbi_heap_offer(&s->heap, cand);
    s->worst = nbi_heap_bound(&s->heap, s->bound2);
}

// Offers the candidates of tiles x0 .. x1 of row y. Waypoints: one run of the compact array.
static void nbi_knn_row(nbiKnn *s, int32_t y, int32_t x0, int32_t x1)
{
    const nbTiles *t = s->t;
    const int dim = t->dim;
    const int32_t row = y * t->nt[0];
    if (s->waypoints) {
        const int32_t *ws = NBI_ARR(t, wstart, const int32_t);
        const double *pts = NBI_ARR(t, wpts, const double);
        const int32_t *num = NBI_ARR(t, wnum, const int32_t);
        for (int32_t w = ws[row + x0], w1 = ws[row + x1 + 1]; w < w1; w++) {
            const double *pt = pts + (size_t)w * (size_t)dim;
            if (nbi_keep(t, s->mode, pt)) nbi_knn_consider(s, nbi_dist2(pt, s->q, dim), num[w]);
        }
        return;
    }
    const int32_t *start = NBI_ARR(t, start, const int32_t), *end = NBI_ARR(t, end, const int32_t);
    const int32_t *idx = NBI_ARR(t, idx, const int32_t);
    const double *pts = NBI_ARR(t, pts, const double);
    const uint32_t *occ = NBI_ARR(t, occ, const uint32_t);
    for (int32_t tile = row + x0; tile <= row + x1; tile++) {
        const int32_t base = tile * t->groups;
        for (uint32_t m = occ[tile] & s->f.groups; m != 0; m &= m - 1) {
            const int32_t b = base + nbi_ctz32(m);
            for (int32_t p = start[b], p1 = end[b]; p < p1; p++) {
                const double *pt = pts + (size_t)p * (size_t)dim;
                const double d2 = nbi_dist2(pt, s->q, dim);
                if (d2 > s->worst || !nbi_passes(&s->f, idx[p])) continue;
                if (nbi_keep(t, s->mode, pt)) nbi_knn_consider(s, d2, idx[p]);
            }
        }
    }
}

// Offers the tiles x0 .. x1 of row y that lie outside the visited box [lo, hi].
static void nbi_knn_row_around(nbiKnn *s, int32_t y, int32_t x0, int32_t x1, const int32_t lo[2],
                               const int32_t hi[2])
{
    if (x0 > x1) return;
    if (y < lo[1] || y > hi[1]) {
        nbi_knn_row(s, y, x0, x1);
        return;
    }
    if (x0 < lo[0]) nbi_knn_row(s, y, x0, x1 < lo[0] - 1 ? x1 : lo[0] - 1);
    if (x1 > hi[0]) nbi_knn_row(s, y, x0 > hi[0] + 1 ? x0 : hi[0] + 1, x1);
}

// The tiles [lo, hi] of part `part` (nbi_part_range) that can still hold a candidate, with the
// mode to scan them in: those within reach(r) of q, with r the max distance or, once the heap
// is full, rw with fl(rw * rw) >= the k-th best dist2 (whatever ties or beats it passes the test
// at radius rw, so it lies within reach(rw)). False while the search is unbounded.
static bool nbi_knn_range(const nbiKnn *s, int part, int32_t lo[2], int32_t hi[2], int *mode)
{
    double r = s->maxd;
    if (s->heap.size == s->heap.k) {
        const double rw = sqrt(s->worst) * (1.0 + 0x1p-50);
        r = rw < r ? rw : r;
    }
    if (!(r < (double)INFINITY)) return false;
    nbi_part_range(s->t, s->b, part, s->q, nbi_reach(r), lo, hi, mode);
    return true;
}

// Three phases. First, rings of tiles outward from the query's (clamped) tile, every point of
// each, until the search is bounded (k found, or a max distance) or the world is covered. Then
// the tiles of the bounding range of the points within the world's box not yet visited, row by
// row outward from the query's row, the range shrinking as better candidates come in. Then,
// side by side, the tiles not yet visited of the range of the points beyond that side, for
// those points only. Afterwards the heap is sorted, nearest first.
static void nbi_knn_run(nbiKnn *s)
{
    const nbTiles *t = s->t;
    s->worst = s->bound2;
    s->mode = NBI_KEEP_ALL;
    const int32_t nx = t->nt[0], ny = t->nt[1];
    const int32_t c[2] = {nbi_tile_axis(t, 0, s->q[t->ax[0]]), nbi_tile_axis(t, 1, s->q[t->ax[1]])};
    int32_t lo[2], hi[2], rlo[2], rhi[2];
    int mode = NBI_KEEP_ALL;
    for (int32_t r = 0;; r++) {
        lo[0] = c[0] - r < 0 ? 0 : c[0] - r;
        lo[1] = c[1] - r < 0 ? 0 : c[1] - r;
        hi[0] = c[0] + r >= nx ? nx - 1 : c[0] + r;
        hi[1] = c[1] + r >= ny ? ny - 1 : c[1] + r;
        if (c[1] - r >= 0) nbi_knn_row(s, c[1] - r, lo[0], hi[0]);          // the ring's bottom row
        if (r > 0 && c[1] + r < ny) nbi_knn_row(s, c[1] + r, lo[0], hi[0]); // its top row
        // its sides, where they lie in the world (a narrow world would otherwise walk r rows of
        // nothing per ring: quadratic in its length)
        const bool left = c[0] - r >= 0, right = r > 0 && c[0] + r < nx;
        for (int32_t y = c[1] - r + 1 < 0 ? 0 : c[1] - r + 1;
             (left || right) && y <= c[1] + r - 1 && y < ny; y++) {
            if (left) nbi_knn_row(s, y, c[0] - r, c[0] - r);
            if (right) nbi_knn_row(s, y, c[0] + r, c[0] + r);
        }
        if (lo[0] == 0 && lo[1] == 0 && hi[0] == nx - 1 && hi[1] == ny - 1) goto sorted;
        if (nbi_knn_range(s, 0, rlo, rhi, &mode)) break;
    }
    // The range's rows outward from the query's: inside the visited rows only the parts left
    // and right of the visited box, outside them the whole row.
    s->mode = mode;
    double seen = s->worst;
    for (int32_t d = 0;; d++) {
        const int32_t y0 = c[1] - d, y1 = c[1] + d;
        if (y0 < rlo[1] && y1 > rhi[1]) break;
        for (int side = 0; side < (d > 0 ? 2 : 1); side++) {
            const int32_t y = side == 0 ? y0 : y1;
            if (y < rlo[1] || y > rhi[1]) continue;
            nbi_knn_row_around(s, y, rlo[0], rhi[0], lo, hi);
            if (s->worst < seen) { // narrows as better candidates come in
                seen = s->worst;
                nbi_knn_range(s, 0, rlo, rhi, &mode);
            }
        }
    }
    for (int part = 1; part < 5 && s->b->any > 0; part++) { // the points beyond each side
        nbi_knn_range(s, part, rlo, rhi, &s->mode);
        for (int32_t y = rlo[1]; y <= rhi[1]; y++) nbi_knn_row_around(s, y, rlo[0], rhi[0], lo, hi);
    }
sorted:;
    nbi_heap_sort(&s->heap);
}

// The heap's n entries at the front of out as hits, in place, from the last to the first (each
// read before it is overwritten): an entity's handle and user value, a waypoint's id.
static void nbi_knn_widen(const nbTiles *t, bool waypoints, nbHitNeighbor *out, int32_t n)
{
    const uint64_t *user = NBI_ARR(t, user, const uint64_t);
    const uint64_t *id = NBI_ARR(t, wid, const uint64_t);
    unsigned char *bytes = (unsigned char *)out;
    for (int32_t i = n - 1; i >= 0; i--) {
        nbNeighbor e;
        memcpy(&e, bytes + (size_t)i * sizeof(nbNeighbor), sizeof e);
        nbHitNeighbor wide;
        wide.hit.handle = waypoints ? NB_HANDLE_NULL : nbi_pool_handle_live(&t->pool, e.index);
        wide.hit.user = waypoints ? id[e.index] : user[e.index];
        wide.dist2 = e.dist2;
        memcpy(bytes + (size_t)i * sizeof(nbHitNeighbor), &wide, sizeof wide);
    }
}

// The checks every nearest / knn call makes after its pointers: the point, max_distance, k.
static nbStatus nbi_knn_check(const nbTiles *t, const double *point, double max_distance, int32_t k)
{
    if (!nbi_finite(point, t->dim) || isnan(max_distance)) return NB_ERR_NOT_FINITE;
    if (max_distance < 0.0 || k < 0) return NB_ERR_OUT_OF_RANGE;
    return NB_OK;
}

// The k nearest candidates (entities that pass `filter`, or waypoints) within max_distance
// into out; returns how many.
static int32_t nbi_knn_search(const nbTiles *t, const double *q, nbFilter filter, double maxd,
                              bool waypoints, nbHitNeighbor *out, int32_t k)
{
    nbiKnn s;
    s.t = t;
    s.q = q;
    s.heap.e = (nbNeighbor *)(void *)out;
    s.heap.k = k;
    s.heap.size = 0;
    s.maxd = maxd;
    s.bound2 = maxd < (double)INFINITY ? maxd * maxd : (double)INFINITY;
    s.f = nbi_filter(t, filter);
    s.waypoints = waypoints;
    s.b = waypoints ? &t->wb : &t->eb;
    if (k == 0 || (waypoints ? t->nwp == 0 : s.f.groups == 0 || t->count == 0)) return 0;
    nbi_knn_run(&s);
    nbi_knn_widen(t, waypoints, out, s.heap.size);
    return s.heap.size;
}

static nbStatus nbi_knn_buffer(const nbTiles *t, const double *point, nbFilter filter, double maxd,
                               bool waypoints, nbHitNeighbor *out, int32_t k, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (t == NULL || point == NULL || found == NULL || (out == NULL && k > 0))
        return NB_ERR_NULL_ARG;
    const nbStatus st = nbi_knn_check(t, point, maxd, k);
    if (st != NB_OK) return st;
    *found = nbi_knn_search(t, point, filter, maxd, waypoints, out, k);
    return NB_OK;
}

// The callback form's search, on the heap nbi_visit_hit_knn gives it.
typedef struct nbiKnnAsk {
    const nbTiles *t;
    const double *point;
    nbFilter filter;
    double maxd;
    bool waypoints;
} nbiKnnAsk;

static nbStatus nbi_knn_ask(const void *ctx, nbHitNeighbor *out, int32_t k, int32_t *found)
{
    const nbiKnnAsk *a = (const nbiKnnAsk *)ctx;
    *found = nbi_knn_search(a->t, a->point, a->filter, a->maxd, a->waypoints, out, k);
    return NB_OK;
}

// The callback form (its heap from nbi_visit_hit_knn: the stack, or the tiles' allocator).
static nbStatus nbi_knn_visit(const nbTiles *t, const double *point, nbFilter filter, double maxd,
                              bool waypoints, int32_t k, nbHitNeighborFn *visit, void *user)
{
    if (t == NULL || point == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    const nbStatus st = nbi_knn_check(t, point, maxd, k);
    if (st != NB_OK) return st;
    const int32_t have = waypoints ? t->nwp : t->count, want = k < have ? k : have;
    const nbiKnnAsk ask = {t, point, filter, maxd, waypoints};
    return nbi_visit_hit_knn(&t->alloc, want, nbi_knn_ask, &ask, visit, user);
}

nbStatus nb_tiles_knn(const nbTiles *tiles, const double *point, nbFilter filter,
                      double max_distance, nbHitNeighbor *out, int32_t k, int32_t *found)
{
    return nbi_knn_buffer(tiles, point, filter, max_distance, false, out, k, found);
}

nbStatus nb_tiles_visit_knn(const nbTiles *tiles, const double *point, nbFilter filter,
                            double max_distance, int32_t k, nbHitNeighborFn *visit, void *user)
{
    return nbi_knn_visit(tiles, point, filter, max_distance, false, k, visit, user);
}

nbStatus nb_tiles_knn_waypoints(const nbTiles *tiles, const double *point, double max_distance,
                                nbHitNeighbor *out, int32_t k, int32_t *found)
{
    return nbi_knn_buffer(tiles, point, NB_FILTER_ALL, max_distance, true, out, k, found);
}

nbStatus nb_tiles_visit_knn_waypoints(const nbTiles *tiles, const double *point,
                                      double max_distance, int32_t k, nbHitNeighborFn *visit,
                                      void *user)
{
    return nbi_knn_visit(tiles, point, NB_FILTER_ALL, max_distance, true, k, visit, user);
}

// ---- pairs ----

typedef struct nbiTilesPairs {
    nbHitPair *out;
    int64_t cap, n;
    nbHitPairFn *fn;
    void *user;
} nbiTilesPairs;

// A radius search per entity x of set A for its partners y in x's range of tiles. All pairs
// (cross false): A is every entity, y any later slot whose group x's mask names and whose mask
// names x's group, so each unordered pair comes once from its lower slot. Cross pairs: A the
// groups of mask_a, y any other entity of mask_b's groups; an entity whose mask is 0 plays no
// role. The masks are read only while some entity has one other than all ones.
static nbStatus nbi_pairs_run(const nbTiles *t, double radius, bool cross, uint32_t mask_a,
                              uint32_t mask_b, nbiTilesPairs *x)
{
    nbStatus st = nbi_check_radius(radius);
    if (st != NB_OK) return st;
    if (x->fn == NULL && x->cap < 0) return NB_ERR_OUT_OF_RANGE;
    const uint32_t ga = cross ? mask_a & t->all : t->all, gb = cross ? mask_b & t->all : t->all;
    if (ga == 0 || gb == 0) return NB_OK;
    const uint32_t *masks = t->nfiltered > 0 ? NBI_ARR(t, mask, const uint32_t) : NULL;
    const double r2 = radius * radius, reach = nbi_reach(radius);
    const int32_t *start = NBI_ARR(t, start, const int32_t), *end = NBI_ARR(t, end, const int32_t);
    const int32_t *idx = NBI_ARR(t, idx, const int32_t);
    const double *pts = NBI_ARR(t, pts, const double);
    const uint32_t *occ = NBI_ARR(t, occ, const uint32_t);
    const int dim = t->dim;
    // Only the groups a tile holds (occ): a world of many small tiles is mostly empty ones.
    for (int32_t tile = 0; tile < t->ntiles; tile++) {
        for (uint32_t m = occ[tile] & ga; m != 0; m &= m - 1) {
            const int gx = nbi_ctz32(m);
            const int32_t bx = tile * t->groups + gx;
            for (int32_t p = start[bx]; p < end[bx]; p++) {
                const int32_t sx = idx[p];
                uint32_t gy = gb; // the groups x may meet
                if (masks != NULL) gy = cross ? (masks[sx] != 0 ? gb : 0) : gb & masks[sx];
                if (gy == 0) continue;
                const double *px = pts + (size_t)p * (size_t)dim;
                const nbHit a = nbi_entity_hit(t, sx);
                int32_t lo[2], hi[2];
                nbi_tile_range(t, px, reach, lo, hi);
                for (int32_t ty = lo[1]; ty <= hi[1]; ty++) {
                    for (int32_t tx = lo[0]; tx <= hi[0]; tx++) {
                        const int32_t there = tx + t->nt[0] * ty, base = there * t->groups;
                        for (uint32_t mm = occ[there] & gy; mm != 0; mm &= mm - 1) {
                            const int32_t by = base + nbi_ctz32(mm);
                            for (int32_t q = start[by]; q < end[by]; q++) {
                                const int32_t sy = idx[q];
                                if (cross ? sy == sx : sy <= sx) continue;
                                if (nbi_dist2(pts + (size_t)q * (size_t)dim, px, dim) > r2)
                                    continue;
                                if (masks != NULL &&
                                    (cross ? masks[sy] == 0 : ((masks[sy] >> gx) & 1u) == 0))
                                    continue;
                                const nbHit b = nbi_entity_hit(t, sy);
                                if (x->fn != NULL) {
                                    if (!x->fn(a, b, x->user)) return NB_OK;
                                    continue;
                                }
                                if (x->out != NULL && x->n < x->cap) {
                                    x->out[x->n].a = a;
                                    x->out[x->n].b = b;
                                }
                                x->n++;
                            }
                        }
                    }
                }
            }
        }
    }
    return NB_OK;
}

static nbStatus nbi_pairs_buffer(const nbTiles *t, double radius, bool cross, uint32_t mask_a,
                                 uint32_t mask_b, nbHitPair *out, int64_t capacity, int64_t *found)
{
    if (found != NULL) *found = 0;
    if (t == NULL || found == NULL || (out == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    nbiTilesPairs x = {out, capacity, 0, NULL, NULL};
    const nbStatus st = nbi_pairs_run(t, radius, cross, mask_a, mask_b, &x);
    if (st != NB_OK) return st;
    *found = x.n;
    return x.n > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

static nbStatus nbi_pairs_count(const nbTiles *t, double radius, bool cross, uint32_t mask_a,
                                uint32_t mask_b, int64_t *count)
{
    if (count != NULL) *count = 0;
    if (t == NULL || count == NULL) return NB_ERR_NULL_ARG;
    nbiTilesPairs x = {NULL, INT64_MAX, 0, NULL, NULL};
    const nbStatus st = nbi_pairs_run(t, radius, cross, mask_a, mask_b, &x);
    if (st == NB_OK) *count = x.n;
    return st;
}

static nbStatus nbi_pairs_visit(const nbTiles *t, double radius, bool cross, uint32_t mask_a,
                                uint32_t mask_b, nbHitPairFn *visit, void *user)
{
    if (t == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiTilesPairs x = {NULL, 0, 0, visit, user};
    return nbi_pairs_run(t, radius, cross, mask_a, mask_b, &x);
}

nbStatus nb_tiles_pairs(const nbTiles *tiles, double radius, nbHitPair *out, int64_t capacity,
                        int64_t *found)
{
    return nbi_pairs_buffer(tiles, radius, false, 0, 0, out, capacity, found);
}

nbStatus nb_tiles_count_pairs(const nbTiles *tiles, double radius, int64_t *count)
{
    return nbi_pairs_count(tiles, radius, false, 0, 0, count);
}

nbStatus nb_tiles_visit_pairs(const nbTiles *tiles, double radius, nbHitPairFn *visit, void *user)
{
    return nbi_pairs_visit(tiles, radius, false, 0, 0, visit, user);
}

nbStatus nb_tiles_cross_pairs(const nbTiles *tiles, double radius, uint32_t mask_a, uint32_t mask_b,
                              nbHitPair *out, int64_t capacity, int64_t *found)
{
    return nbi_pairs_buffer(tiles, radius, true, mask_a, mask_b, out, capacity, found);
}

nbStatus nb_tiles_count_cross_pairs(const nbTiles *tiles, double radius, uint32_t mask_a,
                                    uint32_t mask_b, int64_t *count)
{
    return nbi_pairs_count(tiles, radius, true, mask_a, mask_b, count);
}

nbStatus nb_tiles_visit_cross_pairs(const nbTiles *tiles, double radius, uint32_t mask_a,
                                    uint32_t mask_b, nbHitPairFn *visit, void *user)
{
    return nbi_pairs_visit(tiles, radius, true, mask_a, mask_b, visit, user);
}

// ---- waypoints ----

nbStatus nb_tiles_add_waypoints(nbTiles *tiles, const double *pos, const uint64_t *ids,
                                int32_t count)
{
    if (tiles == NULL || (pos == NULL && count > 0)) return NB_ERR_NULL_ARG;
    nbTiles *t = tiles;
    const size_t d = (size_t)t->dim;
    for (int64_t i = 0; i < (int64_t)count * (int64_t)d; i++)
        if (!isfinite(pos[i])) return NB_ERR_NOT_FINITE;
    if (count < 0 || (int64_t)t->nwp + count > NBI_TILES_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    if (count == 0) return NB_OK;
    // Count, prefix sum, scatter into fresh arrays: the old waypoints of each tile first (they
    // are already by tile), then the new ones in the order given. Ids go by number: appended.
    const size_t n = (size_t)t->nwp + (size_t)count, nt = (size_t)t->ntiles;
    double *wpts = (double *)nbi_alloc(&t->alloc, n, d * sizeof(double));
    uint64_t *wid = (uint64_t *)nbi_alloc(&t->alloc, n, sizeof(uint64_t));
    int32_t *wnum = (int32_t *)nbi_alloc(&t->alloc, n, sizeof(int32_t));
    int32_t *at = (int32_t *)nbi_alloc(&t->alloc, nt + 1, sizeof(int32_t));
    if (wpts == NULL || wid == NULL || wnum == NULL || at == NULL) {
        nbi_free(&t->alloc, wpts, n, d * sizeof(double));
        nbi_free(&t->alloc, wid, n, sizeof(uint64_t));
        nbi_free(&t->alloc, wnum, n, sizeof(int32_t));
        nbi_free(&t->alloc, at, nt + 1, sizeof(int32_t));
        return NB_ERR_OUT_OF_MEMORY;
    }
    int32_t *ws = NBI_ARR(t, wstart, int32_t);
    memset(at, 0, (nt + 1) * sizeof(int32_t));
    for (int32_t i = 0; i < count; i++) at[nbi_tile_of(t, pos + (size_t)i * d) + 1]++;
    for (size_t c = 0; c < nt; c++) at[c + 1] += at[c] + (ws[c + 1] - ws[c]); // new starts
    const double *opts = NBI_ARR(t, wpts, const double);
    if (t->nwp > 0) memcpy(wid, t->wid.ptr, (size_t)t->nwp * sizeof(uint64_t));
    const int32_t *onum = NBI_ARR(t, wnum, const int32_t);
    for (size_t c = 0; c < nt; c++) { // old ones; `at` becomes the cursor of each tile
        const int32_t o = ws[c], m = ws[c + 1] - ws[c];
        if (m > 0) {
            memcpy(wpts + (size_t)at[c] * d, opts + (size_t)o * d, (size_t)m * d * sizeof(double));
            memcpy(wnum + at[c], onum + o, (size_t)m * sizeof(int32_t));
        }
        ws[c] = at[c];
        at[c] += m;
    }
    for (int32_t i = 0; i < count; i++) {
        const int32_t c = nbi_tile_of(t, pos + (size_t)i * d), w = at[c]++;
        nbi_beyond(t, &t->wb, pos + (size_t)i * d, 1);
        memcpy(wpts + (size_t)w * d, pos + (size_t)i * d, d * sizeof(double));
        wnum[w] = t->nwp + i;
        wid[t->nwp + i] = ids != NULL ? ids[i] : (uint64_t)(t->nwp + i);
    }
    ws[nt] = (int32_t)n;
    nbi_free(&t->alloc, at, nt + 1, sizeof(int32_t));
    nbi_free(&t->alloc, t->wpts.ptr, t->wpts.cap, d * sizeof(double));
    nbi_free(&t->alloc, t->wid.ptr, t->wid.cap, sizeof(uint64_t));
    nbi_free(&t->alloc, t->wnum.ptr, t->wnum.cap, sizeof(int32_t));
    t->wpts.ptr = wpts;
    t->wid.ptr = wid;
    t->wnum.ptr = wnum;
    t->wpts.cap = t->wid.cap = t->wnum.cap = n;
    t->nwp = (int32_t)n;
    return NB_OK;
}

nbStatus nb_tiles_add_waypoint(nbTiles *tiles, const double *pos, uint64_t id)
{
    if (tiles == NULL || pos == NULL) return NB_ERR_NULL_ARG;
    return nb_tiles_add_waypoints(tiles, pos, &id, 1);
}

void nb_tiles_clear_waypoints(nbTiles *tiles)
{
    if (tiles == NULL) return;
    memset(tiles->wstart.ptr, 0, tiles->wstart.cap * sizeof(int32_t));
    tiles->nwp = 0;
    nbi_beyond_reset(&tiles->wb);
}

// ---- validate ----

// Whether point p lies in the box of the side b counts it beyond (any point within the world).
static bool nbi_beyond_holds(const nbTiles *t, const nbiTilesBeyond *b, const double *p)
{
    const int s = nbi_side(t, p);
    for (int a = 0; s >= 0 && a < 2; a++)
        if (!(p[t->ax[a]] >= b->lo[s][a] && p[t->ax[a]] <= b->hi[s][a])) return false;
    return true;
}

// Whether b's counts are those recounted into `counted`, and its empty sides' boxes empty.
static bool nbi_beyond_counts(const nbiTilesBeyond *counted, const nbiTilesBeyond *b)
{
    int32_t any = 0;
    for (int s = 0; s < 4; s++) {
        if (b->n[s] != counted->n[s]) return false;
        if (b->n[s] == 0 && (b->lo[s][0] != (double)INFINITY || b->hi[s][1] != -(double)INFINITY))
            return false;
        any += b->n[s];
    }
    return any == b->any;
}

nbStatus nb_tiles_validate(const nbTiles *tiles)
{
    if (tiles == NULL) return NB_ERR_NULL_ARG;
    const nbTiles *t = tiles;
    NBI_CHECK(t->dim == 2 || t->dim == 3);
    NBI_CHECK(t->groups >= 1 && t->groups <= NB_TILES_MAX_GROUPS);
    NBI_CHECK(t->ntiles == t->nt[0] * t->nt[1] && t->ntiles > 0);
    NBI_CHECK(nbi_pool_validate(&t->pool) == NB_OK);
    NBI_CHECK(nbi_pool_count(&t->pool) == t->count && t->count >= 0);
    NBI_CHECK(t->arena.top >= 0 && (size_t)t->arena.top <= t->idx.cap &&
              (size_t)t->arena.top <= t->pts.cap);
    NBI_CHECK((size_t)t->pool.used <= t->key.cap && (size_t)t->pool.used <= t->user.cap);
    const int32_t *start = NBI_ARR(t, start, const int32_t), *end = NBI_ARR(t, end, const int32_t);
    const int8_t *cls = NBI_ARR(t, cls, const int8_t);
    const int32_t *idx = NBI_ARR(t, idx, const int32_t), *key = NBI_ARR(t, key, const int32_t);
    const double *pts = NBI_ARR(t, pts, const double);
    int64_t items = 0, block_positions = 0, nfiltered = 0;
    nbiTilesBeyond beyond; // recounted, and each point checked against its side's box
    nbi_beyond_reset(&beyond);
    const uint32_t *occ = NBI_ARR(t, occ, const uint32_t);
    for (int32_t tile = 0; tile < t->ntiles; tile++) {
        for (int32_t g = 0; g < t->groups; g++) {
            const int32_t b = tile * t->groups + g; // block (tile, g)
            NBI_CHECK(((occ[tile] >> g) & 1u) == (cls[b] >= 0));
            if (cls[b] < 0) {
                NBI_CHECK(start[b] == 0 && end[b] == 0);
                continue;
            }
            NBI_CHECK(cls[b] < NBI_ARENA_CLASSES);
            const int64_t size = (int64_t)1 << cls[b];
            NBI_CHECK(start[b] >= 0 && start[b] + size <= t->arena.top);
            NBI_CHECK(end[b] > start[b] && end[b] - start[b] <= size);
            block_positions += size;
            for (int32_t p = start[b]; p < end[b]; p++) {
                const int32_t s = idx[p];
                NBI_CHECK(s >= 0 && s < t->pool.used);
                NBI_CHECK(nbi_pool_slot_value(&t->pool, s) == p && key[s] == b);
                const double *x = pts + (size_t)p * (size_t)t->dim;
                NBI_CHECK(nbi_finite(x, t->dim));
                NBI_CHECK(nbi_tile_of(t, x) == tile);
                NBI_CHECK(nbi_beyond_holds(t, &t->eb, x));
                nbi_beyond(t, &beyond, x, 1);
                nfiltered += !nbi_mask_all(NBI_ARR(t, mask, const uint32_t)[s]);
                items++;
            }
        }
    }
    NBI_CHECK(items == t->count && nfiltered == t->nfiltered);
    NBI_CHECK(nbi_beyond_counts(&beyond, &t->eb));
    NBI_CHECK(nbi_arena_valid(&t->arena, idx));
    NBI_CHECK(block_positions + t->arena.free_positions == t->arena.top);
    // waypoints
    const int32_t *ws = NBI_ARR(t, wstart, const int32_t);
    NBI_CHECK(ws[0] == 0 && ws[t->ntiles] == t->nwp && (size_t)t->nwp <= t->wid.cap);
    nbi_beyond_reset(&beyond);
    const double *wpts = NBI_ARR(t, wpts, const double);
    for (int32_t c = 0; c < t->ntiles; c++) {
        NBI_CHECK(ws[c] <= ws[c + 1]);
        for (int32_t w = ws[c]; w < ws[c + 1]; w++) {
            const double *x = wpts + (size_t)w * (size_t)t->dim;
            NBI_CHECK(nbi_finite(x, t->dim) && nbi_tile_of(t, x) == c);
            NBI_CHECK(nbi_beyond_holds(t, &t->wb, x));
            nbi_beyond(t, &beyond, x, 1);
            const int32_t num = NBI_ARR(t, wnum, const int32_t)[w];
            NBI_CHECK(num >= 0 && num < t->nwp);
        }
    }
    NBI_CHECK(nbi_beyond_counts(&beyond, &t->wb));
    return NB_OK;
}
