/* rt_kern_mmi8.c: the I8 -> I32 MATMUL tile kernel for x86-64 hosts with AVX-512BW
 * (with AVX-512 VNNI when the host has it) or AVX2.
 *
 * B is packed into int16 pairs of consecutive k, P[kp][j] = (B[2kp][j], B[2kp+1][j])
 * (0 past k), so that one multiply-add of 16-bit pairs (vpmaddwd, or vpdpwssd with
 * VNNI) adds a[2kp] * B[2kp][j] + a[2kp+1] * B[2kp+1][j] to C[i][j] for 16 (8)
 * columns at once. Products of int8 values and their pair sums are exact in int32 and
 * C wraps around as the ISA says, so the result is that of the portable loop, bit for
 * bit, in any order of the sums.
 */
#include <stdlib.h>
#include <string.h>

#include "rt_exec.h"

#if RT_HAVE_X86_KERNELS
#include <immintrin.h>

/* B (k x n int8 where s says) packed as int16 pairs of rows into P (ceil(k/2) x n x 2). */
static void pack_pairs(const SpyMatmul *mm, const RtMmSrc *s, int16_t *P)
{
    size_t n = mm->n;
    for (size_t kp = 0; kp < (mm->k + 1) / 2; kp++) {
        const int8_t *b0 = (const int8_t *)s->b + 2 * kp * s->ldb;
        const int8_t *b1 = 2 * kp + 1 < mm->k ? b0 + s->ldb : NULL;
        int16_t *p = P + kp * n * 2;
        for (size_t j = 0; j < n; j++) {
            p[2 * j] = b0[j];
            p[2 * j + 1] = b1 ? b1[j] : 0;
        }
    }
}

/* A's pair (a[2kp], a[2kp+1]) (0 past k) as one int32 of two int16. */
static inline int32_t a_pair(const int8_t *a, size_t kp, uint32_t k)
{
    uint16_t lo = (uint16_t)(int16_t)a[2 * kp];
    uint16_t hi = 2 * kp + 1 < k ? (uint16_t)(int16_t)a[2 * kp + 1] : 0;
    return (int32_t)((uint32_t)lo | (uint32_t)hi << 16);
}

#define I8_512(name, tgt, madd)                                                         \
    __attribute__((target(tgt))) static void name(RtCore *c, const SpyMatmul *mm,      \
                                                       const RtMmSrc *s, const int16_t *P) \
    {                                                                                      \
        size_t n = mm->n, kp2 = (mm->k + 1) / 2;                                           \
        for (size_t i = 0; i < mm->m; i++) {                                               \
            int32_t *C = (int32_t *)(c->lx + mm->c + i * mm->ldc * 4);                     \
            const int8_t *a = (const int8_t *)s->a + i * s->lda;                           \
            for (size_t j = 0; j < n; j += 16) {                                           \
                __mmask16 mk = n - j >= 16 ? (__mmask16)0xFFFF                             \
                                           : (__mmask16)((1u << (n - j)) - 1);             \
                __m512i acc = mm->flags & ISA_F_ACCUM ? _mm512_maskz_loadu_epi32(mk, C + j)\
                                                      : _mm512_setzero_si512();            \
                for (size_t kp = 0; kp < kp2; kp++) {                                      \
                    __m512i av = _mm512_set1_epi32(a_pair(a, kp, mm->k));                  \
                    __m512i bv = _mm512_maskz_loadu_epi32(mk, P + (kp * n + j) * 2);       \
                    acc = madd;                                                            \
                }                                                                          \
                _mm512_mask_storeu_epi32(C + j, mk, acc);                                  \
            }                                                                              \
        }                                                                                  \
    }

I8_512(mm_i8_vnni, "avx512f,avx512bw,avx512vnni", _mm512_dpwssd_epi32(acc, av, bv))
I8_512(mm_i8_512, "avx512f,avx512bw", _mm512_add_epi32(acc, _mm512_madd_epi16(av, bv)))

/* The AVX2 kernel: 8 columns a vector, the tail of n by the portable sum. */
__attribute__((target("avx2"))) static void mm_i8_256(RtCore *c, const SpyMatmul *mm,
                                                      const RtMmSrc *s, const int16_t *P)
{
    size_t n = mm->n, kp2 = (mm->k + 1) / 2;
    for (size_t i = 0; i < mm->m; i++) {
        int32_t *C = (int32_t *)(c->lx + mm->c + i * mm->ldc * 4);
        const int8_t *a = (const int8_t *)s->a + i * s->lda;
        size_t j = 0;
        for (; j + 8 <= n; j += 8) {
            __m256i acc = mm->flags & ISA_F_ACCUM ? _mm256_loadu_si256((const __m256i *)(C + j))
                                                  : _mm256_setzero_si256();
            for (size_t kp = 0; kp < kp2; kp++) {
                __m256i av = _mm256_set1_epi32(a_pair(a, kp, mm->k));
                __m256i bv = _mm256_loadu_si256((const __m256i *)(P + (kp * n + j) * 2));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(av, bv));
            }
            _mm256_storeu_si256((__m256i *)(C + j), acc);
        }
        for (; j < n; j++) {
            uint32_t sum = mm->flags & ISA_F_ACCUM ? (uint32_t)C[j] : 0;
            for (size_t kk = 0; kk < mm->k; kk++)
                sum += (uint32_t)(a[kk] * ((const int8_t *)s->b)[kk * s->ldb + j]);
            C[j] = (int32_t)sum;
        }
    }
}

bool rt_mm_i8_fast(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s)
{
    __builtin_cpu_init();
    bool b512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    bool vnni = b512 && __builtin_cpu_supports("avx512vnni");
    if ((!b512 && !__builtin_cpu_supports("avx2")) || s->bt || mm->k == 0)
        return false;
    int16_t *P = malloc(((size_t)mm->k + 1) / 2 * mm->n * 2 * sizeof *P + 64);
    if (!P)
        abort();                           /* the emulator has no error path for host OOM */
    pack_pairs(mm, s, P);
    if (vnni)
        mm_i8_vnni(c, mm, s, P);
    else if (b512)
        mm_i8_512(c, mm, s, P);
    else
        mm_i8_256(c, mm, s, P);
    free(P);
    return true;
}
#endif
