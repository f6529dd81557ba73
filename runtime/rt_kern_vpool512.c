/* rt_kern_vpool512.c: one row of a MAX / MIN pooling run (rt_kern_vpool.c) on hosts
 * with AVX-512F, in intrinsics.
 *
 * Two things the portable row (pool_row) does not do. It reads nothing past a tap's
 * last element (a last partial block loads under a mask), so rt_vec_pool_views can
 * read the taps in place from DRAM, where a read past the end could leave the
 * segment. And it keeps four blocks of sixteen results in flight, one dependency
 * chain each, with a tap a VMAXPS / VMINPS and a masked move (the portable select
 * takes five vector operations on one chain): squeezenet's 3 x 3 stride-2 max pool
 * over 64 x 111 x 111, 2 threads, with its input in LX: 0.19 -> 0.18 ms.
 *
 * The same result per element as isa.md's MAX / MIN, tap after tap: acc when it is
 * better or NaN, else the tap. VMAXPS(acc, x) gives acc when acc > x, else x (x when
 * either is a NaN, and when both are zeros); the masked move keeps acc where acc is
 * a NaN. So the bits equal the portable row's, NaN payloads and signed zeros included.
 */
#include "rt_exec.h"

#if RT_HAVE_X86_KERNELS /* else an empty file */
#include <immintrin.h>

#define PL_TARGET __attribute__((target("avx512f")))
#define PL_INLINE PL_TARGET static inline __attribute__((always_inline))
#define PL_BLOCKS 4          /* blocks of sixteen results a pass, one chain each */

/* The lanes of a block of sixteen results from column j of n: the results' mask m and,
 * for column stride 2, the masks of the two 16-element loads that hold their taps
 * (result i reads element 2i: below 8 from the first load, the rest from the second);
 * nothing past a tap's last element is loaded. */
typedef struct {
    __mmask16 m, lo, hi;
} PlMask;

PL_INLINE PlMask pl_mask(uint32_t j, uint32_t n) {
    uint32_t r = n > j ? n - j : 0, e = r ? 2 * r - 1 : 0;    /* results, elements */
    PlMask k;
    k.m = (__mmask16)(r >= 16 ? 0xffffu : (1u << r) - 1);
    k.lo = (__mmask16)(e >= 16 ? 0xffffu : (1u << e) - 1);
    k.hi = (__mmask16)(e >= 32 ? 0xffffu : e > 16 ? (1u << (e - 16)) - 1 : 0);
    return k;
}

/* The sixteen elements at p, cs apart, of block mask k (the others zero). */
PL_INLINE __m512 pl_load(const float *p, const int64_t cs, PlMask k) {
    if (cs == 1)
        return _mm512_maskz_loadu_ps(k.m, p);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24,
                                           26, 28, 30);
    return _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(k.lo, p), even,
                                  _mm512_maskz_loadu_ps(k.hi, p + 16));
}

/* acc through one more tap x (see the top of the file). */
PL_INLINE __m512 pl_step(__m512 acc, __m512 x, const bool max) {
    __mmask16 nan = _mm512_cmp_ps_mask(acc, acc, _CMP_UNORD_Q);
    __m512 r = max ? _mm512_max_ps(acc, x) : _mm512_min_ps(acc, x);
    return _mm512_mask_mov_ps(r, nan, acc);
}

/* Columns [j, j + 16 * PL_BLOCKS) of a row (those below n): PL_BLOCKS blocks of
 * sixteen, one chain each, so that the chains' latencies overlap (a row of 55
 * results is four blocks, the last partly masked). */
PL_INLINE void pl_blocks(float *d, const float *const *s, uint32_t ns, const int64_t cs,
                         uint32_t j, uint32_t n, const bool max) {
    PlMask k[PL_BLOCKS];
    __m512 a[PL_BLOCKS];
#pragma GCC unroll 4
    for (int q = 0; q < PL_BLOCKS; q++) {
        k[q] = pl_mask(j + 16 * (uint32_t)q, n);
        a[q] = pl_load(s[0] + (int64_t)(j + 16 * q) * cs, cs, k[q]);
    }
    for (uint32_t t = 1; t < ns; t++)
#pragma GCC unroll 4
        for (int q = 0; q < PL_BLOCKS; q++)
            a[q] = pl_step(a[q], pl_load(s[t] + (int64_t)(j + 16 * q) * cs, cs, k[q]), max);
#pragma GCC unroll 4
    for (int q = 0; q < PL_BLOCKS; q++)
        _mm512_mask_storeu_ps(d + j + 16 * q, k[q].m, a[q]);
}

/* A row in passes of PL_BLOCKS blocks, for one column stride and function (constants:
 * their branches fold away). */
#define PL_ROW(NAME, CS, MAX)                                                              \
    PL_TARGET static void NAME(float *d, const float *const *s, uint32_t ns, uint32_t n) {  \
        for (uint32_t j = 0; j < n; j += 16 * PL_BLOCKS)                                   \
            pl_blocks(d, s, ns, CS, j, n, MAX);                                            \
    }
PL_ROW(pl_max1, 1, true)
PL_ROW(pl_max2, 2, true)
PL_ROW(pl_min1, 1, false)
PL_ROW(pl_min2, 2, false)

bool rt_pool_row512(uint8_t *d, const uint8_t *const *s, uint32_t ns, int64_t cs, uint32_t n,
                    bool max) {
    if (!rt_host_has(RT_HOST_AVX512) || (cs != 1 && cs != 2))
        return false;
    const float *const *f = (const float *const *)s;
    if (max)
        (cs == 1 ? pl_max1 : pl_max2)((float *)d, f, ns, n);
    else
        (cs == 1 ? pl_min1 : pl_min2)((float *)d, f, ns, n);
    return true;
}
#endif
