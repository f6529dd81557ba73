/* onnx_runresize.c: Resize and Upsample whose scales or sizes are runtime inputs.
 *
 * Each resized axis is resampled as in onnx_resize.c (GATHERs along the axis, weighed
 * per position: nearest one tap, linear two, cubic four), but the source indices and
 * weights are computed on the device, from an iota over the axis's bound (the extent
 * the model declares for the output), the runtime scale and output size, with the same
 * float32 operations as the constant path, so nearest-index choices at rounding
 * boundaries agree. The result holds the box [0, out) of every axis in the bound; it
 * becomes the row-major prefix of the actual shape (dec_rt_box: a value whose whole
 * shape is computed at run time). Not covered (still refused: --bind): antialiasing,
 * tf_crop_and_resize, a model that does not declare the output's shape.
 *
 * In a graph with bounded symbolic dimensions, sizes read with Shape from another value
 * are constants folded at the bounds (F.interpolate(x, size=skip.shape[-2:]) of a
 * segmentation head or an FPN): dec_sym_resize_axis resamples such an axis the same
 * way from x's actual length to the other value's (both SYMLEN), its GATHERs marked
 * inbounds, and declares the result to lie along that value's axis (SYMLIKE). A size
 * that the exporter computed from an extent by integer steps (a dynamo export's
 * (h + 7) / 8 for a stride-8 feature map, ir.h IrExtElem's formula) is computed the same
 * way from the actual extent, and the result's axis declared to be that extent through
 * the steps (SYMLIKE's formula).
 */
#include <string.h>

#include "onnx.h"
#include "passes/decompose/dec_index.h"

typedef struct {
    int mode;                              /* 0 nearest, 1 linear, 2 cubic */
    const char *ctm, *nearest;
    float cubic_a;
    bool exclude_outside;
    bool inbounds;                         /* the input's length is its actual one (SYMLEN):
                                              GATHERs marked inbounds (pass_symdim) */
} RtRz;

/* An input axis's length as f32 and i64 rank-0 values (constants, or computed at run
 * time from a bounded symbolic dimension's actual extent). */
typedef struct {
    ValId f, i;
} RtLen;

/* f32 scalar constant. */
static ValId fs(DecCtx *c, double v)
{
    return dec_scalar(c->g, IR_DT_F32, v);
}

/* Source coordinate of the output positions o (f32 iota) for scale s and output size
 * out (f32 scalars) from an axis of in elements, as rz_coord computes it. */
static ValId coord(DecCtx *c, const RtRz *p, ValId o, ValId s, ValId out, RtLen in)
{
    const char *m = p->ctm;
    ValId oh = dec_bin_s(c, IR_BIN_ADD, o, 0.5);
    if (strcmp(m, "asymmetric") == 0)
        return dec_bin(c, IR_BIN_DIV, o, s);
    if (strcmp(m, "tf_half_pixel_for_nn") == 0)
        return dec_bin(c, IR_BIN_DIV, oh, s);
    if (strcmp(m, "align_corners") == 0) {
        ValId ow = dec_bin(c, IR_BIN_MUL, s, in.f);
        ValId v = dec_bin(c, IR_BIN_DIV, dec_bin(c, IR_BIN_MUL, o, dec_bin_s(c, IR_BIN_SUB, in.f, 1)),
                          dec_bin_s(c, IR_BIN_SUB, ow, 1));
        return dec_select(c, dec_bin_s(c, IR_BIN_EQ, ow, 1), fs(c, 0), v);
    }
    ValId hp = dec_bin_s(c, IR_BIN_SUB, dec_bin(c, IR_BIN_DIV, oh, s), 0.5);
    if (strcmp(m, "pytorch_half_pixel") == 0)
        return dec_select(c, dec_bin_s(c, IR_BIN_GT, out, 1), hp, fs(c, 0));
    if (strcmp(m, "half_pixel_symmetric") == 0) {
        ValId ow = dec_bin(c, IR_BIN_MUL, s, in.f);
        ValId adj = dec_bin(c, IR_BIN_DIV, out, ow);
        ValId off = dec_bin(c, IR_BIN_MUL, dec_bin(c, IR_BIN_SUB, fs(c, 1), adj),
                            dec_bin_s(c, IR_BIN_MUL, in.f, 0.5));
        return dec_bin(c, IR_BIN_ADD, off, hp);
    }
    return hp;                             /* half_pixel */
}

/* Nearest source index (f32, before clamping) of coordinates x, as rz_nearest. */
static ValId nearest(DecCtx *c, const RtRz *p, ValId x, ValId s)
{
    const char *m = p->nearest;
    ValId fl = dec_un(c, IR_UN_FLOOR, x), ce = dec_un(c, IR_UN_CEIL, x);
    ValId rnd = dec_un(c, IR_UN_FLOOR, dec_bin_s(c, IR_BIN_ADD, x, 0.5)); /* clamped later */
    if (strcmp(m, "simple") == 0)
        return dec_select(c, dec_bin_s(c, IR_BIN_LT, s, 1), ce,
                          dec_cast(c, dec_cast(c, x, IR_DT_I64), IR_DT_F32));
    if (strcmp(m, "round_prefer_ceil") == 0)
        return rnd;
    if (strcmp(m, "floor") == 0)
        return fl;
    if (strcmp(m, "ceil") == 0)
        return ce;
    return dec_select(c, dec_bin_s(c, IR_BIN_EQ, dec_bin(c, IR_BIN_SUB, x, fl), 0.5), fl, rnd);
}

/* f32 index values v as i64, clamped to [0, in - 1]. */
static ValId clamp_idx(DecCtx *c, ValId v, RtLen in)
{
    v = dec_cast(c, dec_bin(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, v, -1), in.f), IR_DT_I64);
    return dec_bin(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, v, 0), dec_bin_s(c, IR_BIN_SUB, in.i, 1));
}

/* x gathered along axis at indices idx, marked inbounds when p says so. */
static ValId take(DecCtx *c, const RtRz *p, ValId x, ValId idx, int axis)
{
    if (!p->inbounds)
        return dec_gather(c, x, idx, axis);
    ValId in[2] = {x, idx};
    IrAttr a[2] = {ir_attr_int("axis", axis), ir_attr_int("inbounds", 1)};
    return dec_op(c, IR_OP_GATHER, in, 2, a, 2);
}

/* Weights w (f32 [B]) as a broadcastable [1.., B, ..1] of rank r and dtype dt. */
static ValId along(DecCtx *c, ValId w, int r, int axis, int64_t B, IrDType dt)
{
    int64_t d[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        d[i] = i == axis ? B : 1;
    return dec_cast(c, dec_reshape(c, w, d, r), dt);
}

/* x resampled along axis to its bound B for the runtime scale s and size out, from an
 * input length in. */
static ValId resample(DecCtx *c, const RtRz *p, ValId x, int axis, int64_t B, ValId s, ValId out,
                      RtLen in)
{
    const IrType *t = dec_ty(c, x);
    IrDType dt = t->dtype;
    ValId x0 = coord(c, p, dix_iota(c, IR_DT_F32, B, 1, 0), s, out, in);
    if (p->mode == 0)
        return take(c, p, x, clamp_idx(c, nearest(c, p, x0, s), in), axis);
    if (p->mode == 1) {
        ValId xc = dec_bin_s(c, IR_BIN_MAX,
                             dec_bin(c, IR_BIN_MIN, x0, dec_bin_s(c, IR_BIN_SUB, in.f, 1)), 0);
        ValId i1 = clamp_idx(c, dec_cast(c, dec_cast(c, xc, IR_DT_I64), IR_DT_F32), in);
        ValId i2 = dec_bin(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_ADD, i1, 1),
                           dec_bin_s(c, IR_BIN_SUB, in.i, 1));
        ValId d1 = dec_un(c, IR_UN_ABS, dec_bin(c, IR_BIN_SUB, xc, dec_cast(c, i1, IR_DT_F32)));
        ValId d2 = dec_un(c, IR_UN_ABS, dec_bin(c, IR_BIN_SUB, xc, dec_cast(c, i2, IR_DT_F32)));
        ValId same = dec_bin(c, IR_BIN_EQ, i1, i2);
        d1 = dec_select(c, same, fs(c, 0.5), d1);
        d2 = dec_select(c, same, fs(c, 0.5), d2);
        ValId g1 = dec_bin(c, IR_BIN_MUL, take(c, p, x, i1, axis), along(c, d2, t->rank, axis, B, dt));
        ValId g2 = dec_bin(c, IR_BIN_MUL, take(c, p, x, i2, axis), along(c, d1, t->rank, axis, B, dt));
        return dec_bin(c, IR_BIN_ADD, g1, g2);
    }
    float a = p->cubic_a;                  /* rz_cubic on the fraction, per tap */
    ValId fl = dec_un(c, IR_UN_FLOOR, x0), f = dec_bin(c, IR_BIN_SUB, x0, fl), w[4], idx[4];
    ValId s1 = dec_bin_s(c, IR_BIN_ADD, f, 1), tt = dec_bin(c, IR_BIN_SUB, fs(c, 1), f);
    ValId t1 = dec_bin(c, IR_BIN_SUB, fs(c, 2), f), sum = IR_NONE;
    ValId far[2] = {s1, t1}, near[2] = {f, tt};
    for (int k = 0; k < 2; k++) {          /* ((a*v - 5a)*v + 8a)*v - 4a; ((a+2)*v - (a+3))*v*v + 1 */
        ValId v = far[k];
        ValId e = dec_bin_s(c, IR_BIN_SUB, dec_bin_s(c, IR_BIN_MUL, v, a), 5 * a);
        e = dec_bin_s(c, IR_BIN_ADD, dec_bin(c, IR_BIN_MUL, e, v), 8 * a);
        w[k ? 3 : 0] = dec_bin_s(c, IR_BIN_SUB, dec_bin(c, IR_BIN_MUL, e, v), 4 * a);
        v = near[k];
        e = dec_bin_s(c, IR_BIN_SUB, dec_bin_s(c, IR_BIN_MUL, v, a + 2), a + 3);
        w[k ? 2 : 1] = dec_bin_s(c, IR_BIN_ADD, dec_bin(c, IR_BIN_MUL, dec_bin(c, IR_BIN_MUL, e, v), v), 1);
    }
    for (int k = 0; k < 4; k++) {
        ValId src = dec_bin_s(c, IR_BIN_ADD, fl, k - 1);
        if (p->exclude_outside) {
            ValId in_ax = dec_bin(c, IR_BIN_AND, dec_bin_s(c, IR_BIN_GE, src, 0),
                                  dec_bin(c, IR_BIN_LT, src, in.f));
            w[k] = dec_select(c, in_ax, w[k], fs(c, 0));
        }
        sum = sum == IR_NONE ? w[k] : dec_bin(c, IR_BIN_ADD, sum, w[k]);
        idx[k] = clamp_idx(c, src, in);
    }
    ValId y = IR_NONE;
    for (int k = 0; k < 4; k++) {
        ValId wk = p->exclude_outside
                       ? dec_select(c, dec_bin_s(c, IR_BIN_NE, sum, 0), dec_bin(c, IR_BIN_DIV, w[k], sum), w[k])
                       : w[k];
        ValId g = dec_bin(c, IR_BIN_MUL, take(c, p, x, idx[k], axis), along(c, wk, t->rank, axis, B, dt));
        y = y == IR_NONE ? g : dec_bin(c, IR_BIN_ADD, y, g);
    }
    return y;
}

/* The resize parameters of the node: new_api for Resize from opset 11 (else the fixed
 * rules of Upsample and Resize-10); inbounds as RtRz says. */
static RtRz node_params(DecCtx *c, bool new_api, bool inbounds)
{
    const char *mode = dec_as(c, "mode", "nearest");
    return (RtRz){strcmp(mode, "nearest") == 0 ? 0 : strcmp(mode, "cubic") == 0 ? 2 : 1,
                  new_api ? dec_as(c, "coordinate_transformation_mode", "half_pixel")
                          : "asymmetric",
                  new_api ? dec_as(c, "nearest_mode", "round_prefer_floor") : "simple",
                  (float)dec_af(c, "cubic_coeff_a", -0.75), dec_ai(c, "exclude_outside", 0) != 0,
                  inbounds};
}

/* The actual extent of axis a of x (SYMLEN) as an f32 or i64 rank-0 value. */
static ValId sym_len(DecCtx *c, ValId x, int a, IrDType dt)
{
    IrAttr ax = ir_attr_int("axis", a);
    return dec_cast(c, dec_reshape(c, dec_op(c, IR_OP_SYMLEN, &x, 1, &ax, 1), NULL, 0), dt);
}

/* The actual length that size says: its source's actual extent (SYMLEN) through its
 * formula's steps, as f32. */
static ValId size_len(DecCtx *c, const IrExtElem *size)
{
    ValId v = sym_len(c, size->src, size->axis, IR_DT_I64);
    static const int fn[] = {[IR_EXT_ADD] = IR_BIN_ADD, [IR_EXT_MUL] = IR_BIN_MUL,
                             [IR_EXT_DIV] = IR_BIN_DIV};
    for (int i = 0; i < size->nstep; i++)       /* non-negative: DIV truncates as floor */
        v = dec_bin(c, fn[size->step[i]], v, dec_scalar(c->g, IR_DT_I64, size->arg[i]));
    return dec_cast(c, v, IR_DT_F32);
}

ValId dec_sym_resize_axis(DecCtx *c, ValId x, int axis, int64_t B, const IrExtElem *size)
{
    RtRz p = node_params(c, true, true);
    if (dec_ai(c, "antialias", 0) || strcmp(p.ctm, "tf_crop_and_resize") == 0 ||
        (p.mode && !ir_dtype_is_float(dec_ty(c, x)->dtype)) || B < 1 ||
        (c->opset >= 18 && strcmp(dec_as(c, "keep_aspect_ratio_policy", "stretch"), "stretch")))
        return IR_NONE;
    RtLen in = {sym_len(c, x, axis, IR_DT_F32), sym_len(c, x, axis, IR_DT_I64)};
    ValId out = size_len(c, size);
    ValId y = resample(c, &p, x, axis, B, dec_bin(c, IR_BIN_DIV, out, in.f), out, in);
    int64_t fm[2 * IR_EXT_STEPS];
    for (int i = 0; i < size->nstep; i++)
        fm[2 * i] = size->step[i], fm[2 * i + 1] = size->arg[i];
    IrAttr a[3] = {ir_attr_int("axis", axis), ir_attr_int("like_axis", size->axis),
                   ir_attr_ints(c->g, "formula", fm, 2 * size->nstep)};
    ValId yl[2] = {y, size->src};
    return dec_op(c, IR_OP_SYMLIKE, yl, 2, a, size->nstep > 0 ? 3 : 2);
}

/* Element i of vector input v as a rank-0 value of dtype t. */
static ValId item(DecCtx *c, ValId v, int i, IrDType t)
{
    int64_t n = dec_numel(dec_ty(c, v));
    ValId e = dec_slice_axis(c, dec_reshape(c, v, &n, 1), 0, i, 1, 1);
    return dec_cast(c, dec_reshape(c, e, NULL, 0), t);
}

/* Resize by runtime scales or sizes (see the file comment); false when not covered. */
bool dec_rt_resize(DecCtx *c, bool upsample, ValId scales, ValId sizes)
{
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x), *decl = dix_declared(c, 0);
    int r = t->rank;
    const int64_t *av;
    int na = !upsample && c->opset >= 18 ? dec_aints(c, "axes", &av) : -1, n = na >= 0 ? na : r;
    ValId v = scales != IR_NONE ? scales : sizes;
    RtRz p = node_params(c, !upsample && c->opset >= 11, false);
    if (!decl || decl->rank != r || dec_numel(dec_ty(c, v)) != n || dec_ai(c, "antialias", 0) ||
        strcmp(p.ctm, "tf_crop_and_resize") == 0 || (p.mode && !ir_dtype_is_float(t->dtype)) ||
        dec_numel(t) == 0)
        return false;
    const char *pol = sizes != IR_NONE && c->opset >= 18
                          ? dec_as(c, "keep_aspect_ratio_policy", "stretch") : "stretch";
    int policy = strcmp(pol, "not_larger") == 0 ? 1 : strcmp(pol, "not_smaller") == 0 ? 2 : 0;
    ValId lens[IR_MAX_RANK], sc[IR_MAX_RANK], common = IR_NONE;
    int ax[IR_MAX_RANK];
    for (int a = 0; a < r; a++)
        lens[a] = dec_scalar(c->g, IR_DT_I64, (double)t->dims[a]);
    for (int i = 0; i < n; i++) {          /* scales and output sizes of the listed axes */
        int a = i;
        if (na >= 0 && !dec_axis(c, av[i], r, &a))
            return false;
        ax[i] = a;
        if (scales != IR_NONE) {           /* out = (int64)(s * in) */
            sc[i] = item(c, v, i, IR_DT_F32);
            lens[a] = dec_cast(c, dec_bin_s(c, IR_BIN_MUL, sc[i], (double)t->dims[a]), IR_DT_I64);
        } else {                           /* s = (float)out / (float)in */
            lens[a] = item(c, v, i, IR_DT_I64);
            sc[i] = dec_bin_s(c, IR_BIN_DIV, dec_cast(c, lens[a], IR_DT_F32), (double)t->dims[a]);
        }
        common = !policy ? IR_NONE : common == IR_NONE ? sc[i]
                 : dec_bin(c, policy == 1 ? IR_BIN_MIN : IR_BIN_MAX, common, sc[i]);
    }
    for (int i = 0; i < n; i++) {
        int a = ax[i];
        if (policy) {                      /* one scale; out = roundf(s * in) */
            sc[i] = common;
            ValId o = dec_bin_s(c, IR_BIN_MUL, common, (double)t->dims[a]);
            lens[a] = dec_cast(c, dec_un(c, IR_UN_FLOOR, dec_bin_s(c, IR_BIN_ADD, o, 0.5)), IR_DT_I64);
        }
        RtLen in = {fs(c, (double)t->dims[a]), dec_scalar(c->g, IR_DT_I64, (double)t->dims[a])};
        x = resample(c, &p, x, a, decl->dims[a], sc[i], dec_cast(c, lens[a], IR_DT_F32), in);
    }
    dec_rt_box(c, x, lens);
    return true;
}
