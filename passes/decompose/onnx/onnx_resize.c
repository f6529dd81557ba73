/* onnx_resize.c: Resize and Upsample as separable per-axis resampling.
 *
 * Each resized axis becomes GATHERs along that axis with constant index vectors,
 * combined with constant per-position weights (linear: 2 taps, cubic: 4 taps;
 * nearest: one gather, no arithmetic). Coordinates are computed in float exactly as
 * onnxruntime computes them, so index choices at rounding boundaries agree.
 * Antialiased linear/cubic downsampling widens the filter by 1/scale, so an output
 * mixes a varying number of inputs: that axis becomes one MATMUL with a constant
 * [out, in] weight matrix built here as the ONNX reference implementation weighs.
 * Scales or sizes given as runtime inputs: onnx_runresize.c.
 */
#include <math.h>
#include <string.h>

#include "onnx.h"

enum { RZ_NEAREST, RZ_LINEAR, RZ_CUBIC };

typedef struct {
    int mode;                              /* RZ_* */
    const char *ctm;                       /* coordinate_transformation_mode */
    const char *nearest;                   /* nearest_mode, "simple" before opset 11 */
    float cubic_a;
    bool exclude_outside;
    float extrapolation;
    bool by_scale;                         /* scales given, not sizes */
} RzParams;

/* Source coordinate of output position o along an axis. */
static float rz_coord(const RzParams *p, float o, float scale, int64_t out, int64_t in,
                      float roi_s, float roi_e)
{
    const char *m = p->ctm;
    if (strcmp(m, "asymmetric") == 0)
        return o / scale;
    if (strcmp(m, "pytorch_half_pixel") == 0)
        return out > 1 ? (o + 0.5f) / scale - 0.5f : 0.0f;
    if (strcmp(m, "tf_half_pixel_for_nn") == 0)
        return (o + 0.5f) / scale;
    if (strcmp(m, "align_corners") == 0) {
        /* the spec's length_resized is scale * length_original, fractional when the
         * scale does not divide evenly (equal to `out` when sizes were given) */
        float ow = scale * (float)in;
        return ow == 1.0f ? 0.0f : o * (float)(in - 1) / (ow - 1.0f);
    }
    if (strcmp(m, "tf_crop_and_resize") == 0)
        return out > 1 ? (float)(roi_s * (float)(in - 1) +
                                 (o * (roi_e - roi_s) * (float)(in - 1)) / (float)(out - 1))
                       : (float)(0.5 * (roi_s + roi_e) * (float)(in - 1));
    if (strcmp(m, "half_pixel_symmetric") == 0) {
        float ow = scale * (float)in, adj = (float)out / ow, center = (float)in / 2;
        float off = center * (1 - adj);
        return (float)(off + (o + 0.5) / scale - 0.5);
    }
    return ((o + 0.5f) / scale) - 0.5f; /* half_pixel */
}

/* Nearest source index for coordinate x (before clamping). */
static int64_t rz_nearest(const RzParams *p, float x, float scale)
{
    const char *m = p->nearest;
    if (strcmp(m, "simple") == 0)
        return scale < 1 ? (int64_t)ceilf(x) : (int64_t)x;
    if (strcmp(m, "round_prefer_ceil") == 0)
        return (int64_t)roundf(x);
    if (strcmp(m, "floor") == 0)
        return (int64_t)floorf(x);
    if (strcmp(m, "ceil") == 0)
        return (int64_t)ceilf(x);
    if (x == (float)(int64_t)x + 0.5f)
        return (int64_t)floorf(x);
    return (int64_t)roundf(x);
}

/* Cubic convolution weights of the taps floor(x)-1 .. floor(x)+2 for fraction s. */
static void rz_cubic(float a, float s, float *w)
{
    float s1 = s + 1, t = 1 - s, t1 = 2 - s;
    w[0] = ((a * s1 - 5 * a) * s1 + 8 * a) * s1 - 4 * a;
    w[1] = ((a + 2) * s - (a + 3)) * s * s + 1;
    w[2] = ((a + 2) * t - (a + 3)) * t * t + 1;
    w[3] = ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a;
}

static int64_t clampi(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Per-axis weight constant of rank r with `out` entries on `axis`. */
static ValId axis_const(DecCtx *c, IrDType dt, int r, int axis, int64_t out, const double *v)
{
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        dims[i] = i == axis ? out : 1;
    return dec_const(c->g, dt, dims, r, v);
}

/* Whether axis (in positions, out after it) may be upsampled along a bounded symbolic
 * dimension (a graph with such dimensions, an integer factor, a coordinate that depends
 * on the output position and the scale alone, no border rule that depends on the
 * input's length other than the clamp of the indices; scales given: sizes are often
 * the input's Shape, folded at the bound, which a smaller input would not have
 * upsampled by the same factor): the indices are then the
 * bound's, clamped at run time to the actual length (SYMLEN), and the result is
 * declared to lie along the input's axis times the factor (SYMLIKE mul: dec_sym_*). */
static bool rz_follows(DecCtx *c, const RzParams *p, int64_t in, int64_t out, float scale)
{
    static const char *const modes[] = {"asymmetric", "half_pixel", "pytorch_half_pixel",
                                        "tf_half_pixel_for_nn"};
    bool mode = false;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        mode |= strcmp(p->ctm, modes[i]) == 0;
    return c->g->nsymdims && p->by_scale && mode && in > 1 && out % in == 0 &&
           scale == (float)(out / in) && !(p->mode == RZ_CUBIC && p->exclude_outside);
}

/* Resample x along axis to `out` positions. */
static ValId rz_axis(DecCtx *c, const RzParams *p, ValId x, int axis, int64_t out, float scale,
                     float roi_s, float roi_e)
{
    const IrType *t = dec_ty(c, x);
    int r = t->rank;
    IrDType dt = t->dtype;
    int64_t in = t->dims[axis];
    bool follow = rz_follows(c, p, in, out, scale);
    ValId last = follow ? dec_sym_last(c, x, axis) : IR_NONE;
    if (follow)                /* the indices clamp at the actual length, not the bound */
        in = INT64_MAX / 4;
    int ntap = p->mode == RZ_NEAREST ? 1 : p->mode == RZ_LINEAR ? 2 : 4;
    int64_t *idx = ir_scratch(c->g, sizeof(int64_t) * (size_t)(out * ntap + 1));
    double *w = ir_scratch(c->g, sizeof(double) * (size_t)(out * ntap + 1));
    double *extra = ir_scratch(c->g, sizeof(double) * (size_t)(out + 1));
    bool tfcrop = strcmp(p->ctm, "tf_crop_and_resize") == 0, any_extra = false;
    for (int64_t o = 0; o < out; o++) {
        float x0 = rz_coord(p, (float)o, scale, out, in, roi_s, roi_e);
        extra[o] = tfcrop && (x0 < 0 || x0 > (float)(in - 1));
        any_extra |= extra[o] != 0;
        if (p->mode == RZ_NEAREST) {
            idx[o] = clampi(rz_nearest(p, x0, scale), 0, in - 1);
            w[o] = 1;
        } else if (p->mode == RZ_LINEAR) {
            float xc = tfcrop ? x0 : fmaxf(0.0f, fminf(x0, (float)(in - 1)));
            int64_t i1 = clampi((int64_t)xc, 0, in - 1), i2 = clampi(i1 + 1, 0, in - 1);
            float d1 = fabsf(xc - (float)i1), d2 = fabsf(xc - (float)i2);
            if (i1 == i2)
                d1 = d2 = 0.5f;
            idx[o * 2] = i1;
            idx[o * 2 + 1] = i2;
            w[o * 2] = d2;
            w[o * 2 + 1] = d1;
        } else {
            float fl = floorf(x0), cw[4], sum = 0;
            rz_cubic(p->cubic_a, x0 - fl, cw);
            for (int k = 0; k < 4; k++) {
                int64_t src = (int64_t)fl - 1 + k;
                if (p->exclude_outside && (src < 0 || src >= in))
                    cw[k] = 0;
                sum += cw[k];
                idx[o * 4 + k] = clampi(src, 0, in - 1);
            }
            for (int k = 0; k < 4; k++)
                w[o * 4 + k] = p->exclude_outside && sum != 0 ? cw[k] / sum : cw[k];
        }
    }
    ValId y = IR_NONE;
    double *wk = ir_scratch(c->g, sizeof(double) * (size_t)(out + 1));
    int64_t *ik = ir_scratch(c->g, sizeof(int64_t) * (size_t)(out + 1));
    for (int k = 0; k < ntap; k++) {
        bool zero = true;
        for (int64_t o = 0; o < out; o++) {
            ik[o] = idx[o * ntap + k];
            wk[o] = w[o * ntap + k];
            zero &= wk[o] == 0;
        }
        if (zero && ntap > 1)
            continue;
        ValId gk = dec_sym_gather(c, x, axis, out, ik, last);
        if (ntap > 1)
            gk = dec_bin(c, IR_BIN_MUL, gk, axis_const(c, dt, r, axis, out, wk));
        y = y == IR_NONE ? gk : dec_bin(c, IR_BIN_ADD, y, gk);
    }
    if (y == IR_NONE) { /* all weights zero (only with extrapolation everywhere) */
        for (int64_t o = 0; o < out; o++)
            ik[o] = 0;
        y = dec_bin_s(c, IR_BIN_MUL, dec_gather(c, x, dec_const_i64(c->g, &out, 1, ik), axis), 0.0);
    }
    if (any_extra) {
        ValId mask = axis_const(c, IR_DT_BOOL, r, axis, out, extra);
        y = dec_select(c, mask, dec_scalar(c->g, dt, p->extrapolation), y);
    }
    return follow ? dec_sym_like(c, y, x, axis, out / t->dims[axis]) : y;
}

/* Linear (triangle) or cubic filter of the mode at distance x. */
static double rz_filter(const RzParams *p, double x)
{
    double a = p->cubic_a;
    x = fabs(x);
    if (p->mode == RZ_LINEAR)
        return x < 1 ? 1 - x : 0;
    if (x <= 1)
        return ((a + 2) * x - (a + 3)) * x * x + 1;
    return x < 2 ? ((a * x - 5 * a) * x + 8 * a) * x - 4 * a : 0;
}

/* Row o of the antialiased weight matrix w[out, in] (scale < 1): n taps around the
 * source coordinate x0, the filter stretched by 1/scale, weights normalised to sum
 * 1; taps beyond the edges repeat the edge input (or drop with exclude_outside).
 * As the reference: a window reaching past the edge padding shifts inwards. */
static bool rz_aa_row(DecCtx *c, const RzParams *p, double *w, int64_t in, float x0, double s)
{
    int64_t start = (int64_t)floor((p->mode == RZ_LINEAR ? -1.0 : -2.0) / s) + 1;
    int64_t n = 2 - 2 * start, pad = n / 2;
    if (n > in + 2 * pad || n > 1000000) {
        dec_err(c, "unsupported: antialias filter of %lld taps over %lld inputs", (long long)n,
                (long long)in);
        return false;
    }
    double x = x0, fl = floor(x), ratio = x - fl, sum = 0, kept = 0;
    if (ratio == 0) { /* an integral coordinate takes the pixel on its left as base */
        fl -= 1;
        ratio = 1;
    }
    int64_t ps = (int64_t)fl + start + pad;
    ps = clampi(ps, 0, in + 2 * pad - n);
    for (int64_t k = 0; k < n; k++)
        sum += rz_filter(p, (double)(start + k - ratio) * s);
    for (int64_t k = 0; k < n; k++) {
        int64_t src = ps + k - pad;
        if (p->exclude_outside && (src < 0 || src >= in))
            continue;
        double v = sum != 0 ? rz_filter(p, (double)(start + k - ratio) * s) / sum : 0;
        w[clampi(src, 0, in - 1)] += v;
        kept += v;
    }
    if (p->exclude_outside && kept != 0)
        for (int64_t i = 0; i < in; i++)
            w[i] /= kept;
    return true;
}

/* Antialiased resampling of x along axis (scale < 1) as one MATMUL: x viewed as
 * [pre, in, post] times the constant weights [out, in] (or [pre, in] times [in, out]
 * when axis is the last one with data). */
static ValId rz_axis_aa(DecCtx *c, const RzParams *p, ValId x, int axis, int64_t out,
                        float scale, float roi_s, float roi_e)
{
    const IrType *t = dec_ty(c, x);
    int r = t->rank;
    IrDType dt = t->dtype;
    int64_t in = t->dims[axis], pre = 1, post = 1, dims[IR_MAX_RANK];
    for (int i = 0; i < r; i++) {
        dims[i] = i == axis ? out : t->dims[i];
        if (i < axis)
            pre *= t->dims[i];
        else if (i > axis)
            post *= t->dims[i];
    }
    if (!dec_fits(c, out * in, sizeof(double), "antialias weights"))
        return IR_NONE;
    double *w = ir_scratch(c->g, sizeof(double) * (size_t)(out * in + 1));
    double *wt = ir_scratch(c->g, sizeof(double) * (size_t)(out * in + 1));
    double *extra = ir_scratch(c->g, sizeof(double) * (size_t)(out + 1));
    bool tfcrop = strcmp(p->ctm, "tf_crop_and_resize") == 0, any_extra = false;
    for (int64_t o = 0; o < out; o++) {
        float x0 = rz_coord(p, (float)o, scale, out, in, roi_s, roi_e);
        extra[o] = tfcrop && (x0 < 0 || x0 > (float)(in - 1));
        any_extra |= extra[o] != 0;
        if (!extra[o] && !rz_aa_row(c, p, w + o * in, in, x0, scale))
            return IR_NONE;
    }
    ValId y;
    if (post == 1) {
        for (int64_t o = 0; o < out; o++)
            for (int64_t i = 0; i < in; i++)
                wt[i * out + o] = w[o * in + i];
        ValId xv = dec_reshape(c, x, (int64_t[]){pre, in}, 2);
        y = ir_matmul(c->g, xv, dec_const(c->g, dt, (int64_t[]){in, out}, 2, wt), c->o);
    } else {
        ValId xv = dec_reshape(c, x, (int64_t[]){pre, in, post}, 3);
        y = ir_matmul(c->g, dec_const(c->g, dt, (int64_t[]){1, out, in}, 3, w), xv, c->o);
    }
    y = dec_reshape(c, y, dims, r);
    if (any_extra) {
        ValId mask = axis_const(c, IR_DT_BOOL, r, axis, out, extra);
        y = dec_select(c, mask, dec_scalar(c->g, dt, p->extrapolation), y);
    }
    return y;
}

/* Read mode and coordinate parameters for this op version. */
static bool rz_params(DecCtx *c, RzParams *p, bool upsample)
{
    const char *mode = dec_as(c, "mode", "nearest");
    p->mode = strcmp(mode, "nearest") == 0 ? RZ_NEAREST
              : (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0) ? RZ_LINEAR
              : strcmp(mode, "cubic") == 0 ? RZ_CUBIC : -1;
    if (p->mode < 0 || (p->mode == RZ_CUBIC && (upsample || c->opset < 11))) {
        dec_err(c, "unsupported resize mode '%s'", mode);
        return false;
    }
    bool new_api = !upsample && c->opset >= 11;
    p->ctm = new_api ? dec_as(c, "coordinate_transformation_mode", "half_pixel") : "asymmetric";
    p->nearest = new_api ? dec_as(c, "nearest_mode", "round_prefer_floor") : "simple";
    p->cubic_a = (float)dec_af(c, "cubic_coeff_a", -0.75);
    p->exclude_outside = dec_ai(c, "exclude_outside", 0) != 0;
    p->extrapolation = (float)dec_af(c, "extrapolation_value", 0.0);
    static const char *const ctms[] = {"half_pixel", "asymmetric", "pytorch_half_pixel",
                                       "tf_half_pixel_for_nn", "align_corners",
                                       "tf_crop_and_resize", "half_pixel_symmetric"};
    bool known = false;
    for (size_t i = 0; i < sizeof ctms / sizeof ctms[0]; i++)
        known |= strcmp(ctms[i], p->ctm) == 0;
    if (!known) {
        dec_err(c, "unknown coordinate_transformation_mode '%s'", p->ctm);
        return false;
    }
    static const char *const nms[] = {"simple", "round_prefer_floor", "round_prefer_ceil",
                                      "floor", "ceil"};
    known = false;
    for (size_t i = 0; i < sizeof nms / sizeof nms[0]; i++)
        known |= strcmp(nms[i], p->nearest) == 0;
    if (!known) {
        dec_err(c, "unknown nearest_mode '%s'", p->nearest);
        return false;
    }
    return true;
}

/* Output extent v (scale x input dim) of axis a as an int64 in *out; reports a value
 * out of range (a float beyond int64 would make the conversion undefined). */
static bool rz_extent(DecCtx *c, float v, int a, int64_t *out)
{
    if (v >= 0 && v < 9.2e18f) {
        *out = (int64_t)v;
        return true;
    }
    dec_err(c, "output size %g of axis %d is out of range", (double)v, a);
    return false;
}

/* Scales or sizes of every axis (after the axes attribute and aspect policy). */
static bool rz_sizes(DecCtx *c, const IrType *t, bool upsample, float *scale, int64_t *out,
                     double *roi)
{
    int r = t->rank, ns = -1, nz = -1, na = -1, nr = -1;
    double sv[2 * IR_MAX_RANK];
    int64_t zv[IR_MAX_RANK], axes[IR_MAX_RANK];
    const int64_t *av;
    if (upsample && c->opset < 9) {
        const IrAttr *a = ir_attr_find(c->n, "scales");
        ns = a && a->kind == IR_ATTR_FLOATS && a->n <= IR_MAX_RANK ? (int)a->n : -1;
        for (int i = 0; i < ns; i++)
            sv[i] = a->floats[i];
    } else {
        int si = (!upsample && c->opset >= 11) ? 2 : 1;
        ValId s = dec_in(c, si), z = (!upsample && c->opset >= 11) ? dec_in(c, 3) : IR_NONE;
        if (s != IR_NONE && dec_numel(dec_ty(c, s)) > 0 &&
            !dec_const_floats(c, s, "scales", sv, IR_MAX_RANK, &ns))
            return false;
        if (z != IR_NONE && dec_numel(dec_ty(c, z)) > 0 &&
            !dec_const_ints(c, z, "sizes", zv, IR_MAX_RANK, &nz))
            return false;
        ValId ri = (!upsample && c->opset >= 11) ? dec_in(c, 1) : IR_NONE;
        if (ri != IR_NONE && dec_numel(dec_ty(c, ri)) > 0 &&
            !dec_const_floats(c, ri, "roi", roi, 2 * IR_MAX_RANK, &nr))
            return false;
    }
    if ((ns < 0) == (nz < 0)) {
        dec_err(c, "exactly one of scales and sizes must be given");
        return false;
    }
    na = c->opset >= 18 ? dec_aints(c, "axes", &av) : -1;
    int n = na >= 0 ? na : r, cnt = ns >= 0 ? ns : nz;
    if (cnt != n || (nr >= 0 && nr != 2 * n)) {
        dec_err(c, "scales/sizes/roi have %d entries, expected %d", cnt, n);
        return false;
    }
    bool sel[IR_MAX_RANK] = {false};
    double rs[IR_MAX_RANK], re[IR_MAX_RANK];
    for (int i = 0; i < r; i++) {
        scale[i] = 1.0f;
        out[i] = t->dims[i];
        rs[i] = 0;
        re[i] = 1;
    }
    for (int i = 0; i < n; i++) {
        int a = i;
        if (na >= 0 && !dec_axis(c, av[i], r, &a))
            return false;
        axes[i] = a;
        sel[a] = true;
        if (nr >= 0) {
            rs[a] = roi[i];
            re[a] = roi[n + i];
        }
        if (ns >= 0) {
            scale[a] = (float)sv[i];
            if (!(scale[a] > 0)) {
                dec_err(c, "scale %g must be positive", sv[i]);
                return false;
            }
            if (!rz_extent(c, scale[a] * (float)t->dims[a], a, &out[a]))
                return false;
        } else {
            out[a] = zv[i];
            scale[a] = t->dims[a] ? (float)zv[i] / (float)t->dims[a] : 1.0f;
        }
    }
    (void)axes;
    const char *pol = dec_as(c, "keep_aspect_ratio_policy", "stretch");
    if (nz >= 0 && c->opset >= 18 && strcmp(pol, "stretch") != 0) {
        bool nl = strcmp(pol, "not_larger") == 0;
        float s = nl ? 3.4e38f : 0.0f;
        for (int i = 0; i < r; i++)
            if (sel[i])
                s = nl ? fminf(s, scale[i]) : fmaxf(s, scale[i]);
        for (int i = 0; i < r; i++)
            if (sel[i]) {
                scale[i] = s;
                if (!rz_extent(c, roundf(s * (float)t->dims[i]), i, &out[i]))
                    return false;
            }
    }
    for (int i = 0; i < r; i++) {
        roi[i] = rs[i];
        roi[r + i] = re[i];
    }
    return true;
}

/* In a graph with bounded symbolic dimensions, where sizes (a constant) says that axis a
 * is the extent of another value's axis, read with Shape and folded at the bounds, or
 * that extent through integer steps (an exporter's size of a feature map computed from
 * the input's, (h + 7) / 8): that tag in *e (false when sizes is no such tag for a, or
 * names x's own axis a). */
static bool rz_size_source(DecCtx *c, ValId x, int a, IrExtElem *e)
{
    ValId sz = c->opset >= 11 ? dec_in(c, 3) : IR_NONE;
    if (!c->g->nsymdims || sz == IR_NONE || !ir_is_const(c->g, sz) ||
        dec_numel(dec_ty(c, sz)) == 0)
        return false;
    const int64_t *av;
    int na = c->opset >= 18 ? dec_aints(c, "axes", &av) : -1, i = na >= 0 ? -1 : a;
    for (int k = 0; k < na; k++)
        if ((av[k] < 0 ? av[k] + dec_ty(c, x)->rank : av[k]) == a)
            i = k;
    *e = ir_ext_at(ir_val(c->g, sz)->ext, (uint64_t)(i < 0 ? 0 : i));
    return i >= 0 && e->src != IR_NONE && (e->exact || e->nstep > 0) && e->axis >= 0 &&
           !(e->src == x && e->axis == a && e->nstep <= 0);
}

/* Resize (opset 10+) and Upsample (7-9). */
bool dec_resize(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    if (x == IR_NONE)
        return false;
    bool upsample = strcmp(c->n->foreign.op_type, "Upsample") == 0;
    RzParams p;
    float scale[IR_MAX_RANK];
    int64_t out[IR_MAX_RANK];
    double roi[2 * IR_MAX_RANK];
    IrType t = *dec_ty(c, x);
    if (!rz_params(c, &p, upsample))
        return false;
    if (!upsample || c->opset >= 9) {      /* runtime scales or sizes: onnx_runresize.c */
        bool api11 = !upsample && c->opset >= 11;
        ValId s = dec_in(c, api11 ? 2 : 1), z = api11 ? dec_in(c, 3) : IR_NONE;
        ValId ri = api11 ? dec_in(c, 1) : IR_NONE;
        bool rs = s != IR_NONE && dec_numel(dec_ty(c, s)) > 0 && !ir_is_const(c->g, s);
        bool rz = z != IR_NONE && dec_numel(dec_ty(c, z)) > 0 && !ir_is_const(c->g, z);
        bool rroi = ri != IR_NONE && dec_numel(dec_ty(c, ri)) > 0 && !ir_is_const(c->g, ri);
        if ((rs || rz) && !rroi && dec_rt_resize(c, upsample, rs ? s : IR_NONE, rz ? z : IR_NONE))
            return true;
        if (ir_failed(c->g))
            return false;
    }
    if (!rz_sizes(c, &t, upsample, scale, out, roi))
        return false;
    ValId sz = !upsample && c->opset >= 11 ? dec_in(c, 3) : IR_NONE;
    p.by_scale = sz == IR_NONE || dec_numel(dec_ty(c, sz)) == 0;
    if (p.mode != RZ_NEAREST && !ir_dtype_is_float(t.dtype)) {
        dec_err(c, "unsupported: %s resize of %s data", p.mode == RZ_LINEAR ? "linear" : "cubic",
                ir_dtype_name(t.dtype));
        return false;
    }
    bool tfcrop = strcmp(p.ctm, "tf_crop_and_resize") == 0;
    int order[IR_MAX_RANK];
    dec_resize_order(t.rank, 0, t.rank, t.dims, out, order);
    for (int q = 0; q < t.rank; q++) {
        int a = tfcrop ? q : order[q];  /* extrapolated values are mixed in axis order */
        if (out[a] < 0) {
            dec_err(c, "output size %lld on axis %d is negative", (long long)out[a], a);
            return false;
        }
        IrExtElem e;
        if (!upsample && rz_size_source(c, dec_in(c, 0), a, &e)) {
            x = dec_sym_resize_axis(c, x, a, out[a], &e);
            if (x == IR_NONE) {
                dec_err(c, "unsupported: a resize to the size of '%s' along the bounded "
                        "dynamic dimension of its axis %d in this mode (antialias, "
                        "tf_crop_and_resize or keep_aspect_ratio_policy)",
                        c->g->vals[e.src].name, e.axis);
                return false;
            }
            continue;
        }
        if (scale[a] == 1.0f && out[a] == t.dims[a] && (!tfcrop || (roi[a] == 0 && roi[t.rank + a] == 1)))
            continue;
        if (t.dims[a] == 0) {
            dec_err(c, "cannot resize the empty axis %d", a);
            return false;
        }
        if (dec_ai(c, "antialias", 0) && scale[a] < 1 && p.mode != RZ_NEAREST)
            x = rz_axis_aa(c, &p, x, a, out[a], scale[a], (float)roi[a], (float)roi[t.rank + a]);
        else
            x = rz_axis(c, &p, x, a, out[a], scale[a], (float)roi[a], (float)roi[t.rank + a]);
        if (x == IR_NONE)
            return false;
    }
    c->out[0] = x;
    return true;
}
