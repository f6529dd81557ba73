/* aten_pool.c: ATen pooling and resampling: max/avg pools (PAD + WINDOW), adaptive
 * pools (WINDOW when the sizes divide, else a pooling matrix per axis), nearest and
 * (bi)linear and bicubic upsampling (EXPAND or GATHER per axis), pixel_shuffle/unshuffle, grid_sampler (the
 * sampling of ONNX GridSample).
 *
 * Output sizes are the ones torch.export recorded; the pools derive their end padding
 * from them, which covers ceil_mode.
 */
#include <math.h>
#include <string.h>

#include "aten.h"
#include "passes/decompose/onnx/onnx.h"

/* Number of spatial dims from the op name ("max_pool2d" -> 2). */
static int name_dims(const DecCtx *c)
{
    char buf[128];
    const char *nm = aten_base(c->n->foreign.op_type, buf, sizeof buf);
    const char *d = strpbrk(nm, "123");
    return d && d[1] == 'd' ? *d - '0' : 0;
}

/* Pool geometry: kernel, stride (default kernel), padding, dilation and the end
 * padding that gives the recorded output size. */
typedef struct {
    int nsp, rank;
    int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], d[IR_MAX_RANK], lo[IR_MAX_RANK], hi[IR_MAX_RANK];
    int64_t in[IR_MAX_RANK], out[IR_MAX_RANK];
} PoolGeo;

static bool pool_geometry(DecCtx *c, ValId x, bool dilated, PoolGeo *g)
{
    static const int64_t zero[IR_MAX_RANK] = {0}, one[IR_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
    const IrType *tx = dec_ty(c, x), *o = aten_oty(c, 0);
    g->nsp = name_dims(c);
    g->rank = tx->rank;
    if (g->nsp < 1 || tx->rank < g->nsp + 1 || o->rank != tx->rank) {
        dec_err(c, "pool input of rank %d does not fit a %d-D pool", tx->rank, g->nsp);
        return false;
    }
    if (aten_ints(c, "kernel_size", g->k, IR_MAX_RANK, g->nsp) != g->nsp ||
        !aten_sp_ints(c, "stride", g->nsp, g->k, g->s) ||
        !aten_sp_ints(c, "padding", g->nsp, zero, g->lo) ||
        !aten_sp_ints(c, "dilation", g->nsp, one, g->d)) {
        if (!ir_failed(c->g))
            dec_err(c, "invalid kernel_size, stride, padding or dilation");
        return false;
    }
    for (int i = 0; i < g->nsp; i++) {
        int ax = tx->rank - g->nsp + i;
        g->in[i] = tx->dims[ax];
        g->out[i] = o->dims[ax];
        if (!dilated)
            g->d[i] = 1;
        if (g->k[i] < 1 || g->s[i] < 1 || g->d[i] < 1 || g->lo[i] < 0 || g->out[i] < 1) {
            dec_err(c, "invalid pool geometry on spatial axis %d", i);
            return false;
        }
        g->hi[i] = (g->out[i] - 1) * g->s[i] + (g->k[i] - 1) * g->d[i] + 1 - g->in[i] - g->lo[i];
    }
    return true;
}

/* PAD (value v) then WINDOW fn with the geometry. */
static ValId pool_window(DecCtx *c, ValId x, const PoolGeo *g, int fn, double v)
{
    int64_t pads[2 * IR_MAX_RANK] = {0};
    for (int i = 0; i < g->nsp; i++) {
        pads[g->rank - g->nsp + i] = g->lo[i];
        pads[2 * g->rank - g->nsp + i] = g->hi[i];
    }
    return dec_pool_window(c, dec_pad(c, x, pads, NULL, v), fn, g->k, g->s, g->d, g->nsp);
}

/* The smallest value of a dtype (the max-pool padding). */
static double lowest(IrDType t)
{
    if (ir_dtype_is_float(t))
        return -INFINITY;
    switch (t) {
    case IR_DT_I8: return -128;
    case IR_DT_I16: return -32768;
    case IR_DT_I32: return -2147483648.0;
    case IR_DT_I64: return -9.2e18;
    default: return 0;
    }
}

/* max_pool1d/2d/3d (+ _with_indices, whose indices output is not supported). */
bool aten_max_pool(DecCtx *c)
{
    ValId x;
    PoolGeo g;
    if (!aten_need(c, "self", &x) || !pool_geometry(c, x, true, &g))
        return false;
    c->out[0] = pool_window(c, x, &g, IR_RED_MAX, lowest(dec_ty(c, x)->dtype));
    return true;
}

/* Taps of one axis that the divisor counts for output o (torch's avg_pool rules). */
static int64_t avg_count(const PoolGeo *g, int i, int64_t o, bool include_pad)
{
    int64_t start = o * g->s[i] - g->lo[i], end = start + g->k[i];
    if (end > g->in[i] + g->lo[i])
        end = g->in[i] + g->lo[i];
    if (!include_pad) {
        if (start < 0)
            start = 0;
        if (end > g->in[i])
            end = g->in[i];
    }
    return end > start ? end - start : 1;
}

/* 1/divisor for every output position: a scalar when they are all equal. */
static ValId avg_scale(DecCtx *c, const PoolGeo *g, IrDType t, bool include_pad)
{
    double ov;
    if (aten_num(c, "divisor_override", &ov) && ov != 0)
        return dec_scalar(c->g, t, 1.0 / ov);
    int64_t n = 1;
    for (int i = 0; i < g->nsp; i++)
        n *= g->out[i];
    double *v = ir_scratch(c->g, (size_t)(n + 1) * sizeof *v);
    bool uniform = true;
    if (n > ATEN_MAX_CONST) {
        dec_err(c, "average pool with %lld output positions is too large", (long long)n);
        return IR_NONE;
    }
    for (int64_t p = 0; p < n; p++) {
        int64_t rem = p, cnt = 1;
        for (int i = g->nsp - 1; i >= 0; i--) {
            cnt *= avg_count(g, i, rem % g->out[i], include_pad);
            rem /= g->out[i];
        }
        v[p] = 1.0 / (double)cnt;
        uniform &= v[p] == v[0];
    }
    return uniform ? dec_scalar(c->g, t, v[0]) : dec_const(c->g, t, g->out, g->nsp, v);
}

/* avg_pool1d/2d/3d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
 * divisor_override). */
bool aten_avg_pool(DecCtx *c)
{
    ValId x;
    PoolGeo g;
    if (!aten_need(c, "self", &x) || !pool_geometry(c, x, false, &g))
        return false;
    IrDType t = dec_ty(c, x)->dtype;
    ValId scale = avg_scale(c, &g, t, dec_ai(c, "count_include_pad", 1));
    if (scale == IR_NONE)
        return false;
    c->out[0] = dec_bin(c, IR_BIN_MUL, pool_window(c, x, &g, IR_RED_SUM, 0.0), scale);
    return true;
}

/* Adaptive average pooling along one axis as a matmul with a [in, out] matrix. */
static ValId adaptive_axis(DecCtx *c, ValId x, int ax, int64_t out)
{
    const IrType *t = dec_ty(c, x);
    int r = t->rank;
    int64_t in = t->dims[ax], perm[IR_MAX_RANK], dims[2] = {in, out};
    if (in * out > ATEN_MAX_CONST) {
        dec_err(c, "adaptive pool from %lld to %lld elements is too large", (long long)in,
                (long long)out);
        return IR_NONE;
    }
    double *m = ir_scratch(c->g, (size_t)(in * out + 1) * sizeof *m);
    for (int64_t o = 0; o < out; o++) {
        int64_t st = (o * in) / out, en = ((o + 1) * in + out - 1) / out;
        for (int64_t i = st; i < en; i++)
            m[i * out + o] = 1.0 / (double)(en - st);
    }
    for (int i = 0; i < r; i++)
        perm[i] = i;
    perm[ax] = r - 1;
    perm[r - 1] = ax;
    ValId y = dec_transpose(c, x, perm);
    y = ir_matmul(c->g, y, dec_const(c->g, t->dtype, dims, 2, m), c->o);
    return dec_transpose(c, y, perm);
}

/* adaptive_avg_pool1d/2d/3d, adaptive_max_pool1d/2d (output_size): an output of one
 * element a spatial axis is a mean (max) over them, as GlobalAveragePool is; a size
 * dividing the input a window; else average pooling as products by averaging matrices. */
bool aten_adaptive_pool(DecCtx *c)
{
    char buf[128];
    bool is_max = strstr(aten_base(c->n->foreign.op_type, buf, sizeof buf), "max") != NULL;
    ValId x;
    if (!aten_need(c, "self", &x))
        return false;
    const IrType *tx = dec_ty(c, x), *o = aten_oty(c, 0);
    PoolGeo g = {.nsp = name_dims(c), .rank = tx->rank};
    bool divides = true;
    if (g.nsp < 1 || tx->rank < g.nsp + 1 || o->rank != tx->rank) {
        dec_err(c, "adaptive pool input of rank %d does not fit a %d-D pool", tx->rank, g.nsp);
        return false;
    }
    int64_t axes[IR_MAX_RANK];
    bool global = true;
    for (int i = 0; i < g.nsp; i++) {
        int ax = tx->rank - g.nsp + i;
        g.in[i] = tx->dims[ax], g.out[i] = o->dims[ax];
        divides &= g.out[i] > 0 && g.in[i] % g.out[i] == 0;
        g.k[i] = g.s[i] = divides ? g.in[i] / g.out[i] : 1;
        g.d[i] = 1, g.lo[i] = g.hi[i] = 0;
        axes[i] = ax;
        global &= g.out[i] == 1;
    }
    if (global) {      /* a reduction over every spatial axis: exact at any (dynamic) size */
        c->out[0] = is_max ? dec_reduce(c, IR_RED_MAX, x, axes, g.nsp, true)
                           : dec_mean(c, x, axes, g.nsp, true);
        return true;
    }
    if (divides) {
        ValId s = pool_window(c, x, &g, is_max ? IR_RED_MAX : IR_RED_SUM, 0.0);
        double n = 1;
        for (int i = 0; i < g.nsp; i++)
            n *= (double)g.k[i];
        c->out[0] = is_max || n == 1 ? s : dec_bin_s(c, IR_BIN_MUL, s, 1.0 / n);
        return true;
    }
    if (is_max || !ir_dtype_is_float(tx->dtype)) {
        dec_err(c, "adaptive pooling whose input size is not a multiple of the output size "
                "is supported only for float average pooling");
        return false;
    }
    for (int i = 0; i < g.nsp && x != IR_NONE; i++)
        x = adaptive_axis(c, x, tx->rank - g.nsp + i, g.out[i]);
    c->out[0] = x;
    return x != IR_NONE;
}

/* Scale of axis i from scale_factors / scales_* (0 when not given). */
static double given_scale(const DecCtx *c, int i, int nsp)
{
    const IrAttr *a = ir_attr_find(c->n, "scale_factors");
    if (a && a->kind == IR_ATTR_FLOATS && (int)a->n == nsp)
        return a->floats[i];
    static const char *const names3[] = {"scales_d", "scales_h", "scales_w"};
    const char *nm = nsp == 1 ? "scales" : names3[3 - nsp + i];
    double v;
    return aten_num(c, nm, &v) ? v : 0;
}

/* Nearest-neighbour resampling of axis ax from in to out elements ("exact": the
 * source of output o is floor((o + 0.5) * scale), else floor(o * scale)). */
/* Whether the upsampling of axis ax of x to out elements (scale factor sf, 0: none
 * given) follows a bounded symbolic dimension (dec_sym_*): a graph with such
 * dimensions, an integer factor, not align_corners (whose coordinates depend on the
 * input's length); the last index at the actual length into *last, else IR_NONE. */
static bool sym_factor(DecCtx *c, ValId x, int ax, int64_t out, double sf, bool align,
                       ValId *last)
{
    int64_t in = dec_ty(c, x)->dims[ax];
    bool follow = c->g->nsymdims && !align && in > 1 && out % in == 0 &&
                  (sf == 0 || sf == (double)(out / in));
    *last = follow ? dec_sym_last(c, x, ax) : IR_NONE;
    return follow;
}

/* y, the upsampling of x's axis ax to out elements, as lying along that axis times the
 * factor when it follows a symbolic dimension (last given). */
static ValId sym_result(DecCtx *c, ValId y, ValId x, int ax, int64_t out, ValId last)
{
    return last == IR_NONE ? y : dec_sym_like(c, y, x, ax, out / dec_ty(c, x)->dims[ax]);
}

static ValId nearest_axis(DecCtx *c, ValId x, int ax, int64_t out, double sf, bool exact)
{
    const IrType *t = dec_ty(c, x);
    int64_t in = t->dims[ax];
    ValId last;
    if (in == out)
        return x;
    bool sym = sym_factor(c, x, ax, out, sf, false, &last);
    if (!sym && out % in == 0 && (sf == 0 || sf == (double)(out / in))) { /* repeat each */
        exact = false; /* both rules pick the same sources here */
        int64_t d[IR_MAX_RANK + 1];
        int r = t->rank;
        for (int i = 0, k = 0; i < r; i++) {
            d[k++] = t->dims[i];
            if (i == ax)
                d[k++] = 1;
        }
        ValId y = dec_reshape(c, x, d, r + 1);
        d[ax + 1] = out / in;
        y = dec_expand(c, y, d, r + 1);
        int64_t o[IR_MAX_RANK];
        for (int i = 0; i < r; i++)
            o[i] = i == ax ? out : t->dims[i];
        return dec_reshape(c, y, o, r);
    }
    double scale = sf > 0 ? 1.0 / sf : (double)in / (double)out;
    int64_t *idx = ir_scratch(c->g, (size_t)(out + 1) * sizeof *idx);
    for (int64_t o = 0; o < out; o++) {
        int64_t s = (int64_t)floor(((double)o + (exact ? 0.5 : 0.0)) * scale);
        idx[o] = s < in - 1 ? s : in - 1;
    }
    return sym_result(c, dec_sym_gather(c, x, ax, out, idx, last), x, ax, out, last);
}

/* Linear interpolation of axis ax (torch's align_corners rules). */
static ValId linear_axis(DecCtx *c, ValId x, int ax, int64_t out, double sf, bool align)
{
    const IrType *t = dec_ty(c, x);
    int64_t in = t->dims[ax];
    ValId last;
    if (in == out)
        return x;
    bool sym = sym_factor(c, x, ax, out, sf, align, &last);
    int64_t *i0 = ir_scratch(c->g, (size_t)(out + 1) * sizeof *i0);
    int64_t *i1 = ir_scratch(c->g, (size_t)(out + 1) * sizeof *i1);
    double *lam = ir_scratch(c->g, (size_t)(out + 1) * sizeof *lam);
    double scale = align ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0)
                         : (sf > 0 ? 1.0 / sf : (double)in / (double)out);
    for (int64_t o = 0; o < out; o++) {
        double src = align ? (double)o * scale : ((double)o + 0.5) * scale - 0.5;
        if (src < 0)
            src = 0;
        int64_t f = (int64_t)floor(src);
        if (f > in - 1)
            f = in - 1;
        i0[o] = f;
        i1[o] = f + 1 < in || sym ? f + 1 : in - 1;    /* sym: clamped at the actual end */
        lam[o] = src - (double)f;
    }
    ValId a = dec_sym_gather(c, x, ax, out, i0, last);
    ValId b = dec_sym_gather(c, x, ax, out, i1, last);
    int64_t ld[IR_MAX_RANK];
    int lr = t->rank - ax;
    for (int i = 0; i < lr; i++)
        ld[i] = i == 0 ? out : 1;
    ValId l = dec_const(c->g, t->dtype, ld, lr, lam);
    ValId y = dec_bin(c, IR_BIN_ADD, a, dec_bin(c, IR_BIN_MUL, dec_bin(c, IR_BIN_SUB, b, a), l));
    return sym_result(c, y, x, ax, out, last);
}

/* Weights of the four taps f-1..f+2 of torch's cubic convolution (A = -0.75) at
 * fraction t past tap f. */
static void cubic_weights(double t, double *w)
{
    const double A = -0.75;
    double u = 1.0 - t;
    w[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
    w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    w[2] = ((A + 2) * u - (A + 3)) * u * u + 1;
    w[3] = ((A * (u + 1) - 5 * A) * (u + 1) + 8 * A) * (u + 1) - 4 * A;
}

/* Bicubic interpolation of axis ax (torch's upsample_bicubic2d: source coordinates
 * not clamped, taps clamped to the edge): four GATHERs weighted and summed. */
static ValId cubic_axis(DecCtx *c, ValId x, int ax, int64_t out, double sf, bool align)
{
    const IrType *t = dec_ty(c, x);
    int64_t in = t->dims[ax], ld[IR_MAX_RANK];
    ValId last;
    if (in == out)
        return x;
    sym_factor(c, x, ax, out, sf, align, &last);
    double scale = align ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0)
                         : (sf > 0 ? 1.0 / sf : (double)in / (double)out);
    int lr = t->rank - ax;
    for (int i = 0; i < lr; i++)
        ld[i] = i == 0 ? out : 1;
    ValId y = IR_NONE;
    for (int k = 0; k < 4; k++) {
        int64_t *idx = ir_scratch(c->g, (size_t)(out + 1) * sizeof *idx);
        double *wk = ir_scratch(c->g, (size_t)(out + 1) * sizeof *wk), w[4];
        for (int64_t o = 0; o < out; o++) {
            double src = align ? (double)o * scale : ((double)o + 0.5) * scale - 0.5;
            int64_t f = (int64_t)floor(src), j = f - 1 + k;
            cubic_weights(src - (double)f, w);
            idx[o] = j < 0 ? 0 : j > in - 1 ? in - 1 : j;
            wk[o] = w[k];
        }
        ValId g = dec_bin(c, IR_BIN_MUL, dec_sym_gather(c, x, ax, out, idx, last),
                          dec_const(c->g, t->dtype, ld, lr, wk));
        y = y == IR_NONE ? g : dec_bin(c, IR_BIN_ADD, y, g);
    }
    return sym_result(c, y, x, ax, out, last);
}

/* upsample_nearest1d/2d/3d, _upsample_nearest_exact1d/2d/3d, upsample_linear1d,
 * upsample_bilinear2d, upsample_bicubic2d (.vec/.default). Along a bounded symbolic
 * dimension by an integer factor the source indices clamp at the actual length and the
 * result follows the dimension (sym_factor), as onnx_resize.c does for Resize. */
bool aten_upsample(DecCtx *c)
{
    char buf[128];
    const char *nm = aten_base(c->n->foreign.op_type, buf, sizeof buf);
    bool linear = strstr(nm, "linear") != NULL, exact = strstr(nm, "exact") != NULL;
    bool cubic = strstr(nm, "bicubic") != NULL;
    ValId x = aten_in(c, "input");
    if (x == IR_NONE && !aten_need(c, "self", &x))
        return false;
    const IrType *o = aten_oty(c, 0);
    int nsp = name_dims(c), r = dec_ty(c, x)->rank;
    if (nsp < 1 || r != o->rank || r < nsp + 1) {
        dec_err(c, "upsample input of rank %d does not fit %d spatial dims", r, nsp);
        return false;
    }
    if ((linear || cubic) && !ir_dtype_is_float(dec_ty(c, x)->dtype)) {
        dec_err(c, "linear upsampling needs a float input");
        return false;
    }
    int order[IR_MAX_RANK];
    dec_resize_order(r, r - nsp, nsp, dec_ty(c, x)->dims, o->dims, order);
    for (int q = 0; q < nsp; q++) {
        int ax = order[q], i = ax - (r - nsp);
        double sf = given_scale(c, i, nsp);
        if (o->dims[ax] > ATEN_MAX_CONST) {
            dec_err(c, "upsampling to %lld elements per axis is too large",
                    (long long)o->dims[ax]);
            return false;
        }
        bool align = dec_ai(c, "align_corners", 0) != 0;
        x = cubic ? cubic_axis(c, x, ax, o->dims[ax], sf, align)
            : linear ? linear_axis(c, x, ax, o->dims[ax], sf, align)
                     : nearest_axis(c, x, ax, o->dims[ax], sf, exact);
    }
    c->out[0] = x;
    return true;
}

/* pixel_shuffle(upscale_factor) / pixel_unshuffle(downscale_factor) on the last three
 * dims [C, H, W]. */
bool aten_pixel_shuffle(DecCtx *c)
{
    ValId x;
    if (!aten_need(c, "self", &x))
        return false;
    const IrType *t = dec_ty(c, x), *o = aten_oty(c, 0);
    bool up = dec_has_attr(c, "upscale_factor");
    int64_t f = up ? dec_ai(c, "upscale_factor", 1) : dec_ai(c, "downscale_factor", 1);
    int r = t->rank, b = r - 3;
    if (r < 3 || r + 3 > IR_MAX_RANK || f < 1) {
        dec_err(c, "pixel shuffle needs rank 3..%d and a positive factor", IR_MAX_RANK - 3);
        return false;
    }
    int64_t d[IR_MAX_RANK], perm[IR_MAX_RANK];
    for (int i = 0; i < b; i++)
        d[i] = t->dims[i], perm[i] = i;
    int64_t C = t->dims[b], H = t->dims[b + 1], W = t->dims[b + 2];
    if (up) { /* [C*f*f, H, W] -> [C, f, f, H, W] -> [C, H, f, W, f] */
        int64_t s[5] = {C / (f * f), f, f, H, W}, p[5] = {0, 3, 1, 4, 2};
        for (int i = 0; i < 5; i++)
            d[b + i] = s[i], perm[b + i] = b + p[i];
    } else {  /* [C, H*f, W*f] -> [C, H, f, W, f] -> [C, f, f, H, W] */
        int64_t s[5] = {C, H / f, f, W / f, f}, p[5] = {0, 2, 4, 1, 3};
        for (int i = 0; i < 5; i++)
            d[b + i] = s[i], perm[b + i] = b + p[i];
    }
    ValId y = dec_transpose(c, dec_reshape(c, x, d, b + 5), perm);
    c->out[0] = dec_reshape(c, y, o->dims, o->rank);
    return true;
}

/* grid_sampler / grid_sampler_2d / grid_sampler_3d(input, grid, interpolation_mode
 * (0 bilinear, 1 nearest, 2 bicubic), padding_mode (0 zeros, 1 border, 2 reflection),
 * align_corners): the sampling of ONNX GridSample. */
bool aten_grid_sampler(DecCtx *c)
{
    static const DixMode modes[3] = {DIX_LINEAR, DIX_NEAREST, DIX_CUBIC};
    static const DixPad pads[3] = {DIX_PAD_ZEROS, DIX_PAD_BORDER, DIX_PAD_REFLECT};
    ValId x, grid;
    if (!aten_need(c, "input", &x) || !aten_need(c, "grid", &grid))
        return false;
    int64_t m = dec_ai(c, "interpolation_mode", 0), p = dec_ai(c, "padding_mode", 0);
    if (m < 0 || m > 2 || p < 0 || p > 2) {
        dec_err(c, "unknown interpolation_mode %lld or padding_mode %lld", (long long)m,
                (long long)p);
        return false;
    }
    c->out[0] = dec_grid_sample_core(c, x, grid, modes[m], pads[p],
                                     dec_ai(c, "align_corners", 0) != 0);
    return c->out[0] != IR_NONE;
}

/* aten.im2col (nn.Unfold): [N,] C, H, W -> [N,] C*kh*kw, L, the L = oh * ow blocks of
 * the zero-padded input in row-major order: for every kernel tap (i, j), row-major
 * behind its channel, a SLICE of the padded input at (i*dh, j*dw) with the window's
 * strides, the taps stacked on a new axis after the channel's. */
bool aten_im2col(DecCtx *c)
{
    static const int64_t one[2] = {1, 1}, zero[2] = {0, 0};
    ValId x;
    if (!aten_need(c, "self", &x))
        return false;
    const IrType *tx = dec_ty(c, x);
    int r = tx->rank;
    int64_t k[2], d[2], p[2], s[2];
    if (r != 3 && r != 4) {
        dec_err(c, "input of rank %d (3 or 4 expected)", r);
        return false;
    }
    if (aten_ints(c, "kernel_size", k, 2, 2) != 2 || !aten_sp_ints(c, "dilation", 2, one, d) ||
        !aten_sp_ints(c, "padding", 2, zero, p) || !aten_sp_ints(c, "stride", 2, one, s)) {
        if (!ir_failed(c->g))
            dec_err(c, "invalid kernel_size, dilation, padding or stride");
        return false;
    }
    int64_t n = r == 4 ? tx->dims[0] : 1, ch = tx->dims[r - 3], o[2];
    for (int i = 0; i < 2; i++) {
        o[i] = k[i] < 1 || d[i] < 1 || s[i] < 1 || p[i] < 0 ? 0
               : (tx->dims[r - 2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
        if (o[i] < 1) {
            dec_err(c, "invalid im2col geometry on spatial axis %d", i);
            return false;
        }
    }
    if (k[0] * k[1] > ATEN_MAX_LIST) {
        dec_err(c, "a kernel of %lld taps (at most %d)", (long long)(k[0] * k[1]), ATEN_MAX_LIST);
        return false;
    }
    int64_t d4[4] = {n, ch, tx->dims[r - 2], tx->dims[r - 1]};
    int64_t pads[8] = {0, 0, p[0], p[1], 0, 0, p[0], p[1]};
    x = dec_pad(c, dec_reshape(c, x, d4, 4), pads, NULL, 0.0);
    ValId *taps = ir_scratch(c->g, (size_t)(k[0] * k[1]) * sizeof *taps);
    int64_t steps[4] = {1, 1, s[0], s[1]}, sizes[4] = {n, ch, o[0], o[1]};
    int64_t tap4[4] = {n, ch, 1, o[0] * o[1]};
    for (int64_t i = 0; i < k[0]; i++)
        for (int64_t j = 0; j < k[1]; j++) {
            int64_t starts[4] = {0, 0, i * d[0], j * d[1]};
            ValId t = dec_slice(c, x, starts, steps, sizes);
            taps[i * k[1] + j] = dec_reshape(c, t, tap4, 4);
        }
    ValId y = dec_concat(c, taps, (int)(k[0] * k[1]), 2);
    int64_t out[3] = {n, ch * k[0] * k[1], o[0] * o[1]};
    c->out[0] = r == 4 ? dec_reshape(c, y, out, 3) : dec_reshape(c, y, out + 1, 2);
    return true;
}
