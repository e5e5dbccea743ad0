// SPDX-License-Identifier: MIT
// An open world with the spatial hash: ships wander far from the origin, enemies among them,
// bullets fly; every frame the moved items are moved by handle, each enemy asks for the ships
// near it, and bullets are paired with the enemies they hit (cross pairs by category). Bullets
// that hit are removed, and new ones are fired. Checks its answers against brute force on the
// last frame.
//
// Build and run: cc -O2 open_world.c -lnearby -lm && ./a.out [ships]
#include <nearby/hash.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { SHIP = 1u << 0, ENEMY = 1u << 1, BULLET = 1u << 2 };

typedef struct Thing {
    double pos[2], vel[2];
    uint32_t kind;
    nbHandle handle; // null when the thing is gone
} Thing;

static double rnd(unsigned *seed) // uniform in [0, 1)
{
    *seed = *seed * 1103515245u + 12345u;
    return (double)(*seed >> 8) / 16777216.0;
}

static int fail(const char *what, nbStatus st)
{
    fprintf(stderr, "open_world: %s: %s\n", what, nb_status_message(st));
    return 1;
}

typedef struct Hits {
    int64_t count;
    Thing *things;
} Hits;

// A bullet met an enemy: the bullet is spent (removed after the query, never during it).
static bool on_hit(nbHit bullet, nbHit enemy, void *user)
{
    Hits *h = user;
    (void)enemy;
    h->things[bullet.user].vel[0] = (double)NAN; // marked: removed below
    h->count++;
    return true;
}

int main(int argc, char **argv)
{
    const int ships = argc > 1 ? atoi(argv[1]) : 20000;
    if (ships < 10) return fail("ship count", NB_ERR_OUT_OF_RANGE);
    const int enemies = ships / 10, bullets = ships / 5, n = ships + enemies + bullets;
    const double origin[2] = {3.0e9, -7.5e8}, side = sqrt((double)ships) * 4.0, sight = 6.0;
    Thing *t = calloc((size_t)n, sizeof *t);
    if (t == NULL) return fail("things", NB_ERR_OUT_OF_MEMORY);
    nbHashDesc desc = {.cell_size = sight, .dim = 2, .capacity_hint = n};
    nbHash *hash = NULL;
    nbStatus st = nb_hash_create(&desc, &hash);
    if (st != NB_OK) return fail("create", st);
    unsigned seed = 7;
    for (int i = 0; i < n; i++) {
        t[i].kind = i < ships ? SHIP : i < ships + enemies ? ENEMY : BULLET;
        const double speed = t[i].kind == BULLET ? 3.0 : 0.5;
        for (int d = 0; d < 2; d++) {
            t[i].pos[d] = origin[d] + rnd(&seed) * side;
            t[i].vel[d] = (rnd(&seed) - 0.5) * speed;
        }
        // Category: what it is. Mask: what it may be paired with (bullets and enemies meet).
        const nbFilter f = {t[i].kind, t[i].kind == BULLET ? ENEMY : SHIP | BULLET | ENEMY};
        st = nb_hash_insert(hash, t[i].pos, (uint64_t)i, f, &t[i].handle);
        if (st != NB_OK) return fail("insert", st);
    }
    int64_t seen = 0, hits = 0;
    const nbFilter ships_only = {ENEMY, SHIP};
    for (int frame = 0; frame < 30; frame++) {
        for (int i = 0; i < n; i++) { // move what moves (ships only every other frame)
            if (t[i].handle.bits == 0 || (t[i].kind == SHIP && frame % 2)) continue;
            t[i].pos[0] += t[i].vel[0];
            t[i].pos[1] += t[i].vel[1];
            st = nb_hash_move(hash, t[i].handle, t[i].pos);
            if (st != NB_OK) return fail("move", st);
        }
        for (int i = ships; i < ships + enemies; i++) { // each enemy looks for ships nearby
            nbHit near[64];
            int32_t found = 0;
            st = nb_hash_query_neighbors(hash, t[i].handle, sight, ships_only, near, 64, &found);
            if (st != NB_OK && st != NB_ERR_BUFFER_TOO_SMALL) return fail("neighbours", st);
            seen += found;
        }
        Hits h = {0, t}; // bullets against enemies, each hit once, roles kept
        st = nb_hash_visit_cross_pairs(hash, 1.0, BULLET, ENEMY, on_hit, &h);
        if (st != NB_OK) return fail("cross pairs", st);
        hits += h.count;
        for (int i = ships + enemies; i < n; i++) { // spent bullets go, new ones are fired
            if (!isnan(t[i].vel[0])) continue;
            st = nb_hash_remove(hash, t[i].handle);
            if (st != NB_OK) return fail("remove", st);
            t[i].vel[0] = (rnd(&seed) - 0.5) * 3.0;
            t[i].pos[0] = origin[0] + rnd(&seed) * side;
            const nbFilter f = {BULLET, ENEMY};
            st = nb_hash_insert(hash, t[i].pos, (uint64_t)i, f, &t[i].handle);
            if (st != NB_OK) return fail("insert", st);
        }
    }
    // Check the last frame's ships-near-enemy counts against brute force.
    int64_t want = 0, got = 0;
    for (int i = ships; i < ships + enemies; i++) {
        for (int j = 0; j < ships; j++) {
            const double dx = t[i].pos[0] - t[j].pos[0], dy = t[i].pos[1] - t[j].pos[1];
            want += dx * dx + dy * dy <= sight * sight;
        }
        int32_t found = 0;
        st = nb_hash_query_neighbors(hash, t[i].handle, sight, ships_only, NULL, 0, &found);
        if (st != NB_OK && st != NB_ERR_BUFFER_TOO_SMALL) return fail("neighbours", st);
        got += found;
    }
    printf("open world: %d ships, %d enemies, %d bullets around (%.3g, %.3g)\n", ships, enemies,
           bullets, origin[0], origin[1]);
    printf("30 frames: %lld ship sightings, %lld bullet hits; %zu bytes held\n", (long long)seen,
           (long long)hits, nb_hash_memory_bytes(hash));
    printf("last frame: %lld ship sightings, brute force %lld: %s\n", (long long)got,
           (long long)want, got == want ? "match" : "MISMATCH");
    nb_hash_destroy(hash);
    free(t);
    return got == want ? 0 : 1;
}
