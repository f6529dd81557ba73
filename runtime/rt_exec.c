/* rt_exec.c: the instruction interpreter: runs one verified core program in order,
 * dispatching each instruction to its tile kernel by the plan rt_prep.c made for it
 * at load (rows of a LOAD / STORE, runs of LOADs carried out as one copy, VEC runs).
 * Stops at the first run-time data error and records which instruction failed.
 *
 * A run of F32 VEC instructions that all write the same region in place (an epilogue
 * such as add-bias, max, min over a matmul result, or the FMAs of a depthwise
 * convolution's taps) is strip-mined: the whole run is
 * applied to one block of rows (or columns) at a time, so the region goes through the
 * cache once instead of once per instruction. Every VEC is elementwise and the other
 * operands of the run do not overlap the region, so the results are the same; F32
 * VECs never fail, so neither does the error reporting change.
 *
 * A chain of F32 VECs of one shape, each reading the result of the one before (an
 * epilogue), runs in one pass in registers, with the STORE of its result when one
 * follows it (rt_fuse.c); it is tried before strip-mining. A run of F32 VEC MAX / MIN
 * over a pooling window's taps runs in one pass too (rt_kern_vpool.c).
 *
 * A MATMUL whose result the STORE after it writes to DRAM, directly or after such a
 * chain (RT_PH_EPI, rt_prep.c), writes it to that DRAM itself, not to LX, the chain run
 * on each finished tile there (matmul_epi): the store no longer a pass of its own.
 *
 * A VFILL whose bytes the LOADs right after it rewrite fills only the rest, as
 * planned at load (rt_fill.c). LOADs of whole rows are deferred (rt_defer.c): a
 * MATMUL reads such an operand straight from DRAM, and any other instruction that may
 * see the LOAD's LX bytes, or write its DRAM source, carries it out first. A
 * convolution's input patch that the previous program on this core's scratchpad left
 * in place is not loaded again (rt_memo.c).
 */
#include <stdlib.h>
#include <string.h>

#include "rt_copy.h"
#include "rt_exec.h"

#define RT_STRIP_MIN 16384   /* region bytes from which a run is strip-mined */
#define RT_STRIP_BLOCK 8192  /* bytes of the region per block */
#define RT_STRIP_MAX 16      /* instructions per strip-mined run */

/* Whether the F32 VEC v writes the region of r (same dst, rows, cols, dst_rs) with
 * every LX operand either that region itself (in place) or apart from it. */
static bool same_region(const SpyVec *r, const SpyVec *v) {
    if (v->opcode != ISA_VEC || v->fn == ISA_VF_COPY || v->dtype != ISA_DT_F32 ||
        (v->src_dtype && v->src_dtype != ISA_DT_F32) || v->dst != r->dst ||
        v->rows != r->rows || v->cols != r->cols || v->dst_rs != r->dst_rs || !v->rows ||
        !v->cols ||
        v->dst_rs < (int32_t)v->cols || rt_vecfn_compare(v->fn) || v->fn == ISA_VF_SELECT)
        return false;
    int ar = rt_vecfn_arity(v->fn);
    if (ar < 1 || ar > 3 || (ar == 3 && v->fn != ISA_VF_FMA))
        return false;
    uint64_t lo = v->dst, hi = v->dst + 4 * ((uint64_t)(v->rows - 1) * v->dst_rs + v->cols);
    for (int q = 0; q < ar; q++) {
        if ((q == 0 && (v->flags & ISA_F_IMM_A)) || (q == 1 && (v->flags & ISA_F_IMM)))
            continue;
        if (v->src[q] == v->dst && v->src_rs[q] == v->dst_rs && v->src_cs[q] == 1)
            continue;
        if (v->src_rs[q] < 0 || v->src_cs[q] < 0)
            return false;
        uint64_t a = v->src[q];
        uint64_t b = a + 4 * ((uint64_t)(v->rows - 1) * (uint32_t)v->src_rs[q] +
                              (uint64_t)(v->cols - 1) * (uint32_t)v->src_cs[q] + 1);
        if (b > lo && a < hi)
            return false;
    }
    return true;
}

/* Length of the run of instructions from code[0] that can be strip-mined (0: none). */
static uint32_t strip_run(const SpyInsn *code, uint32_t n) {
    const SpyVec *r = &code[0].vec;
    if ((uint64_t)r->rows * r->cols * 4 < RT_STRIP_MIN || n < 2 ||
        code[1].opcode != ISA_VEC || !same_region(r, r))
        return 0;
    uint32_t k = 1;
    while (k < n && k < RT_STRIP_MAX && same_region(r, &code[k].vec))
        k++;
    return k >= 2 ? k : 0;
}

/* Applies VEC v to rows [r0, r0 + nr) and columns [c0, c0 + nc) only. */
static void vec_part(RtCore *c, const SpyVec *v, uint32_t r0, uint32_t nr, uint32_t c0,
                     uint32_t nc) {
    SpyVec p = *v;
    p.rows = nr;
    p.cols = nc;
    p.dst += 4 * ((uint32_t)r0 * (uint32_t)v->dst_rs + c0);
    for (int q = 0; q < 3; q++)
        p.src[q] += 4 * (r0 * (uint32_t)v->src_rs[q] + c0 * (uint32_t)v->src_cs[q]);
    rt_vec(c, &p);
}

/* Runs the k strip-minable VECs at code (see strip_run) block by block. */
static void strip_mine(RtCore *c, const SpyInsn *code, uint32_t k) {
    const SpyVec *r = &code[0].vec;
    uint64_t rowb = (uint64_t)r->cols * 4;
    if (r->rows == 1) {
        for (uint32_t c0 = 0; c0 < r->cols; c0 += RT_STRIP_BLOCK / 4) {
            uint32_t nc = r->cols - c0 < RT_STRIP_BLOCK / 4 ? r->cols - c0 : RT_STRIP_BLOCK / 4;
            for (uint32_t i = 0; i < k; i++)
                vec_part(c, &code[i].vec, 0, 1, c0, nc);
        }
        return;
    }
    uint32_t br = rowb >= RT_STRIP_BLOCK ? 1 : (uint32_t)(RT_STRIP_BLOCK / rowb);
    for (uint32_t r0 = 0; r0 < r->rows; r0 += br) {
        uint32_t nr = r->rows - r0 < br ? r->rows - r0 : br;
        for (uint32_t i = 0; i < k; i++)
            vec_part(c, &code[i].vec, r0, nr, 0, r->cols);
    }
}

/* A MATMUL, its A and B read from a deferred LOAD's DRAM where they can be (a window
 * B where rt_defer_window says, else in LX: rt_defer_before carried out the views over
 * its range, and those over A when the window kernel reads A in LX); an A from DRAM
 * that the kernel does not write may be packed once for the programs after it
 * (rt_acache.c). */
static void matmul(RtCore *c, RtDefer *d, const SpyMatmul *mm, const RtEpi *e) {
    if (!d->n && !e) {
        rt_matmul(c, mm);
        return;
    }
    unsigned es = mm->dtype == ISA_DT_F32 ? 4 : mm->dtype == ISA_DT_DLF16 ? 2 : 1;
    bool packs = rt_mm_packs(c, mm);
    RtOperand a = rt_defer_operand(c, d, mm->a, mm->m, mm->k, mm->lda, es, false, packs);
    RtOperand b = {c->lx + mm->b, mm->ldb, false, RT_SEG_LX};
    int64_t bks0 = 0;
    const uint8_t *win = (mm->flags & ISA_F_BWIN) ? rt_defer_window(c, d, mm, &bks0) : NULL;
    if (win)
        b.p = win;
    else if (!(mm->flags & ISA_F_BWIN))
        b = rt_defer_operand(c, d, mm->b, mm->k, mm->n, mm->ldb,
                             (mm->flags & ISA_F_BF8) ? 1 : es, rt_mm_takes_bt(c, mm), packs);
    RtMmSrc s = {a.p, b.p, a.ld, b.ld, b.t, b.p != c->lx + mm->b, false, b.seg == 0,
                 a.seg == 0 && !a.t, e, win ? bks0 : 0};
    if (a.p != c->lx + mm->a && !a.t && mm->dtype == ISA_DT_F32 && mm->m > 1 &&
        !(mm->flags & ISA_F_BWIN))                /* A from DRAM: maybe cached */
        s.astable = rt_acache_stable(c, a.p, ((size_t)(mm->m - 1) * a.ld + mm->k) * es);
    rt_matmul_src(c, mm, &s);
}

/* The plan of the VEC code[0] (see rt_exec.h): the first of the one-pass runs that
 * applies, tried in the order depthwise taps, pooling taps, a chain (rt_fuse.c),
 * strip-mining; else the direct path with its checks done (rt_vec_fast_prep) when it
 * takes it, or the one-element path (rt_vec_one) for a lone F32 element. */
void rt_exec_prep_vec(const SpyInsn *code, uint32_t n, RtPrep *p) {
    uint32_t k;
    p->how = RT_PH_NONE;
    p->run = 1;
    if (!code[0].vec.rows || !code[0].vec.cols)
        return; /* an empty region: rt_vec does nothing, whatever its other extent */
    if ((k = rt_vec_taps_run(code, n)) != 0)
        p->how = RT_PH_TAPS;
    else if ((k = rt_vec_pool_run(code, n)) != 0)
        p->how = RT_PH_POOL;
    else if (rt_fuse_prep(code, n, p))
        return;
    else if ((k = strip_run(code, n)) != 0)
        p->how = RT_PH_STRIP;
    if (k)
        p->run = k;
    else if (!rt_vec_fast_prep(&code[0].vec, p) && rt_vec_one_ok(&code[0].vec))
        p->how = RT_PH_ONE;
}

/* A VEC with plan p: its one-pass run (carrying out first the deferred LOADs the
 * instructions of the run may touch), or the instruction alone. */
static int exec_vec(RtCore *c, RtDefer *d, const SpyInsn *in, const RtPrep *p) {
    if (p->how == RT_PH_FUSE) {      /* a chain settles the views itself (rt_fuse.c) */
        rt_fuse_run(c, d, in, p);
        return RT_XOK;
    }
#if RT_HAVE_X86_KERNELS
    if (p->how == RT_PH_POOL && d->n && rt_vec_pool_views(c, d, in, p->run))
        return RT_XOK;
#endif
    for (uint32_t j = 0; j < p->run && d->n; j++)
        rt_defer_before(c, d, &in[j], j ? NULL : p);
    switch (p->how) {
    case RT_PH_TAPS: rt_vec_taps(c, in, p->run); return RT_XOK;
    case RT_PH_POOL: rt_vec_pool(c, in, p->run); return RT_XOK;
    case RT_PH_STRIP: strip_mine(c, in, p->run); return RT_XOK;
    case RT_PH_FAST: rt_vec_fast_prepared(c, &in->vec, p); return RT_XOK;
    case RT_PH_ONE: rt_vec_one(c, &in->vec); return RT_XOK;
    default: return rt_vec(c, &in->vec);
    }
}

/* A LOAD with plan p (with the run of p->run one-row LOADs it begins). */
static void exec_load(RtCore *c, RtDefer *d, const SpyInsn *in, const RtPrep *p) {
    if (p->how == RT_PH_ROWS) {
        if (p->useless && !d->n)     /* read in LX anyway */
            rt_copy_rows(c->lx + in->dma.lx, p->lrs, c->seg[in->dma.seg] + in->dma.dram_off,
                         p->drs, p->rows, p->rows == 1 ? p->merged : p->rowb);
        else
            rt_defer_rows(c, d, &in->dma, p);
    } else if (p->useless && !d->n) {
        rt_dma(c, &in->dma, false);
    } else {
        rt_defer_load(c, d, &in->dma);
    }
}

/* The MATMUL of rt_fuse_around's body (arg), with the chain's tile runner e. */
static void epi_body(RtCore *c, RtDefer *d, const RtEpi *e, void *arg) {
    matmul(c, d, arg, e);
}

/* Whether the MATMUL at code[i], planned RT_PH_EPI, runs so: none of the LOADs between
 * it and its chain begins an input patch (rt_memo.c), which must be found at its place. */
static bool epi_runs(const RtCore *c, const RtPrep *prep, uint32_t i) {
    for (uint32_t q = i + 1; q < i + prep[i].run; q++)
        if (prep[q].memo_len && c->memo_on)
            return false;
    return true;
}

/* The MATMUL at code[i] planned RT_PH_EPI (rt_prep.c), its C written straight to
 * DRAM, where the STORE after it would have copied it from LX: over the multiply-adds,
 * in the host's caches, rather than in a pass of its own afterwards (a convolution's
 * output: about a fifth of a 1 x 1 one's time). With a chain (kinds 1): the LOADs and
 * VECs between them first (they touch none of the MATMUL's operands, nor C), then the
 * MATMUL, the chain run on each tile of C it left there as soon as it is final, in
 * place (rt_fuse_around). The same operations on the same values: the same bits in
 * DRAM; LX is left without C, which no later instruction of the program reads.
 * Returns the index of the run's last instruction, or with *rc set (a VEC's error),
 * that of the failing one. */
static uint32_t matmul_epi(RtCore *c, RtDefer *d, const SpyInsn *code, const RtPrep *prep,
                           uint32_t i, int *rc) {
    const SpyMatmul *mm = &code[i].mm;
    uint32_t j = i + prep[i].run;
    if (!prep[i].kinds) {       /* the STORE's rows (rt_prep.c stores_c) */
        uint8_t *st = c->seg[code[j].dma.seg] + code[j].dma.dram_off;
        int64_t crs = prep[j].rows == mm->m && mm->m > 1 ? prep[j].drs : (int64_t)mm->n * 4;
        rt_defer_flush_dram(c, d, st, st + (int64_t)(mm->m - 1) * crs + (int64_t)mm->n * 4);
        RtEpi e = {NULL, NULL, st, crs, NULL};
        matmul(c, d, mm, &e);
        return j;
    }
    for (uint32_t q = i + 1; q < j; q += prep[q].run) {
        if (code[q].opcode == ISA_LOAD) {
            exec_load(c, d, &code[q], &prep[q]);
            continue;
        }
        if ((*rc = exec_vec(c, d, &code[q], &prep[q])) != RT_XOK)
            return q;
    }
    rt_fuse_around(c, d, &code[j], &prep[j], epi_body, (void *)mm);
    return j + prep[j].run - 1;
}

/* Instructions the plan p of code[0] runs as one (a run of LOADs or VECs), at most n. */
static uint32_t plan_len(const SpyInsn *code, const RtPrep *p, uint32_t n) {
    uint32_t k = (code->opcode == ISA_LOAD || code->opcode == ISA_VEC) && p->run ? p->run : 1;
    return k < n ? k : n;
}

/* Of the k instructions from code (one plan), how many the sizes dims skip (*skip)
 * and how many they do not leave as written (skipped or row-clamped: the result). */
static uint32_t changed_in(const SpyInsn *code, uint32_t k, const int32_t *dims,
                           uint32_t *skip) {
    uint32_t s = 0;
    *skip = 0;
    for (uint32_t j = 0; j < k; j++) {
        uint32_t rows = spy_guard_rows(&code[j], dims);
        *skip += rows == 0;
        s += rows != UINT32_MAX;
    }
    return s;
}

/* Runs the first `rows` rows of instruction in (a row clamp, isa.h spy_guard_rows) as
 * one instruction of that extent, alone: the deferred LOADs it may touch carried out
 * first (before a LOAD, all of them; it is not deferred itself, since a view keeps the
 * instruction it was made from). Returns RT_XOK or a VEC's error. */
static int exec_clamped(RtCore *c, RtDefer *d, const SpyInsn *in, uint32_t rows) {
    SpyInsn x = *in;
    spy_insn_set_rows(&x, rows);
    rt_defer_before(c, d, &x, NULL);
    switch (x.opcode) {
    case ISA_LOAD: rt_dma(c, &x.dma, false); return RT_XOK;
    case ISA_STORE: rt_dma(c, &x.dma, true); return RT_XOK;
    case ISA_MATMUL: matmul(c, d, &x.mm, NULL); return RT_XOK;
    case ISA_VEC: return rt_vec(c, &x.vec);
    case ISA_VREDUCE: rt_vreduce(c, &x.red); return RT_XOK;
    default: return RT_XOK;          /* the verifier allows row clamps on these only */
    }
}

/* Runs code[0..n) on core c with the plans prep[0..n) (NULL: each instruction planned
 * alone, nothing merged); returns RT_XOK or the first error (c->err_*).
 * With c->dims (a bundle with guards) an instruction its guard skips is not run, one
 * it row-clamps runs its first rows alone (exec_clamped): a planned run (of LOADs, of
 * VECs) all of whose instructions are skipped is passed over, one of which only some
 * are skipped or clamped runs instruction by instruction, each planned alone. A
 * program that skipped or clamped anything leaves no input patch for the next
 * (rt_memo.c). */
int rt_exec_prepared(RtCore *c, const SpyInsn *code, const RtPrep *prep, uint32_t n) {
    RtDefer d;          /* views v[0..n) only are ever read: v is not cleared */
    const RtPrep *patch = NULL;   /* the input patch of this program (rt_memo.c) */
    uint32_t held = c->memo, alone_until = 0;
    bool skipped = false;
    d.n = 0;
    c->memo = 0;
    for (uint32_t i = 0; i < n; i++) {
        const SpyInsn *in = &code[i];
        RtPrep alone;
        const RtPrep *p = prep && i >= alone_until ? &prep[i]
                                                   : (rt_prep_code(in, 1, &alone), &alone);
        int rc = RT_XOK;
        if (c->dims && i >= alone_until) {
            uint32_t k = plan_len(in, p, n - i), sk, ch = changed_in(in, k, c->dims, &sk);
            skipped |= ch > 0;
            if (sk == k) {
                i += k - 1;
                continue;
            }
            if (ch) {                /* a run partly skipped or clamped: each alone */
                alone_until = i + k;
                rt_prep_code(in, 1, &alone);
                p = &alone;
            }
        }
        if (c->dims && i < alone_until) {
            uint32_t rows = spy_guard_rows(in, c->dims);
            if (rows == 0)
                continue;
            if (rows != UINT32_MAX) {
                if ((rc = exec_clamped(c, &d, in, rows)) != RT_XOK) {
                    c->err = rc;
                    c->err_insn = i;
                    return rc;
                }
                continue;
            }
        }
        if (p->memo_len && c->memo_on) {
            patch = p;
            if (held == p->memo_id) {    /* LX holds it: the previous program loaded it */
                i += p->memo_len - 1;
                continue;
            }
        }
        if (in->opcode == ISA_STORE && d.n && rt_defer_store(c, &d, &in->dma))
            continue;                     /* copied from the views' DRAM */
        if (d.n && in->opcode != ISA_LOAD && in->opcode != ISA_VEC)  /* VECs: exec_vec */
            rt_defer_before(c, &d, in, p);
        switch (in->opcode) {
        case ISA_LOAD:
            exec_load(c, &d, in, p);
            i += p->run - 1;
            break;
        case ISA_STORE:
            if (p->how == RT_PH_ROWS)
                rt_copy_rows(c->seg[in->dma.seg] + in->dma.dram_off, p->drs,
                             c->lx + in->dma.lx, p->lrs, p->rows, p->rowb);
            else
                rt_dma(c, &in->dma, true);
            break;
        case ISA_GATHER: rc = rt_gather(c, &in->gather); break;
        case ISA_SCATTER: rt_scatter(c, &in->scatter); break;
        case ISA_MATMUL:
            if (p->how == RT_PH_EPI && !c->dims && epi_runs(c, prep, i))
                i = matmul_epi(c, &d, code, prep, i, &rc);
            else
                matmul(c, &d, &in->mm, NULL);
            break;
        case ISA_VEC:
            rc = exec_vec(c, &d, in, p);
            i += p->run - 1;
            break;
        case ISA_VREDUCE: rt_vreduce(c, &in->red); break;
        case ISA_VFILL: rt_vfill_planned(c, &in->fill, in + 1, n - i - 1, p->how); break;
        case ISA_VSCAN: rt_vscan(c, &in->scan); break;
        default: break; /* NOP, BARRIER */
        }
        if (rc != RT_XOK) {
            c->err = rc;
            c->err_insn = i;
            return rc;
        }
    }
    if (patch && !skipped && rt_memo_kept(&d, patch))
        c->memo = patch->memo_id;
    return RT_XOK;
}

/* Runs code[0..n) on core c, planning it first (tests and tools without a loaded
 * model; without memory for the plans, each instruction alone); returns RT_XOK or the
 * first error (c->err_*). */
int rt_exec_program(RtCore *c, const SpyInsn *code, uint32_t n) {
    RtPrep one[64];
    RtPrep *p = n <= 64 ? one : malloc((size_t)n * sizeof *p);
    if (!p)
        return rt_exec_prepared(c, code, NULL, n);
    rt_prep_code(code, n, p);
    int rc = rt_exec_prepared(c, code, p, n);
    if (p != one)
        free(p);
    return rc;
}
