// SPDX-License-Identifier: MIT
// The power-of-two block arena, for structures that keep each bucket's items contiguous in
// per-position arrays (the tile grid's blocks, the quadtree's nodes). Never installed.
//
// Positions [0, top) of the structure's arrays are cut into blocks of 2^c positions (class c).
// A block given back waits on a free list of its class, linked through one int32_t per-position
// array of the structure (`link`: the first position of a free block holds the next free block
// of its class, -1 ends the list), and is taken again before the arena grows at its end; so a
// workload that moves items about reaches a state in which the arena stops growing. The arena
// only hands out positions: the structure makes room in its arrays first (all or nothing), with
// nbi_arena_need telling it how many positions past `top` a take would use.
#ifndef NEARBY_BLOCK_ARENA_H
#define NEARBY_BLOCK_ARENA_H

#include "nb_internal.h"

enum { NBI_ARENA_CLASSES = 31 }; // block sizes 2^0 .. 2^30

typedef struct nbiArena {
    int32_t top;                           // positions [0, top) belong to blocks, live or free
    int32_t free_block[NBI_ARENA_CLASSES]; // the first free block of each class, -1: none
    int32_t free_count[NBI_ARENA_CLASSES]; // free blocks of each class
    int64_t free_positions;                // positions in free blocks
} nbiArena;

// An empty arena: no blocks.
NBI_INLINE void nbi_arena_reset(nbiArena *a)
{
    a->top = 0;
    for (int c = 0; c < NBI_ARENA_CLASSES; c++) {
        a->free_block[c] = -1;
        a->free_count[c] = 0;
    }
    a->free_positions = 0;
}

// Positions past `top` that taking a block of class c needs when `earlier` blocks of the same
// class are taken first: 0 while its free list has one left, else 2^c.
NBI_INLINE int64_t nbi_arena_need(const nbiArena *a, int c, int32_t earlier)
{
    return a->free_count[c] > earlier ? 0 : (int64_t)1 << c;
}

// A block of class c (room made): from its free list, else from the arena's end.
NBI_INLINE int32_t nbi_arena_take(nbiArena *a, const int32_t *link, int c)
{
    int32_t b = a->free_block[c];
    if (b >= 0) {
        a->free_block[c] = link[b];
        a->free_count[c]--;
        a->free_positions -= (int64_t)1 << c;
        return b;
    }
    b = a->top;
    a->top += (int32_t)1 << c;
    return b;
}

// Gives the block of class c at `start` back to its free list.
NBI_INLINE void nbi_arena_give(nbiArena *a, int32_t *link, int32_t start, int c)
{
    link[start] = a->free_block[c];
    a->free_block[c] = start;
    a->free_count[c]++;
    a->free_positions += (int64_t)1 << c;
}

// Whether the free lists are sound: each block inside [0, top), each list as long as its count,
// the positions adding up. The caller checks that live blocks plus free_positions cover top.
NBI_INLINE bool nbi_arena_valid(const nbiArena *a, const int32_t *link)
{
    if (a->top < 0) return false;
    int64_t positions = 0;
    for (int c = 0; c < NBI_ARENA_CLASSES; c++) {
        int32_t len = 0;
        for (int32_t b = a->free_block[c]; b >= 0; b = link[b]) {
            if ((int64_t)b + ((int64_t)1 << c) > a->top || ++len > a->free_count[c]) return false;
            positions += (int64_t)1 << c;
        }
        if (len != a->free_count[c]) return false;
    }
    return positions == a->free_positions;
}

#endif
