/* onnx_loss.c: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (inference
 * evaluation of the losses). The log-probability of each target class is picked
 * with dix_take_along on the class axis (the target is data, so the flat index is
 * computed at run time); ignore_index and class weights become a per-element weight
 * tensor. */
#include <string.h>

#include "onnx.h"
#include "passes/decompose/dec_index.h"

/* loss = -sum/mean of w * x[n, target, d...] with the ONNX reduction rules; x is
 * [N, C, d...] (log-probabilities), target [N, d...]. */
static bool nll(DecCtx *c, ValId x, ValId target, ValId weight, ValId *out)
{
    const IrType *tx = dec_ty(c, x);
    IrType tt = *dec_ty(c, target);
    const char *red = dec_as(c, "reduction", "mean");
    bool has_ignore = ir_attr_find(c->n, "ignore_index") != NULL;
    int64_t ignore = dec_ai(c, "ignore_index", 0);
    if (tx->rank < 2 || tt.rank != tx->rank - 1 || !ir_dtype_is_int(tt.dtype)) {
        dec_err(c, "input must be [N, C, ...] and target [N, ...] of integers");
        return false;
    }
    for (int i = 0; i < tt.rank; i++)
        if (tt.dims[i] != tx->dims[i ? i + 1 : 0]) {
            dec_err(c, "target shape does not match the input");
            return false;
        }
    if (strcmp(red, "none") != 0 && strcmp(red, "sum") != 0 && strcmp(red, "mean") != 0) {
        dec_err(c, "unknown reduction '%s'", red);
        return false;
    }
    ValId t = dec_cast(c, target, IR_DT_I64), keep = IR_NONE;
    if (has_ignore) { /* ignored targets pick class 0 and get weight 0 */
        keep = dec_bin_s(c, IR_BIN_NE, t, (double)ignore);
        t = dec_select(c, keep, t, dec_scalar(c->g, IR_DT_I64, 0));
    }
    int64_t ud[IR_MAX_RANK];
    for (int i = 0, j = 0; i < tx->rank; i++)
        ud[i] = i == 1 ? 1 : tt.dims[j++];
    ValId picked = dix_take_along(c, x, dec_reshape(c, t, ud, tx->rank), 1);
    ValId loss = dec_un(c, IR_UN_NEG, dec_reshape(c, picked, tt.dims, tt.rank));
    IrDType dt = tx->dtype;
    ValId w = IR_NONE;
    if (weight != IR_NONE)
        w = dec_gather(c, weight, t, 0);
    if (keep != IR_NONE) {
        ValId zero = dec_scalar(c->g, dt, 0);
        w = dec_select(c, keep, w != IR_NONE ? w : dec_scalar(c->g, dt, 1), zero);
        w = dec_expand(c, w, tt.dims, tt.rank);
    }
    if (w != IR_NONE)
        loss = dec_bin(c, IR_BIN_MUL, loss, w);
    int64_t all[IR_MAX_RANK];
    for (int i = 0; i < tt.rank; i++)
        all[i] = i;
    if (strcmp(red, "none") == 0) {
        *out = loss;
    } else if (strcmp(red, "sum") == 0 || w == IR_NONE) {
        ValId s = dec_reduce(c, IR_RED_SUM, loss, all, tt.rank, false);
        *out = strcmp(red, "sum") == 0 ? s : dec_bin_s(c, IR_BIN_MUL, s, 1.0 / (double)dec_numel(&tt));
    } else {
        ValId s = dec_reduce(c, IR_RED_SUM, loss, all, tt.rank, false);
        *out = dec_bin(c, IR_BIN_DIV, s, dec_reduce(c, IR_RED_SUM, w, all, tt.rank, false));
    }
    return true;
}

bool dec_nll_loss(DecCtx *c)
{
    if (dec_in(c, 0) == IR_NONE || dec_in(c, 1) == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    return nll(c, dec_in(c, 0), dec_in(c, 1), dec_in(c, 2), &c->out[0]);
}

/* log_softmax over the class axis (1), then the NLL loss; output 1 is the
 * log-probabilities. */
bool dec_sce_loss(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    if (x == IR_NONE || dec_in(c, 1) == IR_NONE || dec_ty(c, x)->rank < 2) {
        dec_err(c, "missing input or input rank < 2");
        return false;
    }
    int64_t ax = 1;
    ValId m = dec_reduce(c, IR_RED_MAX, x, &ax, 1, true);
    ValId d = dec_bin(c, IR_BIN_SUB, x, m);
    ValId s = dec_reduce(c, IR_RED_SUM, dec_un(c, IR_UN_EXP, d), &ax, 1, true);
    ValId lp = dec_bin(c, IR_BIN_SUB, d, dec_un(c, IR_UN_LOG, s));
    c->out[1] = lp;
    return nll(c, lp, dec_in(c, 1), dec_in(c, 2), &c->out[0]);
}
