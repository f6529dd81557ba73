/* test_rt_acache.c: a MATMUL's A packed once per host thread (runtime/rt_acache.c).
 *
 * On one core, programs like a kernel's cores (each: the same A of m x k from DRAM
 * times its own columns of a wide B, stored) run one after another after
 * rt_acache_entry with the kernel's STOREs, for products that take each packing path
 * (fewer rows than the packed blocks, with k in blocks of the in-place path; more,
 * in blocks of the packed one): the cache is filled at the second program and the
 * stores are the bits of the same programs run with no cache. When a program's STORE
 * writes into A (listed among the kernel's writes) the next programs read the new A,
 * not the stale packing. rt_acache_stable against a write that overlaps, one that does
 * not, and an unknown one (a SCATTER).
 *
 * Through a session, a compiled [128 x 768] x [768 x 1536] product whose cores share A
 * (a relu's result in the arena): 1 and 2 threads give the bits of a poisoned run
 * (which reuses nothing), close to a direct C product.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ir.h"
#include "rt_exec.h"
#include "rt_model.h"
#include "spyrt.h"
#include "unit_util.h"

#define LX_BYTES (1u << 20)
#define DRAM_BYTES (4u << 20)
#define NPROG 4
#define BOFF 0x100000u    /* DRAM byte offset of the wide B */
#define OUT 0x300000u     /* DRAM byte offset of the programs' results */

static uint8_t *lx, *dram, *ref;
static uint8_t *segs[1];
static RtCore core;
static float *acache;

static int setup(void **state) {
    (void)state;
    lx = calloc(LX_BYTES + RT_LX_SLACK, 1);
    dram = malloc(DRAM_BYTES);
    ref = malloc(DRAM_BYTES);
    acache = aligned_alloc(64, RT_ACACHE_BYTES + RT_PACK_SLACK);
    segs[0] = dram;
    core = (RtCore){.lx = lx, .seg = segs,
                    .pack = aligned_alloc(64, RT_PACK_BYTES + RT_PACK_SLACK)};
    return lx && dram && ref && acache && core.pack ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    free(lx), free(dram), free(ref), free(acache), free(core.pack);
    return 0;
}

/* A LOAD or STORE of d0 x d1 floats, DRAM row stride ds, LX row stride d1. */
static SpyInsn dma(bool store, uint32_t lxo, int64_t off, uint32_t d0, uint32_t d1, int32_t ds) {
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyDma x = {.opcode = store ? ISA_STORE : ISA_LOAD, .esize = 4, .ndim = 2, .lx = lxo,
                .dram_off = off};
    for (int i = 0; i < ISA_MAX_DIMS; i++)
        x.dims[i] = 1;
    x.dims[0] = d0, x.dims[1] = d1;
    x.dram_stride[0] = ds, x.dram_stride[1] = 1;
    x.lx_stride[0] = (int32_t)d1, x.lx_stride[1] = 1;
    in.dma = x;
    return in;
}

/* Program j of a kernel: A (m x k at DRAM 0) times columns [j n, j n + n) of B (k rows
 * of NPROG n + 8 floats at BOFF), C stored at OUT + j m n floats, or (clobber) over
 * the first rows of A. */
static uint32_t prog(SpyInsn *p, uint32_t j, uint32_t m, uint32_t n, uint32_t k, bool clobber) {
    int32_t ldw = (int32_t)(NPROG * n + 8);
    p[0] = dma(false, 0, 0, m, k, (int32_t)k);
    p[1] = dma(false, 0x40000, BOFF + 4 * (int64_t)j * n, k, n, ldw);
    memset(&p[2], 0, sizeof p[2]);
    p[2].mm = (SpyMatmul){.opcode = ISA_MATMUL, .dtype = ISA_DT_F32,
                          .out_dtype = ISA_DT_F32, .a = 0, .b = 0x40000, .c = 0xc0000,
                          .m = m, .n = n, .k = k, .lda = k, .ldb = n, .ldc = n};
    p[3] = dma(true, 0xc0000, clobber ? 0 : OUT + 4 * (int64_t)j * m * n, m, n, (int32_t)n);
    return 4;
}

/* Small floats whose products round (an exact sum would hide a change of order). */
static void fill(uint8_t *d) {
    uint32_t seed = 12345;
    for (uint32_t i = 0; i < DRAM_BYTES / 4; i++) {
        seed = seed * 1664525u + 1013904223u;
        float f = (float)((seed >> 8) % 8192) / 1024.0f - 4.0f + 1.0f / 3.0f;
        memcpy(d + 4 * i, &f, 4);
    }
}

/* Runs the NPROG programs (program 1 clobbering A when asked) on core with the cache
 * (or none), the kernel's writes listed, from the filled DRAM; true when the cache
 * held A's packing after the second program. */
static bool run(uint32_t m, uint32_t n, uint32_t k, bool clobber, bool cached) {
    SpyInsn p[NPROG][4];
    RtWrite wr[NPROG];
    for (uint32_t j = 0; j < NPROG; j++) {
        prog(p[j], j, m, n, k, clobber && j == 1);
        wr[j] = (RtWrite){0, 0, 0};
        rt_dma_span(&p[j][3].dma, false, &wr[j].lo, &wr[j].hi);
        wr[j].lo += p[j][3].dma.dram_off, wr[j].hi += p[j][3].dma.dram_off;
    }
    fill(dram);
    core.acache = cached ? acache : NULL;
    rt_acache_entry(&core, wr, NPROG);
    bool held = false;
    for (uint32_t j = 0; j < NPROG; j++) {
        memset(lx, 0xff, LX_BYTES);
        assert_int_equal(rt_exec_program(&core, p[j], 4), RT_XOK);
        if (j == 1)
            held = core.akey.a == dram;
    }
    return held;
}

static void test_programs_share_a(void **state) {
    (void)state;
    const uint32_t shape[][3] = {{40, 48, 300}, {40, 37, 200}, {100, 48, 600}, {100, 20, 90}};
    for (int i = 0; i < 4; i++) {
        uint32_t m = shape[i][0], n = shape[i][1], k = shape[i][2];
        run(m, n, k, false, false);
        memcpy(ref, dram, DRAM_BYTES);
        assert_true(run(m, n, k, false, true));      /* filled at the second program */
        assert_memory_equal(dram, ref, DRAM_BYTES);
    }
}

static void test_store_into_a(void **state) {
    (void)state;
    const uint32_t shape[][3] = {{40, 48, 300}, {100, 48, 600}};
    for (int i = 0; i < 2; i++) {
        uint32_t m = shape[i][0], n = shape[i][1], k = shape[i][2];
        run(m, n, k, true, false);
        memcpy(ref, dram, DRAM_BYTES);
        assert_false(run(m, n, k, true, true));      /* A is written: never cached */
        assert_memory_equal(dram, ref, DRAM_BYTES);
    }
}

static void test_stable(void **state) {
    (void)state;
    core.acache = acache;
    RtWrite w[2] = {{0, 4096, 8192}, {0, 0, 0}};
    rt_acache_entry(&core, w, 1);
    assert_true(rt_acache_stable(&core, dram, 4096));
    assert_false(rt_acache_stable(&core, dram + 4000, 200));
    assert_true(rt_acache_stable(&core, dram + 8192, 100));
    w[1] = (RtWrite){RT_WRITES_ANY, 0, 0};
    rt_acache_entry(&core, w, 2);
    assert_false(rt_acache_stable(&core, dram, 4096));
    rt_acache_entry(&core, NULL, 0);                 /* writes not listed */
    assert_false(rt_acache_stable(&core, dram, 4096));
}

enum { M = 128, K = 768, N = 1536 };
static const IrOrigin O = {"n", "Test", NULL};

/* y = relu(x) w through a session (the relu puts A in the arena). */
static void test_session(void **state) {
    (void)state;
    float *x = malloc((size_t)M * K * 4), *w = malloc((size_t)K * N * 4);
    float *want = malloc((size_t)M * N * 4), *y[3];
    for (int i = 0; i < 3; i++)
        y[i] = malloc((size_t)M * N * 4);
    ut_fill(x, (int64_t)M * K, 1.0f, 0.1f);
    ut_fill(w, (int64_t)K * N, 0.05f, 0.0f);
    IrDiag diag;
    ir_diag_init(&diag, "acache.ir");
    IrGraph *g = ir_graph_new(&diag);
    ValId xv = ut_input(g, "x", IR_DT_F32, 2, (const int64_t[]){M, K});
    ValId wv = ut_const(g, IR_DT_F32, 2, (const int64_t[]){K, N}, w);
    ValId h = ir_unary(g, IR_UN_RELU, xv, &O);
    NodeId mmn = ir_add_node(g, IR_OP_MATMUL, (const ValId[]){h, wv}, 2, NULL, 0, &O);
    ir_add_output(g, g->nodes[mmn].out[0]);
    uint8_t *buf = NULL;
    spy_model *m = ut_compile_load(g, &buf);
    const spy_session_options so[3] = {{.num_threads = 2, .debug_lx_poison = 1},
                                       {.num_threads = 1}, {.num_threads = 2}};
    for (int i = 0; i < 3; i++) {
        spy_session *s = NULL;
        assert_int_equal(spy_session_create(m, &so[i], &s), SPY_OK);
        assert_int_equal(spy_session_run(s, (const void *[]){x}, (void *[]){y[i]}), SPY_OK);
        spy_session_free(s);
    }
    assert_memory_equal(y[1], y[0], (size_t)M * N * 4);
    assert_memory_equal(y[2], y[0], (size_t)M * N * 4);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int q = 0; q < K; q++)
                s += (double)(x[i * K + q] > 0 ? x[i * K + q] : 0) * w[(size_t)q * N + j];
            want[i * N + j] = (float)s;
        }
    ut_expect_close(y[2], want, (int64_t)M * N, 1e-3);
    spy_model_free(m);
    free(buf);
    ir_graph_free(g);
    ir_diag_free(&diag);
    for (int i = 0; i < 3; i++)
        free(y[i]);
    free(x), free(w), free(want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_programs_share_a),
        cmocka_unit_test(test_store_into_a),
        cmocka_unit_test(test_stable),
        cmocka_unit_test(test_session),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
