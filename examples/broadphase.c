// SPDX-License-Identifier: MIT
// broadphase: the collision "broad phase" of a 2D physics step. N circles of one radius bounce
// around a box; two circles touch when their centres are at most 2 * RADIUS apart, which is
// exactly "all pairs within 2 * RADIUS", so each frame is one grid build and one pair visit.
//
//   broadphase [N]     N circles (default 20000) for 100 frames
#include <nearby/grid.h>

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { FRAMES = 100 };
static const double RADIUS = 0.5; // every circle's radius
static const double DT = 0.02;

typedef struct World {
    int32_t n;
    double size; // circles live in [RADIUS, size - RADIUS]^2
    double *pos; // x, y interleaved: what the grid is built from
    double *vel;
    int64_t contacts; // pairs touching this frame
} World;

// The narrow phase, called by nb_grid_visit_pairs once for each touching pair (i < j): push the
// two apart and exchange their velocities along the line between them (equal masses). Moving
// circles here is safe: the grid works on its own copy of the positions from nb_grid_build.
static bool on_contact(int32_t i, int32_t j, void *user)
{
    World *w = user;
    double *a = w->pos + 2 * i;
    double *b = w->pos + 2 * j;
    double nx = b[0] - a[0];
    double ny = b[1] - a[1];
    double d = hypot(nx, ny);
    w->contacts++;
    if (d == 0.0) return true; // same centre: no direction to push along
    nx /= d;
    ny /= d;
    double push = 0.5 * (2.0 * RADIUS - d); // half the overlap each (may be < 0 if already moved)
    if (push > 0.0) {
        a[0] -= push * nx;
        a[1] -= push * ny;
        b[0] += push * nx;
        b[1] += push * ny;
    }
    double *va = w->vel + 2 * i;
    double *vb = w->vel + 2 * j;
    double approach = (va[0] - vb[0]) * nx + (va[1] - vb[1]) * ny;
    if (approach > 0.0) { // moving towards each other: swap the normal components
        va[0] -= approach * nx;
        va[1] -= approach * ny;
        vb[0] += approach * nx;
        vb[1] += approach * ny;
    }
    return true; // false would stop the visit early
}

static void check(const char *call, nbStatus status)
{
    if (status == NB_OK) return;
    // NB_ERR_NOT_FINITE would mean a position went NaN, NB_ERR_OUT_OF_MEMORY that the first
    // build could not get memory, NB_ERR_INTERNAL a bug in nearby. Nothing to recover here.
    fprintf(stderr, "broadphase: %s: %s (%s)\n", call, nb_status_str(status),
            nb_status_message(status));
    exit(1);
}

static uint64_t rng_state = 3;
static double uniform01(void) // splitmix64: deterministic, so every run is the same
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

// The quadratic answer, to check the first frame against when N is small.
static int64_t brute_force_contacts(const World *w)
{
    const double reach = 2.0 * RADIUS;
    int64_t count = 0;
    for (int32_t i = 0; i < w->n; i++)
        for (int32_t j = i + 1; j < w->n; j++) {
            double dx = w->pos[2 * i] - w->pos[2 * j];
            double dy = w->pos[2 * i + 1] - w->pos[2 * j + 1];
            count += dx * dx + dy * dy <= reach * reach; // the test nearby uses, exactly
        }
    return count;
}

int main(int argc, char **argv)
{
    // The optional size argument: digits only.
    char *end = NULL;
    long n = argc > 1 ? strtol(argv[1], &end, 10) : 20000;
    bool bad = argc > 2 || (argc > 1 && (end == argv[1] || *end != '\0'));
    if (bad || n < 1 || n > 10000000) {
        fprintf(stderr, "usage: broadphase [N]   (1 <= N <= 10^7 circles)\n");
        return 2;
    }
    World w = {.n = (int32_t)n};
    w.size = sqrt((double)n * 3.14159 * RADIUS * RADIUS / 0.3); // circles cover ~30% of the box
    w.pos = malloc((size_t)n * 2 * sizeof(double));
    w.vel = malloc((size_t)n * 2 * sizeof(double));
    if (w.pos == NULL || w.vel == NULL) return 1;
    for (int32_t i = 0; i < 2 * w.n; i++) {
        w.pos[i] = RADIUS + (w.size - 2.0 * RADIUS) * uniform01();
        w.vel[i] = 4.0 * uniform01() - 2.0;
    }

    // cell_size 0: the cell edge is the radius given to nb_grid_build, here the contact distance.
    nbGridDesc desc = {.dim = 2};
    nbGrid *grid = NULL;
    check("nb_grid_create", nb_grid_create(&desc, &grid));

    int64_t total = 0;
    int64_t most = 0;
    int status = 0;
    for (int frame = 0; frame < FRAMES; frame++) {
        // Integrate, bouncing off the walls.
        for (int32_t i = 0; i < 2 * w.n; i++) {
            w.pos[i] += DT * w.vel[i];
            if (w.pos[i] < RADIUS) w.vel[i] = fabs(w.vel[i]);
            if (w.pos[i] > w.size - RADIUS) w.vel[i] = -fabs(w.vel[i]);
        }

        // Broad phase: rebuild (no allocation after the first frame), then visit every pair
        // within the contact distance once. The distance test is exact, so touching circles
        // (centres exactly 2 * RADIUS apart) are reported too.
        nbPoints points = {.data = w.pos, .count = w.n, .dim = 2};
        check("nb_grid_build", nb_grid_build(grid, &points, 2.0 * RADIUS));
        const int64_t expected = frame == 0 && w.n <= 5000 ? brute_force_contacts(&w) : -1;
        w.contacts = 0;
        check("nb_grid_visit_pairs", nb_grid_visit_pairs(grid, 2.0 * RADIUS, on_contact, &w));
        if (expected >= 0 && expected != w.contacts) {
            fprintf(stderr,
                    "broadphase: frame 0: %" PRId64 " contacts, brute force says %" PRId64 "\n",
                    w.contacts, expected);
            status = 1;
        }
        total += w.contacts;
        if (w.contacts > most) most = w.contacts;
    }

    printf("%" PRId32 " circles, %d frames: %.1f contacts per frame on average, %" PRId64
           " at most\n",
           w.n, FRAMES, (double)total / FRAMES, most);
    nb_grid_destroy(grid);
    free(w.pos);
    free(w.vel);
    return status;
}
