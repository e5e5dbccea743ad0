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
    double period;     ///< the periodic sets: 1 (every axis wraps, points in [0, 1)); else 0
} nbbCorpus;

/// Number of sets in the corpus (what the corpus benchmark and test run): the point sets, then
/// the rectangle sets. Indices from this up to nbb_corpus_count_all() are the benchmarks'
/// older sets (clusters2d, lattice2d), made the same way but not part of the corpus, and the
/// periodic sets the scenarios run on (nbbCorpus.period = 1: a unit box wrapping on every
/// axis; puniform2d/3d uniform, pclump2d/3d one Gaussian clump of sigma 0.01 in the middle,
/// pwrap2d/3d the same clump centred on the corner, so it straddles the wrap on every axis;
/// coordinates multiples of 2^-32, so that moving them by half a period is exact).
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

/// The periodic sets' check: the points of c moved by whole multiples of 2^-32 (exactly) and
/// wrapped into [0, 1) so that the clump sits in the middle of the box, into out[n * dim]: there
/// no pair is nearer through the wrap than directly, so an ordinary (non-periodic) search of out
/// finds exactly the pairs, distances and neighbours the minimum image finds in c. Returns 0, or
/// -1 when c is not a clump set (pclump, pwrap).
int nbb_corpus_unwrap(const nbbCorpus *c, double *out);

/// m query points far outside point set c's bounding box (side W, its longest), into q[m * dim]:
/// along_axis 0: 1000 W from the box's centre in a uniform direction, each spread over a box of
/// the data's size; 1: on one axis (drawn at random) 1000 W beyond either face, the other
/// coordinates uniform inside the box.
void nbb_corpus_far_queries(const nbbCorpus *c, int along_axis, double *q, int32_t m,
                            uint64_t seed);

/// m radii log-spaced from c->radius to the diagonal of c's bounding box (a two-point
/// correlation's bins): radii[k] = radius * pow(diagonal / radius, k / (m - 1.0)).
void nbb_corpus_radii(const nbbCorpus *c, double *radii, int m);

/// The scenarios: queries, boxes and radii the sets' own shape does not suggest, each on one
/// set at a fraction of the corpus's N (nbb_scenario_n):
///   far       kNN (k = 1, 8) and radius queries from nbb_corpus_far_queries(along_axis 0)
///   axis      the same from along_axis 1
///   periodic  all pairs and the 8 nearest of every point in the periodic box; `base` is the
///             uniform periodic set of the same dimension, the C side's measure for it
///   corr      pair counts at nbb_corpus_radii (self, and against a second draw of half the
///             size: seed NBB_SCENARIO_CROSS_SEED)
typedef struct nbbScenario {
    const char *kind; ///< "far", "axis", "periodic", "corr"
    const char *set;  ///< the set it runs on
    const char *base; ///< periodic: the uniform set it is measured against; else NULL
    int32_t divisor;  ///< its N: the corpus's N / divisor, at least 1000
} nbbScenario;

#define NBB_SCENARIO_CROSS_SEED 7
#define NBB_SCENARIO_QUERIES 10000 ///< far and axis: queries a run
#define NBB_SCENARIO_RADII 8       ///< corr: radii a count

int nbb_scenario_count(void);
const nbbScenario *nbb_scenario(int k); ///< NULL for a bad k
int32_t nbb_scenario_n(const nbbScenario *s, int32_t corpus_n);

/// splitmix64, uniform [0, 1) and a pair of standard normals (Box-Muller) from one stream: the
/// generators' random numbers, for the front ends that draw their own.
uint64_t nbb_rng_next(uint64_t *state);
double nbb_rng_unit(uint64_t *state);
void nbb_rng_gauss2(uint64_t *state, double *g0, double *g1);

#ifdef __cplusplus
}
#endif

#endif
