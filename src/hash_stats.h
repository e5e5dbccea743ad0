// SPDX-License-Identifier: MIT
// How the spatial hash (hash.c) has been making room: counters for the tests and the
// benchmark, which check that a wandering crowd relays out seldom. Internal, never installed.
#ifndef NB_HASH_STATS_H
#define NB_HASH_STATS_H

#include <nearby/hash.h>

#include <stdbool.h>
#include <stdint.h>

typedef struct nbiHashStats {
    int64_t relayouts; // every item placed again (nbi_relayout), since the hash was created
    int64_t renumbers; // hashed cells moved to the end of the numbering (nbi_cell_renumber)
    bool dense;        // cells numbered over a box now, not through the cell table
    int32_t cells;     // cell numbers in use (dense: the box's cells)
    int32_t max_slack; // the most slack positions in one cell: a walker reads them with its items
    int64_t slack;     // slack positions in all cells (the tail after the last cell not counted)
} nbiHashStats;

void nbi_hash_stats(const nbHash *hash, nbiHashStats *out);

#endif
