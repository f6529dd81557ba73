/* onnx_msft.c: operators of the com.microsoft domain (onnxruntime's contrib operators)
 * as core ops: the ones onnxruntime's graph and transformer optimizers write into the
 * models they save (fused GELUs, FusedMatMul, skip layer norms, the RMS norms of T5 and
 * Llama exports), so that such a published model compiles as its unfused form would.
 * The 8-bit operators of its QOperator quantization format are in onnx_qlinear_ms.c.
 *
 * Semantics follow onnxruntime's contrib operator documentation (ContribOperators.md):
 *   Gelu(X)                      0.5 x (1 + erf(x / sqrt 2))
 *   BiasGelu(A, B)               Gelu(A + B)
 *   FastGelu(X, bias?)           the tanh approximation of Gelu(X + bias)
 *   QuickGelu(X) {alpha 1.702}   x sigmoid(alpha x)
 *   FusedMatMul(A, B) {alpha, transA, transB, transBatchA, transBatchB}
 *                                alpha op(A) op(B), op moving the first axis behind
 *                                the batch axes (transBatch*), then swapping the last two
 *   SkipLayerNormalization(input, skip, gamma, beta?, bias?) {epsilon}
 *                                s = input + skip + bias; LayerNormalization(s) over
 *                                the last axis; outputs y, mean, inv_std_var, s
 *   SkipSimplifiedLayerNormalization(input, skip, gamma, bias?) {epsilon}
 *                                the same with the RMS norm: y, (mean: unused),
 *                                inv_std_var, s
 *   RotaryEmbedding(input, position_ids, cos_cache, sin_cache) {interleaved, num_heads,
 *       rotary_embedding_dim}   the default domain's RotaryEmbedding (opset 23) with its
 *                                inputs in that order; position_ids of one element is
 *                                the offset of position 0 (positions offset + 0 .. S-1)
 *   FusedConv(X, W, B?, Z?) {Conv's, activation, activation_params}
 *                                activation(Conv(X, W, B) + Z), what onnxruntime's
 *                                extended optimization saves for every CNN
 *   FusedGemm(A, B, C?) {Gemm's, activation, activation_alpha, _beta}
 *                                activation(Gemm(A, B, C))
 *                                (activations: Relu, Sigmoid, Tanh, LeakyRelu, Clip,
 *                                HardSigmoid)
 * and SimplifiedLayerNormalization(X, scale) {axis, epsilon, stash_type} of the default
 * domain (onnxruntime registers it there): the RMS norm over [axis, rank) computed in
 * the stash type; outputs y and inv_std_var.
 */
#include <string.h>

#include "onnx.h"

/* Runs handler fn as if the node had inputs in[0..nin) and, with attrs, its own
 * attributes (else none: each takes its defaults), and op_type op (NULL: the node's);
 * its results into out[0..DEC_MAX_OUT). */
bool dec_sub_run(DecCtx *c, DecFn fn, const char *op, const ValId *in, int nin, bool attrs,
                 ValId *out)
{
    return dec_sub_run_with(c, fn, op, in, nin, attrs ? c->n->attrs : NULL,
                            attrs ? c->n->nattrs : 0, out);
}

/* The same with the attributes at[0..nat) instead of the node's. */
bool dec_sub_run_with(DecCtx *c, DecFn fn, const char *op, const ValId *in, int nin,
                      IrAttr *at, int nat, ValId *out)
{
    ValId buf[DEC_SUB_MAX_IN];
    IR_ASSERT(nin <= DEC_SUB_MAX_IN);
    memcpy(buf, in, (size_t)nin * sizeof *buf);
    IrNode n2 = *c->n;
    n2.in = buf;
    n2.nin = (uint16_t)nin;
    n2.attrs = at;
    n2.nattrs = (uint16_t)nat;
    if (op)
        n2.foreign.op_type = op;
    DecCtx c2 = *c;
    c2.n = &n2;
    for (int i = 0; i < DEC_MAX_OUT; i++)
        c2.out[i] = IR_NONE;
    if (!fn(&c2))
        return false;
    memcpy(out, c2.out, sizeof c2.out);
    return true;
}

/* Inputs 0 .. n-1 of the node are present; reports the first one missing. */
static bool need_inputs(DecCtx *c, int n)
{
    for (int i = 0; i < n; i++)
        if (!dec_need_in(c, i))
            return false;
    return true;
}

bool dec_ms_gelu(DecCtx *c)
{
    const char *op = c->n->foreign.op_type;
    bool bias = !strcmp(op, "BiasGelu");
    if (!need_inputs(c, bias ? 2 : 1))
        return false;
    ValId x = dec_in(c, 0);
    if (bias || (!strcmp(op, "FastGelu") && dec_in(c, 1) != IR_NONE))
        x = dec_bin(c, IR_BIN_ADD, x, dec_in(c, 1));
    c->out[0] = dec_gelu_of(c, x, !strcmp(op, "FastGelu"));
    return true;
}

bool dec_quick_gelu(DecCtx *c)
{
    if (!need_inputs(c, 1))
        return false;
    ValId x = dec_in(c, 0);
    ValId s = dec_un(c, IR_UN_SIGMOID, dec_bin_s(c, IR_BIN_MUL, x, dec_af(c, "alpha", 1.702)));
    c->out[0] = dec_bin(c, IR_BIN_MUL, x, s);
    return true;
}

bool dec_fused_matmul(DecCtx *c)
{
    if (!need_inputs(c, 2))
        return false;
    ValId ab[2] = {dec_in(c, 0), dec_in(c, 1)}, out[DEC_MAX_OUT];
    static const char *const tb[2] = {"transBatchA", "transBatchB"}, *const tr[2] = {"transA", "transB"};
    for (int i = 0; i < 2; i++) {
        int r = dec_ty(c, ab[i])->rank;
        if (dec_ai(c, tb[i], 0) && r >= 3) {       /* [M, batch..., K] -> [batch..., M, K] */
            int64_t perm[IR_MAX_RANK];
            for (int a = 0; a < r - 2; a++)
                perm[a] = a + 1;
            perm[r - 2] = 0;
            perm[r - 1] = r - 1;
            ab[i] = dec_transpose(c, ab[i], perm);
        }
        if (dec_ai(c, tr[i], 0))
            ab[i] = dec_swap_last(c, ab[i]);
    }
    if (!dec_sub_run(c, dec_matmul, "MatMul", ab, 2, false, out))
        return false;
    double alpha = dec_af(c, "alpha", 1.0);
    c->out[0] = alpha == 1.0 ? out[0] : dec_bin_s(c, IR_BIN_MUL, out[0], alpha);
    return true;
}

/* input + skip (+ bias, input ib when present): the sum the skip norms normalise. */
static ValId skip_sum(DecCtx *c, int ib)
{
    ValId s = dec_bin(c, IR_BIN_ADD, dec_in(c, 0), dec_in(c, 1));
    return dec_in(c, ib) != IR_NONE ? dec_bin(c, IR_BIN_ADD, s, dec_in(c, ib)) : s;
}

bool dec_skip_layernorm(DecCtx *c)
{
    if (!need_inputs(c, 3))
        return false;
    ValId s = skip_sum(c, 4), in[3] = {s, dec_in(c, 2), dec_in(c, 3)}, out[DEC_MAX_OUT];
    if (!dec_sub_run(c, dec_layernorm, "LayerNormalization", in, 3, true, out))
        return false;
    c->out[0] = out[0];
    c->out[1] = out[1];
    c->out[2] = out[2];
    c->out[3] = s;
    return true;
}

/* The RMS norm of x over [axis, rank) in float type st: x * inv * scale (back in x's
 * type), *inv = 1 / sqrt(mean(x^2) + epsilon). */
static ValId rms(DecCtx *c, ValId x, ValId scale, int axis, IrDType st, ValId *inv)
{
    IrDType dt = dec_ty(c, x)->dtype;
    int r = dec_ty(c, x)->rank;
    int64_t axes[IR_MAX_RANK];
    for (int i = axis; i < r; i++)
        axes[i - axis] = i;
    ValId xs = dec_cast(c, x, st);
    ValId ms = dec_mean(c, dec_bin(c, IR_BIN_MUL, xs, xs), axes, r - axis, true);
    *inv = dec_un(c, IR_UN_RSQRT, dec_bin_s(c, IR_BIN_ADD, ms, dec_af(c, "epsilon", 1e-5)));
    ValId y = dec_cast(c, dec_bin(c, IR_BIN_MUL, xs, *inv), dt);
    return dec_bin(c, IR_BIN_MUL, y, scale);
}

bool dec_skip_simplified_layernorm(DecCtx *c)
{
    if (!need_inputs(c, 3))
        return false;
    ValId s = skip_sum(c, 3), inv;
    IrDType dt = dec_ty(c, s)->dtype;
    c->out[0] = rms(c, s, dec_in(c, 2), dec_ty(c, s)->rank - 1,
                    ir_dtype_is_float(dt) ? IR_DT_F32 : dt, &inv);
    c->out[2] = inv;
    c->out[3] = s;
    return true;
}

bool dec_simplified_layernorm(DecCtx *c)
{
    if (!need_inputs(c, 2))
        return false;
    ValId x = dec_in(c, 0), inv;
    int axis;
    if (!dec_axis(c, dec_ai(c, "axis", -1), dec_ty(c, x)->rank, &axis))
        return false;
    IrDType st = (IrDType)dec_ai(c, "stash_type", IR_DT_F32);
    if (!ir_dtype_is_float(st) || !ir_dtype_is_float(dec_ty(c, x)->dtype))
        st = dec_ty(c, x)->dtype;
    c->out[0] = rms(c, x, dec_in(c, 1), axis, st, &inv);
    c->out[1] = inv;
    return true;
}

bool dec_ms_rotary(DecCtx *c)
{
    if (!need_inputs(c, 4))
        return false;
    if (dec_af(c, "scale", 1.0) != 1.0 || dec_ai(c, "is_packed_batching", 0)) {
        dec_err(c, "unsupported: scale other than 1 or is_packed_batching");
        return false;
    }
    ValId x = dec_in(c, 0), pos = dec_in(c, 1), out[DEC_MAX_OUT];
    const IrType *tx = dec_ty(c, x);
    if (dec_numel(dec_ty(c, pos)) == 1 && tx->rank >= 3) {   /* an offset: positions */
        int64_t s = tx->dims[tx->rank == 4 ? 2 : 1], *v = ir_scratch(c->g, (size_t)s * 8 + 8);
        for (int64_t i = 0; i < s; i++)
            v[i] = i;
        int64_t d2[2] = {1, s};
        ValId off = dec_reshape(c, dec_cast(c, pos, IR_DT_I64), NULL, 0);
        pos = dec_bin(c, IR_BIN_ADD, dec_const_i64(c->g, d2, 2, v), off);
    }
    ValId in[4] = {x, dec_in(c, 2), dec_in(c, 3), pos};
    if (!dec_sub_run(c, dec_rotary, "RotaryEmbedding", in, 4, true, out))
        return false;
    c->out[0] = out[0];
    return true;
}

/* y through the fused activation named by attribute `act` (p: its parameters, np of
 * them: LeakyRelu alpha; Clip min, max; HardSigmoid alpha, beta); IR_NONE (reported)
 * for an unknown one. */
static ValId fused_activation(DecCtx *c, ValId y, const char *act, const double *p, int np)
{
    if (!strcmp(act, "Relu"))
        return dec_un(c, IR_UN_RELU, y);
    if (!strcmp(act, "Sigmoid"))
        return dec_un(c, IR_UN_SIGMOID, y);
    if (!strcmp(act, "Tanh"))
        return dec_un(c, IR_UN_TANH, y);
    if (!strcmp(act, "LeakyRelu")) {
        ValId neg = dec_bin_s(c, IR_BIN_MUL, y, np > 0 ? p[0] : 0.01);
        return dec_select(c, dec_bin_s(c, IR_BIN_LT, y, 0.0), neg, y);
    }
    if (!strcmp(act, "Clip") && np >= 2)
        return dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, y, p[0]), p[1]);
    if (!strcmp(act, "HardSigmoid")) {
        ValId v = dec_bin_s(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, y, np > 0 ? p[0] : 0.2),
                            np > 1 ? p[1] : 0.5);
        return dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, v, 0.0), 1.0);
    }
    dec_err(c, "unsupported: fused activation '%s'", act);
    return IR_NONE;
}

bool dec_fused_conv(DecCtx *c)
{
    if (!need_inputs(c, 2))
        return false;
    ValId in[3] = {dec_in(c, 0), dec_in(c, 1), dec_in(c, 2)}, out[DEC_MAX_OUT];
    if (!dec_sub_run(c, dec_conv, "Conv", in, in[2] != IR_NONE ? 3 : 2, true, out))
        return false;
    ValId y = dec_in(c, 3) != IR_NONE ? dec_bin(c, IR_BIN_ADD, out[0], dec_in(c, 3)) : out[0];
    const IrAttr *pa = ir_attr_find(c->n, "activation_params");
    bool fl = pa && pa->kind == IR_ATTR_FLOATS;
    const char *act = dec_as(c, "activation", "");
    c->out[0] = act[0] ? fused_activation(c, y, act, fl ? pa->floats : NULL, fl ? (int)pa->n : 0)
                       : y;
    return c->out[0] != IR_NONE;
}

bool dec_fused_gemm(DecCtx *c)
{
    if (!need_inputs(c, 2))
        return false;
    ValId in[3] = {dec_in(c, 0), dec_in(c, 1), dec_in(c, 2)}, out[DEC_MAX_OUT];
    if (!dec_sub_run(c, dec_gemm, "Gemm", in, in[2] != IR_NONE ? 3 : 2, true, out))
        return false;
    double p[2] = {dec_af(c, "activation_alpha", 0.01), dec_af(c, "activation_beta", 0.5)};
    const char *act = dec_as(c, "activation", "");
    if (!strcmp(act, "HardSigmoid") && !dec_has_attr(c, "activation_alpha"))
        p[0] = 0.2;
    c->out[0] = act[0] ? fused_activation(c, out[0], act, p, 2) : out[0];
    return c->out[0] != IR_NONE;
}
