/* dec_scan_ops.c: CumProd, TopK and ReverseSequence.
 *
 * CumProd is a log-step (Hillis-Steele) scan: ceil(log2 n) multiplications by the
 * running product shifted by 1, 2, 4, ... (SLICE + PAD with 1). A runtime axis
 * input computes the scan on every candidate axis and SELECTs on the axis value.
 * TopK ranks each element by pairwise comparisons (greater, or equal with a lower
 * index: ties keep the lower index first), then finds the element of each rank
 * 0..k-1 with a one-hot comparison and GATHERs the values (always sorted, which
 * sorted=0 allows; k, which decides the output shape, must be known when compiling).
 * ReverseSequence
 * GATHERs along the time axis with indices computed from the sequence lengths.
 */
#include "dec_index.h"

/* x shifted by d along axis (towards higher indices, or lower when rev), the
 * vacated positions filled with `fill`. */
static ValId shift_axis(DecCtx *c, ValId x, int axis, int64_t d, bool rev, double fill)
{
    const IrType *t = dec_ty(c, x);
    int r = t->rank;
    int64_t n = t->dims[axis], pads[2 * IR_MAX_RANK] = {0};
    if (d >= n) { /* everything shifted out */
        ValId z = dec_bin_s(c, IR_BIN_MUL, x, 0.0);
        return dec_bin_s(c, IR_BIN_ADD, z, fill);
    }
    ValId s = dec_slice_axis(c, x, axis, rev ? d : 0, 1, n - d);
    pads[rev ? r + axis : axis] = d;
    return dec_pad(c, s, pads, NULL, fill);
}

/* Inclusive/exclusive, forward/reverse cumulative product along axis. */
static ValId cumprod_axis(DecCtx *c, ValId x, int axis, bool excl, bool rev)
{
    int64_t n = dec_ty(c, x)->dims[axis];
    ValId y = excl ? shift_axis(c, x, axis, 1, rev, 1.0) : x;
    for (int64_t d = 1; d < n; d *= 2)
        y = dec_bin(c, IR_BIN_MUL, y, shift_axis(c, y, axis, d, rev, 1.0));
    return y;
}

/* CumProd(x, axis): the axis may be a runtime scalar. */
bool dec_cumprod(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    if (x == IR_NONE || dec_in(c, 1) == IR_NONE) {
        dec_err(c, "missing x or axis input");
        return false;
    }
    int r = dec_ty(c, x)->rank, axis;
    bool excl = dec_ai(c, "exclusive", 0) != 0, rev = dec_ai(c, "reverse", 0) != 0;
    int64_t a;
    if (r < 1) {
        dec_err(c, "x must have rank >= 1");
        return false;
    }
    if (dix_const_int(c, 1, &a)) {
        if (!dec_axis(c, a, r, &axis))
            return false;
        c->out[0] = cumprod_axis(c, x, axis, excl, rev);
        return true;
    }
    ValId av = dix_scalar(c, dec_in(c, 1), "axis", IR_DT_I64);
    if (av == IR_NONE)
        return false;
    ValId y = cumprod_axis(c, x, r - 1, excl, rev);
    for (int i = r - 2; i >= 0; i--) { /* axis == i or axis == i - r picks axis i */
        ValId hit = dec_bin(c, IR_BIN_OR, dec_bin_s(c, IR_BIN_EQ, av, i),
                            dec_bin_s(c, IR_BIN_EQ, av, i - r));
        y = dec_select(c, hit, cumprod_axis(c, x, i, excl, rev), y);
    }
    c->out[0] = y;
    return true;
}

/* k of TopK: the attribute (opset 1) or a constant input. */
static bool topk_k(DecCtx *c, int axis, int64_t n, int64_t *k)
{
    if (c->opset < 10) {
        *k = dec_ai(c, "k", -1);
    } else if (!dix_const_int(c, 1, k)) {
        /* k decides the output shape: it must be known when compiling (a graph input can
         * be bound with spyrec --bind); guessing it from the declared output type would
         * compute wrong results for a model whose declaration disagrees with its data */
        if (dec_in(c, 1) == IR_NONE)
            dec_err(c, "TopK needs its k input");
        else
            dec_dynamic_err(c, dec_in(c, 1), "k");
        return false;
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
    int64_t n = tx.dims[axis], k, M = 1;
    if (!topk_k(c, axis, n, &k))
        return false;
    bool largest = dec_ai(c, "largest", 1) != 0;
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
    ValId val = dec_take_along(c, xt, idx, 1);
    tdims[r - 1] = k;
    c->out[0] = dec_transpose(c, dec_reshape(c, val, tdims, r), inv);
    c->out[1] = dec_transpose(c, dec_reshape(c, idx, tdims, r), inv);
    return true;
}

/* ReverseSequence: y[b, t] = t < len[b] ? x[b, len[b] - 1 - t] : x[b, t]. */
bool dec_reverse_sequence(DecCtx *c)
{
    ValId x = dec_in(c, 0), lens = dec_in(c, 1);
    if (x == IR_NONE || lens == IR_NONE) {
        dec_err(c, "missing input or sequence_lens");
        return false;
    }
    IrType tx = *dec_ty(c, x);
    int r = tx.rank, ba, ta;
    if (r < 2) {
        dec_err(c, "input must have rank >= 2");
        return false;
    }
    if (!dec_axis(c, dec_ai(c, "batch_axis", 1), r, &ba) ||
        !dec_axis(c, dec_ai(c, "time_axis", 0), r, &ta))
        return false;
    const IrType *tl = dec_ty(c, lens);
    if (ba == ta || tl->rank != 1 || tl->dims[0] != tx.dims[ba] || !ir_dtype_is_int(tl->dtype)) {
        dec_err(c, "sequence_lens must be an integer vector of the batch size %lld with "
                "distinct batch and time axes", (long long)tx.dims[ba]);
        return false;
    }
    int64_t ld[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        ld[i] = i == ba ? tx.dims[ba] : 1;
    ValId L = dec_reshape(c, dec_cast(c, lens, IR_DT_I64), ld, r);
    ValId t = dix_iota(c, IR_DT_I64, tx.dims[ta], r, ta);
    ValId rev = dec_bin_s(c, IR_BIN_SUB, dec_bin(c, IR_BIN_SUB, L, t), 1.0);
    ValId idx = dec_select(c, dec_bin(c, IR_BIN_LT, t, L), rev, t);
    idx = dec_expand(c, idx, tx.dims, r);
    c->out[0] = dec_take_along(c, x, idx, ta);
    return true;
}
