/* fp8_gptq.h: error-compensating (GPTQ) rounding of a weight matrix, for the fp8 pass
 * (passes/fp8.c) with --calibrate. See fp8_gptq.c. */
#ifndef SPYREC_FP8_GPTQ_H
#define SPYREC_FP8_GPTQ_H

#include <stdbool.h>
#include <stdint.h>

/* Rounds x (already divided by its column's scale) to a code of the narrow format. */
typedef uint8_t (*GptqRoundFn)(float x);

/* The input second moments H += X^T X of the rows x [rows, k] (float32, row-major),
 * H [k, k] row-major; only the upper triangle (j >= i) is added to, gptq_h_mirror
 * completes the lower one once all rows are in. False when out of memory. */
bool gptq_h_accumulate(float *h, const float *x, int64_t rows, int64_t k);
/* Copy H's upper triangle into its lower one. */
void gptq_h_mirror(float *h, int64_t k);

/* Lower Cholesky factor L of the symmetric positive definite a [k, k] (row-major,
 * double; only its lower triangle is read), a = L L^T, written over a's lower
 * triangle (the upper one is left as it was). False when a is not positive definite. */
bool gptq_cholesky(double *a, int64_t k);

/* The coefficients of GPTQ's error feedback for H [k, k], shrunk towards its mean
 * diagonal times I by the fraction shrink (gptq_shrinkage) and damped by 1% of its
 * mean diagonal: c [k, k] row-major, c[i][j] (j < i) the weight of row j's rounding
 * error in row i's target. False (c untouched) when H is zero or not positive
 * definite. */
bool gptq_coefficients(const float *h, int64_t k, double shrink, float *c);

/* The Ledoit-Wolf shrinkage (Ledoit and Wolf, "A well-conditioned estimator for large-
 * dimensional covariance matrices", 2004) of the second moments H [k, k] of rows
 * rows, x4 the sum over the rows of |x|^4: the fraction in [0, 1] of H to replace by
 * its mean diagonal times I, large when the rows are too few to measure H (then GPTQ
 * would fit the calibration set rather than the inputs; with H = I it rounds to
 * nearest). */
double gptq_shrinkage(const float *h, int64_t k, int64_t rows, double x4);

/* Round w [k, n] (row-major, float32; k the input dimension) column-scaled by s [n]
 * with error feedback c (gptq_coefficients): row i is rounded after its target was
 * moved by the rounding errors of rows 0..i-1, so that ||X (w - s q)|| is small for
 * the inputs X that H came from. q [k, n] gets the codes (rnd), lut the codes'
 * values. False when out of memory (q untouched). */
bool gptq_round(const float *w, int64_t k, int64_t n, const float *s, const float *c,
                GptqRoundFn rnd, const float lut[256], uint8_t *q);

#endif
