// SPDX-License-Identifier: MIT
// The quadtree's invariants, checked (nb_quadtree_validate; quadtree_internal.h lists them).
#include "quadtree_internal.h"

// ---- validate ----

static nbStatus nbi_validate_node(const nbQuadtree *q, int32_t n, int64_t *items, int64_t *blocks)
{
    const nbiQtNode *nodes = NBI_NODES(q);
    const nbiQtNode *node = &nodes[n];
    NBI_CHECK(node->parent != -2);
    NBI_CHECK(node->count >= 0);
    const nbiQtHot *h = &NBI_HOT(q)[n];
    NBI_CHECK(h->child == node->child && h->count == node->count &&
              h->level == nbi_level16(node->level));
    NBI_CHECK(node->count == 0 || (h->start == node->start && h->cls == node->cls));
    float fc[2], finv[2];
    nbi_frame(node, fc, finv);
    NBI_CHECK(memcmp(fc, h->fc, sizeof fc) == 0 && memcmp(finv, h->finv, sizeof finv) == 0);
    const float *gb = n >= NBI_QT_GROUPS ? nbi_gb_of(q, n) : NULL;
    const float *pgb = node->parent >= NBI_QT_GROUPS ? nbi_gb_of(q, node->parent) : NULL;
    if (gb != NULL && pgb != NULL && gb[0] != (float)INFINITY) // a box within its parent's
        for (int i = 0; i < 4; i++) NBI_CHECK(pgb[4 * i] <= gb[4 * i]);
    if (node->count == 0) {
        NBI_CHECK(node->cls == -1);
    } else {
        NBI_CHECK(node->cls >= NBI_QT_MIN_CLS && node->cls < NBI_ARENA_CLASSES);
        NBI_CHECK(node->count <= ((int64_t)1 << node->cls));
        NBI_CHECK(node->start >= 0 &&
                  (int64_t)node->start + ((int64_t)1 << node->cls) <= q->arena.top);
        *blocks += (int64_t)1 << node->cls;
    }
    for (int32_t i = 0; i < node->count; i++) {
        const int32_t at = node->start + i;
        NBI_CHECK(NBI_OWN(q)[at] == n);
        nbHandle handle = nbi_hit_of(q, at)->handle;
        int32_t slot;
        NBI_CHECK(nbi_pool_lookup(&q->pool, handle, &slot) == NB_OK);
        NBI_CHECK(nbi_pool_slot_value(&q->pool, slot) == at);
        const double *b = NBI_BOX(q)[at].b;
        NBI_CHECK(b[0] <= b[2] && b[1] <= b[3]);
        NBI_CHECK(nbi_within(node, b));
        int u[4]; // its 16-bit box, in its node's frame
        nbi_q4_ref(h, b, b + 2, u);
        for (int k = 0; k < 4; k++) NBI_CHECK(nbi_qb_at(q, at)[8 * k] == u[k]);
        const float *f = nbi_fb_at(q, at); // nbi_fb_put
        NBI_CHECK((double)f[0] <= b[0] - q->fo[0] && (double)f[4] <= b[1] - q->fo[1]);
        NBI_CHECK(b[2] - q->fo[0] <= -(double)f[8] && b[3] - q->fo[1] <= -(double)f[12]);
        if (gb != NULL) // the node's box holds it
            for (int k = 0; k < 4; k++) NBI_CHECK(gb[4 * k] <= f[4 * k]);
        if (node->cls >= NBI_QT_RB_MIN_CLS) { // its run's box holds its 16-bit box
            const int16_t *r = nbi_rb_at(q, node->start, node->cls, i >> 3);
            for (int k = 0; k < 4; k++) NBI_CHECK(r[8 * k] <= nbi_qb_at(q, at)[8 * k]);
        } else { // its segment's box holds its float box
            const float *sg = NBI_SB(q) + nbi_seg_box(node->start, nbi_seg_of(node->start, at));
            for (int k = 0; k < 4; k++) NBI_CHECK(sg[k] <= f[4 * k]);
        }
    }
    // The rest of its block holds no box (searches scan whole runs).
    for (int64_t i = node->count; node->count > 0 && i < ((int64_t)1 << node->cls); i++) {
        const int32_t at = node->start + (int32_t)i;
        const float *f = nbi_fb_at(q, at);
        for (int k = 0; k < 4; k++) NBI_CHECK(isnan(f[4 * k]));
        for (int k = 0; k < 4; k++) NBI_CHECK(nbi_qb_at(q, at)[8 * k] == NBI_QT_QEMPTY);
    }
    *items += node->count;
    if (node->child >= 0) {
        NBI_CHECK(n != NBI_QT_OUT);
        NBI_CHECK(node->child >= NBI_QT_GROUPS && node->child + 4 <= q->node_top);
        NBI_CHECK((node->child - NBI_QT_GROUPS) % 4 == 0);
        NBI_CHECK(node->level < q->max_depth);
        for (int k = 0; k < 4; k++) {
            const nbiQtNode *c = &nodes[node->child + k];
            NBI_CHECK(c->parent == n && c->level == node->level + 1);
            for (int a = 0; a < 2; a++)
                NBI_CHECK(c->lo[a] >= node->lo[a] && c->hi[a] <= node->hi[a]);
        }
    }
    return NB_OK;
}

nbStatus nb_quadtree_validate(const nbQuadtree *q)
{
    if (q == NULL) return NB_ERR_NULL_ARG;
    nbStatus st = nbi_pool_validate(&q->pool);
    if (st != NB_OK) return st;
    NBI_CHECK(q->count == nbi_pool_count(&q->pool));
    NBI_CHECK(q->node_top >= NBI_QT_GROUPS && (size_t)q->node_top <= q->nodes.cap);
    NBI_CHECK(q->arena.top >= 0 && (size_t)q->arena.top <= q->own.cap &&
              (size_t)q->arena.top <= q->box.cap);
    const nbiQtNode *nodes = NBI_NODES(q);
    NBI_CHECK(nodes[NBI_QT_ROOT].parent == -1 && nodes[NBI_QT_OUT].parent == -1);
    NBI_CHECK(nodes[NBI_QT_OUT].child == -1);
    NBI_CHECK(nodes[NBI_QT_ROOT].level == -q->grown);
    int64_t items = 0, blocks = 0, reached = 0;
    int32_t stack[NBI_QT_STACK];
    int top = 0;
    stack[top++] = NBI_QT_OUT;
    stack[top++] = NBI_QT_ROOT;
    while (top > 0) {
        const int32_t n = stack[--top];
        st = nbi_validate_node(q, n, &items, &blocks);
        if (st != NB_OK) return st;
        reached++;
        if (nodes[n].child >= 0) {
            NBI_CHECK(top + 4 <= NBI_QT_STACK);
            for (int k = 3; k >= 0; k--) stack[top++] = nodes[n].child + k;
        }
    }
    NBI_CHECK(items == q->count);
    int64_t filtered = 0;
    for (int32_t p = 0; p < q->arena.top; p++) {
        const int32_t n = NBI_OWN(q)[p];
        if (n < 0 || n >= q->node_top) continue; // a free block's link, or a stale position
        const nbiQtNode *node = &nodes[n];
        if (node->parent == -2 || node->count == 0 || p < node->start ||
            p >= node->start + node->count)
            continue;
        filtered += !nbi_filter_all_bits(NBI_CAT(q)[p], NBI_MASK(q)[p]);
    }
    NBI_CHECK(filtered == q->nfiltered);
    NBI_CHECK(nbi_arena_valid(&q->arena, NBI_OWN(q)));
    // live and free blocks tile the arena (sizes add up)
    NBI_CHECK(blocks + q->arena.free_positions == q->arena.top);
    int64_t free_groups = 0;
    for (int32_t g = q->free_group; g >= 0; g = nodes[g].child) {
        NBI_CHECK(g >= NBI_QT_GROUPS && g + 4 <= q->node_top && nodes[g].parent == -2);
        NBI_CHECK(++free_groups <= q->node_top / 4);
    }
    NBI_CHECK(free_groups == q->free_groups);
    NBI_CHECK(reached - 2 + 4 * free_groups == q->node_top - NBI_QT_GROUPS);
    return NB_OK;
}
