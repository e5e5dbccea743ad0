// SPDX-License-Identifier: MIT
// The contract tests' runner: the table runner the grid's and the hash's tables use (one call's
// world, its mutations applied, the checks after the call), the functions without a structure,
// and main (contract.h describes the tables).
#include "contract.h"

uint64_t fix_rng;

void world_init(World *w, int dim, double cell, int32_t cap32, int64_t cap64)
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

int64_t g_visits;
uint64_t g_visit_hash;

int32_t i32(double v)
{
    return v <= INT32_MIN ? INT32_MIN : v >= INT32_MAX ? INT32_MAX : (int32_t)v;
}

// Applies a mutation of a field both tables have: 1 done, 0 does not apply to this fixture (an
// axis beyond its dim), -1 not a shared field.
int apply_common(World *w, const Mut *m)
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

void note(Result *r, const char *msg)
{
    size_t n = strlen(r->what);
    if (n + 1 < sizeof r->what)
        snprintf(r->what + n, sizeof r->what - n, "%s%s", n ? "; " : "", msg);
}

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
bool release(const Family *fam, World *w)
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
World *fresh_world(const Family *fam, const void *fx)
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

static bool success_like(const Result *r)
{
    return r->st == NB_OK || (r->st == NB_ERR_BUFFER_TOO_SMALL && r->found > r->cap);
}

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
int run_specs(const Table *tb)
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

// ---- the runner the stored-item structures' cases use (contract.h) ----

int item_visits;

bool item_on_hit(nbHit hit, void *user)
{
    (void)hit;
    (void)user;
    item_visits++;
    return true;
}

bool item_on_pair(nbHit a, nbHit b, void *user)
{
    (void)b;
    return item_on_hit(a, user);
}

bool item_on_neighbor(nbHit hit, double dist2, void *user)
{
    (void)dist2;
    return item_on_hit(hit, user);
}

bool item_on_index(int32_t index, void *user)
{
    (void)index;
    (void)user;
    item_visits++;
    return true;
}

// The outputs of `o` the call was given that do not hold their safe values, as IO_* bits.
static unsigned item_unsafe(const ItemOuts *o)
{
    unsigned bad = 0;
    if ((o->passed & IO_FOUND) && o->found != 0) bad |= IO_FOUND;
    if ((o->passed & IO_FOUND64) && o->found64 != 0) bad |= IO_FOUND64;
    if ((o->passed & IO_HANDLE) && o->handle.bits != 0) bad |= IO_HANDLE;
    if ((o->passed & IO_TILE) && o->tile != -1) bad |= IO_TILE;
    if ((o->passed & IO_CREATE) && o->created != NULL) bad |= IO_CREATE;
    return bad;
}

int item_case(const ItemKind *k, int dim, const char *label, ItemCall *call, void *args,
              nbStatus want, bool mutates)
{
    ItemFix f;
    if (k->make(&f, dim) != 0) {
        fprintf(stderr, "  FAIL %s (%dD) %s: the fixture\n", k->noun, dim, label);
        return 1;
    }
    const uint64_t before = k->answers(&f);
    ItemOuts o = {GARBAGE, GARBAGE, {ITEM_GARBAGE_BITS}, GARBAGE, BOGUS, 0};
    item_visits = 0;
    const nbStatus st = call(&f, args, &o);
    const char *why = NULL;
    char msg[96];
    if (st != want) {
        snprintf(msg, sizeof msg, "%s, expected %s", nb_status_str(st), nb_status_str(want));
        why = msg;
    } else if (st == NB_OK) {
        if (o.created != BOGUS && o.created != NULL) k->destroy(o.created);
        if (k->validate(&f) != NB_OK)
            why = "the fixture no longer validates";
        else if (!mutates && k->answers(&f) != before)
            why = "the fixture changed";
    } else {
        const unsigned bad = item_unsafe(&o);
        if (bad != 0) {
            snprintf(msg, sizeof msg, "outputs 0x%x not at their safe values", bad);
            why = msg;
        } else if (item_visits != 0) {
            why = "the callback ran";
        } else if (k->answers(&f) != before) {
            why = "the fixture changed";
        }
    }
    if (why != NULL) fprintf(stderr, "  FAIL %s (%dD) %s: %s\n", k->noun, dim, label, why);
    k->free(&f);
    return why != NULL;
}

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

int half_allocator(const Family *fam, double cell)
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
