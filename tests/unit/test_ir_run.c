/* test_ir_run.c: unit tests of ir_run_graph, the whole-graph evaluator of calibration
 * (ir/ir_run.c): its fast float32 paths (blocked MATMUL with broadcast batches, CONV
 * through im2col: strided, dilated, grouped, depthwise, 1x1 read in place) agree with
 * the reference evaluator (ir_eval_node, double accumulation) to float32 rounding, the
 * visitor sees every graph output once, and a node it cannot evaluate is an error
 * naming it.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ir.h"
#include "unit_util.h"

/* The graph of the agreement test: every fast path, and values reaching the outputs
 * through several readers. */
static const char *const SRC =
    "graph \"run\" {\n"
    "  input %x: f32[2,6,9,11]\n"
    "  input %a: f32[2,37,70]\n"
    "  const %w: f32[4,6,3,3]\n"
    "  const %dw: f32[6,1,3,3]\n"
    "  const %gw: f32[4,3,2,3]\n"
    "  const %w1: f32[5,6,1,1]\n"
    "  const %b: f32[70,600]\n"
    "  const %s: f32[1,4,1,1]\n"
    "  %c: f32[2,4,4,5] = conv(%x, %w) {strides=[2, 2], dilations=[1, 1], group=1}\n"
    "  %d: f32[2,6,5,9] = conv(%x, %dw) {strides=[1, 1], dilations=[2, 1], group=6}\n"
    "  %e: f32[2,4,8,5] = conv(%x, %gw) {strides=[1, 2], dilations=[1, 1], group=2}\n"
    "  %p: f32[2,5,9,11] = conv(%x, %w1) {strides=[1, 1], dilations=[1, 1], group=1}\n"
    "  %m: f32[2,37,600] = matmul(%a, %b)\n"
    "  %y: f32[2,4,4,5] = binary(%c, %s) {fn=max}\n"
    "  %z: f32[2,4,4,5] = binary(%y, %c) {fn=sub}\n"
    "  output %d\n"
    "  output %e\n"
    "  output %p\n"
    "  output %m\n"
    "  output %z\n"
    "  output %c\n"
    "}\n";

/* Deterministic pseudo-random float in [-1, 1). */
static float rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 8388608.0f - 1.0f;
}

/* What the visitor saw: each output's data (copied) and how often it came. */
typedef struct {
    float *data[8];
    int seen[8];
} Seen;

/* ir_run_graph visitor: copy output i. */
static void keep(void *ctx, uint32_t i, const void *data, const IrType *t)
{
    Seen *s = ctx;
    size_t n = ir_type_bytes(t);
    assert_true(i < 8);
    s->seen[i]++;
    s->data[i] = malloc(n);
    memcpy(s->data[i], data, n);
}

/* Fill a float32 buffer of n elements with random values. */
static void fill(void *p, int64_t n, uint32_t *seed)
{
    for (int64_t i = 0; i < n; i++)
        ((float *)p)[i] = rnd(seed);
}

/* The reference value of every node of g (ir_eval_node in order), in ref[value]. */
static void reference(IrGraph *g, const void **ref)
{
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        const void *in[4];
        void *out[1];
        for (int j = 0; j < n->nin; j++)
            in[j] = ref[n->in[j]];
        assert_true(ir_eval_node(g, n, in, out));
        ref[n->out[0]] = out[0];
    }
}

/* Fast paths against the reference: relative error within float32 rounding of sums of
 * up to 70 products of values in [-1, 1). */
static void test_agrees_with_reference(void **state)
{
    (void)state;
    IrDiag d;
    ir_diag_init(&d, "run.ir");
    IrGraph *g = ir_parse(SRC, &d);
    assert_non_null(g);
    assert_false(ir_failed(g));
    uint32_t seed = 7;
    const void **ref = calloc(g->nvals, sizeof *ref);
    const void *inputs[2];
    for (uint32_t v = 0; v < g->nvals; v++) {
        IrValue *val = &g->vals[v];
        if (val->kind == IR_VAL_CONST)
            fill((void *)val->data, ir_type_numel(&val->type), &seed);
        if (val->kind == IR_VAL_CONST)
            ref[v] = val->data;
    }
    for (uint32_t k = 0; k < g->ninputs; k++) {
        const IrType *t = &g->vals[g->inputs[k]].type;
        void *p = malloc(ir_type_bytes(t));
        fill(p, ir_type_numel(t), &seed);
        inputs[k] = ref[g->inputs[k]] = p;
    }
    Seen s = {0};
    char err[256] = "";
    assert_true(ir_run_graph(g, inputs, keep, &s, err, sizeof err));
    reference(g, ref);
    for (uint32_t i = 0; i < g->noutputs; i++) {
        assert_int_equal(s.seen[i], 1);
        const IrType *t = &g->vals[g->outputs[i]].type;
        const float *want = ref[g->outputs[i]], *got = s.data[i];
        for (int64_t e = 0; e < ir_type_numel(t); e++)
            if (!(fabsf(got[e] - want[e]) <= 1e-5f * (1.0f + fabsf(want[e]))))
                fail_msg("output %u element %lld: %g, reference %g", i, (long long)e, got[e],
                         want[e]);
        free(s.data[i]);
    }
    for (uint32_t k = 0; k < g->ninputs; k++)
        free((void *)inputs[k]);
    free(ref);
    ir_graph_free(g);
    ir_diag_free(&d);
}

/* A frontend op left in the graph: false, with a message naming the node. */
static void test_foreign_is_an_error(void **state)
{
    IrGraph *g = ((UtFx *)*state)->g;
    static const int64_t four = 4;
    ValId x = ut_input(g, "x", IR_DT_F32, 1, &four);
    IrForeign fr = {.op_type = "Mystery", .domain = "", .opset = 13};
    IrOrigin o = {.name = "odd", .op_type = "Mystery"};
    NodeId id = ir_add_foreign(g, &fr, &x, 1, 1, NULL, 0, &o);
    g->vals[g->nodes[id].out[0]].type = g->vals[x].type;
    ir_add_output(g, g->nodes[id].out[0]);
    float data[4] = {1, 2, 3, 4};
    const void *in[1] = {data};
    Seen s = {0};
    char err[256] = "";
    assert_false(ir_run_graph(g, in, keep, &s, err, sizeof err));
    assert_non_null(strstr(err, "'odd'"));
    assert_int_equal(s.seen[0], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agrees_with_reference),
        cmocka_unit_test_setup_teardown(test_foreign_is_an_error, ut_setup, ut_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
