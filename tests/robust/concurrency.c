/* concurrency.c: one loaded model shared by many threads.
 *
 *   concurrency BUNDLE.sbin INPUT_DIR [THREADS [RUNS]]
 *
 * Loads the bundle once, reads INPUT_DIR/input_K.pb for every input, and computes
 * reference outputs with one single-threaded session. Then THREADS (16) threads each
 * create their own session (with 1 or 2 emulator threads, alternating) and run it RUNS
 * (200) times; every output must be bit-identical to the reference. Sessions are freed
 * while other threads still run theirs. Finally two threads share one session: each
 * run either succeeds with the reference result or is refused as busy, never mixes.
 * `make tsan` runs this under ThreadSanitizer.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/fe.h"
#include "spyrt.h"

typedef struct {
    const spy_model *m;
    int nin, nout;
    const void **in; /* input buffers (shared, read-only) */
    void **ref;      /* reference outputs */
    size_t *osize;
    int runs;
    spy_session *shared; /* for the shared-session phase */
    atomic_long mismatches, errors, busy, shared_ok, done;
} Ctx;

typedef struct {
    Ctx *cx;
    int id;
} Arg;

/* Output buffers for one run (caller frees with free_outputs). */
static void **alloc_outputs(const Ctx *cx)
{
    void **o = calloc((size_t)cx->nout + 1, sizeof *o);
    for (int k = 0; o && k < cx->nout; k++)
        o[k] = calloc(1, cx->osize[k] + 1);
    return o;
}

static void free_outputs(const Ctx *cx, void **o)
{
    for (int k = 0; o && k < cx->nout; k++)
        free(o[k]);
    free(o);
}

/* Compare one run's outputs with the reference; counts mismatching runs. */
static void compare(Ctx *cx, void *const *out, int id, int run)
{
    for (int k = 0; k < cx->nout; k++)
        if (memcmp(out[k], cx->ref[k], cx->osize[k]) != 0) {
            if (atomic_fetch_add(&cx->mismatches, 1) < 5)
                fprintf(stderr, "thread %d run %d: output %d differs from the reference\n", id, run,
                        k);
            return;
        }
}

/* Thread body: own session, RUNS runs, compare each, free the session. */
static void *worker(void *p)
{
    Arg *a = p;
    Ctx *cx = a->cx;
    spy_session_options so = {.num_threads = 1 + a->id % 2};
    spy_session *s = NULL;
    void **out = alloc_outputs(cx);
    if (!out || spy_session_create(cx->m, &so, &s) != SPY_OK) {
        atomic_fetch_add(&cx->errors, 1);
        free_outputs(cx, out);
        return NULL;
    }
    for (int r = 0; r < cx->runs; r++) {
        for (int k = 0; k < cx->nout; k++)
            memset(out[k], 0xA5, cx->osize[k]);
        if (spy_session_run(s, cx->in, out) != SPY_OK) {
            if (atomic_fetch_add(&cx->errors, 1) < 5)
                fprintf(stderr, "thread %d run %d: %s\n", a->id, r, spy_session_error(s));
            continue;
        }
        compare(cx, out, a->id, r);
    }
    spy_session_free(s);
    free_outputs(cx, out);
    atomic_fetch_add(&cx->done, 1);
    return NULL;
}

/* Thread body of the shared-session phase: runs until RUNS/4 of its calls ran
 * (retrying calls refused as busy); a run that ran must give the reference. */
static void *shared_worker(void *p)
{
    Arg *a = p;
    Ctx *cx = a->cx;
    void **out = alloc_outputs(cx);
    long ok = 0;
    for (long tries = 0; out && ok < cx->runs / 4 && tries < 100000000; tries++) {
        spy_status st = spy_session_run(cx->shared, cx->in, out);
        if (st == SPY_OK) {
            ok++;
            compare(cx, out, a->id, (int)ok);
        } else if (st == SPY_E_INVALID_ARG) {
            atomic_fetch_add(&cx->busy, 1);
            sched_yield();
        } else {
            atomic_fetch_add(&cx->errors, 1);
        }
    }
    if (ok < cx->runs / 4)
        atomic_fetch_add(&cx->errors, 1);
    atomic_fetch_add(&cx->shared_ok, ok);
    free_outputs(cx, out);
    return NULL;
}

/* Read INPUT_DIR/input_K.pb for every input; checks sizes against the model. */
static bool read_inputs(Ctx *cx, const char *dir, FeTensor *t)
{
    for (int i = 0; i < cx->nin; i++) {
        char path[4096], err[512];
        spy_tensor_info info;
        snprintf(path, sizeof path, "%s/input_%d.pb", dir, i);
        if (!fe_tensor_read(path, &t[i], err, sizeof err)) {
            fprintf(stderr, "concurrency: %s\n", err);
            return false;
        }
        spy_model_input_info(cx->m, i, &info);
        if (t[i].nbytes != info.nbytes || (int)t[i].dtype != info.dtype) {
            fprintf(stderr, "concurrency: %s does not fit input '%s'\n", path, info.name);
            return false;
        }
        cx->in[i] = t[i].data;
    }
    return true;
}

/* Reference outputs from one single-threaded session. */
static bool reference(Ctx *cx)
{
    spy_session_options so = {.num_threads = 1};
    spy_session *s = NULL;
    cx->ref = alloc_outputs(cx);
    if (!cx->ref || spy_session_create(cx->m, &so, &s) != SPY_OK)
        return false;
    spy_status st = spy_session_run(s, cx->in, cx->ref);
    if (st != SPY_OK)
        fprintf(stderr, "concurrency: reference run failed: %s\n", spy_session_error(s));
    spy_session_free(s);
    return st == SPY_OK;
}

/* Run nthreads copies of fn and wait for them. */
static void run_threads(Ctx *cx, int nthreads, void *(*fn)(void *))
{
    pthread_t *th = calloc((size_t)nthreads, sizeof *th);
    Arg *args = calloc((size_t)nthreads, sizeof *args);
    for (int i = 0; i < nthreads; i++) {
        args[i] = (Arg){cx, i};
        if (pthread_create(&th[i], NULL, fn, &args[i]) != 0) {
            fprintf(stderr, "concurrency: cannot start thread %d\n", i);
            exit(1);
        }
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    free(th);
    free(args);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: concurrency BUNDLE.sbin INPUT_DIR [THREADS [RUNS]]\n");
        return 2;
    }
    int nthreads = argc > 3 ? atoi(argv[3]) : 16;
    Ctx cx = {.runs = argc > 4 ? atoi(argv[4]) : 200};
    spy_model *m = NULL;
    char err[512];
    if (spy_model_load_file(argv[1], &m, err, sizeof err) != SPY_OK) {
        fprintf(stderr, "concurrency: %s\n", err);
        return 1;
    }
    cx.m = m;
    cx.nin = spy_model_num_inputs(m);
    cx.nout = spy_model_num_outputs(m);
    cx.in = calloc((size_t)cx.nin + 1, sizeof *cx.in);
    cx.osize = calloc((size_t)cx.nout + 1, sizeof *cx.osize);
    FeTensor *t = calloc((size_t)cx.nin + 1, sizeof *t);
    for (int k = 0; k < cx.nout; k++) {
        spy_tensor_info info;
        spy_model_output_info(m, k, &info);
        cx.osize[k] = info.nbytes;
    }
    int rc = 1;
    if (read_inputs(&cx, argv[2], t) && reference(&cx)) {
        run_threads(&cx, nthreads, worker);
        printf("concurrency: %d threads x %d runs, own sessions: %ld mismatches, %ld errors\n",
               nthreads, cx.runs, (long)cx.mismatches, (long)cx.errors);
        spy_session_options so = {.num_threads = 2};
        if (spy_session_create(m, &so, &cx.shared) == SPY_OK) {
            run_threads(&cx, 2, shared_worker);
            spy_session_free(cx.shared);
            printf("concurrency: 2 threads, one session: %ld runs, %ld calls refused as "
                   "busy\n",
                   (long)cx.shared_ok, (long)cx.busy);
        } else {
            cx.errors++;
        }
        rc = cx.mismatches || cx.errors || cx.done != nthreads;
    }
    printf("%s\n", rc ? "FAIL concurrency" : "PASS concurrency");
    for (int i = 0; i < cx.nin; i++)
        fe_tensor_free(&t[i]);
    free(t);
    free_outputs(&cx, cx.ref);
    free(cx.in);
    free(cx.osize);
    spy_model_free(m);
    return rc;
}
