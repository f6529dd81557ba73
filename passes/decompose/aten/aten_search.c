/* aten_search.c: membership and sorted-search ops (isin, bucketize, searchsorted).
 *
 * Each compares every element with every candidate (broadcast along a new last axis)
 * and reduces over the candidates: any (isin) or a count of the boundaries below
 * the value (bucketize, searchsorted; the boundaries must be sorted, as torch
 * requires). Candidates may be known only at run time. The comparison intermediate
 * is refused past DIX_ONEHOT_MAX elements.
 */
#include <math.h>
#include <string.h>

#include "aten.h"
#include "passes/decompose/dec_index.h"

/* The tensor argument name, or the scalar argument of that name as a rank-0 value
 * of dtype t (scalar overloads); IR_NONE (reported) when neither is present. */
static ValId tensor_or_scalar(DecCtx *c, const char *name, IrDType t)
{
    ValId v = aten_in(c, name);
    return v != IR_NONE ? v : aten_operand(c, name, t);
}

/* x with a trailing axis of size 1. */
static ValId add_last(DecCtx *c, ValId x)
{
    const IrType *t = dec_ty(c, x);
    int64_t dims[IR_MAX_RANK];
    memcpy(dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
    dims[t->rank] = 1;
    return dec_reshape(c, x, dims, t->rank + 1);
}

/* Refuse a comparison of a values against b candidates past DIX_ONEHOT_MAX. */
static bool cmp_fits(DecCtx *c, int64_t a, int64_t b)
{
    if (a > 0 && b > DIX_ONEHOT_MAX / a) {
        dec_err(c, "unsupported: comparing %lld values with %lld candidates (more than "
                "%lld pairs)", (long long)a, (long long)b, (long long)DIX_ONEHOT_MAX);
        return false;
    }
    return true;
}

/* isin (Tensor_Tensor, Tensor_Scalar, Scalar_Tensor): whether each element equals
 * one of the test elements; invert negates. */
bool aten_isin(DecCtx *c)
{
    ValId e = tensor_or_scalar(c, "elements", IR_DT_F64);
    const char *tn = dec_has_attr(c, "test_element") ? "test_element" : "test_elements";
    ValId t = e == IR_NONE ? IR_NONE : tensor_or_scalar(c, tn, IR_DT_F64);
    if (e == IR_NONE || t == IR_NONE)
        return false;
    IrDType dt = aten_promote(dec_ty(c, e)->dtype, dec_ty(c, t)->dtype);
    int64_t ne = dec_numel(dec_ty(c, e)), nt = dec_numel(dec_ty(c, t)), ax = dec_ty(c, e)->rank;
    if (!cmp_fits(c, ne, nt))
        return false;
    ValId eq = dec_bin(c, IR_BIN_EQ, add_last(c, dec_cast(c, e, dt)),
                       dec_reshape(c, dec_cast(c, t, dt), &nt, 1));
    ValId y = nt ? dec_reduce(c, IR_RED_MAX, eq, &ax, 1, false)
                 : dec_expand(c, dec_scalar(c->g, IR_DT_BOOL, 0), dec_ty(c, e)->dims,
                              dec_ty(c, e)->rank);
    if (dec_ai(c, "invert", 0))
        y = dec_un(c, IR_UN_NOT, y);
    c->out[0] = y;
    return true;
}

/* Insertion index of each value v among the sorted boundaries seq: the count of
 * boundaries < v (left) or <= v (right); NaN values go last, as in torch. seq is
 * [M] (any values shape) or [..., M] with values [..., K] (same leading dims). */
static ValId insertion_index(DecCtx *c, ValId seq, ValId v, bool right)
{
    const IrType *ts = dec_ty(c, seq);
    IrDType dt = aten_promote(ts->dtype, dec_ty(c, v)->dtype);
    int64_t m = ts->rank ? ts->dims[ts->rank - 1] : 1, dims[IR_MAX_RANK];
    if (ts->rank > 1) { /* [..., M] -> [..., 1, M] against values [..., K, 1] */
        memcpy(dims, ts->dims, sizeof(int64_t) * (size_t)ts->rank);
        dims[ts->rank - 1] = 1;
        dims[ts->rank] = m;
        seq = dec_reshape(c, seq, dims, ts->rank + 1);
    } else {
        seq = dec_reshape(c, seq, &m, 1);
    }
    ValId vv = add_last(c, dec_cast(c, v, dt));
    ValId below = dec_bin(c, right ? IR_BIN_LE : IR_BIN_LT, dec_cast(c, seq, dt), vv);
    int64_t ax = dec_ty(c, v)->rank;
    ValId n = dec_reduce(c, IR_RED_SUM, dec_cast(c, below, IR_DT_I64), &ax, 1, false);
    if (ir_dtype_is_float(dt))
        n = dec_select(c, dec_un(c, IR_UN_ISNAN, dec_cast(c, v, dt)),
                       dec_scalar(c->g, IR_DT_I64, (double)m), n);
    return n;
}

/* bucketize(self, boundaries, out_int32, right) and searchsorted(sorted_sequence,
 * self, out_int32, right, side, sorter). */
bool aten_bucketize(DecCtx *c)
{
    char buf[128];
    bool search = strcmp(aten_base(c->n->foreign.op_type, buf, sizeof buf), "searchsorted") == 0;
    ValId seq;
    if (!aten_need(c, search ? "sorted_sequence" : "boundaries", &seq))
        return false;
    if (aten_in(c, "sorter") != IR_NONE) {
        dec_err(c, "unsupported: searchsorted with a sorter");
        return false;
    }
    ValId v = tensor_or_scalar(c, "self", dec_ty(c, seq)->dtype);
    if (v == IR_NONE)
        return false;
    const IrType *ts = dec_ty(c, seq), *tv = dec_ty(c, v);
    bool lead = ts->rank <= 1 || (tv->rank == ts->rank &&
                                 !memcmp(tv->dims, ts->dims, sizeof(int64_t) * (size_t)(ts->rank - 1)));
    if (!lead || (!search && ts->rank != 1)) {
        dec_err(c, "the boundaries must be 1-D, or (searchsorted) share all but the last "
                "dim with the values");
        return false;
    }
    int64_t m = ts->rank ? ts->dims[ts->rank - 1] : 1;
    if (!cmp_fits(c, dec_numel(tv), m))
        return false;
    bool right = dec_ai(c, "right", 0) != 0;
    if (dec_has_attr(c, "side"))
        right = strcmp(dec_as(c, "side", "left"), "right") == 0;
    c->out[0] = aten_like_out(c, insertion_index(c, seq, v, right), 0);
    return true;
}
