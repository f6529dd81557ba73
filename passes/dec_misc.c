/* dec_misc.c: BitCast, RoiAlign, MaxPool with its Indices output, DeformConv.
 *
 * BitCast is the core BITCAST (a view) where the device keeps both types' bits in
 * elements of one width; bool, uint16 and the sub-byte integers go through integers of
 * the same width (modular arithmetic).
 * RoiAlign computes every sample's two taps per axis and bilinear weights with
 * pointwise ops (the sample grid is static: sampling_ratio, or the largest grid of
 * constant rois), GATHERs the four corners and averages or takes the maximum.
 * MaxPool's Indices GATHER every window's taps through a constant tap table and
 * take the first maximum (ARGREDUCE). DeformConv samples the input bilinearly at
 * the offset kernel taps (dix_sample) and contracts with the weights (MATMUL).
 */
#include <math.h>
#include <string.h>

#include "dec_index.h"

/* Width in bits of dtype t as BitCast sees it (4 and 2 for the sub-byte types, which
 * the IR holds one per byte); 0 for strings and unknown types. */
static int bc_bits(IrDType t)
{
    switch (t) {
    case IR_DT_U4: case IR_DT_I4: case IR_DT_F4E2M1: return 4;
    case IR_DT_U2: case IR_DT_I2: return 2;
    default: return 8 * (int)ir_dtype_size(t);
    }
}

/* Whether the core BITCAST reinterprets t in place: whole-byte elements whose device
 * element keeps the IR bits (not bool, not sub-byte, not uint16 which the device holds
 * as int32). */
static bool bc_direct(IrDType t)
{
    return t != IR_DT_BOOL && t != IR_DT_U16 && bc_bits(t) >= 8;
}

/* Integer type that carries t's bits: t itself for integers, uint8 (0/1) for bool, the
 * signed integer of the same width for floats; UNDEF for float4. */
static IrDType bc_carrier(IrDType t)
{
    if (ir_dtype_is_int(t))
        return t;
    switch (bc_bits(t)) {
    case 8: return t == IR_DT_BOOL ? IR_DT_U8 : IR_DT_I8;
    case 16: return IR_DT_I16;
    case 32: return IR_DT_I32;
    case 64: return IR_DT_I64;
    default: return IR_DT_UNDEF;
    }
}

/* Core BITCAST of x to t. */
static ValId bc_op(DecCtx *c, ValId x, IrDType t)
{
    IrAttr a = ir_attr_int("to", t);
    return dec_op(c, IR_OP_BITCAST, &x, 1, &a, 1);
}

/* Integer x of type a reinterpreted as integer type b of the same width. Types the
 * core BITCAST cannot take (uint16, the sub-byte ones) use two's complement modular
 * arithmetic: signed -> unsigned adds 2^bits to negatives, and back. */
static ValId bc_int(DecCtx *c, ValId x, IrDType a, IrDType b)
{
    bool sa = a == IR_DT_I2 || a == IR_DT_I4 || a == IR_DT_I8 || a == IR_DT_I16 ||
              a == IR_DT_I32 || a == IR_DT_I64;
    bool sb = b == IR_DT_I2 || b == IR_DT_I4 || b == IR_DT_I8 || b == IR_DT_I16 ||
              b == IR_DT_I32 || b == IR_DT_I64;
    if (a == b)
        return x;
    if (bc_direct(a) && bc_direct(b))
        return bc_op(c, x, b);
    if (sa == sb)
        return dec_cast(c, x, b);
    double m = ldexp(1.0, bc_bits(a));
    ValId w = dec_cast(c, x, IR_DT_I64);
    ValId adj = sa ? dec_select(c, dec_bin_s(c, IR_BIN_LT, w, 0.0), dec_bin_s(c, IR_BIN_ADD, w, m), w)
                   : dec_select(c, dec_bin_s(c, IR_BIN_GE, w, m / 2), dec_bin_s(c, IR_BIN_SUB, w, m), w);
    return dec_cast(c, adj, b);
}

/* BitCast(x, to): same-width reinterpretation. Types whose bits the device keeps in
 * place are one core BITCAST (a view of x); the others go through integers of the
 * same width: bool as uint8 0/1, uint16 and sub-byte integers by modular arithmetic. */
bool dec_bitcast(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    if (x == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    IrDType from = dec_ty(c, x)->dtype, to = (IrDType)dec_ai(c, "to", 0);
    if (ir_dtype_size(to) == 0 || bc_bits(to) != bc_bits(from)) {
        dec_err(c, "BitCast from %s to dtype %d: the types must have the same bit width",
                ir_dtype_name(from), (int)to);
        return false;
    }
    if (from == to) {
        c->out[0] = x;
        return true;
    }
    if (bc_direct(from) && bc_direct(to)) {
        c->out[0] = bc_op(c, x, to);
        return true;
    }
    IrDType a = bc_carrier(from), b = bc_carrier(to);
    if (a == IR_DT_UNDEF || b == IR_DT_UNDEF) {
        dec_err(c, "unsupported: BitCast from %s to %s: 4-bit float codes cannot be "
                "reinterpreted", ir_dtype_name(from), ir_dtype_name(to));
        return false;
    }
    ValId v = from == a ? x : from == IR_DT_BOOL ? dec_cast(c, x, a) : bc_op(c, x, a);
    v = bc_int(c, v, a, b);
    c->out[0] = to == b ? v : to == IR_DT_BOOL ? dec_cast(c, v, to) : bc_op(c, v, to);
    return true;
}

/* ---- RoiAlign ---- */

typedef struct {
    int64_t R, oh, ow, G;     /* rois, output size, samples per bin axis (upper bound) */
    double scale;
    bool half, avg;
    int sr;                   /* sampling_ratio (0: adaptive) */
} RoiCfg;

/* Column j of rois [R, 4] times scale minus the half-pixel offset: [R, 1, 1]. */
static ValId roi_col(DecCtx *c, ValId rois, int j, const RoiCfg *k)
{
    int64_t d3[3] = {k->R, 1, 1};
    ValId v = dec_reshape(c, dec_slice_axis(c, rois, 1, j, 1, 1), d3, 3);
    return dec_bin_s(c, IR_BIN_SUB, dec_bin_s(c, IR_BIN_MUL, v, k->scale), k->half ? 0.5 : 0.0);
}

/* Largest adaptive sample count over constant rois (ceil(extent / bins)). */
static int64_t roi_max_grid(DecCtx *c, ValId rois, const RoiCfg *k)
{
    const void *p = ir_val(c->g, rois)->data;
    IrDType t = dec_ty(c, rois)->dtype;
    int64_t g = 1;
    for (int64_t r = 0; r < k->R; r++) {
        double w = (dec_load(t, p, r * 4 + 2) - dec_load(t, p, r * 4)) * k->scale;
        double h = (dec_load(t, p, r * 4 + 3) - dec_load(t, p, r * 4 + 1)) * k->scale;
        if (!k->half) {
            w = w > 1 ? w : 1;
            h = h > 1 ? h : 1;
        }
        double gw = fmin(ceil(w / (double)k->ow), 1e6), gh = fmin(ceil(h / (double)k->oh), 1e6);
        g = gw > (double)g ? (int64_t)gw : g;
        g = gh > (double)g ? (int64_t)gh : g;
    }
    return g;
}

/* One axis of RoiAlign: sample coordinates lo + (p + (i + .5) / g) * bin for bins p
 * and samples i, then the two taps, their weights (zero outside [-1, d]) and the
 * sample mask (i < g). Outputs [R, bins, G, 2] tap index (i64) and weight, and the
 * mask [R, 1, G] (f32). */
static void roi_axis(DecCtx *c, ValId lo, ValId hi, int64_t bins, int64_t d, const RoiCfg *k,
                     ValId *idx, ValId *w, ValId *mask)
{
    ValId ext = dec_bin(c, IR_BIN_SUB, hi, lo);
    if (!k->half)
        ext = dec_bin_s(c, IR_BIN_MAX, ext, 1.0);
    ValId bin = dec_bin_s(c, IR_BIN_MUL, ext, 1.0 / (double)bins);
    ValId g = k->sr > 0 ? dec_scalar(c->g, IR_DT_F32, k->sr) : dec_un(c, IR_UN_CEIL, bin);
    ValId it = dix_iota(c, IR_DT_F32, k->G, 3, 2);
    ValId frac = dec_bin(c, IR_BIN_DIV, dec_bin_s(c, IR_BIN_ADD, it, 0.5), g);
    ValId pos = dec_bin(c, IR_BIN_ADD, dix_iota(c, IR_DT_F32, bins, 3, 1), frac);
    ValId v = dec_bin(c, IR_BIN_ADD, lo, dec_bin(c, IR_BIN_MUL, pos, bin)); /* [R, bins, G] */
    ValId inside = dec_bin(c, IR_BIN_AND, dec_bin_s(c, IR_BIN_GE, v, -1.0),
                           dec_bin_s(c, IR_BIN_LE, v, (double)d));
    ValId vc = dec_bin_s(c, IR_BIN_MAX, v, 0.0), low = dec_un(c, IR_UN_FLOOR, vc);
    ValId edge = dec_bin_s(c, IR_BIN_GE, low, (double)(d - 1));
    ValId last = dec_scalar(c->g, IR_DT_F32, (double)(d - 1)), zero = dec_scalar(c->g, IR_DT_F32, 0.0);
    ValId l0 = dec_select(c, edge, last, low);
    ValId l1 = dec_select(c, edge, last, dec_bin_s(c, IR_BIN_ADD, low, 1.0));
    ValId lf = dec_select(c, edge, zero, dec_bin(c, IR_BIN_SUB, vc, low));
    ValId hf = dec_bin_s(c, IR_BIN_SUB, dec_un(c, IR_UN_NEG, lf), -1.0);
    ValId parts[2];
    int64_t d4[4] = {k->R, bins, k->G, 1}, m3[3] = {k->R, 1, k->G};
    parts[0] = dec_reshape(c, l0, d4, 4);
    parts[1] = dec_reshape(c, l1, d4, 4);
    *idx = dec_cast(c, dec_concat(c, parts, 2, 3), IR_DT_I64);
    parts[0] = dec_reshape(c, dec_select(c, inside, hf, zero), d4, 4);
    parts[1] = dec_reshape(c, dec_select(c, inside, lf, zero), d4, 4);
    *w = dec_concat(c, parts, 2, 3);
    *mask = dec_expand(c, dec_cast(c, dec_bin(c, IR_BIN_LT, it, g), IR_DT_F32), m3, 3);
}

/* RoiAlign configuration from the attributes and input shapes. */
static bool roi_config(DecCtx *c, const IrType *tx, ValId rois, RoiCfg *k)
{
    const char *mode = dec_as(c, "mode", "avg");
    const char *ctm = dec_as(c, "coordinate_transformation_mode",
                             c->opset >= 16 ? "half_pixel" : "output_half_pixel");
    k->R = dec_ty(c, rois)->dims[0];
    k->oh = dec_ai(c, "output_height", 1);
    k->ow = dec_ai(c, "output_width", 1);
    k->sr = (int)dec_ai(c, "sampling_ratio", 0);
    k->scale = dec_af(c, "spatial_scale", 1.0);
    k->avg = strcmp(mode, "avg") == 0;
    k->half = strcmp(ctm, "half_pixel") == 0;
    if ((!k->avg && strcmp(mode, "max") != 0) || (!k->half && strcmp(ctm, "output_half_pixel") != 0)) {
        dec_err(c, "unknown mode '%s' or coordinate_transformation_mode '%s'", mode, ctm);
        return false;
    }
    if (tx->rank != 4 || dec_ty(c, rois)->rank != 2 || dec_ty(c, rois)->dims[1] != 4 ||
        k->oh < 1 || k->ow < 1 || k->oh > DIX_ONEHOT_MAX || k->ow > DIX_ONEHOT_MAX ||
        k->sr < 0 || k->sr > 1024) {
        dec_err(c, "X must be [N, C, H, W], rois [R, 4], output sizes positive");
        return false;
    }
    if (k->sr > 0)
        k->G = k->sr;
    else if (ir_is_const(c->g, rois))
        k->G = roi_max_grid(c, rois, k);
    else {
        dec_err(c, "unsupported: sampling_ratio 0 with runtime rois (the sample count depends "
                "on the roi sizes)");
        return false;
    }
    double work = (double)k->R * (double)(k->oh * k->ow) * (double)(k->G * k->G * 4) *
                  (double)tx->dims[1];
    if (work > (double)DIX_ONEHOT_MAX * 4) {
        dec_err(c, "unsupported: RoiAlign gathers %.0f elements (too many)", work);
        return false;
    }
    return true;
}

/* RoiAlign(X, rois, batch_indices) -> [R, C, oh, ow]. */
bool dec_roi_align(DecCtx *c)
{
    ValId x = dec_in(c, 0), rois = dec_in(c, 1), bi = dec_in(c, 2);
    RoiCfg k;
    if (x == IR_NONE || rois == IR_NONE || bi == IR_NONE) {
        dec_err(c, "missing X, rois or batch_indices");
        return false;
    }
    IrType tx = *dec_ty(c, x);
    if (!roi_config(c, &tx, rois, &k))
        return false;
    int64_t N = tx.dims[0], C = tx.dims[1], H = tx.dims[2], W = tx.dims[3], G = k.G;
    ValId rf = dec_cast(c, rois, IR_DT_F32);
    ValId yi, yw, ym, xi, xw, xm;
    roi_axis(c, roi_col(c, rf, 1, &k), roi_col(c, rf, 3, &k), k.oh, H, &k, &yi, &yw, &ym);
    roi_axis(c, roi_col(c, rf, 0, &k), roi_col(c, rf, 2, &k), k.ow, W, &k, &xi, &xw, &xm);
    /* joint [R, oh, ow, Gy, Gx, 2, 2] */
    int64_t R = k.R, ydim[7] = {R, k.oh, 1, G, 1, 2, 1}, xdim[7] = {R, 1, k.ow, 1, G, 1, 2};
    int64_t bdim[7] = {R, 1, 1, 1, 1, 1, 1};
    ValId b = dec_bin_s(c, IR_BIN_MUL, dec_reshape(c, dec_cast(c, bi, IR_DT_I64), bdim, 7), (double)(H * W));
    ValId idx = dec_bin(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, dec_reshape(c, yi, ydim, 7), (double)W),
                        dec_reshape(c, xi, xdim, 7));
    idx = dec_bin(c, IR_BIN_ADD, idx, b);
    ValId w = dec_bin(c, IR_BIN_MUL, dec_reshape(c, yw, ydim, 7), dec_reshape(c, xw, xdim, 7));
    int64_t perm[4] = {0, 2, 3, 1}, rows[2] = {N * H * W, C}, full[7] = {R, k.oh, k.ow, G, G, 2, 2};
    int64_t w8[8] = {R, k.oh, k.ow, G, G, 2, 2, 1};
    ValId xr = dec_reshape(c, dec_transpose(c, dec_cast(c, x, IR_DT_F32), perm), rows, 2);
    ValId g = dec_gather(c, xr, dec_expand(c, idx, full, 7), 0); /* [R,oh,ow,G,G,2,2,C] */
    g = dec_bin(c, IR_BIN_MUL, g, dec_reshape(c, dec_expand(c, w, full, 7), w8, 8));
    int64_t my[8] = {R, 1, 1, G, 1, 1}, mx[8] = {R, 1, 1, 1, G, 1};
    ValId smask = dec_bin(c, IR_BIN_MUL, dec_reshape(c, ym, my, 6), dec_reshape(c, xm, mx, 6));
    int64_t taps[2] = {5, 6}, samp[2] = {3, 4};
    ValId y;
    if (k.avg) {
        ValId s = dec_reduce(c, IR_RED_SUM, g, taps, 2, false); /* [R,oh,ow,G,G,C] */
        s = dec_reduce(c, IR_RED_SUM, dec_bin(c, IR_BIN_MUL, s, smask), samp, 2, false);
        int64_t r4[4] = {R, 1, 1, 1}, ax[2] = {3, 4};
        ValId cnt = dec_reduce(c, IR_RED_SUM, smask, ax, 2, false); /* [R,1,1,1] */
        y = dec_bin(c, IR_BIN_DIV, s, dec_reshape(c, dec_bin_s(c, IR_BIN_MAX, cnt, 1.0), r4, 4));
    } else {
        ValId m = dec_reduce(c, IR_RED_MAX, g, taps, 2, false);
        ValId off = dec_bin_s(c, IR_BIN_MUL, dec_bin_s(c, IR_BIN_SUB, smask, 1.0), 3.0e38);
        m = dec_bin(c, IR_BIN_ADD, dec_bin(c, IR_BIN_MUL, m, smask), off);
        y = dec_reduce(c, IR_RED_MAX, m, samp, 2, false);
        int64_t r4[4] = {R, 1, 1, 1}, ax[2] = {3, 4}; /* no sample at all: 0 */
        ValId any = dec_bin_s(c, IR_BIN_GT, dec_reduce(c, IR_RED_SUM, smask, ax, 2, false), 0.0);
        y = dec_select(c, dec_reshape(c, any, r4, 4), y, dec_scalar(c->g, IR_DT_F32, 0.0));
    }
    int64_t back[4] = {0, 3, 1, 2};
    c->out[0] = dec_cast(c, dec_transpose(c, y, back), tx.dtype);
    return true;
}

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
    int64_t *pos = ir_alloc(c->g, sizeof(int64_t) * (size_t)(O * K));
    int64_t *rep = ir_alloc(c->g, sizeof(int64_t) * (size_t)(O * K));
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
    double *base = ir_alloc(c->g, sizeof(double) * (size_t)(K * O));
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
