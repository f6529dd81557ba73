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

/* The 16 x 16 floats of r[0..16) transposed in place (lane j of r[i] to lane i of r[j]):
 * pairs of rows interleaved by 32 and 64 bits within 128-bit lanes, then 128-bit
 * lanes exchanged twice; 64 shuffles. */
MMT_TARGET __attribute__((always_inline)) static inline void transpose16(__m512 r[16]) {
    __m512 t[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; i += 4)    /* r[i + c], lane L: column 4L + c of rows i..i+3 */
#pragma GCC unroll 16
        for (int h = 0; h < 2; h++) {
            __m512d lo = _mm512_castps_pd(t[i + h]), hi = _mm512_castps_pd(t[i + h + 2]);
            r[i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, hi));
            r[i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, hi));
        }
#pragma GCC unroll 16
    for (int g = 0; g < 16; g += 8)
#pragma GCC unroll 16
        for (int c = 0; c < 4; c++) {
            t[g + c] = _mm512_shuffle_f32x4(r[g + c], r[g + c + 4], 0x88);
            t[g + c + 4] = _mm512_shuffle_f32x4(r[g + c], r[g + c + 4], 0xdd);
        }
#pragma GCC unroll 16
    for (int c = 0; c < 8; c++) {
        r[c] = _mm512_shuffle_f32x4(t[c], t[c + 8], 0x88);
        r[c + 8] = _mm512_shuffle_f32x4(t[c], t[c + 8], 0xdd);
    }
}

#define MMT_LOADS2(n, p) load_s2_16((n), (p))
#define MMT_TRANSPOSE(v) transpose16(v)
#define MMT_PERM(v, i) _mm512_permutexvar_ps((i), (v))
#define MMT_MCOUNT(m) __builtin_popcount(m)
#define MMT_FEATURE RT_HOST_AVX512
#define MMT_EXPORT rt_mm_f32_512
#define MMT_PACKS rt_mm_f32_512_packs

#include "rt_kern_mmt.h"

#endif
