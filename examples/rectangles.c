// SPDX-License-Identifier: MIT
// Rectangles of mixed sizes in a quadtree: every overlapping pair (a broad phase), the
// rectangles under a window, the nearest to a point, what a ray hits first, then every
// rectangle moved a little and the pairs found again. Touching counts (closed rectangles).
// Checks the pairs against brute force.
//
// Build and run: cc -std=c11 rectangles.c -lnearby -lm && ./a.out [rectangles]
#include <nearby/quadtree.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static double rnd(unsigned *seed) // uniform in [0, 1)
{
    *seed = *seed * 1103515245u + 12345u;
    return (double)(*seed >> 8) / 16777216.0;
}

static bool overlap(const nbRect *a, const nbRect *b)
{
    return a->min[0] <= b->max[0] && b->min[0] <= a->max[0] && a->min[1] <= b->max[1] &&
           b->min[1] <= a->max[1];
}

static int fail(const char *what, nbStatus st)
{
    fprintf(stderr, "rectangles: %s: %s\n", what, nb_status_message(st));
    return 1;
}

static int64_t brute_pairs(const nbRect *r, int n)
{
    int64_t count = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) count += overlap(&r[i], &r[j]);
    return count;
}

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 20000;
    if (n < 1) return fail("rectangle count", NB_ERR_OUT_OF_RANGE);
    const double side = sqrt((double)n) * 3.0;
    nbRect *rects = malloc((size_t)n * sizeof *rects);
    nbHandle *handles = malloc((size_t)n * sizeof *handles);
    if (rects == NULL || handles == NULL) return fail("rectangles", NB_ERR_OUT_OF_MEMORY);
    unsigned seed = 2024u;
    for (int i = 0; i < n; i++) {
        // Mostly small (0.2 to 2 wide), one in a hundred up to 20 wide.
        double scale = i % 100 == 0 ? 20.0 : 2.0;
        for (int d = 0; d < 2; d++) {
            double half = (0.1 + 0.9 * rnd(&seed)) * scale * 0.5;
            double c = rnd(&seed) * side;
            rects[i].min[d] = c - half;
            rects[i].max[d] = c + half;
        }
    }

    // The bounds are a hint: the root moves to the rectangles and grows as they need.
    nbQuadtreeDesc desc = {.bounds = {{0.0, 0.0}, {side, side}}};
    nbQuadtree *tree = NULL;
    nbStatus st = nb_quadtree_create(&desc, &tree);
    // Rectangle i gets user value i (users NULL) and its handle in handles[i].
    if (st == NB_OK) st = nb_quadtree_build(tree, rects, n, NULL, NULL, handles);
    if (st != NB_OK) return fail("build", st);

    int64_t pairs = 0;
    st = nb_quadtree_count_pairs(tree, &pairs);
    if (st != NB_OK) return fail("pairs", st);

    nbHit hits[256];
    int32_t found = 0;
    const nbBox window = {{0.0, 0.0}, {10.0, 10.0}};
    st = nb_quadtree_query_box(tree, &window, NB_FILTER_ALL, hits, 256, &found);
    if (st != NB_OK && st != NB_ERR_BUFFER_TOO_SMALL) return fail("window", st);

    const double at[2] = {side / 2, side / 2};
    nbHitNeighbor near[3];
    int32_t nearest = 0;
    st = nb_quadtree_knn(tree, at, NB_FILTER_ALL, (double)INFINITY, near, 3, &nearest);
    if (st != NB_OK) return fail("knn", st);

    const double dir[2] = {1.0, 0.5};
    nbRayHit first;
    int32_t hit = 0;
    st = nb_quadtree_raycast(tree, at, dir, side, NB_FILTER_ALL, &first, &hit);
    if (st != NB_OK) return fail("raycast", st);

    printf("rectangles: %d rectangles, %lld overlapping pairs, %d under [0,10]^2", n,
           (long long)pairs, (int)found);
    if (nearest > 0) printf(", nearest to the centre #%llu", (unsigned long long)near[0].hit.user);
    if (hit) printf(", the ray hits #%llu at %.3f", (unsigned long long)first.hit.user, first.t);
    printf("\n");

    // A frame of motion: every rectangle steps a little. A move within its node's bounds
    // rewrites four doubles; the rest change nodes without searching.
    for (int i = 0; i < n && st == NB_OK; i++) {
        const double dx = rnd(&seed) - 0.5, dy = rnd(&seed) - 0.5;
        rects[i].min[0] += dx;
        rects[i].max[0] += dx;
        rects[i].min[1] += dy;
        rects[i].max[1] += dy;
        st = nb_quadtree_move(tree, handles[i], &rects[i]);
    }
    if (st != NB_OK) return fail("move", st);
    int64_t moved_pairs = 0;
    st = nb_quadtree_count_pairs(tree, &moved_pairs);
    if (st != NB_OK) return fail("pairs after the move", st);
    printf("rectangles: after a step, %lld overlapping pairs\n", (long long)moved_pairs);
    nb_quadtree_destroy(tree);

    // The pairs of the moved rectangles against brute force (the first set's check is in
    // tests/test_quadtree.c).
    const int64_t brute = brute_pairs(rects, n);
    free(rects);
    free(handles);
    if (moved_pairs != brute) {
        fprintf(stderr, "rectangles: MISMATCH: %lld pairs, brute force %lld\n",
                (long long)moved_pairs, (long long)brute);
        return 1;
    }
    return 0;
}
