// SPDX-License-Identifier: MIT
// nearby: the command-line tool. `nearby SUBCOMMAND INPUT [options]`.
//
// Each subcommand is one function that parses its options, reads the input, calls the public
// API through the structure table, and prints. Everything that can fail is done before the
// first byte goes to standard output, so a failed run prints one line on standard error and
// nothing else. Exit status: 0 success, 1 out of memory / output error / library bug,
// 2 bad input or usage. docs/cli.md is the user's version of this file.
#define _POSIX_C_SOURCE 199309L

#include <nearby/grid.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/reader.h"
#include "io/writer.h"

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_BAD_INPUT = 2 };

// ---------------------------------------------------------------------------------------------
// Messages

static void fail(const char *fmt, ...)
{
    va_list ap;
    fputs("nearby: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

// The exit status for a library status: the user's input for NOT_FINITE / OUT_OF_RANGE, the
// machine or us for the rest.
static int exit_for_status(nbStatus st)
{
    return (st == NB_ERR_NOT_FINITE || st == NB_ERR_OUT_OF_RANGE) ? EXIT_BAD_INPUT : EXIT_RUNTIME;
}

// `nearby: FILE: NB_ERR_...: <doing what>: <what the status means>`; returns the exit status.
static int fail_status(const char *file, nbStatus st, const char *doing)
{
    fail("%s: %s: %s: %s", file, nb_status_str(st), doing, nb_status_message(st));
    return exit_for_status(st);
}

// ---------------------------------------------------------------------------------------------
// The structure table. Every entry answers the same questions through the public API, so a
// subcommand never knows which structure it runs on. A later structure (hash, tiles, quadtree)
// is one more row; a NULL entry means the structure cannot answer that query.

typedef struct Structure {
    const char *name;
    const char *about;
    /// Indexes the points for queries near `radius` (the pair/query radius, or a scale hint).
    nbStatus (*build)(const nbioPoints *points, double radius, void **index);
    /// Replaces the index's points (a frame's rebuild); NULL if the structure cannot.
    nbStatus (*rebuild)(void *index, const nbioPoints *points, double radius);
    void (*destroy)(void *index);
    nbStatus (*pairs)(const void *index, double radius, nbPair *out, int64_t capacity,
                      int64_t *found);
    nbStatus (*count_pairs)(const void *index, double radius, int64_t *count);
    nbStatus (*query_radius)(const void *index, const double *center, double radius, int32_t *out,
                             int32_t capacity, int32_t *found);
    nbStatus (*knn)(const void *index, const double *point, int32_t k, nbNeighbor *out,
                    int32_t *found);
} Structure;

static nbStatus dense_build(const nbioPoints *points, double radius, void **index)
{
    // The cell edge is the radius (cell_size 0); the grid itself copes with a radius of 0 or
    // one tiny next to the coordinates (it widens cells or hashes them), so any finite input
    // works.
    nbGridDesc desc = {0};
    desc.dim = points->dim;
    desc.capacity_hint = points->count;
    nbGrid *grid = NULL;
    nbStatus st = nb_grid_create(&desc, &grid);
    if (st != NB_OK) return st;
    nbPoints view = {.data = points->coords, .count = points->count, .dim = points->dim, .stride = 0};
    st = nb_grid_build(grid, &view, radius);
    if (st != NB_OK) {
        nb_grid_destroy(grid);
        return st;
    }
    *index = grid;
    return NB_OK;
}

static nbStatus dense_rebuild(void *index, const nbioPoints *points, double radius)
{
    nbPoints view = {.data = points->coords, .count = points->count, .dim = points->dim, .stride = 0};
    return nb_grid_build(index, &view, radius);
}

static void dense_destroy(void *index)
{
    nb_grid_destroy(index);
}

static nbStatus dense_pairs(const void *index, double radius, nbPair *out, int64_t capacity,
                            int64_t *found)
{
    return nb_grid_pairs(index, radius, out, capacity, found);
}

static nbStatus dense_count_pairs(const void *index, double radius, int64_t *count)
{
    return nb_grid_count_pairs(index, radius, count);
}

static nbStatus dense_query_radius(const void *index, const double *center, double radius,
                                   int32_t *out, int32_t capacity, int32_t *found)
{
    return nb_grid_query_radius(index, center, radius, out, capacity, found);
}

static nbStatus dense_knn(const void *index, const double *point, int32_t k, nbNeighbor *out,
                          int32_t *found)
{
    return nb_grid_knn(index, point, k, out, found);
}

static const Structure structures[] = {
    {"dense", "uniform grid rebuilt with a counting sort (nb_grid_*)", dense_build, dense_rebuild,
     dense_destroy, dense_pairs, dense_count_pairs, dense_query_radius, dense_knn},
};
#define STRUCTURE_COUNT (sizeof structures / sizeof structures[0])

static const Structure *find_structure(const char *name)
{
    for (size_t k = 0; k < STRUCTURE_COUNT; k++)
        if (strcmp(structures[k].name, name) == 0) return &structures[k];
    return NULL;
}

static void print_structures(FILE *f)
{
    for (size_t k = 0; k < STRUCTURE_COUNT; k++)
        fprintf(f, "  %-10s %s%s\n", structures[k].name, structures[k].about,
                k == 0 ? " (default)" : "");
}

// ---------------------------------------------------------------------------------------------
// Options. One parser for every subcommand; each says which options it takes.

enum {
    OPT_RADIUS = 1 << 0,
    OPT_COUNT = 1 << 1,
    OPT_DIM = 1 << 2,
    OPT_STRUCTURE = 1 << 3,
    OPT_FORMAT = 1 << 4,
    OPT_AT = 1 << 5,
    OPT_K = 1 << 6,
    OPT_N = 1 << 7,
    OPT_SEED = 1 << 8,
    OPT_INPUT = 1 << 9, // takes one INPUT argument
};

typedef struct Options {
    unsigned given; // OPT_* bits seen
    const char *input;
    double radius;
    const char *radius_text; // --radius as given
    int32_t dim;             // 0 = not given
    const Structure *structure;
    nbioFormat format;
    double at[3];
    int32_t at_count;
    int64_t k;
    int64_t n;
    uint64_t seed;
} Options;

static const struct {
    const char *name;
    unsigned bit;
    bool has_value;
} option_table[] = {
    {"--radius", OPT_RADIUS, true}, {"--count", OPT_COUNT, false},
    {"--dim", OPT_DIM, true},       {"--structure", OPT_STRUCTURE, true},
    {"--format", OPT_FORMAT, true}, {"--at", OPT_AT, true},
    {"--k", OPT_K, true},           {"--n", OPT_N, true},
    {"--seed", OPT_SEED, true},
};

// A whole decimal integer in [0, max], digits only. 0 ok, 1 not an integer, 2 too large.
static int parse_integer(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (*s == 0) return 1;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return 1;
        unsigned d = (unsigned)(*p - '0');
        if (v > (max - d) / 10) return 2;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int bad_number(const char *cmd, const char *opt, const char *what, nbioNumber why,
                      const char *s, size_t len)
{
    char q[200];
    nbio_quote(q, sizeof q, s, len);
    switch (why) {
    case NBIO_NUMBER_EMPTY: fail("%s: %s: %s is empty", cmd, opt, what); break;
    case NBIO_NUMBER_NAN: fail("%s: %s: NB_ERR_NOT_FINITE: %s is NaN", cmd, opt, what); break;
    case NBIO_NUMBER_INFINITE:
    case NBIO_NUMBER_OVERFLOW:
        fail("%s: %s: NB_ERR_NOT_FINITE: %s is infinite: %s", cmd, opt, what, q);
        break;
    default: fail("%s: %s: %s is not a number: %s", cmd, opt, what, q); break;
    }
    return EXIT_BAD_INPUT;
}

static int parse_value(const char *cmd, unsigned bit, const char *opt, const char *v, Options *o)
{
    char q[200];
    nbio_quote(q, sizeof q, v, strlen(v));
    uint64_t u = 0;
    int r;
    switch (bit) {
    case OPT_RADIUS: {
        o->radius_text = v;
        nbioNumber why = nbio_parse_number(v, strlen(v), &o->radius);
        if (why != NBIO_NUMBER_OK) return bad_number(cmd, opt, "radius", why, v, strlen(v));
        if (o->radius < 0.0) {
            fail("%s: %s: NB_ERR_OUT_OF_RANGE: radius is negative: %s", cmd, opt, q);
            return EXIT_BAD_INPUT;
        }
        return EXIT_OK;
    }
    case OPT_DIM:
        if (strcmp(v, "2") != 0 && strcmp(v, "3") != 0) {
            fail("%s: %s must be 2 or 3, got %s", cmd, opt, q);
            return EXIT_BAD_INPUT;
        }
        o->dim = v[0] - '0';
        return EXIT_OK;
    case OPT_STRUCTURE:
        o->structure = find_structure(v);
        if (o->structure == NULL) {
            fail("%s: unknown structure %s (see nearby %s --help)", cmd, q, cmd);
            return EXIT_BAD_INPUT;
        }
        return EXIT_OK;
    case OPT_FORMAT:
        o->format = nbio_format_from_name(v);
        if (o->format == NBIO_FORMAT_AUTO) {
            fail("%s: %s must be csv, f64 or npy, got %s", cmd, opt, q);
            return EXIT_BAD_INPUT;
        }
        return EXIT_OK;
    case OPT_AT: {
        static const char *const axis[3] = {"x", "y", "z"};
        size_t fields = 1;
        for (const char *p = v; *p; p++) fields += *p == ',';
        if (fields != 2 && fields != 3) {
            fail("%s: %s: expected X,Y or X,Y,Z (2 or 3 values), found %zu", cmd, opt, fields);
            return EXIT_BAD_INPUT;
        }
        const char *f = v;
        for (size_t k = 0; k < fields; k++) {
            const char *comma = strchr(f, ',');
            size_t len = comma != NULL ? (size_t)(comma - f) : strlen(f);
            nbioNumber why = nbio_parse_number(f, len, &o->at[k]);
            if (why != NBIO_NUMBER_OK) return bad_number(cmd, opt, axis[k], why, f, len);
            f += len + 1;
        }
        o->at_count = (int32_t)fields;
        return EXIT_OK;
    }
    case OPT_K:
    case OPT_N:
        if (v[0] == '-' && parse_integer(v + 1, UINT64_MAX, &u) == 0) {
            fail("%s: %s: NB_ERR_OUT_OF_RANGE: %s is negative: %s", cmd, opt,
                 bit == OPT_K ? "k" : "n", q);
            return EXIT_BAD_INPUT;
        }
        r = parse_integer(v, (uint64_t)NBIO_MAX_POINTS, &u);
        if (r == 1) fail("%s: %s: not a whole number: %s", cmd, opt, q);
        if (r == 2)
            fail("%s: %s: NB_ERR_OUT_OF_RANGE: too large: %s (at most %d)", cmd, opt, q,
                 (int)NBIO_MAX_POINTS);
        if (r != 0) return EXIT_BAD_INPUT;
        if (bit == OPT_K)
            o->k = (int64_t)u;
        else
            o->n = (int64_t)u;
        return EXIT_OK;
    case OPT_SEED:
        r = parse_integer(v, UINT64_MAX, &u);
        if (r != 0) {
            fail("%s: %s: not a whole number from 0 to 18446744073709551615: %s", cmd, opt, q);
            return EXIT_BAD_INPUT;
        }
        o->seed = u;
        return EXIT_OK;
    default: return EXIT_OK;
    }
}

// Parses argv[0, argc) (the words after the subcommand). Returns -1 to go on, or an exit
// status: 0 after printing help, 2 after printing a usage error.
static int parse_options(const char *cmd, unsigned allowed, void (*help)(void), int argc,
                         char **argv, Options *o)
{
    bool options_done = false;
    for (int a = 0; a < argc; a++) {
        const char *arg = argv[a];
        char q[200];
        nbio_quote(q, sizeof q, arg, strlen(arg));
        if (!options_done && (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)) {
            help();
            return EXIT_OK;
        }
        if (!options_done && strcmp(arg, "--") == 0) {
            options_done = true;
            continue;
        }
        if (options_done || arg[0] != '-' || strcmp(arg, "-") == 0) {
            if (!(allowed & OPT_INPUT) || o->input != NULL) {
                fail("%s: unexpected argument %s (see nearby %s --help)", cmd, q, cmd);
                return EXIT_BAD_INPUT;
            }
            o->input = arg;
            continue;
        }
        const char *eq = strchr(arg, '=');
        size_t name_len = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
        size_t t = 0;
        while (t < sizeof option_table / sizeof option_table[0] &&
               !(strlen(option_table[t].name) == name_len &&
                 memcmp(option_table[t].name, arg, name_len) == 0 &&
                 (option_table[t].bit & allowed)))
            t++;
        if (t == sizeof option_table / sizeof option_table[0]) {
            char nq[200];
            nbio_quote(nq, sizeof nq, arg, name_len);
            fail("%s: unknown option %s (see nearby %s --help)", cmd, nq, cmd);
            return EXIT_BAD_INPUT;
        }
        const char *name = option_table[t].name;
        unsigned bit = option_table[t].bit;
        if (o->given & bit) {
            fail("%s: %s given twice", cmd, name);
            return EXIT_BAD_INPUT;
        }
        o->given |= bit;
        if (!option_table[t].has_value) {
            if (eq != NULL) {
                fail("%s: %s takes no value", cmd, name);
                return EXIT_BAD_INPUT;
            }
            continue;
        }
        const char *value = eq != NULL ? eq + 1 : NULL;
        if (value == NULL) {
            if (a + 1 == argc) {
                fail("%s: %s needs a value", cmd, name);
                return EXIT_BAD_INPUT;
            }
            value = argv[++a];
        }
        int r = parse_value(cmd, bit, name, value, o);
        if (r != EXIT_OK) return r;
    }
    if ((allowed & OPT_INPUT) && o->input == NULL) {
        fail("%s: missing INPUT (see nearby %s --help)", cmd, cmd);
        return EXIT_BAD_INPUT;
    }
    return -1;
}

static int require(const char *cmd, const Options *o, unsigned bit, const char *name)
{
    if (o->given & bit) return EXIT_OK;
    fail("%s: missing %s (see nearby %s --help)", cmd, name, cmd);
    return EXIT_BAD_INPUT;
}

// ---------------------------------------------------------------------------------------------
// Input

typedef struct Input {
    nbioPoints points;
    char name[256]; // the file name as messages show it
} Input;

static void display_name(char *dst, size_t cap, const char *path)
{
    if (strcmp(path, "-") == 0) path = "<stdin>";
    size_t k = 0;
    for (; path[k] != 0 && k + 1 < cap; k++) {
        unsigned char c = (unsigned char)path[k];
        dst[k] = (c < 0x20 || c == 0x7f) ? '?' : (char)c; // keep the message on one line
    }
    dst[k] = 0;
}

// Reads the input named in the options and settles its dimension: the file's, else --dim,
// else the --at point's, else 2 (an empty CSV says nothing). Checks --at against it.
static int load_input(const char *cmd, const Options *o, Input *in)
{
    nbioError err;
    display_name(in->name, sizeof in->name, o->input);
    nbioResult r = nbio_read(o->input, o->format, o->dim, &in->points, &err);
    if (r == NBIO_NO_MEMORY) {
        fail("%s: NB_ERR_OUT_OF_MEMORY: out of memory reading the input", in->name);
        return EXIT_RUNTIME;
    }
    if (r != NBIO_OK) {
        if (err.line > 0)
            fail("%s:%lld: %s", in->name, (long long)err.line, err.text);
        else if (err.point >= 0)
            fail("%s: point %lld: %s", in->name, (long long)err.point, err.text);
        else
            fail("%s: %s", in->name, err.text);
        return EXIT_BAD_INPUT;
    }
    if (in->points.dim == 0)
        in->points.dim = o->dim != 0 ? o->dim : o->at_count != 0 ? o->at_count : 2;
    if (o->at_count != 0 && o->at_count != in->points.dim) {
        fail("%s: --at: expected %d values (the points in %s are %dD), found %d", cmd,
             (int)in->points.dim, in->name, (int)in->points.dim, (int)o->at_count);
        nbio_points_free(&in->points);
        return EXIT_BAD_INPUT;
    }
    return EXIT_OK;
}

// ---------------------------------------------------------------------------------------------
// Output

static char out_buffer[1 << 20];

static int finish_output(nbioWriter *w)
{
    if (nbio_writer_finish(w)) return EXIT_OK;
    fail("error writing the output");
    return EXIT_RUNTIME;
}

static int out_of_memory(const char *file, const char *doing)
{
    fail("%s: NB_ERR_OUT_OF_MEMORY: out of memory %s", file, doing);
    return EXIT_RUNTIME;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

// All pairs into a growing buffer: try, and on NB_ERR_BUFFER_TOO_SMALL grow to the reported
// total and run once more. *ms, if not NULL, receives the time of the final, complete call.
static nbStatus collect_pairs(const Structure *s, const void *index, double radius,
                              int64_t first_capacity, nbPair **pairs, int64_t *count, double *ms)
{
    int64_t capacity = first_capacity;
    *pairs = NULL;
    *count = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        if ((uint64_t)capacity > SIZE_MAX / sizeof(nbPair)) return NB_ERR_OUT_OF_MEMORY;
        nbPair *buf = malloc(capacity > 0 ? (size_t)capacity * sizeof(nbPair) : 1);
        if (buf == NULL) return NB_ERR_OUT_OF_MEMORY;
        int64_t found = 0;
        double t0 = now_ms();
        nbStatus st = s->pairs(index, radius, buf, capacity, &found);
        double t1 = now_ms();
        if (st == NB_OK) {
            *pairs = buf;
            *count = found;
            if (ms != NULL) *ms = t1 - t0;
            return NB_OK;
        }
        free(buf);
        if (st != NB_ERR_BUFFER_TOO_SMALL) return st;
        capacity = found;
    }
    return NB_ERR_INTERNAL; // the total changed between two identical calls
}

// Restores the max-heap property of b[0, len) below `r`.
static void sift_down(int32_t *b, int64_t r, int64_t len)
{
    for (;;) {
        int64_t c = 2 * r + 1;
        if (c >= len) return;
        if (c + 1 < len && b[c + 1] > b[c]) c++;
        if (b[r] >= b[c]) return;
        int32_t t = b[r];
        b[r] = b[c];
        b[c] = t;
        r = c;
    }
}

// Sorts pairs by (i, j) without a comparison sort over all of them: a counting sort by i
// (the pairs' i values are < n), then a small sort of each i's j values. O(n + pairs + sum of
// b log b over buckets). Returns the j values in order and the bucket starts (n + 1 entries).
static bool sort_pairs(const nbPair *pairs, int64_t count, int32_t n, int32_t **js_out,
                       int64_t **start_out)
{
    int64_t *start = calloc((size_t)n + 1, sizeof(int64_t));
    int32_t *js = malloc(count > 0 ? (size_t)count * sizeof(int32_t) : 1);
    if (start == NULL || js == NULL) {
        free(start);
        free(js);
        return false;
    }
    for (int64_t p = 0; p < count; p++) start[pairs[p].i + 1]++;
    for (int32_t i = 0; i < n; i++) start[i + 1] += start[i];
    // Scatter using start[i] as a cursor, then shift back: bucket i ends up at
    // [start[i], start[i + 1]).
    for (int64_t p = 0; p < count; p++) js[start[pairs[p].i]++] = pairs[p].j;
    for (int32_t i = n; i > 0; i--) start[i] = start[i - 1];
    start[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t *b = js + start[i];
        int64_t len = start[i + 1] - start[i];
        if (len <= 32) { // insertion sort: buckets are mostly tiny
            for (int64_t x = 1; x < len; x++) {
                int32_t v = b[x];
                int64_t y = x;
                while (y > 0 && b[y - 1] > v) {
                    b[y] = b[y - 1];
                    y--;
                }
                b[y] = v;
            }
        } else {
            // Heap sort: O(len log len) with no recursion, for dense clusters and duplicates.
            for (int64_t root = len / 2; root-- > 0;) sift_down(b, root, len);
            for (int64_t end = len - 1; end > 0; end--) {
                int32_t t = b[0];
                b[0] = b[end];
                b[end] = t;
                sift_down(b, 0, end);
            }
        }
    }
    *js_out = js;
    *start_out = start;
    return true;
}

static int compare_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a;
    int32_t y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int compare_neighbor(const void *a, const void *b)
{
    const nbNeighbor *x = a;
    const nbNeighbor *y = b;
    if (x->dist2 != y->dist2) return x->dist2 < y->dist2 ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

// ---------------------------------------------------------------------------------------------
// Subcommands

static void help_pairs(void)
{
    printf("usage: nearby pairs INPUT --radius R [--count] [--dim 2|3] [--structure NAME]\n"
           "                    [--format csv|f64|npy]\n"
           "\n"
           "Prints every pair of points at distance <= R, one \"i,j\" a line (0-based input\n"
           "order, i < j, each pair once), sorted by i then j.\n"
           "\n"
           "  --radius R        the distance, finite and >= 0 (required)\n"
           "  --count           print only the number of pairs\n"
           "  --dim 2|3         the dimension: must match a CSV or .npy input; for .f64 it\n"
           "                    says how to read the file (default 2)\n"
           "  --structure NAME  the index to use; the output is the same for every one\n"
           "  --format FMT      csv, f64 or npy; default: from the extension (else CSV)\n"
           "\n"
           "structures:\n");
    print_structures(stdout);
}

// Builds the chosen structure over the loaded points, tuned for `scale`, after checking that it
// supports what the command needs (`supported`; `what` names it in the message). On failure
// frees the points, reports, and returns the exit status; EXIT_OK with *index set otherwise.
static int build_index(const char *cmd, const Structure *s, bool supported, const char *what,
                       Input *in, double scale, void **index)
{
    if (!supported) {
        nbio_points_free(&in->points);
        fail("%s: structure %s does not support %s", cmd, s->name, what);
        return EXIT_BAD_INPUT;
    }
    nbStatus st = s->build(&in->points, scale, index);
    if (st != NB_OK) {
        nbio_points_free(&in->points);
        return fail_status(in->name, st, "building the index");
    }
    return EXIT_OK;
}

static int cmd_pairs(int argc, char **argv)
{
    const char *cmd = "pairs";
    Options o = {0};
    o.structure = &structures[0];
    int r = parse_options(cmd,
                          OPT_INPUT | OPT_RADIUS | OPT_COUNT | OPT_DIM | OPT_STRUCTURE | OPT_FORMAT,
                          help_pairs, argc, argv, &o);
    if (r >= 0) return r;
    if ((r = require(cmd, &o, OPT_RADIUS, "--radius")) != EXIT_OK) return r;
    Input in;
    if ((r = load_input(cmd, &o, &in)) != EXIT_OK) return r;

    const Structure *s = o.structure;
    void *index = NULL;
    r = build_index(cmd, s, s->pairs != NULL && s->count_pairs != NULL, "pair queries", &in,
                    o.radius, &index);
    if (r != EXIT_OK) return r;
    nbStatus st;
    nbioWriter w;
    nbio_writer_init(&w, stdout, out_buffer, sizeof out_buffer);
    if (o.given & OPT_COUNT) {
        int64_t count = 0;
        st = s->count_pairs(index, o.radius, &count);
        s->destroy(index);
        nbio_points_free(&in.points);
        if (st != NB_OK) return fail_status(in.name, st, "counting pairs");
        nbio_write_i64(&w, count);
        nbio_write_char(&w, '\n');
        return finish_output(&w);
    }

    nbPair *pairs = NULL;
    int64_t count = 0;
    int32_t n = in.points.count;
    st = collect_pairs(s, index, o.radius, 4 * (int64_t)n + 1024, &pairs, &count, NULL);
    s->destroy(index);
    nbio_points_free(&in.points);
    if (st == NB_ERR_OUT_OF_MEMORY) return out_of_memory(in.name, "storing the pairs");
    // The sort indexes arrays by i and j: check the library's answer before trusting it.
    for (int64_t p = 0; p < count && st == NB_OK; p++)
        if (!(pairs[p].i >= 0 && pairs[p].i < pairs[p].j && pairs[p].j < n)) st = NB_ERR_INTERNAL;
    if (st != NB_OK) {
        free(pairs);
        return fail_status(in.name, st, "finding pairs");
    }
    int32_t *js = NULL;
    int64_t *start = NULL;
    bool sorted = sort_pairs(pairs, count, n, &js, &start);
    free(pairs);
    if (!sorted) return out_of_memory(in.name, "sorting the pairs");
    for (int32_t i = 0; i < n; i++) {
        for (int64_t p = start[i]; p < start[i + 1]; p++) {
            nbio_write_i64(&w, i);
            nbio_write_char(&w, ',');
            nbio_write_i64(&w, js[p]);
            nbio_write_char(&w, '\n');
        }
    }
    free(js);
    free(start);
    return finish_output(&w);
}

static void help_within(void)
{
    printf("usage: nearby within INPUT --radius R --at X,Y[,Z] [--dim 2|3] [--structure NAME]\n"
           "                     [--format csv|f64|npy]\n"
           "\n"
           "Prints the indices of the points at distance <= R from the point X,Y[,Z], one a\n"
           "line, ascending.\n"
           "\n"
           "  --radius R        the distance, finite and >= 0 (required)\n"
           "  --at X,Y[,Z]      the centre, with as many values as the points have (required)\n"
           "  --dim 2|3         the dimension (see nearby pairs --help)\n"
           "  --structure NAME  the index to use\n"
           "  --format FMT      csv, f64 or npy; default: from the extension (else CSV)\n"
           "\n"
           "structures:\n");
    print_structures(stdout);
}

static int cmd_within(int argc, char **argv)
{
    const char *cmd = "within";
    Options o = {0};
    o.structure = &structures[0];
    int r =
        parse_options(cmd, OPT_INPUT | OPT_RADIUS | OPT_AT | OPT_DIM | OPT_STRUCTURE | OPT_FORMAT,
                      help_within, argc, argv, &o);
    if (r >= 0) return r;
    if ((r = require(cmd, &o, OPT_RADIUS, "--radius")) != EXIT_OK) return r;
    if ((r = require(cmd, &o, OPT_AT, "--at")) != EXIT_OK) return r;
    Input in;
    if ((r = load_input(cmd, &o, &in)) != EXIT_OK) return r;

    const Structure *s = o.structure;
    void *index = NULL;
    r = build_index(cmd, s, s->query_radius != NULL, "radius queries", &in, o.radius, &index);
    if (r != EXIT_OK) return r;
    nbStatus st;
    int32_t n = in.points.count;
    nbio_points_free(&in.points);
    // Capacity n: a query can never find more points than there are.
    int32_t *found_idx = malloc(n > 0 ? (size_t)n * sizeof(int32_t) : 1);
    if (found_idx == NULL) {
        s->destroy(index);
        return out_of_memory(in.name, "for the results");
    }
    int32_t found = 0;
    st = s->query_radius(index, o.at, o.radius, found_idx, n, &found);
    s->destroy(index);
    if (st == NB_OK && (found < 0 || found > n)) st = NB_ERR_INTERNAL;
    for (int32_t k = 0; k < found && st == NB_OK; k++)
        if (found_idx[k] < 0 || found_idx[k] >= n) st = NB_ERR_INTERNAL;
    if (st != NB_OK) {
        free(found_idx);
        return fail_status(in.name, st, "querying");
    }
    qsort(found_idx, (size_t)found, sizeof(int32_t), compare_int32);
    nbioWriter w;
    nbio_writer_init(&w, stdout, out_buffer, sizeof out_buffer);
    for (int32_t k = 0; k < found; k++) {
        nbio_write_i64(&w, found_idx[k]);
        nbio_write_char(&w, '\n');
    }
    free(found_idx);
    return finish_output(&w);
}

// A scale for a kNN index, which has no radius: the edge of a cube holding about 2^dim points
// if they were spread evenly over their bounding box (axes of zero extent are left out).
static double knn_scale(const nbioPoints *p)
{
    if (p->count < 2) return 1.0;
    double log_sum = 0.0;
    int axes = 0;
    for (int32_t d = 0; d < p->dim; d++) {
        double lo = p->coords[d];
        double hi = lo;
        for (int32_t i = 1; i < p->count; i++) {
            double v = p->coords[(size_t)i * (size_t)p->dim + (size_t)d];
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
        double extent = hi - lo;
        if (extent > 0.0) {
            log_sum += log(extent); // log(inf) = inf for far-flung data: caught below
            axes++;
        }
    }
    if (axes == 0) return 1.0;
    double scale = 2.0 * exp((log_sum - log((double)p->count)) / axes);
    return isfinite(scale) && scale > 0.0 ? scale : 1.0;
}

static void help_knn(void)
{
    printf("usage: nearby knn INPUT --k K --at X,Y[,Z] [--dim 2|3] [--structure NAME]\n"
           "                  [--format csv|f64|npy]\n"
           "\n"
           "Prints the K points nearest to X,Y[,Z] as \"index,distance\" lines, nearest first;\n"
           "equal distances are ordered by the lower index. Fewer lines if there are fewer\n"
           "points. The distance is printed with 17 significant digits (it round-trips).\n"
           "\n"
           "  --k K             how many, 0 to 2147483647 (required)\n"
           "  --at X,Y[,Z]      the query point, with as many values as the points have\n"
           "                    (required)\n"
           "  --dim 2|3         the dimension (see nearby pairs --help)\n"
           "  --structure NAME  the index to use\n"
           "  --format FMT      csv, f64 or npy; default: from the extension (else CSV)\n"
           "\n"
           "structures:\n");
    print_structures(stdout);
}

static int cmd_knn(int argc, char **argv)
{
    const char *cmd = "knn";
    Options o = {0};
    o.structure = &structures[0];
    int r = parse_options(cmd, OPT_INPUT | OPT_K | OPT_AT | OPT_DIM | OPT_STRUCTURE | OPT_FORMAT,
                          help_knn, argc, argv, &o);
    if (r >= 0) return r;
    if ((r = require(cmd, &o, OPT_K, "--k")) != EXIT_OK) return r;
    if ((r = require(cmd, &o, OPT_AT, "--at")) != EXIT_OK) return r;
    Input in;
    if ((r = load_input(cmd, &o, &in)) != EXIT_OK) return r;

    const Structure *s = o.structure;
    void *index = NULL;
    r = build_index(cmd, s, s->knn != NULL, "nearest-neighbour queries", &in, knn_scale(&in.points),
                    &index);
    if (r != EXIT_OK) return r;
    int32_t n = in.points.count;
    nbio_points_free(&in.points);
    nbStatus st;
    int32_t k = o.k < n ? (int32_t)o.k : n; // min(k, N) answers are all there are
    nbNeighbor *nb = malloc(k > 0 ? (size_t)k * sizeof(nbNeighbor) : sizeof(nbNeighbor));
    if (nb == NULL) {
        s->destroy(index);
        return out_of_memory(in.name, "for the results");
    }
    int32_t found = 0;
    st = s->knn(index, o.at, k, nb, &found);
    s->destroy(index);
    if (st == NB_OK && found != k) st = NB_ERR_INTERNAL; // min(k, N) exactly
    for (int32_t i = 0; i < found && st == NB_OK; i++)
        if (nb[i].index < 0 || nb[i].index >= n || !(nb[i].dist2 >= 0.0)) st = NB_ERR_INTERNAL;
    if (st != NB_OK) {
        free(nb);
        return fail_status(in.name, st, "querying");
    }
    // The API promises this order already; sorting again keeps every structure's output
    // byte-identical even if one breaks ties differently.
    qsort(nb, (size_t)found, sizeof(nbNeighbor), compare_neighbor);
    nbioWriter w;
    nbio_writer_init(&w, stdout, out_buffer, sizeof out_buffer);
    for (int32_t i = 0; i < found; i++) {
        nbio_write_i64(&w, nb[i].index);
        nbio_write_char(&w, ',');
        nbio_write_double(&w, sqrt(nb[i].dist2));
        nbio_write_char(&w, '\n');
    }
    free(nb);
    return finish_output(&w);
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

#define DEMO_MAX_STORED ((int64_t)1 << 28) // 2 GiB of pairs: beyond this, count instead

static void help_demo(void)
{
    printf("usage: nearby demo [--n N] [--radius R] [--dim 2|3] [--seed S] [--structure NAME]\n"
           "\n"
           "Generates N uniform random points at density 1 (a square of side sqrt(N), or a\n"
           "cube of side cbrt(N)), builds an index for radius R and finds all pairs within R\n"
           "into a buffer, then does it again for 7 more frames, as a game or simulation\n"
           "would: rebuilding the same index into the same memory. Prints the counts, the\n"
           "steady-state times (median of those frames), the first (cold) frame's times and\n"
           "the pairs per second.\n"
           "\n"
           "  --n N             points, default 1000000\n"
           "  --radius R        default 1.75 in 2D (about 9.6 neighbours, 4.8 pairs a point),\n"
           "                    1.34 in 3D (about 10 neighbours)\n"
           "  --dim 2|3         default 2\n"
           "  --seed S          the generator's seed (splitmix64), default 1\n"
           "  --structure NAME  the index to time\n"
           "\n"
           "structures:\n");
    print_structures(stdout);
}

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

static int cmd_demo(int argc, char **argv)
{
    const char *cmd = "demo";
    Options o = {0};
    o.structure = &structures[0];
    o.n = 1000000;
    o.seed = 1;
    int r = parse_options(cmd, OPT_N | OPT_RADIUS | OPT_DIM | OPT_SEED | OPT_STRUCTURE, help_demo,
                          argc, argv, &o);
    if (r >= 0) return r;
    if (o.structure->pairs == NULL || o.structure->count_pairs == NULL) {
        fail("%s: structure %s does not support pair queries", cmd, o.structure->name);
        return EXIT_BAD_INPUT;
    }
    int32_t dim = o.dim != 0 ? o.dim : 2;
    double radius = (o.given & OPT_RADIUS) ? o.radius : dim == 2 ? 1.75 : 1.34;
    int32_t n = (int32_t)o.n;
    double side = dim == 2 ? sqrt((double)n) : cbrt((double)n);

    size_t values = (size_t)n * (size_t)dim;
    double *coords = malloc(values > 0 ? values * sizeof(double) : 1);
    if (coords == NULL) return out_of_memory("demo", "generating the points");
    uint64_t state = o.seed;
    for (size_t k = 0; k < values; k++) coords[k] = uniform01(&state) * side;
    nbioPoints points = {coords, n, dim};

    const Structure *s = o.structure;
    void *index = NULL;
    double t0 = now_ms();
    nbStatus st = s->build(&points, radius, &index);
    const double first_build_ms = now_ms() - t0;
    if (st != NB_OK) {
        free(coords);
        return fail_status("demo", st, "building the index");
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
        st = collect_pairs(s, index, radius, (int64_t)expect, &pairs, &count, &first_pairs_ms);
    } else {
        t0 = now_ms();
        st = s->count_pairs(index, radius, &count);
        first_pairs_ms = now_ms() - t0;
    }
    // Steady state: the same index rebuilt and the same buffer reused, frame after frame.
    enum { WARM_FRAMES = 7 };
    double build_ms[WARM_FRAMES], pairs_ms[WARM_FRAMES], frame_ms[WARM_FRAMES];
    int warm = 0;
    for (; st == NB_OK && s->rebuild != NULL && warm < WARM_FRAMES; warm++) {
        t0 = now_ms();
        st = s->rebuild(index, &points, radius);
        const double t1 = now_ms();
        int64_t again = 0;
        if (st == NB_OK && stored)
            st = s->pairs(index, radius, pairs, count, &again);
        else if (st == NB_OK)
            st = s->count_pairs(index, radius, &again);
        const double t2 = now_ms();
        if (st == NB_OK && again != count) st = NB_ERR_INTERNAL; // same points, same answer
        build_ms[warm] = t1 - t0;
        pairs_ms[warm] = t2 - t1;
        frame_ms[warm] = t2 - t0;
    }
    free(pairs);
    free(coords);
    s->destroy(index);
    if (st == NB_ERR_OUT_OF_MEMORY) return out_of_memory("demo", "storing the pairs");
    if (st != NB_OK) return fail_status("demo", st, "finding pairs");
    const double med_build = warm > 0 ? median_ms(build_ms, warm) : first_build_ms;
    const double med_pairs = warm > 0 ? median_ms(pairs_ms, warm) : first_pairs_ms;
    const double med_frame = warm > 0 ? median_ms(frame_ms, warm) : first_build_ms + first_pairs_ms;

    printf("nearby demo: %d uniform random %dD points, density 1 (%s of side %.6g), seed %llu\n",
           (int)n, (int)dim, dim == 2 ? "square" : "cube", side, (unsigned long long)o.seed);
    printf("structure:   %s\n", s->name);
    // The radius as the user wrote it (or the default's literal), not a re-rounded double.
    const char *radius_text = (o.given & OPT_RADIUS) ? o.radius_text : dim == 2 ? "1.75" : "1.34";
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
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fail("error writing the output");
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

// ---------------------------------------------------------------------------------------------
// Top level

static void print_version(void)
{
    uint32_t v = nb_version();
    printf("nearby %u.%u.%u\n", (unsigned)(v >> 16), (unsigned)((v >> 8) & 0xffu),
           (unsigned)(v & 0xffu));
}

static void help_main(void)
{
    printf("usage: nearby COMMAND [INPUT] [options]\n"
           "\n"
           "Exact neighbour queries on 2D and 3D points.\n"
           "\n"
           "commands:\n"
           "  pairs INPUT --radius R [--count]      all pairs at distance <= R, \"i,j\" a line\n"
           "  within INPUT --radius R --at X,Y[,Z]  the points within R of a point\n"
           "  knn INPUT --k K --at X,Y[,Z]          the K nearest, \"index,distance\"\n"
           "  demo [--n N] [--radius R]             time all pairs on random points\n"
           "  help [COMMAND]                        this text, or one command's options\n"
           "  --version                             print the version\n"
           "\n"
           "INPUT is a CSV file (x,y or x,y,z a line), raw little-endian float64 (.f64,\n"
           "with --dim) or NumPy .npy; \"-\" reads CSV from standard input.\n"
           "Exit status: 0 success, 1 out of memory or output error, 2 bad input or usage.\n");
}

typedef struct Command {
    const char *name;
    int (*run)(int argc, char **argv);
    void (*help)(void);
} Command;

static const Command commands[] = {
    {"pairs", cmd_pairs, help_pairs},
    {"within", cmd_within, help_within},
    {"knn", cmd_knn, help_knn},
    {"demo", cmd_demo, help_demo},
};

static const Command *find_command(const char *name)
{
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (strcmp(commands[k].name, name) == 0) return &commands[k];
    return NULL;
}

static int finish_help(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fail("error writing the output");
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

int main(int argc, char **argv)
{
    static char stdout_buffer[1 << 16];
    setvbuf(stdout, stdout_buffer, _IOFBF, sizeof stdout_buffer);
    if (argc < 2) {
        fail("missing COMMAND (see nearby --help)");
        return EXIT_BAD_INPUT;
    }
    const char *name = argv[1];
    char q[200];
    nbio_quote(q, sizeof q, name, strlen(name));
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 ||
        (strcmp(name, "help") == 0 && argc == 2)) {
        help_main();
        return finish_help();
    }
    if (strcmp(name, "--version") == 0) {
        if (argc > 2) {
            fail("--version takes no arguments");
            return EXIT_BAD_INPUT;
        }
        print_version();
        return finish_help();
    }
    if (strcmp(name, "help") == 0) {
        const Command *c = find_command(argv[2]);
        nbio_quote(q, sizeof q, argv[2], strlen(argv[2]));
        if (c == NULL) {
            fail("help: unknown command %s (commands: pairs, within, knn, demo)", q);
            return EXIT_BAD_INPUT;
        }
        if (argc > 3) {
            nbio_quote(q, sizeof q, argv[3], strlen(argv[3]));
            fail("help: unexpected argument %s", q);
            return EXIT_BAD_INPUT;
        }
        c->help();
        return finish_help();
    }
    const Command *c = find_command(name);
    if (c == NULL) {
        fail("unknown command %s (see nearby --help)", q);
        return EXIT_BAD_INPUT;
    }
    int status = c->run(argc - 2, argv + 2);
    if (status == EXIT_OK) return finish_help();
    return status;
}
