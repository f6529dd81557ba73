/* rt_fuse.c: a chain of F32 VECs over one shape computed in one pass (RT_PH_FUSE).
 *
 * An epilogue (bias add, max, min over a MATMUL's result; a bias add, then a residual
 * add into another tile; in bundles of bounded dynamic dimensions, the SELECT that
 * zeroes the padding; an activation through EXP, TANH, ERF or SIGMOID: GELU's five
 * VECs) is a run of VECs of the same rows x cols in which each reads
 * the result of the one before (in place or into another region), its other operand an
 * immediate, a scalar per row or a row of another region, and a SELECT's condition a
 * BOOL row or scalar per row that no VEC of the chain writes. One instruction at a time,
 * or strip-mined, every VEC reads and writes its whole region; here each block of
 * FUSE_BLOCK elements of a row goes through the whole chain in registers and is
 * written once: to the LX regions that a later instruction may touch and, when the
 * STORE right after the run stores the chain's last region row for row, straight to
 * that STORE's DRAM (the STORE is then part of the run). A region that no later
 * instruction of the program touches is not written to LX at all: LX is undefined at
 * the start of the next program (isa.md), so nothing can see the difference. The
 * input and row operands that a pending LOAD (rt_defer.c) holds row for row are read
 * from its DRAM, not copied into LX first (fuse_views). When the chain's input is a
 * MATMUL's whole result and it takes its STORE (rt_exec.c RT_PH_EPI), the MATMUL writes
 * C straight into that STORE's DRAM and the chain runs there in place, a tile at a time
 * as the kernel finishes them (rt_fuse_around, fuse_tile); or, when every VEC has a
 * form the vector kernels run themselves (post_make), as each micro-kernel call
 * stores its tile (rt_kern_mmp.h).
 *
 * Every element goes through the same IEEE operations, in the same order, as with the
 * instructions one by one (the expressions of rt_kern_vfast.c's direct path, which
 * also leave it to the compiler which of two NaN operands an ADD or MUL passes on);
 * the regions of a chain are pairwise identical or disjoint and its scalars lie in
 * none of them, so no element sees another's value: LX and DRAM get the same bits.
 * Regions under FUSE_MIN bytes are left to the VECs one by one (all in the L1 cache,
 * where the chain's setup cost more than it saved). Modelled time is computed from the
 * bundle and does not change.
 */
#include <string.h>

#include "rt_exec.h"
#include "rt_model.h"
#include "rt_vlanes.h"
#include "rt_vmath.h"

#define FUSE_BLOCK 64        /* floats of a row through the chain at a time */
#define FUSE_MIN 16384       /* bytes of a region from which a chain is fused: below, its
                                setup costs more than the passes over the L1 cache */

/* 8-float vectors (v8f of rt_vlanes.h), FUSE_BLOCK / 8 of them a block (the
 * comparisons of MAX / MIN map to blends on every clone; on 16-float vectors the
 * AVX-512F clone had no mask moves and scalarised them) */
#define FUSE_NV (FUSE_BLOCK / 8)

/* One VEC of a chain: x = fn(x, y) (pos 0) or fn(y, x) (pos 1), or fn(x) (unary), or
 * the SELECT m ? x : y (pos 1) or m ? y : x (pos 2). */
typedef struct {
    uint16_t fn;
    uint8_t pos;             /* operand position of the chain value */
    uint8_t ykind;           /* FY_* */
    uint32_t y;              /* the other operand's LX byte offset (FY_ROW, FY_SCALAR) */
    int64_t yrs;             /* its row stride, bytes */
    float imm;               /* FY_IMM */
    uint32_t dst;            /* region written: LX byte offset, row stride in bytes */
    int64_t drs;
    uint8_t mkind;           /* a SELECT's BOOL condition: FY_ROW or FY_SCALAR, else 0 */
    uint32_t m;              /* its LX byte offset and row stride (bytes, one an element) */
    int64_t mrs;
} FuseOp;

enum { FY_NONE, FY_ROW, FY_SCALAR, FY_IMM };

typedef struct {
    uint32_t rows, cols;
    uint32_t x;              /* the chain's input region (a row operand of VEC 0) */
    int64_t xrs;
    int n;                   /* VECs */
    FuseOp op[RT_FUSE_MAX];
} Fuse;

/* Bytes [lo, hi) of LX that rows x cols elements of 4 bytes at a, row stride rs
 * (bytes, >= 0), column stride cs (0 or 4) span. */
static void region_span(uint64_t a, uint32_t rows, int64_t rs, uint32_t cols, int64_t cs,
                        int64_t *lo, int64_t *hi) {
    *lo = (int64_t)a;
    *hi = (int64_t)a + (int64_t)(rows - 1) * rs + (int64_t)(cols - 1) * cs + 4;
}

/* Whether regions a and b (rows x cols, contiguous rows) are the same or apart. */
static bool same_or_apart(uint64_t a, int64_t ars, uint64_t b, int64_t brs, uint32_t rows,
                          uint32_t cols) {
    if (a == b && ars == brs)
        return true;
    int64_t alo, ahi, blo, bhi;
    region_span(a, rows, ars, cols, 4, &alo, &ahi);
    region_span(b, rows, brs, cols, 4, &blo, &bhi);
    return ahi <= blo || bhi <= alo;
}

/* Whether the F32 VEC v's function has a chain form (the direct path's functions, and
 * SELECT on a condition in LX): its arity. */
static int chain_arity(const SpyVec *v) {
    if (v->opcode != ISA_VEC || v->dtype != ISA_DT_F32 ||
        (v->src_dtype && v->src_dtype != ISA_DT_F32) ||
        (v->flags & ~(uint8_t)(ISA_F_IMM | ISA_F_IMM_A)) ||
        ((v->flags & ISA_F_IMM) && (v->flags & ISA_F_IMM_A)))
        return 0;
    switch (v->fn) {
    case ISA_VF_ADD: case ISA_VF_SUB: case ISA_VF_MUL: case ISA_VF_DIV:
    case ISA_VF_MAX: case ISA_VF_MIN: return 2;
    case ISA_VF_RELU: case ISA_VF_NEG: case ISA_VF_ABS:
    case ISA_VF_EXP: case ISA_VF_TANH: case ISA_VF_ERF: case ISA_VF_SIGMOID:
        return v->flags ? 0 : 1;
    case ISA_VF_SELECT: return (v->flags & ISA_F_IMM_A) ? 0 : 3;
    default: return 0;
    }
}

/* Whether operand q of v is the immediate (ISA_F_IMM_A: operand 0, ISA_F_IMM: 1). */
static bool is_imm(const SpyVec *v, int q) {
    return q == 0 ? (v->flags & ISA_F_IMM_A) != 0 : q == 1 && (v->flags & ISA_F_IMM);
}

/* Operand q of v as the other operand of op (kind, offset, stride); false when it is
 * neither an immediate, a scalar per row nor a contiguous row. */
static bool other_operand(const SpyVec *v, int q, FuseOp *op) {
    if (is_imm(v, q)) {
        op->ykind = FY_IMM;
        memcpy(&op->imm, &v->imm, 4);
        return true;
    }
    if (v->src_rs[q] < 0 || (v->src_cs[q] != 0 && v->src_cs[q] != 1))
        return false;
    op->ykind = v->src_cs[q] ? FY_ROW : FY_SCALAR;
    op->y = v->src[q];
    op->yrs = (int64_t)v->src_rs[q] * 4;
    return true;
}

/* The SELECT v's condition (operand 0, BOOL) as op's mask: a row or a scalar per row;
 * false for any other strides. */
static bool mask_operand(const SpyVec *v, FuseOp *op) {
    if (v->src_rs[0] < 0 || (v->src_cs[0] != 0 && v->src_cs[0] != 1))
        return false;
    op->mkind = v->src_cs[0] ? FY_ROW : FY_SCALAR;
    op->m = v->src[0];
    op->mrs = v->src_rs[0];
    return true;
}

/* Whether operand q of v is the row region (a, rs): not an immediate, column stride 1. */
static bool is_region(const SpyVec *v, int q, uint64_t a, int64_t rs) {
    return !is_imm(v, q) && v->src_cs[q] == 1 && v->src[q] == a &&
           (int64_t)v->src_rs[q] * 4 == rs;
}

/* Whether the row or scalar operand y (kind FY_ROW / FY_SCALAR, byte stride yrs) and
 * the region written at d (stride drs) may share a byte of LX: a row the same as the
 * region does not (same_ok: each element is read before it is written). */
static bool clash(const Fuse *f, int kind, uint64_t y, int64_t yrs, uint64_t d, int64_t drs,
                  bool same_ok) {
    if (kind == FY_ROW)
        return (y == d && yrs == drs) ? !same_ok
                                      : !same_or_apart(y, yrs, d, drs, f->rows, f->cols);
    if (kind != FY_SCALAR)
        return false;
    int64_t lo, hi, dlo, dhi;
    region_span(y, f->rows, yrs, 1, 0, &lo, &hi);
    region_span(d, f->rows, drs, f->cols, 4, &dlo, &dhi);
    return lo < dhi && dlo < hi;
}

/* Whether the condition of op (a SELECT's; none: false) and the region written at d
 * (stride drs) may share a byte of LX. */
static bool mask_clash(const Fuse *f, const FuseOp *op, uint64_t d, int64_t drs) {
    if (!op->mkind)
        return false;
    int64_t lo = (int64_t)op->m, dlo, dhi;
    int64_t hi = lo + (int64_t)(f->rows - 1) * op->mrs +
                 (op->mkind == FY_ROW ? (int64_t)f->cols : 1);
    region_span(d, f->rows, drs, f->cols, 4, &dlo, &dhi);
    return lo < dhi && dlo < hi;
}

/* Whether VEC i (f->op[i], its operands set) keeps every value of the chain where it
 * is: its region is the same as or apart from the chain's input and every region
 * and row operand before it (a scalar or condition before it in none), and its own
 * row operand is the same as or apart from its region and apart from those written
 * before it (their elements no longer hold what the instruction read), its scalar and
 * condition in none. */
static bool fits(const Fuse *f, int i) {
    const FuseOp *op = &f->op[i];
    if (!same_or_apart(f->x, f->xrs, op->dst, op->drs, f->rows, f->cols) ||
        clash(f, op->ykind, op->y, op->yrs, op->dst, op->drs, true) ||
        mask_clash(f, op, op->dst, op->drs))
        return false;
    for (int j = 0; j < i; j++) {
        const FuseOp *w = &f->op[j];
        if (!same_or_apart(w->dst, w->drs, op->dst, op->drs, f->rows, f->cols) ||
            clash(f, w->ykind, w->y, w->yrs, op->dst, op->drs, true) ||
            clash(f, op->ykind, op->y, op->yrs, w->dst, w->drs, false) ||
            mask_clash(f, w, op->dst, op->drs) || mask_clash(f, op, w->dst, w->drs))
            return false;
    }
    return true;
}

/* Adds the VEC v to the chain f as its VEC i when it continues it (reads the result of
 * VEC i - 1, or for i = 0 a row, as one operand); false otherwise. */
static bool chain_add(Fuse *f, const SpyVec *vin, int i) {
    SpyVec one;
    const SpyVec *v = vin;
    if (vin->rows == 1) {        /* one row: its row strides do not matter, made alike */
        one = *vin;
        one.dst_rs = (int32_t)one.cols;
        for (int q = 0; q < 3; q++)
            one.src_rs[q] = one.src_cs[q] ? (int32_t)one.cols : 0;
        v = &one;
    }
    int ar = chain_arity(v);
    if (!ar || v->rows != f->rows || v->cols != f->cols || v->dst_rs < (int32_t)v->cols)
        return false;
    FuseOp *op = &f->op[i];
    *op = (FuseOp){.fn = v->fn, .dst = v->dst, .drs = (int64_t)v->dst_rs * 4};
    int q0 = ar == 3 ? 1 : 0;    /* the first value operand (a SELECT's: after the mask) */
    if (i == 0) {                /* the chain's input: the first row operand */
        int q = ar > 1 && !is_region(v, q0, v->src[q0], (int64_t)v->src_rs[q0] * 4) ? q0 + 1
                                                                                   : q0;
        if (!is_region(v, q, v->src[q], (int64_t)v->src_rs[q] * 4))
            return false;
        f->x = v->src[q];
        f->xrs = (int64_t)v->src_rs[q] * 4;
    }
    uint64_t x = i ? f->op[i - 1].dst : f->x;
    int64_t xrs = i ? f->op[i - 1].drs : f->xrs;
    if (is_region(v, q0, x, xrs))
        op->pos = (uint8_t)q0;
    else if (ar > 1 && is_region(v, q0 + 1, x, xrs))
        op->pos = (uint8_t)(q0 + 1);
    else
        return false;
    if (ar > 1 && !other_operand(v, 2 * q0 + 1 - op->pos, op))
        return false;
    if (ar == 3 && !mask_operand(v, op))
        return false;
    return fits(f, i);
}

/* Decodes the chain of at most max VECs at code[0..n) into f: the number of VECs. */
static int chain_decode(const SpyInsn *code, uint32_t n, int max, Fuse *f) {
    const SpyVec *v0 = &code[0].vec;
    *f = (Fuse){.rows = v0->rows, .cols = v0->cols};
    if (!v0->rows || !v0->cols)
        return 0;
    int k = 0;
    while (k < max && (uint32_t)k < n && code[k].opcode == ISA_VEC &&
           chain_add(f, &code[k].vec, k))
        k++;
    f->n = k;
    return k;
}

/* Whether the STORE x (planned p) stores the chain's last region row for row: the
 * same rows of cols elements (or, the region contiguous, one row of all of them). */
static bool store_matches(const Fuse *f, const SpyDma *x, const RtPrep *p) {
    const FuseOp *last = &f->op[f->n - 1];
    uint64_t rowb = (uint64_t)f->cols * 4;
    if (p->how != RT_PH_ROWS || x->lx != last->dst || x->esize != 4)
        return false;
    if (p->rows == f->rows && p->rowb == rowb && (f->rows == 1 || p->lrs == last->drs))
        return true;
    return p->rows == 1 && last->drs == (int64_t)rowb && p->rowb == rowb * f->rows;
}

/* Whether instruction in may read or write LX bytes [lo, hi) (true when unsure). */
static bool touches(const SpyInsn *in, int64_t lo, int64_t hi) {
    int64_t a, b;
    switch (in->opcode) {
    case ISA_NOP: case ISA_BARRIER: return false;
    case ISA_LOAD: case ISA_STORE:
        rt_dma_span(&in->dma, true, &a, &b);
        a += in->dma.lx, b += in->dma.lx;
        return a < hi && lo < b;
    case ISA_VFILL: {
        unsigned es = rt_dtype_size(in->fill.dtype);
        a = in->fill.dst, b = a + (int64_t)(es ? es : 8) * in->fill.n;
        return a < hi && lo < b;
    }
    case ISA_VEC: {
        const SpyVec *v = &in->vec;
        if (!v->rows || !v->cols)
            return false;
        if (v->dst_rs < 0)
            return true;
        a = v->dst, b = a + 8 * ((int64_t)(v->rows - 1) * v->dst_rs + v->cols);
        if (a < hi && lo < b)
            return true;
        for (int q = 0; q < v->nsrc && q < 3; q++) {
            if ((q == 0 && (v->flags & ISA_F_IMM_A)) || (q == 1 && (v->flags & ISA_F_IMM)))
                continue;
            if (v->src_rs[q] < 0 || v->src_cs[q] < 0)
                return true;
            a = v->src[q];
            b = a + 8 * ((int64_t)(v->rows - 1) * v->src_rs[q] +
                         (int64_t)(v->cols - 1) * v->src_cs[q] + 1);
            if (a < hi && lo < b)
                return true;
        }
        return false;
    }
    default: return true;    /* MATMUL, GATHER, SCATTER, VREDUCE, VSCAN: not needed */
    }
}

/* Whether an instruction of code[0..n) may touch LX bytes [lo, hi). */
bool rt_lx_live(const SpyInsn *code, uint32_t n, int64_t lo, int64_t hi) {
    for (uint32_t i = 0; i < n; i++)
        if (touches(&code[i], lo, hi))
            return true;
    return false;
}

/* Whether an instruction of code[0..n) may touch region (a, rs) of the chain f. */
static bool live_after(const Fuse *f, uint64_t a, int64_t rs, const SpyInsn *code,
                       uint32_t n) {
    int64_t lo, hi;
    region_span(a, f->rows, rs, f->cols, 4, &lo, &hi);
    return rt_lx_live(code, n, lo, hi);
}

/* Bit i set when VEC i of the chain writes its result to LX: a later VEC of the chain
 * reads its region as its other operand, or no later VEC rewrites the region and an
 * instruction after the run (code[0..n)) may touch it. */
static uint16_t keep_mask(const Fuse *f, const SpyInsn *after, uint32_t n) {
    uint16_t keep = 0;
    for (int i = 0; i < f->n; i++) {
        const FuseOp *op = &f->op[i];
        bool read = false, rewritten = false;
        for (int j = i + 1; j < f->n && !rewritten; j++) {
            read |= f->op[j].ykind == FY_ROW && f->op[j].y == op->dst;
            rewritten = f->op[j].dst == op->dst;
        }
        if (read || (!rewritten && live_after(f, op->dst, op->drs, after, n)))
            keep |= (uint16_t)(1u << i);
    }
    return keep;
}

/* The plan of a chain at code[0..n) (p: the plans of code[0..n), its STOREs' made):
 * RT_PH_FUSE with p->run its VECs (and the STORE it takes), p->keep the VECs whose
 * results go to LX, p->kinds 1 when it takes the STORE; false (p untouched) when no
 * chain of two VECs, or of one and a STORE, over FUSE_MIN bytes or more starts here. */
bool rt_fuse_prep(const SpyInsn *code, uint32_t n, RtPrep *p) {
    return rt_fuse_prep_min(code, n, p, FUSE_MIN);
}

bool rt_fuse_prep_min(const SpyInsn *code, uint32_t n, RtPrep *p, uint64_t min) {
    Fuse f;
    const SpyVec *v = &code[0].vec;
    if ((uint64_t)v->rows * v->cols * 4 < min)
        return false;
    int k = chain_decode(code, n, RT_FUSE_MAX, &f);
    if (!k)
        return false;
    bool st = (uint32_t)k < n && code[k].opcode == ISA_STORE &&
              store_matches(&f, &code[k].dma, &p[k]);
    if (k < 2 && !st)
        return false;
    uint32_t run = (uint32_t)k + st;
    p->how = RT_PH_FUSE;
    p->run = run;
    p->kinds = st;
    p->keep = keep_mask(&f, code + run, n - run);
    return true;
}

/* Whether LX bytes [lo, hi) and the region of chain f at a (row stride rs) are apart. */
static bool apart_span(const Fuse *f, uint64_t a, int64_t rs, int64_t lo, int64_t hi) {
    int64_t rlo, rhi;
    region_span(a, f->rows, rs, f->cols, 4, &rlo, &rhi);
    return hi <= rlo || rhi <= lo;
}

/* Whether the chain planned at code (RT_PH_FUSE, plans p; n instructions to the end of
 * the program) may run tile by tile as the MATMUL mm computes its input, C written
 * straight to the DRAM of the STORE the chain takes (rt_exec.c, RT_PH_EPI): the input
 * is all of C, which no instruction after the run touches in LX (it is never written
 * there), and each tile sees what the whole chain after the whole MATMUL would. So a
 * region the chain writes is C element for element or apart from it, and apart from A
 * and B (LX bytes [alo, ahi), [blo, bhi)), which the MATMUL reads until its end; its
 * other operands (rows, scalars, conditions) lie outside C. */
bool rt_fuse_epi_ok(const SpyInsn *code, uint32_t n, const RtPrep *p, const SpyMatmul *mm,
                    int64_t alo, int64_t ahi, int64_t blo, int64_t bhi) {
    Fuse f;
    uint32_t k = p->run - 1;
    int64_t crs = (int64_t)mm->ldc * 4, clo, chi;
    if (p->how != RT_PH_FUSE || !p->kinds || chain_decode(code, k, (int)k, &f) != (int)k ||
        f.x != mm->c || f.xrs != crs || f.rows != mm->m || f.cols != mm->n ||
        live_after(&f, mm->c, crs, code + p->run, n - p->run))
        return false;
    region_span(mm->c, f.rows, crs, f.cols, 4, &clo, &chi);
    for (int i = 0; i < f.n; i++) {
        const FuseOp *op = &f.op[i];
        if (!same_or_apart(op->dst, op->drs, mm->c, crs, f.rows, f.cols) ||
            !apart_span(&f, op->dst, op->drs, alo, ahi) ||
            !apart_span(&f, op->dst, op->drs, blo, bhi) ||
            (op->ykind == FY_ROW && !apart_span(&f, op->y, op->yrs, clo, chi)) ||
            clash(&f, op->ykind == FY_SCALAR ? FY_SCALAR : FY_NONE, op->y, op->yrs, mm->c, crs,
                  false) ||
            mask_clash(&f, op, mm->c, crs))
            return false;
    }
    return true;
}

/* The operands of one row of a chain (rt_fuse_run sets them row by row): op i's other
 * operand at ys[i] (a row, or 8 copies of its scalar when ystep[i] is 0; zeros for a
 * unary one), a SELECT's condition at ms[i] (a row of bytes, or 8 copies of its byte
 * when mstep[i] is 0), its result written to ds[i] when not NULL, the last one's also
 * to st when not NULL. */
typedef struct {
    const uint8_t *ys[RT_FUSE_MAX];
    const uint8_t *ms[RT_FUSE_MAX];
    uint8_t *ds[RT_FUSE_MAX];
    uint8_t *st;
    uint8_t ystep[RT_FUSE_MAX], mstep[RT_FUSE_MAX];
} FuseRow;

/* v[0..n) = fn(v[i]) for the transcendental unary functions of a chain (EXP, TANH, ERF,
 * SIGMOID), through the same rt_vmath.h functions as the VECs one by one (f_unary), so
 * the same bits; a loop the compiler vectorises, out of chain_row so that the four
 * functions are not inlined into each of its step sizes. */
#define FORW(n, w) for (int i0_ = 0; i0_ < (n); i0_ += (w)) for (int i = i0_; i < i0_ + (w); i++)
/* FORW with the inner loop unrolled (before it is vectorised: its vectors side by side) */
#define FORW_U(n, w)                                                                     \
    for (int i0_ = 0; i0_ < (n); i0_ += (w))                                             \
    _Pragma("GCC unroll 64") for (int i = i0_; i < i0_ + (w); i++)
#define CHAIN_FN(LOOP, n, w)                                                             \
    switch (fn) {                                                                        \
    case ISA_VF_EXP: LOOP(n, w) v[i] = rt_vm_exp(v[i]); break;                           \
    case ISA_VF_TANH: LOOP(n, w) v[i] = rt_vm_tanh(v[i]); break;                         \
    case ISA_VF_ERF: LOOP(n, w) v[i] = rt_vm_erf(v[i]); break;                           \
    default: LOOP(n, w) v[i] = rt_vm_sigmoid(v[i]); break;                               \
    }
RT_HOT static void chain_fn(int fn, float *v, int n) {
    /* n a multiple of 8. A whole block (64 floats): the inner loop unrolled, so that the
     * four 16-lane vectors' chains of dependent operations (an EXP is some 25 deep) are
     * independent instructions side by side, not one vector's after another's (SiLU
     * 0.90, softmax 0.95 of their time on AMD Zen 4). Else inner loops of 16 when it is
     * one of 16 (16-lane vectors where the host has them, ERF about a third faster per
     * element than in 8-lane ones on AMD Zen 4), else of 8, which the compiler
     * vectorises. */
    if (n % 64 == 0) {
        CHAIN_FN(FORW_U, n, 64)
    } else if (n % 16 == 0) {
        CHAIN_FN(FORW, n, 16)
    } else {
        CHAIN_FN(FORW, n, 8)
    }
}

/* Loads / stores the FUSE_NV vectors of a block. */
#define LDB(v, p)                                                                        \
    _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) memcpy(&(v)[t], (p) + 32 * t, 32)
#define STB(p, v)                                                                        \
    _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) memcpy((p) + 32 * t, &(v)[t], 32)
/* The MAX / MIN of isa.md: a when it is better or NaN, else b (rt_kern_vfast.c); the
 * SELECT: the bits of a where m is set, else those of b. */
#define SELV(m, a, b) ((v8f)(((m) & (v8i)(a)) | (~(m) & (v8i)(b))))
/* x[t] = EXPR of P and Q over the block: P the chain value and Q the operand (A0), or
 * the other way round (A1), or of P alone (A); the operand's vector t is read at
 * yp + ystr * t, when it is needed (eight of them would not stay in registers). */
#define A0(EXPR)                                                                         \
    _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) {                               \
        v8f P = x[t], Q;                                                                 \
        memcpy(&Q, yp + ystr * t, sizeof Q);                                             \
        x[t] = (EXPR);                                                                   \
    }
#define A1(EXPR)                                                                         \
    _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) {                               \
        v8f Q = x[t], P;                                                                 \
        memcpy(&P, yp + ystr * t, sizeof P);                                             \
        x[t] = (EXPR);                                                                   \
    }
#define A(EXPR)                                                                          \
    _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) {                               \
        v8f P = x[t];                                                                    \
        x[t] = (EXPR);                                                                   \
    }
/* x[t] = EXPR of P (the chain value), Q (the operand) and Z (all ones where the
 * condition's byte is 0: RT_COND0), the condition's 8 bytes of vector t read at
 * mp + mstr * t. */
#define AM(EXPR)                                                                         \
    {                                                                                    \
        const uint8_t *mp = w->ms[i] + (w->mstep[i] ? j : 0);                            \
        size_t mstr = w->mstep[i] ? 8 : 0;                                               \
        _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) {                           \
            v8f P = x[t], Q;                                                             \
            v8i Z;                                                                       \
            memcpy(&Q, yp + ystr * t, sizeof Q);                                         \
            RT_COND0(Z, mp + mstr * t);                                                  \
            x[t] = (EXPR);                                                               \
        }                                                                                \
    }
/* The case of function fn with the chain value at operand position pos (0 to 2). */
#define FP(fn, pos) ((fn) * 4 + (pos))

/* Steps of N vectors (8 floats each) of the chain f over a row from element j while
 * N vectors fit before cols (in registers: see chain_row). */
#define CHAIN_STEPS(N)                                                                   \
    for (; j + 8 * (N) <= cols; j += 8 * (N)) {                                          \
        enum { NV = (N) };                                                               \
        size_t o = (size_t)j * 4;                                                        \
        v8f x[NV];                                                                       \
        LDB(x, xs + o);                                                                  \
        for (int i = 0; i < f->n; i++) {                                                 \
            const FuseOp *op = &f->op[i];                                                \
            const uint8_t *yp = w->ys[i] + (w->ystep[i] ? o : 0);                        \
            size_t ystr = w->ystep[i] ? 32 : 0;                                          \
            switch (FP(op->fn, op->pos)) {                                               \
            case FP(ISA_VF_ADD, 0): A0(P + Q); break;                                    \
            case FP(ISA_VF_ADD, 1): A1(P + Q); break;                                    \
            case FP(ISA_VF_SUB, 0): A0(P - Q); break;                                    \
            case FP(ISA_VF_SUB, 1): A1(P - Q); break;                                    \
            case FP(ISA_VF_MUL, 0): A0(P * Q); break;                                    \
            case FP(ISA_VF_MUL, 1): A1(P * Q); break;                                    \
            case FP(ISA_VF_DIV, 0): A0(P / Q); break;                                    \
            case FP(ISA_VF_DIV, 1): A1(P / Q); break;                                    \
            case FP(ISA_VF_MAX, 0): A0(SELV((P > Q) | (P != P), P, Q)); break;           \
            case FP(ISA_VF_MAX, 1): A1(SELV((P > Q) | (P != P), P, Q)); break;           \
            case FP(ISA_VF_MIN, 0): A0(SELV((P < Q) | (P != P), P, Q)); break;           \
            case FP(ISA_VF_MIN, 1): A1(SELV((P < Q) | (P != P), P, Q)); break;           \
            case FP(ISA_VF_SELECT, 1): AM(SELV(Z, Q, P)); break;                         \
            case FP(ISA_VF_SELECT, 2): AM(SELV(Z, P, Q)); break;                         \
            case FP(ISA_VF_RELU, 0): A(SELV(P < zero, zero, P)); break;                  \
            case FP(ISA_VF_NEG, 0): A(-P); break;                                        \
            case FP(ISA_VF_EXP, 0): case FP(ISA_VF_TANH, 0): case FP(ISA_VF_ERF, 0):     \
            case FP(ISA_VF_SIGMOID, 0):                                                  \
                STB(tb, x);                                                              \
                chain_fn(op->fn, (float *)tb, NV * 8);                                   \
                LDB(x, tb);                                                              \
                break;                                                                   \
            default: A((v8f)((v8i)P & 0x7fffffff)); break; /* ABS */                     \
            }                                                                            \
            if (w->ds[i])                                                                \
                STB(w->ds[i] + o, x);                                                    \
        }                                                                                \
        if (w->st)                                                                       \
            STB(w->st + o, x);                                                           \
    }

/* Runs the chain f over the whole vectors of one row of cols elements (a multiple of
 * 8), FUSE_BLOCK at a time in registers, the rest 32, 16, then 8 at a time: the input
 * at xs, the other operands, conditions and results as w says. */
RT_HOT static void chain_row(const Fuse *f, const uint8_t *xs, const FuseRow *w,
                             uint32_t cols) {
    const v8f zero = {0};
    _Alignas(32) uint8_t tb[FUSE_BLOCK * 4];         /* a block through chain_fn */
    uint32_t j = 0;
    CHAIN_STEPS(FUSE_NV)
    CHAIN_STEPS(4)
    CHAIN_STEPS(2)
    CHAIN_STEPS(1)
}

/* Copies nb (< 32, a multiple of 4) bytes inline, in two overlapping moves. */
static inline void copy_tail(uint8_t *d, const uint8_t *s, size_t nb) {
    if (nb >= 16) {
        memcpy(d, s, 16);
        memcpy(d + nb - 16, s + nb - 16, 16);
    } else if (nb >= 8) {
        memcpy(d, s, 8);
        memcpy(d + nb - 8, s + nb - 8, 8);
    } else if (nb) {
        memcpy(d, s, 4);
    }
}

/* The staging buffers of chain_part, one vector each: the input (sx), row operands
 * (sy), conditions (sm), results (sd, the STORE's last); their lanes past a row hold
 * defined values (rt_fuse_run zeroes them). */
typedef struct {
    _Alignas(32) float sx[8], sy[RT_FUSE_MAX][8], sd[RT_FUSE_MAX + 1][8];
    uint8_t sm[RT_FUSE_MAX][8];
} FuseStage;

/* The last cols (< 8) elements of a row, from element j of its rows (copied inline: a
 * library call per row cost more than the chain): through one vector of the staging
 * buffers s (row operands and conditions staged, the other pointers of w as they are;
 * results ds[i] and st copied out of them). */
static void chain_part(const Fuse *f, const uint8_t *xs, const FuseRow *w, size_t j,
                       uint32_t cols, FuseStage *s) {
    FuseRow t;
    size_t nb = (size_t)cols * 4, o = j * 4;
    copy_tail((uint8_t *)s->sx, xs + o, nb);
    for (int i = 0; i < f->n; i++) {
        t.ys[i] = w->ys[i], t.ystep[i] = w->ystep[i];
        t.ms[i] = w->ms[i], t.mstep[i] = w->mstep[i];
        if (w->ystep[i]) {
            copy_tail((uint8_t *)s->sy[i], w->ys[i] + o, nb);
            t.ys[i] = (const uint8_t *)s->sy[i];
        }
        if (w->mstep[i]) {
            for (uint32_t k = 0; k < cols; k++)
                s->sm[i][k] = w->ms[i][j + k];
            t.ms[i] = s->sm[i];
        }
        t.ds[i] = w->ds[i] ? (uint8_t *)s->sd[i] : NULL;
    }
    t.st = w->st ? (uint8_t *)s->sd[RT_FUSE_MAX] : NULL;
    chain_row(f, (const uint8_t *)s->sx, &t, 8);
    for (int i = 0; i < f->n; i++)
        if (w->ds[i])
            copy_tail(w->ds[i] + o, (const uint8_t *)s->sd[i], nb);
    if (w->st)
        copy_tail(w->st + o, (const uint8_t *)s->sd[RT_FUSE_MAX], nb);
}

/* Where a chain reads its input and its operands' rows: row r of the input at
 * x + r * xrs, of op i's row operand at y[i] + r * yrs[i] (LX, or a pending LOAD's
 * DRAM: fuse_views). */
typedef struct {
    const uint8_t *x;
    int64_t xrs;
    const uint8_t *y[RT_FUSE_MAX];
    int64_t yrs[RT_FUSE_MAX];
} FuseSrc;

/* Points w at row r of the chain f's other operands (rows at s), conditions and kept
 * results (keep), broadcasting the scalars into bc and the scalar conditions into bm. */
static void row_operands(RtCore *c, const Fuse *f, const FuseSrc *s, uint16_t keep, uint32_t r,
                         FuseRow *w, float (*bc)[8], uint8_t (*bm)[8]) {
    for (int i = 0; i < f->n; i++) {
        const FuseOp *op = &f->op[i];
        if (op->ykind == FY_SCALAR) {
            float v;
            memcpy(&v, c->lx + op->y + (int64_t)r * op->yrs, 4);
            for (int t = 0; t < 8; t++)
                bc[i][t] = v;
        } else if (op->ykind == FY_ROW) {
            w->ys[i] = s->y[i] + (int64_t)r * s->yrs[i];
        }
        if (op->mkind == FY_SCALAR)
            memset(bm[i], c->lx[op->m + (int64_t)r * op->mrs], 8);
        else if (op->mkind == FY_ROW)
            w->ms[i] = c->lx + op->m + (int64_t)r * op->mrs;
        w->ds[i] = (keep >> i & 1) ? c->lx + op->dst + (int64_t)r * op->drs : NULL;
    }
}

/* The pending LOADs (views, rt_defer.c) around chain f (its kept results keep, its
 * STORE's DRAM [slo, shi) when it takes one): those under a region the chain writes in
 * LX, a scalar or condition it reads there, or whose DRAM the STORE writes, are
 * carried out; the input and row operands that lie in a remaining view row for row are
 * read from its DRAM (s), the others from LX after the views over them are carried
 * out. A residual loaded just before its add is then read once, from DRAM, not
 * copied into LX and read again (resnet50's bottleneck blocks). The DRAM read is never
 * written during the chain: the STORE's views went first. */
static void fuse_views(RtCore *c, RtDefer *d, const Fuse *f, uint16_t keep, const uint8_t *slo,
                       const uint8_t *shi, FuseSrc *s) {
    int64_t lo, hi, srs;
    rt_defer_flush_dram(c, d, slo, shi);
    for (int i = 0; i < f->n && d->n; i++) {
        const FuseOp *op = &f->op[i];
        if (keep >> i & 1) {
            region_span(op->dst, f->rows, op->drs, f->cols, 4, &lo, &hi);
            rt_defer_flush_lx(c, d, lo, hi);
        }
        if (op->ykind == FY_SCALAR) {
            region_span(op->y, f->rows, op->yrs, 1, 0, &lo, &hi);
            rt_defer_flush_lx(c, d, lo, hi);
        }
        if (op->mkind) {
            lo = op->m, hi = lo + (int64_t)(f->rows - 1) * op->mrs + 1;
            hi += op->mkind == FY_ROW ? f->cols - 1 : 0;
            rt_defer_flush_lx(c, d, lo, hi);
        }
    }
    for (int i = -1; i < f->n && d->n; i++) {   /* -1: the input */
        if (i >= 0 && f->op[i].ykind != FY_ROW)
            continue;
        uint32_t a = i < 0 ? f->x : f->op[i].y;
        int64_t rs = i < 0 ? f->xrs : f->op[i].yrs;
        const uint8_t *p = rt_defer_rows_src(d, a, f->rows, rs, (uint64_t)f->cols * 4, &srs);
        if (!p) {
            region_span(a, f->rows, rs, f->cols, 4, &lo, &hi);
            rt_defer_flush_lx(c, d, lo, hi);
        } else if (i < 0) {
            s->x = p, s->xrs = srs;
        } else {
            s->y[i] = p, s->yrs[i] = srs;
        }
    }
}

/* A chain made ready to run (fuse_setup): its VECs, where its operands are, its STORE's
 * DRAM rows, and the staging and broadcast buffers of its rows. */
typedef struct {
    RtCore *c;
    Fuse f;
    FuseSrc src;
    FuseRow w;
    uint16_t keep;
    uint8_t *st;                 /* the STORE's first row (NULL: none), rows sdrs apart */
    int64_t sdrs;
    _Alignas(32) float bc[RT_FUSE_MAX][8];           /* scalars, broadcast */
    uint8_t bm[RT_FUSE_MAX][8];                      /* scalar conditions, broadcast */
    FuseStage sg;                                    /* chain_part's */
    RtPost post;                                     /* post_make's */
} FuseRun;

/* Makes the chain planned at code (RT_PH_FUSE, plans p of code[0..p->run)) on core c
 * ready to run: decoded, its operands where the pending LOADs d leave them (fuse_views;
 * d NULL: none pending). */
static void fuse_setup(FuseRun *r, RtCore *c, RtDefer *d, const SpyInsn *code,
                       const RtPrep *p) {
    uint32_t nst = p->kinds ? 1 : 0, k = p->run - nst;
    Fuse *f = &r->f;
    chain_decode(code, k, (int)k, f);
    r->c = c;
    r->keep = p->keep;
    r->src = (FuseSrc){c->lx + f->x, f->xrs, {0}, {0}};
    r->st = NULL;
    r->sdrs = 0;
    if (nst) {                   /* the STORE's rows, as store_matches took them */
        const RtPrep *sp = &p[k];
        r->st = c->seg[code[k].dma.seg] + code[k].dma.dram_off;
        r->sdrs = sp->rows == f->rows ? sp->drs : (int64_t)f->cols * 4;
    }
    for (int i = 0; i < f->n; i++)
        r->src.y[i] = c->lx + f->op[i].y, r->src.yrs[i] = f->op[i].yrs;
    if (d && d->n)
        fuse_views(c, d, f, p->keep, r->st,
                   r->st ? r->st + (int64_t)(f->rows - 1) * r->sdrs + (int64_t)f->cols * 4
                         : NULL,
                   &r->src);
    memset(r->bc, 0, sizeof r->bc);
    memset(&r->sg, 0, sizeof r->sg); /* the staged lanes past a row: defined values */
    for (int i = 0; i < f->n; i++) {
        const FuseOp *op = &f->op[i];
        r->w.ystep[i] = op->ykind == FY_ROW;
        r->w.ys[i] = (const uint8_t *)r->bc[i];
        r->w.mstep[i] = op->mkind == FY_ROW;
        r->w.ms[i] = r->bm[i];
        if (op->ykind == FY_IMM)
            for (int t = 0; t < 8; t++)
                r->bc[i][t] = op->imm;
    }
}

/* Runs the chain made ready at ctx (a FuseRun) over rows [r0, r0 + nr) and columns
 * [c0, c0 + nc) of its region, row by row: the whole vectors in place, the rest of
 * each row (under 8 elements) through chain_part. */
static void fuse_tile(void *ctx, uint32_t r0, uint32_t nr, uint32_t c0, uint32_t nc) {
    FuseRun *r = ctx;
    const Fuse *f = &r->f;
    FuseRow w = r->w;
    uint32_t full = nc / 8 * 8, part = nc - full;
    size_t o = (size_t)c0 * 4;
    for (uint32_t y = r0; y < r0 + nr; y++) {
        row_operands(r->c, f, &r->src, r->keep, y, &w, r->bc, r->bm);
        for (int i = 0; i < f->n; i++) {   /* the rows from column c0 on */
            if (w.ystep[i])
                w.ys[i] += o;
            if (w.mstep[i])
                w.ms[i] += c0;
            if (w.ds[i])
                w.ds[i] += o;
        }
        const uint8_t *xs = r->src.x + (int64_t)y * r->src.xrs + o;
        w.st = r->st ? r->st + (int64_t)y * r->sdrs + o : NULL;
        if (full)
            chain_row(f, xs, &w, full);
        if (part)
            chain_part(f, xs, &w, full, part, &r->sg);
    }
}

/* Runs the chain planned at code (RT_PH_FUSE, plans p of code[0..p->run)) on core c
 * (fuse_setup, then fuse_tile over all of it). */
void rt_fuse_run(RtCore *c, RtDefer *d, const SpyInsn *code, const RtPrep *p) {
    FuseRun r;
    fuse_setup(&r, c, d, code, p);
    fuse_tile(&r, 0, r.f.rows, 0, r.f.cols);
}

/* The RT_PR_* class of a binary function fn with an operand of kind (RT_PO_*): the
 * functions the micro-kernels run on their accumulators (the commonest epilogues:
 * bias, residual, scale, activation, clip). */
static uint8_t post_reg(uint16_t fn, uint8_t kind) {
    bool row = kind == RT_PO_ROW;
    switch (fn) {
    case ISA_VF_ADD: return row ? RT_PR_ADD_R : RT_PR_ADD_S;
    case ISA_VF_MUL: return row ? RT_PR_MUL_R : RT_PR_MUL_S;
    case ISA_VF_MAX: return row ? RT_PR_NONE : RT_PR_MAX_S;
    case ISA_VF_MIN: return row ? RT_PR_NONE : RT_PR_MIN_S;
    default: return RT_PR_NONE;
    }
}

/* VEC op of a chain in post form (RtPostOp, rt_kern_mmp.h) into o, its LX operand (a
 * scalar per row or a row) left for the caller to place (o->y NULL); false when it has
 * none: a SELECT, a transcendental function, a chain value past the second operand. */
static bool post_op(const FuseOp *op, RtPostOp *o) {
    *o = (RtPostOp){op->fn, op->pos, RT_PO_NONE, RT_PR_NONE, op->imm, NULL, 0};
    switch (op->fn) {
    case ISA_VF_RELU:
        o->reg = RT_PR_RELU;
        return true;
    case ISA_VF_NEG: case ISA_VF_ABS:
        return true;
    case ISA_VF_ADD: case ISA_VF_SUB: case ISA_VF_MUL: case ISA_VF_DIV:
    case ISA_VF_MAX: case ISA_VF_MIN:
        break;
    default:
        return false;
    }
    if (op->pos > 1)
        return false;
    if (op->ykind == FY_IMM)         /* a scalar of every row */
        o->kind = RT_PO_SCALAR, o->yrs = 0;
    else if (op->ykind == FY_SCALAR)
        o->kind = RT_PO_SCALAR, o->yrs = op->yrs;
    else if (op->ykind == FY_ROW)
        o->kind = RT_PO_ROW, o->yrs = op->yrs;
    else
        return false;
    o->reg = post_reg(op->fn, o->kind);
    return true;
}

/* The leading operations of post with a register form (RtPost.nreg). */
static int post_nreg(const RtPost *post) {
    int n = 0;
    while (n < post->n && post->op[n].reg != RT_PR_NONE)
        n++;
    return n;
}

/* The chain of r, made ready, in the post form of a MATMUL's vector kernels
 * (RtPost, rt_kern_mmp.h) into r->post; false when it has none: a result kept in LX,
 * a SELECT, a transcendental function, more than RT_POST_MAX VECs. */
static bool post_make(FuseRun *r) {
    const Fuse *f = &r->f;
    if (r->keep || f->n < 1 || f->n > RT_POST_MAX)
        return false;
    for (int i = 0; i < f->n; i++) {
        const FuseOp *op = &f->op[i];
        RtPostOp *o = &r->post.op[i];
        if (!post_op(op, o))
            return false;
        if (op->ykind == FY_IMM)
            o->y = (const uint8_t *)&o->imm;
        else if (op->ykind == FY_SCALAR)
            o->y = r->c->lx + op->y;
        else                         /* a row: maybe read from a view's DRAM */
            o->y = r->src.y[i], o->yrs = r->src.yrs[i];
    }
    r->post.n = f->n;
    r->post.nreg = post_nreg(&r->post);
    return true;
}

bool rt_fuse_post_lx(const SpyInsn *code, const RtPrep *p, RtPost *post, uint32_t *ylx,
                     uint32_t *x, int64_t *xrs) {
    uint32_t k = p->run - (p->kinds ? 1 : 0);
    Fuse f;
    if (p->how != RT_PH_FUSE || !p->kinds || p->keep || k < 1 || k > RT_POST_MAX ||
        chain_decode(code, k, (int)k, &f) != (int)k)
        return false;
    for (int i = 0; i < f.n; i++) {
        if (!post_op(&f.op[i], &post->op[i]))
            return false;
        ylx[i] = f.op[i].ykind == FY_IMM ? UINT32_MAX : f.op[i].y;
    }
    post->n = f.n;
    post->nreg = post_nreg(post);
    *x = f.x;
    *xrs = f.xrs;
    return true;
}

/* Makes the chain planned at code ready (as rt_fuse_run; it takes its STORE), then
 * calls body(c, d, e, arg) with e running it over tiles of its region in the STORE's
 * DRAM: a MATMUL whose result is the chain's input (rt_exec.c, RT_PH_EPI) writes each
 * tile of it there, final, and the chain reads it there and rewrites it in place. */
void rt_fuse_around(RtCore *c, RtDefer *d, const SpyInsn *code, const RtPrep *p,
                    void (*body)(RtCore *, RtDefer *, const RtEpi *, void *), void *arg) {
    FuseRun r;
    fuse_setup(&r, c, d, code, p);
    r.src.x = r.st, r.src.xrs = r.sdrs;
    RtEpi e = {fuse_tile, &r, r.st, r.sdrs, post_make(&r) ? &r.post : NULL};
    body(c, d, &e, arg);
}
