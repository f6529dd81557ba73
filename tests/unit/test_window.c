/* test_window.c: tensors larger than one core's DRAM window (passes/window.c), on a
 * target whose window is 1 MiB. An embedding table of 4 MiB is gathered (split into
 * four row parts read through views, combined by the index's range), a 2 MiB weight
 * multiplies the result (split into two column parts), and the same table serves as a
 * tied LM head (read transposed, one contiguous range of rows per core). The bundle is
 * run on the emulator and compared with a direct C computation; an index outside the
 * table must still stop the run, and the default target must leave the graph alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/fe.h"
#include "ir.h"
#include "passes/pass.h"
#include "spyrt.h"
#include "unit_util.h"

enum { V = 8192, D = 128, N = 4096, B = 2, S = 8 };

static const IrOrigin O = {"n", "Test", NULL};

/* Deterministic values in [-1, 1). */
static void fill(float *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

/* The test data: table, weight, token ids (every part, negatives) and x. */
typedef struct {
    float *emb, *w, x[B * S * D];
    int64_t ids[B * S];
} Data;

static void data_init(Data *d)
{
    d->emb = malloc(sizeof(float) * V * D);
    d->w = malloc(sizeof(float) * D * N);
    fill(d->emb, (size_t)V * D, 1);
    fill(d->w, (size_t)D * N, 2);
    fill(d->x, B * S * D, 3);
    static const int64_t ids[B * S] = {0, 1, 2047, 2048, 4095, 4096, 6143, 6144,
                                       8191, -1, -8192, 5000, 3000, 100, 7000, 2049};
    memcpy(d->ids, ids, sizeof ids);
}

/* ids -> e = emb[ids] + x; y = e @ w; z = e @ emb^T. */
static IrGraph *build(IrDiag *diag, const Data *d)
{
    IrGraph *g = ir_graph_new(diag);
    ValId ids = ut_input(g, "ids", IR_DT_I64, 2, (const int64_t[]){B, S});
    ValId x = ut_input(g, "x", IR_DT_F32, 3, (const int64_t[]){B, S, D});
    ValId emb = ut_const(g, IR_DT_F32, 2, (const int64_t[]){V, D}, d->emb);
    ValId w = ut_const(g, IR_DT_F32, 2, (const int64_t[]){D, N}, d->w);
    IrAttr ax = ir_attr_int("axis", 0);
    NodeId gn = ir_add_node(g, IR_OP_GATHER, (const ValId[]){emb, ids}, 2, &ax, 1, &O);
    ValId e = ir_binary(g, IR_BIN_ADD, g->nodes[gn].out[0], x, &O);
    ir_add_output(g, ir_matmul(g, e, w, &O));
    ir_add_output(g, ir_matmul(g, e, ir_transpose(g, emb, (const int64_t[]){1, 0}, &O), &O));
    return g;
}

/* Reference results y [B*S, N] and z [B*S, V]. */
static void reference(const Data *d, float *y, float *z)
{
    float e[D];
    for (int r = 0; r < B * S; r++) {
        int64_t id = d->ids[r] < 0 ? d->ids[r] + V : d->ids[r];
        for (int c = 0; c < D; c++)
            e[c] = d->emb[id * D + c] + d->x[r * D + c];
        for (int n = 0; n < N; n++) {
            float s = 0;
            for (int k = 0; k < D; k++)
                s += e[k] * d->w[(size_t)k * N + n];
            y[(size_t)r * N + n] = s;
        }
        for (int v = 0; v < V; v++) {
            float s = 0;
            for (int k = 0; k < D; k++)
                s += e[k] * d->emb[(size_t)v * D + k];
            z[(size_t)r * V + v] = s;
        }
    }
}

/* Run bundle buf on d's inputs into y and z; returns the status, message in err. */
static spy_status run(const uint8_t *buf, size_t len, const Data *d, float *y, float *z,
                      char *err, size_t errlen)
{
    spy_model *m = NULL;
    assert_int_equal(spy_model_load_memory(buf, len, &m, err, errlen), SPY_OK);
    spy_session_options so = {.num_threads = 2, .debug_lx_poison = 1};
    spy_session *s = NULL;
    assert_int_equal(spy_session_create(m, &so, &s), SPY_OK);
    const void *in[2] = {d->ids, d->x};
    void *out[2] = {y, z};
    spy_status st = spy_session_run(s, in, out);
    snprintf(err, errlen, "%s", spy_session_error(s));
    spy_session_free(s);
    spy_model_free(m);
    return st;
}

/* Compile for the 1 MiB window; the table's GATHER and the weight's MATMUL are split. */
static uint8_t *compile_tiny(const Data *d, size_t *len, int *gathers, int *matmuls)
{
    IrDiag diag;
    ir_diag_init(&diag, "window.ir");
    IrGraph *g = build(&diag, d);
    g->fold_budget = (size_t)1 << 20;         /* as a large model: the transpose of the
                                                 table stays a view, not a folded copy */
    SpyTarget t;
    fe_default_target(&t);
    t.core_window_mib = 1;
    uint8_t *buf = ut_compile_for(g, &t, len);
    *gathers = ut_count_op(g, IR_OP_GATHER);
    *matmuls = ut_count_op(g, IR_OP_MATMUL);
    ir_graph_free(g);
    ir_diag_free(&diag);
    return buf;
}

static void test_split_runs(void **state)
{
    (void)state;
    Data d;
    data_init(&d);
    size_t len = 0;
    int gathers = 0, matmuls = 0;
    uint8_t *buf = compile_tiny(&d, &len, &gathers, &matmuls);
    assert_non_null(buf);
    assert_int_equal(gathers, 4);              /* 4 MiB table, 1 MiB parts */
    assert_int_equal(matmuls, 3);              /* 2 weight parts + the tied head */
    float *y = malloc(sizeof(float) * B * S * N), *z = malloc(sizeof(float) * B * S * V);
    float *ry = malloc(sizeof(float) * B * S * N), *rz = malloc(sizeof(float) * B * S * V);
    char err[512];
    assert_int_equal(run(buf, len, &d, y, z, err, sizeof err), SPY_OK);
    reference(&d, ry, rz);
    ut_expect_close(y, ry, (int64_t)B * S * N, 1e-4);
    ut_expect_close(z, rz, (int64_t)B * S * V, 1e-4);
    /* an index past the table still stops the run */
    d.ids[5] = V;
    assert_int_equal(run(buf, len, &d, y, z, err, sizeof err), SPY_E_RUNTIME);
    d.ids[5] = -V - 1;
    assert_int_equal(run(buf, len, &d, y, z, err, sizeof err), SPY_E_RUNTIME);
    free(y), free(z), free(ry), free(rz), free(buf), free(d.emb), free(d.w);
}

/* With the default 256 MiB window nothing is split. */
static void test_default_untouched(void **state)
{
    (void)state;
    Data d;
    data_init(&d);
    IrDiag diag;
    ir_diag_init(&diag, "window.ir");
    IrGraph *g = build(&diag, &d);
    size_t len = 0;
    uint8_t *buf = ut_compile(g, &len);
    assert_non_null(buf);
    assert_int_equal(ut_count_op(g, IR_OP_GATHER), 1);
    assert_int_equal(ut_count_op(g, IR_OP_MATMUL), 2);
    assert_int_equal(ut_count_op(g, IR_OP_SLICE), 0);
    free(buf), free(d.emb), free(d.w);
    ir_graph_free(g);
    ir_diag_free(&diag);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_runs),
        cmocka_unit_test(test_default_untouched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
