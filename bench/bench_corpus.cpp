// SPDX-License-Identifier: MIT
// The corpus benchmark, C side (docs/benchmarking.md, "Corpus"): every set of corpus.h, in one
// process, nearby as a user calls it (default descs, the grid built for the set's radius)
// against nanoflann (point sets) and Boost.Geometry's packed rtree (rectangle sets). For each
// operation the two peers' runs alternate (nearby, peer, nearby, ...), so both see the same
// noise from a shared machine; the figure is the median run. Every answer is checked: each
// peer's count and checksum must be the same in every run and the same as the other peer's.
//
// Point sets (N points, r the set's radius, Q queries = the first Q points of the set):
//   build       nearby: nb_grid_create (zeroed desc but dim) + nb_grid_build(points, r);
//               nanoflann: its k-d tree (leaf 32, as bench_nanoflann.cpp) constructed and built
//   pairs       build + every pair within r written to a buffer (nb_grid_pairs; nanoflann: a
//               radius search from every point in the tree's order keeping j > i)
//   count       build + the number of those pairs (nb_grid_count_pairs; nanoflann: counting)
//   radius      Q radius queries at r on a built structure (nb_grid_query_radius; nanoflann's
//               findNeighbors with a result set that tallies), build not timed
//   knn1/8/32   Q k-nearest queries on the same structures (nb_grid_knn on the grid built for r;
//               nanoflann's knnSearch), build not timed; checked by the distances (ties may
//               name different points)
//   knnmany8/32 the same Q queries' k nearest in one nb_grid_knn_many call, against the same
//               nanoflann loop
// Rectangle sets (M rectangles, corpus.h's windows and moving workload):
//   build       nearby: nb_quadtree_create (zeroed desc) + nb_quadtree_build; Boost: the
//               packed rtree from the (box, index) values (converting included)
//   windows     W windows (nbb_corpus_windows), hits tallied (nb_quadtree_query_box)
//   overlaps    every overlapping pair of the M rectangles (nb_quadtree_visit_pairs; Boost: a
//               self-query per rectangle keeping j > i)
//   moving      F frames: each nbb_corpus_step (not timed), then the structure's update
//               (nb_quadtree_move_many of every rectangle; Boost: the packed rtree rebuilt) and
//               one window per rectangle, the rectangle itself; the median frame
//
// The scenarios (corpus.h's nbbScenario; after the sets, each at its fraction of N, with a
// quarter of the budget an operation; the rows' kind column names the scenario):
//   far, axis   radius (each query at its distance to its nearest point plus r), knn1, knn8 from
//               NBB_SCENARIO_QUERIES queries far outside the box, on built structures, against
//               nanoflann
//   periodic    pairs (build + all pairs), knn8 (every point's 8 nearest, built grid) and
//               knnmany8 (the same in one nb_grid_knn_many call) in the
//               periodic box, against the same on the uniform periodic set of that size and
//               dimension (peer periodic_uniform: nanoflann has no periodic box); the clumps'
//               answers checked against a plain grid over nbb_corpus_unwrap's points
//   corr        self and cross: build + nb_grid_count_pairs / nb_grid_count_cross_pairs at each
//               of nbb_corpus_radii; no peer, checked against brute force (a refusal counts as
//               a wrong answer)
//
// CSV on stdout, a header and then one line per (set, operation, peer):
//   set,kind,dim,n,radius,operation,peer,median_ms,min_ms,runs,count,checksum
// and at the end `mismatches,K`. Exit status 1 when any answer differed.
//
//   bench_corpus [--n N] [--rects-n M] [--queries Q] [--windows W] [--frames F] [--runs K]
//                [--budget S] [--only SET|KIND,...] [--no-scenarios | --scenarios-only]
// Defaults: N 200000, M 100000, Q 20000, W 10000, F 10, K 5, S 4: an operation's runs (the
// moving frames: after 3) stop early once they have taken S seconds (the row says how many
// ran), so that a cliff of 100x costs one run, not K; and a radius or kNN operation whose Q
// queries would take nearby more than S / 4 (a probe of 200 says so) runs as many as fit, for
// both peers (stderr says how many; the count column shows it).
#include "bench_common.h"
#include "corpus.h"

#include <nearby/grid.h>
#include <nearby/quadtree.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#ifdef NBB_HAVE_NANOFLANN
#include <nanoflann.hpp>

#include "nanoflann_peer.h"
#endif
#ifdef NBB_HAVE_BOOST
#include "rects_boost.h"
#else
#include "rects_common.h"
#endif

namespace {

struct Options {
    int32_t n = 200000, rects_n = 100000, queries = 20000, windows = 10000, frames = 10;
    int runs = 5;
    double budget = 4.0; // seconds a (set, operation) may take before its runs stop early
    std::string only;
    bool sets = true, scenarios = true;
};

// What one run of one peer's operation gives back: its time and its answer.
struct Run {
    int64_t ns;
    uint64_t count, sum;
};

int mismatches = 0;
double budget_ns = 4e9;
const char *row_kind = nullptr; // the kind column: the scenario's while one runs, else the set's

void die(const char *what, nbStatus s)
{
    std::fprintf(stderr, "bench_corpus: %s: %s\n", what, nb_status_str(s));
    std::exit(1);
}

void ok(nbStatus s, const char *what)
{
    if (s != NB_OK) die(what, s);
}

uint64_t bits(double d)
{
    uint64_t b;
    std::memcpy(&b, &d, sizeof b);
    return b;
}

// One untimed run of each side before a build's timed runs: the first set a process runs would
// otherwise pay the allocator's first page faults in its build rows (both peers; the rectangle
// sets' build ratios moved by 15-75% with the order of the sets).
template <class A, class B> void warm_up(A a, B b, bool have_peer)
{
    a();
    if (have_peer) b();
}

// The rows of one (set, operation): runs of `a` (nearby) and `b` (the peer, when have_peer)
// alternate. Each must give the same answer every run and the same as the other; with
// `varying` (the moving frames: each run is another frame) only the same as the other, run by
// run, and the rows report the answers summed over the runs.
//
// With `queries` (the count the lambdas read), a probe of `a` on the first 200 of `all` queries
// comes first (twice, not timed): when all of them would take more than a quarter of the budget (a
// cliff), *queries is cut to as many as fit, for both peers (stderr says so).
// With `expect` (the scenarios whose peer answers another question: the periodic sets' uniform
// measure, or no peer at all), the peers are not compared with each other: each must give the
// same answer every run, and `a`'s must equal expect() (called after the runs, so it sees the
// queries the probe left).
template <class A, class B>
void measure(const nbbCorpus &c, const char *op, const char *peer, int runs, A a, B b,
             bool have_peer, bool varying = false, int32_t *queries = nullptr, int32_t all = 0,
             const std::function<Run()> &expect = nullptr)
{
    if (queries != nullptr) {
        *queries = all < 200 ? all : 200;
        int64_t probe = a().ns, again = a().ns; // the faster of two: a shared machine stalls
        double per = double(probe < again ? probe : again) / *queries;
        double room = 0.25 * budget_ns / (per > 0.0 ? per : 1.0);
        *queries = room >= double(all) ? all : (room > *queries ? int32_t(room) : *queries);
        if (*queries < all)
            std::fprintf(stderr, "bench_corpus: %s %s: %d of %d queries (%.0f us a query)\n",
                         c.name, op, (int)*queries, (int)all, per / 1e3);
    }
    int64_t ta[NBB_MAX_RUNS], tb[NBB_MAX_RUNS];
    Run first_a{0, 0, 0}, first_b{0, 0, 0};
    bool same = true;
    int64_t spent = 0;
    for (int k = 0; k < runs; k++) {
        if (k >= (varying ? 3 : 1) && double(spent) > budget_ns) { // a cliff: fewer runs
            runs = k;
            break;
        }
        Run ra = a();
        ta[k] = ra.ns;
        Run rb = have_peer ? b() : ra;
        tb[k] = rb.ns;
        spent += ra.ns + (have_peer ? rb.ns : 0);
        if (varying) {
            same = same && ra.count == rb.count && ra.sum == rb.sum;
            first_a = Run{0, first_a.count + ra.count, first_a.sum + ra.sum};
            first_b = Run{0, first_b.count + rb.count, first_b.sum + rb.sum};
            continue;
        }
        if (k == 0) {
            first_a = ra;
            first_b = rb;
        }
        same = same && ra.count == first_a.count && ra.sum == first_a.sum &&
               rb.count == first_b.count && rb.sum == first_b.sum;
    }
    if (expect) {
        const Run want = expect();
        same = same && first_a.count == want.count && first_a.sum == want.sum;
        if (!same)
            std::fprintf(stderr, "bench_corpus: expected %llu/%016llx\n",
                         (unsigned long long)want.count, (unsigned long long)want.sum);
    } else {
        same = same && first_a.count == first_b.count && first_a.sum == first_b.sum;
    }
    if (!same) {
        mismatches++;
        std::fprintf(stderr, "bench_corpus: MISMATCH %s %s: nearby %llu/%016llx, %s %llu/%016llx\n",
                     c.name, op, (unsigned long long)first_a.count, (unsigned long long)first_a.sum,
                     peer, (unsigned long long)first_b.count, (unsigned long long)first_b.sum);
    }
    auto row = [&](const char *who, const int64_t *t, const Run &r) {
        int64_t mn, md;
        nbb_stats(t, runs, &mn, &md);
        std::printf("%s,%s,%d,%d,%.17g,%s,%s,%.4f,%.4f,%d,%llu,%016llx\n", c.name,
                    row_kind != nullptr ? row_kind
                    : c.rects           ? "rects"
                                        : "points",
                    c.dim, (int)c.n, c.radius, op, who, (double)md / 1e6, (double)mn / 1e6, runs,
                    (unsigned long long)r.count, (unsigned long long)r.sum);
    };
    row("nearby", ta, first_a);
    if (have_peer) row(peer, tb, first_b);
    std::fflush(stdout);
}

// ---- point sets ----

nbGrid *grid_for(const nbbCorpus &c)
{
    nbGridDesc desc{};
    desc.dim = c.dim;
    for (int d = 0; d < c.dim; d++) desc.period[d] = c.period;
    nbGrid *g = nullptr;
    ok(nb_grid_create(&desc, &g), "nb_grid_create");
    nbPoints v{};
    v.data = c.data;
    v.count = c.n;
    v.dim = c.dim;
    ok(nb_grid_build(g, &v, c.radius), "nb_grid_build");
    return g;
}

uint64_t pair_sum(const nbPair *p, int64_t n)
{
    uint64_t s = 0;
    for (int64_t k = 0; k < n; k++) s += nbb_pair_hash(uint32_t(p[k].i), uint32_t(p[k].j));
    return s;
}

#ifdef NBB_HAVE_NANOFLANN
template <int D> struct Flann {
    FlatPoints<D> pts;
    nanoflann::KDTreeSingleIndexAdaptorParams params{32};
    Flann(const nbbCorpus &c) : pts{c.data, size_t(c.n)} {}
};

// Every pair from a radius search at every point, in the tree's order (bench_nanoflann.cpp).
template <int D> void flann_pairs(const NfTree<D> &tree, const double *p, PairSink &s)
{
    const nanoflann::SearchParams sp(32, 0.0f, false);
    s.found = 0;
    s.sum = 0;
    for (uint32_t self : tree.vAcc) {
        s.self = self;
        tree.findNeighbors(s, p + size_t(self) * D, sp);
    }
}
#endif

// Build (at the set's radius) + all pairs within it into buf (sized beforehand), or counted.
Run nearby_pairs(const nbbCorpus &c, std::vector<nbPair> &buf, bool count_only)
{
    int64_t t0 = nbb_now_ns(), found = 0;
    nbGrid *grid = grid_for(c);
    if (count_only)
        ok(nb_grid_count_pairs(grid, c.radius, &found), "nb_grid_count_pairs");
    else
        ok(nb_grid_pairs(grid, c.radius, buf.data(), int64_t(buf.size()), &found), "nb_grid_pairs");
    Run run{nbb_now_ns() - t0, uint64_t(found), 0};
    nb_grid_destroy(grid);
    if (!count_only) run.sum = pair_sum(buf.data(), found);
    return run;
}

// The pair buffer for set c: sized by a first count.
std::vector<nbPair> pair_buffer(const nbbCorpus &c)
{
    nbGrid *g = grid_for(c);
    int64_t npairs = 0;
    ok(nb_grid_count_pairs(g, c.radius, &npairs), "nb_grid_count_pairs");
    nb_grid_destroy(g);
    return std::vector<nbPair>(size_t(npairs > 0 ? npairs : 1));
}

// The k (at most 32) nearest of each of the qn queries at q (dim doubles each) on grid g: the
// count found and the sum of the squared distances' bits.
Run nearby_knn(const nbGrid *g, const double *q, int32_t qn, int dim, int32_t k)
{
    nbNeighbor nb[32];
    Run run{0, 0, 0};
    int64_t t0 = nbb_now_ns();
    for (int32_t i = 0; i < qn; i++) {
        int32_t found = 0;
        ok(nb_grid_knn(g, q + size_t(i) * size_t(dim), NB_FILTER_ALL, (double)INFINITY, nb, k,
                       &found),
           "nb_grid_knn");
        run.count += uint64_t(found);
        for (int32_t m = 0; m < found; m++) run.sum += bits(nb[m].dist2);
    }
    run.ns = nbb_now_ns() - t0;
    return run;
}

// The same answers from one nb_grid_knn_many call over the qn queries (k <= 32).
Run nearby_knn_many(const nbGrid *g, const double *q, int32_t qn, int dim, int32_t k)
{
    std::vector<nbNeighbor> nb(size_t(qn) * size_t(k) + 1);
    std::vector<int32_t> found(size_t(qn) + 1);
    const nbPoints view = {q, qn, dim, 0, nullptr, 0, nullptr, 0};
    Run run{0, 0, 0};
    int64_t t0 = nbb_now_ns();
    ok(nb_grid_knn_many(g, &view, NB_FILTER_ALL, (double)INFINITY, nb.data(), k, found.data()),
       "nb_grid_knn_many");
    run.ns = nbb_now_ns() - t0;
    for (int32_t i = 0; i < qn; i++) {
        run.count += uint64_t(found[size_t(i)]);
        for (int32_t m = 0; m < found[size_t(i)]; m++)
            run.sum += bits(nb[size_t(i) * size_t(k) + size_t(m)].dist2);
    }
    return run;
}

#ifdef NBB_HAVE_NANOFLANN
template <int D> using PeerTree = NfTree<D>;
constexpr bool kNanoflann = true;
#else
template <int D> struct PeerTree {
};
constexpr bool kNanoflann = false;
#endif

// Radius queries from q[0..all) (D doubles each) at rq[i] (r for every query when rq is null),
// then kNN for each k of ks (at most 32), on the built grid g and the peer's tree: the rows
// "radius" and "knnK". measure() cuts the queries where nearby's would take too long.
template <int D>
void query_rows(const nbbCorpus &c, const Options &o, const nbGrid *g, const PeerTree<D> &tree,
                const double *q, int32_t all, const double *rq, const int32_t *ks, int nks)
{
    (void)tree;
    std::vector<int32_t> hits(size_t(c.n));
    int32_t qn = all; // the queries an operation runs (measure cuts them on a cliff)
    auto radius_of = [&](int32_t i) { return rq != nullptr ? rq[i] : c.radius; };
    measure(
        c, "radius", "nanoflann", o.runs,
        [&] {
            Run run{0, 0, 0};
            int64_t t0 = nbb_now_ns();
            for (int32_t i = 0; i < qn; i++) {
                int32_t found = 0;
                ok(nb_grid_query_radius(g, q + size_t(i) * D, radius_of(i), NB_FILTER_ALL,
                                        hits.data(), c.n, &found),
                   "nb_grid_query_radius");
                run.count += uint64_t(found);
                for (int32_t k = 0; k < found; k++) run.sum += uint64_t(hits[size_t(k)]);
            }
            run.ns = nbb_now_ns() - t0;
            return run;
        },
        [&] {
#ifdef NBB_HAVE_NANOFLANN
            const nanoflann::SearchParams sp(32, 0.0f, false);
            PairSink t{0.0, -1, nullptr, 0, 0, 0}; // every hit, tallied
            const double r2 = std::nextafter(c.radius * c.radius, INFINITY);
            int64_t t0 = nbb_now_ns();
            for (int32_t i = 0; i < qn; i++) {
                t.radius2 = rq != nullptr ? std::nextafter(rq[i] * rq[i], INFINITY) : r2;
                tree.findNeighbors(t, q + size_t(i) * D, sp);
            }
            return Run{nbb_now_ns() - t0, uint64_t(t.found), t.sum};
#else
            return Run{0, 0, 0};
#endif
        },
        kNanoflann, false, &qn, all);
    for (int j = 0; j < nks; j++) {
        const int32_t k = ks[j];
        auto peer = [&] {
#ifdef NBB_HAVE_NANOFLANN
            uint32_t idx[32];
            double d2[32];
            Run run{0, 0, 0};
            int64_t t0 = nbb_now_ns();
            for (int32_t i = 0; i < qn; i++) {
                size_t found = tree.knnSearch(q + size_t(i) * D, size_t(k), idx, d2);
                run.count += found;
                for (size_t m = 0; m < found; m++) run.sum += bits(d2[m]);
            }
            run.ns = nbb_now_ns() - t0;
            return run;
#else
            return Run{0, 0, 0};
#endif
        };
        char op[24];
        std::snprintf(op, sizeof op, "knn%d", (int)k);
        measure(
            c, op, "nanoflann", o.runs, [&] { return nearby_knn(g, q, qn, D, k); }, peer,
            kNanoflann, false, &qn, all);
        // The same queries in one batch (nb_grid_knn_many), against the same peer loop.
        if (k < 8 || rq != nullptr) continue; // (the point sets' 8 and 32 nearest)
        std::snprintf(op, sizeof op, "knnmany%d", (int)k);
        measure(
            c, op, "nanoflann", o.runs, [&] { return nearby_knn_many(g, q, qn, D, k); }, peer,
            kNanoflann, false, &qn, all);
    }
}

template <int D> void run_points(const nbbCorpus &c, const Options &o)
{
    const int32_t q = o.queries < c.n ? o.queries : c.n;
    const double r = c.radius;
    bool have_peer = false;
#ifdef NBB_HAVE_NANOFLANN
    have_peer = true;
    const double radius2 = std::nextafter(r * r, INFINITY);
    Flann<D> fl(c);
#endif
    std::vector<nbPair> buf = pair_buffer(c);
    nbGrid *g = grid_for(c);
    nbGridInfo gi;
    ok(nb_grid_info(g, &gi), "nb_grid_info");
    std::fprintf(stderr,
                 "bench_corpus: %s: grid of %s cells, cell %.4g, %lld cells (%.2f a point)\n",
                 c.name,
                 gi.ranked   ? "ranked"
                 : gi.hashed ? "hashed"
                             : "dense",
                 gi.cell_size, (long long)gi.cells, double(gi.cells) / c.n);
    nb_grid_destroy(g);

    auto build_nearby = [&] {
        int64_t t0 = nbb_now_ns();
        nbGrid *grid = grid_for(c);
        Run run{nbb_now_ns() - t0, uint64_t(nb_grid_count(grid)), 0};
        nb_grid_destroy(grid);
        return run;
    };
    auto build_peer = [&] {
#ifdef NBB_HAVE_NANOFLANN
        int64_t t0 = nbb_now_ns();
        NfTree<D> tree(D, fl.pts, fl.params);
        return Run{nbb_now_ns() - t0, uint64_t(tree.vAcc.size()), 0};
#else
        return Run{0, 0, 0};
#endif
    };
    warm_up(build_nearby, build_peer, have_peer);
    measure(c, "build", "nanoflann", o.runs, build_nearby, build_peer, have_peer);
    for (int count_only = 0; count_only < 2; count_only++) {
        measure(
            c, count_only ? "count" : "pairs", "nanoflann", o.runs,
            [&] { return nearby_pairs(c, buf, count_only != 0); },
            [&] {
#ifdef NBB_HAVE_NANOFLANN
                int64_t t0 = nbb_now_ns();
                NfTree<D> tree(D, fl.pts, fl.params);
                PairSink s{radius2,
                           0,
                           reinterpret_cast<PairOut *>(buf.data()),
                           count_only ? 0 : int64_t(buf.size()),
                           0,
                           0};
                flann_pairs<D>(tree, c.data, s);
                Run run{nbb_now_ns() - t0, uint64_t(s.found), 0};
                if (!count_only) // PairOut and nbPair are both two 32-bit indices
                    run.sum = pair_sum(buf.data(), s.found);
                return run;
#else
                return Run{0, 0, 0};
#endif
            },
            have_peer);
    }

    // queries on built structures
    g = grid_for(c);
#ifdef NBB_HAVE_NANOFLANN
    PeerTree<D> tree(D, fl.pts, fl.params);
#else
    PeerTree<D> tree;
#endif
    const int32_t ks[3] = {1, 8, 32};
    query_rows<D>(c, o, g, tree, c.data, q, nullptr, ks, 3);
    nb_grid_destroy(g);
}

// ---- rectangle sets ----

const int32_t kHitCap = 1 << 20;

nbQuadtree *quadtree_for(const nbbCorpus &c, std::vector<nbHandle> *handles)
{
    nbQuadtreeDesc desc{};
    nbQuadtree *qt = nullptr;
    ok(nb_quadtree_create(&desc, &qt), "nb_quadtree_create");
    ok(nb_quadtree_build(qt, reinterpret_cast<const nbRect *>(c.data), c.n, nullptr, nullptr,
                         handles ? handles->data() : nullptr),
       "nb_quadtree_build");
    return qt;
}

nbrTally nearby_windows(const nbQuadtree *qt, const double *w, int32_t m, std::vector<nbHit> &hit)
{
    nbrTally t{0, 0};
    for (int32_t k = 0; k < m; k++) {
        int32_t found = 0;
        const double *wk = w + 4 * size_t(k);
        const nbBox win = {{wk[0], wk[1], 0.0}, {wk[2], wk[3], 0.0}};
        ok(nb_quadtree_query_box(qt, &win, NB_FILTER_ALL, hit.data(), int32_t(hit.size()), &found),
           "nb_quadtree_query_box");
        for (int32_t i = 0; i < found; i++) nbr_tally_hit(&t, hit[size_t(i)].user);
    }
    return t;
}

struct PairTally {
    nbrTally t;
    uint64_t n;
};

bool on_pair(nbHit a, nbHit b, void *user)
{
    PairTally *p = static_cast<PairTally *>(user);
    nbr_tally_pair(&p->t, a.user, b.user, p->n);
    return true;
}

void run_rects(const nbbCorpus &c, const Options &o)
{
    bool have_peer = false;
#ifdef NBB_HAVE_BOOST
    have_peer = true;
    std::vector<BValue> values;
#endif
    std::vector<nbHit> hit(static_cast<size_t>(kHitCap));
    std::vector<double> win(4 * size_t(o.windows));
    nbb_corpus_windows(&c, win.data(), o.windows, 0);
    auto build_nearby = [&] {
        int64_t t0 = nbb_now_ns();
        nbQuadtree *qt = quadtree_for(c, nullptr);
        Run run{nbb_now_ns() - t0, uint64_t(nb_quadtree_count(qt)), 0};
        nb_quadtree_destroy(qt);
        return run;
    };
    auto build_peer = [&] {
#ifdef NBB_HAVE_BOOST
        int64_t t0 = nbb_now_ns();
        BTree tree = boost_pack(values, c.data, c.n);
        return Run{nbb_now_ns() - t0, uint64_t(tree.size()), 0};
#else
        return Run{0, 0, 0};
#endif
    };
    warm_up(build_nearby, build_peer, have_peer);
    measure(c, "build", "rtree_packed", o.runs, build_nearby, build_peer, have_peer);
    nbQuadtree *qt = quadtree_for(c, nullptr);
    nbQuadtreeInfo qi;
    ok(nb_quadtree_info(qt, &qi), "nb_quadtree_info");
    std::fprintf(stderr,
                 "bench_corpus: %s: quadtree of %d nodes, depth %d, %d held above the leaves "
                 "(%.1f%%), %d outside, root [%g, %g] x [%g, %g]\n",
                 c.name, (int)qi.nodes, (int)qi.depth, (int)qi.held_above,
                 100.0 * qi.held_above / (qi.count > 0 ? qi.count : 1), (int)qi.outside,
                 qi.root.min[0], qi.root.max[0], qi.root.min[1], qi.root.max[1]);
#ifdef NBB_HAVE_BOOST
    BTree tree = boost_pack(values, c.data, c.n);
#endif
    measure(
        c, "windows", "rtree_packed", o.runs,
        [&] {
            int64_t t0 = nbb_now_ns();
            nbrTally t = nearby_windows(qt, win.data(), o.windows, hit);
            return Run{nbb_now_ns() - t0, t.count, t.sum};
        },
        [&] {
#ifdef NBB_HAVE_BOOST
            int64_t t0 = nbb_now_ns();
            nbrTally t = boost_windows(tree, win.data(), o.windows);
            return Run{nbb_now_ns() - t0, t.count, t.sum};
#else
            return Run{0, 0, 0};
#endif
        },
        have_peer);
    measure(
        c, "overlaps", "rtree_packed", o.runs,
        [&] {
            PairTally p{{0, 0}, uint64_t(c.n)};
            int64_t t0 = nbb_now_ns();
            ok(nb_quadtree_visit_pairs(qt, on_pair, &p), "nb_quadtree_visit_pairs");
            return Run{nbb_now_ns() - t0, p.t.count, p.t.sum};
        },
        [&] {
#ifdef NBB_HAVE_BOOST
            int64_t t0 = nbb_now_ns();
            nbrTally t = boost_pairs(tree, c.data, c.n);
            return Run{nbb_now_ns() - t0, t.count, t.sum};
#else
            return Run{0, 0, 0};
#endif
        },
        have_peer);
    nb_quadtree_destroy(qt);

    // moving: each peer keeps its own structure; both follow the same steps of `cur`
    std::vector<double> cur(c.data, c.data + 4 * size_t(c.n));
    std::vector<nbHandle> handles(size_t(c.n));
    qt = quadtree_for(c, &handles);
#ifdef NBB_HAVE_BOOST
    tree = boost_pack(values, cur.data(), c.n);
#endif
    uint64_t state = 0x6d6f76696e67ULL; // "moving"
    int frames = o.frames < NBB_MAX_RUNS ? o.frames : NBB_MAX_RUNS;
    measure(
        c, "moving", "rtree_packed", frames,
        [&] {
            nbb_corpus_step(cur.data(), c.n, &state); // the frame's step, before either peer
            int64_t t0 = nbb_now_ns();
            ok(nb_quadtree_move_many(qt, handles.data(),
                                     reinterpret_cast<const nbRect *>(cur.data()), c.n, nullptr),
               "nb_quadtree_move_many");
            nbrTally t = nearby_windows(qt, cur.data(), c.n, hit);
            return Run{nbb_now_ns() - t0, t.count, t.sum};
        },
        [&] {
#ifdef NBB_HAVE_BOOST
            int64_t t0 = nbb_now_ns();
            tree = boost_pack(values, cur.data(), c.n);
            nbrTally t = boost_windows(tree, cur.data(), c.n);
            return Run{nbb_now_ns() - t0, t.count, t.sum};
#else
            return Run{0, 0, 0};
#endif
        },
        have_peer, true);
    nb_quadtree_destroy(qt);
}

// ---- the scenarios (corpus.h): queries, boxes and radii the sets' shape does not suggest ----

// far, axis: on the set's grid (built for its radius) and nanoflann's tree, neither timed, from
// NBB_SCENARIO_QUERIES queries far outside the set's box: radius queries, each at the query's
// distance to its nearest point plus the set's radius (a ball that reaches into the data), and
// kNN for k = 1, 8.
template <int D> void run_far(const nbbCorpus &c, bool along_axis, const Options &o)
{
    const int32_t m = NBB_SCENARIO_QUERIES;
    std::vector<double> q(static_cast<size_t>(m) * D), rq(static_cast<size_t>(m));
    nbb_corpus_far_queries(&c, along_axis, q.data(), m, 0);
    nbGrid *g = grid_for(c);
#ifdef NBB_HAVE_NANOFLANN
    Flann<D> fl(c);
    PeerTree<D> tree(D, fl.pts, fl.params);
#else
    PeerTree<D> tree;
#endif
    for (int32_t i = 0; i < m; i++) { // the nearest point's distance (nanoflann's where built)
        const double *qi = q.data() + size_t(i) * D;
        double d2 = 0.0;
#ifdef NBB_HAVE_NANOFLANN
        uint32_t idx;
        tree.knnSearch(qi, 1, &idx, &d2);
#else
        nbNeighbor nb;
        int32_t found = 0;
        ok(nb_grid_knn(g, qi, NB_FILTER_ALL, (double)INFINITY, &nb, 1, &found), "nb_grid_knn");
        d2 = nb.dist2;
#endif
        rq[size_t(i)] = std::sqrt(d2) + c.radius;
    }
    const int32_t ks[2] = {1, 8};
    query_rows<D>(c, o, g, tree, q.data(), m, rq.data(), ks, 2);
    nb_grid_destroy(g);
}

// periodic: build + all pairs, and the 8 nearest of every point on a grid built for the radius,
// in the periodic box, against the same on the uniform periodic set of the same size (`base`;
// nanoflann has no periodic box): how much the shape costs. The clumps' answers are checked
// against a plain grid over the clump moved to the box's middle (nbb_corpus_unwrap: the same
// pairs and distances, exactly).
void run_periodic(const nbbCorpus &c, const nbbCorpus &base, const Options &o)
{
    const bool have_base = std::strcmp(c.name, base.name) != 0;
    std::vector<double> flat(size_t(c.n) * size_t(c.dim));
    nbbCorpus plain = c;
    plain.data = flat.data();
    plain.period = 0.0;
    const bool check = nbb_corpus_unwrap(&c, flat.data()) == 0;
    std::vector<nbPair> buf = pair_buffer(c), buf_b = have_base ? pair_buffer(base) : buf;
    std::function<Run()> expect;
    if (check) expect = [&] { return nearby_pairs(plain, buf, false); };
    measure(
        c, "pairs", "periodic_uniform", o.runs, [&] { return nearby_pairs(c, buf, false); },
        [&] { return nearby_pairs(base, buf_b, false); }, have_base, false, nullptr, 0, expect);
    nbGrid *g = grid_for(c), *gb = grid_for(base), *gp = grid_for(plain);
    int32_t qn = c.n;
    if (check) expect = [&] { return nearby_knn(gp, flat.data(), qn, c.dim, 8); };
    measure(
        c, "knn8", "periodic_uniform", o.runs, [&] { return nearby_knn(g, c.data, qn, c.dim, 8); },
        [&] { return nearby_knn(gb, base.data, qn, base.dim, 8); }, have_base, false, &qn, c.n,
        expect);
    qn = c.n;
    measure(
        c, "knnmany8", "periodic_uniform", o.runs,
        [&] { return nearby_knn_many(g, c.data, qn, c.dim, 8); },
        [&] { return nearby_knn_many(gb, base.data, qn, base.dim, 8); }, have_base, false, &qn, c.n,
        expect);
    nb_grid_destroy(g);
    nb_grid_destroy(gb);
    nb_grid_destroy(gp);
}

// The counts at m radii as one answer: their total, and a checksum that depends on each.
Run corr_tally(const int64_t *counts, int m)
{
    Run run{0, 0, 0};
    for (int k = 0; k < m; k++) {
        run.count += uint64_t(counts[k]);
        run.sum += nbb_pair_hash(uint32_t(k), uint32_t(counts[k])) ^ uint64_t(counts[k]);
    }
    return run;
}

// Brute force: the pairs within each of the m ascending radii, of a with itself (i < j) when b
// is null, else of a x b, tallied as corr_tally does.
Run brute_counts(const nbbCorpus &a, const nbbCorpus *b, const double *radii, int m)
{
    const nbbCorpus &other = b != nullptr ? *b : a;
    std::vector<double> d2(size_t(other.n));
    std::vector<int64_t> counts(static_cast<size_t>(m), 0);
    for (int32_t i = 0; i < a.n; i++) { // a row of distances, then a branch-free tally a radius
        const double *p = a.data + size_t(i) * size_t(a.dim);
        const int32_t from = b != nullptr ? 0 : i + 1;
        for (int32_t j = from; j < other.n; j++) {
            const double *q = other.data + size_t(j) * size_t(a.dim);
            double s = 0.0;
            for (int d = 0; d < a.dim; d++) s += (p[d] - q[d]) * (p[d] - q[d]);
            d2[size_t(j)] = s;
        }
        for (int k = 0; k < m; k++) {
            const double r2 = radii[k] * radii[k];
            int64_t within = 0;
            for (int32_t j = from; j < other.n; j++) within += d2[size_t(j)] <= r2;
            counts[size_t(k)] += within;
        }
    }
    return corr_tally(counts.data(), m);
}

// corr: pair counts at NBB_SCENARIO_RADII radii from the set's radius to its box's diagonal
// (nbb_corpus_radii), build included: "self", one grid built for the set's radius and
// nb_grid_count_pairs at each radius; "cross", the set and a second draw of half its size, each
// grid built for the radius, nb_grid_count_cross_pairs at each. No peer in C (cKDTree's
// count_neighbors is the Python side's); checked against brute force.
void run_corr(const nbbCorpus &c, const Options &o)
{
    nbbCorpus y;
    if (nbb_corpus_make(nbb_corpus_find(c.name), c.n / 2, NBB_SCENARIO_CROSS_SEED, &y) != 0) {
        std::fprintf(stderr, "bench_corpus: cannot make %s's second draw\n", c.name);
        std::exit(1);
    }
    y.radius = c.radius;
    const int m = NBB_SCENARIO_RADII;
    double radii[NBB_SCENARIO_RADII];
    nbb_corpus_radii(&c, radii, m);
    auto none = [] { return Run{0, 0, 0}; };
    for (int cross = 0; cross < 2; cross++) {
        measure(
            c, cross ? "cross" : "self", "", o.runs,
            [&] {
                int64_t counts[NBB_SCENARIO_RADII];
                nbStatus st[NBB_SCENARIO_RADII];
                int64_t t0 = nbb_now_ns();
                nbGrid *g = grid_for(c), *h = cross ? grid_for(y) : nullptr;
                for (int k = 0; k < m; k++)
                    st[k] = cross ? nb_grid_count_cross_pairs(g, h, radii[k], &counts[k])
                                  : nb_grid_count_pairs(g, radii[k], &counts[k]);
                const int64_t ns = nbb_now_ns() - t0;
                for (int k = 0; k < m; k++)
                    if (st[k] != NB_OK) { // a refusal is a wrong answer: the check fails
                        std::fprintf(stderr, "bench_corpus: %s %s at r = %g: %s\n", c.name,
                                     cross ? "nb_grid_count_cross_pairs" : "nb_grid_count_pairs",
                                     radii[k], nb_status_str(st[k]));
                        counts[k] = -1;
                    }
                nb_grid_destroy(g);
                nb_grid_destroy(h);
                Run run = corr_tally(counts, m);
                run.ns = ns;
                return run;
            },
            none, false, false, nullptr, 0,
            [&] { return brute_counts(c, cross ? &y : nullptr, radii, m); });
    }
    nbb_corpus_free(&y);
}

void run_scenario(const nbbScenario &sc, const nbbCorpus &c, const Options &o)
{
    if (std::strcmp(sc.kind, "periodic") == 0) {
        nbbCorpus base;
        if (nbb_corpus_make(nbb_corpus_find(sc.base), c.n, 0, &base) != 0) {
            std::fprintf(stderr, "bench_corpus: cannot make %s\n", sc.base);
            std::exit(1);
        }
        run_periodic(c, base, o);
        nbb_corpus_free(&base);
    } else if (std::strcmp(sc.kind, "corr") == 0) {
        run_corr(c, o);
    } else if (c.dim == 2) {
        run_far<2>(c, std::strcmp(sc.kind, "axis") == 0, o);
    } else {
        run_far<3>(c, std::strcmp(sc.kind, "axis") == 0, o);
    }
}

bool wanted(const Options &o, const char *name)
{
    if (o.only.empty()) return true;
    std::string list = "," + o.only + ",", pat = std::string(",") + name + ",";
    return list.find(pat) != std::string::npos;
}

} // namespace

int main(int argc, char **argv)
{
    Options o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        bool more = i + 1 < argc;
        if (a == "--n" && more)
            o.n = std::atoi(argv[++i]);
        else if (a == "--rects-n" && more)
            o.rects_n = std::atoi(argv[++i]);
        else if (a == "--queries" && more)
            o.queries = std::atoi(argv[++i]);
        else if (a == "--windows" && more)
            o.windows = std::atoi(argv[++i]);
        else if (a == "--frames" && more)
            o.frames = std::atoi(argv[++i]);
        else if (a == "--runs" && more)
            o.runs = std::atoi(argv[++i]);
        else if (a == "--budget" && more)
            o.budget = std::atof(argv[++i]);
        else if (a == "--only" && more)
            o.only = argv[++i];
        else if (a == "--no-scenarios")
            o.scenarios = false;
        else if (a == "--scenarios-only")
            o.sets = false;
        else {
            std::fprintf(stderr, "usage: bench_corpus [--n N] [--rects-n M] [--queries Q] "
                                 "[--windows W] [--frames F] [--runs K] [--budget S] "
                                 "[--only SET|KIND,...] [--no-scenarios | --scenarios-only]\n");
            return 2;
        }
    }
    if (o.n < 1 || o.rects_n < 1 || o.queries < 1 || o.windows < 1 || o.frames < 1 || o.runs < 1 ||
        o.runs > NBB_MAX_RUNS) {
        std::fprintf(stderr, "bench_corpus: bad arguments\n");
        return 2;
    }
    budget_ns = o.budget * 1e9;
    std::printf("set,kind,dim,n,radius,operation,peer,median_ms,min_ms,runs,count,checksum\n");
    for (int k = 0; k < nbb_corpus_count(); k++) {
        if (!wanted(o, nbb_corpus_name(k)) || !o.sets) continue;
        nbbCorpus c;
        int rects = nbb_corpus_is_rects(k);
        if (nbb_corpus_make(k, rects ? o.rects_n : o.n, 0, &c) != 0) {
            std::fprintf(stderr, "bench_corpus: cannot make %s\n", nbb_corpus_name(k));
            return 1;
        }
        int64_t t0 = nbb_now_ns();
        if (rects)
            run_rects(c, o);
        else if (c.dim == 2)
            run_points<2>(c, o);
        else
            run_points<3>(c, o);
        std::fprintf(stderr, "bench_corpus: %-13s %7d %s: %.1f s\n", c.name, (int)c.n,
                     rects ? "rectangles" : "points", (double)(nbb_now_ns() - t0) / 1e9);
        nbb_corpus_free(&c);
    }
    for (int k = 0; k < nbb_scenario_count() && o.scenarios; k++) {
        const nbbScenario &sc = *nbb_scenario(k);
        if (!wanted(o, sc.set) && !wanted(o, sc.kind)) continue;
        nbbCorpus c;
        if (nbb_corpus_make(nbb_corpus_find(sc.set), nbb_scenario_n(&sc, o.n), 0, &c) != 0) {
            std::fprintf(stderr, "bench_corpus: cannot make %s\n", sc.set);
            return 1;
        }
        int64_t t0 = nbb_now_ns();
        row_kind = sc.kind;
        budget_ns = 0.25 * o.budget * 1e9; // a quarter of a set's: many rows, at small N
        run_scenario(sc, c, o);
        budget_ns = o.budget * 1e9;
        row_kind = nullptr;
        std::fprintf(stderr, "bench_corpus: %-8s %-13s %7d points: %.1f s\n", sc.kind, c.name,
                     (int)c.n, (double)(nbb_now_ns() - t0) / 1e9);
        nbb_corpus_free(&c);
    }
    std::printf("mismatches,%d\n", mismatches);
    return mismatches == 0 ? 0 : 1;
}
