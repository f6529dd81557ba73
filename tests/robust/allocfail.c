/* allocfail.c: allocation-failure injection through compile, load and run.
 *
 *   allocfail MODEL.onnx
 *
 * Linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,
 * --wrap=strdup,--wrap=strndup (and protobuf-c linked statically), so every heap
 * allocation of the compiler, the runtime and protobuf-c comes through the wrappers
 * below, which can fail the N-th one and track which blocks are live. No production
 * code changes. For every N = 1, 2, ... until a pass completes without reaching the
 * N-th allocation, each stage runs with allocation N failing:
 *
 *   compile  fe_load_model + pass_run_pipeline + cg_emit_bundle (as spyrec does, with
 *            the graph's out-of-memory longjmp)
 *   load     spy_model_load_memory of the reference bundle
 *   run      spy_session_create + spy_session_run on the loaded reference model
 *
 * Each attempt must end in a clean error (a message that says "out of memory", no
 * crash) or in a result bit-identical to the reference, and must leave no block
 * allocated that it did not free (checked by the tracker; run under
 * -fsanitize=address, LeakSanitizer checks the whole process too).
 * ALLOCFAIL_STEP=K tries every K-th N of compile only;
 * ALLOCFAIL_VERBOSE=1 prints the outcome of every attempt; ALLOCFAIL_ONLY=N makes one
 * compile attempt with allocation N failing, in this process (for a debugger).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/cg.h"
#include "frontend/fe.h"
#include "ir.h"
#include "passes/pass.h"
#include "spyrt.h"

/* ---- the allocator wrappers ------------------------------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long counter; /* allocations since arming */
static long fail_at; /* 0: never fail */
static int armed, injected;

/* Open-addressing set of live blocks allocated through the wrappers. */
static uintptr_t *live;
static size_t live_cap, live_n;
#define TOMB ((uintptr_t)1)

/* Home slot of block p in a table of cap (a power of two) entries. */
static size_t slot(uintptr_t p, size_t cap)
{
    return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ull) & (cap - 1);
}

/* Insert p (caller holds mu). */
static void live_add(uintptr_t p)
{
    if ((live_n + 1) * 2 > live_cap) {
        size_t cap = live_cap ? live_cap * 2 : 1 << 16;
        uintptr_t *t = __real_calloc(cap, sizeof *t);
        if (!t)
            abort();
        for (size_t i = 0; i < live_cap; i++)
            if (live[i] > TOMB)
                for (size_t j = slot(live[i], cap);; j = (j + 1) & (cap - 1))
                    if (!t[j]) {
                        t[j] = live[i];
                        break;
                    }
        __real_free(live);
        live = t;
        live_cap = cap;
    }
    for (size_t j = slot(p, live_cap);; j = (j + 1) & (live_cap - 1))
        if (live[j] <= TOMB) {
            live[j] = p;
            live_n++;
            return;
        }
}

/* Remove p if present (caller holds mu). */
static void live_del(uintptr_t p)
{
    if (!live_cap)
        return;
    for (size_t j = slot(p, live_cap);; j = (j + 1) & (live_cap - 1)) {
        if (!live[j])
            return;
        if (live[j] == p) {
            live[j] = TOMB;
            live_n--;
            return;
        }
    }
}

/* Whether this allocation is the one to fail (caller holds mu). */
static int should_fail(void)
{
    if (!armed)
        return 0;
    if (++counter == fail_at) {
        injected = 1;
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n)
{
    pthread_mutex_lock(&mu);
    void *p = should_fail() ? NULL : __real_malloc(n);
    if (p)
        live_add((uintptr_t)p);
    pthread_mutex_unlock(&mu);
    return p;
}

void *__wrap_calloc(size_t n, size_t m)
{
    pthread_mutex_lock(&mu);
    void *p = should_fail() ? NULL : __real_calloc(n, m);
    if (p)
        live_add((uintptr_t)p);
    pthread_mutex_unlock(&mu);
    return p;
}

void *__wrap_realloc(void *old, size_t n)
{
    pthread_mutex_lock(&mu);
    void *p = should_fail() ? NULL : __real_realloc(old, n);
    if (p) {
        if (old)
            live_del((uintptr_t)old);
        live_add((uintptr_t)p);
    }
    pthread_mutex_unlock(&mu);
    return p;
}

void __wrap_free(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&mu);
    live_del((uintptr_t)p);
    pthread_mutex_unlock(&mu);
    __real_free(p);
}

char *__wrap_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = __wrap_malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

char *__wrap_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = __wrap_malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = 0;
    }
    return p;
}

/* Start counting allocations; the n-th fails (0: none). */
static void arm(long n)
{
    pthread_mutex_lock(&mu);
    counter = 0;
    fail_at = n;
    injected = 0;
    armed = 1;
    pthread_mutex_unlock(&mu);
}

static void disarm(void)
{
    pthread_mutex_lock(&mu);
    armed = 0;
    pthread_mutex_unlock(&mu);
}

static size_t live_count(void)
{
    pthread_mutex_lock(&mu);
    size_t n = live_n;
    pthread_mutex_unlock(&mu);
    return n;
}

/* ---- the stages ------------------------------------------------------------------- */

typedef struct {
    uint8_t *bundle; /* compile's output */
    size_t len;
    char msg[512]; /* the first error message */
} Result;

/* Everything a longjmp must be able to free: file scope, as in spyrec. */
static jmp_buf oom_jmp;
static IrGraph *volatile cur_g;

/* Copy the first diagnostic of d (or why) into r->msg. */
static void note(Result *r, const IrDiag *d, const char *why)
{
    snprintf(r->msg, sizeof r->msg, "%s", d && d->nmsgs ? d->msgs[0] : why);
}

/* Compile path as spyrec does; true with r->bundle set on success. */
static bool compile(const char *path, Result *r)
{
    IrDiag diag;
    ir_diag_init(&diag, path);
    SpyTarget target;
    fe_default_target(&target);
    volatile bool ok = false;
    cur_g = NULL;
    if (setjmp(oom_jmp)) {
        note(r, NULL, "out of memory");
        free(r->bundle);
        r->bundle = NULL;
    } else {
        FeOptions fo = {.max_file_bytes = (size_t)1 << 30, .max_nesting = 64};
        cur_g = fe_load_model(path, &diag, &fo);
        if (!cur_g || ir_failed(cur_g) || diag.nerrors) {
            note(r, &diag, "load failed without a message");
        } else {
            cur_g->oom = &oom_jmp;
            cur_g->diag = &diag;
            PassOptions po = {.opt_level = 2, .target = &target};
            CgOptions co = {.target = &target, .meta = "compiler=allocfail\n"};
            if (!pass_run_pipeline(cur_g, &po) || ir_failed(cur_g))
                note(r, &diag, "pipeline failed without a message");
            else if (!cg_emit_bundle(cur_g, &co, &r->bundle, &r->len) || ir_failed(cur_g))
                note(r, &diag, "codegen failed without a message");
            else
                ok = true;
        }
    }
    if (cur_g) {
        cur_g->oom = NULL;
        ir_graph_free(cur_g);
    }
    if (!ok) {
        free(r->bundle);
        r->bundle = NULL;
    }
    ir_diag_free(&diag);
    return ok;
}

/* Host buffers for every input (deterministic values) and output of m. */
static void **buffers(const spy_model *m, bool inputs)
{
    int n = inputs ? spy_model_num_inputs(m) : spy_model_num_outputs(m);
    void **b = __real_calloc((size_t)n + 1, sizeof *b);
    for (int i = 0; i < n; i++) {
        spy_tensor_info info;
        (inputs ? spy_model_input_info : spy_model_output_info)(m, i, &info);
        uint8_t *p = __real_calloc(1, info.nbytes + 1);
        for (size_t j = 0; inputs && info.dtype == 1 && j + 4 <= info.nbytes; j += 4) {
            float v = (float)((j / 4) % 13) * 0.25f - 1.5f;
            memcpy(p + j, &v, 4);
        }
        b[i] = p;
    }
    return b;
}

static void free_buffers(void **b, int n)
{
    for (int i = 0; b && i < n; i++)
        __real_free(b[i]);
    __real_free(b);
}

/* Load the bundle; true on success (model freed unless keep). */
static bool load(const Result *ref, Result *r, spy_model **keep)
{
    spy_model *m = NULL;
    spy_status st = spy_model_load_memory(ref->bundle, ref->len, &m, r->msg, sizeof r->msg);
    if (st != SPY_OK)
        return false;
    if (keep)
        *keep = m;
    else
        spy_model_free(m);
    return true;
}

/* One inference on m; true with outputs in out. */
static bool run(const spy_model *m, void **in, void **out, Result *r)
{
    spy_session_options so = {.num_threads = 1};
    spy_session *s = NULL;
    spy_status st = spy_session_create(m, &so, &s);
    if (st != SPY_OK) {
        snprintf(r->msg, sizeof r->msg, "session: %s", spy_status_str(st));
        return false;
    }
    st = spy_session_run(s, (const void *const *)in, out);
    if (st != SPY_OK)
        snprintf(r->msg, sizeof r->msg, "run: %s", spy_session_error(s));
    spy_session_free(s);
    return st == SPY_OK;
}

/* ---- the sweep -------------------------------------------------------------------- */

typedef enum { ST_COMPILE, ST_LOAD, ST_RUN } Stage;
static const char *const stage_name[] = {"compile", "load", "run"};

typedef struct {
    const char *model;
    Result ref;
    spy_model *m; /* reference model (for run) */
    void **in, **out, **ref_out;
    int nout;
    long nfail, tries;
} Sweep;

/* Whether the outputs equal the reference outputs. */
static bool same_outputs(const Sweep *sw)
{
    for (int k = 0; k < sw->nout; k++) {
        spy_tensor_info info;
        spy_model_output_info(sw->m, k, &info);
        if (memcmp(sw->out[k], sw->ref_out[k], info.nbytes) != 0)
            return false;
    }
    return true;
}

/* One attempt of stage with allocation n failing. Returns whether the n-th allocation
 * was reached (false: the stage needs fewer allocations; the sweep is over). */
static bool attempt(Sweep *sw, Stage stage, long n)
{
    Result r = {0};
    size_t before = live_count();
    arm(n);
    bool ok = stage == ST_COMPILE ? compile(sw->model, &r)
              : stage == ST_LOAD  ? load(&sw->ref, &r, NULL)
                                  : run(sw->m, sw->in, sw->out, &r);
    disarm();
    bool reached = injected;
    const char *bad = NULL;
    if (ok && stage == ST_COMPILE &&
        (r.len != sw->ref.len || memcmp(r.bundle, sw->ref.bundle, r.len) != 0))
        bad = "succeeded with a different bundle";
    else if (ok && stage == ST_RUN && !same_outputs(sw))
        bad = "succeeded with different outputs";
    else if (!ok && !r.msg[0])
        bad = "failed without a message";
    else if (!ok && !strstr(r.msg, "out of memory"))
        bad = "failed without saying out of memory";
    free(r.bundle);
    size_t after = live_count();
    char why[700];
    if (!bad && after != before) {
        snprintf(why, sizeof why, "%zu block(s) leaked (%s)", after - before,
                 ok ? "after success" : r.msg);
        bad = why;
    }
    sw->tries++;
    if (getenv("ALLOCFAIL_VERBOSE"))
        printf("%s, allocation %ld failing: %s\n", stage_name[stage], n,
               ok ? "succeeded" : r.msg);
    if (bad && sw->nfail++ < 30)
        printf("FAIL %s with allocation %ld failing: %s\n", stage_name[stage], n, bad);
    return reached;
}

/* attempt() in a child process, so that a crash at N is reported and the sweep goes on.
 * Returns whether N was reached; sets *crashed when the child died of a signal. */
static bool attempt_forked(Sweep *sw, Stage stage, long n, bool *crashed)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        long before = sw->nfail;
        bool reached = attempt(sw, stage, n);
        fflush(stdout);
        _exit((reached ? 1 : 0) | (sw->nfail != before ? 2 : 0));
    }
    int status = 0;
    *crashed = false;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        printf("FAIL %s with allocation %ld failing: cannot fork\n", stage_name[stage], n);
        sw->nfail++;
        return false;
    }
    sw->tries++;
    if (WIFSIGNALED(status)) {
        if (sw->nfail++ < 30)
            printf("FAIL %s with allocation %ld failing: killed by signal %d\n", stage_name[stage],
                   n, WTERMSIG(status));
        *crashed = true;
        return true;
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    if (code & 2)
        sw->nfail++;
    return (code & 1) != 0;
}

/* Sweep stage over N = 1, 1 + step, ... until an attempt no longer reaches N: first
 * each N in a child process (crashes are reported, the sweep goes on), then again in
 * this process for every N whose child did not crash, so that LeakSanitizer (in ASan
 * builds) sees every clean-up path. Returns the number of allocations of the stage. */
static long sweep(Sweep *sw, Stage stage, long step)
{
    long n = 1, cap = 1 << 20;
    uint8_t *crashed = __real_calloc((size_t)cap, 1);
    bool c;
    while (n < cap && attempt_forked(sw, stage, n, &c)) {
        crashed[n] = c;
        n += step;
    }
    long total = n - 1;
    for (long k = 1; k <= total; k += step)
        if (!crashed[k])
            attempt(sw, stage, k);
    __real_free(crashed);
    return total;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: allocfail MODEL.onnx\n");
        return 2;
    }
    const char *e = getenv("ALLOCFAIL_STEP");
    long step = e && atol(e) > 0 ? atol(e) : 1;
    Sweep sw = {.model = argv[1]};
    if (!compile(sw.model, &sw.ref)) {
        printf("FAIL allocfail: %s does not compile: %s\n", sw.model, sw.ref.msg);
        return 1;
    }
    char err[512];
    if (spy_model_load_memory(sw.ref.bundle, sw.ref.len, &sw.m, err, sizeof err) != SPY_OK) {
        printf("FAIL allocfail: the reference bundle does not load: %s\n", err);
        return 1;
    }
    sw.nout = spy_model_num_outputs(sw.m);
    sw.in = buffers(sw.m, true);
    sw.out = buffers(sw.m, false);
    sw.ref_out = buffers(sw.m, false);
    Result r = {0};
    if (!run(sw.m, sw.in, sw.ref_out, &r)) {
        printf("FAIL allocfail: the reference run fails: %s\n", r.msg);
        return 1;
    }
    const char *only = getenv("ALLOCFAIL_ONLY");  /* "N": one compile attempt, in process */
    if (only) {
        attempt(&sw, ST_COMPILE, atol(only));
        return sw.nfail != 0;
    }
    long nc = sweep(&sw, ST_COMPILE, step);
    long nl = sweep(&sw, ST_LOAD, 1);
    long nr = sweep(&sw, ST_RUN, 1);
    printf("allocfail: %s: compile %ld, load %ld, run %ld allocations; %ld attempts "
           "(every %ld-th compile allocation), %ld failed\n",
           sw.model, nc, nl, nr, sw.tries, step, sw.nfail);
    free_buffers(sw.in, spy_model_num_inputs(sw.m));
    free_buffers(sw.out, sw.nout);
    free_buffers(sw.ref_out, sw.nout);
    spy_model_free(sw.m);
    free(sw.ref.bundle);
    printf("%s\n", sw.nfail ? "FAIL allocfail" : "PASS allocfail");
    return sw.nfail != 0;
}
