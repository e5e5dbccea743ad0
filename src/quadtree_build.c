// SPDX-License-Identifier: MIT
// The quadtree's build and changes: where a rectangle goes (placement, splits, collapses, the
// root fitted to the data and grown), insert, move, remove, get and set, the bulk build, and
// the tidying that changes pay for (quadtree_internal.h has the layout).
#include "quadtree_internal.h"

static nbStatus nbi_rect_check(const nbRect *r)
{
#if defined(__SSE2__)
    // x - x is 0 for a finite x and NaN for an infinite or NaN one (under any rounding mode).
    const __m128d lo = _mm_loadu_pd(r->min), hi = _mm_loadu_pd(r->max), z = _mm_setzero_pd();
    if (_mm_movemask_pd(_mm_and_pd(_mm_cmpeq_pd(_mm_sub_pd(lo, lo), z),
                                   _mm_cmpeq_pd(_mm_sub_pd(hi, hi), z))) != 3)
        return NB_ERR_NOT_FINITE;
    return _mm_movemask_pd(_mm_cmple_pd(lo, hi)) == 3 ? NB_OK : NB_ERR_OUT_OF_RANGE;
#else
    for (int a = 0; a < 2; a++)
        if (!isfinite(r->min[a]) || !isfinite(r->max[a])) return NB_ERR_NOT_FINITE;
    for (int a = 0; a < 2; a++)
        if (r->min[a] > r->max[a]) return NB_ERR_OUT_OF_RANGE;
    return NB_OK;
#endif
}

// The block class that holds n rectangles.
static int nbi_cls_for(int64_t n)
{
    int c = NBI_QT_MIN_CLS;
    while (((int64_t)1 << c) < n) c++;
    return c;
}

// The four bits of x spread to every second bit (bit i to bit 2 i).
NBI_INLINE unsigned nbi_spread4(unsigned x)
{
    x = (x | x << 2) & 0x33u;
    return (x | x << 1) & 0x55u;
}

// The step of box b's centre along a Morton curve over node nd's cell, 16 x 16 steps (sx, sy:
// 16 over the cell's sides), centres outside the cell clamped. Huge coordinates may overflow to
// infinity or NaN here: those take a corner (the order only groups rectangles, it decides no
// answer).
NBI_INLINE uint8_t nbi_curve_key(const nbiQtNode *nd, double sx, double sy, const double *b)
{
    const double cx = (0.5 * b[0] + 0.5 * b[2] - nd->clo[0]) * sx;
    const double cy = (0.5 * b[1] + 0.5 * b[3] - nd->clo[1]) * sy;
    const unsigned x = cx >= 15.0 ? 15u : cx >= 0.0 ? (unsigned)cx : 0u;
    const unsigned y = cy >= 15.0 ? 15u : cy >= 0.0 ? (unsigned)cy : 0u;
    return (uint8_t)(nbi_spread4(x) | nbi_spread4(y) << 1);
}

// ---- tidying: a node's rectangles back in curve order ----
//
// A build lays each node's rectangles out along a Morton curve over the node's cell
// (nbi_build_sort), so that a run of eight holds rectangles near each other and its run box is
// small. Moves undo that: rectangles wander inside their node (their run boxes grow with them)
// and those that change node are appended at the end of their new node's block. A window then
// meets more runs every frame (in the moving benchmark 42 rectangles tested a window after the
// build, 56 on average over 100 frames). Tidying a node sorts its rectangles along the curve
// again, in place, and computes its run boxes anew: the node holds the same rectangles, so no
// other box changes, and handles stay valid (their slots follow the moved positions).

// Swaps the rectangles at positions a and b of one block: every per-position copy moves with
// its rectangle (no box is computed again), and their slots follow.
static void nbi_swap_pos(nbQuadtree *q, int32_t a, int32_t b)
{
    nbiQtBox *box = NBI_BOX(q);
    const nbiQtBox tb = box[a];
    box[a] = box[b];
    box[b] = tb;
    float *fa = nbi_fb_at(q, a), *fb = nbi_fb_at(q, b);
    int16_t *ea = nbi_qb_at(q, a), *eb = nbi_qb_at(q, b);
    for (int i = 0; i < 4; i++) {
        const float tf = fa[4 * i];
        fa[4 * i] = fb[4 * i];
        fb[4 * i] = tf;
        const int16_t te = ea[8 * i];
        ea[8 * i] = eb[8 * i];
        eb[8 * i] = te;
    }
    nbHit *ha = nbi_hit_of(q, a), *hb = nbi_hit_of(q, b);
    const nbHit th = *ha;
    *ha = *hb;
    *hb = th;
    uint32_t *cat = NBI_CAT(q), *mask = NBI_MASK(q);
    const uint32_t tc = cat[a], tm = mask[a];
    cat[a] = cat[b];
    mask[a] = mask[b];
    cat[b] = tc;
    mask[b] = tm;
    nbi_pool_set_slot_value(&q->pool, (int32_t)((uint32_t)ha->handle.bits - 1u), a);
    nbi_pool_set_slot_value(&q->pool, (int32_t)((uint32_t)hb->handle.bits - 1u), b);
}

// Whether node n is one that tidying sorts.
static bool nbi_tidy_fits(const nbQuadtree *q, int32_t n)
{
    const nbiQtNode *nd = &NBI_NODES(q)[n];
    return n != NBI_QT_OUT && nd->cls >= NBI_QT_RB_MIN_CLS && nd->count >= NBI_QT_TIDY_MIN &&
           nd->count <= NBI_QT_TIDY_MAX;
}

// Sorts node n's rectangles (nbi_tidy_fits) along the curve again and computes its run boxes
// anew.
static void nbi_tidy(nbQuadtree *q, int32_t n)
{
    const nbiQtNode *nd = &NBI_NODES(q)[n];
    const int32_t count = nd->count, start = nd->start;
    const double sx = 16.0 / (nd->chi[0] - nd->clo[0]), sy = 16.0 / (nd->chi[1] - nd->clo[1]);
    if (!(isfinite(sx) && isfinite(sy))) return;
    uint8_t key[NBI_QT_TIDY_MAX];
    int16_t to[NBI_QT_TIDY_MAX];
    int32_t at[257];
    memset(at, 0, sizeof at);
    const nbiQtBox *box = NBI_BOX(q);
    for (int32_t i = 0; i < count; i++) {
        key[i] = nbi_curve_key(nd, sx, sy, box[start + i].b);
        at[key[i] + 1]++;
    }
    for (int k = 0; k < 256; k++) at[k + 1] += at[k];
    for (int32_t i = 0; i < count; i++) to[i] = (int16_t)at[key[i]]++;
    // The permutation by its cycles: the rectangle at i goes to to[i].
    for (int32_t i = 0; i < count; i++)
        while (to[i] != i) {
            const int32_t j = to[i];
            nbi_swap_pos(q, start + i, start + j);
            to[i] = to[j];
            to[j] = (int16_t)j;
        }
    for (int32_t r = 0; r < (count + 7) >> 3; r++) nbi_rb_refit(q, start, nd->cls, start + 8 * r);
}

// Tidies the nodes the moves so far pay for, round the nodes from where the last call stopped,
// looking at NBI_QT_TIDY_LOOK nodes at most, and sets the credit the next call is due at: what
// the node at the cursor costs, or, when none in reach could be tidied, NBI_QT_TIDY_RATIO *
// NBI_QT_TIDY_MIN more moves. So a tree with few or no such nodes (small leaves) costs a move a
// quarter of a node record's look at most, and the credit, capped, never pays for more than a
// few nodes at once (no long pause in one move).
enum { NBI_QT_TIDY_LOOK = 64, NBI_QT_TIDY_CAP = 4 * NBI_QT_TIDY_RATIO * NBI_QT_TIDY_MAX };

static void nbi_tidy_run(nbQuadtree *q)
{
    if (q->tidy_credit > NBI_QT_TIDY_CAP) q->tidy_credit = NBI_QT_TIDY_CAP;
    const int32_t look = q->node_top < NBI_QT_TIDY_LOOK ? q->node_top : NBI_QT_TIDY_LOOK;
    for (int32_t looked = 0; looked < look; looked++) { // one round at most: a node once a call
        if (q->tidy_next >= q->node_top) q->tidy_next = 0;
        const int32_t n = q->tidy_next;
        if (nbi_tidy_fits(q, n)) {
            const int64_t cost = (int64_t)NBI_QT_TIDY_RATIO * NBI_NODES(q)[n].count;
            if (q->tidy_credit < cost) {
                q->tidy_due = cost;
                return;
            }
            q->tidy_credit -= cost;
            nbi_tidy(q, n);
            q->tidied++;
        }
        q->tidy_next++;
    }
    q->tidy_due = q->tidy_credit + (int64_t)NBI_QT_TIDY_RATIO * NBI_QT_TIDY_MIN;
}

// One change made (an insert, a remove, a move): its share of the tidying. Inserts append to a
// node's block and removals fill the hole with its last rectangle, so they undo the order too.
// nb_quadtree_move and nb_quadtree_move_many both pay after each move, so that a batch leaves
// the same tree as the single moves.
NBI_INLINE void nbi_tidy_pay(nbQuadtree *q)
{
    if (++q->tidy_credit >= q->tidy_due) nbi_tidy_run(q);
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

// Which of the four children `kids` of a node whose cell's middle is mid takes box b: 0..3, or
// -1 when b stays in the node. `tight`: q->placement is NB_QUADTREE_TIGHT.
NBI_INLINE int nbi_pick_mid(bool tight, const double mid[2], const nbiQtNode *kids, const double *b)
{
#if defined(__SSE2__)
    if (!tight) { // both axes at once: the centre's lanes not below the middle's are the upper
        const __m128d c =
            _mm_mul_pd(_mm_add_pd(_mm_loadu_pd(b), _mm_loadu_pd(b + 2)), _mm_set1_pd(0.5));
        const int k = _mm_movemask_pd(_mm_cmpge_pd(c, _mm_loadu_pd(mid)));
        return nbi_within(&kids[k], b) ? k : -1;
    }
#endif
    int k = 0;
    for (int a = 0; a < 2; a++) {
        if (tight) {
            if (b[2 + a] <= mid[a]) continue;
            if (b[a] < mid[a]) return -1;
        } else if (0.5 * (b[a] + b[2 + a]) < mid[a]) {
            continue;
        }
        k |= 1 << a;
    }
    return nbi_within(&kids[k], b) ? k : -1;
}

// The middle of node n's cell, as nbi_pick_mid takes it.
NBI_INLINE void nbi_cell_mid(const nbiQtNode *n, double mid[2])
{
    for (int a = 0; a < 2; a++) mid[a] = 0.5 * (n->clo[a] + n->chi[a]);
}

// Which of the four children `kids` of node n takes box b: 0..3, or -1 when b stays in n.
NBI_INLINE int nbi_pick(const nbQuadtree *q, const nbiQtNode *n, const nbiQtNode *kids,
                        const double *b)
{
    double mid[2];
    nbi_cell_mid(n, mid);
    return nbi_pick_mid(q->placement == NB_QUADTREE_TIGHT, mid, kids, b);
}

// The node that takes box b, descending from `from` (whose bounds hold b).
static int32_t nbi_descend(const nbQuadtree *q, int32_t from, const double *b)
{
    const nbiQtNode *nodes = NBI_NODES(q);
    int32_t n = from;
    for (;;) {
        const nbiQtNode *node = &nodes[n];
        if (node->child < 0) return n;
        const int k = nbi_pick(q, node, &nodes[node->child], b);
        if (k < 0) return n;
        n = node->child + k;
    }
}

// The root's bounds for its cell (the root has no parent to clamp to).
void nbi_root_bounds(const nbQuadtree *q, nbiQtNode *r)
{
    for (int a = 0; a < 2; a++) {
        const double half = q->placement == NB_QUADTREE_TIGHT ? 0.0 : 0.5 * (r->chi[a] - r->clo[a]);
        r->lo[a] = r->clo[a] - half;
        r->hi[a] = r->chi[a] + half;
    }
}

// Whether node n keeps box b: its bounds hold b and, loose, its cell holds b's centre (as
// nbi_pick computes it). A move within a node that keeps it changes nothing else, and the root
// takes b without growing. A centre outside the cell would hold b above the leaves for good:
// where the node splits, b fits no child's bounds unless it lies within a quarter of the node's
// side past the cell, and a level further down within an eighth, and so on.
static bool nbi_keeps(const nbQuadtree *q, const nbiQtNode *n, const double *b)
{
    if (!nbi_within(n, b)) return false;
    if (q->placement == NB_QUADTREE_TIGHT) return true; // bounds = cell
    for (int a = 0; a < 2; a++) {
        const double c = 0.5 * (b[a] + b[2 + a]);
        if (!(c >= n->clo[a] && c <= n->chi[a])) return false;
    }
    return true;
}

// Whether a root r that does not take b grows downwards on axis a (else upwards): towards the
// side b sticks out of, or where neither, the side its centre is nearer to.
static bool nbi_grows_down(const nbiQtNode *r, const double *b, int a)
{
    if (b[a] < r->lo[a]) return true;
    if (b[2 + a] > r->hi[a]) return false;
    return 0.5 * (b[a] + b[2 + a]) < 0.5 * (r->clo[a] + r->chi[a]);
}

// How many doublings the root needs before it takes b (nbi_keeps): 0 if it does now, -1 if
// more than the limit allows (b then goes to the outside list).
static int nbi_growth(const nbQuadtree *q, const double *b)
{
    nbiQtNode r = NBI_NODES(q)[NBI_QT_ROOT];
    if (nbi_keeps(q, &r, b)) return 0;
    for (int g = 1; g <= NBI_QT_GROW_MAX - q->grown; g++) {
        for (int a = 0; a < 2; a++) {
            const double side = r.chi[a] - r.clo[a];
            if (nbi_grows_down(&r, b, a))
                r.clo[a] -= side;
            else
                r.chi[a] += side;
        }
        nbi_root_bounds(q, &r);
        if (!isfinite(r.lo[0] + r.lo[1] + r.hi[0] + r.hi[1])) return -1;
        if (nbi_keeps(q, &r, b)) return g;
    }
    return -1;
}

// A root cell for rectangles whose centres (as nbi_pick computes them) span cb and whose union is
// u, into r's cell and bounds: a square at least `least` on a side, centred on the centres (tight:
// on the union), whose cell holds every centre and whose bounds hold u, so that it takes every
// one of them (nbi_keeps), with `margin` (a fraction of the side) to spare on each edge.
// False, r unchanged, when no finite one exists.
static bool nbi_root_fit(const nbQuadtree *q, const double *cb, const double *u, double least,
                         double margin, nbiQtNode *out)
{
    nbiQtNode fit = *out, *r = &fit;
    const bool tight = q->placement == NB_QUADTREE_TIGHT;
    double c[2], side = least;
    for (int a = 0; a < 2; a++) {
        const double *m = tight ? u : cb;
        c[a] = 0.5 * m[a] + 0.5 * m[2 + a];
        double need = tight ? u[2 + a] - u[a] : cb[2 + a] - cb[a];
        if (!tight) need = fmax(need, fmax(c[a] - u[a], u[2 + a] - c[a])); // bounds: c +- side
        side = fmax(side, need);
    }
    side += 2.0 * margin * side;
    // Rounding may leave a centre or an edge a step outside: a larger side then.
    for (int k = 0; k < 64 && side > 0.0 && isfinite(side); k++, side *= 2.0) {
        for (int a = 0; a < 2; a++) {
            r->clo[a] = c[a] - 0.5 * side;
            r->chi[a] = c[a] + 0.5 * side;
        }
        nbi_root_bounds(q, r);
        const bool finite = isfinite(r->lo[0] + r->lo[1] + r->hi[0] + r->hi[1]);
        if (finite && r->clo[0] < r->chi[0] && r->clo[1] < r->chi[1] && nbi_within(r, u) &&
            (tight || (cb[0] >= r->clo[0] && cb[1] >= r->clo[1] && cb[2] <= r->chi[0] &&
                       cb[3] <= r->chi[1]))) {
            *out = fit;
            return true;
        }
    }
    return false;
}

// Doubles the root once towards b (a group prepared): the old root becomes one of the new
// root's four children.
static void nbi_grow(nbQuadtree *q, const double *b)
{
    const int32_t g = nbi_group_take(q);
    nbiQtNode *nodes = NBI_NODES(q);
    const nbiQtNode old = nodes[NBI_QT_ROOT];
    nbiQtNode *root = &nodes[NBI_QT_ROOT];
    int k = 0;
    for (int a = 0; a < 2; a++) {
        const double side = old.chi[a] - old.clo[a];
        if (nbi_grows_down(&old, b, a)) {
            root->clo[a] = old.clo[a] - side;
            k |= 1 << a; // the old root is the upper half
        } else {
            root->chi[a] = old.chi[a] + side;
        }
    }
    nbi_root_bounds(q, root);
    root->child = g;
    root->start = 0;
    root->count = 0;
    root->cls = -1;
    root->level = old.level - 1;
    for (int c = 0; c < 4; c++) {
        nbiQtNode *ch = &nodes[g + c];
        if (c == k) {
            *ch = old;
            ch->parent = NBI_QT_ROOT;
            float *gb = nbi_gb_of(q, g + c); // the old root's bounds hold its subtree
            const double ob[4] = {old.lo[0], old.lo[1], old.hi[0], old.hi[1]};
            float v[4];
            nbi_f_fields(q, ob, v);
            for (int i = 0; i < 4; i++) gb[4 * i] = v[i];
            if (ch->child >= 0)
                for (int j = 0; j < 4; j++) nodes[ch->child + j].parent = g + c;
            for (int32_t i = 0; i < ch->count; i++) NBI_OWN(q)[ch->start + i] = g + c;
            continue;
        }
        nbi_node_init(ch, NBI_QT_ROOT, old.level);
        nbi_child_geometry(q, root, c, ch);
    }
    for (int c = 0; c < 4; c++) nbi_sync(q, g + c);
    nbi_sync(q, NBI_QT_ROOT);
    q->grown++;
}

// Whether leaf n splits when it receives one more rectangle.
static bool nbi_splits(const nbQuadtree *q, int32_t n)
{
    const nbiQtNode *node = &NBI_NODES(q)[n];
    return n != NBI_QT_OUT && node->child < 0 && node->count + 1 > q->threshold &&
           node->level < q->max_depth;
}

// The blocks a split of leaf n needs, with b (the rectangle that triggers it) counted in.
static void nbi_split_need(const nbQuadtree *q, int32_t n, const double *b, nbiQtNeed *need)
{
    const nbiQtNode *node = &NBI_NODES(q)[n];
    nbiQtNode kids[4];
    for (int k = 0; k < 4; k++) nbi_child_geometry(q, node, k, &kids[k]);
    int64_t per[5] = {0, 0, 0, 0, 0}; // per child, then those that stay
    for (int32_t i = 0; i < node->count; i++) {
        const int k = nbi_pick(q, node, kids, NBI_BOX(q)[node->start + i].b);
        per[k < 0 ? 4 : k]++;
    }
    const int kb = nbi_pick(q, node, kids, b);
    per[kb < 0 ? 4 : kb]++;
    need->groups += 1;
    for (int k = 0; k < 4; k++)
        if (per[k] > 0) nbi_need_block(need, nbi_cls_for(per[k]));
    if (per[4] > ((int64_t)1 << node->cls)) nbi_need_block(need, node->cls + 1);
}

// Splits leaf n (a group and the children's blocks prepared): its rectangles go down where they
// fit, each child getting a block that holds exactly what comes to it, `extra` (the rectangle
// whose insert splits n) included; the rest stay in order.
static void nbi_split(nbQuadtree *q, int32_t n, const double *extra)
{
    const int32_t g = nbi_group_take(q);
    nbiQtNode *nodes = NBI_NODES(q);
    for (int k = 0; k < 4; k++) {
        nbi_node_init(&nodes[g + k], n, nodes[n].level + 1);
        nbi_child_geometry(q, &nodes[n], k, &nodes[g + k]);
        nbi_sync(q, g + k); // the frame its rectangles' 16-bit boxes are put in
    }
    nodes[n].child = g;
    nbiQtNode *node = &nodes[n];
    int64_t per[4] = {0, 0, 0, 0};
    int8_t pick[64];
    const bool small = node->count <= 64;
    for (int32_t i = 0; i < node->count; i++) {
        const int k = nbi_pick(q, node, &nodes[g], NBI_BOX(q)[node->start + i].b);
        if (small) pick[i] = (int8_t)k;
        if (k >= 0) per[k]++;
    }
    // The rectangle about to come in counts too, as nbi_split_need counted it.
    const int ke = nbi_pick(q, node, &nodes[g], extra);
    if (ke >= 0) per[ke]++;
    for (int k = 0; k < 4; k++) {
        if (per[k] == 0) continue;
        const int c = nbi_cls_for(per[k]);
        nodes[g + k].start = nbi_block_take(q, c);
        nodes[g + k].cls = c;
        nbi_block_init(q, nodes[g + k].start, c, nodes[g + k].start);
    }
    int32_t w = 0;
    const int32_t count = node->count;
    for (int32_t i = 0; i < count; i++) {
        const int32_t at = node->start + i;
        const int k = small ? pick[i] : nbi_pick(q, node, &nodes[g], NBI_BOX(q)[at].b);
        if (k < 0) {
            if (w != i) nbi_move_pos(q, at, node->start, node->start + w, n);
            w++;
            continue;
        }
        nbiQtNode *c = &nodes[g + k];
        nbi_move_pos(q, at, c->start, c->start + c->count++, g + k);
    }
    for (int32_t i = w; i < count; i++) nbi_fb_clear(q, node->start + i);
    node->count = w;
    if (w == 0 && ke >= 0) { // emptied, and `extra` goes down too (else it comes here next)
        nbi_block_give(q, node->start, node->cls);
        node->cls = -1;
        node->start = 0;
    }
    nbi_sync(q, n);
    for (int k = 0; k < 4; k++) nbi_sync(q, g + k);
}

// The least side of a root fitted to data, a fraction of the desc's side (the hint): data that
// all lies in one point, or nearly, gets a root no smaller, so that the root can still grow
// NBI_QT_GROW_MAX - NBI_QT_FIT_LEVELS times past the hint's side.
static double nbi_fit_least(const nbQuadtree *q)
{
    const double side = fmax(q->root0.max[0] - q->root0.min[0], q->root0.max[1] - q->root0.min[1]);
    return ldexp(side, -NBI_QT_FIT_LEVELS);
}

// Puts node n's rectangles' boxes anew (their float copies, their 16-bit boxes in its frame, its
// run or segment boxes), after its frame or the float origin changed. Not for a node with a
// float box (nbi_gb_of), which would keep the old.
static void nbi_node_reput(nbQuadtree *q, int32_t n)
{
    const nbiQtNode *r = &NBI_NODES(q)[n];
    NB_ASSERT(n < NBI_QT_GROUPS);
    if (r->count == 0) return;
    nbi_block_init(q, r->start, r->cls, r->start + r->count);
    for (int32_t p = r->start; p < r->start + r->count; p++) {
        double b[4];
        memcpy(b, NBI_BOX(q)[p].b, sizeof b);
        nbi_box_put(q, n, r->start, p, b);
    }
}

// Gives the root (a leaf) the cell and bounds of `geom` and level 0 (the doublings count from 0
// again), and the float copies the origin fo: the root's and the outside list's rectangles'
// boxes are put anew (nbi_node_reput). Every rectangle the root holds must lie within the new
// bounds.
static void nbi_root_reframe(nbQuadtree *q, const nbiQtNode *geom, const double *fo)
{
    nbiQtNode *r = &NBI_NODES(q)[NBI_QT_ROOT];
    NB_ASSERT(r->child < 0);
    for (int a = 0; a < 2; a++) {
        r->clo[a] = geom->clo[a];
        r->chi[a] = geom->chi[a];
        r->lo[a] = geom->lo[a];
        r->hi[a] = geom->hi[a];
    }
    r->level = 0;
    q->grown = 0;
    nbi_sync(q, NBI_QT_ROOT);
    const bool moved = fo[0] != q->fo[0] || fo[1] != q->fo[1];
    q->fo[0] = fo[0];
    q->fo[1] = fo[1];
    nbi_node_reput(q, NBI_QT_ROOT);
    if (moved) nbi_node_reput(q, NBI_QT_OUT);
}

// The middle of a node's cell: a float origin (nbQuadtree.fo) for a root.
void nbi_cell_middle(const nbiQtNode *r, double *out)
{
    for (int a = 0; a < 2; a++) out[a] = 0.5 * r->clo[a] + 0.5 * r->chi[a];
}

// Before rectangle b comes in by an insert, while the root is a leaf: an empty tree's root goes
// back to the desc's if that takes b (nbi_keeps), else to one of the desc's side around b; a
// root about to split (the threshold reached) is fitted to what it holds and b, with the build's
// margin (nbi_root_fit). So data far from the hint, or much smaller or larger than it, gets a
// root of its own size before the first split fixes the tree's grid, instead of hanging below a
// chain of doublings or filling a corner of the hint. Does nothing when no finite root fits.
// O(threshold), once a split of the root.
static void nbi_root_refit(nbQuadtree *q, const double *b)
{
    const nbiQtNode *r = &NBI_NODES(q)[NBI_QT_ROOT];
    if (r->child >= 0) return;
    nbiQtNode fit = *r;
    if (r->count == 0) {
        for (int a = 0; a < 2; a++) {
            fit.clo[a] = q->root0.min[a];
            fit.chi[a] = q->root0.max[a];
        }
        nbi_root_bounds(q, &fit);
        const double cx = 0.5 * (b[0] + b[2]), cy = 0.5 * (b[1] + b[3]);
        const double cb[4] = {cx, cy, cx, cy};
        const double side = ldexp(nbi_fit_least(q), NBI_QT_FIT_LEVELS);
        if (!nbi_keeps(q, &fit, b)) nbi_root_fit(q, cb, b, side, 0.0, &fit);
        double fo[2];
        nbi_cell_middle(&fit, fo);
        nbi_root_reframe(q, &fit, fo);
        return;
    }
    if (!nbi_splits(q, NBI_QT_ROOT)) return;
    double u[4], cb[4];
    for (int a = 0; a < 2; a++) {
        u[a] = b[a];
        u[2 + a] = b[2 + a];
        cb[a] = cb[2 + a] = 0.5 * (b[a] + b[2 + a]);
    }
    for (int32_t p = r->start; p < r->start + r->count; p++) {
        const double *e = NBI_BOX(q)[p].b;
        for (int a = 0; a < 2; a++) {
            const double c = 0.5 * (e[a] + e[2 + a]);
            u[a] = fmin(u[a], e[a]);
            u[2 + a] = fmax(u[2 + a], e[2 + a]);
            cb[a] = fmin(cb[a], c);
            cb[2 + a] = fmax(cb[2 + a], c);
        }
    }
    if (nbi_root_fit(q, cb, u, nbi_fit_least(q), NBI_QT_FIT_MARGIN, &fit)) {
        double fo[2];
        nbi_cell_middle(&fit, fo);
        nbi_root_reframe(q, &fit, fo);
    }
}

// A placement decided before anything changes: the root's growth, or the target node (and
// whether it splits first), and the room all of it needs.
typedef struct nbiQtPlan {
    int grow;       // doublings of the root first
    int32_t target; // the node when grow == 0
    bool split;     // the target splits before the rectangle goes in
    nbiQtNeed need;
} nbiQtPlan;

static void nbi_plan(const nbQuadtree *q, const double *b, int32_t items, nbiQtPlan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->need.items = items;
    plan->grow = nbi_growth(q, b);
    plan->target = -1;
    if (plan->grow < 0) {
        plan->grow = 0;
        plan->target = NBI_QT_OUT;
    } else if (plan->grow > 0) {
        // It lands in the new root or a new, empty child of it.
        plan->need.groups = plan->grow;
        nbi_need_block(&plan->need, NBI_QT_MIN_CLS);
        return;
    } else {
        plan->target = nbi_descend(q, NBI_QT_ROOT, b);
    }
    if (nbi_splits(q, plan->target)) {
        plan->split = true;
        nbi_split_need(q, plan->target, b, &plan->need);
        // After the split the rectangle lands in a child sized for it, or stays in the target,
        // whose block the need above grew if it had to.
        return;
    }
    const int c = nbi_append_cls(&NBI_NODES(q)[plan->target]);
    if (c >= 0) nbi_need_block(&plan->need, c);
}

// Carries out a plan whose room is prepared: returns the new position.
static int32_t nbi_place(nbQuadtree *q, const nbiQtPlan *plan, const double *b, uint64_t hnd,
                         uint64_t user, uint32_t cat, uint32_t mask)
{
    int32_t target = plan->target;
    if (target < 0) {
        for (int g = 0; g < plan->grow; g++) nbi_grow(q, b);
        target = nbi_descend(q, NBI_QT_ROOT, b);
    } else if (plan->split) {
        nbi_split(q, target, b);
        target = nbi_descend(q, target, b);
    }
    return nbi_append(q, target, b, hnd, user, cat, mask);
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
        nbi_sync(q, n);
        if (node->count > 0) return;
        n = node->parent;
    }
}

// ---- a move within its node: the boxes that no longer hold it computed anew ----

// Whether the float box g (fields at a stride of 1) holds the float box at f (a stride of 4).
NBI_INLINE bool nbi_f_holds(const float *g, const float *f)
{
    return g[0] <= f[0] && g[1] <= f[4] && g[2] <= f[8] && g[3] <= f[12];
}

// The least of each float field of positions from .. to - 1 (from a multiple of 4; positions
// without a box hold NaN, which the minimum skips): the box of what they hold.
static void nbi_fb_min(const nbQuadtree *q, int32_t from, int32_t to, float m[4])
{
    for (int i = 0; i < 4; i++) m[i] = (float)INFINITY;
#if defined(__SSE2__)
    // Field i of the run's four positions in one vector; min(f, m) is m where f is NaN.
    __m128 v[4];
    for (int i = 0; i < 4; i++) v[i] = _mm_set1_ps((float)INFINITY);
    for (int32_t r = from; r < to; r += 4) {
        const float *f = NBI_FB(q) + (size_t)NBI_QT_RUN_FLOATS * (size_t)(r >> 2);
        for (int i = 0; i < 4; i++) v[i] = _mm_min_ps(_mm_loadu_ps(f + 4 * i), v[i]);
    }
    for (int i = 0; i < 4; i++) {
        __m128 x = _mm_min_ps(v[i], _mm_movehl_ps(v[i], v[i]));
        x = _mm_min_ss(x, _mm_shuffle_ps(x, x, 1));
        m[i] = _mm_cvtss_f32(x);
    }
#else
    for (int32_t r = from; r < to; r += 4) {
        const float *f = NBI_FB(q) + (size_t)NBI_QT_RUN_FLOATS * (size_t)(r >> 2);
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 4; k++) m[i] = f[4 * i + k] < m[i] ? f[4 * i + k] : m[i];
    }
#endif
}

// Computes anew the box of the segment starting at position g of node n's block from its
// positions' float boxes.
static void nbi_seg_refit(nbQuadtree *q, const nbiQtNode *n, int32_t g)
{
    const int32_t end = n->start + n->count;
    float m[4];
    nbi_fb_min(q, g, end - g < NBI_QT_SEG ? end : g + NBI_QT_SEG, m);
    memcpy(NBI_SB(q) + nbi_seg_box(n->start, g), m, sizeof m);
}

// Computes anew node n's float box (n >= NBI_QT_GROUPS) from its segment box (or, in a block with
// run boxes, its positions' float boxes) and its children's float boxes.
static void nbi_node_refit(nbQuadtree *q, int32_t n)
{
    const nbiQtNode *node = &NBI_NODES(q)[n];
    float m[4] = {(float)INFINITY, (float)INFINITY, (float)INFINITY, (float)INFINITY};
    const float *sb = NBI_SB(q);
    if (node->cls >= NBI_QT_RB_MIN_CLS) { // no segment box: its positions' float boxes
        nbi_fb_min(q, node->start, node->start + node->count, m);
    } else if (node->count > 0) {
        const float *sg = sb + nbi_seg_box(node->start, node->start);
        for (int i = 0; i < 4; i++) m[i] = sg[i] < m[i] ? sg[i] : m[i];
    }
    if (node->child >= 0) {
        const float *gb = nbi_group_gb(q, node->child);
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 4; k++) m[i] = gb[4 * i + k] < m[i] ? gb[4 * i + k] : m[i];
    }
    float *g = nbi_gb_of(q, n);
    for (int i = 0; i < 4; i++) g[4 * i] = m[i];
}

// Moves the rectangle at position `at` of node n to box b within n's bounds: rewrites its boxes
// and nothing else of the node. Where its run's box, its block's segment box, or the float box
// of n or of an ancestor no longer holds it, that box is computed anew from what it holds rather
// than grown, so boxes follow rectangles that wander about inside their node instead of widening
// step by step (a window would meet more runs and nodes every frame).
static void nbi_box_move(nbQuadtree *q, int32_t n, int32_t at, const double *b)
{
    const nbiQtNode *node = &NBI_NODES(q)[n];
    memcpy(NBI_BOX(q)[at].b, b, 4 * sizeof(double));
#if defined(__SSE2__)
    // The run's fields, read before this position's are written: a load of a line's 16 bytes
    // that stores of 2 bytes just wrote waits for the stores to complete (it was most of what a
    // move spent, measured: docs/quadtree.md).
    __m128i run[4];
    const int16_t *e0 = nbi_qb_at(q, at & ~7);
    if (node->cls >= NBI_QT_RB_MIN_CLS) nbi_q8_load(e0, run);
#endif
    nbi_fb_put(q, n, at, b);
    const float *f = nbi_fb_at(q, at);
    if (node->cls >= NBI_QT_RB_MIN_CLS) { // its run's box, computed anew if the box left it
        int16_t *r = nbi_rb_at(q, node->start, node->cls, (at - node->start) >> 3);
        const int16_t *e = nbi_qb_at(q, at);
        if ((e[0] < r[0]) | (e[8] < r[8]) | (e[16] < r[16]) | (e[24] < r[24])) {
#if defined(__SSE2__)
            // Lane at % 8 of each field takes the new value, then the least of the eight.
            const __m128i lane = _mm_cmpeq_epi16(_mm_set_epi16(7, 6, 5, 4, 3, 2, 1, 0),
                                                 _mm_set1_epi16((short)(at & 7)));
            for (int i = 0; i < 4; i++) {
                __m128i v = _mm_or_si128(_mm_andnot_si128(lane, run[i]),
                                         _mm_and_si128(lane, _mm_set1_epi16(e[8 * i])));
                v = _mm_min_epi16(v, _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 0, 3, 2)));
                v = _mm_min_epi16(v, _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 3, 0, 1)));
                v = _mm_min_epi16(v, _mm_srli_epi32(v, 16));
                r[8 * i] = (int16_t)_mm_cvtsi128_si32(v);
            }
#else
            nbi_rb_refit(q, node->start, node->cls, at);
#endif
        }
    } else { // its segment's box, likewise
        const int32_t g = nbi_seg_of(node->start, at);
        if (!nbi_f_holds(NBI_SB(q) + nbi_seg_box(node->start, g), f)) nbi_seg_refit(q, node, g);
    }
    // An ancestor whose box holds the rectangle holds every refitted box below it: each holds
    // only what the subtree held before and the rectangle.
    for (int32_t c = n; c >= NBI_QT_GROUPS; c = NBI_NODES(q)[c].parent) {
        const float *gc = nbi_gb_of(q, c);
        if (gc[0] <= f[0] && gc[4] <= f[4] && gc[8] <= f[8] && gc[12] <= f[12]) return;
        nbi_node_refit(q, c);
    }
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
    // While the root is a leaf, it may be fitted first (nbi_root_refit); kept to undo that.
    const bool leaf = NBI_NODES(q)[NBI_QT_ROOT].child < 0;
    nbiQtNode root;
    int32_t grown = 0;
    double fo[2] = {0.0, 0.0};
    if (leaf) {
        root = NBI_NODES(q)[NBI_QT_ROOT];
        grown = q->grown;
        fo[0] = q->fo[0];
        fo[1] = q->fo[1];
        nbi_root_refit(q, b);
    }
    nbiQtPlan plan;
    nbi_plan(q, b, 1, &plan);
    st = nbi_qt_room(q, &plan.need);
    if (st != NB_OK) {
        if (leaf) { // the root as it was
            nbi_root_reframe(q, &root, fo);
            NBI_NODES(q)[NBI_QT_ROOT].level = root.level;
            q->grown = grown;
        }
        return st;
    }
    nbHandle h;
    st = nbi_pool_alloc(&q->pool, 0, &h);
    if (st != NB_OK) return st; // cannot happen: room was prepared
    nbi_place(q, &plan, b, h.bits, user, filter.category, filter.mask);
    q->count++;
    q->nfiltered += !nbi_filter_all_bits(filter.category, filter.mask);
    *out = h;
    nbi_tidy_pay(q);
    return NB_OK;
}

// Moves the rectangle of a live slot to box b (checked): the body of nb_quadtree_move.
static nbStatus nbi_move_slot(nbQuadtree *q, int32_t slot, const double *b)
{
    const int32_t at = nbi_pool_value_live(&q->pool, slot);
    const int32_t n = NBI_OWN(q)[at];
    const nbiQtNode *node = &NBI_NODES(q)[n];
    if (n != NBI_QT_OUT && nbi_keeps(q, node, b)) {
        // It stays: nothing else changes.
        nbi_box_move(q, n, at, b);
        return NB_OK;
    }
    nbiQtPlan plan;
    nbi_plan(q, b, 0, &plan);
    if (plan.target == NBI_QT_OUT && n == NBI_QT_OUT) {
        nbi_box_put(q, n, NBI_NODES(q)[n].start, at, b);
        return NB_OK;
    }
    const nbStatus st = nbi_qt_room(q, &plan.need);
    if (st != NB_OK) return st;
    // Take the old copy out first (this never allocates nor moves other nodes' blocks), but keep
    // its node from collapsing until the new copy is in: the plan was made with it in place.
    const uint64_t hnd = nbi_hit_of(q, at)->handle.bits, user = nbi_hit_of(q, at)->user;
    const uint32_t cat = NBI_CAT(q)[at], mask = NBI_MASK(q)[at];
    nbi_take_out(q, at);
    nbi_place(q, &plan, b, hnd, user, cat, mask);
    // The root may have grown: the old node's index is the same unless it was the root.
    int32_t old = n;
    if (n == NBI_QT_ROOT && plan.grow > 0) old = -1; // an old root never needs collapsing
    if (old >= 0) nbi_collapse(q, old);
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
    st = nbi_move_slot(q, slot, b);
    if (st == NB_OK) nbi_tidy_pay(q);
    return st;
}

// How far ahead a batched move asks for the memory of the moves to come, one link of the chain
// handle -> pool slot -> position -> node a stage: the pool slot NBI_QT_AHEAD_SLOT moves
// ahead; the position's owner, boxes and 16-bit and float copies NBI_QT_AHEAD_POS ahead (its
// slot has arrived by then); the node's bounds, hot record and float box NBI_QT_AHEAD_NODE
// ahead (its owner has arrived). Measured: docs/quadtree.md.
enum { NBI_QT_AHEAD_SLOT = 16, NBI_QT_AHEAD_POS = 8, NBI_QT_AHEAD_NODE = 4, NBI_QT_AHEAD_RUN = 2 };
_Static_assert(NBI_QT_AHEAD_POS <= 8 && NBI_QT_AHEAD_NODE < NBI_QT_AHEAD_POS &&
                   NBI_QT_AHEAD_RUN < NBI_QT_AHEAD_NODE,
               "the ring of 8");

// The position of the slot a handle names, or -1: a hint, read without the generation check
// (the handle was checked, but an earlier move of the batch may have moved its rectangle).
NBI_INLINE int32_t nbi_pos_hint(const nbQuadtree *q, nbHandle e)
{
    const uint32_t s = (uint32_t)e.bits - 1u;
    if (s >= (uint32_t)q->pool.used) return -1;
    const int32_t p = ((const nbiPoolSlot *)q->pool.slots.ptr)[s].value;
    return p >= 0 && p < q->arena.top ? p : -1;
}

nbStatus nb_quadtree_move_many(nbQuadtree *q, const nbHandle *items, const nbRect *rects,
                               int32_t count, int32_t *moved)
{
    if (moved != NULL) *moved = 0;
    if (q == NULL || ((items == NULL || rects == NULL) && count > 0)) return NB_ERR_NULL_ARG;
    if (count < 0) return NB_ERR_OUT_OF_RANGE;
    // 1. Every entry is checked before anything moves (the first bad one's status).
    for (int32_t i = 0; i < count; i++) {
        if (i + NBI_QT_AHEAD_SLOT < count) {
            const uint32_t s = (uint32_t)items[i + NBI_QT_AHEAD_SLOT].bits - 1u;
            if (s < (uint32_t)q->pool.used)
                nbi_prefetch((const nbiPoolSlot *)q->pool.slots.ptr + s);
        }
        int32_t slot;
        nbStatus st = nbi_pool_lookup(&q->pool, items[i], &slot);
        if (st != NB_OK) return st;
        st = nbi_rect_check(&rects[i]);
        if (st != NB_OK) return st;
    }
    // 2. The moves, in order. For movers in random order each link of the chain is a cache miss
    //    after the one before; asking for the links of later moves while this one is made puts
    //    several misses in flight at once. Storage may move (a move that leaves its node can
    //    grow it), so every pointer is taken from the tree anew.
    // pos[e % 8]: the position of entry e, as the slot said when the lines of its position were
    // asked for (a hint: an earlier move of the batch may move it), read again for its node.
    int32_t pos[8];
    for (int32_t e = 0; e < count && e < NBI_QT_AHEAD_POS; e++) pos[e] = nbi_pos_hint(q, items[e]);
    nbStatus st = NB_OK;
    int32_t i = 0;
    for (; i < count; i++) {
        if (i + NBI_QT_AHEAD_SLOT < count) {
            const uint32_t s = (uint32_t)items[i + NBI_QT_AHEAD_SLOT].bits - 1u; // checked
            nbi_prefetch((const nbiPoolSlot *)q->pool.slots.ptr + s);
        }
        if (i + NBI_QT_AHEAD_POS < count) {
            const int32_t p = nbi_pos_hint(q, items[i + NBI_QT_AHEAD_POS]);
            pos[(i + NBI_QT_AHEAD_POS) & 7] = p;
            if (p >= 0) {
                nbi_prefetch(NBI_OWN(q) + p);
                nbi_prefetch_w(NBI_BOX(q) + p);
                nbi_prefetch_w(nbi_fb_at(q, p));
                nbi_prefetch_w(nbi_qb_at(q, p & ~7));
                nbi_prefetch_w(nbi_qb_at(q, p & ~7) + 31); // in case the run straddles lines
            }
        }
        if (i + NBI_QT_AHEAD_NODE < count) {
            const int32_t p = pos[(i + NBI_QT_AHEAD_NODE) & 7];
            const int32_t n = p >= 0 && p < q->arena.top ? NBI_OWN(q)[p] : -1;
            if (n >= 0 && n < q->node_top) {
                nbi_prefetch(NBI_NODES(q) + n);
                nbi_prefetch(NBI_HOT(q) + n);
                if (n >= NBI_QT_GROUPS) nbi_prefetch(nbi_gb_of(q, n));
            }
        }
        if (i + NBI_QT_AHEAD_RUN < count) { // the node's hot record has arrived: its run box
            const int32_t p = pos[(i + NBI_QT_AHEAD_RUN) & 7];
            const int32_t n = p >= 0 && p < q->arena.top ? NBI_OWN(q)[p] : -1;
            if (n >= 0 && n < q->node_top) {
                const nbiQtHot *h = NBI_HOT(q) + n;
                const int32_t run = (p - h->start) >> 3;
                if (h->cls >= NBI_QT_RB_MIN_CLS && run >= 0 && run < ((int32_t)1 << h->cls) >> 3)
                    nbi_prefetch_w(nbi_rb_at(q, h->start, h->cls, run));
            }
        }
        const nbRect *r = &rects[i];
        const double b[4] = {r->min[0], r->min[1], r->max[0], r->max[1]};
        st = nbi_move_slot(q, (int32_t)((uint32_t)items[i].bits - 1u), b); // checked above
        if (st != NB_OK) break;
        nbi_tidy_pay(q);
    }
    if (moved != NULL) *moved = i;
    return st;
}

nbStatus nb_quadtree_remove(nbQuadtree *q, nbHandle item)
{
    if (q == NULL) return NB_ERR_NULL_ARG;
    int32_t slot;
    nbStatus st = nbi_pool_lookup(&q->pool, item, &slot);
    if (st != NB_OK) return st;
    const int32_t at = nbi_pool_slot_value(&q->pool, slot);
    const int32_t n = NBI_OWN(q)[at];
    q->nfiltered -= !nbi_filter_all_bits(NBI_CAT(q)[at], NBI_MASK(q)[at]);
    nbi_take_out(q, at);
    nbi_pool_free(&q->pool, item, NULL);
    q->count--;
    nbi_collapse(q, n);
    nbi_tidy_pay(q);
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
    const double *b = NBI_BOX(q)[at].b;
    if (rect != NULL) {
        rect->min[0] = b[0];
        rect->min[1] = b[1];
        rect->max[0] = b[2];
        rect->max[1] = b[3];
    }
    if (user != NULL) *user = nbi_hit_of(q, at)->user;
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
    nbi_hit_of(q, at)->user = user;
    q->nfiltered += !nbi_filter_all_bits(filter.category, filter.mask) -
                    !nbi_filter_all_bits(NBI_CAT(q)[at], NBI_MASK(q)[at]);
    NBI_CAT(q)[at] = filter.category;
    NBI_MASK(q)[at] = filter.mask;
    return NB_OK;
}

// ---- build ----

typedef struct nbiQtRange {
    int32_t node, lo, hi;
    int32_t in; // which of the two item arrays holds the range: 0 work, 1 scratch
} nbiQtRange;

// The rectangles on their way into a build travel as their indices, 4 bytes each, through the
// levels' partitions; their boxes are read from the caller's array as a flat run of doubles, 4 a
// rectangle. A partition is stable, so each node's indices stay in increasing order and those
// reads walk forward through the array.
_Static_assert(sizeof(nbRect) == 4 * sizeof(double), "nbRect is min[2], max[2] with no padding");

// Asks for the box of the rectangle NBI_QT_BOX_AHEAD places after items[i] (before end): the
// partitions read boxes by index, in increasing but scattered order below the root's level.
enum { NBI_QT_BOX_AHEAD = 12 };

NBI_INLINE void nbi_box_ahead(const double *box, const int32_t *items, int32_t i, int32_t end)
{
    if (i + NBI_QT_BOX_AHEAD < end) nbi_prefetch(box + 4 * (size_t)items[i + NBI_QT_BOX_AHEAD]);
}

// in[0, n) into out[0, n) in the order of their centres along a Morton curve over the node's
// cell (16 x 16 steps; centres outside it clamped), by one counting sort; key is scratch.
static void nbi_build_sort(const nbiQtNode *nd, const double *box, const int32_t *in, int32_t *out,
                           uint8_t *key, int32_t n)
{
    const double sx = 16.0 / (nd->chi[0] - nd->clo[0]), sy = 16.0 / (nd->chi[1] - nd->clo[1]);
    if (n <= NBI_QT_SEG || !(isfinite(sx) && isfinite(sy))) { // one segment, or the outside list
        memcpy(out, in, (size_t)n * sizeof *in);
        return;
    }
    int32_t at[257];
    memset(at, 0, sizeof at);
    for (int32_t i = 0; i < n; i++) {
        nbi_box_ahead(box, in, i, n);
        key[i] = nbi_curve_key(nd, sx, sy, box + 4 * (size_t)in[i]);
        at[key[i] + 1]++;
    }
    for (int k = 0; k < 256; k++) at[k + 1] += at[k];
    for (int32_t i = 0; i < n; i++) out[at[key[i]]++] = in[i];
}

// Which child (1 + 0..3) or the node itself (0) takes each rectangle items[lo, hi), into pick,
// counted in per. Inlined with `tight` a constant, so each placement gets its own loop.
NBI_INLINE void nbi_pick_range(bool tight, const double mid[2], const nbiQtNode *kids,
                               const double *box, const int32_t *items, int32_t lo, int32_t hi,
                               uint8_t *pick, int32_t per[5])
{
    int32_t i = lo;
    for (; i < hi - NBI_QT_BOX_AHEAD; i++) { // nbi_box_ahead, with its test out of the loop
        nbi_prefetch(box + 4 * (size_t)items[i + NBI_QT_BOX_AHEAD]);
        const int k = nbi_pick_mid(tight, mid, kids, box + 4 * (size_t)items[i]) + 1;
        pick[i] = (uint8_t)k;
        per[k]++;
    }
    for (; i < hi; i++) {
        const int k = nbi_pick_mid(tight, mid, kids, box + 4 * (size_t)items[i]) + 1;
        pick[i] = (uint8_t)k;
        per[k]++;
    }
}

// Fills the block of node n (taken and readied: nbi_block_init) with the `count` rectangles
// ids[] of the caller's boxes, in that order: every per-position copy (nbi_put_fields' for one,
// here a block at once), then its run boxes (or its one segment's box) from what it holds, and
// u = the union of their float boxes, which the node's float box is grown by. Rectangle id takes
// slot id (nb_quadtree_build).
static void nbi_build_fill(nbQuadtree *s, int32_t n, const double *box, const int32_t *ids,
                           int32_t count, const uint64_t *users, const nbFilter *filters,
                           float u[4])
{
    const nbiQtNode *nd = &NBI_NODES(s)[n];
    // Local copies of what every rectangle reads (its frame, nbi_sync'ed when the node was made;
    // the float origin; where the arrays are), which the stores below then cannot be taken to
    // change.
    const nbiQtHot h = NBI_HOT(s)[n];
    const double fo[2] = {s->fo[0], s->fo[1]};
    const int32_t start = nd->start;
    const int c = nd->cls;
    nbiQtBox *bx = NBI_BOX(s) + start;
    uint32_t *cat = NBI_CAT(s) + start, *mask = NBI_MASK(s) + start;
    int32_t *own = NBI_OWN(s) + start;
    float *fb = NBI_FB(s);
    int16_t *qb = NBI_QB(s);
    float lo[4] = {INFINITY, INFINITY, INFINITY, INFINITY};
    for (int32_t j = 0; j < count; j++) {
        const int32_t id = ids[j], p = start + j;
        const double *b = box + 4 * (size_t)id;
        memcpy(bx[j].b, b, sizeof bx[j].b);
        const double w[4] = {b[0] - fo[0], b[1] - fo[1], -(b[2] - fo[0]), -(b[3] - fo[1])};
        float v[4]; // nbi_f_fields
        nbi_f_round4(w, v, -1);
        int16_t e[4];
        nbi_q_fields(&h, b, e);
        float *f = fb + (size_t)NBI_QT_RUN_FLOATS * (size_t)(p >> 2) + (p & 3); // nbi_fb_at
        int16_t *run = qb + (size_t)NBI_QT_QRUN * (size_t)(p >> 3);             // nbi_qb_at
        for (int i = 0; i < 4; i++) {
            f[4 * i] = v[i];
            run[8 * i + (p & 7)] = e[i];
            lo[i] = v[i] < lo[i] ? v[i] : lo[i];
        }
        nbHit *hit = (nbHit *)(void *)(run + 32) + (p & 7); // nbi_hit_of
        hit->handle = nbi_pool_handle_first(&s->pool, id);
        hit->user = users != NULL ? users[id] : (uint64_t)id;
        const nbFilter fl = filters != NULL ? filters[id] : NB_FILTER_ALL;
        cat[j] = fl.category;
        mask[j] = fl.mask;
        own[j] = n;
    }
    for (int i = 0; i < 4; i++) u[i] = lo[i];
    if (c >= NBI_QT_RB_MIN_CLS) {
        for (int32_t p = start; p < start + count; p += 8) nbi_rb_refit(s, start, c, p);
    } else { // one segment: its box is the union
        float *g = NBI_SB(s) + nbi_seg_box(start, start);
        for (int i = 0; i < 4; i++) g[i] = u[i];
    }
}

// Lays the rectangles work[lo, hi) of `range` out under its node, depth first: the node splits
// while it holds more than the threshold (a stable counting sort of its range by child, those
// that stay first), and each node's own rectangles get a block at the arena's end as the walk
// reaches it, so nodes and their rectangles sit in memory in the order queries visit them.
static nbStatus nbi_build_into(nbQuadtree *s, const double *box, int32_t *work, int32_t *scratch,
                               uint8_t *pick, const uint64_t *users, const nbFilter *filters,
                               nbiQtRange first)
{
    nbiQtRange stack[NBI_QT_STACK];
    int top = 0;
    stack[top++] = first;
    while (top > 0) {
        const nbiQtRange r = stack[--top];
        int32_t stay = r.hi - r.lo;
        const int32_t *items = r.in ? scratch : work; // where the rectangles that stay are
        const nbiQtNode *node = &NBI_NODES(s)[r.node];
        // A node with children already (the root and its line after growing) always passes its
        // rectangles down.
        if (r.node != NBI_QT_OUT &&
            (node->child >= 0 || (stay > s->threshold && node->level < s->max_depth))) {
            if (node->child < 0) {
                nbiQtNeed need = {0, 1, 0, 0, {0}};
                nbStatus st = nbi_qt_room(s, &need);
                if (st != NB_OK) return st;
                const int32_t g = nbi_group_take(s);
                nbiQtNode *nodes = NBI_NODES(s);
                for (int k = 0; k < 4; k++) {
                    nbi_node_init(&nodes[g + k], r.node, nodes[r.node].level + 1);
                    nbi_child_geometry(s, &nodes[r.node], k, &nodes[g + k]);
                    nbi_sync(s, g + k);
                }
                nodes[r.node].child = g;
                nbi_sync(s, r.node);
            }
            const nbiQtNode *nodes = NBI_NODES(s);
            const int32_t g = nodes[r.node].child;
            int32_t per[5] = {0, 0, 0, 0, 0};
            // Partitioned from one array into the other, so nothing is copied back.
            int32_t *to = r.in ? work : scratch;
            double mid[2];
            nbi_cell_mid(&nodes[r.node], mid);
            if (s->placement == NB_QUADTREE_TIGHT) // the placement's test out of the loop
                nbi_pick_range(true, mid, &nodes[g], box, items, r.lo, r.hi, pick, per);
            else
                nbi_pick_range(false, mid, &nodes[g], box, items, r.lo, r.hi, pick, per);
            int32_t at[5];
            at[0] = r.lo;
            for (int k = 1; k < 5; k++) at[k] = at[k - 1] + per[k - 1];
            int32_t fill[5];
            memcpy(fill, at, sizeof fill);
            for (int32_t i = r.lo; i < r.hi; i++) to[fill[pick[i]]++] = items[i];
            items = to;
            stay = per[0];
            for (int k = 3; k >= 0; k--)
                if (per[k + 1] > 0)
                    stack[top++] = (nbiQtRange){g + k, at[k + 1], at[k + 1] + per[k + 1], 1 - r.in};
        }
        if (stay == 0) continue;
        const int c = nbi_cls_for(stay);
        nbiQtNeed need = {0, 0, 0, 1, {(int8_t)c}};
        nbStatus st = nbi_qt_room(s, &need);
        if (st != NB_OK) return st;
        const int32_t start = nbi_block_take(s, c);
        nbi_block_init(s, start, c, start + stay);
        nbiQtNode *nd = &NBI_NODES(s)[r.node];
        nd->start = start;
        nd->cls = c;
        nd->count = stay;
        // Along a curve, so that each segment of the block holds rectangles near each other.
        int32_t *sorted = items == work ? scratch : work; // free over this range
        nbi_build_sort(nd, box, items + r.lo, sorted + r.lo, pick + r.lo, stay);
        // The node's float box and its ancestors' grow once, by the union of its rectangles'.
        float u[4];
        nbi_build_fill(s, r.node, box, sorted + r.lo, stay, users, filters, u);
        nbi_bbox_grow_by(s, r.node, u);
        nbi_sync(s, r.node);
    }
    return NB_OK;
}

// Points every slot of a built tree at its rectangle's position, node by node: the slots in the
// order of the positions, a random order, in one loop of their own. Done in the layout, one by
// one amid its stores, such random stores (then into the caller's handles) cost a build of 1M
// about 30% (docs/quadtree.md).
enum { NBI_QT_AHEAD_SLOTS = 16 };

static void nbi_build_slots(nbQuadtree *s)
{
    const nbiQtNode *nodes = NBI_NODES(s);
    nbiPoolSlot *slots = (nbiPoolSlot *)s->pool.slots.ptr;
    for (int32_t n = 0; n < s->node_top; n++) {
        const int32_t p0 = nodes[n].start, p1 = p0 + nodes[n].count;
        for (int32_t p = p0; p < p1; p++) {
#if defined(__GNUC__)
            if (p + NBI_QT_AHEAD_SLOTS < p1)
                __builtin_prefetch(
                    slots + ((uint32_t)nbi_hit_of(s, p + NBI_QT_AHEAD_SLOTS)->handle.bits - 1u), 1);
#endif
            slots[(uint32_t)nbi_hit_of(s, p)->handle.bits - 1u].value = p;
        }
    }
}

// Checks the n >= 1 rectangles (nbi_rect_check: the first bad one's status) and, in the same
// pass, takes their union u and the box cb of their centres, as nbi_pick computes them (each as
// min x, min y, max x, max y).
static nbStatus nbi_build_extent(const nbRect *rects, int32_t n, double u[4], double cb[4])
{
    nbStatus st = nbi_rect_check(&rects[0]);
    if (st != NB_OK) return st;
#if defined(__SSE2__)
    // min(new, cur) and max(new, cur) keep the current value on ties, as the loop below does.
    const __m128d half = _mm_set1_pd(0.5);
    __m128d lo = _mm_loadu_pd(rects[0].min), hi = _mm_loadu_pd(rects[0].max);
    __m128d clo = _mm_mul_pd(_mm_add_pd(lo, hi), half), chi = clo;
    for (int32_t i = 1; i < n; i++) {
        st = nbi_rect_check(&rects[i]);
        if (st != NB_OK) return st;
        const __m128d a = _mm_loadu_pd(rects[i].min), b = _mm_loadu_pd(rects[i].max);
        const __m128d c = _mm_mul_pd(_mm_add_pd(a, b), half);
        lo = _mm_min_pd(a, lo);
        hi = _mm_max_pd(b, hi);
        clo = _mm_min_pd(c, clo);
        chi = _mm_max_pd(c, chi);
    }
    _mm_storeu_pd(u, lo);
    _mm_storeu_pd(u + 2, hi);
    _mm_storeu_pd(cb, clo);
    _mm_storeu_pd(cb + 2, chi);
#else
    for (int32_t i = 0; i < n; i++) {
        st = nbi_rect_check(&rects[i]);
        if (st != NB_OK) return st;
        for (int a = 0; a < 2; a++) {
            const double c = 0.5 * (rects[i].min[a] + rects[i].max[a]); // as nbi_pick
            if (i == 0 || rects[i].min[a] < u[a]) u[a] = rects[i].min[a];
            if (i == 0 || rects[i].max[a] > u[2 + a]) u[2 + a] = rects[i].max[a];
            if (i == 0 || c < cb[a]) cb[a] = c;
            if (i == 0 || c > cb[2 + a]) cb[2 + a] = c;
        }
    }
#endif
    return NB_OK;
}

nbStatus nb_quadtree_build(nbQuadtree *q, const nbRect *rects, int32_t n, const uint64_t *users,
                           const nbFilter *filters, nbHandle *handles)
{
    if (q == NULL || (rects == NULL && n > 0)) return NB_ERR_NULL_ARG;
    if (n < 0 || n > NBI_QT_MAX_ITEMS) return NB_ERR_OUT_OF_RANGE;
    // The first bad rectangle decides (nbi_rect_check: finiteness, then range).
    double u[4] = {0.0, 0.0, 0.0, 0.0};  // the union of every rectangle
    double cb[4] = {0.0, 0.0, 0.0, 0.0}; // the box of their centres
    if (n > 0) {
        const nbStatus bad = nbi_build_extent(rects, n, u, cb);
        if (bad != NB_OK) return bad;
    }
    // The new tree is laid out in the spare layout and swapped in only when it is complete: a
    // failure leaves q as it was.
    nbStatus st = nbi_qt_spare(q, n);
    if (st != NB_OK) return st;
    nbQuadtree *s = q->spare;
    // Its root fits the data (the desc's bounds are only a hint), with a little to spare for
    // rectangles that then move about. Where no finite root fits, the desc's root grows towards
    // the data.
    if (n > 0) {
        nbiQtNode *r = &NBI_NODES(s)[NBI_QT_ROOT];
        nbiQtNode fit = *r;
        if (nbi_root_fit(s, cb, u, nbi_fit_least(s), NBI_QT_FIT_MARGIN, &fit)) {
            *r = fit;
            nbi_sync(s, NBI_QT_ROOT);
            nbi_cell_middle(r, s->fo); // nothing is stored yet
        }
    }
    const size_t un = (size_t)n;
    const double *box = (const double *)rects; // rectangle i's box at box + 4 i
    int32_t *work = (int32_t *)q->scratch.ptr; // 2 n: the partitions' two arrays, then pick
    uint8_t *pick = n > 0 ? (uint8_t *)(work + 2 * un) : NULL;
    // Room for the rectangles, and up front for as many nodes and block positions as the tree
    // it replaces took (the layout grows as the build needs more, geometrically, rather than
    // a step at a time).
    const int64_t old_top = q->arena.top, old_groups = (q->node_top - NBI_QT_GROUPS) / 4;
    nbiQtNeed need = {n, old_groups, 2 * (int64_t)n + 64, 0, {0}};
    if (need.positions < old_top) need.positions = old_top;
    st = nbi_qt_room(s, &need);
    const int g = n > 0 ? nbi_growth(s, u) : 0;
    if (st == NB_OK && g > 0) {
        nbiQtNeed grow = {0, g, 0, 0, {0}};
        st = nbi_qt_room(s, &grow);
        for (int k = 0; k < g && st == NB_OK; k++) nbi_grow(s, u);
    }
    if (st == NB_OK && n > 0) {
        // Rectangles outside the root go to the outside list, after the others.
        int32_t *scratch = work + un;
        int32_t inside = 0, outside = 0;
        for (int32_t i = 0; i < n; i++) {
            if (nbi_within(&NBI_NODES(s)[NBI_QT_ROOT], box + 4 * (size_t)i))
                work[inside++] = i;
            else
                scratch[outside++] = i;
        }
        memcpy(work + inside, scratch, (size_t)outside * sizeof *work);
        s->count = n;
        // Rectangle i takes slot i (an emptied pool gives out 0, 1, ... in order): moves and
        // removes in the caller's order then read the slots in order. Their positions are set
        // after the layout (nbi_build_slots).
        nbi_pool_alloc_first(&s->pool, n); // room was made
        for (int32_t i = 0; filters != NULL && i < n; i++)
            s->nfiltered += !nbi_filter_all_bits(filters[i].category, filters[i].mask);
        if (outside > 0)
            st = nbi_build_into(s, box, work, scratch, pick, users, filters,
                                (nbiQtRange){NBI_QT_OUT, inside, n, 0});
        if (st == NB_OK && inside > 0)
            st = nbi_build_into(s, box, work, scratch, pick, users, filters,
                                (nbiQtRange){NBI_QT_ROOT, 0, inside, 0});
    }
    if (st != NB_OK) return st; // the spare is emptied at the next build
    if (n > 0) {
        nbi_build_slots(s);
        for (int32_t i = 0; handles != NULL && i < n; i++)
            handles[i] = nbi_pool_handle_first(&s->pool, i);
    }
    nbi_qt_swap_spare(q); // q's old layout is the next build's spare
    return NB_OK;
}
