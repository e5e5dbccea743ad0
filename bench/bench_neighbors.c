// SPDX-License-Identifier: MIT
// Neighbour rows (neighbors.h) against all pairs, and the Verlet list against rebuilding rows
// every step. Usage: bench_neighbors N STEPS RUNS [UNIFORM2D.f64]
//
//   rows: N uniform points (2D and 3D, density 1) at the radius giving about 15 neighbours
//         each; build + nb_grid_pairs (into a buffer large enough) against build +
//         nb_grid_neighbor_rows (both directions, rows sorted) and build + a list's build;
//         the minimum and median of RUNS frames each, one thread (thread CPU time).
//   verlet: STEPS MD-like steps (every point moves 0.01 r a step in a random direction, kept
//         for 5 steps), skin 0.1 r. Four Verlet lists (exact rows by index; in cell order with
//         keep bits; candidates by index; candidates in cell order) against build + list every
//         step (by index, and in cell order: the fastest rows to rebuild); the six in turn in
//         each step (forwards, then backwards). (a) Maintenance: each update against the
//         rebuild in the same order. (b) A whole step: maintenance and an SPH-like density sum
//         over the rows (exact rows summed as they are, candidates tested d2 <= r*r; in cell
//         order your positions gathered into the rows' order first, as both need every step).
//         Per step: the mean over the steps after the first, and the median of the means of
//         10-step windows. Every step, every list's rows (filtered at r when candidates) are
//         compared with the list's by index and the densities with each other.
//   Sets: uniform2d and uniform3d in random order; uniform2d-sorted, the same 2D points in
//         cell order (rows of cells of side r, as a simulation that keeps its particles sorted
//         holds them); blobs2d, the corpus's clustered set (Gaussian blobs, its radius for
//         about 10 neighbours).
//   NBB_ONLY=rows or NBB_ONLY=verlet runs one section; NBB_SETS=uniform2d,blobs2d (names
//         separated by commas) runs only those sets.
//   UNIFORM2D.f64 (gen_data uniform2d 1000000): build + rows at r = 1.75, the set another
//         library's figures are quoted for.
// Prints CSV: section,dataset,operation,n,runs,min_ms,median_ms,entries,extra. In the verlet
// section the two times are the mean per step and the median of 10-step means (runs: steps).
#include <nearby/neighbors.h>

#include "bench_common.h"
#include "corpus.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static uint64_t rng = 0x6e6561726279ull;

static double unit(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53;
}

static void check(nbStatus st, const char *what)
{
    if (st != NB_OK) {
        fprintf(stderr, "bench_neighbors: %s: %s\n", what, nb_status_str(st));
        exit(1);
    }
}

// Thread CPU time: the machine these run on is shared, and one thread's own time is what the
// comparisons need (wall time under load measured the neighbours' jobs).
static int64_t now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static double ms(int64_t ns)
{
    return (double)ns / 1e6;
}

static void emit(const char *section, const char *set, const char *op, int32_t n, int runs,
                 const int64_t *t, int64_t entries, const char *extra)
{
    int64_t mn, md;
    nbb_stats(t, runs, &mn, &md);
    printf("%s,%s,%s,%d,%d,%.2f,%.2f,%lld,%s\n", section, set, op, n, runs, ms(mn), ms(md),
           (long long)entries, extra);
    fflush(stdout);
}

// build + pairs, build + rows, build + list: RUNS alternating rounds.
static void bench_rows(const char *set, const double *pts, int32_t n, int dim, double r, int runs)
{
    nbGridDesc gd = {.dim = dim};
    nbGrid *g = NULL;
    check(nb_grid_create(&gd, &g), "create");
    const nbPoints p = {.data = pts, .count = n, .dim = dim};
    check(nb_grid_build(g, &p, r), "build");
    int64_t npairs = 0;
    check(nb_grid_count_pairs(g, r, &npairs), "count");
    nbPair *pairs = (nbPair *)malloc((size_t)npairs * sizeof(nbPair));
    int32_t *off = (int32_t *)malloc(((size_t)n + 1) * sizeof(int32_t));
    int32_t *nb = (int32_t *)malloc((size_t)(2 * npairs) * sizeof(int32_t));
    nbNeighborList *l = NULL;
    const nbNeighborListDesc ld = {0};
    check(nb_neighbor_list_create(&ld, &l), "list");
    int32_t *coff = (int32_t *)malloc(((size_t)n + 1) * sizeof(int32_t));
    int32_t *cnb = (int32_t *)malloc((size_t)(2 * npairs) * sizeof(int32_t));
    nbNeighborList *lc = NULL;
    const nbNeighborListDesc lcd = {.cell_order = true};
    check(nb_neighbor_list_create(&lcd, &lc), "list");
    // The forms, each a build and its call: pairs, rows, list, rows and list in cell order.
    enum { PAIRS, ROWS, LIST, CROWS, CLIST, FORMS };
    int64_t t[FORMS][NBB_MAX_RUNS], found = 0, cfound = 0;
    for (int k = -1; k < runs; k++) {     // one warm-up round
        for (int f = 0; f < FORMS; f++) { // every form in each round, on the same points
            const int64_t t0 = now();
            check(nb_grid_build(g, &p, r), "build");
            switch (f) {
            case PAIRS: check(nb_grid_pairs(g, r, pairs, npairs, &found), "pairs"); break;
            case ROWS:
                check(nb_grid_neighbor_rows(g, r, off, nb, 2 * npairs, &found), "rows");
                break;
            case LIST: check(nb_neighbor_list_build(l, g, r), "list"); break;
            case CROWS:
                check(nb_grid_neighbor_rows_cell_order(g, r, coff, cnb, 2 * npairs, &cfound),
                      "cell");
                break;
            default: check(nb_neighbor_list_build(lc, g, r), "list"); break;
            }
            if (k >= 0) t[f][k] = now() - t0;
        }
    }
    static const char *const op[FORMS] = {"build+pairs", "build+rows", "build+list",
                                          "build+rows in cell order", "build+list in cell order"};
    static const char *const ratio[FORMS] = {"", "rows/pairs", "list/pairs",
                                             "cell-order rows/pairs", "cell-order list/pairs"};
    char extra[64];
    snprintf(extra, sizeof extra, "r=%g", r);
    int64_t pmin, pmed;
    nbb_stats(t[PAIRS], runs, &pmin, &pmed);
    for (int f = 0; f < FORMS; f++)
        emit("rows", set, op[f], n, runs, t[f],
             f == PAIRS   ? npairs
             : f >= CROWS ? cfound
                          : found,
             extra);
    for (int f = ROWS; f < FORMS; f++) {
        int64_t mn, md;
        nbb_stats(t[f], runs, &mn, &md);
        printf("rows,%s,%s,%d,%d,%.2f,%.2f,,min and median ratios\n", set, ratio[f], n, runs,
               (double)mn / (double)pmin, (double)md / (double)pmed);
    }
    nb_neighbor_list_destroy(l);
    nb_grid_destroy(g);
    free(coff);
    free(cnb);
    free(pairs);
    free(off);
    free(nb);
}

// Whether row t of rows `a` (candidates, or a keep bit a candidate) holds a neighbour of row
// p: the keep bit, or the test at r from the positions x (by index; a's order maps positions).
static bool kept_entry(const nbNeighborRows *a, int32_t p, int32_t t, const double *x, int dim,
                       double r2)
{
    if (!a->candidates) return a->keep == NULL || ((a->keep[t >> 6] >> (t & 63)) & 1);
    const int32_t i = a->order != NULL ? a->order[p] : p, q = a->neighbors[t];
    const int32_t j = a->order != NULL ? a->order[q] : q;
    double d2 = 0.0;
    for (int d = 0; d < dim; d++) {
        const double e = x[(size_t)i * (size_t)dim + d] - x[(size_t)j * (size_t)dim + d];
        d2 += e * e;
    }
    return d2 <= r2;
}

// Whether the Verlet rows `a` (in cell order or by index; exact, keep bits or candidates) are
// the rows by index `b` once each kept entry is mapped to an index and each row sorted (rows
// have a few dozen entries at most here), into off and nb (n + 1 and b->entries).
static bool same_rows(const nbNeighborRows *a, const nbNeighborRows *b, const double *x, int dim,
                      double r2, int32_t *off, int32_t *nb)
{
    const int32_t n = a->rows;
    memset(off, 0, ((size_t)n + 1) * sizeof(int32_t));
    for (int32_t p = 0; p < n; p++)
        for (int32_t t = a->offsets[p]; t < a->offsets[p + 1]; t++)
            off[(a->order != NULL ? a->order[p] : p) + 1] += kept_entry(a, p, t, x, dim, r2);
    for (int32_t i = 0; i < n; i++) off[i + 1] += off[i];
    if (b->rows != n || off[n] != b->entries) return false;
    for (int32_t p = 0; p < n; p++) {
        int32_t *row = nb + off[a->order != NULL ? a->order[p] : p], m = 0;
        for (int32_t t = a->offsets[p]; t < a->offsets[p + 1]; t++)
            if (kept_entry(a, p, t, x, dim, r2)) {
                int32_t j = m++;
                const int32_t q = a->order != NULL ? a->order[a->neighbors[t]] : a->neighbors[t];
                for (; j > 0 && row[j - 1] > q; j--) row[j] = row[j - 1];
                row[j] = q;
            }
    }
    return memcmp(off, b->offsets, ((size_t)n + 1) * sizeof(int32_t)) == 0 &&
           memcmp(nb, b->neighbors, (size_t)b->entries * sizeof(int32_t)) == 0;
}

// The consumer: an SPH-like density sum, rho[p] = the sum over row p's neighbours q of
// (r2 - d2)^3, d2 from the positions x (row p's point at x + p * dim). Exact rows are summed
// as they come; candidates (`test`) are tested d2 <= r2 first, as a force loop does.
static void density(const nbNeighborRows *rows, const double *x, int dim, double r2, bool test,
                    double *rho)
{
    for (int32_t p = 0; p < rows->rows; p++) {
        const double *a = x + (size_t)p * (size_t)dim;
        double sum = 0.0;
        for (int32_t t = rows->offsets[p]; t < rows->offsets[p + 1]; t++) {
            const double *b = x + (size_t)rows->neighbors[t] * (size_t)dim;
            const double dx = a[0] - b[0], dy = a[1] - b[1];
            double d2 = dx * dx + dy * dy;
            if (dim == 3) d2 += (a[2] - b[2]) * (a[2] - b[2]);
            const double w = (r2 - d2) * (r2 - d2) * (r2 - d2);
#if defined(__SSE2__) // the test as a mask: a branch would mispredict on a sixth of them
            const __m128d in = _mm_cmple_sd(_mm_set_sd(d2), _mm_set_sd(r2));
            sum += test ? _mm_cvtsd_f64(_mm_and_pd(in, _mm_set_sd(w))) : w;
#else
            sum += !test || d2 <= r2 ? w : 0.0;
#endif
        }
        rho[p] = sum;
    }
}

static void density_any(const nbNeighborRows *rows, const double *x, int dim, double r2,
                        double *rho)
{
    if (dim == 2)
        rows->candidates ? density(rows, x, 2, r2, true, rho) : density(rows, x, 2, r2, false, rho);
    else
        rows->candidates ? density(rows, x, 3, r2, true, rho) : density(rows, x, 3, r2, false, rho);
}

// The median of the means of consecutive windows of `w` samples (the last partial window
// dropped): an amortised time per step that one slow stretch of a shared machine moves little.
static double window_median(const int64_t *t, int count, int w)
{
    double mean[NBB_MAX_RUNS];
    int k = 0;
    for (int s = 0; s + w <= count && k < NBB_MAX_RUNS; s += w, k++) {
        int64_t sum = 0;
        for (int j = 0; j < w; j++) sum += t[s + j];
        mean[k] = (double)sum / w;
    }
    for (int i = 1; i < k; i++) // insertion sort: a few dozen windows
        for (int j = i; j > 0 && mean[j - 1] > mean[j]; j--) {
            const double tmp = mean[j];
            mean[j] = mean[j - 1];
            mean[j - 1] = tmp;
        }
    return k == 0 ? 0.0 : k % 2 ? mean[k / 2] : 0.5 * (mean[k / 2 - 1] + mean[k / 2]);
}

// MD-like steps: four Verlet lists (exact rows by index, keep bits in cell order, candidates by
// index and in cell order) against a fresh build + list every step (by index, and in cell
// order: the fastest rows to rebuild), all six in each step, in turn forwards and backwards.
// Then the consumer (density) over the rows of each form that a simulation would read with
// it: the exact rows rebuilt every step and the candidates, by index (your positions) and in
// cell order (your positions gathered into the rows' order first, as both need every step).
enum { VIDX, VCELL, VCAND, VCANDC, RIDX, RCELL, FORMS, WINDOW = 10 };

static void bench_verlet(const char *set, double *pts, int32_t n, int dim, double side, double r,
                         int steps)
{
    const double skin = 0.1 * r, speed = 0.01 * r, r2 = r * r;
    double *vel = (double *)malloc((size_t)n * (size_t)dim * sizeof(double));
    double *xs = (double *)malloc((size_t)n * (size_t)dim * sizeof(double));
    double *rho[FORMS];
    for (int f = 0; f < FORMS; f++) rho[f] = (double *)malloc((size_t)n * sizeof(double));
    nbVerlet *v[4] = {NULL, NULL, NULL, NULL};
    for (int f = VIDX; f <= VCANDC; f++) {
        const nbVerletDesc vd = {.radius = r,
                                 .skin = skin,
                                 .dim = dim,
                                 .cell_order = f == VCELL || f == VCANDC,
                                 .candidates = f == VCAND || f == VCANDC};
        check(nb_verlet_create(&vd, &v[f]), "verlet");
    }
    nbGridDesc gd = {.dim = dim};
    nbGrid *g = NULL;
    check(nb_grid_create(&gd, &g), "create");
    nbNeighborList *l = NULL, *lc = NULL;
    const nbNeighborListDesc ld = {0}, lcd = {.cell_order = true};
    check(nb_neighbor_list_create(&ld, &l), "list");
    check(nb_neighbor_list_create(&lcd, &lc), "list");
    const nbPoints p = {.data = pts, .count = n, .dim = dim};
    int64_t *tt[FORMS], *tc[FORMS]; // per step: maintenance, consumer
    for (int f = 0; f < FORMS; f++) {
        tt[f] = (int64_t *)calloc((size_t)steps, sizeof(int64_t));
        tc[f] = (int64_t *)calloc((size_t)steps, sizeof(int64_t));
    }
    int32_t *off = (int32_t *)malloc(((size_t)n + 1) * sizeof(int32_t)), *nb = NULL;
    int64_t nb_cap = 0;
    int rebuilds = 0;
    for (int s = 0; s < steps; s++) {
        if (s % 5 == 0) // a new random direction every 5 steps
            for (int32_t i = 0; i < n; i++) {
                double len = 0.0, *u = vel + (size_t)i * (size_t)dim;
                for (int d = 0; d < dim; d++) {
                    u[d] = unit() - 0.5;
                    len += u[d] * u[d];
                }
                for (int d = 0; d < dim; d++) u[d] *= speed / sqrt(len);
            }
        for (size_t t = 0; t < (size_t)n * (size_t)dim; t++) {
            pts[t] += vel[t];
            if (side > 0.0 && (pts[t] < 0.0 || pts[t] > side)) vel[t] = -vel[t]; // in the box
        }
        bool rebuilt[4] = {false, false, false, false};
        for (int k = 0; k < FORMS; k++) {
            const int f = s % 2 == 0 ? k : FORMS - 1 - k;
            int64_t t0 = now();
            if (f <= VCANDC) {
                check(nb_verlet_update(v[f], &p, &rebuilt[f]), "update");
            } else {
                check(nb_grid_build(g, &p, r), "build");
                check(nb_neighbor_list_build(f == RIDX ? l : lc, g, r), "list");
            }
            tt[f][s] = now() - t0;
            if (f == VIDX || f == VCELL) continue; // (no consumer: the candidates' are read)
            nbNeighborRows rows;
            if (f <= VCANDC)
                check(nb_verlet_rows(v[f], &rows), "rows");
            else
                check(nb_neighbor_list_rows(f == RIDX ? l : lc, &rows), "rows");
            t0 = now();
            const double *x = pts;
            if (rows.order != NULL) { // your positions into the rows' order
                check(nb_gather(rows.order, n, pts, 0, xs, 0, (size_t)dim * sizeof(double)),
                      "gather");
                x = xs;
            }
            density_any(&rows, x, dim, r2, rho[f]);
            tc[f][s] = now() - t0;
        }
        rebuilds += rebuilt[VIDX];
        nbNeighborRows b, a;
        check(nb_neighbor_list_rows(l, &b), "rows");
        if (b.entries > nb_cap) {
            free(nb);
            nb_cap = b.entries + b.entries / 4;
            nb = (int32_t *)malloc((size_t)nb_cap * sizeof(int32_t));
        }
        bool same = true;
        for (int f = VIDX; f <= VCANDC; f++) {
            check(nb_verlet_rows(v[f], &a), "rows");
            same = same && rebuilt[f] == rebuilt[VIDX] && same_rows(&a, &b, pts, dim, r2, off, nb);
        }
        // The density: bitwise by index (the same entries in the same order); in cell order
        // each point's sum in another order of its terms, so to a relative 1e-12.
        same = same && memcmp(rho[RIDX], rho[VCAND], (size_t)n * sizeof(double)) == 0;
        nbNeighborRows cc, ce;
        check(nb_verlet_rows(v[VCANDC], &cc), "rows");
        check(nb_neighbor_list_rows(lc, &ce), "rows");
        for (int32_t q = 0; q < n && same; q++) {
            const int32_t i = ce.order[q];
            xs[i] = rho[RCELL][q]; // (xs: scratch, by index)
        }
        for (int32_t q = 0; q < n && same; q++) {
            const double x = rho[VCANDC][q], y = xs[cc.order[q]];
            same = fabs(x - y) <= 1e-12 * fabs(y) &&
                   fabs(rho[RIDX][cc.order[q]] - y) <= 1e-12 * fabs(y);
        }
        if (!same) {
            fprintf(stderr, "bench_neighbors: MISMATCH at step %d\n", s);
            exit(1);
        }
    }
    nbNeighborRows a;
    check(nb_verlet_rows(v[VIDX], &a), "rows");
    char extra[96];
    snprintf(extra, sizeof extra, "r=%g skin=%g rebuilds=%d", r, skin, rebuilds);
    static const char *const op[FORMS] = {"verlet update by index",
                                          "verlet update in cell order (keep bits)",
                                          "verlet update candidates by index",
                                          "verlet update candidates in cell order",
                                          "rebuild rows by index every step",
                                          "rebuild rows in cell order every step"};
    // Per step: the mean over the steps after the first (the first update is the first build
    // for all), and the median of WINDOW-step means.
    double mean[FORMS], med[FORMS], cmean[FORMS], cmed[FORMS];
    for (int f = 0; f < FORMS; f++) {
        int64_t sum = 0, csum = 0;
        for (int s = 1; s < steps; s++) {
            sum += tt[f][s];
            csum += tc[f][s];
            tc[f][s] += tt[f][s]; // the whole step
        }
        mean[f] = (double)sum / (steps - 1) / 1e6;
        med[f] = window_median(tt[f] + 1, steps - 1, WINDOW) / 1e6;
        cmean[f] = (double)csum / (steps - 1) / 1e6 + mean[f];
        cmed[f] = window_median(tc[f] + 1, steps - 1, WINDOW) / 1e6;
        printf("verlet,%s,%s (per step),%d,%d,%.2f,%.2f,%lld,%s\n", set, op[f], n, steps - 1,
               mean[f], med[f], (long long)a.entries, extra);
    }
    for (int f = VCAND; f < FORMS; f++)
        printf("verlet,%s,%s + density (per step),%d,%d,%.2f,%.2f,%lld,%s\n", set, op[f], n,
               steps - 1, cmean[f], cmed[f], (long long)a.entries, extra);
    static const int pair[4][2] = {{RIDX, VIDX}, {RCELL, VCELL}, {RIDX, VCAND}, {RCELL, VCANDC}};
    for (int k = 0; k < 4; k++) {
        const int x = pair[k][0], y = pair[k][1];
        printf("verlet,%s,%s / %s,%d,%d,%.2f,%.2f,,mean and median ratios; same rows at every "
               "step\n",
               set, op[x], op[y], n, steps - 1, mean[x] / mean[y], med[x] / med[y]);
    }
    for (int k = 2; k < 4; k++) {
        const int x = pair[k][0], y = pair[k][1];
        printf("verlet,%s,%s / %s with density,%d,%d,%.2f,%.2f,,mean and median ratios; same "
               "density at every step\n",
               set, op[x], op[y], n, steps - 1, cmean[x] / cmean[y], cmed[x] / cmed[y]);
    }
    fflush(stdout);
    for (int f = 0; f < 4; f++) nb_verlet_destroy(v[f]);
    for (int f = 0; f < FORMS; f++) {
        free(tt[f]);
        free(tc[f]);
        free(rho[f]);
    }
    nb_neighbor_list_destroy(l);
    nb_neighbor_list_destroy(lc);
    nb_grid_destroy(g);
    free(vel);
    free(xs);
    free(off);
    free(nb);
}

// Whether set `name` is to run (NBB_SETS unset: all).
static bool wanted(const char *name)
{
    const char *sets = getenv("NBB_SETS");
    if (sets == NULL) return true;
    const size_t len = strlen(name);
    for (const char *at = strstr(sets, name); at != NULL; at = strstr(at + 1, name))
        if ((at == sets || at[-1] == ',') && (at[len] == ',' || at[len] == '\0')) return true;
    return false;
}

static void run_set(const char *set, double *pts, int32_t n, int dim, double side, double r,
                    int steps, int runs)
{
    if (!wanted(set)) return;
    const char *only = getenv("NBB_ONLY"); // rows or verlet: one section (profiling)
    if (only == NULL || strcmp(only, "verlet") != 0) bench_rows(set, pts, n, dim, r, runs);
    if (only == NULL || strcmp(only, "rows") != 0) bench_verlet(set, pts, n, dim, side, r, steps);
}

// 2D points reordered into cell order: rows of cells of side r, x fastest.
typedef struct cellKey {
    int64_t key;
    int32_t i;
} cellKey;

static int by_key(const void *a, const void *b)
{
    const int64_t x = ((const cellKey *)a)->key, y = ((const cellKey *)b)->key;
    return x < y ? -1 : x > y;
}

static double *cell_order_2d(const double *pts, int32_t n, double side, double r)
{
    cellKey *k = (cellKey *)malloc((size_t)n * sizeof(cellKey));
    double *out = (double *)malloc((size_t)n * 2 * sizeof(double));
    const int64_t row = (int64_t)(side / r) + 1;
    for (int32_t i = 0; i < n; i++) {
        k[i].key = (int64_t)(pts[2 * i + 1] / r) * row + (int64_t)(pts[2 * i] / r);
        k[i].i = i;
    }
    qsort(k, (size_t)n, sizeof(cellKey), by_key);
    for (int32_t i = 0; i < n; i++) memcpy(out + 2 * i, pts + 2 * k[i].i, 2 * sizeof(double));
    free(k);
    return out;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: bench_neighbors N STEPS RUNS [UNIFORM2D.f64]\n");
        return 2;
    }
    const int32_t n = atoi(argv[1]);
    const int steps = atoi(argv[2]), runs = atoi(argv[3]);
    if (n < 1 || steps < 2 || runs < 1 || runs > NBB_MAX_RUNS) {
        fprintf(stderr, "bench_neighbors: bad arguments\n");
        return 2;
    }
    printf("section,dataset,operation,n,runs,min_ms,median_ms,entries,extra\n");
    for (int dim = 2; dim <= 3; dim++) {
        // density 1; about 15 neighbours: pi r^2 = 15 (2D), 4/3 pi r^3 = 15 (3D)
        const double side = pow((double)n, 1.0 / dim);
        const double r = dim == 2 ? sqrt(15.0 / M_PI) : cbrt(15.0 * 3.0 / (4.0 * M_PI));
        double *pts = (double *)malloc((size_t)n * (size_t)dim * sizeof(double));
        for (size_t t = 0; t < (size_t)n * (size_t)dim; t++) pts[t] = unit() * side;
        if (dim == 2 && wanted("uniform2d-sorted")) {
            double *sorted = cell_order_2d(pts, n, side, r);
            run_set("uniform2d-sorted", sorted, n, dim, side, r, steps, runs);
            free(sorted);
        }
        run_set(dim == 2 ? "uniform2d" : "uniform3d", pts, n, dim, side, r, steps, runs);
        free(pts);
    }
    if (wanted("blobs2d")) {
        nbbCorpus c;
        if (nbb_corpus_make(nbb_corpus_find("blobs2d"), n, 0, &c) != 0) {
            fprintf(stderr, "bench_neighbors: blobs2d: cannot make the set\n");
            return 1;
        }
        run_set("blobs2d", c.data, c.n, c.dim, 0.0, c.radius, steps, runs);
        nbb_corpus_free(&c);
    }
    if (argc == 5 && wanted("uniform2d-file")) {
        double *pts = NULL;
        const int32_t m = nbb_load(argv[4], 2, &pts);
        bench_rows("uniform2d-file", pts, m, 2, 1.75, runs);
        free(pts);
    }
    return 0;
}
