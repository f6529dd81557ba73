/* rt_pool.c: the session's worker threads. rt_pool_run publishes a new job generation
 * and the caller works as thread 0. Kernels are separated by a reusable
 * generation-counted barrier.
 *
 * Every wait (a worker waiting for the next job, a thread at the barrier, the caller
 * waiting for the workers to finish) first spins for a short time, then yields the
 * CPU between checks, and only after RT_SPIN_US sleeps on a condition variable: kernels and back-to-back inferences are
 * often shorter than the time the system takes to wake a sleeping thread. A sleeper
 * registers itself, so the waker only takes the mutex and signals when someone sleeps.
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "rt_pool.h"

#define RT_PAUSE_US 5        /* busy spinning of a wait, microseconds */
#define RT_SPIN_US 100       /* spinning and yielding before a wait sleeps */

struct RtPool {
    int n;                   /* threads including the caller */
    pthread_t *th;
    int started;             /* worker threads actually created */
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* every state change below is broadcast here */
    atomic_uint job_gen;     /* incremented per rt_pool_run */
    atomic_int running;      /* workers still inside the current job */
    atomic_int quit;
    atomic_int sleepers;     /* threads blocked (or about to block) on cv */
    RtPoolFn fn;
    void *arg;
    atomic_int bar_count;    /* threads arrived at the barrier */
    atomic_uint bar_gen;     /* completed barriers */
};

typedef struct {
    RtPool *p;
    int tid;
} Worker;

/* A pause for spin loops. */
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Monotonic time in microseconds. */
static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Condition of a wait: true when the waiter may go on. */
typedef bool (*WaitDone)(RtPool *p, unsigned v);

/* Waits until done(p, v): spins for RT_PAUSE_US, then yields the CPU between checks
 * (a thread it waits for may be queued on the same CPU when the host is busy) until
 * RT_SPIN_US, then sleeps on the pool's condition variable (woken by wake_all). */
static void wait_until(RtPool *p, WaitDone done, unsigned v) {
    double t0 = 0;
    for (unsigned i = 1;; i++) {
        if (done(p, v))
            return;
        if (t0 == 0 || i < 64)
            cpu_relax();
        else
            sched_yield();
        if ((i & 63) == 0) {
            double t = now_us();
            if (t0 == 0)
                t0 = t;
            else if (t - t0 > RT_SPIN_US)
                break;
            else if (t - t0 < RT_PAUSE_US)
                i = 0; /* keep pausing */
        }
    }
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->sleepers, 1);
    while (!done(p, v))
        pthread_cond_wait(&p->cv, &p->mu);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->mu);
}

/* Wakes every sleeper after a state change (already published with seq_cst atomics:
 * a sleeper registers before it re-checks its condition under the mutex). */
static void wake_all(RtPool *p) {
    if (atomic_load(&p->sleepers) == 0)
        return;
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* A new job (generation other than v) or quit. */
static bool job_posted(RtPool *p, unsigned v) {
    return atomic_load(&p->job_gen) != v || atomic_load(&p->quit);
}

/* Every worker finished the current job. */
static bool job_done(RtPool *p, unsigned v) {
    (void)v;
    return atomic_load(&p->running) == 0;
}

/* The barrier of generation v completed. */
static bool barrier_passed(RtPool *p, unsigned v) {
    return atomic_load(&p->bar_gen) != v;
}

/* Worker thread body: runs jobs until told to quit. */
static void *worker_main(void *wa) {
    Worker w = *(Worker *)wa;
    free(wa);
    RtPool *p = w.p;
    unsigned seen = 0;
    for (;;) {
        wait_until(p, job_posted, seen);
        if (atomic_load(&p->quit))
            break;
        seen = atomic_load(&p->job_gen);
        p->fn(p->arg, w.tid); /* fn, arg were written before job_gen */
        if (atomic_fetch_sub(&p->running, 1) == 1)
            wake_all(p);
    }
    return NULL;
}

/* Creates a pool of n threads (the caller plus n - 1 workers). */
RtPool *rt_pool_create(int n) {
    RtPool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = n < 1 ? 1 : n;
    p->th = calloc((size_t)p->n, sizeof *p->th);
    if (!p->th || pthread_mutex_init(&p->mu, NULL) || pthread_cond_init(&p->cv, NULL)) {
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
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->running, p->n - 1);
    atomic_fetch_add(&p->job_gen, 1u);
    wake_all(p);
    fn(arg, 0);
    wait_until(p, job_done, 0);
}

/* Blocks until all n threads of the current job reached the barrier. */
void rt_pool_barrier(RtPool *p) {
    if (p->n == 1)
        return;
    unsigned gen = atomic_load(&p->bar_gen);
    if (atomic_fetch_add(&p->bar_count, 1) == p->n - 1) {
        atomic_store(&p->bar_count, 0);
        atomic_fetch_add(&p->bar_gen, 1u);
        wake_all(p);
        return;
    }
    wait_until(p, barrier_passed, gen);
}

/* Stops and joins the workers and frees the pool. */
void rt_pool_free(RtPool *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int t = 1; t <= p->started; t++)
        pthread_join(p->th[t], NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->th);
    free(p);
}
