// SPDX-License-Identifier: MIT
/// nearby: exact neighbour queries in 2D and 3D. This header holds the vocabulary every
/// structure shares: status codes, allocator hooks, point views and result types.
#ifndef NEARBY_NEARBY_H
#define NEARBY_NEARBY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nearby/nb_version.h>

#if defined(NB_STATIC_DEFINE)
#define NB_API
#elif defined(_WIN32)
#if defined(NB_BUILDING)
#define NB_API __declspec(dllexport)
#else
#define NB_API __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define NB_API __attribute__((visibility("default")))
#else
#define NB_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/// What a fallible call returns. Every value has a name through nb_status_str().
typedef enum nbStatus {
    NB_OK = 0,
    NB_ERR_NULL_ARG,         ///< a required pointer was NULL
    NB_ERR_NOT_FINITE,       ///< NaN or infinity in a coordinate, radius or size
    NB_ERR_OUT_OF_RANGE,     ///< finite but not accepted (negative radius or count, cell overflow)
    NB_ERR_BAD_HANDLE,       ///< null, stale, or issued by another structure
    NB_ERR_OUT_OF_MEMORY,    ///< the allocator returned NULL; the structure is unchanged
    NB_ERR_BUFFER_TOO_SMALL, ///< output truncated to capacity; the found count holds the full count
    NB_ERR_INTERNAL,         ///< a broken invariant was caught: a bug in nearby, please report it
    NB_STATUS_COUNT
} nbStatus;

/// The status's enum name, e.g. "NB_ERR_NOT_FINITE". Never NULL, even for unknown values.
NB_API const char *nb_status_str(nbStatus status);

/// A one-line English description of the status. Never NULL, even for unknown values.
NB_API const char *nb_status_message(nbStatus status);

/// The library's compiled version as (major << 16) | (minor << 8) | patch. Compare it with
/// NB_VERSION built from the header to detect a header/library mismatch.
NB_API uint32_t nb_version(void);

/// Allocation hooks, one set per structure; never global. `alloc` returns memory aligned to
/// `align` (a power of two, at most 64) or NULL on failure. `free` receives the size that was
/// passed to `alloc`. A NULL `nbAllocator *` in a desc means malloc/free.
typedef struct nbAllocator {
    void *(*alloc)(size_t size, size_t align, void *user);
    void (*free)(void *ptr, size_t size, void *user);
    void *user;
} nbAllocator;

/// A task nearby hands to your scheduler: do items [begin, end) of it, as worker `worker`.
typedef void nbTaskFn(int32_t begin, int32_t end, int32_t worker, void *task_ctx);

/// Your scheduler, in the manner of Box2D v3's task callbacks, folded into one blocking call:
/// run `task` over [0, count), split into ranges of at least `min_range` items, each range once,
/// on your workers, and return when every range has finished. Each call of `task` gets a worker
/// id in [0, workers) (see nbTasks) that no other running call has at that moment. Results never
/// depend on how you split the items or which worker runs which range. The serial scheduler is
/// `task(0, count, 0, task_ctx)`.
typedef void nbParallelForFn(nbTaskFn *task, int32_t count, int32_t min_range, void *task_ctx,
                             void *user);

/// A scheduler and its worker count. Zero-initialised (or a NULL `nbTasks *`) means serial.
typedef struct nbTasks {
    nbParallelForFn *parallel_for; ///< NULL = serial
    void *user;                    ///< passed to parallel_for
    int32_t workers;               ///< worker ids are in [0, workers); 0 or 1 = serial
} nbTasks;

/// A read-only view of the caller's points: `count` points of `dim` doubles each. Point i's
/// coordinates start at byte `i * stride` from `data`, so an array of structs works. The view
/// is read during the call only; nearby never keeps the pointer.
///
/// Optional filter bits per point, read the same way: point i's category is the uint32_t at byte
/// `i * category_stride` from `category`, its mask at `i * mask_stride` from `mask`. A NULL
/// `category` gives every point all bits (0xFFFFFFFF), and so does a NULL `mask`: zero-initialised
/// fields mean "no filtering". See nbFilter for the rule.
typedef struct nbPoints {
    const double *data;       ///< first coordinate of point 0; may be NULL when count == 0
    int32_t count;            ///< number of points, >= 0
    int32_t dim;              ///< 2 or 3; 0 means the structure's dimension
    size_t stride;            ///< bytes from one point to the next; 0 means dim * sizeof(double)
    const uint32_t *category; ///< category bits of point 0; NULL = all bits for every point
    size_t category_stride;   ///< bytes between categories; 0 means sizeof(uint32_t)
    const uint32_t *mask;     ///< mask bits of point 0; NULL = all bits for every point
    size_t mask_stride;       ///< bytes between masks; 0 means sizeof(uint32_t)
} nbPoints;

/// Category and mask bits, Box2D's collision-filter rule: two things a and b may match only when
/// `(a.category & b.mask) != 0 && (b.category & a.mask) != 0`. It applies between two stored
/// points (pairs, cross pairs) and between a query's filter and each stored point. The filter is
/// tested inside the traversal, before a candidate is reported, never afterwards. A point with
/// category 0 matches nothing; NB_FILTER_ALL matches every point whose mask is not 0.
typedef struct nbFilter {
    uint32_t category; ///< what the asker is
    uint32_t mask;     ///< what the asker wants to find
} nbFilter;

/// The filter that accepts every point (what the unfiltered queries use).
#ifdef __cplusplus
#define NB_FILTER_ALL (nbFilter{0xFFFFFFFFu, 0xFFFFFFFFu})
#else
#define NB_FILTER_ALL ((nbFilter){0xFFFFFFFFu, 0xFFFFFFFFu})
#endif

/// An axis-aligned box, bounds inclusive: a point p is in it when min[d] <= p[d] <= max[d] on
/// every axis the structure has (a 2D structure reads min[0..1] and max[0..1] only). Every box a
/// query takes is one of these.
typedef struct nbBox {
    double min[3];
    double max[3];
} nbBox;

/// Names an item stored in an incremental structure (hash, tiles, quadtree). Opaque; pass it by
/// value. Bits 0-31: slot + 1. Bits 32-47: generation, bumped when the slot is freed. Bits 48-63:
/// owner tag, stamped at create, so a handle from another structure is rejected. All-zero is the
/// null handle (`nbHandle h = {0};`); a null, stale or foreign handle gets NB_ERR_BAD_HANDLE.
typedef struct nbHandle {
    uint64_t bits;
} nbHandle;

/// The null handle.
#ifdef __cplusplus
#define NB_HANDLE_NULL (nbHandle{0u})
#else
#define NB_HANDLE_NULL ((nbHandle){0u})
#endif

/// An item in a result from an incremental structure: its handle and your user value.
typedef struct nbHit {
    nbHandle handle;
    uint64_t user;
} nbHit;

/// A pair of items. From all-pairs calls each unordered pair comes once; from cross-pair calls
/// `a` is from set A and `b` from set B, roles kept.
typedef struct nbHitPair {
    nbHit a, b;
} nbHitPair;

/// A neighbour from an incremental structure's k-nearest query: the item and its squared
/// distance as the test computes it.
typedef struct nbHitNeighbor {
    nbHit hit;
    double dist2;
} nbHitNeighbor;

/// Called once per item; return false to stop early (the call then returns NB_OK).
typedef bool nbHitFn(nbHit hit, void *user);
/// Called once per neighbour of a k-nearest query, nearest first, with its squared distance;
/// return false to stop early (the call then returns NB_OK).
typedef bool nbHitNeighborFn(nbHit hit, double dist2, void *user);
/// Called once per pair of items; return false to stop early (the call then returns NB_OK).
typedef bool nbHitPairFn(nbHit a, nbHit b, void *user);

/// A pair of point indices. From all-pairs calls it is unordered and always has i < j; from
/// cross-pair calls (set A against set B) i indexes A and j indexes B, roles kept.
typedef struct nbPair {
    int32_t i;
    int32_t j;
} nbPair;

/// A neighbour found by a k-nearest query: the point's index and its squared distance, computed
/// as dx*dx + dy*dy (+ dz*dz) in double.
typedef struct nbNeighbor {
    int32_t index;
    double dist2;
} nbNeighbor;

/// Called once per matching point. Return false to stop early (the query then returns NB_OK).
typedef bool nbVisitFn(int32_t index, void *user);

/// Called once per neighbour of a k-nearest query, nearest first, with its squared distance.
/// Return false to stop early (the query then returns NB_OK).
typedef bool nbNeighborFn(int32_t index, double dist2, void *user);

/// The callback forms of k-nearest queries (`visit_knn`) keep their k best on the stack up to
/// this k, and in memory from the structure's allocator above it.
#define NB_KNN_STACK 128

/// Called once per pair, with i < j (cross pairs: i in set A, j in set B). Return false to stop
/// early (the call then returns NB_OK).
typedef bool nbPairFn(int32_t i, int32_t j, void *user);

/// Applies an order to one of your arrays: dst element p = src element order[p], for p in
/// [0, n). Elements are `size` bytes, `src_stride` and `dst_stride` bytes apart (0 = size), so
/// one field of an array of structs can be gathered too. src and dst must not overlap (gather
/// into a second buffer and swap, as simulations double-buffer anyway). Every order[p] is
/// checked to be in [0, n) before anything is written: NB_ERR_OUT_OF_RANGE for one that is not,
/// a negative n, a size of 0 or a stride smaller than size; NB_ERR_NULL_ARG for a NULL pointer
/// with n > 0. `order` need not be a permutation (an index may repeat), but the usual one comes
/// from nb_grid_cell_order.
NB_API nbStatus nb_gather(const int32_t *order, int32_t n, const void *src, size_t src_stride,
                          void *dst, size_t dst_stride, size_t size);

#ifdef __cplusplus
}
#endif

#endif
