/* rt_kern_matmul.c: the ISA_MATMUL tile kernel (PT array), F32 and I8 -> I32.
 *
 * F32: C is computed in register tiles of 4 rows x 16 columns (8 vectors of 8
 * floats, GCC vector extensions) held across the whole k loop; leftover rows use a
 * 1 x 16 tile and leftover columns a scalar loop. Every C element sums its products
 * in increasing k starting from 0 (or the old C with ACCUM), with separate multiply
 * and add, so the result equals the naive triple loop bit for bit, whatever the
 * tiling or the host thread. The whole working set is one LX (<= a few MiB), so no
 * further cache blocking is needed.
 */
#include <string.h>

#include "rt_exec.h"

typedef float v8f __attribute__((vector_size(32)));

/* Unaligned load / store of 8 floats (macros: a function returning a 32-byte vector
 * would change the ABI between the AVX2 and the default clones). */
#define LD8(v, p) memcpy(&(v), (p), sizeof(v8f))
#define ST8(p, v) memcpy((p), &(v), sizeof(v8f))

static inline float ld1(const uint8_t *p) {
    float f;
    memcpy(&f, p, 4);
    return f;
}

typedef struct {
    uint8_t *a, *b, *c;      /* LX addresses of A, B, C */
    size_t lda, ldb, ldc;    /* row strides in bytes */
    uint32_t k;
    bool zero;               /* start from 0 instead of the old C */
} MmArgs;

/* C[i0..i0+4, j0..j0+16) over all k. */
RT_HOT static void tile_4x16(const MmArgs *x, uint32_t i0, uint32_t j0) {
    uint8_t *c = x->c + i0 * x->ldc + (size_t)j0 * 4;
    v8f z = {0};
    v8f c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
    if (!x->zero) {
        LD8(c00, c), LD8(c01, c + 32);
        LD8(c10, c + x->ldc), LD8(c11, c + x->ldc + 32);
        LD8(c20, c + 2 * x->ldc), LD8(c21, c + 2 * x->ldc + 32);
        LD8(c30, c + 3 * x->ldc), LD8(c31, c + 3 * x->ldc + 32);
    }
    const uint8_t *a = x->a + i0 * x->lda, *b = x->b + (size_t)j0 * 4;
    for (uint32_t k = 0; k < x->k; k++, b += x->ldb) {
        v8f b0, b1;
        LD8(b0, b), LD8(b1, b + 32);
        float a0 = ld1(a + 4 * (size_t)k), a1 = ld1(a + x->lda + 4 * (size_t)k);
        float a2 = ld1(a + 2 * x->lda + 4 * (size_t)k), a3 = ld1(a + 3 * x->lda + 4 * (size_t)k);
        c00 += a0 * b0, c01 += a0 * b1;
        c10 += a1 * b0, c11 += a1 * b1;
        c20 += a2 * b0, c21 += a2 * b1;
        c30 += a3 * b0, c31 += a3 * b1;
    }
    ST8(c, c00), ST8(c + 32, c01);
    ST8(c + x->ldc, c10), ST8(c + x->ldc + 32, c11);
    ST8(c + 2 * x->ldc, c20), ST8(c + 2 * x->ldc + 32, c21);
    ST8(c + 3 * x->ldc, c30), ST8(c + 3 * x->ldc + 32, c31);
}

/* C[i, j0..j0+16) over all k. */
RT_HOT static void tile_1x16(const MmArgs *x, uint32_t i, uint32_t j0) {
    uint8_t *c = x->c + i * x->ldc + (size_t)j0 * 4;
    v8f c0 = {0}, c1 = {0};
    if (!x->zero)
        LD8(c0, c), LD8(c1, c + 32);
    const uint8_t *a = x->a + i * x->lda, *b = x->b + (size_t)j0 * 4;
    for (uint32_t k = 0; k < x->k; k++, b += x->ldb) {
        float a0 = ld1(a + 4 * (size_t)k);
        v8f b0, b1;
        LD8(b0, b), LD8(b1, b + 32);
        c0 += a0 * b0, c1 += a0 * b1;
    }
    ST8(c, c0), ST8(c + 32, c1);
}

#define MM_KC 512            /* k rows of the zero-padded B panel of a column tail */

/* Rows [i0, i0+rows) (rows <= 4) of a column tail: C[., j0..j0+nt) over k in
 * [k0, k0+kc), B taken from the zero-padded panel bp (kc x 16). C holds the running
 * sums between k blocks (storing and reloading a float is exact). */
RT_HOT static void tile_tail(const MmArgs *x, uint32_t i0, int rows, uint32_t j0, int nt,
                             const float *bp, uint32_t k0, uint32_t kc, bool zero) {
    float ct[4][16];
    memset(ct, 0, sizeof ct);
    for (int r = 0; r < rows && !zero; r++)
        memcpy(ct[r], x->c + (i0 + r) * x->ldc + (size_t)j0 * 4, (size_t)nt * 4);
    v8f c[4][2];
    for (int r = 0; r < 4; r++)
        LD8(c[r][0], ct[r]), LD8(c[r][1], ct[r] + 8);
    const uint8_t *a[4]; /* rows past the block repeat its last row; never stored */
    for (int r = 0; r < 4; r++)
        a[r] = x->a + (i0 + (uint32_t)(r < rows ? r : rows - 1)) * x->lda + 4 * (size_t)k0;
    for (uint32_t k = 0; k < kc; k++) {
        v8f b0, b1;
        LD8(b0, bp + 16 * k), LD8(b1, bp + 16 * k + 8);
        for (int r = 0; r < 4; r++) {
            float ar = ld1(a[r] + 4 * (size_t)k);
            c[r][0] += ar * b0, c[r][1] += ar * b1;
        }
    }
    for (int r = 0; r < rows; r++) {
        ST8(ct[r], c[r][0]), ST8(ct[r] + 8, c[r][1]);
        memcpy(x->c + (i0 + r) * x->ldc + (size_t)j0 * 4, ct[r], (size_t)nt * 4);
    }
}

/* Like tile_tail for a tail of at most 8 columns: rows <= 8, one vector per row. */
RT_HOT static void tile_tail8(const MmArgs *x, uint32_t i0, int rows, uint32_t j0, int nt,
                              const float *bp, uint32_t k0, uint32_t kc, bool zero) {
    float ct[8][8];
    memset(ct, 0, sizeof ct);
    for (int r = 0; r < rows && !zero; r++)
        memcpy(ct[r], x->c + (i0 + r) * x->ldc + (size_t)j0 * 4, (size_t)nt * 4);
    v8f c[8];
    for (int r = 0; r < 8; r++)
        LD8(c[r], ct[r]);
    const uint8_t *a[8]; /* rows past the block repeat its last row; never stored */
    for (int r = 0; r < 8; r++)
        a[r] = x->a + (i0 + (uint32_t)(r < rows ? r : rows - 1)) * x->lda + 4 * (size_t)k0;
    for (uint32_t k = 0; k < kc; k++) {
        v8f b0;
        LD8(b0, bp + 16 * k);
        for (int r = 0; r < 8; r++)
            c[r] += ld1(a[r] + 4 * (size_t)k) * b0;
    }
    for (int r = 0; r < rows; r++) {
        ST8(ct[r], c[r]);
        memcpy(x->c + (i0 + r) * x->ldc + (size_t)j0 * 4, ct[r], (size_t)nt * 4);
    }
}

/* The last n % 16 columns of C, through zero-padded B panels of MM_KC rows. */
static void column_tail(const MmArgs *x, uint32_t m, uint32_t j0, int nt) {
    float bp[MM_KC * 16];
    for (uint32_t k0 = 0; k0 < x->k || k0 == 0; k0 += MM_KC) {
        uint32_t kc = x->k - k0 < MM_KC ? x->k - k0 : MM_KC;
        memset(bp, 0, sizeof(float) * 16 * kc);
        for (uint32_t k = 0; k < kc; k++)
            memcpy(bp + 16 * k, x->b + (k0 + k) * x->ldb + (size_t)j0 * 4, (size_t)nt * 4);
        bool zero = x->zero && k0 == 0;
        if (nt <= 8)
            for (uint32_t i0 = 0; i0 < m; i0 += 8)
                tile_tail8(x, i0, m - i0 < 8 ? (int)(m - i0) : 8, j0, nt, bp, k0, kc, zero);
        else
            for (uint32_t i0 = 0; i0 < m; i0 += 4)
                tile_tail(x, i0, m - i0 < 4 ? (int)(m - i0) : 4, j0, nt, bp, k0, kc, zero);
        if (x->k == 0)
            break;
    }
}

/* F32 MATMUL over register tiles. */
static void mm_f32(RtCore *c, const SpyMatmul *mm) {
    MmArgs x = {c->lx + mm->a, c->lx + mm->b, c->lx + mm->c, (size_t)mm->lda * 4,
                (size_t)mm->ldb * 4, (size_t)mm->ldc * 4, mm->k, !(mm->flags & ISA_F_ACCUM)};
    uint32_t n16 = mm->n & ~15u, m4 = mm->m & ~3u;
    for (uint32_t j0 = 0; j0 < n16; j0 += 16) {
        for (uint32_t i0 = 0; i0 < m4; i0 += 4)
            tile_4x16(&x, i0, j0);
        for (uint32_t i = m4; i < mm->m; i++)
            tile_1x16(&x, i, j0);
    }
    if (n16 < mm->n)
        column_tail(&x, mm->m, n16, (int)(mm->n - n16));
}

/* I8 x I8 -> I32 MATMUL with wrap-around accumulation (rows of C += a_ik * B row). */
static void mm_i8(RtCore *c, const SpyMatmul *mm) {
    const int8_t *A = (const int8_t *)(c->lx + mm->a);
    const int8_t *B = (const int8_t *)(c->lx + mm->b);
    for (uint32_t i = 0; i < mm->m; i++) {
        rt_i32 *C = (rt_i32 *)(c->lx + mm->c) + (size_t)i * mm->ldc;
        if (!(mm->flags & ISA_F_ACCUM))
            for (uint32_t j = 0; j < mm->n; j++)
                C[j] = 0;
        for (uint32_t k = 0; k < mm->k; k++) {
            int32_t a = A[(size_t)i * mm->lda + k];
            const int8_t *b = B + (size_t)k * mm->ldb;
            for (uint32_t j = 0; j < mm->n; j++)
                C[j] = (int32_t)((uint32_t)C[j] + (uint32_t)(a * b[j]));
        }
    }
}

/* Executes a verified MATMUL. */
void rt_matmul(RtCore *c, const SpyMatmul *mm) {
    if (mm->m == 0 || mm->n == 0)
        return;
    if (mm->dtype != ISA_DT_F32)
        mm_i8(c, mm);
    else if (!rt_mm_f32_512(c, mm))
        mm_f32(c, mm);
}
