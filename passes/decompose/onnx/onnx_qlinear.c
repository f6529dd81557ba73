/* onnx_qlinear.c: integer and quantized contractions (MatMulInteger, ConvInteger,
 * QLinearMatMul, QLinearConv) as core ops, and the exact int32 contractions of 8-bit
 * operands that the QDQ lowering (onnx_qdq.c) shares.
 *
 * The device's matrix unit multiplies int8 operands into exact int32 sums (MATMUL and
 * CONV of I8 operands give I32). A uint8 operand is offset by -128 into int8 (its zero
 * point alike), so the centered values do not change. Zero points are then handled by
 * correction terms instead of centering the operands (which would need 9 bits):
 *   sum_k (a - za)(b - zb) = sum_k a b - za colsum(b) - zb rowsum(a) + K za zb
 * (constant operands fold their sums at compile time; an activation's are int8
 * products with ones, which the contraction's kernel computes on its operand tiles).
 * A convolution pads its input with the input's zero point, so padded taps add
 * nothing, and subtracts zx * sum(w) per output channel; a convolution whose weight zero point is not zero after the
 * offset takes the float path: the reduction dimension split into chunks of at most
 * QL_CHUNK products, each an exact float32 CONV cast to int32, summed in int32.
 * QLinear* then scale the int32 accumulator in float32, round half to even, add the
 * output zero point and saturate to the output type.
 */
#include <string.h>

#include "onnx.h"

#define QL_CHUNK 256                      /* products per exact float32 partial sum */
#define QL_VIEWS_MAX 4                    /* views looked through by as_i8_src */

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

/* 8-bit x as int8: uint8 data offset by -128 (exact in int8). */
static ValId as_i8(DecCtx *c, ValId x)
{
    if (dec_ty(c, x)->dtype == IR_DT_I8)
        return x;
    return dec_cast(c, dec_bin_s(c, IR_BIN_SUB, dec_cast(c, x, IR_DT_I32), 128.0), IR_DT_I8);
}

/* as_i8 of x computed on the source of the views (RESHAPE, TRANSPOSE) that make x, the
 * views then repeated on its result: the offset fuses into the epilogue of the source's
 * producer, which stores the int8 values, instead of being a kernel of its own that
 * reads the 8-bit data through the views (attention's K, transposed per head). */
static ValId as_i8_src(DecCtx *c, ValId x)
{
    int64_t perm[QL_VIEWS_MAX][IR_MAX_RANK], dims[QL_VIEWS_MAX][IR_MAX_RANK];
    int rank[QL_VIEWS_MAX], n = 0;
    bool tr[QL_VIEWS_MAX];
    ValId v = x;
    while (n < QL_VIEWS_MAX && dec_ty(c, x)->dtype != IR_DT_I8) {
        const IrValue *val = ir_val(c->g, v);
        if (val->kind != IR_VAL_ACT || val->def == IR_NONE)
            break;
        const IrNode *p = &c->g->nodes[val->def];
        if (p->dead || (p->op != IR_OP_RESHAPE && p->op != IR_OP_TRANSPOSE))
            break;
        const IrType *t = ir_vtype(c->g, p->out[0]);
        const int64_t *pm = NULL;
        tr[n] = p->op == IR_OP_TRANSPOSE;
        if (tr[n] && ir_attr_get_ints(p, "perm", &pm) != t->rank)
            break;
        rank[n] = t->rank;
        for (int i = 0; i < t->rank; i++) {
            dims[n][i] = t->dims[i];
            perm[n][i] = tr[n] ? pm[i] : i;
        }
        n++;
        v = p->in[0];
    }
    v = as_i8(c, v);
    for (int i = n - 1; i >= 0; i--)
        v = tr[i] ? dec_transpose(c, v, perm[i]) : dec_reshape(c, v, dims[i], rank[i]);
    return v;
}

/* Whether v is a constant whose elements are all zero. */
static bool const_zero(DecCtx *c, ValId v)
{
    if (!ir_is_const(c->g, v))
        return false;
    const IrType *t = dec_ty(c, v);
    const void *p = ir_val(c->g, v)->data;
    for (int64_t i = 0; i < dec_numel(t); i++)
        if (dec_load(t->dtype, p, i) != 0)
            return false;
    return true;
}

/* Zero point zp (IR_NONE: 0) of 8-bit data of dtype t as int32, offset like as_i8 and
 * shaped to broadcast along `axis` of rank r (a 1-D zero point of several entries) or
 * as a scalar; IR_NONE when it is 0 after the offset (no correction term). */
static ValId zp_i32(DecCtx *c, ValId zp, IrDType t, int axis, int r)
{
    if (zp == IR_NONE && t != IR_DT_U8)
        return IR_NONE;
    ValId z = zp == IR_NONE ? dec_scalar(c->g, IR_DT_I32, 0) : dec_cast(c, zp, IR_DT_I32);
    if (t == IR_DT_U8)
        z = dec_bin_s(c, IR_BIN_SUB, z, 128.0);
    return const_zero(c, z) ? IR_NONE : dec_view_along(c, z, axis, r);
}

/* Sum over `axis` (kept) of 8-bit x as int32. */
static ValId sum_i32(DecCtx *c, ValId x, int64_t axis)
{
    ValId first = c->g->nvals, w = dec_cast(c, x, IR_DT_I32);
    ValId s = dec_reduce(c, IR_RED_SUM, w, &axis, 1, true);
    dec_drop_temp(c, w, s, first);         /* folded: w was read by the reduction only */
    return s;
}

/* The int8 product of a row of ones [1, K] with activation b (rank >= 2): its sums
 * over axis rank-2, kept, as int32. */
static ValId ones_product(DecCtx *c, ValId b)
{
    int64_t dims[2] = {1, dec_ty(c, b)->dims[dec_ty(c, b)->rank - 2]};
    ValId ones = dec_expand(c, dec_scalar(c->g, IR_DT_I8, 1.0), dims, 2);
    return ir_matmul(c->g, ones, b, c->o);
}

/* The int8 product of activation a (rank >= 2) with a column of ones [K, 1]: its sums
 * over the last axis, kept, as int32. */
static ValId product_ones(DecCtx *c, ValId a)
{
    int64_t dims[2] = {dec_ty(c, a)->dims[dec_ty(c, a)->rank - 1], 1};
    ValId ones = dec_expand(c, dec_scalar(c->g, IR_DT_I8, 1.0), dims, 2);
    return ir_matmul(c->g, a, ones, c->o);
}

/* Sums over the depth of int8 x as int32: for B (rows) the sums over axis rank-2, for A
 * (rows false) over the last axis, kept. A constant folds as a reduction; an
 * activation's sums are int8 products of it with ones, on the operand itself: the fuser
 * computes them inside the contraction that needs them, on the operand tiles it loads
 * anyway (pass_fuse, plan_side_sum), where a reduction would be a kernel of its own
 * reading the operand again. */
static ValId depth_sums(DecCtx *c, ValId x, bool rows)
{
    int r = dec_ty(c, x)->rank;
    if (ir_is_const(c->g, x))
        return sum_i32(c, x, rows ? r - 2 : r - 1);
    return rows ? ones_product(c, x) : product_ones(c, x);
}

/* The depth K of a product of a (its last axis, k at the bound) as an int32 scalar:
 * the constant k, or, in a graph with bounded symbolic dimensions, where the depth may
 * be a sequence shorter than the bound, its actual extent (SYMLEN). pass_symdim sets the
 * padding of both operands along a symbolic depth to 0, so the products and the depth
 * sums leave it out, and the K * za * zb term must count the actual depth too. */
static ValId depth_count(DecCtx *c, ValId a, int64_t k)
{
    if (!c->g->nsymdims)
        return dec_scalar(c->g, IR_DT_I32, (double)k);
    IrAttr ax = ir_attr_int("axis", dec_ty(c, a)->rank - 1);
    return dec_reshape(c, dec_op(c, IR_OP_SYMLEN, &a, 1, &ax, 1), NULL, 0);
}

ValId dec_int_matmul(DecCtx *c, ValId a, ValId za, ValId b, ValId zb)
{
    const IrType *ta = dec_ty(c, a), *tb = dec_ty(c, b);
    int ra = ta->rank, rb = tb->rank;
    int64_t k = ta->dims[ra - 1];
    ValId za32 = zp_i32(c, za, ta->dtype, ra - 2, ra), zb32 = zp_i32(c, zb, tb->dtype, rb - 1, rb);
    a = as_i8_src(c, a);
    b = as_i8_src(c, b);
    ValId acc = ir_matmul(c->g, a, b, c->o);
    if (za32 != IR_NONE)
        acc = dec_bin(c, IR_BIN_SUB, acc, dec_bin(c, IR_BIN_MUL, za32, depth_sums(c, b, true)));
    if (zb32 != IR_NONE) {
        acc = dec_bin(c, IR_BIN_SUB, acc, dec_bin(c, IR_BIN_MUL, zb32, depth_sums(c, a, false)));
        if (za32 != IR_NONE)
            acc = dec_bin(c, IR_BIN_ADD, acc,
                          dec_bin(c, IR_BIN_MUL, dec_bin(c, IR_BIN_MUL, za32, zb32),
                                  depth_count(c, a, k)));
    }
    return acc;
}

/* The node's convolution (its attributes) of x and w, no bias, x padded with `pad`. */
static ValId conv_node(DecCtx *c, ValId x, ValId w, double pad)
{
    IrNode n2 = *c->n;
    ValId in[2] = {x, w};
    n2.in = in;
    n2.nin = 2;
    DecCtx c2 = *c;
    c2.n = &n2;
    c2.out[0] = IR_NONE;
    return dec_conv_pad(&c2, pad) ? c2.out[0] : IR_NONE;
}

/* dec_conv on the node's attributes with inputs x and w (no bias). */
static ValId conv_f32(DecCtx *c, ValId x, ValId w)
{
    return conv_node(c, x, w, 0.0);
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

ValId dec_int_conv(DecCtx *c, ValId x, ValId zx, ValId w, ValId zw)
{
    const IrType *tx = dec_ty(c, x), *tw = dec_ty(c, w);
    int r = tx->rank;
    ValId zw32 = zp_i32(c, zw, tw->dtype, 0, r), zx32 = zp_i32(c, zx, tx->dtype, 1, r);
    if (zw32 != IR_NONE || (zx32 != IR_NONE && (!ir_is_const(c->g, zx32) ||
                                                 dec_numel(dec_ty(c, zx32)) != 1)))
        return exact_conv(c, centered(c, x, zx, 1), centered(c, w, zw, 0));
    double pad = zx32 != IR_NONE ? dec_load(IR_DT_I32, ir_val(c->g, zx32)->data, 0) : 0.0;
    ValId w8 = as_i8(c, w);
    ValId acc = conv_node(c, as_i8(c, x), w8, pad);
    if (acc == IR_NONE || zx32 == IR_NONE)
        return acc;
    int64_t axes[IR_MAX_RANK], m = tw->dims[0];
    for (int i = 1; i < r; i++)
        axes[i - 1] = i;
    ValId ws = dec_reduce(c, IR_RED_SUM, dec_cast(c, w8, IR_DT_I32), axes, r - 1, false);
    ws = dec_chan_view(c, dec_reshape(c, ws, &m, 1), r);
    return dec_bin(c, IR_BIN_SUB, acc, dec_bin(c, IR_BIN_MUL, zx32, ws));
}

/* The 8-bit matmul operands A (input ia) and B (input ib), checked. Their zero points
 * apply per row of A and per column of B (dec_int_matmul). */
static bool mm_operands(DecCtx *c, int ia, int ib, ValId *a, ValId *b)
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
    *a = x;
    *b = y;
    return true;
}

bool dec_matmul_integer(DecCtx *c)
{
    ValId a, b;
    if (!mm_operands(c, 0, 1, &a, &b))
        return false;
    c->out[0] = dec_int_matmul(c, a, dec_in(c, 2), b, dec_in(c, 3));
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
    return dec_view_along(c, dec_cast(c, s, IR_DT_F32), axis, r);
}

ValId dec_view_along(DecCtx *c, ValId v, int axis, int r)
{
    int64_t n = dec_numel(dec_ty(c, v)), d[IR_MAX_RANK];
    if (n == 1)
        return dec_reshape(c, v, ql_scalar, 0);
    for (int i = 0; i < r; i++)
        d[i] = i == axis ? n : 1;
    return dec_reshape(c, v, d, r);
}

bool dec_qlinear_matmul(DecCtx *c)
{
    ValId a, b;
    if (!mm_operands(c, 0, 3, &a, &b))
        return false;
    ValId sa = dec_in(c, 1), sb = dec_in(c, 4), sy = dec_in(c, 6);
    if (sa == IR_NONE || sb == IR_NONE || sy == IR_NONE) {
        dec_err(c, "missing a_scale, b_scale or y_scale");
        return false;
    }
    ValId acc = dec_int_matmul(c, a, dec_in(c, 2), b, dec_in(c, 5));
    int r = dec_ty(c, acc)->rank;
    ValId mult = dec_bin(c, IR_BIN_MUL, scale_along(c, sa, r - 2, r), scale_along(c, sb, r - 1, r));
    mult = dec_bin(c, IR_BIN_DIV, mult, scale_along(c, sy, 0, r));
    c->out[0] = requantize(c, acc, mult, dec_in(c, 7), dec_ty(c, dec_in(c, 0))->dtype);
    return true;
}

/* QGemm (com.microsoft, onnxruntime's QOperator format): alpha * op(A) op(B) + C of
 * 8-bit A and B (op: transposed by transA, transB), C an int32 bias of scale A_scale *
 * B_scale: the exact int32 product plus C, scaled by alpha * A_scale * B_scale (B's per
 * output column) and, with a y_scale, requantized like QLinearMatMul (that multiplier
 * over y_scale, rounded once to float32); else a float32 result. */
bool dec_qgemm(DecCtx *c)
{
    ValId a = dec_in(c, 0), b = dec_in(c, 3), sa = dec_in(c, 1), sb = dec_in(c, 4);
    if (a == IR_NONE || b == IR_NONE || sa == IR_NONE || sb == IR_NONE) {
        dec_err(c, "missing A, a_scale, B or b_scale");
        return false;
    }
    if (!is_8bit(c, a, "A") || !is_8bit(c, b, "B"))
        return false;
    if (dec_ty(c, a)->rank != 2 || dec_ty(c, b)->rank != 2) {
        dec_err(c, "A and B must be matrices");
        return false;
    }
    const int64_t swap[2] = {1, 0};
    if (dec_ai(c, "transA", 0))
        a = dec_transpose(c, a, swap);
    if (dec_ai(c, "transB", 0))            /* B's per-column zero points move with it */
        b = dec_transpose(c, b, swap);
    if (dec_ty(c, a)->dims[1] != dec_ty(c, b)->dims[0]) {
        dec_err(c, "inner dimensions differ (%lld and %lld)", (long long)dec_ty(c, a)->dims[1],
                (long long)dec_ty(c, b)->dims[0]);
        return false;
    }
    ValId acc = dec_int_matmul(c, a, dec_in(c, 2), b, dec_in(c, 5));
    if (dec_in(c, 6) != IR_NONE)
        acc = dec_bin(c, IR_BIN_ADD, acc, dec_cast(c, dec_in(c, 6), IR_DT_I32));
    ValId mult = dec_bin(c, IR_BIN_MUL, scale_along(c, sa, 0, 2), scale_along(c, sb, 1, 2));
    double alpha = dec_af(c, "alpha", 1.0);
    if (alpha != 1.0)
        mult = dec_bin_s(c, IR_BIN_MUL, mult, alpha);
    ValId sy = dec_in(c, 7);
    if (sy == IR_NONE) {
        c->out[0] = dec_bin(c, IR_BIN_MUL, dec_cast(c, acc, IR_DT_F32), mult);
        return true;
    }
    mult = dec_bin(c, IR_BIN_DIV, mult, scale_along(c, sy, 0, 2));
    c->out[0] = requantize(c, acc, mult, dec_in(c, 8), dec_ty(c, dec_in(c, 0))->dtype);
    return true;
}

/* The 8-bit conv operands x (input ix) and w (iw), checked; w's zero points apply per
 * output channel (axis 0). */
static bool conv_operands(DecCtx *c, int ix, int iw, ValId *x, ValId *w)
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
    *x = xv;
    *w = wv;
    return true;
}

bool dec_conv_integer(DecCtx *c)
{
    ValId x, w;
    if (!conv_operands(c, 0, 1, &x, &w))
        return false;
    ValId y = dec_int_conv(c, x, dec_in(c, 2), w, dec_in(c, 3));
    c->out[0] = y;
    return y != IR_NONE;
}

bool dec_qlinear_conv(DecCtx *c)
{
    ValId x, w;
    if (!conv_operands(c, 0, 3, &x, &w))
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
    ValId acc = dec_int_conv(c, x, dec_in(c, 2), w, dec_in(c, 5));
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
