// SPDX-License-Identifier: MIT
// pairs_basic: every pair of points within a radius, the README example in full.
//
//   pairs_basic [N]     N random points (default 10000), all pairs closer than r
//
// The steps: describe your points with an nbPoints view, build a grid from them, and ask for
// the pairs into a buffer of your own, growing it when nearby says it was too small. Then, to
// show the exactness contract, the answer is compared with a brute-force double loop.
#include <nearby/grid.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// Every nearby function that can fail returns an nbStatus. This is what each one means for the
// calls in this program; a real application would log it and recover where it can.
static void report(const char *call, nbStatus status)
{
    switch (status) {
    case NB_OK: return;
    case NB_ERR_NULL_ARG:     // we passed a NULL pointer where one is required
    case NB_ERR_NOT_FINITE:   // a coordinate or the radius was NaN or infinite
    case NB_ERR_OUT_OF_RANGE: // e.g. a negative radius, a wrong dim, a stride too small
    case NB_ERR_BAD_HANDLE:   // only structures with handles return it; the grid never does
        fprintf(stderr, "pairs_basic: %s: bad input: %s\n", call, nb_status_message(status));
        break;
    case NB_ERR_OUT_OF_MEMORY: // the allocator failed; the grid is unchanged and still usable
        fprintf(stderr, "pairs_basic: %s: out of memory\n", call);
        break;
    case NB_ERR_BUFFER_TOO_SMALL: // handled where it can occur (the pairs loop below)
    case NB_ERR_INTERNAL:         // nearby caught a bug in itself: please report it
    case NB_STATUS_COUNT:         // not a status, only the number of them
    default:
        fprintf(stderr, "pairs_basic: %s: %s (%s)\n", call, nb_status_str(status),
                nb_status_message(status));
        break;
    }
    exit(1);
}

// A small deterministic generator (splitmix64) so every run sees the same points.
static uint64_t rng_state = 42;
static double uniform01(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53; // 53 random bits in [0, 1)
}

int main(int argc, char **argv)
{
    // The optional size argument: digits only.
    char *end = NULL;
    long n = argc > 1 ? strtol(argv[1], &end, 10) : 10000;
    bool bad = argc > 2 || (argc > 1 && (end == argv[1] || *end != '\0'));
    if (bad || n < 0 || n > INT32_MAX) {
        fprintf(stderr, "usage: pairs_basic [N]   (0 <= N < 2^31)\n");
        return 2;
    }
    const int32_t count = (int32_t)n;
    const double r = 0.01; // the radius: points in the unit square, about 3 neighbours each
                           // at N = 10000 (density N * pi * r^2)

    // 1. Your points, in your own array: x0, y0, x1, y1, ... (interleaved doubles).
    double *xy = malloc((size_t)count * 2 * sizeof *xy);
    if (xy == NULL && count > 0) return 1;
    for (int32_t i = 0; i < 2 * count; i++) xy[i] = uniform01();

    // 2. A view of them. stride 0 means "packed": dim doubles per point. The grid copies what it
    //    needs during nb_grid_build and never keeps this pointer.
    nbPoints points = {.data = xy, .count = count, .dim = 2};

    // 3. A grid. Zero means "default" for every desc field: cell_size 0 makes the cell edge the
    //    radius passed to nb_grid_build, which is the fastest choice for that radius.
    nbGridDesc desc = {.dim = 2};
    nbGrid *grid = NULL;
    report("nb_grid_create", nb_grid_create(&desc, &grid));
    report("nb_grid_build", nb_grid_build(grid, &points, r));

    // 4. The pairs. Start with a guess; if it is too small nearby fills what fits, tells us the
    //    full count in `found`, and returns NB_ERR_BUFFER_TOO_SMALL: grow to that and ask again.
    //    (nb_grid_count_pairs counts without writing, if you would rather size it up front.)
    int64_t capacity = 1024;
    int64_t found = 0;
    nbPair *pairs = malloc((size_t)capacity * sizeof *pairs);
    if (pairs == NULL) return 1;
    for (;;) {
        nbStatus status = nb_grid_pairs(grid, r, pairs, capacity, &found);
        if (status != NB_ERR_BUFFER_TOO_SMALL) {
            report("nb_grid_pairs", status);
            break;
        }
        if ((uint64_t)found > SIZE_MAX / sizeof *pairs) return 1; // would not fit in memory
        free(pairs);
        capacity = found;
        pairs = malloc((size_t)capacity * sizeof *pairs);
        if (pairs == NULL) return 1;
    }

    // 5. Use them. Each unordered pair comes once, with i < j, as indices into your array.
    printf("%" PRId32 " points, radius %g: %" PRId64 " pairs (buffer capacity %" PRId64 ")\n",
           count, r, found, capacity);
    for (int64_t k = 0; k < found && k < 3; k++) {
        const nbPair p = pairs[k];
        printf("  pair %" PRId32 " - %" PRId32 ": (%.4f, %.4f) and (%.4f, %.4f)\n", p.i, p.j,
               xy[2 * p.i], xy[2 * p.i + 1], xy[2 * p.j], xy[2 * p.j + 1]);
    }

    // 6. Exactness: the same test as nearby, dx*dx + dy*dy <= r*r, over all N^2/2 pairs.
    //    (Only for small N: this is the quadratic loop the grid exists to avoid.)
    int status = 0;
    if (count <= 20000) {
        int64_t brute = 0;
        for (int32_t i = 0; i < count; i++)
            for (int32_t j = i + 1; j < count; j++) {
                double dx = xy[2 * i] - xy[2 * j];
                double dy = xy[2 * i + 1] - xy[2 * j + 1];
                brute += dx * dx + dy * dy <= r * r;
            }
        printf("brute force agrees: %s\n", brute == found ? "yes" : "NO");
        status = brute == found ? 0 : 1;
    }

    // 7. Clean up: the grid owns its memory, you own yours.
    nb_grid_destroy(grid);
    free(pairs);
    free(xy);
    return status;
}
