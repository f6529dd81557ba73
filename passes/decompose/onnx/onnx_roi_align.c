/* onnx_roi_align.c: RoiAlign as core ops.
 *
 * RoiAlign computes every sample's two taps per axis and bilinear weights with
 * pointwise ops (the sample grid is static: sampling_ratio, or the largest grid of
 * constant rois), GATHERs the four corners and averages or takes the maximum.
 */
#include <math.h>
#include <string.h>

#include "onnx.h"
#include "passes/decompose/dec_index.h"

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
