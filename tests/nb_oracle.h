// SPDX-License-Identifier: MIT
// The brute-force oracle every structure's tests compare against: point sets, the exact
// distance test, all pairs by the O(N^2) loop, and the orderings results are compared in.
#ifndef NEARBY_NB_ORACLE_H
#define NEARBY_NB_ORACLE_H

#include <nearby/nearby.h>

#include <stdlib.h>

// A point set: n points of dim doubles, interleaved.
typedef struct Set {
    double *p; // n * dim
    int32_t n, dim;
} Set;

static inline Set set_new(int32_t n, int dim)
{
    Set s = {(double *)calloc((size_t)n * (size_t)dim + 3, sizeof(double)), n, dim};
    return s;
}

static inline void set_free(Set *s)
{
    free(s->p);
}

// The contract's test: dx*dx + dy*dy (+ dz*dz) in double, summed left to right.
static inline double d2_of(const double *a, const double *b, int dim)
{
    double dx = a[0] - b[0], dy = a[1] - b[1];
    double d2 = dx * dx + dy * dy;
    if (dim == 3) {
        double dz = a[2] - b[2];
        d2 = d2 + dz * dz;
    }
    return d2;
}

// Orders pairs by (i, j), indices ascending, neighbours by (dist2, index).
static inline int cmp_pair(const void *a, const void *b)
{
    const nbPair *x = (const nbPair *)a, *y = (const nbPair *)b;
    if (x->i != y->i) return x->i < y->i ? -1 : 1;
    return x->j < y->j ? -1 : x->j > y->j;
}

static inline int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

static inline int cmp_nb(const void *a, const void *b)
{
    const nbNeighbor *x = (const nbNeighbor *)a, *y = (const nbNeighbor *)b;
    if (x->dist2 != y->dist2) return x->dist2 < y->dist2 ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

// Every pair (i < j) within r, by brute force, in (i, j) order; *count gets how many. Caller frees.
static inline nbPair *brute_pairs(const Set *s, double r, int64_t *count)
{
    int64_t cap = 1024, n = 0;
    nbPair *out = (nbPair *)malloc((size_t)cap * sizeof(nbPair));
    for (int32_t i = 0; i < s->n; i++)
        for (int32_t j = i + 1; j < s->n; j++)
            if (d2_of(s->p + (size_t)i * s->dim, s->p + (size_t)j * s->dim, s->dim) <= r * r) {
                if (n == cap) {
                    cap *= 2;
                    out = (nbPair *)realloc(out, (size_t)cap * sizeof(nbPair));
                }
                out[n].i = i;
                out[n].j = j;
                n++;
            }
    *count = n;
    return out;
}

#endif
