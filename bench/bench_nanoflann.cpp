// SPDX-License-Identifier: MIT
// nanoflann peer (Debian's libnanoflann-dev, header <nanoflann.hpp>): a k-d tree over the flat
// float64 array, rebuilt each frame, then one radius search from every point.
//
// Used the fastest way we found:
//  - KDTreeSingleIndexAdaptor with a compile-time DIM and L2_Simple_Adaptor, over a dataset
//    adaptor that reads the caller's interleaved array in place (no copy);
//  - one index object for all frames, rebuilt with buildIndex() (reuses its index vector);
//  - leaf size NBB_LEAF (default 32: 16..64 tie on these sets, 4 and 8 are slower; override
//    with the NBB_NANOFLANN_LEAF environment variable);
//  - a custom result set that keeps only j > i (or just counts), writes straight into the
//    preallocated pair buffer and never sorts;
//  - queries issued in the tree's own point order (index.vAcc), so consecutive queries walk
//    the same leaves: 3-4x faster than querying in input order on these random sets
//    (NBB_NANOFLANN_INPUT_ORDER=1 switches to input order, for comparison).
//
// Exactness: nanoflann's L2 radius is a squared distance, and its leaves keep only points with
// dist < radius (strictly). We pass nextafter(r*r, +inf), so dist <= r*r is kept exactly like
// every other peer. Its L2_Simple_Adaptor sums (0 + dx*dx) + dy*dy (+ dz*dz) left to right, the
// same rounding as the others (the build uses -ffp-contract=off).
//
//   bench_nanoflann DATA.f64 DIM RADIUS pairs|count RUNS DATASET_NAME
#include "alloc_count.h"
#include "bench_common.h"

#include <cmath>
#include <cstdint>
#include <nanoflann.hpp>

#include "nanoflann_peer.h"

namespace {

#ifndef NBB_LEAF
#define NBB_LEAF 32
#endif

template <int D> int run(const nbbArgs &a, const double *p, int32_t n)
{
    using Points = FlatPoints<D>;
    using Metric = nanoflann::L2_Simple_Adaptor<double, Points, double, uint32_t>;
    using Tree = nanoflann::KDTreeSingleIndexAdaptor<Metric, Points, D, uint32_t>;
    Points pts{p, size_t(n)};
    size_t leaf = NBB_LEAF;
    if (const char *env = std::getenv("NBB_NANOFLANN_LEAF")) leaf = size_t(std::atoi(env));
    const nanoflann::KDTreeSingleIndexAdaptorParams params(
        leaf, nanoflann::KDTreeSingleIndexAdaptorFlags::SkipInitialBuildIndex);
    const double radius2 = std::nextafter(a.radius * a.radius, INFINITY);
    const nanoflann::SearchParams sp(32, 0.0f, false);

    // Warm-up frame, which also measures the index's bytes and sizes the pair buffer.
    size_t heap0 = nbb_heap_bytes();
    Tree tree(D, pts, params);
    tree.buildIndex();
    size_t bytes = nbb_heap_bytes() - heap0;

    PairSink sink{radius2, 0, nullptr, 0, 0, 0};
    const bool input_order = std::getenv("NBB_NANOFLANN_INPUT_ORDER") != nullptr;
    auto query_all = [&](PairSink &s) {
        s.found = 0;
        if (input_order) {
            for (uint32_t i = 0; i < uint32_t(n); i++) {
                s.self = i;
                tree.findNeighbors(s, p + size_t(i) * D, sp);
            }
            return;
        }
        const std::vector<uint32_t> &order = tree.vAcc;
        for (size_t k = 0; k < order.size(); k++) {
            s.self = order[k];
            tree.findNeighbors(s, p + size_t(s.self) * D, sp);
        }
    };
    query_all(sink);
    const int64_t expect = sink.found;
    const int64_t cap = a.count_only ? 0 : expect;
    PairOut *out =
        cap ? static_cast<PairOut *>(std::malloc(size_t(cap) * sizeof(PairOut))) : nullptr;
    if (cap && out == nullptr) return 1;
    sink.out = out;
    sink.cap = cap;
    if (cap) query_all(sink); // touch the buffer

    int64_t t_build[NBB_MAX_RUNS];
    int64_t t_pairs[NBB_MAX_RUNS];
    int64_t t_frame[NBB_MAX_RUNS];
    uint64_t allocs_build = 0;
    uint64_t allocs_pairs = 0;
    for (int r = 0; r < a.runs; r++) {
        uint64_t c0 = nbb_alloc_calls();
        int64_t t0 = nbb_now_ns();
        tree.buildIndex();
        int64_t t1 = nbb_now_ns();
        uint64_t c1 = nbb_alloc_calls();
        query_all(sink);
        int64_t t2 = nbb_now_ns();
        allocs_build += c1 - c0;
        allocs_pairs += nbb_alloc_calls() - c1;
        t_build[r] = t1 - t0;
        t_pairs[r] = t2 - t1;
        t_frame[r] = t2 - t0;
    }
    const int64_t found = sink.found;
    if (found != expect) std::fprintf(stderr, "bench_nanoflann: pair count changed\n");
    uint64_t sum = 0;
    for (int64_t k = 0; k < (found < cap ? found : cap); k++)
        sum += nbb_pair_hash(out[k].i, out[k].j);
    const char *op = a.count_only ? "count" : "pairs";
    nbb_emit("nanoflann", &a, "build", n, t_build, (double)allocs_build / a.runs, bytes,
             "mallinfo2", -1, 0);
    nbb_emit("nanoflann", &a, op, n, t_pairs, (double)allocs_pairs / a.runs, bytes, "mallinfo2",
             found, sum);
    nbb_emit("nanoflann", &a, "frame", n, t_frame, (double)(allocs_build + allocs_pairs) / a.runs,
             bytes, "mallinfo2", found, sum);
    std::free(out);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    nbbArgs a = nbb_parse_args(argc, argv, "bench_nanoflann");
    double *p;
    int32_t n = nbb_load(a.file, a.dim, &p);
    int rc = a.dim == 2 ? run<2>(a, p, n) : run<3>(a, p, n);
    std::free(p);
    return rc;
}
