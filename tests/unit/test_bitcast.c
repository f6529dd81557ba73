/* test_bitcast.c: unit tests of the core BITCAST op: shape inference and its refusals,
 * reference evaluation, text form, the ONNX BitCast decomposition onto it (and through
 * integers for bool / uint16), and whole graphs compiled with the full pipeline and run
 * on the emulator: a bitcast between two kernels is a view of its input's storage (no
 * kernel of its own), one that is a graph output is a copy, and float64 is refused
 * with a message saying why.
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

#include "codegen/cg.h"
#include "frontend/fe.h"
#include "ir.h"
#include "passes/plan/plan.h"
#include "passes/pass.h"
#include "rt_exec.h"
#include "spyrt.h"
#include "unit_util.h"

static const IrOrigin O = {"n", "Test", NULL};

/* Core BITCAST of a to dtype t; returns the node (outputs UNDEF when refused). */
static NodeId bitcast(IrGraph *g, ValId a, IrDType t)
{
    IrAttr at = ir_attr_int("to", t);
    return ir_add_node(g, IR_OP_BITCAST, &a, 1, &at, 1, &O);
}

/* Output value of a core BITCAST of a to t. */
static ValId bitcast_v(IrGraph *g, ValId a, IrDType t)
{
    NodeId n = bitcast(g, a, t);
    return g->nodes[n].out[0];
}

/* ---- IR level ----------------------------------------------------------------------- */

/* Same shape, new dtype; refused between different sizes and for bool / sub-byte. */
static void test_infer(void **st)
{
    (void)st;
    UtFx f;
    ut_fx_begin(&f);
    IrType t = {.dtype = IR_DT_F32, .rank = 3, .dims = {2, 1, 5}};
    ValId x = ir_add_input(f.g, "x", &t);
    NodeId n = bitcast(f.g, x, IR_DT_U32);
    const IrType *o = ir_vtype(f.g, f.g->nodes[n].out[0]);
    assert_int_equal(o->dtype, IR_DT_U32);
    assert_int_equal(o->rank, 3);
    assert_int_equal(o->dims[2], 5);
    assert_false(ir_failed(f.g));
    bitcast(f.g, x, IR_DT_F16);
    assert_true(ut_has_msg(&f.d, "element sizes differ"));
    ut_fx_end(&f);

    ut_fx_begin(&f);
    IrType tb = ut_vec(IR_DT_U8, 4);
    bitcast(f.g, ir_add_input(f.g, "b", &tb), IR_DT_BOOL);
    assert_true(ut_has_msg(&f.d, "cannot bitcast u8 to bool"));
    ut_fx_end(&f);
}

/* ir_eval_node copies the bytes; a bitcast of constants folds when building. */
static void test_eval_and_fold(void **st)
{
    (void)st;
    UtFx f;
    ut_fx_begin(&f);
    float v[3] = {1.0f, -2.5f, 3.75f};
    int32_t want[3] = {1065353216, -1071644672, 1081081856};
    IrType t = ut_vec(IR_DT_F32, 3);
    ValId x = ir_add_input(f.g, "x", &t);
    NodeId n = bitcast(f.g, x, IR_DT_I32);
    const void *in[1] = {v};
    void *out[1] = {NULL};
    assert_true(ir_eval_node(f.g, &f.g->nodes[n], in, out));
    assert_memory_equal(out[0], want, sizeof want);

    f.g->fold_consts = true;
    ValId c = ir_add_const(f.g, "c", &t, v);
    NodeId m = bitcast(f.g, c, IR_DT_I32);
    const IrValue *r = ir_val(f.g, f.g->nodes[m].out[0]);
    assert_int_equal(r->kind, IR_VAL_CONST);
    assert_int_equal(r->type.dtype, IR_DT_I32);
    assert_memory_equal(r->data, want, sizeof want);
    ut_fx_end(&f);
}

/* The text form names the target dtype and parses back. */
static void test_text_roundtrip(void **st)
{
    (void)st;
    static const char *src = "graph \"t\" {\n"
                             "  input %x: f16[2,3]\n"
                             "  %y: i16[2,3] = bitcast(%x) {to=i16}\n"
                             "  output %y\n"
                             "}\n";
    IrDiag d;
    ir_diag_init(&d, "t.ir");
    IrGraph *g = ir_parse(src, &d);
    assert_non_null(g);
    assert_false(ir_failed(g));
    char *buf = ut_print_str(g);
    assert_non_null(strstr(buf, "bitcast(%x) {to=i16}"));
    free(buf);
    ir_graph_free(g);
    ir_diag_free(&d);
}

/* ---- ONNX BitCast decomposition ----------------------------------------------------- */

/* Decompose a graph of one BitCast (x: n elements of dtype `from`) to `to`. */
static bool decompose_bitcast(UtFx *f, IrDType from, IrDType to, int64_t n)
{
    IrType t = ut_vec(from, n);
    ValId x = ir_add_input(f->g, "x", &t);
    IrForeign fr = {.op_type = "BitCast", .domain = "", .opset = 26};
    IrOrigin o = {.name = "bc", .op_type = "BitCast"};
    IrAttr a = ir_attr_int("to", to);
    NodeId id = ir_add_foreign(f->g, &fr, &x, 1, 1, &a, 1, &o);
    ir_add_output(f->g, f->g->nodes[id].out[0]);
    return pass_decompose(f->g, &f->opt);
}

/* float <-> int of one device width is one BITCAST; bool and uint16 go through
 * integers; different widths are refused. */
static void test_decompose(void **st)
{
    (void)st;
    UtFx f;
    ut_fx_begin(&f);
    assert_true(decompose_bitcast(&f, IR_DT_F32, IR_DT_U32, 4));
    assert_int_equal(ut_count_op(f.g, IR_OP_BITCAST), 1);
    ut_fx_end(&f);

    ut_fx_begin(&f);
    assert_true(decompose_bitcast(&f, IR_DT_F16, IR_DT_U16, 4));
    assert_int_equal(ut_count_op(f.g, IR_OP_BITCAST), 1);  /* f16 -> i16, then modular */
    assert_int_equal(ut_count_op(f.g, IR_OP_SELECT), 1);
    ut_fx_end(&f);

    ut_fx_begin(&f);
    assert_true(decompose_bitcast(&f, IR_DT_BOOL, IR_DT_I8, 4));
    assert_int_equal(ut_count_op(f.g, IR_OP_CAST), 1);     /* bool -> u8 0/1 */
    assert_int_equal(ut_count_op(f.g, IR_OP_BITCAST), 1);  /* u8 -> i8 */
    ut_fx_end(&f);

    ut_fx_begin(&f);
    assert_false(decompose_bitcast(&f, IR_DT_F32, IR_DT_I64, 4));
    assert_true(ut_has_msg(&f.d, "same bit width"));
    ut_fx_end(&f);
}

/* ---- whole graphs on the emulator --------------------------------------------------- */

/* Compile and run g (which must compile and run); outputs into outs. */
static void run(IrGraph *g, const void *const *inputs, void *const *outs)
{
    char err[256];
    spy_status rs = ut_compile_run(g, inputs, outs, err, sizeof err);
    if (rs != SPY_OK)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rs, SPY_OK);
}

/* |2x| through the sign bit: mul, bitcast to int32, clear bit 31, bitcast back, add 0.
 * The bitcasts between kernels alias their input's storage. */
static void test_graph_view(void **st)
{
    (void)st;
    enum { N = 1000 };
    UtFx f;
    ut_fx_begin(&f);
    static float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(i - 500) * 0.37f;
    IrType t = ut_vec(IR_DT_F32, N);
    ValId a = ir_add_input(f.g, "x", &t);
    ValId two = ir_const_scalar_f32(f.g, 2.0f);
    ValId p = ir_binary(f.g, IR_BIN_MUL, a, two, &O);
    ValId bi = bitcast_v(f.g, p, IR_DT_I32);
    int32_t mask = INT32_MAX;
    IrType ts = {.dtype = IR_DT_I32, .rank = 0};
    ValId m = ir_binary(f.g, IR_BIN_AND, bi, ir_add_const(f.g, "mask", &ts, &mask), &O);
    ValId bf = bitcast_v(f.g, m, IR_DT_F32);
    ir_add_output(f.g, ir_binary(f.g, IR_BIN_ADD, bf, ir_const_scalar_f32(f.g, 0.0f), &O));
    const void *in[1] = {x};
    void *out[1] = {y};
    run(f.g, in, out);
    for (int i = 0; i < N; i++)
        if (y[i] != fabsf(2.0f * x[i]))
            fail_msg("element %d: got %g, want %g", i, y[i], fabsf(2.0f * x[i]));
    Plan *s = f.g->plan;
    int views = 0;
    for (NodeId n = 0; n < f.g->nnodes; n++) {
        const IrNode *nd = &f.g->nodes[n];
        if (nd->dead || nd->op != IR_OP_BITCAST)
            continue;
        assert_true(s->node[n].virt);
        assert_int_not_equal(s->val[nd->out[0]].view.root, nd->out[0]);
        views++;
    }
    assert_int_equal(views, 2);
    ut_fx_end(&f);
}

/* A bitcast of a graph input that is a graph output is a copy kernel; float16 bits
 * reach int16 unchanged, and a float16 result of arithmetic is rounded before its
 * bits are taken. */
static void test_graph_outputs(void **st)
{
    (void)st;
    enum { N = 77 };
    UtFx f;
    ut_fx_begin(&f);
    uint16_t x[N];
    int16_t y0[N], y1[N], want1[N];
    for (int i = 0; i < N; i++) {
        x[i] = rt_f32_to_f16((float)(i - 38) / 9.0f);
        want1[i] = (int16_t)rt_f32_to_f16(expf(rt_f16_to_f32(x[i])));
    }
    IrType t = ut_vec(IR_DT_F16, N);
    ValId a = ir_add_input(f.g, "x", &t);
    ir_add_output(f.g, bitcast_v(f.g, a, IR_DT_I16));
    ValId e = ir_unary(f.g, IR_UN_EXP, a, &O);
    ir_add_output(f.g, bitcast_v(f.g, e, IR_DT_I16));
    const void *in[1] = {x};
    void *out[2] = {y0, y1};
    run(f.g, in, out);
    assert_memory_equal(y0, x, sizeof y0);
    for (int i = 0; i < N; i++)
        if (y1[i] != want1[i])
            fail_msg("element %d: got 0x%04x, want 0x%04x", i, (uint16_t)y1[i],
                     (uint16_t)want1[i]);
    ut_fx_end(&f);
}

/* float64 bits do not exist on the device: refused, saying why, naming the node. */
static void test_graph_f64_refused(void **st)
{
    (void)st;
    UtFx f;
    ut_fx_begin(&f);
    IrType t = ut_vec(IR_DT_F64, 4);
    ValId a = ir_add_input(f.g, "x", &t);
    ir_add_output(f.g, bitcast_v(f.g, a, IR_DT_I64));
    size_t len = 0;
    assert_null(ut_compile(f.g, &len));
    assert_true(ut_has_msg(&f.d, "bitcast from float64 to int64 is not supported on the device"));
    assert_true(ut_has_msg(&f.d, "no 64-bit types"));
    ut_fx_end(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_infer),
        cmocka_unit_test(test_eval_and_fold),
        cmocka_unit_test(test_text_roundtrip),
        cmocka_unit_test(test_decompose),
        cmocka_unit_test(test_graph_view),
        cmocka_unit_test(test_graph_outputs),
        cmocka_unit_test(test_graph_f64_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
