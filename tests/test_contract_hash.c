// SPDX-License-Identifier: MIT
// The spatial hash's contract cases (include/nearby/hash.h).
#include "contract.h"

// ---- the spatial hash (include/nearby/hash.h) ----
//
// The same table, over the hash's functions and three fixture hashes (empty 2D; 2D with a few
// dozen items, some with filter bits, some far from the origin; 3D). Handles add a step between
// pointers and finiteness: every bad handle (null, stale after remove, stale after its slot was
// reused, foreign, forged) alone, and with every non-finite and out-of-range value in both orders:
// NB_ERR_BAD_HANDLE (the handle is checked right after the pointers). After each failing call
// the hash validates and answers exactly as before (count, its pairs and a fixed radius query);
// after a failing nb_hash_get its outputs are untouched, as its header says.

enum {
    HFIX_N2 = 40,     // items in the 2D fixture
    HFIX_N3 = 30,     // items in the 3D fixture
    HIT_CAP = 256,    // hit / kNN buffers
    HPAIR_CAP = 4096, // pair buffer
    H_ITEM_LIMIT = 1 << 28,
};

static const double H_CELL = 0.25; // every fixture hash's cell size

typedef enum HFn {
    HF_CREATE,
    HF_RESERVE,
    HF_INSERT,
    HF_MOVE,
    HF_REMOVE,
    HF_GET,
    HF_SET,
    HF_VISIT_ALL,
    HF_QUERY_RADIUS,
    HF_VISIT_RADIUS,
    HF_QUERY_BOX,
    HF_VISIT_BOX,
    HF_KNN,
    HF_VISIT_KNN,
    HF_QUERY_NEIGHBORS,
    HF_VISIT_NEIGHBORS,
    HF_PAIRS,
    HF_COUNT_PAIRS,
    HF_VISIT_PAIRS,
    HF_CROSS_PAIRS,
    HF_COUNT_CROSS_PAIRS,
    HF_VISIT_CROSS_PAIRS,
    HF_VALIDATE,
    HF_MOVE_MANY,
} HFn;

// The hash's own fields (the shared ones are Field's).
enum {
    H_ITEMS = F_SELF + 1, // reserve's items := v
    H_HANDLE,             // item := the handle of kind idx (HK_*)
    H_MASK_A,             // cross pairs' mask_a := v
    H_MASK_B,             // cross pairs' mask_b := v
    H_UVAL,               // insert / set user value := v
    H_OUTHANDLE,          // insert's out := NULL
    H_GET_POS,            // get's pos := NULL
    H_GET_USER,           // get's user := NULL
    H_GET_FILTER,         // get's filter := NULL
};

// Handle kinds for H_HANDLE.
enum {
    HK_LIVE,        // a live item of this hash (the default)
    HK_LIVE2,       // another live item
    HK_NULL,        // the null handle
    HK_STALE,       // an item inserted and removed
    HK_REUSED,      // an item removed whose slot now holds another item
    HK_FOREIGN,     // a live item of another hash (same slot and generation, other tag)
    HK_FORGED_GEN,  // a live handle with another generation
    HK_FORGED_SLOT, // this hash's tag with a slot never used
    HK_FORGED_TAG,  // a live handle with another owner tag
    HK_ONES,        // every bit set
};

enum { G_HANDLE = 1 << 4, G_MASKS = 1 << 5 }; // (the grid's G_B / G_UNITS bits: another table)

static const MutSet hnulls_hash[] = {M1("hash NULL", 0, F_SELF, 0, 0)};

static const MutSet hbad_handles[] = {
    M1("null handle", G_HANDLE, H_HANDLE, HK_NULL, 0),
    M1("stale handle (removed)", G_HANDLE, H_HANDLE, HK_STALE, 0),
    M1("stale handle (slot reused)", G_HANDLE, H_HANDLE, HK_REUSED, 0),
    M1("foreign handle", G_HANDLE, H_HANDLE, HK_FOREIGN, 0),
    M1("forged generation", G_HANDLE, H_HANDLE, HK_FORGED_GEN, 0),
    M1("forged slot", G_HANDLE, H_HANDLE, HK_FORGED_SLOT, 0),
    M1("forged tag", G_HANDLE, H_HANDLE, HK_FORGED_TAG, 0),
    M1("all bits set", G_HANDLE, H_HANDLE, HK_ONES, 0),
};

static const MutSet hrange_create[] = {
    M1("cell_size 0", G_CELL, F_CELL, 0, 0.0),
    M1("cell_size -0.0", G_CELL, F_CELL, 0, -0.0),
    RG_CREATE,
};
static const OkSet hok_create[] = {
    {M1("cell_size 0.5", G_CELL, F_CELL, 0, 0.5), OK_ANY},
    {M1("cell_size 1e300", G_CELL, F_CELL, 0, 1e300), OK_ANY},
    {M1("dim 0", 0, F_GDIM, 0, 0.0), OK_ANY},
    {M1("capacity_hint 100", 0, F_HINT, 0, 100.0), OK_ANY},
    {M1("allocator NULL (malloc)", 0, F_ALLOCATOR, 0, 0), OK_ANY},
};

static const MutSet hrange_reserve[] = {
    M1("items -1", 0, H_ITEMS, 0, -1.0),
    M1("items INT32_MIN", 0, H_ITEMS, 0, INT32_MIN),
    M1("items 2^28 + 1", 0, H_ITEMS, 0, H_ITEM_LIMIT + 1.0),
    M1("items INT32_MAX", 0, H_ITEMS, 0, INT32_MAX),
};
static const OkSet hok_reserve[] = {
    {M1("items 0", 0, H_ITEMS, 0, 0.0), OK_SAME},
    {M1("items 1000", 0, H_ITEMS, 0, 1000.0), OK_SAME},
};

#define HNF_POS                                                                                    \
    M1("pos[0] NaN", 0, F_POS, 0, D_NAN), M1("pos[1] +inf", 0, F_POS, 1, D_INF),                   \
        M1("pos[2] -inf", 0, F_POS, 2, -D_INF), M1("pos[0] -inf", 0, F_POS, 0, -D_INF),            \
        M1("pos[1] NaN", 0, F_POS, 1, D_NAN), M1("pos[2] NaN", 0, F_POS, 2, D_NAN)
#define HRG_POS                                                                                    \
    M1("pos[0] 1e300 (cell beyond 2^62)", 0, F_POS, 0, 1e300),                                     \
        M1("pos[1] -1e300 (cell beyond -2^62)", 0, F_POS, 1, -1e300),                              \
        M1("pos[2] 1e300 (cell beyond 2^62)", 0, F_POS, 2, 1e300),                                 \
        M1("pos[0] 1.2e18 (cell 4.8e18, beyond 2^62)", 0, F_POS, 0, 1.2e18)
#define HOK_POS                                                                                    \
    {M1("pos[0] -0.0", 0, F_POS, 0, -0.0), OK_TWIN},                                               \
        {M1("pos[1] -0.0", 0, F_POS, 1, -0.0), OK_TWIN},                                           \
        {M1("pos[2] -0.0", 0, F_POS, 2, -0.0), OK_TWIN},                                           \
        {M1("pos[0] 1e12 (far)", 0, F_POS, 0, 1e12), OK_ANY},                                      \
    {                                                                                              \
        M1("pos[1] -1e15 (far, negative)", 0, F_POS, 1, -1e15), OK_ANY                             \
    }

static const MutSet hnulls_insert[] = {
    M1("hash NULL", 0, F_SELF, 0, 0),
    M1("pos NULL", 0, F_POS, -1, 0),
    M1("out NULL", 0, H_OUTHANDLE, 0, 0),
};
static const MutSet hnonfinite_pos[] = {HNF_POS};
static const MutSet hrange_pos[] = {HRG_POS};
static const OkSet hok_insert[] = {
    HOK_POS,
    {M1("user value 0", 0, H_UVAL, 0, 0.0), OK_ANY},
    {M1("user value 2^63", 0, H_UVAL, 0, 0x1p63), OK_ANY},
    {M2("filter 0 / 0", 0, F_FILTER_CAT, 0, 0.0, F_FILTER_MASK, 0, 0.0), OK_ANY},
};

static const MutSet hnulls_move[] = {
    M1("hash NULL", 0, F_SELF, 0, 0),
    M1("pos NULL", 0, F_POS, -1, 0),
};
static const OkSet hok_move[] = {
    HOK_POS,
    {M1("another live item", G_HANDLE, H_HANDLE, HK_LIVE2, 0), OK_ANY},
};

static const OkSet hok_remove[] = {
    {M1("another live item", G_HANDLE, H_HANDLE, HK_LIVE2, 0), OK_ANY},
};

static const OkSet hok_get[] = {
    {M1("pos NULL", 0, H_GET_POS, 0, 0), OK_SAME},
    {M1("user NULL", 0, H_GET_USER, 0, 0), OK_SAME},
    {M1("filter NULL", 0, H_GET_FILTER, 0, 0), OK_SAME},
    {M1("another live item", G_HANDLE, H_HANDLE, HK_LIVE2, 0), OK_SAME},
};

static const OkSet hok_set[] = {
    {M1("user value 0", 0, H_UVAL, 0, 0.0), OK_ANY},
    {M2("filter 0 / 0", 0, F_FILTER_CAT, 0, 0.0, F_FILTER_MASK, 0, 0.0), OK_ANY},
    {M1("another live item", G_HANDLE, H_HANDLE, HK_LIVE2, 0), OK_ANY},
};

static const MutSet hnulls_visit_all[] = {
    M1("hash NULL", 0, F_SELF, 0, 0),
    M1("visit NULL", 0, F_VISIT, 0, 0),
};
static const OkSet hok_visit_all[] = {
    {M1("user NULL", 0, F_USER, 0, 0), OK_ALL},
};

static const MutSet hnulls_query_radius[] = {NULLS_QUERY_RADIUS("hash")};
static const OkSet hok_query_radius[] = {OK_QUERY_RADIUS, FILTER_ZERO};

static const MutSet hnulls_visit_radius[] = {NULLS_VISIT_RADIUS("hash")};
static const OkSet hok_visit_radius[] = {OK_VISIT_RADIUS, FILTER_ZERO};

// The hash takes one nbBox: "box NULL" is the lo pointer's mutation (see hcall's box).
static const MutSet hnulls_query_box[] = {
    M1("hash NULL", 0, F_SELF, 0, 0), M1("box NULL", 0, F_LO, -1, 0),
    M1("out NULL", G_CAP, F_OUT, 0, 0), M1("found NULL", 0, F_FOUND, 0, 0)};
static const OkSet hok_query_box[] = {OK_QUERY_BOX, FILTER_ZERO};
static const MutSet hnulls_visit_box[] = {M1("hash NULL", 0, F_SELF, 0, 0),
                                          M1("box NULL", 0, F_LO, -1, 0),
                                          M1("visit NULL", 0, F_VISIT, 0, 0)};
static const OkSet hok_visit_box[] = {OK_VISIT_BOX, FILTER_ZERO};

static const MutSet hnulls_knn[] = {NULLS_KNN("hash")};
static const OkSet hok_knn[] = {OK_KNN, FILTER_ZERO, OK_KNN_LIMIT};
static const MutSet hnulls_visit_knn[] = {NULLS_VISIT_KNN("hash")};

static const MutSet hnulls_query_neighbors[] = {
    M1("hash NULL", 0, F_SELF, 0, 0),
    M1("out NULL", G_CAP, F_OUT, 0, 0),
    M1("found NULL", 0, F_FOUND, 0, 0),
};
static const OkSet hok_query_neighbors[] = {
    OK_RADIUS_ZERO,
    {M2("out NULL, capacity 0", G_CAP, F_OUT, 0, 0, F_CAP, 0, 0.0), OK_BASE},
    {M1("capacity 1", G_CAP, F_CAP, 0, 1.0), OK_BASE},
    {M1("radius 1e308", G_RADIUS, F_RADIUS, 0, 1e308), OK_ALL_BUT_ONE},
    {M1("another live item", G_HANDLE, H_HANDLE, HK_LIVE2, 0), OK_ANY},
    FILTER_ZERO,
};
static const MutSet hnulls_visit_neighbors[] = {
    M1("hash NULL", 0, F_SELF, 0, 0),
    M1("visit NULL", 0, F_VISIT, 0, 0),
};
static const OkSet hok_visit_neighbors[] = {
    OK_RADIUS_ZERO,
    {M1("radius 1e308", G_RADIUS, F_RADIUS, 0, 1e308), OK_ALL_BUT_ONE},
    {M1("user NULL", 0, F_USER, 0, 0), OK_BASE},
    {M1("another live item", G_HANDLE, H_HANDLE, HK_LIVE2, 0), OK_ANY},
    FILTER_ZERO,
};

static const MutSet hnulls_pairs[] = {NULLS_PAIRS("hash")};
static const MutSet hnulls_count_pairs[] = {NULLS_COUNT_PAIRS("hash")};
static const MutSet hnulls_visit_pairs[] = {NULLS_VISIT_PAIRS("hash")};
#define HOK_MASKS                                                                                  \
    {M1("mask_a 0", G_MASKS, H_MASK_A, 0, 0.0), OK_ZERO},                                          \
        {M1("mask_b 0", G_MASKS, H_MASK_B, 0, 0.0), OK_ZERO},                                      \
    {                                                                                              \
        M2("mask_a = mask_b = all", G_MASKS, H_MASK_A, 0, 4294967295.0, H_MASK_B, 0,               \
           4294967295.0),                                                                          \
            OK_ANY                                                                                 \
    }
static const OkSet hok_cross[] = {
    OK_RADIUS_ZERO,
    {M2("out NULL, capacity 0", G_CAP, F_OUT, 0, 0, F_CAP, 0, 0.0), OK_BASE},
    {M1("capacity 1", G_CAP, F_CAP, 0, 1.0), OK_BASE},
    HOK_MASKS,
};
static const OkSet hok_count_cross[] = {OK_RADIUS_ZERO, HOK_MASKS};
static const OkSet hok_visit_cross[] = {
    OK_RADIUS_ZERO,
    {M1("user NULL", 0, F_USER, 0, 0), OK_BASE},
    HOK_MASKS,
};

static const Spec hspecs[] = {
    {HF_CREATE, "nb_hash_create", O_CREATE, LIST(nulls_create), NOLIST, LIST(nonfinite_create),
     LIST(hrange_create), LIST(hok_create)},
    {HF_RESERVE, "nb_hash_reserve", O_MUTATE, LIST(hnulls_hash), NOLIST, NOLIST,
     LIST(hrange_reserve), LIST(hok_reserve)},
    {HF_INSERT, "nb_hash_insert", O_MUTATE | O_HANDLE_OUT, LIST(hnulls_insert), NOLIST,
     LIST(hnonfinite_pos), LIST(hrange_pos), LIST(hok_insert)},
    {HF_MOVE, "nb_hash_move", O_MUTATE | O_TAKES_HANDLE, LIST(hnulls_move), LIST(hbad_handles),
     LIST(hnonfinite_pos), LIST(hrange_pos), LIST(hok_move)},
    {HF_REMOVE, "nb_hash_remove", O_MUTATE | O_TAKES_HANDLE, LIST(hnulls_hash), LIST(hbad_handles),
     NOLIST, NOLIST, LIST(hok_remove)},
    // A batch of two: a good move of another item (three cells over), then the move under test;
    // a bad second entry must leave the first unmoved too.
    {HF_MOVE_MANY, "nb_hash_move_many", O_MUTATE | O_TAKES_HANDLE, LIST(hnulls_move),
     LIST(hbad_handles), LIST(hnonfinite_pos), LIST(hrange_pos), LIST(hok_move)},
    {HF_GET, "nb_hash_get", O_GET | O_TAKES_HANDLE, LIST(hnulls_hash), LIST(hbad_handles), NOLIST,
     NOLIST, LIST(hok_get)},
    {HF_SET, "nb_hash_set", O_MUTATE | O_TAKES_HANDLE, LIST(hnulls_hash), LIST(hbad_handles),
     NOLIST, NOLIST, LIST(hok_set)},
    {HF_VISIT_ALL, "nb_hash_visit_all", O_VISIT, LIST(hnulls_visit_all), NOLIST, NOLIST, NOLIST,
     LIST(hok_visit_all)},
    {HF_QUERY_RADIUS, "nb_hash_query_radius", O_FOUND32 | O_IDX, LIST(hnulls_query_radius), NOLIST,
     LIST(nonfinite_center_radius), LIST(range_radius_cap), LIST(hok_query_radius)},
    {HF_VISIT_RADIUS, "nb_hash_visit_radius", O_VISIT, LIST(hnulls_visit_radius), NOLIST,
     LIST(nonfinite_center_radius), LIST(range_radius), LIST(hok_visit_radius)},
    {HF_QUERY_BOX, "nb_hash_query_box", O_FOUND32 | O_IDX, LIST(hnulls_query_box), NOLIST,
     LIST(nonfinite_box), LIST(range_cap), LIST(hok_query_box)},
    {HF_VISIT_BOX, "nb_hash_visit_box", O_VISIT, LIST(hnulls_visit_box), NOLIST,
     LIST(nonfinite_box), NOLIST, LIST(hok_visit_box)},
    {HF_KNN, "nb_hash_knn", O_FOUND32 | O_NN, LIST(hnulls_knn), NOLIST, LIST(nonfinite_knn),
     LIST(range_knn), LIST(hok_knn)},
    {HF_VISIT_KNN, "nb_hash_visit_knn", O_VISIT, LIST(hnulls_visit_knn), NOLIST,
     LIST(nonfinite_knn), LIST(range_knn), LIST(ok_visit_knn)},
    {HF_QUERY_NEIGHBORS, "nb_hash_query_neighbors", O_FOUND32 | O_IDX | O_TAKES_HANDLE,
     LIST(hnulls_query_neighbors), LIST(hbad_handles), LIST(nonfinite_radius),
     LIST(range_radius_cap), LIST(hok_query_neighbors)},
    {HF_VISIT_NEIGHBORS, "nb_hash_visit_neighbors", O_VISIT | O_TAKES_HANDLE,
     LIST(hnulls_visit_neighbors), LIST(hbad_handles), LIST(nonfinite_radius), LIST(range_radius),
     LIST(hok_visit_neighbors)},
    {HF_PAIRS, "nb_hash_pairs", O_FOUND64 | O_PAIRS, LIST(hnulls_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_pairs), LIST(ok_pairs)},
    {HF_COUNT_PAIRS, "nb_hash_count_pairs", O_FOUND64, LIST(hnulls_count_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_radius), LIST(ok_radius_only)},
    {HF_VISIT_PAIRS, "nb_hash_visit_pairs", O_VISIT, LIST(hnulls_visit_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_radius), LIST(ok_visit_pairs)},
    {HF_CROSS_PAIRS, "nb_hash_cross_pairs", O_FOUND64 | O_PAIRS, LIST(hnulls_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_pairs), LIST(hok_cross)},
    {HF_COUNT_CROSS_PAIRS, "nb_hash_count_cross_pairs", O_FOUND64, LIST(hnulls_count_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_radius), LIST(hok_count_cross)},
    {HF_VISIT_CROSS_PAIRS, "nb_hash_visit_cross_pairs", O_VISIT, LIST(hnulls_visit_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_radius), LIST(hok_visit_cross)},
    {HF_VALIDATE, "nb_hash_validate", 0, LIST(hnulls_hash), NOLIST, NOLIST, NOLIST, NOLIST},
};

// ---- the hash fixtures ----

typedef struct HAnswers {
    nbStatus validate;
    int32_t count;
    int64_t pairs, cross;
    uint64_t pairs_hash;
    int32_t within; // a fixed radius query's hits
    uint64_t within_hash;
} HAnswers;

typedef struct HFixture {
    const char *name;
    int dim;
    int n;
    HAnswers base;
} HFixture;

// A hit without the handle's owner tag, which differs from one hash to the next.
static uint64_t hit_key(nbHit h)
{
    return mix(h.user, h.handle.bits & 0xFFFFFFFFFFFFu);
}

// Item i of a fixture: most in the unit square (3D: a cube of side 0.4 around H_Q), every 7th far
// away (negative or 1e6 off); every third with filter bits (never category 0 nor mask 0, so
// NB_FILTER_ALL matches them all).
static void hfix_item(const HFixture *fx, int i, double *pos, nbFilter *f)
{
    for (int a = 0; a < fx->dim; a++) // 3D: a smaller cube, for pairs at R0
        pos[a] = fx->dim == 3 ? 0.3 + 0.4 * fix_unit() : fix_unit();
    if (i % 7 == 3) pos[0] -= 1000.0;
    if (i % 7 == 5) pos[1] += 1e6;
    *f = NB_FILTER_ALL;
    if (i % 3 == 1) {
        f->category = 1u << (i % 4);
        f->mask = 0x5u;
    }
    if (i % 3 == 2) f->category = 2u;
}

static const double H_Q[3] = {0.5, 0.5, 0.5}; // the fixed query's center

typedef struct HCtx {
    World w;
    const HFixture *fx;
    nbHash *hash, *other;
    nbHandle live, live2, stale, reused, foreign, handle, outhandle;
    int32_t items;
    uint64_t uval;
    uint32_t mask_a, mask_b;
    double gpos[3];
    uint64_t guser;
    nbFilter gfilter;
    nbHit hits[HIT_CAP];
    nbHitPair pairs[HPAIR_CAP];
    nbHitNeighbor nn[HIT_CAP];
    // the arguments as passed
    nbHash *a_hash;
    nbHandle *a_outhandle;
    double *a_gpos;
    uint64_t *a_guser;
    nbFilter *a_gfilter;
} HCtx;

static nbHash *const BOGUS_HASH = (nbHash *)(uintptr_t)0x777;

static bool on_hit(nbHit hit, void *user)
{
    (void)user;
    g_visits++;
    g_visit_hash = mix(g_visit_hash, hit_key(hit));
    return true;
}

static bool on_hit_nn(nbHit hit, double dist2, void *user)
{
    (void)user;
    g_visits++;
    g_visit_hash = mix(mix(g_visit_hash, hit_key(hit)), (uint64_t)(dist2 * 0x1p40));
    return true;
}

// The box the hash's calls take: lo and hi as the world has them, NULL when lo is mutated to
// NULL.
static const nbBox *hbox(const World *w, nbBox *box)
{
    if (w->a_lo == NULL) return NULL;
    for (int a = 0; a < 3; a++) {
        box->min[a] = w->lo[a];
        box->max[a] = w->hi[a];
    }
    return box;
}

static bool on_hpair(nbHit a, nbHit b, void *user)
{
    (void)user;
    g_visits++;
    g_visit_hash = mix(mix(g_visit_hash, hit_key(a)), hit_key(b));
    return true;
}

static HAnswers hanswers(const nbHash *h, nbHitPair *pairs, nbHit *hits)
{
    HAnswers a;
    memset(&a, 0, sizeof a);
    a.validate = nb_hash_validate(h);
    a.count = nb_hash_count(h);
    if (nb_hash_pairs(h, R0, pairs, HPAIR_CAP, &a.pairs) != NB_OK) a.pairs = -1;
    for (int64_t t = 0; t < a.pairs; t++)
        a.pairs_hash = mix(mix(a.pairs_hash, hit_key(pairs[t].a)), hit_key(pairs[t].b));
    if (nb_hash_count_cross_pairs(h, R0, 0x3u, 0xFFFFFFFFu, &a.cross) != NB_OK) a.cross = -1;
    if (nb_hash_query_radius(h, H_Q, R0, NB_FILTER_ALL, hits, HIT_CAP, &a.within) != NB_OK)
        a.within = -1;
    for (int32_t t = 0; t < a.within; t++) a.within_hash = mix(a.within_hash, hit_key(hits[t]));
    return a;
}

static bool same_hanswers(const HAnswers *x, const HAnswers *y)
{
    return x->validate == y->validate && x->count == y->count && x->pairs == y->pairs &&
           x->pairs_hash == y->pairs_hash && x->cross == y->cross && x->within == y->within &&
           x->within_hash == y->within_hash;
}

// A hash of the fixture's dim with its items, through `al`; the handles of items 0 and 1 in
// live / live2 when not NULL.
static nbHash *make_hash(const HFixture *fx, const nbAllocator *al, nbHandle *live, nbHandle *live2)
{
    nbHashDesc d = {H_CELL, fx->dim, 0, al};
    nbHash *h = NULL;
    if (nb_hash_create(&d, &h) != NB_OK) return NULL;
    fix_rng = 11;
    for (int i = 0; i < fx->n; i++) {
        double p[3];
        nbFilter f;
        hfix_item(fx, i, p, &f);
        nbHandle hd;
        if (nb_hash_insert(h, p, 100u + (uint64_t)i, f, &hd) != NB_OK) {
            nb_hash_destroy(h);
            return NULL;
        }
        if (i == 0 && live != NULL) *live = hd;
        if (i == 1 && live2 != NULL) *live2 = hd;
    }
    return h;
}

static bool hctx_init(World *w, const void *fxv)
{
    HCtx *c = (HCtx *)w;
    const HFixture *fx = (const HFixture *)fxv;
    memset(c, 0, sizeof *c);
    c->fx = fx;
    world_init(&c->w, fx->dim, H_CELL, HIT_CAP, HPAIR_CAP);
    c->hash = make_hash(fx, &c->w.alloc, &c->live, &c->live2);
    HFixture big = *fx;
    big.n = fx->n > 2 ? fx->n : 2;
    c->other = make_hash(&big, &c->w.alloc, &c->foreign, NULL);
    if (c->hash == NULL || c->other == NULL) return false;
    // a stale handle: inserted and removed (the empty fixture's hash empties again)
    const double p[3] = {0.125, 0.375, 0.625};
    if (nb_hash_insert(c->hash, p, 7, NB_FILTER_ALL, &c->stale) != NB_OK) return false;
    if (nb_hash_remove(c->hash, c->stale) != NB_OK) return false;
    // a handle whose slot was freed and given to another item (kept in the non-empty fixtures)
    if (nb_hash_insert(c->hash, p, 8, NB_FILTER_ALL, &c->reused) != NB_OK) return false;
    if (nb_hash_remove(c->hash, c->reused) != NB_OK) return false;
    if (fx->n > 0) {
        nbHandle again;
        if (nb_hash_insert(c->hash, p, 9, NB_FILTER_ALL, &again) != NB_OK) return false;
        if ((again.bits & 0xFFFFFFFFu) != (c->reused.bits & 0xFFFFFFFFu)) return false;
    } else {
        c->live = c->live2 = c->stale; // no live item: pointer and handle rows only
    }
    c->handle = c->live;
    c->items = 100;
    c->uval = 12345;
    c->mask_a = 0x3u;
    c->mask_b = 0xFFFFFFFFu;
    c->a_hash = c->hash;
    c->a_outhandle = &c->outhandle;
    c->a_gpos = c->gpos;
    c->a_guser = &c->guser;
    c->a_gfilter = &c->gfilter;
    return true;
}

static void hctx_free(World *w)
{
    HCtx *c = (HCtx *)w;
    nb_hash_destroy(c->hash);
    nb_hash_destroy(c->other);
    c->hash = c->other = NULL;
}

static nbHandle handle_of_kind(const HCtx *c, int kind)
{
    nbHandle h = c->live;
    const uint64_t tag = c->live.bits >> 48;
    const uint64_t other_tag = (tag ^ 0x5A5Au) != 0 ? tag ^ 0x5A5Au : 1u;
    switch (kind) {
    case HK_LIVE: break;
    case HK_LIVE2: h = c->live2; break;
    case HK_NULL: h = NB_HANDLE_NULL; break;
    case HK_STALE: h = c->stale; break;
    case HK_REUSED: h = c->reused; break;
    case HK_FOREIGN: h = c->foreign; break;
    case HK_FORGED_GEN: h.bits ^= (uint64_t)1 << 32; break;
    case HK_FORGED_SLOT: h.bits = (tag << 48) | 0x00FFFFFFu; break;
    case HK_FORGED_TAG: h.bits = (h.bits & 0xFFFFFFFFFFFFu) | (other_tag << 48); break;
    case HK_ONES: h.bits = ~(uint64_t)0; break;
    default: break;
    }
    return h;
}

// Applies one mutation of the hash's own fields.
static bool hash_apply(World *w, const Mut *m)
{
    HCtx *c = (HCtx *)w;
    switch (m->f) {
    case F_SELF: c->a_hash = NULL; return true;
    case H_ITEMS: c->items = i32(m->v); return true;
    case H_HANDLE: c->handle = handle_of_kind(c, m->idx); return true;
    case H_MASK_A: c->mask_a = (uint32_t)m->v; return true;
    case H_MASK_B: c->mask_b = (uint32_t)m->v; return true;
    case H_UVAL: c->uval = (uint64_t)m->v; return true;
    case H_OUTHANDLE: c->a_outhandle = NULL; return true;
    case H_GET_POS: c->a_gpos = NULL; return true;
    case H_GET_USER: c->a_guser = NULL; return true;
    case H_GET_FILTER: c->a_gfilter = NULL; return true;
    default: return false;
    }
}

static nbStatus hash_create(const nbGridDesc *d, void **out)
{
    nbHashDesc hd = {0.0, 0, 0, NULL};
    if (d != NULL) {
        hd.cell_size = d->cell_size;
        hd.dim = d->dim;
        hd.capacity_hint = d->capacity_hint;
        hd.allocator = d->allocator;
    }
    nbHash *h = BOGUS_HASH;
    const nbStatus st = nb_hash_create(d != NULL ? &hd : NULL, out != NULL ? &h : NULL);
    if (out != NULL) *out = h;
    return st;
}

static void hash_destroy(void *h)
{
    nb_hash_destroy((nbHash *)h);
}

static nbStatus hash_invoke(int fn, World *w)
{
    HCtx *c = (HCtx *)w;
    nbBox box;
    switch ((HFn)fn) {
    case HF_CREATE:
        return hash_create(w->no_desc ? NULL : &w->desc, w->no_outobj ? NULL : &w->created);
    case HF_RESERVE: return nb_hash_reserve(c->a_hash, c->items);
    case HF_INSERT:
        return nb_hash_insert(c->a_hash, c->w.a_pos, c->uval, c->w.filter, c->a_outhandle);
    case HF_MOVE: return nb_hash_move(c->a_hash, c->handle, c->w.a_pos);
    case HF_REMOVE: return nb_hash_remove(c->a_hash, c->handle);
    case HF_GET: return nb_hash_get(c->a_hash, c->handle, c->a_gpos, c->a_guser, c->a_gfilter);
    case HF_SET: return nb_hash_set(c->a_hash, c->handle, c->uval, c->w.filter);
    case HF_VISIT_ALL: return nb_hash_visit_all(c->a_hash, VISIT(c, on_hit), c->w.user);
    case HF_QUERY_RADIUS:
        return nb_hash_query_radius(c->a_hash, c->w.a_center, c->w.radius, c->w.filter,
                                    OUT(c, hits), c->w.cap32, c->w.a_found32);
    case HF_VISIT_RADIUS:
        return nb_hash_visit_radius(c->a_hash, c->w.a_center, c->w.radius, c->w.filter,
                                    VISIT(c, on_hit), c->w.user);
    case HF_QUERY_BOX:
        return nb_hash_query_box(c->a_hash, hbox(&c->w, &box), c->w.filter, OUT(c, hits),
                                 c->w.cap32, c->w.a_found32);
    case HF_VISIT_BOX:
        return nb_hash_visit_box(c->a_hash, hbox(&c->w, &box), c->w.filter, VISIT(c, on_hit),
                                 c->w.user);
    case HF_KNN:
        return nb_hash_knn(c->a_hash, c->w.a_center, c->w.filter, c->w.max_distance, OUT(c, nn),
                           c->w.k, c->w.a_found32);
    case HF_VISIT_KNN:
        return nb_hash_visit_knn(c->a_hash, c->w.a_center, c->w.filter, c->w.max_distance, c->w.k,
                                 VISIT(c, on_hit_nn), c->w.user);
    case HF_QUERY_NEIGHBORS:
        return nb_hash_query_neighbors(c->a_hash, c->handle, c->w.radius, c->w.filter, OUT(c, hits),
                                       c->w.cap32, c->w.a_found32);
    case HF_VISIT_NEIGHBORS:
        return nb_hash_visit_neighbors(c->a_hash, c->handle, c->w.radius, c->w.filter,
                                       VISIT(c, on_hit), c->w.user);
    case HF_PAIRS:
        return nb_hash_pairs(c->a_hash, c->w.radius, OUT(c, pairs), c->w.cap64, c->w.a_found64);
    case HF_COUNT_PAIRS: return nb_hash_count_pairs(c->a_hash, c->w.radius, c->w.a_found64);
    case HF_VISIT_PAIRS:
        return nb_hash_visit_pairs(c->a_hash, c->w.radius, VISIT(c, on_hpair), c->w.user);
    case HF_CROSS_PAIRS:
        return nb_hash_cross_pairs(c->a_hash, c->w.radius, c->mask_a, c->mask_b, OUT(c, pairs),
                                   c->w.cap64, c->w.a_found64);
    case HF_COUNT_CROSS_PAIRS:
        return nb_hash_count_cross_pairs(c->a_hash, c->w.radius, c->mask_a, c->mask_b,
                                         c->w.a_found64);
    case HF_VISIT_CROSS_PAIRS:
        return nb_hash_visit_cross_pairs(c->a_hash, c->w.radius, c->mask_a, c->mask_b,
                                         VISIT(c, on_hpair), c->w.user);
    case HF_VALIDATE: return nb_hash_validate(c->a_hash);
    case HF_MOVE_MANY: {
        const nbHandle items[2] = {c->live2, c->handle};
        double pos[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
        const int d = c->fx->dim;
        if (c->hash != NULL) (void)nb_hash_get(c->hash, c->live2, pos, NULL, NULL); // (none: empty)
        pos[0] += 3.0 * H_CELL;
        if (c->w.a_pos != NULL) memcpy(pos + d, c->w.a_pos, (size_t)d * sizeof(double));
        int32_t moved = -1;
        const nbStatus st =
            nb_hash_move_many(c->a_hash, items, c->w.a_pos != NULL ? pos : NULL, 2, &moved);
        if (moved != (st == NB_OK ? 2 : 0)) return NB_ERR_INTERNAL;
        return st;
    }
    }
    return NB_ERR_INTERNAL;
}

static uint64_t hash_out_key(const World *w, unsigned outs, int64_t t, uint64_t h)
{
    const HCtx *c = (const HCtx *)w;
    if (outs & O_IDX) return mix(h, hit_key(c->hits[t]));
    if (outs & O_PAIRS) return mix(mix(h, hit_key(c->pairs[t].a)), hit_key(c->pairs[t].b));
    return mix(mix(h, hit_key(c->nn[t].hit)), bits_of(c->nn[t].dist2));
}

static const double G_POS = -777.25; // garbage in get's outputs before a call
static const uint64_t G_USER = 0xDEADBEEFu;

// Runs sp's function with the mutations of sets[0..n) applied, -0.0 turned into +0.0 when flip.
static void hash_garbage(World *w)
{
    HCtx *c = (HCtx *)w;
    c->outhandle.bits = 0x7777777777777777u;
    for (int a = 0; a < 3; a++) c->gpos[a] = G_POS;
    c->guser = G_USER;
    c->gfilter.category = c->gfilter.mask = 0x77u;
}

static void hash_finish(Result *r, const Spec *sp, World *w, const void *fxv)
{
    HCtx *c = (HCtx *)w;
    const HFixture *fx = (const HFixture *)fxv;
    const HAnswers now = hanswers(c->hash, c->pairs, c->hits);
    if (sp->outs & (O_MUTATE | O_GET)) { // what the hash answers afterwards
        r->found = now.count;
        r->hash = mix(mix(mix(mix((uint64_t)now.pairs, now.pairs_hash), (uint64_t)now.within),
                          now.within_hash),
                      (uint64_t)now.validate);
    }
    if (c->a_outhandle != NULL && (sp->outs & O_HANDLE_OUT) && c->outhandle.bits != 0) {
        r->outputs_safe = false;
        note(r, "*out handle not null");
    }
    if (sp->outs & O_GET) {
        bool touched =
            c->guser != G_USER || c->gfilter.category != 0x77u || c->gfilter.mask != 0x77u;
        for (int a = 0; a < 3; a++) touched |= bits_of(c->gpos[a]) != bits_of(G_POS);
        if (touched) {
            r->outputs_safe = false;
            note(r, "get's outputs were written, want untouched");
        }
    }
    // the fixture hash: unchanged unless a mutation succeeded; valid always
    r->grid_intact = ((sp->outs & O_MUTATE) && r->st == NB_OK) || same_hanswers(&now, &fx->base);
    if (!r->grid_intact) note(r, "the hash's answers changed");
    if (now.validate != NB_OK) {
        r->grid_intact = false;
        note(r, "nb_hash_validate failed");
    }
}

static const Family hash_family = {
    sizeof(HCtx), "hash",       "item",      hspecs,       LEN(hspecs), hctx_init,   hctx_free,
    hash_apply,   hash_garbage, hash_invoke, hash_out_key, hash_finish, hash_create, hash_destroy,
};

static int run_htable(HFixture *fx)
{
    // the fixture's own answers, once
    HCtx *c = (HCtx *)fresh_world(&hash_family, fx);
    NB_CHECK(c != NULL);
    fx->base = hanswers(c->hash, c->pairs, c->hits);
    NB_CHECK(release(&hash_family, &c->w));
    NB_CHECK(fx->base.validate == NB_OK);
    NB_CHECK(fx->base.count == (fx->n > 0 ? fx->n + 1 : 0)); // + the item in the reused slot
    NB_CHECK(fx->n == 0 || (fx->base.pairs > 0 && fx->base.within > 0 && fx->base.cross > 0));

    const Table tb = {&hash_family, fx, fx->name, fx->base.count, true, fx->n > 0};
    return run_specs(&tb);
}

static HFixture hfx_empty = {"hash 2d empty", 2, 0, {0}};
static HFixture hfx_2d = {"hash 2d", 2, HFIX_N2, {0}};
static HFixture hfx_3d = {"hash 3d", 3, HFIX_N3, {0}};

TABLE_TEST(test_hash_table_empty, run_htable, hfx_empty)
TABLE_TEST(test_hash_table_2d, run_htable, hfx_2d)
TABLE_TEST(test_hash_table_3d, run_htable, hfx_3d)

int test_hash_null_tolerant(void)
{
    nb_hash_destroy(NULL);
    nb_hash_clear(NULL);
    NB_CHECK(nb_hash_count(NULL) == 0);
    NB_CHECK(nb_hash_memory_bytes(NULL) == 0);
    nbHashInfo info;
    NB_CHECK_STATUS(nb_hash_info(NULL, &info), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_hash_validate(NULL), NB_ERR_NULL_ARG);
    // the edge used: the desc's, widened by at most a rounding margin
    nbHashDesc desc = {.cell_size = 1.5};
    nbHash *h = NULL;
    NB_CHECK_OK(nb_hash_create(&desc, &h));
    NB_CHECK_STATUS(nb_hash_info(h, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_OK(nb_hash_info(h, &info));
    NB_CHECK(info.cell_size >= 1.5 && info.cell_size < 1.5 * (1.0 + 0x1p-20));
    NB_CHECK(info.dim == 2 && info.count == 0 && info.cells == 0 && !info.hashed);
    NB_CHECK(info.bytes == nb_hash_memory_bytes(h));
    nb_hash_destroy(h);
    return 0;
}

// nb_hash_clear never fails, keeps the storage, and makes every handle stale, also once new
// items hold the old slots.
int test_hash_clear(void)
{
    nbtAlloc stats = {0};
    nbAllocator al = nbt_allocator(&stats);
    nbHandle live = NB_HANDLE_NULL, live2 = NB_HANDLE_NULL;
    nbHash *h = make_hash(&hfx_2d, &al, &live, &live2);
    NB_CHECK(h != NULL);
    const size_t bytes = nb_hash_memory_bytes(h);
    NB_CHECK(bytes > 0);
    nb_hash_clear(h);
    NB_CHECK_OK(nb_hash_validate(h));
    NB_CHECK(nb_hash_count(h) == 0 && nb_hash_memory_bytes(h) == bytes);
    const double p[2] = {0.5, 0.5};
    nbHandle fresh;
    NB_CHECK_OK(nb_hash_insert(h, p, 1, NB_FILTER_ALL, &fresh));
    NB_CHECK((fresh.bits & 0xFFFFFFFFu) == (live.bits & 0xFFFFFFFFu)); // the same slot
    const nbHandle dead[2] = {live, live2};
    for (int i = 0; i < 2; i++) {
        int32_t found = GARBAGE;
        NB_CHECK_STATUS(nb_hash_move(h, dead[i], p), NB_ERR_BAD_HANDLE);
        NB_CHECK_STATUS(nb_hash_set(h, dead[i], 5, NB_FILTER_ALL), NB_ERR_BAD_HANDLE);
        NB_CHECK_STATUS(nb_hash_get(h, dead[i], NULL, NULL, NULL), NB_ERR_BAD_HANDLE);
        NB_CHECK_STATUS(nb_hash_query_neighbors(h, dead[i], R0, NB_FILTER_ALL, NULL, 0, &found),
                        NB_ERR_BAD_HANDLE);
        NB_CHECK(found == 0);
        NB_CHECK_STATUS(nb_hash_remove(h, dead[i]), NB_ERR_BAD_HANDLE);
    }
    NB_CHECK_OK(nb_hash_validate(h));
    NB_CHECK(nb_hash_count(h) == 1);
    nb_hash_destroy(h);
    NB_CHECK(stats.live_bytes == 0);
    return 0;
}

int test_hash_half_allocator(void)
{
    return half_allocator(&hash_family, H_CELL);
}
