/* dtconv.h: bit-exact conversions of the narrow element types, shared by the
 * compiler (constant folding) and the runtime (VEC CAST), so both agree bit for bit.
 *
 * Codes equal ONNX TensorProto.DataType. Every type here is held one element per byte
 * (in the IR, on the device and in runtime host buffers; ONNX files pack the 4- and
 * 2-bit types two / four to a byte, see sbin.md):
 *   17 float8e4m3fn   1.4.3 bias 7,  no inf, NaN = S.1111.111, max 448
 *   18 float8e4m3fnuz 1.4.3 bias 8,  no inf, no -0, NaN = 0x80,   max 240
 *   19 float8e5m2     1.5.2 bias 15, IEEE inf/NaN,                max 57344
 *   20 float8e5m2fnuz 1.5.2 bias 16, no inf, no -0, NaN = 0x80,   max 57344
 *   23 float4e2m1     1.2.1 bias 1,  no inf/NaN (low nibble),     max 6
 *   24 float8e8m0     exponent only: 2^(v-127), 0xff = NaN, no sign, no zero
 *   21 uint4, 22 int4, 25 uint2, 26 int2: the value, zero- / sign-extended to a byte.
 * float32 -> narrow float rounds to nearest even. Values beyond the largest finite
 * (and infinities) give +-max when saturating (ONNX Cast saturate=1, the default),
 * otherwise NaN (fn/fnuz) or inf (e5m2); float4e2m1 always saturates. NaN gives NaN
 * (float4e2m1, which has none: 0x8 for +NaN, 0x0 for -NaN, as ONNX's reference).
 * float -> float8e8m0 takes the exponent of |x| and rounds up when the fraction is not
 * zero (ONNX round_mode "up"); the increment past 2^127 is dropped when saturating,
 * else gives NaN; inf and NaN give NaN.
 * float -> sub-byte integer truncates toward zero, then wraps to the width (ONNX).
 *
 * DLFloat16 (the card's 16-bit format, device-only code ISA_DT_DLF16 = 64, no ONNX
 * code): sign, 6 exponent bits (bias 31), 9 fraction bits, two bytes per element.
 *   bits  15 | 14 ... 9 | 8 ... 0
 *         s  |    e     |    m        value (-1)^s * 2^(e-31) * (1 + m/512)
 * Every exponent 0..63 is a normal exponent: there are no subnormals. Two patterns are
 * special: s.000000.000000000 is zero (+0 / -0; the pattern that would be 2^-31 itself,
 * so the smallest magnitude is 2^-31 * (1 + 1/512), 0x0001), and s.111111.111111111
 * (0x7FFF / 0xFFFF) is NINF, which stands for NaN and both infinities. The largest
 * finite value is 2^32 * (1 + 510/512) (0x7FFE), about 8.57e9.
 * float32 -> DLFloat16 rounds the magnitude to nearest with ties away from zero
 * (add half a unit of the 9-bit fraction, then truncate), and only then checks the
 * range: a rounded magnitude above the largest finite value (from 2^32*(1+510.5/512)
 * up; below it rounds down to 0x7FFE), infinity or NaN gives NINF with the input's
 * sign; a rounded magnitude below 2^-31 * (1 + 1/512) gives zero with the input's sign
 * (so 2^-31*(1+0.5/512) rounds up to 0x0001, anything smaller, float32 subnormals
 * included, is zero). This is bit for bit IBM's published conversion (zDNN,
 * onnx-mlir's NNP1 class). DLFloat16 -> float32 is exact; NINF gives a quiet NaN
 * with NINF's sign (float32 cannot say which of NaN, +inf, -inf it stood for).
 * The runtime converts arrays with the vectorised rt_dlf16.c, equal to these bit for bit.
 */
#ifndef SPYREC_DTCONV_H
#define SPYREC_DTCONV_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum { SPY_DT_F8E4M3FN = 17, SPY_DT_F8E4M3FNUZ = 18, SPY_DT_F8E5M2 = 19,
       SPY_DT_F8E5M2FNUZ = 20, SPY_DT_U4 = 21, SPY_DT_I4 = 22, SPY_DT_F4E2M1 = 23,
       SPY_DT_F8E8M0 = 24, SPY_DT_U2 = 25, SPY_DT_I2 = 26 };

enum { SPY_NF_FN, SPY_NF_FNUZ, SPY_NF_IEEE, SPY_NF_NONE };

typedef struct {
    int ebits, mbits, bias, kind;
    float maxv;
    uint8_t maxcode;                       /* bits of +max */
} SpyNarrowFmt;

/* Format of narrow float dtype dt; false if dt is not one. */
static inline bool spy_narrow_fmt(int dt, SpyNarrowFmt *f)
{
    switch (dt) {
    case SPY_DT_F8E4M3FN: *f = (SpyNarrowFmt){4, 3, 7, SPY_NF_FN, 448.0f, 0x7e}; return true;
    case SPY_DT_F8E4M3FNUZ: *f = (SpyNarrowFmt){4, 3, 8, SPY_NF_FNUZ, 240.0f, 0x7f}; return true;
    case SPY_DT_F8E5M2: *f = (SpyNarrowFmt){5, 2, 15, SPY_NF_IEEE, 57344.0f, 0x7b}; return true;
    case SPY_DT_F8E5M2FNUZ: *f = (SpyNarrowFmt){5, 2, 16, SPY_NF_FNUZ, 57344.0f, 0x7f}; return true;
    case SPY_DT_F4E2M1: *f = (SpyNarrowFmt){2, 1, 1, SPY_NF_NONE, 6.0f, 0x7}; return true;
    default: return false;
    }
}

/* Whether dt is a narrow float (float8 variants, float4e2m1, float8e8m0). */
static inline bool spy_dt_narrow_float(int dt)
{
    return (dt >= SPY_DT_F8E4M3FN && dt <= SPY_DT_F8E5M2FNUZ) || dt == SPY_DT_F4E2M1 ||
           dt == SPY_DT_F8E8M0;
}

/* Whether dt is a sub-byte integer (uint4, int4, uint2, int2). */
static inline bool spy_dt_subbyte_int(int dt)
{
    return dt == SPY_DT_U4 || dt == SPY_DT_I4 || dt == SPY_DT_U2 || dt == SPY_DT_I2;
}

/* Whether dt is an unsigned sub-byte integer (uint4, uint2). */
static inline bool spy_dt_unsigned_sub(int dt)
{
    return dt == SPY_DT_U4 || dt == SPY_DT_U2;
}

/* Bits of a sub-byte integer or float4 element (8 for others). */
static inline int spy_dt_bits(int dt)
{
    return dt == SPY_DT_U4 || dt == SPY_DT_I4 || dt == SPY_DT_F4E2M1 ? 4
           : dt == SPY_DT_U2 || dt == SPY_DT_I2                    ? 2
                                                                   : 8;
}

/* Exact narrow float -> float32. */
static inline float spy_narrow_to_f32(uint8_t v, int dt)
{
    SpyNarrowFmt f;
    if (dt == SPY_DT_F8E8M0)
        return v == 0xff ? NAN : ldexpf(1.0f, (int)v - 127);
    if (!spy_narrow_fmt(dt, &f))
        return NAN;
    int nb = 1 + f.ebits + f.mbits;
    unsigned emask = (1u << f.ebits) - 1, mmask = (1u << f.mbits) - 1;
    v &= (uint8_t)((1u << nb) - 1);
    bool neg = (v >> (nb - 1)) & 1;
    unsigned e = (v >> f.mbits) & emask, m = v & mmask;
    if (f.kind == SPY_NF_FNUZ && v == 0x80)
        return NAN;
    if (f.kind == SPY_NF_FN && e == emask && m == mmask)
        return neg ? -NAN : NAN;
    if (f.kind == SPY_NF_IEEE && e == emask)
        return m ? (neg ? -NAN : NAN) : (neg ? -INFINITY : INFINITY);
    float r = e ? ldexpf(1.0f + (float)m / (float)(1u << f.mbits), (int)e - f.bias)
                : ldexpf((float)m, 1 - f.bias - f.mbits);
    return neg ? -r : r;
}

/* float32 -> float8e8m0, round_mode "up" (see the header comment). */
static inline uint8_t spy_f32_to_e8m0(float x, bool saturate)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    unsigned e = (b >> 23) & 0xff;
    if (e == 0xff)
        return 0xff;
    if ((b & 0x7fffff) && !(saturate && e == 0xfe))
        e++;
    return (uint8_t)e;
}

/* float32 -> narrow float dt (round to nearest even; see the header comment). */
static inline uint8_t spy_f32_to_narrow(float x, int dt, bool saturate)
{
    SpyNarrowFmt f;
    if (dt == SPY_DT_F8E8M0)
        return spy_f32_to_e8m0(x, saturate);
    if (!spy_narrow_fmt(dt, &f))
        return 0;
    int nb = 1 + f.ebits + f.mbits;
    uint8_t s = signbit(x) ? (uint8_t)(1u << (nb - 1)) : 0;
    uint8_t nan = f.kind == SPY_NF_FNUZ ? 0x80 : f.kind == SPY_NF_FN ? (uint8_t)(s | 0x7f)
                  : f.kind == SPY_NF_IEEE ? (uint8_t)(s | 0x7e) : (uint8_t)(s ^ 0x8);
    if (isnan(x))
        return nan;
    uint8_t over = saturate || f.kind == SPY_NF_NONE ? (uint8_t)(s | f.maxcode)
                   : f.kind == SPY_NF_IEEE            ? (uint8_t)(s | 0x7c)
                                                      : nan;
    float a = fabsf(x);
    if (isinf(a))
        return over;
    int emin = 1 - f.bias, ex;
    frexpf(a, &ex);
    int E = a == 0.0f || ex - 1 < emin ? emin : ex - 1;
    float step = ldexpf(1.0f, E - f.mbits);
    float q = nearbyintf(a / step) * step;
    if (q > f.maxv)
        return over;
    if (q == 0.0f)
        return f.kind == SPY_NF_FNUZ ? 0 : s;
    frexpf(q, &ex);
    E = ex - 1;
    unsigned e, m;
    if (E < emin) {
        e = 0;
        m = (unsigned)(q / ldexpf(1.0f, emin - f.mbits));
    } else {
        e = (unsigned)(E + f.bias);
        m = (unsigned)((q / ldexpf(1.0f, E) - 1.0f) * (float)(1u << f.mbits));
    }
    return (uint8_t)(s | (e << f.mbits) | m);
}

/* An integer wrapped to sub-byte integer dt (two's complement), as held in a byte. */
static inline int32_t spy_wrap_subbyte(int32_t v, int dt)
{
    int bits = spy_dt_bits(dt);
    uint32_t u = (uint32_t)v & ((1u << bits) - 1);
    if ((dt == SPY_DT_I4 || dt == SPY_DT_I2) && (u >> (bits - 1)))
        return (int32_t)u - (1 << bits);
    return (int32_t)u;
}

/* The DLFloat16 pattern NINF without its sign (NaN, +inf, -inf; see the header). */
#define SPY_DLF16_NINF 0x7fffu

/* float32 -> DLFloat16 (round half away from zero, then NINF / signed zero beyond the
 * range; see the header comment). The magnitude's bits plus half a unit, shifted to
 * the 9-bit fraction, minus the exponent bias difference (127 - 31) << 9, is the
 * code when it lies in [0, 0x7FFF); below 0 is zero, from 0x7FFF on (infinity and NaN
 * included: their exponent is 255) NINF. */
static inline uint16_t spy_f32_to_dlf16(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    int32_t t = (int32_t)(((b & 0x7fffffffu) + 0x2000u) >> 14) - (96 << 9);
    t = t < 0 ? 0 : t > 0x7fff ? 0x7fff : t;
    return (uint16_t)(((b >> 16) & 0x8000u) | (uint32_t)t);
}

/* float32 -> DLFloat16 for a compile-time value (a constant, a fill or pad value):
 * as spy_f32_to_dlf16, but a value beyond the range, infinities included, saturates
 * to the largest finite value with its sign instead of NINF, which reads as NaN: the
 * -inf pad of a max pool or the float32-lowest fill of an attention mask must stay a
 * huge number of its sign. NaN stays NINF. */
static inline uint16_t spy_f32_to_dlf16_sat(float x)
{
    uint16_t h = spy_f32_to_dlf16(x);
    return (h & SPY_DLF16_NINF) == SPY_DLF16_NINF && x == x ? (uint16_t)(h - 1) : h;
}

/* Exact DLFloat16 -> float32 (NINF gives a quiet NaN with its sign). */
static inline float spy_dlf16_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000u) << 16, v = h & 0x7fffu;
    uint32_t b = s | (v == 0 ? 0 : v == SPY_DLF16_NINF ? 0x7fc00000u : (v + (96u << 9)) << 14);
    float f;
    memcpy(&f, &b, 4);
    return f;
}

#endif
