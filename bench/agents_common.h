// SPDX-License-Identifier: MIT
// The moving-agents workload, shared by bench_agents.c (nearby's hash and grid) and
// bench_agents_peers.cpp (Box2D, Boost.Geometry, a naive unordered_map hash): the same agents,
// the same moves and the same queries for every peer. Header-only, C11 and C++17.
//
// N agents start uniform in the square [-h, h]^2 with h = sqrt(N) / 2 (density 1: a disc of
// radius 2 holds 4 pi = 12.6 agents on average, the query's own agent included). Each frame, a
// share of the agents (exactly N * percent / 100 of them, a fresh pseudo-random choice each
// frame; all of them, in index order, at 100%) takes a step uniform in [-0.5, 0.5] per axis,
// reflected at the walls; then every agent, in index order, asks for the other agents within
// r = 2 (dx*dx + dy*dy <= r*r in double). Everything comes from splitmix64 with a fixed seed,
// so every peer sees bit-identical positions (the build uses -ffp-contract=off).
//
// Each peer reports, per frame, the number of (agent, neighbour) hits, the query's own agent
// excluded, and the sum of the neighbours' indices: two cheap numbers that every exact peer
// must reproduce frame by frame. nba_tally folds them into one checksum per run.
#ifndef NB_BENCH_AGENTS_COMMON_H
#define NB_BENCH_AGENTS_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"

#define NBA_RADIUS 2.0
#define NBA_STEP 0.5 // largest step per axis
#define NBA_SEED 0x6167656e74735eedULL
#define NBA_MAX_RUNS 64

static inline uint64_t nba_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// Uniform in [0, 1), 53 bits.
static inline double nba_unit(uint64_t *s)
{
    return (double)(nba_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

/// Uniform in [0, n), n < 2^32 (Lemire's multiply, without the rejection step: the bias is
/// below 2^-15 for our n and the same for every peer).
static inline uint32_t nba_below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(((nba_next(s) >> 32) * (uint64_t)n) >> 32);
}

/// The world: positions (x0 y0 x1 y1 ...) and this frame's moves.
typedef struct nbaWorld {
    int32_t n;
    double half;     // the world is [-half, half]^2
    double *pos;     // 2n: where every agent is now
    int32_t moved_n; // agents moved this frame
    int32_t *moved;  // their indices
    double *old;     // 2 * moved_n: where each of them was before this frame's move
    int32_t *perm;   // picks the movers: a partial Fisher-Yates over a persistent permutation
    uint64_t rng;
} nbaWorld;

/// Puts every agent back where it starts and restarts the move sequence.
static inline void nba_reset(nbaWorld *w)
{
    w->rng = NBA_SEED;
    for (int32_t i = 0; i < w->n; i++) {
        w->pos[2 * i] = (2.0 * nba_unit(&w->rng) - 1.0) * w->half;
        w->pos[2 * i + 1] = (2.0 * nba_unit(&w->rng) - 1.0) * w->half;
        w->perm[i] = i;
    }
    w->moved_n = 0;
}

static inline void nba_init(nbaWorld *w, int32_t n)
{
    w->n = n;
    w->half = 0.5 * sqrt((double)n);
    w->pos = (double *)malloc((size_t)n * 2 * sizeof(double));
    w->old = (double *)malloc((size_t)n * 2 * sizeof(double));
    w->moved = (int32_t *)malloc((size_t)n * sizeof(int32_t));
    w->perm = (int32_t *)malloc((size_t)n * sizeof(int32_t));
    if (w->pos == NULL || w->old == NULL || w->moved == NULL || w->perm == NULL) {
        fprintf(stderr, "agents: out of memory\n");
        exit(2);
    }
    nba_reset(w);
}

static inline void nba_free(nbaWorld *w)
{
    free(w->pos);
    free(w->old);
    free(w->moved);
    free(w->perm);
}

static inline double nba_reflect(double x, double h)
{
    if (x > h) return 2.0 * h - x;
    if (x < -h) return -2.0 * h - x;
    return x;
}

/// One frame's moves: picks the movers (percent of n, 1..100) and moves them in w->pos,
/// remembering their old positions in w->old. Not timed: this is the simulation, not the index.
static inline void nba_step(nbaWorld *w, int percent)
{
    int32_t n = w->n;
    int32_t m = (int32_t)((int64_t)n * percent / 100);
    if (m >= n) {
        m = n;
        for (int32_t i = 0; i < n; i++) w->moved[i] = i;
    } else {
        for (int32_t k = 0; k < m; k++) {
            int32_t j = k + (int32_t)nba_below(&w->rng, (uint32_t)(n - k));
            int32_t t = w->perm[k];
            w->perm[k] = w->perm[j];
            w->perm[j] = t;
            w->moved[k] = w->perm[k];
        }
    }
    w->moved_n = m;
    for (int32_t k = 0; k < m; k++) {
        int32_t i = w->moved[k];
        double x = w->pos[2 * i];
        double y = w->pos[2 * i + 1];
        w->old[2 * k] = x;
        w->old[2 * k + 1] = y;
        double dx = (2.0 * nba_unit(&w->rng) - 1.0) * NBA_STEP;
        double dy = (2.0 * nba_unit(&w->rng) - 1.0) * NBA_STEP;
        w->pos[2 * i] = nba_reflect(x + dx, w->half);
        w->pos[2 * i + 1] = nba_reflect(y + dy, w->half);
    }
}

/// What one frame's queries found: hits (own agent excluded) and the sum of their indices.
typedef struct nbaFrameResult {
    int64_t hits;
    uint64_t index_sum;
} nbaFrameResult;

/// A run's results: the total over all frames and an order-dependent fold of every frame's
/// (hits, index_sum), so two runs agree only if they agree frame by frame; the same fold over
/// the first frames only, so that runs of different lengths can be compared too.
typedef struct nbaTally {
    int64_t hits;
    uint64_t check;
    uint64_t prefix_check; // check after the first NBA_PREFIX_FRAMES frames (or all, if fewer)
    int64_t first_frame_hits;
    int32_t frames;
} nbaTally;

/// Runners with fewer frames (the slowest peer) are checked against the others on this prefix.
#define NBA_PREFIX_FRAMES 10

static inline void nba_tally_add(nbaTally *t, nbaFrameResult f)
{
    uint64_t x = t->check ^ ((uint64_t)f.hits * 0x9e3779b97f4a7c15ULL) ^ f.index_sum;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    t->check = x + (uint64_t)t->frames;
    if (t->frames == 0) t->first_frame_hits = f.hits;
    t->hits += f.hits;
    t->frames++;
    if (t->frames <= NBA_PREFIX_FRAMES) t->prefix_check = t->check;
}

/// Arguments every agents runner takes: PEER PERCENT RUNS FRAMES N.
typedef struct nbaArgs {
    const char *peer;
    int percent;
    int runs;
    int frames;
    int32_t n;
} nbaArgs;

static inline nbaArgs nba_parse_args(int argc, char **argv, const char *prog, const char *peers)
{
    nbaArgs a;
    if (argc != 6) {
        fprintf(stderr, "usage: %s %s PERCENT RUNS FRAMES N\n", prog, peers);
        exit(2);
    }
    a.peer = argv[1];
    a.percent = atoi(argv[2]);
    a.runs = atoi(argv[3]);
    a.frames = atoi(argv[4]);
    a.n = (int32_t)atol(argv[5]);
    if (a.percent < 1 || a.percent > 100 || a.runs < 1 || a.runs > NBA_MAX_RUNS || a.frames < 1 ||
        a.n < 2 || a.n > (1 << 28)) {
        fprintf(stderr, "%s: bad arguments\n", prog);
        exit(2);
    }
    return a;
}

/// CPU time of this process in nanoseconds: on a shared machine, time spent descheduled is not
/// counted (cache pollution by the neighbours still is). Reported next to the wall-clock times.
static inline int64_t nba_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

/// The columns of the agents runners' CSV lines (bench/report_agents.py reads them).
#define NBA_RAW_HEADER                                                                             \
    "peer,percent,n_agents,frames,runs,min_ns_per_frame,median_ns_per_frame,"                      \
    "move_median_ns_per_frame,cpu_min_ns_per_frame,cpu_median_ns_per_frame,allocs_per_frame,"      \
    "bytes_held,bytes_method,hits_per_frame,"                                                      \
    "first_frame_hits,check,prefix_check,compiler,flags"

/// One CSV line. frame_ns[r], move_ns[r] and cpu_ns[r] are run r's totals over its frames:
/// wall-clock time of move + queries, of the move alone, and CPU time of move + queries.
static inline void nba_emit(const nbaArgs *a, const char *peer, const int64_t *frame_ns,
                            const int64_t *move_ns, const int64_t *cpu_ns, double allocs_per_frame,
                            size_t bytes, const char *bytes_method, const nbaTally *t,
                            const char *compiler, const char *flags)
{
    int64_t f[NBA_MAX_RUNS];
    int64_t m[NBA_MAX_RUNS];
    int64_t c[NBA_MAX_RUNS];
    memcpy(f, frame_ns, (size_t)a->runs * sizeof f[0]);
    memcpy(m, move_ns, (size_t)a->runs * sizeof m[0]);
    memcpy(c, cpu_ns, (size_t)a->runs * sizeof c[0]);
    qsort(f, (size_t)a->runs, sizeof f[0], nbb_cmp_i64);
    qsort(m, (size_t)a->runs, sizeof m[0], nbb_cmp_i64);
    qsort(c, (size_t)a->runs, sizeof c[0], nbb_cmp_i64);
    int mid = (a->runs - 1) / 2;
    char allocs[32];
    if (allocs_per_frame < 0.0)
        allocs[0] = '\0';
    else
        snprintf(allocs, sizeof allocs, "%.3g", allocs_per_frame);
    printf("%s,%d,%d,%d,%d,%.0f,%.0f,%.0f,%.0f,%.0f,%s,%zu,%s,%.1f,%lld,%016llx,%016llx,%s,%s\n",
           peer, a->percent, a->n, a->frames, a->runs, (double)f[0] / a->frames,
           (double)f[mid] / a->frames, (double)m[mid] / a->frames, (double)c[0] / a->frames,
           (double)c[mid] / a->frames, allocs, bytes, bytes_method, (double)t->hits / t->frames,
           (long long)t->first_frame_hits, (unsigned long long)t->check,
           (unsigned long long)t->prefix_check, compiler, flags);
    fflush(stdout);
}

/// Fails loudly when a run's results differ from the first run's (the runners are deterministic).
static inline void nba_same_runs(const char *peer, const nbaTally *first, const nbaTally *now)
{
    if (first->hits != now->hits || first->check != now->check ||
        first->prefix_check != now->prefix_check) {
        fprintf(stderr, "agents: %s: MISMATCH between runs (%lld vs %lld hits)\n", peer,
                (long long)first->hits, (long long)now->hits);
        exit(1);
    }
}

#endif
