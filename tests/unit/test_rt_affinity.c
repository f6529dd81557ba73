/* test_rt_affinity.c: the order in which host threads take a kernel's programs
 * (runtime/rt_affinity.c). A bottleneck block of 1 x 1, 3 x 3 and 1 x 1 convolutions
 * with a residual add, cut over the 32 cores by output channels and by pixels: in core
 * order some programs that LOAD the same activations are apart; in the order the load
 * chose, programs with the same non-constant LOADs are next to each other in every
 * kernel. The order is a permutation of each kernel's programs that keeps programs of
 * one input patch together, and the outputs at 1 and 2 threads are the bits of a run
 * that poisons LX before every program, close to a direct computation.
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

enum { C = 64, CM = 32, H = 28, W = 28 };

static const IrOrigin O = {"n", "Test", NULL};

/* y = relu(x + conv1(relu(conv3(relu(conv1(relu(x))))))), weights w1 [CM,C,1,1],
 * w3 [CM,CM,3,3], w2 [C,CM,1,1] (the first relu puts x in the arena). */
static IrGraph *build(IrDiag *diag, const float *w1, const float *w3, const float *w2) {
    IrGraph *g = ir_graph_new(diag);
    ValId x = ut_input(g, "x", IR_DT_F32, 4, (const int64_t[]){1, C, H, W});
    ValId a = ir_unary(g, IR_UN_RELU, x, &O);
    ValId v1 = ut_const(g, IR_DT_F32, 4, (const int64_t[]){CM, C, 1, 1}, w1);
    ValId v3 = ut_const(g, IR_DT_F32, 4, (const int64_t[]){CM, CM, 3, 3}, w3);
    ValId v2 = ut_const(g, IR_DT_F32, 4, (const int64_t[]){C, CM, 1, 1}, w2);
    ValId h = ir_unary(g, IR_UN_RELU, ut_conv(g, a, v1, 0), &O);
    h = ir_unary(g, IR_UN_RELU, ut_conv(g, h, v3, 1), &O);
    h = ut_conv(g, h, v2, 0);
    ir_add_output(g, ir_unary(g, IR_UN_RELU, ir_binary(g, IR_BIN_ADD, a, h, &O), &O));
    return g;
}

/* out[o] = relu(sum_c w[o, c] * in[c]) over ci channels, k x k taps with pads k / 2
 * (relu_out: else no relu). */
static void ref_conv(const float *in, const float *w, float *out, int ci, int co, int k,
                     bool relu_out) {
    for (int o = 0; o < co; o++)
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W; j++) {
                double s = 0;
                for (int c = 0; c < ci; c++)
                    for (int a = 0; a < k; a++)
                        for (int b = 0; b < k; b++) {
                            int r = i + a - k / 2, q = j + b - k / 2;
                            if (r >= 0 && r < H && q >= 0 && q < W)
                                s += (double)in[(c * H + r) * W + q] *
                                     w[((o * ci + c) * k + a) * k + b];
                        }
                out[(o * H + i) * W + j] = relu_out && s < 0 ? 0.0f : (float)s;
            }
}

/* The block computed directly. */
static void reference(const float *x, const float *w1, const float *w3, const float *w2,
                      float *y) {
    size_t n = (size_t)C * H * W;
    float *a = malloc(n * 4), *h1 = malloc(n * 4), *h3 = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        a[i] = x[i] > 0 ? x[i] : 0;
    ref_conv(a, w1, h1, C, CM, 1, true);
    ref_conv(h1, w3, h3, CM, CM, 3, true);
    ref_conv(h3, w2, y, CM, C, 1, false);
    for (size_t i = 0; i < n; i++)
        y[i] = a[i] + y[i] > 0 ? a[i] + y[i] : 0;
    free(a), free(h1), free(h3);
}

/* Runs m on x with the session options so into y. */
static void run(spy_model *m, const spy_session_options *so, const float *x, float *y) {
    spy_session *s = NULL;
    assert_int_equal(spy_session_create(m, so, &s), SPY_OK);
    assert_int_equal(spy_session_run(s, (const void *[]){x}, (void *[]){y}), SPY_OK);
    spy_session_free(s);
}

/* The memo id of the patch of program j of kernel k (0: none). */
static uint32_t patch_of(const spy_model *m, uint32_t k, uint32_t j) {
    const SpyProgramDesc *pd = &m->programs[m->kernels[k].first_program + j];
    for (uint32_t i = 0; i < pd->ninsns; i++)
        if (m->prep[pd->first_insn + i].memo_len)
            return m->prep[pd->first_insn + i].memo_id;
    return 0;
}

/* Every kernel's list holds each of its active programs once, and the programs of one
 * patch form one run. */
static void expect_permutation(const spy_model *m) {
    for (uint32_t k = 0; k < m->nkernels; k++) {
        uint32_t a0 = m->active_first[k], na = m->active_first[k + 1] - a0;
        uint8_t *seen = calloc(m->kernels[k].ncores + 1, 1);
        for (uint32_t q = 0; q < na; q++) {
            uint32_t j = m->active[a0 + q];
            assert_true(j < m->kernels[k].ncores && !seen[j]);
            seen[j] = 1;
            uint32_t id = patch_of(m, k, j);
            for (uint32_t r = q + 2; id && r < na; r++)   /* no gap inside a run */
                if (patch_of(m, k, m->active[a0 + r]) == id)
                    assert_int_equal(patch_of(m, k, m->active[a0 + r - 1]), id);
        }
        free(seen);
    }
}

/* Whether programs x and y of kernel k LOAD the same non-constant DRAM (the same
 * LOADs in the same order, whatever LX they fill). */
static bool same_reads(const spy_model *m, uint32_t k, uint32_t x, uint32_t y) {
    const SpyProgramDesc *p[2] = {&m->programs[m->kernels[k].first_program + x],
                                  &m->programs[m->kernels[k].first_program + y]};
    uint32_t i[2] = {0, 0};
    for (;;) {
        const SpyDma *d[2] = {NULL, NULL};
        for (int t = 0; t < 2; t++)
            for (; i[t] < p[t]->ninsns && !d[t]; i[t]++) {
                const SpyInsn *in = &m->code[p[t]->first_insn + i[t]];
                if (in->opcode == ISA_LOAD && m->segs[in->dma.seg].kind != SPY_SEGK_CONST)
                    d[t] = &in->dma;
            }
        if (!d[0] || !d[1])
            return !d[0] && !d[1];
        if (d[0]->seg != d[1]->seg || d[0]->dram_off != d[1]->dram_off ||
            memcmp(d[0]->dims, d[1]->dims, sizeof d[0]->dims) ||
            memcmp(d[0]->dram_stride, d[1]->dram_stride, sizeof d[0]->dram_stride))
            return false;
    }
}

/* Pairs of programs of the kernels' lists as they stand that LOAD the same
 * non-constant DRAM and are not next to each other (another program between them that
 * LOADs something else). */
static uint32_t apart(const spy_model *m) {
    uint32_t n = 0;
    for (uint32_t k = 0; k < m->nkernels; k++) {
        const uint32_t *a = m->active + m->active_first[k];
        uint32_t na = m->active_first[k + 1] - m->active_first[k];
        for (uint32_t q = 0; q < na; q++)
            for (uint32_t r = q + 2; r < na; r++)
                n += same_reads(m, k, a[q], a[r]) && !same_reads(m, k, a[q], a[r - 1]);
    }
    return n;
}

/* Puts every kernel's list in core order. */
static void core_order(spy_model *m) {
    for (uint32_t k = 0; k < m->nkernels; k++) {
        uint32_t *a = m->active + m->active_first[k], na = m->active_first[k + 1] -
                                                          m->active_first[k];
        for (uint32_t q = 1; q < na; q++)
            for (uint32_t r = q; r > 0 && a[r - 1] > a[r]; r--) {
                uint32_t t = a[r]; a[r] = a[r - 1]; a[r - 1] = t;
            }
    }
}

static void test_locality(void **state) {
    (void)state;
    size_t nx = (size_t)C * H * W;
    float *w1 = malloc(CM * C * 4), *w3 = malloc(CM * CM * 9 * 4), *w2 = malloc(C * CM * 4);
    float *x = malloc(nx * 4), *ref = malloc(nx * 4), *y[3];
    for (int i = 0; i < 3; i++)
        y[i] = malloc(nx * 4);
    ut_fill(w1, CM * C, 0.2f, 0.0f);
    ut_fill(w3, CM * CM * 9, 0.1f, 0.0f);
    ut_fill(w2, C * CM, 0.2f, 0.0f);
    ut_fill(x, (int64_t)nx, 1.0f, 0.1f);
    IrDiag diag;
    ir_diag_init(&diag, "affinity.ir");
    IrGraph *g = build(&diag, w1, w3, w2);
    uint8_t *buf = NULL;
    spy_model *m = ut_compile_load(g, &buf);
    expect_permutation(m);

    uint32_t chosen_apart = apart(m);
    uint32_t *chosen = malloc((m->active_first[m->nkernels] + 1) * sizeof *chosen);
    memcpy(chosen, m->active, m->active_first[m->nkernels] * sizeof *chosen);
    core_order(m);
    uint32_t core_apart = apart(m);
    print_message("programs with the same reads apart: %u in the load's order, %u in core "
                  "order\n", chosen_apart, core_apart);
    assert_int_equal(chosen_apart, 0);
    assert_true(core_apart > 0);               /* the case the order is for */
    memcpy(m->active, chosen, m->active_first[m->nkernels] * sizeof *chosen);

    spy_session_options poison = {.num_threads = 2, .debug_lx_poison = 1};
    spy_session_options one = {.num_threads = 1}, two = {.num_threads = 2};
    run(m, &poison, x, y[0]);
    run(m, &one, x, y[1]);
    run(m, &two, x, y[2]);
    assert_memory_equal(y[1], y[0], nx * 4);
    assert_memory_equal(y[2], y[0], nx * 4);
    reference(x, w1, w3, w2, ref);
    ut_expect_close(y[2], ref, (int64_t)nx, 1e-3);
    spy_model_free(m);
    free(buf);
    free(chosen);
    ir_graph_free(g);
    ir_diag_free(&diag);
    for (int i = 0; i < 3; i++)
        free(y[i]);
    free(w1), free(w3), free(w2), free(x), free(ref);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_locality),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
