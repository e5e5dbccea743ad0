// SPDX-License-Identifier: MIT
// nanoflann as the benchmarks use it (bench_nanoflann.cpp, bench_corpus.cpp): a dataset adaptor
// that reads the caller's interleaved float64 array in place, and a result set that keeps the
// pairs (self, j > self) of a radius search without sorting. nanoflann keeps dist < radius2
// (strictly): pass nextafter(r*r, +inf) so that dist <= r*r is kept, as every other peer does.
// C++17, header-only; include <nanoflann.hpp> first (Debian's libnanoflann-dev).
#ifndef NB_BENCH_NANOFLANN_PEER_H
#define NB_BENCH_NANOFLANN_PEER_H

#include <cstddef>
#include <cstdint>

namespace {

struct PairOut {
    uint32_t i;
    uint32_t j;
};

template <int D> struct FlatPoints {
    const double *p;
    size_t n;
    size_t kdtree_get_point_count() const
    {
        return n;
    }
    double kdtree_get_pt(uint32_t idx, size_t d) const
    {
        return p[size_t(idx) * D + d];
    }
    template <class BBox> bool kdtree_get_bbox(BBox &) const
    {
        return false;
    }
};

// Receives every candidate within the radius of query point `self`; keeps j > self: writes the
// pair (self, j) while there is room (cap), counts it in `found` and adds j to `sum`. With
// self = -1 it keeps every hit of a radius query (count and index sum; cap 0).
struct PairSink {
    double radius2; // nextafter(r*r, inf): nanoflann keeps dist < radius2, i.e. dist <= r*r
    int64_t self;
    PairOut *out;
    int64_t cap;
    int64_t found;
    uint64_t sum;
    double worstDist() const
    {
        return radius2;
    }
    bool full() const
    {
        return true;
    }
    size_t size() const
    {
        return 0;
    }
    bool addPoint(double, uint32_t idx)
    {
        if (int64_t(idx) > self) {
            if (found < cap) out[found] = PairOut{uint32_t(self), idx};
            found++;
            sum += idx;
        }
        return true;
    }
};

/// The k-d tree over FlatPoints<D> that the benchmarks build.
template <int D>
using NfTree = nanoflann::KDTreeSingleIndexAdaptor<
    nanoflann::L2_Simple_Adaptor<double, FlatPoints<D>, double, uint32_t>, FlatPoints<D>, D,
    uint32_t>;

} // namespace

#endif
