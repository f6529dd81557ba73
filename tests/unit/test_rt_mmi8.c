/* test_rt_mmi8.c: the emulator's I8 -> I32 MATMUL (isa.md: int8 operands, exact int32
 * sums with wrap-around), called directly on a scratchpad: the kernel rt_matmul picks
 * on this host (the AVX-512/AVX2 one where there is one) and the portable loop against
 * a scalar reference, over shapes with column tails, odd depths, ACCUM, and extreme
 * operands (-128 x -128 pairs) and accumulators near the int32 limits (wrap-around).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_exec.h"

#define LX_BYTES (1u << 20)

/* Scalar reference: C[i][j] (+)= sum_k A[i][k] * B[k][j] modulo 2^32. */
static void ref_mm(int32_t *c, const int8_t *a, const int8_t *b, uint32_t m, uint32_t n,
                   uint32_t k, uint32_t lda, uint32_t ldb, uint32_t ldc, bool acc)
{
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            uint32_t s = acc ? (uint32_t)c[i * ldc + j] : 0;
            for (uint32_t q = 0; q < k; q++)
                s += (uint32_t)(a[i * lda + q] * b[q * ldb + j]);
            c[i * ldc + j] = (int32_t)s;
        }
}

/* One shape through rt_matmul (picked) and rt_mm_portable: both equal the reference. */
static void check(uint8_t *lx, uint32_t m, uint32_t n, uint32_t k, bool acc, uint32_t seed)
{
    uint32_t lda = k + 3, ldb = n + 1, ldc = n + 2;
    uint32_t a = 64, b = a + m * lda + 7, c = (b + k * ldb + 64) & ~3u;
    assert_true(c + 4 * m * ldc < LX_BYTES);
    for (int kind = 0; kind < 2; kind++) {
        uint32_t s = seed;
        for (uint32_t i = a; i < c + 4 * m * ldc; i++) {
            s = s * 1664525u + 1013904223u;
            lx[i] = (uint8_t)(s >> 24);
        }
        if (k > 1 && m > 0)
            lx[a] = lx[a + 1] = lx[b] = lx[b + ldb] = 0x80;      /* -128 * -128 twice */
        int32_t *ref = malloc(4 * (size_t)m * ldc + 4);
        memcpy(ref, lx + c, 4 * (size_t)m * ldc);
        if (m > 0 && acc)
            ref[0] = INT32_MAX, memcpy(lx + c, ref, 4);          /* wraps past the limit */
        ref_mm(ref, (const int8_t *)(lx + a), (const int8_t *)(lx + b), m, n, k, lda, ldb, ldc,
               acc);
        SpyMatmul mm = {.opcode = ISA_MATMUL, .dtype = ISA_DT_I8, .out_dtype = ISA_DT_I32,
                        .flags = acc ? ISA_F_ACCUM : 0, .a = a, .b = b, .c = c, .m = m, .n = n,
                        .k = k, .lda = lda, .ldb = ldb, .ldc = ldc};
        RtCore core = {.lx = lx};
        RtMmSrc src = {lx + a, lx + b, lda, ldb, false, false, false, false, false, NULL, 0};
        if (kind == 0)
            rt_matmul(&core, &mm);
        else
            rt_mm_portable(&core, &mm, &src);
        if (memcmp(ref, lx + c, 4 * (size_t)m * ldc) != 0)
            fail_msg("i8 matmul kernel %d m%u n%u k%u acc%d differs", kind, m, n, k, acc);
        free(ref);
    }
}

static void test_matmul_i8(void **state)
{
    (void)state;
    uint8_t *lx = calloc(LX_BYTES + 256, 1);
    assert_non_null(lx);
    static const uint32_t shapes[][3] = {{1, 1, 1}, {3, 17, 5}, {8, 16, 64}, {5, 33, 2},
                                         {9, 100, 255}, {2, 7, 1}, {16, 48, 768}, {4, 15, 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int acc = 0; acc < 2; acc++)
            check(lx, shapes[i][0], shapes[i][1], shapes[i][2], acc, (uint32_t)(7 * i + acc));
    free(lx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_matmul_i8)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
