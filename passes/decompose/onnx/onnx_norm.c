/* onnx_norm.c: decomposition of ONNX normalisations into reductions (REDUCE sum,
 * then a multiply by 1/n) and pointwise ops. Inference BatchNormalization becomes
 * one multiply-add with constants computed at compile time (pass_bnfold may then
 * move it into a preceding convolution); in training mode it normalises with the
 * batch's statistics. */
#include <math.h>
#include <string.h>

#include "onnx.h"

/* BatchNormalization in training mode (training_mode = 1; before opset 14, its
 * running statistics read): y normalised with the batch's own statistics, the mean
 * and population variance over every axis but the channel's, and the running
 * statistics updated as input * momentum + batch * (1 - momentum) (onnx.ai). A
 * weight-standardised convolution (BiT) standardises its weight so: constants, folded
 * at compile time. The saved statistics of opsets before 14 (outputs 3 and 4; what
 * the variance output holds differs between frameworks) are refused. */
static bool batchnorm_training(DecCtx *c, ValId x, int r)
{
    if (dec_out_used(c, 3) || dec_out_used(c, 4)) {
        dec_err(c, "unsupported: BatchNormalization's saved mean and variance (training outputs 3 and 4)");
        return false;
    }
    if (c->opset < 9 && dec_ai(c, "spatial", 1) == 0) {
        dec_err(c, "unsupported: BatchNormalization in training mode with spatial = 0");
        return false;
    }
    int64_t axes[IR_MAX_RANK], ch = dec_ty(c, x)->dims[1];
    int n = 0;
    for (int i = 0; i < r; i++)
        if (i != 1)
            axes[n++] = i;
    double eps = dec_af(c, "epsilon", 1e-5), mom = dec_af(c, "momentum", 0.9);
    ValId stat[2];                            /* the batch's mean and variance */
    ValId y = dec_normalize(c, x, axes, n, eps, &stat[0], NULL, &stat[1]);
    y = dec_bin(c, IR_BIN_MUL, y, dec_chan_view(c, dec_in(c, 1), r));
    c->out[0] = dec_bin(c, IR_BIN_ADD, y, dec_chan_view(c, dec_in(c, 2), r));
    for (int o = 1; o <= 2; o++) {
        if (!dec_out_used(c, o))
            continue;
        ValId batch = dec_reshape(c, stat[o - 1], &ch, 1);
        ValId run = dec_bin_s(c, IR_BIN_MUL, dec_in(c, 2 + o), mom);
        c->out[o] = dec_bin(c, IR_BIN_ADD, run, dec_bin_s(c, IR_BIN_MUL, batch, 1.0 - mom));
    }
    return true;
}

/* Inference BatchNormalization: y = x * a + b with a = scale / sqrt(var + eps) and
 * b = bias - mean * a (these fold to constants when the statistics are constant). */
bool dec_batchnorm(DecCtx *c)
{
    for (int i = 0; i < 5; i++)
        if (dec_in(c, i) == IR_NONE) {
            dec_err(c, "missing input %d", i);
            return false;
        }
    ValId x = dec_in(c, 0);
    const IrType *tx = dec_ty(c, x);
    if (tx->rank < 2) {
        dec_err(c, "input must have rank >= 2");
        return false;
    }
    if (dec_ai(c, "training_mode", 0) != 0 || dec_out_used(c, 1) || dec_out_used(c, 2))
        return batchnorm_training(c, x, tx->rank);
    double eps = dec_af(c, "epsilon", 1e-5);
    ValId var = dec_bin_s(c, IR_BIN_ADD, dec_in(c, 4), eps);
    ValId a = dec_bin(c, IR_BIN_MUL, dec_in(c, 1), dec_un(c, IR_UN_RSQRT, var));
    ValId b = dec_bin(c, IR_BIN_SUB, dec_in(c, 2), dec_bin(c, IR_BIN_MUL, dec_in(c, 3), a));
    bool spatial = c->opset >= 9 || dec_ai(c, "spatial", 1) != 0;
    if (spatial) {
        a = dec_chan_view(c, a, tx->rank);
        b = dec_chan_view(c, b, tx->rank);
    } else { /* per-activation statistics of shape [C, D1, ...] */
        int64_t dims[IR_MAX_RANK];
        dims[0] = 1;
        for (int i = 1; i < tx->rank; i++)
            dims[i] = tx->dims[i];
        a = dec_reshape(c, a, dims, tx->rank);
        b = dec_reshape(c, b, dims, tx->rank);
    }
    c->out[0] = dec_bin(c, IR_BIN_ADD, dec_bin(c, IR_BIN_MUL, x, a), b);
    return true;
}

bool dec_instancenorm(DecCtx *c)
{
    ValId x = dec_in(c, 0), sc = dec_in(c, 1), b = dec_in(c, 2);
    if (x == IR_NONE || sc == IR_NONE || b == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    int r = dec_ty(c, x)->rank;
    if (r < 3) {
        dec_err(c, "input must have rank >= 3, got %d", r);
        return false;
    }
    int64_t axes[IR_MAX_RANK];
    for (int i = 2; i < r; i++)
        axes[i - 2] = i;
    ValId y = dec_normalize(c, x, axes, r - 2, dec_af(c, "epsilon", 1e-5), NULL, NULL, NULL);
    y = dec_bin(c, IR_BIN_MUL, y, dec_chan_view(c, sc, r));
    c->out[0] = dec_bin(c, IR_BIN_ADD, y, dec_chan_view(c, b, r));
    return true;
}

/* LayerNormalization over axes [axis, rank): mean, sub, square, mean, add eps,
 * rsqrt, mul, mul scale, add bias. Mean and InvStdDev outputs are provided. */
bool dec_layernorm(DecCtx *c)
{
    ValId x = dec_in(c, 0), sc = dec_in(c, 1), b = dec_in(c, 2);
    if (x == IR_NONE || sc == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    IrDType dt = dec_ty(c, x)->dtype;
    int r = dec_ty(c, x)->rank, axis;
    if (!dec_axis(c, dec_ai(c, "axis", -1), r, &axis))
        return false;
    IrDType st = (IrDType)dec_ai(c, "stash_type", IR_DT_F32);
    if (ir_dtype_is_float(dt) && ir_dtype_is_float(st))
        x = dec_cast(c, x, st);
    int64_t axes[IR_MAX_RANK];
    for (int i = axis; i < r; i++)
        axes[i - axis] = i;
    ValId mean, inv;
    ValId y = dec_normalize(c, x, axes, r - axis, dec_af(c, "epsilon", 1e-5), &mean, &inv,
                            NULL);
    y = dec_cast(c, y, dt);
    y = dec_bin(c, IR_BIN_MUL, y, sc);
    if (b != IR_NONE)
        y = dec_bin(c, IR_BIN_ADD, y, b);
    c->out[0] = y;
    c->out[1] = mean;
    c->out[2] = inv;
    return true;
}

/* GroupNormalization: normalise [N, G, C/G * spatial] over the last axis; scale
 * and bias per group (opset 18) or per channel (opset >= 21). */
bool dec_groupnorm(DecCtx *c)
{
    ValId x = dec_in(c, 0), sc = dec_in(c, 1), b = dec_in(c, 2);
    if (x == IR_NONE || sc == IR_NONE || b == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    const IrType *tx = dec_ty(c, x);
    int64_t g = dec_ai(c, "num_groups", 0), ch = tx->rank >= 2 ? tx->dims[1] : 0;
    if (tx->rank < 3 || g < 1 || ch % g != 0) {
        dec_err(c, "num_groups %lld must divide the channel count %lld", (long long)g, (long long)ch);
        return false;
    }
    IrType orig = *tx;
    int64_t v3[3] = {tx->dims[0], g, dec_numel(tx) / (tx->dims[0] * g)}, ax = 2;
    ValId y = dec_normalize(c, dec_reshape(c, x, v3, 3), &ax, 1, dec_af(c, "epsilon", 1e-5),
                            NULL, NULL, NULL);
    if (c->opset < 21) {
        int64_t gd[3] = {1, g, 1};
        y = dec_bin(c, IR_BIN_MUL, y, dec_reshape(c, sc, gd, 3));
        y = dec_bin(c, IR_BIN_ADD, y, dec_reshape(c, b, gd, 3));
        c->out[0] = dec_reshape(c, y, orig.dims, orig.rank);
        return true;
    }
    y = dec_reshape(c, y, orig.dims, orig.rank);
    y = dec_bin(c, IR_BIN_MUL, y, dec_chan_view(c, sc, orig.rank));
    c->out[0] = dec_bin(c, IR_BIN_ADD, y, dec_chan_view(c, b, orig.rank));
    return true;
}

/* RMSNormalization: x * rsqrt(mean(x^2) + eps) * scale over [axis, rank). */
bool dec_rmsnorm(DecCtx *c)
{
    ValId x = dec_in(c, 0), sc = dec_in(c, 1);
    if (x == IR_NONE || sc == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    int r = dec_ty(c, x)->rank, axis;
    if (!dec_axis(c, dec_ai(c, "axis", -1), r, &axis))
        return false;
    int64_t axes[IR_MAX_RANK];
    for (int i = axis; i < r; i++)
        axes[i - axis] = i;
    ValId ms = dec_mean(c, dec_bin(c, IR_BIN_MUL, x, x), axes, r - axis, true);
    ValId inv = dec_un(c, IR_UN_RSQRT, dec_bin_s(c, IR_BIN_ADD, ms, dec_af(c, "epsilon", 1e-5)));
    c->out[0] = dec_bin(c, IR_BIN_MUL, dec_bin(c, IR_BIN_MUL, x, inv), sc);
    return true;
}

/* LpNormalization: x / ||x||_p along one axis (p = 1 or 2). */
bool dec_lpnorm(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    if (x == IR_NONE)
        return false;
    int axis;
    int64_t p = dec_ai(c, "p", 2);
    if (!dec_axis(c, dec_ai(c, "axis", -1), dec_ty(c, x)->rank, &axis))
        return false;
    if (p != 1 && p != 2) {
        dec_err(c, "p must be 1 or 2, got %lld", (long long)p);
        return false;
    }
    int64_t ax = axis;
    ValId v = p == 2 ? dec_bin(c, IR_BIN_MUL, x, x) : dec_un(c, IR_UN_ABS, x);
    v = dec_reduce(c, IR_RED_SUM, v, &ax, 1, true);
    if (p == 2)
        v = dec_un(c, IR_UN_SQRT, v);
    /* a zero norm (all-zero slice) gives zeros, not NaN */
    ValId z = dec_bin_s(c, IR_BIN_EQ, v, 0.0);
    v = dec_select(c, z, dec_scalar(c->g, dec_ty(c, v)->dtype, 1.0), v);
    c->out[0] = dec_bin(c, IR_BIN_DIV, x, v);
    return true;
}


/* MeanVarianceNormalization, as its ONNX function body:
 * (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes` (default 0, 2, 3). */
bool dec_mvn(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    if (x == IR_NONE)
        return false;
    int r = dec_ty(c, x)->rank, n = 0;
    static const int64_t dflt[3] = {0, 2, 3};
    const int64_t *av;
    int na = dec_aints(c, "axes", &av);
    if (na < 0) {
        av = dflt;
        na = 3;
    }
    int64_t axes[IR_MAX_RANK];
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < na; i++) {
        int a;
        if (!dec_axis(c, av[i], r, &a))
            return false;
        seen[a] = true;
    }
    for (int i = 0; i < r; i++)
        if (seen[i])
            axes[n++] = i;
    ValId m = dec_mean(c, x, axes, n, true);
    ValId ex2 = dec_mean(c, dec_bin(c, IR_BIN_MUL, x, x), axes, n, true);
    ValId var = dec_bin(c, IR_BIN_SUB, ex2, dec_bin(c, IR_BIN_MUL, m, m));
    ValId sd = dec_bin_s(c, IR_BIN_ADD, dec_un(c, IR_UN_SQRT, var), 1e-9);
    c->out[0] = dec_bin(c, IR_BIN_DIV, dec_bin(c, IR_BIN_SUB, x, m), sd);
    return true;
}

/* LRN: sum of squares over a channel window (PAD + WINDOW with kernel
 * [size, 1, ...] over the channel and spatial dims), then
 * x / (bias + alpha / size * sum) ^ beta. */
bool dec_lrn(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    if (x == IR_NONE)
        return false;
    const IrType *t = dec_ty(c, x);
    int r = t->rank;
    int64_t size = dec_ai(c, "size", 0);
    if (r < 3 || size < 1) {
        dec_err(c, "needs input rank >= 3 and size >= 1");
        return false;
    }
    double alpha = dec_af(c, "alpha", 1e-4), beta = dec_af(c, "beta", 0.75), bias = dec_af(c, "bias", 1.0);
    int64_t pads[2 * IR_MAX_RANK] = {0}, k[IR_MAX_RANK], ones[IR_MAX_RANK];
    pads[1] = (size - 1) / 2;
    pads[r + 1] = size - 1 - (size - 1) / 2;
    for (int i = 0; i < r - 1; i++) {
        k[i] = i == 0 ? size : 1;
        ones[i] = 1;
    }
    ValId sq = dec_pad(c, dec_bin(c, IR_BIN_MUL, x, x), pads, NULL, 0.0);
    IrAttr a[4] = {ir_attr_int("fn", IR_RED_SUM), ir_attr_ints_ref("kernel", k, r - 1),
                   ir_attr_ints_ref("strides", ones, r - 1), ir_attr_ints_ref("dilations", ones, r - 1)};
    ValId s = dec_op(c, IR_OP_WINDOW, &sq, 1, a, 4);
    ValId den = dec_bin_s(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, s, alpha / (double)size), bias);
    den = dec_bin_s(c, IR_BIN_POW, den, beta);
    c->out[0] = dec_bin(c, IR_BIN_DIV, x, den);
    return true;
}
