// SPDX-License-Identifier: MIT
// Tile AI with the tile grid: two teams wander a bounded map with waypoints. Every frame each
// agent asks for its nearest enemy and its nearest waypoint; it charges the enemy when one is
// within sight, and otherwise walks to the waypoint (and picks a random one when it arrives).
// Agents are moved by handle; one that wanders off the map stays in an edge tile and is still
// found exactly. Prints the time per frame, and checks the last frame's answers against brute
// force.
//
// Build and run: cc -O2 tile_ai.c -lnearby -lm && ./a.out [agents] [frames]
#include <nearby/tiles.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { TEAMS = 2 };
#define MAP 1000.0  // the map is MAP x MAP
#define TILE 25.0   // tile edge
#define SIGHT 60.0  // an agent charges enemies nearer than this
#define SPEED 1.5   // distance per frame
#define ARRIVED 2.0 // at a waypoint when this near

typedef struct Agent {
    double pos[2];
    int team;
    uint64_t goal; // the waypoint it walks to
    nbHandle handle;
} Agent;

static double rnd(unsigned *seed) // uniform in [0, 1)
{
    *seed = *seed * 1103515245u + 12345u;
    return (double)(*seed >> 8) / 16777216.0;
}

static double now_ms(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int fail(const char *what, nbStatus st)
{
    fprintf(stderr, "tile_ai: %s: %s\n", what, nb_status_message(st));
    return 1;
}

static void step_towards(double *pos, const double *to, double speed)
{
    const double dx = to[0] - pos[0], dy = to[1] - pos[1], d = sqrt(dx * dx + dy * dy);
    if (d <= speed) {
        pos[0] = to[0];
        pos[1] = to[1];
        return;
    }
    pos[0] += dx / d * speed;
    pos[1] += dy / d * speed;
}

int main(int argc, char **argv)
{
    const int n = argc > 1 && atoi(argv[1]) > 0 ? atoi(argv[1]) : 20000;
    const int frames = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 60;
    const int nwp = n / 10 + 1;
    unsigned seed = 7;

    nbTilesDesc desc = {0};
    desc.size[0] = desc.size[1] = MAP;
    desc.tile_size[0] = desc.tile_size[1] = TILE;
    desc.groups = TEAMS;
    desc.capacity_hint = n;
    nbTiles *tiles = NULL;
    nbStatus st = nb_tiles_create(&desc, &tiles);
    if (st != NB_OK) return fail("create", st);

    // Waypoints: static, added once in a batch; their ids are their numbers here.
    double *wp = malloc((size_t)nwp * 2 * sizeof(double));
    Agent *agents = malloc((size_t)n * sizeof(Agent));
    if (wp == NULL || agents == NULL) return fail("malloc", NB_ERR_OUT_OF_MEMORY);
    for (int w = 0; w < nwp; w++) {
        wp[2 * w] = rnd(&seed) * MAP;
        wp[2 * w + 1] = rnd(&seed) * MAP;
    }
    if ((st = nb_tiles_add_waypoints(tiles, wp, NULL, nwp)) != NB_OK)
        return fail("add_waypoints", st);

    // Team 0 starts on the left, team 1 on the right; a few start off the map.
    for (int i = 0; i < n; i++) {
        Agent *a = &agents[i];
        a->team = i % TEAMS;
        a->pos[0] = (a->team == 0 ? 0.0 : 0.6 * MAP) + rnd(&seed) * 0.4 * MAP;
        a->pos[1] = rnd(&seed) * MAP;
        if (i % 500 == 0) a->pos[0] = a->team == 0 ? -50.0 : MAP + 50.0;
        a->goal = (uint64_t)(rnd(&seed) * nwp);
        const nbFilter team = {1u << a->team, 0xFFFFFFFFu}; // a team is a group: its bit
        st = nb_tiles_insert(tiles, a->pos, (uint64_t)i, team, &a->handle);
        if (st != NB_OK) return fail("insert", st);
    }

    double total = 0.0;
    int64_t charges = 0;
    for (int f = 0; f < frames; f++) {
        const double t0 = now_ms();
        charges = 0;
        for (int i = 0; i < n; i++) {
            Agent *a = &agents[i];
            const nbFilter enemies = {0xFFFFFFFFu, 1u << (1 - a->team)}; // search their group
            nbHitNeighbor enemy, way;
            int32_t found_enemy = 0, found_way = 0;
            st = nb_tiles_knn(tiles, a->pos, enemies, SIGHT, &enemy, 1, &found_enemy);
            if (st != NB_OK) return fail("knn", st);
            st = nb_tiles_knn_waypoints(tiles, a->pos, (double)INFINITY, &way, 1, &found_way);
            if (st != NB_OK) return fail("knn_waypoints", st);
            if (found_enemy) { // charge
                const Agent *e = &agents[enemy.hit.user];
                step_towards(a->pos, e->pos, SPEED);
                charges++;
            } else {
                if (found_way && way.dist2 <= ARRIVED * ARRIVED && way.hit.user == a->goal)
                    a->goal = (uint64_t)(rnd(&seed) * nwp); // arrived: a new goal
                step_towards(a->pos, wp + 2 * a->goal, SPEED);
            }
            if ((st = nb_tiles_move(tiles, a->handle, a->pos)) != NB_OK) return fail("move", st);
        }
        const double ms = now_ms() - t0;
        total += ms;
        if (f < 3 || f == frames - 1)
            printf("frame %3d: %7.2f ms  (%d agents, %lld charging)\n", f, ms, n,
                   (long long)charges);
    }
    printf("%d frames, %.2f ms a frame on average (nearest enemy + nearest waypoint + move for "
           "each of %d agents, %d waypoints, %d x %d tiles)\n",
           frames, total / frames, n, nwp, (int)(MAP / TILE), (int)(MAP / TILE));

    // Check a sample of the last positions against brute force.
    int bad = 0;
    for (int i = 0; i < n; i += n / 50 + 1) {
        const Agent *a = &agents[i];
        double best = (double)INFINITY;
        for (int j = 0; j < n; j++) {
            if (agents[j].team == a->team) continue;
            const double dx = agents[j].pos[0] - a->pos[0], dy = agents[j].pos[1] - a->pos[1];
            const double d2 = dx * dx + dy * dy;
            best = d2 < best ? d2 : best;
        }
        double best_w = (double)INFINITY;
        for (int w = 0; w < nwp; w++) {
            const double dx = wp[2 * w] - a->pos[0], dy = wp[2 * w + 1] - a->pos[1];
            const double d2 = dx * dx + dy * dy;
            best_w = d2 < best_w ? d2 : best_w;
        }
        nbHitNeighbor e, w;
        int32_t fe = 0, fw = 0;
        const nbFilter enemies = {0xFFFFFFFFu, 1u << (1 - a->team)};
        nb_tiles_knn(tiles, a->pos, enemies, (double)INFINITY, &e, 1, &fe);
        nb_tiles_knn_waypoints(tiles, a->pos, (double)INFINITY, &w, 1, &fw);
        if (fe != (best < (double)INFINITY) || (fe && e.dist2 != best) || !fw || w.dist2 != best_w)
            bad++;
    }
    nb_tiles_destroy(tiles);
    free(agents);
    free(wp);
    if (bad > 0) {
        fprintf(stderr, "tile_ai: %d answers differ from brute force\n", bad);
        return 1;
    }
    printf("the last frame's nearest enemies and waypoints agree with brute force\n");
    return 0;
}
