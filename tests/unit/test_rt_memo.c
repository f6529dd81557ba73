/* test_rt_memo.c: reused input patches (runtime/rt_memo.c). A 3 x 3 convolution of a
 * 14 x 14 image, 256 channels in and out, is cut over the cores by output channels and
 * by parts of the image, so that several cores load each padded patch and different
 * cores load different ones: the load plans the patches reusable, and runs that skip
 * the loads of a patch LX already holds (1 and 2 threads) give the same bits as runs
 * that poison LX before every program (which never reuse one), for two different
 * inputs in a row (a patch is never carried from one run to the next), close to a
 * direct C convolution; likewise at stride 2, whose patch reaches past the window's
 * range. Reusing a patch of the other part of the image fails here. A
 * convolution from the caller's input buffer into its output buffer plans none.
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

enum { CI = 256, CO = 256, H = 14, W = 14, K = 3 };

static const IrOrigin O = {"n", "Test", NULL};

/* y = conv(pad(relu(x)), w), or conv(pad(x), w) without relu, pads 1 (a PAD the
 * convolution's patch takes in): the graph. The relu's kernel puts the convolution's
 * input in the arena: a patch read from a caller's buffer by a kernel that stores into
 * another is not reused (they may be one buffer). */
static IrGraph *build(IrDiag *diag, const float *w, bool relu, int64_t stride)
{
    IrGraph *g = ir_graph_new(diag);
    ValId x = ut_input(g, "x", IR_DT_F32, 4, (const int64_t[]){1, CI, H, W});
    ValId wv = ut_const(g, IR_DT_F32, 4, (const int64_t[]){CO, CI, K, K}, w);
    ValId h = relu ? ir_unary(g, IR_UN_RELU, x, &O) : x;   /* relu: from the arena */
    IrAttr pads = ir_attr_ints(g, "pads", (const int64_t[]){0, 0, 1, 1, 0, 0, 1, 1}, 8);
    NodeId p = ir_add_node(g, IR_OP_PAD, &h, 1, &pads, 1, &O);
    IrAttr st = ir_attr_ints(g, "strides", (const int64_t[]){stride, stride}, 2);
    NodeId n = ir_add_node(g, IR_OP_CONV, (const ValId[]){g->nodes[p].out[0], wv}, 2, &st, 1,
                           &O);
    ir_add_output(g, g->nodes[n].out[0]);
    return g;
}

/* Direct convolution of relu(x) with pads 1 and the given stride. */
static void reference(const float *x, const float *w, float *y, int st)
{
    int oh = (H - 1) / st + 1, ow = (W - 1) / st + 1;
    for (int o = 0; o < CO; o++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                double acc = 0;
                for (int c = 0; c < CI; c++)
                    for (int a = 0; a < K; a++)
                        for (int b = 0; b < K; b++) {
                            int r = i * st + a - 1, q = j * st + b - 1;
                            float v = r >= 0 && r < H && q >= 0 && q < W ? x[(c * H + r) * W + q]
                                                                         : 0.0f;
                            acc += (double)(v > 0 ? v : 0) * w[((o * CI + c) * K + a) * K + b];
                        }
                y[(o * oh + i) * ow + j] = (float)acc;
            }
}

/* Runs m on x1 then x2 with the session options so; outputs into y1, y2. */
static void run2(spy_model *m, const spy_session_options *so, const float *x1,
                 const float *x2, float *y1, float *y2)
{
    spy_session *s = NULL;
    assert_int_equal(spy_session_create(m, so, &s), SPY_OK);
    assert_int_equal(spy_session_run(s, (const void *[]){x1}, (void *[]){y1}), SPY_OK);
    assert_int_equal(spy_session_run(s, (const void *[]){x2}, (void *[]){y2}), SPY_OK);
    spy_session_free(s);
}

/* Instructions of m planned as the first of a reusable patch. */
static uint32_t patches(const spy_model *m)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->ncode; i++)
        n += m->prep[i].memo_len > 0;
    return n;
}

/* The graph of build(w, relu, stride) compiled and loaded; *buf: the bundle, which the
 * model reads in place (freed after it). */
static spy_model *load(const float *w, bool relu, int64_t stride, uint8_t **buf)
{
    IrDiag diag;
    ir_diag_init(&diag, "memo.ir");
    IrGraph *g = build(&diag, w, relu, stride);
    spy_model *m = ut_compile_load(g, buf);
    ir_graph_free(g);
    ir_diag_free(&diag);
    return m;
}

/* The patches of the convolution at the given stride are planned and reused: the bits
 * of poisoned runs, close to the reference. */
static void check_reuse(int stride)
{
    int64_t oh = (H - 1) / stride + 1, ow = (W - 1) / stride + 1;
    size_t nx = (size_t)CI * H * W, ny = (size_t)(CO * oh * ow), nw = (size_t)CO * CI * K * K;
    float *w = malloc(nw * 4), *x1 = malloc(nx * 4), *x2 = malloc(nx * 4);
    float *ref = malloc(ny * 4), *y[6];
    for (int i = 0; i < 6; i++)
        y[i] = malloc(ny * 4);
    ut_fill(w, (int64_t)nw, 0.05f, 0.0f);
    ut_fill(x1, (int64_t)nx, 1.0f, 0.0f);
    ut_fill(x2, (int64_t)nx, 0.5f, 0.25f);
    uint8_t *buf = NULL;
    spy_model *m = load(w, true, stride, &buf);
    assert_true(patches(m) >= 2);           /* the cores' common patch is planned */
    spy_session_options poison = {.num_threads = 2, .debug_lx_poison = 1};
    spy_session_options one = {.num_threads = 1}, two = {.num_threads = 2};
    run2(m, &poison, x1, x2, y[0], y[1]);
    run2(m, &one, x1, x2, y[2], y[3]);
    run2(m, &two, x1, x2, y[4], y[5]);
    for (int i = 2; i < 6; i++)
        assert_memory_equal(y[i], y[i % 2], ny * 4);
    reference(x2, w, ref, stride);
    ut_expect_close(y[5], ref, (int64_t)ny, 1e-3);
    spy_model_free(m);
    free(buf);
    for (int i = 0; i < 6; i++)
        free(y[i]);
    free(w), free(x1), free(x2), free(ref);
}

static void test_patch_reuse(void **state)
{
    (void)state;
    check_reuse(1);
}

/* Stride 2: the patch's VFILL and LOADs reach past the window's range (its last row
 * and column are read by no output pixel); the patch is still planned and reused. */
static void test_patch_reuse_stride2(void **state)
{
    (void)state;
    check_reuse(2);
}

/* The convolution reads the caller's input buffer and stores into the caller's output
 * buffer, which may be the same memory: no patch is planned reusable. */
static void test_caller_buffers(void **state)
{
    (void)state;
    size_t nw = (size_t)CO * CI * K * K;
    float *w = calloc(nw, 4);
    uint8_t *buf = NULL;
    spy_model *m = load(w, false, 1, &buf);
    assert_int_equal(patches(m), 0);
    spy_model_free(m);
    free(buf);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patch_reuse),
        cmocka_unit_test(test_patch_reuse_stride2),
        cmocka_unit_test(test_caller_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
