// SPDX-License-Identifier: MIT
// nearby-mpi: all pairs within a radius over MPI (include/nearby/mpi.h).
//
//   mpirun -np P nearby-mpi pairs INPUT --radius R (--count | -o DIR) [--dim 2|3]
//                                  [--format f64|npy] [--period PX,PY[,PZ]]
//
// Each rank reads only its own rows of a .f64 or .npy file: every rank reads the header (a
// .npy's) and then its byte range with pread, rows [N * rank / P, N * (rank + 1) / P); a
// point's global id is its row. The library then decomposes space into one brick per rank,
// migrates the points and finds every pair once, on one rank. `--count` prints the total on
// rank 0; `-o DIR` writes DIR/pairs.RANK.csv, one sorted "i,j" file per rank. One of the two
// is required: the pairs are never gathered on one rank.
//
// Messages and exit statuses are nearby's (tools/cli.c, docs/cli.md): 2 for bad input or
// usage, 1 for the machine (memory, output); one line on standard error, printed once, by
// rank 0. Every rank returns the same status: each step that can fail on some ranks only (a
// NaN in one rank's rows) ends with an agreement (agree below) before the next collective
// call, so no rank is left waiting in one.
#define _POSIX_C_SOURCE 200809L // pread, fstat, dup, dup2, mkdir
#include <nearby/mpi.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"

static int run(void);
static void help(void);

static const cliCommand cmd_pairs = {
    .name = "pairs",
    .brief = "INPUT --radius R (--count | -o DIR)",
    .summary = "all pairs at distance <= R, found once on one rank",
    .options = CLI_OPT_INPUT | CLI_OPT_RADIUS | CLI_OPT_COUNT | CLI_OPT_OUTPUT | CLI_OPT_DIM |
               CLI_OPT_FORMAT | CLI_OPT_PERIOD,
    .needs = 0,
    .run = NULL, // main runs it: parse on every rank, then run()
    .help = help,
};

static void help(void)
{
    fputs("usage: mpirun -np P nearby-mpi pairs INPUT --radius R (--count | -o DIR)\n"
          "                                 [--dim 2|3] [--format f64|npy] [--period PX,PY[,PZ]]\n"
          "\n"
          "Finds every pair of points at distance <= R over P MPI ranks, each pair once, on\n"
          "one rank. Each rank reads only its own rows of INPUT; a point's id is its row\n"
          "(0-based). At least one of --count and -o is required: the pairs are never\n"
          "gathered on one rank.\n"
          "\n",
          stdout);
    cli_print_option_help(CLI_OPT_RADIUS);
    fputs("  --count           print the number of pairs (rank 0, one line)\n"
          "  -o DIR            write DIR/pairs.RANK.csv on every rank: that rank's pairs,\n"
          "                    \"i,j\" a line, i < j, sorted by i then j; DIR is created if\n"
          "                    missing. `sort -t, -k1,1n -k2,2n DIR/pairs.*.csv` is what\n"
          "                    `nearby pairs INPUT --radius R` prints\n",
          stdout);
    cli_print_option_help(CLI_OPT_DIM | CLI_OPT_PERIOD);
    fputs("  --format FMT      f64 or npy; default: from the extension\n"
          "\n"
          "INPUT is raw little-endian float64 (.f64, with --dim) or NumPy .npy (float64 or\n"
          "float32, shape (N, 2) or (N, 3)); CSV and standard input are not read (no rank\n"
          "reads the whole file).\n"
          "Exit status: 0 success, 1 out of memory or output error, 2 bad input or usage;\n"
          "the same on every rank.\n",
          stdout);
}

// ---------------------------------------------------------------------------------------------
// Agreement: one message, one status, on every rank

typedef struct Rank {
    MPI_Comm comm;
    int rank, size;
    char msg[512]; ///< this rank's problem, when it has one (without "nearby-mpi: ")
} Rank;

// Records this rank's problem; returns `code`.
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
fail(Rank *r, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    return code;
}

// Collective: every rank passes its status (CLI_EXIT_OK or the exit status of its problem, in
// r->msg). Returns the status of the lowest rank that failed, on every rank, after rank 0 has
// printed that rank's message; CLI_EXIT_OK when none failed. The lowest rank holds the
// earliest rows, so a bad point is reported as `nearby` would report it: the first in the file.
static int agree(Rank *r, int code)
{
    int key = code != CLI_EXIT_OK ? r->rank : r->size, first = r->size;
    MPI_Allreduce(&key, &first, 1, MPI_INT, MPI_MIN, r->comm);
    if (first == r->size) return CLI_EXIT_OK;
    struct {
        int code;
        char msg[sizeof r->msg];
    } what;
    memset(&what, 0, sizeof what);
    if (r->rank == first) {
        what.code = code;
        memcpy(what.msg, r->msg, sizeof what.msg);
        what.msg[sizeof what.msg - 1] = 0;
    }
    MPI_Bcast(&what, (int)sizeof what, MPI_BYTE, first, r->comm);
    if (r->rank == 0) cli_fail("%s", what.msg);
    return what.code;
}

// Collective, for problems every rank has met and rank 0 has already reported (options: all
// ranks parse the same words): the largest status, on every rank.
static int agree_reported(Rank *r, int code)
{
    int worst = code;
    MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, r->comm);
    return worst;
}

// ---------------------------------------------------------------------------------------------
// Reading this rank's rows

// Reads `len` bytes at `offset`; 0 on success, else an errno (0 would be end of file: EIO).
static int read_at(int fd, void *buf, size_t len, uint64_t offset)
{
    unsigned char *p = buf;
    while (len > 0) {
        const size_t chunk = len < ((size_t)1 << 30) ? len : ((size_t)1 << 30);
        const ssize_t got = pread(fd, p, chunk, (off_t)offset);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return errno != 0 ? errno : EIO;
        if (got == 0) return -1; // the file shrank under us
        p += got;
        len -= (size_t)got;
        offset += (uint64_t)got;
    }
    return 0;
}

// This rank's rows of the input: coords (n points of dim doubles) with their first row.
typedef struct Slice {
    nbioPoints points;
    int64_t first; ///< global id (row) of point 0
    int64_t total; ///< rows in the file
} Slice;

// Reads this rank's rows of o->input into *s. Returns CLI_EXIT_OK or an exit status with the
// problem in r->msg (nothing to free).
static int read_slice(Rank *r, const cliOptions *o, const char *name, nbioFormat format, Slice *s)
{
    memset(s, 0, sizeof *s);
    errno = 0;
    const int fd = open(o->input, O_RDONLY);
    if (fd < 0) return fail(r, CLI_EXIT_BAD_INPUT, "%s: cannot open: %s", name, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        const int e = errno;
        close(fd);
        return fail(r, CLI_EXIT_BAD_INPUT, "%s: cannot read: %s", name, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return fail(r, CLI_EXIT_BAD_INPUT, "%s: cannot read: %s", name, strerror(EISDIR));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return fail(r, CLI_EXIT_BAD_INPUT,
                    "%s: not a regular file (each rank reads its own "
                    "byte range of it)",
                    name);
    }
    const uint64_t file_size = (uint64_t)st.st_size;
    nbioLayout at;
    nbioError err = {.line = 0, .point = -1, .text = ""};
    nbioResult res;
    if (format == NBIO_FORMAT_NPY) {
        // The header: every rank reads it (at most the first MiB; numpy writes a few dozen
        // bytes) and parses it, so no rank waits on another for it.
        const size_t head_size = file_size < ((uint64_t)1 << 20) ? (size_t)file_size : 1 << 20;
        char *head = malloc(head_size + 1);
        if (head == NULL) {
            close(fd);
            return fail(r, CLI_EXIT_RUNTIME,
                        "%s: NB_ERR_OUT_OF_MEMORY: out of memory reading "
                        "the input",
                        name);
        }
        const int e = read_at(fd, head, head_size, 0);
        if (e != 0) {
            free(head);
            close(fd);
            return fail(r, CLI_EXIT_BAD_INPUT, "%s: cannot read: %s", name,
                        e > 0 ? strerror(e) : "the file changed while read");
        }
        head[head_size] = 0;
        res = nbio_layout_npy(head, head_size, file_size, o->dim, &at, &err);
        free(head);
    } else {
        res = nbio_layout_f64(file_size, o->dim, &at, &err);
    }
    if (res != NBIO_OK) {
        close(fd);
        return fail(r, CLI_EXIT_BAD_INPUT, "%s: %s", name, err.text);
    }
    // Rows [N * rank / P, N * (rank + 1) / P): N < 2^31 and P < 2^31, so no overflow.
    s->total = at.count;
    s->first = at.count * r->rank / r->size;
    const int64_t end = at.count * (r->rank + 1) / r->size;
    const int64_t rows = end - s->first;
    const uint64_t row_bytes = (uint64_t)at.dim * (uint64_t)at.item_size;
    const size_t bytes = (size_t)((uint64_t)rows * row_bytes);
    unsigned char *raw = malloc(bytes > 0 ? bytes : 1);
    if (raw == NULL) {
        close(fd);
        return fail(r, CLI_EXIT_RUNTIME,
                    "%s: NB_ERR_OUT_OF_MEMORY: out of memory reading the "
                    "input",
                    name);
    }
    const int e = read_at(fd, raw, bytes, at.data_at + (uint64_t)s->first * row_bytes);
    close(fd);
    if (e != 0) {
        free(raw);
        return fail(r, CLI_EXIT_BAD_INPUT, "%s: cannot read: %s", name,
                    e > 0 ? strerror(e) : "the file changed while read");
    }
    // Decoded and checked as `nearby` checks the whole file: NaN and infinity are refused.
    res = nbio_decode_points(raw, rows, at.dim, at.item_size, at.big_endian, &s->points, &err);
    free(raw);
    if (res == NBIO_NO_MEMORY)
        return fail(r, CLI_EXIT_RUNTIME,
                    "%s: NB_ERR_OUT_OF_MEMORY: out of memory reading the "
                    "input",
                    name);
    if (res != NBIO_OK)
        return fail(r, CLI_EXIT_BAD_INPUT, "%s: point %lld: %s", name,
                    (long long)(s->first + err.point), err.text);
    s->points.dim = at.dim;
    return CLI_EXIT_OK;
}

// --period against this rank's rows, with `nearby`'s checks and messages (cli.c).
static int check_period(Rank *r, const cliOptions *o, const char *name, const Slice *s)
{
    static const char axis[3] = {'x', 'y', 'z'};
    const int32_t dim = s->points.dim;
    if (o->period_count != dim)
        return fail(r, CLI_EXIT_BAD_INPUT,
                    "pairs: --period: expected %d values (the points in %s are %dD), found %d",
                    (int)dim, name, (int)dim, (int)o->period_count);
    for (int32_t a = 0; a < dim; a++) {
        const double p = o->period[a];
        if (p > 0.0 && o->radius > 0.5 * p)
            return fail(r, CLI_EXIT_BAD_INPUT,
                        "pairs: --radius %s: NB_ERR_OUT_OF_RANGE: more than half the %c period "
                        "%.17g: the minimum image answers radii up to P / 2",
                        o->radius_text, axis[a], p);
        for (int32_t i = 0; i < s->points.count && p > 0.0; i++) {
            const double x = s->points.coords[(size_t)i * (size_t)dim + (size_t)a];
            if (!(x >= 0.0 && x < p))
                return fail(r, CLI_EXIT_BAD_INPUT,
                            "%s: point %lld: NB_ERR_OUT_OF_RANGE: %c = %.17g is outside the "
                            "periodic box [0, %.17g)",
                            name, (long long)(s->first + i), axis[a], x, p);
        }
    }
    return CLI_EXIT_OK;
}

// ---------------------------------------------------------------------------------------------
// Writing this rank's pairs

// Sorts keys (i << 32 | j, both below 2^31) ascending: a least-significant-digit radix sort,
// 16 bits a pass, skipping the passes in which every key has the same digit. `tmp` holds n.
static void sort_keys(uint64_t *keys, uint64_t *tmp, size_t n)
{
    static size_t count[1 << 16];
    for (int shift = 0; shift < 64; shift += 16) {
        memset(count, 0, sizeof count);
        for (size_t k = 0; k < n; k++) count[(keys[k] >> shift) & 0xffffu]++;
        if (n == 0 || count[(keys[0] >> shift) & 0xffffu] == n) continue;
        size_t sum = 0;
        for (size_t d = 0; d < (1u << 16); d++) {
            const size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t k = 0; k < n; k++) tmp[count[(keys[k] >> shift) & 0xffffu]++] = keys[k];
        memcpy(keys, tmp, n * sizeof *keys);
    }
}

// Writes this rank's pairs, sorted, to `f` (path in messages). CLI_EXIT_OK or a status.
static int write_pairs(Rank *r, nbMpi *m, const char *name, const char *path, FILE *f)
{
    uint64_t local = 0, global = 0;
    nbStatus st = nb_mpi_count_pairs(m, &local, &global);
    if (st != NB_OK)
        return fail(r, cli_exit_for_status(st), "%s: %s: counting pairs: %s", name,
                    nb_status_str(st), nb_status_message(st));
    const size_t n = (size_t)local;
    nbMpiPair *pairs = malloc((n > 0 ? n : 1) * sizeof *pairs);
    uint64_t *keys = malloc((n > 0 ? n : 1) * sizeof *keys);
    uint64_t *tmp = malloc((n > 0 ? n : 1) * sizeof *tmp);
    int code = CLI_EXIT_OK;
    size_t found = 0;
    if (pairs == NULL || keys == NULL || tmp == NULL) {
        code = fail(r, CLI_EXIT_RUNTIME,
                    "%s: NB_ERR_OUT_OF_MEMORY: out of memory storing the "
                    "pairs",
                    name);
    } else if ((st = nb_mpi_pairs(m, pairs, n, &found)) != NB_OK || found != n) {
        if (st == NB_OK) st = NB_ERR_INTERNAL; // the count and the pairs disagree
        code = fail(r, cli_exit_for_status(st), "%s: %s: finding pairs: %s", name,
                    nb_status_str(st), nb_status_message(st));
    } else {
        // Check the library's answer before trusting it as sort keys.
        for (size_t k = 0; k < n && code == CLI_EXIT_OK; k++) {
            if (!(pairs[k].i >= 0 && pairs[k].i < pairs[k].j && pairs[k].j < INT32_MAX))
                code = fail(r, CLI_EXIT_RUNTIME, "%s: NB_ERR_INTERNAL: finding pairs: %s", name,
                            nb_status_message(NB_ERR_INTERNAL));
            keys[k] = (uint64_t)pairs[k].i << 32 | (uint64_t)pairs[k].j;
        }
    }
    free(pairs);
    if (code == CLI_EXIT_OK) {
        sort_keys(keys, tmp, n);
        static char buf[1 << 20];
        nbioWriter w;
        nbio_writer_init(&w, f, buf, sizeof buf);
        for (size_t k = 0; k < n; k++) {
            nbio_write_i64(&w, (int64_t)(keys[k] >> 32));
            nbio_write_char(&w, ',');
            nbio_write_i64(&w, (int64_t)(keys[k] & 0xffffffffu));
            nbio_write_char(&w, '\n');
        }
        if (!nbio_writer_finish(&w))
            code = fail(r, CLI_EXIT_RUNTIME, "%s: error writing the output", path);
    }
    free(keys);
    free(tmp);
    return code;
}

// ---------------------------------------------------------------------------------------------
// The command

static Rank the_rank;
static cliOptions the_options;
static char the_name[256];    // the input's name in messages
static nbioFormat the_format; // f64 or npy

// Parses the words after "pairs" into the_options: -1 to go on, else an exit status (after
// the help, or a message). Every rank parses the same words; main silences all but rank 0.
static int parse(int argc, char **argv)
{
    cliOptions *o = &the_options;
    int code = cli_parse_options(&cmd_pairs, argc, argv, o);
    if (code >= 0) return code;
    if ((code = cli_require(&cmd_pairs, o, CLI_OPT_RADIUS)) != CLI_EXIT_OK) return code;
    if (!(o->given & (CLI_OPT_COUNT | CLI_OPT_OUTPUT))) {
        cli_fail("pairs: missing --count or -o DIR (see %s pairs --help)", cli_program);
        return CLI_EXIT_BAD_INPUT;
    }
    if (strcmp(o->input, "-") == 0) {
        cli_fail("pairs: standard input is not read: each rank reads its own rows of a .f64 or "
                 ".npy file");
        return CLI_EXIT_BAD_INPUT;
    }
    cli_display_name(the_name, sizeof the_name, o->input);
    the_format = o->format != NBIO_FORMAT_AUTO ? o->format : nbio_format_for_path(o->input);
    if (the_format == NBIO_FORMAT_CSV) {
        cli_fail("%s: CSV is not read: each rank reads its own rows of a .f64 or .npy file "
                 "(convert it, or name its format with --format f64|npy)",
                 the_name);
        return CLI_EXIT_BAD_INPUT;
    }
    return -1;
}

// The work, on every rank, after parse: returns the exit status, the same on every rank.
static int run(void)
{
    Rank *r = &the_rank;
    const cliOptions o = the_options;
    const char *name = the_name;
    const nbioFormat format = the_format;
    int code;

    // -o DIR: made by rank 0, then each rank creates its file before any work, so a bad path
    // fails fast; on a later failure the files are removed again.
    char path[4096] = "";
    FILE *out = NULL;
    if (o.given & CLI_OPT_OUTPUT) {
        code = CLI_EXIT_OK;
        if (r->rank == 0 && mkdir(o.output, 0777) != 0 && errno != EEXIST)
            code = fail(r, CLI_EXIT_BAD_INPUT, "pairs: -o %s: cannot create the directory: %s",
                        o.output, strerror(errno));
        if ((code = agree(r, code)) != CLI_EXIT_OK) return code;
        snprintf(path, sizeof path, "%s/pairs.%d.csv", o.output, r->rank);
        errno = 0;
        out = fopen(path, "wb");
        if (out == NULL) {
            char shown[4096];
            cli_display_name(shown, sizeof shown, path);
            code = fail(r, CLI_EXIT_BAD_INPUT, "pairs: -o: %s: cannot create: %s", shown,
                        errno != 0 ? strerror(errno) : "unknown error");
        }
        if ((code = agree(r, code)) != CLI_EXIT_OK) {
            if (out != NULL) fclose(out), remove(path);
            return code;
        }
    }

    Slice s;
    code = read_slice(r, &o, name, format, &s);
    if (code == CLI_EXIT_OK && (o.given & CLI_OPT_PERIOD)) code = check_period(r, &o, name, &s);
    if ((code = agree(r, code)) != CLI_EXIT_OK) {
        nbio_points_free(&s.points);
        if (out != NULL) fclose(out), remove(path);
        return code;
    }

    const size_t n = (size_t)s.points.count;
    int64_t *ids = malloc((n > 0 ? n : 1) * sizeof *ids);
    if (ids == NULL)
        code =
            fail(r, CLI_EXIT_RUNTIME, "%s: NB_ERR_OUT_OF_MEMORY: out of memory for the ids", name);
    for (size_t k = 0; ids != NULL && k < n; k++) ids[k] = s.first + (int64_t)k;
    nbMpi *m = NULL;
    if ((code = agree(r, code)) == CLI_EXIT_OK) {
        nbMpiDesc desc;
        memset(&desc, 0, sizeof desc);
        desc.comm = r->comm;
        desc.dim = s.points.dim;
        desc.radius = o.radius;
        for (int a = 0; a < 3; a++) desc.period[a] = o.period[a];
        // Collective, and the library agrees on its status: the same on every rank.
        const nbStatus st = nb_mpi_create(&desc, s.points.coords, ids, n, &m);
        if (st != NB_OK)
            code = fail(r, cli_exit_for_status(st), "%s: %s: building the distributed index: %s",
                        name, nb_status_str(st), nb_status_message(st));
    }
    free(ids);
    nbio_points_free(&s.points);
    code = agree(r, code);

    if (code == CLI_EXIT_OK && (o.given & CLI_OPT_COUNT)) {
        uint64_t local = 0, global = 0;
        const nbStatus st = nb_mpi_count_pairs(m, &local, &global);
        if (st != NB_OK)
            code = fail(r, cli_exit_for_status(st), "%s: %s: counting pairs: %s", name,
                        nb_status_str(st), nb_status_message(st));
        if ((code = agree(r, code)) == CLI_EXIT_OK && r->rank == 0) {
            printf("%llu\n", (unsigned long long)global);
            code = cli_finish_stdout();
        }
        code = agree_reported(r, code);
    }
    if (code == CLI_EXIT_OK && out != NULL) {
        code = write_pairs(r, m, name, path, out);
        if (fclose(out) != 0 && code == CLI_EXIT_OK)
            code = fail(r, CLI_EXIT_RUNTIME, "%s: error writing the output", path);
        out = NULL;
        code = agree(r, code);
    }
    if (out != NULL) fclose(out);
    if (code != CLI_EXIT_OK && path[0] != 0) remove(path);
    nb_mpi_destroy(m);
    return code;
}

// Runs `fn` with this rank's standard output and error sent to /dev/null unless it is rank 0:
// the words every rank parses are the same, so rank 0 alone reports on them.
static int on_rank0_only(const Rank *r, int (*fn)(int, char **), int argc, char **argv)
{
    if (r->rank == 0) return fn(argc, argv);
    fflush(stdout);
    fflush(stderr);
    const int null = open("/dev/null", O_WRONLY);
    const int keep_out = dup(1), keep_err = dup(2);
    if (null >= 0) {
        dup2(null, 1);
        dup2(null, 2);
    }
    const int code = fn(argc, argv);
    fflush(stdout);
    fflush(stderr);
    if (keep_out >= 0) dup2(keep_out, 1), close(keep_out);
    if (keep_err >= 0) dup2(keep_err, 2), close(keep_err);
    if (null >= 0) close(null);
    return code;
}

// `nearby-mpi --help`, `--version` and unknown commands: -1 for "pairs" (go on), else a status.
static int top_level(int argc, char **argv)
{
    if (argc < 2) {
        cli_fail("missing COMMAND (see %s --help)", cli_program);
        return CLI_EXIT_BAD_INPUT;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 ||
        (strcmp(name, "help") == 0 && argc == 2)) {
        fputs("usage: mpirun -np P nearby-mpi COMMAND INPUT [options]\n"
              "\n"
              "Exact neighbour queries on 2D and 3D points over MPI ranks.\n"
              "\n"
              "commands:\n",
              stdout);
        printf("  pairs %-31s %s\n", cmd_pairs.brief, cmd_pairs.summary);
        printf("  %-37s %s\n", "help pairs", "that command's options");
        printf("  %-37s %s\n", "--version", "print the version");
        return cli_finish_stdout();
    }
    if (strcmp(name, "help") == 0 && argc == 3 && strcmp(argv[2], "pairs") == 0) {
        help();
        return cli_finish_stdout();
    }
    if (strcmp(name, "--version") == 0 && argc == 2) {
        const uint32_t v = nb_version();
        printf("nearby-mpi %u.%u.%u\n", (unsigned)(v >> 16), (unsigned)((v >> 8) & 0xffu),
               (unsigned)(v & 0xffu));
        return cli_finish_stdout();
    }
    if (strcmp(name, "pairs") != 0) {
        char q[200];
        nbio_quote(q, sizeof q, name, strlen(name));
        cli_fail("unknown command %s (see %s --help)", q, cli_program);
        return CLI_EXIT_BAD_INPUT;
    }
    return -1;
}

static int parse_pairs(int argc, char **argv)
{
    int code = parse(argc - 2, argv + 2);
    if (code == CLI_EXIT_OK) code = cli_finish_stdout(); // after --help
    return code;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    Rank *r = &the_rank;
    r->comm = MPI_COMM_WORLD;
    MPI_Comm_rank(r->comm, &r->rank);
    MPI_Comm_size(r->comm, &r->size);
    cli_program = "nearby-mpi";
    int code = agree_reported(r, on_rank0_only(r, top_level, argc, argv));
    if (code == -1) code = agree_reported(r, on_rank0_only(r, parse_pairs, argc, argv));
    if (code == -1) code = run();
    MPI_Finalize();
    return code;
}
