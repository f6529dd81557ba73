/* onnx_qdq.c: QDQ contractions as int8 contractions.
 *
 * A quantized model in QDQ form computes its contractions on dequantized values:
 *   y = Conv(DequantizeLinear(xq, sx, zx), DequantizeLinear(wq, sw, zw), bias)
 * (MatMul and Gemm alike), usually followed by a QuantizeLinear of y. Decomposing the
 * DequantizeLinear nodes to float arithmetic (onnx_quant.c) would make the contraction
 * a float one (and fold constant weights to floats). Instead dec_dequantize notes each
 * result it makes (dec_qdq_note: the integer data, scale, zero point and axis), and
 * the contraction handlers ask dec_qdq_conv / dec_qdq_matmul whether both operands are
 * such results with scales that factor out of the sum: the activation's per tensor,
 * the weight's per tensor or per output channel. They then compute
 *   y = float(S) * (sx * sw) (+ bias)
 * where S is the exact int32 contraction of the 8-bit data with its zero points
 * (dec_int_conv, dec_int_matmul: the int8 matrix unit). A bias that is itself a
 * dequantized int32 tensor with scale sx * sw (and no zero point) is added to S in
 * int32 first, as onnxruntime's QLinearConv does. A product of two activations
 * (attention's scores and weighted sum) is such an int8 product too: the sums its zero
 * points' corrections need are computed beside it in its kernel (plan_sums.c), so its
 * operands cross DRAM as 8-bit data. What follows y (a QuantizeLinear:
 * scale, round half to even, zero point, saturate; or Relu, Add, ...) stays ordinary
 * pointwise ops, which the back end fuses into the contraction's epilogue, so a
 * requantized layer stores int8 activations.
 */
#include <math.h>
#include <string.h>

#include "onnx.h"

typedef struct {
    ValId out;                             /* the float result of DequantizeLinear */
    ValId x, scale, zp;                    /* its integer data, scale, zero point (or none) */
    int axis;                              /* the axis of a per-axis scale */
    bool once;                             /* out has one reader in the model (no graph
                                              output): an integer contraction that takes
                                              x instead leaves it unread (drop_float) */
} DecQdq;

typedef struct {
    ValId y, acc, mult;                    /* y = acc * mult: scale_out's float result */
} DecScaled;

struct DecQdqTab {
    DecQdq *e;
    uint32_t n, cap;
    DecScaled *s;                          /* scaled accumulators */
    uint32_t ns, caps;
};

/* Ops that only move or select elements: a per-tensor dequantization commutes with
 * them (Gather: an embedding table's rows are gathered as 8-bit data, a quarter of the
 * float32 bytes, and the folded float32 table is not stored; MaxPool: with a positive scale, which keeps the order; its padding is the
 * lowest 8-bit value, which dequantizes below every input as -inf does). */
static bool move_op(const char *op)
{
    static const char *const ops[] = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten",
                                      "MaxPool", "Gather"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i]) == 0)
            return true;
    return false;
}

DecQdqTab *dec_qdq_new(IrGraph *g)
{
    uint32_t cap = 0;
    for (NodeId i = 0; i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        cap += n->op == IR_OP_FOREIGN && n->foreign.op_type &&
               (strcmp(n->foreign.op_type, "DequantizeLinear") == 0 || move_op(n->foreign.op_type));
    }
    DecQdqTab *t = ir_scratch(g, sizeof *t);
    t->e = ir_scratch(g, (cap ? cap : 1) * sizeof *t->e);
    t->n = 0;
    t->cap = cap;
    t->s = ir_scratch(g, (cap ? cap : 1) * sizeof *t->s);
    t->ns = 0;
    t->caps = cap;
    return t;
}

void dec_qdq_note(DecCtx *c, ValId out, ValId x, ValId scale, ValId zp, int axis)
{
    DecQdqTab *t = c->qdq;
    if (!t || t->n >= t->cap || dec_ty(c, out)->dtype != IR_DT_F32)
        return;
    ValId old = c->n->out[0];              /* (not in an inlined body, which may run
                                              more than once) */
    bool once = (!c->outg || c->outg == c->g) && old < c->nuses && c->uses[old] == 1;
    t->e[t->n++] = (DecQdq){out, x, scale, zp, axis, once};
}

/* The integer contraction just built reads q's integer data: a dequantized weight that
 * only this contraction read (a folded float copy of it, 4 bytes a parameter) is given
 * back. An activation's result is no constant and stays. */
static void drop_float(DecCtx *c, const DecQdq *q)
{
    if (q->once && ir_is_const(c->g, q->out))
        ir_const_free(c->g, q->out);
}

/* The note of the DequantizeLinear result v, or NULL. */
static const DecQdq *find(const DecCtx *c, ValId v)
{
    for (uint32_t i = 0; c->qdq && v != IR_NONE && i < c->qdq->n; i++)
        if (c->qdq->e[i].out == v)
            return &c->qdq->e[i];
    return NULL;
}

/* Whether q's data is 8-bit and its scale per tensor, or (axis >= 0) per entry of that
 * axis of its rank-r data. */
static bool q_ok(const DecCtx *c, const DecQdq *q, int axis)
{
    if (!q)
        return false;
    IrDType t = dec_ty(c, q->x)->dtype;
    if (t != IR_DT_I8 && t != IR_DT_U8)
        return false;
    const IrType *ts = dec_ty(c, q->scale);
    if (dec_numel(ts) == 1 && ts->rank <= 1)
        return true;
    return axis >= 0 && ts->rank == 1 && q->axis == axis &&
           ts->dims[0] == dec_ty(c, q->x)->dims[axis];
}

/* Whether constants a and b hold the same numbers (relative 1e-6). */
static bool same_values(DecCtx *c, ValId a, ValId b)
{
    if (!ir_is_const(c->g, a) || !ir_is_const(c->g, b))
        return false;
    const IrType *ta = dec_ty(c, a), *tb = dec_ty(c, b);
    int64_t n = dec_numel(ta);
    if (n != dec_numel(tb))
        return false;
    for (int64_t i = 0; i < n; i++) {
        double x = dec_load(ta->dtype, ir_val(c->g, a)->data, i);
        double y = dec_load(tb->dtype, ir_val(c->g, b)->data, i);
        if (fabs(x - y) > 1e-6 * fabs(y))
            return false;
    }
    return true;
}

/* The int32 accumulator acc (output channels along `axis` of rank r) of operands with
 * scales qa (per tensor) and qb (per tensor or per output channel) as float:
 * float(acc) * (sa * sb). A bias *bias that is a dequantized int32 tensor of scale
 * sa * sb is added to acc first and *bias set to IR_NONE; otherwise the caller adds it. */
static ValId scale_out(DecCtx *c, ValId acc, const DecQdq *qa, const DecQdq *qb, ValId *bias,
                       int axis, int r)
{
    ValId mult = dec_bin(c, IR_BIN_MUL, dec_reshape(c, dec_cast(c, qa->scale, IR_DT_F32), NULL, 0),
                         dec_cast(c, qb->scale, IR_DT_F32));
    const DecQdq *qc = find(c, *bias);
    if (qc && dec_ty(c, qc->x)->dtype == IR_DT_I32 && dec_ty(c, qc->x)->rank == 1 &&
        (qc->zp == IR_NONE || dec_ty(c, qc->zp)->dtype == IR_DT_I32) &&
        same_values(c, dec_cast(c, qc->scale, IR_DT_F32), mult)) {
        ValId b = qc->x;
        if (qc->zp != IR_NONE)
            b = dec_bin(c, IR_BIN_SUB, b, qc->zp);
        acc = dec_bin(c, IR_BIN_ADD, acc, dec_view_along(c, b, axis, r));
        *bias = IR_NONE;
    }
    ValId accf = dec_cast(c, acc, IR_DT_F32), mv = dec_view_along(c, mult, axis, r);
    ValId y = dec_bin(c, IR_BIN_MUL, accf, mv);
    if (c->qdq->ns < c->qdq->caps)
        c->qdq->s[c->qdq->ns++] = (DecScaled){y, accf, mv};
    return y;
}

ValId dec_qdq_divided(DecCtx *c, ValId x, ValId scale)
{
    for (uint32_t i = 0; c->qdq && i < c->qdq->ns; i++) {
        const DecScaled *s = &c->qdq->s[i];
        if (s->y != x || dec_numel(dec_ty(c, scale)) != 1 || !ir_is_const(c->g, scale))
            continue;
        ValId m = dec_bin(c, IR_BIN_DIV, s->mult,
                          dec_reshape(c, dec_cast(c, scale, IR_DT_F32), NULL, 0));
        return ir_is_const(c->g, m) ? dec_bin(c, IR_BIN_MUL, s->acc, m) : IR_NONE;
    }
    return IR_NONE;
}

bool dec_qdq_conv(DecCtx *c, bool *ok)
{
    const DecQdq *qx = find(c, dec_in(c, 0)), *qw = find(c, dec_in(c, 1));
    if (!q_ok(c, qx, -1) || !q_ok(c, qw, 0) || dec_ty(c, qx->x)->rank < 3 ||
        dec_ty(c, qw->x)->rank != dec_ty(c, qx->x)->rank)
        return false;
    ValId bias = dec_in(c, 2);
    int r = dec_ty(c, qx->x)->rank;
    ValId acc = dec_int_conv(c, qx->x, qx->zp, qw->x, qw->zp);
    *ok = acc != IR_NONE;
    if (!*ok)
        return true;
    ValId y = scale_out(c, acc, qx, qw, &bias, 1, r);
    if (bias != IR_NONE)
        y = dec_bin(c, IR_BIN_ADD, y, dec_chan_view(c, bias, r));
    c->out[0] = y;
    drop_float(c, qw);
    return true;
}

ValId dec_qdq_matmul(DecCtx *c, ValId a, ValId b, bool trans_b, ValId *bias)
{
    const DecQdq *qa = find(c, a), *qb = find(c, b);
    if (!q_ok(c, qa, -1) || !qb || dec_ty(c, qa->x)->rank < 2 || dec_ty(c, qb->x)->rank < 2)
        return IR_NONE;
    int rb = dec_ty(c, qb->x)->rank;
    if (!q_ok(c, qb, trans_b ? rb - 2 : rb - 1))
        return IR_NONE;
    ValId bq = qb->x, zb = qb->zp;
    if (trans_b) {
        static const int64_t t2[2] = {1, 0};
        if (rb != 2)
            return IR_NONE;
        bq = dec_transpose(c, bq, t2);
    }
    ValId acc = dec_int_matmul(c, qa->x, qa->zp, bq, zb);
    int r = dec_ty(c, acc)->rank;
    ValId y = scale_out(c, acc, qa, qb, bias, r - 1, r);
    if (y != IR_NONE)
        drop_float(c, qb);
    return y;
}

/* Whether constant (or absent: 0) zero points a and b hold the same value, and
 * constant scales sa and sb too (one element each). */
static bool same_params(DecCtx *c, ValId sa, ValId za, ValId sb, ValId zb)
{
    if (dec_numel(dec_ty(c, sa)) != 1 || !same_values(c, sa, sb))
        return false;
    if (za == IR_NONE || zb == IR_NONE) {
        ValId z = za == IR_NONE ? zb : za;
        return z == IR_NONE || (ir_is_const(c->g, z) && dec_numel(dec_ty(c, z)) == 1 &&
                                dec_load(dec_ty(c, z)->dtype, ir_val(c->g, z)->data, 0) == 0);
    }
    if (!ir_is_const(c->g, za) || !ir_is_const(c->g, zb) || dec_numel(dec_ty(c, za)) != 1 ||
        dec_numel(dec_ty(c, zb)) != 1)
        return false;
    return dec_load(dec_ty(c, za)->dtype, ir_val(c->g, za)->data, 0) ==
           dec_load(dec_ty(c, zb)->dtype, ir_val(c->g, zb)->data, 0);
}

ValId dec_qdq_requantized(DecCtx *c, ValId x, ValId scale, ValId zp, IrDType out)
{
    const DecQdq *q = find(c, x);
    if (!q || dec_ty(c, q->x)->dtype != out || !same_params(c, scale, zp, q->scale, q->zp))
        return IR_NONE;
    return q->x;
}

bool dec_qdq_move(DecCtx *c, DecFn fn, bool *ok)
{
    const IrNode *n = c->n;
    if (!c->qdq || n->nin < 1 || n->nout != 1 || !n->foreign.op_type || !move_op(n->foreign.op_type))
        return false;
    const DecQdq *q = find(c, n->in[0]);
    if (!q_ok(c, q, -1) || (strcmp(n->foreign.op_type, "MaxPool") == 0 &&
                            (!ir_is_const(c->g, q->scale) ||
                             !(dec_load(dec_ty(c, q->scale)->dtype, ir_val(c->g, q->scale)->data, 0) > 0))))
        return false;
    DecQdq qq = *q;
    IrNode n2 = *n;
    ValId in[IR_MAX_RANK];
    if (n->nin > IR_MAX_RANK)
        return false;
    memcpy(in, n->in, (size_t)n->nin * sizeof *in);
    in[0] = qq.x;
    n2.in = in;
    DecCtx c2 = *c;
    c2.n = &n2;
    c2.out[0] = IR_NONE;
    *ok = fn(&c2) && c2.out[0] != IR_NONE;
    if (!*ok)
        return true;
    ValId first = c->g->nvals, w = dec_cast(c, c2.out[0], IR_DT_F32), d = w;
    if (qq.zp != IR_NONE)
        d = dec_bin(c, IR_BIN_SUB, w, dec_reshape(c, dec_cast(c, qq.zp, IR_DT_F32), NULL, 0));
    ValId v = dec_bin(c, IR_BIN_MUL, d, dec_reshape(c, dec_cast(c, qq.scale, IR_DT_F32), NULL, 0));
    c->out[0] = v;
    dec_drop_temp(c, w, v, first);         /* folded: the float copies on the way */
    dec_drop_temp(c, d, v, first);
    dec_qdq_note(c, v, c2.out[0], qq.scale, qq.zp, 0);
    return true;
}
