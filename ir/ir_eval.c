/* ir_eval.c: reference evaluator of every core op, used by constant folding and tests.
 *
 * Floating-point dtypes compute in double and round once on store; integers compute in
 * 64 bits with wrap-around (two's complement) and are truncated to their width on
 * store. Semantics follow ONNX: integer DIV truncates, MOD takes the divisor's sign,
 * FMOD the dividend's, ROUND is half to even. Integer division by zero and out-of-range
 * gather indices make the node non-evaluable (false): it is left for the device.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtconv.h"
#include "ir.h"
#include "ir_priv.h"

typedef IrEval Ev;
typedef IrBIter BIter;

static const IrType *ity(const Ev *e, int i) { return &e->g->vals[e->n->in[i]].type; }
static const IrType *oty(const Ev *e, int i) { return &e->g->vals[e->n->out[i]].type; }

/* Row-major element strides of t. */
void ir_strides_of(const IrType *t, int64_t *st)
{
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= t->dims[i];
    }
}

/* Start iterating shape `out`; operand j is t[j] broadcast (right-aligned) to it. */
void ir_bi_init(BIter *it, const IrType *out, int k, const IrType *const *t)
{
    memset(it, 0, sizeof *it);
    it->rank = out->rank;
    it->k = k;
    memcpy(it->dims, out->dims, sizeof it->dims);
    for (int j = 0; j < k; j++) {
        int64_t st[IR_MAX_RANK];
        ir_strides_of(t[j], st);
        for (int i = 0; i < out->rank; i++) {
            int ia = i - (out->rank - t[j]->rank);
            it->st[j][i] = (ia >= 0 && t[j]->dims[ia] != 1) ? st[ia] : 0;
        }
    }
}

/* Advance to the next output element (row-major), updating operand offsets. */
void ir_bi_next(BIter *it)
{
    for (int d = it->rank - 1; d >= 0; d--) {
        for (int j = 0; j < it->k; j++)
            it->off[j] += it->st[j][d];
        if (++it->idx[d] < it->dims[d])
            return;
        for (int j = 0; j < it->k; j++)
            it->off[j] -= it->st[j][d] * it->dims[d];
        it->idx[d] = 0;
    }
}

/* Copy one element of es bytes. */
static void copy_elem(void *dst, size_t di, const void *src, size_t si, size_t es)
{
    memcpy((char *)dst + di * es, (const char *)src + si * es, es);
}

/* ---- unary ---- */

/* Unary fn on a float value. */
static double un_f(int fn, double x)
{
    switch (fn) {
    case IR_UN_NEG: return -x;
    case IR_UN_ABS: return fabs(x);
    case IR_UN_EXP: return exp(x);
    case IR_UN_LOG: return log(x);
    case IR_UN_SQRT: return sqrt(x);
    case IR_UN_RSQRT: return 1.0 / sqrt(x);
    case IR_UN_RECIP: return 1.0 / x;
    case IR_UN_TANH: return tanh(x);
    case IR_UN_ERF: return erf(x);
    case IR_UN_SIGMOID: return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
    case IR_UN_RELU: return x > 0 ? x : (isnan(x) ? x : 0.0);
    case IR_UN_FLOOR: return floor(x);
    case IR_UN_CEIL: return ceil(x);
    case IR_UN_ROUND: return nearbyint(x);
    case IR_UN_SIN: return sin(x);
    case IR_UN_COS: return cos(x);
    case IR_UN_TAN: return tan(x);
    case IR_UN_ASIN: return asin(x);
    case IR_UN_ACOS: return acos(x);
    case IR_UN_ATAN: return atan(x);
    case IR_UN_SINH: return sinh(x);
    case IR_UN_COSH: return cosh(x);
    case IR_UN_ASINH: return asinh(x);
    case IR_UN_ACOSH: return acosh(x);
    case IR_UN_ATANH: return atanh(x);
    case IR_UN_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
    case IR_UN_ISNAN: return isnan(x) ? 1.0 : 0.0;
    case IR_UN_ISINF: return isinf(x) ? 1.0 : 0.0;
    case IR_UN_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    default: return NAN;
    }
}

/* Unary fn on an integer (us: unsigned); wraps like two's complement. */
static int64_t un_i(int fn, int64_t x, bool us)
{
    uint64_t u = (uint64_t)x;
    switch (fn) {
    case IR_UN_NEG: return (int64_t)(0 - u);
    case IR_UN_ABS: return (!us && x < 0) ? (int64_t)(0 - u) : x;
    case IR_UN_RELU: return (!us && x < 0) ? 0 : x;
    case IR_UN_SIGN: return us ? (x != 0) : (x > 0) - (x < 0);
    case IR_UN_NOT: return (int64_t)~u;
    default: return x;                     /* floor, ceil, round */
    }
}

/* UNARY: fn applied to every element. */
bool ir_eval_unary(const Ev *e)
{
    int fn = (int)ir_attr_get_int(e->n, "fn", -1);
    IrDType ti = ity(e, 0)->dtype, to = oty(e, 0)->dtype;
    int64_t ne = ir_type_numel(ity(e, 0));
    bool us = ir_dtype_is_unsigned(ti);
    for (int64_t i = 0; i < ne; i++) {
        if (ti == IR_DT_BOOL)
            ir_store_i(to, e->out[0], (size_t)i, !ir_load_i(ti, e->in[0], (size_t)i));
        else if (ir_dtype_is_float(ti))
            ir_store_f(to, e->out[0], (size_t)i, un_f(fn, ir_load_f(ti, e->in[0], (size_t)i)));
        else
            ir_store_i(to, e->out[0], (size_t)i, un_i(fn, ir_load_i(ti, e->in[0], (size_t)i), us));
    }
    return true;
}

/* ---- binary ---- */

/* Binary fn on floats; comparisons give 0/1. */
static double bin_f(int fn, double a, double b)
{
    switch (fn) {
    case IR_BIN_ADD: return a + b;
    case IR_BIN_SUB: return a - b;
    case IR_BIN_MUL: return a * b;
    case IR_BIN_DIV: return a / b;
    case IR_BIN_POW: return pow(a, b);
    case IR_BIN_MAX: return (isnan(a) || a > b) ? a : b;
    case IR_BIN_MIN: return (isnan(a) || a < b) ? a : b;
    case IR_BIN_FMOD: return fmod(a, b);
    case IR_BIN_MOD: {
        double r = fmod(a, b);
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    case IR_BIN_EQ: return a == b;
    case IR_BIN_NE: return a != b;
    case IR_BIN_LT: return a < b;
    case IR_BIN_LE: return a <= b;
    case IR_BIN_GT: return a > b;
    case IR_BIN_GE: return a >= b;
    case IR_BIN_ATAN2: return atan2(a, b);
    default: return NAN;
    }
}

/* Integer power with wrap-around; negative exponents give 0 unless |base| is 1. */
static int64_t ipow(int64_t b, int64_t x, bool us)
{
    if (!us && x < 0)
        return b == 1 ? 1 : b == -1 ? ((x & 1) ? -1 : 1) : 0;
    uint64_t r = 1, base = (uint64_t)b, ex = (uint64_t)x;
    while (ex) {
        if (ex & 1)
            r *= base;
        base *= base;
        ex >>= 1;
    }
    return (int64_t)r;
}

/* Shift of a value of `bits` width; shifts past the width give 0 (or the sign). */
static int64_t ishift(int fn, int64_t a, int64_t s, bool us, int bits)
{
    uint64_t u = (uint64_t)a;
    if (s < 0 || s >= bits)
        return (fn == IR_BIN_SHR && !us && a < 0) ? -1 : 0;
    if (fn == IR_BIN_SHL)
        return (int64_t)(u << s);
    if (us)
        return (int64_t)(u >> s);
    return a < 0 ? ~(int64_t)(~u >> s) : (int64_t)(u >> s);
}

/* Integer division-type op; false on division by zero. */
static bool idiv(int fn, int64_t a, int64_t b, bool us, int64_t *r)
{
    if (b == 0)
        return false;
    if (us) {
        uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
        *r = (int64_t)(fn == IR_BIN_DIV ? ua / ub : ua % ub);
        return true;
    }
    if (b == -1) {                         /* avoids INT64_MIN / -1 overflow */
        *r = fn == IR_BIN_DIV ? (int64_t)(0 - (uint64_t)a) : 0;
        return true;
    }
    int64_t q = a / b, m = a % b;
    if (fn == IR_BIN_MOD && m != 0 && ((m < 0) != (b < 0)))
        m += b;
    *r = fn == IR_BIN_DIV ? q : m;
    return true;
}

/* Binary fn on integers (values sign- or zero-extended); false if not evaluable. */
static bool bin_i(int fn, int64_t a, int64_t b, bool us, int bits, int64_t *r)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    bool lt = us ? ua < ub : a < b;
    switch (fn) {
    case IR_BIN_ADD: *r = (int64_t)(ua + ub); return true;
    case IR_BIN_SUB: *r = (int64_t)(ua - ub); return true;
    case IR_BIN_MUL: *r = (int64_t)(ua * ub); return true;
    case IR_BIN_DIV: case IR_BIN_MOD: case IR_BIN_FMOD: return idiv(fn, a, b, us, r);
    case IR_BIN_POW: *r = ipow(a, b, us); return true;
    case IR_BIN_MAX: *r = lt ? b : a; return true;
    case IR_BIN_MIN: *r = lt ? a : b; return true;
    case IR_BIN_EQ: *r = a == b; return true;
    case IR_BIN_NE: *r = a != b; return true;
    case IR_BIN_LT: *r = lt; return true;
    case IR_BIN_LE: *r = lt || a == b; return true;
    case IR_BIN_GT: *r = !lt && a != b; return true;
    case IR_BIN_GE: *r = !lt; return true;
    case IR_BIN_AND: *r = (int64_t)(ua & ub); return true;
    case IR_BIN_OR: *r = (int64_t)(ua | ub); return true;
    case IR_BIN_XOR: *r = (int64_t)(ua ^ ub); return true;
    case IR_BIN_SHL: case IR_BIN_SHR: *r = ishift(fn, a, b, us, bits); return true;
    default: return false;
    }
}

/* One row of a float32 BINARY: y[i] = a[i*sa] fn b[i*sb] (strides 0 or 1), in float:
 * for these functions the same value as bin_f's double rounded once to float32 (the
 * double result of two floats is exact, or rounds innocuously: 53 >= 2*24 + 2). */
static void bin_row_f32(int fn, const float *a, int64_t sa, const float *b, int64_t sb,
                        float *y, int64_t L)
{
    for (int64_t i = 0; i < L; i++) {
        float x = a[i * sa], z = b[i * sb];
        switch (fn) {
        case IR_BIN_ADD: y[i] = x + z; break;
        case IR_BIN_SUB: y[i] = x - z; break;
        case IR_BIN_MUL: y[i] = x * z; break;
        case IR_BIN_DIV: y[i] = x / z; break;
        case IR_BIN_MAX: y[i] = (isnan(x) || x > z) ? x : z; break;
        default: y[i] = (isnan(x) || x < z) ? x : z; break;
        }
    }
}

/* BINARY add, sub, mul, div, max, min of float32 operands: row by row of the output's
 * last dim (the broadcast iterator steps once per row); false for any other node. */
static bool binary_f32(const Ev *e, int fn)
{
    const IrType *t[2] = {ity(e, 0), ity(e, 1)}, *o = oty(e, 0);
    if (o->rank == 0 || t[0]->dtype != IR_DT_F32 || t[1]->dtype != IR_DT_F32 ||
        o->dtype != IR_DT_F32 || (fn != IR_BIN_ADD && fn != IR_BIN_SUB && fn != IR_BIN_MUL &&
                                  fn != IR_BIN_DIV && fn != IR_BIN_MAX && fn != IR_BIN_MIN))
        return false;
    IrType row = *o;
    int64_t L = o->dims[o->rank - 1];
    row.dims[o->rank - 1] = 1;
    BIter it;
    ir_bi_init(&it, &row, 2, t);
    int64_t sa = it.st[0][o->rank - 1], sb = it.st[1][o->rank - 1], nrow = ir_type_numel(&row);
    for (int64_t r = 0; r < nrow; r++, ir_bi_next(&it))
        bin_row_f32(fn, (const float *)e->in[0] + it.off[0], sa,
                    (const float *)e->in[1] + it.off[1], sb, (float *)e->out[0] + r * L, L);
    return true;
}

/* BINARY: fn of the broadcast operands (float32 add, sub, mul, div, max, min: binary_f32). */
bool ir_eval_binary(const Ev *e)
{
    int fn = (int)ir_attr_get_int(e->n, "fn", -1);
    if (binary_f32(e, fn))
        return true;
    const IrType *t[2] = {ity(e, 0), ity(e, 1)}, *o = oty(e, 0);
    IrDType dt = t[0]->dtype;
    bool fl = ir_dtype_is_float(dt), us = ir_dtype_is_unsigned(dt) || dt == IR_DT_BOOL;
    int bits = ir_dtype_bits(dt);
    int64_t ne = ir_type_numel(o);
    BIter it;
    ir_bi_init(&it, o, 2, t);
    for (int64_t i = 0; i < ne; i++, ir_bi_next(&it)) {
        size_t ia = (size_t)it.off[0], ib = (size_t)it.off[1];
        if (fl) {
            ir_store_f(o->dtype, e->out[0], (size_t)i,
                       bin_f(fn, ir_load_f(dt, e->in[0], ia), ir_load_f(dt, e->in[1], ib)));
        } else {
            int64_t r;
            if (!bin_i(fn, ir_load_i(dt, e->in[0], ia), ir_load_i(dt, e->in[1], ib), us, bits, &r))
                return false;
            ir_store_i(o->dtype, e->out[0], (size_t)i, r);
        }
    }
    return true;
}

/* SELECT: a where cond, else b (broadcast). */
bool ir_eval_select(const Ev *e)
{
    const IrType *t[3] = {ity(e, 0), ity(e, 1), ity(e, 2)}, *o = oty(e, 0);
    size_t es = ir_dtype_size(o->dtype);
    int64_t ne = ir_type_numel(o);
    BIter it;
    ir_bi_init(&it, o, 3, t);
    for (int64_t i = 0; i < ne; i++, ir_bi_next(&it)) {
        bool c = ((const uint8_t *)e->in[0])[it.off[0]] != 0;
        copy_elem(e->out[0], (size_t)i, c ? e->in[1] : e->in[2], (size_t)it.off[c ? 1 : 2], es);
    }
    return true;
}

/* CAST: every element converted to the output dtype (saturate for float8). */
bool ir_eval_cast(const Ev *e)
{
    IrDType ti = ity(e, 0)->dtype, to = oty(e, 0)->dtype;
    int64_t ne = ir_type_numel(ity(e, 0));
    bool sat = ir_attr_get_int(e->n, "saturate", 1) != 0;
    for (int64_t k = 0; k < ne; k++) {
        size_t i = (size_t)k;
        if (spy_dt_narrow_float(to))       /* through float32, as the device does */
            ((uint8_t *)e->out[0])[i] =
                spy_f32_to_narrow((float)ir_load_f(ti, e->in[0], i), to, sat);
        else if (ir_dtype_is_float(ti))
            ir_store_f(to, e->out[0], i, ir_load_f(ti, e->in[0], i));
        else if (ti == IR_DT_U64 && ir_dtype_is_float(to))
            ir_store_f(to, e->out[0], i, (double)((const uint64_t *)e->in[0])[i]);
        else
            ir_store_i(to, e->out[0], i, ir_load_i(ti, e->in[0], i));
    }
    return true;
}

/* ---- reductions ---- */

/* Identity of reduction fn for floats. */
static double red_init_f(int fn)
{
    return fn == IR_RED_SUM ? 0.0 : fn == IR_RED_PROD ? 1.0 : fn == IR_RED_MAX ? -INFINITY
                                                                              : INFINITY;
}

/* Identity of reduction fn for an integer or bool dtype (values as loaded). */
static int64_t red_init_i(int fn, IrDType t)
{
    int bits = ir_dtype_bits(t);
    bool us = ir_dtype_is_unsigned(t) || t == IR_DT_BOOL;
    uint64_t umax = t == IR_DT_BOOL ? 1 : bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    int64_t smax = (int64_t)(umax >> 1);
    if (fn == IR_RED_SUM)
        return 0;
    if (fn == IR_RED_PROD)
        return 1;
    if (fn == IR_RED_MAX)
        return us ? 0 : -smax - 1;
    return us ? (int64_t)umax : smax;
}

/* acc (fn) x for floats; NaN propagates through max/min. */
static double red_f(int fn, double acc, double x)
{
    switch (fn) {
    case IR_RED_SUM: return acc + x;
    case IR_RED_PROD: return acc * x;
    case IR_RED_MAX: return (isnan(x) || x > acc) ? x : acc;
    default: return (isnan(x) || x < acc) ? x : acc;
    }
}

/* acc (fn) x for integers with wrap-around. */
static int64_t red_i(int fn, int64_t acc, int64_t x, bool us)
{
    bool lt = us ? (uint64_t)x < (uint64_t)acc : x < acc;
    switch (fn) {
    case IR_RED_SUM: return (int64_t)((uint64_t)acc + (uint64_t)x);
    case IR_RED_PROD: return (int64_t)((uint64_t)acc * (uint64_t)x);
    case IR_RED_MAX: return (!lt && x != acc) ? x : acc;
    default: return lt ? x : acc;
    }
}

/* Accumulator arrays for n outputs, initialised to the identity of fn. */
typedef struct {
    int fn;
    IrDType dt;
    bool fl, us;
    double *f;
    int64_t *i;
} Acc;

static bool acc_init(Acc *a, int fn, IrDType dt, int64_t n)
{
    a->fn = fn;
    a->dt = dt;
    a->fl = ir_dtype_is_float(dt);
    a->us = ir_dtype_is_unsigned(dt) || dt == IR_DT_BOOL;
    size_t cnt = (size_t)(n > 0 ? n : 1);
    a->f = a->fl ? malloc(cnt * sizeof(double)) : NULL;
    a->i = a->fl ? NULL : malloc(cnt * sizeof(int64_t));
    if (!a->f && !a->i)
        return false;
    for (int64_t k = 0; k < n; k++) {
        if (a->fl)
            a->f[k] = red_init_f(fn);
        else
            a->i[k] = red_init_i(fn, dt);
    }
    return true;
}

/* Fold element si of src into accumulator k. */
static void acc_add(Acc *a, int64_t k, const void *src, size_t si)
{
    if (a->fl)
        a->f[k] = red_f(a->fn, a->f[k], ir_load_f(a->dt, src, si));
    else
        a->i[k] = red_i(a->fn, a->i[k], ir_load_i(a->dt, src, si), a->us);
}

/* Store the n accumulators into dst (dtype a->dt) and free them. */
static void acc_finish(Acc *a, void *dst, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        if (a->fl)
            ir_store_f(a->dt, dst, (size_t)k, a->f[k]);
        else
            ir_store_i(a->dt, dst, (size_t)k, a->i[k]);
    }
    free(a->f);
    free(a->i);
}

/* REDUCE: fn over the reduced axes. */
bool ir_eval_reduce(const Ev *e)
{
    const IrType *t = ity(e, 0), *o = oty(e, 0);
    const int64_t *axes;
    int nax = ir_attr_get_ints(e->n, "axes", &axes);
    bool red[IR_MAX_RANK] = {false};
    for (int i = 0; i < (nax < 0 ? t->rank : nax); i++)
        red[nax < 0 ? i : axes[i]] = true;
    BIter it;
    memset(&it, 0, sizeof it);
    it.rank = t->rank;
    it.k = 1;
    memcpy(it.dims, t->dims, sizeof it.dims);
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        it.st[0][i] = red[i] ? 0 : s;
        s *= red[i] ? 1 : t->dims[i];
    }
    Acc a;
    int64_t no = ir_type_numel(o), ni = ir_type_numel(t);
    if (!acc_init(&a, (int)ir_attr_get_int(e->n, "fn", 0), t->dtype, no))
        return false;
    for (int64_t i = 0; i < ni; i++, ir_bi_next(&it))
        acc_add(&a, it.off[0], e->in[0], (size_t)i);
    acc_finish(&a, e->out[0], no);
    return true;
}

/* Compare elements i and j of p: <0, 0, >0; NaN counts as the largest value. */
static int cmp_elem(IrDType t, const void *p, size_t i, size_t j)
{
    if (ir_dtype_is_float(t)) {
        double a = ir_load_f(t, p, i), b = ir_load_f(t, p, j);
        if (isnan(a) || isnan(b))
            return isnan(a) - isnan(b);
        return (a > b) - (a < b);
    }
    int64_t a = ir_load_i(t, p, i), b = ir_load_i(t, p, j);
    if (ir_dtype_is_unsigned(t))
        return ((uint64_t)a > (uint64_t)b) - ((uint64_t)a < (uint64_t)b);
    return (a > b) - (a < b);
}

/* Sizes of the dims before axis, at axis, and after it. */
void ir_split3(const IrType *t, int axis, int64_t *outer, int64_t *d, int64_t *inner)
{
    *outer = *inner = 1;
    for (int i = 0; i < axis; i++)
        *outer *= t->dims[i];
    for (int i = axis + 1; i < t->rank; i++)
        *inner *= t->dims[i];
    *d = t->dims[axis];
}

/* ARGREDUCE: index of the max/min along axis. */
bool ir_eval_argreduce(const Ev *e)
{
    const IrType *t = ity(e, 0);
    int fn = (int)ir_attr_get_int(e->n, "fn", IR_RED_MAX);
    bool last = ir_attr_get_int(e->n, "select_last", 0) != 0;
    int64_t outer, d, inner;
    ir_split3(t, (int)ir_attr_get_int(e->n, "axis", 0), &outer, &d, &inner);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t in = 0; in < inner; in++) {
            size_t base = (size_t)(o * d * inner + in), best = base;
            int64_t bi = 0;
            for (int64_t k = 1; k < d; k++) {
                size_t cur = base + (size_t)(k * inner);
                int c = cmp_elem(t->dtype, e->in[0], cur, best);
                if (fn == IR_RED_MIN)
                    c = -c;
                if (c > 0 || (c == 0 && last)) {
                    best = cur;
                    bi = k;
                }
            }
            ((int64_t *)e->out[0])[o * inner + in] = bi;
        }
    }
    return true;
}

/* CUMSUM: running sum along axis (exclusive, reverse). */
bool ir_eval_cumsum(const Ev *e)
{
    const IrType *t = ity(e, 0);
    bool ex = ir_attr_get_int(e->n, "exclusive", 0) != 0;
    bool rev = ir_attr_get_int(e->n, "reverse", 0) != 0;
    bool fl = ir_dtype_is_float(t->dtype);
    int64_t outer, d, inner;
    ir_split3(t, (int)ir_attr_get_int(e->n, "axis", 0), &outer, &d, &inner);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t in = 0; in < inner; in++) {
            double sf = 0;
            uint64_t si = 0;
            for (int64_t k0 = 0; k0 < d; k0++) {
                int64_t k = rev ? d - 1 - k0 : k0;
                size_t idx = (size_t)((o * d + k) * inner + in);
                double xf = fl ? ir_load_f(t->dtype, e->in[0], idx) : 0;
                uint64_t xi = fl ? 0 : (uint64_t)ir_load_i(t->dtype, e->in[0], idx);
                if (!ex) {
                    sf += xf;
                    si += xi;
                }
                if (fl)
                    ir_store_f(t->dtype, e->out[0], idx, sf);
                else
                    ir_store_i(t->dtype, e->out[0], idx, (int64_t)si);
                if (ex) {
                    sf += xf;
                    si += xi;
                }
            }
        }
    }
    return true;
}

/* Element offsets (in an array of strides st) of every tap of a window of nk dims
 * (kernel k, dilation d) applied to the trailing nk dims; *cnt taps. NULL if no memory. */
static int64_t *tap_offsets(int nk, const int64_t *k, const int64_t *d, const int64_t *st,
                            int64_t *cnt)
{
    int64_t n = 1, idx[IR_MAX_RANK] = {0};
    for (int j = 0; j < nk; j++)
        n *= k[j];
    int64_t *off = malloc((size_t)(n > 0 ? n : 1) * sizeof *off);
    if (!off)
        return NULL;
    for (int64_t t = 0; t < n; t++) {
        int64_t o = 0;
        for (int j = 0; j < nk; j++)
            o += idx[j] * d[j] * st[j];
        off[t] = o;
        for (int j = nk - 1; j >= 0 && ++idx[j] == k[j]; j--)
            idx[j] = 0;
    }
    *cnt = n;
    return off;
}

/* Advance a row-major multi-index idx over dims (rank r). */
void ir_next_index(int64_t *idx, const int64_t *dims, int r)
{
    for (int j = r - 1; j >= 0 && ++idx[j] == dims[j]; j--)
        idx[j] = 0;
}

/* WINDOW: fn over each window of the trailing dims (pooling). */
bool ir_eval_window(const Ev *e)
{
    static const int64_t ones[IR_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
    const IrType *t = ity(e, 0), *o = oty(e, 0);
    const int64_t *k, *s = ones, *d = ones;
    int nk = ir_attr_get_ints(e->n, "kernel", &k), r = t->rank, lead = r - nk;
    if (ir_attr_get_ints(e->n, "strides", &s) < 0)
        s = ones;
    if (ir_attr_get_ints(e->n, "dilations", &d) < 0)
        d = ones;
    int64_t st[IR_MAX_RANK], idx[IR_MAX_RANK] = {0}, ntap, no = ir_type_numel(o);
    ir_strides_of(t, st);
    int64_t *tap = tap_offsets(nk, k, d, st + lead, &ntap);
    Acc a;
    if (!tap || !acc_init(&a, (int)ir_attr_get_int(e->n, "fn", IR_RED_MAX), t->dtype, no)) {
        free(tap);
        return false;
    }
    for (int64_t i = 0; i < no; i++, ir_next_index(idx, o->dims, r)) {
        int64_t base = 0;
        for (int j = 0; j < r; j++)
            base += idx[j] * (j < lead ? 1 : s[j - lead]) * st[j];
        for (int64_t q = 0; q < ntap; q++)
            acc_add(&a, i, e->in[0], (size_t)(base + tap[q]));
    }
    acc_finish(&a, e->out[0], no);
    free(tap);
    return true;
}

/* Whole buffer widened to doubles (fl) or 64-bit integers; NULL if out of memory. */
static void *widen(IrDType t, const void *p, int64_t n, bool fl)
{
    void *w = malloc((size_t)(n > 0 ? n : 1) * 8);
    if (!w)
        return NULL;
    for (int64_t i = 0; i < n; i++) {
        if (fl)
            ((double *)w)[i] = ir_load_f(t, p, (size_t)i);
        else
            ((int64_t *)w)[i] = ir_load_i(t, p, (size_t)i);
    }
    return w;
}

/* One [M,K] x [K,N] product from wide buffers into dst (dtype t) at element dofs. */
static void mm_block(IrDType t, bool fl, const void *a, const void *b, int64_t M, int64_t K,
                     int64_t N, void *dst, int64_t dofs)
{
    for (int64_t m = 0; m < M; m++) {
        for (int64_t n = 0; n < N; n++) {
            double sf = 0;
            uint64_t si = 0;
            for (int64_t k = 0; k < K; k++) {
                if (fl)
                    sf += ((const double *)a)[m * K + k] * ((const double *)b)[k * N + n];
                else
                    si += (uint64_t)((const int64_t *)a)[m * K + k] *
                          (uint64_t)((const int64_t *)b)[k * N + n];
            }
            if (fl)
                ir_store_f(t, dst, (size_t)(dofs + m * N + n), sf);
            else
                ir_store_i(t, dst, (size_t)(dofs + m * N + n), (int64_t)si);
        }
    }
}

void ir_mm_batches(const IrType *ta, const IrType *tb, const IrType *o,
                   void (*fn)(void *ctx, int64_t i, int64_t oa, int64_t ob), void *ctx)
{
    IrType ba = *ta, bb = *tb, bo = *o;
    ba.rank -= 2;
    bb.rank -= 2;
    bo.rank -= 2;
    const IrType *bt[2] = {&ba, &bb};
    BIter it;
    ir_bi_init(&it, &bo, 2, bt);
    int64_t nb = ir_type_numel(&bo);
    for (int64_t i = 0; i < nb; i++, ir_bi_next(&it))
        fn(ctx, i, it.off[0], it.off[1]);
}

/* One MATMUL batch of ir_eval_matmul (ir_mm_batches callback). */
typedef struct {
    IrDType t;
    bool fl;
    const char *wa, *wb;
    int64_t M, K, N;
    void *out;
} MmCtx;

/* ir_mm_batches callback of ir_eval_matmul: output batch i from batches oa, ob. */
static void mm_batch(void *ctx, int64_t i, int64_t oa, int64_t ob)
{
    const MmCtx *c = ctx;
    mm_block(c->t, c->fl, c->wa + oa * c->M * c->K * 8, c->wb + ob * c->K * c->N * 8, c->M,
             c->K, c->N, c->out, i * c->M * c->N);
}

/* MATMUL: batched a @ b with broadcast batch dims. */
bool ir_eval_matmul(const Ev *e)
{
    const IrType *ta = ity(e, 0), *tb = ity(e, 1), *o = oty(e, 0);
    bool fl = ir_dtype_is_float(o->dtype);
    MmCtx c = {.t = o->dtype, .fl = fl, .M = ta->dims[ta->rank - 2],
               .K = ta->dims[ta->rank - 1], .N = tb->dims[tb->rank - 1], .out = e->out[0]};
    void *wa = widen(ta->dtype, e->in[0], ir_type_numel(ta), fl);
    void *wb = widen(tb->dtype, e->in[1], ir_type_numel(tb), fl);
    if (wa && wb) {
        c.wa = wa;
        c.wb = wb;
        ir_mm_batches(ta, tb, o, mm_batch, &c);
    }
    free(wa);
    free(wb);
    return wa && wb;
}

/* Sum over channels c of one group and all taps: x[xbase + c*xs1 + tap] * w[wbase + ...]. */
static void conv_point(bool fl, const void *x, const void *w, int64_t xbase, int64_t wbase,
                       int64_t cg, int64_t xs1, int64_t ws1, const int64_t *xt,
                       const int64_t *wt, int64_t ntap, double *sf, uint64_t *si)
{
    for (int64_t c = 0; c < cg; c++) {
        for (int64_t q = 0; q < ntap; q++) {
            int64_t xi = xbase + c * xs1 + xt[q], wi = wbase + c * ws1 + wt[q];
            if (fl)
                *sf += ((const double *)x)[xi] * ((const double *)w)[wi];
            else
                *si += (uint64_t)((const int64_t *)x)[xi] * (uint64_t)((const int64_t *)w)[wi];
        }
    }
}

/* CONV: grouped, strided, dilated convolution without padding. */
bool ir_eval_conv(const Ev *e)
{
    static const int64_t ones[IR_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
    const IrType *tx = ity(e, 0), *tw = ity(e, 1), *o = oty(e, 0);
    int r = tx->rank, ns = r - 2;
    const int64_t *s, *d;
    if (ir_attr_get_ints(e->n, "strides", &s) < 0)
        s = ones;
    if (ir_attr_get_ints(e->n, "dilations", &d) < 0)
        d = ones;
    int64_t group = ir_attr_get_int(e->n, "group", 1), cg = tw->dims[1];
    int64_t mg = tw->dims[0] / group, xs[IR_MAX_RANK], ws[IR_MAX_RANK], ntap, ntap2;
    bool fl = ir_dtype_is_float(o->dtype);
    ir_strides_of(tx, xs);
    ir_strides_of(tw, ws);
    int64_t *xt = tap_offsets(ns, tw->dims + 2, d, xs + 2, &ntap);
    int64_t *wt = tap_offsets(ns, tw->dims + 2, ones, ws + 2, &ntap2);
    void *wx = widen(tx->dtype, e->in[0], ir_type_numel(tx), fl);
    void *ww = widen(tw->dtype, e->in[1], ir_type_numel(tw), fl);
    bool ok = xt && wt && wx && ww;
    int64_t idx[IR_MAX_RANK] = {0}, no = ir_type_numel(o);
    for (int64_t i = 0; ok && i < no; i++, ir_next_index(idx, o->dims, r)) {
        int64_t xbase = idx[0] * xs[0] + (idx[1] / mg) * cg * xs[1];
        for (int j = 0; j < ns; j++)
            xbase += idx[j + 2] * s[j] * xs[j + 2];
        double sf = 0;
        uint64_t si = 0;
        conv_point(fl, wx, ww, xbase, idx[1] * ws[0], cg, xs[1], ws[1], xt, wt, ntap, &sf, &si);
        if (fl)
            ir_store_f(o->dtype, e->out[0], (size_t)i, sf);
        else
            ir_store_i(o->dtype, e->out[0], (size_t)i, (int64_t)si);
    }
    free(xt);
    free(wt);
    free(wx);
    free(ww);
    return ok;
}

/* ---- dispatch ---- */

/* Ops without an evaluator (FOREIGN): not evaluable. */
bool ir_eval_none(const Ev *e)
{
    (void)e;
    return false;
}

/* True if every input and output of n has a dtype this evaluator handles. */
static bool dtypes_ok(IrGraph *g, const IrNode *n)
{
    for (int i = 0; i < n->nin + n->nout; i++) {
        ValId v = i < n->nin ? n->in[i] : n->out[i - n->nin];
        if (v == IR_NONE || v >= g->nvals)
            return false;
        const IrType *t = &g->vals[v].type;
        if (ir_dtype_size(t->dtype) == 0 || ir_type_numel(t) < 0)
            return false;
    }
    return true;
}

bool ir_eval_node(IrGraph *g, const IrNode *n, const void **in, void **out)
{
    if (n->op >= IR_OP_FOREIGN || !dtypes_ok(g, n))
        return false;
    for (int i = 0; i < n->nout; i++)
        out[i] = ir_alloc(g, ir_type_bytes(&g->vals[n->out[i]].type));
    Ev e = {g, n, in, out};
    return ir_op_info[n->op].eval(&e);
}
