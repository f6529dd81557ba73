/* onnx_qmatmul_ms.c: onnxruntime's quantized matrix products (domain com.microsoft) as
 * core ops:
 *   MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zp?, b_zp?, bias?)
 *       (A - a_zp)(B - b_zp) as an exact int32 product (dec_int_matmul), times a_scale *
 *       b_scale (b's per output column), plus bias: what onnxruntime's graph optimizer
 *       makes of MatMulInteger, Cast and Mul in a dynamically quantized model
 *   DynamicQuantizeMatMul(A, B, b_scale, b_zp?, bias?)
 *       A quantized to uint8 as DynamicQuantizeLinear does, then the above
 *       (dec_dynq_product, also DynamicQuantizeLSTM's products: onnx_rnn.c)
 *   MatMulNBits(A, B, scales, zero_points?, g_idx?, bias?) {K, N, bits, block_size}
 *       A @ W^T + bias, W [N, K] stored in blocks of block_size along K, bits (2 to 8)
 *       per weight packed low bits first, each block with its scale and zero point
 *       (packed like the weights; default 2^(bits-1)): w = (q - zero point) * scale;
 *       4-bit LLM exports ship their weights so. The weights are dequantized once,
 *       at compile time, into a float constant of the scales' dtype (the product then
 *       runs as any float one: onnxruntime's CPU kernel also multiplies float A by the
 *       dequantized weights at accuracy levels 0 and 1); B, scales and zero points must
 *       be constants; g_idx and zero points in a float type are not supported.
 * Also QuantizeLinear and DequantizeLinear of this domain (8 and 16 bits, which
 * onnxruntime's quantizer writes for 16-bit QDQ models), the default domain's.
 */
#include <math.h>
#include <string.h>

#include "onnx.h"

/* The product of 8-bit a and b (zero points za, zb: IR_NONE for none) scaled to float:
 * acc * sa * sb (+ bias). */
static ValId int_to_float(DecCtx *c, ValId a, ValId za, ValId b, ValId zb, ValId sa, ValId sb,
                          ValId bias)
{
    int r = dec_ty(c, a)->rank;
    ValId acc = dec_int_matmul(c, a, za, b, zb);
    r = dec_ty(c, acc)->rank;
    ValId s = dec_bin(c, IR_BIN_MUL, dec_view_along(c, dec_cast(c, sa, IR_DT_F32), r - 2, r),
                      dec_view_along(c, dec_cast(c, sb, IR_DT_F32), r - 1, r));
    ValId y = dec_bin(c, IR_BIN_MUL, dec_cast(c, acc, IR_DT_F32), s);
    return bias != IR_NONE ? dec_bin(c, IR_BIN_ADD, y, bias) : y;
}

/* Both operands are 8-bit matrices (rank >= 2) with a common depth; reports otherwise. */
static bool int_operands(DecCtx *c, ValId a, ValId b)
{
    const IrType *ta = dec_ty(c, a), *tb = dec_ty(c, b);
    for (int i = 0; i < 2; i++) {
        IrDType t = (i ? tb : ta)->dtype;
        if (t != IR_DT_I8 && t != IR_DT_U8) {
            dec_err(c, "unsupported: %s of type %s (int8 and uint8 only)", i ? "B" : "A",
                    ir_dtype_name(t));
            return false;
        }
    }
    if (ta->rank < 2 || tb->rank != 2 || ta->dims[ta->rank - 1] != tb->dims[0]) {
        dec_err(c, "A must be at least 2-d and B a matrix of A's depth in rows");
        return false;
    }
    return true;
}

bool dec_matmul_int_to_float(DecCtx *c)
{
    for (int i = 0; i < 4; i++)
        if (!dec_need_in(c, i))
            return false;
    ValId a = dec_in(c, 0), b = dec_in(c, 1);
    if (!int_operands(c, a, b))
        return false;
    c->out[0] = int_to_float(c, a, dec_in(c, 4), b, dec_in(c, 5), dec_in(c, 2), dec_in(c, 3),
                             dec_in(c, 6));
    return true;
}

/* See onnx.h. */
ValId dec_dynq_product(DecCtx *c, ValId x, ValId b, ValId bz, ValId bs)
{
    ValId q[DEC_MAX_OUT];
    if (!dec_sub_run(c, dec_dynamic_quantize, "DynamicQuantizeLinear", &x, 1, false, q) ||
        !int_operands(c, q[0], b))
        return IR_NONE;
    return int_to_float(c, q[0], q[2], b, bz, q[1], bs, IR_NONE);
}

bool dec_dynamic_quantize_matmul(DecCtx *c)
{
    for (int i = 0; i < 3; i++)
        if (!dec_need_in(c, i))
            return false;
    ValId y = dec_dynq_product(c, dec_in(c, 0), dec_in(c, 1), dec_in(c, 3), dec_in(c, 2));
    if (y == IR_NONE)
        return false;
    c->out[0] = dec_in(c, 4) != IR_NONE ? dec_bin(c, IR_BIN_ADD, y, dec_in(c, 4)) : y;
    return true;
}

/* Element i of packed unsigned `bits`-bit values (low bits first within each byte). */
static unsigned nbits_at(const uint8_t *p, int64_t i, int bits)
{
    int64_t bit = i * bits;
    unsigned v = p[bit / 8];
    if (bit % 8 + bits > 8)
        v |= (unsigned)p[bit / 8 + 1] << 8;
    return (v >> (bit % 8)) & ((1u << bits) - 1);
}

/* The constant input i as host data of at least n bytes (reports otherwise). */
static const void *const_data(DecCtx *c, int i, const char *what, size_t n)
{
    ValId v = dec_in(c, i);
    if (!ir_is_const(c->g, v)) {
        dec_err(c, "unsupported: %s that is not a constant", what);
        return NULL;
    }
    if (ir_type_bytes(dec_ty(c, v)) < n) {
        dec_err(c, "%s holds %zu bytes, expected at least %zu", what,
                ir_type_bytes(dec_ty(c, v)), n);
        return NULL;
    }
    return ir_val(c->g, v)->data;
}

/* MatMulNBits' weights dequantized: W^T [K, N] in the scales' dtype st. */
static ValId nbits_weights(DecCtx *c, int64_t k, int64_t n, int bits, int64_t bs, IrDType st)
{
    int64_t nb = (k + bs - 1) / bs, blob = bs * bits / 8, zrow = (nb * bits + 7) / 8;
    const uint8_t *w = const_data(c, 1, "B", (size_t)(n * nb * blob));
    const void *sc = const_data(c, 2, "scales", (size_t)(n * nb) * ir_dtype_size(st));
    ValId zv = dec_in(c, 3);
    if (zv != IR_NONE && dec_ty(c, zv)->dtype != IR_DT_U8) {
        dec_err(c, "unsupported: zero_points of type %s (packed uint8 only)",
                ir_dtype_name(dec_ty(c, zv)->dtype));
        return IR_NONE;
    }
    const uint8_t *zp = zv == IR_NONE ? NULL : const_data(c, 3, "zero_points", (size_t)(n * zrow));
    if (!w || !sc || (zv != IR_NONE && !zp) || !dec_fits(c, k * n, 4, "the dequantized B"))
        return IR_NONE;
    double *v = ir_scratch(c->g, (size_t)(k * n) * sizeof *v);
    for (int64_t j = 0; j < n; j++)
        for (int64_t b = 0; b < nb; b++) {
            double s = dec_load(st, sc, j * nb + b);
            double z = zp ? (double)nbits_at(zp + j * zrow, b, bits) : (double)(1 << (bits - 1));
            const uint8_t *blk = w + (j * nb + b) * blob;
            for (int64_t e = 0; e < bs && b * bs + e < k; e++)
                v[(b * bs + e) * n + j] = ((double)nbits_at(blk, e, bits) - z) * s;
        }
    int64_t dims[2] = {k, n};
    return dec_const(c->g, st, dims, 2, v);
}

bool dec_matmul_nbits(DecCtx *c)
{
    for (int i = 0; i < 3; i++)
        if (!dec_need_in(c, i))
            return false;
    int64_t k = dec_ai(c, "K", 0), n = dec_ai(c, "N", 0), bits = dec_ai(c, "bits", 4);
    int64_t bs = dec_ai(c, "block_size", 0);
    if (k < 1 || n < 1 || bits < 2 || bits > 8 || bs < 16 || (bs & (bs - 1)) ||
        (bs * bits) % 8) {
        dec_err(c, "needs K and N of at least 1, bits 2 to 8 and a power-of-two block_size "
                "of at least 16 (got K %lld, N %lld, bits %lld, block_size %lld)",
                (long long)k, (long long)n, (long long)bits, (long long)bs);
        return false;
    }
    if (dec_in(c, 4) != IR_NONE) {
        dec_err(c, "unsupported: g_idx (act-order weights)");
        return false;
    }
    ValId a = dec_in(c, 0);
    IrDType st = dec_ty(c, dec_in(c, 2))->dtype;
    if (!ir_dtype_is_float(st) || dec_ty(c, a)->dims[dec_ty(c, a)->rank - 1] != k) {
        dec_err(c, "A's last axis must be K (%lld) and scales float", (long long)k);
        return false;
    }
    ValId w = nbits_weights(c, k, n, (int)bits, bs, st), out[DEC_MAX_OUT];
    ValId ab[2] = {a, w == IR_NONE ? IR_NONE : dec_cast(c, w, dec_ty(c, a)->dtype)};
    if (w == IR_NONE || !dec_sub_run(c, dec_matmul, "MatMul", ab, 2, false, out))
        return false;
    c->out[0] = dec_in(c, 5) != IR_NONE ? dec_bin(c, IR_BIN_ADD, out[0], dec_in(c, 5)) : out[0];
    return true;
}
