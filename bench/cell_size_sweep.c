// SPDX-License-Identifier: MIT
// The dense grid's cost against its cell size: for each ratio c = cell_size / r, one grid with
// nbGridDesc.cell_size = c * r, and per frame nb_grid_build then nb_grid_pairs into a
// preallocated buffer, on the same points at the same radius. Practitioners report the minimum
// at cell = r, with the cost rising steeply on both sides: smaller cells mean k = ceil(r / cell)
// rings, so (2k + 1)^2 cells to walk per cell; larger cells mean more candidates per point to
// test. bench/plot_cell_size.py draws the CSV this prints as docs/cell_size.svg.
//
//   cell_size_sweep DATA.f64 RADIUS RUNS MACHINE COMMIT [RATIO|default ...]
//       CSV with a header on stdout: one row per ratio, min and median of RUNS frames.
//       "default" is a grid with cell_size 0 (the edge derived from r, the library's default).
//       The frames are taken round-robin (ratio 1, 2, ..., then again), so a slow spell of a
//       shared machine lands on every ratio alike rather than on one. Every ratio must find the
//       same pairs (count and checksum): exit status 1 if not.
//   cell_size_sweep --callgrind DATA.f64 RADIUS RATIO
//       a first frame, then one steady-state frame inside nbb_sweep_frame, for
//       valgrind --tool=callgrind --collect-atstart=no --toggle-collect=nbb_sweep_frame.
//
// Rings: a query of radius r walks k = ceil(reach / cell) rings of cells, where the reach is r
// widened by a rounding margin (about 2^-40 r; src/cell.c). So a cell of exactly r / k needs
// k + 1 rings, not k: cell_size = r exactly walks 5 x 5 cells where the default walks 3 x 3.
// The CSV's `rings` column is that k.
#include "bench_common.h"

#include <nearby/grid.h>

#include <math.h>

#define NBS_MAX_RATIOS 32

// 0 stands for "default": nbGridDesc.cell_size = 0, the edge nb_grid_build derives from r (r
// widened by its rounding margin, so that one ring of cells covers r).
// 0.3 is there to tell the two costs of 0.25 apart: 0.25 walks 5 rings, and only its occupied
// cells are numbered (the box would need more than 4 cells a point: ranked cells, the CSV's
// `hashed` column); 0.3 walks 4 rings of dense cells.
static const double nbs_default_ratios[] = {0.25, 0.3, 0.35, 0.5, 0.7, 0.85, 1.0,
                                            0.0,  1.2, 1.5,  2.0, 3.0, 4.0};

/// The ring count nb_grid_pairs walks at radius r: a copy of src/cell.c's nbi_reach and
/// nbi_rings (r widened by its rounding margins; max_abs is the largest |coordinate|), for the
/// CSV only. It is why a cell of exactly r / k walks k + 1 rings.
static double nbs_rings(double r, double cell, double max_abs)
{
    double reach = (r + 0x1p-530) * (1.0 + 0x1p-40);
    double d = (reach + (3.0 * max_abs + 2.0 * reach) * 0x1p-52 + 0x1p-1000) / cell;
    return ceil(d * (1.0 + 0x1p-50));
}

static void check(nbStatus s, const char *what, double ratio)
{
    if (s != NB_OK) {
        fprintf(stderr, "cell_size_sweep: ratio %g: %s: %s\n", ratio, what, nb_status_str(s));
        exit(1);
    }
}

static nbGrid *make_grid(double cell_size)
{
    nbGridDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.dim = 2;
    desc.cell_size = cell_size;
    nbGrid *grid = NULL;
    check(nb_grid_create(&desc, &grid), "nb_grid_create", cell_size);
    return grid;
}

/// One frame: the full rebuild, then every pair within r. Not static and never inlined, so
/// callgrind can collect exactly this function by name.
void nbb_sweep_frame(nbGrid *grid, const nbPoints *pts, double r, nbPair *out, int64_t cap,
                     int64_t *found, int64_t *t_build, int64_t *t_pairs);

__attribute__((noinline)) void nbb_sweep_frame(nbGrid *grid, const nbPoints *pts, double r,
                                               nbPair *out, int64_t cap, int64_t *found,
                                               int64_t *t_build, int64_t *t_pairs)
{
    int64_t t0 = nbb_now_ns();
    check(nb_grid_build(grid, pts, r), "nb_grid_build", r);
    int64_t t1 = nbb_now_ns();
    check(nb_grid_pairs(grid, r, out, cap, found), "nb_grid_pairs", r);
    int64_t t2 = nbb_now_ns();
    *t_build = t1 - t0;
    *t_pairs = t2 - t1;
}

static uint64_t checksum(const nbPair *out, int64_t found)
{
    uint64_t sum = 0;
    for (int64_t k = 0; k < found; k++)
        sum += nbb_pair_hash((uint32_t)out[k].i, (uint32_t)out[k].j);
    return sum;
}

static int callgrind_main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: cell_size_sweep --callgrind DATA.f64 RADIUS RATIO\n");
        return 2;
    }
    double r = strtod(argv[3], NULL);
    double ratio = strtod(argv[4], NULL);
    double *p;
    int32_t n = nbb_load(argv[2], 2, &p);
    nbGrid *grid = make_grid(ratio * r);
    nbPoints pts = {.data = p, .count = n, .dim = 2};
    int64_t found = 0;
    check(nb_grid_build(grid, &pts, r), "nb_grid_build", ratio);
    check(nb_grid_count_pairs(grid, r, &found), "nb_grid_count_pairs", ratio);
    int64_t cap = found;
    nbPair *out = malloc((size_t)(cap ? cap : 1) * sizeof *out);
    if (out == NULL) return 1;
    int64_t tb = 0;
    int64_t tp = 0;
    nbb_sweep_frame(grid, &pts, r, out, cap, &found, &tb, &tp); // the measured frame
    printf("callgrind: N=%d r=%g ratio=%g pairs=%lld\n", n, r, ratio, (long long)found);
    nb_grid_destroy(grid);
    free(out);
    free(p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--callgrind") == 0) return callgrind_main(argc, argv);
    if (argc < 6) {
        fprintf(stderr,
                "usage: cell_size_sweep DATA.f64 RADIUS RUNS MACHINE COMMIT [RATIO|default ...]\n"
                "       cell_size_sweep --callgrind DATA.f64 RADIUS RATIO\n");
        return 2;
    }
    const double r = strtod(argv[2], NULL);
    const int runs = atoi(argv[3]);
    const char *machine = argv[4];
    const char *commit = argv[5];
    double ratios[NBS_MAX_RATIOS];
    int nr = 0;
    if (argc > 6) {
        for (int a = 6; a < argc && nr < NBS_MAX_RATIOS; a++)
            ratios[nr++] = strcmp(argv[a], "default") == 0 ? 0.0 : strtod(argv[a], NULL);
    } else {
        nr = (int)(sizeof nbs_default_ratios / sizeof nbs_default_ratios[0]);
        memcpy(ratios, nbs_default_ratios, sizeof nbs_default_ratios);
    }
    if (!(r > 0.0) || runs < 1 || runs > NBB_MAX_RUNS) {
        fprintf(stderr, "cell_size_sweep: bad radius or runs\n");
        return 2;
    }
    for (int k = 0; k < nr; k++)
        if (!(ratios[k] >= 0.0)) {
            fprintf(stderr, "cell_size_sweep: bad ratio %s\n", argv[6 + k]);
            return 2;
        }
    double *p;
    int32_t n = nbb_load(argv[1], 2, &p);
    nbPoints pts = {.data = p, .count = n, .dim = 2};
    double max_abs = 0.0;
    for (int64_t k = 0; k < 2 * (int64_t)n; k++)
        max_abs = fabs(p[k]) > max_abs ? fabs(p[k]) : max_abs;

    // One grid per ratio, each given its untimed first frame (the one that allocates); the
    // pair buffer is sized from ratio 1's count, and every ratio must find exactly that many.
    nbGrid *grids[NBS_MAX_RATIOS];
    int64_t expect = -1;
    for (int k = 0; k < nr; k++) {
        grids[k] = make_grid(ratios[k] * r);
        int64_t c = 0;
        check(nb_grid_build(grids[k], &pts, r), "nb_grid_build", ratios[k]);
        check(nb_grid_count_pairs(grids[k], r, &c), "nb_grid_count_pairs", ratios[k]);
        if (expect < 0) expect = c;
        if (c != expect) {
            fprintf(stderr, "cell_size_sweep: MISMATCH: ratio %g counts %lld pairs, not %lld\n",
                    ratios[k], (long long)c, (long long)expect);
            return 1;
        }
    }
    nbPair *out = malloc((size_t)(expect ? expect : 1) * sizeof *out);
    if (out == NULL) return 1;

    static int64_t t_build[NBS_MAX_RATIOS][NBB_MAX_RUNS];
    static int64_t t_pairs[NBS_MAX_RATIOS][NBB_MAX_RUNS];
    static int64_t t_frame[NBS_MAX_RATIOS][NBB_MAX_RUNS];
    uint64_t sums[NBS_MAX_RATIOS];
    int status = 0;
    for (int run = -1; run < runs; run++) { // run -1: a warm-up round, not recorded
        for (int k = 0; k < nr; k++) {
            int64_t found = 0;
            int64_t tb = 0;
            int64_t tp = 0;
            nbb_sweep_frame(grids[k], &pts, r, out, expect, &found, &tb, &tp);
            if (run < 0) {
                sums[k] = checksum(out, found);
                if (found != expect || sums[k] != sums[0]) {
                    fprintf(stderr, "cell_size_sweep: MISMATCH at ratio %g: %lld pairs\n",
                            ratios[k], (long long)found);
                    status = 1;
                }
                continue;
            }
            t_build[k][run] = tb;
            t_pairs[k][run] = tp;
            t_frame[k][run] = tb + tp;
        }
    }

    printf("ratio,cell_size,n_points,radius,runs,build_min_ns,build_median_ns,pairs_min_ns,"
           "pairs_median_ns,frame_min_ns,frame_median_ns,pairs,checksum,rings,cells,hashed,"
           "bytes,label,machine,compiler,flags,commit\n");
    for (int k = 0; k < nr; k++) {
        int64_t bmin;
        int64_t bmed;
        int64_t pmin;
        int64_t pmed;
        int64_t fmin;
        int64_t fmed;
        nbb_stats(t_build[k], runs, &bmin, &bmed);
        nbb_stats(t_pairs[k], runs, &pmin, &pmed);
        nbb_stats(t_frame[k], runs, &fmin, &fmed);
        nbGridInfo info;
        memset(&info, 0, sizeof info);
        check(nb_grid_info(grids[k], &info), "nb_grid_info", ratios[k]);
        double rings = nbs_rings(r, info.cell_size, max_abs);
        printf("%.17g,%.17g,%d,%g,%d,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%016llx,%d,%lld,%d,%zu,%s,"
               "%s,%s,%s,%s\n",
               ratios[k] > 0.0 ? ratios[k] : info.cell_size / r, info.cell_size, n, r, runs,
               (long long)bmin, (long long)bmed, (long long)pmin, (long long)pmed, (long long)fmin,
               (long long)fmed, (long long)expect, (unsigned long long)sums[k], (int)rings,
               (long long)info.cells, (int)info.hashed, info.bytes,
               ratios[k] > 0.0 ? "" : "default", machine, NBB_COMPILER, NBB_FLAGS, commit);
        nb_grid_destroy(grids[k]);
    }
    free(out);
    free(p);
    return status;
}
