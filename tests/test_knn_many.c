// SPDX-License-Identifier: MIT
// The k nearest of many queries at once (nb_grid_knn_many) against brute force: the grid's own
// points and outside queries, every layout (dense, ranked, hashed), 2D and 3D, periodic boxes,
// filters, max_distance, k past the points, lattices whose neighbours tie, duplicates and
// clusters; and the answers identical to nb_grid_knn's, entry by entry.
#include "nb_oracle.h"
#include "nb_test.h"

#include <nearby/grid.h>

#include <math.h>
#if defined(NBT_THREADS)
#include "nb_pthreads.h"

#include <pthread.h>
#endif

// The data sets.
enum { UNIFORM, LATTICE, DUPLICATES, CLUSTERS, FARFLUNG, CLUMP_WRAP, SETS };

static nboSet make_set(int kind, int32_t n, int dim, double box)
{
    nboSet s = nbo_set_new(n, dim);
    const int32_t side = dim == 2 ? (int32_t)sqrt((double)n) + 1 : (int32_t)cbrt((double)n) + 1;
    for (int32_t i = 0; i < n; i++) {
        double *p = s.p + (size_t)i * (size_t)dim;
        for (int a = 0; a < dim; a++) {
            double x;
            switch (kind) {
            case LATTICE: { // integer points: many neighbours at equal distances
                int32_t r = i;
                for (int b = 0; b < a; b++) r /= side;
                x = (double)(r % side) * box / (double)side;
                break;
            }
            case DUPLICATES: // a few distinct points, each many times
                x = (double)((i * 7 + a * 3) % 13) * box / 13.0;
                break;
            case CLUSTERS: // tight clusters and a sparse halo
                x = i % 5 == 0 ? nbt_range(0.0, box)
                               : box * (0.2 + 0.3 * (double)(i % 3)) + 0.01 * box * nbt_gauss();
                break;
            case FARFLUNG: // small clusters scattered over a huge box: the hashed layout
                x = (double)(i % 7) * 1e6 * box + (double)(i % 2) * 3e5 + nbt_range(0.0, box);
                break;
            case CLUMP_WRAP: { // a clump across the corner of a periodic box
                x = 0.02 * box * nbt_gauss();
                x = x < 0.0 ? x + box : x;
                break;
            }
            default: x = nbt_range(0.0, box);
            }
            if (x < 0.0) x = 0.0;
            if (x >= box && kind != FARFLUNG) x = 0.0;
            p[a] = x;
        }
    }
    return s;
}

// The min(k, qualifying) nearest of q by brute force (within max_distance, filtered; by the
// minimum image with a period).
static nbNeighbor *brute(const nboSet *s, const double *q, int32_t k, nbFilter f, double maxd,
                         const double *period, int32_t *count)
{
    nbNeighbor *all = (nbNeighbor *)nbo_xalloc((size_t)s->n * sizeof(nbNeighbor));
    int32_t n = 0;
    for (int32_t p = 0; p < s->n; p++) {
        const double d2 = period != NULL ? nbo_wrap_d2(q, nbo_pt(s, p), s->dim, period)
                                         : nbo_d2(q, nbo_pt(s, p), s->dim);
        if (nbo_filter_passes(s, p, f) && d2 <= maxd * maxd) {
            all[n].index = p;
            all[n].dist2 = d2;
            n++;
        }
    }
    *count = nbo_select_neighbors(all, n, k);
    return all;
}

typedef struct Case {
    int kind, dim;
    int32_t n, k;
    double cell; // the grid's cell edge (0: the build radius's)
    bool periodic, filtered, outside;
    double maxd;
} Case;

// Builds the case's grid, answers it both ways and against brute force. The layout the grid
// took goes to *layout (0 dense, 1 ranked, 2 hashed).
static int run_case(const Case *c, int *layout)
{
    const double box = 10.0;
    nboSet s = make_set(c->kind, c->n, c->dim, box);
    if (c->filtered) {
        nbo_set_add_filters(&s);
        for (int32_t i = 0; i < s.n; i++) {
            s.cat[i] = 1u << (i % 3);
            s.mask[i] = i % 5 == 0 ? 0u : ~0u;
        }
    }
    const double period[3] = {box, box, c->dim == 3 ? box : 0.0};
    nbGridDesc desc = {0};
    desc.dim = c->dim;
    desc.cell_size = c->cell;
    if (c->periodic) memcpy(desc.period, period, sizeof period);
    nbGrid *g = NULL;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    nbPoints pts = nbo_points(&s);
    NB_CHECK_OK(nb_grid_build(g, &pts, c->periodic ? 0.5 : 1.0));
    nbGridInfo info;
    NB_CHECK_OK(nb_grid_info(g, &info));
    *layout = info.ranked ? 1 : info.hashed ? 2 : 0;
    const nbFilter f = c->filtered ? (nbFilter){0x3u, ~0u} : NB_FILTER_ALL;

    // The queries: the grid's own points, or points all over (and beyond) the box.
    const int32_t m = c->outside ? 200 : s.n;
    double *qs = NULL;
    if (c->outside) {
        qs = (double *)nbo_xalloc((size_t)m * 3 * sizeof(double));
        for (int32_t i = 0; i < m; i++)
            for (int a = 0; a < 3; a++) {
                double x = i % 3 == 0 ? nbo_pt(&s, nbt_int(s.n))[a % c->dim] + 0.1 * nbt_gauss()
                                      : nbt_range(-0.2 * box, 1.2 * box);
                if (c->periodic) x = x - box * floor(x / box);
                if (x >= box) x = 0.0;
                qs[(size_t)i * 3 + (size_t)a] = x;
            }
    }
    nbPoints qv = {qs, m, c->dim, 3 * sizeof(double), NULL, 0, NULL, 0};
    const int32_t k = c->k;
    nbNeighbor *out = (nbNeighbor *)nbo_xalloc((size_t)m * (size_t)k * sizeof(nbNeighbor) + 1);
    int32_t *found = (int32_t *)nbo_xalloc((size_t)m * sizeof(int32_t));
    nbNeighbor *one = (nbNeighbor *)nbo_xalloc((size_t)k * sizeof(nbNeighbor) + 1);
    NB_CHECK_OK(nb_grid_knn_many(g, c->outside ? &qv : NULL, f, c->maxd, out, k, found));
    for (int32_t i = 0; i < m; i++) {
        const double *q = c->outside ? qs + (size_t)i * 3 : nbo_pt(&s, i);
        int32_t want = 0, got1 = -1;
        nbNeighbor *all = brute(&s, q, k, f, c->maxd, c->periodic ? period : NULL, &want);
        const nbNeighbor *row = out + (size_t)i * (size_t)k;
        if (!nbo_same_neighbors(row, found[i], all, want)) {
            fprintf(stderr, "query %d (%g %g %g): found %d, want %d\n", (int)i, q[0], q[1],
                    c->dim == 3 ? q[2] : 0.0, (int)found[i], (int)want);
            NB_CHECK(false);
        }
        NB_CHECK_OK(nb_grid_knn(g, q, f, c->maxd, one, k, &got1));
        NB_CHECK(nbo_same_neighbors(row, found[i], one, got1));
        free(all);
    }
    free(one);
    free(found);
    free(out);
    free(qs);
    nb_grid_destroy(g);
    nbo_set_free(&s);
    return 0;
}

static int test_against_brute_force(void)
{
    const double inf = (double)INFINITY;
    int seen[3] = {0, 0, 0};
    for (int dim = 2; dim <= 3; dim++)
        for (int kind = 0; kind < SETS; kind++)
            for (int variant = 0; variant < 6; variant++) {
                const bool periodic = kind == CLUMP_WRAP || (kind == UNIFORM && variant >= 4);
                if (kind == FARFLUNG && periodic) continue;
                Case c = {kind, dim, dim == 2 ? 500 : 400, 8, 0.0, periodic, false, false, inf};
                switch (variant) {
                case 1: c.k = 1; break;
                case 2:
                    c.k = 33;
                    c.outside = true;
                    break;
                case 3:
                    c.filtered = true;
                    c.maxd = 0.6;
                    break;
                case 4:
                    c.outside = true;
                    c.cell = 0.3;
                    break;
                case 5:
                    c.k = 20;
                    c.cell = 0.04;
                    c.filtered = kind % 2 == 0;
                    break;
                default: break;
                }
                int layout = 0;
                if (run_case(&c, &layout) != 0) {
                    fprintf(stderr, "dim %d, set %d, variant %d\n", dim, kind, variant);
                    return 1;
                }
                seen[layout]++;
            }
    NB_CHECK(seen[0] > 0 && seen[1] > 0 && seen[2] > 0); // every layout met
    return 0;
}

// k past the points, a handful of points, every point the same.
static int test_small_and_degenerate(void)
{
    for (int dim = 2; dim <= 3; dim++)
        for (int32_t n = 1; n <= 40; n += 13) {
            Case c = {DUPLICATES, dim, n, n + 5, 0.0, false, false, false, (double)INFINITY};
            int layout;
            NB_CHECK(run_case(&c, &layout) == 0);
            c.kind = UNIFORM;
            c.outside = true;
            NB_CHECK(run_case(&c, &layout) == 0);
            c.periodic = true;
            NB_CHECK(run_case(&c, &layout) == 0);
        }
    return 0;
}

#if defined(NBT_THREADS)
enum { THREADS = 4, TN = 3000, TK = 8 };

typedef struct Job {
    const nbGrid *g;
    const nboSet *s;
    bool own;
    nbNeighbor *out;
    int32_t *found;
    nbStatus st;
} Job;

static void *job_main(void *arg)
{
    Job *j = (Job *)arg;
    const nbPoints q = nbo_points(j->s);
    j->st = nb_grid_knn_many(j->g, j->own ? NULL : &q, NB_FILTER_ALL, (double)INFINITY, j->out, TK,
                             j->found);
    return NULL;
}

// Threads calling it at once on one freshly built grid (whose kNN index the queries that do not
// certify may build meanwhile): each the answers of a serial call on a twin grid.
static int test_threads(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        nboSet s = make_set(CLUSTERS, TN, dim, 10.0);
        nbGridDesc desc = {0};
        desc.dim = dim;
        nbGrid *g = NULL, *twin = NULL;
        NB_CHECK_OK(nb_grid_create(&desc, &g));
        NB_CHECK_OK(nb_grid_create(&desc, &twin));
        const nbPoints pts = nbo_points(&s);
        NB_CHECK_OK(nb_grid_build(g, &pts, 0.3));
        NB_CHECK_OK(nb_grid_build(twin, &pts, 0.3));
        const size_t rows = (size_t)TN * TK;
        nbNeighbor *want = (nbNeighbor *)nbo_xalloc(rows * sizeof(nbNeighbor));
        int32_t *want_found = (int32_t *)nbo_xalloc((size_t)TN * sizeof(int32_t));
        NB_CHECK_OK(
            nb_grid_knn_many(twin, NULL, NB_FILTER_ALL, (double)INFINITY, want, TK, want_found));
        Job jobs[THREADS];
        pthread_t th[THREADS];
        for (int t = 0; t < THREADS; t++) {
            jobs[t] = (Job){g, &s, t % 2 == 0, NULL, NULL, NB_ERR_INTERNAL};
            jobs[t].out = (nbNeighbor *)nbo_xalloc(rows * sizeof(nbNeighbor));
            jobs[t].found = (int32_t *)nbo_xalloc((size_t)TN * sizeof(int32_t));
            NB_CHECK(pthread_create(&th[t], NULL, job_main, &jobs[t]) == 0);
        }
        for (int t = 0; t < THREADS; t++) NB_CHECK(pthread_join(th[t], NULL) == 0);
        for (int t = 0; t < THREADS; t++) {
            NB_CHECK_OK(jobs[t].st);
            for (int32_t i = 0; i < TN; i++)
                NB_CHECK(nbo_same_neighbors(jobs[t].out + (size_t)i * TK, jobs[t].found[i],
                                            want + (size_t)i * TK, want_found[i]));
            free(jobs[t].out);
            free(jobs[t].found);
        }
        free(want);
        free(want_found);
        nb_grid_destroy(g);
        nb_grid_destroy(twin);
        nbo_set_free(&s);
    }
    return 0;
}

// On the grid's scheduler (desc.tasks, three workers): the answers of a serial twin, own points
// and a view of queries, 2D, 3D and a periodic box.
static int test_scheduler(void)
{
    nbxPool pool;
    NB_CHECK(nbx_pool_start(&pool, 3) == 0);
    const nbTasks tasks = nbx_pool_tasks(&pool);
    for (int dim = 2; dim <= 3; dim++)
        for (int periodic = 0; periodic < 2; periodic++) {
            const int32_t n = 4400; // (past the 4096 queries that run on the workers)
            nboSet s = make_set(periodic ? CLUMP_WRAP : CLUSTERS, n, dim, 10.0);
            nbGridDesc desc = {0};
            desc.dim = dim;
            if (periodic)
                for (int a = 0; a < dim; a++) desc.period[a] = 10.0;
            nbGrid *serial = NULL, *g = NULL;
            NB_CHECK_OK(nb_grid_create(&desc, &serial));
            desc.tasks = &tasks;
            NB_CHECK_OK(nb_grid_create(&desc, &g));
            const nbPoints pts = nbo_points(&s);
            NB_CHECK_OK(nb_grid_build(serial, &pts, 0.2));
            NB_CHECK_OK(nb_grid_build(g, &pts, 0.2));
            const size_t rows = (size_t)n * TK;
            nbNeighbor *want = (nbNeighbor *)nbo_xalloc(rows * sizeof(nbNeighbor));
            nbNeighbor *got = (nbNeighbor *)nbo_xalloc(rows * sizeof(nbNeighbor));
            int32_t *fw = (int32_t *)nbo_xalloc((size_t)n * sizeof(int32_t));
            int32_t *fg = (int32_t *)nbo_xalloc((size_t)n * sizeof(int32_t));
            for (int own = 0; own < 2; own++) {
                const nbPoints *q = own ? NULL : &pts;
                NB_CHECK_OK(
                    nb_grid_knn_many(serial, q, NB_FILTER_ALL, (double)INFINITY, want, TK, fw));
                NB_CHECK_OK(nb_grid_knn_many(g, q, NB_FILTER_ALL, (double)INFINITY, got, TK, fg));
                for (int32_t i = 0; i < n; i++)
                    NB_CHECK(nbo_same_neighbors(got + (size_t)i * TK, fg[i], want + (size_t)i * TK,
                                                fw[i]));
            }
            free(want);
            free(got);
            free(fw);
            free(fg);
            nb_grid_destroy(serial);
            nb_grid_destroy(g);
            nbo_set_free(&s);
        }
    nbx_pool_stop(&pool);
    return 0;
}
#endif

int main(int argc, char **argv)
{
    static const nbtCase cases[] = {
        {"against_brute_force", test_against_brute_force},
        {"small_and_degenerate", test_small_and_degenerate},
#if defined(NBT_THREADS)
        {"threads", test_threads},
        {"scheduler", test_scheduler},
#endif
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
