// SPDX-License-Identifier: MIT
// The handle pool (see handle_pool.h): a slot table with a LIFO free list linked by int32 index
// and a 16-bit generation per slot.
//
// Invariants of nbiPool (checked by nbi_pool_validate):
//   - tag != 0; 1 <= max_slots <= NBI_POOL_MAX_SLOTS; 0 <= used <= slots.cap <= max_slots, and
//     slots.ptr != NULL exactly when slots.cap > 0;
//   - every slot in [0, used) is FREE, LIVE or RETIRED; live, free_count and retired count
//     them, so live + free_count + retired == used;
//   - the free list starts at free_head, follows `value`, ends at -1, visits only FREE slots in
//     [0, used), has no cycle and holds every FREE slot (free_count of them);
//   - a RETIRED slot has gen == NBI_POOL_GEN_LAST (its last handle is the one that went stale).
//
// Generations. A slot starts at generation 0; freeing it bumps the generation, so the handle
// that named it no longer matches. A 16-bit generation would wrap after 65536 uses and bring
// a stale handle back to life (ABA). Instead a slot freed at generation NBI_POOL_GEN_LAST is
// retired: it never goes back on the free list, not even after nbi_pool_clear, so no handle can
// ever be reissued. The cost is 8 bytes per 65536 frees of one slot; the table then grows past
// retired slots, and after about 2^31 * 65536 frees in the life of one pool, allocation returns
// NB_ERR_OUT_OF_RANGE. Generation 0 is an ordinary generation: slot + 1 is never 0, so no
// issued handle is null.
//
// Owner tags. Every nbi_pool_init takes the next value of a process-wide atomic counter, mapped
// to 1..65535. So any 65535 pools initialised in a row in one process have distinct tags, and a
// handle from one is refused by another whatever its slot and generation. The residual chance:
// two pools whose inits are a multiple of 65535 apart share a tag; a handle from one is then
// accepted by the other only if it names a slot live there with the same generation. Tags are
// not a security boundary and handles are not meant to cross processes.

#include "handle_pool.h"

#include <string.h>

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
static atomic_uint nbi_pool_tag_counter;
static uint32_t nbi_pool_next_tick(void)
{
    return (uint32_t)atomic_fetch_add_explicit(&nbi_pool_tag_counter, 1u, memory_order_relaxed);
}
#elif defined(_MSC_VER)
#include <intrin.h>
static volatile long nbi_pool_tag_counter;
static uint32_t nbi_pool_next_tick(void)
{
    return (uint32_t)_InterlockedIncrement(&nbi_pool_tag_counter);
}
#else
// No atomics: tags stay distinct within one thread; concurrent inits may share a tag.
static uint32_t nbi_pool_tag_counter;
static uint32_t nbi_pool_next_tick(void)
{
    return nbi_pool_tag_counter++;
}
#endif

static nbiPoolSlot *nbi_slots(const nbiPool *pool)
{
    return (nbiPoolSlot *)pool->slots.ptr;
}

static nbHandle nbi_make_handle(const nbiPool *pool, int32_t slot, uint32_t gen)
{
    nbHandle h;
    h.bits = (uint64_t)((uint32_t)slot + 1u) | ((uint64_t)gen << 32) | ((uint64_t)pool->tag << 48);
    return h;
}

nbStatus nbi_pool_init(nbiPool *pool, const nbAllocator *allocator, int32_t max_slots)
{
    if (pool == NULL) return NB_ERR_NULL_ARG;
    memset(pool, 0, sizeof *pool);
    pool->free_head = -1;
    if (!nbi_allocator(allocator, &pool->alloc)) return NB_ERR_NULL_ARG; // half-set hooks
    if (max_slots < 0 || max_slots > NBI_POOL_MAX_SLOTS) return NB_ERR_OUT_OF_RANGE;
    pool->max_slots = max_slots == 0 ? NBI_POOL_MAX_SLOTS : max_slots;
    pool->tag = (uint16_t)(nbi_pool_next_tick() % 0xFFFFu + 1u);
    return NB_OK;
}

void nbi_pool_destroy(nbiPool *pool)
{
    if (pool == NULL) return;
    if (pool->slots.ptr != NULL)
        nbi_free(&pool->alloc, pool->slots.ptr, pool->slots.cap, sizeof(nbiPoolSlot));
    memset(pool, 0, sizeof *pool);
    pool->free_head = -1;
}

int32_t nbi_pool_room(const nbiPool *pool)
{
    if (pool == NULL) return 0;
    return pool->free_count + (int32_t)(pool->slots.cap - (size_t)pool->used);
}

// Storage with room for `cap_need` slots (cap_need <= max_slots), grown geometrically (1.5x,
// at least 16) but never past max_slots. No retry without the slack: one refused allocation is
// one NB_ERR_OUT_OF_MEMORY, which keeps the behaviour under a failing allocator simple.
static nbStatus nbi_pool_prepare_cap(const nbiPool *pool, size_t cap_need, nbiPoolPrep *prep)
{
    prep->base = pool->slots;
    prep->next = pool->slots;
    if (cap_need <= pool->slots.cap) return NB_OK;
    size_t cap = nbi_buf_grown_cap(&pool->slots, cap_need);
    if (cap > (size_t)pool->max_slots) cap = (size_t)pool->max_slots;
    NB_ASSERT(cap >= cap_need);
    void *p = nbi_alloc(&pool->alloc, cap, sizeof(nbiPoolSlot));
    if (p == NULL) {
        prep->next = pool->slots;
        return NB_ERR_OUT_OF_MEMORY;
    }
    prep->next.ptr = p;
    prep->next.cap = cap;
    return NB_OK;
}

nbStatus nbi_pool_prepare(const nbiPool *pool, int32_t extra, nbiPoolPrep *prep)
{
    if (pool == NULL || prep == NULL) return NB_ERR_NULL_ARG;
    prep->base = pool->slots;
    prep->next = pool->slots;
    if (extra < 0) return NB_ERR_OUT_OF_RANGE;
    const int32_t room = nbi_pool_room(pool);
    if (extra <= room) return NB_OK;
    // Fresh slots needed beyond the free list: used + (extra - free_count) <= max_slots.
    const int64_t need = (int64_t)pool->used + (int64_t)extra - (int64_t)pool->free_count;
    if (need > (int64_t)pool->max_slots) return NB_ERR_OUT_OF_RANGE;
    return nbi_pool_prepare_cap(pool, (size_t)need, prep);
}

void nbi_pool_commit(nbiPool *pool, nbiPoolPrep *prep)
{
    if (pool == NULL || prep == NULL) return;
    if (prep->next.ptr == prep->base.ptr) return;
    if (prep->base.ptr != pool->slots.ptr || prep->base.cap != pool->slots.cap ||
        prep->next.cap < (size_t)pool->used) {
        // The pool changed between prepare and commit: a bug in the caller.
        NB_ASSERT(!"nbi_pool_commit: pool changed since prepare");
        nbi_pool_abandon(pool, prep);
        return;
    }
    if (pool->used > 0)
        memcpy(prep->next.ptr, pool->slots.ptr, (size_t)pool->used * sizeof(nbiPoolSlot));
    nbi_buf_commit(&pool->alloc, &pool->slots, &prep->next, sizeof(nbiPoolSlot));
    prep->base = pool->slots;
}

void nbi_pool_abandon(const nbiPool *pool, nbiPoolPrep *prep)
{
    if (pool == NULL || prep == NULL) return;
    nbi_buf_abandon(&pool->alloc, &prep->base, &prep->next, sizeof(nbiPoolSlot));
    prep->next = prep->base;
}

nbStatus nbi_pool_alloc(nbiPool *pool, int32_t value, nbHandle *out)
{
    if (pool == NULL || out == NULL) return NB_ERR_NULL_ARG;
    out->bits = 0;
    int32_t slot;
    if (pool->free_head >= 0) {
        slot = pool->free_head;
        nbiPoolSlot *sl = nbi_slots(pool) + slot;
        if (sl->state != NBI_SLOT_FREE) {
            NB_ASSERT(!"free list names a slot that is not free");
            return NB_ERR_INTERNAL;
        }
        pool->free_head = sl->value;
        pool->free_count--;
    } else {
        if (pool->used >= pool->max_slots) return NB_ERR_OUT_OF_RANGE;
        if ((size_t)pool->used == pool->slots.cap) {
            nbiPoolPrep prep;
            nbStatus st = nbi_pool_prepare_cap(pool, (size_t)pool->used + 1u, &prep);
            if (st != NB_OK) return st;
            nbi_pool_commit(pool, &prep);
        }
        slot = pool->used++;
        nbi_slots(pool)[slot].gen = 0;
    }
    nbiPoolSlot *sl = nbi_slots(pool) + slot;
    sl->state = NBI_SLOT_LIVE;
    sl->value = value;
    pool->live++;
    *out = nbi_make_handle(pool, slot, sl->gen);
    return NB_OK;
}

void nbi_pool_alloc_first(nbiPool *pool, int32_t n)
{
    NB_ASSERT(pool->used == 0 && pool->free_head < 0 && nbi_pool_room(pool) >= n);
    nbiPoolSlot *sl = nbi_slots(pool);
    for (int32_t i = 0; i < n; i++) sl[i] = (nbiPoolSlot){0, 0, NBI_SLOT_LIVE};
    pool->used = n;
    pool->live = n;
}

// Frees a live slot: bump the generation and push it on the free list, or retire it.
static void nbi_pool_release(nbiPool *pool, int32_t slot)
{
    nbiPoolSlot *sl = nbi_slots(pool) + slot;
    pool->live--;
    if (sl->gen == NBI_POOL_GEN_LAST) {
        sl->state = NBI_SLOT_RETIRED;
        sl->value = -1;
        pool->retired++;
        return;
    }
    sl->gen++;
    sl->state = NBI_SLOT_FREE;
    sl->value = pool->free_head;
    pool->free_head = slot;
    pool->free_count++;
}

nbStatus nbi_pool_free(nbiPool *pool, nbHandle h, int32_t *value)
{
    if (value != NULL) *value = 0;
    if (pool == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    nbStatus st = nbi_pool_lookup(pool, h, &slot);
    if (st != NB_OK) return st;
    if (value != NULL) *value = nbi_slots(pool)[slot].value;
    nbi_pool_release(pool, slot);
    return NB_OK;
}

void nbi_pool_clear(nbiPool *pool)
{
    if (pool == NULL) return;
    nbiPoolSlot *slots = nbi_slots(pool);
    // Release every live slot, then relink the free list from the top down so that the lowest
    // free index is allocated first (deterministic, and dense arrays fill from the bottom).
    for (int32_t s = 0; s < pool->used; s++)
        if (slots[s].state == NBI_SLOT_LIVE) nbi_pool_release(pool, s);
    pool->free_head = -1;
    for (int32_t s = pool->used - 1; s >= 0; s--) {
        if (slots[s].state != NBI_SLOT_FREE) continue;
        slots[s].value = pool->free_head;
        pool->free_head = s;
    }
}

int32_t nbi_pool_count(const nbiPool *pool)
{
    return pool == NULL ? 0 : pool->live;
}

size_t nbi_pool_memory_bytes(const nbiPool *pool)
{
    return pool == NULL ? 0 : pool->slots.cap * sizeof(nbiPoolSlot);
}

static bool nbi_slot_is_live(const nbiPool *pool, int32_t slot)
{
    return pool != NULL && slot >= 0 && slot < pool->used &&
           nbi_slots(pool)[slot].state == NBI_SLOT_LIVE;
}

nbHandle nbi_pool_handle_of(const nbiPool *pool, int32_t slot)
{
    nbHandle h = {0};
    if (!nbi_slot_is_live(pool, slot)) {
        NB_ASSERT(!"nbi_pool_handle_of: slot is not live");
        return h;
    }
    return nbi_make_handle(pool, slot, nbi_slots(pool)[slot].gen);
}

int32_t nbi_pool_slot_value(const nbiPool *pool, int32_t slot)
{
    if (!nbi_slot_is_live(pool, slot)) {
        NB_ASSERT(!"nbi_pool_slot_value: slot is not live");
        return 0;
    }
    return nbi_slots(pool)[slot].value;
}

void nbi_pool_set_slot_value(nbiPool *pool, int32_t slot, int32_t value)
{
    if (!nbi_slot_is_live(pool, slot)) {
        NB_ASSERT(!"nbi_pool_set_slot_value: slot is not live");
        return;
    }
    nbi_slots(pool)[slot].value = value;
}

nbStatus nbi_pool_validate(const nbiPool *pool)
{
    if (pool == NULL) return NB_ERR_NULL_ARG;
    if (pool->tag == 0) return NB_ERR_INTERNAL;
    if (pool->max_slots < 1 || pool->max_slots > NBI_POOL_MAX_SLOTS) return NB_ERR_INTERNAL;
    if (pool->used < 0 || (size_t)pool->used > pool->slots.cap) return NB_ERR_INTERNAL;
    if (pool->slots.cap > (size_t)pool->max_slots) return NB_ERR_INTERNAL;
    if ((pool->slots.ptr == NULL) != (pool->slots.cap == 0)) return NB_ERR_INTERNAL;
    if (pool->live < 0 || pool->free_count < 0 || pool->retired < 0) return NB_ERR_INTERNAL;
    const nbiPoolSlot *slots = nbi_slots(pool);
    int32_t n_live = 0;
    int32_t n_free = 0;
    int32_t n_retired = 0;
    for (int32_t s = 0; s < pool->used; s++) {
        switch (slots[s].state) {
        case NBI_SLOT_LIVE: n_live++; break;
        case NBI_SLOT_FREE: n_free++; break;
        case NBI_SLOT_RETIRED:
            if (slots[s].gen != NBI_POOL_GEN_LAST) return NB_ERR_INTERNAL;
            n_retired++;
            break;
        default: return NB_ERR_INTERNAL;
        }
    }
    if (n_live != pool->live || n_free != pool->free_count || n_retired != pool->retired)
        return NB_ERR_INTERNAL;
    // A walk that reaches -1 visits distinct slots (a repeat would loop forever), so at most
    // n_free steps ending at -1 through FREE slots, exactly n_free of them, means acyclic and
    // complete.
    int32_t steps = 0;
    for (int32_t s = pool->free_head; s != -1; s = slots[s].value) {
        if (s < 0 || s >= pool->used || slots[s].state != NBI_SLOT_FREE) return NB_ERR_INTERNAL;
        if (++steps > n_free) return NB_ERR_INTERNAL; // a cycle
    }
    if (steps != n_free) return NB_ERR_INTERNAL;
    return NB_OK;
}
