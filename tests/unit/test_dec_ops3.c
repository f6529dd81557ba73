/* test_dec_ops3.c: unit tests of Einsum diagonals (passes/decompose/onnx/onnx_matmul.c),
 * of antialiased Resize downsampling (onnx_resize.c), of ConvTranspose whose kernel
 * equals its stride (dec_convt.c), of Pad's reflect, edge and wrap modes on the last
 * axis (onnx_shape.c), of Conv of three spatial dims (dec_conv3d.c) and of pooling
 * over three (dec_poolwin.c). Each test builds one ONNX
 * node, decomposes it, evaluates the core graph node by node with ir_eval_node and
 * compares with goldens of the ONNX reference implementation or a direct C
 * reference of the ONNX semantics; one case also runs on the emulator. The last test
 * checks that the decomposition's temporary host arrays go to the scratch arena. */
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

/* ---- helpers ---- */

/* One-output ONNX node made the graph's output; returns it. */
static ValId onnx_out(IrGraph *g, const char *op, int64_t opset, const ValId *in, int nin,
                      const IrAttr *a, int na)
{
    ValId y = ut_onnx_op(g, op, opset, in, nin, a, na);
    ir_add_output(g, y);
    return y;
}

/* Einsum node with equation eq over the given inputs. */
static void einsum(UtFx *f, const char *eq, const ValId *in, int nin)
{
    IrAttr a[1] = {ir_attr_str(f->g, "equation", eq)};
    onnx_out(f->g, "Einsum", 12, in, nin, a, 1);
}

/* ---- Einsum diagonals ---- */

/* "...ii->...i": the diagonal of each matrix of a batch. */
static void test_einsum_batch_diagonal(void **state)
{
    UtFx *f = *state;
    enum { B = 2, N = 3 };
    float x[B * N * N], want[B * N];
    ut_fill(x, B * N * N, 0.5f, -2.0f);
    int64_t xd[3] = {B, N, N}, od[2] = {B, N};
    ValId in[1] = {ut_input(f->g, "x", IR_DT_F32, 3, xd)};
    einsum(f, "...ii->...i", in, 1);
    ut_decompose_ok(f);
    assert_true(ut_count_op(f->g, IR_OP_GATHER) >= 1);
    ut_expect_shape(f->g, 0, 2, od);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < N; i++)
            want[b * N + i] = x[(b * N + i) * N + i];
    const void *inputs[1] = {x};
    ut_expect_close(ut_run_graph(f->g, inputs, 0), want, B * N, 0);
}

/* "aii,ij->aj": a diagonal feeding a contraction (label i also in the second operand). */
static void test_einsum_diagonal_contract(void **state)
{
    UtFx *f = *state;
    enum { A = 2, I = 4, J = 3 };
    float x[A * I * I], w[I * J], want[A * J];
    ut_fill(x, A * I * I, 0.25f, -1.0f);
    ut_fill(w, I * J, -0.5f, 1.5f);
    int64_t xd[3] = {A, I, I}, wd[2] = {I, J}, od[2] = {A, J};
    ValId in[2] = {ut_input(f->g, "x", IR_DT_F32, 3, xd), ut_input(f->g, "w", IR_DT_F32, 2, wd)};
    einsum(f, "aii,ij->aj", in, 2);
    ut_decompose_ok(f);
    ut_expect_shape(f->g, 0, 2, od);
    for (int a = 0; a < A; a++)
        for (int j = 0; j < J; j++) {
            double s = 0;
            for (int i = 0; i < I; i++)
                s += (double)x[(a * I + i) * I + i] * w[i * J + j];
            want[a * J + j] = (float)s;
        }
    const void *inputs[2] = {x, w};
    ut_expect_close(ut_run_graph(f->g, inputs, 0), want, A * J, 1e-5);
}

/* "jiij" with implicit output: two labels each repeated (sum of x[j,i,i,j]), and
 * "iii->i" (a label three times). */
static void test_einsum_multi_diagonal(void **state)
{
    UtFx *f = *state;
    enum { N = 3 };
    float x[N * N * N * N], y[N * N * N];
    ut_fill(x, N * N * N * N, 0.125f, -3.0f);
    ut_fill(y, N * N * N, 1.0f, 0.0f);
    int64_t xd[4] = {N, N, N, N}, yd[3] = {N, N, N}, od[1] = {N};
    ValId in[2] = {ut_input(f->g, "x", IR_DT_F32, 4, xd), ut_input(f->g, "y", IR_DT_F32, 3, yd)};
    einsum(f, "jiij", in, 1);
    einsum(f, "iii->i", in + 1, 1);
    ut_decompose_ok(f);
    ut_expect_shape(f->g, 0, 0, NULL);
    ut_expect_shape(f->g, 1, 1, od);
    double s = 0;
    float want[N];
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++)
            s += x[((j * N + i) * N + i) * N + j];
    for (int i = 0; i < N; i++)
        want[i] = y[(i * N + i) * N + i];
    float ws = (float)s;
    const void *inputs[2] = {x, y};
    ut_expect_close(ut_run_graph(f->g, inputs, 0), &ws, 1, 1e-5);
    ut_expect_close(ut_run_graph(f->g, inputs, 1), want, N, 0);
}

/* Diagonal axes of different sizes are a clear error. */
static void test_einsum_diagonal_size_mismatch(void **state)
{
    UtFx *f = *state;
    int64_t xd[2] = {2, 3};
    ValId in[1] = {ut_input(f->g, "x", IR_DT_F32, 2, xd)};
    einsum(f, "ii->i", in, 1);
    ut_decompose_fails(f, "diagonal axes differ in size");
}

/* ---- Resize antialias ---- */

/* Resize (opset 18) of x [dims] with constant scales (nz == 0) or sizes; mode, and
 * exclude_outside. Returns the output. */
static ValId resize(UtFx *f, ValId x, int r, const float *scales, const int64_t *sizes,
                    const char *mode, int exclude)
{
    int64_t n = r;
    ValId in[4] = {x, IR_NONE, IR_NONE, IR_NONE};
    if (scales)
        in[2] = ut_const(f->g, IR_DT_F32, 1, &n, scales);
    else
        in[3] = ut_const(f->g, IR_DT_I64, 1, &n, sizes);
    IrAttr a[3] = {ir_attr_str(f->g, "mode", mode), ir_attr_int("antialias", 1),
                   ir_attr_int("exclude_outside", exclude)};
    return onnx_out(f->g, "Resize", 18, in, 4, a, 3);
}

/* The ONNX backend test cases resize_downsample_{scales,sizes}_{linear,cubic}_antialias:
 * 1..16 as 4x4, scales 0.6 (-> 2x2) or sizes 3x3; goldens from the ONNX reference. */
static void test_resize_antialias_goldens(void **state)
{
    UtFx *f = *state;
    static const float want[4][9] = {
        {2.875f, 4.5f, 9.375f, 11.0f},
        {2.5180721f, 4.2858863f, 9.5893288f, 11.357142f},
        {2.3636363f, 3.5909090f, 4.8181820f, 7.2727275f, 8.5f, 9.7272730f, 12.181818f,
         13.409091f, 14.636364f},
        {1.7750092f, 3.1200073f, 4.4650054f, 7.1550016f, 8.5f, 9.8449984f, 12.534994f,
         13.879992f, 15.224991f}};
    float x[16], sc[4] = {1, 1, 0.6f, 0.6f};
    int64_t xd[4] = {1, 1, 4, 4}, sz[4] = {1, 1, 3, 3}, d2[4] = {1, 1, 2, 2};
    for (int i = 0; i < 16; i++)
        x[i] = (float)(i + 1);
    ValId xi = ut_input(f->g, "x", IR_DT_F32, 4, xd);
    for (int k = 0; k < 4; k++)
        resize(f, xi, 4, k < 2 ? sc : NULL, k < 2 ? NULL : sz, k % 2 ? "cubic" : "linear", 0);
    ut_decompose_ok(f);
    assert_true(ut_count_op(f->g, IR_OP_MATMUL) >= 8);
    const void *inputs[1] = {x};
    for (int k = 0; k < 4; k++) {
        ut_expect_shape(f->g, (uint32_t)k, 4, k < 2 ? d2 : sz);
        ut_expect_close(ut_run_graph(f->g, inputs, (uint32_t)k), want[k], k < 2 ? 4 : 9, 1e-5);
    }
}

/* Filter value at distance t (linear triangle or cubic with a = -0.75). */
static double ref_filter(bool cubic, double t)
{
    double a = -0.75;
    t = fabs(t);
    if (!cubic)
        return t < 1 ? 1 - t : 0;
    if (t <= 1)
        return (a + 2) * t * t * t - (a + 3) * t * t + 1;
    return t < 2 ? a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a : 0;
}

/* One output of the ONNX reference's antialiased 1-D interpolation of d[in] at output
 * position o (half_pixel): the n nearest positions of the edge-padded data (ties to
 * the lower index) weighted by the stretched filter. */
static double ref_interp(const double *d, int in, double s, int o, bool cubic, bool excl)
{
    double x = (o + 0.5) / s - 0.5, fl = floor(x), ratio = x - fl;
    if (ratio == 0)
        ratio = 1;
    int start = (int)floor((cubic ? -2.0 : -1.0) / s) + 1, n = 2 - 2 * start, pad = n / 2;
    int len = in + 2 * pad, idx[64], m = 0;
    double co[64], sum = 0, acc = 0;
    assert_true(n <= 64 && len <= 64);
    for (int k = 0; k < n; k++) {
        co[k] = ref_filter(cubic, (start + k - ratio) * s);
        sum += co[k];
    }
    for (int k = 0; k < n; k++)
        co[k] /= sum;
    bool used[64] = {false};
    for (; m < n; m++) { /* selection of the n nearest, then sorted by index */
        int best = -1;
        for (int p = 0; p < len; p++)
            if (!used[p] && (best < 0 || fabs(x + pad - p) < fabs(x + pad - best)))
                best = p;
        used[best] = true;
    }
    m = 0;
    for (int p = 0; p < len; p++)
        if (used[p])
            idx[m++] = p - pad;
    sum = 0;
    for (int k = 0; k < n; k++) {
        if (excl && (idx[k] < 0 || idx[k] >= in))
            co[k] = 0;
        sum += co[k];
    }
    for (int k = 0; k < n; k++)
        acc += co[k] / (excl ? sum : 1) * d[idx[k] < 0 ? 0 : idx[k] >= in ? in - 1 : idx[k]];
    return acc;
}

/* A middle axis (batch before, data after) by 0.4, the last axis by 0.7, both modes,
 * with and without exclude_outside, against the C reference. */
static void test_resize_antialias_axes(void **state)
{
    UtFx *f = *state;
    enum { P = 2, H = 9, W = 5, OH = 3, OW = 3 }; /* 9 * 0.4 = 3.6 -> 3; 5 * 0.7 = 3.5 -> 3 */
    float x[P * H * W], sc[3] = {1, 0.4f, 0.7f};
    ut_fill(x, P * H * W, 0.37f, -4.0f);
    for (int i = 0; i < P * H * W; i++)
        x[i] = x[i] * (float)((i * 7) % 5) - (float)(i % 3);
    int64_t xd[3] = {P, H, W}, od[3] = {P, OH, OW};
    ValId xi = ut_input(f->g, "x", IR_DT_F32, 3, xd);
    for (int k = 0; k < 4; k++)
        resize(f, xi, 3, sc, NULL, k % 2 ? "cubic" : "linear", k / 2);
    ut_decompose_ok(f);
    const void *inputs[1] = {x};
    for (int k = 0; k < 4; k++) {
        bool cubic = k % 2, excl = k / 2;
        double col[H], mid[P * OH * W], row[W];
        float want[P * OH * OW];
        for (int p = 0; p < P; p++)
            for (int w = 0; w < W; w++) {
                for (int h = 0; h < H; h++)
                    col[h] = x[(p * H + h) * W + w];
                for (int o = 0; o < OH; o++)
                    mid[(p * OH + o) * W + w] = ref_interp(col, H, 0.4f, o, cubic, excl);
            }
        for (int p = 0; p < P * OH; p++) {
            for (int w = 0; w < W; w++)
                row[w] = mid[p * W + w];
            for (int o = 0; o < OW; o++)
                want[p * OW + o] = (float)ref_interp(row, W, 0.7f, o, cubic, excl);
        }
        ut_expect_shape(f->g, (uint32_t)k, 3, od);
        ut_expect_close(ut_run_graph(f->g, inputs, (uint32_t)k), want, P * OH * OW, 1e-5);
    }
}

/* The whole pipeline on the emulator: cubic antialias of a middle axis of [2, 12, 4]
 * (a batched MATMUL with broadcast constant weights) against the decomposed graph
 * evaluated on the host. */
static void test_resize_antialias_emulator(void **state)
{
    (void)state;
    enum { P = 2, H = 12, W = 4, OH = 5 };
    float x[P * H * W], sc[3] = {1, 0.45f, 1}, got[P * OH * W];
    ut_fill(x, P * H * W, 0.21f, -3.0f);
    int64_t xd[3] = {P, H, W};
    const void *inputs[1] = {x};
    UtFx *ref = ut_fx_new();
    resize(ref, ut_input(ref->g, "x", IR_DT_F32, 3, xd), 3, sc, NULL, "cubic", 0);
    ut_decompose_ok(ref);
    float want[P * OH * W];
    memcpy(want, ut_run_graph(ref->g, inputs, 0), sizeof want);
    ut_fx_free(ref);
    UtFx *dev = ut_fx_new();
    resize(dev, ut_input(dev->g, "x", IR_DT_F32, 3, xd), 3, sc, NULL, "cubic", 0);
    char err[256];
    void *outs[1] = {got};
    assert_int_equal(ut_compile_run(dev->g, inputs, outs, err, sizeof err), SPY_OK);
    ut_expect_close(got, want, P * OH * W, 1e-4);
    ut_fx_free(dev);
}

/* ---- ConvTranspose whose kernel tiles its output (passes/decompose/dec_convt.c) ---- */

enum { CT_N = 2, CT_C = 3, CT_H = 4, CT_W = 5, CT_M = 4, CT_KH = 2, CT_KW = 3 };

/* ConvTranspose of x [N, C, H, W] by w [C, M, KH, KW] with bias, strides (sh, sw) and
 * pads p (4 values) into f's graph. */
static void convt(UtFx *f, const float *w, const float *b, int64_t sh, int64_t sw,
                  const int64_t *p)
{
    int64_t xd[4] = {CT_N, CT_C, CT_H, CT_W}, wd[4] = {CT_C, CT_M, CT_KH, CT_KW}, bd[1] = {CT_M};
    int64_t st[2] = {sh, sw};
    ValId in[3] = {ut_input(f->g, "x", IR_DT_F32, 4, xd), ut_const(f->g, IR_DT_F32, 4, wd, w),
                   ut_const(f->g, IR_DT_F32, 1, bd, b)};
    IrAttr a[2] = {ir_attr_ints(f->g, "strides", st, 2), ir_attr_ints(f->g, "pads", p, 4)};
    onnx_out(f->g, "ConvTranspose", 11, in, 3, a, 2);
}

/* ONNX ConvTranspose with kernel = stride and no pads: y[n, m, i KH + a, j KW + b] =
 * bias[m] + sum_c x[n, c, i, j] w[c, m, a, b]. */
static void convt_ref(const float *x, const float *w, const float *b, double *y)
{
    enum { OH = CT_H * CT_KH, OW = CT_W * CT_KW };
    for (int n = 0; n < CT_N; n++)
        for (int m = 0; m < CT_M; m++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    int i = oh / CT_KH, a = oh % CT_KH, j = ow / CT_KW, q = ow % CT_KW;
                    double s = b[m];
                    for (int c = 0; c < CT_C; c++)
                        s += (double)x[((n * CT_C + c) * CT_H + i) * CT_W + j] *
                             w[((c * CT_M + m) * CT_KH + a) * CT_KW + q];
                    y[((n * CT_M + m) * OH + oh) * OW + ow] = s;
                }
}

/* Kernel equal to stride: a MATMUL and a depth-to-space transpose, no CONV, the values
 * of the ONNX semantics, on the host and on the emulator; with pads, the forward
 * convolution as before. */
static void test_convtranspose_blocks(void **state)
{
    UtFx *f = *state;
    enum { NY = CT_N * CT_M * CT_H * CT_KH * CT_W * CT_KW };
    float x[CT_N * CT_C * CT_H * CT_W], w[CT_C * CT_M * CT_KH * CT_KW], b[CT_M], got[NY];
    double want[NY];
    ut_fill(x, CT_N * CT_C * CT_H * CT_W, 0.37f, -2.0f);
    ut_fill(w, CT_C * CT_M * CT_KH * CT_KW, 0.23f, -1.5f);
    ut_fill(b, CT_M, 0.5f, -1.0f);
    convt_ref(x, w, b, want);
    int64_t zero[4] = {0}, od[4] = {CT_N, CT_M, CT_H * CT_KH, CT_W * CT_KW};
    convt(f, w, b, CT_KH, CT_KW, zero);
    ut_decompose_ok(f);
    assert_int_equal(ut_count_op(f->g, IR_OP_CONV), 0);
    assert_int_equal(ut_count_op(f->g, IR_OP_MATMUL), 1);
    ut_expect_shape(f->g, 0, 4, od);
    const void *inputs[1] = {x};
    const float *host = ut_run_graph(f->g, inputs, 0);
    for (int i = 0; i < NY; i++)
        if (fabs(host[i] - want[i]) > 1e-5 * (1 + fabs(want[i])))
            fail_msg("host element %d: %g != %g", i, host[i], want[i]);
    UtFx *dev = ut_fx_new();
    convt(dev, w, b, CT_KH, CT_KW, zero);
    char err[256];
    void *outs[1] = {got};
    assert_int_equal(ut_compile_run(dev->g, inputs, outs, err, sizeof err), SPY_OK);
    for (int i = 0; i < NY; i++)
        if (fabs(got[i] - want[i]) > 1e-5 * (1 + fabs(want[i])))
            fail_msg("emulator element %d: %g != %g", i, got[i], want[i]);
    ut_fx_free(dev);
    UtFx *pad = ut_fx_new();                       /* pads: the general lowering */
    int64_t p[4] = {0, 1, 0, 1};
    convt(pad, w, b, CT_KH, CT_KW, p);
    ut_decompose_ok(pad);
    assert_int_equal(ut_count_op(pad->g, IR_OP_CONV), 1);
    ut_fx_free(pad);
}

/* ---- Pad's reflect / edge / wrap on the last axis: slices of runs (onnx_shape.c) ---- */

enum { PD_A = 2, PD_H = 5, PD_W = 4, PD_T = 1, PD_B = 3, PD_L = 2, PD_R = 3 };

/* Source index of padded position p of an axis of d (the ONNX modes). */
static int64_t pad_ref_src(const char *mode, int64_t p, int64_t d)
{
    if (!strcmp(mode, "edge"))
        return p < 0 ? 0 : p >= d ? d - 1 : p;
    if (!strcmp(mode, "wrap"))
        return ((p % d) + d) % d;
    int64_t per = 2 * (d - 1);
    p = ((p % per) + per) % per;
    return p < d ? p : per - p;
}

/* x [A, H, W] padded by (T, B) rows and (L, R) columns (wider than the axis: reflect
 * folds back past the far end): the last axis by slices and a CONCAT, no GATHER there
 * (one for the rows), the values of the ONNX semantics. */
static void test_pad_modes_last_axis(void **state)
{
    UtFx *f = *state;
    static const char *const modes[3] = {"reflect", "edge", "wrap"};
    enum { OH = PD_H + PD_T + PD_B, OW = PD_W + PD_L + PD_R };
    float x[PD_A * PD_H * PD_W], want[PD_A * OH * OW];
    ut_fill(x, PD_A * PD_H * PD_W, 0.37f, -2.0f);
    for (int m = 0; m < 3; m++) {
        UtFx *g = m ? ut_fx_new() : f;
        int64_t xd[3] = {PD_A, PD_H, PD_W}, pd[1] = {6}, od[3] = {PD_A, OH, OW};
        int64_t pads[6] = {0, PD_T, PD_L, 0, PD_B, PD_R};
        ValId in[2] = {ut_input(g->g, "x", IR_DT_F32, 3, xd), ut_const(g->g, IR_DT_I64, 1, pd, pads)};
        IrAttr a[1] = {ir_attr_str(g->g, "mode", modes[m])};
        onnx_out(g->g, "Pad", 19, in, 2, a, 1);
        ut_decompose_ok(g);
        assert_int_equal(ut_count_op(g->g, IR_OP_GATHER), 1);
        assert_int_equal(ut_count_op(g->g, IR_OP_CONCAT), 1);
        ut_expect_shape(g->g, 0, 3, od);
        for (int b = 0; b < PD_A; b++)
            for (int i = 0; i < OH; i++)
                for (int j = 0; j < OW; j++)
                    want[(b * OH + i) * OW + j] =
                        x[(b * PD_H + pad_ref_src(modes[m], i - PD_T, PD_H)) * PD_W +
                          pad_ref_src(modes[m], j - PD_L, PD_W)];
        const void *inputs[1] = {x};
        ut_expect_close(ut_run_graph(g->g, inputs, 0), want, PD_A * OH * OW, 0);
        if (m)
            ut_fx_free(g);
    }
}

/* ---- Conv of three spatial dims as one 2-d convolution (dec_conv3d.c) ---- */

enum { C3_N = 2, C3_C = 2, C3_D = 5, C3_H = 6, C3_W = 7, C3_M = 3, C3_KD = 3, C3_KH = 2,
       C3_KW = 3 };
static const int64_t c3_s[3] = {2, 1, 2}, c3_d[3] = {1, 2, 1}, c3_lo[3] = {1, 1, 0},
                     c3_hi[3] = {0, 1, 2};

/* Output extent of axis a of the 3-d convolution above (input extent in, kernel k). */
static int64_t c3_out(int a, int64_t in, int64_t k)
{
    return (in + c3_lo[a] + c3_hi[a] - (k - 1) * c3_d[a] - 1) / c3_s[a] + 1;
}

/* Conv [N, C, D, H, W] by [M, C, kd, kh, kw] with the strides, dilations and pads above,
 * plus the bias, into f's graph. */
static void conv3d(UtFx *f, const float *w, const float *b)
{
    int64_t xd[5] = {C3_N, C3_C, C3_D, C3_H, C3_W}, wd[5] = {C3_M, C3_C, C3_KD, C3_KH, C3_KW};
    int64_t bd[1] = {C3_M}, pads[6];
    for (int a = 0; a < 3; a++)
        pads[a] = c3_lo[a], pads[3 + a] = c3_hi[a];
    ValId in[3] = {ut_input(f->g, "x", IR_DT_F32, 5, xd), ut_const(f->g, IR_DT_F32, 5, wd, w),
                   ut_const(f->g, IR_DT_F32, 1, bd, b)};
    IrAttr a[3] = {ir_attr_ints(f->g, "strides", c3_s, 3), ir_attr_ints(f->g, "dilations", c3_d, 3),
                   ir_attr_ints(f->g, "pads", pads, 6)};
    onnx_out(f->g, "Conv", 11, in, 3, a, 3);
}

/* Strided, dilated and padded on every axis: one CONV of two spatial dims, the values of
 * the ONNX semantics (zero padding), on the host and on the emulator. */
static void test_conv3d_as_2d(void **state)
{
    UtFx *f = *state;
    int64_t od = c3_out(0, C3_D, C3_KD), oh = c3_out(1, C3_H, C3_KH), ow = c3_out(2, C3_W, C3_KW);
    int64_t ny = C3_N * C3_M * od * oh * ow;
    float x[C3_N * C3_C * C3_D * C3_H * C3_W], w[C3_M * C3_C * C3_KD * C3_KH * C3_KW], b[C3_M];
    ut_fill(x, C3_N * C3_C * C3_D * C3_H * C3_W, 0.37f, -2.0f);
    ut_fill(w, C3_M * C3_C * C3_KD * C3_KH * C3_KW, 0.23f, -1.5f);
    ut_fill(b, C3_M, 0.5f, -1.0f);
    double *want = malloc(sizeof(double) * (size_t)ny);
    float *got = malloc(sizeof(float) * (size_t)ny);
    for (int64_t i = 0; i < ny; i++) {
        int64_t q = i, o[3], n, m;
        o[2] = q % ow, q /= ow, o[1] = q % oh, q /= oh, o[0] = q % od, q /= od;
        m = q % C3_M, n = q / C3_M;
        double sum = b[m];
        for (int ch = 0; ch < C3_C; ch++)
            for (int kd = 0; kd < C3_KD; kd++)
                for (int kh = 0; kh < C3_KH; kh++)
                    for (int kw = 0; kw < C3_KW; kw++) {
                        int64_t z = o[0] * c3_s[0] + kd * c3_d[0] - c3_lo[0];
                        int64_t y = o[1] * c3_s[1] + kh * c3_d[1] - c3_lo[1];
                        int64_t xx = o[2] * c3_s[2] + kw * c3_d[2] - c3_lo[2];
                        if (z < 0 || z >= C3_D || y < 0 || y >= C3_H || xx < 0 || xx >= C3_W)
                            continue;
                        sum += (double)x[(((n * C3_C + ch) * C3_D + z) * C3_H + y) * C3_W + xx] *
                               w[(((m * C3_C + ch) * C3_KD + kd) * C3_KH + kh) * C3_KW + kw];
                    }
        want[i] = sum;
    }
    conv3d(f, w, b);
    ut_decompose_ok(f);
    assert_int_equal(ut_count_op(f->g, IR_OP_CONV), 1);
    int64_t od5[5] = {C3_N, C3_M, od, oh, ow};
    ut_expect_shape(f->g, 0, 5, od5);
    const void *inputs[1] = {x};
    const float *host = ut_run_graph(f->g, inputs, 0);
    for (int64_t i = 0; i < ny; i++)
        if (fabs(host[i] - want[i]) > 1e-5 * (1 + fabs(want[i])))
            fail_msg("host element %lld: %g != %g", (long long)i, host[i], want[i]);
    UtFx *dev = ut_fx_new();
    conv3d(dev, w, b);
    char err[256];
    void *outs[1] = {got};
    assert_int_equal(ut_compile_run(dev->g, inputs, outs, err, sizeof err), SPY_OK);
    for (int64_t i = 0; i < ny; i++)
        if (fabs(got[i] - want[i]) > 1e-5 * (1 + fabs(want[i])))
            fail_msg("emulator element %lld: %g != %g", (long long)i, got[i], want[i]);
    ut_fx_free(dev);
    free(want);
    free(got);
}

/* ---- pooling over three spatial dims as 2-d windows (dec_poolwin.c) ---- */

/* MaxPool (max) or AveragePool of x [1, 2, 5, 6, 7]: kernel 3 x 2 x 3, strides 2, 1, 2,
 * pads 1 before each axis and 1 after (average: count_include_pad 0): one 2-d WINDOW per
 * depth tap, the values of the ONNX semantics. */
static void pool3d_case(UtFx *f, bool max)
{
    enum { C = 2, D = 5, H = 6, W = 7 };
    static const int64_t k[3] = {3, 2, 3}, st[3] = {2, 1, 2}, in[3] = {D, H, W};
    int64_t pads[6] = {1, 1, 1, 1, 1, 1}, o[3], xd[5] = {1, C, D, H, W};
    for (int a = 0; a < 3; a++)
        o[a] = (in[a] + 2 - k[a]) / st[a] + 1;
    float x[C * D * H * W];
    ut_fill(x, C * D * H * W, 0.37f, -2.0f);
    ValId xin = ut_input(f->g, "x", IR_DT_F32, 5, xd);
    IrAttr a[3] = {ir_attr_ints(f->g, "kernel_shape", k, 3), ir_attr_ints(f->g, "strides", st, 3),
                   ir_attr_ints(f->g, "pads", pads, 6)};
    onnx_out(f->g, max ? "MaxPool" : "AveragePool", 11, &xin, 1, a, 3);
    ut_decompose_ok(f);
    assert_int_equal(ut_count_op(f->g, IR_OP_WINDOW), k[0]);
    int64_t ny = C * o[0] * o[1] * o[2];
    double *want = malloc(sizeof(double) * (size_t)ny);
    for (int64_t i = 0; i < ny; i++) {
        int64_t z = i / (o[1] * o[2]) % o[0], y = i / o[2] % o[1], w = i % o[2];
        int64_t ch = i / (o[0] * o[1] * o[2]), cnt = 0;
        double acc = max ? -INFINITY : 0;
        for (int a0 = 0; a0 < k[0]; a0++)
            for (int a1 = 0; a1 < k[1]; a1++)
                for (int a2 = 0; a2 < k[2]; a2++) {
                    int64_t p0 = z * st[0] + a0 - 1, p1 = y * st[1] + a1 - 1, p2 = w * st[2] + a2 - 1;
                    if (p0 < 0 || p0 >= D || p1 < 0 || p1 >= H || p2 < 0 || p2 >= W)
                        continue;
                    double v = x[((ch * D + p0) * H + p1) * W + p2];
                    acc = max ? fmax(acc, v) : acc + v;
                    cnt++;
                }
        want[i] = max ? acc : acc / (double)cnt;
    }
    const void *inputs[1] = {x};
    const float *got = ut_run_graph(f->g, inputs, 0);
    for (int64_t i = 0; i < ny; i++)
        if (fabs(got[i] - want[i]) > 1e-5 * (1 + fabs(want[i])))
            fail_msg("%s element %lld: %g != %g", max ? "max" : "avg", (long long)i, got[i],
                     want[i]);
    free(want);
}

static void test_pool3d_max(void **state) { pool3d_case(*state, true); }
static void test_pool3d_avg(void **state) { pool3d_case(*state, false); }

/* ---- temporaries in the scratch arena ---- */

/* Trilu and EyeLike build their constants from host arrays of doubles, 8 bytes per
 * element, while the constants hold 1 byte per element: on [1024, 1024] inputs the
 * temporaries (16 MiB) go to the scratch arena and the graph's arena keeps only the
 * constants (2 MiB). The constants stay valid once the scratch arena is released and
 * its memory reused. */
static void test_temporaries_in_scratch(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    enum { N = 1024 };
    const size_t mib = (size_t)1 << 20;
    int64_t d[2] = {N, N};
    ValId x = ut_input(g, "x", IR_DT_F32, 2, d);
    onnx_out(g, "Trilu", 14, &x, 1, NULL, 0);
    IrAttr dt = ir_attr_int("dtype", IR_DT_U8);
    onnx_out(g, "EyeLike", 9, &x, 1, &dt, 1);
    size_t before = g->arena.bytes;
    ut_decompose_ok(f);
    assert_true(g->scratch.bytes >= 16 * mib);
    assert_true(g->arena.bytes - before < 4 * mib);
    ir_scratch_reset(g);
    memset(ir_scratch(g, 16 * mib), 0xab, 16 * mib);
    float *xv = malloc(sizeof(float) * N * N);
    assert_non_null(xv);
    ut_fill(xv, (int64_t)N * N, 1.0f, 1.0f);
    const void *inputs[1] = {xv};
    const float *y = ut_run_graph(g, inputs, 0);
    const uint8_t *eye = ut_run_graph(g, inputs, 1);
    for (int64_t i = 0; i < N; i += 97)
        for (int64_t j = 0; j < N; j += 89) {
            assert_true(y[i * N + j] == (j >= i ? xv[i * N + j] : 0.0f));
            assert_int_equal(eye[i * N + j], i == j);
        }
    assert_int_equal(eye[5 * N + 5], 1);
    free(xv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_einsum_batch_diagonal, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_einsum_diagonal_contract, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_einsum_multi_diagonal, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_einsum_diagonal_size_mismatch, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_resize_antialias_goldens, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_resize_antialias_axes, ut_setup, ut_teardown),
        cmocka_unit_test(test_resize_antialias_emulator),
        cmocka_unit_test_setup_teardown(test_convtranspose_blocks, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_pad_modes_last_axis, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_conv3d_as_2d, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_pool3d_max, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_pool3d_avg, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_temporaries_in_scratch, ut_setup, ut_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
