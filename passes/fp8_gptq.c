/* fp8_gptq.c: error-compensating (GPTQ) rounding of a weight matrix to a narrow format.
 *
 * A product y = x B (B [K, N], x a row of the inputs X) whose weight is rounded to
 * s Q (per-column scale s, codes Q) is off by X (B - s Q). Rounding each weight to
 * nearest ignores that the inputs' components are correlated; GPTQ (Frantar et al.,
 * "GPTQ: Accurate Post-Training Quantization for Generative Pre-trained Transformers",
 * 2023) rounds the rows k = 0..K-1 of B in turn and moves the rows not yet rounded so
 * that the error so far is compensated, which makes tr((B - sQ)^T H (B - sQ)) small
 * for H = X^T X, the inputs' second moments over a calibration set.
 *
 * GPTQ proper takes the upper Cholesky factor of H^-1. The same rounding follows from
 * one Cholesky factorisation of H without the inverse (Chen et al., "The Geometry of
 * LLM Quantization: GPTQ as Babai's Nearest Plane Algorithm", 2025): with H = M^T M,
 * M lower triangular (the Cholesky factor of H with its index order reversed), the
 * error of column n is |M e|^2, e = b - s q, and component i of M e only depends on
 * rows 0..i, so rounding row i to its target
 *
 *   t_i = b_i + sum_{j<i} c[i][j] e_j,   c[i][j] = M[i][j] / M[i][i]
 *
 * leaves M[i][i] (t_i - s q_i) in component i: one rounding error per row, as GPTQ's
 * update does. H is dampened first (1% of its mean diagonal on the diagonal), as in
 * GPTQ, which also covers inputs that are always zero. A calibration set of few rows
 * (tokens) against K measures H poorly, and GPTQ then fits the calibration inputs
 * rather than the model's (llama_tiny, 64 rows for K = 128: rel-L2 0.057 where the
 * bias correction alone gave 0.048); H is shrunk towards a multiple of I first, by
 * the Ledoit-Wolf estimate of how much of it is sampling noise (gptq_shrinkage; with
 * H = I the rounding is to nearest).
 *
 * Cost for K = 3072: the factorisation K^3/6 multiply-adds (blocked, right-looking,
 * the trailing update as row axpys that the compiler vectorises) and the rounding
 * K^2 N / 2 (blocked in 128 rows: the errors of earlier blocks are pulled into a block
 * column chunk by column chunk, so that the block stays in cache).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fp8_gptq.h"

enum { GPTQ_BLOCK = 128, GPTQ_CHUNK = 512, CHOL_BLOCK = 64 };

bool gptq_h_accumulate(float *h, const float *x, int64_t rows, int64_t k)
{
    /* 4x4 register blocks of x^T x over the rows; x is read in column quads,
     * transposed first so that a quad's rows are contiguous */
    int64_t nq = (k + 3) / 4;
    float *xt = calloc((size_t)(nq * rows * 4 + 1), sizeof *xt);
    if (!xt)
        return false;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < k; j++)
            xt[((j / 4) * rows + r) * 4 + j % 4] = x[r * k + j];
    for (int64_t bi = 0; bi < nq; bi++)
        for (int64_t bj = bi; bj < nq; bj++) {
            const float *xi = xt + bi * rows * 4, *xj = xt + bj * rows * 4;
            float acc[4][4] = {{0}};
            for (int64_t r = 0; r < rows; r++)
                for (int a = 0; a < 4; a++)
                    for (int b = 0; b < 4; b++)
                        acc[a][b] += xi[r * 4 + a] * xj[r * 4 + b];
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 4; b++) {
                    int64_t i = bi * 4 + a, j = bj * 4 + b;
                    if (i < k && j < k && j >= i)
                        h[i * k + j] += acc[a][b];
                }
        }
    free(xt);
    return true;
}

void gptq_h_mirror(float *h, int64_t k)
{
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < i; j++)
            h[i * k + j] = h[j * k + i];
}

/* Unblocked Cholesky of the diagonal block a[b0..b1) (lower triangle, row stride k),
 * its columns < b0 already subtracted; false when not positive definite. */
static bool chol_diag(double *a, int64_t k, int64_t b0, int64_t b1)
{
    for (int64_t i = b0; i < b1; i++) {
        double *ai = a + i * k;
        for (int64_t j = b0; j <= i; j++) {
            const double *aj = a + j * k;
            double s = ai[j];
            for (int64_t p = b0; p < j; p++)
                s -= ai[p] * aj[p];
            if (j < i)
                ai[j] = s / aj[j];
            else if (s > 0 && isfinite(s))
                ai[i] = sqrt(s);
            else
                return false;
        }
    }
    return true;
}

/* Row ai's part j in [b1, i] of the trailing update: minus the panel columns p..p+3
 * of row i times the same of row j (pt: the panel transposed), four at once so that
 * the row is loaded and stored once per four multiply-adds. */
static void chol_update(double *restrict ai, const double *restrict pt, int64_t k, int64_t i,
                        int64_t b1, int64_t p)
{
    const double *r0 = pt + p * k, *r1 = r0 + k, *r2 = r1 + k, *r3 = r2 + k;
    double l0 = r0[i], l1 = r1[i], l2 = r2[i], l3 = r3[i];
    for (int64_t j = b1; j <= i; j++)
        ai[j] -= l0 * r0[j] + l1 * r1[j] + l2 * r2[j] + l3 * r3[j];
}

bool gptq_cholesky(double *a, int64_t k)
{
    double *pt = malloc((size_t)(CHOL_BLOCK * k + 1) * sizeof *pt);
    bool ok = pt != NULL;
    for (int64_t b0 = 0; ok && b0 < k; b0 += CHOL_BLOCK) {
        int64_t b1 = b0 + CHOL_BLOCK < k ? b0 + CHOL_BLOCK : k, w = b1 - b0;
        if (!(ok = chol_diag(a, k, b0, b1)))
            break;
        /* panel: rows below the block solve L21 L11^T = A21, kept transposed in pt */
        for (int64_t i = b1; i < k; i++) {
            double *ai = a + i * k;
            for (int64_t j = b0; j < b1; j++) {
                const double *aj = a + j * k;
                double s = ai[j];
                for (int64_t p = b0; p < j; p++)
                    s -= ai[p] * aj[p];
                ai[j] = s / aj[j];
                pt[(j - b0) * k + i] = ai[j];
            }
        }
        /* trailing update A22 -= L21 L21^T (lower triangle), one row at a time; only
         * a block short of CHOL_BLOCK (a multiple of 4) has no rows below it */
        for (int64_t i = b1; i < k; i++)
            for (int64_t p = 0; p < w; p += 4)
                chol_update(a + i * k, pt, k, i, b1, p);
    }
    free(pt);
    return ok;
}

double gptq_shrinkage(const float *h, int64_t k, int64_t rows, double x4)
{
    double n = (double)rows, tr = 0, ss = 0;
    for (int64_t i = 0; i < k; i++)
        tr += h[i * k + i];
    for (int64_t i = 0; i < k * k; i++)
        ss += (double)h[i] * h[i];
    if (!(rows > 1 && tr > 0))
        return 1;
    /* S = H / n: mu = tr(S) / k, delta^2 = |S - mu I|^2, beta^2 = (x4 / n - |S|^2) / n */
    double mu = tr / n / (double)k, s2 = ss / (n * n), d2 = s2 - mu * mu * (double)k;
    double b2 = (x4 / n - s2) / n;
    if (!(d2 > 0))
        return 1;
    b2 = b2 < 0 ? 0 : b2 > d2 ? d2 : b2;
    return b2 / d2;
}

bool gptq_coefficients(const float *h, int64_t k, double shrink, float *c)
{
    double *a = malloc((size_t)(k * k + 1) * sizeof *a), tr = 0;
    if (!a)
        return false;
    for (int64_t i = 0; i < k; i++)
        tr += h[i * k + i];
    double damp = 0.01 * tr / (double)k, keep = 1 - shrink, diag = shrink * tr / (double)k + damp;
    /* reversed index order: a = J H J, so that M = J L^T J is lower triangular */
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j <= i; j++)
            a[i * k + j] = keep * h[(k - 1 - i) * k + (k - 1 - j)] + (i == j ? diag : 0);
    bool ok = damp > 0 && isfinite(damp) && gptq_cholesky(a, k);
    /* M[i][j] = L[k-1-j][k-1-i] */
    for (int64_t i = 0; ok && i < k; i++) {
        double mii = a[(k - 1 - i) * k + (k - 1 - i)];
        for (int64_t j = 0; j < i; j++)
            c[i * k + j] = (float)(a[(k - 1 - j) * k + (k - 1 - i)] / mii);
        for (int64_t j = i; j < k; j++)
            c[i * k + j] = 0;
    }
    free(a);
    return ok;
}

/* Round row i of targets t into q, its errors against w into e (n columns). */
static void round_row(const float *w, float *t, float *e, uint8_t *q, int64_t i, int64_t n,
                      const float *s, GptqRoundFn rnd, const float lut[256])
{
    for (int64_t j = 0; j < n; j++) {
        uint8_t v = rnd(t[i * n + j] / s[j]);
        q[i * n + j] = v;
        e[i * n + j] = w[i * n + j] - s[j] * lut[v];
    }
}

/* Row ti's columns [n0, n1) plus the errors of rows j..j+3 (ej: row j of the errors,
 * n columns each) with weights cj[0..3], four rows at once. */
static void pull4(float *restrict ti, const float *restrict ej, const float *cj, int64_t n,
                  int64_t n0, int64_t n1)
{
    float c0 = cj[0], c1 = cj[1], c2 = cj[2], c3 = cj[3];
    const float *e0 = ej, *e1 = e0 + n, *e2 = e1 + n, *e3 = e2 + n;
    for (int64_t col = n0; col < n1; col++)
        ti[col] += c0 * e0[col] + c1 * e1[col] + c2 * e2[col] + c3 * e3[col];
}

bool gptq_round(const float *w, int64_t k, int64_t n, const float *s, const float *c,
                GptqRoundFn rnd, const float lut[256], uint8_t *q)
{
    float *t = malloc((size_t)(k * n + 1) * sizeof *t), *e = malloc((size_t)(k * n + 1) * sizeof *e);
    bool ok = t && e;
    if (ok)
        memcpy(t, w, (size_t)(k * n) * sizeof *t);
    for (int64_t b0 = 0; ok && b0 < k; b0 += GPTQ_BLOCK) {
        int64_t b1 = b0 + GPTQ_BLOCK < k ? b0 + GPTQ_BLOCK : k;
        /* the errors of the rows before the block, chunk of columns by chunk */
        for (int64_t n0 = 0; n0 < n; n0 += GPTQ_CHUNK) {
            int64_t n1 = n0 + GPTQ_CHUNK < n ? n0 + GPTQ_CHUNK : n;
            for (int64_t j = 0; j < b0; j += 4)    /* b0: a multiple of 4 */
                for (int64_t i = b0; i < b1; i++)
                    pull4(t + i * n, e + j * n, c + i * k + j, n, n0, n1);
        }
        /* within the block, row by row */
        for (int64_t i = b0; i < b1; i++) {
            round_row(w, t, e, q, i, n, s, rnd, lut);
            for (int64_t i2 = i + 1; i2 < b1; i2++) {
                float cij = c[i2 * k + i];
                float *ti = t + i2 * n;
                const float *ei = e + i * n;
                for (int64_t col = 0; col < n; col++)
                    ti[col] += cij * ei[col];
            }
        }
    }
    free(t);
    free(e);
    return ok;
}
