// SPDX-License-Identifier: MIT
// `nearby demo` (what `make demo` runs): a flocking scene. N agents in two groups move for a
// few hundred frames. Every frame, each structure is brought up to date over the same positions
// (the dense grid rebuilt; the hash's, the tiles' and the quadtree's items moved by handle: the
// table's build_points adapters) and asked for every agent's neighbours within R; every agent's
// neighbours must be the same set on every structure (and a sample agrees with brute force), or
// the demo fails. The first structure's neighbours steer the agents into the next frame. It
// ends with a table of times and an SVG picture of the last frame.
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "nb_pthreads.h"
#include "options.h"
#include "picture.h"
#include "structures.h"

static int run(int argc, char **argv);
static void help(void);

const cliCommand cli_cmd_demo = {
    .name = "demo",
    .brief = "[--n N] [--frames F] [--svg PATH]",
    .summary = "a flocking scene on every structure, with a picture",
    .options = CLI_OPT_N | CLI_OPT_RADIUS | CLI_OPT_DIM | CLI_OPT_SEED | CLI_OPT_STRUCTURE |
               CLI_OPT_SAVE_POINTS | CLI_OPT_FRAMES | CLI_OPT_SVG | CLI_OPT_NO_SVG,
    .needs = CLI_QUERY_WITHIN | CLI_QUERY_PAIRS,
    .run = run,
    .help = help,
};

enum { DEFAULT_N = 20000, DEFAULT_FRAMES = 200, CHECKS_PER_FRAME = 4 };
static const double DT = 0.1;         // time per frame; agents move about 0.1 R a frame
static const double MIN_SPEED = 0.4;  // per unit of time, in units of R
static const double MAX_SPEED = 1.2;  //
static const double NEIGHBOURS = 7.0; // initial density: expected neighbours within R
static const char *const COLOR[2] = {"#d9480f", "#1971c2"};

static void help(void)
{
    cli_print_usage(&cli_cmd_demo, "[--n N] [--frames F] [--radius R] [--seed S]\n"
                                   "                   [--svg PATH | --no-svg] "
                                   "[--save-points FILE]");
    fputs("A flocking scene: N agents in two groups, in a square (a cube in 3D) centred on\n"
          "the origin, at about 7 neighbours within R each. Every frame, each agent asks the\n"
          "structure for its neighbours within R and steers: away from every neighbour,\n"
          "along with and towards those of its own group; the second group also circles the\n"
          "origin. Every frame, every structure that can serve the scene (dense: rebuilt each\n"
          "frame; hash, tiles and quadtree: items moved by handle) is asked over the same\n"
          "positions; every agent's neighbours must be the same on all of them, and a sample\n"
          "must agree with brute force, or the demo fails (exit 1). The first structure's\n"
          "neighbours steer. Prints a table (ms a frame, neighbours a frame, queries a second)\n"
          "and draws the last frame to an SVG picture.\n"
          "\n"
          "  --n N             agents, default 20000\n"
          "  --frames F        frames, default 200\n"
          "  --radius R        the neighbour radius, default 1\n"
          "  --seed S          the generator's seed (splitmix64), default 1\n"
          "  --svg PATH        where to draw the last frame, default nearby-demo.svg\n"
          "  --no-svg          draw nothing\n"
          "  --save-points FILE\n"
          "                    also write the last frame's positions to FILE as raw\n"
          "                    little-endian float64 (.f64), so other tools can check the\n"
          "                    pairs the report gives\n"
          "  --dim 2|3         default 2 (3D is drawn projected on x,y)\n"
          "  --structure NAME  run the scene on this structure only\n"
          "\n"
          "A progress bar goes to standard error when it is a terminal.\n",
          stdout);
    cli_print_structures(stdout, cli_cmd_demo.needs);
}

// splitmix64 (Steele, Lea and Flood): a tiny generator with a 64-bit state; the same numbers
// on every platform.
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *state)
{
    return mix64(*state += 0x9e3779b97f4a7c15u);
}

static double uniform01(uint64_t *state)
{
    return (double)(splitmix64(state) >> 11) * 0x1p-53;
}

// Writes coords[0, values) to `path` as little-endian doubles, byte by byte so the file is the
// same on every machine. Reports a problem and returns its exit status.
static int save_points(const char *path, const double *coords, size_t values)
{
    char name[256];
    cli_display_name(name, sizeof name, path);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        cli_fail("demo: %s: cannot create: %s", name, strerror(errno));
        return CLI_EXIT_BAD_INPUT;
    }
    unsigned char buf[8 * 1024];
    size_t used = 0;
    bool ok = true;
    for (size_t k = 0; k < values && ok; k++) {
        uint64_t bits;
        memcpy(&bits, &coords[k], sizeof bits);
        for (int b = 0; b < 8; b++) buf[used++] = (unsigned char)(bits >> (8 * b));
        if (used == sizeof buf || k + 1 == values) {
            ok = fwrite(buf, 1, used, f) == used;
            used = 0;
        }
    }
    ok = fclose(f) == 0 && ok;
    if (!ok) {
        cli_fail("demo: %s: error writing the points", name);
        return CLI_EXIT_RUNTIME;
    }
    return CLI_EXIT_OK;
}

// The scene: the start (shared by every run) and the state of the current run.
typedef struct Scene {
    int32_t n, dim;
    double radius, half;                     // the world is [-half, half]^dim
    uint8_t *group;                          // 0 or 1
    double *pos, *vel, *next_pos, *next_vel; // this frame's state, and the next one's
} Scene;

typedef struct RunStats {
    double build_ms, query_ms; // totals over the frames
    int64_t neighbours;        // over the frames
    int64_t checked;           // queries checked by brute force
} RunStats;

static void sort_ints(int32_t *v, int64_t len)
{
    for (int64_t a = 1; a < len; a++) { // insertion sort: a handful of neighbours
        const int32_t x = v[a];
        int64_t b = a;
        for (; b > 0 && v[b - 1] > x; b--) v[b] = v[b - 1];
        v[b] = x;
    }
}

// One agent's steering from its neighbours row[0, len), sorted by index (so the sums run in
// the same order whatever order a structure reported them in): separation from all, alignment
// and cohesion within its group, a swirl for group 1, and a soft wall at the world's edge.
static void steer(Scene *sc, int32_t i, const int32_t *row, int32_t len)
{
    const int32_t dim = sc->dim;
    const double *p = sc->pos + (size_t)i * (size_t)dim;
    const double *v = sc->vel + (size_t)i * (size_t)dim;
    double sep[3] = {0, 0, 0}, align[3] = {0, 0, 0}, coh[3] = {0, 0, 0}, acc[3] = {0, 0, 0};
    int32_t same = 0;
    for (int32_t k = 0; k < len; k++) {
        const int32_t j = row[k];
        const double *q = sc->pos + (size_t)j * (size_t)dim;
        double d2 = 0.0;
        for (int32_t d = 0; d < dim; d++) d2 += (p[d] - q[d]) * (p[d] - q[d]);
        const double dist = sqrt(d2);
        const double push = dist > 1e-9 ? (sc->radius - dist) / (sc->radius * dist) : 0.0;
        for (int32_t d = 0; d < dim; d++) sep[d] += (p[d] - q[d]) * push;
        if (sc->group[j] == sc->group[i]) {
            same++;
            for (int32_t d = 0; d < dim; d++) {
                align[d] += sc->vel[(size_t)j * (size_t)dim + (size_t)d];
                coh[d] += q[d];
            }
        }
    }
    for (int32_t d = 0; d < dim; d++) {
        acc[d] = 2.0 * sep[d];
        if (same > 0) {
            acc[d] += 0.6 * (align[d] / same - v[d]);
            acc[d] += 0.15 * (coh[d] / same - p[d]) / sc->radius;
        }
        const double over = fabs(p[d]) - 0.9 * sc->half;
        if (over > 0.0) acc[d] -= (p[d] > 0.0 ? 1.0 : -1.0) * over / sc->radius;
    }
    if (sc->group[i] == 1) { // circle the origin, anticlockwise
        const double rr = sqrt(p[0] * p[0] + p[1] * p[1]) + sc->radius;
        acc[0] += -0.25 * p[1] / rr;
        acc[1] += 0.25 * p[0] / rr;
    }
    double *nv = sc->next_vel + (size_t)i * (size_t)dim;
    double *np = sc->next_pos + (size_t)i * (size_t)dim;
    double speed2 = 0.0;
    for (int32_t d = 0; d < dim; d++) {
        nv[d] = v[d] + acc[d] * DT;
        speed2 += nv[d] * nv[d];
    }
    const double speed = sqrt(speed2);
    const double lo = MIN_SPEED * sc->radius, hi = MAX_SPEED * sc->radius;
    const double scale = speed < 1e-12 ? 1.0
                         : speed < lo  ? lo / speed
                         : speed > hi  ? hi / speed
                                       : 1.0;
    for (int32_t d = 0; d < dim; d++) {
        nv[d] *= scale;
        np[d] = p[d] + nv[d] * DT;
    }
}

// Brute force for agent i: its neighbours within R (self excluded) must be exactly row[0, len),
// sorted. False on a mismatch.
static bool brute_check(const Scene *sc, int32_t i, const int32_t *row, int32_t len)
{
    const int32_t dim = sc->dim;
    const double *p = sc->pos + (size_t)i * (size_t)dim;
    const double r2 = sc->radius * sc->radius;
    int32_t k = 0;
    for (int32_t j = 0; j < sc->n; j++) {
        if (j == i) continue;
        double d2 = 0.0;
        for (int32_t d = 0; d < dim; d++) {
            const double t = p[d] - sc->pos[(size_t)j * (size_t)dim + (size_t)d];
            d2 += t * t;
        }
        if (d2 > r2) continue;
        if (k == len || row[k] != j) return false;
        k++;
    }
    return k == len;
}

// One progress bar for the runs going on at once, on standard error when it is a terminal.
typedef struct Progress {
    pthread_mutex_t mu;
    int64_t done, total; // frames, over every run
    bool show, ended;
} Progress;

static void progress_draw(const Progress *p)
{
    enum { WIDTH = 30 };
    const int done = p->total > 0 ? (int)((int64_t)WIDTH * p->done / p->total) : WIDTH;
    fprintf(stderr, "\rdemo     [");
    for (int k = 0; k < WIDTH; k++) fputc(k < done ? '#' : '.', stderr);
    fprintf(stderr, "] frame %lld/%lld", (long long)p->done, (long long)p->total);
    fflush(stderr);
}

// `frames` more frames are done (by any run).
static void progress_add(Progress *p, int64_t frames)
{
    if (!p->show) return;
    pthread_mutex_lock(&p->mu);
    p->done += frames;
    if (!p->ended) progress_draw(p);
    pthread_mutex_unlock(&p->mu);
}

// Ends the bar's line (before a message, or at the end); later updates are not drawn.
static void progress_end(Progress *p)
{
    if (!p->show) return;
    pthread_mutex_lock(&p->mu);
    if (!p->ended) fputc('\n', stderr);
    p->ended = true;
    pthread_mutex_unlock(&p->mu);
}

// One structure's part of the scene: its index over the current frame and, for every agent,
// this frame's neighbours (self excluded), in the structure's order: agent i's are
// chunk[c].ids[start[i], start[i] + count[i]) for its chunk c, with print[i] an order-free
// fingerprint of the set (the sum of mix64 over the indices) for comparing structures.
typedef struct Chunk {
    int32_t *ids;
    int64_t cap;
    double ms;       // this frame's query time
    nbStatus status; // this frame's
} Chunk;

typedef struct Lane {
    const cliStructure *s;
    void *index;
    int64_t *start;
    int32_t *count;
    uint64_t *print;
    Chunk *chunk;
    nbStatus build_status; // this frame's
    double build_ms;       // this frame's
    RunStats stats;
} Lane;

// What the workers share in a frame.
typedef struct Frame {
    Scene *sc;
    Lane *lanes;
    int lane_count;
    int32_t chunks; // agents are cut into this many ranges a lane
} Frame;

// Agents [first, end) of chunk c.
static void chunk_range(const Frame *x, int32_t c, int32_t *first, int32_t *end)
{
    *first = (int32_t)((int64_t)x->sc->n * c / x->chunks);
    *end = (int32_t)((int64_t)x->sc->n * (c + 1) / x->chunks);
}

// Brings lanes [b, e) up to date over the frame's positions, the costliest first (the table
// lists the structures from the fastest), so that the workers finish close together.
static void update_lanes(int32_t b, int32_t e, int32_t worker, void *ctx)
{
    (void)worker;
    const Frame *x = ctx;
    for (int32_t t = b; t < e; t++) {
        Lane *l = &x->lanes[x->lane_count - 1 - t];
        const double t0 = cli_now_ms();
        l->build_status =
            cli_index_build(l->s, x->sc->pos, x->sc->n, x->sc->dim, x->sc->radius, &l->index);
        l->build_ms = cli_now_ms() - t0;
    }
}

// Queries of items [b, e): item t is chunk t % chunks of lane t / chunks, costliest lane first.
static void query_chunks(int32_t b, int32_t e, int32_t worker, void *ctx)
{
    (void)worker;
    const Frame *x = ctx;
    const Scene *sc = x->sc;
    for (int32_t t = b; t < e; t++) {
        Lane *l = &x->lanes[x->lane_count - 1 - t / x->chunks];
        const int32_t c = t % x->chunks;
        Chunk *ch = &l->chunk[c];
        int32_t first, end;
        chunk_range(x, c, &first, &end);
        const double t0 = cli_now_ms();
        nbStatus st = NB_OK;
        int64_t used = 0;
        for (int32_t i = first; i < end && st == NB_OK; i++) {
            const double *p = sc->pos + (size_t)i * (size_t)sc->dim;
            const int64_t room = ch->cap - used;
            int32_t found = 0;
            st = l->s->within(l->index, p, sc->radius, ch->ids + used,
                              (int32_t)(room < INT32_MAX ? room : INT32_MAX), &found);
            if (st == NB_ERR_BUFFER_TOO_SMALL) { // grow and ask again
                const int64_t want = (used + found) * 2 + 1024;
                int32_t *grown = realloc(ch->ids, (size_t)want * sizeof *grown);
                st = NB_ERR_OUT_OF_MEMORY;
                if (grown != NULL) {
                    ch->ids = grown;
                    ch->cap = want;
                    st = l->s->within(l->index, p, sc->radius, ch->ids + used, found, &found);
                }
            }
            // Drop the agent itself (distance 0 to its own query point); fingerprint the rest.
            int64_t w = used;
            uint64_t print = 0;
            for (int64_t k = used; k < used + found && st == NB_OK; k++) {
                const int32_t j = ch->ids[k];
                if (j < 0 || j >= sc->n) st = NB_ERR_INTERNAL;
                if (j == i) continue;
                ch->ids[w++] = j;
                print += mix64((uint64_t)j + 1);
            }
            l->start[i] = used;
            l->count[i] = (int32_t)(w - used);
            l->print[i] = print;
            used = w;
        }
        ch->status = st;
        ch->ms = cli_now_ms() - t0;
    }
}

// Steers the agents of chunks [b, e) by the first lane's neighbours, sorted first.
static void steer_chunks(int32_t b, int32_t e, int32_t worker, void *ctx)
{
    (void)worker;
    const Frame *x = ctx;
    const Lane *l = &x->lanes[0];
    for (int32_t c = b; c < e; c++) {
        int32_t first, end;
        chunk_range(x, c, &first, &end);
        for (int32_t i = first; i < end; i++) {
            int32_t *row = l->chunk[c].ids + l->start[i];
            sort_ints(row, l->count[i]);
            steer(x->sc, i, row, l->count[i]);
        }
    }
}

// Runs [0, count) of `task` on the pool, or serially without one.
static void run_tasks(nbTaskFn *task, int32_t count, Frame *x, nbxPool *pool)
{
    if (pool != NULL)
        nbx_parallel_for(task, count, 1, x, pool);
    else
        task(0, count, 0, x);
}

// The frame's checks, after the queries: every lane's status, every agent's neighbours on
// every lane the same set as on the first (count and fingerprint), and CHECKS_PER_FRAME agents
// a lane by brute force against the first lane's rows (sorted here; steering sorts the rest).
// Reports a problem and returns its exit status.
static int check_frame(Frame *x, int32_t f)
{
    const Scene *sc = x->sc;
    char where[64];
    for (int k = 0; k < x->lane_count; k++) {
        Lane *l = &x->lanes[k];
        snprintf(where, sizeof where, "demo: %s", l->s->name);
        if (l->build_status != NB_OK)
            return cli_fail_status(where, l->build_status, "updating the index");
        for (int32_t c = 0; c < x->chunks; c++) {
            const nbStatus st = l->chunk[c].status;
            if (st == NB_ERR_OUT_OF_MEMORY)
                return cli_out_of_memory(where, "storing the neighbours");
            if (st != NB_OK) return cli_fail_status(where, st, "finding neighbours");
            l->stats.query_ms += l->chunk[c].ms;
        }
        l->stats.build_ms += l->build_ms;
    }
    const Lane *ref = &x->lanes[0];
    for (int k = 0; k < x->lane_count; k++) {
        Lane *l = &x->lanes[k];
        int64_t total = 0;
        for (int32_t i = 0; i < sc->n; i++) {
            total += l->count[i];
            if (l->count[i] != ref->count[i] || l->print[i] != ref->print[i]) {
                cli_fail("demo: %s disagrees with %s in frame %d: agent %d has %lld neighbours, "
                         "%s %lld (NB_ERR_INTERNAL: a bug in nearby, please report)",
                         l->s->name, ref->s->name, (int)f, (int)i, (long long)l->count[i],
                         l->count[i] == ref->count[i] ? "not the same" : "not",
                         (long long)ref->count[i]);
                return CLI_EXIT_RUNTIME;
            }
        }
        l->stats.neighbours += total;
        for (int32_t t = 0; t < CHECKS_PER_FRAME && sc->n > 0; t++) {
            uint64_t key = ((uint64_t)f << 8) + (uint64_t)(k * CHECKS_PER_FRAME + t);
            const int32_t i = (int32_t)(splitmix64(&key) % (uint64_t)sc->n);
            int32_t c = 0, first, end;
            for (chunk_range(x, c, &first, &end); i >= end; chunk_range(x, ++c, &first, &end)) {
            }
            int32_t *row = ref->chunk[c].ids + ref->start[i];
            sort_ints(row, ref->count[i]);
            if (!brute_check(sc, i, row, ref->count[i])) {
                cli_fail("demo: %s: frame %d: agent %d's neighbours differ from brute force "
                         "(NB_ERR_INTERNAL: a bug in nearby, please report)",
                         ref->s->name, (int)f, (int)i);
                return CLI_EXIT_RUNTIME;
            }
            l->stats.checked++;
        }
    }
    return CLI_EXIT_OK;
}

// Runs the scene: per frame, every lane updated and queried, checked, then the agents steered
// (pos and vel become the next frame's). counts[f] receives frame f's neighbour total. Each
// lane's index is left built over the last frame's positions (sc->pos). Reports a problem and
// returns its exit status.
static int run_frames(Frame *x, int32_t frames, int64_t *counts, Progress *show, nbxPool *pool)
{
    Scene *sc = x->sc;
    for (int32_t f = 0; f < frames; f++) {
        run_tasks(update_lanes, x->lane_count, x, pool);
        run_tasks(query_chunks, x->lane_count * x->chunks, x, pool);
        const int r = check_frame(x, f);
        if (r != CLI_EXIT_OK) {
            progress_end(show);
            return r;
        }
        counts[f] = 0;
        for (int32_t i = 0; i < sc->n; i++) counts[f] += x->lanes[0].count[i];
        progress_add(show, x->lane_count);
        if (f + 1 == frames) break;
        run_tasks(steer_chunks, x->chunks, x, pool);
        double *t = sc->pos;
        sc->pos = sc->next_pos;
        sc->next_pos = t;
        t = sc->vel;
        sc->vel = sc->next_vel;
        sc->next_vel = t;
    }
    return CLI_EXIT_OK;
}

// Draws the last frame: cells by occupancy, a sample of the links within R, the agents by
// group, and a footer saying what was drawn. No timings: the same scene gives the same file.
static int draw(const Scene *sc, const cliStructure *s, const void *index, const char *path,
                int32_t frames, uint64_t seed, char *summary, size_t summary_cap)
{
    char name[256];
    cli_display_name(name, sizeof name, path);
    nbPair *pairs = NULL;
    int64_t pair_count = 0;
    nbStatus st =
        cli_collect_pairs(s, index, sc->radius, (int64_t)sc->n * 8 + 64, &pairs, &pair_count, NULL);
    if (st == NB_ERR_OUT_OF_MEMORY) return cli_out_of_memory("demo", "drawing the picture");
    if (st != NB_OK) return cli_fail_status("demo", st, "finding the links to draw");
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        free(pairs);
        cli_fail("demo: %s: cannot create: %s", name, strerror(errno));
        return CLI_EXIT_BAD_INPUT;
    }
    double extent = sc->half;
    for (size_t k = 0; k < (size_t)sc->n * (size_t)sc->dim; k++)
        extent = fmax(extent, fabs(sc->pos[k]));
    extent += sc->radius;
    nbioSvgView view = {-extent, -extent, extent, extent, 900.0, 10.0, 118.0};
    static nbioSvg svg;
    nbio_svg_begin(&svg, f, &view);
    cliCells cells;
    st = cli_picture_cells(&svg, sc->pos, sc->n, sc->dim, sc->radius, &cells);
    int64_t links = 0;
    if (st == NB_OK)
        st = cli_picture_pairs(&svg, sc->pos, sc->dim, pairs, pair_count, "#495057", &links);
    int64_t in_group[2] = {0, 0}, drawn[2] = {0, 0};
    for (int32_t i = 0; i < sc->n; i++) in_group[sc->group[i]]++;
    for (int g = 0; g < 2; g++)
        drawn[g] = cli_picture_points(&svg, sc->pos, sc->n, sc->dim, sc->group, (uint8_t)g,
                                      in_group[g], CLI_PICTURE_MAX_POINTS / 2, 1.6, COLOR[g]);
    char line[3][300];
    snprintf(line[0], sizeof line[0],
             "nearby demo: %d agents flocking, frame %d of %d (%dD%s), radius %g, seed %llu",
             (int)sc->n, (int)frames, (int)frames, (int)sc->dim,
             sc->dim == 3 ? ", drawn projected on x,y" : "", sc->radius, (unsigned long long)seed);
    snprintf(line[1], sizeof line[1], "agents drawn: %lld of %lld; links drawn: %lld of %lld%s",
             (long long)(drawn[0] + drawn[1]), (long long)sc->n, (long long)links,
             (long long)pair_count,
             drawn[0] + drawn[1] < sc->n || links < pair_count ? " (a fixed sample, to keep the "
                                                                 "file small)"
                                                               : "");
    if (cells.drawn)
        snprintf(line[2], sizeof line[2],
                 "cells: %lld occupied, edge %g%s, shaded by occupancy (at most %lld agents)",
                 (long long)cells.occupied, sc->radius * (double)cells.factor,
                 cells.factor > 1 ? " (coarsened to keep the file small)" : " (= radius)",
                 (long long)cells.max_occupancy);
    else
        snprintf(line[2], sizeof line[2], "cells: not drawn");
    const double y = nbio_svg_plot_bottom(&svg) + 24.0;
    for (int k = 0; k < 3; k++) nbio_svg_text_px(&svg, 10.0, y + 18.0 * k, 13.0, line[k]);
    const nbioSvgLegendItem legend[] = {
        {COLOR[0], NBIO_SVG_DOT, "group A: flocks"},
        {COLOR[1], NBIO_SVG_DOT, "group B: flocks and circles the origin"},
        {"#495057", NBIO_SVG_LINE, "neighbours within the radius"},
        {"#3b6fb6", NBIO_SVG_BOX, "cell, darker = more agents"},
    };
    nbio_svg_legend(&svg, 620.0, y - 14.0, legend, 4);
    const bool ok = nbio_svg_end(&svg);
    const bool closed = fclose(f) == 0;
    free(pairs);
    if (st == NB_ERR_OUT_OF_MEMORY) return cli_out_of_memory("demo", "drawing the picture");
    if (!ok || !closed) {
        cli_fail("demo: %s: error writing the picture", name);
        return CLI_EXIT_RUNTIME;
    }
    snprintf(summary, summary_cap, "%s (%lld of %lld agents, %lld of %lld links)", name,
             (long long)(drawn[0] + drawn[1]), (long long)sc->n, (long long)links,
             (long long)pair_count);
    return CLI_EXIT_OK;
}

static void scene_free(Scene *sc)
{
    free(sc->group);
    free(sc->pos);
    free(sc->vel);
    free(sc->next_pos);
    free(sc->next_vel);
}

// Allocates the lanes' per-agent arrays and chunk buffers; false if memory ran out
// (lanes_free frees what was had). Each chunk starts with room for 16 neighbours an agent.
static bool lanes_alloc(Lane *lanes, int count, int32_t n, int32_t chunks)
{
    bool ok = true;
    for (int k = 0; k < count; k++) {
        Lane *l = &lanes[k];
        l->start = malloc(((size_t)n + 1) * sizeof *l->start);
        l->count = malloc(((size_t)n + 1) * sizeof *l->count);
        l->print = malloc(((size_t)n + 1) * sizeof *l->print);
        l->chunk = calloc((size_t)chunks, sizeof *l->chunk);
        ok = ok && l->start != NULL && l->count != NULL && l->print != NULL && l->chunk != NULL;
        for (int32_t c = 0; c < chunks && l->chunk != NULL; c++) {
            l->chunk[c].cap = (int64_t)n / chunks * 16 + 1024;
            l->chunk[c].ids = malloc((size_t)l->chunk[c].cap * sizeof(int32_t));
            ok = ok && l->chunk[c].ids != NULL;
        }
    }
    return ok;
}

static void lanes_free(Lane *lanes, int count, int32_t chunks)
{
    for (int k = 0; k < count; k++) {
        Lane *l = &lanes[k];
        l->s->destroy(l->index);
        for (int32_t c = 0; c < chunks && l->chunk != NULL; c++) free(l->chunk[c].ids);
        free(l->chunk);
        free(l->start);
        free(l->count);
        free(l->print);
    }
}

// Prints a rate compactly: 12.3 million, 456789.
static void print_rate(double per_second)
{
    if (per_second >= 1e6)
        printf("%9.2f M", per_second * 1e-6);
    else
        printf("%11.0f", per_second);
}

static int run(int argc, char **argv)
{
    const cliCommand *cmd = &cli_cmd_demo;
    cliOptions o = {0};
    o.n = DEFAULT_N;
    o.seed = 1;
    o.frames = DEFAULT_FRAMES;
    o.structure = NULL;
    int r = cli_start(cmd, argc, argv, 0, &o, NULL);
    if (r >= 0) return r;
    if ((o.given & CLI_OPT_SVG) && (o.given & CLI_OPT_NO_SVG)) {
        cli_fail("demo: --svg and --no-svg together");
        return CLI_EXIT_BAD_INPUT;
    }
    if ((o.given & CLI_OPT_RADIUS) && !(o.radius > 0.0)) {
        cli_fail("demo: --radius: NB_ERR_OUT_OF_RANGE: the scene needs a radius > 0");
        return CLI_EXIT_BAD_INPUT;
    }
    Scene sc = {0};
    sc.n = (int32_t)o.n;
    sc.dim = o.dim != 0 ? o.dim : 2;
    sc.radius = (o.given & CLI_OPT_RADIUS) ? o.radius : 1.0;
    const int32_t frames = (int32_t)o.frames;
    // A side giving NEIGHBOURS expected neighbours within R at the start.
    const double ball = sc.dim == 2 ? 3.141592653589793 : 4.0 / 3.0 * 3.141592653589793;
    const double volume = (double)(sc.n > 0 ? sc.n : 1) * ball / NEIGHBOURS;
    sc.half = 0.5 * sc.radius * (sc.dim == 2 ? sqrt(volume) : cbrt(volume));

    const size_t values = (size_t)sc.n * (size_t)sc.dim + 1;
    sc.group = malloc((size_t)sc.n + 1);
    sc.pos = malloc(values * sizeof(double));
    sc.vel = malloc(values * sizeof(double));
    sc.next_pos = malloc(values * sizeof(double));
    sc.next_vel = malloc(values * sizeof(double));
    int64_t *counts = malloc(((size_t)frames + 1) * sizeof(int64_t));
    if (sc.group == NULL || sc.pos == NULL || sc.vel == NULL || sc.next_pos == NULL ||
        sc.next_vel == NULL || counts == NULL) {
        scene_free(&sc);
        free(counts);
        return cli_out_of_memory("demo", "setting up the scene");
    }
    uint64_t state = o.seed;
    for (int32_t i = 0; i < sc.n; i++) {
        sc.group[i] = (uint8_t)(uniform01(&state) < 0.5);
        double *p = sc.pos + (size_t)i * (size_t)sc.dim;
        double *v = sc.vel + (size_t)i * (size_t)sc.dim;
        for (int32_t d = 0; d < sc.dim; d++) p[d] = (2.0 * uniform01(&state) - 1.0) * sc.half;
        for (int32_t d = 0; d < sc.dim; d++)
            v[d] = (2.0 * uniform01(&state) - 1.0) * MIN_SPEED * sc.radius;
    }

    // Every structure that can serve the scene, in table order (or the one asked for).
    Lane lanes[16];
    memset(lanes, 0, sizeof lanes);
    int count = 0;
    if (o.given & CLI_OPT_STRUCTURE)
        lanes[count++].s = o.structure;
    else
        for (int k = 0; k < 16; k++) {
            const cliStructure *s = cli_structure_at(k);
            if (s == NULL) break;
            if (cli_structure_supports(s, cmd->needs) && !(s->only_2d && sc.dim != 2))
                lanes[count++].s = s;
        }
    // The frames run on the workers (examples/nb_pthreads.h; serial if threads cannot be had):
    // the lanes' updates side by side, their queries in chunks of agents, the steering in
    // chunks. Every result is the same for any number of workers.
    enum { CHUNKS = 16 };
    Frame frame = {&sc, lanes, count, CHUNKS};
    Progress progress = {.total = (int64_t)count * frames, .show = isatty(fileno(stderr)) != 0};
    if (!lanes_alloc(lanes, count, sc.n, CHUNKS) || pthread_mutex_init(&progress.mu, NULL) != 0) {
        lanes_free(lanes, count, CHUNKS);
        scene_free(&sc);
        free(counts);
        return cli_out_of_memory("demo", "setting up the scene");
    }
    nbxPool pool;
    const bool pooled = nbx_pool_start(&pool, 0) == 0;
    r = run_frames(&frame, frames, counts, &progress, pooled ? &pool : NULL);
    if (pooled) nbx_pool_stop(&pool);
    progress_end(&progress);
    pthread_mutex_destroy(&progress.mu);

    // The last frame's pairs, counted by the first structure: half its neighbour total.
    int64_t pairs = 0;
    if (r == CLI_EXIT_OK && count > 0) {
        const nbStatus st = lanes[0].s->pairs(lanes[0].index, sc.radius, NULL, 0, &pairs);
        if (st != NB_OK) r = cli_fail_status("demo", st, "counting the last frame's pairs");
        if (r == CLI_EXIT_OK && frames > 0 && 2 * pairs != counts[frames - 1]) {
            cli_fail("demo: %s: %lld pairs, but %lld neighbours (NB_ERR_INTERNAL: a bug in "
                     "nearby, please report)",
                     lanes[0].s->name, (long long)pairs, (long long)counts[frames - 1]);
            r = CLI_EXIT_RUNTIME;
        }
    }
    if (r == CLI_EXIT_OK && o.save_points != NULL)
        r = save_points(o.save_points, sc.pos, values - 1);
    char picture[400] = "";
    const char *svg_path = o.svg != NULL ? o.svg : "nearby-demo.svg";
    if (r == CLI_EXIT_OK && count > 0 && !(o.given & CLI_OPT_NO_SVG))
        r = draw(&sc, lanes[0].s, lanes[0].index, svg_path, frames, o.seed, picture,
                 sizeof picture);
    RunStats stats[16];
    for (int k = 0; k < count; k++) stats[k] = lanes[k].stats;
    const cliStructure *list[16];
    for (int k = 0; k < count; k++) list[k] = lanes[k].s;
    lanes_free(lanes, count, CHUNKS);
    free(counts);
    if (r != CLI_EXIT_OK) {
        scene_free(&sc);
        return r;
    }

    int64_t checked = 0;
    for (int k = 0; k < count; k++) checked += stats[k].checked;
    printf(
        "nearby demo: %d agents in 2 groups flocking for %d frames (%dD, radius %g, seed %llu)\n",
        (int)sc.n, (int)frames, (int)sc.dim, sc.radius, (unsigned long long)o.seed);
    printf("world:       a %s of side %.4g centred on the origin\n",
           sc.dim == 2 ? "square" : "cube", 2.0 * sc.half);
    printf("\nstructure   ms/frame   (update + queries)   neighbours/frame   queries/s\n");
    for (int k = 0; k < count; k++) {
        const RunStats *t = &stats[k];
        const double per = frames > 0 ? 1.0 / frames : 0.0;
        printf("%-10s %9.3f   (%7.3f + %8.3f)   %16.1f ", list[k]->name,
               (t->build_ms + t->query_ms) * per, t->build_ms * per, t->query_ms * per,
               (double)t->neighbours * per);
        print_rate(t->query_ms > 0.0 ? (double)sc.n * frames / t->query_ms * 1e3 : 0.0);
        printf("\n");
    }
    printf("\nexact:       %s in every frame; %lld queries checked by brute force\n",
           count > 1 ? "every structure found the same neighbours"
                     : "one structure (nothing to compare)",
           (long long)checked);
    printf("points:      %d\n", (int)sc.n);
    printf("radius:      %s\n", (o.given & CLI_OPT_RADIUS) ? o.radius_text : "1");
    printf("pairs:       %lld (in the last frame)\n", (long long)pairs);
    if (picture[0] != 0) printf("picture:     %s\n", picture);
    scene_free(&sc);
    return cli_finish_stdout();
}
