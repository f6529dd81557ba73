/* rt_timing.c: the static timing model (target.md, isa.md "Timing model"). Runs once
 * at load over the verified instructions: per-instruction costs are summed into
 * prefix arrays over CODE, so each program's cost is two lookups.
 */
#include <math.h>
#include <stdlib.h>

#include "rt_exec.h"
#include "rt_model.h"

/* A kernel whose estimated host work (about one unit per element moved or computed,
 * or per 16 multiply-adds; 65536 units take some 10 us) is below this runs on one
 * host thread: sharing it would cost more in synchronisation than it saves, and a
 * busy host may not run the other threads promptly. */
#define RT_SERIAL_WORK 65536.0

typedef struct {
    double *cyc;             /* [ncode+1] prefix sums of compute cycles */
    double *work;            /* [ncode+1] prefix sums of estimated host work */
    uint64_t *ld, *st;       /* [ncode+1] prefix sums of DRAM bytes loaded / stored */
} Prefix;

/* Bytes per element a VREDUCE is charged for: a DLF16 SUM / PROD accumulates on the
 * 32 F32 lanes (4 bytes), its MAX / MIN / ARG* run on the 64 fp16 lanes (2 bytes). */
static unsigned red_elem_bytes(const SpyVReduce *r) {
    bool f32acc = r->dtype == ISA_DT_DLF16 && (r->fn == ISA_RF_SUM || r->fn == ISA_RF_PROD);
    return f32acc ? 4 : rt_dtype_size(r->dtype);
}

/* Cycles of a vector-unit instruction processing bytes (x factor if transcendental). */
static double vec_cycles(const SpyTarget *t, uint64_t bytes, bool transc) {
    double sticks = (double)((bytes + t->stick_bytes - 1) / t->stick_bytes);
    return sticks / t->corelets * (transc ? t->transcendental_factor : 1);
}

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

/* Compute cycles and DRAM bytes of one verified instruction. */
static void insn_cost(const SpyTarget *t, const SpyInsn *in, double *cyc, uint64_t *ld,
                      uint64_t *st) {
    *cyc = 0;
    *ld = *st = 0;
    switch (in->opcode) {
    case ISA_LOAD:
    case ISA_STORE: {                    /* the DRAM side's bytes (float32 when converting) */
        uint64_t n = (in->dma.flags & ISA_F_F32) ? 4 : in->dma.esize;
        for (int d = 0; d < ISA_MAX_DIMS; d++)
            n *= in->dma.dims[d];
        *(in->opcode == ISA_LOAD ? ld : st) = n;
        break;
    }
    case ISA_GATHER:
        *ld = (uint64_t)in->gather.nidx * in->gather.row_elems * in->gather.esize;
        break;
    case ISA_SCATTER:                    /* every row charged: skipped ones are not known */
        *st = (uint64_t)in->scatter.nidx * in->scatter.row_elems * in->scatter.esize;
        break;
    case ISA_MATMUL: {
        const SpyMatmul *mm = &in->mm;
        double rate = mm->dtype == ISA_DT_F32     ? (double)t->macs_fp16_per_cycle / t->fp32_mac_divisor
                      : mm->dtype == ISA_DT_DLF16 ? (double)t->macs_fp16_per_cycle
                                                  : (double)t->macs_fp16_per_cycle * t->int8_mac_multiplier;
        double macs = (double)mm->m * mm->n * mm->k;
        double passes = (double)((mm->m + 7u) / 8u);
        *cyc = macs > 0 ? fmax(macs / rate, passes) : 0;
        if ((mm->flags & ISA_F_BWIN) && macs > 0) /* staging the window's k x n elements */
            *cyc += vec_cycles(t, (uint64_t)mm->k * mm->n * (mm->dtype == ISA_DT_F32 ? 4u
                                   : mm->dtype == ISA_DT_DLF16 ? 2u : 1u), false);
        break;
    }
    case ISA_VEC: {
        const SpyVec *v = &in->vec;
        unsigned es = rt_dtype_size(v->dtype), ss = rt_dtype_size(v->src_dtype);
        uint64_t bytes = (uint64_t)v->rows * v->cols * (ss > es ? ss : es);
        *cyc = vec_cycles(t, bytes, rt_vecfn_transcendental(v->fn));
        break;
    }
    case ISA_VREDUCE:
        *cyc = vec_cycles(t, (uint64_t)in->red.rows * in->red.len * red_elem_bytes(&in->red),
                          false);
        break;
    case ISA_VFILL:
        *cyc = vec_cycles(t, (uint64_t)in->fill.n * rt_dtype_size(in->fill.dtype), false);
        break;
    case ISA_VSCAN:
        *cyc = vec_cycles(t, (uint64_t)in->scan.rows * in->scan.len *
                                 (in->scan.dtype == ISA_DT_DLF16 ? 4 : rt_dtype_size(in->scan.dtype)),
                          false);
        break;
    default: break;
    }
}

/* Builds the prefix arrays over CODE. */
static bool build_prefix(const spy_model *m, Prefix *p) {
    p->cyc = malloc((m->ncode + 1) * sizeof *p->cyc);
    p->ld = malloc((m->ncode + 1) * sizeof *p->ld);
    p->st = malloc((m->ncode + 1) * sizeof *p->st);
    p->work = malloc((m->ncode + 1) * sizeof *p->work);
    if (!p->cyc || !p->ld || !p->st || !p->work)
        return false;
    p->cyc[0] = p->work[0] = 0;
    p->ld[0] = p->st[0] = 0;
    for (uint64_t i = 0; i < m->ncode; i++) {
        double c;
        uint64_t l, s;
        insn_cost(&m->target, &m->code[i], &c, &l, &s);
        p->cyc[i + 1] = p->cyc[i] + c;
        p->ld[i + 1] = p->ld[i] + l;
        p->st[i + 1] = p->st[i] + s;
        p->work[i + 1] = p->work[i] + insn_work(&m->code[i]);
    }
    return true;
}

/* Models kernel k: per-core times, slowest core + barrier, roofline. */
static void kernel_time(spy_model *m, uint32_t k, const Prefix *p, RtKernelTime *kt) {
    const SpyTarget *t = &m->target;
    const SpyKernelDesc *kd = &m->kernels[k];
    double clock_hz = t->clock_mhz * 1e6;
    uint64_t ld = 0, st = 0;
    uint32_t active = 0;
    double work = 0;
    for (uint32_t j = 0; j < kd->ncores; j++) {
        const SpyProgramDesc *d = &m->programs[kd->first_program + j];
        uint64_t a = d->first_insn, b = d->first_insn + d->ninsns;
        uint64_t l = p->ld[b] - p->ld[a], s = p->st[b] - p->st[a];
        work += p->work[b] - p->work[a];
        ld += l;
        st += s;
        active += (l + s) > 0;
    }
    m->serial[k] = work < RT_SERIAL_WORK;
    uint64_t total = ld + st;
    bool mixed = ld * 10 > total && st * 10 > total;
    double bw = (mixed ? t->dram_mixed_mbps : t->dram_oneway_mbps) * 1e6;
    double ov = t->overlap_permille / 1000.0, slowest = 0;
    for (uint32_t j = 0; j < kd->ncores; j++) {
        const SpyProgramDesc *d = &m->programs[kd->first_program + j];
        uint64_t a = d->first_insn, b = d->first_insn + d->ninsns;
        double comp = (p->cyc[b] - p->cyc[a]) / clock_hz;
        double bytes = (double)(p->ld[b] - p->ld[a] + p->st[b] - p->st[a]);
        double dram = bytes * active / bw;
        double core_s = comp + dram - ov * fmin(comp, dram);
        kt->core_us[d->core] = core_s * 1e6;
        slowest = fmax(slowest, core_s);
    }
    kt->device_us = (slowest + t->barrier_cycles / clock_hz) * 1e6;
    kt->dram_bytes = total;
    double peak = (double)t->cores * t->macs_fp16_per_cycle * 2.0 * clock_hz;
    kt->roofline_us = fmax(kd->flops / peak, kd->min_dram_bytes / (t->dram_peak_mbps * 1e6)) * 1e6;
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

/* Computes m->ktime and m->device_us from the verified bundle. */
spy_status rt_timing_compute(spy_model *m, RtErr *e) {
    Prefix p = {0};
    uint32_t cores = m->target.cores;
    m->ktime = calloc(m->nkernels ? m->nkernels : 1, sizeof *m->ktime);
    m->sched_count = calloc(m->nkernels ? m->nkernels : 1, sizeof *m->sched_count);
    m->serial = calloc(m->nkernels ? m->nkernels : 1, 1);
    double *core_us = calloc((size_t)m->nkernels * cores + 1, sizeof *core_us);
    if (!m->ktime || !m->sched_count || !m->serial || !core_us || !build_prefix(m, &p) ||
        !list_active(m)) {
        free(core_us);
        rt_err_set(e, SPY_E_NOMEM, "out of memory");
    } else {
        for (uint32_t k = 0; k < m->nkernels; k++) {
            m->ktime[k].core_us = core_us + (size_t)k * cores;
            kernel_time(m, k, &p, &m->ktime[k]);
        }
        if (m->nkernels == 0)
            free(core_us);
        m->device_us = 0;
        m->all_serial = true;
        for (uint32_t i = 0; i < m->nsched; i++)
            m->all_serial = m->all_serial && m->serial[m->schedule[i]];
        for (uint32_t i = 0; i < m->nsched; i++) {
            m->device_us += m->ktime[m->schedule[i]].device_us;
            m->sched_count[m->schedule[i]]++;
        }
    }
    free(p.cyc);
    free(p.ld);
    free(p.st);
    free(p.work);
    return e->status;
}
