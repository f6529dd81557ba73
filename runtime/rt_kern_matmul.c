/* rt_kern_matmul.c: the ISA_MATMUL tile kernel (PT array), F32, DLF16 -> F32 (B also
 * F8E4M3FN with ISA_F_BF8) and I8 -> I32, and the choice of the F32 kernel for this host.
 *
 * F32 (isa.md): every C element accumulates its products in increasing k from 0 (or
 * from the old C with ACCUM), each step one fused multiply-add. The blocked vector
 * kernels (rt_kern_mmt.h: AVX-512F, else AVX2 + FMA, chosen at run time) and the
 * portable loop here (fmaf: correctly rounded everywhere, a single instruction on
 * hosts with FMA) compute exactly that, so results are the same bit for bit on every
 * host, whatever the blocking or the host thread. A B operand that is a window of LX
 * (ISA_F_BWIN, an implicit-GEMM convolution) is read in place or packed by the vector
 * kernels, and gathered into a dense B for the others: the same sums either way. On
 * DLF16 operands the LX ranges it and A read are widened into the core's widening area
 * and the F32 window kernel runs there (mm_win_dlf16).
 */
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "dtconv.h"
#include "rt_dlf16.h"
#include "rt_exec.h"

/* Bits of rt_host_has, computed once (threads that race here store the same value). */
static unsigned host_bits(void) {
    static atomic_uint bits = 0; /* RT_HOST_KNOWN set once computed */
    unsigned b = atomic_load_explicit(&bits, memory_order_relaxed);
    if (b)
        return b;
    b = RT_HOST_KNOWN;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
        b |= RT_HOST_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        b |= RT_HOST_AVX2_FMA;
#endif
    atomic_store_explicit(&bits, b, memory_order_relaxed);
    return b;
}

/* Whether this host has the instruction-set feature f (RT_HOST_*). */
bool rt_host_has(unsigned f) {
    return (host_bits() & f) == f;
}

/* One row of C += a * (a row of B): F32 with one fused multiply-add per element. */
static void row_f32(rt_f32 *c, float a, const rt_f32 *b, uint32_t n) {
    for (uint32_t j = 0; j < n; j++)
        c[j] = fmaf(a, b[j], c[j]);
}

/* One row of C += a * (a row of B): I8 products into I32 with wrap-around. */
static void row_i8(rt_i32 *c, int32_t a, const int8_t *b, uint32_t n) {
    for (uint32_t j = 0; j < n; j++)
        c[j] = (int32_t)((uint32_t)c[j] + (uint32_t)(a * b[j]));
}

/* The portable MATMUL (either dtype pair; A and B where s says): rows of C accumulate
 * a_ik * (row k of B), k increasing. */
void rt_mm_portable(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s) {
    bool f32 = mm->dtype == ISA_DT_F32;
    size_t es = f32 ? 4 : 1; /* operand element size; C's is 4 for both */
    for (uint32_t i = 0; i < mm->m; i++) {
        uint8_t *C = c->lx + mm->c + (size_t)i * mm->ldc * 4;
        if (!(mm->flags & ISA_F_ACCUM))
            memset(C, 0, (size_t)mm->n * 4); /* 0.0f and 0 alike */
        const uint8_t *A = s->a + (size_t)i * s->lda * es;
        for (uint32_t k = 0; k < mm->k; k++) {
            const uint8_t *B = s->b + (size_t)k * s->ldb * es;
            if (s->bt) /* F32 only (rt_mm_takes_bt): element (k,j) at b[j * ldb + k] */
                for (uint32_t j = 0; j < mm->n; j++)
                    ((rt_f32 *)C)[j] = fmaf(((const rt_f32 *)A)[k],
                                            ((const rt_f32 *)s->b)[(size_t)j * s->ldb + k],
                                            ((rt_f32 *)C)[j]);
            else if (f32)
                row_f32((rt_f32 *)C, ((const rt_f32 *)A)[k], (const rt_f32 *)B, mm->n);
            else
                row_i8((rt_i32 *)C, ((const int8_t *)A)[k], (const int8_t *)B, mm->n);
        }
    }
}

/* Runs a verified F32 MATMUL with the fastest kernel of this host (not a window);
 * true when that kernel ran s->epi too (the vector kernels). */
static bool mm_f32(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s) {
#if RT_HAVE_X86_KERNELS
    if (rt_mm_f32_512(c, mm, s) || rt_mm_f32_256(c, mm, s))
        return true;
#endif
    rt_mm_portable(c, mm, s);
    return false;
}

/* Offset (elements, from b) of element (kk, p) of a window B (ISA_F_BWIN, isa.md). */
static int64_t win_off(const SpyMatmul *mm, uint32_t kk, uint32_t p) {
    uint32_t e1 = mm->bw_kext[1], e2 = mm->bw_kext[2], n1 = mm->bw_next[1];
    return (int64_t)(kk / e2 / e1) * mm->bw_ks[0] + (int64_t)(kk / e2 % e1) * mm->bw_ks[1] +
           (int64_t)(kk % e2) * mm->bw_ks[2] + (int64_t)(p / n1) * mm->bw_ns[0] +
           (int64_t)(p % n1) * mm->bw_ns[1];
}

/* Copies one element of es bytes (1, 2 or 4). */
static inline void win_elem(uint8_t *d, const uint8_t *s, size_t es) {
    if (es == 4)
        memcpy(d, s, 4);
    else if (es == 2)
        memcpy(d, s, 2);
    else
        *d = *s;
}

/* A MATMUL whose B is a window, any dtype: on a host buffer laid out as a scratchpad
 * ([A m x k][B k x n][C m x n], dense) with the window gathered into B, C copied in
 * (ACCUM) and out: the same products in the same order as the plain MATMUL. */
static void mm_win_dense(RtCore *c, const SpyMatmul *mm) {
    size_t m = mm->m, n = mm->n, k = mm->k;
    size_t es = mm->dtype == ISA_DT_F32 ? 4 : mm->dtype == ISA_DT_DLF16 ? 2 : 1;
    size_t na = m * k * es, nb = k * n * es;
    uint8_t *buf = malloc(na + nb + m * n * 4 + RT_LX_SLACK);
    if (!buf)
        abort();                         /* the emulator has no error path for host OOM */
    for (size_t i = 0; i < m; i++)
        memcpy(buf + i * k * es, c->lx + mm->a + i * mm->lda * es, k * es);
    size_t n1 = mm->bw_next[1];
    for (size_t kk = 0; kk < k; kk++)
        for (size_t p = 0; p < n; p += n1) {     /* one row of output pixels */
            uint8_t *d = buf + na + (kk * n + p) * es;
            const uint8_t *src = c->lx + mm->b + win_off(mm, (uint32_t)kk, (uint32_t)p) * (int64_t)es;
            if (mm->bw_ns[1] == 1)
                memcpy(d, src, n1 * es);
            else
                for (size_t j = 0; j < n1; j++)
                    win_elem(d + j * es, src + (int64_t)j * mm->bw_ns[1] * (int64_t)es, es);
        }
    uint8_t *C = buf + na + nb, *rc = c->lx + mm->c;
    if (mm->flags & ISA_F_ACCUM)
        for (size_t i = 0; i < m; i++)
            memcpy(C + i * n * 4, rc + i * mm->ldc * 4, n * 4);
    SpyMatmul w = {.opcode = ISA_MATMUL, .dtype = mm->dtype, .out_dtype = mm->out_dtype,
                   .flags = (uint8_t)(mm->flags & ISA_F_ACCUM), .a = 0, .b = (uint32_t)na,
                   .c = (uint32_t)(na + nb), .m = mm->m, .n = mm->n, .k = mm->k,
                   .lda = mm->k, .ldb = mm->n, .ldc = mm->n};
    RtCore t = *c;
    t.lx = buf;
    t.wide = 0;                          /* c's widening area is not after buf */
    rt_matmul(&t, &w);
    for (size_t i = 0; i < m; i++)
        memcpy(rc + i * mm->ldc * 4, C + i * n * 4, n * 4);
    free(buf);
}

/* The DLF16 operands of mm (where s says) widened exactly into dense F32 A (m x k)
 * and B (k x n); with ISA_F_BF8, B's elements are F8E4M3FN bytes (exact in F32 too). */
static void widen_ab(const SpyMatmul *mm, const RtMmSrc *s, float *A, float *B) {
    size_t m = mm->m, n = mm->n, k = mm->k;
    for (size_t i = 0; i < m; i++)
        rt_dlf16_to_f32_n(A + i * k, s->a + i * s->lda * 2, k);
    if (mm->flags & ISA_F_BF8) {
        float lut[256];
        for (int v = 0; v < 256; v++)
            lut[v] = spy_narrow_to_f32((uint8_t)v, ISA_DT_F8E4M3FN);
        for (size_t i = 0; i < k; i++)
            for (size_t j = 0; j < n; j++)
                B[i * n + j] = lut[s->b[i * s->ldb + j]];
        return;
    }
    for (size_t i = 0; i < k; i++)
        rt_dlf16_to_f32_n(B + i * n, s->b + i * s->ldb * 2, n);
}

/* mm_dlf16 without a widening area: A, B and C in a temporary buffer laid out as a
 * scratchpad ([A m x k][B k x n][C m x n], dense), C copied in (ACCUM) and out. */
static void mm_dlf16_buffer(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s) {
    size_t m = mm->m, n = mm->n, k = mm->k;
    size_t na = m * k, nb = k * n, bytes = (na + nb + m * n) * 4 + RT_LX_SLACK;
    uint8_t *buf = malloc(bytes);
    if (!buf)
        abort();                         /* the emulator has no error path for host OOM */
    float *A = (float *)buf, *B = A + na, *C = B + nb;
    widen_ab(mm, s, A, B);
    uint8_t *rc = c->lx + mm->c;
    if (mm->flags & ISA_F_ACCUM)
        for (size_t i = 0; i < m; i++)
            memcpy(C + i * n, rc + i * mm->ldc * 4, n * 4);
    SpyMatmul w = *mm;
    w.dtype = ISA_DT_F32;
    w.flags &= (uint8_t)~ISA_F_BF8;
    w.a = 0, w.b = (uint32_t)(na * 4), w.c = (uint32_t)((na + nb) * 4);
    w.lda = (uint32_t)k, w.ldb = (uint32_t)n, w.ldc = (uint32_t)n;
    RtCore t = *c;
    t.lx = buf;
    RtMmSrc ws = {buf + w.a, buf + w.b, w.lda, w.ldb, false, false, false, false, false, NULL, 0};
    mm_f32(&t, &w, &ws);
    for (size_t i = 0; i < m; i++)
        memcpy(rc + i * mm->ldc * 4, C + i * n, n * 4);
    free(buf);
}

/* DLF16 operands, F32 accumulation (isa.md): the operands are widened exactly to F32
 * and the F32 kernel runs on them: the same sums, in the same order, as an F32 MATMUL
 * on the widened operands. With the core's widening area (RtCore.wide) A and B go
 * there, dense, and C is read and written in place. */
static void mm_dlf16(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s) {
    size_t m = mm->m, n = mm->n, k = mm->k;
    if (c->wide && !(mm->flags & ISA_F_BF8)) { /* A and B of LX fit: at most 2x their bytes
                                                  (a float8 B takes 4x: the buffer) */
        float *A = (float *)(c->lx + c->wide), *B = A + m * k;
        widen_ab(mm, s, A, B);
        SpyMatmul w = *mm;
        w.dtype = ISA_DT_F32;
        w.a = c->wide, w.b = c->wide + (uint32_t)(m * k * 4);
        w.lda = (uint32_t)k, w.ldb = (uint32_t)n;
        RtMmSrc ws = {(const uint8_t *)A, (const uint8_t *)B, k, n, false, false, false, false, false, NULL, 0};
        mm_f32(c, &w, &ws);
        return;
    }
    mm_dlf16_buffer(c, mm, s);
}

/* Element range [*lo, *hi) of LX (in elements of es bytes) that the window B of mm
 * reads: each window dim adds its extent times its stride at the low or high end. */
void rt_mm_win_range(const SpyMatmul *mm, size_t es, int64_t *lo, int64_t *hi) {
    int64_t l = (int64_t)(mm->b / es), h = l;
    for (int d = 0; d < 3; d++) {
        int64_t span = (int64_t)(mm->bw_kext[d] - 1) * mm->bw_ks[d];
        *(span < 0 ? &l : &h) += span;
    }
    for (int d = 0; d < 2; d++) {
        int64_t span = (int64_t)(mm->bw_next[d] - 1) * mm->bw_ns[d];
        *(span < 0 ? &l : &h) += span;
    }
    *lo = l;
    *hi = h + 1;
}

/* A window MATMUL on DLF16 operands through the core's widening area: the LX element
 * ranges that A and the window B read are widened exactly to F32 there (separately
 * when they are disjoint, else their union: at most the LX budget in DLF16 elements
 * either way, which is what the area holds in F32), and the F32 window MATMUL runs on
 * them with the window's strides unchanged and C in place: the same products in the
 * same order as on the gathered dense copy (mm_win_dense), without one. */
static void mm_win_dlf16(RtCore *c, const SpyMatmul *mm) {
    int64_t blo, bhi, alo = (int64_t)(mm->a / 2);
    int64_t ahi = alo + (int64_t)(mm->m - 1) * mm->lda + mm->k;
    rt_mm_win_range(mm, 2, &blo, &bhi);
    uint8_t *w = c->lx + c->wide;
    SpyMatmul f = *mm;
    f.dtype = ISA_DT_F32;
    if (ahi <= blo || bhi <= alo) {      /* disjoint: A first, then the window */
        rt_dlf16_to_f32_n(w, c->lx + 2 * alo, (size_t)(ahi - alo));
        rt_dlf16_to_f32_n(w + 4 * (ahi - alo), c->lx + 2 * blo, (size_t)(bhi - blo));
        f.a = c->wide;
        f.b = c->wide + (uint32_t)(4 * (ahi - alo + (int64_t)(mm->b / 2) - blo));
    } else {
        int64_t lo = alo < blo ? alo : blo, hi = ahi > bhi ? ahi : bhi;
        rt_dlf16_to_f32_n(w, c->lx + 2 * lo, (size_t)(hi - lo));
        f.a = c->wide + (uint32_t)(4 * (alo - lo));
        f.b = c->wide + (uint32_t)(4 * ((int64_t)(mm->b / 2) - lo));
    }
    rt_matmul(c, &f);
}

/* Runs a verified MATMUL with A and B where s says (a window's B: in LX); true when
 * the kernel put C where s->epi says and ran its chain as well (the F32 vector
 * kernels), or C is empty; false: C is in LX. */
static bool mm_run(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s) {
    if (mm->m == 0 || mm->n == 0)
        return true;
    if (mm->flags & ISA_F_BWIN) {
#if RT_HAVE_X86_KERNELS
        if (mm->dtype == ISA_DT_F32 && mm->k > 0 &&
            (rt_mm_f32_512(c, mm, s) || rt_mm_f32_256(c, mm, s)))
            return true;
#endif
        if (mm->dtype == ISA_DT_DLF16 && c->wide && mm->k > 0)
            mm_win_dlf16(c, mm);
        else
            mm_win_dense(c, mm);
    } else if (mm->dtype == ISA_DT_DLF16)
        mm_dlf16(c, mm, s);
    else if (mm->dtype == ISA_DT_F32)
        return mm_f32(c, mm, s);
#if RT_HAVE_X86_KERNELS
    else if (rt_mm_i8_fast(c, mm, s))
        return false;
#endif
    else
        rt_mm_portable(c, mm, s);
    return false;
}

/* Executes a verified MATMUL with A and B where s says (a window's B: in LX); with an
 * epilogue s->epi, C goes to its DRAM and the chain runs over it, tile by tile in the
 * vector kernels, else here: C copied there from LX, then the chain over all of it. */
void rt_matmul_src(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s) {
    if (mm_run(c, mm, s) || !s->epi)
        return;
    for (uint32_t i = 0; i < mm->m; i++)     /* C to where the STORE would have put it */
        memcpy(s->epi->c + (int64_t)i * s->epi->crs, c->lx + mm->c + (size_t)i * mm->ldc * 4,
               (size_t)mm->n * 4);
    if (s->epi->tile)
        s->epi->tile(s->epi->ctx, 0, mm->m, 0, mm->n);
}

/* Whether rt_matmul_src runs the window MATMUL mm (ISA_F_BWIN) with A where its
 * RtMmSrc says (the F32 vector kernels: the conditions under which they take a window);
 * false: A must be in LX (the DLF16 and portable window paths read it there). */
bool rt_mm_win_takes_a(const RtCore *c, const SpyMatmul *mm) {
#if RT_HAVE_X86_KERNELS
    return mm->dtype == ISA_DT_F32 && mm->k > 0 && c->pack && mm->bw_ns[1] < (1 << 26) &&
           mm->bw_ns[1] > -(1 << 26) &&
           (rt_host_has(RT_HOST_AVX512) || rt_host_has(RT_HOST_AVX2_FMA));
#else
    (void)c, (void)mm;
    return false;
#endif
}

/* Whether rt_matmul_src takes mm's B transposed (RtMmSrc.bt): an F32 product, with a
 * packing buffer, on a host with a vector kernel. */
bool rt_mm_takes_bt(const RtCore *c, const SpyMatmul *mm) {
#if RT_HAVE_X86_KERNELS
    return mm->dtype == ISA_DT_F32 && c->pack &&
           (rt_host_has(RT_HOST_AVX512) || rt_host_has(RT_HOST_AVX2_FMA));
#else
    (void)c, (void)mm;
    return false;
#endif
}

/* Whether rt_matmul_src runs the MATMUL mm (not a window) with A and B packed, block by
 * block, into contiguous panels (the F32 vector kernels' large products): each of
 * their rows is then read once a block, wherever it lies, and a DRAM pitch that maps
 * every row to the same host cache sets costs nothing (rt_defer_operand). */
bool rt_mm_packs(const RtCore *c, const SpyMatmul *mm) {
#if RT_HAVE_X86_KERNELS
    if (mm->dtype != ISA_DT_F32 || (mm->flags & ISA_F_BWIN))
        return false;
    if (rt_host_has(RT_HOST_AVX512))
        return rt_mm_f32_512_packs(c, mm);
    return rt_mm_f32_256_packs(c, mm);
#else
    (void)c, (void)mm;
    return false;
#endif
}

/* Executes a verified MATMUL with its operands in LX. */
void rt_matmul(RtCore *c, const SpyMatmul *mm) {
    RtMmSrc s = {c->lx + mm->a, c->lx + mm->b, mm->lda, mm->ldb, false, false, false, false, false, NULL, 0};
    rt_matmul_src(c, mm, &s);
}
