// SPDX-License-Identifier: MIT
// Cell hash functions compared in the table the spatial hash uses: our per-coordinate mixing
// hash (nbi_cell_hash, home = its top `bits` bits) against the prime-XOR hash common in game
// code, (cx*73856093 ^ cy*19349663 ^ cz*83492791) & (slots - 1), ported to 64-bit arithmetic on
// int64 cells (unsigned, so the wrap-around is defined; the low bits are the same as int32's).
//
// The table is a copy of the cell table's scheme (src/cell_table.h), parameterised by the hash:
// 2^bits slots of {int64 key[3], int32 value}, linear probing, sized like nbi_ctab_bits_for (at
// most half full). Every data set is ~100k float64 points turned into cells of edge r = 1, the
// query radius; one "neighbourhood lookup" finds the 3x3 (2D) or 3x3x3 (3D) cells around a
// point's cell, as a radius query does. Reported per (hash, data set):
//
//   cells, slots      occupied cells, table slots
//   homes             distinct home slots among the occupied cells
//   run max           longest run of consecutive occupied slots (a probe never leaves its run)
//   hit avg / max     slots inspected to find each stored cell once (1 = in its home slot)
//   empty nbrs        share of the neighbourhood's cell lookups that find no cell
//   miss avg          slots inspected by the neighbourhood lookups that miss (empty cells),
//                     counting the empty slot that ends the probe (1 = home slot empty)
//   foreign/query     key comparisons against other cells' keys in one neighbourhood lookup,
//                     averaged over points (exact)
//   ns/query          median (and minimum) wall time of one neighbourhood lookup over the runs
//   build ns/pt       median time to insert every point's cell into an empty table, per point
//
// Both tables must agree on every lookup (checked through a checksum of the values found).
//
//   build/bench/bench/bench_hash_functions [--runs N] [--n POINTS] [--only NAME]
#include "bench_common.h"
#include "cell.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef NBH_OPT
#define NBH_OPT "" // the optimisation level CMake appends to this target (-O2)
#endif

enum { HASH_MIX = 0, HASH_PXOR = 1, HASH_COUNT = 2 };
static const char *const hash_names[HASH_COUNT] = {"mix (nbi_cell_hash)", "prime-XOR"};

// ---- the probing table, parameterised by the hash ----

// Same layout as nbiCellSlot: value < 0 marks an empty slot.
typedef struct Slot {
    int64_t key[3];
    int32_t value;
    int32_t unused;
} Slot;

typedef struct Table {
    Slot *slots;
    int32_t bits;
    int32_t count;
    size_t mask;
} Table;

NBI_INLINE size_t home_of(int hash, int32_t bits, size_t mask, int64_t x, int64_t y, int64_t z)
{
    if (hash == HASH_MIX) return (size_t)(nbi_cell_hash(x, y, z) >> (64 - bits));
    const uint64_t h =
        ((uint64_t)x * 73856093u) ^ ((uint64_t)y * 19349663u) ^ ((uint64_t)z * 83492791u);
    return (size_t)h & mask;
}

static int32_t bits_for(size_t count) // nbi_ctab_bits_for
{
    int32_t bits = 4;
    while (((size_t)1 << (bits - 1)) < count) bits++;
    return bits;
}

static void table_reset(Table *t, int32_t bits)
{
    t->bits = bits;
    t->mask = ((size_t)1 << bits) - 1;
    t->count = 0;
    memset(t->slots, 0xff, ((size_t)1 << bits) * sizeof(Slot));
}

// The value of (x, y, z), inserting `value` when absent. The caller sizes the table.
NBI_INLINE int32_t table_insert(Table *t, int hash, int64_t x, int64_t y, int64_t z, int32_t value)
{
    Slot *s = t->slots;
    for (size_t h = home_of(hash, t->bits, t->mask, x, y, z);; h = (h + 1) & t->mask) {
        if (s[h].value < 0) {
            s[h].key[0] = x;
            s[h].key[1] = y;
            s[h].key[2] = z;
            s[h].value = value;
            t->count++;
            return value;
        }
        if (s[h].key[0] == x && s[h].key[1] == y && s[h].key[2] == z) return s[h].value;
    }
}

// The value of (x, y, z) or -1; *probes = slots inspected (the matching or the empty one
// included).
NBI_INLINE int32_t table_find(const Table *t, int hash, int64_t x, int64_t y, int64_t z,
                              int64_t *probes)
{
    const Slot *s = t->slots;
    int64_t n = 0;
    for (size_t h = home_of(hash, t->bits, t->mask, x, y, z);; h = (h + 1) & t->mask) {
        n++;
        if (s[h].value < 0) {
            *probes += n;
            return -1;
        }
        if (s[h].key[0] == x && s[h].key[1] == y && s[h].key[2] == z) {
            *probes += n;
            return s[h].value;
        }
    }
}

// ---- data sets: float64 points -> int64 cells (edge 1) ----

typedef struct Rng {
    uint64_t s;
} Rng;

static uint64_t rng_next(Rng *r) // splitmix64
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static double rng_unit(Rng *r) // [0, 1)
{
    return (double)(rng_next(r) >> 11) * 0x1p-53;
}

static double rng_gauss(Rng *r) // Box-Muller
{
    const double u = 1.0 - rng_unit(r), v = rng_unit(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

typedef enum Kind { UNIFORM, LATTICE, CLUSTERS, LINE } Kind;

typedef struct DataSet {
    const char *name;
    Kind kind;
    int dim;
    double spacing; // LATTICE: distance between lattice points (cells of edge 1)
    double shift;   // added to every coordinate
} DataSet;

static const DataSet sets[] = {
    {"uniform2d", UNIFORM, 2, 0, 0},
    {"lattice2d step 1", LATTICE, 2, 1, 0},
    {"lattice2d step 64", LATTICE, 2, 64, 0},
    {"lattice2d step 1024", LATTICE, 2, 1024, 0},
    {"lattice3d step 1", LATTICE, 3, 1, 0},
    {"lattice3d step 1024", LATTICE, 3, 1024, 0},
    {"clusters2d", CLUSTERS, 2, 0, 0},
    {"uniform2d +1e9", UNIFORM, 2, 0, 1e9},
    {"uniform2d -2^40", UNIFORM, 2, 0, -0x1p40},
    {"clusters2d +1e9", CLUSTERS, 2, 0, 1e9},
    {"clusters2d -2^40", CLUSTERS, 2, 0, -0x1p40},
    {"line x=y", LINE, 2, 0, 0},
    {"line x=y +1e9", LINE, 2, 0, 1e9},
    {"uniform3d", UNIFORM, 3, 0, 0},
};
enum { SET_COUNT = (int)(sizeof sets / sizeof sets[0]) };

// Writes n points (dim coordinates each) into p; returns how many (lattices round n down).
static int32_t make_points(const DataSet *ds, int32_t n, double *p, uint64_t seed)
{
    Rng r = {seed};
    const int dim = ds->dim;
    int32_t count = 0;
    if (ds->kind == UNIFORM) { // density 1 point per cell: ~63% of the cells occupied
        const double side = pow((double)n, 1.0 / dim);
        for (; count < n; count++)
            for (int d = 0; d < dim; d++) p[count * dim + d] = rng_unit(&r) * side;
    } else if (ds->kind == LATTICE) { // points at cell centres, `spacing` apart
        const int32_t k = (int32_t)floor(pow((double)n, 1.0 / dim) + 1e-9);
        const int32_t kz = dim == 3 ? k : 1;
        for (int32_t i = 0; i < k; i++)
            for (int32_t j = 0; j < k; j++)
                for (int32_t l = 0; l < kz; l++, count++) {
                    p[count * dim + 0] = i * ds->spacing + 0.5;
                    p[count * dim + 1] = j * ds->spacing + 0.5;
                    if (dim == 3) p[count * dim + 2] = l * ds->spacing + 0.5;
                }
    } else if (ds->kind == CLUSTERS) {
        // 90% in five gaussian blobs (sigma 8..40) in a 4000-wide box, 10% uniform background
        double centre[5][3], sigma[5];
        for (int b = 0; b < 5; b++) {
            for (int d = 0; d < dim; d++) centre[b][d] = 200.0 + rng_unit(&r) * 3600.0;
            sigma[b] = 8.0 * (1 + b);
        }
        for (; count < n; count++) {
            if (count % 10 == 9) {
                for (int d = 0; d < dim; d++) p[count * dim + d] = rng_unit(&r) * 4000.0;
            } else {
                const int b = (int)(rng_next(&r) % 5);
                for (int d = 0; d < dim; d++)
                    p[count * dim + d] = centre[b][d] + sigma[b] * rng_gauss(&r);
            }
        }
    } else { // LINE: x = y, t uniform over [0, n)
        for (; count < n; count++) {
            const double t = rng_unit(&r) * n;
            for (int d = 0; d < dim; d++) p[count * dim + d] = t;
        }
    }
    for (int32_t i = 0; i < count * dim; i++) p[i] += ds->shift;
    // Visit points in random order (Fisher-Yates on whole points), as an unsorted array would.
    for (int32_t i = count - 1; i > 0; i--) {
        const int32_t j = (int32_t)(rng_next(&r) % (uint64_t)(i + 1));
        for (int d = 0; d < dim; d++) {
            const double tmp = p[i * dim + d];
            p[i * dim + d] = p[j * dim + d];
            p[j * dim + d] = tmp;
        }
    }
    return count;
}

// ---- measurements ----

typedef struct Stats {
    int64_t cells, slots, homes, run_max;
    double hit_avg, miss_avg, foreign_per_query, miss_share;
    int64_t hit_max;
    double ns_median, ns_min, build_ns;
    uint64_t checksum;
} Stats;

static const void *volatile escape;
static volatile int64_t sink;

static void build(Table *t, int hash, const int64_t *cells, int32_t n, int32_t bits)
{
    table_reset(t, bits);
    for (int32_t i = 0; i < n; i++)
        table_insert(t, hash, cells[i * 3], cells[i * 3 + 1], cells[i * 3 + 2], t->count);
}

// One neighbourhood lookup per point, timed: the sum of the values found keeps it honest.
NBI_INLINE int64_t lookups(const Table *t, int hash, const int64_t *cells, int32_t n, int dim)
{
    int64_t acc = 0, probes = 0;
    const int64_t dz_lo = dim == 3 ? -1 : 0, dz_hi = dim == 3 ? 1 : 0;
    for (int32_t i = 0; i < n; i++) {
        const int64_t *c = cells + (size_t)i * 3;
        for (int64_t dx = -1; dx <= 1; dx++)
            for (int64_t dy = -1; dy <= 1; dy++)
                for (int64_t dz = dz_lo; dz <= dz_hi; dz++)
                    acc += table_find(t, hash, c[0] + dx, c[1] + dy, c[2] + dz, &probes);
    }
    return acc + probes;
}

static int64_t lookups_mix(const Table *t, const int64_t *cells, int32_t n, int dim)
{
    return lookups(t, HASH_MIX, cells, n, dim);
}

static int64_t lookups_pxor(const Table *t, const int64_t *cells, int32_t n, int dim)
{
    return lookups(t, HASH_PXOR, cells, n, dim);
}

// Exact counts for one hash, in a table already built with it.
static void count_probes(const Table *t, int hash, const int64_t *cells, int32_t n, int dim,
                         Stats *st)
{
    st->cells = t->count;
    st->slots = (int64_t)1 << t->bits;

    // Table shape: homes used, longest run of occupied slots (cyclic), hit probes per cell.
    const size_t slots = (size_t)st->slots;
    unsigned char *is_home = calloc(slots, 1);
    int64_t hit_sum = 0;
    for (size_t h = 0; h < slots; h++) {
        const Slot *s = &t->slots[h];
        if (s->value < 0) continue;
        is_home[home_of(hash, t->bits, t->mask, s->key[0], s->key[1], s->key[2])] = 1;
        int64_t p = 0;
        table_find(t, hash, s->key[0], s->key[1], s->key[2], &p);
        hit_sum += p;
        if (p > st->hit_max) st->hit_max = p;
    }
    for (size_t h = 0; h < slots; h++) st->homes += is_home[h];
    free(is_home);
    st->hit_avg = (double)hit_sum / (double)st->cells;
    size_t first_empty = 0;
    while (t->slots[first_empty].value >= 0) first_empty++; // exists: at most half full
    int64_t run = 0;
    for (size_t k = 1; k <= slots; k++) {
        const size_t h = (first_empty + k) & t->mask;
        run = t->slots[h].value >= 0 ? run + 1 : 0;
        if (run > st->run_max) st->run_max = run;
    }

    // Exact probe counts of the neighbourhood lookups.
    int64_t miss_probes = 0, misses = 0, foreign = 0, lookups_total = 0;
    uint64_t sum = 0;
    const int64_t dz_lo = dim == 3 ? -1 : 0, dz_hi = dim == 3 ? 1 : 0;
    for (int32_t i = 0; i < n; i++) {
        const int64_t *c = cells + (size_t)i * 3;
        for (int64_t dx = -1; dx <= 1; dx++)
            for (int64_t dy = -1; dy <= 1; dy++)
                for (int64_t dz = dz_lo; dz <= dz_hi; dz++) {
                    int64_t p = 0;
                    const int32_t v = table_find(t, hash, c[0] + dx, c[1] + dy, c[2] + dz, &p);
                    lookups_total++;
                    foreign += p - 1; // every inspected slot but the last held another key
                    if (v < 0) {
                        misses++;
                        miss_probes += p;
                    }
                    sum = sum * 31u + (uint64_t)(int64_t)v;
                }
    }
    st->miss_avg = misses ? (double)miss_probes / (double)misses : 0.0;
    st->miss_share = (double)misses / (double)lookups_total;
    st->foreign_per_query = (double)foreign / n;
    st->checksum = sum;
}

// Timing, both hashes interleaved run by run so that both see the same load on a shared
// machine: one warm-up round, then `runs` rounds of {build, then one neighbourhood lookup per
// point} per hash. The tables and the cells escape through a volatile pointer, so as far as the
// compiler knows the clock calls may change them: each pass runs between its two clock reads.
static void time_both(Table *t, const int64_t *cells, int32_t n, int dim, int32_t bits, int runs,
                      Stats *st)
{
    int64_t look[HASH_COUNT][NBB_MAX_RUNS], bld[HASH_COUNT][NBB_MAX_RUNS], min_ns, med_ns;
    escape = cells;
    for (int r = -1; r < runs; r++) {
        for (int h = 0; h < HASH_COUNT; h++) {
            escape = t[h].slots;
            int64_t t0 = nbb_now_ns();
            build(&t[h], h, cells, n, bits);
            int64_t t1 = nbb_now_ns();
            if (r >= 0) bld[h][r] = t1 - t0;
            t0 = nbb_now_ns();
            sink = h == HASH_MIX ? lookups_mix(&t[h], cells, n, dim)
                                 : lookups_pxor(&t[h], cells, n, dim);
            t1 = nbb_now_ns();
            if (r >= 0) look[h][r] = t1 - t0;
        }
    }
    for (int h = 0; h < HASH_COUNT; h++) {
        nbb_stats(look[h], runs, &min_ns, &med_ns);
        st[h].ns_median = (double)med_ns / n;
        st[h].ns_min = (double)min_ns / n;
        nbb_stats(bld[h], runs, &min_ns, &med_ns);
        st[h].build_ns = (double)med_ns / n;
    }
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_hash_functions [--runs N (1..%d, default 7)] [--n POINTS "
            "(default 100000)] [--only NAME]\n",
            NBB_MAX_RUNS);
    exit(2);
}

int main(int argc, char **argv)
{
    int runs = 7;
    int32_t n = 100000;
    const char *only = NULL;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--runs") == 0 && a + 1 < argc) {
            runs = atoi(argv[++a]);
        } else if (strcmp(argv[a], "--n") == 0 && a + 1 < argc) {
            n = (int32_t)atol(argv[++a]);
        } else if (strcmp(argv[a], "--only") == 0 && a + 1 < argc) {
            only = argv[++a];
        } else {
            usage();
        }
    }
    if (runs < 1 || runs > NBB_MAX_RUNS || n < 16 || n > 10000000) usage();

    double *pts = malloc((size_t)n * 3 * sizeof(double));
    int64_t *cells = malloc((size_t)n * 3 * sizeof(int64_t));
    const size_t cap = ((size_t)1 << bits_for((size_t)n)) * sizeof(Slot);
    Table t[HASH_COUNT] = {{malloc(cap), 0, 0, 0}, {malloc(cap), 0, 0, 0}};
    if (pts == NULL || cells == NULL || t[0].slots == NULL || t[1].slots == NULL) {
        fprintf(stderr, "bench_hash_functions: out of memory\n");
        return 1;
    }
    printf("# cell hash functions in a linear-probing cell table (at most half full)\n");
    printf("# %d points per set, cell edge 1 = query radius, %d timed runs; %s; %s %s (last -O "
           "wins)\n",
           n, runs, NBB_COMPILER, NBB_FLAGS, NBH_OPT);
    printf("| data set | hash | cells | slots | homes | run max | hit avg | hit max | empty nbrs | "
           "miss avg | foreign/query | ns/query med (min) | build ns/pt |\n");
    printf("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (int si = 0; si < SET_COUNT; si++) {
        const DataSet *ds = &sets[si];
        if (only != NULL && strstr(ds->name, only) == NULL) continue;
        // The seed depends on the kind and dimension only: a shifted set is the same points.
        const int32_t count =
            make_points(ds, n, pts, 0x5EED0000u + (uint64_t)ds->kind * 16u + (uint64_t)ds->dim);
        for (int32_t i = 0; i < count; i++)
            for (int d = 0; d < 3; d++)
                cells[i * 3 + d] = d < ds->dim ? (int64_t)floor(pts[i * ds->dim + d]) : 0;
        // Size like the spatial hash: the smallest table that holds the distinct cells at most
        // half full (counted with the mixing hash in a table sized for every point).
        build(&t[0], HASH_MIX, cells, count, bits_for((size_t)count));
        const int32_t bits = bits_for((size_t)t[0].count);
        Stats st[HASH_COUNT];
        memset(st, 0, sizeof st);
        time_both(t, cells, count, ds->dim, bits, runs, st);
        for (int h = 0; h < HASH_COUNT; h++) {
            count_probes(&t[h], h, cells, count, ds->dim, &st[h]);
            printf(
                "| %s | %s | %lld | %lld | %lld | %lld | %.2f | %lld | %.0f%% | %.2f | %.1f | %.0f "
                "(%.0f) | %.0f |\n",
                ds->name, hash_names[h], (long long)st[h].cells, (long long)st[h].slots,
                (long long)st[h].homes, (long long)st[h].run_max, st[h].hit_avg,
                (long long)st[h].hit_max, 100.0 * st[h].miss_share, st[h].miss_avg,
                st[h].foreign_per_query, st[h].ns_median, st[h].ns_min, st[h].build_ns);
            fflush(stdout);
        }
        if (st[HASH_MIX].checksum != st[HASH_PXOR].checksum) {
            fprintf(stderr, "bench_hash_functions: %s: the tables disagree\n", ds->name);
            return 1;
        }
    }
    free(t[0].slots);
    free(t[1].slots);
    free(cells);
    free(pts);
    return 0;
}
