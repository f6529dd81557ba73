/* test_rt_vmath.c: the emulator's vectorised EXP, TANH, ERF and SIGMOID (rt_vmath.h)
 * against libm in double precision (ulp bounds and special values), and bit for bit
 * against their formulas before EXP's lower clamp skipped the underflowing product and
 * TANH and ERF bounded the argument of their EXP. (Split from test_rt_kernels.c.)
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rt_vmath.h"

/* The bits of f. */
static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Error of got against the exact value ref, in units of the float ulp at ref. */
static double ulps(float got, double ref) {
    if (isnan(ref))
        return isnan(got) ? 0 : 1e9;
    if (got == (float)ref) /* includes overflow to infinity */
        return 0;
    if (isinf(ref) || ref == 0)
        return got == (float)ref ? 0 : 1e9;
    int e;
    frexp(ref, &e);
    double ulp = ldexp(1.0, (e - 24 < -149) ? -149 : e - 24);
    return fabs((double)got - ref) / ulp;
}

static double sigmoid_d(double x) {
    return 1.0 / (1.0 + exp(-x));
}

static void test_vmath(void **state) {
    (void)state;
    double worst[4] = {0};
    for (uint32_t u = 0; u < 0xffffffffu - 4099; u += 4099) { /* every 4099th float */
        float x;
        memcpy(&x, &u, 4);
        worst[0] = fmax(worst[0], ulps(rt_vm_exp(x), exp(x)));
        worst[1] = fmax(worst[1], ulps(rt_vm_tanh(x), tanh(x)));
        worst[2] = fmax(worst[2], ulps(rt_vm_erf(x), erf(x)));
        worst[3] = fmax(worst[3], ulps(rt_vm_sigmoid(x), sigmoid_d(x)));
    }
    assert_true(worst[0] <= 2.0);
    assert_true(worst[1] <= 3.0);
    assert_true(worst[2] <= 3.0);
    assert_true(worst[3] <= 3.0);
    /* special values */
    assert_true(rt_vm_exp(INFINITY) == INFINITY && rt_vm_exp(-INFINITY) == 0.0f);
    assert_true(isnan(rt_vm_exp(NAN)) && isnan(rt_vm_tanh(NAN)) && isnan(rt_vm_erf(NAN)));
    assert_true(rt_vm_exp(88.72283935546875f) == INFINITY);
    assert_true(rt_vm_exp(88.72283172607422f) < INFINITY);
    assert_true(rt_vm_tanh(-INFINITY) == -1.0f && rt_vm_erf(INFINITY) == 1.0f);
    assert_true(signbit(rt_vm_tanh(-0.0f)) && signbit(rt_vm_erf(-0.0f)));
    assert_true(rt_vm_sigmoid(-100.0f) > 0.0f && rt_vm_sigmoid(100.0f) == 1.0f);
    assert_true(rt_vm_exp(-104.0f) == 0.0f && rt_vm_exp(-103.0f) > 0.0f);
}

/* rt_vm_exp as it was before its lower clamp skipped the underflowing product (its
 * polynomial, rt_vm_exp_reduced, unchanged): the reference its results must still
 * equal bit for bit. */
static float exp_scaled_twice(float x) {
    float xc = rt_vm_sel(x != x, 0.0f, x);
    xc = rt_vm_sel(xc > 88.8f, 88.8f, xc);
    xc = rt_vm_sel(xc < -104.0f, -104.0f, xc);
    float n, p = rt_vm_exp_reduced(xc, &n);
    int32_t ni = (int32_t)n, n1 = ni / 2, n2 = ni - n1;
    float s1 = rt_vm_float((uint32_t)(n1 + 127) << 23);
    float s2 = rt_vm_float((uint32_t)(n2 + 127) << 23);
    float e = p * s1 * s2;
    e = rt_vm_sel(x >= 88.72283935546875f, __builtin_inff(), e);
    return rt_vm_sel(x != x, x, e);
}

/* TANH and ERF as they were before they called rt_vm_exp_mid on a bounded argument:
 * on rt_vm_exp of the whole range (as exp_scaled_twice); their polynomials
 * (rt_vm_tanh_small, rt_vm_erf_small, rt_vm_erfc_log) unchanged. */
static float tanh_ref(float x) {
    float ax = rt_vm_float(rt_vm_bits(x) & 0x7fffffffu);
    float small = rt_vm_tanh_small(x);
    float big = 1.0f - 2.0f / (exp_scaled_twice(2.0f * ax) + 1.0f);
    big = rt_vm_float(rt_vm_bits(big) | (rt_vm_bits(x) & 0x80000000u));
    small = rt_vm_sel(x == 0.0f, x, small);
    return rt_vm_sel(ax < 0.625f, small, rt_vm_sel(x != x, x, big));
}

static float erf_ref(float x) {
    float ax = rt_vm_float(rt_vm_bits(x) & 0x7fffffffu);
    float small = rt_vm_erf_small(x);
    float t = rt_vm_sel(ax > 4.0f, 4.0f, ax);
    float big = 1.0f - exp_scaled_twice(rt_vm_erfc_log(t));
    big = rt_vm_float(rt_vm_bits(big) | (rt_vm_bits(x) & 0x80000000u));
    return rt_vm_sel(ax < 0.921875f, small, rt_vm_sel(x != x, x, big));
}

/* Whether EXP, TANH, ERF and SIGMOID give the reference bits at x. */
static void same_vmath_bits(float x) {
    assert_int_equal(bits(rt_vm_exp(x)), bits(exp_scaled_twice(x)));
    assert_int_equal(bits(rt_vm_tanh(x)), bits(tanh_ref(x)));
    assert_int_equal(bits(rt_vm_erf(x)), bits(erf_ref(x)));
    float e = exp_scaled_twice(rt_vm_float(rt_vm_bits(x) | 0x80000000u));
    assert_int_equal(bits(rt_vm_sigmoid(x)), bits(rt_vm_sel(x < 0.0f, e, 1.0f) / (1.0f + e)));
}

/* EXP, TANH, ERF and SIGMOID give the bits of the reference formulas (EXP scaled twice
 * over its whole range, TANH and ERF on it) on every 997th float, on every float near
 * the bounds that changed (EXP's lower clamp at -104 and its subnormal results, TANH's
 * argument bound at 40, ERF's at 4, the switches at 0.625 and 0.921875), and on the
 * infinities and NaNs. */
static void test_vmath_same_bits(void **state) {
    (void)state;
    for (uint32_t u = 0; u < 0xffffffffu - 997; u += 997) {
        float x;
        memcpy(&x, &u, 4);
        same_vmath_bits(x);
    }
    static const float lo[] = {-104.1f, -87.4f, 39.9f, 3.99f, 0.62f, 0.92f, 44.3f, 88.7f};
    static const float hi[] = {-103.9f, -87.2f, 40.1f, 4.01f, 0.63f, 0.925f, 44.4f, 88.8f};
    for (size_t k = 0; k < sizeof lo / sizeof lo[0]; k++)
        for (float x = lo[k]; x <= hi[k]; x = nextafterf(x, INFINITY)) {
            same_vmath_bits(x);
            same_vmath_bits(-x);
        }
    static const float sp[] = {INFINITY, -INFINITY, NAN, -NAN, 0.0f, -0.0f, FLT_MAX, -FLT_MAX};
    for (size_t k = 0; k < sizeof sp / sizeof sp[0]; k++)
        same_vmath_bits(sp[k]);
    assert_int_equal(bits(rt_vm_exp(-104.0f)), 0u);
    assert_int_equal(bits(rt_vm_sigmoid(-200.0f)), 0u);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vmath),
        cmocka_unit_test(test_vmath_same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
