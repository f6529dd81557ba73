/* onnx_linalg.c: linear-algebra operators as core ops.
 *
 * Det: LU factorisation with partial pivoting, unrolled over the static matrix
 * size. Each column k picks the pivot row with ARGREDUCE (largest magnitude among
 * rows >= k), swaps it with row k by SELECT on one-hot row masks (exact, no
 * arithmetic on the moved rows), flips the sign on a swap, multiplies the pivot
 * into the determinant and eliminates the rows below. A zero pivot (singular
 * matrix) gives a zero determinant, never NaN.
 */
#include <string.h>

#include "onnx.h"

#define DET_MAX_N 64                      /* largest matrix size unrolled */

/* [1, n, 1] constant i64 row numbers 0..n-1. */
static ValId row_iota(DecCtx *c, int64_t n)
{
    int64_t *v = ir_scratch(c->g, sizeof(int64_t) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = i;
    int64_t d[3] = {1, n, 1};
    return dec_const_i64(c->g, d, 3, v);
}

/* One elimination step on column k of a [N, n, n]; updates *a and *det. */
static void det_step(DecCtx *c, ValId *a, ValId *det, ValId iota, int64_t n, int64_t k)
{
    IrDType dt = dec_ty(c, *a)->dtype;
    ValId zero = dec_scalar(c->g, dt, 0), m = *a;
    ValId col = dec_slice_axis(c, m, 2, k, 1, 1); /* [N, n, 1] */
    ValId above = dec_bin_s(c, IR_BIN_LT, iota, (double)k);
    ValId mag = dec_select(c, above, dec_scalar(c->g, dt, -1), dec_un(c, IR_UN_ABS, col));
    IrAttr at[4] = {ir_attr_int("fn", IR_RED_MAX), ir_attr_int("axis", 1), ir_attr_int("keepdims", 1),
                    ir_attr_int("select_last", 0)};
    ValId p = dec_op(c, IR_OP_ARGREDUCE, &mag, 1, at, 4); /* [N, 1, 1] i64 */
    ValId is_p = dec_bin(c, IR_BIN_EQ, iota, p), is_k = dec_bin_s(c, IR_BIN_EQ, iota, (double)k);
    int64_t ax1 = 1;
    ValId row_p = dec_reduce(c, IR_RED_SUM, dec_select(c, is_p, m, zero), &ax1, 1, true);
    ValId row_k = dec_slice_axis(c, m, 1, k, 1, 1);
    m = dec_select(c, is_k, row_p, dec_select(c, is_p, row_k, m));
    ValId piv = dec_slice_axis(c, dec_slice_axis(c, m, 1, k, 1, 1), 2, k, 1, 1); /* [N, 1, 1] */
    ValId d = dec_bin(c, IR_BIN_MUL, *det, piv);
    *det = dec_select(c, dec_bin_s(c, IR_BIN_NE, p, (double)k), dec_un(c, IR_UN_NEG, d), d);
    if (k + 1 < n) {
        ValId safe = dec_select(c, dec_bin_s(c, IR_BIN_EQ, piv, 0), dec_scalar(c->g, dt, 1), piv);
        ValId below = dec_bin_s(c, IR_BIN_GT, iota, (double)k);
        ValId colk = dec_slice_axis(c, m, 2, k, 1, 1);
        ValId f = dec_select(c, below, dec_bin(c, IR_BIN_DIV, colk, safe), zero);
        m = dec_bin(c, IR_BIN_SUB, m, dec_bin(c, IR_BIN_MUL, f, dec_slice_axis(c, m, 1, k, 1, 1)));
    }
    *a = m;
}

/* Det: determinant of the square matrices in the last two axes. */
bool dec_det(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    if (x == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    const IrType *t = dec_ty(c, x);
    int r = t->rank;
    if (r < 2 || t->dims[r - 1] != t->dims[r - 2] || !ir_dtype_is_float(t->dtype)) {
        dec_err(c, "input must be a float tensor [..., M, M]");
        return false;
    }
    int64_t n = t->dims[r - 1], nb = 1, bdims[IR_MAX_RANK];
    for (int i = 0; i < r - 2; i++) {
        bdims[i] = t->dims[i];
        nb *= t->dims[i];
    }
    if (n < 1 || n > DET_MAX_N) {
        dec_err(c, "unsupported: Det of %lldx%lld matrices (1 to %d)", (long long)n, (long long)n,
                DET_MAX_N);
        return false;
    }
    int64_t d3[3] = {nb, n, n}, one3[3] = {nb, 1, 1};
    ValId a = dec_reshape(c, x, d3, 3), iota = row_iota(c, n);
    ValId det = dec_expand(c, dec_scalar(c->g, t->dtype, 1), one3, 3);
    for (int64_t k = 0; k < n; k++)
        det_step(c, &a, &det, iota, n, k);
    c->out[0] = dec_reshape(c, det, bdims, r - 2);
    return true;
}
