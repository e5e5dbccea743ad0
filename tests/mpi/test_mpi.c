// SPDX-License-Identifier: MIT
// nearby_mpi against the single-process grid and brute force, run by ctest on 1, 2, 3 and 4
// ranks (tests/mpi/mpirun.sh). Every rank builds the same global point set from the same seed
// and passes its own slice (round robin, blocks, none on some ranks, all on one). Checked on
// every case:
//   - pairs: the union of all ranks' pairs, gathered to rank 0 and sorted, is exactly the
//     single-process nb_grid_pairs answer (ids for indices), which is itself checked against
//     brute force; no pair appears twice (so no pair is on two ranks); i < j everywhere;
//     nb_mpi_count_pairs' local and global counts, nb_mpi_pairs and nb_mpi_visit_pairs agree
//     (same pairs in the same order), BUFFER_TOO_SMALL with the full count;
//   - ownership: the owned counts sum to the total; with N no larger than the sample (every
//     point sampled) the bricks balance to within a few points per rank;
//   - radius queries: centres on every rank (random, on points, outside the data, different r
//     per rank) against brute force, in the asker's order, ascending ids;
//   - determinism: a second create gives every rank the same pairs in the same order.
// Cases: uniform, clustered, all points in one place (one brick), ranks with no points,
// nobody with points, points exactly on the bricks' faces and pairs exactly r apart straddling
// them (walls of points built on the decomposition's own cuts, read back with nb_mpi_stats),
// 2D and 3D, periodic (all axes, one axis, r = P / 2, pairs across the box faces); bad input
// on one rank only (every rank must return the same status: a hang would be a ctest TIMEOUT);
// a failing-allocator sweep on one rank over create and query_radius.
// A failed check calls MPI_Abort: a rank returning early would leave the others waiting.
#include <nearby/grid.h>
#include <nearby/mpi.h>

#include "nb_oracle.h"
#include "nb_test.h"

#include <math.h>

static int g_rank, g_size;
// Every index of the tests allocates through this counting allocator (check_set checks that
// nothing is left): nearby_mpi's leak check, LeakSanitizer being off under mpirun.
static nbtAlloc g_count;
static nbAllocator g_alloc;

#define MPI_CHECK(c)                                                                               \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: rank %d of %d: %s: check failed: %s\n", __FILE__, __LINE__,    \
                    g_rank, g_size, nbt_name, #c);                                                 \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)
#define MPI_CHECK_STATUS(expr, want)                                                               \
    do {                                                                                           \
        nbStatus st_ = (expr);                                                                     \
        if (st_ != (want)) {                                                                       \
            fprintf(stderr, "%s:%d: rank %d of %d: %s: %s returned %s, expected %s\n", __FILE__,   \
                    __LINE__, g_rank, g_size, nbt_name, #expr, nb_status_str(st_),                 \
                    nb_status_str(want));                                                          \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

// The global point set every rank builds, and how it is dealt to ranks.
typedef enum { DEAL_ROUND_ROBIN, DEAL_BLOCKS, DEAL_NOT_RANK0, DEAL_LAST_ONLY } Deal;

typedef struct Set {
    nboSet s;    // the global points (every rank has all of them)
    int64_t *id; // global ids: 3 i - 1000 (ascending in i, negatives included)
    double period[3];
    double r;
} Set;

static int64_t id_of(int32_t i)
{
    return 3 * (int64_t)i - 1000;
}

static Set set_new(int32_t n, int dim, double r)
{
    Set t;
    memset(&t, 0, sizeof(t));
    t.s = nbo_set_new(n, dim);
    t.id = (int64_t *)nbo_xalloc((size_t)n * sizeof(int64_t) + 8);
    for (int32_t i = 0; i < n; i++) t.id[i] = id_of(i);
    t.r = r;
    return t;
}

static void set_free(Set *t)
{
    nbo_set_free(&t->s);
    free(t->id);
}

// Appends m zeroed points (the caller fills them).
static double *set_grow(Set *t, int32_t m)
{
    const int32_t n = t->s.n, dim = t->s.dim;
    double *p = (double *)realloc(t->s.p, ((size_t)(n + m) * (size_t)dim + 3) * sizeof(double));
    int64_t *id = (int64_t *)realloc(t->id, (size_t)(n + m) * sizeof(int64_t) + 8);
    if (p == NULL || id == NULL) abort();
    memset(p + (size_t)n * (size_t)dim, 0, (size_t)m * (size_t)dim * sizeof(double));
    t->s.p = p;
    t->id = id;
    for (int32_t i = n; i < n + m; i++) t->id[i] = id_of(i);
    t->s.n = n + m;
    return p + (size_t)n * (size_t)dim;
}

static bool mine(Deal deal, int32_t i, int32_t n)
{
    switch (deal) {
    case DEAL_ROUND_ROBIN: return i % g_size == g_rank;
    case DEAL_BLOCKS: return (int64_t)i * g_size / (n > 0 ? n : 1) == g_rank;
    case DEAL_NOT_RANK0:
        if (g_size == 1) return true;
        return g_rank != 0 && i % (g_size - 1) == g_rank - 1;
    case DEAL_LAST_ONLY: return g_rank == g_size - 1;
    }
    return false;
}

// This rank's slice of the set (coordinates and ids), malloc'ed.
static size_t slice(const Set *t, Deal deal, double **xyz, int64_t **ids)
{
    const int dim = t->s.dim;
    *xyz = (double *)nbo_xalloc((size_t)t->s.n * (size_t)dim * sizeof(double) + 8);
    *ids = (int64_t *)nbo_xalloc((size_t)t->s.n * sizeof(int64_t) + 8);
    size_t n = 0;
    for (int32_t i = 0; i < t->s.n; i++) {
        if (!mine(deal, i, t->s.n)) continue;
        memcpy(*xyz + n * (size_t)dim, nbo_pt(&t->s, i), (size_t)dim * sizeof(double));
        (*ids)[n++] = t->id[i];
    }
    return n;
}

static nbMpiDesc desc_of(const Set *t)
{
    nbMpiDesc d;
    memset(&d, 0, sizeof(d));
    d.comm = MPI_COMM_WORLD;
    d.dim = t->s.dim;
    d.radius = t->r;
    for (int a = 0; a < 3; a++) d.period[a] = t->period[a];
    d.allocator = &g_alloc;
    return d;
}

static nbMpi *create(const Set *t, Deal deal)
{
    double *xyz;
    int64_t *ids;
    const size_t n = slice(t, deal, &xyz, &ids);
    nbMpiDesc d = desc_of(t);
    nbMpi *m = NULL;
    MPI_CHECK_STATUS(nb_mpi_create(&d, xyz, ids, n, &m), NB_OK);
    MPI_CHECK(m != NULL);
    free(xyz);
    free(ids);
    return m;
}

static int cmp_mpair(const void *pa, const void *pb)
{
    const nbMpiPair *a = (const nbMpiPair *)pa, *b = (const nbMpiPair *)pb;
    if (a->i != b->i) return (a->i > b->i) - (a->i < b->i);
    return (a->j > b->j) - (a->j < b->j);
}

typedef struct PairLog {
    nbMpiPair *p;
    size_t n, cap;
} PairLog;

static bool log_pair(int64_t i, int64_t j, void *user)
{
    PairLog *l = (PairLog *)user;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->p = (nbMpiPair *)realloc(l->p, l->cap * sizeof(nbMpiPair));
        if (l->p == NULL) abort();
    }
    l->p[l->n].i = i;
    l->p[l->n].j = j;
    l->n++;
    return true;
}

// This rank's pairs through nb_mpi_pairs, checked against count_pairs and visit_pairs.
static nbMpiPair *rank_pairs(nbMpi *m, size_t *count)
{
    uint64_t local = 0, global = 0;
    MPI_CHECK_STATUS(nb_mpi_count_pairs(m, &local, &global), NB_OK);
    uint64_t sum = 0;
    MPI_Allreduce(&local, &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_CHECK(sum == global);
    nbMpiPair *p = (nbMpiPair *)nbo_xalloc((size_t)local * sizeof(nbMpiPair) + 16);
    size_t found = 0;
    if (local > 0) {
        MPI_CHECK_STATUS(nb_mpi_pairs(m, p, (size_t)local - 1, &found), NB_ERR_BUFFER_TOO_SMALL);
        MPI_CHECK(found == local);
    }
    MPI_CHECK_STATUS(nb_mpi_pairs(m, p, (size_t)local, &found), NB_OK);
    MPI_CHECK(found == local);
    PairLog l = {NULL, 0, 0};
    MPI_CHECK_STATUS(nb_mpi_visit_pairs(m, log_pair, &l), NB_OK);
    MPI_CHECK(l.n == found);
    MPI_CHECK(found == 0 || memcmp(l.p, p, found * sizeof(nbMpiPair)) == 0);
    free(l.p);
    for (size_t k = 0; k < found; k++) MPI_CHECK(p[k].i < p[k].j);
    *count = found;
    return p;
}

// The reference on rank 0: the single-process grid's pairs as ids, sorted, checked against
// brute force.
static nbMpiPair *reference_pairs(const Set *t, size_t *count)
{
    nbGridDesc gd;
    memset(&gd, 0, sizeof(gd));
    gd.dim = t->s.dim;
    for (int a = 0; a < 3; a++) gd.period[a] = t->period[a];
    nbGrid *g = NULL;
    MPI_CHECK_STATUS(nb_grid_create(&gd, &g), NB_OK);
    MPI_CHECK_STATUS(
        nb_grid_build(g, &(nbPoints){t->s.p, t->s.n, t->s.dim, 0, NULL, 0, NULL, 0}, t->r), NB_OK);
    int64_t n = 0;
    MPI_CHECK_STATUS(nb_grid_count_pairs(g, t->r, &n), NB_OK);
    nbPair *gp = (nbPair *)nbo_xalloc((size_t)n * sizeof(nbPair) + 16);
    int64_t found = 0;
    MPI_CHECK_STATUS(nb_grid_pairs(g, t->r, gp, n, &found), NB_OK);
    nb_grid_destroy(g);
    nbo_sort_pairs(gp, n);
    int64_t bn = 0;
    nbPair *bp = t->period[0] > 0 || t->period[1] > 0 || t->period[2] > 0
                     ? nbo_wrap_pairs(&t->s, t->r, t->period, &bn)
                     : nbo_pairs(&t->s, t->r, &bn);
    MPI_CHECK(nbo_same_pairs(gp, n, bp, bn));
    free(bp);
    nbMpiPair *p = (nbMpiPair *)nbo_xalloc((size_t)n * sizeof(nbMpiPair) + 16);
    for (int64_t k = 0; k < n; k++) {
        p[k].i = t->id[gp[k].i]; // ids ascend with indices, and i < j
        p[k].j = t->id[gp[k].j];
    }
    free(gp);
    qsort(p, (size_t)n, sizeof(nbMpiPair), cmp_mpair);
    *count = (size_t)n;
    return p;
}

// Gathers every rank's pairs to rank 0 and compares their union with the reference.
static void check_union(const Set *t, const nbMpiPair *p, size_t n)
{
    int mine_bytes = (int)(n * sizeof(nbMpiPair));
    int *counts = (int *)nbo_xalloc((size_t)g_size * sizeof(int));
    int *displ = (int *)nbo_xalloc((size_t)g_size * sizeof(int));
    MPI_Gather(&mine_bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t total = 0;
    if (g_rank == 0)
        for (int k = 0; k < g_size; k++) {
            displ[k] = (int)total;
            total += (size_t)counts[k];
        }
    nbMpiPair *all = (nbMpiPair *)nbo_xalloc(total + 16);
    MPI_Gatherv(p, mine_bytes, MPI_BYTE, all, counts, displ, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (g_rank == 0) {
        const size_t na = total / sizeof(nbMpiPair);
        qsort(all, na, sizeof(nbMpiPair), cmp_mpair);
        for (size_t k = 1; k < na; k++) // no pair twice: not on two ranks, not twice on one
            MPI_CHECK(cmp_mpair(&all[k - 1], &all[k]) < 0);
        size_t nr = 0;
        nbMpiPair *ref = reference_pairs(t, &nr);
        if (na != nr)
            fprintf(stderr, "%s: %zu pairs over all ranks, the grid finds %zu\n", nbt_name, na, nr);
        MPI_CHECK(na == nr);
        MPI_CHECK(nr == 0 || memcmp(all, ref, nr * sizeof(nbMpiPair)) == 0);
        free(ref);
    }
    free(all);
    free(counts);
    free(displ);
}

// Owned counts sum to N; with every point sampled the bricks hold within `slack` points of an
// even share (ties at a cut can only move whole runs of equal coordinates: slack covers them).
static void check_owned(nbMpi *m, const Set *t, double max_over_mean)
{
    nbMpiStats st;
    MPI_CHECK_STATUS(nb_mpi_stats(m, &st), NB_OK);
    MPI_CHECK(st.rank == g_rank && st.size == g_size);
    MPI_CHECK(st.total == (uint64_t)t->s.n);
    uint64_t owned = st.owned, sum = 0, mx = 0;
    MPI_Allreduce(&owned, &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&owned, &mx, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    MPI_CHECK(sum == (uint64_t)t->s.n);
    if (max_over_mean > 0 && t->s.n >= 100 * g_size) {
        const double mean = (double)sum / g_size;
        if ((double)mx > max_over_mean * mean)
            fprintf(stderr, "%s: max owned %llu, mean %.1f\n", nbt_name, (unsigned long long)mx,
                    mean);
        MPI_CHECK((double)mx <= max_over_mean * mean);
    }
    for (int a = 0; a < t->s.dim; a++) MPI_CHECK(st.lo[a] <= st.hi[a]);
}

// Radius queries from every rank: nq centres (random in and around the data, some exactly on
// points), r varying by rank, against brute force on the whole set.
static void check_queries(nbMpi *m, const Set *t, int32_t nq)
{
    const int dim = t->s.dim;
    const bool periodic = t->period[0] > 0 || t->period[1] > 0 || t->period[2] > 0;
    double r = t->r * (0.5 + 0.5 * g_rank); // rank 1: the pairs' r (P / 2 in one case)
    for (int a = 0; a < dim; a++)
        if (t->period[a] > 0 && r > t->period[a] / 2) r = t->period[a] / 2;
    double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    for (int32_t i = 0; i < t->s.n; i++)
        for (int a = 0; a < dim; a++) {
            lo[a] = fmin(lo[a], nbo_pt(&t->s, i)[a]);
            hi[a] = fmax(hi[a], nbo_pt(&t->s, i)[a]);
        }
    double *c = (double *)nbo_xalloc((size_t)nq * (size_t)dim * sizeof(double) + 8);
    for (int32_t q = 0; q < nq; q++)
        for (int a = 0; a < dim; a++) {
            double v;
            if (t->period[a] > 0) {
                v = nbt_range(0, t->period[a]);
            } else {
                const double w = hi[a] - lo[a];
                v = nbt_range(lo[a] - 0.2 * w, hi[a] + 0.2 * w);
            }
            c[(size_t)q * (size_t)dim + (size_t)a] = v;
        }
    // every third centre exactly on a point
    for (int32_t q = 0; q < nq && t->s.n > 0; q += 3)
        memcpy(c + (size_t)q * (size_t)dim, nbo_pt(&t->s, nbt_int(t->s.n)),
               (size_t)dim * sizeof(double));
    size_t *off = NULL;
    int64_t *ids = NULL;
    MPI_CHECK_STATUS(nb_mpi_query_radius(m, c, (size_t)nq, r, &off, &ids), NB_OK);
    MPI_CHECK(off != NULL && ids != NULL && off[0] == 0);
    for (int32_t q = 0; q < nq; q++) {
        int32_t bn = 0;
        int32_t *b = periodic
                         ? nbo_wrap_radius(&t->s, c + (size_t)q * (size_t)dim, r, t->period, &bn)
                         : nbo_radius(&t->s, c + (size_t)q * (size_t)dim, r, &bn);
        MPI_CHECK(off[q + 1] - off[q] == (size_t)bn);
        for (int32_t k = 0; k < bn; k++) MPI_CHECK(ids[off[q] + (size_t)k] == t->id[b[k]]);
        free(b);
    }
    nb_mpi_free(m, off);
    nb_mpi_free(m, ids);
    free(c);
}

// The whole check on one set and deal: pairs, ownership, queries, determinism.
static void check_set(const Set *t, Deal deal, double balance)
{
    nbMpi *m = create(t, deal);
    size_t n = 0;
    nbMpiPair *p = rank_pairs(m, &n);
    check_union(t, p, n);
    check_owned(m, t, balance);
    check_queries(m, t, 40);
    nb_mpi_destroy(m);
    // Determinism: the same pairs in the same order on every rank.
    nbMpi *m2 = create(t, deal);
    size_t n2 = 0;
    nbMpiPair *p2 = rank_pairs(m2, &n2);
    MPI_CHECK(n2 == n && (n == 0 || memcmp(p, p2, n * sizeof(nbMpiPair)) == 0));
    nb_mpi_destroy(m2);
    free(p);
    free(p2);
    MPI_CHECK(g_count.live_bytes == 0 && !g_count.size_mismatch && !g_count.misaligned);
}

static void fill_uniform(Set *t, double lo, double hi)
{
    for (int32_t i = 0; i < t->s.n; i++)
        for (int a = 0; a < t->s.dim; a++)
            t->s.p[(size_t)i * (size_t)t->s.dim + (size_t)a] =
                t->period[a] > 0 ? nbt_range(0, t->period[a]) : nbt_range(lo, hi);
}

// ---- cases ----

static int uniform_2d(void)
{
    Set t = set_new(3000, 2, 0.04);
    fill_uniform(&t, 0, 1);
    check_set(&t, DEAL_ROUND_ROBIN, 1.02);
    set_free(&t);
    return 0;
}

static int uniform_3d(void)
{
    Set t = set_new(3000, 3, 0.09);
    fill_uniform(&t, -5, -3);                                    // negative coordinates
    for (int32_t i = 0; i < t.s.n; i++) t.s.p[3 * i + 1] *= 0.5; // a box wider in x
    check_set(&t, DEAL_BLOCKS, 1.02);
    set_free(&t);
    return 0;
}

// Gaussian clusters of different sizes with duplicated points; one rank has none.
static int clustered(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        Set t = set_new(4000, dim, dim == 2 ? 0.01 : 0.03);
        double centre[5][3];
        for (int c = 0; c < 5; c++)
            for (int a = 0; a < 3; a++) centre[c][a] = nbt_range(0, 10);
        for (int32_t i = 0; i < t.s.n; i++) {
            const int c = i % 10 < 6 ? 0 : i % 5; // one cluster holds most points
            for (int a = 0; a < dim; a++)
                t.s.p[(size_t)i * (size_t)dim + (size_t)a] =
                    centre[c][a] + (c == 0 ? 0.05 : 0.5) * nbt_gauss();
            if (i % 50 == 49) // duplicates of an earlier point
                memcpy(t.s.p + (size_t)i * (size_t)dim, t.s.p + (size_t)(i - 7) * (size_t)dim,
                       (size_t)dim * sizeof(double));
        }
        check_set(&t, DEAL_NOT_RANK0, 1.05);
        set_free(&t);
    }
    return 0;
}

// Every point at one place: one brick owns them all; every pair is within r.
static int one_brick(void)
{
    Set t = set_new(300, 2, 0.1);
    for (int32_t i = 0; i < t.s.n; i++) {
        t.s.p[2 * i] = 0.25;
        t.s.p[2 * i + 1] = -7.5;
    }
    check_set(&t, DEAL_ROUND_ROBIN, 0);
    nbMpi *m = create(&t, DEAL_ROUND_ROBIN);
    nbMpiStats st;
    MPI_CHECK_STATUS(nb_mpi_stats(m, &st), NB_OK);
    uint64_t owned = st.owned, mx = 0;
    MPI_Allreduce(&owned, &mx, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    MPI_CHECK(mx == (uint64_t)t.s.n);
    nb_mpi_destroy(m);
    set_free(&t);
    return 0;
}

// Fewer points than ranks, nobody with points, everything on the last rank.
static int few_points(void)
{
    Set t = set_new(3, 3, 0.5);
    fill_uniform(&t, 0, 1);
    check_set(&t, DEAL_ROUND_ROBIN, 0);
    check_set(&t, DEAL_LAST_ONLY, 0);
    set_free(&t);
    Set e = set_new(0, 2, 1.0);
    check_set(&e, DEAL_ROUND_ROBIN, 0);
    set_free(&e);
    Set u = set_new(500, 2, 0.05);
    fill_uniform(&u, 0, 1);
    check_set(&u, DEAL_LAST_ONLY, 1.02);
    set_free(&u);
    // r = 0: only coincident points pair (a third of the points are copies)
    Set z = set_new(900, 3, 0.0);
    fill_uniform(&z, 0, 1);
    for (int32_t i = 2; i < z.s.n; i += 3)
        memcpy(z.s.p + 3 * (size_t)i, z.s.p + 3 * (size_t)(i - 2), 3 * sizeof(double));
    check_set(&z, DEAL_BLOCKS, 1.05);
    set_free(&z);
    return 0;
}

// A lower face of a brick inside the root box: its axis and value, and the brick's extent.
typedef struct Face {
    int axis;
    double value;
    double lo[3], hi[3];
} Face;

// The interior faces of the current decomposition (from every rank's nb_mpi_stats): every
// brick's lower face that is not the root box's. Returns how many (at most 3 * size).
static int faces(nbMpi *m, int dim, Face *out)
{
    nbMpiStats st;
    MPI_CHECK_STATUS(nb_mpi_stats(m, &st), NB_OK);
    double *lo = (double *)nbo_xalloc((size_t)g_size * 3 * sizeof(double));
    double *hi = (double *)nbo_xalloc((size_t)g_size * 3 * sizeof(double));
    MPI_Allgather(st.lo, 3, MPI_DOUBLE, lo, 3, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Allgather(st.hi, 3, MPI_DOUBLE, hi, 3, MPI_DOUBLE, MPI_COMM_WORLD);
    double root[3] = {(double)INFINITY, (double)INFINITY, (double)INFINITY};
    for (int k = 0; k < g_size; k++)
        for (int a = 0; a < dim; a++) root[a] = fmin(root[a], lo[3 * k + a]);
    int n = 0;
    for (int k = 0; k < g_size; k++)
        for (int a = 0; a < dim; a++)
            if (lo[3 * k + a] > root[a]) {
                out[n].axis = a;
                out[n].value = lo[3 * k + a];
                memcpy(out[n].lo, lo + 3 * k, sizeof(out[n].lo));
                memcpy(out[n].hi, hi + 3 * k, sizeof(out[n].hi));
                n++;
            }
    free(lo);
    free(hi);
    return n;
}

// Walls on the faces: w points exactly on each face, the other coordinates random within the
// brick; each with a partner exactly r below (straddling the face, when the difference is exact
// in double) or, every other one, r above, so that the wall stays in the middle of the sorted
// sample and the next decomposition cuts on it again.
static void add_walls(Set *t, const Set *base, int nf, const Face *f, int w)
{
    const int dim = t->s.dim;
    t->s.n = 0; // start again from the base points, same ids
    double *p = set_grow(t, base->s.n);
    memcpy(p, base->s.p, (size_t)base->s.n * (size_t)dim * sizeof(double));
    for (int i = 0; i < nf; i++) {
        double *q = set_grow(t, 2 * w);
        const int ax = f[i].axis;
        for (int k = 0; k < w; k++) {
            double *on = q + (size_t)(2 * k) * (size_t)dim, *other = on + dim;
            for (int a = 0; a < dim; a++) on[a] = other[a] = nbt_range(f[i].lo[a], f[i].hi[a]);
            on[ax] = f[i].value;
            other[ax] = k % 2 == 0 ? f[i].value - t->r : f[i].value + t->r;
            if (fabs(other[ax] - on[ax]) != t->r) other[ax] = on[ax];
        }
    }
}

// Points exactly on the bricks' faces and pairs exactly r apart straddling them: walls built on
// the decomposition's own cuts, rebuilt a few times so that the cuts settle on the walls, then
// counted (the test fails when no point is on a face) and checked.
static int on_faces(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        Set base = set_new(2000, dim, 0.03125); // r = 2^-5: c - r is often exact
        fill_uniform(&base, 0, 1);
        Set t = set_new(0, dim, base.r);
        Face f[3 * 64];
        nbMpi *m = create(&base, DEAL_ROUND_ROBIN);
        for (int iter = 0; iter < 4; iter++) {
            const int nf = faces(m, dim, f);
            nb_mpi_destroy(m);
            add_walls(&t, &base, nf, f, 60);
            m = create(&t, DEAL_ROUND_ROBIN);
        }
        const int nf = faces(m, dim, f);
        int64_t on = 0, exact = 0;
        for (int32_t i = 0; i < t.s.n; i++)
            for (int k = 0; k < nf; k++) {
                const double *x = nbo_pt(&t.s, i);
                if (x[f[k].axis] != f[k].value) continue;
                on++;
                for (int32_t j = 0; j < t.s.n; j++) {
                    const double *y = nbo_pt(&t.s, j);
                    if (y[f[k].axis] < f[k].value && nbo_d2(x, y, dim) == t.r * t.r) exact++;
                }
            }
        if (g_rank == 0 && g_size > 1)
            printf("%s: %dD: %d faces, %lld points on them, %lld pairs exactly r across\n",
                   nbt_name, dim, nf, (long long)on, (long long)exact);
        MPI_CHECK(g_size == 1 || (on > 0 && exact > 0));
        nb_mpi_destroy(m);
        check_set(&t, DEAL_ROUND_ROBIN, 0);
        check_set(&t, DEAL_BLOCKS, 0);
        set_free(&t);
        set_free(&base);
    }
    return 0;
}

static int periodic(void)
{
    // all axes periodic, 2D and 3D
    for (int dim = 2; dim <= 3; dim++) {
        Set t = set_new(2500, dim, dim == 2 ? 0.05 : 0.1);
        for (int a = 0; a < dim; a++) t.period[a] = a == 0 ? 1.0 : 2.0;
        fill_uniform(&t, 0, 1);
        // pairs exactly r apart across the box faces (r = 2^-k: P - r is exact)
        double *q = set_grow(&t, 40);
        for (int k = 0; k < 20; k++) {
            double *a = q + (size_t)(2 * k) * (size_t)dim, *b = a + dim;
            for (int ax = 0; ax < dim; ax++) a[ax] = b[ax] = nbt_range(0, t.period[ax]);
            const int ax = k % dim;
            a[ax] = 0.0;
            b[ax] = t.period[ax] - 0.0625;
        }
        t.r = dim == 2 ? 0.0625 : 0.125;
        check_set(&t, DEAL_ROUND_ROBIN, 1.05);
        set_free(&t);
    }
    // one periodic axis (y), open x with negative coordinates
    Set u = set_new(2000, 2, 0.05);
    u.period[1] = 1.5;
    fill_uniform(&u, -3, -1);
    check_set(&u, DEAL_BLOCKS, 1.05);
    set_free(&u);
    // r = P / 2: a pair exactly P / 2 apart meets two images; it must count once
    Set h = set_new(120, 2, 0.5);
    h.period[0] = h.period[1] = 1.0;
    fill_uniform(&h, 0, 1);
    for (int32_t i = 0; i < 20; i++) { // quarter grid: many pairs at exactly 0.5
        h.s.p[2 * i] = 0.25 * (i % 4);
        h.s.p[2 * i + 1] = 0.25 * ((i / 4) % 4);
    }
    check_set(&h, DEAL_ROUND_ROBIN, 0);
    set_free(&h);
    return 0;
}

// nb_mpi_update: the bricks of one set, the points of another (moved a little, a few far beyond
// the old bounding box, dealt differently): the pairs and queries must be the new set's. Bad input
// and failed allocations on one rank leave the index as it was on every rank.
static int update(void)
{
    for (int periodic = 0; periodic < 2; periodic++) {
        Set a = set_new(2500, 2, 0.04);
        if (periodic) a.period[0] = 1.0;
        fill_uniform(&a, 0, 1);
        Set b = set_new(2500, 2, 0.04);
        b.period[0] = a.period[0];
        for (int32_t i = 0; i < b.s.n; i++)
            for (int ax = 0; ax < 2; ax++) {
                double v = nbo_pt(&a.s, i)[ax] + nbt_range(-0.05, 0.05);
                if (!periodic && i % 100 == 0) v += ax == 0 ? 0.6 : -0.7; // beyond the old box
                if (b.period[ax] > 0) v = v < 0 ? v + 1.0 : v >= 1.0 ? v - 1.0 : v;
                if (b.period[ax] > 0 && v >= 1.0) v = 0.0;
                b.s.p[2 * (size_t)i + (size_t)ax] = v;
            }
        nbMpi *m = create(&a, DEAL_ROUND_ROBIN);
        double *xyz;
        int64_t *ids;
        const size_t n = slice(&b, DEAL_BLOCKS, &xyz, &ids);
        // bad input on one rank: unchanged everywhere
        uint64_t before = 0, after = 0, global = 0;
        MPI_CHECK_STATUS(nb_mpi_count_pairs(m, &before, &global), NB_OK);
        const int bad = g_size - 1;
        const double keep = xyz[0];
        if (g_rank == bad && n > 0) xyz[0] = (double)NAN;
        MPI_CHECK_STATUS(nb_mpi_update(m, xyz, ids, n),
                         n > 0 || g_rank != bad ? NB_ERR_NOT_FINITE : NB_OK);
        xyz[0] = keep;
        MPI_CHECK_STATUS(nb_mpi_count_pairs(m, &after, NULL), NB_OK);
        MPI_CHECK(after == before);
        MPI_CHECK_STATUS(nb_mpi_update(m, g_rank == bad ? NULL : xyz, ids, n), NB_ERR_NULL_ARG);
        // a failing allocation on one rank, for each allocation of the update in turn
        const int victim = g_size > 1 ? 1 : 0;
        for (int64_t k = 1;; k++) {
            g_count.fail_at = g_rank == victim ? g_count.allocs + k : 0;
            const nbStatus st = nb_mpi_update(m, xyz, ids, n);
            int failed = g_rank == victim && nbt_alloc_failed(&g_count), any = 0;
            g_count.fail_at = 0;
            MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (st == NB_OK) {
                if (!any) break;
                // a grid absorbed the failure (it retries a refused growth at the exact size)
                MPI_CHECK_STATUS(nb_mpi_count_pairs(m, &before, NULL), NB_OK);
                continue;
            }
            MPI_CHECK_STATUS(st, NB_ERR_OUT_OF_MEMORY);
            MPI_CHECK(any);
            MPI_CHECK_STATUS(nb_mpi_count_pairs(m, &after, NULL), NB_OK);
            MPI_CHECK(after == before);
        }
        size_t np = 0;
        nbMpiPair *p = rank_pairs(m, &np);
        check_union(&b, p, np);
        check_owned(m, &b, 0);
        check_queries(m, &b, 30);
        // the owned points: inside this rank's brick, every id once over all ranks; passed back
        // to update, nothing migrates and the pairs stay
        const double *oxyz;
        const int64_t *oid;
        size_t on = 0;
        MPI_CHECK_STATUS(nb_mpi_owned(m, &oxyz, &oid, &on), NB_OK);
        MPI_CHECK_STATUS(nb_mpi_owned(m, NULL, &oid, &on), NB_ERR_NULL_ARG);
        MPI_CHECK(on == 0 && oid == NULL);
        MPI_CHECK_STATUS(nb_mpi_owned(m, &oxyz, &oid, &on), NB_OK);
        nbMpiStats st;
        MPI_CHECK_STATUS(nb_mpi_stats(m, &st), NB_OK);
        MPI_CHECK(on == st.owned);
        uint64_t idsum = 0, allsum = 0, want = 0;
        for (size_t i = 0; i < on; i++) {
            for (int ax = 0; ax < 2; ax++)
                MPI_CHECK(oxyz[2 * i + (size_t)ax] >= st.lo[ax] &&
                          oxyz[2 * i + (size_t)ax] <= st.hi[ax]);
            idsum += (uint64_t)(oid[i] + 1000) * (uint64_t)(oid[i] + 1000);
        }
        for (int32_t i = 0; i < b.s.n; i++)
            want += (uint64_t)(b.id[i] + 1000) * (uint64_t)(b.id[i] + 1000);
        MPI_Allreduce(&idsum, &allsum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        MPI_CHECK(allsum == want);
        MPI_CHECK_STATUS(nb_mpi_update(m, oxyz, oid, on), NB_OK);
        MPI_CHECK_STATUS(nb_mpi_stats(m, &st), NB_OK);
        MPI_CHECK(st.migrate_bytes_sent == (uint64_t)(g_size - 1) * sizeof(int)); // counts only
        MPI_CHECK(st.owned == on);
        size_t np2 = 0;
        nbMpiPair *p2 = rank_pairs(m, &np2);
        check_union(&b, p2, np2);
        free(p2);
        // a second update back to the first set: its pairs again
        free(xyz);
        free(ids);
        free(p);
        const size_t na = slice(&a, DEAL_LAST_ONLY, &xyz, &ids);
        MPI_CHECK_STATUS(nb_mpi_update(m, xyz, ids, na), NB_OK);
        p = rank_pairs(m, &np);
        check_union(&a, p, np);
        nb_mpi_destroy(m);
        MPI_CHECK(g_count.live_bytes == 0);
        free(p);
        free(xyz);
        free(ids);
        set_free(&a);
        set_free(&b);
    }
    return 0;
}

// Bad input on one rank only: every rank gets the same status, nobody hangs.
static int bad_input(void)
{
    Set t = set_new(200, 2, 0.1);
    fill_uniform(&t, 0, 1);
    double *xyz;
    int64_t *ids;
    const size_t n = slice(&t, DEAL_ROUND_ROBIN, &xyz, &ids);
    const int bad = g_size - 1;
    nbMpiDesc d = desc_of(&t);
    nbMpi *m = (nbMpi *)&t; // must be reset to NULL
    // a NaN coordinate on the last rank
    double keep = xyz[1];
    if (g_rank == bad) xyz[1] = (double)NAN;
    MPI_CHECK_STATUS(nb_mpi_create(&d, xyz, ids, n, &m), NB_ERR_NOT_FINITE);
    MPI_CHECK(m == NULL);
    if (g_rank == bad) xyz[1] = (double)INFINITY;
    MPI_CHECK_STATUS(nb_mpi_create(&d, xyz, ids, n, &m), NB_ERR_NOT_FINITE);
    xyz[1] = keep;
    // a negative, a NaN radius on rank 0
    d.radius = g_rank == 0 ? -1.0 : 0.1;
    MPI_CHECK_STATUS(nb_mpi_create(&d, xyz, ids, n, &m), NB_ERR_OUT_OF_RANGE);
    d.radius = g_rank == 0 ? (double)NAN : 0.1;
    MPI_CHECK_STATUS(nb_mpi_create(&d, xyz, ids, n, &m), NB_ERR_NOT_FINITE);
    d.radius = 0.1;
    // dim 4 on the last rank; a period on z in 2D
    d.dim = g_rank == bad ? 4 : 2;
    MPI_CHECK_STATUS(nb_mpi_create(&d, xyz, ids, n, &m), NB_ERR_OUT_OF_RANGE);
    d.dim = 2;
    d.period[2] = g_rank == bad ? 1.0 : 0.0;
    MPI_CHECK_STATUS(nb_mpi_create(&d, xyz, ids, n, &m), NB_ERR_OUT_OF_RANGE);
    d.period[2] = 0;
    // NULL ids with n > 0 on the last rank (which has points when size <= 200)
    MPI_CHECK_STATUS(nb_mpi_create(&d, xyz, g_rank == bad ? NULL : ids, n, &m), NB_ERR_NULL_ARG);
    MPI_CHECK_STATUS(nb_mpi_create(&d, xyz, ids, n, g_rank == bad ? NULL : &m), NB_ERR_NULL_ARG);
    // periodic: a point at x = P, r > P / 2
    d.period[0] = 1.0;
    keep = xyz[0];
    if (g_rank == bad) xyz[0] = 1.0;
    MPI_CHECK_STATUS(nb_mpi_create(&d, xyz, ids, n, &m), NB_ERR_OUT_OF_RANGE);
    if (g_rank == bad) xyz[0] = -0.0 - 1e-300;
    MPI_CHECK_STATUS(nb_mpi_create(&d, xyz, ids, n, &m), NB_ERR_OUT_OF_RANGE);
    xyz[0] = keep;
    d.radius = 0.5000000001;
    MPI_CHECK_STATUS(nb_mpi_create(&d, xyz, ids, n, &m), NB_ERR_OUT_OF_RANGE);
    d.radius = 0.1;
    d.period[0] = 0;
    // NaN beats a negative radius (check order: finiteness, then range)
    if (g_rank == bad) xyz[0] = (double)NAN;
    d.radius = g_rank == 0 ? -1.0 : 0.1;
    MPI_CHECK_STATUS(nb_mpi_create(&d, xyz, ids, n, &m), NB_ERR_NOT_FINITE);
    xyz[0] = keep;
    d.radius = 0.1;
    // a good index, then bad queries on one rank
    MPI_CHECK_STATUS(nb_mpi_create(&d, xyz, ids, n, &m), NB_OK);
    double c[4] = {0.5, 0.5, 0.25, 0.75};
    size_t *off = (size_t *)&t;
    int64_t *hit = (int64_t *)&t;
    if (g_rank == bad) c[3] = (double)NAN;
    MPI_CHECK_STATUS(nb_mpi_query_radius(m, c, 2, 0.1, &off, &hit), NB_ERR_NOT_FINITE);
    MPI_CHECK(off == NULL && hit == NULL);
    c[3] = 0.75;
    MPI_CHECK_STATUS(nb_mpi_query_radius(m, c, 2, g_rank == 0 ? -0.1 : 0.1, &off, &hit),
                     NB_ERR_OUT_OF_RANGE);
    MPI_CHECK_STATUS(nb_mpi_query_radius(m, g_rank == bad ? NULL : c, 2, 0.1, &off, &hit),
                     NB_ERR_NULL_ARG);
    MPI_CHECK_STATUS(nb_mpi_query_radius(m, c, 2, 0.1, g_rank == bad ? NULL : &off, &hit),
                     NB_ERR_NULL_ARG);
    // still usable, and queries with nq = 0 on some ranks
    MPI_CHECK_STATUS(nb_mpi_query_radius(m, c, g_rank % 2 == 0 ? 2 : 0, 0.1, &off, &hit), NB_OK);
    MPI_CHECK(off != NULL && hit != NULL);
    nb_mpi_free(m, off);
    nb_mpi_free(m, hit);
    nb_mpi_free(m, NULL);
    uint64_t local, global;
    MPI_CHECK_STATUS(nb_mpi_count_pairs(m, &local, &global), NB_OK);
    MPI_CHECK_STATUS(nb_mpi_count_pairs(m, NULL, NULL), NB_OK);
    // local calls: NULL arguments
    size_t found = 1;
    MPI_CHECK_STATUS(nb_mpi_pairs(m, NULL, 1, &found), NB_ERR_NULL_ARG);
    MPI_CHECK(found == 0);
    MPI_CHECK_STATUS(nb_mpi_pairs(m, NULL, 0, NULL), NB_ERR_NULL_ARG);
    MPI_CHECK_STATUS(nb_mpi_pairs(NULL, NULL, 0, &found), NB_ERR_NULL_ARG);
    MPI_CHECK_STATUS(nb_mpi_pairs(m, NULL, 0, &found), local > 0 ? NB_ERR_BUFFER_TOO_SMALL : NB_OK);
    MPI_CHECK(found == local);
    MPI_CHECK_STATUS(nb_mpi_visit_pairs(m, NULL, NULL), NB_ERR_NULL_ARG);
    MPI_CHECK_STATUS(nb_mpi_visit_pairs(NULL, log_pair, NULL), NB_ERR_NULL_ARG);
    MPI_CHECK_STATUS(nb_mpi_stats(m, NULL), NB_ERR_NULL_ARG);
    MPI_CHECK_STATUS(nb_mpi_stats(NULL, NULL), NB_ERR_NULL_ARG);
    nbMpi *m2 = (nbMpi *)&t;
    MPI_CHECK_STATUS(nb_mpi_create(NULL, xyz, ids, n, &m2), NB_ERR_NULL_ARG); // on every rank
    MPI_CHECK(m2 == NULL);
    nb_mpi_destroy(m);
    nb_mpi_destroy(NULL);
    MPI_CHECK(g_count.live_bytes == 0);
    free(xyz);
    free(ids);
    set_free(&t);
    return 0;
}

// A failing allocator on one rank: allocation i fails there, for every i until create (and then
// a radius query) succeeds. Every rank must return NB_ERR_OUT_OF_MEMORY together, nothing may
// leak, and the blocks must be freed with their sizes.
static int failing_allocator(void)
{
    Set t = set_new(600, 2, 0.06);
    t.period[1] = 1.0;
    fill_uniform(&t, 0, 1);
    double *xyz;
    int64_t *ids;
    const size_t n = slice(&t, DEAL_ROUND_ROBIN, &xyz, &ids);
    const int victim = g_size > 1 ? 1 : 0;
    int failures = 0;
    for (int64_t i = 1;; i++) {
        nbtAlloc ta;
        memset(&ta, 0, sizeof(ta));
        ta.fail_at = g_rank == victim ? i : 0;
        nbAllocator al = nbt_allocator(&ta);
        nbMpiDesc d = desc_of(&t);
        d.allocator = &al;
        nbMpi *m = NULL;
        const nbStatus st = nb_mpi_create(&d, xyz, ids, n, &m);
        int mine_failed = g_rank == victim && nbt_alloc_failed(&ta), any = 0;
        MPI_Allreduce(&mine_failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        const int create_failed = any;
        // A failure makes every rank fail; a success with a failed allocation is a grid that
        // retried a refused growth at the exact size.
        if (st != NB_OK) {
            MPI_CHECK_STATUS(st, NB_ERR_OUT_OF_MEMORY);
            MPI_CHECK(any && m == NULL);
            failures++;
        } else {
            // the same sweep over a radius query
            double c[4] = {0.1, 0.2, 0.9, 0.95};
            for (int64_t k = 1;; k++) { // fail the k-th allocation of the query
                ta.fail_at = g_rank == victim ? ta.allocs + k : 0;
                size_t *off = NULL;
                int64_t *hit = NULL;
                const nbStatus qs = nb_mpi_query_radius(m, c, 2, 0.2, &off, &hit);
                mine_failed = g_rank == victim && nbt_alloc_failed(&ta);
                MPI_Allreduce(&mine_failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
                if (qs != NB_OK) {
                    MPI_CHECK_STATUS(qs, NB_ERR_OUT_OF_MEMORY);
                    MPI_CHECK(any && off == NULL && hit == NULL);
                    failures++;
                    continue;
                }
                nb_mpi_free(m, off);
                nb_mpi_free(m, hit);
                if (!any) break;
            }
            ta.fail_at = 0;
            uint64_t local = 0, global = 0;
            MPI_CHECK_STATUS(nb_mpi_count_pairs(m, &local, &global), NB_OK);
            nb_mpi_destroy(m);
        }
        if (ta.live_bytes != 0) fprintf(stderr, "leaked %lld bytes\n", (long long)ta.live_bytes);
        MPI_CHECK(ta.live_bytes == 0); // every block freed, each failed try included
        MPI_CHECK(!ta.size_mismatch && !ta.misaligned);
        if (!create_failed) break;
    }
    if (g_rank == victim) MPI_CHECK(failures > 10);
    free(xyz);
    free(ids);
    set_free(&t);
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    g_alloc = nbt_allocator(&g_count);
    static const nbtCase cases[] = {
        {"uniform_2d", uniform_2d}, {"uniform_3d", uniform_3d},
        {"clustered", clustered},   {"one_brick", one_brick},
        {"few_points", few_points}, {"on_faces", on_faces},
        {"periodic", periodic},     {"update", update},
        {"bad_input", bad_input},   {"failing_allocator", failing_allocator},
    };
    const char *env = getenv("NB_SEED");
    if (env != NULL && *env != '\0') nbt_seed = strtoull(env, NULL, 0);
    if (g_rank == 0) printf("seed: NB_SEED=0x%" PRIx64 ", %d ranks\n", nbt_seed, g_size);
    int ran = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (argc > 1 && strstr(cases[i].name, argv[1]) == NULL) continue;
        nbt_name = cases[i].name;
        nbt_rng_state = nbt_seed ^ (uint64_t)(i * 0x100000001b3u); // the same on every rank
        cases[i].fn();
        MPI_Barrier(MPI_COMM_WORLD);
        if (g_rank == 0) printf("pass %s\n", cases[i].name);
        ran++;
    }
    if (g_rank == 0) printf("%d passed on %d ranks\n", ran, g_size);
    MPI_Finalize();
    return 0;
}
