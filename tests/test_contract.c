// SPDX-License-Identifier: MIT
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
static uint64_t fix_rng;
static double fix_unit(void)
{
    uint64_t z = (fix_rng += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15u + (h << 6) + (h >> 2);
    return h * 0x100000001B3u;
}

static uint64_t bits_of(double d)
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

static const Spec specs[] = {
    {FN_CREATE, "nb_grid_create", O_CREATE, LIST(nulls_create), NOLIST, LIST(nonfinite_grid_create),
     LIST(range_grid_create), LIST(ok_grid_create)},
    {FN_RESERVE, "nb_grid_reserve", 0, LIST(nulls_grid), NOLIST, NOLIST, LIST(range_reserve),
     LIST(ok_reserve)},
    {FN_BUILD, "nb_grid_build", O_MUTATE, LIST(nulls_build), NOLIST, LIST(nonfinite_build),
     LIST(range_build), LIST(ok_build)},
    {FN_INFO, "nb_grid_info", 0, LIST(nulls_info), NOLIST, NOLIST, NOLIST, NOLIST},
    {FN_VALIDATE, "nb_grid_validate", 0, LIST(nulls_grid), NOLIST, NOLIST, NOLIST, NOLIST},
    {FN_PAIRS, "nb_grid_pairs", O_FOUND64 | O_PAIRS, LIST(nulls_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_pairs), LIST(ok_pairs)},
    {FN_COUNT_PAIRS, "nb_grid_count_pairs", O_FOUND64, LIST(nulls_count_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_radius), LIST(ok_radius_only)},
    {FN_VISIT_PAIRS, "nb_grid_visit_pairs", O_VISIT, LIST(nulls_visit_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_radius), LIST(ok_visit_pairs)},
    {FN_VISIT_PAIRS_RANGE, "nb_grid_visit_pairs_range", O_VISIT, LIST(nulls_visit_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_units), LIST(ok_units)},
    {FN_QUERY_RADIUS, "nb_grid_query_radius", O_FOUND32 | O_IDX, LIST(nulls_query_radius), NOLIST,
     LIST(nonfinite_center_radius), LIST(range_radius_cap), LIST(ok_query_radius)},
    {FN_VISIT_RADIUS, "nb_grid_visit_radius", O_VISIT, LIST(nulls_visit_radius), NOLIST,
     LIST(nonfinite_center_radius), LIST(range_radius), LIST(ok_visit_radius)},
    {FN_QUERY_BOX, "nb_grid_query_box", O_FOUND32 | O_IDX, LIST(nulls_query_box), NOLIST,
     LIST(nonfinite_box), LIST(range_cap), LIST(ok_query_box)},
    {FN_VISIT_BOX, "nb_grid_visit_box", O_VISIT, LIST(nulls_visit_box), NOLIST, LIST(nonfinite_box),
     NOLIST, LIST(ok_visit_box)},
    {FN_KNN, "nb_grid_knn", O_FOUND32 | O_NN, LIST(nulls_knn), NOLIST, LIST(nonfinite_knn),
     LIST(range_knn), LIST(ok_knn)},
    {FN_VISIT_KNN, "nb_grid_visit_knn", O_VISIT, LIST(nulls_visit_knn), NOLIST, LIST(nonfinite_knn),
     LIST(range_knn), LIST(ok_visit_knn)},
    {FN_CROSS_PAIRS, "nb_grid_cross_pairs", O_FOUND64 | O_PAIRS, LIST(nulls_cross), NOLIST,
     LIST(nonfinite_radius), LIST(range_cross), LIST(ok_cross)},
    {FN_COUNT_CROSS_PAIRS, "nb_grid_count_cross_pairs", O_FOUND64, LIST(nulls_count_cross), NOLIST,
     LIST(nonfinite_radius), LIST(range_cross_nocap), LIST(ok_count_cross)},
    {FN_VISIT_CROSS_PAIRS, "nb_grid_visit_cross_pairs", O_VISIT, LIST(nulls_visit_cross), NOLIST,
     LIST(nonfinite_radius), LIST(range_cross_nocap), LIST(ok_visit_cross)},
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

static void world_init(World *w, int dim, double cell, int32_t cap32, int64_t cap64)
{
    w->dim = dim;
    w->alloc = nbt_allocator(&w->stats);
    w->desc.cell_size = cell;
    w->desc.dim = dim;
    w->desc.allocator = &w->alloc;
    w->radius = R0;
    w->max_distance = D_INF;
    for (int a = 0; a < 3; a++) {
        w->pos[a] = 0.5;
        w->center[a] = 0.5;
        w->lo[a] = 0.2;
        w->hi[a] = 0.7;
    }
    w->cap32 = cap32;
    w->cap64 = cap64;
    w->k = KNN_K;
    w->filter = NB_FILTER_ALL;
    w->user = w;
    w->a_pos = w->pos;
    w->a_center = w->center;
    w->a_lo = w->lo;
    w->a_hi = w->hi;
    w->a_found32 = &w->found32;
    w->a_found64 = &w->found64;
}

static int64_t g_visits;
static uint64_t g_visit_hash;

static int32_t i32(double v)
{
    return v <= INT32_MIN ? INT32_MIN : v >= INT32_MAX ? INT32_MAX : (int32_t)v;
}

// Applies a mutation of a field both tables have: 1 done, 0 does not apply to this fixture (an
// axis beyond its dim), -1 not a shared field.
static int apply_common(World *w, const Mut *m)
{
    switch (m->f) {
    case F_DESC: w->no_desc = true; return 1;
    case F_OUTOBJ: w->no_outobj = true; return 1;
    case F_ALLOC_FN: w->alloc.alloc = NULL; return 1;
    case F_FREE_FN: w->alloc.free = NULL; return 1;
    case F_ALLOCATOR: w->desc.allocator = NULL; return 1;
    case F_CELL: w->desc.cell_size = m->v; return 1;
    case F_GDIM: w->desc.dim = i32(m->v); return 1;
    case F_HINT: w->desc.capacity_hint = i32(m->v); return 1;
    case F_RADIUS: w->radius = m->v; return 1;
    case F_POS:
    case F_CENTER:
    case F_LO:
    case F_HI: {
        double *arr = m->f == F_POS      ? w->pos
                      : m->f == F_CENTER ? w->center
                      : m->f == F_LO     ? w->lo
                                         : w->hi;
        const double **arg = m->f == F_POS      ? &w->a_pos
                             : m->f == F_CENTER ? &w->a_center
                             : m->f == F_LO     ? &w->a_lo
                                                : &w->a_hi;
        if (m->idx < 0) { // the pointer itself
            *arg = NULL;
            return 1;
        }
        if (m->idx >= w->dim) return 0;
        arr[m->idx] = m->v;
        return 1;
    }
    case F_BOX_ALL:
        for (int a = 0; a < 3; a++) {
            w->lo[a] = -D_INF;
            w->hi[a] = D_INF;
        }
        return 1;
    case F_OUT: w->no_out = true; return 1;
    case F_CAP:
        w->cap32 = i32(m->v);
        w->cap64 = (int64_t)m->v;
        return 1;
    case F_FOUND:
        w->a_found32 = NULL;
        w->a_found64 = NULL;
        return 1;
    case F_K: w->k = i32(m->v); return 1;
    case F_MAXD: w->max_distance = m->v; return 1;
    case F_VISIT: w->no_visit = true; return 1;
    case F_USER: w->user = NULL; return 1;
    case F_FILTER_CAT: w->filter.category = (uint32_t)m->v; return 1;
    case F_FILTER_MASK: w->filter.mask = (uint32_t)m->v; return 1;
    default: return -1;
    }
}

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

static void note(Result *r, const char *msg)
{
    size_t n = strlen(r->what);
    if (n + 1 < sizeof r->what)
        snprintf(r->what + n, sizeof r->what - n, "%s%s", n ? "; " : "", msg);
}

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

static uint64_t hash_outputs(const Family *fam, unsigned outs, const World *w, int64_t found)
{
    int64_t n = 0;
    if (outs & O_IDX) n = found < w->cap32 ? found : w->cap32;
    if (outs & O_PAIRS) n = found < w->cap64 ? found : w->cap64;
    if (outs & O_NN) n = found < w->k ? found : w->k;
    uint64_t h = 0;
    for (int64_t t = 0; t < n && !w->no_out; t++) h = fam->out_key(w, outs, t, h);
    if (outs & O_VISIT) h = g_visit_hash;
    return h;
}

// Frees a world; whether its allocator then holds nothing.
static bool release(const Family *fam, World *w)
{
    if (w == NULL) return true;
    if (w->created != NULL && w->created != BOGUS) fam->destroy(w->created);
    w->created = NULL;
    fam->release(w);
    const bool leak_free = w->stats.live_bytes == 0 && !w->stats.size_mismatch;
    free(w);
    return leak_free;
}

// A world with the valid default arguments on fixture fx; NULL when that fails.
static World *fresh_world(const Family *fam, const void *fx)
{
    World *w = (World *)malloc(fam->ctx_size);
    if (w != NULL && !fam->init(w, fx)) {
        release(fam, w);
        w = NULL;
    }
    return w;
}

// Runs sp's function with the mutations of sets[0..n) applied, -0.0 turned into +0.0 when flip.
static Result exec(const Table *tb, const Spec *sp, const MutSet *const *sets, int n, bool flip)
{
    const Family *fam = tb->fam;
    Result r;
    memset(&r, 0, sizeof r);
    World *w = fresh_world(fam, tb->fx);
    if (w == NULL) {
        r.applies = true;
        r.st = NB_ERR_INTERNAL;
        note(&r, "test setup failed");
        return r;
    }
    r.applies = true;
    for (int s = 0; s < n; s++)
        for (int t = 0; t < sets[s]->n; t++) {
            Mut m = sets[s]->m[t];
            if (flip && m.v == 0.0 && signbit(m.v)) m.v = 0.0;
            const int done = apply_common(w, &m);
            r.applies &= done < 0 ? fam->apply(w, &m) : done == 1;
        }
    if (!r.applies) {
        release(fam, w);
        return r;
    }
    // garbage in every output
    w->found32 = GARBAGE;
    w->found64 = GARBAGE;
    w->created = BOGUS;
    fam->garbage(w);
    g_visits = 0;
    g_visit_hash = 0;

    r.st = fam->invoke(sp->fn, w);

    r.visits = g_visits;
    r.cap = (sp->outs & O_FOUND64) ? w->cap64 : w->cap32;
    if (sp->outs & O_FOUND32) r.found = w->a_found32 != NULL ? w->found32 : 0;
    if (sp->outs & O_FOUND64) r.found = w->a_found64 != NULL ? w->found64 : 0;
    if (sp->outs & O_VISIT) r.found = g_visits;
    if (sp->outs & O_CREATE) r.found = w->created != NULL && w->created != BOGUS;
    r.hash = hash_outputs(fam, sp->outs, w, r.found);

    // safe outputs: checked by the caller for error statuses
    r.outputs_safe = true;
    if (w->a_found32 != NULL && (sp->outs & O_FOUND32) && w->found32 != 0) {
        r.outputs_safe = false;
        char msg[64];
        snprintf(msg, sizeof msg, "*found = %d, want 0", (int)w->found32);
        note(&r, msg);
    }
    if (w->a_found64 != NULL && (sp->outs & O_FOUND64) && w->found64 != 0) {
        r.outputs_safe = false;
        char msg[64];
        snprintf(msg, sizeof msg, "*found/*count = %lld, want 0", (long long)w->found64);
        note(&r, msg);
    }
    if (!w->no_outobj && (sp->outs & O_CREATE) && w->created != NULL) {
        r.outputs_safe = false;
        note(&r, w->created == BOGUS ? "*out left unset, want NULL" : "*out not NULL");
    }
    if ((sp->outs & O_VISIT) && g_visits != 0) {
        r.outputs_safe = false;
        note(&r, "the callback ran");
    }
    fam->finish(&r, sp, w, tb->fx);
    r.leak_free = release(fam, w);
    if (!r.leak_free) note(&r, "the allocator holds bytes after destroy");
    return r;
}

typedef struct Tally {
    int rows, failed;
} Tally;

static bool success_like(const Result *r)
{
    return r->st == NB_OK || (r->st == NB_ERR_BUFFER_TOO_SMALL && r->found > r->cap);
}

enum { EXPECT_OK = -1 };

// Runs one row; prints what is wrong. expect: a status, or EXPECT_OK with kind.
static void row(Tally *t, const Table *tb, const Spec *sp, const MutSet *a, const MutSet *b,
                int expect, OkKind kind)
{
    const MutSet *sets[2] = {a, b};
    int n = b != NULL ? 2 : a != NULL ? 1 : 0;
    for (int s = 0; s < n; s++)
        if ((sets[s]->flags & EXPLICIT) && !tb->explicit_cell) return;
    Result r = exec(tb, sp, sets, n, false);
    if (!r.applies) return;
    t->rows++;
    char label[160];
    snprintf(label, sizeof label, "%s%s%s", n > 0 ? a->name : "valid arguments", n > 1 ? " + " : "",
             n > 1 ? b->name : "");
    char why[400] = "";
    if (expect != EXPECT_OK) {
        if (r.st != (nbStatus)expect)
            snprintf(why, sizeof why, "returned %s, want %s", nb_status_str(r.st),
                     nb_status_str((nbStatus)expect));
        if (!r.outputs_safe || !r.grid_intact || !r.leak_free)
            snprintf(why + strlen(why), sizeof why - strlen(why), "%s%s", why[0] ? "; " : "",
                     r.what);
    } else {
        bool ok = success_like(&r) && r.grid_intact && r.leak_free;
        if (!success_like(&r))
            snprintf(why, sizeof why, "returned %s, want success", nb_status_str(r.st));
        else if (!r.grid_intact || !r.leak_free)
            snprintf(why, sizeof why, "%s", r.what);
        if (ok && kind == OK_TWIN) {
            Result z = exec(tb, sp, sets, n, true);
            if (z.st != r.st || z.found != r.found || z.hash != r.hash)
                snprintf(why, sizeof why, "differs from +0.0: %s found %lld vs %s found %lld",
                         nb_status_str(r.st), (long long)r.found, nb_status_str(z.st),
                         (long long)z.found);
        }
        if (ok && kind == OK_BASE) {
            Result z = exec(tb, sp, NULL, 0, false);
            if (z.found != r.found)
                snprintf(why, sizeof why, "found %lld, the plain call finds %lld",
                         (long long)r.found, (long long)z.found);
        }
        if (ok && kind == OK_SAME && (r.st != NB_OK || r.found != tb->count))
            snprintf(why, sizeof why, "%s, count %lld, want NB_OK and the %s as it was",
                     nb_status_str(r.st), (long long)r.found, tb->fam->noun);
        if (ok && kind == OK_ZERO && (r.st != NB_OK || r.found != 0 || r.visits != 0))
            snprintf(why, sizeof why, "%s, found %lld, want NB_OK and nothing", nb_status_str(r.st),
                     (long long)r.found);
        if (ok && kind == OK_ALL && r.found != tb->count)
            snprintf(why, sizeof why, "found %lld, want every %s (%d)", (long long)r.found,
                     tb->fam->items, (int)tb->count);
        if (ok && kind == OK_ALL_BUT_ONE && r.found != tb->count - 1)
            snprintf(why, sizeof why, "found %lld, want every other %s (%d)", (long long)r.found,
                     tb->fam->items, (int)tb->count - 1);
    }
    if (why[0] != '\0') {
        t->failed++;
        fprintf(stderr, "  FAIL [%s] %s(%s): %s\n", tb->name, sp->name, label, why);
    }
}

static bool pairable(const MutSet *a, const MutSet *b)
{
    if ((a->flags & b->flags & G_GROUPS) != 0) return false;
    if (((a->flags & COORD) && (b->flags & LAYOUT)) || ((a->flags & LAYOUT) && (b->flags & COORD)))
        return false; // a layout that is out of range says nothing about where coordinates are
    for (int i = 0; i < a->n; i++) // two values for one argument: only the last would count
        for (int j = 0; j < b->n; j++)
            if (a->m[i].f == b->m[j].f && a->m[i].idx == b->m[j].idx) return false;
    return true;
}

// Every row of every function of tb's family on tb's fixture; 0 when all pass.
static int run_specs(const Table *tb)
{
    int failed = 0;
    for (int si = 0; si < tb->fam->n_specs; si++) {
        const Spec *sp = &tb->fam->specs[si];
        // without a live item a handle-taking call can only fail: pointer and handle rows only
        const bool full = tb->has_live || !(sp->outs & O_TAKES_HANDLE);
        Tally t = {0, 0};
        if (full) row(&t, tb, sp, NULL, NULL, EXPECT_OK, OK_ANY);
        // 1. pointers first: alone, with another NULL, with every bad handle and every bad value
        for (int i = 0; i < sp->n_nulls; i++) {
            const MutSet *x = &sp->nulls[i];
            row(&t, tb, sp, x, NULL, NB_ERR_NULL_ARG, OK_ANY);
            for (int j = i + 1; j < sp->n_nulls; j++)
                if (pairable(x, &sp->nulls[j]))
                    row(&t, tb, sp, x, &sp->nulls[j], NB_ERR_NULL_ARG, OK_ANY);
            for (int j = 0; j < sp->n_handles; j++)
                row(&t, tb, sp, x, &sp->handles[j], NB_ERR_NULL_ARG, OK_ANY);
            for (int j = 0; j < sp->n_nonfinite; j++)
                if (pairable(x, &sp->nonfinite[j]))
                    row(&t, tb, sp, x, &sp->nonfinite[j], NB_ERR_NULL_ARG, OK_ANY);
            for (int j = 0; j < sp->n_range; j++)
                if (pairable(x, &sp->range[j]))
                    row(&t, tb, sp, x, &sp->range[j], NB_ERR_NULL_ARG, OK_ANY);
        }
        // 2. then the handle: alone, and before every bad value, whichever is applied first
        for (int i = 0; i < sp->n_handles; i++) {
            const MutSet *x = &sp->handles[i];
            row(&t, tb, sp, x, NULL, NB_ERR_BAD_HANDLE, OK_ANY);
            for (int j = 0; j < sp->n_nonfinite; j++) {
                row(&t, tb, sp, x, &sp->nonfinite[j], NB_ERR_BAD_HANDLE, OK_ANY);
                row(&t, tb, sp, &sp->nonfinite[j], x, NB_ERR_BAD_HANDLE, OK_ANY);
            }
            for (int j = 0; j < sp->n_range; j++) {
                row(&t, tb, sp, x, &sp->range[j], NB_ERR_BAD_HANDLE, OK_ANY);
                row(&t, tb, sp, &sp->range[j], x, NB_ERR_BAD_HANDLE, OK_ANY);
            }
        }
        if (full) {
            // 3. then finiteness: alone and with every out-of-range value, both orders
            for (int i = 0; i < sp->n_nonfinite; i++) {
                row(&t, tb, sp, &sp->nonfinite[i], NULL, NB_ERR_NOT_FINITE, OK_ANY);
                for (int j = 0; j < sp->n_range; j++)
                    if (pairable(&sp->nonfinite[i], &sp->range[j])) {
                        row(&t, tb, sp, &sp->nonfinite[i], &sp->range[j], NB_ERR_NOT_FINITE,
                            OK_ANY);
                        row(&t, tb, sp, &sp->range[j], &sp->nonfinite[i], NB_ERR_NOT_FINITE,
                            OK_ANY);
                    }
            }
            // 4. then ranges
            for (int i = 0; i < sp->n_range; i++)
                row(&t, tb, sp, &sp->range[i], NULL, NB_ERR_OUT_OF_RANGE, OK_ANY);
            // 5. accepted edge values
            for (int i = 0; i < sp->n_ok; i++)
                row(&t, tb, sp, &sp->ok[i].s, NULL, EXPECT_OK, sp->ok[i].kind);
        }
        printf("  [%s] %-30s %4d rows, %d failed\n", tb->name, sp->name, t.rows, t.failed);
        failed += t.failed;
    }
    return failed == 0 ? 0 : 1;
}

// ---- the grid's calls ----

typedef struct Ctx {
    World w;
    const Fixture *fx;
    nbGrid *grid, *b, *b_other;
    nbPoints pts;
    double data[BUILD_N * 4 * 2];
    int32_t ub, ue, n_reserve;
    nbGridInfo info;
    int32_t idx[IDX_CAP];
    nbPair pairs[PAIR_CAP];
    nbNeighbor nn[NN_CAP];
    // the arguments as passed
    nbGrid *a_grid, *a_b;
    const nbPoints *a_pts;
    nbGridInfo *a_info;
} Ctx;

static bool on_index(int32_t index, void *user)
{
    (void)user;
    g_visits++;
    g_visit_hash = mix(g_visit_hash, (uint64_t)(uint32_t)index);
    return true;
}

static bool on_index_nn(int32_t index, double dist2, void *user)
{
    (void)dist2;
    return on_index(index, user);
}

static bool on_pair(int32_t i, int32_t j, void *user)
{
    (void)user;
    g_visits++;
    g_visit_hash = mix(g_visit_hash, ((uint64_t)(uint32_t)i << 32) | (uint32_t)j);
    return true;
}

// The fixture's points: FIX_N of them, or the build rows' BUILD_N, packed.
static void fixture_points(const Fixture *fx, uint64_t seed, int n, double *out)
{
    fix_rng = seed;
    for (int i = 0; i < n; i++)
        for (int a = 0; a < fx->dim; a++) {
            double far = fx->kind == FIXK_CLUSTERS && i % 2 ? 1e4 : 0.0;
            out[i * fx->dim + a] = far + fix_unit();
        }
}

static nbGrid *make_grid(int dim, double cell, const double *xy, int n)
{
    nbGridDesc d = {.cell_size = cell, .dim = dim};
    nbGrid *g = NULL;
    if (nb_grid_create(&d, &g) != NB_OK) return NULL;
    nbPoints p = {xy, n, dim, 0, NULL, 0, NULL, 0};
    if (nb_grid_build(g, &p, R0) != NB_OK) {
        nb_grid_destroy(g);
        return NULL;
    }
    return g;
}

static Answers answers(const nbGrid *g, nbPair *buf)
{
    Answers a;
    memset(&a, 0, sizeof a);
    a.validate = nb_grid_validate(g);
    a.count = nb_grid_count(g);
    a.units = nb_grid_pair_units(g);
    if (nb_grid_pairs(g, R0, buf, PAIR_CAP, &a.pairs) != NB_OK) a.pairs = -1;
    for (int64_t t = 0; t < a.pairs; t++)
        a.pairs_hash = mix(a.pairs_hash, ((uint64_t)(uint32_t)buf[t].i << 32) | (uint32_t)buf[t].j);
    a.info_status = nb_grid_info(g, &a.info);
    a.info.bytes = 0;
    return a;
}

static bool same_answers(const Answers *x, const Answers *y)
{
    return x->validate == y->validate && x->count == y->count && x->units == y->units &&
           x->pairs == y->pairs && x->pairs_hash == y->pairs_hash &&
           x->info_status == y->info_status && x->info.dim == y->info.dim &&
           x->info.points == y->info.points && x->info.cells == y->info.cells &&
           x->info.hashed == y->info.hashed &&
           bits_of(x->info.cell_size) == bits_of(y->info.cell_size);
}

static bool ctx_init(World *w, const void *fxv)
{
    Ctx *c = (Ctx *)w;
    const Fixture *fx = (const Fixture *)fxv;
    memset(c, 0, sizeof *c);
    c->fx = fx;
    const int dim = fx->dim;
    world_init(&c->w, dim, fx->cell, IDX_CAP, PAIR_CAP);
    double fix[FIX_N * 3];
    fixture_points(fx, 1, FIX_N, fix);
    c->grid = make_grid(dim, fx->cell, fix, fx->kind == FIXK_EMPTY ? 0 : FIX_N);
    for (size_t i = 0; i < sizeof c->data / sizeof c->data[0]; i++) c->data[i] = 0.25;
    fixture_points(fx, 2, BUILD_N, c->data);
    c->b = make_grid(dim, 0.0, c->data, BUILD_N);
    c->b_other = make_grid(5 - dim, 0.0, c->data, BUILD_N / 2);
    if (c->grid == NULL || c->b == NULL || c->b_other == NULL) return false;
    c->pts.data = c->data;
    c->pts.count = BUILD_N;
    c->ub = 0;
    c->ue = nb_grid_pair_units(c->grid);
    c->n_reserve = 100;
    c->a_grid = c->grid;
    c->a_b = c->b;
    c->a_pts = &c->pts;
    c->a_info = &c->info;
    return true;
}

static void ctx_free(World *w)
{
    Ctx *c = (Ctx *)w;
    nb_grid_destroy(c->grid);
    nb_grid_destroy(c->b);
    nb_grid_destroy(c->b_other);
    c->grid = c->b = c->b_other = NULL;
}

static int coord_index(int idx, int dim)
{
    switch (idx) {
    case IDX_LAST: return BUILD_N * dim - 1;
    case IDX_PAD: return dim;    // after point 0's coordinates when the stride is dim + 1 doubles
    case IDX_P1: return dim + 1; // point 1, axis 1 (packed)
    default: return idx;
    }
}

// Applies one mutation of the grid's own fields.
static bool grid_apply(World *w, const Mut *m)
{
    Ctx *c = (Ctx *)w;
    const int dim = c->fx->dim;
    const int32_t units = nb_grid_pair_units(c->grid);
    switch (m->f) {
    case F_SELF: c->a_grid = NULL; return true;
    case F_B: c->a_b = NULL; return true;
    case F_B_OTHER_DIM: c->a_b = c->b_other; return true;
    case F_B_SELF: c->a_b = c->grid; return true;
    case F_POINTS: c->a_pts = NULL; return true;
    case F_DATA: c->pts.data = NULL; return true;
    case F_COUNT: c->pts.count = i32(m->v); return true;
    case F_PDIM: c->pts.dim = m->idx == IDX_REL ? 5 - dim : i32(m->v); return true;
    case F_STRIDE:
        c->pts.stride = m->idx == IDX_REL ? (size_t)((double)dim * 8.0 + m->v) : (size_t)m->v;
        return true;
    case F_COORD: c->data[coord_index(m->idx, dim)] = m->v; return true;
    case F_UB: c->ub = m->idx == IDX_REL ? units + i32(m->v) : i32(m->v); return true;
    case F_UE: c->ue = m->idx == IDX_REL ? units + i32(m->v) : i32(m->v); return true;
    case F_N: c->n_reserve = i32(m->v); return true;
    case F_INFO: c->a_info = NULL; return true;
    case F_PERIOD: w->desc.period[m->idx] = m->v; return true;
    default: return false;
    }
}

static nbStatus grid_create(const nbGridDesc *d, void **out)
{
    nbGrid *g = BOGUS_GRID;
    const nbStatus st = nb_grid_create(d, out != NULL ? &g : NULL);
    if (out != NULL) *out = g;
    return st;
}

static void grid_destroy(void *g)
{
    nb_grid_destroy((nbGrid *)g);
}

static nbStatus grid_invoke(int fn, World *w)
{
    Ctx *c = (Ctx *)w;
    switch ((Fn)fn) {
    case FN_CREATE:
        return grid_create(w->no_desc ? NULL : &w->desc, w->no_outobj ? NULL : &w->created);
    case FN_RESERVE: return nb_grid_reserve(c->a_grid, c->n_reserve);
    case FN_BUILD: return nb_grid_build(c->a_grid, c->a_pts, c->w.radius);
    case FN_INFO: return nb_grid_info(c->a_grid, c->a_info);
    case FN_VALIDATE: return nb_grid_validate(c->a_grid);
    case FN_PAIRS:
        return nb_grid_pairs(c->a_grid, c->w.radius, OUT(c, pairs), c->w.cap64, c->w.a_found64);
    case FN_COUNT_PAIRS: return nb_grid_count_pairs(c->a_grid, c->w.radius, c->w.a_found64);
    case FN_VISIT_PAIRS:
        return nb_grid_visit_pairs(c->a_grid, c->w.radius, VISIT(c, on_pair), c->w.user);
    case FN_VISIT_PAIRS_RANGE:
        return nb_grid_visit_pairs_range(c->a_grid, c->w.radius, c->ub, c->ue, VISIT(c, on_pair),
                                         c->w.user);
    case FN_QUERY_RADIUS:
        return nb_grid_query_radius(c->a_grid, c->w.a_center, c->w.radius, c->w.filter, OUT(c, idx),
                                    c->w.cap32, c->w.a_found32);
    case FN_VISIT_RADIUS:
        return nb_grid_visit_radius(c->a_grid, c->w.a_center, c->w.radius, c->w.filter,
                                    VISIT(c, on_index), c->w.user);
    case FN_QUERY_BOX:
        return nb_grid_query_box(c->a_grid, NBT_BOX(c->w.a_lo, c->w.a_hi, 3), c->w.filter,
                                 OUT(c, idx), c->w.cap32, c->w.a_found32);
    case FN_VISIT_BOX:
        return nb_grid_visit_box(c->a_grid, NBT_BOX(c->w.a_lo, c->w.a_hi, 3), c->w.filter,
                                 VISIT(c, on_index), c->w.user);
    case FN_KNN:
        return nb_grid_knn(c->a_grid, c->w.a_center, c->w.filter, c->w.max_distance, OUT(c, nn),
                           c->w.k, c->w.a_found32);
    case FN_VISIT_KNN:
        return nb_grid_visit_knn(c->a_grid, c->w.a_center, c->w.filter, c->w.max_distance, c->w.k,
                                 VISIT(c, on_index_nn), c->w.user);
    case FN_CROSS_PAIRS:
        return nb_grid_cross_pairs(c->a_grid, c->a_b, c->w.radius, OUT(c, pairs), c->w.cap64,
                                   c->w.a_found64);
    case FN_COUNT_CROSS_PAIRS:
        return nb_grid_count_cross_pairs(c->a_grid, c->a_b, c->w.radius, c->w.a_found64);
    case FN_VISIT_CROSS_PAIRS:
        return nb_grid_visit_cross_pairs(c->a_grid, c->a_b, c->w.radius, VISIT(c, on_pair),
                                         c->w.user);
    }
    return NB_ERR_INTERNAL;
}

static uint64_t grid_out_key(const World *w, unsigned outs, int64_t t, uint64_t h)
{
    const Ctx *c = (const Ctx *)w;
    if (outs & O_IDX) return mix(h, (uint32_t)c->idx[t]);
    if (outs & O_PAIRS)
        return mix(h, ((uint64_t)(uint32_t)c->pairs[t].i << 32) | (uint32_t)c->pairs[t].j);
    return mix(mix(h, (uint32_t)c->nn[t].index), bits_of(c->nn[t].dist2));
}

static void grid_garbage(World *w)
{
    (void)w; // the grid has no outputs but the shared ones
}

static void grid_finish(Result *r, const Spec *sp, World *w, const void *fxv)
{
    Ctx *c = (Ctx *)w;
    const Fixture *fx = (const Fixture *)fxv;
    // the fixture grid: unchanged unless this was a build that succeeded
    Answers now = answers(c->grid, c->pairs);
    if (sp->outs & O_MUTATE) {
        r->found = now.count;
        r->hash = mix(mix((uint64_t)now.pairs, now.pairs_hash), (uint64_t)now.validate);
    }
    r->grid_intact = ((sp->outs & O_MUTATE) && r->st == NB_OK) || same_answers(&now, &fx->base);
    if (!r->grid_intact) note(r, "the grid's answers changed or it no longer validates");
}

static const Family grid_family = {
    sizeof(Ctx), "grid",       "point",     specs,        LEN(specs),  ctx_init,    ctx_free,
    grid_apply,  grid_garbage, grid_invoke, grid_out_key, grid_finish, grid_create, grid_destroy,
};

static int run_table(Fixture *fx)
{
    // the fixture's own answers, once
    Ctx *c = (Ctx *)fresh_world(&grid_family, fx);
    NB_CHECK(c != NULL);
    fx->base = answers(c->grid, c->pairs);
    release(&grid_family, &c->w);
    NB_CHECK(fx->base.validate == NB_OK && fx->base.info_status == NB_OK);
    NB_CHECK(fx->base.count == (fx->kind == FIXK_EMPTY ? 0 : FIX_N));
    NB_CHECK(fx->base.info.hashed == (fx->kind == FIXK_CLUSTERS));
    NB_CHECK(fx->kind == FIXK_EMPTY || fx->base.pairs > 0);
    const Table tb = {&grid_family, fx, fx->name, fx->base.count, fx->cell > 0.0, true};
    return run_specs(&tb);
}

static Fixture fx_dense2 = {"2d dense", 2, 0.0, FIXK_UNIFORM, {0}};
static Fixture fx_cell3 = {"3d cell 0.25", 3, 0.25, FIXK_UNIFORM, {0}};
static Fixture fx_hashed2 = {"2d hashed", 2, 0.0, FIXK_CLUSTERS, {0}};
static Fixture fx_empty3 = {"3d empty", 3, 0.0, FIXK_EMPTY, {0}};

// One test a fixture.
#define TABLE_TEST(name, run, fx)                                                                  \
    static int name(void)                                                                          \
    {                                                                                              \
        return run(&fx);                                                                           \
    }
TABLE_TEST(test_table_2d_dense, run_table, fx_dense2)
TABLE_TEST(test_table_3d_cell, run_table, fx_cell3)
TABLE_TEST(test_table_2d_hashed, run_table, fx_hashed2)
TABLE_TEST(test_table_3d_empty, run_table, fx_empty3)

// ---- the functions without statuses ----

static int test_status_strings(void)
{
    int bad = 0;
    for (int v = 0; v < NB_STATUS_COUNT; v++) {
        const char *s = nb_status_str((nbStatus)v), *m = nb_status_message((nbStatus)v);
        NB_CHECK(s != NULL && m != NULL);
        NB_CHECK(strncmp(s, "NB_", 3) == 0 && strcmp(s, "NB_ERR_UNKNOWN") != 0);
        NB_CHECK(m[0] != '\0' && strcmp(m, "unknown status") != 0);
        for (int w = 0; w < v; w++) NB_CHECK(strcmp(s, nb_status_str((nbStatus)w)) != 0);
    }
    NB_CHECK(strcmp(nb_status_str(NB_OK), "NB_OK") == 0);
    NB_CHECK(strcmp(nb_status_str(NB_ERR_NOT_FINITE), "NB_ERR_NOT_FINITE") == 0);
    const int unknown[] = {NB_STATUS_COUNT, NB_STATUS_COUNT + 1, 100, INT_MAX, -1, INT_MIN};
    for (int i = 0; i < LEN(unknown); i++) {
        nbStatus st = (nbStatus)unknown[i];
        const char *s = nb_status_str(st), *m = nb_status_message(st);
        if (s == NULL || m == NULL || strcmp(s, "NB_ERR_UNKNOWN") != 0 ||
            strcmp(m, "unknown status") != 0) {
            fprintf(stderr, "  FAIL nb_status_str/message(%d): %s / %s\n", unknown[i],
                    s ? s : "NULL", m ? m : "NULL");
            bad++;
        }
    }
    return bad;
}

static int test_version(void)
{
    NB_CHECK(nb_version() == (uint32_t)NB_VERSION);
    return 0;
}

static int test_null_tolerant(void)
{
    nb_grid_destroy(NULL);
    NB_CHECK(nb_grid_count(NULL) == 0);
    NB_CHECK(nb_grid_memory_bytes(NULL) == 0);
    NB_CHECK(nb_grid_pair_units(NULL) == 0);
    NB_CHECK_STATUS(nb_grid_validate(NULL), NB_ERR_NULL_ARG);
    return 0;
}

// A half-set allocator must be refused by create: neither hook is called and malloc is not used
// instead.
static int half_allocator(const Family *fam, double cell)
{
    int bad = 0;
    for (int which = 0; which < 2; which++) {
        nbtAlloc stats = {0};
        nbAllocator al = nbt_allocator(&stats);
        if (which == 0)
            al.free = NULL;
        else
            al.alloc = NULL;
        for (int hint = 0; hint <= 100; hint += 100) {
            nbGridDesc d = {.cell_size = cell, .dim = 2, .capacity_hint = hint, .allocator = &al};
            void *obj = BOGUS;
            nbStatus st = fam->create(&d, &obj);
            if (st != NB_ERR_NULL_ARG || obj != NULL || stats.allocs != 0) {
                fprintf(stderr,
                        "  FAIL nb_%s_create(allocator with only %s, hint %d): %s, *out %s, "
                        "%lld hook allocations; want NB_ERR_NULL_ARG, NULL, 0\n",
                        fam->noun, which == 0 ? "alloc" : "free", hint, nb_status_str(st),
                        obj == NULL ? "NULL" : "set", (long long)stats.allocs);
                bad++;
            }
            if (obj != NULL && obj != BOGUS) fam->destroy(obj);
        }
    }
    return bad;
}

static int test_half_allocator(void)
{
    return half_allocator(&grid_family, 0.0);
}

// NB_FILTER_ALL gives exactly the unfiltered answers.
static int test_filter_all_is_plain(void)
{
    Ctx *c = (Ctx *)fresh_world(&grid_family, &fx_dense2);
    NB_CHECK(c != NULL);
    int32_t f1 = -1, f2 = -1;
    int32_t other[IDX_CAP];
    NB_CHECK_OK(
        nb_grid_query_radius(c->grid, c->w.center, R0, NB_FILTER_ALL, c->idx, IDX_CAP, &f1));
    NB_CHECK_OK(nb_grid_query_radius(c->grid, c->w.center, R0, NB_FILTER_ALL, other, IDX_CAP, &f2));
    NB_CHECK(f1 == f2 && memcmp(c->idx, other, (size_t)f1 * sizeof(int32_t)) == 0);
    NB_CHECK_OK(nb_grid_query_box(c->grid, NBT_BOX(c->w.lo, c->w.hi, 3), NB_FILTER_ALL, c->idx,
                                  IDX_CAP, &f1));
    NB_CHECK_OK(nb_grid_query_box(c->grid, NBT_BOX(c->w.lo, c->w.hi, 3), NB_FILTER_ALL, other,
                                  IDX_CAP, &f2));
    NB_CHECK(f1 == f2 && memcmp(c->idx, other, (size_t)f1 * sizeof(int32_t)) == 0);
    nbNeighbor nn2[KNN_K];
    NB_CHECK_OK(
        nb_grid_knn(c->grid, c->w.center, NB_FILTER_ALL, (double)INFINITY, c->nn, KNN_K, &f1));
    NB_CHECK_OK(
        nb_grid_knn(c->grid, c->w.center, NB_FILTER_ALL, (double)INFINITY, nn2, KNN_K, &f2));
    NB_CHECK(f1 == f2);
    for (int32_t t = 0; t < f1; t++) NB_CHECK(c->nn[t].index == nn2[t].index);
    release(&grid_family, &c->w);
    return 0;
}

// ---- the spatial hash (include/nearby/hash.h) ----
//
// The same table, over the hash's functions and three fixture hashes (empty 2D; 2D with a few
// dozen items, some with filter bits, some far from the origin; 3D). Handles add a step between
// pointers and finiteness: every bad handle (null, stale after remove, stale after its slot was
// reused, foreign, forged) alone, and with every non-finite and out-of-range value in both orders:
// NB_ERR_BAD_HANDLE (the handle is checked right after the pointers). After each failing call
// the hash validates and answers exactly as before (count, its pairs and a fixed radius query);
// after a failing nb_hash_get its outputs are untouched, as its header says.

enum {
    HFIX_N2 = 40,     // items in the 2D fixture
    HFIX_N3 = 30,     // items in the 3D fixture
    HIT_CAP = 256,    // hit / kNN buffers
    HPAIR_CAP = 4096, // pair buffer
    H_ITEM_LIMIT = 1 << 28,
};

static const double H_CELL = 0.25; // every fixture hash's cell size

typedef enum HFn {
    HF_CREATE,
    HF_RESERVE,
    HF_INSERT,
    HF_MOVE,
    HF_REMOVE,
    HF_GET,
    HF_SET,
    HF_VISIT_ALL,
    HF_QUERY_RADIUS,
    HF_VISIT_RADIUS,
    HF_QUERY_BOX,
    HF_VISIT_BOX,
    HF_KNN,
    HF_VISIT_KNN,
    HF_QUERY_NEIGHBORS,
    HF_VISIT_NEIGHBORS,
    HF_PAIRS,
    HF_COUNT_PAIRS,
    HF_VISIT_PAIRS,
    HF_CROSS_PAIRS,
    HF_COUNT_CROSS_PAIRS,
    HF_VISIT_CROSS_PAIRS,
    HF_VALIDATE,
    HF_MOVE_MANY,
} HFn;

// The hash's own fields (the shared ones are Field's).
enum {
    H_ITEMS = F_SELF + 1, // reserve's items := v
    H_HANDLE,             // item := the handle of kind idx (HK_*)
    H_MASK_A,             // cross pairs' mask_a := v
    H_MASK_B,             // cross pairs' mask_b := v
    H_UVAL,               // insert / set user value := v
    H_OUTHANDLE,          // insert's out := NULL
    H_GET_POS,            // get's pos := NULL
    H_GET_USER,           // get's user := NULL
    H_GET_FILTER,         // get's filter := NULL
};

// Handle kinds for H_HANDLE.
enum {
    HK_LIVE,        // a live item of this hash (the default)
    HK_LIVE2,       // another live item
    HK_NULL,        // the null handle
    HK_STALE,       // an item inserted and removed
    HK_REUSED,      // an item removed whose slot now holds another item
    HK_FOREIGN,     // a live item of another hash (same slot and generation, other tag)
    HK_FORGED_GEN,  // a live handle with another generation
    HK_FORGED_SLOT, // this hash's tag with a slot never used
    HK_FORGED_TAG,  // a live handle with another owner tag
    HK_ONES,        // every bit set
};

enum { G_HANDLE = 1 << 4, G_MASKS = 1 << 5 }; // (the grid's G_B / G_UNITS bits: another table)

static const MutSet hnulls_hash[] = {M1("hash NULL", 0, F_SELF, 0, 0)};

static const MutSet hbad_handles[] = {
    M1("null handle", G_HANDLE, H_HANDLE, HK_NULL, 0),
    M1("stale handle (removed)", G_HANDLE, H_HANDLE, HK_STALE, 0),
    M1("stale handle (slot reused)", G_HANDLE, H_HANDLE, HK_REUSED, 0),
    M1("foreign handle", G_HANDLE, H_HANDLE, HK_FOREIGN, 0),
    M1("forged generation", G_HANDLE, H_HANDLE, HK_FORGED_GEN, 0),
    M1("forged slot", G_HANDLE, H_HANDLE, HK_FORGED_SLOT, 0),
    M1("forged tag", G_HANDLE, H_HANDLE, HK_FORGED_TAG, 0),
    M1("all bits set", G_HANDLE, H_HANDLE, HK_ONES, 0),
};

static const MutSet hrange_create[] = {
    M1("cell_size 0", G_CELL, F_CELL, 0, 0.0),
    M1("cell_size -0.0", G_CELL, F_CELL, 0, -0.0),
    RG_CREATE,
};
static const OkSet hok_create[] = {
    {M1("cell_size 0.5", G_CELL, F_CELL, 0, 0.5), OK_ANY},
    {M1("cell_size 1e300", G_CELL, F_CELL, 0, 1e300), OK_ANY},
    {M1("dim 0", 0, F_GDIM, 0, 0.0), OK_ANY},
    {M1("capacity_hint 100", 0, F_HINT, 0, 100.0), OK_ANY},
    {M1("allocator NULL (malloc)", 0, F_ALLOCATOR, 0, 0), OK_ANY},
};

static const MutSet hrange_reserve[] = {
    M1("items -1", 0, H_ITEMS, 0, -1.0),
    M1("items INT32_MIN", 0, H_ITEMS, 0, INT32_MIN),
    M1("items 2^28 + 1", 0, H_ITEMS, 0, H_ITEM_LIMIT + 1.0),
    M1("items INT32_MAX", 0, H_ITEMS, 0, INT32_MAX),
};
static const OkSet hok_reserve[] = {
    {M1("items 0", 0, H_ITEMS, 0, 0.0), OK_SAME},
    {M1("items 1000", 0, H_ITEMS, 0, 1000.0), OK_SAME},
};

#define HNF_POS                                                                                    \
    M1("pos[0] NaN", 0, F_POS, 0, D_NAN), M1("pos[1] +inf", 0, F_POS, 1, D_INF),                   \
        M1("pos[2] -inf", 0, F_POS, 2, -D_INF), M1("pos[0] -inf", 0, F_POS, 0, -D_INF),            \
        M1("pos[1] NaN", 0, F_POS, 1, D_NAN), M1("pos[2] NaN", 0, F_POS, 2, D_NAN)
#define HRG_POS                                                                                    \
    M1("pos[0] 1e300 (cell beyond 2^62)", 0, F_POS, 0, 1e300),                                     \
        M1("pos[1] -1e300 (cell beyond -2^62)", 0, F_POS, 1, -1e300),                              \
        M1("pos[2] 1e300 (cell beyond 2^62)", 0, F_POS, 2, 1e300),                                 \
        M1("pos[0] 1.2e18 (cell 4.8e18, beyond 2^62)", 0, F_POS, 0, 1.2e18)
#define HOK_POS                                                                                    \
    {M1("pos[0] -0.0", 0, F_POS, 0, -0.0), OK_TWIN},                                               \
        {M1("pos[1] -0.0", 0, F_POS, 1, -0.0), OK_TWIN},                                           \
        {M1("pos[2] -0.0", 0, F_POS, 2, -0.0), OK_TWIN},                                           \
        {M1("pos[0] 1e12 (far)", 0, F_POS, 0, 1e12), OK_ANY},                                      \
    {                                                                                              \
        M1("pos[1] -1e15 (far, negative)", 0, F_POS, 1, -1e15), OK_ANY                             \
    }

static const MutSet hnulls_insert[] = {
    M1("hash NULL", 0, F_SELF, 0, 0),
    M1("pos NULL", 0, F_POS, -1, 0),
    M1("out NULL", 0, H_OUTHANDLE, 0, 0),
};
static const MutSet hnonfinite_pos[] = {HNF_POS};
static const MutSet hrange_pos[] = {HRG_POS};
static const OkSet hok_insert[] = {
    HOK_POS,
    {M1("user value 0", 0, H_UVAL, 0, 0.0), OK_ANY},
    {M1("user value 2^63", 0, H_UVAL, 0, 0x1p63), OK_ANY},
    {M2("filter 0 / 0", 0, F_FILTER_CAT, 0, 0.0, F_FILTER_MASK, 0, 0.0), OK_ANY},
};

static const MutSet hnulls_move[] = {
    M1("hash NULL", 0, F_SELF, 0, 0),
    M1("pos NULL", 0, F_POS, -1, 0),
};
static const OkSet hok_move[] = {
    HOK_POS,
    {M1("another live item", G_HANDLE, H_HANDLE, HK_LIVE2, 0), OK_ANY},
};

static const OkSet hok_remove[] = {
    {M1("another live item", G_HANDLE, H_HANDLE, HK_LIVE2, 0), OK_ANY},
};

static const OkSet hok_get[] = {
    {M1("pos NULL", 0, H_GET_POS, 0, 0), OK_SAME},
    {M1("user NULL", 0, H_GET_USER, 0, 0), OK_SAME},
    {M1("filter NULL", 0, H_GET_FILTER, 0, 0), OK_SAME},
    {M1("another live item", G_HANDLE, H_HANDLE, HK_LIVE2, 0), OK_SAME},
};

static const OkSet hok_set[] = {
    {M1("user value 0", 0, H_UVAL, 0, 0.0), OK_ANY},
    {M2("filter 0 / 0", 0, F_FILTER_CAT, 0, 0.0, F_FILTER_MASK, 0, 0.0), OK_ANY},
    {M1("another live item", G_HANDLE, H_HANDLE, HK_LIVE2, 0), OK_ANY},
};

static const MutSet hnulls_visit_all[] = {
    M1("hash NULL", 0, F_SELF, 0, 0),
    M1("visit NULL", 0, F_VISIT, 0, 0),
};
static const OkSet hok_visit_all[] = {
    {M1("user NULL", 0, F_USER, 0, 0), OK_ALL},
};

static const MutSet hnulls_query_radius[] = {NULLS_QUERY_RADIUS("hash")};
static const OkSet hok_query_radius[] = {OK_QUERY_RADIUS, FILTER_ZERO};

static const MutSet hnulls_visit_radius[] = {NULLS_VISIT_RADIUS("hash")};
static const OkSet hok_visit_radius[] = {OK_VISIT_RADIUS, FILTER_ZERO};

// The hash takes one nbBox: "box NULL" is the lo pointer's mutation (see hcall's box).
static const MutSet hnulls_query_box[] = {
    M1("hash NULL", 0, F_SELF, 0, 0), M1("box NULL", 0, F_LO, -1, 0),
    M1("out NULL", G_CAP, F_OUT, 0, 0), M1("found NULL", 0, F_FOUND, 0, 0)};
static const OkSet hok_query_box[] = {OK_QUERY_BOX, FILTER_ZERO};
static const MutSet hnulls_visit_box[] = {M1("hash NULL", 0, F_SELF, 0, 0),
                                          M1("box NULL", 0, F_LO, -1, 0),
                                          M1("visit NULL", 0, F_VISIT, 0, 0)};
static const OkSet hok_visit_box[] = {OK_VISIT_BOX, FILTER_ZERO};

static const MutSet hnulls_knn[] = {NULLS_KNN("hash")};
static const OkSet hok_knn[] = {OK_KNN, FILTER_ZERO, OK_KNN_LIMIT};
static const MutSet hnulls_visit_knn[] = {NULLS_VISIT_KNN("hash")};

static const MutSet hnulls_query_neighbors[] = {
    M1("hash NULL", 0, F_SELF, 0, 0),
    M1("out NULL", G_CAP, F_OUT, 0, 0),
    M1("found NULL", 0, F_FOUND, 0, 0),
};
static const OkSet hok_query_neighbors[] = {
    OK_RADIUS_ZERO,
    {M2("out NULL, capacity 0", G_CAP, F_OUT, 0, 0, F_CAP, 0, 0.0), OK_BASE},
    {M1("capacity 1", G_CAP, F_CAP, 0, 1.0), OK_BASE},
    {M1("radius 1e308", G_RADIUS, F_RADIUS, 0, 1e308), OK_ALL_BUT_ONE},
    {M1("another live item", G_HANDLE, H_HANDLE, HK_LIVE2, 0), OK_ANY},
    FILTER_ZERO,
};
static const MutSet hnulls_visit_neighbors[] = {
    M1("hash NULL", 0, F_SELF, 0, 0),
    M1("visit NULL", 0, F_VISIT, 0, 0),
};
static const OkSet hok_visit_neighbors[] = {
    OK_RADIUS_ZERO,
    {M1("radius 1e308", G_RADIUS, F_RADIUS, 0, 1e308), OK_ALL_BUT_ONE},
    {M1("user NULL", 0, F_USER, 0, 0), OK_BASE},
    {M1("another live item", G_HANDLE, H_HANDLE, HK_LIVE2, 0), OK_ANY},
    FILTER_ZERO,
};

static const MutSet hnulls_pairs[] = {NULLS_PAIRS("hash")};
static const MutSet hnulls_count_pairs[] = {NULLS_COUNT_PAIRS("hash")};
static const MutSet hnulls_visit_pairs[] = {NULLS_VISIT_PAIRS("hash")};
#define HOK_MASKS                                                                                  \
    {M1("mask_a 0", G_MASKS, H_MASK_A, 0, 0.0), OK_ZERO},                                          \
        {M1("mask_b 0", G_MASKS, H_MASK_B, 0, 0.0), OK_ZERO},                                      \
    {                                                                                              \
        M2("mask_a = mask_b = all", G_MASKS, H_MASK_A, 0, 4294967295.0, H_MASK_B, 0,               \
           4294967295.0),                                                                          \
            OK_ANY                                                                                 \
    }
static const OkSet hok_cross[] = {
    OK_RADIUS_ZERO,
    {M2("out NULL, capacity 0", G_CAP, F_OUT, 0, 0, F_CAP, 0, 0.0), OK_BASE},
    {M1("capacity 1", G_CAP, F_CAP, 0, 1.0), OK_BASE},
    HOK_MASKS,
};
static const OkSet hok_count_cross[] = {OK_RADIUS_ZERO, HOK_MASKS};
static const OkSet hok_visit_cross[] = {
    OK_RADIUS_ZERO,
    {M1("user NULL", 0, F_USER, 0, 0), OK_BASE},
    HOK_MASKS,
};

static const Spec hspecs[] = {
    {HF_CREATE, "nb_hash_create", O_CREATE, LIST(nulls_create), NOLIST, LIST(nonfinite_create),
     LIST(hrange_create), LIST(hok_create)},
    {HF_RESERVE, "nb_hash_reserve", O_MUTATE, LIST(hnulls_hash), NOLIST, NOLIST,
     LIST(hrange_reserve), LIST(hok_reserve)},
    {HF_INSERT, "nb_hash_insert", O_MUTATE | O_HANDLE_OUT, LIST(hnulls_insert), NOLIST,
     LIST(hnonfinite_pos), LIST(hrange_pos), LIST(hok_insert)},
    {HF_MOVE, "nb_hash_move", O_MUTATE | O_TAKES_HANDLE, LIST(hnulls_move), LIST(hbad_handles),
     LIST(hnonfinite_pos), LIST(hrange_pos), LIST(hok_move)},
    {HF_REMOVE, "nb_hash_remove", O_MUTATE | O_TAKES_HANDLE, LIST(hnulls_hash), LIST(hbad_handles),
     NOLIST, NOLIST, LIST(hok_remove)},
    // A batch of two: a good move of another item (three cells over), then the move under test;
    // a bad second entry must leave the first unmoved too.
    {HF_MOVE_MANY, "nb_hash_move_many", O_MUTATE | O_TAKES_HANDLE, LIST(hnulls_move),
     LIST(hbad_handles), LIST(hnonfinite_pos), LIST(hrange_pos), LIST(hok_move)},
    {HF_GET, "nb_hash_get", O_GET | O_TAKES_HANDLE, LIST(hnulls_hash), LIST(hbad_handles), NOLIST,
     NOLIST, LIST(hok_get)},
    {HF_SET, "nb_hash_set", O_MUTATE | O_TAKES_HANDLE, LIST(hnulls_hash), LIST(hbad_handles),
     NOLIST, NOLIST, LIST(hok_set)},
    {HF_VISIT_ALL, "nb_hash_visit_all", O_VISIT, LIST(hnulls_visit_all), NOLIST, NOLIST, NOLIST,
     LIST(hok_visit_all)},
    {HF_QUERY_RADIUS, "nb_hash_query_radius", O_FOUND32 | O_IDX, LIST(hnulls_query_radius), NOLIST,
     LIST(nonfinite_center_radius), LIST(range_radius_cap), LIST(hok_query_radius)},
    {HF_VISIT_RADIUS, "nb_hash_visit_radius", O_VISIT, LIST(hnulls_visit_radius), NOLIST,
     LIST(nonfinite_center_radius), LIST(range_radius), LIST(hok_visit_radius)},
    {HF_QUERY_BOX, "nb_hash_query_box", O_FOUND32 | O_IDX, LIST(hnulls_query_box), NOLIST,
     LIST(nonfinite_box), LIST(range_cap), LIST(hok_query_box)},
    {HF_VISIT_BOX, "nb_hash_visit_box", O_VISIT, LIST(hnulls_visit_box), NOLIST,
     LIST(nonfinite_box), NOLIST, LIST(hok_visit_box)},
    {HF_KNN, "nb_hash_knn", O_FOUND32 | O_NN, LIST(hnulls_knn), NOLIST, LIST(nonfinite_knn),
     LIST(range_knn), LIST(hok_knn)},
    {HF_VISIT_KNN, "nb_hash_visit_knn", O_VISIT, LIST(hnulls_visit_knn), NOLIST,
     LIST(nonfinite_knn), LIST(range_knn), LIST(ok_visit_knn)},
    {HF_QUERY_NEIGHBORS, "nb_hash_query_neighbors", O_FOUND32 | O_IDX | O_TAKES_HANDLE,
     LIST(hnulls_query_neighbors), LIST(hbad_handles), LIST(nonfinite_radius),
     LIST(range_radius_cap), LIST(hok_query_neighbors)},
    {HF_VISIT_NEIGHBORS, "nb_hash_visit_neighbors", O_VISIT | O_TAKES_HANDLE,
     LIST(hnulls_visit_neighbors), LIST(hbad_handles), LIST(nonfinite_radius), LIST(range_radius),
     LIST(hok_visit_neighbors)},
    {HF_PAIRS, "nb_hash_pairs", O_FOUND64 | O_PAIRS, LIST(hnulls_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_pairs), LIST(ok_pairs)},
    {HF_COUNT_PAIRS, "nb_hash_count_pairs", O_FOUND64, LIST(hnulls_count_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_radius), LIST(ok_radius_only)},
    {HF_VISIT_PAIRS, "nb_hash_visit_pairs", O_VISIT, LIST(hnulls_visit_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_radius), LIST(ok_visit_pairs)},
    {HF_CROSS_PAIRS, "nb_hash_cross_pairs", O_FOUND64 | O_PAIRS, LIST(hnulls_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_pairs), LIST(hok_cross)},
    {HF_COUNT_CROSS_PAIRS, "nb_hash_count_cross_pairs", O_FOUND64, LIST(hnulls_count_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_radius), LIST(hok_count_cross)},
    {HF_VISIT_CROSS_PAIRS, "nb_hash_visit_cross_pairs", O_VISIT, LIST(hnulls_visit_pairs), NOLIST,
     LIST(nonfinite_radius), LIST(range_radius), LIST(hok_visit_cross)},
    {HF_VALIDATE, "nb_hash_validate", 0, LIST(hnulls_hash), NOLIST, NOLIST, NOLIST, NOLIST},
};

// ---- the hash fixtures ----

typedef struct HAnswers {
    nbStatus validate;
    int32_t count;
    int64_t pairs, cross;
    uint64_t pairs_hash;
    int32_t within; // a fixed radius query's hits
    uint64_t within_hash;
} HAnswers;

typedef struct HFixture {
    const char *name;
    int dim;
    int n;
    HAnswers base;
} HFixture;

// A hit without the handle's owner tag, which differs from one hash to the next.
static uint64_t hit_key(nbHit h)
{
    return mix(h.user, h.handle.bits & 0xFFFFFFFFFFFFu);
}

// Item i of a fixture: most in the unit square (3D: a cube of side 0.4 around H_Q), every 7th far
// away (negative or 1e6 off); every third with filter bits (never category 0 nor mask 0, so
// NB_FILTER_ALL matches them all).
static void hfix_item(const HFixture *fx, int i, double *pos, nbFilter *f)
{
    for (int a = 0; a < fx->dim; a++) // 3D: a smaller cube, for pairs at R0
        pos[a] = fx->dim == 3 ? 0.3 + 0.4 * fix_unit() : fix_unit();
    if (i % 7 == 3) pos[0] -= 1000.0;
    if (i % 7 == 5) pos[1] += 1e6;
    *f = NB_FILTER_ALL;
    if (i % 3 == 1) {
        f->category = 1u << (i % 4);
        f->mask = 0x5u;
    }
    if (i % 3 == 2) f->category = 2u;
}

static const double H_Q[3] = {0.5, 0.5, 0.5}; // the fixed query's center

typedef struct HCtx {
    World w;
    const HFixture *fx;
    nbHash *hash, *other;
    nbHandle live, live2, stale, reused, foreign, handle, outhandle;
    int32_t items;
    uint64_t uval;
    uint32_t mask_a, mask_b;
    double gpos[3];
    uint64_t guser;
    nbFilter gfilter;
    nbHit hits[HIT_CAP];
    nbHitPair pairs[HPAIR_CAP];
    nbHitNeighbor nn[HIT_CAP];
    // the arguments as passed
    nbHash *a_hash;
    nbHandle *a_outhandle;
    double *a_gpos;
    uint64_t *a_guser;
    nbFilter *a_gfilter;
} HCtx;

static nbHash *const BOGUS_HASH = (nbHash *)(uintptr_t)0x777;

static bool on_hit(nbHit hit, void *user)
{
    (void)user;
    g_visits++;
    g_visit_hash = mix(g_visit_hash, hit_key(hit));
    return true;
}

static bool on_hit_nn(nbHit hit, double dist2, void *user)
{
    (void)user;
    g_visits++;
    g_visit_hash = mix(mix(g_visit_hash, hit_key(hit)), (uint64_t)(dist2 * 0x1p40));
    return true;
}

// The box the hash's calls take: lo and hi as the world has them, NULL when lo is mutated to
// NULL.
static const nbBox *hbox(const World *w, nbBox *box)
{
    if (w->a_lo == NULL) return NULL;
    for (int a = 0; a < 3; a++) {
        box->min[a] = w->lo[a];
        box->max[a] = w->hi[a];
    }
    return box;
}

static bool on_hpair(nbHit a, nbHit b, void *user)
{
    (void)user;
    g_visits++;
    g_visit_hash = mix(mix(g_visit_hash, hit_key(a)), hit_key(b));
    return true;
}

static HAnswers hanswers(const nbHash *h, nbHitPair *pairs, nbHit *hits)
{
    HAnswers a;
    memset(&a, 0, sizeof a);
    a.validate = nb_hash_validate(h);
    a.count = nb_hash_count(h);
    if (nb_hash_pairs(h, R0, pairs, HPAIR_CAP, &a.pairs) != NB_OK) a.pairs = -1;
    for (int64_t t = 0; t < a.pairs; t++)
        a.pairs_hash = mix(mix(a.pairs_hash, hit_key(pairs[t].a)), hit_key(pairs[t].b));
    if (nb_hash_count_cross_pairs(h, R0, 0x3u, 0xFFFFFFFFu, &a.cross) != NB_OK) a.cross = -1;
    if (nb_hash_query_radius(h, H_Q, R0, NB_FILTER_ALL, hits, HIT_CAP, &a.within) != NB_OK)
        a.within = -1;
    for (int32_t t = 0; t < a.within; t++) a.within_hash = mix(a.within_hash, hit_key(hits[t]));
    return a;
}

static bool same_hanswers(const HAnswers *x, const HAnswers *y)
{
    return x->validate == y->validate && x->count == y->count && x->pairs == y->pairs &&
           x->pairs_hash == y->pairs_hash && x->cross == y->cross && x->within == y->within &&
           x->within_hash == y->within_hash;
}

// A hash of the fixture's dim with its items, through `al`; the handles of items 0 and 1 in
// live / live2 when not NULL.
static nbHash *make_hash(const HFixture *fx, const nbAllocator *al, nbHandle *live, nbHandle *live2)
{
    nbHashDesc d = {H_CELL, fx->dim, 0, al};
    nbHash *h = NULL;
    if (nb_hash_create(&d, &h) != NB_OK) return NULL;
    fix_rng = 11;
    for (int i = 0; i < fx->n; i++) {
        double p[3];
        nbFilter f;
        hfix_item(fx, i, p, &f);
        nbHandle hd;
        if (nb_hash_insert(h, p, 100u + (uint64_t)i, f, &hd) != NB_OK) {
            nb_hash_destroy(h);
            return NULL;
        }
        if (i == 0 && live != NULL) *live = hd;
        if (i == 1 && live2 != NULL) *live2 = hd;
    }
    return h;
}

static bool hctx_init(World *w, const void *fxv)
{
    HCtx *c = (HCtx *)w;
    const HFixture *fx = (const HFixture *)fxv;
    memset(c, 0, sizeof *c);
    c->fx = fx;
    world_init(&c->w, fx->dim, H_CELL, HIT_CAP, HPAIR_CAP);
    c->hash = make_hash(fx, &c->w.alloc, &c->live, &c->live2);
    HFixture big = *fx;
    big.n = fx->n > 2 ? fx->n : 2;
    c->other = make_hash(&big, &c->w.alloc, &c->foreign, NULL);
    if (c->hash == NULL || c->other == NULL) return false;
    // a stale handle: inserted and removed (the empty fixture's hash empties again)
    const double p[3] = {0.125, 0.375, 0.625};
    if (nb_hash_insert(c->hash, p, 7, NB_FILTER_ALL, &c->stale) != NB_OK) return false;
    if (nb_hash_remove(c->hash, c->stale) != NB_OK) return false;
    // a handle whose slot was freed and given to another item (kept in the non-empty fixtures)
    if (nb_hash_insert(c->hash, p, 8, NB_FILTER_ALL, &c->reused) != NB_OK) return false;
    if (nb_hash_remove(c->hash, c->reused) != NB_OK) return false;
    if (fx->n > 0) {
        nbHandle again;
        if (nb_hash_insert(c->hash, p, 9, NB_FILTER_ALL, &again) != NB_OK) return false;
        if ((again.bits & 0xFFFFFFFFu) != (c->reused.bits & 0xFFFFFFFFu)) return false;
    } else {
        c->live = c->live2 = c->stale; // no live item: pointer and handle rows only
    }
    c->handle = c->live;
    c->items = 100;
    c->uval = 12345;
    c->mask_a = 0x3u;
    c->mask_b = 0xFFFFFFFFu;
    c->a_hash = c->hash;
    c->a_outhandle = &c->outhandle;
    c->a_gpos = c->gpos;
    c->a_guser = &c->guser;
    c->a_gfilter = &c->gfilter;
    return true;
}

static void hctx_free(World *w)
{
    HCtx *c = (HCtx *)w;
    nb_hash_destroy(c->hash);
    nb_hash_destroy(c->other);
    c->hash = c->other = NULL;
}

static nbHandle handle_of_kind(const HCtx *c, int kind)
{
    nbHandle h = c->live;
    const uint64_t tag = c->live.bits >> 48;
    const uint64_t other_tag = (tag ^ 0x5A5Au) != 0 ? tag ^ 0x5A5Au : 1u;
    switch (kind) {
    case HK_LIVE: break;
    case HK_LIVE2: h = c->live2; break;
    case HK_NULL: h = NB_HANDLE_NULL; break;
    case HK_STALE: h = c->stale; break;
    case HK_REUSED: h = c->reused; break;
    case HK_FOREIGN: h = c->foreign; break;
    case HK_FORGED_GEN: h.bits ^= (uint64_t)1 << 32; break;
    case HK_FORGED_SLOT: h.bits = (tag << 48) | 0x00FFFFFFu; break;
    case HK_FORGED_TAG: h.bits = (h.bits & 0xFFFFFFFFFFFFu) | (other_tag << 48); break;
    case HK_ONES: h.bits = ~(uint64_t)0; break;
    default: break;
    }
    return h;
}

// Applies one mutation of the hash's own fields.
static bool hash_apply(World *w, const Mut *m)
{
    HCtx *c = (HCtx *)w;
    switch (m->f) {
    case F_SELF: c->a_hash = NULL; return true;
    case H_ITEMS: c->items = i32(m->v); return true;
    case H_HANDLE: c->handle = handle_of_kind(c, m->idx); return true;
    case H_MASK_A: c->mask_a = (uint32_t)m->v; return true;
    case H_MASK_B: c->mask_b = (uint32_t)m->v; return true;
    case H_UVAL: c->uval = (uint64_t)m->v; return true;
    case H_OUTHANDLE: c->a_outhandle = NULL; return true;
    case H_GET_POS: c->a_gpos = NULL; return true;
    case H_GET_USER: c->a_guser = NULL; return true;
    case H_GET_FILTER: c->a_gfilter = NULL; return true;
    default: return false;
    }
}

static nbStatus hash_create(const nbGridDesc *d, void **out)
{
    nbHashDesc hd = {0.0, 0, 0, NULL};
    if (d != NULL) {
        hd.cell_size = d->cell_size;
        hd.dim = d->dim;
        hd.capacity_hint = d->capacity_hint;
        hd.allocator = d->allocator;
    }
    nbHash *h = BOGUS_HASH;
    const nbStatus st = nb_hash_create(d != NULL ? &hd : NULL, out != NULL ? &h : NULL);
    if (out != NULL) *out = h;
    return st;
}

static void hash_destroy(void *h)
{
    nb_hash_destroy((nbHash *)h);
}

static nbStatus hash_invoke(int fn, World *w)
{
    HCtx *c = (HCtx *)w;
    nbBox box;
    switch ((HFn)fn) {
    case HF_CREATE:
        return hash_create(w->no_desc ? NULL : &w->desc, w->no_outobj ? NULL : &w->created);
    case HF_RESERVE: return nb_hash_reserve(c->a_hash, c->items);
    case HF_INSERT:
        return nb_hash_insert(c->a_hash, c->w.a_pos, c->uval, c->w.filter, c->a_outhandle);
    case HF_MOVE: return nb_hash_move(c->a_hash, c->handle, c->w.a_pos);
    case HF_REMOVE: return nb_hash_remove(c->a_hash, c->handle);
    case HF_GET: return nb_hash_get(c->a_hash, c->handle, c->a_gpos, c->a_guser, c->a_gfilter);
    case HF_SET: return nb_hash_set(c->a_hash, c->handle, c->uval, c->w.filter);
    case HF_VISIT_ALL: return nb_hash_visit_all(c->a_hash, VISIT(c, on_hit), c->w.user);
    case HF_QUERY_RADIUS:
        return nb_hash_query_radius(c->a_hash, c->w.a_center, c->w.radius, c->w.filter,
                                    OUT(c, hits), c->w.cap32, c->w.a_found32);
    case HF_VISIT_RADIUS:
        return nb_hash_visit_radius(c->a_hash, c->w.a_center, c->w.radius, c->w.filter,
                                    VISIT(c, on_hit), c->w.user);
    case HF_QUERY_BOX:
        return nb_hash_query_box(c->a_hash, hbox(&c->w, &box), c->w.filter, OUT(c, hits),
                                 c->w.cap32, c->w.a_found32);
    case HF_VISIT_BOX:
        return nb_hash_visit_box(c->a_hash, hbox(&c->w, &box), c->w.filter, VISIT(c, on_hit),
                                 c->w.user);
    case HF_KNN:
        return nb_hash_knn(c->a_hash, c->w.a_center, c->w.filter, c->w.max_distance, OUT(c, nn),
                           c->w.k, c->w.a_found32);
    case HF_VISIT_KNN:
        return nb_hash_visit_knn(c->a_hash, c->w.a_center, c->w.filter, c->w.max_distance, c->w.k,
                                 VISIT(c, on_hit_nn), c->w.user);
    case HF_QUERY_NEIGHBORS:
        return nb_hash_query_neighbors(c->a_hash, c->handle, c->w.radius, c->w.filter, OUT(c, hits),
                                       c->w.cap32, c->w.a_found32);
    case HF_VISIT_NEIGHBORS:
        return nb_hash_visit_neighbors(c->a_hash, c->handle, c->w.radius, c->w.filter,
                                       VISIT(c, on_hit), c->w.user);
    case HF_PAIRS:
        return nb_hash_pairs(c->a_hash, c->w.radius, OUT(c, pairs), c->w.cap64, c->w.a_found64);
    case HF_COUNT_PAIRS: return nb_hash_count_pairs(c->a_hash, c->w.radius, c->w.a_found64);
    case HF_VISIT_PAIRS:
        return nb_hash_visit_pairs(c->a_hash, c->w.radius, VISIT(c, on_hpair), c->w.user);
    case HF_CROSS_PAIRS:
        return nb_hash_cross_pairs(c->a_hash, c->w.radius, c->mask_a, c->mask_b, OUT(c, pairs),
                                   c->w.cap64, c->w.a_found64);
    case HF_COUNT_CROSS_PAIRS:
        return nb_hash_count_cross_pairs(c->a_hash, c->w.radius, c->mask_a, c->mask_b,
                                         c->w.a_found64);
    case HF_VISIT_CROSS_PAIRS:
        return nb_hash_visit_cross_pairs(c->a_hash, c->w.radius, c->mask_a, c->mask_b,
                                         VISIT(c, on_hpair), c->w.user);
    case HF_VALIDATE: return nb_hash_validate(c->a_hash);
    case HF_MOVE_MANY: {
        const nbHandle items[2] = {c->live2, c->handle};
        double pos[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
        const int d = c->fx->dim;
        if (c->hash != NULL) (void)nb_hash_get(c->hash, c->live2, pos, NULL, NULL); // (none: empty)
        pos[0] += 3.0 * H_CELL;
        if (c->w.a_pos != NULL) memcpy(pos + d, c->w.a_pos, (size_t)d * sizeof(double));
        int32_t moved = -1;
        const nbStatus st =
            nb_hash_move_many(c->a_hash, items, c->w.a_pos != NULL ? pos : NULL, 2, &moved);
        if (moved != (st == NB_OK ? 2 : 0)) return NB_ERR_INTERNAL;
        return st;
    }
    }
    return NB_ERR_INTERNAL;
}

static uint64_t hash_out_key(const World *w, unsigned outs, int64_t t, uint64_t h)
{
    const HCtx *c = (const HCtx *)w;
    if (outs & O_IDX) return mix(h, hit_key(c->hits[t]));
    if (outs & O_PAIRS) return mix(mix(h, hit_key(c->pairs[t].a)), hit_key(c->pairs[t].b));
    return mix(mix(h, hit_key(c->nn[t].hit)), bits_of(c->nn[t].dist2));
}

static const double G_POS = -777.25; // garbage in get's outputs before a call
static const uint64_t G_USER = 0xDEADBEEFu;

// Runs sp's function with the mutations of sets[0..n) applied, -0.0 turned into +0.0 when flip.
static void hash_garbage(World *w)
{
    HCtx *c = (HCtx *)w;
    c->outhandle.bits = 0x7777777777777777u;
    for (int a = 0; a < 3; a++) c->gpos[a] = G_POS;
    c->guser = G_USER;
    c->gfilter.category = c->gfilter.mask = 0x77u;
}

static void hash_finish(Result *r, const Spec *sp, World *w, const void *fxv)
{
    HCtx *c = (HCtx *)w;
    const HFixture *fx = (const HFixture *)fxv;
    const HAnswers now = hanswers(c->hash, c->pairs, c->hits);
    if (sp->outs & (O_MUTATE | O_GET)) { // what the hash answers afterwards
        r->found = now.count;
        r->hash = mix(mix(mix(mix((uint64_t)now.pairs, now.pairs_hash), (uint64_t)now.within),
                          now.within_hash),
                      (uint64_t)now.validate);
    }
    if (c->a_outhandle != NULL && (sp->outs & O_HANDLE_OUT) && c->outhandle.bits != 0) {
        r->outputs_safe = false;
        note(r, "*out handle not null");
    }
    if (sp->outs & O_GET) {
        bool touched =
            c->guser != G_USER || c->gfilter.category != 0x77u || c->gfilter.mask != 0x77u;
        for (int a = 0; a < 3; a++) touched |= bits_of(c->gpos[a]) != bits_of(G_POS);
        if (touched) {
            r->outputs_safe = false;
            note(r, "get's outputs were written, want untouched");
        }
    }
    // the fixture hash: unchanged unless a mutation succeeded; valid always
    r->grid_intact = ((sp->outs & O_MUTATE) && r->st == NB_OK) || same_hanswers(&now, &fx->base);
    if (!r->grid_intact) note(r, "the hash's answers changed");
    if (now.validate != NB_OK) {
        r->grid_intact = false;
        note(r, "nb_hash_validate failed");
    }
}

static const Family hash_family = {
    sizeof(HCtx), "hash",       "item",      hspecs,       LEN(hspecs), hctx_init,   hctx_free,
    hash_apply,   hash_garbage, hash_invoke, hash_out_key, hash_finish, hash_create, hash_destroy,
};

static int run_htable(HFixture *fx)
{
    // the fixture's own answers, once
    HCtx *c = (HCtx *)fresh_world(&hash_family, fx);
    NB_CHECK(c != NULL);
    fx->base = hanswers(c->hash, c->pairs, c->hits);
    NB_CHECK(release(&hash_family, &c->w));
    NB_CHECK(fx->base.validate == NB_OK);
    NB_CHECK(fx->base.count == (fx->n > 0 ? fx->n + 1 : 0)); // + the item in the reused slot
    NB_CHECK(fx->n == 0 || (fx->base.pairs > 0 && fx->base.within > 0 && fx->base.cross > 0));

    const Table tb = {&hash_family, fx, fx->name, fx->base.count, true, fx->n > 0};
    return run_specs(&tb);
}

static HFixture hfx_empty = {"hash 2d empty", 2, 0, {0}};
static HFixture hfx_2d = {"hash 2d", 2, HFIX_N2, {0}};
static HFixture hfx_3d = {"hash 3d", 3, HFIX_N3, {0}};

TABLE_TEST(test_hash_table_empty, run_htable, hfx_empty)
TABLE_TEST(test_hash_table_2d, run_htable, hfx_2d)
TABLE_TEST(test_hash_table_3d, run_htable, hfx_3d)

static int test_hash_null_tolerant(void)
{
    nb_hash_destroy(NULL);
    nb_hash_clear(NULL);
    NB_CHECK(nb_hash_count(NULL) == 0);
    NB_CHECK(nb_hash_memory_bytes(NULL) == 0);
    nbHashInfo info;
    NB_CHECK_STATUS(nb_hash_info(NULL, &info), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_hash_validate(NULL), NB_ERR_NULL_ARG);
    // the edge used: the desc's, widened by at most a rounding margin
    nbHashDesc desc = {.cell_size = 1.5};
    nbHash *h = NULL;
    NB_CHECK_OK(nb_hash_create(&desc, &h));
    NB_CHECK_STATUS(nb_hash_info(h, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_OK(nb_hash_info(h, &info));
    NB_CHECK(info.cell_size >= 1.5 && info.cell_size < 1.5 * (1.0 + 0x1p-20));
    NB_CHECK(info.dim == 2 && info.count == 0 && info.cells == 0 && !info.hashed);
    NB_CHECK(info.bytes == nb_hash_memory_bytes(h));
    nb_hash_destroy(h);
    return 0;
}

// nb_hash_clear never fails, keeps the storage, and makes every handle stale, also once new
// items hold the old slots.
static int test_hash_clear(void)
{
    nbtAlloc stats = {0};
    nbAllocator al = nbt_allocator(&stats);
    nbHandle live = NB_HANDLE_NULL, live2 = NB_HANDLE_NULL;
    nbHash *h = make_hash(&hfx_2d, &al, &live, &live2);
    NB_CHECK(h != NULL);
    const size_t bytes = nb_hash_memory_bytes(h);
    NB_CHECK(bytes > 0);
    nb_hash_clear(h);
    NB_CHECK_OK(nb_hash_validate(h));
    NB_CHECK(nb_hash_count(h) == 0 && nb_hash_memory_bytes(h) == bytes);
    const double p[2] = {0.5, 0.5};
    nbHandle fresh;
    NB_CHECK_OK(nb_hash_insert(h, p, 1, NB_FILTER_ALL, &fresh));
    NB_CHECK((fresh.bits & 0xFFFFFFFFu) == (live.bits & 0xFFFFFFFFu)); // the same slot
    const nbHandle dead[2] = {live, live2};
    for (int i = 0; i < 2; i++) {
        int32_t found = GARBAGE;
        NB_CHECK_STATUS(nb_hash_move(h, dead[i], p), NB_ERR_BAD_HANDLE);
        NB_CHECK_STATUS(nb_hash_set(h, dead[i], 5, NB_FILTER_ALL), NB_ERR_BAD_HANDLE);
        NB_CHECK_STATUS(nb_hash_get(h, dead[i], NULL, NULL, NULL), NB_ERR_BAD_HANDLE);
        NB_CHECK_STATUS(nb_hash_query_neighbors(h, dead[i], R0, NB_FILTER_ALL, NULL, 0, &found),
                        NB_ERR_BAD_HANDLE);
        NB_CHECK(found == 0);
        NB_CHECK_STATUS(nb_hash_remove(h, dead[i]), NB_ERR_BAD_HANDLE);
    }
    NB_CHECK_OK(nb_hash_validate(h));
    NB_CHECK(nb_hash_count(h) == 1);
    nb_hash_destroy(h);
    NB_CHECK(stats.live_bytes == 0);
    return 0;
}

static int test_hash_half_allocator(void)
{
    return half_allocator(&hash_family, H_CELL);
}

// ---- the tile grid (include/nearby/tiles.h) ----
// Its own small table runner, in the same spirit: each function's row lists its mutations
// (required pointers NULL, non-finite inputs, out-of-range inputs, bad handles). On a 2D and a
// 3D fixture grid (entities inside and outside the world, a removed one, waypoints) the runner
// calls the function with its valid arguments (success), with each mutation alone (its status),
// and with every pair of mutations of different kinds (the kind checked first wins: pointers,
// then finiteness, then ranges, then handles; for functions that take a handle to act on, the
// handle comes right after the pointers). Outputs start as garbage; after a failure each holds
// its safe value (*found / *count 0, a null handle, *tile -1, *out of create NULL), no callback
// ran, and the fixture validates and answers exactly as before.

enum { TK_NULL, TK_FINITE, TK_RANGE, TK_HANDLE, TK_KINDS };
enum { T_FIXN = 40, T_CAP = 64 };

typedef struct TArgs {
    nbTiles *t;
    const double *pos;
    double radius, maxd;
    int32_t k, cap, tile, rings, count;
    int64_t cap64;
    nbFilter filter, qf; // an entity's (insert, set); a query's
    nbHandle h;
    nbHit *hits;
    nbHitNeighbor *nn;
    nbHitPair *pairs;
    int32_t *found, *tiles_out, *tile_out;
    int64_t *found64;
    nbHandle *hout;
    nbHitFn *fn;
    nbHitPairFn *pfn;
    nbHitNeighborFn *kfn;
    const uint64_t *ids;
    const nbTilesDesc *desc;
    nbTiles **create_out;
    double *get_pos;
    nbTilesInfo *info;
} TArgs;

typedef struct TFix {
    nbTiles *t, *other;
    nbHandle live, stale, foreign, forged;
    int dim;
} TFix;

static int t_visits;
static bool t_on_hit(nbHit hit, void *user)
{
    (void)hit;
    (void)user;
    t_visits++;
    return true;
}
static bool t_on_pair(nbHit a, nbHit b, void *user)
{
    (void)a;
    (void)b;
    (void)user;
    t_visits++;
    return true;
}
static bool t_on_neighbor(nbHit hit, double dist2, void *user)
{
    (void)dist2;
    return t_on_hit(hit, user);
}

static nbTilesDesc t_desc(int dim)
{
    nbTilesDesc d = {0};
    d.origin[0] = -2.0;
    d.origin[1] = 1.0;
    d.size[0] = 8.0;
    d.size[1] = 6.0;
    d.tile_count[0] = 4;
    d.tile_count[1] = 3;
    d.dim = dim;
    d.groups = 3;
    return d;
}

static const nbFilter T_GROUP0 = {1u, 0xFFFFFFFFu};

static int t_fixture(TFix *f, int dim)
{
    memset(f, 0, sizeof *f);
    f->dim = dim;
    const nbTilesDesc d = t_desc(dim);
    NB_CHECK_OK(nb_tiles_create(&d, &f->t));
    NB_CHECK_OK(nb_tiles_create(&d, &f->other));
    fix_rng = 99;
    for (int i = 0; i < T_FIXN; i++) {
        double p[3] = {fix_unit() * 12.0 - 4.0, fix_unit() * 10.0 - 1.0, fix_unit() * 10.0 - 1.0};
        nbHandle h;
        // every fourth entity with a mask of its own, so that the masks are read
        const nbFilter ef = {1u << (i % 3), i % 4 == 3 ? 5u : 0xFFFFFFFFu};
        NB_CHECK_OK(nb_tiles_insert(f->t, p, (uint64_t)i, ef, &h));
        if (i == 0) f->live = h;
        if (i == 1) f->stale = h;
    }
    NB_CHECK_OK(nb_tiles_remove(f->t, f->stale));
    const double q[3] = {0.5, 0.5, 0.5};
    NB_CHECK_OK(nb_tiles_insert(f->other, q, 0, T_GROUP0, &f->foreign));
    f->forged.bits = (f->live.bits & ~(uint64_t)0xFFFFFFFFu) | 5000u;
    const double w[6] = {0, 2, 1, 3, 5, 4};
    NB_CHECK_OK(nb_tiles_add_waypoints(f->t, w, NULL, 2));
    return 0;
}

static void t_fixture_free(TFix *f)
{
    nb_tiles_destroy(f->t);
    nb_tiles_destroy(f->other);
}

static uint64_t t_answers(const nbTiles *t)
{
    static nbHit hits[T_FIXN];
    int32_t found = 0;
    const double c[3] = {1.0, 3.0, 2.0};
    uint64_t h = mix((uint64_t)nb_tiles_validate(t), (uint64_t)nb_tiles_count(t));
    h = mix(h, (uint64_t)nb_tiles_waypoint_count(t));
    h = mix(h, (uint64_t)nb_tiles_query_radius(t, c, 1e3, NB_FILTER_ALL, hits, T_FIXN, &found));
    for (int32_t i = 0; i < found; i++) h = mix(mix(h, hits[i].handle.bits), hits[i].user);
    h = mix(h, (uint64_t)nb_tiles_query_waypoints(t, c, 1e3, hits, T_FIXN, &found));
    for (int32_t i = 0; i < found; i++) h = mix(h, hits[i].user);
    return h;
}

// Valid arguments, pointing into `store`.
typedef struct TStore {
    nbHit hits[T_CAP];
    nbHitNeighbor nn[T_CAP];
    nbHitPair pairs[T_CAP * T_CAP];
    int32_t found, tiles_out[T_CAP], tile_out;
    int64_t found64;
    nbHandle hout;
    nbTilesDesc desc;
    nbTiles *created;
    double get_pos[3];
    nbTilesInfo info;
} TStore;

static const double T_POS[3] = {1.0, 2.0, 3.0};
static const double T_WPTS[6] = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0};
static const uint64_t T_IDS[2] = {7, 8};

static void t_defaults(TArgs *a, const TFix *f, TStore *s)
{
    memset(a, 0, sizeof *a);
    a->t = f->t;
    a->pos = T_POS;
    a->radius = 2.0;
    a->maxd = D_INF;
    a->k = 3;
    a->cap = T_CAP;
    a->cap64 = T_CAP * T_CAP;
    a->tile = 5;
    a->rings = 1;
    a->count = 2;
    a->filter.category = 1u << 2;
    a->filter.mask = 0xFFFFFFFFu;
    a->qf.category = 4u;
    a->qf.mask = 3u;
    a->h = f->live;
    a->hits = s->hits;
    a->nn = s->nn;
    a->pairs = s->pairs;
    a->found = &s->found;
    a->tiles_out = s->tiles_out;
    a->tile_out = &s->tile_out;
    a->found64 = &s->found64;
    a->hout = &s->hout;
    a->fn = t_on_hit;
    a->pfn = t_on_pair;
    a->kfn = t_on_neighbor;
    a->ids = T_IDS;
    a->info = &s->info;
    s->desc = t_desc(f->dim);
    a->desc = &s->desc;
    a->create_out = &s->created;
    a->get_pos = s->get_pos;
}

// ---- mutations ----
typedef struct TMut {
    const char *name;
    int kind;
    void (*fn)(TArgs *a, const TFix *f, TStore *s);
} TMut;

#define TMUT(id, body)                                                                             \
    static void id(TArgs *a, const TFix *f, TStore *s)                                             \
    {                                                                                              \
        (void)a;                                                                                   \
        (void)f;                                                                                   \
        (void)s;                                                                                   \
        body;                                                                                      \
    }
static const double T_XNAN[3] = {D_NAN, 0.0, 0.0}, T_YINF[3] = {0.0, D_INF, 0.0},
                    T_ZNINF[3] = {0.0, 0.0, -D_INF}, T_WNAN[6] = {1, 2, 3, D_NAN, 5, D_NAN};
TMUT(tm_t_null, a->t = NULL)
TMUT(tm_pos_null, a->pos = NULL)
TMUT(tm_found_null, a->found = NULL)
TMUT(tm_found64_null, a->found64 = NULL)
TMUT(tm_hits_null, a->hits = NULL)
TMUT(tm_nn_null, a->nn = NULL)
TMUT(tm_pairs_null, a->pairs = NULL)
TMUT(tm_tiles_out_null, a->tiles_out = NULL)
TMUT(tm_tile_out_null, a->tile_out = NULL)
TMUT(tm_hout_null, a->hout = NULL)
TMUT(tm_fn_null, a->fn = NULL)
TMUT(tm_pfn_null, a->pfn = NULL)
TMUT(tm_kfn_null, a->kfn = NULL)
TMUT(tm_info_null, a->info = NULL)
TMUT(tm_desc_null, a->desc = NULL)
TMUT(tm_create_out_null, a->create_out = NULL)
TMUT(tm_pos_xnan, a->pos = T_XNAN)
TMUT(tm_pos_yinf, a->pos = T_YINF)
TMUT(tm_pos_zninf, a->pos = f->dim == 3 ? T_ZNINF : T_XNAN)
TMUT(tm_wpos_nan, a->pos = T_WNAN)
TMUT(tm_radius_nan, a->radius = D_NAN)
TMUT(tm_radius_inf, a->radius = D_INF)
TMUT(tm_maxd_nan, a->maxd = D_NAN)
TMUT(tm_radius_neg, a->radius = -1.0)
TMUT(tm_radius_tiny_neg, a->radius = -DBL_MIN)
TMUT(tm_maxd_neg, a->maxd = -0.5)
TMUT(tm_cap_neg, a->cap = -1)
TMUT(tm_cap64_neg, a->cap64 = -1)
TMUT(tm_k_neg, a->k = -1)
TMUT(tm_tile_neg, a->tile = -1)
TMUT(tm_tile_past, a->tile = 12)
TMUT(tm_rings_neg, a->rings = -1)
TMUT(tm_cat_zero, a->filter.category = 0u)
TMUT(tm_cat_two, a->filter.category = 3u)
TMUT(tm_cat_past, a->filter.category = 1u << 3)
TMUT(tm_count_neg, a->count = -1)
TMUT(tm_reserve_huge, a->count = INT32_MAX)
TMUT(tm_h_null, a->h = NB_HANDLE_NULL)
TMUT(tm_h_stale, a->h = f->stale)
TMUT(tm_h_foreign, a->h = f->foreign)
TMUT(tm_h_forged, a->h = f->forged)
TMUT(tm_d_origin_nan, s->desc.origin[1] = D_NAN)
TMUT(tm_d_size_inf, s->desc.size[0] = D_INF)
TMUT(tm_d_tile_size_nan, (s->desc.tile_count[0] = 0, s->desc.tile_size[0] = D_NAN))
TMUT(tm_d_overflow, (s->desc.origin[0] = DBL_MAX, s->desc.size[0] = DBL_MAX))
TMUT(tm_d_size_zero, s->desc.size[1] = 0.0)
TMUT(tm_d_size_neg, s->desc.size[1] = -3.0)
TMUT(tm_d_count_neg, s->desc.tile_count[1] = -2)
TMUT(tm_d_tile_size_zero, (s->desc.tile_count[1] = 0, s->desc.tile_size[1] = 0.0))
TMUT(tm_d_groups, s->desc.groups = 33)
TMUT(tm_d_groups_neg, s->desc.groups = -1)
TMUT(tm_d_dim, s->desc.dim = 4)
TMUT(tm_d_axes_same, (s->desc.axes[0] = 1, s->desc.axes[1] = 1))
TMUT(tm_d_axes_past, (s->desc.axes[0] = 0, s->desc.axes[1] = 3))
TMUT(tm_d_hint, s->desc.capacity_hint = -5)
TMUT(tm_d_too_many, s->desc.tile_count[0] = s->desc.tile_count[1] = 1 << 12)
TMUT(tm_d_thin, (s->desc.tile_count[0] = 0, s->desc.tile_size[0] = 1e-300))

#define TM(id, kind)                                                                               \
    {                                                                                              \
#id, kind, id                                                                              \
    }
static const TMut tmuts_create[] = {
    TM(tm_desc_null, TK_NULL),
    TM(tm_create_out_null, TK_NULL),
    TM(tm_d_origin_nan, TK_FINITE),
    TM(tm_d_size_inf, TK_FINITE),
    TM(tm_d_tile_size_nan, TK_FINITE),
    TM(tm_d_overflow, TK_FINITE),
    TM(tm_d_size_zero, TK_RANGE),
    TM(tm_d_size_neg, TK_RANGE),
    TM(tm_d_count_neg, TK_RANGE),
    TM(tm_d_tile_size_zero, TK_RANGE),
    TM(tm_d_groups, TK_RANGE),
    TM(tm_d_groups_neg, TK_RANGE),
    TM(tm_d_dim, TK_RANGE),
    TM(tm_d_axes_same, TK_RANGE),
    TM(tm_d_axes_past, TK_RANGE),
    TM(tm_d_hint, TK_RANGE),
    TM(tm_d_too_many, TK_RANGE),
    TM(tm_d_thin, TK_RANGE),
};
static const TMut tmuts_reserve[] = {TM(tm_t_null, TK_NULL), TM(tm_count_neg, TK_RANGE),
                                     TM(tm_reserve_huge, TK_RANGE)};
static const TMut tmuts_info[] = {TM(tm_t_null, TK_NULL), TM(tm_info_null, TK_NULL)};
static const TMut tmuts_insert[] = {
    TM(tm_t_null, TK_NULL),     TM(tm_pos_null, TK_NULL),   TM(tm_hout_null, TK_NULL),
    TM(tm_pos_xnan, TK_FINITE), TM(tm_pos_yinf, TK_FINITE), TM(tm_pos_zninf, TK_FINITE),
    TM(tm_cat_zero, TK_RANGE),  TM(tm_cat_two, TK_RANGE),   TM(tm_cat_past, TK_RANGE),
};
static const TMut tmuts_move[] = {
    TM(tm_t_null, TK_NULL),     TM(tm_pos_null, TK_NULL),    TM(tm_pos_xnan, TK_FINITE),
    TM(tm_pos_yinf, TK_FINITE), TM(tm_pos_zninf, TK_FINITE), TM(tm_h_null, TK_HANDLE),
    TM(tm_h_stale, TK_HANDLE),  TM(tm_h_foreign, TK_HANDLE), TM(tm_h_forged, TK_HANDLE),
};
static const TMut tmuts_handle[] = {
    TM(tm_t_null, TK_NULL),      TM(tm_h_null, TK_HANDLE),   TM(tm_h_stale, TK_HANDLE),
    TM(tm_h_foreign, TK_HANDLE), TM(tm_h_forged, TK_HANDLE),
};
static const TMut tmuts_set[] = {
    TM(tm_t_null, TK_NULL),      TM(tm_h_null, TK_HANDLE),   TM(tm_h_stale, TK_HANDLE),
    TM(tm_h_foreign, TK_HANDLE), TM(tm_h_forged, TK_HANDLE), TM(tm_cat_zero, TK_RANGE),
    TM(tm_cat_two, TK_RANGE),    TM(tm_cat_past, TK_RANGE),
};
static const TMut tmuts_tile_of[] = {
    TM(tm_t_null, TK_NULL),     TM(tm_pos_null, TK_NULL),   TM(tm_tile_out_null, TK_NULL),
    TM(tm_pos_xnan, TK_FINITE), TM(tm_pos_yinf, TK_FINITE), TM(tm_pos_zninf, TK_FINITE),
};
static const TMut tmuts_neighbors[] = {
    TM(tm_t_null, TK_NULL),    TM(tm_found_null, TK_NULL), TM(tm_tiles_out_null, TK_NULL),
    TM(tm_tile_neg, TK_RANGE), TM(tm_tile_past, TK_RANGE), TM(tm_rings_neg, TK_RANGE),
    TM(tm_cap_neg, TK_RANGE),
};
static const TMut tmuts_neighbors_radius[] = {
    TM(tm_t_null, TK_NULL),       TM(tm_found_null, TK_NULL),   TM(tm_tiles_out_null, TK_NULL),
    TM(tm_radius_nan, TK_FINITE), TM(tm_radius_inf, TK_FINITE), TM(tm_tile_neg, TK_RANGE),
    TM(tm_tile_past, TK_RANGE),   TM(tm_radius_neg, TK_RANGE),  TM(tm_cap_neg, TK_RANGE),
};
static const TMut tmuts_visit_tile[] = {TM(tm_t_null, TK_NULL), TM(tm_fn_null, TK_NULL),
                                        TM(tm_tile_neg, TK_RANGE), TM(tm_tile_past, TK_RANGE)};
static const TMut tmuts_query_radius[] = {
    TM(tm_t_null, TK_NULL),      TM(tm_pos_null, TK_NULL),         TM(tm_found_null, TK_NULL),
    TM(tm_hits_null, TK_NULL),   TM(tm_pos_xnan, TK_FINITE),       TM(tm_pos_yinf, TK_FINITE),
    TM(tm_pos_zninf, TK_FINITE), TM(tm_radius_nan, TK_FINITE),     TM(tm_radius_inf, TK_FINITE),
    TM(tm_radius_neg, TK_RANGE), TM(tm_radius_tiny_neg, TK_RANGE), TM(tm_cap_neg, TK_RANGE),
};
static const TMut tmuts_visit_radius[] = {
    TM(tm_t_null, TK_NULL),           TM(tm_pos_null, TK_NULL),     TM(tm_fn_null, TK_NULL),
    TM(tm_pos_xnan, TK_FINITE),       TM(tm_pos_yinf, TK_FINITE),   TM(tm_pos_zninf, TK_FINITE),
    TM(tm_radius_nan, TK_FINITE),     TM(tm_radius_inf, TK_FINITE), TM(tm_radius_neg, TK_RANGE),
    TM(tm_radius_tiny_neg, TK_RANGE),
};
static const TMut tmuts_query_neighbors[] = {
    TM(tm_t_null, TK_NULL),      TM(tm_found_null, TK_NULL),   TM(tm_hits_null, TK_NULL),
    TM(tm_h_null, TK_HANDLE),    TM(tm_h_stale, TK_HANDLE),    TM(tm_h_foreign, TK_HANDLE),
    TM(tm_h_forged, TK_HANDLE),  TM(tm_radius_nan, TK_FINITE), TM(tm_radius_inf, TK_FINITE),
    TM(tm_radius_neg, TK_RANGE), TM(tm_cap_neg, TK_RANGE),
};
static const TMut tmuts_visit_neighbors[] = {
    TM(tm_t_null, TK_NULL),       TM(tm_fn_null, TK_NULL),      TM(tm_h_null, TK_HANDLE),
    TM(tm_h_stale, TK_HANDLE),    TM(tm_h_foreign, TK_HANDLE),  TM(tm_h_forged, TK_HANDLE),
    TM(tm_radius_nan, TK_FINITE), TM(tm_radius_inf, TK_FINITE), TM(tm_radius_neg, TK_RANGE),
};
static const TMut tmuts_knn[] = {
    TM(tm_t_null, TK_NULL),      TM(tm_pos_null, TK_NULL),   TM(tm_found_null, TK_NULL),
    TM(tm_nn_null, TK_NULL),     TM(tm_pos_xnan, TK_FINITE), TM(tm_pos_yinf, TK_FINITE),
    TM(tm_pos_zninf, TK_FINITE), TM(tm_maxd_nan, TK_FINITE), TM(tm_k_neg, TK_RANGE),
    TM(tm_maxd_neg, TK_RANGE),
};
static const TMut tmuts_visit_knn[] = {
    TM(tm_t_null, TK_NULL),     TM(tm_pos_null, TK_NULL),   TM(tm_kfn_null, TK_NULL),
    TM(tm_pos_xnan, TK_FINITE), TM(tm_pos_yinf, TK_FINITE), TM(tm_pos_zninf, TK_FINITE),
    TM(tm_maxd_nan, TK_FINITE), TM(tm_k_neg, TK_RANGE),     TM(tm_maxd_neg, TK_RANGE),
};
static const TMut tmuts_pairs[] = {
    TM(tm_t_null, TK_NULL),       TM(tm_found64_null, TK_NULL), TM(tm_pairs_null, TK_NULL),
    TM(tm_radius_nan, TK_FINITE), TM(tm_radius_inf, TK_FINITE), TM(tm_radius_neg, TK_RANGE),
    TM(tm_cap64_neg, TK_RANGE),
};
static const TMut tmuts_count_pairs[] = {
    TM(tm_t_null, TK_NULL),       TM(tm_found64_null, TK_NULL), TM(tm_radius_nan, TK_FINITE),
    TM(tm_radius_inf, TK_FINITE), TM(tm_radius_neg, TK_RANGE),
};
static const TMut tmuts_visit_pairs[] = {
    TM(tm_t_null, TK_NULL),       TM(tm_pfn_null, TK_NULL),    TM(tm_radius_nan, TK_FINITE),
    TM(tm_radius_inf, TK_FINITE), TM(tm_radius_neg, TK_RANGE),
};
static const TMut tmuts_add_waypoints[] = {
    TM(tm_t_null, TK_NULL),
    TM(tm_pos_null, TK_NULL),
    TM(tm_wpos_nan, TK_FINITE),
    TM(tm_count_neg, TK_RANGE),
};
static const TMut tmuts_add_waypoint[] = {
    TM(tm_t_null, TK_NULL),     TM(tm_pos_null, TK_NULL),    TM(tm_pos_xnan, TK_FINITE),
    TM(tm_pos_yinf, TK_FINITE), TM(tm_pos_zninf, TK_FINITE),
};

// ---- the calls ----
enum {
    TO_FOUND = 1 << 0,   // *found is 0 after a failure
    TO_FOUND64 = 1 << 1, // *found64 is 0
    TO_HOUT = 1 << 2,    // *hout is null
    TO_TILE = 1 << 3,    // *tile_out is -1
    TO_CREATE = 1 << 4,  // *create_out is NULL
    TO_MUTATES = 1 << 5, // a success changes the fixture (not compared)
};

#define TCALL(id, expr)                                                                            \
    static nbStatus id(TArgs *a)                                                                   \
    {                                                                                              \
        return expr;                                                                               \
    }
TCALL(tc_create, nb_tiles_create(a->desc, a->create_out))
TCALL(tc_reserve, nb_tiles_reserve(a->t, a->count))
TCALL(tc_info, nb_tiles_info(a->t, a->info))
TCALL(tc_insert, nb_tiles_insert(a->t, a->pos, 9, a->filter, a->hout))
TCALL(tc_move, nb_tiles_move(a->t, a->h, a->pos))
TCALL(tc_remove, nb_tiles_remove(a->t, a->h))
TCALL(tc_get, nb_tiles_get(a->t, a->h, a->get_pos, NULL, NULL))
TCALL(tc_set, nb_tiles_set(a->t, a->h, 4, a->filter))
TCALL(tc_tile_of, nb_tiles_tile_of(a->t, a->pos, a->tile_out))
TCALL(tc_neighbors, nb_tiles_neighbors(a->t, a->tile, a->rings, a->tiles_out, a->cap, a->found))
TCALL(tc_neighbors_radius,
      nb_tiles_neighbors_radius(a->t, a->tile, a->radius, a->tiles_out, a->cap, a->found))
TCALL(tc_visit_tile, nb_tiles_visit_tile(a->t, a->tile, a->qf, a->fn, NULL))
TCALL(tc_query_radius,
      nb_tiles_query_radius(a->t, a->pos, a->radius, a->qf, a->hits, a->cap, a->found))
TCALL(tc_visit_radius, nb_tiles_visit_radius(a->t, a->pos, a->radius, a->qf, a->fn, NULL))
TCALL(tc_query_neighbors,
      nb_tiles_query_neighbors(a->t, a->h, a->radius, a->qf, a->hits, a->cap, a->found))
TCALL(tc_visit_neighbors, nb_tiles_visit_neighbors(a->t, a->h, a->radius, a->qf, a->fn, NULL))
TCALL(tc_knn, nb_tiles_knn(a->t, a->pos, a->qf, a->maxd, a->nn, a->k, a->found))
TCALL(tc_visit_knn, nb_tiles_visit_knn(a->t, a->pos, a->qf, a->maxd, a->k, a->kfn, NULL))
TCALL(tc_pairs, nb_tiles_pairs(a->t, a->radius, a->pairs, a->cap64, a->found64))
TCALL(tc_count_pairs, nb_tiles_count_pairs(a->t, a->radius, a->found64))
TCALL(tc_visit_pairs, nb_tiles_visit_pairs(a->t, a->radius, a->pfn, NULL))
TCALL(tc_cross_pairs, nb_tiles_cross_pairs(a->t, a->radius, 1u, 6u, a->pairs, a->cap64, a->found64))
TCALL(tc_count_cross_pairs, nb_tiles_count_cross_pairs(a->t, a->radius, 3u, 3u, a->found64))
TCALL(tc_visit_cross_pairs, nb_tiles_visit_cross_pairs(a->t, a->radius, ~0u, 2u, a->pfn, NULL))
TCALL(tc_add_waypoints,
      nb_tiles_add_waypoints(a->t, a->pos == T_POS ? T_WPTS : a->pos, a->ids, a->count))
TCALL(tc_add_waypoint, nb_tiles_add_waypoint(a->t, a->pos, 77))
TCALL(tc_query_waypoints,
      nb_tiles_query_waypoints(a->t, a->pos, a->radius, a->hits, a->cap, a->found))
TCALL(tc_visit_waypoints, nb_tiles_visit_waypoints(a->t, a->pos, a->radius, a->fn, NULL))
TCALL(tc_knn_waypoints, nb_tiles_knn_waypoints(a->t, a->pos, a->maxd, a->nn, a->k, a->found))
TCALL(tc_visit_knn_waypoints,
      nb_tiles_visit_knn_waypoints(a->t, a->pos, a->maxd, a->k, a->kfn, NULL))

typedef struct TRow {
    const char *name;
    nbStatus (*call)(TArgs *a);
    const TMut *muts;
    int nmuts;
    unsigned outs;
    bool handle_first; // the handle acted on is checked right after the pointers
} TRow;

#define TLIST(x) x, (int)(sizeof x / sizeof x[0])
static const TRow t_rows[] = {
    {"nb_tiles_create", tc_create, TLIST(tmuts_create), TO_CREATE, false},
    {"nb_tiles_reserve", tc_reserve, TLIST(tmuts_reserve), TO_MUTATES, false},
    {"nb_tiles_info", tc_info, TLIST(tmuts_info), 0, false},
    {"nb_tiles_insert", tc_insert, TLIST(tmuts_insert), TO_HOUT | TO_MUTATES, false},
    {"nb_tiles_move", tc_move, TLIST(tmuts_move), TO_MUTATES, true},
    {"nb_tiles_remove", tc_remove, TLIST(tmuts_handle), TO_MUTATES, true},
    {"nb_tiles_get", tc_get, TLIST(tmuts_handle), 0, true},
    {"nb_tiles_set", tc_set, TLIST(tmuts_set), TO_MUTATES, true},
    {"nb_tiles_tile_of", tc_tile_of, TLIST(tmuts_tile_of), TO_TILE, false},
    {"nb_tiles_neighbors", tc_neighbors, TLIST(tmuts_neighbors), TO_FOUND, false},
    {"nb_tiles_neighbors_radius", tc_neighbors_radius, TLIST(tmuts_neighbors_radius), TO_FOUND,
     false},
    {"nb_tiles_visit_tile", tc_visit_tile, TLIST(tmuts_visit_tile), 0, false},
    {"nb_tiles_query_radius", tc_query_radius, TLIST(tmuts_query_radius), TO_FOUND, false},
    {"nb_tiles_visit_radius", tc_visit_radius, TLIST(tmuts_visit_radius), 0, false},
    {"nb_tiles_query_neighbors", tc_query_neighbors, TLIST(tmuts_query_neighbors), TO_FOUND, true},
    {"nb_tiles_visit_neighbors", tc_visit_neighbors, TLIST(tmuts_visit_neighbors), 0, true},
    {"nb_tiles_knn", tc_knn, TLIST(tmuts_knn), TO_FOUND, false},
    {"nb_tiles_visit_knn", tc_visit_knn, TLIST(tmuts_visit_knn), 0, false},
    {"nb_tiles_pairs", tc_pairs, TLIST(tmuts_pairs), TO_FOUND64, false},
    {"nb_tiles_count_pairs", tc_count_pairs, TLIST(tmuts_count_pairs), TO_FOUND64, false},
    {"nb_tiles_visit_pairs", tc_visit_pairs, TLIST(tmuts_visit_pairs), 0, false},
    {"nb_tiles_cross_pairs", tc_cross_pairs, TLIST(tmuts_pairs), TO_FOUND64, false},
    {"nb_tiles_count_cross_pairs", tc_count_cross_pairs, TLIST(tmuts_count_pairs), TO_FOUND64,
     false},
    {"nb_tiles_visit_cross_pairs", tc_visit_cross_pairs, TLIST(tmuts_visit_pairs), 0, false},
    {"nb_tiles_add_waypoints", tc_add_waypoints, TLIST(tmuts_add_waypoints), TO_MUTATES, false},
    {"nb_tiles_add_waypoint", tc_add_waypoint, TLIST(tmuts_add_waypoint), TO_MUTATES, false},
    {"nb_tiles_query_waypoints", tc_query_waypoints, TLIST(tmuts_query_radius), TO_FOUND, false},
    {"nb_tiles_visit_waypoints", tc_visit_waypoints, TLIST(tmuts_visit_radius), 0, false},
    {"nb_tiles_knn_waypoints", tc_knn_waypoints, TLIST(tmuts_knn), TO_FOUND, false},
    {"nb_tiles_visit_knn_waypoints", tc_visit_knn_waypoints, TLIST(tmuts_visit_knn), 0, false},
};

// The rank of a kind in a row's order of checks (lower is checked first).
static int t_rank(const TRow *row, int kind)
{
    if (!row->handle_first) return kind;
    static const int order[TK_KINDS] = {0, 2, 3, 1}; // null, handle, finite, range
    return order[kind];
}

static const nbStatus t_status[TK_KINDS] = {NB_ERR_NULL_ARG, NB_ERR_NOT_FINITE, NB_ERR_OUT_OF_RANGE,
                                            NB_ERR_BAD_HANDLE};

// One call with mutations m1 and m2 (-1: none) on a fresh fixture.
static int t_case(const TRow *row, int dim, int m1, int m2)
{
    TFix f;
    if (t_fixture(&f, dim)) return 1;
    const uint64_t before = t_answers(f.t);
    TArgs a;
    static TStore s;
    t_defaults(&a, &f, &s);
    // Apply the mutation checked later first, so that on a shared field the earlier one stays.
    int first = m1, second = m2;
    if (m1 >= 0 && m2 >= 0 && t_rank(row, row->muts[m1].kind) < t_rank(row, row->muts[m2].kind)) {
        first = m2;
        second = m1;
    }
    if (first >= 0) row->muts[first].fn(&a, &f, &s);
    if (second >= 0) row->muts[second].fn(&a, &f, &s);
    nbStatus want = NB_OK;
    if (m1 >= 0) {
        int kind = row->muts[m1].kind;
        if (m2 >= 0 && t_rank(row, row->muts[m2].kind) < t_rank(row, kind))
            kind = row->muts[m2].kind;
        want = t_status[kind];
    }
    s.found = GARBAGE;
    s.found64 = GARBAGE;
    s.hout.bits = 12345;
    s.tile_out = GARBAGE;
    s.created = (nbTiles *)(uintptr_t)16;
    t_visits = 0;
    const nbStatus st = row->call(&a);
    if (st != want) {
        fprintf(stderr, "%s (%dD) with %s%s%s: %s, expected %s\n", row->name, dim,
                m1 >= 0 ? row->muts[m1].name : "nothing", m2 >= 0 ? " + " : "",
                m2 >= 0 ? row->muts[m2].name : "", nb_status_str(st), nb_status_str(want));
        t_fixture_free(&f);
        return 1;
    }
    if (want == NB_OK) {
        if (row->outs & TO_CREATE) nb_tiles_destroy(s.created);
        NB_CHECK_OK(nb_tiles_validate(f.t));
        if (!(row->outs & TO_MUTATES)) NB_CHECK(t_answers(f.t) == before);
    } else {
        if ((row->outs & TO_FOUND) && a.found != NULL) NB_CHECK(s.found == 0);
        if ((row->outs & TO_FOUND64) && a.found64 != NULL) NB_CHECK(s.found64 == 0);
        if ((row->outs & TO_HOUT) && a.hout != NULL) NB_CHECK(s.hout.bits == 0);
        if ((row->outs & TO_TILE) && a.tile_out != NULL) NB_CHECK(s.tile_out == -1);
        if ((row->outs & TO_CREATE) && a.create_out != NULL) NB_CHECK(s.created == NULL);
        NB_CHECK(t_visits == 0);
        NB_CHECK(t_answers(f.t) == before);
    }
    t_fixture_free(&f);
    return 0;
}

// A NULL buffer with a negative size is a size error (a NULL buffer is only refused when it
// has room to fill), as for the grid, and a negative count reads no points: such a pair has no
// clear winner, so it is skipped.
static bool t_buffer_and_size(const TMut *x, const TMut *y)
{
    for (int swap = 0; swap < 2; swap++) {
        const TMut *b = swap ? y : x, *n = swap ? x : y;
        const bool buffer = b->fn == tm_hits_null || b->fn == tm_tiles_out_null ||
                            b->fn == tm_pairs_null || b->fn == tm_nn_null || b->fn == tm_pos_null ||
                            b->fn == tm_wpos_nan;
        const bool size = n->fn == tm_cap_neg || n->fn == tm_cap64_neg || n->fn == tm_k_neg ||
                          n->fn == tm_count_neg;
        if (buffer && size) return true;
    }
    return false;
}

static int test_tiles_table(void)
{
    int cases = 0;
    for (size_t r = 0; r < sizeof t_rows / sizeof t_rows[0]; r++) {
        const TRow *row = &t_rows[r];
        for (int dim = 2; dim <= 3; dim++) {
            NB_CHECK(t_case(row, dim, -1, -1) == 0);
            for (int i = 0; i < row->nmuts; i++) {
                NB_CHECK(t_case(row, dim, i, -1) == 0);
                for (int j = 0; j < row->nmuts; j++) {
                    const int ki = row->muts[i].kind, kj = row->muts[j].kind;
                    if (j == i || (ki == kj && ki != TK_NULL)) continue;
                    if (t_buffer_and_size(&row->muts[i], &row->muts[j])) continue;
                    NB_CHECK(t_case(row, dim, i, j) == 0);
                    cases++;
                }
            }
        }
    }
    printf("  tiles table: %d cases with two mutations\n", cases);
    return 0;
}

// The functions with nothing to refuse: NULL is harmless, and -0.0 answers as +0.0.
static int test_tiles_null_tolerant(void)
{
    nb_tiles_destroy(NULL);
    nb_tiles_clear(NULL);
    nb_tiles_clear_waypoints(NULL);
    NB_CHECK(nb_tiles_count(NULL) == 0 && nb_tiles_waypoint_count(NULL) == 0);
    NB_CHECK(nb_tiles_memory_bytes(NULL) == 0);
    NB_CHECK_STATUS(nb_tiles_validate(NULL), NB_ERR_NULL_ARG);
    TFix f;
    if (t_fixture(&f, 2)) return 1;
    NB_CHECK(nb_tiles_memory_bytes(f.t) > 0);
    nbHit h0[T_FIXN], h1[T_FIXN];
    int32_t n0 = 0, n1 = 0;
    const double p[2] = {-0.0, 2.0}, q[2] = {0.0, 2.0};
    NB_CHECK_OK(nb_tiles_query_radius(f.t, p, -0.0, NB_FILTER_ALL, h0, T_FIXN, &n0));
    NB_CHECK_OK(nb_tiles_query_radius(f.t, q, 0.0, NB_FILTER_ALL, h1, T_FIXN, &n1));
    NB_CHECK(n0 == n1 && memcmp(h0, h1, (size_t)n0 * sizeof(nbHit)) == 0);
    NB_CHECK_STATUS(nb_tiles_query_radius(f.t, q, 50.0, NB_FILTER_ALL, NULL, 0, &n0),
                    NB_ERR_BUFFER_TOO_SMALL); // NULL out with capacity 0 counts
    NB_CHECK(n0 == T_FIXN - 1);
    nb_tiles_clear_waypoints(f.t);
    NB_CHECK(nb_tiles_waypoint_count(f.t) == 0);
    nb_tiles_clear(f.t);
    NB_CHECK(nb_tiles_count(f.t) == 0);
    NB_CHECK_OK(nb_tiles_validate(f.t));
    NB_CHECK_STATUS(nb_tiles_move(f.t, f.live, q), NB_ERR_BAD_HANDLE);
    t_fixture_free(&f);
    return 0;
}

// ---- the quadtree (nb_quadtree_*): its own runner ----
//
// One fixture tree (rectangles of mixed sizes, filter bits, one in the outside list), a stale
// handle and a foreign one. Each case calls one function with one kind of bad argument (or an
// accepted edge value) and states the status; the runner fills outputs with garbage first and
// checks, after a failure, that they hold their safe values, that no callback ran, and that the
// tree validates and holds exactly what it held (a fingerprint of every rectangle).

typedef struct QtFix {
    nbQuadtree *t;
    nbHandle live, stale, foreign;
} QtFix;

static uint64_t qt_fingerprint(const nbQuadtree *t)
{
    uint64_t h = 1469598103934665603u ^ (uint64_t)nb_quadtree_count(t);
    const double inf = D_INF;
    const nbRect all = {{-inf, -inf}, {inf, inf}};
    nbHit hits[128];
    int32_t found = 0;
    if (nb_quadtree_query_box(t, NBT_RECT_BOX(&all), NB_FILTER_ALL, hits, 128, &found) != NB_OK)
        return 0;
    for (int32_t i = 0; i < found; i++) {
        nbRect r;
        nbFilter f;
        nb_quadtree_get(t, hits[i].handle, &r, NULL, &f);
        uint64_t v[6] = {hits[i].handle.bits, hits[i].user, bits_of(r.min[0]),
                         bits_of(r.max[1]),   f.category,   f.mask};
        uint64_t e = 0;
        for (int k = 0; k < 6; k++) e = mix(e, v[k]);
        h += e; // order-free
    }
    return h;
}

static bool qt_calls;
static bool qt_on_nn(nbHit hit, double dist2, void *user)
{
    (void)hit;
    (void)dist2;
    (void)user;
    return true;
}

static bool qt_on_hit(nbHit hit, void *user)
{
    (void)hit;
    (void)user;
    qt_calls = true;
    return true;
}
static bool qt_on_node(const nbQuadtreeNode *node, void *user)
{
    (void)node;
    (void)user;
    qt_calls = true;
    return true;
}
static bool qt_on_pair(nbHit a, nbHit b, void *user)
{
    (void)a;
    (void)b;
    (void)user;
    qt_calls = true;
    return true;
}

enum { QT_GARBAGE_BITS = 0x777 };

// Calls case `id` on the fixture; writes the outputs it saw (found counts, handles, tree).
typedef struct QtOut {
    int32_t found;
    int64_t found64;
    nbHandle handle;
    nbQuadtree *created;
    bool create_call;
} QtOut;

static nbStatus qt_call(int id, QtFix *fx, QtOut *o)
{
    static nbHit hits[128];
    static nbHitNeighbor nn[16];
    static nbRayHit rays[16];
    static nbHitPair pairs[1024];
    static nbRect rects[10];
    nbtAlloc stats = {0};
    nbAllocator half = {nbt_alloc_fn, NULL, &stats};
    const double inf = D_INF, nan = D_NAN;
    const nbRect ok = {{0.0, 0.0}, {1.0, 1.0}};
    const nbRect nanr = {{0.0, nan}, {1.0, 1.0}};
    const nbRect infr = {{0.0, 0.0}, {inf, 1.0}};
    const nbRect inv = {{2.0, 0.0}, {1.0, 1.0}};
    const nbRect inv_nan = {{2.0, 0.0}, {1.0, nan}};
    const double p[2] = {0.5, 0.5}, pnan[2] = {nan, 0.0}, pinf[2] = {0.0, -inf};
    const double dir[2] = {1.0, 0.25}, dzero[2] = {0.0, -0.0}, dinf[2] = {inf, 0.0};
    nbQuadtreeDesc d = {0};
    nbQuadtree *t = fx->t;
    for (int i = 0; i < 10; i++) rects[i] = (nbRect){{i * 1.0, 0.0}, {i + 0.5, 1.0}};
    o->create_call = id < 20;
    switch (id) {
    // create
    case 0: return nb_quadtree_create(NULL, &o->created);
    case 1: return nb_quadtree_create(&d, NULL);
    case 2: d.allocator = &half; return nb_quadtree_create(&d, &o->created);
    case 3: d.bounds = nanr; return nb_quadtree_create(&d, &o->created);
    case 4: d.bounds = infr; return nb_quadtree_create(&d, &o->created);
    case 5: d.bounds = inv; return nb_quadtree_create(&d, &o->created);
    case 6: d.bounds = (nbRect){{0.0, 0.0}, {0.0, 1.0}}; return nb_quadtree_create(&d, &o->created);
    case 7: d.split_threshold = -1; return nb_quadtree_create(&d, &o->created);
    case 8: d.split_threshold = (1 << 20) + 1; return nb_quadtree_create(&d, &o->created);
    case 9: d.max_depth = NB_QUADTREE_MAX_DEPTH + 1; return nb_quadtree_create(&d, &o->created);
    case 10: d.max_depth = -1; return nb_quadtree_create(&d, &o->created);
    case 11: d.placement = 3; return nb_quadtree_create(&d, &o->created);
    case 12: d.capacity_hint = -1; return nb_quadtree_create(&d, &o->created);
    case 13: d.capacity_hint = (1 << 28) + 1; return nb_quadtree_create(&d, &o->created);
    case 14:
        d.bounds = inv_nan;
        d.max_depth = -1;
        return nb_quadtree_create(&d, &o->created);
    case 15:
        d.bounds = (nbRect){{-DBL_MAX, 0.0}, {DBL_MAX, 1.0}};
        return nb_quadtree_create(&d, &o->created);
    // reserve, info, validate
    case 20: return nb_quadtree_reserve(NULL, 10);
    case 21: return nb_quadtree_reserve(t, -1);
    case 22: return nb_quadtree_reserve(t, (1 << 28) + 1);
    case 23: return nb_quadtree_info(NULL, &(nbQuadtreeInfo){0});
    case 24: return nb_quadtree_info(t, NULL);
    case 25: return nb_quadtree_validate(NULL);
    case 26: return nb_quadtree_visit_nodes(NULL, qt_on_node, NULL);
    case 27: return nb_quadtree_visit_nodes(t, NULL, NULL);
    // insert
    case 30: return nb_quadtree_insert(NULL, &ok, 1, NB_FILTER_ALL, &o->handle);
    case 31: return nb_quadtree_insert(t, NULL, 1, NB_FILTER_ALL, &o->handle);
    case 32: return nb_quadtree_insert(t, &ok, 1, NB_FILTER_ALL, NULL);
    case 33: return nb_quadtree_insert(t, &nanr, 1, NB_FILTER_ALL, &o->handle);
    case 34: return nb_quadtree_insert(t, &infr, 1, NB_FILTER_ALL, &o->handle);
    case 35: return nb_quadtree_insert(t, &inv, 1, NB_FILTER_ALL, &o->handle);
    case 36: return nb_quadtree_insert(t, &inv_nan, 1, NB_FILTER_ALL, &o->handle);
    // build
    case 40: return nb_quadtree_build(NULL, rects, 10, NULL, NULL, NULL);
    case 41: return nb_quadtree_build(t, NULL, 3, NULL, NULL, NULL);
    case 42: return nb_quadtree_build(t, rects, -1, NULL, NULL, NULL);
    case 43: rects[5] = nanr; return nb_quadtree_build(t, rects, 10, NULL, NULL, NULL);
    case 44: rects[7] = inv; return nb_quadtree_build(t, rects, 10, NULL, NULL, NULL);
    case 45:
        rects[2] = inv;
        rects[8] = infr;
        return nb_quadtree_build(t, rects, 10, NULL, NULL, NULL);
    case 46: return nb_quadtree_build(t, rects, (1 << 28) + 1, NULL, NULL, NULL);
    // move, remove, get, set
    case 50: return nb_quadtree_move(NULL, fx->live, &ok);
    case 51: return nb_quadtree_move(t, fx->live, NULL);
    case 52: return nb_quadtree_move(t, fx->stale, &ok);
    case 53: return nb_quadtree_move(t, fx->foreign, &ok);
    case 54: return nb_quadtree_move(t, NB_HANDLE_NULL, &ok);
    case 55: return nb_quadtree_move(t, fx->live, &nanr);
    case 56: return nb_quadtree_move(t, fx->live, &inv);
    case 57: return nb_quadtree_move(t, fx->stale, &nanr);
    case 58: return nb_quadtree_move(t, fx->live, &inv_nan);
    case 60: return nb_quadtree_remove(NULL, fx->live);
    case 61: return nb_quadtree_remove(t, fx->stale);
    case 62: return nb_quadtree_remove(t, fx->foreign);
    case 63: return nb_quadtree_remove(t, (nbHandle){0xFFFFFFFFu});
    case 64: return nb_quadtree_get(NULL, fx->live, NULL, NULL, NULL);
    case 65: return nb_quadtree_get(t, fx->stale, NULL, NULL, NULL);
    case 66: return nb_quadtree_set(NULL, fx->live, 1, NB_FILTER_ALL);
    case 67: return nb_quadtree_set(t, fx->foreign, 1, NB_FILTER_ALL);
    case 68: return nb_quadtree_visit_all(NULL, qt_on_hit, NULL);
    case 69: return nb_quadtree_visit_all(t, NULL, NULL);
    // window, point, radius
    case 70:
        return nb_quadtree_query_box(NULL, NBT_RECT_BOX(&ok), NB_FILTER_ALL, hits, 128, &o->found);
    case 71: return nb_quadtree_query_box(t, NULL, NB_FILTER_ALL, hits, 128, &o->found);
    case 72: return nb_quadtree_query_box(t, NBT_RECT_BOX(&ok), NB_FILTER_ALL, hits, 128, NULL);
    case 73: return nb_quadtree_query_box(t, NBT_RECT_BOX(&ok), NB_FILTER_ALL, NULL, 4, &o->found);
    case 74:
        return nb_quadtree_query_box(t, NBT_RECT_BOX(&nanr), NB_FILTER_ALL, hits, 128, &o->found);
    case 75:
        return nb_quadtree_query_box(t, NBT_RECT_BOX(&inv), NB_FILTER_ALL, hits, 128, &o->found);
    case 76: return nb_quadtree_query_box(t, NBT_RECT_BOX(&ok), NB_FILTER_ALL, hits, -1, &o->found);
    case 77:
        return nb_quadtree_query_box(t, NBT_RECT_BOX(&inv_nan), NB_FILTER_ALL, hits, -1, &o->found);
    case 78: return nb_quadtree_visit_box(t, NBT_RECT_BOX(&ok), NB_FILTER_ALL, NULL, NULL);
    case 79: return nb_quadtree_visit_box(t, NBT_RECT_BOX(&nanr), NB_FILTER_ALL, qt_on_hit, NULL);
    case 80: return nb_quadtree_visit_box(NULL, NBT_RECT_BOX(&ok), NB_FILTER_ALL, qt_on_hit, NULL);
    case 81: return nb_quadtree_query_point(t, NULL, NB_FILTER_ALL, hits, 128, &o->found);
    case 82: return nb_quadtree_query_point(t, pnan, NB_FILTER_ALL, hits, 128, &o->found);
    case 83: return nb_quadtree_query_point(t, pinf, NB_FILTER_ALL, hits, 128, &o->found);
    case 84: return nb_quadtree_query_point(t, p, NB_FILTER_ALL, hits, -1, &o->found);
    case 85: return nb_quadtree_query_radius(t, pnan, 1.0, NB_FILTER_ALL, hits, 128, &o->found);
    case 86: return nb_quadtree_query_radius(t, p, inf, NB_FILTER_ALL, hits, 128, &o->found);
    case 87: return nb_quadtree_query_radius(t, p, -1.0, NB_FILTER_ALL, hits, 128, &o->found);
    case 88: return nb_quadtree_query_radius(t, p, nan, NB_FILTER_ALL, hits, -1, &o->found);
    case 89: return nb_quadtree_query_radius(t, NULL, 1.0, NB_FILTER_ALL, hits, 128, &o->found);
    case 90: return nb_quadtree_visit_radius(t, p, -1.0, NB_FILTER_ALL, qt_on_hit, NULL);
    case 91: return nb_quadtree_visit_radius(t, p, 1.0, NB_FILTER_ALL, NULL, NULL);
    case 92: return nb_quadtree_visit_radius(t, pnan, 1.0, NB_FILTER_ALL, qt_on_hit, NULL);
    case 93: return nb_quadtree_visit_point(t, NULL, NB_FILTER_ALL, qt_on_hit, NULL);
    case 94: return nb_quadtree_visit_point(t, pinf, NB_FILTER_ALL, qt_on_hit, NULL);
    case 95: return nb_quadtree_visit_point(NULL, p, NB_FILTER_ALL, qt_on_hit, NULL);
    case 96: return nb_quadtree_visit_point(t, p, NB_FILTER_ALL, NULL, NULL);
    // kNN and rays
    case 100: return nb_quadtree_knn(t, p, NB_FILTER_ALL, inf, NULL, 3, &o->found);
    case 101: return nb_quadtree_knn(t, pnan, NB_FILTER_ALL, inf, nn, 3, &o->found);
    case 102: return nb_quadtree_knn(t, p, NB_FILTER_ALL, nan, nn, 3, &o->found);
    case 103: return nb_quadtree_knn(t, p, NB_FILTER_ALL, inf, nn, -1, &o->found);
    case 104: return nb_quadtree_knn(t, p, NB_FILTER_ALL, -1.0, nn, 3, &o->found);
    case 105: return nb_quadtree_knn(NULL, p, NB_FILTER_ALL, inf, nn, 3, &o->found);
    case 106: return nb_quadtree_knn(t, p, NB_FILTER_ALL, inf, nn, 3, NULL);
    case 107: return nb_quadtree_visit_knn(t, NULL, NB_FILTER_ALL, inf, 3, qt_on_nn, NULL);
    case 108: return nb_quadtree_visit_knn(t, pnan, NB_FILTER_ALL, -1.0, 3, qt_on_nn, NULL);
    case 109: return nb_quadtree_visit_knn(t, p, NB_FILTER_ALL, nan, -1, qt_on_nn, NULL);
    case 97: return nb_quadtree_visit_knn(t, p, NB_FILTER_ALL, inf, -1, qt_on_nn, NULL);
    case 98: return nb_quadtree_visit_knn(t, p, NB_FILTER_ALL, -1.0, 3, NULL, NULL);
    case 110: return nb_quadtree_raycast(t, p, dir, inf, NB_FILTER_ALL, NULL, &o->found);
    case 111: return nb_quadtree_raycast(t, pnan, dir, inf, NB_FILTER_ALL, rays, &o->found);
    case 112: return nb_quadtree_raycast(t, p, dinf, inf, NB_FILTER_ALL, rays, &o->found);
    case 113: return nb_quadtree_raycast(t, p, dzero, inf, NB_FILTER_ALL, rays, &o->found);
    case 114: return nb_quadtree_raycast(t, p, dir, nan, NB_FILTER_ALL, rays, &o->found);
    case 115: return nb_quadtree_raycast(t, p, dir, -1.0, NB_FILTER_ALL, rays, &o->found);
    case 116: return nb_quadtree_raycast(t, p, NULL, 1.0, NB_FILTER_ALL, rays, &o->found);
    case 117: return nb_quadtree_raycast_all(t, p, dir, inf, NB_FILTER_ALL, rays, -1, &o->found);
    case 118: return nb_quadtree_raycast_all(t, p, dzero, inf, NB_FILTER_ALL, rays, 16, &o->found);
    case 119: return nb_quadtree_raycast_all(t, p, dir, inf, NB_FILTER_ALL, NULL, 4, &o->found);
    case 120:
        return nb_quadtree_raycast_all(t, pinf, dzero, inf, NB_FILTER_ALL, rays, -1, &o->found);
    case 121: return nb_quadtree_raycast_all(NULL, p, dir, inf, NB_FILTER_ALL, rays, 16, &o->found);
    // pairs and cross pairs
    case 130: return nb_quadtree_pairs(NULL, pairs, 1024, &o->found64);
    case 131: return nb_quadtree_pairs(t, pairs, 1024, NULL);
    case 132: return nb_quadtree_pairs(t, NULL, 5, &o->found64);
    case 133: return nb_quadtree_pairs(t, pairs, -1, &o->found64);
    case 134: return nb_quadtree_count_pairs(NULL, &o->found64);
    case 135: return nb_quadtree_count_pairs(t, NULL);
    case 136: return nb_quadtree_visit_pairs(t, NULL, NULL);
    case 137: return nb_quadtree_visit_pairs(NULL, qt_on_pair, NULL);
    case 140: return nb_quadtree_cross_pairs(NULL, 1u, 2u, pairs, 1024, &o->found64);
    case 141: return nb_quadtree_cross_pairs(t, 1u, 2u, NULL, 5, &o->found64);
    case 142: return nb_quadtree_cross_pairs(t, 1u, 2u, pairs, -1, &o->found64);
    case 143: return nb_quadtree_count_cross_pairs(t, 1u, 2u, NULL);
    case 144: return nb_quadtree_count_cross_pairs(NULL, 1u, 2u, &o->found64);
    case 145: return nb_quadtree_visit_cross_pairs(t, 1u, 2u, NULL, NULL);
    case 146: return nb_quadtree_visit_cross_pairs(NULL, 1u, 2u, qt_on_pair, NULL);
    // accepted edge values
    case 150:
        return nb_quadtree_query_box(t, &(nbBox){{-inf, -inf}, {inf, inf}}, NB_FILTER_ALL, hits,
                                     128, &o->found);
    case 151: return nb_quadtree_query_radius(t, p, -0.0, NB_FILTER_ALL, hits, 128, &o->found);
    case 152: return nb_quadtree_knn(t, p, NB_FILTER_ALL, inf, NULL, 0, &o->found);
    case 153: return nb_quadtree_raycast_all(t, p, dir, 0.0, NB_FILTER_ALL, NULL, 0, &o->found);
    case 154: return nb_quadtree_count_pairs(t, &o->found64);
    case 155: return nb_quadtree_count_cross_pairs(t, 0u, 0u, &o->found64);
    case 156: return nb_quadtree_reserve(t, 0);
    // move_many: every entry is checked before anything moves (*moved in o->found)
    case 160: return nb_quadtree_move_many(NULL, &fx->live, &ok, 1, &o->found);
    case 161: return nb_quadtree_move_many(t, NULL, &ok, 1, &o->found);
    case 162: return nb_quadtree_move_many(t, &fx->live, NULL, 1, &o->found);
    case 163: return nb_quadtree_move_many(t, &fx->live, &ok, -1, &o->found);
    case 164:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->live, fx->stale}, (nbRect[]){ok, ok}, 2,
                                     &o->found);
    case 165:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->live, fx->foreign}, (nbRect[]){ok, ok}, 2,
                                     &o->found);
    case 166:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->live, NB_HANDLE_NULL}, (nbRect[]){ok, ok},
                                     2, &o->found);
    case 167:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->live, fx->live}, (nbRect[]){ok, nanr}, 2,
                                     &o->found);
    case 168:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->live, fx->live}, (nbRect[]){ok, inv}, 2,
                                     &o->found);
    case 169:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->stale, fx->live}, (nbRect[]){ok, nanr}, 2,
                                     &o->found);
    case 170: return nb_quadtree_move_many(t, &fx->live, &inv_nan, 1, &o->found);
    case 171:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->live, fx->live}, (nbRect[]){infr, ok}, 2,
                                     &o->found);
    case 172:
        return nb_quadtree_move_many(t, (nbHandle[]){fx->live, (nbHandle){0xFFFFFFFFu}},
                                     (nbRect[]){ok, ok}, 2, NULL);
    case 173: return nb_quadtree_move_many(t, NULL, NULL, 0, &o->found);
    case 174: return nb_quadtree_move_many(t, NULL, NULL, 0, NULL);
    default: return NB_STATUS_COUNT;
    }
}

typedef struct QtCase {
    int id;
    nbStatus want;
} QtCase;

static const QtCase qt_cases[] = {
    {0, NB_ERR_NULL_ARG},
    {1, NB_ERR_NULL_ARG},
    {2, NB_ERR_NULL_ARG},
    {3, NB_ERR_NOT_FINITE},
    {4, NB_ERR_NOT_FINITE},
    {5, NB_ERR_OUT_OF_RANGE},
    {6, NB_ERR_OUT_OF_RANGE},
    {7, NB_ERR_OUT_OF_RANGE},
    {8, NB_ERR_OUT_OF_RANGE},
    {9, NB_ERR_OUT_OF_RANGE},
    {10, NB_ERR_OUT_OF_RANGE},
    {11, NB_ERR_OUT_OF_RANGE},
    {12, NB_ERR_OUT_OF_RANGE},
    {13, NB_ERR_OUT_OF_RANGE},
    {14, NB_ERR_NOT_FINITE},
    {15, NB_ERR_OUT_OF_RANGE},
    {20, NB_ERR_NULL_ARG},
    {21, NB_ERR_OUT_OF_RANGE},
    {22, NB_ERR_OUT_OF_RANGE},
    {23, NB_ERR_NULL_ARG},
    {24, NB_ERR_NULL_ARG},
    {25, NB_ERR_NULL_ARG},
    {26, NB_ERR_NULL_ARG},
    {27, NB_ERR_NULL_ARG},
    {30, NB_ERR_NULL_ARG},
    {31, NB_ERR_NULL_ARG},
    {32, NB_ERR_NULL_ARG},
    {33, NB_ERR_NOT_FINITE},
    {34, NB_ERR_NOT_FINITE},
    {35, NB_ERR_OUT_OF_RANGE},
    {36, NB_ERR_NOT_FINITE},
    {40, NB_ERR_NULL_ARG},
    {41, NB_ERR_NULL_ARG},
    {42, NB_ERR_OUT_OF_RANGE},
    {43, NB_ERR_NOT_FINITE},
    {44, NB_ERR_OUT_OF_RANGE},
    {45, NB_ERR_OUT_OF_RANGE}, // the first bad rectangle decides: inverted before infinite
    {46, NB_ERR_OUT_OF_RANGE},
    {50, NB_ERR_NULL_ARG},
    {51, NB_ERR_NULL_ARG},
    {52, NB_ERR_BAD_HANDLE},
    {53, NB_ERR_BAD_HANDLE},
    {54, NB_ERR_BAD_HANDLE},
    {55, NB_ERR_NOT_FINITE},
    {56, NB_ERR_OUT_OF_RANGE},
    {57, NB_ERR_BAD_HANDLE},
    {58, NB_ERR_NOT_FINITE},
    {60, NB_ERR_NULL_ARG},
    {61, NB_ERR_BAD_HANDLE},
    {62, NB_ERR_BAD_HANDLE},
    {63, NB_ERR_BAD_HANDLE},
    {64, NB_ERR_NULL_ARG},
    {65, NB_ERR_BAD_HANDLE},
    {66, NB_ERR_NULL_ARG},
    {67, NB_ERR_BAD_HANDLE},
    {68, NB_ERR_NULL_ARG},
    {69, NB_ERR_NULL_ARG},
    {70, NB_ERR_NULL_ARG},
    {71, NB_ERR_NULL_ARG},
    {72, NB_ERR_NULL_ARG},
    {73, NB_ERR_NULL_ARG},
    {74, NB_ERR_NOT_FINITE},
    {75, NB_ERR_OUT_OF_RANGE},
    {76, NB_ERR_OUT_OF_RANGE},
    {77, NB_ERR_NOT_FINITE},
    {78, NB_ERR_NULL_ARG},
    {79, NB_ERR_NOT_FINITE},
    {80, NB_ERR_NULL_ARG},
    {81, NB_ERR_NULL_ARG},
    {82, NB_ERR_NOT_FINITE},
    {83, NB_ERR_NOT_FINITE},
    {84, NB_ERR_OUT_OF_RANGE},
    {85, NB_ERR_NOT_FINITE},
    {86, NB_ERR_NOT_FINITE},
    {87, NB_ERR_OUT_OF_RANGE},
    {88, NB_ERR_NOT_FINITE},
    {89, NB_ERR_NULL_ARG},
    {90, NB_ERR_OUT_OF_RANGE},
    {91, NB_ERR_NULL_ARG},
    {92, NB_ERR_NOT_FINITE},
    {93, NB_ERR_NULL_ARG},
    {94, NB_ERR_NOT_FINITE},
    {95, NB_ERR_NULL_ARG},
    {96, NB_ERR_NULL_ARG},
    {100, NB_ERR_NULL_ARG},
    {101, NB_ERR_NOT_FINITE},
    {102, NB_ERR_NOT_FINITE},
    {103, NB_ERR_OUT_OF_RANGE},
    {104, NB_ERR_OUT_OF_RANGE},
    {105, NB_ERR_NULL_ARG},
    {106, NB_ERR_NULL_ARG},
    {107, NB_ERR_NULL_ARG},
    {108, NB_ERR_NOT_FINITE},
    {109, NB_ERR_NOT_FINITE},
    {97, NB_ERR_OUT_OF_RANGE},
    {98, NB_ERR_NULL_ARG},
    {110, NB_ERR_NULL_ARG},
    {111, NB_ERR_NOT_FINITE},
    {112, NB_ERR_NOT_FINITE},
    {113, NB_ERR_OUT_OF_RANGE},
    {114, NB_ERR_NOT_FINITE},
    {115, NB_ERR_OUT_OF_RANGE},
    {116, NB_ERR_NULL_ARG},
    {117, NB_ERR_OUT_OF_RANGE},
    {118, NB_ERR_OUT_OF_RANGE},
    {119, NB_ERR_NULL_ARG},
    {120, NB_ERR_NOT_FINITE},
    {121, NB_ERR_NULL_ARG},
    {130, NB_ERR_NULL_ARG},
    {131, NB_ERR_NULL_ARG},
    {132, NB_ERR_NULL_ARG},
    {133, NB_ERR_OUT_OF_RANGE},
    {134, NB_ERR_NULL_ARG},
    {135, NB_ERR_NULL_ARG},
    {136, NB_ERR_NULL_ARG},
    {137, NB_ERR_NULL_ARG},
    {140, NB_ERR_NULL_ARG},
    {141, NB_ERR_NULL_ARG},
    {142, NB_ERR_OUT_OF_RANGE},
    {143, NB_ERR_NULL_ARG},
    {144, NB_ERR_NULL_ARG},
    {145, NB_ERR_NULL_ARG},
    {146, NB_ERR_NULL_ARG},
    {150, NB_OK},
    {151, NB_OK},
    {152, NB_OK},
    {153, NB_OK},
    {154, NB_OK},
    {155, NB_OK},
    {156, NB_OK},
    {160, NB_ERR_NULL_ARG},
    {161, NB_ERR_NULL_ARG},
    {162, NB_ERR_NULL_ARG},
    {163, NB_ERR_OUT_OF_RANGE},
    {164, NB_ERR_BAD_HANDLE},
    {165, NB_ERR_BAD_HANDLE},
    {166, NB_ERR_BAD_HANDLE},
    {167, NB_ERR_NOT_FINITE},
    {168, NB_ERR_OUT_OF_RANGE},
    {169, NB_ERR_BAD_HANDLE},
    {170, NB_ERR_NOT_FINITE},
    {171, NB_ERR_NOT_FINITE},
    {172, NB_ERR_BAD_HANDLE},
    {173, NB_OK},
    {174, NB_OK},
};

static int test_quadtree_table(void)
{
    QtFix fx;
    nbQuadtreeDesc desc = {0};
    desc.split_threshold = 2;
    NB_CHECK_OK(nb_quadtree_create(&desc, &fx.t));
    nbQuadtree *other = NULL;
    NB_CHECK_OK(nb_quadtree_create(&desc, &other));
    for (int i = 0; i < 40; i++) {
        const double x = fix_unit() * 100.0 - 50.0, y = fix_unit() * 100.0 - 50.0;
        const double w = i % 7 == 0 ? 0.0 : fix_unit() * 10.0;
        const nbRect r = {{x, y}, {x + w, y + 0.5 * w}};
        const nbFilter f = i % 3 == 0   ? (nbFilter){1u, 2u}
                           : i % 3 == 1 ? (nbFilter){2u, 1u}
                                        : NB_FILTER_ALL;
        NB_CHECK_OK(nb_quadtree_insert(fx.t, &r, (uint64_t)i, f, &fx.live));
    }
    const nbRect far = {{1e300, 0.0}, {1e300, 1.0}}; // the outside list
    nbHandle h;
    NB_CHECK_OK(nb_quadtree_insert(fx.t, &far, 99, NB_FILTER_ALL, &h));
    NB_CHECK_OK(nb_quadtree_insert(fx.t, &far, 98, NB_FILTER_ALL, &fx.stale));
    NB_CHECK_OK(nb_quadtree_remove(fx.t, fx.stale));
    NB_CHECK_OK(nb_quadtree_insert(other, &far, 1, NB_FILTER_ALL, &fx.foreign));
    const uint64_t base = qt_fingerprint(fx.t);
    const int32_t count = nb_quadtree_count(fx.t);
    for (size_t c = 0; c < sizeof qt_cases / sizeof qt_cases[0]; c++) {
        QtOut o = {GARBAGE, GARBAGE, {QT_GARBAGE_BITS}, (nbQuadtree *)&o, false};
        qt_calls = false;
        const nbStatus st = qt_call(qt_cases[c].id, &fx, &o);
        if (st != qt_cases[c].want) {
            fprintf(stderr, "quadtree case %d: %s, expected %s\n", qt_cases[c].id,
                    nb_status_str(st), nb_status_str(qt_cases[c].want));
            return 1;
        }
        if (o.create_call) {
            if (st == NB_OK) nb_quadtree_destroy(o.created);
            NB_CHECK(st == NB_OK || o.created == NULL || o.created == (nbQuadtree *)&o);
            NB_CHECK(qt_cases[c].id == 0 || qt_cases[c].id == 1 || st == NB_OK ||
                     o.created == NULL);
            continue;
        }
        NB_CHECK_OK(nb_quadtree_validate(fx.t));
        NB_CHECK(nb_quadtree_count(fx.t) == count);
        NB_CHECK(qt_fingerprint(fx.t) == base);
        if (st != NB_OK) {
            NB_CHECK(o.found == 0 || o.found == GARBAGE);
            NB_CHECK(o.found64 == 0 || o.found64 == GARBAGE);
            NB_CHECK(o.handle.bits == 0 || o.handle.bits == QT_GARBAGE_BITS);
            NB_CHECK(!qt_calls);
        }
    }
    // Outputs the calls above left as garbage because their pointer was the NULL one: each
    // found / handle output must be zeroed even when a later check fails.
    int32_t found = GARBAGE;
    NB_CHECK_STATUS(nb_quadtree_query_box(fx.t, NULL, NB_FILTER_ALL, NULL, 0, &found),
                    NB_ERR_NULL_ARG);
    NB_CHECK(found == 0);
    nbHandle hh = {QT_GARBAGE_BITS};
    const nbRect bad = {{D_NAN, 0.0}, {1.0, 1.0}};
    NB_CHECK_STATUS(nb_quadtree_insert(fx.t, &bad, 0, NB_FILTER_ALL, &hh), NB_ERR_NOT_FINITE);
    NB_CHECK(hh.bits == 0);
    int32_t moved = GARBAGE; // a batch refused at any check says it moved nothing
    NB_CHECK_STATUS(nb_quadtree_move_many(NULL, NULL, NULL, 1, &moved), NB_ERR_NULL_ARG);
    NB_CHECK(moved == 0);
    moved = GARBAGE;
    NB_CHECK_STATUS(nb_quadtree_move_many(fx.t, &fx.live, &bad, 1, &moved), NB_ERR_NOT_FINITE);
    NB_CHECK(moved == 0);
    moved = GARBAGE;
    NB_CHECK_OK(nb_quadtree_move_many(fx.t, NULL, NULL, 0, &moved));
    NB_CHECK(moved == 0);
    NB_CHECK(nb_quadtree_count(NULL) == 0 && nb_quadtree_memory_bytes(NULL) == 0);
    nb_quadtree_clear(NULL);
    nb_quadtree_destroy(NULL);
    nb_quadtree_destroy(other);
    nb_quadtree_destroy(fx.t);
    return 0;
}

// ---- periodic boxes (nbGridDesc.period) ----
// The statuses only a periodic grid has, on a 2D and a 3D fixture: points outside [0, P) and
// build radii beyond P / 2 refused at build; pair and radius calls beyond P / 2; query points
// outside the box; boxes of width < P outside [-P, 2P); cross pairs across different boxes.
// Finiteness still comes first. After each refused call the outputs hold their safe values,
// no callback ran, and the grid validates and answers as before.

typedef struct PRow {
    const char *name;
    int call; // PC_*
    double v[3];
    double r;
    nbStatus want;
} PRow;

enum {
    PC_BUILD_POINT, // build with point 1 := v
    PC_BUILD_R,     // build at radius r
    PC_PAIRS,       // nb_grid_pairs / count / visit / visit_range at r
    PC_RADIUS,      // query / visit radius (plain and filtered) at center v, radius r
    PC_BOX,         // query / visit box: lo = v, hi = v + r on every axis
    PC_KNN,         // knn (plain and filtered) at point v, k = (int)r
    PC_CROSS_OPEN,  // cross pairs against an open grid
    PC_CROSS_OTHER, // cross pairs against a grid of other periods
};

static bool p_visit(int32_t i, int32_t j, void *user)
{
    (void)i;
    (void)j;
    ++*(int64_t *)user;
    return true;
}

static bool p_hit(int32_t i, void *user)
{
    (void)i;
    ++*(int64_t *)user;
    return true;
}

static int64_t p_answers(const nbGrid *g, double r)
{
    int64_t count = -1;
    if (nb_grid_count_pairs(g, r, &count) != NB_OK) return -1;
    return count * 1000003 + nb_grid_count(g) + (int64_t)nb_grid_memory_bytes(g) * 7;
}

static nbGrid *p_grid(int dim, const double *period, const double *pts, int32_t n, double r)
{
    nbGridDesc d = {0};
    d.dim = dim;
    for (int a = 0; a < dim; a++) d.period[a] = period[a];
    nbGrid *g = NULL;
    if (nb_grid_create(&d, &g) != NB_OK) return NULL;
    const nbPoints p = {.data = pts, .count = n, .dim = dim};
    if (nb_grid_build(g, &p, r) != NB_OK) {
        nb_grid_destroy(g);
        return NULL;
    }
    return g;
}

// Runs one row; 0 when every call gave `want` and left everything as the contract says.
static int p_row(nbGrid *g, nbGrid *open, nbGrid *other, int dim, double *pts, int32_t n,
                 const PRow *row)
{
    const int64_t before = p_answers(g, 0.25);
    int64_t visits = 0, found64 = GARBAGE;
    int32_t found32 = GARBAGE;
    nbPair pairs[4];
    int32_t idx[4];
    nbNeighbor nn[8];
    const nbFilter f = {1u, 1u};
    nbStatus got[4] = {NB_OK, NB_OK, NB_OK, NB_OK};
    int calls = 0;
    bool outputs_safe = true;
    double hi[3];
    for (int a = 0; a < 3; a++) hi[a] = row->v[a] + row->r;
    switch (row->call) {
    case PC_BUILD_POINT:
    case PC_BUILD_R: {
        double saved[3];
        memcpy(saved, pts + dim, sizeof saved);
        if (row->call == PC_BUILD_POINT) memcpy(pts + dim, row->v, (size_t)dim * sizeof(double));
        const nbPoints p = {.data = pts, .count = n, .dim = dim};
        got[calls++] = nb_grid_build(g, &p, row->call == PC_BUILD_R ? row->r : 0.25);
        memcpy(pts + dim, saved, sizeof saved);
        break;
    }
    case PC_PAIRS:
        got[calls++] = nb_grid_pairs(g, row->r, pairs, 4, &found64);
        outputs_safe &= found64 == 0;
        found64 = GARBAGE;
        got[calls++] = nb_grid_count_pairs(g, row->r, &found64);
        outputs_safe &= found64 == 0;
        got[calls++] = nb_grid_visit_pairs(g, row->r, p_visit, &visits);
        got[calls++] =
            nb_grid_visit_pairs_range(g, row->r, 0, nb_grid_pair_units(g), p_visit, &visits);
        break;
    case PC_RADIUS:
        got[calls++] = nb_grid_query_radius(g, row->v, row->r, NB_FILTER_ALL, idx, 4, &found32);
        outputs_safe &= found32 == 0;
        found32 = GARBAGE;
        got[calls++] = nb_grid_query_radius(g, row->v, row->r, f, idx, 4, &found32);
        outputs_safe &= found32 == 0;
        got[calls++] = nb_grid_visit_radius(g, row->v, row->r, NB_FILTER_ALL, p_hit, &visits);
        got[calls++] = nb_grid_visit_radius(g, row->v, row->r, f, p_hit, &visits);
        break;
    case PC_BOX:
        got[calls++] =
            nb_grid_query_box(g, NBT_BOX(row->v, hi, dim), NB_FILTER_ALL, idx, 4, &found32);
        outputs_safe &= found32 == 0;
        found32 = GARBAGE;
        got[calls++] = nb_grid_query_box(g, NBT_BOX(row->v, hi, dim), f, idx, 4, &found32);
        outputs_safe &= found32 == 0;
        got[calls++] =
            nb_grid_visit_box(g, NBT_BOX(row->v, hi, dim), NB_FILTER_ALL, p_hit, &visits);
        got[calls++] = nb_grid_visit_box(g, NBT_BOX(row->v, hi, dim), f, p_hit, &visits);
        break;
    case PC_KNN:
        got[calls++] =
            nb_grid_knn(g, row->v, NB_FILTER_ALL, (double)INFINITY, nn, (int32_t)row->r, &found32);
        outputs_safe &= found32 == 0;
        found32 = GARBAGE;
        got[calls++] = nb_grid_knn(g, row->v, f, (double)INFINITY, nn, (int32_t)row->r, &found32);
        outputs_safe &= found32 == 0;
        break;
    case PC_CROSS_OPEN:
    case PC_CROSS_OTHER: {
        nbGrid *b = row->call == PC_CROSS_OPEN ? open : other;
        got[calls++] = nb_grid_cross_pairs(g, b, row->r, pairs, 4, &found64);
        outputs_safe &= found64 == 0;
        found64 = GARBAGE;
        got[calls++] = nb_grid_count_cross_pairs(b, g, row->r, &found64);
        outputs_safe &= found64 == 0;
        got[calls++] = nb_grid_visit_cross_pairs(g, b, row->r, p_visit, &visits);
        break;
    }
    default: return 1;
    }
    int bad = 0;
    for (int c = 0; c < calls; c++)
        bad |= got[c] != row->want && !(row->want == NB_OK && got[c] == NB_ERR_BUFFER_TOO_SMALL);
    if (row->want != NB_OK) bad |= !outputs_safe || visits != 0;
    const bool rebuilt = row->want == NB_OK && row->call <= PC_BUILD_R;
    if (rebuilt) { // an accepted build: back to the fixture's points
        const nbPoints p = {.data = pts, .count = n, .dim = dim};
        bad |= nb_grid_build(g, &p, 0.25) != NB_OK;
    }
    bad |= p_answers(g, 0.25) != before || nb_grid_validate(g) != NB_OK;
    if (bad)
        fprintf(stderr, "  periodic %dD: %s: want %s, got %s %s %s %s; outputs %s, %lld visits\n",
                dim, row->name, nb_status_str(row->want), nb_status_str(got[0]),
                calls > 1 ? nb_status_str(got[1]) : "", calls > 2 ? nb_status_str(got[2]) : "",
                calls > 3 ? nb_status_str(got[3]) : "", outputs_safe ? "safe" : "NOT safe",
                (long long)visits);
    return bad;
}

static int test_periodic_table(void)
{
    const double top = nextafter(1.0, 0.0), over = nextafter(0.5, 1.0);
    const PRow rows[] = {
        {"build: a point at x = P", PC_BUILD_POINT, {1.0, 0.5, 0.5}, 0, NB_ERR_OUT_OF_RANGE},
        {"build: a point at x = -tiny", PC_BUILD_POINT, {-TINY, 0.5, 0.5}, 0, NB_ERR_OUT_OF_RANGE},
        {"build: a point at y = 1e300", PC_BUILD_POINT, {0.5, 1e300, 0.5}, 0, NB_ERR_OUT_OF_RANGE},
        {"build: NaN before outside", PC_BUILD_POINT, {2.0, D_NAN, 0.5}, 0, NB_ERR_NOT_FINITE},
        {"build: -inf", PC_BUILD_POINT, {-D_INF, 0.5, 0.5}, 0, NB_ERR_NOT_FINITE},
        {"build: x = -0.0 and nextafter(P, 0)", PC_BUILD_POINT, {-0.0, top, top}, 0, NB_OK},
        {"build: radius just over P / 2", PC_BUILD_R, {0}, over, NB_ERR_OUT_OF_RANGE},
        {"build: radius P / 2", PC_BUILD_R, {0}, 0.5, NB_OK},
        {"pairs: radius just over P / 2", PC_PAIRS, {0}, over, NB_ERR_OUT_OF_RANGE},
        {"pairs: radius 1e300", PC_PAIRS, {0}, 1e300, NB_ERR_OUT_OF_RANGE},
        {"pairs: radius NaN", PC_PAIRS, {0}, D_NAN, NB_ERR_NOT_FINITE},
        {"pairs: radius P / 2", PC_PAIRS, {0}, 0.5, NB_OK},
        {"radius: just over P / 2", PC_RADIUS, {0.5, 0.5, 0.5}, over, NB_ERR_OUT_OF_RANGE},
        {"radius: center x = P", PC_RADIUS, {1.0, 0.5, 0.5}, 0.1, NB_ERR_OUT_OF_RANGE},
        {"radius: center y = -tiny", PC_RADIUS, {0.5, -TINY, 0.5}, 0.1, NB_ERR_OUT_OF_RANGE},
        {"radius: center NaN, radius over", PC_RADIUS, {D_NAN, 0.5, 0.5}, 2.0, NB_ERR_NOT_FINITE},
        {"radius: center outside, radius NaN",
         PC_RADIUS,
         {5.0, 0.5, 0.5},
         D_NAN,
         NB_ERR_NOT_FINITE},
        {"radius: center on the faces, r = P / 2", PC_RADIUS, {0.0, top, -0.0}, 0.5, NB_OK},
        {"box: lo below -P", PC_BOX, {-1.5, 0.0, 0.0}, 0.5, NB_ERR_OUT_OF_RANGE},
        {"box: hi at 2P", PC_BOX, {1.5, 0.0, 0.0}, 0.5, NB_ERR_OUT_OF_RANGE},
        {"box: NaN", PC_BOX, {D_NAN, 0.0, 0.0}, 0.5, NB_ERR_NOT_FINITE},
        {"box: across the faces", PC_BOX, {-0.25, 0.75, -1.0}, 0.5, NB_OK},
        {"box: wider than P anywhere", PC_BOX, {-40.0, 30.0, 7.0}, 1.0, NB_OK},
        {"knn: point x = P", PC_KNN, {1.0, 0.5, 0.5}, 3, NB_ERR_OUT_OF_RANGE},
        {"knn: point outside, k -1", PC_KNN, {1.0, 0.5, 0.5}, -1, NB_ERR_OUT_OF_RANGE},
        {"knn: NaN before outside", PC_KNN, {D_NAN, 7.0, 0.5}, 3, NB_ERR_NOT_FINITE},
        {"knn: on the faces", PC_KNN, {0.0, top, 0.0}, 3, NB_OK},
        {"cross: against an open grid", PC_CROSS_OPEN, {0}, 0.1, NB_ERR_OUT_OF_RANGE},
        {"cross: against other periods", PC_CROSS_OTHER, {0}, 0.1, NB_ERR_OUT_OF_RANGE},
    };
    int failed = 0;
    for (int dim = 2; dim <= 3; dim++) {
        const double period[3] = {1.0, 1.0, dim == 3 ? 1.0 : 0.0};
        const double other_period[3] = {1.0, 2.0, dim == 3 ? 1.0 : 0.0}, no_period[3] = {0};
        double pts[3 * FIX_N];
        fix_rng = 99;
        for (int i = 0; i < FIX_N * dim; i++) pts[i] = fix_unit() * top;
        nbGrid *g = p_grid(dim, period, pts, FIX_N, 0.25);
        nbGrid *open = p_grid(dim, no_period, pts, FIX_N, 0.25);
        nbGrid *other = p_grid(dim, other_period, pts, FIX_N, 0.25);
        NB_CHECK(g != NULL && open != NULL && other != NULL);
        for (size_t t = 0; t < sizeof rows / sizeof rows[0]; t++)
            failed += p_row(g, open, other, dim, pts, FIX_N, &rows[t]);
        printf("  [periodic %dD] %d rows\n", dim, (int)(sizeof rows / sizeof rows[0]));
        nb_grid_destroy(g);
        nb_grid_destroy(open);
        nb_grid_destroy(other);
    }
    NB_CHECK(failed == 0);
    return 0;
}

// nb_grid_cell_order and nb_gather: pointers, then ranges; on any error nothing is written.
static int test_order_contract(void)
{
    const double xy[8] = {0.5, 0.5, 3.5, 0.5, 0.25, 0.75, 3.25, 0.25};
    nbGridDesc desc = {.dim = 2};
    nbGrid *g;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    int32_t order[4] = {-7, -7, -7, -7}, found = -1;
    NB_CHECK_OK(nb_grid_cell_order(g, NULL, 0, &found)); // empty grid: nothing to write
    NB_CHECK(found == 0);
    nbPoints pts = {.data = xy, .count = 4, .dim = 2};
    NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
    found = -1;
    NB_CHECK_STATUS(nb_grid_cell_order(NULL, order, 4, &found), NB_ERR_NULL_ARG);
    NB_CHECK(found == 0); // outputs set to their safe value first
    NB_CHECK_STATUS(nb_grid_cell_order(g, NULL, 4, &found), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_cell_order(g, order, 4, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_cell_order(g, order, -1, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(order[0] == -7);
    // The buffer contract: the first `capacity` entries, the full count, BUFFER_TOO_SMALL.
    NB_CHECK_STATUS(nb_grid_cell_order(g, order, 3, &found), NB_ERR_BUFFER_TOO_SMALL);
    NB_CHECK(found == 4 && order[0] == 0 && order[1] == 2 && order[2] == 1 && order[3] == -7);
    NB_CHECK_STATUS(nb_grid_cell_order(g, NULL, 0, &found), NB_ERR_BUFFER_TOO_SMALL);
    NB_CHECK(found == 4);
    NB_CHECK_OK(nb_grid_cell_order(g, order, 4, &found));
    NB_CHECK(found == 4);
    NB_CHECK(order[0] == 0 && order[1] == 2 && order[2] == 1 && order[3] == 3);
    nb_grid_destroy(g);

    double dst[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    const int32_t bad[4] = {0, 1, 4, 2}, neg[4] = {0, -1, 1, 2};
    NB_CHECK_STATUS(nb_gather(NULL, 4, xy, 0, dst, 0, 16), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_gather(order, 4, NULL, 0, dst, 0, 16), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_gather(order, 4, xy, 0, NULL, 0, 16), NB_ERR_NULL_ARG);
    NB_CHECK_OK(nb_gather(NULL, 0, NULL, 0, NULL, 0, 16)); // nothing to do
    NB_CHECK_STATUS(nb_gather(order, -1, xy, 0, dst, 0, 16), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_gather(order, 4, xy, 0, dst, 0, 0), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_gather(order, 4, xy, 8, dst, 0, 16), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_gather(order, 4, xy, 0, dst, 8, 16), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_gather(bad, 4, xy, 0, dst, 0, 16), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_gather(neg, 4, xy, 0, dst, 0, 16), NB_ERR_OUT_OF_RANGE);
    for (int i = 0; i < 8; i++) NB_CHECK(dst[i] == 9.0); // no error wrote anything
    NB_CHECK_OK(nb_gather(order, 4, xy, 0, dst, 0, 16));
    NB_CHECK(dst[2] == 0.25 && dst[3] == 0.75 && dst[6] == 3.25);
    return 0;
}

// neighbors.h: pointers, then finiteness, then ranges, outputs zeroed first; an error writes
// zeros to the offsets (too small: the full count and complete offsets) and changes no list.
static int test_neighbors_contract(void)
{
    const double xy[8] = {0.5, 0.5, 1.0, 0.5, 0.25, 0.75, 3.25, 0.25};
    const double nan = (double)NAN, inf = (double)INFINITY;
    nbGridDesc desc = {.dim = 2}, d3 = {.dim = 3}, dp = {.dim = 2, .period = {4.0, 4.0, 0.0}};
    nbGrid *g, *g3, *gp;
    NB_CHECK_OK(nb_grid_create(&desc, &g));
    NB_CHECK_OK(nb_grid_create(&d3, &g3));
    NB_CHECK_OK(nb_grid_create(&dp, &gp));
    nbPoints pts = {.data = xy, .count = 4, .dim = 2};
    NB_CHECK_OK(nb_grid_build(g, &pts, 1.0));
    NB_CHECK_OK(nb_grid_build(gp, &pts, 1.0));
    int32_t off[5], nb[16];
    int64_t found = -1;
#define ROWS_FAILS(call, want)                                                                     \
    do {                                                                                           \
        memset(off, 0x55, sizeof off);                                                             \
        found = -1;                                                                                \
        NB_CHECK_STATUS(call, want);                                                               \
        NB_CHECK(found == 0 || (want) == NB_ERR_NULL_ARG);                                         \
    } while (0)
    ROWS_FAILS(nb_grid_neighbor_rows(NULL, 1.0, off, nb, 16, &found), NB_ERR_NULL_ARG);
    ROWS_FAILS(nb_grid_neighbor_rows(g, 1.0, NULL, nb, 16, &found), NB_ERR_NULL_ARG);
    ROWS_FAILS(nb_grid_neighbor_rows(g, 1.0, off, NULL, 16, &found), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_neighbor_rows(g, 1.0, off, nb, 16, NULL), NB_ERR_NULL_ARG);
    ROWS_FAILS(nb_grid_neighbor_rows(g, nan, off, nb, -1, &found), NB_ERR_NOT_FINITE);
    ROWS_FAILS(nb_grid_neighbor_rows(g, inf, off, nb, 16, &found), NB_ERR_NOT_FINITE);
    ROWS_FAILS(nb_grid_neighbor_rows(g, -1.0, off, nb, 16, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(off[0] == 0 && off[4] == 0);
    ROWS_FAILS(nb_grid_neighbor_rows(g, 1.0, off, nb, -1, &found), NB_ERR_OUT_OF_RANGE);
    ROWS_FAILS(nb_grid_neighbor_rows(gp, 2.5, off, nb, 16, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_neighbor_rows(g, 1.0, off, nb, 2, &found), NB_ERR_BUFFER_TOO_SMALL);
    NB_CHECK(found == 6 && off[0] == 0 && off[1] == 2 && off[3] == 6 && off[4] == 6);
    NB_CHECK_STATUS(nb_grid_neighbor_rows(g, 1.0, off, NULL, 0, &found), NB_ERR_BUFFER_TOO_SMALL);
    NB_CHECK_OK(nb_grid_neighbor_rows(g, 1.0, off, nb, 16, &found));
    NB_CHECK(found == 6 && nb[0] == 1 && nb[1] == 2 && nb[2] == 0 && nb[5] == 1);
    NB_CHECK_OK(nb_grid_neighbor_rows(g3, 1.0, off, NULL, 0, &found)); // empty grid
    NB_CHECK(off[0] == 0 && found == 0);
    ROWS_FAILS(nb_grid_cross_neighbor_rows(NULL, g, 1.0, off, nb, 16, &found), NB_ERR_NULL_ARG);
    ROWS_FAILS(nb_grid_cross_neighbor_rows(g, NULL, 1.0, off, nb, 16, &found), NB_ERR_NULL_ARG);
    ROWS_FAILS(nb_grid_cross_neighbor_rows(g, g, 1.0, NULL, nb, 16, &found), NB_ERR_NULL_ARG);
    ROWS_FAILS(nb_grid_cross_neighbor_rows(g, g, nan, off, nb, 16, &found), NB_ERR_NOT_FINITE);
    ROWS_FAILS(nb_grid_cross_neighbor_rows(g, g3, 1.0, off, nb, 16, &found), NB_ERR_OUT_OF_RANGE);
    ROWS_FAILS(nb_grid_cross_neighbor_rows(g, gp, 1.0, off, nb, 16, &found), NB_ERR_OUT_OF_RANGE);
    ROWS_FAILS(nb_grid_cross_neighbor_rows(g, g, 1.0, off, nb, -2, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_OK(nb_grid_cross_neighbor_rows(g, g, 1.0, off, nb, 16, &found));
    NB_CHECK(found == 10 && off[1] == 3 && nb[0] == 0); // every point in its own row
#undef ROWS_FAILS

    // the list
    nbNeighborList *l = (nbNeighborList *)&desc;
    nbtAlloc half = {0};
    nbAllocator half_al = nbt_allocator(&half);
    half_al.free = NULL;
    const nbTasks bad_tasks = {NULL, NULL, -1};
    nbNeighborListDesc ld = {0};
    NB_CHECK_STATUS(nb_neighbor_list_create(NULL, &l), NB_ERR_NULL_ARG);
    NB_CHECK(l == NULL);
    NB_CHECK_STATUS(nb_neighbor_list_create(&ld, NULL), NB_ERR_NULL_ARG);
    ld.allocator = &half_al;
    NB_CHECK_STATUS(nb_neighbor_list_create(&ld, &l), NB_ERR_NULL_ARG);
    ld.allocator = NULL;
    ld.capacity_hint = -1;
    NB_CHECK_STATUS(nb_neighbor_list_create(&ld, &l), NB_ERR_OUT_OF_RANGE);
    ld.capacity_hint = 0;
    ld.tasks = &bad_tasks;
    NB_CHECK_STATUS(nb_neighbor_list_create(&ld, &l), NB_ERR_OUT_OF_RANGE);
    ld.tasks = NULL;
    ld.distances = true;
    NB_CHECK_OK(nb_neighbor_list_create(&ld, &l));
    nbNeighborRows rows;
    NB_CHECK_OK(nb_neighbor_list_rows(l, &rows));
    NB_CHECK(rows.rows == 0 && rows.entries == 0 && rows.offsets[0] == 0 && rows.dist2 != NULL);
    NB_CHECK_STATUS(nb_neighbor_list_build(NULL, g, 1.0), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_neighbor_list_build(l, NULL, 1.0), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_neighbor_list_build(l, g, nan), NB_ERR_NOT_FINITE);
    NB_CHECK_STATUS(nb_neighbor_list_build(l, g, -0.5), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_neighbor_list_build(l, gp, 2.5), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_neighbor_list_build_cross(NULL, g, g, 1.0), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_neighbor_list_build_cross(l, g, NULL, 1.0), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_neighbor_list_build_cross(l, g, g, inf), NB_ERR_NOT_FINITE);
    NB_CHECK_STATUS(nb_neighbor_list_build_cross(l, g, g3, 1.0), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_OK(nb_neighbor_list_rows(l, &rows)); // no error changed the list
    NB_CHECK(rows.rows == 0 && rows.entries == 0);
    NB_CHECK_OK(nb_neighbor_list_build(l, g, 1.0));
    NB_CHECK_OK(nb_neighbor_list_rows(l, &rows));
    NB_CHECK(rows.rows == 4 && rows.entries == 6 && rows.dist2[0] == 0.25);
    NB_CHECK_STATUS(nb_neighbor_list_build_cross(l, g, gp, 1.0), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_OK(nb_neighbor_list_rows(l, &rows));
    NB_CHECK(rows.rows == 4 && rows.entries == 6);
    memset(&rows, 0x55, sizeof rows);
    NB_CHECK_STATUS(nb_neighbor_list_rows(NULL, &rows), NB_ERR_NULL_ARG);
    NB_CHECK(rows.rows == 0 && rows.offsets == NULL);
    NB_CHECK_STATUS(nb_neighbor_list_rows(l, NULL), NB_ERR_NULL_ARG);
    NB_CHECK(nb_neighbor_list_memory_bytes(NULL) == 0 && nb_neighbor_list_memory_bytes(l) > 0);
    nb_neighbor_list_destroy(l);
    nb_neighbor_list_destroy(NULL);

    // the Verlet list
    nbVerlet *v = (nbVerlet *)&desc;
    nbVerletDesc vd = {.radius = 1.0, .skin = 0.2};
    NB_CHECK_STATUS(nb_verlet_create(NULL, &v), NB_ERR_NULL_ARG);
    NB_CHECK(v == NULL);
    NB_CHECK_STATUS(nb_verlet_create(&vd, NULL), NB_ERR_NULL_ARG);
    const struct {
        double radius, skin, p0, p2;
        int32_t dim;
        nbStatus want;
    } bad[] = {
        {nan, 0.2, 0, 0, 2, NB_ERR_NOT_FINITE},    {1.0, inf, 0, 0, 2, NB_ERR_NOT_FINITE},
        {1.0, 0.2, nan, 0, 2, NB_ERR_NOT_FINITE},  {-1.0, 0.2, 0, 0, 2, NB_ERR_OUT_OF_RANGE},
        {1.0, -0.2, 0, 0, 2, NB_ERR_OUT_OF_RANGE}, {1.0, 0.2, -4, 0, 2, NB_ERR_OUT_OF_RANGE},
        {1.0, 0.2, 0, 4, 2, NB_ERR_OUT_OF_RANGE},  {1.0, 0.2, 2.3, 0, 2, NB_ERR_OUT_OF_RANGE},
        {1.0, 0.2, 0, 0, 4, NB_ERR_OUT_OF_RANGE},  {1.0, 0.2, 2.4, 0, 2, NB_OK},
    };
    for (size_t t = 0; t < sizeof bad / sizeof bad[0]; t++) {
        nbVerletDesc bd = {.radius = bad[t].radius, .skin = bad[t].skin, .dim = bad[t].dim};
        bd.period[0] = bad[t].p0;
        bd.period[2] = bad[t].p2;
        v = (nbVerlet *)&desc;
        NB_CHECK_STATUS(nb_verlet_create(&bd, &v), bad[t].want);
        NB_CHECK((v == NULL) == (bad[t].want != NB_OK));
        nb_verlet_destroy(v);
    }
    vd.allocator = &half_al;
    NB_CHECK_STATUS(nb_verlet_create(&vd, &v), NB_ERR_NULL_ARG);
    vd.allocator = NULL;
    NB_CHECK_OK(nb_verlet_create(&vd, &v));
    bool rebuilt = true;
    double bad_xy[8];
    memcpy(bad_xy, xy, sizeof bad_xy);
    bad_xy[5] = nan;
    const nbPoints bad_nan = {.data = bad_xy, .count = 4, .dim = 2};
    const nbPoints bad_dim = {.data = xy, .count = 4, .dim = 3};
    const nbPoints bad_count = {.data = xy, .count = -1, .dim = 2};
    const nbPoints bad_stride = {.data = xy, .count = 2, .dim = 2, .stride = 12};
    const nbPoints null_data = {.data = NULL, .count = 2, .dim = 2};
    NB_CHECK_STATUS(nb_verlet_update(NULL, &pts, &rebuilt), NB_ERR_NULL_ARG);
    NB_CHECK(!rebuilt);
    NB_CHECK_STATUS(nb_verlet_update(v, NULL, &rebuilt), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_verlet_update(v, &null_data, &rebuilt), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_verlet_update(v, &bad_nan, &rebuilt), NB_ERR_NOT_FINITE);
    NB_CHECK_STATUS(nb_verlet_update(v, &bad_dim, &rebuilt), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_verlet_update(v, &bad_count, &rebuilt), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_verlet_update(v, &bad_stride, &rebuilt), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_OK(nb_verlet_rows(v, &rows));
    NB_CHECK(rows.rows == 0 && rows.offsets[0] == 0 && rows.dist2 == NULL);
    NB_CHECK_OK(nb_verlet_update(v, &pts, &rebuilt));
    NB_CHECK(rebuilt);
    NB_CHECK_OK(nb_verlet_update(v, &pts, NULL)); // *rebuilt is optional
    NB_CHECK_STATUS(nb_verlet_update(v, &bad_nan, &rebuilt), NB_ERR_NOT_FINITE);
    NB_CHECK_OK(nb_verlet_rows(v, &rows));
    NB_CHECK(rows.rows == 4 && rows.entries == 6);
    NB_CHECK_STATUS(nb_verlet_rows(NULL, &rows), NB_ERR_NULL_ARG);
    NB_CHECK(rows.rows == 0);
    NB_CHECK_STATUS(nb_verlet_rows(v, NULL), NB_ERR_NULL_ARG);
    NB_CHECK(nb_verlet_memory_bytes(NULL) == 0 && nb_verlet_memory_bytes(v) > 0);
    nb_verlet_destroy(v);
    nb_verlet_destroy(NULL);
    // periodic: a point outside [0, P) once built
    vd.period[0] = vd.period[1] = 4.0;
    NB_CHECK_OK(nb_verlet_create(&vd, &v));
    NB_CHECK_OK(nb_verlet_update(v, &pts, &rebuilt));
    bad_xy[5] = 4.0;
    NB_CHECK_STATUS(nb_verlet_update(v, &bad_nan, &rebuilt), NB_ERR_OUT_OF_RANGE);
    nb_verlet_destroy(v);
    nb_grid_destroy(g);
    nb_grid_destroy(g3);
    nb_grid_destroy(gp);
    return 0;
}

int main(int argc, char **argv)
{
    const nbtCase cases[] = {
        {"status_strings", test_status_strings},
        {"version", test_version},
        {"null_tolerant", test_null_tolerant},
        {"half_allocator", test_half_allocator},
        {"table_2d_dense", test_table_2d_dense},
        {"table_3d_cell", test_table_3d_cell},
        {"table_2d_hashed", test_table_2d_hashed},
        {"table_3d_empty", test_table_3d_empty},
        {"filter_all_is_plain", test_filter_all_is_plain},
        {"hash_null_tolerant", test_hash_null_tolerant},
        {"hash_half_allocator", test_hash_half_allocator},
        {"hash_clear", test_hash_clear},
        {"hash_table_empty", test_hash_table_empty},
        {"hash_table_2d", test_hash_table_2d},
        {"hash_table_3d", test_hash_table_3d},
        {"periodic_table", test_periodic_table},
        {"quadtree_table", test_quadtree_table},
        {"tiles_table", test_tiles_table},
        {"tiles_null_tolerant", test_tiles_null_tolerant},
        {"order_contract", test_order_contract},
        {"neighbors_contract", test_neighbors_contract},
    };
    return nbt_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
