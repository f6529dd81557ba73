/* rt_prep.c: execution plans of the instructions, computed once when a bundle is loaded
 * (RtPrep, rt_exec.h) so that the interpreter does not redo, on every run, work that
 * depends only on the code: which LOADs and STOREs are one contiguous run of bytes and
 * how many bytes, which neighbouring LOADs continue each other in LX and in DRAM and can
 * be carried out as one copy, whether a LOAD is one rt_defer_useless would copy at once,
 * the length of the VEC runs rt_exec.c executes in one pass, the direct path of a VEC,
 * and how much of a VFILL the LOADs after it leave to fill.
 *
 * An entry depends only on the instructions from it to the end of its program (the
 * next BARRIER: every program ends with one and holds no other), so programs need not be
 * told apart. Modelled time is computed from the bundle and does not change.
 */
#include <stdint.h>
#include <stdlib.h>

#include "rt_exec.h"
#include "rt_model.h"

/* The plan of a LOAD / STORE x: RT_PH_ROWS (rows of contiguous bytes, once unit dims are
 * dropped and dims contiguous on both sides merged) when its rows do not overlap where
 * they are written and both row strides are >= 0; else RT_PH_NONE (strided elements,
 * a converting or an empty transfer). */
static void prep_rows(const SpyDma *x, bool store, RtPrep *p) {
    RtCopyPlan c;                   /* ss: DRAM, ds: LX, in bytes */
    if ((x->flags & ISA_F_F32) ||
        !rt_plan_copy(&c, x->dims, x->dram_stride, x->lx_stride, x->esize) || c.n > 2)
        return;
    int in = c.n - 1;
    if (c.ss[in] != (int64_t)x->esize || c.ds[in] != (int64_t)x->esize ||
        c.dim[in] * x->esize > UINT32_MAX)
        return;
    uint64_t rowb = c.dim[in] * x->esize, rows = c.n == 2 ? c.dim[0] : 1;
    int64_t drs = c.n == 2 ? c.ss[0] : 0, lrs = c.n == 2 ? c.ds[0] : 0;
    if (rows > 1 && (drs < 0 || lrs < 0 || lrs > UINT32_MAX || rows > UINT32_MAX ||
                     (uint64_t)(store ? drs : lrs) < rowb))
        return;
    p->how = RT_PH_ROWS;
    p->rows = (uint32_t)rows;
    p->rowb = p->merged = (uint32_t)rowb;
    p->drs = drs;
    p->lrs = (uint32_t)lrs;
}

/* Whether the one-row LOAD b starts where the one-row LOAD a (na bytes) ends, in LX and
 * in the same DRAM segment. */
static bool continues(const SpyDma *a, uint32_t na, const SpyDma *b) {
    return b->seg == a->seg && (uint64_t)b->lx == (uint64_t)a->lx + na &&
           b->dram_off == a->dram_off + (int64_t)na;
}

/* Plans the LOADs and STOREs of code[0..n) (n: to the end of the program) into p[0..n). */
static void prep_dma(const SpyInsn *code, uint32_t n, RtPrep *p) {
    for (uint32_t i = 0; i < n; i++) {
        uint8_t op = code[i].opcode;
        if (op != ISA_LOAD && op != ISA_STORE)
            continue;
        prep_rows(&code[i].dma, op == ISA_STORE, &p[i]);
        p[i].useless = op == ISA_LOAD && rt_defer_useless(&code[i], n - i);
    }
    /* merged LOAD runs, from the end, so that each entry covers the rest of its run;
     * the members agree on useless (a run that is useless is copied at once, one that
     * is not goes through the deferral as a whole) */
    for (uint32_t i = n; i-- > 1;) {
        const RtPrep *b = &p[i];
        RtPrep *a = &p[i - 1];
        if (code[i].opcode != ISA_LOAD || code[i - 1].opcode != ISA_LOAD ||
            a->how != RT_PH_ROWS || b->how != RT_PH_ROWS || a->rows != 1 || b->rows != 1 ||
            a->useless != b->useless || (uint64_t)a->rowb + b->merged > UINT32_MAX ||
            !continues(&code[i - 1].dma, a->rowb, &code[i].dma))
            continue;
        a->run = 1 + b->run;
        a->merged = a->rowb + b->merged;
    }
}

/* LX bytes [*lo, *hi) that MATMUL mm reads as A (a) or B (!a). */
static void mm_span(const SpyMatmul *mm, bool a, int64_t *lo, int64_t *hi) {
    int64_t es = mm->dtype == ISA_DT_F32 ? 4 : mm->dtype == ISA_DT_DLF16 ? 2 : 1;
    uint32_t rows = a ? mm->m : mm->k, cols = a ? mm->k : mm->n, ld = a ? mm->lda : mm->ldb;
    if (!a && (mm->flags & ISA_F_BWIN)) {
        rt_mm_win_range(mm, (size_t)es, lo, hi);
        *lo *= es, *hi *= es;
        return;
    }
    es = !a && (mm->flags & ISA_F_BF8) ? 1 : es;
    rt_span2(rows, ld, cols, 1, (unsigned)es, lo, hi);
    *lo += a ? mm->a : mm->b, *hi += a ? mm->a : mm->b;
}

/* Whether [lo, hi) and [a, b) share a byte. */
static bool spans_meet(int64_t lo, int64_t hi, int64_t a, int64_t b) {
    return lo < b && a < hi;
}

/* Whether the STORE x (planned sp) stores all of the C of mm row for row (or, C
 * contiguous, as one row). */
static bool stores_c(const SpyDma *x, const RtPrep *sp, const SpyMatmul *mm) {
    uint64_t rowb = (uint64_t)mm->n * 4;
    if (sp->how != RT_PH_ROWS || x->lx != mm->c || x->esize != 4 || !mm->m || !mm->n)
        return false;
    if (sp->rows == mm->m && sp->rowb == rowb && (mm->m == 1 || sp->lrs == mm->ldc * 4))
        return true;
    return sp->rows == 1 && mm->ldc == mm->n && sp->rowb == rowb * mm->m;
}

/* Whether the run of VECs planned at code[0] (p) may run before the MATMUL mm whose
 * operands and C lie at LX bytes [alo, ahi), [blo, bhi), [clo, chi): VECs only (no
 * STORE of a chain: it may write what a pending LOAD of A or B reads), touching none
 * of those bytes. A downsampling block's epilogue adds the other branch's bias to its
 * result before the chain over C (resnet50: 4 of 16 blocks). */
static bool runs_before(const SpyInsn *code, const RtPrep *p, int64_t alo, int64_t ahi,
                        int64_t blo, int64_t bhi, int64_t clo, int64_t chi) {
    for (uint32_t q = 0; q < p->run; q++)
        if (code[q].opcode != ISA_VEC)
            return false;
    return !rt_lx_live(code, p->run, alo, ahi) && !rt_lx_live(code, p->run, blo, bhi) &&
           !rt_lx_live(code, p->run, clo, chi);
}

/* RT_PH_EPI for the MATMUL at code[0] (n: to the end of its program; not one that
 * accumulates into C), C written
 * straight to the DRAM a STORE of it writes (rt_exec.c) instead of to LX, where no
 * later instruction reads it: kinds 0, run 1, when the STORE right after it stores
 * all of C; kinds 1 when, after at most EPI_LOADS LOADs that touch none of its
 * operands in LX and VEC runs that touch none of them nor C (runs_before: they run
 * before it), a chain (RT_PH_FUSE) that takes its STORE reads all of C and may run
 * tile by tile (rt_fuse_epi_ok): run is then the distance to the chain. */
#define EPI_LOADS 64
void rt_prep_epi(const SpyInsn *code, uint32_t n, RtPrep *p) {
    const SpyMatmul *mm = &code[0].mm;
    int64_t alo, ahi, blo, bhi, clo = mm->c, chi = clo;
    if (mm->flags & ISA_F_ACCUM)     /* it adds to the C in LX */
        return;
    mm_span(mm, true, &alo, &ahi);
    mm_span(mm, false, &blo, &bhi);
    if (mm->m && mm->n)
        chi += ((int64_t)(mm->m - 1) * mm->ldc + mm->n) * 4;
    if (n > 1 && code[1].opcode == ISA_STORE && stores_c(&code[1].dma, &p[1], mm) &&
        !rt_lx_live(code + 2, n - 2, clo, chi)) {
        p->how = RT_PH_EPI;
        p->run = 1;
        p->kinds = 0;
        return;
    }
    for (uint32_t j = 1; j < n && j <= EPI_LOADS;) {
        if (code[j].opcode == ISA_VEC) {
            if (rt_fuse_epi_ok(&code[j], n - j, &p[j], mm, alo, ahi, blo, bhi)) {
                p->how = RT_PH_EPI;
                p->run = j;
                p->kinds = 1;
                return;
            }
            if (!runs_before(code + j, &p[j], alo, ahi, blo, bhi, clo, chi))
                return;
            j += p[j].run;
            continue;
        }
        if (code[j].opcode != ISA_LOAD)
            return;
        int64_t lo, hi;
        rt_dma_span(&code[j].dma, true, &lo, &hi);
        lo += code[j].dma.lx, hi += code[j].dma.lx;
        if (spans_meet(lo, hi, alo, ahi) || spans_meet(lo, hi, blo, bhi) ||
            spans_meet(lo, hi, clo, chi))
            return;
        j++;
    }
}

/* rt_prep_epi for the MATMUL at code[0] (n: to the end of its program), and when that
 * leaves it writing C to LX because its epilogue chain's region is under rt_fuse_prep's
 * minimum (a convolution's tile of 16 channels by 196, 98 or 49 pixels: resnet50's
 * 3 x 3 convolutions past its first stage), the chain planned at any size: kept when
 * the MATMUL then runs it on its tiles as it writes C to DRAM (RT_PH_EPI), a C of 3 to
 * 12 KiB no longer written to LX, read by each VEC and copied by the STORE; else the
 * VECs keep their plans. */
static void prep_mm_epi(const SpyInsn *code, uint32_t n, RtPrep *p) {
    rt_prep_epi(code, n, p);
    if (p->how == RT_PH_EPI || (code[0].mm.flags & ISA_F_ACCUM))
        return;
    uint32_t j = 1;
    while (j < n && code[j].opcode == ISA_LOAD)
        j += p[j].run ? p[j].run : 1;
    if (j >= n || code[j].opcode != ISA_VEC || p[j].how == RT_PH_FUSE)
        return;
    RtPrep keep = p[j];
    if (!rt_fuse_prep_min(code + j, n - j, &p[j], 0))
        return;
    rt_prep_epi(code, n, p);
    if (p->how != RT_PH_EPI)
        p[j] = keep;
}

/* Fills p[0..n) for code[0..n): any instructions of verified programs. */
void rt_prep_code(const SpyInsn *code, uint64_t n, RtPrep *p) {
    uint64_t s = 0;
    for (uint64_t i = 0; i < n; i++) {
        p[i] = (RtPrep){.run = 1};
        if (code[i].opcode == ISA_BARRIER || i + 1 == n) {  /* a program ends here */
            prep_dma(code + s, (uint32_t)(i + 1 - s), p + s);
            for (uint64_t j = s; j <= i; j++)
                if (code[j].opcode == ISA_VEC) {
                    rt_exec_prep_vec(code + j, (uint32_t)(i + 1 - j), &p[j]);
                    if (p[j].how == RT_PH_FUSE)  /* the rest of the chain runs with it */
                        j += p[j].run - 1;
                } else if (code[j].opcode == ISA_VFILL)
                    p[j].how = rt_vfill_prep(code + j, (uint32_t)(i + 1 - j));
            for (uint64_t j = s; j <= i; j++)   /* after the chains' plans */
                if (code[j].opcode == ISA_MATMUL)
                    prep_mm_epi(code + j, (uint32_t)(i + 1 - j), &p[j]);
            s = i + 1;
        }
    }
}

/* Plans every instruction of the verified model m (m->prep), and its reusable input
 * patches (rt_memo.c: also the order of m->active), the DRAM each kernel writes
 * (rt_acache.c), the order of each kernel's programs (rt_affinity.c), what each
 * program waits for (rt_overlap.c) and the kernels run as large products (rt_stitch.c). */
spy_status rt_prep_model(spy_model *m, RtErr *e) {
    m->prep = malloc(((size_t)m->ncode + 1) * sizeof *m->prep);
    if (!m->prep)
        return rt_err_set(e, SPY_E_NOMEM, "out of memory"), e->status;
    rt_prep_code(m->code, m->ncode, m->prep);
    rt_acache_model(m);                 /* the kernels' writes, which rt_memo reads */
    rt_memo_model(m);
    rt_affinity_model(m);
    rt_overlap_model(m);                /* after the order of m->active */
    rt_stitch_model(m);
    return SPY_OK;
}
