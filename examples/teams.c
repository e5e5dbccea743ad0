// SPDX-License-Identifier: MIT
// A bounded arena with groups: units of four teams, each asking for the enemies within its
// weapon range, and every (unit, enemy) pair counted once. The groups ride along as filter
// bits: a unit's category is its team's bit and its mask every other team's, so the grid
// never reports a teammate, and nothing is filtered after the fact. The tile grid (tiles that
// keep their entities by group) is not built yet; meanwhile this is the dense grid, rebuilt
// each frame. Checks both answers against brute force.
//
// Build and run: cc -std=c11 teams.c -lnearby -lm && ./a.out [units]
#include <nearby/grid.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { TEAMS = 4 };
static const double RANGE = 3.0; // weapon range

typedef struct Unit {
    double pos[2];
    uint32_t team_bit; // category: which team the unit is on
    uint32_t enemies;  // mask: the teams it may match (every team but its own)
} Unit;

static double rnd(unsigned *seed) // uniform in [0, 1)
{
    *seed = *seed * 1103515245u + 12345u;
    return (double)(*seed >> 8) / 16777216.0;
}

static bool count_one(int32_t index, void *user)
{
    (void)index;
    (*(int64_t *)user)++;
    return true;
}

static int fail(const char *what, nbStatus st)
{
    fprintf(stderr, "teams: %s: %s\n", what, nb_status_message(st));
    return 1;
}

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 20000;
    if (n < 1) return fail("unit count", NB_ERR_OUT_OF_RANGE);
    const double side = sqrt((double)n) * 2.0; // the arena: [0, side)^2
    Unit *u = malloc((size_t)n * sizeof *u);
    if (u == NULL) return fail("units", NB_ERR_OUT_OF_MEMORY);
    unsigned seed = 12345u;
    for (int i = 0; i < n; i++) {
        u[i].pos[0] = rnd(&seed) * side;
        u[i].pos[1] = rnd(&seed) * side;
        u[i].team_bit = 1u << (i % TEAMS);
        u[i].enemies = ((1u << TEAMS) - 1u) & ~u[i].team_bit;
    }

    // The coordinates, categories and masks are read straight out of the array of structs.
    nbPoints pts = {.data = u[0].pos,
                    .count = n,
                    .dim = 2,
                    .stride = sizeof(Unit),
                    .category = &u[0].team_bit,
                    .category_stride = sizeof(Unit),
                    .mask = &u[0].enemies,
                    .mask_stride = sizeof(Unit)};
    nbGridDesc desc = {.dim = 2};
    nbGrid *grid = NULL;
    nbStatus st = nb_grid_create(&desc, &grid);
    if (st == NB_OK) st = nb_grid_build(grid, &pts, RANGE);
    if (st != NB_OK) return fail("build", st);

    // Each unit: the enemies in range. The query's filter says who asks (category) and whom it
    // wants (mask); a stored unit must want the asker's team too.
    int64_t sightings = 0;
    for (int i = 0; i < n && st == NB_OK; i++) {
        nbFilter f = {.category = u[i].team_bit, .mask = u[i].enemies};
        st = nb_grid_visit_radius(grid, u[i].pos, RANGE, f, count_one, &sightings);
    }
    // Every unordered (unit, enemy) pair once: the all-pairs calls apply the stored bits.
    int64_t pairs = 0;
    if (st == NB_OK) st = nb_grid_count_pairs(grid, RANGE, &pairs);
    if (st != NB_OK) return fail("query", st);

    // Brute force, O(n^2): the same `<= r*r` test, teammates skipped.
    int64_t brute = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double dx = u[i].pos[0] - u[j].pos[0];
            double dy = u[i].pos[1] - u[j].pos[1];
            brute += u[i].team_bit != u[j].team_bit && dx * dx + dy * dy <= RANGE * RANGE;
        }
    printf("teams: %d units in %d teams, %lld enemy pairs within %.1f, %lld sightings\n", n, TEAMS,
           (long long)pairs, RANGE, (long long)sightings);
    nb_grid_destroy(grid);
    free(u);
    if (pairs != brute || sightings != 2 * brute) {
        fprintf(stderr, "teams: MISMATCH: pairs %lld, sightings %lld, brute force %lld\n",
                (long long)pairs, (long long)sightings, (long long)brute);
        return 1;
    }
    return 0;
}
