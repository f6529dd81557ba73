/* onnx_reduce.c: decomposition of ONNX reductions, softmax variants, arg-reductions
 * and the scans CumSum and CumProd into REDUCE / ARGREDUCE / CUMSUM and pointwise
 * core ops.
 *
 * CumProd is a log-step (Hillis-Steele) scan: ceil(log2 n) multiplications by the
 * running product shifted by 1, 2, 4, ... (SLICE + PAD with 1). For both scans a
 * runtime axis input computes the scan on every candidate axis and SELECTs on the
 * axis value.
 */
#include <math.h>
#include <string.h>

#include "onnx.h"
#include "passes/decompose/dec_index.h"

/* Sorted, de-duplicated, non-negative reduction axes of x: from the attribute
 * (opset < from_opset) or input 1. *all is set when every axis is reduced because
 * none were given; *noop when none are given and noop_with_empty_axes is set. */
static bool red_axes(DecCtx *c, int r, int64_t from_opset, int64_t *axes, int *n, bool *noop)
{
    int64_t v[IR_MAX_RANK * 2];
    int cnt = -1;
    if (c->opset < from_opset) {
        const int64_t *a;
        cnt = dec_aints(c, "axes", &a);
        if (cnt > 2 * IR_MAX_RANK) {
            dec_err(c, "too many axes");
            return false;
        }
        for (int i = 0; i < cnt; i++)
            v[i] = a[i];
    } else if (dec_in(c, 1) != IR_NONE && dec_numel(dec_ty(c, dec_in(c, 1))) != 0 &&
               !dec_const_ints(c, dec_in(c, 1), "axes", v, 2 * IR_MAX_RANK, &cnt)) {
        return false;
    }
    *noop = false;
    bool mask[IR_MAX_RANK] = {false};
    if (cnt <= 0) {
        if (c->opset >= from_opset && dec_ai(c, "noop_with_empty_axes", 0)) {
            *noop = true;
            *n = 0;
            return true;
        }
        for (int i = 0; i < r; i++)
            mask[i] = true;
    }
    for (int i = 0; i < cnt; i++) {
        int a;
        if (!dec_axis(c, v[i], r, &a))
            return false;
        mask[a] = true;
    }
    *n = 0;
    for (int i = 0; i < r; i++)
        if (mask[i])
            axes[(*n)++] = i;
    return true;
}

/* Shape of x with `axes` reduced (kept as 1 when keep). */
static int reduced_dims(const IrType *t, const int64_t *axes, int n, bool keep, int64_t *dims)
{
    int k = 0;
    for (int i = 0, j = 0; i < t->rank; i++) {
        bool red = j < n && axes[j] == i;
        j += red;
        if (!red)
            dims[k++] = t->dims[i];
        else if (keep)
            dims[k++] = 1;
    }
    return k;
}

typedef struct {
    const char *k;                         /* the op type after "Reduce" */
    bool keep;                             /* keepdims */
} RedArg;

static ValId red_apply(DecCtx *c, ValId x, const int64_t *axes, int n, const void *arg);

/* ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare. The axes input may be a
 * runtime input (onnx_runshape.c: one result per candidate axes set). */
bool dec_reduce_op(DecCtx *c)
{
    const char *op = c->n->foreign.op_type;
    ValId x = dec_in(c, 0);
    if (x == IR_NONE)
        return false;
    const IrType *t = dec_ty(c, x);
    int64_t axes[IR_MAX_RANK];
    int n;
    bool noop, keep = dec_ai(c, "keepdims", 1) != 0;
    int64_t from = strcmp(op, "ReduceSum") == 0 ? 13 : 18;
    ValId av = dec_in(c, 1);
    if (c->opset >= from && av != IR_NONE && !ir_is_const(c->g, av) &&
        dec_numel(dec_ty(c, av)) > 0) {
        int L = (int)dec_numel(dec_ty(c, av));
        return dec_rt_axes(c, DEC_RT_REDUCE, x, av, keep ? t->rank : t->rank - L, red_apply,
                           &(RedArg){op + 6, keep});
    }
    if (!red_axes(c, t->rank, from, axes, &n, &noop))
        return false;
    if (noop || n == 0) {
        c->out[0] = x;
        return true;
    }
    c->out[0] = red_apply(c, x, axes, n, &(RedArg){op + 6, keep});
    return true;
}

/* The reduction named k ("Sum", "Mean", ... after "Reduce") of x over axes. */
static ValId red_apply(DecCtx *c, ValId x, const int64_t *axes, int n, const void *arg)
{
    const char *k = ((const RedArg *)arg)->k;
    bool keep = ((const RedArg *)arg)->keep;
    const IrType *t = dec_ty(c, x);
    ValId y;
    if (strcmp(k, "Sum") == 0) {
        y = dec_reduce(c, IR_RED_SUM, x, axes, n, keep);
    } else if (strcmp(k, "Mean") == 0) {
        y = dec_mean(c, x, axes, n, keep);
    } else if (strcmp(k, "Max") == 0 || strcmp(k, "Min") == 0 || strcmp(k, "Prod") == 0) {
        int fn = k[1] == 'a' ? IR_RED_MAX : k[1] == 'i' ? IR_RED_MIN : IR_RED_PROD;
        y = dec_reduce(c, fn, x, axes, n, keep);
    } else if (strcmp(k, "L1") == 0) {
        y = dec_reduce(c, IR_RED_SUM, dec_un(c, IR_UN_ABS, x), axes, n, keep);
    } else if (strcmp(k, "L2") == 0) {
        y = dec_un(c, IR_UN_SQRT, dec_reduce(c, IR_RED_SUM, dec_bin(c, IR_BIN_MUL, x, x), axes, n, keep));
    } else if (strcmp(k, "SumSquare") == 0) {
        y = dec_reduce(c, IR_RED_SUM, dec_bin(c, IR_BIN_MUL, x, x), axes, n, keep);
    } else if (strcmp(k, "LogSum") == 0) {
        y = dec_un(c, IR_UN_LOG, dec_reduce(c, IR_RED_SUM, x, axes, n, keep));
    } else { /* LogSumExp, stabilised by the maximum */
        ValId m = dec_reduce(c, IR_RED_MAX, x, axes, n, true);
        ValId s = dec_reduce(c, IR_RED_SUM, dec_un(c, IR_UN_EXP, dec_bin(c, IR_BIN_SUB, x, m)), axes, n, true);
        y = dec_bin(c, IR_BIN_ADD, dec_un(c, IR_UN_LOG, s), m);
        if (!keep) {
            int64_t dims[IR_MAX_RANK];
            int k2 = reduced_dims(t, axes, n, false, dims);
            y = dec_reshape(c, y, dims, k2);
        }
    }
    return y;
}

/* One-hot of the first maximum along the last axis of x2 [outer, inner]: its index
 * compared with a constant of positions, which cannot follow a bounded symbolic axis
 * (the ARGREDUCE marked whole: pass_symdim refuses such an axis). */
static ValId hardmax2(DecCtx *c, ValId x, int axis)
{
    const IrType *t = dec_ty(c, x);
    IrAttr a[5] = {ir_attr_int("fn", IR_RED_MAX), ir_attr_int("axis", axis), ir_attr_int("keepdims", 1),
                   ir_attr_int("select_last", 0), ir_attr_int("whole", 1)};
    ValId am = dec_op(c, IR_OP_ARGREDUCE, &x, 1, a, c->g->nsymdims ? 5 : 4);
    int64_t n = t->dims[axis], dims[IR_MAX_RANK];
    for (int i = 0; i < t->rank; i++)
        dims[i] = i == axis ? n : 1;
    int64_t *v = ir_scratch(c->g, sizeof(int64_t) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = i;
    ValId eq = dec_bin(c, IR_BIN_EQ, am, dec_const_i64(c->g, dims, t->rank, v));
    return dec_cast(c, eq, t->dtype);
}

/* Softmax, LogSoftmax, Hardmax. Before opset 13 the input is treated as 2-D
 * [prod(dims[:axis]), prod(dims[axis:])]: the reductions run over every axis from
 * `axis` on. From opset 13 they run over the one axis. Softmax is stabilised by
 * subtracting the maximum. */
bool dec_softmax(DecCtx *c)
{
    const char *op = c->n->foreign.op_type;
    ValId x = dec_in(c, 0);
    if (x == IR_NONE)
        return false;
    IrType t = *dec_ty(c, x);
    int r = t.rank, axis;
    bool old = c->opset < 13;
    if (!dec_axis(c, dec_ai(c, "axis", old ? 1 : -1), r, &axis))
        return false;
    int64_t axes[IR_MAX_RANK];
    int n = 0;
    for (int i = axis; i < (old ? r : axis + 1); i++)
        axes[n++] = i;
    if (strcmp(op, "Hardmax") == 0) {
        if (!old || n == 1) {
            c->out[0] = hardmax2(c, x, axis);
            return true;
        }
        int64_t d2[2] = {1, 1};
        for (int i = 0; i < r; i++)
            d2[i >= axis] *= t.dims[i];
        ValId h = hardmax2(c, dec_reshape(c, x, d2, 2), 1);
        c->out[0] = dec_reshape(c, h, t.dims, r);
        return true;
    }
    if (r == 0) {
        dec_err(c, "input must have rank >= 1");
        return false;
    }
    ValId m = dec_reduce(c, IR_RED_MAX, x, axes, n, true);
    ValId d = dec_bin(c, IR_BIN_SUB, x, m);
    ValId e = dec_un(c, IR_UN_EXP, d);
    ValId s = dec_reduce(c, IR_RED_SUM, e, axes, n, true);
    if (strcmp(op, "LogSoftmax") == 0)
        c->out[0] = dec_bin(c, IR_BIN_SUB, d, dec_un(c, IR_UN_LOG, s));
    else
        c->out[0] = dec_bin(c, IR_BIN_DIV, e, s);
    return true;
}

bool dec_argminmax(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    if (x == IR_NONE)
        return false;
    int axis;
    if (!dec_axis(c, dec_ai(c, "axis", 0), dec_ty(c, x)->rank, &axis))
        return false;
    bool mx = strcmp(c->n->foreign.op_type, "ArgMax") == 0;
    IrAttr a[4] = {ir_attr_int("fn", mx ? IR_RED_MAX : IR_RED_MIN), ir_attr_int("axis", axis),
                   ir_attr_int("keepdims", dec_ai(c, "keepdims", 1) != 0),
                   ir_attr_int("select_last", dec_ai(c, "select_last_index", 0) != 0)};
    c->out[0] = dec_op(c, IR_OP_ARGREDUCE, &x, 1, a, 4);
    return true;
}

/* CUMSUM of x along axis with the node's exclusive and reverse attributes. */
static ValId cumsum_axis(DecCtx *c, ValId x, int axis)
{
    IrAttr a[3] = {ir_attr_int("axis", axis), ir_attr_int("exclusive", dec_ai(c, "exclusive", 0) != 0),
                   ir_attr_int("reverse", dec_ai(c, "reverse", 0) != 0)};
    return dec_op(c, IR_OP_CUMSUM, &x, 1, a, 3);
}

/* The scan of every candidate axis of x, SELECTed on the runtime axis value av (a
 * rank-0 int64): axis i or i - rank picks scan(i); the last axis is the default. */
static ValId select_axis(DecCtx *c, ValId x, ValId av, ValId (*scan)(DecCtx *, ValId, int))
{
    int r = dec_ty(c, x)->rank;
    ValId y = scan(c, x, r - 1);
    for (int i = r - 2; i >= 0; i--) {
        ValId hit = dec_bin(c, IR_BIN_OR, dec_bin_s(c, IR_BIN_EQ, av, i),
                            dec_bin_s(c, IR_BIN_EQ, av, i - r));
        y = dec_select(c, hit, scan(c, x, i), y);
    }
    return y;
}

/* CumSum(x, axis): the axis may be a runtime scalar (every candidate axis is scanned
 * and the result SELECTed on its value). */
bool dec_cumsum(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    double ax;
    int axis;
    if (x == IR_NONE || dec_in(c, 1) == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    int64_t a;
    if (!dix_const_int(c, 1, &a) && dec_ty(c, x)->rank >= 1) {
        ValId av = dix_scalar(c, dec_in(c, 1), "axis", IR_DT_I64);
        if (av == IR_NONE)
            return false;
        c->out[0] = select_axis(c, x, av, cumsum_axis);
        return true;
    }
    if (!dec_const_scalar(c, dec_in(c, 1), "axis", &ax) ||
        !dec_axis(c, fabs(ax) < 1e6 ? (int64_t)ax : INT32_MAX, dec_ty(c, x)->rank, &axis))
        return false;
    c->out[0] = cumsum_axis(c, x, axis);
    return true;
}

/* x shifted by d along axis (towards higher indices, or lower when rev), the
 * vacated positions filled with `fill`. */
static ValId shift_axis(DecCtx *c, ValId x, int axis, int64_t d, bool rev, double fill)
{
    const IrType *t = dec_ty(c, x);
    int r = t->rank;
    int64_t n = t->dims[axis], pads[2 * IR_MAX_RANK] = {0};
    if (d >= n) { /* everything shifted out */
        ValId z = dec_bin_s(c, IR_BIN_MUL, x, 0.0);
        return dec_bin_s(c, IR_BIN_ADD, z, fill);
    }
    ValId s = dec_slice_axis(c, x, axis, rev ? d : 0, 1, n - d);
    pads[rev ? r + axis : axis] = d;
    return dec_pad(c, s, pads, NULL, fill);
}

/* See onnx.h: log2(n) rounds of combining with a copy shifted by 1, 2, 4, ... */
ValId dec_scan_axis(DecCtx *c, ValId x, int axis, bool rev, double fill, DecCombine op)
{
    int64_t n = dec_ty(c, x)->dims[axis];
    for (int64_t d = 1; d < n; d *= 2)
        x = op(c, x, shift_axis(c, x, axis, d, rev, fill));
    return x;
}

/* a * b (the cumulative product's combination). */
static ValId mul_op(DecCtx *c, ValId a, ValId b)
{
    return dec_bin(c, IR_BIN_MUL, a, b);
}

/* See onnx.h. */
ValId dec_cumprod_axis(DecCtx *c, ValId x, int axis, bool excl, bool rev)
{
    ValId y = excl ? shift_axis(c, x, axis, 1, rev, 1.0) : x;
    return dec_scan_axis(c, y, axis, rev, 1.0, mul_op);
}

/* cumprod_axis with the node's exclusive and reverse attributes. */
static ValId cumprod_scan(DecCtx *c, ValId x, int axis)
{
    return dec_cumprod_axis(c, x, axis, dec_ai(c, "exclusive", 0) != 0, dec_ai(c, "reverse", 0) != 0);
}

/* CumProd(x, axis): the axis may be a runtime scalar. */
bool dec_cumprod(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    if (x == IR_NONE || dec_in(c, 1) == IR_NONE) {
        dec_err(c, "missing x or axis input");
        return false;
    }
    int r = dec_ty(c, x)->rank, axis;
    bool excl = dec_ai(c, "exclusive", 0) != 0, rev = dec_ai(c, "reverse", 0) != 0;
    int64_t a;
    if (r < 1) {
        dec_err(c, "x must have rank >= 1");
        return false;
    }
    if (dix_const_int(c, 1, &a)) {
        if (!dec_axis(c, a, r, &axis))
            return false;
        c->out[0] = dec_cumprod_axis(c, x, axis, excl, rev);
        return true;
    }
    ValId av = dix_scalar(c, dec_in(c, 1), "axis", IR_DT_I64);
    if (av == IR_NONE)
        return false;
    c->out[0] = select_axis(c, x, av, cumprod_scan);
    return true;
}
