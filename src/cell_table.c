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
    memset(t->buf.ptr, 0xff, ((size_t)1 << bits) * sizeof(nbiCodedSlot));
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
    return used == (size_t)t->count;
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
#if NBI_CTAB_LAZY
    atomic_store_explicit(&lazy->state, NBI_CTAB_PENDING, memory_order_relaxed);
#else
    lazy->fill(lazy->owner);
#endif
}

void nbi_ctab_fill_pending(nbiCtabLazy *lazy)
{
#if NBI_CTAB_LAZY
    int s = NBI_CTAB_PENDING;
    if (atomic_compare_exchange_strong_explicit(&lazy->state, &s, NBI_CTAB_FILLING,
                                                memory_order_acquire, memory_order_acquire)) {
        lazy->fill(lazy->owner);
        atomic_store_explicit(&lazy->state, NBI_CTAB_FILLED, memory_order_release);
        return;
    }
    // Another reader fills it (a few milliseconds at most: one insert a cell). The waiter gives
    // up its core meanwhile: with more readers than cores, a spin could hold the filler's.
    while (atomic_load_explicit(&lazy->state, memory_order_acquire) != NBI_CTAB_FILLED) {
#if defined(__unix__)
        sched_yield();
#endif
    }
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
