/* requant_id.c: pass_requant_id, a requantization with the parameters its input was
 * dequantized with gives the 8-bit data back.
 *
 * A QDQ model quantizes again, with the same scale and zero point, what it has just
 * dequantized when an op between them was folded away (a bias add of zeros) or when
 * the exporter repeated a pair around a view. Decomposed, the 8-bit q goes through
 *     d = float(q) - zd;  x = d * s;  r = round(x / s');  y = clamp(r + zq, lo, hi)
 * and a CAST back to q's type. With s' == s (the same float32), zq == zd and a clamp
 * that spans q's whole type, y == q exactly: d is an integer of magnitude at most 383
 * (|q| <= 255, |zd| <= 128 for the 8-bit types), x = d * s rounded once and x / s
 * rounded once differ from d by a few units of its last place, far below 0.5, so r == d
 * and r + zq == q, which the clamp keeps. The scale is required to keep 384 * s a
 * normal float32 below 1e38, so that neither product overflows nor loses precision in
 * subnormals. Every reader of y's CAST then reads q; what is left unread goes (dce).
 * decompose (dec_qdq_requantized) does the same when the QuantizeLinear reads the
 * DequantizeLinear directly; this pass catches the pairs that only meet after folding.
 */
#include <math.h>
#include <string.h>

#include "pass.h"

/* The float32 scalar constant v in *x; false when v is not one. */
static bool rid_scalar(IrGraph *g, ValId v, double *x)
{
    const IrValue *cv = ir_val(g, v);
    if (!ir_is_const(g, v) || cv->type.dtype != IR_DT_F32 || !cv->data)
        return false;
    for (int i = 0; i < cv->type.rank; i++)
        if (cv->type.dims[i] != 1)
            return false;
    *x = *(const float *)cv->data;
    return true;
}

/* The live node defining v when it has op `op` (and, for fn >= 0, that function). */
static const IrNode *rid_def(IrGraph *g, ValId v, IrOp op, int fn)
{
    NodeId d = ir_val(g, v)->def;
    if (d == IR_NONE || d >= g->nnodes || g->nodes[d].dead || g->nodes[d].op != op)
        return NULL;
    const IrNode *n = &g->nodes[d];
    return (fn < 0 || ir_attr_get_int(n, "fn", -1) == fn) ? n : NULL;
}

/* Binary node n of a value and a float32 scalar constant: the value's operand index is
 * returned (-1: not such a node), the constant in *x. With const_second, the constant
 * must be the second operand (a subtraction or division). */
static int rid_const_op(IrGraph *g, const IrNode *n, bool const_second, double *x)
{
    if (!n || n->nin != 2)
        return -1;
    if (rid_scalar(g, n->in[1], x) && !ir_is_const(g, n->in[0]))
        return 0;
    if (!const_second && rid_scalar(g, n->in[0], x) && !ir_is_const(g, n->in[1]))
        return 1;
    return -1;
}

/* The 8-bit q that CAST node c gives back (the file's comment), or IR_NONE. */
static ValId rid_match(IrGraph *g, const IrNode *c)
{
    IrDType to = ir_vtype(g, c->out[0])->dtype;
    if (c->nin != 1 || (to != IR_DT_I8 && to != IR_DT_U8) ||
        ir_vtype(g, c->in[0])->dtype != IR_DT_F32)
        return IR_NONE;
    double tmin = to == IR_DT_I8 ? -128 : 0, tmax = to == IR_DT_I8 ? 127 : 255;
    double hi, lo, zq = 0, s2, s1, zd = 0;
    const IrNode *mn = rid_def(g, c->in[0], IR_OP_BINARY, IR_BIN_MIN);
    int i = rid_const_op(g, mn, false, &hi);
    const IrNode *mx = i < 0 ? NULL : rid_def(g, mn->in[i], IR_OP_BINARY, IR_BIN_MAX);
    if ((i = rid_const_op(g, mx, false, &lo)) < 0 || lo > tmin || hi < tmax)
        return IR_NONE;
    ValId r = mx->in[i];
    const IrNode *ad = rid_def(g, r, IR_OP_BINARY, IR_BIN_ADD);
    if (ad && (i = rid_const_op(g, ad, false, &zq)) >= 0)
        r = ad->in[i];
    const IrNode *rn = rid_def(g, r, IR_OP_UNARY, IR_UN_ROUND);
    const IrNode *dv = rn ? rid_def(g, rn->in[0], IR_OP_BINARY, IR_BIN_DIV) : NULL;
    if ((i = rid_const_op(g, dv, true, &s2)) < 0)
        return IR_NONE;
    const IrNode *mu = rid_def(g, dv->in[i], IR_OP_BINARY, IR_BIN_MUL);
    if ((i = rid_const_op(g, mu, false, &s1)) < 0 || s1 != s2 || !(fabs(s1) > 1e-30) ||
        !(fabs(s1) * 384 < 1e38))
        return IR_NONE;
    ValId d = mu->in[i];
    const IrNode *sb = rid_def(g, d, IR_OP_BINARY, IR_BIN_SUB);
    if (sb && (i = rid_const_op(g, sb, true, &zd)) >= 0)
        d = sb->in[i];
    const IrNode *cf = rid_def(g, d, IR_OP_CAST, -1);
    if (!cf || zd != zq || zq != floor(zq) || fabs(zq) > 128 ||
        ir_vtype(g, cf->out[0])->dtype != IR_DT_F32 || ir_vtype(g, cf->in[0])->dtype != to)
        return IR_NONE;
    return cf->in[0];
}

bool pass_requant_id(IrGraph *g, const PassOptions *opt)
{
    bool changed = false;
    for (NodeId n = 0; n < g->nnodes && !ir_failed(g); n++) {
        const IrNode *c = &g->nodes[n];
        if (c->dead || c->op != IR_OP_CAST || c->nout != 1)
            continue;
        ValId q = rid_match(g, c);
        const IrType *tq = q == IR_NONE ? NULL : ir_vtype(g, q), *tc = ir_vtype(g, c->out[0]);
        if (!tq || tq->rank != tc->rank ||
            memcmp(tq->dims, tc->dims, sizeof(int64_t) * (size_t)tq->rank))
            continue;
        ir_replace_uses(g, c->out[0], q);
        changed = true;
    }
    return changed ? pass_dce(g, opt) : !ir_failed(g);
}
