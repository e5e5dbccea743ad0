// SPDX-License-Identifier: MIT
// The quadtree's storage: the nodes and their hot records, the block arena, the per-position
// copies of each rectangle and its slot; create, destroy, reserve, clear and info
// (quadtree_internal.h has the layout).
#include "quadtree_internal.h"

// ---- storage ----

enum { NBI_QT_POS_BUFS = 7 };

static void nbi_qt_pos_bufs(nbQuadtree *q, nbiBuf *buf[NBI_QT_POS_BUFS],
                            size_t elem[NBI_QT_POS_BUFS])
{
    nbiBuf *b[NBI_QT_POS_BUFS] = {&q->box, &q->cat, &q->mask, &q->own, &q->fb, &q->sb, &q->qb};
    const size_t e[NBI_QT_POS_BUFS] = {sizeof(nbiQtBox),
                                       sizeof(uint32_t),
                                       sizeof(uint32_t),
                                       sizeof(int32_t),
                                       NBI_QT_RUN_FLOATS / 4 * sizeof(float),
                                       sizeof(float),
                                       NBI_QT_QRUN / 8 * sizeof(int16_t)};
    for (int i = 0; i < NBI_QT_POS_BUFS; i++) {
        buf[i] = b[i];
        elem[i] = e[i];
    }
}

// Makes room for `need`, all or nothing. Afterwards the change that asked cannot fail.
nbStatus nbi_qt_room(nbQuadtree *q, const nbiQtNeed *need)
{
    if ((int64_t)q->count + need->items > NBI_QT_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    int64_t positions = (int64_t)q->arena.top + need->positions;
    for (int b = 0; b < need->nblocks; b++) {
        int same = 0; // earlier requests of the same class use up its free list first
        for (int e = 0; e < b; e++) same += need->cls[e] == need->cls[b];
        positions += nbi_arena_need(&q->arena, need->cls[b], same);
    }
    const int64_t groups = need->groups > q->free_groups ? need->groups - q->free_groups : 0;
    const int64_t node_need = (int64_t)q->node_top + 4 * groups;
    if (positions > INT32_MAX || node_need > INT32_MAX) return NB_ERR_OUT_OF_RANGE;
    nbiBuf *pos[NBI_QT_POS_BUFS];
    size_t elem[NBI_QT_POS_BUFS];
    nbi_qt_pos_bufs(q, pos, elem);
    bool room = nbi_pool_room(&q->pool) >= need->items && (size_t)node_need <= q->nodes.cap &&
                (size_t)node_need <= q->hot.cap && (size_t)node_need <= q->gb.cap;
    for (int b = 0; b < NBI_QT_POS_BUFS && room; b++) room = (size_t)positions <= pos[b]->cap;
    if (room) return NB_OK;

    nbiPoolPrep prep;
    nbStatus st = nbi_pool_prepare(&q->pool, need->items, &prep);
    if (st != NB_OK) return st;
    nbiBuf *nodes[3] = {&q->nodes, &q->hot, &q->gb};
    const size_t node_elem[3] = {sizeof(nbiQtNode), sizeof(nbiQtHot), sizeof(nbiQtGb)};
    const size_t node_size[3] = {(size_t)node_need, (size_t)node_need, (size_t)node_need};
    nbiBuf next_nodes[3], next_pos[NBI_QT_POS_BUFS];
    bool ok = nbi_bufs_prepare(&q->alloc, nodes, next_nodes, node_size, node_elem, 3);
    if (ok) {
        // Every position buffer gets the capacity the first one got, so they stay in step.
        ok = nbi_buf_prepare(&q->alloc, pos[0], &next_pos[0], (size_t)positions, elem[0]);
        if (ok) {
            size_t pos_size[NBI_QT_POS_BUFS];
            for (int b = 1; b < NBI_QT_POS_BUFS; b++) pos_size[b] = next_pos[0].cap;
            ok = nbi_bufs_prepare(&q->alloc, pos + 1, next_pos + 1, pos_size + 1, elem + 1,
                                  NBI_QT_POS_BUFS - 1);
            if (!ok) nbi_buf_abandon(&q->alloc, pos[0], &next_pos[0], elem[0]);
        }
        if (!ok) nbi_bufs_abandon(&q->alloc, nodes, next_nodes, node_elem, 3);
    }
    if (!ok) {
        nbi_pool_abandon(&q->pool, &prep);
        return NB_ERR_OUT_OF_MEMORY;
    }
    nbi_pool_commit(&q->pool, &prep);
    nbi_bufs_commit(&q->alloc, pos, next_pos, elem, NBI_QT_POS_BUFS, true);
    nbi_bufs_commit(&q->alloc, nodes, next_nodes, node_elem, 3, true);
    return NB_OK;
}

// A block of class c (room prepared): from its free list, else from the arena's end.
int32_t nbi_block_take(nbQuadtree *q, int c)
{
    NB_ASSERT((size_t)(q->arena.top + nbi_arena_need(&q->arena, c, 0)) <= q->own.cap);
    return nbi_arena_take(&q->arena, NBI_OWN(q), c);
}

void nbi_block_give(nbQuadtree *q, int32_t start, int c)
{
    nbi_arena_give(&q->arena, NBI_OWN(q), start, c);
}

// Readies a block of class c at `start` for puts: its positions from `from` on (by whole runs)
// hold no box (NaN floats, which fail every test, so a search scans a partly filled run without
// masking), and its segment box (c < NBI_QT_RB_MIN_CLS) or its run boxes are empty.
void nbi_block_init(nbQuadtree *q, int32_t start, int c, int32_t from)
{
    const int32_t end = start + ((int32_t)1 << c);
    float *fb = NBI_FB(q), *sb = NBI_SB(q);
    for (int32_t r = from >> 2; r < end >> 2; r++)
        for (int i = 0; i < 16; i++) fb[(size_t)NBI_QT_RUN_FLOATS * (size_t)r + (size_t)i] = NAN;
    for (int32_t p = from; p < end; p++) {
        int16_t *f = nbi_qb_at(q, p);
        for (int i = 0; i < 4; i++) f[8 * i] = NBI_QT_QEMPTY;
    }
    if (c < NBI_QT_RB_MIN_CLS) {
        for (int i = 0; i < 4; i++) sb[nbi_seg_box(start, start) + i] = (float)INFINITY;
    } else {
        for (int32_t r = 0; r < (end - start) >> 3; r += 8)
            for (int i = 0; i < 32; i++) nbi_rb_at(q, start, c, r)[i] = NBI_QT_QEMPTY;
    }
}

// Computes anew the run box of the run that holds position p from its eight positions' fields
// (a position without a box holds NBI_QT_QEMPTY, which the minimum skips). A tidying calls it
// for every run of its node; with SSE2, nbi_box_move computes a moved position's run box itself.
void nbi_rb_refit(nbQuadtree *q, int32_t start, int c, int32_t p)
{
    int16_t *r = nbi_rb_at(q, start, c, (p - start) >> 3);
    const int16_t *e = nbi_qb_at(q, p & ~7);
#if defined(__SSE2__)
    __m128i f[4]; // field i of the eight in f[i]: its least by halving three times
    nbi_q8_load(e, f);
    for (int i = 0; i < 4; i++) {
        __m128i m = _mm_min_epi16(f[i], _mm_shuffle_epi32(f[i], _MM_SHUFFLE(1, 0, 3, 2)));
        m = _mm_min_epi16(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
        m = _mm_min_epi16(m, _mm_shufflelo_epi16(m, _MM_SHUFFLE(2, 3, 0, 1)));
        r[8 * i] = (int16_t)_mm_cvtsi128_si32(m); // the low lane (every field <= NBI_QT_QEMPTY)
    }
#else
    for (int i = 0; i < 4; i++) {
        int16_t m = NBI_QT_QEMPTY;
        for (int k = 0; k < 8; k++) m = e[8 * i + k] < m ? e[8 * i + k] : m;
        r[8 * i] = m;
    }
#endif
}

void nbi_node_init(nbiQtNode *n, int32_t parent, int32_t level)
{
    n->child = -1;
    n->parent = parent;
    n->start = 0;
    n->count = 0;
    n->cls = -1;
    n->level = level;
}

// Refreshes node n's hot record.
void nbi_sync(nbQuadtree *q, int32_t n)
{
    const nbiQtNode *node = &NBI_NODES(q)[n];
    nbiQtHot *h = &NBI_HOT(q)[n];
    h->child = node->child;
    h->start = node->start;
    h->count = node->count;
    h->level = nbi_level16(node->level);
    h->cls = (int16_t)node->cls;
    nbi_frame(node, h->fc, h->finv);
}

// Grows the float boxes of node n and its ancestors to hold the float box u (min x, min y,
// -max x, -max y, as a run holds them), up to the first that holds it already (its own
// ancestors then hold it too).
void nbi_bbox_grow_by(nbQuadtree *q, int32_t n, const float u[4])
{
    const nbiQtNode *nodes = NBI_NODES(q);
    while (n >= NBI_QT_GROUPS) {
        float *g = nbi_gb_of(q, n);
        bool grew = false;
        for (int i = 0; i < 4; i++) {
            if (u[i] < g[4 * i]) {
                g[4 * i] = u[i];
                grew = true;
            }
        }
        if (!grew) return;
        n = nodes[n].parent;
    }
}

int32_t nbi_group_take(nbQuadtree *q)
{
    int32_t g;
    if (q->free_group >= 0) {
        g = q->free_group;
        q->free_group = NBI_NODES(q)[g].child;
        q->free_groups--;
    } else {
        NB_ASSERT((size_t)q->node_top + 4 <= q->nodes.cap);
        g = q->node_top;
        q->node_top += 4;
    }
    float *gb = nbi_gb_of(q, g);
    for (int i = 0; i < 16; i++) gb[i] = (float)INFINITY; // four empty boxes
    return g;
}

void nbi_group_give(nbQuadtree *q, int32_t g)
{
    nbiQtNode *n = &NBI_NODES(q)[g];
    for (int k = 0; k < 4; k++) {
        NB_ASSERT(n[k].count == 0 && n[k].cls < 0 && n[k].child < 0);
        n[k].parent = -2;
    }
    n[0].child = q->free_group;
    q->free_group = g;
    q->free_groups++;
}

// Writes a rectangle's data at position `to` of node n, whose block starts at `start`; its slot
// is left to the caller (nbi_put). A bulk build writes a whole block at once instead
// (nbi_build_fill).
static void nbi_put_fields(nbQuadtree *q, int32_t start, int32_t to, int32_t n, const double *b,
                           uint64_t hnd, uint64_t user, uint32_t cat, uint32_t mask)
{
    nbHit *r = nbi_hit_of(q, to);
    nbi_box_put(q, n, start, to, b);
    r->handle.bits = hnd;
    r->user = user;
    NBI_CAT(q)[to] = cat;
    NBI_MASK(q)[to] = mask;
    NBI_OWN(q)[to] = n;
}

void nbi_put_data(nbQuadtree *q, int32_t start, int32_t to, int32_t n, const double *b,
                  uint64_t hnd, uint64_t user, uint32_t cat, uint32_t mask)
{
    nbi_put_fields(q, start, to, n, b, hnd, user, cat, mask);
    const float *f = nbi_fb_at(q, to);
    const float u[4] = {f[0], f[4], f[8], f[12]};
    nbi_bbox_grow_by(q, n, u);
}

// nbi_put_data, and points the rectangle's slot there.
static void nbi_put(nbQuadtree *q, int32_t start, int32_t to, int32_t n, const double *b,
                    uint64_t hnd, uint64_t user, uint32_t cat, uint32_t mask)
{
    nbi_put_data(q, start, to, n, b, hnd, user, cat, mask);
    nbi_pool_set_slot_value(&q->pool, (int32_t)((uint32_t)hnd - 1u), to);
}

// Moves the rectangle at `from` to `to`, now of node n, whose block starts at `start`.
void nbi_move_pos(nbQuadtree *q, int32_t from, int32_t start, int32_t to, int32_t n)
{
    double b[4];
    memcpy(b, NBI_BOX(q)[from].b, sizeof b);
    const nbHit h = *nbi_hit_of(q, from);
    nbi_put(q, start, to, n, b, h.handle.bits, h.user, NBI_CAT(q)[from], NBI_MASK(q)[from]);
}

// The block an append to node n needs: -1 if it has room.
int nbi_append_cls(const nbiQtNode *n)
{
    if (n->cls < 0) return NBI_QT_MIN_CLS;
    return n->count < ((int32_t)1 << n->cls) ? -1 : n->cls + 1;
}

// Appends a rectangle to node n (room prepared); returns its position.
int32_t nbi_append(nbQuadtree *q, int32_t n, const double *b, uint64_t hnd, uint64_t user,
                   uint32_t cat, uint32_t mask)
{
    const int c = nbi_append_cls(&NBI_NODES(q)[n]);
    if (c >= 0) {
        const int32_t s = nbi_block_take(q, c);
        nbi_block_init(q, s, c, s);
        nbiQtNode *node = &NBI_NODES(q)[n];
        const int32_t old = node->start, old_cls = node->cls;
        node->start = s; // first: a put reads the class of the node's block
        node->cls = c;
        for (int32_t i = 0; i < node->count; i++) nbi_move_pos(q, old + i, s, s + i, n);
        if (old_cls >= 0) nbi_block_give(q, old, old_cls);
    }
    nbiQtNode *node = &NBI_NODES(q)[n];
    const int32_t at = node->start + node->count++;
    nbi_put(q, node->start, at, n, b, hnd, user, cat, mask);
    nbi_sync(q, n);
    return at;
}

// Takes the rectangle at position `at` out of its node: the node's last rectangle moves into
// the hole; a node left empty gives its block back.
void nbi_take_out(nbQuadtree *q, int32_t at)
{
    const int32_t n = NBI_OWN(q)[at];
    nbiQtNode *node = &NBI_NODES(q)[n];
    const int32_t last = node->start + node->count - 1;
    if (last != at) nbi_move_pos(q, last, node->start, at, n);
    nbi_fb_clear(q, last);
    if (--node->count == 0) {
        nbi_block_give(q, node->start, node->cls);
        node->cls = -1;
        node->start = 0;
    }
    nbi_sync(q, n);
}

// ---- create, destroy, reserve ----

static void nbi_reset(nbQuadtree *q)
{
    q->count = 0;
    q->nfiltered = 0;
    nbi_arena_reset(&q->arena);
    q->node_top = NBI_QT_GROUPS;
    q->tidy_next = 0;
    q->tidy_credit = 0;
    q->tidy_due = (int64_t)NBI_QT_TIDY_RATIO * NBI_QT_TIDY_MIN;
    q->tidied = 0;
    q->free_group = -1;
    q->free_groups = 0;
    nbiQtNode *nodes = NBI_NODES(q);
    nbiQtNode *r = &nodes[NBI_QT_ROOT];
    nbi_node_init(r, -1, 0);
    for (int a = 0; a < 2; a++) {
        r->clo[a] = q->root0.min[a];
        r->chi[a] = q->root0.max[a];
    }
    nbi_root_bounds(q, r);
    nbi_cell_middle(r, q->fo);
    nbiQtNode *o = &nodes[NBI_QT_OUT];
    nbi_node_init(o, -1, INT32_MIN);
    for (int a = 0; a < 2; a++) {
        o->clo[a] = o->lo[a] = -(double)INFINITY;
        o->chi[a] = o->hi[a] = (double)INFINITY;
    }
    nbi_sync(q, NBI_QT_ROOT);
    nbi_sync(q, NBI_QT_OUT);
    q->grown = 0;
}

// The part of create after the desc was checked: an empty tree with the same settings.
nbStatus nbi_create(const nbAllocator *alloc, const nbRect *root0, int32_t threshold,
                    int32_t max_depth, int32_t placement, nbQuadtree **out)
{
    *out = NULL;
    nbQuadtree *q = nbi_alloc(alloc, 1, sizeof *q);
    if (q == NULL) return NB_ERR_OUT_OF_MEMORY;
    memset(q, 0, sizeof *q);
    q->alloc = *alloc;
    q->threshold = threshold;
    q->max_depth = max_depth;
    q->placement = placement;
    q->root0 = *root0;
    nbStatus st = nbi_pool_init(&q->pool, alloc, 0);
    if (st == NB_OK) {
        q->node_top = NBI_QT_GROUPS;
        q->free_group = -1;
        const nbiQtNeed need = {0, 0, 0, 0, {0}};
        st = nbi_qt_room(q, &need); // the root and the outside list
    }
    if (st != NB_OK) {
        nb_quadtree_destroy(q);
        return st;
    }
    nbi_reset(q);
    *out = q;
    return NB_OK;
}

// Readies what a build of n rectangles fills: the spare layout, made on the first build (with
// the tree's settings and reservation) and emptied on the later ones, its storage kept; and the
// scratch for n. Emptying gives the spare's pool a fresh owner tag, as a new pool would get, so
// that no handle issued before (by either layout) names a rectangle of the build. Changes
// nothing that the tree's contents or handles show; NB_ERR_OUT_OF_MEMORY.
nbStatus nbi_qt_spare(nbQuadtree *q, int32_t n)
{
    if (q->spare == NULL) {
        nbQuadtree *s = NULL;
        nbStatus st =
            nbi_create(&q->alloc, &q->root0, q->threshold, q->max_depth, q->placement, &s);
        if (st == NB_OK && q->reserved > 0) st = nb_quadtree_reserve(s, q->reserved);
        if (st != NB_OK) {
            nb_quadtree_destroy(s);
            return st;
        }
        q->spare = s;
    } else {
        nbQuadtree *s = q->spare;
        const nbiBuf slots = s->pool.slots;
        (void)nbi_pool_init(&s->pool, &s->alloc, 0); // cannot fail: the hooks are resolved
        s->pool.slots = slots;                       // every slot unused: alloc_first may fill
        nbi_reset(s);
    }
    const size_t need = 9 * (size_t)n; // nb_quadtree_build's work (2 int32) and pick (1 byte)
    nbiBuf next;
    if (!nbi_buf_prepare(&q->alloc, &q->scratch, &next, need, 1)) return NB_ERR_OUT_OF_MEMORY;
    nbi_buf_commit(&q->alloc, &q->scratch, &next, 1);
    return NB_OK;
}

// After a build into the spare: its layout becomes the tree's, and the tree's old layout the
// spare (the next build empties it). Cannot fail.
void nbi_qt_swap_spare(nbQuadtree *q)
{
    nbQuadtree *s = q->spare;
    const nbiBuf scratch = q->scratch;
    const nbQuadtree old = *q;
    *q = *s;
    *s = old;
    q->spare = s;
    q->scratch = scratch;
    q->reserved = old.reserved;
    s->spare = NULL;
    s->scratch = (nbiBuf){NULL, 0};
}

nbStatus nb_quadtree_create(const nbQuadtreeDesc *desc, nbQuadtree **out)
{
    if (out == NULL) return NB_ERR_NULL_ARG;
    *out = NULL;
    if (desc == NULL) return NB_ERR_NULL_ARG;
    nbAllocator alloc;
    if (!nbi_allocator(desc->allocator, &alloc)) return NB_ERR_NULL_ARG;
    const nbRect *b = &desc->bounds;
    for (int a = 0; a < 2; a++)
        if (!isfinite(b->min[a]) || !isfinite(b->max[a])) return NB_ERR_NOT_FINITE;
    const bool zero = b->min[0] == 0.0 && b->min[1] == 0.0 && b->max[0] == 0.0 && b->max[1] == 0.0;
    if (!zero && !(b->min[0] < b->max[0] && b->min[1] < b->max[1])) return NB_ERR_OUT_OF_RANGE;
    if (!zero && !(isfinite(b->max[0] - b->min[0]) && isfinite(b->max[1] - b->min[1])))
        return NB_ERR_OUT_OF_RANGE;
    if (desc->split_threshold < 0 || desc->split_threshold > (1 << 20) || desc->max_depth < 0 ||
        desc->max_depth > NB_QUADTREE_MAX_DEPTH || desc->capacity_hint < 0 ||
        desc->capacity_hint > NBI_QT_MAX_ITEMS || desc->placement < 0 ||
        desc->placement > NB_QUADTREE_TIGHT)
        return NB_ERR_OUT_OF_RANGE;
    nbRect root0 = *b;
    if (zero) {
        root0.min[0] = root0.min[1] = -1024.0;
        root0.max[0] = root0.max[1] = 1024.0;
    }
    nbQuadtree *q = NULL;
    nbStatus st = nbi_create(
        &alloc, &root0,
        desc->split_threshold > 0 ? desc->split_threshold : NBI_QT_DEFAULT_THRESHOLD,
        desc->max_depth > 0 ? desc->max_depth : NBI_QT_DEFAULT_DEPTH,
        desc->placement == NB_QUADTREE_TIGHT ? NB_QUADTREE_TIGHT : NB_QUADTREE_LOOSE, &q);
    if (st == NB_OK && desc->capacity_hint > 0) st = nb_quadtree_reserve(q, desc->capacity_hint);
    if (st != NB_OK) {
        nb_quadtree_destroy(q);
        return st;
    }
    *out = q;
    return NB_OK;
}

void nb_quadtree_destroy(nbQuadtree *q)
{
    if (q == NULL) return;
    nbiBuf *pos[NBI_QT_POS_BUFS];
    size_t elem[NBI_QT_POS_BUFS];
    nbi_qt_pos_bufs(q, pos, elem);
    for (int b = 0; b < NBI_QT_POS_BUFS; b++)
        nbi_free(&q->alloc, pos[b]->ptr, pos[b]->cap, elem[b]);
    nbi_free(&q->alloc, q->nodes.ptr, q->nodes.cap, sizeof(nbiQtNode));
    nbi_free(&q->alloc, q->hot.ptr, q->hot.cap, sizeof(nbiQtHot));
    nbi_free(&q->alloc, q->gb.ptr, q->gb.cap, sizeof(nbiQtGb));
    nbi_pool_destroy(&q->pool);
    nb_quadtree_destroy(q->spare);
    nbi_free(&q->alloc, q->scratch.ptr, q->scratch.cap, 1);
    const nbAllocator a = q->alloc;
    nbi_free(&a, q, 1, sizeof *q);
}

nbStatus nb_quadtree_reserve(nbQuadtree *q, int32_t count)
{
    if (q == NULL) return NB_ERR_NULL_ARG;
    if (count < 0 || count > NBI_QT_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    nbiQtNeed need = {0, 0, 0, 0, {0}};
    need.items = count > q->count ? count - q->count : 0;
    // Blocks are at most twice what they hold, plus what waits on the free lists.
    const int64_t positions = 3 * (int64_t)count + 64;
    need.positions = positions > q->arena.top ? positions - q->arena.top : 0;
    const int64_t groups = (int64_t)count / 8 + 16;
    const int64_t used_groups = (q->node_top - NBI_QT_GROUPS) / 4 - q->free_groups;
    need.groups = groups > used_groups ? groups - used_groups : 0;
    // A tree that has been built keeps a second layout for the next build: it too gets room.
    nbStatus st = q->spare != NULL ? nb_quadtree_reserve(q->spare, count) : NB_OK;
    if (st == NB_OK) st = nbi_qt_room(q, &need);
    if (st == NB_OK && count > q->reserved) q->reserved = count;
    return st;
}

void nb_quadtree_clear(nbQuadtree *q)
{
    if (q == NULL) return;
    nbi_pool_clear(&q->pool);
    nbi_reset(q);
}

int32_t nb_quadtree_count(const nbQuadtree *q)
{
    return q == NULL ? 0 : q->count;
}

size_t nb_quadtree_memory_bytes(const nbQuadtree *q)
{
    if (q == NULL) return 0;
    size_t bytes = sizeof *q + nbi_pool_memory_bytes(&q->pool) + q->nodes.cap * sizeof(nbiQtNode) +
                   q->hot.cap * sizeof(nbiQtHot) + q->gb.cap * sizeof(nbiQtGb);
    nbiBuf *pos[NBI_QT_POS_BUFS];
    size_t elem[NBI_QT_POS_BUFS];
    nbi_qt_pos_bufs((nbQuadtree *)q, pos, elem);
    for (int b = 0; b < NBI_QT_POS_BUFS; b++) bytes += pos[b]->cap * elem[b];
    return bytes + q->scratch.cap + nb_quadtree_memory_bytes(q->spare);
}

nbStatus nb_quadtree_visit_nodes(const nbQuadtree *q, nbQuadtreeNodeFn *visit, void *user)
{
    if (q == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    const nbiQtNode *nodes = NBI_NODES(q);
    int32_t stack[NBI_QT_STACK];
    int top = 0;
    stack[top++] = NBI_QT_ROOT;
    const int32_t root_level = nodes[NBI_QT_ROOT].level;
    while (top > 0) {
        const nbiQtNode *n = &nodes[stack[--top]];
        nbQuadtreeNode v;
        for (int a = 0; a < 2; a++) {
            v.cell.min[a] = n->clo[a];
            v.cell.max[a] = n->chi[a];
            v.bounds.min[a] = n->lo[a];
            v.bounds.max[a] = n->hi[a];
        }
        v.depth = n->level - root_level;
        v.count = n->count;
        v.leaf = n->child < 0;
        if (!visit(&v, user)) break;
        if (!v.leaf)
            for (int k = 3; k >= 0; k--) stack[top++] = n->child + k;
    }
    return NB_OK;
}

static bool nbi_info_node(const nbQuadtreeNode *n, void *user)
{
    nbQuadtreeInfo *out = (nbQuadtreeInfo *)user;
    out->nodes++;
    if (n->depth > out->depth) out->depth = n->depth;
    if (n->leaf)
        out->leaves++;
    else
        out->held_above += n->count;
    return true;
}

nbStatus nb_quadtree_info(const nbQuadtree *q, nbQuadtreeInfo *out)
{
    if (out != NULL) memset(out, 0, sizeof *out);
    if (q == NULL || out == NULL) return NB_ERR_NULL_ARG;
    const nbiQtNode *nodes = NBI_NODES(q);
    out->count = q->count;
    out->outside = nodes[NBI_QT_OUT].count;
    out->root_grown = q->grown;
    for (int a = 0; a < 2; a++) {
        out->root.min[a] = nodes[NBI_QT_ROOT].clo[a];
        out->root.max[a] = nodes[NBI_QT_ROOT].chi[a];
    }
    out->bytes = nb_quadtree_memory_bytes(q);
    out->tidied = q->tidied;
    return nb_quadtree_visit_nodes(q, nbi_info_node, out);
}
