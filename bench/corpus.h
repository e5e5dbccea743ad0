// SPDX-License-Identifier: MIT
// The corpus of distributions: fixed-seed generators of point and rectangle sets shaped like the
// data people bring (clustered, heavy-tailed, on surfaces, along roads, off-centre frames, heavy
// duplicates), at any N, each with the query radius that gives about 10 neighbours a point.
// Shared by the benchmarks (bench_corpus.cpp; gen_data writes the sets as files for the Python
// side) and the tests (tests/test_corpus.c runs every set at small N against brute force).
// Not part of nearby. See docs/benchmarking.md, "Corpus".
#ifndef NB_BENCH_CORPUS_H
#define NB_BENCH_CORPUS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Neighbours a point has on average at the radius nbb_corpus_make records.
#define NBB_CORPUS_NEIGHBOURS 10.0

/// One generated set. Points: n points of dim doubles, interleaved (x0 y0 [z0] x1 ...).
/// Rectangles (rects = 1, dim = 2): n rectangles of 4 doubles, minx miny maxx maxy.
typedef struct nbbCorpus {
    const char *name;  ///< e.g. "blobs2d", "rect_utm"
    const char *about; ///< one line: what the set is
    int dim;           ///< 2 or 3
    int rects;         ///< 0: points; 1: rectangles
    int32_t n;         ///< points or rectangles (lattice2d rounds N down to a square)
    double *data;      ///< malloc'd; n * dim (points) or n * 4 (rectangles) doubles
    double radius;     ///< points: the radius giving NBB_CORPUS_NEIGHBOURS on average; rects: 0
} nbbCorpus;

/// Number of sets in the corpus (what the corpus benchmark and test run): the point sets, then
/// the rectangle sets. Indices from this up to nbb_corpus_count_all() are the benchmarks'
/// older sets (clusters2d, lattice2d), made the same way but not part of the corpus.
int nbb_corpus_count(void);
int nbb_corpus_count_all(void);

/// The index of the set called `name`, or -1.
int nbb_corpus_find(const char *name);

/// Name, dimension and kind of set `index` without making it (NULL / 0 for a bad index).
const char *nbb_corpus_name(int index);
int nbb_corpus_dim(int index);
int nbb_corpus_is_rects(int index);

/// Makes set `index` with n items (n >= 1) into *out. seed 0 is the set's own fixed seed (the
/// files the benchmarks share); any other seed gives another draw of the same distribution.
/// Computes the radius for point sets (nbb_corpus_radius). Returns 0, -1 for a bad index or n,
/// 1 when memory runs out (*out then holds nothing).
int nbb_corpus_make(int index, int32_t n, uint64_t seed, nbbCorpus *out);

/// Frees what nbb_corpus_make allocated; *c is zeroed.
void nbb_corpus_free(nbbCorpus *c);

/// The radius r at which the n points p have `neighbours` others within r on average (a pair
/// within r counts for both), estimated from all pairs of a subsample of up to 4000 points (the
/// k-th smallest distance among them, k the pairs that mean implies): exact when n <= 4000,
/// within about 10% at 200k points. 0 when duplicates alone reach the mean.
double nbb_corpus_radius(const double *p, int32_t n, int dim, double neighbours);

/// m query windows for rectangle set c (as minx miny maxx maxy into w[4m]): each centred within
/// 5 of the centre of a rectangle of the set drawn at random, sides uniform in [5, 20].
void nbb_corpus_windows(const nbbCorpus *c, double *w, int32_t m, uint64_t seed);

/// One frame of the moving workload: every rectangle's centre steps uniformly in [-0.5, 0.5] per
/// axis, its size kept. *state carries the random stream from frame to frame (start it at any
/// fixed value).
void nbb_corpus_step(double *r, int32_t n, uint64_t *state);

/// splitmix64, uniform [0, 1) and a pair of standard normals (Box-Muller) from one stream: the
/// generators' random numbers, for the front ends that draw their own.
uint64_t nbb_rng_next(uint64_t *state);
double nbb_rng_unit(uint64_t *state);
void nbb_rng_gauss2(uint64_t *state, double *g0, double *g1);

#ifdef __cplusplus
}
#endif

#endif
