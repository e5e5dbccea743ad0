// SPDX-License-Identifier: MIT
// The two result sinks every walker writes to: one for pairs, one for hits (single indices).
// Each carries the three shapes a public call can ask for: count only, fill the caller's buffer
// (counting on past its capacity, so the caller learns the full size), or call the caller's
// visitor until it says stop. Never installed.
#ifndef NEARBY_SINK_H
#define NEARBY_SINK_H

#include "nb_internal.h"

#include <string.h>

enum { NBI_SINK_COUNT, NBI_SINK_BUFFER, NBI_SINK_VISIT, NBI_SINK_BLOCK };

// Block mode: called with each block of pairs the kernels accept (m >= 0 of them at w), for a
// consumer inside the library that takes pairs a block at a time (the neighbour rows).
typedef void nbiPairBlockFn(const nbPair *w, int64_t m, void *user);
enum { NBI_SCRATCH = 1024 };

// Where pairs go. Buffer mode writes straight into `out` while it has room (so the common case
// copies nothing) and keeps counting past it; visit mode calls `fn` from a scratch block.
typedef struct nbiPairSink {
    int mode;
    bool stop;
    nbPair *out;
    int64_t cap;
    int64_t found; // pairs accepted so far; in buffer mode min(found, cap) are in out
    nbPairFn *fn;
    nbiPairBlockFn *block; // block mode
    void *user;
    nbPair scratch[NBI_SCRATCH];
} nbiPairSink;

// Starts a sink in `mode` (NBI_SINK_*); `out`/`cap` for buffer mode, `fn`/`user` for visit mode.
static inline void nbi_pair_sink_init(nbiPairSink *s, int mode, nbPair *out, int64_t cap,
                                      nbPairFn *fn, void *user)
{
    s->mode = mode;
    s->stop = false;
    s->out = out;
    s->cap = cap;
    s->found = 0;
    s->fn = fn;
    s->block = NULL;
    s->user = user;
}

// Starts a sink in block mode: `block(w, m, user)` for each block of pairs.
static inline void nbi_pair_sink_block(nbiPairSink *s, nbiPairBlockFn *block, void *user)
{
    nbi_pair_sink_init(s, NBI_SINK_BLOCK, NULL, 0, NULL, user);
    s->block = block;
}

// Where the next `len` (<= NBI_SCRATCH) candidates may be written.
NBI_INLINE nbPair *nbi_reserve(nbiPairSink *s, int64_t len)
{
    if (s->mode == NBI_SINK_BUFFER && s->cap - s->found >= len) return s->out + s->found;
    return s->scratch;
}

// Accepts `m` pairs just written at `w` (from nbi_reserve).
static inline void nbi_commit(nbiPairSink *s, const nbPair *w, int64_t m)
{
    if (w != s->scratch) { // written in place
        s->found += m;
        return;
    }
    if (s->mode == NBI_SINK_BLOCK) {
        s->found += m;
        s->block(w, m, s->user);
        return;
    }
    if (s->mode == NBI_SINK_BUFFER) {
        int64_t room = s->cap - s->found;
        if (room > 0) memcpy(s->out + s->found, w, (size_t)(room < m ? room : m) * sizeof(nbPair));
        s->found += m;
        return;
    }
    for (int64_t t = 0; t < m; t++) {
        s->found++;
        if (!s->fn(w[t].i, w[t].j, s->user)) {
            s->stop = true;
            return;
        }
    }
}

// Where hits (radius and box queries) go: the caller's buffer (counting past its capacity) or
// its visitor. Count mode counts only.
typedef struct nbiHitSink {
    int mode;
    bool stop;
    bool positions; // buffer and count modes: report view positions p instead of idx[p]
    int32_t *out;
    int32_t cap;
    int32_t found;
    nbVisitFn *fn;
    void *user;
} nbiHitSink;

static inline void nbi_hit_sink_init(nbiHitSink *s, int mode, int32_t *out, int32_t cap,
                                     nbVisitFn *fn, void *user)
{
    s->mode = mode;
    s->stop = false;
    s->positions = false;
    s->out = out;
    s->cap = cap;
    s->found = 0;
    s->fn = fn;
    s->user = user;
}

NBI_INLINE void nbi_hit(nbiHitSink *s, int32_t index)
{
    if (s->mode == NBI_SINK_VISIT) {
        if (!s->fn(index, s->user)) s->stop = true;
        return;
    }
    if (s->mode == NBI_SINK_BUFFER && s->found < s->cap) s->out[s->found] = index;
    s->found++;
}

#endif
