/* rt_fpconv.c: conversions between float32 and the narrow floating-point storage
 * types of the device (IEEE binary16, bfloat16), used by VEC CAST. float32 -> narrow
 * rounds to nearest, ties to even (IEEE 754), overflow gives infinity and NaN stays
 * NaN (quiet); narrow -> float32 is exact.
 */
#include <string.h>

#include "rt_exec.h"

/* Exact binary16 -> float32. */
float rt_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
    if (e == 0x1f) {
        bits = sign | 0x7f800000u | (m << 13);
    } else if (e == 0) {
        if (m == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int sh = 0;
            while (!(m & 0x400)) {
                m <<= 1;
                sh++;
            }
            bits = sign | ((uint32_t)(113 - sh) << 23) | ((m & 0x3ff) << 13);
        }
    } else {
        bits = sign | ((e + 112) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Exact binary16 -> float32 of n contiguous elements (rt_f16_to_f32's bits), without
 * branches so that the loop vectorises: the exponent is rebiased; a subnormal becomes
 * the normal 2^-14 * (1 + m/1024) minus 2^-14 (exact); infinity and NaN keep the top
 * exponent. Widening a float16 weight tile per MATMUL (isa.md CAST) runs here. */
void rt_f16_to_f32_n(float *dst, const uint8_t *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        uint32_t o = (uint32_t)(h & 0x7fff) << 13, e = o & 0x0f800000u;
        o += (uint32_t)(127 - 15) << 23;
        o += e == 0x0f800000u ? (uint32_t)(128 - 16) << 23 : 0;
        o += e == 0 ? 1u << 23 : 0;
        float f, magic, sub;
        memcpy(&f, &o, 4);
        uint32_t mb = 113u << 23, sb;
        memcpy(&magic, &mb, 4);
        sub = f - magic;                    /* used for subnormals only (a NaN stays as is) */
        memcpy(&sb, &sub, 4);
        uint32_t r = (e == 0 ? sb : o) | (uint32_t)(h & 0x8000) << 16;
        memcpy(dst + i, &r, 4);
    }
}

/* float32 -> binary16, round to nearest even; overflow to infinity. */
uint16_t rt_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return sign | 0x7e00 | (uint16_t)((ax >> 13) & 0x1ff); /* quiet NaN, keeps payload */
    if (ax >= 0x477ff000u)
        return sign | 0x7c00;                 /* rounds past the largest finite: inf */
    if (ax < 0x38800000u) {                   /* below the smallest normal: subnormal */
        if (ax < 0x33000000u)
            return sign;                      /* below half the smallest subnormal */
        uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t sh = 126 - e;                /* m >> sh = value in units of 2^-24 */
        uint32_t q = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
        if (rem > half || (rem == half && (q & 1)))
            q++;
        return sign | (uint16_t)q;
    }
    uint32_t m = ax + 0xfffu + ((ax >> 13) & 1);
    return sign | (uint16_t)((m - 0x38000000u) >> 13);
}

/* Exact bfloat16 -> float32. */
float rt_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* float32 -> bfloat16, round to nearest even; NaN stays a quiet NaN. */
uint16_t rt_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}
