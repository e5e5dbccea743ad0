// SPDX-License-Identifier: MIT
#define _POSIX_C_SOURCE 200809L // sysconf and pthreads under -std=c11
// The grid on a scheduler (nbTasks): every worker count from 1 to 8, and schedulers that split
// and order the work in unusual ways, give the serial grid's results bit for bit and in order:
// the build's layout (seen through every pair in order), pair buffers (also truncated ones),
// counts, radius queries and kNN. Also run under ThreadSanitizer by `make test`.
#include "nb_pthreads.h"
#include "nb_test.h"

#include <nearby/grid.h>
#include <nearby/neighbors.h>

#include "grid_internal.h"

#include <math.h>

enum { N_BIG = 20000 }; // above the sizes below which the grid stays serial

// Schedulers that are not pthreads: each calls the task on every item exactly once, with
// worker ids in [0, workers), in an order that no real pool would use.
static void sched_backwards(nbTaskFn *task, int32_t count, int32_t min_range, void *ctx, void *user)
{
    (void)min_range;
    (void)user;
    for (int32_t i = count - 1; i >= 0; i--) task(i, i + 1, (count - 1 - i) % 3, ctx);
}

static void sched_halves(nbTaskFn *task, int32_t count, int32_t min_range, void *ctx, void *user)
{
    (void)min_range;
    (void)user;
    const int32_t mid = count / 2;
    task(mid, count, 1, ctx);
    task(0, mid, 0, ctx);
}

typedef struct data {
    int32_t n;
    int dim;
    double *xyz;
    uint32_t *cat, *mask;
    double period; // kind 3: the box [0, period) on every axis, else 0
} data;

static data make_data(int32_t n, int dim, int kind)
{
    data d = {n,
              dim,
              (double *)malloc(sizeof(double) * (size_t)(n * dim + 1)),
              (uint32_t *)malloc(sizeof(uint32_t) * (size_t)n + 4),
              (uint32_t *)malloc(sizeof(uint32_t) * (size_t)n + 4),
              0.0};
    const double side = dim == 2 ? sqrt((double)n) : cbrt((double)n);
    if (kind == 3) d.period = side;
    for (int32_t i = 0; i < n; i++) {
        for (int a = 0; a < dim; a++) {
            double v = nbt_range(-side / 2, side / 2);
            if (kind == 1) v = floor(v); // a lattice: many pairs exactly 1 apart, duplicates
            if (kind == 2 && i % 21 == 0) v = 0.25 * (double)(i % 5); // a dense cluster
            if (kind == 3) v = i % 11 == 0 ? 0.0 : v + side / 2;      // periodic, some on a face
            if (kind == 3 && !(v < side)) v = 0.0;
            if (kind == 4 && a == dim - 1 && i % 5 < 3) // a crowd in the first rows or layers
                v = nbt_range(-side / 2, -side / 2 + 1.0);
            if (kind == 5 && i % 20 == 0) v = -side / 2; // crowds in the two corner cells
            if (kind == 5 && i % 20 == 1) v = side / 2;
            d.xyz[(size_t)i * (size_t)dim + (size_t)a] = v;
        }
        d.cat[i] = 1u << (nbt_u64() % 3);
        d.mask[i] = (uint32_t)(nbt_u64() % 8);
    }
    return d;
}

static void free_data(data *d)
{
    free(d->xyz);
    free(d->cat);
    free(d->mask);
}

typedef struct answers {
    int64_t count, found, found_small;
    nbPair *pairs, *small;
    int32_t within[N_BIG], within_n;
    nbNeighbor knn[16];
    int32_t knn_n;
    size_t bytes;
} answers;

enum { SMALL = 1000 };

// Everything one grid answers on d, with `tasks` (NULL = serial).
static int run(const data *d, bool filtered, const nbTasks *tasks, double r, answers *a)
{
    nbGridDesc desc = {.dim = d->dim, .tasks = tasks};
    for (int ax = 0; ax < d->dim; ax++) desc.period[ax] = d->period;
    nbGrid *g;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints pts = {.data = d->xyz, .count = d->n, .dim = d->dim};
    if (filtered) {
        pts.category = d->cat;
        pts.mask = d->mask;
    }
    if (filtered) { // first other bits, so that a position whose bits a build missed shows
        nbPoints other = pts;
        other.category = d->mask;
        other.mask = d->cat;
        NB_CHECK_OK(nb_grid_build(g, &other, r));
    }
    // Twice: the second build reuses the storage, and the second pairs call the scratch.
    for (int round = 0; round < 2; round++) {
        NB_CHECK_OK(nb_grid_build(g, &pts, r));
        NB_CHECK_OK(nb_grid_validate(g));
        NB_CHECK_OK(nb_grid_count_pairs(g, r, &a->count));
        free(a->pairs);
        a->pairs = (nbPair *)malloc(sizeof(nbPair) * (size_t)(a->count + 1));
        NB_CHECK_OK(nb_grid_pairs(g, r, a->pairs, a->count, &a->found));
        NB_CHECK(a->found == a->count);
        const nbStatus want = a->count > SMALL ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
        NB_CHECK_STATUS(nb_grid_pairs(g, r, a->small, SMALL, &a->found_small), want);
    }
    const double at[3] = {0.5, d->period > 0.0 ? 0.25 : -0.25, 0.125}; // in a periodic box
    NB_CHECK_OK(
        nb_grid_query_radius(g, at, 3.0 * r, NB_FILTER_ALL, a->within, N_BIG, &a->within_n));
    NB_CHECK_OK(nb_grid_knn(g, at, NB_FILTER_ALL, (double)INFINITY, a->knn, 16, &a->knn_n));
    nb_grid_destroy(g);
    return 0;
}

static int same(const answers *x, const answers *y)
{
    NB_CHECK(x->count == y->count && x->found == y->found && x->found_small == y->found_small);
    NB_CHECK(memcmp(x->pairs, y->pairs, sizeof(nbPair) * (size_t)x->count) == 0);
    const int64_t m = x->found_small < SMALL ? x->found_small : SMALL;
    NB_CHECK(memcmp(x->small, y->small, sizeof(nbPair) * (size_t)m) == 0);
    NB_CHECK(x->within_n == y->within_n);
    NB_CHECK(memcmp(x->within, y->within, sizeof(int32_t) * (size_t)x->within_n) == 0);
    NB_CHECK(x->knn_n == y->knn_n);
    for (int32_t t = 0; t < x->knn_n; t++) // field by field: the struct has padding
        NB_CHECK(x->knn[t].index == y->knn[t].index && x->knn[t].dist2 == y->knn[t].dist2);
    return 0;
}

static answers *fresh(void)
{
    answers *a = (answers *)calloc(1, sizeof(answers));
    a->small = (nbPair *)calloc(SMALL, sizeof(nbPair));
    return a;
}

static void done(answers *a)
{
    free(a->pairs);
    free(a->small);
    free(a);
}

// A scheduler that counts its calls, to show the grid used it.
static int calls;
static void sched_count(nbTaskFn *task, int32_t count, int32_t min_range, void *ctx, void *user)
{
    (void)min_range;
    (void)user;
    calls++;
    task(0, count, 0, ctx);
}

// Every worker count and every odd scheduler against the serial grid, for one data set. With
// `blocked`, the grids on a scheduler build in blocks (grid.c, "large builds") and the
// serial one in one pass.
static int against_serial_runs(const data *d, bool filtered, double r, bool blocked)
{
    const int32_t saved = nbi_blocked_min_points;
    answers *serial = fresh();
    nbi_blocked_min_points = blocked ? INT32_MAX : saved;
    int bad = run(d, filtered, NULL, r, serial);
    nbi_blocked_min_points = blocked ? 1 : saved;
    for (int32_t w = 1; w <= 8 && !bad; w++) {
        nbxPool pool;
        if (nbx_pool_start(&pool, w) != 0) {
            fprintf(stderr, "  could not start %d workers\n", (int)w);
            bad = 1;
            break;
        }
        const nbTasks tasks = nbx_pool_tasks(&pool);
        answers *par = fresh();
        bad = run(d, filtered, &tasks, r, par) || same(serial, par);
        if (bad) fprintf(stderr, "  with %d workers\n", (int)w);
        done(par);
        nbx_pool_stop(&pool);
    }
    nbParallelForFn *odd[2] = {sched_backwards, sched_halves};
    for (int s = 0; s < 2 && !bad; s++) {
        const nbTasks tasks = {odd[s], NULL, 3};
        answers *par = fresh();
        bad = run(d, filtered, &tasks, r, par) || same(serial, par);
        if (bad) fprintf(stderr, "  with odd scheduler %d\n", s);
        done(par);
    }
    nbi_blocked_min_points = saved; // on every path: the checks above never return early
    done(serial);
    return bad;
}

static int against_serial_as(int32_t n, int dim, int kind, bool filtered, double r, bool blocked)
{
    data d = make_data(n, dim, kind);
    const int bad = against_serial_runs(&d, filtered, r, blocked);
    free_data(&d);
    return bad;
}

static int against_serial(int32_t n, int dim, int kind, bool filtered, double r)
{
    return against_serial_as(n, dim, kind, filtered, r, false);
}

static int t_uniform_2d(void)
{
    return against_serial(N_BIG, 2, 0, false, 1.5);
}
static int t_uniform_3d(void)
{
    return against_serial(N_BIG, 3, 0, false, 1.2);
}
static int t_lattice_2d(void)
{
    return against_serial(N_BIG, 2, 1, false, 1.0);
}
static int t_cluster_filtered_2d(void)
{
    return against_serial(N_BIG, 2, 2, true, 1.0);
}
static int t_periodic_3d_filtered(void)
{
    return against_serial(N_BIG, 3, 3, true, 1.25);
}
// Fewer points than the parallel threshold: the build never calls the scheduler, and the
// answers are the serial ones.
static int t_small_stays_serial(void)
{
    data d = make_data(500, 2, 0);
    const nbTasks tasks = {sched_count, NULL, 4};
    nbGridDesc desc = {.dim = 2, .tasks = &tasks};
    nbGrid *g;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints pts = {.data = d.xyz, .count = d.n, .dim = 2};
    calls = 0;
    NB_CHECK_OK(nb_grid_build(g, &pts, 2.0));
    NB_CHECK_OK(nb_grid_build(g, &pts, 2.0)); // a rebuild of the same points, too
    NB_CHECK(calls == 0);
    nb_grid_destroy(g);
    free_data(&d);
    return against_serial(500, 2, 0, false, 2.0);
}
static int t_sparse_hashed(void) // a tiny radius: the hashed layout, built serially
{
    return against_serial(N_BIG, 2, 0, false, 0.01);
}
// Whether the serial grid on make_data(n, dim, kind) at radius r is ranked.
static int check_ranked(int32_t n, int dim, int kind, double r)
{
    data d = make_data(n, dim, kind);
    nbGridDesc desc = {.dim = dim};
    nbGrid *g;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints pts = {.data = d.xyz, .count = n, .dim = dim};
    NB_CHECK_OK(nb_grid_build(g, &pts, r));
    nbGridInfo info;
    NB_CHECK_OK(nb_grid_info(g, &info));
    NB_CHECK(info.ranked);
    nb_grid_destroy(g);
    free_data(&d);
    return 0;
}
static int t_sparse_ranked(void) // 16 cells a point: the ranked layout, built on the workers
{
    return check_ranked(N_BIG, 2, 0, 0.25) || against_serial(N_BIG, 2, 0, false, 0.25);
}
static int t_sparse_ranked_3d_filtered(void) // about 16 cells a point
{
    return check_ranked(N_BIG, 3, 2, 0.4) || against_serial(N_BIG, 3, 2, true, 0.4);
}
// A ranked build whose words are cut into ranges around two crowded corner cells, with an odd
// point count and odd schedulers of 3, 13 and 64 workers: empty ranges, and ranges that start
// at the last word.
static int t_sparse_ranked_crowded(void)
{
    const int32_t n = N_BIG - 3;
    if (check_ranked(n, 2, 5, 0.25)) return 1;
    data d = make_data(n, 2, 5);
    answers *serial = fresh();
    int bad = run(&d, false, NULL, 0.25, serial);
    nbParallelForFn *odd[2] = {sched_backwards, sched_halves};
    const int32_t workers[3] = {3, 13, 64};
    for (int s = 0; s < 2 && !bad; s++) {
        for (int w = 0; w < 3 && !bad; w++) {
            const nbTasks tasks = {odd[s], NULL, workers[w]};
            answers *par = fresh();
            bad = run(&d, false, &tasks, 0.25, par) || same(serial, par);
            if (bad) fprintf(stderr, "  with odd scheduler %d, %d workers\n", s, (int)workers[w]);
            done(par);
        }
    }
    done(serial);
    free_data(&d);
    return bad;
}

static int t_blocked_uniform_2d(void)
{
    return against_serial_as(N_BIG, 2, 0, false, 1.5, true);
}
static int t_blocked_uniform_3d(void)
{
    return against_serial_as(N_BIG, 3, 0, false, 1.2, true);
}
static int t_blocked_cluster_filtered_2d(void)
{
    return against_serial_as(N_BIG, 2, 2, true, 1.0, true);
}
static int t_blocked_crowd_falls_back_3d(void) // a block too crowded: the one-pass build
{
    return against_serial_as(30000, 3, 4, false, 1.2, true);
}

// Every pair of g, in order, into *out (reallocated); the count into *n.
static int all_pairs(const nbGrid *g, double r, nbPair **out, int64_t *n)
{
    NB_CHECK_OK(nb_grid_count_pairs(g, r, n));
    free(*out);
    *out = (nbPair *)malloc(sizeof(nbPair) * (size_t)(*n + 1));
    int64_t found = 0;
    NB_CHECK_OK(nb_grid_pairs(g, r, *out, *n, &found));
    NB_CHECK(found == *n);
    return 0;
}

// Neighbour rows (neighbors.h) on 1 to 4 workers and the odd schedulers against serial ones:
// the grid's rows, a list with distances (cross rows too), and a Verlet list over a few steps.
static int rows_same(const nbNeighborRows *a, const nbNeighborRows *b)
{
    NB_CHECK(a->rows == b->rows && a->entries == b->entries);
    NB_CHECK(memcmp(a->offsets, b->offsets, ((size_t)a->rows + 1) * sizeof(int32_t)) == 0);
    NB_CHECK(memcmp(a->neighbors, b->neighbors, (size_t)a->entries * sizeof(int32_t)) == 0);
    NB_CHECK((a->dist2 == NULL) == (b->dist2 == NULL));
    NB_CHECK(a->dist2 == NULL ||
             memcmp(a->dist2, b->dist2, (size_t)a->entries * sizeof(double)) == 0);
    return 0;
}

static int rows_on(const data *d, const nbTasks *tasks, const nbNeighborRows *want,
                   const nbNeighborRows *want_cross, const int32_t *want_off,
                   const int32_t *want_nb)
{
    const double r = 1.5;
    nbGridDesc gd = {.dim = d->dim, .tasks = tasks};
    nbGrid *g = NULL, *h = NULL;
    NB_CHECK_OK(nb_grid_create(&gd, &g));
    NB_CHECK_OK(nb_grid_create(&gd, &h));
    const nbPoints pts = {.data = d->xyz, .count = d->n, .dim = d->dim};
    const nbPoints half = {.data = d->xyz, .count = d->n / 2, .dim = d->dim};
    NB_CHECK_OK(nb_grid_build(g, &pts, r));
    NB_CHECK_OK(nb_grid_build(h, &half, 0.7));
    int32_t *off = malloc(((size_t)d->n + 1) * sizeof(int32_t));
    int32_t *nb = malloc((size_t)want->entries * sizeof(int32_t) + 4);
    int64_t found = 0;
    NB_CHECK(off != NULL && nb != NULL);
    NB_CHECK_OK(nb_grid_neighbor_rows(g, r, off, nb, want->entries, &found));
    NB_CHECK(memcmp(off, want_off, ((size_t)d->n + 1) * sizeof(int32_t)) == 0);
    NB_CHECK(memcmp(nb, want_nb, (size_t)found * sizeof(int32_t)) == 0);
    const nbNeighborListDesc ld = {.tasks = tasks, .distances = true};
    nbNeighborList *l = NULL;
    NB_CHECK_OK(nb_neighbor_list_create(&ld, &l));
    nbNeighborRows rows;
    NB_CHECK_OK(nb_neighbor_list_build(l, g, r));
    NB_CHECK_OK(nb_neighbor_list_rows(l, &rows));
    NB_CHECK(rows_same(&rows, want) == 0);
    NB_CHECK_OK(nb_neighbor_list_build_cross(l, g, h, r));
    NB_CHECK_OK(nb_neighbor_list_rows(l, &rows));
    NB_CHECK(rows_same(&rows, want_cross) == 0);
    nb_neighbor_list_destroy(l);
    nb_grid_destroy(g);
    nb_grid_destroy(h);
    free(off);
    free(nb);
    return 0;
}

static int t_neighbor_rows(void)
{
    data d = make_data(N_BIG, 2, 0);
    const double r = 1.5;
    nbGridDesc gd = {.dim = 2};
    nbGrid *g = NULL, *h = NULL;
    NB_CHECK_OK(nb_grid_create(&gd, &g));
    NB_CHECK_OK(nb_grid_create(&gd, &h));
    const nbPoints pts = {.data = d.xyz, .count = d.n, .dim = 2};
    const nbPoints half = {.data = d.xyz, .count = d.n / 2, .dim = 2};
    NB_CHECK_OK(nb_grid_build(g, &pts, r));
    NB_CHECK_OK(nb_grid_build(h, &half, 0.7));
    const nbNeighborListDesc ld = {.distances = true};
    nbNeighborList *self = NULL, *cross = NULL;
    NB_CHECK_OK(nb_neighbor_list_create(&ld, &self));
    NB_CHECK_OK(nb_neighbor_list_create(&ld, &cross));
    NB_CHECK_OK(nb_neighbor_list_build(self, g, r));
    NB_CHECK_OK(nb_neighbor_list_build_cross(cross, g, h, r));
    nbNeighborRows want, want_cross;
    NB_CHECK_OK(nb_neighbor_list_rows(self, &want));
    NB_CHECK_OK(nb_neighbor_list_rows(cross, &want_cross));
    int bad = 0;
    for (int32_t w = 1; w <= 4 && !bad; w++) {
        nbxPool pool;
        NB_CHECK(nbx_pool_start(&pool, w) == 0);
        const nbTasks tasks = nbx_pool_tasks(&pool);
        bad = rows_on(&d, &tasks, &want, &want_cross, want.offsets, want.neighbors);
        if (bad) fprintf(stderr, "  with %d workers\n", (int)w);
        nbx_pool_stop(&pool);
    }
    nbParallelForFn *odd[2] = {sched_backwards, sched_halves};
    for (int s = 0; s < 2 && !bad; s++) {
        const nbTasks tasks = {odd[s], NULL, 3};
        bad = rows_on(&d, &tasks, &want, &want_cross, want.offsets, want.neighbors);
        if (bad) fprintf(stderr, "  with odd scheduler %d\n", s);
    }
    // A Verlet list on three workers against a serial one, over steps that rebuild and not.
    nbxPool pool;
    NB_CHECK(nbx_pool_start(&pool, 3) == 0);
    const nbTasks tasks = nbx_pool_tasks(&pool);
    nbVerletDesc sd = {.radius = r, .skin = 0.3, .dim = 2, .distances = true}, pd = sd;
    pd.tasks = &tasks;
    nbVerlet *vs = NULL, *vp = NULL;
    NB_CHECK_OK(nb_verlet_create(&sd, &vs));
    NB_CHECK_OK(nb_verlet_create(&pd, &vp));
    for (int step = 0; step < 6 && !bad; step++) {
        for (int32_t i = 0; i < d.n * 2; i++) d.xyz[i] += 0.04 * (nbt_unit() - 0.5);
        bool rs = false, rp = false;
        NB_CHECK_OK(nb_verlet_update(vs, &pts, &rs));
        NB_CHECK_OK(nb_verlet_update(vp, &pts, &rp));
        nbNeighborRows a, b;
        NB_CHECK_OK(nb_verlet_rows(vs, &a));
        NB_CHECK_OK(nb_verlet_rows(vp, &b));
        bad = rs != rp || rows_same(&a, &b);
    }
    nb_verlet_destroy(vs);
    nb_verlet_destroy(vp);
    nbx_pool_stop(&pool);
    nb_neighbor_list_destroy(self);
    nb_neighbor_list_destroy(cross);
    nb_grid_destroy(g);
    nb_grid_destroy(h);
    free_data(&d);
    NB_CHECK(!bad);
    return 0;
}

// Rebuilds of moving points on a scheduler (grid.c's rebuild, each chunk counting under the
// last build's box) against a serial grid: small steps inside the box (two anchors at its corners
// keep it), a NaN (NB_ERR_NOT_FINITE, the grid as it was), then a point thrown far out (a fresh
// build) and back.
static int t_rebuild_steps_2d(void)
{
    data d = make_data(N_BIG, 2, 0);
    const double r = 1.5, half = sqrt((double)N_BIG) / 2;
    for (int a = 0; a < 2; a++) {
        d.xyz[a] = -half;
        d.xyz[2 + a] = half;
    }
    nbxPool pool;
    NB_CHECK(nbx_pool_start(&pool, 3) == 0);
    const nbTasks tasks = nbx_pool_tasks(&pool);
    nbGridDesc sd = {.dim = 2}, pd = {.dim = 2, .tasks = &tasks};
    nbGrid *serial, *par;
    NB_CHECK_OK(nb_grid_create(&sd, &serial));
    NB_CHECK_OK(nb_grid_create(&pd, &par));
    const nbPoints pts = {.data = d.xyz, .count = d.n, .dim = 2};
    nbPair *a = NULL, *b = NULL;
    int64_t na = 0, nb = 0;
    for (int step = 0; step < 8; step++) {
        for (int32_t i = 4; i < 2 * d.n; i++) {
            const double v = d.xyz[i] + nbt_range(-0.1, 0.1);
            d.xyz[i] = v < -half ? -half : v > half ? half : v;
        }
        if (step == 4) { // a NaN in the last chunk: refused, the grid as it was
            const double kept = d.xyz[2 * d.n - 1];
            d.xyz[2 * d.n - 1] = (double)NAN;
            NB_CHECK_STATUS(nb_grid_build(par, &pts, r), NB_ERR_NOT_FINITE);
            NB_CHECK_OK(nb_grid_validate(par));
            NB_CHECK(all_pairs(par, r, &b, &nb) == 0);
            NB_CHECK(na == nb && memcmp(a, b, sizeof(nbPair) * (size_t)na) == 0);
            d.xyz[2 * d.n - 1] = kept;
        }
        const double kept = d.xyz[4];
        if (step == 6) d.xyz[4] = 1e3; // far out: a fresh build, then back at step 7
        NB_CHECK_OK(nb_grid_build(serial, &pts, r));
        NB_CHECK_OK(nb_grid_build(par, &pts, r));
        NB_CHECK_OK(nb_grid_validate(par));
        NB_CHECK(all_pairs(serial, r, &a, &na) == 0 && all_pairs(par, r, &b, &nb) == 0);
        NB_CHECK(na == nb && memcmp(a, b, sizeof(nbPair) * (size_t)na) == 0);
        d.xyz[4] = kept;
    }
    free(a);
    free(b);
    nb_grid_destroy(serial);
    nb_grid_destroy(par);
    nbx_pool_stop(&pool);
    free_data(&d);
    return 0;
}

static int t_scheduler_used_and_negative_workers_refused(void)
{
    data d = make_data(N_BIG, 2, 0);
    const nbTasks tasks = {sched_count, NULL, 2};
    nbGridDesc desc = {.dim = 2, .tasks = &tasks};
    nbGrid *g;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints pts = {.data = d.xyz, .count = d.n, .dim = 2};
    calls = 0;
    NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
    NB_CHECK(calls >= 5); // scan, count, offsets, positions, scatter, gather
    int64_t c;
    calls = 0;
    NB_CHECK_OK(nb_grid_count_pairs(g, 1.0, &c));
    NB_CHECK(calls == 1);
    nb_grid_destroy(g);
    const nbTasks neg = {sched_count, NULL, -1};
    desc.tasks = &neg;
    g = (nbGrid *)&desc;
    NB_CHECK_STATUS(nb_grid_create(&desc, &g), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(g == NULL);
    free_data(&d);
    return 0;
}

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"uniform_2d", t_uniform_2d},
        {"uniform_3d", t_uniform_3d},
        {"lattice_2d", t_lattice_2d},
        {"cluster_filtered_2d", t_cluster_filtered_2d},
        {"small_stays_serial", t_small_stays_serial},
        {"sparse_hashed", t_sparse_hashed},
        {"sparse_ranked", t_sparse_ranked},
        {"sparse_ranked_3d_filtered", t_sparse_ranked_3d_filtered},
        {"sparse_ranked_crowded", t_sparse_ranked_crowded},
        {"blocked_uniform_2d", t_blocked_uniform_2d},
        {"blocked_uniform_3d", t_blocked_uniform_3d},
        {"blocked_cluster_filtered_2d", t_blocked_cluster_filtered_2d},
        {"blocked_crowd_falls_back_3d", t_blocked_crowd_falls_back_3d},
        {"periodic_3d_filtered", t_periodic_3d_filtered},
        {"rebuild_steps_2d", t_rebuild_steps_2d},
        {"neighbor_rows", t_neighbor_rows},
        {"scheduler_used_and_negative_workers_refused",
         t_scheduler_used_and_negative_workers_refused},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
