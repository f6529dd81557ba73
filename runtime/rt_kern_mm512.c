/* rt_kern_mm512.c: the F32 MATMUL tile kernel for hosts with AVX-512F (the blocked
 * kernel of rt_kern_mmt.h with 16-float vectors and a 12 x 32 micro-kernel: 24 zmm
 * accumulators).
 */
#include "rt_copy.h"
#include "rt_exec.h"

#if RT_HAVE_X86_KERNELS /* else an empty file */
#include <immintrin.h>
#include <string.h>

#define MMT_TARGET __attribute__((target("avx512f,fma")))
#define MMT_VL 16
#define MMT_V __m512
#define MMT_M __mmask16
#define MMT_MR 12
#define MMT_LANES(n) lanes16(n)
#define MMT_LOADM(m, p) _mm512_maskz_loadu_ps((m), (p))
#define MMT_STOREM(p, m, v) _mm512_mask_storeu_ps((p), (m), (v))
#define MMT_LOAD(p) _mm512_load_ps(p)
#define MMT_STORE(p, v) _mm512_store_ps((p), (v))
#define MMT_LOADU(p) _mm512_loadu_ps(p)
#define MMT_STOREU(p, v) _mm512_storeu_ps((p), (v))
#define MMT_SET1(f) _mm512_set1_ps(f)
#define MMT_ZERO() _mm512_setzero_ps()
#define MMT_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define MMT_VI __m512i
#define MMT_IDX(s) _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(s))
#define MMT_GATHERM(m, p, i) _mm512_mask_i32gather_ps(_mm512_setzero_ps(), (m), (i), (p), 4)
#define MMT_NAME(x) mm512_##x
/* Half vectors: 8-float ymm FMAs (AVX-512 hosts that split a zmm FMA in two, such as
 * AMD Zen 4, run twice as many); loads, masks and stores stay zmm ones (no AVX512VL). */
#define MMT_HALF 1
#define MMT_HV __m256
#define MMT_HLO(v) _mm512_castps512_ps256(v)
#define MMT_HUP(h) _mm512_castps256_ps512(h)
#define MMT_HFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))

/* Mask of the first n lanes (n clamped to 0..16). */
static inline __mmask16 lanes16(int64_t n) {
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* Lanes i < n (n clamped to 0..16) of p[2*i], reading no element past p[2*n - 2]. */
MMT_TARGET static inline __m512 load_s2_16(int64_t n, const float *p) {
    __m512 lo = _mm512_maskz_loadu_ps(lanes16(2 * n - 1), p);
    __m512 hi = _mm512_maskz_loadu_ps(lanes16(2 * n - 17), p + 16);
    return _mm512_permutex2var_ps(
        lo, _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), hi);
}

#define MMT_LOADS2(n, p) load_s2_16((n), (p))
#define MMT_PERM(v, i) _mm512_permutexvar_ps((i), (v))
#define MMT_MCOUNT(m) __builtin_popcount(m)
#define MMT_FEATURE RT_HOST_AVX512
#define MMT_EXPORT rt_mm_f32_512

#include "rt_kern_mmt.h"

#endif
