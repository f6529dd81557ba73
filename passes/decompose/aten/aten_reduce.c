/* aten_reduce.c: ATen reductions (sum/mean/amax/amin/prod/any/all/logsumexp/vector
 * norm, var/std, argmax/argmin, max/min) and scans (cumsum, cumprod, logcumsumexp,
 * diff), as REDUCE, ARGREDUCE, CUMSUM and pointwise core ops; cumprod and
 * logcumsumexp share the doubling scan of ONNX CumProd (dec_scan_axis).
 */
#include <math.h>
#include <string.h>

#include "aten.h"
#include "passes/decompose/onnx/onnx.h"

/* Reduction axes from "dim" (int, list, absent or empty = all), sorted and unique. */
static bool reduce_axes(DecCtx *c, int r, int64_t *axes, int *n)
{
    int64_t d[IR_MAX_RANK];
    int got = aten_ints(c, "dim", d, IR_MAX_RANK, 0);
    bool seen[IR_MAX_RANK] = {false};
    if (got == -2)
        return false;
    for (int i = 0; i < got; i++) {
        int a;
        if (!dec_axis(c, d[i], r > 0 ? r : 1, &a))
            return false;
        if (r > 0)
            seen[a] = true;
    }
    *n = 0;
    for (int i = 0; i < r; i++)
        if (seen[i] || got <= 0)
            axes[(*n)++] = i;
    return true;
}

/* sum, mean, amax, amin, prod, any, all, logsumexp, linalg_vector_norm. */
bool aten_reduce(DecCtx *c)
{
    char buf[128];
    const char *nm = aten_base(c->n->foreign.op_type, buf, sizeof buf);
    ValId x;
    if (!aten_need(c, "self", &x))
        return false;
    const IrType *o = aten_oty(c, 0);
    int r = dec_ty(c, x)->rank, n;
    int64_t axes[IR_MAX_RANK];
    if (!reduce_axes(c, r, axes, &n))
        return false;
    bool keep = dec_ai(c, "keepdim", 0) != 0;
    ValId y;
    if (!strcmp(nm, "any") || !strcmp(nm, "all")) {
        IrDType t = dec_ty(c, x)->dtype;
        if (t != IR_DT_BOOL)
            x = dec_bin(c, IR_BIN_NE, x, dec_scalar(c->g, t, 0));
        y = dec_reduce(c, nm[1] == 'n' ? IR_RED_MAX : IR_RED_MIN, x, axes, n, keep);
    } else {
        x = dec_cast(c, x, o->dtype);
        if (!strcmp(nm, "sum"))
            y = dec_reduce(c, IR_RED_SUM, x, axes, n, keep);
        else if (!strcmp(nm, "mean"))
            y = dec_mean(c, x, axes, n, keep);
        else if (!strcmp(nm, "amax"))
            y = dec_reduce(c, IR_RED_MAX, x, axes, n, keep);
        else if (!strcmp(nm, "amin"))
            y = dec_reduce(c, IR_RED_MIN, x, axes, n, keep);
        else if (!strcmp(nm, "prod"))
            y = dec_reduce(c, IR_RED_PROD, x, axes, n, keep);
        else if (!strcmp(nm, "logsumexp")) {
            ValId m = dec_reduce(c, IR_RED_MAX, x, axes, n, true);
            ValId s = dec_reduce(c, IR_RED_SUM, dec_un(c, IR_UN_EXP, dec_bin(c, IR_BIN_SUB, x, m)),
                                 axes, n, true);
            y = dec_bin(c, IR_BIN_ADD, dec_un(c, IR_UN_LOG, s), m);
        } else { /* linalg_vector_norm(ord): 1, 2 or inf */
            double ord = 2;
            aten_num(c, "ord", &ord);
            ValId a = dec_un(c, IR_UN_ABS, x);
            if (ord == 1)
                y = dec_reduce(c, IR_RED_SUM, a, axes, n, keep);
            else if (isinf(ord) && ord > 0)
                y = dec_reduce(c, IR_RED_MAX, a, axes, n, keep);
            else if (ord == 2)
                y = dec_un(c, IR_UN_SQRT, dec_reduce(c, IR_RED_SUM, dec_bin(c, IR_BIN_MUL, x, x),
                                                     axes, n, keep));
            else {
                dec_err(c, "vector norm of order %g is not supported", ord);
                return false;
            }
        }
    }
    c->out[0] = dec_reshape(c, aten_like_out(c, y, 0), o->dims, o->rank);
    return true;
}

/* var/std (correction, or unbiased for the older overloads), var_mean/std_mean. */
bool aten_var(DecCtx *c)
{
    char buf[128];
    bool sd = strncmp(aten_base(c->n->foreign.op_type, buf, sizeof buf), "std", 3) == 0;
    ValId x;
    if (!aten_need(c, "self", &x))
        return false;
    const IrType *o = aten_oty(c, 0);
    x = dec_cast(c, x, o->dtype);
    const IrType *t = dec_ty(c, x);
    int n;
    int64_t axes[IR_MAX_RANK], cnt = 1;
    if (!reduce_axes(c, t->rank, axes, &n))
        return false;
    for (int i = 0; i < n; i++)
        cnt *= t->dims[axes[i]];
    double corr = dec_ai(c, "unbiased", 1) ? 1 : 0;
    aten_num(c, "correction", &corr);
    ValId d = dec_bin(c, IR_BIN_SUB, x, dec_mean(c, x, axes, n, true));
    ValId s = dec_reduce(c, IR_RED_SUM, dec_bin(c, IR_BIN_MUL, d, d), axes, n,
                         dec_ai(c, "keepdim", 0) != 0);
    double den = (double)cnt - corr;
    ValId v = dec_bin_s(c, IR_BIN_MUL, s, den > 0 ? 1.0 / den : NAN);
    c->out[0] = dec_reshape(c, sd ? dec_un(c, IR_UN_SQRT, v) : v, o->dims, o->rank);
    if (c->n->nout > 1) { /* var_mean / std_mean: (var or std, mean) */
        const IrType *om = aten_oty(c, 1);
        ValId m = dec_mean(c, x, axes, n, dec_ai(c, "keepdim", 0) != 0);
        c->out[1] = dec_reshape(c, m, om->dims, om->rank);
    }
    return true;
}

/* ARGREDUCE along one axis (dim absent: over the flattened input). */
static ValId argreduce(DecCtx *c, ValId x, int fn, bool has_dim, int ax, bool keep)
{
    if (!has_dim) {
        int64_t n = dec_numel(dec_ty(c, x));
        x = dec_reshape(c, x, &n, 1);
        ax = 0;
    }
    IrAttr at[4] = {ir_attr_int("fn", fn), ir_attr_int("axis", ax),
                    ir_attr_int("keepdims", keep), ir_attr_int("select_last", 0)};
    return dec_op(c, IR_OP_ARGREDUCE, &x, 1, at, 4);
}

/* argmax/argmin(self, dim, keepdim). */
bool aten_argminmax(DecCtx *c)
{
    char buf[128];
    bool mx = strcmp(aten_base(c->n->foreign.op_type, buf, sizeof buf), "argmax") == 0;
    ValId x;
    if (!aten_need(c, "self", &x))
        return false;
    int r = dec_ty(c, x)->rank, ax = 0;
    bool has_dim = dec_has_attr(c, "dim");
    if (has_dim && !dec_axis(c, dec_ai(c, "dim", 0), r > 0 ? r : 1, &ax))
        return false;
    const IrType *o = aten_oty(c, 0);
    ValId y = argreduce(c, x, mx ? IR_RED_MAX : IR_RED_MIN, has_dim && r > 0, ax,
                        dec_ai(c, "keepdim", 0) != 0);
    c->out[0] = dec_reshape(c, aten_like_out(c, y, 0), o->dims, o->rank);
    return true;
}

/* max/min: .other is elementwise, .dim gives (values, indices), .default reduces all. */
bool aten_minmax_dim(DecCtx *c)
{
    char buf[128];
    bool mx = strcmp(aten_base(c->n->foreign.op_type, buf, sizeof buf), "max") == 0;
    if (aten_in(c, "other") != IR_NONE)
        return aten_binary(c);
    ValId x;
    if (!aten_need(c, "self", &x))
        return false;
    int fn = mx ? IR_RED_MAX : IR_RED_MIN, r = dec_ty(c, x)->rank, ax = 0;
    const IrType *o = aten_oty(c, 0);
    if (!dec_has_attr(c, "dim")) {
        int64_t axes[IR_MAX_RANK];
        for (int i = 0; i < r; i++)
            axes[i] = i;
        c->out[0] = dec_reshape(c, dec_reduce(c, fn, x, axes, r, false), o->dims, o->rank);
        return true;
    }
    if (!dec_axis(c, dec_ai(c, "dim", 0), r > 0 ? r : 1, &ax))
        return false;
    bool keep = dec_ai(c, "keepdim", 0) != 0;
    int64_t a = ax;
    c->out[0] = r ? dec_reduce(c, fn, x, &a, 1, keep) : x;
    if (c->n->nout > 1 && r > 0)
        c->out[1] = argreduce(c, x, fn, true, ax, keep);
    return true;
}

/* cumsum(self, dim, dtype). */
bool aten_cumsum(DecCtx *c)
{
    ValId x;
    if (!aten_need(c, "self", &x))
        return false;
    x = aten_like_out(c, x, 0);
    int r = dec_ty(c, x)->rank, ax;
    if (r == 0) {
        c->out[0] = x;
        return true;
    }
    if (!dec_axis(c, dec_ai(c, "dim", 0), r, &ax))
        return false;
    IrAttr at = ir_attr_int("axis", ax);
    c->out[0] = dec_op(c, IR_OP_CUMSUM, &x, 1, &at, 1);
    return true;
}

/* self cast to output 0's dtype and its scan axis (from "dim"); false when reported.
 * A 0-d self is its own scan (*ax = -1). */
static bool scan_args(DecCtx *c, ValId *x, int *ax)
{
    if (!aten_need(c, "self", x))
        return false;
    *x = aten_like_out(c, *x, 0);
    int r = dec_ty(c, *x)->rank;
    *ax = -1;
    return r == 0 || dec_axis(c, dec_ai(c, "dim", 0), r, ax);
}

/* cumprod(self, dim, dtype) (the ONNX CumProd scan). */
bool aten_cumprod(DecCtx *c)
{
    ValId x;
    int ax;
    if (!scan_args(c, &x, &ax))
        return false;
    c->out[0] = ax < 0 ? x : dec_cumprod_axis(c, x, ax, false, false);
    return true;
}

/* log(exp(a) + exp(b)) = max + log(1 + exp(min - max)); max itself when min is -inf
 * or max is +inf (where the difference could be NaN). */
static ValId logaddexp(DecCtx *c, ValId a, ValId b)
{
    ValId hi = dec_bin(c, IR_BIN_MAX, a, b), lo = dec_bin(c, IR_BIN_MIN, a, b);
    ValId e = dec_un(c, IR_UN_EXP, dec_bin(c, IR_BIN_SUB, lo, hi));
    ValId y = dec_bin(c, IR_BIN_ADD, hi, dec_un(c, IR_UN_LOG, dec_bin_s(c, IR_BIN_ADD, e, 1)));
    ValId inf = dec_bin(c, IR_BIN_OR, dec_bin_s(c, IR_BIN_EQ, lo, -INFINITY),
                        dec_bin_s(c, IR_BIN_EQ, hi, INFINITY));
    return dec_select(c, inf, hi, y);
}

/* logcumsumexp(self, dim): a scan of logaddexp, exact for any spread of values (no
 * shared shift that could underflow early terms). */
bool aten_logcumsumexp(DecCtx *c)
{
    ValId x;
    int ax;
    if (!scan_args(c, &x, &ax))
        return false;
    if (!ir_dtype_is_float(dec_ty(c, x)->dtype)) {
        dec_err(c, "logcumsumexp needs a float tensor");
        return false;
    }
    c->out[0] = ax < 0 ? x : dec_scan_axis(c, x, ax, false, -INFINITY, logaddexp);
    return true;
}

/* diff(self, n, dim, prepend, append): n rounds of x[1:] - x[:-1] (bools: x[1:] != x[:-1]). */
bool aten_diff(DecCtx *c)
{
    ValId x;
    if (!aten_need(c, "self", &x))
        return false;
    IrDType t = dec_ty(c, x)->dtype;
    int r = dec_ty(c, x)->rank, ax;
    if (r == 0 || !dec_axis(c, dec_ai(c, "dim", -1), r, &ax))
        return false;
    ValId parts[3];
    int np = 0;
    ValId pre = aten_in(c, "prepend"), app = aten_in(c, "append");
    if (pre != IR_NONE)
        parts[np++] = dec_cast(c, pre, t);
    parts[np++] = x;
    if (app != IR_NONE)
        parts[np++] = dec_cast(c, app, t);
    x = dec_concat(c, parts, np, ax);
    int64_t rounds = dec_ai(c, "n", 1);
    for (int64_t k = 0; k < rounds; k++) {
        int64_t len = dec_ty(c, x)->dims[ax];
        if (len == 0)
            break;
        ValId hi = dec_slice_axis(c, x, ax, 1, 1, len - 1);
        ValId lo = dec_slice_axis(c, x, ax, 0, 1, len - 1);
        x = dec_bin(c, t == IR_DT_BOOL ? IR_BIN_NE : IR_BIN_SUB, hi, lo);
    }
    c->out[0] = x;
    return true;
}
