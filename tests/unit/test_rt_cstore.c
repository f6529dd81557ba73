/* test_rt_cstore.c: a MATMUL whose C goes straight to DRAM (RT_PH_EPI) touches only
 * the floats of C.
 *
 * Other host threads write the floats beside a product's rows (spyrec divides C over
 * the cores by blocks of columns), so a kernel that stores the tail of a row by reading
 * a whole vector and writing it back can undo their stores: on AVX2 hosts resnet50's
 * logits were wrong about one run in 25. Here each row of C ends where an inaccessible
 * page begins: a kernel that reads or writes past a row's last float faults (the test
 * dies instead of passing), and the results must equal the isa.md sums bit for bit.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "rt_exec.h"

#define CS_PAGE 4096u
#define CS_LX_BYTES (1u << 20)

/* Deterministic pseudo-random float in [-2, 2). */
static float cs_rnd(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) % 4096) / 1024.0f - 2.0f;
}

/* m rows of C, row i ending at the end of page 2i; the odd pages inaccessible. */
typedef struct {
    uint8_t *map;
    size_t bytes;
    float *c;                /* row 0 */
} CsRows;

static bool cs_rows_map(CsRows *r, uint32_t m, uint32_t n) {
    r->bytes = (size_t)2 * m * CS_PAGE;
    r->map = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r->map == MAP_FAILED)
        return false;
    for (uint32_t i = 0; i < m; i++)
        if (mprotect(r->map + (size_t)(2 * i + 1) * CS_PAGE, CS_PAGE, PROT_NONE) != 0)
            return false;
    r->c = (float *)(void *)(r->map + CS_PAGE - 4 * (size_t)n);
    return true;
}

static float cs_at(const CsRows *r, uint32_t i, uint32_t j) {
    return r->c[(size_t)i * (2 * CS_PAGE / 4) + j];
}

/* What the epilogue's tile function does where a kernel does not run its post chain
 * in registers: bias[i] added to rows [r0, r0 + nr), columns [c0, c0 + nc) of C. */
typedef struct {
    float *c;
    const float *bias;
} CsTile;

static void cs_bias_tile(void *ctx, uint32_t r0, uint32_t nr, uint32_t c0, uint32_t nc) {
    const CsTile *t = ctx;
    for (uint32_t i = r0; i < r0 + nr; i++)
        for (uint32_t j = c0; j < c0 + nc; j++)
            t->c[(size_t)i * (2 * CS_PAGE / 4) + j] += t->bias[i];
}

/* C = A B with kernel kind (0: AVX-512, 1: AVX2) writing C to r, then plus bias[i] on
 * row i when bias (the epilogue a kernel runs on its tiles before it stores them);
 * false when this host has no such kernel or the kernel declined the product. */
static bool cs_run(int kind, RtCore *core, uint32_t m, uint32_t n, uint32_t k, CsRows *r,
                   const float *bias) {
    SpyMatmul mm = {.opcode = ISA_MATMUL, .dtype = ISA_DT_F32, .out_dtype = ISA_DT_F32,
                    .a = 0, .b = 4 * m * k, .c = 4 * (m * k + k * n), .m = m, .n = n, .k = k,
                    .lda = k, .ldb = n, .ldc = n};
    RtPost po = {.n = 1, .nreg = 1,
                 .op = {{ISA_VF_ADD, 0, RT_PO_SCALAR, RT_PR_ADD_S, 0.0f,
                         (const uint8_t *)bias, 4}}};
    CsTile t = {r->c, bias};
    RtEpi e = {bias ? cs_bias_tile : NULL, &t, (uint8_t *)r->c, 2 * CS_PAGE,
               bias ? &po : NULL};
    RtMmSrc s = {core->lx + mm.a, core->lx + mm.b, k, n, false, false, false, false, false,
                 &e, 0};
#if RT_HAVE_X86_KERNELS
    return kind == 0 ? rt_mm_f32_512(core, &mm, &s) : rt_mm_f32_256(core, &mm, &s);
#else
    (void)kind;
    (void)s;
    return false;
#endif
}

/* Row tails of every length, rows of 7 and 49 pixels (the channel-lane kernel), 196
 * (resnet50's stage 3), narrow and single-column products, depths short and long. */
static void test_cstore_row_ends(void **state) {
    (void)state;
    static const uint32_t shapes[][3] = {/* m, n, k */
                                         {64, 196, 64}, {128, 49, 64}, {16, 7, 576},
                                         {48, 13, 9},   {6, 1, 40},    {200, 3, 17},
                                         {9, 1021, 5},  {1, 50, 300},  {33, 23, 16},
                                         {24, 8, 8},    {7, 15, 100},  {256, 14, 27}};
    uint8_t *lx = calloc(CS_LX_BYTES + RT_LX_SLACK, 1);
    RtCore core = {.lx = lx, .pack = aligned_alloc(64, RT_PACK_BYTES + RT_PACK_SLACK)};
    assert_non_null(lx);
    assert_non_null(core.pack);
    uint32_t seed = 7;
    int ran = 0;
    for (unsigned q = 0; q < sizeof shapes / sizeof *shapes; q++) {
        uint32_t m = shapes[q][0], n = shapes[q][1], k = shapes[q][2];
        assert_true(4 * ((size_t)m * k + (size_t)k * n + (size_t)m * n) <= CS_LX_BYTES);
        float *a = (float *)(void *)lx, *b = a + (size_t)m * k, bias[256];
        assert_true(m <= 256);
        for (uint32_t i = 0; i < m; i++)
            bias[i] = cs_rnd(&seed);
        for (size_t i = 0; i < (size_t)m * k; i++)
            a[i] = cs_rnd(&seed);
        for (size_t i = 0; i < (size_t)k * n; i++)
            b[i] = cs_rnd(&seed);
        for (int kind = 0; kind < 4; kind++) {   /* 2, 3: with the bias epilogue */
            CsRows r = {0};
            assert_true(cs_rows_map(&r, m, n));
            bool done = cs_run(kind % 2, &core, m, n, k, &r, kind >= 2 ? bias : NULL);
            for (uint32_t i = 0; done && i < m; i++)
                for (uint32_t j = 0; j < n; j++) {
                    float want = 0.0f;
                    for (uint32_t p = 0; p < k; p++)
                        want = fmaf(a[(size_t)i * k + p], b[(size_t)p * n + j], want);
                    want = kind >= 2 ? want + bias[i] : want;
                    if (memcmp(&want, &(float){cs_at(&r, i, j)}, 4) != 0)
                        fail_msg("kernel %d m%u n%u k%u: C(%u, %u) = %a, want %a", kind, m,
                                 n, k, i, j, cs_at(&r, i, j), want);
                }
            ran += done;
            munmap(r.map, r.bytes);
        }
    }
    if (rt_host_has(RT_HOST_AVX2_FMA))   /* else nothing here could be checked */
        assert_true(ran >= 2 * (int)(sizeof shapes / sizeof *shapes));
    free(lx);
    free(core.pack);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cstore_row_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
