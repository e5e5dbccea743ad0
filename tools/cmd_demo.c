// SPDX-License-Identifier: MIT
// `nearby demo`: all pairs on N uniform random points, timed over a few frames the way a game
// or simulation loop would run them (what `make demo` runs).
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "structures.h"

static int run(int argc, char **argv);
static void help(void);

const cliCommand cli_cmd_demo = {
    .name = "demo",
    .brief = "[--n N] [--radius R]",
    .summary = "time all pairs on random points",
    .options = CLI_OPT_N | CLI_OPT_RADIUS | CLI_OPT_DIM | CLI_OPT_SEED | CLI_OPT_STRUCTURE |
               CLI_OPT_SAVE_POINTS,
    .needs = CLI_QUERY_PAIRS,
    .run = run,
    .help = help,
};

static void help(void)
{
    cli_print_usage(&cli_cmd_demo, "[--n N] [--radius R] [--seed S] [--save-points FILE]");
    fputs("Generates N uniform random points at density 1 (a square of side sqrt(N), or a\n"
          "cube of side cbrt(N)), builds an index for radius R and finds all pairs within R\n"
          "into a buffer, then does it again for 7 more frames, as a game or simulation\n"
          "would: rebuilding the same index into the same memory. Prints the counts, the\n"
          "steady-state times (median of those frames), the first (cold) frame's times and\n"
          "the pairs per second.\n"
          "\n"
          "  --n N             points, default 1000000\n"
          "  --radius R        default 1.75 in 2D (about 9.6 neighbours, 4.8 pairs a point),\n"
          "                    1.34 in 3D (about 10 neighbours)\n"
          "  --seed S          the generator's seed (splitmix64), default 1\n"
          "  --save-points FILE\n"
          "                    also write the generated points to FILE as raw little-endian\n"
          "                    float64 (.f64), so other tools can check the pairs\n"
          "  --dim 2|3         default 2\n"
          "  --structure NAME  the index to time\n",
          stdout);
    cli_print_structures(stdout, cli_cmd_demo.needs);
}

// splitmix64 (Steele, Lea and Flood): a tiny generator with a 64-bit state that passes
// BigCrush; plenty for benchmark data, and the same numbers on every platform.
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

// A uniform double in [0, 1) from the top 53 bits.
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
        cli_fail("%s: cannot create: %s", name, strerror(errno));
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
        cli_fail("%s: error writing the points", name);
        return CLI_EXIT_RUNTIME;
    }
    return CLI_EXIT_OK;
}

#define DEMO_MAX_STORED ((int64_t)1 << 28) // 2 GiB of pairs: beyond this, count instead

// The median of v[0, len), len >= 1 (sorts v).
static double median_ms(double *v, int len)
{
    for (int a = 1; a < len; a++) // insertion sort: a handful of values
        for (int b = a; b > 0 && v[b - 1] > v[b]; b--) {
            const double t = v[b];
            v[b] = v[b - 1];
            v[b - 1] = t;
        }
    return len % 2 ? v[len / 2] : 0.5 * (v[len / 2 - 1] + v[len / 2]);
}

static int run(int argc, char **argv)
{
    const cliCommand *cmd = &cli_cmd_demo;
    cliOptions o = {0};
    o.n = 1000000;
    o.seed = 1;
    int r = cli_parse_options(cmd, argc, argv, &o);
    if (r >= 0) return r;
    int32_t dim = o.dim != 0 ? o.dim : 2;
    double radius = (o.given & CLI_OPT_RADIUS) ? o.radius : dim == 2 ? 1.75 : 1.34;
    int32_t n = (int32_t)o.n;
    double side = dim == 2 ? sqrt((double)n) : cbrt((double)n);

    size_t values = (size_t)n * (size_t)dim;
    double *coords = malloc(values > 0 ? values * sizeof(double) : 1);
    if (coords == NULL) return cli_out_of_memory("demo", "generating the points");
    uint64_t state = o.seed;
    for (size_t k = 0; k < values; k++) coords[k] = uniform01(&state) * side;
    if (o.save_points != NULL && (r = save_points(o.save_points, coords, values)) != CLI_EXIT_OK) {
        free(coords);
        return r;
    }

    const cliStructure *s = o.structure;
    void *index = NULL;
    double t0 = cli_now_ms();
    nbStatus st = cli_index_build(s, coords, n, dim, radius, &index);
    const double first_build_ms = cli_now_ms() - t0;
    if (st != NB_OK) {
        free(coords);
        return cli_fail_status("demo", st, "building the index");
    }

    // Expected pairs at density 1: n/2 times the ball's volume (edges make it a bit less).
    double ball = dim == 2 ? 3.141592653589793 * radius * radius
                           : 4.0 / 3.0 * 3.141592653589793 * radius * radius * radius;
    double expect = 0.5 * (double)n * fmin(ball, (double)n) * 1.05 + 1024.0;
    int64_t count = 0;
    double first_pairs_ms = 0.0;
    const bool stored = expect <= (double)DEMO_MAX_STORED;
    nbPair *pairs = NULL;
    if (stored) {
        st = cli_collect_pairs(s, index, radius, (int64_t)expect, &pairs, &count, &first_pairs_ms);
    } else {
        t0 = cli_now_ms();
        st = s->pairs(index, radius, NULL, 0, &count);
        first_pairs_ms = cli_now_ms() - t0;
    }
    // Steady state: the same index rebuilt and the same buffer reused, frame after frame.
    enum { WARM_FRAMES = 7 };
    double build_ms[WARM_FRAMES], pairs_ms[WARM_FRAMES], frame_ms[WARM_FRAMES];
    int warm = 0;
    for (; st == NB_OK && warm < WARM_FRAMES; warm++) {
        t0 = cli_now_ms();
        st = cli_index_build(s, coords, n, dim, radius, &index);
        const double t1 = cli_now_ms();
        int64_t again = 0;
        if (st == NB_OK)
            st = s->pairs(index, radius, stored ? pairs : NULL, stored ? count : 0, &again);
        const double t2 = cli_now_ms();
        if (st == NB_OK && again != count) st = NB_ERR_INTERNAL; // same points, same answer
        build_ms[warm] = t1 - t0;
        pairs_ms[warm] = t2 - t1;
        frame_ms[warm] = t2 - t0;
    }
    free(pairs);
    free(coords);
    s->destroy(index);
    if (st == NB_ERR_OUT_OF_MEMORY) return cli_out_of_memory("demo", "storing the pairs");
    if (st != NB_OK) return cli_fail_status("demo", st, "finding pairs");
    const double med_build = warm > 0 ? median_ms(build_ms, warm) : first_build_ms;
    const double med_pairs = warm > 0 ? median_ms(pairs_ms, warm) : first_pairs_ms;
    const double med_frame = warm > 0 ? median_ms(frame_ms, warm) : first_build_ms + first_pairs_ms;

    printf("nearby demo: %d uniform random %dD points, density 1 (%s of side %.6g), seed %llu\n",
           (int)n, (int)dim, dim == 2 ? "square" : "cube", side, (unsigned long long)o.seed);
    printf("structure:   %s\n", s->name);
    // The radius as the user wrote it (or the default's literal), not a re-rounded double.
    const char *radius_text = (o.given & CLI_OPT_RADIUS) ? o.radius_text
                              : dim == 2                 ? "1.75"
                                                         : "1.34";
    printf("radius:      %s\n", radius_text);
    printf("points:      %d\n", (int)n);
    printf("pairs:       %lld%s\n", (long long)count,
           stored ? "" : " (counted: too many to store)");
    printf("frames:      %d (the first is cold; the times are the median of the other %d)\n",
           warm + 1, warm);
    printf("build:       %.3f ms (%.2f ns a point; first frame %.3f ms)\n", med_build,
           n > 0 ? med_build * 1e6 / (double)n : 0.0, first_build_ms);
    printf("%s  %.3f ms (first frame %.3f ms)\n",
           stored ? "find pairs:" : "count pairs:", med_pairs, first_pairs_ms);
    printf("frame:       %.3f ms (build + pairs)\n", med_frame);
    double per_second = med_pairs > 0.0 ? (double)count / med_pairs * 1e3 : 0.0;
    if (med_pairs <= 0.0)
        printf("pairs/s:     (too fast to time)\n");
    else if (per_second >= 1e6)
        printf("pairs/s:     %.1f million\n", per_second * 1e-6);
    else
        printf("pairs/s:     %.0f\n", per_second);
    return cli_finish_stdout();
}
