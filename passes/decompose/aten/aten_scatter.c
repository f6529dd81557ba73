/* aten_scatter.c: the ATen scatter family (scatter, scatter_add, scatter_reduce,
 * index_add) and masked_scatter.
 *
 * Every scatter along a dim goes through dec_scatter_along (onnx_scatter.c, the core
 * of ONNX ScatterElements): indices may be negative or known only at run time, and
 * repeated targets combine by the reduction. include_self=False and the "mean"
 * reduction are built from two scatters: the reduction of the updates alone (over
 * the reduction's identity) and a count of updates per target, SELECTed against the
 * original where nothing landed.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "aten.h"
#include "passes/decompose/dec_index.h"
#include "passes/decompose/onnx/onnx.h"

#define SCAT_MEAN (IR_RED_COUNT + 1)       /* scatter_reduce "mean" (no IrRedFn) */

/* Reduction named by scatter_reduce's reduce (sum, prod, mean, amax, amin) or
 * scatter's (add, multiply); -2 (reported) if unknown. */
static int reduce_code(DecCtx *c, const char *s)
{
    static const struct { const char *name; int red; } tab[] = {
        {"sum", IR_RED_SUM}, {"add", IR_RED_SUM}, {"prod", IR_RED_PROD},
        {"multiply", IR_RED_PROD}, {"amax", IR_RED_MAX}, {"amin", IR_RED_MIN},
        {"mean", SCAT_MEAN},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strcmp(s, tab[i].name) == 0)
            return tab[i].red;
    dec_err(c, "unknown scatter reduction '%s'", s);
    return -2;
}

/* The identity of reduction red in dtype t (what a target without updates starts
 * from when self is excluded), as a rank-0 constant: exact for every integer type
 * (i64's extremes are not doubles, so they are built as integers). */
static ValId red_identity(DecCtx *c, IrDType t, int red)
{
    if (red == IR_RED_PROD || (red != IR_RED_MAX && red != IR_RED_MIN))
        return dec_scalar(c->g, t, red == IR_RED_PROD ? 1.0 : 0.0);
    bool mx = red == IR_RED_MAX;
    if (ir_dtype_is_float(t))
        return dec_scalar(c->g, t, mx ? -INFINITY : INFINITY);
    if (t == IR_DT_I64) {
        int64_t v = mx ? INT64_MIN : INT64_MAX, one = 1;
        return dec_const_i64(c->g, &one, 0, &v);
    }
    bool uns = t == IR_DT_U8 || t == IR_DT_U16 || t == IR_DT_U32 || t == IR_DT_BOOL;
    double span = ldexp(1.0, (int)(8 * ir_dtype_size(t)) - (uns ? 0 : 1));
    if (t == IR_DT_BOOL)
        span = 2.0;
    return dec_scalar(c->g, t, mx ? (uns ? 0.0 : -span) : span - 1.0);
}

/* A value of x's type filled with the rank-0 value v. */
static ValId filled(DecCtx *c, ValId x, ValId v)
{
    const IrType *t = dec_ty(c, x);
    return dec_expand(c, v, t->dims, t->rank);
}

/* Number of updates landing on each element of x (x's dtype). */
static ValId landed(DecCtx *c, ValId x, ValId idx, int ax)
{
    const IrType *ti = dec_ty(c, idx);
    ValId ones = dec_expand(c, dec_scalar(c->g, dec_ty(c, x)->dtype, 1), ti->dims, ti->rank);
    return dec_scatter_along(c, filled(c, x, dec_scalar(c->g, dec_ty(c, x)->dtype, 0)), idx,
                             ones, ax, IR_RED_SUM);
}

/* scatter_reduce of src into x at idx along ax with reduction red (an IrRedFn or
 * SCAT_MEAN), self included or not. */
static ValId scatter_red(DecCtx *c, ValId x, ValId idx, ValId src, int ax, int red, bool self)
{
    if (red != SCAT_MEAN && self)
        return dec_scatter_along(c, x, idx, src, ax, red);
    IrDType t = dec_ty(c, x)->dtype;
    if (t == IR_DT_U64 && !self) {
        dec_err(c, "unsupported: scatter_reduce with include_self=False on u64");
        return IR_NONE;
    }
    if (red == SCAT_MEAN && !ir_dtype_is_float(t)) {
        dec_err(c, "unsupported: scatter_reduce 'mean' on %s (integer division)",
                ir_dtype_name(t));
        return IR_NONE;
    }
    int fn = red == SCAT_MEAN ? IR_RED_SUM : red;
    ValId base = self ? x : filled(c, x, red_identity(c, t, fn));
    ValId y = dec_scatter_along(c, base, idx, src, ax, fn);
    ValId n = y == IR_NONE ? IR_NONE : landed(c, x, idx, ax);
    if (n == IR_NONE)
        return IR_NONE;
    ValId hit = dec_bin_s(c, IR_BIN_GT, n, 0);
    if (red == SCAT_MEAN)
        y = dec_bin(c, IR_BIN_DIV, y, self ? dec_bin_s(c, IR_BIN_ADD, n, 1)
                                           : dec_bin_s(c, IR_BIN_MAX, n, 1));
    return self ? y : dec_select(c, hit, y, x);
}

/* src cut to idx's shape (torch reads only that corner of src), in x's dtype; a
 * scalar value argument is broadcast to it instead. */
static ValId updates(DecCtx *c, ValId x, ValId idx, const char *name)
{
    const IrType *ti = dec_ty(c, idx);
    IrDType t = dec_ty(c, x)->dtype;
    ValId src = aten_in(c, name);
    if (src == IR_NONE) {
        ValId v = aten_operand(c, "value", t);
        return v == IR_NONE ? IR_NONE : dec_expand(c, v, ti->dims, ti->rank);
    }
    const IrType *ts = dec_ty(c, src);
    int64_t zero[IR_MAX_RANK] = {0}, one[IR_MAX_RANK];
    for (int i = 0; i < ti->rank; i++)
        one[i] = 1;
    if (ts->rank != ti->rank) {
        dec_err(c, "%s has rank %d, index rank %d", name, ts->rank, ti->rank);
        return IR_NONE;
    }
    for (int i = 0; i < ti->rank; i++)
        if (ti->dims[i] > ts->dims[i]) {
            dec_err(c, "index dim %d (%lld) exceeds %s's (%lld)", i, (long long)ti->dims[i],
                    name, (long long)ts->dims[i]);
            return IR_NONE;
        }
    return dec_cast(c, dec_slice(c, src, zero, one, ti->dims), t);
}

/* scatter (.src, .value, .reduce, .value_reduce), scatter_add, scatter_reduce.two. */
bool aten_scatter(DecCtx *c)
{
    char buf[128];
    const char *nm = aten_base(c->n->foreign.op_type, buf, sizeof buf);
    ValId x, idx;
    int ax;
    if (!aten_need(c, "self", &x) || !aten_need(c, "index", &idx))
        return false;
    int r = dec_ty(c, x)->rank;
    if (r == 0) {
        dec_err(c, "unsupported: scatter into a 0-d tensor");
        return false;
    }
    if (!dec_axis(c, dec_ai(c, "dim", 0), r, &ax))
        return false;
    ValId src = updates(c, x, idx, "src");
    if (src == IR_NONE)
        return false;
    int red = DIX_RED_NONE;
    if (!strcmp(nm, "scatter_add"))
        red = IR_RED_SUM;
    else if (dec_has_attr(c, "reduce") && (red = reduce_code(c, dec_as(c, "reduce", ""))) == -2)
        return false;
    bool self = dec_ai(c, "include_self", 1) != 0;
    c->out[0] = red == DIX_RED_NONE ? dec_scatter_along(c, x, idx, src, ax, red)
                                    : scatter_red(c, x, idx, src, ax, red, self);
    return c->out[0] != IR_NONE;
}

/* See aten.h: the 1-D index broadcast along src, then a scatter along ax. */
ValId aten_put_along(DecCtx *c, ValId x, int ax, ValId idx, ValId src, int red)
{
    const IrType *t = dec_ty(c, x), *ti = dec_ty(c, idx);
    int64_t k = dec_numel(ti), dims[IR_MAX_RANK], want[IR_MAX_RANK];
    if (ti->rank > 1 || !ir_dtype_is_int(ti->dtype)) {
        dec_err(c, "the index must be a 1-D integer tensor");
        return IR_NONE;
    }
    for (int i = 0; i < t->rank; i++) {
        dims[i] = i == ax ? k : 1;
        want[i] = i == ax ? k : t->dims[i];
    }
    int64_t bd[IR_MAX_RANK];
    int br;
    IrType wt = {.dtype = t->dtype, .rank = t->rank};
    memcpy(wt.dims, want, sizeof want);
    if (!dec_broadcast(dec_ty(c, src), &wt, bd, &br) || br != t->rank ||
        memcmp(bd, want, sizeof(int64_t) * (size_t)br) != 0) {
        dec_err(c, "the values do not broadcast to the indexed shape");
        return IR_NONE;
    }
    ValId full = dec_expand(c, dec_reshape(c, idx, dims, t->rank), want, t->rank);
    src = dec_expand(c, dec_cast(c, src, t->dtype), want, t->rank);
    return dec_scatter_along(c, x, full, src, ax, red);
}

/* index_add(self, dim, index, source, alpha): self[.., index[k], ..] += alpha *
 * source[.., k, ..] (repeated indices accumulate). */
bool aten_index_add(DecCtx *c)
{
    ValId x, idx, src;
    int ax;
    if (!aten_need(c, "self", &x) || !aten_need(c, "index", &idx) ||
        !aten_need(c, "source", &src))
        return false;
    const IrType *t = dec_ty(c, x);
    if (t->rank == 0 || !dec_axis(c, dec_ai(c, "dim", 0), t->rank, &ax))
        return false;
    double alpha = 1;
    if (aten_num(c, "alpha", &alpha) && alpha != 1)
        src = dec_bin_s(c, IR_BIN_MUL, dec_cast(c, src, t->dtype), alpha);
    c->out[0] = aten_put_along(c, x, ax, idx, src, IR_RED_SUM);
    return c->out[0] != IR_NONE;
}

/* masked_scatter(self, mask, source): the true positions of mask (broadcast to
 * self), in order, take source's leading elements: position p reads source element
 * (number of true positions before p), found by a running count and one GATHER. */
bool aten_masked_scatter(DecCtx *c)
{
    ValId x, m, src;
    if (!aten_need(c, "self", &x) || !aten_need(c, "mask", &m) || !aten_need(c, "source", &src))
        return false;
    const IrType *t = dec_ty(c, x);
    int64_t n = dec_numel(t), ns = dec_numel(dec_ty(c, src));
    int64_t dims[IR_MAX_RANK];
    int rank;
    if (!dec_broadcast(t, dec_ty(c, m), dims, &rank) || rank != t->rank ||
        memcmp(dims, t->dims, sizeof(int64_t) * (size_t)rank) != 0) {
        dec_err(c, "masked_scatter: mask does not broadcast to self's shape");
        return false;
    }
    if (ns == 0 || n == 0) {
        c->out[0] = x;
        return true;
    }
    m = dec_reshape(c, dec_expand(c, dec_cast(c, m, IR_DT_BOOL), t->dims, t->rank), &n, 1);
    IrAttr at = ir_attr_int("axis", 0);
    ValId cnt = dec_cast(c, m, IR_DT_I64);
    cnt = dec_op(c, IR_OP_CUMSUM, &cnt, 1, &at, 1);
    ValId pos = dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, dec_bin_s(c, IR_BIN_SUB, cnt, 1), 0),
                          (double)(ns - 1));
    ValId from = dec_gather(c, dec_reshape(c, dec_cast(c, src, t->dtype), &ns, 1), pos, 0);
    ValId y = dec_select(c, m, from, dec_reshape(c, x, &n, 1));
    c->out[0] = dec_reshape(c, y, t->dims, t->rank);
    return true;
}
