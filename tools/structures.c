// SPDX-License-Identifier: MIT
// The structure table and each structure's adapters. An adapter only turns the table's
// `void *` index into the structure's own type and forwards to its public API; anything the
// commands share (sorting, checking, printing) stays in the commands. To add a structure,
// write its adapters below and add its row to `structures`: the row's non-NULL query adapters
// are what it supports, and the help lists it under every command it can run.
#include "structures.h"

#include <nearby/grid.h>
#include <nearby/hash.h>
#include <nearby/quadtree.h>
#include <nearby/tiles.h>

#include <float.h>
#include <math.h>

#include <stdlib.h>
#include <string.h>

#include "cli.h"

// ---------------------------------------------------------------------------------------------
// dense: the uniform grid (nb_grid_*)

static double cli_period[3]; // --period; all 0 = none

void cli_structure_set_period(const double period[3])
{
    for (int a = 0; a < 3; a++) cli_period[a] = period[a];
}

static const nbTasks *cli_tasks; // cli_structure_set_tasks

void cli_structure_set_tasks(const nbTasks *tasks)
{
    cli_tasks = tasks;
}

static nbStatus dense_build_points(void **index, const nbPoints *points, double scale)
{
    for (int a = 0; a < 3; a++) // the grid refuses a build radius beyond P / 2
        if (cli_period[a] > 0.0 && scale > 0.5 * cli_period[a]) scale = 0.5 * cli_period[a];
    if (*index != NULL) return nb_grid_build(*index, points, scale);
    // The cell edge is the radius (cell_size 0); the grid itself copes with a radius of 0 or
    // one tiny next to the coordinates (it widens cells or hashes them), so any finite input
    // works.
    nbGridDesc desc = {0};
    desc.dim = points->dim;
    desc.capacity_hint = points->count;
    for (int a = 0; a < points->dim; a++) desc.period[a] = cli_period[a];
    desc.tasks = cli_tasks;
    nbGrid *grid = NULL;
    nbStatus st = nb_grid_create(&desc, &grid);
    if (st != NB_OK) return st;
    st = nb_grid_build(grid, points, scale);
    if (st != NB_OK) {
        nb_grid_destroy(grid);
        return st;
    }
    *index = grid;
    return NB_OK;
}

static void dense_destroy(void *index)
{
    nb_grid_destroy(index);
}

static nbStatus dense_pairs(const void *index, double radius, nbPair *out, int64_t capacity,
                            int64_t *found)
{
    if (out == NULL) return nb_grid_count_pairs(index, radius, found);
    return nb_grid_pairs(index, radius, out, capacity, found);
}

static nbStatus dense_within(const void *index, const double *center, double radius, int32_t *out,
                             int32_t capacity, int32_t *found)
{
    return nb_grid_query_radius(index, center, radius, NB_FILTER_ALL, out, capacity, found);
}

static nbStatus dense_knn(const void *index, const double *point, int32_t k, nbNeighbor *out,
                          int32_t *found)
{
    return nb_grid_knn(index, point, NB_FILTER_ALL, (double)INFINITY, out, k, found);
}

// ---------------------------------------------------------------------------------------------
// The stored-item structures (hash, tiles, and the quadtree's points) speak one vocabulary, so
// one adapter serves them all: point i is the item whose user value is i, inserted in input order
// (slot order, their tie order, is then input order); hits, pairs and kNN answers (nbHit,
// nbHitPair, nbHitNeighbor) narrow to the table's indices. Each structure gives its verbs on a
// `void *` (ITEM_VERBS) and how to create one for a set of points.

typedef struct ItemVerbs {
    nbStatus (*create)(const nbPoints *points, double scale, void **obj);
    void (*destroy)(void *obj);
    nbStatus (*insert)(void *obj, const double *pos, uint64_t user, nbHandle *out);
    // moves every item to its point in one call (NULL: item by item with move)
    nbStatus (*move_many)(void *obj, const nbHandle *items, const double *pos, int32_t count);
    nbStatus (*move)(void *obj, nbHandle item, const double *pos);
    nbStatus (*count_pairs)(const void *obj, double radius, int64_t *count);
    nbStatus (*visit_pairs)(const void *obj, double radius, nbHitPairFn *visit, void *user);
    nbStatus (*visit_radius)(const void *obj, const double *center, double radius, nbHitFn *visit,
                             void *user);
    nbStatus (*knn)(const void *obj, const double *point, nbHitNeighbor *out, int32_t k,
                    int32_t *found);
} ItemVerbs;

// The verbs of nb_<s>_* (type T) that are the same for every stored-item structure.
#define ITEM_VERBS(s, T)                                                                           \
    static void s##_v_destroy(void *obj)                                                           \
    {                                                                                              \
        nb_##s##_destroy((T *)obj);                                                                \
    }                                                                                              \
    static nbStatus s##_v_count_pairs(const void *obj, double radius, int64_t *count)              \
    {                                                                                              \
        return nb_##s##_count_pairs((const T *)obj, radius, count);                                \
    }                                                                                              \
    static nbStatus s##_v_visit_pairs(const void *obj, double radius, nbHitPairFn *visit,          \
                                      void *user)                                                  \
    {                                                                                              \
        return nb_##s##_visit_pairs((const T *)obj, radius, visit, user);                          \
    }                                                                                              \
    static nbStatus s##_v_visit_radius(const void *obj, const double *center, double radius,       \
                                       nbHitFn *visit, void *user)                                 \
    {                                                                                              \
        return nb_##s##_visit_radius((const T *)obj, center, radius, NB_FILTER_ALL, visit, user);  \
    }                                                                                              \
    static nbStatus s##_v_knn(const void *obj, const double *point, nbHitNeighbor *out, int32_t k, \
                              int32_t *found)                                                      \
    {                                                                                              \
        return nb_##s##_knn((const T *)obj, point, NB_FILTER_ALL, (double)INFINITY, out, k,        \
                            found);                                                                \
    }

typedef struct ItemIndex {
    const ItemVerbs *verbs;
    void *obj;
    nbHandle *items; // point i's item
    int32_t count;
} ItemIndex;

static void item_destroy(void *index)
{
    ItemIndex *x = index;
    if (x == NULL) return;
    if (x->obj != NULL) x->verbs->destroy(x->obj);
    free(x->items);
    free(x);
}

static nbStatus item_build(const ItemVerbs *v, void **index, const nbPoints *points, double scale)
{
    ItemIndex *x = *index;
    const double *p = points->data;
    const size_t dim = (size_t)points->dim;
    if (x != NULL && x->count == points->count) { // a rebuild: move every item
        if (v->move_many != NULL) return v->move_many(x->obj, x->items, p, x->count);
        for (int32_t i = 0; i < x->count; i++) {
            const nbStatus st = v->move(x->obj, x->items[i], p + (size_t)i * dim);
            if (st != NB_OK) return st;
        }
        return NB_OK;
    }
    if (x != NULL) return NB_ERR_OUT_OF_RANGE; // the CLI rebuilds only with the same points
    x = calloc(1, sizeof *x);
    if (x == NULL) return NB_ERR_OUT_OF_MEMORY;
    x->verbs = v;
    x->items = malloc(((size_t)points->count + 1) * sizeof(nbHandle));
    nbStatus st = x->items == NULL ? NB_ERR_OUT_OF_MEMORY : v->create(points, scale, &x->obj);
    for (int32_t i = 0; i < points->count && st == NB_OK; i++, x->count++)
        st = v->insert(x->obj, p + (size_t)i * dim, (uint64_t)i, &x->items[i]);
    if (st != NB_OK) {
        item_destroy(x);
        return st;
    }
    *index = x;
    return NB_OK;
}

// Pairs (i < j by point index) into the caller's buffer, counting past its capacity.
typedef struct PairsOut {
    nbPair *out;
    int64_t capacity, found;
} PairsOut;

static bool on_pair(nbHit a, nbHit b, void *user)
{
    PairsOut *o = user;
    if (o->found < o->capacity) {
        o->out[o->found].i = (int32_t)(a.user < b.user ? a.user : b.user);
        o->out[o->found].j = (int32_t)(a.user < b.user ? b.user : a.user);
    }
    o->found++;
    return true;
}

// Hits as indices into the caller's buffer, counting past its capacity.
typedef struct HitsOut {
    int32_t *out;
    int32_t capacity, found;
} HitsOut;

static bool on_hit(nbHit hit, void *user)
{
    HitsOut *o = user;
    if (o->found < o->capacity) o->out[o->found] = (int32_t)hit.user;
    o->found++;
    return true;
}

// The buffer contract after a visit that counted `found` into a buffer of `capacity`.
static nbStatus buffer_status(nbStatus st, int64_t found, int64_t capacity)
{
    if (st != NB_OK) return st;
    return found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

static nbStatus item_pairs(const void *index, double radius, nbPair *out, int64_t capacity,
                           int64_t *found)
{
    const ItemIndex *x = index;
    if (out == NULL) return x->verbs->count_pairs(x->obj, radius, found);
    PairsOut o = {out, capacity, 0};
    const nbStatus st = x->verbs->visit_pairs(x->obj, radius, on_pair, &o);
    *found = st == NB_OK ? o.found : 0;
    return buffer_status(st, o.found, capacity);
}

static nbStatus item_within(const void *index, const double *center, double radius, int32_t *out,
                            int32_t capacity, int32_t *found)
{
    const ItemIndex *x = index;
    HitsOut o = {out, capacity, 0};
    const nbStatus st = x->verbs->visit_radius(x->obj, center, radius, on_hit, &o);
    *found = st == NB_OK ? o.found : 0;
    return buffer_status(st, o.found, capacity);
}

static nbStatus item_knn(const void *index, const double *point, int32_t k, nbNeighbor *out,
                         int32_t *found)
{
    const ItemIndex *x = index;
    *found = 0;
    nbHitNeighbor *wide = malloc(((size_t)(k > 0 ? k : 0) + 1) * sizeof(nbHitNeighbor));
    if (wide == NULL) return NB_ERR_OUT_OF_MEMORY;
    int32_t n = 0;
    const nbStatus st = x->verbs->knn(x->obj, point, wide, k, &n);
    for (int32_t t = 0; t < n && st == NB_OK; t++) {
        out[t].index = (int32_t)wide[t].hit.user;
        out[t].dist2 = wide[t].dist2;
    }
    free(wide);
    if (st == NB_OK) *found = n;
    return st;
}

// ---------------------------------------------------------------------------------------------
// hash: the spatial hash (nb_hash_*), its cell edge the scale (the radius), but at least what
// keeps every coordinate's cell within the cell math's +-2^62 (the dense grid widens its cells
// the same way).

ITEM_VERBS(hash, nbHash)

static nbStatus hash_v_create(const nbPoints *points, double scale, void **obj)
{
    double max_abs = 0.0;
    const size_t values = (size_t)points->count * (size_t)points->dim;
    for (size_t i = 0; i < values; i++) {
        const double x = fabs(points->data[i]);
        max_abs = x > max_abs ? x : max_abs;
    }
    const double floor_cell = max_abs * 0x1p-60;
    const double cell = scale > floor_cell ? scale : floor_cell;
    nbHashDesc desc = {0};
    desc.dim = points->dim;
    desc.cell_size = cell > 0.0 && isfinite(cell) ? cell : 1.0;
    desc.capacity_hint = points->count;
    nbHash *hash = NULL;
    const nbStatus st = nb_hash_create(&desc, &hash);
    *obj = hash;
    return st;
}

static nbStatus hash_v_insert(void *obj, const double *pos, uint64_t user, nbHandle *out)
{
    return nb_hash_insert(obj, pos, user, NB_FILTER_ALL, out);
}

static nbStatus hash_v_move_many(void *obj, const nbHandle *items, const double *pos, int32_t count)
{
    return nb_hash_move_many(obj, items, pos, count, NULL);
}

static const ItemVerbs hash_verbs = {
    hash_v_create,      hash_v_destroy,     hash_v_insert,       hash_v_move_many, NULL,
    hash_v_count_pairs, hash_v_visit_pairs, hash_v_visit_radius, hash_v_knn};

static nbStatus hash_build_points(void **index, const nbPoints *points, double scale)
{
    return item_build(&hash_verbs, index, points, scale);
}

// ---------------------------------------------------------------------------------------------
// tiles: the tile grid (nb_tiles_*). The world is the input's extent on the tiled axes (x, y in
// 2D; x, z in 3D), in tiles of about the scale (the radius), at most about 2 sqrt(N) + 1 per
// axis; one group: every point is of group 0 and finds everything.

ITEM_VERBS(tiles, nbTiles)

static nbStatus tiles_v_create(const nbPoints *points, double scale, void **obj)
{
    nbTilesDesc desc = {0};
    desc.dim = points->dim;
    desc.capacity_hint = points->count;
    const int axes[2] = {0, points->dim == 3 ? 2 : 1};
    const double most = 2.0 * sqrt((double)points->count) + 1.0;
    for (int t = 0; t < 2; t++) {
        double lo = 0.0, hi = 0.0;
        for (int32_t i = 0; i < points->count; i++) {
            const double v = points->data[(size_t)i * (size_t)points->dim + (size_t)axes[t]];
            lo = i == 0 || v < lo ? v : lo;
            hi = i == 0 || v > hi ? v : hi;
        }
        double size = hi - lo;
        size = size > 0.0 ? size : 1.0;
        size = isfinite(size) ? size : DBL_MAX / 2; // outside points live in the edge tiles
        const double n = scale > 0.0 ? ceil(size / scale) : most;
        desc.origin[t] = lo;
        desc.size[t] = size;
        desc.tile_count[t] = (int32_t)(n < most ? (n > 1.0 ? n : 1.0) : most);
    }
    nbTiles *tiles = NULL;
    nbStatus st = nb_tiles_create(&desc, &tiles);
    if (st == NB_ERR_OUT_OF_RANGE) { // tiles too thin to number: one tile is always exact
        desc.tile_count[0] = desc.tile_count[1] = 1;
        desc.size[0] = desc.size[0] > 1.0 ? desc.size[0] : 1.0;
        desc.size[1] = desc.size[1] > 1.0 ? desc.size[1] : 1.0;
        st = nb_tiles_create(&desc, &tiles);
    }
    *obj = tiles;
    return st;
}

static nbStatus tiles_v_insert(void *obj, const double *pos, uint64_t user, nbHandle *out)
{
    const nbFilter group0 = {1u, 0xFFFFFFFFu};
    return nb_tiles_insert(obj, pos, user, group0, out);
}

static nbStatus tiles_v_move(void *obj, nbHandle item, const double *pos)
{
    return nb_tiles_move(obj, item, pos);
}

static const ItemVerbs tiles_verbs = {
    tiles_v_create,      tiles_v_destroy,     tiles_v_insert,       NULL,       tiles_v_move,
    tiles_v_count_pairs, tiles_v_visit_pairs, tiles_v_visit_radius, tiles_v_knn};

static nbStatus tiles_build_points(void **index, const nbPoints *points, double scale)
{
    return item_build(&tiles_verbs, index, points, scale);
}

// ---------------------------------------------------------------------------------------------
// quadtree: the quadtree of rectangles (nb_quadtree_*). Rectangles by nb_quadtree_build, user
// value = index. Points (2D only) as zero-size rectangles, by nb_quadtree_build too, which gives
// rectangle i slot i, so slot order, the kNN tie order, is input order; the distance to a
// zero-size rectangle is the distance to the point, computed the same way, so results match the
// grid's exactly. A rebuild with as many points (the demo's frames) moves every rectangle by
// handle in one nb_quadtree_move_many. Radius and kNN searches are the stored items' (above);
// pairs within a radius are one radius search per point, so the index keeps the points too.

typedef struct QuadtreeIndex {
    ItemIndex base; // obj: the tree; items (built from points): rectangle i's handle
    double *pts;    // built from points: the points (2 doubles each), else NULL
    nbRect *rects;  // built from points: the points as zero-size rectangles (moves' input)
} QuadtreeIndex;

static void quadtree_v_destroy(void *obj)
{
    nb_quadtree_destroy(obj);
}

static nbStatus quadtree_v_visit_radius(const void *obj, const double *center, double radius,
                                        nbHitFn *visit, void *user)
{
    return nb_quadtree_visit_radius(obj, center, radius, NB_FILTER_ALL, visit, user);
}

static nbStatus quadtree_v_knn(const void *obj, const double *point, nbHitNeighbor *out, int32_t k,
                               int32_t *found)
{
    return nb_quadtree_knn(obj, point, NB_FILTER_ALL, (double)INFINITY, out, k, found);
}

static const ItemVerbs quadtree_verbs = {
    NULL, quadtree_v_destroy,      NULL,          NULL, NULL, NULL,
    NULL, quadtree_v_visit_radius, quadtree_v_knn};

static void quadtree_destroy(void *index)
{
    QuadtreeIndex *x = index;
    if (x == NULL) return;
    free(x->pts);
    free(x->rects);
    item_destroy(&x->base); // the tree, the handles and x itself (base is its first member)
}

// A new index over a fresh tree; NULL when out of memory.
static QuadtreeIndex *quadtree_new(void)
{
    QuadtreeIndex *x = calloc(1, sizeof *x);
    if (x == NULL) return NULL;
    x->base.verbs = &quadtree_verbs;
    nbQuadtreeDesc desc = {0};
    nbQuadtree *qt = NULL;
    if (nb_quadtree_create(&desc, &qt) != NB_OK) {
        free(x);
        return NULL;
    }
    x->base.obj = qt;
    return x;
}

static nbStatus quadtree_build_rects(void **index, const double *rects, int32_t count)
{
    QuadtreeIndex *x = quadtree_new();
    if (x == NULL) return NB_ERR_OUT_OF_MEMORY;
    const nbStatus st =
        nb_quadtree_build(x->base.obj, (const nbRect *)rects, count, NULL, NULL, NULL);
    if (st != NB_OK) {
        quadtree_destroy(x);
        return st;
    }
    x->base.count = count;
    quadtree_destroy(*index);
    *index = x;
    return NB_OK;
}

// The points as zero-size rectangles into x->rects.
static void quadtree_take_rects(QuadtreeIndex *x, const nbPoints *points)
{
    for (int32_t i = 0; i < points->count; i++) {
        const double *p = points->data + 2 * (size_t)i;
        x->rects[i] = (nbRect){{p[0], p[1]}, {p[0], p[1]}};
    }
}

static nbStatus quadtree_build_points(void **index, const nbPoints *points, double scale)
{
    (void)scale;
    if (points->dim != 2) return NB_ERR_OUT_OF_RANGE; // a quadtree is 2D
    QuadtreeIndex *old = *index;
    if (old != NULL && old->base.items != NULL && old->base.count == points->count) {
        quadtree_take_rects(old, points); // a rebuild: move all
        int32_t moved = 0;
        const nbStatus st = nb_quadtree_move_many(old->base.obj, old->base.items, old->rects,
                                                  old->base.count, &moved);
        // The points that moved (all of them, or those before a failure), for pairs' centres.
        if (moved > 0) memcpy(old->pts, points->data, (size_t)moved * 2 * sizeof(double));
        return st;
    }
    QuadtreeIndex *x = quadtree_new();
    if (x == NULL) return NB_ERR_OUT_OF_MEMORY;
    const size_t n1 = (size_t)points->count + 1;
    x->pts = malloc(n1 * 2 * sizeof(double));
    x->rects = malloc(n1 * sizeof(nbRect));
    x->base.items = malloc(n1 * sizeof(nbHandle));
    nbStatus st = NB_ERR_OUT_OF_MEMORY;
    if (x->pts != NULL && x->rects != NULL && x->base.items != NULL) {
        if (points->count > 0)
            memcpy(x->pts, points->data, (size_t)points->count * 2 * sizeof(double));
        quadtree_take_rects(x, points);
        st = nb_quadtree_build(x->base.obj, x->rects, points->count, NULL, NULL, x->base.items);
    }
    if (st != NB_OK) {
        quadtree_destroy(x);
        return st;
    }
    x->base.count = points->count;
    quadtree_destroy(old); // a rebuild replaces the old index
    *index = x;
    return NB_OK;
}

// The pairs (above, j) with j > above, into the caller's buffer.
typedef struct AboveOut {
    PairsOut pairs;
    int32_t above;
} AboveOut;

static bool on_hit_above(nbHit hit, void *user)
{
    AboveOut *o = user;
    const int32_t j = (int32_t)hit.user;
    if (j > o->above) {
        if (o->pairs.found < o->pairs.capacity) {
            o->pairs.out[o->pairs.found].i = o->above;
            o->pairs.out[o->pairs.found].j = j;
        }
        o->pairs.found++;
    }
    return true;
}

static nbStatus quadtree_pairs(const void *index, double radius, nbPair *out, int64_t capacity,
                               int64_t *found)
{
    const QuadtreeIndex *x = index;
    AboveOut o = {{out, out != NULL ? capacity : 0, 0}, -1};
    nbStatus st = NB_OK;
    for (int32_t i = 0; i < x->base.count && st == NB_OK; i++) {
        o.above = i;
        st = nb_quadtree_visit_radius(x->base.obj, x->pts + 2 * (size_t)i, radius, NB_FILTER_ALL,
                                      on_hit_above, &o);
    }
    *found = st == NB_OK ? o.pairs.found : 0;
    return out != NULL ? buffer_status(st, o.pairs.found, capacity) : st;
}

static nbStatus quadtree_boxes(const void *index, const double *window, int32_t *out,
                               int32_t capacity, int32_t *found)
{
    const QuadtreeIndex *x = index;
    HitsOut o = {out, capacity, 0};
    const nbBox w = {{window[0], window[1]}, {window[2], window[3]}};
    const nbStatus st = nb_quadtree_visit_box(x->base.obj, &w, NB_FILTER_ALL, on_hit, &o);
    *found = st == NB_OK ? o.found : 0;
    return buffer_status(st, o.found, capacity);
}

static nbStatus quadtree_overlaps(const void *index, nbPair *out, int64_t capacity, int64_t *found)
{
    const QuadtreeIndex *x = index;
    if (out == NULL) return nb_quadtree_count_pairs(x->base.obj, found);
    PairsOut o = {out, capacity, 0};
    const nbStatus st = nb_quadtree_visit_pairs(x->base.obj, on_pair, &o);
    *found = st == NB_OK ? o.found : 0;
    return buffer_status(st, o.found, capacity);
}

// ---------------------------------------------------------------------------------------------
// The table. The first row that answers a command's queries is that command's default.

static const cliStructure structures[] = {
    {
        .name = "dense",
        .about = "uniform grid rebuilt with a counting sort (nb_grid_*)",
        .build_points = dense_build_points,
        .destroy = dense_destroy,
        .pairs = dense_pairs,
        .within = dense_within,
        .knn = dense_knn,
        .periodic = true,
    },
    {
        .name = "hash",
        .about = "spatial hash of occupied cells, items moved by handle (nb_hash_*)",
        .build_points = hash_build_points,
        .destroy = item_destroy,
        .pairs = item_pairs,
        .within = item_within,
        .knn = item_knn,
    },
    {
        .name = "tiles",
        .about = "tile grid over the input's extent, entities by handle (nb_tiles_*)",
        .build_points = tiles_build_points,
        .destroy = item_destroy,
        .pairs = item_pairs,
        .within = item_within,
        .knn = item_knn,
    },
    {
        .name = "quadtree",
        .about = "quadtree of rectangles; points as zero-size ones, 2D (nb_quadtree_*)",
        .build_points = quadtree_build_points,
        .destroy = quadtree_destroy,
        .pairs = quadtree_pairs,
        .within = item_within,
        .knn = item_knn,
        .build_rects = quadtree_build_rects,
        .boxes = quadtree_boxes,
        .overlaps = quadtree_overlaps,
        .only_2d = true,
    },
};
#define STRUCTURE_COUNT (sizeof structures / sizeof structures[0])

const cliStructure *cli_structure_find(const char *name)
{
    for (size_t k = 0; k < STRUCTURE_COUNT; k++)
        if (strcmp(structures[k].name, name) == 0) return &structures[k];
    return NULL;
}

const cliStructure *cli_structure_at(int k)
{
    return k >= 0 && (size_t)k < STRUCTURE_COUNT ? &structures[k] : NULL;
}

bool cli_structure_supports(const cliStructure *s, unsigned needs)
{
    const unsigned rects = CLI_QUERY_BOXES | CLI_QUERY_OVERLAPS; // commands on rectangles
    if ((needs & rects) ? s->build_rects == NULL : s->build_points == NULL) return false;
    if ((needs & CLI_QUERY_BOXES) && s->boxes == NULL) return false;
    if ((needs & CLI_QUERY_OVERLAPS) && s->overlaps == NULL) return false;
    if ((needs & CLI_QUERY_PAIRS) && s->pairs == NULL) return false;
    if ((needs & CLI_QUERY_WITHIN) && s->within == NULL) return false;
    if ((needs & CLI_QUERY_KNN) && s->knn == NULL) return false;
    return true;
}

const cliStructure *cli_structure_default(unsigned needs)
{
    for (size_t k = 0; k < STRUCTURE_COUNT; k++)
        if (cli_structure_supports(&structures[k], needs)) return &structures[k];
    return NULL;
}

const char *cli_query_name(unsigned needs)
{
    if (needs & CLI_QUERY_PAIRS) return "pair queries";
    if (needs & CLI_QUERY_WITHIN) return "radius queries";
    if (needs & CLI_QUERY_KNN) return "nearest-neighbour queries";
    if (needs & CLI_QUERY_BOXES) return "window queries on rectangles";
    if (needs & CLI_QUERY_OVERLAPS) return "overlapping rectangles";
    return "this command";
}

void cli_print_structures(FILE *f, unsigned needs)
{
    const cliStructure *def = cli_structure_default(needs);
    fputs("\nstructures:\n", f);
    for (size_t k = 0; k < STRUCTURE_COUNT; k++)
        if (cli_structure_supports(&structures[k], needs))
            fprintf(f, "  %-10s %s%s\n", structures[k].name, structures[k].about,
                    &structures[k] == def ? " (default)" : "");
}

// ---------------------------------------------------------------------------------------------
// Generic helpers over the adapters

nbStatus cli_index_build(const cliStructure *s, const double *coords, int32_t count, int32_t dim,
                         double scale, void **index)
{
    nbPoints view = {0}; // no stride, categories or masks: plain interleaved points
    view.data = coords;
    view.count = count;
    view.dim = dim;
    return s->build_points(index, &view, scale);
}

nbStatus cli_collect_pairs(const cliStructure *s, const void *index, double radius,
                           int64_t first_capacity, nbPair **pairs, int64_t *count, double *ms)
{
    int64_t capacity = first_capacity;
    *pairs = NULL;
    *count = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        if ((uint64_t)capacity > SIZE_MAX / sizeof(nbPair)) return NB_ERR_OUT_OF_MEMORY;
        nbPair *buf = malloc(capacity > 0 ? (size_t)capacity * sizeof(nbPair) : 1);
        if (buf == NULL) return NB_ERR_OUT_OF_MEMORY;
        int64_t found = 0;
        double t0 = cli_now_ms();
        nbStatus st = s->pairs(index, radius, buf, capacity, &found);
        double t1 = cli_now_ms();
        if (st == NB_OK) {
            *pairs = buf;
            *count = found;
            if (ms != NULL) *ms = t1 - t0;
            return NB_OK;
        }
        free(buf);
        if (st != NB_ERR_BUFFER_TOO_SMALL) return st;
        capacity = found;
    }
    return NB_ERR_INTERNAL; // the total changed between two identical calls
}
