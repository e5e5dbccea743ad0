// SPDX-License-Identifier: MIT
// A small pthreads scheduler for nearby's nbTasks, header-only: copy it into your program, or
// bring your engine's job system instead (nbParallelForFn is one blocking call).
//
//     nbxPool pool;
//     if (nbx_pool_start(&pool, 0) != 0) ...           // 0 = one worker per online CPU
//     nbTasks tasks = nbx_pool_tasks(&pool);
//     nbGridDesc desc = {.dim = 2, .tasks = &tasks};  // builds and all pairs now use them
//     ...
//     nbx_pool_stop(&pool);                            // after the last grid call
//
// The calling thread is worker 0; workers 1.. are threads that wait between calls. A call
// hands out ranges of items through an atomic counter, so a slow worker takes fewer ranges.
// A grid build is several calls in a row (scan, count, offsets, positions, scatter, gather), so a
// waiting thread, and the caller waiting for the others to finish, first spin for a short while
// (NBX_SPIN checks, a few tens of microseconds) before they sleep on a condition variable:
// waking a sleeping thread costs far more than that on a virtual machine.
// One call at a time per pool (nearby's grid calls it that way); the pool is not reentrant.
#ifndef NB_PTHREADS_H
#define NB_PTHREADS_H

#include <nearby/nearby.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct nbxPool nbxPool;

typedef struct nbxWorker {
    nbxPool *pool;
    int32_t id;
    pthread_t thread;
} nbxWorker;

struct nbxPool {
    int32_t workers; // including the caller (worker 0)
    nbxWorker *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake, idle;
    atomic_uint_fast64_t generation; // bumped per call, under mu
    atomic_int busy;                 // helper threads still in the current call
    atomic_bool quit;
    // The current call.
    nbTaskFn *task;
    void *ctx;
    int32_t count, range;
    atomic_int next; // first item not yet handed out
};

// Hands out [next, next + range) until the items run out.
#ifndef NBX_SPIN
#define NBX_SPIN 1000
#endif

static inline void nbx_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static inline void nbx_pool_drain(nbxPool *p, int32_t id)
{
    for (;;) {
        const int32_t b = atomic_fetch_add_explicit(&p->next, p->range, memory_order_relaxed);
        if (b >= p->count) return;
        const int32_t e = p->count - b < p->range ? p->count : b + p->range;
        p->task(b, e, id, p->ctx);
    }
}

static inline void *nbx_pool_main(void *arg)
{
    nbxWorker *w = (nbxWorker *)arg;
    nbxPool *p = w->pool;
    uint_fast64_t seen = 0;
    for (;;) {
        for (int spin = 0; spin < NBX_SPIN && atomic_load(&p->generation) == seen; spin++)
            nbx_pause();
        if (atomic_load(&p->generation) == seen) {
            pthread_mutex_lock(&p->mu);
            while (!atomic_load(&p->quit) && atomic_load(&p->generation) == seen)
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->quit)) break;
        seen = atomic_load(&p->generation);
        nbx_pool_drain(p, w->id);
        if (atomic_fetch_sub(&p->busy, 1) == 1) { // the last one out wakes a sleeping caller
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->idle);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

/// An nbParallelForFn; `user` is the pool.
static inline void nbx_parallel_for(nbTaskFn *task, int32_t count, int32_t min_range,
                                    void *task_ctx, void *user)
{
    nbxPool *p = (nbxPool *)user;
    if (count <= 0) return;
    int32_t range = count / (4 * p->workers);
    if (range < min_range) range = min_range;
    if (range < 1) range = 1;
    if (p->workers == 1 || range >= count) {
        task(0, count, 0, task_ctx);
        return;
    }
    // The call's fields are written before the generation moves on (a sequentially consistent
    // store): a worker that sees the new generation sees them too.
    pthread_mutex_lock(&p->mu);
    p->task = task;
    p->ctx = task_ctx;
    p->count = count;
    p->range = range;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    atomic_store(&p->busy, p->workers - 1);
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    nbx_pool_drain(p, 0);
    for (int spin = 0; spin < NBX_SPIN && atomic_load(&p->busy) > 0; spin++) nbx_pause();
    if (atomic_load(&p->busy) > 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->busy) > 0) pthread_cond_wait(&p->idle, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}

/// Starts `workers` - 1 threads (0 = one worker per online CPU; 1 = no threads, serial).
/// Returns 0, or -1 if threads could not be had (the pool is then unusable; nothing leaks).
static inline int nbx_pool_start(nbxPool *p, int32_t workers)
{
    if (workers <= 0) {
        const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        workers = cpus > 0 ? (int32_t)(cpus < 256 ? cpus : 256) : 1;
    }
    p->workers = workers;
    atomic_init(&p->generation, 0);
    atomic_init(&p->busy, 0);
    atomic_init(&p->quit, false);
    p->threads = NULL;
    atomic_init(&p->next, 0);
    if (pthread_mutex_init(&p->mu, NULL) != 0) return -1;
    if (pthread_cond_init(&p->wake, NULL) != 0 || pthread_cond_init(&p->idle, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        return -1;
    }
    if (workers == 1) return 0;
    p->threads = (nbxWorker *)calloc((size_t)workers, sizeof(nbxWorker));
    int32_t started = 1;
    if (p->threads != NULL) {
        for (; started < workers; started++) {
            p->threads[started].pool = p;
            p->threads[started].id = started;
            if (pthread_create(&p->threads[started].thread, NULL, nbx_pool_main,
                               &p->threads[started]) != 0)
                break;
        }
    }
    if (started == workers) return 0;
    p->workers = started; // stop what did start
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, true);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int32_t t = 1; t < started; t++) pthread_join(p->threads[t].thread, NULL);
    free(p->threads);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->idle);
    pthread_mutex_destroy(&p->mu);
    return -1;
}

/// Stops and joins the threads. Call after the last call that uses the pool.
static inline void nbx_pool_stop(nbxPool *p)
{
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, true);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int32_t t = 1; t < p->workers && p->threads != NULL; t++)
        pthread_join(p->threads[t].thread, NULL);
    free(p->threads);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->idle);
    pthread_mutex_destroy(&p->mu);
}

/// The pool as nbTasks for a desc.
static inline nbTasks nbx_pool_tasks(nbxPool *p)
{
    nbTasks t = {nbx_parallel_for, p, p->workers};
    return t;
}

#endif
