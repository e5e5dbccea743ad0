// SPDX-License-Identifier: MIT
// The contract tests' shared parts: the sizes and fixtures, the mutations and specs of the
// table runner (test_contract.c) that the grid's and the hash's tables use, the argument
// lists both share, and the runner for stored-item structures that the tile grid's and the
// quadtree's cases use. Each structure's cases are in test_contract_<structure>.c.
//
// The error contract of every public function (docs/errors.md), table-driven.
//
// For each function a Spec lists its required pointers, its non-finite inputs, its out-of-range
// inputs and some accepted edge values. From those lists the table runner generates, on four
// fixture grids (2D dense, 3D with an explicit cell, 2D hashed, 3D empty):
//   - each required pointer NULL, alone, with another NULL, and with every non-finite and
//     out-of-range input: NB_ERR_NULL_ARG (pointers are checked first);
//   - each non-finite input alone and with every out-of-range input: NB_ERR_NOT_FINITE
//     (finiteness is checked before ranges);
//   - each out-of-range input alone: NB_ERR_OUT_OF_RANGE;
//   - accepted edge values (-0.0, infinite box bounds, NULL out with capacity 0, ...): success,
//     -0.0 giving exactly what +0.0 gives.
// Every call starts with its outputs filled with garbage (-777, a bogus grid pointer). After a
// failing call each output the caller passed holds its safe value (*found / *count 0, *out of
// create NULL), no callback ran, and the fixture grid validates and answers exactly as before.
// tests/contract_coverage.sh checks that every NB_API function of include/nearby/ is named here.
#ifndef NEARBY_TEST_CONTRACT_H
#define NEARBY_TEST_CONTRACT_H

#include <nearby/grid.h>
#include <nearby/hash.h>
#include <nearby/neighbors.h>
#include <nearby/quadtree.h>
#include <nearby/tiles.h>

#include "nb_test.h"

#include <float.h>
#include <limits.h>
#include <math.h>

// ---- sizes and fixtures ----

enum {
    FIX_N = 64,      // points in a fixture grid
    BUILD_N = 32,    // points passed to nb_grid_build by the build rows
    IDX_CAP = 256,   // query buffer, holds every fixture point
    NN_CAP = 256,    // kNN buffer
    PAIR_CAP = 4096, // pair buffer, holds every pair of a fixture
    KNN_K = 5,       // default k
    KNN_K_ALL = 200, // a k above every fixture's count
    GARBAGE = -777,  // what outputs hold before a call
};

#define D_NAN ((double)NAN)
#define D_INF ((double)INFINITY)

static const double R0 = 0.15; // the radius fixtures are built and queried at

// A fixture's answers, compared after every call that must not change the grid.
typedef struct Answers {
    nbStatus validate;
    int32_t count, units;
    int64_t pairs;
    uint64_t pairs_hash;
    nbStatus info_status;
    nbGridInfo info; // bytes is not compared: reserve may change it
} Answers;

typedef struct Fixture {
    const char *name;
    int dim;
    double cell;  // desc.cell_size
    int kind;     // FIXK_*
    Answers base; // the fixture's answers right after it was built
} Fixture;

enum { FIXK_UNIFORM, FIXK_CLUSTERS, FIXK_EMPTY };

// Deterministic coordinates, independent of NB_SEED, so every row sees the same grids.
extern uint64_t fix_rng;
static inline double fix_unit(void)
{
    uint64_t z = (fix_rng += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

static inline uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15u + (h << 6) + (h >> 2);
    return h * 0x100000001B3u;
}

static inline uint64_t bits_of(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

// ---- the calls ----

typedef enum Fn {
    FN_CREATE,
    FN_RESERVE,
    FN_BUILD,
    FN_INFO,
    FN_VALIDATE,
    FN_PAIRS,
    FN_COUNT_PAIRS,
    FN_VISIT_PAIRS,
    FN_VISIT_PAIRS_RANGE,
    FN_QUERY_RADIUS,
    FN_VISIT_RADIUS,
    FN_QUERY_BOX,
    FN_VISIT_BOX,
    FN_KNN,
    FN_VISIT_KNN,
    FN_CROSS_PAIRS,
    FN_COUNT_CROSS_PAIRS,
    FN_VISIT_CROSS_PAIRS,
} Fn;

// What one mutation of the valid default arguments changes: the fields both tables have
// (applied by apply_common), then the grid's own; the hash's own are further down.
enum {
    F_DESC,        // desc := NULL
    F_OUTOBJ,      // create's out := NULL
    F_ALLOC_FN,    // desc.allocator->alloc := NULL
    F_FREE_FN,     // desc.allocator->free := NULL
    F_ALLOCATOR,   // desc.allocator := NULL
    F_CELL,        // desc.cell_size := v
    F_GDIM,        // desc.dim := v
    F_HINT,        // desc.capacity_hint := v
    F_RADIUS,      // radius := v
    F_CENTER,      // center / knn point [idx] := v
    F_LO,          // lo[idx] := v
    F_HI,          // hi[idx] := v
    F_BOX_ALL,     // lo := -inf, hi := +inf on every axis
    F_OUT,         // out buffer := NULL
    F_CAP,         // capacity := v
    F_FOUND,       // found / count := NULL
    F_K,           // k := v
    F_VISIT,       // visit := NULL
    F_USER,        // user := NULL
    F_FILTER_CAT,  // filter.category := v
    F_FILTER_MASK, // filter.mask := v
    F_POS,         // insert / move position [idx] := v; idx < 0: the pointer := NULL
    F_MAXD,        // kNN max_distance := v
    F_SHARED_END,
    F_SELF = F_SHARED_END, // the grid or hash (cross pairs: a) := NULL
    F_B,                   // b := NULL
    F_B_OTHER_DIM,         // b := a grid of the other dimension
    F_B_SELF,              // b := the grid itself
    F_POINTS,              // points := NULL
    F_DATA,                // points.data := NULL
    F_COUNT,               // points.count := v
    F_PDIM,                // points.dim := v (idx REL: the other valid dimension)
    F_STRIDE,              // points.stride := v (idx REL: dim doubles + v bytes)
    F_COORD,               // data[idx] := v (idx LAST, PAD, P1: see coord_index)
    F_UB,                  // unit_begin := v (idx REL: units + v)
    F_UE,                  // unit_end := v (idx REL: units + v)
    F_N,                   // reserve's count := v
    F_INFO,                // info := NULL
    F_PERIOD,              // desc.period[idx] := v
};

enum { IDX_REL = -1, IDX_LAST = -2, IDX_PAD = -3, IDX_P1 = -4 };

typedef struct Mut {
    int f; // F_* or H_*
    int idx;
    double v;
} Mut;

enum {
    G_CAP = 1 << 0,    // out / capacity / k: not paired with each other
    G_DATA = 1 << 1,   // points.data / points.count
    G_RADIUS = 1 << 2, // the radius
    G_CELL = 1 << 3,   // desc.cell_size
    G_B = 1 << 4,      // the second grid
    G_UNITS = 1 << 5,  // unit range
    G_GROUPS = (1 << 6) - 1,
    LAYOUT = 1 << 8,    // changes where coordinates are read: not paired with a bad coordinate
    COORD = 1 << 9,     // a bad coordinate
    EXPLICIT = 1 << 10, // only on fixtures with an explicit cell size
};

typedef struct MutSet {
    const char *name;
    Mut m[3];
    int n;
    unsigned flags;
} MutSet;

// What an accepted row checks.
typedef enum OkKind {
    OK_ANY,         // success (NB_OK, or NB_ERR_BUFFER_TOO_SMALL with *found > capacity)
    OK_TWIN,        // success, and exactly the result of the same call with +0.0 for -0.0
    OK_BASE,        // success, the same found count as the unmodified call
    OK_ZERO,        // NB_OK, nothing found, no callback
    OK_ALL,         // success, found every point of the fixture
    OK_ALL_BUT_ONE, // success, found every item but the asker (hash neighbours)
    OK_SAME,        // NB_OK, and the structure answers as before (hash reserve, get)
} OkKind;

typedef struct OkSet {
    MutSet s;
    OkKind kind;
} OkSet;

#define M1(name, flags, f, i, v)                                                                   \
    {                                                                                              \
        name, {{f, i, v}}, 1, flags                                                                \
    }
#define M2(name, flags, f1, i1, v1, f2, i2, v2)                                                    \
    {                                                                                              \
        name, {{f1, i1, v1}, {f2, i2, v2}}, 2, flags                                               \
    }
#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define LIST(a) a, LEN(a)
#define NOLIST NULL, 0

// Outputs and shape of a function.
enum {
    O_FOUND32 = 1 << 0,
    O_FOUND64 = 1 << 1,
    O_CREATE = 1 << 2,
    O_VISIT = 1 << 3,
    O_MUTATE = 1 << 4, // changes the structure when it succeeds (build, insert, ...)
    O_IDX = 1 << 5,    // an index / hit buffer
    O_PAIRS = 1 << 6,
    O_NN = 1 << 7,
    O_HANDLE_OUT = 1 << 8,    // insert's *out
    O_GET = 1 << 9,           // get's outputs: untouched on error
    O_TAKES_HANDLE = 1 << 10, // without a live item only pointer and handle rows
};

typedef struct Spec {
    int fn; // Fn or HFn
    const char *name;
    unsigned outs;
    const MutSet *nulls;
    int n_nulls;
    const MutSet *handles; // the hash's bad handles
    int n_handles;
    const MutSet *nonfinite;
    int n_nonfinite;
    const MutSet *range;
    int n_range;
    const OkSet *ok;
    int n_ok;
} Spec;

// ---- argument lists ----

static const double TINY = DBL_TRUE_MIN;

#define NF_RADIUS                                                                                  \
    M1("radius NaN", G_RADIUS, F_RADIUS, 0, D_NAN),                                                \
        M1("radius +inf", G_RADIUS, F_RADIUS, 0, D_INF),                                           \
        M1("radius -inf", G_RADIUS, F_RADIUS, 0, -D_INF)
#define NF_POINT(F, nm)                                                                            \
    M1(nm "[0] NaN", 0, F, 0, D_NAN), M1(nm "[1] +inf", 0, F, 1, D_INF),                           \
        M1(nm "[2] -inf", 0, F, 2, -D_INF), M1(nm "[0] -inf", 0, F, 0, -D_INF),                    \
        M1(nm "[1] NaN", 0, F, 1, D_NAN), M1(nm "[2] NaN", 0, F, 2, D_NAN)
#define RG_RADIUS                                                                                  \
    M1("radius -1", G_RADIUS, F_RADIUS, 0, -1.0), M1("radius -tiny", G_RADIUS, F_RADIUS, 0, -TINY)
#define RG_CAP                                                                                     \
    M1("capacity -1", G_CAP, F_CAP, 0, -1.0), M1("capacity INT32_MIN", G_CAP, F_CAP, 0, INT32_MIN)
#define OK_RADIUS_ZERO                                                                             \
    {                                                                                              \
        M1("radius -0.0", G_RADIUS, F_RADIUS, 0, -0.0), OK_TWIN                                    \
    }

static const MutSet nulls_create[] = {
    M1("desc NULL", 0, F_DESC, 0, 0),
    M1("out NULL", 0, F_OUTOBJ, 0, 0),
    M1("allocator with free only (alloc NULL)", 0, F_ALLOC_FN, 0, 0),
    M1("allocator with alloc only (free NULL)", 0, F_FREE_FN, 0, 0),
};
static const MutSet nonfinite_create[] = {
    M1("cell_size NaN", G_CELL, F_CELL, 0, D_NAN),
    M1("cell_size +inf", G_CELL, F_CELL, 0, D_INF),
    M1("cell_size -inf", G_CELL, F_CELL, 0, -D_INF),
};
#define RG_CREATE                                                                                  \
    M1("cell_size -1", G_CELL, F_CELL, 0, -1.0), M1("cell_size -tiny", G_CELL, F_CELL, 0, -TINY),  \
        M1("capacity_hint -1", 0, F_HINT, 0, -1.0),                                                \
        M1("capacity_hint INT32_MIN", 0, F_HINT, 0, INT32_MIN), M1("dim 1", 0, F_GDIM, 0, 1.0),    \
        M1("dim 4", 0, F_GDIM, 0, 4.0), M1("dim -1", 0, F_GDIM, 0, -1.0),                          \
        M1("dim INT32_MAX", 0, F_GDIM, 0, INT32_MAX)
// The grid's create also takes periods (periodic boxes): finite and >= 0.
static const MutSet nonfinite_grid_create[] = {
    M1("cell_size NaN", G_CELL, F_CELL, 0, D_NAN),   M1("cell_size +inf", G_CELL, F_CELL, 0, D_INF),
    M1("cell_size -inf", G_CELL, F_CELL, 0, -D_INF), M1("period[0] NaN", 0, F_PERIOD, 0, D_NAN),
    M1("period[1] +inf", 0, F_PERIOD, 1, D_INF),     M1("period[0] -inf", 0, F_PERIOD, 0, -D_INF),
};
static const MutSet range_grid_create[] = {
    RG_CREATE,
    M1("period[0] -1", 0, F_PERIOD, 0, -1.0),
    M1("period[1] -tiny", 0, F_PERIOD, 1, -TINY),
};

static const OkSet ok_grid_create[] = {
    {M1("cell_size -0.0", G_CELL, F_CELL, 0, -0.0), OK_TWIN},
    {M1("cell_size 0.5", G_CELL, F_CELL, 0, 0.5), OK_ANY},
    {M1("dim 0", 0, F_GDIM, 0, 0.0), OK_ANY},
    {M1("capacity_hint 100", 0, F_HINT, 0, 100.0), OK_ANY},
    {M1("allocator NULL (malloc)", 0, F_ALLOCATOR, 0, 0), OK_ANY},
    {M1("period[0] -0.0 (not periodic)", 0, F_PERIOD, 0, -0.0), OK_ANY},
    {M1("period[1] 10", 0, F_PERIOD, 1, 10.0), OK_ANY},
};

static const MutSet nulls_grid[] = {M1("grid NULL", 0, F_SELF, 0, 0)};
static const MutSet range_reserve[] = {
    M1("points -1", 0, F_N, 0, -1.0),
    M1("points INT32_MIN", 0, F_N, 0, INT32_MIN),
};
static const OkSet ok_reserve[] = {
    {M1("points 0", 0, F_N, 0, 0.0), OK_ANY},
    {M1("points 1000", 0, F_N, 0, 1000.0), OK_ANY},
};

static const MutSet nulls_build[] = {
    M1("grid NULL", 0, F_SELF, 0, 0),
    M1("points NULL", 0, F_POINTS, 0, 0),
    M1("points.data NULL", G_DATA, F_DATA, 0, 0),
};
static const MutSet nonfinite_build[] = {
    NF_RADIUS,
    M1("data[0] NaN", COORD, F_COORD, 0, D_NAN),
    M1("data[0] +inf", COORD, F_COORD, 0, D_INF),
    M1("data[0] -inf", COORD, F_COORD, 0, -D_INF),
    M1("last coordinate NaN", COORD, F_COORD, IDX_LAST, D_NAN),
    M1("last coordinate +inf", COORD, F_COORD, IDX_LAST, D_INF),
};
static const MutSet range_build[] = {
    RG_RADIUS,
    M1("count -1", G_DATA | LAYOUT, F_COUNT, 0, -1.0),
    M1("count INT32_MIN", G_DATA | LAYOUT, F_COUNT, 0, INT32_MIN),
    M1("points.dim 1", LAYOUT, F_PDIM, 0, 1.0),
    M1("points.dim 4", LAYOUT, F_PDIM, 0, 4.0),
    M1("points.dim -1", LAYOUT, F_PDIM, 0, -1.0),
    M1("points.dim the other of 2/3", LAYOUT, F_PDIM, IDX_REL, 0),
    M1("stride one double short", LAYOUT, F_STRIDE, IDX_REL, -8.0),
    M1("stride not a multiple of 8", LAYOUT, F_STRIDE, IDX_REL, 4.0),
    M1("stride 1", LAYOUT, F_STRIDE, 0, 1.0),
    M1("a cell beyond 2^62 (x 1e300)", EXPLICIT, F_COORD, IDX_P1, 1e300),
    M1("a cell beyond -2^62 (x -1e300)", EXPLICIT, F_COORD, IDX_P1, -1e300),
};
static const OkSet ok_build[] = {
    OK_RADIUS_ZERO,
    {M1("data[0] -0.0", 0, F_COORD, 0, -0.0), OK_TWIN},
    {M1("radius 0", G_RADIUS, F_RADIUS, 0, 0.0), OK_ANY},
    {M2("count 0, data NULL", G_DATA, F_COUNT, 0, 0.0, F_DATA, 0, 0), OK_ANY},
    {M1("points.dim 0", 0, F_PDIM, 0, 0.0), OK_ANY},
    {M1("stride dim doubles", 0, F_STRIDE, IDX_REL, 0.0), OK_ANY},
    {M2("stride dim+1 doubles, NaN in the padding", 0, F_STRIDE, IDX_REL, 8.0, F_COORD, IDX_PAD,
        D_NAN),
     OK_ANY},
};

static const MutSet nulls_info[] = {
    M1("grid NULL", 0, F_SELF, 0, 0),
    M1("info NULL", 0, F_INFO, 0, 0),
};

#define NULLS_PAIRS(self)                                                                          \
    M1(self " NULL", 0, F_SELF, 0, 0), M1("out NULL", G_CAP, F_OUT, 0, 0),                         \
        M1("found NULL", 0, F_FOUND, 0, 0)
static const MutSet nulls_pairs[] = {NULLS_PAIRS("grid")};
static const MutSet nonfinite_radius[] = {NF_RADIUS};
static const MutSet range_pairs[] = {
    RG_RADIUS,
    RG_CAP,
    M1("capacity INT64_MIN", G_CAP, F_CAP, 0, -0x1p63),
};
static const OkSet ok_pairs[] = {
    OK_RADIUS_ZERO,
    {M2("out NULL, capacity 0", G_CAP, F_OUT, 0, 0, F_CAP, 0, 0.0), OK_BASE},
    {M1("capacity 1", G_CAP, F_CAP, 0, 1.0), OK_BASE},
};

#define NULLS_COUNT_PAIRS(self)                                                                    \
    M1(self " NULL", 0, F_SELF, 0, 0), M1("count NULL", 0, F_FOUND, 0, 0)
static const MutSet nulls_count_pairs[] = {NULLS_COUNT_PAIRS("grid")};
static const MutSet range_radius[] = {RG_RADIUS};
static const OkSet ok_radius_only[] = {OK_RADIUS_ZERO};

#define NULLS_VISIT_PAIRS(self)                                                                    \
    M1(self " NULL", 0, F_SELF, 0, 0), M1("visit NULL", 0, F_VISIT, 0, 0)
static const MutSet nulls_visit_pairs[] = {NULLS_VISIT_PAIRS("grid")};
static const OkSet ok_visit_pairs[] = {
    OK_RADIUS_ZERO,
    {M1("user NULL", 0, F_USER, 0, 0), OK_BASE},
};
static const MutSet range_units[] = {
    RG_RADIUS,
    M1("unit_begin -1", G_UNITS, F_UB, 0, -1.0),
    M1("unit_begin INT32_MIN", G_UNITS, F_UB, 0, INT32_MIN),
    M1("unit_end units+1", G_UNITS, F_UE, IDX_REL, 1.0),
    M1("unit_end INT32_MAX", G_UNITS, F_UE, 0, INT32_MAX),
    M2("begin 1 > end 0", G_UNITS, F_UB, 0, 1.0, F_UE, 0, 0.0),
    M2("begin = end = units+1", G_UNITS, F_UB, IDX_REL, 1.0, F_UE, IDX_REL, 1.0),
};
static const OkSet ok_units[] = {
    OK_RADIUS_ZERO,
    {M2("begin = end = 0", G_UNITS, F_UB, 0, 0.0, F_UE, 0, 0.0), OK_ZERO},
    {M2("begin = end = units", G_UNITS, F_UB, IDX_REL, 0.0, F_UE, IDX_REL, 0.0), OK_ZERO},
};

#define NULLS_QUERY_RADIUS(self)                                                                   \
    M1(self " NULL", 0, F_SELF, 0, 0), M1("center NULL", 0, F_CENTER, -1, 0),                      \
        M1("out NULL", G_CAP, F_OUT, 0, 0), M1("found NULL", 0, F_FOUND, 0, 0)
static const MutSet nulls_query_radius[] = {NULLS_QUERY_RADIUS("grid")};
static const MutSet nonfinite_center_radius[] = {NF_POINT(F_CENTER, "center"), NF_RADIUS};
static const MutSet range_radius_cap[] = {RG_RADIUS, RG_CAP};
#define OK_CENTER_ZERO                                                                             \
    {M1("center[0] -0.0", 0, F_CENTER, 0, -0.0), OK_TWIN},                                         \
        {M1("center[1] -0.0", 0, F_CENTER, 1, -0.0), OK_TWIN},                                     \
    {                                                                                              \
        M1("center[2] -0.0", 0, F_CENTER, 2, -0.0), OK_TWIN                                        \
    }
#define FILTER_ZERO                                                                                \
    {M1("filter category 0", 0, F_FILTER_CAT, 0, 0.0), OK_ZERO},                                   \
    {                                                                                              \
        M1("filter mask 0", 0, F_FILTER_MASK, 0, 0.0), OK_ZERO                                     \
    }
#define OK_QUERY_RADIUS                                                                            \
    OK_RADIUS_ZERO, OK_CENTER_ZERO,                                                                \
        {M2("out NULL, capacity 0", G_CAP, F_OUT, 0, 0, F_CAP, 0, 0.0), OK_BASE},                  \
        {M1("capacity 1", G_CAP, F_CAP, 0, 1.0), OK_BASE},                                         \
        {M1("radius 1e308", G_RADIUS, F_RADIUS, 0, 1e308), OK_ALL},                                \
        {M1("center[0] 1e300", 0, F_CENTER, 0, 1e300), OK_ZERO},                                   \
    {                                                                                              \
        M1("center[1] -1e300", 0, F_CENTER, 1, -1e300), OK_ZERO                                    \
    }
static const OkSet ok_query_radius[] = {OK_QUERY_RADIUS, FILTER_ZERO};

#define NULLS_VISIT_RADIUS(self)                                                                   \
    M1(self " NULL", 0, F_SELF, 0, 0), M1("center NULL", 0, F_CENTER, -1, 0),                      \
        M1("visit NULL", 0, F_VISIT, 0, 0)
static const MutSet nulls_visit_radius[] = {NULLS_VISIT_RADIUS("grid")};
#define OK_VISIT_RADIUS                                                                            \
    OK_RADIUS_ZERO, OK_CENTER_ZERO, {M1("radius 1e308", G_RADIUS, F_RADIUS, 0, 1e308), OK_ALL},    \
    {                                                                                              \
        M1("user NULL", 0, F_USER, 0, 0), OK_BASE                                                  \
    }
static const OkSet ok_visit_radius[] = {OK_VISIT_RADIUS, FILTER_ZERO};

#define NULLS_QUERY_BOX(self)                                                                      \
    M1(self " NULL", 0, F_SELF, 0, 0), M1("lo NULL", 0, F_LO, -1, 0),                              \
        M1("hi NULL", 0, F_HI, -1, 0), M1("out NULL", G_CAP, F_OUT, 0, 0),                         \
        M1("found NULL", 0, F_FOUND, 0, 0)
static const MutSet nulls_query_box[] = {NULLS_QUERY_BOX("grid")};
static const MutSet nonfinite_box[] = {
    M1("lo[0] NaN", 0, F_LO, 0, D_NAN), M1("lo[1] NaN", 0, F_LO, 1, D_NAN),
    M1("lo[2] NaN", 0, F_LO, 2, D_NAN), M1("hi[0] NaN", 0, F_HI, 0, D_NAN),
    M1("hi[1] NaN", 0, F_HI, 1, D_NAN), M1("hi[2] NaN", 0, F_HI, 2, D_NAN),
};
static const MutSet range_cap[] = {RG_CAP};
#define OK_BOX_COMMON                                                                              \
    {M1("lo[0] -0.0", 0, F_LO, 0, -0.0), OK_TWIN}, {M1("hi[1] -0.0", 0, F_HI, 1, -0.0), OK_TWIN},  \
        {M1("lo[2] -0.0", 0, F_LO, 2, -0.0), OK_TWIN},                                             \
        {M1("lo[0] -inf (unbounded)", 0, F_LO, 0, -D_INF), OK_ANY},                                \
        {M1("hi[1] +inf (unbounded)", 0, F_HI, 1, D_INF), OK_ANY},                                 \
        {M1("every bound infinite", 0, F_BOX_ALL, 0, 0), OK_ALL},                                  \
        {M1("lo[0] +inf (empty)", 0, F_LO, 0, D_INF), OK_ZERO},                                    \
        {M1("hi[1] -inf (empty)", 0, F_HI, 1, -D_INF), OK_ZERO},                                   \
    {                                                                                              \
        M2("lo[0] 1 > hi[0] 0 (empty)", 0, F_LO, 0, 1.0, F_HI, 0, 0.0), OK_ZERO                    \
    }
#define OK_QUERY_BOX                                                                               \
    OK_BOX_COMMON, {M2("out NULL, capacity 0", G_CAP, F_OUT, 0, 0, F_CAP, 0, 0.0), OK_BASE},       \
    {                                                                                              \
        M1("capacity 1", G_CAP, F_CAP, 0, 1.0), OK_BASE                                            \
    }
static const OkSet ok_query_box[] = {OK_QUERY_BOX, FILTER_ZERO};
#define NULLS_VISIT_BOX(self)                                                                      \
    M1(self " NULL", 0, F_SELF, 0, 0), M1("lo NULL", 0, F_LO, -1, 0),                              \
        M1("hi NULL", 0, F_HI, -1, 0), M1("visit NULL", 0, F_VISIT, 0, 0)
static const MutSet nulls_visit_box[] = {NULLS_VISIT_BOX("grid")};
#define OK_VISIT_BOX                                                                               \
    OK_BOX_COMMON,                                                                                 \
    {                                                                                              \
        M1("user NULL", 0, F_USER, 0, 0), OK_BASE                                                  \
    }
static const OkSet ok_visit_box[] = {OK_VISIT_BOX, FILTER_ZERO};

#define NULLS_KNN(self)                                                                            \
    M1(self " NULL", 0, F_SELF, 0, 0), M1("point NULL", 0, F_CENTER, -1, 0),                       \
        M1("out NULL", G_CAP, F_OUT, 0, 0), M1("found NULL", 0, F_FOUND, 0, 0)
static const MutSet nulls_knn[] = {NULLS_KNN("grid")};
static const MutSet nonfinite_knn[] = {NF_POINT(F_CENTER, "point"),
                                       M1("max_distance NaN", 0, F_MAXD, 0, D_NAN)};
static const MutSet range_knn[] = {
    M1("k -1", G_CAP, F_K, 0, -1.0),
    M1("k INT32_MIN", G_CAP, F_K, 0, INT32_MIN),
    M1("max_distance -1", 0, F_MAXD, 0, -1.0),
    M1("max_distance -inf", 0, F_MAXD, 0, -D_INF),
};
// max_distance's accepted values, for every kNN and its callback form.
#define OK_KNN_LIMIT                                                                               \
    {M1("max_distance 1e300", 0, F_MAXD, 0, 1e300), OK_BASE},                                      \
        {M1("max_distance 0", 0, F_MAXD, 0, 0.0), OK_ANY},                                         \
    {                                                                                              \
        M1("max_distance -0.0", 0, F_MAXD, 0, -0.0), OK_TWIN                                       \
    }
#define NULLS_VISIT_KNN(self)                                                                      \
    M1(self " NULL", 0, F_SELF, 0, 0), M1("point NULL", 0, F_CENTER, -1, 0),                       \
        M1("visit NULL", 0, F_VISIT, 0, 0)
static const MutSet nulls_visit_knn[] = {NULLS_VISIT_KNN("grid")};
#define OK_VISIT_KNN                                                                               \
    OK_CENTER_ZERO, FILTER_ZERO, OK_KNN_LIMIT, {M1("k 0", 0, F_K, 0, 0.0), OK_ZERO},               \
        {M1("k above the count", 0, F_K, 0, KNN_K_ALL), OK_ALL},                                   \
    {                                                                                              \
        M1("user NULL", 0, F_USER, 0, 0), OK_BASE                                                  \
    }
static const OkSet ok_visit_knn[] = {OK_VISIT_KNN};
#define OK_KNN                                                                                     \
    OK_CENTER_ZERO, {M2("k 0, out NULL", G_CAP, F_K, 0, 0.0, F_OUT, 0, 0), OK_ZERO},               \
        {M1("k above the count", G_CAP, F_K, 0, KNN_K_ALL), OK_ALL},                               \
        {M1("point[0] 1e300", 0, F_CENTER, 0, 1e300), OK_BASE},                                    \
    {                                                                                              \
        M1("point[1] -1e300", 0, F_CENTER, 1, -1e300), OK_BASE                                     \
    }
static const OkSet ok_knn[] = {OK_KNN, FILTER_ZERO, OK_KNN_LIMIT};

static const MutSet nulls_cross[] = {
    M1("a NULL", G_B, F_SELF, 0, 0),
    M1("b NULL", G_B, F_B, 0, 0),
    M1("out NULL", G_CAP, F_OUT, 0, 0),
    M1("found NULL", 0, F_FOUND, 0, 0),
};
static const MutSet range_cross[] = {
    RG_RADIUS,
    RG_CAP,
    M1("b of the other dim", G_B, F_B_OTHER_DIM, 0, 0),
};
static const OkSet ok_cross[] = {
    OK_RADIUS_ZERO,
    {M2("out NULL, capacity 0", G_CAP, F_OUT, 0, 0, F_CAP, 0, 0.0), OK_BASE},
    {M1("capacity 1", G_CAP, F_CAP, 0, 1.0), OK_BASE},
    {M1("b is a", G_B, F_B_SELF, 0, 0), OK_ANY},
};
static const MutSet nulls_count_cross[] = {
    M1("a NULL", G_B, F_SELF, 0, 0),
    M1("b NULL", G_B, F_B, 0, 0),
    M1("count NULL", 0, F_FOUND, 0, 0),
};
static const MutSet range_cross_nocap[] = {
    RG_RADIUS,
    M1("b of the other dim", G_B, F_B_OTHER_DIM, 0, 0),
};
static const OkSet ok_count_cross[] = {
    OK_RADIUS_ZERO,
    {M1("b is a", G_B, F_B_SELF, 0, 0), OK_ANY},
};
static const MutSet nulls_visit_cross[] = {
    M1("a NULL", G_B, F_SELF, 0, 0),
    M1("b NULL", G_B, F_B, 0, 0),
    M1("visit NULL", 0, F_VISIT, 0, 0),
};
static const OkSet ok_visit_cross[] = {
    OK_RADIUS_ZERO,
    {M1("user NULL", 0, F_USER, 0, 0), OK_BASE},
    {M1("b is a", G_B, F_B_SELF, 0, 0), OK_ANY},
};

// ---- one call's world, and the runner both tables use ----

// What the calls of both tables share: the first member of the grid's Ctx and the hash's HCtx.
typedef struct World {
    int dim; // the fixture's
    nbtAlloc stats;
    nbAllocator alloc;
    nbGridDesc desc; // the hash's create copies it into an nbHashDesc
    double pos[3], center[3], lo[3], hi[3], radius, max_distance;
    const double *a_pos, *a_center, *a_lo, *a_hi; // the arguments as passed
    int32_t cap32, k, found32;
    int64_t cap64, found64;
    int32_t *a_found32;
    int64_t *a_found64;
    nbFilter filter;
    void *user;
    void *created;                             // what create left in *out (BOGUS before the call)
    bool no_desc, no_outobj, no_out, no_visit; // desc / create's out / out buffer / visit := NULL
} World;

static void *const BOGUS = (void *)(uintptr_t)0x777;
static nbGrid *const BOGUS_GRID = (nbGrid *)(uintptr_t)0x777;

// The out buffer and the callback as passed.
#define OUT(c, buf) ((c)->w.no_out ? NULL : (c)->buf)
#define VISIT(c, fn) ((c)->w.no_visit ? NULL : (fn))

typedef struct Result {
    bool applies;
    nbStatus st;
    int64_t found; // *found / *count, callbacks, the structure's count after a mutation, or
                   // created != NULL
    int64_t cap;
    uint64_t hash; // the results' contents
    int64_t visits;
    // contract checks done inside the call's world
    bool outputs_safe, grid_intact, leak_free;
    char what[160];
} Result;

// What differs between the grid's table and the hash's.
typedef struct Family {
    size_t ctx_size;   // sizeof(Ctx) / sizeof(HCtx), whose first member is the World
    const char *noun;  // "grid" / "hash", for messages
    const char *items; // "point" / "item"
    const Spec *specs;
    int n_specs;
    bool (*init)(World *w, const void *fx); // the valid default arguments
    void (*release)(World *w);              // frees what init and create made
    bool (*apply)(World *w, const Mut *m);  // a mutation of the family's own fields
    void (*garbage)(World *w);              // garbage in the family's own outputs
    nbStatus (*invoke)(int fn, World *w);
    // the out buffer's entry t mixed into h (which buffer: by outs)
    uint64_t (*out_key)(const World *w, unsigned outs, int64_t t, uint64_t h);
    // after the call: what a mutation left, the family's own outputs, whether the fixture is
    // intact
    void (*finish)(Result *r, const Spec *sp, World *w, const void *fx);
    nbStatus (*create)(const nbGridDesc *d, void **out); // d, out: NULL passed as NULL
    void (*destroy)(void *obj);
} Family;

// One fixture of one family.
typedef struct Table {
    const Family *fam;
    const void *fx;
    const char *name;
    int32_t count;      // the fixture's points / items
    bool explicit_cell; // EXPLICIT rows run
    bool has_live;      // handle-taking calls can succeed
} Table;

typedef struct Tally {
    int rows, failed;
} Tally;

enum { EXPECT_OK = -1 };

// The runner (test_contract.c).
extern int64_t g_visits;
extern uint64_t g_visit_hash;
void world_init(World *w, int dim, double cell, int32_t cap32, int64_t cap64);
int32_t i32(double v);
int apply_common(World *w, const Mut *m);
void note(Result *r, const char *msg);
bool release(const Family *fam, World *w);
World *fresh_world(const Family *fam, const void *fx);
int run_specs(const Table *tb);
int half_allocator(const Family *fam, double cell);

// One test a fixture.
#define TABLE_TEST(name, run, fx)                                                                  \
    int name(void)                                                                                 \
    {                                                                                              \
        return run(&fx);                                                                           \
    }

// ---- the runner the stored-item structures' cases use (tile grid, quadtree) ----
//
// Each case is one call on a fresh fixture with a status it must return. The runner fills every
// output with garbage first; after a success the fixture validates and (unless the call
// changes it) answers exactly as before; after a failure each output the call was given holds
// its safe value (*found / *count 0, a null handle, *tile -1, *out of create NULL), no callback
// ran, and the fixture answers exactly as before.

// A fixture: the structure, a second one (for foreign handles), a live handle, a removed one,
// one of the other structure and a forged one (a slot past every slot in use).
typedef struct ItemFix {
    void *s, *other;
    nbHandle live, stale, foreign, forged;
    int dim;
} ItemFix;

// What differs between the structures.
typedef struct ItemKind {
    const char *noun;
    int (*make)(ItemFix *f, int dim); // 0 on success
    void (*free)(ItemFix *f);
    nbStatus (*validate)(const ItemFix *f);
    uint64_t (*answers)(const ItemFix *f); // what it holds (and the validation's status)
    void (*destroy)(void *created);        // what a create case made
} ItemKind;

enum {
    IO_FOUND = 1 << 0,   // *found (or *moved): 0 after a failure
    IO_FOUND64 = 1 << 1, // *found / *count (int64_t): 0
    IO_HANDLE = 1 << 2,  // insert's *out: the null handle
    IO_TILE = 1 << 3,    // *tile: -1
    IO_CREATE = 1 << 4,  // create's *out: NULL
};
enum { ITEM_GARBAGE_BITS = 0x777 };

// The outputs a call may write, and which of them it was given (IO_* bits in `passed`: a call
// passes &o->found through ITEM_FOUND(o), and so on).
typedef struct ItemOuts {
    int32_t found;
    int64_t found64;
    nbHandle handle;
    int32_t tile;
    void *created;
    unsigned passed;
} ItemOuts;

#define ITEM_FOUND(o) ((o)->passed |= IO_FOUND, &(o)->found)
#define ITEM_FOUND64(o) ((o)->passed |= IO_FOUND64, &(o)->found64)
#define ITEM_HANDLE(o) ((o)->passed |= IO_HANDLE, &(o)->handle)
#define ITEM_TILE(o) ((o)->passed |= IO_TILE, &(o)->tile)

// The callbacks the cases pass count their calls here.
extern int item_visits;
bool item_on_hit(nbHit hit, void *user);
bool item_on_pair(nbHit a, nbHit b, void *user);
bool item_on_neighbor(nbHit hit, double dist2, void *user);
bool item_on_index(int32_t index, void *user);

// One case: `call(fixture, args, outputs)` on a fresh fixture of `dim` must return `want`;
// `mutates`: a success may change the fixture. Prints what is wrong under `label`; 0 when right.
typedef nbStatus ItemCall(const ItemFix *f, void *args, ItemOuts *o);
int item_case(const ItemKind *k, int dim, const char *label, ItemCall *call, void *args,
              nbStatus want, bool mutates);

// The cases, one function each (test_contract_<structure>.c), run by main (test_contract.c).
int test_filter_all_is_plain(void);
int test_half_allocator(void);
int test_hash_clear(void);
int test_hash_half_allocator(void);
int test_hash_null_tolerant(void);
int test_hash_table_2d(void);
int test_hash_table_3d(void);
int test_hash_table_empty(void);
int test_neighbors_contract(void);
int test_null_tolerant(void);
int test_order_contract(void);
int test_periodic_table(void);
int test_quadtree_table(void);
int test_table_2d_dense(void);
int test_table_2d_hashed(void);
int test_table_3d_cell(void);
int test_table_3d_empty(void);
int test_tiles_null_tolerant(void);
int test_tiles_table(void);

#endif
