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
#define PG_AHEAD 8           /* tap rows a row is prefetched before it is folded */
#define PG_NV (2 * PL_BLOCKS + 2) /* vectors of a tap row a pass loads, at most */

/* The lanes of a 16-element load from element e of a tap row whose elements [lo, hi)
 * are read (the others: the border's value). */
PL_INLINE __mmask16 pg_in(int64_t e, int64_t lo, int64_t hi) {
    int64_t a = lo - e, b = hi - e;
    a = a < 0 ? 0 : a;
    b = b > 16 ? 16 : b;
    return b > a ? (__mmask16)(((1u << b) - 1) & ~((1u << a) - 1)) : 0;
}

/* Tap row elements [e0, e0 + 16 * nv) of row (the address of its element 0; NULL: a
 * row of the border), nv vectors under the masks mv, the border's value in the lanes
 * they leave: no load reads an element outside the row's read range. */
PL_INLINE void pg_load_row(__m512 *v, const uint8_t *row, int64_t e0, const __mmask16 *mv,
                           const int nv, __m512 pad) {
#pragma GCC unroll 10
    for (int i = 0; i < nv; i++)
        v[i] = row ? _mm512_mask_loadu_ps(pad, mv[i], row + 4 * (e0 + 16 * i)) : pad;
}

/* The address of element 0 of tap row r where src reads its columns [c0, c1) (only
 * those are read through it); NULL: a row of the border. */
PL_INLINE const uint8_t *pg_drow(const RtPoolSrc *src, uint64_t r) {
    if (r < src->r0 || r >= src->r1)
        return NULL;
    uintptr_t p = (uintptr_t)(src->s + (int64_t)(r - src->r0) * src->srs);
    return (const uint8_t *)(p - 4 * (uintptr_t)src->c0);
}

/* Prefetches tap row r's elements [max(e0, lo), hi) (a pass's), PG_AHEAD rows before
 * they are folded, where they are read in place: a deferred LOAD's rows come from DRAM
 * or from the other host core's cache (the previous kernel's results), and the fold,
 * with few loads of a row in flight, waited on each (resnet50's max pool read in place,
 * 2 threads: 0.089 -> 0.166 ms without, about 0.085 with). */
PL_INLINE void pg_prefetch_row(const RtPoolSrc *src, uint64_t r, int64_t e0, int64_t lo,
                               int64_t hi) {
    if (r < src->r0 || r >= src->r1 || hi <= (e0 > lo ? e0 : lo))
        return;
    int64_t c = e0 > lo ? e0 : lo;
    uintptr_t p = (uintptr_t)(src->s + (int64_t)(r - src->r0) * src->srs) +
                  4 * (uintptr_t)(c - (int64_t)src->c0);
    uintptr_t end = p + 4 * (uintptr_t)(hi - c);
    for (p &= ~(uintptr_t)63; p < end; p += 64)
        __builtin_prefetch((const void *)p, 0, 3);
}

/* The vectors of a tap row a pass of nb blocks loads (constant): its blocks' elements
 * and the kw - 1 after them, kw at most 16 * cs (with column stride 2, whole pairs). */
#define PG_NVEC(cs, nb) ((cs) == 2 ? 2 * (nb) + 2 : (nb) + 1)

/* Tap dx of block q from the vectors src (lanes l + m of src[q], src[q + 1] past 16). */
PL_INLINE __m512 pg_tap(const __m512 *src, int q, uint32_t m) {
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return m ? _mm512_permutex2var_ps(src[q], _mm512_add_epi32(iota, _mm512_set1_epi32((int)m)),
                                      src[q + 1])
             : src[q];
}

/* The kw taps of nb blocks of sixteen results folded (a) and summed (z, the NaN check)
 * from a tap row's vectors v (element 16 * i + l of the pass in lane l of v[i]): tap
 * dx of result l of block q is element (16 * q + l) * cs + dx. Each vector is loaded
 * once: with column stride 2 the even and odd elements are split once (resnet50's
 * 3 x 3 stride-2 max pool: 10 loads a tap row, not 24), a tap's lanes then taken from
 * one of them and the next block's. The taps in increasing dx, as one after another. */
PL_INLINE void pg_fold(const __m512 *v, __m512 *a, __m512 *z, const uint32_t kw, const int64_t cs,
                       const int fn, const int nb) {
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i even = _mm512_add_epi32(iota, iota);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    __m512 ev[PL_BLOCKS + 1], od[PL_BLOCKS + 1];
    if (cs == 2)
#pragma GCC unroll 5
        for (int q = 0; q <= nb; q++) {
            ev[q] = _mm512_permutex2var_ps(v[2 * q], even, v[2 * q + 1]);
            od[q] = _mm512_permutex2var_ps(v[2 * q], odd, v[2 * q + 1]);
        }
    const __m512 *first = cs == 2 ? ev : v;
#pragma GCC unroll 4
    for (int q = 0; q < nb; q++)
        a[q] = z[q] = first[q];
#pragma GCC unroll 4
    for (uint32_t dx = 1; dx < kw; dx++) {
        const __m512 *src = cs == 1 ? v : dx % 2 ? od : ev;
        uint32_t m = cs == 2 ? dx / 2 : dx;   /* lanes the tap is shifted by */
#pragma GCC unroll 4
        for (int q = 0; q < nb; q++) {
            __m512 x = pg_tap(src, q, m);
            z[q] = _mm512_add_ps(z[q], x);
            a[q] = fn == PL_MAX ? _mm512_max_ps(a[q], x) : _mm512_min_ps(a[q], x);
        }
    }
}

/* Columns [j, j + 16 * nb) (those below n) of every output row of a pooling grid (see
 * rt_pool_grid512), one block of sixteen a chain: each tap row's kw taps folded once
 * into a row of partial results (a ring of kh of them, in L1), then each output row
 * from its kh partial rows in order. MAX / MIN by one VMAXPS / VMINPS a step; the NaN
 * check (each tap row's sum) is or-ed into the result: false when there may be one. */
PL_INLINE bool pg_blocks(uint8_t *d, int64_t drs, const RtPoolSrc *src, uint32_t kh,
                         const uint32_t kw, uint32_t sh, const int64_t cs, uint32_t rows,
                         uint32_t j, uint32_t n, const int fn, const int nb) {
    _Alignas(64) float ring[PG_KH][PL_BLOCKS * 16];
    __mmask16 km[PL_BLOCKS], mv[PG_NV], nan = 0;
    const int64_t e0 = (int64_t)j * cs, ext = (int64_t)(n - 1) * cs + kw;
    const int64_t lo = src->c0, hi = src->c1 < (uint64_t)ext ? (int64_t)src->c1 : ext;
    const int nv = PG_NVEC(cs, nb);
    for (int q = 0; q < nb; q++) {
        uint32_t r = n - (j + 16 * (uint32_t)q);
        km[q] = (__mmask16)(r >= 16 ? 0xffffu : (1u << r) - 1);
    }
    for (int i = 0; i < nv; i++)
        mv[i] = pg_in(e0 + 16 * i, lo, hi);
    const __m512 pad = _mm512_set1_ps(src->v);
    const int64_t ph = e0 + 16 * nb * cs + kw - 1 < hi ? e0 + 16 * nb * cs + kw - 1 : hi;
    uint32_t next = 0, slot = 0, s0 = 0;     /* the next tap row, its ring slot; row
                                                i * sh's slot */
    for (uint32_t r = 0; r < PG_AHEAD; r++)
        pg_prefetch_row(src, r, e0, lo, ph);
    for (uint32_t i = 0; i < rows; i++) {
        for (; next < i * sh + kh; next++) {
            __m512 v[PG_NV], a[PL_BLOCKS], z[PL_BLOCKS];
            pg_prefetch_row(src, next + PG_AHEAD, e0, lo, ph);
            pg_load_row(v, pg_drow(src, next), e0, mv, nv, pad);
            pg_fold(v, a, z, kw, cs, fn, nb);
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
            _mm512_mask_storeu_ps(out + 16 * q, km[q], acc[q]);
        for (uint32_t t = 0; t < sh; t++)
            s0 = s0 + 1 == kh ? 0 : s0 + 1;
    }
    return !nan;
}

/* nb blocks from column j of a pooling grid by pg_blocks, kw a constant where it is 3
 * (3 x 3 pools: the fold's taps unrolled). */
#define PG_PASS(CS, FN, NB)                                                                \
    (kw == 3 ? pg_blocks(d, drs, s, kh, 3, sh, CS, rows, j, n, FN, NB)                      \
             : pg_blocks(d, drs, s, kh, kw, sh, CS, rows, j, n, FN, NB))

/* A pooling grid for one column stride and function (constants): every row's columns
 * in passes of PL_BLOCKS whole blocks, the last of as many blocks as are left. */
#define PG_RUN(NAME, CS, FN)                                                               \
    PL_TARGET static bool NAME(uint8_t *d, int64_t drs, const RtPoolSrc *s, uint32_t kh,    \
                               uint32_t kw, uint32_t sh, uint32_t rows, uint32_t n) {       \
        uint32_t j = 0;                                                                    \
        bool ok = true;                                                                    \
        for (; n - j > 16 * PL_BLOCKS; j += 16 * PL_BLOCKS)                                \
            ok &= PG_PASS(CS, FN, PL_BLOCKS);                                              \
        switch ((n - j + 15) / 16) {                                                       \
        case 4: ok &= PG_PASS(CS, FN, 4); break;                                           \
        case 3: ok &= PG_PASS(CS, FN, 3); break;                                           \
        case 2: ok &= PG_PASS(CS, FN, 2); break;                                           \
        case 1: ok &= PG_PASS(CS, FN, 1); break;                                           \
        default: break;                                                                    \
        }                                                                                  \
        return ok;                                                                         \
    }
PG_RUN(pg_max1, 1, PL_MAX)
PG_RUN(pg_max2, 2, PL_MAX)
PG_RUN(pg_min1, 1, PL_MIN)
PG_RUN(pg_min2, 2, PL_MIN)

bool rt_pool_grid512(uint8_t *d, int64_t drs, const RtPoolSrc *s, uint32_t kh, uint32_t kw,
                     uint32_t sh, int64_t cs, uint32_t rows, uint32_t n, int fn) {
    typedef bool GridFn(uint8_t *, int64_t, const RtPoolSrc *, uint32_t, uint32_t, uint32_t,
                        uint32_t, uint32_t);
    GridFn *one = fn == ISA_VF_MAX ? pg_max1 : pg_min1;
    GridFn *two = fn == ISA_VF_MAX ? pg_max2 : pg_min2;
    if (!rt_host_has(RT_HOST_AVX512) || (cs != 1 && cs != 2) || kh < 2 || kh > PG_KH ||
        !kw || kw > 16 * (uint32_t)cs || !sh || sh >= kh || !n ||
        (fn != ISA_VF_MAX && fn != ISA_VF_MIN))
        return false;
    return (cs == 1 ? one : two)(d, drs, s, kh, kw, sh, rows, n);
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
