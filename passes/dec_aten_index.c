/* dec_aten_index.c: ATen indexing (index.Tensor, index_select, gather), reductions
 * (sum/mean/amax/amin/prod/any/all/logsumexp/vector norm, var/std, argmax/argmin,
 * max/min) and scans (cumsum, diff).
 *
 * Advanced indexing becomes one GATHER: the indexed dims are merged into one, the
 * index tensors combined into a linear index over it (negative indices wrapped).
 */
#include <math.h>
#include <string.h>

#include "dec_aten.h"

/* Integer index as i64 with negative entries wrapped by d. Folds for constants. */
static ValId wrap_index(DecCtx *c, ValId idx, int64_t d)
{
    idx = dec_cast(c, idx, IR_DT_I64);
    ValId neg = dec_bin(c, IR_BIN_LT, idx, dec_scalar(c->g, IR_DT_I64, 0));
    return dec_select(c, neg, dec_bin_s(c, IR_BIN_ADD, idx, (double)d), idx);
}

/* Move the dims listed in pos (k of them) to the front, others after in order. */
static ValId front_dims(DecCtx *c, ValId x, const int *pos, int k)
{
    int r = dec_ty(c, x)->rank, n = 0;
    int64_t perm[IR_MAX_RANK];
    bool used[IR_MAX_RANK] = {false};
    for (int j = 0; j < k; j++)
        perm[n++] = pos[j], used[pos[j]] = true;
    for (int i = 0; i < r; i++)
        if (!used[i])
            perm[n++] = i;
    return dec_transpose(c, x, perm);
}

/* index.Tensor(self, indices): torch advanced indexing with integer index tensors. */
bool aten_index(DecCtx *c)
{
    ValId x, idx[IR_MAX_RANK + 1];
    if (!aten_need(c, "self", &x))
        return false;
    const IrType *t = dec_ty(c, x);
    int n = aten_ins(c, "indices", idx, IR_MAX_RANK + 1), pos[IR_MAX_RANK], k = 0;
    if (n > t->rank) {
        dec_err(c, "%d indices for a tensor of rank %d", n, t->rank);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (idx[i] == IR_NONE)
            continue;
        IrDType it = dec_ty(c, idx[i])->dtype;
        if (!ir_dtype_is_int(it)) {
            dec_err(c, "indexing with a %s mask has a data-dependent shape",
                    ir_dtype_name(it));
            return false;
        }
        pos[k] = i;
        idx[k++] = idx[i];
    }
    if (k == 0) {
        c->out[0] = x;
        return true;
    }
    bool adjacent = pos[k - 1] - pos[0] == k - 1;
    int first = adjacent ? pos[0] : 0;
    int64_t dsz[IR_MAX_RANK];
    for (int j = 0; j < k; j++)
        dsz[j] = t->dims[pos[j]];
    if (!adjacent) {
        x = front_dims(c, x, pos, k);
        t = dec_ty(c, x);
    }
    /* merge dims first..first+k-1 and build the linear index over them */
    int64_t md[IR_MAX_RANK], merged = 1;
    int r = 0;
    for (int i = 0; i < t->rank; i++) {
        if (i > first && i < first + k)
            continue;
        md[r++] = i == first ? 0 : t->dims[i];
    }
    ValId lin = IR_NONE;
    for (int j = k - 1; j >= 0; j--) {
        ValId term = wrap_index(c, idx[j], dsz[j]);
        if (merged != 1)
            term = dec_bin_s(c, IR_BIN_MUL, term, (double)merged);
        lin = lin == IR_NONE ? term : dec_bin(c, IR_BIN_ADD, lin, term);
        merged *= dsz[j];
    }
    md[first] = merged;
    ValId y = dec_gather(c, dec_reshape(c, x, md, r), lin, first);
    const IrType *o = aten_oty(c, 0);
    c->out[0] = dec_reshape(c, y, o->dims, o->rank);
    return true;
}

/* index_select(self, dim, index). */
bool aten_index_select(DecCtx *c)
{
    ValId x, idx;
    if (!aten_need(c, "self", &x) || !aten_need(c, "index", &idx))
        return false;
    const IrType *t = dec_ty(c, x);
    int ax;
    if (!dec_axis(c, dec_ai(c, "dim", 0), t->rank > 0 ? t->rank : 1, &ax))
        return false;
    ValId y = dec_gather(c, x, wrap_index(c, idx, t->dims[ax]), ax);
    const IrType *o = aten_oty(c, 0);
    c->out[0] = dec_reshape(c, y, o->dims, o->rank);
    return true;
}

/* gather(self, dim, index): out[p] = self[p with p[dim] = index[p]], as one GATHER
 * from the flattened input at index*stride[dim] + (a constant for the other dims). */
bool aten_gather(DecCtx *c)
{
    ValId x, idx;
    if (!aten_need(c, "self", &x) || !aten_need(c, "index", &idx))
        return false;
    const IrType *t = dec_ty(c, x), *ti = dec_ty(c, idx);
    int ax, r = t->rank;
    if (!dec_axis(c, dec_ai(c, "dim", 0), r, &ax))
        return false;
    if (ti->rank != r || r == 0) {
        dec_err(c, "gather index must have the rank of the input (%d)", r);
        return false;
    }
    int64_t st[IR_MAX_RANK], n = dec_numel(ti), numel = dec_numel(t);
    st[r - 1] = 1;
    for (int i = r - 2; i >= 0; i--)
        st[i] = st[i + 1] * t->dims[i + 1];
    for (int i = 0; i < r; i++)
        if (i != ax && ti->dims[i] > t->dims[i]) {
            dec_err(c, "gather index dim %d (%lld) exceeds the input's (%lld)", i,
                    (long long)ti->dims[i], (long long)t->dims[i]);
            return false;
        }
    if (n > ATEN_MAX_CONST) {
        dec_err(c, "gather index of %lld elements is too large", (long long)n);
        return false;
    }
    int64_t *base = ir_alloc(c->g, (size_t)(n + 1) * sizeof *base);
    for (int64_t p = 0; p < n; p++) {
        int64_t rem = p, off = 0;
        for (int i = r - 1; i >= 0; i--) {
            if (i != ax)
                off += (rem % ti->dims[i]) * st[i];
            rem /= ti->dims[i];
        }
        base[p] = off;
    }
    ValId lin = dec_bin_s(c, IR_BIN_MUL, wrap_index(c, idx, t->dims[ax]), (double)st[ax]);
    lin = dec_bin(c, IR_BIN_ADD, lin, dec_const_i64(c->g, ti->dims, r, base));
    c->out[0] = dec_gather(c, dec_reshape(c, x, &numel, 1), lin, 0);
    return true;
}

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
