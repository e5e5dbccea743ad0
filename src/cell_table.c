// SPDX-License-Identifier: MIT
// The cell table: see cell_table.h for the design and its invariants.
#if defined(__unix__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE // sched_yield under -std=c11
#endif
#include "cell_table.h"

#include <string.h>
#if defined(__unix__)
#include <sched.h>
#endif

// The fewest bits (at least NBI_CTAB_MIN_BITS) whose table holds count entries with
// 2^bits * num / 4 of them at most; NBI_CTAB_MAX_BITS + 1 when none does.
static int32_t nbi_ctab_bits_at(size_t count, size_t num)
{
    int32_t bits = NBI_CTAB_MIN_BITS;
    while (bits <= NBI_CTAB_MAX_BITS && (((size_t)1 << (bits - 2)) * num) < count) bits++;
    return bits;
}

int32_t nbi_ctab_bits_for(size_t count)
{
    return nbi_ctab_bits_at(count, 2);
}

int32_t nbi_ctab_bits_packed(size_t count)
{
    return nbi_ctab_bits_at(count, 3);
}

void nbi_ctab_reset(nbiCellTable *t, int32_t bits)
{
    NB_ASSERT(bits >= NBI_CTAB_MIN_BITS && bits <= NBI_CTAB_MAX_BITS);
    NB_ASSERT(((size_t)1 << bits) <= t->buf.cap);
    t->bits = bits;
    t->count = 0;
    t->codes = t->lows = NULL;
    t->shift = 0;
    t->block_bits = t->block_count = 0;
    memset(t->buf.ptr, 0xff, ((size_t)1 << bits) * sizeof(nbiCellSlot)); // value -1 everywhere
}

void nbi_ctab_reset_coded(nbiCellTable *t, int32_t bits, const uint64_t *codes,
                          const uint64_t *lows, int32_t shift, const int64_t lo[3], int32_t dim)
{
    NB_ASSERT(bits >= NBI_CTAB_MIN_BITS && bits <= NBI_CTAB_MAX_BITS && codes != NULL);
    NB_ASSERT((shift == 0) == (lows == NULL) && shift >= 0 && shift <= NBI_CODE_BITS(dim));
    NB_ASSERT(((size_t)1 << bits) <= t->buf.cap * (sizeof(nbiCellSlot) / sizeof(nbiCodedSlot)));
    t->bits = bits;
    t->count = 0;
    t->codes = codes;
    t->lows = lows;
    t->shift = shift;
    for (int a = 0; a < 3; a++) t->lo[a] = lo[a];
    t->dim = dim;
    t->block_bits = t->block_count = t->block_plan = 0;
    memset(t->buf.ptr, 0xff, ((size_t)1 << bits) * sizeof(nbiCodedSlot));
}

// Cell c's offsets from lo (from its code and low code).
static void nbi_ctab_offsets(const nbiCellTable *t, int32_t c, uint64_t off[3])
{
    for (int a = 0; a < 3; a++) {
        const uint64_t hi = a < t->dim ? nbi_code_axis(t->codes[c], t->dim, a) : 0;
        const uint64_t lw =
            a < t->dim && t->lows != NULL ? nbi_code_axis(t->lows[c], t->dim, a) : 0;
        off[a] = hi << t->shift | lw;
    }
}

// The local code of the cell at offsets off in its block: the low side bits of each axis,
// interleaved.
static unsigned nbi_ctab_local(const uint64_t off[3], int dim)
{
    const uint64_t m = ((uint64_t)1 << NBI_BLOCK_SIDE_BITS(dim)) - 1;
    if (dim == 2) return (unsigned)(nbi_spread2(off[0] & m) | nbi_spread2(off[1] & m) << 1);
    return (unsigned)(nbi_spread3(off[0] & m) | nbi_spread3(off[1] & m) << 1 |
                      nbi_spread3(off[2] & m) << 2);
}

// Inserts the block at offsets off (of any of its cells) with its mask and first cell.
static void nbi_ctab_block_insert(nbiCellTable *t, const uint64_t off[3], uint64_t mask,
                                  int32_t first)
{
    const int sb = NBI_BLOCK_SIDE_BITS(t->dim);
    const uint64_t bx = off[0] >> sb, by = off[1] >> sb, bz = off[2] >> sb;
    nbiBlockSlot *s = (nbiBlockSlot *)((char *)t->buf.ptr + t->block_at);
    const size_t m = ((size_t)1 << t->block_bits) - 1;
    size_t h = (size_t)(nbi_ctab_block_hash(bx, by, bz) >> (64 - t->block_bits));
    while (s[h].mask != 0) h = (h + 1) & m;
    s[h].mask = mask;
    s[h].key = bx | by << 32;
    s[h].key_z = (uint32_t)bz;
    s[h].first = first;
    s[h].unused = 0;
    t->block_count++;
}

// Cell c's block and place in it from its codes alone: pre[] names the block (the exact Z code
// of its offsets without the low 6 bits, in two words), the return value is its local code.
static unsigned nbi_ctab_zsplit(const nbiCellTable *t, int32_t c, uint64_t pre[2])
{
    const uint64_t code = t->codes[c];
    const int ds = t->dim * t->shift; // the bits of the low code
    if (t->lows == NULL) {
        pre[0] = code >> 6;
        pre[1] = 0;
        return (unsigned)(code & 63);
    }
    const uint64_t low = t->lows[c];
    if (ds >= 6) {
        pre[0] = code;
        pre[1] = low >> 6;
        return (unsigned)(low & 63);
    }
    pre[0] = code >> (6 - ds);
    pre[1] = 0;
    return (unsigned)((code << ds | low) & 63);
}

// Inserts the block whose first cell is `first`, of mask `mask`; false when its coordinates do
// not fit the keys.
static bool nbi_ctab_block_add(nbiCellTable *t, int32_t first, uint64_t mask)
{
    const int sb = NBI_BLOCK_SIDE_BITS(t->dim);
    uint64_t off[3];
    nbi_ctab_offsets(t, first, off);
    if ((off[0] >> sb | off[1] >> sb | off[2] >> sb) >> 32 != 0) return false;
    nbi_ctab_block_insert(t, off, mask, first);
    return true;
}

// Without room for 2^block_bits block slots after a coded table sized at most half full: the
// coded table again, at most three quarters full (nbi_ctab_bits_packed), each cell's key from
// its codes, when that leaves the room. False (the table unchanged) when it would not. The
// lookups of single cells then probe a little longer (1.8 slots a hit, 3.6 a miss at 0.6 full,
// "The table at most three quarters full" in docs/grid.md), but a radius query's box, whose
// absent cells made those probes costly, goes through the blocks.
static bool nbi_ctab_repack_coded(nbiCellTable *t, int32_t block_bits)
{
    const int32_t bits = nbi_ctab_bits_packed((size_t)t->count);
    if (bits >= t->bits) return false;
    const uintptr_t base = (uintptr_t)t->buf.ptr, end = base + t->buf.cap * sizeof(nbiCellSlot);
    const uintptr_t from = (base + ((size_t)sizeof(nbiCodedSlot) << bits) + 63) & ~(uintptr_t)63;
    if (from >= end || (size_t)(end - from) / sizeof(nbiBlockSlot) < ((size_t)1 << block_bits))
        return false;
    const int32_t count = t->count;
    t->bits = bits;
    t->count = 0;
    memset(t->buf.ptr, 0xff, ((size_t)1 << bits) * sizeof(nbiCodedSlot));
    for (int32_t c = 0; c < count; c++) {
        uint64_t off[3], key = 0;
        nbi_ctab_offsets(t, c, off);
        const int64_t k[3] = {t->lo[0] + (int64_t)off[0], t->lo[1] + (int64_t)off[1],
                              t->lo[2] + (int64_t)off[2]};
        nbi_ctab_key(t, k[0], k[1], k[2], &key);
        nbi_ctab_insert_coded(t, nbi_cell_hash(k[0], k[1], k[2]), key,
                              nbi_ctab_low_bits(t, k[0], k[1], k[2]), c);
    }
    return true;
}

// Sizes a coded table's blocks (block_plan: their bits, 0 for none; block_at), repacking the
// coded slots where that makes the room; the blocks themselves are not written (block_bits 0).
// Runs where no reader can look at the table (its fill), since a repack moves its slots.
static void nbi_ctab_plan_blocks(nbiCellTable *t)
{
    t->block_bits = t->block_count = t->block_plan = 0;
    if (t->codes == NULL || t->count == 0) return;
    size_t blocks = 0;
    uint64_t prev[2] = {0, 0};
    for (int32_t c = 0; c < t->count; c++) {
        uint64_t pre[2];
        nbi_ctab_zsplit(t, c, pre);
        blocks += c == 0 || pre[0] != prev[0] || pre[1] != prev[1];
        prev[0] = pre[0];
        prev[1] = pre[1];
    }
    for (int pass = 0; pass < 2; pass++) {
        // The room after the coded slots, from the first cache line boundary (a slot then never
        // straddles two lines).
        const uintptr_t base = (uintptr_t)t->buf.ptr;
        const uintptr_t end = base + t->buf.cap * sizeof(nbiCellSlot);
        const uintptr_t from =
            (base + ((size_t)sizeof(nbiCodedSlot) << t->bits) + 63) & ~(uintptr_t)63;
        const size_t room = from < end ? (size_t)(end - from) / sizeof(nbiBlockSlot) : 0;
        int32_t bits = nbi_ctab_bits_for(blocks);
        if (((size_t)1 << bits) > room) bits = nbi_ctab_bits_packed(blocks);
        if (bits > NBI_CTAB_MAX_BITS) return;
        if (((size_t)1 << bits) <= room) {
            t->block_at = (size_t)(from - base);
            t->block_plan = bits;
            return;
        }
        if (pass > 0 || !nbi_ctab_repack_coded(t, bits)) return;
    }
}

// Writes the blocks block_plan sized (none when a block's coordinates do not fit the keys).
static void nbi_ctab_put_blocks(nbiCellTable *t)
{
    t->block_bits = t->block_count = 0;
    if (t->block_plan == 0) return;
    t->block_bits = t->block_plan;
    memset((char *)t->buf.ptr + t->block_at, 0, sizeof(nbiBlockSlot) << t->block_bits);
    uint64_t mask = 0, prev[2] = {0, 0};
    int32_t first = 0;
    for (int32_t c = 0; c < t->count; c++) {
        uint64_t pre[2];
        const unsigned l = nbi_ctab_zsplit(t, c, pre);
        if (c > 0 && (pre[0] != prev[0] || pre[1] != prev[1])) {
            if (!nbi_ctab_block_add(t, first, mask)) break;
            mask = 0;
            first = c;
        }
        mask |= (uint64_t)1 << l;
        prev[0] = pre[0];
        prev[1] = pre[1];
    }
    if (!nbi_ctab_block_add(t, first, mask)) t->block_bits = t->block_count = 0;
}

void nbi_ctab_fill_blocks(nbiCellTable *t)
{
    nbi_ctab_plan_blocks(t);
    nbi_ctab_put_blocks(t);
}

// nbi_ctab_validate of a coded table's blocks: every cell in the block its offsets name, at
// its rank in the block's mask; each block reachable from its home, once.
static bool nbi_ctab_validate_blocks(const nbiCellTable *t)
{
    if (t->block_bits == 0) return t->block_count == 0;
    const size_t slots = (size_t)1 << t->block_bits, m = slots - 1;
    if (t->block_bits < NBI_CTAB_MIN_BITS || t->block_bits > NBI_CTAB_MAX_BITS ||
        (size_t)t->block_count > nbi_ctab_most(t->block_bits) ||
        t->block_at < (sizeof(nbiCodedSlot) << t->bits) ||
        t->block_at + sizeof(nbiBlockSlot) * slots > t->buf.cap * sizeof(nbiCellSlot))
        return false;
    const nbiBlockSlot *s = nbi_ctab_blocks(t);
    const int sb = NBI_BLOCK_SIDE_BITS(t->dim);
    int64_t cells = 0, used = 0;
    for (size_t h = 0; h < slots; h++) {
        if (s[h].mask == 0) continue;
        used++;
        const uint64_t bx = s[h].key & 0xFFFFFFFFu, by = s[h].key >> 32, bz = s[h].key_z;
        for (size_t p = (size_t)(nbi_ctab_block_hash(bx, by, bz) >> (64 - t->block_bits)); p != h;
             p = (p + 1) & m)
            if (s[p].mask == 0 || (s[p].key == s[h].key && s[p].key_z == s[h].key_z)) return false;
        const int n = nbi_popcount64(s[h].mask);
        if (s[h].first < 0 || s[h].first > t->count - n) return false;
        for (int i = 0; i < n; i++) {
            uint64_t off[3];
            nbi_ctab_offsets(t, s[h].first + i, off);
            if ((off[0] >> sb) != bx || (off[1] >> sb) != by || (off[2] >> sb) != bz) return false;
            const unsigned l = nbi_ctab_local(off, t->dim);
            if (!((s[h].mask >> l) & 1) ||
                nbi_popcount64(s[h].mask & (((uint64_t)1 << l) - 1)) != i)
                return false;
        }
        cells += n;
    }
    return used == t->block_count && cells == t->count;
}

// nbi_ctab_validate of a coded table: each value names an entry, reachable from the home slot of
// the cell its code names, with no copy of that code before it.
static bool nbi_ctab_validate_coded(const nbiCellTable *t)
{
    const size_t slots = (size_t)1 << t->bits, mask = slots - 1;
    if (slots > t->buf.cap * (sizeof(nbiCellSlot) / sizeof(nbiCodedSlot))) return false;
    if ((size_t)t->count > nbi_ctab_most(t->bits) || (t->dim != 2 && t->dim != 3)) return false;
    const nbiCodedSlot *s = (const nbiCodedSlot *)t->buf.ptr;
    size_t used = 0;
    for (size_t h = 0; h < slots; h++) {
        const int32_t c = s[h].value;
        if (c < 0) continue;
        if (c >= t->count) return false;
        used++;
        int64_t k[3];
        for (int a = 0; a < 3; a++) {
            const uint64_t hi = a < t->dim ? nbi_code_axis(t->codes[c], t->dim, a) : 0;
            const uint64_t lw =
                a < t->dim && t->lows != NULL ? nbi_code_axis(t->lows[c], t->dim, a) : 0;
            k[a] = t->lo[a] + (int64_t)(hi << t->shift | lw);
        }
        uint64_t key;
        if (!nbi_ctab_key(t, k[0], k[1], k[2], &key) || s[h].key != key) return false;
        if (s[h].low != (nbi_ctab_low_fits(t) ? nbi_ctab_low_bits(t, k[0], k[1], k[2]) : 0))
            return false;
        for (size_t p = nbi_ctab_home(t, k[0], k[1], k[2]); p != h; p = (p + 1) & mask) {
            const int32_t b = s[p].value;
            if (b < 0 ||
                (t->codes[b] == t->codes[c] && (t->lows == NULL || t->lows[b] == t->lows[c])))
                return false;
        }
    }
    return used == (size_t)t->count && nbi_ctab_validate_blocks(t);
}

int64_t nbi_ctab_insert(nbiCellTable *t, int64_t x, int64_t y, int64_t z, int32_t value,
                        bool *inserted)
{
    *inserted = false;
    NB_ASSERT(t->codes == NULL);
    if (t->bits == 0 || (size_t)t->count + 1 > nbi_ctab_most(t->bits)) {
        NB_ASSERT(!"cell table over three quarters full");
        return -1;
    }
    const int64_t k[3] = {x, y, z};
    const nbiCellSlot *at = nbi_ctab_insert_home(t, nbi_ctab_home(t, x, y, z), k, value, inserted);
    return (int64_t)(at - nbi_ctab_slots(t));
}

void nbi_ctab_defer(nbiCellTable *t, nbiCtabLazy *lazy)
{
    t->lazy = lazy;
    lazy->table = t;
#if NBI_CTAB_LAZY
    atomic_store_explicit(&lazy->state, NBI_CTAB_PENDING, memory_order_relaxed);
    atomic_store_explicit(&lazy->blocks, NBI_CTAB_PENDING, memory_order_relaxed);
#else
    lazy->fill(lazy->owner);
    nbi_ctab_fill_blocks(t);
#endif
}

#if NBI_CTAB_LAZY
// Runs step(lazy) once for the state `state` (pending -> filling -> filled) and publishes what it
// wrote with a release store; a reader that finds another filling waits for it (a few
// milliseconds at most: one insert a cell), giving up its core meanwhile: with more readers than
// cores, a spin could hold the filler's.
static void nbi_ctab_once(atomic_int *state, void (*step)(nbiCtabLazy *), nbiCtabLazy *lazy)
{
    int s = NBI_CTAB_PENDING;
    if (atomic_compare_exchange_strong_explicit(state, &s, NBI_CTAB_FILLING, memory_order_acquire,
                                                memory_order_acquire)) {
        step(lazy);
        atomic_store_explicit(state, NBI_CTAB_FILLED, memory_order_release);
        return;
    }
    while (atomic_load_explicit(state, memory_order_acquire) != NBI_CTAB_FILLED) {
#if defined(__unix__)
        sched_yield();
#endif
    }
}

// The table's fill: the owner's entries, then its blocks sized (written on first use).
static void nbi_ctab_fill_step(nbiCtabLazy *lazy)
{
    lazy->fill(lazy->owner);
    nbi_ctab_plan_blocks(lazy->table);
}

static void nbi_ctab_blocks_step(nbiCtabLazy *lazy)
{
    nbi_ctab_put_blocks(lazy->table);
}
#endif

void nbi_ctab_fill_pending(nbiCtabLazy *lazy)
{
#if NBI_CTAB_LAZY
    nbi_ctab_once(&lazy->state, nbi_ctab_fill_step, lazy);
#else
    (void)lazy;
#endif
}

void nbi_ctab_fill_blocks_pending(nbiCtabLazy *lazy)
{
#if NBI_CTAB_LAZY
    nbi_ctab_once(&lazy->blocks, nbi_ctab_blocks_step, lazy);
#else
    (void)lazy;
#endif
}

bool nbi_ctab_is_filled(const nbiCellTable *t)
{
#if NBI_CTAB_LAZY
    return t->lazy == NULL ||
           atomic_load_explicit(&t->lazy->state, memory_order_acquire) == NBI_CTAB_FILLED;
#else
    return true;
#endif
}

bool nbi_ctab_grow(nbiCellTable *t, const nbAllocator *a, size_t count)
{
    const int32_t bits = nbi_ctab_bits_for(count);
    if (bits > NBI_CTAB_MAX_BITS) return false;
    if (bits <= t->bits) return true;
    nbiBuf next;
    const nbiBuf empty = {NULL, 0};
    if (!nbi_buf_prepare(a, &empty, &next, (size_t)1 << bits, sizeof(nbiCellSlot))) return false;
    nbiCellTable fresh = {0};
    fresh.buf = next;
    nbi_ctab_reset(&fresh, bits);
    const nbiCellSlot *old = nbi_ctab_slots(t);
    const size_t slots = t->bits == 0 ? 0 : (size_t)1 << t->bits;
    for (size_t h = 0; h < slots; h++) {
        if (old[h].value < 0) continue;
        bool inserted;
        nbi_ctab_insert(&fresh, old[h].key[0], old[h].key[1], old[h].key[2], old[h].value,
                        &inserted);
    }
    nbi_ctab_free(t, a);
    *t = fresh;
    return true;
}

void nbi_ctab_free(nbiCellTable *t, const nbAllocator *a)
{
    nbi_free(a, t->buf.ptr, t->buf.cap, sizeof(nbiCellSlot));
    t->buf.ptr = NULL;
    t->buf.cap = 0;
    t->bits = 0;
    t->count = 0;
    t->codes = t->lows = NULL;
    t->shift = 0;
    t->block_bits = t->block_count = 0;
}

bool nbi_ctab_validate(const nbiCellTable *t)
{
    if (t->bits == 0) return t->count == 0;
    if (t->bits < NBI_CTAB_MIN_BITS || t->bits > NBI_CTAB_MAX_BITS) return false;
    if (t->codes != NULL) return nbi_ctab_validate_coded(t);
    const size_t slots = (size_t)1 << t->bits, mask = slots - 1;
    if (slots > t->buf.cap || (size_t)t->count > nbi_ctab_most(t->bits)) return false;
    const nbiCellSlot *s = nbi_ctab_slots(t);
    size_t used = 0;
    for (size_t h = 0; h < slots; h++) {
        if (s[h].value < 0) continue;
        used++;
        // reachable: no empty slot between its home and h, and no earlier copy of its key
        for (size_t p = nbi_ctab_home(t, s[h].key[0], s[h].key[1], s[h].key[2]); p != h;
             p = (p + 1) & mask) {
            if (s[p].value < 0) return false;
            if (s[p].key[0] == s[h].key[0] && s[p].key[1] == s[h].key[1] &&
                s[p].key[2] == s[h].key[2])
                return false;
        }
    }
    return used == (size_t)t->count;
}
