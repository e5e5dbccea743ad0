// SPDX-License-Identifier: MIT
// The spatial hash in an open world: N items uniform over a square of side WORLD (cell 2, the
// radius of bench_agents), far too sparse for dense cells when WORLD is large, so the hash
// numbers its occupied cells through the cell table. Each frame PERCENT of the items (a fresh
// pseudo-random choice) move one at a time with nb_hash_move: a step uniform in [-STEP/2,
// STEP/2] per axis, or, with STEP 0, a teleport anywhere in the world; then a tenth of the items
// (a fresh choice) ask for their neighbours within 2 (nb_hash_query_radius). The moves and the
// queries are timed apart; the hash is validated at the end. Prints one CSV line:
//   world,n,percent,step,frames,move_ms_median,move_ms_max,query_ms_median,hits (of all frames)
//   bench_open_world [N] [WORLD] [PERCENT] [STEP] [FRAMES]   (defaults 100000 1e6 10 0 20)
// docs/hash.md ("Hashed worlds") has the figures before and after the hashed cells' renumbering.
#include "bench_common.h"

#include <nearby/hash.h>

static uint64_t nbw_state = 0x6f70656e776f726cULL;

// Uniform in [0, 1), from splitmix64.
static double nbw_unit(void)
{
    uint64_t z = (nbw_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

static void check(nbStatus s, const char *what)
{
    if (s != NB_OK) {
        fprintf(stderr, "bench_open_world: %s: %s\n", what, nb_status_str(s));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    const int32_t n = argc > 1 ? atoi(argv[1]) : 100000;
    const double world = argc > 2 ? atof(argv[2]) : 1e6;
    const double percent = argc > 3 ? atof(argv[3]) : 10.0;
    const double step = argc > 4 ? atof(argv[4]) : 0.0;
    const int frames = argc > 5 ? atoi(argv[5]) : 20;
    if (n <= 0 || !(world > 0.0) || !(percent > 0.0 && percent <= 100.0) || step < 0.0 ||
        frames <= 0 || frames > 1000) {
        fprintf(stderr, "usage: bench_open_world [N] [WORLD] [PERCENT] [STEP] [FRAMES]\n");
        return 2;
    }
    nbHashDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.dim = 2;
    desc.cell_size = 2.0;
    nbHash *hash = NULL;
    check(nb_hash_create(&desc, &hash), "nb_hash_create");
    check(nb_hash_reserve(hash, n), "nb_hash_reserve");
    double *pos = malloc((size_t)n * 2 * sizeof *pos);
    nbHandle *handle = malloc((size_t)n * sizeof *handle);
    int64_t *ns = malloc((size_t)frames * sizeof *ns);
    if (pos == NULL || handle == NULL || ns == NULL) return 2;
    for (int32_t i = 0; i < n; i++) {
        pos[2 * i] = nbw_unit() * world;
        pos[2 * i + 1] = nbw_unit() * world;
        check(nb_hash_insert(hash, &pos[2 * i], (uint64_t)i, NB_FILTER_ALL, &handle[i]),
              "nb_hash_insert");
    }
    const int32_t movers = (int32_t)((double)n * percent / 100.0), askers = n / 10;
    int64_t *qns = malloc((size_t)frames * sizeof *qns);
    nbHit *hits = malloc((size_t)n * sizeof *hits);
    if (qns == NULL || hits == NULL) return 2;
    int64_t total = 0;
    for (int f = 0; f < frames; f++) {
        const int64_t t0 = nbb_now_ns();
        for (int32_t k = 0; k < movers; k++) {
            const int32_t i = (int32_t)(nbw_unit() * n);
            for (int a = 0; a < 2; a++) {
                double x =
                    step > 0.0 ? pos[2 * i + a] + (nbw_unit() - 0.5) * step : nbw_unit() * world;
                pos[2 * i + a] = x;
            }
            check(nb_hash_move(hash, handle[i], &pos[2 * i]), "nb_hash_move");
        }
        ns[f] = nbb_now_ns() - t0;
        const int64_t q0 = nbb_now_ns();
        for (int32_t k = 0; k < askers; k++) {
            const int32_t i = (int32_t)(nbw_unit() * n);
            int32_t found = 0;
            check(nb_hash_query_radius(hash, &pos[2 * i], 2.0, NB_FILTER_ALL, hits, n, &found),
                  "nb_hash_query_radius");
            total += found;
        }
        qns[f] = nbb_now_ns() - q0;
    }
    check(nb_hash_validate(hash), "nb_hash_validate");
    int64_t worst = 0;
    for (int f = 0; f < frames; f++) worst = ns[f] > worst ? ns[f] : worst;
    qsort(ns, (size_t)frames, sizeof *ns, nbb_cmp_i64);
    qsort(qns, (size_t)frames, sizeof *qns, nbb_cmp_i64);
    printf("%g,%d,%g,%g,%d,%.3f,%.3f,%.3f,%lld\n", world, n, percent, step, frames,
           (double)ns[(frames - 1) / 2] * 1e-6, (double)worst * 1e-6,
           (double)qns[(frames - 1) / 2] * 1e-6, (long long)total);
    nb_hash_destroy(hash);
    free(pos);
    free(handle);
    free(ns);
    free(qns);
    free(hits);
    return 0;
}
