// SPDX-License-Identifier: MIT
// Shared drawing for `demo` and `render` (picture.h).
#include "picture.h"

#include <math.h>
#include <stdlib.h>

// A 64-bit mix (splitmix64's finaliser): spreads neighbouring indices over the whole range.
static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

bool cli_sample_keep(uint64_t key, int64_t total, int64_t cap)
{
    if (total <= cap) return true;
    // Keep when the hash falls in the first cap/total of its range.
    const double share = (double)cap / (double)total;
    return (double)(mix64(key) >> 11) * 0x1p-53 < share;
}

typedef struct CellKey {
    int64_t x, y;
} CellKey;

static int cell_key_cmp(const void *a, const void *b)
{
    const CellKey *p = a, *q = b;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    return (p->y > q->y) - (p->y < q->y);
}

// Sorts the points' cells (edge `edge`) into keys[0, n); returns the distinct count, or -1 if
// a coordinate's cell number would not fit.
static int64_t sort_cells(CellKey *keys, const double *coords, int32_t n, int32_t dim, double edge)
{
    for (int32_t i = 0; i < n; i++) {
        const double cx = floor(coords[(size_t)i * (size_t)dim] / edge);
        const double cy = floor(coords[(size_t)i * (size_t)dim + 1] / edge);
        if (!(fabs(cx) < 0x1p52 && fabs(cy) < 0x1p52)) return -1;
        keys[i].x = (int64_t)cx;
        keys[i].y = (int64_t)cy;
    }
    qsort(keys, (size_t)n, sizeof *keys, cell_key_cmp);
    int64_t distinct = 0;
    for (int32_t i = 0; i < n; i++) distinct += i == 0 || cell_key_cmp(&keys[i - 1], &keys[i]) != 0;
    return distinct;
}

nbStatus cli_picture_cells(nbioSvg *svg, const double *coords, int32_t n, int32_t dim, double cell,
                           cliCells *out)
{
    out->drawn = false;
    out->factor = 1;
    out->occupied = 0;
    out->max_occupancy = 0;
    if (n == 0 || !(cell > 0.0) || !isfinite(cell)) return NB_OK;
    CellKey *keys = malloc((size_t)n * sizeof *keys);
    if (keys == NULL) return NB_ERR_OUT_OF_MEMORY;
    int64_t distinct = sort_cells(keys, coords, n, dim, cell);
    while (distinct > CLI_PICTURE_MAX_CELLS && out->factor < ((int64_t)1 << 40)) {
        out->factor *= 2;
        distinct = sort_cells(keys, coords, n, dim, cell * (double)out->factor);
    }
    if (distinct < 0 || distinct > CLI_PICTURE_MAX_CELLS) {
        free(keys);
        return NB_OK;
    }
    // Runs of equal keys are the occupied cells; shade in 8 levels of occupancy, one group a
    // level, so each rectangle carries only its position.
    for (int32_t i = 0, run = 1; i < n; i++, run++) {
        if (i + 1 < n && cell_key_cmp(&keys[i], &keys[i + 1]) == 0) continue;
        if (run > out->max_occupancy) out->max_occupancy = run;
        run = 0;
    }
    const double edge = cell * (double)out->factor;
    enum { LEVELS = 8 };
    for (int level = 0; level < LEVELS; level++) {
        bool open = false;
        for (int32_t i = 0, run = 1; i < n; i++, run++) {
            if (i + 1 < n && cell_key_cmp(&keys[i], &keys[i + 1]) == 0) continue;
            // Level of this run: ceil(8 * run / max) - 1, so the fullest is level 7.
            int l =
                (int)((LEVELS * (int64_t)run + out->max_occupancy - 1) / out->max_occupancy) - 1;
            if (l == level) {
                if (!open) {
                    nbio_svg_group_begin(svg, "#3b6fb6", NULL, 0.0,
                                         0.06 + 0.44 * (double)(level + 1) / LEVELS);
                    open = true;
                }
                const double x = (double)keys[i].x * edge, y = (double)keys[i].y * edge;
                nbio_svg_rect(svg, x, y, x + edge, y + edge, NULL, 1.0, NULL);
            }
            run = 0;
        }
        if (open) nbio_svg_group_end(svg);
    }
    out->occupied = distinct;
    out->drawn = true;
    free(keys);
    return NB_OK;
}

static int pair_cmp(const void *a, const void *b)
{
    const nbPair *p = a, *q = b;
    if (p->i != q->i) return p->i < q->i ? -1 : 1;
    return (p->j > q->j) - (p->j < q->j);
}

nbStatus cli_picture_pairs(nbioSvg *svg, const double *coords, int32_t dim, const nbPair *pairs,
                           int64_t count, const char *color, int64_t *drawn)
{
    *drawn = 0;
    int64_t kept = 0;
    const int64_t cap = CLI_PICTURE_MAX_PAIRS;
    nbPair *sample = malloc(((size_t)(count < 2 * cap ? count : 2 * cap) + 1) * sizeof *sample);
    if (sample == NULL) return NB_ERR_OUT_OF_MEMORY;
    for (int64_t k = 0; k < count && kept < 2 * cap; k++) {
        nbPair p = pairs[k];
        if (p.i > p.j) {
            const int32_t t = p.i;
            p.i = p.j;
            p.j = t;
        }
        if (cli_sample_keep(((uint64_t)(uint32_t)p.i << 32) | (uint32_t)p.j, count, cap))
            sample[kept++] = p;
    }
    qsort(sample, (size_t)kept, sizeof *sample, pair_cmp);
    if (kept > cap) kept = cap; // the hash overshot its share: drop the highest indices
    if (kept > 0) nbio_svg_path_begin(svg, color, 0.6, 0.55);
    for (int64_t k = 0; k < kept; k++) {
        const double *a = coords + (size_t)sample[k].i * (size_t)dim;
        const double *b = coords + (size_t)sample[k].j * (size_t)dim;
        nbio_svg_path_segment(svg, a[0], a[1], b[0], b[1]);
    }
    nbio_svg_path_end(svg);
    free(sample);
    *drawn = kept;
    return NB_OK;
}

int64_t cli_picture_points(nbioSvg *svg, const double *coords, int32_t n, int32_t dim,
                           const uint8_t *group, uint8_t which, int64_t total, int64_t cap,
                           double r_px, const char *color)
{
    int64_t drawn = 0;
    nbio_svg_group_begin(svg, color, NULL, 0.0, 1.0);
    for (int32_t i = 0; i < n && drawn < cap; i++) {
        if ((group != NULL ? group[i] : 0) != which) continue;
        if (!cli_sample_keep((uint64_t)i, total, cap)) continue;
        nbio_svg_circle(svg, coords[(size_t)i * (size_t)dim], coords[(size_t)i * (size_t)dim + 1],
                        r_px, NULL);
        drawn++;
    }
    nbio_svg_group_end(svg);
    return drawn;
}
