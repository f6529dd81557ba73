/* test_control.c: unit tests of compile-time control flow and sequences in the
 * decomposition (passes/decompose/onnx/onnx_control.c, onnx_sequence.c): If (constant
 * condition and predication), Loop (unrolling, scan outputs, runtime condition,
 * limits), Scan, nested bodies with captured values, sequence and optional operators,
 * and the errors for what cannot be resolved at compile time. Results are evaluated
 * node by node with ir_eval_node and compared with values computed by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "ir.h"
#include "pass.h"
#include "unit_util.h"

/* ---- fixture and helpers ---- */

static ValId c_i64(IrGraph *g, int64_t v) { return ut_const(g, IR_DT_I64, 0, NULL, &v); }

static ValId c_bool(IrGraph *g, bool v)
{
    uint8_t b = v;
    return ut_const(g, IR_DT_BOOL, 0, NULL, &b);
}

/* Foreign opset-17 ONNX node with one output; returns it. */
static ValId onnx_op(IrGraph *g, const char *op, const ValId *in, int nin, const IrAttr *a,
                     int na)
{
    return ut_onnx_op(g, op, 17, in, nin, a, na);
}

/* ---- If ---- */

/* An If over x, y (f32[3]) and condition cond: then x*y, else x-y (both capture). */
static void build_if(IrGraph *g, ValId cond, ValId x, ValId y)
{
    IrGraph *tb = ir_graph_new(g->diag), *eb = ir_graph_new(g->diag);
    ValId tin[2] = {ut_capture(tb, g, x), ut_capture(tb, g, y)};
    ir_add_output(tb, onnx_op(tb, "Mul", tin, 2, NULL, 0));
    ValId ein[2] = {ut_capture(eb, g, x), ut_capture(eb, g, y)};
    ir_add_output(eb, onnx_op(eb, "Sub", ein, 2, NULL, 0));
    IrAttr a[2] = {ut_graph_attr("then_branch", tb), ut_graph_attr("else_branch", eb)};
    ValId in[3] = {cond, x, y};
    ir_add_output(g, onnx_op(g, "If", in, 3, a, 2));
}

static void test_if_predicated(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d3[1] = {3};
    ValId c = ut_input(g, "c", IR_DT_BOOL, 0, NULL);
    ValId x = ut_input(g, "x", IR_DT_F32, 1, d3), y = ut_input(g, "y", IR_DT_F32, 1, d3);
    build_if(g, c, x, y);
    ut_decompose_ok(f);
    assert_int_equal(ut_count_op(g, IR_OP_SELECT), 1);
    ut_expect_shape(g, 0, 1, d3);
    float xv[3] = {1, 2, 3}, yv[3] = {4, 5, -6}, mul[3] = {4, 10, -18}, sub[3] = {-3, -3, 9};
    uint8_t t = 1, fl = 0;
    const void *in1[3] = {&t, xv, yv}, *in0[3] = {&fl, xv, yv};
    ut_expect_close(ut_run_graph(g, in1, 0), mul, 3, 1e-5);
    ut_expect_close(ut_run_graph(g, in0, 0), sub, 3, 1e-5);
}

static void test_if_constant(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d3[1] = {3};
    ValId x = ut_input(g, "x", IR_DT_F32, 1, d3), y = ut_input(g, "y", IR_DT_F32, 1, d3);
    build_if(g, c_bool(g, false), x, y);
    ut_decompose_ok(f);
    assert_int_equal(ut_count_op(g, IR_OP_SELECT), 0);
    assert_int_equal(ut_count_op(g, IR_OP_BINARY), 1);
    float xv[3] = {1, 2, 3}, yv[3] = {4, 5, -6}, sub[3] = {-3, -3, 9};
    const void *in[2] = {xv, yv};
    ut_expect_close(ut_run_graph(g, in, 0), sub, 3, 1e-5);
}

/* A branch ruled out by a constant condition may hold unknown operators. */
static void test_if_dead_branch(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d3[1] = {3};
    ValId x = ut_input(g, "x", IR_DT_F32, 1, d3);
    IrGraph *tb = ir_graph_new(g->diag), *eb = ir_graph_new(g->diag);
    ValId tx = ut_capture(tb, g, x), ex = ut_capture(eb, g, x);
    ir_add_output(tb, onnx_op(tb, "FrobnicateV3", &tx, 1, NULL, 0));
    ir_add_output(eb, onnx_op(eb, "Neg", &ex, 1, NULL, 0));
    IrAttr a[2] = {ut_graph_attr("then_branch", tb), ut_graph_attr("else_branch", eb)};
    ValId in[2] = {c_bool(g, false), x};
    ir_add_output(g, onnx_op(g, "If", in, 2, a, 2));
    ut_decompose_ok(f);
    float xv[3] = {1, -2, 3}, neg[3] = {-1, 2, -3};
    const void *inp[1] = {xv};
    ut_expect_close(ut_run_graph(g, inp, 0), neg, 3, 1e-5);
}

static void test_if_shape_mismatch(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d3[1] = {3}, d4[1] = {4};
    ValId c = ut_input(g, "c", IR_DT_BOOL, 0, NULL);
    ValId x = ut_input(g, "x", IR_DT_F32, 1, d3), z = ut_input(g, "z", IR_DT_F32, 1, d4);
    IrGraph *tb = ir_graph_new(g->diag), *eb = ir_graph_new(g->diag);
    ValId tx = ut_capture(tb, g, x), ez = ut_capture(eb, g, z);
    ir_add_output(tb, onnx_op(tb, "Identity", &tx, 1, NULL, 0));
    ir_add_output(eb, onnx_op(eb, "Identity", &ez, 1, NULL, 0));
    IrAttr a[2] = {ut_graph_attr("then_branch", tb), ut_graph_attr("else_branch", eb)};
    ValId in[3] = {c, x, z};
    ir_add_output(g, onnx_op(g, "If", in, 3, a, 2));
    ut_decompose_fails(f, "unsupported: If branches with different output shapes");
}

/* ---- Loop ---- */

/* Loop body (i, cond_in, acc_in) -> (cond_in, acc_in + w, (acc_in + w) * i), where w
 * is captured from g. */
static IrGraph *acc_body(IrGraph *g, ValId w)
{
    IrGraph *b = ir_graph_new(g->diag);
    int64_t d2[1] = {2};
    ValId i = ut_input(b, "i", IR_DT_I64, 0, NULL), cin = ut_input(b, "cin", IR_DT_BOOL, 0, NULL);
    ValId acc = ut_input(b, "acc_in", IR_DT_F32, 1, d2), wb = ut_capture(b, g, w);
    ValId add_in[2] = {acc, wb};
    ValId acc_out = onnx_op(b, "Add", add_in, 2, NULL, 0);
    IrAttr to = ir_attr_int("to", IR_DT_F32);
    ValId fi = onnx_op(b, "Cast", &i, 1, &to, 1);
    ValId mul_in[2] = {acc_out, fi};
    ir_add_output(b, onnx_op(b, "Identity", &cin, 1, NULL, 0));
    ir_add_output(b, acc_out);
    ir_add_output(b, onnx_op(b, "Mul", mul_in, 2, NULL, 0));
    return b;
}

static void test_loop_unrolled(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d2[1] = {2}, d42[2] = {4, 2};
    ValId a = ut_input(g, "a", IR_DT_F32, 1, d2), w = ut_input(g, "w", IR_DT_F32, 1, d2);
    IrAttr body = ut_graph_attr("body", acc_body(g, w));
    ValId in[4] = {c_i64(g, 4), c_bool(g, true), a, w};
    NodeId n = ut_onnx_node(g, "Loop", 16, in, 4, 2, &body, 1);
    ir_add_output(g, g->nodes[n].out[0]);
    ir_add_output(g, g->nodes[n].out[1]);
    ut_decompose_ok(f);
    ut_expect_shape(g, 1, 2, d42);
    float av[2] = {1, -1}, wv[2] = {0.5f, 2};
    const void *inp[2] = {av, wv};
    float fin[2] = {3, 7}, scans[8];
    for (int it = 0; it < 4; it++)
        for (int k = 0; k < 2; k++)
            scans[it * 2 + k] = (av[k] + (float)(it + 1) * wv[k]) * (float)it;
    ut_expect_close(ut_run_graph(g, inp, 0), fin, 2, 1e-5);
    ut_expect_close(ut_run_graph(g, inp, 1), scans, 8, 1e-5);
}

static void test_loop_dynamic_trip_count(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d2[1] = {2};
    ValId m = ut_input(g, "m", IR_DT_I64, 0, NULL);
    ValId a = ut_input(g, "a", IR_DT_F32, 1, d2), w = ut_input(g, "w", IR_DT_F32, 1, d2);
    IrAttr body = ut_graph_attr("body", acc_body(g, w));
    ValId in[4] = {m, c_bool(g, true), a, w};
    NodeId n = ut_onnx_node(g, "Loop", 16, in, 4, 2, &body, 1);
    ir_add_output(g, g->nodes[n].out[0]);
    ut_decompose_fails(f, "unsupported: dynamic trip count input 'm'");
}

static void test_loop_too_long(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d2[1] = {2};
    ValId a = ut_input(g, "a", IR_DT_F32, 1, d2), w = ut_input(g, "w", IR_DT_F32, 1, d2);
    IrAttr body = ut_graph_attr("body", acc_body(g, w));
    ValId in[4] = {c_i64(g, 100000), IR_NONE, a, w};
    NodeId n = ut_onnx_node(g, "Loop", 16, in, 4, 2, &body, 1);
    ir_add_output(g, g->nodes[n].out[0]);
    ut_decompose_fails(f, "unsupported: Loop of more than 4096 iterations");
}

/* while (sum(a) < 10 && trips < 5) a *= 2, with a runtime first condition: the
 * carried value is predicated. */
static void test_loop_runtime_condition(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d2[1] = {2};
    float two = 2, ten = 10;
    ValId c0 = ut_input(g, "c0", IR_DT_BOOL, 0, NULL), a = ut_input(g, "a", IR_DT_F32, 1, d2);
    IrGraph *b = ir_graph_new(g->diag);
    ut_input(b, "i", IR_DT_I64, 0, NULL);
    ut_input(b, "cin", IR_DT_BOOL, 0, NULL);
    ValId ain = ut_input(b, "a_in", IR_DT_F32, 1, d2);
    ValId mul_in[2] = {ain, ut_const(b, IR_DT_F32, 0, NULL, &two)};
    ValId aout = onnx_op(b, "Mul", mul_in, 2, NULL, 0);
    ValId s = onnx_op(b, "ReduceSum", &aout, 1, NULL, 0);
    ValId lt_in[2] = {s, ut_const(b, IR_DT_F32, 0, NULL, &ten)};
    ir_add_output(b, onnx_op(b, "Less", lt_in, 2, NULL, 0));
    ir_add_output(b, aout);
    IrAttr body = ut_graph_attr("body", b);
    ValId in[3] = {c_i64(g, 5), c0, a};
    ir_add_output(g, onnx_op(g, "Loop", in, 3, &body, 1));
    ut_decompose_ok(f);
    float av[2] = {0.1f, 0.2f}, doubled[2] = {3.2f, 6.4f};
    uint8_t t = 1, fl = 0;
    const void *in1[2] = {&t, av}, *in0[2] = {&fl, av};
    ut_expect_close(ut_run_graph(g, in1, 0), doubled, 2, 1e-5);
    ut_expect_close(ut_run_graph(g, in0, 0), av, 2, 1e-5);
}

/* A Loop whose body holds an If on the parity of the counter; both levels capture
 * w from the outer graph: acc + w - w + w. */
static void test_loop_nested_if(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d2[1] = {2}, two = 2, zero = 0;
    ValId a = ut_input(g, "a", IR_DT_F32, 1, d2), w = ut_input(g, "w", IR_DT_F32, 1, d2);
    IrGraph *b = ir_graph_new(g->diag);
    ValId i = ut_input(b, "i", IR_DT_I64, 0, NULL), cin = ut_input(b, "cin", IR_DT_BOOL, 0, NULL);
    ValId acc = ut_input(b, "acc_in", IR_DT_F32, 1, d2), wb = ut_capture(b, g, w);
    ValId mod_in[2] = {i, ut_const(b, IR_DT_I64, 0, NULL, &two)};
    ValId eq_in[2] = {onnx_op(b, "Mod", mod_in, 2, NULL, 0),
                      ut_const(b, IR_DT_I64, 0, NULL, &zero)};
    ValId even = onnx_op(b, "Equal", eq_in, 2, NULL, 0);
    IrGraph *tb = ir_graph_new(g->diag), *eb = ir_graph_new(g->diag);
    ValId tin[2] = {ut_capture(tb, b, acc), ut_capture(tb, b, wb)};
    ir_add_output(tb, onnx_op(tb, "Add", tin, 2, NULL, 0));
    ValId ein[2] = {ut_capture(eb, b, acc), ut_capture(eb, b, wb)};
    ir_add_output(eb, onnx_op(eb, "Sub", ein, 2, NULL, 0));
    IrAttr ia[2] = {ut_graph_attr("then_branch", tb), ut_graph_attr("else_branch", eb)};
    ValId if_in[3] = {even, acc, wb};
    ValId acc_out = onnx_op(b, "If", if_in, 3, ia, 2);
    ir_add_output(b, onnx_op(b, "Identity", &cin, 1, NULL, 0));
    ir_add_output(b, acc_out);
    IrAttr body = ut_graph_attr("body", b);
    ValId in[4] = {c_i64(g, 3), c_bool(g, true), a, w};
    ir_add_output(g, onnx_op(g, "Loop", in, 4, &body, 1));
    ut_decompose_ok(f);
    assert_int_equal(ut_count_op(g, IR_OP_SELECT), 0);
    float av[2] = {1, 2}, wv[2] = {10, 20}, want[2] = {11, 22};
    const void *inp[2] = {av, wv};
    ut_expect_close(ut_run_graph(g, inp, 0), want, 2, 1e-5);
}

/* An unknown operator inside a body is listed before anything is rewritten. */
static void test_unsupported_in_body(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d2[1] = {2};
    ValId a = ut_input(g, "a", IR_DT_F32, 1, d2);
    IrGraph *b = ir_graph_new(g->diag);
    ut_input(b, "i", IR_DT_I64, 0, NULL);
    ValId cin = ut_input(b, "cin", IR_DT_BOOL, 0, NULL);
    ValId ain = ut_input(b, "a_in", IR_DT_F32, 1, d2);
    ir_add_output(b, cin);
    ir_add_output(b, onnx_op(b, "FrobnicateV2", &ain, 1, NULL, 0));
    IrAttr body = ut_graph_attr("body", b);
    ValId in[3] = {c_i64(g, 2), IR_NONE, a};
    ir_add_output(g, onnx_op(g, "Loop", in, 3, &body, 1));
    ut_decompose_fails(f, "unsupported operator FrobnicateV2 (opset 17)");
    assert_int_equal(f->d.nerrors, 1);
}

/* ---- Scan ---- */

static void test_scan_reverse(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d2[1] = {2}, d32[2] = {3, 2}, dir[1] = {1};
    ValId s0 = ut_input(g, "s0", IR_DT_F32, 1, d2), x = ut_input(g, "x", IR_DT_F32, 2, d32);
    IrGraph *b = ir_graph_new(g->diag);
    ValId sin[2] = {ut_input(b, "s_in", IR_DT_F32, 1, d2), ut_input(b, "x_t", IR_DT_F32, 1, d2)};
    ValId sout = onnx_op(b, "Add", sin, 2, NULL, 0);
    ir_add_output(b, sout);
    ir_add_output(b, onnx_op(b, "Identity", &sout, 1, NULL, 0));
    IrAttr a[3] = {ut_graph_attr("body", b), ir_attr_int("num_scan_inputs", 1),
                   ir_attr_ints(g, "scan_input_directions", dir, 1)};
    ValId in[2] = {s0, x};
    NodeId n = ut_onnx_node(g, "Scan", 16, in, 2, 2, a, 3);
    ir_add_output(g, g->nodes[n].out[0]);
    ir_add_output(g, g->nodes[n].out[1]);
    ut_decompose_ok(f);
    ut_expect_shape(g, 1, 2, d32);
    float sv[2] = {0, 100}, xv[6] = {1, 2, 3, 4, 5, 6};
    /* reverse: rows 2, 1, 0 are added in turn; slice t of the output is step t */
    float fin[2] = {9, 112}, ys[6] = {5, 106, 8, 110, 9, 112};
    const void *inp[2] = {sv, xv};
    ut_expect_close(ut_run_graph(g, inp, 0), fin, 2, 1e-5);
    ut_expect_close(ut_run_graph(g, inp, 1), ys, 6, 1e-5);
}

/* ---- sequences and optionals ---- */

static void test_sequence_ops(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d23[2] = {2, 3}, d21[2] = {2, 1}, d321[3] = {3, 2, 1};
    ValId x = ut_input(g, "x", IR_DT_F32, 2, d23), y = ut_input(g, "y", IR_DT_F32, 2, d21);
    IrAttr ax1 = ir_attr_int("axis", 1);
    ValId seq = onnx_op(g, "SplitToSequence", &x, 1, &ax1, 1);        /* x0 x1 x2 */
    ValId ins_in[3] = {seq, y, c_i64(g, 0)};
    ValId s2 = onnx_op(g, "SequenceInsert", ins_in, 3, NULL, 0);       /* y x0 x1 x2 */
    ValId er_in[2] = {s2, c_i64(g, -1)};
    ValId s3 = onnx_op(g, "SequenceErase", er_in, 2, NULL, 0);         /* y x0 x1 */
    ValId at_in[2] = {s3, c_i64(g, 1)};
    IrAttr stack[2] = {ir_attr_int("axis", 0), ir_attr_int("new_axis", 1)};
    ir_add_output(g, onnx_op(g, "ConcatFromSequence", &s3, 1, &ax1, 1));
    ir_add_output(g, onnx_op(g, "SequenceAt", at_in, 2, NULL, 0));
    ir_add_output(g, onnx_op(g, "SequenceLength", &s3, 1, NULL, 0));
    ir_add_output(g, onnx_op(g, "ConcatFromSequence", &s3, 1, stack, 2));
    ut_decompose_ok(f);
    ut_expect_shape(g, 0, 2, d23);
    ut_expect_shape(g, 1, 2, d21);
    ut_expect_shape(g, 3, 3, d321);
    float xv[6] = {1, 2, 3, 4, 5, 6}, yv[2] = {-1, -2};
    float cat[6] = {-1, 1, 2, -2, 4, 5}, at[2] = {1, 4}, stk[6] = {-1, -2, 1, 4, 2, 5};
    const void *inp[2] = {xv, yv};
    ut_expect_close(ut_run_graph(g, inp, 0), cat, 6, 1e-5);
    ut_expect_close(ut_run_graph(g, inp, 1), at, 2, 1e-5);
    assert_int_equal(*(const int64_t *)ut_run_graph(g, inp, 2), 3);
    ut_expect_close(ut_run_graph(g, inp, 3), stk, 6, 1e-5);
}

static void test_sequence_errors(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d2[1] = {2};
    ValId x = ut_input(g, "x", IR_DT_F32, 1, d2), p = ut_input(g, "p", IR_DT_I64, 0, NULL);
    ValId seq = onnx_op(g, "SequenceConstruct", &x, 1, NULL, 0);
    ValId at5[2] = {seq, c_i64(g, 5)}, atp[2] = {seq, p};
    ir_add_output(g, onnx_op(g, "SequenceAt", at5, 2, NULL, 0));
    ir_add_output(g, onnx_op(g, "SequenceAt", atp, 2, NULL, 0));
    ir_add_output(g, onnx_op(g, "Relu", &seq, 1, NULL, 0));
    ir_add_output(g, seq);                 /* fine: one output per element (test_seqio) */
    assert_false(pass_decompose(g, &f->opt));
    const char *want[3] = {"position 5 is out of range for a sequence of 1 elements",
                           "unsupported: dynamic position input 'p'",
                           "is a sequence or an optional, which Relu does not take"};
    for (int k = 0; k < 3; k++)
        if (!ut_has_msg(&f->d, want[k]))
            fail_msg("no message contains '%s'", want[k]);
}

static void test_optional_ops(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d2[1] = {2};
    ValId x = ut_input(g, "x", IR_DT_F32, 1, d2);
    ValId none = IR_NONE;
    ValId opt = onnx_op(g, "Optional", &x, 1, NULL, 0);
    NodeId has = ut_onnx_node(g, "OptionalHasElement", 18, &none, 1, 1, NULL, 0);
    ir_add_output(g, g->nodes[has].out[0]);
    ir_add_output(g, onnx_op(g, "OptionalHasElement", &opt, 1, NULL, 0));
    ValId got = onnx_op(g, "OptionalGetElement", &opt, 1, NULL, 0);
    ir_add_output(g, onnx_op(g, "Neg", &got, 1, NULL, 0));
    ut_decompose_ok(f);
    assert_true(ir_is_const(g, g->outputs[0]));
    assert_true(ir_is_const(g, g->outputs[1]));
    float xv[2] = {1, -2}, neg[2] = {-1, 2};
    const void *inp[1] = {xv};
    assert_int_equal(*(const uint8_t *)ut_run_graph(g, inp, 0), 0);
    assert_int_equal(*(const uint8_t *)ut_run_graph(g, inp, 1), 1);
    ut_expect_close(ut_run_graph(g, inp, 2), neg, 2, 1e-5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_if_predicated, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_if_constant, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_if_dead_branch, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_if_shape_mismatch, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_loop_unrolled, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_loop_dynamic_trip_count, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_loop_too_long, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_loop_runtime_condition, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_loop_nested_if, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_in_body, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_scan_reverse, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_sequence_ops, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_sequence_errors, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_optional_ops, ut_setup, ut_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
