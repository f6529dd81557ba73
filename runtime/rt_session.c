/* rt_session.c: sessions: their memory (arena, one scratchpad per host thread,
 * staging buffers for converted I/O), binding of the caller's buffers to DRAM
 * segments, and execution of the schedule: for each kernel the core programs (a
 * stitched kernel's items instead, rt_stitch.c) are taken from a shared counter by the
 * session's threads (programs that are only their BARRIER are skipped); a thread
 * starts a kernel's programs once every program of
 * the previous schedule entry is done (a per-entry completion counter), so no thread
 * waits for one that has nothing to do or has not been scheduled yet. A run without a
 * kernel hook or a profile overlaps entries where rt_overlap.c listed what each
 * program needs: a thread that finds no program of an entry left takes the next
 * entry's programs as soon as the earlier entries are complete (a count of leading
 * complete entries) and the programs of the entry before that it depends on are done
 * (a per-entry mask), instead of waiting for the slowest thread. A kernel the
 * run's share policy (rt_adapt.h, chosen per run from the session's timings) leaves
 * serial runs all its programs on the calling thread. The counters carry the run's
 * generation (gen << 32 | count): a worker still inside an earlier run when the
 * caller has returned (rt_pool.h) takes nothing of a later one.
 * Each core program (or item) runs start to end on one thread, so results do not
 * depend on the number of threads.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_adapt.h"
#include "rt_exec.h"
#include "rt_io.h"
#include "rt_model.h"
#include "rt_pool.h"
#include "rt_special.h"

/* Host time one thread spent on one schedule entry (profiling only). */
typedef struct {
    double start, end;       /* first program start, last program end (microseconds) */
    uint32_t n;              /* programs run */
} RtHostSpan;

/* Bytes of constants and activations from which a model's session keeps its working
 * buffers in huge pages (rt_huge.c): the real-size models stream their activations
 * along strided rows, a 4 KiB page a row (resnet50: 2.3-2.7% faster); a small model's
 * session would zero 2 MiB pages it barely touches. */
#define RT_HUGE_MODEL ((uint64_t)32 << 20)

struct spy_session {
    const spy_model *m;
    int nthreads;
    bool profile, poison;
    bool huge;               /* arena, lx and acache in huge pages (RT_HUGE_MODEL) */
    uint8_t *arena;
    uint8_t **lx;            /* [nthreads] scratchpads, each followed by a packing buffer */
    float **acache;          /* [nthreads] caches of a packed MATMUL A (rt_acache.c) */
    RtApre *apre;            /* copies of constant A operands (rt_apre.c), or NULL */
    uint8_t **seg;           /* [nsegs] bound segment base pointers */
    uint8_t *staging;        /* one block for all converted tensors */
    uint8_t **stage;         /* [ntensors] staging buffer or NULL when direct */
    _Atomic uint64_t *next;  /* [nsched] gen << 32 | next program index per entry */
    _Atomic uint64_t *done;  /* [nsched] gen << 32 | programs finished per entry */
    _Atomic uint64_t *dmask; /* [nsched] this run's programs finished per entry, a bit per
                                active program (overlapped runs, rt_overlap.c) */
    _Atomic uint64_t prefix; /* gen << 32 | leading entries complete (overlapped runs) */
    bool overlap;            /* this run starts programs of an entry before the one before
                                it is complete (m->odep: no hook, no profile, threads) */
    _Atomic uint32_t gen;    /* generation of the current (or last) run */
    double *host_us;         /* [nkernels] host time of the last run */
    int64_t *dyn_dims;       /* [ntensors * SPY_MAX_RANK] dims of the outputs after the
                                last run (dynamic and shaped ones: the actual dims); of
                                the inputs, as given by spy_session_set_input_shape */
    uint8_t **pad;           /* [ninputs] bound-shaped copies of symbolic inputs */
    const void **bound_in;   /* [ninputs] the buffers bound for the inputs of a run */
    RtPool *pool;
    RtAdapt adapt;           /* choice of the share policy (rt_adapt.c) */
    atomic_int policy;       /* share policy of the current (or last) run */
    bool solo;               /* this run is on the caller alone (every kernel serial) */
    atomic_int busy;
    /* first run-time error of the current run (lowest schedule entry, then core) */
    pthread_mutex_t err_mu;
    atomic_int failed;
    atomic_uint fail_pos;    /* lowest schedule entry that failed (UINT32_MAX: none) */
    uint32_t err_pos, err_core, err_insn;
    int err_kind;
    int64_t err_value;
    char err[RT_ERR_LEN];
    /* host timeline when profiling: span of each thread on each schedule entry */
    RtHostSpan *span;        /* [nsched * nthreads], NULL when not profiling */
    double run_t0;           /* start of the last run, microseconds */
    /* kernel hook (rt_debug.c): the other threads start entry pos once hooked >= pos */
    spy_kernel_hook hook;
    void *hook_user;
    int hook_kernel;         /* kernel whose hook runs now, -1 */
    _Atomic uint64_t hooked; /* gen << 32 | entries whose hook returned (all: no hook) */
    /* size buckets (rt_variants.c): a session per bucket, made at its first run */
    spy_session **vsub;      /* [m->nvariants] or NULL */
    int variant;             /* bucket of the last run, -1: the bounds */
    RtPick pick;             /* the buckets of the last sizes (rt_variant_pick) */
    /* guards (SPY_FEAT_GUARDS): the modelled time of the sizes of the last run */
    double *guard_kus;       /* [nkernels] per kernel, computed for guard_key */
    int32_t *guard_key;      /* [nsyms] the sizes it was computed for; [0] = -1: none */
    double guard_us;         /* its sum over the schedule */
    RtSpec spec;             /* the programs specialised to guard_key (rt_special.c) */
};

static uint8_t rt_empty_buffer[8]; /* bound to zero-size tensors passed as NULL */

static void run_thread(void *arg, int tid);

/* A value of a tagged counter: generation gen, count n. */
static uint64_t tagged(uint32_t gen, uint32_t n) {
    return (uint64_t)gen << 32 | n;
}

/* Monotonic clock in microseconds. */
static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Bytes allocated per host thread: the scratchpad with its slack, then the MATMUL
 * packing buffer with its slack, 64-aligned within the block (pack_buffer), then the
 * widening area of DLF16 MATMULs (wide_offset), then a window's kept B row offsets
 * (koff_buffer). */
static size_t lx_alloc_bytes(const spy_model *m) {
    return (size_t)m->target.lx_budget_bytes + RT_LX_SLACK + 64 + RT_PACK_BYTES +
           RT_PACK_SLACK + 2 * (size_t)m->target.lx_budget_bytes + RT_LX_SLACK + 64 +
           RT_KOFF_MAX * 4 + 64;
}

/* The packing buffer within a thread's block lx (see lx_alloc_bytes). */
static float *pack_buffer(const spy_model *m, uint8_t *lx) {
    uintptr_t p = (uintptr_t)(lx + m->target.lx_budget_bytes + RT_LX_SLACK);
    return (float *)((p + 63) & ~(uintptr_t)63);
}

/* Byte offset of the widening area (RtCore.wide) within a thread's block lx, 64-aligned
 * in memory. */
static uint32_t wide_offset(const spy_model *m, const uint8_t *lx) {
    uintptr_t p = (uintptr_t)pack_buffer(m, (uint8_t *)(uintptr_t)lx) + RT_PACK_BYTES +
                  RT_PACK_SLACK;
    return (uint32_t)(((p + 63) & ~(uintptr_t)63) - (uintptr_t)lx);
}

/* The kept window offsets (RtCore.koff) within a thread's block lx, 64-aligned. */
static int32_t *koff_buffer(const spy_model *m, uint8_t *lx) {
    uintptr_t p = (uintptr_t)lx + wide_offset(m, lx) + 2 * (size_t)m->target.lx_budget_bytes +
                  RT_LX_SLACK;
    return (int32_t *)((p + 63) & ~(uintptr_t)63);
}

/* Allocates everything a session of m with nthreads threads needs. */
static spy_status session_alloc(spy_session *s) {
    const spy_model *m = s->m;
    size_t lxb = lx_alloc_bytes(m);
    s->huge = m->segs[0].size + m->segs[1].size >= RT_HUGE_MODEL;
    s->arena = rt_huge_alloc(m->segs[1].size, s->huge);
    s->lx = calloc((size_t)s->nthreads, sizeof *s->lx);
    s->acache = calloc((size_t)s->nthreads, sizeof *s->acache);
    s->seg = calloc(m->nsegs, sizeof *s->seg);
    s->staging = calloc(m->staging_bytes ? m->staging_bytes : 1, 1);
    s->stage = calloc(m->ntensors + 1, sizeof *s->stage);
    s->next = calloc(m->nsched + 1, sizeof *s->next);
    s->done = calloc(m->nsched + 1, sizeof *s->done);
    s->dmask = calloc(m->nsched + 1, sizeof *s->dmask);
    s->host_us = calloc(m->nkernels + 1, sizeof *s->host_us);
    s->dyn_dims = calloc((size_t)m->ntensors * SPY_MAX_RANK + 1, sizeof *s->dyn_dims);
    if (!s->dyn_dims)
        return SPY_E_NOMEM;
    for (uint32_t i = 0; i < m->ntensors; i++)       /* upper bounds until a run */
        for (int d = 0; d < m->io[i].info.rank; d++)
            s->dyn_dims[i * SPY_MAX_RANK + (uint32_t)d] = m->io[i].info.dims[d];
    if (m->guards) {
        s->guard_kus = calloc(m->nkernels + 1, sizeof *s->guard_kus);
        s->guard_key = calloc(m->nsyms + 1, sizeof *s->guard_key);
        if (!s->guard_kus || !s->guard_key || !rt_spec_init(&s->spec, m))
            return SPY_E_NOMEM;
        s->guard_key[0] = -1;
    }
    s->pad = calloc(m->ninputs + 1, sizeof *s->pad);
    s->bound_in = calloc(m->ninputs + 1, sizeof *s->bound_in);
    if (!s->pad || !s->bound_in)
        return SPY_E_NOMEM;
    for (uint32_t i = 0; i < m->nvis_in; i++)
        if (m->io[i].symbolic && !(s->pad[i] = calloc(m->io[i].info.nbytes + 1, 1)))
            return SPY_E_NOMEM;
    if (s->profile)
        s->span = calloc((size_t)m->nsched * (size_t)s->nthreads + 1, sizeof *s->span);
    if (!s->arena || !s->lx || !s->acache || !s->seg || !s->staging || !s->stage || !s->next ||
        !s->done || !s->dmask || !s->host_us || (s->profile && !s->span))
        return SPY_E_NOMEM;
    for (int t = 0; t < s->nthreads; t++)
        if (!(s->lx[t] = rt_huge_alloc(lxb, s->huge)) ||
            !(s->acache[t] = rt_huge_alloc(RT_ACACHE_BYTES + RT_PACK_SLACK, s->huge)))
            return SPY_E_NOMEM;
    size_t off = 0;
    for (uint32_t i = 0; i < m->ntensors; i++)
        if (!m->io[i].direct) {
            s->stage[i] = s->staging + off;
            off += (m->io[i].dev_bytes + 63) & ~(size_t)63;
        }
    s->seg[0] = (uint8_t *)m->consts; /* read-only: the verifier forbids stores */
    if (!s->poison)    /* copies of weights: at most the constants' size, and 1 GiB */
        s->apre = rt_apre_create(m->segs[0].size < RT_APRE_MAX ? m->segs[0].size : RT_APRE_MAX);
    s->seg[1] = s->arena;
    rt_adapt_init(&s->adapt, s->nthreads > 1 ? m->share_policies : 1);
    s->pool = rt_pool_create(s->nthreads, run_thread, s);
    return s->pool ? SPY_OK : SPY_E_NOMEM;
}

/* Creates a session for m with the given options (NULL = defaults). */
spy_status spy_session_create(const spy_model *m, const spy_session_options *opt,
                              spy_session **out) {
    if (out)
        *out = NULL;
    if (!m || !out)
        return SPY_E_INVALID_ARG;
    spy_session_options o = {0};
    if (opt)
        o = *opt;
    if (o.num_threads < 0)
        return SPY_E_INVALID_ARG;
    spy_session *s = calloc(1, sizeof *s);
    if (!s)
        return SPY_E_NOMEM;
    s->m = m;
    s->nthreads = o.num_threads ? o.num_threads : rt_default_threads(m);
    if (s->nthreads > (int)m->target.cores)
        s->nthreads = (int)m->target.cores;
    s->profile = o.profile != 0;
    s->poison = o.debug_lx_poison != 0;
    s->hook_kernel = -1;
    s->variant = -1;
    pthread_mutex_init(&s->err_mu, NULL);
    spy_status st = session_alloc(s);
    if (st) {
        spy_session_free(s);
        return st;
    }
    *out = s;
    return SPY_OK;
}

/* Frees a session (NULL is ignored). Must not be running. */
void spy_session_free(spy_session *s) {
    if (!s)
        return;
    rt_pool_free(s->pool);
    if (s->lx)
        for (int t = 0; t < s->nthreads; t++)
            rt_huge_free(s->lx[t], lx_alloc_bytes(s->m), s->huge);
    if (s->acache)
        for (int t = 0; t < s->nthreads; t++)
            rt_huge_free(s->acache[t], RT_ACACHE_BYTES + RT_PACK_SLACK, s->huge);
    free(s->lx);
    free(s->acache);
    rt_apre_free(s->apre);
    rt_huge_free(s->arena, s->m->segs[1].size, s->huge);
    free(s->seg);
    free(s->staging);
    free(s->stage);
    free((void *)s->next);
    free((void *)s->done);
    free((void *)s->dmask);
    free(s->host_us);
    free(s->guard_kus);
    free(s->guard_key);
    rt_spec_free(&s->spec);
    free(s->dyn_dims);
    for (uint32_t i = 0; s->pad && i < s->m->ninputs; i++)
        free(s->pad[i]);
    free(s->pad);
    free(s->bound_in);
    free(s->span);
    for (uint32_t v = 0; s->vsub && v < s->m->nvariants; v++)
        spy_session_free(s->vsub[v]);
    free(s->vsub);
    pthread_mutex_destroy(&s->err_mu);
    free(s);
}

/* Last error message of the session ("" if none). */
const char *spy_session_error(const spy_session *s) {
    return s ? s->err : "NULL session";
}

/* Records a failed core; keeps the lowest (schedule entry, core) for determinism. */
static void record_error(spy_session *s, uint32_t pos, uint32_t core, const RtCore *c) {
    pthread_mutex_lock(&s->err_mu);
    if (!atomic_load(&s->failed) || pos < s->err_pos ||
        (pos == s->err_pos && core < s->err_core)) {
        s->err_pos = pos;
        s->err_core = core;
        s->err_insn = c->err_insn;
        s->err_kind = c->err;
        s->err_value = c->err_value;
        atomic_store(&s->failed, 1);
    }
    if (pos < atomic_load(&s->fail_pos)) /* writers hold err_mu */
        atomic_store(&s->fail_pos, pos);
    pthread_mutex_unlock(&s->err_mu);
}

/* Runs program j of the kernel at schedule entry pos on core c. */
static void run_program(spy_session *s, RtCore *c, uint32_t pos, uint32_t j) {
    const spy_model *m = s->m;
    const SpyProgramDesc *pd = &m->programs[m->kernels[m->schedule[pos]].first_program + j];
    if (s->poison)
        memset(c->lx, 0xff, m->target.lx_budget_bytes);
    c->err = RT_XOK;
    RtSpecRun r = {m->code + pd->first_insn, m->prep + pd->first_insn, pd->ninsns, NULL};
    const int32_t *dims = c->dims;      /* guards: the program specialised to the sizes */
    if (dims && rt_spec_get(&s->spec, m, (uint32_t)(pd - m->programs), dims, &r))
        c->dims = NULL;                 /* (rt_special.c), else run through its guards */
    int rc = rt_exec_prepared(c, r.code, r.prep, r.n);
    c->dims = dims;
    if (rc != RT_XOK) {
        if (r.orig)                      /* the index in the bundle's program */
            c->err_insn = r.orig[c->err_insn];
        record_error(s, pos, pd->core, c);
    }
}

/* Programs in schedule entry pos (the active ones of its kernel). */
static uint32_t entry_programs(const spy_model *m, uint32_t pos) {
    uint32_t k = m->schedule[pos];
    return m->active_first[k + 1] - m->active_first[k];
}

/* The stitched form of kernel k in session s (rt_stitch.c), or NULL: its programs run
 * one by one (always when the session poisons LX: that checks the programs). */
static const RtStitch *stitched(const spy_session *s, uint32_t k) {
    return s->m->stitch && !s->poison ? s->m->stitch[k] : NULL;
}

/* Stitched items a kernel's entry is cut into: about two a thread, so that one thread
 * slowed by the host leaves the other a share to take. */
static uint32_t stitch_want(const spy_session *s) {
    return 2 * (uint32_t)s->nthreads;
}

/* Units the threads take from entry pos's counter: its kernel's stitched items, or its
 * programs. */
static uint32_t entry_units(const spy_session *s, uint32_t pos) {
    const RtStitch *st = stitched(s, s->m->schedule[pos]);
    return st ? rt_stitch_items(st, stitch_want(s)) : entry_programs(s->m, pos);
}

/* Programs taken so far from the front (thread 0) and from the back (the others) of
 * an entry's counter value v (low 32 bits: front << 16 | back; both below 2^16, as a
 * kernel has at most RT_MAX_CORES programs). */
static uint32_t taken_front(uint64_t v) {
    return (uint32_t)v >> 16;
}
static uint32_t taken_back(uint64_t v) {
    return (uint32_t)v & 0xffff;
}

/* Takes the next program of the counter next (tag gen, na programs) into *j: thread 0
 * from the front, the others from the back, so that each thread runs a contiguous run
 * of programs (neighbouring cores share input patches and weights: rt_memo.c, the
 * host's caches); false when none is left or the counter belongs to another run. */
static bool take_program(_Atomic uint64_t *next, uint32_t gen, uint32_t na, int tid,
                         uint32_t *j) {
    uint64_t v = atomic_load(next);
    while ((uint32_t)(v >> 32) == gen && taken_front(v) + taken_back(v) < na) {
        uint64_t w = tid == 0 ? v + (1u << 16) : v + 1;
        if (atomic_compare_exchange_weak(next, &v, w)) {
            *j = tid == 0 ? taken_front(v) : na - 1 - taken_back(v);
            return true;
        }
    }
    return false;
}

/* Whether every entry before pos is complete in run gen (0: none). */
static bool entry_complete(spy_session *s, uint32_t gen, uint32_t pos) {
    uint64_t v = atomic_load(&s->done[pos]);
    return (uint32_t)(v >> 32) == gen && (uint32_t)v >= entry_programs(s->m, pos);
}

/* Advances the count of leading complete entries of run gen (overlapped runs) past
 * every complete entry it reaches: the thread that completes an entry, and every
 * thread before it waits for the count (entries without programs complete at once). */
static void advance_prefix(spy_session *s, uint32_t gen) {
    uint64_t v = atomic_load(&s->prefix);
    while ((uint32_t)(v >> 32) == gen && (uint32_t)v < s->m->nsched &&
           entry_complete(s, gen, (uint32_t)v))
        if (atomic_compare_exchange_weak(&s->prefix, &v, tagged(gen, (uint32_t)v + 1)))
            v = tagged(gen, (uint32_t)v + 1);
}

/* Waits in run gen until the first n entries are complete (overlapped runs). */
static void wait_prefix(spy_session *s, uint32_t gen, uint32_t n) {
    advance_prefix(s, gen);
    rt_pool_wait(s->pool, &s->prefix, tagged(gen, n));
}

/* Program j of entry pos (overlapped: ov) waits for the programs of entry pos - 1 it
 * depends on (rt_overlap.c). */
static void wait_deps(spy_session *s, uint32_t pos, uint32_t j) {
    uint64_t need = s->m->odep[s->m->odep_first[pos] + j];
    rt_pool_wait_mask(s->pool, &s->dmask[pos - 1], need);
}

/* Runs unit j of schedule entry pos on core (unless skip): item j of its stitched
 * kernel st, or program j. Overlapped (ov), it first waits for the programs of entry
 * pos - 1 its own programs depend on. Returns how many programs it stood for, their
 * bits (of entry pos's active programs) in *bits. */
static uint32_t run_unit(spy_session *s, RtCore *core, uint32_t pos, uint32_t j,
                         const RtStitch *st, bool ov, bool skip, uint64_t *bits) {
    const spy_model *m = s->m;
    if (!st) {
        if (ov)
            wait_deps(s, pos, j);
        if (!skip)
            run_program(s, core, pos, m->active[m->active_first[m->schedule[pos]] + j]);
        *bits = j < 64 ? 1ull << j : 0;
        return 1;
    }
    RtStBox b;
    uint64_t need = 0;
    rt_stitch_box(st, stitch_want(s), j, &b);
    *bits = 0;
    for (uint32_t r = b.r0; r < b.r1; r++)
        for (uint32_t c = b.c0; c < b.c1; c++) {
            uint32_t p = st->cell[r * st->nb + c];
            *bits |= p < 64 ? 1ull << p : 0;
            if (ov)
                need |= m->odep[m->odep_first[pos] + p];
        }
    if (ov)
        rt_pool_wait_mask(s->pool, &s->dmask[pos - 1], need);
    if (!skip)
        rt_stitch_run(core, st, &b);
    return (b.r1 - b.r0) * (b.c1 - b.c0);
}

/* Takes units of schedule entry pos from its counter (all of them when serial): its
 * programs, or its stitched kernel's items (rt_stitch.c), and runs them unless an
 * earlier entry failed; then counts their programs done. Overlapped (ov), each unit
 * first waits for the programs of entry pos - 1 it depends on, and its programs are
 * counted in the entry's mask as soon as it is done. */
static void run_entry(spy_session *s, RtCore *core, uint32_t gen, uint32_t pos, int tid,
                      bool serial, bool ov) {
    const spy_model *m = s->m;
    uint32_t k = m->schedule[pos], na = entry_programs(m, pos), nu = entry_units(s, pos);
    const RtStitch *st = stitched(s, k);
    RtHostSpan *sp = s->span ? &s->span[(size_t)pos * s->nthreads + tid] : NULL;
    bool skip = atomic_load(&s->fail_pos) < pos; /* an earlier entry failed */
    uint32_t ran = 0, progs = 0, j;
    bool marks = s->overlap && pos + 1 < m->nsched && m->odep_first[pos + 1] != RT_OV_BARRIER;
    core->memo = 0;     /* a patch of an earlier entry: its DRAM may have changed since */
    rt_acache_entry(core, m->kwr_first ? m->kwr + m->kwr_first[k] : NULL,  /* likewise a */
                    m->kwr_first ? m->kwr_first[k + 1] - m->kwr_first[k] : 0); /* packed A */
    while (serial ? (j = ran) < nu : take_program(&s->next[pos], gen, nu, tid, &j)) {
        if (sp && sp->n++ == 0)
            sp->start = now_us();
        uint64_t bits;
        progs += run_unit(s, core, pos, j, st, ov, skip, &bits);
        if (marks) {                         /* for the next entry's programs */
            atomic_fetch_or(&s->dmask[pos], bits);
            rt_pool_notify(s->pool);
        }
        ran++;
    }
    if (sp && ran)                           /* ran: this run's span row is ours */
        sp->end = now_us();
    if (progs && (uint32_t)atomic_fetch_add(&s->done[pos], progs) + progs == na) {
        if (s->overlap)
            advance_prefix(s, gen);
        rt_pool_notify(s->pool);
    }
}

/* Calls the kernel hook after schedule entry pos (kernel k) unless it failed, then lets
 * the other threads go on to the next entry. */
static void call_hook(spy_session *s, uint32_t gen, uint32_t pos, uint32_t k) {
    if (atomic_load(&s->fail_pos) > pos) {
        s->hook_kernel = (int)k;
        s->hook(s, (int)pos, (int)k, s->hook_user);
        s->hook_kernel = -1;
    }
    atomic_store(&s->hooked, tagged(gen, pos + 1));
    rt_pool_notify(s->pool);
}

/* Whether kernel k runs all its programs on thread 0 under share policy pol. */
static bool kernel_serial(const spy_model *m, uint32_t k, int pol) {
    return m->share_rank[k] > pol;
}

/* Whether entry pos of an overlapped run starts before entry pos - 1 is complete:
 * rt_overlap.c listed what its programs wait for, and neither entry is serial under
 * share policy pol. */
static bool overlaps(const spy_model *m, uint32_t pos, int pol) {
    return pos > 0 && m->odep_first[pos] != RT_OV_BARRIER &&
           !kernel_serial(m, m->schedule[pos], pol) && !kernel_serial(m, m->schedule[pos - 1], pol);
}

/* Whether entry pos has no program left for a worker of run gen (or is serial under
 * share policy pol). */
static bool nothing_left(spy_session *s, uint32_t gen, uint32_t pos, int pol) {
    uint64_t v = atomic_load(&s->next[pos]);
    return kernel_serial(s->m, s->m->schedule[pos], pol) || (uint32_t)(v >> 32) != gen ||
           taken_front(v) + taken_back(v) >= entry_units(s, pos);
}

/* Thread body of a run (any subset of the threads, thread 0 always among them). A
 * kernel serial under the run's share policy runs all its programs on thread 0; the
 * others share their programs through a counter (a worker that reads the policy of a
 * later run than gen takes nothing: the counters carry that run's tag). Before taking
 * programs of an entry a thread waits for the previous entry to complete; thread 0
 * also waits for each entry it worked on, so when it returns every program ran. A
 * worker skips entries with no program left, and all of them once the run is over (a
 * later run's generation). */
static void run_thread(void *arg, int tid) {
    spy_session *s = arg;
    const spy_model *m = s->m;
    uint32_t gen = atomic_load(&s->gen);
    int pol = atomic_load_explicit(&s->policy, memory_order_relaxed);
    RtCore core = {.lx = s->lx[tid], .seg = s->seg,
                   .pack = pack_buffer(m, s->lx[tid]), .wide = wide_offset(m, s->lx[tid]),
                   .acache = s->poison ? NULL : s->acache[tid], .apre = s->apre,
                   .atrail = {NULL, tid != 0},   /* thread 0 takes from the front */
                   .koff = koff_buffer(m, s->lx[tid]),
                   .memo_on = !s->poison,
                   .dims = m->guards ? (const int32_t *)s->stage[m->ninputs - 1] : NULL};
    bool one = tid == 0 && (s->nthreads == 1 || s->solo);
    bool ovr = s->overlap;
    for (uint32_t pos = 0; pos < m->nsched; pos++) {
        uint32_t k = m->schedule[pos];
        if (tid != 0 && nothing_left(s, gen, pos, pol)) {
            if (atomic_load(&s->gen) != gen)
                return;
            continue;
        }
        bool ov = ovr && overlaps(m, pos, pol);
        if (ovr) {           /* overlapped: the entries before pos - 1, or before pos */
            wait_prefix(s, gen, ov ? pos - 1 : pos);
        } else if (pos > 0) {
            rt_pool_wait(s->pool, &s->done[pos - 1], tagged(gen, entry_programs(m, pos - 1)));
            rt_pool_wait(s->pool, &s->hooked, tagged(gen, pos));
        }
        double t0 = tid == 0 && s->profile ? now_us() : 0;
        run_entry(s, &core, gen, pos, tid, one || kernel_serial(m, k, pol), ov);
        if (tid != 0 || ovr)
            continue;
        rt_pool_wait(s->pool, &s->done[pos], tagged(gen, entry_programs(m, pos)));
        if (s->profile)
            s->host_us[k] += now_us() - t0;
        if (s->hook)
            call_hook(s, gen, pos, k);
    }
    if (tid == 0 && ovr)                 /* every entry complete */
        wait_prefix(s, gen, m->nsched);
}

/* Formats the message of the run-time error recorded in s. */
static void format_run_error(spy_session *s) {
    const spy_model *m = s->m;
    uint32_t k = m->schedule[s->err_pos];
    const SpyKernelDesc *kd = &m->kernels[k];
    const SpyProgramDesc *pd = NULL;
    for (uint32_t j = 0; j < kd->ncores; j++)
        if (m->programs[kd->first_program + j].core == s->err_core)
            pd = &m->programs[kd->first_program + j];
    if (!pd) {
        snprintf(s->err, sizeof s->err, "kernel %u: run-time error", k);
        return;
    }
    const SpyInsn *in = &m->code[pd->first_insn + s->err_insn];
    int n = snprintf(s->err, sizeof s->err, "kernel %u '%s' core %u instruction %u (%s): ", k,
                     rt_str(m, kd->name), s->err_core, s->err_insn,
                     rt_opcode_name(in->opcode));
    if (n < 0 || (size_t)n >= sizeof s->err)
        return;
    if (s->err_kind == RT_XERR_INDEX)
        snprintf(s->err + n, sizeof s->err - (size_t)n,
                 "index %lld out of range [-%u, %u) (table rows)", (long long)s->err_value,
                 in->gather.bound, in->gather.bound);
    else
        snprintf(s->err + n, sizeof s->err - (size_t)n, "integer division by zero (%s)",
                 rt_vecfn_name(in->vec.fn));
}

/* Binds inputs (narrowing where needed) and outputs to their segments. */
static spy_status bind_io(spy_session *s, const void *const *inputs, void *const *outputs) {
    const spy_model *m = s->m;
    for (uint32_t i = 0; i < m->ntensors; i++) {
        const RtIo *io = &m->io[i];
        bool in = i < m->ninputs;
        if (io->hidden) {                    /* internal output (rt_dyn.c): staged */
            s->seg[io->seg] = s->stage[i];
            continue;
        }
        void *buf = in ? (void *)inputs[i] : outputs[i - m->ninputs];
        if (!buf && io->info.nbytes == 0)
            buf = rt_empty_buffer;
        if (!buf) {
            snprintf(s->err, sizeof s->err, "%s %u '%s': buffer is NULL", in ? "input" : "output",
                     in ? i : i - m->ninputs, io->info.name);
            return SPY_E_INVALID_ARG;
        }
        if (io->direct) {
            s->seg[io->seg] = buf;
            continue;
        }
        s->seg[io->seg] = s->stage[i];
        size_t bad;
        int64_t val;
        if (in && !rt_io_narrow(io->desc->host_dtype, io->desc->dev_dtype, buf, s->stage[i],
                                io->desc->numel, &bad, &val)) {
            char vs[40];
            rt_io_format(io->desc->host_dtype, buf, bad, vs, sizeof vs);
            snprintf(s->err, sizeof s->err,
                     "input '%s' element %zu: value %s does not fit the device type %s",
                     io->info.name, bad, vs, rt_dtype_name(io->desc->dev_dtype));
            return SPY_E_RUNTIME;
        }
    }
    return SPY_OK;
}

/* Runs the inference on size bucket v of s's model, in a session of its own (made at
 * its first use, with s's options): the inputs at their actual shapes, the outputs into
 * the caller's buffers (sized for the bounds; the bucket writes its own size, the rest
 * is left as it was), their shapes copied for spy_session_output_shape. */
static spy_status run_variant(spy_session *s, int v, const void *const *inputs,
                              void *const *outputs) {
    const spy_model *m = s->m, *b = m->variants[v];
    if (!s->vsub && !(s->vsub = calloc(m->nvariants, sizeof *s->vsub)))
        return SPY_E_NOMEM;
    spy_session_options o = {.num_threads = s->nthreads, .profile = s->profile,
                             .debug_lx_poison = s->poison};
    spy_session *sub = s->vsub[v];
    spy_status st = sub ? SPY_OK : spy_session_create(b, &o, &s->vsub[v]);
    sub = s->vsub[v];
    for (uint32_t i = 0; st == SPY_OK && i < m->nvis_in; i++)
        if (m->io[i].symbolic)
            st = spy_session_set_input_shape(sub, (int)i, m->io[i].info.rank,
                                             s->dyn_dims + (size_t)i * SPY_MAX_RANK);
    if (st == SPY_OK && sub->hook != s->hook)
        st = spy_session_set_kernel_hook(sub, s->hook, s->hook_user);
    if (st == SPY_OK)
        st = spy_session_run(sub, inputs, outputs);
    if (st != SPY_OK) {
        snprintf(s->err, sizeof s->err, "%s", sub ? sub->err : "out of memory");
        return st;
    }
    for (uint32_t j = 0; j < m->nvisible; j++) {
        memcpy(s->dyn_dims + (size_t)(m->ninputs + j) * SPY_MAX_RANK,
               sub->dyn_dims + (size_t)(m->ninputs + j) * SPY_MAX_RANK,
               SPY_MAX_RANK * sizeof *s->dyn_dims);
    }
    return SPY_OK;
}

/* Starts the next run's generation: its counters reset and tagged with it, then the
 * generation published (the resets need no fence of their own: a worker reads the
 * generation, or the pool's job word, before the counters, and a worker of an earlier
 * run tells them apart by their tag whichever value it sees). */
static void reset_run(spy_session *s) {
    const spy_model *m = s->m;
    uint32_t gen = atomic_load(&s->gen) + 1;
    for (uint32_t i = 0; i < m->nsched; i++) {
        atomic_store_explicit(&s->next[i], tagged(gen, 0), memory_order_relaxed);
        atomic_store_explicit(&s->done[i], tagged(gen, 0), memory_order_relaxed);
        atomic_store_explicit(&s->dmask[i], 0, memory_order_relaxed);
    }
    atomic_store_explicit(&s->prefix, tagged(gen, 0), memory_order_relaxed);
    atomic_store_explicit(&s->fail_pos, UINT32_MAX, memory_order_relaxed);
    atomic_store_explicit(&s->hooked, tagged(gen, s->hook ? 0 : UINT32_MAX), /* no hook: */
                          memory_order_relaxed);                      /* none to wait for */
    atomic_store_explicit(&s->failed, 0, memory_order_relaxed);
    memset(s->host_us, 0, (m->nkernels + 1) * sizeof *s->host_us);
    if (s->span)
        memset(s->span, 0, (size_t)m->nsched * (size_t)s->nthreads * sizeof *s->span);
    int pol = rt_adapt_policy(&s->adapt);
    atomic_store_explicit(&s->policy, pol, memory_order_relaxed);
    s->solo = pol < m->min_rank;
    s->overlap = m->odep_first && !s->hook && !s->profile && !s->solo && s->nthreads > 1;
    s->run_t0 = now_us();
    atomic_store(&s->gen, gen);
}

/* The modelled time of a run at the sizes symv of a bundle with guards: computed from
 * the instructions the sizes leave (rt_timing_guarded) once per new tuple of sizes. */
static void guard_time(spy_session *s, const int32_t *symv) {
    const spy_model *m = s->m;
    if (memcmp(s->guard_key, symv, m->nsyms * sizeof *symv) == 0)
        return;
    s->guard_us = rt_timing_guarded(m, symv, s->guard_kus);
    memcpy(s->guard_key, symv, m->nsyms * sizeof *symv);
    rt_spec_new_sizes(&s->spec);
}

/* Runs one inference: inputs[i] / outputs[i] are caller buffers in host dtypes. */
spy_status spy_session_run(spy_session *s, const void *const *inputs, void *const *outputs) {
    if (!s)
        return SPY_E_INVALID_ARG;
    const spy_model *m = s->m;
    if ((m->ninputs && !inputs) || (m->noutputs && !outputs)) {
        snprintf(s->err, sizeof s->err, "spy_session_run: NULL %s array",
                 !inputs && m->ninputs ? "inputs" : "outputs");
        return SPY_E_INVALID_ARG;
    }
    if (atomic_exchange(&s->busy, 1))
        return SPY_E_INVALID_ARG; /* busy in another thread, which owns s->err meanwhile */
    s->err[0] = 0;
    const void *const *in = inputs;
    spy_status st = SPY_OK;
    s->variant = m->nvariants ? rt_variant_pick(m, s->dyn_dims, &s->pick) : -1;
    if (s->variant >= 0) {                   /* a size bucket (rt_variants.c) */
        st = run_variant(s, s->variant, inputs, outputs);
        atomic_store(&s->busy, 0);
        return st;
    }
    if (m->nsyms) {                          /* bounded symbolic dims (rt_symdim.c) */
        in = s->bound_in;
        st = rt_sym_inputs(m, s->dyn_dims, inputs, s->pad, s->bound_in,
                           (int32_t *)s->stage[m->ninputs - 1], s->err, sizeof s->err);
    }
    if (st == SPY_OK && m->guards)
        guard_time(s, (const int32_t *)s->stage[m->ninputs - 1]);
    if (st == SPY_OK)
        st = bind_io(s, in, outputs);
    if (st == SPY_OK) {
        reset_run(s);
        if (s->solo)
            run_thread(s, 0);
        else
            rt_pool_run(s->pool);
        if (atomic_load(&s->failed)) {
            format_run_error(s);
            st = SPY_E_RUNTIME;
        } else {
            rt_adapt_record(&s->adapt, atomic_load_explicit(&s->policy, memory_order_relaxed),
                            now_us() - s->run_t0);
        }
    }
    for (uint32_t i = m->ninputs; st == SPY_OK && i < m->ntensors; i++)
        if (!m->io[i].direct && !m->io[i].hidden)
            rt_io_widen(m->io[i].desc->host_dtype, m->io[i].desc->dev_dtype, s->stage[i],
                        outputs[i - m->ninputs], m->io[i].desc->numel);
    if (st == SPY_OK)                        /* data-dependent shapes (rt_dyn.c) */
        st = rt_dyn_outputs(m, s->seg, outputs, s->dyn_dims, s->err, sizeof s->err);
    if (st == SPY_OK && m->nsyms)
        rt_sym_outputs(m, (const int32_t *)s->stage[m->ninputs - 1], outputs, s->dyn_dims);
    atomic_store(&s->busy, 0);
    return st;
}

/* Per-kernel profile of the last run (modelled figures x schedule count). */
spy_status spy_session_kernel_profile(const spy_session *s, int i, spy_kernel_profile *p) {
    if (!s || !p)
        return SPY_E_INVALID_ARG;
    if (s->variant >= 0)                     /* the bucket's kernels */
        return spy_session_kernel_profile(s->vsub[s->variant], i, p);
    spy_status st = spy_model_kernel_profile(s->m, i, p);
    if (st == SPY_OK)
        p->host_us = s->profile ? s->host_us[i] : 0;
    if (st == SPY_OK && s->m->guards && s->guard_key[0] >= 0)   /* what ran of it */
        p->device_us = s->guard_kus[i] * s->m->sched_count[i];
    return st;
}

/* Modelled device time of the last run: the model's (its bucket's), or, in a bundle
 * with guards, that of the instructions the run's sizes left to run. */
double spy_session_device_us(const spy_session *s) {
    if (!s)
        return 0;
    if (s->variant >= 0)
        return spy_session_device_us(s->vsub[s->variant]);
    if (s->m->guards && s->guard_key[0] >= 0)
        return s->guard_us;
    return s->m->device_us;
}

/* Size bucket the last run used (spy_model_variant), -1: the bundle's bounds. */
int spy_session_variant(const spy_session *s) {
    return s ? s->variant : -1;
}

/* Host timeline of the last run: the non-empty spans, by schedule entry then thread. */
int spy_session_host_events(const spy_session *s, spy_host_event *ev, int n) {
    if (s && s->variant >= 0)
        return spy_session_host_events(s->vsub[s->variant], ev, n);
    if (!s || !s->span || n < 0 || (n > 0 && !ev))
        return -1;
    const spy_model *m = s->m;
    int count = 0;
    for (uint32_t pos = 0; pos < m->nsched; pos++)
        for (int t = 0; t < s->nthreads; t++) {
            const RtHostSpan *sp = &s->span[(size_t)pos * s->nthreads + t];
            if (!sp->n)
                continue;
            if (count < n)
                ev[count] = (spy_host_event){.sched_pos = (int)pos,
                                             .kernel = (int)m->schedule[pos],
                                             .thread = t,
                                             .programs = (int)sp->n,
                                             .start_us = sp->start - s->run_t0,
                                             .end_us = sp->end - s->run_t0};
            count++;
        }
    return count;
}

/* Shape of output i after the last run (data-dependent extents resolved). */
spy_status spy_session_output_shape(const spy_session *s, int i, int *rank, int64_t *dims) {
    if (!s || !rank || !dims || i < 0 || (uint32_t)i >= s->m->nvisible)
        return SPY_E_INVALID_ARG;
    const RtIo *io = &s->m->io[s->m->ninputs + (uint32_t)i];
    *rank = io->info.rank;
    for (int d = 0; d < io->info.rank; d++)
        dims[d] = s->dyn_dims[(s->m->ninputs + (uint32_t)i) * SPY_MAX_RANK + (uint32_t)d];
    return SPY_OK;
}

/* Actual shape of input i for the next runs (bounded symbolic dimensions): the fixed
 * axes must keep their size; a symbolic one is checked against its bounds at the run. */
spy_status spy_session_set_input_shape(spy_session *s, int i, int rank, const int64_t *dims) {
    if (!s || !dims || i < 0 || (uint32_t)i >= s->m->nvis_in || atomic_load(&s->busy))
        return SPY_E_INVALID_ARG;
    const RtIo *io = &s->m->io[i];
    if (rank != io->info.rank) {
        snprintf(s->err, sizeof s->err, "input '%s': rank %d given, it has rank %d",
                 io->info.name, rank, io->info.rank);
        return SPY_E_INVALID_ARG;
    }
    for (int d = 0; d < rank; d++)
        if (io->sym[d] < 0 ? dims[d] != io->info.dims[d] : dims[d] < 1 || dims[d] > io->info.dims[d]) {
            snprintf(s->err, sizeof s->err, "input '%s' axis %d: size %lld, %s %lld",
                     io->info.name, d, (long long)dims[d],
                     io->sym[d] < 0 ? "fixed at" : "bounded by", (long long)io->info.dims[d]);
            return SPY_E_INVALID_ARG;
        }
    memcpy(s->dyn_dims + (size_t)i * SPY_MAX_RANK, dims, (size_t)rank * sizeof *dims);
    return SPY_OK;
}

/* Installs or removes the kernel hook (not while the session runs). */
spy_status spy_session_set_kernel_hook(spy_session *s, spy_kernel_hook fn, void *user) {
    if (!s || atomic_load(&s->busy))
        return SPY_E_INVALID_ARG;
    s->hook = fn;
    s->hook_user = user;
    return SPY_OK;
}

/* The model session s runs (rt_debug.c). */
const spy_model *rt_session_model(const spy_session *s) {
    return s->m;
}

/* Base of DRAM segment seg as bound in s during the current run (rt_debug.c). */
const uint8_t *rt_session_seg(const spy_session *s, uint32_t seg) {
    return s->seg[seg];
}

/* The kernel whose hook s is calling now, -1 outside hooks (rt_debug.c). */
int rt_session_hook_kernel(const spy_session *s) {
    return s->hook_kernel;
}

/* Share policy of the session's last run (rt_adapt.h). */
int rt_session_policy(const spy_session *s) {
    return atomic_load_explicit(&s->policy, memory_order_relaxed);
}
