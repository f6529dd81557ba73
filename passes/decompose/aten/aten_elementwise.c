/* aten_elementwise.c: ATen pointwise ops, casts, identities and constant generators ->
 * UNARY/BINARY/SELECT/CAST core ops and constants.
 *
 * Arithmetic is done in the dtype torch.export recorded for the result (which
 * already reflects torch's type promotion, e.g. int tensor + float scalar -> float);
 * comparisons promote their operands with aten_promote.
 */
#include <math.h>
#include <string.h>

#include "aten.h"

typedef struct {
    const char *name;
    int fn;
} NameFn;

/* Function code for name in map m (n entries), -1 if absent. */
static int lookup_fn(const NameFn *m, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(m[i].name, name) == 0)
            return m[i].fn;
    return -1;
}

#define LEN(m) ((int)(sizeof m / sizeof m[0]))

/* The op's base name ("relu" for aten.relu_.default). */
static const char *base(const DecCtx *c, char *buf, size_t len)
{
    return aten_base(c->n->foreign.op_type, buf, len);
}

/* The main tensor operand: "self", else "input", else the first input. */
static ValId self_in(const DecCtx *c)
{
    ValId v = aten_in(c, "self");
    if (v == IR_NONE)
        v = aten_in(c, "input");
    if (v == IR_NONE)
        v = dec_in(c, 0);
    return v;
}

/* Self, reporting when absent. */
static bool need_self(DecCtx *c, ValId *x)
{
    *x = self_in(c);
    if (*x == IR_NONE)
        dec_err(c, "missing tensor argument 'self'");
    return *x != IR_NONE;
}

bool aten_noop(DecCtx *c)
{
    (void)c; /* checks torch.export recorded; nothing to compute */
    return true;
}

bool aten_identity(DecCtx *c)
{
    ValId x;
    if (!need_self(c, &x))
        return false;
    c->out[0] = aten_like_out(c, x, 0);
    return true;
}

/* Casts and device moves (to, _to_copy, type_as): a CAST to the recorded dtype. */
bool aten_to(DecCtx *c)
{
    return aten_identity(c);
}

/* Dropout is the identity at inference; a training-mode dropout is refused. */
bool aten_dropout(DecCtx *c)
{
    ValId x;
    double p = 0.5;
    aten_num(c, "p", &p);
    if (!need_self(c, &x))
        return false;
    if (dec_ai(c, "train", 0) && p > 0) {
        dec_err(c, "dropout in training mode (train=True, p=%g) is random; export the "
                "model in eval mode", p);
        return false;
    }
    c->out[0] = x;
    if (c->n->nout > 1) { /* native_dropout: (output, mask of ones) */
        const IrType *mt = aten_oty(c, 1);
        c->out[1] = dec_expand(c, dec_scalar(c->g, mt->dtype, 1), mt->dims, mt->rank);
    }
    return true;
}

static const NameFn unary_fns[] = {
    {"abs", IR_UN_ABS},     {"neg", IR_UN_NEG},       {"exp", IR_UN_EXP},
    {"log", IR_UN_LOG},     {"sqrt", IR_UN_SQRT},     {"rsqrt", IR_UN_RSQRT},
    {"reciprocal", IR_UN_RECIP}, {"tanh", IR_UN_TANH}, {"sigmoid", IR_UN_SIGMOID},
    {"erf", IR_UN_ERF},     {"floor", IR_UN_FLOOR},   {"ceil", IR_UN_CEIL},
    {"round", IR_UN_ROUND}, {"sin", IR_UN_SIN},       {"cos", IR_UN_COS},
    {"tan", IR_UN_TAN},     {"asin", IR_UN_ASIN},     {"acos", IR_UN_ACOS},
    {"atan", IR_UN_ATAN},   {"sinh", IR_UN_SINH},     {"cosh", IR_UN_COSH},
    {"asinh", IR_UN_ASINH}, {"acosh", IR_UN_ACOSH},   {"atanh", IR_UN_ATANH},
    {"sign", IR_UN_SIGN},   {"sgn", IR_UN_SIGN},      {"relu", IR_UN_RELU},
    {"bitwise_not", IR_UN_NOT},
    /* torch's NumPy-style aliases */
    {"absolute", IR_UN_ABS}, {"negative", IR_UN_NEG},     {"arcsin", IR_UN_ASIN},
    {"arccos", IR_UN_ACOS},  {"arctan", IR_UN_ATAN},      {"arcsinh", IR_UN_ASINH},
    {"arccosh", IR_UN_ACOSH}, {"arctanh", IR_UN_ATANH},
};

/* trunc(x) = x < 0 ? ceil(x) : floor(x) (integers are already whole). */
static ValId trunc_of(DecCtx *c, ValId x)
{
    if (!ir_dtype_is_float(dec_ty(c, x)->dtype))
        return x;
    ValId neg = dec_bin(c, IR_BIN_LT, x, dec_scalar(c->g, dec_ty(c, x)->dtype, 0));
    return dec_select(c, neg, dec_un(c, IR_UN_CEIL, x), dec_un(c, IR_UN_FLOOR, x));
}

/* Unary ops with a bool result. */
static bool bool_unary(DecCtx *c, const char *nm, ValId x)
{
    IrDType t = dec_ty(c, x)->dtype;
    bool fl = ir_dtype_is_float(t);
    if (strcmp(nm, "logical_not") == 0) {
        ValId b = t == IR_DT_BOOL ? x : dec_bin(c, IR_BIN_NE, x, dec_scalar(c->g, t, 0));
        c->out[0] = aten_like_out(c, dec_un(c, IR_UN_NOT, b), 0);
    } else if (!fl) { /* integers are never NaN or infinite */
        const IrType *o = aten_oty(c, 0);
        double v = strcmp(nm, "isfinite") == 0;
        c->out[0] = dec_expand(c, dec_scalar(c->g, IR_DT_BOOL, v), o->dims, o->rank);
    } else if (strcmp(nm, "isnan") == 0) {
        c->out[0] = dec_un(c, IR_UN_ISNAN, x);
    } else if (strcmp(nm, "isinf") == 0) {
        c->out[0] = dec_un(c, IR_UN_ISINF, x);
    } else {
        ValId bad = dec_bin(c, IR_BIN_OR, dec_un(c, IR_UN_ISNAN, x), dec_un(c, IR_UN_ISINF, x));
        c->out[0] = dec_un(c, IR_UN_NOT, bad);
    }
    return true;
}

/* Unary ops that are short compositions. x is already in the result dtype. */
static bool composite_unary(DecCtx *c, const char *nm, ValId x)
{
    IrDType t = dec_ty(c, x)->dtype;
    ValId r = IR_NONE;
    if (strcmp(nm, "log1p") == 0)
        r = dec_un(c, IR_UN_LOG, dec_bin_s(c, IR_BIN_ADD, x, 1));
    else if (strcmp(nm, "expm1") == 0)
        r = dec_bin_s(c, IR_BIN_SUB, dec_un(c, IR_UN_EXP, x), 1);
    else if (strcmp(nm, "log2") == 0)
        r = dec_bin_s(c, IR_BIN_MUL, dec_un(c, IR_UN_LOG, x), 1.0 / M_LN2);
    else if (strcmp(nm, "log10") == 0)
        r = dec_bin_s(c, IR_BIN_MUL, dec_un(c, IR_UN_LOG, x), 1.0 / M_LN10);
    else if (strcmp(nm, "exp2") == 0)
        r = dec_un(c, IR_UN_EXP, dec_bin_s(c, IR_BIN_MUL, x, M_LN2));
    else if (strcmp(nm, "square") == 0)
        r = dec_bin(c, IR_BIN_MUL, x, x);
    else if (strcmp(nm, "trunc") == 0 || strcmp(nm, "fix") == 0)
        r = trunc_of(c, x);
    else if (strcmp(nm, "frac") == 0)
        r = dec_bin(c, IR_BIN_SUB, x, trunc_of(c, x));
    else if (strcmp(nm, "erfc") == 0)
        r = dec_bin(c, IR_BIN_SUB, dec_scalar(c->g, t, 1), dec_un(c, IR_UN_ERF, x));
    if (r == IR_NONE) {
        dec_err(c, "unsupported unary operator '%s'", nm);
        return false;
    }
    c->out[0] = r;
    return true;
}

/* One-input pointwise ops; the input is first cast to the result dtype (sqrt of an
 * int tensor is a float tensor). round(decimals=d) scales by 10^d around ROUND. */
bool aten_unary(DecCtx *c)
{
    char buf[128];
    const char *nm = base(c, buf, sizeof buf);
    ValId x;
    if (!need_self(c, &x))
        return false;
    if (!strcmp(nm, "isnan") || !strcmp(nm, "isinf") || !strcmp(nm, "isfinite") ||
        !strcmp(nm, "logical_not"))
        return bool_unary(c, nm, x);
    x = aten_like_out(c, x, 0);
    int fn = lookup_fn(unary_fns, LEN(unary_fns), nm);
    if (fn < 0)
        return composite_unary(c, nm, x);
    int64_t dec = dec_ai(c, "decimals", 0);
    if (fn == IR_UN_ROUND && dec != 0) {
        double s = pow(10.0, (double)dec);
        ValId r = dec_un(c, fn, dec_bin_s(c, IR_BIN_MUL, x, s));
        c->out[0] = dec_bin_s(c, IR_BIN_DIV, r, s);
        return true;
    }
    if (fn == IR_UN_RELU && dec_ty(c, x)->dtype == IR_DT_BOOL) {
        c->out[0] = x;
        return true;
    }
    c->out[0] = dec_un(c, fn, x);
    return true;
}

static const NameFn binary_fns[] = {
    {"add", IR_BIN_ADD},          {"sub", IR_BIN_SUB},         {"rsub", IR_BIN_SUB},
    {"mul", IR_BIN_MUL},          {"div", IR_BIN_DIV},         {"true_divide", IR_BIN_DIV},
    {"floor_divide", IR_BIN_DIV}, {"remainder", IR_BIN_MOD},   {"fmod", IR_BIN_FMOD},
    {"maximum", IR_BIN_MAX},      {"minimum", IR_BIN_MIN},     {"max", IR_BIN_MAX},
    {"min", IR_BIN_MIN},          {"atan2", IR_BIN_ATAN2},     {"bitwise_and", IR_BIN_AND},
    {"bitwise_or", IR_BIN_OR},    {"bitwise_xor", IR_BIN_XOR}, {"__and__", IR_BIN_AND},
    {"__or__", IR_BIN_OR},        {"__xor__", IR_BIN_XOR},     {"__lshift__", IR_BIN_SHL},
    {"__rshift__", IR_BIN_SHR},   {"bitwise_left_shift", IR_BIN_SHL},
    {"bitwise_right_shift", IR_BIN_SHR},
    /* torch's NumPy-style aliases */
    {"multiply", IR_BIN_MUL}, {"subtract", IR_BIN_SUB}, {"divide", IR_BIN_DIV},
    {"arctan2", IR_BIN_ATAN2},
};

/* Division with rounding: "trunc" or "floor" (torch div rounding_mode). */
static ValId rounded_div(DecCtx *c, ValId a, ValId b, bool floor_mode)
{
    IrDType t = dec_ty(c, a)->dtype;
    ValId q = dec_bin(c, IR_BIN_DIV, a, b);
    if (ir_dtype_is_float(t))
        return floor_mode ? dec_un(c, IR_UN_FLOOR, q) : trunc_of(c, q);
    if (!floor_mode)
        return q; /* integer division truncates */
    ValId zero = dec_scalar(c->g, t, 0);
    ValId r = dec_bin(c, IR_BIN_SUB, a, dec_bin(c, IR_BIN_MUL, q, b));
    ValId sign_differs = dec_bin(c, IR_BIN_NE, dec_bin(c, IR_BIN_LT, r, zero),
                                 dec_bin(c, IR_BIN_LT, b, zero));
    ValId adj = dec_bin(c, IR_BIN_AND, dec_bin(c, IR_BIN_NE, r, zero), sign_differs);
    return dec_bin(c, IR_BIN_SUB, q, dec_cast(c, adj, t));
}

/* Two-operand arithmetic and bitwise ops, in the result's dtype. "other" may be a
 * scalar; alpha scales it (add, sub, rsub). */
bool aten_binary(DecCtx *c)
{
    char buf[128];
    const char *nm = base(c, buf, sizeof buf);
    int fn = lookup_fn(binary_fns, LEN(binary_fns), nm);
    IrDType t = aten_oty(c, 0)->dtype;
    ValId a = aten_operand(c, "self", t), b = aten_operand(c, "other", t);
    if (fn < 0 || a == IR_NONE || b == IR_NONE)
        return false;
    double alpha = 1;
    if (aten_num(c, "alpha", &alpha) && alpha != 1)
        b = dec_bin_s(c, IR_BIN_MUL, b, alpha);
    if (strcmp(nm, "rsub") == 0) {
        ValId tmp = a;
        a = b, b = tmp;
    }
    const char *mode = dec_as(c, "rounding_mode", NULL);
    if (strcmp(nm, "floor_divide") == 0)
        mode = "floor";
    if (fn == IR_BIN_DIV && mode)
        c->out[0] = rounded_div(c, a, b, strcmp(mode, "floor") == 0);
    else if (t == IR_DT_BOOL && (fn == IR_BIN_ADD || fn == IR_BIN_MAX))
        c->out[0] = dec_bin(c, IR_BIN_OR, a, b);
    else if (t == IR_DT_BOOL && (fn == IR_BIN_MUL || fn == IR_BIN_MIN))
        c->out[0] = dec_bin(c, IR_BIN_AND, a, b);
    else
        c->out[0] = dec_bin(c, fn, a, b);
    return true;
}

/* dtype a scalar argument brings to a comparison with a tensor of dtype t. */
static IrDType scalar_dtype(const DecCtx *c, const char *name, IrDType t)
{
    const IrAttr *a = ir_attr_find(c->n, name);
    if (a && a->kind == IR_ATTR_FLOAT && !ir_dtype_is_float(t))
        return IR_DT_F32;
    if (a && a->kind == IR_ATTR_INT && t == IR_DT_BOOL)
        return IR_DT_I64;
    return t;
}

static const NameFn compare_fns[] = {
    {"eq", IR_BIN_EQ}, {"ne", IR_BIN_NE}, {"lt", IR_BIN_LT},
    {"le", IR_BIN_LE}, {"gt", IR_BIN_GT}, {"ge", IR_BIN_GE},
    {"greater", IR_BIN_GT}, {"greater_equal", IR_BIN_GE}, {"less", IR_BIN_LT},
    {"less_equal", IR_BIN_LE}, {"not_equal", IR_BIN_NE},
};

/* Comparisons: operands promoted to a common dtype, bool result. */
bool aten_compare(DecCtx *c)
{
    char buf[128];
    int fn = lookup_fn(compare_fns, LEN(compare_fns), base(c, buf, sizeof buf));
    ValId x;
    if (fn < 0 || !need_self(c, &x))
        return false;
    IrDType t = dec_ty(c, x)->dtype;
    ValId o = aten_in(c, "other");
    t = o != IR_NONE ? aten_promote(t, dec_ty(c, o)->dtype) : scalar_dtype(c, "other", t);
    ValId b = aten_operand(c, "other", t);
    if (b == IR_NONE)
        return false;
    c->out[0] = aten_like_out(c, dec_bin(c, fn, dec_cast(c, x, t), b), 0);
    return true;
}

/* Value as bool (x != 0). */
static ValId as_bool(DecCtx *c, ValId x)
{
    IrDType t = dec_ty(c, x)->dtype;
    return t == IR_DT_BOOL ? x : dec_bin(c, IR_BIN_NE, x, dec_scalar(c->g, t, 0));
}

/* logical_and/or/xor: both operands as bools. */
bool aten_logical(DecCtx *c)
{
    char buf[128];
    const char *nm = base(c, buf, sizeof buf);
    ValId a, b;
    if (!aten_need(c, "self", &a) || !aten_need(c, "other", &b))
        return false;
    int fn = strcmp(nm, "logical_and") == 0 ? IR_BIN_AND
             : strcmp(nm, "logical_or") == 0 ? IR_BIN_OR : IR_BIN_XOR;
    c->out[0] = aten_like_out(c, dec_bin(c, fn, as_bool(c, a), as_bool(c, b)), 0);
    return true;
}

/* where(condition, self, other): self/other may be scalars. */
bool aten_where(DecCtx *c)
{
    ValId cond;
    if (!aten_need(c, "condition", &cond))
        return false;
    if (c->n->nout != 1 || (aten_in(c, "self") == IR_NONE && !dec_has_attr(c, "self"))) {
        dec_err(c, "where(condition) with one argument has a data-dependent shape");
        return false;
    }
    IrDType t = aten_oty(c, 0)->dtype;
    ValId a = aten_operand(c, "self", t), b = aten_operand(c, "other", t);
    if (a == IR_NONE || b == IR_NONE)
        return false;
    c->out[0] = dec_select(c, as_bool(c, cond), a, b);
    return true;
}

/* masked_fill(self, mask, value): value where mask is set. */
bool aten_masked_fill(DecCtx *c)
{
    ValId x, mask;
    if (!aten_need(c, "self", &x) || !aten_need(c, "mask", &mask))
        return false;
    IrDType t = aten_oty(c, 0)->dtype;
    ValId v = aten_operand(c, "value", t);
    if (v == IR_NONE)
        return false;
    if (dec_ty(c, v)->rank > 0) /* a one-element tensor value */
        v = dec_reshape(c, v, NULL, 0);
    c->out[0] = dec_select(c, as_bool(c, mask), v, dec_cast(c, x, t));
    return true;
}

/* pow with a scalar exponent of 1, 2, 3, 0.5, -1 or -0.5 becomes cheaper ops. */
bool aten_pow(DecCtx *c)
{
    IrDType t = aten_oty(c, 0)->dtype;
    ValId x = aten_operand(c, "self", t);
    if (x == IR_NONE)
        return false;
    double p;
    if (aten_in(c, "exponent") == IR_NONE && aten_num(c, "exponent", &p) &&
        ir_dtype_is_float(t)) {
        ValId r = IR_NONE;
        if (p == 1)
            r = x;
        else if (p == 2)
            r = dec_bin(c, IR_BIN_MUL, x, x);
        else if (p == 3)
            r = dec_bin(c, IR_BIN_MUL, dec_bin(c, IR_BIN_MUL, x, x), x);
        else if (p == 0.5)
            r = dec_un(c, IR_UN_SQRT, x);
        else if (p == -1)
            r = dec_un(c, IR_UN_RECIP, x);
        else if (p == -0.5)
            r = dec_un(c, IR_UN_RSQRT, x);
        if (r != IR_NONE) {
            c->out[0] = r;
            return true;
        }
    }
    ValId e = aten_operand(c, "exponent", t);
    if (e == IR_NONE)
        return false;
    c->out[0] = dec_bin(c, IR_BIN_POW, x, e);
    return true;
}

/* clamp(self, min, max) (scalars or tensors), clamp_min, clamp_max. */
bool aten_clamp(DecCtx *c)
{
    char buf[128];
    const char *nm = base(c, buf, sizeof buf);
    IrDType t = aten_oty(c, 0)->dtype;
    ValId x;
    if (!need_self(c, &x))
        return false;
    x = dec_cast(c, x, t);
    bool has_min = aten_in(c, "min") != IR_NONE || dec_has_attr(c, "min");
    bool has_max = aten_in(c, "max") != IR_NONE || dec_has_attr(c, "max");
    if (strcmp(nm, "clamp_min") == 0)
        has_max = false;
    if (strcmp(nm, "clamp_max") == 0)
        has_min = false;
    if (has_min)
        x = dec_bin(c, IR_BIN_MAX, x, aten_operand(c, "min", t));
    if (has_max)
        x = dec_bin(c, IR_BIN_MIN, x, aten_operand(c, "max", t));
    c->out[0] = x;
    return true;
}

/* The fill value of a constant generator by op name. */
static bool fill_value(DecCtx *c, const char *nm, double *v)
{
    if (strstr(nm, "ones"))
        *v = 1;
    else if (strstr(nm, "zero") || strstr(nm, "empty"))
        *v = 0;
    else if (!aten_num(c, "fill_value", v) && !aten_num(c, "s", v) && !aten_num(c, "value", v)) {
        dec_err(c, "missing fill value");
        return false;
    }
    return true;
}

/* full/zeros/ones/empty (+ _like, new_), scalar_tensor, fill, zero: the recorded
 * output type filled with one value (a scalar constant expanded to the shape). */
bool aten_fill(DecCtx *c)
{
    char buf[128];
    const char *nm = base(c, buf, sizeof buf);
    const IrType *o = aten_oty(c, 0);
    ValId tv = strcmp(nm, "fill") == 0 ? aten_in(c, "value") : IR_NONE;
    ValId s;
    if (tv != IR_NONE) {
        s = dec_reshape(c, dec_cast(c, tv, o->dtype), NULL, 0);
    } else {
        double v;
        if (!fill_value(c, nm, &v))
            return false;
        s = dec_scalar(c->g, o->dtype, v);
    }
    c->out[0] = dec_expand(c, s, o->dims, o->rank);
    return true;
}

/* arange(start=0, end, step=1): a constant of the recorded length and dtype. */
bool aten_arange(DecCtx *c)
{
    const IrType *o = aten_oty(c, 0);
    double start = 0, end = 0, step = 1;
    aten_num(c, "start", &start);
    aten_num(c, "step", &step);
    if (!aten_num(c, "end", &end) || step == 0 || o->rank != 1) {
        dec_err(c, "arange needs a constant end and a non-zero step");
        return false;
    }
    int64_t n = o->dims[0], want = (int64_t)ceil((end - start) / step);
    if (want < 0)
        want = 0;
    if (n != want || n > ATEN_MAX_CONST) {
        dec_err(c, "arange(%g, %g, %g) does not give the recorded %lld elements or is too "
                "large", start, end, step, (long long)n);
        return false;
    }
    double *v = ir_scratch(c->g, (size_t)(n + 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = start + (double)i * step;
    c->out[0] = dec_const(c->g, o->dtype, o->dims, 1, v);
    return true;
}

/* copy(self, src): src cast and broadcast to self's shape. */
bool aten_copy(DecCtx *c)
{
    ValId src;
    if (!aten_need(c, "src", &src))
        return false;
    const IrType *o = aten_oty(c, 0);
    c->out[0] = dec_expand(c, dec_cast(c, src, o->dtype), o->dims, o->rank);
    return true;
}

/* eye(n, m): the recorded [n, m] shape with ones on the diagonal. */
bool aten_eye(DecCtx *c)
{
    const IrType *o = aten_oty(c, 0);
    if (o->rank != 2 || dec_numel(o) > ATEN_MAX_CONST) {
        dec_err(c, "eye must be 2-D and of at most %lld elements", (long long)ATEN_MAX_CONST);
        return false;
    }
    int64_t n = o->dims[0], m = o->dims[1];
    double *v = ir_scratch(c->g, (size_t)(n * m + 1) * sizeof *v);
    for (int64_t i = 0; i < n && i < m; i++)
        v[i * m + i] = 1;
    c->out[0] = dec_const(c->g, o->dtype, o->dims, 2, v);
    return true;
}

/* lerp(self, end, weight) = self + weight*(end - self); addcmul(self, tensor1,
 * tensor2, value) = self + value*t1*t2; addcdiv likewise with t1/t2. */
bool aten_ternary(DecCtx *c)
{
    char buf[128];
    const char *nm = base(c, buf, sizeof buf);
    IrDType t = aten_oty(c, 0)->dtype;
    ValId x = aten_operand(c, "self", t);
    if (x == IR_NONE)
        return false;
    if (strcmp(nm, "lerp") == 0) {
        ValId e = aten_operand(c, "end", t), w = aten_operand(c, "weight", t);
        if (e == IR_NONE || w == IR_NONE)
            return false;
        c->out[0] = dec_bin(c, IR_BIN_ADD, x, dec_bin(c, IR_BIN_MUL, w, dec_bin(c, IR_BIN_SUB, e, x)));
        return true;
    }
    ValId a = aten_operand(c, "tensor1", t), b = aten_operand(c, "tensor2", t);
    if (a == IR_NONE || b == IR_NONE)
        return false;
    double v = 1;
    aten_num(c, "value", &v);
    ValId p = dec_bin(c, strcmp(nm, "addcdiv") == 0 ? IR_BIN_DIV : IR_BIN_MUL, a, b);
    if (v != 1)
        p = dec_bin_s(c, IR_BIN_MUL, p, v);
    c->out[0] = dec_bin(c, IR_BIN_ADD, x, p);
    return true;
}
