/* onnx_elementwise.c: decomposition of ONNX pointwise ops, casts, activations and
 * constant generators into UNARY/BINARY/SELECT/CAST core ops and constants. */
#include <math.h>
#include <string.h>

#include "onnx.h"
#include "passes/decompose/dec_index.h"

typedef struct {
    const char *op;
    int fn;
} FnMap;

static const FnMap unary_map[] = {
    {"Abs", IR_UN_ABS},       {"Neg", IR_UN_NEG},         {"Exp", IR_UN_EXP},
    {"Log", IR_UN_LOG},       {"Sqrt", IR_UN_SQRT},       {"Reciprocal", IR_UN_RECIP},
    {"Tanh", IR_UN_TANH},     {"Erf", IR_UN_ERF},         {"Sigmoid", IR_UN_SIGMOID},
    {"Relu", IR_UN_RELU},     {"Floor", IR_UN_FLOOR},     {"Ceil", IR_UN_CEIL},
    {"Round", IR_UN_ROUND},   {"Sin", IR_UN_SIN},         {"Cos", IR_UN_COS},
    {"Tan", IR_UN_TAN},       {"Asin", IR_UN_ASIN},       {"Acos", IR_UN_ACOS},
    {"Atan", IR_UN_ATAN},     {"Sinh", IR_UN_SINH},       {"Cosh", IR_UN_COSH},
    {"Asinh", IR_UN_ASINH},   {"Acosh", IR_UN_ACOSH},     {"Atanh", IR_UN_ATANH},
    {"Sign", IR_UN_SIGN},     {"Not", IR_UN_NOT},         {"BitwiseNot", IR_UN_NOT},
    {"IsNaN", IR_UN_ISNAN},   {"Softplus", IR_UN_SOFTPLUS},
};

static const FnMap binary_map[] = {
    {"Add", IR_BIN_ADD},           {"Sub", IR_BIN_SUB},        {"Mul", IR_BIN_MUL},
    {"Div", IR_BIN_DIV},           {"Pow", IR_BIN_POW},        {"Equal", IR_BIN_EQ},
    {"Less", IR_BIN_LT},           {"LessOrEqual", IR_BIN_LE}, {"Greater", IR_BIN_GT},
    {"GreaterOrEqual", IR_BIN_GE}, {"And", IR_BIN_AND},        {"Or", IR_BIN_OR},
    {"Xor", IR_BIN_XOR},           {"BitwiseAnd", IR_BIN_AND}, {"BitwiseOr", IR_BIN_OR},
    {"BitwiseXor", IR_BIN_XOR},    {"Sum", IR_BIN_ADD},        {"Mean", IR_BIN_ADD},
    {"Max", IR_BIN_MAX},           {"Min", IR_BIN_MIN},
};

/* Function code for op in map m of n entries, -1 if absent. */
static int map_find(const FnMap *m, int n, const char *op)
{
    for (int i = 0; i < n; i++)
        if (strcmp(m[i].op, op) == 0)
            return m[i].fn;
    return -1;
}

#define MAPLEN(m) ((int)(sizeof m / sizeof m[0]))

/* Abs, Neg, Exp, ...: one UNARY node. */
bool dec_unary_op(DecCtx *c)
{
    int fn = map_find(unary_map, MAPLEN(unary_map), c->n->foreign.op_type);
    if (fn < 0 || !dec_max_outputs(c, 1) || !dec_need_in(c, 0))
        return false;
    c->out[0] = dec_un(c, fn, dec_in(c, 0));
    return true;
}

/* Pow with a constant scalar exponent of 1, 2 or 0.5 becomes cheaper ops; otherwise
 * the exponent is cast to the base's dtype and one POW node is used. */
static ValId dec_pow(DecCtx *c, ValId x, ValId e)
{
    const IrType *tx = dec_ty(c, x), *te = dec_ty(c, e);
    if (ir_is_const(c->g, e) && dec_numel(te) == 1 && te->rank <= tx->rank &&
        ir_dtype_is_float(tx->dtype)) {
        double p = dec_load(te->dtype, ir_val(c->g, e)->data, 0);
        if (p == 1.0)
            return x;
        if (p == 2.0)
            return dec_bin(c, IR_BIN_MUL, x, x);
        if (p == 3.0)
            return dec_bin(c, IR_BIN_MUL, dec_bin(c, IR_BIN_MUL, x, x), x);
        if (p == 0.5)
            return dec_un(c, IR_UN_SQRT, x);
    }
    return dec_bin(c, IR_BIN_POW, x, dec_cast(c, e, tx->dtype));
}

/* Before opset 7, a binary op broadcasts B onto A only with broadcast=1, placing
 * B's dims at A's `axis` (default: trailing). Returns B reshaped for numpy rules. */
static ValId legacy_broadcast(DecCtx *c, ValId a, ValId b)
{
    if (c->opset >= 7 || !dec_ai(c, "broadcast", 0) || !dec_has_attr(c, "axis"))
        return b;
    const IrType *ta = dec_ty(c, a), *tb = dec_ty(c, b);
    int axis;
    if (!dec_axis(c, dec_ai(c, "axis", 0), ta->rank, &axis))
        return IR_NONE;
    if (axis + tb->rank > ta->rank) {
        dec_err(c, "B of rank %d does not fit A of rank %d at axis %d", tb->rank, ta->rank, axis);
        return IR_NONE;
    }
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < ta->rank; i++)
        dims[i] = i >= axis && i < axis + tb->rank ? tb->dims[i - axis] : 1;
    return dec_reshape(c, b, dims, ta->rank);
}

/* Two-input pointwise ops (numpy broadcasting). */
bool dec_binary_op(DecCtx *c)
{
    const char *op = c->n->foreign.op_type;
    int fn = map_find(binary_map, MAPLEN(binary_map), op);
    if (fn < 0 || !dec_max_outputs(c, 1) || !dec_need_in(c, 0) || !dec_need_in(c, 1))
        return false;
    ValId a = dec_in(c, 0), b = legacy_broadcast(c, a, dec_in(c, 1));
    if (b == IR_NONE)
        return false;
    if (fn == IR_BIN_POW) {
        c->out[0] = dec_pow(c, a, b);
        return true;
    }
    if (dec_ty(c, a)->dtype != dec_ty(c, b)->dtype) {
        dec_err(c, "input dtypes differ (%s and %s)", ir_dtype_name(dec_ty(c, a)->dtype),
                ir_dtype_name(dec_ty(c, b)->dtype));
        return false;
    }
    c->out[0] = dec_bin(c, fn, a, b);
    return true;
}

/* Sum, Mean, Max, Min over any number of inputs. */
bool dec_variadic(DecCtx *c)
{
    const char *op = c->n->foreign.op_type;
    int fn = map_find(binary_map, MAPLEN(binary_map), op);
    if (fn < 0 || !dec_need_in(c, 0))
        return false;
    ValId acc = dec_in(c, 0);
    int cnt = 1;
    for (int i = 1; i < c->n->nin; i++) {
        if (dec_in(c, i) == IR_NONE)
            continue;
        acc = dec_bin(c, fn, acc, dec_in(c, i));
        cnt++;
    }
    if (strcmp(op, "Mean") == 0 && cnt > 1) {
        if (ir_dtype_is_float(dec_ty(c, acc)->dtype))
            acc = dec_bin_s(c, IR_BIN_MUL, acc, 1.0 / cnt);
        else
            acc = dec_bin_s(c, IR_BIN_DIV, acc, cnt);
    }
    c->out[0] = acc;
    return true;
}

/* Mod: fmod=0 takes the divisor's sign (integers), fmod=1 the dividend's. */
bool dec_mod(DecCtx *c)
{
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1))
        return false;
    bool fm = dec_ai(c, "fmod", 0) != 0;
    if (!fm && ir_dtype_is_float(dec_ty(c, dec_in(c, 0))->dtype)) {
        dec_err(c, "fmod must be 1 for floating-point inputs");
        return false;
    }
    c->out[0] = dec_bin(c, fm ? IR_BIN_FMOD : IR_BIN_MOD, dec_in(c, 0), dec_in(c, 1));
    return true;
}

bool dec_bitshift(DecCtx *c)
{
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1))
        return false;
    const char *d = dec_as(c, "direction", "");
    int fn = strcmp(d, "LEFT") == 0 ? IR_BIN_SHL : strcmp(d, "RIGHT") == 0 ? IR_BIN_SHR : -1;
    if (fn < 0) {
        dec_err(c, "direction must be LEFT or RIGHT, got '%s'", d);
        return false;
    }
    c->out[0] = dec_bin(c, fn, dec_in(c, 0), dec_in(c, 1));
    return true;
}

bool dec_where(DecCtx *c)
{
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1) || !dec_need_in(c, 2))
        return false;
    ValId cond = dec_in(c, 0);
    if (dec_ty(c, cond)->dtype != IR_DT_BOOL) {
        dec_err(c, "condition must be bool, got %s", ir_dtype_name(dec_ty(c, cond)->dtype));
        return false;
    }
    c->out[0] = dec_select(c, cond, dec_in(c, 1), dec_in(c, 2));
    return true;
}

/* Whether t is a dtype the core ops handle. */
static bool dtype_ok(int64_t t)
{
    switch (t) {
    case IR_DT_F32: case IR_DT_F64: case IR_DT_F16: case IR_DT_BF16: case IR_DT_I8:
    case IR_DT_U8: case IR_DT_I16: case IR_DT_U16: case IR_DT_I32: case IR_DT_U32:
    case IR_DT_I64: case IR_DT_U64: case IR_DT_BOOL:
    case IR_DT_F8E4M3FN: case IR_DT_F8E4M3FNUZ: case IR_DT_F8E5M2: case IR_DT_F8E5M2FNUZ:
    case IR_DT_U4: case IR_DT_I4: case IR_DT_F4E2M1: case IR_DT_U2: case IR_DT_I2:
    case IR_DT_F8E8M0:
        return true;
    default:
        return false;
    }
}

/* Cast x to `to` with the node's saturate attribute (ONNX: float8 targets only;
 * default 1 = overflow gives the largest finite value). float8e8m0 rounds up (the
 * default round_mode; the others are refused). */
static ValId cast_sat(DecCtx *c, ValId x, IrDType to)
{
    const char *rm = dec_as(c, "round_mode", "up");
    if (to == IR_DT_F8E8M0 && strcmp(rm, "up") != 0) {
        dec_err(c, "unsupported: round_mode '%s' for float8e8m0 (only 'up')", rm);
        return IR_NONE;
    }
    if (dec_ai(c, "saturate", 1) || dec_ty(c, x)->dtype == to)
        return dec_cast(c, x, to);
    IrAttr a[2] = {ir_attr_int("to", to), ir_attr_int("saturate", 0)};
    return dec_op(c, IR_OP_CAST, &x, 1, a, 2);
}

bool dec_cast_op(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    int64_t to = dec_ai(c, "to", 0);
    if (!dtype_ok(to)) {
        dec_err(c, "unsupported: cast to dtype %lld", (long long)to);
        return false;
    }
    c->out[0] = cast_sat(c, dec_in(c, 0), (IrDType)to);
    return c->out[0] != IR_NONE;
}

bool dec_castlike(DecCtx *c)
{
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1))
        return false;
    c->out[0] = cast_sat(c, dec_in(c, 0), dec_ty(c, dec_in(c, 1))->dtype);
    return c->out[0] != IR_NONE;
}

bool dec_identity(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    c->out[0] = dec_in(c, 0);
    return true;
}

/* Inference Dropout: identity; the mask output (if used) is all true. */
bool dec_dropout(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId tm = dec_in(c, 2);
    if (tm != IR_NONE) { /* training mode is an identity only with ratio 0 */
        double v, ratio = 0.5;
        if (!dec_const_scalar(c, tm, "training_mode", &v))
            return false;
        if (v != 0 && dec_in(c, 1) != IR_NONE && !dec_const_scalar(c, dec_in(c, 1), "ratio", &ratio))
            return false;
        if (v != 0 && ratio != 0) {
            dec_err(c, "unsupported: Dropout in training mode");
            return false;
        }
    }
    ValId x = dec_in(c, 0);
    c->out[0] = x;
    if (dec_out_used(c, 1)) {
        const IrType *t = dec_ty(c, x);
        c->out[1] = dec_expand(c, dec_scalar(c->g, IR_DT_BOOL, 1), t->dims, t->rank);
    }
    return true;
}

/* Clip: bounds from attributes (opset < 11) or optional inputs. */
bool dec_clip(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0), lo = IR_NONE, hi = IR_NONE;
    IrDType t = dec_ty(c, x)->dtype;
    if (c->opset < 11) {
        if (dec_has_attr(c, "min"))
            lo = dec_scalar(c->g, t, dec_af(c, "min", 0));
        if (dec_has_attr(c, "max"))
            hi = dec_scalar(c->g, t, dec_af(c, "max", 0));
    } else {
        lo = dec_in(c, 1);
        hi = dec_in(c, 2);
    }
    if (lo != IR_NONE)
        x = dec_bin(c, IR_BIN_MAX, x, dec_cast(c, lo, t));
    if (hi != IR_NONE)
        x = dec_bin(c, IR_BIN_MIN, x, dec_cast(c, hi, t));
    c->out[0] = x;
    return true;
}

/* x < 0 ? neg : pos (elementwise), as SELECT on a comparison with 0. */
static ValId sel_neg(DecCtx *c, ValId x, ValId neg, ValId pos)
{
    ValId lt = dec_bin_s(c, IR_BIN_LT, x, 0.0);
    return dec_select(c, lt, neg, pos);
}

/* clamp(v, 0, 1) */
static ValId clamp01(DecCtx *c, ValId v)
{
    return dec_bin_s(c, IR_BIN_MAX, dec_bin_s(c, IR_BIN_MIN, v, 1.0), 0.0);
}

/* Parametrised activations expressed with pointwise core ops. */
bool dec_activation(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    const char *op = c->n->foreign.op_type;
    ValId x = dec_in(c, 0), y;
    if (strcmp(op, "LeakyRelu") == 0) {
        y = sel_neg(c, x, dec_bin_s(c, IR_BIN_MUL, x, dec_af(c, "alpha", 0.01)), x);
    } else if (strcmp(op, "Elu") == 0) {
        ValId em1 = dec_bin_s(c, IR_BIN_SUB, dec_un(c, IR_UN_EXP, x), 1.0);
        y = sel_neg(c, x, dec_bin_s(c, IR_BIN_MUL, em1, dec_af(c, "alpha", 1.0)), x);
    } else if (strcmp(op, "Selu") == 0) {
        double al = dec_af(c, "alpha", 1.67326319217681884765625);
        double ga = dec_af(c, "gamma", 1.05070102214813232421875);
        ValId neg = dec_bin_s(c, IR_BIN_SUB, dec_bin_s(c, IR_BIN_MUL, dec_un(c, IR_UN_EXP, x), al), al);
        ValId le = dec_bin_s(c, IR_BIN_LE, x, 0.0);
        y = dec_bin_s(c, IR_BIN_MUL, dec_select(c, le, neg, x), ga);
    } else if (strcmp(op, "Celu") == 0) {
        double al = dec_af(c, "alpha", 1.0);
        ValId e = dec_bin_s(c, IR_BIN_SUB, dec_un(c, IR_UN_EXP, dec_bin_s(c, IR_BIN_MUL, x, 1.0 / al)), 1.0);
        ValId neg = dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MUL, e, al), 0.0);
        y = dec_bin(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MAX, x, 0.0), neg);
    } else if (strcmp(op, "HardSigmoid") == 0) {
        ValId v = dec_bin_s(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, x, dec_af(c, "alpha", 0.2)),
                            dec_af(c, "beta", 0.5));
        y = clamp01(c, v);
    } else if (strcmp(op, "HardSwish") == 0) {
        ValId v = dec_bin_s(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, x, 1.0 / 6.0), 0.5);
        y = dec_bin(c, IR_BIN_MUL, x, clamp01(c, v));
    } else if (strcmp(op, "Softsign") == 0) {
        y = dec_bin(c, IR_BIN_DIV, x, dec_bin_s(c, IR_BIN_ADD, dec_un(c, IR_UN_ABS, x), 1.0));
    } else if (strcmp(op, "Mish") == 0) {
        y = dec_bin(c, IR_BIN_MUL, x, dec_un(c, IR_UN_TANH, dec_un(c, IR_UN_SOFTPLUS, x)));
    } else if (strcmp(op, "Swish") == 0) {
        ValId sg = dec_un(c, IR_UN_SIGMOID, dec_bin_s(c, IR_BIN_MUL, x, dec_af(c, "alpha", 1.0)));
        y = dec_bin(c, IR_BIN_MUL, x, sg);
    } else if (strcmp(op, "SwiGLU") == 0) {
        ValId b = dec_in(c, 1);
        if (b == IR_NONE || !ir_type_eq(dec_ty(c, b), dec_ty(c, x))) {
            dec_err(c, "inputs A and B must have the same shape");
            return false;
        }
        ValId sg = dec_un(c, IR_UN_SIGMOID, dec_bin_s(c, IR_BIN_MUL, x, dec_af(c, "alpha", 1.0)));
        y = dec_bin(c, IR_BIN_MUL, dec_bin(c, IR_BIN_MUL, x, sg), b);
    } else if (strcmp(op, "ThresholdedRelu") == 0) {
        ValId gt = dec_bin_s(c, IR_BIN_GT, x, dec_af(c, "alpha", 1.0));
        y = dec_select(c, gt, x, dec_scalar(c->g, dec_ty(c, x)->dtype, 0));
    } else { /* Shrink */
        double lambd = dec_af(c, "lambd", 0.5), bias = dec_af(c, "bias", 0.0);
        ValId zero = dec_scalar(c->g, dec_ty(c, x)->dtype, 0);
        ValId hi = dec_select(c, dec_bin_s(c, IR_BIN_GT, x, lambd), dec_bin_s(c, IR_BIN_SUB, x, bias), zero);
        y = dec_select(c, dec_bin_s(c, IR_BIN_LT, x, -lambd), dec_bin_s(c, IR_BIN_ADD, x, bias), hi);
    }
    c->out[0] = y;
    return true;
}

bool dec_prelu(DecCtx *c)
{
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1))
        return false;
    ValId x = dec_in(c, 0), slope = dec_in(c, 1);
    const IrType *tx = dec_ty(c, x), *ts = dec_ty(c, slope);
    if (c->opset < 7 && ts->rank == 1 && tx->rank >= 2 && ts->dims[0] == tx->dims[1] && ts->dims[0] > 1)
        slope = dec_chan_view(c, slope, tx->rank); /* PRelu-6: one slope per channel */
    c->out[0] = sel_neg(c, x, dec_bin(c, IR_BIN_MUL, x, slope), x);
    return true;
}

/* Gelu: exact (erf) or tanh approximation. */
ValId dec_gelu_of(DecCtx *c, ValId x, bool tanh_approx)
{
    ValId inner;
    if (tanh_approx) {
        ValId x3 = dec_bin(c, IR_BIN_MUL, dec_bin(c, IR_BIN_MUL, x, x), x);
        ValId s = dec_bin(c, IR_BIN_ADD, x, dec_bin_s(c, IR_BIN_MUL, x3, 0.044715));
        inner = dec_un(c, IR_UN_TANH, dec_bin_s(c, IR_BIN_MUL, s, sqrt(2.0 / M_PI)));
    } else {
        inner = dec_un(c, IR_UN_ERF, dec_bin_s(c, IR_BIN_MUL, x, M_SQRT1_2));
    }
    ValId half_x = dec_bin_s(c, IR_BIN_MUL, x, 0.5);
    return dec_bin(c, IR_BIN_MUL, half_x, dec_bin_s(c, IR_BIN_ADD, inner, 1.0));
}

bool dec_gelu(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    const char *ap = dec_as(c, "approximate", "none");
    if (strcmp(ap, "tanh") != 0 && strcmp(ap, "none") != 0) {
        dec_err(c, "unknown approximate '%s'", ap);
        return false;
    }
    c->out[0] = dec_gelu_of(c, dec_in(c, 0), strcmp(ap, "tanh") == 0);
    return true;
}

/* ImageScaler (an experimental operator of opsets 1 to 9, in converted Caffe and
 * CoreML models such as the model zoo's Tiny YOLOv2): x * scale + bias per channel of
 * NCHW data. */
bool dec_image_scaler(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x);
    const IrAttr *b = ir_attr_find(c->n, "bias");
    ValId y = dec_bin_s(c, IR_BIN_MUL, x, dec_af(c, "scale", 1.0));
    if (!b)
        return (c->out[0] = y), true;
    if (b->kind != IR_ATTR_FLOATS || t->rank < 2 || (int64_t)b->n != t->dims[1]) {
        dec_err(c, "bias must hold one value per channel (%lld)", (long long)(t->rank > 1 ? t->dims[1] : 0));
        return false;
    }
    int64_t n = b->n;
    ValId bv = dec_cast(c, dec_const(c->g, IR_DT_F32, &n, 1, b->floats), t->dtype);
    c->out[0] = dec_bin(c, IR_BIN_ADD, y, dec_chan_view(c, bv, t->rank));
    return true;
}

bool dec_isinf(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0);
    bool neg = dec_ai(c, "detect_negative", 1) != 0, pos = dec_ai(c, "detect_positive", 1) != 0;
    ValId inf = dec_un(c, IR_UN_ISINF, x);
    if (neg && pos)
        c->out[0] = inf;
    else if (!neg && !pos)
        c->out[0] = dec_bin(c, IR_BIN_AND, inf, dec_bin(c, IR_BIN_NE, x, x)); /* all false */
    else
        c->out[0] = dec_bin(c, IR_BIN_AND, inf, dec_bin_s(c, pos ? IR_BIN_GT : IR_BIN_LT, x, 0.0));
    return true;
}

/* Constant: value tensor or one of the value_* attributes. */
bool dec_constant(DecCtx *c)
{
    const IrAttr *a = ir_attr_find(c->n, "value");
    if (a && a->kind == IR_ATTR_TENSOR) {
        c->out[0] = a->tensor;
        return true;
    }
    if ((a = ir_attr_find(c->n, "value_float")) != NULL) {
        c->out[0] = dec_scalar(c->g, IR_DT_F32, a->f);
    } else if ((a = ir_attr_find(c->n, "value_int")) != NULL) {
        c->out[0] = dec_scalar(c->g, IR_DT_I64, (double)a->i);
    } else if ((a = ir_attr_find(c->n, "value_ints")) != NULL && a->kind == IR_ATTR_INTS) {
        int64_t n = a->n;
        c->out[0] = dec_const_i64(c->g, &n, 1, a->ints);
    } else if ((a = ir_attr_find(c->n, "value_floats")) != NULL && a->kind == IR_ATTR_FLOATS) {
        int64_t n = a->n;
        c->out[0] = dec_const(c->g, IR_DT_F32, &n, 1, a->floats);
    } else {
        dec_err(c, "unsupported: Constant without a numeric value attribute");
        return false;
    }
    return true;
}

/* ConstantOfShape: a scalar (attribute value, default f32 0) broadcast to the shape. */
bool dec_constant_of_shape(DecCtx *c)
{
    int64_t dims[IR_MAX_RANK];
    int rank;
    ValId s;
    const IrAttr *a = ir_attr_find(c->n, "value");
    if (a && a->kind == IR_ATTR_TENSOR) {
        const IrType *t = dec_ty(c, a->tensor);
        if (dec_numel(t) != 1) {
            dec_err(c, "value must hold one element");
            return false;
        }
        s = dec_scalar(c->g, t->dtype, dec_load(t->dtype, ir_val(c->g, a->tensor)->data, 0));
    } else {
        s = dec_scalar(c->g, IR_DT_F32, 0.0);
    }
    if (dec_in(c, 0) != IR_NONE && !ir_is_const(c->g, dec_in(c, 0)) && dec_rt_fill(c, s))
        return true;                       /* a runtime shape: onnx_runshape.c */
    if (ir_failed(c->g) || !dec_need_in(c, 0) ||
        !dec_const_ints(c, dec_in(c, 0), "shape", dims, IR_MAX_RANK, &rank))
        return false;
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0) {
            dec_err(c, "negative dimension %lld in shape", (long long)dims[i]);
            return false;
        }
    c->out[0] = dec_expand_from(c, s, dims, rank, dec_in(c, 0));
    return true;
}

/* Range with constant start/limit/delta: a constant. */
bool dec_range(DecCtx *c)
{
    double st, lim, d;
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1) || !dec_need_in(c, 2))
        return false;
    bool rt = false;
    for (int i = 0; i < 3; i++)
        rt |= !ir_is_const(c->g, dec_in(c, i));
    if (rt && dec_rt_range(c))
        return true;
    if (ir_failed(c->g))
        return false;
    if (!dec_const_scalar(c, dec_in(c, 0), "start (output size depends on it)", &st) ||
        !dec_const_scalar(c, dec_in(c, 1), "limit (output size depends on it)", &lim) ||
        !dec_const_scalar(c, dec_in(c, 2), "delta (output size depends on it)", &d))
        return false;
    if (d == 0) {
        dec_err(c, "delta is zero");
        return false;
    }
    IrDType t = dec_ty(c, dec_in(c, 0))->dtype;
    double cnt = ceil((lim - st) / d);
    if (cnt < 0)
        cnt = 0;
    if (cnt > (double)c->g->fold_budget) {
        dec_err(c, "Range of %.0f elements is too large", cnt);
        return false;
    }
    int64_t n = (int64_t)cnt;
    double *v = ir_scratch(c->g, sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = st + (double)i * d;
    c->out[0] = dec_const(c->g, t, &n, 1, v);
    return true;
}

/* EyeLike: constant identity-like matrix of the input's shape. */
bool dec_eyelike(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    const IrType *t = dec_ty(c, dec_in(c, 0));
    if (t->rank != 2) {
        dec_err(c, "input must be 2-D");
        return false;
    }
    IrDType dt = (IrDType)dec_ai(c, "dtype", t->dtype);
    int64_t k = dec_ai(c, "k", 0), n = dec_numel(t);
    if (!dec_fits(c, n, sizeof(double), "EyeLike output"))
        return false;
    double *v = ir_scratch(c->g, sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < t->dims[0]; i++)
        for (int64_t j = 0; j < t->dims[1]; j++)
            v[i * t->dims[1] + j] = (j - i == k) ? 1.0 : 0.0;
    c->out[0] = dec_const(c->g, dt, t->dims, 2, v);
    return true;
}

/* Trilu: SELECT with a triangle mask over the last two dims: a constant one when k is
 * constant, else the comparison of the constant diagonal offsets j - i with the
 * runtime k (an int64 scalar input read on the device). */
bool dec_trilu(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0), kv = IR_NONE;
    const IrType *t = dec_ty(c, x);
    double k = 0;
    int64_t ki;
    if (dec_in(c, 1) != IR_NONE && !dix_const_int(c, 1, &ki)) {
        if ((kv = dix_scalar(c, dec_in(c, 1), "k", IR_DT_I64)) == IR_NONE)
            return false;
    } else if (dec_in(c, 1) != IR_NONE && !dec_const_scalar(c, dec_in(c, 1), "k", &k)) {
        return false;
    }
    if (t->rank < 2) {
        dec_err(c, "input must have rank >= 2");
        return false;
    }
    bool upper = dec_ai(c, "upper", 1) != 0;
    int64_t d[2] = {t->dims[t->rank - 2], t->dims[t->rank - 1]};
    if (!dec_fits(c, d[0] * d[1], sizeof(double), "Trilu mask"))
        return false;
    double *m = ir_scratch(c->g, sizeof(double) * (size_t)(d[0] * d[1] + 1));
    for (int64_t i = 0; i < d[0]; i++)
        for (int64_t j = 0; j < d[1]; j++)
            m[i * d[1] + j] = kv != IR_NONE ? (double)(j - i) : upper ? (j - i >= k) : (j - i <= k);
    ValId mask = kv != IR_NONE ? dec_bin(c, upper ? IR_BIN_GE : IR_BIN_LE,
                                         dec_const(c->g, IR_DT_I64, d, 2, m), kv)
                               : dec_const(c->g, IR_DT_BOOL, d, 2, m);
    c->out[0] = dec_select(c, mask, x, dec_scalar(c->g, t->dtype, 0));
    return true;
}

/* OneHot: EQ of the (wrapped) indices with an iota along the new axis, then SELECT
 * between the on and off values. A runtime depth is bounded by the declared output's
 * extent along the axis; the first depth entries are the valid extent (ir_dyn_add). */
bool dec_onehot(DecCtx *c)
{
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1) || !dec_need_in(c, 2))
        return false;
    double depth;
    ValId idx = dec_cast(c, dec_in(c, 0), IR_DT_I64), vals = dec_in(c, 2), dv = IR_NONE;
    const IrType *ti = dec_ty(c, idx), *decl = dix_declared(c, 0);
    int r = ti->rank + 1, axis;
    if (r > IR_MAX_RANK || !dec_axis(c, dec_ai(c, "axis", -1), r, &axis))
        return false;
    if (!ir_is_const(c->g, dec_in(c, 1)) && decl && decl->rank == r && decl->dims[axis] > 0) {
        depth = (double)decl->dims[axis];  /* a runtime depth, bounded by the declared one */
        if ((dv = dix_scalar(c, dec_in(c, 1), "depth", IR_DT_I64)) == IR_NONE)
            return false;
    } else if (!dec_const_scalar(c, dec_in(c, 1), "depth", &depth)) {
        return false;
    }
    if (!(depth >= 1 && depth <= 1e8)) {
        dec_err(c, "depth %g is out of range", depth);
        return false;
    }
    int64_t dep = (int64_t)depth;
    if (dep <= 0 || dec_numel(dec_ty(c, vals)) != 2) {
        dec_err(c, "depth must be positive and values must hold 2 elements");
        return false;
    }
    /* idx < 0 -> idx + depth */
    ValId wrapped = dec_select(c, dec_bin_s(c, IR_BIN_LT, idx, 0),
                               dv != IR_NONE ? dec_bin(c, IR_BIN_ADD, idx, dv)
                                             : dec_bin_s(c, IR_BIN_ADD, idx, (double)dep), idx);
    int64_t ud[IR_MAX_RANK], iod[IR_MAX_RANK];
    for (int i = 0, j = 0; i < r; i++) {
        ud[i] = i == axis ? 1 : ti->dims[j++];
        iod[i] = i == axis ? dep : 1;
    }
    ValId u = dec_reshape(c, wrapped, ud, r);
    int64_t *io = ir_scratch(c->g, sizeof(int64_t) * (size_t)dep);
    for (int64_t i = 0; i < dep; i++)
        io[i] = i;
    ValId iota = dec_const_i64(c->g, iod, r, io);
    ValId eq = dec_bin(c, IR_BIN_EQ, u, iota);
    ValId flat = dec_reshape(c, vals, (int64_t[]){2}, 1);
    ValId off = dec_reshape(c, dec_slice_axis(c, flat, 0, 0, 1, 1), NULL, 0);
    ValId on = dec_reshape(c, dec_slice_axis(c, flat, 0, 1, 1, 1), NULL, 0);
    c->out[0] = dec_select(c, eq, on, off);
    if (dv != IR_NONE) {                   /* the first depth along axis: a runtime extent */
        dv = dec_bin_s(c, IR_BIN_MIN, dec_bin_s(c, IR_BIN_MAX, dv, -1), (double)(dep + 1));
        ir_dyn_add(c->g, c->out[0], axis, dec_cast(c, dv, IR_DT_I32));
    }
    return true;
}
