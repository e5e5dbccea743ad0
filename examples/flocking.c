// SPDX-License-Identifier: MIT
// flocking: thousands of boids. Every frame rebuilds a grid from the boids' positions, finds
// each boid's neighbours through it, and steers by the three classic rules (separation,
// alignment, cohesion). After the first frame nothing is allocated: the example counts every
// allocation through nearby's allocator hooks to show it.
//
//   flocking [N]     N boids (default 5000) for 200 frames
#include <nearby/grid.h>

#include <inttypes.h>
#include <math.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { FRAMES = 200 };
static const double VIEW = 1.0;      // a boid sees the others within this radius
static const double PERSONAL = 0.35; // ... and keeps them farther away than this
static const double MIN_SPEED = 0.5;
static const double MAX_SPEED = 2.0;
static const double DT = 0.05; // seconds per frame

// ---- allocator hooks: malloc with a counter, so we can prove the frame loop allocates nothing.
typedef struct AllocStats {
    int64_t allocs; // successful allocations so far
    size_t live;    // bytes currently held
} AllocStats;

static void *counting_alloc(size_t size, size_t align, void *user)
{
    AllocStats *stats = user;
    // nearby asks for a power-of-two alignment of at most 64; aligned_alloc needs the size to
    // be a multiple of it.
    if (align < alignof(max_align_t)) align = alignof(max_align_t);
    if (size > SIZE_MAX - align) return NULL;
    size_t rounded = (size + align - 1) / align * align;
    void *ptr = aligned_alloc(align, rounded == 0 ? align : rounded);
    if (ptr != NULL) {
        stats->allocs++;
        stats->live += size;
    }
    return ptr;
}

static void counting_free(void *ptr, size_t size, void *user)
{
    AllocStats *stats = user;
    if (ptr != NULL) stats->live -= size; // nearby passes back the size it asked for
    free(ptr);
}

// ---- the flock: positions and velocities as interleaved (x, y) doubles.
typedef struct Flock {
    int32_t n;
    double world;     // boids live in [0, world)^2
    double *pos;      // what the grid is built from
    double *vel;      // this frame's velocities (read by the neighbour visits)
    double *next_vel; // next frame's (written), so every boid sees the same frame
} Flock;

// What a boid accumulates over its neighbours; passed to the visitor as `user`.
typedef struct Steer {
    const Flock *flock;
    int32_t self;
    int32_t seen;
    double center[2];  // sum of neighbour positions  (cohesion)
    double heading[2]; // sum of neighbour velocities (alignment)
    double away[2];    // push from boids too close   (separation)
} Steer;

// Called by nb_grid_visit_radius once for every boid within VIEW of the query point, including
// the boid itself. Returning true asks for more; false would stop the query early.
static bool on_neighbour(int32_t j, void *user)
{
    Steer *s = user;
    if (j == s->self) return true;
    const double *me = s->flock->pos + 2 * s->self;
    const double *other = s->flock->pos + 2 * j;
    double dx = other[0] - me[0];
    double dy = other[1] - me[1];
    double d2 = dx * dx + dy * dy;
    s->seen++;
    s->center[0] += other[0];
    s->center[1] += other[1];
    s->heading[0] += s->flock->vel[2 * j];
    s->heading[1] += s->flock->vel[2 * j + 1];
    if (d2 > 0.0 && d2 < PERSONAL * PERSONAL) { // closer is pushed harder
        s->away[0] -= dx / d2;
        s->away[1] -= dy / d2;
    }
    return true;
}

static void check(const char *call, nbStatus status)
{
    if (status == NB_OK) return;
    // NB_ERR_OUT_OF_MEMORY: the hooks returned NULL. NB_ERR_NOT_FINITE: a position went NaN
    // (a bug in the steering). Anything else is a bad argument, or NB_ERR_INTERNAL: a bug in
    // nearby. None of them can be recovered from here.
    fprintf(stderr, "flocking: %s: %s (%s)\n", call, nb_status_str(status),
            nb_status_message(status));
    exit(1);
}

static double seconds(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_state = 7;
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
    long n = argc > 1 ? strtol(argv[1], &end, 10) : 5000;
    bool bad = argc > 2 || (argc > 1 && (end == argv[1] || *end != '\0'));
    if (bad || n < 1 || n > 10000000) {
        fprintf(stderr, "usage: flocking [N]   (1 <= N <= 10^7 boids)\n");
        return 2;
    }
    Flock f = {.n = (int32_t)n};
    f.world = sqrt((double)n * 3.14159 / 8.0) + 2.0 * VIEW; // about 8 boids in view at the start
    f.pos = malloc((size_t)n * 2 * sizeof(double));
    f.vel = malloc((size_t)n * 2 * sizeof(double));
    f.next_vel = malloc((size_t)n * 2 * sizeof(double));
    if (f.pos == NULL || f.vel == NULL || f.next_vel == NULL) return 1;
    for (int32_t i = 0; i < f.n; i++) {
        double angle = 6.283185307179586 * uniform01();
        f.pos[2 * i] = f.world * uniform01();
        f.pos[2 * i + 1] = f.world * uniform01();
        f.vel[2 * i] = MIN_SPEED * cos(angle);
        f.vel[2 * i + 1] = MIN_SPEED * sin(angle);
    }

    // One grid for the whole run, with our counting allocator. capacity_hint reserves room for
    // N points up front; without it the first nb_grid_build would allocate instead.
    AllocStats stats = {0};
    nbAllocator hooks = {.alloc = counting_alloc, .free = counting_free, .user = &stats};
    nbGridDesc desc = {.dim = 2, .capacity_hint = f.n, .allocator = &hooks};
    nbGrid *grid = NULL;
    check("nb_grid_create", nb_grid_create(&desc, &grid));

    int64_t allocs_after_first = 0;
    int64_t neighbours = 0;
    double first_alignment = 0.0; // how well boids agree with their neighbours' heading,
    double alignment = 0.0;       // -1..1, averaged over the boids: frame 0 and the last
    const double t0 = seconds();
    for (int frame = 0; frame < FRAMES; frame++) {
        const int64_t allocs_before = stats.allocs;

        // Rebuild from this frame's positions. The grid copies them (count, prefix sum,
        // scatter), so moving the boids afterwards cannot confuse it. With the desc's cell_size
        // at 0, the cell edge is VIEW: a query at VIEW looks at the 3x3 cells around a boid.
        nbPoints points = {.data = f.pos, .count = f.n, .dim = 2};
        check("nb_grid_build", nb_grid_build(grid, &points, VIEW));

        // Steer: each boid visits the boids within VIEW of it. Queries never modify the grid,
        // so this loop could be split among threads as it is.
        double agree = 0.0;
        for (int32_t i = 0; i < f.n; i++) {
            Steer s = {.flock = &f, .self = i};
            check("nb_grid_visit_radius",
                  nb_grid_visit_radius(grid, f.pos + 2 * i, VIEW, NB_FILTER_ALL, on_neighbour, &s));
            neighbours += s.seen;
            double vx = f.vel[2 * i];
            double vy = f.vel[2 * i + 1];
            if (s.seen > 0) {
                // cosine between my heading and my neighbours' average heading
                double hx = s.heading[0];
                double hy = s.heading[1];
                double norm = hypot(vx, vy) * hypot(hx, hy);
                agree += norm > 0.0 ? (vx * hx + vy * hy) / norm : 0.0;

                double inv = 1.0 / s.seen;
                vx += 0.01 * (s.center[0] * inv - f.pos[2 * i]) + 0.15 * (s.heading[0] * inv - vx);
                vy += 0.01 * (s.center[1] * inv - f.pos[2 * i + 1]) +
                      0.15 * (s.heading[1] * inv - vy);
                vx += 0.01 * s.away[0];
                vy += 0.01 * s.away[1];
            }
            // Turn back near the walls, and keep the speed within [MIN_SPEED, MAX_SPEED].
            if (f.pos[2 * i] < VIEW) vx += 0.1;
            if (f.pos[2 * i] > f.world - VIEW) vx -= 0.1;
            if (f.pos[2 * i + 1] < VIEW) vy += 0.1;
            if (f.pos[2 * i + 1] > f.world - VIEW) vy -= 0.1;
            double speed = hypot(vx, vy);
            double scale = speed < MIN_SPEED   ? MIN_SPEED / (speed > 0.0 ? speed : 1.0)
                           : speed > MAX_SPEED ? MAX_SPEED / speed
                                               : 1.0;
            f.next_vel[2 * i] = vx * scale;
            f.next_vel[2 * i + 1] = vy * scale;
        }

        // Move everyone at once.
        double *t = f.vel;
        f.vel = f.next_vel;
        f.next_vel = t;
        for (int32_t i = 0; i < 2 * f.n; i++) f.pos[i] += DT * f.vel[i];

        alignment = agree / f.n;
        if (frame == 0) first_alignment = alignment;
        if (frame > 0) allocs_after_first += stats.allocs - allocs_before;
    }
    const double elapsed = seconds() - t0;

    printf("%" PRId32 " boids, %d frames: %.2f ms/frame, %.1f neighbours per boid\n", f.n, FRAMES,
           1e3 * elapsed / FRAMES, (double)neighbours / ((double)f.n * FRAMES));
    printf("alignment with neighbours %.2f -> %.2f (0 = every which way, 1 = all the same)\n",
           first_alignment, alignment);
    printf("grid holds %zu bytes; allocations: %" PRId64 " in total, %" PRId64
           " after the first frame\n",
           nb_grid_memory_bytes(grid), stats.allocs, allocs_after_first);

    nb_grid_destroy(grid);
    free(f.pos);
    free(f.vel);
    free(f.next_vel);
    if (stats.live != 0) {
        fprintf(stderr, "flocking: the grid did not free %zu bytes\n", stats.live);
        return 1;
    }
    return allocs_after_first == 0 ? 0 : 1;
}
