/* rt_pool.h: a fixed pool of host threads owned by one session, running one function.
 * rt_pool_run calls fn(arg, 0) on the caller and fn(arg, tid) on every worker that
 * wakes up while the caller is still inside fn; it waits for no worker, so fn must
 * divide its work dynamically (any subset of threads, tid 0 always among them, must
 * complete it), make thread 0 wait until the work is complete, and leave nothing to
 * a worker still inside fn after that (it may return later, even during the next
 * job). rt_pool_wait / rt_pool_notify let the threads of a job wait for a tagged
 * counter (tag << 32 | count) that another thread advances, rt_pool_wait_mask for bits
 * of a mask that other threads set.
 */
#ifndef SPYRT_RT_POOL_H
#define SPYRT_RT_POOL_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct RtPool RtPool;
typedef void (*RtPoolFn)(void *arg, int tid);

/* Starts n - 1 worker threads (n >= 1) whose jobs run fn(arg); NULL on failure. */
RtPool *rt_pool_create(int n, RtPoolFn fn, void *arg);
void rt_pool_run(RtPool *p);
void rt_pool_wait(RtPool *p, _Atomic uint64_t *counter, uint64_t target);
void rt_pool_wait_mask(RtPool *p, _Atomic uint64_t *mask, uint64_t need);
void rt_pool_notify(RtPool *p);
void rt_pool_free(RtPool *p);

#endif
