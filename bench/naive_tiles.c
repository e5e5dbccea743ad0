// SPDX-License-Identifier: MIT
// See naive_tiles.h: the tile system games commonly write, as it is usually written.
#include "naive_tiles.h"

#include <stdlib.h>
#include <string.h>

static void list_add(ntList *l, void *item)
{
    if (l->count == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 20;
        l->items = realloc(l->items, (size_t)l->cap * sizeof(void *));
        if (l->items == NULL) abort();
    }
    l->items[l->count++] = item;
}

// List.Remove: find the first equal item, shift the rest down.
static void list_remove(ntList *l, const void *item)
{
    for (int i = 0; i < l->count; i++) {
        if (l->items[i] != item) continue;
        memmove(l->items + i, l->items + i + 1, (size_t)(l->count - i - 1) * sizeof(void *));
        l->count--;
        return;
    }
}

ntTiles *nt_create(int rows, double world_size, int groups, const double *wp_pos, int nwp)
{
    ntTiles *t = calloc(1, sizeof *t);
    if (t == NULL) abort();
    t->rows = rows;
    t->world_size = world_size;
    t->tile_size = world_size / rows;
    t->groups = groups;
    const int n = rows * rows;
    t->entities = calloc((size_t)n * (size_t)groups, sizeof(ntList));
    t->waypoints = calloc((size_t)n, sizeof(int *));
    t->wp_count = calloc((size_t)n, sizeof(int));
    t->wp_cap = calloc((size_t)n, sizeof(int));
    if (!t->entities || !t->waypoints || !t->wp_count || !t->wp_cap) abort();
    for (int i = 0; i < n * groups; i++) { // "reserve 20 entities"
        t->entities[i].cap = 20;
        t->entities[i].items = malloc(20 * sizeof(void *));
    }
    t->wp_pos = wp_pos;
    for (int w = 0; w < nwp; w++) {
        const int c = nt_tile_index(t, wp_pos[2 * w], wp_pos[2 * w + 1]);
        if (t->wp_count[c] == t->wp_cap[c]) {
            t->wp_cap[c] = t->wp_cap[c] ? 2 * t->wp_cap[c] : 4;
            t->waypoints[c] = realloc(t->waypoints[c], (size_t)t->wp_cap[c] * sizeof(int));
            if (t->waypoints[c] == NULL) abort();
        }
        t->waypoints[c][t->wp_count[c]++] = w;
    }
    return t;
}

void nt_destroy(ntTiles *t)
{
    const int n = t->rows * t->rows;
    for (int i = 0; i < n * t->groups; i++) free(t->entities[i].items);
    for (int i = 0; i < n; i++) free(t->waypoints[i]);
    free(t->entities);
    free(t->waypoints);
    free(t->wp_count);
    free(t->wp_cap);
    free(t);
}

// The usual GetTileIndex (truncation), kept inside the world.
int nt_tile_index(const ntTiles *t, double x, double y)
{
    int tx = (int)(x / t->tile_size), ty = (int)(y / t->tile_size);
    tx = tx < 0 ? 0 : tx >= t->rows ? t->rows - 1 : tx;
    ty = ty < 0 ? 0 : ty >= t->rows ? t->rows - 1 : ty;
    return tx + ty * t->rows;
}

void nt_add(ntTiles *t, ntEntity *e)
{
    e->tile = nt_tile_index(t, e->x, e->y);
    list_add(&t->entities[e->tile * t->groups + e->group], e);
}

void nt_remove(ntTiles *t, ntEntity *e)
{
    list_remove(&t->entities[e->tile * t->groups + e->group], e);
}

void nt_moved(ntTiles *t, ntEntity *e)
{
    const int tile = nt_tile_index(t, e->x, e->y);
    if (tile == e->tile) return;
    nt_remove(t, e);
    e->tile = tile;
    list_add(&t->entities[e->tile * t->groups + e->group], e);
}

// GetNearbyTiles, generalised to the ring k around (cx, cy): a fresh list every call.
static ntList ring_tiles(const ntTiles *t, int cx, int cy, int k)
{
    ntList l = {NULL, 0, 0};
    for (int y = cy - k; y <= cy + k; y++) {
        if (y < 0 || y >= t->rows) continue;
        for (int x = cx - k; x <= cx + k; x++) {
            if (x < 0 || x >= t->rows) continue;
            if (y != cy - k && y != cy + k && x != cx - k && x != cx + k) continue;
            list_add(&l, (void *)(intptr_t)(x + y * t->rows));
        }
    }
    return l;
}

// After rings 0..k, the distance from (x, y) to the nearest side of their box that is not the
// world's edge: nothing unvisited is nearer.
static double ring_bound(const ntTiles *t, double x, double y, int cx, int cy, int k)
{
    double b = 1e300;
    const double s = t->tile_size;
    if (cx - k > 0 && x - (cx - k) * s < b) b = x - (cx - k) * s;
    if (cx + k < t->rows - 1 && (cx + k + 1) * s - x < b) b = (cx + k + 1) * s - x;
    if (cy - k > 0 && y - (cy - k) * s < b) b = y - (cy - k) * s;
    if (cy + k < t->rows - 1 && (cy + k + 1) * s - y < b) b = (cy + k + 1) * s - y;
    return b;
}

const ntEntity *nt_nearest(const ntTiles *t, double x, double y, uint32_t groups, double *d2)
{
    const int c = nt_tile_index(t, x, y), cx = c % t->rows, cy = c / t->rows;
    const ntEntity *best = NULL;
    double bd = 1e300;
    for (int k = 0; k < t->rows; k++) {
        ntList ring = ring_tiles(t, cx, cy, k);
        for (int i = 0; i < ring.count; i++) {
            const int tile = (int)(intptr_t)ring.items[i];
            for (int g = 0; g < t->groups; g++) {
                if (!((groups >> g) & 1u)) continue;
                const ntList *l = &t->entities[tile * t->groups + g];
                for (int j = 0; j < l->count; j++) {
                    const ntEntity *e = l->items[j];
                    const double dx = e->x - x, dy = e->y - y, d = dx * dx + dy * dy;
                    if (d < bd || (d == bd && best != NULL && e->id < best->id)) {
                        bd = d;
                        best = e;
                    }
                }
            }
        }
        free(ring.items);
        const double b = ring_bound(t, x, y, cx, cy, k);
        if (best != NULL && bd <= b * b) break;
    }
    *d2 = bd;
    return best;
}

int nt_nearest_waypoint(const ntTiles *t, double x, double y, double *d2)
{
    const int c = nt_tile_index(t, x, y), cx = c % t->rows, cy = c / t->rows;
    int best = -1;
    double bd = 1e300;
    for (int k = 0; k < t->rows; k++) {
        ntList ring = ring_tiles(t, cx, cy, k);
        for (int i = 0; i < ring.count; i++) {
            const int tile = (int)(intptr_t)ring.items[i];
            for (int j = 0; j < t->wp_count[tile]; j++) {
                const int w = t->waypoints[tile][j];
                const double dx = t->wp_pos[2 * w] - x, dy = t->wp_pos[2 * w + 1] - y;
                const double d = dx * dx + dy * dy;
                if (d < bd || (d == bd && w < best)) {
                    bd = d;
                    best = w;
                }
            }
        }
        free(ring.items);
        const double b = ring_bound(t, x, y, cx, cy, k);
        if (best >= 0 && bd <= b * b) break;
    }
    *d2 = bd;
    return best;
}

// The usual neighbourhood: GetNearbyTiles, the tile and its 8 neighbours, into a fresh
// list. When the 3 x 3 block cannot prove its best answer (nothing found, or something outside
// it could be nearer), every tile's list is searched.
const ntEntity *nt_nearest_3x3(const ntTiles *t, double x, double y, uint32_t groups, double *d2)
{
    const int c = nt_tile_index(t, x, y), cx = c % t->rows, cy = c / t->rows;
    const ntEntity *best = NULL;
    double bd = 1e300;
    for (int pass = 0; pass < 2; pass++) {
        ntList near = {NULL, 0, 0};
        if (pass == 0) {
            for (int k = 0; k <= 1; k++) { // the tile, then the ring around it
                ntList ring = ring_tiles(t, cx, cy, k);
                for (int i = 0; i < ring.count; i++) list_add(&near, ring.items[i]);
                free(ring.items);
            }
        } else {
            for (int i = 0; i < t->rows * t->rows; i++) list_add(&near, (void *)(intptr_t)i);
        }
        for (int i = 0; i < near.count; i++) {
            const int tile = (int)(intptr_t)near.items[i];
            for (int g = 0; g < t->groups; g++) {
                if (!((groups >> g) & 1u)) continue;
                const ntList *l = &t->entities[tile * t->groups + g];
                for (int j = 0; j < l->count; j++) {
                    const ntEntity *e = l->items[j];
                    const double dx = e->x - x, dy = e->y - y, d = dx * dx + dy * dy;
                    if (d < bd || (d == bd && best != NULL && e->id < best->id)) {
                        bd = d;
                        best = e;
                    }
                }
            }
        }
        free(near.items);
        const double b = ring_bound(t, x, y, cx, cy, 1);
        if (best != NULL && bd <= b * b) break;
    }
    *d2 = bd;
    return best;
}

int nt_nearest_waypoint_3x3(const ntTiles *t, double x, double y, double *d2)
{
    const int c = nt_tile_index(t, x, y), cx = c % t->rows, cy = c / t->rows;
    int best = -1;
    double bd = 1e300;
    for (int pass = 0; pass < 2; pass++) {
        ntList near = {NULL, 0, 0};
        if (pass == 0) {
            for (int k = 0; k <= 1; k++) {
                ntList ring = ring_tiles(t, cx, cy, k);
                for (int i = 0; i < ring.count; i++) list_add(&near, ring.items[i]);
                free(ring.items);
            }
        } else {
            for (int i = 0; i < t->rows * t->rows; i++) list_add(&near, (void *)(intptr_t)i);
        }
        for (int i = 0; i < near.count; i++) {
            const int tile = (int)(intptr_t)near.items[i];
            for (int j = 0; j < t->wp_count[tile]; j++) {
                const int w = t->waypoints[tile][j];
                const double dx = t->wp_pos[2 * w] - x, dy = t->wp_pos[2 * w + 1] - y;
                const double d = dx * dx + dy * dy;
                if (d < bd || (d == bd && w < best)) {
                    bd = d;
                    best = w;
                }
            }
        }
        free(near.items);
        const double b = ring_bound(t, x, y, cx, cy, 1);
        if (best >= 0 && bd <= b * b) break;
    }
    *d2 = bd;
    return best;
}
