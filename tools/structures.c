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
// The incremental structures name point i by the user value i: their kNN answers (nbHitNeighbor)
// narrow to the table's nbNeighbor. `knn` runs the structure's own call into `wide`.

typedef nbStatus (*HitKnnFn)(const void *index, const double *point, int32_t k, nbHitNeighbor *wide,
                             int32_t *n);

static nbStatus knn_by_user(const void *index, const double *point, int32_t k, nbNeighbor *out,
                            int32_t *found, HitKnnFn knn)
{
    *found = 0;
    nbHitNeighbor *wide = malloc(((size_t)(k > 0 ? k : 0) + 1) * sizeof(nbHitNeighbor));
    if (wide == NULL) return NB_ERR_OUT_OF_MEMORY;
    int32_t n = 0;
    const nbStatus st = knn(index, point, k, wide, &n);
    for (int32_t t = 0; t < n && st == NB_OK; t++) {
        out[t].index = (int32_t)wide[t].hit.user;
        out[t].dist2 = wide[t].dist2;
    }
    free(wide);
    if (st == NB_OK) *found = n;
    return st;
}

// ---------------------------------------------------------------------------------------------
// hash: the spatial hash (nb_hash_*). Point i is the item whose user value is i; items are
// inserted in input order, so slot order (the hash's tie order) is input order too.

typedef struct HashIndex {
    nbHash *hash;
    nbHandle *items;
    int32_t count;
} HashIndex;

// A cell edge every input can use: the scale (the radius), but at least what keeps every
// coordinate's cell within the cell math's +-2^62 (the dense grid widens its cells the same way).
static double hash_cell(const nbPoints *points, double scale)
{
    double max_abs = 0.0;
    const size_t values = (size_t)points->count * (size_t)points->dim;
    for (size_t i = 0; i < values; i++) {
        const double x = fabs(points->data[i]);
        max_abs = x > max_abs ? x : max_abs;
    }
    const double floor_cell = max_abs * 0x1p-60;
    const double cell = scale > floor_cell ? scale : floor_cell;
    return cell > 0.0 && isfinite(cell) ? cell : 1.0;
}

static void hash_destroy(void *index)
{
    HashIndex *x = index;
    if (x == NULL) return;
    nb_hash_destroy(x->hash);
    free(x->items);
    free(x);
}

static nbStatus hash_build_points(void **index, const nbPoints *points, double scale)
{
    HashIndex *x = *index;
    if (x != NULL && x->count == points->count) // a rebuild: move every item, in one call
        return nb_hash_move_many(x->hash, x->items, points->data, points->count, NULL);
    if (x != NULL) return NB_ERR_OUT_OF_RANGE; // the CLI rebuilds only with the same points
    x = calloc(1, sizeof *x);
    if (x == NULL) return NB_ERR_OUT_OF_MEMORY;
    x->items = malloc(((size_t)points->count + 1) * sizeof(nbHandle));
    nbHashDesc desc = {0};
    desc.dim = points->dim;
    desc.cell_size = hash_cell(points, scale);
    desc.capacity_hint = points->count;
    nbStatus st = x->items == NULL ? NB_ERR_OUT_OF_MEMORY : nb_hash_create(&desc, &x->hash);
    for (int32_t i = 0; i < points->count && st == NB_OK; i++, x->count++)
        st = nb_hash_insert(x->hash, points->data + (size_t)i * (size_t)points->dim, (uint64_t)i,
                            NB_FILTER_ALL, &x->items[i]);
    if (st != NB_OK) {
        hash_destroy(x);
        return st;
    }
    *index = x;
    return NB_OK;
}

// Pairs (i < j by point index) into the caller's buffer, counting past its capacity.
typedef struct HashPairsOut {
    nbPair *out;
    int64_t capacity, found;
} HashPairsOut;

static bool hash_on_pair(nbHit a, nbHit b, void *user)
{
    HashPairsOut *o = user;
    if (o->found < o->capacity) {
        o->out[o->found].i = (int32_t)(a.user < b.user ? a.user : b.user);
        o->out[o->found].j = (int32_t)(a.user < b.user ? b.user : a.user);
    }
    o->found++;
    return true;
}

static nbStatus hash_pairs(const void *index, double radius, nbPair *out, int64_t capacity,
                           int64_t *found)
{
    const HashIndex *x = index;
    if (out == NULL) return nb_hash_count_pairs(x->hash, radius, found);
    HashPairsOut o = {out, capacity, 0};
    const nbStatus st = nb_hash_visit_pairs(x->hash, radius, hash_on_pair, &o);
    *found = st == NB_OK ? o.found : 0;
    if (st != NB_OK) return st;
    return o.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

typedef struct HashHitsOut {
    int32_t *out;
    int32_t capacity, found;
} HashHitsOut;

static bool hash_on_hit(nbHit hit, void *user)
{
    HashHitsOut *o = user;
    if (o->found < o->capacity) o->out[o->found] = (int32_t)hit.user;
    o->found++;
    return true;
}

static nbStatus hash_within(const void *index, const double *center, double radius, int32_t *out,
                            int32_t capacity, int32_t *found)
{
    const HashIndex *x = index;
    HashHitsOut o = {out, capacity, 0};
    const nbStatus st =
        nb_hash_visit_radius(x->hash, center, radius, NB_FILTER_ALL, hash_on_hit, &o);
    *found = st == NB_OK ? o.found : 0;
    if (st != NB_OK) return st;
    return o.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

static nbStatus hash_knn_hits(const void *index, const double *point, int32_t k,
                              nbHitNeighbor *wide, int32_t *n)
{
    return nb_hash_knn(((const HashIndex *)index)->hash, point, NB_FILTER_ALL, (double)INFINITY,
                       wide, k, n);
}

static nbStatus hash_knn(const void *index, const double *point, int32_t k, nbNeighbor *out,
                         int32_t *found)
{
    return knn_by_user(index, point, k, out, found, hash_knn_hits);
}

// ---------------------------------------------------------------------------------------------
// tiles: the tile grid (nb_tiles_*). The world is the input's extent, in tiles of about the
// scale (the radius), at most about 2 sqrt(N) + 1 per axis; one group; point i is the entity
// whose user value is i, inserted in input order, so slot order (the tie order) is input order.

typedef struct TilesIndex {
    nbTiles *tiles;
    nbHandle *items;
    int32_t count;
} TilesIndex;

static void tiles_destroy(void *index)
{
    TilesIndex *x = index;
    if (x == NULL) return;
    nb_tiles_destroy(x->tiles);
    free(x->items);
    free(x);
}

// A world over the points' extent on the tiled axes (x, y in 2D; x, z in 3D).
static nbStatus tiles_create(const nbPoints *points, double scale, nbTiles **out)
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
    nbStatus st = nb_tiles_create(&desc, out);
    if (st == NB_ERR_OUT_OF_RANGE) { // tiles too thin to number: one tile is always exact
        desc.tile_count[0] = desc.tile_count[1] = 1;
        desc.size[0] = desc.size[0] > 1.0 ? desc.size[0] : 1.0;
        desc.size[1] = desc.size[1] > 1.0 ? desc.size[1] : 1.0;
        st = nb_tiles_create(&desc, out);
    }
    return st;
}

// The CLI's tile grid has one group: every point is of group 0 and finds everything.
static const nbFilter TILES_GROUP0 = {1u, 0xFFFFFFFFu};

static nbStatus tiles_build_points(void **index, const nbPoints *points, double scale)
{
    TilesIndex *x = *index;
    if (x != NULL && x->count == points->count) { // a rebuild: move every entity
        for (int32_t i = 0; i < points->count; i++) {
            const nbStatus st = nb_tiles_move(x->tiles, x->items[i],
                                              points->data + (size_t)i * (size_t)points->dim);
            if (st != NB_OK) return st;
        }
        return NB_OK;
    }
    if (x != NULL) return NB_ERR_OUT_OF_RANGE; // the CLI rebuilds only with the same points
    x = calloc(1, sizeof *x);
    if (x == NULL) return NB_ERR_OUT_OF_MEMORY;
    x->items = malloc(((size_t)points->count + 1) * sizeof(nbHandle));
    nbStatus st = x->items == NULL ? NB_ERR_OUT_OF_MEMORY : tiles_create(points, scale, &x->tiles);
    for (int32_t i = 0; i < points->count && st == NB_OK; i++, x->count++)
        st = nb_tiles_insert(x->tiles, points->data + (size_t)i * (size_t)points->dim, (uint64_t)i,
                             TILES_GROUP0, &x->items[i]);
    if (st != NB_OK) {
        tiles_destroy(x);
        return st;
    }
    *index = x;
    return NB_OK;
}

static nbStatus tiles_pairs(const void *index, double radius, nbPair *out, int64_t capacity,
                            int64_t *found)
{
    const TilesIndex *x = index;
    if (out == NULL) return nb_tiles_count_pairs(x->tiles, radius, found);
    HashPairsOut o = {out, capacity, 0};
    const nbStatus st = nb_tiles_visit_pairs(x->tiles, radius, hash_on_pair, &o);
    *found = st == NB_OK ? o.found : 0;
    if (st != NB_OK) return st;
    return o.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

static nbStatus tiles_within(const void *index, const double *center, double radius, int32_t *out,
                             int32_t capacity, int32_t *found)
{
    const TilesIndex *x = index;
    HashHitsOut o = {out, capacity, 0};
    const nbStatus st =
        nb_tiles_visit_radius(x->tiles, center, radius, NB_FILTER_ALL, hash_on_hit, &o);
    *found = st == NB_OK ? o.found : 0;
    if (st != NB_OK) return st;
    return o.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

static nbStatus tiles_knn_hits(const void *index, const double *point, int32_t k,
                               nbHitNeighbor *wide, int32_t *n)
{
    return nb_tiles_knn(((const TilesIndex *)index)->tiles, point, NB_FILTER_ALL, (double)INFINITY,
                        wide, k, n);
}

static nbStatus tiles_knn(const void *index, const double *point, int32_t k, nbNeighbor *out,
                          int32_t *found)
{
    return knn_by_user(index, point, k, out, found, tiles_knn_hits);
}

// ---------------------------------------------------------------------------------------------
// quadtree: the quadtree of rectangles (nb_quadtree_*). Rectangles by nb_quadtree_build, user
// value = index. Points (2D only) as zero-size rectangles, by nb_quadtree_build too, which gives
// rectangle i slot i, so slot order, the kNN tie order, is input order; the distance to a
// zero-size rectangle is the distance to the point, computed the same way, so results match the
// grid's exactly. A rebuild with as many points (the demo's frames) moves every rectangle by
// handle in one nb_quadtree_move_many, as the hash's adapter moves its items. The index keeps
// the points too, for pairs: one radius search per point.

typedef struct QuadtreeIndex {
    nbQuadtree *qt;
    double *pts;     // the points (2 doubles each) when built from points, else NULL
    nbRect *rects;   // built from points: the points as zero-size rectangles (moves' input)
    nbHandle *items; // built from points: rectangle i's handle
    int32_t n;
} QuadtreeIndex;

static void quadtree_destroy(void *index)
{
    QuadtreeIndex *x = index;
    if (x == NULL) return;
    nb_quadtree_destroy(x->qt);
    free(x->pts);
    free(x->rects);
    free(x->items);
    free(x);
}

static nbStatus quadtree_build_rects(void **index, const double *rects, int32_t count)
{
    QuadtreeIndex *x = calloc(1, sizeof *x);
    if (x == NULL) return NB_ERR_OUT_OF_MEMORY;
    nbQuadtreeDesc desc = {0};
    nbStatus st = nb_quadtree_create(&desc, &x->qt);
    if (st == NB_OK) st = nb_quadtree_build(x->qt, (const nbRect *)rects, count, NULL, NULL, NULL);
    if (st != NB_OK) {
        quadtree_destroy(x);
        return st;
    }
    x->n = count;
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
    if (old != NULL && old->items != NULL && old->n == points->count) { // a rebuild: move all
        quadtree_take_rects(old, points);
        int32_t moved = 0;
        const nbStatus st = nb_quadtree_move_many(old->qt, old->items, old->rects, old->n, &moved);
        // The points that moved (all of them, or those before a failure), for pairs' centres.
        if (moved > 0) memcpy(old->pts, points->data, (size_t)moved * 2 * sizeof(double));
        return st;
    }
    QuadtreeIndex *x = calloc(1, sizeof *x);
    if (x == NULL) return NB_ERR_OUT_OF_MEMORY;
    const size_t n1 = (size_t)points->count + 1;
    x->pts = malloc(n1 * 2 * sizeof(double));
    x->rects = malloc(n1 * sizeof(nbRect));
    x->items = malloc(n1 * sizeof(nbHandle));
    nbQuadtreeDesc desc = {0};
    nbStatus st = x->pts == NULL || x->rects == NULL || x->items == NULL
                      ? NB_ERR_OUT_OF_MEMORY
                      : nb_quadtree_create(&desc, &x->qt);
    if (st == NB_OK) {
        if (points->count > 0)
            memcpy(x->pts, points->data, (size_t)points->count * 2 * sizeof(double));
        quadtree_take_rects(x, points);
        st = nb_quadtree_build(x->qt, x->rects, points->count, NULL, NULL, x->items);
    }
    if (st != NB_OK) {
        quadtree_destroy(x);
        return st;
    }
    x->n = points->count;
    quadtree_destroy(old); // a rebuild replaces the old index
    *index = x;
    return NB_OK;
}

// Hits as indices into a buffer, or (above >= 0) pairs (above, j) with j > above.
typedef struct QuadtreeOut {
    int32_t *out;
    int32_t capacity, found;
    int32_t above;
    nbPair *pairs;
    int64_t pair_capacity, pair_found;
} QuadtreeOut;

static bool quadtree_on_hit(nbHit hit, void *user)
{
    QuadtreeOut *o = user;
    const int32_t j = (int32_t)hit.user;
    if (o->above < 0) {
        if (o->found < o->capacity) o->out[o->found] = j;
        o->found++;
    } else if (j > o->above) {
        if (o->pair_found < o->pair_capacity) {
            o->pairs[o->pair_found].i = o->above;
            o->pairs[o->pair_found].j = j;
        }
        o->pair_found++;
    }
    return true;
}

static nbStatus quadtree_pairs(const void *index, double radius, nbPair *out, int64_t capacity,
                               int64_t *found)
{
    const QuadtreeIndex *x = index;
    QuadtreeOut o = {NULL, 0, 0, -1, out, out != NULL ? capacity : 0, 0};
    nbStatus st = NB_OK;
    for (int32_t i = 0; i < x->n && st == NB_OK; i++) {
        o.above = i;
        st = nb_quadtree_visit_radius(x->qt, x->pts + 2 * (size_t)i, radius, NB_FILTER_ALL,
                                      quadtree_on_hit, &o);
    }
    *found = st == NB_OK ? o.pair_found : 0;
    if (st != NB_OK) return st;
    return out != NULL && o.pair_found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

static nbStatus quadtree_within(const void *index, const double *center, double radius,
                                int32_t *out, int32_t capacity, int32_t *found)
{
    const QuadtreeIndex *x = index;
    QuadtreeOut o = {out, capacity, 0, -1, NULL, 0, 0};
    const nbStatus st =
        nb_quadtree_visit_radius(x->qt, center, radius, NB_FILTER_ALL, quadtree_on_hit, &o);
    *found = st == NB_OK ? o.found : 0;
    if (st != NB_OK) return st;
    return o.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

static nbStatus quadtree_knn_hits(const void *index, const double *point, int32_t k,
                                  nbHitNeighbor *wide, int32_t *n)
{
    const QuadtreeIndex *x = index;
    return nb_quadtree_knn(x->qt, point, NB_FILTER_ALL, (double)INFINITY, wide, k, n);
}

static nbStatus quadtree_knn(const void *index, const double *point, int32_t k, nbNeighbor *out,
                             int32_t *found)
{
    return knn_by_user(index, point, k, out, found, quadtree_knn_hits);
}

static nbStatus quadtree_boxes(const void *index, const double *window, int32_t *out,
                               int32_t capacity, int32_t *found)
{
    const QuadtreeIndex *x = index;
    QuadtreeOut o = {out, capacity, 0, -1, NULL, 0, 0};
    const nbBox w = {{window[0], window[1]}, {window[2], window[3]}};
    const nbStatus st = nb_quadtree_visit_box(x->qt, &w, NB_FILTER_ALL, quadtree_on_hit, &o);
    *found = st == NB_OK ? o.found : 0;
    if (st != NB_OK) return st;
    return o.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

typedef struct QuadtreePairsOut {
    nbPair *out;
    int64_t capacity, found;
} QuadtreePairsOut;

static bool quadtree_on_pair(nbHit a, nbHit b, void *user)
{
    QuadtreePairsOut *o = user;
    if (o->found < o->capacity) {
        o->out[o->found].i = (int32_t)(a.user < b.user ? a.user : b.user);
        o->out[o->found].j = (int32_t)(a.user < b.user ? b.user : a.user);
    }
    o->found++;
    return true;
}

static nbStatus quadtree_overlaps(const void *index, nbPair *out, int64_t capacity, int64_t *found)
{
    const QuadtreeIndex *x = index;
    if (out == NULL) return nb_quadtree_count_pairs(x->qt, found);
    QuadtreePairsOut o = {out, capacity, 0};
    const nbStatus st = nb_quadtree_visit_pairs(x->qt, quadtree_on_pair, &o);
    *found = st == NB_OK ? o.found : 0;
    if (st != NB_OK) return st;
    return o.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
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
        .destroy = hash_destroy,
        .pairs = hash_pairs,
        .within = hash_within,
        .knn = hash_knn,
    },
    {
        .name = "tiles",
        .about = "tile grid over the input's extent, entities by handle (nb_tiles_*)",
        .build_points = tiles_build_points,
        .destroy = tiles_destroy,
        .pairs = tiles_pairs,
        .within = tiles_within,
        .knn = tiles_knn,
    },
    {
        .name = "quadtree",
        .about = "quadtree of rectangles; points as zero-size ones, 2D (nb_quadtree_*)",
        .build_points = quadtree_build_points,
        .destroy = quadtree_destroy,
        .pairs = quadtree_pairs,
        .within = quadtree_within,
        .knn = quadtree_knn,
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
