// SPDX-License-Identifier: MIT
// `nearby demo` (what `make demo` runs): a flocking scene. N agents in two groups move for a
// few hundred frames; every frame each structure is brought up to date (the dense grid rebuilt;
// the hash's, the tiles' and the quadtree's items moved by handle: the table's build_points
// adapters) and asked for every agent's neighbours within R. The scene runs once per structure
// from the same start, and the neighbour counts must agree frame by frame (and a sample of
// queries with brute force), or the demo fails. It ends with a table of times and an SVG
// picture of the last frame.
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
          "origin. The scene runs on every structure that can serve it (dense: rebuilt each\n"
          "frame; hash, tiles and quadtree: items moved by handle), from the same start; their\n"
          "neighbour counts must agree in every frame, and a sample of queries must agree with\n"
          "brute force, or the demo fails (exit 1). Prints a table (ms a frame, neighbours a\n"
          "frame, queries a second) and draws the last frame to an SVG picture.\n"
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
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
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
    double radius, half; // the world is [-half, half]^dim
    uint8_t *group;      // 0 or 1
    double *start_pos, *start_vel;
    double *pos, *vel, *next_pos, *next_vel; // this frame's state, and the next one's
    // This frame's neighbours, as compressed rows: agent i's are nbr[first[i], first[i + 1]),
    // sorted by index, self excluded. Sorting makes the steering sum in the same order whatever
    // order a structure reports them in, so every structure computes the same trajectories.
    int64_t *first;
    int32_t *nbr;
    int64_t nbr_cap;
} Scene;

typedef struct RunStats {
    double build_ms, query_ms, frame_ms; // totals over the frames
    int64_t neighbours;                  // over the frames
    int64_t checked;                     // queries checked by brute force
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

// One agent's steering from its sorted neighbours: separation from all, alignment and
// cohesion within its group, a swirl for group 1, and a soft wall at the world's edge.
static void steer(Scene *sc, int32_t i)
{
    const int32_t dim = sc->dim;
    const double *p = sc->pos + (size_t)i * (size_t)dim;
    const double *v = sc->vel + (size_t)i * (size_t)dim;
    double sep[3] = {0, 0, 0}, align[3] = {0, 0, 0}, coh[3] = {0, 0, 0}, acc[3] = {0, 0, 0};
    int32_t same = 0;
    for (int64_t k = sc->first[i]; k < sc->first[i + 1]; k++) {
        const int32_t j = sc->nbr[k];
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

// Brute force for agent i: its neighbours within R (self excluded) must be exactly the row the
// structure gave. False on a mismatch.
static bool brute_check(const Scene *sc, int32_t i)
{
    const int32_t dim = sc->dim;
    const double *p = sc->pos + (size_t)i * (size_t)dim;
    const double r2 = sc->radius * sc->radius;
    int64_t k = sc->first[i];
    for (int32_t j = 0; j < sc->n; j++) {
        if (j == i) continue;
        double d2 = 0.0;
        for (int32_t d = 0; d < dim; d++) {
            const double t = p[d] - sc->pos[(size_t)j * (size_t)dim + (size_t)d];
            d2 += t * t;
        }
        if (d2 > r2) continue;
        if (k == sc->first[i + 1] || sc->nbr[k] != j) return false;
        k++;
    }
    return k == sc->first[i + 1];
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

// Runs the scene on `s` from the start; counts[f] receives frame f's neighbour total. On
// success *index is left built over the last frame's positions (in sc->pos). Reports a
// problem and returns its exit status.
static int run_scene(Scene *sc, const cliStructure *s, int32_t frames, int64_t *counts,
                     Progress *show, void **index, RunStats *stats)
{
    const size_t values = (size_t)sc->n * (size_t)sc->dim;
    memcpy(sc->pos, sc->start_pos, values * sizeof(double));
    memcpy(sc->vel, sc->start_vel, values * sizeof(double));
    memset(stats, 0, sizeof *stats);
    char where[64];
    snprintf(where, sizeof where, "demo: %s", s->name);
    for (int32_t f = 0; f < frames; f++) {
        if (f % 4 == 0 && f > 0) progress_add(show, 4);
        if (f > 0) { // the next frame becomes this one
            double *t = sc->pos;
            sc->pos = sc->next_pos;
            sc->next_pos = t;
            t = sc->vel;
            sc->vel = sc->next_vel;
            sc->next_vel = t;
        }
        const double t0 = cli_now_ms();
        nbStatus st = cli_index_build(s, sc->pos, sc->n, sc->dim, sc->radius, index);
        const double t1 = cli_now_ms();
        if (st != NB_OK) return cli_fail_status(where, st, "updating the index");
        // Every agent's query, into the rows; a full buffer grows and the query runs again.
        int64_t used = 0;
        for (int32_t i = 0; i < sc->n; i++) {
            const double *p = sc->pos + (size_t)i * (size_t)sc->dim;
            int32_t found = 0;
            const int64_t room = sc->nbr_cap - used;
            st = s->within(*index, p, sc->radius, sc->nbr + used,
                           (int32_t)(room < INT32_MAX ? room : INT32_MAX), &found);
            if (st == NB_ERR_BUFFER_TOO_SMALL) {
                const int64_t want = (used + found) * 2 + 1024;
                int32_t *grown = realloc(sc->nbr, (size_t)want * sizeof *grown);
                if (grown == NULL) return cli_out_of_memory(where, "storing the neighbours");
                sc->nbr = grown;
                sc->nbr_cap = want;
                st = s->within(*index, p, sc->radius, sc->nbr + used, found, &found);
            }
            if (st != NB_OK) return cli_fail_status(where, st, "finding neighbours");
            // Drop the agent itself (distance 0 to its own query point).
            int64_t w = used;
            for (int64_t k = used; k < used + found; k++)
                if (sc->nbr[k] != i) sc->nbr[w++] = sc->nbr[k];
            sc->first[i] = used;
            used = w;
        }
        sc->first[sc->n] = used;
        const double t2 = cli_now_ms();
        for (int32_t i = 0; i < sc->n; i++)
            sort_ints(sc->nbr + sc->first[i], sc->first[i + 1] - sc->first[i]);
        counts[f] = used;
        for (int32_t c = 0; c < CHECKS_PER_FRAME && sc->n > 0; c++) {
            uint64_t key = ((uint64_t)f << 8) + (uint64_t)c;
            const int32_t i = (int32_t)(splitmix64(&key) % (uint64_t)sc->n);
            if (!brute_check(sc, i)) {
                progress_end(show);
                cli_fail("demo: %s: frame %d: agent %d's neighbours differ from brute force "
                         "(NB_ERR_INTERNAL: a bug in nearby, please report)",
                         s->name, (int)f, (int)i);
                return CLI_EXIT_RUNTIME;
            }
            stats->checked++;
        }
        stats->build_ms += t1 - t0;
        stats->query_ms += t2 - t1;
        stats->frame_ms += t2 - t0;
        stats->neighbours += used;
        if (f + 1 < frames)
            for (int32_t i = 0; i < sc->n; i++) steer(sc, i);
    }
    progress_add(show, frames - (frames - 1) / 4 * 4);
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

// The state a run moves (the start and the groups are shared): allocates it; false if memory
// ran out (scene_free_state frees what was had).
static bool scene_alloc_state(Scene *sc)
{
    const size_t values = (size_t)sc->n * (size_t)sc->dim + 1;
    sc->pos = malloc(values * sizeof(double));
    sc->vel = malloc(values * sizeof(double));
    sc->next_pos = malloc(values * sizeof(double));
    sc->next_vel = malloc(values * sizeof(double));
    sc->first = malloc(((size_t)sc->n + 1) * sizeof(int64_t));
    sc->nbr_cap = (int64_t)sc->n * 16 + 1024;
    sc->nbr = malloc((size_t)sc->nbr_cap * sizeof(int32_t));
    return sc->pos != NULL && sc->vel != NULL && sc->next_pos != NULL && sc->next_vel != NULL &&
           sc->first != NULL && sc->nbr != NULL;
}

static void scene_free_state(Scene *sc)
{
    free(sc->pos);
    free(sc->vel);
    free(sc->next_pos);
    free(sc->next_vel);
    free(sc->first);
    free(sc->nbr);
}

// The shared start and the state a scene still holds.
static void scene_free(Scene *sc)
{
    free(sc->group);
    free(sc->start_pos);
    free(sc->start_vel);
    scene_free_state(sc);
}

// One structure's run of the scene, on its own copy of the moving state.
typedef struct SceneRun {
    Scene sc;
    const cliStructure *s;
    int64_t *counts; // per frame
    void *index;     // built over the last frame
    RunStats stats;
    int status;
} SceneRun;

typedef struct SceneRuns {
    SceneRun *runs;
    int count;
    int32_t frames;
    Progress *progress;
} SceneRuns;

// Runs [b, e) on one worker, the costliest first: the table lists the structures from the
// fastest, so item t is run count - 1 - t, and two workers finish close together.
static void run_scenes(int32_t b, int32_t e, int32_t worker, void *ctx)
{
    (void)worker;
    const SceneRuns *x = ctx;
    for (int32_t t = b; t < e; t++) {
        SceneRun *u = &x->runs[x->count - 1 - t];
        u->status =
            run_scene(&u->sc, u->s, x->frames, u->counts, x->progress, &u->index, &u->stats);
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
    sc.start_pos = malloc(values * sizeof(double));
    sc.start_vel = malloc(values * sizeof(double));
    if (sc.group == NULL || sc.start_pos == NULL || sc.start_vel == NULL) {
        free(sc.group);
        free(sc.start_pos);
        free(sc.start_vel);
        return cli_out_of_memory("demo", "setting up the scene");
    }
    uint64_t state = o.seed;
    for (int32_t i = 0; i < sc.n; i++) {
        sc.group[i] = (uint8_t)(uniform01(&state) < 0.5);
        double *p = sc.start_pos + (size_t)i * (size_t)sc.dim;
        double *v = sc.start_vel + (size_t)i * (size_t)sc.dim;
        for (int32_t d = 0; d < sc.dim; d++) p[d] = (2.0 * uniform01(&state) - 1.0) * sc.half;
        for (int32_t d = 0; d < sc.dim; d++)
            v[d] = (2.0 * uniform01(&state) - 1.0) * MIN_SPEED * sc.radius;
    }

    // Every structure that can serve the scene, in table order (or the one asked for).
    const cliStructure *list[16];
    int count = 0;
    if (o.given & CLI_OPT_STRUCTURE)
        list[count++] = o.structure;
    else
        for (int k = 0; k < 16; k++) {
            const cliStructure *s = cli_structure_at(k);
            if (s == NULL) break;
            if (cli_structure_supports(s, cmd->needs) && !(s->only_2d && sc.dim != 2))
                list[count++] = s;
        }
    // The runs go on at once, one a worker (examples/nb_pthreads.h; serial if threads cannot
    // be had), each from the same start on its own copy of the state; then they are compared.
    SceneRun runs[16];
    memset(runs, 0, sizeof runs);
    r = CLI_EXIT_OK;
    for (int k = 0; k < count; k++) {
        runs[k].sc = sc;
        runs[k].s = list[k];
        runs[k].counts = malloc(((size_t)frames + 1) * sizeof(int64_t));
        if (!scene_alloc_state(&runs[k].sc) || runs[k].counts == NULL) r = CLI_EXIT_RUNTIME;
    }
    Progress progress = {.total = (int64_t)count * frames, .show = isatty(fileno(stderr)) != 0};
    if (r == CLI_EXIT_OK && pthread_mutex_init(&progress.mu, NULL) != 0) r = CLI_EXIT_RUNTIME;
    if (r != CLI_EXIT_OK) {
        for (int k = 0; k < count; k++) {
            scene_free_state(&runs[k].sc);
            free(runs[k].counts);
        }
        scene_free(&sc);
        return cli_out_of_memory("demo", "setting up the scene");
    }
    SceneRuns all = {runs, count, frames, &progress};
    nbxPool pool;
    if (count > 1 && nbx_pool_start(&pool, 0) == 0) {
        nbx_parallel_for(run_scenes, count, 1, &all, &pool);
        nbx_pool_stop(&pool);
    } else {
        run_scenes(0, count, 0, &all);
    }
    progress_end(&progress);
    pthread_mutex_destroy(&progress.mu);
    for (int k = 0; k < count && r == CLI_EXIT_OK; k++) r = runs[k].status;
    for (int k = 1; k < count && r == CLI_EXIT_OK; k++) {
        for (int32_t f = 0; f < frames && r == CLI_EXIT_OK; f++)
            if (runs[k].counts[f] != runs[0].counts[f]) {
                cli_fail("demo: %s disagrees with %s in frame %d: %lld neighbours, not %lld "
                         "(NB_ERR_INTERNAL: a bug in nearby, please report)",
                         list[k]->name, list[0]->name, (int)f, (long long)runs[k].counts[f],
                         (long long)runs[0].counts[f]);
                r = CLI_EXIT_RUNTIME;
            }
        if (r == CLI_EXIT_OK &&
            memcmp(runs[0].sc.pos, runs[k].sc.pos, (values - 1) * sizeof(double)) != 0) {
            cli_fail("demo: %s and %s end in different places (NB_ERR_INTERNAL: a bug in nearby, "
                     "please report)",
                     list[k]->name, list[0]->name);
            r = CLI_EXIT_RUNTIME;
        }
    }
    // What the rest uses: the first structure's index, its last frame, its counts.
    void *kept = runs[0].index;
    runs[0].index = NULL;
    RunStats stats[16];
    for (int k = 0; k < count; k++) {
        stats[k] = runs[k].stats;
        list[k]->destroy(runs[k].index);
    }
    int64_t *counts = runs[0].counts;
    runs[0].counts = NULL;
    sc.pos = runs[0].sc.pos;
    runs[0].sc.pos = NULL;
    for (int k = 0; k < count; k++) {
        scene_free_state(&runs[k].sc);
        free(runs[k].counts);
    }
    // The last frame's pairs, counted by the first structure: half its neighbour total.
    int64_t pairs = 0;
    if (r == CLI_EXIT_OK && count > 0) {
        const nbStatus st = list[0]->pairs(kept, sc.radius, NULL, 0, &pairs);
        if (st != NB_OK) r = cli_fail_status("demo", st, "counting the last frame's pairs");
        if (r == CLI_EXIT_OK && frames > 0 && 2 * pairs != counts[frames - 1]) {
            cli_fail("demo: %s: %lld pairs, but %lld neighbours (NB_ERR_INTERNAL: a bug in "
                     "nearby, please report)",
                     list[0]->name, (long long)pairs, (long long)counts[frames - 1]);
            r = CLI_EXIT_RUNTIME;
        }
    }
    if (r == CLI_EXIT_OK && o.save_points != NULL)
        r = save_points(o.save_points, sc.pos, values - 1);
    char picture[400] = "";
    const char *svg_path = o.svg != NULL ? o.svg : "nearby-demo.svg";
    if (r == CLI_EXIT_OK && count > 0 && !(o.given & CLI_OPT_NO_SVG))
        r = draw(&sc, list[0], kept, svg_path, frames, o.seed, picture, sizeof picture);
    if (count > 0) list[0]->destroy(kept);
    if (r != CLI_EXIT_OK) {
        scene_free(&sc);
        free(counts);
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
        printf("%-10s %9.3f   (%7.3f + %8.3f)   %16.1f ", list[k]->name, t->frame_ms * per,
               t->build_ms * per, t->query_ms * per, (double)t->neighbours * per);
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
    free(counts);
    return cli_finish_stdout();
}
