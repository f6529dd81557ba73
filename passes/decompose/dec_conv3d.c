/* dec_conv3d.c: a 3-d convolution (one group) as one 2-d convolution. Output depth
 * slice o sums, over the kernel's kd depth taps i, the 2-d convolutions of input depth
 * slice o*sd + i*dd by the weight's tap i: the input's kd strided depth slices stacked
 * along the channels ([N, kd*C, Do, H, W], channel i*C + c), the output depth moved
 * into the batch, make that one 2-d convolution of kd*C input channels over N*Do
 * images, by the weight's taps stacked the same way ([M, kd*C, kh, kw]); the result's
 * depth goes back after the channels. The 2-d convolution takes the padded-patch and
 * channel-lane kernels; a CONV of three spatial dims took an im2col LOAD of its 27
 * taps a row of pixels at a time and one output channel a tile (32 -> 64 channels,
 * 3 x 3 x 3 over 8 x 28 x 28: 7.6x onnxruntime's time). The same products, summed in
 * another order than the 3-d CONV's (by depth tap, then channel).
 *
 * Only without symbolic dimensions (the batch and depth are merged).
 */
#include "dec.h"

/* The most depth taps taken (a larger kernel keeps the 3-d CONV). */
#define CONV3D_MAX_KD 32

bool dec_conv3d_ok(const DecCtx *c, ValId x, int64_t group)
{
    return group == 1 && !c->g->nsymdims && dec_ty(c, x)->rank == 5;
}

ValId dec_conv3d_2d(DecCtx *c, ValId x, ValId w, const int64_t *s, const int64_t *d,
                    const int64_t *lo, const int64_t *hi, double pad_value)
{
    const IrType *tw = dec_ty(c, w);
    int64_t kd = tw->dims[2], m = tw->dims[0];
    if (kd > CONV3D_MAX_KD)                              /* before any node is added */
        return IR_NONE;
    int64_t dpads[10] = {0}, pads[8] = {0}, dims[5], perm[5] = {0, 2, 1, 3, 4};
    dpads[2] = lo[0], dpads[7] = hi[0];                  /* the depth pads first */
    x = dec_pad(c, x, dpads, NULL, pad_value);
    const IrType *tx = dec_ty(c, x);
    int64_t n = tx->dims[0], ch = tx->dims[1];
    int64_t dout = (tx->dims[2] - (kd - 1) * d[0] - 1) / s[0] + 1;
    ValId sl[CONV3D_MAX_KD];
    for (int64_t i = 0; i < kd; i++)                     /* [N, kd C, Do, H, W] */
        sl[i] = dec_slice_axis(c, x, 2, i * d[0], s[0], dout);
    ValId xs = dec_transpose(c, dec_concat(c, sl, (int)kd, 1), perm);
    dims[0] = n * dout, dims[1] = kd * ch, dims[2] = tx->dims[3], dims[3] = tx->dims[4];
    xs = dec_reshape(c, xs, dims, 4);
    pads[2] = lo[1], pads[3] = lo[2], pads[6] = hi[1], pads[7] = hi[2];
    xs = dec_pad(c, xs, pads, NULL, pad_value);
    ValId ws = dec_transpose(c, w, perm);                /* [M, kd, C, kh, kw] */
    dims[0] = m, dims[1] = kd * ch, dims[2] = tw->dims[3], dims[3] = tw->dims[4];
    ws = dec_reshape(c, ws, dims, 4);
    IrAttr a[3] = {ir_attr_ints_ref("strides", s + 1, 2), ir_attr_ints_ref("dilations", d + 1, 2),
                   ir_attr_int("group", 1)};
    ValId in[2] = {xs, ws};
    ValId y = dec_op(c, IR_OP_CONV, in, 2, a, 3);        /* [N Do, M, Ho, Wo] */
    const IrType *ty = dec_ty(c, y);
    int64_t d5[5] = {n, dout, m, ty->dims[2], ty->dims[3]};
    return dec_transpose(c, dec_reshape(c, y, d5, 5), perm);
}
