/* onnx_flex_attention.c: FlexAttention (domain ai.onnx.preview, version 1) as core ops.
 *
 * The operator's function body, step by step (T: the dtype of Q, K, V; P: the softmax
 * precision, float32 unless T is float64 or the softmax_precision attribute says
 * otherwise):
 *   K, V heads repeated for grouped-query attention (K/V head h/group for query head h)
 *   s      = sqrt(scale) rounded to T (scale: the attribute, else 1/sqrt(head_size),
 *            in float32)
 *   scores = (Q*s) (K*s)^T                       in T
 *   scores = score_mod(cast(scores, P))          the subgraph, inlined, if given
 *   probs  = prob_mod(softmax(scores, axis -1))  in P
 *   Y      = probs V (in P when P != T, cast back to T)
 * For float16/bfloat16 T the steps in T compute in float32 and are rounded to T where
 * the body produces a T value (the product with s, the scores), so the result matches
 * the body node for node. The modifier subgraphs are inlined like control-flow bodies
 * (dec_call_body): one formal input (B, Hq, L, S) in P, one output of the same type.
 */
#include <math.h>

#include "onnx.h"

/* Whether t is a float type the device only stores (its arithmetic runs in float32). */
static bool is_half(IrDType t)
{
    return t == IR_DT_F16 || t == IR_DT_BF16;
}

/* Whether t is a dtype FlexAttention takes for Q, K, V or softmax_precision. */
static bool fa_float(IrDType t)
{
    return t == IR_DT_F32 || t == IR_DT_F64 || is_half(t);
}

/* x computed in the working dtype, rounded to t as the body's step in t does (a no-op
 * unless t is a half type: then x is float32 and comes back in float32). */
static ValId in_t(DecCtx *c, ValId x, IrDType t)
{
    return is_half(t) ? dec_cast(c, dec_cast(c, x, t), IR_DT_F32) : x;
}

/* K or V heads [B, Hk, S, d] repeated to [B, Hk*rep, S, d] (each head rep times). */
static ValId repeat_heads(DecCtx *c, ValId x, int64_t rep)
{
    if (rep == 1)
        return x;
    const IrType *t = dec_ty(c, x);
    int64_t b = t->dims[0], h = t->dims[1], s = t->dims[2], d = t->dims[3];
    int64_t d5[5] = {b, h, 1, s, d}, e5[5] = {b, h, rep, s, d}, o4[4] = {b, h * rep, s, d};
    return dec_reshape(c, dec_expand(c, dec_reshape(c, x, d5, 5), e5, 5), o4, 4);
}

/* Check Q, K, V: rank 4, one float dtype, matching batch, head and sequence sizes,
 * query heads a multiple of the K/V heads. */
static bool fa_shapes(DecCtx *c, ValId q, ValId k, ValId v)
{
    const IrType *tq = dec_ty(c, q), *tk = dec_ty(c, k), *tv = dec_ty(c, v);
    if (tq->rank != 4 || tk->rank != 4 || tv->rank != 4) {
        dec_err(c, "Q, K and V must be rank-4 tensors (batch, heads, sequence, head size), "
                "not of rank %d, %d and %d", tq->rank, tk->rank, tv->rank);
        return false;
    }
    if (!fa_float(tq->dtype) || tk->dtype != tq->dtype || tv->dtype != tq->dtype) {
        dec_err(c, "Q, K and V must have one dtype among float16, bfloat16, float32 and "
                "float64, not %s, %s and %s", ir_dtype_name(tq->dtype),
                ir_dtype_name(tk->dtype), ir_dtype_name(tv->dtype));
        return false;
    }
    if (tk->dims[0] != tq->dims[0] || tv->dims[0] != tq->dims[0] ||
        tk->dims[3] != tq->dims[3] || tv->dims[1] != tk->dims[1] ||
        tv->dims[2] != tk->dims[2]) {
        dec_err(c, "K must be (batch, kv_heads, kv_length, head_size) and V (batch, "
                "kv_heads, kv_length, v_head_size) for Q (batch, q_heads, q_length, "
                "head_size)");
        return false;
    }
    if (tk->dims[1] < 1 || tq->dims[1] % tk->dims[1] != 0) {
        dec_err(c, "the query heads (%lld) must be a multiple of the key/value heads (%lld)",
                (long long)tq->dims[1], (long long)tk->dims[1]);
        return false;
    }
    return true;
}

/* Apply modifier subgraph attribute `name` to x (unchanged when absent); the result
 * must keep x's type. IR_NONE when reported. */
static ValId fa_mod(DecCtx *c, const char *name, ValId x)
{
    const IrAttr *a = ir_attr_find(c->n, name);
    if (!a)
        return x;
    if (a->kind != IR_ATTR_GRAPH || !a->graph) {
        dec_err(c, "attribute '%s' must be a graph", name);
        return IR_NONE;
    }
    if (a->graph->noutputs != 1) {
        dec_err(c, "%s must have one output, not %u", name, a->graph->noutputs);
        return IR_NONE;
    }
    ValId r;
    if (!dec_call_body(c, a->graph, 1, &x, &r))
        return IR_NONE;
    const IrType *tx = dec_ty(c, x), *tr = dec_ty(c, r);
    if (!ir_type_eq(tx, tr)) {
        dec_err(c, "%s must return a tensor of its input's type (%s of rank %d), not %s "
                "of rank %d", name, ir_dtype_name(tx->dtype), tx->rank,
                ir_dtype_name(tr->dtype), tr->rank);
        return IR_NONE;
    }
    return r;
}

bool dec_flexattention(DecCtx *c)
{
    ValId q = dec_in(c, 0), k = dec_in(c, 1), v = dec_in(c, 2);
    if (q == IR_NONE || k == IR_NONE || v == IR_NONE) {
        dec_err(c, "inputs Q, K and V are required");
        return false;
    }
    if (!fa_shapes(c, q, k, v))
        return false;
    IrDType t = dec_ty(c, q)->dtype, w = is_half(t) ? IR_DT_F32 : t;
    IrDType p = (IrDType)dec_ai(c, "softmax_precision", t == IR_DT_F64 ? IR_DT_F64 : IR_DT_F32);
    if (!fa_float(p)) {
        dec_err(c, "softmax_precision %d is not a float16, bfloat16, float32 or float64 "
                "dtype", (int)p);
        return false;
    }
    int64_t rep = dec_ty(c, q)->dims[1] / dec_ty(c, k)->dims[1];
    float scale = dec_has_attr(c, "scale") ? (float)dec_af(c, "scale", 1.0)
                                           : 1.0f / sqrtf((float)dec_ty(c, q)->dims[3]);
    ValId s = dec_cast(c, dec_scalar(c->g, t, (double)sqrtf(scale)), w); /* rounded to T */
    ValId qs = in_t(c, dec_bin(c, IR_BIN_MUL, dec_cast(c, q, w), s), t);
    ValId ks = in_t(c, dec_bin(c, IR_BIN_MUL, dec_cast(c, repeat_heads(c, k, rep), w), s), t);
    int64_t perm[4] = {0, 1, 3, 2};
    ValId mm[2] = {qs, dec_transpose(c, ks, perm)};
    ValId scores = in_t(c, dec_op(c, IR_OP_MATMUL, mm, 2, NULL, 0), t);
    scores = fa_mod(c, "score_mod", dec_cast(c, scores, p));
    if (scores == IR_NONE)
        return false;
    ValId probs = fa_mod(c, "prob_mod", dec_softmax_last(c, scores));
    if (probs == IR_NONE)
        return false;
    mm[0] = probs;
    mm[1] = dec_cast(c, repeat_heads(c, v, rep), p);
    c->out[0] = dec_cast(c, dec_op(c, IR_OP_MATMUL, mm, 2, NULL, 0), t);
    return true;
}
