/* test_scale.c: graphs with many nodes compile (plan verified after every pass) and run
 * correctly on the emulator. Functional only: how long they take is measured by the
 * benchmarks, not here.
 *
 *  - a chain of 20,000 alternating relu/sigmoid nodes on a 4-element tensor: one fused
 *    kernel whose tile program has 20,000 steps;
 *  - 1,000 ONNX Relu/Sigmoid nodes of one input, each a graph output (half of them
 *    equal to another: CSE keeps them apart), through the decomposition: every output
 *    keeps its name and its value.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit_util.h"

static const IrOrigin O = {"chain", "test", NULL};

/* Host reference of one step: relu on even steps, sigmoid on odd ones. */
static float step_ref(uint32_t i, float x)
{
    return i % 2 == 0 ? (x > 0 ? x : 0) : 1.0f / (1.0f + expf(-x));
}

/* 20,000 alternating relu/sigmoid nodes: compiled, run, compared with the host. */
static void test_long_chain(void **state)
{
    UtFx *f = *state;
    enum { N = 20000 };
    float x[4] = {-2.0f, -0.25f, 0.5f, 3.0f}, got[4], want[4];
    IrType t = ut_vec(IR_DT_F32, 4);
    ValId v = ir_add_input(f->g, "x", &t);
    for (uint32_t i = 0; i < N; i++)
        v = ir_unary(f->g, i % 2 == 0 ? IR_UN_RELU : IR_UN_SIGMOID, v, &O);
    ir_add_output(f->g, v);
    for (int e = 0; e < 4; e++) {
        want[e] = x[e];
        for (uint32_t i = 0; i < N; i++)
            want[e] = step_ref(i, want[e]);
    }
    const void *in[1] = {x};
    void *out[1] = {got};
    char err[256];
    assert_int_equal(ut_compile_run(f->g, in, out, err, sizeof err), SPY_OK);
    ut_expect_close(got, want, 4, 1e-5);
}

/* 1,000 graph outputs of foreign nodes: names and values survive decomposition, CSE
 * (node i and node i + 2 compute the same) and the bundle's tensor table. */
static void test_many_outputs(void **state)
{
    UtFx *f = *state;
    enum { N = 1000 };
    float x[4] = {-1.5f, -0.5f, 0.25f, 2.0f};
    static float got[N][4];
    static void *outs[N];
    static const char *names[N];
    int64_t d[1] = {4};
    ValId in = ut_input(f->g, "x", IR_DT_F32, 1, d);
    for (uint32_t i = 0; i < N; i++) {
        ValId y = ut_onnx_op(f->g, i % 2 == 0 ? "Relu" : "Sigmoid", 17, &in, 1, NULL, 0);
        ir_add_output(f->g, y);
        names[i] = ir_val(f->g, y)->name;
        outs[i] = got[i];
    }
    const void *inputs[1] = {x};
    char err[256];
    assert_int_equal(ut_compile_run(f->g, inputs, outs, err, sizeof err), SPY_OK);
    for (uint32_t i = 0; i < N; i++) {
        assert_string_equal(ir_val(f->g, f->g->outputs[i])->name, names[i]);
        float want[4];
        for (int e = 0; e < 4; e++)
            want[e] = step_ref(i, x[e]);
        ut_expect_close(got[i], want, 4, 1e-5);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_long_chain, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_many_outputs, ut_setup, ut_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
