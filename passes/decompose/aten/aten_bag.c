/* aten_bag.c: embedding_bag / _embedding_bag (sum, mean and max bags, offsets and
 * indices possibly known only at run time, per_sample_weights, padding_idx,
 * include_last_offset; 2-D indices are bags of one row each).
 *
 * The rows of every index are GATHERed ([N, D]); a membership matrix [B, N] (bag b
 * holds positions offsets[b] <= j < end of bag b, minus padding entries) then sums
 * them with one MATMUL (sum, mean) or masks a max REDUCE. Empty bags give zeros, as
 * in torch. Only output 0 is made: the auxiliary outputs (offset2bag, bag_size,
 * max_indices) are refused when something reads them.
 */
#include <math.h>

#include "aten.h"
#include "passes/decompose/dec_index.h"

enum { BAG_SUM, BAG_MEAN, BAG_MAX };

/* Start and end positions ([B, 1] each, i64) of the bags from offsets ([B] or, with
 * include_last_offset, [B + 1]) over n indices. */
static bool bag_bounds(DecCtx *c, ValId off, int64_t n, ValId *start, ValId *end, int64_t *nb)
{
    const IrType *to = dec_ty(c, off);
    bool last = dec_ai(c, "include_last_offset", 0) != 0;
    if (to->rank != 1 || !ir_dtype_is_int(to->dtype) || to->dims[0] < (last ? 2 : 1)) {
        dec_err(c, "offsets must be a non-empty 1-D integer tensor");
        return false;
    }
    int64_t b = to->dims[0] - (last ? 1 : 0), col[2] = {b, 1}, one = 1;
    off = dec_cast(c, off, IR_DT_I64);
    ValId tail = dec_const_i64(c->g, &one, 1, &n); /* the last bag ends at n */
    ValId ends[2] = {b > 1 ? dec_slice_axis(c, off, 0, 1, 1, b - 1) : IR_NONE, tail};
    *start = dec_reshape(c, dec_slice_axis(c, off, 0, 0, 1, b), col, 2);
    *end = dec_reshape(c, b > 1 ? dec_concat(c, ends, 2, 0) : tail, col, 2);
    *nb = b;
    return true;
}

/* Bag membership [B, N] (bool) of the n index positions, padding entries excluded. */
static ValId members(DecCtx *c, ValId idx, ValId start, ValId end, int64_t n)
{
    ValId j = dix_iota(c, IR_DT_I64, n, 2, 1);
    ValId in = dec_bin(c, IR_BIN_AND, dec_bin(c, IR_BIN_LE, start, j), dec_bin(c, IR_BIN_LT, j, end));
    int64_t pad = -1;
    if (dec_has_attr(c, "padding_idx"))
        pad = dec_ai(c, "padding_idx", -1);
    if (pad >= 0) {
        int64_t row[2] = {1, n};
        ValId keep = dec_reshape(c, dec_bin_s(c, IR_BIN_NE, idx, (double)pad), row, 2);
        in = dec_bin(c, IR_BIN_AND, in, keep);
    }
    return in;
}

/* Flat indices [N] and bounds: 1-D indices with offsets, or 2-D [B, L] (no offsets). */
static bool bag_inputs(DecCtx *c, ValId *idx, ValId *start, ValId *end, int64_t *nb, int64_t *n)
{
    ValId off = aten_in(c, "offsets");
    const IrType *ti = dec_ty(c, *idx);
    if (ti->rank == 2 && ti->dims[1] > 0) { /* bag b is row b */
        int64_t b = ti->dims[0], l = ti->dims[1], col[2] = {b, 1};
        *n = b * l;
        *idx = dec_reshape(c, *idx, n, 1);
        ValId s = dec_bin_s(c, IR_BIN_MUL, dix_iota(c, IR_DT_I64, b, 2, 0), (double)l);
        *start = dec_reshape(c, s, col, 2);
        *end = dec_bin_s(c, IR_BIN_ADD, *start, (double)l);
        *nb = b;
        return true;
    }
    if (ti->rank != 1 || off == IR_NONE) {
        dec_err(c, "indices must be 1-D with offsets, or 2-D");
        return false;
    }
    *n = ti->dims[0];
    return bag_bounds(c, off, *n, start, end, nb);
}

/* Refuse a read of the auxiliary outputs, which are not made. */
static bool only_output0(DecCtx *c)
{
    for (int i = 1; i < c->n->nout; i++)
        if (dec_out_used(c, i)) {
            dec_err(c, "unsupported: output %d of embedding_bag (offset2bag, bag_size or "
                    "max_indices) is used", i);
            return false;
        }
    return true;
}

/* The bags of rows [N, D] under membership in [B, N]. */
static ValId reduce_bags(DecCtx *c, ValId rows, ValId in, int mode)
{
    IrDType t = dec_ty(c, rows)->dtype;
    int64_t ax = 1;
    ValId cnt = dec_reduce(c, IR_RED_SUM, dec_cast(c, in, t), &ax, 1, true); /* [B, 1] */
    if (mode == BAG_MAX) {
        const IrType *tr = dec_ty(c, rows), *tm = dec_ty(c, in);
        int64_t r3[3] = {1, tr->dims[0], tr->dims[1]}, m3[3] = {tm->dims[0], tm->dims[1], 1};
        ValId m = dec_select(c, dec_reshape(c, in, m3, 3), dec_reshape(c, rows, r3, 3),
                             dec_scalar(c->g, t, -INFINITY));
        ValId y = dec_reduce(c, IR_RED_MAX, m, &ax, 1, false);
        return dec_select(c, dec_bin_s(c, IR_BIN_GT, cnt, 0), y, dec_scalar(c->g, t, 0));
    }
    ValId y = ir_matmul(c->g, dec_cast(c, in, t), rows, c->o);
    return mode == BAG_MEAN ? dec_bin(c, IR_BIN_DIV, y, dec_bin_s(c, IR_BIN_MAX, cnt, 1)) : y;
}

/* embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
 * per_sample_weights, include_last_offset, padding_idx) and _embedding_bag. */
bool aten_embedding_bag(DecCtx *c)
{
    ValId w, idx, start, end;
    int64_t nb, n;
    if (!aten_need(c, "weight", &w) || !aten_need(c, "indices", &idx) || !only_output0(c))
        return false;
    int mode = (int)dec_ai(c, "mode", BAG_SUM);
    const IrType *tw = dec_ty(c, w);
    if (mode < BAG_SUM || mode > BAG_MAX || tw->rank != 2 || !ir_dtype_is_float(tw->dtype) ||
        tw->dims[1] < 1) {
        dec_err(c, "embedding_bag needs a non-empty 2-D float weight and mode 0 (sum), 1 "
                "(mean) or 2 (max), got mode %d", mode);
        return false;
    }
    if (!ir_dtype_is_int(dec_ty(c, idx)->dtype) || !bag_inputs(c, &idx, &start, &end, &nb, &n))
        return false;
    if (nb * n > DIX_ONEHOT_MAX || (mode == BAG_MAX && nb * n > DIX_ONEHOT_MAX / tw->dims[1])) {
        dec_err(c, "unsupported: %lld bags over %lld indices (membership too large)",
                (long long)nb, (long long)n);
        return false;
    }
    idx = dec_cast(c, idx, IR_DT_I64);
    ValId rows = dec_gather(c, w, idx, 0), psw = aten_in(c, "per_sample_weights");
    if (psw != IR_NONE) {
        int64_t col[2] = {n, 1};
        if (mode != BAG_SUM || dec_numel(dec_ty(c, psw)) != n) {
            dec_err(c, "per_sample_weights needs mode sum and one weight per index");
            return false;
        }
        rows = dec_bin(c, IR_BIN_MUL, rows, dec_reshape(c, dec_cast(c, psw, tw->dtype), col, 2));
    }
    c->out[0] = reduce_bags(c, rows, members(c, idx, start, end, n), mode);
    return true;
}
