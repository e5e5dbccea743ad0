// SPDX-License-Identifier: MIT
// Private to nearby_mpi (src/mpi*.c): allocation through the desc's hooks, and the
// decomposition (the recursive coordinate bisection tree every rank computes from the same
// sample). nearby_mpi uses only nearby's public API (it links the shared or the static library),
// so it has its own small helpers here instead of src/nb_internal.h's. Never installed.
#ifndef NEARBY_MPI_INTERNAL_H
#define NEARBY_MPI_INTERNAL_H

#include <nearby/grid.h>
#include <nearby/mpi.h>

// `count` elements of `elem` bytes through the hooks (a NULL allocator: malloc), 16-aligned.
// Never NULL for count 0 unless the allocator fails; NULL on size overflow.
void *nbi_mpi_alloc(const nbAllocator *a, size_t count, size_t elem);
// Frees what nbi_mpi_alloc(a, count, elem) returned; NULL is a no-op.
void nbi_mpi_free(const nbAllocator *a, void *ptr, size_t count, size_t elem);

// One cut of the RCB tree: points with x[axis] < cut go to `lower`, the others to `upper`.
// A child >= 0 is a node index; a child < 0 is the leaf of rank -(child + 1).
typedef struct nbiCut {
    int32_t axis;
    int32_t lower;
    int32_t upper;
    double cut;
} nbiCut;

// The decomposition: `size` bricks, one per rank, from a tree of size - 1 cuts.
// Invariants: node 0 is the root when size > 1 (else the root is the leaf of rank 0); every
// rank's leaf is reached from the root exactly once; brick k is the root box cut by the cuts on
// its path, lo[3k + a] <= hi[3k + a]; every cut lies within its node's box.
typedef struct nbiDecomp {
    int32_t size;
    int32_t dim;
    nbiCut *cuts; // size - 1 of them
    double *lo;   // 3 * size: brick k's lower corner (closed)
    double *hi;   // 3 * size: its upper corner (closed for distances; owned up to < a cut)
    double root_lo[3];
    double root_hi[3];
} nbiDecomp;

// Builds the tree of `size` bricks over the root box from `ns` sample points (dim doubles each;
// reordered in place). Deterministic: the same sample in the same order gives the same tree.
// NB_ERR_OUT_OF_MEMORY (nothing kept) when an allocation fails.
nbStatus nbi_decomp_build(nbiDecomp *d, const nbAllocator *a, int32_t size, int32_t dim,
                          const double *root_lo, const double *root_hi, double *sample, size_t ns);
void nbi_decomp_free(nbiDecomp *d, const nbAllocator *a);

// The rank owning point x: the half-open rule at every cut.
int32_t nbi_decomp_owner(const nbiDecomp *d, const double *x);

// Squared distance from x to brick k (0 inside), summed in axis order.
double nbi_decomp_dist2(const nbiDecomp *d, int32_t k, const double *x);

// Calls fn(rank, user) for every rank whose brick is within `reach` of x (squared box distance
// <= reach * reach), in a fixed order.
void nbi_decomp_near(const nbiDecomp *d, const double *x, double reach,
                     void (*fn)(int32_t rank, void *user), void *user);

#endif
