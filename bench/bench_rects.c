// SPDX-License-Identifier: MIT
// The rectangles benchmark (rects_common.h), nearby's side: the quadtree (nb_quadtree_*), each
// rectangle inserted with its index as user value, root bounds the data's square.
//
// Figures (CSV lines `peer,figure,ms_median,runs,count,sum` on stdout, count and sum the
// nbrTally of the figure, the same as bench_rects_peers.cpp prints):
//   build_1m      nb_quadtree_create and nb_quadtree_build of the N rectangles (--insert: with
//                 capacity_hint = N, N nb_quadtree_insert), median of `runs` builds, each from a
//                 fresh tree (destroying it is not timed); count = rectangles held.
//   windows_10k   nb_quadtree_query_box per window into a reused buffer, all windows per run.
//   pairs_100k    nb_quadtree_visit_pairs on a tree of the first 100k rectangles built
//                 beforehand (not timed).
//   moving_frame  100k rectangles built (not timed), then per frame one nb_quadtree_move_many
//                 for every rectangle (after nbr_move and copying the rectangles into an nbRect
//                 array, not timed; NBB_RECTS_SINGLE=1 in the environment: nb_quadtree_move for
//                 each) and nb_quadtree_query_box with each rectangle as the window (hits include
//                 itself); ms_median is the median frame, runs the frames, count/sum over all
//                 frames. The median time of the moves alone and the allocations in the frames
//                 (the tree's allocator hook) are printed to stderr. NBB_RECTS_SINGLE=ab: one
//                 call a move in odd frames, the batch in even ones, each half's medians on
//                 stderr (an A/B in one process, where processes differ by more than 5%).
//                 --rebuild: per frame one nb_quadtree_build of every rectangle instead of the
//                 moves (what the packed Boost rtree does each frame; the peer is named
//                 ..._rebuild); the allocations in the frames then show whether a rebuild
//                 reuses the tree's storage.
// --quick: 100k rectangles (build), 1k windows, pairs on the first 10k, 10k moving x 5 frames.
// --frames F: only the first F frames of the moving workload (for profilers). --each: every
// run's time on stderr (build, windows, pairs), to tell a process's runs apart from the next's.
//
//   bench_rects [--quick] [--runs K] [--only build,windows,pairs,moving]
//               [--placement loose|tight] [--threshold T] [--depth D] [--insert] [--stats]
//               [--frames F] [--each] [--default-desc] [--offset X,Y] [--rebuild]
// --default-desc: the tree's desc leaves the bounds zero (the default hint, [-1024, 1024]^2)
// instead of the data's square; the peer is named ..._default_desc. --offset X,Y: every set
// (static, windows, moving, and the moving set's walls) moved by (X, Y) (rects_common.h,
// nbr_shift), as bench_rects_peers --offset does.
// With a placement, threshold or depth other than the defaults the peer is named
// nearby_quadtree_<placement>_t<T>. --stats adds, on stderr, the tree's shape after the build
// (nodes, depth, rectangles held above the leaves) and, when built with NBI_QT_STATS
// (bench_rects_stats), the nodes visited per window.
#include "bench_common.h"
#include "counting_allocator.h"
#include "rects_common.h"

#include <nearby/quadtree.h>

#ifdef NBI_QT_STATS
extern int64_t nbi_qt_nodes_visited; // src/quadtree_queries.c, counted only in this build
extern int64_t nbi_qt_items_tested;
#endif

enum { QCAP = 1 << 16 };

// Wall-clock time, or with NBB_CPU_TIME=1 in the environment this thread's CPU time: on a
// shared, loaded machine the latter leaves out the time other processes held the core (but
// not what they did to the caches), for tuning only; reported figures are wall-clock.
static bool cpu_time;

static int64_t now_ns(void)
{
    if (!cpu_time) return nbb_now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

typedef struct Sizes {
    int32_t n_static, n_windows, n_pairs, n_moving, frames;
} Sizes;

static const Sizes full_sizes = {NBR_N_STATIC, NBR_N_WINDOWS, NBR_N_PAIRS, NBR_N_MOVING,
                                 NBR_FRAMES};
static const Sizes quick_sizes = {100000, 1000, 10000, 10000, 5};

static void check(nbStatus s, const char *what)
{
    if (s != NB_OK) {
        fprintf(stderr, "bench_rects: %s: %s\n", what, nb_status_str(s));
        exit(1);
    }
}

typedef struct Options {
    int placement, threshold, depth;
    const nbAllocator *allocator;
    bool default_desc; // --default-desc: desc.bounds left zero (the default hint)
    double off[2];     // --offset X,Y
} Options;

static nbQuadtree *make_tree(const Options *o, int32_t n, int32_t hint)
{
    const double h = nbr_half(n);
    nbQuadtreeDesc desc = {0};
    if (!o->default_desc)
        desc.bounds = (nbRect){{o->off[0] - h, o->off[1] - h}, {o->off[0] + h, o->off[1] + h}};
    desc.placement = o->placement;
    desc.split_threshold = o->threshold;
    desc.max_depth = o->depth;
    desc.capacity_hint = hint;
    desc.allocator = o->allocator;
    nbQuadtree *qt = NULL;
    check(nb_quadtree_create(&desc, &qt), "nb_quadtree_create");
    return qt;
}

// The rectangles into the tree: nb_quadtree_build (user value = index), or with --insert one
// nb_quadtree_insert each. rects_common.h's minx, miny, maxx, maxy is nbRect's layout.
static bool use_insert;
static bool rebuild; // --rebuild: the moving frame rebuilds the tree instead of moving

static void fill(nbQuadtree *qt, const double *r, int32_t n, nbHandle *handles)
{
    if (!use_insert) {
        check(nb_quadtree_build(qt, (const nbRect *)r, n, NULL, NULL, handles),
              "nb_quadtree_build");
        return;
    }
    for (int32_t i = 0; i < n; i++) {
        const nbRect rect = {{r[4 * i], r[4 * i + 1]}, {r[4 * i + 2], r[4 * i + 3]}};
        check(nb_quadtree_insert(qt, &rect, (uint64_t)i, NB_FILTER_ALL, &handles[i]),
              "nb_quadtree_insert");
    }
}

static nbrTally windows(const nbQuadtree *qt, const double *w, int32_t m, nbHit *buf)
{
    nbrTally t = {0, 0};
    for (int32_t k = 0; k < m; k++) {
        const nbBox win = {{w[4 * k], w[4 * k + 1]}, {w[4 * k + 2], w[4 * k + 3]}};
        int32_t found = 0;
        check(nb_quadtree_query_box(qt, &win, NB_FILTER_ALL, buf, QCAP, &found),
              "nb_quadtree_query_box");
        for (int32_t i = 0; i < found; i++) nbr_tally_hit(&t, buf[i].user);
    }
    return t;
}

typedef struct PairTally {
    nbrTally t;
    uint64_t n;
} PairTally;

static bool on_pair(nbHit a, nbHit b, void *user)
{
    PairTally *p = user;
    nbr_tally_pair(&p->t, a.user, b.user, p->n);
    return true;
}

static bool each_run; // --each: every run's time on stderr

static void emit(const char *peer, const char *figure, const int64_t *ns, int runs, nbrTally t)
{
    if (each_run) {
        fprintf(stderr, "bench_rects: %s runs (ms):", figure);
        for (int k = 0; k < runs; k++) fprintf(stderr, " %.2f", (double)ns[k] / 1e6);
        fprintf(stderr, "\n");
    }
    int64_t min_ns, median_ns;
    nbb_stats(ns, runs, &min_ns, &median_ns);
    printf("%s,%s,%.3f,%d,%llu,%llu\n", peer, figure, (double)median_ns / 1e6, runs,
           (unsigned long long)t.count, (unsigned long long)t.sum);
    fflush(stdout);
}

static void check_runs(const char *figure, nbrTally first, nbrTally t)
{
    if (first.count != t.count || first.sum != t.sum) {
        fprintf(stderr, "bench_rects: %s: runs disagree\n", figure);
        exit(1);
    }
}

static bool wanted(const char *only, const char *fig)
{
    char pat[64], list[256];
    snprintf(pat, sizeof pat, ",%s,", fig);
    snprintf(list, sizeof list, ",%s,", only);
    return strstr(list, pat) != NULL;
}

static void print_shape(const char *what, const nbQuadtree *qt)
{
    nbQuadtreeInfo info;
    check(nb_quadtree_info(qt, &info), "nb_quadtree_info");
    fprintf(stderr,
            "bench_rects: %s: %d rectangles, %d nodes, %d leaves, depth %d, %d held above the "
            "leaves (%.1f%%), %d outside, %.1f MB\n",
            what, (int)info.count, (int)info.nodes, (int)info.leaves, (int)info.depth,
            (int)info.held_above, 100.0 * info.held_above / (info.count > 0 ? info.count : 1),
            (int)info.outside, (double)info.bytes / 1e6);
}

int main(int argc, char **argv)
{
    bool quick = false, stats = false;
    int runs_arg = 0, frames_arg = 0;
    const char *only = "build,windows,pairs,moving";
    Options o = {0, 0, 0, NULL, false, {0.0, 0.0}};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--insert") == 0) {
            use_insert = true;
        } else if (strcmp(argv[i], "--stats") == 0) {
            stats = true;
        } else if (strcmp(argv[i], "--each") == 0) {
            each_run = true;
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs_arg = atoi(argv[++i]);
            if (runs_arg < 1 || runs_arg > NBB_MAX_RUNS) runs_arg = 1;
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else if (strcmp(argv[i], "--placement") == 0 && i + 1 < argc) {
            i++;
            o.placement = strcmp(argv[i], "tight") == 0 ? NB_QUADTREE_TIGHT : NB_QUADTREE_LOOSE;
        } else if (strcmp(argv[i], "--threshold") == 0 && i + 1 < argc) {
            o.threshold = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--depth") == 0 && i + 1 < argc) {
            o.depth = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc) {
            frames_arg = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--rebuild") == 0) {
            rebuild = true;
        } else if (strcmp(argv[i], "--default-desc") == 0) {
            o.default_desc = true;
        } else if (strcmp(argv[i], "--offset") == 0 && i + 1 < argc &&
                   sscanf(argv[i + 1], "%lf,%lf", &o.off[0], &o.off[1]) == 2) {
            i++;
        } else {
            fprintf(stderr, "usage: bench_rects [--quick] [--runs K] [--only "
                            "build,windows,pairs,moving] [--placement loose|tight] "
                            "[--threshold T] [--depth D] [--insert] [--stats] [--frames F] "
                            "[--each] [--default-desc] [--offset X,Y] [--rebuild]\n");
            return 2;
        }
    }
    char peer[96] = "nearby_quadtree";
    if (o.placement != 0 || o.threshold != 0 || o.depth != 0 || use_insert)
        snprintf(peer, sizeof peer, "nearby_quadtree_%s_t%d%s%s",
                 o.placement == NB_QUADTREE_TIGHT ? "tight" : "loose",
                 o.threshold > 0 ? o.threshold : 128, o.depth > 0 ? "_d" : "",
                 use_insert ? "_insert" : "");
    if (o.default_desc) strncat(peer, "_default_desc", sizeof peer - strlen(peer) - 1);
    if (rebuild) strncat(peer, "_rebuild", sizeof peer - strlen(peer) - 1);
    const char *cpu_env = getenv("NBB_CPU_TIME");
    cpu_time = cpu_env != NULL && strcmp(cpu_env, "1") == 0;
    Sizes sz = quick ? quick_sizes : full_sizes;
    if (frames_arg > 0 && frames_arg <= sz.frames) sz.frames = frames_arg;
    double *rects = malloc(sizeof(double) * 4 * (size_t)sz.n_static);
    double *wins = malloc(sizeof(double) * 4 * (size_t)sz.n_windows);
    double *moving = malloc(sizeof(double) * 4 * (size_t)sz.n_moving);
    nbHandle *handles = malloc(sizeof(nbHandle) * (size_t)sz.n_static);
    nbHit *buf = malloc(sizeof(nbHit) * QCAP);
    if (rects == NULL || wins == NULL || moving == NULL || handles == NULL || buf == NULL) {
        fprintf(stderr, "bench_rects: out of memory\n");
        return 1;
    }
    nbr_make_rects(rects, sz.n_static);
    nbr_make_windows(wins, sz.n_windows, sz.n_static);
    nbr_make_rects(moving, sz.n_moving);
    nbr_shift(rects, sz.n_static, o.off[0], o.off[1]);
    nbr_shift(wins, sz.n_windows, o.off[0], o.off[1]);
    nbr_shift(moving, sz.n_moving, o.off[0], o.off[1]);
    int64_t ns[NBB_MAX_RUNS];

    nbQuadtree *qt = NULL;
    if (wanted(only, "build")) {
        int runs = runs_arg ? runs_arg : 7;
        nbrTally t = {(uint64_t)sz.n_static, 0};
        for (int k = 0; k < runs; k++) {
            nb_quadtree_destroy(qt);
            int64_t t0 = now_ns();
            qt = make_tree(&o, sz.n_static, use_insert ? sz.n_static : 0);
            fill(qt, rects, sz.n_static, handles);
            ns[k] = now_ns() - t0;
        }
        emit(peer, "build_1m", ns, runs, t);
    }
    if (wanted(only, "windows")) {
        if (qt == NULL) {
            qt = make_tree(&o, sz.n_static, use_insert ? sz.n_static : 0);
            fill(qt, rects, sz.n_static, handles);
        }
        if (stats) print_shape("static set", qt);
        int runs = runs_arg ? runs_arg : 7;
        nbrTally first = {0, 0};
        for (int k = 0; k < runs; k++) {
#ifdef NBI_QT_STATS
            nbi_qt_nodes_visited = nbi_qt_items_tested = 0;
#endif
            int64_t t0 = now_ns();
            nbrTally t = windows(qt, wins, sz.n_windows, buf);
            ns[k] = now_ns() - t0;
            if (k == 0)
                first = t;
            else
                check_runs("windows_10k", first, t);
#ifdef NBI_QT_STATS
            if (k == 0)
                fprintf(stderr,
                        "bench_rects: %.1f nodes visited, %.1f rectangles tested per window\n",
                        (double)nbi_qt_nodes_visited / sz.n_windows,
                        (double)nbi_qt_items_tested / sz.n_windows);
#endif
        }
        emit(peer, "windows_10k", ns, runs, first);
    }
    nb_quadtree_destroy(qt);
    qt = NULL;
    if (wanted(only, "pairs")) {
        qt = make_tree(&o, sz.n_static, sz.n_pairs);
        fill(qt, rects, sz.n_pairs, handles);
        int runs = runs_arg ? runs_arg : 5;
        nbrTally first = {0, 0};
        for (int k = 0; k < runs; k++) {
            PairTally p = {{0, 0}, (uint64_t)sz.n_pairs};
            int64_t t0 = now_ns();
            check(nb_quadtree_visit_pairs(qt, on_pair, &p), "nb_quadtree_visit_pairs");
            ns[k] = now_ns() - t0;
            if (k == 0)
                first = p.t;
            else
                check_runs("pairs_100k", first, p.t);
        }
        emit(peer, "pairs_100k", ns, runs, first);
        nb_quadtree_destroy(qt);
        qt = NULL;
    }
    if (wanted(only, "moving")) {
        CountingAllocator counter = {0, 0, 0, 0};
        nbAllocator hooks = {counting_alloc, counting_free, &counter};
        Options mo = o;
        mo.allocator = &hooks;
        qt = make_tree(&mo, sz.n_moving, sz.n_moving);
        fill(qt, moving, sz.n_moving, handles);
        int64_t *frame_ns = malloc(sizeof(int64_t) * (size_t)sz.frames);
        int64_t *move_ns = malloc(sizeof(int64_t) * (size_t)sz.frames);
        nbRect *to = malloc(sizeof(nbRect) * (size_t)sz.n_moving);
        if (frame_ns == NULL || move_ns == NULL || to == NULL) return 1;
        // NBB_RECTS_SINGLE=1: nb_quadtree_move for each; =ab: that in odd frames, the batch in
        // even ones, and the medians of each half on stderr (an A/B within one process).
        const char *single_env = getenv("NBB_RECTS_SINGLE");
        const bool single = single_env != NULL && strcmp(single_env, "1") == 0;
        const bool ab = single_env != NULL && strcmp(single_env, "ab") == 0;
        uint64_t s = NBR_SEED_MOVES;
        nbrTally total = {0, 0};
        const uint64_t allocs_before = counter.allocs;
#ifdef NBI_QT_STATS
        nbi_qt_nodes_visited = nbi_qt_items_tested = 0;
#endif
        for (int f = 0; f < sz.frames; f++) {
            nbr_move_at(moving, sz.n_moving, &s, o.off[0], o.off[1]);
            for (int32_t i = 0; i < sz.n_moving; i++) {
                const double *m = moving + 4 * (size_t)i;
                to[i] = (nbRect){{m[0], m[1]}, {m[2], m[3]}};
            }
            int64_t t0 = now_ns();
            if (rebuild) {
                check(nb_quadtree_build(qt, to, sz.n_moving, NULL, NULL, NULL),
                      "nb_quadtree_build");
            } else if (single || (ab && f % 2 == 1)) {
                for (int32_t i = 0; i < sz.n_moving; i++)
                    check(nb_quadtree_move(qt, handles[i], &to[i]), "nb_quadtree_move");
            } else {
                check(nb_quadtree_move_many(qt, handles, to, sz.n_moving, NULL),
                      "nb_quadtree_move_many");
            }
            const int64_t t1 = now_ns();
            nbrTally t = windows(qt, moving, sz.n_moving, buf);
            frame_ns[f] = now_ns() - t0;
            move_ns[f] = t1 - t0;
            total.count += t.count;
            total.sum += t.sum;
        }
        if (stats) print_shape("moving set after the frames", qt);
#ifdef NBI_QT_STATS
        fprintf(stderr,
                "bench_rects: moving: %.1f nodes visited, %.1f rectangles tested per window\n",
                (double)nbi_qt_nodes_visited / ((double)sz.n_moving * sz.frames),
                (double)nbi_qt_items_tested / ((double)sz.n_moving * sz.frames));
#endif
        fprintf(stderr, "bench_rects: moving: %lld allocations in %d frames\n",
                (long long)(counter.allocs - allocs_before), sz.frames);
        if (ab && sz.frames >= 4) {
            const int half = sz.frames / 2;
            int64_t *h[4];
            for (int k = 0; k < 4; k++) h[k] = malloc(sizeof(int64_t) * (size_t)half);
            if (h[0] == NULL || h[1] == NULL || h[2] == NULL || h[3] == NULL) return 1;
            for (int k = 0; k < half; k++) {
                h[0][k] = frame_ns[2 * k];
                h[1][k] = frame_ns[2 * k + 1];
                h[2][k] = move_ns[2 * k];
                h[3][k] = move_ns[2 * k + 1];
            }
            for (int k = 0; k < 4; k++) qsort(h[k], (size_t)half, sizeof(int64_t), nbb_cmp_i64);
            fprintf(stderr,
                    "bench_rects: moving ab: frame %.3f batch / %.3f single, moves %.3f / %.3f "
                    "ms (medians of %d frames each)\n",
                    (double)h[0][(half - 1) / 2] / 1e6, (double)h[1][(half - 1) / 2] / 1e6,
                    (double)h[2][(half - 1) / 2] / 1e6, (double)h[3][(half - 1) / 2] / 1e6, half);
            for (int k = 0; k < 4; k++) free(h[k]);
        }
        qsort(frame_ns, (size_t)sz.frames, sizeof *frame_ns, nbb_cmp_i64);
        qsort(move_ns, (size_t)sz.frames, sizeof *move_ns, nbb_cmp_i64);
        fprintf(stderr, "bench_rects: moving: moves %.3f ms (median frame, %s)\n",
                (double)move_ns[(sz.frames - 1) / 2] / 1e6,
                rebuild  ? "nb_quadtree_build"
                : single ? "nb_quadtree_move each"
                         : "nb_quadtree_move_many");
        printf("%s,moving_frame,%.3f,%d,%llu,%llu\n", peer,
               (double)frame_ns[(sz.frames - 1) / 2] / 1e6, sz.frames,
               (unsigned long long)total.count, (unsigned long long)total.sum);
        free(frame_ns);
        free(move_ns);
        free(to);
        nb_quadtree_destroy(qt);
    }
    free(rects);
    free(wins);
    free(moving);
    free(handles);
    free(buf);
    return 0;
}
