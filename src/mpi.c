// SPDX-License-Identifier: MIT
// nearby_mpi: all pairs and batched radius queries over MPI (include/nearby/mpi.h has the
// scheme). This file: create (checks, sample, migration, halo, local grids), the pair calls,
// the radius queries and stats. mpi_decomp.c has the RCB tree.
//
// Agreement: every collective call agrees on a status (nbi_agree: an MPI_Allreduce of the
// first failure in check order) after every step that can fail on one rank and before the next
// collective exchange, so a bad point or a failed allocation on one rank makes every rank return
// the same status instead of leaving the others waiting in an Alltoallv.
//
// The halo (half shell). Bricks k and j (k != j) share their pairs through exactly one rank:
// the receiver, k when nbi_receives(k, j). The sender j sends each of its points q once to each
// receiver k whose brick lies within `reach` of q or of one of q's periodic images q + s; the
// receiver keeps the images within reach of its brick (on a periodic axis, s = +P when
// q < reach, s = -P when q > P - reach). A rank's own points near a periodic face give it
// images of its own points too (k == j).
//
// The local pass. Pairs among owned points come from a grid over them (nb_grid_visit_pairs):
// an owned pair within r is never a wrapped one, since r <= P / 2. Pairs between owned points
// and the images come from a second grid over the images (cross pairs). Without a periodic axis
// the images are the received points themselves, and the cross pairs at r are the exact answer.
// With one, the images' coordinates are shifted (q + s, rounded), so cross pairs run at `reach`
// (r widened by far more than any rounding) and each candidate (p, image of q by s) is then
// tested from the original coordinates, exactly as nb_grid's periodic test: kept when the
// minimum-image d2 <= r*r and s is the image the minimum image picks (so a pair met through two
// images near P / 2 counts once); an image of one's own point is kept only for p < q, since
// the pair is also met from q's side.
#include "mpi_internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// The halo's and routing's margin over r: wider than every rounding of a shifted image or a box
// distance (a few ulps of the largest coordinate), far narrower than any cell.
#define NBI_MPI_MARGIN 1e-9

// Sample points over all ranks: NBI_SAMPLE_BASE + NBI_SAMPLE_PER_RANK * size (or all points).
enum { NBI_SAMPLE_BASE = 32768, NBI_SAMPLE_PER_RANK = 256 };

// Invariants: own_* hold n_own owned points (all within this rank's brick, owner == rank);
// halo_* the n_halo points received from other ranks; img_* the n_img halo entries, image e
// being the point img_src[e] (>= 0: halo index; < 0: own index -(src + 1)) shifted by
// img_shift[e] (per axis base-3 digit: 0 none, 1 +P, 2 -P); own_grid holds own_xyz in order,
// img_grid img_xyz in order.
struct nbMpi {
    MPI_Comm comm;
    int32_t rank;
    int32_t size;
    int32_t dim;
    bool periodic; // some axis has a period
    double radius;
    double reach; // radius + margin: halo width
    double period[3];
    nbAllocator alloc;
    bool has_alloc;
    nbTasks tasks;
    bool has_tasks;
    nbiDecomp dec;
    size_t n_own;
    double *own_xyz;
    int64_t *own_id;
    size_t n_halo;
    double *halo_xyz;
    int64_t *halo_id;
    size_t n_img;
    double *img_xyz;
    int32_t *img_src;
    uint8_t *img_shift;
    nbGrid *own_grid;
    nbGrid *img_grid;
    nbMpiStats stats;
};

static const nbAllocator *nbi_al(const nbMpi *m)
{
    return m->has_alloc ? &m->alloc : NULL;
}

// ---- agreement ----

// The status every rank returns: the first failure in check order (the lowest nonzero code)
// over all ranks, NB_OK when none failed.
static nbStatus nbi_agree(MPI_Comm comm, nbStatus st)
{
    int mine = st == NB_OK ? INT_MAX : (int)st, all = INT_MAX;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
    return all == INT_MAX ? NB_OK : (nbStatus)all;
}

// ---- geometry ----

// The largest |coordinate| of the root box and the periods, for the margin.
static double nbi_max_abs(const nbiDecomp *d, const double *period)
{
    double m = 0.0;
    for (int32_t a = 0; a < d->dim; a++) {
        m = fmax(m, fmax(fabs(d->root_lo[a]), fabs(d->root_hi[a])));
        m = fmax(m, period[a]);
    }
    return m;
}

// How far beyond a rank's region a neighbour within r may lie, with a relative margin for the
// rounding of coordinates of size max_abs (the halo's width; not the cell math's reach).
static double nbi_halo_reach(double r, double max_abs)
{
    return r + NBI_MPI_MARGIN * (r + max_abs);
}

// The shifts of x worth trying on the periodic axes: writes up to 3^dim codes (base-3 digit
// per axis: 0 none, 1 +P, 2 -P), code 0 first. Returns how many.
static int32_t nbi_shifts(const double *x, int32_t dim, const double *period, double reach,
                          int32_t *codes)
{
    int32_t n = 1, weight = 1;
    codes[0] = 0;
    for (int32_t a = 0; a < dim; a++, weight *= 3) {
        const double p = period[a];
        if (p <= 0.0) continue;
        const bool up = x[a] <= reach, down = x[a] >= p - reach;
        const int32_t n0 = n;
        for (int32_t i = 0; i < n0; i++) {
            if (up) codes[n++] = codes[i] + weight;
            if (down) codes[n++] = codes[i] + 2 * weight;
        }
    }
    return n;
}

// x shifted by the code's images, into y.
static void nbi_apply_shift(const double *x, int32_t dim, const double *period, int32_t code,
                            double *y)
{
    for (int32_t a = 0; a < dim; a++, code /= 3) {
        const int32_t digit = code % 3;
        y[a] = digit == 1 ? x[a] + period[a] : digit == 2 ? x[a] - period[a] : x[a];
    }
}

// nb_grid's periodic distance test (grid.h): a = |x - y|, d = min(a, P - a) on a periodic
// axis, squared and summed in axis order. *code receives the shift of y that is the minimum
// image seen from x (base-3 digits as above): +P when y + P is the nearer image, -P when y - P.
static double nbi_wrap_dist2(const double *x, const double *y, int32_t dim, const double *period,
                             int32_t *code)
{
    double d2 = 0.0;
    int32_t c = 0, weight = 1;
    for (int32_t a = 0; a < dim; a++, weight *= 3) {
        double d = fabs(x[a] - y[a]);
        if (period[a] > 0.0) {
            const double b = period[a] - d;
            if (b < d) {
                d = b;
                c += (y[a] < x[a] ? 1 : 2) * weight;
            }
        }
        d2 = d2 + d * d;
    }
    *code = c;
    return d2;
}

// Rank k handles the pairs between bricks k and j: its own (k == j), else one of the two by the
// parity of k + j (the lower rank when even, the higher when odd), which splits every rank's
// neighbours about evenly between receiving and sending.
static bool nbi_receives(int32_t k, int32_t j)
{
    if (k == j) return true;
    return ((k + j) & 1) == 0 ? k < j : k > j;
}

// ---- checks ----

// create's checks in the library's order over all its input: pointers, then finiteness (radius,
// periods, every coordinate), then ranges (dim, radius, periods, coordinates in [0, P)). A dim
// that is not 2 or 3 leaves the coordinates unread.
static nbStatus nbi_check_create(const nbMpiDesc *d, const double *xyz, const int64_t *ids,
                                 size_t n, nbMpi **out, int32_t *dim)
{
    if (out == NULL || (n > 0 && (xyz == NULL || ids == NULL))) return NB_ERR_NULL_ARG;
    if (d->allocator != NULL && ((d->allocator->alloc == NULL) != (d->allocator->free == NULL)))
        return NB_ERR_NULL_ARG;
    *dim = d->dim == 0 ? 2 : d->dim;
    const bool dim_ok = *dim == 2 || *dim == 3;
    const size_t len = dim_ok && n <= (size_t)INT32_MAX ? n * (size_t)*dim : 0;
    if (!isfinite(d->radius)) return NB_ERR_NOT_FINITE;
    for (int32_t a = 0; a < 3; a++)
        if (!isfinite(d->period[a])) return NB_ERR_NOT_FINITE;
    for (size_t i = 0; i < len; i++)
        if (!isfinite(xyz[i])) return NB_ERR_NOT_FINITE;
    if (!dim_ok || n > (size_t)INT32_MAX || d->radius < 0.0) return NB_ERR_OUT_OF_RANGE;
    for (int32_t a = 0; a < 3; a++) {
        if (d->period[a] < 0.0 || (a >= *dim && d->period[a] != 0.0)) return NB_ERR_OUT_OF_RANGE;
        if (d->period[a] > 0.0 && d->radius > d->period[a] / 2) return NB_ERR_OUT_OF_RANGE;
    }
    for (size_t i = 0; i < len; i++) {
        const double p = d->period[i % (size_t)*dim];
        if (p > 0.0 && !(xyz[i] >= 0.0 && xyz[i] < p)) return NB_ERR_OUT_OF_RANGE;
    }
    return NB_OK;
}

// ---- exchanges ----

// One Alltoallv of fixed-size records: counts (in records) out, counts in, then the data.
// send holds the records grouped by destination, scount[k] of them for rank k. On success
// *recv (allocated) holds the records from every rank in rank order, *nrecv of them. Collective;
// agrees on the status. Adds the bytes to the stats (not counting this rank's own).
typedef struct nbiXfer {
    int *scount;
    int *sdispl;
    int *rcount;
    int *rdispl;
} nbiXfer;

static nbStatus nbi_xfer_alloc(const nbAllocator *a, int32_t size, nbiXfer *x)
{
    x->scount = nbi_mpi_alloc(a, 4 * (size_t)size, sizeof(int));
    if (x->scount == NULL) return NB_ERR_OUT_OF_MEMORY;
    memset(x->scount, 0, 4 * (size_t)size * sizeof(int));
    x->sdispl = x->scount + size;
    x->rcount = x->sdispl + size;
    x->rdispl = x->rcount + size;
    return NB_OK;
}

static void nbi_xfer_free(const nbAllocator *a, int32_t size, nbiXfer *x)
{
    nbi_mpi_free(a, x->scount, 4 * (size_t)size, sizeof(int));
    x->scount = NULL;
}

// Send displacements from counts (as size_t, so an overflow of int is caught): NB_ERR_OUT_OF_RANGE
// when the total does not fit an int. *total = the records sent.
static nbStatus nbi_displs(const int *count, int *displ, int32_t size, size_t *total)
{
    size_t t = 0;
    for (int32_t k = 0; k < size; k++) {
        if (t > (size_t)INT_MAX) return NB_ERR_OUT_OF_RANGE;
        displ[k] = (int)t;
        t += (size_t)count[k];
    }
    *total = t;
    return t > (size_t)INT_MAX ? NB_ERR_OUT_OF_RANGE : NB_OK;
}

// The exchange proper, after scount/sdispl and the send buffer are ready on every rank (and
// agreed). rec = bytes per record.
static nbStatus nbi_exchange(nbMpi *m, nbiXfer *x, const void *send, size_t rec, void **recv,
                             size_t *nrecv, uint64_t *sent_bytes, uint64_t *recv_bytes)
{
    const int32_t size = m->size;
    *recv = NULL;
    *nrecv = 0;
    MPI_Alltoall(x->scount, 1, MPI_INT, x->rcount, 1, MPI_INT, m->comm);
    size_t total = 0;
    nbStatus st = nbi_displs(x->rcount, x->rdispl, size, &total);
    void *buf = NULL;
    if (st == NB_OK) {
        buf = nbi_mpi_alloc(nbi_al(m), total, rec);
        if (buf == NULL) st = NB_ERR_OUT_OF_MEMORY;
    }
    st = nbi_agree(m->comm, st);
    if (st != NB_OK) {
        nbi_mpi_free(nbi_al(m), buf, total, rec);
        return st;
    }
    MPI_Datatype t;
    MPI_Type_contiguous((int)rec, MPI_BYTE, &t);
    MPI_Type_commit(&t);
    MPI_Alltoallv(send, x->scount, x->sdispl, t, buf, x->rcount, x->rdispl, t, m->comm);
    MPI_Type_free(&t);
    uint64_t s = 0, r = 0;
    for (int32_t k = 0; k < size; k++) {
        if (k == m->rank) continue;
        s += (uint64_t)x->scount[k] * rec + sizeof(int);
        r += (uint64_t)x->rcount[k] * rec + sizeof(int);
    }
    *sent_bytes += s;
    *recv_bytes += r;
    *recv = buf;
    *nrecv = total;
    return NB_OK;
}

// ---- create: the steps ----

static void nbi_mpi_release(nbMpi *m)
{
    const nbAllocator *a = nbi_al(m);
    const size_t dim = (size_t)m->dim;
    nb_grid_destroy(m->own_grid);
    nb_grid_destroy(m->img_grid);
    m->own_grid = NULL;
    m->img_grid = NULL;
    nbi_mpi_free(a, m->own_xyz, m->n_own * dim, sizeof(double));
    nbi_mpi_free(a, m->own_id, m->n_own, sizeof(int64_t));
    nbi_mpi_free(a, m->halo_xyz, m->n_halo * dim, sizeof(double));
    nbi_mpi_free(a, m->halo_id, m->n_halo, sizeof(int64_t));
    nbi_mpi_free(a, m->img_xyz, m->n_img * dim, sizeof(double));
    nbi_mpi_free(a, m->img_src, m->n_img, sizeof(int32_t));
    nbi_mpi_free(a, m->img_shift, m->n_img, sizeof(uint8_t));
    m->own_xyz = m->halo_xyz = m->img_xyz = NULL;
    m->own_id = m->halo_id = NULL;
    m->img_src = NULL;
    m->img_shift = NULL;
    nbi_decomp_free(&m->dec, a);
}

// Global count and bounding box, the sample, the tree. Collective; agreed.
// The root box over every rank's points (the bounding box on an open axis, [0, P] on a periodic
// one; zero-sized without points) and the total count. Collective.
static uint64_t nbi_root_box(const nbMpi *m, const double *xyz, size_t n, double *root_lo,
                             double *root_hi)
{
    const int32_t dim = m->dim;
    // mins, and maxes negated, in one MIN reduction
    double box[6], gbox[6];
    for (int32_t k = 0; k < 6; k++) box[k] = (double)INFINITY;
    for (size_t i = 0; i < n; i++)
        for (int32_t k = 0; k < dim; k++) {
            const double v = xyz[i * (size_t)dim + (size_t)k];
            box[k] = fmin(box[k], v);
            box[3 + k] = fmin(box[3 + k], -v);
        }
    MPI_Allreduce(box, gbox, 6, MPI_DOUBLE, MPI_MIN, m->comm);
    uint64_t mine = (uint64_t)n, total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, m->comm);
    for (int32_t k = 0; k < 3; k++) root_lo[k] = root_hi[k] = 0.0;
    for (int32_t k = 0; k < dim; k++) {
        if (m->period[k] > 0.0) {
            root_hi[k] = m->period[k];
        } else if (total > 0) {
            root_lo[k] = gbox[k];
            root_hi[k] = -gbox[3 + k];
        }
    }
    return total;
}

static nbStatus nbi_decompose(nbMpi *m, const double *xyz, size_t n)
{
    const nbAllocator *a = nbi_al(m);
    const int32_t dim = m->dim, size = m->size;
    double root_lo[3], root_hi[3];
    const uint64_t total = nbi_root_box(m, xyz, n, root_lo, root_hi);
    m->stats.total = total;
    // This rank's share of the sample: evenly strided over its points.
    const uint64_t want =
        (uint64_t)NBI_SAMPLE_BASE + (uint64_t)NBI_SAMPLE_PER_RANK * (uint64_t)size;
    size_t ns = 0;
    if (total > 0)
        ns = total <= want ? n : (size_t)(((double)n * (double)want) / (double)total + 0.5);
    if (ns > n) ns = n;
    double *mine_s = nbi_mpi_alloc(a, ns * (size_t)dim, sizeof(double));
    int *counts = nbi_mpi_alloc(a, 2 * (size_t)size, sizeof(int));
    nbStatus st = mine_s == NULL || counts == NULL ? NB_ERR_OUT_OF_MEMORY : NB_OK;
    if (st == NB_OK && ns * (size_t)dim > (size_t)INT_MAX) st = NB_ERR_OUT_OF_RANGE;
    st = nbi_agree(m->comm, st);
    double *all = NULL;
    size_t all_n = 0;
    if (st == NB_OK) {
        for (size_t i = 0; i < ns; i++) {
            const size_t src = (size_t)(((double)i + 0.5) * (double)n / (double)ns);
            memcpy(mine_s + i * (size_t)dim, xyz + (src < n ? src : n - 1) * (size_t)dim,
                   (size_t)dim * sizeof(double));
        }
        int c = (int)(ns * (size_t)dim);
        MPI_Allgather(&c, 1, MPI_INT, counts, 1, MPI_INT, m->comm);
        int *displ = counts + size;
        size_t t = 0;
        st = nbi_displs(counts, displ, size, &t);
        if (st == NB_OK) {
            all_n = t / (size_t)dim;
            all = nbi_mpi_alloc(a, t, sizeof(double));
            if (all == NULL) st = NB_ERR_OUT_OF_MEMORY;
        }
        st = nbi_agree(m->comm, st);
        if (st == NB_OK) {
            MPI_Allgatherv(mine_s, c, MPI_DOUBLE, all, counts, displ, MPI_DOUBLE, m->comm);
            const uint64_t others = (uint64_t)(size - 1);
            m->stats.bytes_sent += others * ((uint64_t)c * sizeof(double) + sizeof(int));
            m->stats.bytes_received +=
                (t - (size_t)c) * sizeof(double) + others * (uint64_t)sizeof(int);
            st = nbi_decomp_build(&m->dec, a, size, dim, root_lo, root_hi, all, all_n);
            st = nbi_agree(m->comm, st);
        }
    }
    nbi_mpi_free(a, all, all_n * (size_t)dim, sizeof(double));
    nbi_mpi_free(a, counts, 2 * (size_t)size, sizeof(int));
    nbi_mpi_free(a, mine_s, ns * (size_t)dim, sizeof(double));
    if (st == NB_OK) m->reach = nbi_halo_reach(m->radius, nbi_max_abs(&m->dec, m->period));
    return st;
}

// Records on the wire: dim doubles, then the int64 id.
static size_t nbi_rec_bytes(int32_t dim)
{
    return (size_t)dim * sizeof(double) + sizeof(int64_t);
}

static void nbi_pack(unsigned char *rec, const double *x, int32_t dim, int64_t id)
{
    memcpy(rec, x, (size_t)dim * sizeof(double));
    memcpy(rec + (size_t)dim * sizeof(double), &id, sizeof(id));
}

// Unpacks n records into xyz / ids.
static void nbi_unpack(const unsigned char *recs, size_t n, int32_t dim, double *xyz, int64_t *ids)
{
    const size_t rec = nbi_rec_bytes(dim), cb = (size_t)dim * sizeof(double);
    for (size_t i = 0; i < n; i++) {
        memcpy(xyz + i * (size_t)dim, recs + i * rec, cb);
        memcpy(ids + i, recs + i * rec + cb, sizeof(int64_t));
    }
}

// Every point to its owner. Collective; agreed.
static nbStatus nbi_migrate(nbMpi *m, const double *xyz, const int64_t *ids, size_t n)
{
    const nbAllocator *a = nbi_al(m);
    const int32_t dim = m->dim, size = m->size;
    const size_t rec = nbi_rec_bytes(dim);
    nbiXfer x = {0};
    int32_t *owner = nbi_mpi_alloc(a, n, sizeof(int32_t));
    unsigned char *send = nbi_mpi_alloc(a, n, rec);
    nbStatus st =
        owner == NULL || send == NULL ? NB_ERR_OUT_OF_MEMORY : nbi_xfer_alloc(a, size, &x);
    size_t total = 0;
    if (st == NB_OK) {
        for (size_t i = 0; i < n; i++) {
            owner[i] = nbi_decomp_owner(&m->dec, xyz + i * (size_t)dim);
            if (x.scount[owner[i]] == INT_MAX)
                st = NB_ERR_OUT_OF_RANGE;
            else
                x.scount[owner[i]]++;
        }
        if (st == NB_OK) st = nbi_displs(x.scount, x.sdispl, size, &total);
    }
    st = nbi_agree(m->comm, st);
    void *recv = NULL;
    size_t nrecv = 0;
    if (st == NB_OK) {
        int *fill = x.rdispl; // scratch until the exchange fills it
        memcpy(fill, x.sdispl, (size_t)size * sizeof(int));
        for (size_t i = 0; i < n; i++)
            nbi_pack(send + (size_t)fill[owner[i]]++ * rec, xyz + i * (size_t)dim, dim, ids[i]);
        uint64_t s = 0, r = 0;
        st = nbi_exchange(m, &x, send, rec, &recv, &nrecv, &s, &r);
        m->stats.bytes_sent += s;
        m->stats.bytes_received += r;
        m->stats.migrate_bytes_sent = s;
    }
    if (st == NB_OK) {
        if (nrecv >= (size_t)INT32_MAX) st = NB_ERR_OUT_OF_RANGE;
        if (st == NB_OK) {
            m->own_xyz = nbi_mpi_alloc(a, nrecv * (size_t)dim, sizeof(double));
            m->own_id = nbi_mpi_alloc(a, nrecv, sizeof(int64_t));
            m->n_own = nrecv;
            if (m->own_xyz == NULL || m->own_id == NULL)
                st = NB_ERR_OUT_OF_MEMORY;
            else
                nbi_unpack(recv, nrecv, dim, m->own_xyz, m->own_id);
        }
        st = nbi_agree(m->comm, st);
    }
    nbi_mpi_free(a, recv, nrecv, rec);
    nbi_xfer_free(a, size, &x);
    nbi_mpi_free(a, send, n, rec);
    nbi_mpi_free(a, owner, n, sizeof(int32_t));
    return st;
}

// The ranks a point's halo record goes to (receivers other than this rank), deduplicated.
typedef struct nbiTargets {
    const nbMpi *m;
    int32_t *stamp; // per rank: the last point (+1) it was counted for
    int32_t point;  // current point + 1
    int32_t *list;  // the point's targets
    int32_t n;
} nbiTargets;

static void nbi_add_target(int32_t k, void *user)
{
    nbiTargets *t = user;
    if (k == t->m->rank || !nbi_receives(k, t->m->rank) || t->stamp[k] == t->point) return;
    t->stamp[k] = t->point;
    t->list[t->n++] = k;
}

static void nbi_targets(nbiTargets *t, const double *q)
{
    const nbMpi *m = t->m;
    t->n = 0;
    // Most points are farther than reach from every face of their own brick: then no other
    // brick (they all lie outside it) and no periodic image (the box's faces are farther still)
    // is within reach, and the tree need not be asked.
    const double *lo = m->dec.lo + 3 * (size_t)m->rank, *hi = m->dec.hi + 3 * (size_t)m->rank;
    bool inside = true;
    for (int32_t a = 0; a < m->dim; a++)
        inside &= q[a] - lo[a] > m->reach && hi[a] - q[a] > m->reach;
    if (inside) return;
    int32_t codes[27];
    const int32_t ns = nbi_shifts(q, m->dim, m->period, m->reach, codes);
    t->n = 0;
    for (int32_t s = 0; s < ns; s++) {
        double y[3];
        nbi_apply_shift(q, m->dim, m->period, codes[s], y);
        nbi_decomp_near(&m->dec, y, m->reach, nbi_add_target, t);
    }
}

// Adds the images of point q (src as in img_src) within reach of this rank's brick: shift 0
// only for received points, nonzero shifts only for own points. Counts only when img_xyz is
// NULL.
static size_t nbi_images(nbMpi *m, const double *q, int32_t src, size_t at)
{
    int32_t codes[27];
    const int32_t ns = nbi_shifts(q, m->dim, m->period, m->reach, codes);
    const double reach2 = m->reach * m->reach;
    size_t added = 0;
    for (int32_t s = src < 0 ? 1 : 0; s < ns; s++) {
        double y[3];
        nbi_apply_shift(q, m->dim, m->period, codes[s], y);
        if (nbi_decomp_dist2(&m->dec, m->rank, y) > reach2) continue;
        if (m->img_xyz != NULL) {
            memcpy(m->img_xyz + (at + added) * (size_t)m->dim, y, (size_t)m->dim * sizeof(double));
            m->img_src[at + added] = src;
            m->img_shift[at + added] = (uint8_t)codes[s];
        }
        added++;
    }
    return added;
}

// The half-shell halo exchange and the image list. Collective; agreed.
static nbStatus nbi_halo(nbMpi *m)
{
    const nbAllocator *a = nbi_al(m);
    const int32_t dim = m->dim, size = m->size;
    const size_t rec = nbi_rec_bytes(dim);
    nbiXfer x = {0};
    nbiTargets t = {m, nbi_mpi_alloc(a, (size_t)size, sizeof(int32_t)), 0,
                    nbi_mpi_alloc(a, (size_t)size, sizeof(int32_t)), 0};
    nbStatus st =
        t.stamp == NULL || t.list == NULL ? NB_ERR_OUT_OF_MEMORY : nbi_xfer_alloc(a, size, &x);
    unsigned char *send = NULL;
    size_t total = 0;
    if (st == NB_OK) {
        memset(t.stamp, 0, (size_t)size * sizeof(int32_t));
        for (size_t i = 0; i < m->n_own && st == NB_OK; i++) {
            t.point = (int32_t)i + 1;
            nbi_targets(&t, m->own_xyz + i * (size_t)dim);
            for (int32_t k = 0; k < t.n; k++) {
                if (x.scount[t.list[k]] == INT_MAX)
                    st = NB_ERR_OUT_OF_RANGE;
                else
                    x.scount[t.list[k]]++;
            }
        }
        if (st == NB_OK) st = nbi_displs(x.scount, x.sdispl, size, &total);
        if (st == NB_OK) {
            send = nbi_mpi_alloc(a, total, rec);
            if (send == NULL) st = NB_ERR_OUT_OF_MEMORY;
        }
    }
    st = nbi_agree(m->comm, st);
    void *recv = NULL;
    size_t nrecv = 0;
    if (st == NB_OK) {
        int *fill = x.rdispl;
        memcpy(fill, x.sdispl, (size_t)size * sizeof(int));
        memset(t.stamp, 0, (size_t)size * sizeof(int32_t));
        for (size_t i = 0; i < m->n_own; i++) {
            const double *q = m->own_xyz + i * (size_t)dim;
            t.point = (int32_t)i + 1;
            nbi_targets(&t, q);
            for (int32_t k = 0; k < t.n; k++)
                nbi_pack(send + (size_t)fill[t.list[k]]++ * rec, q, dim, m->own_id[i]);
        }
        st = nbi_exchange(m, &x, send, rec, &recv, &nrecv, &m->stats.halo_bytes_sent,
                          &m->stats.halo_bytes_received);
        m->stats.bytes_sent += m->stats.halo_bytes_sent;
        m->stats.bytes_received += m->stats.halo_bytes_received;
    }
    if (st == NB_OK) {
        m->halo_xyz = nbi_mpi_alloc(a, nrecv * (size_t)dim, sizeof(double));
        m->halo_id = nbi_mpi_alloc(a, nrecv, sizeof(int64_t));
        m->n_halo = nrecv;
        if (m->halo_xyz == NULL || m->halo_id == NULL) st = NB_ERR_OUT_OF_MEMORY;
        size_t n_img = 0;
        if (st == NB_OK) {
            nbi_unpack(recv, nrecv, dim, m->halo_xyz, m->halo_id);
            // Count the images, then fill them: received points first, then own points' images.
            for (size_t i = 0; i < m->n_halo; i++)
                n_img += nbi_images(m, m->halo_xyz + i * (size_t)dim, (int32_t)i, n_img);
            if (m->periodic)
                for (size_t i = 0; i < m->n_own; i++)
                    n_img += nbi_images(m, m->own_xyz + i * (size_t)dim, -(int32_t)i - 1, n_img);
            if (n_img > (size_t)INT32_MAX || m->n_halo > (size_t)INT32_MAX)
                st = NB_ERR_OUT_OF_RANGE;
        }
        if (st == NB_OK) {
            m->img_xyz = nbi_mpi_alloc(a, n_img * (size_t)dim, sizeof(double));
            m->img_src = nbi_mpi_alloc(a, n_img, sizeof(int32_t));
            m->img_shift = nbi_mpi_alloc(a, n_img, sizeof(uint8_t));
            m->n_img = n_img;
            if (m->img_xyz == NULL || m->img_src == NULL || m->img_shift == NULL) {
                st = NB_ERR_OUT_OF_MEMORY;
            } else {
                size_t at = 0;
                for (size_t i = 0; i < m->n_halo; i++)
                    at += nbi_images(m, m->halo_xyz + i * (size_t)dim, (int32_t)i, at);
                if (m->periodic)
                    for (size_t i = 0; i < m->n_own; i++)
                        at += nbi_images(m, m->own_xyz + i * (size_t)dim, -(int32_t)i - 1, at);
            }
        }
        st = nbi_agree(m->comm, st);
    }
    nbi_mpi_free(a, recv, nrecv, rec);
    nbi_mpi_free(a, send, total, rec);
    nbi_xfer_free(a, size, &x);
    nbi_mpi_free(a, t.stamp, (size_t)size, sizeof(int32_t));
    nbi_mpi_free(a, t.list, (size_t)size, sizeof(int32_t));
    return st;
}

// The two local grids. Agreed.
static nbStatus nbi_grids(nbMpi *m)
{
    nbGridDesc gd = {0};
    gd.dim = m->dim;
    gd.allocator = nbi_al(m);
    gd.tasks = m->has_tasks ? &m->tasks : NULL;
    nbStatus st = nb_grid_create(&gd, &m->own_grid);
    if (st == NB_OK) {
        nbPoints p = {0};
        p.data = m->own_xyz;
        p.count = (int32_t)m->n_own;
        p.dim = m->dim;
        st = nb_grid_build(m->own_grid, &p, m->radius);
    }
    if (st == NB_OK) {
        gd.tasks = NULL;
        st = nb_grid_create(&gd, &m->img_grid);
    }
    if (st == NB_OK) {
        nbPoints p = {0};
        p.data = m->img_xyz;
        p.count = (int32_t)m->n_img;
        p.dim = m->dim;
        st = nb_grid_build(m->img_grid, &p, m->reach);
    }
    return nbi_agree(m->comm, st);
}

// The stats that describe the index as built: counts and this rank's brick.
static void nbi_finish_stats(nbMpi *m)
{
    m->stats.owned = m->n_own;
    m->stats.halo = m->n_halo;
    m->stats.images = m->n_img;
    for (int32_t a = 0; a < m->dim; a++) {
        m->stats.lo[a] = m->dec.lo[3 * m->rank + a];
        m->stats.hi[a] = m->dec.hi[3 * m->rank + a];
    }
}

nbStatus nb_mpi_create(const nbMpiDesc *desc, const double *xyz, const int64_t *ids, size_t n,
                       nbMpi **out)
{
    if (out != NULL) *out = NULL;
    if (desc == NULL) return NB_ERR_NULL_ARG;
    MPI_Comm comm;
    MPI_Comm_dup(desc->comm, &comm);
    int32_t dim = 2;
    nbStatus st = nbi_check_create(desc, xyz, ids, n, out, &dim);
    nbMpi *m = NULL;
    if (st == NB_OK) {
        m = nbi_mpi_alloc(desc->allocator, 1, sizeof(nbMpi));
        if (m == NULL) st = NB_ERR_OUT_OF_MEMORY;
    }
    st = nbi_agree(comm, st);
    if (st != NB_OK) {
        if (m != NULL) nbi_mpi_free(desc->allocator, m, 1, sizeof(nbMpi));
        MPI_Comm_free(&comm);
        return st;
    }
    memset(m, 0, sizeof(*m));
    m->comm = comm;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    m->rank = rank;
    m->size = size;
    m->dim = dim;
    m->radius = desc->radius;
    for (int32_t a = 0; a < 3; a++) {
        m->period[a] = desc->period[a];
        if (m->period[a] > 0.0) m->periodic = true;
    }
    if (desc->allocator != NULL && desc->allocator->alloc != NULL) {
        m->alloc = *desc->allocator;
        m->has_alloc = true;
    }
    if (desc->tasks != NULL && desc->tasks->parallel_for != NULL) {
        m->tasks = *desc->tasks;
        m->has_tasks = true;
    }
    m->stats.rank = rank;
    m->stats.size = size;
    st = nbi_decompose(m, xyz, n);
    if (st == NB_OK) st = nbi_migrate(m, xyz, ids, n);
    if (st == NB_OK) st = nbi_halo(m);
    if (st == NB_OK) st = nbi_grids(m);
    if (st != NB_OK) {
        nb_mpi_destroy(m);
        return st;
    }
    nbi_finish_stats(m);
    *out = m;
    return NB_OK;
}

nbStatus nb_mpi_update(nbMpi *m, const double *xyz, const int64_t *ids, size_t n)
{
    if (m == NULL) return NB_ERR_NULL_ARG;
    // The same checks as create, on this index's desc.
    nbMpiDesc d;
    memset(&d, 0, sizeof(d));
    d.dim = m->dim;
    d.radius = m->radius;
    for (int32_t a = 0; a < 3; a++) d.period[a] = m->period[a];
    nbMpi *t = NULL, **dummy = &t;
    int32_t dim;
    nbStatus st = nbi_check_create(&d, xyz, ids, n, dummy, &dim);
    st = nbi_agree(m->comm, st);
    if (st != NB_OK) return st;
    // A new index with a copy of the bricks, whose outer faces grow to the new root box.
    const nbAllocator *a = nbi_al(m);
    double root_lo[3], root_hi[3];
    const uint64_t total = nbi_root_box(m, xyz, n, root_lo, root_hi);
    const size_t size = (size_t)m->size;
    t = nbi_mpi_alloc(a, 1, sizeof(nbMpi));
    if (t != NULL) {
        *t = *m;
        t->n_own = t->n_halo = t->n_img = 0;
        t->own_xyz = t->halo_xyz = t->img_xyz = NULL;
        t->own_id = t->halo_id = NULL;
        t->img_src = NULL;
        t->img_shift = NULL;
        t->own_grid = t->img_grid = NULL;
        memset(&t->stats, 0, sizeof(t->stats));
        t->stats.rank = m->rank;
        t->stats.size = m->size;
        t->stats.total = total;
        t->dec.cuts = nbi_mpi_alloc(a, size, sizeof(nbiCut));
        t->dec.lo = nbi_mpi_alloc(a, 3 * size, sizeof(double));
        t->dec.hi = nbi_mpi_alloc(a, 3 * size, sizeof(double));
    }
    if (t == NULL || t->dec.cuts == NULL || t->dec.lo == NULL || t->dec.hi == NULL) {
        st = NB_ERR_OUT_OF_MEMORY;
    } else {
        memcpy(t->dec.cuts, m->dec.cuts, size * sizeof(nbiCut));
        memcpy(t->dec.lo, m->dec.lo, 3 * size * sizeof(double));
        memcpy(t->dec.hi, m->dec.hi, 3 * size * sizeof(double));
        for (int32_t ax = 0; ax < dim; ax++) {
            if (m->period[ax] > 0.0 || total == 0) continue;
            const double lo = fmin(root_lo[ax], m->dec.root_lo[ax]);
            const double hi = fmax(root_hi[ax], m->dec.root_hi[ax]);
            // A brick on an outer face owns every point beyond it (the cuts decide ownership):
            // its box grows with the data, so that the halo tests still contain its points.
            for (size_t k = 0; k < size; k++) {
                if (t->dec.lo[3 * k + (size_t)ax] == m->dec.root_lo[ax])
                    t->dec.lo[3 * k + (size_t)ax] = lo;
                if (t->dec.hi[3 * k + (size_t)ax] == m->dec.root_hi[ax])
                    t->dec.hi[3 * k + (size_t)ax] = hi;
            }
            t->dec.root_lo[ax] = lo;
            t->dec.root_hi[ax] = hi;
        }
        t->reach = nbi_halo_reach(t->radius, nbi_max_abs(&t->dec, t->period));
    }
    st = nbi_agree(m->comm, st);
    if (st == NB_OK) st = nbi_migrate(t, xyz, ids, n);
    if (st == NB_OK) st = nbi_halo(t);
    if (st == NB_OK) st = nbi_grids(t);
    if (st != NB_OK) {
        if (t != NULL) {
            nbi_mpi_release(t);
            nbi_mpi_free(a, t, 1, sizeof(nbMpi));
        }
        return st;
    }
    nbi_mpi_release(m);
    *m = *t;
    nbi_mpi_free(a, t, 1, sizeof(nbMpi));
    nbi_finish_stats(m);
    return NB_OK;
}

void nb_mpi_destroy(nbMpi *m)
{
    if (m == NULL) return;
    nbi_mpi_release(m);
    MPI_Comm_free(&m->comm);
    nbAllocator a = m->alloc;
    const bool has = m->has_alloc;
    nbi_mpi_free(has ? &a : NULL, m, 1, sizeof(nbMpi));
}

// ---- pairs ----

// One pair sink for the three pair calls: count, fill a buffer, or call the user's function.
typedef struct nbiMpiSink {
    const nbMpi *m;
    nbMpiPair *out;
    size_t cap;
    size_t found;
    nbMpiPairFn *fn;
    void *user;
    bool stopped;
} nbiMpiSink;

static bool nbi_emit(nbiMpiSink *s, int64_t a, int64_t b)
{
    const int64_t i = a < b ? a : b, j = a < b ? b : a;
    if (s->fn != NULL) {
        if (!s->fn(i, j, s->user)) s->stopped = true;
        return !s->stopped;
    }
    if (s->found < s->cap) {
        s->out[s->found].i = i;
        s->out[s->found].j = j;
    }
    s->found++;
    return true;
}

static bool nbi_own_pair(int32_t i, int32_t j, void *user)
{
    nbiMpiSink *s = user;
    return nbi_emit(s, s->m->own_id[i], s->m->own_id[j]);
}

// The global id and original coordinates of image e's point; false when the candidate (own
// point i, image e) is not a pair to report (see the top of the file).
static bool nbi_cross_keep(const nbMpi *m, int32_t i, int32_t e, int64_t *id)
{
    const int32_t src = m->img_src[e];
    if (!m->periodic) {
        *id = m->halo_id[src];
        return true;
    }
    const double *q;
    if (src >= 0) {
        q = m->halo_xyz + (size_t)src * (size_t)m->dim;
        *id = m->halo_id[src];
    } else {
        const int32_t o = -(src + 1);
        if (o <= i) return false;
        q = m->own_xyz + (size_t)o * (size_t)m->dim;
        *id = m->own_id[o];
    }
    int32_t code;
    const double d2 =
        nbi_wrap_dist2(m->own_xyz + (size_t)i * (size_t)m->dim, q, m->dim, m->period, &code);
    return d2 <= m->radius * m->radius && code == (int32_t)m->img_shift[e];
}

static bool nbi_cross_pair(int32_t i, int32_t e, void *user)
{
    nbiMpiSink *s = user;
    int64_t id;
    if (!nbi_cross_keep(s->m, i, e, &id)) return true;
    return nbi_emit(s, s->m->own_id[i], id);
}

// The cross pairs' radius: exact r without periodic images, else the reach (then filtered).
static double nbi_cross_radius(const nbMpi *m)
{
    return m->periodic ? m->reach : m->radius;
}

static nbStatus nbi_walk(const nbMpi *m, nbiMpiSink *s)
{
    nbStatus st = nb_grid_visit_pairs(m->own_grid, m->radius, nbi_own_pair, s);
    if (st != NB_OK || s->stopped) return st;
    return nb_grid_visit_cross_pairs(m->own_grid, m->img_grid, nbi_cross_radius(m), nbi_cross_pair,
                                     s);
}

nbStatus nb_mpi_count_pairs(nbMpi *m, uint64_t *local, uint64_t *global)
{
    if (local != NULL) *local = 0;
    if (global != NULL) *global = 0;
    if (m == NULL) return NB_ERR_NULL_ARG;
    int64_t own = 0, cross = 0;
    nbStatus st = nb_grid_count_pairs(m->own_grid, m->radius, &own);
    if (st == NB_OK && !m->periodic) {
        st = nb_grid_count_cross_pairs(m->own_grid, m->img_grid, m->radius, &cross);
    } else if (st == NB_OK) {
        nbiMpiSink s = {m, NULL, 0, 0, NULL, NULL, false};
        st = nb_grid_visit_cross_pairs(m->own_grid, m->img_grid, m->reach, nbi_cross_pair, &s);
        cross = (int64_t)s.found;
    }
    st = nbi_agree(m->comm, st);
    uint64_t mine = st == NB_OK ? (uint64_t)own + (uint64_t)cross : 0, all = 0;
    if (st != NB_OK) return st;
    MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, m->comm);
    if (local != NULL) *local = mine;
    if (global != NULL) *global = all;
    return NB_OK;
}

nbStatus nb_mpi_pairs(const nbMpi *m, nbMpiPair *out, size_t capacity, size_t *found)
{
    if (found != NULL) *found = 0;
    if (m == NULL || found == NULL || (out == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    nbiMpiSink s = {m, out, capacity, 0, NULL, NULL, false};
    const nbStatus st = nbi_walk(m, &s);
    if (st != NB_OK) return st;
    *found = s.found;
    return s.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

nbStatus nb_mpi_visit_pairs(const nbMpi *m, nbMpiPairFn *fn, void *user)
{
    if (m == NULL || fn == NULL) return NB_ERR_NULL_ARG;
    nbiMpiSink s = {m, NULL, 0, 0, fn, user, false};
    return nbi_walk(m, &s);
}

// ---- radius queries ----

// Blocks handed to the caller carry their size in a 16-byte header, for nb_mpi_free.
static void *nbi_block_alloc(const nbMpi *m, size_t count, size_t elem)
{
    if (elem != 0 && count > (SIZE_MAX - 16) / elem) return NULL;
    unsigned char *p = nbi_mpi_alloc(nbi_al(m), count * elem + 16, 1);
    if (p == NULL) return NULL;
    const size_t bytes = count * elem + 16;
    memcpy(p, &bytes, sizeof(bytes));
    return p + 16;
}

void nb_mpi_free(const nbMpi *m, void *p)
{
    if (p == NULL) return;
    unsigned char *base = (unsigned char *)p - 16;
    size_t bytes;
    memcpy(&bytes, base, sizeof(bytes));
    nbi_mpi_free(m != NULL ? nbi_al(m) : NULL, base, bytes, 1);
}

// A growable int64 stream (the answers one rank sends back).
typedef struct nbiStream {
    const nbAllocator *a;
    int64_t *v;
    size_t n;
    size_t cap;
    bool failed;
} nbiStream;

static void nbi_push(nbiStream *s, int64_t x)
{
    if (s->failed) return;
    if (s->n == s->cap) {
        const size_t cap = s->cap < 64 ? 64 : 2 * s->cap;
        int64_t *v = nbi_mpi_alloc(s->a, cap, sizeof(int64_t));
        if (v == NULL) {
            s->failed = true;
            return;
        }
        if (s->n > 0) memcpy(v, s->v, s->n * sizeof(int64_t));
        nbi_mpi_free(s->a, s->v, s->cap, sizeof(int64_t));
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
}

typedef struct nbiAnswer {
    const nbMpi *m;
    nbiStream *out;
    const double *c; // the original centre
    double r;
    int32_t code; // the centre's shift in this pass
} nbiAnswer;

static bool nbi_answer_hit(int32_t p, void *user)
{
    nbiAnswer *q = user;
    const nbMpi *m = q->m;
    if (m->periodic) {
        int32_t code;
        // Kept only through the centre's image nearest p (the minimum image).
        const double d2 =
            nbi_wrap_dist2(m->own_xyz + (size_t)p * (size_t)m->dim, q->c, m->dim, m->period, &code);
        if (!(d2 <= q->r * q->r) || code != q->code) return true;
    }
    nbi_push(q->out, m->own_id[p]);
    return !q->out->failed;
}

// Answers one centre into the stream: the count, then the ids (unsorted).
static nbStatus nbi_answer(const nbMpi *m, const double *c, double r, nbiStream *out)
{
    const size_t at = out->n;
    nbi_push(out, 0);
    nbStatus st = NB_OK;
    if (!m->periodic) {
        nbiAnswer q = {m, out, c, r, 0};
        st = nb_grid_visit_radius(m->own_grid, c, r, NB_FILTER_ALL, nbi_answer_hit, &q);
    } else {
        const double reach = nbi_halo_reach(r, nbi_max_abs(&m->dec, m->period));
        int32_t codes[27];
        const int32_t ns = nbi_shifts(c, m->dim, m->period, reach, codes);
        for (int32_t s = 0; s < ns && st == NB_OK; s++) {
            double y[3];
            nbi_apply_shift(c, m->dim, m->period, codes[s], y);
            if (nbi_decomp_dist2(&m->dec, m->rank, y) > reach * reach) continue;
            nbiAnswer q = {m, out, c, r, codes[s]};
            st = nb_grid_visit_radius(m->own_grid, y, reach, NB_FILTER_ALL, nbi_answer_hit, &q);
        }
    }
    if (out->failed) return NB_ERR_OUT_OF_MEMORY;
    out->v[at] = (int64_t)(out->n - at - 1);
    return st;
}

typedef struct nbiRoute {
    int32_t *stamp;
    int32_t point;
    int32_t *list;
    int32_t n;
} nbiRoute;

static void nbi_add_route(int32_t k, void *user)
{
    nbiRoute *t = user;
    if (t->stamp[k] == t->point) return;
    t->stamp[k] = t->point;
    t->list[t->n++] = k;
}

static void nbi_route(const nbMpi *m, nbiRoute *t, const double *c, double r)
{
    double maxabs = nbi_max_abs(&m->dec, m->period);
    for (int32_t a = 0; a < m->dim; a++) maxabs = fmax(maxabs, fabs(c[a]));
    const double reach = nbi_halo_reach(r, maxabs);
    int32_t codes[27];
    const int32_t ns = nbi_shifts(c, m->dim, m->period, reach, codes);
    t->n = 0;
    for (int32_t s = 0; s < ns; s++) {
        double y[3];
        nbi_apply_shift(c, m->dim, m->period, codes[s], y);
        nbi_decomp_near(&m->dec, y, reach, nbi_add_route, t);
    }
}

static int nbi_cmp_i64(const void *pa, const void *pb)
{
    const int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

static nbStatus nbi_check_queries(const nbMpi *m, const double *centres, size_t nq, double r)
{
    if (!isfinite(r)) return NB_ERR_NOT_FINITE;
    const size_t len = nq * (size_t)m->dim;
    for (size_t i = 0; i < len; i++)
        if (!isfinite(centres[i])) return NB_ERR_NOT_FINITE;
    if (r < 0.0 || nq > (size_t)INT32_MAX) return NB_ERR_OUT_OF_RANGE;
    for (int32_t a = 0; a < m->dim; a++)
        if (m->period[a] > 0.0 && r > m->period[a] / 2) return NB_ERR_OUT_OF_RANGE;
    for (size_t i = 0; i < len; i++) {
        const double p = m->period[i % (size_t)m->dim];
        if (p > 0.0 && !(centres[i] >= 0.0 && centres[i] < p)) return NB_ERR_OUT_OF_RANGE;
    }
    return NB_OK;
}

nbStatus nb_mpi_query_radius(nbMpi *m, const double *centres, size_t nq, double r, size_t **offsets,
                             int64_t **ids)
{
    if (offsets != NULL) *offsets = NULL;
    if (ids != NULL) *ids = NULL;
    if (m == NULL) return NB_ERR_NULL_ARG;
    const nbAllocator *a = nbi_al(m);
    const int32_t dim = m->dim, size = m->size;
    const size_t rec = ((size_t)dim + 1) * sizeof(double); // centre, r
    nbStatus st = NB_OK;
    if (offsets == NULL || ids == NULL || (centres == NULL && nq > 0)) st = NB_ERR_NULL_ARG;
    if (st == NB_OK) st = nbi_check_queries(m, centres, nq, r);
    // Route: each centre to every rank whose brick is within r of it or of a periodic image.
    nbiXfer x = {0}, back = {0};
    nbiRoute t = {NULL, 0, NULL, 0};
    int32_t *slot_q = NULL; // send slot -> query
    unsigned char *send = NULL;
    size_t nsend = 0, total = 0;
    if (st == NB_OK) {
        t.stamp = nbi_mpi_alloc(a, (size_t)size, sizeof(int32_t));
        t.list = nbi_mpi_alloc(a, (size_t)size, sizeof(int32_t));
        st = t.stamp == NULL || t.list == NULL ? NB_ERR_OUT_OF_MEMORY : nbi_xfer_alloc(a, size, &x);
        if (st == NB_OK) st = nbi_xfer_alloc(a, size, &back);
    }
    if (st == NB_OK) {
        memset(t.stamp, 0, (size_t)size * sizeof(int32_t));
        for (size_t q = 0; q < nq && st == NB_OK; q++) {
            t.point = (int32_t)q + 1;
            nbi_route(m, &t, centres + q * (size_t)dim, r);
            for (int32_t k = 0; k < t.n; k++) {
                if (x.scount[t.list[k]] == INT_MAX)
                    st = NB_ERR_OUT_OF_RANGE;
                else
                    x.scount[t.list[k]]++;
            }
        }
        if (st == NB_OK) st = nbi_displs(x.scount, x.sdispl, size, &nsend);
        if (st == NB_OK) {
            send = nbi_mpi_alloc(a, nsend, rec);
            slot_q = nbi_mpi_alloc(a, nsend, sizeof(int32_t));
            if (send == NULL || slot_q == NULL) st = NB_ERR_OUT_OF_MEMORY;
        }
    }
    st = nbi_agree(m->comm, st);
    void *recv = NULL;
    size_t nrecv = 0;
    uint64_t ignore_s = 0, ignore_r = 0;
    if (st == NB_OK) {
        int *fill = x.rdispl;
        memcpy(fill, x.sdispl, (size_t)size * sizeof(int));
        memset(t.stamp, 0, (size_t)size * sizeof(int32_t));
        for (size_t q = 0; q < nq; q++) {
            const double *c = centres + q * (size_t)dim;
            t.point = (int32_t)q + 1;
            nbi_route(m, &t, c, r);
            for (int32_t k = 0; k < t.n; k++) {
                const int slot = fill[t.list[k]]++;
                memcpy(send + (size_t)slot * rec, c, (size_t)dim * sizeof(double));
                memcpy(send + (size_t)slot * rec + (size_t)dim * sizeof(double), &r, sizeof(r));
                slot_q[slot] = (int32_t)q;
            }
        }
        st = nbi_exchange(m, &x, send, rec, &recv, &nrecv, &ignore_s, &ignore_r);
    }
    // Answer what arrived, per source rank, into one stream, and note where each rank's part
    // starts.
    nbiStream out = {a, NULL, 0, 0, false};
    void *reply = NULL;
    size_t nreply = 0;
    if (st == NB_OK) {
        for (int32_t k = 0; k < size && st == NB_OK; k++) {
            const size_t start = out.n;
            for (int i = 0; i < x.rcount[k] && st == NB_OK; i++) {
                const unsigned char *p =
                    (const unsigned char *)recv + (size_t)(x.rdispl[k] + i) * rec;
                double c[3], rq;
                memcpy(c, p, (size_t)dim * sizeof(double));
                memcpy(&rq, p + (size_t)dim * sizeof(double), sizeof(rq));
                st = nbi_answer(m, c, rq, &out);
            }
            if (out.n - start > (size_t)INT_MAX)
                st = NB_ERR_OUT_OF_RANGE;
            else
                back.scount[k] = (int)(out.n - start);
        }
        if (st == NB_OK) st = nbi_displs(back.scount, back.sdispl, size, &total);
        st = nbi_agree(m->comm, st);
        if (st == NB_OK)
            st = nbi_exchange(m, &back, out.v, sizeof(int64_t), &reply, &nreply, &ignore_s,
                              &ignore_r);
    }
    // Merge: the replies from rank k answer, in order, the queries sent to it.
    size_t *off = NULL;
    int64_t *hits = NULL;
    size_t nhits = 0;
    if (st == NB_OK) {
        const int64_t *rv = reply;
        off = nbi_block_alloc(m, nq + 1, sizeof(size_t));
        if (off == NULL) st = NB_ERR_OUT_OF_MEMORY;
        if (st == NB_OK) {
            memset(off, 0, (nq + 1) * sizeof(size_t));
            for (int32_t k = 0; k < size; k++) {
                size_t at = (size_t)back.rdispl[k];
                for (int i = 0; i < x.scount[k]; i++) {
                    const int64_t cnt = rv[at];
                    off[slot_q[x.sdispl[k] + i] + 1] += (size_t)cnt;
                    at += 1 + (size_t)cnt;
                }
            }
            for (size_t q = 0; q < nq; q++) off[q + 1] += off[q];
            nhits = off[nq];
            hits = nbi_block_alloc(m, nhits, sizeof(int64_t));
            if (hits == NULL) st = NB_ERR_OUT_OF_MEMORY;
        }
        if (st == NB_OK) {
            size_t *fill = nbi_mpi_alloc(a, nq, sizeof(size_t));
            if (fill == NULL) {
                st = NB_ERR_OUT_OF_MEMORY;
            } else {
                if (nq > 0) memcpy(fill, off, nq * sizeof(size_t));
                for (int32_t k = 0; k < size; k++) {
                    size_t at = (size_t)back.rdispl[k];
                    for (int i = 0; i < x.scount[k]; i++) {
                        const size_t q = (size_t)slot_q[x.sdispl[k] + i];
                        const size_t cnt = (size_t)rv[at];
                        if (cnt > 0) memcpy(hits + fill[q], rv + at + 1, cnt * sizeof(int64_t));
                        fill[q] += cnt;
                        at += 1 + cnt;
                    }
                }
                for (size_t q = 0; q < nq; q++)
                    qsort(hits + off[q], off[q + 1] - off[q], sizeof(int64_t), nbi_cmp_i64);
                nbi_mpi_free(a, fill, nq, sizeof(size_t));
            }
        }
        st = nbi_agree(m->comm, st);
    }
    nbi_mpi_free(a, reply, nreply, sizeof(int64_t));
    nbi_mpi_free(a, out.v, out.cap, sizeof(int64_t));
    nbi_mpi_free(a, recv, nrecv, rec);
    nbi_mpi_free(a, send, nsend, rec);
    nbi_mpi_free(a, slot_q, nsend, sizeof(int32_t));
    nbi_xfer_free(a, size, &back);
    nbi_xfer_free(a, size, &x);
    nbi_mpi_free(a, t.stamp, (size_t)size, sizeof(int32_t));
    nbi_mpi_free(a, t.list, (size_t)size, sizeof(int32_t));
    if (st != NB_OK) {
        nb_mpi_free(m, off);
        nb_mpi_free(m, hits);
        return st;
    }
    *offsets = off;
    *ids = hits;
    return NB_OK;
}

nbStatus nb_mpi_owned(const nbMpi *m, const double **xyz, const int64_t **ids, size_t *n)
{
    if (xyz != NULL) *xyz = NULL;
    if (ids != NULL) *ids = NULL;
    if (n != NULL) *n = 0;
    if (m == NULL || xyz == NULL || ids == NULL || n == NULL) return NB_ERR_NULL_ARG;
    *xyz = m->own_xyz;
    *ids = m->own_id;
    *n = m->n_own;
    return NB_OK;
}

nbStatus nb_mpi_stats(const nbMpi *m, nbMpiStats *out)
{
    if (m == NULL || out == NULL) return NB_ERR_NULL_ARG;
    *out = m->stats;
    return NB_OK;
}
