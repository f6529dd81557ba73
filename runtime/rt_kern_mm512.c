/* rt_kern_mm512.c: the F32 MATMUL tile kernel for hosts with AVX-512F (the blocked
 * kernel of rt_kern_mmt.h with 16-float vectors and a 12 x 32 micro-kernel: 24 zmm
 * accumulators).
 */
#include "rt_exec.h"

#if RT_HAVE_X86_KERNELS /* else an empty file */
#include <immintrin.h>

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
#define MMT_NAME(x) mm512_##x

/* Mask of the first n lanes (n clamped to 0..16). */
static inline __mmask16 lanes16(int64_t n) {
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

#define MMT_FEATURE RT_HOST_AVX512
#define MMT_EXPORT rt_mm_f32_512

#include "rt_kern_mmt.h"

#endif
