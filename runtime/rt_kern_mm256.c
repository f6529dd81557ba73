/* rt_kern_mm256.c: the F32 MATMUL tile kernel for hosts with AVX2 and FMA but not
 * AVX-512F (the blocked kernel of rt_kern_mmt.h with 8-float vectors and a 6 x 16
 * micro-kernel: 12 ymm accumulators).
 */
#include "rt_exec.h"

#if RT_HAVE_X86_KERNELS /* else an empty file */
#include <immintrin.h>

#define MMT_TARGET __attribute__((target("avx2,fma")))
#define MMT_VL 8
#define MMT_V __m256
#define MMT_M __m256i
#define MMT_MR 6
#define MMT_LANES(n) lanes8(n)
#define MMT_LOADM(m, p) _mm256_maskload_ps((p), (m))
#define MMT_STOREM(p, m, v) _mm256_maskstore_ps((p), (m), (v))
#define MMT_LOAD(p) _mm256_load_ps(p)
#define MMT_STORE(p, v) _mm256_store_ps((p), (v))
#define MMT_LOADU(p) _mm256_loadu_ps(p)
#define MMT_STOREU(p, v) _mm256_storeu_ps((p), (v))
#define MMT_SET1(f) _mm256_set1_ps(f)
#define MMT_ZERO() _mm256_setzero_ps()
#define MMT_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define MMT_NAME(x) mm256_##x

/* Mask of the first n lanes (n clamped to 0..8): lane i all ones when i < n. */
MMT_TARGET static inline __m256i lanes8(int64_t n) {
    int32_t k = n < 0 ? 0 : n > 8 ? 8 : (int32_t)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#define MMT_FEATURE RT_HOST_AVX2_FMA
#define MMT_EXPORT rt_mm_f32_256

#include "rt_kern_mmt.h"

#endif
