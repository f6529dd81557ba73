/* test_dec_ops1.c: unit tests of the ONNX decompositions in passes/decompose/onnx/
 * (onnx_grid_sample.c, onnx_signal.c, onnx_reduce.c, onnx_topk.c, onnx_gather.c,
 * onnx_scatter.c, onnx_bitcast.c, onnx_roi_align.c, onnx_kernel_taps.c: GridSample,
 * AffineGrid, DFT, STFT, windows, MelWeightMatrix, CumProd, TopK, ReverseSequence,
 * ScatterND, ScatterElements, TensorScatter, MaxUnpool, Col2Im, BitCast, RoiAlign,
 * MaxPool indices, DeformConv). Each ONNX node is decomposed, the core graph is
 * evaluated node by node with ir_eval_node, and the result is compared with the ONNX
 * semantics: a direct C computation, or values from the ONNX reference implementation
 * (dec_ops1_gold.h). Parameters that the tests pass as graph inputs exercise the
 * runtime-value paths (runtime indices, axes, steps, block shapes). */
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

#include "dec_ops1_gold.h"

/* ---- fixture and helpers ---- */

/* Graph input (a runtime value) of the given type, named in<K>. */
static ValId input(IrGraph *g, IrDType dt, int rank, const int64_t *dims)
{
    return ut_input(g, NULL, dt, rank, dims);
}

/* One-output node whose output is a graph output, optionally with a declared type. */
static void op_out(IrGraph *g, const char *type, int64_t opset, const ValId *in, int nin,
                   const IrAttr *a, int na, const IrType *decl)
{
    ValId v = ut_onnx_op(g, type, opset, in, nin, a, na);
    if (decl)
        g->vals[v].type = *decl;
    ir_add_output(g, v);
}

static IrAttr attr_s(IrGraph *g, const char *name, const char *v) { return ir_attr_str(g, name, v); }

/* ---- GridSample, AffineGrid ---- */

static void test_gridsample_2d(void **state)
{
    (void)state;
    static const char *modes[3] = {"nearest", "linear", "cubic"};
    static const char *pads[3] = {"zeros", "border", "reflection"};
    float x[6] = {0, 1, 2, 3, 4, 5};
    for (int m = 0; m < 3; m++)
        for (int p = 0; p < 3; p++)
            for (int ac = 0; ac < 2; ac++) {
                UtFx *f = ut_fx_new();
                IrGraph *g = f->g;
                int64_t xd[4] = {1, 1, 3, 2}, gd[4] = {1, 2, 4, 2}, od[4] = {1, 1, 2, 4};
                ValId in[2] = {input(g, IR_DT_F32, 4, xd), input(g, IR_DT_F32, 4, gd)};
                IrAttr a[3] = {attr_s(g, "mode", modes[m]), attr_s(g, "padding_mode", pads[p]),
                               ir_attr_int("align_corners", ac)};
                op_out(g, "GridSample", 22, in, 2, a, 3, NULL);
                ut_decompose_ok(f);
                ut_expect_shape(g, 0, 4, od);
                const void *inputs[2] = {x, gs_grid};
                ut_expect_close(ut_run_graph(g, inputs, 0), gs_want + ((m * 3 + p) * 2 + ac) * 8, 8, 1e-5);
                ut_fx_free(f);
            }
}

static void test_gridsample_3d(void **state)
{
    (void)state;
    float x[12];
    for (int i = 0; i < 12; i++)
        x[i] = 0.5f * (float)i;
    for (int k = 0; k < 2; k++) {
        UtFx *f = ut_fx_new();
        IrGraph *g = f->g;
        int64_t xd[5] = {1, 1, 3, 2, 2}, gd[5] = {1, 2, 4, 1, 3}, od[5] = {1, 1, 2, 4, 1};
        ValId in[2] = {input(g, IR_DT_F32, 5, xd), input(g, IR_DT_F32, 5, gd)};
        IrAttr a[3] = {attr_s(g, "mode", k ? "nearest" : "linear"),
                       attr_s(g, "padding_mode", k ? "border" : "zeros"), ir_attr_int("align_corners", k)};
        op_out(g, "GridSample", 22, in, 2, a, 3, NULL);
        ut_decompose_ok(f);
        ut_expect_shape(g, 0, 5, od);
        const void *inputs[2] = {x, gs3_grid};
        ut_expect_close(ut_run_graph(g, inputs, 0), gs3_want + k * 8, 8, 1e-5);
        ut_fx_free(f);
    }
}

/* Normalised coordinate of pixel j of n (AffineGrid's base grid). */
static double base_coord(int64_t j, int64_t n, int align)
{
    if (align)
        return n > 1 ? -1.0 + 2.0 * (double)j / (double)(n - 1) : -1.0;
    return -1.0 + (2.0 * (double)j + 1.0) / (double)n;
}

static void test_affine_grid(void **state)
{
    (void)state;
    float th[12] = {1.1f, 0.2f, -0.3f, 0.1f, 0.9f, 0.4f, -0.5f, 0.7f, 0.0f, 0.3f, -0.2f, 1.2f};
    for (int align = 0; align < 2; align++) {
        UtFx *f = ut_fx_new();
        IrGraph *g = f->g;
        int64_t tdim[3] = {2, 2, 3}, sd[1] = {4}, size[4] = {2, 1, 3, 4}, od[4] = {2, 3, 4, 2};
        ValId in[2] = {input(g, IR_DT_F32, 3, tdim), ut_const(g, IR_DT_I64, 1, sd, size)};
        IrAttr a = ir_attr_int("align_corners", align);
        op_out(g, "AffineGrid", 20, in, 2, &a, 1, NULL);
        ut_decompose_ok(f);
        ut_expect_shape(g, 0, 4, od);
        const void *inputs[1] = {th};
        const float *y = ut_run_graph(g, inputs, 0);
        float want[48];
        for (int n = 0; n < 2; n++)
            for (int h = 0; h < 3; h++)
                for (int w = 0; w < 4; w++)
                    for (int k = 0; k < 2; k++) {
                        const float *t = th + n * 6 + k * 3;
                        double v = t[0] * base_coord(w, 4, align) + t[1] * base_coord(h, 3, align) + t[2];
                        want[((n * 3 + h) * 4 + w) * 2 + k] = (float)v;
                    }
        ut_expect_close(y, want, 48, 1e-5);
        ut_fx_free(f);
    }
    /* a runtime size decides the output shape: bounded by the declared output (a value
     * whose shape is computed at run time), refused without one */
    UtFx *f = ut_fx_new();
    IrGraph *g = f->g;
    int64_t tdim[3] = {1, 3, 4}, sd[1] = {5}, od[5] = {1, 2, 3, 2, 3};
    ValId rin[2] = {input(g, IR_DT_F32, 3, tdim), input(g, IR_DT_I64, 1, sd)};
    IrType decl = ut_type(IR_DT_F32, 5, od);
    op_out(g, "AffineGrid", 20, rin, 2, NULL, 0, &decl);
    ut_decompose_ok(f);
    const IrDynDim *dd = ir_dyn_find(g, g->outputs[0]);
    assert_true(dd && dd->axis == IR_DYN_SHAPE);
    ut_fx_free(f);
    f = ut_fx_new();
    g = f->g;
    ValId rin2[2] = {input(g, IR_DT_F32, 3, tdim), input(g, IR_DT_I64, 1, sd)};
    op_out(g, "AffineGrid", 20, rin2, 2, NULL, 0, NULL);
    ut_decompose_fails(f, "unsupported: dynamic size input");
    ut_fx_free(f);
    /* 3-D with a constant size */
    f = ut_fx_new();
    g = f->g;
    int64_t size[5] = {1, 1, 2, 3, 2};
    ValId in[2] = {input(g, IR_DT_F32, 3, tdim), ut_const(g, IR_DT_I64, 1, sd, size)};
    op_out(g, "AffineGrid", 20, in, 2, NULL, 0, NULL);
    ut_decompose_ok(f);
    ut_expect_shape(g, 0, 5, od);
    float t3[12] = {1, 0, 0, 0.5f, 0, 1, 0, 0, 0, 0, 1, -0.5f};
    const void *inputs[1] = {t3};
    const float *y = ut_run_graph(g, inputs, 0);
    /* point (d=1, h=2, w=0): x = base(w), y = base(h), z = base(d), plus translations */
    int64_t p = (1 * 3 + 2) * 2 + 0;
    assert_float_equal(y[p * 3 + 0], base_coord(0, 2, 0) + 0.5, 1e-6);
    assert_float_equal(y[p * 3 + 1], base_coord(2, 3, 0), 1e-6);
    assert_float_equal(y[p * 3 + 2], base_coord(1, 2, 0) - 0.5, 1e-6);
    ut_fx_free(f);
}

/* ---- DFT, STFT, windows, MelWeightMatrix ---- */

/* Direct DFT of a complex signal (re, im: m values) of length n into K bins. */
static void ref_dft(const double *re, const double *im, int64_t m, int64_t n, int64_t K, bool inv,
                    double *yr, double *yi)
{
    for (int64_t k = 0; k < K; k++) {
        double sr = 0, si = 0;
        for (int64_t t = 0; t < m && t < n; t++) {
            double th = 2 * M_PI * (double)(t * k) / (double)n * (inv ? 1 : -1);
            sr += re[t] * cos(th) - im[t] * sin(th);
            si += re[t] * sin(th) + im[t] * cos(th);
        }
        yr[k] = inv ? sr / (double)n : sr;
        yi[k] = inv ? si / (double)n : si;
    }
}

/* DFT(x[1, m, cin]) along axis 1 (opset 19 attribute) with the given options. */
static void dft_case(int64_t m, int cin, int64_t dl, bool inv, bool onesided)
{
    UtFx *f = ut_fx_new();
    IrGraph *g = f->g;
    int64_t xd[3] = {1, m, cin}, one = 1;
    float x[16];
    for (int i = 0; i < m * cin; i++)
        x[i] = (float)((i * 7 % 11) - 5) * 0.25f;
    ValId in[2] = {input(g, IR_DT_F32, 3, xd), dl > 0 ? ut_const(g, IR_DT_I64, 1, &one, &dl) : IR_NONE};
    IrAttr a[3] = {ir_attr_int("axis", 1), ir_attr_int("inverse", inv), ir_attr_int("onesided", onesided)};
    op_out(g, "DFT", 19, in, 2, a, 3, NULL);
    ut_decompose_ok(f);
    bool irfft = inv && onesided;
    int64_t n = dl > 0 ? dl : irfft ? 2 * (m - 1) : m;
    int64_t K = irfft ? n : onesided ? n / 2 + 1 : n, cout = irfft ? 1 : 2;
    int64_t od[3] = {1, K, cout};
    ut_expect_shape(g, 0, 3, od);
    double re[16] = {0}, im[16] = {0}, yr[16], yi[16];
    for (int64_t t = 0; t < m; t++) {
        re[t] = x[t * cin];
        im[t] = cin == 2 ? x[t * cin + 1] : 0;
    }
    if (irfft) { /* Hermitian extension of the one-sided spectrum to n bins */
        double fr[16] = {0}, fi[16] = {0};
        for (int64_t t = 0; t <= n / 2 && t < m; t++) {
            fr[t] = re[t];
            fi[t] = im[t];
            if (t > 0 && n - t != t) {
                fr[n - t] = re[t];
                fi[n - t] = -im[t];
            }
        }
        ref_dft(fr, fi, n, n, n, true, yr, yi);
    } else {
        ref_dft(re, im, m, n, K, inv, yr, yi);
    }
    float want[32];
    for (int64_t k = 0; k < K; k++) {
        want[k * cout] = (float)yr[k];
        if (cout == 2)
            want[k * cout + 1] = (float)yi[k];
    }
    const void *inputs[1] = {x};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, K * cout, 1e-5);
    ut_fx_free(f);
}

static void test_dft_variants(void **state)
{
    (void)state;
    dft_case(5, 1, 0, false, false); /* forward, real input */
    dft_case(5, 1, 0, false, true);  /* rfft */
    dft_case(5, 1, 8, false, false); /* zero padded */
    dft_case(6, 1, 3, false, false); /* truncated */
    dft_case(5, 2, 0, false, false); /* forward, complex input */
    dft_case(5, 2, 0, true, false);  /* inverse */
    dft_case(4, 2, 0, true, true);   /* irfft, n = 6 */
    dft_case(4, 2, 7, true, true);   /* irfft, odd n */
}

static void test_dft_runtime_axis(void **state)
{
    (void)state;
    UtFx *f = ut_fx_new();
    IrGraph *g = f->g;
    int64_t xd[4] = {1, 3, 3, 1}, od[4] = {1, 3, 3, 2};
    ValId in[3] = {input(g, IR_DT_F32, 4, xd), IR_NONE, input(g, IR_DT_I64, 0, NULL)};
    IrType decl = ut_type(IR_DT_F32, 4, od);
    op_out(g, "DFT", 20, in, 3, NULL, 0, &decl);
    ut_decompose_ok(f);
    float x[9] = {1, 2, 0, -1, 3, 0.5f, 2, -2, 1};
    int64_t axes[3] = {1, 2, -2};
    for (int k = 0; k < 3; k++) {
        int ax = axes[k] < 0 ? (int)axes[k] + 4 : (int)axes[k];
        float want[18];
        for (int j = 0; j < 3; j++) { /* the other spatial index */
            double re[3], im[3] = {0}, yr[3], yi[3];
            for (int t = 0; t < 3; t++)
                re[t] = x[ax == 1 ? t * 3 + j : j * 3 + t];
            ref_dft(re, im, 3, 3, 3, false, yr, yi);
            for (int t = 0; t < 3; t++) {
                int p = ax == 1 ? t * 3 + j : j * 3 + t;
                want[2 * p] = (float)yr[t];
                want[2 * p + 1] = (float)yi[t];
            }
        }
        const void *inputs[2] = {x, &axes[k]};
        ut_expect_close(ut_run_graph(g, inputs, 0), want, 18, 1e-5);
    }
    ut_fx_free(f);
}

/* STFT of a real signal [1, 10, 1], frames of 4 every 3 samples, Hann window: the
 * frame step is a runtime input; second case: a runtime frame_length, no window. */
static void test_stft(void **state)
{
    (void)state;
    float sig[10], win[4];
    for (int i = 0; i < 10; i++)
        sig[i] = (float)sin(0.7 * i) + 0.1f * (float)i;
    for (int i = 0; i < 4; i++)
        win[i] = (float)(0.5 - 0.5 * cos(2 * M_PI * i / 4));
    for (int k = 0; k < 2; k++) {
        UtFx *f = ut_fx_new();
        IrGraph *g = f->g;
        int64_t sd[3] = {1, 10, 1}, wd[1] = {4}, od[4] = {1, 3, 3, 2}, step = 3, fl = 4;
        ValId in[4] = {input(g, IR_DT_F32, 3, sd), k ? ut_const(g, IR_DT_I64, 0, NULL, &step)
                                                    : input(g, IR_DT_I64, 0, NULL),
                       k ? IR_NONE : ut_const(g, IR_DT_F32, 1, wd, win), k ? input(g, IR_DT_I64, 0, NULL) : IR_NONE};
        IrType decl = ut_type(IR_DT_F32, 4, od);
        op_out(g, "STFT", 17, in, 4, NULL, 0, &decl);
        ut_decompose_ok(f);
        float want[18];
        for (int fr = 0; fr < 3; fr++) {
            double re[4], im[4] = {0}, yr[4], yi[4];
            for (int t = 0; t < 4; t++)
                re[t] = sig[fr * 3 + t] * (k ? 1.0 : win[t]);
            ref_dft(re, im, 4, 4, 3, false, yr, yi);
            for (int b = 0; b < 3; b++) {
                want[(fr * 3 + b) * 2] = (float)yr[b];
                want[(fr * 3 + b) * 2 + 1] = (float)yi[b];
            }
        }
        const void *inputs[2] = {sig, k ? (const void *)&fl : (const void *)&step};
        ut_expect_close(ut_run_graph(g, inputs, 0), want, 18, 1e-5);
        ut_fx_free(f);
    }
}

static void test_windows(void **state)
{
    (void)state;
    static const char *ops[3] = {"HannWindow", "HammingWindow", "BlackmanWindow"};
    for (int w = 0; w < 3; w++)
        for (int periodic = 0; periodic < 2; periodic++) {
            UtFx *f = ut_fx_new();
            IrGraph *g = f->g;
            int64_t n = 8;
            IrType decl = ut_type(IR_DT_F32, 1, &n);
            ValId in = ut_const(g, IR_DT_I64, 0, NULL, &n);
            IrAttr a = ir_attr_int("periodic", periodic);
            op_out(g, ops[w], 17, &in, 1, &a, 1, periodic ? NULL : &decl);
            ut_decompose_ok(f);
            float want[8];
            double N = periodic ? 8 : 7;
            for (int i = 0; i < 8; i++) {
                double c1 = cos(2 * M_PI * i / N), c2 = cos(4 * M_PI * i / N);
                want[i] = (float)(w == 0 ? 0.5 - 0.5 * c1 : w == 1 ? 0.54347826 - 0.45652174 * c1
                                                                    : 0.42 - 0.5 * c1 + 0.08 * c2);
            }
            ut_expect_close(ut_run_graph(g, NULL, 0), want, 8, 1e-5);
            ut_fx_free(f);
        }
    /* a runtime size decides the output shape: bounded by the declared length (a
     * runtime extent of the output), refused without one */
    UtFx *f = ut_fx_new();
    int64_t n = 8;
    IrType decl = ut_type(IR_DT_F32, 1, &n);
    ValId in = input(f->g, IR_DT_I64, 0, NULL);
    op_out(f->g, "HannWindow", 17, &in, 1, NULL, 0, &decl);
    ut_decompose_ok(f);
    const IrDynDim *dd = ir_dyn_find(f->g, f->g->outputs[0]);
    assert_true(dd && dd->axis == 0);
    ut_fx_free(f);
    f = ut_fx_new();
    in = input(f->g, IR_DT_I64, 0, NULL);
    op_out(f->g, "HannWindow", 17, &in, 1, NULL, 0, NULL);
    ut_decompose_fails(f, "unsupported: dynamic size input");
    ut_fx_free(f);
}

static void test_mel_weight_matrix(void **state)
{
    (void)state;
    int64_t nm = 5, dl = 32, sr = 8000, od[2] = {17, 5};
    float lo = 100, hi = 3000;
    for (int runtime = 0; runtime < 2; runtime++) {
        UtFx *f = ut_fx_new();
        IrGraph *g = f->g;
        ValId in[5];
        if (runtime) {
            for (int i = 0; i < 5; i++)
                in[i] = input(g, i < 3 ? IR_DT_I64 : IR_DT_F32, 0, NULL);
        } else {
            in[0] = ut_const(g, IR_DT_I64, 0, NULL, &nm);
            in[1] = ut_const(g, IR_DT_I64, 0, NULL, &dl);
            in[2] = ut_const(g, IR_DT_I64, 0, NULL, &sr);
            in[3] = ut_const(g, IR_DT_F32, 0, NULL, &lo);
            in[4] = ut_const(g, IR_DT_F32, 0, NULL, &hi);
        }
        IrType decl = ut_type(IR_DT_F32, 2, od);
        op_out(g, "MelWeightMatrix", 17, in, 5, NULL, 0, runtime ? &decl : NULL);
        if (runtime) {      /* the sizes decide the output shape: refused unless bound */
            ut_decompose_fails(f, "unsupported: dynamic num_mel_bins input");
            ut_fx_free(f);
            continue;
        }
        ut_decompose_ok(f);
        ut_expect_shape(g, 0, 2, od);
        const void *inputs[5] = {&nm, &dl, &sr, &lo, &hi};
        ut_expect_close(ut_run_graph(g, inputs, 0), mel_want, 85, 1e-5);
        ut_fx_free(f);
    }
}

/* ---- CumProd, TopK, ReverseSequence ---- */

static void test_cumprod(void **state)
{
    (void)state;
    float x[6] = {2, 3, -1, 0.5f, 4, 2};
    UtFx *f = ut_fx_new();
    IrGraph *g = f->g;
    int64_t xd[2] = {2, 3};
    ValId in[2] = {input(g, IR_DT_F32, 2, xd), input(g, IR_DT_I64, 0, NULL)};
    op_out(g, "CumProd", 26, in, 2, NULL, 0, NULL);
    ut_decompose_ok(f);
    int64_t ax0 = 0, ax1 = 1, axm = -1;
    float w0[6] = {2, 3, -1, 1, 12, -2}, w1[6] = {2, 6, -6, 0.5f, 2, 4};
    const void *i0[2] = {x, &ax0}, *i1[2] = {x, &ax1}, *im[2] = {x, &axm};
    ut_expect_close(ut_run_graph(g, i0, 0), w0, 6, 1e-6);
    ut_expect_close(ut_run_graph(g, i1, 0), w1, 6, 1e-6);
    ut_expect_close(ut_run_graph(g, im, 0), w1, 6, 1e-6);
    ut_fx_free(f);
    /* exclusive, reverse, int32, 9 elements (several scan steps) */
    f = ut_fx_new();
    g = f->g;
    int64_t n = 9;
    int32_t xi[9] = {1, 2, 3, 1, 2, 1, 3, 1, 2};
    ValId in2[2] = {input(g, IR_DT_I32, 1, &n), ut_const(g, IR_DT_I64, 0, NULL, &ax0)};
    IrAttr a[2] = {ir_attr_int("exclusive", 1), ir_attr_int("reverse", 1)};
    op_out(g, "CumProd", 26, in2, 2, a, 2, NULL);
    ut_decompose_ok(f);
    const void *inputs[1] = {xi};
    const int32_t *y = ut_run_graph(g, inputs, 0);
    int32_t want = 1;
    for (int i = 8; i >= 0; i--) {
        assert_int_equal(y[i], want);
        want *= xi[i];
    }
    ut_fx_free(f);
}

/* TopK over the last axis of x[2, 5] (ties keep the lower index first). */
static void topk_case(int largest, bool runtime_k)
{
    UtFx *f = ut_fx_new();
    IrGraph *g = f->g;
    int64_t xd[2] = {2, 5}, kd[1] = {1}, k = runtime_k ? 2 : 3, od[2] = {2, k};
    float x[10] = {3, 1, 3, 2, 5, 0, 0, -1, 4, 4};
    ValId in[2] = {input(g, IR_DT_F32, 2, xd), runtime_k ? input(g, IR_DT_I64, 1, kd) : ut_const(g, IR_DT_I64, 1, kd, &k)};
    IrAttr a[2] = {ir_attr_int("axis", -1), ir_attr_int("largest", largest)};
    NodeId n = ut_onnx_node(g, "TopK", 11, in, 2, 2, a, 2);
    ValId o0 = g->nodes[n].out[0], o1 = g->nodes[n].out[1];
    if (runtime_k) {
        g->vals[o0].type = ut_type(IR_DT_F32, 2, od);
        g->vals[o1].type = ut_type(IR_DT_I64, 2, od);
    }
    ir_add_output(g, o0);
    ir_add_output(g, o1);
    ut_decompose_ok(f);
    int64_t w = runtime_k ? 5 : k;         /* a runtime k: computed at the bound, the first k
                                              along the axis valid (a runtime extent) */
    if (runtime_k) {
        const IrDynDim *dd = ir_dyn_find(g, g->outputs[0]);
        assert_true(dd && dd->axis == 1 && ir_dyn_find(g, g->outputs[1]));
    }
    ut_expect_shape(g, 1, 2, (int64_t[]){2, w});
    int64_t want_i[6];
    float want_v[6];
    for (int r = 0; r < 2; r++) { /* pick the best remaining element k times */
        bool used[5] = {false};
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int i = 0; i < 5; i++) {
                float v = x[r * 5 + i], b = best < 0 ? 0 : x[r * 5 + best];
                if (!used[i] && (best < 0 || (largest ? v > b : v < b)))
                    best = i;
            }
            used[best] = true;
            want_i[r * k + j] = best;
            want_v[r * k + j] = x[r * 5 + best];
        }
    }
    const void *inputs[2] = {x, &k};
    for (int r = 0; r < 2; r++) {
        ut_expect_close((const float *)ut_run_graph(g, inputs, 0) + r * w, want_v + r * k, k, 0);
        ut_expect_i64((const int64_t *)ut_run_graph(g, inputs, 1) + r * w, want_i + r * k, k);
    }
    ut_fx_free(f);
}

static void test_topk(void **state)
{
    (void)state;
    topk_case(1, false);
    topk_case(0, false);
    topk_case(1, true);
}

static void test_reverse_sequence(void **state)
{
    (void)state;
    UtFx *f = ut_fx_new();
    IrGraph *g = f->g;
    int64_t xd[2] = {4, 3}, ld[1] = {3};
    ValId in[2] = {input(g, IR_DT_F32, 2, xd), input(g, IR_DT_I64, 1, ld)};
    IrAttr a[2] = {ir_attr_int("batch_axis", 1), ir_attr_int("time_axis", 0)};
    op_out(g, "ReverseSequence", 10, in, 2, a, 2, NULL);
    ut_decompose_ok(f);
    float x[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    int64_t lens[3] = {4, 1, 2};
    float want[12] = {9, 1, 5, 6, 4, 2, 3, 7, 8, 0, 10, 11};
    const void *inputs[2] = {x, lens};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 12, 0);
    ut_fx_free(f);
}

/* ---- scatters ---- */

/* Reduce a and b by the ScatterND/ScatterElements reduction r (0 none, 1 add, 2 mul,
 * 3 max, 4 min). */
static float red_apply(int r, float a, float b)
{
    return r == 0 ? b : r == 1 ? a + b : r == 2 ? a * b : r == 3 ? fmaxf(a, b) : fminf(a, b);
}

static const char *red_names[5] = {"none", "add", "mul", "max", "min"};

static void test_scatter_nd(void **state)
{
    (void)state;
    for (int r = 0; r < 5; r++) {
        UtFx *f = ut_fx_new();
        IrGraph *g = f->g;
        int64_t dd[2] = {4, 3}, id[2] = {3, 1}, ud[2] = {3, 3};
        ValId in[3] = {input(g, IR_DT_F32, 2, dd), input(g, IR_DT_I64, 2, id), input(g, IR_DT_F32, 2, ud)};
        IrAttr a = attr_s(g, "reduction", red_names[r]);
        op_out(g, "ScatterND", 18, in, 3, &a, 1, NULL);
        ut_decompose_ok(f);
        float data[12], upd[9];
        int64_t idx[3] = {1, -1, r == 0 ? 0 : 1};
        for (int i = 0; i < 12; i++)
            data[i] = (float)(i % 5) - 1.5f;
        for (int i = 0; i < 9; i++)
            upd[i] = (float)(i * 3 % 7) - 2.0f;
        float want[12];
        memcpy(want, data, sizeof want);
        for (int u = 0; u < 3; u++) {
            int64_t row = idx[u] < 0 ? idx[u] + 4 : idx[u];
            for (int j = 0; j < 3; j++)
                want[row * 3 + j] = red_apply(r, want[row * 3 + j], upd[u * 3 + j]);
        }
        const void *inputs[3] = {data, idx, upd};
        ut_expect_close(ut_run_graph(g, inputs, 0), want, 12, 1e-6);
        ut_fx_free(f);
    }
}

static void test_scatter_elements(void **state)
{
    (void)state;
    for (int r = 0; r < 5; r++) {
        UtFx *f = ut_fx_new();
        IrGraph *g = f->g;
        int64_t dd[2] = {3, 4}, id[2] = {2, 3};
        ValId in[3] = {input(g, IR_DT_F32, 2, dd), input(g, IR_DT_I64, 2, id), input(g, IR_DT_F32, 2, id)};
        IrAttr a[2] = {attr_s(g, "reduction", red_names[r]), ir_attr_int("axis", 1)};
        op_out(g, "ScatterElements", 18, in, 3, a, 2, NULL);
        ut_decompose_ok(f);
        float data[12], upd[6] = {10, -2, 3, 0.5f, 7, -4};
        int64_t idx[6] = {3, -1, 0, 1, -4, r == 0 ? 2 : 1};
        for (int i = 0; i < 12; i++)
            data[i] = (float)i - 4;
        float want[12];
        memcpy(want, data, sizeof want);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) {
                int64_t c = idx[i * 3 + j] < 0 ? idx[i * 3 + j] + 4 : idx[i * 3 + j];
                want[i * 4 + c] = red_apply(r, want[i * 4 + c], upd[i * 3 + j]);
            }
        const void *inputs[3] = {data, idx, upd};
        ut_expect_close(ut_run_graph(g, inputs, 0), want, 12, 1e-6);
        ut_fx_free(f);
    }
    /* Scatter (opset 10), axis 0, runtime indices */
    UtFx *f = ut_fx_new();
    IrGraph *g = f->g;
    int64_t dd[2] = {3, 2}, id[2] = {1, 2};
    ValId in[3] = {input(g, IR_DT_F32, 2, dd), input(g, IR_DT_I64, 2, id), input(g, IR_DT_F32, 2, id)};
    op_out(g, "Scatter", 10, in, 3, NULL, 0, NULL);
    ut_decompose_ok(f);
    float data[6] = {0, 0, 0, 0, 0, 0}, upd[2] = {1, 2}, want[6] = {0, 0, 0, 2, 1, 0};
    int64_t idx[2] = {2, 1};
    const void *inputs[3] = {data, idx, upd};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 6, 0);
    ut_fx_free(f);
}

static void test_tensor_scatter(void **state)
{
    (void)state;
    for (int circ = 0; circ < 2; circ++) {
        UtFx *f = ut_fx_new();
        IrGraph *g = f->g;
        int64_t pd[3] = {2, 5, 2}, ud[3] = {2, 2, 2}, wd[1] = {2};
        ValId in[3] = {input(g, IR_DT_F32, 3, pd), input(g, IR_DT_F32, 3, ud), input(g, IR_DT_I64, 1, wd)};
        IrAttr a = attr_s(g, "mode", circ ? "circular" : "linear");
        op_out(g, "TensorScatter", 24, in, 3, &a, 1, NULL);
        ut_decompose_ok(f);
        float past[20], upd[8], want[20];
        for (int i = 0; i < 20; i++)
            past[i] = want[i] = (float)i;
        for (int i = 0; i < 8; i++)
            upd[i] = -1.0f - (float)i;
        int64_t w[2] = {1, circ ? 4 : 3};
        for (int b = 0; b < 2; b++)
            for (int t = 0; t < 2; t++)
                for (int d = 0; d < 2; d++)
                    want[(b * 5 + (w[b] + t) % 5) * 2 + d] = upd[(b * 2 + t) * 2 + d];
        const void *inputs[3] = {past, upd, w};
        ut_expect_close(ut_run_graph(g, inputs, 0), want, 20, 0);
        ut_fx_free(f);
    }
}

static void test_max_unpool(void **state)
{
    (void)state;
    for (int withshape = 0; withshape < 2; withshape++) {
        UtFx *f = ut_fx_new();
        IrGraph *g = f->g;
        int64_t xd[4] = {1, 1, 2, 2}, sd[1] = {4}, os[4] = {1, 1, 5, 5}, k[2] = {2, 2};
        ValId in[3] = {input(g, IR_DT_F32, 4, xd), input(g, IR_DT_I64, 4, xd),
                       withshape ? ut_const(g, IR_DT_I64, 1, sd, os) : IR_NONE};
        IrAttr a[2] = {ir_attr_ints(g, "kernel_shape", k, 2), ir_attr_ints(g, "strides", k, 2)};
        op_out(g, "MaxUnpool", 22, in, 3, a, 2, NULL);
        ut_decompose_ok(f);
        int64_t n = withshape ? 5 : 4, od[4] = {1, 1, n, n};
        ut_expect_shape(g, 0, 4, od);
        float x[4] = {5, 6, 7, 8}, want[25] = {0};
        int64_t idx[4] = {5, 7, 13, 15};
        for (int i = 0; i < 4; i++) /* flat index into the inferred 4x4 */
            want[(idx[i] / 4) * n + idx[i] % 4] = x[i];
        const void *inputs[2] = {x, idx};
        ut_expect_close(ut_run_graph(g, inputs, 0), want, n * n, 0);
        ut_fx_free(f);
    }
}

/* Col2Im with a runtime block shape (the declared output gives the channels). */
static void test_col2im(void **state)
{
    (void)state;
    UtFx *f = ut_fx_new();
    IrGraph *g = f->g;
    int64_t xd[3] = {1, 8, 6}, two = 2, img[2] = {3, 4}, od[4] = {1, 2, 3, 4};
    int64_t pads[4] = {0, 1, 0, 1}, strides[2] = {1, 2};
    int64_t block[2] = {2, 2};
    ValId in[3] = {input(g, IR_DT_F32, 3, xd), ut_const(g, IR_DT_I64, 1, &two, img),
                   ut_const(g, IR_DT_I64, 1, &two, block)};
    IrAttr a[2] = {ir_attr_ints(g, "pads", pads, 4), ir_attr_ints(g, "strides", strides, 2)};
    IrType decl = ut_type(IR_DT_F32, 4, od);
    op_out(g, "Col2Im", 18, in, 3, a, 2, &decl);
    ut_decompose_ok(f);
    float x[48], want[24] = {0};
    for (int i = 0; i < 48; i++)
        x[i] = (float)i * 0.5f - 3;
    for (int c = 0; c < 2; c++) /* blocks: 2 along H (stride 1), 3 along W (stride 2) */
        for (int kh = 0; kh < 2; kh++)
            for (int kw = 0; kw < 2; kw++)
                for (int lh = 0; lh < 2; lh++)
                    for (int lw = 0; lw < 3; lw++) {
                        int h = lh + kh, w = lw * 2 - 1 + kw;
                        if (w < 0 || w >= 4)
                            continue;
                        want[(c * 3 + h) * 4 + w] += x[((c * 4 + kh * 2 + kw) * 2 + lh) * 3 + lw];
                    }
    const void *inputs[1] = {x};
    ut_expect_close(ut_run_graph(g, inputs, 0), want, 24, 1e-6);
    ut_fx_free(f);
    /* a runtime block_shape decides the channel count: refused unless bound */
    f = ut_fx_new();
    g = f->g;
    ValId rin[3] = {input(g, IR_DT_F32, 3, xd), ut_const(g, IR_DT_I64, 1, &two, img),
                    input(g, IR_DT_I64, 1, &two)};
    IrAttr ra[2] = {ir_attr_ints(g, "pads", pads, 4), ir_attr_ints(g, "strides", strides, 2)};
    op_out(g, "Col2Im", 18, rin, 3, ra, 2, &decl);
    ut_decompose_fails(f, "unsupported: dynamic block_shape input");
    ut_fx_free(f);
}

/* ---- BitCast, RoiAlign, MaxPool indices, DeformConv ---- */

static void test_bitcast(void **state)
{
    (void)state;
    UtFx *f = ut_fx_new();
    IrGraph *g = f->g;
    int64_t n = 5;
    ValId x = input(g, IR_DT_I8, 1, &n);
    IrAttr a = ir_attr_int("to", IR_DT_U8);
    op_out(g, "BitCast", 26, &x, 1, &a, 1, NULL);
    ut_decompose_ok(f);
    int8_t v[5] = {-128, -1, 0, 1, 127};
    const void *inputs[1] = {v};
    const uint8_t *y = ut_run_graph(g, inputs, 0);
    uint8_t want[5] = {128, 255, 0, 1, 127};
    for (int i = 0; i < 5; i++)
        assert_int_equal(y[i], want[i]);
    ut_fx_free(f);
    f = ut_fx_new();
    g = f->g;
    x = input(g, IR_DT_F32, 1, &n);
    a = ir_attr_int("to", IR_DT_I32);
    op_out(g, "BitCast", 26, &x, 1, &a, 1, NULL);
    ut_decompose_ok(f);                              /* the core BITCAST */
    float fv[5] = {1.0f, -2.5f, 0.0f, -0.0f, 3.75f};
    int32_t bits[5];
    memcpy(bits, fv, sizeof bits);
    inputs[0] = fv;
    assert_memory_equal(ut_run_graph(g, inputs, 0), bits, sizeof bits);
    ut_fx_free(f);
    f = ut_fx_new();
    g = f->g;
    x = input(g, IR_DT_F32, 1, &n);
    a = ir_attr_int("to", IR_DT_I16);
    op_out(g, "BitCast", 26, &x, 1, &a, 1, NULL);
    ut_decompose_fails(f, "same bit width");
    ut_fx_free(f);
}

static void test_roi_align(void **state)
{
    (void)state;
    static const char *modes[2] = {"avg", "max"}, *ctm[2] = {"half_pixel", "output_half_pixel"};
    int64_t bidx[3] = {0, 0, 0};
    for (int m = 0; m < 2; m++)
        for (int t = 0; t < 2; t++)
            for (int s = 0; s < 2; s++) {
                UtFx *f = ut_fx_new();
                IrGraph *g = f->g;
                int64_t xd[4] = {1, 2, 5, 5}, rd[2] = {3, 4}, bd[1] = {3}, od[4] = {3, 2, 2, 3};
                /* sampling_ratio 0 needs constant rois; 2 takes them at run time */
                ValId in[3] = {input(g, IR_DT_F32, 4, xd),
                               s ? ut_const(g, IR_DT_F32, 2, rd, roi_rois) : input(g, IR_DT_F32, 2, rd),
                               ut_const(g, IR_DT_I64, 1, bd, bidx)};
                IrAttr a[6] = {attr_s(g, "mode", modes[m]), attr_s(g, "coordinate_transformation_mode", ctm[t]),
                               ir_attr_int("output_height", 2), ir_attr_int("output_width", 3),
                               ir_attr_int("sampling_ratio", s ? 0 : 2), ir_attr_float("spatial_scale", 0.9)};
                op_out(g, "RoiAlign", 22, in, 3, a, 6, NULL);
                ut_decompose_ok(f);
                ut_expect_shape(g, 0, 4, od);
                const void *inputs[2] = {roi_x, roi_rois};
                ut_expect_close(ut_run_graph(g, inputs, 0), roi_want + ((m * 2 + t) * 2 + s) * 36, 36, 1e-5);
                ut_fx_free(f);
            }
}

/* Direct MaxPool with indices over x[1, 2, 4, 5]: kernel 2x3, strides 2x1, pads
 * (1, 1, 0, 1); values and flat indices (storage order 0 or 1). */
static void test_maxpool_indices(void **state)
{
    (void)state;
    float x[40];
    for (int i = 0; i < 40; i++)
        x[i] = (float)((i * 13) % 17) - (float)(i % 3);
    for (int so = 0; so < 2; so++) {
        UtFx *f = ut_fx_new();
        IrGraph *g = f->g;
        int64_t xd[4] = {1, 2, 4, 5}, k[2] = {2, 3}, s[2] = {2, 1}, p[4] = {1, 1, 0, 1};
        ValId xin = input(g, IR_DT_F32, 4, xd);
        IrAttr a[4] = {ir_attr_ints(g, "kernel_shape", k, 2), ir_attr_ints(g, "strides", s, 2),
                       ir_attr_ints(g, "pads", p, 4), ir_attr_int("storage_order", so)};
        NodeId n = ut_onnx_node(g, "MaxPool", 12, &xin, 1, 2, a, 4);
        ValId o0 = g->nodes[n].out[0], o1 = g->nodes[n].out[1];
        ir_add_output(g, o0);
        ir_add_output(g, o1);
        ut_decompose_ok(f);
        int64_t od[4] = {1, 2, 2, 5}; /* (4+1-2)/2+1, (5+2-3)/1+1 */
        ut_expect_shape(g, 1, 4, od);
        float wv[20];
        int64_t wi[20];
        for (int c = 0; c < 2; c++)
            for (int oh = 0; oh < 2; oh++)
                for (int ow = 0; ow < 5; ow++) {
                    float best = -INFINITY;
                    int64_t bi = -1;
                    for (int i = 0; i < 2; i++)
                        for (int j = 0; j < 3; j++) {
                            int h = oh * 2 - 1 + i, w = ow - 1 + j;
                            if (h < 0 || h >= 4 || w < 0 || w >= 5 || !(x[(c * 4 + h) * 5 + w] > best))
                                continue;
                            best = x[(c * 4 + h) * 5 + w];
                            bi = c * 20 + (so ? h + w * 4 : h * 5 + w);
                        }
                    wv[(c * 2 + oh) * 5 + ow] = best;
                    wi[(c * 2 + oh) * 5 + ow] = bi;
                }
        const void *inputs[1] = {x};
        ut_expect_close(ut_run_graph(g, inputs, 0), wv, 20, 0);
        ut_expect_i64(ut_run_graph(g, inputs, 1), wi, 20);
        ut_fx_free(f);
    }
}

static void test_deform_conv(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        UtFx *f = ut_fx_new();
        IrGraph *g = f->g;
        int64_t xd[4] = {1, 2, 4, 4}, wd[4] = {k ? 2 : 3, k ? 1 : 2, 2, 2}, ks[2] = {2, 2};
        int64_t odf[4] = {1, 16, 3, 3}, od2[4] = {1, 8, 2, 4}, md[4] = {1, 8, 3, 3}, bd[1] = {3};
        int64_t pads[4] = {1, 0, 0, 1}, strides[2] = {2, 1};
        float bias[3] = {0.1f, -0.2f, 0.3f};
        ValId in[5] = {input(g, IR_DT_F32, 4, xd), input(g, IR_DT_F32, 4, wd),
                       input(g, IR_DT_F32, 4, k ? od2 : odf),
                       k ? IR_NONE : ut_const(g, IR_DT_F32, 1, bd, bias), k ? IR_NONE : input(g, IR_DT_F32, 4, md)};
        IrAttr a[4] = {ir_attr_ints(g, "kernel_shape", ks, 2), ir_attr_int(k ? "group" : "offset_group", 2),
                       ir_attr_ints(g, "pads", pads, 4), ir_attr_ints(g, "strides", strides, 2)};
        op_out(g, "DeformConv", 22, in, 5, a, k ? 4 : 2, NULL);
        ut_decompose_ok(f);
        int64_t od[4] = {1, k ? 2 : 3, k ? 2 : 3, k ? 4 : 3};
        ut_expect_shape(g, 0, 4, od);
        const void *inputs[4] = {dc_x, k ? dc_w2 : dc_w, k ? dc_off2 : dc_off, dc_mask};
        ut_expect_close(ut_run_graph(g, inputs, 0), k ? dc_want2 : dc_want, k ? 16 : 27, 1e-5);
        ut_fx_free(f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gridsample_2d),
        cmocka_unit_test(test_gridsample_3d),
        cmocka_unit_test(test_affine_grid),
        cmocka_unit_test(test_dft_variants),
        cmocka_unit_test(test_dft_runtime_axis),
        cmocka_unit_test(test_stft),
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_mel_weight_matrix),
        cmocka_unit_test(test_cumprod),
        cmocka_unit_test(test_topk),
        cmocka_unit_test(test_reverse_sequence),
        cmocka_unit_test(test_scatter_nd),
        cmocka_unit_test(test_scatter_elements),
        cmocka_unit_test(test_tensor_scatter),
        cmocka_unit_test(test_max_unpool),
        cmocka_unit_test(test_col2im),
        cmocka_unit_test(test_bitcast),
        cmocka_unit_test(test_roi_align),
        cmocka_unit_test(test_maxpool_indices),
        cmocka_unit_test(test_deform_conv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
