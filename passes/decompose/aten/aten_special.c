/* aten_special.c: pointwise functions without a core UNARY of their own (erfinv,
 * nan_to_num), built from UNARY, BINARY and SELECT.
 */
#include <float.h>
#include <math.h>

#include "aten.h"

/* Horner evaluation of the polynomial k[0] w^(n-1) + ... + k[n-1]. */
static ValId horner(DecCtx *c, ValId w, const double *k, int n)
{
    ValId p = dec_bin_s(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, w, k[0]), k[1]);
    for (int i = 2; i < n; i++)
        p = dec_bin_s(c, IR_BIN_ADD, dec_bin(c, IR_BIN_MUL, p, w), k[i]);
    return p;
}

/* erfinv(self): M. Giles' single-precision approximation ("Approximating the erfinv
 * function", GPU Computing Gems, 2011; relative error below 4e-7 in float): with
 * w = -log((1 - x)(1 + x)), a degree-8 polynomial in w - 2.5 for w < 5, else in
 * sqrt(w) - 3, times x. erfinv(+-1) = +-inf; NaN outside [-1, 1]. */
bool aten_erfinv(DecCtx *c)
{
    static const double central[9] = {
        2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
        -0.00125372503, -0.00417768164, 0.246640727, 1.50140941};
    static const double tail[9] = {
        -0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
        -0.0076224613, 0.00943887047, 1.00167406, 2.83297682};
    ValId x;
    if (!aten_need(c, "self", &x))
        return false;
    x = aten_like_out(c, x, 0);
    if (!ir_dtype_is_float(dec_ty(c, x)->dtype)) {
        dec_err(c, "erfinv of a %s tensor", ir_dtype_name(dec_ty(c, x)->dtype));
        return false;
    }
    ValId one_m = dec_bin_s(c, IR_BIN_SUB, dec_bin_s(c, IR_BIN_MUL, x, -1.0), -1.0); /* 1 - x */
    ValId w = dec_un(c, IR_UN_NEG, dec_un(c, IR_UN_LOG, dec_bin(c, IR_BIN_MUL, one_m,
                                                                 dec_bin_s(c, IR_BIN_ADD, x, 1.0))));
    ValId pc = horner(c, dec_bin_s(c, IR_BIN_SUB, w, 2.5), central, 9);
    ValId pt = horner(c, dec_bin_s(c, IR_BIN_SUB, dec_un(c, IR_UN_SQRT, w), 3.0), tail, 9);
    ValId y = dec_bin(c, IR_BIN_MUL, dec_select(c, dec_bin_s(c, IR_BIN_LT, w, 5.0), pc, pt), x);
    ValId ax = dec_un(c, IR_UN_ABS, x);
    y = dec_select(c, dec_bin_s(c, IR_BIN_EQ, ax, 1.0), dec_bin_s(c, IR_BIN_MUL, x, INFINITY), y);
    c->out[0] = dec_select(c, dec_bin_s(c, IR_BIN_GT, ax, 1.0), dec_bin_s(c, IR_BIN_ADD, x, NAN), y);
    return true;
}

/* Largest finite value of float dtype t. */
static double finite_max(IrDType t)
{
    switch (t) {
    case IR_DT_F16: return 65504.0;
    case IR_DT_BF16: return 3.3895313892515355e38;
    case IR_DT_F64: return DBL_MAX;
    default: return FLT_MAX;
    }
}

/* nan_to_num(self, nan=0, posinf=max, neginf=lowest): NaN and infinities replaced
 * (the defaults are the dtype's finite extremes); other dtypes are unchanged. */
bool aten_nan_to_num(DecCtx *c)
{
    ValId x;
    if (!aten_need(c, "self", &x))
        return false;
    x = aten_like_out(c, x, 0);
    IrDType t = dec_ty(c, x)->dtype;
    if (!ir_dtype_is_float(t)) {
        c->out[0] = x;
        return true;
    }
    double nan = 0, pos = finite_max(t), neg = -finite_max(t);
    aten_num(c, "nan", &nan);
    aten_num(c, "posinf", &pos);
    aten_num(c, "neginf", &neg);
    ValId y = dec_select(c, dec_un(c, IR_UN_ISNAN, x), dec_scalar(c->g, t, nan), x);
    y = dec_select(c, dec_bin_s(c, IR_BIN_EQ, x, INFINITY), dec_scalar(c->g, t, pos), y);
    c->out[0] = dec_select(c, dec_bin_s(c, IR_BIN_EQ, x, -INFINITY), dec_scalar(c->g, t, neg), y);
    return true;
}
