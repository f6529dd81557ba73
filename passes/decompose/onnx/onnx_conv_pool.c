/* onnx_conv_pool.c: decomposition of ONNX convolutions (Conv, ConvTranspose) and
 * pools (MaxPool without Indices, AveragePool, LpPool and their Global forms):
 * explicit PAD, then CONV or WINDOW, or reductions over the spatial axes. MaxPool
 * with its Indices output is in onnx_kernel_taps.c. */
#include <math.h>
#include <string.h>

#include "onnx.h"

/* Spatial ints attribute `name` with n entries, or dflt everywhere when absent. */
static bool sp_ints(DecCtx *c, const char *name, int n, int64_t dflt, int64_t *out)
{
    const int64_t *v;
    int cnt = dec_aints(c, name, &v);
    if (cnt < 0) {
        for (int i = 0; i < n; i++)
            out[i] = dflt;
        return true;
    }
    if (cnt != n) {
        dec_err(c, "attribute %s has %d entries, expected %d", name, cnt, n);
        return false;
    }
    for (int i = 0; i < n; i++)
        out[i] = v[i];
    return true;
}

/* Every entry of v[n] is >= 1 (strides, dilations). */
static bool all_positive(DecCtx *c, const char *name, const int64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i] < 1) {
            dec_err(c, "%s[%d] is %lld, must be >= 1", name, i, (long long)v[i]);
            return false;
        }
    return true;
}

/* Padding of each spatial axis from auto_pad / pads (forward conv and pools); *sized
 * gets bit i when axis i's pads depend on its extent (auto_pad SAME with a stride: the
 * total is keff - 1 - (in - 1) mod s), so hold at this extent only. */
static bool resolve_pads(DecCtx *c, int nsp, const int64_t *in, const int64_t *k,
                         const int64_t *s, const int64_t *d, int64_t *lo, int64_t *hi,
                         int64_t *sized)
{
    *sized = 0;
    const char *ap = dec_as(c, "auto_pad", "NOTSET");
    int64_t pads[2 * IR_MAX_RANK];
    if (strcmp(ap, "NOTSET") == 0 || *ap == 0) {
        if (!sp_ints(c, "pads", 2 * nsp, 0, pads))
            return false;
        for (int i = 0; i < nsp; i++) {
            lo[i] = pads[i];
            hi[i] = pads[nsp + i];
            if (lo[i] < 0 || hi[i] < 0) {
                dec_err(c, "negative pads are not allowed");
                return false;
            }
        }
        return true;
    }
    bool upper = strcmp(ap, "SAME_UPPER") == 0, lower = strcmp(ap, "SAME_LOWER") == 0;
    if (!upper && !lower && strcmp(ap, "VALID") != 0) {
        dec_err(c, "unknown auto_pad '%s'", ap);
        return false;
    }
    for (int i = 0; i < nsp; i++) {
        lo[i] = hi[i] = 0;
        if (!upper && !lower)
            continue;
        int64_t out = (in[i] + s[i] - 1) / s[i], keff = (k[i] - 1) * d[i] + 1;
        int64_t total = (out - 1) * s[i] + keff - in[i];
        if (total < 0)
            total = 0;
        lo[i] = upper ? total / 2 : total - total / 2;
        hi[i] = total - lo[i];
        if (s[i] > 1 && keff > 1)
            *sized |= (int64_t)1 << i;
    }
    return true;
}

/* Common checks of x [N,C,spatial...] and w [M,*,k...]: ranks and kernel shape. */
static bool check_xw(DecCtx *c, ValId x, ValId w, int64_t *k)
{
    const IrType *tx = dec_ty(c, x), *tw = dec_ty(c, w);
    if (tx->rank < 3 || tw->rank != tx->rank) {
        dec_err(c, "input rank %d and weight rank %d must be equal and >= 3", tx->rank, tw->rank);
        return false;
    }
    int nsp = tx->rank - 2;
    const int64_t *ks;
    int nk = dec_aints(c, "kernel_shape", &ks);
    for (int i = 0; i < nsp; i++) {
        k[i] = tw->dims[i + 2];
        if (nk >= 0 && (nk != nsp || ks[i] != k[i])) {
            dec_err(c, "kernel_shape does not match the weight's spatial dims");
            return false;
        }
    }
    return true;
}

/* Conv: PAD (explicit or auto pads) + CONV + optional bias add. */
bool dec_conv(DecCtx *c)
{
    bool ok;
    if (dec_qdq_conv(c, &ok))
        return ok;
    return dec_conv_pad(c, 0.0);
}

bool dec_conv_pad(DecCtx *c, double pad_value)
{
    ValId x = dec_in(c, 0), w = dec_in(c, 1), b = dec_in(c, 2);
    int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], d[IR_MAX_RANK], lo[IR_MAX_RANK], hi[IR_MAX_RANK];
    int64_t sized;
    if (x == IR_NONE || w == IR_NONE || !check_xw(c, x, w, k)) {
        if (x == IR_NONE || w == IR_NONE)
            dec_err(c, "missing input or weight");
        return false;
    }
    const IrType *tx = dec_ty(c, x), *tw = dec_ty(c, w);
    int r = tx->rank, nsp = r - 2;
    int64_t group = dec_ai(c, "group", 1);
    if (!sp_ints(c, "strides", nsp, 1, s) || !sp_ints(c, "dilations", nsp, 1, d) ||
        !all_positive(c, "strides", s, nsp) || !all_positive(c, "dilations", d, nsp) ||
        !resolve_pads(c, nsp, tx->dims + 2, k, s, d, lo, hi, &sized))
        return false;
    if (group < 1 || tx->dims[1] != tw->dims[1] * group || tw->dims[0] % group != 0) {
        dec_err(c, "group %lld does not match input channels %lld and weight shape", (long long)group,
                (long long)tx->dims[1]);
        return false;
    }
    int64_t pads[2 * IR_MAX_RANK] = {0};
    for (int i = 0; i < nsp; i++) {
        pads[2 + i] = lo[i];
        pads[r + 2 + i] = hi[i];
        if (tx->dims[2 + i] + lo[i] + hi[i] < (k[i] - 1) * d[i] + 1) {
            dec_err(c, "kernel extent %lld is larger than the padded input %lld on axis %d",
                    (long long)((k[i] - 1) * d[i] + 1), (long long)(tx->dims[2 + i] + lo[i] + hi[i]), 2 + i);
            return false;
        }
    }
    ValId y = !sized && dec_conv3d_ok(c, x, group)
                  ? dec_conv3d_2d(c, x, w, s, d, lo, hi, pad_value) : IR_NONE;
    if (y == IR_NONE) {
        ValId xp = dec_pad_at(c, x, pads, NULL, pad_value, sized << 2);
        IrAttr a[3] = {ir_attr_ints_ref("strides", s, nsp), ir_attr_ints_ref("dilations", d, nsp),
                       ir_attr_int("group", group)};
        ValId in[2] = {xp, w};
        y = dec_op(c, IR_OP_CONV, in, 2, a, 3);
    }
    if (b != IR_NONE)
        y = dec_bin(c, IR_BIN_ADD, y, dec_chan_view(c, b, r));
    c->out[0] = y;
    return true;
}

/* ConvTranspose weights W[C, M/g, k...] -> forward-conv weights W'[M, C/g, k...]
 * with the kernel flipped: W'[g*Mg+m, ci, k] = W[g*Cg+ci, m, K-1-k]. */
static ValId flip_weights(DecCtx *c, ValId w, int64_t group)
{
    const IrType *tw = dec_ty(c, w);
    int r = tw->rank, nsp = r - 2;
    int64_t cg = tw->dims[0] / group, mg = tw->dims[1];
    int64_t d5[IR_MAX_RANK + 1], perm[IR_MAX_RANK + 1];
    d5[0] = group;
    d5[1] = cg;
    d5[2] = mg;
    for (int i = 0; i < nsp; i++)
        d5[3 + i] = tw->dims[2 + i];
    for (int i = 0; i < nsp + 3; i++)
        perm[i] = i;
    perm[1] = 2;
    perm[2] = 1;
    ValId v = dec_reshape(c, w, d5, nsp + 3);
    v = dec_transpose(c, v, perm);
    int64_t d4[IR_MAX_RANK], st[IR_MAX_RANK], sp[IR_MAX_RANK];
    d4[0] = group * mg;
    d4[1] = cg;
    for (int i = 0; i < nsp; i++)
        d4[2 + i] = tw->dims[2 + i];
    v = dec_reshape(c, v, d4, r);
    for (int i = 0; i < r; i++) {
        st[i] = i < 2 ? 0 : d4[i] - 1;
        sp[i] = i < 2 ? 1 : -1;
    }
    return dec_slice(c, v, st, sp, d4);
}

/* Pads (lo, hi) of a ConvTranspose from output_shape / auto_pad / pads. */
static bool convt_pads(DecCtx *c, const IrType *tx, const int64_t *k, const int64_t *s,
                       const int64_t *d, const int64_t *op, int64_t *lo, int64_t *hi)
{
    int nsp = tx->rank - 2;
    const char *ap = dec_as(c, "auto_pad", "NOTSET");
    const int64_t *os;
    int nos = dec_aints(c, "output_shape", &os);
    bool same = strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0;
    if (nos < 0 && !same) {
        int64_t pads[2 * IR_MAX_RANK];
        if (strcmp(ap, "VALID") == 0 && !dec_has_attr(c, "pads")) {
            for (int i = 0; i < nsp; i++)
                lo[i] = hi[i] = 0;
            return true;
        }
        if (!sp_ints(c, "pads", 2 * nsp, 0, pads))
            return false;
        for (int i = 0; i < nsp; i++) {
            lo[i] = pads[i];
            hi[i] = pads[nsp + i];
        }
        return true;
    }
    if (nos >= 0 && nos != nsp && nos != tx->rank) {
        dec_err(c, "output_shape has %d entries, expected %d", nos, nsp);
        return false;
    }
    for (int i = 0; i < nsp; i++) {
        int64_t in = tx->dims[2 + i];
        int64_t out = nos >= 0 ? os[nos == nsp ? i : i + 2] : in * s[i];
        int64_t total = s[i] * (in - 1) + op[i] + (k[i] - 1) * d[i] + 1 - out;
        int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2); /* floor(total / 2) */
        if (strcmp(ap, "SAME_UPPER") == 0) {
            lo[i] = half;
            hi[i] = total - half;
        } else {
            lo[i] = total - half;
            hi[i] = half;
        }
    }
    return true;
}

/* ConvTranspose as a forward conv: PAD with interior = stride-1 and edge pads
 * (K_eff-1-pad_lo, K_eff-1-pad_hi+output_padding), then CONV (stride 1) with
 * flipped, transposed weights; then the bias. */
bool dec_conv_transpose(DecCtx *c)
{
    ValId x = dec_in(c, 0), w = dec_in(c, 1), b = dec_in(c, 2);
    int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], d[IR_MAX_RANK], op[IR_MAX_RANK];
    int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK];
    if (x == IR_NONE || w == IR_NONE) {
        dec_err(c, "missing input or weight");
        return false;
    }
    if (!check_xw(c, x, w, k))
        return false;
    const IrType *tx = dec_ty(c, x), *tw = dec_ty(c, w);
    int r = tx->rank, nsp = r - 2;
    int64_t group = dec_ai(c, "group", 1);
    if (!sp_ints(c, "strides", nsp, 1, s) || !sp_ints(c, "dilations", nsp, 1, d) ||
        !sp_ints(c, "output_padding", nsp, 0, op) || !all_positive(c, "strides", s, nsp) ||
        !all_positive(c, "dilations", d, nsp))
        return false;
    if (group < 1 || tx->dims[1] != tw->dims[0] || tw->dims[0] % group != 0) {
        dec_err(c, "group %lld does not match input channels %lld and weight shape", (long long)group,
                (long long)tx->dims[1]);
        return false;
    }
    if (!convt_pads(c, tx, k, s, d, op, lo, hi))
        return false;
    int64_t pads[2 * IR_MAX_RANK] = {0}, interior[IR_MAX_RANK] = {0};
    for (int i = 0; i < nsp; i++) {
        int64_t keff = (k[i] - 1) * d[i] + 1;
        pads[2 + i] = keff - 1 - lo[i];
        pads[r + 2 + i] = keff - 1 - hi[i] + op[i];
        interior[2 + i] = s[i] - 1;
        int64_t out = s[i] * (tx->dims[2 + i] - 1) + op[i] + keff - lo[i] - hi[i];
        if (out < 1) {
            dec_err(c, "output size %lld on axis %d is not positive", (long long)out, 2 + i);
            return false;
        }
    }
    if (dec_convt_blocks_ok(c, x, nsp, group, k, s, d, lo, hi, op)) {
        ValId y = dec_convt_blocks(c, x, w, nsp);
        c->out[0] = b != IR_NONE ? dec_bin(c, IR_BIN_ADD, y, dec_chan_view(c, b, r)) : y;
        return true;
    }
    /* output_shape fixes each axis's output, its pads computed from the extent */
    int64_t sized = dec_has_attr(c, "output_shape") ? ((int64_t)1 << nsp) - 1 : 0;
    ValId xp = dec_pad_at(c, x, pads, interior, 0.0, sized << 2);
    int64_t ones[IR_MAX_RANK];
    for (int i = 0; i < nsp; i++)
        ones[i] = 1;
    IrAttr a[3] = {ir_attr_ints_ref("strides", ones, nsp), ir_attr_ints_ref("dilations", d, nsp),
                   ir_attr_int("group", group)};
    ValId in[2] = {xp, flip_weights(c, w, group)};
    ValId y = dec_op(c, IR_OP_CONV, in, 2, a, 3);
    if (b != IR_NONE)
        y = dec_bin(c, IR_BIN_ADD, y, dec_chan_view(c, b, r));
    c->out[0] = y;
    return true;
}

/* Number of window taps j (0 <= j < k) with lo <= o*s + j*d < hi. */
static int64_t taps_in(int64_t o, int64_t k, int64_t s, int64_t d, int64_t lo, int64_t hi)
{
    int64_t n = 0;
    for (int64_t j = 0; j < k; j++) {
        int64_t q = o * s + j * d;
        n += q >= lo && q < hi;
    }
    return n;
}

/* AveragePool divisor: 1/count per output position as a constant [1,1,out...]
 * (or a scalar when every window counts the same), tagged IR_EXT_BOUND with the input
 * x: its counts at the border are those of the bound's extents. */
static ValId avg_scale(DecCtx *c, ValId x, IrDType dt, int nsp, const int64_t *out,
                       const int64_t *in, const int64_t *k, const int64_t *s, const int64_t *d,
                       const int64_t *lo, const int64_t *hi, bool incl, bool counts)
{
    int64_t dims[IR_MAX_RANK], n = 1;
    dims[0] = dims[1] = 1;
    for (int i = 0; i < nsp; i++) {
        dims[2 + i] = out[i];
        n *= out[i];
    }
    double *v = ir_scratch(c->g, sizeof(double) * (size_t)(n + 1));
    bool uniform = true;
    for (int64_t e = 0; e < n; e++) {
        int64_t rem = e, cnt = 1;
        for (int i = nsp - 1; i >= 0; i--) {
            int64_t o = rem % out[i];
            rem /= out[i];
            int64_t a = incl ? 0 : lo[i], b = incl ? lo[i] + in[i] + hi[i] : lo[i] + in[i];
            cnt *= taps_in(o, k[i], s[i], d[i], a, b);
        }
        v[e] = counts ? (double)(cnt > 0 ? cnt : 1) : cnt > 0 ? 1.0 / (double)cnt : 0.0;
        uniform &= v[e] == v[0];
    }
    if (uniform)
        return dec_scalar(c->g, dt, v[0]);
    ValId t = dec_const(c->g, dt, dims, nsp + 2, v);
    ir_ext_set_uniform(c->g, t, x, IR_EXT_BOUND);   /* no prefix of a smaller size's */
    return t;
}

/* Lowest value of a dtype, used to pad MaxPool inputs. */
static double lowest(IrDType t)
{
    switch (t) {
    case IR_DT_I8: return -128;
    case IR_DT_I16: return -32768;
    case IR_DT_I32: return -2147483648.0;
    case IR_DT_I64: return -9.2e18;
    case IR_DT_U8: case IR_DT_U16: case IR_DT_U32: case IR_DT_U64: case IR_DT_BOOL: return 0;
    default: return -INFINITY;
    }
}

/* Pool geometry: per-axis pads, output size and the high pad that gives it (hi_eff:
 * without symbolic dimensions, what the last window reads, so none unread is made; in a
 * graph with them, one that gives the output size at every extent of the axis: the
 * model's high pad, plus s - 1 with ceil_mode, which rounds up as ceil does, where the
 * last window always starts inside the input or the low pad (hi < keff - s + 1), else
 * the axis is marked in *sized (its pads hold at this extent only). */
static bool pool_geometry(DecCtx *c, const IrType *tx, const int64_t *k, const int64_t *s,
                          const int64_t *d, int64_t *lo, int64_t *hi, int64_t *hi_eff,
                          int64_t *out, int64_t *sized)
{
    int nsp = tx->rank - 2;
    bool ceil_mode = dec_ai(c, "ceil_mode", 0) != 0;
    if (!resolve_pads(c, nsp, tx->dims + 2, k, s, d, lo, hi, sized))
        return false;
    for (int i = 0; i < nsp; i++) {
        int64_t in = tx->dims[2 + i], keff = (k[i] - 1) * d[i] + 1;
        int64_t tot = in + lo[i] + hi[i] - keff;
        if (tot < 0) {
            dec_err(c, "kernel extent %lld is larger than the padded input %lld on axis %d",
                    (long long)keff, (long long)(in + lo[i] + hi[i]), 2 + i);
            return false;
        }
        out[i] = (ceil_mode ? (tot + s[i] - 1) / s[i] : tot / s[i]) + 1;
        if (ceil_mode && (out[i] - 1) * s[i] >= in + lo[i])
            out[i]--;
        hi_eff[i] = (out[i] - 1) * s[i] + keff - in - lo[i];
        if (!c->g->nsymdims)
            continue;
        if (!ceil_mode)
            hi_eff[i] = hi[i];
        else if (hi[i] + s[i] - 1 < keff)
            hi_eff[i] = hi[i] + s[i] - 1;
        else
            *sized |= (int64_t)1 << i;
    }
    return true;
}

/* MaxPool, AveragePool, LpPool: PAD then WINDOW (then the divisor or root). */
/* MaxPool, AveragePool (its sums times 1 / count, or with divide over the count),
 * LpPool. */
static bool pool_run(DecCtx *c, bool divide)
{
    const char *op = c->n->foreign.op_type;
    ValId x = dec_in(c, 0);
    if (x == IR_NONE)
        return false;
    const IrType *tx = dec_ty(c, x);
    int r = tx->rank, nsp = r - 2;
    int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], d[IR_MAX_RANK], lo[IR_MAX_RANK], hi[IR_MAX_RANK];
    int64_t hie[IR_MAX_RANK], out[IR_MAX_RANK], sized;
    if (nsp < 1) {
        dec_err(c, "input must have rank >= 3, got %d", r);
        return false;
    }
    if (dec_out_used(c, 1)) {
        dec_err(c, "unsupported: the Indices output of MaxPool");
        return false;
    }
    if (!sp_ints(c, "kernel_shape", nsp, 0, k) || !all_positive(c, "kernel_shape", k, nsp) ||
        !sp_ints(c, "strides", nsp, 1, s) || !sp_ints(c, "dilations", nsp, 1, d) ||
        !all_positive(c, "strides", s, nsp) || !all_positive(c, "dilations", d, nsp) ||
        !pool_geometry(c, tx, k, s, d, lo, hi, hie, out, &sized))
        return false;
    int64_t pads[2 * IR_MAX_RANK] = {0};
    for (int i = 0; i < nsp; i++) {
        pads[2 + i] = lo[i];
        pads[r + 2 + i] = hie[i];
    }
    bool is_max = strcmp(op, "MaxPool") == 0, is_lp = strcmp(op, "LpPool") == 0;
    double p = is_lp ? (double)dec_ai(c, "p", 2) : 1.0;
    ValId v = x;
    if (is_lp)
        v = p == 2 ? dec_bin(c, IR_BIN_MUL, x, x) : p == 1 ? dec_un(c, IR_UN_ABS, x)
                   : dec_bin_s(c, IR_BIN_POW, dec_un(c, IR_UN_ABS, x), p);
    bool is_avg = strcmp(op, "AveragePool") == 0;
    if (is_avg && dec_ai(c, "ceil_mode", 0))   /* a last window's divisor moves with it */
        sized = ((int64_t)1 << nsp) - 1;
    v = dec_pad_at(c, v, pads, NULL, is_max ? lowest(tx->dtype) : 0.0, sized << 2);
    ValId y = dec_pool_window(c, v, is_max ? IR_RED_MAX : IR_RED_SUM, k, s, d, nsp);
    if (is_avg) {
        bool incl = dec_ai(c, "count_include_pad", 0) != 0;
        y = dec_bin(c, divide ? IR_BIN_DIV : IR_BIN_MUL, y,
                    avg_scale(c, x, tx->dtype, nsp, out, tx->dims + 2, k, s, d, lo, hi, incl,
                              divide));
    } else if (is_lp && p != 1) {
        y = p == 2 ? dec_un(c, IR_UN_SQRT, y) : dec_bin_s(c, IR_BIN_POW, y, 1.0 / p);
    }
    c->out[0] = y;
    return true;
}

bool dec_pool(DecCtx *c)
{
    return pool_run(c, false);
}

bool dec_avg_pool_divided(DecCtx *c)
{
    return pool_run(c, true);
}

/* GlobalAveragePool / GlobalMaxPool / GlobalLpPool: reductions over spatial axes. */
bool dec_global_pool(DecCtx *c)
{
    const char *op = c->n->foreign.op_type;
    ValId x = dec_in(c, 0);
    if (x == IR_NONE)
        return false;
    int r = dec_ty(c, x)->rank;
    int64_t axes[IR_MAX_RANK];
    for (int i = 2; i < r; i++)
        axes[i - 2] = i;
    if (r < 3) {
        dec_err(c, "input must have rank >= 3, got %d", r);
        return false;
    }
    if (strcmp(op, "GlobalAveragePool") == 0) {
        c->out[0] = dec_mean(c, x, axes, r - 2, true);
    } else if (strcmp(op, "GlobalMaxPool") == 0) {
        c->out[0] = dec_reduce(c, IR_RED_MAX, x, axes, r - 2, true);
    } else {
        double p = (double)dec_ai(c, "p", 2);
        ValId v = p == 2 ? dec_bin(c, IR_BIN_MUL, x, x) : dec_bin_s(c, IR_BIN_POW, dec_un(c, IR_UN_ABS, x), p);
        v = dec_reduce(c, IR_RED_SUM, v, axes, r - 2, true);
        c->out[0] = p == 2 ? dec_un(c, IR_UN_SQRT, v) : dec_bin_s(c, IR_BIN_POW, v, 1.0 / p);
    }
    return true;
}
