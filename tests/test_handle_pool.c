// SPDX-License-Identifier: MIT
// The handle pool (src/handle_pool.h): handles and their layout, reuse with a new generation,
// refusal of null / stale / foreign / freed handles with nothing changed, clear, generation
// exhaustion, the slot limit, growth and the prepare/commit split, a failing-allocator sweep, and
// random operations against a reference model that predicts every slot and generation.
#include "handle_pool.h"
#include "nb_test.h"

// ---- helpers ----

static uint32_t h_slot1(nbHandle h)
{
    return (uint32_t)h.bits;
}
static uint32_t h_gen(nbHandle h)
{
    return (uint32_t)(h.bits >> 32) & 0xFFFFu;
}
static uint32_t h_tag(nbHandle h)
{
    return (uint32_t)(h.bits >> 48);
}
static nbHandle h_make(uint32_t slot1, uint32_t gen, uint32_t tag)
{
    nbHandle h;
    h.bits = (uint64_t)slot1 | ((uint64_t)gen << 32) | ((uint64_t)tag << 48);
    return h;
}

// A copy of a pool's header and used slots, to check that a refused call changed nothing.
typedef struct snap {
    nbiPool head;
    nbiPoolSlot *slots;
} snap;

static snap snap_take(const nbiPool *p)
{
    snap s;
    s.head = *p;
    size_t n = (size_t)(p->used > 0 ? p->used : 1);
    s.slots = (nbiPoolSlot *)malloc(n * sizeof(nbiPoolSlot));
    if (s.slots != NULL && p->used > 0)
        memcpy(s.slots, p->slots.ptr, (size_t)p->used * sizeof(nbiPoolSlot));
    return s;
}

// True if `p` is exactly as snapshotted (same storage, counters, tag and slots); frees the copy.
static bool snap_same(snap *s, const nbiPool *p)
{
    const nbiPool *a = &s->head;
    bool same = s->slots != NULL && a->alloc.alloc == p->alloc.alloc &&
                a->alloc.free == p->alloc.free && a->alloc.user == p->alloc.user &&
                a->slots.ptr == p->slots.ptr && a->slots.cap == p->slots.cap &&
                a->used == p->used && a->live == p->live && a->free_head == p->free_head &&
                a->free_count == p->free_count && a->retired == p->retired &&
                a->max_slots == p->max_slots && a->tag == p->tag &&
                (p->used == 0 ||
                 memcmp(s->slots, p->slots.ptr, (size_t)p->used * sizeof(nbiPoolSlot)) == 0);
    free(s->slots);
    s->slots = NULL;
    return same;
}

// The checked get and set, as the structures do them: look the handle up once (which refuses a
// null, foreign, stale or freed one), then read or write the slot's value.
static nbStatus pool_get(const nbiPool *p, nbHandle h, int32_t *value)
{
    int32_t slot = -2;
    *value = 0;
    nbStatus st = nbi_pool_lookup(p, h, &slot);
    if (st != NB_OK) return slot == -1 ? st : NB_ERR_INTERNAL; // a refused lookup writes -1
    *value = nbi_pool_slot_value(p, slot);
    return NB_OK;
}

static nbStatus pool_set(nbiPool *p, nbHandle h, int32_t value)
{
    int32_t slot = -2;
    nbStatus st = nbi_pool_lookup(p, h, &slot);
    if (st != NB_OK) return slot == -1 ? st : NB_ERR_INTERNAL;
    nbi_pool_set_slot_value(p, slot, value);
    return NB_OK;
}

// The first live slot after `slot` (-1 to start), or -1: a walk over the slots ever used, as a
// structure walks its dense array. Each live slot's handle (nbi_pool_handle_of) must look up to
// that very slot, else the walk stops with -2.
static int32_t pool_next_live(const nbiPool *p, int32_t slot)
{
    const nbiPoolSlot *sl = (const nbiPoolSlot *)p->slots.ptr;
    for (int32_t s = slot + 1; s < p->used; s++) {
        if (sl[s].state != NBI_SLOT_LIVE) continue;
        int32_t back = -1;
        if (nbi_pool_lookup(p, nbi_pool_handle_of(p, s), &back) != NB_OK || back != s) return -2;
        return s;
    }
    return -1;
}

static nbStatus prepare_commit(nbiPool *p, int32_t extra)
{
    nbiPoolPrep prep;
    nbStatus st = nbi_pool_prepare(p, extra, &prep);
    if (st == NB_OK) nbi_pool_commit(p, &prep);
    return st;
}

static nbStatus prepare_abandon(nbiPool *p, int32_t extra)
{
    nbiPoolPrep prep;
    nbStatus st = nbi_pool_prepare(p, extra, &prep);
    if (st == NB_OK) nbi_pool_abandon(p, &prep);
    return st;
}

// ---- tests ----

static int test_basic(void)
{
    nbtAlloc ta = {0};
    nbAllocator al = nbt_allocator(&ta);
    nbiPool p;
    NB_CHECK_OK(nbi_pool_init(&p, &al, 0));
    NB_CHECK_OK(nbi_pool_validate(&p));
    NB_CHECK(p.tag != 0);
    NB_CHECK(ta.allocs == 0); // init allocates nothing
    NB_CHECK(nbi_pool_count(&p) == 0);
    NB_CHECK(nbi_pool_memory_bytes(&p) == 0);
    NB_CHECK(pool_next_live(&p, -1) == -1);

    nbHandle h[3];
    for (int i = 0; i < 3; i++) {
        NB_CHECK_OK(nbi_pool_alloc(&p, 100 + i, &h[i]));
        NB_CHECK(h[i].bits != 0);
        NB_CHECK(h_slot1(h[i]) == (uint32_t)i + 1u);
        NB_CHECK(h_gen(h[i]) == 0);
        NB_CHECK(h_tag(h[i]) == p.tag);
        NB_CHECK_OK(nbi_pool_validate(&p));
    }
    NB_CHECK(nbi_pool_count(&p) == 3);
    NB_CHECK(nbi_pool_memory_bytes(&p) == (size_t)ta.live_bytes);
    NB_CHECK(nbi_pool_memory_bytes(&p) >= 3 * sizeof(nbiPoolSlot));
    for (int i = 0; i < 3; i++) {
        int32_t v = -1;
        int32_t slot = -2;
        NB_CHECK_OK(pool_get(&p, h[i], &v));
        NB_CHECK(v == 100 + i);
        NB_CHECK_OK(nbi_pool_lookup(&p, h[i], &slot));
        NB_CHECK(slot == i);
        NB_CHECK(nbi_pool_handle_of(&p, slot).bits == h[i].bits);
        NB_CHECK(nbi_pool_handle_first(&p, slot).bits == h[i].bits); // generation 0: the same
        NB_CHECK(nbi_pool_slot_value(&p, slot) == 100 + i);
    }
    NB_CHECK_OK(pool_set(&p, h[1], -7));
    int32_t v = 0;
    NB_CHECK_OK(pool_get(&p, h[1], &v));
    NB_CHECK(v == -7);
    nbi_pool_set_slot_value(&p, 2, 42);
    NB_CHECK_OK(pool_get(&p, h[2], &v));
    NB_CHECK(v == 42);

    NB_CHECK_OK(nbi_pool_free(&p, h[1], &v));
    NB_CHECK(v == -7);
    NB_CHECK(nbi_pool_count(&p) == 2);
    NB_CHECK_OK(nbi_pool_validate(&p));
    NB_CHECK_STATUS(pool_get(&p, h[1], &v), NB_ERR_BAD_HANDLE);
    NB_CHECK(v == 0);
    // The other handles still resolve.
    NB_CHECK_OK(pool_get(&p, h[0], &v));
    NB_CHECK(v == 100);
    NB_CHECK_OK(pool_get(&p, h[2], &v));
    NB_CHECK(v == 42);
    // Iteration sees slots 0 and 2.
    NB_CHECK(pool_next_live(&p, -1) == 0);
    NB_CHECK(pool_next_live(&p, 0) == 2);
    NB_CHECK(pool_next_live(&p, 2) == -1);

    nbHandle null_h = NB_HANDLE_NULL;
    NB_CHECK(null_h.bits == 0);
    nbi_pool_destroy(&p);
    NB_CHECK(ta.live_bytes == 0 && ta.allocs == ta.frees && !ta.size_mismatch);
    NB_CHECK_STATUS(pool_get(&p, h[0], &v), NB_ERR_BAD_HANDLE); // destroyed: all refused
    nbi_pool_destroy(&p);                                       // twice is harmless
    nbi_pool_destroy(NULL);
    return 0;
}

static int test_reuse_new_generation(void)
{
    nbiPool p;
    NB_CHECK_OK(nbi_pool_init(&p, NULL, 0));
    nbHandle a, b, c, a2, b2;
    NB_CHECK_OK(nbi_pool_alloc(&p, 1, &a));
    NB_CHECK_OK(nbi_pool_alloc(&p, 2, &b));
    NB_CHECK_OK(nbi_pool_alloc(&p, 3, &c));
    NB_CHECK_OK(nbi_pool_free(&p, a, NULL));
    NB_CHECK_OK(nbi_pool_free(&p, b, NULL));
    // LIFO: b's slot comes back first, then a's, each one generation on.
    NB_CHECK_OK(nbi_pool_alloc(&p, 20, &b2));
    NB_CHECK(h_slot1(b2) == h_slot1(b) && h_gen(b2) == h_gen(b) + 1);
    NB_CHECK_OK(nbi_pool_alloc(&p, 10, &a2));
    NB_CHECK(h_slot1(a2) == h_slot1(a) && h_gen(a2) == h_gen(a) + 1);
    NB_CHECK(a2.bits != a.bits && b2.bits != b.bits);
    int32_t v;
    NB_CHECK_STATUS(pool_get(&p, a, &v), NB_ERR_BAD_HANDLE);
    NB_CHECK_STATUS(pool_get(&p, b, &v), NB_ERR_BAD_HANDLE);
    NB_CHECK_OK(pool_get(&p, a2, &v));
    NB_CHECK(v == 10);
    NB_CHECK_OK(pool_get(&p, c, &v));
    NB_CHECK(v == 3);
    // Fresh slots are used only when the free list is empty.
    nbHandle d;
    NB_CHECK_OK(nbi_pool_alloc(&p, 4, &d));
    NB_CHECK(h_slot1(d) == 4 && h_gen(d) == 0);
    NB_CHECK(nbi_pool_count(&p) == 4);
    NB_CHECK_OK(nbi_pool_validate(&p));
    nbi_pool_destroy(&p);
    return 0;
}

// Every way a handle can be bad, through free, get and set: refused, and nothing changes.
static int test_bad_handles_change_nothing(void)
{
    nbiPool p;
    nbiPool q;
    NB_CHECK_OK(nbi_pool_init(&p, NULL, 0));
    NB_CHECK_OK(nbi_pool_init(&q, NULL, 0));
    NB_CHECK(p.tag != q.tag);
    nbHandle h[8];
    nbHandle qh[8];
    for (int i = 0; i < 8; i++) {
        NB_CHECK_OK(nbi_pool_alloc(&p, i, &h[i]));
        NB_CHECK_OK(nbi_pool_alloc(&q, 50 + i, &qh[i]));
    }
    nbHandle stale = h[3];
    NB_CHECK_OK(nbi_pool_free(&p, h[3], NULL));
    NB_CHECK_OK(nbi_pool_alloc(&p, 33, &h[3])); // same slot, next generation
    nbHandle freed = h[5];
    NB_CHECK_OK(nbi_pool_free(&p, h[5], NULL)); // freeing it again must fail
    nbHandle bad[] = {
        stale,
        freed,
        qh[2],                                 // foreign: same slot and generation, other tag
        h_make(h_slot1(h[1]), 0, q.tag),       // foreign tag on a live slot of p
        h_make(h_slot1(h[1]), 0, 0),           // tag 0
        NB_HANDLE_NULL,                        // null
        h_make(0, 0, p.tag),                   // slot+1 == 0 with our tag
        h_make(9, 0, p.tag),                   // never used slot
        h_make(0xFFFFFFFFu, 0, p.tag),         // far out of range
        h_make(0x80000000u, 0, p.tag),         // would be negative as int32
        h_make(h_slot1(h[0]), 1, p.tag),       // future generation
        h_make(h_slot1(h[0]), 0xFFFFu, p.tag), // last generation
        h_make(h_slot1(h[3]), h_gen(h[3]) + 1, p.tag),
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        snap s = snap_take(&p);
        int32_t v = 77;
        NB_CHECK_STATUS(nbi_pool_free(&p, bad[k], &v), NB_ERR_BAD_HANDLE);
        NB_CHECK(v == 0);
        v = 77;
        NB_CHECK_STATUS(pool_get(&p, bad[k], &v), NB_ERR_BAD_HANDLE);
        NB_CHECK(v == 0);
        NB_CHECK_STATUS(pool_set(&p, bad[k], 999), NB_ERR_BAD_HANDLE);
        int32_t slot = 5;
        NB_CHECK_STATUS(nbi_pool_lookup(&p, bad[k], &slot), NB_ERR_BAD_HANDLE);
        NB_CHECK(slot == -1);
        NB_CHECK(snap_same(&s, &p));
        NB_CHECK_OK(nbi_pool_validate(&p));
        NB_CHECK(nbi_pool_count(&p) == 7);
        for (int i = 0; i < 8; i++) {
            if (i == 5) continue;
            NB_CHECK_OK(pool_get(&p, h[i], &v));
            NB_CHECK(v == (i == 3 ? 33 : i));
        }
    }
    // q's handles still work in q, and p's are refused there.
    for (int i = 0; i < 8; i++) {
        int32_t v;
        NB_CHECK_OK(pool_get(&q, qh[i], &v));
        NB_CHECK(v == 50 + i);
        if (i != 5) NB_CHECK_STATUS(pool_get(&q, h[i], &v), NB_ERR_BAD_HANDLE);
    }
    nbi_pool_destroy(&p);
    nbi_pool_destroy(&q);
    return 0;
}

static int test_null_and_range_args(void)
{
    nbiPool p;
    nbHandle h = {12345};
    int32_t v = 9;
    nbiPoolPrep prep;
    NB_CHECK_STATUS(nbi_pool_init(NULL, NULL, 0), NB_ERR_NULL_ARG);
    nbtAlloc unused = {0};
    nbAllocator half = nbt_allocator(&unused);
    half.free = NULL; // only one hook: refused, never mixed with malloc/free
    NB_CHECK_STATUS(nbi_pool_init(&p, &half, 0), NB_ERR_NULL_ARG);
    nbi_pool_destroy(&p);
    half = nbt_allocator(&unused);
    half.alloc = NULL;
    NB_CHECK_STATUS(nbi_pool_init(&p, &half, 0), NB_ERR_NULL_ARG);
    nbi_pool_destroy(&p);
    NB_CHECK(unused.allocs == 0);
    NB_CHECK_STATUS(nbi_pool_init(&p, NULL, -1), NB_ERR_OUT_OF_RANGE);
    nbi_pool_destroy(&p); // safe after a failed init
    NB_CHECK_STATUS(nbi_pool_init(&p, NULL, INT32_MAX), NB_ERR_OUT_OF_RANGE);
    nbi_pool_destroy(&p);
    NB_CHECK_OK(nbi_pool_init(&p, NULL, NBI_POOL_MAX_SLOTS));
    NB_CHECK(p.max_slots == NBI_POOL_MAX_SLOTS);
    NB_CHECK_STATUS(nbi_pool_alloc(NULL, 0, &h), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nbi_pool_alloc(&p, 0, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nbi_pool_free(NULL, h, &v), NB_ERR_NULL_ARG);
    NB_CHECK(v == 0);
    NB_CHECK_STATUS(nbi_pool_prepare(NULL, 1, &prep), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nbi_pool_prepare(&p, 1, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nbi_pool_prepare(&p, -1, &prep), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nbi_pool_validate(NULL), NB_ERR_NULL_ARG);
    NB_CHECK(nbi_pool_count(NULL) == 0 && nbi_pool_memory_bytes(NULL) == 0);
    NB_CHECK(nbi_pool_room(NULL) == 0);
    nbi_pool_clear(NULL);
    nbi_pool_commit(NULL, &prep);
    nbi_pool_abandon(NULL, &prep);
    NB_CHECK_OK(nbi_pool_validate(&p));
    NB_CHECK(nbi_pool_count(&p) == 0 && nbi_pool_memory_bytes(&p) == 0);
    nbi_pool_destroy(&p);
    return 0;
}

// Tags of pools initialised in a row are distinct and never 0, and each pool refuses the
// others' handles.
static int test_tags_distinct(void)
{
    enum { N = 3000 };
    static nbiPool pools[N];
    static uint8_t seen[65536];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < N; i++) {
        NB_CHECK_OK(nbi_pool_init(&pools[i], NULL, 0));
        NB_CHECK(pools[i].tag != 0);
        NB_CHECK(!seen[pools[i].tag]);
        seen[pools[i].tag] = 1;
    }
    nbHandle h[8];
    for (int i = 0; i < 8; i++) NB_CHECK_OK(nbi_pool_alloc(&pools[i], i, &h[i]));
    for (int i = 0; i < 8; i++) {
        for (int j = 0; j < 8; j++) {
            int32_t v;
            NB_CHECK_STATUS(pool_get(&pools[j], h[i], &v), i == j ? NB_OK : NB_ERR_BAD_HANDLE);
        }
    }
    for (int i = 0; i < N; i++) nbi_pool_destroy(&pools[i]);
    return 0;
}

static int test_clear(void)
{
    nbtAlloc ta = {0};
    nbAllocator al = nbt_allocator(&ta);
    nbiPool p;
    NB_CHECK_OK(nbi_pool_init(&p, &al, 0));
    enum { N = 100 };
    nbHandle h[N];
    for (int i = 0; i < N; i++) NB_CHECK_OK(nbi_pool_alloc(&p, i, &h[i]));
    for (int i = 0; i < N; i += 3) NB_CHECK_OK(nbi_pool_free(&p, h[i], NULL));
    const int64_t allocs = ta.allocs;
    const size_t bytes = nbi_pool_memory_bytes(&p);
    const uint16_t tag = p.tag;
    nbi_pool_clear(&p);
    NB_CHECK(ta.allocs == allocs);
    NB_CHECK(nbi_pool_memory_bytes(&p) == bytes);
    NB_CHECK(p.tag == tag);
    NB_CHECK_OK(nbi_pool_validate(&p));
    NB_CHECK(nbi_pool_count(&p) == 0);
    NB_CHECK(pool_next_live(&p, -1) == -1);
    NB_CHECK(nbi_pool_room(&p) >= N);
    int32_t v;
    for (int i = 0; i < N; i++) NB_CHECK_STATUS(pool_get(&p, h[i], &v), NB_ERR_BAD_HANDLE);
    // Slots come back lowest index first, each one generation on (two for the freed ones,
    // which were bumped by their free and not again by clear).
    for (int i = 0; i < N; i++) {
        nbHandle g;
        NB_CHECK_OK(nbi_pool_alloc(&p, -i, &g));
        NB_CHECK(h_slot1(g) == (uint32_t)i + 1u);
        NB_CHECK(h_gen(g) == 1u);
        NB_CHECK(g.bits != h[i].bits);
    }
    NB_CHECK(ta.allocs == allocs); // reuse allocated nothing
    for (int i = 0; i < N; i++) NB_CHECK_STATUS(pool_get(&p, h[i], &v), NB_ERR_BAD_HANDLE);
    NB_CHECK_OK(nbi_pool_validate(&p));
    nbi_pool_clear(&p);
    nbi_pool_clear(&p); // clearing an empty pool changes nothing
    NB_CHECK_OK(nbi_pool_validate(&p));
    NB_CHECK(nbi_pool_count(&p) == 0);
    nbi_pool_destroy(&p);
    NB_CHECK(ta.live_bytes == 0 && !ta.size_mismatch);
    // Clearing a pool that never allocated.
    NB_CHECK_OK(nbi_pool_init(&p, &al, 0));
    nbi_pool_clear(&p);
    NB_CHECK_OK(nbi_pool_validate(&p));
    nbi_pool_destroy(&p);
    return 0;
}

// One slot cycled through all 65536 generations is retired; no handle is ever reissued, not by
// reuse and not by clear.
static int test_generation_exhaustion(void)
{
    nbiPool p;
    NB_CHECK_OK(nbi_pool_init(&p, NULL, 0));
    nbHandle keep;
    NB_CHECK_OK(nbi_pool_alloc(&p, -1, &keep)); // slot 0 stays live throughout
    nbHandle first;
    NB_CHECK_OK(nbi_pool_alloc(&p, 0, &first));
    NB_CHECK(h_slot1(first) == 2 && h_gen(first) == 0);
    nbHandle h = first;
    nbHandle prev = first;
    for (uint32_t g = 1; g <= NBI_POOL_GEN_LAST; g++) {
        NB_CHECK_OK(nbi_pool_free(&p, h, NULL));
        prev = h;
        NB_CHECK_OK(nbi_pool_alloc(&p, (int32_t)g, &h));
        if (h_slot1(h) != 2 || h_gen(h) != g) NB_CHECK(!"slot reused with the next generation");
    }
    int32_t v;
    NB_CHECK_STATUS(pool_get(&p, prev, &v), NB_ERR_BAD_HANDLE);
    NB_CHECK_STATUS(pool_get(&p, first, &v), NB_ERR_BAD_HANDLE);
    NB_CHECK(h_gen(h) == NBI_POOL_GEN_LAST);
    NB_CHECK_OK(nbi_pool_validate(&p));
    // Freeing the last generation retires the slot: the next allocation takes a fresh slot.
    NB_CHECK_OK(nbi_pool_free(&p, h, NULL));
    NB_CHECK(p.retired == 1 && p.free_count == 0);
    NB_CHECK_OK(nbi_pool_validate(&p));
    NB_CHECK_STATUS(nbi_pool_free(&p, h, NULL), NB_ERR_BAD_HANDLE);
    nbHandle n;
    NB_CHECK_OK(nbi_pool_alloc(&p, 5, &n));
    NB_CHECK(h_slot1(n) == 3 && h_gen(n) == 0);
    // No generation of slot 1 resolves, and neither clear nor iteration brings it back.
    for (uint32_t g = 0; g <= NBI_POOL_GEN_LAST; g++)
        if (pool_get(&p, h_make(2, g, p.tag), &v) != NB_ERR_BAD_HANDLE)
            NB_CHECK(!"retired slot resolved");
    NB_CHECK(pool_next_live(&p, 0) == 2);
    nbi_pool_clear(&p);
    NB_CHECK_OK(nbi_pool_validate(&p));
    NB_CHECK(p.retired == 1);
    nbHandle a;
    nbHandle b;
    nbHandle c;
    NB_CHECK_OK(nbi_pool_alloc(&p, 0, &a));
    NB_CHECK_OK(nbi_pool_alloc(&p, 0, &b));
    NB_CHECK_OK(nbi_pool_alloc(&p, 0, &c));
    NB_CHECK(h_slot1(a) == 1 && h_slot1(b) == 3 && h_slot1(c) == 4); // slot 1 skipped
    NB_CHECK_OK(nbi_pool_validate(&p));
    nbi_pool_destroy(&p);

    // With a limit of 1 slot, exhausting it leaves a pool that can never allocate again.
    NB_CHECK_OK(nbi_pool_init(&p, NULL, 1));
    NB_CHECK_OK(nbi_pool_alloc(&p, 0, &h));
    for (uint32_t g = 1; g <= NBI_POOL_GEN_LAST; g++) {
        NB_CHECK_OK(nbi_pool_free(&p, h, NULL));
        NB_CHECK_OK(nbi_pool_alloc(&p, 0, &h));
    }
    NB_CHECK_OK(nbi_pool_free(&p, h, NULL));
    snap s = snap_take(&p);
    NB_CHECK_STATUS(nbi_pool_alloc(&p, 0, &h), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(h.bits == 0);
    nbiPoolPrep prep;
    NB_CHECK_STATUS(nbi_pool_prepare(&p, 1, &prep), NB_ERR_OUT_OF_RANGE); // the slot is retired
    NB_CHECK_OK(prepare_commit(&p, 0));
    NB_CHECK(snap_same(&s, &p));
    NB_CHECK(nbi_pool_room(&p) == 0);
    NB_CHECK_OK(nbi_pool_validate(&p));
    nbi_pool_destroy(&p);
    return 0;
}

// max_slots: the allocation past the limit is NB_ERR_OUT_OF_RANGE and changes nothing.
static int test_slot_limit(void)
{
    nbtAlloc ta = {0};
    nbAllocator al = nbt_allocator(&ta);
    nbiPool p;
    NB_CHECK_OK(nbi_pool_init(&p, &al, 5));
    nbiPoolPrep prep;
    NB_CHECK_STATUS(nbi_pool_prepare(&p, 6, &prep), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(ta.allocs == 0);
    nbHandle h[5];
    for (int i = 0; i < 5; i++) NB_CHECK_OK(nbi_pool_alloc(&p, i, &h[i]));
    NB_CHECK(nbi_pool_memory_bytes(&p) == 5 * sizeof(nbiPoolSlot)); // growth capped at the limit
    snap s = snap_take(&p);
    nbHandle x = {1};
    NB_CHECK_STATUS(nbi_pool_alloc(&p, 9, &x), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(x.bits == 0);
    NB_CHECK_STATUS(nbi_pool_prepare(&p, 1, &prep), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_OK(nbi_pool_prepare(&p, 0, &prep));
    nbi_pool_commit(&p, &prep);
    NB_CHECK(snap_same(&s, &p));
    NB_CHECK_OK(nbi_pool_free(&p, h[2], NULL));
    NB_CHECK_OK(nbi_pool_alloc(&p, 9, &x));
    NB_CHECK(h_slot1(x) == 3);
    NB_CHECK_OK(nbi_pool_validate(&p));
    nbi_pool_destroy(&p);
    NB_CHECK(ta.live_bytes == 0);
    return 0;
}

// Geometric growth; prepare/commit make the next allocations allocation-free.
static int test_growth_reserve_prepare(void)
{
    nbtAlloc ta = {0};
    nbAllocator al = nbt_allocator(&ta);
    nbiPool p;
    NB_CHECK_OK(nbi_pool_init(&p, &al, 0));
    enum { N = 20000 };
    nbHandle *h = (nbHandle *)malloc(N * sizeof(nbHandle));
    NB_CHECK(h != NULL);
    for (int i = 0; i < N; i++) NB_CHECK_OK(nbi_pool_alloc(&p, i * 3, &h[i]));
    NB_CHECK(ta.allocs <= 25); // 16 * 1.5^k reaches 20000 in 18 steps
    NB_CHECK(ta.live_bytes == (int64_t)nbi_pool_memory_bytes(&p));
    NB_CHECK(nbi_pool_memory_bytes(&p) <= (size_t)N * 3 / 2 * sizeof(nbiPoolSlot) + 64);
    NB_CHECK_OK(nbi_pool_validate(&p));
    for (int i = 0; i < N; i++) {
        int32_t v;
        NB_CHECK_OK(pool_get(&p, h[i], &v));
        NB_CHECK(v == i * 3);
    }
    int32_t seen = 0;
    for (int32_t s = pool_next_live(&p, -1); s >= 0; s = pool_next_live(&p, s)) {
        NB_CHECK(s == seen);
        NB_CHECK(nbi_pool_handle_of(&p, s).bits == h[s].bits);
        seen++;
    }
    NB_CHECK(seen == N);
    free(h);

    // prepare(n) + commit on an empty pool: n handles fit without allocating.
    nbi_pool_destroy(&p);
    NB_CHECK(ta.live_bytes == 0);
    NB_CHECK_OK(nbi_pool_init(&p, &al, 0));
    NB_CHECK_OK(prepare_commit(&p, 1000));
    NB_CHECK(nbi_pool_room(&p) >= 1000);
    int64_t allocs = ta.allocs;
    NB_CHECK_OK(prepare_commit(&p, 10)); // within: nothing
    NB_CHECK_OK(prepare_commit(&p, 0));
    NB_CHECK(ta.allocs == allocs);
    nbHandle g;
    for (int i = 0; i < 1000; i++) NB_CHECK_OK(nbi_pool_alloc(&p, i, &g));
    NB_CHECK(ta.allocs == allocs);
    NB_CHECK(nbi_pool_room(&p) == (int32_t)(p.slots.cap - 1000));

    // prepare + abandon: nothing changes, nothing leaks.
    snap s = snap_take(&p);
    nbiPoolPrep prep;
    NB_CHECK_OK(nbi_pool_prepare(&p, 5000, &prep));
    NB_CHECK(ta.allocs == allocs + 1);
    nbi_pool_abandon(&p, &prep);
    NB_CHECK(snap_same(&s, &p));
    NB_CHECK(ta.live_bytes == (int64_t)nbi_pool_memory_bytes(&p));
    // prepare + commit: room for 5000 more, and they allocate nothing.
    NB_CHECK_OK(nbi_pool_prepare(&p, 5000, &prep));
    nbi_pool_commit(&p, &prep);
    NB_CHECK(nbi_pool_room(&p) >= 5000);
    NB_CHECK_OK(nbi_pool_validate(&p));
    allocs = ta.allocs;
    for (int i = 0; i < 5000; i++) NB_CHECK_OK(nbi_pool_alloc(&p, i, &g));
    NB_CHECK(ta.allocs == allocs);
    NB_CHECK(nbi_pool_count(&p) == 6000);
    // A prepare the room already covers allocates nothing; commit and abandon are no-ops.
    NB_CHECK_OK(nbi_pool_free(&p, g, NULL));
    s = snap_take(&p);
    NB_CHECK_OK(nbi_pool_prepare(&p, 1, &prep));
    nbi_pool_abandon(&p, &prep);
    NB_CHECK_OK(nbi_pool_prepare(&p, 1, &prep));
    nbi_pool_commit(&p, &prep);
    NB_CHECK(ta.allocs == allocs);
    NB_CHECK(snap_same(&s, &p));
    nbi_pool_destroy(&p);
    NB_CHECK(ta.live_bytes == 0 && ta.allocs == ta.frees && !ta.size_mismatch);
    return 0;
}

// validate catches each kind of corruption, on a clone whose slots can be damaged freely.
static int test_validate_catches_corruption(void)
{
    nbiPool p;
    NB_CHECK_OK(nbi_pool_init(&p, NULL, 0));
    nbHandle h[6];
    for (int i = 0; i < 6; i++) NB_CHECK_OK(nbi_pool_alloc(&p, i, &h[i]));
    NB_CHECK_OK(nbi_pool_free(&p, h[1], NULL));
    NB_CHECK_OK(nbi_pool_free(&p, h[4], NULL)); // free list: 4 -> 1 -> end
    NB_CHECK_OK(nbi_pool_validate(&p));
    for (int k = 0; k < 16; k++) {
        nbiPool c = p;
        nbiPoolSlot *sl = (nbiPoolSlot *)malloc(p.slots.cap * sizeof(nbiPoolSlot));
        NB_CHECK(sl != NULL);
        memcpy(sl, p.slots.ptr, p.slots.cap * sizeof(nbiPoolSlot));
        c.slots.ptr = sl;
        NB_CHECK_OK(nbi_pool_validate(&c)); // the clone itself is fine
        switch (k) {
        case 0: c.tag = 0; break;
        case 1: c.max_slots = 0; break;
        case 2: c.used = (int32_t)c.slots.cap + 1; break;
        case 3: c.live++; break;
        case 4: c.free_count++; break;
        case 5: c.retired++; break;
        case 6: sl[2].state = 7; break;
        case 7: // a retired slot below the last generation
            sl[2].state = NBI_SLOT_RETIRED;
            c.live--;
            c.retired++;
            break;
        case 8: sl[1].value = 4; break;   // cycle 4 -> 1 -> 4
        case 9: c.free_head = 1; break;   // incomplete: slot 4 not on the list
        case 10: c.free_head = 0; break;  // list starts at a live slot
        case 11: sl[1].value = 6; break;  // link past the used slots
        case 12: sl[1].value = -2; break; // negative link
        case 13: c.max_slots = (int32_t)c.slots.cap - 1; break;
        case 14:
            c.live = -1;
            c.free_count += 1;
            break;
        case 15: c.used = 5; break; // slot 5 (live) dropped from the counts
        }
        nbStatus st = nbi_pool_validate(&c);
        free(sl);
        if (st != NB_ERR_INTERNAL) {
            fprintf(stderr, "  corruption %d not caught\n", k);
            NB_CHECK(st == NB_ERR_INTERNAL);
        }
    }
    nbi_pool_destroy(&p);
    return 0;
}

// ---- failing-allocator sweep ----

// One step of the script: on NB_ERR_OUT_OF_MEMORY, the refused allocation must be the injected
// one and the pool unchanged; the script then stops (returns 0 with *stopped set).
#define SWEEP_STEP(expr)                                                                           \
    do {                                                                                           \
        snap s_ = snap_take(p);                                                                    \
        nbStatus st_ = (expr);                                                                     \
        bool same_ = snap_same(&s_, p);                                                            \
        if (st_ == NB_ERR_OUT_OF_MEMORY) {                                                         \
            NB_CHECK(same_);                                                                       \
            NB_CHECK(ta->fail_at > 0 && ta->allocs == ta->fail_at);                                \
            NB_CHECK_OK(nbi_pool_validate(p));                                                     \
            *stopped = true;                                                                       \
            return 0;                                                                              \
        }                                                                                          \
        NB_CHECK_OK(st_);                                                                          \
        NB_CHECK_OK(nbi_pool_validate(p));                                                         \
    } while (0)

static int sweep_script(nbiPool *p, nbtAlloc *ta, bool *stopped)
{
    nbHandle h[700];
    int n = 0;
    for (int i = 0; i < 20; i++) SWEEP_STEP(nbi_pool_alloc(p, i, &h[n++]));
    for (int i = 0; i < 20; i += 4) SWEEP_STEP(nbi_pool_free(p, h[i], NULL));
    SWEEP_STEP(prepare_commit(p, 25));
    for (int i = 0; i < 50; i++) SWEEP_STEP(nbi_pool_alloc(p, i, &h[n++]));
    SWEEP_STEP(prepare_commit(p, 100));
    for (int i = 0; i < 100; i++) SWEEP_STEP(nbi_pool_alloc(p, i, &h[n++]));
    SWEEP_STEP(prepare_abandon(p, 500));
    nbi_pool_clear(p);
    n = 0;
    for (int i = 0; i < 600; i++) SWEEP_STEP(nbi_pool_alloc(p, i, &h[n++]));
    SWEEP_STEP(prepare_commit(p, 1400));
    NB_CHECK(nbi_pool_count(p) == 600);
    return 0;
}

static int test_failing_allocator_sweep(void)
{
    // Count the allocations of an unfailing run, then fail each one in turn.
    nbtAlloc base = {0};
    nbAllocator bal = nbt_allocator(&base);
    nbiPool p;
    NB_CHECK_OK(nbi_pool_init(&p, &bal, 0));
    bool stopped = false;
    if (sweep_script(&p, &base, &stopped) != 0) return 1;
    NB_CHECK(!stopped);
    nbi_pool_destroy(&p);
    NB_CHECK(base.live_bytes == 0);
    const int64_t total = base.allocs;
    NB_CHECK(total >= 10); // the script must actually grow several times

    bool last_ok = false;
    int64_t i = 1;
    for (; i <= total + 1; i++) {
        nbtAlloc ta = {0};
        ta.fail_at = i;
        nbAllocator al = nbt_allocator(&ta);
        NB_CHECK_OK(nbi_pool_init(&p, &al, 0));
        stopped = false;
        if (sweep_script(&p, &ta, &stopped) != 0) {
            fprintf(stderr, "  while failing allocation %lld\n", (long long)i);
            return 1;
        }
        nbi_pool_destroy(&p);
        NB_CHECK(ta.live_bytes == 0 && !ta.size_mismatch);
        NB_CHECK(ta.frees == ta.allocs - (stopped ? 1 : 0)); // the refused one was never freed
        if (!stopped) {
            last_ok = true;
            break;
        }
        NB_CHECK(i <= total); // failing allocation i <= total must stop the script
    }
    // The last try succeeded, exactly after every allocation of the script had been failed.
    NB_CHECK(last_ok);
    NB_CHECK(i == total + 1);
    return 0;
}

// ---- random operations against a reference model ----

enum { M_MAX = 256, M_HANDLES = 4096 };

typedef struct mslot {
    uint32_t gen;
    int state; // NBI_SLOT_*
    int32_t value;
} mslot;

typedef struct model {
    mslot s[M_MAX];
    int32_t used, live, retired, max_slots;
    int32_t stack[M_MAX]; // the free list, top = most recent
    int32_t top;
    nbHandle issued[M_HANDLES]; // every handle handed out (a ring)
    int32_t n_issued;
} model;

static bool m_is_live(const model *m, nbHandle h, uint16_t tag, int32_t *slot)
{
    uint32_t s1 = h_slot1(h);
    if (h.bits == 0 || h_tag(h) != tag || s1 == 0 || s1 > (uint32_t)m->used) return false;
    const mslot *s = &m->s[s1 - 1];
    if (s->state != NBI_SLOT_LIVE || s->gen != h_gen(h)) return false;
    *slot = (int32_t)(s1 - 1);
    return true;
}

static void m_release(model *m, int32_t slot)
{
    mslot *s = &m->s[slot];
    m->live--;
    if (s->gen == NBI_POOL_GEN_LAST) {
        s->state = NBI_SLOT_RETIRED;
        m->retired++;
    } else {
        s->gen++;
        s->state = NBI_SLOT_FREE;
        m->stack[m->top++] = slot;
    }
}

static nbHandle m_pick(const model *m)
{
    if (m->n_issued == 0) return h_make(1, 0, 1);
    int32_t n = m->n_issued < M_HANDLES ? m->n_issued : M_HANDLES;
    return m->issued[nbt_int(n)];
}

static int check_against_model(const nbiPool *p, const model *m, const nbtAlloc *ta)
{
    NB_CHECK_OK(nbi_pool_validate(p));
    NB_CHECK(nbi_pool_count(p) == m->live);
    NB_CHECK(p->used == m->used && p->retired == m->retired && p->free_count == m->top);
    NB_CHECK(nbi_pool_memory_bytes(p) == (size_t)ta->live_bytes);
    NB_CHECK(nbi_pool_room(p) == m->top + (int32_t)p->slots.cap - m->used);
    int32_t s = -1;
    for (int32_t k = 0; k < m->used; k++) {
        if (m->s[k].state != NBI_SLOT_LIVE) continue;
        s = pool_next_live(p, s);
        NB_CHECK(s == k);
        NB_CHECK(nbi_pool_slot_value(p, k) == m->s[k].value);
        NB_CHECK(nbi_pool_handle_of(p, k).bits ==
                 h_make((uint32_t)k + 1, m->s[k].gen, p->tag).bits);
    }
    NB_CHECK(pool_next_live(p, s) == -1);
    return 0;
}

static int model_run(int32_t max_slots, int ops)
{
    nbtAlloc ta = {0};
    nbAllocator al = nbt_allocator(&ta);
    nbiPool p;
    nbiPool other;
    NB_CHECK_OK(nbi_pool_init(&p, &al, max_slots));
    NB_CHECK_OK(nbi_pool_init(&other, NULL, 0));
    static model m;
    memset(&m, 0, sizeof m);
    m.max_slots = max_slots;
    int counts[12] = {0};
    for (int step = 0; step < ops; step++) {
        int op = nbt_int(100);
        int32_t slot;
        int32_t v;
        nbHandle h;
        if (op < 35) { // alloc
            int32_t val = (int32_t)nbt_u64();
            nbStatus st = nbi_pool_alloc(&p, val, &h);
            if (m.top == 0 && m.used == m.max_slots) {
                NB_CHECK_STATUS(st, NB_ERR_OUT_OF_RANGE);
                NB_CHECK(h.bits == 0);
                counts[0]++;
            } else {
                NB_CHECK_OK(st);
                slot = m.top > 0 ? m.stack[--m.top] : m.used++;
                m.s[slot].state = NBI_SLOT_LIVE;
                m.s[slot].value = val;
                m.live++;
                NB_CHECK(h.bits == h_make((uint32_t)slot + 1, m.s[slot].gen, p.tag).bits);
                m.issued[m.n_issued++ % M_HANDLES] = h;
                counts[1]++;
            }
        } else if (op < 60) { // free an issued handle, live or not
            h = m_pick(&m);
            bool live = m_is_live(&m, h, p.tag, &slot);
            int32_t want = live ? m.s[slot].value : 0;
            NB_CHECK_STATUS(nbi_pool_free(&p, h, &v), live ? NB_OK : NB_ERR_BAD_HANDLE);
            NB_CHECK(v == want);
            if (live) m_release(&m, slot);
            counts[live ? 2 : 3]++;
        } else if (op < 75) { // get / set
            h = m_pick(&m);
            bool live = m_is_live(&m, h, p.tag, &slot);
            NB_CHECK_STATUS(pool_get(&p, h, &v), live ? NB_OK : NB_ERR_BAD_HANDLE);
            NB_CHECK(v == (live ? m.s[slot].value : 0));
            int32_t val = (int32_t)nbt_u64();
            NB_CHECK_STATUS(pool_set(&p, h, val), live ? NB_OK : NB_ERR_BAD_HANDLE);
            if (live) m.s[slot].value = val;
            counts[4]++;
        } else if (op < 82) { // foreign, null or random bits: always refused, nothing changes
            int kind = nbt_int(4);
            h = m_pick(&m);
            if (kind == 0) h.bits = (h.bits & 0xFFFFFFFFFFFFull) | ((uint64_t)other.tag << 48);
            if (kind == 1) h.bits = 0;
            if (kind == 2) h.bits = nbt_u64();
            if (kind == 3) h.bits ^= (uint64_t)1 << (32 + nbt_int(16)); // another generation
            bool live = m_is_live(&m, h, p.tag, &slot);
            if (!live) {
                snap s = snap_take(&p);
                NB_CHECK_STATUS(nbi_pool_free(&p, h, &v), NB_ERR_BAD_HANDLE);
                NB_CHECK_STATUS(pool_set(&p, h, 5), NB_ERR_BAD_HANDLE);
                NB_CHECK(snap_same(&s, &p));
                counts[5]++;
            }
        } else if (op < 85) { // churn one handle through many generations
            h = m_pick(&m);
            if (m_is_live(&m, h, p.tag, &slot)) {
                int n = 1 + nbt_int(4000);
                for (int k = 0; k < n; k++) {
                    NB_CHECK_OK(nbi_pool_free(&p, h, NULL));
                    m_release(&m, slot);
                    if (m.s[slot].state == NBI_SLOT_RETIRED) break;
                    NB_CHECK_OK(nbi_pool_alloc(&p, k, &h));
                    slot = m.stack[--m.top];
                    m.s[slot].state = NBI_SLOT_LIVE;
                    m.s[slot].value = k;
                    m.live++;
                    NB_CHECK(h.bits == h_make((uint32_t)slot + 1, m.s[slot].gen, p.tag).bits);
                }
                m.issued[m.n_issued++ % M_HANDLES] = h;
                counts[6]++;
            }
        } else if (op < 86) { // clear
            for (int32_t k = 0; k < m.used; k++)
                if (m.s[k].state == NBI_SLOT_LIVE) m_release(&m, k);
            m.top = 0;
            for (int32_t k = m.used - 1; k >= 0; k--)
                if (m.s[k].state == NBI_SLOT_FREE) m.stack[m.top++] = k;
            nbi_pool_clear(&p);
            counts[7]++;
        } else { // prepare, then commit or abandon
            int32_t extra = nbt_int(M_MAX + 20) - 10;
            nbiPoolPrep prep;
            snap s = snap_take(&p);
            nbStatus st = nbi_pool_prepare(&p, extra, &prep);
            bool ok = extra >= 0 && m.used + extra - m.top <= m.max_slots;
            if (extra >= 0 && extra <= nbi_pool_room(&p)) ok = true;
            NB_CHECK_STATUS(st, ok ? NB_OK : NB_ERR_OUT_OF_RANGE);
            NB_CHECK(snap_same(&s, &p));
            if (ok) {
                if (nbt_int(2)) {
                    nbi_pool_commit(&p, &prep);
                    NB_CHECK(nbi_pool_room(&p) >= extra);
                } else {
                    s = snap_take(&p);
                    nbi_pool_abandon(&p, &prep);
                    NB_CHECK(snap_same(&s, &p));
                }
            }
            counts[9]++;
        }
        if (check_against_model(&p, &m, &ta) != 0) {
            fprintf(stderr, "  at step %d (op %d), max_slots %d\n", step, op, (int)max_slots);
            return 1;
        }
    }
    // Every kind of operation ran (the sweep would be meaningless otherwise).
    NB_CHECK(counts[1] > 0 && counts[2] > 0 && counts[3] > 0 && counts[4] > 0 && counts[5] > 0);
    NB_CHECK(counts[6] > 0 && counts[7] > 0 && counts[9] > 0);
    if (max_slots <= 8) NB_CHECK(counts[0] > 0);
    nbi_pool_destroy(&p);
    nbi_pool_destroy(&other);
    NB_CHECK(ta.live_bytes == 0 && ta.allocs == ta.frees && !ta.size_mismatch);
    return 0;
}

static int test_random_model(void)
{
    const int32_t limits[] = {M_MAX, 1, 3, 8, 40, 200};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++)
        if (model_run(limits[i], 6000) != 0) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"basic", test_basic},
        {"reuse_new_generation", test_reuse_new_generation},
        {"bad_handles_change_nothing", test_bad_handles_change_nothing},
        {"null_and_range_args", test_null_and_range_args},
        {"tags_distinct", test_tags_distinct},
        {"clear", test_clear},
        {"generation_exhaustion", test_generation_exhaustion},
        {"slot_limit", test_slot_limit},
        {"growth_reserve_prepare", test_growth_reserve_prepare},
        {"validate_catches_corruption", test_validate_catches_corruption},
        {"failing_allocator_sweep", test_failing_allocator_sweep},
        {"random_model", test_random_model},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
