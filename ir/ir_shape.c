/* ir_shape.c: shape and dtype inference, with attribute validation, for every core op.
 *
 * Each ir_infer_* function (the infer hook of its row in ops.def) checks its node's
 * inputs and attributes and fills the output types. Errors are messages about user data (the node is named by
 * the caller), never assertions.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir.h"
#include "ir_priv.h"

/* What an inference hook sees: the node, its output types to fill, the message buffer. */
struct IrInferCtx {
    IrGraph *g;
    const IrNode *n;
    IrType *out;                           /* output types (n->nout) */
    char *err;
    size_t errlen;
};
typedef IrInferCtx Ctx;

/* Record a message in the context and return false. */
__attribute__((format(printf, 2, 3))) static bool fail(Ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
    return false;
}

/* Type of input i. */
static const IrType *ity(Ctx *c, int i) { return &c->g->vals[c->n->in[i]].type; }

/* "f32[1,2,3]" into buf (truncated to fit). */
static const char *tstr(const IrType *t, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "%s[", ir_dtype_name(t->dtype));
    for (int i = 0; i < t->rank && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
    return buf;
}

/* Integer attribute: *v = value or dflt when absent; false (with message) if wrong kind
 * or outside [lo, hi]. */
static bool get_int(Ctx *c, const char *name, int64_t dflt, int64_t lo, int64_t hi, int64_t *v)
{
    const IrAttr *a = ir_attr_find(c->n, name);
    if (a && a->kind != IR_ATTR_INT)
        return fail(c, "attribute '%s' must be an int", name);
    *v = a ? a->i : dflt;
    if (!a && (dflt < lo || dflt > hi))
        return fail(c, "missing attribute '%s'", name);
    if (*v < lo || *v > hi)
        return fail(c, "attribute '%s' = %lld is out of range [%lld, %lld]", name,
                    (long long)*v, (long long)lo, (long long)hi);
    return true;
}

/* Ints attribute: *cnt = -1 if absent. False if present with another kind. */
static bool get_ints(Ctx *c, const char *name, const int64_t **v, int *cnt)
{
    const IrAttr *a = ir_attr_find(c->n, name);
    *cnt = -1;
    *v = NULL;
    if (!a)
        return true;
    if (a->kind != IR_ATTR_INTS)
        return fail(c, "attribute '%s' must be a list of ints", name);
    *v = a->ints;
    *cnt = (int)a->n;
    return true;
}

/* Required ints attribute of exactly want entries (want < 0: any count). */
static bool need_ints(Ctx *c, const char *name, int want, const int64_t **v, int *cnt)
{
    if (!get_ints(c, name, v, cnt))
        return false;
    if (*cnt < 0)
        return fail(c, "missing attribute '%s'", name);
    if (want >= 0 && *cnt != want)
        return fail(c, "attribute '%s' has %d entries, expected %d", name, *cnt, want);
    return true;
}

/* Multidirectional (numpy) broadcast of a and b into r (dtype left unset). */
static bool bcast(Ctx *c, const IrType *a, const IrType *b, IrType *r)
{
    char b1[128], b2[128];
    int rank = a->rank > b->rank ? a->rank : b->rank;
    r->rank = rank;
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return fail(c, "shapes %s and %s cannot be broadcast", tstr(a, b1, sizeof b1),
                        tstr(b, b2, sizeof b2));
        r->dims[i] = da == 1 ? db : da;
    }
    return true;
}

/* ---- elementwise ---- */

/* Unary fns defined only on floating-point inputs. */
static bool unfn_float_only(int fn)
{
    switch (fn) {
    case IR_UN_NEG: case IR_UN_ABS: case IR_UN_RELU: case IR_UN_FLOOR: case IR_UN_CEIL:
    case IR_UN_ROUND: case IR_UN_SIGN: case IR_UN_NOT:
        return false;
    default:
        return true;
    }
}

/* UNARY x: same shape; bool for isnan/isinf, else the input dtype (fn checked). */
bool ir_infer_unary(IrInferCtx *c)
{
    int64_t fn;
    const IrType *a = ity(c, 0);
    if (!get_int(c, "fn", -1, 0, IR_UN_COUNT - 1, &fn))
        return false;
    bool fl = ir_dtype_is_float(a->dtype), in = ir_dtype_is_int(a->dtype);
    bool ok = fn == IR_UN_NOT ? (in || a->dtype == IR_DT_BOOL)
                              : (fl || (in && !unfn_float_only((int)fn)));
    if (!ok)
        return fail(c, "unary %s is not defined for %s", ir_unfn_name((int)fn),
                    ir_dtype_name(a->dtype));
    c->out[0] = *a;
    if (fn == IR_UN_ISNAN || fn == IR_UN_ISINF)
        c->out[0].dtype = IR_DT_BOOL;
    return true;
}

/* BINARY a, b of one dtype: broadcast shape; bool for comparisons, else that dtype. */
bool ir_infer_binary(IrInferCtx *c)
{
    int64_t fn;
    const IrType *a = ity(c, 0), *b = ity(c, 1);
    if (!get_int(c, "fn", -1, 0, IR_BIN_COUNT - 1, &fn))
        return false;
    if (a->dtype != b->dtype)
        return fail(c, "binary %s operands have different dtypes %s and %s",
                    ir_binfn_name((int)fn), ir_dtype_name(a->dtype), ir_dtype_name(b->dtype));
    IrDType t = a->dtype;
    bool fl = ir_dtype_is_float(t), in = ir_dtype_is_int(t), bo = t == IR_DT_BOOL, ok;
    switch (fn) {
    case IR_BIN_AND: case IR_BIN_OR: case IR_BIN_XOR: ok = in || bo; break;
    case IR_BIN_SHL: case IR_BIN_SHR: ok = in; break;
    case IR_BIN_ATAN2: ok = fl; break;
    case IR_BIN_EQ: case IR_BIN_NE: ok = fl || in || bo; break;
    default: ok = fl || in; break;
    }
    if (!ok)
        return fail(c, "binary %s is not defined for %s", ir_binfn_name((int)fn),
                    ir_dtype_name(t));
    if (!bcast(c, a, b, &c->out[0]))
        return false;
    c->out[0].dtype = (fn >= IR_BIN_EQ && fn <= IR_BIN_GE) ? IR_DT_BOOL : t;
    return true;
}

/* SELECT cond, a, b: bool cond, a and b of one dtype, all three broadcast. */
bool ir_infer_select(IrInferCtx *c)
{
    const IrType *p = ity(c, 0), *a = ity(c, 1), *b = ity(c, 2);
    IrType ab;
    if (p->dtype != IR_DT_BOOL)
        return fail(c, "select condition must be bool, not %s", ir_dtype_name(p->dtype));
    if (a->dtype != b->dtype)
        return fail(c, "select operands have different dtypes %s and %s",
                    ir_dtype_name(a->dtype), ir_dtype_name(b->dtype));
    if (!bcast(c, a, b, &ab) || !bcast(c, p, &ab, &c->out[0]))
        return false;
    c->out[0].dtype = a->dtype;
    return true;
}

/* CAST x to: same shape, dtype "to". */
bool ir_infer_cast(IrInferCtx *c)
{
    int64_t to;
    if (!get_int(c, "to", -1, 0, 64, &to))
        return false;
    if (ir_dtype_size((IrDType)to) == 0)
        return fail(c, "cannot cast to dtype %lld", (long long)to);
    c->out[0] = *ity(c, 0);
    c->out[0].dtype = (IrDType)to;
    return true;
}

/* ---- reductions ---- */

/* REDUCE x over sorted, distinct axes (absent: all), keeping them as 1 or not. */
bool ir_infer_reduce(IrInferCtx *c)
{
    const IrType *a = ity(c, 0);
    int64_t fn, keep;
    const int64_t *axes;
    int nax;
    bool red[IR_MAX_RANK] = {false};
    if (!get_int(c, "fn", -1, 0, IR_RED_COUNT - 1, &fn) ||
        !get_int(c, "keepdims", 1, 0, 1, &keep) || !get_ints(c, "axes", &axes, &nax))
        return false;
    if (a->dtype == IR_DT_BOOL ? (fn != IR_RED_MAX && fn != IR_RED_MIN)
                               : !(ir_dtype_is_float(a->dtype) || ir_dtype_is_int(a->dtype)))
        return fail(c, "reduce %s is not defined for %s", ir_redfn_name((int)fn),
                    ir_dtype_name(a->dtype));
    for (int i = 0; i < (nax < 0 ? a->rank : nax); i++) {
        int64_t ax = nax < 0 ? i : axes[i];
        if (ax < 0 || ax >= a->rank)
            return fail(c, "reduction axis %lld is out of range for rank %d", (long long)ax,
                        a->rank);
        if (i > 0 && nax >= 0 && ax <= axes[i - 1])
            return fail(c, "reduction axes must be sorted and unique");
        red[ax] = true;
    }
    IrType *o = &c->out[0];
    o->dtype = a->dtype;
    o->rank = 0;
    for (int i = 0; i < a->rank; i++) {
        if (!red[i])
            o->dims[o->rank++] = a->dims[i];
        else if (keep)
            o->dims[o->rank++] = 1;
    }
    return true;
}

/* ARGREDUCE x along axis: int64 indices, the axis kept as 1 or dropped. */
bool ir_infer_argreduce(IrInferCtx *c)
{
    const IrType *a = ity(c, 0);
    int64_t fn, axis, keep, last;
    if (a->rank < 1)
        return fail(c, "argreduce needs an input of rank >= 1");
    if (!get_int(c, "fn", -1, 0, IR_RED_COUNT - 1, &fn) ||
        !get_int(c, "axis", 0, 0, a->rank - 1, &axis) ||
        !get_int(c, "keepdims", 1, 0, 1, &keep) || !get_int(c, "select_last", 0, 0, 1, &last))
        return false;
    if (fn != IR_RED_MAX && fn != IR_RED_MIN)
        return fail(c, "argreduce needs fn max or min, not %s", ir_redfn_name((int)fn));
    if (!ir_dtype_is_float(a->dtype) && !ir_dtype_is_int(a->dtype) && a->dtype != IR_DT_BOOL)
        return fail(c, "argreduce is not defined for %s", ir_dtype_name(a->dtype));
    if (a->dims[axis] == 0)
        return fail(c, "argreduce over an empty axis %lld", (long long)axis);
    IrType *o = &c->out[0];
    *o = *a;
    o->dtype = IR_DT_I64;
    if (keep) {
        o->dims[axis] = 1;
    } else {
        for (int i = (int)axis; i + 1 < a->rank; i++)
            o->dims[i] = a->dims[i + 1];
        o->rank--;
    }
    return true;
}

/* Output extent of a window of k taps (dilation d, stride s) over in elements. */
static bool window_dim(Ctx *c, int axis, int64_t in, int64_t k, int64_t s, int64_t d,
                       int64_t *out)
{
    if (k < 1 || s < 1 || d < 1)
        return fail(c, "axis %d: kernel %lld, stride %lld, dilation %lld must all be >= 1",
                    axis, (long long)k, (long long)s, (long long)d);
    if (k > (INT64_MAX / 2) / d)
        return fail(c, "axis %d: kernel %lld with dilation %lld is too large", axis,
                    (long long)k, (long long)d);
    int64_t eff = (k - 1) * d + 1;
    if (eff > in)
        return fail(c, "axis %d: kernel extent %lld is larger than the input size %lld",
                    axis, (long long)eff, (long long)in);
    *out = (in - eff) / s + 1;
    return true;
}

/* strides/dilations lists of cnt entries, defaulting to ones. */
static bool strides_dilations(Ctx *c, int cnt, const int64_t **s, const int64_t **d)
{
    static const int64_t ones[IR_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
    int ns, nd;
    if (!get_ints(c, "strides", s, &ns) || !get_ints(c, "dilations", d, &nd))
        return false;
    if (ns >= 0 && ns != cnt)
        return fail(c, "attribute 'strides' has %d entries, expected %d", ns, cnt);
    if (nd >= 0 && nd != cnt)
        return fail(c, "attribute 'dilations' has %d entries, expected %d", nd, cnt);
    if (ns < 0)
        *s = ones;
    if (nd < 0)
        *d = ones;
    return true;
}

/* WINDOW x: pooling over the trailing len(kernel) dims, no padding. */
bool ir_infer_window(IrInferCtx *c)
{
    const IrType *a = ity(c, 0);
    int64_t fn;
    const int64_t *k, *s, *d;
    int nk;
    if (!get_int(c, "fn", -1, 0, IR_RED_COUNT - 1, &fn) || !need_ints(c, "kernel", -1, &k, &nk))
        return false;
    if (nk < 1 || nk > a->rank)
        return fail(c, "window kernel rank %d does not fit input rank %d", nk, a->rank);
    if (!strides_dilations(c, nk, &s, &d))
        return false;
    if (!ir_dtype_is_float(a->dtype) && !ir_dtype_is_int(a->dtype))
        return fail(c, "window is not defined for %s", ir_dtype_name(a->dtype));
    c->out[0] = *a;
    for (int i = 0; i < nk; i++) {
        int ax = a->rank - nk + i;
        if (!window_dim(c, ax, a->dims[ax], k[i], s[i], d[i], &c->out[0].dims[ax]))
            return false;
    }
    return true;
}

/* CUMSUM x along axis: same type. */
bool ir_infer_cumsum(IrInferCtx *c)
{
    const IrType *a = ity(c, 0);
    int64_t axis, ex, rev;
    if (a->rank < 1)
        return fail(c, "cumsum needs an input of rank >= 1");
    if (!get_int(c, "axis", 0, 0, a->rank - 1, &axis) ||
        !get_int(c, "exclusive", 0, 0, 1, &ex) || !get_int(c, "reverse", 0, 0, 1, &rev))
        return false;
    if (!ir_dtype_is_float(a->dtype) && !ir_dtype_is_int(a->dtype))
        return fail(c, "cumsum is not defined for %s", ir_dtype_name(a->dtype));
    c->out[0] = *a;
    return true;
}

/* ---- contractions ---- */

/* Result dtype of a contraction on operands of dtype t: DLFloat16 products are
 * accumulated, and returned, in float32 (the card's matrix unit); others keep t. */
static IrDType contract_dtype(IrDType t)
{
    return t == IR_DT_DLF16 ? IR_DT_F32 : t == IR_DT_I8 ? IR_DT_I32 : t;
}

/* MATMUL a[...,M,K], b[...,K,N] -> [...,M,N] with broadcast batch dims. */
bool ir_infer_matmul(IrInferCtx *c)
{
    const IrType *a = ity(c, 0), *b = ity(c, 1);
    char b1[128], b2[128];
    if (a->rank < 2 || b->rank < 2)
        return fail(c, "matmul operands must have rank >= 2, got %s and %s",
                    tstr(a, b1, sizeof b1), tstr(b, b2, sizeof b2));
    if (a->dtype != b->dtype && !(a->dtype == IR_DT_DLF16 && b->dtype == IR_DT_F8E4M3FN) &&
        !(a->dtype == IR_DT_F32 && (b->dtype == IR_DT_F16 || b->dtype == IR_DT_BF16)))
        return fail(c, "matmul operands have different dtypes %s and %s",
                    ir_dtype_name(a->dtype), ir_dtype_name(b->dtype));
    if (!ir_dtype_is_float(a->dtype) && !ir_dtype_is_int(a->dtype))
        return fail(c, "matmul is not defined for %s", ir_dtype_name(a->dtype));
    if (a->dims[a->rank - 1] != b->dims[b->rank - 2])
        return fail(c, "matmul inner dimensions differ: %s x %s", tstr(a, b1, sizeof b1),
                    tstr(b, b2, sizeof b2));
    IrType ba = *a, bb = *b, *o = &c->out[0];
    ba.rank -= 2;
    bb.rank -= 2;
    if (!bcast(c, &ba, &bb, o))
        return false;
    o->dtype = contract_dtype(a->dtype);
    o->dims[o->rank++] = a->dims[a->rank - 2];
    o->dims[o->rank++] = b->dims[b->rank - 1];
    return true;
}

/* CONV x[N,C,spatial...], w[M,C/group,k...] -> [N,M,out...], no padding. */
bool ir_infer_conv(IrInferCtx *c)
{
    const IrType *x = ity(c, 0), *w = ity(c, 1);
    char b1[128], b2[128];
    int64_t group;
    const int64_t *s, *d;
    if (x->rank < 3 || w->rank != x->rank)
        return fail(c, "conv needs input [N,C,spatial...] and weight of the same rank, got %s "
                    "and %s", tstr(x, b1, sizeof b1), tstr(w, b2, sizeof b2));
    if (x->dtype != w->dtype)
        return fail(c, "conv operands have different dtypes %s and %s",
                    ir_dtype_name(x->dtype), ir_dtype_name(w->dtype));
    if (!ir_dtype_is_float(x->dtype) && !ir_dtype_is_int(x->dtype))
        return fail(c, "conv is not defined for %s", ir_dtype_name(x->dtype));
    int ns = x->rank - 2;
    if (!get_int(c, "group", 1, 1, INT32_MAX, &group) || !strides_dilations(c, ns, &s, &d))
        return false;
    if (x->dims[1] != w->dims[1] * group)
        return fail(c, "input channels %lld do not match weight channels %lld x group %lld",
                    (long long)x->dims[1], (long long)w->dims[1], (long long)group);
    if (w->dims[0] % group != 0)
        return fail(c, "output channels %lld are not divisible by group %lld",
                    (long long)w->dims[0], (long long)group);
    IrType *o = &c->out[0];
    *o = *x;
    o->dtype = contract_dtype(x->dtype);
    o->dims[1] = w->dims[0];
    for (int i = 0; i < ns; i++)
        if (!window_dim(c, i + 2, x->dims[i + 2], w->dims[i + 2], s[i], d[i], &o->dims[i + 2]))
            return false;
    return true;
}

/* ---- data movement ---- */

/* RESHAPE x to "shape": fully resolved, the same element count. */
bool ir_infer_reshape(IrInferCtx *c)
{
    const IrType *a = ity(c, 0);
    const int64_t *sh;
    int n;
    char b1[128], b2[128];
    if (!need_ints(c, "shape", -1, &sh, &n))
        return false;
    if (n > IR_MAX_RANK)
        return fail(c, "reshape to rank %d exceeds the maximum rank %d", n, IR_MAX_RANK);
    IrType *o = &c->out[0];
    o->dtype = a->dtype;
    o->rank = n;
    for (int i = 0; i < n; i++) {
        if (sh[i] < 0)
            return fail(c, "reshape dimension %d is %lld (must be resolved, >= 0)", i,
                        (long long)sh[i]);
        o->dims[i] = sh[i];
    }
    int64_t ne = ir_type_numel(o);
    if (ne < 0 || ne != ir_type_numel(a))
        return fail(c, "cannot reshape %s (%lld elements) to %s", tstr(a, b1, sizeof b1),
                    (long long)ir_type_numel(a), tstr(o, b2, sizeof b2));
    return true;
}

/* TRANSPOSE x by "perm", a permutation of the input's axes. */
bool ir_infer_transpose(IrInferCtx *c)
{
    const IrType *a = ity(c, 0);
    const int64_t *p;
    int n;
    bool seen[IR_MAX_RANK] = {false};
    if (!need_ints(c, "perm", a->rank, &p, &n))
        return false;
    IrType *o = &c->out[0];
    *o = *a;
    for (int i = 0; i < n; i++) {
        if (p[i] < 0 || p[i] >= a->rank || seen[p[i]])
            return fail(c, "perm is not a permutation of 0..%d", a->rank - 1);
        seen[p[i]] = true;
        o->dims[i] = a->dims[p[i]];
    }
    return true;
}

/* True if start + k*step lies in [0, dim) for every 0 <= k < size (step != 0). */
static bool slice_axis_ok(int64_t start, int64_t step, int64_t size, int64_t dim)
{
    if (size == 0)
        return true;
    if (start < 0 || start >= dim || size > dim)
        return false;
    if (size == 1)
        return true;
    if (step >= dim || step <= -dim)
        return false;
    if (step > 0)
        return size - 1 <= (dim - 1 - start) / step;
    return size - 1 <= start / -step;
}

/* SLICE x: "sizes" elements per axis from "starts" by "steps", all inside x. */
bool ir_infer_slice(IrInferCtx *c)
{
    const IrType *a = ity(c, 0);
    const int64_t *st, *sp, *sz;
    int n;
    if (!need_ints(c, "starts", a->rank, &st, &n) || !need_ints(c, "steps", a->rank, &sp, &n) ||
        !need_ints(c, "sizes", a->rank, &sz, &n))
        return false;
    IrType *o = &c->out[0];
    *o = *a;
    for (int i = 0; i < a->rank; i++) {
        if (sp[i] == 0)
            return fail(c, "slice step on axis %d is zero", i);
        if (sz[i] < 0)
            return fail(c, "slice size on axis %d is negative", i);
        if (!slice_axis_ok(st[i], sp[i], sz[i], a->dims[i]))
            return fail(c, "slice on axis %d (start %lld, step %lld, size %lld) leaves "
                        "the input extent %lld", i, (long long)st[i], (long long)sp[i],
                        (long long)sz[i], (long long)a->dims[i]);
        o->dims[i] = sz[i];
    }
    return true;
}

/* PAD x by "pads" (lo..., hi...; negative crops) and "interior" gaps. */
bool ir_infer_pad(IrInferCtx *c)
{
    const IrType *a = ity(c, 0);
    const int64_t *p, *in;
    int n, ni;
    static const int64_t zeros[IR_MAX_RANK] = {0};
    if (!need_ints(c, "pads", 2 * a->rank, &p, &n) || !get_ints(c, "interior", &in, &ni))
        return false;
    if (ni >= 0 && ni != a->rank)
        return fail(c, "attribute 'interior' has %d entries, expected %d", ni, a->rank);
    const IrAttr *v = ir_attr_find(c->n, "value");
    if (v && v->kind != IR_ATTR_FLOAT && v->kind != IR_ATTR_INT)
        return fail(c, "attribute 'value' must be a float");
    if (ni < 0)
        in = zeros;
    IrType *o = &c->out[0];
    *o = *a;
    for (int i = 0; i < a->rank; i++) {
        int64_t d = a->dims[i], r;
        if (in[i] < 0)
            return fail(c, "interior padding on axis %d is negative", i);
        bool ovf = __builtin_mul_overflow(d > 0 ? d - 1 : 0, in[i], &r) ||
                   __builtin_add_overflow(r, d, &r) || __builtin_add_overflow(r, p[i], &r) ||
                   __builtin_add_overflow(r, p[i + a->rank], &r);
        if (ovf || r < 0)
            return fail(c, "padding on axis %d (lo %lld, hi %lld, interior %lld) gives an "
                        "invalid size for input extent %lld", i, (long long)p[i],
                        (long long)p[i + a->rank], (long long)in[i], (long long)d);
        o->dims[i] = r;
    }
    return true;
}

/* CONCAT inputs along axis: equal dtypes and other dims. */
bool ir_infer_concat(IrInferCtx *c)
{
    const IrType *a = ity(c, 0);
    int64_t axis;
    char b1[128], b2[128];
    if (a->rank < 1)
        return fail(c, "cannot concatenate scalars");
    if (!get_int(c, "axis", 0, 0, a->rank - 1, &axis))
        return false;
    IrType *o = &c->out[0];
    *o = *a;
    for (int k = 1; k < c->n->nin; k++) {
        const IrType *b = ity(c, k);
        bool ok = b->dtype == a->dtype && b->rank == a->rank;
        for (int i = 0; ok && i < a->rank; i++)
            ok = i == axis || b->dims[i] == a->dims[i];
        if (!ok)
            return fail(c, "concat input %d %s does not match input 0 %s along axis %lld", k,
                        tstr(b, b1, sizeof b1), tstr(a, b2, sizeof b2), (long long)axis);
        if (__builtin_add_overflow(o->dims[axis], b->dims[axis], &o->dims[axis]))
            return fail(c, "concat result is too large");
    }
    return true;
}

/* GATHER data, indices along axis: data dims with the axis replaced by indices's. */
bool ir_infer_gather(IrInferCtx *c)
{
    const IrType *a = ity(c, 0), *idx = ity(c, 1);
    int64_t axis;
    if (a->rank < 1)
        return fail(c, "gather data must have rank >= 1");
    if (!get_int(c, "axis", 0, 0, a->rank - 1, &axis))
        return false;
    if (idx->dtype != IR_DT_I32 && idx->dtype != IR_DT_I64)
        return fail(c, "gather indices must be i32 or i64, not %s", ir_dtype_name(idx->dtype));
    if (a->rank - 1 + idx->rank > IR_MAX_RANK)
        return fail(c, "gather result rank %d exceeds the maximum rank %d",
                    a->rank - 1 + idx->rank, IR_MAX_RANK);
    if (a->dims[axis] == 0 && ir_type_numel(idx) > 0)
        return fail(c, "gather from an empty axis %lld", (long long)axis);
    IrType *o = &c->out[0];
    o->dtype = a->dtype;
    o->rank = 0;
    for (int i = 0; i < axis; i++)
        o->dims[o->rank++] = a->dims[i];
    for (int i = 0; i < idx->rank; i++)
        o->dims[o->rank++] = idx->dims[i];
    for (int i = (int)axis + 1; i < a->rank; i++)
        o->dims[o->rank++] = a->dims[i];
    return true;
}

/* EXPAND x to "shape", to which it broadcasts. */
bool ir_infer_expand(IrInferCtx *c)
{
    const IrType *a = ity(c, 0);
    const int64_t *sh;
    int n;
    char b1[128];
    if (!need_ints(c, "shape", -1, &sh, &n))
        return false;
    if (n > IR_MAX_RANK || n < a->rank)
        return fail(c, "cannot expand %s to rank %d", tstr(a, b1, sizeof b1), n);
    IrType *o = &c->out[0];
    o->dtype = a->dtype;
    o->rank = n;
    for (int i = 0; i < n; i++) {
        int ia = i - (n - a->rank);
        int64_t d = ia >= 0 ? a->dims[ia] : 1;
        if (sh[i] < 0 || (d != 1 && d != sh[i]))
            return fail(c, "cannot expand %s: dimension %d (%lld) does not broadcast to %lld",
                        tstr(a, b1, sizeof b1), i, (long long)d, (long long)sh[i]);
        o->dims[i] = sh[i];
    }
    return true;
}

/* SCATTER (updates[N, R], indices[N]) size -> [size, R]. */
bool ir_infer_scatter(IrInferCtx *c)
{
    const IrType *u = ity(c, 0), *idx = ity(c, 1);
    int64_t size;
    char b1[128], b2[128];
    if (u->rank != 2 || idx->rank != 1 || idx->dims[0] != u->dims[0])
        return fail(c, "scatter takes updates [N, R] and indices [N], not %s and %s",
                    tstr(u, b1, sizeof b1), tstr(idx, b2, sizeof b2));
    if (idx->dtype != IR_DT_I32 && idx->dtype != IR_DT_I64)
        return fail(c, "scatter indices must be i32 or i64, not %s", ir_dtype_name(idx->dtype));
    if (!get_int(c, "size", -1, 0, INT64_MAX, &size))
        return false;
    IrType *o = &c->out[0];
    o->dtype = u->dtype;
    o->rank = 2;
    o->dims[0] = size;
    o->dims[1] = u->dims[1];
    return true;
}

/* Whether BITCAST can reinterpret dtype t: whole bytes per element, not bool (whose
 * bytes must be 0 or 1) and not the sub-byte types (one element per byte in the IR). */
static bool bitcastable(IrDType t)
{
    switch (t) {
    case IR_DT_BOOL: case IR_DT_U4: case IR_DT_I4: case IR_DT_F4E2M1: case IR_DT_U2:
    case IR_DT_I2:
        return false;
    default:
        return ir_dtype_size(t) > 0;
    }
}

/* BITCAST x to: same shape, a dtype of the same element size. */
bool ir_infer_bitcast(IrInferCtx *c)
{
    const IrType *a = ity(c, 0);
    int64_t to;
    if (!get_int(c, "to", -1, 0, 64, &to))
        return false;
    IrDType t = (IrDType)to;
    if (!bitcastable(a->dtype) || !bitcastable(t))
        return fail(c, "cannot bitcast %s to %s (bool and sub-byte types are not "
                    "reinterpretable)", ir_dtype_name(a->dtype), ir_dtype_name(t));
    if (ir_dtype_size(t) != ir_dtype_size(a->dtype))
        return fail(c, "cannot bitcast %s to %s: element sizes differ (%zu and %zu bytes)",
                    ir_dtype_name(a->dtype), ir_dtype_name(t), ir_dtype_size(a->dtype),
                    ir_dtype_size(t));
    c->out[0] = *a;
    c->out[0].dtype = t;
    return true;
}

/* SYMLEN x axis: an int32 [1]. */
bool ir_infer_symlen(IrInferCtx *c)
{
    int64_t axis;
    if (!get_int(c, "axis", -1, 0, ity(c, 0)->rank - 1, &axis))
        return false;
    c->out[0] = (IrType){.dtype = IR_DT_I32, .rank = 1, .dims = {1}};
    return true;
}

/* SYMLIKE y like: y's type; axis of y has mul times the extent of like_axis of like, or
 * that extent through the steps of "formula". */
bool ir_infer_symlike(IrInferCtx *c)
{
    const IrType *y = ity(c, 0), *l = ity(c, 1);
    int64_t a, b, mul;
    IrExtElem f;
    if (!get_int(c, "axis", -1, 0, y->rank - 1, &a) ||
        !get_int(c, "like_axis", -1, 0, l->rank - 1, &b) ||
        !get_int(c, "mul", 1, 1, 1 << 20, &mul))
        return false;
    if (ir_symlike_formula(c->n, &f)) {
        if (y->dims[a] != ir_ext_eval(&f, l->dims[b]))
            return fail(c, "axis %lld of y has %lld elements, not the formula's %lld of the "
                        "%lld of axis %lld of like", (long long)a, (long long)y->dims[a],
                        (long long)ir_ext_eval(&f, l->dims[b]), (long long)l->dims[b],
                        (long long)b);
    } else if (y->dims[a] != l->dims[b] * mul)
        return fail(c, "axis %lld of y has %lld elements, not %lld times the %lld of axis %lld "
                    "of like", (long long)a, (long long)y->dims[a], (long long)mul,
                    (long long)l->dims[b], (long long)b);
    c->out[0] = *y;
    return true;
}

/* Ops without inference (FOREIGN): refused. */
bool ir_infer_none(IrInferCtx *c)
{
    return fail(c, "op %s has no shape inference", ir_op_info[c->n->op].name);
}

/* ---- dispatch ---- */

bool ir_infer_types(IrGraph *g, const IrNode *n, IrType *outs, char *err, size_t errlen,
                    bool *quiet)
{
    Ctx c = {g, n, outs, err, errlen};
    *quiet = false;
    err[0] = 0;
    IR_ASSERT(n->op < IR_OP_FOREIGN);
    const IrOpInfo *info = &ir_op_info[n->op];
    if (n->nin < info->min_in || (info->max_in >= 0 && n->nin > info->max_in) ||
        n->nout != info->nout)
        return fail(&c, "%s has %d inputs and %d outputs (expected %d..%d and %d)", info->name,
                    n->nin, n->nout, info->min_in, info->max_in, info->nout);
    for (int i = 0; i < n->nin; i++) {
        if (n->in[i] == IR_NONE || n->in[i] >= g->nvals)
            return fail(&c, "input %d of %s is missing", i, info->name);
        const IrType *t = &g->vals[n->in[i]].type;
        if (t->dtype == IR_DT_UNDEF || ir_dtype_size(t->dtype) == 0) {
            *quiet = ir_failed(g);         /* an earlier error already explains it */
            return fail(&c, "input %d ('%s') has no known type", i, g->vals[n->in[i]].name);
        }
        if (ir_type_numel(t) < 0)
            return fail(&c, "input %d ('%s') has an invalid shape", i, g->vals[n->in[i]].name);
    }
    memset(outs, 0, (size_t)n->nout * sizeof *outs);
    bool ok = info->infer(&c);
    for (int i = 0; ok && i < n->nout; i++)
        if (ir_type_numel(&outs[i]) < 0)
            return fail(&c, "result shape of %s is too large", info->name);
    return ok;
}
