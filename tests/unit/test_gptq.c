/* test_gptq.c: the GPTQ rounding of passes/fp8_gptq.c (fp8 weights with --calibrate).
 *
 *  - the blocked Cholesky factorisation reproduces a known factor (3x3 by hand, and a
 *    150x150 one across several blocks) and refuses a matrix that is not positive
 *    definite;
 *  - the second moments H = X^T X accumulate as a direct double-precision sum does;
 *  - on correlated inputs X, GPTQ's output error ||X (B - s Q)|| is well below that of
 *    rounding to nearest (the same routine with no error feedback), and that
 *    rounding to nearest is exactly the codes' nearest values;
 *  - the Ledoit-Wolf shrinkage is small for correlated inputs with many rows, large
 *    for fewer rows than components of independent ones, and in [0, 1].
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "passes/fp8_gptq.h"

/* A deterministic uniform value in [-1, 1). */
static double uni(uint64_t *st)
{
    *st = *st * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*st >> 11) / (double)(1ull << 52) - 1.0;
}

/* a = l l^T for the lower triangular l [k, k]. */
static void lower_product(const double *l, double *a, int64_t k)
{
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            double s = 0;
            for (int64_t p = 0; p <= (i < j ? i : j); p++)
                s += l[i * k + p] * l[j * k + p];
            a[i * k + j] = s;
        }
}

/* A hand-made 3x3 factor, then a random 150x150 one (three 64-column blocks). */
static void test_cholesky_known(void **state)
{
    (void)state;
    double l3[9] = {2, 0, 0, 1, 3, 0, -1, 0.5, 1}, a3[9];
    lower_product(l3, a3, 3);
    assert_true(gptq_cholesky(a3, 3));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j <= i; j++)
            assert_true(fabs(a3[i * 3 + j] - l3[i * 3 + j]) < 1e-12);
    enum { K = 150 };
    double *l = calloc(K * K, sizeof *l), *a = calloc(K * K, sizeof *a);
    uint64_t st = 7;
    for (int i = 0; i < K; i++)
        for (int j = 0; j <= i; j++)
            l[i * K + j] = i == j ? 1.0 + 0.5 * fabs(uni(&st)) : 0.3 * uni(&st);
    lower_product(l, a, K);
    assert_true(gptq_cholesky(a, K));
    double err = 0;
    for (int i = 0; i < K; i++)
        for (int j = 0; j <= i; j++)
            err = fmax(err, fabs(a[i * K + j] - l[i * K + j]));
    assert_true(err < 1e-9);
    double bad[4] = {1, 2, 2, 1};                 /* eigenvalues 3 and -1 */
    assert_false(gptq_cholesky(bad, 2));
    free(l);
    free(a);
}

/* A code of a 15-level integer grid (offset 128), saturating at +-7. */
static uint8_t round_int7(float x)
{
    float r = nearbyintf(x);
    r = r > 7 ? 7 : r < -7 ? -7 : r;
    return (uint8_t)(int)(r + 128);
}

/* ||X (b - s q)||_F for x [rows, k], b [k, n], codes q with values lut. */
static double out_err(const float *x, const float *b, const float *s, const uint8_t *q,
                      const float *lut, int64_t rows, int64_t k, int64_t n)
{
    double sum = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            double y = 0;
            for (int64_t i = 0; i < k; i++)
                y += (double)x[r * k + i] * ((double)b[i * n + j] - (double)s[j] * lut[q[i * n + j]]);
            sum += y * y;
        }
    return sqrt(sum);
}

/* Correlated inputs with a constant offset: H as a direct sum, GPTQ below rounding. */
static void test_gptq_beats_rounding(void **state)
{
    (void)state;
    enum { R = 400, K = 160, N = 24, F = 12 };    /* K > 128: two rounding blocks */
    float *x = malloc(R * K * sizeof *x), *b = malloc(K * N * sizeof *b);
    float *h = calloc(K * K, sizeof *h), *c = malloc(K * K * sizeof *c);
    float *zero = calloc(K * K, sizeof *zero), s[N], lut[256], mix[F][K];
    uint8_t *qg = malloc(K * N), *qn = malloc(K * N);
    uint64_t st = 11;
    for (int f = 0; f < F; f++)
        for (int i = 0; i < K; i++)
            mix[f][i] = (float)uni(&st);
    for (int r = 0; r < R; r++) {                 /* F factors plus a little noise */
        double z[F];
        for (int f = 0; f < F; f++)
            z[f] = uni(&st);
        for (int i = 0; i < K; i++) {
            double v = 0.5 + 0.05 * uni(&st);
            for (int f = 0; f < F; f++)
                v += z[f] * mix[f][i];
            x[r * K + i] = (float)v;
        }
    }
    for (int i = 0; i < K * N; i++)
        b[i] = (float)uni(&st);
    for (int j = 0; j < N; j++) {
        s[j] = 0;
        for (int i = 0; i < K; i++)
            s[j] = fmaxf(s[j], fabsf(b[i * N + j]));
        s[j] /= 7;
    }
    for (int v = 0; v < 256; v++)
        lut[v] = (float)(v - 128);
    assert_true(gptq_h_accumulate(h, x, R, K));
    gptq_h_mirror(h, K);
    for (int i = 0; i < K; i += 7)
        for (int j = 0; j < K; j += 5) {
            double d = 0;
            for (int r = 0; r < R; r++)
                d += (double)x[r * K + i] * x[r * K + j];
            assert_true(fabs(h[i * K + j] - d) <= 1e-4 * fabs(d) + 1e-3);
        }
    assert_false(gptq_coefficients(zero, K, 0, c));  /* no inputs: no feedback */
    assert_true(gptq_coefficients(h, K, 0, c));
    assert_true(gptq_round(b, K, N, s, c, round_int7, lut, qg));
    assert_true(gptq_round(b, K, N, s, zero, round_int7, lut, qn));
    for (int i = 0; i < K * N; i++)
        assert_int_equal(qn[i], round_int7(b[i] / s[i % N]));
    double eg = out_err(x, b, s, qg, lut, R, K, N), en = out_err(x, b, s, qn, lut, R, K, N);
    printf("||X(B - sQ)||: gptq %.4g, nearest %.4g\n", eg, en);
    assert_true(eg < 0.5 * en);
    free(x);
    free(b);
    free(h);
    free(c);
    free(zero);
    free(qg);
    free(qn);
}

/* The shrinkage of H (and |x|^4) of the first rows of x [., k]. */
static double shrink_of(const float *x, int64_t rows, int64_t k)
{
    float *h = calloc((size_t)(k * k), sizeof *h);
    double x4 = 0;
    assert_true(gptq_h_accumulate(h, x, rows, k));
    gptq_h_mirror(h, k);
    for (int64_t r = 0; r < rows; r++) {
        double n2 = 0;
        for (int64_t j = 0; j < k; j++)
            n2 += (double)x[r * k + j] * x[r * k + j];
        x4 += n2 * n2;
    }
    double a = gptq_shrinkage(h, k, rows, x4);
    free(h);
    return a;
}

/* Two factors over 64 components, 2000 rows: H is measured, little shrinkage; 40
 * rows of independent components: mostly noise, shrunk far towards I. */
static void test_shrinkage(void **state)
{
    (void)state;
    enum { R = 2000, K = 64 };
    float *x = malloc(R * K * sizeof *x);
    uint64_t st = 5;
    for (int r = 0; r < R; r++) {
        double z0 = uni(&st), z1 = uni(&st);
        for (int i = 0; i < K; i++)
            x[r * K + i] = (float)(z0 * (i % 3) + z1 * (i % 5) + 0.1 * uni(&st));
    }
    double lo = shrink_of(x, R, K);
    for (int i = 0; i < R * K; i++)
        x[i] = (float)uni(&st);
    double hi = shrink_of(x, 40, K);
    printf("shrinkage: correlated %.3f, independent few rows %.3f\n", lo, hi);
    assert_true(lo >= 0 && lo < 0.1);
    assert_true(hi > 0.5 && hi <= 1);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cholesky_known),
        cmocka_unit_test(test_shrinkage),
        cmocka_unit_test(test_gptq_beats_rounding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
