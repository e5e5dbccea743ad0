// SPDX-License-Identifier: MIT
// Fuzz target for the internal handle pool (src/handle_pool.h).
//
// The input is a little program. The first byte picks the slot limit (default, 1..64, or an
// invalid one); each following byte picks an operation (alloc, free, get, set, a bad handle,
// clear, reserve, prepare + commit/abandon, an allocation-failure schedule, churn through many
// generations, an allocation burst, destroy + reinit) that decodes its arguments from the bytes
// after it. Reading past the end yields zeros, so every input is valid. Get and set are done as
// the structures do them, nbi_pool_lookup then the slot's value; "reserve n" is a prepare of
// n - live more handles, committed.
//
// A reference model predicts every slot, generation, value and status: LIFO reuse, retirement
// at the last generation, lowest-first reuse after clear, the slot limit. After every operation
// nbi_pool_validate() must pass and the counters, the room, the live slots (by a walk over the
// slots, each live one's nbi_pool_handle_of looked up back to it) and
// the bytes held must agree with the model and the allocator. Refused calls must change nothing
// (compared against a snapshot); NB_ERR_OUT_OF_MEMORY must come exactly when an allocation was
// refused; calls with room to spare must not allocate. The checking allocator can refuse the
// n-th allocation (and all after), refuses requests over 1 MiB, checks every free against its
// live blocks and sizes, fills fresh blocks with garbage, and must be empty after destroy.
// A violation prints one line and calls abort(). NB_FUZZ_TRACE=1 prints the decoded calls.
//
// Helpers use the hpf_ prefix; they are to be replaced by the shared tests/fuzz/nb_fuzz.h.

#include "handle_pool.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
    HPF_MODEL_SLOTS = 4096,   ///< the fuzzer never lets the pool use more slots than this
    HPF_ISSUED = 256,         ///< handles remembered for reuse (a ring)
    HPF_MAX_BLOCKS = 8,       ///< live allocator blocks (the pool holds at most 2)
    HPF_CHURN_BUDGET = 70000, ///< enough to retire one slot (65536 frees)
};
#define HPF_ALLOC_LIMIT ((size_t)1 << 20)

// ---- failure reporting ----

static int hpf_step;
static const char *hpf_op = "start";
static int hpf_trace = -1;

static _Noreturn void hpf_fail(int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "fuzz_handle_pool.c:%d: op #%d (%s): ", line, hpf_step, hpf_op);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}
#define HPF_CHECK(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) hpf_fail(__LINE__, __VA_ARGS__);                                              \
    } while (0)
#define HPF_STATUS(got, want)                                                                      \
    HPF_CHECK((got) == (want), "status %s, expected %s", nb_status_str(got), nb_status_str(want))

static void hpf_log(const char *fmt, ...)
{
    if (hpf_trace < 0) {
        const char *t = getenv("NB_FUZZ_TRACE");
        hpf_trace = t != NULL && *t != '\0' && *t != '0';
    }
    if (!hpf_trace) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "#%d ", hpf_step);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

// ---- byte decoder ----

typedef struct hpfIn {
    const uint8_t *p;
    size_t n, at;
} hpfIn;

static uint8_t hpf_u8(hpfIn *in)
{
    return in->at < in->n ? in->p[in->at++] : 0;
}
static uint32_t hpf_u16(hpfIn *in)
{
    uint32_t lo = hpf_u8(in);
    return lo | (uint32_t)hpf_u8(in) << 8;
}
static uint32_t hpf_u32(hpfIn *in)
{
    uint32_t lo = hpf_u16(in);
    return lo | hpf_u16(in) << 16;
}

// ---- checking allocator ----

typedef struct hpfAlloc {
    void *ptr[HPF_MAX_BLOCKS];
    size_t size[HPF_MAX_BLOCKS];
    int live;
    size_t live_bytes;
    int64_t calls;   ///< allocation requests
    int64_t refused; ///< requests refused on purpose (schedule or size limit)
    int64_t fail_at; ///< the request number that is refused; 0 = none
    bool fail_after; ///< and every request after it
} hpfAlloc;

static void *hpf_alloc_fn(size_t size, size_t align, void *user)
{
    hpfAlloc *a = (hpfAlloc *)user;
    a->calls++;
    HPF_CHECK(size > 0 && align > 0 && (align & (align - 1)) == 0 && align <= 64,
              "bad request size %zu align %zu", size, align);
    bool fail =
        size > HPF_ALLOC_LIMIT ||
        (a->fail_at > 0 && (a->calls == a->fail_at || (a->fail_after && a->calls > a->fail_at)));
    if (fail) {
        a->refused++;
        return NULL;
    }
    HPF_CHECK(a->live < HPF_MAX_BLOCKS, "too many live blocks");
    void *p = malloc(size);
    HPF_CHECK(p != NULL && ((uintptr_t)p & (align - 1)) == 0, "host malloc");
    memset(p, 0xA5, size);
    a->ptr[a->live] = p;
    a->size[a->live] = size;
    a->live++;
    a->live_bytes += size;
    return p;
}

static void hpf_free_fn(void *ptr, size_t size, void *user)
{
    hpfAlloc *a = (hpfAlloc *)user;
    HPF_CHECK(ptr != NULL, "free(NULL) through the hooks");
    for (int i = 0; i < a->live; i++) {
        if (a->ptr[i] != ptr) continue;
        HPF_CHECK(a->size[i] == size, "free size %zu, allocated %zu", size, a->size[i]);
        a->live_bytes -= size;
        a->live--;
        a->ptr[i] = a->ptr[a->live];
        a->size[i] = a->size[a->live];
        free(ptr);
        return;
    }
    hpf_fail(__LINE__, "free of a block that is not live");
}

// ---- reference model ----

typedef struct hpfSlot {
    uint32_t gen;
    int state;
    int32_t value;
} hpfSlot;

typedef struct hpfModel {
    hpfSlot s[HPF_MODEL_SLOTS];
    int32_t stack[HPF_MODEL_SLOTS]; ///< the free list; top = most recently freed
    int32_t top, used, live, retired, max_slots;
} hpfModel;

// Handles handed out in this input (a ring), kept across reinit, where they become foreign.
static nbHandle hpf_issued[HPF_ISSUED];
static uint32_t hpf_n_issued;

static hpfModel hpf_m;
static nbiPool hpf_pool;
static nbiPool hpf_other; // a second pool, for foreign handles
static hpfAlloc hpf_al;
static int64_t hpf_churn;

static nbHandle hpf_handle(uint32_t slot, uint32_t gen, uint32_t tag)
{
    nbHandle h;
    h.bits = (uint64_t)(slot + 1u) | (uint64_t)gen << 32 | (uint64_t)tag << 48;
    return h;
}

// The slot `h` names if it is live in the model, else -1.
static int32_t hpf_m_live(nbHandle h)
{
    uint32_t s1 = (uint32_t)h.bits;
    uint32_t gen = (uint32_t)(h.bits >> 32) & 0xFFFFu;
    if ((uint32_t)(h.bits >> 48) != hpf_pool.tag || s1 == 0 || s1 > (uint32_t)hpf_m.used) return -1;
    const hpfSlot *s = &hpf_m.s[s1 - 1];
    return s->state == NBI_SLOT_LIVE && s->gen == gen ? (int32_t)(s1 - 1) : -1;
}

static void hpf_m_release(int32_t slot)
{
    hpfSlot *s = &hpf_m.s[slot];
    hpf_m.live--;
    if (s->gen == NBI_POOL_GEN_LAST) {
        s->state = NBI_SLOT_RETIRED;
        hpf_m.retired++;
        return;
    }
    s->gen++;
    s->state = NBI_SLOT_FREE;
    hpf_m.stack[hpf_m.top++] = slot;
}

static void hpf_remember(nbHandle h)
{
    hpf_issued[hpf_n_issued++ % HPF_ISSUED] = h;
}

static nbHandle hpf_pick(hpfIn *in)
{
    uint32_t n = hpf_n_issued < HPF_ISSUED ? hpf_n_issued : HPF_ISSUED;
    uint8_t b = hpf_u8(in);
    if (n == 0) return NB_HANDLE_NULL;
    return hpf_issued[(hpf_n_issued - 1u - b % n) % HPF_ISSUED]; // 0 = the newest
}

// Get and set as the structures do them: one lookup, then the slot. A refused lookup must
// write -1.
static nbStatus hpf_get(nbHandle h, int32_t *value)
{
    int32_t slot = -2;
    *value = 0;
    nbStatus st = nbi_pool_lookup(&hpf_pool, h, &slot);
    if (st != NB_OK) {
        HPF_CHECK(slot == -1, "refused lookup wrote slot %d", (int)slot);
        return st;
    }
    *value = nbi_pool_slot_value(&hpf_pool, slot);
    return NB_OK;
}

static nbStatus hpf_set(nbHandle h, int32_t value)
{
    int32_t slot = -2;
    nbStatus st = nbi_pool_lookup(&hpf_pool, h, &slot);
    if (st != NB_OK) {
        HPF_CHECK(slot == -1, "refused lookup wrote slot %d", (int)slot);
        return st;
    }
    nbi_pool_set_slot_value(&hpf_pool, slot, value);
    return NB_OK;
}

// ---- snapshots: refused calls change nothing ----

typedef struct hpfSnap {
    nbiPool head;
    nbiPoolSlot *slots;
    size_t bytes;
    int64_t calls;
    size_t n; ///< slots copied
} hpfSnap;

// Copies the slots only if `slots` (O(used): only where the call may be refused).
static hpfSnap hpf_snap_if(bool slots)
{
    hpfSnap s;
    s.head = hpf_pool;
    size_t n = slots ? (size_t)hpf_pool.used : 0;
    s.slots = (nbiPoolSlot *)malloc(n ? n * sizeof(nbiPoolSlot) : 1);
    HPF_CHECK(s.slots != NULL, "host malloc");
    if (n) memcpy(s.slots, hpf_pool.slots.ptr, n * sizeof(nbiPoolSlot));
    s.bytes = hpf_al.live_bytes;
    s.calls = hpf_al.calls;
    s.n = n;
    return s;
}
#define hpf_snap() hpf_snap_if(true)

// Checks the pool equals the snapshot (and so do the bytes held, if `bytes`); frees the copy.
static void hpf_same_as(hpfSnap *s, bool bytes, int line)
{
    const nbiPool *a = &s->head;
    const nbiPool *b = &hpf_pool;
    bool same = a->slots.ptr == b->slots.ptr && a->slots.cap == b->slots.cap &&
                a->used == b->used && a->live == b->live && a->free_head == b->free_head &&
                a->free_count == b->free_count && a->retired == b->retired &&
                a->max_slots == b->max_slots && a->tag == b->tag &&
                (b->used == 0 ||
                 (s->n == (size_t)b->used &&
                  memcmp(s->slots, b->slots.ptr, (size_t)b->used * sizeof(nbiPoolSlot)) == 0)) &&
                (!bytes || hpf_al.live_bytes == s->bytes);
    free(s->slots);
    s->slots = NULL;
    if (!same) hpf_fail(line, "a refused call changed the pool");
}
#define hpf_same(s, line) hpf_same_as(s, true, line)

// ---- checks after every operation ----

static void hpf_check_all(bool full)
{
    HPF_STATUS(nbi_pool_validate(&hpf_pool), NB_OK);
    HPF_CHECK(nbi_pool_count(&hpf_pool) == hpf_m.live, "count %d, model %d",
              (int)nbi_pool_count(&hpf_pool), (int)hpf_m.live);
    HPF_CHECK(hpf_pool.used == hpf_m.used && hpf_pool.retired == hpf_m.retired &&
                  hpf_pool.free_count == hpf_m.top,
              "used/retired/free %d/%d/%d, model %d/%d/%d", (int)hpf_pool.used,
              (int)hpf_pool.retired, (int)hpf_pool.free_count, (int)hpf_m.used, (int)hpf_m.retired,
              (int)hpf_m.top);
    HPF_CHECK(nbi_pool_memory_bytes(&hpf_pool) == hpf_al.live_bytes, "memory_bytes %zu, held %zu",
              nbi_pool_memory_bytes(&hpf_pool), hpf_al.live_bytes);
    HPF_CHECK(hpf_al.live == (hpf_pool.slots.cap > 0), "allocator holds %d blocks", hpf_al.live);
    HPF_CHECK(nbi_pool_room(&hpf_pool) == hpf_m.top + (int32_t)hpf_pool.slots.cap - hpf_m.used,
              "room");
    HPF_CHECK(hpf_pool.slots.cap <= (size_t)hpf_m.max_slots, "capacity past the slot limit");
    if (!full) return;
    // The live slots, their values and handles, by a walk over the slots and by lookup.
    const nbiPoolSlot *sl = (const nbiPoolSlot *)hpf_pool.slots.ptr;
    for (int32_t k = 0; k < hpf_m.used; k++) {
        const hpfSlot *s = &hpf_m.s[k];
        nbHandle h = hpf_handle((uint32_t)k, s->gen, hpf_pool.tag);
        int32_t v = 0;
        const bool live = sl[k].state == NBI_SLOT_LIVE;
        HPF_CHECK(live == (s->state == NBI_SLOT_LIVE), "slot %d live %d, model state %d", (int)k,
                  (int)live, s->state);
        if (!live) {
            HPF_STATUS(hpf_get(h, &v), NB_ERR_BAD_HANDLE);
            continue;
        }
        int32_t back = -1;
        HPF_CHECK(nbi_pool_handle_of(&hpf_pool, k).bits == h.bits, "handle_of(%d)", (int)k);
        HPF_STATUS(nbi_pool_lookup(&hpf_pool, h, &back), NB_OK);
        HPF_CHECK(back == k, "lookup of slot %d's handle gave %d", (int)k, (int)back);
        HPF_CHECK(nbi_pool_slot_value(&hpf_pool, k) == s->value, "slot_value(%d)", (int)k);
        HPF_STATUS(hpf_get(h, &v), NB_OK);
        HPF_CHECK(v == s->value, "get %d, model %d", (int)v, (int)s->value);
    }
    // Every remembered handle resolves exactly as the model says.
    uint32_t n = hpf_n_issued < HPF_ISSUED ? hpf_n_issued : HPF_ISSUED;
    for (uint32_t i = 0; i < n; i++) {
        int32_t slot = -2;
        int32_t want = hpf_m_live(hpf_issued[i]);
        nbStatus st = nbi_pool_lookup(&hpf_pool, hpf_issued[i], &slot);
        HPF_STATUS(st, want >= 0 ? NB_OK : NB_ERR_BAD_HANDLE);
        HPF_CHECK(slot == want, "lookup slot %d, model %d", (int)slot, (int)want);
    }
}

// ---- operations ----

static void hpf_init(int32_t max_slots)
{
    nbAllocator al = {hpf_alloc_fn, hpf_free_fn, &hpf_al};
    memset(&hpf_m, 0, sizeof hpf_m);
    nbStatus st = nbi_pool_init(&hpf_pool, &al, max_slots);
    hpf_log("init(max_slots %d) -> %s", (int)max_slots, nb_status_str(st));
    if (max_slots < 0 || max_slots > NBI_POOL_MAX_SLOTS) {
        HPF_STATUS(st, NB_ERR_OUT_OF_RANGE);
        nbi_pool_destroy(&hpf_pool);
        st = nbi_pool_init(&hpf_pool, &al, max_slots = 0);
    }
    HPF_STATUS(st, NB_OK);
    HPF_CHECK(hpf_pool.tag != 0 && hpf_pool.tag != hpf_other.tag, "tag %u (other %u)", hpf_pool.tag,
              hpf_other.tag);
    hpf_m.max_slots = max_slots == 0 ? NBI_POOL_MAX_SLOTS : max_slots;
}

// One allocation; returns false if the fuzzer's own slot cap stopped it.
static bool hpf_op_alloc(int32_t value)
{
    if (hpf_m.top == 0 && hpf_m.used >= HPF_MODEL_SLOTS) return false;
    const int32_t room = nbi_pool_room(&hpf_pool);
    hpfSnap s = hpf_snap_if(room == 0); // only then may it be refused
    const int64_t refused = hpf_al.refused;
    nbHandle h = {12345};
    nbStatus st = nbi_pool_alloc(&hpf_pool, value, &h);
    hpf_log("alloc(%d) -> %s %#llx", (int)value, nb_status_str(st), (unsigned long long)h.bits);
    if (room > 0) HPF_CHECK(hpf_al.calls == s.calls, "alloc with room %d allocated", (int)room);
    if (hpf_m.top == 0 && hpf_m.used == hpf_m.max_slots) {
        HPF_STATUS(st, NB_ERR_OUT_OF_RANGE);
        HPF_CHECK(hpf_al.calls == s.calls, "alloc at the slot limit allocated");
    } else if (hpf_al.refused != refused) {
        HPF_STATUS(st, NB_ERR_OUT_OF_MEMORY);
    } else {
        HPF_STATUS(st, NB_OK);
    }
    if (st != NB_OK) {
        HPF_CHECK(h.bits == 0, "failed alloc left a non-null handle");
        hpf_same(&s, __LINE__);
        return true;
    }
    free(s.slots);
    int32_t slot = hpf_m.top > 0 ? hpf_m.stack[--hpf_m.top] : hpf_m.used++;
    hpfSlot *ms = &hpf_m.s[slot];
    ms->state = NBI_SLOT_LIVE;
    ms->value = value;
    hpf_m.live++;
    HPF_CHECK(h.bits == hpf_handle((uint32_t)slot, ms->gen, hpf_pool.tag).bits,
              "handle %#llx, model slot %d gen %u", (unsigned long long)h.bits, (int)slot, ms->gen);
    hpf_remember(h);
    return true;
}

// free / get / set on a handle; any of them on a handle the model says is not live must be
// refused with nothing changed.
static void hpf_op_use(int which, nbHandle h, int32_t value)
{
    int32_t slot = hpf_m_live(h);
    hpfSnap s = hpf_snap_if(slot < 0); // only then must it be refused
    int32_t v = 777;
    nbStatus st;
    if (which == 0) {
        st = nbi_pool_free(&hpf_pool, h, (value & 1) ? NULL : &v);
        if (value & 1) v = slot >= 0 ? hpf_m.s[slot].value : 0;
    } else if (which == 1) {
        st = hpf_get(h, &v);
    } else {
        st = hpf_set(h, value);
        v = slot >= 0 ? hpf_m.s[slot].value : 0;
    }
    hpf_log("%s(%#llx) -> %s %d",
            which == 0   ? "free"
            : which == 1 ? "get"
                         : "set",
            (unsigned long long)h.bits, nb_status_str(st), (int)v);
    HPF_CHECK(hpf_al.calls == s.calls, "free/get/set allocated");
    if (slot < 0) {
        HPF_STATUS(st, NB_ERR_BAD_HANDLE);
        HPF_CHECK(which == 2 || v == 0, "output %d not zeroed", (int)v);
        hpf_same(&s, __LINE__);
        return;
    }
    free(s.slots);
    HPF_STATUS(st, NB_OK);
    HPF_CHECK(v == hpf_m.s[slot].value, "value %d, model %d", (int)v, (int)hpf_m.s[slot].value);
    if (which == 0) hpf_m_release(slot);
    if (which == 2) hpf_m.s[slot].value = value;
}

static void hpf_op_bad(hpfIn *in)
{
    uint8_t kind = hpf_u8(in);
    nbHandle h = hpf_pick(in);
    switch (kind % 6) {
    case 0: h.bits = (h.bits & 0xFFFFFFFFFFFFull) | (uint64_t)hpf_other.tag << 48; break;
    case 1: h.bits = 0; break;
    case 2: h.bits = (uint64_t)hpf_u32(in) | (uint64_t)hpf_u32(in) << 32; break;
    case 3: h.bits ^= (uint64_t)1 << (32 + hpf_u8(in) % 16); break;
    case 4: h.bits = (h.bits & ~0xFFFFFFFFull) | hpf_u32(in); break;
    case 5: h = hpf_handle(hpf_u16(in), hpf_u16(in), hpf_pool.tag); break;
    }
    hpf_op_use(kind / 6 % 3, h, 5);
}

// prepare(extra), then commit (`commit` 1), abandon (0) or what the next input byte says (-1).
static void hpf_prepare(hpfIn *in, int32_t extra, int commit_how)
{
    const int32_t room = nbi_pool_room(&hpf_pool);
    const int64_t refused = hpf_al.refused;
    hpfSnap s = hpf_snap();
    nbiPoolPrep prep;
    nbStatus st = nbi_pool_prepare(&hpf_pool, extra, &prep);
    hpf_log("prepare(%d) -> %s", (int)extra, nb_status_str(st));
    nbStatus want;
    if (extra < 0) {
        want = NB_ERR_OUT_OF_RANGE;
    } else if (extra <= room) {
        want = NB_OK;
    } else if ((int64_t)hpf_m.used + extra - hpf_m.top > hpf_m.max_slots) {
        want = NB_ERR_OUT_OF_RANGE;
    } else {
        want = hpf_al.refused != refused ? NB_ERR_OUT_OF_MEMORY : NB_OK;
    }
    HPF_STATUS(st, want);
    if (st != NB_OK) {
        hpf_same(&s, __LINE__);
        return;
    }
    const bool commit = commit_how < 0 ? (hpf_u8(in) & 1) != 0 : commit_how != 0;
    if (extra <= room) HPF_CHECK(hpf_al.calls == s.calls, "prepare within the room allocated");
    if (commit) {
        nbi_pool_commit(&hpf_pool, &prep);
        free(s.slots);
        HPF_CHECK(nbi_pool_room(&hpf_pool) >= extra, "room %d after prepare(%d) + commit",
                  (int)nbi_pool_room(&hpf_pool), (int)extra);
    } else {
        nbi_pool_abandon(&hpf_pool, &prep);
        hpf_same(&s, __LINE__); // the prepared block is gone again
    }
    hpf_log("  %s", commit ? "commit" : "abandon");
}

static void hpf_op_prepare(hpfIn *in)
{
    uint8_t mode = hpf_u8(in);
    int32_t extra = mode % 3 == 2 ? -(int32_t)(mode / 3) : (int32_t)(mode / 3) * (mode % 3 + 1);
    if (mode == 255) extra = (int32_t)(hpf_u32(in) & 0x7FFFFFFF);
    hpf_prepare(in, extra, -1);
}

// Room for `n` live handles in total: a prepare of n - live more, committed. The input decodes
// as it did when the pool had a reserve call, so the corpus keeps its meaning.
static void hpf_op_reserve(hpfIn *in)
{
    uint8_t mode = hpf_u8(in);
    int32_t n;
    switch (mode % 5) {
    case 0: n = mode / 5; break;
    case 1: n = hpf_m.live + (int32_t)(mode / 5); break;
    case 2: n = -(int32_t)(mode / 5) - 1; break;
    case 3: { // just below, at and just above what the limit allows
        int64_t t = (int64_t)hpf_m.max_slots - hpf_m.retired + (int64_t)(mode / 5 % 3) - 1;
        n = t > INT32_MAX ? INT32_MAX : (int32_t)t;
        break;
    }
    default: n = (int32_t)(hpf_u32(in) & 0x7FFFFFFF); break;
    }
    hpf_log("reserve(%d)", (int)n);
    hpf_prepare(in, n - hpf_m.live, 1);
}

static void hpf_op_clear(void)
{
    const int64_t calls = hpf_al.calls;
    nbi_pool_clear(&hpf_pool);
    hpf_log("clear()");
    HPF_CHECK(hpf_al.calls == calls, "clear allocated");
    for (int32_t k = 0; k < hpf_m.used; k++)
        if (hpf_m.s[k].state == NBI_SLOT_LIVE) hpf_m_release(k);
    hpf_m.top = 0;
    for (int32_t k = hpf_m.used - 1; k >= 0; k--)
        if (hpf_m.s[k].state == NBI_SLOT_FREE) hpf_m.stack[hpf_m.top++] = k;
}

// Free and reallocate one live handle up to n times: LIFO gives the same slot back one
// generation on, until the slot retires.
static void hpf_op_churn(hpfIn *in)
{
    nbHandle h = hpf_pick(in);
    // Mostly short; a long one (up to 65536 cycles, what it takes to retire a fresh slot) is
    // costly under the sanitizers, so it takes a flag and a per-input budget.
    uint8_t mode = hpf_u8(in);
    uint32_t n = (mode & 0x80) != 0 ? 65536u - (mode & 0x7Fu) * 8u : (mode & 0x7Fu) + 1u;
    int32_t slot = hpf_m_live(h);
    hpf_log("churn(%#llx, %u)", (unsigned long long)h.bits, n);
    if (slot < 0) return;
    const int64_t calls = hpf_al.calls;
    for (uint32_t k = 0; k < n && hpf_churn < HPF_CHURN_BUDGET; k++, hpf_churn++) {
        HPF_STATUS(nbi_pool_free(&hpf_pool, h, NULL), NB_OK);
        hpf_m_release(slot);
        if (hpf_m.s[slot].state == NBI_SLOT_RETIRED) break;
        HPF_STATUS(nbi_pool_alloc(&hpf_pool, (int32_t)k, &h), NB_OK);
        hpf_m.top--;
        hpf_m.s[slot].state = NBI_SLOT_LIVE;
        hpf_m.s[slot].value = (int32_t)k;
        hpf_m.live++;
        HPF_CHECK(h.bits == hpf_handle((uint32_t)slot, hpf_m.s[slot].gen, hpf_pool.tag).bits,
                  "churn handle %#llx", (unsigned long long)h.bits);
    }
    HPF_CHECK(hpf_al.calls == calls, "churn allocated");
    hpf_remember(h);
}

static void hpf_op_schedule(hpfIn *in)
{
    uint8_t b = hpf_u8(in);
    hpf_al.fail_at = (b & 0x7F) == 0 ? 0 : hpf_al.calls + (b & 0x7F);
    hpf_al.fail_after = (b & 0x80) != 0;
    hpf_log("schedule(fail request %lld%s)", (long long)hpf_al.fail_at,
            hpf_al.fail_after ? " and after" : "");
}

static void hpf_destroy_check(void)
{
    nbi_pool_destroy(&hpf_pool);
    HPF_CHECK(hpf_al.live == 0 && hpf_al.live_bytes == 0, "destroy left %d blocks", hpf_al.live);
    int32_t v = 1;
    HPF_STATUS(hpf_get(hpf_issued[0], &v), NB_ERR_BAD_HANDLE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hpfIn in = {data, size, 0};
    memset(&hpf_al, 0, sizeof hpf_al);
    hpf_step = 0;
    hpf_churn = 0;
    hpf_n_issued = 0;
    memset(hpf_issued, 0, sizeof hpf_issued);
    hpf_op = "init";
    HPF_STATUS(nbi_pool_init(&hpf_other, NULL, 0), NB_OK);
    uint8_t b = hpf_u8(&in);
    int32_t max_slots = b < 128 ? 0 : b == 255 ? -1 : b == 254 ? INT32_MAX : (b & 63) + 1;
    hpf_init(max_slots);
    hpf_check_all(true);
    while (in.at < in.n && hpf_step < 2000) {
        hpf_step++;
        uint8_t op = hpf_u8(&in);
        switch (op % 13) {
        case 0:
            hpf_op = "alloc";
            hpf_op_alloc((int32_t)hpf_u32(&in));
            break;
        case 1:
            hpf_op = "free";
            hpf_op_use(0, hpf_pick(&in), op >> 4);
            break;
        case 2:
            hpf_op = "get";
            hpf_op_use(1, hpf_pick(&in), 0);
            break;
        case 3:
            hpf_op = "set";
            hpf_op_use(2, hpf_pick(&in), (int32_t)hpf_u32(&in));
            break;
        case 4:
            hpf_op = "bad handle";
            hpf_op_bad(&in);
            break;
        case 5:
            hpf_op = "clear";
            hpf_op_clear();
            break;
        case 6:
            hpf_op = "reserve";
            hpf_op_reserve(&in);
            break;
        case 7:
            hpf_op = "prepare";
            hpf_op_prepare(&in);
            break;
        case 8:
            hpf_op = "schedule";
            hpf_op_schedule(&in);
            break;
        case 9:
            hpf_op = "churn";
            hpf_op_churn(&in);
            break;
        case 10: {
            hpf_op = "burst";
            int n = hpf_u8(&in) % 64 + 1;
            for (int k = 0; k < n; k++)
                if (!hpf_op_alloc(k)) break;
            break;
        }
        case 11: hpf_op = "full check"; break;
        default: {
            hpf_op = "reinit";
            uint8_t c = hpf_u8(&in);
            hpf_destroy_check();
            hpf_init(c < 128 ? 0 : (c & 63) + 1);
            break;
        }
        }
        hpf_check_all(op % 13 == 11 || op % 13 == 5 || hpf_m.used <= 64);
    }
    hpf_op = "destroy";
    hpf_destroy_check();
    nbi_pool_destroy(&hpf_other);
    return 0;
}
