/* rt_vmath.h: the float transcendental functions of the VEC kernels (EXP, TANH, ERF,
 * SIGMOID), written without branches, table lookups or library calls so that a loop
 * over them vectorises, and with plain IEEE operations only (no fused multiply-add:
 * the project compiles with -ffp-contract=off), so that every host and every clone
 * of a hot loop gives the same bits.
 *
 * Accuracy against the exact functions: EXP within 2 ulp (normal results), TANH and
 * ERF within 3 ulp, SIGMOID within 3 ulp; special values as C99 Annex F (NaN in, NaN
 * out; EXP(+inf) = +inf, EXP(-inf) = +0; TANH and ERF of +-inf = +-1; signed zeros kept).
 */
#ifndef SPYRT_RT_VMATH_H
#define SPYRT_RT_VMATH_H

#include <stdint.h>
#include <string.h>

/* The functions below are always inlined: called out of line, a loop over them is no
 * longer vectorised (ERF, grown past the inliner's limits inside f_unary, ran 4x
 * slower). */
#define RT_VM_INLINE static inline __attribute__((always_inline))

/* float <-> bits without aliasing problems (compiles to nothing). */
static inline uint32_t rt_vm_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float rt_vm_float(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* c ? a : b without a branch (the compiler keeps floating-point selects as control
 * flow, which stops vectorisation). */
static inline float rt_vm_sel(int c, float a, float b) {
    uint32_t m = 0u - (uint32_t)(c != 0);
    return rt_vm_float((rt_vm_bits(a) & m) | (rt_vm_bits(b) & ~m));
}

/* e^r for x = n ln2 + r with |r| <= ln2/2 (ln2 in two parts, so n*C1 is exact) by a
 * degree-7 polynomial (Cephes expf); n, an integer, goes to *n. x must be finite. */
RT_VM_INLINE float rt_vm_exp_reduced(float x, float *n) {
    const float shifter = 12582912.0f;            /* 1.5 * 2^23: rounds to an integer */
    float k = (x * 1.44269504088896341f + shifter) - shifter;
    float r = (x - k * 0.693359375f) - k * -2.12194440e-4f;
    float z = r * r;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    *n = k;
    return p * z + r + 1.0f;
}

/* e^x: e^r * 2^n (rt_vm_exp_reduced), 2^n applied as two exact powers of two so that
 * subnormal results round once. */
RT_VM_INLINE float rt_vm_exp(float x) {
    float xc = rt_vm_sel(x != x, 0.0f, x);        /* NaN is patched in at the end */
    xc = rt_vm_sel(xc > 88.8f, 88.8f, xc);
    xc = rt_vm_sel(xc < -104.0f, -104.0f, xc);
    float n, p = rt_vm_exp_reduced(xc, &n);
    int32_t ni = (int32_t)n, n1 = ni / 2, n2 = ni - n1;  /* each in [-75, 65] */
    float s1 = rt_vm_float((uint32_t)(n1 + 127) << 23);
    float s2 = rt_vm_float((uint32_t)(n2 + 127) << 23);
    /* at the lower clamp the result is +0: there s2 is left out, so that no product
     * underflows (an underflow costs a microcode assist of some 100 cycles a vector on
     * x86 cores: the masked lanes of a softmax), and the lane is set to +0 after */
    int under = xc <= -104.0f;
    s2 = rt_vm_sel(under, 1.0f, s2);
    float e = p * s1 * s2;
    e = rt_vm_sel(under, 0.0f, e);
    e = rt_vm_sel(x >= 88.72283935546875f, __builtin_inff(), e);
    return rt_vm_sel(x != x, x, e);
}

/* e^x for x in [-87, 88] only (TANH and ERF call it on arguments they bound): there
 * the clamps and special cases of rt_vm_exp change nothing, n is in [-126, 127], so
 * 2^n is a normal float and one product by it rounds as the two of rt_vm_exp do: the
 * same bits, some 15 operations fewer. */
RT_VM_INLINE float rt_vm_exp_mid(float x) {
    float n, p = rt_vm_exp_reduced(x, &n);
    return p * rt_vm_float((uint32_t)((int32_t)n + 127) << 23);
}

/* tanh x below 0.625: an odd polynomial (Cephes tanhf). */
RT_VM_INLINE float rt_vm_tanh_small(float x) {
    float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    return p * z * x + x;
}

/* tanh x: rt_vm_tanh_small below 0.625, else 1 - 2 / (e^{2|x|} + 1). */
RT_VM_INLINE float rt_vm_tanh(float x) {
    float ax = rt_vm_float(rt_vm_bits(x) & 0x7fffffffu);
    float small = rt_vm_tanh_small(x);
    /* beyond |x| = 40, 2 / (e^2|x| + 1) < 2^-25 and big rounds to 1 either way: the
     * argument of EXP is bounded there (NaN too: its lane returns x) */
    float t = rt_vm_sel(ax <= 40.0f, ax, 40.0f);
    float big = 1.0f - 2.0f / (rt_vm_exp_mid(2.0f * t) + 1.0f);
    big = rt_vm_float(rt_vm_bits(big) | (rt_vm_bits(x) & 0x80000000u));
    small = rt_vm_sel(x == 0.0f, x, small);       /* keeps the sign of zero */
    return rt_vm_sel(ax < 0.625f, small, rt_vm_sel(x != x, x, big));
}

/* erf x below 0.921875: x * P(x^2). */
RT_VM_INLINE float rt_vm_erf_small(float x) {
    float s = x * x;
    float p = -1.0289278179698158e-05f;
    p = p * s + 1.1453183833509684e-04f;
    p = p * s - 8.5061322897672653e-04f;
    p = p * s + 5.2223140373826027e-03f;
    p = p * s - 2.6865812018513680e-02f;
    p = p * s + 1.1283788084983826e-01f;
    p = p * s - 3.7612637877464294e-01f;
    p = p * s + 1.1283792257308960e+00f;
    return x * p;
}

/* Q(t), a fit of log erfc t on [0.921875, 4]: in [-18, 0.0003] there. */
RT_VM_INLINE float rt_vm_erfc_log(float t) {
    float q = 1.6025259128582547e-06f;
    q = q * t - 4.5355311158346012e-05f;
    q = q * t + 5.9072155272588134e-04f;
    q = q * t - 4.7303121536970139e-03f;
    q = q * t + 2.6335626840591431e-02f;
    q = q * t - 1.0992533713579178e-01f;
    q = q * t - 6.3199514150619507e-01f;
    q = q * t - 1.1301316022872925e+00f;
    return q * t + 2.9429889400489628e-04f;
}

/* erf x: rt_vm_erf_small below 0.921875; above, 1 - e^{Q(|x|)} (rt_vm_erfc_log; erf
 * rounds to 1 beyond 4). */
RT_VM_INLINE float rt_vm_erf(float x) {
    float ax = rt_vm_float(rt_vm_bits(x) & 0x7fffffffu);
    float small = rt_vm_erf_small(x);
    float t = rt_vm_sel(ax <= 4.0f, ax, 4.0f);    /* NaN: 4 (its lane returns x) */
    float big = 1.0f - rt_vm_exp_mid(rt_vm_erfc_log(t));
    big = rt_vm_float(rt_vm_bits(big) | (rt_vm_bits(x) & 0x80000000u));
    return rt_vm_sel(ax < 0.921875f, small, rt_vm_sel(x != x, x, big));
}

/* 1 / (1 + e^-x), computed as e^x / (1 + e^x) for negative x so that tiny results keep
 * their precision. */
RT_VM_INLINE float rt_vm_sigmoid(float x) {
    float e = rt_vm_exp(rt_vm_float(rt_vm_bits(x) | 0x80000000u));   /* e^-|x| */
    float d = 1.0f + e;
    return rt_vm_sel(x < 0.0f, e, 1.0f) / d;
}

#endif
