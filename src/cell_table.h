// SPDX-License-Identifier: MIT
// The cell table: integer cell coordinates -> a caller's int32 value (a cell number, a bucket),
// for every structure that numbers only its occupied cells (the grid's hashed layout, the
// spatial hash). Never installed.
//
// Open addressing with linear probing over 2^bits slots, at most three quarters full. Each slot
// keeps its cell's coordinates, so a probe compares keys before any point is looked at and entries
// of other cells are skipped at once; collisions cost probes, never a wrong answer. The home slot
// is the top `bits` bits of nbi_cell_hash (cell.h), whose per-coordinate mixing keeps crafted
// keys (multiples of a large power of two, lattices) from piling onto one probe run.
//
// There is no removal: the structures that use it drop a whole table (a rebuild) or keep empty
// cells (the spatial hash), so entries only come and the table only grows.
//
// Storage is an nbiBuf, so a structure can prepare it together with its other arrays and commit
// all or nothing (the grid does); nbi_ctab_grow does the same on its own (the spatial hash).
//
// How full: a table that takes its entries one at a time and keeps them (the spatial hash) is
// sized at most half full (nbi_ctab_bits_for), so that growing is rare and probes stay short; a
// table filled whole, then only read until the next fill (the grid's hashed build) is sized at
// most three quarters full (nbi_ctab_bits_packed): half the slots to clear and fault in at 1-2
// probes a hit, where its readers ask it only for cells that are there (the grid's occupancy
// filter answers most misses first).
//
// Coded tables (nbi_ctab_reset_coded): where every key lies in a box whose Morton codes name
// a cell exactly (cell.h: offsets from the box's corner below 2^21 an axis in 3D, 2^32 in 2D;
// or wider, with the bits the code drops kept as a second, low code per entry) and the owner
// keeps each entry's codes in arrays indexed by its value (the grid's hashed layout), a slot is
// 16 bytes: the value and the cell's offsets from the corner, shifted right by the codes'
// shift and packed in one word (nbiCodedSlot). A probe compares that word, three subtractions,
// shifts and ors from the coordinates asked for; with low codes, a slot whose word matches is
// compared by its low code too (lows[value]). The home slots are the same (nbi_cell_hash of the
// coordinates), so callers hash as for any table. Half the bytes of a 32-byte slot to clear,
// fault in and miss in, and the entries must be distinct (the owner's codes are), so an insert
// takes the first empty slot from the home without comparing keys.
//
// The blocks of a coded table (nbi_ctab_fill_blocks), for lookups of a small box of cells (a
// radius query's 27): the owner's cells are in the Z order of their exact offsets, so every
// aligned block of 64 cells (4 a side in 3D, 8 in 2D) is one run of cell numbers, ordered by
// the cells' local codes (the low 6 bits of the interleaved offsets). A second table, in the
// room the coded slots leave in the storage, maps each occupied block (its offsets from lo,
// shifted right by the side's bits) to its first cell and a 64-bit mask of its occupied cells:
// the cell of local code l is then first + the set bits below bit l, or absent when bit l is
// clear. A 3x3x3 box spans 8 blocks at most, 3.4 on average, where it has 27 cells to look up
// (and each of them a miss in a table larger than the caches). A block slot is 32 bytes, the
// mask, the key exact (x | y << 32 and z) and the first cell, in one cache line. Filled with the
// table (sized in nbi_ctab_fill_pending, written by the first reader of blocks:
// nbi_ctab_blocks_ready; or both in nbi_ctab_defer without atomics), at most half full where
// the room allows, else at most three quarters full, else after the coded slots are repacked
// at most three quarters full (single cells then probe a little longer); without room even then
// (or with a block coordinate of 2^32 or more) there are no blocks (block_bits 0), and the box is
// looked up a cell at a time.
//
// Invariants (nbi_ctab_validate): 4 <= bits <= 32 when storage exists, 2^bits <= capacity,
// count == occupied slots <= nbi_ctab_most(bits), every entry reachable from its home slot
// without crossing an empty slot, no key twice; coded: every value below count; with blocks:
// the block slots fit the storage after the coded slots, each block's mask and first cell are
// its cells', reachable from its home, no block twice, every cell in a block.
#ifndef NEARBY_CELL_TABLE_H
#define NEARBY_CELL_TABLE_H

#include "cell.h"

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
#define NBI_CTAB_LAZY 1
#else
#define NBI_CTAB_LAZY 0 // no atomics: every table is filled when its owner builds it
#endif

// A table filled on first use (the grid's hashed layout: all pairs in Z order needs no lookup
// by coordinates, so a build + all pairs never fills it). The owner sizes and keeps the storage
// at its build and marks the table pending (nbi_ctab_defer); the first reader that needs a
// lookup (nbi_ctab_ready) runs fill(owner) while the others wait, and publishes the filled table
// with a release store, so that queries on a const owner stay safe from many threads. A fill
// allocates nothing, so it cannot fail.
enum { NBI_CTAB_FILLED = 0, NBI_CTAB_PENDING = 1, NBI_CTAB_FILLING = 2 };
typedef void nbiCtabFillFn(void *owner);
typedef struct nbiCtabLazy {
#if NBI_CTAB_LAZY
    atomic_int state; // NBI_CTAB_FILLED, _PENDING or _FILLING
#else
    int state;
#endif
    nbiCtabFillFn *fill;
    void *owner;
    struct nbiCellTable *table; // set by nbi_ctab_defer: its blocks follow the owner's fill
#if NBI_CTAB_LAZY
    atomic_int blocks; // the coded table's blocks: written on their first use, likewise
#else
    int blocks;
#endif
} nbiCtabLazy;

// One slot: a cell's coordinates (z = 0 in 2D) and its value; value < 0 marks an empty slot.
// `aux` is the owner's (zero when the cell is inserted): the grid's hashed build counts the
// cell's points in it while the slot is in cache.
typedef struct nbiCellSlot {
    int64_t key[3];
    int32_t value;
    int32_t aux;
} nbiCellSlot;

typedef struct nbiCellTable {
    nbiBuf buf;    // nbiCellSlot (coded: as many nbiCodedSlot as fit), capacity >= 2^bits slots
    int32_t bits;  // 0 before the first reset or grow
    int32_t count; // occupied slots
    // Coded (nbi_ctab_reset_coded): the entries' codes by value (NULL: slots are nbiCellSlot),
    // their low codes (or NULL, with shift 0), the bits the codes drop, the box's corner and dim.
    const uint64_t *codes, *lows;
    int32_t shift;
    int64_t lo[3];
    int32_t dim;
    nbiCtabLazy *lazy; // the owner's, when it may defer the fill (nbi_ctab_defer); else NULL
    // Coded, once filled: the blocks (see above), 2^block_bits slots at block_at bytes into the
    // storage; block_bits 0: none. block_count: the occupied block slots.
    int32_t block_bits, block_count;
    size_t block_at;
    int32_t block_plan; // their bits once sized (with the table's fill), before they are written
} nbiCellTable;

enum { NBI_CTAB_MIN_BITS = 4, NBI_CTAB_MAX_BITS = 32 }; // 2^31 cells at most half full

// The most entries a table of 2^bits slots may hold: three quarters of its slots.
NBI_INLINE size_t nbi_ctab_most(int32_t bits)
{
    return ((size_t)1 << bits) - ((size_t)1 << (bits - 2));
}

// Bits of a table that holds `count` entries at most half full (at least 16 slots). Returns
// NBI_CTAB_MAX_BITS + 1 when no table can: the caller refuses with NB_ERR_OUT_OF_RANGE.
int32_t nbi_ctab_bits_for(size_t count);

// nbi_ctab_bits_for at most three quarters full, for a table filled whole (see above).
int32_t nbi_ctab_bits_packed(size_t count);

// Empties the table and uses 2^bits slots of its storage (which must hold them), as nbiCellSlot
// (not coded). O(2^bits).
void nbi_ctab_reset(nbiCellTable *t, int32_t bits);

// Marks the table pending (the owner's build, with no reader running): its entries are
// inserted by lazy->fill(lazy->owner) on first use, and a coded table's blocks after them
// (nbi_ctab_fill_blocks). Without atomics, fills it now.
void nbi_ctab_defer(nbiCellTable *t, nbiCtabLazy *lazy);

// The pending table filled, by this thread or, waiting for it, by another (see nbiCtabLazy).
void nbi_ctab_fill_pending(nbiCtabLazy *lazy);

// Every reader that looks a cell up calls this first (once per walk or query, not per probe):
// a no-op (one acquire load) once the table is filled.
NBI_INLINE void nbi_ctab_ready(const nbiCellTable *t)
{
    nbiCtabLazy *z = t->lazy;
#if NBI_CTAB_LAZY
    if (z != NULL && atomic_load_explicit(&z->state, memory_order_acquire) != NBI_CTAB_FILLED)
        nbi_ctab_fill_pending(z);
#else
    (void)z;
#endif
}

// Whether a table's entries are in place (not pending): validate and tests.
bool nbi_ctab_is_filled(const nbiCellTable *t);

NBI_INLINE const nbiCellSlot *nbi_ctab_slots(const nbiCellTable *t)
{
    return (const nbiCellSlot *)t->buf.ptr;
}

NBI_INLINE size_t nbi_ctab_home(const nbiCellTable *t, int64_t x, int64_t y, int64_t z)
{
    return (size_t)(nbi_cell_hash(x, y, z) >> (64 - t->bits));
}

// The slot holding (x, y, z), whose nbi_cell_hash is `hash`, or -1 when the cell is absent. Not
// for coded tables, whose slots hold no key (nbi_ctab_find_hashed serves both).
NBI_INLINE int64_t nbi_ctab_find_slot_hashed(const nbiCellTable *t, int64_t x, int64_t y, int64_t z,
                                             uint64_t hash)
{
    NB_ASSERT(t->codes == NULL);
    if (t->bits == 0) return -1;
    const nbiCellSlot *s = nbi_ctab_slots(t);
    const size_t mask = ((size_t)1 << t->bits) - 1;
    for (size_t h = (size_t)(hash >> (64 - t->bits));; h = (h + 1) & mask) {
        if (s[h].value < 0) return -1;
        if (s[h].key[0] == x && s[h].key[1] == y && s[h].key[2] == z) return (int64_t)h;
    }
}

// The slot holding (x, y, z), or -1 when the cell is absent (not for coded tables).
NBI_INLINE int64_t nbi_ctab_find_slot(const nbiCellTable *t, int64_t x, int64_t y, int64_t z)
{
    return nbi_ctab_find_slot_hashed(t, x, y, z, nbi_cell_hash(x, y, z));
}

// A coded table's slot: an entry's value (-1: empty) and its cell's key, the cell's offsets from
// lo shifted right by the table's shift, packed (NBI_CODE_BITS(dim) bits an axis): exact with
// shift 0. Beyond, `low` holds the `shift` bits the key drops, packed likewise, where they fit
// 32 bits (nbi_ctab_low_fits), and else the low code (lows[value]) tells the cells apart.
typedef struct nbiCodedSlot {
    uint64_t key;
    int32_t value;
    uint32_t low;
} nbiCodedSlot;

// Whether a coded table's slots hold the bits its keys drop (see nbiCodedSlot).
NBI_INLINE bool nbi_ctab_low_fits(const nbiCellTable *t)
{
    return t->shift * t->dim <= 32;
}

// The bits the key of the cell (x, y, z) drops, packed (see nbiCodedSlot); 0 with shift 0.
NBI_INLINE uint32_t nbi_ctab_low_bits(const nbiCellTable *t, int64_t x, int64_t y, int64_t z)
{
    const int s = t->shift;
    const uint64_t m = ((uint64_t)1 << s) - 1;
    const uint64_t ox = ((uint64_t)x - (uint64_t)t->lo[0]) & m;
    const uint64_t oy = ((uint64_t)y - (uint64_t)t->lo[1]) & m;
    const uint64_t oz = t->dim == 3 ? ((uint64_t)z - (uint64_t)t->lo[2]) & m : 0;
    return (uint32_t)(ox | oy << s | oz << 2 * s);
}

// The key (see nbiCodedSlot) of the cell (x, y, z) in a coded table; false when the cell lies
// outside the box the codes reach (then it is in no entry).
NBI_INLINE bool nbi_ctab_key(const nbiCellTable *t, int64_t x, int64_t y, int64_t z, uint64_t *key)
{
    const int b = NBI_CODE_BITS(t->dim), s = t->shift;
    const uint64_t ox = (uint64_t)x - (uint64_t)t->lo[0], oy = (uint64_t)y - (uint64_t)t->lo[1];
    const uint64_t oz = (uint64_t)z - (uint64_t)t->lo[2];
    if ((((ox | oy) >> s) >> b) != 0 || (t->dim == 3 ? (oz >> s) >> b : oz) != 0) return false;
    *key = ox >> s | (oy >> s) << b | (t->dim == 3 ? (oz >> s) << 2 * b : 0);
    return true;
}

// The low code (the code of the low `shift` bits of the offsets) of the cell (x, y, z) of a
// coded table.
NBI_INLINE uint64_t nbi_ctab_low(const nbiCellTable *t, int64_t x, int64_t y, int64_t z)
{
    const uint64_t m = ((uint64_t)1 << t->shift) - 1;
    const uint64_t ox = ((uint64_t)x - (uint64_t)t->lo[0]) & m;
    const uint64_t oy = ((uint64_t)y - (uint64_t)t->lo[1]) & m;
    if (t->dim == 2) return nbi_spread2(ox) | nbi_spread2(oy) << 1;
    const uint64_t oz = ((uint64_t)z - (uint64_t)t->lo[2]) & m;
    return nbi_spread3(ox) | nbi_spread3(oy) << 1 | nbi_spread3(oz) << 2;
}

// A coded table's lookup (see above): the value of the cell (x, y, z), or -1. Slots are told
// apart by their keys; with low codes, an entry whose key matches is compared by its low code
// too.
NBI_INLINE int32_t nbi_ctab_find_coded(const nbiCellTable *t, int64_t x, int64_t y, int64_t z,
                                       uint64_t hash)
{
    uint64_t key;
    if (!nbi_ctab_key(t, x, y, z, &key)) return -1;
    const nbiCodedSlot *s = (const nbiCodedSlot *)t->buf.ptr;
    const size_t mask = ((size_t)1 << t->bits) - 1;
    size_t h = (size_t)(hash >> (64 - t->bits));
    if (t->lows == NULL) { // the key is the cell
        for (; s[h].value >= 0; h = (h + 1) & mask)
            if (s[h].key == key) return s[h].value;
        return -1;
    }
    if (nbi_ctab_low_fits(t)) { // the key and the bits it drops: the cell
        const uint32_t bits = nbi_ctab_low_bits(t, x, y, z);
        for (; s[h].value >= 0; h = (h + 1) & mask)
            if (s[h].key == key && s[h].low == bits) return s[h].value;
        return -1;
    }
    uint64_t low = 0; // computed at the first slot whose key matches
    bool have_low = false;
    for (; s[h].value >= 0; h = (h + 1) & mask) {
        if (s[h].key != key) continue;
        if (!have_low) low = nbi_ctab_low(t, x, y, z);
        have_low = true;
        if (t->lows[s[h].value] == low) return s[h].value;
    }
    return -1;
}

// The value stored for (x, y, z), whose nbi_cell_hash is `hash`, or -1 when the cell is absent.
NBI_INLINE int32_t nbi_ctab_find_hashed(const nbiCellTable *t, int64_t x, int64_t y, int64_t z,
                                        uint64_t hash)
{
    if (t->codes != NULL) return nbi_ctab_find_coded(t, x, y, z, hash);
    const int64_t h = nbi_ctab_find_slot_hashed(t, x, y, z, hash);
    return h < 0 ? -1 : nbi_ctab_slots(t)[h].value;
}

// The value stored for (x, y, z), or -1 when the cell is absent.
NBI_INLINE int32_t nbi_ctab_find(const nbiCellTable *t, int64_t x, int64_t y, int64_t z)
{
    return nbi_ctab_find_hashed(t, x, y, z, nbi_cell_hash(x, y, z));
}

// nbi_ctab_find for a cell of a row whose nbi_cell_hash_row is `row`.
NBI_INLINE int32_t nbi_ctab_find_in_row(const nbiCellTable *t, int64_t x, int64_t y, int64_t z,
                                        uint64_t row)
{
    return nbi_ctab_find_hashed(t, x, y, z, nbi_cell_hash_x(row, x));
}

// Asks the memory for the home slot of a cell whose nbi_cell_hash is `hash` ahead of its lookup;
// with `next`, the slot after it too where that may be another cache line (a probe's second).
NBI_INLINE void nbi_ctab_prefetch(const nbiCellTable *t, uint64_t hash, bool next)
{
    const size_t h = (size_t)(hash >> (64 - t->bits));
    if (t->codes != NULL) {
        nbi_prefetch((const nbiCodedSlot *)t->buf.ptr + h);
        return;
    }
    nbi_prefetch(nbi_ctab_slots(t) + h);
    if (next) nbi_prefetch(nbi_ctab_slots(t) + h + 1);
}

// A block slot (see above): mask 0 marks an empty slot.
typedef struct nbiBlockSlot {
    uint64_t mask;  // bit l: the block's cell of local code l is occupied
    uint64_t key;   // the block's x | y << 32 (offsets from lo, shifted right by the side's bits)
    uint32_t key_z; // and its z (0 in 2D)
    int32_t first;  // the number of its first cell
    uint64_t unused;
} nbiBlockSlot;

// The bits of a block's side along each axis: 4 cells in 3D, 8 in 2D (64 cells either way).
#define NBI_BLOCK_SIDE_BITS(dim) ((dim) == 3 ? 2 : 3)

NBI_INLINE const nbiBlockSlot *nbi_ctab_blocks(const nbiCellTable *t)
{
    return (const nbiBlockSlot *)((const char *)t->buf.ptr + t->block_at);
}

// The home of the block (bx, by, bz) (each below 2^32), as nbi_ctab_block_find takes it.
NBI_INLINE uint64_t nbi_ctab_block_hash(uint64_t bx, uint64_t by, uint64_t bz)
{
    return nbi_cell_hash((int64_t)bx, (int64_t)by, (int64_t)bz);
}

// Asks the memory for a block's home slot (nbi_ctab_block_hash) ahead of its lookup.
NBI_INLINE void nbi_ctab_block_prefetch(const nbiCellTable *t, uint64_t hash)
{
    nbi_prefetch(nbi_ctab_blocks(t) + (hash >> (64 - t->block_bits)));
}

// The mask of the block (bx, by, bz) (each below 2^32; its hash `hash`), with its first cell in
// *first; 0 (and *first 0) when no cell of it is occupied. The table must have blocks
// (block_bits > 0).
NBI_INLINE uint64_t nbi_ctab_block_find(const nbiCellTable *t, uint64_t bx, uint64_t by,
                                        uint64_t bz, uint64_t hash, int32_t *first)
{
    const nbiBlockSlot *s = nbi_ctab_blocks(t);
    const size_t mask = ((size_t)1 << t->block_bits) - 1;
    const uint64_t key = bx | by << 32;
    for (size_t h = (size_t)(hash >> (64 - t->block_bits)); s[h].mask != 0; h = (h + 1) & mask)
        if (s[h].key == key && s[h].key_z == (uint32_t)bz) {
            *first = s[h].first;
            return s[h].mask;
        }
    *first = 0;
    return 0;
}

// Empties the table as a coded one (see above) of 2^bits slots (its storage must hold them as
// nbiCodedSlot): entry c's key is the cell whose offsets from lo (in dim dimensions), shifted
// right by `shift`, have the code codes[c] (nbi_code_of), and whose low `shift` bits have the
// code lows[c] (nbi_code_low; lows NULL when shift is 0). The arrays must stay in place while
// the table is used. O(2^bits), 16 bytes a slot.
void nbi_ctab_reset_coded(nbiCellTable *t, int32_t bits, const uint64_t *codes,
                          const uint64_t *lows, int32_t shift, const int64_t lo[3], int32_t dim);

// Every reader of a coded table's blocks calls this after nbi_ctab_ready: the blocks were sized
// with the table's fill (which repacks its slots where that makes their room, while no reader
// looks), and are written by the first reader that needs them, as the table is (nbiCtabLazy),
// so that readers of single cells (all pairs) do not pay for them.
void nbi_ctab_fill_blocks_pending(nbiCtabLazy *lazy);
NBI_INLINE void nbi_ctab_blocks_ready(const nbiCellTable *t)
{
    nbiCtabLazy *z = t->lazy;
#if NBI_CTAB_LAZY
    if (z != NULL && atomic_load_explicit(&z->blocks, memory_order_acquire) != NBI_CTAB_FILLED)
        nbi_ctab_fill_blocks_pending(z);
#else
    (void)z;
#endif
}

// Fills a coded table's blocks (see above) from its entries' codes (count cells, the values
// 0 .. count - 1 in Z order), in the room its storage has after the coded slots (which it may
// repack fuller to make it); or leaves it without (block_bits 0). O(count + slots).
void nbi_ctab_fill_blocks(nbiCellTable *t);

// Inserts value c (>= 0), of a cell whose nbi_cell_hash is `hash`, whose key is `key`
// (nbi_ctab_key) and the bits it drops `low` (nbi_ctab_low_bits), into a coded table, without the
// room check or a comparison: its cell must not be in the table yet, and the caller keeps the room
// for every insert it makes (a reset sized for them). Returns the slot.
NBI_INLINE size_t nbi_ctab_insert_coded(nbiCellTable *t, uint64_t hash, uint64_t key, uint32_t low,
                                        int32_t c)
{
    nbiCodedSlot *s = (nbiCodedSlot *)t->buf.ptr;
    const size_t mask = ((size_t)1 << t->bits) - 1;
    size_t h = (size_t)(hash >> (64 - t->bits));
    while (s[h].value >= 0) h = (h + 1) & mask;
    s[h].key = key;
    s[h].value = c;
    s[h].low = nbi_ctab_low_fits(t) ? low : 0;
    t->count++;
    return h;
}

// The slot of (x, y, z), inserting it with `value` (>= 0) when absent (*inserted says which).
// Never allocates: the caller keeps count + 1 <= nbi_ctab_most(bits) (nbi_ctab_grow, or a reset
// sized for every insert to come); a full table is a broken invariant and returns -1.
int64_t nbi_ctab_insert(nbiCellTable *t, int64_t x, int64_t y, int64_t z, int32_t value,
                        bool *inserted);

// nbi_ctab_insert's probe from the cell's home slot (nbi_ctab_home), inline, without the room
// check (not for coded tables): for a loop that computed the home slot ahead (to prefetch it) and
// keeps the room for every insert it makes itself. Returns the cell's slot.
NBI_INLINE nbiCellSlot *nbi_ctab_insert_home(nbiCellTable *t, size_t home, const int64_t k[3],
                                             int32_t value, bool *inserted)
{
    nbiCellSlot *s = (nbiCellSlot *)t->buf.ptr;
    const size_t mask = ((size_t)1 << t->bits) - 1;
    for (size_t h = home;; h = (h + 1) & mask) {
        if (s[h].value < 0) {
            s[h].key[0] = k[0];
            s[h].key[1] = k[1];
            s[h].key[2] = k[2];
            s[h].value = value;
            s[h].aux = 0;
            t->count++;
            *inserted = true;
            return &s[h];
        }
        if (s[h].key[0] == k[0] && s[h].key[1] == k[1] && s[h].key[2] == k[2]) {
            *inserted = false;
            return &s[h];
        }
    }
}

// Sets the value of an occupied slot (from find_slot or insert).
NBI_INLINE void nbi_ctab_set(nbiCellTable *t, int64_t slot, int32_t value)
{
    ((nbiCellSlot *)t->buf.ptr)[slot].value = value;
}

// Makes room for `count` entries (at most half full: nbi_ctab_bits_for), rehashing into fresh
// storage when the table must grow. All or nothing: false (out of memory, or too many entries)
// leaves it as it was.
bool nbi_ctab_grow(nbiCellTable *t, const nbAllocator *a, size_t count);

// Frees the storage; the table is empty and unsized afterwards.
void nbi_ctab_free(nbiCellTable *t, const nbAllocator *a);

// Checks every invariant above. True when they all hold.
bool nbi_ctab_validate(const nbiCellTable *t);

#endif
