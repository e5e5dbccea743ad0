// SPDX-License-Identifier: MIT
// Rectangles of mixed sizes: every overlapping pair. The quadtree, which keeps each rectangle
// in the deepest node that wholly contains it, is the structure for this and is not built yet.
// Meanwhile the dense grid does it exactly: index the centres, and ask around each rectangle
// with a box widened by half the largest width and height, since any rectangle that overlaps
// it has its centre in there; the rectangle test then decides. The catch is in that widening:
// one huge rectangle widens every query, which is what the quadtree avoids. Checks the pairs
// against brute force.
//
// Build and run: cc -std=c11 rectangles.c -lnearby -lm && ./a.out [rectangles]
#include <nearby/grid.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct Rect {
    double lo[2], hi[2];
} Rect;

typedef struct Search {
    const Rect *rects;
    int32_t self;
    int64_t overlaps;
} Search;

static double rnd(unsigned *seed) // uniform in [0, 1)
{
    *seed = *seed * 1103515245u + 12345u;
    return (double)(*seed >> 8) / 16777216.0;
}

static bool overlap(const Rect *a, const Rect *b) // closed rectangles: touching counts
{
    return a->lo[0] <= b->hi[0] && b->lo[0] <= a->hi[0] && a->lo[1] <= b->hi[1] &&
           b->lo[1] <= a->hi[1];
}

// A centre in the widened box: a candidate. Each pair is counted from its lower index.
static bool on_candidate(int32_t j, void *user)
{
    Search *s = user;
    if (j > s->self && overlap(&s->rects[s->self], &s->rects[j])) s->overlaps++;
    return true;
}

static int fail(const char *what, nbStatus st)
{
    fprintf(stderr, "rectangles: %s: %s\n", what, nb_status_message(st));
    return 1;
}

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 20000;
    if (n < 1) return fail("rectangle count", NB_ERR_OUT_OF_RANGE);
    const double side = sqrt((double)n) * 3.0;
    Rect *rects = malloc((size_t)n * sizeof *rects);
    double *centres = malloc((size_t)n * 2 * sizeof *centres);
    if (rects == NULL || centres == NULL) return fail("rectangles", NB_ERR_OUT_OF_MEMORY);
    unsigned seed = 2024u;
    double max_half[2] = {0.0, 0.0};
    for (int i = 0; i < n; i++) {
        // Mostly small (0.2 to 2 wide), one in a hundred up to 20 wide.
        double scale = i % 100 == 0 ? 20.0 : 2.0;
        for (int d = 0; d < 2; d++) {
            double half = (0.1 + 0.9 * rnd(&seed)) * scale * 0.5;
            double c = rnd(&seed) * side;
            rects[i].lo[d] = c - half;
            rects[i].hi[d] = c + half;
            centres[2 * i + d] = 0.5 * (rects[i].lo[d] + rects[i].hi[d]);
            double h = 0.5 * (rects[i].hi[d] - rects[i].lo[d]);
            max_half[d] = h > max_half[d] ? h : max_half[d];
        }
    }

    // Cells about the size of a typical rectangle.
    nbGridDesc desc = {.dim = 2, .cell_size = 2.0};
    nbGrid *grid = NULL;
    nbPoints pts = {.data = centres, .count = n, .dim = 2};
    nbStatus st = nb_grid_create(&desc, &grid);
    if (st == NB_OK) st = nb_grid_build(grid, &pts, 0.0);
    if (st != NB_OK) return fail("build", st);

    Search s = {.rects = rects};
    for (int32_t i = 0; i < n && st == NB_OK; i++) {
        // If b overlaps a, b's centre lies within a widened by b's half size <= max_half. The
        // 1e-9 slack covers the rounding of the centres; it only adds candidates.
        double lo[2];
        double hi[2];
        for (int d = 0; d < 2; d++) {
            double pad = max_half[d] * (1.0 + 1e-9) + 1e-9;
            lo[d] = rects[i].lo[d] - pad;
            hi[d] = rects[i].hi[d] + pad;
        }
        s.self = i;
        st = nb_grid_visit_box(grid, lo, hi, on_candidate, &s);
    }
    if (st != NB_OK) return fail("query", st);

    int64_t brute = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) brute += overlap(&rects[i], &rects[j]);
    printf("rectangles: %d rectangles, %lld overlapping pairs\n", n, (long long)s.overlaps);
    nb_grid_destroy(grid);
    free(rects);
    free(centres);
    if (s.overlaps != brute) {
        fprintf(stderr, "rectangles: MISMATCH: %lld pairs, brute force %lld\n",
                (long long)s.overlaps, (long long)brute);
        return 1;
    }
    return 0;
}
