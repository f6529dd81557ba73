/* rt_kern_vpool512.c: one row of a MAX / MIN / ADD pooling run (rt_kern_vpool.c) on
 * hosts with AVX-512F, in intrinsics; and a MAX / MIN run over a window's grid of taps
 * whole, each tap row folded once (rt_pool_grid512).
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
 * ADD (average pooling's sums) adds the taps in the same order: the same bits.
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

enum { PL_MAX, PL_MIN, PL_ADD };

/* acc through one more tap x by function fn (see the top of the file). */
PL_INLINE __m512 pl_step(__m512 acc, __m512 x, const int fn) {
    if (fn == PL_ADD)
        return _mm512_add_ps(acc, x);
    __mmask16 nan = _mm512_cmp_ps_mask(acc, acc, _CMP_UNORD_Q);
    __m512 r = fn == PL_MAX ? _mm512_max_ps(acc, x) : _mm512_min_ps(acc, x);
    return _mm512_mask_mov_ps(r, nan, acc);
}

/* The masks of block q of nb from column j of n: a block before the last of a pass,
 * or any block of a pass of whole blocks (full), is whole (constants: the compiler
 * keeps them in a register or an immediate; eight mask registers held four blocks'
 * three masks each only by spilling them to the stack at every tap). */
PL_INLINE PlMask pl_kmask(uint32_t j, uint32_t n, int q, const int nb, const int full) {
    if (full || q < nb - 1) {
        PlMask k = {0xffff, 0xffff, 0x7fff};   /* 16 results, elements 0..30 */
        return k;
    }
    return pl_mask(j + 16 * (uint32_t)q, n);
}

/* Columns [j, j + 16 * nb) of a row (those below n): nb blocks of sixteen, one chain
 * each, so that the chains' latencies overlap (a row of 55 results is four blocks, the
 * last partly masked); full: every block whole. MAX and MIN first run as one VMAXPS /
 * VMINPS a tap, which is isa.md's MAX / MIN wherever the result so far is no NaN, with
 * the taps' sum alongside: a NaN in any tap makes the sum a NaN (so can inf - inf),
 * and then the pass runs again tap by tap through pl_step. */
PL_INLINE void pl_blocks(float *d, const float *const *s, uint32_t ns, const int64_t cs,
                         uint32_t j, uint32_t n, const int fn, const int nb, const int full) {
    PlMask k[PL_BLOCKS];
    __m512 a[PL_BLOCKS], z[PL_BLOCKS];
#pragma GCC unroll 4
    for (int q = 0; q < nb; q++) {
        k[q] = pl_kmask(j, n, q, nb, full);
        a[q] = z[q] = pl_load(s[0] + (int64_t)(j + 16 * q) * cs, cs, k[q]);
    }
    if (fn == PL_ADD) {
        for (uint32_t t = 1; t < ns; t++)
#pragma GCC unroll 4
            for (int q = 0; q < nb; q++)
                a[q] = pl_step(a[q], pl_load(s[t] + (int64_t)(j + 16 * q) * cs, cs, k[q]), fn);
    } else {
        for (uint32_t t = 1; t < ns; t++)
#pragma GCC unroll 4
            for (int q = 0; q < nb; q++) {
                __m512 x = pl_load(s[t] + (int64_t)(j + 16 * q) * cs, cs, k[q]);
                z[q] = _mm512_add_ps(z[q], x);
                a[q] = fn == PL_MAX ? _mm512_max_ps(a[q], x) : _mm512_min_ps(a[q], x);
            }
        __mmask16 nan = 0;
#pragma GCC unroll 4
        for (int q = 0; q < nb; q++)
            nan |= _mm512_cmp_ps_mask(z[q], z[q], _CMP_UNORD_Q);
        if (nan) {                      /* the exact steps: acc kept where it is a NaN */
#pragma GCC unroll 4
            for (int q = 0; q < nb; q++)
                a[q] = pl_load(s[0] + (int64_t)(j + 16 * q) * cs, cs, k[q]);
            for (uint32_t t = 1; t < ns; t++)
#pragma GCC unroll 4
                for (int q = 0; q < nb; q++)
                    a[q] = pl_step(a[q], pl_load(s[t] + (int64_t)(j + 16 * q) * cs, cs, k[q]),
                                   fn);
        }
    }
#pragma GCC unroll 4
    for (int q = 0; q < nb; q++)
        _mm512_mask_storeu_ps(d + j + 16 * q, k[q].m, a[q]);
}

/* A row in passes of PL_BLOCKS whole blocks, the last pass of as many blocks as its
 * columns fill, for one column stride and function (constants: their branches fold
 * away). */
#define PL_ROW(NAME, CS, FN)                                                               \
    PL_TARGET static void NAME(float *d, const float *const *s, uint32_t ns, uint32_t n) {  \
        uint32_t j = 0;                                                                    \
        for (; n - j > 16 * PL_BLOCKS; j += 16 * PL_BLOCKS)                                \
            pl_blocks(d, s, ns, CS, j, n, FN, PL_BLOCKS, 1);                               \
        switch ((n - j + 15) / 16) {                                                       \
        case 4: pl_blocks(d, s, ns, CS, j, n, FN, 4, 0); break;                            \
        case 3: pl_blocks(d, s, ns, CS, j, n, FN, 3, 0); break;                            \
        case 2: pl_blocks(d, s, ns, CS, j, n, FN, 2, 0); break;                            \
        case 1: pl_blocks(d, s, ns, CS, j, n, FN, 1, 0); break;                            \
        default: break;                                                                    \
        }                                                                                  \
    }
PL_ROW(pl_max1, 1, PL_MAX)
PL_ROW(pl_max2, 2, PL_MAX)
PL_ROW(pl_min1, 1, PL_MIN)
PL_ROW(pl_min2, 2, PL_MIN)
PL_ROW(pl_add1, 1, PL_ADD)
PL_ROW(pl_add2, 2, PL_ADD)

/* Rows of partial results pool_grid keeps: one per tap row of the window, at most. */
#define PG_KH 8

/* Columns [j, j + 16 * nb) (those below n) of every output row of a pooling grid (see
 * rt_pool_grid512), one block of sixteen a chain: each tap row's kw taps folded once
 * into a row of partial results (a ring of kh of them, in L1), then each output row
 * from its kh partial rows in order. MAX / MIN by one VMAXPS / VMINPS a step; the NaN
 * check (each tap row's sum) is or-ed into the result: false when there may be one. */
PL_INLINE bool pg_blocks(uint8_t *d, int64_t drs, const uint8_t *src, int64_t srs,
                         uint32_t kh, uint32_t kw, uint32_t sh, const int64_t cs,
                         uint32_t rows, uint32_t j, uint32_t n, const int fn, const int nb,
                         const int full) {
    _Alignas(64) float ring[PG_KH][PL_BLOCKS * 16];
    PlMask k[PL_BLOCKS];
    __mmask16 nan = 0;
#pragma GCC unroll 4
    for (int q = 0; q < nb; q++)
        k[q] = pl_kmask(j, n, q, nb, full);
    uint32_t next = 0, slot = 0, s0 = 0;     /* the next tap row, its ring slot; row
                                                i * sh's slot */
    for (uint32_t i = 0; i < rows; i++) {
        for (; next < i * sh + kh; next++) {
            const float *row = (const float *)(src + (int64_t)next * srs) + (int64_t)j * cs;
            __m512 a[PL_BLOCKS], z[PL_BLOCKS];
#pragma GCC unroll 4
            for (int q = 0; q < nb; q++)
                a[q] = z[q] = pl_load(row + 16 * q * cs, cs, k[q]);
            for (uint32_t dx = 1; dx < kw; dx++)
#pragma GCC unroll 4
                for (int q = 0; q < nb; q++) {
                    __m512 x = pl_load(row + 16 * q * cs + dx, cs, k[q]);
                    z[q] = _mm512_add_ps(z[q], x);
                    a[q] = fn == PL_MAX ? _mm512_max_ps(a[q], x) : _mm512_min_ps(a[q], x);
                }
#pragma GCC unroll 4
            for (int q = 0; q < nb; q++) {
                nan |= _mm512_cmp_ps_mask(z[q], z[q], _CMP_UNORD_Q);
                _mm512_store_ps(ring[slot] + 16 * q, a[q]);
            }
            slot = slot + 1 == kh ? 0 : slot + 1;
        }
        __m512 acc[PL_BLOCKS];
#pragma GCC unroll 4
        for (int q = 0; q < nb; q++)
            acc[q] = _mm512_load_ps(ring[s0] + 16 * q);
        for (uint32_t dy = 1, t = s0; dy < kh; dy++) {
            t = t + 1 == kh ? 0 : t + 1;
#pragma GCC unroll 4
            for (int q = 0; q < nb; q++) {
                __m512 x = _mm512_load_ps(ring[t] + 16 * q);
                acc[q] = fn == PL_MAX ? _mm512_max_ps(acc[q], x) : _mm512_min_ps(acc[q], x);
            }
        }
        float *out = (float *)(d + (int64_t)i * drs) + j;
#pragma GCC unroll 4
        for (int q = 0; q < nb; q++)
            _mm512_mask_storeu_ps(out + 16 * q, k[q].m, acc[q]);
        for (uint32_t t = 0; t < sh; t++)
            s0 = s0 + 1 == kh ? 0 : s0 + 1;
    }
    return !nan;
}

/* A pooling grid for one column stride and function (constants): every row's columns
 * in passes of PL_BLOCKS whole blocks, the last of as many blocks as are left. */
#define PG_RUN(NAME, CS, FN)                                                               \
    PL_TARGET static bool NAME(uint8_t *d, int64_t drs, const uint8_t *s, int64_t srs,      \
                               uint32_t kh, uint32_t kw, uint32_t sh, uint32_t rows,        \
                               uint32_t n) {                                                \
        uint32_t j = 0;                                                                    \
        bool ok = true;                                                                    \
        for (; n - j > 16 * PL_BLOCKS; j += 16 * PL_BLOCKS)                                \
            ok &= pg_blocks(d, drs, s, srs, kh, kw, sh, CS, rows, j, n, FN, PL_BLOCKS, 1); \
        switch ((n - j + 15) / 16) {                                                       \
        case 4: ok &= pg_blocks(d, drs, s, srs, kh, kw, sh, CS, rows, j, n, FN, 4, 0); break; \
        case 3: ok &= pg_blocks(d, drs, s, srs, kh, kw, sh, CS, rows, j, n, FN, 3, 0); break; \
        case 2: ok &= pg_blocks(d, drs, s, srs, kh, kw, sh, CS, rows, j, n, FN, 2, 0); break; \
        case 1: ok &= pg_blocks(d, drs, s, srs, kh, kw, sh, CS, rows, j, n, FN, 1, 0); break; \
        default: break;                                                                    \
        }                                                                                  \
        return ok;                                                                         \
    }
PG_RUN(pg_max1, 1, PL_MAX)
PG_RUN(pg_max2, 2, PL_MAX)
PG_RUN(pg_min1, 1, PL_MIN)
PG_RUN(pg_min2, 2, PL_MIN)

bool rt_pool_grid512(uint8_t *d, int64_t drs, const uint8_t *s, int64_t srs, uint32_t kh,
                     uint32_t kw, uint32_t sh, int64_t cs, uint32_t rows, uint32_t n, int fn) {
    typedef bool GridFn(uint8_t *, int64_t, const uint8_t *, int64_t, uint32_t, uint32_t,
                        uint32_t, uint32_t, uint32_t);
    GridFn *one = fn == ISA_VF_MAX ? pg_max1 : pg_min1;
    GridFn *two = fn == ISA_VF_MAX ? pg_max2 : pg_min2;
    if (!rt_host_has(RT_HOST_AVX512) || (cs != 1 && cs != 2) || kh < 2 || kh > PG_KH ||
        !kw || !sh || sh >= kh || (fn != ISA_VF_MAX && fn != ISA_VF_MIN))
        return false;
    return (cs == 1 ? one : two)(d, drs, s, srs, kh, kw, sh, rows, n);
}

bool rt_pool_row512(uint8_t *d, const uint8_t *const *s, uint32_t ns, int64_t cs, uint32_t n,
                    int fn) {
    typedef void RowFn(float *, const float *const *, uint32_t, uint32_t);
    RowFn *one = fn == ISA_VF_MAX ? pl_max1 : fn == ISA_VF_MIN ? pl_min1 : pl_add1;
    RowFn *two = fn == ISA_VF_MAX ? pl_max2 : fn == ISA_VF_MIN ? pl_min2 : pl_add2;
    if (!rt_host_has(RT_HOST_AVX512) || (cs != 1 && cs != 2) ||
        (fn != ISA_VF_MAX && fn != ISA_VF_MIN && fn != ISA_VF_ADD))
        return false;
    (cs == 1 ? one : two)((float *)d, (const float *const *)s, ns, n);
    return true;
}
#endif
