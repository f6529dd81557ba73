/* rt_pool.c: the session's worker threads. A pool runs one function, fixed when it is
 * made. rt_pool_run publishes a new job generation and the caller works as thread 0;
 * a worker takes part only if it joins while the job is open. When the caller's call
 * returns the job is closed and rt_pool_run returns at once: it never waits for a
 * worker, not even one that joined (a worker the system preempted may be scheduled
 * again only milliseconds later). The function therefore makes the completion of
 * the work visible through its own counters and lets a late worker, still inside the
 * call of an earlier job or joining after the caller returned, find nothing left to do
 * (rt_session.c tags its counters with the run's generation).
 *
 * Every wait (a worker waiting for the next job, a thread waiting for a counter) first
 * spins for a short time, then yields the CPU between checks, and only after
 * RT_SPIN_US sleeps on a condition variable: kernels and back-to-back inferences are
 * often shorter than the time the system takes to wake a sleeping thread. A sleeper
 * registers itself, so the waker only takes the mutex and signals when someone sleeps.
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "rt_pool.h"

#define RT_PAUSE_US 5        /* busy spinning of a wait, microseconds */
#define RT_SPIN_US 100       /* spinning and yielding before a wait sleeps */

/* The job word: generation << 32 | RT_JOB_CLOSED. */
#define RT_JOB_CLOSED ((uint64_t)1 << 31)

struct RtPool {
    int n;                   /* threads including the caller */
    pthread_t *th;
    int started;             /* worker threads actually created */
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* every state change below is broadcast here */
    _Atomic uint64_t job;    /* generation, closed bit */
    atomic_int quit;
    atomic_int sleepers;     /* threads blocked (or about to block) on cv */
    RtPoolFn fn;             /* what every job runs, fixed at rt_pool_create */
    void *arg;
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

/* Condition of a wait on word w (may be NULL): true when the waiter may go on. */
typedef bool (*WaitDone)(RtPool *p, _Atomic uint64_t *w, uint64_t v);

/* Waits until done(p, w, v): spins for RT_PAUSE_US, then yields the CPU between checks
 * (a thread it waits for may be queued on the same CPU when the host is busy) until
 * RT_SPIN_US, then sleeps on the pool's condition variable (woken by wake_all). */
static void wait_until(RtPool *p, WaitDone done, _Atomic uint64_t *w, uint64_t v) {
    double t0 = 0;
    for (unsigned i = 1;; i++) {
        if (done(p, w, v))
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
    while (!done(p, w, v))
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

/* A job of a generation other than v was posted, or quit. */
static bool job_posted(RtPool *p, _Atomic uint64_t *w, uint64_t v) {
    (void)w;
    return (atomic_load(&p->job) >> 32) != v || atomic_load(&p->quit);
}

/* The tagged counter *w (tag << 32 | count) reached the count of v, or carries
 * another tag than v (a later use of the counter), or quit. */
static bool counter_reached(RtPool *p, _Atomic uint64_t *w, uint64_t v) {
    uint64_t x = atomic_load(w);
    return (x >> 32) != (v >> 32) || (uint32_t)x >= (uint32_t)v || atomic_load(&p->quit);
}

/* Every bit of v is set in *w, or quit. */
static bool mask_reached(RtPool *p, _Atomic uint64_t *w, uint64_t v) {
    return (atomic_load(w) & v) == v || atomic_load(&p->quit);
}

/* Worker thread body: takes part in each job it finds open, until told to quit. */
static void *worker_main(void *wa) {
    Worker w = *(Worker *)wa;
    free(wa);
    RtPool *p = w.p;
    uint64_t seen = 0;
    for (;;) {
        wait_until(p, job_posted, NULL, seen);
        if (atomic_load(&p->quit))
            break;
        uint64_t j = atomic_load(&p->job);
        seen = j >> 32;
        if (!(j & RT_JOB_CLOSED))
            p->fn(p->arg, w.tid);
    }
    return NULL;
}

/* Creates a pool of n threads (the caller plus n - 1 workers) whose jobs run fn(arg). */
RtPool *rt_pool_create(int n, RtPoolFn fn, void *arg) {
    RtPool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = n < 1 ? 1 : n;
    p->fn = fn;
    p->arg = arg;
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

/* Runs fn(arg, 0) on the caller and fn(arg, tid) on the workers that join while it
 * runs; returns when the caller's call returned (see the top of the file). */
void rt_pool_run(RtPool *p) {
    if (p->n == 1) {
        p->fn(p->arg, 0);
        return;
    }
    uint64_t gen = (atomic_load(&p->job) >> 32) + 1;
    atomic_store(&p->job, (gen & 0xffffffffu) << 32);
    wake_all(p);
    p->fn(p->arg, 0);
    atomic_fetch_or(&p->job, RT_JOB_CLOSED);
}

/* Blocks until the tagged counter *counter (tag << 32 | count) has target's tag and
 * at least its count, or another tag (another thread of the job advances it and then
 * calls rt_pool_notify). */
void rt_pool_wait(RtPool *p, _Atomic uint64_t *counter, uint64_t target) {
    if (!counter_reached(p, counter, target))
        wait_until(p, counter_reached, counter, target);
}

/* Blocks until every bit of need is set in *mask (another thread of the job sets
 * them and then calls rt_pool_notify). */
void rt_pool_wait_mask(RtPool *p, _Atomic uint64_t *mask, uint64_t need) {
    if (!mask_reached(p, mask, need))
        wait_until(p, mask_reached, mask, need);
}

/* Wakes the threads sleeping in a wait after a counter advanced. */
void rt_pool_notify(RtPool *p) {
    wake_all(p);
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
