/* dec_poolwin.c: the WINDOW of a pooling over the last nsp axes of an already padded
 * input, shaped for the kernels that read a window from an input patch, which take
 * windows of two spatial axes (codegen/cg_reduce.c window_patch_item; others load an
 * im2col tile a few elements a row at a time: 3-d max pooling took 8x onnxruntime's
 * time): a window of three axes is one 2-d window per depth tap over the input's
 * strided depth slices, combined elementwise (MAX / MIN, or the sums added: their sum
 * in another order). Other axis counts (a 1-d window as a 2-d one of height 1 was no
 * faster), symbolic dimensions, or functions other than MAX, MIN and SUM keep one
 * WINDOW of all the axes.
 */
#include "dec.h"

/* One WINDOW node of function fn over the last nsp axes of x. */
static ValId window_node(DecCtx *c, ValId x, int fn, const int64_t *k, const int64_t *s,
                         const int64_t *d, int nsp)
{
    IrAttr a[4] = {ir_attr_int("fn", fn), ir_attr_ints_ref("kernel", k, nsp),
                   ir_attr_ints_ref("strides", s, nsp), ir_attr_ints_ref("dilations", d, nsp)};
    return dec_op(c, IR_OP_WINDOW, &x, 1, a, 4);
}

/* A window of three axes as 2-d windows of the depth slices, combined. */
static ValId window_3d(DecCtx *c, ValId x, int fn, const int64_t *k, const int64_t *s,
                       const int64_t *d)
{
    const IrType *t = dec_ty(c, x);
    int ax = t->rank - 3;
    int64_t dout = (t->dims[ax] - (k[0] - 1) * d[0] - 1) / s[0] + 1;
    int bin = fn == IR_RED_MAX ? IR_BIN_MAX : fn == IR_RED_MIN ? IR_BIN_MIN : IR_BIN_ADD;
    ValId y = IR_NONE;
    for (int64_t i = 0; i < k[0]; i++) {
        ValId w = window_node(c, dec_slice_axis(c, x, ax, i * d[0], s[0], dout), fn, k + 1,
                              s + 1, d + 1, 2);
        y = i ? dec_bin(c, bin, y, w) : w;
    }
    return y;
}

ValId dec_pool_window(DecCtx *c, ValId x, int fn, const int64_t *k, const int64_t *s,
                      const int64_t *d, int nsp)
{
    bool ok = !c->g->nsymdims && (fn == IR_RED_MAX || fn == IR_RED_MIN || fn == IR_RED_SUM) &&
              dec_ty(c, x)->rank < IR_MAX_RANK;
    if (ok && nsp == 3)
        return window_3d(c, x, fn, k, s, d);
    return window_node(c, x, fn, k, s, d, nsp);
}
