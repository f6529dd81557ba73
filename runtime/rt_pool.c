/* rt_pool.c: the session's worker threads. Workers sleep on a condition variable
 * until rt_pool_run publishes a new job generation; the caller works as thread 0.
 * Kernels are separated by a reusable generation-counted barrier: waiters spin
 * briefly (kernels are often short) and then sleep on a condition variable.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#define RT_SPIN 4000         /* barrier polls before sleeping */

#include "rt_pool.h"

struct RtPool {
    int n;                   /* threads including the caller */
    pthread_t *th;
    int started;             /* worker threads actually created */
    pthread_mutex_t mu;
    pthread_cond_t cv_job, cv_done, cv_bar;
    unsigned job_gen;        /* incremented per rt_pool_run */
    int running;             /* workers still inside the current job */
    int quit;
    RtPoolFn fn;
    void *arg;
    atomic_int bar_count;    /* threads arrived at the barrier */
    atomic_uint bar_gen;     /* completed barriers */
};

typedef struct {
    RtPool *p;
    int tid;
} Worker;

/* Worker thread body: waits for jobs until told to quit. */
static void *worker_main(void *wa) {
    Worker w = *(Worker *)wa;
    free(wa);
    RtPool *p = w.p;
    unsigned seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->job_gen == seen && !p->quit)
            pthread_cond_wait(&p->cv_job, &p->mu);
        if (p->quit)
            break;
        seen = p->job_gen;
        RtPoolFn fn = p->fn;
        void *arg = p->arg;
        pthread_mutex_unlock(&p->mu);
        fn(arg, w.tid);
        pthread_mutex_lock(&p->mu);
        if (--p->running == 0)
            pthread_cond_signal(&p->cv_done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Creates a pool of n threads (the caller plus n - 1 workers). */
RtPool *rt_pool_create(int n) {
    RtPool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = n < 1 ? 1 : n;
    p->th = calloc((size_t)p->n, sizeof *p->th);
    if (!p->th || pthread_mutex_init(&p->mu, NULL) || pthread_cond_init(&p->cv_job, NULL) ||
        pthread_cond_init(&p->cv_done, NULL) || pthread_cond_init(&p->cv_bar, NULL)) {
        free(p->th);
        free(p);
        return NULL;
    }
    for (int t = 1; t < p->n; t++) {
        Worker *w = malloc(sizeof *w);
        if (!w)
            break;
        *w = (Worker){p, t};
        if (pthread_create(&p->th[t], NULL, worker_main, w)) {
            free(w);
            break;
        }
        p->started++;
    }
    if (p->started != p->n - 1) {
        rt_pool_free(p);
        return NULL;
    }
    return p;
}

/* Runs fn(arg, tid) on all threads and waits for all of them. */
void rt_pool_run(RtPool *p, RtPoolFn fn, void *arg) {
    if (p->n == 1) {
        fn(arg, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->running = p->n - 1;
    p->job_gen++;
    pthread_cond_broadcast(&p->cv_job);
    pthread_mutex_unlock(&p->mu);
    fn(arg, 0);
    pthread_mutex_lock(&p->mu);
    while (p->running > 0)
        pthread_cond_wait(&p->cv_done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* Blocks until all n threads of the current job reached the barrier. */
void rt_pool_barrier(RtPool *p) {
    if (p->n == 1)
        return;
    unsigned gen = atomic_load(&p->bar_gen);
    if (atomic_fetch_add(&p->bar_count, 1) == p->n - 1) {
        atomic_store(&p->bar_count, 0);
        pthread_mutex_lock(&p->mu);
        atomic_fetch_add(&p->bar_gen, 1u);
        pthread_cond_broadcast(&p->cv_bar);
        pthread_mutex_unlock(&p->mu);
        return;
    }
    for (int i = 0; i < RT_SPIN; i++) {
        if (atomic_load(&p->bar_gen) != gen)
            return;
        if (i > RT_SPIN / 2)
            sched_yield();
    }
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->bar_gen) == gen)
        pthread_cond_wait(&p->cv_bar, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* Stops and joins the workers and frees the pool. */
void rt_pool_free(RtPool *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->cv_job);
    pthread_mutex_unlock(&p->mu);
    for (int t = 1; t <= p->started; t++)
        pthread_join(p->th[t], NULL);
    pthread_cond_destroy(&p->cv_job);
    pthread_cond_destroy(&p->cv_done);
    pthread_cond_destroy(&p->cv_bar);
    pthread_mutex_destroy(&p->mu);
    free(p->th);
    free(p);
}
