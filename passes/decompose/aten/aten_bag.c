/* aten_bag.c: embedding_bag / _embedding_bag (sum, mean and max bags, offsets and
 * indices possibly known only at run time, per_sample_weights, padding_idx,
 * include_last_offset; 2-D indices are bags of one row each).
 *
 * The rows of every index are GATHERed ([N, D]). With constant offsets (2-D indices
 * and offsets that fold to constants) a constant map lays them out as [B, Lmax, D]
 * (the longest bag; shorter ones padded with a masked row) and one REDUCE over Lmax
 * makes the bags: O(B * Lmax * D). Offsets known only at run time give a membership
 * matrix [B, N] (bag b holds positions offsets[b] <= j < end of bag b) that sums the
 * rows with one MATMUL (sum, mean) or masks a max REDUCE: O(B * N * D). Padding
 * entries (padding_idx) are masked out of both. Empty bags give zeros, as in torch. Only output 0 is made: the auxiliary outputs (offset2bag, bag_size,
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

/* Constant bag layout: map [B, Lmax] of index positions (n for padding) from the
 * constant offsets; false (nothing reported) when offsets are not constant or the
 * layout is too large, true with *map IR_NONE after reporting bad offsets. */
static bool const_layout(DecCtx *c, ValId off, int64_t n, ValId *map)
{
    bool last = dec_ai(c, "include_last_offset", 0) != 0;
    *map = IR_NONE;
    if (off == IR_NONE || !ir_is_const(c->g, off))
        return false;
    int64_t no = dec_numel(dec_ty(c, off)), b = no - (last ? 1 : 0), lmax = 0;
    const void *ov = ir_val(c->g, off)->data;
    IrDType ot = dec_ty(c, off)->dtype;
    if (b < 1 || dec_ty(c, off)->rank != 1)
        return false;
    for (int64_t i = 0; i < b; i++) {
        int64_t s = dec_load_int(ot, ov, i), e = i + 1 < b ? dec_load_int(ot, ov, i + 1) : n;
        if (s < 0 || e < s || e > n) {
            dec_err(c, "offsets must be non-decreasing within [0, %lld]", (long long)n);
            return true;
        }
        lmax = e - s > lmax ? e - s : lmax;
    }
    if (lmax == 0 || b > ATEN_MAX_CONST / lmax)
        return false;
    int64_t *m = ir_scratch(c->g, sizeof(int64_t) * (size_t)(b * lmax + 1)), dims[2] = {b, lmax};
    for (int64_t i = 0; i < b; i++) {
        int64_t s = dec_load_int(ot, ov, i), e = i + 1 < b ? dec_load_int(ot, ov, i + 1) : n;
        for (int64_t k = 0; k < lmax; k++)
            m[i * lmax + k] = s + k < e ? s + k : n;
    }
    *map = dec_const_i64(c->g, dims, 2, m);
    return true;
}

/* Validity of each index position ([N] bool): false for padding_idx entries. */
static ValId valid_entries(DecCtx *c, ValId idx)
{
    int64_t pad = dec_has_attr(c, "padding_idx") ? dec_ai(c, "padding_idx", -1) : -1;
    ValId one = dec_bin_s(c, IR_BIN_EQ, idx, 0);
    return pad >= 0 ? dec_bin_s(c, IR_BIN_NE, idx, (double)pad)
                    : dec_bin(c, IR_BIN_OR, one, dec_un(c, IR_UN_NOT, one));
}

/* Bags of rows [N, D] laid out by the constant map [B, Lmax] (n = padding slot). */
static ValId reduce_laid_out(DecCtx *c, ValId rows, ValId valid, ValId map, int mode)
{
    const IrType *tr = dec_ty(c, rows);
    IrDType t = tr->dtype;
    int64_t one = 1, z[2] = {1, tr->dims[1]}, ax = 1;
    ValId vs[2] = {valid, dec_expand(c, dec_scalar(c->g, IR_DT_BOOL, 0), &one, 1)};
    ValId rs[2] = {rows, dec_expand(c, dec_scalar(c->g, t, 0), z, 2)};
    const IrType *tm = dec_ty(c, map);
    int64_t m3[3] = {tm->dims[0], tm->dims[1], 1};
    ValId v = dec_reshape(c, dec_gather(c, dec_concat(c, vs, 2, 0), map, 0), m3, 3);
    ValId g = dec_gather(c, dec_concat(c, rs, 2, 0), map, 0);  /* [B, Lmax, D] */
    ValId cnt = dec_reduce(c, IR_RED_SUM, dec_cast(c, v, t), &ax, 1, false); /* [B, 1] */
    if (mode == BAG_MAX) {
        ValId y = dec_reduce(c, IR_RED_MAX, dec_select(c, v, g, dec_scalar(c->g, t, -INFINITY)),
                             &ax, 1, false);
        return dec_select(c, dec_bin_s(c, IR_BIN_GT, cnt, 0), y, dec_scalar(c->g, t, 0));
    }
    ValId y = dec_reduce(c, IR_RED_SUM, dec_select(c, v, g, dec_scalar(c->g, t, 0)), &ax, 1, false);
    return mode == BAG_MEAN ? dec_bin(c, IR_BIN_DIV, y, dec_bin_s(c, IR_BIN_MAX, cnt, 1)) : y;
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

/* Bags of rows [N, D] over the n flat indices idx: the constant layout when the
 * bags are known (2-D indices, constant offsets), else the membership matrix. */
static ValId bags(DecCtx *c, ValId rows, ValId idx, bool two_d, int64_t l, int mode)
{
    int64_t n = dec_ty(c, idx)->dims[0], nb, dims[2] = {l ? n / l : 0, l};
    ValId map = IR_NONE, off = aten_in(c, "offsets"), start, end;
    if (two_d) { /* bag b is row b */
        int64_t *m = ir_scratch(c->g, sizeof(int64_t) * (size_t)(n + 1));
        for (int64_t i = 0; i < n; i++)
            m[i] = i;
        map = dec_const_i64(c->g, dims, 2, m);
    } else if (const_layout(c, off, n, &map)) {
        if (map == IR_NONE)
            return IR_NONE;
    }
    if (map != IR_NONE)
        return reduce_laid_out(c, rows, valid_entries(c, idx), map, mode);
    if (off == IR_NONE) {
        dec_err(c, "1-D indices need offsets");
        return IR_NONE;
    }
    if (!bag_bounds(c, off, n, &start, &end, &nb))
        return IR_NONE;
    if (nb * n > DIX_ONEHOT_MAX || (mode == BAG_MAX && nb * n > DIX_ONEHOT_MAX / dec_ty(c, rows)->dims[1])) {
        dec_err(c, "unsupported: %lld bags over %lld indices with offsets known only at run "
                "time (membership too large)", (long long)nb, (long long)n);
        return IR_NONE;
    }
    return reduce_bags(c, rows, members(c, idx, start, end, n), mode);
}

/* embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
 * per_sample_weights, include_last_offset, padding_idx) and _embedding_bag. */
bool aten_embedding_bag(DecCtx *c)
{
    ValId w, idx;
    if (!aten_need(c, "weight", &w) || !aten_need(c, "indices", &idx) || !only_output0(c))
        return false;
    int mode = (int)dec_ai(c, "mode", BAG_SUM);
    const IrType *tw = dec_ty(c, w), *ti = dec_ty(c, idx);
    if (mode < BAG_SUM || mode > BAG_MAX || tw->rank != 2 || !ir_dtype_is_float(tw->dtype) ||
        tw->dims[1] < 1) {
        dec_err(c, "embedding_bag needs a non-empty 2-D float weight and mode 0 (sum), 1 "
                "(mean) or 2 (max), got mode %d", mode);
        return false;
    }
    bool two_d = ti->rank == 2 && ti->dims[1] > 0;
    if (!ir_dtype_is_int(ti->dtype) || (ti->rank != 1 && !two_d)) {
        dec_err(c, "indices must be 1-D (with offsets) or 2-D integers");
        return false;
    }
    int64_t n = dec_numel(ti), l = two_d ? ti->dims[1] : 0;
    idx = dec_reshape(c, dec_cast(c, idx, IR_DT_I64), &n, 1);
    ValId rows = dec_gather(c, w, idx, 0), psw = aten_in(c, "per_sample_weights");
    if (psw != IR_NONE) {
        int64_t col[2] = {n, 1};
        if (mode != BAG_SUM || dec_numel(dec_ty(c, psw)) != n) {
            dec_err(c, "per_sample_weights needs mode sum and one weight per index");
            return false;
        }
        rows = dec_bin(c, IR_BIN_MUL, rows, dec_reshape(c, dec_cast(c, psw, tw->dtype), col, 2));
    }
    c->out[0] = bags(c, rows, idx, two_d, l, mode);
    return c->out[0] != IR_NONE;
}
