/* dec_index.c: index arithmetic shared by the ONNX and ATen decompositions (see
 * dec_index.h): iotas, runtime scalars, declared output types, negative-index
 * wrapping, gathers along an axis, one-hot scatter and interpolating gathers. */
#include <math.h>
#include <string.h>

#include "dec_index.h"

/* Constant iota of n values of dtype t along `axis` of a rank-r shape of ones. */
ValId dix_iota(DecCtx *c, IrDType t, int64_t n, int r, int axis)
{
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        dims[i] = i == axis ? n : 1;
    double *v = ir_scratch(c->g, sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)i;
    return dec_const(c->g, t, dims, r, v);
}

/* x (one element) as a rank-0 value of dtype t. */
ValId dix_scalar(DecCtx *c, ValId x, const char *what, IrDType t)
{
    if (x == IR_NONE || dec_numel(dec_ty(c, x)) != 1) {
        dec_err(c, "%s input must hold exactly one element", what);
        return IR_NONE;
    }
    return dec_cast(c, dec_reshape(c, x, NULL, 0), t);
}

/* Declared type of output i (set by the frontend from the model), if fully known. */
const IrType *dix_declared(const DecCtx *c, int i)
{
    if (i >= c->n->nout || c->n->out[i] == IR_NONE)
        return NULL;
    const IrType *t = ir_vtype(c->g, c->n->out[i]);
    return t->dtype == IR_DT_UNDEF ? NULL : t;
}

/* Input i as a constant integer (one element). */
bool dix_const_int(const DecCtx *c, int i, int64_t *v)
{
    ValId x = dec_in(c, i);
    if (x == IR_NONE || !ir_is_const(c->g, x) || dec_numel(ir_vtype(c->g, x)) != 1)
        return false;
    const IrType *t = ir_vtype(c->g, x);
    *v = dec_load_int(t->dtype, ir_val(c->g, x)->data, 0);
    return true;
}

/* idx < 0 ? idx + d : idx. */
ValId dix_wrap(DecCtx *c, ValId idx, ValId d)
{
    ValId lt = dec_bin_s(c, IR_BIN_LT, idx, 0.0);
    return dec_select(c, lt, dec_bin(c, IR_BIN_ADD, idx, d), idx);
}

/* idx as i64 with negative entries wrapped by the axis size d: idx < 0 ? idx + d : idx. */
ValId dix_wrap_size(DecCtx *c, ValId idx, int64_t d)
{
    idx = dec_cast(c, idx, IR_DT_I64);
    ValId neg = dec_bin_s(c, IR_BIN_LT, idx, 0.0);
    return dec_select(c, neg, dec_bin_s(c, IR_BIN_ADD, idx, (double)d), idx);
}

/* Elements of data picked along `axis` by idx (i64, same rank as data, may hold
 * negative indices): flat index = sum_k coord_k * stride_k where coord_axis is the
 * (wrapped) index and the other coords are constant iotas; then one GATHER on the
 * flattened data. The result has idx's shape. */
ValId dix_take_along(DecCtx *c, ValId data, ValId idx, int axis)
{
    const IrType *td = dec_ty(c, data);
    IrType ti = *dec_ty(c, idx);
    int r = td->rank;
    int64_t stride[IR_MAX_RANK], s = 1;
    for (int i = r - 1; i >= 0; i--) {
        stride[i] = s;
        s *= td->dims[i];
    }
    ValId flat = dix_wrap(c, idx, dec_scalar(c->g, IR_DT_I64, (double)td->dims[axis]));
    flat = dec_bin_s(c, IR_BIN_MUL, flat, (double)stride[axis]);
    for (int k = 0; k < r; k++) {
        if (k == axis || ti.dims[k] == 1)
            continue;
        int64_t dims[IR_MAX_RANK], n = ti.dims[k];
        for (int i = 0; i < r; i++)
            dims[i] = i == k ? n : 1;
        int64_t *v = ir_scratch(c->g, sizeof(int64_t) * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            v[i] = i * stride[k];
        flat = dec_bin(c, IR_BIN_ADD, flat, dec_const_i64(c->g, dims, r, v));
    }
    ValId d1 = dec_reshape(c, data, &s, 1);
    return dec_gather(c, d1, flat, 0);
}

/* Scatter reduction attribute -> DIX_RED_NONE / IrRedFn; -2 if unknown. */
int dix_reduction(const char *s)
{
    if (!s || strcmp(s, "none") == 0)
        return DIX_RED_NONE;
    if (strcmp(s, "add") == 0)
        return IR_RED_SUM;
    if (strcmp(s, "mul") == 0)
        return IR_RED_PROD;
    if (strcmp(s, "max") == 0)
        return IR_RED_MAX;
    if (strcmp(s, "min") == 0)
        return IR_RED_MIN;
    return -2;
}

/* Scatter, reduction "none": per target row the last matching update index w
 * (-1: none), then one GATHER from concat(data, upd) along the row axis. */
static ValId scatter_last(DecCtx *c, ValId data, ValId mask, ValId upd, int64_t B, int64_t P,
                          int64_t U, int64_t I)
{
    ValId iu = dix_iota(c, IR_DT_I64, U, 3, 2);
    ValId w = dec_select(c, mask, iu, dec_scalar(c->g, IR_DT_I64, -1));
    int64_t ax = 2;
    w = dec_reduce(c, IR_RED_MAX, w, &ax, 1, false); /* [B, P] */
    ValId found = dec_bin_s(c, IR_BIN_GE, w, 0.0);
    ValId idx = dec_select(c, found, dec_bin_s(c, IR_BIN_ADD, w, (double)P),
                           dix_iota(c, IR_DT_I64, P, 2, 1));
    ValId parts[2] = {data, upd};
    ValId src = dec_concat(c, parts, 2, 1); /* [B, P+U, I] */
    int64_t d3[3] = {B, P, 1}, e3[3] = {B, P, I};
    idx = dec_expand(c, dec_reshape(c, idx, d3, 3), e3, 3);
    return dix_take_along(c, src, idx, 1);
}

/* One-hot scatter of upd[B,U,I] into data[B,P,I] at rows pos[B,U]. */
ValId dix_scatter(DecCtx *c, ValId data, ValId pos, ValId upd, int red)
{
    const IrType *td = dec_ty(c, data), *tu = dec_ty(c, upd);
    IR_ASSERT(td->rank == 3 && tu->rank == 3 && dec_ty(c, pos)->rank == 2);
    int64_t B = td->dims[0], P = td->dims[1], I = td->dims[2], U = tu->dims[1];
    double work = (double)B * (double)P * (double)U * (red == DIX_RED_NONE ? 1.0 : (double)I);
    if (work > (double)DIX_ONEHOT_MAX) {
        dec_err(c, "unsupported: scatter of %lld updates into %lld positions needs a one-hot "
                "intermediate of %.0f elements (limit %lld)", (long long)(B * U),
                (long long)(B * P), work, (long long)DIX_ONEHOT_MAX);
        return IR_NONE;
    }
    int64_t d3[3] = {B, 1, U};
    ValId p3 = dec_reshape(c, dec_cast(c, pos, IR_DT_I64), d3, 3);
    ValId mask = dec_bin(c, IR_BIN_EQ, p3, dix_iota(c, IR_DT_I64, P, 3, 1)); /* [B,P,U] */
    if (red == DIX_RED_NONE)
        return scatter_last(c, data, mask, upd, B, P, U, I);
    int64_t m4[4] = {B, P, U, 1}, u4[4] = {B, 1, U, I}, dd4[4] = {B, P, 1, I};
    ValId mk = dec_reshape(c, mask, m4, 4), up = dec_reshape(c, upd, u4, 4);
    IrDType dt = td->dtype;
    ValId fill;
    if (red == IR_RED_SUM)
        fill = dec_scalar(c->g, dt, 0.0);
    else if (red == IR_RED_PROD)
        fill = dec_scalar(c->g, dt, 1.0);
    else
        fill = dec_reshape(c, data, dd4, 4); /* max/min: a neutral filler */
    ValId v = dec_select(c, mk, up, fill);
    int64_t ax = 2;
    ValId r = dec_reduce(c, red, v, &ax, 1, false);
    if (red == IR_RED_SUM)
        return dec_bin(c, IR_BIN_ADD, data, r);
    if (red == IR_RED_PROD)
        return dec_bin(c, IR_BIN_MUL, data, r);
    return dec_bin(c, red == IR_RED_MAX ? IR_BIN_MAX : IR_BIN_MIN, data, r);
}

/* Reflect v into [lo, hi]: distances past a border fold back and forth. */
ValId dix_reflect(DecCtx *c, ValId v, double lo, double hi)
{
    double rng = hi - lo;
    if (!(rng > 0))
        return dec_bin_s(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, v, 0.0), lo);
    ValId below = dec_bin_s(c, IR_BIN_LT, v, lo), above = dec_bin_s(c, IR_BIN_GT, v, hi);
    ValId neg = dec_un(c, IR_UN_NEG, v);
    ValId dist = dec_select(c, below, dec_bin_s(c, IR_BIN_ADD, neg, lo),
                            dec_bin_s(c, IR_BIN_SUB, v, hi));
    ValId n = dec_un(c, IR_UN_FLOOR, dec_bin_s(c, IR_BIN_MUL, dist, 1.0 / rng));
    ValId r = dec_bin(c, IR_BIN_SUB, dist, dec_bin_s(c, IR_BIN_MUL, n, rng));
    ValId even = dec_bin_s(c, IR_BIN_EQ, dec_bin_s(c, IR_BIN_FMOD, n, 2.0), 0.0);
    ValId lo_r = dec_bin_s(c, IR_BIN_ADD, r, lo);
    ValId hi_r = dec_bin_s(c, IR_BIN_ADD, dec_un(c, IR_UN_NEG, r), hi);
    ValId near = dec_select(c, below, lo_r, hi_r), far = dec_select(c, below, hi_r, lo_r);
    ValId refl = dec_select(c, even, near, far);
    return dec_select(c, dec_bin(c, IR_BIN_OR, below, above), refl, v);
}

/* min(max(v, lo), hi). */
static ValId clampv(DecCtx *c, ValId v, double lo, double hi)
{
    return dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, v, lo), hi);
}

/* Truncation toward zero of a float value. */
static ValId trunc_f(DecCtx *c, ValId v)
{
    ValId neg = dec_bin_s(c, IR_BIN_LT, v, 0.0);
    return dec_select(c, neg, dec_un(c, IR_UN_CEIL, v), dec_un(c, IR_UN_FLOOR, v));
}

/* Interpolation weights for tap distances dist >= 0 ([N,P,taps]). */
static ValId tap_weights(DecCtx *c, ValId dist, DixMode mode)
{
    if (mode == DIX_LINEAR)
        return dec_bin_s(c, IR_BIN_SUB, dec_un(c, IR_UN_NEG, dist), -1.0); /* 1 - d */
    const double A = -0.75;
    /* |d| <= 1: ((A+2)d - (A+3)) d^2 + 1;  1 < |d| < 2: ((A d - 5A) d + 8A) d - 4A */
    ValId d2 = dec_bin(c, IR_BIN_MUL, dist, dist);
    ValId f1 = dec_bin_s(c, IR_BIN_SUB, dec_bin_s(c, IR_BIN_MUL, dist, A + 2), A + 3);
    f1 = dec_bin_s(c, IR_BIN_ADD, dec_bin(c, IR_BIN_MUL, f1, d2), 1.0);
    ValId f2 = dec_bin_s(c, IR_BIN_SUB, dec_bin_s(c, IR_BIN_MUL, dist, A), 5 * A);
    f2 = dec_bin_s(c, IR_BIN_ADD, dec_bin(c, IR_BIN_MUL, f2, dist), 8 * A);
    f2 = dec_bin_s(c, IR_BIN_SUB, dec_bin(c, IR_BIN_MUL, f2, dist), 4 * A);
    return dec_select(c, dec_bin_s(c, IR_BIN_LE, dist, 1.0), f1, f2);
}

/* Taps of one spatial axis: integer pixel index idx (i64 [N,P,nt]) and weight w
 * (f32 [N,P,nt]) for coordinate v ([N,P]) on an axis of size d. */
static void axis_taps(DecCtx *c, ValId v, int64_t d, DixMode mode, DixPad pad, double lo,
                      double hi, ValId *idx, ValId *w)
{
    const IrType *tv = dec_ty(c, v);
    int64_t N = tv->dims[0], P = tv->dims[1], d3[3] = {N, P, 1};
    if (mode == DIX_NEAREST)
        v = dec_un(c, IR_UN_ROUND, v);
    ValId out = dec_bin(c, IR_BIN_OR, dec_bin_s(c, IR_BIN_LT, v, lo), dec_bin_s(c, IR_BIN_GT, v, hi));
    if (pad == DIX_PAD_BORDER)
        v = dec_select(c, out, clampv(c, v, 0, (double)(d - 1)), v);
    else if (pad == DIX_PAD_REFLECT)
        v = dix_reflect(c, v, lo, hi);
    int nt = mode == DIX_NEAREST ? 1 : mode == DIX_LINEAR ? 2 : 4;
    double offs[4];
    for (int t = 0; t < nt; t++)
        offs[t] = mode == DIX_CUBIC ? t - 1 : t;
    int64_t od[3] = {1, 1, nt};
    ValId off = dec_const(c->g, IR_DT_F32, od, 3, offs);
    ValId base = mode == DIX_NEAREST ? trunc_f(c, v) : dec_un(c, IR_UN_FLOOR, v);
    base = dec_reshape(c, base, d3, 3);
    ValId pos = dec_bin(c, IR_BIN_ADD, base, off); /* [N,P,nt] */
    if (mode == DIX_NEAREST) {
        *w = dec_bin_s(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, pos, 0.0), 1.0);
    } else {
        ValId frac = dec_bin(c, IR_BIN_SUB, dec_reshape(c, v, d3, 3), base);
        ValId dist = dec_un(c, IR_UN_ABS, dec_bin(c, IR_BIN_SUB, frac, off));
        *w = tap_weights(c, dist, mode);
    }
    if (pad == DIX_PAD_ZEROS) {
        ValId ok = dec_bin(c, IR_BIN_AND, dec_bin_s(c, IR_BIN_GE, pos, 0.0),
                           dec_bin_s(c, IR_BIN_LE, pos, (double)(d - 1)));
        *w = dec_select(c, ok, *w, dec_scalar(c->g, IR_DT_F32, 0.0));
    } else if (pad == DIX_PAD_REFLECT) {
        pos = dec_un(c, IR_UN_FLOOR, dix_reflect(c, pos, lo, hi));
    }
    *idx = dec_cast(c, clampv(c, pos, 0, (double)(d - 1)), IR_DT_I64);
}

/* Sample x[N,C,spatial...] at per-axis pixel coordinates coord[i] ([N,P]). */
ValId dix_sample(DecCtx *c, ValId x, const ValId *coord, int k, DixMode mode, DixPad pad,
                 const double *lo, const double *hi)
{
    IrType tx = *dec_ty(c, x);
    int64_t N = tx.dims[0], C = tx.dims[1], P = dec_ty(c, coord[0])->dims[1], S = 1;
    int64_t stride[IR_MAX_RANK], perm[IR_MAX_RANK];
    for (int i = k - 1; i >= 0; i--) {
        stride[i] = S;
        S *= tx.dims[2 + i];
    }
    int nt = mode == DIX_NEAREST ? 1 : mode == DIX_LINEAR ? 2 : 4;
    int64_t T = 1;
    for (int i = 0; i < k; i++)
        T *= nt;
    if ((double)N * (double)P * (double)T * (double)C > (double)DIX_ONEHOT_MAX * 4) {
        dec_err(c, "unsupported: sampling %lld points with %lld taps each is too large",
                (long long)(N * P), (long long)T);
        return IR_NONE;
    }
    /* x -> [N*S, C] rows of channels */
    perm[0] = 0;
    for (int i = 0; i < k; i++)
        perm[1 + i] = 2 + i;
    perm[k + 1] = 1;
    int64_t rows[2] = {N * S, C};
    ValId xf = dec_reshape(c, dec_transpose(c, x, perm), rows, 2);
    /* flat row index and weight over the tap grid [N, P, nt, ..., nt] */
    int r = 2 + k;
    ValId flat = IR_NONE, wt = IR_NONE;
    for (int i = 0; i < k; i++) {
        ValId idx, w;
        axis_taps(c, coord[i], tx.dims[2 + i], mode, pad, lo[i], hi[i], &idx, &w);
        int64_t dims[IR_MAX_RANK];
        for (int j = 0; j < r; j++)
            dims[j] = j == 0 ? N : j == 1 ? P : j == 2 + i ? nt : 1;
        idx = dec_bin_s(c, IR_BIN_MUL, dec_reshape(c, idx, dims, r), (double)stride[i]);
        w = dec_reshape(c, w, dims, r);
        flat = flat == IR_NONE ? idx : dec_bin(c, IR_BIN_ADD, flat, idx);
        wt = wt == IR_NONE ? w : dec_bin(c, IR_BIN_MUL, wt, w);
    }
    ValId nbase = dec_bin_s(c, IR_BIN_MUL, dix_iota(c, IR_DT_I64, N, r, 0), (double)S);
    flat = dec_bin(c, IR_BIN_ADD, flat, nbase);
    int64_t full[IR_MAX_RANK], f3[3] = {N, P, T}, w4[4] = {N, P, T, 1};
    full[0] = N;
    full[1] = P;
    for (int i = 0; i < k; i++)
        full[2 + i] = nt;
    flat = dec_reshape(c, dec_expand(c, flat, full, r), f3, 3);
    wt = dec_reshape(c, dec_expand(c, wt, full, r), w4, 4);
    ValId g = dec_gather(c, xf, flat, 0); /* [N, P, T, C] */
    ValId y = dec_bin(c, IR_BIN_MUL, g, wt);
    int64_t ax = 2;
    return dec_reduce(c, IR_RED_SUM, y, &ax, 1, false);
}
