/* onnx_topk.c: TopK as core ops.
 *
 * TopK ranks each element by pairwise comparisons (greater, or equal with a lower
 * index: ties keep the lower index first), then finds the element of each rank
 * 0..k-1 with a one-hot comparison and GATHERs the values (always sorted, which
 * sorted=0 allows). A k given as a runtime input sorts the whole axis and makes the
 * first k along it the valid extent (ir_dyn_add: the runtime moves them to the actual
 * shape after the run).
 */
#include "onnx.h"
#include "passes/decompose/dec_index.h"

/* k of TopK: the attribute (opset 1) or a constant input. A runtime k input gives
 * *k = n (the bound) and *kv, its value as an i64 scalar clamped to [-1, n + 1] (a
 * value outside [0, n] fails the run). */
static bool topk_k(DecCtx *c, int axis, int64_t n, int64_t *k, ValId *kv)
{
    *kv = IR_NONE;
    if (c->opset < 10) {
        *k = dec_ai(c, "k", -1);
    } else if (dec_in(c, 1) == IR_NONE) {
        dec_err(c, "TopK needs its k input");
        return false;
    } else if (!dix_const_int(c, 1, k)) {
        ValId v = dix_scalar(c, dec_in(c, 1), "k", IR_DT_I64);
        if (v == IR_NONE)
            return false;
        *kv = dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, v, -1), (double)(n + 1));
        *k = n;
    }
    if (*k < 0 || *k > n) {
        dec_err(c, "k = %lld is out of range for an axis of %lld elements", (long long)*k,
                (long long)n);
        return false;
    }
    return true;
}

/* Rank of every element along the last axis of xt ([M, n] -> i64 [M, n]): the number
 * of elements that come before it (larger/smaller, or equal at a lower index). */
static ValId topk_rank(DecCtx *c, ValId xt, int64_t M, int64_t n, bool largest)
{
    int64_t di[3] = {M, n, 1}, dj[3] = {M, 1, n};
    ValId xi = dec_reshape(c, xt, di, 3), xj = dec_reshape(c, xt, dj, 3);
    ValId better = dec_bin(c, largest ? IR_BIN_GT : IR_BIN_LT, xj, xi);
    ValId tie = dec_bin(c, IR_BIN_AND, dec_bin(c, IR_BIN_EQ, xj, xi),
                        dec_bin(c, IR_BIN_LT, dix_iota(c, IR_DT_I64, n, 3, 2),
                                dix_iota(c, IR_DT_I64, n, 3, 1)));
    ValId before = dec_cast(c, dec_bin(c, IR_BIN_OR, better, tie), IR_DT_I64);
    int64_t ax = 2;
    return dec_reduce(c, IR_RED_SUM, before, &ax, 1, false);
}

/* Values and int64 indices of the k largest (or smallest) of x along axis, sorted;
 * ties keep the lower index first. kv: IR_NONE, or a runtime k (then k is the axis
 * length and the first kv along axis become the valid extent). Shared with the
 * ATen topk/sort handlers. */
bool dec_topk_axis(DecCtx *c, ValId x, int axis, int64_t k, ValId kv, bool largest,
                   ValId *vals, ValId *idxs)
{
    IrType tx = *dec_ty(c, x);
    int r = tx.rank;
    int64_t n = tx.dims[axis], M = 1;
    int64_t perm[IR_MAX_RANK], inv[IR_MAX_RANK], tdims[IR_MAX_RANK];
    for (int i = 0, j = 0; i < r; i++)
        if (i != axis)
            perm[j++] = i;
    perm[r - 1] = axis;
    for (int i = 0; i < r; i++) {
        inv[perm[i]] = i;
        tdims[i] = tx.dims[perm[i]];
        if (i < r - 1)
            M *= tdims[i];
    }
    if ((double)M * (double)n * (double)(n > k ? n : k) > (double)DIX_ONEHOT_MAX) {
        dec_err(c, "unsupported: TopK over %lld x %lld elements exceeds the pairwise limit",
                (long long)M, (long long)n);
        return false;
    }
    int64_t m2[2] = {M, n}, m3[3] = {M, n, 1};
    ValId xt = dec_reshape(c, dec_transpose(c, x, perm), m2, 2);
    ValId rank = dec_reshape(c, topk_rank(c, xt, M, n, largest), m3, 3);
    /* index of the element of rank p, p = 0..k-1: [M, k] */
    ValId hit = dec_bin(c, IR_BIN_EQ, rank, dix_iota(c, IR_DT_I64, k, 3, 2));
    ValId pick = dec_select(c, hit, dix_iota(c, IR_DT_I64, n, 3, 1), dec_scalar(c->g, IR_DT_I64, 0));
    int64_t ax = 1;
    ValId idx = dec_reduce(c, IR_RED_SUM, pick, &ax, 1, false);
    ValId val = dix_take_along(c, xt, idx, 1);
    if (kv != IR_NONE)                     /* the ranks past k: 0, as a new value */
        idx = dec_select(c, dec_bin(c, IR_BIN_LT, dix_iota(c, IR_DT_I64, n, 2, 1), kv), idx,
                         dec_scalar(c->g, IR_DT_I64, 0));
    tdims[r - 1] = k;
    *vals = dec_transpose(c, dec_reshape(c, val, tdims, r), inv);
    *idxs = dec_transpose(c, dec_reshape(c, idx, tdims, r), inv);
    if (kv != IR_NONE) {                   /* the first k along axis: a runtime extent */
        ValId kc = dec_cast(c, kv, IR_DT_I32);
        ir_dyn_add(c->g, *vals, axis, kc);
        ir_dyn_add(c->g, *idxs, axis, kc);
    }
    return true;
}

/* TopK: values and int64 indices of the k largest (or smallest) along axis,
 * sorted; ties keep the lower index first. */
bool dec_topk(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    if (x == IR_NONE) {
        dec_err(c, "missing input X");
        return false;
    }
    IrType tx = *dec_ty(c, x);
    int r = tx.rank, axis;
    if (r < 1) {
        dec_err(c, "X must have rank >= 1");
        return false;
    }
    if (!dec_axis(c, dec_ai(c, "axis", -1), r, &axis))
        return false;
    int64_t k;
    ValId kv;
    if (!topk_k(c, axis, tx.dims[axis], &k, &kv))
        return false;
    return dec_topk_axis(c, x, axis, k, kv, dec_ai(c, "largest", 1) != 0, &c->out[0],
                         &c->out[1]);
}
