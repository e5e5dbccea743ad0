// SPDX-License-Identifier: MIT
// The tile-grid benchmark: N agents in 4 groups and W static waypoints in a square
// world; each frame every agent moves (a straight walk that bounces off the walls), then asks
// for its nearest enemy (the nearest agent of the 3 other groups) and its nearest waypoint.
// Three peers in one run, on the same trajectories:
//   tiles  nb_tiles_*: agents inserted once by handle, nb_tiles_move every frame, then
//          nb_tiles_knn (k = 1, the filter's mask = the other three groups) and
//          nb_tiles_knn_waypoints (k = 1); waypoints added once in a batch
//   grid   the dense grid rebuilt every frame: nb_grid_build over all positions with each
//          agent's group as its category, then nb_grid_knn_filtered (k = 1, mask = the other
//          groups); the waypoints in a second grid built once
//   naive  the tile system games commonly write, as it is usually written (naive_tiles.c): a
//          list per (tile, group) of pointers to separately allocated entities, linear
//          List.Remove, a fresh neighbour list (GetNearbyTiles: the tile and its 8
//          neighbours) for every query, and every tile searched when those 9 cannot prove the
//          nearest
//   naive_rings  the same lists, searched in rings of tiles outward (a fresh list a ring)
//          with an exact stop: the same design with a better search than it has
// Every peer uses the same tile / cell edge. Only the structure's work is timed (update +
// queries); moving the agents is the simulation's and is not. Each peer's answers are summed
// (the squared distances, in agent order) and must agree exactly with the others'. Allocations
// per frame count every malloc of the process over the timed frames (alloc_count.c).
//
//   bench_tiles [N [W [FRAMES [RUNS [TILE [PEERS]]]]]]   defaults 50000 5000 100 3 10, all
//                    peers; prints a table to stderr and CSV lines (header first) to stdout.
//                    PEERS (e.g. "tiles,grid", for callgrind) leaves the others out: their
//                    lines then repeat the tiles' figures
//   bench_tiles N W 1 1 TILE far   instead: askers inside the world against askers far outside
//                    it (1e6 beyond the world, on the diagonals and along the axes), the
//                    agents standing at their start: microseconds a query for nb_tiles_knn
//                    (k = 1 and 8, the enemy groups), nb_tiles_knn_waypoints (k = 1) and
//                    nb_tiles_query_radius (a radius that reaches 10 agents past the nearest),
//                    the least of 5 rounds; the answers are checked against a scan
#include "alloc_count.h"
#include "bench_common.h"
#include "naive_tiles.h"

#include <nearby/grid.h>
#include <nearby/tiles.h>

#include <math.h>
#include <string.h>

#define WORLD 1000.0
enum { GROUPS = 4 };

typedef struct Sim {
    int n, nwp;
    double *pos, *vel, *wp;
    int *group;
} Sim;

static uint64_t rng = 0x7469;
static double unit(void)
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

static void sim_reset(Sim *s)
{
    rng = 0x7469;
    for (int i = 0; i < s->n; i++) {
        s->pos[2 * i] = unit() * WORLD;
        s->pos[2 * i + 1] = unit() * WORLD;
        const double a = unit() * 6.283185307179586, v = 0.5 + unit();
        s->vel[2 * i] = v * cos(a);
        s->vel[2 * i + 1] = v * sin(a);
        s->group[i] = i % GROUPS;
    }
}

static void sim_step(Sim *s)
{
    for (int i = 0; i < 2 * s->n; i++) {
        double x = s->pos[i] + s->vel[i];
        if (x < 0.0 || x >= WORLD) {
            s->vel[i] = -s->vel[i];
            x = s->pos[i] + s->vel[i];
        }
        s->pos[i] = x;
    }
}

// Each peer's run stays a function of its own, so that callgrind can tell them apart.
#if defined(__GNUC__)
#define NBB_NOINLINE __attribute__((noinline))
#else
#define NBB_NOINLINE
#endif

static void check(nbStatus st, const char *what)
{
    if (st != NB_OK) {
        fprintf(stderr, "bench_tiles: %s: %s\n", what, nb_status_str(st));
        exit(1);
    }
}

typedef struct Result {
    double ms_frame; // mean over the run's frames
    double allocs_frame;
    double sum; // the answers' checksum
    size_t bytes;
} Result;

static uint32_t enemies(int g)
{
    return ((1u << GROUPS) - 1u) & ~(1u << g);
}

NBB_NOINLINE static Result run_tiles(Sim *s, int frames, double tile)
{
    Result r = {0, 0, 0, 0};
    nbTilesDesc d = {0};
    d.size[0] = d.size[1] = WORLD;
    d.tile_size[0] = d.tile_size[1] = tile;
    d.groups = GROUPS;
    d.capacity_hint = s->n;
    nbTiles *t = NULL;
    check(nb_tiles_create(&d, &t), "create");
    check(nb_tiles_add_waypoints(t, s->wp, NULL, s->nwp), "add_waypoints");
    nbHandle *h = malloc((size_t)s->n * sizeof(nbHandle));
    sim_reset(s);
    for (int i = 0; i < s->n; i++)
        check(nb_tiles_insert(t, s->pos + 2 * i, (uint64_t)i,
                              (nbFilter){1u << s->group[i], 0xFFFFFFFFu}, &h[i]),
              "insert");
    int64_t ns = 0;
    uint64_t allocs = 0;
    for (int f = 0; f < frames; f++) {
        sim_step(s);
        const uint64_t a0 = nbb_alloc_calls();
        const int64_t t0 = nbb_now_ns();
        for (int i = 0; i < s->n; i++) check(nb_tiles_move(t, h[i], s->pos + 2 * i), "move");
        double sum = 0.0;
        for (int i = 0; i < s->n; i++) {
            nbHitNeighbor e, w;
            int32_t fe = 0, fw = 0;
            const nbFilter flt = {0xFFFFFFFFu, enemies(s->group[i])}; // the other groups
            nb_tiles_knn(t, s->pos + 2 * i, flt, (double)INFINITY, &e, 1, &fe);
            nb_tiles_knn_waypoints(t, s->pos + 2 * i, (double)INFINITY, &w, 1, &fw);
            sum += e.dist2 + w.dist2;
        }
        ns += nbb_now_ns() - t0;
        allocs += nbb_alloc_calls() - a0;
        r.sum += sum;
    }
    r.ms_frame = (double)ns / frames * 1e-6;
    r.allocs_frame = (double)allocs / frames;
    r.bytes = nb_tiles_memory_bytes(t);
    nb_tiles_destroy(t);
    free(h);
    return r;
}

NBB_NOINLINE static Result run_grid(Sim *s, int frames, double tile)
{
    Result r = {0, 0, 0, 0};
    nbGridDesc d = {0};
    d.capacity_hint = s->n;
    nbGrid *g = NULL, *wg = NULL;
    check(nb_grid_create(&d, &g), "create");
    check(nb_grid_create(&d, &wg), "create");
    nbPoints wp = {0};
    wp.data = s->wp;
    wp.count = s->nwp;
    wp.dim = 2;
    check(nb_grid_build(wg, &wp, tile), "build waypoints");
    uint32_t *cat = malloc((size_t)s->n * sizeof(uint32_t));
    sim_reset(s);
    for (int i = 0; i < s->n; i++) cat[i] = 1u << s->group[i];
    nbPoints pts = {0};
    pts.data = s->pos;
    pts.count = s->n;
    pts.dim = 2;
    pts.category = cat;
    check(nb_grid_build(g, &pts, tile), "build"); // sizes its storage, untimed
    int64_t ns = 0;
    uint64_t allocs = 0;
    for (int f = 0; f < frames; f++) {
        sim_step(s);
        const uint64_t a0 = nbb_alloc_calls();
        const int64_t t0 = nbb_now_ns();
        check(nb_grid_build(g, &pts, tile), "build");
        double sum = 0.0;
        for (int i = 0; i < s->n; i++) {
            nbNeighbor e, w;
            int32_t fe = 0, fw = 0;
            const nbFilter flt = {0xFFFFFFFFu, enemies(s->group[i])};
            nb_grid_knn(g, s->pos + 2 * i, flt, (double)INFINITY, &e, 1, &fe);
            nb_grid_knn(wg, s->pos + 2 * i, NB_FILTER_ALL, (double)INFINITY, &w, 1, &fw);
            sum += e.dist2 + w.dist2;
        }
        ns += nbb_now_ns() - t0;
        allocs += nbb_alloc_calls() - a0;
        r.sum += sum;
    }
    r.ms_frame = (double)ns / frames * 1e-6;
    r.allocs_frame = (double)allocs / frames;
    r.bytes = nb_grid_memory_bytes(g) + nb_grid_memory_bytes(wg);
    nb_grid_destroy(g);
    nb_grid_destroy(wg);
    free(cat);
    return r;
}

NBB_NOINLINE static Result run_naive(Sim *s, int frames, double tile, bool rings)
{
    Result r = {0, 0, 0, 0};
    ntTiles *t = nt_create((int)(WORLD / tile + 0.5), WORLD, GROUPS, s->wp, s->nwp);
    ntEntity **e = malloc((size_t)s->n * sizeof(ntEntity *));
    sim_reset(s);
    for (int i = 0; i < s->n; i++) {
        e[i] = malloc(sizeof(ntEntity)); // a GameObject each
        e[i]->x = s->pos[2 * i];
        e[i]->y = s->pos[2 * i + 1];
        e[i]->group = s->group[i];
        e[i]->id = i;
        nt_add(t, e[i]);
    }
    int64_t ns = 0;
    uint64_t allocs = 0;
    for (int f = 0; f < frames; f++) {
        sim_step(s);
        const uint64_t a0 = nbb_alloc_calls();
        const int64_t t0 = nbb_now_ns();
        for (int i = 0; i < s->n; i++) {
            e[i]->x = s->pos[2 * i];
            e[i]->y = s->pos[2 * i + 1];
            nt_moved(t, e[i]);
        }
        double sum = 0.0;
        for (int i = 0; i < s->n; i++) {
            double de = 0.0, dw = 0.0;
            if (rings) {
                nt_nearest(t, e[i]->x, e[i]->y, enemies(e[i]->group), &de);
                nt_nearest_waypoint(t, e[i]->x, e[i]->y, &dw);
            } else {
                nt_nearest_3x3(t, e[i]->x, e[i]->y, enemies(e[i]->group), &de);
                nt_nearest_waypoint_3x3(t, e[i]->x, e[i]->y, &dw);
            }
            sum += de + dw;
        }
        ns += nbb_now_ns() - t0;
        allocs += nbb_alloc_calls() - a0;
        r.sum += sum;
    }
    r.ms_frame = (double)ns / frames * 1e-6;
    r.allocs_frame = (double)allocs / frames;
    for (int i = 0; i < s->n; i++) free(e[i]);
    free(e);
    nt_destroy(t);
    return r;
}

// Where far askers stand: outside the world by `far` on both axes (the four diagonals) or on
// one (the four sides, at the world's middle on the other), with a little jitter.
static void far_asker(int i, double far, double *q)
{
    static const double dir[8][2] = {{-1, -1}, {1, -1}, {-1, 1}, {1, 1},
                                     {-1, 0},  {1, 0},  {0, -1}, {0, 1}};
    const int k = i % 8;
    for (int a = 0; a < 2; a++) {
        const double base = dir[k][a] < 0 ? -far : dir[k][a] > 0 ? WORLD + far : 0.5 * WORLD;
        q[a] = base + (unit() - 0.5) * 20.0;
    }
}

typedef struct FarCheck {
    const double *q;
    double r2;
    int32_t n;
} FarCheck;

// The asker's answers against a scan of every agent (k = 1: the least dist2 over the enemy
// groups; the radius: how many lie within).
static void far_check(const Sim *s, const double *q, uint32_t groups, double d2, double r2,
                      int32_t found_r)
{
    double best = (double)INFINITY;
    int32_t within = 0;
    for (int i = 0; i < s->n; i++) {
        const double dx = s->pos[2 * i] - q[0], dy = s->pos[2 * i + 1] - q[1];
        const double e = dx * dx + dy * dy;
        if ((groups >> s->group[i]) & 1u) best = e < best ? e : best;
        within += e <= r2;
    }
    if (best != d2 || within != found_r) {
        fprintf(stderr, "bench_tiles: far: answers differ from a scan at (%g, %g)\n", q[0], q[1]);
        exit(1);
    }
}

// The "far" mode (see the top): a table on stderr, CSV lines on stdout.
static int run_far(Sim *s, double tile)
{
    enum { ASK = 2000, ROUNDS = 5, KINDS = 3 };
    nbTilesDesc d = {0};
    d.size[0] = d.size[1] = WORLD;
    d.tile_size[0] = d.tile_size[1] = tile;
    d.groups = GROUPS;
    nbTiles *t = NULL;
    check(nb_tiles_create(&d, &t), "create");
    check(nb_tiles_add_waypoints(t, s->wp, NULL, s->nwp), "add_waypoints");
    sim_reset(s);
    for (int i = 0; i < s->n; i++) {
        nbHandle h;
        check(nb_tiles_insert(t, s->pos + 2 * i, (uint64_t)i,
                              (nbFilter){1u << s->group[i], 0xFFFFFFFFu}, &h),
              "insert");
    }
    static const char *kind[KINDS] = {"inside", "far_diagonal", "far_axis"};
    static const char *op[4] = {"knn1", "knn8", "knn_waypoint", "radius"};
    double *q = malloc(sizeof(double) * 2 * ASK * KINDS),
           *rad = malloc(sizeof(double) * ASK * KINDS);
    nbHit *hits = malloc(sizeof(nbHit) * (size_t)s->n);
    for (int k = 0; k < KINDS; k++) {
        for (int i = 0; i < ASK; i++) {
            double *x = q + 2 * (k * ASK + i);
            if (k == 0) {
                x[0] = unit() * WORLD;
                x[1] = unit() * WORLD;
            } else {
                // diagonal askers are the even-numbered directions 0..3, axis ones 4..7
                far_asker(k == 1 ? i % 4 : 4 + i % 4, 1e6, x);
            }
            nbHitNeighbor e[10];
            int32_t f = 0, fr = 0;
            const nbFilter all = {0xFFFFFFFFu, 0xFFFFFFFFu};
            check(nb_tiles_knn(t, x, all, (double)INFINITY, e, 10, &f), "knn");
            rad[k * ASK + i] = sqrt(e[9].dist2);
            const uint32_t groups = enemies(i % GROUPS);
            nbHitNeighbor one;
            check(
                nb_tiles_knn(t, x, (nbFilter){0xFFFFFFFFu, groups}, (double)INFINITY, &one, 1, &f),
                "knn");
            check(nb_tiles_query_radius(t, x, rad[k * ASK + i], all, hits, s->n, &fr), "radius");
            far_check(s, x, groups, one.dist2, rad[k * ASK + i] * rad[k * ASK + i], fr);
        }
    }
    double best[KINDS][4];
    for (int k = 0; k < KINDS; k++)
        for (int o = 0; o < 4; o++) best[k][o] = (double)INFINITY;
    double sink = 0.0;
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < KINDS; k++) {
            for (int o = 0; o < 4; o++) {
                const int64_t t0 = nbb_now_ns();
                for (int i = 0; i < ASK; i++) {
                    const double *x = q + 2 * (k * ASK + i);
                    nbHitNeighbor e[8];
                    int32_t f = 0;
                    const nbFilter flt = {0xFFFFFFFFu, enemies(i % GROUPS)};
                    if (o == 0) nb_tiles_knn(t, x, flt, (double)INFINITY, e, 1, &f);
                    if (o == 1) nb_tiles_knn(t, x, flt, (double)INFINITY, e, 8, &f);
                    if (o == 2) nb_tiles_knn_waypoints(t, x, (double)INFINITY, e, 1, &f);
                    if (o == 3)
                        nb_tiles_query_radius(t, x, rad[k * ASK + i], NB_FILTER_ALL, hits, s->n,
                                              &f);
                    sink += f;
                }
                const double us = (double)(nbb_now_ns() - t0) * 1e-3 / ASK;
                best[k][o] = us < best[k][o] ? us : best[k][o];
            }
        }
    }
    printf("mode,agents,waypoints,tile,asker,op,us_query,vs_inside\n");
    fprintf(stderr,
            "bench_tiles far: %d agents, %d waypoints, tile %g, %d askers each; us a query "
            "(least of %d rounds), answers checked against a scan\n",
            s->n, s->nwp, tile, ASK, ROUNDS);
    fprintf(stderr, "  %-13s %10s %10s %13s %10s\n", "asker", op[0], op[1], op[2], op[3]);
    for (int k = 0; k < KINDS; k++) {
        fprintf(stderr, "  %-13s %10.2f %10.2f %13.2f %10.2f\n", kind[k], best[k][0], best[k][1],
                best[k][2], best[k][3]);
        for (int o = 0; o < 4; o++)
            printf("far,%d,%d,%g,%s,%s,%.3f,%.2f\n", s->n, s->nwp, tile, kind[k], op[o], best[k][o],
                   best[k][o] / best[0][o]);
    }
    if (sink < 0.0) fprintf(stderr, "%g\n", sink);
    free(q);
    free(rad);
    free(hits);
    nb_tiles_destroy(t);
    return 0;
}

// Whether `name` is one of the comma-separated names in `list`.
static bool listed(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return true;
    return false;
}

static const char *bytes_str(size_t b)
{
    static char buf[2][32];
    static int k;
    k ^= 1;
    snprintf(buf[k], sizeof buf[k], "%zu", b);
    return buf[k];
}

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    Sim s;
    s.n = argc > 1 ? atoi(argv[1]) : 50000;
    s.nwp = argc > 2 ? atoi(argv[2]) : 5000;
    const int frames = argc > 3 ? atoi(argv[3]) : 100;
    const int runs = argc > 4 ? atoi(argv[4]) : 3;
    const double tile = argc > 5 ? atof(argv[5]) : 10.0;
    const char *only = argc > 6 ? argv[6] : NULL; // e.g. "tiles,grid": the peers to run
    if (s.n <= 0 || s.nwp <= 0 || frames <= 0 || runs <= 0 || runs > NBB_MAX_RUNS ||
        !(tile > 0.0)) {
        fprintf(stderr, "usage: bench_tiles [N [W [FRAMES [RUNS [TILE]]]]]\n");
        return 2;
    }
    s.pos = malloc((size_t)s.n * 2 * sizeof(double));
    s.vel = malloc((size_t)s.n * 2 * sizeof(double));
    s.group = malloc((size_t)s.n * sizeof(int));
    s.wp = malloc((size_t)s.nwp * 2 * sizeof(double));
    rng = 0x77;
    for (int w = 0; w < 2 * s.nwp; w++) s.wp[w] = unit() * WORLD;
    if (only != NULL && strcmp(only, "far") == 0) {
        const int rc = run_far(&s, tile);
        free(s.pos);
        free(s.vel);
        free(s.group);
        free(s.wp);
        return rc;
    }

    enum { PEERS = 4 };
    static const char *names[PEERS] = {"tiles", "grid", "naive", "naive_rings"};
    double ms[PEERS][NBB_MAX_RUNS];
    Result last[PEERS];
    for (int r = 0; r < runs; r++) { // interleaved, so drifts of the machine hit every peer
        for (int p = 0; p < PEERS; p++) {
            if (only != NULL && !listed(only, names[p])) {
                last[p] = last[0]; // not run: reported as the tiles' figures
                continue;
            }
            last[p] = p == 0   ? run_tiles(&s, frames, tile)
                      : p == 1 ? run_grid(&s, frames, tile)
                               : run_naive(&s, frames, tile, p == 3);
        }
        for (int p = 0; p < PEERS; p++) ms[p][r] = last[p].ms_frame;
        fprintf(stderr,
                "bench_tiles: run %d: tiles %.2f, grid %.2f, naive %.2f, naive_rings %.2f "
                "ms/frame\n",
                r, ms[0][r], ms[1][r], ms[2][r], ms[3][r]);
        for (int p = 1; p < PEERS; p++) {
            if (last[p].sum != last[0].sum) {
                fprintf(stderr, "bench_tiles: %s's answers differ: %.17g, tiles %.17g\n", names[p],
                        last[p].sum, last[0].sum);
                return 1;
            }
        }
    }
    double med[PEERS];
    for (int p = 0; p < PEERS; p++) {
        qsort(ms[p], (size_t)runs, sizeof(double), cmp_d);
        med[p] = ms[p][runs / 2];
    }
    printf("peer,agents,waypoints,groups,frames,runs,tile,ms_frame_median,ms_frame_min,"
           "allocs_frame,bytes,vs_tiles,checksum,compiler,flags\n");
    for (int p = 0; p < PEERS; p++)
        printf("%s,%d,%d,%d,%d,%d,%g,%.3f,%.3f,%.1f,%zu,%.2f,%.17g,%s,%s\n", names[p], s.n, s.nwp,
               GROUPS, frames, runs, tile, med[p], ms[p][0], last[p].allocs_frame, last[p].bytes,
               med[p] / med[0], last[p].sum, NBB_COMPILER, NBB_FLAGS);
    fprintf(stderr,
            "\nbench_tiles: %d agents in %d groups, %d waypoints, %d frames of move + nearest "
            "enemy + nearest waypoint, tile %g in a %g world; median of %d runs\n",
            s.n, GROUPS, s.nwp, frames, tile, WORLD, runs);
    fprintf(stderr, "  %-11s %12s %14s %12s %14s\n", "peer", "ms/frame", "x tiles' time",
            "allocs/frame", "bytes");
    for (int p = 0; p < PEERS; p++)
        fprintf(stderr, "  %-11s %12.2f %14.2f %12.1f %14s\n", names[p], med[p], med[p] / med[0],
                last[p].allocs_frame, p >= 2 ? "n/a" : bytes_str(last[p].bytes));
    free(s.pos);
    free(s.vel);
    free(s.group);
    free(s.wp);
    return 0;
}
