/* test_rt_stitch.c: matrix-product kernels whose programs run as a few large products
 * (runtime/rt_stitch.c).
 *
 * A graph of 1 x 1 convolutions (a bias and RELU; a bias, a residual and RELU; none)
 * and a linear layer, cut by spyrec over the 32 cores by output channels and by
 * pixels (or rows). Some kernels must be stitched; every item cut of them must take
 * each block exactly once; and runs at one, two and three threads, run after run,
 * must give the bits of a run that poisons LX before every program (which runs the
 * programs one by one, never stitched). With two programs' STOREs swapped in the bundle
 * (each block still written once, but not where its rows of A and columns of B say),
 * that kernel is no longer stitched, and runs still give the poisoned run's bits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ir.h"
#include "rt_exec.h"
#include "rt_model.h"
#include "spyrt.h"
#include "unit_util.h"

enum { C = 64, C2 = 128, C3 = 256, H = 28, W = 28, ROWS = 96, K = 256, N = 320, RUNS = 6 };
enum { NX = C * H * W, NZ = ROWS * K, NY2 = C * H * W, NY3 = C3 * H * W, NYM = ROWS * N };
enum { NW = C2 * C + C2 + C * C2 + C + C3 * C2 + K * N + N };  /* all weights */

static const IrOrigin O = {"n", "Test", NULL};

/* relu(conv(x, w) + b) with w of co x ci and b of co floats taken from *p. */
static ValId conv_bias(IrGraph *g, ValId x, int co, int ci, const float **p, bool relu,
                       ValId residual) {
    ValId w = ut_const(g, IR_DT_F32, 4, (const int64_t[]){co, ci, 1, 1}, *p);
    ValId b = ut_const(g, IR_DT_F32, 4, (const int64_t[]){1, co, 1, 1}, *p + co * ci);
    *p += co * ci + co;
    ValId y = ir_binary(g, IR_BIN_ADD, ut_conv(g, x, w, 0), b, &O);
    if (residual != IR_NONE)
        y = ir_binary(g, IR_BIN_ADD, y, residual, &O);
    return relu ? ir_unary(g, IR_UN_RELU, y, &O) : y;
}

/* Outputs: y2 = relu(conv(h1) + b + a) with h1 = relu(conv(a) + b), a = relu(x); y3 =
 * conv(h1) (no epilogue); ym = relu(z) wm + bm. Their operands in the arena or the
 * constants: a kernel that reads a caller's buffer and writes another is not stitched
 * (they may be one memory). */
static IrGraph *build(IrDiag *diag, const float *w) {
    IrGraph *g = ir_graph_new(diag);
    ValId x = ut_input(g, "x", IR_DT_F32, 4, (const int64_t[]){1, C, H, W});
    ValId z = ut_input(g, "z", IR_DT_F32, 2, (const int64_t[]){ROWS, K});
    const float *p = w;
    ValId a = ir_unary(g, IR_UN_RELU, x, &O);
    ValId h1 = conv_bias(g, a, C2, C, &p, true, IR_NONE);
    ValId y2 = conv_bias(g, h1, C, C2, &p, true, a);
    ir_add_output(g, y2);
    ValId w3 = ut_const(g, IR_DT_F32, 4, (const int64_t[]){C3, C2, 1, 1}, p);
    p += C3 * C2;
    ir_add_output(g, ut_conv(g, h1, w3, 0));
    ValId wm = ut_const(g, IR_DT_F32, 2, (const int64_t[]){K, N}, p);
    ValId bm = ut_const(g, IR_DT_F32, 1, (const int64_t[]){N}, p + K * N);
    ValId zr = ir_unary(g, IR_UN_RELU, z, &O);
    ir_add_output(g, ir_binary(g, IR_BIN_ADD, ir_matmul(g, zr, wm, &O), bm, &O));
    return g;
}

/* Runs m once in a new session with options so; outputs into y (y2, y3, ym). */
static void run(spy_model *m, const spy_session_options *so, const float *x, const float *z,
                float *y) {
    spy_session *s = NULL;
    assert_int_equal(spy_session_create(m, so, &s), SPY_OK);
    memset(y, 0xff, (size_t)(NY2 + NY3 + NYM) * 4);
    assert_int_equal(spy_session_run(s, (const void *[]){x, z},
                                     (void *[]){y, y + NY2, y + NY2 + NY3}), SPY_OK);
    spy_session_free(s);
}

/* The test's data and compiled bundle. */
typedef struct {
    float *w, *x, *z, *ref, *y;
    IrDiag diag;
    IrGraph *g;
    uint8_t *buf;
    size_t len;
} Fx;

/* Fills the weights and inputs, builds the graph and compiles it into f->buf. */
static void fx_begin(Fx *f) {
    size_t ny = (size_t)(NY2 + NY3 + NYM);
    f->w = malloc(NW * 4), f->x = malloc(NX * 4), f->z = malloc(NZ * 4);
    f->ref = malloc(ny * 4), f->y = malloc(ny * 4);
    assert_true(f->w && f->x && f->z && f->ref && f->y);
    ut_fill(f->w, NW, 0.2f, 0.0f);
    ut_fill(f->x, NX, 1.0f, 0.1f);
    ut_fill(f->z, NZ, 1.0f, -0.2f);
    ir_diag_init(&f->diag, "stitch.ir");
    f->g = build(&f->diag, f->w);
    f->buf = ut_compile(f->g, &f->len);
    assert_non_null(f->buf);
}

/* Loads f's bundle (as it is now). */
static spy_model *fx_load(const Fx *f) {
    spy_model *m = NULL;
    char err[512];
    assert_int_equal(spy_model_load_memory(f->buf, f->len, &m, err, sizeof err), SPY_OK);
    return m;
}

static void fx_end(Fx *f) {
    free(f->buf);
    ir_graph_free(f->g);
    ir_diag_free(&f->diag);
    free(f->w), free(f->x), free(f->z), free(f->ref), free(f->y);
}

/* Every item cut of stitched kernel st (want 1 to 9 items) takes each block once, in
 * rectangles of at most 128 rows of C (or one row of blocks), at least half as many
 * items as wanted where there are blocks enough, numbered column of items after column
 * of items (a thread taking items from the front gets whole columns of blocks: every
 * channel of its pixels). */
static void expect_cuts(const RtStitch *st) {
    uint32_t nblk = st->mb * st->nb;
    uint8_t *seen = malloc(nblk);
    assert_non_null(seen);
    for (uint32_t want = 1; want <= 9; want++) {
        memset(seen, 0, nblk);
        uint32_t n = rt_stitch_items(st, want);
        assert_true(n >= 1 && n <= nblk);
        RtStBox prev = {0, 0, 0, 0};
        for (uint32_t j = 0; j < n; j++) {
            RtStBox b;
            rt_stitch_box(st, want, j, &b);
            assert_true(b.r0 < b.r1 && b.r1 <= st->mb && b.c0 < b.c1 && b.c1 <= st->nb);
            if (j > 0)   /* the next row block of the same columns, or the next columns */
                assert_true((b.c0 == prev.c0 && b.r0 == prev.r1) ||
                            (b.c0 == prev.c1 && b.r0 == 0 && prev.r1 == st->mb));
            prev = b;
            assert_true(b.r1 - b.r0 == 1 || (b.r1 - b.r0) * st->mm.m <= 128);
            for (uint32_t r = b.r0; r < b.r1; r++)
                for (uint32_t c = b.c0; c < b.c1; c++)
                    seen[r * st->nb + c]++;
        }
        for (uint32_t q = 0; q < nblk; q++)
            assert_int_equal(seen[q], 1);
        assert_true(2 * n >= (want < nblk ? want : nblk));   /* a share for each thread */
    }
    free(seen);
}

static void test_stitch(void **state) {
    (void)state;
    size_t ny = (size_t)(NY2 + NY3 + NYM);
    Fx f;
    fx_begin(&f);
    spy_model *m = fx_load(&f);
    float *x = f.x, *z = f.z, *ref = f.ref, *y = f.y;

    uint32_t nst = 0, chains = 0;
    for (uint32_t k = 0; m->stitch && k < m->nkernels; k++) {
        const RtStitch *st = m->stitch[k];
        if (!st)
            continue;
        print_message("kernel %u: blocks of m%u n%u k%u, %u x %u, %d epilogue ops\n", k,
                      st->mm.m, st->mm.n, st->mm.k, st->mb, st->nb, st->npost);
        assert_int_equal(st->mb * st->nb, m->active_first[k + 1] - m->active_first[k]);
        expect_cuts(st);
        nst++;
        chains += st->npost > 0;
    }
    assert_true(!rt_stitch_host() || (nst >= 3 && chains >= 2));  /* something stitched */

    spy_session_options poison = {.num_threads = 2, .debug_lx_poison = 1};
    run(m, &poison, x, z, ref);
    for (int t = 1; t <= 3; t++) {
        spy_session_options so = {.num_threads = t};
        spy_session *s = NULL;
        assert_int_equal(spy_session_create(m, &so, &s), SPY_OK);
        for (int r = 0; r < RUNS; r++) {
            memset(y, 0xff, ny * 4);
            assert_int_equal(spy_session_run(s, (const void *[]){x, z},
                                             (void *[]){y, y + NY2, y + NY2 + NY3}),
                             SPY_OK);
            assert_memory_equal(y, ref, ny * 4);
        }
        spy_session_free(s);
    }
    run(m, &(spy_session_options){.num_threads = 1}, x, z, y);
    assert_memory_equal(y, ref, ny * 4);
    spy_model_free(m);
    fx_end(&f);
}

/* The STORE of program pd of m: its byte offset in m's file. */
static size_t store_at(const spy_model *m, const SpyProgramDesc *pd) {
    for (uint32_t i = 0; i < pd->ninsns; i++)
        if (m->code[pd->first_insn + i].opcode == ISA_STORE)
            return (size_t)((const uint8_t *)&m->code[pd->first_insn + i] - m->file);
    fail_msg("no STORE");
    return 0;
}

static void test_irregular(void **state) {
    (void)state;
    size_t ny = (size_t)(NY2 + NY3 + NYM);
    Fx f;
    fx_begin(&f);
    spy_model *m = fx_load(&f);
    uint32_t k = 0;
    while (m->stitch && k < m->nkernels && !m->stitch[k])
        k++;
    if (!m->stitch || k == m->nkernels) {     /* a host without the vector kernels */
        assert_false(rt_stitch_host());
        spy_model_free(m);
        fx_end(&f);
        return;
    }
    const SpyProgramDesc *p0 = &m->programs[m->kernels[k].first_program +
                                            m->active[m->active_first[k]]];
    const SpyProgramDesc *p1 = &m->programs[m->kernels[k].first_program +
                                            m->active[m->active_first[k] + 1]];
    size_t s0 = store_at(m, p0), s1 = store_at(m, p1);
    spy_model_free(m);
    SpyInsn a, b;                              /* the two STOREs' DRAM offsets swapped */
    memcpy(&a, f.buf + s0, sizeof a);
    memcpy(&b, f.buf + s1, sizeof b);
    assert_true(a.dma.dram_off != b.dma.dram_off);
    int64_t t = a.dma.dram_off;
    a.dma.dram_off = b.dma.dram_off, b.dma.dram_off = t;
    memcpy(f.buf + s0, &a, sizeof a);
    memcpy(f.buf + s1, &b, sizeof b);
    ut_fix_crcs(f.buf);
    m = fx_load(&f);
    assert_null(m->stitch[k]);
    run(m, &(spy_session_options){.num_threads = 2, .debug_lx_poison = 1}, f.x, f.z, f.ref);
    run(m, &(spy_session_options){.num_threads = 2}, f.x, f.z, f.y);
    assert_memory_equal(f.y, f.ref, ny * 4);
    spy_model_free(m);
    fx_end(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stitch),
        cmocka_unit_test(test_irregular),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
