/* test_dec_flexattn.c: unit tests of the FlexAttention decomposition
 * (passes/decompose/onnx/onnx_flex_attention.c): grouped-query heads, the scale
 * attribute and its default, score_mod / prob_mod subgraphs inlined (with a value
 * captured from the enclosing graph), and the errors for bad shapes and modifiers. The
 * decomposed graph is evaluated node by node with ir_eval_node and compared with a
 * direct C computation of the operator's definition. */
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

enum { B = 2, HQ = 4, HK = 2, L = 3, S = 5, E = 4, EV = 3 };

static ValId input4(IrGraph *g, const char *name, int64_t a, int64_t b, int64_t c, int64_t d)
{
    IrType t = {.dtype = IR_DT_F32, .rank = 4, .dims = {a, b, c, d}};
    return ir_add_input(g, name, &t);
}

/* Foreign default-domain node with one output in graph g; returns the output. */
static ValId onnx_op(IrGraph *g, const char *op, const ValId *in, int nin)
{
    return ut_onnx_op(g, op, 26, in, nin, NULL, 0);
}

/* Modifier subgraph x -> x OP k (k: a constant scalar, or when cap is set, the
 * enclosing graph's value cap, captured by name). */
static IrGraph *modifier(UtFx *f, const char *op, float k, ValId cap)
{
    IrGraph *sub = ir_graph_new(&f->d);
    assert_non_null(sub);
    IrType t = {.dtype = IR_DT_F32, .rank = 4, .dims = {B, HQ, L, S}};
    ValId in[2] = {ir_add_input(sub, "x", &t), IR_NONE};
    if (cap != IR_NONE) {
        in[1] = ut_capture(sub, f->g, cap);
    } else {
        IrType ts = {.dtype = IR_DT_F32, .rank = 0};
        in[1] = ir_add_const(sub, "k", &ts, &k);
    }
    ir_add_output(sub, onnx_op(sub, op, in, 2));
    return sub;
}

/* The FlexAttention node on q, k, v (plus captured values) with attributes a. */
static ValId flex(UtFx *f, const ValId *in, int nin, const IrAttr *a, int na)
{
    IrForeign fr = {.op_type = "FlexAttention", .domain = "ai.onnx.preview", .opset = 1};
    IrOrigin o = {.name = "fa", .op_type = "FlexAttention"};
    NodeId id = ir_add_foreign(f->g, &fr, in, nin, 1, a, na, &o);
    ValId y = f->g->nodes[id].out[0];
    ir_add_output(f->g, y);
    return y;
}

/* Deterministic test data in [-1, 1). */
static void fill(float *x, int n, int seed)
{
    for (int i = 0; i < n; i++)
        x[i] = (float)((i * 37 + seed * 11) % 29 - 14) / 14.0f;
}

/* The operator's definition: scores = q k^T * scale (+ bias[s] when bias), softmax,
 * times pmul, times v; query head h uses K/V head h / (HQ / HK). */
static void reference(const float *q, const float *k, const float *v, double scale,
                      const float *bias, double pmul, float *y)
{
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < L; i++) {
                int hk = h / (HQ / HK);
                double sc[S], mx = -INFINITY, sum = 0;
                for (int j = 0; j < S; j++) {
                    double d = 0;
                    for (int e = 0; e < E; e++)
                        d += (double)q[((b * HQ + h) * L + i) * E + e] *
                             k[((b * HK + hk) * S + j) * E + e];
                    sc[j] = d * scale + (bias ? bias[j] : 0.0);
                    mx = sc[j] > mx ? sc[j] : mx;
                }
                for (int j = 0; j < S; j++)
                    sum += (sc[j] = exp(sc[j] - mx));
                for (int c = 0; c < EV; c++) {
                    double acc = 0;
                    for (int j = 0; j < S; j++)
                        acc += sc[j] / sum * pmul * v[((b * HK + hk) * S + j) * EV + c];
                    y[((b * HQ + h) * L + i) * EV + c] = (float)acc;
                }
            }
}

static float qd[B * HQ * L * E], kd[B * HK * S * E], vd[B * HK * S * EV];

/* Defaults: scale 1/sqrt(head size), no modifiers; grouped-query heads. */
static void test_plain(void **st)
{
    (void)st;
    UtFx f;
    ut_fx_begin(&f);
    ValId in[3] = {input4(f.g, "Q", B, HQ, L, E), input4(f.g, "K", B, HK, S, E),
                   input4(f.g, "V", B, HK, S, EV)};
    flex(&f, in, 3, NULL, 0);
    ut_decompose_ok(&f);
    const IrType *t = ir_vtype(f.g, f.g->outputs[0]);
    assert_int_equal(t->rank, 4);
    assert_int_equal(t->dims[1], HQ);
    assert_int_equal(t->dims[3], EV);
    const void *inputs[3] = {qd, kd, vd};
    static float want[B * HQ * L * EV];
    reference(qd, kd, vd, 1.0 / sqrt((double)E), NULL, 1.0, want);
    ut_expect_close(ut_run_graph(f.g, inputs, 0), want, B * HQ * L * EV, 1e-5);
    ut_fx_end(&f);
}

/* scale attribute; score_mod adds a captured bias row, prob_mod scales by 0.5. */
static void test_modifiers(void **st)
{
    (void)st;
    UtFx f;
    ut_fx_begin(&f);
    IrType tb = {.dtype = IR_DT_F32, .rank = 1, .dims = {S}};
    ValId in[4] = {input4(f.g, "Q", B, HQ, L, E), input4(f.g, "K", B, HK, S, E),
                   input4(f.g, "V", B, HK, S, EV), ir_add_input(f.g, "bias", &tb)};
    IrAttr a[3] = {ir_attr_float("scale", 0.3f),
                   ut_graph_attr("score_mod", modifier(&f, "Add", 0, in[3])),
                   ut_graph_attr("prob_mod", modifier(&f, "Mul", 0.5f, IR_NONE))};
    flex(&f, in, 4, a, 3);
    ut_decompose_ok(&f);
    float bias[S] = {0.5f, -1.0f, 0.0f, 2.0f, -0.25f};
    const void *inputs[4] = {qd, kd, vd, bias};
    static float want[B * HQ * L * EV];
    reference(qd, kd, vd, (double)0.3f, bias, 0.5, want);
    ut_expect_close(ut_run_graph(f.g, inputs, 0), want, B * HQ * L * EV, 1e-5);
    ut_fx_end(&f);
}

/* Bad head counts, a modifier that changes the type, a modifier missing a capture. */
static void test_errors(void **st)
{
    (void)st;
    UtFx f;
    ut_fx_begin(&f);
    ValId in[3] = {input4(f.g, "Q", B, 3, L, E), input4(f.g, "K", B, HK, S, E),
                   input4(f.g, "V", B, HK, S, EV)};
    flex(&f, in, 3, NULL, 0);
    ut_decompose_fails(&f, "must be a multiple of the key/value heads");
    ut_fx_end(&f);

    ut_fx_begin(&f);
    in[0] = input4(f.g, "Q", B, HQ, L, E);
    in[1] = input4(f.g, "K", B, HK, S, E);
    in[2] = input4(f.g, "V", B, HK, S, EV);
    IrGraph *sub = ir_graph_new(&f.d);
    IrType t = {.dtype = IR_DT_F32, .rank = 4, .dims = {B, HQ, L, S}};
    ValId x = ir_add_input(sub, "x", &t);
    ir_add_output(sub, onnx_op(sub, "ReduceSum", &x, 1));  /* rank 4, keepdims: [1,1,1,1] */
    IrAttr a = ut_graph_attr("score_mod", sub);
    flex(&f, in, 3, &a, 1);
    ut_decompose_fails(&f, "score_mod must return a tensor of its input's type");
    ut_fx_end(&f);

    ut_fx_begin(&f);
    in[0] = input4(f.g, "Q", B, HQ, L, E);
    in[1] = input4(f.g, "K", B, HK, S, E);
    in[2] = input4(f.g, "V", B, HK, S, EV);
    IrType tb = {.dtype = IR_DT_F32, .rank = 1, .dims = {S}};
    ValId bias = ir_add_input(f.g, "bias", &tb);
    a = ut_graph_attr("score_mod", modifier(&f, "Add", 0, bias));
    flex(&f, in, 3, &a, 1);                               /* bias not passed */
    ut_decompose_fails(&f, "the body uses 'bias', which the node does not pass");
    ut_fx_end(&f);
}

static int setup(void **st)
{
    (void)st;
    fill(qd, B * HQ * L * E, 1);
    fill(kd, B * HK * S * E, 2);
    fill(vd, B * HK * S * EV, 3);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_modifiers),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
