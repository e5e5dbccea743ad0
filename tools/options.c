// SPDX-License-Identifier: MIT
// One option parser for every command; each command says which options it takes.
#include "options.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

// Every option the tool knows. `usage` is its part of a usage line when the usage is composed
// (NULL: a command writes it among its own arguments); `help` is its help text when it means
// the same in every command that takes it (NULL: each command writes its own); `missing` is
// how "missing ..." names it when a command requires it (NULL: by its name). The order is
// that of the help lines, of the usage parts and of the checks for required options.
static const struct {
    const char *name;
    unsigned bit;
    bool has_value;
    const char *usage;
    const char *help;
    const char *missing;
} option_table[] = {
    {"--radius", CLI_OPT_RADIUS, true, NULL,
     "  --radius R        the distance, finite and >= 0 (required)\n", NULL},
    {"--count", CLI_OPT_COUNT, false, NULL, NULL, NULL},
    {"--k", CLI_OPT_K, true, NULL, NULL, NULL},
    {"--at", CLI_OPT_AT, true, NULL,
     "  --at X,Y[,Z]      one query point, one value per dimension of the points\n", NULL},
    {"--dim", CLI_OPT_DIM, true, "[--dim 2|3]",
     "  --dim 2|3         the dimension: must match a CSV or .npy input; for .f64 it\n"
     "                    says how to read the file (default 2)\n",
     NULL},
    {"--structure", CLI_OPT_STRUCTURE, true, "[--structure NAME]",
     "  --structure NAME  the index to use; the output is the same for every one\n", NULL},
    {"--format", CLI_OPT_FORMAT, true, "[--format csv|f64|npy]",
     "  --format FMT      csv, f64 or npy; default: from the extension (else CSV)\n", NULL},
    {"--threads", CLI_OPT_THREADS, true, "[--threads N]",
     "  --threads N       workers for building the index and answering, 1 to 256\n"
     "                    (default: one per core); the output is the same for every N\n",
     NULL},
    {"--n", CLI_OPT_N, true, NULL, NULL, NULL},
    {"--seed", CLI_OPT_SEED, true, NULL, NULL, NULL},
    {"--save-points", CLI_OPT_SAVE_POINTS, true, NULL, NULL, NULL},
    {"--frames", CLI_OPT_FRAMES, true, NULL, NULL, NULL},
    {"--svg", CLI_OPT_SVG, true, NULL, NULL, NULL},
    {"--no-svg", CLI_OPT_NO_SVG, false, NULL, NULL, NULL},
    {"-o", CLI_OPT_OUTPUT, true, NULL, NULL, "-o PICTURE.svg"},
    {"--query", CLI_OPT_QUERY, true, NULL, NULL, NULL},
    {"--period", CLI_OPT_PERIOD, true, "[--period PX,PY[,PZ]]",
     "  --period PX,PY[,PZ]\n"
     "                    a periodic box [0, P) per axis (0: that axis does not wrap):\n"
     "                    distances by the minimum image; every point must lie in the\n"
     "                    box, and a radius be at most P / 2 (structure dense only)\n",
     NULL},
    {"--query", CLI_OPT_QUERY_FILE, true, NULL, NULL, "--query QUERIES"},
    {"--queries", CLI_OPT_QUERIES, true, NULL,
     "  --queries Q       a file of query points (CSV, .f64 or .npy, as INPUT), of\n"
     "                    the points' dimension; rows start with the query's index\n",
     "--queries Q"},
};
#define OPTION_COUNT (sizeof option_table / sizeof option_table[0])

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
    case NBIO_NUMBER_EMPTY: cli_fail("%s: %s: %s is empty", cmd, opt, what); break;
    case NBIO_NUMBER_NAN: cli_fail("%s: %s: NB_ERR_NOT_FINITE: %s is NaN", cmd, opt, what); break;
    case NBIO_NUMBER_INFINITE:
    case NBIO_NUMBER_OVERFLOW:
        cli_fail("%s: %s: NB_ERR_NOT_FINITE: %s is infinite: %s", cmd, opt, what, q);
        break;
    default: cli_fail("%s: %s: %s is not a number: %s", cmd, opt, what, q); break;
    }
    return CLI_EXIT_BAD_INPUT;
}

// Comma-separated values in v.
static size_t count_fields(const char *v)
{
    size_t fields = 1;
    for (const char *p = v; *p; p++) fields += *p == ',';
    return fields;
}

// Parses the `fields` comma-separated numbers of v into out, naming a bad one by names[k];
// with `nonnegative`, a negative one is NB_ERR_OUT_OF_RANGE.
static int parse_numbers(const char *cmd, const char *opt, const char *v, size_t fields,
                         const char *const *names, bool nonnegative, double *out)
{
    const char *f = v;
    for (size_t k = 0; k < fields; k++) {
        const char *comma = strchr(f, ',');
        size_t len = comma != NULL ? (size_t)(comma - f) : strlen(f);
        nbioNumber why = nbio_parse_number(f, len, &out[k]);
        if (why != NBIO_NUMBER_OK) return bad_number(cmd, opt, names[k], why, f, len);
        if (nonnegative && out[k] < 0.0) {
            char q[200];
            nbio_quote(q, sizeof q, f, len);
            cli_fail("%s: %s: NB_ERR_OUT_OF_RANGE: the %s is negative: %s", cmd, opt, names[k], q);
            return CLI_EXIT_BAD_INPUT;
        }
        f += len + 1;
    }
    return CLI_EXIT_OK;
}

static int parse_at(const char *cmd, const char *opt, const char *v, cliOptions *o)
{
    static const char *const axis[3] = {"x", "y", "z"};
    const size_t fields = count_fields(v);
    if (fields != 2 && fields != 3) {
        cli_fail("%s: %s: expected X,Y or X,Y,Z (2 or 3 values), found %zu", cmd, opt, fields);
        return CLI_EXIT_BAD_INPUT;
    }
    const int r = parse_numbers(cmd, opt, v, fields, axis, false, o->at);
    if (r == CLI_EXIT_OK) o->at_count = (int32_t)fields;
    return r;
}

// --query: 2 to 6 numbers (a point or a window); their count is checked against the input's
// dimension once it is read.
static int parse_query(const char *cmd, const char *opt, const char *v, cliOptions *o)
{
    static const char *const name[6] = {"1st value", "2nd value", "3rd value",
                                        "4th value", "5th value", "6th value"};
    const size_t fields = count_fields(v);
    if (fields < 2 || fields > 6 || fields == 5) {
        cli_fail("%s: %s: expected X,Y[,Z] (a point) or X0,Y0[,Z0],X1,Y1[,Z1] (a window), "
                 "found %zu values",
                 cmd, opt, fields);
        return CLI_EXIT_BAD_INPUT;
    }
    const int r = parse_numbers(cmd, opt, v, fields, name, false, o->query);
    if (r == CLI_EXIT_OK) o->query_count = (int32_t)fields;
    return r;
}

// --period: 2 or 3 periods, each finite and >= 0; their count is checked against the input's
// dimension once it is read.
static int parse_period(const char *cmd, const char *opt, const char *v, cliOptions *o)
{
    static const char *const axis[3] = {"x period", "y period", "z period"};
    const size_t fields = count_fields(v);
    if (fields != 2 && fields != 3) {
        cli_fail("%s: %s: expected PX,PY or PX,PY,PZ (2 or 3 values), found %zu", cmd, opt, fields);
        return CLI_EXIT_BAD_INPUT;
    }
    const int r = parse_numbers(cmd, opt, v, fields, axis, true, o->period);
    if (r == CLI_EXIT_OK) o->period_count = (int32_t)fields;
    return r;
}

static int parse_value(const cliCommand *c, unsigned bit, const char *opt, const char *v,
                       cliOptions *o)
{
    const char *cmd = c->name;
    char q[200];
    nbio_quote(q, sizeof q, v, strlen(v));
    uint64_t u = 0;
    int r;
    switch (bit) {
    case CLI_OPT_RADIUS: {
        o->radius_text = v;
        nbioNumber why = nbio_parse_number(v, strlen(v), &o->radius);
        if (why != NBIO_NUMBER_OK) return bad_number(cmd, opt, "radius", why, v, strlen(v));
        if (o->radius < 0.0) {
            cli_fail("%s: %s: NB_ERR_OUT_OF_RANGE: radius is negative: %s", cmd, opt, q);
            return CLI_EXIT_BAD_INPUT;
        }
        return CLI_EXIT_OK;
    }
    case CLI_OPT_DIM:
        if (strcmp(v, "2") != 0 && strcmp(v, "3") != 0) {
            cli_fail("%s: %s must be 2 or 3, got %s", cmd, opt, q);
            return CLI_EXIT_BAD_INPUT;
        }
        o->dim = v[0] - '0';
        return CLI_EXIT_OK;
    case CLI_OPT_STRUCTURE:
        o->structure = cli_structure_find(v);
        if (o->structure == NULL) {
            cli_fail("%s: unknown structure %s (see %s %s --help)", cmd, q, cli_program, cmd);
            return CLI_EXIT_BAD_INPUT;
        }
        if (!cli_structure_supports(o->structure, c->needs)) {
            cli_fail("%s: structure %s does not support %s", cmd, o->structure->name,
                     cli_query_name(c->needs));
            return CLI_EXIT_BAD_INPUT;
        }
        return CLI_EXIT_OK;
    case CLI_OPT_FORMAT:
        o->format = nbio_format_from_name(v);
        if (o->format == NBIO_FORMAT_AUTO) {
            cli_fail("%s: %s must be csv, f64 or npy, got %s", cmd, opt, q);
            return CLI_EXIT_BAD_INPUT;
        }
        return CLI_EXIT_OK;
    case CLI_OPT_AT: return parse_at(cmd, opt, v, o);
    case CLI_OPT_FRAMES:
        r = parse_integer(v, 1000000, &u);
        if (r != 0 || u == 0) {
            cli_fail("%s: %s: expected a whole number from 1 to 1000000: %s", cmd, opt, q);
            return CLI_EXIT_BAD_INPUT;
        }
        o->frames = (int64_t)u;
        return CLI_EXIT_OK;
    case CLI_OPT_SVG:
    case CLI_OPT_OUTPUT:
        if (v[0] == 0) {
            cli_fail("%s: %s: the path is empty", cmd, opt);
            return CLI_EXIT_BAD_INPUT;
        }
        if (bit == CLI_OPT_SVG)
            o->svg = v;
        else
            o->output = v;
        return CLI_EXIT_OK;
    case CLI_OPT_QUERY: return parse_query(cmd, opt, v, o);
    case CLI_OPT_PERIOD: return parse_period(cmd, opt, v, o);
    case CLI_OPT_QUERY_FILE:
    case CLI_OPT_QUERIES:
        if (v[0] == 0) {
            cli_fail("%s: %s: the path is empty", cmd, opt);
            return CLI_EXIT_BAD_INPUT;
        }
        if (bit == CLI_OPT_QUERIES)
            o->queries = v;
        else
            o->query_file = v;
        return CLI_EXIT_OK;
    case CLI_OPT_K:
    case CLI_OPT_N:
        if (v[0] == '-' && parse_integer(v + 1, UINT64_MAX, &u) == 0) {
            cli_fail("%s: %s: NB_ERR_OUT_OF_RANGE: %s is negative: %s", cmd, opt,
                     bit == CLI_OPT_K ? "k" : "n", q);
            return CLI_EXIT_BAD_INPUT;
        }
        r = parse_integer(v, (uint64_t)NBIO_MAX_POINTS, &u);
        if (r == 1) cli_fail("%s: %s: not a whole number: %s", cmd, opt, q);
        if (r == 2)
            cli_fail("%s: %s: NB_ERR_OUT_OF_RANGE: too large: %s (at most %d)", cmd, opt, q,
                     (int)NBIO_MAX_POINTS);
        if (r != 0) return CLI_EXIT_BAD_INPUT;
        if (bit == CLI_OPT_K)
            o->k = (int64_t)u;
        else
            o->n = (int64_t)u;
        return CLI_EXIT_OK;
    case CLI_OPT_SEED:
        r = parse_integer(v, UINT64_MAX, &u);
        if (r != 0) {
            cli_fail("%s: %s: not a whole number from 0 to 18446744073709551615: %s", cmd, opt, q);
            return CLI_EXIT_BAD_INPUT;
        }
        o->seed = u;
        return CLI_EXIT_OK;
    case CLI_OPT_SAVE_POINTS: o->save_points = v; return CLI_EXIT_OK;
    case CLI_OPT_THREADS:
        r = parse_integer(v, 256, &u);
        if (r != 0 || u == 0) {
            cli_fail("%s: %s: not a whole number from 1 to 256: %s", cmd, opt, q);
            return CLI_EXIT_BAD_INPUT;
        }
        o->threads = (int32_t)u;
        return CLI_EXIT_OK;
    default: return CLI_EXIT_OK;
    }
}

int cli_parse_options(const cliCommand *c, int argc, char **argv, cliOptions *o)
{
    const char *cmd = c->name;
    if (c->needs != 0 && o->structure == NULL) {
        o->structure = cli_structure_default(c->needs);
        if (o->structure == NULL) { // a table without a row for this command
            cli_fail("%s: no structure in this build supports %s", cmd, cli_query_name(c->needs));
            return CLI_EXIT_BAD_INPUT;
        }
    }
    bool options_done = false;
    for (int a = 0; a < argc; a++) {
        const char *arg = argv[a];
        char q[200];
        nbio_quote(q, sizeof q, arg, strlen(arg));
        if (!options_done && (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)) {
            c->help();
            return CLI_EXIT_OK;
        }
        if (!options_done && strcmp(arg, "--") == 0) {
            options_done = true;
            continue;
        }
        if (options_done || arg[0] != '-' || strcmp(arg, "-") == 0) {
            if (o->input != NULL && (c->options & CLI_OPT_INPUT2) && o->input2 == NULL) {
                o->input2 = arg;
                continue;
            }
            if (!(c->options & CLI_OPT_INPUT) || o->input != NULL) {
                cli_fail("%s: unexpected argument %s (see %s %s --help)", cmd, q, cli_program, cmd);
                return CLI_EXIT_BAD_INPUT;
            }
            o->input = arg;
            continue;
        }
        const char *eq = strchr(arg, '=');
        size_t name_len = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
        size_t t = 0;
        while (t < OPTION_COUNT && !(strlen(option_table[t].name) == name_len &&
                                     memcmp(option_table[t].name, arg, name_len) == 0 &&
                                     (option_table[t].bit & c->options)))
            t++;
        if (t == OPTION_COUNT) {
            char nq[200];
            nbio_quote(nq, sizeof nq, arg, name_len);
            cli_fail("%s: unknown option %s (see %s %s --help)", cmd, nq, cli_program, cmd);
            return CLI_EXIT_BAD_INPUT;
        }
        const char *name = option_table[t].name;
        unsigned bit = option_table[t].bit;
        if (o->given & bit) {
            cli_fail("%s: %s given twice", cmd, name);
            return CLI_EXIT_BAD_INPUT;
        }
        o->given |= bit;
        if (!option_table[t].has_value) {
            if (eq != NULL) {
                cli_fail("%s: %s takes no value", cmd, name);
                return CLI_EXIT_BAD_INPUT;
            }
            continue;
        }
        const char *value = eq != NULL ? eq + 1 : NULL;
        if (value == NULL) {
            if (a + 1 == argc) {
                cli_fail("%s: %s needs a value", cmd, name);
                return CLI_EXIT_BAD_INPUT;
            }
            value = argv[++a];
        }
        int r = parse_value(c, bit, name, value, o);
        if (r != CLI_EXIT_OK) return r;
    }
    if ((c->options & CLI_OPT_INPUT) && o->input == NULL) {
        cli_fail("%s: missing %s (see %s %s --help)", cmd,
                 (c->options & CLI_OPT_INPUT2) ? "A and B" : "INPUT", cli_program, cmd);
        return CLI_EXIT_BAD_INPUT;
    }
    if ((c->options & CLI_OPT_INPUT2) && o->input2 == NULL) {
        cli_fail("%s: missing B (see %s %s --help)", cmd, cli_program, cmd);
        return CLI_EXIT_BAD_INPUT;
    }
    return -1;
}

int cli_require(const cliCommand *cmd, const cliOptions *o, unsigned bits)
{
    for (size_t t = 0; t < OPTION_COUNT; t++) {
        if (!(option_table[t].bit & bits) || (o->given & option_table[t].bit)) continue;
        const char *name =
            option_table[t].missing != NULL ? option_table[t].missing : option_table[t].name;
        cli_fail("%s: missing %s (see %s %s --help)", cmd->name, name, cli_program, cmd->name);
        return CLI_EXIT_BAD_INPUT;
    }
    return CLI_EXIT_OK;
}

void cli_print_usage(const cliCommand *cmd, const char *args)
{
    enum { WIDTH = 80 };
    int indent = printf("usage: %s %s ", cli_program, cmd->name);
    int column = indent + printf("%s", args);
    for (size_t t = 0; t < OPTION_COUNT; t++) {
        const char *part = option_table[t].usage;
        if (part == NULL || !(option_table[t].bit & cmd->options)) continue;
        int len = (int)strlen(part);
        if (column + 1 + len > WIDTH) {
            printf("\n%*s%s", indent, "", part);
            column = indent + len;
        } else {
            column += printf(" %s", part);
        }
    }
    fputs("\n\n", stdout);
}

void cli_print_option_help(unsigned bits)
{
    for (size_t t = 0; t < OPTION_COUNT; t++)
        if ((option_table[t].bit & bits) && option_table[t].help != NULL)
            fputs(option_table[t].help, stdout);
}

void cli_print_input_help(void)
{
    fputs("INPUT is a CSV file (x,y or x,y,z a line), raw little-endian float64 (.f64,\n"
          "with --dim) or NumPy .npy; \"-\" reads CSV from standard input.\n",
          stdout);
}

void cli_print_output_help(void)
{
    fputs("  -o FILE           write the rows to FILE instead of standard output, in the\n"
          "                    format its extension names: .csv (the same text), .npy\n"
          "                    (int32 indices; with a distance, a structured array with a\n"
          "                    float64 field), .f64 (every value a little-endian double) or\n"
          "                    .i64 (every value an int64; no distances)\n",
          stdout);
}
