/* test_dynamic.c: unit tests of data-dependent output shapes: the SCATTER core op
 * (inference, reference evaluation), the graph's table of dynamic extents and hidden
 * outputs, pass_dynamic, and NonZero / Compress / Unique / NonMaxSuppression end to
 * end: a one-node graph is compiled (decomposition, back end, bundle), loaded, run on
 * the emulator and its actual output shape and values compared with C references,
 * on the reference target and on a small one (5 cores, 8 KiB of scratchpad). The
 * SCATTER instruction's verifier rules are checked on a compiled bundle.
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
#include "isa.h"
#include "passes/pass.h"
#include "sbin.h"
#include "spyrt.h"
#include "unit_util.h"

#define MAXIO 8

static const IrOrigin O = {"n", "Test", NULL};

#define NI(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define T(dt, ...) ut_type(dt, NI(__VA_ARGS__), (int64_t[]){__VA_ARGS__})

static uint32_t rng = 2024;

/* Deterministic pseudo-random integer in [0, n). */
static uint32_t urand(uint32_t n)
{
    rng = rng * 1664525u + 1013904223u;
    return (rng >> 8) % n;
}

/* ---- a one-node model, compiled and loaded ------------------------------------- */

typedef struct {
    IrDiag d;
    IrGraph *g;
    spy_model *m;
    spy_session *s;
} Model;

/* Graph with inputs of types ins (NULL type pointer: omitted optional input) and one
 * foreign node op with nout outputs, all graph outputs. */
static void build(Model *md, const char *op, const IrType *const *ins, int nin, int nout,
                  const IrAttr *attrs, int na)
{
    memset(md, 0, sizeof *md);
    ir_diag_init(&md->d, "test.onnx");
    md->g = ir_graph_new(&md->d);
    md->g->onnx_opset = 13;
    ValId in[MAXIO];
    char name[16];
    for (int i = 0; i < nin; i++) {
        snprintf(name, sizeof name, "in%d", i);
        in[i] = ins[i] ? ir_add_input(md->g, name, ins[i]) : IR_NONE;
    }
    IrForeign f = {op, "", 13};
    NodeId n = ir_add_foreign(md->g, &f, in, nin, nout, attrs, na, &O);
    for (int k = 0; k < nout; k++)
        ir_add_output(md->g, ir_node(md->g, n)->out[k]);
}

/* Compile md's graph for target variant v (0: reference, 1: 5 cores, 8 KiB LX);
 * false with the diagnostics in md->d when the compiler refuses it. */
static bool compile_model(Model *md, int v, uint8_t **buf, size_t *len)
{
    SpyTarget t;
    fe_default_target(&t);
    if (v == 1) {
        t.cores = 5;
        t.lx_budget_bytes = 8192;
    }
    PassOptions po = {.opt_level = 2, .target = &t, .verify = true};
    if (!pass_run_pipeline(md->g, &po))
        return false;
    CgOptions co = {.target = &t, .meta = "compiler=test\n"};
    return cg_emit_bundle(md->g, &co, buf, len);
}

/* Compile, load and open a session (fails the test on any error). */
static void load(Model *md, int v)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (!compile_model(md, v, &buf, &len)) {
        ir_diag_print(&md->d, stderr);
        fail_msg("compile failed");
    }
    ut_open(buf, len, &md->m, &md->s);
}

static void unload(Model *md)
{
    spy_session_free(md->s);
    spy_model_free(md->m);
    ir_graph_free(md->g);
    ir_diag_free(&md->d);
}

/* Run with inputs; outs[k] get malloc'd buffers of the outputs' upper-bound sizes. */
static void run(Model *md, const void *const *in, void **outs)
{
    int n = spy_model_num_outputs(md->m);
    for (int k = 0; k < n; k++) {
        spy_tensor_info info;
        assert_int_equal(spy_model_output_info(md->m, k, &info), SPY_OK);
        outs[k] = malloc(info.nbytes + 8);
        memset(outs[k], 0x5a, info.nbytes + 8);          /* stale data must not survive */
    }
    if (spy_session_run(md->s, in, outs) != SPY_OK)
        fail_msg("run failed: %s", spy_session_error(md->s));
}

/* Check output k's actual shape; returns its element count. */
static int64_t expect_shape(Model *md, int k, int rank, const int64_t *dims)
{
    int r = -1;
    int64_t d[SPY_MAX_RANK], n = 1;
    assert_int_equal(spy_session_output_shape(md->s, k, &r, d), SPY_OK);
    assert_int_equal(r, rank);
    for (int i = 0; i < rank; i++) {
        if (d[i] != dims[i])
            fail_msg("output %d dim %d: got %lld, want %lld", k, i, (long long)d[i],
                     (long long)dims[i]);
        n *= d[i];
    }
    return n;
}

/* Check that the bytes of buf after used (up to the upper bound of output k) are 0. */
static void expect_zero_tail(Model *md, int k, const void *buf, size_t used)
{
    spy_tensor_info info;
    assert_int_equal(spy_model_output_info(md->m, k, &info), SPY_OK);
    for (size_t i = used; i < info.nbytes; i++)
        assert_int_equal(((const uint8_t *)buf)[i], 0);
}

static void free_outs(void **outs, int n)
{
    for (int k = 0; k < n; k++)
        free(outs[k]);
}

/* ---- SCATTER in the IR ---------------------------------------------------------- */

/* Shape inference and reference evaluation: zeros, dropped rows, later rows win. */
static void test_scatter_ir(void **state)
{
    (void)state;
    IrDiag d;
    ir_diag_init(&d, "t");
    IrGraph *g = ir_graph_new(&d);
    IrType ut = T(IR_DT_F32, 5, 2), it = T(IR_DT_I64, 5);
    float upd[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    int64_t idx[5] = {2, -1, 0, 4, 2};                 /* -1 and 4 are dropped */
    ValId in[2] = {ir_add_const(g, "u", &ut, upd), ir_add_const(g, "i", &it, idx)};
    IrAttr a = ir_attr_int("size", 4);
    NodeId n = ir_add_node(g, IR_OP_SCATTER, in, 2, &a, 1, &O);
    assert_false(ir_failed(g));
    const IrType *ot = ir_vtype(g, ir_node(g, n)->out[0]);
    assert_int_equal(ot->rank, 2);
    assert_int_equal(ot->dims[0], 4);
    assert_int_equal(ot->dims[1], 2);
    const void *inp[2] = {upd, idx};
    void *out[1];
    assert_true(ir_eval_node(g, ir_node(g, n), inp, out));
    const float want[8] = {5, 6, 0, 0, 9, 10, 0, 0};
    assert_memory_equal(out[0], want, sizeof want);
    /* wrong ranks and a missing size are user errors */
    IrType bad = T(IR_DT_F32, 5);
    ValId in2[2] = {ir_add_const(g, "b", &bad, upd), in[1]};
    ir_add_node(g, IR_OP_SCATTER, in2, 2, &a, 1, &O);
    assert_true(ir_failed(g));
    ir_graph_free(g);
    ir_diag_free(&d);
}

/* SCATTER node run on the device: rows dropped, later rows win, zeros elsewhere; and a
 * scatter of no rows at all (a zero output). */
static void test_scatter_device(void **state)
{
    (void)state;
    for (int empty = 0; empty < 2; empty++) {
        Model md;
        memset(&md, 0, sizeof md);
        ir_diag_init(&md.d, "test.onnx");
        md.g = ir_graph_new(&md.d);
        int64_t n = empty ? 0 : 5;
        IrType ut = T(IR_DT_F32, n, 2), it = T(IR_DT_I32, n);
        ValId in[2] = {ir_add_input(md.g, "u", &ut), ir_add_input(md.g, "i", &it)};
        IrAttr a = ir_attr_int("size", 4);
        NodeId nd = ir_add_node(md.g, IR_OP_SCATTER, in, 2, &a, 1, &O);
        ir_add_output(md.g, ir_node(md.g, nd)->out[0]);
        load(&md, empty);
        float upd[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
        int32_t idx[5] = {2, -1, 0, 4, 2};
        float want[2][8] = {{5, 6, 0, 0, 9, 10, 0, 0}, {0}};
        const void *inp[2] = {empty ? NULL : upd, empty ? NULL : idx};
        void *out[1];
        run(&md, inp, out);
        assert_memory_equal(out[0], want[empty], sizeof want[0]);
        free_outs(out, 1);
        unload(&md);
    }
}

/* The dynamic-extent table: hidden outputs stay last, entries follow replacements. */
static void test_dyn_table(void **state)
{
    (void)state;
    IrDiag d;
    ir_diag_init(&d, "t");
    IrGraph *g = ir_graph_new(&d);
    IrType xt = T(IR_DT_F32, 6), ct = T(IR_DT_I32);
    ValId x = ir_add_input(g, "x", &xt), cnt = ir_add_input(g, "c", &ct);
    ValId y = ir_unary(g, IR_UN_NEG, x, &O);
    ir_add_output(g, y);
    ir_dyn_add(g, y, 0, cnt);
    ir_dyn_add(g, y, 0, cnt);                          /* the count is hidden once */
    assert_int_equal(g->noutputs, 2);
    assert_int_equal(g->nhidden, 1);
    ValId z = ir_unary(g, IR_UN_ABS, x, &O);
    ir_add_output(g, z);                               /* inserted before the hidden */
    assert_int_equal(g->outputs[1], z);
    assert_int_equal(g->outputs[2], cnt);
    assert_true(ir_output_hidden(g, 2));
    assert_false(ir_output_hidden(g, 1));
    ValId y2 = ir_unary(g, IR_UN_RELU, x, &O);
    ir_replace_uses(g, y, y2);
    assert_non_null(ir_dyn_find(g, y2));
    assert_null(ir_dyn_find(g, z));
    assert_true(ir_verify(g, "test"));
    ir_graph_free(g);
    ir_diag_free(&d);
}

/* ---- NonZero ----------------------------------------------------------------------- */

/* NonZero of an f32 [3, 5] on several inputs: all zero, some, all non-zero. */
static void check_nonzero(int v)
{
    Model md;
    IrType xt = T(IR_DT_F32, 3, 5);
    const IrType *ins[1] = {&xt};
    build(&md, "NonZero", ins, 1, 1, NULL, 0);
    load(&md, v);
    assert_int_equal(spy_model_output_dynamic_axis(md.m, 0), 1);
    for (int round = 0; round < 4; round++) {
        float x[15];
        int64_t want[30];
        int nz = 0;
        for (int i = 0; i < 15; i++) {
            x[i] = round == 0 ? 0.0f : round == 3 ? (float)i + 1 : (float)(urand(3) == 0);
            nz += x[i] != 0;
        }
        for (int i = 0, k = 0; i < 15; i++)
            if (x[i] != 0) {
                want[k] = i / 5;
                want[nz + k] = i % 5;
                k++;
            }
        const void *in[1] = {x};
        void *out[1];
        run(&md, in, out);
        int64_t n = expect_shape(&md, 0, 2, (int64_t[]){2, nz});
        assert_memory_equal(out[0], want, (size_t)n * 8);
        expect_zero_tail(&md, 0, out[0], (size_t)n * 8);
        free_outs(out, 1);
    }
    unload(&md);
}

static void test_nonzero(void **state)
{
    (void)state;
    check_nonzero(0);
    check_nonzero(1);
}

/* A large NonZero on the small target: many SCATTER items and zero-fill stores. */
static void test_nonzero_large(void **state)
{
    (void)state;
    Model md;
    enum { N = 6000 };
    IrType xt = T(IR_DT_I32, N);
    const IrType *ins[1] = {&xt};
    build(&md, "NonZero", ins, 1, 1, NULL, 0);
    load(&md, 1);
    int32_t *x = malloc(N * sizeof *x);
    int64_t *want = malloc(N * sizeof *want);
    int nz = 0;
    for (int i = 0; i < N; i++) {
        x[i] = urand(7) == 0 ? (int32_t)urand(100) + 1 : 0;
        if (x[i])
            want[nz++] = i;
    }
    const void *in[1] = {x};
    void *out[1];
    run(&md, in, out);
    expect_shape(&md, 0, 2, (int64_t[]){1, nz});
    assert_memory_equal(out[0], want, (size_t)nz * 8);
    free_outs(out, 1);
    free(x);
    free(want);
    unload(&md);
}

/* ---- Compress -------------------------------------------------------------------- */

/* Compress of f32 [2, 5, 3] along axis 1 with a run-time condition of length 4 (the
 * fifth slice is ignored): the dynamic axis is not the outermost one. */
static void check_compress_axis(int v)
{
    Model md;
    IrType xt = T(IR_DT_F32, 2, 5, 3), ct = T(IR_DT_BOOL, 4);
    const IrType *ins[2] = {&xt, &ct};
    IrAttr a = ir_attr_int("axis", -2);
    build(&md, "Compress", ins, 2, 1, &a, 1);
    load(&md, v);
    assert_int_equal(spy_model_output_dynamic_axis(md.m, 0), 1);
    float x[30];
    for (int i = 0; i < 30; i++)
        x[i] = (float)i;
    static const uint8_t conds[3][4] = {{0, 1, 0, 1}, {0, 0, 0, 0}, {1, 1, 1, 1}};
    for (int r = 0; r < 3; r++) {
        float want[30];
        int k = 0, n = 0;
        for (int a0 = 0; a0 < 2; a0++)
            for (int j = 0; j < 4; j++)
                if (conds[r][j])
                    for (int q = 0; q < 3; q++)
                        want[k++] = x[(a0 * 5 + j) * 3 + q];
        for (int j = 0; j < 4; j++)
            n += conds[r][j];
        const void *in[2] = {x, conds[r]};
        void *out[1];
        run(&md, in, out);
        expect_shape(&md, 0, 3, (int64_t[]){2, n, 3});
        assert_memory_equal(out[0], want, (size_t)k * 4);
        expect_zero_tail(&md, 0, out[0], (size_t)k * 4);
        free_outs(out, 1);
    }
    unload(&md);
}

static void test_compress(void **state)
{
    (void)state;
    check_compress_axis(0);
    check_compress_axis(1);
    /* no axis: flattened elements; int64 data (narrowed on the device) */
    Model md;
    IrType xt = T(IR_DT_I64, 2, 3), ct = T(IR_DT_BOOL, 6);
    const IrType *ins[2] = {&xt, &ct};
    build(&md, "Compress", ins, 2, 1, NULL, 0);
    load(&md, 0);
    int64_t x[6] = {10, -20, 30, -40, 50, -60}, want[3] = {-20, -40, -60};
    uint8_t cond[6] = {0, 1, 0, 1, 0, 1};
    const void *in[2] = {x, cond};
    void *out[1];
    run(&md, in, out);
    expect_shape(&md, 0, 1, (int64_t[]){3});
    assert_memory_equal(out[0], want, sizeof want);
    free_outs(out, 1);
    unload(&md);
}

/* A constant condition gives a static result (no dynamic output, no SCATTER). */
static void test_compress_const(void **state)
{
    (void)state;
    Model md;
    memset(&md, 0, sizeof md);
    ir_diag_init(&md.d, "test.onnx");
    md.g = ir_graph_new(&md.d);
    IrType xt = T(IR_DT_F32, 4), ct = T(IR_DT_BOOL, 4);
    uint8_t cond[4] = {1, 0, 0, 1};
    ValId in[2] = {ir_add_input(md.g, "x", &xt), ir_add_const(md.g, "c", &ct, cond)};
    IrForeign f = {"Compress", "", 13};
    NodeId n = ir_add_foreign(md.g, &f, in, 2, 1, NULL, 0, &O);
    ir_add_output(md.g, ir_node(md.g, n)->out[0]);
    load(&md, 0);
    assert_int_equal(spy_model_output_dynamic_axis(md.m, 0), -1);
    assert_int_equal(spy_model_num_outputs(md.m), 1);
    float x[4] = {1, 2, 3, 4}, want[2] = {1, 4};
    const void *inp[1] = {x};
    void *out[1];
    run(&md, inp, out);
    expect_shape(&md, 0, 1, (int64_t[]){2});
    assert_memory_equal(out[0], want, sizeof want);
    free_outs(out, 1);
    unload(&md);
}

/* ---- Unique ---------------------------------------------------------------------- */

/* Reference Unique of n floats: y, first index, inverse, counts; returns the count. */
static int ref_unique(const float *x, int n, bool sorted, float *y, int64_t *idx, int64_t *inv,
                      int64_t *cnt)
{
    int u = 0;
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < u && y[j] != x[i])
            j++;
        if (j == u) {
            y[u] = x[i];
            idx[u] = i;
            cnt[u++] = 0;
        }
        cnt[j]++;
    }
    if (sorted)                             /* insertion sort of the unique values */
        for (int i = 1; i < u; i++)
            for (int j = i; j > 0 && y[j - 1] > y[j]; j--) {
                float t = y[j];
                y[j] = y[j - 1];
                y[j - 1] = t;
                int64_t a = idx[j], b = cnt[j];
                idx[j] = idx[j - 1];
                cnt[j] = cnt[j - 1];
                idx[j - 1] = a;
                cnt[j - 1] = b;
            }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < u; j++)
            if (y[j] == x[i])
                inv[i] = j;
    return u;
}

static void check_unique(bool sorted, int v)
{
    enum { N = 12 };
    Model md;
    IrType xt = T(IR_DT_F32, 3, 4);
    const IrType *ins[1] = {&xt};
    IrAttr a = ir_attr_int("sorted", sorted);
    build(&md, "Unique", ins, 1, 4, &a, 1);
    load(&md, v);
    for (int round = 0; round < 3; round++) {
        float x[N], y[N];
        int64_t idx[N], inv[N], cnt[N];
        for (int i = 0; i < N; i++)
            x[i] = round == 0 ? 2.5f : (float)urand(round == 1 ? 4 : 50) - 10.0f;
        int u = ref_unique(x, N, sorted, y, idx, inv, cnt);
        const void *in[1] = {x};
        void *out[4];
        run(&md, in, out);
        expect_shape(&md, 0, 1, (int64_t[]){u});
        expect_shape(&md, 1, 1, (int64_t[]){u});
        expect_shape(&md, 2, 1, (int64_t[]){N});
        expect_shape(&md, 3, 1, (int64_t[]){u});
        assert_memory_equal(out[0], y, (size_t)u * 4);
        assert_memory_equal(out[1], idx, (size_t)u * 8);
        assert_memory_equal(out[2], inv, sizeof inv);
        assert_memory_equal(out[3], cnt, (size_t)u * 8);
        free_outs(out, 4);
    }
    unload(&md);
}

static void test_unique(void **state)
{
    (void)state;
    check_unique(true, 0);
    check_unique(false, 0);
    check_unique(true, 1);
}

/* Unique along axis 0 of an int32 [5, 2]: lexicographic order of the rows. */
static void test_unique_axis(void **state)
{
    (void)state;
    Model md;
    IrType xt = T(IR_DT_I32, 5, 2);
    const IrType *ins[1] = {&xt};
    IrAttr a[2] = {ir_attr_int("axis", 0), ir_attr_int("sorted", 1)};
    build(&md, "Unique", ins, 1, 4, a, 2);
    load(&md, 0);
    int32_t x[10] = {3, 1, 1, 9, 3, 1, 1, 2, 1, 9};
    int32_t y[8] = {1, 2, 1, 9, 3, 1};
    int64_t idx[3] = {3, 1, 0}, inv[5] = {2, 1, 2, 0, 1}, cnt[3] = {1, 2, 2};
    const void *in[1] = {x};
    void *out[4];
    run(&md, in, out);
    expect_shape(&md, 0, 2, (int64_t[]){3, 2});
    assert_memory_equal(out[0], y, 6 * 4);
    assert_memory_equal(out[1], idx, sizeof idx);
    assert_memory_equal(out[2], inv, sizeof inv);
    assert_memory_equal(out[3], cnt, sizeof cnt);
    free_outs(out, 4);
    unload(&md);
}

/* ---- NonMaxSuppression ------------------------------------------------------------- */

/* Reference IoU test of two boxes (as the ONNX reference runtime computes it). */
static bool ref_suppress(const float *a, const float *b, bool center, float thr)
{
    float ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;
    if (!center) {
        ay0 = fminf(a[0], a[2]), ay1 = fmaxf(a[0], a[2]), ax0 = fminf(a[1], a[3]),
        ax1 = fmaxf(a[1], a[3]);
        by0 = fminf(b[0], b[2]), by1 = fmaxf(b[0], b[2]), bx0 = fminf(b[1], b[3]),
        bx1 = fmaxf(b[1], b[3]);
    } else {
        ax0 = a[0] - a[2] / 2, ax1 = a[0] + a[2] / 2, ay0 = a[1] - a[3] / 2, ay1 = a[1] + a[3] / 2;
        bx0 = b[0] - b[2] / 2, bx1 = b[0] + b[2] / 2, by0 = b[1] - b[3] / 2, by1 = b[1] + b[3] / 2;
    }
    float iw = fminf(ax1, bx1) - fmaxf(ax0, bx0), ih = fminf(ay1, by1) - fmaxf(ay0, by0);
    if (iw <= 0 || ih <= 0)
        return false;
    float inter = iw * ih, aa = (ax1 - ax0) * (ay1 - ay0), ab = (bx1 - bx0) * (by1 - by0);
    float uni = aa + ab - inter;
    if (inter <= 0 || aa <= 0 || ab <= 0 || uni <= 0)
        return false;
    return inter / uni > thr;
}

/* Reference NMS: rows (b, c, i) into out; returns their number. */
static int ref_nms(const float *boxes, const float *scores, int B, int C, int S, int64_t mx,
                   float iou, float sthr, bool center, int64_t *out)
{
    int n = 0;
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++) {
            const float *sc = scores + (b * C + c) * S;
            int order[64], sel[64], ns = 0;
            for (int i = 0; i < S; i++)
                order[i] = i;
            for (int i = 1; i < S; i++)     /* stable: equal scores keep index order */
                for (int j = i; j > 0 && sc[order[j - 1]] < sc[order[j]]; j--) {
                    int t = order[j];
                    order[j] = order[j - 1];
                    order[j - 1] = t;
                }
            for (int k = 0; k < S && ns < mx; k++) {
                int i = order[k];
                if (!(sc[i] > sthr))
                    continue;
                bool ok = true;
                for (int q = 0; q < ns && ok; q++)
                    ok = !ref_suppress(boxes + (b * S + sel[q]) * 4, boxes + (b * S + i) * 4,
                                       center, iou);
                if (ok) {
                    sel[ns++] = i;
                    out[3 * n] = b, out[3 * n + 1] = c, out[3 * n + 2] = i;
                    n++;
                }
            }
        }
    return n;
}

static void check_nms(bool center, int v)
{
    enum { B = 2, C = 3, S = 10 };
    Model md;
    IrType bt = T(IR_DT_F32, B, S, 4), st = T(IR_DT_F32, B, C, S), mt = T(IR_DT_I64, 1),
           ft = T(IR_DT_F32, 1);
    const IrType *ins[5] = {&bt, &st, &mt, &ft, &ft};
    IrAttr a = ir_attr_int("center_point_box", center);
    build(&md, "NonMaxSuppression", ins, 5, 1, &a, 1);
    load(&md, v);
    for (int round = 0; round < 3; round++) {
        float boxes[B * S * 4], scores[B * C * S];
        for (int i = 0; i < B * S * 4; i++)
            boxes[i] = (float)urand(20) / 4.0f;
        for (int i = 0; i < B * C * S; i++)
            scores[i] = (float)urand(8) / 8.0f;       /* ties on purpose */
        int64_t mx = round == 0 ? 100 : round == 1 ? 2 : 0;
        float iou = round == 2 ? 0.0f : 0.3f, sthr = round == 1 ? 0.3f : -1.0f;
        int64_t want[B * C * S * 3];
        int n = ref_nms(boxes, scores, B, C, S, mx, iou, sthr, center, want);
        const void *in[5] = {boxes, scores, &mx, &iou, &sthr};
        void *out[1];
        run(&md, in, out);
        expect_shape(&md, 0, 2, (int64_t[]){n, 3});
        assert_memory_equal(out[0], want, (size_t)n * 3 * 8);
        free_outs(out, 1);
    }
    unload(&md);
}

static void test_nms(void **state)
{
    (void)state;
    check_nms(false, 0);
    check_nms(true, 0);
    check_nms(false, 1);
}

/* Without max_output_boxes_per_class nothing is selected: a static [0, 3] result. */
static void test_nms_no_limit_input(void **state)
{
    (void)state;
    Model md;
    IrType bt = T(IR_DT_F32, 1, 3, 4), st = T(IR_DT_F32, 1, 1, 3);
    const IrType *ins[2] = {&bt, &st};
    build(&md, "NonMaxSuppression", ins, 2, 1, NULL, 0);
    load(&md, 0);
    spy_tensor_info info;
    assert_int_equal(spy_model_output_info(md.m, 0, &info), SPY_OK);
    assert_int_equal(info.dims[0], 0);
    assert_int_equal(spy_model_output_dynamic_axis(md.m, 0), -1);
    unload(&md);
}

/* ---- propagation through the ops that follow ---------------------------------------- */

/* NonZero -> Transpose -> Cast -> Mul (the torch.nonzero pattern): the extent moves to
 * axis 0 and survives pointwise ops with a broadcast operand. */
static void test_propagation(void **state)
{
    (void)state;
    Model md;
    memset(&md, 0, sizeof md);
    ir_diag_init(&md.d, "test.onnx");
    md.g = ir_graph_new(&md.d);
    IrGraph *g = md.g;
    IrType xt = T(IR_DT_F32, 2, 3), st = T(IR_DT_F32, 2);
    float scale[2] = {10, 100};
    ValId x = ir_add_input(g, "x", &xt), sc = ir_add_const(g, "s", &st, scale);
    IrForeign nz = {"NonZero", "", 13}, tr = {"Transpose", "", 13}, ca = {"Cast", "", 13},
              mu = {"Mul", "", 13};
    ValId v = ir_node(g, ir_add_foreign(g, &nz, &x, 1, 1, NULL, 0, &O))->out[0];
    IrAttr perm = ir_attr_ints(g, "perm", (int64_t[]){1, 0}, 2), to = ir_attr_int("to", 1);
    v = ir_node(g, ir_add_foreign(g, &tr, &v, 1, 1, &perm, 1, &O))->out[0];
    ValId t = v;
    v = ir_node(g, ir_add_foreign(g, &ca, &v, 1, 1, &to, 1, &O))->out[0];
    ValId in2[2] = {v, sc};
    v = ir_node(g, ir_add_foreign(g, &mu, in2, 2, 1, NULL, 0, &O))->out[0];
    ir_add_output(g, v);
    ir_add_output(g, t);
    load(&md, 0);
    assert_int_equal(spy_model_num_outputs(md.m), 2);
    assert_int_equal(spy_model_output_dynamic_axis(md.m, 0), 0);
    assert_int_equal(spy_model_output_dynamic_axis(md.m, 1), 0);
    int r;
    int64_t dims[SPY_MAX_RANK];
    assert_int_equal(spy_session_output_shape(md.s, 0, &r, dims), SPY_OK);
    assert_int_equal(dims[0], 6);                          /* the upper bound until a run */
    assert_int_equal(spy_session_output_shape(md.s, 2, &r, dims), SPY_E_INVALID_ARG);
    assert_int_equal(spy_session_output_shape(md.s, 0, NULL, dims), SPY_E_INVALID_ARG);
    float xv[6] = {1, 0, 2, 0, 0, 3}, want_f[6] = {0, 0, 0, 200, 10, 200};
    int64_t want_t[6] = {0, 0, 0, 2, 1, 2};
    const void *in[1] = {xv};
    void *out[2];
    run(&md, in, out);
    expect_shape(&md, 0, 2, (int64_t[]){3, 2});
    expect_shape(&md, 1, 2, (int64_t[]){3, 2});
    assert_memory_equal(out[0], want_f, sizeof want_f);
    assert_memory_equal(out[1], want_t, sizeof want_t);
    free_outs(out, 2);
    unload(&md);
}

/* ---- what the compiler refuses ----------------------------------------------------- */

/* A reduction over a NonZero result is refused with a message naming it. */
static void test_refused_consumer(void **state)
{
    (void)state;
    IrDiag d;
    ir_diag_init(&d, "test.onnx");
    IrGraph *g = ir_graph_new(&d);
    IrType xt = T(IR_DT_F32, 4);
    ValId x = ir_add_input(g, "x", &xt);
    IrForeign nz = {"NonZero", "", 13}, rs = {"ReduceSum", "", 13};
    NodeId a = ir_add_foreign(g, &nz, &x, 1, 1, NULL, 0, &O);
    ValId v = ir_node(g, a)->out[0];
    NodeId b = ir_add_foreign(g, &rs, &v, 1, 1, NULL, 0, &(IrOrigin){"sum", "ReduceSum", NULL});
    ir_add_output(g, ir_node(g, b)->out[0]);
    SpyTarget t;
    fe_default_target(&t);
    PassOptions po = {.opt_level = 2, .target = &t, .verify = true};
    assert_false(pass_run_pipeline(g, &po));
    bool found = false;
    for (int i = 0; i < d.nmsgs; i++)
        found |= strstr(d.msgs[i], "'sum'") && strstr(d.msgs[i], "data-dependent");
    if (!found)
        ir_diag_print(&d, stderr);
    assert_true(found);
    ir_graph_free(g);
    ir_diag_free(&d);
}

/* ---- the SCATTER instruction in the bundle verifier -------------------------------- */

/* The first SCATTER instruction of a bundle. */
static SpyScatter *find_scatter(uint8_t *buf)
{
    SpyHeader *h = (SpyHeader *)buf;
    SpySection *s = (SpySection *)(buf + sizeof *h);
    for (uint32_t i = 0; i < h->nsections; i++) {
        if (s[i].id != SPY_SEC_CODE)
            continue;
        SpyInsn *code = (SpyInsn *)(buf + s[i].offset);
        for (uint64_t k = 0; k < s[i].size / sizeof *code; k++)
            if (code[k].opcode == ISA_SCATTER)
                return &code[k].scatter;
    }
    return NULL;
}

static void test_scatter_verifier(void **state)
{
    (void)state;
    Model md;
    IrType xt = T(IR_DT_F32, 8);
    const IrType *ins[1] = {&xt};
    build(&md, "NonZero", ins, 1, 1, NULL, 0);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_true(compile_model(&md, 0, &buf, &len));
    assert_int_equal(((SpyHeader *)buf)->features, SPY_FEAT_SCATTER);
    assert_int_equal(((SpyHeader *)buf)->minor, SPY_SBIN_MINOR);
    uint8_t *c = malloc(len);
    memcpy(c, buf, len);                    /* no feature bit: SCATTER refused */
    ((SpyHeader *)c)->features = 0;
    ut_fix_crcs(c);
    ut_expect_refused(c, len, "feature bit");
    memcpy(c, buf, len);                    /* table rows past the segment */
    SpyScatter *sc = find_scatter(c);
    assert_non_null(sc);
    sc->bound += 1000;
    ut_fix_crcs(c);
    ut_expect_refused(c, len, "SCATTER table");
    memcpy(c, buf, len);                    /* source rows past the scratchpad */
    sc = find_scatter(c);
    sc->lx_src = 0xFFFFFF00u;
    ut_fix_crcs(c);
    ut_expect_refused(c, len, "SCATTER source");
    memcpy(c, buf, len);                    /* a count location past its segment */
    SpyHeader *h = (SpyHeader *)c;
    SpySection *s = (SpySection *)(c + sizeof *h);
    for (uint32_t i = 0; i < h->nsections; i++)
        if (s[i].id == SPY_SEC_TENSORS)
            ((SpyTensorDesc *)(c + s[i].offset))[1].count_off = 1u << 20;
    ut_fix_crcs(c);
    ut_expect_refused(c, len, "count at offset");
    free(c);
    free(buf);
    ir_graph_free(md.g);
    ir_diag_free(&md.d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scatter_ir),
        cmocka_unit_test(test_scatter_device),
        cmocka_unit_test(test_dyn_table),
        cmocka_unit_test(test_nonzero),
        cmocka_unit_test(test_nonzero_large),
        cmocka_unit_test(test_compress),
        cmocka_unit_test(test_compress_const),
        cmocka_unit_test(test_unique),
        cmocka_unit_test(test_unique_axis),
        cmocka_unit_test(test_nms),
        cmocka_unit_test(test_nms_no_limit_input),
        cmocka_unit_test(test_propagation),
        cmocka_unit_test(test_refused_consumer),
        cmocka_unit_test(test_scatter_verifier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
