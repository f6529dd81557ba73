/* rt_timing.c: the static timing model (target.md, isa.md "Timing model"). Runs once
 * at load over the verified instructions: per-instruction costs (schemas/costmodel.h,
 * the model the compiler's decisions use too) are summed into prefix arrays over CODE,
 * so each program's cost is two lookups. The roofline's FLOPs and compulsory DRAM
 * bytes are derived here from the instructions, not taken from the compiler, and are
 * bounded by what the model charges, so no kernel's efficiency exceeds 100%.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel.h"
#include "rt_adapt.h"
#include "rt_exec.h"
#include "rt_model.h"

/* Modelled cost of one instruction. */
typedef struct {
    double mat, floor, vec;  /* matrix cycles (of which the 8-row pass floor), vector cycles */
    double work, flops;      /* estimated host work; useful operations */
    uint64_t ld, st;         /* DRAM bytes charged (whole sticks) */
    uint64_t ring;           /* bytes received over the ring */
} InsnCost;

/* Bytes per element a VREDUCE is charged for: a DLF16 SUM / PROD accumulates on the
 * 32 F32 lanes (4 bytes), its MAX / MIN / ARG* run on the 64 fp16 lanes (2 bytes). */
static unsigned red_elem_bytes(const SpyVReduce *r) {
    bool f32acc = r->dtype == ISA_DT_DLF16 && (r->fn == ISA_RF_SUM || r->fn == ISA_RF_PROD);
    return f32acc ? 4 : rt_dtype_size(r->dtype);
}

typedef struct {
    double *mat, *floor, *vec, *work, *flops;  /* [ncode+1] prefix sums */
    uint64_t *ld, *st, *ring;
} Prefix;

/* Estimated host work of one verified instruction (elements touched, MACs / 16). */
static double insn_work(const SpyInsn *in) {
    switch (in->opcode) {
    case ISA_LOAD:
    case ISA_STORE: {
        double n = 1;
        for (int d = 0; d < ISA_MAX_DIMS; d++)
            n *= in->dma.dims[d];
        return n;
    }
    case ISA_GATHER: return (double)in->gather.nidx * in->gather.row_elems;
    case ISA_SCATTER: return (double)in->scatter.nidx * in->scatter.row_elems;
    case ISA_MATMUL: return (double)in->mm.m * in->mm.n * in->mm.k / 16.0;
    case ISA_VEC:
        return (double)in->vec.rows * in->vec.cols *
               (rt_vecfn_transcendental(in->vec.fn) ? 8.0 : 1.0);
    case ISA_VREDUCE: return (double)in->red.rows * in->red.len;
    case ISA_VFILL: return in->fill.n / 8.0;
    case ISA_VSCAN: return (double)in->scan.rows * in->scan.len;
    default: return 1;
    }
}

/* Size of one DRAM-side element of a LOAD / STORE (float32 when converting). */
static unsigned dma_dram_esize(const SpyDma *x) {
    return (x->flags & ISA_F_F32) ? 4u : x->esize;
}

/* Bytes a LOAD / STORE is charged: the whole DRAM sticks its contiguous runs touch. */
static uint64_t dma_charged(const SpyTarget *t, const SpyDma *x) {
    return cost_transfer_bytes(t, x->dram_off, dma_dram_esize(x), ISA_MAX_DIMS, x->dims,
                               x->dram_stride);
}

/* Bytes a GATHER or SCATTER row pattern is charged: nidx rows at unknown table rows,
 * each as the most sticks its run may touch. */
static uint64_t rows_charged(const SpyTarget *t, int64_t off, int64_t row_stride,
                             uint32_t nidx, uint32_t row_elems, unsigned es) {
    if (!nidx || !row_elems)     /* moves nothing: its row stride was never checked */
        return 0;
    uint64_t sticks = cost_row_sticks_max(t, off, row_stride * (int64_t)es,
                                          (uint64_t)row_elems * es);
    return (uint64_t)nidx * sticks * t->stick_bytes;
}

/* Cost of one verified instruction. Useful operations: 2 per MAC, one per element of a
 * vector operation, reduction or scan; copies, casts, fills and transfers move data
 * and count none. */
static void insn_cost(const SpyTarget *t, const SpyInsn *in, InsnCost *c) {
    memset(c, 0, sizeof *c);
    c->work = insn_work(in);
    switch (in->opcode) {
    case ISA_LOAD:
        if (in->dma.flags & ISA_F_RING)  /* LX bytes, over the ring; no DRAM of its own */
            c->ring = (uint64_t)insn_work(in) * in->dma.esize;
        else
            c->ld = dma_charged(t, &in->dma);
        break;
    case ISA_STORE: c->st = dma_charged(t, &in->dma); break;
    case ISA_GATHER: {
        const SpyGather *g = &in->gather;
        c->ld = rows_charged(t, g->dram_off, g->row_stride, g->nidx, g->row_elems, g->esize);
        break;
    }
    case ISA_SCATTER: {                  /* every row charged: skipped ones are not known */
        const SpyScatter *s = &in->scatter;
        c->st = rows_charged(t, s->dram_off, s->row_stride, s->nidx, s->row_elems, s->esize);
        break;
    }
    case ISA_MATMUL: {
        const SpyMatmul *mm = &in->mm;
        c->mat = cost_matmul_cycles(t, (mm->flags & ISA_F_BF8) ? ISA_DT_F8E4M3FN : mm->dtype,
                                    mm->m, mm->n, mm->k, &c->floor);
        c->flops = 2.0 * mm->m * mm->n * mm->k;
        if ((mm->flags & ISA_F_BWIN) && c->mat > 0) /* staging the window's k x n elements */
            c->vec = cost_vec_cycles(t, (double)mm->k * mm->n * rt_dtype_size(mm->dtype), false);
        break;
    }
    case ISA_VEC: {
        const SpyVec *v = &in->vec;
        unsigned es = rt_dtype_size(v->dtype), ss = rt_dtype_size(v->src_dtype);
        double n = (double)v->rows * v->cols;
        c->vec = cost_vec_cycles(t, n * (ss > es ? ss : es), rt_vecfn_transcendental(v->fn));
        c->flops = (v->fn == ISA_VF_COPY || v->fn == ISA_VF_CAST) ? 0
                 : v->fn == ISA_VF_FMA ? 2 * n : n;          /* FMA: multiply and add */
        break;
    }
    case ISA_VREDUCE: {
        double n = (double)in->red.rows * in->red.len;
        c->vec = cost_vec_cycles(t, n * red_elem_bytes(&in->red), false);
        c->flops = n;
        break;
    }
    case ISA_VFILL:
        c->vec = cost_vec_cycles(t, (double)in->fill.n * rt_dtype_size(in->fill.dtype), false);
        break;
    case ISA_VSCAN: {
        double n = (double)in->scan.rows * in->scan.len;
        unsigned es = in->scan.dtype == ISA_DT_DLF16 ? 4 : rt_dtype_size(in->scan.dtype);
        c->vec = cost_vec_cycles(t, n * es, false);   /* DLF16 scans on the F32 lanes */
        c->flops = n;
        break;
    }
    default: break;
    }
}

/* Builds the prefix arrays over CODE. */
static bool build_prefix(const spy_model *m, Prefix *p) {
    size_t n = m->ncode + 1;
    p->mat = malloc(n * sizeof *p->mat);
    p->floor = malloc(n * sizeof *p->floor);
    p->vec = malloc(n * sizeof *p->vec);
    p->work = malloc(n * sizeof *p->work);
    p->flops = malloc(n * sizeof *p->flops);
    p->ld = malloc(n * sizeof *p->ld);
    p->st = malloc(n * sizeof *p->st);
    p->ring = malloc(n * sizeof *p->ring);
    if (!p->mat || !p->floor || !p->vec || !p->work || !p->flops || !p->ld || !p->st ||
        !p->ring)
        return false;
    p->mat[0] = p->floor[0] = p->vec[0] = p->work[0] = p->flops[0] = 0;
    p->ld[0] = p->st[0] = p->ring[0] = 0;
    for (uint64_t i = 0; i < m->ncode; i++) {
        InsnCost c;
        insn_cost(&m->target, &m->code[i], &c);
        p->mat[i + 1] = p->mat[i] + c.mat;
        p->floor[i + 1] = p->floor[i] + c.floor;
        p->vec[i + 1] = p->vec[i] + c.vec;
        p->work[i + 1] = p->work[i] + c.work;
        p->flops[i + 1] = p->flops[i] + c.flops;
        p->ld[i + 1] = p->ld[i] + c.ld;
        p->st[i + 1] = p->st[i] + c.st;
        p->ring[i + 1] = p->ring[i] + c.ring;
    }
    return true;
}

/* Frees the prefix arrays. */
static void free_prefix(Prefix *p) {
    free(p->mat);
    free(p->floor);
    free(p->vec);
    free(p->work);
    free(p->flops);
    free(p->ld);
    free(p->st);
    free(p->ring);
}

/* A DRAM byte range [lo, hi) of segment seg that a kernel reads (store = 0) or writes. */
typedef struct {
    uint32_t store, seg;
    int64_t lo, hi;
} Span;

/* Orders spans by direction, segment, start. */
static int span_cmp(const void *a, const void *b) {
    const Span *x = a, *y = b;
    if (x->store != y->store)
        return x->store < y->store ? -1 : 1;
    if (x->seg != y->seg)
        return x->seg < y->seg ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The byte range a LOAD / STORE spans in its segment. */
static Span dma_span(const SpyDma *x, bool store) {
    int64_t es = dma_dram_esize(x);
    Span s = {store, x->seg, x->dram_off, x->dram_off + es};
    for (int d = 0; d < ISA_MAX_DIMS; d++) {
        int64_t ext = ((int64_t)x->dims[d] - 1) * x->dram_stride[d] * es;
        if (x->dims[d] == 0)
            s.hi = s.lo;
        else if (ext < 0)
            s.lo += ext;
        else
            s.hi += ext;
    }
    return s;
}

/* Sum of the union of n sorted spans of one direction; adds to *ld or *st. */
static void span_union(const Span *sp, size_t n, uint64_t *ld, uint64_t *st) {
    for (size_t i = 0; i < n;) {
        int64_t lo = sp[i].lo, hi = sp[i].hi;
        size_t j = i + 1;
        for (; j < n && sp[j].store == sp[i].store && sp[j].seg == sp[i].seg && sp[j].lo <= hi; j++)
            hi = sp[j].hi > hi ? sp[j].hi : hi;
        *(sp[i].store ? st : ld) += (uint64_t)(hi - lo);
        i = j;
    }
}

/* Compulsory DRAM bytes of kernel kd: each direction's LOAD / STORE bytes once (the
 * union of the byte ranges every core's transfers span, at most the bytes they move:
 * a tile loaded by several cores counts once), plus the rows GATHER reads and SCATTER
 * writes (gathered rows, not the whole table). Never more than the bytes charged. */
static uint64_t compulsory_bytes(const spy_model *m, const SpyKernelDesc *kd) {
    size_t n = 0, cap = 0;
    uint64_t raw[2] = {0, 0}, uni[2] = {0, 0}, rows = 0;
    for (uint32_t j = 0; j < kd->ncores; j++)
        cap += m->programs[kd->first_program + j].ninsns;
    Span *sp = malloc((cap ? cap : 1) * sizeof *sp);
    for (uint32_t j = 0; j < kd->ncores; j++) {
        const SpyProgramDesc *d = &m->programs[kd->first_program + j];
        for (uint64_t i = d->first_insn; i < d->first_insn + d->ninsns; i++) {
            const SpyInsn *in = &m->code[i];
            if ((in->opcode == ISA_LOAD && !(in->dma.flags & ISA_F_RING)) ||
                in->opcode == ISA_STORE) {
                bool store = in->opcode == ISA_STORE;
                uint64_t b = dma_dram_esize(&in->dma);
                for (int e = 0; e < ISA_MAX_DIMS; e++)
                    b *= in->dma.dims[e];
                raw[store] += b;
                if (sp)
                    sp[n++] = dma_span(&in->dma, store);
            } else if (in->opcode == ISA_GATHER)
                rows += (uint64_t)in->gather.nidx * in->gather.row_elems * in->gather.esize;
            else if (in->opcode == ISA_SCATTER)
                rows += (uint64_t)in->scatter.nidx * in->scatter.row_elems * in->scatter.esize;
        }
    }
    if (!sp)
        return rows;                     /* no memory for the union: rows only (a bound) */
    qsort(sp, n, sizeof *sp, span_cmp);
    span_union(sp, n, &uni[0], &uni[1]);
    free(sp);
    return rows + (uni[0] < raw[0] ? uni[0] : raw[0]) + (uni[1] < raw[1] ? uni[1] : raw[1]);
}

/* Names of the limiters (RT_LIM_*). */
const char *rt_timing_limiter_name(int lim) {
    static const char *const names[] = {"matrix", "vector", "dram", "8-row passes", "barrier"};
    return lim >= 0 && lim <= RT_LIM_BARRIER ? names[lim] : "?";
}

/* What bounds a core of comp_s compute (mat, floor and vec cycles) and dram_s DRAM
 * seconds, in a kernel whose barrier takes bar_s. */
static int limiter(double core_s, double bar_s, double comp_s, double dram_s, double mat,
                   double floor, double vec) {
    if (bar_s >= core_s)
        return RT_LIM_BARRIER;
    if (dram_s > comp_s)
        return RT_LIM_DRAM;
    if (vec > mat)
        return RT_LIM_VECTOR;
    return floor * 2 > mat ? RT_LIM_PASSES : RT_LIM_MATRIX;
}

/* Modelled figures of one core program: cycles, work, DRAM and ring bytes. */
typedef struct {
    double mat, floor, vec, work, flops;
    uint64_t ld, st, ring;
} CoreSums;

/* The sums of program d: from the prefix arrays, or (dims, a bundle with guards) over
 * the instructions the sizes dims do not skip, each at the rows its row clamp runs. */
static void core_sums(const spy_model *m, const Prefix *p, const SpyProgramDesc *d,
                      const int32_t *dims, CoreSums *s) {
    uint64_t a = d->first_insn, b = d->first_insn + d->ninsns;
    if (!dims) {
        *s = (CoreSums){p->mat[b] - p->mat[a], p->floor[b] - p->floor[a], p->vec[b] - p->vec[a],
                        p->work[b] - p->work[a], p->flops[b] - p->flops[a],
                        p->ld[b] - p->ld[a], p->st[b] - p->st[a], p->ring[b] - p->ring[a]};
        return;
    }
    memset(s, 0, sizeof *s);
    for (uint64_t i = a; i < b; i++) {
        uint32_t rows = spy_guard_rows(&m->code[i], dims);
        if (rows == 0)
            continue;
        InsnCost c;
        SpyInsn x = m->code[i];
        if (rows != UINT32_MAX)                  /* a row clamp: the rows that run */
            spy_insn_set_rows(&x, rows);
        insn_cost(&m->target, &x, &c);
        s->mat += c.mat, s->floor += c.floor, s->vec += c.vec, s->work += c.work;
        s->flops += c.flops, s->ld += c.ld, s->st += c.st, s->ring += c.ring;
    }
}

/* Models kernel k: per-core times, slowest core + barrier; with dims (the sizes of a
 * run of a bundle with guards) over the instructions they leave, kt's device time and
 * per-core times only; else also the roofline, limiter and serial mark. */
static void kernel_time(spy_model *m, uint32_t k, const Prefix *p, const int32_t *dims,
                        RtKernelTime *kt) {
    const SpyTarget *t = &m->target;
    const SpyKernelDesc *kd = &m->kernels[k];
    double clock_hz = t->clock_mhz * 1e6, work = 0, flops = 0;
    uint64_t ld = 0, st = 0;
    uint32_t active = 0;
    CoreSums one[64], *cs = kd->ncores <= 64 ? one : malloc(kd->ncores * sizeof *cs);
    if (!cs) {
        kt->device_us = 0;
        return;
    }
    for (uint32_t j = 0; j < kd->ncores; j++) {
        CoreSums *c = &cs[j];
        core_sums(m, p, &m->programs[kd->first_program + j], dims, c);
        work += c->work;
        flops += c->flops;
        ld += c->ld;
        st += c->st;
        active += (c->ld + c->st) > 0;
    }
    if (!dims)
        m->share_rank[k] = rt_adapt_rank(work); /* estimated host work (insn_work) */
    double bw = cost_dram_bw(t, (double)ld, (double)st), slowest = -1;
    double bar_s = cost_barrier_s(t);
    for (uint32_t j = 0; j < kd->ncores; j++) {
        const SpyProgramDesc *d = &m->programs[kd->first_program + j];
        const CoreSums *c = &cs[j];
        double comp = (c->mat + c->vec) / clock_hz;
        double dram = cost_dram_s((double)(c->ld + c->st), active, bw) +
                      cost_ring_s(t, (double)c->ring);
        double core_s = cost_core_s(t, comp, dram);
        kt->core_us[d->core] = core_s * 1e6;
        if (core_s > slowest) {
            slowest = core_s;
            kt->limiter = limiter(core_s, bar_s, comp, dram, c->mat, c->floor, c->vec);
        }
    }
    if (cs != one)
        free(cs);
    if (slowest < 0) {
        slowest = 0;
        kt->limiter = RT_LIM_BARRIER;
    }
    kt->device_us = (slowest + bar_s) * 1e6;
    kt->dram_bytes = ld + st;
    kt->flops = (uint64_t)flops;
    if (dims)
        return;
    kt->min_dram_bytes = compulsory_bytes(m, kd);
    kt->roofline_us = cost_roofline_s(t, flops, (double)kt->min_dram_bytes) * 1e6;
}

double rt_timing_guarded(const spy_model *m, const int32_t *dims, double *kernel_us) {
    double *core_us = malloc(((size_t)m->target.cores + 1) * sizeof *core_us), total = 0;
    if (!core_us)
        return m->device_us;
    for (uint32_t k = 0; k < m->nkernels; k++) {
        RtKernelTime kt = {.core_us = core_us};
        kernel_time((spy_model *)m, k, NULL, dims, &kt);   /* writes nothing of m's */
        kernel_us[k] = kt.device_us;
    }
    for (uint32_t i = 0; i < m->nsched; i++)
        total += kernel_us[m->schedule[i]];
    free(core_us);
    return total;
}

/* Lists the programs of every kernel that do more than reach their barrier (the
 * others need not be run). */
static bool list_active(spy_model *m) {
    m->active = malloc(((size_t)m->nprograms + 1) * sizeof *m->active);
    m->active_first = malloc(((size_t)m->nkernels + 1) * sizeof *m->active_first);
    if (!m->active || !m->active_first)
        return false;
    uint32_t n = 0;
    for (uint32_t k = 0; k < m->nkernels; k++) {
        const SpyKernelDesc *kd = &m->kernels[k];
        m->active_first[k] = n;
        for (uint32_t j = 0; j < kd->ncores; j++)
            if (m->programs[kd->first_program + j].ninsns > 1)
                m->active[n++] = j;
    }
    m->active_first[m->nkernels] = n;
    return true;
}

/* The share policies the schedule tells apart (rt_adapt.h): m->share_policies and
 * m->min_rank. */
static void share_policies(spy_model *m) {
    m->min_rank = RT_NPOLICY;
    m->share_policies = 1;
    for (uint32_t i = 0; i < m->nsched; i++) {
        uint8_t r = m->share_rank[m->schedule[i]];
        if (r < m->min_rank)
            m->min_rank = r;
        if (r < RT_NPOLICY)
            m->share_policies |= 1u << r;
    }
}

/* Computes m->ktime and m->device_us from the verified bundle. */
spy_status rt_timing_compute(spy_model *m, RtErr *e) {
    Prefix p = {0};
    uint32_t cores = m->target.cores;
    m->ktime = calloc(m->nkernels ? m->nkernels : 1, sizeof *m->ktime);
    m->sched_count = calloc(m->nkernels ? m->nkernels : 1, sizeof *m->sched_count);
    m->share_rank = calloc(m->nkernels ? m->nkernels : 1, 1);
    double *core_us = calloc((size_t)m->nkernels * cores + 1, sizeof *core_us);
    if (!m->ktime || !m->sched_count || !m->share_rank || !core_us || !build_prefix(m, &p) ||
        !list_active(m)) {
        free(core_us);
        rt_err_set(e, SPY_E_NOMEM, "out of memory");
    } else {
        for (uint32_t k = 0; k < m->nkernels; k++) {
            m->ktime[k].core_us = core_us + (size_t)k * cores;
            kernel_time(m, k, &p, NULL, &m->ktime[k]);
        }
        if (m->nkernels == 0)
            free(core_us);
        m->device_us = 0;
        share_policies(m);
        for (uint32_t i = 0; i < m->nsched; i++) {
            m->device_us += m->ktime[m->schedule[i]].device_us;
            m->sched_count[m->schedule[i]]++;
        }
    }
    free_prefix(&p);
    return e->status;
}
