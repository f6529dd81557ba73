/* rt_memo.c: a convolution's input patch loaded once per host thread, not once per core.
 *
 * When every core of a kernel computes a few output channels over the same pixels
 * (resnet50's last stage: 32 cores, one 512-channel patch), each core's program loads
 * the same patch into its scratchpad: a VFILL of the padding and the LOADs of the
 * input, right before the window MATMUL that reads it. The emulator runs the programs
 * of a kernel one after the other on each host thread, in the thread's one
 * scratchpad, so after the first such program the bytes are already there.
 *
 * At load (rt_memo_model) the patch of a program is the run of LOADs and VFILLs right
 * before its first window MATMUL that write into the window's range (and maybe past it:
 * a stride-2 window does not read the patch's last row or column); it is planned reusable
 * when no other instruction of the program writes those LX bytes (so at the end of the
 * program they still hold what the run wrote, unless a LOAD of it was left as a view:
 * rt_memo_kept) and no STORE of the kernel (m->kwr, listed by rt_acache.c) writes the
 * DRAM the run reads (so within the kernel it reads the same bytes every time; two
 * caller buffers count as one). Equal runs (the same instructions; a LOAD's ring flag,
 * a timing attribute, aside) get the same id, and the kernel's programs are listed
 * (m->active) with equal patches next to each other.
 *
 * At run time (rt_exec.c) a core that finds the id of its patch in RtCore.memo, left
 * by the previous program of the same schedule entry on this thread, skips the run:
 * LX already holds exactly the bytes it would write. Everything else executes as
 * before; outputs are the same bits, modelled time is computed from the bundle and
 * does not change.
 */
#include <stdlib.h>
#include <string.h>

#include "rt_exec.h"
#include "rt_model.h"

/* Patches of fewer bytes are not worth the bookkeeping. */
#define RT_MEMO_MIN 4096

/* A byte span [lo, hi) of LX or of one DRAM segment. */
typedef struct {
    int64_t lo, hi;
    uint32_t seg;
} Span;

/* The LX bytes instruction in may write: false when not known (any byte); an empty
 * span when it writes none. */
static bool lx_writes(const SpyInsn *in, Span *s) {
    *s = (Span){0, 0, 0};
    switch (in->opcode) {
    case ISA_NOP: case ISA_BARRIER: case ISA_STORE: case ISA_SCATTER: return true;
    case ISA_LOAD:
        rt_dma_span(&in->dma, true, &s->lo, &s->hi);
        s->lo += in->dma.lx, s->hi += in->dma.lx;
        return true;
    case ISA_VFILL: {
        unsigned es = rt_dtype_size(in->fill.dtype);
        s->lo = in->fill.dst, s->hi = in->fill.dst + (int64_t)es * in->fill.n;
        return es > 0;
    }
    case ISA_VEC: {
        const SpyVec *v = &in->vec;
        unsigned es = rt_dtype_size(v->dtype);
        if (!es || v->dst_rs < 0)
            return false;
        if (v->rows && v->cols)
            s->lo = v->dst, s->hi = v->dst + (int64_t)es * ((int64_t)(v->rows - 1) * v->dst_rs +
                                                            v->cols);
        return true;
    }
    case ISA_MATMUL: {
        const SpyMatmul *mm = &in->mm;
        unsigned es = rt_dtype_size(mm->out_dtype);
        if (!es)
            return false;
        if (mm->m && mm->n)
            s->lo = mm->c, s->hi = mm->c + (int64_t)es * ((int64_t)(mm->m - 1) * mm->ldc + mm->n);
        return true;
    }
    default: return false;   /* GATHER, VREDUCE, VSCAN: not needed here */
    }
}

/* The DRAM bytes a LOAD or STORE x reads or writes (rt_dma_span counts ISA_F_F32's
 * 4-byte elements in DRAM). */
static Span dram_span(const SpyDma *x) {
    Span s = {0, 0, x->seg};
    rt_dma_span(x, false, &s.lo, &s.hi);
    s.lo += x->dram_off, s.hi += x->dram_off;
    return s;
}

/* Whether spans a and b share a byte. */
static bool overlap(const Span *a, const Span *b) {
    return a->lo < a->hi && b->lo < b->hi && a->lo < b->hi && b->lo < a->hi;
}

/* Whether the LOAD x may read DRAM that one of the kernel's writes st[0..n) (its
 * STOREs, rt_acache.c) writes: the same bytes of one segment, or any bytes of two
 * segments that are caller buffers (ioseg: they may be one buffer). */
static bool reads_stored(const SpyDma *x, const RtWrite *st, uint32_t n, const bool *ioseg) {
    Span r = dram_span(x);
    for (uint32_t i = 0; i < n; i++) {
        Span w = {st[i].lo, st[i].hi, st[i].seg};
        if (st[i].seg == r.seg ? overlap(&w, &r) : ioseg[st[i].seg] && ioseg[r.seg])
            return true;
    }
    return false;
}

/* The patch of program code[0..n) (see the top of the file): its first instruction and
 * length and the LX bytes it owns; false when it has none that may be reused. */
static bool find_patch(const SpyInsn *code, uint32_t n, const RtWrite *st, uint32_t nst,
                       const bool *ioseg, uint32_t *first, uint32_t *len, Span *own) {
    uint32_t b = 0;
    while (b < n && !(code[b].opcode == ISA_MATMUL && (code[b].mm.flags & ISA_F_BWIN)))
        b++;
    if (b == n)
        return false;
    unsigned es = rt_dtype_size(code[b].mm.dtype);
    Span win, s;
    if (!es || (code[b].mm.flags & ISA_F_BF8))
        return false;
    rt_mm_win_range(&code[b].mm, es, &win.lo, &win.hi);
    win.lo *= es, win.hi *= es;
    uint32_t a = b;
    *own = (Span){INT64_MAX, INT64_MIN, 0};
    while (a > 0 && (code[a - 1].opcode == ISA_LOAD || code[a - 1].opcode == ISA_VFILL) &&
           lx_writes(&code[a - 1], &s) && overlap(&s, &win)) {
        if (s.lo < s.hi) {
            own->lo = s.lo < own->lo ? s.lo : own->lo;
            own->hi = s.hi > own->hi ? s.hi : own->hi;
        }
        if (code[a - 1].opcode == ISA_LOAD && reads_stored(&code[a - 1].dma, st, nst, ioseg))
            return false;
        a--;
    }
    if (a == b || own->lo >= own->hi || own->hi - own->lo < RT_MEMO_MIN || own->hi > UINT32_MAX)
        return false;
    for (uint32_t i = 0; i < n; i++)        /* the run alone writes its bytes */
        if ((i < a || i >= b) && (!lx_writes(&code[i], &s) || overlap(&s, own)))
            return false;
    *first = a;
    *len = b - a;
    return true;
}

/* Whether instructions x and y do the same (a LOAD's ring flag aside). */
static bool same_insn(const SpyInsn *x, const SpyInsn *y) {
    if (x->opcode != ISA_LOAD || y->opcode != ISA_LOAD)
        return memcmp(x, y, sizeof *x) == 0;
    SpyDma a = x->dma, b = y->dma;
    a.flags &= (uint8_t)~ISA_F_RING;
    b.flags &= (uint8_t)~ISA_F_RING;
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Work space of memo_kernel: per active program its patch's first instruction, length
 * and rank (the index of the first equal patch). */
typedef struct {
    bool *ioseg;             /* [nsegs] a segment is bound to a caller's buffer */
    uint32_t *first, *len, *rank; /* [active programs of the kernel] */
} Work;

/* Plans the patches of kernel k's programs and lists its active programs with equal
 * patches next to each other (in order of first appearance; those without one last). */
static void memo_kernel(spy_model *m, uint32_t k, const Work *w) {
    const SpyKernelDesc *kd = &m->kernels[k];
    const RtWrite *st = m->kwr + m->kwr_first[k];   /* the kernel's STOREs (rt_acache.c) */
    uint32_t nst = m->kwr_first[k + 1] - m->kwr_first[k];
    uint32_t a0 = m->active_first[k], na = m->active_first[k + 1] - a0;
    if (na < 2 || (nst && st[0].seg == RT_WRITES_ANY))
        return;
    uint32_t *act = m->active + a0, *first = w->first, *len = w->len, *rank = w->rank;
    for (uint32_t q = 0; q < na; q++) {
        const SpyProgramDesc *pd = &m->programs[kd->first_program + act[q]];
        const SpyInsn *code = m->code + pd->first_insn;
        Span own;
        len[q] = 0;
        rank[q] = na;
        if (!find_patch(code, pd->ninsns, st, nst, w->ioseg, &first[q], &len[q], &own))
            continue;
        first[q] += pd->first_insn;
        rank[q] = q;
        for (uint32_t r = 0; r < q && rank[q] == q; r++)
            if (len[r] == len[q]) {
                uint32_t i = 0;
                while (i < len[q] && same_insn(&m->code[first[r] + i], &m->code[first[q] + i]))
                    i++;
                if (i == len[q])
                    rank[q] = rank[r];
            }
        RtPrep *p = &m->prep[first[q]];
        p->memo_len = len[q];
        p->memo_id = first[rank[q]] + 1;
        p->memo_lo = (uint32_t)own.lo, p->memo_hi = (uint32_t)own.hi;
    }
    for (uint32_t q = 1; q < na; q++)       /* stable insertion sort by rank */
        for (uint32_t r = q; r > 0 && rank[r - 1] > rank[r]; r--) {
            uint32_t t = rank[r]; rank[r] = rank[r - 1]; rank[r - 1] = t;
            t = act[r]; act[r] = act[r - 1]; act[r - 1] = t;
        }
}

/* Plans the reusable input patches of every kernel of the verified, planned model m
 * (m->prep, m->active, the kernels' writes m->kwr); without memory for the work list
 * or the writes, none. */
void rt_memo_model(spy_model *m) {
    if (!m->kwr_first)
        return;
    uint32_t most = 0;
    for (uint32_t k = 0; k < m->nkernels; k++) {
        uint32_t na = m->active_first[k + 1] - m->active_first[k];
        most = na > most ? na : most;
    }
    Work w = {0};
    w.first = malloc(3 * ((size_t)most + 1) * sizeof *w.first);
    w.ioseg = calloc((size_t)m->nsegs + 1, sizeof *w.ioseg);
    if (w.first && w.ioseg) {
        for (uint32_t i = 0; i < m->ntensors; i++)
            if (m->io[i].direct && m->io[i].seg < m->nsegs)
                w.ioseg[m->io[i].seg] = true;
        w.len = w.first + most + 1;
        w.rank = w.len + most + 1;
        for (uint32_t k = 0; k < m->nkernels; k++)
            memo_kernel(m, k, &w);
    }
    free(w.first);
    free(w.ioseg);
}

/* Whether the patch planned at p is in LX at the end of a program: no view of d over
 * its bytes is pending (a LOAD of it never carried out). */
bool rt_memo_kept(const RtDefer *d, const RtPrep *p) {
    for (int i = 0; i < d->n; i++)
        if (d->v[i].lo < p->memo_hi && p->memo_lo < d->v[i].hi)
            return false;
    return true;
}
