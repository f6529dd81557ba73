/* cg_guard.c: guards (isa.h SpyGuard, isa.md "Guards") on the instructions of a bundle
 * with bounded symbolic dimensions: an instruction whose results, at small sizes, only
 * reach padding is skipped at launch, so that the work of a run follows the actual
 * sizes inside the box it was planned for.
 *
 * The proof is a backward pass over the finished code, kernel by kernel from the last,
 * each core program from its end, that computes for every byte (LX of the core, DRAM of
 * the arena and the outputs) under which sizes its value is still needed later:
 *   - a demand is, per symbol s (the first ISA_GUARD_MAX), a threshold t_s: the value is
 *     not needed when the size of some s is at most t_s (-1: no such condition; NEVER:
 *     not needed at all);
 *   - at the end, an element of an output with symbolic axes is not needed when a
 *     symbol is at most its index along an axis of that symbol (the runtime drops it),
 *     every other output byte is needed, the arena and LX are not;
 *   - an instruction's guard is the meet (per symbol the least threshold) of the
 *     demands of every byte it writes: skipping it then skips only values nobody reads;
 *     the bytes it writes in whole are then no longer needed before it (a guarded
 *     writer is skipped only when all their readers are), and the bytes it reads are
 *     needed under its own guard's complement (the join: per symbol the least).
 *   - an instruction with rows (VEC, VREDUCE, MATMUL, LOAD, STORE) whose rows' demands
 *     rise along its rows with a symbol (batch items, positions) gets a row clamp
 *     instead (isa.h ISA_GUARD_ROWS, cg_guard_rows.c): row r runs only above a size
 *     under each of its bytes' thresholds, and row r's reads are needed only there;
 * So an instruction that runs reads exactly the bytes it read without guards: the last
 * writer of each is skipped only where the reader is too. Its results are the same,
 * and so are its errors (an index a GATHER reads is never one left stale).
 * Conservative where the code does not say enough: bytes are tracked in granules (a
 * granule written in part is not freed, read in part counts as read; but a granule of
 * a kernel's output in the arena is freed when its STOREs write all of its part of
 * the output between them, free_stores), a SCATTER or a
 * write outside the tracked segments never gets a guard, and a kernel that reads DRAM
 * it also writes gets none (its cores' order is not known). LX contents do not outlive
 * a program (isa.md), so each program starts with no LX demand. The pass stops (the
 * kernels before get no guards: they run whole, which is always exact) once nothing
 * more can be guarded or after GD_WORK_MAX granule visits.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cg_guard.h"

#define LX_G_FINE 4                  /* bytes per LX granule: one float32 per granule,
                                        so that the per-row values of a tile (a layer
                                        norm's statistics) have a demand each */
#define LX_G_COARSE 16               /* ... when the fine ones would take more than the
                                        work budget (lx_granule) */
#define LX_FINE_MAX (GD_WORK_MAX / 8)  /* estimated granule visits under which LX
                                          granules are fine */
#define BWIN_RUN_COST 4              /* a run's cost in granule visits (acc_bwin) */
#define DR_G 64                      /* bytes per DRAM granule (an output's may be less:
                                        out_granule) */
#define GD_WORK_MAX (1ull << 30)     /* granules visited before the kernels left (the
                                        first ones) get no guards: bounds compile time
                                        (MobileNet V2 in a box of 8x192x192 images takes
                                        4 * 10^8, 8x512x512 several 10^9; 2^30 rather
                                        than 2^29 since visits got cheaper: its 17
                                        buckets compile in 19 s, as they did in 21 s
                                        with 2^29, and [2, 3, 300, 300] in its 4x384x384
                                        bucket models 3320 us instead of 4787) */

const Dem gd_never = {{NEVER, NEVER, NEVER}};
const Dem gd_always = {{-1, -1, -1}};

_Static_assert(GD_NS == 3, "gd_never and gd_always list GD_NS thresholds");

/* acc := the meet (and equally the join) of acc and x: per symbol the least. */
static void dem_min(Dem *acc, const Dem *x)
{
    for (int s = 0; s < GD_NS; s++)
        acc->t[s] = x->t[s] < acc->t[s] ? x->t[s] : acc->t[s];
}

void gd_dem_or(Dem *acc, const Dem *x)
{
    for (int s = 0; s < GD_NS; s++)
        acc->t[s] = x->t[s] > acc->t[s] ? x->t[s] : acc->t[s];
}

/* Granule size of space seg. */
static int64_t gsize(const Gd *d, int64_t seg)
{
    return seg < 0 ? d->lx_g : d->dr_g[seg];
}

/* Whether DRAM segment seg is tracked. */
static bool tracked(const Gd *d, int64_t seg)
{
    return seg < 0 || ((uint64_t)seg < d->nseg && d->dr[seg]);
}

/* Whether x is the demand "needed at every size". */
static bool is_always(const Dem *x)
{
    for (int s = 0; s < GD_NS; s++)
        if (x->t[s] >= 0)
            return false;
    return true;
}

/* OP_MEET / OP_GEN over LX granules [q0, q1]: a granule of an older gen is NEVER. */
static void lx_run(Visit *v, uint64_t q0, uint64_t q1)
{
    Gd *d = v->d;
    if (q1 >= d->lx_n) {
        v->hit |= v->op == OP_MEET;          /* past the scratchpad: untracked */
        if (q0 >= d->lx_n)
            return;
        q1 = d->lx_n - 1;
    }
    if (v->op == OP_MEET) {                  /* stops once it is "every size" */
        for (uint64_t q = q0; q <= q1; q++)
            if (d->lx_gen[q] == d->gen) {
                dem_min(v->dem, &d->lx[q]);
                if (((q - q0) & 63) == 63 && is_always(v->dem))
                    return;
            }
        return;
    }
    for (uint64_t q = q0; q <= q1; q++) {
        bool live = d->lx_gen[q] == d->gen;
        if (live) {
            dem_min(&d->lx[q], v->dem);
        } else {
            d->lx_gen[q] = d->gen;
            d->lx[q] = *v->dem;
        }
    }
}

/* Applies v's operation to the bytes [a, a + w) of space seg. */
static void visit_run(Visit *v, int64_t seg, int64_t a, int64_t w)
{
    int64_t g = gsize(v->d, seg);
    if (w <= 0 || a < 0)
        return;
    int sh = __builtin_ctzll((uint64_t)g);   /* granules are powers of two (gd_init) */
    uint64_t q0 = (uint64_t)a >> sh, q1 = (uint64_t)(a + w - 1) >> sh;
    v->d->work += q1 - q0 + 1;
    if (v->op == OP_KILL) {          /* granules written whole only */
        q0 = (uint64_t)(a + g - 1) >> sh;
        q1 = (uint64_t)(a + w) >> sh;
        uint64_t n = seg < 0 ? v->d->lx_n : v->d->dr_n[seg];
        q1 = q1 < n ? q1 : n;
        if (seg < 0 && q1 > q0)              /* an older gen: NEVER */
            memset(v->d->lx_gen + q0, 0, (q1 - q0) * sizeof *v->d->lx_gen);
        for (uint64_t q = q0; seg >= 0 && q < q1; q++)
            v->d->dr[seg][q] = gd_never;
        return;
    }
    if (v->op == OP_COVER) {         /* the bytes of [lo, hi) it writes, per granule */
        int64_t b0 = a > v->lo ? a : v->lo, b1 = a + w < v->hi ? a + w : v->hi;
        for (int64_t b = b0; b < b1;) {
            int64_t q = b / g, e = (q + 1) * g < b1 ? (q + 1) * g : b1, n = e - b;
            v->cover[q - v->lo / g] |= (n >= 64 ? ~0ull : ((1ull << n) - 1)) << (b - q * g);
            b = e;
        }
        return;
    }
    if (v->op == OP_STAMP || v->op == OP_CLASH || v->op == OP_FIRST) {
        uint32_t *st = v->d->dr_stamp[seg], *fw = v->d->dr_first[seg];
        for (uint64_t q = q0; q <= q1 && q < v->d->dr_n[seg]; q++) {
            if (v->op == OP_STAMP)
                st[q] = v->kernel + 1;
            else if (v->op == OP_FIRST)
                fw[q] = v->kernel;
            else
                v->hit |= st[q] == v->kernel + 1;
        }
        return;
    }
    if (seg < 0) {
        lx_run(v, q0, q1);
        return;
    }
    if (q1 >= v->d->dr_n[seg])
        v->hit |= v->op == OP_MEET;
    for (uint64_t q = q0; q <= q1 && q < v->d->dr_n[seg]; q++) {
        Dem *x = &v->d->dr[seg][q];
        dem_min(v->op == OP_MEET ? v->dem : x, v->op == OP_MEET ? x : v->dem);
    }
}

/* Applies v to every run of access x (a MEET stops once nothing can lower it). */
void gd_visit(Visit *v, const Acc *x)
{
    const CgSpan *s = &x->sp;
    if (s->width == 0)
        return;
    if (!tracked(v->d, x->seg)) {
        v->hit |= v->op == OP_MEET;          /* a write there: never guarded */
        return;
    }
    if ((v->op == OP_STAMP || v->op == OP_CLASH || v->op == OP_FIRST) && x->seg < 0)
        return;
    int64_t idx[CG_DIMS_MAX];
    for (int i = 0; i < s->n; i++)
        idx[i] = 0;
    for (;;) {
        if (v->op == OP_MEET && (v->hit || is_always(v->dem)))
            return;
        int64_t a = s->lo;
        for (int i = 0; i < s->n; i++)
            a += idx[i] * s->stride[i];
        visit_run(v, x->seg, a, s->width);
        int i = s->n - 1;
        while (i >= 0 && ++idx[i] == s->len[i])
            idx[i--] = 0;
        if (i < 0)
            return;
    }
}

/* An access of n dims (len, strides in elements, any sign) of es-byte elements at
 * byte lo of space seg. */
static void acc_make(Acc *x, int64_t seg, int64_t lo, int64_t es, int n, const int64_t *len,
                     const int64_t *st)
{
    for (int i = 0; i < n; i++)
        if (st[i] < 0 && len[i] > 0)
            lo += (len[i] - 1) * st[i] * es;
    x->seg = seg;
    cg_span_make(&x->sp, lo, (unsigned)es, n, len, st);
}

/* rows x cols elements of es bytes at LX byte lo, row stride rs, column stride cs. */
static void acc_rows(Acc *x, int64_t lo, int64_t rows, int64_t rs, int64_t cols, int64_t cs,
                     int64_t es)
{
    int64_t len[2] = {rows, cols}, st[2] = {rs, cs};
    acc_make(x, -1, lo, es, 2, len, st);
}

/* The LX bytes [lo, hi) as one access. */
static void acc_range(Acc *x, int64_t seg, int64_t lo, int64_t hi)
{
    int64_t len = hi - lo, st = 1;
    acc_make(x, seg, lo, 1, 1, &len, &st);
}

/* The DRAM or LX side of a LOAD / STORE. */
static void acc_dma(Acc *x, const SpyDma *d, bool dram)
{
    int64_t len[ISA_MAX_DIMS], st[ISA_MAX_DIMS];
    for (int i = 0; i < ISA_MAX_DIMS; i++)
        len[i] = d->dims[i], st[i] = dram ? d->dram_stride[i] : d->lx_stride[i];
    int64_t es = dram && (d->flags & ISA_F_F32) ? 4 : d->esize;
    acc_make(x, dram ? (int64_t)d->seg : -1, dram ? d->dram_off : (int64_t)d->lx, es, ISA_MAX_DIMS, len, st);
}

/* Operands of a VEC function: 1, 2 or 3 (isa.h's order of SpyVecFn). */
static int vec_arity(int fn)
{
    if (fn == ISA_VF_SELECT || fn == ISA_VF_FMA)
        return 3;
    return fn >= ISA_VF_ADD && fn <= ISA_VF_ATAN2 ? 2 : 1;
}

/* The bytes a MATMUL's window B reads (isa.h SpyMatmul, ISA_F_BWIN): its five dims
 * (three of the kernel taps, two of the pixels), widest stride first so that the
 * contiguous ones fold into runs; or their bounding range, when that is fewer granule
 * visits (a dense 3x3 window overlaps itself: every byte of the range is read). A
 * dilated convolution's window of 64 channels x 3 x 3 taps x 10 pixels spans 1.5 MB of
 * LX but reads 23 KB of it: the range made the guard pass visit 66 times the bytes. */
static void acc_bwin(Acc *x, const SpyMatmul *mm, int64_t es)
{
    int64_t len[5], st[5], lo = 0, hi = 0;
    for (int i = 0; i < 5; i++) {
        len[i] = i < 3 ? mm->bw_kext[i] : mm->bw_next[i - 3];
        st[i] = i < 3 ? mm->bw_ks[i] : mm->bw_ns[i - 3];
        int64_t r = (len[i] > 0 ? len[i] - 1 : 0) * st[i];
        lo += r < 0 ? r : 0;
        hi += r > 0 ? r : 0;
    }
    for (int i = 1; i < 5; i++)                  /* insertion sort by |stride|, widest first */
        for (int j = i; j > 0 && llabs(st[j]) > llabs(st[j - 1]); j--) {
            int64_t l = len[j], t = st[j];
            len[j] = len[j - 1], st[j] = st[j - 1];
            len[j - 1] = l, st[j - 1] = t;
        }
    acc_make(x, -1, mm->b, es, 5, len, st);
    int64_t runs = 1;
    for (int i = 0; i < x->sp.n; i++)
        runs *= x->sp.len[i];
    if (x->sp.width > 0 && runs * (x->sp.width / LX_G_COARSE + BWIN_RUN_COST) >
                               (hi - lo + 1) * es / LX_G_COARSE)
        acc_range(x, -1, mm->b + lo * es, mm->b + (hi + 1) * es);
}

/* The accesses of in: reads into r (returns their count), writes into w (*nw). */
int gd_accesses(const SpyInsn *in, Acc *r, Acc *w, int *nw)
{
    int nr = 0;
    *nw = 0;
    switch (in->opcode) {
    case ISA_LOAD:
        acc_dma(&r[nr++], &in->dma, true);
        acc_dma(&w[(*nw)++], &in->dma, false);
        break;
    case ISA_STORE:
        acc_dma(&r[nr++], &in->dma, false);
        acc_dma(&w[(*nw)++], &in->dma, true);
        break;
    case ISA_GATHER: {
        const SpyGather *g = &in->gather;
        int64_t len[2] = {g->bound, g->row_elems}, st[2] = {g->row_stride, 1};
        acc_rows(&r[nr++], g->lx_idx, 1, 0, g->nidx, 1, 4);
        acc_make(&r[nr++], g->seg, g->dram_off, g->esize, 2, len, st);
        acc_rows(&w[(*nw)++], g->lx_dst, g->nidx, g->dst_row_stride, g->row_elems, 1, g->esize);
        break;
    }
    case ISA_MATMUL: {
        const SpyMatmul *mm = &in->mm;
        int64_t ea = cg_dev_bytes(mm->dtype), eb = (mm->flags & ISA_F_BF8) ? 1 : ea;
        int64_t ec = cg_dev_bytes(mm->out_dtype);
        acc_rows(&r[nr++], mm->a, mm->m, mm->lda, mm->k, 1, ea);
        if (mm->flags & ISA_F_BWIN)
            acc_bwin(&r[nr++], mm, ea);
        else
            acc_rows(&r[nr++], mm->b, mm->k, mm->ldb, mm->n, 1, eb);
        if (mm->flags & ISA_F_ACCUM)
            acc_rows(&r[nr++], mm->c, mm->m, mm->ldc, mm->n, 1, ec);
        acc_rows(&w[(*nw)++], mm->c, mm->m, mm->ldc, mm->n, 1, ec);
        break;
    }
    case ISA_VEC: {
        const SpyVec *v = &in->vec;
        int sdt = v->src_dtype ? v->src_dtype : v->dtype;
        int imm = (v->flags & ISA_F_IMM) ? 1 : (v->flags & ISA_F_IMM_A) ? 0 : -1;
        for (int q = 0; q < vec_arity(v->fn); q++) {
            if (q == imm)
                continue;
            int qdt = (v->fn == ISA_VF_SELECT && q == 0) ? ISA_DT_BOOL
                    : (v->fn == ISA_VF_FMA && q == 2) ? v->dtype : sdt;
            acc_rows(&r[nr++], v->src[q], v->rows, v->src_rs[q], v->cols, v->src_cs[q],
                     cg_dev_bytes(qdt));
        }
        acc_rows(&w[(*nw)++], v->dst, v->rows, v->dst_rs, v->cols, 1, cg_dev_bytes(v->dtype));
        break;
    }
    case ISA_VREDUCE: {
        const SpyVReduce *x = &in->red;
        bool arg = x->fn == ISA_RF_ARGMAX || x->fn == ISA_RF_ARGMIN;
        int64_t ed = arg ? 4 : cg_dev_bytes(x->dtype);
        acc_rows(&r[nr++], x->src, x->rows, x->src_rs, x->len, x->src_cs,
                 cg_dev_bytes(x->dtype));
        if (x->flags & ISA_F_ACCUM)
            acc_rows(&r[nr++], x->dst, x->rows, x->dst_rs, 1, 1, ed);
        acc_rows(&w[(*nw)++], x->dst, x->rows, x->dst_rs, 1, 1, ed);
        break;
    }
    case ISA_VFILL:
        acc_rows(&w[(*nw)++], in->fill.dst, 1, 0, in->fill.n, 1, cg_dev_bytes(in->fill.dtype));
        break;
    case ISA_VSCAN: {
        const SpyVScan *x = &in->scan;
        int64_t es = cg_dev_bytes(x->dtype);
        acc_rows(&r[nr++], x->src, x->rows, x->src_rs, x->len, 1, es);
        acc_rows(&w[(*nw)++], x->dst, x->rows, x->dst_rs, x->len, 1, es);
        break;
    }
    default:                         /* NOP, BARRIER; SCATTER: handled by the caller */
        break;
    }
    return nr;
}

/* The guard of a writer whose written bytes have the meet m: the conditions that can
 * hold and fail within the bounds; *eff gets the demand its reads are made under (a
 * kept condition's threshold, -1 for the others). No guard (eff: always) when some
 * byte is untracked or needed, or when it would skip the instruction at every size
 * (nothing reads what it writes: left as it was). */
static SpyGuard guard_of(const Gd *d, const Dem *m, bool untracked, Dem *eff)
{
    SpyGuard g;
    memset(&g, 0, sizeof g);
    *eff = gd_always;
    if (untracked)
        return g;
    for (int s = 0; s < d->ns; s++)
        if (m->t[s] >= d->max[s])
            return g;
    for (int s = 0; s < d->ns; s++)
        if (m->t[s] >= d->min[s]) {
            g.sym[g.n] = (uint8_t)s;
            g.lo[g.n++] = (uint32_t)m->t[s];
            eff->t[s] = m->t[s];
        }
    return g;
}

/* Keeps, for ring_sources, the demand of each row a ring source in writes. */
static void source_rows(Gd *d, const SpyInsn *in)
{
    uint32_t e = spy_insn_rows(in);
    Dem *rd = e >= 2 ? malloc(e * sizeof *rd) : NULL;
    GdRowAcc ra;
    if (rd && d->srcrows && gd_row_demands(d, in, &ra, rd)) {
        d->srcrows[in - d->code] = rd;
        return;
    }
    free(rd);
}

/* One instruction, backward: its guard from the demand of what it writes (DRAM writes
 * are met here and freed by free_stores once the kernel is done), then LX bytes written
 * whole freed, then its reads needed under it. force: no guard (the kernel's DRAM
 * order is not known); source: a DRAM LOAD whose tile a core receives over the ring,
 * whose read ring_sources makes once every core's guards are known. Returns whether it
 * got a guard. */
static bool step(Gd *d, SpyInsn *in, bool force, bool source)
{
    Acc r[ACC_MAX], w[ACC_MAX];
    int nw, nr = gd_accesses(in, r, w, &nw);
    Dem meet = gd_never, eff = gd_always;
    Visit v = {.d = d, .op = OP_MEET, .dem = &meet};
    for (int i = 0; i < nw; i++)
        gd_visit(&v, &w[i]);
    SpyGuard g;
    memset(&g, 0, sizeof g);
    bool clamp = false;
    GdRowAcc ra;
    if (nw && !force && in->opcode != ISA_SCATTER) {
        g = guard_of(d, &meet, v.hit, &eff);
        clamp = !v.hit && !source && gd_row_clamp(d, in, &ra, &g);
        if (source && !v.hit)
            source_rows(d, in);
    }
    bool cols = !clamp && !source && !force && nw && !v.hit && gd_cols_prep(d, in);
    if (in->opcode == ISA_SCATTER) {            /* LX reads: rows and indices */
        const SpyScatter *s = &in->scatter;
        acc_rows(&r[nr++], s->lx_src, s->nidx, s->src_row_stride, s->row_elems, 1, s->esize);
        acc_rows(&r[nr++], s->lx_idx, 1, 0, s->nidx, 1, 4);
    }
    Visit k = {.d = d, .op = OP_KILL};
    for (int i = 0; i < nw; i++)
        if (w[i].seg < 0)
            gd_visit(&k, &w[i]);
    Visit gen = {.d = d, .op = OP_GEN, .dem = &eff};
    const GdMask *m = d->mask ? d->mask[in - d->code] : NULL;
    int sel = m ? gd_select_data(in) : -1;
    if (clamp)
        gd_row_reads(d, in, &ra, &g, m, sel);
    else if (cols)
        gd_cols_reads(d, in, &eff);
    for (int i = 0; i < nr && !source && !clamp && !cols; i++)  /* a ring source: once */
        if (i != sel)                                      /* all cores are done */
            gd_visit(&gen, &r[i]);
    if (sel >= 0 && !clamp && !cols)
        gd_mask_read(d, in, m, 0, spy_insn_rows(in), &eff);
    memcpy(in->raw + ISA_GUARD_OFF, &g, sizeof g);
    return g.n > 0;
}

/* Whether kernel k (its programs progs[0..cores)) reads DRAM bytes it writes. */
static bool kernel_clash(Gd *d, SpyInsn *code, const SpyProgramDesc *progs, uint32_t cores,
                         uint32_t k)
{
    Visit st = {.d = d, .op = OP_STAMP, .kernel = k}, cl = {.d = d, .op = OP_CLASH, .kernel = k};
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t j = 0; j < cores; j++)
            for (uint64_t i = progs[j].first_insn; i < progs[j].first_insn + progs[j].ninsns;
                 i++) {
                Acc r[ACC_MAX], w[ACC_MAX];
                int nw, nr = gd_accesses(&code[i], r, w, &nw);
                if (code[i].opcode == ISA_SCATTER) {
                    const SpyScatter *s = &code[i].scatter;
                    int64_t len[2] = {s->bound, s->row_elems}, sst[2] = {s->row_stride, 1};
                    acc_make(&w[nw++], s->seg, s->dram_off, s->esize, 2, len, sst);
                }
                for (int q = 0; pass == 0 && q < nw; q++)
                    if (w[q].seg >= 0)
                        gd_visit(&st, &w[q]);
                for (int q = 0; pass == 1 && q < nr; q++)
                    if (r[q].seg >= 0)
                        gd_visit(&cl, &r[q]);
            }
    return cl.hit;
}

/* The arena storage [*lo, *hi) of kernel k's output, when it is a value with storage
 * of its own there (else *hi = 0). Arena blocks are IR_DRAM_ALIGN-aligned and rounded
 * up to it, so the bytes from *hi to the next granule are that value's padding:
 * nothing reads them while it lives. */
static void arena_out(const CgEmit *e, const IrKernel *k, int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    if (k->out == IR_NONE)
        return;
    const PlanValue *pv = &e->s->val[k->out];
    if (pv->virt || pv->seg != ISA_SEG_ARENA || pv->dram_offset < 0)
        return;
    *lo = pv->dram_offset;
    *hi = pv->dram_offset + (int64_t)plan_storage_bytes(e->g, k->out, e->t);
}

_Static_assert(IR_DRAM_ALIGN % DR_G == 0, "an arena block ends on a granule boundary");

/* Frees the DRAM bytes kernel k's STOREs write whole (after all its cores were met),
 * and, in the arena storage [lo, hi) of its output (arena_out; hi 0: none), every
 * granule whose part of [lo, hi) they write between them: the cores' STOREs of a
 * small value (a mask of 36 bytes, 12 by each of 3 cores) write no granule whole,
 * and such a granule, never freed, would keep the demand of its readers on the
 * value that held those bytes before it. */
static void free_stores(Gd *d, const SpyInsn *code, const SpyProgramDesc *progs, uint32_t cores,
                        int64_t lo, int64_t hi)
{
    uint64_t n = hi > lo ? (uint64_t)((hi - 1) / DR_G - lo / DR_G + 1) : 0;
    Visit k = {.d = d, .op = OP_KILL};
    Visit c = {.d = d, .op = OP_COVER, .lo = lo, .hi = hi, .cover = n ? calloc(n, 8) : NULL};
    for (uint32_t j = 0; j < cores; j++)
        for (uint64_t i = progs[j].first_insn; i < progs[j].first_insn + progs[j].ninsns; i++)
            if (code[i].opcode == ISA_STORE) {
                Acc x;
                acc_dma(&x, &code[i].dma, true);
                gd_visit(&k, &x);
                if (c.cover && x.seg == ISA_SEG_ARENA)
                    gd_visit(&c, &x);
            }
    for (uint64_t q = 0; c.cover && q < n; q++) {
        int64_t g0 = (lo / DR_G + (int64_t)q) * DR_G, m = hi - g0 < DR_G ? hi - g0 : DR_G;
        uint64_t full = m == 64 ? ~0ull : (1ull << m) - 1;      /* the rest: padding */
        if ((c.cover[q] & full) == full && (uint64_t)(g0 / DR_G) < d->dr_n[ISA_SEG_ARENA])
            d->dr[ISA_SEG_ARENA][g0 / DR_G] = gd_never;
    }
    free(c.cover);
}

/* The demand of output j's bytes (segment seg): per element, per symbol of its axes
 * the largest index along one (not needed when the symbol is at most that), met per
 * granule. */
static void seed_output(Gd *d, IrGraph *g, uint32_t j, uint32_t seg)
{
    const IrType *t = ir_vtype(g, g->outputs[j]);
    int sym[IR_MAX_RANK], any = 0;
    for (int a = 0; a < t->rank; a++)
        sym[a] = -1;
    for (uint32_t i = 0; i < g->nsymdims; i++) {
        const IrSymDim *s = &g->symdims[i];
        if (s->output && s->input == j && s->sym < d->ns)
            sym[s->axis] = s->sym, any = 1;
    }
    Dem *dm = d->dr[seg];
    for (uint64_t q = 0; q < d->dr_n[seg]; q++)
        dm[q] = any ? gd_never : gd_always;
    if (!any)
        return;
    int64_t es = pass_dev_esize(t->dtype), n = plan_numel(t), idx[IR_MAX_RANK] = {0};
    for (int64_t e = 0; e < n; e++) {
        Dem x = gd_always;
        for (int a = 0; a < t->rank; a++)
            if (sym[a] >= 0 && idx[a] > x.t[sym[a]])
                x.t[sym[a]] = (int32_t)idx[a];
        dem_min(&dm[(uint64_t)(e * es) / (uint64_t)d->dr_g[seg]], &x);
        dem_min(&dm[(uint64_t)((e + 1) * es - 1) / (uint64_t)d->dr_g[seg]], &x);
        for (int a = t->rank - 1; a >= 0 && ++idx[a] == t->dims[a]; a--)
            idx[a] = 0;
    }
}

#define OUT_G_MAX (1ull << 22)       /* granules of an output (out_granule), 80 MiB */

/* The granule of output j's segment: 64 bytes, halved until it divides the byte stride
 * of every symbolic axis of the output, so that no granule holds elements of two
 * indices along such an axis (their demands differ: a granule's is their meet, and a
 * row of 1000 float32 logits would otherwise share a granule with the row before,
 * which makes every row clamp over it step by two rows instead of one), while the
 * output has at most OUT_G_MAX granules. */
static int64_t out_granule(const Gd *d, IrGraph *g, uint32_t j)
{
    const IrType *t = ir_vtype(g, g->outputs[j]);
    int64_t gr = DR_G, stride = pass_dev_esize(t->dtype);
    uint64_t bytes = (uint64_t)plan_numel(t) * (uint64_t)stride;
    for (int a = t->rank - 1; a >= 0; a--) {
        for (uint32_t i = 0; i < g->nsymdims; i++) {
            const IrSymDim *s = &g->symdims[i];
            if (s->output && s->input == j && s->sym < d->ns && s->axis == a)
                while (gr > 1 && stride % gr && bytes / (uint64_t)(gr / 2) <= OUT_G_MAX)
                    gr /= 2;
        }
        stride *= t->dims[a];
    }
    return gr;
}

/* The LX granule of e's code: LX_G_FINE unless the pass would then visit more than
 * LX_FINE_MAX granules (estimated from the LX bytes every instruction reads and writes,
 * twice: their demands are met or freed, and made), in which case LX_G_COARSE, with
 * which the budget covers four times the bytes in a quarter of the time (MobileNet V2
 * in its box of 8x192x192 images would otherwise leave its first 39 of 69 kernels
 * unguarded, and its 17 buckets took twice the compile time). */
static int64_t lx_granule(const CgEmit *e)
{
    uint64_t visits = 0;
    for (uint64_t i = 0; i < e->n && visits <= LX_FINE_MAX; i++) {
        Acc r[ACC_MAX], w[ACC_MAX];
        int nw, nr = gd_accesses(&e->code[i], r, w, &nw);
        for (int j = 0; j < nr + nw; j++) {
            const Acc *x = j < nr ? &r[j] : &w[j - nr];
            uint64_t runs = 1;
            for (int q = 0; q < x->sp.n; q++)
                runs *= (uint64_t)x->sp.len[q];
            if (x->seg < 0)
                visits += 2 * runs * ((uint64_t)x->sp.width / LX_G_FINE + 1);
        }
    }
    return visits <= LX_FINE_MAX ? LX_G_FINE : LX_G_COARSE;
}

/* Sets up d: tracked symbols and their bounds, LX and the tracked DRAM segments
 * (segment 1, the arena, not needed at the end; the outputs, seeded). */
static bool gd_init(Gd *d, CgEmit *e)
{
    IrGraph *g = e->g;
    memset(d, 0, sizeof *d);
    d->ns = ir_sym_count(g) < GD_NS ? ir_sym_count(g) : GD_NS;
    for (int s = 0; s < d->ns; s++)
        for (uint32_t i = 0; i < g->nsymdims; i++)
            if (g->symdims[i].sym == s)
                d->min[s] = g->symdims[i].min, d->max[s] = g->symdims[i].max;
    d->lx_g = lx_granule(e);
    IR_ASSERT((d->lx_g & (d->lx_g - 1)) == 0);       /* a power of two (visit_run) */
    d->lx_n = (e->t->lx_bytes + (uint64_t)d->lx_g - 1) / (uint64_t)d->lx_g;
    d->lx = malloc(d->lx_n * sizeof *d->lx);
    d->lx_gen = calloc(d->lx_n, sizeof *d->lx_gen);
    d->nseg = ISA_SEG_IO0 + g->ninputs + g->noutputs;
    d->dr = calloc(d->nseg, sizeof *d->dr);
    d->dr_stamp = calloc(d->nseg, sizeof *d->dr_stamp);
    d->dr_first = calloc(d->nseg, sizeof *d->dr_first);
    d->dr_n = calloc(d->nseg, sizeof *d->dr_n);
    d->dr_g = calloc(d->nseg, sizeof *d->dr_g);
    if (!d->lx || !d->lx_gen || !d->dr || !d->dr_stamp || !d->dr_first || !d->dr_n || !d->dr_g)
        return false;
    for (uint32_t s = ISA_SEG_ARENA; s < d->nseg; s++) {
        if (s >= ISA_SEG_IO0 && s < ISA_SEG_IO0 + g->ninputs)
            continue;                            /* inputs: no kernel writes them */
        uint64_t bytes = s == ISA_SEG_ARENA ? e->s->arena_bytes
                       : (uint64_t)plan_numel(ir_vtype(g, g->outputs[s - ISA_SEG_IO0 - g->ninputs])) *
                             (uint64_t)pass_dev_esize(ir_vtype(g, g->outputs[s - ISA_SEG_IO0 - g->ninputs])->dtype);
        d->dr_g[s] = s == ISA_SEG_ARENA ? DR_G
                                        : out_granule(d, g, s - ISA_SEG_IO0 - g->ninputs);
        IR_ASSERT(d->dr_g[s] > 0 && (d->dr_g[s] & (d->dr_g[s] - 1)) == 0);  /* visit_run */
        d->dr_n[s] = (bytes + (uint64_t)d->dr_g[s] - 1) / (uint64_t)d->dr_g[s];
        d->dr[s] = malloc((d->dr_n[s] + 1) * sizeof *d->dr[s]);
        d->dr_stamp[s] = calloc(d->dr_n[s] + 1, sizeof *d->dr_stamp[s]);
        d->dr_first[s] = malloc((d->dr_n[s] + 1) * sizeof *d->dr_first[s]);
        if (!d->dr[s] || !d->dr_stamp[s] || !d->dr_first[s])
            return false;
        memset(d->dr_first[s], 0xff, (d->dr_n[s] + 1) * sizeof *d->dr_first[s]);
        if (s == ISA_SEG_ARENA)
            for (uint64_t q = 0; q < d->dr_n[s]; q++)
                d->dr[s][q] = gd_never;
        else
            seed_output(d, g, s - ISA_SEG_IO0 - g->ninputs, s);
    }
    return true;
}

/* Frees what gd_init allocated. */
static void gd_free(Gd *d)
{
    for (uint32_t s = 0; d->dr && s < d->nseg; s++) {
        free(d->dr[s]);
        free(d->dr_stamp[s]);
        free(d->dr_first[s]);
    }
    free(d->dr_first);
    free(d->dr);
    free(d->dr_stamp);
    free(d->dr_n);
    free(d->dr_g);
    free(d->lx);
    free(d->lx_gen);
    free(d->rowdem);
    free(d->rowt);
}

/* The DRAM byte range a LOAD's tile spans (bounding). */
static void dram_range(const SpyDma *x, int64_t *lo, int64_t *hi)
{
    Acc a;
    acc_dma(&a, x, true);
    *lo = a.sp.lo;
    *hi = a.sp.lo + a.sp.ext;
}

typedef struct {                     /* a ring LOAD in the order of ring_index */
    uint32_t seg;
    int64_t lo, hi;                  /* its DRAM range */
    int64_t pmax;                    /* the largest hi from its segment's first key to it */
    uint64_t q;                      /* its index in Rings.at */
} RingKey;

typedef struct {                     /* the LOADs over the ring of one kernel */
    uint64_t n, cap;
    uint64_t *at;                    /* their CODE indices */
    int64_t *lo, *hi;                /* their DRAM ranges (dram_range), made once */
    RingKey *key;                    /* sorted by segment and lo (ring_index): the loads
                                        meeting a range are found without a scan of all
                                        (a resize by run-time indices has tens of
                                        thousands a kernel, every LOAD asking) */
} Rings;

/* Lists kernel k's LOADs over the ring (programs kp) into r. */
static void list_rings(Rings *r, const SpyInsn *code, const SpyProgramDesc *kp, uint32_t cores)
{
    r->n = 0;
    for (uint32_t j = 0; j < cores; j++)
        for (uint64_t i = kp[j].first_insn; i < kp[j].first_insn + kp[j].ninsns; i++) {
            if (code[i].opcode != ISA_LOAD || !(code[i].dma.flags & ISA_F_RING))
                continue;
            if (r->n == r->cap) {
                r->cap = r->cap ? 2 * r->cap : 64;
                uint64_t *p = realloc(r->at, r->cap * sizeof *p);
                IR_ASSERT(p);
                r->at = p;
                int64_t *lo = realloc(r->lo, r->cap * sizeof *lo);
                IR_ASSERT(lo);
                r->lo = lo;
                int64_t *hi = realloc(r->hi, r->cap * sizeof *hi);
                IR_ASSERT(hi);
                r->hi = hi;
                RingKey *key = realloc(r->key, r->cap * sizeof *key);
                IR_ASSERT(key);
                r->key = key;
            }
            dram_range(&code[i].dma, &r->lo[r->n], &r->hi[r->n]);
            r->at[r->n++] = i;
        }
}

static int ring_key_cmp(const void *a, const void *b)
{
    const RingKey *x = a, *y = b;
    if (x->seg != y->seg)
        return x->seg < y->seg ? -1 : 1;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->q < y->q ? -1 : x->q > y->q;
}

/* Sorts the listed ring LOADs by segment and lo into r->key, with running maxima of hi. */
static void ring_index(Rings *r, const SpyInsn *code)
{
    for (uint64_t q = 0; q < r->n; q++)
        r->key[q] = (RingKey){code[r->at[q]].dma.seg, r->lo[q], r->hi[q], 0, q};
    if (r->n)
        qsort(r->key, r->n, sizeof *r->key, ring_key_cmp);
    for (uint64_t p = 0; p < r->n; p++) {
        RingKey *k = &r->key[p];
        k->pmax = p && r->key[p - 1].seg == k->seg && r->key[p - 1].pmax > k->hi
                      ? r->key[p - 1].pmax : k->hi;
    }
}

/* The first key position at or after (seg, lo) in the order of ring_index. */
static uint64_t ring_at(const Rings *r, uint32_t seg, int64_t lo)
{
    uint64_t a = 0, b = r->n;
    while (a < b) {
        uint64_t m = a + (b - a) / 2;
        const RingKey *k = &r->key[m];
        if (k->seg < seg || (k->seg == seg && k->lo < lo))
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* Scans, downwards, the keys of segment seg that start before hi, while the running
 * maximum of their ends says one may still reach past lo; a key meets [lo, hi) when its
 * own end does (RING_MEETS). */
#define RING_SCAN(r, seg, lo, hi, p)                                                     \
    for (uint64_t p##_b = ring_at((r), (seg), INT64_MIN), p = ring_at((r), (seg), (hi));  \
         p-- > p##_b && (r)->key[p].pmax > (lo);)
#define RING_MEETS(r, p, lo) ((r)->key[p].hi > (lo))

/* Whether the DRAM LOAD in may send its tile over the ring (a listed LOAD over the
 * ring reads DRAM it reads). */
static bool is_source(const SpyInsn *in, const Rings *r)
{
    if (!r->n || in->opcode != ISA_LOAD || (in->dma.flags & ISA_F_RING))
        return false;
    int64_t lo, hi;
    dram_range(&in->dma, &lo, &hi);
    RING_SCAN(r, in->dma.seg, lo, hi, p)
        if (RING_MEETS(r, p, lo))
            return true;
    return false;
}

/* The demand under which row r of an instruction with guard g runs: its skip
 * conditions' thresholds and, with a row clamp, the size under which it leaves row r
 * out; -1 for the other symbols. */
static Dem dem_of(const SpyGuard *g, uint32_t r)
{
    Dem x = gd_always;
    for (int i = 0; i < (g->n & ISA_GUARD_NMASK); i++)
        x.t[g->sym[i]] = (int32_t)g->lo[i];
    if (g->n & ISA_GUARD_ROWS) {
        int64_t f = ((int64_t)r + g->lo[2]) / g->lo[1];
        x.t[g->sym[1]] = f > INT32_MAX - 1 ? INT32_MAX - 1 : (int32_t)f;
    }
    return x;
}

/* Whether LOADs a and b move the same DRAM tile (so row r of one is row r of the
 * other). */
static bool same_tile(const SpyDma *a, const SpyDma *b)
{
    return a->seg == b->seg && a->dram_off == b->dram_off && a->esize == b->esize &&
           (a->flags & ISA_F_F32) == (b->flags & ISA_F_F32) &&
           !memcmp(a->dims, b->dims, sizeof a->dims) &&
           !memcmp(a->dram_stride, b->dram_stride, sizeof a->dram_stride);
}

/* A ring source in (rows rd, its own demand per row) whose every receiver moves its
 * tile: per row the meet of its own demand and the receivers' (the sizes at which each
 * runs that row); a row clamp that fits them, over the skip guard of their meet, with
 * its reads made row by row. False (nothing done) when no clamp fits. */
static bool source_clamp(Gd *d, SpyInsn *in, Dem *rd, const SpyInsn *code, const Rings *r,
                         int64_t lo, int64_t hi)
{
    uint32_t e = spy_insn_rows(in);
    RING_SCAN(r, in->dma.seg, lo, hi, p) {
        if (!RING_MEETS(r, p, lo))
            continue;
        const SpyInsn *rc = &code[r->at[r->key[p].q]];
        SpyGuard rg = spy_insn_guard(rc);
        if (!same_tile(&rc->dma, &in->dma) || !rg.n)
            return false;                    /* a receiver runs whole at some size */
        for (uint32_t j = 0; j < e; j++) {
            Dem x = dem_of(&rg, j);
            dem_min(&rd[j], &x);
        }
    }
    Dem m = gd_never, eff;
    for (uint32_t j = 0; j < e; j++)
        dem_min(&m, &rd[j]);
    SpyGuard g = guard_of(d, &m, false, &eff);
    GdRowAcc ra;
    if (!gd_rows_fit(d, rd, e, &g))
        return false;
    gd_row_acc(in, &ra);
    memcpy(in->raw + ISA_GUARD_OFF, &g, sizeof g);
    gd_row_reads(d, in, &ra, &g, NULL, -1);
    return true;
}

typedef struct {                     /* receivers_meet of one DRAM range */
    uint32_t seg;                    /* UINT32_MAX: an empty slot */
    int64_t lo, hi;
    Dem m;
} RecvSlot;

typedef struct {                     /* receivers_meet's results in one kernel, by range */
    RecvSlot *slot;                  /* open addressing; NULL: none kept (no memory) */
    uint64_t mask;
} RecvMemo;

/* An empty memo with room for the ranges of kernel k's DRAM LOADs (programs kp). */
static RecvMemo recv_memo_new(const SpyInsn *code, const SpyProgramDesc *kp, uint32_t cores)
{
    uint64_t n = 0, cap = 16;
    for (uint32_t j = 0; j < cores; j++)
        for (uint64_t i = kp[j].first_insn; i < kp[j].first_insn + kp[j].ninsns; i++)
            n += code[i].opcode == ISA_LOAD && !(code[i].dma.flags & ISA_F_RING);
    while (cap < 2 * n)
        cap *= 2;
    RecvMemo m = {malloc(cap * sizeof *m.slot), cap - 1};
    for (uint64_t i = 0; m.slot && i < cap; i++)
        m.slot[i].seg = UINT32_MAX;
    return m;
}

/* The meet of the demands under which the ring LOADs meeting DRAM range [lo, hi) of
 * segment seg run their row 0 (gd_never: none does), remembered per range: a tile that
 * every item of a kernel reads (a dilated convolution over a small map) has a source
 * on many cores and hundreds of receivers, which each source would otherwise scan. The
 * receivers' guards stay as they are while ring_sources runs (it sets the sources', and
 * a source is never a LOAD over the ring), so a range's result holds for the kernel. */
static Dem receivers_meet(RecvMemo *memo, const Rings *r, const SpyInsn *code, uint32_t seg,
                          int64_t lo, int64_t hi)
{
    RecvSlot *s = NULL;
    if (memo->slot) {
        uint64_t h = ((uint64_t)lo * 0x9e3779b97f4a7c15ull) ^
                     ((uint64_t)hi * 0xc2b2ae3d27d4eb4full) ^ seg;
        for (h ^= h >> 29;; h++) {              /* room for every source: ends */
            s = &memo->slot[h & memo->mask];
            if (s->seg == UINT32_MAX)
                break;
            if (s->seg == seg && s->lo == lo && s->hi == hi)
                return s->m;
        }
    }
    Dem m = gd_never;
    RING_SCAN(r, seg, lo, hi, p)
        if (RING_MEETS(r, p, lo)) {
            SpyGuard rg = spy_insn_guard(&code[r->at[r->key[p].q]]);
            Dem x = rg.n ? dem_of(&rg, 0) : gd_always;   /* its row 0 runs */
            dem_min(&m, &x);
        }
    if (s)
        *s = (RecvSlot){seg, lo, hi, m};
    return m;
}

/* Final guards of kernel k's ring sources: a source is skipped only where every LOAD
 * over the ring that may receive its tile is (isa.md "LOAD / STORE": a tile received
 * was sent), so its guard is met with theirs; then its DRAM read is made under it. */
static void ring_sources(Gd *d, SpyInsn *code, const SpyProgramDesc *kp, uint32_t cores,
                         const Rings *r)
{
    RecvMemo memo = recv_memo_new(code, kp, cores);
    for (uint32_t j = 0; j < cores; j++)
        for (uint64_t i = kp[j].first_insn; i < kp[j].first_insn + kp[j].ninsns; i++) {
            SpyInsn *in = &code[i];
            if (!is_source(in, r))
                continue;
            SpyGuard g = spy_insn_guard(in);
            Dem m = g.n ? dem_of(&g, 0) : gd_always, eff = gd_always;
            int64_t lo, hi;
            dram_range(&in->dma, &lo, &hi);
            Dem *rd = d->srcrows[i];
            d->srcrows[i] = NULL;
            bool done = rd && source_clamp(d, in, rd, code, r, lo, hi);
            free(rd);
            if (done)
                continue;
            if (g.n) {
                Dem x = receivers_meet(&memo, r, code, in->dma.seg, lo, hi);
                dem_min(&m, &x);                                   /* the longest */
            }
            memset(&g, 0, sizeof g);
            if (!is_always(&m))
                g = guard_of(d, &m, false, &eff);
            memcpy(in->raw + ISA_GUARD_OFF, &g, sizeof g);
            Acc a;
            acc_dma(&a, &in->dma, true);
            Visit gen = {.d = d, .op = OP_GEN, .dem = &eff};
            gd_visit(&gen, &a);
        }
    free(memo.slot);
}

/* Records, per tracked DRAM granule, the first kernel that writes it (STORE, SCATTER). */
static void first_writers(Gd *d, const SpyInsn *code, const SpyProgramDesc *progs,
                          uint32_t cores, uint32_t nk)
{
    for (uint32_t k = nk; k-- > 0;)
        for (uint32_t j = 0; j < cores; j++) {
            const SpyProgramDesc *p = &progs[(size_t)k * cores + j];
            for (uint64_t i = p->first_insn; i < p->first_insn + p->ninsns; i++) {
                Acc a;
                if (code[i].opcode == ISA_STORE) {
                    acc_dma(&a, &code[i].dma, true);
                } else if (code[i].opcode == ISA_SCATTER) {
                    const SpyScatter *x = &code[i].scatter;
                    int64_t len[2] = {x->bound, x->row_elems}, st[2] = {x->row_stride, 1};
                    acc_make(&a, x->seg, x->dram_off, x->esize, 2, len, st);
                } else {
                    continue;
                }
                Visit v = {.d = d, .op = OP_FIRST, .kernel = k};
                gd_visit(&v, &a);
            }
        }
}

/* The first of the nk kernels (programs progs) with a SELECT whose mask d knows;
 * UINT32_MAX when none. */
static uint32_t first_mask_kernel(const Gd *d, const SpyProgramDesc *progs, uint32_t cores,
                                  uint32_t nk)
{
    for (uint32_t q = 0; d->mask && q < nk * cores; q++)
        for (uint64_t i = progs[q].first_insn; i < progs[q].first_insn + progs[q].ninsns; i++)
            if (d->mask[i])
                return q / cores;
    return UINT32_MAX;
}

/* Whether some tracked DRAM byte that kernel k or one before it writes is needed at some
 * sizes only, or one of those kernels has a SELECT with a known mask: else no
 * instruction from k back can get a guard (what it writes is needed at every size or
 * never, and so is, in turn, what it reads), and the pass can stop. */
static bool any_conditional(const Gd *d, uint32_t k)
{
    if (k >= d->mask_kmin)
        return true;
    for (uint32_t s = 0; s < d->nseg; s++)
        for (uint64_t q = 0; d->dr[s] && q < d->dr_n[s]; q++) {
            const Dem *x = &d->dr[s][q];
            if (d->dr_first[s][q] > k)
                continue;
            for (int c = 0; c < GD_NS; c++)
                if (x->t[c] >= 0 && x->t[c] != NEVER)
                    return true;
        }
    return false;
}

bool cg_guards(CgEmit *e, const SpyProgramDesc *progs)
{
    IrGraph *g = e->g;
    uint32_t cores = e->t->cores, nk = g->plan->nkernels;
    if (!g->nsymdims || e->n == 0)
        return false;
    Gd d;
    Rings rings = {0, 0, NULL, NULL, NULL, NULL};
    bool any = false;
    if (!gd_init(&d, e)) {
        gd_free(&d);
        return false;                            /* no memory: no guards (all run) */
    }
    d.code = e->code;
    d.mask = gd_masks(e, progs, d.ns);
    d.mask_kmin = first_mask_kernel(&d, progs, cores, nk);
    d.srcrows = calloc(e->n, sizeof *d.srcrows);
    first_writers(&d, e->code, progs, cores, nk);
    for (uint32_t k = nk; k-- > 0;) {
        const SpyProgramDesc *kp = &progs[(size_t)k * cores];
        if (!any_conditional(&d, k) || d.work > GD_WORK_MAX) {  /* nothing more to find, */
                                                                /* or the budget spent */
            for (uint32_t q = 0; q < (k + 1) * cores; q++)
                for (uint64_t i = progs[q].first_insn; i < progs[q].first_insn + progs[q].ninsns;
                     i++)
                    memset(e->code[i].raw + ISA_GUARD_OFF, 0, sizeof(SpyGuard));
            break;
        }
        bool force = kernel_clash(&d, e->code, kp, cores, k);
        list_rings(&rings, e->code, kp, cores);
        ring_index(&rings, e->code);
        for (uint32_t j = 0; j < cores; j++) {
            d.gen++;
            for (uint64_t i = kp[j].first_insn + kp[j].ninsns; i-- > kp[j].first_insn;)
                step(&d, &e->code[i], force, is_source(&e->code[i], &rings));
        }
        ring_sources(&d, e->code, kp, cores, &rings);
        for (uint32_t j = 0; j < cores; j++)
            for (uint64_t i = kp[j].first_insn; i < kp[j].first_insn + kp[j].ninsns; i++)
                any |= e->code[i].raw[ISA_GUARD_OFF] != 0;
        if (!force) {                            /* else its reads may follow them */
            int64_t lo, hi;
            arena_out(e, &g->plan->kernels[k], &lo, &hi);
            free_stores(&d, e->code, kp, cores, lo, hi);
        }
    }
    gd_masks_free(d.mask, e->n);
    for (uint64_t i = 0; d.srcrows && i < e->n; i++)
        free(d.srcrows[i]);
    free(d.srcrows);
    free(rings.at);
    free(rings.lo);
    free(rings.hi);
    free(rings.key);
    gd_free(&d);
    return any;
}
