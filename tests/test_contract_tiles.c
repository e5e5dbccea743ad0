// SPDX-License-Identifier: MIT
// The tile grid's contract cases (include/nearby/tiles.h).
#include "contract.h"

// ---- the tile grid (include/nearby/tiles.h) ----
// Each function's row lists its mutations
// (required pointers NULL, non-finite inputs, out-of-range inputs, bad handles). On a 2D and a
// 3D fixture grid (entities inside and outside the world, a removed one, waypoints) the runner
// calls the function with its valid arguments (success), with each mutation alone (its status),
// and with every pair of mutations of different kinds (the kind checked first wins: pointers,
// then finiteness, then ranges, then handles; for functions that take a handle to act on, the
// handle comes right after the pointers). Each call is a case of the stored-item runner
// (item_case, contract.h), which checks the outputs, the callbacks and the fixture.

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
    nbVisitFn *vfn; // tile numbers
    const uint64_t *ids;
    const nbTilesDesc *desc;
    nbTiles **create_out;
    double *get_pos;
    nbTilesInfo *info;
} TArgs;

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

static nbTiles *t_of(const ItemFix *f)
{
    return (nbTiles *)f->s;
}

static int t_fixture(ItemFix *f, int dim)
{
    memset(f, 0, sizeof *f);
    f->dim = dim;
    const nbTilesDesc d = t_desc(dim);
    nbTiles *t = NULL, *other = NULL;
    NB_CHECK_OK(nb_tiles_create(&d, &t));
    NB_CHECK_OK(nb_tiles_create(&d, &other));
    f->s = t;
    f->other = other;
    fix_rng = 99;
    for (int i = 0; i < T_FIXN; i++) {
        double p[3] = {fix_unit() * 12.0 - 4.0, fix_unit() * 10.0 - 1.0, fix_unit() * 10.0 - 1.0};
        nbHandle h;
        // every fourth entity with a mask of its own, so that the masks are read
        const nbFilter ef = {1u << (i % 3), i % 4 == 3 ? 5u : 0xFFFFFFFFu};
        NB_CHECK_OK(nb_tiles_insert(t, p, (uint64_t)i, ef, &h));
        if (i == 0) f->live = h;
        if (i == 1) f->stale = h;
    }
    NB_CHECK_OK(nb_tiles_remove(t, f->stale));
    const double q[3] = {0.5, 0.5, 0.5};
    NB_CHECK_OK(nb_tiles_insert(other, q, 0, T_GROUP0, &f->foreign));
    f->forged.bits = (f->live.bits & ~(uint64_t)0xFFFFFFFFu) | 5000u;
    const double w[6] = {0, 2, 1, 3, 5, 4};
    NB_CHECK_OK(nb_tiles_add_waypoints(t, w, NULL, 2));
    return 0;
}

static void t_fixture_free(ItemFix *f)
{
    nb_tiles_destroy(t_of(f));
    nb_tiles_destroy((nbTiles *)f->other);
}

static void t_destroy(void *created)
{
    nb_tiles_destroy((nbTiles *)created);
}

static nbStatus t_validate(const ItemFix *f)
{
    return nb_tiles_validate(t_of(f));
}

static uint64_t t_answers(const ItemFix *f)
{
    const nbTiles *t = t_of(f);
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

// Valid arguments, pointing into `store` (the outputs a row checks then point into the runner's,
// t_outputs).
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

static void t_defaults(TArgs *a, const ItemFix *f, TStore *s)
{
    memset(a, 0, sizeof *a);
    a->t = t_of(f);
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
    a->fn = item_on_hit;
    a->pfn = item_on_pair;
    a->kfn = item_on_neighbor;
    a->vfn = item_on_index;
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
    void (*fn)(TArgs *a, const ItemFix *f, TStore *s);
} TMut;

#define TMUT(id, body)                                                                             \
    static void id(TArgs *a, const ItemFix *f, TStore *s)                                          \
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
TMUT(tm_vfn_null, a->vfn = NULL)
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
static const TMut tmuts_visit_neighbor_tiles[] = {
    TM(tm_t_null, TK_NULL),     TM(tm_vfn_null, TK_NULL),   TM(tm_tile_neg, TK_RANGE),
    TM(tm_tile_past, TK_RANGE), TM(tm_rings_neg, TK_RANGE),
};
static const TMut tmuts_visit_neighbor_tiles_radius[] = {
    TM(tm_t_null, TK_NULL),       TM(tm_vfn_null, TK_NULL),  TM(tm_radius_nan, TK_FINITE),
    TM(tm_radius_inf, TK_FINITE), TM(tm_tile_neg, TK_RANGE), TM(tm_tile_past, TK_RANGE),
    TM(tm_radius_neg, TK_RANGE),
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
TCALL(tc_neighbors,
      nb_tiles_neighbor_tiles(a->t, a->tile, a->rings, a->tiles_out, a->cap, a->found))
TCALL(tc_neighbors_radius,
      nb_tiles_neighbor_tiles_radius(a->t, a->tile, a->radius, a->tiles_out, a->cap, a->found))
TCALL(tc_visit_neighbor_tiles, nb_tiles_visit_neighbor_tiles(a->t, a->tile, a->rings, a->vfn, NULL))
TCALL(tc_visit_neighbor_tiles_radius,
      nb_tiles_visit_neighbor_tiles_radius(a->t, a->tile, a->radius, a->vfn, NULL))
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
    {"nb_tiles_neighbor_tiles", tc_neighbors, TLIST(tmuts_neighbors), TO_FOUND, false},
    {"nb_tiles_neighbor_tiles_radius", tc_neighbors_radius, TLIST(tmuts_neighbors_radius), TO_FOUND,
     false},
    {"nb_tiles_visit_neighbor_tiles", tc_visit_neighbor_tiles, TLIST(tmuts_visit_neighbor_tiles), 0,
     false},
    {"nb_tiles_visit_neighbor_tiles_radius", tc_visit_neighbor_tiles_radius,
     TLIST(tmuts_visit_neighbor_tiles_radius), 0, false},
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

static const ItemKind t_kind = {"tiles",    t_fixture, t_fixture_free,
                                t_validate, t_answers, t_destroy};

// A row's call with mutations m1 and m2 (-1: none).
typedef struct TCase {
    const TRow *row;
    int m1, m2;
} TCase;

// The row's outputs as the runner's, unless a mutation passed NULL for them.
static void t_outputs(TArgs *a, unsigned outs, ItemOuts *o, nbTiles **created)
{
    if ((outs & TO_FOUND) && a->found != NULL) a->found = ITEM_FOUND(o);
    if ((outs & TO_FOUND64) && a->found64 != NULL) a->found64 = ITEM_FOUND64(o);
    if ((outs & TO_HOUT) && a->hout != NULL) a->hout = ITEM_HANDLE(o);
    if ((outs & TO_TILE) && a->tile_out != NULL) a->tile_out = ITEM_TILE(o);
    if ((outs & TO_CREATE) && a->create_out != NULL) {
        o->passed |= IO_CREATE;
        a->create_out = created;
    }
}

static nbStatus t_call(const ItemFix *f, void *args, ItemOuts *o)
{
    const TCase *c = (const TCase *)args;
    const TRow *row = c->row;
    TArgs a;
    static TStore s;
    t_defaults(&a, f, &s);
    // Apply the mutation checked later first, so that on a shared field the earlier one stays.
    int first = c->m1, second = c->m2;
    if (first >= 0 && second >= 0 &&
        t_rank(row, row->muts[first].kind) < t_rank(row, row->muts[second].kind)) {
        first = c->m2;
        second = c->m1;
    }
    if (first >= 0) row->muts[first].fn(&a, f, &s);
    if (second >= 0) row->muts[second].fn(&a, f, &s);
    nbTiles *created = (nbTiles *)o->created;
    t_outputs(&a, row->outs, o, &created);
    const nbStatus st = row->call(&a);
    o->created = created;
    return st;
}

// One call with mutations m1 and m2 (-1: none) on a fresh fixture.
static int t_case(const TRow *row, int dim, int m1, int m2)
{
    nbStatus want = NB_OK;
    if (m1 >= 0) {
        int kind = row->muts[m1].kind;
        if (m2 >= 0 && t_rank(row, row->muts[m2].kind) < t_rank(row, kind))
            kind = row->muts[m2].kind;
        want = t_status[kind];
    }
    char label[160];
    snprintf(label, sizeof label, "%s with %s%s%s", row->name,
             m1 >= 0 ? row->muts[m1].name : "nothing", m2 >= 0 ? " + " : "",
             m2 >= 0 ? row->muts[m2].name : "");
    TCase c = {row, m1, m2};
    return item_case(&t_kind, dim, label, t_call, &c, want, (row->outs & TO_MUTATES) != 0);
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

int test_tiles_table(void)
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
int test_tiles_null_tolerant(void)
{
    nb_tiles_destroy(NULL);
    nb_tiles_clear(NULL);
    nb_tiles_clear_waypoints(NULL);
    NB_CHECK(nb_tiles_count(NULL) == 0 && nb_tiles_waypoint_count(NULL) == 0);
    NB_CHECK(nb_tiles_memory_bytes(NULL) == 0);
    NB_CHECK_STATUS(nb_tiles_validate(NULL), NB_ERR_NULL_ARG);
    ItemFix f;
    if (t_fixture(&f, 2)) return 1;
    nbTiles *t = t_of(&f);
    NB_CHECK(nb_tiles_memory_bytes(t) > 0);
    nbHit h0[T_FIXN], h1[T_FIXN];
    int32_t n0 = 0, n1 = 0;
    const double p[2] = {-0.0, 2.0}, q[2] = {0.0, 2.0};
    NB_CHECK_OK(nb_tiles_query_radius(t, p, -0.0, NB_FILTER_ALL, h0, T_FIXN, &n0));
    NB_CHECK_OK(nb_tiles_query_radius(t, q, 0.0, NB_FILTER_ALL, h1, T_FIXN, &n1));
    NB_CHECK(n0 == n1 && memcmp(h0, h1, (size_t)n0 * sizeof(nbHit)) == 0);
    NB_CHECK_STATUS(nb_tiles_query_radius(t, q, 50.0, NB_FILTER_ALL, NULL, 0, &n0),
                    NB_ERR_BUFFER_TOO_SMALL); // NULL out with capacity 0 counts
    NB_CHECK(n0 == T_FIXN - 1);
    nb_tiles_clear_waypoints(t);
    NB_CHECK(nb_tiles_waypoint_count(t) == 0);
    nb_tiles_clear(t);
    NB_CHECK(nb_tiles_count(t) == 0);
    NB_CHECK_OK(nb_tiles_validate(t));
    NB_CHECK_STATUS(nb_tiles_move(t, f.live, q), NB_ERR_BAD_HANDLE);
    t_fixture_free(&f);
    return 0;
}
