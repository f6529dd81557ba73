/* onnx_kernel_taps.c: the operators that read every kernel tap of every output
 * window explicitly, sharing one window geometry (PoolGeo):
 * MaxPool with its Indices output GATHERs every window's taps through a constant tap
 * table and takes the first maximum (ARGREDUCE); without Indices, MaxPool is the
 * WINDOW of onnx_conv_pool.c.
 * DeformConv samples the input bilinearly at the offset kernel taps (dix_sample) and
 * contracts with the weights (MATMUL).
 */
#include <math.h>
#include <string.h>

#include "onnx.h"
#include "passes/decompose/dec_index.h"

/* ---- MaxPool with Indices ---- */

typedef struct {
    int nsp;
    int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], d[IR_MAX_RANK], lo[IR_MAX_RANK], out[IR_MAX_RANK];
} PoolGeo;

/* Per-axis ints attribute (default dflt), checked to have n entries. */
static bool pool_ints(DecCtx *c, const char *name, int n, int64_t dflt, int64_t *v)
{
    const int64_t *a;
    int cnt = dec_aints(c, name, &a);
    if (cnt >= 0 && cnt != n) {
        dec_err(c, "attribute %s has %d entries, expected %d", name, cnt, n);
        return false;
    }
    for (int i = 0; i < n; i++)
        v[i] = cnt < 0 ? dflt : a[i];
    return true;
}

/* Window geometry of MaxPool (kernel, strides, dilations, leading pads, output). */
static bool pool_geo(DecCtx *c, const IrType *tx, PoolGeo *p)
{
    int n = p->nsp = tx->rank - 2;
    int64_t pads[2 * IR_MAX_RANK];
    const char *ap = dec_as(c, "auto_pad", "NOTSET");
    bool ceil_mode = dec_ai(c, "ceil_mode", 0) != 0;
    if (!pool_ints(c, "kernel_shape", n, 0, p->k) || !pool_ints(c, "strides", n, 1, p->s) ||
        !pool_ints(c, "dilations", n, 1, p->d) || !pool_ints(c, "pads", 2 * n, 0, pads))
        return false;
    for (int i = 0; i < n; i++) {
        int64_t in = tx->dims[2 + i], keff = (p->k[i] - 1) * p->d[i] + 1;
        if (p->k[i] < 1 || p->s[i] < 1 || p->d[i] < 1) {
            dec_err(c, "kernel_shape, strides and dilations must be positive");
            return false;
        }
        if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
            p->out[i] = (in + p->s[i] - 1) / p->s[i];
            int64_t tot = (p->out[i] - 1) * p->s[i] + keff - in;
            tot = tot > 0 ? tot : 0;
            p->lo[i] = strcmp(ap, "SAME_UPPER") == 0 ? tot / 2 : tot - tot / 2;
            continue;
        }
        p->lo[i] = strcmp(ap, "VALID") == 0 ? 0 : pads[i];
        int64_t hi = strcmp(ap, "VALID") == 0 ? 0 : pads[n + i], tot = in + p->lo[i] + hi - keff;
        if (tot < 0) {
            dec_err(c, "kernel extent %lld exceeds the padded input on axis %d", (long long)keff, 2 + i);
            return false;
        }
        p->out[i] = (ceil_mode ? (tot + p->s[i] - 1) / p->s[i] : tot / p->s[i]) + 1;
        if (ceil_mode && (p->out[i] - 1) * p->s[i] >= in + p->lo[i])
            p->out[i]--;
    }
    return true;
}

/* Tap tables [O, K]: row-major input position of every window tap (S where it falls
 * in the padding) and the index reported for it (storage order 0 or 1). */
static void pool_taps(const PoolGeo *p, const int64_t *in, bool colmajor, int64_t O, int64_t K,
                      int64_t S, int64_t *pos, int64_t *rep)
{
    int n = p->nsp;
    for (int64_t o = 0; o < O; o++)
        for (int64_t t = 0; t < K; t++) {
            int64_t ro = o, rt = t, flat = 0, cm = 0, cmul = 1;
            int64_t co[IR_MAX_RANK];
            bool ok = true;
            for (int i = n - 1; i >= 0; i--) {
                int64_t oi = ro % p->out[i], ti = rt % p->k[i];
                ro /= p->out[i];
                rt /= p->k[i];
                co[i] = oi * p->s[i] - p->lo[i] + ti * p->d[i];
                ok = ok && co[i] >= 0 && co[i] < in[i];
            }
            for (int i = 0; i < n; i++) {
                flat = flat * in[i] + co[i];
                cm += co[i] * cmul;
                cmul *= in[i];
            }
            pos[o * K + t] = ok ? flat : S;
            rep[o * K + t] = ok ? (colmajor ? cm : flat) : 0;
        }
}

/* Lowest value of a dtype (padding that never wins a max). */
static double lowest_of(IrDType t)
{
    switch (t) {
    case IR_DT_I8: return -128;
    case IR_DT_I16: return -32768;
    case IR_DT_I32: return -2147483648.0;
    case IR_DT_I64: return -9.2e18;
    case IR_DT_U8: case IR_DT_BOOL: return 0;
    default: return -INFINITY;
    }
}

/* MaxPool: without the Indices output dec_pool; with it, values and indices from a
 * GATHER of every window's taps and the first maximum among them. */
bool dec_maxpool_indices(DecCtx *c)
{
    if (!dec_out_used(c, 1))
        return dec_pool(c);
    ValId x = dec_in(c, 0);
    PoolGeo p;
    if (x == IR_NONE || dec_ty(c, x)->rank < 3) {
        dec_err(c, "input must have rank >= 3");
        return false;
    }
    IrType tx = *dec_ty(c, x);
    if (!pool_geo(c, &tx, &p))
        return false;
    int64_t NC = tx.dims[0] * tx.dims[1], S = 1, O = 1, K = 1;
    for (int i = 0; i < p.nsp; i++) {
        S *= tx.dims[2 + i];
        O *= p.out[i];
        K *= p.k[i];
    }
    if (!dec_fits(c, O * K, 2 * sizeof(int64_t), "MaxPool tap table"))
        return false;
    int64_t *pos = ir_scratch(c->g, sizeof(int64_t) * (size_t)(O * K));
    int64_t *rep = ir_scratch(c->g, sizeof(int64_t) * (size_t)(O * K));
    pool_taps(&p, tx.dims + 2, dec_ai(c, "storage_order", 0) != 0, O, K, S, pos, rep);
    int64_t x2[2] = {NC, S}, l2[2] = {NC, 1}, one[2] = {1, 1}, ok2[2] = {O, K}, ok1 = O * K;
    ValId low = dec_expand(c, dec_reshape(c, dec_scalar(c->g, tx.dtype, lowest_of(tx.dtype)), one, 2), l2, 2);
    ValId parts[2] = {dec_reshape(c, x, x2, 2), low};
    ValId g = dec_gather(c, dec_concat(c, parts, 2, 1), dec_const_i64(c->g, ok2, 2, pos), 1);
    IrAttr a[4] = {ir_attr_int("fn", IR_RED_MAX), ir_attr_int("axis", 2), ir_attr_int("keepdims", 0),
                   ir_attr_int("select_last", 0)};
    ValId arg = dec_op(c, IR_OP_ARGREDUCE, &g, 1, a, 4); /* [NC, O] */
    int64_t ax = 2;
    ValId val = dec_reduce(c, IR_RED_MAX, g, &ax, 1, false);
    ValId sel = dec_bin(c, IR_BIN_ADD, arg, dec_bin_s(c, IR_BIN_MUL, dix_iota(c, IR_DT_I64, O, 2, 1), (double)K));
    ValId idx = dec_gather(c, dec_const_i64(c->g, &ok1, 1, rep), sel, 0);
    idx = dec_bin(c, IR_BIN_ADD, idx, dec_bin_s(c, IR_BIN_MUL, dix_iota(c, IR_DT_I64, NC, 2, 0), (double)S));
    int64_t od[IR_MAX_RANK];
    od[0] = tx.dims[0];
    od[1] = tx.dims[1];
    memcpy(od + 2, p.out, sizeof(int64_t) * (size_t)p.nsp);
    c->out[0] = dec_reshape(c, val, od, tx.rank);
    c->out[1] = dec_reshape(c, idx, od, tx.rank);
    return true;
}

/* ---- DeformConv ---- */

/* Sampling coordinates of DeformConv along axis i: o*s - pad + t*d + offset, as
 * [N*og, K*O] f32. off is the offset input reshaped [N, og, K, nsp, O]. */
static ValId deform_coord(DecCtx *c, ValId off, int i, const PoolGeo *p, int64_t N, int64_t og,
                          int64_t K, int64_t O)
{
    int64_t kd[2] = {K, O}, d2[2] = {N * og, K * O};
    double *base = ir_scratch(c->g, sizeof(double) * (size_t)(K * O));
    for (int64_t t = 0; t < K; t++)
        for (int64_t o = 0; o < O; o++) {
            int64_t ti = t, oi = o;
            for (int j = p->nsp - 1; j > i; j--) {
                ti /= p->k[j];
                oi /= p->out[j];
            }
            ti %= p->k[i];
            oi %= p->out[i];
            base[t * O + o] = (double)(oi * p->s[i] - p->lo[i] + ti * p->d[i]);
        }
    ValId oi = dec_reshape(c, dec_slice_axis(c, off, 3, i, 1, 1), d2, 2);
    ValId b = dec_reshape(c, dec_const(c->g, IR_DT_F32, kd, 2, base), (int64_t[]){1, K * O}, 2);
    return dec_bin(c, IR_BIN_ADD, dec_cast(c, oi, IR_DT_F32), b);
}

/* Geometry of DeformConv from attributes and the weight shape. */
static bool deform_geo(DecCtx *c, const IrType *tx, const IrType *tw, PoolGeo *p)
{
    int n = p->nsp = tx->rank - 2;
    int64_t pads[2 * IR_MAX_RANK];
    if (!pool_ints(c, "kernel_shape", n, 0, p->k) || !pool_ints(c, "strides", n, 1, p->s) ||
        !pool_ints(c, "dilations", n, 1, p->d) || !pool_ints(c, "pads", 2 * n, 0, pads))
        return false;
    for (int i = 0; i < n; i++) {
        if (p->k[i] == 0)
            p->k[i] = tw->dims[2 + i];
        p->lo[i] = pads[i];
        int64_t keff = (p->k[i] - 1) * p->d[i] + 1;
        p->out[i] = p->s[i] > 0 ? (tx->dims[2 + i] + pads[i] + pads[n + i] - keff) / p->s[i] + 1 : 0;
        if (p->k[i] != tw->dims[2 + i] || p->out[i] < 1 || p->d[i] < 1) {
            dec_err(c, "kernel_shape, strides, pads and dilations do not fit X and W");
            return false;
        }
    }
    return true;
}

/* DeformConv(X, W, offset, B?, mask?): bilinear samples at the offset taps (zero
 * outside), times the mask, contracted with W per group. */
bool dec_deform_conv(DecCtx *c)
{
    ValId x = dec_in(c, 0), wt = dec_in(c, 1), off = dec_in(c, 2), b = dec_in(c, 3), mk = dec_in(c, 4);
    if (x == IR_NONE || wt == IR_NONE || off == IR_NONE) {
        dec_err(c, "missing X, W or offset input");
        return false;
    }
    IrType tx = *dec_ty(c, x), tw = *dec_ty(c, wt);
    PoolGeo p;
    int64_t G = dec_ai(c, "group", 1), og = dec_ai(c, "offset_group", 1);
    if (tx.rank < 3 || tw.rank != tx.rank || G < 1 || og < 1 || tx.dims[1] % og != 0 ||
        tx.dims[1] != tw.dims[1] * G || tw.dims[0] % G != 0 || !deform_geo(c, &tx, &tw, &p)) {
        if (!ir_failed(c->g))
            dec_err(c, "X [N, C, ...] and W [M, C/group, k...] do not fit group %lld, offset_group %lld",
                    (long long)G, (long long)og);
        return false;
    }
    int n = p.nsp;
    int64_t N = tx.dims[0], C = tx.dims[1], M = tw.dims[0], K = 1, O = 1;
    for (int i = 0; i < n; i++) {
        K *= p.k[i];
        O *= p.out[i];
    }
    if (dec_numel(dec_ty(c, off)) != N * og * K * n * O ||
        (mk != IR_NONE && dec_numel(dec_ty(c, mk)) != N * og * K * O)) {
        dec_err(c, "offset or mask shape does not match the output size");
        return false;
    }
    int64_t o5[5] = {N, og, K, n, O}, xs[IR_MAX_RANK];
    ValId offr = dec_reshape(c, off, o5, 5);
    ValId coord[IR_MAX_RANK];
    double lo[IR_MAX_RANK], hi[IR_MAX_RANK];
    for (int i = 0; i < n; i++) {
        coord[i] = deform_coord(c, offr, i, &p, N, og, K, O);
        lo[i] = 0;
        hi[i] = (double)(tx.dims[2 + i] - 1);
    }
    xs[0] = N * og;
    xs[1] = C / og;
    memcpy(xs + 2, tx.dims + 2, sizeof(int64_t) * (size_t)n);
    ValId xg = dec_reshape(c, dec_cast(c, x, IR_DT_F32), xs, n + 2);
    ValId s = dix_sample(c, xg, coord, n, DIX_LINEAR, DIX_PAD_ZEROS, lo, hi); /* [N*og, K*O, C/og] */
    if (s == IR_NONE)
        return false;
    int64_t s5[5] = {N, og, K, O, C / og}, m5[5] = {N, og, K, O, 1};
    s = dec_reshape(c, s, s5, 5);
    if (mk != IR_NONE)
        s = dec_bin(c, IR_BIN_MUL, s, dec_reshape(c, dec_cast(c, mk, IR_DT_F32), m5, 5));
    int64_t perm[5] = {0, 3, 1, 4, 2}, cols[3] = {N, O, C * K}, w2[2] = {M, (C / G) * K};
    ValId col = dec_reshape(c, dec_transpose(c, s, perm), cols, 3);
    ValId w = dec_reshape(c, dec_cast(c, wt, IR_DT_F32), w2, 2), ys[64];
    int64_t tp[2] = {1, 0};
    if (G > 64) {
        dec_err(c, "unsupported: more than 64 groups");
        return false;
    }
    for (int64_t gi = 0; gi < G; gi++) {
        ValId cg = dec_slice_axis(c, col, 2, gi * (C / G) * K, 1, (C / G) * K);
        ValId wg = dec_transpose(c, dec_slice_axis(c, w, 0, gi * (M / G), 1, M / G), tp);
        ys[gi] = ir_matmul(c->g, cg, wg, c->o); /* [N, O, M/G] */
    }
    int64_t back[3] = {0, 2, 1}, od[IR_MAX_RANK];
    ValId y = dec_transpose(c, dec_concat(c, ys, (int)G, 2), back);
    od[0] = N;
    od[1] = M;
    memcpy(od + 2, p.out, sizeof(int64_t) * (size_t)n);
    y = dec_reshape(c, y, od, n + 2);
    if (b != IR_NONE)
        y = dec_bin(c, IR_BIN_ADD, y, dec_chan_view(c, dec_cast(c, b, IR_DT_F32), n + 2));
    c->out[0] = dec_cast(c, y, tx.dtype);
    return true;
}
