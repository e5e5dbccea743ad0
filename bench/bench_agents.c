// SPDX-License-Identifier: MIT
// The moving-agents benchmark (agents_common.h), nearby's side:
//   hash  the spatial hash (nb_hash_*): every agent inserted once with its index as user value,
//         cell size r; each frame one nb_hash_move_many for the agents that moved (their
//         handles and positions gathered into two arrays, timed; NBB_AGENTS_SINGLE=1: one
//         nb_hash_move per agent instead), then one nb_hash_query_radius per agent
//         (NB_FILTER_ALL) into a reused buffer;
//   grid  the dense grid rebuilt every frame: nb_grid_build over all positions (cell = r plus
//         its rounding margin), then one nb_grid_query_radius per agent.
// Queries go into a buffer rather than through the visit callbacks: both are offered, and the
// buffer is the one without an indirect call per hit (NBB_AGENTS_VISIT=1 switches to
// nb_*_visit_radius, for comparison). NBB_AGENTS_CELL=c sets both structures' cell edge to c
// instead of r (the grid's desc.cell_size, the hash's), for the cell-size experiment in
// docs/hash.md.
//
// Only the index's work is timed (the moves + the queries); picking and moving the agents is
// the simulation's and is not. Each run starts from the same initial world: the hash is cleared
// and refilled before it (untimed), the grid's storage is sized by one untimed build before the
// first run. Allocations per frame count both the structure's nbAllocator and the process's
// malloc (alloc_count.c), over the timed part only.
//
//   bench_agents hash|grid PERCENT RUNS FRAMES N      prints one CSV line (NBA_RAW_HEADER)
#include "agents_common.h"
#include "alloc_count.h"
#include "bench_common.h"
#include "counting_allocator.h"

#include <nearby/grid.h>
#include <nearby/hash.h>

#define QCAP 4096 // far above the ~40 agents a disc of radius 2 can hold at density 1

static void check(nbStatus s, const char *what)
{
    if (s != NB_OK) {
        fprintf(stderr, "bench_agents: %s: %s\n", what, nb_status_str(s));
        exit(1);
    }
}

typedef struct VisitSum {
    int32_t self;
    nbaFrameResult res;
} VisitSum;

static bool grid_visit(int32_t index, void *user)
{
    VisitSum *v = user;
    if (index != v->self) {
        v->res.hits++;
        v->res.index_sum += (uint64_t)index;
    }
    return true;
}

static nbaFrameResult grid_queries(const nbGrid *grid, const nbaWorld *w, int32_t *buf, int visit)
{
    nbaFrameResult res = {0, 0};
    if (visit) {
        VisitSum v = {0, {0, 0}};
        for (int32_t i = 0; i < w->n; i++) {
            v.self = i;
            check(nb_grid_visit_radius(grid, &w->pos[2 * i], NBA_RADIUS, NB_FILTER_ALL, grid_visit,
                                       &v),
                  "nb_grid_visit_radius");
        }
        return v.res;
    }
    for (int32_t i = 0; i < w->n; i++) {
        int32_t found = 0;
        check(nb_grid_query_radius(grid, &w->pos[2 * i], NBA_RADIUS, NB_FILTER_ALL, buf, QCAP,
                                   &found),
              "nb_grid_query_radius");
        for (int32_t k = 0; k < found; k++) {
            int32_t j = buf[k];
            if (j != i) {
                res.hits++;
                res.index_sum += (uint64_t)j;
            }
        }
    }
    return res;
}

static bool hash_visit(nbHit hit, void *user)
{
    VisitSum *v = user;
    if (hit.user != (uint64_t)v->self) {
        v->res.hits++;
        v->res.index_sum += hit.user;
    }
    return true;
}

static nbaFrameResult hash_queries(const nbHash *hash, const nbaWorld *w, nbHit *buf, int visit)
{
    nbaFrameResult res = {0, 0};
    if (visit) {
        VisitSum v = {0, {0, 0}};
        for (int32_t i = 0; i < w->n; i++) {
            v.self = i;
            check(nb_hash_visit_radius(hash, &w->pos[2 * i], NBA_RADIUS, NB_FILTER_ALL, hash_visit,
                                       &v),
                  "nb_hash_visit_radius");
        }
        return v.res;
    }
    for (int32_t i = 0; i < w->n; i++) {
        int32_t found = 0;
        check(nb_hash_query_radius(hash, &w->pos[2 * i], NBA_RADIUS, NB_FILTER_ALL, buf, QCAP,
                                   &found),
              "nb_hash_query_radius");
        for (int32_t k = 0; k < found; k++) {
            uint64_t j = buf[k].user;
            if (j != (uint64_t)i) {
                res.hits++;
                res.index_sum += j;
            }
        }
    }
    return res;
}

int main(int argc, char **argv)
{
    const char *peers = "hash|grid";
    nbaArgs a = nba_parse_args(argc, argv, "bench_agents", peers);
    const char *visit_env = getenv("NBB_AGENTS_VISIT");
    int visit = visit_env != NULL && visit_env[0] == '1';
    const char *cell_env = getenv("NBB_AGENTS_CELL");
    const double cell = cell_env != NULL ? atof(cell_env) : 0.0;
    const char *single_env = getenv("NBB_AGENTS_SINGLE");
    int single = single_env != NULL && single_env[0] == '1';
    int is_hash = strcmp(a.peer, "hash") == 0;
    if (!is_hash && strcmp(a.peer, "grid") != 0) {
        fprintf(stderr, "bench_agents: unknown peer %s (%s)\n", a.peer, peers);
        return 2;
    }

    nbaWorld w;
    nba_init(&w, a.n);
    CountingAllocator counter = {0};
    nbAllocator alloc = {counting_alloc, counting_free, &counter};
    int32_t *gbuf = malloc(QCAP * sizeof *gbuf);
    nbGrid *grid = NULL;
    nbPoints pts = {.data = w.pos, .count = w.n, .dim = 2};
    nbHash *hash = NULL;
    nbHandle *handles = malloc((size_t)w.n * sizeof *handles);
    nbHit *hbuf = malloc(QCAP * sizeof *hbuf);
    nbHandle *mhandles = malloc((size_t)w.n * sizeof *mhandles);
    double *mpos = malloc((size_t)w.n * 2 * sizeof *mpos);
    if (handles == NULL || hbuf == NULL || mhandles == NULL || mpos == NULL) return 2;
    if (gbuf == NULL) return 2;

    if (is_hash) {
        nbHashDesc desc;
        memset(&desc, 0, sizeof desc);
        desc.cell_size = cell > 0.0 ? cell : NBA_RADIUS;
        desc.dim = 2;
        desc.capacity_hint = w.n;
        desc.allocator = &alloc;
        check(nb_hash_create(&desc, &hash), "nb_hash_create");
        check(nb_hash_reserve(hash, w.n), "nb_hash_reserve");
    } else {
        nbGridDesc desc;
        memset(&desc, 0, sizeof desc);
        desc.cell_size = cell > 0.0 ? cell : 0.0; // 0: the radius
        desc.dim = 2;
        desc.capacity_hint = w.n;
        desc.allocator = &alloc;
        check(nb_grid_create(&desc, &grid), "nb_grid_create");
        check(nb_grid_build(grid, &pts, NBA_RADIUS), "nb_grid_build"); // sizes its storage
    }

    int64_t frame_ns[NBA_MAX_RUNS];
    int64_t move_ns[NBA_MAX_RUNS];
    int64_t cpu_ns[NBA_MAX_RUNS];
    nbaTally first = {0, 0, 0, 0, 0};
    uint64_t allocs = 0;
    for (int run = 0; run < a.runs; run++) {
        nba_reset(&w);
        if (is_hash) {
            nb_hash_clear(hash);
            for (int32_t i = 0; i < w.n; i++)
                check(nb_hash_insert(hash, &w.pos[2 * i], (uint64_t)i, NB_FILTER_ALL, &handles[i]),
                      "nb_hash_insert");
        }
        nbaTally t = {0, 0, 0, 0, 0};
        frame_ns[run] = 0;
        move_ns[run] = 0;
        cpu_ns[run] = 0;
        for (int f = 0; f < a.frames; f++) {
            nba_step(&w, a.percent);
            uint64_t a0 = nbb_alloc_calls() + counter.allocs;
            int64_t c0 = nba_cpu_ns();
            int64_t t0 = nbb_now_ns();
            nbaFrameResult res;
            int64_t t1;
            if (is_hash && single) {
                for (int32_t k = 0; k < w.moved_n; k++) {
                    int32_t i = w.moved[k];
                    check(nb_hash_move(hash, handles[i], &w.pos[2 * i]), "nb_hash_move");
                }
                t1 = nbb_now_ns();
                res = hash_queries(hash, &w, hbuf, visit);
            } else if (is_hash) {
                // The batch: every agent in order (all moving), else the movers gathered
                // (timed: it is the caller's share of a batched move).
                const nbHandle *mh = handles;
                const double *mp = w.pos;
                if (w.moved_n < w.n) {
                    for (int32_t k = 0; k < w.moved_n; k++) {
                        int32_t i = w.moved[k];
                        mhandles[k] = handles[i];
                        mpos[2 * k] = w.pos[2 * i];
                        mpos[2 * k + 1] = w.pos[2 * i + 1];
                    }
                    mh = mhandles;
                    mp = mpos;
                }
                check(nb_hash_move_many(hash, mh, mp, w.moved_n, NULL), "nb_hash_move_many");
                t1 = nbb_now_ns();
                res = hash_queries(hash, &w, hbuf, visit);
            } else {
                check(nb_grid_build(grid, &pts, NBA_RADIUS), "nb_grid_build");
                t1 = nbb_now_ns();
                res = grid_queries(grid, &w, gbuf, visit);
            }
            int64_t t2 = nbb_now_ns();
            int64_t c2 = nba_cpu_ns();
            allocs += nbb_alloc_calls() + counter.allocs - a0;
            frame_ns[run] += t2 - t0;
            move_ns[run] += t1 - t0;
            cpu_ns[run] += c2 - c0;
            nba_tally_add(&t, res);
        }
        if (run == 0)
            first = t;
        else
            nba_same_runs(a.peer, &first, &t);
    }

    size_t bytes = 0;
    if (is_hash) {
        check(nb_hash_validate(hash), "nb_hash_validate");
        bytes = nb_hash_memory_bytes(hash);
    }
    if (!is_hash) bytes = nb_grid_memory_bytes(grid);
    char name[64];
    snprintf(name, sizeof name, "nearby_%s%s%s", a.peer, is_hash && single ? "_single" : "",
             visit ? "_visit" : "");
    nba_emit(&a, name, frame_ns, move_ns, cpu_ns, (double)allocs / ((double)a.runs * a.frames),
             bytes, "memory_bytes", &first, NBB_COMPILER, NBB_FLAGS);
    nb_hash_destroy(hash);
    free(handles);
    free(hbuf);
    free(mhandles);
    free(mpos);
    nb_grid_destroy(grid);
    free(gbuf);
    nba_free(&w);
    return 0;
}
