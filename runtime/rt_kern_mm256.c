/* rt_kern_mm256.c: the F32 MATMUL tile kernel for hosts with AVX2 and FMA but not
 * AVX-512F (the blocked kernel of rt_kern_mmt.h with 8-float vectors and a 6 x 16
 * micro-kernel: 12 ymm accumulators).
 */
#include "rt_copy.h"
#include "rt_exec.h"

#if RT_HAVE_X86_KERNELS /* else an empty file */
#include <immintrin.h>
#include <string.h>

#define MMT_TARGET __attribute__((target("avx2,fma")))
#define MMT_VL 8
#define MMT_V __m256
#define MMT_M __m256i
#define MMT_MR 6
#define MMT_LANES(n) lanes8(n)
#define MMT_LOADM(m, p) _mm256_maskload_ps((const float *)(const void *)(p), (m))
#define MMT_STOREM(p, m, v) store8m((p), (m), (v))
#define MMT_LOAD(p) _mm256_load_ps(p)
#define MMT_STORE(p, v) _mm256_store_ps((p), (v))
#define MMT_LOADU(p) _mm256_loadu_ps((const float *)(const void *)(p))
#define MMT_STOREU(p, v) _mm256_storeu_ps((p), (v))
#define MMT_SET1(f) _mm256_set1_ps(f)
#define MMT_ZERO() _mm256_setzero_ps()
#define MMT_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define MMT_VI __m256i
#define MMT_IDX(s) _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(s))
#define MMT_GATHERM(m, p, i) _mm256_mask_i32gather_ps(_mm256_setzero_ps(), (p), (i), _mm256_castsi256_ps(m), 4)
#define MMT_NAME(x) mm256_##x
#define MMT_HALF 0 /* no half vectors: a 4-float FMA costs as much as an 8-float one */
#define MMT_HV __m256
#define MMT_HLO(v) (v)
#define MMT_HUP(h) (h)
#define MMT_HFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))

/* Mask of the first n lanes (n clamped to 0..8): lane i all ones when i < n. */
MMT_TARGET static inline __m256i lanes8(int64_t n) {
    int32_t k = n < 0 ? 0 : n > 8 ? 8 : (int32_t)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Stores the lanes of v that mask m selects to p, writing no other float: a plain store
 * when m selects all of them; the first n lanes (the masks of lanes8) as 4, 2 and 1
 * floats; any other mask through VMASKMOVPS. Never a read of the other lanes and a
 * write back: p may be DRAM that another host thread writes beside it (a product's C
 * stored straight to DRAM, rt_prep.c RT_PH_EPI, by blocks of columns over the cores:
 * rows of 196 or 49 pixels end inside a vector), and a write back of floats read
 * before that thread's store undoes it (resnet50 gave wrong logits about one run in
 * 25 on AMD Zen 3). A masked store costs about 13 cycles on Zen 3 against one for a
 * plain store: the micro-kernels store 12 vectors a call and the channel-lane kernel
 * stores rows of 7 pixels 8 at a time, hence the split stores for the prefix masks. */
MMT_TARGET static inline void store8m(float *p, __m256i m, __m256 v) {
    unsigned bits = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m));
    if (bits == 0xff) {
        _mm256_storeu_ps(p, v);
        return;
    }
    if (bits & (bits + 1)) {   /* not the first n lanes */
        _mm256_maskstore_ps(p, m, v);
        return;
    }
    int n = __builtin_popcount(bits);
    __m128 h = _mm256_castps256_ps128(v);
    if (n >= 4) {
        _mm_storeu_ps(p, h);
        h = _mm256_extractf128_ps(v, 1);
        p += 4;
        n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)(void *)p, h);
        h = _mm_movehl_ps(h, h);
        p += 2;
        n -= 2;
    }
    if (n)
        _mm_store_ss(p, h);
}

/* Lanes i < n (n clamped to 0..8) of p, the others 0, reading no element past p[n - 1]
 * where that could fault: when the 8 floats at p end in the page of p[n - 1], a plain
 * load with the other lanes cleared, else a masked load (VMASKMOVPS: on AMD Zen 3 the
 * packing of resnet50's strided 1 x 1 convolutions spent 40% of its time behind them). */
MMT_TARGET static inline __m256 load8n(int64_t n, const float *p) {
    if (n >= 8)
        return _mm256_loadu_ps(p);
    if (n <= 0)
        return _mm256_setzero_ps();
    __m256i m = lanes8(n);
#if !defined(__SANITIZE_ADDRESS__)
    if (((uintptr_t)(p + n - 1) >> 12) == ((uintptr_t)(p + 7) >> 12))
        return _mm256_and_ps(_mm256_loadu_ps(p), _mm256_castsi256_ps(m));
#endif
    return _mm256_maskload_ps(p, m);
}

/* Lanes i < n (n clamped to 0..8) of p[2*i], reading no element past p[2*n - 2]. */
MMT_TARGET static inline __m256 load_s2_8(int64_t n, const float *p) {
    __m256 lo = load8n(2 * n - 1, p);
    __m256 hi = load8n(2 * n - 9, p + 8);
    __m256 s = _mm256_shuffle_ps(lo, hi, 0x88);  /* lo0 lo2 hi0 hi2 lo4 lo6 hi4 hi6 */
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), 0xD8));
}

/* The 8 x 8 floats of r[0..8) transposed in place (lane j of r[i] to lane i of r[j]):
 * pairs of rows interleaved by 32 and 64 bits within 128-bit halves, then the halves
 * exchanged; 24 shuffles. */
MMT_TARGET __attribute__((always_inline)) static inline void transpose8(__m256 r[8]) {
    __m256 t[8];
#pragma GCC unroll 16
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 16
    for (int i = 0; i < 8; i += 4) {   /* r[i + c], half H: column 4H + c of rows i..i+3 */
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
#pragma GCC unroll 16
    for (int c = 0; c < 4; c++) {
        t[c] = _mm256_permute2f128_ps(r[c], r[c + 4], 0x20);
        t[c + 4] = _mm256_permute2f128_ps(r[c], r[c + 4], 0x31);
    }
#pragma GCC unroll 16
    for (int c = 0; c < 8; c++)
        r[c] = t[c];
}

#define MMT_LOADS2(n, p) load_s2_8((n), (p))
#define MMT_TRANSPOSE(v) transpose8(v)
#define MMT_PERM(v, i) _mm256_permutevar8x32_ps((v), (i))
#define MMT_MCOUNT(m) __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m)))
#define MMT_FEATURE RT_HOST_AVX2_FMA
#define MMT_EXPORT rt_mm_f32_256
#define MMT_PACKS rt_mm_f32_256_packs

#include "rt_kern_mmt.h"

#endif
