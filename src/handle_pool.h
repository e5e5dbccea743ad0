// SPDX-License-Identifier: MIT
// The handle pool: generation-checked handles with an owner tag, shared by the incremental
// structures (hash, tiles, quadtree). Internal, never installed.
//
// A pool is a table of slots. A live slot is named by an nbHandle (see nearby.h): bits 0-31 hold
// slot + 1, bits 32-47 the slot's generation, bits 48-63 the pool's owner tag. Freeing a slot
// bumps its generation, so every handle issued for it earlier is stale. Each live slot carries
// an int32 `value` that the owning structure uses (e.g. the item's position in a dense array).
//
// Typical use in a structure that must change nothing when it runs out of memory:
//
//     nbiPoolPrep prep;
//     nbStatus st = nbi_pool_prepare(&s->pool, 1, &prep);   // may allocate, changes nothing
//     if (st != NB_OK) return st;
//     if (!prepare_my_own_arrays(s)) { nbi_pool_abandon(&s->pool, &prep); return OOM; }
//     nbi_pool_commit(&s->pool, &prep);                       // cannot fail
//     commit_my_own_arrays(s);
//     nbi_pool_alloc(&s->pool, dense_index, &handle);         // cannot fail: room >= 1
//
// Not thread-safe for mutation; the const functions may run concurrently with each other.
#ifndef NEARBY_HANDLE_POOL_H
#define NEARBY_HANDLE_POOL_H

#include "nb_internal.h"

#include <stdbool.h>
#include <stdint.h>

/// The most slots a pool can have (2^31 - 2), so slot + 1 fits an int32 and counts stay int32.
#define NBI_POOL_MAX_SLOTS (INT32_MAX - 1)
/// The last generation a slot can carry. A slot freed at this generation is retired for good.
#define NBI_POOL_GEN_LAST 0xFFFFu

/// One slot: 8 bytes. `value` is the owner's value while live and the free-list link while free.
typedef struct nbiPoolSlot {
    int32_t value;  ///< live: the owner's value; free: next free slot or -1; retired: -1
    uint16_t gen;   ///< live: the generation of its handle; free: the generation of the next one
    uint16_t state; ///< NBI_SLOT_FREE, NBI_SLOT_LIVE or NBI_SLOT_RETIRED
} nbiPoolSlot;

enum { NBI_SLOT_FREE = 0, NBI_SLOT_LIVE = 1, NBI_SLOT_RETIRED = 2 };

/// A pool. Embed it by value in a structure; initialise with nbi_pool_init. Invariants (what
/// nbi_pool_validate checks) are listed in handle_pool.c.
typedef struct nbiPool {
    nbAllocator alloc;  ///< the hooks, resolved at init (never NULL functions)
    nbiBuf slots;       ///< nbiPoolSlot[cap]; slots [0, used) have been handed out at least once
    int32_t used;       ///< high-water mark of slots ever handed out
    int32_t live;       ///< live slots (the count)
    int32_t free_head;  ///< most recently freed slot (LIFO), -1 when the free list is empty
    int32_t free_count; ///< slots on the free list
    int32_t retired;    ///< slots whose generations are exhausted; never reused
    int32_t max_slots;  ///< the limit on `used`, 1 .. NBI_POOL_MAX_SLOTS
    uint16_t tag;       ///< owner tag stamped into every handle; never 0
} nbiPool;

/// Storage prepared by nbi_pool_prepare, to be committed or abandoned before anything else
/// changes the pool.
typedef struct nbiPoolPrep {
    nbiBuf base; ///< the pool's storage when prepared (checked by commit)
    nbiBuf next; ///< the storage to install; equal to base when no allocation was needed
} nbiPoolPrep;

/// Initialises an empty pool with the given hooks (NULL = malloc/free) and a fresh owner tag.
/// `max_slots` 0 means NBI_POOL_MAX_SLOTS. Allocates nothing. NB_ERR_NULL_ARG for an allocator
/// with only one of alloc / free set; NB_ERR_OUT_OF_RANGE when
/// max_slots is negative or above NBI_POOL_MAX_SLOTS (the pool is then zeroed, still safe to
/// destroy). The tag comes from a process-wide atomic counter: any 65535 pools initialised in
/// one process in a row get distinct tags (see handle_pool.c for the residual chance).
nbStatus nbi_pool_init(nbiPool *pool, const nbAllocator *allocator, int32_t max_slots);

/// Frees the pool's storage and zeroes it; every handle is refused afterwards. NULL is a no-op.
void nbi_pool_destroy(nbiPool *pool);

/// How many nbi_pool_alloc calls would succeed now without allocating memory.
int32_t nbi_pool_room(const nbiPool *pool);

/// Prepares storage so that, after nbi_pool_commit, nbi_pool_room() >= extra. Changes nothing
/// in the pool; on NB_OK the caller must call exactly one of commit / abandon before changing
/// the pool in any other way. NB_ERR_OUT_OF_RANGE (extra < 0, or beyond max_slots) and
/// NB_ERR_OUT_OF_MEMORY leave `prep` empty and need neither call.
nbStatus nbi_pool_prepare(const nbiPool *pool, int32_t extra, nbiPoolPrep *prep);
/// Installs prepared storage (copying the slots). Cannot fail and does not allocate.
void nbi_pool_commit(nbiPool *pool, nbiPoolPrep *prep);
/// Releases prepared storage without changing the pool.
void nbi_pool_abandon(const nbiPool *pool, nbiPoolPrep *prep);

/// Takes a slot (the most recently freed one, else a never-used one) with `value` and writes
/// its handle to `*out` (null on failure). Grows geometrically through the hooks when room is 0.
/// NB_ERR_OUT_OF_RANGE when max_slots are all in use or retired; NB_ERR_OUT_OF_MEMORY. On
/// failure the pool is unchanged. Never fails and never allocates when nbi_pool_room() > 0.
nbStatus nbi_pool_alloc(nbiPool *pool, int32_t value, nbHandle *out);

/// A bulk build's n allocations at once in a pool that has never given out a slot (every slot
/// still unused, none free or retired): slots 0 .. n-1 become live with value 0 at generation 0,
/// the handles n calls of nbi_pool_alloc would give. Room for n must have been made.
void nbi_pool_alloc_first(nbiPool *pool, int32_t n);

/// Frees the slot `h` names; its generation is bumped (or the slot retired when the generation
/// is exhausted), so `h` becomes stale. Writes the slot's value to `*value` if not NULL (0 on
/// failure). NB_ERR_BAD_HANDLE (null, stale, foreign, already freed) changes nothing.
nbStatus nbi_pool_free(nbiPool *pool, nbHandle h, int32_t *value);

/// Frees every live slot at once, as nbi_pool_free would (all handles become stale, the slots
/// are reused lowest index first). Keeps the storage and the tag. O(slots ever used).
void nbi_pool_clear(nbiPool *pool);

/// Live handles. 0 for NULL.
int32_t nbi_pool_count(const nbiPool *pool);
/// Bytes held from the allocator. 0 for NULL.
size_t nbi_pool_memory_bytes(const nbiPool *pool);

/// Slot-level access for the owning structure, whose own invariants guarantee `slot` is live
/// (e.g. the slot stored next to an item in its dense array). A slot that is not live is a bug
/// in the caller: it asserts, and then yields the null handle / 0 / does nothing.
nbHandle nbi_pool_handle_of(const nbiPool *pool, int32_t slot);
int32_t nbi_pool_slot_value(const nbiPool *pool, int32_t slot);
void nbi_pool_set_slot_value(nbiPool *pool, int32_t slot, int32_t value);

/// Checks every invariant listed in handle_pool.c. NB_OK, NB_ERR_NULL_ARG, or NB_ERR_INTERNAL.
nbStatus nbi_pool_validate(const nbiPool *pool);

/// The handle of a slot the owner knows to be live, in a hot loop (a query turning thousands of
/// slots into handles): no check beyond an assertion. Use nbi_pool_handle_of anywhere else.
NBI_INLINE nbHandle nbi_pool_handle_live(const nbiPool *pool, int32_t slot)
{
    const nbiPoolSlot *sl = (const nbiPoolSlot *)pool->slots.ptr + slot;
    NB_ASSERT(slot >= 0 && slot < pool->used && sl->state == NBI_SLOT_LIVE);
    nbHandle h;
    h.bits =
        (uint64_t)((uint32_t)slot + 1u) | ((uint64_t)sl->gen << 32) | ((uint64_t)pool->tag << 48);
    return h;
}

/// The handle of a slot handed out for the first time (generation 0): no read of the slot, for
/// a build that gives out a fresh pool's slots and writes their handles far apart in memory.
NBI_INLINE nbHandle nbi_pool_handle_first(const nbiPool *pool, int32_t slot)
{
    NB_ASSERT(slot >= 0 && slot < pool->used &&
              ((const nbiPoolSlot *)pool->slots.ptr)[slot].gen == 0);
    nbHandle h;
    h.bits = (uint64_t)((uint32_t)slot + 1u) | ((uint64_t)pool->tag << 48);
    return h;
}

/// The value of a slot the owner knows to be live, in a hot path (a move, right after
/// nbi_pool_lookup): no check beyond an assertion. Use nbi_pool_slot_value anywhere else.
NBI_INLINE int32_t nbi_pool_value_live(const nbiPool *pool, int32_t slot)
{
    const nbiPoolSlot *sl = (const nbiPoolSlot *)pool->slots.ptr + slot;
    NB_ASSERT(slot >= 0 && slot < pool->used && sl->state == NBI_SLOT_LIVE);
    return sl->value;
}

/// Resolves `h` to its live slot index in `*slot` (-1 on failure). NB_ERR_BAD_HANDLE when `h`
/// is null, was issued by another pool (tag), names a slot never used, or is stale. O(1).
NBI_INLINE nbStatus nbi_pool_lookup(const nbiPool *pool, nbHandle h, int32_t *slot)
{
    *slot = -1;
    const uint32_t s1 = (uint32_t)h.bits;
    const uint32_t gen = (uint32_t)(h.bits >> 32) & 0xFFFFu;
    const uint32_t tag = (uint32_t)(h.bits >> 48);
    if (s1 == 0 || s1 > (uint32_t)pool->used || tag != pool->tag) return NB_ERR_BAD_HANDLE;
    const nbiPoolSlot *sl = (const nbiPoolSlot *)pool->slots.ptr + (s1 - 1);
    if (sl->state != NBI_SLOT_LIVE || sl->gen != gen) return NB_ERR_BAD_HANDLE;
    *slot = (int32_t)(s1 - 1);
    return NB_OK;
}

#endif
