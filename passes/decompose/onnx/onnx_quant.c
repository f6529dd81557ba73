/* onnx_quant.c: QuantizeLinear and DequantizeLinear (per-tensor, per-axis and
 * blocked) for integer quantized types (also 4- and 2-bit) and the float8/float4
 * types, as pointwise core ops:
 *   quantize:   y = cast(clamp(round_half_even(x / scale) + zp, lo, hi))   integers
 *               y = cast(x / scale + zp)  (saturate attribute)           float8/4
 *   dequantize: y = (cast(x) - cast(zp)) * scale
 * Scales and zero points are broadcast to the data: a 1-D per-axis vector is
 * reshaped onto the axis; a blocked one is repeated block_size times along it. */
#include <string.h>

#include "onnx.h"

/* Range of an integer quantized dtype; false if not one we handle. */
static bool qrange(IrDType t, double *lo, double *hi)
{
    switch (t) {
    case IR_DT_U8: *lo = 0; *hi = 255; return true;
    case IR_DT_I8: *lo = -128; *hi = 127; return true;
    case IR_DT_U16: *lo = 0; *hi = 65535; return true;
    case IR_DT_I16: *lo = -32768; *hi = 32767; return true;
    case IR_DT_I32: *lo = -2147483648.0; *hi = 2147483647.0; return true;
    case IR_DT_U4: *lo = 0; *hi = 15; return true;
    case IR_DT_I4: *lo = -8; *hi = 7; return true;
    case IR_DT_U2: *lo = 0; *hi = 3; return true;
    case IR_DT_I2: *lo = -2; *hi = 1; return true;
    default: return false;
    }
}

/* Whether t is a float8 / float4 quantized dtype. */
static bool qfloat(IrDType t)
{
    return t == IR_DT_F8E4M3FN || t == IR_DT_F8E4M3FNUZ || t == IR_DT_F8E5M2 ||
           t == IR_DT_F8E5M2FNUZ || t == IR_DT_F4E2M1;
}

/* Scale or zero point p broadcast against data of type tx along `axis`. */
static ValId q_broadcast(DecCtx *c, ValId p, const IrType *tx, int axis, int64_t block)
{
    const IrType *tp = dec_ty(c, p);
    if (dec_numel(tp) == 1 && tp->rank <= 1)
        return dec_reshape(c, p, NULL, 0);
    if (tp->rank == 1 && block <= 0) { /* per axis */
        int64_t dims[IR_MAX_RANK];
        for (int i = 0; i < tx->rank; i++)
            dims[i] = i == axis ? tp->dims[0] : 1;
        return dec_reshape(c, p, dims, tx->rank);
    }
    if (tp->rank != tx->rank || block <= 0) {
        dec_err(c, "scale shape does not match per-tensor, per-axis or blocked quantization");
        return IR_NONE;
    }
    /* blocked: [.., S, ..] -> [.., S, B, ..] -> [.., S*B, ..] -> slice to D */
    int64_t d1[IR_MAX_RANK + 1], d2[IR_MAX_RANK + 1], d3[IR_MAX_RANK];
    int r = tx->rank;
    if (r + 1 > IR_MAX_RANK || tp->dims[axis] * block < tx->dims[axis]) {
        dec_err(c, "block_size %lld does not cover axis %d", (long long)block, axis);
        return IR_NONE;
    }
    for (int i = 0, j = 0; i < r; i++) {
        d1[j] = tp->dims[i];
        d2[j++] = tp->dims[i];
        if (i == axis) {
            d1[j] = 1;
            d2[j++] = block;
        }
        d3[i] = i == axis ? tp->dims[i] * block : tp->dims[i];
    }
    ValId v = dec_expand(c, dec_reshape(c, p, d1, r + 1), d2, r + 1);
    v = dec_reshape(c, v, d3, r);
    return dec_slice_axis(c, v, axis, 0, 1, tx->dims[axis]);
}

/* Common operands: axis, block size, broadcast scale and zero point. */
static bool q_operands(DecCtx *c, ValId *scale, ValId *zp)
{
    const IrType *tx = dec_ty(c, dec_in(c, 0)), *ts = dec_ty(c, dec_in(c, 1));
    int axis = 0;
    bool per_tensor = dec_numel(ts) == 1 && ts->rank <= 1;
    if (!per_tensor && !dec_axis(c, dec_ai(c, "axis", 1), tx->rank, &axis))
        return false;
    int64_t block = dec_ai(c, "block_size", 0);
    *scale = q_broadcast(c, dec_in(c, 1), tx, axis, block);
    *zp = dec_in(c, 2) != IR_NONE ? q_broadcast(c, dec_in(c, 2), tx, axis, block) : IR_NONE;
    return *scale != IR_NONE && (dec_in(c, 2) == IR_NONE || *zp != IR_NONE);
}

bool dec_quantize(DecCtx *c)
{
    ValId x = dec_in(c, 0), scale, zp;
    if (x == IR_NONE || dec_in(c, 1) == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    IrDType out = dec_in(c, 2) != IR_NONE ? dec_ty(c, dec_in(c, 2))->dtype : IR_DT_U8;
    out = (IrDType)dec_ai(c, "output_dtype", out ? out : IR_DT_U8);
    double lo, hi;
    if (!qrange(out, &lo, &hi) && !qfloat(out)) {
        dec_err(c, "unsupported: quantization to %s", ir_dtype_name(out));
        return false;
    }
    ValId same = dec_qdq_requantized(c, x, dec_in(c, 1), dec_in(c, 2), out);
    if (same != IR_NONE) {
        c->out[0] = same;
        return true;
    }
    if (!q_operands(c, &scale, &zp))
        return false;
    IrDType pt = (IrDType)dec_ai(c, "precision", dec_ty(c, scale)->dtype);
    if (!ir_dtype_is_float(pt)) {
        dec_err(c, "precision must be a float type");
        return false;
    }
    ValId q = pt == IR_DT_F32 ? dec_qdq_divided(c, x, dec_in(c, 1)) : IR_NONE;
    if (q == IR_NONE)
        q = dec_bin(c, IR_BIN_DIV, dec_cast(c, x, pt), dec_cast(c, scale, pt));
    if (qfloat(out)) {                     /* rounding and saturation: the CAST */
        if (zp != IR_NONE)
            q = dec_bin(c, IR_BIN_ADD, q, dec_cast(c, zp, pt));
        IrAttr a[2] = {ir_attr_int("to", out),
                       ir_attr_int("saturate", dec_ai(c, "saturate", 1) != 0)};
        c->out[0] = dec_op(c, IR_OP_CAST, &q, 1, a, 2);
        return true;
    }
    q = dec_un(c, IR_UN_ROUND, q);
    if (zp != IR_NONE)
        q = dec_bin(c, IR_BIN_ADD, q, dec_cast(c, zp, pt));
    q = dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, q, lo), hi);
    c->out[0] = dec_cast(c, q, out);
    return true;
}

bool dec_dequantize(DecCtx *c)
{
    ValId x = dec_in(c, 0), scale, zp;
    if (x == IR_NONE || dec_in(c, 1) == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    double lo, hi;
    if (!qrange(dec_ty(c, x)->dtype, &lo, &hi) && !qfloat(dec_ty(c, x)->dtype)) {
        dec_err(c, "unsupported: dequantization of %s", ir_dtype_name(dec_ty(c, x)->dtype));
        return false;
    }
    if (!q_operands(c, &scale, &zp))
        return false;
    IrDType out = (IrDType)dec_ai(c, "output_dtype", dec_ty(c, scale)->dtype);
    if (!ir_dtype_is_float(out)) {
        dec_err(c, "output_dtype must be a float type");
        return false;
    }
    ValId first = c->g->nvals, w = dec_cast(c, x, out), v = w;
    if (zp != IR_NONE)
        v = dec_bin(c, IR_BIN_SUB, v, dec_cast(c, zp, out));
    c->out[0] = dec_bin(c, IR_BIN_MUL, v, dec_cast(c, scale, out));
    dec_drop_temp(c, w, c->out[0], first); /* a weight's, folded: its float copies */
    dec_drop_temp(c, v, c->out[0], first); /* on the way, read by those folds only */
    const IrType *ts = dec_ty(c, dec_in(c, 1));
    int axis = 0;                          /* per tensor, or checked by q_operands */
    if (dec_numel(ts) == 1 && ts->rank <= 1)
        dec_qdq_note(c, c->out[0], x, dec_in(c, 1), dec_in(c, 2), 0);
    else if (dec_ai(c, "block_size", 0) <= 0 &&
             dec_axis(c, dec_ai(c, "axis", 1), dec_ty(c, x)->rank, &axis))
        dec_qdq_note(c, c->out[0], x, dec_in(c, 1), dec_in(c, 2), axis);
    return true;
}

/* DynamicQuantizeLinear: u8 quantization with scale and zero point from the data's
 * range (extended to include 0): scale = (max - min) / 255, zp = round(-min/scale). */
bool dec_dynamic_quantize(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    if (x == IR_NONE || !ir_dtype_is_float(dec_ty(c, x)->dtype)) {
        dec_err(c, "needs a float input");
        return false;
    }
    int r = dec_ty(c, x)->rank;
    int64_t all[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        all[i] = i;
    ValId mn = r ? dec_reduce(c, IR_RED_MIN, x, all, r, false) : x;
    ValId mx = r ? dec_reduce(c, IR_RED_MAX, x, all, r, false) : x;
    mn = dec_bin_s(c, IR_BIN_MIN, mn, 0.0);
    mx = dec_bin_s(c, IR_BIN_MAX, mx, 0.0);
    ValId scale = dec_bin_s(c, IR_BIN_DIV, dec_bin(c, IR_BIN_SUB, mx, mn), 255.0);
    ValId zpf = dec_un(c, IR_UN_ROUND, dec_bin(c, IR_BIN_DIV, dec_un(c, IR_UN_NEG, mn), scale));
    zpf = dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, zpf, 0.0), 255.0);
    ValId q = dec_un(c, IR_UN_ROUND, dec_bin(c, IR_BIN_DIV, x, scale));
    q = dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, dec_bin(c, IR_BIN_ADD, q, zpf), 0.0), 255.0);
    c->out[0] = dec_cast(c, q, IR_DT_U8);
    c->out[1] = scale;
    c->out[2] = dec_cast(c, zpf, IR_DT_U8);
    return true;
}
