// SPDX-License-Identifier: MIT
// The cell table (src/cell_table.c): find, insert and grow against a plain array model, with
// crafted keys that share a home slot (long probe runs), wrap-around at the table's end, growth
// under a failing allocator, and a table filled to the most it may hold; coded tables (keys
// through the owner's cell codes) likewise, and their blocks.
#include "cell_table.h"
#include "nb_test.h"
#include "view.h"

// A model: the keys present and their values, in a flat array (linear search).
typedef struct Model {
    int64_t key[512][3];
    int32_t value[512];
    int32_t n;
} Model;

static int32_t model_find(const Model *m, const int64_t k[3])
{
    for (int32_t i = 0; i < m->n; i++)
        if (m->key[i][0] == k[0] && m->key[i][1] == k[1] && m->key[i][2] == k[2]) return i;
    return -1;
}

// Every model key is found with its value, the count matches, and the table is valid.
static int check_model(const nbiCellTable *t, const Model *m)
{
    NB_CHECK(nbi_ctab_validate(t));
    NB_CHECK(t->count == m->n);
    for (int32_t i = 0; i < m->n; i++)
        NB_CHECK(nbi_ctab_find(t, m->key[i][0], m->key[i][1], m->key[i][2]) == m->value[i]);
    return 0;
}

// n distinct keys whose home slot in a table of 2^bits slots is `home`, found by search.
static void colliding_keys(int32_t bits, size_t home, int64_t (*out)[3], int32_t n)
{
    nbiCellTable probe = {{NULL, 0}, bits, 0, NULL, NULL, 0, {0, 0, 0}, 0, NULL, 0, 0, 0, 0};
    int32_t got = 0;
    for (int64_t x = -100000; got < n; x++) {
        const int64_t y = x * 7 - 3, z = x % 5;
        if (nbi_ctab_home(&probe, x, y, z) != home) continue;
        out[got][0] = x;
        out[got][1] = y;
        out[got][2] = z;
        got++;
    }
}

static int test_insert_find(void)
{
    nbAllocator a;
    NB_CHECK(nbi_allocator(NULL, &a));
    nbiCellTable t = {{NULL, 0}, 0, 0, NULL, NULL, 0, {0, 0, 0}, 0, NULL, 0, 0, 0, 0};
    NB_CHECK(nbi_ctab_find(&t, 1, 2, 3) == -1); // unsized: nothing found, no crash
    NB_CHECK(nbi_ctab_grow(&t, &a, 3));
    NB_CHECK(t.bits == NBI_CTAB_MIN_BITS);
    bool ins = false;
    const int64_t s = nbi_ctab_insert(&t, -5, 0, 9, 42, &ins);
    NB_CHECK(s >= 0 && ins && t.count == 1);
    NB_CHECK(nbi_ctab_insert(&t, -5, 0, 9, 7, &ins) == s && !ins); // found, value kept
    NB_CHECK(nbi_ctab_find(&t, -5, 0, 9) == 42);
    NB_CHECK(nbi_ctab_find(&t, 5, 0, 9) == -1 && nbi_ctab_find(&t, -5, 0, -9) == -1);
    nbi_ctab_set(&t, s, 43);
    NB_CHECK(nbi_ctab_find(&t, -5, 0, 9) == 43);
    NB_CHECK(t.count == 1 && nbi_ctab_validate(&t));
    nbi_ctab_free(&t, &a);
    NB_CHECK(t.bits == 0 && t.buf.ptr == NULL);
    return 0;
}

// Keys that all share one home slot form one probe run, in insertion order, every key reachable,
// including runs that wrap past the last slot.
static int test_colliding_keys(void)
{
    nbAllocator a;
    NB_CHECK(nbi_allocator(NULL, &a));
    const int32_t bits = 5;                       // 32 slots, up to 16 keys
    for (size_t home = 0; home < 32; home += 9) { // 27 makes the run wrap past slot 31
        static int64_t keys[16][3];
        colliding_keys(bits, home, keys, 12);
        nbiCellTable t = {{NULL, 0}, 0, 0, NULL, NULL, 0, {0, 0, 0}, 0, NULL, 0, 0, 0, 0};
        NB_CHECK(nbi_ctab_grow(&t, &a, 16));
        NB_CHECK(t.bits == bits);
        static Model m;
        m.n = 0;
        for (int32_t i = 0; i < 12; i++) {
            bool ins = false;
            const int64_t s = nbi_ctab_insert(&t, keys[i][0], keys[i][1], keys[i][2], i, &ins);
            NB_CHECK(ins && (size_t)s == ((home + (size_t)i) & 31)); // linear probing, in order
            memcpy(m.key[m.n], keys[i], sizeof keys[i]);
            m.value[m.n++] = i;
        }
        if (check_model(&t, &m)) return 1;
        // a key absent but homed in the same run: the probe walks the run and stops at the gap
        int64_t extra[13][3];
        colliding_keys(bits, home, extra, 13);
        NB_CHECK(nbi_ctab_find(&t, extra[12][0], extra[12][1], extra[12][2]) == -1);
        nbi_ctab_free(&t, &a);
    }
    return 0;
}

// Random inserts and finds over a small key space (many collisions), growing as it fills,
// against the model after every step.
static int test_random_against_model(void)
{
    nbAllocator a;
    NB_CHECK(nbi_allocator(NULL, &a));
    static Model m;
    for (int round = 0; round < 20; round++) {
        nbiCellTable t = {{NULL, 0}, 0, 0, NULL, NULL, 0, {0, 0, 0}, 0, NULL, 0, 0, 0, 0};
        m.n = 0;
        const int32_t span = 4 + nbt_int(30);
        for (int step = 0; step < 3000; step++) {
            const int64_t k[3] = {nbt_int(span) - span / 2, nbt_int(span) * ((int64_t)1 << 40),
                                  round % 2 ? 0 : nbt_int(3)};
            const int32_t at = model_find(&m, k);
            if (nbt_int(3) > 0 && m.n < 500) {
                NB_CHECK(nbi_ctab_grow(&t, &a, (size_t)t.count + 1));
                bool ins = false;
                NB_CHECK(nbi_ctab_insert(&t, k[0], k[1], k[2], step, &ins) >= 0);
                NB_CHECK(ins == (at < 0));
                if (at < 0) {
                    memcpy(m.key[m.n], k, sizeof k);
                    m.value[m.n++] = step;
                }
            } else {
                NB_CHECK(nbi_ctab_find(&t, k[0], k[1], k[2]) == (at >= 0 ? m.value[at] : -1));
            }
            if (step % 97 == 0 && check_model(&t, &m)) return 1;
        }
        if (check_model(&t, &m)) return 1;
        nbi_ctab_free(&t, &a);
    }
    return 0;
}

// Growth is all or nothing: a failed allocation leaves the table as it was; the sweep ends with a
// try that succeeds, so no allocation falls outside it.
static int test_grow_failure(void)
{
    bool succeeded = false;
    for (int64_t fail = 1; fail <= 8 && !succeeded; fail++) {
        nbtAlloc counter = {0};
        nbAllocator a = nbt_allocator(&counter);
        nbiCellTable t = {{NULL, 0}, 0, 0, NULL, NULL, 0, {0, 0, 0}, 0, NULL, 0, 0, 0, 0};
        NB_CHECK(nbi_ctab_grow(&t, &a, 4)); // allocation 1, never failed below
        bool ins;
        for (int64_t i = 0; i < 8; i++) nbi_ctab_insert(&t, i, -i, 0, (int32_t)i, &ins);
        counter.fail_at = fail + 1;
        const int32_t bits = t.bits;
        const bool ok = nbi_ctab_grow(&t, &a, 100);
        if (!ok) {
            NB_CHECK(nbt_alloc_failed(&counter));
            NB_CHECK(t.bits == bits && t.count == 8);
        } else {
            NB_CHECK(!nbt_alloc_failed(&counter) && t.bits > bits);
            succeeded = true;
        }
        NB_CHECK(nbi_ctab_validate(&t));
        for (int64_t i = 0; i < 8; i++) NB_CHECK(nbi_ctab_find(&t, i, -i, 0) == (int32_t)i);
        nbi_ctab_free(&t, &a);
        NB_CHECK(counter.live_bytes == 0 && !counter.size_mismatch);
    }
    NB_CHECK(succeeded);
    // a table no 32-bit slot index can address is refused before any allocation
    NB_CHECK(nbi_ctab_bits_for((size_t)1 << 40) > NBI_CTAB_MAX_BITS);
    NB_CHECK(nbi_ctab_bits_for(INT32_MAX) <= NBI_CTAB_MAX_BITS);
    return 0;
}

// A table filled whole is sized at most three quarters full (nbi_ctab_bits_packed), one that
// grows at most half full (nbi_ctab_bits_for). Filled to the most it may hold with keys of one
// home slot (one run that wraps past the last slot), every key is found and an absent key's probe
// stops at the one gap left; one key more is an invalid table.
static int test_packed_fill(void)
{
    NB_CHECK(nbi_ctab_bits_packed(0) == NBI_CTAB_MIN_BITS && nbi_ctab_bits_packed(12) == 4);
    NB_CHECK(nbi_ctab_bits_packed(13) == 5 && nbi_ctab_bits_packed(24) == 5);
    NB_CHECK(nbi_ctab_bits_packed(25) == 6 && nbi_ctab_bits_packed(3 << 20) == 22);
    NB_CHECK(nbi_ctab_bits_packed((3 << 20) + 1) == 23);
    NB_CHECK(nbi_ctab_bits_for(8) == 4 && nbi_ctab_bits_for(9) == 5 && nbi_ctab_bits_for(16) == 5);
    NB_CHECK(nbi_ctab_bits_packed((size_t)1 << 40) > NBI_CTAB_MAX_BITS);
    NB_CHECK(nbi_ctab_bits_packed(INT32_MAX) <= NBI_CTAB_MAX_BITS);
    for (int32_t bits = NBI_CTAB_MIN_BITS; bits <= 6; bits++) {
        const size_t slots = (size_t)1 << bits, most = nbi_ctab_most(bits);
        NB_CHECK(most == slots - slots / 4 && nbi_ctab_bits_packed(most) == bits);
        nbAllocator a;
        NB_CHECK(nbi_allocator(NULL, &a));
        nbiCellTable t = {{NULL, 0}, 0, 0, NULL, NULL, 0, {0, 0, 0}, 0, NULL, 0, 0, 0, 0};
        NB_CHECK(nbi_ctab_grow(&t, &a, slots / 2)); // storage for 2^bits slots
        NB_CHECK(t.bits == bits);
        static int64_t keys[49][3];
        colliding_keys(bits, slots - 3, keys, (int32_t)most + 1);
        nbi_ctab_reset(&t, bits);
        static Model m;
        m.n = 0;
        for (int32_t i = 0; i < (int32_t)most; i++) {
            bool ins = false;
            const int64_t s = nbi_ctab_insert(&t, keys[i][0], keys[i][1], keys[i][2], i, &ins);
            NB_CHECK(ins && (size_t)s == ((slots - 3 + (size_t)i) & (slots - 1)));
            memcpy(m.key[m.n], keys[i], sizeof keys[i]);
            m.value[m.n++] = i;
        }
        if (check_model(&t, &m)) return 1;
        NB_CHECK(nbi_ctab_find(&t, keys[most][0], keys[most][1], keys[most][2]) == -1);
        // one more entry, written past the insert's check: no longer a valid table
        nbiCellSlot *slot = (nbiCellSlot *)t.buf.ptr + ((slots - 3 + most) & (slots - 1));
        memcpy(slot->key, keys[most], sizeof keys[most]);
        slot->value = (int32_t)most;
        t.count++;
        NB_CHECK(!nbi_ctab_validate(&t));
        nbi_ctab_free(&t, &a);
    }
    return 0;
}

// Inserts the n cells keys[i] into a coded table (reset for them) with values 0 .. n - 1.
static int insert_coded(nbiCellTable *t, int64_t (*keys)[3], int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        const int64_t *k = keys[i];
        uint64_t key;
        NB_CHECK(nbi_ctab_key(t, k[0], k[1], k[2], &key));
        nbi_ctab_insert_coded(t, nbi_cell_hash(k[0], k[1], k[2]), key,
                              nbi_ctab_low_bits(t, k[0], k[1], k[2]), i);
    }
    return 0;
}

// Coded tables (nbi_ctab_reset_coded): keys through the cells' codes, in 2D and 3D, with exact
// codes and with low codes (cells of one code told apart by the low bits in their slots, or
// by their low codes where those do not fit a slot), a table filled to
// the most it may hold, against the model for every cell about the filled region (also below
// the box's corner and beyond the codes' reach); a slot with a wrong key fails validation.
static int test_coded_against_model(void)
{
    enum { SIDE = 24, BITS = 8 };
    const int32_t most = (int32_t)nbi_ctab_most(BITS);
    static uint64_t codes[192], lows[192];
    static Model m;
    for (int dim = 2; dim <= 3; dim++)
        for (int v = 0; v < 3; v++) { // exact codes; low bits in the slots; low codes compared
            const int shift = v == 0 ? 0 : v == 1 ? 3 : 35 / dim;
            const int64_t lo[3] = {-5, (int64_t)1 << 40, dim == 3 ? -1000003 : 0};
            nbAllocator a;
            NB_CHECK(nbi_allocator(NULL, &a));
            nbiCellTable t = {{NULL, 0}, 0, 0, NULL, NULL, 0, {0, 0, 0}, 0, NULL, 0, 0, 0, 0};
            NB_CHECK(nbi_ctab_grow(&t, &a, (size_t)1 << (BITS - 1))); // 2^BITS slots of 32 bytes
            m.n = 0;
            while (m.n < most) { // distinct cells in a cube of SIDE cells at lo
                int64_t k[3] = {0, 0, 0};
                for (int d = 0; d < dim; d++) k[d] = lo[d] + nbt_int(SIDE);
                if (model_find(&m, k) >= 0) continue;
                memcpy(m.key[m.n], k, sizeof k);
                m.value[m.n] = m.n;
                codes[m.n] = nbi_code_of(k, lo, dim, shift);
                lows[m.n] = shift > 0 ? nbi_code_low(k, lo, dim, shift) : 0;
                m.n++;
            }
            nbi_ctab_reset_coded(&t, BITS, codes, shift > 0 ? lows : NULL, shift, lo, dim);
            if (insert_coded(&t, m.key, m.n)) return 1;
            if (check_model(&t, &m)) return 1;
            for (int64_t z = -2; z < (dim == 3 ? SIDE + 2 : 1); z++)
                for (int64_t y = -2; y < SIDE + 2; y++)
                    for (int64_t x = -2; x < SIDE + 2; x++) {
                        const int64_t k[3] = {lo[0] + x, lo[1] + y, lo[2] + z};
                        NB_CHECK(nbi_ctab_find(&t, k[0], k[1], k[2]) == model_find(&m, k));
                    }
            const int64_t beyond = (int64_t)1 << (NBI_CODE_BITS(dim) + shift); // out of reach
            NB_CHECK(nbi_ctab_find(&t, lo[0] + beyond, lo[1], lo[2]) == -1);
            NB_CHECK(nbi_ctab_find(&t, lo[0], lo[1] + beyond, lo[2]) == -1);
            // a slot whose key is not its cell's: no longer a valid table
            nbiCodedSlot *slot = (nbiCodedSlot *)t.buf.ptr;
            while (slot->value < 0) slot++;
            slot->key ^= 1;
            NB_CHECK(!nbi_ctab_validate(&t));
            slot->key ^= 1;
            NB_CHECK(nbi_ctab_validate(&t));
            nbi_ctab_free(&t, &a);
        }
    return 0;
}

// A table filled on first use (nbiCtabLazy): pending after nbi_ctab_defer, filled by the first
// nbi_ctab_ready (once, however many follow), pending again after the next defer.
typedef struct LazyOwner {
    nbiCellTable *t;
    int fills;
} LazyOwner;

static void lazy_fill(void *owner)
{
    LazyOwner *o = (LazyOwner *)owner;
    o->fills++;
    bool ins = false;
    nbi_ctab_reset(o->t, NBI_CTAB_MIN_BITS);
    nbi_ctab_insert(o->t, 1, 2, 3, o->fills, &ins);
}

static int test_filled_on_first_use(void)
{
    nbAllocator a;
    NB_CHECK(nbi_allocator(NULL, &a));
    nbiCellTable t = {{NULL, 0}, 0, 0, NULL, NULL, 0, {0, 0, 0}, 0, NULL, 0, 0, 0, 0};
    NB_CHECK(nbi_ctab_grow(&t, &a, 3) && nbi_ctab_is_filled(&t)); // no lazy state: filled
    LazyOwner o = {&t, 0};
    nbiCtabLazy lazy;
    lazy.fill = lazy_fill;
    lazy.owner = &o;
    for (int round = 1; round <= 2; round++) {
        nbi_ctab_defer(&t, &lazy);
        NB_CHECK(nbi_ctab_is_filled(&t) == !NBI_CTAB_LAZY && o.fills == round - NBI_CTAB_LAZY);
        for (int i = 0; i < 3; i++) {
            nbi_ctab_ready(&t);
            NB_CHECK(nbi_ctab_is_filled(&t) && o.fills == round);
            NB_CHECK(nbi_ctab_find(&t, 1, 2, 3) == round && nbi_ctab_validate(&t));
        }
    }
    nbi_ctab_free(&t, &a);
    return 0;
}

// The blocks of a coded table (nbi_ctab_fill_blocks): cells in Z order (sorted by code, then
// low code), in 2D and 3D, with exact codes and with low codes, at a corner far from the
// origin; every block about the filled region found with the mask and first cell of the model's
// cells (absent ones with mask 0), the table valid, and a wrong mask or first cell caught by
// validation. A block beyond the keys' reach (a coordinate of 2^32 blocks or more) and storage
// with no room after the coded slots leave the table without blocks; a coded table at most half
// full is repacked at most three quarters full where that makes the room.
static int test_blocks_against_model(void)
{
    enum { SIDE = 20, BITS = 8, CELLS = 150 };
    static uint64_t codes[CELLS], lows[CELLS];
    static Model m;
    for (int dim = 2; dim <= 3; dim++)
        for (int v = 0; v < 3; v++) {
            const int shift = v == 0 ? 0 : v == 1 ? 1 : 35 / dim;
            const int sb = NBI_BLOCK_SIDE_BITS(dim);
            const int64_t lo[3] = {-5, (int64_t)1 << 40, dim == 3 ? -1000003 : 0};
            nbAllocator a;
            NB_CHECK(nbi_allocator(NULL, &a));
            nbiCellTable t = {{NULL, 0}, 0, 0, NULL, NULL, 0, {0, 0, 0}, 0, NULL, 0, 0, 0, 0};
            NB_CHECK(nbi_ctab_grow(&t, &a, (size_t)1 << BITS)); // room beyond the coded slots
            m.n = 0;
            while (m.n < CELLS) { // distinct cells in a cube of SIDE cells at lo, in Z order
                int64_t k[3] = {0, 0, 0};
                for (int d = 0; d < dim; d++) k[d] = lo[d] + nbt_int(SIDE);
                if (model_find(&m, k) >= 0) continue;
                const uint64_t code = nbi_code_of(k, lo, dim, shift);
                const uint64_t low = shift > 0 ? nbi_code_low(k, lo, dim, shift) : 0;
                int32_t at = m.n;
                for (; at > 0 &&
                       (codes[at - 1] > code || (codes[at - 1] == code && lows[at - 1] > low));
                     at--) {
                    memcpy(m.key[at], m.key[at - 1], sizeof m.key[at]);
                    codes[at] = codes[at - 1];
                    lows[at] = lows[at - 1];
                }
                memcpy(m.key[at], k, sizeof k);
                codes[at] = code;
                lows[at] = low;
                m.n++;
            }
            for (int32_t i = 0; i < m.n; i++) m.value[i] = i;
            nbi_ctab_reset_coded(&t, BITS, codes, shift > 0 ? lows : NULL, shift, lo, dim);
            if (insert_coded(&t, m.key, m.n)) return 1;
            nbi_ctab_fill_blocks(&t);
            NB_CHECK(t.block_bits > 0 && t.block_count > 0);
            if (check_model(&t, &m)) return 1;
            const int64_t bside = (int64_t)1 << sb, nbk = (SIDE + bside) / bside + 1;
            for (int64_t bz = 0; bz < (dim == 3 ? nbk : 1); bz++)
                for (int64_t by = 0; by < nbk; by++)
                    for (int64_t bx = 0; bx < nbk; bx++) {
                        const uint64_t h =
                            nbi_ctab_block_hash((uint64_t)bx, (uint64_t)by, (uint64_t)bz);
                        int32_t first = -1;
                        const uint64_t mask = nbi_ctab_block_find(&t, (uint64_t)bx, (uint64_t)by,
                                                                  (uint64_t)bz, h, &first);
                        uint64_t want = 0;
                        int32_t want_first = -1;
                        for (int32_t i = m.n - 1; i >= 0; i--) {
                            const int64_t *k = m.key[i];
                            const int64_t o[3] = {k[0] - lo[0], k[1] - lo[1], k[2] - lo[2]};
                            if ((o[0] >> sb) != bx || (o[1] >> sb) != by || (o[2] >> sb) != bz)
                                continue;
                            const uint64_t msk = (uint64_t)bside - 1;
                            const uint64_t l = dim == 2
                                                   ? nbi_spread2((uint64_t)o[0] & msk) |
                                                         nbi_spread2((uint64_t)o[1] & msk) << 1
                                                   : nbi_spread3((uint64_t)o[0] & msk) |
                                                         nbi_spread3((uint64_t)o[1] & msk) << 1 |
                                                         nbi_spread3((uint64_t)o[2] & msk) << 2;
                            want |= (uint64_t)1 << l;
                            want_first = i;
                        }
                        NB_CHECK(mask == want);
                        if (want != 0) NB_CHECK(first == want_first);
                    }
            nbiBlockSlot *b = (nbiBlockSlot *)((char *)t.buf.ptr + t.block_at);
            while (b->mask == 0) b++;
            b->first++;
            NB_CHECK(!nbi_ctab_validate(&t));
            b->first--;
            const uint64_t keep = b->mask;
            b->mask = keep | (~keep & (keep + 1)); // one cell more: no longer its cells
            NB_CHECK(!nbi_ctab_validate(&t));
            b->mask = keep;
            NB_CHECK(nbi_ctab_validate(&t));
            // No room after the coded slots (storage of exactly 2^BITS coded slots): no blocks.
            const size_t cap = t.buf.cap;
            t.buf.cap = ((size_t)1 << BITS) / 2;
            nbi_ctab_fill_blocks(&t);
            NB_CHECK(t.block_bits == 0 && nbi_ctab_validate(&t));
            // Room only once the coded table is repacked at most three quarters full (2^BITS
            // slots, from 2^(BITS + 1)): every cell still found, and blocks in 2D (few of them).
            t.buf.cap = ((size_t)1 << BITS);
            nbi_ctab_reset_coded(&t, BITS + 1, codes, shift > 0 ? lows : NULL, shift, lo, dim);
            if (insert_coded(&t, m.key, m.n)) return 1;
            nbi_ctab_fill_blocks(&t);
            NB_CHECK(t.block_bits == 0 || t.bits == BITS);
            NB_CHECK(dim == 3 || t.block_bits > 0);
            if (check_model(&t, &m)) return 1;
            t.buf.cap = cap;
            if (dim == 2 && v == 2) { // a cell 2^36 cells out: a block 2^33 along x
                int64_t far[2][3] = {{lo[0], lo[1], 0}, {lo[0] + ((int64_t)1 << 36), lo[1], 0}};
                for (int i = 0; i < 2; i++) {
                    codes[i] = nbi_code_of(far[i], lo, dim, shift);
                    lows[i] = nbi_code_low(far[i], lo, dim, shift);
                }
                nbi_ctab_reset_coded(&t, BITS, codes, lows, shift, lo, dim);
                if (insert_coded(&t, far, 2)) return 1;
                nbi_ctab_fill_blocks(&t);
                NB_CHECK(t.block_bits == 0 && nbi_ctab_validate(&t));
            }
            nbi_ctab_free(&t, &a);
        }
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"insert_find", test_insert_find},
        {"colliding_keys", test_colliding_keys},
        {"random_against_model", test_random_against_model},
        {"grow_failure", test_grow_failure},
        {"packed_fill", test_packed_fill},
        {"coded_against_model", test_coded_against_model},
        {"blocks_against_model", test_blocks_against_model},
        {"filled_on_first_use", test_filled_on_first_use},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
