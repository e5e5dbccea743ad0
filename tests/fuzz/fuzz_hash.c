// SPDX-License-Identifier: MIT
// Fuzz target for the spatial hash (include/nearby/hash.h).
//
// The input is a little program over one or two hashes. A header decodes the first hash's
// desc (dim, cell size, capacity hint, allocator) and an allocation-failure schedule; each
// following byte picks an operation (low 4 bits) and the hash it acts on (bit 4), then decodes
// its arguments: insert (one, or a burst of jittered copies), move, remove, set, get, clear or
// visit_all, reserve, an allocation-failure schedule, radius / box / kNN / neighbour queries,
// pairs, cross pairs, and a meta op (create or destroy the second hash, recreate the first,
// NULL arguments). Reading past the end yields zeros, so every input is valid.
//
// A reference model keeps every live item (position, user value, filter bits, handle) and a
// ring of stale handles. Every status must be in the set hash.h allows for the arguments;
// failed calls must change nothing (count, validate, memory, a fingerprint of every item);
// after every op nb_hash_validate() passes, the count and every item (nb_hash_get) match the
// model, and the bytes held match the checking allocator. Queries are checked exactly against
// the brute-force oracle (tests/nb_oracle.h) on the model: sets of hits, kNN order (dist2, then
// slot), pairs with the lower slot first, truncated buffers (the full count and a prefix of the
// full order), visitors (same order, early stop) and repeated calls (same order).
// NB_FUZZ_TRACE=1 prints the decoded calls.
#define _POSIX_C_SOURCE 200809L

#include <nearby/hash.h>

#include "nb_fuzz.h"
#include "nb_oracle.h"

enum {
    HF_MAX = 200,  ///< items per hash the fuzzer allows
    HF_STALE = 64, ///< stale handles remembered per hash (a ring)
    HF_BURST = 48, ///< items per burst insert
    HF_OPS = 1500, ///< operations per input
};
#define HF_WORK_BUDGET 4.0e7 ///< oracle work per input (pair checks cost n^2)

typedef struct hfModel {
    nbHash *h;     ///< NULL: this hash does not exist
    bool checking; ///< uses the checking allocator (its bytes are accounted)
    int dim;
    double cell;
    int64_t reserved; ///< inserts and moves up to this many items must not allocate; -1: none
    int32_t n;
    double pos[HF_MAX * 3];
    uint64_t user[HF_MAX];
    uint32_t cat[HF_MAX], mask[HF_MAX];
    nbHandle hd[HF_MAX];
    nbHandle stale[HF_STALE];
    int32_t nstale, stale_next;
} hfModel;

static hfModel hf[2];
static double hf_work;
static uint64_t hf_user_seq;

// ---- small helpers ----

static double *hf_vec(int dim)
{
    double *v = (double *)malloc((size_t)dim * sizeof(double)); // exact size: ASan sees overreads
    if (v == NULL) abort();
    return v;
}

static void *hf_buf(size_t n, size_t size)
{
    void *p = malloc(n ? n * size : 1);
    if (p == NULL) abort();
    return p;
}

static double hf_cell_size(const nbHash *h)
{
    nbHashInfo info;
    return nb_hash_info(h, &info) == NB_OK ? info.cell_size : 0.0;
}

static bool hf_finite(const double *p, int dim)
{
    for (int d = 0; d < dim; d++)
        if (!isfinite(p[d])) return false;
    return true;
}

/// The status insert / move must give for a position: the cell math of src/cell.h, which
/// hash.h describes as "a cell beyond +-2^62".
static nbStatus hf_pos_status(const hfModel *m, const double *p)
{
    if (!hf_finite(p, m->dim)) return NB_ERR_NOT_FINITE;
    for (int d = 0; d < m->dim; d++)
        if (!(fabs(floor(p[d] / m->cell)) < 0x1p62)) return NB_ERR_OUT_OF_RANGE;
    return NB_OK;
}

static bool hf_same_cell(const hfModel *m, const double *a, const double *b)
{
    for (int d = 0; d < m->dim; d++)
        if (floor(a[d] / m->cell) != floor(b[d] / m->cell)) return false;
    return true;
}

static int64_t hf_slot(nbHandle h)
{
    return (int64_t)(h.bits & 0xFFFFFFFFu) - 1;
}

static void hf_log_vec(const char *what, const double *p, int dim)
{
    if (nbf_trace <= 0) return;
    nbf_log(" %s=(", what);
    for (int d = 0; d < dim; d++) nbf_log(d ? ", %a" : "%a", p[d]);
    nbf_log(")");
}

static void hf_push_stale(hfModel *m, nbHandle h)
{
    m->stale[m->stale_next] = h;
    m->stale_next = (m->stale_next + 1) % HF_STALE;
    if (m->nstale < HF_STALE) m->nstale++;
}

static int32_t hf_find_live(const hfModel *m, uint64_t bits)
{
    for (int32_t i = 0; i < m->n; i++)
        if (m->hd[i].bits == bits) return i;
    return -1;
}

// A sorted handle -> item index for checking query results.
typedef struct hfKey {
    uint64_t bits;
    int32_t idx;
} hfKey;
static hfKey hf_keys[HF_MAX];
static int32_t hf_nkeys;

static int hf_cmp_key(const void *a, const void *b)
{
    const uint64_t x = ((const hfKey *)a)->bits, y = ((const hfKey *)b)->bits;
    return x < y ? -1 : x > y;
}

static void hf_index(const hfModel *m)
{
    for (int32_t i = 0; i < m->n; i++) {
        hf_keys[i].bits = m->hd[i].bits;
        hf_keys[i].idx = i;
    }
    hf_nkeys = m->n;
    qsort(hf_keys, (size_t)hf_nkeys, sizeof(hfKey), hf_cmp_key);
}

/// The model index of a hit; fails unless it names a live item with its user value.
static int32_t hf_hit_idx(const hfModel *m, nbHit hit)
{
    hfKey k = {hit.handle.bits, 0};
    const hfKey *f =
        (const hfKey *)bsearch(&k, hf_keys, (size_t)hf_nkeys, sizeof(hfKey), hf_cmp_key);
    NBF_CHECK(f != NULL, "result names handle 0x%llx, which is not a live item",
              (unsigned long long)hit.handle.bits);
    NBF_CHECK(hit.user == m->user[f->idx], "result for item %d has user %llu, expected %llu",
              (int)f->idx, (unsigned long long)hit.user, (unsigned long long)m->user[f->idx]);
    return f->idx;
}

static int hf_cmp_i32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

static nboSet hf_set(const hfModel *m)
{
    nboSet s = {(double *)(uintptr_t)m->pos,   m->n, m->dim, 3, (uint32_t *)(uintptr_t)m->cat,
                (uint32_t *)(uintptr_t)m->mask};
    return s;
}

// ---- fingerprint and whole-state checks ----

typedef struct hfFp {
    const nbHash *h;
    int dim;
    uint64_t f;
    int32_t n;
} hfFp;

static bool hf_fp_visit(nbHit hit, void *user)
{
    hfFp *x = (hfFp *)user;
    double pos[3] = {0, 0, 0};
    uint64_t u = 0;
    nbFilter f = {0, 0};
    nbf_expect(nb_hash_get(x->h, hit.handle, pos, &u, &f), NBF_BIT(NB_OK), "get in visit_all");
    NBF_CHECK(u == hit.user, "visit_all user %llu, get says %llu", (unsigned long long)hit.user,
              (unsigned long long)u);
    uint64_t bits[3] = {0, 0, 0};
    memcpy(bits, pos, (size_t)x->dim * sizeof(double));
    x->f = x->f * 0x100000001B3u + hit.handle.bits;
    x->f = x->f * 0x100000001B3u + hit.user;
    x->f = x->f * 0x100000001B3u + (bits[0] ^ (bits[1] << 1) ^ (bits[2] << 2));
    x->f = x->f * 0x100000001B3u + (((uint64_t)f.category << 32) | f.mask);
    x->n++;
    return true;
}

/// Everything a failed call must leave as it was: count, memory, and every item in visit order.
static uint64_t hf_fingerprint(const hfModel *m)
{
    hfFp x = {m->h, m->dim, (uint64_t)nb_hash_count(m->h), 0};
    x.f ^= (uint64_t)nb_hash_memory_bytes(m->h) << 20;
    nbf_expect(nb_hash_visit_all(m->h, hf_fp_visit, &x), NBF_BIT(NB_OK), "visit_all");
    NBF_CHECK(x.n == nb_hash_count(m->h), "visit_all saw %d items, count is %d", (int)x.n,
              (int)nb_hash_count(m->h));
    return x.f;
}

/// After every op: validate, count, every item by get, the allocator's books.
static void hf_check_state(void)
{
    size_t held = 0;
    for (int w = 0; w < 2; w++) {
        const hfModel *m = &hf[w];
        if (m->h == NULL) continue;
        nbfMark mk = nbf_mark();
        nbf_expect(nb_hash_validate(m->h), NBF_BIT(NB_OK), "validate");
        NBF_CHECK(nb_hash_count(m->h) == m->n, "hash %d: count %d, model %d", w,
                  (int)nb_hash_count(m->h), (int)m->n);
        for (int32_t i = 0; i < m->n; i++) {
            double pos[3] = {1, 2, 3};
            uint64_t u = 0;
            nbFilter f = {0, 0};
            nbf_expect(nb_hash_get(m->h, m->hd[i], pos, &u, &f), NBF_BIT(NB_OK), "get (state)");
            NBF_CHECK(memcmp(pos, m->pos + 3 * i, (size_t)m->dim * sizeof(double)) == 0,
                      "hash %d item %d: get gives (%a, %a), model (%a, %a)", w, (int)i, pos[0],
                      pos[1], m->pos[3 * i], m->pos[3 * i + 1]);
            NBF_CHECK(u == m->user[i] && f.category == m->cat[i] && f.mask == m->mask[i],
                      "hash %d item %d: user / filter differ from the model", w, (int)i);
        }
        nbf_check_no_alloc(mk, "validate / count / get");
        if (m->checking) held += nb_hash_memory_bytes(m->h);
    }
    NBF_CHECK(held == nbf_heap.live_bytes, "the hashes report %zu bytes, the allocator holds %zu",
              held, nbf_heap.live_bytes);
}

// ---- decoders ----

static const double hf_bases[8] = {0.0, 0.0, 0.0, 1e6, -1e9 + 0.5, 0x1p40, 1e15, -0x1p52};

static double hf_coord(nbfReader *r, const hfModel *m, int d)
{
    const uint8_t k = nbf_u8(r);
    const double units[4] = {0.5, 1.0, 0.1, m->cell};
    switch (k & 7) {
    case 0:
    case 1:
    case 2: return hf_bases[(k >> 3) & 7] + (double)(int8_t)nbf_u8(r) * units[k >> 6];
    case 3: return nbf_special(nbf_u8(r));
    case 4: return nbf_raw(r);
    case 5: {
        const uint8_t i = nbf_u8(r), o = nbf_u8(r);
        const double c = m->n > 0 ? m->pos[3 * (i % m->n) + d] : 0.0;
        switch (o % 6) {
        case 0: return c;
        case 1: return c + m->cell;
        case 2: return c - m->cell;
        case 3: return nextafter(c, (double)INFINITY);
        case 4: return nextafter(c, -(double)INFINITY);
        default: return c + 0.5;
        }
    }
    case 6: {
        const double b = (double)(int8_t)nbf_u8(r) * m->cell;
        return (k >> 3) & 1 ? nextafter(b, (k >> 4) & 1 ? (double)INFINITY : -(double)INFINITY) : b;
    }
    default: {
        const uint8_t e = nbf_u8(r);
        if (e == 0) return -0.0;
        const double s = (k >> 3) & 1 ? -1.0 : 1.0;
        return s * ldexp(m->cell, 40 + e % 30) + (double)(int8_t)nbf_u8(r);
    }
    }
}

static void hf_pos(nbfReader *r, const hfModel *m, double *p)
{
    for (int d = 0; d < m->dim; d++) p[d] = hf_coord(r, m, d);
}

static double hf_radius(nbfReader *r, const hfModel *m)
{
    const uint8_t k = nbf_u8(r);
    const uint8_t a = nbf_u8(r);
    switch (k % 10) {
    case 0: return 0.0;
    case 1: return a * 0.5;
    case 2: return sqrt((double)a);
    case 3: return nbf_special(a);
    case 4: return nbf_raw(r);
    case 5: return m->cell * (a / 16.0);
    case 6: return -(a + 1) * 0.5;
    case 7: {
        if (m->n == 0) return 1.0;
        const int32_t i = a % m->n, j = nbf_u8(r) % m->n;
        const double d = sqrt(nbo_d2(m->pos + 3 * i, m->pos + 3 * j, m->dim));
        return (k >> 4) & 1 ? nextafter(d, (k >> 5) & 1 ? (double)INFINITY : 0.0) : d;
    }
    case 8: return m->cell * (double)(a % 4) + (a >> 2) * 0.125;
    default: return ldexp(m->cell, a % 80);
    }
}

static nbFilter hf_filter(nbfReader *r)
{
    const uint8_t k = nbf_u8(r);
    if (k < 96) return NB_FILTER_ALL;
    nbFilter f;
    if (k >= 240) {
        f.category = k & 1 ? 0xFFFFFFFFu : 0u;
        f.mask = k & 2 ? 0xFFFFFFFFu : (uint32_t)nbf_u8(r);
        return f;
    }
    const uint8_t b = nbf_u8(r);
    f.category = b & 15;
    f.mask = (uint32_t)(b >> 4);
    return f;
}

/// A handle for hash w: a live item, a stale one, one of the other hash, null, or forged.
static nbHandle hf_handle(nbfReader *r, int w)
{
    const hfModel *m = &hf[w], *o = &hf[1 - w];
    const uint8_t k = nbf_u8(r), a = nbf_u8(r);
    nbHandle h = NB_HANDLE_NULL;
    switch (k % 10) {
    case 4:
        if (m->nstale > 0) return m->stale[a % m->nstale];
        break;
    case 5:
        if (o->n > 0) return o->hd[a % o->n];
        if (o->nstale > 0) return o->stale[a % o->nstale];
        break;
    case 6: return h;
    case 7:
    case 8: {
        h = m->n > 0 ? m->hd[a % m->n] : (nbHandle){(uint64_t)(k + 1u) << 48 | 1u};
        const uint8_t how = nbf_u8(r);
        switch (how % 6) {
        case 0: h.bits ^= (uint64_t)(1u + how / 6u) << 48; break; // another tag
        case 1: h.bits += (uint64_t)1 << 32; break;               // another generation
        case 2: h.bits = (h.bits & ~(uint64_t)0xFFFFFFFFu) | (how + 1u); break; // another slot
        case 3: h.bits &= ~(uint64_t)0xFFFFFFFFu; break;                        // slot "0"
        case 4: {                                                               // random bits
            const uint64_t hi = nbf_u16(r), mid = nbf_u16(r);
            h.bits = hi << 48 | mid << 16 | nbf_u8(r);
            break;
        }
        default: h.bits = 0xFFFFFFFFFFFFFFFFu; break;
        }
        return h;
    }
    default:
        if (m->n > 0) return m->hd[a % m->n];
        break;
    }
    return h;
}

static uint64_t hf_user(nbfReader *r)
{
    const uint8_t k = nbf_u8(r);
    if (k < 200) return hf_user_seq++;
    if (k < 240) return k; // duplicates
    return k & 1 ? UINT64_MAX : (uint64_t)nbf_u16(r) << 48;
}

// ---- mutating operations ----

typedef struct hfBefore {
    uint64_t fp;
    size_t bytes;
    size_t heap_bytes;
    int32_t count;
} hfBefore;

static hfBefore hf_before(const hfModel *m)
{
    hfBefore b = {hf_fingerprint(m), nb_hash_memory_bytes(m->h), nbf_heap.live_bytes,
                  nb_hash_count(m->h)};
    return b;
}

static void hf_unchanged(const hfModel *m, hfBefore b, const char *what)
{
    NBF_CHECK(nb_hash_count(m->h) == b.count, "failed %s changed the count", what);
    nbf_expect(nb_hash_validate(m->h), NBF_BIT(NB_OK), "validate after a failed call");
    NBF_CHECK(nb_hash_memory_bytes(m->h) == b.bytes, "failed %s changed memory_bytes %zu -> %zu",
              what, b.bytes, nb_hash_memory_bytes(m->h));
    NBF_CHECK(nbf_heap.live_bytes == b.heap_bytes, "failed %s changed the allocator's bytes", what);
    NBF_CHECK(hf_fingerprint(m) == b.fp, "failed %s changed the items", what);
}

static void hf_insert_at(int w, const double *p, uint64_t user, nbFilter f, int nullarg)
{
    hfModel *m = &hf[w];
    nbf_op = "insert";
    double *pv = hf_vec(m->dim);
    memcpy(pv, p, (size_t)m->dim * sizeof(double));
    const hfBefore b = hf_before(m);
    nbHandle out = {0xDEADu};
    const nbfMark mk = nbf_mark();
    const nbStatus st =
        nb_hash_insert(m->h, nullarg == 1 ? NULL : pv, user, f, nullarg == 2 ? NULL : &out);
    nbf_log("#%d hash%d insert", nbf_step, w);
    hf_log_vec("pos", p, m->dim);
    nbf_log(" user=%llu filter=%x/%x -> %s 0x%llx\n", (unsigned long long)user, f.category, f.mask,
            nb_status_str(st), (unsigned long long)out.bits);
    free(pv);
    unsigned allowed;
    if (nullarg)
        allowed = NBF_BIT(NB_ERR_NULL_ARG);
    else {
        const nbStatus ps = hf_pos_status(m, p);
        allowed = ps != NB_OK
                      ? NBF_BIT(ps)
                      : NBF_BIT(NB_OK) | (nbf_heap.failed ? NBF_BIT(NB_ERR_OUT_OF_MEMORY) : 0u);
    }
    nbf_expect(st, allowed, "nb_hash_insert");
    if (st != NB_OK) {
        if (nullarg != 2)
            NBF_CHECK(out.bits == 0, "failed insert left *out = 0x%llx",
                      (unsigned long long)out.bits);
        if (st == NB_ERR_NULL_ARG || st == NB_ERR_NOT_FINITE || st == NB_ERR_OUT_OF_RANGE)
            nbf_check_no_alloc(mk, "a refused insert");
        hf_unchanged(m, b, "insert");
        return;
    }
    // hash.h: inserting until the hash holds what was reserved allocates nothing, however the
    // items crowd (reserve-crowd-insert-allocates.bin: it once set aside too little).
    if (m->n + 1 <= m->reserved) nbf_check_no_alloc(mk, "insert within reserve");
    NBF_CHECK(out.bits != 0 && hf_slot(out) >= 0, "insert gave handle 0x%llx",
              (unsigned long long)out.bits);
    NBF_CHECK(hf_find_live(m, out.bits) < 0, "insert reissued a live handle");
    for (int32_t s = 0; s < m->nstale; s++)
        NBF_CHECK(m->stale[s].bits != out.bits, "insert reissued stale handle 0x%llx",
                  (unsigned long long)out.bits);
    const hfModel *o = &hf[1 - w];
    for (int32_t i = 0; i < o->n; i++)
        NBF_CHECK(o->hd[i].bits != out.bits, "insert gave a handle of the other hash");
    const int32_t i = m->n++;
    memset(m->pos + 3 * i, 0, 3 * sizeof(double));
    memcpy(m->pos + 3 * i, p, (size_t)m->dim * sizeof(double));
    m->user[i] = user;
    m->cat[i] = f.category;
    m->mask[i] = f.mask;
    m->hd[i] = out;
}

static void op_insert(nbfReader *r, int w)
{
    hfModel *m = &hf[w];
    double p[3] = {0, 0, 0};
    hf_pos(r, m, p);
    const uint64_t user = hf_user(r);
    const nbFilter f = hf_filter(r);
    const uint8_t v = nbf_u8(r);
    if (m->n >= HF_MAX) return;
    hf_insert_at(w, p, user, f, v >= 250 ? 1 + (v & 1) : 0);
}

static uint64_t hf_mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static void op_burst(nbfReader *r, int w)
{
    hfModel *m = &hf[w];
    double base[3] = {0, 0, 0};
    hf_pos(r, m, base);
    const uint8_t cnt = nbf_u8(r), how = nbf_u8(r);
    uint64_t seed = nbf_u8(r);
    const nbFilter f = hf_filter(r);
    const double steps[4] = {0.0, 0.5 * m->cell, m->cell, 0.25};
    const double step = steps[how & 3];
    const int n = 1 + cnt % HF_BURST;
    for (int t = 0; t < n && m->n < HF_MAX; t++) {
        double p[3];
        for (int d = 0; d < m->dim; d++) {
            const int64_t j = (int64_t)(hf_mix(&seed) % 5) - 2;
            p[d] = base[d] + (double)j * step;
        }
        nbFilter ft = f;
        if (how & 4) {
            const uint64_t z = hf_mix(&seed);
            ft.category = (uint32_t)(z & 7);
            ft.mask = (uint32_t)((z >> 3) & 7);
        }
        hf_insert_at(w, p, hf_user_seq++, ft, 0);
    }
}

// Where a move of an item at `from` goes, by `mode`.
static void hf_move_target(nbfReader *r, const hfModel *m, uint8_t mode, const double *from,
                           double *p)
{
    switch (mode % 7) {
    case 0: // a small step
        for (int d = 0; d < m->dim; d++)
            p[d] = from[d] + (double)(int8_t)nbf_u8(r) / 16.0 * m->cell;
        break;
    case 1: memcpy(p, from, 3 * sizeof(double)); break; // the same spot
    case 2:                                             // a nudge by one ulp
        for (int d = 0; d < m->dim; d++)
            p[d] = nextafter(from[d], (mode >> 3) & 1 ? (double)INFINITY : -(double)INFINITY);
        break;
    case 3: { // across a huge distance
        const uint8_t e = nbf_u8(r);
        for (int d = 0; d < m->dim; d++)
            p[d] = from[d] + ((mode >> (3 + d)) & 1 ? -1.0 : 1.0) * ldexp(m->cell, 20 + e % 50);
        break;
    }
    case 4: // onto another item
        if (m->n > 0) memcpy(p, m->pos + 3 * (nbf_u8(r) % m->n), 3 * sizeof(double));
        break;
    default: hf_pos(r, m, p); break; // a teleport anywhere, bad coordinates included
    }
}

static void op_move(nbfReader *r, int w)
{
    hfModel *m = &hf[w];
    nbf_op = "move";
    const nbHandle h = hf_handle(r, w);
    const int32_t i = hf_find_live(m, h.bits);
    const uint8_t mode = nbf_u8(r);
    double p[3] = {0, 0, 0}, from[3] = {0, 0, 0};
    if (i >= 0) memcpy(from, m->pos + 3 * i, 3 * sizeof(double));
    hf_move_target(r, m, mode, from, p);
    const bool nullpos = mode >= 250;
    double *pv = hf_vec(m->dim);
    memcpy(pv, p, (size_t)m->dim * sizeof(double));
    const hfBefore b = hf_before(m);
    const nbfMark mk = nbf_mark();
    const nbStatus st = nb_hash_move(m->h, h, nullpos ? NULL : pv);
    nbf_log("#%d hash%d move 0x%llx (item %d)", nbf_step, w, (unsigned long long)h.bits, (int)i);
    hf_log_vec("pos", p, m->dim);
    nbf_log(" -> %s\n", nb_status_str(st));
    free(pv);
    unsigned allowed;
    const nbStatus ps = hf_pos_status(m, p);
    if (nullpos)
        allowed = NBF_BIT(NB_ERR_NULL_ARG);
    else if (i < 0)
        allowed = NBF_BIT(NB_ERR_BAD_HANDLE) | (ps != NB_OK ? NBF_BIT(ps) : 0u);
    else if (ps != NB_OK)
        allowed = NBF_BIT(ps);
    else
        allowed = NBF_BIT(NB_OK) | (nbf_heap.failed ? NBF_BIT(NB_ERR_OUT_OF_MEMORY) : 0u);
    nbf_expect(st, allowed, "nb_hash_move");
    if (st != NB_OK) {
        if (st != NB_ERR_OUT_OF_MEMORY) nbf_check_no_alloc(mk, "a refused move");
        hf_unchanged(m, b, "move");
        return;
    }
    // A move within its cell never allocates; other moves may, when no freed block fits
    // (hash.h: reserve covers inserts; moves reach a steady state, tested in test_hash.c).
    if (hf_same_cell(m, from, p)) nbf_check_no_alloc(mk, "a move within its cell");
    memcpy(m->pos + 3 * i, p, (size_t)m->dim * sizeof(double));
}

// nb_hash_move_many over 1 to 8 entries (handles of any kind, repeats, targets as op_move's):
// the first bad entry's status and nothing moved, or every move made, or, when making room
// fails, the moves before the failing one made and the rest not.
static void op_move_many(nbfReader *r, int w)
{
    hfModel *m = &hf[w];
    nbf_op = "move_many";
    enum { K = 8 };
    const int32_t k = 1 + nbf_u8(r) % K;
    nbHandle hs[K];
    int32_t at[K];
    double p[K][3];
    double *pv = hf_vec(k * m->dim);
    nbStatus first = NB_OK;
    for (int32_t t = 0; t < k; t++) {
        hs[t] = hf_handle(r, w);
        at[t] = hf_find_live(m, hs[t].bits);
        double from[3] = {0, 0, 0};
        if (at[t] >= 0) memcpy(from, m->pos + 3 * at[t], 3 * sizeof(double));
        memset(p[t], 0, sizeof p[t]);
        hf_move_target(r, m, nbf_u8(r), from, p[t]);
        memcpy(pv + (size_t)t * (size_t)m->dim, p[t], (size_t)m->dim * sizeof(double));
        const nbStatus es = at[t] < 0 ? NB_ERR_BAD_HANDLE : hf_pos_status(m, p[t]);
        if (first == NB_OK) first = es;
    }
    const hfBefore b = hf_before(m);
    const nbfMark mk = nbf_mark();
    int32_t moved = -1;
    const nbStatus st = nb_hash_move_many(m->h, hs, pv, k, &moved);
    nbf_log("#%d hash%d move_many %d -> %s (%d moved)\n", nbf_step, w, (int)k, nb_status_str(st),
            (int)moved);
    free(pv);
    const unsigned allowed =
        first != NB_OK ? NBF_BIT(first)
                       : NBF_BIT(NB_OK) | (nbf_heap.failed ? NBF_BIT(NB_ERR_OUT_OF_MEMORY) : 0u);
    nbf_expect(st, allowed, "nb_hash_move_many");
    if (st != NB_OK && st != NB_ERR_OUT_OF_MEMORY) {
        NBF_CHECK(moved == 0, "a refused batch reports moves");
        nbf_check_no_alloc(mk, "a refused batch");
        hf_unchanged(m, b, "move_many");
        return;
    }
    NBF_CHECK(moved >= 0 && moved <= k && (st != NB_OK || moved == k), "moved out of range");
    for (int32_t t = 0; t < moved; t++) memcpy(m->pos + 3 * at[t], p[t], 3 * sizeof(double));
}

static void hf_forget(hfModel *m, int32_t i)
{
    hf_push_stale(m, m->hd[i]);
    const int32_t last = --m->n;
    if (i == last) return;
    memcpy(m->pos + 3 * i, m->pos + 3 * last, 3 * sizeof(double));
    m->user[i] = m->user[last];
    m->cat[i] = m->cat[last];
    m->mask[i] = m->mask[last];
    m->hd[i] = m->hd[last];
}

static void op_remove(nbfReader *r, int w)
{
    hfModel *m = &hf[w];
    nbf_op = "remove";
    const nbHandle h = hf_handle(r, w);
    const int32_t i = hf_find_live(m, h.bits);
    const hfBefore b = hf_before(m);
    const nbfMark mk = nbf_mark();
    const nbStatus st = nb_hash_remove(m->h, h);
    nbf_log("#%d hash%d remove 0x%llx (item %d) -> %s\n", nbf_step, w, (unsigned long long)h.bits,
            (int)i, nb_status_str(st));
    nbf_check_no_alloc(mk, "remove");
    nbf_expect(st, NBF_BIT(i >= 0 ? NB_OK : NB_ERR_BAD_HANDLE), "nb_hash_remove");
    if (st != NB_OK) {
        hf_unchanged(m, b, "remove");
        return;
    }
    hf_forget(m, i);
}

static void op_set(nbfReader *r, int w)
{
    hfModel *m = &hf[w];
    nbf_op = "set";
    const nbHandle h = hf_handle(r, w);
    const uint64_t user = hf_user(r);
    const nbFilter f = hf_filter(r);
    const int32_t i = hf_find_live(m, h.bits);
    const hfBefore b = hf_before(m);
    const nbfMark mk = nbf_mark();
    const nbStatus st = nb_hash_set(m->h, h, user, f);
    nbf_log("#%d hash%d set 0x%llx (item %d) user=%llu filter=%x/%x -> %s\n", nbf_step, w,
            (unsigned long long)h.bits, (int)i, (unsigned long long)user, f.category, f.mask,
            nb_status_str(st));
    nbf_check_no_alloc(mk, "set");
    nbf_expect(st, NBF_BIT(i >= 0 ? NB_OK : NB_ERR_BAD_HANDLE), "nb_hash_set");
    if (st != NB_OK) {
        hf_unchanged(m, b, "set");
        return;
    }
    m->user[i] = user;
    m->cat[i] = f.category;
    m->mask[i] = f.mask;
}

static void op_get(nbfReader *r, int w)
{
    hfModel *m = &hf[w];
    nbf_op = "get";
    const nbHandle h = hf_handle(r, w);
    const uint8_t which = nbf_u8(r);
    const int32_t i = hf_find_live(m, h.bits);
    double *pos = hf_vec(m->dim);
    for (int d = 0; d < m->dim; d++) pos[d] = 1234.5;
    uint64_t user = 77;
    nbFilter f = {0x5A5A5A5Au, 0xA5A5A5A5u};
    const nbfMark mk = nbf_mark();
    const nbStatus st = nb_hash_get(m->h, h, which & 1 ? pos : NULL, which & 2 ? &user : NULL,
                                    which & 4 ? &f : NULL);
    nbf_log("#%d hash%d get 0x%llx (item %d) outputs %d -> %s\n", nbf_step, w,
            (unsigned long long)h.bits, (int)i, which & 7, nb_status_str(st));
    nbf_check_no_alloc(mk, "get");
    nbf_expect(st, NBF_BIT(i >= 0 ? NB_OK : NB_ERR_BAD_HANDLE), "nb_hash_get");
    if (st != NB_OK) {
        for (int d = 0; d < m->dim; d++)
            NBF_CHECK(pos[d] == 1234.5, "failed get wrote its position output");
        NBF_CHECK(user == 77 && f.category == 0x5A5A5A5Au && f.mask == 0xA5A5A5A5u,
                  "failed get wrote its outputs");
    } else {
        if (which & 1)
            NBF_CHECK(memcmp(pos, m->pos + 3 * i, (size_t)m->dim * sizeof(double)) == 0,
                      "get position differs from the model");
        if (which & 2) NBF_CHECK(user == m->user[i], "get user differs");
        if (which & 4)
            NBF_CHECK(f.category == m->cat[i] && f.mask == m->mask[i], "get filter differs");
    }
    free(pos);
}

typedef struct hfHits {
    nbHit *seq;
    int32_t n, cap, stop_after; ///< stop_after 0: never stop
} hfHits;

static bool hf_on_hit(nbHit hit, void *user)
{
    hfHits *v = (hfHits *)user;
    NBF_CHECK(v->n < v->cap, "visitor called more than %d times", (int)v->cap);
    v->seq[v->n++] = hit;
    return v->stop_after == 0 || v->n < v->stop_after;
}

static void op_clear_or_visit_all(nbfReader *r, int w)
{
    hfModel *m = &hf[w];
    const uint8_t k = nbf_u8(r);
    if (k % 4 == 0) {
        nbf_op = "clear";
        const nbfMark mk = nbf_mark();
        const size_t bytes = nb_hash_memory_bytes(m->h);
        nb_hash_clear(m->h);
        nbf_log("#%d hash%d clear (%d items)\n", nbf_step, w, (int)m->n);
        nbf_check_no_alloc(mk, "clear");
        NBF_CHECK(nb_hash_memory_bytes(m->h) == bytes, "clear changed memory_bytes");
        while (m->n > 0) hf_forget(m, m->n - 1);
        return;
    }
    nbf_op = "visit_all";
    hf_index(m);
    hfHits v = {(nbHit *)hf_buf((size_t)m->n + 1, sizeof(nbHit)), 0, m->n + 1,
                k % 4 == 1 ? nbf_u8(r) : 0};
    const nbfMark mk = nbf_mark();
    const nbStatus st = nb_hash_visit_all(m->h, hf_on_hit, &v);
    nbf_log("#%d hash%d visit_all stop=%d -> %s, %d visits\n", nbf_step, w, (int)v.stop_after,
            nb_status_str(st), (int)v.n);
    nbf_check_no_alloc(mk, "visit_all");
    nbf_expect(st, NBF_BIT(NB_OK), "nb_hash_visit_all");
    const int32_t want = v.stop_after > 0 && v.stop_after < m->n ? v.stop_after : m->n;
    NBF_CHECK(v.n == want, "visit_all made %d calls, expected %d", (int)v.n, (int)want);
    bool *seen = (bool *)calloc((size_t)m->n + 1, 1);
    if (seen == NULL) abort();
    for (int32_t t = 0; t < v.n; t++) {
        const int32_t i = hf_hit_idx(m, v.seq[t]);
        NBF_CHECK(!seen[i], "visit_all visited item %d twice", (int)i);
        seen[i] = true;
    }
    free(seen);
    free(v.seq);
}

static void op_reserve(nbfReader *r, int w)
{
    hfModel *m = &hf[w];
    nbf_op = "reserve";
    const uint8_t k = nbf_u8(r), a = nbf_u8(r);
    int32_t items;
    switch (k % 8) {
    case 0: items = a; break;
    case 1: items = -1 - a; break;
    case 2: items = m->checking ? INT32_C(1) << 28 : 4096; break;
    case 3: items = (INT32_C(1) << 28) + 1 + a; break;
    case 4: items = INT32_MAX; break;
    case 5: items = m->n; break;
    case 6: items = 0; break;
    default: items = m->n + a % 64; break;
    }
    const hfBefore b = hf_before(m);
    const nbfMark mk = nbf_mark();
    const nbStatus st = nb_hash_reserve(m->h, items);
    nbf_log("#%d hash%d reserve %d -> %s\n", nbf_step, w, (int)items, nb_status_str(st));
    unsigned allowed;
    if (items < 0 || items > (INT32_C(1) << 28))
        allowed = NBF_BIT(NB_ERR_OUT_OF_RANGE);
    else
        allowed = NBF_BIT(NB_OK) | (nbf_heap.failed ? NBF_BIT(NB_ERR_OUT_OF_MEMORY) : 0u);
    nbf_expect(st, allowed, "nb_hash_reserve");
    if (st != NB_OK) {
        if (st == NB_ERR_OUT_OF_RANGE) nbf_check_no_alloc(mk, "a refused reserve");
        hf_unchanged(m, b, "reserve");
        return;
    }
    // A reserve is relative to the storage in use (4 positions an item beyond it), so a later
    // reserve may allocate again after inserts; what it promises is checked on the inserts.
    if (items > m->reserved || m->n == 0) m->reserved = items;
}

static void op_fail_schedule(nbfReader *r)
{
    nbf_op = "fail schedule";
    const uint8_t k = nbf_u8(r);
    nbf_fail_alloc_after(k & 0x7F, (k & 0x80) != 0);
    nbf_log("#%d fail allocation %d from now%s\n", nbf_step, k & 0x7F,
            k & 0x80 ? " and after" : "");
}

// ---- hit queries: radius, box, neighbours ----

enum { HF_RADIUS, HF_BOX, HF_NEIGH };

typedef struct hfQ {
    int kind;
    const double *c, *lo, *hi; ///< exact-size heap vectors
    double r;
    nbFilter f;
    nbHandle item;
} hfQ;

// The query's box as the hash reads it: its first dim axes.
static nbBox hf_box(const hfModel *m, const hfQ *q)
{
    nbBox b;
    memset(&b, 0, sizeof b);
    if (q->lo != NULL) memcpy(b.min, q->lo, (size_t)m->dim * sizeof(double));
    if (q->hi != NULL) memcpy(b.max, q->hi, (size_t)m->dim * sizeof(double));
    return b;
}

static nbStatus hf_q_call(const hfModel *m, const hfQ *q, nbHit *out, int32_t cap, int32_t *found)
{
    const nbBox box = hf_box(m, q);
    switch (q->kind) {
    case HF_RADIUS: return nb_hash_query_radius(m->h, q->c, q->r, q->f, out, cap, found);
    case HF_BOX: return nb_hash_query_box(m->h, &box, q->f, out, cap, found);
    default: return nb_hash_query_neighbors(m->h, q->item, q->r, q->f, out, cap, found);
    }
}

static nbStatus hf_q_visit(const hfModel *m, const hfQ *q, hfHits *v)
{
    const nbBox box = hf_box(m, q);
    switch (q->kind) {
    case HF_RADIUS: return nb_hash_visit_radius(m->h, q->c, q->r, q->f, hf_on_hit, v);
    case HF_BOX: return nb_hash_visit_box(m->h, &box, q->f, hf_on_hit, v);
    default: return nb_hash_visit_neighbors(m->h, q->item, q->r, q->f, hf_on_hit, v);
    }
}

static bool hf_same_hit(nbHit a, nbHit b)
{
    return a.handle.bits == b.handle.bits && a.user == b.user;
}

/// A query allocates nothing but the hash's kNN index, which far queries build once their walks
/// would have paid for it (hash.h, nb_hash_knn): its storage is kept, so a call that allocated
/// holds at least as many blocks and bytes (nb_hash_memory_bytes) after it as before (a rebuild
/// may replace a buffer: a free beside its allocation). The leak check after the run holds it
/// to its blocks.
static void hf_check_query_alloc(const hfModel *m, nbfMark mk, size_t bytes, const char *what)
{
    if (nbf_heap.calls == mk.calls && nbf_heap.frees == mk.frees) return;
    NBF_CHECK(nbf_heap.calls - mk.calls >= nbf_heap.frees - mk.frees &&
                  nb_hash_memory_bytes(m->h) >= bytes,
              "%s allocated %llu and freed %llu blocks, and the hash holds %zu bytes (%zu before): "
              "a query may only build the kNN index",
              what, (unsigned long long)(nbf_heap.calls - mk.calls),
              (unsigned long long)(nbf_heap.frees - mk.frees), nb_hash_memory_bytes(m->h), bytes);
}

/// Runs a hit query: `bad` is the set of statuses the arguments call for (0: valid), `want`
/// the oracle's item indices when valid.
static void hf_hit_query(nbfReader *r, const hfModel *m, const hfQ *q, unsigned bad, int32_t *want,
                         int32_t wn)
{
    const uint8_t capmode = nbf_u8(r), cb = nbf_u8(r), stop = nbf_u8(r);
    nbHit *full = NULL;
    const size_t bytes = nb_hash_memory_bytes(m->h);
    nbfMark mk = nbf_mark();
    int32_t found = -1;
    if (bad == 0) {
        full = (nbHit *)hf_buf((size_t)wn + 1, sizeof(nbHit));
        nbf_expect(hf_q_call(m, q, full, wn + 1, &found), NBF_BIT(NB_OK), "query (roomy)");
        NBF_CHECK(found == wn, "query found %d, oracle %d", (int)found, (int)wn);
        int32_t *got = (int32_t *)hf_buf((size_t)wn + 1, sizeof(int32_t));
        for (int32_t t = 0; t < wn; t++) got[t] = hf_hit_idx(m, full[t]);
        qsort(got, (size_t)wn, sizeof(int32_t), hf_cmp_i32);
        qsort(want, (size_t)wn, sizeof(int32_t), hf_cmp_i32);
        for (int32_t t = 0; t < wn; t++)
            NBF_CHECK(got[t] == want[t], "query hit #%d is item %d, oracle says %d", (int)t,
                      (int)got[t], (int)want[t]);
        free(got);
        nbHit *again = (nbHit *)hf_buf((size_t)wn + 1, sizeof(nbHit));
        nbf_expect(hf_q_call(m, q, again, wn + 1, &found), NBF_BIT(NB_OK), "query (repeat)");
        for (int32_t t = 0; t < wn; t++)
            NBF_CHECK(hf_same_hit(full[t], again[t]), "a repeated query changed the order");
        free(again);
    }
    // the decoded capacity
    int32_t cap;
    bool nullout = false, nullfound = false;
    switch (capmode % 8) {
    case 0: cap = wn; break;
    case 1: cap = wn > 0 ? cb % wn : 0; break;
    case 2:
        cap = 0;
        nullout = true;
        break;
    case 3: cap = -1 - cb; break;
    case 4:
        cap = 1 + cb % 4;
        nullout = true;
        break;
    case 5:
        cap = wn + 1;
        nullfound = true;
        break;
    case 6: cap = wn + cb % 3; break;
    default: cap = wn > 1 ? wn - 1 : 0; break;
    }
    unsigned allowed;
    if ((nullout && cap > 0) || nullfound)
        allowed = NBF_BIT(NB_ERR_NULL_ARG);
    else if (bad != 0)
        allowed = bad | (cap < 0 ? NBF_BIT(NB_ERR_OUT_OF_RANGE) : 0u);
    else if (cap < 0)
        allowed = NBF_BIT(NB_ERR_OUT_OF_RANGE);
    else
        allowed = NBF_BIT(cap >= wn ? NB_OK : NB_ERR_BUFFER_TOO_SMALL);
    nbHit *out = nullout || cap <= 0 ? NULL : (nbHit *)hf_buf((size_t)cap, sizeof(nbHit));
    found = -1;
    const nbStatus st = hf_q_call(m, q, nullout ? NULL : out, cap, nullfound ? NULL : &found);
    nbf_log("    capacity %d%s%s -> %s found %d (oracle %d)\n", (int)cap,
            nullout ? " out=NULL" : "", nullfound ? " found=NULL" : "", nb_status_str(st),
            (int)found, bad ? -1 : (int)wn);
    nbf_expect(st, allowed, "query (capacity)");
    if (!nullfound) {
        if (st == NB_OK || st == NB_ERR_BUFFER_TOO_SMALL) {
            NBF_CHECK(found == wn, "query found %d, oracle %d", (int)found, (int)wn);
            const int32_t k = cap < wn ? cap : wn;
            for (int32_t t = 0; t < k; t++)
                NBF_CHECK(hf_same_hit(out[t], full[t]),
                          "capacity %d: hit #%d differs from the full order", (int)cap, (int)t);
        } else {
            NBF_CHECK(found == 0, "failed query left *found = %d", (int)found);
        }
    }
    free(out);
    // the visitor: the same order, stopping when told
    hfHits v = {(nbHit *)hf_buf((size_t)m->n + 1, sizeof(nbHit)), 0, m->n + 1, stop % 8};
    const nbStatus vs = hf_q_visit(m, q, &v);
    nbf_expect(vs, bad ? bad : NBF_BIT(NB_OK), "visit query");
    if (bad) {
        NBF_CHECK(v.n == 0, "a failed visit called the visitor %d times", (int)v.n);
    } else {
        const int32_t k = v.stop_after > 0 && v.stop_after < wn ? v.stop_after : wn;
        NBF_CHECK(v.n == k, "visit made %d calls, expected %d", (int)v.n, (int)k);
        for (int32_t t = 0; t < k; t++)
            NBF_CHECK(hf_same_hit(v.seq[t], full[t]), "visit #%d differs from the buffer order",
                      (int)t);
    }
    free(v.seq);
    hf_check_query_alloc(m, mk, bytes, "a query");
    free(full);
}

static void hf_center(nbfReader *r, const hfModel *m, double *c)
{
    const uint8_t k = nbf_u8(r);
    if (k < 128 && m->n > 0) {
        memcpy(c, m->pos + 3 * (k % m->n), 3 * sizeof(double));
        if (k & 64)
            for (int d = 0; d < m->dim; d++) c[d] += (double)(int8_t)nbf_u8(r) / 8.0;
        return;
    }
    hf_pos(r, m, c);
}

static void op_radius(nbfReader *r, int w)
{
    const hfModel *m = &hf[w];
    nbf_op = "radius";
    double c[3] = {0, 0, 0};
    hf_center(r, m, c);
    const double rad = hf_radius(r, m);
    const nbFilter f = hf_filter(r);
    double *cv = hf_vec(m->dim);
    memcpy(cv, c, (size_t)m->dim * sizeof(double));
    hfQ q = {HF_RADIUS, cv, NULL, NULL, rad, f, NB_HANDLE_NULL};
    unsigned bad = 0;
    if (!hf_finite(c, m->dim) || !isfinite(rad))
        bad = NBF_BIT(NB_ERR_NOT_FINITE);
    else if (rad < 0.0)
        bad = NBF_BIT(NB_ERR_OUT_OF_RANGE);
    nbf_log("#%d hash%d radius", nbf_step, w);
    hf_log_vec("center", c, m->dim);
    nbf_log(" r=%a filter=%x/%x\n", rad, f.category, f.mask);
    int32_t wn = 0;
    nboSet s = hf_set(m);
    int32_t *want =
        bad ? (int32_t *)hf_buf(1, sizeof(int32_t)) : nbo_radius_filtered(&s, c, rad, f, &wn);
    hf_index(m);
    hf_hit_query(r, m, &q, bad, want, wn);
    free(want);
    free(cv);
}

static void op_box(nbfReader *r, int w)
{
    const hfModel *m = &hf[w];
    nbf_op = "box";
    double c[3] = {0, 0, 0}, lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    hf_center(r, m, c);
    const uint8_t k = nbf_u8(r);
    for (int d = 0; d < m->dim; d++) {
        const uint8_t e = nbf_u8(r);
        switch (k % 6) {
        case 0:
        case 1: // a box around the centre, its sides on lattice values
            lo[d] = c[d] - (e & 15) * 0.5 * m->cell;
            hi[d] = c[d] + (e >> 4) * 0.5 * m->cell;
            break;
        case 2:
            lo[d] = -(double)INFINITY;
            hi[d] = (e & 1) ? (double)INFINITY : c[d];
            break;
        case 3:
            lo[d] = c[d] + (e & 7);
            hi[d] = c[d] - (e >> 3);
            break; // often inverted
        case 4:
            lo[d] = nbf_special(e);
            hi[d] = nbf_special(nbf_u8(r));
            break;
        default: lo[d] = hi[d] = c[d]; break; // degenerate
        }
    }
    const nbFilter f = hf_filter(r);
    double *lv = hf_vec(m->dim), *hv = hf_vec(m->dim);
    memcpy(lv, lo, (size_t)m->dim * sizeof(double));
    memcpy(hv, hi, (size_t)m->dim * sizeof(double));
    hfQ q = {HF_BOX, NULL, lv, hv, 0.0, f, NB_HANDLE_NULL};
    unsigned bad = 0;
    for (int d = 0; d < m->dim; d++)
        if (isnan(lo[d]) || isnan(hi[d])) bad = NBF_BIT(NB_ERR_NOT_FINITE);
    nbf_log("#%d hash%d box", nbf_step, w);
    hf_log_vec("lo", lo, m->dim);
    hf_log_vec("hi", hi, m->dim);
    nbf_log(" filter=%x/%x\n", f.category, f.mask);
    int32_t wn = 0;
    nboSet s = hf_set(m);
    int32_t *want =
        bad ? (int32_t *)hf_buf(1, sizeof(int32_t)) : nbo_box_filtered(&s, lo, hi, f, &wn);
    hf_index(m);
    hf_hit_query(r, m, &q, bad, want, wn);
    free(want);
    free(lv);
    free(hv);
}

static void op_neighbors(nbfReader *r, int w)
{
    const hfModel *m = &hf[w];
    nbf_op = "neighbors";
    const nbHandle h = hf_handle(r, w);
    const double rad = hf_radius(r, m);
    const nbFilter f = hf_filter(r);
    const int32_t i = hf_find_live(m, h.bits);
    hfQ q = {HF_NEIGH, NULL, NULL, NULL, rad, f, h};
    unsigned bad = 0;
    if (!isfinite(rad))
        bad = NBF_BIT(NB_ERR_NOT_FINITE);
    else if (rad < 0.0)
        bad = NBF_BIT(NB_ERR_OUT_OF_RANGE);
    if (i < 0) bad = bad | NBF_BIT(NB_ERR_BAD_HANDLE); // the order of the checks is not specified
    nbf_log("#%d hash%d neighbors 0x%llx (item %d) r=%a filter=%x/%x\n", nbf_step, w,
            (unsigned long long)h.bits, (int)i, rad, f.category, f.mask);
    int32_t wn = 0;
    int32_t *want;
    if (bad) {
        want = (int32_t *)hf_buf(1, sizeof(int32_t));
    } else {
        nboSet s = hf_set(m);
        int32_t n = 0;
        want = nbo_radius_filtered(&s, m->pos + 3 * i, rad, f, &n);
        for (int32_t t = 0; t < n; t++)
            if (want[t] != i) want[wn++] = want[t];
    }
    hf_index(m);
    hf_hit_query(r, m, &q, bad, want, wn);
    free(want);
}

// ---- kNN ----

typedef struct hfKnn {
    double d2;
    int64_t slot;
    int32_t idx;
} hfKnn;

static int hf_cmp_knn(const void *a, const void *b)
{
    const hfKnn *x = (const hfKnn *)a, *y = (const hfKnn *)b;
    if (x->d2 != y->d2) return x->d2 < y->d2 ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static void op_knn(nbfReader *r, int w)
{
    const hfModel *m = &hf[w];
    nbf_op = "knn";
    double c[3] = {0, 0, 0};
    hf_center(r, m, c);
    const uint8_t km = nbf_u8(r), ka = nbf_u8(r);
    const nbFilter f = hf_filter(r);
    int32_t k;
    bool nullout = false;
    switch (km % 8) {
    case 0: k = 0; break;
    case 1: k = ka % 8; break;
    case 2: k = m->n + ka % 4; break;
    case 3: k = -1 - ka; break;
    case 4:
        k = 1 + ka % 3;
        nullout = true;
        break;
    case 5:
        k = 0;
        nullout = true;
        break;
    case 6: k = m->n > 0 ? ka % (m->n + 1) : 0; break;
    default: k = 1; break;
    }
    const bool nullfound = km >= 248;
    unsigned allowed;
    if ((nullout && k > 0) || nullfound)
        allowed = NBF_BIT(NB_ERR_NULL_ARG);
    else if (!hf_finite(c, m->dim))
        allowed = NBF_BIT(NB_ERR_NOT_FINITE);
    else if (k < 0)
        allowed = NBF_BIT(NB_ERR_OUT_OF_RANGE);
    else
        allowed = NBF_BIT(NB_OK);
    double *cv = hf_vec(m->dim);
    memcpy(cv, c, (size_t)m->dim * sizeof(double));
    nbHitNeighbor *out =
        nullout || k <= 0 ? NULL : (nbHitNeighbor *)hf_buf((size_t)k, sizeof(nbHitNeighbor));
    int32_t found = -1;
    const size_t bytes = nb_hash_memory_bytes(m->h);
    const nbfMark mk = nbf_mark();
    const nbStatus st =
        nb_hash_knn(m->h, cv, f, (double)INFINITY, out, k, nullfound ? NULL : &found);
    hf_check_query_alloc(m, mk, bytes, "knn");
    nbf_log("#%d hash%d knn", nbf_step, w);
    hf_log_vec("point", c, m->dim);
    nbf_log(" k=%d filter=%x/%x%s -> %s found %d\n", (int)k, f.category, f.mask,
            nullout ? " out=NULL" : "", nb_status_str(st), (int)found);
    nbf_expect(st, allowed, "nb_hash_knn");
    if (st != NB_OK) {
        if (!nullfound) NBF_CHECK(found == 0, "failed knn left *found = %d", (int)found);
    } else {
        hfKnn *all = (hfKnn *)hf_buf((size_t)m->n + 1, sizeof(hfKnn));
        int32_t np = 0;
        nboSet s = hf_set(m);
        for (int32_t i = 0; i < m->n; i++) {
            if (!nbo_filter_passes(&s, i, f)) continue;
            all[np].d2 = nbo_d2(c, m->pos + 3 * i, m->dim);
            all[np].slot = hf_slot(m->hd[i]);
            all[np].idx = i;
            np++;
        }
        qsort(all, (size_t)np, sizeof(hfKnn), hf_cmp_knn);
        const int32_t wn = k < np ? k : np;
        NBF_CHECK(found == wn, "knn found %d, oracle %d", (int)found, (int)wn);
        hf_index(m);
        for (int32_t t = 0; t < wn; t++) {
            const int32_t i = hf_hit_idx(m, out[t].hit);
            NBF_CHECK(i == all[t].idx && out[t].dist2 == all[t].d2,
                      "knn #%d: item %d dist2 %a, oracle item %d dist2 %a", (int)t, (int)i,
                      out[t].dist2, (int)all[t].idx, all[t].d2);
        }
        free(all);
    }
    free(out);
    free(cv);
}

// ---- pairs and cross pairs ----

typedef struct hfPairs {
    nbHitPair *seq;
    int64_t n, cap, stop_after;
} hfPairs;

static bool hf_on_pair(nbHit a, nbHit b, void *user)
{
    hfPairs *v = (hfPairs *)user;
    NBF_CHECK(v->n < v->cap, "pair visitor called more than %lld times", (long long)v->cap);
    v->seq[v->n].a = a;
    v->seq[v->n].b = b;
    v->n++;
    return v->stop_after == 0 || v->n < v->stop_after;
}

static bool hf_same_pair(const nbHitPair *x, const nbHitPair *y)
{
    return hf_same_hit(x->a, y->a) && hf_same_hit(x->b, y->b);
}

static void op_pairs(nbfReader *r, int w, bool cross)
{
    const hfModel *m = &hf[w];
    nbf_op = cross ? "cross pairs" : "pairs";
    const double rad = hf_radius(r, m);
    uint32_t ma = 0, mb = 0;
    if (cross) {
        const uint8_t a = nbf_u8(r), b = nbf_u8(r);
        ma = a >= 240 ? 0xFFFFFFFFu : a & 15;
        mb = b >= 240 ? 0xFFFFFFFFu : b & 15;
    }
    const uint8_t capmode = nbf_u8(r), cb = nbf_u8(r), stop = nbf_u8(r);
    nbf_log("#%d hash%d %s r=%a masks %x %x\n", nbf_step, w, nbf_op, rad, ma, mb);
    unsigned bad = 0;
    if (!isfinite(rad))
        bad = NBF_BIT(NB_ERR_NOT_FINITE);
    else if (rad < 0.0)
        bad = NBF_BIT(NB_ERR_OUT_OF_RANGE);
    if (bad == 0 && hf_work > HF_WORK_BUDGET) return;
    hf_work += (double)m->n * m->n;
    nbPair *want = NULL;
    int64_t wn = 0;
    if (bad == 0) {
        nboSet s = hf_set(m);
        if (!cross) {
            want = nbo_pairs(&s, rad, &wn);
        } else {
            nboPairList l = {NULL, 0, 0};
            for (int32_t i = 0; i < m->n; i++) {
                if (!(m->cat[i] & ma) || m->mask[i] == 0) continue;
                for (int32_t j = 0; j < m->n; j++)
                    if (j != i && (m->cat[j] & mb) && m->mask[j] != 0 &&
                        nbo_within(m->pos + 3 * i, m->pos + 3 * j, m->dim, rad))
                        nbo_pair_push(&l, i, j);
            }
            want = nbo_pair_finish(&l, &wn);
        }
        nbo_sort_pairs(want, wn);
    }
    hf_index(m);
    const nbfMark mk = nbf_mark();
    nbHitPair *full = NULL;
    int64_t found = -1, count = -1;
    if (bad == 0) {
        full = (nbHitPair *)hf_buf((size_t)wn + 1, sizeof(nbHitPair));
        const nbStatus st = cross ? nb_hash_cross_pairs(m->h, rad, ma, mb, full, wn + 1, &found)
                                  : nb_hash_pairs(m->h, rad, full, wn + 1, &found);
        nbf_log("    roomy -> %s found %lld (oracle %lld)\n", nb_status_str(st), (long long)found,
                (long long)wn);
        nbf_expect(st, NBF_BIT(NB_OK), "pairs (roomy)");
        NBF_CHECK(found == wn, "found %lld pairs, oracle %lld", (long long)found, (long long)wn);
        nbPair *got = (nbPair *)hf_buf((size_t)wn + 1, sizeof(nbPair));
        for (int64_t t = 0; t < wn; t++) {
            int32_t a = hf_hit_idx(m, full[t].a), b = hf_hit_idx(m, full[t].b);
            if (!cross) {
                NBF_CHECK(hf_slot(full[t].a.handle) < hf_slot(full[t].b.handle),
                          "pair #%lld: a's slot is not the lower", (long long)t);
                if (a > b) {
                    const int32_t x = a;
                    a = b;
                    b = x;
                }
            }
            got[t].i = a;
            got[t].j = b;
        }
        nbo_sort_pairs(got, wn);
        for (int64_t t = 0; t < wn; t++)
            NBF_CHECK(got[t].i == want[t].i && got[t].j == want[t].j,
                      "pair #%lld is (%d, %d), oracle (%d, %d)", (long long)t, (int)got[t].i,
                      (int)got[t].j, (int)want[t].i, (int)want[t].j);
        free(got);
    }
    // count
    const nbStatus cs = cross ? nb_hash_count_cross_pairs(m->h, rad, ma, mb, &count)
                              : nb_hash_count_pairs(m->h, rad, &count);
    nbf_expect(cs, bad ? bad : NBF_BIT(NB_OK), "count pairs");
    NBF_CHECK(count == (bad ? 0 : wn), "count %lld, expected %lld", (long long)count,
              (long long)(bad ? 0 : wn));
    // the decoded capacity
    int64_t cap;
    bool nullout = false;
    switch (capmode % 6) {
    case 0: cap = wn; break;
    case 1: cap = wn > 0 ? cb % wn : 0; break;
    case 2:
        cap = 0;
        nullout = true;
        break;
    case 3: cap = -1 - cb; break;
    case 4:
        cap = 1 + cb % 4;
        nullout = true;
        break;
    default: cap = wn > 1 ? wn - 1 : 0; break;
    }
    unsigned allowed;
    if (nullout && cap > 0)
        allowed = NBF_BIT(NB_ERR_NULL_ARG);
    else if (bad)
        allowed = bad | (cap < 0 ? NBF_BIT(NB_ERR_OUT_OF_RANGE) : 0u);
    else if (cap < 0)
        allowed = NBF_BIT(NB_ERR_OUT_OF_RANGE);
    else
        allowed = NBF_BIT(cap >= wn ? NB_OK : NB_ERR_BUFFER_TOO_SMALL);
    nbHitPair *out =
        nullout || cap <= 0 ? NULL : (nbHitPair *)hf_buf((size_t)cap, sizeof(nbHitPair));
    found = -1;
    const nbStatus st = cross ? nb_hash_cross_pairs(m->h, rad, ma, mb, out, cap, &found)
                              : nb_hash_pairs(m->h, rad, out, cap, &found);
    nbf_log("    capacity %lld%s -> %s found %lld\n", (long long)cap, nullout ? " out=NULL" : "",
            nb_status_str(st), (long long)found);
    nbf_expect(st, allowed, "pairs (capacity)");
    if (st == NB_OK || st == NB_ERR_BUFFER_TOO_SMALL) {
        NBF_CHECK(found == wn, "found %lld pairs, oracle %lld", (long long)found, (long long)wn);
        const int64_t k = cap < wn ? cap : wn;
        for (int64_t t = 0; t < k; t++)
            NBF_CHECK(hf_same_pair(&out[t], &full[t]),
                      "capacity %lld: pair #%lld differs from the full order", (long long)cap,
                      (long long)t);
    } else {
        NBF_CHECK(found == 0, "failed pairs left *found = %lld", (long long)found);
    }
    free(out);
    // the visitor
    hfPairs v = {(nbHitPair *)hf_buf((size_t)wn + 1, sizeof(nbHitPair)), 0, wn + 1, stop % 8};
    const nbStatus vs = cross ? nb_hash_visit_cross_pairs(m->h, rad, ma, mb, hf_on_pair, &v)
                              : nb_hash_visit_pairs(m->h, rad, hf_on_pair, &v);
    nbf_expect(vs, bad ? bad : NBF_BIT(NB_OK), "visit pairs");
    const int64_t k = bad ? 0 : v.stop_after > 0 && v.stop_after < wn ? v.stop_after : wn;
    NBF_CHECK(v.n == k, "pair visitor called %lld times, expected %lld", (long long)v.n,
              (long long)k);
    for (int64_t t = 0; t < k; t++)
        NBF_CHECK(hf_same_pair(&v.seq[t], &full[t]), "visited pair #%lld differs from the buffer",
                  (long long)t);
    free(v.seq);
    nbf_check_no_alloc(mk, "pairs");
    free(full);
    free(want);
}

// ---- create, destroy, NULL arguments ----

static void hf_destroy(int w)
{
    hfModel *m = &hf[w];
    if (m->h == NULL) return;
    nb_hash_destroy(m->h);
    m->h = NULL;
    for (int32_t i = 0; i < m->n; i++) hf_push_stale(m, m->hd[i]); // now foreign to any hash
    m->n = 0;
}

/// Decodes a desc and creates hash w with it; returns false when create failed (as checked).
static bool hf_create(nbfReader *r, int w)
{
    hfModel *m = &hf[w];
    nbf_op = "create";
    const uint8_t fl = nbf_u8(r);
    nbHashDesc desc;
    memset(&desc, 0, sizeof desc);
    const int32_t bad_dims[4] = {1, 4, -1, INT32_MIN};
    switch (fl & 3) {
    case 0: desc.dim = 0; break;
    case 1: desc.dim = 2; break;
    case 2: desc.dim = 3; break;
    default: desc.dim = bad_dims[nbf_u8(r) & 3]; break;
    }
    switch ((fl >> 2) & 7) {
    case 0: desc.cell_size = 1.0; break;
    case 1: desc.cell_size = (nbf_u8(r) + 1) * 0.125; break;
    case 2: desc.cell_size = nbf_special(nbf_u8(r)); break;
    case 3: desc.cell_size = nbf_raw(r); break;
    case 4: desc.cell_size = ldexp(1.0, -(nbf_u8(r) % 120)); break;
    case 5: desc.cell_size = ldexp(1.0, nbf_u8(r) % 70); break;
    case 6: desc.cell_size = -(double)nbf_u8(r); break;
    default: desc.cell_size = sqrt((double)nbf_u8(r) + 1.0) * 0.37; break;
    }
    const uint8_t ab = (fl & 0x80) ? nbf_u8(r) : 3;
    bool checking = ab % 4 == 3;
    switch ((fl >> 5) & 3) {
    case 0: desc.capacity_hint = 0; break;
    case 1: desc.capacity_hint = nbf_u8(r); break;
    case 2: desc.capacity_hint = -1 - nbf_u8(r); break;
    default: {
        const int32_t huge[4] = {INT32_C(1) << 20, INT32_C(1) << 28, INT32_MAX, 5000};
        desc.capacity_hint = checking ? huge[nbf_u8(r) & 3] : 4096;
        break;
    }
    }
    const nbAllocator al = nbf_allocator();
    nbAllocator half = al;
    if (ab % 4 == 1) half.free = NULL;
    if (ab % 4 == 2) half.alloc = NULL;
    desc.allocator = ab % 4 == 0 ? NULL : ab % 4 == 3 ? &al : &half;
    unsigned allowed;
    const int dim = desc.dim == 0 ? 2 : desc.dim;
    if (ab % 4 == 1 || ab % 4 == 2)
        allowed = NBF_BIT(NB_ERR_NULL_ARG);
    else if (!isfinite(desc.cell_size))
        allowed = NBF_BIT(NB_ERR_NOT_FINITE);
    else if (desc.cell_size <= 0.0 || desc.capacity_hint < 0 ||
             desc.capacity_hint > (INT32_C(1) << 28) || (dim != 2 && dim != 3))
        allowed = NBF_BIT(NB_ERR_OUT_OF_RANGE);
    else
        allowed = NBF_BIT(NB_OK);
    const size_t heap_before = nbf_heap.live_bytes;
    const nbfMark mk = nbf_mark();
    nbHash *h = (nbHash *)(uintptr_t)0x1;
    const nbStatus st = nb_hash_create(&desc, &h);
    nbf_log("#%d hash%d create dim=%d cell=%a hint=%d allocator=%d -> %s\n", nbf_step, w,
            (int)desc.dim, desc.cell_size, (int)desc.capacity_hint, ab % 4, nb_status_str(st));
    if (allowed == NBF_BIT(NB_OK) && nbf_heap.failed) allowed |= NBF_BIT(NB_ERR_OUT_OF_MEMORY);
    nbf_expect(st, allowed, "nb_hash_create");
    if (st != NB_OK) {
        NBF_CHECK(h == NULL, "failed create left *out = %p", (void *)h);
        NBF_CHECK(nbf_heap.live_bytes == heap_before, "failed create leaked %zu bytes",
                  nbf_heap.live_bytes - heap_before);
        if (!(allowed & NBF_BIT(NB_OK))) nbf_check_no_alloc(mk, "a refused create");
        return false;
    }
    m->h = h;
    m->checking = checking;
    m->dim = dim;
    m->cell = hf_cell_size(h); // the edge in use: the desc's, widened by the margin
    NBF_CHECK(m->cell >= desc.cell_size && m->cell <= desc.cell_size * (1.0 + 0x1p-20),
              "cell edge %a for cell_size %a", m->cell, desc.cell_size);
    m->reserved = desc.capacity_hint > 0 ? desc.capacity_hint : -1;
    m->n = 0;
    return true;
}

static void hf_create_default(int w)
{
    nbf_fail_alloc_after(0, false);
    hfModel *m = &hf[w];
    nbHashDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.cell_size = 1.0;
    const nbAllocator al = nbf_allocator();
    desc.allocator = &al;
    nbf_expect(nb_hash_create(&desc, &m->h), NBF_BIT(NB_OK), "nb_hash_create (default)");
    m->checking = true;
    m->dim = 2;
    m->cell = hf_cell_size(m->h);
    m->reserved = -1;
    m->n = 0;
}

static void op_null_args(int w)
{
    const hfModel *m = &hf[w];
    nbf_op = "null args";
    nbf_log("#%d hash%d NULL arguments\n", nbf_step, w);
    const hfBefore b = hf_before(m);
    const nbfMark mk = nbf_mark();
    const unsigned nul = NBF_BIT(NB_ERR_NULL_ARG);
    nbHashDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.cell_size = 1.0;
    nbHash *h = (nbHash *)(uintptr_t)0x1;
    nbf_expect(nb_hash_create(NULL, &h), nul, "create(NULL desc)");
    NBF_CHECK(h == NULL, "create(NULL desc) left *out set");
    nbf_expect(nb_hash_create(&desc, NULL), nul, "create(NULL out)");
    nb_hash_destroy(NULL);
    nb_hash_clear(NULL);
    NBF_CHECK(nb_hash_count(NULL) == 0 && nb_hash_memory_bytes(NULL) == 0, "NULL count / bytes");
    nbf_expect(nb_hash_validate(NULL), nul, "validate(NULL)");
    nbf_expect(nb_hash_reserve(NULL, 1), nul, "reserve(NULL)");
    double *p = hf_vec(m->dim);
    for (int d = 0; d < m->dim; d++) p[d] = 0.5;
    nbHandle hd = {5};
    nbf_expect(nb_hash_insert(NULL, p, 1, NB_FILTER_ALL, &hd), nul, "insert(NULL)");
    NBF_CHECK(hd.bits == 0, "insert(NULL) left *out set");
    const nbHandle live = m->n > 0 ? m->hd[0] : NB_HANDLE_NULL;
    nbf_expect(nb_hash_move(NULL, live, p), nul, "move(NULL)");
    nbf_expect(nb_hash_remove(NULL, live), nul, "remove(NULL)");
    nbf_expect(nb_hash_get(NULL, live, p, NULL, NULL), nul, "get(NULL)");
    nbf_expect(nb_hash_set(NULL, live, 0, NB_FILTER_ALL), nul, "set(NULL)");
    hfHits v = {NULL, 0, 0, 0};
    nbf_expect(nb_hash_visit_all(NULL, hf_on_hit, &v), nul, "visit_all(NULL)");
    nbf_expect(nb_hash_visit_all(m->h, NULL, NULL), nul, "visit_all(NULL visit)");
    nbHit out[2];
    int32_t found = 9;
    nbf_expect(nb_hash_query_radius(NULL, p, 1.0, NB_FILTER_ALL, out, 2, &found), nul,
               "query_radius(NULL)");
    NBF_CHECK(found == 0, "query_radius(NULL) left *found = %d", (int)found);
    nbf_expect(nb_hash_query_radius(m->h, NULL, 1.0, NB_FILTER_ALL, out, 2, &found), nul,
               "query_radius(NULL center)");
    nbf_expect(nb_hash_visit_radius(m->h, p, 1.0, NB_FILTER_ALL, NULL, NULL), nul,
               "visit_radius(NULL visit)");
    nbf_expect(nb_hash_visit_radius(NULL, p, 1.0, NB_FILTER_ALL, hf_on_hit, &v), nul,
               "visit_radius(NULL)");
    found = 9;
    const nbBox pb = {{p[0], p[1], p[m->dim - 1]}, {p[0], p[1], p[m->dim - 1]}};
    nbf_expect(nb_hash_query_box(m->h, NULL, NB_FILTER_ALL, out, 2, &found), nul,
               "query_box(NULL box)");
    NBF_CHECK(found == 0, "query_box(NULL box) left *found = %d", (int)found);
    nbf_expect(nb_hash_query_box(NULL, &pb, NB_FILTER_ALL, out, 2, &found), nul, "query_box(NULL)");
    nbf_expect(nb_hash_visit_box(m->h, NULL, NB_FILTER_ALL, hf_on_hit, &v), nul,
               "visit_box(NULL box)");
    nbf_expect(nb_hash_visit_box(m->h, &pb, NB_FILTER_ALL, NULL, NULL), nul,
               "visit_box(NULL visit)");
    nbHitNeighbor nn[2];
    found = 9;
    const double inf = (double)INFINITY;
    nbf_expect(nb_hash_knn(NULL, p, NB_FILTER_ALL, inf, nn, 2, &found), nul, "knn(NULL)");
    NBF_CHECK(found == 0, "knn(NULL) left *found = %d", (int)found);
    nbf_expect(nb_hash_knn(m->h, NULL, NB_FILTER_ALL, inf, nn, 2, &found), nul, "knn(NULL point)");
    nbf_expect(nb_hash_knn(m->h, p, NB_FILTER_ALL, inf, nn, 2, NULL), nul, "knn(NULL found)");
    found = 9;
    nbf_expect(nb_hash_query_neighbors(NULL, live, 1.0, NB_FILTER_ALL, out, 2, &found), nul,
               "query_neighbors(NULL)");
    NBF_CHECK(found == 0, "query_neighbors(NULL) left *found = %d", (int)found);
    nbf_expect(nb_hash_visit_neighbors(m->h, live, 1.0, NB_FILTER_ALL, NULL, NULL), nul,
               "visit_neighbors(NULL visit)");
    nbf_expect(nb_hash_visit_neighbors(NULL, live, 1.0, NB_FILTER_ALL, hf_on_hit, &v), nul,
               "visit_neighbors(NULL)");
    nbHitPair pp[2];
    int64_t f64 = 9;
    nbf_expect(nb_hash_pairs(NULL, 1.0, pp, 2, &f64), nul, "pairs(NULL)");
    NBF_CHECK(f64 == 0, "pairs(NULL) left *found set");
    nbf_expect(nb_hash_pairs(m->h, 1.0, pp, 2, NULL), nul, "pairs(NULL found)");
    f64 = 9;
    nbf_expect(nb_hash_count_pairs(NULL, 1.0, &f64), nul, "count_pairs(NULL)");
    NBF_CHECK(f64 == 0, "count_pairs(NULL) left *count set");
    nbf_expect(nb_hash_count_pairs(m->h, 1.0, NULL), nul, "count_pairs(NULL count)");
    nbf_expect(nb_hash_visit_pairs(m->h, 1.0, NULL, NULL), nul, "visit_pairs(NULL visit)");
    nbf_expect(nb_hash_visit_pairs(NULL, 1.0, hf_on_pair, NULL), nul, "visit_pairs(NULL)");
    nbf_expect(nb_hash_cross_pairs(NULL, 1.0, 1, 1, pp, 2, &f64), nul, "cross_pairs(NULL)");
    nbf_expect(nb_hash_cross_pairs(m->h, 1.0, 1, 1, NULL, 2, &f64), nul,
               "cross_pairs(NULL out, capacity 2)");
    nbf_expect(nb_hash_count_cross_pairs(m->h, 1.0, 1, 1, NULL), nul,
               "count_cross_pairs(NULL count)");
    nbf_expect(nb_hash_visit_cross_pairs(m->h, 1.0, 1, 1, NULL, NULL), nul,
               "visit_cross_pairs(NULL visit)");
    nbf_expect(nb_hash_visit_cross_pairs(NULL, 1.0, 1, 1, hf_on_pair, NULL), nul,
               "visit_cross_pairs(NULL)");
    free(p);
    nbf_check_no_alloc(mk, "calls with NULL arguments");
    hf_unchanged(m, b, "NULL-argument calls");
}

static void op_meta(nbfReader *r, int w)
{
    const uint8_t k = nbf_u8(r);
    switch (k % 4) {
    case 0: // (re)create the second hash
        hf_destroy(1);
        hf_create(r, 1);
        break;
    case 1:
        nbf_op = "destroy";
        nbf_log("#%d destroy hash1\n", nbf_step);
        hf_destroy(1);
        break;
    case 2: // recreate the first hash; a refused create falls back to the default
        hf_destroy(0);
        if (!hf_create(r, 0)) hf_create_default(0);
        break;
    default: op_null_args(w); break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nbf_begin_input();
    memset(hf, 0, sizeof hf);
    hf_work = 0.0;
    hf_user_seq = 1;
    nbfReader rd = {data, size};
    nbfReader *r = &rd;
    const uint8_t fail = nbf_u8(r);
    nbf_fail_alloc_after(fail & 0x7F, (fail & 0x80) != 0);
    if (!hf_create(r, 0)) hf_create_default(0);
    nbf_fail_alloc_after(0, false);
    hf_check_state();
    for (nbf_step = 1; rd.n > 0 && nbf_step <= HF_OPS; nbf_step++) {
        const uint8_t op = nbf_u8(r);
        const int w = (op & 0x10) && hf[1].h != NULL ? 1 : 0;
        switch (op & 15) {
        case 0:
        case 1: op_insert(r, w); break;
        case 2: op_burst(r, w); break;
        case 3:
            if (op & 0x20)
                op_move_many(r, w);
            else
                op_move(r, w);
            break;
        case 4: op_remove(r, w); break;
        case 5: op_set(r, w); break;
        case 6: op_get(r, w); break;
        case 7: op_clear_or_visit_all(r, w); break;
        case 8: op_reserve(r, w); break;
        case 9: op_fail_schedule(r); break;
        case 10: op_radius(r, w); break;
        case 11: op_box(r, w); break;
        case 12: op_knn(r, w); break;
        case 13: op_neighbors(r, w); break;
        case 14: op_pairs(r, w, (op & 0x20) != 0); break;
        default: op_meta(r, w); break;
        }
        hf_check_state();
    }
    nbf_op = "destroy";
    hf_destroy(0);
    hf_destroy(1);
    nbf_check_no_leak("destroying both hashes");
    return 0;
}
