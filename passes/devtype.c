/* devtype.c: how IR dtypes live on the device (dtype legalisation).
 *
 * The device has no 64-bit types and no unsigned 16/32-bit ones: float64 data is
 * float32 on the device, int64, uint16, uint32 and uint64 data is int32. Graph inputs
 * and outputs are converted at the bundle's edge by the runtime (inputs narrowed with
 * a range check, outputs widened); constants are converted here at compile time. Every
 * other dtype is held as itself; float16/bfloat16, the float8/float4 types and the 4-
 * and 2-bit integers (one byte per element) are storage types: moved, and converted by
 * CAST, while arithmetic on them runs in float32 (halfwiden.c).
 */
#include <string.h>

#include "dtconv.h"
#include "isa.h"
#include "devtype.h"

/* Device element type of an IR dtype (64-bit and wide unsigned types narrowed); 0 if
 * the device cannot hold it. */
int pass_dev_dtype(IrDType t)
{
    switch (t) {
    case IR_DT_F32: case IR_DT_F64: return ISA_DT_F32;
    case IR_DT_U8: return ISA_DT_U8;
    case IR_DT_I8: return ISA_DT_I8;
    case IR_DT_I16: return ISA_DT_I16;
    case IR_DT_I32: case IR_DT_I64: case IR_DT_U16: case IR_DT_U32: case IR_DT_U64:
        return ISA_DT_I32;
    case IR_DT_BOOL: return ISA_DT_BOOL;
    case IR_DT_F16: return ISA_DT_F16;
    case IR_DT_BF16: return ISA_DT_BF16;
    case IR_DT_DLF16: return ISA_DT_DLF16;
    case IR_DT_F8E4M3FN: case IR_DT_F8E4M3FNUZ: case IR_DT_F8E5M2: case IR_DT_F8E5M2FNUZ:
    case IR_DT_U4: case IR_DT_I4: case IR_DT_F4E2M1: case IR_DT_U2: case IR_DT_I2:
    case IR_DT_F8E8M0:
        return (int)t;                     /* same codes on the device, a byte each */
    default: return 0;
    }
}

/* Bytes of t's device element (I64 -> 4); 0 if the device cannot hold t. */
int pass_dev_esize(IrDType t)
{
    switch (pass_dev_dtype(t)) {
    case ISA_DT_F32: case ISA_DT_I32: return 4;
    case ISA_DT_I16: case ISA_DT_F16: case ISA_DT_BF16: case ISA_DT_DLF16: return 2;
    case 0: return 0;
    default: return 1;
    }
}

/* True if the vector unit computes on t (storage types can only be moved and cast). */
bool pass_dtype_computable(IrDType t)
{
    int d = pass_dev_dtype(t);
    return d && d != ISA_DT_F16 && d != ISA_DT_BF16 && !spy_dt_narrow_float(d) &&
           !spy_dt_subbyte_int(d);
}

/* ONNX-style long dtype name for user messages. */
const char *pass_dtype_long_name(IrDType t)
{
    switch (t) {
    case IR_DT_F32: return "float32";
    case IR_DT_U8: return "uint8";
    case IR_DT_I8: return "int8";
    case IR_DT_U16: return "uint16";
    case IR_DT_I16: return "int16";
    case IR_DT_I32: return "int32";
    case IR_DT_I64: return "int64";
    case IR_DT_STRING: return "string";
    case IR_DT_BOOL: return "bool";
    case IR_DT_F16: return "float16";
    case IR_DT_F64: return "float64";
    case IR_DT_U32: return "uint32";
    case IR_DT_U64: return "uint64";
    case IR_DT_BF16: return "bfloat16";
    case IR_DT_F8E4M3FN: return "float8e4m3fn";
    case IR_DT_F8E4M3FNUZ: return "float8e4m3fnuz";
    case IR_DT_F8E5M2: return "float8e5m2";
    case IR_DT_F8E5M2FNUZ: return "float8e5m2fnuz";
    case IR_DT_U4: return "uint4";
    case IR_DT_I4: return "int4";
    case IR_DT_F4E2M1: return "float4e2m1";
    case IR_DT_F8E8M0: return "float8e8m0";
    case IR_DT_U2: return "uint2";
    case IR_DT_I2: return "int2";
    case IR_DT_DLF16: return "dlfloat16";
    default: return "undefined";
    }
}

/* Whether IR dtype t is held on the device as a narrower type whose range can lose
 * integer values (int64, uint32, uint64 -> int32). */
bool pass_dev_narrows_int(IrDType t)
{
    return t == IR_DT_I64 || t == IR_DT_U32 || t == IR_DT_U64;
}

/* Element i of constant data `data` (IR dtype t) as its device element, written to
 * dst (pass_dev_esize(t) bytes): float64 is rounded to float32, int64/uint16/uint32/
 * uint64 become int32, other dtypes are copied. Returns false, with *val = the
 * element, when an integer lies outside int32 (dst is then left unspecified). */
bool pass_dev_elem(IrDType t, const void *data, int64_t i, void *dst, int64_t *val)
{
    const uint8_t *p = (const uint8_t *)data;
    int64_t x;
    switch (t) {
    case IR_DT_F64: {
        double d;
        memcpy(&d, p + 8 * i, 8);
        float f = (float)d;
        memcpy(dst, &f, 4);
        return true;
    }
    case IR_DT_I64: memcpy(&x, p + 8 * i, 8); break;
    case IR_DT_U64: {
        uint64_t u;
        memcpy(&u, p + 8 * i, 8);
        x = u > INT64_MAX ? INT64_MAX : (int64_t)u;
        break;
    }
    case IR_DT_U32: {
        uint32_t u;
        memcpy(&u, p + 4 * i, 4);
        x = u;
        break;
    }
    case IR_DT_U16: {
        uint16_t u;
        memcpy(&u, p + 2 * i, 2);
        x = u;
        break;
    }
    default: {
        size_t es = (size_t)pass_dev_esize(t);
        memcpy(dst, p + (size_t)i * es, es);
        return true;
    }
    }
    *val = x;
    if (x < INT32_MIN || x > INT32_MAX)
        return false;
    int32_t y = (int32_t)x;
    memcpy(dst, &y, 4);
    return true;
}
