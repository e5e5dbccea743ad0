// SPDX-License-Identifier: MIT
// nearby_mpi: a first stub so that the CLI can build against the header; every call returns
// NB_ERR_INTERNAL on every rank.
#include "mpi_internal.h"

#include <stdlib.h>

struct nbMpi {
    MPI_Comm comm;
};

nbStatus nb_mpi_create(const nbMpiDesc *desc, const double *xyz, const int64_t *ids, size_t n,
                       nbMpi **out)
{
    (void)xyz;
    (void)ids;
    (void)n;
    if (out != NULL) *out = NULL;
    if (desc == NULL) return NB_ERR_NULL_ARG;
    return NB_ERR_INTERNAL;
}

void nb_mpi_destroy(nbMpi *m)
{
    free(m);
}

nbStatus nb_mpi_count_pairs(nbMpi *m, uint64_t *local, uint64_t *global)
{
    if (local != NULL) *local = 0;
    if (global != NULL) *global = 0;
    return m == NULL ? NB_ERR_NULL_ARG : NB_ERR_INTERNAL;
}

nbStatus nb_mpi_pairs(const nbMpi *m, nbMpiPair *out, size_t capacity, size_t *found)
{
    (void)out;
    (void)capacity;
    if (found != NULL) *found = 0;
    return m == NULL ? NB_ERR_NULL_ARG : NB_ERR_INTERNAL;
}

nbStatus nb_mpi_visit_pairs(const nbMpi *m, nbMpiPairFn *fn, void *user)
{
    (void)fn;
    (void)user;
    return m == NULL ? NB_ERR_NULL_ARG : NB_ERR_INTERNAL;
}

nbStatus nb_mpi_query_radius(nbMpi *m, const double *centres, size_t nq, double r, size_t **offsets,
                             int64_t **ids)
{
    (void)centres;
    (void)nq;
    (void)r;
    if (offsets != NULL) *offsets = NULL;
    if (ids != NULL) *ids = NULL;
    return m == NULL ? NB_ERR_NULL_ARG : NB_ERR_INTERNAL;
}

void nb_mpi_free(const nbMpi *m, void *p)
{
    (void)m;
    free(p);
}

nbStatus nb_mpi_stats(const nbMpi *m, nbMpiStats *out)
{
    if (m == NULL || out == NULL) return NB_ERR_NULL_ARG;
    return NB_ERR_INTERNAL;
}
