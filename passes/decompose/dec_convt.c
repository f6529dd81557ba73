/* dec_convt.c: a transposed convolution whose kernel tiles its output: kernel equal to
 * stride on every spatial axis, dilation 1, no padding or output padding, one group (a
 * U-Net's or a segmentation head's 2 x 2 stride-2 upsampling). Each input pixel then
 * writes its own block of k1 x k2 ... output pixels, so the node is a MATMUL of the
 * weight [C, M x K] (transposed) by the input's channels [C, pixels], whose result's
 * blocks a transpose moves into place (depth to space). The general lowering (dec_ and
 * aten_ conv: a forward convolution over the input with stride - 1 zeros between its
 * pixels) multiplied prod(stride) times as many products, all but one in each block
 * by an inserted zero: 4x the work at stride 2 (0.35 ms against 1.04 for 128 -> 64
 * channels at 28 x 28, two threads).
 *
 * Only without symbolic dimensions: the MATMUL flattens the spatial axes, which the
 * bounded-dimension passes would not follow. The sum over the input channels is the
 * same set of products as the convolution's (the zeros aside), maybe in another order.
 */
#include "dec.h"

bool dec_convt_blocks_ok(const DecCtx *c, ValId x, int nsp, int64_t group, const int64_t *k,
                         const int64_t *s, const int64_t *d, const int64_t *lo,
                         const int64_t *hi, const int64_t *opad)
{
    if (group != 1 || c->g->nsymdims || 2 + 2 * nsp > IR_MAX_RANK ||
        dec_ty(c, x)->rank != 2 + nsp)
        return false;
    for (int i = 0; i < nsp; i++)
        if (k[i] != s[i] || d[i] != 1 || lo[i] || hi[i] || opad[i])
            return false;
    return true;
}

ValId dec_convt_blocks(DecCtx *c, ValId x, ValId w, int nsp)
{
    const IrType *tx = dec_ty(c, x), *tw = dec_ty(c, w);
    int64_t n = tx->dims[0], ch = tx->dims[1], m = tw->dims[1], kk = 1, pix = 1;
    int64_t dims[IR_MAX_RANK], perm[IR_MAX_RANK];
    for (int i = 0; i < nsp; i++) {
        kk *= tw->dims[2 + i];
        pix *= tx->dims[2 + i];
    }
    dims[0] = ch, dims[1] = m * kk;                     /* A = W^T: [M K, C] */
    ValId a = dec_reshape(c, w, dims, 2);
    perm[0] = 1, perm[1] = 0;
    a = dec_transpose(c, a, perm);
    dims[0] = n, dims[1] = ch, dims[2] = pix;           /* B: [N, C, pixels] */
    ValId in[2] = {a, dec_reshape(c, x, dims, 3)};
    ValId y = dec_op(c, IR_OP_MATMUL, in, 2, NULL, 0);  /* [N, M K, pixels] */
    dims[0] = n, dims[1] = m;                           /* [N, M, k..., S...] */
    perm[0] = 0, perm[1] = 1;                           /* -> [N, M, S1, k1, S2, k2 ...] */
    for (int i = 0; i < nsp; i++) {
        dims[2 + i] = tw->dims[2 + i];
        dims[2 + nsp + i] = tx->dims[2 + i];
        perm[2 + 2 * i] = 2 + nsp + i;
        perm[3 + 2 * i] = 2 + i;
    }
    y = dec_reshape(c, y, dims, 2 + 2 * nsp);
    y = dec_transpose(c, y, perm);
    for (int i = 0; i < nsp; i++)
        dims[2 + i] = tx->dims[2 + i] * tw->dims[2 + i];
    return dec_reshape(c, y, dims, 2 + nsp);
}
