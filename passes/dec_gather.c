/* dec_gather.c: decomposition of ONNX indexing ops. Gather maps to one GATHER;
 * GatherElements and GatherND compute flat indices with pointwise ops on the index
 * tensor (constants fold away) and GATHER from a flattened view of the data;
 * ScatterND / ScatterElements with constant indices become a GATHER from the
 * concatenation of data and updates through a constant source map. */
#include <string.h>

#include "dec.h"

/* Check that input i is present; report otherwise. */
static bool need_in(DecCtx *c, int i)
{
    if (dec_in(c, i) != IR_NONE)
        return true;
    dec_err(c, "missing required input %d", i);
    return false;
}

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

bool dec_gather_op(DecCtx *c)
{
    if (!need_in(c, 0) || !need_in(c, 1))
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
    c->out[0] = dec_gather(c, data, idx, axis);
    return true;
}

/* idx < 0 ? idx + d : idx, elementwise (d per last axis when dvec != IR_NONE). */
static ValId wrap_neg(DecCtx *c, ValId idx, ValId d)
{
    ValId lt = dec_bin_s(c, IR_BIN_LT, idx, 0.0);
    return dec_select(c, lt, dec_bin(c, IR_BIN_ADD, idx, d), idx);
}

/* Elements of data picked along `axis` by idx (i64, same rank as data, may hold
 * negative indices): flat index = sum_k coord_k * stride_k where coord_axis is the
 * (wrapped) index and the other coords are constant iotas; then one GATHER on the
 * flattened data. The result has idx's shape. */
ValId dec_take_along(DecCtx *c, ValId data, ValId idx, int axis)
{
    const IrType *td = dec_ty(c, data);
    IrType ti = *dec_ty(c, idx);
    int r = td->rank;
    int64_t stride[IR_MAX_RANK], s = 1;
    for (int i = r - 1; i >= 0; i--) {
        stride[i] = s;
        s *= td->dims[i];
    }
    ValId flat = wrap_neg(c, idx, dec_scalar(c->g, IR_DT_I64, (double)td->dims[axis]));
    flat = dec_bin_s(c, IR_BIN_MUL, flat, (double)stride[axis]);
    for (int k = 0; k < r; k++) {
        if (k == axis || ti.dims[k] == 1)
            continue;
        int64_t dims[IR_MAX_RANK], n = ti.dims[k];
        for (int i = 0; i < r; i++)
            dims[i] = i == k ? n : 1;
        int64_t *v = ir_alloc(c->g, sizeof(int64_t) * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            v[i] = i * stride[k];
        flat = dec_bin(c, IR_BIN_ADD, flat, dec_const_i64(c->g, dims, r, v));
    }
    ValId d1 = dec_reshape(c, data, &s, 1);
    return dec_gather(c, d1, flat, 0);
}

/* GatherElements: dec_take_along on the given axis. */
bool dec_gather_elements(DecCtx *c)
{
    if (!need_in(c, 0) || !need_in(c, 1))
        return false;
    ValId data = dec_in(c, 0), idx = dec_cast(c, dec_in(c, 1), IR_DT_I64);
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
    c->out[0] = dec_take_along(c, data, idx, axis);
    return true;
}

/* GatherND: flat = batch_offset + sum_k idx[..., k] * stride_k over the indexed
 * dims, then GATHER along axis 0 of data reshaped to [prod(batch+indexed), rest]. */
bool dec_gather_nd(DecCtx *c)
{
    if (!need_in(c, 0) || !need_in(c, 1))
        return false;
    ValId data = dec_in(c, 0), idx = dec_cast(c, dec_in(c, 1), IR_DT_I64);
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
    ValId w = wrap_neg(c, idx, dec_const_i64(c->g, &m, 1, dv));
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
        int64_t *v = ir_alloc(c->g, sizeof(int64_t) * (size_t)nb);
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

/* Scatter with constant indices as a GATHER from concat(flat data, flat updates)
 * with a constant source map; map[i] = source position of output element i. */
static ValId scatter_by_map(DecCtx *c, ValId data, ValId upd, const int64_t *map)
{
    const IrType *td = dec_ty(c, data);
    IrType shape = *td;
    int64_t nd = dec_numel(td), nu = dec_numel(dec_ty(c, upd));
    ValId parts[2] = {dec_reshape(c, data, &nd, 1), dec_reshape(c, upd, &nu, 1)};
    ValId src = dec_concat(c, parts, 2, 0);
    ValId g = dec_gather(c, src, dec_const_i64(c->g, &nd, 1, map), 0);
    return dec_reshape(c, g, shape.dims, shape.rank);
}

/* Common checks of the constant-index scatters: data, indices and updates present,
 * no reduction, indices a compile-time constant. */
static bool scatter_const_inputs(DecCtx *c, ValId *data, ValId *idx)
{
    if (!need_in(c, 0) || !need_in(c, 1) || !need_in(c, 2))
        return false;
    if (strcmp(dec_as(c, "reduction", "none"), "none") != 0) {
        dec_err(c, "unsupported: %s reduction '%s'", c->n->foreign.op_type,
                dec_as(c, "reduction", ""));
        return false;
    }
    *data = dec_in(c, 0);
    *idx = dec_in(c, 1);
    if (!ir_is_const(c->g, *idx)) {
        dec_err(c, "unsupported: dynamic indices input");
        return false;
    }
    return true;
}

/* ScatterND (reduction none) with constant indices. */
bool dec_scatter_nd(DecCtx *c)
{
    ValId data, idx;
    if (!scatter_const_inputs(c, &data, &idx))
        return false;
    const IrType *td = dec_ty(c, data), *ti = dec_ty(c, idx);
    int64_t k = ti->rank ? ti->dims[ti->rank - 1] : 0, nd = dec_numel(td);
    if (ti->rank < 1 || k > td->rank || !ir_dtype_is_int(ti->dtype)) {
        dec_err(c, "indices shape does not fit data");
        return false;
    }
    int64_t inner = 1, nupd = dec_numel(ti) / (k ? k : 1);
    for (int i = (int)k; i < td->rank; i++)
        inner *= td->dims[i];
    if (dec_numel(dec_ty(c, dec_in(c, 2))) != nupd * inner) {
        dec_err(c, "updates shape does not match indices and data");
        return false;
    }
    if (!dec_fits(c, nd, 2 * sizeof(int64_t), "scatter source map"))
        return false;
    int64_t *map = ir_alloc(c->g, sizeof(int64_t) * (size_t)(nd + 1));
    for (int64_t i = 0; i < nd; i++)
        map[i] = i;
    const void *ip = ir_val(c->g, idx)->data;
    for (int64_t u = 0; u < nupd; u++) {
        int64_t off = 0;
        for (int64_t j = 0; j < k; j++) {
            int64_t d = td->dims[j], v = dec_load_int(ti->dtype, ip, u * k + j);
            if (v < -d || v >= d) {
                dec_err(c, "index %lld out of range for dimension %lld", (long long)v, (long long)d);
                return false;
            }
            off = off * d + (v < 0 ? v + d : v);
        }
        for (int64_t e = 0; e < inner; e++)
            map[off * inner + e] = nd + u * inner + e;
    }
    c->out[0] = scatter_by_map(c, data, dec_in(c, 2), map);
    return true;
}

/* ScatterElements (reduction none) with constant indices. */
bool dec_scatter_elements(DecCtx *c)
{
    ValId data, idx;
    if (!scatter_const_inputs(c, &data, &idx))
        return false;
    const IrType *td = dec_ty(c, data), *ti = dec_ty(c, idx);
    int r = td->rank, axis;
    if (!dec_axis(c, dec_ai(c, "axis", 0), r, &axis))
        return false;
    if (ti->rank != r || !ir_dtype_is_int(ti->dtype) ||
        dec_numel(dec_ty(c, dec_in(c, 2))) != dec_numel(ti)) {
        dec_err(c, "indices must be integers of the data's rank, shaped like updates");
        return false;
    }
    int64_t nd = dec_numel(td), ni = dec_numel(ti);
    if (!dec_fits(c, nd, 2 * sizeof(int64_t), "scatter source map"))
        return false;
    int64_t *map = ir_alloc(c->g, sizeof(int64_t) * (size_t)(nd + 1));
    for (int64_t i = 0; i < nd; i++)
        map[i] = i;
    const void *ip = ir_val(c->g, idx)->data;
    for (int64_t p = 0; p < ni; p++) {
        int64_t rem = p, off = 0, mul = 1;
        for (int i = r - 1; i >= 0; i--) {
            int64_t co = rem % ti->dims[i];
            rem /= ti->dims[i];
            if (i == axis) {
                int64_t v = dec_load_int(ti->dtype, ip, p), d = td->dims[i];
                if (v < -d || v >= d) {
                    dec_err(c, "index %lld out of range for dimension %lld", (long long)v, (long long)d);
                    return false;
                }
                co = v < 0 ? v + d : v;
            }
            off += co * mul;
            mul *= td->dims[i];
        }
        map[off] = nd + p;
    }
    c->out[0] = scatter_by_map(c, data, dec_in(c, 2), map);
    return true;
}

