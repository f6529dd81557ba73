/* rt_stitch.c: the programs of a matrix-product kernel run as a few large products.
 *
 * spyrec divides a kernel's product C = A B (a 1 x 1 convolution, a linear layer) over
 * the 32 cores as a grid of blocks: each core LOADs its rows of A and its columns of
 * B, multiplies, runs the epilogue (bias, residual, activation) and STOREs its block
 * of C. Tiles the card's scratchpad holds are small for the host: resnet50's 1 x 1
 * convolutions of 64 and 128 channels went through rows of 224 or 112 pixels (1 KiB
 * or less, 3 to 12 KiB apart in DRAM), each a stream of its own for the host's
 * prefetchers, and a block of 16 output channels fills one vector of the channel-lane
 * kernel, one broadcast an FMA. Run as one product over many blocks, the same rows
 * are long runs and 64 channels share each broadcast.
 *
 * At load (rt_stitch_model), a kernel is stitched when its active programs are one
 * program apart from DRAM offsets: the same instructions, LOADs and STOREs aside from
 * their offsets (and the ring flag, a timing attribute), made of LOADs (of whole rows,
 * each row contiguous in DRAM), one F32 MATMUL (no window, no accumulation into C)
 * whose result goes straight to its STORE's DRAM (rt_prep.c RT_PH_EPI), its epilogue
 * a chain the vector kernels run on their tiles (rt_fuse.c post form), and the final
 * BARRIER; and when those offsets put its blocks on a grid: the program of block
 * (i, j) reads rows i * m.. of A, the same one row block after the other in DRAM, and
 * columns j * n.. of B, and writes that block of C, its epilogue operands (a scalar per
 * row: a bias; a row: a residual) the same way. Each operand is then one matrix in
 * DRAM (row r at off + r * pitch, contiguous), whatever pieces the LOADs moved it in.
 * Kernels whose C may overlap what they read, or whose operands lie in caller buffers
 * that C could alias, stay as they are.
 *
 * At run time (rt_session.c), a stitched kernel's schedule entry hands out items
 * (rt_stitch_items, rt_stitch_box) instead of programs: rectangles of whole blocks,
 * whole rows of blocks where there are enough of them, each one MATMUL through
 * rt_matmul_src with the epilogue on its tiles (rt_stitch_run). Every element of C
 * accumulates the same products in increasing k and goes through the same epilogue
 * operations as in its program: the same bits. No LX is read or written; modelled
 * time is computed from the bundle and does not change. A session that poisons LX
 * (a debugging aid that checks programs) runs the programs instead, as does a host
 * without the vector kernels (the portable MATMUL computes C in LX).
 */
#include <stdlib.h>
#include <string.h>

#include "rt_exec.h"
#include "rt_model.h"

#define ST_MAX_LOADS 64      /* LOADs of a program at most (a mask of them per operand) */

/* Rows that LOADs put in LX: row i at lx + i * lrs, from DRAM dram + i * drs, rowb
 * bytes each, contiguous on both sides; the LOADs (a bit per LOAD of the program, in
 * order: insns) one LOAD, or one-row LOADs that continue each other in LX and DRAM (a
 * row that spyrec split over the ring's cores). */
typedef struct {
    int64_t lx, lrs, dram, drs;
    uint32_t rows, rowb, seg;
    uint64_t insns;
} StPiece;

/* What the template program's instructions say (st_parse). */
typedef struct {
    const SpyInsn *code;
    const RtPrep *prep;
    uint32_t n;
    uint32_t imm, istore;    /* the MATMUL, the STORE */
    uint32_t chain;          /* the chain's first VEC, or UINT32_MAX */
    StPiece pc[ST_MAX_LOADS];   /* the pieces, LOADs joined */
    int npc;
    uint32_t ild[ST_MAX_LOADS]; /* the instruction of each LOAD */
    int nld;
} StTemplate;

/* An operand as the template has it: where its rows are in DRAM (op), the pieces that
 * put them in LX (mask), and whether a block's row (row) and column (col) shift it. */
typedef struct {
    RtStOp op;
    uint64_t mask;
    bool row, col;
} StOperand;

/* The rows of a LOAD or STORE x (LX at one side, DRAM at the other) into *p; false when
 * they are not rows of contiguous 4-byte elements. */
static bool st_piece(const SpyDma *x, StPiece *p) {
    RtCopyPlan cp;
    bool load = x->opcode == ISA_LOAD;
    if (x->esize != 4 || (x->flags & ~(uint8_t)ISA_F_RING) || x->ndim > ISA_MAX_DIMS ||
        !rt_plan_copy(&cp, x->dims, load ? x->dram_stride : x->lx_stride,
                      load ? x->lx_stride : x->dram_stride, 4) || cp.n > 2)
        return false;
    int64_t *ds = load ? cp.ss : cp.ds, *ls = load ? cp.ds : cp.ss;
    int in = cp.n - 1;
    if (ds[in] != 4 || ls[in] != 4 || cp.dim[in] > UINT32_MAX / 4)
        return false;
    *p = (StPiece){x->lx, 0, x->dram_off, 0, 1, (uint32_t)cp.dim[in] * 4, x->seg, 0};
    if (cp.n == 2) {
        if (ds[0] < p->rowb || ls[0] < p->rowb || cp.dim[0] > UINT32_MAX)
            return false;
        p->rows = (uint32_t)cp.dim[0], p->lrs = ls[0], p->drs = ds[0];
    }
    return true;
}

/* The DRAM byte of LX byte a through piece p when the w bytes from a lie in one of its
 * rows; -1 when they do not. */
static int64_t st_through(const StPiece *p, int64_t a, uint32_t w) {
    int64_t rel = a - p->lx, i = 0;
    if (rel < 0)
        return -1;
    if (p->rows > 1) {
        i = rel / p->lrs;
        rel -= i * p->lrs;
        if (i >= p->rows)
            return -1;
    }
    return rel + w <= p->rowb ? p->dram + i * p->drs + rel : -1;
}

/* Where the template's pieces put the rows x w bytes from LX lx (lrs apart) in DRAM:
 * o->op (row r at off + r * pitch; pitch 0 for one row, or for one row read by all:
 * lrs 0, a bias broadcast over the rows) and o->mask; false when a row is not inside
 * one piece's row, the pieces are in different segments or the rows are not evenly
 * spaced. */
static bool st_map(const StTemplate *t, int64_t lx, uint32_t rows, int64_t lrs, uint32_t w,
                   StOperand *o) {
    int q = 0;
    o->mask = 0;
    for (uint32_t r = 0; r < rows; r++) {
        int64_t a = lx + (int64_t)r * lrs, d = st_through(&t->pc[q], a, w);
        for (int tries = 0; d < 0 && tries < t->npc; tries++) {
            q = (q + 1) % t->npc;
            d = st_through(&t->pc[q], a, w);
        }
        if (d < 0 || (o->mask && t->pc[q].seg != o->op.seg))
            return false;
        if (r == 0)
            o->op = (RtStOp){t->pc[q].seg, d, 0};
        else if (r == 1)
            o->op.pitch = d - o->op.off;
        else if (d != o->op.off + (int64_t)r * o->op.pitch)
            return false;
        o->mask |= t->pc[q].insns;
    }
    return rows > 0 && (rows == 1 || o->op.pitch > 0 || (lrs == 0 && o->op.pitch == 0));
}

/* The template's structure into t: LOADs, the MATMUL planned RT_PH_EPI, LOADs, its chain
 * (RT_PH_FUSE with the STORE) or the STORE, then nothing but the BARRIER. */
static bool st_parse(StTemplate *t) {
    uint32_t i = 0;
    t->npc = 0;
    t->chain = UINT32_MAX;
    while (i < t->n && t->code[i].opcode == ISA_LOAD)
        i++;
    if (i >= t->n)
        return false;
    const SpyMatmul *mm = &t->code[i].mm;
    if (mm->opcode != ISA_MATMUL || mm->dtype != ISA_DT_F32 ||
        mm->out_dtype != ISA_DT_F32 || mm->flags || !mm->m || !mm->n || !mm->k ||
        t->prep[i].how != RT_PH_EPI)
        return false;
    t->imm = i;
    uint32_t j = i + t->prep[i].run;
    if (t->prep[i].kinds) {
        if (j >= t->n || t->prep[j].how != RT_PH_FUSE || !t->prep[j].kinds)
            return false;
        t->chain = j;
        t->istore = j + t->prep[j].run - 1;
    } else {
        t->istore = j;
    }
    if (t->istore >= t->n || t->code[t->istore].opcode != ISA_STORE)
        return false;
    for (uint32_t q = i + 1; q < j; q++)
        if (t->code[q].opcode != ISA_LOAD)
            return false;
    for (uint32_t q = t->istore + 1; q < t->n; q++)
        if (t->code[q].opcode != ISA_BARRIER && t->code[q].opcode != ISA_NOP)
            return false;
    StPiece ld[ST_MAX_LOADS];
    t->nld = 0;
    for (uint32_t q = 0; q < j; q++) {
        if (q == i)
            continue;
        if (t->nld == ST_MAX_LOADS || !st_piece(&t->code[q].dma, &ld[t->nld]))
            return false;
        ld[t->nld].insns = 1ull << t->nld;
        t->ild[t->nld++] = q;
    }
    for (int a = 0; a < t->nld; a++)          /* LOADs apart in LX: one writer a byte */
        for (int b = a + 1; b < t->nld; b++) {
            int64_t plo, phi, rlo, rhi;
            rt_span2(ld[a].rows, ld[a].lrs, ld[a].rowb, 1, 1, &plo, &phi);
            rt_span2(ld[b].rows, ld[b].lrs, ld[b].rowb, 1, 1, &rlo, &rhi);
            if (ld[a].lx + plo < ld[b].lx + rhi && ld[b].lx + rlo < ld[a].lx + phi)
                return false;
        }
    for (int a = 0; a < t->nld; a++) {        /* one-row LOADs that continue a piece */
        StPiece *p = t->npc ? &t->pc[t->npc - 1] : NULL;
        if (p && p->rows == 1 && ld[a].rows == 1 && ld[a].seg == p->seg &&
            ld[a].lx == p->lx + p->rowb && ld[a].dram == p->dram + p->rowb &&
            (uint64_t)p->rowb + ld[a].rowb <= UINT32_MAX) {
            p->rowb += ld[a].rowb;
            p->insns |= ld[a].insns;
        } else {
            t->pc[t->npc++] = ld[a];
        }
    }
    return t->npc > 0;
}

/* Whether instructions a and b are the same but for a LOAD's or STORE's DRAM offset and
 * ring flag. */
static bool st_same(const SpyInsn *a, const SpyInsn *b) {
    SpyInsn x = *a, y = *b;
    if (x.opcode == ISA_LOAD || x.opcode == ISA_STORE) {
        x.dma.dram_off = y.dma.dram_off = 0;
        x.dma.flags &= (uint8_t)~ISA_F_RING;
        y.dma.flags &= (uint8_t)~ISA_F_RING;
    }
    return memcmp(&x, &y, sizeof x) == 0;
}

/* The shift of operand o's DRAM in program code from the template's (the same for
 * every piece of it), into *d; false when its pieces moved apart. */
static bool st_shift(const StTemplate *t, const SpyInsn *code, const StOperand *o, int64_t *d) {
    bool first = true;
    for (int q = 0; q < t->nld; q++) {
        if (!(o->mask >> q & 1))
            continue;
        int64_t s = code[t->ild[q]].dma.dram_off - t->code[t->ild[q]].dma.dram_off;
        if (!first && s != *d)
            return false;
        *d = s, first = false;
    }
    return !first;
}

/* Whether operand o (rows x w over the grid) stays clear of C (rows x cw): never the
 * same bytes, and not two caller buffers (which may be one memory). */
static bool st_clear(const spy_model *m, const RtStitch *st, const RtStOp *o, uint64_t rows,
                     uint64_t w) {
    uint64_t crows = (uint64_t)st->mb * st->mm.m, cw = (uint64_t)st->nb * st->mm.n * 4;
    if (m->segs[o->seg].kind == SPY_SEGK_IO && m->segs[st->c.seg].kind == SPY_SEGK_IO)
        return false;
    if (o->seg != st->c.seg)
        return true;
    int64_t alo, ahi, clo, chi;      /* byte spans over the whole grid */
    rt_span2(rows, o->pitch, w, 1, 1, &alo, &ahi);
    rt_span2(crows, st->c.pitch, cw, 1, 1, &clo, &chi);
    return ahi + o->off <= clo + st->c.off || chi + st->c.off <= alo + o->off;
}

/* The template's operands: A, B, C (through the STORE) and the chain's, into ops[0..);
 * the chain in post form into st. Returns their number, 0 when one does not map. */
static int st_operands(StTemplate *t, RtStitch *st, StOperand *ops) {
    const SpyMatmul *mm = &t->code[t->imm].mm;
    StTemplate s = *t;   /* C: the rows the STORE stores (C's, or the chain's last region) */
    s.npc = 1;
    if (!st_map(t, mm->a, mm->m, (int64_t)mm->lda * 4, mm->k * 4, &ops[0]) ||
        !st_map(t, mm->b, mm->k, (int64_t)mm->ldb * 4, mm->n * 4, &ops[1]) ||
        !st_piece(&t->code[t->istore].dma, &s.pc[0]) ||
        !st_map(&s, s.pc[0].lx, mm->m, s.pc[0].rows > 1 ? s.pc[0].lrs : (int64_t)mm->n * 4,
                mm->n * 4, &ops[2]))
        return 0;
    ops[0].row = true, ops[0].col = false;
    ops[1].row = false, ops[1].col = true;
    ops[2].row = true, ops[2].col = true;
    int n = 3;
    st->npost = 0;
    if (t->chain == UINT32_MAX)
        return n;
    uint32_t ylx[RT_POST_MAX], x;
    int64_t xrs;
    if (!rt_fuse_post_lx(t->code + t->chain, t->prep + t->chain, &st->post, ylx, &x, &xrs) ||
        x != mm->c || xrs != (int64_t)mm->ldc * 4)
        return 0;
    st->npost = st->post.n;
    for (int i = 0; i < st->post.n; i++) {
        RtPostOp *o = &st->post.op[i];
        st->yop[i] = -1;
        if (ylx[i] == UINT32_MAX || o->kind == RT_PO_NONE)
            continue;
        bool row = o->kind == RT_PO_ROW;
        if (o->yrs < 0 || !st_map(t, ylx[i], mm->m, o->yrs, row ? mm->n * 4 : 4, &ops[n]))
            return 0;
        ops[n].row = true, ops[n].col = row;
        st->yop[i] = (int8_t)(n - 3);
        n++;
    }
    return n;
}

/* The shift of operand o in block (i, j) from its place in block (0, 0) into *e; false
 * when it overflows (a bundle's offsets are anything the verifier lets through). */
static bool st_expect(const RtStitch *st, const StOperand *o, int64_t i, int64_t j,
                      int64_t *e) {
    int64_t r = 0, c = 0;
    if (o->row && (__builtin_mul_overflow(i, (int64_t)st->mm.m, &r) ||
                   __builtin_mul_overflow(r, o->op.pitch, &r)))
        return false;
    if (o->col && __builtin_mul_overflow(j, (int64_t)st->mm.n * 4, &c))
        return false;
    return !__builtin_add_overflow(r, c, e);
}

/* The grid of the kernel's na programs pds (the template first) into st: each
 * program's block from the shifts d of its A and B against the template's, every block
 * taken once, every operand where its block says; then block (0, 0)'s operands. */
static bool st_grid(const spy_model *m, const StTemplate *t, const StOperand *ops, int nops,
                    const SpyProgramDesc *const *pds, uint32_t na, RtStitch *st) {
    int64_t (*d)[RT_POST_MAX + 3] = calloc(na, sizeof *d);
    int64_t *bi = calloc(na, sizeof *bi), *bj = calloc(na, sizeof *bj);
    int64_t imin = 0, jmin = 0, imax = 0, jmax = 0;
    int64_t rb = (int64_t)st->mm.m * ops[0].op.pitch, cb = (int64_t)st->mm.n * 4;
    bool ok = d && bi && bj;
    for (uint32_t p = 0; ok && p < na; p++) {
        const SpyInsn *code = m->code + pds[p]->first_insn;
        ok = pds[p]->ninsns == t->n;
        for (uint32_t q = 0; ok && q < t->n; q++)
            ok = st_same(&code[q], &t->code[q]);
        for (int o = 0; ok && o < nops; o++) {
            if (o == 2)
                d[p][o] = code[t->istore].dma.dram_off - t->code[t->istore].dma.dram_off;
            else
                ok = st_shift(t, code, &ops[o], &d[p][o]);
        }
        ok = ok && (rb ? d[p][0] % rb == 0 : d[p][0] == 0) && d[p][1] % cb == 0;
        if (!ok)
            break;
        bi[p] = rb ? d[p][0] / rb : 0, bj[p] = d[p][1] / cb;
        imin = bi[p] < imin ? bi[p] : imin, imax = bi[p] > imax ? bi[p] : imax;
        jmin = bj[p] < jmin ? bj[p] : jmin, jmax = bj[p] > jmax ? bj[p] : jmax;
    }
    ok = ok && imax - imin < na && jmax - jmin < na &&
         (uint64_t)(imax - imin + 1) * (uint64_t)(jmax - jmin + 1) == na;
    st->mb = (uint32_t)(imax - imin + 1), st->nb = (uint32_t)(jmax - jmin + 1);
    st->cell = ok ? malloc(na * sizeof *st->cell) : NULL;
    ok = ok && st->cell;
    for (uint32_t c = 0; ok && c < na; c++)
        st->cell[c] = UINT32_MAX;
    for (uint32_t p = 0; ok && p < na; p++) {
        int64_t i = bi[p] - imin, j = bj[p] - jmin;
        uint32_t c = (uint32_t)(i * st->nb + j);
        ok = st->cell[c] == UINT32_MAX;
        st->cell[c] = p;
        for (int o = 0; ok && o < nops; o++) {   /* shifted as its block says */
            int64_t e = 0, e0 = 0;
            ok = st_expect(st, &ops[o], i, j, &e) &&
                 st_expect(st, &ops[o], bi[0] - imin, bj[0] - jmin, &e0) &&
                 d[p][o] - e == d[0][o] - e0;
        }
    }
    uint64_t cw = (uint64_t)st->nb * st->mm.n * 4;
    ok = ok && (st->mb * st->mm.m == 1 || (uint64_t)ops[2].op.pitch >= cw); /* C's rows apart */
    for (int o = 0; ok && o < nops; o++) {     /* block (0, 0)'s operands */
        RtStOp v = ops[o].op;
        int64_t e0 = 0;
        ok = st_expect(st, &ops[o], bi[0] - imin, bj[0] - jmin, &e0);
        v.off += d[0][o] - e0;
        ok = ok && v.off >= 0 && v.pitch % 4 == 0;
        *(o == 0 ? &st->a : o == 1 ? &st->b : o == 2 ? &st->c : &st->y[o - 3]) = v;
    }
    free(d), free(bi), free(bj);
    return ok;
}

/* Whether no operand of st (ops, over the whole grid) reads bytes its C writes. */
static bool st_apart(const spy_model *m, const RtStitch *st, int nops) {
    uint64_t mr = (uint64_t)st->mb * st->mm.m, nw = (uint64_t)st->nb * st->mm.n * 4;
    for (int o = 0; o < nops; o++) {
        if (o == 2)
            continue;
        const RtStOp *v = o == 0 ? &st->a : o == 1 ? &st->b : &st->y[o - 3];
        uint64_t rows = o == 1 ? st->mm.k : mr;
        uint64_t w = o == 0 ? (uint64_t)st->mm.k * 4 : o == 1 ? nw : 0;
        if (o >= 3)           /* a scalar per row, or a row */
            for (int i = 0; i < st->npost; i++)
                if (st->yop[i] == o - 3)
                    w = st->post.op[i].kind == RT_PO_ROW ? nw : 4;
        if (!st_clear(m, st, v, rows, w))
            return false;
    }
    return true;
}

/* Kernel k stitched (see the top of the file), or NULL. */
static RtStitch *st_kernel(const spy_model *m, uint32_t k) {
    uint32_t a = m->active_first[k], na = m->active_first[k + 1] - a;
    if (na < 2)
        return NULL;
    const SpyProgramDesc **pds = malloc(na * sizeof *pds);
    RtStitch *st = calloc(1, sizeof *st);
    StTemplate *t = malloc(sizeof *t);
    StOperand ops[RT_POST_MAX + 3];
    bool ok = pds && st && t;
    for (uint32_t p = 0; ok && p < na; p++)
        pds[p] = &m->programs[m->kernels[k].first_program + m->active[a + p]];
    if (ok) {   /* the plans made at load (rt_prep.c: a chain under rt_fuse_prep's
                 * minimum already planned at any size where C then goes to DRAM) */
        *t = (StTemplate){.code = m->code + pds[0]->first_insn,
                          .prep = m->prep + pds[0]->first_insn, .n = pds[0]->ninsns};
        ok = st_parse(t);
    }
    int nops = 0;
    if (ok) {
        st->mm = t->code[t->imm].mm;
        nops = st_operands(t, st, ops);
        ok = nops > 0 && st_grid(m, t, ops, nops, pds, na, st) && st_apart(m, st, nops);
    }
    if (ok) {
        st->aconst = m->segs[st->a.seg].kind == SPY_SEGK_CONST;
        st->bconst = m->segs[st->b.seg].kind == SPY_SEGK_CONST;
    }
    free(pds), free(t);
    if (!ok && st) {
        free(st->cell);
        free(st);
        st = NULL;
    }
    return st;
}

bool rt_stitch_host(void) {
#if RT_HAVE_X86_KERNELS
    return rt_host_has(RT_HOST_AVX512) || rt_host_has(RT_HOST_AVX2_FMA);
#else
    return false;
#endif
}

void rt_stitch_model(spy_model *m) {
    m->stitch = NULL;
    if (m->guards || !m->active || !rt_stitch_host())
        return;
    m->stitch = calloc(m->nkernels, sizeof *m->stitch);
    for (uint32_t k = 0; m->stitch && k < m->nkernels; k++)
        m->stitch[k] = st_kernel(m, k);
}

void rt_stitch_free(spy_model *m) {
    for (uint32_t k = 0; m->stitch && k < m->nkernels; k++)
        if (m->stitch[k]) {
            free(m->stitch[k]->cell);
            free(m->stitch[k]);
        }
    free(m->stitch);
    m->stitch = NULL;
}

/* Items of st for at least `want` of them (twice the session's threads) where the grid
 * allows: rectangles of r x c blocks (*rows, *cols), whole rows of blocks when there are
 * enough, else each row cut into the fewest equal runs of blocks that make want items.
 * An item takes up to ST_ROWS rows of C: past them the channel-lane kernels give way to
 * the packed ones, slower on the few pixels of a deep layer (mm_tiles: m64 n49 k512
 * 218 GFLOP/s, m128 222, m256 185; m64 n196 k1024 254, m256 243; resnet50's last stage
 * with items of 512 and 1024 rows ran 1.5-1.8x slower than program by program). */
#define ST_ROWS 128
static uint32_t st_cut(const RtStitch *st, uint32_t want, uint32_t *rows, uint32_t *cols) {
    want = want ? want : 1;
    uint32_t cap = st->mm.m >= ST_ROWS ? 1 : ST_ROWS / st->mm.m;
    uint32_t r = (st->mb + want - 1) / want;
    r = r < cap ? r : cap;
    *rows = r = r ? r : 1;
    uint32_t nr = (st->mb + r - 1) / r;
    if (nr >= want) {
        *cols = st->nb;
        return nr;
    }
    uint32_t per = (want + nr - 1) / nr;
    per = per < st->nb ? per : st->nb;
    *cols = (st->nb + per - 1) / per;
    return nr * ((st->nb + *cols - 1) / *cols);
}

uint32_t rt_stitch_items(const RtStitch *st, uint32_t want) {
    uint32_t r, c;
    return st_cut(st, want, &r, &c);
}

/* Item `item` of st: items are numbered column of items after column of items (the
 * row blocks of one run of pixel columns one after the other). A session's thread 0
 * takes items from the front, the others from the back (rt_session.c): so a thread
 * computes every output channel of its own pixels, the blocks that LOAD the same input
 * columns, as rt_affinity.c assumed when it put the programs of the next kernel that
 * read what the front half of this kernel's programs wrote in front of their list
 * (programs loading the same activations are next to each other there). Numbered row
 * after row, thread 0 took the first half of the channels of every pixel, so each
 * thread of the next kernel waited for both and read half of its input from the other
 * core's caches (resnet50, 2 threads: 0.7% slower). */
void rt_stitch_box(const RtStitch *st, uint32_t want, uint32_t item, RtStBox *b) {
    uint32_t r, c;
    st_cut(st, want, &r, &c);
    uint32_t nr = (st->mb + r - 1) / r;       /* items a column of items */
    b->r0 = item % nr * r;
    b->c0 = item / nr * c;
    b->r1 = b->r0 + r < st->mb ? b->r0 + r : st->mb;
    b->c1 = b->c0 + c < st->nb ? b->c0 + c : st->nb;
}

void rt_stitch_run(RtCore *c, const RtStitch *st, const RtStBox *b) {
    SpyMatmul mm = st->mm;
    mm.m = (b->r1 - b->r0) * st->mm.m;
    mm.n = (b->c1 - b->c0) * st->mm.n;
    int64_t r = (int64_t)b->r0 * st->mm.m, col = (int64_t)b->c0 * st->mm.n * 4;
    RtPost post = st->post;
    for (int i = 0; i < st->npost; i++) {
        RtPostOp *o = &post.op[i];
        if (st->yop[i] < 0) {                 /* an immediate, or none */
            o->y = (const uint8_t *)&o->imm;
            continue;
        }
        const RtStOp *y = &st->y[st->yop[i]];
        o->y = c->seg[y->seg] + y->off + r * y->pitch + (o->kind == RT_PO_ROW ? col : 0);
        o->yrs = y->pitch;
    }
    RtEpi e = {NULL, NULL, c->seg[st->c.seg] + st->c.off + r * st->c.pitch + col,
               st->c.pitch, st->npost ? &post : NULL};
    const uint8_t *a = c->seg[st->a.seg] + st->a.off + r * st->a.pitch;
    RtMmSrc s = {a, c->seg[st->b.seg] + st->b.off + col, (size_t)st->a.pitch / 4,
                 (size_t)st->b.pitch / 4, false, true, false, st->bconst, st->aconst, &e, 0};
    if (mm.m > 1)
        s.astable = rt_acache_stable(c, a, ((size_t)(mm.m - 1) * s.lda + mm.k) * 4);
    rt_matmul_src(c, &mm, &s);
}
