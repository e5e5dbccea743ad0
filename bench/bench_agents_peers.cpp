// SPDX-License-Identifier: MIT
// The moving-agents benchmark (agents_common.h), the other structures, on the same agents:
//   b2tree        Box2D 2.4's b2DynamicTree (Debian libbox2d-dev): each agent a 0.01-wide box,
//                 CreateProxy once; MoveProxy(id, box, displacement) for the agents that moved,
//                 which re-inserts the leaf only when the box leaves its fat AABB (Box2D's
//                 default margin b2_aabbExtension = 0.1, stretched by 4x the displacement);
//                 Query with the r-box, then the exact distance test on the double positions.
//   rtree_packed  Boost.Geometry's bgi::rtree of (point, index) values, bulk-loaded (packed,
//                 rstar<16> nodes) from all agents every frame; query intersects(r-box), then
//                 the exact distance test.
//   rtree_rstar   the same values in an R*-tree (bgi::rstar<16>) filled by insert once, then
//                 remove + insert for each agent that moved; same queries.
//   naive_hash    std::unordered_map<cell key, std::vector<int>> with cell = r: a move that
//                 changes cell erases the index from the old vector (swap with the last) and
//                 pushes it to the new one; a query scans the 3x3 cells with the exact test.
//
// Box2D stores float boxes. Exactness: an agent's box is its point +-0.005 and the query box is
// the centre +-r, both rounded to float; the rounding (under 2e-5 in this world) is far below
// 0.005, so every agent within r overlaps the query box, and the double-precision test decides.
//
// Same method as bench_agents.c: only the index's work is timed, every run starts from the same
// world (structure rebuilt untimed), allocations per frame are counted through the interposed
// malloc (alloc_count.c, operator new included) over the timed part only, and bytes held are
// glibc's heap bytes after the first fill minus before.
//
//   bench_agents_peers b2tree|rtree_packed|rtree_rstar|naive_hash PERCENT RUNS FRAMES N
#include "agents_common.h"
#include "alloc_count.h"
#include "bench_common.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#ifdef NBB_HAVE_BOX2D
#include <box2d/b2_dynamic_tree.h>
#endif
#ifdef NBB_HAVE_BOOST
#include "rects_boost.h"
#endif

namespace {

const double kR2 = NBA_RADIUS * NBA_RADIUS;

// The interface every peer implements. fill: untimed, from w.pos; move: this frame's movers
// (w.moved, w.old -> w.pos); queries: one per agent, in index order.
struct Peer {
    virtual ~Peer() = default;
    virtual void fill(const nbaWorld &w) = 0;
    virtual void move(const nbaWorld &w) = 0;
    virtual nbaFrameResult queries(const nbaWorld &w) = 0;
};

#ifdef NBB_HAVE_BOX2D
const float kHalfBox = 0.005f; // agents are 0.01-wide boxes

b2AABB agent_box(double x, double y)
{
    b2AABB b;
    b.lowerBound.Set(float(x) - kHalfBox, float(y) - kHalfBox);
    b.upperBound.Set(float(x) + kHalfBox, float(y) + kHalfBox);
    return b;
}

struct B2Query {
    const b2DynamicTree *tree;
    const double *pos;
    double qx, qy;
    int32_t self;
    nbaFrameResult res;
    bool QueryCallback(int32 proxy)
    {
        int32_t j = int32_t(reinterpret_cast<uintptr_t>(tree->GetUserData(proxy)));
        if (j == self) return true;
        double dx = pos[2 * j] - qx;
        double dy = pos[2 * j + 1] - qy;
        if (dx * dx + dy * dy <= kR2) {
            res.hits++;
            res.index_sum += uint64_t(j);
        }
        return true;
    }
};

struct B2Peer : Peer {
    std::unique_ptr<b2DynamicTree> tree;
    std::vector<int32> proxy;
    void fill(const nbaWorld &w) override
    {
        tree.reset(new b2DynamicTree());
        proxy.assign(size_t(w.n), 0);
        for (int32_t i = 0; i < w.n; i++)
            proxy[size_t(i)] = tree->CreateProxy(agent_box(w.pos[2 * i], w.pos[2 * i + 1]),
                                                 reinterpret_cast<void *>(uintptr_t(i)));
    }
    void move(const nbaWorld &w) override
    {
        for (int32_t k = 0; k < w.moved_n; k++) {
            int32_t i = w.moved[k];
            double x = w.pos[2 * i], y = w.pos[2 * i + 1];
            b2Vec2 d(float(x - w.old[2 * k]), float(y - w.old[2 * k + 1]));
            tree->MoveProxy(proxy[size_t(i)], agent_box(x, y), d);
        }
    }
    nbaFrameResult queries(const nbaWorld &w) override
    {
        B2Query q{tree.get(), w.pos, 0.0, 0.0, 0, {0, 0}};
        const float r = float(NBA_RADIUS);
        for (int32_t i = 0; i < w.n; i++) {
            q.qx = w.pos[2 * i];
            q.qy = w.pos[2 * i + 1];
            q.self = i;
            b2AABB box;
            box.lowerBound.Set(float(q.qx) - r, float(q.qy) - r);
            box.upperBound.Set(float(q.qx) + r, float(q.qy) + r);
            tree->Query(&q, box);
        }
        return q.res;
    }
};
#endif

#ifdef NBB_HAVE_BOOST
// bg, bgi, BPoint and BBox come from rects_boost.h; agents are points, not boxes.
using PValue = std::pair<BPoint, int32_t>;
using PTree = bgi::rtree<PValue, bgi::rstar<16>>;

nbaFrameResult rtree_queries(const PTree &tree, const nbaWorld &w)
{
    nbaFrameResult res{0, 0};
    for (int32_t i = 0; i < w.n; i++) {
        double qx = w.pos[2 * i], qy = w.pos[2 * i + 1];
        BBox box(BPoint(qx - NBA_RADIUS, qy - NBA_RADIUS),
                 BPoint(qx + NBA_RADIUS, qy + NBA_RADIUS));
        tree.query(bgi::intersects(box), boost::make_function_output_iterator([&](const PValue &v) {
                       if (v.second == i) return;
                       double dx = v.first.get<0>() - qx;
                       double dy = v.first.get<1>() - qy;
                       if (dx * dx + dy * dy <= kR2) {
                           res.hits++;
                           res.index_sum += uint64_t(v.second);
                       }
                   }));
    }
    return res;
}

// Bulk-loaded from all agents every frame; `values` mirrors the positions (the moved entries
// are rewritten each frame, inside the timed move).
struct PackedPeer : Peer {
    std::vector<PValue> values;
    PTree tree;
    void fill(const nbaWorld &w) override
    {
        values.clear();
        values.reserve(size_t(w.n));
        for (int32_t i = 0; i < w.n; i++)
            values.emplace_back(BPoint(w.pos[2 * i], w.pos[2 * i + 1]), i);
        tree = PTree(values.begin(), values.end());
    }
    void move(const nbaWorld &w) override
    {
        for (int32_t k = 0; k < w.moved_n; k++) {
            int32_t i = w.moved[k];
            values[size_t(i)].first = BPoint(w.pos[2 * i], w.pos[2 * i + 1]);
        }
        tree = PTree(values.begin(), values.end());
    }
    nbaFrameResult queries(const nbaWorld &w) override
    {
        return rtree_queries(tree, w);
    }
};

struct RstarPeer : Peer {
    PTree tree;
    void fill(const nbaWorld &w) override
    {
        tree.clear();
        for (int32_t i = 0; i < w.n; i++)
            tree.insert(PValue(BPoint(w.pos[2 * i], w.pos[2 * i + 1]), i));
    }
    void move(const nbaWorld &w) override
    {
        for (int32_t k = 0; k < w.moved_n; k++) {
            int32_t i = w.moved[k];
            if (tree.remove(PValue(BPoint(w.old[2 * k], w.old[2 * k + 1]), i)) != 1) {
                fprintf(stderr, "bench_agents_peers: rtree_rstar: remove of agent %d failed\n", i);
                exit(1);
            }
            tree.insert(PValue(BPoint(w.pos[2 * i], w.pos[2 * i + 1]), i));
        }
    }
    nbaFrameResult queries(const nbaWorld &w) override
    {
        return rtree_queries(tree, w);
    }
};
#endif

// The baseline: what one writes without a library.
struct NaiveHashPeer : Peer {
    std::unordered_map<uint64_t, std::vector<int32_t>> cells;
    std::vector<uint64_t> cell_of;
    static int32_t coord(double v)
    {
        return int32_t(std::floor(v / NBA_RADIUS)); // r = 2: the division is exact
    }
    static uint64_t key(int32_t cx, int32_t cy)
    {
        return (uint64_t(uint32_t(cx)) << 32) | uint32_t(cy);
    }
    void fill(const nbaWorld &w) override
    {
        cells.clear();
        cell_of.assign(size_t(w.n), 0);
        for (int32_t i = 0; i < w.n; i++) {
            uint64_t k = key(coord(w.pos[2 * i]), coord(w.pos[2 * i + 1]));
            cell_of[size_t(i)] = k;
            cells[k].push_back(i);
        }
    }
    void move(const nbaWorld &w) override
    {
        for (int32_t m = 0; m < w.moved_n; m++) {
            int32_t i = w.moved[m];
            uint64_t k = key(coord(w.pos[2 * i]), coord(w.pos[2 * i + 1]));
            uint64_t old = cell_of[size_t(i)];
            if (k == old) continue;
            std::vector<int32_t> &from = cells[old];
            for (size_t s = 0; s < from.size(); s++) {
                if (from[s] == i) {
                    from[s] = from.back();
                    from.pop_back();
                    break;
                }
            }
            cells[k].push_back(i);
            cell_of[size_t(i)] = k;
        }
    }
    nbaFrameResult queries(const nbaWorld &w) override
    {
        nbaFrameResult res{0, 0};
        for (int32_t i = 0; i < w.n; i++) {
            double qx = w.pos[2 * i], qy = w.pos[2 * i + 1];
            int32_t cx = coord(qx), cy = coord(qy);
            for (int32_t dy = -1; dy <= 1; dy++) {
                for (int32_t dx = -1; dx <= 1; dx++) {
                    auto it = cells.find(key(cx + dx, cy + dy));
                    if (it == cells.end()) continue;
                    for (int32_t j : it->second) {
                        if (j == i) continue;
                        double ex = w.pos[2 * j] - qx;
                        double ey = w.pos[2 * j + 1] - qy;
                        if (ex * ex + ey * ey <= kR2) {
                            res.hits++;
                            res.index_sum += uint64_t(j);
                        }
                    }
                }
            }
        }
        return res;
    }
};

std::unique_ptr<Peer> make_peer(const std::string &name)
{
#ifdef NBB_HAVE_BOX2D
    if (name == "b2tree") return std::unique_ptr<Peer>(new B2Peer());
#endif
#ifdef NBB_HAVE_BOOST
    if (name == "rtree_packed") return std::unique_ptr<Peer>(new PackedPeer());
    if (name == "rtree_rstar") return std::unique_ptr<Peer>(new RstarPeer());
#endif
    if (name == "naive_hash") return std::unique_ptr<Peer>(new NaiveHashPeer());
    return nullptr;
}

} // namespace

int main(int argc, char **argv)
{
    nbaArgs a = nba_parse_args(argc, argv, "bench_agents_peers",
                               "b2tree|rtree_packed|rtree_rstar|naive_hash");
    std::unique_ptr<Peer> peer = make_peer(a.peer);
    if (!peer) {
        fprintf(stderr, "bench_agents_peers: peer %s unknown or not built in\n", a.peer);
        return 3;
    }
    nbaWorld w;
    nba_init(&w, a.n);
    int64_t frame_ns[NBA_MAX_RUNS];
    int64_t move_ns[NBA_MAX_RUNS];
    int64_t cpu_ns[NBA_MAX_RUNS];
    nbaTally first{0, 0, 0, 0, 0};
    uint64_t allocs = 0;
    size_t bytes = 0;
    for (int run = 0; run < a.runs; run++) {
        nba_reset(&w);
        size_t before = nbb_heap_bytes();
        peer->fill(w);
        if (run == 0) {
            size_t after = nbb_heap_bytes();
            bytes = after > before ? after - before : 0;
        }
        nbaTally t{0, 0, 0, 0, 0};
        frame_ns[run] = 0;
        move_ns[run] = 0;
        cpu_ns[run] = 0;
        for (int f = 0; f < a.frames; f++) {
            nba_step(&w, a.percent);
            uint64_t a0 = nbb_alloc_calls();
            int64_t c0 = nba_cpu_ns();
            int64_t t0 = nbb_now_ns();
            peer->move(w);
            int64_t t1 = nbb_now_ns();
            nbaFrameResult res = peer->queries(w);
            int64_t t2 = nbb_now_ns();
            int64_t c2 = nba_cpu_ns();
            allocs += nbb_alloc_calls() - a0;
            frame_ns[run] += t2 - t0;
            move_ns[run] += t1 - t0;
            cpu_ns[run] += c2 - c0;
            nba_tally_add(&t, res);
        }
        if (run == 0)
            first = t;
        else
            nba_same_runs(a.peer, &first, &t);
    }
    nba_emit(&a, a.peer, frame_ns, move_ns, cpu_ns, double(allocs) / (double(a.runs) * a.frames),
             bytes, "malloc_delta", &first, NBB_COMPILER, NBB_FLAGS);
    peer.reset();
    nba_free(&w);
    return 0;
}
