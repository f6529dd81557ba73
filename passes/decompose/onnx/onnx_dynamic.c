/* onnx_dynamic.c: NonZero and Compress, the data-dependent selections, and the helpers
 * that Unique (onnx_unique.c) and NonMaxSuppression (onnx_nms.c) share with them.
 *
 * The result is computed at its upper-bound shape: a keep mask gives each kept row its
 * destination slot (exclusive CUMSUM of the mask), the mask's sum is the count, and a
 * SCATTER writes the kept rows to their slots (the others go to slot -1, dropped); the
 * rest of the tensor is 0. ir_dyn_add records (tensor, axis, count); pass_dynamic
 * carries it to the graph outputs and the runtime returns the actual shape.
 *   NonZero(x)          [rank, numel]: the coordinates of the k-th non-zero in column k
 *   Compress(x, cond)   the slices (or, without axis, the elements) where cond is true;
 *                       a constant condition is a static GATHER
 */
#include <string.h>

#include "onnx_dynamic.h"

/* Exclusive prefix sum of a 1-d int32 x, and its total (*sum). A CUMSUM keeps its
 * whole axis in the scratchpad, so a long x is summed in blocks (within the blocks,
 * then, recursively, over the block totals); the block length divides x's length when
 * it can, so that no padding copy is needed. */
static ValId prefix_sum(DecCtx *c, ValId x, ValId *sum)
{
    enum { SCAN_DIRECT = 1024, BLOCK_MIN = 128, BLOCK_MAX = 512 };
    int64_t n = dec_ty(c, x)->dims[0], ax0 = 0, ax1 = 1, b = BLOCK_MAX / 2;
    IrAttr a[3] = {ir_attr_int("axis", 0), ir_attr_int("exclusive", 1), ir_attr_int("reverse", 0)};
    if (n <= SCAN_DIRECT) {
        *sum = dec_reduce(c, IR_RED_SUM, x, &ax0, 1, false);
        return dec_op(c, IR_OP_CUMSUM, &x, 1, a, 3);
    }
    for (int64_t d = BLOCK_MAX; d >= BLOCK_MIN; d--)
        if (n % d == 0) {
            b = d;
            break;
        }
    int64_t m = (n + b - 1) / b, pads[2] = {0, m * b - n};
    int64_t blocks[2] = {m, b}, col[2] = {m, 1}, total = m * b;
    ValId xb = dec_reshape(c, dec_pad(c, x, pads, NULL, 0), blocks, 2);
    IrAttr r[3] = {ir_attr_int("axis", 1), ir_attr_int("exclusive", 1), ir_attr_int("reverse", 0)};
    ValId within = dec_op(c, IR_OP_CUMSUM, &xb, 1, r, 3);
    ValId before = prefix_sum(c, dec_reduce(c, IR_RED_SUM, xb, &ax1, 1, false), sum);
    ValId all = dec_bin(c, IR_BIN_ADD, within, dec_reshape(c, before, col, 2));
    return dec_slice_axis(c, dec_reshape(c, all, &total, 1), 0, 0, 1, n);
}

ValId dec_dyn_slots(DecCtx *c, ValId keep, ValId *count)
{
    ValId pos = prefix_sum(c, dec_cast(c, keep, IR_DT_I32), count);
    return dec_select(c, keep, pos, dec_scalar(c->g, IR_DT_I32, -1));
}

ValId dec_dyn_scatter(DecCtx *c, ValId rows, ValId slots, int64_t size)
{
    ValId in[2] = {rows, slots};
    IrAttr a = ir_attr_int("size", size);
    return dec_op(c, IR_OP_SCATTER, in, 2, &a, 1);
}

ValId dec_dyn_iota(DecCtx *c, int64_t n, IrDType t)
{
    ValId one = dec_expand(c, dec_scalar(c->g, t, 1), &n, 1);
    IrAttr a[3] = {ir_attr_int("axis", 0), ir_attr_int("exclusive", 1), ir_attr_int("reverse", 0)};
    return dec_op(c, IR_OP_CUMSUM, &one, 1, a, 3);
}

void dec_dyn_front_perm(int r, int ax, int64_t *perm, int64_t *inv)
{
    int k = 0;
    perm[k++] = ax;
    for (int i = 0; i < r; i++)
        if (i != ax)
            perm[k++] = i;
    for (int i = 0; i < r; i++)
        inv[perm[i]] = i;
}

ValId dec_dyn_rows(DecCtx *c, ValId x, int ax)
{
    IrType t = *dec_ty(c, x);
    int64_t perm[IR_MAX_RANK], inv[IR_MAX_RANK], dims[2] = {t.dims[ax], 1};
    for (int i = 0; i < t.rank; i++)
        dims[1] *= i == ax ? 1 : t.dims[i];
    dec_dyn_front_perm(t.rank, ax, perm, inv);
    return dec_reshape(c, dec_transpose(c, x, perm), dims, 2);
}

ValId dec_dyn_unrows(DecCtx *c, ValId rows, const IrType *like, int ax)
{
    int64_t perm[IR_MAX_RANK], inv[IR_MAX_RANK], dims[IR_MAX_RANK];
    dec_dyn_front_perm(like->rank, ax, perm, inv);
    for (int i = 0; i < like->rank; i++)
        dims[i] = i == 0 ? dec_ty(c, rows)->dims[0] : like->dims[perm[i]];
    return dec_transpose(c, dec_reshape(c, rows, dims, like->rank), inv);
}

/* x != 0 as bool (bool x as itself). */
static ValId nonzero_mask(DecCtx *c, ValId x)
{
    if (dec_ty(c, x)->dtype == IR_DT_BOOL)
        return x;
    return dec_bin(c, IR_BIN_NE, x, dec_scalar(c->g, dec_ty(c, x)->dtype, 0));
}

/* Coordinates of the flat positions 0..N-1 of shape t (a scalar as [1]): [N, R] int64.
 * Column i broadcasts 0..dims[i]-1 over t (constants fold within the fold budget). */
static ValId coordinates(DecCtx *c, const IrType *t, int64_t n)
{
    int r = t->rank ? t->rank : 1;
    int64_t dims[IR_MAX_RANK], col[2] = {n, 1};
    for (int i = 0; i < r; i++)
        dims[i] = t->rank ? t->dims[i] : 1;
    ValId cols[IR_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int64_t *v = ir_scratch(c->g, (size_t)(dims[i] + 1) * sizeof *v), shape[IR_MAX_RANK];
        for (int64_t k = 0; k < dims[i]; k++)
            v[k] = k;
        for (int j = 0; j < r; j++)
            shape[j] = j == i ? dims[i] : 1;
        ValId iota = dec_const_i64(c->g, shape, r, v);
        cols[i] = dec_reshape(c, dec_expand(c, iota, dims, r), col, 2);
    }
    return dec_concat(c, cols, r, 1);
}

/* NonZero(X) -> int64 [rank, numel] with the extent of axis 1 data-dependent. */
bool dec_nonzero(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    IrType t = *dec_ty(c, x);              /* a copy: building nodes moves the values */
    int64_t n = dec_numel(&t), r = t.rank ? t.rank : 1;
    if (!dec_fits(c, n * r, 8, "NonZero result"))
        return false;
    if (n == 0) {
        int64_t dims[2] = {r, 0};
        c->out[0] = dec_const_i64(c->g, dims, 2, NULL);
        return true;
    }
    ValId count, keep = nonzero_mask(c, dec_reshape(c, x, &n, 1));
    ValId slots = dec_dyn_slots(c, keep, &count);
    ValId rows = dec_dyn_scatter(c, coordinates(c, &t, n), slots, n);
    if (ir_failed(c->g))
        return false;
    ir_dyn_add(c->g, rows, 0, count);
    int64_t perm[2] = {1, 0};
    c->out[0] = dec_transpose(c, rows, perm);
    ir_dyn_add(c->g, c->out[0], 1, count);
    return true;
}

/* Compress with a constant condition: a GATHER of the selected positions. */
static bool compress_static(DecCtx *c, ValId x, ValId cond, int ax, int64_t m)
{
    const IrValue *cv = ir_val(c->g, cond);
    int64_t *idx = ir_scratch(c->g, (size_t)(m + 1) * sizeof *idx), k = 0;
    for (int64_t i = 0; i < m; i++)
        if (dec_load(cv->type.dtype, cv->data, i) != 0)
            idx[k++] = i;
    c->out[0] = dec_gather(c, x, dec_const_i64(c->g, &k, 1, idx), ax);
    return !ir_failed(c->g);
}

/* Compress(input, condition, axis?): slices (or flat elements) where condition holds;
 * condition entries past the axis length, and slices past the condition, are ignored. */
bool dec_compress(DecCtx *c)
{
    ValId x = dec_in(c, 0), cond = dec_in(c, 1);
    IrType ct = *dec_ty(c, cond);
    if (ct.rank != 1) {
        dec_err(c, "condition must be 1-D, not of rank %d", ct.rank);
        return false;
    }
    int ax = 0;
    bool has_axis = dec_has_attr(c, "axis");
    if (has_axis && !dec_axis(c, dec_ai(c, "axis", 0), dec_ty(c, x)->rank, &ax))
        return false;
    if (!has_axis) {
        int64_t n = dec_numel(dec_ty(c, x));
        x = dec_reshape(c, x, &n, 1);
    }
    int64_t m = ct.dims[0] < dec_ty(c, x)->dims[ax] ? ct.dims[0] : dec_ty(c, x)->dims[ax];
    x = dec_slice_axis(c, x, ax, 0, 1, m);
    cond = dec_slice_axis(c, cond, 0, 0, 1, m);
    if (ir_is_const(c->g, cond) || m == 0)
        return compress_static(c, x, cond, ax, ir_is_const(c->g, cond) ? m : 0);
    IrType like = *dec_ty(c, x);
    ValId count, keep = dec_ty(c, cond)->dtype == IR_DT_BOOL ? cond : nonzero_mask(c, cond);
    ValId slots = dec_dyn_slots(c, keep, &count);
    ValId rows = dec_dyn_scatter(c, dec_dyn_rows(c, x, ax), slots, m);
    if (ir_failed(c->g))
        return false;
    ir_dyn_add(c->g, rows, 0, count);
    c->out[0] = dec_dyn_unrows(c, rows, &like, ax);
    ir_dyn_add(c->g, c->out[0], ax, count);
    return true;
}
