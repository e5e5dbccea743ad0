// SPDX-License-Identifier: MIT
// The dense grid's contract cases (include/nearby/grid.h, neighbors.h): its table on four
// fixtures, periodic boxes, the cell order and the neighbour lists.
#include "contract.h"

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

TABLE_TEST(test_table_2d_dense, run_table, fx_dense2)
TABLE_TEST(test_table_3d_cell, run_table, fx_cell3)
TABLE_TEST(test_table_2d_hashed, run_table, fx_hashed2)
TABLE_TEST(test_table_3d_empty, run_table, fx_empty3)

int test_null_tolerant(void)
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
int test_half_allocator(void)
{
    return half_allocator(&grid_family, 0.0);
}

// NB_FILTER_ALL gives exactly the unfiltered answers.
int test_filter_all_is_plain(void)
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

int test_periodic_table(void)
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
int test_order_contract(void)
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
int test_neighbors_contract(void)
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
    // in cell order: the same checks in the same order, the same counts
    ROWS_FAILS(nb_grid_neighbor_rows_cell_order(NULL, 1.0, off, nb, 16, &found), NB_ERR_NULL_ARG);
    ROWS_FAILS(nb_grid_neighbor_rows_cell_order(g, 1.0, NULL, nb, 16, &found), NB_ERR_NULL_ARG);
    ROWS_FAILS(nb_grid_neighbor_rows_cell_order(g, 1.0, off, NULL, 16, &found), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_grid_neighbor_rows_cell_order(g, 1.0, off, nb, 16, NULL), NB_ERR_NULL_ARG);
    ROWS_FAILS(nb_grid_neighbor_rows_cell_order(g, nan, off, nb, -1, &found), NB_ERR_NOT_FINITE);
    ROWS_FAILS(nb_grid_neighbor_rows_cell_order(g, -1.0, off, nb, 16, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(off[0] == 0 && off[4] == 0);
    ROWS_FAILS(nb_grid_neighbor_rows_cell_order(g, 1.0, off, nb, -1, &found), NB_ERR_OUT_OF_RANGE);
    ROWS_FAILS(nb_grid_neighbor_rows_cell_order(gp, 2.5, off, nb, 16, &found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_grid_neighbor_rows_cell_order(g, 1.0, off, nb, 2, &found),
                    NB_ERR_BUFFER_TOO_SMALL);
    NB_CHECK(found == 6 && off[0] == 0 && off[4] == 6);
    NB_CHECK_OK(nb_grid_neighbor_rows_cell_order(g, 1.0, off, nb, 16, &found));
    NB_CHECK(found == 6 && off[4] == 6);
    NB_CHECK_OK(nb_grid_neighbor_rows_cell_order(g3, 1.0, off, NULL, 0, &found)); // empty grid
    NB_CHECK(off[0] == 0 && found == 0);
    ROWS_FAILS(nb_grid_cross_neighbor_rows_cell_order(NULL, g, 1.0, off, nb, 16, &found),
               NB_ERR_NULL_ARG);
    ROWS_FAILS(nb_grid_cross_neighbor_rows_cell_order(g, NULL, 1.0, off, nb, 16, &found),
               NB_ERR_NULL_ARG);
    ROWS_FAILS(nb_grid_cross_neighbor_rows_cell_order(g, g, inf, off, nb, 16, &found),
               NB_ERR_NOT_FINITE);
    ROWS_FAILS(nb_grid_cross_neighbor_rows_cell_order(g, g3, 1.0, off, nb, 16, &found),
               NB_ERR_OUT_OF_RANGE);
    ROWS_FAILS(nb_grid_cross_neighbor_rows_cell_order(g, gp, 1.0, off, nb, 16, &found),
               NB_ERR_OUT_OF_RANGE);
    NB_CHECK_OK(nb_grid_cross_neighbor_rows_cell_order(g, g, 1.0, off, nb, 16, &found));
    NB_CHECK(found == 10);
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
    NB_CHECK(rows.order == NULL && rows.neighbor_order == NULL); // rows by index
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
    vd.candidates = vd.distances = true; // candidates come without distances
    NB_CHECK_STATUS(nb_verlet_create(&vd, &v), NB_ERR_OUT_OF_RANGE);
    NB_CHECK(v == NULL);
    vd.candidates = vd.distances = false;
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
    // one row read at r: pointers first (*found zeroed), then the ranges, then the buffer
    int32_t row_nb[8], row_found = -1;
    NB_CHECK_OK(nb_verlet_row(v, &pts, 0, row_nb, NULL, 8, &row_found));
    NB_CHECK(row_found == rows.offsets[1] && (row_found == 0 || row_nb[0] == rows.neighbors[0]));
    NB_CHECK_STATUS(nb_verlet_row(NULL, &pts, 0, row_nb, NULL, 8, &row_found), NB_ERR_NULL_ARG);
    NB_CHECK(row_found == 0);
    NB_CHECK_STATUS(nb_verlet_row(v, NULL, 0, row_nb, NULL, 8, &row_found), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_verlet_row(v, &null_data, 0, row_nb, NULL, 8, &row_found), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_verlet_row(v, &pts, 0, NULL, NULL, 8, &row_found), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_verlet_row(v, &pts, 0, row_nb, NULL, 8, NULL), NB_ERR_NULL_ARG);
    NB_CHECK_STATUS(nb_verlet_row(v, &pts, 4, row_nb, NULL, 8, &row_found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_verlet_row(v, &pts, -1, row_nb, NULL, 8, &row_found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_verlet_row(v, &pts, 0, row_nb, NULL, -1, &row_found), NB_ERR_OUT_OF_RANGE);
    NB_CHECK_STATUS(nb_verlet_row(v, &bad_dim, 0, row_nb, NULL, 8, &row_found),
                    NB_ERR_OUT_OF_RANGE);
    if (rows.offsets[1] > 0) {
        NB_CHECK_STATUS(nb_verlet_row(v, &pts, 0, row_nb, NULL, 0, &row_found),
                        NB_ERR_BUFFER_TOO_SMALL);
        NB_CHECK(row_found == rows.offsets[1]);
    }
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
