// SPDX-License-Identifier: MIT
// The dense grid in a periodic box (nbGridDesc.period): build + all pairs within r by the
// minimum image, timed over RUNS frames, for bench_periodic.py, which runs scipy's
// cKDTree(boxsize=...) on the same points and compares the pairs one for one.
//
//     bench_periodic DATA.f64 DIM RADIUS PX,PY[,PZ] RUNS OUT_PAIRS.bin
//
// Prints the CSV lines of bench_common.h (peer nearby, dataset "periodic", operations
// build_pairs, build and pairs: the same frames split) and writes the last frame's pairs to
// OUT_PAIRS.bin as int32 (i, j) rows, in nearby's order (by cell), for the comparison.
#include <nearby/grid.h>

#include "alloc_count.h"
#include "bench_common.h"

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: %s DATA.f64 DIM RADIUS PX,PY[,PZ] RUNS OUT_PAIRS.bin\n", argv[0]);
        return 2;
    }
    nbbArgs a = {argv[1], atoi(argv[2]), strtod(argv[3], NULL), 0, atoi(argv[5]), "periodic"};
    double period[3] = {0, 0, 0};
    char *s = argv[4];
    for (int d = 0; d < 3 && *s != '\0'; d++) {
        period[d] = strtod(s, &s);
        if (*s == ',') s++;
    }
    if ((a.dim != 2 && a.dim != 3) || !(a.radius > 0.0) || a.runs < 1 || a.runs > NBB_MAX_RUNS) {
        fprintf(stderr, "%s: bad arguments\n", argv[0]);
        return 2;
    }
    double *pts = NULL;
    const int32_t n = nbb_load(a.file, a.dim, &pts);
    nbGridDesc desc = {0};
    desc.dim = a.dim;
    desc.capacity_hint = n;
    for (int d = 0; d < a.dim; d++) desc.period[d] = period[d];
    nbGrid *g = NULL;
    nbStatus st = nb_grid_create(&desc, &g);
    const nbPoints view = {.data = pts, .count = n, .dim = a.dim};
    if (st == NB_OK) st = nb_grid_build(g, &view, a.radius);
    int64_t total = 0;
    if (st == NB_OK) st = nb_grid_count_pairs(g, a.radius, &total);
    if (st != NB_OK) {
        fprintf(stderr, "bench_periodic: %s\n", nb_status_str(st));
        return 1;
    }
    nbPair *out = (nbPair *)malloc((size_t)(total + 1) * sizeof(nbPair));
    if (out == NULL) return 1;
    int64_t both[NBB_MAX_RUNS], build[NBB_MAX_RUNS], pairs[NBB_MAX_RUNS];
    int64_t found = 0, allocs = (int64_t)nbb_alloc_calls();
    for (int r = 0; r < a.runs; r++) {
        const int64_t t0 = nbb_now_ns();
        st = nb_grid_build(g, &view, a.radius);
        const int64_t t1 = nbb_now_ns();
        if (st == NB_OK) st = nb_grid_pairs(g, a.radius, out, total + 1, &found);
        const int64_t t2 = nbb_now_ns();
        if (st != NB_OK || found != total) {
            fprintf(stderr, "bench_periodic: %s, %lld pairs of %lld\n", nb_status_str(st),
                    (long long)found, (long long)total);
            return 1;
        }
        build[r] = t1 - t0;
        pairs[r] = t2 - t1;
        both[r] = t2 - t0;
    }
    const double per_frame = (double)((int64_t)nbb_alloc_calls() - allocs) / a.runs;
    uint64_t sum = 0;
    for (int64_t t = 0; t < found; t++)
        sum += nbb_pair_hash((uint32_t)out[t].i, (uint32_t)out[t].j);
    const size_t bytes = nb_grid_memory_bytes(g);
    nbb_emit("nearby", &a, "build_pairs", n, both, per_frame, bytes, "nb_grid_memory_bytes", found,
             sum);
    nbb_emit("nearby", &a, "build", n, build, per_frame, bytes, "nb_grid_memory_bytes", found, sum);
    nbb_emit("nearby", &a, "pairs", n, pairs, per_frame, bytes, "nb_grid_memory_bytes", found, sum);
    FILE *f = fopen(argv[6], "wb");
    if (f == NULL || fwrite(out, sizeof(nbPair), (size_t)found, f) != (size_t)found ||
        fclose(f) != 0) {
        fprintf(stderr, "bench_periodic: cannot write %s\n", argv[6]);
        return 1;
    }
    nb_grid_destroy(g);
    free(out);
    free(pts);
    return 0;
}
