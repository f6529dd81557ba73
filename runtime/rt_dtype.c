/* rt_dtype.c: element type and name tables of the runtime (dtype sizes, which
 * types the device computes on, allowed host/device pairs, opcode and section names).
 */
#include "dtconv.h"
#include "rt_model.h"

/* Size in bytes of an ONNX dtype code (host or device); 0 when unknown/unsized. */
unsigned rt_dtype_size(int dt) {
    switch (dt) {
    case 1: return 4;  /* float */
    case 2: return 1;  /* uint8 */
    case 3: return 1;  /* int8 */
    case 4: return 2;  /* uint16 */
    case 5: return 2;  /* int16 */
    case 6: return 4;  /* int32 */
    case 7: return 8;  /* int64 */
    case 9: return 1;  /* bool */
    case 10: return 2; /* float16 */
    case 11: return 8; /* double */
    case 12: return 4; /* uint32 */
    case 13: return 8; /* uint64 */
    case 16: return 2; /* bfloat16 */
    case 64: return 2; /* DLFloat16 (device only) */
    case 17: case 18: case 19: case 20: /* float8 variants */
    case 21: case 22: case 23: case 24: case 25: case 26: /* 4-/2-bit ints, float4,
                                                        * float8e8m0: a byte each */
        return 1;
    default: return 0;
    }
}

/* Short name of an ONNX dtype code, for messages. */
const char *rt_dtype_name(int dt) {
    switch (dt) {
    case 1: return "f32";
    case 2: return "u8";
    case 3: return "i8";
    case 4: return "u16";
    case 5: return "i16";
    case 6: return "i32";
    case 7: return "i64";
    case 9: return "bool";
    case 10: return "f16";
    case 11: return "f64";
    case 12: return "u32";
    case 13: return "u64";
    case 16: return "bf16";
    case 17: return "f8e4m3fn";
    case 18: return "f8e4m3fnuz";
    case 19: return "f8e5m2";
    case 20: return "f8e5m2fnuz";
    case 21: return "u4";
    case 22: return "i4";
    case 23: return "f4e2m1";
    case 24: return "f8e8m0";
    case 25: return "u2";
    case 26: return "i2";
    case 64: return "dlf16";
    default: return "?";
    }
}

/* Device dtypes the vector unit computes on. */
bool rt_dtype_computable(int dt) {
    return dt == ISA_DT_F32 || dt == ISA_DT_I32 || dt == ISA_DT_I16 || dt == ISA_DT_I8 ||
           dt == ISA_DT_U8 || dt == ISA_DT_BOOL;
}

/* Device dtypes that may live in DRAM/LX and be moved or filled (the storage types
 * F16/BF16, float8/float4 and 4-/2-bit ints are only converted, by VEC CAST; DLF16 is
 * also an operand of VEC's float functions, computed in F32: see isa.md). */
bool rt_dtype_movable(int dt) {
    return rt_dtype_computable(dt) || dt == ISA_DT_F16 || dt == ISA_DT_BF16 ||
           dt == ISA_DT_DLF16 || spy_dt_narrow_float(dt) || spy_dt_subbyte_int(dt);
}

/* Host/device dtype pairs the bundle edge converts (see sbin.md). Inputs narrow,
 * outputs widen; equal movable types bind the caller's buffer directly. */
bool rt_io_pair_ok(int role, int host, int dev) {
    if (!rt_dtype_movable(dev) || dev == ISA_DT_DLF16)
        return false;                       /* DLFloat16 never crosses the edge: the
                                             * kernels convert it on the card */
    if (host == dev)
        return true;
    if (host == 9 && dev == ISA_DT_U8)
        return true;                        /* bool <-> 0/1 bytes */
    if (dev == ISA_DT_I32)
        return host == 7 || host == 12 || host == 13 || host == 4; /* i64 u32 u64 u16 */
    if (dev == ISA_DT_F32)
        return host == 11;                  /* double */
    (void)role;
    return false;
}

/* Mnemonic of an opcode. */
const char *rt_opcode_name(int op) {
    static const char *const names[ISA_OPCODE_COUNT] = {
        "NOP", "LOAD", "STORE", "GATHER", "MATMUL", "VEC", "VREDUCE", "VFILL", "VSCAN",
        "BARRIER", "SCATTER"};
    return op >= 0 && op < ISA_OPCODE_COUNT ? names[op] : "?";
}

/* Name of a section id. */
const char *rt_section_name(uint32_t id) {
    static const char *const names[SPY_SEC_MAX] = {
        "?", "STRINGS", "TENSORS", "CONSTS", "KERNELS", "PROGRAMS",
        "CODE", "SCHEDULE", "SEGMENTS", "META", "SELFTEST", "DEBUG", "DIMREFS", NULL, NULL, "VARIANTS"};
    return id < SPY_SEC_MAX && names[id] ? names[id] : "?";
}

/* Public name of a dtype code (spyrt.h). */
const char *spy_dtype_name(spy_dtype dt) { return rt_dtype_name(dt); }
