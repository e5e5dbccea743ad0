// SPDX-License-Identifier: MIT
// Boost.Geometry's rtree as the rectangles benchmarks use it (bench_rects_peers.cpp and the
// corpus benchmark, bench_corpus.cpp; the agents' runner takes its names for points and boxes):
// (box, index) values in a bgi::rtree with nodes of at most 16 (rstar<16>), packed (STR) when
// built from a range; windows and overlap pairs (self-query per rectangle, keeping j > i)
// tallied as rects_common.h says. Boost is exact on
// doubles with closed intervals (touching counts). C++17, header-only; needs libboost-dev.
#ifndef NB_BENCH_RECTS_BOOST_H
#define NB_BENCH_RECTS_BOOST_H

#include "rects_common.h"

#include <boost/geometry.hpp>
#include <boost/geometry/index/rtree.hpp>
#include <boost/iterator/function_output_iterator.hpp>

#include <cstdint>
#include <utility>
#include <vector>

namespace {

namespace bg = boost::geometry;
namespace bgi = boost::geometry::index;
using BPoint = bg::model::point<double, 2, bg::cs::cartesian>;
using BBox = bg::model::box<BPoint>;
using BValue = std::pair<BBox, int32_t>;
using BTree = bgi::rtree<BValue, bgi::rstar<16>>;

inline BBox boost_box(const double *r)
{
    return BBox(BPoint(r[0], r[1]), BPoint(r[2], r[3]));
}

/// The packed rtree of the n rectangles r[4n] (minx miny maxx maxy), values[i] = (box, i);
/// `values` is the caller's, reused from call to call.
inline BTree boost_pack(std::vector<BValue> &values, const double *r, int32_t n)
{
    values.clear();
    values.reserve(size_t(n));
    for (int32_t i = 0; i < n; i++) values.emplace_back(boost_box(r + 4 * i), i);
    return BTree(values.begin(), values.end());
}

inline nbrTally boost_windows(const BTree &tree, const double *w, int32_t m)
{
    nbrTally t{0, 0};
    auto out = boost::make_function_output_iterator(
        [&t](const BValue &v) { nbr_tally_hit(&t, uint64_t(v.second)); });
    for (int32_t k = 0; k < m; k++) tree.query(bgi::intersects(boost_box(w + 4 * k)), out);
    return t;
}

// Self-query per rectangle, keeping j > i.
inline nbrTally boost_pairs(const BTree &tree, const double *r, int32_t n)
{
    nbrTally t{0, 0};
    for (int32_t i = 0; i < n; i++) {
        tree.query(bgi::intersects(boost_box(r + 4 * i)),
                   boost::make_function_output_iterator([&t, i, n](const BValue &v) {
                       if (v.second > i) nbr_tally_pair(&t, uint64_t(i), uint64_t(v.second), n);
                   }));
    }
    return t;
}

} // namespace

#endif
