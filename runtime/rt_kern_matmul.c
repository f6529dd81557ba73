/* rt_kern_matmul.c: the ISA_MATMUL tile kernel (PT array), F32 and I8 -> I32, and the
 * choice of the F32 kernel for this host.
 *
 * F32 (isa.md): every C element accumulates its products in increasing k from 0 (or
 * from the old C with ACCUM), each step one fused multiply-add. The blocked vector
 * kernels (rt_kern_mmt.h: AVX-512F, else AVX2 + FMA, chosen at run time) and the
 * portable loop here (fmaf: correctly rounded everywhere, a single instruction on
 * hosts with FMA) compute exactly that, so results are the same bit for bit on every
 * host, whatever the blocking or the host thread.
 */
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

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

/* The portable MATMUL (either dtype pair): rows of C accumulate a_ik * (row k of B),
 * k increasing. */
void rt_mm_portable(RtCore *c, const SpyMatmul *mm) {
    bool f32 = mm->dtype == ISA_DT_F32;
    size_t es = f32 ? 4 : 1; /* operand element size; C's is 4 for both */
    for (uint32_t i = 0; i < mm->m; i++) {
        uint8_t *C = c->lx + mm->c + (size_t)i * mm->ldc * 4;
        if (!(mm->flags & ISA_F_ACCUM))
            memset(C, 0, (size_t)mm->n * 4); /* 0.0f and 0 alike */
        const uint8_t *A = c->lx + mm->a + (size_t)i * mm->lda * es;
        for (uint32_t k = 0; k < mm->k; k++) {
            const uint8_t *B = c->lx + mm->b + (size_t)k * mm->ldb * es;
            if (f32)
                row_f32((rt_f32 *)C, ((const rt_f32 *)A)[k], (const rt_f32 *)B, mm->n);
            else
                row_i8((rt_i32 *)C, ((const int8_t *)A)[k], (const int8_t *)B, mm->n);
        }
    }
}

/* Executes a verified MATMUL. */
void rt_matmul(RtCore *c, const SpyMatmul *mm) {
    if (mm->m == 0 || mm->n == 0)
        return;
#if RT_HAVE_X86_KERNELS
    if (mm->dtype == ISA_DT_F32 && (rt_mm_f32_512(c, mm) || rt_mm_f32_256(c, mm)))
        return;
#endif
    rt_mm_portable(c, mm);
}
