/* aten_activation.c: ATen activation functions as short chains of pointwise core ops
 * (gelu, silu, hardtanh/relu6, leaky_relu, elu/selu/celu, hardsigmoid/hardswish,
 * mish, softplus, log_sigmoid, prelu, glu). All work in the result's dtype.
 */
#include <math.h>
#include <string.h>

#include "aten.h"

/* Numeric argument or a default. */
static double num(const DecCtx *c, const char *name, double dflt)
{
    double v;
    return aten_num(c, name, &v) ? v : dflt;
}

static ValId scal(DecCtx *c, ValId like, double v)
{
    return dec_scalar(c->g, dec_ty(c, like)->dtype, v);
}

/* gelu: exact (erf) or the tanh approximation. */
static ValId gelu(DecCtx *c, ValId x)
{
    const char *approx = dec_as(c, "approximate", "none");
    ValId inner;
    if (strcmp(approx, "tanh") == 0) {
        ValId x3 = dec_bin(c, IR_BIN_MUL, dec_bin(c, IR_BIN_MUL, x, x), x);
        ValId p = dec_bin(c, IR_BIN_ADD, x, dec_bin_s(c, IR_BIN_MUL, x3, 0.044715));
        inner = dec_un(c, IR_UN_TANH, dec_bin_s(c, IR_BIN_MUL, p, sqrt(2.0 / M_PI)));
    } else {
        inner = dec_un(c, IR_UN_ERF, dec_bin_s(c, IR_BIN_MUL, x, M_SQRT1_2));
    }
    ValId half_x = dec_bin_s(c, IR_BIN_MUL, x, 0.5);
    return dec_bin(c, IR_BIN_MUL, half_x, dec_bin_s(c, IR_BIN_ADD, inner, 1.0));
}

/* min(max(x, lo), hi). */
static ValId clamp(DecCtx *c, ValId x, double lo, double hi)
{
    return dec_bin(c, IR_BIN_MIN, dec_bin(c, IR_BIN_MAX, x, scal(c, x, lo)), scal(c, x, hi));
}

/* elu family: x > 0 ? scale*x : scale*alpha*(exp(x*input_scale) - 1). */
static ValId elu(DecCtx *c, ValId x, double alpha, double scale, double in_scale)
{
    ValId e = dec_un(c, IR_UN_EXP, dec_bin_s(c, IR_BIN_MUL, x, in_scale));
    ValId neg = dec_bin_s(c, IR_BIN_MUL, dec_bin_s(c, IR_BIN_SUB, e, 1.0), alpha * scale);
    ValId pos = scale == 1.0 ? x : dec_bin_s(c, IR_BIN_MUL, x, scale);
    return dec_select(c, dec_bin(c, IR_BIN_GT, x, scal(c, x, 0)), pos, neg);
}

/* softplus(beta, threshold): x where beta*x > threshold, else log(1+exp(beta*x))/beta. */
static ValId softplus(DecCtx *c, ValId x, double beta, double threshold)
{
    ValId bx = beta == 1.0 ? x : dec_bin_s(c, IR_BIN_MUL, x, beta);
    ValId sp = dec_un(c, IR_UN_SOFTPLUS, bx);
    if (beta != 1.0)
        sp = dec_bin_s(c, IR_BIN_MUL, sp, 1.0 / beta);
    return dec_select(c, dec_bin(c, IR_BIN_GT, bx, scal(c, x, threshold)), x, sp);
}

/* prelu: x > 0 ? x : w*x, with w per channel (dim 1) or a single value. */
static ValId prelu(DecCtx *c, ValId x, ValId w)
{
    const IrType *tx = dec_ty(c, x), *tw = dec_ty(c, w);
    w = dec_cast(c, w, tx->dtype);
    int64_t n = dec_numel(tw);
    if (n > 1 && tx->rank >= 2) {
        int64_t dims[IR_MAX_RANK];
        for (int i = 0; i < tx->rank - 1; i++)
            dims[i] = i == 0 ? n : 1;
        w = dec_reshape(c, w, dims, tx->rank - 1);
    } else {
        w = dec_reshape(c, w, NULL, 0);
    }
    ValId pos = dec_bin(c, IR_BIN_GT, x, scal(c, x, 0));
    return dec_select(c, pos, x, dec_bin(c, IR_BIN_MUL, x, w));
}

/* glu(dim): first half * sigmoid(second half). */
static bool glu(DecCtx *c, ValId x, ValId *out)
{
    const IrType *t = dec_ty(c, x);
    int ax;
    if (!dec_axis(c, dec_ai(c, "dim", -1), t->rank, &ax))
        return false;
    int64_t h = t->dims[ax] / 2;
    if (t->dims[ax] % 2) {
        dec_err(c, "glu needs an even size along dim %d, got %lld", ax, (long long)t->dims[ax]);
        return false;
    }
    ValId a = dec_slice_axis(c, x, ax, 0, 1, h), b = dec_slice_axis(c, x, ax, h, 1, h);
    *out = dec_bin(c, IR_BIN_MUL, a, dec_un(c, IR_UN_SIGMOID, b));
    return true;
}

/* Dispatch by op name. */
bool aten_activation(DecCtx *c)
{
    char buf[128];
    const char *nm = aten_base(c->n->foreign.op_type, buf, sizeof buf);
    ValId x = aten_in(c, "self");
    if (x == IR_NONE)
        x = aten_in(c, "input");
    if (x == IR_NONE) {
        dec_err(c, "missing tensor argument 'self'");
        return false;
    }
    x = aten_like_out(c, x, 0);
    ValId r = IR_NONE;
    if (strcmp(nm, "gelu") == 0)
        r = gelu(c, x);
    else if (strcmp(nm, "silu") == 0)
        r = dec_bin(c, IR_BIN_MUL, x, dec_un(c, IR_UN_SIGMOID, x));
    else if (strcmp(nm, "hardtanh") == 0)
        r = clamp(c, x, num(c, "min_val", -1), num(c, "max_val", 1));
    else if (strcmp(nm, "relu6") == 0)
        r = clamp(c, x, 0, 6);
    else if (strcmp(nm, "leaky_relu") == 0)
        r = dec_select(c, dec_bin(c, IR_BIN_GT, x, scal(c, x, 0)), x,
                       dec_bin_s(c, IR_BIN_MUL, x, num(c, "negative_slope", 0.01)));
    else if (strcmp(nm, "elu") == 0)
        r = elu(c, x, num(c, "alpha", 1), num(c, "scale", 1), num(c, "input_scale", 1));
    else if (strcmp(nm, "selu") == 0)
        r = elu(c, x, 1.6732632423543772, 1.0507009873554805, 1);
    else if (strcmp(nm, "celu") == 0)
        r = elu(c, x, num(c, "alpha", 1), 1, 1.0 / num(c, "alpha", 1));
    else if (strcmp(nm, "hardsigmoid") == 0)
        r = clamp(c, dec_bin_s(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, x, 1.0 / 6), 0.5), 0, 1);
    else if (strcmp(nm, "hardswish") == 0)
        r = dec_bin(c, IR_BIN_MUL, x,
                    clamp(c, dec_bin_s(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, x, 1.0 / 6), 0.5),
                          0, 1));
    else if (strcmp(nm, "mish") == 0)
        r = dec_bin(c, IR_BIN_MUL, x, dec_un(c, IR_UN_TANH, dec_un(c, IR_UN_SOFTPLUS, x)));
    else if (strcmp(nm, "softplus") == 0)
        r = softplus(c, x, num(c, "beta", 1), num(c, "threshold", 20));
    else if (strcmp(nm, "log_sigmoid") == 0)
        r = dec_un(c, IR_UN_NEG, dec_un(c, IR_UN_SOFTPLUS, dec_un(c, IR_UN_NEG, x)));
    else if (strcmp(nm, "prelu") == 0 || strcmp(nm, "_prelu_kernel") == 0) {
        ValId w;
        if (!aten_need(c, "weight", &w))
            return false;
        r = prelu(c, x, w);
    } else if (strcmp(nm, "glu") == 0) {
        if (!glu(c, x, &r))
            return false;
    }
    if (r == IR_NONE) {
        dec_err(c, "unsupported activation '%s'", nm);
        return false;
    }
    c->out[0] = r;
    return true;
}
