/* onnx_scatter.c: ScatterND, ScatterElements / Scatter (every reduction, runtime
 * indices), TensorScatter, MaxUnpool and Col2Im.
 *
 * Scatters with constant indices and no reduction become a GATHER from the
 * concatenation of data and updates through a constant source map. Otherwise the
 * target position of every update is computed with pointwise ops and the scatter
 * becomes a one-hot comparison with an iota followed by SELECT and REDUCE
 * (dix_scatter). TensorScatter and Col2Im need no one-hot: every output element has
 * at most one source (TensorScatter) or one source per kernel tap (Col2Im), found by
 * index arithmetic and GATHERed.
 */
#include <string.h>

#include "onnx.h"
#include "passes/decompose/dec_index.h"

/* Reduction attribute of the node, reported if unknown. */
static bool scatter_red(DecCtx *c, int *red)
{
    *red = dix_reduction(dec_as(c, "reduction", "none"));
    if (*red == -2) {
        dec_err(c, "unknown reduction '%s'", dec_as(c, "reduction", ""));
        return false;
    }
    return true;
}

/* Check that inputs 0..n-1 are present. */
static bool have_inputs(DecCtx *c, int n)
{
    for (int i = 0; i < n; i++)
        if (!dec_need_in(c, i))
            return false;
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

/* ScatterND, reduction none, constant indices (checked by the caller): a GATHER
 * through a constant source map. */
static bool scatter_nd_const(DecCtx *c, ValId data, ValId idx)
{
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
    int64_t *map = ir_scratch(c->g, sizeof(int64_t) * (size_t)(nd + 1));
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

/* Scatter along axis, reduction none, constant indices (checked by the caller): a
 * GATHER through a constant source map. */
static ValId scatter_elements_const(DecCtx *c, ValId data, ValId idx, ValId upd, int axis)
{
    const IrType *td = dec_ty(c, data), *ti = dec_ty(c, idx);
    int r = td->rank;
    int64_t nd = dec_numel(td), ni = dec_numel(ti);
    if (!dec_fits(c, nd, 2 * sizeof(int64_t), "scatter source map"))
        return IR_NONE;
    int64_t *map = ir_scratch(c->g, sizeof(int64_t) * (size_t)(nd + 1));
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
                    return IR_NONE;
                }
                co = v < 0 ? v + d : v;
            }
            off += co * mul;
            mul *= td->dims[i];
        }
        map[off] = nd + p;
    }
    return scatter_by_map(c, data, upd, map);
}

/* ScatterND: data[idx[u, :q]] (reduction)= updates[u]. */
bool dec_scatter_nd(DecCtx *c)
{
    int red;
    if (!have_inputs(c, 3) || !scatter_red(c, &red))
        return false;
    ValId data = dec_in(c, 0), idx = dec_in(c, 1), upd = dec_in(c, 2);
    if (red == DIX_RED_NONE && ir_is_const(c->g, idx))
        return scatter_nd_const(c, data, idx);
    IrType td = *dec_ty(c, data), ti = *dec_ty(c, idx);
    int64_t q = ti.rank ? ti.dims[ti.rank - 1] : 0;
    if (ti.rank < 1 || q < 1 || q > td.rank || !ir_dtype_is_int(ti.dtype)) {
        dec_err(c, "indices must be integers [..., q] with 1 <= q <= %d", td.rank);
        return false;
    }
    int64_t P = 1, I = 1, U = dec_numel(&ti) / q, strides[IR_MAX_RANK], dims[IR_MAX_RANK];
    for (int i = td.rank - 1; i >= 0; i--) {
        if (i >= q)
            I *= td.dims[i];
        else {
            strides[i] = P;
            dims[i] = td.dims[i];
            P *= td.dims[i];
        }
    }
    if (dec_numel(dec_ty(c, upd)) != U * I) {
        dec_err(c, "updates shape does not match indices and data");
        return false;
    }
    int64_t u2[2] = {U, q};
    ValId ix = dec_reshape(c, dec_cast(c, idx, IR_DT_I64), u2, 2);
    ix = dix_wrap(c, ix, dec_const_i64(c->g, &q, 1, dims));
    ValId pos = dec_bin(c, IR_BIN_MUL, ix, dec_const_i64(c->g, &q, 1, strides));
    int64_t ax = 1, p2[2] = {1, U}, d3[3] = {1, P, I}, u3[3] = {1, U, I};
    pos = dec_reshape(c, dec_reduce(c, IR_RED_SUM, pos, &ax, 1, false), p2, 2);
    ValId y = dix_scatter(c, dec_reshape(c, data, d3, 3), pos, dec_reshape(c, upd, u3, 3), red);
    if (y == IR_NONE)
        return false;
    c->out[0] = dec_reshape(c, y, td.dims, td.rank);
    return true;
}

/* Checks of dec_scatter_along's operands; reports the first mismatch. */
static bool along_shapes_ok(DecCtx *c, const IrType *td, const IrType *ti, const IrType *tu)
{
    if (td->rank < 1) {
        dec_err(c, "data must have rank >= 1");
        return false;
    }
    if (ti->rank != td->rank || !ir_dtype_is_int(ti->dtype) || tu->rank != td->rank ||
        dec_numel(tu) != dec_numel(ti)) {
        dec_err(c, "indices must be integers of the data's rank, shaped like updates");
        return false;
    }
    for (int i = 0; i < td->rank; i++)
        if (ti->dims[i] > td->dims[i] && ti->dims[i] > 0) {
            dec_err(c, "indices dim %d (%lld) exceeds the data's (%lld)", i,
                    (long long)ti->dims[i], (long long)td->dims[i]);
            return false;
        }
    return true;
}

/* See onnx.h. The axis moves last; the other dims index batches. */
ValId dec_scatter_along(DecCtx *c, ValId data, ValId idx, ValId upd, int axis, int red)
{
    IrType td = *dec_ty(c, data), ti = *dec_ty(c, idx);
    int r = td.rank;
    if (!along_shapes_ok(c, &td, &ti, dec_ty(c, upd)))
        return IR_NONE;
    if (red == DIX_RED_NONE && ir_is_const(c->g, idx))
        return scatter_elements_const(c, data, idx, upd, axis);
    int64_t perm[IR_MAX_RANK], inv[IR_MAX_RANK], pads[2 * IR_MAX_RANK] = {0}, B = 1;
    for (int i = 0, j = 0; i < r; i++)
        if (i != axis)
            perm[j++] = i;
    perm[r - 1] = axis;
    for (int i = 0; i < r; i++)
        inv[perm[i]] = i;
    for (int i = 0; i < r; i++)
        pads[r + inv[i]] = i == axis ? 0 : td.dims[i] - ti.dims[i];
    for (int i = 0; i < r - 1; i++)
        B *= td.dims[perm[i]];
    int64_t D = td.dims[axis], K = ti.dims[axis];
    ValId ix = dix_wrap(c, dec_cast(c, idx, IR_DT_I64), dec_scalar(c->g, IR_DT_I64, (double)D));
    /* batches the indices do not cover get an index that matches nothing */
    ValId it = dec_pad(c, dec_transpose(c, ix, perm), pads, NULL, -1.0);
    ValId ut = dec_pad(c, dec_transpose(c, upd, perm), pads, NULL, 0.0);
    int64_t p2[2] = {B, K}, u3[3] = {B, K, 1}, d3[3] = {B, D, 1};
    ValId dt = dec_reshape(c, dec_transpose(c, data, perm), d3, 3);
    ValId y = dix_scatter(c, dt, dec_reshape(c, it, p2, 2), dec_reshape(c, ut, u3, 3), red);
    if (y == IR_NONE)
        return IR_NONE;
    int64_t tdims[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        tdims[i] = td.dims[perm[i]];
    return dec_transpose(c, dec_reshape(c, y, tdims, r), inv);
}

/* ScatterElements (and Scatter, opset 9/10): along axis, data[.., idx[u], ..]
 * (reduction)= updates[u]. */
bool dec_scatter_elements(DecCtx *c)
{
    int red, axis;
    if (!have_inputs(c, 3) || !scatter_red(c, &red))
        return false;
    ValId data = dec_in(c, 0);
    int r = dec_ty(c, data)->rank;
    if (r < 1) {
        dec_err(c, "data must have rank >= 1");
        return false;
    }
    if (!dec_axis(c, dec_ai(c, "axis", 0), r, &axis))
        return false;
    c->out[0] = dec_scatter_along(c, data, dec_in(c, 1), dec_in(c, 2), axis, red);
    return c->out[0] != IR_NONE;
}

/* TensorScatter: write update into past_cache along axis at write_indices[b]
 * (linear or circular). Every output element has at most one source. */
bool dec_tensor_scatter(DecCtx *c)
{
    if (!have_inputs(c, 2))
        return false;
    ValId past = dec_in(c, 0), upd = dec_in(c, 1), wi = dec_in(c, 2);
    IrType tp = *dec_ty(c, past), tu = *dec_ty(c, upd);
    int r = tp.rank, axis;
    const char *mode = dec_as(c, "mode", "linear");
    bool circ = strcmp(mode, "circular") == 0;
    if (!circ && strcmp(mode, "linear") != 0) {
        dec_err(c, "unknown mode '%s'", mode);
        return false;
    }
    if (!dec_axis(c, dec_ai(c, "axis", -2), r, &axis))
        return false;
    bool ok = axis >= 1 && tu.rank == r && tu.dtype == tp.dtype;
    for (int i = 0; ok && i < r; i++)
        ok = i == axis ? tu.dims[i] <= tp.dims[i] : tu.dims[i] == tp.dims[i];
    if (!ok) {
        dec_err(c, "update must match past_cache except along axis %d (>= 1)", axis);
        return false;
    }
    int64_t S = tp.dims[axis], s = tu.dims[axis], bd[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        bd[i] = i == 0 ? tp.dims[0] : 1;
    ValId w = wi == IR_NONE ? dec_scalar(c->g, IR_DT_I64, 0.0)
                            : dec_reshape(c, dec_cast(c, wi, IR_DT_I64), bd, r);
    if (wi != IR_NONE && dec_numel(dec_ty(c, wi)) != tp.dims[0]) {
        dec_err(c, "write_indices must hold one entry per batch (%lld)", (long long)tp.dims[0]);
        return false;
    }
    ValId j = dix_iota(c, IR_DT_I64, S, r, axis);
    ValId t = dec_bin(c, IR_BIN_SUB, j, w);
    if (circ)
        t = dec_bin_s(c, IR_BIN_MOD, t, (double)S);
    ValId in = dec_bin(c, IR_BIN_AND, dec_bin_s(c, IR_BIN_GE, t, 0.0),
                       dec_bin_s(c, IR_BIN_LT, t, (double)s));
    ValId idx = dec_select(c, in, dec_bin_s(c, IR_BIN_ADD, t, (double)S), j);
    int64_t full[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        full[i] = tp.dims[i];
    idx = dec_expand(c, idx, full, r);
    ValId parts[2] = {past, upd};
    c->out[0] = dix_take_along(c, dec_concat(c, parts, 2, axis), idx, axis);
    return true;
}

/* Per-axis ints attribute with a default for absent entries. */
static bool axis_ints(DecCtx *c, const char *name, int n, int64_t dflt, int64_t *v)
{
    const int64_t *a;
    int k = dec_aints(c, name, &a);
    for (int i = 0; i < n; i++)
        v[i] = k < 0 ? dflt : a[i];
    if (k >= 0 && k != n) {
        dec_err(c, "attribute %s has %d entries, expected %d", name, k, n);
        return false;
    }
    return true;
}

/* Output dims of MaxUnpool: the output_shape input (constant, else the declared
 * output type) or the inferred shape. */
static bool unpool_out_dims(DecCtx *c, const IrType *tx, const int64_t *inf, int64_t *od)
{
    int r = tx->rank, n = 0;
    ValId os = dec_in(c, 2);
    memcpy(od, inf, sizeof(int64_t) * (size_t)r);
    if (os == IR_NONE)
        return true;
    if (ir_is_const(c->g, os)) {
        if (!dec_const_ints(c, os, "output_shape", od, IR_MAX_RANK, &n))
            return false;
    } else {
        dec_dynamic_err(c, os, "output_shape");  /* it decides the output shape */
        return false;
    }
    bool ok = n == r;
    for (int i = 0; ok && i < r; i++)
        ok = od[i] >= inf[i];
    if (!ok)
        dec_err(c, "output_shape must have rank %d and be at least the inferred shape", r);
    return ok;
}

/* MaxUnpool: Y (inferred shape) = 0; Y.flat[I[u]] = X.flat[u]; then zero-padded to
 * output_shape. */
bool dec_max_unpool(DecCtx *c)
{
    if (!have_inputs(c, 2))
        return false;
    ValId x = dec_in(c, 0), ind = dec_in(c, 1);
    IrType tx = *dec_ty(c, x);
    int r = tx.rank, nsp = r - 2;
    int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], p[2 * IR_MAX_RANK], inf[IR_MAX_RANK], od[IR_MAX_RANK];
    if (nsp < 1 || !ir_dtype_is_int(dec_ty(c, ind)->dtype) ||
        dec_numel(dec_ty(c, ind)) != dec_numel(&tx)) {
        dec_err(c, "X must have rank >= 3 and I integer indices of X's shape");
        return false;
    }
    if (!axis_ints(c, "kernel_shape", nsp, 0, k) || !axis_ints(c, "strides", nsp, 1, s) ||
        !axis_ints(c, "pads", 2 * nsp, 0, p))
        return false;
    inf[0] = tx.dims[0];
    inf[1] = tx.dims[1];
    for (int i = 0; i < nsp; i++) {
        inf[2 + i] = (tx.dims[2 + i] - 1) * s[i] - (p[i] + p[nsp + i]) + k[i];
        if (k[i] < 1 || s[i] < 1 || inf[2 + i] < 1) {
            dec_err(c, "kernel_shape, strides and pads give an empty output on axis %d", 2 + i);
            return false;
        }
    }
    if (!unpool_out_dims(c, &tx, inf, od))
        return false;
    int64_t P = 1, U = dec_numel(&tx), one[3] = {1, 1, 1};
    for (int i = 0; i < r; i++)
        P *= inf[i];
    int64_t d3[3] = {1, P, 1}, p2[2] = {1, U}, u3[3] = {1, U, 1};
    ValId zero = dec_expand(c, dec_reshape(c, dec_scalar(c->g, tx.dtype, 0.0), one, 3), d3, 3);
    ValId y = dix_scatter(c, zero, dec_reshape(c, ind, p2, 2), dec_reshape(c, x, u3, 3),
                          DIX_RED_NONE);
    if (y == IR_NONE)
        return false;
    y = dec_reshape(c, y, inf, r);
    int64_t pads[2 * IR_MAX_RANK] = {0};
    for (int i = 0; i < r; i++)
        pads[r + i] = od[i] - inf[i];
    c->out[0] = dec_pad(c, y, pads, NULL, 0.0);
    return true;
}

/* Static image dims of Col2Im (constant input, else the declared output). */
static bool col2im_image(DecCtx *c, int nd, int64_t *img)
{
    ValId im = dec_in(c, 1);
    int n = 0;
    if (ir_is_const(c->g, im)) {
        if (!dec_const_ints(c, im, "image_shape", img, IR_MAX_RANK, &n))
            return false;
        if (n != nd)
            dec_err(c, "image_shape must hold %d entries", nd);
        return n == nd;
    }
    dec_dynamic_err(c, im, "image_shape");  /* it decides the output shape */
    return false;
}

/* Block dims of Col2Im as i64 scalars (constant or runtime) and the channel count. */
static bool col2im_blocks(DecCtx *c, int nd, int64_t CK, ValId *b, int64_t *C)
{
    ValId bs = dec_cast(c, dec_in(c, 2), IR_DT_I64);
    int64_t kprod = 1, v[IR_MAX_RANK];
    int n = 0;
    if (ir_is_const(c->g, bs)) {
        if (!dec_const_ints(c, bs, "block_shape", v, IR_MAX_RANK, &n))
            return false;
        for (int i = 0; i < n; i++)
            kprod *= v[i] > 0 ? v[i] : 0;
        *C = kprod > 0 && CK % kprod == 0 ? CK / kprod : -1;
    } else {
        dec_dynamic_err(c, dec_in(c, 2), "block_shape");  /* it decides the channel count */
        return false;
    }
    if (*C < 1 || CK % *C != 0) {
        dec_err(c, "input dim 1 (%lld) is not a multiple of the block size", (long long)CK);
        return false;
    }
    for (int i = 0; i < nd; i++) {
        ValId bi = dec_slice_axis(c, bs, 0, i, 1, 1);
        b[i] = dec_reshape(c, bi, NULL, 0);
    }
    return true;
}

/* Col2Im: out[n, c, pixel] = sum over kernel taps k of in[n, c*K + k, l] for the
 * block l whose tap k lands on the pixel. The (k, pixel) -> column table is
 * computed from the (possibly runtime) block shape and GATHERed. */
bool dec_col2im(DecCtx *c)
{
    if (!have_inputs(c, 3))
        return false;
    ValId x = dec_in(c, 0);
    IrType tx = *dec_ty(c, x);
    int nd = (int)dec_numel(dec_ty(c, dec_in(c, 2)));
    int64_t img[IR_MAX_RANK], dil[IR_MAX_RANK], str[IR_MAX_RANK], pad[2 * IR_MAX_RANK], C;
    ValId b[IR_MAX_RANK];
    if (tx.rank != 3 || nd < 1 || nd + 2 > IR_MAX_RANK) {
        dec_err(c, "input must be [N, C*prod(block_shape), L] with a non-empty block_shape");
        return false;
    }
    if (!col2im_image(c, nd, img) || !axis_ints(c, "dilations", nd, 1, dil) ||
        !axis_ints(c, "strides", nd, 1, str) || !axis_ints(c, "pads", 2 * nd, 0, pad) ||
        !col2im_blocks(c, nd, tx.dims[1], b, &C))
        return false;
    int64_t N = tx.dims[0], K = tx.dims[1] / C, L = tx.dims[2], P = 1;
    for (int i = 0; i < nd; i++) {
        if (img[i] < 1 || img[i] > DIX_ONEHOT_MAX || str[i] < 1 || dil[i] < 1 || pad[i] < 0 ||
            pad[nd + i] < 0) {
            dec_err(c, "image_shape, strides and dilations must be positive and pads >= 0");
            return false;
        }
        P *= img[i];
    }
    if (!dec_fits(c, K * P, sizeof(int64_t), "Col2Im index table"))
        return false;
    ValId k = dix_iota(c, IR_DT_I64, K, 2, 0), inner = dec_scalar(c->g, IR_DT_I64, 1.0);
    ValId nbi = dec_scalar(c->g, IR_DT_I64, 1.0), l = dec_scalar(c->g, IR_DT_I64, 0.0);
    ValId valid = IR_NONE;
    for (int i = nd - 1; i >= 0; i--) {
        ValId ki = dec_bin(c, IR_BIN_MOD, dec_bin(c, IR_BIN_DIV, k, inner), b[i]);
        inner = dec_bin(c, IR_BIN_MUL, inner, b[i]);
        /* blocks along axis i: (img + pads - dil*(b-1) - 1) / stride + 1 */
        ValId span = dec_bin_s(c, IR_BIN_MUL, dec_bin_s(c, IR_BIN_SUB, b[i], 1.0), (double)dil[i]);
        ValId nb = dec_bin_s(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_DIV, dec_bin_s(c, IR_BIN_SUB,
                   dec_un(c, IR_UN_NEG, span), (double)(1 - img[i] - pad[i] - pad[nd + i])),
                   (double)str[i]), 1.0);
        double *pv = ir_scratch(c->g, sizeof(double) * (size_t)(P + 1));
        int64_t pd[2] = {1, P}, below = 1;
        for (int j = i + 1; j < nd; j++)
            below *= img[j];
        for (int64_t q = 0; q < P; q++)
            pv[q] = (double)((q / below) % img[i] + pad[i]);
        ValId num = dec_bin(c, IR_BIN_SUB, dec_const(c->g, IR_DT_I64, pd, 2, pv),
                            dec_bin_s(c, IR_BIN_MUL, ki, (double)dil[i])); /* [K, P] */
        ValId li = dec_bin_s(c, IR_BIN_DIV, num, (double)str[i]);
        ValId ok = dec_bin(c, IR_BIN_AND, dec_bin_s(c, IR_BIN_GE, num, 0.0),
                           dec_bin_s(c, IR_BIN_EQ, dec_bin_s(c, IR_BIN_MOD, num, (double)str[i]), 0.0));
        ok = dec_bin(c, IR_BIN_AND, ok, dec_bin(c, IR_BIN_LT, li, nb));
        valid = valid == IR_NONE ? ok : dec_bin(c, IR_BIN_AND, valid, ok);
        l = dec_bin(c, IR_BIN_ADD, l, dec_bin(c, IR_BIN_MUL, li, nbi));
        nbi = dec_bin(c, IR_BIN_MUL, nbi, nb);
    }
    ValId col = dec_bin(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, k, (double)L), l);
    ValId idx = dec_select(c, valid, col, dec_scalar(c->g, IR_DT_I64, (double)(K * L)));
    int64_t x2[2] = {N * C, K * L}, z2[2] = {N * C, 1}, one[2] = {1, 1};
    ValId parts[2] = {dec_reshape(c, x, x2, 2),
                      dec_expand(c, dec_reshape(c, dec_scalar(c->g, tx.dtype, 0.0), one, 2), z2, 2)};
    ValId g = dec_gather(c, dec_concat(c, parts, 2, 1), idx, 1); /* [NC, K, P] */
    int64_t ax = 1, od[IR_MAX_RANK];
    ValId y = dec_reduce(c, IR_RED_SUM, g, &ax, 1, false);
    od[0] = N;
    od[1] = C;
    memcpy(od + 2, img, sizeof(int64_t) * (size_t)nd);
    c->out[0] = dec_reshape(c, y, od, nd + 2);
    return true;
}
