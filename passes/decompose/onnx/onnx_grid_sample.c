/* onnx_grid_sample.c: GridSample and AffineGrid.
 *
 * GridSample maps every grid point's normalised coordinates to input pixels, picks
 * the interpolation taps (1, 2 or 4 per spatial axis) and their weights with
 * pointwise ops, and reads the taps with one GATHER of computed row indices
 * (dix_sample). AffineGrid is one MATMUL of a constant base grid (homogeneous
 * pixel-centre coordinates) with the transposed affine matrices.
 */
#include <string.h>

#include "onnx.h"
#include "passes/decompose/dec_index.h"

/* Interpolation mode from the attribute (opset 16 names bilinear/bicubic). */
static bool sample_mode(DecCtx *c, DixMode *m)
{
    const char *s = dec_as(c, "mode", c->opset >= 20 ? "linear" : "bilinear");
    if (strcmp(s, "linear") == 0 || strcmp(s, "bilinear") == 0)
        *m = DIX_LINEAR;
    else if (strcmp(s, "nearest") == 0)
        *m = DIX_NEAREST;
    else if (strcmp(s, "cubic") == 0 || strcmp(s, "bicubic") == 0)
        *m = DIX_CUBIC;
    else {
        dec_err(c, "unknown mode '%s'", s);
        return false;
    }
    return true;
}

/* Padding mode from the attribute. */
static bool sample_pad(DecCtx *c, DixPad *p)
{
    const char *s = dec_as(c, "padding_mode", "zeros");
    if (strcmp(s, "zeros") == 0)
        *p = DIX_PAD_ZEROS;
    else if (strcmp(s, "border") == 0)
        *p = DIX_PAD_BORDER;
    else if (strcmp(s, "reflection") == 0)
        *p = DIX_PAD_REFLECT;
    else {
        dec_err(c, "unknown padding_mode '%s'", s);
        return false;
    }
    return true;
}

/* Y[n, c, o...] = interpolation of X[n, c] at grid[n, o...] (normalised coordinates,
 * last axis x first); shared with the ATen grid_sampler handler. */
ValId dec_grid_sample_core(DecCtx *c, ValId x, ValId grid, DixMode mode, DixPad pad,
                           bool align)
{
    IrType tx = *dec_ty(c, x), tg = *dec_ty(c, grid);
    int k = tx.rank - 2;
    if (k < 1 || tg.rank != k + 2 || tg.dims[0] != tx.dims[0] || tg.dims[k + 1] != k ||
        !ir_dtype_is_float(tx.dtype)) {
        dec_err(c, "grid must be [N, spatial..., %d] for a float X of rank %d", k, tx.rank);
        return IR_NONE;
    }
    int64_t N = tx.dims[0], C = tx.dims[1], P = 1;
    for (int i = 0; i < k; i++)
        P *= tg.dims[1 + i];
    int64_t g3[3] = {N, P, k};
    ValId gf = dec_cast(c, dec_reshape(c, grid, g3, 3), IR_DT_F32);
    ValId coord[IR_MAX_RANK];
    double lo[IR_MAX_RANK], hi[IR_MAX_RANK];
    for (int i = 0; i < k; i++) {
        double d = (double)tx.dims[2 + i];
        int64_t d2[2] = {N, P};
        ValId g = dec_reshape(c, dec_slice_axis(c, gf, 2, k - 1 - i, 1, 1), d2, 2);
        ValId g1 = dec_bin_s(c, IR_BIN_ADD, g, 1.0);
        if (align) /* (g + 1) / 2 * (d - 1) */
            coord[i] = dec_bin_s(c, IR_BIN_MUL, g1, (d - 1) / 2.0);
        else /* ((g + 1) * d - 1) / 2 */
            coord[i] = dec_bin_s(c, IR_BIN_MUL, dec_bin_s(c, IR_BIN_SUB,
                                 dec_bin_s(c, IR_BIN_MUL, g1, d), 1.0), 0.5);
        lo[i] = align ? 0.0 : -0.5;
        hi[i] = align ? d - 1 : d - 0.5;
    }
    ValId xs = dec_cast(c, x, IR_DT_F32);
    ValId y = dix_sample(c, xs, coord, k, mode, pad, lo, hi); /* [N, P, C] */
    if (y == IR_NONE)
        return IR_NONE;
    int64_t perm[3] = {0, 2, 1}, od[IR_MAX_RANK];
    od[0] = N;
    od[1] = C;
    for (int i = 0; i < k; i++)
        od[2 + i] = tg.dims[1 + i];
    y = dec_reshape(c, dec_transpose(c, y, perm), od, k + 2);
    return dec_cast(c, y, tx.dtype);
}

/* GridSample: Y[n, c, o...] = interpolation of X[n, c] at grid[n, o...]. */
bool dec_grid_sample(DecCtx *c)
{
    ValId x = dec_in(c, 0), grid = dec_in(c, 1);
    DixMode mode;
    DixPad pad;
    if (x == IR_NONE || grid == IR_NONE) {
        dec_err(c, "missing X or grid input");
        return false;
    }
    if (!sample_mode(c, &mode) || !sample_pad(c, &pad))
        return false;
    c->out[0] = dec_grid_sample_core(c, x, grid, mode, pad, dec_ai(c, "align_corners", 0) != 0);
    return c->out[0] != IR_NONE;
}

/* Spatial sizes of AffineGrid's output: from a constant size input, else from the
 * declared output type [N, spatial..., k]. */
static bool affine_sizes(DecCtx *c, int k, int64_t N, int64_t *sp)
{
    int64_t v[IR_MAX_RANK + 2];
    int n = 0;
    ValId size = dec_in(c, 1);
    if (size != IR_NONE && ir_is_const(c->g, size)) {
        if (!dec_const_ints(c, size, "size", v, IR_MAX_RANK + 2, &n))
            return false;
        if (n != k + 2 || v[0] != N) {
            dec_err(c, "size must hold %d entries starting with N=%lld", k + 2, (long long)N);
            return false;
        }
        for (int i = 0; i < k; i++) {
            sp[i] = v[2 + i];
            if (sp[i] < 1 || sp[i] > DIX_ONEHOT_MAX) {
                dec_err(c, "size entry %d (%lld) must be positive", 2 + i, (long long)sp[i]);
                return false;
            }
        }
        return true;
    }
    dec_dynamic_err(c, dec_in(c, 1), "size");  /* it decides the output shape */
    return false;
}

/* AffineGrid: grid[n, p, :] = theta[n] @ [x_p, y_p, (z_p,) 1]. */
/* AffineGrid with a runtime size input: the base grid over the spatial bounds the model
 * declares for the output ([N, B_0, .., B_k-1, k]), each coordinate computed on the device
 * from an iota and the runtime extent d of its axis (align_corners: -1 + 2j / (d - 1),
 * else -1 + (2j + 1) / d), times theta; the box of the actual extents becomes the
 * output (dec_rt_box). False (nothing reported) without a declared output. */
static bool affine_runtime(DecCtx *c, ValId theta, int k, int64_t N)
{
    const IrType *decl = dix_declared(c, 0);
    ValId size = dec_in(c, 1);
    if (!decl || decl->rank != k + 2 || decl->dims[0] != N || decl->dims[k + 1] != k ||
        dec_numel(dec_ty(c, size)) != k + 2)
        return false;
    int64_t B[IR_MAX_RANK], S = 1, n = k + 2;
    ValId sv = dec_reshape(c, dec_cast(c, size, IR_DT_I64), &n, 1), cols[IR_MAX_RANK + 1];
    ValId lens[IR_MAX_RANK];
    bool align = dec_ai(c, "align_corners", 0) != 0;
    for (int i = 0; i < k; i++)
        S *= (B[i] = decl->dims[1 + i]);
    B[k] = 1;
    lens[0] = dec_scalar(c->g, IR_DT_I64, (double)N);
    lens[k + 1] = dec_scalar(c->g, IR_DT_I64, (double)k);
    for (int i = 0; i < k; i++) {          /* spatial axis i feeds column k-1-i */
        lens[1 + i] = dec_reshape(c, dec_slice_axis(c, sv, 0, 2 + i, 1, 1), NULL, 0);
        ValId d = dec_cast(c, lens[1 + i], IR_DT_F32), j = dix_iota(c, IR_DT_F32, B[i], k + 1, i);
        ValId v = align ? dec_select(c, dec_bin_s(c, IR_BIN_GT, d, 1),
                                     dec_bin(c, IR_BIN_DIV, dec_bin_s(c, IR_BIN_MUL, j, 2),
                                             dec_bin_s(c, IR_BIN_SUB, d, 1)),
                                     dec_scalar(c->g, IR_DT_F32, 0))
                        : dec_bin(c, IR_BIN_DIV, dec_bin_s(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, j, 2), 1), d);
        cols[k - 1 - i] = dec_expand(c, dec_bin_s(c, IR_BIN_SUB, v, 1), B, k + 1);
    }
    cols[k] = dec_expand(c, dec_scalar(c->g, IR_DT_F32, 1), B, k + 1);
    int64_t bd[3] = {1, S, k + 1}, ed[3] = {N, S, k + 1}, perm[3] = {0, 2, 1}, od[IR_MAX_RANK];
    ValId b = dec_expand(c, dec_reshape(c, dec_concat(c, cols, k + 1, k), bd, 3), ed, 3);
    ValId th = dec_transpose(c, dec_cast(c, theta, IR_DT_F32), perm);
    ValId g = ir_matmul(c->g, b, th, c->o);
    for (int i = 0; i < k + 2; i++)
        od[i] = decl->dims[i];
    dec_rt_box(c, dec_cast(c, dec_reshape(c, g, od, k + 2), dec_ty(c, theta)->dtype), lens);
    return true;
}

bool dec_affine_grid(DecCtx *c)
{
    ValId theta = dec_in(c, 0);
    if (theta == IR_NONE) {
        dec_err(c, "missing theta input");
        return false;
    }
    IrType tt = *dec_ty(c, theta);
    int k = tt.rank == 3 ? (int)tt.dims[1] : 0;
    if (k < 1 || k + 2 > IR_MAX_RANK || tt.dims[2] != k + 1 || !ir_dtype_is_float(tt.dtype)) {
        dec_err(c, "theta must be a float [N, k, k+1] tensor");
        return false;
    }
    int64_t N = tt.dims[0], sp[IR_MAX_RANK], S = 1;
    ValId size = dec_in(c, 1);
    if (size != IR_NONE && !ir_is_const(c->g, size) && affine_runtime(c, theta, k, N))
        return true;
    if (ir_failed(c->g) || !affine_sizes(c, k, N, sp))
        return false;
    for (int i = 0; i < k; i++)
        S *= sp[i];
    if (!dec_fits(c, S * (k + 1), sizeof(double), "base grid"))
        return false;
    bool align = dec_ai(c, "align_corners", 0) != 0;
    double *base = ir_scratch(c->g, sizeof(double) * (size_t)(S * (k + 1)));
    for (int64_t p = 0; p < S; p++) {
        int64_t rem = p;
        for (int i = k - 1; i >= 0; i--) { /* spatial axis i feeds column k-1-i */
            int64_t j = rem % sp[i];
            rem /= sp[i];
            double d = (double)sp[i], v;
            if (align)
                v = d > 1 ? -1.0 + 2.0 * (double)j / (d - 1) : -1.0;
            else
                v = -1.0 + (2.0 * (double)j + 1.0) / d;
            base[p * (k + 1) + (k - 1 - i)] = v;
        }
        base[p * (k + 1) + k] = 1.0;
    }
    int64_t bd[3] = {1, S, k + 1}, perm[3] = {0, 2, 1};
    ValId b = dec_const(c->g, tt.dtype, bd, 3, base);
    int64_t ed[3] = {N, S, k + 1};
    b = dec_expand(c, b, ed, 3);
    ValId th = dec_transpose(c, dec_cast(c, theta, IR_DT_F32), perm); /* [N, k+1, k] */
    ValId g = ir_matmul(c->g, dec_cast(c, b, IR_DT_F32), th, c->o);
    int64_t od[IR_MAX_RANK];
    od[0] = N;
    for (int i = 0; i < k; i++)
        od[1 + i] = sp[i];
    od[k + 1] = k;
    c->out[0] = dec_cast(c, dec_reshape(c, g, od, k + 2), tt.dtype);
    return true;
}
