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
// CSV on stdout, a header and then one line per (set, operation, peer):
//   set,kind,dim,n,radius,operation,peer,median_ms,min_ms,runs,count,checksum
// and at the end `mismatches,K`. Exit status 1 when any answer differed.
//
//   bench_corpus [--n N] [--rects-n M] [--queries Q] [--windows W] [--frames F] [--runs K]
//                [--budget S] [--only SET,SET,...]
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
};

// What one run of one peer's operation gives back: its time and its answer.
struct Run {
    int64_t ns;
    uint64_t count, sum;
};

int mismatches = 0;
double budget_ns = 4e9;

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
template <class A, class B>
void measure(const nbbCorpus &c, const char *op, const char *peer, int runs, A a, B b,
             bool have_peer, bool varying = false, int32_t *queries = nullptr, int32_t all = 0)
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
    same = same && first_a.count == first_b.count && first_a.sum == first_b.sum;
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
                    c.rects ? "rects" : "points", c.dim, (int)c.n, c.radius, op, who,
                    (double)md / 1e6, (double)mn / 1e6, runs, (unsigned long long)r.count,
                    (unsigned long long)r.sum);
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
    // pairs buffer sized from a first count
    nbGrid *g = grid_for(c);
    int64_t npairs = 0;
    ok(nb_grid_count_pairs(g, r, &npairs), "nb_grid_count_pairs");
    std::vector<nbPair> buf(size_t(npairs > 0 ? npairs : 1));
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
            [&] {
                int64_t t0 = nbb_now_ns(), found = 0;
                nbGrid *grid = grid_for(c);
                if (count_only)
                    ok(nb_grid_count_pairs(grid, r, &found), "nb_grid_count_pairs");
                else
                    ok(nb_grid_pairs(grid, r, buf.data(), int64_t(buf.size()), &found),
                       "nb_grid_pairs");
                Run run{nbb_now_ns() - t0, uint64_t(found), 0};
                nb_grid_destroy(grid);
                if (!count_only) run.sum = pair_sum(buf.data(), found);
                return run;
            },
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
    NfTree<D> tree(D, fl.pts, fl.params);
#endif
    std::vector<int32_t> hits(size_t(c.n));
    int32_t qn = q; // the queries an operation runs (measure cuts them on a cliff)
    measure(
        c, "radius", "nanoflann", o.runs,
        [&] {
            Run run{0, 0, 0};
            int64_t t0 = nbb_now_ns();
            for (int32_t i = 0; i < qn; i++) {
                int32_t found = 0;
                ok(nb_grid_query_radius(g, c.data + size_t(i) * D, r, NB_FILTER_ALL, hits.data(),
                                        c.n, &found),
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
            PairSink t{radius2, -1, nullptr, 0, 0, 0}; // every hit, tallied
            int64_t t0 = nbb_now_ns();
            for (int32_t i = 0; i < qn; i++) tree.findNeighbors(t, c.data + size_t(i) * D, sp);
            return Run{nbb_now_ns() - t0, uint64_t(t.found), t.sum};
#else
            return Run{0, 0, 0};
#endif
        },
        have_peer, false, &qn, q);
    const int32_t ks[3] = {1, 8, 32};
    for (int32_t k : ks) {
        char op[16];
        std::snprintf(op, sizeof op, "knn%d", (int)k);
        measure(
            c, op, "nanoflann", o.runs,
            [&] {
                nbNeighbor nb[32];
                Run run{0, 0, 0};
                int64_t t0 = nbb_now_ns();
                for (int32_t i = 0; i < qn; i++) {
                    int32_t found = 0;
                    ok(nb_grid_knn(g, c.data + size_t(i) * D, NB_FILTER_ALL, (double)INFINITY, nb,
                                   k, &found),
                       "nb_grid_knn");
                    run.count += uint64_t(found);
                    for (int32_t j = 0; j < found; j++) run.sum += bits(nb[j].dist2);
                }
                run.ns = nbb_now_ns() - t0;
                return run;
            },
            [&] {
#ifdef NBB_HAVE_NANOFLANN
                uint32_t idx[32];
                double d2[32];
                Run run{0, 0, 0};
                int64_t t0 = nbb_now_ns();
                for (int32_t i = 0; i < qn; i++) {
                    size_t found = tree.knnSearch(c.data + size_t(i) * D, size_t(k), idx, d2);
                    run.count += found;
                    for (size_t j = 0; j < found; j++) run.sum += bits(d2[j]);
                }
                run.ns = nbb_now_ns() - t0;
                return run;
#else
                return Run{0, 0, 0};
#endif
            },
            have_peer, false, &qn, q);
    }
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
        else {
            std::fprintf(stderr, "usage: bench_corpus [--n N] [--rects-n M] [--queries Q] "
                                 "[--windows W] [--frames F] [--runs K] [--budget S] "
                                 "[--only SET,...]\n");
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
        if (!wanted(o, nbb_corpus_name(k))) continue;
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
    std::printf("mismatches,%d\n", mismatches);
    return mismatches == 0 ? 0 : 1;
}
