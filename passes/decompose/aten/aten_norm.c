/* aten_norm.c: ATen normalisations: batch_norm (inference statistics become one
 * per-channel multiply and add; training mode uses the batch statistics), layer_norm,
 * rms_norm, group_norm, instance_norm and weight_norm (reductions and pointwise ops).
 *
 * The native_* forms also return the mean and the reciprocal standard deviation;
 * those outputs are produced when torch records them with a shape this code makes.
 */
#include <math.h>
#include <string.h>

#include "aten.h"

/* v[C] reshaped to [C, 1, ...] so that it broadcasts against dim 1 of a rank-r input. */
static ValId chan(DecCtx *c, ValId v, int r)
{
    int64_t d[IR_MAX_RANK];
    d[0] = dec_numel(dec_ty(c, v));
    for (int i = 1; i < r - 1; i++)
        d[i] = 1;
    return dec_reshape(c, v, d, r > 1 ? r - 1 : 1);
}

/* Store value v as output i if the node has it and torch recorded the same shape
 * (the native_* statistics); otherwise leave it unmade. */
static void extra_out(DecCtx *c, int i, ValId v)
{
    if (i >= c->n->nout || v == IR_NONE)
        return;
    const IrType *o = aten_oty(c, i), *t = dec_ty(c, v);
    if (dec_numel(o) != dec_numel(t))
        return;
    c->out[i] = dec_reshape(c, dec_cast(c, v, o->dtype), o->dims, o->rank);
}

/* batch_norm, native_batch_norm, _native_batch_norm_legit(_no_training|_functional). */
bool aten_batch_norm(DecCtx *c)
{
    char buf[128];
    const char *nm = aten_base(c->n->foreign.op_type, buf, sizeof buf);
    ValId x, w = aten_in(c, "weight"), b = aten_in(c, "bias");
    ValId rm = aten_in(c, "running_mean"), rv = aten_in(c, "running_var");
    if (!aten_need(c, "input", &x))
        return false;
    const IrType *tx = dec_ty(c, x);
    IrDType t = aten_oty(c, 0)->dtype;
    x = dec_cast(c, x, t);
    double eps = 1e-5;
    aten_num(c, "eps", &eps);
    bool training = strstr(nm, "no_training") ? false : dec_ai(c, "training", 0) != 0;
    int r = tx->rank;
    if (r < 2) {
        dec_err(c, "batch norm input must have rank >= 2");
        return false;
    }
    ValId y, mean = IR_NONE, rstd = IR_NONE;
    if (training || rm == IR_NONE || rv == IR_NONE) {
        int64_t axes[IR_MAX_RANK];
        int n = 0;
        for (int i = 0; i < r; i++)
            if (i != 1)
                axes[n++] = i;
        y = dec_normalize(c, x, axes, n, eps, &mean, &rstd, NULL);
        if (w != IR_NONE)
            y = dec_bin(c, IR_BIN_MUL, y, chan(c, dec_cast(c, w, t), r));
        if (b != IR_NONE)
            y = dec_bin(c, IR_BIN_ADD, y, chan(c, dec_cast(c, b, t), r));
    } else { /* y = x * scale + shift, per channel (folds for constant statistics) */
        ValId scale = dec_un(c, IR_UN_RSQRT, dec_bin_s(c, IR_BIN_ADD, dec_cast(c, rv, t), eps));
        if (w != IR_NONE)
            scale = dec_bin(c, IR_BIN_MUL, scale, dec_cast(c, w, t));
        ValId shift = dec_un(c, IR_UN_NEG, dec_bin(c, IR_BIN_MUL, dec_cast(c, rm, t), scale));
        if (b != IR_NONE)
            shift = dec_bin(c, IR_BIN_ADD, shift, dec_cast(c, b, t));
        y = dec_bin(c, IR_BIN_ADD, dec_bin(c, IR_BIN_MUL, x, chan(c, scale, r)),
                    chan(c, shift, r));
    }
    c->out[0] = y;
    extra_out(c, 1, mean);
    extra_out(c, 2, rstd);
    return true;
}

/* layer_norm / native_layer_norm (input, normalized_shape, weight, bias, eps) and
 * rms_norm (input, normalized_shape, weight, eps): over the trailing dims. */
bool aten_layer_norm(DecCtx *c)
{
    char buf[128];
    bool rms = strcmp(aten_base(c->n->foreign.op_type, buf, sizeof buf), "rms_norm") == 0;
    ValId x, w = aten_in(c, "weight"), b = aten_in(c, "bias");
    if (!aten_need(c, "input", &x))
        return false;
    IrDType t = aten_oty(c, 0)->dtype;
    x = dec_cast(c, x, t);
    int r = dec_ty(c, x)->rank;
    int64_t ns[IR_MAX_RANK], axes[IR_MAX_RANK];
    int n = aten_ints(c, "normalized_shape", ns, IR_MAX_RANK, 0);
    if (n < 1 || n > r) {
        if (n != -2)
            dec_err(c, "normalized_shape must have 1..%d entries", r);
        return false;
    }
    for (int i = 0; i < n; i++)
        axes[i] = r - n + i;
    double eps = rms ? 1.1920928955078125e-07 : 1e-5;
    aten_num(c, "eps", &eps);
    ValId y, mean = IR_NONE, rstd = IR_NONE;
    if (rms) {
        ValId ms = dec_mean(c, dec_bin(c, IR_BIN_MUL, x, x), axes, n, true);
        y = dec_bin(c, IR_BIN_MUL, x, dec_un(c, IR_UN_RSQRT, dec_bin_s(c, IR_BIN_ADD, ms, eps)));
    } else {
        y = dec_normalize(c, x, axes, n, eps, &mean, &rstd, NULL);
    }
    if (w != IR_NONE)
        y = dec_bin(c, IR_BIN_MUL, y, dec_cast(c, w, t));
    if (b != IR_NONE)
        y = dec_bin(c, IR_BIN_ADD, y, dec_cast(c, b, t));
    c->out[0] = y;
    extra_out(c, 1, mean);
    extra_out(c, 2, rstd);
    return true;
}

/* group_norm(input, num_groups, weight, bias, eps) and native_group_norm(input, weight,
 * bias, N, C, HxW, group, eps): statistics over [C/G, spatial...] per group. */
bool aten_group_norm(DecCtx *c)
{
    ValId x, w = aten_in(c, "weight"), b = aten_in(c, "bias");
    if (!aten_need(c, "input", &x))
        return false;
    IrDType t = aten_oty(c, 0)->dtype;
    x = dec_cast(c, x, t);
    const IrType *tx = dec_ty(c, x);
    int r = tx->rank;
    int64_t G = dec_has_attr(c, "num_groups") ? dec_ai(c, "num_groups", 1) : dec_ai(c, "group", 1);
    if (r < 2 || G < 1 || tx->dims[1] % G != 0) {
        dec_err(c, "group norm needs rank >= 2 and channels divisible by %lld groups",
                (long long)G);
        return false;
    }
    double eps = 1e-5;
    aten_num(c, "eps", &eps);
    int64_t N = tx->dims[0], d[3] = {N, G, dec_numel(tx) / (N ? N * G : 1)}, ax = 2;
    ValId mean, rstd;
    ValId y = dec_normalize(c, dec_reshape(c, x, d, 3), &ax, 1, eps, &mean, &rstd, NULL);
    y = dec_reshape(c, y, tx->dims, r);
    if (w != IR_NONE)
        y = dec_bin(c, IR_BIN_MUL, y, chan(c, dec_cast(c, w, t), r));
    if (b != IR_NONE)
        y = dec_bin(c, IR_BIN_ADD, y, chan(c, dec_cast(c, b, t), r));
    c->out[0] = y;
    extra_out(c, 1, mean);
    extra_out(c, 2, rstd);
    return true;
}

/* instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
 * momentum, eps): per (N, C) statistics over the spatial dims. */
bool aten_instance_norm(DecCtx *c)
{
    ValId x, w = aten_in(c, "weight"), b = aten_in(c, "bias");
    if (!aten_need(c, "input", &x))
        return false;
    if (!dec_ai(c, "use_input_stats", 1)) {
        dec_err(c, "instance_norm with running statistics (use_input_stats=False) is not "
                "supported");
        return false;
    }
    IrDType t = aten_oty(c, 0)->dtype;
    x = dec_cast(c, x, t);
    int r = dec_ty(c, x)->rank;
    int64_t axes[IR_MAX_RANK];
    for (int i = 2; i < r; i++)
        axes[i - 2] = i;
    double eps = 1e-5;
    aten_num(c, "eps", &eps);
    ValId y = dec_normalize(c, x, axes, r - 2, eps, NULL, NULL, NULL);
    if (w != IR_NONE)
        y = dec_bin(c, IR_BIN_MUL, y, chan(c, dec_cast(c, w, t), r));
    if (b != IR_NONE)
        y = dec_bin(c, IR_BIN_ADD, y, chan(c, dec_cast(c, b, t), r));
    c->out[0] = y;
    return true;
}

/* _weight_norm(v, g, dim) and _weight_norm_interface (which also returns the norms):
 * w = v * g / ||v||, the 2-norm over every dim but dim (over all of v for dim -1,
 * as norm_except_dim does). */
bool aten_weight_norm(DecCtx *c)
{
    ValId v, g;
    if (!aten_need(c, "v", &v) || !aten_need(c, "g", &g))
        return false;
    const IrType *t = dec_ty(c, v);
    int64_t dim = dec_ai(c, "dim", 0), axes[IR_MAX_RANK];
    int n = 0, keep = -1;
    if (!ir_dtype_is_float(t->dtype)) {
        dec_err(c, "weight norm of a %s tensor", ir_dtype_name(t->dtype));
        return false;
    }
    if (dim != -1 && !dec_axis(c, dim, t->rank, &keep))
        return false;
    for (int i = 0; i < t->rank; i++)
        if (i != keep)
            axes[n++] = i;
    ValId sq = dec_bin(c, IR_BIN_MUL, v, v);
    ValId norm = dec_un(c, IR_UN_SQRT, dec_reduce(c, IR_RED_SUM, sq, axes, n, true));
    c->out[0] = dec_bin(c, IR_BIN_MUL, v, dec_bin(c, IR_BIN_DIV, dec_cast(c, g, t->dtype), norm));
    extra_out(c, 1, norm);
    return true;
}
