/* rt_pool.h: a fixed pool of host threads owned by one session. rt_pool_run calls
 * fn(arg, tid) on every thread (tid 0 is the caller) and returns when all are done;
 * rt_pool_barrier synchronises the threads inside such a call.
 */
#ifndef SPYRT_RT_POOL_H
#define SPYRT_RT_POOL_H

typedef struct RtPool RtPool;
typedef void (*RtPoolFn)(void *arg, int tid);

/* Starts n - 1 worker threads (n >= 1); NULL on failure. */
RtPool *rt_pool_create(int n);
void rt_pool_run(RtPool *p, RtPoolFn fn, void *arg);
void rt_pool_barrier(RtPool *p);
void rt_pool_free(RtPool *p);

#endif
