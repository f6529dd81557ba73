/* rt_pool.h: a fixed pool of host threads owned by one session. rt_pool_run calls
 * fn(arg, 0) on the caller and fn(arg, tid) on every worker that wakes up while the
 * caller is still inside fn; it never waits for a worker that has not started, so
 * fn must divide its work dynamically (any subset of threads, tid 0 always among
 * them, must complete it). rt_pool_wait / rt_pool_notify let the threads of a job
 * wait for a counter that another thread advances.
 */
#ifndef SPYRT_RT_POOL_H
#define SPYRT_RT_POOL_H

#include <stdatomic.h>

typedef struct RtPool RtPool;
typedef void (*RtPoolFn)(void *arg, int tid);

/* Starts n - 1 worker threads (n >= 1); NULL on failure. */
RtPool *rt_pool_create(int n);
void rt_pool_run(RtPool *p, RtPoolFn fn, void *arg);
void rt_pool_wait(RtPool *p, atomic_uint *counter, unsigned target);
void rt_pool_notify(RtPool *p);
void rt_pool_free(RtPool *p);

#endif
