/* onnx_gather.c: decomposition of ONNX gathers. Gather maps to one GATHER;
 * GatherElements and GatherND compute flat indices with pointwise ops on the index
 * tensor (constants fold away) and GATHER from a flattened view of the data
 * (dix_take_along); ReverseSequence GATHERs along the time axis with indices computed
 * from the sequence lengths. */
#include <string.h>

#include "onnx.h"
#include "passes/decompose/dec_index.h"

/* Check constant indices against [-d, d); reports the first offender. */
static bool check_const_indices(DecCtx *c, ValId idx, int64_t d)
{
    if (!ir_is_const(c->g, idx))
        return true;
    const IrType *t = dec_ty(c, idx);
    const void *p = ir_val(c->g, idx)->data;
    for (int64_t i = 0, n = dec_numel(t); i < n; i++) {
        int64_t v = dec_load_int(t->dtype, p, i);
        if (v < -d || v >= d) {
            dec_err(c, "index %lld out of range for dimension %lld", (long long)v, (long long)d);
            return false;
        }
    }
    return true;
}

/* Whether every element of the constant integer idx is negative. */
static bool all_negative(DecCtx *c, ValId idx)
{
    const IrType *t = dec_ty(c, idx);
    const void *p = ir_val(c->g, idx)->data;
    int64_t n = dec_numel(t);
    for (int64_t i = 0; i < n; i++)
        if (dec_load_int(t->dtype, p, i) >= 0)
            return false;
    return n > 0;
}

/* Constant indices that all count from the end (-1: the last) of an axis that may be a
 * bounded symbolic dimension (a recurrence's last step): counted from its actual
 * extent (SYMLEN) rather than from the bound, so they stay inside it at every size;
 * the GATHER says so (inbounds), which pass_symdim needs to take it along that axis. */
ValId dec_gather_from_end(DecCtx *c, ValId data, ValId idx, int axis)
{
    IrAttr ax = ir_attr_int("axis", axis);
    ValId len = dec_op(c, IR_OP_SYMLEN, &data, 1, &ax, 1);
    len = dec_cast(c, dec_reshape(c, len, NULL, 0), IR_DT_I64);
    ValId in[2] = {data, dec_bin(c, IR_BIN_ADD, dec_cast(c, idx, IR_DT_I64), len)};
    IrAttr a[2] = {ir_attr_int("axis", axis), ir_attr_int("inbounds", 1)};
    return dec_op(c, IR_OP_GATHER, in, 2, a, 2);
}

bool dec_gather_op(DecCtx *c)
{
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1))
        return false;
    ValId data = dec_in(c, 0), idx = dec_in(c, 1);
    int axis;
    if (!dec_axis(c, dec_ai(c, "axis", 0), dec_ty(c, data)->rank, &axis))
        return false;
    if (!ir_dtype_is_int(dec_ty(c, idx)->dtype)) {
        dec_err(c, "indices must be integers");
        return false;
    }
    if (!check_const_indices(c, idx, dec_ty(c, data)->dims[axis]))
        return false;
    if (c->g->nsymdims && !ir_is_const(c->g, data) && ir_is_const(c->g, idx) &&
        all_negative(c, idx))                  /* a constant's axes are static */
        c->out[0] = dec_gather_from_end(c, data, idx, axis);
    else
        c->out[0] = dec_gather(c, data, idx, axis);
    return true;
}

/* Inputs of GatherElements and GatherND: the data and the indices as i64; false
 * (reported) when one is missing. */
static bool data_and_indices(DecCtx *c, ValId *data, ValId *idx)
{
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1))
        return false;
    *data = dec_in(c, 0);
    *idx = dec_cast(c, dec_in(c, 1), IR_DT_I64);
    return true;
}

/* GatherElements: dix_take_along on the given axis. */
bool dec_gather_elements(DecCtx *c)
{
    ValId data, idx;
    if (!data_and_indices(c, &data, &idx))
        return false;
    const IrType *td = dec_ty(c, data), *ti = dec_ty(c, idx);
    int r = td->rank, axis;
    if (!dec_axis(c, dec_ai(c, "axis", 0), r, &axis))
        return false;
    if (ti->rank != r) {
        dec_err(c, "indices rank %d differs from data rank %d", ti->rank, r);
        return false;
    }
    for (int i = 0; i < r; i++)
        if (i != axis && ti->dims[i] > td->dims[i]) {
            dec_err(c, "indices dim %d (%lld) exceeds the data's (%lld)", i, (long long)ti->dims[i],
                    (long long)td->dims[i]);
            return false;
        }
    if (!check_const_indices(c, idx, td->dims[axis]))
        return false;
    c->out[0] = dix_take_along(c, data, idx, axis);
    return true;
}

/* GatherND: flat = batch_offset + sum_k idx[..., k] * stride_k over the indexed
 * dims, then GATHER along axis 0 of data reshaped to [prod(batch+indexed), rest]. */
bool dec_gather_nd(DecCtx *c)
{
    ValId data, idx;
    if (!data_and_indices(c, &data, &idx))
        return false;
    const IrType *td = dec_ty(c, data);
    IrType ti = *dec_ty(c, idx);
    int64_t b = dec_ai(c, "batch_dims", 0);
    int q = ti.rank;
    int64_t m = q > 0 ? ti.dims[q - 1] : 0;
    if (q < 1 || b < 0 || b >= q || m < 1 || b + m > td->rank) {
        dec_err(c, "indices shape does not fit data rank %d with batch_dims %lld", td->rank, (long long)b);
        return false;
    }
    for (int i = 0; i < b; i++)
        if (ti.dims[i] != td->dims[i]) {
            dec_err(c, "batch dim %d differs between data and indices", i);
            return false;
        }
    /* strides of the indexed dims, and their sizes for wrapping */
    int64_t sv[IR_MAX_RANK], dv[IR_MAX_RANK], s = 1;
    for (int64_t k = m - 1; k >= 0; k--) {
        sv[k] = s;
        dv[k] = td->dims[b + k];
        s *= dv[k];
    }
    ValId w = dix_wrap(c, idx, dec_const_i64(c->g, &m, 1, dv));
    ValId flat = dec_bin(c, IR_BIN_MUL, w, dec_const_i64(c->g, &m, 1, sv));
    int64_t last = q - 1;
    flat = dec_reduce(c, IR_RED_SUM, flat, &last, 1, false); /* shape idx.shape[:-1] */
    int64_t nb = 1;
    for (int i = 0; i < b; i++)
        nb *= td->dims[i];
    if (nb > 1) { /* add batch_linear * s: a constant over the batch dims */
        int64_t dims[IR_MAX_RANK];
        for (int i = 0; i < q - 1; i++)
            dims[i] = i < b ? ti.dims[i] : 1;
        int64_t *v = ir_scratch(c->g, sizeof(int64_t) * (size_t)nb);
        for (int64_t i = 0; i < nb; i++)
            v[i] = i * s;
        flat = dec_bin(c, IR_BIN_ADD, flat, dec_const_i64(c->g, dims, q - 1, v));
    }
    int64_t dd[IR_MAX_RANK];
    int nd = 0;
    dd[nd++] = nb * s;
    for (int i = (int)(b + m); i < td->rank; i++)
        dd[nd++] = td->dims[i];
    ValId dv2 = dec_reshape(c, data, dd, nd);
    c->out[0] = dec_gather(c, dv2, flat, 0);
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
    c->out[0] = dix_take_along(c, x, idx, ta);
    return true;
}
