/* rt_kern_mm512.c: the F32 MATMUL tile kernel for hosts with AVX-512F.
 *
 * C is computed in register blocks of R rows x 16*NW columns (R*NW <= 24 zmm
 * accumulators) held across the whole k loop: 8 x 48 for the bulk, R = m % 8 for
 * the last rows, R <= 4 x 64 when m < 5 (depthwise convolutions, vector-matrix
 * products). Columns past n are masked off, so there is no separate tail code.
 * Every C element sums its products in increasing k starting from 0 (or the old C
 * with ACCUM) with a separate multiply and add, exactly as the portable kernel in
 * rt_kern_matmul.c, so the result is bit for bit the same on every host.
 */
#include "rt_exec.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <stdatomic.h>

#define MM512 __attribute__((target("avx512f")))
#define MM512_BLOCK __attribute__((target("avx512f"), always_inline)) static inline

typedef struct {
    const rt_f32 *a;         /* element (0,0) of A (may be unaligned) */
    const float *b;          /* element (0,0) of B */
    float *c;
    size_t lda, ldb, ldc;    /* row strides in elements */
    uint32_t k;
    bool zero;               /* start from 0 instead of the old C */
} Mm512;

/* Mask of the first n (0..16) lanes. */
static inline __mmask16 lanes(int64_t n) {
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* C[i0..i0+R, j0..j0+16*NW) over all k; msk[v] selects the valid columns of vector v. */
MM512_BLOCK void block(const Mm512 *x, size_t i0, size_t j0, const int R, const int NW,
                       const __mmask16 *msk) {
    __m512 acc[8][4];
    float *c = x->c + i0 * x->ldc + j0;
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NW; v++)
            acc[r][v] = x->zero ? _mm512_setzero_ps()
                                : _mm512_maskz_loadu_ps(msk[v], c + r * x->ldc + 16 * v);
    const rt_f32 *a = x->a + i0 * x->lda;
    const float *b = x->b + j0;
    for (uint32_t k = 0; k < x->k; k++, b += x->ldb) {
        __m512 bv[4];
#pragma GCC unroll 4
        for (int v = 0; v < NW; v++)
            bv[v] = _mm512_maskz_loadu_ps(msk[v], b + 16 * v);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            __m512 av = _mm512_set1_ps(a[r * x->lda + k]);
#pragma GCC unroll 4
            for (int v = 0; v < NW; v++)
                acc[r][v] = _mm512_add_ps(acc[r][v], _mm512_mul_ps(av, bv[v]));
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NW; v++)
            _mm512_mask_storeu_ps(c + r * x->ldc + 16 * v, msk[v], acc[r][v]);
}

/* One function per (rows, vectors) shape, so each block keeps its accumulators in
 * registers. */
#define MM512_SHAPE(R, NW)                                                             \
    MM512 static void block_##R##x##NW(const Mm512 *x, size_t i0, size_t j0,          \
                                       const __mmask16 *msk) {                        \
        block(x, i0, j0, R, NW, msk);                                                 \
    }
MM512_SHAPE(1, 3)
MM512_SHAPE(2, 3)
MM512_SHAPE(3, 3)
MM512_SHAPE(4, 3)
MM512_SHAPE(5, 3)
MM512_SHAPE(6, 3)
MM512_SHAPE(7, 3)
MM512_SHAPE(8, 3)
MM512_SHAPE(1, 4)
MM512_SHAPE(2, 4)
MM512_SHAPE(3, 4)
MM512_SHAPE(4, 4)

typedef void (*BlockFn)(const Mm512 *, size_t, size_t, const __mmask16 *);
static const BlockFn blocks3[9] = {NULL,      block_1x3, block_2x3, block_3x3, block_4x3,
                                   block_5x3, block_6x3, block_7x3, block_8x3};
static const BlockFn blocks4[5] = {NULL, block_1x4, block_2x4, block_3x4, block_4x4};

/* All rows of the column block [j0, j0 + 16*nw) (nw vectors, masked at n). */
static void column_block(const Mm512 *x, uint32_t m, uint32_t n, size_t j0, int nw) {
    __mmask16 msk[4];
    for (int v = 0; v < 4; v++)
        msk[v] = v < nw ? lanes((int64_t)n - (int64_t)j0 - 16 * v) : 0;
    if (nw == 4) {
        blocks4[m](x, 0, j0, msk);
        return;
    }
    uint32_t i0 = 0;
    for (; i0 + 8 <= m; i0 += 8)
        block_8x3(x, i0, j0, msk);
    if (i0 < m)
        blocks3[m - i0](x, i0, j0, msk);
}

/* Whether this host runs the AVX-512F kernel (checked once; threads that race here
 * all store the same value). */
static bool have_avx512(void) {
    static atomic_int have = -1;
    int h = atomic_load_explicit(&have, memory_order_relaxed);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("avx512f") ? 1 : 0;
        atomic_store_explicit(&have, h, memory_order_relaxed);
    }
    return h == 1;
}

/* Runs a verified F32 MATMUL with AVX-512F; false (nothing done) without it. */
bool rt_mm_f32_512(RtCore *c, const SpyMatmul *mm) {
    if (!have_avx512())
        return false;
    Mm512 x = {(const rt_f32 *)(c->lx + mm->a), (const float *)(c->lx + mm->b),
               (float *)(c->lx + mm->c), mm->lda, mm->ldb, mm->ldc, mm->k,
               !(mm->flags & ISA_F_ACCUM)};
    int nw = mm->m <= 4 ? 4 : 3;
    for (size_t j0 = 0; j0 < mm->n; j0 += 16 * (size_t)nw)
        column_block(&x, mm->m, mm->n, j0, nw);
    return true;
}

#else

/* Runs a verified F32 MATMUL with AVX-512F: not built for this host. */
bool rt_mm_f32_512(RtCore *c, const SpyMatmul *mm) {
    (void)c, (void)mm;
    return false;
}

#endif
