/* test_backend.c: unit tests of the back end (fuse, layout, divide, tile, dram_plan,
 * codegen, bundle writer, disassembler). Small core-op graphs are built by hand, run
 * through the back-end passes and the code generator, loaded and run on the emulator
 * (libspyrert, with LX poisoning) and compared with direct C reference computations.
 * Every case runs in three configurations: the reference target at -O2, a target with
 * 5 cores and an 8 KiB scratchpad budget (forces K-splitting, reduced-dim chunking and
 * small tiles) at -O2, and the reference target at -O0 (no fusion, no virtual views).
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
#include "spyrt.h"
#include "unit_util.h"

#define NVARIANT 3
#define MAXIO 12

/* ---- graph building helpers ------------------------------------------------------ */

typedef struct {
    IrDiag d;
    IrGraph *g;
    const void *in[MAXIO];     /* host input buffers, in graph input order */
    const void *ref[MAXIO];    /* expected outputs, host dtype */
    int nin, nref;
} Fx;

static const IrOrigin O = {"n", "Test", NULL};
static uint32_t rng_state = 12345;

/* Deterministic pseudo-random float in [-1, 1). */
static float frand(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)((rng_state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static float *rand_f32(size_t n)
{
    float *p = malloc(n * sizeof *p + 4);
    for (size_t i = 0; i < n; i++)
        p[i] = frand();
    return p;
}

static float *zeros_f32(size_t n) { return calloc(n + 1, sizeof(float)); }

static void fx_begin(Fx *f)
{
    memset(f, 0, sizeof *f);
    ir_diag_init(&f->d, "test.onnx");
    f->g = ir_graph_new(&f->d);
    assert_non_null(f->g);
}

static void fx_end(Fx *f)
{
    ir_graph_free(f->g);
    ir_diag_free(&f->d);
}

#define NI(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define T(dt, ...) ut_type(dt, NI(__VA_ARGS__), (int64_t[]){__VA_ARGS__})
#define INTS(g, name, ...) ir_attr_ints(g, name, (int64_t[]){__VA_ARGS__}, NI(__VA_ARGS__))

/* Graph input with host data. */
static ValId input(Fx *f, const char *name, IrType t, const void *data)
{
    f->in[f->nin++] = data;
    return ir_add_input(f->g, name, &t);
}

/* Graph output with expected host data. */
static void output(Fx *f, ValId v, const void *expect)
{
    ir_add_output(f->g, v);
    f->ref[f->nref++] = expect;
}

static ValId cnst(Fx *f, IrType t, const void *data) { return ir_add_const(f->g, "w", &t, data); }

static ValId scalar(Fx *f, float v)
{
    IrType t = {.dtype = IR_DT_F32, .rank = 0};
    return ir_add_const(f->g, "s", &t, &v);
}

/* Core node with attributes; returns its output. */
static ValId node(Fx *f, IrOp op, const ValId *in, int nin, const IrAttr *a, int na)
{
    NodeId n = ir_add_node(f->g, op, in, nin, a, na, &O);
    assert_false(ir_failed(f->g));
    return ir_node(f->g, n)->out[0];
}

static ValId bin(Fx *f, int fn, ValId a, ValId b) { return ir_binary(f->g, fn, a, b, &O); }
static ValId un(Fx *f, int fn, ValId a) { return ir_unary(f->g, fn, a, &O); }

/* ---- compile and run ------------------------------------------------------------ */

/* Target of configuration v. */
static void target(int v, SpyTarget *t)
{
    fe_default_target(t);
    if (v == 1) {
        t->cores = 5;
        t->lx_budget_bytes = 8192;
    }
}

/* Run the back-end passes (verifying the IR and the plan after each) and the code
 * generator. */
static uint8_t *compile(IrGraph *g, const SpyTarget *t, int opt, size_t *len)
{
    static const char *const names[] = {"fuse", "layout", "divide", "tile", "dram_plan"};
    PassOptions po = {.opt_level = opt, .target = t, .verify = true};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const PassInfo *p = pass_find(names[i]);
        assert_non_null(p);
        bool ok = p->run(g, &po) && ir_verify(g, p->name) && plan_verify(g, t, p->name);
        if (!ok) {
            ir_diag_print(g->diag, stderr);
            fail_msg("pass %s failed", names[i]);
        }
    }
    for (uint32_t k = 0; k < g->plan->nkernels; k++)
        assert_true(g->plan->kernels[k].lx_bytes <= t->lx_budget_bytes);
    CgOptions co = {.target = t, .meta = "compiler=test\n"};
    uint8_t *buf = NULL;
    assert_true(cg_emit_bundle(g, &co, &buf, len));
    return buf;
}

/* Compare n host elements of dtype dt. */
static void compare(int dt, const void *got, const void *want, size_t n, int idx)
{
    for (size_t i = 0; i < n; i++) {
        if (dt == IR_DT_F32) {
            float a = ((const float *)got)[i], b = ((const float *)want)[i];
            if (!(fabsf(a - b) <= 1e-4f + 1e-4f * fabsf(b)))
                fail_msg("output %d element %zu: got %g, want %g", idx, i, a, b);
        } else {
            size_t es = dt == IR_DT_I64 ? 8 : dt == IR_DT_I32 ? 4 : 1;
            if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0)
                fail_msg("output %d element %zu differs", idx, i);
        }
    }
}

/* Load the bundle, run it on f's inputs and check every output. */
static void run_bundle(Fx *f, const uint8_t *buf, size_t len)
{
    spy_model *m = NULL;
    char err[512];
    spy_status st = spy_model_load_memory(buf, len, &m, err, sizeof err);
    if (st != SPY_OK)
        fail_msg("bundle refused: %s", err);
    spy_session_options so = {.num_threads = 2, .debug_lx_poison = 1};
    spy_session *s = NULL;
    assert_int_equal(spy_session_create(m, &so, &s), SPY_OK);
    void *outs[MAXIO];
    spy_tensor_info info[MAXIO];
    for (int i = 0; i < f->nref; i++) {
        assert_int_equal(spy_model_output_info(m, i, &info[i]), SPY_OK);
        outs[i] = calloc(1, info[i].nbytes + 8);
    }
    st = spy_session_run(s, f->in, outs);
    if (st != SPY_OK)
        fail_msg("run failed: %s", spy_session_error(s));
    for (int i = 0; i < f->nref; i++) {
        size_t n = 1;
        for (int d = 0; d < info[i].rank; d++)
            n *= (size_t)info[i].dims[d];
        compare(info[i].dtype, outs[i], f->ref[i], n, i);
        free(outs[i]);
    }
    spy_session_free(s);
    spy_model_free(m);
}

typedef void (*BuildFn)(Fx *f);

/* Build, compile, run and check one case in every configuration. */
static void run_case(BuildFn build)
{
    for (int v = 0; v < NVARIANT; v++) {
        Fx f;
        SpyTarget t;
        fx_begin(&f);
        rng_state = 12345;
        build(&f);
        target(v, &t);
        size_t len = 0;
        uint8_t *buf = compile(f.g, &t, v == 2 ? 0 : 2, &len);
        run_bundle(&f, buf, len);
        free(buf);
        for (int i = 0; i < f.nin; i++)
            free((void *)f.in[i]);
        for (int i = 0; i < f.nref; i++)
            free((void *)f.ref[i]);
        fx_end(&f);
    }
}

/* ---- cases ------------------------------------------------------------------------ */

/* relu(A[2,37,300] x W[300,45] + bias[45]), W constant (stored sticked). */
static void build_matmul(Fx *f)
{
    enum { B = 2, M = 37, K = 300, N = 45 };
    float *a = rand_f32(B * M * K), *w = rand_f32(K * N), *bias = rand_f32(N);
    float *y = zeros_f32(B * M * N);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                float s = 0;
                for (int k = 0; k < K; k++)
                    s += a[(b * M + i) * K + k] * w[k * N + j];
                s += bias[j];
                y[(b * M + i) * N + j] = s > 0 ? s : 0;
            }
    ValId x = input(f, "a", T(IR_DT_F32, B, M, K), a);
    ValId wv = cnst(f, T(IR_DT_F32, K, N), w), bv = cnst(f, T(IR_DT_F32, N), bias);
    ValId mm = ir_matmul(f->g, x, wv, &O);
    output(f, un(f, IR_UN_RELU, bin(f, IR_BIN_ADD, mm, bv)), y);
    free(w);
    free(bias);
}

static void conv_ref(const float *x, const float *w, float *y, int n, int c, int h, int wd,
                     int m, int g, int kh, int kw, int sh, int sw, int dh, int dw);

/* A deep product [4,1000] x [1000,8] (its K is split on the small target), plus a
 * 3x3 conv over 40 channels (deep im2col). */
static void build_deep(Fx *f)
{
    float *a = rand_f32(4000), *w = rand_f32(8000), *y = zeros_f32(32);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++)
            for (int k = 0; k < 1000; k++)
                y[i * 8 + j] += a[i * 1000 + k] * w[k * 8 + j];
    ValId x = input(f, "a", T(IR_DT_F32, 4, 1000), a);
    output(f, ir_matmul(f->g, x, input(f, "w", T(IR_DT_F32, 1000, 8), w), &O), y);
    float *cx = rand_f32(40 * 36), *cw = rand_f32(3 * 40 * 9), *cy = zeros_f32(3 * 16);
    conv_ref(cx, cw, cy, 1, 40, 6, 6, 3, 1, 3, 3, 1, 1, 1, 1);
    ValId in[2] = {input(f, "x", T(IR_DT_F32, 1, 40, 6, 6), cx),
                   cnst(f, T(IR_DT_F32, 3, 40, 3, 3), cw)};
    output(f, node(f, IR_OP_CONV, in, 2, NULL, 0), cy);
    free(cw);
}

/* Batched matmul with a broadcast batch dim and an activation B: [2,3,5,6] x [3,6,4]. */
static void build_bmm(Fx *f)
{
    float *a = rand_f32(2 * 3 * 5 * 6), *b = rand_f32(3 * 6 * 4), *y = zeros_f32(2 * 3 * 5 * 4);
    for (int p = 0; p < 2; p++)
        for (int q = 0; q < 3; q++)
            for (int i = 0; i < 5; i++)
                for (int j = 0; j < 4; j++) {
                    float s = 0;
                    for (int k = 0; k < 6; k++)
                        s += a[((p * 3 + q) * 5 + i) * 6 + k] * b[(q * 6 + k) * 4 + j];
                    y[((p * 3 + q) * 5 + i) * 4 + j] = s;
                }
    ValId x = input(f, "a", T(IR_DT_F32, 2, 3, 5, 6), a);
    ValId z = input(f, "b", T(IR_DT_F32, 3, 6, 4), b);
    output(f, ir_matmul(f->g, x, z, &O), y);
}

/* Reference 2-d convolution (NCHW, no padding). */
static void conv_ref(const float *x, const float *w, float *y, int n, int c, int h, int wd,
                     int m, int g, int kh, int kw, int sh, int sw, int dh, int dw)
{
    int oh = (h - (kh - 1) * dh - 1) / sh + 1, ow = (wd - (kw - 1) * dw - 1) / sw + 1;
    int cg = c / g, mg = m / g;
    for (int b = 0; b < n; b++)
        for (int o = 0; o < m; o++)
            for (int i = 0; i < oh; i++)
                for (int j = 0; j < ow; j++) {
                    float s = 0;
                    int gi = o / mg;
                    for (int cc = 0; cc < cg; cc++)
                        for (int p = 0; p < kh; p++)
                            for (int q = 0; q < kw; q++)
                                s += w[((o * cg + cc) * kh + p) * kw + q] *
                                     x[((b * c + gi * cg + cc) * h + i * sh + p * dh) * wd +
                                       j * sw + q * dw];
                    y[((b * m + o) * oh + i) * ow + j] = s;
                }
}

/* relu(conv3x3 stride 2, groups 2, + bias[1,6,1,1]) + residual. */
static void build_conv(Fx *f)
{
    float *x = rand_f32(2 * 4 * 11 * 13), *w = rand_f32(6 * 2 * 9), *bias = rand_f32(6);
    float *res = rand_f32(2 * 6 * 5 * 6), *y = zeros_f32(2 * 6 * 5 * 6);
    conv_ref(x, w, y, 2, 4, 11, 13, 6, 2, 3, 3, 2, 2, 1, 1);
    for (int i = 0; i < 2 * 6 * 30; i++) {
        float v = y[i] + bias[(i / 30) % 6];
        y[i] = (v > 0 ? v : 0) + res[i];
    }
    ValId xv = input(f, "x", T(IR_DT_F32, 2, 4, 11, 13), x);
    ValId rv = input(f, "r", T(IR_DT_F32, 2, 6, 5, 6), res);
    ValId in[2] = {xv, cnst(f, T(IR_DT_F32, 6, 2, 3, 3), w)};
    IrAttr at[2] = {INTS(f->g, "strides", 2, 2), ir_attr_int("group", 2)};
    ValId c = node(f, IR_OP_CONV, in, 2, at, 2);
    c = bin(f, IR_BIN_ADD, c, cnst(f, T(IR_DT_F32, 1, 6, 1, 1), bias));
    output(f, bin(f, IR_BIN_ADD, un(f, IR_UN_RELU, c), rv), y);
    free(w);
    free(bias);
}

/* A projection shortcut: relu((conv_a(x) + ba) + (conv_b(x) + bb)), 1 x 1 convs. */
static void build_shortcut(Fx *f)
{
    float *x = rand_f32(2 * 4 * 5 * 6), *wa = rand_f32(6 * 4), *wb = rand_f32(6 * 4);
    float *ba = rand_f32(6), *bb = rand_f32(6), *ya = zeros_f32(2 * 6 * 30);
    float *yb = zeros_f32(2 * 6 * 30), *y = zeros_f32(2 * 6 * 30);
    conv_ref(x, wa, ya, 2, 4, 5, 6, 6, 1, 1, 1, 1, 1, 1, 1);
    conv_ref(x, wb, yb, 2, 4, 5, 6, 6, 1, 1, 1, 1, 1, 1, 1);
    for (int i = 0; i < 2 * 6 * 30; i++) {
        float v = (ya[i] + ba[(i / 30) % 6]) + (yb[i] + bb[(i / 30) % 6]);
        y[i] = v > 0 ? v : 0;
    }
    ValId xv = input(f, "x", T(IR_DT_F32, 2, 4, 5, 6), x);
    ValId ina[2] = {xv, cnst(f, T(IR_DT_F32, 6, 4, 1, 1), wa)};
    ValId inb[2] = {xv, cnst(f, T(IR_DT_F32, 6, 4, 1, 1), wb)};
    ValId a = node(f, IR_OP_CONV, ina, 2, NULL, 0);
    ValId b = node(f, IR_OP_CONV, inb, 2, NULL, 0);
    a = bin(f, IR_BIN_ADD, a, cnst(f, T(IR_DT_F32, 1, 6, 1, 1), ba));
    b = bin(f, IR_BIN_ADD, b, cnst(f, T(IR_DT_F32, 1, 6, 1, 1), bb));
    output(f, un(f, IR_UN_RELU, bin(f, IR_BIN_ADD, a, b)), y);
    free(wa);
    free(wb);
    free(ba);
    free(bb);
    free(ya);
    free(yb);
}

/* Epilogues that read the contraction's result twice: swish x * sigmoid(x) over a
 * product [3,70,200] x [200,50] (no bias: the MATMUL's own result is read twice), and
 * x * min(relu(x + 3), 6) / 6 (hardswish) over a 3x3 conv. */
static void build_twice(Fx *f)
{
    enum { B = 3, M = 70, K = 200, N = 50 };
    float *a = rand_f32(B * M * K), *w = rand_f32(K * N), *y = zeros_f32(B * M * N);
    for (int i = 0; i < B * M; i++)
        for (int j = 0; j < N; j++) {
            float s = 0;
            for (int k = 0; k < K; k++)
                s += a[i * K + k] * w[k * N + j];
            y[i * N + j] = s * (1.0f / (1.0f + expf(-s)));
        }
    ValId mm = ir_matmul(f->g, input(f, "a", T(IR_DT_F32, B, M, K), a),
                         cnst(f, T(IR_DT_F32, K, N), w), &O);
    output(f, bin(f, IR_BIN_MUL, mm, un(f, IR_UN_SIGMOID, mm)), y);
    float *x = rand_f32(2 * 5 * 9 * 8), *cw = rand_f32(7 * 5 * 9), *cy = zeros_f32(2 * 7 * 7 * 6);
    for (int i = 0; i < 7 * 5 * 9; i++)
        cw[i] *= 2.0f;                    /* results past -3 and 3 */
    conv_ref(x, cw, cy, 2, 5, 9, 8, 7, 1, 3, 3, 1, 1, 1, 1);
    for (int i = 0; i < 2 * 7 * 7 * 6; i++) {
        float r = cy[i] + 3.0f;
        r = r > 0 ? r : 0;
        cy[i] = cy[i] * (r < 6.0f ? r : 6.0f) / 6.0f;
    }
    ValId in[2] = {input(f, "x", T(IR_DT_F32, 2, 5, 9, 8), x), cnst(f, T(IR_DT_F32, 7, 5, 3, 3), cw)};
    ValId c = node(f, IR_OP_CONV, in, 2, NULL, 0);
    ValId r = un(f, IR_UN_RELU, bin(f, IR_BIN_ADD, c, scalar(f, 3.0f)));
    r = bin(f, IR_BIN_MIN, r, scalar(f, 6.0f));
    output(f, bin(f, IR_BIN_DIV, bin(f, IR_BIN_MUL, c, r), scalar(f, 6.0f)), cy);
    free(w);
    free(cw);
}

/* Depthwise 3x3 conv with dilation 2, and a 1-d conv with stride 3. */
static void build_dwconv(Fx *f)
{
    float *x = rand_f32(8 * 10 * 10), *w = rand_f32(8 * 9), *y = zeros_f32(8 * 6 * 6);
    conv_ref(x, w, y, 1, 8, 10, 10, 8, 8, 3, 3, 1, 1, 2, 2);
    float *x1 = rand_f32(2 * 3 * 20), *w1 = rand_f32(4 * 3 * 5), *y1 = zeros_f32(2 * 4 * 6);
    conv_ref(x1, w1, y1, 2, 3, 1, 20, 4, 1, 1, 5, 1, 3, 1, 1);
    ValId in[2] = {input(f, "x", T(IR_DT_F32, 1, 8, 10, 10), x),
                   cnst(f, T(IR_DT_F32, 8, 1, 3, 3), w)};
    IrAttr at[2] = {INTS(f->g, "dilations", 2, 2), ir_attr_int("group", 8)};
    output(f, node(f, IR_OP_CONV, in, 2, at, 2), y);
    ValId in1[2] = {input(f, "x1", T(IR_DT_F32, 2, 3, 20), x1),
                    cnst(f, T(IR_DT_F32, 4, 3, 5), w1)};
    IrAttr at1[1] = {INTS(f->g, "strides", 3)};
    output(f, node(f, IR_OP_CONV, in1, 2, at1, 1), y1);
    free(w);
    free(w1);
}

/* Zero-padded input of a conv (the PAD is fused into the conv's input patch). */
static float *pad_ref(const float *x, int n, int c, int h, int w, int pt, int pl, int pb, int pr)
{
    int hp = h + pt + pb, wp = w + pl + pr;
    float *y = zeros_f32((size_t)n * c * hp * wp);
    for (int b = 0; b < n * c; b++)
        for (int i = 0; i < h; i++)
            for (int j = 0; j < w; j++)
                y[(b * hp + i + pt) * wp + j + pl] = x[(b * h + i) * w + j];
    return y;
}

/* PAD + conv 3x3 stride 2 over [1,3,7,8]; PAD + 1-d conv (dilation 2) over [2,4,9]. */
static void build_padconv(Fx *f)
{
    float *x = rand_f32(3 * 56), *w = rand_f32(5 * 3 * 9), *y = zeros_f32(5 * 5 * 4);
    float *xp = pad_ref(x, 1, 3, 7, 8, 1, 2, 1, 0);
    conv_ref(xp, w, y, 1, 3, 9, 10, 5, 1, 3, 3, 2, 2, 1, 1);
    float *x1 = rand_f32(2 * 4 * 9), *w1 = rand_f32(6 * 4 * 3), *y1 = zeros_f32(2 * 6 * 8);
    float *xp1 = pad_ref(x1, 2, 4, 1, 9, 0, 2, 0, 1);
    conv_ref(xp1, w1, y1, 2, 4, 1, 12, 6, 1, 1, 3, 1, 1, 1, 2);
    ValId xv = input(f, "x", T(IR_DT_F32, 1, 3, 7, 8), x);
    IrAttr pa[1] = {INTS(f->g, "pads", 0, 0, 1, 2, 0, 0, 1, 0)};
    ValId in[2] = {node(f, IR_OP_PAD, &xv, 1, pa, 1), cnst(f, T(IR_DT_F32, 5, 3, 3, 3), w)};
    IrAttr at[1] = {INTS(f->g, "strides", 2, 2)};
    output(f, node(f, IR_OP_CONV, in, 2, at, 1), y);
    ValId xv1 = input(f, "x1", T(IR_DT_F32, 2, 4, 9), x1);
    IrAttr pa1[1] = {INTS(f->g, "pads", 0, 0, 2, 0, 0, 1)};
    ValId in1[2] = {node(f, IR_OP_PAD, &xv1, 1, pa1, 1), cnst(f, T(IR_DT_F32, 6, 4, 3), w1)};
    IrAttr at1[1] = {INTS(f->g, "dilations", 2)};
    output(f, node(f, IR_OP_CONV, in1, 2, at1, 1), y1);
    free(w);
    free(w1);
    free(xp);
    free(xp1);
}

/* Max pool 3x3 stride 2 and sum pool 2x2 dilation 2 over [2,3,9,9]. */
static void build_pool(Fx *f)
{
    float *x = rand_f32(2 * 3 * 81), *y = zeros_f32(6 * 16), *z = zeros_f32(6 * 49);
    for (int c = 0; c < 6; c++) {
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                float m = -INFINITY;
                for (int p = 0; p < 3; p++)
                    for (int q = 0; q < 3; q++)
                        m = fmaxf(m, x[c * 81 + (2 * i + p) * 9 + 2 * j + q]);
                y[c * 16 + i * 4 + j] = m;
            }
        for (int i = 0; i < 7; i++)
            for (int j = 0; j < 7; j++) {
                float s = 0;
                for (int p = 0; p < 2; p++)
                    for (int q = 0; q < 2; q++)
                        s += x[c * 81 + (i + 2 * p) * 9 + j + 2 * q];
                z[c * 49 + i * 7 + j] = s;
            }
    }
    ValId xv = input(f, "x", T(IR_DT_F32, 2, 3, 9, 9), x);
    IrAttr a1[3] = {ir_attr_int("fn", IR_RED_MAX), INTS(f->g, "kernel", 3, 3),
                    INTS(f->g, "strides", 2, 2)};
    output(f, node(f, IR_OP_WINDOW, &xv, 1, a1, 3), y);
    IrAttr a2[3] = {ir_attr_int("fn", IR_RED_SUM), INTS(f->g, "kernel", 2, 2),
                    INTS(f->g, "dilations", 2, 2)};
    output(f, node(f, IR_OP_WINDOW, &xv, 1, a2, 3), z);
}

/* Reductions over inner, outer and mixed axes of [5,7,9], with prologue/epilogue. */
static void build_reduce(Fx *f)
{
    enum { A = 5, B = 7, C = 9 };
    float *x = rand_f32(A * B * C), *s2 = zeros_f32(A * B), *m0 = zeros_f32(B * C);
    float *s02 = zeros_f32(B), *p1 = zeros_f32(A * C);
    for (int i = 0; i < A * B; i++)
        for (int k = 0; k < C; k++)
            s2[i] += x[i * C + k];
    for (int j = 0; j < B * C; j++) {
        m0[j] = -INFINITY;
        for (int i = 0; i < A; i++)
            m0[j] = fmaxf(m0[j], x[i * B * C + j]);
    }
    for (int i = 0; i < A; i++)
        for (int j = 0; j < B; j++)
            for (int k = 0; k < C; k++)
                s02[j] += x[(i * B + j) * C + k];
    for (int i = 0; i < A; i++)
        for (int k = 0; k < C; k++) {
            float p = 1;
            for (int j = 0; j < B; j++)
                p *= x[(i * B + j) * C + k] * 0.5f + 1.0f;
            p1[i * C + k] = p + 1.0f;
        }
    ValId xv = input(f, "x", T(IR_DT_F32, A, B, C), x);
    output(f, ir_reduce(f->g, IR_RED_SUM, xv, (int64_t[]){2}, 1, false, &O), s2);
    output(f, ir_reduce(f->g, IR_RED_MAX, xv, (int64_t[]){0}, 1, true, &O), m0);
    output(f, ir_reduce(f->g, IR_RED_SUM, xv, (int64_t[]){0, 2}, 2, false, &O), s02);
    ValId pro = bin(f, IR_BIN_ADD, bin(f, IR_BIN_MUL, xv, scalar(f, 0.5f)), scalar(f, 1.0f));
    ValId r = ir_reduce(f->g, IR_RED_PROD, pro, (int64_t[]){1}, 1, false, &O);
    output(f, bin(f, IR_BIN_ADD, r, scalar(f, 1.0f)), p1);
}

/* Softmax along the last axis of [6,50], as decomposition produces it. */
static void build_softmax(Fx *f)
{
    float *x = rand_f32(6 * 50), *y = zeros_f32(6 * 50);
    for (int i = 0; i < 6; i++) {
        float m = -INFINITY, s = 0;
        for (int j = 0; j < 50; j++)
            m = fmaxf(m, x[i * 50 + j]);
        for (int j = 0; j < 50; j++)
            s += expf(x[i * 50 + j] - m);
        for (int j = 0; j < 50; j++)
            y[i * 50 + j] = expf(x[i * 50 + j] - m) / s;
    }
    ValId xv = input(f, "x", T(IR_DT_F32, 6, 50), x);
    ValId m = ir_reduce(f->g, IR_RED_MAX, xv, (int64_t[]){1}, 1, true, &O);
    ValId e = un(f, IR_UN_EXP, bin(f, IR_BIN_SUB, xv, m));
    ValId s = ir_reduce(f->g, IR_RED_SUM, e, (int64_t[]){1}, 1, true, &O);
    output(f, bin(f, IR_BIN_DIV, e, s), y);
}

/* A transpose as an output (materialised) and one feeding an add (a strided view). */
static void build_transpose(Fx *f)
{
    float *x = rand_f32(60), *yy = rand_f32(60), *t1 = zeros_f32(60), *t2 = zeros_f32(60);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 5; k++) {
                t1[(k * 3 + i) * 4 + j] = x[(i * 4 + j) * 5 + k];
                t2[(j * 3 + i) * 5 + k] = x[(i * 4 + j) * 5 + k] + yy[(j * 3 + i) * 5 + k];
            }
    ValId xv = input(f, "x", T(IR_DT_F32, 3, 4, 5), x);
    ValId yv = input(f, "y", T(IR_DT_F32, 4, 3, 5), yy);
    output(f, ir_transpose(f->g, xv, (int64_t[]){2, 0, 1}, &O), t1);
    output(f, bin(f, IR_BIN_ADD, ir_transpose(f->g, xv, (int64_t[]){1, 0, 2}, &O), yv), t2);
}

/* Slices with negative steps: as an output and feeding an exp. */
static void build_slice(Fx *f)
{
    float *x = rand_f32(48), *y = zeros_f32(9), *z = zeros_f32(9);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            y[i * 3 + j] = x[(5 - 2 * i) * 8 + 1 + 3 * j];
            z[i * 3 + j] = expf(x[(5 - 2 * i) * 8 + 7 - 3 * j]);
        }
    ValId xv = input(f, "x", T(IR_DT_F32, 6, 8), x);
    IrAttr a[3] = {INTS(f->g, "starts", 5, 1), INTS(f->g, "steps", -2, 3),
                   INTS(f->g, "sizes", 3, 3)};
    output(f, node(f, IR_OP_SLICE, &xv, 1, a, 3), y);
    IrAttr b[3] = {INTS(f->g, "starts", 5, 7), INTS(f->g, "steps", -2, -3),
                   INTS(f->g, "sizes", 3, 3)};
    output(f, un(f, IR_UN_EXP, node(f, IR_OP_SLICE, &xv, 1, b, 3)), z);
}

/* Pad [3,4] with lo (1,2), hi (2,-1), interior (1,0), value 7. */
static void build_pad(Fx *f)
{
    float *x = rand_f32(12), *y = zeros_f32(8 * 5);
    for (int i = 0; i < 40; i++)
        y[i] = 7.0f;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)             /* column 3 is cropped by hi = -1 */
            y[(1 + 2 * i) * 5 + 2 + j] = x[i * 4 + j];
    ValId xv = input(f, "x", T(IR_DT_F32, 3, 4), x);
    IrAttr a[3] = {INTS(f->g, "pads", 1, 2, 2, -1), INTS(f->g, "interior", 1, 0),
                   ir_attr_float("value", 7.0)};
    output(f, node(f, IR_OP_PAD, &xv, 1, a, 3), y);
}

/* Concat of [2,3,4], [2,1,4] and [2,5,4] along axis 1. */
static void build_concat(Fx *f)
{
    float *a = rand_f32(24), *b = rand_f32(8), *c = rand_f32(40), *y = zeros_f32(72);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 9; j++)
            for (int k = 0; k < 4; k++)
                y[(i * 9 + j) * 4 + k] = j < 3   ? a[(i * 3 + j) * 4 + k]
                                         : j < 4 ? b[i * 4 + k]
                                                 : c[(i * 5 + j - 4) * 4 + k];
    ValId in[3] = {input(f, "a", T(IR_DT_F32, 2, 3, 4), a), input(f, "b", T(IR_DT_F32, 2, 1, 4), b),
                   input(f, "c", T(IR_DT_F32, 2, 5, 4), c)};
    IrAttr at = ir_attr_int("axis", 1);
    output(f, node(f, IR_OP_CONCAT, in, 3, &at, 1), y);
}

/* Concats done in place by their producers: [relu(a) ; concat(2b, exp c)] along
 * axis 1, the result both an output and the input of a sum over axis 1. */
static void build_concat_in_place(Fx *f)
{
    float *a = rand_f32(24), *b = rand_f32(8), *c = rand_f32(40);
    float *y = zeros_f32(72), *r = zeros_f32(8);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 9; j++)
            for (int k = 0; k < 4; k++) {
                float v = j < 3   ? fmaxf(a[(i * 3 + j) * 4 + k], 0)
                          : j < 4 ? 2 * b[i * 4 + k]
                                  : expf(c[(i * 5 + j - 4) * 4 + k]);
                y[(i * 9 + j) * 4 + k] = v;
                r[i * 4 + k] += v;
            }
    ValId av = input(f, "a", T(IR_DT_F32, 2, 3, 4), a);
    ValId bv = input(f, "b", T(IR_DT_F32, 2, 1, 4), b);
    ValId cv = input(f, "c", T(IR_DT_F32, 2, 5, 4), c);
    IrAttr at = ir_attr_int("axis", 1);
    ValId inner[2] = {bin(f, IR_BIN_MUL, bv, scalar(f, 2.0f)), un(f, IR_UN_EXP, cv)};
    ValId outer[2] = {un(f, IR_UN_RELU, av), node(f, IR_OP_CONCAT, inner, 2, &at, 1)};
    ValId cat = node(f, IR_OP_CONCAT, outer, 2, &at, 1);
    output(f, cat, y);
    output(f, ir_reduce(f->g, IR_RED_SUM, cat, (int64_t[]){1}, 1, false, &O), r);
}

/* Gather rows (int64 indices, negative ones wrap) and columns (int32 indices). */
static void build_gather(Fx *f)
{
    float *d = rand_f32(30), *y = zeros_f32(36), *z = zeros_f32(20), *e = zeros_f32(3 * 6);
    int64_t *ix = malloc(6 * sizeof *ix);
    int32_t *jx = malloc(4 * sizeof *jx);
    int64_t iv[6] = {-1, 0, 4, -5, 2, 3};
    int32_t jv[4] = {5, -6, 0, 1};
    memcpy(ix, iv, sizeof iv);
    memcpy(jx, jv, sizeof jv);
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 6; c++)
            y[r * 6 + c] = d[((iv[r] + 5) % 5) * 6 + c];
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 4; c++)
            z[r * 4 + c] = d[r * 6 + (jv[c] + 6) % 6];
    for (int r = 0; r < 3; r++)                 /* from a constant table */
        for (int c = 0; c < 6; c++)
            e[r * 6 + c] = d[((iv[r] + 5) % 5) * 6 + c] * 2.0f;
    ValId dv = input(f, "d", T(IR_DT_F32, 5, 6), d);
    ValId iv0 = input(f, "i", T(IR_DT_I64, 2, 3), ix);
    ValId jv0 = input(f, "j", T(IR_DT_I32, 4), jx);
    IrAttr a0 = ir_attr_int("axis", 0), a1 = ir_attr_int("axis", 1);
    output(f, node(f, IR_OP_GATHER, (ValId[]){dv, iv0}, 2, &a0, 1), y);
    output(f, node(f, IR_OP_GATHER, (ValId[]){dv, jv0}, 2, &a1, 1), z);
    float *tab = malloc(30 * sizeof *tab);
    for (int i = 0; i < 30; i++)
        tab[i] = d[i] * 2.0f;
    ValId tv = cnst(f, T(IR_DT_F32, 5, 6), tab);
    ValId idx = cnst(f, T(IR_DT_I64, 3), iv);
    output(f, node(f, IR_OP_GATHER, (ValId[]){tv, idx}, 2, &a0, 1), e);
    free(tab);
    /* constant arithmetic indices (a strided view): rows 4, 2, 0 and column -1 */
    float *v1 = zeros_f32(18), *v2 = zeros_f32(5);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 6; c++)
            v1[r * 6 + c] = d[(4 - 2 * r) * 6 + c] * 1.5f;
    for (int r = 0; r < 5; r++)
        v2[r] = d[r * 6 + 5] + 1.0f;
    int32_t ar[3] = {4, 2, 0};
    IrType st = {.dtype = IR_DT_I64, .rank = 0};
    int64_t last = -1;
    ValId g1 = node(f, IR_OP_GATHER, (ValId[]){dv, cnst(f, T(IR_DT_I32, 3), ar)}, 2, &a0, 1);
    output(f, bin(f, IR_BIN_MUL, g1, scalar(f, 1.5f)), v1);
    ValId g2 = node(f, IR_OP_GATHER, (ValId[]){dv, ir_add_const(f->g, "m1", &st, &last)}, 2,
                    &a1, 1);
    output(f, bin(f, IR_BIN_ADD, g2, scalar(f, 1.0f)), v2);
}

/* Broadcasting elementwise chain, comparison + select, casts, int64 arithmetic. */
static void build_elem(Fx *f)
{
    float *a = rand_f32(24), *b = rand_f32(3), *y = zeros_f32(72), *s = zeros_f32(72);
    int64_t *n = malloc(5 * sizeof *n), *n2 = malloc(5 * sizeof *n2);
    int32_t *c = malloc(24 * sizeof *c);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 6; k++) {
                float av = a[i * 6 + k], bv = b[j];
                y[(i * 3 + j) * 6 + k] = (av + bv) * 2.0f - av;
                s[(i * 3 + j) * 6 + k] = av > bv ? av : bv;
            }
    for (int i = 0; i < 24; i++)
        c[i] = (int32_t)(a[i] * 10.0f);
    for (int i = 0; i < 5; i++) {
        n[i] = i * 1000 - 2000;
        n2[i] = n[i] * 3 + 7;
    }
    ValId av = input(f, "a", T(IR_DT_F32, 4, 1, 6), a);
    ValId bv = input(f, "b", T(IR_DT_F32, 3, 1), b);
    ValId nv = input(f, "n", T(IR_DT_I64, 5), n);
    ValId t = bin(f, IR_BIN_MUL, bin(f, IR_BIN_ADD, av, bv), scalar(f, 2.0f));
    output(f, bin(f, IR_BIN_SUB, t, av), y);
    ValId gt = bin(f, IR_BIN_GT, av, bv);
    output(f, ir_select(f->g, gt, av, bv, &O), s);
    output(f, ir_cast(f->g, bin(f, IR_BIN_MUL, av, scalar(f, 10.0f)), IR_DT_I32, &O), c);
    int64_t three = 3, seven = 7;
    IrType st = {.dtype = IR_DT_I64, .rank = 0};
    ValId k3 = ir_add_const(f->g, "k3", &st, &three), k7 = ir_add_const(f->g, "k7", &st, &seven);
    output(f, bin(f, IR_BIN_ADD, bin(f, IR_BIN_MUL, nv, k3), k7), n2);
}

/* Argmax (int64 result), and an exclusive reverse cumsum with an epilogue. */
static void build_argscan(Fx *f)
{
    float *x = rand_f32(28), *cs = zeros_f32(28);
    int64_t *am = malloc(4 * sizeof *am);
    for (int i = 0; i < 4; i++) {
        int best = 0;
        for (int j = 1; j < 7; j++)
            if (x[i * 7 + j] > x[i * 7 + best])
                best = j;
        am[i] = best;
        float acc = 0;
        for (int j = 6; j >= 0; j--) {
            cs[i * 7 + j] = acc * 3.0f;
            acc += x[i * 7 + j];
        }
    }
    ValId xv = input(f, "x", T(IR_DT_F32, 4, 7), x);
    IrAttr a[3] = {ir_attr_int("fn", IR_RED_MAX), ir_attr_int("axis", 1),
                   ir_attr_int("keepdims", 0)};
    output(f, node(f, IR_OP_ARGREDUCE, &xv, 1, a, 3), am);
    IrAttr c[3] = {ir_attr_int("axis", 1), ir_attr_int("exclusive", 1), ir_attr_int("reverse", 1)};
    output(f, bin(f, IR_BIN_MUL, node(f, IR_OP_CUMSUM, &xv, 1, c, 3), scalar(f, 3.0f)), cs);
}

/* Outputs that need copies: an input, a constant, one value twice, a reshape. */
static void build_outputs(Fx *f)
{
    float *x = rand_f32(12), *o1 = malloc(48), *o2 = malloc(48), *o3 = malloc(48);
    float *o4 = malloc(48), *o5 = malloc(48), *cw = rand_f32(12);
    memcpy(o1, x, 48);
    memcpy(o2, cw, 48);
    for (int i = 0; i < 12; i++)
        o3[i] = o4[i] = o5[i] = x[i] * x[i];
    ValId xv = input(f, "x", T(IR_DT_F32, 3, 4), x);
    output(f, xv, o1);
    output(f, cnst(f, T(IR_DT_F32, 3, 4), cw), o2);
    ValId sq = bin(f, IR_BIN_MUL, xv, xv);
    output(f, sq, o3);
    output(f, sq, o4);
    output(f, ir_reshape(f->g, sq, (int64_t[]){2, 6}, 2, &O), o5);
    free(cw);
}

/* Odd shapes and dtypes: an empty tensor, a scalar, float16 moved through a transpose,
 * a reshape of a transposed view (a copy), an expanded (stride-0) matmul operand, bool
 * logic, int32 cumsum and argmin with select_last. */
static void build_misc(Fx *f)
{
    float *e = rand_f32(1), *s = rand_f32(1), *s2 = malloc(4);
    s2[0] = s[0] * 3.0f + 1.0f;
    ValId ev = input(f, "e", T(IR_DT_F32, 0, 4), e);
    output(f, un(f, IR_UN_RELU, ev), zeros_f32(1));
    ValId sv = input(f, "s", (IrType){.dtype = IR_DT_F32, .rank = 0}, s);
    output(f, bin(f, IR_BIN_ADD, bin(f, IR_BIN_MUL, sv, scalar(f, 3.0f)), scalar(f, 1.0f)), s2);
    uint16_t *h = malloc(24 * 2), *ht = malloc(24 * 2);
    for (int i = 0; i < 24; i++)
        h[i] = (uint16_t)(0x3c00 + i);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++)
            ht[j * 4 + i] = h[i * 6 + j];
    ValId hv = input(f, "h", T(IR_DT_F16, 4, 6), h);
    output(f, ir_transpose(f->g, hv, (int64_t[]){1, 0}, &O), ht);
    float *x = rand_f32(24), *r = zeros_f32(24), *m = zeros_f32(2 * 3 * 3);
    for (int i = 0; i < 2; i++)                 /* x [2,3,4] -> [2,4,3] -> [8,3] */
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                r[(i * 4 + k) * 3 + j] = x[(i * 3 + j) * 4 + k];
    ValId xv = input(f, "x", T(IR_DT_F32, 2, 3, 4), x);
    ValId xt = ir_transpose(f->g, xv, (int64_t[]){0, 2, 1}, &O);
    output(f, ir_reshape(f->g, xt, (int64_t[]){8, 3}, 2, &O), r);
    for (int b = 0; b < 2; b++)                  /* expand(x[0]) [2,3,4] x xt [2,4,3] */
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                for (int k = 0; k < 4; k++)
                    m[(b * 3 + i) * 3 + j] += x[i * 4 + k] * x[(b * 3 + j) * 4 + k];
    IrAttr sa[3] = {INTS(f->g, "starts", 0, 0, 0), INTS(f->g, "steps", 1, 1, 1),
                    INTS(f->g, "sizes", 1, 3, 4)};
    ValId x0 = node(f, IR_OP_SLICE, &xv, 1, sa, 3);
    ValId xe = ir_expand(f->g, x0, (int64_t[]){2, 3, 4}, 3, &O);
    output(f, ir_matmul(f->g, xe, xt, &O), m);
    float *xb = zeros_f32(24);                   /* broadcast result: stored per row */
    for (int i = 0; i < 24; i++)
        xb[i] = x[i % 12] + 1.0f;
    output(f, bin(f, IR_BIN_ADD, ir_expand(f->g, x0, (int64_t[]){2, 3, 4}, 3, &O),
                  scalar(f, 1.0f)), xb);
    uint8_t *bl = malloc(24);
    for (int i = 0; i < 24; i++)
        bl[i] = !(x[i] > 0) || x[i] > 0.5f;
    output(f, bin(f, IR_BIN_OR, un(f, IR_UN_NOT, bin(f, IR_BIN_GT, xv, scalar(f, 0))),
                  bin(f, IR_BIN_GT, xv, scalar(f, 0.5f))), bl);
    int32_t *iv = malloc(12 * 4), *cs = malloc(12 * 4);
    int64_t *am = malloc(3 * 8);
    for (int i = 0; i < 3; i++) {
        int32_t acc = 0;
        am[i] = 0;
        for (int j = 0; j < 4; j++) {
            iv[i * 4 + j] = (j * 7 + i) % 3;
            acc += iv[i * 4 + j];
            cs[i * 4 + j] = acc;
            if (iv[i * 4 + j] <= iv[i * 4 + am[i]])
                am[i] = j;
        }
    }
    ValId ivv = input(f, "iv", T(IR_DT_I32, 3, 4), iv);
    IrAttr ca = ir_attr_int("axis", 1);
    output(f, node(f, IR_OP_CUMSUM, &ivv, 1, &ca, 1), cs);
    IrAttr aa[4] = {ir_attr_int("fn", IR_RED_MIN), ir_attr_int("axis", 1),
                    ir_attr_int("keepdims", 0), ir_attr_int("select_last", 1)};
    output(f, node(f, IR_OP_ARGREDUCE, &ivv, 1, aa, 4), am);
}

static void test_matmul(void **st) { (void)st; run_case(build_matmul); }
static void test_bmm(void **st) { (void)st; run_case(build_bmm); }
static void test_deep(void **st) { (void)st; run_case(build_deep); }
static void test_conv(void **st) { (void)st; run_case(build_conv); }
static void test_shortcut(void **st) { (void)st; run_case(build_shortcut); }
static void test_dwconv(void **st) { (void)st; run_case(build_dwconv); }
static void test_twice(void **st) { (void)st; run_case(build_twice); }
static void test_padconv(void **st) { (void)st; run_case(build_padconv); }
static void test_pool(void **st) { (void)st; run_case(build_pool); }
static void test_reduce(void **st) { (void)st; run_case(build_reduce); }
static void test_softmax(void **st) { (void)st; run_case(build_softmax); }
static void test_transpose(void **st) { (void)st; run_case(build_transpose); }
static void test_slice(void **st) { (void)st; run_case(build_slice); }
static void test_pad(void **st) { (void)st; run_case(build_pad); }
static void test_concat(void **st) { (void)st; run_case(build_concat); }
static void test_concat_in_place(void **st) { (void)st; run_case(build_concat_in_place); }
static void test_gather(void **st) { (void)st; run_case(build_gather); }
static void test_elem(void **st) { (void)st; run_case(build_elem); }
static void test_argscan(void **st) { (void)st; run_case(build_argscan); }
static void test_outputs(void **st) { (void)st; run_case(build_outputs); }
static void test_misc(void **st) { (void)st; run_case(build_misc); }

/* ---- plan properties ---------------------------------------------------------------- */

/* Compile case build for configuration v; returns the bundle (f left open). */
static uint8_t *compile_case(Fx *f, BuildFn build, int v, size_t *len)
{
    SpyTarget t;
    fx_begin(f);
    rng_state = 12345;
    build(f);
    target(v, &t);
    return compile(f->g, &t, 2, len);
}

static void free_case(Fx *f)
{
    for (int i = 0; i < f->nin; i++)
        free((void *)f->in[i]);
    for (int i = 0; i < f->nref; i++)
        free((void *)f->ref[i]);
    fx_end(f);
}

/* The same graph compiled twice gives byte-identical bundles. */
static void test_determinism(void **st)
{
    (void)st;
    BuildFn cases[] = {build_conv, build_softmax, build_gather, build_matmul};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        Fx a, b;
        size_t la, lb;
        uint8_t *x = compile_case(&a, cases[c], 1, &la), *y = compile_case(&b, cases[c], 1, &lb);
        assert_int_equal(la, lb);
        assert_memory_equal(x, y, la);
        free(x);
        free(y);
        free_case(&a);
        free_case(&b);
    }
}

/* A large matmul [256,256] x [256,256]: several cores share it (not all: each core's
 * A and B panels cost DRAM traffic, see pass_divide). */
static void build_big_matmul(Fx *f)
{
    float *a = rand_f32(256 * 256), *w = rand_f32(256 * 256);
    ValId x = input(f, "a", T(IR_DT_F32, 256, 256), a);
    ir_add_output(f->g, ir_matmul(f->g, x, cnst(f, T(IR_DT_F32, 256, 256), w), &O));
    free(w);
}

/* A decode step's product: x[1, 512] times a weight W[256, 512] stored transposed
 * (y = x W^T, the tied LM head's form), or W^T[512, 256] stored as it is read. */
static void build_gemv(Fx *f, bool bt)
{
    float *a = rand_f32(512), *w = rand_f32(512 * 256), *y = zeros_f32(256);
    for (int j = 0; j < 256; j++)
        for (int k = 0; k < 512; k++)
            y[j] += a[k] * w[bt ? j * 512 + k : k * 256 + j];
    ValId x = input(f, "x", T(IR_DT_F32, 1, 512), a);
    ValId b = bt ? ir_transpose(f->g, cnst(f, T(IR_DT_F32, 256, 512), w), (int64_t[]){1, 0}, &O)
                 : cnst(f, T(IR_DT_F32, 512, 256), w);
    output(f, ir_matmul(f->g, x, b, &O), y);
    free(w);
}

static void build_gemv_bt(Fx *f) { build_gemv(f, true); }
static void build_gemv_plain(Fx *f) { build_gemv(f, false); }
static void test_gemv(void **st) { (void)st; run_case(build_gemv_bt); run_case(build_gemv_plain); }

/* relu over [64,100]. */
static void build_big_relu(Fx *f)
{
    ValId x = input(f, "x", T(IR_DT_F32, 64, 100), rand_f32(6400));
    ir_add_output(f->g, un(f, IR_UN_RELU, x));
}

/* Fusion and division: matmul + bias + relu is one kernel; contiguous item ranges
 * cover the grid; a large matmul uses several cores, pointwise work every core;
 * softmax is one row-resident kernel. */
static void test_plan(void **st)
{
    (void)st;
    Fx f;
    size_t len;
    uint8_t *b = compile_case(&f, build_matmul, 0, &len);
    IrGraph *g = f.g;
    assert_int_equal(g->plan->nkernels, 1);
    IrKernel *k = &g->plan->kernels[0];
    assert_int_equal(k->kind, IR_KK_CONTRACT);
    assert_int_equal(k->nepi, 2);
    assert_string_equal(k->name, "k0_matmul_add_relu");
    assert_int_equal(k->core_first[0], 0);
    assert_int_equal(k->core_first[32], k->nitems);
    for (uint32_t c = 0; c < 32; c++)
        assert_true(k->core_first[c + 1] >= k->core_first[c]);
    assert_int_equal(k->flops, 2ull * 2 * 37 * 45 * 300 + 2 * (2 * 37 * 45)); /* + epilogue */
    /* the weight is sticked: 300 rows of 64 floats; the bias (45 floats) starts on a
     * stick boundary and is padded to whole 128-byte sticks */
    assert_int_equal(g->plan->seg0_bytes, 300 * 64 * 4 + 256);
    free(b);
    free_case(&f);
    /* the small target splits K and keeps every tile in its budget */
    b = compile_case(&f, build_deep, 1, &len);
    k = &f.g->plan->kernels[0];
    assert_true(k->inner.chunk[0] < 1000);
    assert_true(k->lx_bytes <= 8192);
    free(b);
    free_case(&f);
    b = compile_case(&f, build_big_matmul, 0, &len);
    k = &f.g->plan->kernels[0];
    int busy = 0;
    for (uint32_t c = 0; c < 32; c++)
        busy += k->core_first[c + 1] > k->core_first[c];
    assert_true(busy >= 4);
    free(b);
    free_case(&f);
    b = compile_case(&f, build_big_relu, 0, &len);     /* pointwise work: every core */
    k = &f.g->plan->kernels[0];
    for (uint32_t c = 0; c < 32; c++)
        assert_true(k->core_first[c + 1] > k->core_first[c]);
    free(b);
    free_case(&f);
    b = compile_case(&f, build_softmax, 0, &len);
    assert_int_equal(f.g->plan->nkernels, 1);
    assert_int_equal(f.g->plan->kernels[0].nred, 1);
    free(b);
    free_case(&f);
    b = compile_case(&f, build_concat_in_place, 0, &len);  /* no concat kernel */
    assert_int_equal(f.g->plan->nkernels, 4);
    for (uint32_t i = 0; i < f.g->plan->nkernels; i++)
        assert_int_not_equal(f.g->plan->kernels[i].kind, IR_KK_MOVE);
    free(b);
    free_case(&f);
    b = compile_case(&f, build_twice, 0, &len);  /* epilogues reading the result twice */
    assert_int_equal(f.g->plan->nkernels, 2);
    for (int i = 0; i < 2; i++)
        assert_int_equal(f.g->plan->kernels[i].kind, IR_KK_CONTRACT);
    free(b);
    free_case(&f);
    b = compile_case(&f, build_shortcut, 0, &len);   /* each bias with its own conv */
    assert_int_equal(f.g->plan->nkernels, 2);
    assert_int_equal(f.g->plan->kernels[0].kind, IR_KK_CONTRACT);
    assert_int_equal(f.g->plan->kernels[0].nepi, 1);
    assert_int_equal(f.g->plan->kernels[1].nepi, 3);
    free(b);
    free_case(&f);
    b = compile_case(&f, build_padconv, 0, &len);  /* PADs fused into the convs */
    assert_int_equal(f.g->plan->nkernels, 2);
    for (int i = 0; i < 2; i++)
        assert_int_equal(f.g->plan->kernels[i].npro, 1);
    free(b);
    free_case(&f);
}

/* Tiles of a product of one row of C in a scratchpad of 160 KiB: with B stored
 * transposed the columns shrink first and every tile keeps the whole depth (each LOAD
 * reads whole 2 KiB rows of the weight), stored as read the depth shrinks first as for
 * any product; both compute x W^T. */
static void test_gemv_tiles(void **st)
{
    (void)st;
    for (int bt = 0; bt < 2; bt++) {
        Fx f;
        SpyTarget t;
        fx_begin(&f);
        rng_state = 12345;
        (bt ? build_gemv_bt : build_gemv_plain)(&f);
        fe_default_target(&t);
        t.lx_budget_bytes = 160 << 10;
        size_t len = 0;
        uint8_t *b = compile(f.g, &t, 2, &len);
        const IrKernel *k = &f.g->plan->kernels[0];
        assert_int_equal(f.g->plan->nkernels, 1);
        assert_int_equal(k->kind, IR_KK_CONTRACT);
        if (bt) {
            assert_int_equal(k->inner.chunk[0], 512);
            assert_true(k->grid.chunk[k->grid.rank - 1] <= 64);
        } else {
            assert_true(k->inner.chunk[0] < 512);
        }
        run_bundle(&f, b, len);
        free(b);
        free_case(&f);
    }
}

/* The disassembly names kernels and instructions. */
static void test_disasm(void **st)
{
    (void)st;
    Fx f;
    size_t len;
    uint8_t *b = compile_case(&f, build_conv, 0, &len);
    char *text = NULL;
    size_t tlen = 0;
    FILE *mf = open_memstream(&text, &tlen);
    assert_true(cg_disassemble(b, len, mf));
    fclose(mf);
    assert_non_null(strstr(text, "k0_conv_add_relu_add"));
    assert_non_null(strstr(text, "matmul  lx["));
    assert_non_null(strstr(text, "load    lx["));
    assert_non_null(strstr(text, "barrier 0"));
    free(text);
    mf = open_memstream(&text, &tlen);
    assert_false(cg_disassemble(b, 100, mf));
    fclose(mf);
    free(text);
    free(b);
    free_case(&f);
}

/* Run the back-end passes and expect a user error containing msg. */
static void expect_error(Fx *f, const char *msg)
{
    SpyTarget t;
    fe_default_target(&t);
    PassOptions po = {.opt_level = 2, .target = &t};
    bool ok = pass_fuse(f->g, &po) && pass_layout(f->g, &po) && pass_divide(f->g, &po) &&
              pass_tile(f->g, &po) && pass_dram_plan(f->g, &po);
    assert_false(ok);
    bool found = false;
    for (int i = 0; i < f->d.nmsgs; i++)
        found |= strstr(f->d.msgs[i], msg) != NULL;
    if (!found)
        fail_msg("no error containing '%s' (first: %s)", msg, f->d.nmsgs ? f->d.msgs[0] : "-");
}

/* Device dtype and range errors are reported with the node or tensor named. */
static void test_errors(void **st)
{
    (void)st;
    Fx f;
    fx_begin(&f);
    IrType ut = {.dtype = IR_DT_U64, .rank = 1, .dims = {2}};
    uint64_t ubig[2] = {3, (uint64_t)1 << 40};
    ValId x = ir_add_input(f.g, "u", &ut);
    ir_add_output(f.g, ir_binary(f.g, IR_BIN_ADD, x, ir_add_const(f.g, "ubig", &ut, ubig), &O));
    expect_error(&f, "constant 'ubig' holds 1099511627776 at element 1, outside the int32 range "
                     "of the device (uint64 data");
    fx_end(&f);

    fx_begin(&f);
    IrType it = {.dtype = IR_DT_I64, .rank = 1, .dims = {3}};
    int64_t big[3] = {1, (int64_t)1 << 40, 2};
    x = ir_add_input(f.g, "i", &it);
    ValId c = ir_add_const(f.g, "big", &it, big);
    ir_add_output(f.g, ir_binary(f.g, IR_BIN_ADD, x, c, &O));
    expect_error(&f, "constant 'big' holds 1099511627776");
    fx_end(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul),    cmocka_unit_test(test_bmm),
        cmocka_unit_test(test_gemv),      cmocka_unit_test(test_gemv_tiles),
        cmocka_unit_test(test_deep),
        cmocka_unit_test(test_conv),      cmocka_unit_test(test_shortcut),
        cmocka_unit_test(test_dwconv), cmocka_unit_test(test_twice),
        cmocka_unit_test(test_padconv),
        cmocka_unit_test(test_pool),      cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_softmax),   cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_slice),     cmocka_unit_test(test_pad),
        cmocka_unit_test(test_concat),    cmocka_unit_test(test_concat_in_place),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_elem),      cmocka_unit_test(test_argscan),
        cmocka_unit_test(test_outputs),   cmocka_unit_test(test_misc),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_plan),      cmocka_unit_test(test_disasm),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
