/* onnx_qlinear.c: integer and quantized contractions (MatMulInteger, ConvInteger,
 * QLinearMatMul, QLinearConv) as core ops.
 *
 * The device contracts in float32 only. Operands are 8-bit integers, so after the
 * zero points are subtracted every product is at most 255*255 in magnitude and a
 * float32 sum of up to QL_CHUNK of them is exact (< 2^24). The reduction dimension
 * is therefore split into chunks of at most QL_CHUNK terms; each chunk is one
 * float32 MATMUL/CONV whose exact result is cast to int32, and the chunks are summed
 * in int32. QLinear* then scale the int32 accumulator in float32, round half to
 * even, add the output zero point and saturate to the output type.
 */
#include <string.h>

#include "onnx.h"

#define QL_CHUNK 256                      /* products per exact float32 partial sum */

static const int64_t ql_scalar[1] = {0}; /* dims of a rank-0 reshape */

/* x - zero_point as float32; a 1-D zero point of `axis_len` entries (> 1) applies
 * along `axis` of x (rank r), otherwise it broadcasts as a scalar. */
static ValId centered(DecCtx *c, ValId x, ValId zp, int axis)
{
    ValId xf = dec_cast(c, x, IR_DT_F32);
    if (zp == IR_NONE)
        return xf;
    const IrType *tx = dec_ty(c, x), *tz = dec_ty(c, zp);
    ValId zf = dec_cast(c, zp, IR_DT_F32);
    int64_t n = dec_numel(tz);
    if (n > 1 && tz->rank == 1) {
        int64_t d[IR_MAX_RANK];
        for (int i = 0; i < tx->rank; i++)
            d[i] = i == axis ? n : 1;
        zf = dec_reshape(c, zf, d, tx->rank);
    } else if (n == 1) {
        zf = dec_reshape(c, zf, ql_scalar, 0);
    }
    return dec_bin(c, IR_BIN_SUB, xf, zf);
}

/* Whether v is an 8-bit integer tensor (reports otherwise). */
static bool is_8bit(DecCtx *c, ValId v, const char *what)
{
    IrDType t = dec_ty(c, v)->dtype;
    if (t == IR_DT_I8 || t == IR_DT_U8)
        return true;
    dec_err(c, "unsupported: %s of type %s (int8 and uint8 only)", what, ir_dtype_name(t));
    return false;
}

/* Exact int32 a @ b of centered float32 operands, chunked along K. */
static ValId exact_matmul(DecCtx *c, ValId a, ValId b)
{
    const IrType *ta = dec_ty(c, a), *tb = dec_ty(c, b);
    int64_t k = ta->dims[ta->rank - 1];
    ValId acc = IR_NONE;
    for (int64_t s = 0; s < k || acc == IR_NONE; s += QL_CHUNK) {
        int64_t n = k - s < QL_CHUNK ? k - s : QL_CHUNK;
        ValId as = dec_slice_axis(c, a, ta->rank - 1, s, 1, n);
        ValId bs = dec_slice_axis(c, b, tb->rank - 2, s, 1, n);
        ValId part = dec_cast(c, ir_matmul(c->g, as, bs, c->o), IR_DT_I32);
        acc = acc == IR_NONE ? part : dec_bin(c, IR_BIN_ADD, acc, part);
    }
    return acc;
}

/* dec_conv on the node's attributes with inputs x and w (no bias). */
static ValId conv_f32(DecCtx *c, ValId x, ValId w)
{
    IrNode n2 = *c->n;
    ValId in[2] = {x, w};
    n2.in = in;
    n2.nin = 2;
    DecCtx c2 = *c;
    c2.n = &n2;
    c2.out[0] = IR_NONE;
    return dec_conv(&c2) ? c2.out[0] : IR_NONE;
}

/* Exact int32 convolution of centered float32 x [N, C, ...] and w [M, C/g, ...]:
 * chunks of input channels when one output sums more than QL_CHUNK products. */
static ValId exact_conv(DecCtx *c, ValId x, ValId w)
{
    const IrType *tw = dec_ty(c, w);
    int64_t ksz = 1, cg = tw->dims[1];
    for (int i = 2; i < tw->rank; i++)
        ksz *= tw->dims[i];
    if (cg * ksz <= QL_CHUNK) {
        ValId y = conv_f32(c, x, w);
        return y == IR_NONE ? y : dec_cast(c, y, IR_DT_I32);
    }
    if (dec_ai(c, "group", 1) != 1 || ksz > QL_CHUNK) {
        dec_err(c, "unsupported: exact integer convolution summing %lld products per output "
                "(at most %d with group > 1 or a kernel that large; it needs an integer "
                "contraction on the device)", (long long)(cg * ksz), QL_CHUNK);
        return IR_NONE;
    }
    int64_t step = QL_CHUNK / ksz;
    ValId acc = IR_NONE;
    for (int64_t s = 0; s < cg; s += step) {
        int64_t n = cg - s < step ? cg - s : step;
        ValId y = conv_f32(c, dec_slice_axis(c, x, 1, s, 1, n), dec_slice_axis(c, w, 1, s, 1, n));
        if (y == IR_NONE)
            return IR_NONE;
        y = dec_cast(c, y, IR_DT_I32);
        acc = acc == IR_NONE ? y : dec_bin(c, IR_BIN_ADD, acc, y);
    }
    return acc;
}

/* Left matmul operand's zero point applies per row (axis rank-2); the right one's
 * per column (axis rank-1). */
static bool mm_operands(DecCtx *c, int ia, int iza, int ib, int izb, ValId *a, ValId *b)
{
    ValId x = dec_in(c, ia), y = dec_in(c, ib);
    if (x == IR_NONE || y == IR_NONE) {
        dec_err(c, "missing A or B");
        return false;
    }
    if (!is_8bit(c, x, "A") || !is_8bit(c, y, "B"))
        return false;
    const IrType *tx = dec_ty(c, x), *ty = dec_ty(c, y);
    if (tx->rank < 2 || ty->rank < 2 || tx->dims[tx->rank - 1] != ty->dims[ty->rank - 2]) {
        dec_err(c, "unsupported: operands must be at least 2-D with matching inner dimensions");
        return false;
    }
    *a = centered(c, x, dec_in(c, iza), tx->rank - 2);
    *b = centered(c, y, dec_in(c, izb), ty->rank - 1);
    return true;
}

bool dec_matmul_integer(DecCtx *c)
{
    ValId a, b;
    if (!mm_operands(c, 0, 2, 1, 3, &a, &b))
        return false;
    c->out[0] = exact_matmul(c, a, b);
    return true;
}

/* Scale an int32 accumulator to the quantized output: round(acc * mult) + zp,
 * saturated to the output type (the zero point's, or dflt when it is absent). */
static ValId requantize(DecCtx *c, ValId acc, ValId mult, ValId zp, IrDType dflt)
{
    IrDType ot = zp != IR_NONE ? dec_ty(c, zp)->dtype : dflt;
    ValId y = dec_un(c, IR_UN_ROUND, dec_bin(c, IR_BIN_MUL, dec_cast(c, acc, IR_DT_F32), mult));
    if (zp != IR_NONE)
        y = dec_bin(c, IR_BIN_ADD, y, dec_cast(c, dec_numel(dec_ty(c, zp)) == 1 ?
                                                  dec_reshape(c, zp, ql_scalar, 0) : zp, IR_DT_F32));
    double lo = ot == IR_DT_I8 ? -128 : 0, hi = ot == IR_DT_I8 ? 127 : 255;
    y = dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, y, lo), hi);
    return dec_cast(c, y, ot);
}

/* Float32 scale; a 1-D scale of more than one entry applies along `axis` of rank r. */
static ValId scale_along(DecCtx *c, ValId s, int axis, int r)
{
    ValId f = dec_cast(c, s, IR_DT_F32);
    int64_t n = dec_numel(dec_ty(c, s)), d[IR_MAX_RANK];
    if (n == 1)
        return dec_reshape(c, f, ql_scalar, 0);
    for (int i = 0; i < r; i++)
        d[i] = i == axis ? n : 1;
    return dec_reshape(c, f, d, r);
}

bool dec_qlinear_matmul(DecCtx *c)
{
    ValId a, b;
    if (!mm_operands(c, 0, 2, 3, 5, &a, &b))
        return false;
    ValId sa = dec_in(c, 1), sb = dec_in(c, 4), sy = dec_in(c, 6);
    if (sa == IR_NONE || sb == IR_NONE || sy == IR_NONE) {
        dec_err(c, "missing a_scale, b_scale or y_scale");
        return false;
    }
    ValId acc = exact_matmul(c, a, b);
    int r = dec_ty(c, acc)->rank;
    ValId mult = dec_bin(c, IR_BIN_MUL, scale_along(c, sa, r - 2, r), scale_along(c, sb, r - 1, r));
    mult = dec_bin(c, IR_BIN_DIV, mult, scale_along(c, sy, 0, r));
    c->out[0] = requantize(c, acc, mult, dec_in(c, 7), dec_ty(c, dec_in(c, 0))->dtype);
    return true;
}

/* Centered conv operands: x (input ix, zero point ixz) and w (iw, iwz; per output
 * channel zero points along axis 0). */
static bool conv_operands(DecCtx *c, int ix, int ixz, int iw, int iwz, ValId *x, ValId *w)
{
    ValId xv = dec_in(c, ix), wv = dec_in(c, iw);
    if (xv == IR_NONE || wv == IR_NONE) {
        dec_err(c, "missing x or w");
        return false;
    }
    if (!is_8bit(c, xv, "x") || !is_8bit(c, wv, "w"))
        return false;
    if (dec_ty(c, xv)->rank < 3 || dec_ty(c, wv)->rank != dec_ty(c, xv)->rank) {
        dec_err(c, "x and w must have the same rank (at least 3)");
        return false;
    }
    *x = centered(c, xv, dec_in(c, ixz), 1);
    *w = centered(c, wv, dec_in(c, iwz), 0);
    return true;
}

bool dec_conv_integer(DecCtx *c)
{
    ValId x, w;
    if (!conv_operands(c, 0, 2, 1, 3, &x, &w))
        return false;
    ValId y = exact_conv(c, x, w);
    c->out[0] = y;
    return y != IR_NONE;
}

bool dec_qlinear_conv(DecCtx *c)
{
    ValId x, w;
    if (!conv_operands(c, 0, 2, 3, 5, &x, &w))
        return false;
    ValId sx = dec_in(c, 1), sw = dec_in(c, 4), sy = dec_in(c, 6), bias = dec_in(c, 8);
    if (sx == IR_NONE || sw == IR_NONE || sy == IR_NONE) {
        dec_err(c, "missing x_scale, w_scale or y_scale");
        return false;
    }
    int64_t m = dec_ty(c, w)->dims[0];
    if (bias != IR_NONE && dec_numel(dec_ty(c, bias)) != m) {
        dec_err(c, "B must hold one int32 per output channel (%lld)", (long long)m);
        return false;
    }
    ValId acc = exact_conv(c, x, w);
    if (acc == IR_NONE)
        return false;
    int r = dec_ty(c, acc)->rank;
    if (bias != IR_NONE)
        acc = dec_bin(c, IR_BIN_ADD, acc, dec_chan_view(c, dec_cast(c, bias, IR_DT_I32), r));
    ValId mult = dec_bin(c, IR_BIN_MUL, scale_along(c, sx, 0, r), scale_along(c, sw, 1, r));
    mult = dec_bin(c, IR_BIN_DIV, mult, scale_along(c, sy, 0, r));
    c->out[0] = requantize(c, acc, mult, dec_in(c, 7), dec_ty(c, dec_in(c, 0))->dtype);
    return true;
}
