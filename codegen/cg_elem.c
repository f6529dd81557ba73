/* cg_elem.c: tile programs (plan.h IrTileProg) -> LOAD, VEC, STORE.
 *
 * For one tile (start/len per iteration dim): every loaded value is brought into its
 * LX buffer with one N-d LOAD through its access (only the dims its shape class
 * keeps, so broadcast operands move their distinct elements once); each step is one
 * VEC over rows x cols (or over one row/column for ROW/COL-class results), operands
 * read with row/column strides 0 where they broadcast, scalar constants as
 * immediates; the result is stored through the program's output access. This serves
 * ELEM kernels, contraction epilogues and reduction prologues/epilogues.
 */
#include <string.h>

#include "cg_internal.h"

static const uint16_t un_fn[IR_UN_COUNT] = {
    [IR_UN_NEG] = ISA_VF_NEG, [IR_UN_ABS] = ISA_VF_ABS, [IR_UN_EXP] = ISA_VF_EXP,
    [IR_UN_LOG] = ISA_VF_LOG, [IR_UN_SQRT] = ISA_VF_SQRT, [IR_UN_RSQRT] = ISA_VF_RSQRT,
    [IR_UN_RECIP] = ISA_VF_RECIP, [IR_UN_TANH] = ISA_VF_TANH, [IR_UN_ERF] = ISA_VF_ERF,
    [IR_UN_SIGMOID] = ISA_VF_SIGMOID, [IR_UN_RELU] = ISA_VF_RELU,
    [IR_UN_FLOOR] = ISA_VF_FLOOR, [IR_UN_CEIL] = ISA_VF_CEIL, [IR_UN_ROUND] = ISA_VF_ROUND,
    [IR_UN_SIN] = ISA_VF_SIN, [IR_UN_COS] = ISA_VF_COS, [IR_UN_TAN] = ISA_VF_TAN,
    [IR_UN_ASIN] = ISA_VF_ASIN, [IR_UN_ACOS] = ISA_VF_ACOS, [IR_UN_ATAN] = ISA_VF_ATAN,
    [IR_UN_SINH] = ISA_VF_SINH, [IR_UN_COSH] = ISA_VF_COSH, [IR_UN_ASINH] = ISA_VF_ASINH,
    [IR_UN_ACOSH] = ISA_VF_ACOSH, [IR_UN_ATANH] = ISA_VF_ATANH, [IR_UN_SIGN] = ISA_VF_SIGN,
    [IR_UN_NOT] = ISA_VF_NOT, [IR_UN_ISNAN] = ISA_VF_ISNAN, [IR_UN_ISINF] = ISA_VF_ISINF,
    [IR_UN_SOFTPLUS] = ISA_VF_SOFTPLUS,
};

static const uint16_t bin_fn[IR_BIN_COUNT] = {
    [IR_BIN_ADD] = ISA_VF_ADD, [IR_BIN_SUB] = ISA_VF_SUB, [IR_BIN_MUL] = ISA_VF_MUL,
    [IR_BIN_DIV] = ISA_VF_DIV, [IR_BIN_POW] = ISA_VF_POW, [IR_BIN_MAX] = ISA_VF_MAX,
    [IR_BIN_MIN] = ISA_VF_MIN, [IR_BIN_FMOD] = ISA_VF_FMOD, [IR_BIN_MOD] = ISA_VF_MOD,
    [IR_BIN_EQ] = ISA_VF_EQ, [IR_BIN_NE] = ISA_VF_NE, [IR_BIN_LT] = ISA_VF_LT,
    [IR_BIN_LE] = ISA_VF_LE, [IR_BIN_GT] = ISA_VF_GT, [IR_BIN_GE] = ISA_VF_GE,
    [IR_BIN_AND] = ISA_VF_AND, [IR_BIN_OR] = ISA_VF_OR, [IR_BIN_XOR] = ISA_VF_XOR,
    [IR_BIN_SHL] = ISA_VF_SHL, [IR_BIN_SHR] = ISA_VF_SHR, [IR_BIN_ATAN2] = ISA_VF_ATAN2,
};

/* Entry of value v in tp->vals (it must be there). */
static const IrTileVal *tval(const IrTileProg *tp, ValId v)
{
    int i = plan_tp_find(tp, v);
    IR_ASSERT(i >= 0 && "value missing from tile program");
    return &tp->vals[i];
}

/* Whether the LX-order dim i of tp belongs to class cls. */
static bool in_class(const IrTileProg *tp, int i, uint8_t cls)
{
    return (i < tp->nrow ? cls & IR_TC_ROW : cls & IR_TC_COL) != 0;
}

/* Fill the one-element buffers of scalar constants (once per core program). */
void cg_tp_prelude(CgEmit *e, const IrTileProg *tp)
{
    for (uint32_t i = 0; i < tp->nvals; i++) {
        const IrTileVal *tv = &tp->vals[i];
        if (tv->src != IR_TV_CONST || !tv->needs_buf)
            continue;
        cg_push_fill(e, tv->dtype, tv->lx, 1, tv->imm);
    }
}

/* LOAD value tv of the program for the tile (start, len); a value that several items
 * of the kernel read (a bias, a mask, a table broadcast over heads) is shared over the
 * ring (cg_ring.c). */
static void load_val(CgEmit *e, const IrTileProg *tp, const IrTileVal *tv, const int64_t *start,
                     const int64_t *len)
{
    int64_t l[IR_ITER_MAX];
    int dim[IR_ITER_MAX], n = 0;
    for (int i = 0; i < tp->nd; i++) {
        int dd = tp->order[i];
        if (in_class(tp, i, tv->cls)) {
            l[n] = len[dd];
            dim[n++] = dd;
        } else {
            IR_ASSERT(tv->acc.is[dd] == 0 || len[dd] == 1);
        }
    }
    cg_load_shared(e, e->kernel, &tv->acc, start, tp->nd, tv->lx, tv->esize, l, dim, n, 0, 0);
}

/* Row/column strides of an operand of class c read by a step of class out. */
static void operand_strides(uint8_t out, uint8_t c, int64_t cols, int32_t *rs, int32_t *cs)
{
    *rs = 0;
    *cs = 0;
    if (out == IR_TC_FULL) {
        *rs = c == IR_TC_FULL ? (int32_t)cols : c == IR_TC_ROW ? 1 : 0;
        *cs = (c & IR_TC_COL) ? 1 : 0;
    } else if (out != IR_TC_SCALAR) {
        *cs = c == out ? 1 : 0;
    }
}

/* One VREDUCE for a row-resident REDUCE step: every row's columns into one value. */
static void emit_reduce(CgEmit *e, const IrTileProg *tp, const IrNode *n, int64_t rows,
                        int64_t cols)
{
    static const uint8_t fns[IR_RED_COUNT] = {[IR_RED_SUM] = ISA_RF_SUM,
                                              [IR_RED_PROD] = ISA_RF_PROD,
                                              [IR_RED_MAX] = ISA_RF_MAX,
                                              [IR_RED_MIN] = ISA_RF_MIN};
    const IrTileVal *o = tval(tp, n->out[0]), *x = tval(tp, n->in[0]);
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyVReduce *r = &in.red;
    r->opcode = ISA_VREDUCE;
    r->dtype = x->dtype;
    r->fn = fns[ir_attr_get_int(n, "fn", 0)];
    r->dst = o->lx;
    r->src = x->lx;
    r->rows = (uint32_t)((o->cls & IR_TC_ROW) ? rows : 1);
    r->len = (uint32_t)cols;
    r->src_rs = x->cls == IR_TC_FULL ? (int32_t)cols : (x->cls & IR_TC_ROW) ? 1 : 0;
    r->src_cs = (x->cls & IR_TC_COL) ? 1 : 0;
    r->dst_rs = 1;
    cg_push(e, &in);
}

/* One VEC for step node n. */
static void emit_step(CgEmit *e, const IrTileProg *tp, const IrNode *n, int64_t rows,
                      int64_t cols)
{
    IrGraph *g = e->g;
    if (n->op == IR_OP_REDUCE) {
        emit_reduce(e, tp, n, rows, cols);
        return;
    }
    const IrTileVal *o = tval(tp, n->out[0]);
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyVec *v = &in.vec;
    v->opcode = ISA_VEC;
    v->dtype = o->dtype;
    v->src_dtype = (uint8_t)pass_dev_dtype(ir_vtype(g, n->in[n->op == IR_OP_SELECT])->dtype);
    v->nsrc = n->nin;
    int fn = (int)ir_attr_get_int(n, "fn", 0);
    switch (ir_op_info[n->op].vec) {
    case IR_VEC_UNFN: v->fn = un_fn[fn]; break;
    case IR_VEC_BINFN: v->fn = bin_fn[fn]; break;
    case IR_VEC_SELECT: v->fn = ISA_VF_SELECT; break;
    case IR_VEC_CAST:
        v->fn = v->src_dtype == v->dtype ? ISA_VF_COPY : ISA_VF_CAST;
        if (!ir_attr_get_int(n, "saturate", 1))    /* float8 overflow: NaN/inf */
            v->flags |= ISA_F_NOSAT;
        break;
    case IR_VEC_NONE: IR_ASSERT(!"not a pointwise node");
    }
    int64_t r = o->cls == IR_TC_FULL ? rows : 1;
    int64_t c = o->cls == IR_TC_FULL ? cols : o->cls == IR_TC_ROW ? rows
              : o->cls == IR_TC_COL ? cols : 1;
    v->rows = (uint32_t)r;
    v->cols = (uint32_t)c;
    v->dst = o->lx;
    v->dst_rs = (int32_t)c;
    for (int q = 0; q < n->nin; q++) {
        const IrTileVal *x = tval(tp, n->in[q]);
        if (x->src == IR_TV_CONST && plan_imm_slot(g, n, q) && !(v->flags & ISA_F_IMM)) {
            v->flags |= q == 1 ? ISA_F_IMM : ISA_F_IMM_A;
            v->imm = x->imm;
            continue;
        }
        IR_ASSERT(x->lx != UINT32_MAX);
        v->src[q] = x->lx;
        operand_strides(o->cls, x->cls, cols, &v->src_rs[q], &v->src_cs[q]);
    }
    if ((v->flags & ISA_F_IMM) && (v->flags & ISA_F_IMM_A))
        IR_ASSERT(!"two immediates");
    cg_push(e, &in);
}

/* fp16 mode: when tile program tp stores a graph output whose last step is the CAST
 * that widens a DLFloat16 tile to float32 (the conversion at the bundle's edge), that
 * tile, to be stored with the conversion (STORE flag F32) instead of the CAST; NULL
 * otherwise. */
static const IrTileVal *store_widening(const CgEmit *e, const IrTileProg *tp)
{
    IrGraph *g = e->g;
    if (!tp->store || tp->nsteps == 0 || tp->out.root == IR_NONE)
        return NULL;
    const IrNode *n = ir_node(g, tp->steps[tp->nsteps - 1]);
    const IrTileVal *res = &tp->vals[tp->result];
    if (n->op != IR_OP_CAST || n->out[0] != res->v || res->dtype != ISA_DT_F32 ||
        ir_val(g, tp->out.root)->kind == IR_VAL_INPUT ||
        e->s->val[tp->out.root].seg < ISA_SEG_IO0 + g->ninputs ||
        e->s->val[tp->out.root].dram_offset != 0)
        return NULL;
    const IrTileVal *x = tval(tp, n->in[0]);
    return x->dtype == ISA_DT_DLF16 && x->cls == res->cls && x->lx != UINT32_MAX ? x : NULL;
}

/* Run tile program tp on the tile (start, len) of its iteration space. */
void cg_tp_run(CgEmit *e, const IrTileProg *tp, const int64_t *start, const int64_t *len)
{
    int64_t rows = 1, cols = 1;
    for (int i = 0; i < tp->nd; i++) {
        if (i < tp->nrow)
            rows *= len[tp->order[i]];
        else
            cols *= len[tp->order[i]];
    }
    for (uint32_t i = 0; i < tp->nvals; i++)
        if (tp->vals[i].src == IR_TV_LOAD)
            load_val(e, tp, &tp->vals[i], start, len);
    const IrTileVal *res = &tp->vals[tp->result], *wide = store_widening(e, tp);
    for (uint32_t s = 0; s < tp->nsteps - (wide != NULL); s++)
        emit_step(e, tp, ir_node(e->g, tp->steps[s]), rows, cols);
    if (!tp->store)
        return;
    CgDims d = {0};                         /* dims the output does not vary along: once */
    for (int i = 0; i < tp->nd; i++) {
        int dd = tp->order[i];
        cg_dims_add(&d, tp->out.is[dd] || in_class(tp, i, res->cls) ? len[dd] : 1,
                    tp->out.is[dd], 0);
    }
    int64_t st = 1;                         /* LX strides over the class's dims, else 0 */
    for (int i = tp->nd - 1; i >= 0; i--) {
        if (!in_class(tp, i, res->cls))
            continue;
        d.ls[i] = st;
        st *= len[tp->order[i]];
    }
    uint32_t seg;
    int64_t off;
    const IrTileVal *src = wide ? wide : res;
    cg_access_at(e, &tp->out, start, tp->nd, src->esize, &seg, &off);
    e->store_f32 = wide != NULL;           /* offsets in 2-byte units: see cg_dma.c */
    cg_dma(e, ISA_STORE, seg, off, src->lx, src->esize, &d);
    e->store_f32 = false;
}
