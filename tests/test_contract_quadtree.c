// SPDX-License-Identifier: MIT
// The quadtree's contract cases (include/nearby/quadtree.h).
#include "contract.h"

// ---- the quadtree (nb_quadtree_*) ----
//
// One fixture tree (rectangles of mixed sizes, filter bits, one in the outside list), a stale
// handle and a foreign one. Each case calls one function with one kind of bad argument (or an
// accepted edge value) and states the status; it is a case of the stored-item runner
// (item_case, contract.h), which checks the outputs, the callbacks, and that the tree validates
// and holds exactly what it held (a fingerprint of every rectangle).

static nbQuadtree *qt_of(const ItemFix *f)
{
    return (nbQuadtree *)f->s;
}

static uint64_t qt_fingerprint(const ItemFix *fx)
{
    const nbQuadtree *t = qt_of(fx);
    uint64_t h = 1469598103934665603u ^ (uint64_t)nb_quadtree_count(t);
    const double inf = D_INF;
    const nbRect all = {{-inf, -inf}, {inf, inf}};
    nbHit hits[128];
    int32_t found = 0;
    if (nb_quadtree_query_box(t, NBT_RECT_BOX(&all), NB_FILTER_ALL, hits, 128, &found) != NB_OK)
        return 0;
    for (int32_t i = 0; i < found; i++) {
        nbRect r;
        nbFilter f;
        nb_quadtree_get(t, hits[i].handle, &r, NULL, &f);
        uint64_t v[6] = {hits[i].handle.bits, hits[i].user, bits_of(r.min[0]),
                         bits_of(r.max[1]),   f.category,   f.mask};
        uint64_t e = 0;
        for (int k = 0; k < 6; k++) e = mix(e, v[k]);
        h += e; // order-free
    }
    return h;
}

// What a create case writes (the runner's ItemOuts holds it as a void *).
static nbQuadtree *qt_created;
#define QT_CREATED(o) ((o)->passed |= IO_CREATE, &qt_created)

// A node visitor for nb_quadtree_visit_nodes's cases: counted as a visit, as item_on_hit is.
static bool qt_on_node(const nbQuadtreeNode *node, void *user)
{
    (void)node;
    (void)user;
    item_visits++;
    return true;
}

// Calls case `id` on the fixture fx.
static nbStatus qt_call(int id, const ItemFix *fx, ItemOuts *o)
{
    static nbHit hits[128];
    static nbHitNeighbor nn[16];
    static nbRayHit rays[16];
    static nbHitPair pairs[1024];
    static nbRect rects[10];
    nbtAlloc stats = {0};
    nbAllocator half = {nbt_alloc_fn, NULL, &stats};
    const double inf = D_INF, nan = D_NAN;
    const nbRect ok = {{0.0, 0.0}, {1.0, 1.0}};
    const nbRect nanr = {{0.0, nan}, {1.0, 1.0}};
    const nbRect infr = {{0.0, 0.0}, {inf, 1.0}};
    const nbRect inv = {{2.0, 0.0}, {1.0, 1.0}};
    const nbRect inv_nan = {{2.0, 0.0}, {1.0, nan}};
    const double p[2] = {0.5, 0.5}, pnan[2] = {nan, 0.0}, pinf[2] = {0.0, -inf};
    const double dir[2] = {1.0, 0.25}, dzero[2] = {0.0, -0.0}, dinf[2] = {inf, 0.0};
    nbQuadtreeDesc d = {0};
    nbQuadtree *t = qt_of(fx);
    for (int i = 0; i < 10; i++) rects[i] = (nbRect){{i * 1.0, 0.0}, {i + 0.5, 1.0}};
    switch (id) {
    // create
    case 0: return nb_quadtree_create(NULL, QT_CREATED(o));
    case 1: return nb_quadtree_create(&d, NULL);
    case 2: d.allocator = &half; return nb_quadtree_create(&d, QT_CREATED(o));
    case 3: d.bounds = nanr; return nb_quadtree_create(&d, QT_CREATED(o));
    case 4: d.bounds = infr; return nb_quadtree_create(&d, QT_CREATED(o));
    case 5: d.bounds = inv; return nb_quadtree_create(&d, QT_CREATED(o));
    case 6:
        d.bounds = (nbRect){{0.0, 0.0}, {0.0, 1.0}};
        return nb_quadtree_create(&d, QT_CREATED(o));
    case 7: d.split_threshold = -1; return nb_quadtree_create(&d, QT_CREATED(o));
    case 8: d.split_threshold = (1 << 20) + 1; return nb_quadtree_create(&d, QT_CREATED(o));
    case 9: d.max_depth = NB_QUADTREE_MAX_DEPTH + 1; return nb_quadtree_create(&d, QT_CREATED(o));
    case 10: d.max_depth = -1; return nb_quadtree_create(&d, QT_CREATED(o));
    case 11: d.placement = 3; return nb_quadtree_create(&d, QT_CREATED(o));
    case 12: d.capacity_hint = -1; return nb_quadtree_create(&d, QT_CREATED(o));
    case 13: d.capacity_hint = (1 << 28) + 1; return nb_quadtree_create(&d, QT_CREATED(o));
    case 14:
        d.bounds = inv_nan;
        d.max_depth = -1;
        return nb_quadtree_create(&d, QT_CREATED(o));
    case 15:
        d.bounds = (nbRect){{-DBL_MAX, 0.0}, {DBL_MAX, 1.0}};
        return nb_quadtree_create(&d, QT_CREATED(o));
    // reserve, info, validate
    case 20: return nb_quadtree_reserve(NULL, 10);
    case 21: return nb_quadtree_reserve(t, -1);
    case 22: return nb_quadtree_reserve(t, (1 << 28) + 1);
    case 23: return nb_quadtree_info(NULL, &(nbQuadtreeInfo){0});
    case 24: return nb_quadtree_info(t, NULL);
    case 25: return nb_quadtree_validate(NULL);
    case 26: return nb_quadtree_visit_nodes(NULL, qt_on_node, NULL);
    case 27: return nb_quadtree_visit_nodes(qt_of(fx), NULL, NULL);
    // insert
    case 30: return nb_quadtree_insert(NULL, &ok, 1, NB_FILTER_ALL, ITEM_HANDLE(o));
    case 31: return nb_quadtree_insert(t, NULL, 1, NB_FILTER_ALL, ITEM_HANDLE(o));
    case 32: return nb_quadtree_insert(t, &ok, 1, NB_FILTER_ALL, NULL);
    case 33: return nb_quadtree_insert(t, &nanr, 1, NB_FILTER_ALL, ITEM_HANDLE(o));
    case 34: return nb_quadtree_insert(t, &infr, 1, NB_FILTER_ALL, ITEM_HANDLE(o));
    case 35: return nb_quadtree_insert(t, &inv, 1, NB_FILTER_ALL, ITEM_HANDLE(o));
    case 36: return nb_quadtree_insert(t, &inv_nan, 1, NB_FILTER_ALL, ITEM_HANDLE(o));
    // build
    case 40: return nb_quadtree_build(NULL, rects, 10, NULL, NULL, NULL);
    case 41: return nb_quadtree_build(t, NULL, 3, NULL, NULL, NULL);
    case 42: return nb_quadtree_build(t, rects, -1, NULL, NULL, NULL);
    case 43: rects[5] = nanr; return nb_quadtree_build(t, rects, 10, NULL, NULL, NULL);
    case 44: rects[7] = inv; return nb_quadtree_build(t, rects, 10, NULL, NULL, NULL);
    case 45:
        rects[2] = inv;
        rects[8] = infr;
        return nb_quadtree_build(t, rects, 10, NULL, NULL, NULL);
    case 46: return nb_quadtree_build(t, rects, (1 << 28) + 1, NULL, NULL, NULL);
    // move, remove, get, set
    case 50: return nb_quadtree_move(NULL, fx->live, &ok);
    case 51: return nb_quadtree_move(t, fx->live, NULL);
    case 52: return nb_quadtree_move(t, fx->stale, &ok);
    case 53: return nb_quadtree_move(t, fx->foreign, &ok);
    case 54: return nb_quadtree_move(t, NB_HANDLE_NULL, &ok);
    case 55: return nb_quadtree_move(t, fx->live, &nanr);
    case 56: return nb_quadtree_move(t, fx->live, &inv);
    case 57: return nb_quadtree_move(t, fx->stale, &nanr);
    case 58: return nb_quadtree_move(t, fx->live, &inv_nan);
    case 60: return nb_quadtree_remove(NULL, fx->live);
    case 61: return nb_quadtree_remove(t, fx->stale);
    case 62: return nb_quadtree_remove(t, fx->foreign);
    case 63: return nb_quadtree_remove(t, (nbHandle){0xFFFFFFFFu});
    case 64: return nb_quadtree_get(NULL, fx->live, NULL, NULL, NULL);
    case 65: return nb_quadtree_get(t, fx->stale, NULL, NULL, NULL);
    case 66: return nb_quadtree_set(NULL, fx->live, 1, NB_FILTER_ALL);
    case 67: return nb_quadtree_set(t, fx->foreign, 1, NB_FILTER_ALL);
    case 68: return nb_quadtree_visit_all(NULL, item_on_hit, NULL);
    case 69: return nb_quadtree_visit_all(t, NULL, NULL);
    // window, point, radius
    case 70:
        return nb_quadtree_query_box(NULL, NBT_RECT_BOX(&ok), NB_FILTER_ALL, hits, 128,
                                     ITEM_FOUND(o));
    case 71: return nb_quadtree_query_box(t, NULL, NB_FILTER_ALL, hits, 128, ITEM_FOUND(o));
    case 72: return nb_quadtree_query_box(t, NBT_RECT_BOX(&ok), NB_FILTER_ALL, hits, 128, NULL);
    case 73:
        return nb_quadtree_query_box(t, NBT_RECT_BOX(&ok), NB_FILTER_ALL, NULL, 4, ITEM_FOUND(o));
    case 74:
        return nb_quadtree_query_box(t, NBT_RECT_BOX(&nanr), NB_FILTER_ALL, hits, 128,
                                     ITEM_FOUND(o));
    case 75:
        return nb_quadtree_query_box(t, NBT_RECT_BOX(&inv), NB_FILTER_ALL, hits, 128,
                                     ITEM_FOUND(o));
    case 76:
        return nb_quadtree_query_box(t, NBT_RECT_BOX(&ok), NB_FILTER_ALL, hits, -1, ITEM_FOUND(o));
    case 77:
        return nb_quadtree_query_box(t, NBT_RECT_BOX(&inv_nan), NB_FILTER_ALL, hits, -1,
                                     ITEM_FOUND(o));
    case 78: return nb_quadtree_visit_box(t, NBT_RECT_BOX(&ok), NB_FILTER_ALL, NULL, NULL);
    case 79: return nb_quadtree_visit_box(t, NBT_RECT_BOX(&nanr), NB_FILTER_ALL, item_on_hit, NULL);
    case 80:
        return nb_quadtree_visit_box(NULL, NBT_RECT_BOX(&ok), NB_FILTER_ALL, item_on_hit, NULL);
    case 81: return nb_quadtree_query_point(t, NULL, NB_FILTER_ALL, hits, 128, ITEM_FOUND(o));
    case 82: return nb_quadtree_query_point(t, pnan, NB_FILTER_ALL, hits, 128, ITEM_FOUND(o));
    case 83: return nb_quadtree_query_point(t, pinf, NB_FILTER_ALL, hits, 128, ITEM_FOUND(o));
    case 84: return nb_quadtree_query_point(t, p, NB_FILTER_ALL, hits, -1, ITEM_FOUND(o));
    case 85: return nb_quadtree_query_radius(t, pnan, 1.0, NB_FILTER_ALL, hits, 128, ITEM_FOUND(o));
    case 86: return nb_quadtree_query_radius(t, p, inf, NB_FILTER_ALL, hits, 128, ITEM_FOUND(o));
    case 87: return nb_quadtree_query_radius(t, p, -1.0, NB_FILTER_ALL, hits, 128, ITEM_FOUND(o));
    case 88: return nb_quadtree_query_radius(t, p, nan, NB_FILTER_ALL, hits, -1, ITEM_FOUND(o));
    case 89: return nb_quadtree_query_radius(t, NULL, 1.0, NB_FILTER_ALL, hits, 128, ITEM_FOUND(o));
    case 90: return nb_quadtree_visit_radius(t, p, -1.0, NB_FILTER_ALL, item_on_hit, NULL);
    case 91: return nb_quadtree_visit_radius(t, p, 1.0, NB_FILTER_ALL, NULL, NULL);
    case 92: return nb_quadtree_visit_radius(t, pnan, 1.0, NB_FILTER_ALL, item_on_hit, NULL);
    case 93: return nb_quadtree_visit_point(t, NULL, NB_FILTER_ALL, item_on_hit, NULL);
    case 94: return nb_quadtree_visit_point(t, pinf, NB_FILTER_ALL, item_on_hit, NULL);
    case 95: return nb_quadtree_visit_point(NULL, p, NB_FILTER_ALL, item_on_hit, NULL);
    case 96: return nb_quadtree_visit_point(t, p, NB_FILTER_ALL, NULL, NULL);
    // kNN and rays
    case 100: return nb_quadtree_knn(t, p, NB_FILTER_ALL, inf, NULL, 3, ITEM_FOUND(o));
    case 101: return nb_quadtree_knn(t, pnan, NB_FILTER_ALL, inf, nn, 3, ITEM_FOUND(o));
    case 102: return nb_quadtree_knn(t, p, NB_FILTER_ALL, nan, nn, 3, ITEM_FOUND(o));
    case 103: return nb_quadtree_knn(t, p, NB_FILTER_ALL, inf, nn, -1, ITEM_FOUND(o));
    case 104: return nb_quadtree_knn(t, p, NB_FILTER_ALL, -1.0, nn, 3, ITEM_FOUND(o));
    case 105: return nb_quadtree_knn(NULL, p, NB_FILTER_ALL, inf, nn, 3, ITEM_FOUND(o));
    case 106: return nb_quadtree_knn(t, p, NB_FILTER_ALL, inf, nn, 3, NULL);
    case 107: return nb_quadtree_visit_knn(t, NULL, NB_FILTER_ALL, inf, 3, item_on_neighbor, NULL);
    case 108: return nb_quadtree_visit_knn(t, pnan, NB_FILTER_ALL, -1.0, 3, item_on_neighbor, NULL);
    case 109: return nb_quadtree_visit_knn(t, p, NB_FILTER_ALL, nan, -1, item_on_neighbor, NULL);
    case 97: return nb_quadtree_visit_knn(t, p, NB_FILTER_ALL, inf, -1, item_on_neighbor, NULL);
    case 98: return nb_quadtree_visit_knn(t, p, NB_FILTER_ALL, -1.0, 3, NULL, NULL);
    case 110: return nb_quadtree_raycast(t, p, dir, inf, NB_FILTER_ALL, NULL, ITEM_FOUND(o));
    case 111: return nb_quadtree_raycast(t, pnan, dir, inf, NB_FILTER_ALL, rays, ITEM_FOUND(o));
    case 112: return nb_quadtree_raycast(t, p, dinf, inf, NB_FILTER_ALL, rays, ITEM_FOUND(o));
    case 113: return nb_quadtree_raycast(t, p, dzero, inf, NB_FILTER_ALL, rays, ITEM_FOUND(o));
    case 114: return nb_quadtree_raycast(t, p, dir, nan, NB_FILTER_ALL, rays, ITEM_FOUND(o));
    case 115: return nb_quadtree_raycast(t, p, dir, -1.0, NB_FILTER_ALL, rays, ITEM_FOUND(o));
    case 116: return nb_quadtree_raycast(t, p, NULL, 1.0, NB_FILTER_ALL, rays, ITEM_FOUND(o));
    case 117:
        return nb_quadtree_raycast_all(t, p, dir, inf, NB_FILTER_ALL, rays, -1, ITEM_FOUND(o));
    case 118:
        return nb_quadtree_raycast_all(t, p, dzero, inf, NB_FILTER_ALL, rays, 16, ITEM_FOUND(o));
    case 119: return nb_quadtree_raycast_all(t, p, dir, inf, NB_FILTER_ALL, NULL, 4, ITEM_FOUND(o));
    case 120:
        return nb_quadtree_raycast_all(t, pinf, dzero, inf, NB_FILTER_ALL, rays, -1, ITEM_FOUND(o));
    case 121:
        return nb_quadtree_raycast_all(NULL, p, dir, inf, NB_FILTER_ALL, rays, 16, ITEM_FOUND(o));
    case 122:
        return nb_quadtree_visit_raycast_all(NULL, p, dir, inf, NB_FILTER_ALL, item_on_neighbor,
                                             NULL);
    case 123: return nb_quadtree_visit_raycast_all(t, p, dir, inf, NB_FILTER_ALL, NULL, NULL);
    case 124:
        return nb_quadtree_visit_raycast_all(t, pnan, dir, -1.0, NB_FILTER_ALL, item_on_neighbor,
                                             NULL);
    case 125:
        return nb_quadtree_visit_raycast_all(t, p, dzero, inf, NB_FILTER_ALL, item_on_neighbor,
                                             NULL);
    case 126:
        return nb_quadtree_visit_raycast_all(t, p, dir, nan, NB_FILTER_ALL, item_on_neighbor, NULL);
    case 127:
        return nb_quadtree_visit_raycast_all(t, p, dir, -1.0, NB_FILTER_ALL, item_on_neighbor,
                                             NULL);
    case 128:
        return nb_quadtree_visit_raycast_all(t, p, NULL, 1.0, NB_FILTER_ALL, item_on_neighbor,
                                             NULL);
    case 129:
        return nb_quadtree_visit_raycast_all(t, p, dir, 0.0, NB_FILTER_ALL, item_on_neighbor, NULL);
    // pairs and cross pairs
    case 130: return nb_quadtree_pairs(NULL, pairs, 1024, ITEM_FOUND64(o));
    case 131: return nb_quadtree_pairs(t, pairs, 1024, NULL);
    case 132: return nb_quadtree_pairs(t, NULL, 5, ITEM_FOUND64(o));
    case 133: return nb_quadtree_pairs(t, pairs, -1, ITEM_FOUND64(o));
    case 134: return nb_quadtree_count_pairs(NULL, ITEM_FOUND64(o));
    case 135: return nb_quadtree_count_pairs(t, NULL);
    case 136: return nb_quadtree_visit_pairs(t, NULL, NULL);
    case 137: return nb_quadtree_visit_pairs(NULL, item_on_pair, NULL);
    case 140: return nb_quadtree_cross_pairs(NULL, 1u, 2u, pairs, 1024, ITEM_FOUND64(o));
    case 141: return nb_quadtree_cross_pairs(t, 1u, 2u, NULL, 5, ITEM_FOUND64(o));
    case 142: return nb_quadtree_cross_pairs(t, 1u, 2u, pairs, -1, ITEM_FOUND64(o));
    case 143: return nb_quadtree_count_cross_pairs(t, 1u, 2u, NULL);
    case 144: return nb_quadtree_count_cross_pairs(NULL, 1u, 2u, ITEM_FOUND64(o));
    case 145: return nb_quadtree_visit_cross_pairs(t, 1u, 2u, NULL, NULL);
    case 146: return nb_quadtree_visit_cross_pairs(NULL, 1u, 2u, item_on_pair, NULL);
    // accepted edge values
    case 150:
        return nb_quadtree_query_box(t, &(nbBox){{-inf, -inf}, {inf, inf}}, NB_FILTER_ALL, hits,
                                     128, ITEM_FOUND(o));
    case 151: return nb_quadtree_query_radius(t, p, -0.0, NB_FILTER_ALL, hits, 128, ITEM_FOUND(o));
    case 152: return nb_quadtree_knn(t, p, NB_FILTER_ALL, inf, NULL, 0, ITEM_FOUND(o));
    case 153: return nb_quadtree_raycast_all(t, p, dir, 0.0, NB_FILTER_ALL, NULL, 0, ITEM_FOUND(o));
    case 154: return nb_quadtree_count_pairs(t, ITEM_FOUND64(o));
    case 155: return nb_quadtree_count_cross_pairs(t, 0u, 0u, ITEM_FOUND64(o));
    case 156: return nb_quadtree_reserve(t, 0);
    // move_many: every entry is checked before anything moves (*moved in o->found)
    case 160: return nb_quadtree_move_many(NULL, &fx->live, &ok, 1, ITEM_FOUND(o));
    case 161: return nb_quadtree_move_many(t, NULL, &ok, 1, ITEM_FOUND(o));
    case 162: return nb_quadtree_move_many(t, &fx->live, NULL, 1, ITEM_FOUND(o));
    case 163: return nb_quadtree_move_many(t, &fx->live, &ok, -1, ITEM_FOUND(o));
    case 164:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->live, fx->stale}, (nbRect[]){ok, ok}, 2,
                                     ITEM_FOUND(o));
    case 165:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->live, fx->foreign}, (nbRect[]){ok, ok}, 2,
                                     ITEM_FOUND(o));
    case 166:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->live, NB_HANDLE_NULL}, (nbRect[]){ok, ok},
                                     2, ITEM_FOUND(o));
    case 167:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->live, fx->live}, (nbRect[]){ok, nanr}, 2,
                                     ITEM_FOUND(o));
    case 168:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->live, fx->live}, (nbRect[]){ok, inv}, 2,
                                     ITEM_FOUND(o));
    case 169:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->stale, fx->live}, (nbRect[]){ok, nanr}, 2,
                                     ITEM_FOUND(o));
    case 170: return nb_quadtree_move_many(t, &fx->live, &inv_nan, 1, ITEM_FOUND(o));
    case 171:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->live, fx->live}, (nbRect[]){infr, ok}, 2,
                                     ITEM_FOUND(o));
    case 172:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->live, (nbHandle){0xFFFFFFFFu}},
                                     (nbRect[]){ok, ok}, 2, NULL);
    case 173: return nb_quadtree_move_many(t, NULL, NULL, 0, ITEM_FOUND(o));
    case 174: return nb_quadtree_move_many(t, NULL, NULL, 0, NULL);
    default: return NB_STATUS_COUNT;
    }
}

typedef struct QtCase {
    int id;
    nbStatus want;
} QtCase;

static const QtCase qt_cases[] = {
    {0, NB_ERR_NULL_ARG},
    {1, NB_ERR_NULL_ARG},
    {2, NB_ERR_NULL_ARG},
    {3, NB_ERR_NOT_FINITE},
    {4, NB_ERR_NOT_FINITE},
    {5, NB_ERR_OUT_OF_RANGE},
    {6, NB_ERR_OUT_OF_RANGE},
    {7, NB_ERR_OUT_OF_RANGE},
    {8, NB_ERR_OUT_OF_RANGE},
    {9, NB_ERR_OUT_OF_RANGE},
    {10, NB_ERR_OUT_OF_RANGE},
    {11, NB_ERR_OUT_OF_RANGE},
    {12, NB_ERR_OUT_OF_RANGE},
    {13, NB_ERR_OUT_OF_RANGE},
    {14, NB_ERR_NOT_FINITE},
    {15, NB_ERR_OUT_OF_RANGE},
    {20, NB_ERR_NULL_ARG},
    {21, NB_ERR_OUT_OF_RANGE},
    {22, NB_ERR_OUT_OF_RANGE},
    {23, NB_ERR_NULL_ARG},
    {24, NB_ERR_NULL_ARG},
    {25, NB_ERR_NULL_ARG},
    {26, NB_ERR_NULL_ARG},
    {27, NB_ERR_NULL_ARG},
    {30, NB_ERR_NULL_ARG},
    {31, NB_ERR_NULL_ARG},
    {32, NB_ERR_NULL_ARG},
    {33, NB_ERR_NOT_FINITE},
    {34, NB_ERR_NOT_FINITE},
    {35, NB_ERR_OUT_OF_RANGE},
    {36, NB_ERR_NOT_FINITE},
    {40, NB_ERR_NULL_ARG},
    {41, NB_ERR_NULL_ARG},
    {42, NB_ERR_OUT_OF_RANGE},
    {43, NB_ERR_NOT_FINITE},
    {44, NB_ERR_OUT_OF_RANGE},
    {45, NB_ERR_OUT_OF_RANGE}, // the first bad rectangle decides: inverted before infinite
    {46, NB_ERR_OUT_OF_RANGE},
    {50, NB_ERR_NULL_ARG},
    {51, NB_ERR_NULL_ARG},
    {52, NB_ERR_BAD_HANDLE},
    {53, NB_ERR_BAD_HANDLE},
    {54, NB_ERR_BAD_HANDLE},
    {55, NB_ERR_NOT_FINITE},
    {56, NB_ERR_OUT_OF_RANGE},
    {57, NB_ERR_BAD_HANDLE},
    {58, NB_ERR_NOT_FINITE},
    {60, NB_ERR_NULL_ARG},
    {61, NB_ERR_BAD_HANDLE},
    {62, NB_ERR_BAD_HANDLE},
    {63, NB_ERR_BAD_HANDLE},
    {64, NB_ERR_NULL_ARG},
    {65, NB_ERR_BAD_HANDLE},
    {66, NB_ERR_NULL_ARG},
    {67, NB_ERR_BAD_HANDLE},
    {68, NB_ERR_NULL_ARG},
    {69, NB_ERR_NULL_ARG},
    {70, NB_ERR_NULL_ARG},
    {71, NB_ERR_NULL_ARG},
    {72, NB_ERR_NULL_ARG},
    {73, NB_ERR_NULL_ARG},
    {74, NB_ERR_NOT_FINITE},
    {75, NB_ERR_OUT_OF_RANGE},
    {76, NB_ERR_OUT_OF_RANGE},
    {77, NB_ERR_NOT_FINITE},
    {78, NB_ERR_NULL_ARG},
    {79, NB_ERR_NOT_FINITE},
    {80, NB_ERR_NULL_ARG},
    {81, NB_ERR_NULL_ARG},
    {82, NB_ERR_NOT_FINITE},
    {83, NB_ERR_NOT_FINITE},
    {84, NB_ERR_OUT_OF_RANGE},
    {85, NB_ERR_NOT_FINITE},
    {86, NB_ERR_NOT_FINITE},
    {87, NB_ERR_OUT_OF_RANGE},
    {88, NB_ERR_NOT_FINITE},
    {89, NB_ERR_NULL_ARG},
    {90, NB_ERR_OUT_OF_RANGE},
    {91, NB_ERR_NULL_ARG},
    {92, NB_ERR_NOT_FINITE},
    {93, NB_ERR_NULL_ARG},
    {94, NB_ERR_NOT_FINITE},
    {95, NB_ERR_NULL_ARG},
    {96, NB_ERR_NULL_ARG},
    {100, NB_ERR_NULL_ARG},
    {101, NB_ERR_NOT_FINITE},
    {102, NB_ERR_NOT_FINITE},
    {103, NB_ERR_OUT_OF_RANGE},
    {104, NB_ERR_OUT_OF_RANGE},
    {105, NB_ERR_NULL_ARG},
    {106, NB_ERR_NULL_ARG},
    {107, NB_ERR_NULL_ARG},
    {108, NB_ERR_NOT_FINITE},
    {109, NB_ERR_NOT_FINITE},
    {97, NB_ERR_OUT_OF_RANGE},
    {98, NB_ERR_NULL_ARG},
    {110, NB_ERR_NULL_ARG},
    {111, NB_ERR_NOT_FINITE},
    {112, NB_ERR_NOT_FINITE},
    {113, NB_ERR_OUT_OF_RANGE},
    {114, NB_ERR_NOT_FINITE},
    {115, NB_ERR_OUT_OF_RANGE},
    {116, NB_ERR_NULL_ARG},
    {117, NB_ERR_OUT_OF_RANGE},
    {118, NB_ERR_OUT_OF_RANGE},
    {119, NB_ERR_NULL_ARG},
    {120, NB_ERR_NOT_FINITE},
    {121, NB_ERR_NULL_ARG},
    {122, NB_ERR_NULL_ARG},
    {123, NB_ERR_NULL_ARG},
    {124, NB_ERR_NOT_FINITE},
    {125, NB_ERR_OUT_OF_RANGE},
    {126, NB_ERR_NOT_FINITE},
    {127, NB_ERR_OUT_OF_RANGE},
    {128, NB_ERR_NULL_ARG},
    {129, NB_OK},
    {130, NB_ERR_NULL_ARG},
    {131, NB_ERR_NULL_ARG},
    {132, NB_ERR_NULL_ARG},
    {133, NB_ERR_OUT_OF_RANGE},
    {134, NB_ERR_NULL_ARG},
    {135, NB_ERR_NULL_ARG},
    {136, NB_ERR_NULL_ARG},
    {137, NB_ERR_NULL_ARG},
    {140, NB_ERR_NULL_ARG},
    {141, NB_ERR_NULL_ARG},
    {142, NB_ERR_OUT_OF_RANGE},
    {143, NB_ERR_NULL_ARG},
    {144, NB_ERR_NULL_ARG},
    {145, NB_ERR_NULL_ARG},
    {146, NB_ERR_NULL_ARG},
    {150, NB_OK},
    {151, NB_OK},
    {152, NB_OK},
    {153, NB_OK},
    {154, NB_OK},
    {155, NB_OK},
    {156, NB_OK},
    {160, NB_ERR_NULL_ARG},
    {161, NB_ERR_NULL_ARG},
    {162, NB_ERR_NULL_ARG},
    {163, NB_ERR_OUT_OF_RANGE},
    {164, NB_ERR_BAD_HANDLE},
    {165, NB_ERR_BAD_HANDLE},
    {166, NB_ERR_BAD_HANDLE},
    {167, NB_ERR_NOT_FINITE},
    {168, NB_ERR_OUT_OF_RANGE},
    {169, NB_ERR_BAD_HANDLE},
    {170, NB_ERR_NOT_FINITE},
    {171, NB_ERR_NOT_FINITE},
    {172, NB_ERR_BAD_HANDLE},
    {173, NB_OK},
    {174, NB_OK},
};

static int qt_fixture(ItemFix *fx, int dim)
{
    (void)dim;
    memset(fx, 0, sizeof *fx);
    fx->dim = 2;
    fix_rng = 7;
    nbQuadtreeDesc desc = {0};
    desc.split_threshold = 2;
    nbQuadtree *t = NULL, *other = NULL;
    NB_CHECK_OK(nb_quadtree_create(&desc, &t));
    fx->s = t;
    NB_CHECK_OK(nb_quadtree_create(&desc, &other));
    fx->other = other;
    for (int i = 0; i < 40; i++) {
        const double x = fix_unit() * 100.0 - 50.0, y = fix_unit() * 100.0 - 50.0;
        const double w = i % 7 == 0 ? 0.0 : fix_unit() * 10.0;
        const nbRect r = {{x, y}, {x + w, y + 0.5 * w}};
        const nbFilter f = i % 3 == 0   ? (nbFilter){1u, 2u}
                           : i % 3 == 1 ? (nbFilter){2u, 1u}
                                        : NB_FILTER_ALL;
        NB_CHECK_OK(nb_quadtree_insert(t, &r, (uint64_t)i, f, &fx->live));
    }
    const nbRect far = {{1e300, 0.0}, {1e300, 1.0}}; // the outside list
    nbHandle h;
    NB_CHECK_OK(nb_quadtree_insert(t, &far, 99, NB_FILTER_ALL, &h));
    NB_CHECK_OK(nb_quadtree_insert(t, &far, 98, NB_FILTER_ALL, &fx->stale));
    NB_CHECK_OK(nb_quadtree_remove(t, fx->stale));
    NB_CHECK_OK(nb_quadtree_insert(other, &far, 1, NB_FILTER_ALL, &fx->foreign));
    fx->forged.bits = (fx->live.bits & ~(uint64_t)0xFFFFFFFFu) | 5000u;
    return 0;
}

static void qt_fixture_free(ItemFix *fx)
{
    nb_quadtree_destroy(qt_of(fx));
    nb_quadtree_destroy((nbQuadtree *)fx->other);
}

static nbStatus qt_validate(const ItemFix *fx)
{
    return nb_quadtree_validate(qt_of(fx));
}

static void qt_destroy(void *created)
{
    nb_quadtree_destroy((nbQuadtree *)created);
}

static const ItemKind qt_kind = {"quadtree",  qt_fixture,     qt_fixture_free,
                                 qt_validate, qt_fingerprint, qt_destroy};

static nbStatus qt_case_call(const ItemFix *fx, void *args, ItemOuts *o)
{
    qt_created = (nbQuadtree *)o->created;
    const nbStatus st = qt_call(*(const int *)args, fx, o);
    o->created = qt_created;
    return st;
}

int test_quadtree_table(void)
{
    int failed = 0;
    for (size_t c = 0; c < sizeof qt_cases / sizeof qt_cases[0]; c++) {
        int id = qt_cases[c].id;
        char label[32];
        snprintf(label, sizeof label, "case %d", id);
        failed += item_case(&qt_kind, 2, label, qt_case_call, &id, qt_cases[c].want, false);
    }
    NB_CHECK(failed == 0);
    ItemFix fx;
    NB_CHECK(qt_fixture(&fx, 2) == 0);
    // Outputs the calls above left as garbage because their pointer was the NULL one: each
    // found / handle output must be zeroed even when a later check fails.
    int32_t found = GARBAGE;
    NB_CHECK_STATUS(nb_quadtree_query_box(qt_of(&fx), NULL, NB_FILTER_ALL, NULL, 0, &found),
                    NB_ERR_NULL_ARG);
    NB_CHECK(found == 0);
    nbHandle hh = {ITEM_GARBAGE_BITS};
    const nbRect bad = {{D_NAN, 0.0}, {1.0, 1.0}};
    NB_CHECK_STATUS(nb_quadtree_insert(qt_of(&fx), &bad, 0, NB_FILTER_ALL, &hh), NB_ERR_NOT_FINITE);
    NB_CHECK(hh.bits == 0);
    int32_t moved = GARBAGE; // a batch refused at any check says it moved nothing
    NB_CHECK_STATUS(nb_quadtree_move_many(NULL, NULL, NULL, 1, &moved), NB_ERR_NULL_ARG);
    NB_CHECK(moved == 0);
    moved = GARBAGE;
    NB_CHECK_STATUS(nb_quadtree_move_many(qt_of(&fx), &fx.live, &bad, 1, &moved),
                    NB_ERR_NOT_FINITE);
    NB_CHECK(moved == 0);
    moved = GARBAGE;
    NB_CHECK_OK(nb_quadtree_move_many(qt_of(&fx), NULL, NULL, 0, &moved));
    NB_CHECK(moved == 0);
    NB_CHECK(nb_quadtree_count(NULL) == 0 && nb_quadtree_memory_bytes(NULL) == 0);
    nb_quadtree_clear(NULL);
    nb_quadtree_destroy(NULL);
    qt_fixture_free(&fx);
    return 0;
}
