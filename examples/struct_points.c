// SPDX-License-Identifier: MIT
// struct_points: query points that live inside your own structs, without copying them out.
//
//   struct_points [N]     N units (default 10000) on a 2D map; how many enemies does each see?
//
// nbPoints describes where the coordinates are: point i's first coordinate is at byte
// i * stride from `data`. Point `data` at the first unit's x, set stride to sizeof(Unit), and
// nearby reads x and y straight out of your array. Results are indices into that same array.
#include <nearby/grid.h>

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// A game's unit. Only pos[0] and pos[1] matter to the grid; the stride skips the rest.
typedef struct Unit {
    char name[16];
    int32_t team;  // 0 or 1
    double pos[3]; // x, y, z (the height is ignored: the grid is 2D)
    double health;
} Unit;

static const double SIGHT = 5.0; // a unit sees every unit within this distance

static void check(const char *call, nbStatus status)
{
    if (status == NB_OK) return;
    // NB_ERR_OUT_OF_RANGE from nb_grid_build would most likely mean a stride smaller than dim
    // doubles; NB_ERR_NOT_FINITE a NaN coordinate; NB_ERR_OUT_OF_MEMORY a failed allocation
    // (the grid is unchanged); NB_ERR_INTERNAL a bug in nearby.
    fprintf(stderr, "struct_points: %s: %s (%s)\n", call, nb_status_str(status),
            nb_status_message(status));
    exit(1);
}

static uint64_t rng_state = 5;
static double uniform01(void) // splitmix64: deterministic, so every run is the same
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

int main(int argc, char **argv)
{
    // The optional size argument: digits only.
    char *end = NULL;
    long n = argc > 1 ? strtol(argv[1], &end, 10) : 10000;
    bool bad = argc > 2 || (argc > 1 && (end == argv[1] || *end != '\0'));
    if (bad || n < 1 || n > 10000000) {
        fprintf(stderr, "usage: struct_points [N]   (1 <= N <= 10^7 units)\n");
        return 2;
    }
    const int32_t count = (int32_t)n;
    const double map = 3.0 * sqrt((double)count); // about 9 units within SIGHT of each
    Unit *units = calloc((size_t)count, sizeof *units);
    if (units == NULL) return 1;
    for (int32_t i = 0; i < count; i++) {
        snprintf(units[i].name, sizeof units[i].name, "unit%" PRId32, i);
        units[i].team = i % 2;
        units[i].pos[0] = map * uniform01();
        units[i].pos[1] = map * uniform01();
        units[i].pos[2] = 10.0 * uniform01();
        units[i].health = 100.0;
    }

    // The view: x of unit 0, then every sizeof(Unit) bytes. dim 2 reads pos[0] and pos[1].
    nbPoints points = {.data = &units[0].pos[0], .count = count, .dim = 2, .stride = sizeof(Unit)};
    nbGridDesc desc = {.dim = 2};
    nbGrid *grid = NULL;
    check("nb_grid_create", nb_grid_create(&desc, &grid));
    check("nb_grid_build", nb_grid_build(grid, &points, SIGHT));

    // Radius queries into a buffer we own. Start small: when a query finds more than fit,
    // nearby fills the buffer, sets `found` to the full count and returns
    // NB_ERR_BUFFER_TOO_SMALL; we grow to `found` and repeat that query.
    int32_t capacity = 4;
    int32_t *seen = malloc((size_t)capacity * sizeof *seen);
    if (seen == NULL) return 1;
    int64_t enemies_seen = 0;
    int32_t most = -1; // the unit that sees the most enemies
    int32_t most_enemies = -1;
    for (int32_t i = 0; i < count; i++) {
        int32_t found = 0;
        nbStatus status =
            nb_grid_query_radius(grid, units[i].pos, SIGHT, NB_FILTER_ALL, seen, capacity, &found);
        if (status == NB_ERR_BUFFER_TOO_SMALL) {
            int32_t *bigger = realloc(seen, (size_t)found * sizeof *seen);
            if (bigger == NULL) return 1;
            seen = bigger;
            capacity = found;
            status = nb_grid_query_radius(grid, units[i].pos, SIGHT, NB_FILTER_ALL, seen, capacity,
                                          &found);
        }
        check("nb_grid_query_radius", status);

        // The indices are positions in `units`: read the struct directly.
        int32_t enemies = 0;
        for (int32_t k = 0; k < found; k++) enemies += units[seen[k]].team != units[i].team;
        enemies_seen += enemies;
        if (enemies > most_enemies) {
            most_enemies = enemies;
            most = i;
        }
    }
    printf("%" PRId32 " units: %.2f enemies in sight on average; %s (team %" PRId32
           ") sees the most, %" PRId32 "\n",
           count, (double)enemies_seen / count, units[most].name, units[most].team, most_enemies);
    printf("query buffer grew from 4 to %" PRId32 " entries\n", capacity);

    // Check the busiest unit by brute force: same distance test (dx*dx + dy*dy <= r*r).
    int32_t brute = 0;
    for (int32_t j = 0; j < count; j++) {
        double dx = units[j].pos[0] - units[most].pos[0];
        double dy = units[j].pos[1] - units[most].pos[1];
        brute += units[j].team != units[most].team && dx * dx + dy * dy <= SIGHT * SIGHT;
    }
    int status = brute == most_enemies ? 0 : 1;
    if (status != 0) fprintf(stderr, "struct_points: brute force sees %" PRId32 "\n", brute);

    nb_grid_destroy(grid);
    free(seen);
    free(units);
    return status;
}
