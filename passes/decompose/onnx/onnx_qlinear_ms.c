/* onnx_qlinear_ms.c: the 8-bit operators of onnxruntime's QOperator quantization format
 * (domain com.microsoft) that have no integer contraction in them, as core ops: each
 * is the float operator between a DequantizeLinear of every 8-bit input and a
 * QuantizeLinear of its result (per-tensor scales and zero points, as the quantizer
 * writes them), which is how onnxruntime defines them:
 *   QLinearAdd, QLinearMul (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp)
 *   QLinearSigmoid, QLinearLeakyRelu {alpha} (X, X_scale, X_zp, Y_scale, Y_zp)
 *   QLinearAveragePool {pool attributes, channels_last}, QLinearGlobalAveragePool
 *       {channels_last} (X, X_scale, X_zp, Y_scale, Y_zp)
 *   QLinearConcat {axis} (Y_scale, Y_zp, then (X, X_scale, X_zp) per input)
 * A zero point left out is 0 of the data's type (QuantizeLinear alone would take uint8).
 * The pools round as onnxruntime does, which is not QuantizeLinear's order: an average
 * pool divides each window's sum by its count and rounds y / scale + zero point; the
 * global one sums the 8-bit data in int32 and scales that once (q_pool, q_global).
 * channels_last (NHWC data) is moved to channels first around the pool and back.
 */
#include <string.h>

#include "onnx.h"

/* The float value of 8-bit x with scale s and zero point zp (IR_NONE: 0). */
static bool dq(DecCtx *c, ValId x, ValId s, ValId zp, ValId *y)
{
    ValId in[3] = {x, s, zp}, out[DEC_MAX_OUT];
    if (!dec_sub_run(c, dec_dequantize, "DequantizeLinear", in, 3, false, out))
        return false;
    *y = out[0];
    return true;
}

/* Float y quantized with scale s and zero point zp, to type t when zp is left out. */
static bool q(DecCtx *c, ValId y, ValId s, ValId zp, IrDType t, ValId *r)
{
    ValId in[3] = {y, s, zp != IR_NONE ? zp : dec_scalar(c->g, t, 0)}, out[DEC_MAX_OUT];
    if (!dec_sub_run(c, dec_quantize, "QuantizeLinear", in, 3, false, out))
        return false;
    *r = out[0];
    return true;
}

/* Inputs 0 .. n-1 but the zero points (indices in zps) are present. */
static bool need(DecCtx *c, int n, unsigned zps)
{
    for (int i = 0; i < n; i++)
        if (!(zps >> i & 1) && !dec_need_in(c, i))
            return false;
    return true;
}

bool dec_qlinear_binary(DecCtx *c)
{
    if (!need(c, 7, 1u << 2 | 1u << 5))
        return false;
    ValId a, b;
    if (!dq(c, dec_in(c, 0), dec_in(c, 1), dec_in(c, 2), &a) ||
        !dq(c, dec_in(c, 3), dec_in(c, 4), dec_in(c, 5), &b))
        return false;
    bool add = !strcmp(c->n->foreign.op_type, "QLinearAdd");
    ValId y = dec_bin(c, add ? IR_BIN_ADD : IR_BIN_MUL, a, b);
    return q(c, y, dec_in(c, 6), dec_in(c, 7), dec_ty(c, dec_in(c, 0))->dtype, &c->out[0]);
}

bool dec_qlinear_unary(DecCtx *c)
{
    if (!need(c, 4, 1u << 2))
        return false;
    ValId x;
    if (!dq(c, dec_in(c, 0), dec_in(c, 1), dec_in(c, 2), &x))
        return false;
    ValId y;
    if (!strcmp(c->n->foreign.op_type, "QLinearSigmoid")) {
        y = dec_un(c, IR_UN_SIGMOID, x);
    } else {
        ValId neg = dec_bin_s(c, IR_BIN_MUL, x, dec_af(c, "alpha", 0.01));
        y = dec_select(c, dec_bin_s(c, IR_BIN_LT, x, 0.0), neg, x);
    }
    return q(c, y, dec_in(c, 3), dec_in(c, 4), dec_ty(c, dec_in(c, 0))->dtype, &c->out[0]);
}

/* The permutation moving the last axis of rank r to axis 1 (to_first), or back. */
static void channels_perm(int r, bool to_first, int64_t *perm)
{
    for (int i = 0; i < r; i++)
        perm[i] = to_first ? (i == 0 ? 0 : i == 1 ? r - 1 : i - 1)
                           : (i == 0 ? 0 : i == r - 1 ? 1 : i + 1);
}

/* Float y to 8-bit type t as onnxruntime's 8-bit pools write their averages:
 * round-half-even(y / s + zp), the zero point added before the rounding, saturated. */
static ValId q_pool(DecCtx *c, ValId y, ValId s, ValId zp, IrDType t)
{
    ValId v = dec_bin(c, IR_BIN_DIV, y, dec_reshape(c, dec_cast(c, s, IR_DT_F32), NULL, 0));
    if (zp != IR_NONE)
        v = dec_bin(c, IR_BIN_ADD, v, dec_reshape(c, dec_cast(c, zp, IR_DT_F32), NULL, 0));
    v = dec_un(c, IR_UN_ROUND, v);
    v = dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, v, t == IR_DT_I8 ? -128 : 0),
                  t == IR_DT_I8 ? 127 : 255);
    return dec_cast(c, v, t);
}

/* QLinearGlobalAveragePool as onnxruntime's MLAS computes it: the int32 sum of each
 * image less zx * size, times sx / (sy * size) (rounded once to float32), rounded half
 * to even, plus zy, saturated. x is channels first. */
static ValId q_global(DecCtx *c, ValId x, ValId sx, ValId zx, ValId sy, ValId zy, IrDType t)
{
    int r = dec_ty(c, x)->rank;
    int64_t axes[IR_MAX_RANK], size = 1;
    for (int i = 2; i < r; i++) {
        axes[i - 2] = i;
        size *= dec_ty(c, x)->dims[i];
    }
    ValId acc = dec_reduce(c, IR_RED_SUM, dec_cast(c, x, IR_DT_I32), axes, r - 2, true);
    if (zx != IR_NONE)
        acc = dec_bin(c, IR_BIN_SUB, acc, dec_bin_s(c, IR_BIN_MUL, dec_reshape(c,
                      dec_cast(c, zx, IR_DT_I32), NULL, 0), (double)size));
    ValId scale = dec_bin(c, IR_BIN_DIV, dec_reshape(c, dec_cast(c, sx, IR_DT_F32), NULL, 0),
                          dec_bin_s(c, IR_BIN_MUL, dec_reshape(c, dec_cast(c, sy, IR_DT_F32),
                                                               NULL, 0), (double)size));
    ValId y = dec_bin(c, IR_BIN_MUL, dec_cast(c, acc, IR_DT_F32), scale);
    ValId one = dec_scalar(c->g, IR_DT_F32, 1.0);
    return q_pool(c, y, one, zy, t);
}

bool dec_qlinear_pool(DecCtx *c)
{
    if (!need(c, 4, 1u << 2))
        return false;
    ValId x = dec_in(c, 0), out[DEC_MAX_OUT];
    IrDType t = dec_ty(c, x)->dtype;
    if (t != IR_DT_U8 && t != IR_DT_I8) {
        dec_err(c, "unsupported: X of type %s (int8 and uint8 only)", ir_dtype_name(t));
        return false;
    }
    int r = dec_ty(c, x)->rank;
    bool last = dec_ai(c, "channels_last", 0) != 0 && r >= 3;
    int64_t perm[IR_MAX_RANK];
    if (last) {
        channels_perm(r, true, perm);
        x = dec_transpose(c, x, perm);
    }
    ValId y;
    if (!strcmp(c->n->foreign.op_type, "QLinearGlobalAveragePool")) {
        y = q_global(c, x, dec_in(c, 1), dec_in(c, 2), dec_in(c, 3), dec_in(c, 4), t);
    } else {
        if (!dq(c, x, dec_in(c, 1), dec_in(c, 2), &x) ||
            !dec_sub_run(c, dec_avg_pool_divided, "AveragePool", &x, 1, true, out))
            return false;
        y = q_pool(c, out[0], dec_in(c, 3), dec_in(c, 4), t);
    }
    if (last) {
        channels_perm(r, false, perm);
        y = dec_transpose(c, y, perm);
    }
    c->out[0] = y;
    return true;
}

bool dec_qlinear_concat(DecCtx *c)
{
    int n = (c->n->nin - 2) / 3;
    if (c->n->nin < 5 || (c->n->nin - 2) % 3 != 0) {
        dec_err(c, "expects Y_scale, Y_zero_point and triples (X, X_scale, X_zero_point), "
                "got %d inputs", c->n->nin);
        return false;
    }
    ValId *xs = ir_alloc(c->g, (size_t)n * sizeof *xs);
    for (int i = 0; i < n; i++)
        if (!dec_need_in(c, 2 + 3 * i) || !dec_need_in(c, 3 + 3 * i) ||
            !dq(c, dec_in(c, 2 + 3 * i), dec_in(c, 3 + 3 * i), dec_in(c, 4 + 3 * i), &xs[i]))
            return false;
    int axis;
    if (!dec_need_in(c, 0) || !dec_axis(c, dec_ai(c, "axis", 0), dec_ty(c, xs[0])->rank, &axis))
        return false;
    ValId y = dec_concat(c, xs, n, axis);
    return q(c, y, dec_in(c, 0), dec_in(c, 1), dec_ty(c, dec_in(c, 2))->dtype, &c->out[0]);
}
