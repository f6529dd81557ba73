/* rt_vecfn.c: the table of ISA_VEC functions: name, arity, the operand types each is
 * defined for and whether the timing model charges it as a transcendental.
 */
#include "dtconv.h"
#include "rt_exec.h"

#define VF_F 1u   /* defined on F32 operands (and DLF16, computed in F32) */
#define VF_I 2u   /* on integer operands (I32 I16 I8 U8) */
#define VF_B 4u   /* on BOOL operands */
#define VF_CMP 8u /* result is BOOL */
#define VF_TR 16u /* transcendental (timing) */

static const struct {
    const char *name;
    uint8_t arity;
    uint8_t flags;
} vf_tab[ISA_VF_COUNT] = {
    [ISA_VF_COPY] = {"COPY", 1, VF_F | VF_I | VF_B},
    [ISA_VF_NEG] = {"NEG", 1, VF_F | VF_I},
    [ISA_VF_ABS] = {"ABS", 1, VF_F | VF_I},
    [ISA_VF_EXP] = {"EXP", 1, VF_F | VF_TR},
    [ISA_VF_LOG] = {"LOG", 1, VF_F | VF_TR},
    [ISA_VF_SQRT] = {"SQRT", 1, VF_F | VF_TR},
    [ISA_VF_RSQRT] = {"RSQRT", 1, VF_F | VF_TR},
    [ISA_VF_RECIP] = {"RECIP", 1, VF_F},
    [ISA_VF_TANH] = {"TANH", 1, VF_F | VF_TR},
    [ISA_VF_ERF] = {"ERF", 1, VF_F | VF_TR},
    [ISA_VF_SIGMOID] = {"SIGMOID", 1, VF_F | VF_TR},
    [ISA_VF_RELU] = {"RELU", 1, VF_F | VF_I},
    [ISA_VF_FLOOR] = {"FLOOR", 1, VF_F},
    [ISA_VF_CEIL] = {"CEIL", 1, VF_F},
    [ISA_VF_ROUND] = {"ROUND", 1, VF_F},
    [ISA_VF_SIN] = {"SIN", 1, VF_F | VF_TR},
    [ISA_VF_COS] = {"COS", 1, VF_F | VF_TR},
    [ISA_VF_TAN] = {"TAN", 1, VF_F | VF_TR},
    [ISA_VF_ASIN] = {"ASIN", 1, VF_F | VF_TR},
    [ISA_VF_ACOS] = {"ACOS", 1, VF_F | VF_TR},
    [ISA_VF_ATAN] = {"ATAN", 1, VF_F | VF_TR},
    [ISA_VF_SINH] = {"SINH", 1, VF_F | VF_TR},
    [ISA_VF_COSH] = {"COSH", 1, VF_F | VF_TR},
    [ISA_VF_ASINH] = {"ASINH", 1, VF_F | VF_TR},
    [ISA_VF_ACOSH] = {"ACOSH", 1, VF_F | VF_TR},
    [ISA_VF_ATANH] = {"ATANH", 1, VF_F | VF_TR},
    [ISA_VF_SIGN] = {"SIGN", 1, VF_F | VF_I},
    [ISA_VF_NOT] = {"NOT", 1, VF_I | VF_B},
    [ISA_VF_ISNAN] = {"ISNAN", 1, VF_F | VF_CMP},
    [ISA_VF_ISINF] = {"ISINF", 1, VF_F | VF_CMP},
    [ISA_VF_SOFTPLUS] = {"SOFTPLUS", 1, VF_F | VF_TR},
    [ISA_VF_ADD] = {"ADD", 2, VF_F | VF_I},
    [ISA_VF_SUB] = {"SUB", 2, VF_F | VF_I},
    [ISA_VF_MUL] = {"MUL", 2, VF_F | VF_I},
    [ISA_VF_DIV] = {"DIV", 2, VF_F | VF_I},
    [ISA_VF_POW] = {"POW", 2, VF_F | VF_I | VF_TR},
    [ISA_VF_MAX] = {"MAX", 2, VF_F | VF_I},
    [ISA_VF_MIN] = {"MIN", 2, VF_F | VF_I},
    [ISA_VF_FMOD] = {"FMOD", 2, VF_F | VF_I},
    [ISA_VF_MOD] = {"MOD", 2, VF_F | VF_I},
    [ISA_VF_EQ] = {"EQ", 2, VF_F | VF_I | VF_B | VF_CMP},
    [ISA_VF_NE] = {"NE", 2, VF_F | VF_I | VF_B | VF_CMP},
    [ISA_VF_LT] = {"LT", 2, VF_F | VF_I | VF_B | VF_CMP},
    [ISA_VF_LE] = {"LE", 2, VF_F | VF_I | VF_B | VF_CMP},
    [ISA_VF_GT] = {"GT", 2, VF_F | VF_I | VF_B | VF_CMP},
    [ISA_VF_GE] = {"GE", 2, VF_F | VF_I | VF_B | VF_CMP},
    [ISA_VF_AND] = {"AND", 2, VF_I | VF_B},
    [ISA_VF_OR] = {"OR", 2, VF_I | VF_B},
    [ISA_VF_XOR] = {"XOR", 2, VF_I | VF_B},
    [ISA_VF_SHL] = {"SHL", 2, VF_I},
    [ISA_VF_SHR] = {"SHR", 2, VF_I},
    [ISA_VF_ATAN2] = {"ATAN2", 2, VF_F | VF_TR},
    [ISA_VF_SELECT] = {"SELECT", 3, VF_F | VF_I | VF_B},
    [ISA_VF_CAST] = {"CAST", 1, VF_F | VF_I | VF_B},
    [ISA_VF_FMA] = {"FMA", 3, VF_F},
};

/* Number of operands of fn (an immediate counts); 0 when fn is unknown. */
int rt_vecfn_arity(int fn) {
    return fn >= 0 && fn < ISA_VF_COUNT ? vf_tab[fn].arity : 0;
}

/* Whether the timing model charges fn at the transcendental rate. */
bool rt_vecfn_transcendental(int fn) {
    return fn >= 0 && fn < ISA_VF_COUNT && (vf_tab[fn].flags & VF_TR);
}

/* Whether fn produces BOOL from operands of src_dtype. */
bool rt_vecfn_compare(int fn) {
    return fn >= 0 && fn < ISA_VF_COUNT && (vf_tab[fn].flags & VF_CMP);
}

/* Mnemonic of fn. */
const char *rt_vecfn_name(int fn) {
    return fn >= 0 && fn < ISA_VF_COUNT && vf_tab[fn].name ? vf_tab[fn].name : "?";
}

/* Operand class bit of a device dtype (0 when not computable). */
static unsigned dt_class(int dt) {
    switch (dt) {
    case ISA_DT_F32: case ISA_DT_DLF16: return VF_F;
    case ISA_DT_I32: case ISA_DT_I16: case ISA_DT_I8: case ISA_DT_U8: return VF_I;
    case ISA_DT_BOOL: return VF_B;
    default: return 0;
    }
}

/* Whether dt is a storage type (moved, and converted by CAST only): F16, BF16, the
 * float8/float4 and the 4-/2-bit integer types. */
static bool half_dt(int dt) {
    return dt == ISA_DT_F16 || dt == ISA_DT_BF16 || spy_dt_narrow_float(dt) ||
           spy_dt_subbyte_int(dt);
}

/* Checks result dtype dt and operand dtype src_dt (already defaulted) against fn. */
bool rt_vecfn_types_ok(int fn, int dt, int src_dt, const char **why) {
    unsigned cls = dt_class(src_dt);
    if (fn == ISA_VF_COPY) {
        bool ok = src_dt == dt && (cls || half_dt(dt));
        *why = "COPY needs src_dtype == dtype, a movable dtype";
        return ok;
    }
    if (fn == ISA_VF_CAST) {
        *why = "CAST needs computable (or storage) src_dtype and dtype";
        return (cls || half_dt(src_dt)) && (dt_class(dt) || half_dt(dt));
    }
    if (vf_tab[fn].flags & VF_CMP) {
        *why = "comparison needs dtype BOOL and a src_dtype the function is defined for";
        return dt == ISA_DT_BOOL && (vf_tab[fn].flags & cls);
    }
    *why = "function not defined for this dtype (or src_dtype != dtype, other than "
           "F32 <-> DLF16)";
    return (src_dt == dt || (cls == VF_F && dt_class(dt) == VF_F)) && (vf_tab[fn].flags & cls);
}
