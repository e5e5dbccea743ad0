// SPDX-License-Identifier: MIT
// The rectangles benchmark (rects_common.h), the peer libraries, on the same rectangles:
//   b2tree        Box2D 2.4's b2DynamicTree (Debian libbox2d-dev): CreateProxy per rectangle
//                 (its float box rounded outward; Box2D adds its fat margin b2_aabbExtension =
//                 0.1); MoveProxy(id, box, displacement), which re-inserts the leaf only when the
//                 box leaves its fat AABB; Query with the window's box rounded outward. Box2D's
//                 candidates come from fat float boxes, so each is kept only when the exact
//                 closed-interval test on the double rectangles passes.
//   rtree_packed  Boost.Geometry's bgi::rtree of (box, index) values, bulk-loaded (packed, STR)
//                 by the range constructor, nodes of at most 16 (rstar<16>); the moving
//                 workload rebuilds it from all rectangles every frame.
//   rtree_rstar   the same values in an R*-tree (bgi::rstar<16>) filled by insert one by one;
//                 the moving workload removes and re-inserts every rectangle that moved.
//   sidx_rstar    libspatialindex's R*-tree (Debian libspatialindex-dev) in its memory storage
//                 manager, insertData one by one, intersectsWithQuery for windows; the moving
//                 workload does deleteData + insertData per rectangle. Index and leaf capacity
//                 kSidxCapacity, fill factor 0.7.
//   sidx_join     the same tree, overlap pairs by the library's own selfJoinQuery (it reports
//                 each pair in both orders; the i < j one is kept); only the pairs figure.
// Boost and libspatialindex are exact on doubles (closed intervals: touching counts), so their
// results are counted as they come, unfiltered: the report's agreement check tests them.
//
// Figures (CSV lines `peer,figure,ms_median,runs,count,sum,cpu_ms_median` on stdout, count and
// sum the nbrTally of the figure; the last column, the process's CPU time, is optional for
// report_rects.py: on a shared machine it leaves out the time spent waiting for a CPU):
//   build_1m      build from the caller's 1M rectangles (converting them into the library's
//                 values included), median of `runs` builds; count = rectangles held.
//   windows_10k   the 10k windows against the 1M tree, all of them per run.
//   pairs_100k    every overlapping pair (i < j, touching counts) of the first 100k rectangles,
//                 on a tree of those built beforehand (not timed): self-query per rectangle,
//                 keeping j > i (or the library's join).
//   moving_frame  100k rectangles, 100 frames; a frame is the index's update for the frame's
//                 nbr_move (timed; nbr_move itself is not) and one window per rectangle, the
//                 rectangle itself (hits include itself). ms_median is the median frame, runs
//                 the frames, count/sum over all frames.
// --quick: 100k rectangles (build), 1k windows, pairs on the first 10k, 10k moving x 5 frames;
// the figure names stay the same (the report is told --quick).
//
//   moving_first5 the moving workload's first 5 frames (median frame, count/sum over those):
//                 checks a peer run for fewer frames (--frames) against the others.
//
//   bench_rects_peers PEER [--quick] [--runs K] [--frames F] [--only build,windows,pairs,moving]
//                     [--offset X,Y]   every set moved by (X, Y), as bench_rects --offset
//   bench_rects_peers --dump DIR [--quick]   writes the JS runners' data (rects_js/bench.mjs):
//                                            static.f64, windows.f64, moving.f64
// Exit status 3 when PEER is not built in (its library was missing at configure time).
#include "bench_common.h"
#include "rects_common.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#ifdef NBB_HAVE_BOX2D
#include <box2d/b2_dynamic_tree.h>
#endif
#ifdef NBB_HAVE_BOOST
#include "rects_boost.h"
#endif
#ifdef NBB_HAVE_SIDX
#include <spatialindex/SpatialIndex.h>
#endif

namespace {

struct Sizes {
    int32_t n_static, n_windows, n_pairs, n_moving, frames;
};
const Sizes kFull = {NBR_N_STATIC, NBR_N_WINDOWS, NBR_N_PAIRS, NBR_N_MOVING, NBR_FRAMES};
const Sizes kQuick = {100000, 1000, 10000, 10000, 5};
// Every runner also reports the moving workload's first this-many frames (figure
// moving_first5), so a peer too slow for all the frames is still checked against the others.
const int kPrefixFrames = 5;

// What every peer implements. build: from r[4n], replacing whatever the peer held; windows and
// pairs: against what build made; moving: fill (not timed), then per frame move (old -> r) and
// one window per rectangle (itself included), in index order.
struct Peer {
    virtual ~Peer() = default;
    /// Whether the peer runs this figure ("build", "windows", "pairs", "moving").
    virtual bool does(const std::string &) const
    {
        return true;
    }
    virtual void build(const double *r, int32_t n) = 0;
    virtual void clear() = 0;
    virtual nbrTally windows(const double *w, int32_t m) const = 0;
    virtual nbrTally pairs() const = 0;
    virtual void fill(const double *r, int32_t n)
    {
        build(r, n);
    }
    virtual void move(const double *old, const double *r, int32_t n) = 0;
    virtual nbrTally self_windows(const double *r, int32_t n) const
    {
        return windows(r, n);
    }
};

#ifdef NBB_HAVE_BOX2D
// A float box that contains the double rectangle: each bound rounded outward.
b2AABB b2_box(const double *r)
{
    float lx = float(r[0]), ly = float(r[1]), hx = float(r[2]), hy = float(r[3]);
    if (double(lx) > r[0]) lx = std::nextafter(lx, -INFINITY);
    if (double(ly) > r[1]) ly = std::nextafter(ly, -INFINITY);
    if (double(hx) < r[2]) hx = std::nextafter(hx, INFINITY);
    if (double(hy) < r[3]) hy = std::nextafter(hy, INFINITY);
    b2AABB b;
    b.lowerBound.Set(lx, ly);
    b.upperBound.Set(hx, hy);
    return b;
}

// Keeps the candidates (proxy user data = index) that touch the double window exactly; with
// `above` >= 0, only those with a larger index (pairs).
struct B2Query {
    const b2DynamicTree *tree;
    const double *rects;
    const double *window;
    int64_t above;
    uint64_t n;
    nbrTally t;
    bool QueryCallback(int32 proxy)
    {
        int32_t j = int32_t(reinterpret_cast<uintptr_t>(tree->GetUserData(proxy)));
        if (j > above && nbr_touch(rects + 4 * j, window)) {
            if (above >= 0)
                nbr_tally_pair(&t, uint64_t(above), uint64_t(j), n);
            else
                nbr_tally_hit(&t, uint64_t(j));
        }
        return true;
    }
};

struct B2Peer : Peer {
    std::unique_ptr<b2DynamicTree> tree;
    std::vector<int32> proxy;
    const double *rects = nullptr; // the caller's rectangles, for the exact test
    int32_t n = 0;
    void build(const double *r, int32_t count) override
    {
        tree.reset(new b2DynamicTree());
        proxy.resize(size_t(count));
        for (int32_t i = 0; i < count; i++)
            proxy[size_t(i)] =
                tree->CreateProxy(b2_box(r + 4 * i), reinterpret_cast<void *>(uintptr_t(i)));
        rects = r;
        n = count;
    }
    void clear() override
    {
        tree.reset();
    }
    nbrTally windows(const double *w, int32_t m) const override
    {
        B2Query q{tree.get(), rects, nullptr, -1, uint64_t(n), {0, 0}};
        for (int32_t k = 0; k < m; k++) {
            q.window = w + 4 * k;
            tree->Query(&q, b2_box(q.window));
        }
        return q.t;
    }
    nbrTally pairs() const override
    {
        B2Query q{tree.get(), rects, nullptr, 0, uint64_t(n), {0, 0}};
        for (int32_t i = 0; i < n; i++) {
            q.window = rects + 4 * i;
            q.above = i;
            tree->Query(&q, b2_box(q.window));
        }
        return q.t;
    }
    void move(const double *old, const double *r, int32_t count) override
    {
        for (int32_t i = 0; i < count; i++) {
            const double *a = old + 4 * i, *b = r + 4 * i;
            b2Vec2 d(float(0.5 * ((b[0] + b[2]) - (a[0] + a[2]))),
                     float(0.5 * ((b[1] + b[3]) - (a[1] + a[3]))));
            tree->MoveProxy(proxy[size_t(i)], b2_box(b), d);
        }
        rects = r;
    }
};
#endif

#ifdef NBB_HAVE_BOOST
struct PackedPeer : Peer {
    std::vector<BValue> values;
    BTree tree;
    const double *rects = nullptr;
    int32_t n = 0;
    void build(const double *r, int32_t count) override
    {
        tree = boost_pack(values, r, count);
        rects = r;
        n = count;
    }
    void clear() override
    {
        tree = BTree();
        std::vector<BValue>().swap(values);
    }
    nbrTally windows(const double *w, int32_t m) const override
    {
        return boost_windows(tree, w, m);
    }
    nbrTally pairs() const override
    {
        return boost_pairs(tree, rects, n);
    }
    void move(const double *, const double *r, int32_t count) override
    {
        for (int32_t i = 0; i < count; i++) values[size_t(i)].first = boost_box(r + 4 * i);
        tree = BTree(values.begin(), values.end());
        rects = r;
    }
};

struct RstarPeer : Peer {
    BTree tree;
    const double *rects = nullptr;
    int32_t n = 0;
    void build(const double *r, int32_t count) override
    {
        tree.clear();
        for (int32_t i = 0; i < count; i++) tree.insert(BValue(boost_box(r + 4 * i), i));
        rects = r;
        n = count;
    }
    void clear() override
    {
        tree = BTree();
    }
    nbrTally windows(const double *w, int32_t m) const override
    {
        return boost_windows(tree, w, m);
    }
    nbrTally pairs() const override
    {
        return boost_pairs(tree, rects, n);
    }
    void move(const double *old, const double *r, int32_t count) override
    {
        for (int32_t i = 0; i < count; i++) {
            if (tree.remove(BValue(boost_box(old + 4 * i), i)) != 1) {
                fprintf(stderr, "bench_rects_peers: rtree_rstar: remove of rectangle %d failed\n",
                        i);
                exit(1);
            }
            tree.insert(BValue(boost_box(r + 4 * i), i));
        }
        rects = r;
    }
};
#endif

#ifdef NBB_HAVE_SIDX
namespace si = SpatialIndex;
const uint32_t kSidxCapacity = 16; // measured: 4 and 8 build slower, 32 and up move slower

si::Region sidx_region(const double *r)
{
    const double lo[2] = {r[0], r[1]}, hi[2] = {r[2], r[3]};
    return si::Region(lo, hi, 2);
}

// Tallies every data entry it is shown; with `above` >= 0, only ids above it (pairs).
struct SidxVisitor : si::IVisitor {
    nbrTally t{0, 0};
    int64_t above = -1;
    uint64_t n = 0;
    void visitNode(const si::INode &) override {}
    void visitData(const si::IData &d) override
    {
        int64_t j = d.getIdentifier();
        if (above < 0)
            nbr_tally_hit(&t, uint64_t(j));
        else if (j > above)
            nbr_tally_pair(&t, uint64_t(above), uint64_t(j), n);
    }
    // selfJoinQuery's pairs: each in both orders, so keep the one with the smaller id first.
    void visitData(std::vector<const si::IData *> &v) override
    {
        if (v.size() != 2) return;
        int64_t i = v[0]->getIdentifier(), j = v[1]->getIdentifier();
        if (i < j) nbr_tally_pair(&t, uint64_t(i), uint64_t(j), n);
    }
};

struct SidxPeer : Peer {
    std::unique_ptr<si::IStorageManager> storage;
    std::unique_ptr<si::ISpatialIndex> tree;
    const double *rects = nullptr;
    int32_t n = 0;
    bool join;
    explicit SidxPeer(bool use_join) : join(use_join) {}
    bool does(const std::string &figure) const override
    {
        return !join || figure == "pairs";
    }
    void build(const double *r, int32_t count) override
    {
        clear();
        storage.reset(si::StorageManager::createNewMemoryStorageManager());
        si::id_type id;
        tree.reset(si::RTree::createNewRTree(*storage, 0.7, kSidxCapacity, kSidxCapacity, 2,
                                             si::RTree::RV_RSTAR, id));
        for (int32_t i = 0; i < count; i++) tree->insertData(0, nullptr, sidx_region(r + 4 * i), i);
        rects = r;
        n = count;
    }
    void clear() override
    {
        tree.reset(); // before its storage
        storage.reset();
    }
    nbrTally windows(const double *w, int32_t m) const override
    {
        SidxVisitor v;
        for (int32_t k = 0; k < m; k++) tree->intersectsWithQuery(sidx_region(w + 4 * k), v);
        return v.t;
    }
    nbrTally pairs() const override
    {
        SidxVisitor v;
        v.n = uint64_t(n);
        if (join) {
            const double inf = std::numeric_limits<double>::infinity();
            const double lo[2] = {-inf, -inf}, hi[2] = {inf, inf};
            tree->selfJoinQuery(si::Region(lo, hi, 2), v);
            return v.t;
        }
        for (int32_t i = 0; i < n; i++) {
            v.above = i;
            tree->intersectsWithQuery(sidx_region(rects + 4 * i), v);
        }
        return v.t;
    }
    void move(const double *old, const double *r, int32_t count) override
    {
        for (int32_t i = 0; i < count; i++) {
            if (!tree->deleteData(sidx_region(old + 4 * i), i)) {
                fprintf(stderr, "bench_rects_peers: sidx_rstar: delete of rectangle %d failed\n",
                        i);
                exit(1);
            }
            tree->insertData(0, nullptr, sidx_region(r + 4 * i), i);
        }
        rects = r;
    }
};
#endif

std::unique_ptr<Peer> make_peer(const std::string &name)
{
#ifdef NBB_HAVE_BOX2D
    if (name == "b2tree") return std::unique_ptr<Peer>(new B2Peer());
#endif
#ifdef NBB_HAVE_BOOST
    if (name == "rtree_packed") return std::unique_ptr<Peer>(new PackedPeer());
    if (name == "rtree_rstar") return std::unique_ptr<Peer>(new RstarPeer());
#endif
#ifdef NBB_HAVE_SIDX
    if (name == "sidx_rstar") return std::unique_ptr<Peer>(new SidxPeer(false));
    if (name == "sidx_join") return std::unique_ptr<Peer>(new SidxPeer(true));
#endif
    (void)name;
    return nullptr;
}

/// The process's CPU time in nanoseconds (one thread: what it ran, not the time it waited for
/// a CPU on a shared machine).
int64_t cpu_now_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + int64_t(ts.tv_nsec);
}

/// Wall-clock and CPU time of one timed section.
struct Clock {
    int64_t wall0 = nbb_now_ns(), cpu0 = cpu_now_ns();
    void stop(int64_t *wall, int64_t *cpu) const
    {
        *wall = nbb_now_ns() - wall0;
        *cpu = cpu_now_ns() - cpu0;
    }
};

int64_t median_of(const int64_t *v, int n)
{
    std::vector<int64_t> s(v, v + n);
    std::sort(s.begin(), s.end());
    return s[size_t(n - 1) / 2];
}

/// One CSV line: peer,figure,ms_median,runs,count,sum,cpu_ms_median (wall and CPU medians over
/// the runs, or the frames).
void emit(const char *peer, const char *figure, const int64_t *ns, const int64_t *cpu, int runs,
          nbrTally t)
{
    printf("%s,%s,%.3f,%d,%llu,%llu,%.3f\n", peer, figure, double(median_of(ns, runs)) / 1e6, runs,
           (unsigned long long)t.count, (unsigned long long)t.sum,
           double(median_of(cpu, runs)) / 1e6);
    fflush(stdout);
}

bool same(nbrTally a, nbrTally b)
{
    return a.count == b.count && a.sum == b.sum;
}

void check_runs(const char *peer, const char *figure, nbrTally first, nbrTally t)
{
    if (!same(first, t)) {
        fprintf(stderr, "bench_rects_peers: %s: %s: runs disagree\n", peer, figure);
        exit(1);
    }
}

void write_f64(const std::string &path, const std::vector<double> &v)
{
    FILE *f = fopen(path.c_str(), "wb");
    if (f == nullptr || fwrite(v.data(), sizeof(double), v.size(), f) != v.size() ||
        fclose(f) != 0) {
        fprintf(stderr, "bench_rects_peers: cannot write %s\n", path.c_str());
        exit(2);
    }
}

int usage()
{
    fprintf(stderr, "usage: bench_rects_peers b2tree|rtree_packed|rtree_rstar|sidx_rstar|"
                    "sidx_join [--quick] [--runs K] [--frames F]\n"
                    "       [--only build,windows,pairs,moving] [--offset X,Y]\n"
                    "       bench_rects_peers --dump DIR [--quick]\n");
    return 2;
}

int run(int argc, char **argv)
{
    if (argc < 2) return usage();
    std::string peer_name = argv[1], dump_dir, only = "build,windows,pairs,moving";
    bool quick = false;
    int runs_arg = 0, frames_arg = 0;
    double off[2] = {0.0, 0.0};
    int first = 2;
    if (peer_name == "--dump") {
        if (argc < 3) return usage();
        dump_dir = argv[2];
        first = 3;
    }
    for (int i = first; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--quick") {
            quick = true;
        } else if (a == "--runs" && i + 1 < argc) {
            runs_arg = atoi(argv[++i]);
            if (runs_arg < 1 || runs_arg > NBB_MAX_RUNS) return usage();
        } else if (a == "--frames" && i + 1 < argc) {
            frames_arg = atoi(argv[++i]);
            if (frames_arg < kPrefixFrames) return usage();
        } else if (a == "--only" && i + 1 < argc) {
            only = argv[++i];
        } else if (a == "--offset" && i + 1 < argc &&
                   sscanf(argv[i + 1], "%lf,%lf", &off[0], &off[1]) == 2) {
            i++;
        } else {
            return usage();
        }
    }
    const Sizes sz = quick ? kQuick : kFull;
    std::vector<double> rects(size_t(4) * size_t(sz.n_static));
    std::vector<double> windows(size_t(4) * size_t(sz.n_windows));
    std::vector<double> moving(size_t(4) * size_t(sz.n_moving));
    nbr_make_rects(rects.data(), sz.n_static);
    nbr_make_windows(windows.data(), sz.n_windows, sz.n_static);
    nbr_make_rects(moving.data(), sz.n_moving);
    nbr_shift(rects.data(), sz.n_static, off[0], off[1]);
    nbr_shift(windows.data(), sz.n_windows, off[0], off[1]);
    nbr_shift(moving.data(), sz.n_moving, off[0], off[1]);

    if (!dump_dir.empty()) {
        write_f64(dump_dir + "/static.f64", rects);
        write_f64(dump_dir + "/windows.f64", windows);
        write_f64(dump_dir + "/moving.f64", moving);
        return 0;
    }
    std::unique_ptr<Peer> peer = make_peer(peer_name);
    if (!peer) {
        fprintf(stderr, "bench_rects_peers: peer %s unknown or not built in\n", peer_name.c_str());
        return 3;
    }
    const char *name = peer_name.c_str();
    auto wanted = [&only, &peer](const char *fig) {
        return peer->does(fig) &&
               ("," + only + ",").find("," + std::string(fig) + ",") != std::string::npos;
    };
    // Slow builds get fewer runs: one incremental 1M build takes seconds.
    const bool slow_build = peer_name != "rtree_packed";
    // libspatialindex builds 1M in tens of seconds: one run unless --quick or --runs.
    const bool slowest_build = peer_name.compare(0, 4, "sidx") == 0 && !quick;
    int64_t ns[NBB_MAX_RUNS], cpu[NBB_MAX_RUNS];

    if (wanted("build")) {
        int runs = runs_arg ? runs_arg : (slowest_build ? 1 : slow_build ? 3 : 7);
        nbrTally t{uint64_t(sz.n_static), 0};
        for (int k = 0; k < runs; k++) {
            peer->clear();
            Clock c;
            peer->build(rects.data(), sz.n_static);
            c.stop(&ns[k], &cpu[k]);
        }
        emit(name, "build_1m", ns, cpu, runs, t);
    }
    if (wanted("windows")) {
        if (!wanted("build")) peer->build(rects.data(), sz.n_static);
        int runs = runs_arg ? runs_arg : 7;
        nbrTally t0t{0, 0};
        for (int k = 0; k < runs; k++) {
            Clock c;
            nbrTally t = peer->windows(windows.data(), sz.n_windows);
            c.stop(&ns[k], &cpu[k]);
            if (k == 0)
                t0t = t;
            else
                check_runs(name, "windows_10k", t0t, t);
        }
        emit(name, "windows_10k", ns, cpu, runs, t0t);
    }
    if (wanted("pairs")) {
        peer->clear();
        peer->build(rects.data(), sz.n_pairs);
        int runs = runs_arg ? runs_arg : 5;
        nbrTally t0t{0, 0};
        for (int k = 0; k < runs; k++) {
            Clock c;
            nbrTally t = peer->pairs();
            c.stop(&ns[k], &cpu[k]);
            if (k == 0)
                t0t = t;
            else
                check_runs(name, "pairs_100k", t0t, t);
        }
        emit(name, "pairs_100k", ns, cpu, runs, t0t);
    }
    peer->clear();
    if (wanted("moving")) {
        const int frames = frames_arg ? frames_arg : sz.frames;
        std::vector<double> r = moving, old(r.size());
        std::vector<int64_t> frame_ns(static_cast<size_t>(frames));
        std::vector<int64_t> frame_cpu(static_cast<size_t>(frames));
        uint64_t s = NBR_SEED_MOVES;
        peer->fill(r.data(), sz.n_moving);
        nbrTally total{0, 0};
        for (int f = 0; f < frames; f++) {
            old = r;
            nbr_move_at(r.data(), sz.n_moving, &s, off[0], off[1]);
            Clock c;
            peer->move(old.data(), r.data(), sz.n_moving);
            nbrTally t = peer->self_windows(r.data(), sz.n_moving);
            c.stop(&frame_ns[size_t(f)], &frame_cpu[size_t(f)]);
            total.count += t.count;
            total.sum += t.sum;
            if (f + 1 == kPrefixFrames)
                emit(name, "moving_first5", frame_ns.data(), frame_cpu.data(), f + 1, total);
        }
        emit(name, "moving_frame", frame_ns.data(), frame_cpu.data(), frames, total);
        peer->clear();
    }
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    try {
        return run(argc, argv);
    } catch (const std::exception &e) {
        fprintf(stderr, "bench_rects_peers: %s\n", e.what());
#ifdef NBB_HAVE_SIDX
    } catch (Tools::Exception &e) {
        fprintf(stderr, "bench_rects_peers: libspatialindex: %s\n", e.what().c_str());
#endif
    }
    return 1;
}
