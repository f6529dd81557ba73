/* ir_dtype.c: dtypes, element access, and the name tables generated from ops.def. */
#include <math.h>
#include <string.h>

#include "dtconv.h"
#include "ir.h"
#include "ir_priv.h"

const IrOpInfo ir_op_info[IR_OP_COUNT] = {
#define X(e, name, mi, ma, no, cls, flags, fn, vec, infer, eval, verify, ident, label, work) \
    {name, mi, ma, no, cls, flags, fn, vec, infer, eval, verify, ident, label, work},
#include "ops.def"
#undef X
};

static const char *const unfn_names[IR_UN_COUNT] = {
#define IR_UNFN(e, name) name,
#include "ops.def"
#undef IR_UNFN
};

static const char *const binfn_names[IR_BIN_COUNT] = {
#define IR_BINFN(e, name) name,
#include "ops.def"
#undef IR_BINFN
};

static const char *const redfn_names[IR_RED_COUNT] = {
#define IR_REDFN(e, name) name,
#include "ops.def"
#undef IR_REDFN
};

/* Name of function fn in table t of n entries, or "?" when out of range. */
static const char *table_name(const char *const *t, int n, int fn)
{
    return (fn >= 0 && fn < n) ? t[fn] : "?";
}

/* Index of s in table t of n entries, or -1. */
static int table_find(const char *const *t, int n, const char *s)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(t[i], s) == 0)
            return i;
    return -1;
}

const char *ir_unfn_name(int fn) { return table_name(unfn_names, IR_UN_COUNT, fn); }
const char *ir_binfn_name(int fn) { return table_name(binfn_names, IR_BIN_COUNT, fn); }
const char *ir_redfn_name(int fn) { return table_name(redfn_names, IR_RED_COUNT, fn); }

/* Name of function fn in the fn table of op (ops.def column fn); NULL when the op has
 * none, "?" when fn is outside the table. */
const char *ir_op_fn_name(IrOp op, int fn) {
    switch (ir_op_info[op].fn) {
    case IR_FNK_UN: return ir_unfn_name(fn);
    case IR_FNK_BIN: return ir_binfn_name(fn);
    case IR_FNK_RED: return ir_redfn_name(fn);
    default: return NULL;
    }
}
int ir_unfn_from_name(const char *s) { return table_find(unfn_names, IR_UN_COUNT, s); }
int ir_binfn_from_name(const char *s) { return table_find(binfn_names, IR_BIN_COUNT, s); }
int ir_redfn_from_name(const char *s) { return table_find(redfn_names, IR_RED_COUNT, s); }

/* Op enum from its text name; IR_OP_COUNT if unknown. */
IrOp ir_op_from_name(const char *s)
{
    for (int i = 0; s && i < IR_OP_COUNT; i++)
        if (strcmp(ir_op_info[i].name, s) == 0)
            return (IrOp)i;
    return IR_OP_COUNT;
}

/* One row per dtype: code, short name, bytes per element. */
static const struct { IrDType t; const char *name; size_t size; } dtypes[] = {
    {IR_DT_UNDEF, "undef", 0}, {IR_DT_F32, "f32", 4},   {IR_DT_U8, "u8", 1},
    {IR_DT_I8, "i8", 1},       {IR_DT_U16, "u16", 2},   {IR_DT_I16, "i16", 2},
    {IR_DT_I32, "i32", 4},     {IR_DT_I64, "i64", 8},   {IR_DT_STRING, "string", 0},
    {IR_DT_BOOL, "bool", 1},   {IR_DT_F16, "f16", 2},   {IR_DT_F64, "f64", 8},
    {IR_DT_U32, "u32", 4},     {IR_DT_U64, "u64", 8},   {IR_DT_BF16, "bf16", 2},
    {IR_DT_F8E4M3FN, "f8e4m3fn", 1}, {IR_DT_F8E4M3FNUZ, "f8e4m3fnuz", 1},
    {IR_DT_F8E5M2, "f8e5m2", 1},     {IR_DT_F8E5M2FNUZ, "f8e5m2fnuz", 1},
    {IR_DT_U4, "u4", 1},       {IR_DT_I4, "i4", 1},     {IR_DT_F4E2M1, "f4e2m1", 1},
    {IR_DT_U2, "u2", 1},       {IR_DT_I2, "i2", 1},     {IR_DT_F8E8M0, "f8e8m0", 1},
    {IR_DT_DLF16, "dlf16", 2},
};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

size_t ir_dtype_size(IrDType t)
{
    for (size_t i = 0; i < NDTYPES; i++)
        if (dtypes[i].t == t)
            return dtypes[i].size;
    return 0;
}

const char *ir_dtype_name(IrDType t)
{
    for (size_t i = 0; i < NDTYPES; i++)
        if (dtypes[i].t == t)
            return dtypes[i].name;
    return "undef";
}

IrDType ir_dtype_from_name(const char *s)
{
    for (size_t i = 0; s && i < NDTYPES; i++)
        if (strcmp(dtypes[i].name, s) == 0)
            return dtypes[i].t;
    return IR_DT_UNDEF;
}

bool ir_dtype_is_float(IrDType t)
{
    return t == IR_DT_F32 || t == IR_DT_F64 || t == IR_DT_F16 || t == IR_DT_BF16 ||
           t == IR_DT_DLF16 || spy_dt_narrow_float(t);
}

bool ir_dtype_is_int(IrDType t)
{
    switch (t) {
    case IR_DT_I8: case IR_DT_I16: case IR_DT_I32: case IR_DT_I64:
    case IR_DT_U8: case IR_DT_U16: case IR_DT_U32: case IR_DT_U64:
    case IR_DT_U4: case IR_DT_I4: case IR_DT_U2: case IR_DT_I2:
        return true;
    default:
        return false;
    }
}

bool ir_dtype_is_unsigned(IrDType t)
{
    return t == IR_DT_U8 || t == IR_DT_U16 || t == IR_DT_U32 || t == IR_DT_U64 ||
           t == IR_DT_U4 || t == IR_DT_U2;
}

int ir_dtype_bits(IrDType t)
{
    return spy_dt_subbyte_int(t) || t == IR_DT_F4E2M1 ? spy_dt_bits(t) : (int)ir_dtype_size(t) * 8;
}

/* ---- shapes ---- */

/* Product of the dims; -1 for a negative dim or when the product of the non-zero
 * dims overflows (even if another dim is 0), so that every sub-product of a valid
 * shape fits in int64. */
int64_t ir_type_numel(const IrType *t)
{
    int64_t n = 1;
    bool zero = false;
    for (int i = 0; i < t->rank; i++) {
        int64_t d = t->dims[i];
        if (d < 0)
            return -1;
        if (d == 0)
            zero = true;
        else if (__builtin_mul_overflow(n, d, &n))
            return -1;
    }
    return zero ? 0 : n;
}

size_t ir_type_bytes(const IrType *t)
{
    int64_t n = ir_type_numel(t);
    size_t es = ir_dtype_size(t->dtype);
    if (n < 0 || (uint64_t)n > SIZE_MAX / (es ? es : 1))
        return SIZE_MAX;
    return (size_t)n * es;
}

bool ir_type_eq(const IrType *a, const IrType *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

/* ---- half precision ---- */

float ir_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    uint32_t bits;
    if (e == 0x1f) {
        bits = sign | 0x7f800000u | (m << 13);
    } else if (e == 0) {
        float f = ldexpf((float)m, -24);
        return sign ? -f : f;
    } else {
        bits = sign | ((e + 112) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t ir_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return sign | 0x7e00;                       /* NaN */
    if (ax >= 0x477ff000u)
        return sign | 0x7c00;                       /* overflow (rounds to inf) */
    if (ax < 0x38800000u) {                         /* subnormal or zero in f16 */
        float a;
        memcpy(&a, &ax, 4);
        float q = nearbyintf(a * 16777216.0f);      /* units of 2^-24, half to even */
        return sign | (uint16_t)q;
    }
    uint32_t m = ax + 0xfffu + ((ax >> 13) & 1);    /* round to nearest even */
    return sign | (uint16_t)((m - 0x38000000u) >> 13);
}

float ir_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t ir_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* ---- element access ---- */

double ir_load_f(IrDType t, const void *p, size_t i)
{
    switch (t) {
    case IR_DT_F32: return ((const float *)p)[i];
    case IR_DT_F64: return ((const double *)p)[i];
    case IR_DT_F16: return ir_f16_to_f32(((const uint16_t *)p)[i]);
    case IR_DT_BF16: return ir_bf16_to_f32(((const uint16_t *)p)[i]);
    case IR_DT_DLF16: return spy_dlf16_to_f32(((const uint16_t *)p)[i]);
    case IR_DT_U64: return (double)((const uint64_t *)p)[i];
    default:
        if (spy_dt_narrow_float(t))
            return spy_narrow_to_f32(((const uint8_t *)p)[i], t);
        return (double)ir_load_i(t, p, i);
    }
}

int64_t ir_load_i(IrDType t, const void *p, size_t i)
{
    switch (t) {
    case IR_DT_I8: return ((const int8_t *)p)[i];
    case IR_DT_I16: return ((const int16_t *)p)[i];
    case IR_DT_I32: return ((const int32_t *)p)[i];
    case IR_DT_I64: return ((const int64_t *)p)[i];
    case IR_DT_U8: case IR_DT_BOOL: case IR_DT_U4: case IR_DT_U2: return ((const uint8_t *)p)[i];
    case IR_DT_I4: case IR_DT_I2: return ((const int8_t *)p)[i];
    case IR_DT_U16: return ((const uint16_t *)p)[i];
    case IR_DT_U32: return ((const uint32_t *)p)[i];
    case IR_DT_U64: return (int64_t)((const uint64_t *)p)[i];
    default: {
        double d = trunc(ir_load_f(t, p, i));
        if (isnan(d))
            return 0;
        if (d >= 9223372036854775807.0)
            return INT64_MAX;
        if (d <= -9223372036854775808.0)
            return INT64_MIN;
        return (int64_t)d;
    }
    }
}

void ir_store_f(IrDType t, void *p, size_t i, double v)
{
    switch (t) {
    case IR_DT_F32: ((float *)p)[i] = (float)v; return;
    case IR_DT_F64: ((double *)p)[i] = v; return;
    case IR_DT_F16: ((uint16_t *)p)[i] = ir_f32_to_f16((float)v); return;
    case IR_DT_BF16: ((uint16_t *)p)[i] = ir_f32_to_bf16((float)v); return;
    case IR_DT_DLF16: ((uint16_t *)p)[i] = spy_f32_to_dlf16((float)v); return;
    case IR_DT_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    case IR_DT_F8E4M3FN: case IR_DT_F8E4M3FNUZ: case IR_DT_F8E5M2: case IR_DT_F8E5M2FNUZ:
    case IR_DT_F4E2M1: case IR_DT_F8E8M0:
        ((uint8_t *)p)[i] = spy_f32_to_narrow((float)v, t, true);
        return;
    case IR_DT_U64:
        if (v >= 18446744073709551615.0)
            ((uint64_t *)p)[i] = UINT64_MAX;
        else if (v >= 9223372036854775808.0)
            ((uint64_t *)p)[i] = (uint64_t)v;
        else
            ir_store_i(t, p, i, ir_load_i(IR_DT_F64, &v, 0));
        return;
    default: ir_store_i(t, p, i, ir_load_i(IR_DT_F64, &v, 0)); return;
    }
}

void ir_store_i(IrDType t, void *p, size_t i, int64_t v)
{
    uint64_t u = (uint64_t)v;
    switch (t) {
    case IR_DT_I8: case IR_DT_U8: ((uint8_t *)p)[i] = (uint8_t)u; return;
    case IR_DT_U4: case IR_DT_I4: case IR_DT_U2: case IR_DT_I2:
        ((int8_t *)p)[i] = (int8_t)spy_wrap_subbyte((int32_t)(uint32_t)u, t);
        return;
    case IR_DT_I16: case IR_DT_U16: ((uint16_t *)p)[i] = (uint16_t)u; return;
    case IR_DT_I32: case IR_DT_U32: ((uint32_t *)p)[i] = (uint32_t)u; return;
    case IR_DT_I64: case IR_DT_U64: ((uint64_t *)p)[i] = u; return;
    case IR_DT_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    case IR_DT_F32: ((float *)p)[i] = (float)v; return;
    case IR_DT_F64: ((double *)p)[i] = (double)v; return;
    default: ir_store_f(t, p, i, (double)v); return;
    }
}

void ir_f32_to_dlf16_sat_n(uint16_t *restrict dst, const float *restrict src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)           /* blocks of 16: no scalar epilogue to vectorise */
        for (int j = 0; j < 16; j++)
            dst[i + j] = spy_f32_to_dlf16_sat(src[i + j]);
    for (; i < n; i++)
        dst[i] = spy_f32_to_dlf16_sat(src[i]);
}
