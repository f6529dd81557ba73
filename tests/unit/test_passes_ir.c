/* test_passes_ir.c: unit tests of the IR passes owned by passes/: decomposition of
 * ONNX ops (each result evaluated node by node with ir_eval_node and compared with
 * a direct reference computation of the ONNX semantics), the unsupported-operator
 * listing, constant folding, dead-code elimination, simplification (row selections
 * pushed above matrix products included) and folding of
 * per-channel affine chains into convolutions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <math.h>

#include "frontend/fe.h"
#include "ir.h"
#include "pass.h"
#include "unit_util.h"

/* ---- fixture and helpers ---- */

/* Shorthands: a float32 graph input, float32 and int64 constants. */
static ValId in_f32(IrGraph *g, const char *name, int rank, const int64_t *dims)
{
    return ut_input(g, name, IR_DT_F32, rank, dims);
}

static ValId c_f32(IrGraph *g, int rank, const int64_t *dims, const float *v)
{
    return ut_const(g, IR_DT_F32, rank, dims, v);
}

static ValId c_i64(IrGraph *g, int rank, const int64_t *dims, const int64_t *v)
{
    return ut_const(g, IR_DT_I64, rank, dims, v);
}

/* Decompose, check no errors, and check output 0's shape. */
static void decompose_ok_shape(UtFx *f, int rank, const int64_t *dims)
{
    ut_decompose_ok(f);
    ut_expect_shape(f->g, 0, rank, dims);
}

/* ---- Conv ---- */

/* Direct 2-D convolution with ONNX semantics (pads, strides, dilations, group). */
static void ref_conv2d(const float *x, const float *w, const float *b, int N, int C, int H,
                       int W, int M, int KH, int KW, int G, int sh, int sw, int dh, int dw,
                       int pt, int pl, int OH, int OW, float *y)
{
    int cg = C / G, mg = M / G;
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double acc = b ? b[m] : 0;
                    int g = m / mg;
                    for (int c = 0; c < cg; c++)
                        for (int kh = 0; kh < KH; kh++)
                            for (int kw = 0; kw < KW; kw++) {
                                int ih = oh * sh + kh * dh - pt, iw = ow * sw + kw * dw - pl;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                                    continue;
                                acc += x[((n * C + g * cg + c) * H + ih) * W + iw] *
                                       w[((m * cg + c) * KH + kh) * KW + kw];
                            }
                    y[((n * M + m) * OH + oh) * OW + ow] = (float)acc;
                }
}

static void test_conv_pads_strides_group(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[4] = {1, 4, 5, 6}, wd[4] = {6, 2, 3, 3}, bd[1] = {6};
    float x[120], w[108], b[6];
    ut_fill(x, 120, 0.1f, 0.05f);
    ut_fill(w, 108, 0.03f, 0);
    ut_fill(b, 6, 0.5f, 0);
    ValId in[3] = {in_f32(g, "x", 4, xd), c_f32(g, 4, wd, w), c_f32(g, 1, bd, b)};
    int64_t pads[4] = {1, 2, 0, 1}, strides[2] = {2, 1}, dil[2] = {1, 2};
    IrAttr a[4] = {ir_attr_ints(g, "pads", pads, 4), ir_attr_ints(g, "strides", strides, 2),
                   ir_attr_ints(g, "dilations", dil, 2), ir_attr_int("group", 2)};
    ir_add_output(g, ut_onnx_op(g, "Conv", 13, in, 3, a, 4));
    /* OH = (5+1+0-3)/2+1 = 2; OW = (6+2+1-5)/1+1 = 5 */
    int64_t od[4] = {1, 6, 2, 5};
    decompose_ok_shape(f, 4, od);
    const void *inputs[1] = {x};
    float want[60];
    ref_conv2d(x, w, b, 1, 4, 5, 6, 6, 3, 3, 2, 2, 1, 1, 2, 1, 2, 2, 5, want);
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 60, 1e-5);
}

static void test_conv_auto_pad_same(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[4] = {2, 1, 5, 5}, wd[4] = {1, 1, 2, 2};
    float x[50], w[4] = {1, 2, 3, 4};
    ut_fill(x, 50, 0.25f, 0);
    ValId in[2] = {in_f32(g, "x", 4, xd), c_f32(g, 4, wd, w)};
    int64_t strides[2] = {2, 2};
    IrAttr a[2] = {ir_attr_str(g, "auto_pad", "SAME_LOWER"), ir_attr_ints(g, "strides", strides, 2)};
    ir_add_output(g, ut_onnx_op(g, "Conv", 11, in, 2, a, 2));
    int64_t od[4] = {2, 1, 3, 3};
    decompose_ok_shape(f, 4, od);
    /* out 3, total pad = (3-1)*2+2-5 = 1; SAME_LOWER puts it at the start */
    float want[18];
    ref_conv2d(x, w, NULL, 2, 1, 5, 5, 1, 2, 2, 1, 2, 2, 1, 1, 1, 1, 3, 3, want);
    const void *inputs[1] = {x};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 18, 1e-6);
}

/* ---- ConvTranspose ---- */

/* Direct transposed convolution (scatter form) in 2-D. */
static void ref_convt2d(const float *x, const float *w, const float *b, int N, int C, int H,
                        int W, int M, int KH, int KW, int G, int sh, int sw, int pt, int pl,
                        int OH, int OW, float *y)
{
    int cg = C / G, mg = M / G;
    for (int i = 0; i < N * M * OH * OW; i++)
        y[i] = 0;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int ih = 0; ih < H; ih++)
                for (int iw = 0; iw < W; iw++)
                    for (int m = 0; m < mg; m++)
                        for (int kh = 0; kh < KH; kh++)
                            for (int kw = 0; kw < KW; kw++) {
                                int oh = ih * sh + kh - pt, ow = iw * sw + kw - pl;
                                int om = (c / cg) * mg + m;
                                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW)
                                    continue;
                                y[((n * M + om) * OH + oh) * OW + ow] +=
                                    x[((n * C + c) * H + ih) * W + iw] * w[((c * mg + m) * KH + kh) * KW + kw];
                            }
    for (int n = 0; b && n < N; n++)
        for (int m = 0; m < M; m++)
            for (int i = 0; i < OH * OW; i++)
                y[(n * M + m) * OH * OW + i] += b[m];
}

static void test_conv_transpose(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    /* C=4, group 2, M/group = 3 -> M = 6; kernel 3x2, strides 2x3, pads 1,0,0,1, output_padding 1,0 */
    int64_t xd[4] = {1, 4, 3, 2}, wd[4] = {4, 3, 3, 2}, bd[1] = {6};
    float x[24], w[72], b[6];
    ut_fill(x, 24, 0.2f, 0.1f);
    ut_fill(w, 72, 0.05f, 0);
    ut_fill(b, 6, 0.3f, 0);
    ValId in[3] = {in_f32(g, "x", 4, xd), c_f32(g, 4, wd, w), c_f32(g, 1, bd, b)};
    int64_t strides[2] = {2, 3}, pads[4] = {1, 0, 0, 1}, op[2] = {1, 0};
    IrAttr a[4] = {ir_attr_ints(g, "strides", strides, 2), ir_attr_ints(g, "pads", pads, 4),
                   ir_attr_ints(g, "output_padding", op, 2), ir_attr_int("group", 2)};
    ir_add_output(g, ut_onnx_op(g, "ConvTranspose", 11, in, 3, a, 4));
    /* OH = 2*(3-1)+1+3-1-0 = 7; OW = 3*(2-1)+0+2-0-1 = 4 */
    int64_t od[4] = {1, 6, 7, 4};
    decompose_ok_shape(f, 4, od);
    float want[168];
    ref_convt2d(x, w, b, 1, 4, 3, 2, 6, 3, 2, 2, 2, 3, 1, 0, 7, 4, want);
    const void *inputs[1] = {x};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 168, 1e-5);
}

/* ---- pools ---- */

/* Reference 2-D pool (max, or average with/without pads in the count). */
static void ref_pool2d(const float *x, int NC, int H, int W, int kh, int kw, int sh, int sw,
                       int pt, int pl, int pb, int pr, int OH, int OW, int mode, float *y)
{
    for (int c = 0; c < NC; c++)
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++) {
                double acc = mode == 0 ? -INFINITY : 0;
                int cnt = 0, cnt_pad = 0;
                for (int i = 0; i < kh; i++)
                    for (int j = 0; j < kw; j++) {
                        int ih = oh * sh + i - pt, iw = ow * sw + j - pl;
                        if (ih < H + pb && iw < W + pr)
                            cnt_pad++;
                        if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                            continue;
                        double v = x[(c * H + ih) * W + iw];
                        acc = mode == 0 ? fmax(acc, v) : acc + v;
                        cnt++;
                    }
                y[(c * OH + oh) * OW + ow] =
                    (float)(mode == 0 ? acc : mode == 1 ? acc / cnt : acc / cnt_pad);
            }
}

/* Build one pool node on x[1,2,5,5]. */
static void pool_case(void **state, const char *op, int ceil_mode, int incl, int mode)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[4] = {1, 2, 5, 5};
    float x[50];
    ut_fill(x, 50, 0.5f, 0.25f);
    ValId in = in_f32(g, "x", 4, xd);
    int64_t k[2] = {3, 2}, s[2] = {2, 2}, pads[4] = {1, 0, 1, 1};
    IrAttr a[5] = {ir_attr_ints(g, "kernel_shape", k, 2), ir_attr_ints(g, "strides", s, 2),
                   ir_attr_ints(g, "pads", pads, 4), ir_attr_int("ceil_mode", ceil_mode),
                   ir_attr_int("count_include_pad", incl)};
    ir_add_output(g, ut_onnx_op(g, op, 19, &in, 1, a, 5));
    /* H: 5+2-3 = 4 -> floor 4/2+1 = 3, ceil 3; W: 5+1-2 = 4 -> 3 (ceil: 3) */
    int OH = 3, OW = 3;
    if (ceil_mode) { /* W with pads 0,1: (5+1-2)/2 = 2 -> 3; add a case that differs below */
        OH = 3;
        OW = 3;
    }
    int64_t od[4] = {1, 2, OH, OW};
    decompose_ok_shape(f, 4, od);
    float want[18];
    ref_pool2d(x, 2, 5, 5, 3, 2, 2, 2, 1, 0, 1, 1, OH, OW, mode, want);
    const void *inputs[1] = {x};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 2 * OH * OW, 1e-6);
}

static void test_maxpool(void **state) { pool_case(state, "MaxPool", 0, 0, 0); }
static void test_avgpool_exclude_pad(void **state) { pool_case(state, "AveragePool", 0, 0, 1); }
static void test_avgpool_include_pad(void **state) { pool_case(state, "AveragePool", 0, 1, 2); }

/* ceil_mode adds a partial window at the end: x[1,1,6,6], k 3, s 2 -> 3 (floor 2). */
static void test_pool_ceil_mode(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[4] = {1, 1, 6, 6};
    float x[36];
    ut_fill(x, 36, 1.0f, 0);
    ValId in = in_f32(g, "x", 4, xd);
    int64_t k[2] = {3, 3}, s[2] = {2, 2};
    IrAttr a[3] = {ir_attr_ints(g, "kernel_shape", k, 2), ir_attr_ints(g, "strides", s, 2),
                   ir_attr_int("ceil_mode", 1)};
    ValId mx = ut_onnx_op(g, "MaxPool", 13, &in, 1, a, 3);
    ValId av = ut_onnx_op(g, "AveragePool", 13, &in, 1, a, 3);
    ir_add_output(g, mx);
    ir_add_output(g, av);
    int64_t od[4] = {1, 1, 3, 3};
    decompose_ok_shape(f, 4, od);
    float wmax[9], wavg[9];
    ref_pool2d(x, 1, 6, 6, 3, 3, 2, 2, 0, 0, 0, 0, 3, 3, 0, wmax);
    ref_pool2d(x, 1, 6, 6, 3, 3, 2, 2, 0, 0, 0, 0, 3, 3, 1, wavg);
    const void *inputs[1] = {x};
    ut_expect_close(ut_run_graph(g, inputs, 0), wmax, 9, 1e-6);
    ut_expect_close(ut_run_graph(g, inputs, 1), wavg, 9, 1e-6);
}

static void test_global_average_pool(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[4] = {1, 2, 2, 2};
    float x[8] = {1, 2, 3, 4, 10, 20, 30, 40};
    ValId in = in_f32(g, "x", 4, xd);
    ir_add_output(g, ut_onnx_op(g, "GlobalAveragePool", 13, &in, 1, NULL, 0));
    int64_t od[4] = {1, 2, 1, 1};
    decompose_ok_shape(f, 4, od);
    float want[2] = {2.5f, 25.0f};
    const void *inputs[1] = {x};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 2, 1e-6);
}

/* ---- Softmax: opset 11 flattens at axis, opset 13 uses one axis ---- */

static void softmax_case(void **state, int64_t opset)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[3] = {2, 3, 2};
    float x[12];
    ut_fill(x, 12, 0.7f, 0);
    ValId in = in_f32(g, "x", 3, xd);
    IrAttr a = ir_attr_int("axis", 1);
    ir_add_output(g, ut_onnx_op(g, "Softmax", opset, &in, 1, &a, 1));
    decompose_ok_shape(f, 3, xd);
    float want[12];
    for (int b = 0; b < 2; b++) {
        if (opset < 13) { /* normalise over the 6 elements of each batch */
            double s = 0;
            for (int i = 0; i < 6; i++)
                s += exp(x[b * 6 + i]);
            for (int i = 0; i < 6; i++)
                want[b * 6 + i] = (float)(exp(x[b * 6 + i]) / s);
        } else {
            for (int j = 0; j < 2; j++) {
                double s = 0;
                for (int i = 0; i < 3; i++)
                    s += exp(x[b * 6 + i * 2 + j]);
                for (int i = 0; i < 3; i++)
                    want[b * 6 + i * 2 + j] = (float)(exp(x[b * 6 + i * 2 + j]) / s);
            }
        }
    }
    const void *inputs[1] = {x};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 12, 1e-6);
}

static void test_softmax_opset11(void **state) { softmax_case(state, 11); }
static void test_softmax_opset13(void **state) { softmax_case(state, 13); }

/* ---- LayerNormalization ---- */

static void test_layernorm(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[2] = {2, 4}, sd[1] = {4};
    float x[8] = {1, 2, 3, 4, -1, 0.5f, 7, 2}, sc[4] = {1, 2, 0.5f, -1}, bi[4] = {0, 1, 2, 3};
    ValId in[3] = {in_f32(g, "x", 2, xd), c_f32(g, 1, sd, sc), c_f32(g, 1, sd, bi)};
    IrAttr a[2] = {ir_attr_int("axis", -1), ir_attr_float("epsilon", 1e-5)};
    ir_add_output(g, ut_onnx_op(g, "LayerNormalization", 17, in, 3, a, 2));
    decompose_ok_shape(f, 2, xd);
    float want[8];
    for (int r = 0; r < 2; r++) {
        double m = 0, v = 0;
        for (int i = 0; i < 4; i++)
            m += x[r * 4 + i] / 4.0;
        for (int i = 0; i < 4; i++)
            v += (x[r * 4 + i] - m) * (x[r * 4 + i] - m) / 4.0;
        for (int i = 0; i < 4; i++)
            want[r * 4 + i] = (float)((x[r * 4 + i] - m) / sqrt(v + 1e-5) * sc[i] + bi[i]);
    }
    const void *inputs[1] = {x};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 8, 1e-5);
    /* the decomposition reduces with REDUCE sum (then multiplies by 1/n) */
    int nsum = 0;
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (!g->nodes[i].dead && g->nodes[i].op == IR_OP_REDUCE)
            nsum += ir_attr_get_int(&g->nodes[i], "fn", -1) == IR_RED_SUM;
    assert_int_equal(nsum, 2);
}

/* ---- Gemm ---- */

static void test_gemm_transb(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t ad[2] = {2, 3}, bd[2] = {4, 3}, cd[1] = {4};
    float A[6] = {1, 2, 3, 4, 5, 6}, B[12], C[4] = {1, -1, 2, -2};
    ut_fill(B, 12, 0.5f, 0);
    ValId in[3] = {in_f32(g, "a", 2, ad), c_f32(g, 2, bd, B), c_f32(g, 1, cd, C)};
    IrAttr a[3] = {ir_attr_int("transB", 1), ir_attr_float("alpha", 0.5), ir_attr_float("beta", 2.0)};
    ir_add_output(g, ut_onnx_op(g, "Gemm", 13, in, 3, a, 3));
    int64_t od[2] = {2, 4};
    decompose_ok_shape(f, 2, od);
    float want[8];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            double s = 0;
            for (int k = 0; k < 3; k++)
                s += A[i * 3 + k] * B[j * 3 + k];
            want[i * 4 + j] = (float)(0.5 * s + 2.0 * C[j]);
        }
    const void *inputs[1] = {A};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 8, 1e-6);
}

static void test_matmul_1d(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t ad[1] = {3}, bd[3] = {2, 3, 2};
    float A[3] = {1, 2, 3}, B[12];
    ut_fill(B, 12, 1.0f, 0);
    ValId in[2] = {in_f32(g, "a", 1, ad), c_f32(g, 3, bd, B)};
    ir_add_output(g, ut_onnx_op(g, "MatMul", 13, in, 2, NULL, 0));
    int64_t od[2] = {2, 2};
    decompose_ok_shape(f, 2, od);
    float want[4];
    for (int b = 0; b < 2; b++)
        for (int j = 0; j < 2; j++)
            want[b * 2 + j] = A[0] * B[b * 6 + j] + A[1] * B[b * 6 + 2 + j] + A[2] * B[b * 6 + 4 + j];
    const void *inputs[1] = {A};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 4, 1e-6);
}

/* ---- Resize ---- */

static void test_resize_nearest_x2(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[4] = {1, 1, 2, 3}, sd[1] = {4};
    float x[6] = {1, 2, 3, 4, 5, 6}, sc[4] = {1, 1, 2, 2};
    ValId in[3] = {in_f32(g, "x", 4, xd), IR_NONE, c_f32(g, 1, sd, sc)};
    IrAttr a[3] = {ir_attr_str(g, "mode", "nearest"),
                   ir_attr_str(g, "coordinate_transformation_mode", "asymmetric"),
                   ir_attr_str(g, "nearest_mode", "floor")};
    ir_add_output(g, ut_onnx_op(g, "Resize", 18, in, 3, a, 3));
    int64_t od[4] = {1, 1, 4, 6};
    decompose_ok_shape(f, 4, od);
    float want[24];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++)
            want[i * 6 + j] = x[(i / 2) * 3 + j / 2];
    const void *inputs[1] = {x};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 24, 0);
}

/* Linear, half_pixel, sizes input: 1-D [1,2,3,4] -> 8 (values from the ONNX spec's
 * formula: x_orig = (i + 0.5) / 2 - 0.5, clamped). */
static void test_resize_linear(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[2] = {1, 4}, zd[1] = {2}, sizes[2] = {1, 8};
    float x[4] = {1, 2, 3, 4};
    ValId in[4] = {in_f32(g, "x", 2, xd), IR_NONE, IR_NONE, c_i64(g, 1, zd, sizes)};
    IrAttr a = ir_attr_str(g, "mode", "linear");
    ir_add_output(g, ut_onnx_op(g, "Resize", 13, in, 4, &a, 1));
    int64_t od[2] = {1, 8};
    decompose_ok_shape(f, 2, od);
    float want[8] = {1, 1.25f, 1.75f, 2.25f, 2.75f, 3.25f, 3.75f, 4};
    const void *inputs[1] = {x};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 8, 1e-6);
}

/* ---- GatherND, GatherElements, Gather ---- */

static void test_gather_nd(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t dd[3] = {2, 2, 2}, id[2] = {3, 2};
    float data[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int64_t idx[6] = {0, 1, 1, 0, -1, -1};
    ValId in[2] = {in_f32(g, "d", 3, dd), in_f32(g, "i", 2, id)};
    IrType it = ut_type(IR_DT_I64, 2, id);
    g->vals[in[1]].type = it;
    ir_add_output(g, ut_onnx_op(g, "GatherND", 13, in, 2, NULL, 0));
    int64_t od[2] = {3, 2};
    decompose_ok_shape(f, 2, od);
    float want[6] = {2, 3, 4, 5, 6, 7};
    const void *inputs[2] = {data, idx};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 6, 0);
}

static void test_gather_nd_batch(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t dd[3] = {2, 2, 2}, id[2] = {2, 1};
    float data[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int64_t idx[2] = {1, 0};
    ValId in[2] = {in_f32(g, "d", 3, dd), c_i64(g, 2, id, idx)};
    IrAttr a = ir_attr_int("batch_dims", 1);
    ir_add_output(g, ut_onnx_op(g, "GatherND", 13, in, 2, &a, 1));
    int64_t od[2] = {2, 2};
    decompose_ok_shape(f, 2, od);
    float want[4] = {2, 3, 4, 5};
    const void *inputs[1] = {data};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 4, 0);
}

static void test_gather_elements(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t dd[2] = {3, 3}, id[2] = {2, 3};
    float data[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    int64_t idx[6] = {1, 2, 0, 2, 0, -3};
    ValId in[2] = {in_f32(g, "d", 2, dd), c_i64(g, 2, id, idx)};
    IrAttr a = ir_attr_int("axis", 0);
    ir_add_output(g, ut_onnx_op(g, "GatherElements", 13, in, 2, &a, 1));
    int64_t od[2] = {2, 3};
    decompose_ok_shape(f, 2, od);
    float want[6] = {4, 8, 3, 7, 2, 3};
    const void *inputs[1] = {data};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 6, 0);
}

/* ---- Slice with a negative step, clamped ends ---- */

static void test_slice_negative_step(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[2] = {2, 10}, one[1] = {1};
    float x[20];
    for (int i = 0; i < 20; i++)
        x[i] = (float)i;
    int64_t st[1] = {-1}, en[1] = {INT64_MIN}, ax[1] = {1}, sp[1] = {-3};
    ValId in[5] = {in_f32(g, "x", 2, xd), c_i64(g, 1, one, st), c_i64(g, 1, one, en),
                   c_i64(g, 1, one, ax), c_i64(g, 1, one, sp)};
    ir_add_output(g, ut_onnx_op(g, "Slice", 13, in, 5, NULL, 0));
    int64_t od[2] = {2, 4};
    decompose_ok_shape(f, 2, od);
    float want[8] = {9, 6, 3, 0, 19, 16, 13, 10};
    const void *inputs[1] = {x};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 8, 0);
}

/* ---- shape ops through a folded shape subgraph ---- */

/* Reshape whose shape comes from Shape -> Gather -> Concat (folds while decomposing). */
static void test_shape_subgraph_folds(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[3] = {2, 3, 4}, one[1] = {1};
    float x[24];
    ut_fill(x, 24, 1.0f, 0);
    ValId xv = in_f32(g, "x", 3, xd);
    ValId shp = ut_onnx_op(g, "Shape", 18, &xv, 1, NULL, 0);
    int64_t i0[1] = {0}, m1[1] = {-1};
    ValId gin[2] = {shp, c_i64(g, 1, one, i0)};
    ValId d0 = ut_onnx_op(g, "Gather", 18, gin, 2, NULL, 0);
    ValId cin[2] = {d0, c_i64(g, 1, one, m1)};
    IrAttr ax = ir_attr_int("axis", 0);
    ValId newshape = ut_onnx_op(g, "Concat", 18, cin, 2, &ax, 1);
    ValId rin[2] = {xv, newshape};
    ir_add_output(g, ut_onnx_op(g, "Reshape", 18, rin, 2, NULL, 0));
    int64_t od[2] = {2, 12};
    decompose_ok_shape(f, 2, od);
    int live = 0;
    for (uint32_t i = 0; i < g->nnodes; i++)
        live += !g->nodes[i].dead;
    assert_int_equal(live, 1); /* only the reshape of x remains */
}

static void test_split_unsqueeze_pad(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[2] = {2, 5}, one[1] = {1}, two[1] = {2}, four[1] = {4};
    float x[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    ValId xv = in_f32(g, "x", 2, xd);
    int64_t sp[2] = {2, 3};
    ValId sin[2] = {xv, c_i64(g, 1, two, sp)};
    IrForeign fs = {.op_type = "Split", .domain = "", .opset = 18};
    IrAttr ax = ir_attr_int("axis", 1);
    IrOrigin o = {.name = "split", .op_type = "Split"};
    NodeId sid = ir_add_foreign(g, &fs, sin, 2, 2, &ax, 1, &o);
    ValId second = g->nodes[sid].out[1];
    int64_t uax[1] = {0};
    ValId uin[2] = {second, c_i64(g, 1, one, uax)};
    ValId u = ut_onnx_op(g, "Unsqueeze", 18, uin, 2, NULL, 0); /* [1,2,3] */
    int64_t pads[6] = {0, 0, 2, 0, 0, 1};
    int64_t six[1] = {6};
    ValId pin[2] = {u, c_i64(g, 1, six, pads)};
    IrAttr mode = ir_attr_str(g, "mode", "reflect");
    ir_add_output(g, ut_onnx_op(g, "Pad", 18, pin, 2, &mode, 1)); /* [1,2,6] */
    (void)four;
    int64_t od[3] = {1, 2, 6};
    decompose_ok_shape(f, 3, od);
    /* rows [2,3,4] and [7,8,9]; reflect 2 before, 1 after: [4,3,2,3,4,3] */
    float want[12] = {4, 3, 2, 3, 4, 3, 9, 8, 7, 8, 9, 8};
    const void *inputs[1] = {x};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 12, 0);
}

static void test_einsum_batched(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t ad[3] = {2, 2, 3}, bd[3] = {2, 3, 2};
    float A[12], B[12];
    ut_fill(A, 12, 0.5f, 0);
    ut_fill(B, 12, 0.25f, 1);
    ValId in[2] = {in_f32(g, "a", 3, ad), c_f32(g, 3, bd, B)};
    IrAttr eq = ir_attr_str(g, "equation", "bij, bjk -> bki");
    ir_add_output(g, ut_onnx_op(g, "Einsum", 12, in, 2, &eq, 1));
    int64_t od[3] = {2, 2, 2};
    decompose_ok_shape(f, 3, od);
    float want[8];
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < 2; i++) {
                double s = 0;
                for (int j = 0; j < 3; j++)
                    s += A[b * 6 + i * 3 + j] * B[b * 6 + j * 2 + k];
                want[b * 4 + k * 2 + i] = (float)s;
            }
    const void *inputs[1] = {A};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 8, 1e-6);
}

/* ---- unsupported operators are listed all at once ---- */

static void test_unsupported_listing(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[1] = {4};
    ValId x = in_f32(g, "x", 1, xd);
    IrForeign foo = {.op_type = "Foo", .domain = "", .opset = 18};
    IrForeign bar = {.op_type = "Bar", .domain = "com.example", .opset = 1};
    IrOrigin o1 = {.name = "n7", .op_type = "Foo"}, o2 = {.name = "n8", .op_type = "Foo"};
    IrOrigin o3 = {.name = "n9", .op_type = "Bar"};
    NodeId a = ir_add_foreign(g, &foo, &x, 1, 1, NULL, 0, &o1);
    ValId av = g->nodes[a].out[0];
    NodeId b = ir_add_foreign(g, &foo, &av, 1, 1, NULL, 0, &o2);
    ValId bv = g->nodes[b].out[0];
    NodeId c = ir_add_foreign(g, &bar, &bv, 1, 1, NULL, 0, &o3);
    ir_add_output(g, g->nodes[c].out[0]);
    assert_false(pass_decompose(g, &f->opt));
    assert_int_equal(f->d.nerrors, 2);
    assert_string_equal(f->d.msgs[0], "test.onnx: node 'n7' (Foo): unsupported operator Foo (opset 18)");
    assert_string_equal(f->d.msgs[1],
                        "test.onnx: node 'n9' (Bar): unsupported operator com.example.Bar (opset 1)");
}

static void test_dynamic_shape_input_reported(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[2] = {2, 3}, sd[1] = {2};
    ValId in[2] = {in_f32(g, "x", 2, xd), in_f32(g, "s", 1, sd)};
    g->vals[in[1]].type.dtype = IR_DT_I64;
    ValId y = ut_onnx_op(g, "Reshape", 18, in, 2, NULL, 0);
    ir_add_output(g, ut_onnx_op(g, "Softmax", 13, &y, 1, NULL, 0));
    /* the runtime shape of y is fine for an output, not for a Softmax over it */
    PassOptions po = f->opt;
    assert_false(pass_run_pipeline(g, &po));
    assert_int_equal(f->d.nerrors, 1);
    assert_non_null(strstr(f->d.msgs[0], "unsupported: dynamic shape input 's' (a graph "
                                         "input: specialise it with --bind)"));
}

/* ---- fold, dce, simplify, bnfold ---- */

static void test_fold(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d[1] = {3};
    float a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
    ValId ca = c_f32(g, 1, d, a), cb = c_f32(g, 1, d, b), x = in_f32(g, "x", 1, d);
    ValId s = ir_binary(g, IR_BIN_ADD, ca, cb, NULL);
    ValId m = ir_binary(g, IR_BIN_MUL, s, x, NULL);
    ir_add_output(g, m);
    assert_int_equal(g->nnodes, 2);
    assert_true(pass_fold(g, &f->opt));
    assert_int_equal(g->nnodes, 1);
    assert_true(ir_is_const(g, s));
    const float *sv = g->vals[s].data;
    float want[3] = {11, 22, 33};
    ut_expect_close(sv, want, 3, 0);
    float xin[3] = {1, 1, 2};
    const void *inputs[1] = {xin};
    float want2[3] = {11, 22, 66};
    ut_expect_close(ut_run_graph(g, inputs, 0), want2, 3, 0);
}

static void test_dce(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d[1] = {3};
    ValId x = in_f32(g, "x", 1, d);
    ValId used = ir_unary(g, IR_UN_EXP, x, NULL);
    ValId dead = ir_unary(g, IR_UN_LOG, x, NULL);
    (void)ir_unary(g, IR_UN_NEG, dead, NULL);
    ir_add_output(g, used);
    assert_true(pass_dce(g, &f->opt));
    assert_int_equal(g->nnodes, 1);
    assert_int_equal(g->nodes[0].out[0], used);
    assert_true(ir_verify(g, "dce"));
}

static void test_simplify(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t d[3] = {2, 3, 4}, d2[2] = {6, 4}, d3[2] = {4, 6};
    float x[24];
    ut_fill(x, 24, 1.0f, 0.5f);
    ValId xv = in_f32(g, "x", 3, d);
    ValId r1 = ir_reshape(g, xv, d2, 2, NULL);
    ValId r2 = ir_reshape(g, r1, d3, 2, NULL);     /* reshape chain -> one reshape */
    int64_t p1[3] = {1, 2, 0}, p2[3] = {2, 0, 1};
    ValId t1 = ir_transpose(g, xv, p1, NULL);
    ValId t2 = ir_transpose(g, t1, p2, NULL);       /* composes to the identity */
    ValId one = ir_const_scalar_f32(g, 1.0f);
    ValId m1 = ir_binary(g, IR_BIN_MUL, t2, one, NULL); /* x * 1 */
    ValId e1 = ir_unary(g, IR_UN_EXP, m1, NULL);
    ValId e2 = ir_unary(g, IR_UN_EXP, xv, NULL);    /* CSE with e1 once m1 -> x */
    ValId sum = ir_binary(g, IR_BIN_ADD, e1, e2, NULL);
    ir_add_output(g, r2);
    ir_add_output(g, sum);
    const void *inputs[1] = {x};
    float before[24];
    memcpy(before, ut_run_graph(g, inputs, 1), sizeof before);
    assert_true(pass_simplify(g, &f->opt));
    assert_true(pass_dce(g, &f->opt));
    assert_true(ir_verify(g, "simplify"));
    /* left: reshape(x), exp(x), add */
    assert_int_equal(g->nnodes, 3);
    assert_int_equal(g->nodes[0].op, IR_OP_RESHAPE);
    assert_int_equal(g->nodes[0].in[0], xv);
    ut_expect_close(ut_run_graph(g, inputs, 1), before, 24, 0);
    assert_int_equal(g->outputs[0], r2);
    assert_int_equal(g->outputs[1], sum);
}

/* A product flattened to [b * s, n] and viewed back as [b, s, n] (gpt2's Conv1D), then
 * + bias[n], + residual[b, s, n], tanh: after simplification both additions compute
 * on the product's [b * s, n] (so fuse can make them its epilogue; the tanh, the
 * graph output, keeps its node and shape), the output bit for bit what it was. A
 * residual broadcast over the batch ([s, n]) cannot be viewed so: only the bias
 * addition moves. */
static void sink_case(UtFx *f, bool per_batch)
{
    IrGraph *g = f->g;
    int64_t dx[2] = {6, 8}, dw[2] = {8, 5}, dv[3] = {2, 3, 5}, db[1] = {5};
    int64_t dr[3] = {2, 3, 5};
    float x[48], w[40], r[30], b[5];
    ut_fill(x, 48, 0.37f, -0.2f);
    ut_fill(w, 40, 0.11f, 0.05f);
    ut_fill(r, 30, 0.23f, 0.1f);
    ut_fill(b, 5, 0.5f, -0.3f);
    ValId xv = in_f32(g, "x", 2, dx), wv = in_f32(g, "w", 2, dw);
    ValId rv = per_batch ? in_f32(g, "r", 3, dr) : in_f32(g, "r", 2, dr + 1);
    ValId v = ir_reshape(g, ir_matmul(g, xv, wv, NULL), dv, 3, NULL);
    ValId a = ir_binary(g, IR_BIN_ADD, v, c_f32(g, 1, db, b), NULL);
    ValId y = ir_unary(g, IR_UN_TANH, ir_binary(g, IR_BIN_ADD, a, rv, NULL), NULL);
    ir_add_output(g, y);
    const void *inputs[3] = {x, w, r};
    float before[30];
    memcpy(before, ut_run_graph(g, inputs, 0), sizeof before);
    assert_true(pass_simplify(g, &f->opt) && pass_dce(g, &f->opt));
    assert_true(ir_verify(g, "simplify"));
    int flat = 0;                          /* pointwise nodes on [b * s, n] */
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (ir_op_info[g->nodes[i].op].cls == IR_CLS_ELEM)
            flat += ir_vtype(g, g->nodes[i].out[0])->rank == 2;
    assert_int_equal(flat, per_batch ? 2 : 1); /* the output's tanh keeps its node */
    assert_memory_equal(ut_run_graph(g, inputs, 0), before, sizeof before);
    assert_int_equal(ir_vtype(g, g->outputs[0])->rank, 3);
}

static void test_simplify_sink_reshape(void **state) { sink_case(*state, true); }
static void test_simplify_sink_broadcast(void **state) { sink_case(*state, false); }

/* A sequence-first product x[20, 2, 64] x W[64, 300] (+ bias, relu, tanh): with W
 * constant (75 KiB) simplify computes it as one product of 40 rows (pass_flatmm), its
 * bias and relu before the view back (the output's tanh keeps its shape), and the
 * output equals the one before bit for bit; with W an input it stays batched. With
 * transposed, x is the transpose of a batch-first [2, 20, 64] input (flattened through
 * a copy of 10 KiB, against 19 reloads of W). */
static void flatmm_case(UtFx *f, bool wconst, bool transposed)
{
    IrGraph *g = f->g;
    int64_t dx[3] = {20, 2, 64}, dw[2] = {64, 300}, db[1] = {300};
    int64_t dxt[3] = {2, 20, 64}, perm[3] = {1, 0, 2};
    static float x[20 * 2 * 64], w[64 * 300], b[300];
    ut_fill(x, 20 * 2 * 64, 0.37f, -0.2f);
    ut_fill(w, 64 * 300, 0.11f, 0.05f);
    ut_fill(b, 300, 0.5f, -0.3f);
    ValId xv = transposed ? ir_transpose(g, in_f32(g, "x", 3, dxt), perm, NULL)
                          : in_f32(g, "x", 3, dx);
    ValId wv = wconst ? c_f32(g, 2, dw, w) : in_f32(g, "w", 2, dw);
    ValId a = ir_binary(g, IR_BIN_ADD, ir_matmul(g, xv, wv, NULL), c_f32(g, 1, db, b), NULL);
    ValId y = ir_unary(g, IR_UN_TANH, ir_unary(g, IR_UN_RELU, a, NULL), NULL);
    ir_add_output(g, y);
    const void *inputs[2] = {x, w};
    int64_t cnt = ir_type_numel(ir_vtype(g, y));
    float *before = malloc(sizeof(float) * (size_t)cnt);
    memcpy(before, ut_run_graph(g, inputs, 0), sizeof(float) * (size_t)cnt);
    assert_true(pass_simplify(g, &f->opt) && pass_dce(g, &f->opt));
    assert_true(ir_verify(g, "simplify"));
    int flat = 0, products = 0;                    /* on [40, n] */
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        products += n->op == IR_OP_MATMUL;
        if (n->op == IR_OP_MATMUL || ir_op_info[n->op].cls == IR_CLS_ELEM)
            flat += ir_vtype(g, n->out[0])->rank == 2;
    }
    assert_int_equal(products, 1);
    assert_int_equal(flat, wconst ? 3 : 0);        /* the product, bias and relu */
    assert_memory_equal(ut_run_graph(g, inputs, 0), before, sizeof(float) * (size_t)cnt);
    assert_int_equal(ir_vtype(g, g->outputs[0])->rank, 3);
    free(before);
}

static void test_simplify_flatmm(void **state) { flatmm_case(*state, true, false); }
static void test_simplify_flatmm_input_w(void **state) { flatmm_case(*state, false, false); }
static void test_simplify_flatmm_transposed(void **state) { flatmm_case(*state, true, true); }

/* A channels-last product x[1, h, 32, 64] x W[64, 300] (ConvNeXt's linear layers):
 * 32 rows a batch item, so flattened only when it has FLAT_ROWS (512) rows in all: h
 * 24 (768 rows) is one product of rank 2, equal bit for bit; h 8 (256) stays batched. */
static void flatmm_rows_case(UtFx *f, int64_t h, bool flat)
{
    IrGraph *g = f->g;
    int64_t dx[4] = {1, h, 32, 64}, dw[2] = {64, 300};
    static float x[24 * 32 * 64], w[64 * 300];
    ut_fill(x, (int)(h * 32 * 64), 0.29f, -0.1f);
    ut_fill(w, 64 * 300, 0.13f, 0.02f);
    ValId y = ir_matmul(g, in_f32(g, "x", 4, dx), c_f32(g, 2, dw, w), NULL);
    ir_add_output(g, y);
    const void *inputs[1] = {x};
    int64_t cnt = ir_type_numel(ir_vtype(g, y));
    float *before = malloc(sizeof(float) * (size_t)cnt);
    memcpy(before, ut_run_graph(g, inputs, 0), sizeof(float) * (size_t)cnt);
    (void)pass_simplify(g, &f->opt);      /* false when nothing changes (h 8) */
    (void)pass_dce(g, &f->opt);
    assert_true(ir_verify(g, "simplify"));
    int rank = 0;
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (!g->nodes[i].dead && g->nodes[i].op == IR_OP_MATMUL)
            rank = ir_vtype(g, g->nodes[i].out[0])->rank;
    assert_int_equal(rank, flat ? 2 : 4);
    assert_memory_equal(ut_run_graph(g, inputs, 0), before, sizeof(float) * (size_t)cnt);
    free(before);
}

static void test_simplify_flatmm_rows(void **state) { flatmm_rows_case(*state, 24, true); }
static void test_simplify_flatmm_few_rows(void **state) { flatmm_rows_case(*state, 8, false); }

/* Rows idx (axis 1) of a norm -> matmul -> transposes chain on x[2,5,8]: after
 * simplification the matmul computes only those rows, and the graph output equals the
 * one before bit for bit (ir_eval_node on both graphs). */
static void rowsel_case(UtFx *f, const int64_t *idx, int nidx)
{
    IrGraph *g = f->g;
    int64_t dx[3] = {2, 5, 8}, dw[2] = {8, 7}, perm[3] = {1, 0, 2}, ax2 = 2;
    float x[80], w[56];
    ut_fill(x, 80, 0.37f, -0.2f);
    ut_fill(w, 56, 0.11f, 0.05f);
    ValId xv = in_f32(g, "x", 3, dx), wv = in_f32(g, "w", 2, dw);
    ValId s = ir_reduce(g, IR_RED_SUM, xv, &ax2, 1, true, NULL);
    ValId m = ir_binary(g, IR_BIN_MUL, s, ir_const_scalar_f32(g, 0.125f), NULL);
    ValId dv = ir_binary(g, IR_BIN_SUB, xv, m, NULL);
    ValId n = ir_binary(g, IR_BIN_MUL, dv, dv, NULL);
    ValId t = ir_transpose(g, ir_matmul(g, n, wv, NULL), perm, NULL);
    ValId y = ir_transpose(g, ir_unary(g, IR_UN_TANH, t, NULL), perm, NULL);
    int64_t ni = nidx;
    ValId iv = c_i64(g, nidx == 1 ? 0 : 1, &ni, idx);
    IrAttr at = ir_attr_int("axis", 1);
    ValId in2[2] = {y, iv};
    ValId out = ir_node(g, ir_add_node(g, IR_OP_GATHER, in2, 2, &at, 1, NULL))->out[0];
    ir_add_output(g, out);
    const void *inputs[2] = {x, w};
    int64_t cnt = ir_type_numel(ir_vtype(g, out));
    float *before = malloc(sizeof(float) * (size_t)cnt);
    memcpy(before, ut_run_graph(g, inputs, 0), sizeof(float) * (size_t)cnt);
    assert_true(pass_simplify(g, &f->opt) && pass_dce(g, &f->opt));
    assert_true(ir_verify(g, "simplify"));
    assert_int_equal(ut_count_op(g, IR_OP_GATHER), 0);
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == IR_OP_MATMUL)
            assert_int_equal(ir_vtype(g, g->nodes[i].out[0])->dims[1], nidx);
    assert_memory_equal(ut_run_graph(g, inputs, 0), before, sizeof(float) * (size_t)cnt);
    assert_int_equal(g->outputs[0], out);
    free(before);
}

static void test_simplify_rowsel_last(void **state)
{
    int64_t last = -1;
    rowsel_case(*state, &last, 1);
}

static void test_simplify_rowsel_strided(void **state)
{
    int64_t rows[3] = {0, 2, 4};
    rowsel_case(*state, rows, 3);
}

/* Conv -> Add(bias) -> Mul(per-channel) -> Add(per-channel): folds into the conv's
 * weights and one add, with the same numbers. */
static void test_bnfold(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[4] = {1, 2, 4, 4}, wd[4] = {3, 2, 3, 3}, cd[4] = {1, 3, 1, 1}, c3[3] = {3, 1, 1};
    float x[32], w[54], b[3] = {0.1f, -0.2f, 0.3f}, s[3] = {2, 0.5f, -1}, t[3] = {1, 2, 3};
    ut_fill(x, 32, 0.3f, 0);
    ut_fill(w, 54, 0.1f, 0);
    ValId xv = in_f32(g, "x", 4, xd);
    int64_t ones[2] = {1, 1};
    IrAttr a[3] = {ir_attr_ints(g, "strides", ones, 2), ir_attr_ints(g, "dilations", ones, 2),
                   ir_attr_int("group", 1)};
    ValId cin[2] = {xv, c_f32(g, 4, wd, w)};
    NodeId cn = ir_add_node(g, IR_OP_CONV, cin, 2, a, 3, NULL);
    ValId y = g->nodes[cn].out[0];
    y = ir_binary(g, IR_BIN_ADD, y, c_f32(g, 4, cd, b), NULL);
    y = ir_binary(g, IR_BIN_MUL, c_f32(g, 3, c3, s), y, NULL);
    y = ir_binary(g, IR_BIN_ADD, y, c_f32(g, 4, cd, t), NULL);
    ir_add_output(g, y);
    const void *inputs[1] = {x};
    float before[12];
    memcpy(before, ut_run_graph(g, inputs, 0), sizeof before);
    assert_true(pass_bnfold(g, &f->opt));
    assert_true(ir_verify(g, "bnfold"));
    assert_int_equal(g->nnodes, 2);
    assert_int_equal(g->nodes[0].op, IR_OP_CONV);
    assert_int_equal(g->nodes[1].op, IR_OP_BINARY);
    assert_int_equal(g->outputs[0], y);
    ut_expect_close(ut_run_graph(g, inputs, 0), before, 12, 1e-5);
}

/* Gemm with alpha and a BatchNormalization-like Mul/Add after MatMul folds too. */
static void test_bnfold_matmul(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t ad[2] = {2, 3}, bd[2] = {3, 2}, sd[1] = {2};
    float A[6] = {1, 2, 3, -1, 0, 1}, B[6] = {1, 2, 3, 4, 5, 6}, s[2] = {2, -3}, t[2] = {5, 7};
    ValId av = in_f32(g, "a", 2, ad);
    ValId y = ir_matmul(g, av, c_f32(g, 2, bd, B), NULL);
    y = ir_binary(g, IR_BIN_MUL, y, c_f32(g, 1, sd, s), NULL);
    y = ir_binary(g, IR_BIN_SUB, y, c_f32(g, 1, sd, t), NULL);
    ir_add_output(g, y);
    const void *inputs[1] = {A};
    float before[4];
    memcpy(before, ut_run_graph(g, inputs, 0), sizeof before);
    assert_true(pass_bnfold(g, &f->opt));
    assert_int_equal(g->nnodes, 2);
    ut_expect_close(ut_run_graph(g, inputs, 0), before, 4, 1e-6);
}

/* BatchNormalization decomposes to constant scale/shift, which bnfold moves into the
 * preceding Conv. */
static void test_batchnorm_into_conv(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t xd[4] = {1, 1, 3, 3}, wd[4] = {2, 1, 2, 2}, cd[1] = {2};
    float x[9], w[8], sc[2] = {1.5f, 0.5f}, bi[2] = {0.1f, -0.1f}, mu[2] = {0.2f, -0.3f},
                      var[2] = {0.9f, 2.0f};
    ut_fill(x, 9, 0.4f, 0);
    ut_fill(w, 8, 0.2f, 0);
    ValId xv = in_f32(g, "x", 4, xd);
    ValId cin[2] = {xv, c_f32(g, 4, wd, w)};
    ValId cv = ut_onnx_op(g, "Conv", 13, cin, 2, NULL, 0);
    ValId bin[5] = {cv, c_f32(g, 1, cd, sc), c_f32(g, 1, cd, bi), c_f32(g, 1, cd, mu), c_f32(g, 1, cd, var)};
    ir_add_output(g, ut_onnx_op(g, "BatchNormalization", 15, bin, 5, NULL, 0));
    int64_t od[4] = {1, 2, 2, 2};
    decompose_ok_shape(f, 4, od);
    const void *inputs[1] = {x};
    float want[8];
    ref_conv2d(x, w, NULL, 1, 1, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 0, 0, 2, 2, want);
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < 4; i++)
            want[m * 4 + i] = (float)((want[m * 4 + i] - mu[m]) / sqrt(var[m] + 1e-5) * sc[m] + bi[m]);
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 8, 1e-5);
    assert_true(pass_simplify(g, &f->opt) && pass_bnfold(g, &f->opt) && pass_dce(g, &f->opt));
    assert_int_equal(g->nnodes, 2); /* conv + one add */
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 8, 1e-5);
}

/* ---- every model of the shared zoo decomposes and evaluates to its golden output ---- */

/* snprintf into a path buffer, failing the test when it does not fit. */
static void pathf(char *buf, size_t len, const char *fmt, const char *a, unsigned k)
{
    int n = snprintf(buf, len, fmt, a, k);
    assert_true(n > 0 && (size_t)n < len);
}

/* Compare float output k of g (evaluated data `got`) with DIR/output_k.pb. */
static void check_golden(IrGraph *g, const char *dir, uint32_t k, const void *got)
{
    char path[4096], err[512];
    FeTensor want = {0};
    pathf(path, sizeof path, "%s/output_%u.pb", dir, k);
    if (!fe_tensor_read(path, &want, err, sizeof err)) {
        fprintf(stderr, "  %s\n", err);
        fail();
    }
    const IrType *t = ir_vtype(g, g->outputs[k]);
    assert_int_equal(want.dtype, t->dtype);
    assert_int_equal(want.nbytes, ir_type_bytes(t));
    if (t->dtype == IR_DT_F32) {
        const float *a = got, *b = want.data;
        for (int64_t i = 0, n = ir_type_numel(t); i < n; i++)
            if (!(fabs((double)a[i] - b[i]) <= 1e-4 + 1e-3 * fabs((double)b[i]))) {
                fprintf(stderr, "  %s output %u element %lld: got %g want %g\n", dir, k,
                        (long long)i, a[i], b[i]);
                fail();
            }
    } else {
        assert_memory_equal(got, want.data, want.nbytes);
    }
    fe_tensor_free(&want);
}

/* Load DIR/model.onnx, run decompose/fold/simplify/bnfold/dce, evaluate on the
 * test_data_set_0 inputs with ir_eval_node and compare with the goldens. */
static void run_zoo_model(const char *mdir)
{
    char path[4096], err[512], dir[4096];
    pathf(path, sizeof path, "%s/model.onnx", mdir, 0);
    pathf(dir, sizeof dir, "%s/test_data_set_0", mdir, 0);
    IrDiag d;
    ir_diag_init(&d, path);
    FeOptions fo = {0};
    IrGraph *g = fe_load_model(path, &d, &fo);
    PassOptions po = {.opt_level = 2, .verify = true};
    bool ok = g && pass_decompose(g, &po) && pass_fold(g, &po) && pass_simplify(g, &po) &&
              pass_bnfold(g, &po) && pass_dce(g, &po) && ir_verify(g, "zoo");
    if (!ok)
        ut_dump_diag(&d);
    assert_true(ok);
    for (uint32_t i = 0; i < g->nnodes; i++)
        assert_int_not_equal(g->nodes[i].op, IR_OP_FOREIGN);
    FeTensor *tin = calloc(g->ninputs + 1, sizeof *tin);
    const void **inputs = calloc(g->ninputs + 1, sizeof *inputs);
    for (uint32_t i = 0; i < g->ninputs; i++) {
        pathf(path, sizeof path, "%s/input_%u.pb", dir, i);
        if (!fe_tensor_read(path, &tin[i], err, sizeof err)) {
            fprintf(stderr, "  %s\n", err);
            fail();
        }
        assert_int_equal(tin[i].nbytes, ir_type_bytes(ir_vtype(g, g->inputs[i])));
        inputs[i] = tin[i].data;
    }
    for (uint32_t k = 0; k < g->noutputs; k++)
        check_golden(g, dir, k, ut_run_graph(g, inputs, k));
    for (uint32_t i = 0; i < g->ninputs; i++)
        fe_tensor_free(&tin[i]);
    free(tin);
    free(inputs);
    ir_graph_free(g);
    ir_diag_free(&d);
}

static void test_shared_models(void **state)
{
    (void)state;
    const char *shared = getenv("SHARED") ? getenv("SHARED") : "../shared";
    char root[4096], mdir[4096], probe[4096];
    pathf(root, sizeof root, "%s/models", shared, 0);
    DIR *dp = opendir(root);
    if (!dp) {                             /* listed gap: the zoo lives in ../shared */
        print_message("skipped: %s is not present (the model zoo is in ../shared)\n", root);
        skip();
    }
    struct dirent *e;
    int n = 0;
    while ((e = readdir(dp)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        int w = snprintf(mdir, sizeof mdir, "%s/%s", root, e->d_name);
        assert_true(w > 0 && (size_t)w < sizeof mdir);
        pathf(probe, sizeof probe, "%s/model.onnx", mdir, 0);
        FILE *f = fopen(probe, "rb");
        if (!f)
            continue;
        fclose(f);
        run_zoo_model(mdir);
        n++;
    }
    closedir(dp);
    assert_true(n > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_conv_pads_strides_group, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_conv_auto_pad_same, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_conv_transpose, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_maxpool, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_avgpool_exclude_pad, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_avgpool_include_pad, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_pool_ceil_mode, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_global_average_pool, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_softmax_opset11, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_softmax_opset13, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_layernorm, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_gemm_transb, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_matmul_1d, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_resize_nearest_x2, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_resize_linear, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_gather_nd, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_gather_nd_batch, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_gather_elements, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_slice_negative_step, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_shape_subgraph_folds, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_split_unsqueeze_pad, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_einsum_batched, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_listing, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_dynamic_shape_input_reported, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_fold, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_dce, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_simplify, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_simplify_sink_reshape, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_simplify_sink_broadcast, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_simplify_flatmm, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_simplify_flatmm_input_w, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_simplify_flatmm_transposed, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_simplify_flatmm_rows, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_simplify_flatmm_few_rows, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_simplify_rowsel_last, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_simplify_rowsel_strided, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_bnfold, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_bnfold_matmul, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_batchnorm_into_conv, ut_setup, ut_teardown),
        cmocka_unit_test(test_shared_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
