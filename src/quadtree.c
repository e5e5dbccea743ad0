// SPDX-License-Identifier: MIT
// The quadtree of rectangles (include/nearby/quadtree.h).
//
// Nodes live in one array and link by index. Node 0 is the root, node 1 the outside list (a
// leaf with infinite bounds that every query visits and that never splits); children come in
// groups of four contiguous nodes, child k covering the quadrant x-half (k & 1), y-half (k >> 1)
// of its parent. Each node keeps two boxes: its cell (the quadrant, which only places
// rectangles) and its bounds (what queries prune by, and what every rectangle of its subtree
// lies in). Tight placement: bounds = cell, and a rectangle goes into the child whose cell holds
// all of it. Loose placement: bounds = cell enlarged by half its side per edge, clamped to the
// parent's bounds, and a rectangle goes into the child that holds its centre if that child's
// bounds hold all of it. Placement tests the stored bounds, the same doubles queries test, so
// rounding can never put a rectangle outside the box that prunes it.
//
// Rectangles of a node sit in a chain of fixed-size pages (NBI_QT_PAGE positions each): the
// first page of the chain is the only one that may be partly full, so an insert appends to it
// and a removal moves the node's last rectangle (there) into the hole. Per position we keep the
// box, handle bits, user value and filter bits, so a query reads each page front to back. A
// page records its node, so a rectangle's node is found from its position; the handle pool maps
// a handle to its position. Pages and node groups are recycled through free lists: a steady
// moving workload stops allocating once they have grown to its needs.
//
// Everything a change can allocate is prepared first (nbi_qt_room), so a failure leaves the tree
// as it was. Traversals are iterative: the root grows at most NBI_QT_GROW_MAX times and levels
// go at most to NB_QUADTREE_MAX_DEPTH, so a depth-first stack of NBI_QT_STACK entries suffices.
//
// Invariants (nb_quadtree_validate): the pool's own; count == live handles == rectangles in
// nodes; node 0 and 1 are never free; a group's four nodes have the same parent, the next
// level, bounds within the parent's bounds; a node's pages chain holds exactly `count`
// positions, every page but the first full, each page naming the node; each position holds a
// live slot whose pool value is that position and whose box lies within the node's bounds;
// free pages and free groups are chained and counted, and pages in use plus free pages equal
// page_top (likewise groups).
#include <nearby/quadtree.h>

#include "handle_pool.h"

#include <math.h>
#include <string.h>

enum {
    NBI_QT_PAGE = 8,      // positions a page
    NBI_QT_ROOT = 0,      // node index of the root
    NBI_QT_OUT = 1,       // node index of the outside list
    NBI_QT_GROUPS = 2,    // first node index of the groups
    NBI_QT_GROW_MAX = 48, // times the root may double
    NBI_QT_MAX_ITEMS = 1 << 28,
    NBI_QT_STACK = 4 * (NB_QUADTREE_MAX_DEPTH + NBI_QT_GROW_MAX + 4),
    NBI_QT_DEFAULT_THRESHOLD = 8,
    NBI_QT_DEFAULT_DEPTH = 24,
};

typedef struct nbiQtNode {
    double lo[2], hi[2];   // bounds: every rectangle of the subtree lies within (closed)
    double clo[2], chi[2]; // cell: the quadrant; children split it at its middle
    int32_t child;         // first node of the children's group, -1 for a leaf; free: next free
    int32_t parent;        // -1 for the root and the outside list
    int32_t head;          // first page of the chain, -1 when empty
    int32_t count;         // rectangles held by this node
    int32_t level;         // depth: the first root is 0, a grown root negative
} nbiQtNode;

typedef struct nbiQtPage {
    int32_t next; // next page of the node's chain (free: next free page), -1 at the end
    int32_t n;    // positions used, 1..NBI_QT_PAGE (0 when free)
    int32_t node; // the node whose chain it is in, -1 when free
} nbiQtPage;

struct nbQuadtree {
    nbAllocator alloc;
    int32_t threshold, max_depth, placement;
    int32_t count;
    int32_t grown;
    nbRect root0; // the root's first cell (clear restores it)

    nbiPool pool; // a slot's value is its rectangle's position
    nbiBuf nodes; // nbiQtNode
    int32_t node_top, free_group, free_groups;
    nbiBuf pages; // nbiQtPage
    int32_t page_top, free_page, free_pages;
    nbiBuf box;       // double[4] per position: min x, min y, max x, max y
    nbiBuf hnd, user; // uint64_t per position
    nbiBuf cat, mask; // uint32_t per position
};

#define NBI_NODES(q) ((nbiQtNode *)(q)->nodes.ptr)
#define NBI_PAGES(q) ((nbiQtPage *)(q)->pages.ptr)
#define NBI_BOX(q) ((double *)(q)->box.ptr)
#define NBI_HND(q) ((uint64_t *)(q)->hnd.ptr)
#define NBI_USER(q) ((uint64_t *)(q)->user.ptr)
#define NBI_CAT(q) ((uint32_t *)(q)->cat.ptr)
#define NBI_MASK(q) ((uint32_t *)(q)->mask.ptr)

// ---- geometry ----

static nbStatus nbi_rect_check(const nbRect *r)
{
    for (int a = 0; a < 2; a++)
        if (!isfinite(r->min[a]) || !isfinite(r->max[a])) return NB_ERR_NOT_FINITE;
    for (int a = 0; a < 2; a++)
        if (r->min[a] > r->max[a]) return NB_ERR_OUT_OF_RANGE;
    return NB_OK;
}

// Whether box b (min x, min y, max x, max y) lies within the node's bounds.
NBI_INLINE bool nbi_within(const nbiQtNode *n, const double *b)
{
    return b[0] >= n->lo[0] && b[1] >= n->lo[1] && b[2] <= n->hi[0] && b[3] <= n->hi[1];
}

NBI_INLINE bool nbi_touch(const double *a, const double *b)
{
    return a[0] <= b[2] && b[0] <= a[2] && a[1] <= b[3] && b[1] <= a[3];
}

NBI_INLINE bool nbi_node_touch(const nbiQtNode *n, const double *w)
{
    return n->lo[0] <= w[2] && w[0] <= n->hi[0] && n->lo[1] <= w[3] && w[1] <= n->hi[1];
}

// Squared distance from p to the box lo..hi (0 inside): monotone in the box, so a node's value
// never exceeds that of a rectangle within its bounds.
NBI_INLINE double nbi_dist2(const double *p, double lx, double ly, double hx, double hy)
{
    double dx = lx - p[0];
    double t = p[0] - hx;
    dx = dx > t ? dx : t;
    dx = dx > 0.0 ? dx : 0.0;
    double dy = ly - p[1];
    t = p[1] - hy;
    dy = dy > t ? dy : t;
    dy = dy > 0.0 ? dy : 0.0;
    return dx * dx + dy * dy;
}

// A ray: origin, unit direction, its inverse per axis, and the largest t.
typedef struct nbiRay {
    double o[2], d[2], tmax;
} nbiRay;

// Where the ray enters the box (slab test), or -1 when it misses within [0, tmax]. Monotone in
// the box (each bound enters through one subtraction and one division), so nodes prune safely.
NBI_INLINE double nbi_ray_enter(const nbiRay *r, double lx, double ly, double hx, double hy)
{
    double t0 = 0.0, t1 = r->tmax;
    const double lo[2] = {lx, ly}, hi[2] = {hx, hy};
    for (int a = 0; a < 2; a++) {
        if (r->d[a] == 0.0) {
            if (r->o[a] < lo[a] || r->o[a] > hi[a]) return -1.0;
            continue;
        }
        double ta = (lo[a] - r->o[a]) / r->d[a];
        double tb = (hi[a] - r->o[a]) / r->d[a];
        if (ta > tb) {
            double s = ta;
            ta = tb;
            tb = s;
        }
        t0 = ta > t0 ? ta : t0;
        t1 = tb < t1 ? tb : t1;
        if (t0 > t1) return -1.0;
    }
    return t0;
}

NBI_INLINE bool nbi_pass(nbFilter f, uint32_t cat, uint32_t mask)
{
    return (f.category & mask) != 0 && (cat & f.mask) != 0;
}

// ---- storage ----

enum { NBI_QT_POS_BUFS = 5 };

static void nbi_qt_pos_bufs(nbQuadtree *q, nbiBuf *buf[NBI_QT_POS_BUFS],
                            size_t elem[NBI_QT_POS_BUFS])
{
    nbiBuf *b[NBI_QT_POS_BUFS] = {&q->box, &q->hnd, &q->user, &q->cat, &q->mask};
    const size_t e[NBI_QT_POS_BUFS] = {4 * sizeof(double), sizeof(uint64_t), sizeof(uint64_t),
                                       sizeof(uint32_t), sizeof(uint32_t)};
    for (int i = 0; i < NBI_QT_POS_BUFS; i++) {
        buf[i] = b[i];
        elem[i] = e[i];
    }
}

// Installs a prepared buffer, carrying its contents over.
static void nbi_qt_commit(const nbAllocator *a, nbiBuf *cur, const nbiBuf *next, size_t elem)
{
    if (next->ptr != cur->ptr && cur->ptr != NULL) memcpy(next->ptr, cur->ptr, cur->cap * elem);
    nbi_buf_commit(a, cur, next, elem);
}

// Makes room for `items` more handles, `pages` more pages and `groups` more node groups, all
// or nothing. Afterwards the change that asked cannot fail.
static nbStatus nbi_qt_room(nbQuadtree *q, int32_t items, int64_t pages, int64_t groups)
{
    if ((int64_t)q->count + items > NBI_QT_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    const int64_t page_need =
        (int64_t)q->page_top + (pages > q->free_pages ? pages - q->free_pages : 0);
    const int64_t node_need =
        (int64_t)q->node_top + 4 * (groups > q->free_groups ? groups - q->free_groups : 0);
    if (page_need * NBI_QT_PAGE > INT32_MAX || node_need > INT32_MAX) return NB_ERR_OUT_OF_RANGE;
    nbiBuf *pos[NBI_QT_POS_BUFS];
    size_t elem[NBI_QT_POS_BUFS];
    nbi_qt_pos_bufs(q, pos, elem);
    bool room = nbi_pool_room(&q->pool) >= items && (size_t)page_need <= q->pages.cap &&
                (size_t)node_need <= q->nodes.cap;
    for (int b = 0; b < NBI_QT_POS_BUFS && room; b++)
        room = (size_t)(page_need * NBI_QT_PAGE) <= pos[b]->cap;
    if (room) return NB_OK;

    nbiPoolPrep prep;
    nbStatus st = nbi_pool_prepare(&q->pool, items, &prep);
    if (st != NB_OK) return st;
    nbiBuf next_pos[NBI_QT_POS_BUFS];
    nbiBuf next_pages, next_nodes;
    int done = 0;
    bool ok =
        nbi_buf_prepare(&q->alloc, &q->pages, &next_pages, (size_t)page_need, sizeof(nbiQtPage));
    if (ok) {
        ok = nbi_buf_prepare(&q->alloc, &q->nodes, &next_nodes, (size_t)node_need,
                             sizeof(nbiQtNode));
        if (!ok) nbi_buf_abandon(&q->alloc, &q->pages, &next_pages, sizeof(nbiQtPage));
    }
    for (; ok && done < NBI_QT_POS_BUFS; done++) {
        // Position buffers follow the page buffer's capacity, so they never lag behind it.
        const size_t need = next_pages.cap * NBI_QT_PAGE;
        if (!nbi_buf_prepare(&q->alloc, pos[done], &next_pos[done], need, elem[done])) {
            for (int f = 0; f < done; f++)
                nbi_buf_abandon(&q->alloc, pos[f], &next_pos[f], elem[f]);
            nbi_buf_abandon(&q->alloc, &q->pages, &next_pages, sizeof(nbiQtPage));
            nbi_buf_abandon(&q->alloc, &q->nodes, &next_nodes, sizeof(nbiQtNode));
            ok = false;
        }
    }
    if (!ok) {
        nbi_pool_abandon(&q->pool, &prep);
        return NB_ERR_OUT_OF_MEMORY;
    }
    nbi_pool_commit(&q->pool, &prep);
    for (int b = 0; b < NBI_QT_POS_BUFS; b++)
        nbi_qt_commit(&q->alloc, pos[b], &next_pos[b], elem[b]);
    nbi_qt_commit(&q->alloc, &q->pages, &next_pages, sizeof(nbiQtPage));
    nbi_qt_commit(&q->alloc, &q->nodes, &next_nodes, sizeof(nbiQtNode));
    return NB_OK;
}

static int32_t nbi_page_take(nbQuadtree *q, int32_t node)
{
    int32_t p;
    if (q->free_page >= 0) {
        p = q->free_page;
        q->free_page = NBI_PAGES(q)[p].next;
        q->free_pages--;
    } else {
        NB_ASSERT((size_t)q->page_top < q->pages.cap);
        p = q->page_top++;
    }
    nbiQtPage *pg = &NBI_PAGES(q)[p];
    pg->n = 0;
    pg->node = node;
    pg->next = -1;
    return p;
}

static void nbi_page_give(nbQuadtree *q, int32_t p)
{
    nbiQtPage *pg = &NBI_PAGES(q)[p];
    pg->n = 0;
    pg->node = -1;
    pg->next = q->free_page;
    q->free_page = p;
    q->free_pages++;
}

static void nbi_node_init(nbiQtNode *n, int32_t parent, int32_t level)
{
    n->child = -1;
    n->parent = parent;
    n->head = -1;
    n->count = 0;
    n->level = level;
}

static int32_t nbi_group_take(nbQuadtree *q)
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
    return g;
}

static void nbi_group_give(nbQuadtree *q, int32_t g)
{
    nbiQtNode *n = &NBI_NODES(q)[g];
    for (int k = 0; k < 4; k++) {
        n[k].parent = -2; // marks a free group
        n[k].head = -1;
        n[k].count = 0;
        n[k].child = -1;
    }
    n[0].child = q->free_group;
    q->free_group = g;
    q->free_groups++;
}

// Copies a rectangle's data to position `to` (from the caller's values).
static void nbi_put(nbQuadtree *q, int32_t to, const double *b, uint64_t hnd, uint64_t user,
                    uint32_t cat, uint32_t mask)
{
    memcpy(NBI_BOX(q) + 4 * (size_t)to, b, 4 * sizeof(double));
    NBI_HND(q)[to] = hnd;
    NBI_USER(q)[to] = user;
    NBI_CAT(q)[to] = cat;
    NBI_MASK(q)[to] = mask;
    nbi_pool_set_slot_value(&q->pool, (int32_t)((uint32_t)hnd - 1u), to);
}

// Appends a rectangle to node `n` (room prepared); returns its position.
static int32_t nbi_append(nbQuadtree *q, int32_t n, const double *b, uint64_t hnd, uint64_t user,
                          uint32_t cat, uint32_t mask)
{
    nbiQtNode *node = &NBI_NODES(q)[n];
    int32_t p = node->head;
    if (p < 0 || NBI_PAGES(q)[p].n == NBI_QT_PAGE) {
        int32_t fresh = nbi_page_take(q, n);
        node = &NBI_NODES(q)[n];
        NBI_PAGES(q)[fresh].next = p;
        node->head = fresh;
        p = fresh;
    }
    const int32_t at = p * NBI_QT_PAGE + NBI_PAGES(q)[p].n++;
    node->count++;
    nbi_put(q, at, b, hnd, user, cat, mask);
    return at;
}

// Takes the rectangle at position `at` out of its node: the node's last rectangle (the last of
// its first page) moves into the hole.
static void nbi_take_out(nbQuadtree *q, int32_t at)
{
    const int32_t n = NBI_PAGES(q)[at / NBI_QT_PAGE].node;
    nbiQtNode *node = &NBI_NODES(q)[n];
    const int32_t head = node->head;
    nbiQtPage *hp = &NBI_PAGES(q)[head];
    const int32_t last = head * NBI_QT_PAGE + hp->n - 1;
    if (last != at)
        nbi_put(q, at, NBI_BOX(q) + 4 * (size_t)last, NBI_HND(q)[last], NBI_USER(q)[last],
                NBI_CAT(q)[last], NBI_MASK(q)[last]);
    hp->n--;
    node->count--;
    if (hp->n == 0) {
        node->head = hp->next;
        nbi_page_give(q, head);
    }
}

// ---- placement ----

// Fills child k's cell and bounds from its parent.
static void nbi_child_geometry(const nbQuadtree *q, const nbiQtNode *parent, int k, nbiQtNode *c)
{
    for (int a = 0; a < 2; a++) {
        const double mid = 0.5 * (parent->clo[a] + parent->chi[a]);
        const bool upper = a == 0 ? (k & 1) != 0 : (k & 2) != 0;
        c->clo[a] = upper ? mid : parent->clo[a];
        c->chi[a] = upper ? parent->chi[a] : mid;
        if (q->placement == NB_QUADTREE_TIGHT) {
            c->lo[a] = c->clo[a];
            c->hi[a] = c->chi[a];
        } else {
            const double half = 0.5 * (c->chi[a] - c->clo[a]);
            c->lo[a] = c->clo[a] - half;
            c->hi[a] = c->chi[a] + half;
        }
        c->lo[a] = c->lo[a] > parent->lo[a] ? c->lo[a] : parent->lo[a];
        c->hi[a] = c->hi[a] < parent->hi[a] ? c->hi[a] : parent->hi[a];
    }
}

// The child of internal node `n` that takes box b, or -1 when b stays in n.
NBI_INLINE int32_t nbi_pick(const nbQuadtree *q, const nbiQtNode *n, const double *b)
{
    int k = 0;
    for (int a = 0; a < 2; a++) {
        const double mid = 0.5 * (n->clo[a] + n->chi[a]);
        if (q->placement == NB_QUADTREE_TIGHT) {
            if (b[2 + a] <= mid) continue;
            if (b[a] < mid) return -1;
        } else if (0.5 * (b[a] + b[2 + a]) < mid) {
            continue;
        }
        k |= 1 << a;
    }
    const int32_t c = n->child + k;
    return nbi_within(&NBI_NODES(q)[c], b) ? c : -1;
}

// The node that takes box b, descending from `from` (whose bounds hold b).
static int32_t nbi_descend(const nbQuadtree *q, int32_t from, const double *b)
{
    int32_t n = from;
    for (;;) {
        const nbiQtNode *node = &NBI_NODES(q)[n];
        if (node->child < 0) return n;
        const int32_t c = nbi_pick(q, node, b);
        if (c < 0) return n;
        n = c;
    }
}

// The root's bounds for a cell (before any clamping: the root has no parent).
static void nbi_root_bounds(const nbQuadtree *q, nbiQtNode *r)
{
    for (int a = 0; a < 2; a++) {
        const double half = q->placement == NB_QUADTREE_TIGHT ? 0.0 : 0.5 * (r->chi[a] - r->clo[a]);
        r->lo[a] = r->clo[a] - half;
        r->hi[a] = r->chi[a] + half;
    }
}

// How many doublings the root needs before its bounds hold b: 0 if they do now, -1 if more
// than the limit allows (b then goes to the outside list).
static int nbi_growth(const nbQuadtree *q, const double *b)
{
    nbiQtNode r = NBI_NODES(q)[NBI_QT_ROOT];
    if (nbi_within(&r, b)) return 0;
    for (int g = 1; g <= NBI_QT_GROW_MAX - q->grown; g++) {
        for (int a = 0; a < 2; a++) {
            const double side = r.chi[a] - r.clo[a];
            if (b[a] < r.lo[a])
                r.clo[a] -= side;
            else
                r.chi[a] += side;
        }
        nbi_root_bounds(q, &r);
        if (!isfinite(r.lo[0] + r.lo[1] + r.hi[0] + r.hi[1])) return -1;
        if (nbi_within(&r, b)) return g;
    }
    return -1;
}

// Doubles the root once towards b (a group prepared): the old root becomes one of the new
// root's four children.
static void nbi_grow(nbQuadtree *q, const double *b)
{
    const int32_t g = nbi_group_take(q);
    nbiQtNode *nodes = NBI_NODES(q);
    nbiQtNode old = nodes[NBI_QT_ROOT];
    nbiQtNode *root = &nodes[NBI_QT_ROOT];
    int k = 0;
    for (int a = 0; a < 2; a++) {
        const double side = old.chi[a] - old.clo[a];
        if (b[a] < old.lo[a]) {
            root->clo[a] = old.clo[a] - side;
            k |= 1 << a; // the old root is the upper half
        } else {
            root->chi[a] = old.chi[a] + side;
        }
    }
    nbi_root_bounds(q, root);
    root->child = g;
    root->head = -1;
    root->count = 0;
    root->level = old.level - 1;
    for (int c = 0; c < 4; c++) {
        nbiQtNode *ch = &nodes[g + c];
        if (c == k) {
            *ch = old;
            ch->parent = NBI_QT_ROOT;
            if (ch->child >= 0)
                for (int j = 0; j < 4; j++) nodes[ch->child + j].parent = g + c;
            for (int32_t p = ch->head; p >= 0; p = NBI_PAGES(q)[p].next)
                NBI_PAGES(q)[p].node = g + c;
            continue;
        }
        nbi_node_init(ch, NBI_QT_ROOT, old.level);
        nbi_child_geometry(q, root, c, ch);
    }
    q->grown++;
}

// Splits leaf n (a group and its pages prepared): its rectangles go down where they fit.
static void nbi_split(nbQuadtree *q, int32_t n)
{
    const int32_t g = nbi_group_take(q);
    nbiQtNode *nodes = NBI_NODES(q);
    for (int k = 0; k < 4; k++) {
        nbi_node_init(&nodes[g + k], n, nodes[n].level + 1);
        nbi_child_geometry(q, &nodes[n], k, &nodes[g + k]);
    }
    nodes[n].child = g;
    int32_t chain = nodes[n].head;
    nodes[n].head = -1;
    nodes[n].count = 0;
    while (chain >= 0) {
        const nbiQtPage pg = NBI_PAGES(q)[chain];
        for (int32_t i = 0; i < pg.n; i++) {
            const int32_t at = chain * NBI_QT_PAGE + i;
            const double *b = NBI_BOX(q) + 4 * (size_t)at;
            int32_t c = nbi_pick(q, &NBI_NODES(q)[n], b);
            double copy[4];
            memcpy(copy, b, sizeof copy);
            nbi_append(q, c >= 0 ? c : n, copy, NBI_HND(q)[at], NBI_USER(q)[at], NBI_CAT(q)[at],
                       NBI_MASK(q)[at]);
        }
        nbi_page_give(q, chain);
        chain = pg.next;
    }
}

// Pages a split of node n would need: its rectangles may all land anywhere.
static int64_t nbi_split_pages(const nbQuadtree *q, int32_t n)
{
    const nbiQtNode *node = &NBI_NODES(q)[n];
    if (n == NBI_QT_OUT || node->child >= 0 || node->count + 1 <= q->threshold ||
        node->level >= q->max_depth)
        return 0;
    return (node->count + 1) / NBI_QT_PAGE + 5;
}

// A placement decided before anything changes: the root's growth, then the target node.
typedef struct nbiQtPlan {
    int grow;       // doublings of the root first
    int32_t target; // the node (when grow == 0), NBI_QT_OUT for the outside list
    int64_t pages;  // pages to prepare
    int64_t groups; // groups to prepare
} nbiQtPlan;

static void nbi_plan(const nbQuadtree *q, const double *b, nbiQtPlan *plan)
{
    plan->grow = nbi_growth(q, b);
    plan->target = -1;
    if (plan->grow < 0) {
        plan->grow = 0;
        plan->target = NBI_QT_OUT;
        plan->pages = 1;
        plan->groups = 0;
    } else if (plan->grow > 0) {
        plan->pages = 1; // it lands in the new root or a new, empty child of it
        plan->groups = plan->grow;
    } else {
        plan->target = nbi_descend(q, NBI_QT_ROOT, b);
        const int64_t split = nbi_split_pages(q, plan->target);
        plan->pages = 1 + split;
        plan->groups = split > 0 ? 1 : 0;
    }
}

// Carries out a plan whose room is prepared: returns the new position.
static int32_t nbi_place(nbQuadtree *q, const nbiQtPlan *plan, const double *b, uint64_t hnd,
                         uint64_t user, uint32_t cat, uint32_t mask)
{
    int32_t target = plan->target;
    if (target < 0) {
        for (int g = 0; g < plan->grow; g++) nbi_grow(q, b);
        target = nbi_descend(q, NBI_QT_ROOT, b);
        NB_ASSERT(nbi_split_pages(q, target) == 0);
    }
    int32_t at = nbi_append(q, target, b, hnd, user, cat, mask);
    const nbiQtNode *t = &NBI_NODES(q)[target];
    if (target != NBI_QT_OUT && t->child < 0 && t->count > q->threshold &&
        t->level < q->max_depth) {
        nbi_split(q, target);
        at = nbi_pool_slot_value(&q->pool, (int32_t)((uint32_t)hnd - 1u));
    }
    return at;
}

// After node n lost a rectangle: frees groups of four empty leaves, upwards.
static void nbi_collapse(nbQuadtree *q, int32_t n)
{
    nbiQtNode *nodes = NBI_NODES(q);
    if (n == NBI_QT_OUT) return;
    if (nodes[n].child < 0) n = nodes[n].parent;
    while (n >= 0) {
        nbiQtNode *node = &nodes[n];
        const int32_t g = node->child;
        if (g < 0) break;
        for (int k = 0; k < 4; k++)
            if (nodes[g + k].child >= 0 || nodes[g + k].count > 0) return;
        nbi_group_give(q, g);
        node->child = -1;
        if (node->count > 0) return;
        n = node->parent;
    }
}

// ---- create, destroy, reserve ----

static void nbi_reset_root(nbQuadtree *q)
{
    nbiQtNode *nodes = NBI_NODES(q);
    nbiQtNode *r = &nodes[NBI_QT_ROOT];
    nbi_node_init(r, -1, 0);
    for (int a = 0; a < 2; a++) {
        r->clo[a] = q->root0.min[a];
        r->chi[a] = q->root0.max[a];
    }
    nbi_root_bounds(q, r);
    nbiQtNode *o = &nodes[NBI_QT_OUT];
    nbi_node_init(o, -1, INT32_MIN);
    for (int a = 0; a < 2; a++) {
        o->clo[a] = o->lo[a] = -(double)INFINITY;
        o->chi[a] = o->hi[a] = (double)INFINITY;
    }
    q->grown = 0;
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
    nbQuadtree *q = nbi_alloc(&alloc, 1, sizeof *q);
    if (q == NULL) return NB_ERR_OUT_OF_MEMORY;
    memset(q, 0, sizeof *q);
    q->alloc = alloc;
    q->threshold = desc->split_threshold > 0 ? desc->split_threshold : NBI_QT_DEFAULT_THRESHOLD;
    q->max_depth = desc->max_depth > 0 ? desc->max_depth : NBI_QT_DEFAULT_DEPTH;
    q->placement = desc->placement == NB_QUADTREE_TIGHT ? NB_QUADTREE_TIGHT : NB_QUADTREE_LOOSE;
    if (zero) {
        q->root0.min[0] = q->root0.min[1] = -1024.0;
        q->root0.max[0] = q->root0.max[1] = 1024.0;
    } else {
        q->root0 = *b;
    }
    q->free_group = q->free_page = -1;
    nbStatus st = nbi_pool_init(&q->pool, &alloc, 0);
    if (st == NB_OK) {
        q->node_top = 0;
        st = nbi_qt_room(q, 0, 1, 1); // room for the two fixed nodes (and a first page)
        q->node_top = NBI_QT_GROUPS;
    }
    if (st == NB_OK && desc->capacity_hint > 0) st = nb_quadtree_reserve(q, desc->capacity_hint);
    if (st != NB_OK) {
        nb_quadtree_destroy(q);
        return st;
    }
    nbi_reset_root(q);
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
    nbi_free(&q->alloc, q->pages.ptr, q->pages.cap, sizeof(nbiQtPage));
    nbi_free(&q->alloc, q->nodes.ptr, q->nodes.cap, sizeof(nbiQtNode));
    nbi_pool_destroy(&q->pool);
    const nbAllocator a = q->alloc;
    nbi_free(&a, q, 1, sizeof *q);
}

nbStatus nb_quadtree_reserve(nbQuadtree *q, int32_t count)
{
    if (q == NULL) return NB_ERR_NULL_ARG;
    if (count < 0 || count > NBI_QT_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    const int32_t items = count > q->count ? count - q->count : 0;
    const int64_t pages = (int64_t)count / 2 + 64;
    const int64_t groups = (int64_t)count / 8 + 16;
    const int64_t used_pages = q->page_top - q->free_pages;
    const int64_t used_groups = (q->node_top - NBI_QT_GROUPS) / 4 - q->free_groups;
    return nbi_qt_room(q, items, pages > used_pages ? pages - used_pages : 0,
                       groups > used_groups ? groups - used_groups : 0);
}

void nb_quadtree_clear(nbQuadtree *q)
{
    if (q == NULL) return;
    nbi_pool_clear(&q->pool);
    q->count = 0;
    q->page_top = 0;
    q->free_page = -1;
    q->free_pages = 0;
    q->node_top = NBI_QT_GROUPS;
    q->free_group = -1;
    q->free_groups = 0;
    nbi_reset_root(q);
}

int32_t nb_quadtree_count(const nbQuadtree *q)
{
    return q == NULL ? 0 : q->count;
}

size_t nb_quadtree_memory_bytes(const nbQuadtree *q)
{
    if (q == NULL) return 0;
    return sizeof *q + nbi_pool_memory_bytes(&q->pool) + q->nodes.cap * sizeof(nbiQtNode) +
           q->pages.cap * sizeof(nbiQtPage) +
           q->box.cap * (4 * sizeof(double) + 2 * sizeof(uint64_t) + 2 * sizeof(uint32_t));
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
    int32_t stack[NBI_QT_STACK];
    int top = 0;
    stack[top++] = NBI_QT_ROOT;
    const int32_t root_level = nodes[NBI_QT_ROOT].level;
    while (top > 0) {
        const nbiQtNode *n = &nodes[stack[--top]];
        out->nodes++;
        if (n->level - root_level > out->depth) out->depth = n->level - root_level;
        if (n->child < 0) {
            out->leaves++;
            continue;
        }
        out->held_above += n->count;
        for (int k = 3; k >= 0; k--) stack[top++] = n->child + k;
    }
    return NB_OK;
}

// ---- insert, move, remove ----

nbStatus nb_quadtree_insert(nbQuadtree *q, const nbRect *rect, uint64_t user, nbFilter filter,
                            nbHandle *out)
{
    if (out != NULL) *out = NB_HANDLE_NULL;
    if (q == NULL || rect == NULL || out == NULL) return NB_ERR_NULL_ARG;
    nbStatus st = nbi_rect_check(rect);
    if (st != NB_OK) return st;
    const double b[4] = {rect->min[0], rect->min[1], rect->max[0], rect->max[1]};
    nbiQtPlan plan;
    nbi_plan(q, b, &plan);
    st = nbi_qt_room(q, 1, plan.pages, plan.groups);
    if (st != NB_OK) return st;
    nbHandle h;
    st = nbi_pool_alloc(&q->pool, 0, &h);
    if (st != NB_OK) return st; // cannot happen: room was prepared
    nbi_place(q, &plan, b, h.bits, user, filter.category, filter.mask);
    q->count++;
    *out = h;
    return NB_OK;
}

nbStatus nb_quadtree_move(nbQuadtree *q, nbHandle item, const nbRect *rect)
{
    if (q == NULL || rect == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    nbStatus st = nbi_pool_lookup(&q->pool, item, &slot);
    if (st != NB_OK) return st;
    st = nbi_rect_check(rect);
    if (st != NB_OK) return st;
    const double b[4] = {rect->min[0], rect->min[1], rect->max[0], rect->max[1]};
    int32_t at = nbi_pool_slot_value(&q->pool, slot);
    const int32_t n = NBI_PAGES(q)[at / NBI_QT_PAGE].node;
    if (n != NBI_QT_OUT && nbi_within(&NBI_NODES(q)[n], b)) { // stays: nothing else changes
        memcpy(NBI_BOX(q) + 4 * (size_t)at, b, sizeof b);
        return NB_OK;
    }
    nbiQtPlan plan;
    nbi_plan(q, b, &plan);
    if (plan.target == NBI_QT_OUT && n == NBI_QT_OUT) {
        memcpy(NBI_BOX(q) + 4 * (size_t)at, b, sizeof b);
        return NB_OK;
    }
    st = nbi_qt_room(q, 0, plan.pages, plan.groups);
    if (st != NB_OK) return st;
    // Place the new copy first, then take the old one out: the new one is in another node
    // (b is not within the old node's bounds, nor so within any node under it).
    const uint64_t hnd = NBI_HND(q)[at], user = NBI_USER(q)[at];
    const uint32_t cat = NBI_CAT(q)[at], mask = NBI_MASK(q)[at];
    const int32_t old_at = at;
    nbi_place(q, &plan, b, hnd, user, cat, mask);
    const int32_t old_node = NBI_PAGES(q)[old_at / NBI_QT_PAGE].node; // the root may have moved
    const int32_t now = nbi_pool_slot_value(&q->pool, slot);
    NB_ASSERT(NBI_PAGES(q)[now / NBI_QT_PAGE].node != old_node);
    // nbi_take_out moves the old node's last rectangle into the hole and repoints its slot;
    // the slot of the moved item must keep pointing at the new copy.
    nbi_take_out(q, old_at);
    nbi_pool_set_slot_value(&q->pool, slot, now);
    nbi_collapse(q, old_node);
    return NB_OK;
}

nbStatus nb_quadtree_remove(nbQuadtree *q, nbHandle item)
{
    if (q == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    nbStatus st = nbi_pool_lookup(&q->pool, item, &slot);
    if (st != NB_OK) return st;
    const int32_t at = nbi_pool_slot_value(&q->pool, slot);
    const int32_t n = NBI_PAGES(q)[at / NBI_QT_PAGE].node;
    nbi_take_out(q, at);
    nbi_pool_free(&q->pool, item, NULL);
    q->count--;
    nbi_collapse(q, n);
    return NB_OK;
}

nbStatus nb_quadtree_get(const nbQuadtree *q, nbHandle item, nbRect *rect, uint64_t *user,
                         nbFilter *filter)
{
    if (q == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    nbStatus st = nbi_pool_lookup(&q->pool, item, &slot);
    if (st != NB_OK) return st;
    const int32_t at = nbi_pool_slot_value(&q->pool, slot);
    const double *b = NBI_BOX(q) + 4 * (size_t)at;
    if (rect != NULL) {
        rect->min[0] = b[0];
        rect->min[1] = b[1];
        rect->max[0] = b[2];
        rect->max[1] = b[3];
    }
    if (user != NULL) *user = NBI_USER(q)[at];
    if (filter != NULL) {
        filter->category = NBI_CAT(q)[at];
        filter->mask = NBI_MASK(q)[at];
    }
    return NB_OK;
}

nbStatus nb_quadtree_set(nbQuadtree *q, nbHandle item, uint64_t user, nbFilter filter)
{
    if (q == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    nbStatus st = nbi_pool_lookup(&q->pool, item, &slot);
    if (st != NB_OK) return st;
    const int32_t at = nbi_pool_slot_value(&q->pool, slot);
    NBI_USER(q)[at] = user;
    NBI_CAT(q)[at] = filter.category;
    NBI_MASK(q)[at] = filter.mask;
    return NB_OK;
}

// ---- result sinks ----

enum { NBI_QS_COUNT, NBI_QS_BUFFER, NBI_QS_VISIT };

typedef struct nbiQtSink {
    int mode;
    bool stop;
    nbHit *out;
    int64_t cap;
    int64_t found;
    nbHitFn *fn;
    nbHitPairFn *pfn;
    nbHitPair *pout;
    void *user;
} nbiQtSink;

NBI_INLINE nbHit nbi_hit_at(const nbQuadtree *q, int32_t p)
{
    nbHit h;
    h.handle.bits = NBI_HND(q)[p];
    h.user = NBI_USER(q)[p];
    return h;
}

NBI_INLINE void nbi_sink_hit(nbiQtSink *s, const nbQuadtree *q, int32_t p)
{
    if (s->mode == NBI_QS_VISIT) {
        if (!s->fn(nbi_hit_at(q, p), s->user)) s->stop = true;
        return;
    }
    if (s->mode == NBI_QS_BUFFER && s->found < s->cap) s->out[s->found] = nbi_hit_at(q, p);
    s->found++;
}

NBI_INLINE void nbi_sink_pair(nbiQtSink *s, const nbQuadtree *q, int32_t pa, int32_t pb)
{
    if (s->mode == NBI_QS_VISIT) {
        if (!s->pfn(nbi_hit_at(q, pa), nbi_hit_at(q, pb), s->user)) s->stop = true;
        return;
    }
    if (s->mode == NBI_QS_BUFFER && s->found < s->cap) {
        s->pout[s->found].a = nbi_hit_at(q, pa);
        s->pout[s->found].b = nbi_hit_at(q, pb);
    }
    s->found++;
}

// ---- window and radius searches ----

enum { NBI_Q_BOX, NBI_Q_CIRCLE };

// Depth-first over the nodes whose bounds meet the search, root first, then the outside list.
// Box: w is the window. A NULL filter visits every rectangle (visit_all). Circle: w is the circle's bounding box, c its centre, r2 its radius^2.
static void nbi_search(const nbQuadtree *q, int kind, const double *w, const double *c, double r2,
                       const nbFilter *f, nbiQtSink *s)
{
    const nbiQtNode *nodes = NBI_NODES(q);
    const nbiQtPage *pages = NBI_PAGES(q);
    const double *box = NBI_BOX(q);
    int32_t stack[NBI_QT_STACK];
    int top = 0;
    stack[top++] = NBI_QT_OUT;
    stack[top++] = NBI_QT_ROOT;
    while (top > 0 && !s->stop) {
        const nbiQtNode *n = &nodes[stack[--top]];
        if (!nbi_node_touch(n, w)) continue;
        if (kind == NBI_Q_CIRCLE && nbi_dist2(c, n->lo[0], n->lo[1], n->hi[0], n->hi[1]) > r2)
            continue;
        for (int32_t pg = n->head; pg >= 0 && !s->stop; pg = pages[pg].next) {
            const int32_t base = pg * NBI_QT_PAGE, end = base + pages[pg].n;
            for (int32_t p = base; p < end; p++) {
                const double *b = box + 4 * (size_t)p;
                if (!nbi_touch(b, w)) continue;
                if (kind == NBI_Q_CIRCLE && nbi_dist2(c, b[0], b[1], b[2], b[3]) > r2) continue;
                if (f != NULL && !nbi_pass(*f, NBI_CAT(q)[p], NBI_MASK(q)[p])) continue;
                nbi_sink_hit(s, q, p);
                if (s->stop) break;
            }
        }
        if (n->child >= 0)
            for (int k = 3; k >= 0; k--) stack[top++] = n->child + k;
    }
}

static nbStatus nbi_window_check(const nbRect *w)
{
    for (int a = 0; a < 2; a++)
        if (isnan(w->min[a]) || isnan(w->max[a])) return NB_ERR_NOT_FINITE;
    for (int a = 0; a < 2; a++)
        if (w->min[a] > w->max[a]) return NB_ERR_OUT_OF_RANGE;
    return NB_OK;
}

static nbStatus nbi_finish(const nbiQtSink *s, int32_t *found)
{
    if (s->found > INT32_MAX) { // cannot happen: at most 2^28 rectangles
        *found = INT32_MAX;
        return NB_ERR_INTERNAL;
    }
    *found = (int32_t)s->found;
    return s->mode == NBI_QS_BUFFER && s->found > s->cap ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

static void nbi_sink_init(nbiQtSink *s, int mode)
{
    memset(s, 0, sizeof *s);
    s->mode = mode;
}

nbStatus nb_quadtree_query_box(const nbQuadtree *q, const nbRect *window, nbFilter filter,
                               nbHit *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || window == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    nbStatus st = nbi_window_check(window);
    if (st != NB_OK) return st;
    if (capacity < 0) return NB_ERR_OUT_OF_RANGE;
    const double w[4] = {window->min[0], window->min[1], window->max[0], window->max[1]};
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_BUFFER);
    s.out = out;
    s.cap = capacity;
    nbi_search(q, NBI_Q_BOX, w, NULL, 0.0, &filter, &s);
    return nbi_finish(&s, found);
}

nbStatus nb_quadtree_visit_box(const nbQuadtree *q, const nbRect *window, nbFilter filter,
                               nbHitFn *visit, void *user)
{
    if (q == NULL || window == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbStatus st = nbi_window_check(window);
    if (st != NB_OK) return st;
    const double w[4] = {window->min[0], window->min[1], window->max[0], window->max[1]};
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_VISIT);
    s.fn = visit;
    s.user = user;
    nbi_search(q, NBI_Q_BOX, w, NULL, 0.0, &filter, &s);
    return NB_OK;
}

nbStatus nb_quadtree_query_point(const nbQuadtree *q, const double *point, nbFilter filter,
                                 nbHit *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || point == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    if (!isfinite(point[0]) || !isfinite(point[1])) return NB_ERR_NOT_FINITE;
    if (capacity < 0) return NB_ERR_OUT_OF_RANGE;
    const double w[4] = {point[0], point[1], point[0], point[1]};
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_BUFFER);
    s.out = out;
    s.cap = capacity;
    nbi_search(q, NBI_Q_BOX, w, NULL, 0.0, &filter, &s);
    return nbi_finish(&s, found);
}

static nbStatus nbi_circle_check(const double *center, double radius, double w[4])
{
    if (!isfinite(center[0]) || !isfinite(center[1]) || !isfinite(radius)) return NB_ERR_NOT_FINITE;
    if (radius < 0.0) return NB_ERR_OUT_OF_RANGE;
    // A window a hair wider than the circle (its reach is rounded outwards); the exact test
    // decides.
    const double reach = radius * (1.0 + 0x1p-40) + 0x1p-1000;
    w[0] = center[0] - reach;
    w[1] = center[1] - reach;
    w[2] = center[0] + reach;
    w[3] = center[1] + reach;
    return NB_OK;
}

nbStatus nb_quadtree_query_radius(const nbQuadtree *q, const double *center, double radius,
                                  nbFilter filter, nbHit *out, int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || center == NULL || found == NULL || (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    double w[4];
    nbStatus st = nbi_circle_check(center, radius, w);
    if (st != NB_OK) return st;
    if (capacity < 0) return NB_ERR_OUT_OF_RANGE;
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_BUFFER);
    s.out = out;
    s.cap = capacity;
    nbi_search(q, NBI_Q_CIRCLE, w, center, radius * radius, &filter, &s);
    return nbi_finish(&s, found);
}

nbStatus nb_quadtree_visit_radius(const nbQuadtree *q, const double *center, double radius,
                                  nbFilter filter, nbHitFn *visit, void *user)
{
    if (q == NULL || center == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    double w[4];
    nbStatus st = nbi_circle_check(center, radius, w);
    if (st != NB_OK) return st;
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_VISIT);
    s.fn = visit;
    s.user = user;
    nbi_search(q, NBI_Q_CIRCLE, w, center, radius * radius, &filter, &s);
    return NB_OK;
}

nbStatus nb_quadtree_visit_all(const nbQuadtree *q, nbHitFn *visit, void *user)
{
    if (q == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    const double inf = (double)INFINITY;
    const double w[4] = {-inf, -inf, inf, inf};
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_VISIT);
    s.fn = visit;
    s.user = user;
    nbi_search(q, NBI_Q_BOX, w, NULL, 0.0, NULL, &s);
    return NB_OK;
}

// ---- nearest: kNN and rays share a bounded max-heap keyed by (distance, slot) ----

typedef struct nbiQtHeap {
    double *key;   // the distance of entry i, read through `at`
    nbHit *hit;    // entry i's hit
    size_t stride; // bytes from one entry to the next
    int32_t cap, n;
    int64_t total; // every match seen (ray casts report it)
} nbiQtHeap;

#define NBI_HKEY(h, i) (*(double *)((char *)(h)->key + (size_t)(i) * (h)->stride))
#define NBI_HHIT(h, i) (*(nbHit *)((char *)(h)->hit + (size_t)(i) * (h)->stride))

// a before b: nearer, or as near with the lower slot.
NBI_INLINE bool nbi_before(double da, uint64_t ha, double db, uint64_t hb)
{
    return da < db || (da == db && (uint32_t)ha < (uint32_t)hb);
}

static void nbi_heap_sift_down(nbiQtHeap *h, int32_t i)
{
    for (;;) {
        int32_t l = 2 * i + 1, m = i;
        if (l < h->n && nbi_before(NBI_HKEY(h, m), NBI_HHIT(h, m).handle.bits, NBI_HKEY(h, l),
                                   NBI_HHIT(h, l).handle.bits))
            m = l;
        if (l + 1 < h->n && nbi_before(NBI_HKEY(h, m), NBI_HHIT(h, m).handle.bits,
                                       NBI_HKEY(h, l + 1), NBI_HHIT(h, l + 1).handle.bits))
            m = l + 1;
        if (m == i) return;
        double k = NBI_HKEY(h, i);
        nbHit t = NBI_HHIT(h, i);
        NBI_HKEY(h, i) = NBI_HKEY(h, m);
        NBI_HHIT(h, i) = NBI_HHIT(h, m);
        NBI_HKEY(h, m) = k;
        NBI_HHIT(h, m) = t;
        i = m;
    }
}

static void nbi_heap_offer(nbiQtHeap *h, double d, nbHit hit)
{
    h->total++;
    if (h->cap == 0) return;
    if (h->n < h->cap) {
        int32_t i = h->n++;
        while (i > 0) {
            int32_t p = (i - 1) / 2;
            if (!nbi_before(NBI_HKEY(h, p), NBI_HHIT(h, p).handle.bits, d, hit.handle.bits)) break;
            NBI_HKEY(h, i) = NBI_HKEY(h, p);
            NBI_HHIT(h, i) = NBI_HHIT(h, p);
            i = p;
        }
        NBI_HKEY(h, i) = d;
        NBI_HHIT(h, i) = hit;
        return;
    }
    if (!nbi_before(d, hit.handle.bits, NBI_HKEY(h, 0), NBI_HHIT(h, 0).handle.bits)) return;
    NBI_HKEY(h, 0) = d;
    NBI_HHIT(h, 0) = hit;
    nbi_heap_sift_down(h, 0);
}

// Sorts the heap ascending in place (heapsort: the max goes to the end).
static void nbi_heap_sort(nbiQtHeap *h)
{
    const int32_t n = h->n;
    for (int32_t end = n - 1; end > 0; end--) {
        double k = NBI_HKEY(h, 0);
        nbHit t = NBI_HHIT(h, 0);
        NBI_HKEY(h, 0) = NBI_HKEY(h, end);
        NBI_HHIT(h, 0) = NBI_HHIT(h, end);
        NBI_HKEY(h, end) = k;
        NBI_HHIT(h, end) = t;
        h->n = end;
        nbi_heap_sift_down(h, 0);
    }
    h->n = n;
}

// The farthest distance that can still enter the heap (ties included).
NBI_INLINE double nbi_heap_bound(const nbiQtHeap *h, double limit)
{
    return h->cap > 0 && h->n == h->cap && NBI_HKEY(h, 0) < limit ? NBI_HKEY(h, 0) : limit;
}

enum { NBI_N_KNN, NBI_N_RAY };

// Depth-first, children nearest first, pruning by the heap's bound. kNN: distances are squared
// distances to p and `limit` is max_distance^2. Ray: distances are entry points t. When
// `count_all` is set (all ray hits), nodes are pruned by the limit only, so total counts
// every hit.
static void nbi_nearest(const nbQuadtree *q, int kind, const double *p, const nbiRay *ray,
                        double limit, bool count_all, nbFilter f, nbiQtHeap *h)
{
    const nbiQtNode *nodes = NBI_NODES(q);
    const nbiQtPage *pages = NBI_PAGES(q);
    const double *box = NBI_BOX(q);
    int32_t stack[NBI_QT_STACK];
    double sd[NBI_QT_STACK];
    int top = 0;
    stack[top] = NBI_QT_OUT;
    sd[top++] = 0.0;
    stack[top] = NBI_QT_ROOT;
    sd[top++] = 0.0;
    while (top > 0) {
        top--;
        const nbiQtNode *n = &nodes[stack[top]];
        const double bound = count_all ? limit : nbi_heap_bound(h, limit);
        if (sd[top] > bound) continue;
        for (int32_t pg = n->head; pg >= 0; pg = pages[pg].next) {
            const int32_t base = pg * NBI_QT_PAGE, end = base + pages[pg].n;
            for (int32_t i = base; i < end; i++) {
                const double *b = box + 4 * (size_t)i;
                double d;
                if (kind == NBI_N_KNN) {
                    d = nbi_dist2(p, b[0], b[1], b[2], b[3]);
                    if (d > limit) continue;
                } else {
                    d = nbi_ray_enter(ray, b[0], b[1], b[2], b[3]);
                    if (d < 0.0) continue;
                }
                if (!nbi_pass(f, NBI_CAT(q)[i], NBI_MASK(q)[i])) continue;
                nbi_heap_offer(h, d, nbi_hit_at(q, i));
            }
        }
        if (n->child < 0) continue;
        double cd[4];
        int order[4];
        int m = 0;
        for (int k = 0; k < 4; k++) {
            const nbiQtNode *c = &nodes[n->child + k];
            double d;
            if (kind == NBI_N_KNN) {
                d = nbi_dist2(p, c->lo[0], c->lo[1], c->hi[0], c->hi[1]);
                if (d > limit) continue;
            } else {
                d = nbi_ray_enter(ray, c->lo[0], c->lo[1], c->hi[0], c->hi[1]);
                if (d < 0.0) continue;
            }
            // Insertion by distance, farthest first on the stack so the nearest pops first.
            int j = m++;
            while (j > 0 && cd[j - 1] < d) {
                cd[j] = cd[j - 1];
                order[j] = order[j - 1];
                j--;
            }
            cd[j] = d;
            order[j] = k;
        }
        for (int j = 0; j < m; j++) {
            stack[top] = n->child + order[j];
            sd[top++] = cd[j];
        }
    }
}

nbStatus nb_quadtree_knn(const nbQuadtree *q, const double *point, int32_t k, double max_distance,
                         nbFilter filter, nbHitNeighbor *out, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || point == NULL || found == NULL || (out == NULL && k > 0))
        return NB_ERR_NULL_ARG;
    if (!isfinite(point[0]) || !isfinite(point[1]) || isnan(max_distance)) return NB_ERR_NOT_FINITE;
    if (k < 0 || max_distance < 0.0) return NB_ERR_OUT_OF_RANGE;
    if (k == 0) return NB_OK;
    nbiQtHeap h;
    h.key = &out[0].dist2;
    h.hit = &out[0].hit;
    h.stride = sizeof *out;
    h.cap = k;
    h.n = 0;
    h.total = 0;
    const double limit = max_distance * max_distance;
    nbi_nearest(q, NBI_N_KNN, point, NULL, limit, false, filter, &h);
    nbi_heap_sort(&h);
    *found = h.n;
    return NB_OK;
}

static nbStatus nbi_ray_make(const double *origin, const double *direction, double max_distance,
                             nbiRay *r)
{
    for (int a = 0; a < 2; a++)
        if (!isfinite(origin[a]) || !isfinite(direction[a])) return NB_ERR_NOT_FINITE;
    if (isnan(max_distance)) return NB_ERR_NOT_FINITE;
    if (max_distance < 0.0) return NB_ERR_OUT_OF_RANGE;
    // Scaled first so that squaring neither overflows nor underflows.
    const double m = fmax(fabs(direction[0]), fabs(direction[1]));
    if (m == 0.0) return NB_ERR_OUT_OF_RANGE;
    const double x = direction[0] / m, y = direction[1] / m;
    const double len = sqrt(x * x + y * y);
    r->o[0] = origin[0];
    r->o[1] = origin[1];
    r->d[0] = x / len;
    r->d[1] = y / len;
    r->tmax = max_distance;
    return NB_OK;
}

nbStatus nb_quadtree_raycast(const nbQuadtree *q, const double *origin, const double *direction,
                             double max_distance, nbFilter filter, nbRayHit *out, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || origin == NULL || direction == NULL || out == NULL || found == NULL)
        return NB_ERR_NULL_ARG;
    nbiRay ray;
    nbStatus st = nbi_ray_make(origin, direction, max_distance, &ray);
    if (st != NB_OK) return st;
    nbiQtHeap h;
    h.key = &out[0].t;
    h.hit = &out[0].hit;
    h.stride = sizeof *out;
    h.cap = 1;
    h.n = 0;
    h.total = 0;
    nbi_nearest(q, NBI_N_RAY, NULL, &ray, max_distance, false, filter, &h);
    *found = h.n;
    return NB_OK;
}

nbStatus nb_quadtree_raycast_all(const nbQuadtree *q, const double *origin, const double *direction,
                                 double max_distance, nbFilter filter, nbRayHit *out,
                                 int32_t capacity, int32_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || origin == NULL || direction == NULL || found == NULL ||
        (out == NULL && capacity > 0))
        return NB_ERR_NULL_ARG;
    nbiRay ray;
    nbStatus st = nbi_ray_make(origin, direction, max_distance, &ray);
    if (st != NB_OK) return st;
    if (capacity < 0) return NB_ERR_OUT_OF_RANGE;
    nbRayHit dummy;
    nbiQtHeap h;
    h.key = capacity > 0 ? &out[0].t : &dummy.t;
    h.hit = capacity > 0 ? &out[0].hit : &dummy.hit;
    h.stride = sizeof *out;
    h.cap = capacity;
    h.n = 0;
    h.total = 0;
    nbi_nearest(q, NBI_N_RAY, NULL, &ray, max_distance, true, filter, &h);
    nbi_heap_sort(&h);
    if (h.total > INT32_MAX) return NB_ERR_INTERNAL; // cannot happen: at most 2^28 rectangles
    *found = (int32_t)h.total;
    return h.total > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

// ---- pairs ----

// Each touching pair once, from one side: the rectangle whose node is shallower (by level; the
// outside list is shallowest of all), or on the same level the lower node index, or in the same
// node the lower position, searches for the other. For each rectangle a the search walks every
// node meeting a's box and tests only rectangles that come after a in that order.
static void nbi_pairs(const nbQuadtree *q, bool cross, uint32_t mask_a, uint32_t mask_b,
                      nbiQtSink *s)
{
    const nbiQtNode *nodes = NBI_NODES(q);
    const nbiQtPage *pages = NBI_PAGES(q);
    const double *box = NBI_BOX(q);
    const uint32_t *cat = NBI_CAT(q), *mask = NBI_MASK(q);
    int32_t outer[NBI_QT_STACK];
    int32_t stack[NBI_QT_STACK];
    int otop = 0;
    outer[otop++] = NBI_QT_ROOT;
    outer[otop++] = NBI_QT_OUT;
    while (otop > 0 && !s->stop) {
        const int32_t na = outer[--otop];
        const nbiQtNode *a_node = &nodes[na];
        if (a_node->child >= 0)
            for (int k = 3; k >= 0; k--) outer[otop++] = a_node->child + k;
        for (int32_t pa = a_node->head; pa >= 0 && !s->stop; pa = pages[pa].next) {
            const int32_t abase = pa * NBI_QT_PAGE, aend = abase + pages[pa].n;
            for (int32_t a = abase; a < aend && !s->stop; a++) {
                if (cross && ((cat[a] & mask_a) == 0 || mask[a] == 0)) continue;
                const double *w = box + 4 * (size_t)a;
                int top = 0;
                stack[top++] = NBI_QT_OUT;
                stack[top++] = NBI_QT_ROOT;
                while (top > 0 && !s->stop) {
                    const int32_t nb = stack[--top];
                    const nbiQtNode *n = &nodes[nb];
                    if (!nbi_node_touch(n, w)) continue;
                    if (n->child >= 0)
                        for (int k = 3; k >= 0; k--) stack[top++] = n->child + k;
                    // In pairs mode only rectangles after a in the order above.
                    if (!cross &&
                        (n->level < a_node->level || (n->level == a_node->level && nb < na)))
                        continue;
                    for (int32_t pb = n->head; pb >= 0 && !s->stop; pb = pages[pb].next) {
                        const int32_t bbase = pb * NBI_QT_PAGE, bend = bbase + pages[pb].n;
                        for (int32_t b = bbase; b < bend; b++) {
                            if (cross ? b == a : (nb == na && b <= a)) continue;
                            if (!nbi_touch(box + 4 * (size_t)b, w)) continue;
                            if (cross) {
                                if ((cat[b] & mask_b) == 0 || mask[b] == 0) continue;
                                nbi_sink_pair(s, q, a, b);
                            } else {
                                if ((cat[a] & mask[b]) == 0 || (cat[b] & mask[a]) == 0) continue;
                                const bool a_first =
                                    (uint32_t)NBI_HND(q)[a] < (uint32_t)NBI_HND(q)[b];
                                nbi_sink_pair(s, q, a_first ? a : b, a_first ? b : a);
                            }
                            if (s->stop) break;
                        }
                    }
                }
            }
        }
    }
}

static nbStatus nbi_pairs_call(const nbQuadtree *q, bool cross, uint32_t ma, uint32_t mb,
                               nbHitPair *out, int64_t capacity, int64_t *found)
{
    if (found != NULL) *found = 0;
    if (q == NULL || found == NULL || (out == NULL && capacity > 0)) return NB_ERR_NULL_ARG;
    if (capacity < 0) return NB_ERR_OUT_OF_RANGE;
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_BUFFER);
    s.pout = out;
    s.cap = capacity;
    nbi_pairs(q, cross, ma, mb, &s);
    *found = s.found;
    return s.found > capacity ? NB_ERR_BUFFER_TOO_SMALL : NB_OK;
}

static nbStatus nbi_pairs_count(const nbQuadtree *q, bool cross, uint32_t ma, uint32_t mb,
                                int64_t *count)
{
    if (count != NULL) *count = 0;
    if (q == NULL || count == NULL) return NB_ERR_NULL_ARG;
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_COUNT);
    nbi_pairs(q, cross, ma, mb, &s);
    *count = s.found;
    return NB_OK;
}

static nbStatus nbi_pairs_visit(const nbQuadtree *q, bool cross, uint32_t ma, uint32_t mb,
                                nbHitPairFn *visit, void *user)
{
    if (q == NULL || visit == NULL) return NB_ERR_NULL_ARG;
    nbiQtSink s;
    nbi_sink_init(&s, NBI_QS_VISIT);
    s.pfn = visit;
    s.user = user;
    nbi_pairs(q, cross, ma, mb, &s);
    return NB_OK;
}

nbStatus nb_quadtree_pairs(const nbQuadtree *q, nbHitPair *out, int64_t capacity, int64_t *found)
{
    return nbi_pairs_call(q, false, 0, 0, out, capacity, found);
}

nbStatus nb_quadtree_count_pairs(const nbQuadtree *q, int64_t *count)
{
    return nbi_pairs_count(q, false, 0, 0, count);
}

nbStatus nb_quadtree_visit_pairs(const nbQuadtree *q, nbHitPairFn *visit, void *user)
{
    return nbi_pairs_visit(q, false, 0, 0, visit, user);
}

nbStatus nb_quadtree_cross_pairs(const nbQuadtree *q, uint32_t mask_a, uint32_t mask_b,
                                 nbHitPair *out, int64_t capacity, int64_t *found)
{
    return nbi_pairs_call(q, true, mask_a, mask_b, out, capacity, found);
}

nbStatus nb_quadtree_count_cross_pairs(const nbQuadtree *q, uint32_t mask_a, uint32_t mask_b,
                                       int64_t *count)
{
    return nbi_pairs_count(q, true, mask_a, mask_b, count);
}

nbStatus nb_quadtree_visit_cross_pairs(const nbQuadtree *q, uint32_t mask_a, uint32_t mask_b,
                                       nbHitPairFn *visit, void *user)
{
    return nbi_pairs_visit(q, true, mask_a, mask_b, visit, user);
}

// ---- validate ----

static nbStatus nbi_validate_node(const nbQuadtree *q, int32_t n, int64_t *items, int64_t *pages)
{
    const nbiQtNode *nodes = NBI_NODES(q);
    const nbiQtNode *node = &nodes[n];
    NBI_CHECK(node->parent != -2);
    int64_t seen = 0;
    for (int32_t p = node->head; p >= 0; p = NBI_PAGES(q)[p].next) {
        NBI_CHECK(p < q->page_top);
        const nbiQtPage *pg = &NBI_PAGES(q)[p];
        NBI_CHECK(pg->node == n);
        NBI_CHECK(pg->n >= 1 && pg->n <= NBI_QT_PAGE);
        NBI_CHECK(p == node->head || pg->n == NBI_QT_PAGE);
        for (int32_t i = 0; i < pg->n; i++) {
            const int32_t at = p * NBI_QT_PAGE + i;
            const uint64_t h = NBI_HND(q)[at];
            nbHandle handle = {h};
            int32_t slot;
            NBI_CHECK(nbi_pool_lookup(&q->pool, handle, &slot) == NB_OK);
            NBI_CHECK(nbi_pool_slot_value(&q->pool, slot) == at);
            const double *b = NBI_BOX(q) + 4 * (size_t)at;
            NBI_CHECK(b[0] <= b[2] && b[1] <= b[3]);
            NBI_CHECK(nbi_within(node, b));
        }
        seen += pg->n;
        (*pages)++;
        NBI_CHECK(*pages <= q->page_top);
    }
    NBI_CHECK(seen == node->count);
    *items += seen;
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
    NBI_CHECK((size_t)q->page_top <= q->pages.cap);
    NBI_CHECK(q->box.cap >= (size_t)q->page_top * NBI_QT_PAGE);
    const nbiQtNode *nodes = NBI_NODES(q);
    NBI_CHECK(nodes[NBI_QT_ROOT].parent == -1 && nodes[NBI_QT_OUT].parent == -1);
    NBI_CHECK(nodes[NBI_QT_OUT].child == -1);
    NBI_CHECK(nodes[NBI_QT_ROOT].level == -q->grown);
    int64_t items = 0, pages = 0, reached = 0;
    int32_t stack[NBI_QT_STACK];
    int top = 0;
    stack[top++] = NBI_QT_OUT;
    stack[top++] = NBI_QT_ROOT;
    while (top > 0) {
        const int32_t n = stack[--top];
        st = nbi_validate_node(q, n, &items, &pages);
        if (st != NB_OK) return st;
        reached++;
        if (nodes[n].child >= 0) {
            NBI_CHECK(top + 4 <= NBI_QT_STACK);
            for (int k = 3; k >= 0; k--) stack[top++] = nodes[n].child + k;
        }
    }
    NBI_CHECK(items == q->count);
    int64_t free_pages = 0;
    for (int32_t p = q->free_page; p >= 0; p = NBI_PAGES(q)[p].next) {
        NBI_CHECK(p < q->page_top && NBI_PAGES(q)[p].node == -1);
        NBI_CHECK(++free_pages <= q->page_top);
    }
    NBI_CHECK(free_pages == q->free_pages && pages + free_pages == q->page_top);
    int64_t free_groups = 0;
    for (int32_t g = q->free_group; g >= 0; g = nodes[g].child) {
        NBI_CHECK(g >= NBI_QT_GROUPS && g + 4 <= q->node_top && nodes[g].parent == -2);
        NBI_CHECK(++free_groups <= q->node_top / 4);
    }
    NBI_CHECK(free_groups == q->free_groups);
    NBI_CHECK(reached - 2 + 4 * free_groups == q->node_top - NBI_QT_GROUPS);
    return NB_OK;
}
