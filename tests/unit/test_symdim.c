/* test_symdim.c: unit tests of bounded symbolic dimensions (spyrec --dim, --input-shape
 * MIN..MAX): a one-node ONNX graph whose input has a symbolic axis is compiled once at
 * the bound (pass_symdim masks the padding; DIMREFS, the dims input), loaded, and run
 * at every size within the bounds; each result must have the actual shape and the
 * values a C reference computes at that size (softmax and mean over the symbolic axis,
 * a matrix product contracting it, a padded max pool over symbolic height and width, a
 * forward running sum along it, attention scores over it, position ids computed along
 * it gathering from a table smaller than the bound, a fused QKV projection whose V
 * slice is masked at the projection for all three slices). Also: the runtime's
 * refusals (a size outside the bounds, two inputs disagreeing on a shared symbol) and
 * the compiler's (a reverse scan along a symbolic axis). An average pool that excludes
 * its padding, its divisors counted on the device at every size. Indexing along it: a
 * gather of the last position (counted from the actual length), x[:, -1:] (likewise),
 * a slice below the least length (exact), one past it (refused). Sizes joined by a skip connection, and a ceil_mode
 * pool's pad read only at some sizes: every step-th size taken, the others refused.
 * Concatenations whose symbolic pieces are not only the last (a token appended, two
 * flattened feature maps): compacted at the output at every size; a sum over such an
 * axis refused.
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

#include "ir.h"
#include "spyrt.h"
#include "unit_util.h"

/* Input nm f32 of dims (rank r) with axis ax symbolic in [lo, dims[ax]], symbol named sym. */
static ValId sym_input(IrGraph *g, const char *nm, int r, const int64_t *dims, int ax,
                       int64_t lo, const char *sym)
{
    ValId v = ut_input(g, nm, IR_DT_F32, r, dims);
    ir_sym_add(g, v, ax, lo, dims[ax], sym);
    return v;
}

/* Compile f's graph and open a session on it. */
static void open_fx(UtFx *f, spy_model **m, spy_session **s)
{
    size_t len = 0;
    uint8_t *buf = ut_compile(f->g, &len);
    assert_non_null(buf);
    ut_open(buf, len, m, s);
}

/* Output 0's actual shape must be dims (rank r). */
static void expect_out_shape(spy_session *s, int r, const int64_t *dims)
{
    int rank = -1;
    int64_t d[SPY_MAX_RANK];
    assert_int_equal(spy_session_output_shape(s, 0, &rank, d), SPY_OK);
    assert_int_equal(rank, r);
    for (int i = 0; i < r; i++)
        assert_int_equal(d[i], dims[i]);
}

/* The pipeline on f's graph must fail with a message holding msg. */
static void expect_refused(UtFx *f, const char *msg)
{
    PassOptions po = f->opt;
    assert_false(pass_run_pipeline(f->g, &po));
    assert_true(ut_has_msg(&f->d, msg));
}

/* Graph output softmax(x) over the last axis; decompose, compile and open a session. */
static void softmax_open(UtFx *f, ValId x, spy_model **m, spy_session **s)
{
    IrAttr ax = ir_attr_int("axis", -1);
    ir_add_output(f->g, ut_onnx_op(f->g, "Softmax", 13, &x, 1, &ax, 1));
    ut_decompose_ok(f);
    open_fx(f, m, s);
}

/* Softmax over a symbolic last axis: x f32[3, 1..8]. */
static void test_softmax_every_size(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 2, (int64_t[]){3, 8}, 1, 1, "n");
    spy_model *m;
    spy_session *s;
    softmax_open(f, x, &m, &s);
    assert_int_equal(spy_model_num_inputs(m), 1);
    int64_t lo = 0, hi = 0;
    assert_int_equal(spy_model_input_dim_bounds(m, 0, 1, &lo, &hi), 1);
    assert_int_equal(lo, 1);
    assert_int_equal(hi, 8);
    assert_int_equal(spy_model_input_dim_bounds(m, 0, 0, NULL, NULL), 0);
    float in[24], out[24], want[24];
    for (int n = 1; n <= 8; n++) {
        ut_fill(in, 3 * n, 0.7f, -0.2f);
        for (int r = 0; r < 3; r++) {
            double mx = -INFINITY, sum = 0;
            for (int c = 0; c < n; c++)
                mx = fmax(mx, in[r * n + c]);
            for (int c = 0; c < n; c++)
                sum += exp(in[r * n + c] - mx);
            for (int c = 0; c < n; c++)
                want[r * n + c] = (float)(exp(in[r * n + c] - mx) / sum);
        }
        assert_int_equal(spy_session_set_input_shape(s, 0, 2, (int64_t[]){3, n}), SPY_OK);
        const void *ins[1] = {in};
        void *outs[1] = {out};
        memset(out, 0x5a, sizeof out);
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        expect_out_shape(s, 2, (int64_t[]){3, n});
        ut_expect_close(out, want, 3 * n, 1e-5);
    }
    assert_int_equal(spy_session_set_input_shape(s, 0, 2, (int64_t[]){3, 9}),
                     SPY_E_INVALID_ARG);
    assert_int_equal(spy_session_set_input_shape(s, 0, 2, (int64_t[]){2, 4}),
                     SPY_E_INVALID_ARG);
    spy_session_free(s);
    spy_model_free(m);
}

/* ReduceMean over a symbolic leading axis (the divisor is the actual count) and a
 * MatMul contracting a symbolic K shared by both operands. */
static void test_mean_and_matmul(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 2, (int64_t[]){4, 5}, 0, 1, "b");
    IrAttr at[2] = {ir_attr_ints(f->g, "axes", (int64_t[]){0}, 1), ir_attr_int("keepdims", 0)};
    ir_add_output(f->g, ut_onnx_op(f->g, "ReduceMean", 13, &x, 1, at, 2));
    ValId a = sym_input(f->g, "a", 2, (int64_t[]){2, 6}, 1, 2, "k");
    ValId b = sym_input(f->g, "b", 2, (int64_t[]){6, 3}, 0, 2, "k");
    ir_add_output(f->g, ut_onnx_op(f->g, "MatMul", 13, (ValId[]){a, b}, 2, NULL, 0));
    ut_decompose_ok(f);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    float xv[20], av[12], bv[18], o0[5], o1[6], w0[5], w1[6];
    for (int n = 1; n <= 4; n++) {
        int k = n + 2;                              /* 3 .. 6 */
        ut_fill(xv, 5 * n, 0.5f, 0.1f);
        ut_fill(av, 2 * k, 0.3f, -0.4f);
        ut_fill(bv, 3 * k, 0.9f, 0.2f);
        for (int c = 0; c < 5; c++) {
            double acc = 0;
            for (int r = 0; r < n; r++)
                acc += xv[r * 5 + c];
            w0[c] = (float)(acc / n);
        }
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) {
                double acc = 0;
                for (int q = 0; q < k; q++)
                    acc += (double)av[i * k + q] * bv[q * 3 + j];
                w1[i * 3 + j] = (float)acc;
            }
        assert_int_equal(spy_session_set_input_shape(s, 0, 2, (int64_t[]){n, 5}), SPY_OK);
        assert_int_equal(spy_session_set_input_shape(s, 1, 2, (int64_t[]){2, k}), SPY_OK);
        assert_int_equal(spy_session_set_input_shape(s, 2, 2, (int64_t[]){k, 3}), SPY_OK);
        const void *ins[3] = {xv, av, bv};
        void *outs[2] = {o0, o1};
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        ut_expect_close(o0, w0, 5, 1e-5);
        ut_expect_close(o1, w1, 6, 1e-5);
    }
    /* a and b disagree on k */
    assert_int_equal(spy_session_set_input_shape(s, 1, 2, (int64_t[]){2, 4}), SPY_OK);
    assert_int_equal(spy_session_set_input_shape(s, 2, 2, (int64_t[]){5, 3}), SPY_OK);
    const void *ins[3] = {xv, av, bv};
    void *outs[2] = {o0, o1};
    assert_int_equal(spy_session_run(s, ins, outs), SPY_E_INVALID_ARG);
    assert_non_null(strstr(spy_session_error(s), "differs from another input"));
    spy_session_free(s);
    spy_model_free(m);
}

/* MaxPool (3x3, padding 1, stride 2) over symbolic height and width, then the global
 * mean: windows near the actual border must see the padding of the actual image, and
 * the mean divides by the actual count of the pooled (derived) size. The bounds are
 * even, where the last window does not reach the high pad; at an odd size it does. */
static void test_pool_every_size(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 4, (int64_t[]){1, 1, 8, 8}, 2, 3, "h");
    ir_sym_add(f->g, x, 3, 3, 8, "w");
    IrAttr at[3] = {ir_attr_ints(f->g, "kernel_shape", (int64_t[]){3, 3}, 2),
                    ir_attr_ints(f->g, "pads", (int64_t[]){1, 1, 1, 1}, 4),
                    ir_attr_ints(f->g, "strides", (int64_t[]){2, 2}, 2)};
    ValId p = ut_onnx_op(f->g, "MaxPool", 13, &x, 1, at, 3);
    ir_add_output(f->g, ut_onnx_op(f->g, "GlobalAveragePool", 13, &p, 1, NULL, 0));
    ut_decompose_ok(f);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    float in[64], out[1];
    for (int h = 3; h <= 8; h++)
        for (int w = 3; w <= 8; w++) {
            ut_fill(in, h * w, 1.3f, -0.6f);
            int oh = (h + 2 - 3) / 2 + 1, ow = (w + 2 - 3) / 2 + 1;
            double sum = 0;
            for (int i = 0; i < oh; i++)
                for (int j = 0; j < ow; j++) {
                    float mx = -INFINITY;
                    for (int a = 2 * i - 1; a <= 2 * i + 1; a++)
                        for (int b = 2 * j - 1; b <= 2 * j + 1; b++)
                            if (a >= 0 && a < h && b >= 0 && b < w)
                                mx = fmaxf(mx, in[a * w + b]);
                    sum += mx;
                }
            float want = (float)(sum / (oh * ow));
            assert_int_equal(spy_session_set_input_shape(s, 0, 4, (int64_t[]){1, 1, h, w}),
                             SPY_OK);
            const void *ins[1] = {in};
            void *outs[1] = {out};
            assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
            ut_expect_close(out, &want, 1, 1e-5);
        }
    spy_session_free(s);
    spy_model_free(m);
}

/* An average pool that excludes its padding (3x3, pads 1, stride 2) over x f32[1, 1,
 * 3..9, 9]: its divisors, which the frontend folds for the bound, are counted on the
 * device from the actual height (symdim_pool.c); every element of the [1, 1, (h - 1) / 2
 * + 1, 5] output at every size against a C reference (the bound's divisors are wrong
 * at the last row of odd smaller heights). */
static void test_avgpool_excluding_pad_every_size(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 4, (int64_t[]){1, 1, 9, 9}, 2, 3, "h");
    IrAttr at[4] = {ir_attr_ints(f->g, "kernel_shape", (int64_t[]){3, 3}, 2),
                    ir_attr_ints(f->g, "pads", (int64_t[]){1, 1, 1, 1}, 4),
                    ir_attr_ints(f->g, "strides", (int64_t[]){2, 2}, 2),
                    ir_attr_int("count_include_pad", 0)};
    ir_add_output(f->g, ut_onnx_op(f->g, "AveragePool", 13, &x, 1, at, 4));
    ut_decompose_ok(f);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    float in[81], out[25], want[25];
    for (int h = 3; h <= 9; h++) {
        int oh = (h - 1) / 2 + 1;
        ut_fill(in, h * 9, 0.7f, -0.2f);
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < 5; j++) {
                double sum = 0;
                int cnt = 0;
                for (int di = -1; di <= 1; di++)
                    for (int dj = -1; dj <= 1; dj++) {
                        int r = 2 * i + di, c = 2 * j + dj;
                        if (r >= 0 && r < h && c >= 0 && c < 9)
                            sum += in[r * 9 + c], cnt++;
                    }
                want[i * 5 + j] = (float)(sum / cnt);
            }
        assert_int_equal(spy_session_set_input_shape(s, 0, 4, (int64_t[]){1, 1, h, 9}), SPY_OK);
        const void *ins[1] = {in};
        void *outs[1] = {out};
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        expect_out_shape(s, 4, (int64_t[]){1, 1, oh, 5});
        ut_expect_close(out, want, oh * 5, 1e-5);
    }
    spy_session_free(s);
    spy_model_free(m);
}

/* Op (attributes at, its input x f32[1, 1, 1..8, 8], a 3x3 weight for a Conv) whose pads
 * would be computed from the symbolic height's extent: refused, naming the padding. */
static void expect_pad_from_extent_refused(UtFx *f, const char *op, const IrAttr *at, int na)
{
    static const float w[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    ValId in[2] = {sym_input(f->g, "x", 4, (int64_t[]){1, 1, 8, 8}, 2, 1, "h"),
                   ut_const(f->g, IR_DT_F32, 4, (int64_t[]){1, 1, 3, 3}, w)};
    ValId p = ut_onnx_op(f->g, op, 13, in, strcmp(op, "Conv") ? 1 : 2, at, na);
    ir_add_output(f->g, ut_onnx_op(f->g, "GlobalMaxPool", 13, &p, 1, NULL, 0));
    ut_decompose_ok(f);
    expect_refused(f, "padding computed from the extent");
}

/* A window larger than the symbolic axis at its minimum (3 taps over 1..8 positions):
 * refused, saying where it does not fit and which flag raises the minimum. */
static void test_window_past_min_refused(void **state)
{
    UtFx *f = *state;
    static const float w[3] = {1, 2, 3};
    ValId in[2] = {sym_input(f->g, "x", 3, (int64_t[]){1, 1, 8}, 2, 1, "t"),
                   ut_const(f->g, IR_DT_F32, 3, (int64_t[]){1, 1, 3}, w)};
    ValId y = ut_onnx_op(f->g, "Conv", 13, in, 2, NULL, 0);
    ir_add_output(f->g, ut_onnx_op(f->g, "GlobalMaxPool", 13, &y, 1, NULL, 0));
    ut_decompose_ok(f);
    expect_refused(f, "does not fit where the bounded dynamic dimension 't' is at its "
                      "minimum 1");
}

/* A strided Conv with auto_pad SAME: its low pad is 0 or 1 by the parity of the size. */
static void test_same_stride_refused(void **state)
{
    UtFx *f = *state;
    IrAttr at[2] = {ir_attr_ints(f->g, "strides", (int64_t[]){2, 2}, 2),
                    ir_attr_str(f->g, "auto_pad", "SAME_UPPER")};
    expect_pad_from_extent_refused(f, "Conv", at, 2);
}

/* Pools with ceil_mode whose output size is not one floor of the size: an average
 * (the last window's divisor moves with the size) and a MaxPool whose last window may
 * start in the high pad (2x2, stride 2, pads 1: one output fewer at odd sizes). */
static void test_ceil_pool_refused(void **state)
{
    UtFx *f = *state;
    IrAttr at[3] = {ir_attr_ints(f->g, "kernel_shape", (int64_t[]){3, 3}, 2),
                    ir_attr_ints(f->g, "strides", (int64_t[]){2, 2}, 2),
                    ir_attr_int("ceil_mode", 1)};
    expect_pad_from_extent_refused(f, "AveragePool", at, 3);
}

static void test_ceil_maxpool_refused(void **state)
{
    UtFx *f = *state;
    IrAttr at[4] = {ir_attr_ints(f->g, "kernel_shape", (int64_t[]){2, 2}, 2),
                    ir_attr_ints(f->g, "strides", (int64_t[]){2, 2}, 2),
                    ir_attr_ints(f->g, "pads", (int64_t[]){1, 1, 1, 1}, 4),
                    ir_attr_int("ceil_mode", 1)};
    expect_pad_from_extent_refused(f, "MaxPool", at, 4);
}

/* Runs s on in at shape [1, 1, h, w] into out: at an odd h expects the refusal that
 * names the bundle's step 2 and returns false; else expects a run, true. */
static bool run_even(spy_session *s, const float *in, float *out, int h, int w)
{
    spy_status st = spy_session_set_input_shape(s, 0, 4, (int64_t[]){1, 1, h, w});
    const void *ins[1] = {in};
    void *outs[1] = {out};
    if (st == SPY_OK)
        st = spy_session_run(s, ins, outs);
    if (h % 2) {
        assert_int_equal(st, SPY_E_INVALID_ARG);
        assert_non_null(strstr(spy_session_error(s), "by steps of 2"));
        return false;
    }
    assert_int_equal(st, SPY_OK);
    return true;
}

/* ResNet-D's shortcut pool, AveragePool 2x2 stride 2 with ceil_mode, over x f32[1, 1,
 * h, 4] (h in 4..16): its high pad, computed for the bound, is read only at odd h, so
 * the bundle takes the even sizes (DIMREFS step 2), each the plain 2x2 average, and
 * refuses odd ones, naming the step. */
static void test_ceil_pool_covering_every_step(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 4, (int64_t[]){1, 1, 16, 4}, 2, 4, "h");
    IrAttr at[3] = {ir_attr_ints(f->g, "kernel_shape", (int64_t[]){2, 2}, 2),
                    ir_attr_ints(f->g, "strides", (int64_t[]){2, 2}, 2),
                    ir_attr_int("ceil_mode", 1)};
    ir_add_output(f->g, ut_onnx_op(f->g, "AveragePool", 19, &x, 1, at, 3));
    ut_decompose_ok(f);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    float in[64], out[16], want[16];
    for (int h = 4; h <= 16; h++) {
        ut_fill(in, 4 * h, 0.9f, -0.2f);
        if (!run_even(s, in, out, h, 4))
            continue;
        for (int i = 0; i < h / 2; i++)
            for (int j = 0; j < 2; j++)
                want[i * 2 + j] = (in[2 * i * 4 + 2 * j] + in[2 * i * 4 + 2 * j + 1] +
                                   in[(2 * i + 1) * 4 + 2 * j] +
                                   in[(2 * i + 1) * 4 + 2 * j + 1]) * 0.25f;
        expect_out_shape(s, 4, (int64_t[]){1, 1, h / 2, 2});
        ut_expect_close(out, want, h, 1e-6);
    }
    spy_session_free(s);
    spy_model_free(m);
}

/* A forward CumSum along a symbolic axis (position ids of RoBERTa-style models):
 * each result reads only the elements before it, so x f32[2, 1..8] gives the exact
 * running sums at every size. */
static void test_cumsum_every_size(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 2, (int64_t[]){2, 8}, 1, 1, "seq");
    ValId ax = ut_const(f->g, IR_DT_I64, 0, NULL, (int64_t[]){1});
    ir_add_output(f->g, ut_onnx_op(f->g, "CumSum", 14, (ValId[]){x, ax}, 2, NULL, 0));
    ut_decompose_ok(f);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    float in[16], out[16], want[16];
    for (int n = 1; n <= 8; n++) {
        ut_fill(in, 2 * n, 0.9f, -0.3f);
        for (int r = 0; r < 2; r++) {
            double acc = 0;
            for (int c = 0; c < n; c++)
                want[r * n + c] = (float)(acc += in[r * n + c]);
        }
        assert_int_equal(spy_session_set_input_shape(s, 0, 2, (int64_t[]){2, n}), SPY_OK);
        const void *ins[1] = {in};
        void *outs[1] = {out};
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        expect_out_shape(s, 2, (int64_t[]){2, n});
        ut_expect_close(out, want, 2 * n, 1e-5);
    }
    spy_session_free(s);
    spy_model_free(m);
}

/* A constant Pad of a symbolic axis as a graph output, x f32[2, 1..6] padded by 1 before
 * and 2 after with 5: the output's extent is n + 3, the actual data between the pads
 * (its runtime shape was the bound's symbol on an axis of the bound plus 3, which the
 * runtime refused at every size). */
static void test_pad_output_every_size(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 2, (int64_t[]){2, 6}, 1, 1, "n");
    ValId pads = ut_const(f->g, IR_DT_I64, 1, (int64_t[]){4}, (int64_t[]){0, 1, 0, 2});
    ValId val = ut_const(f->g, IR_DT_F32, 0, NULL, (float[]){5});
    ir_add_output(f->g, ut_onnx_op(f->g, "Pad", 18, (ValId[]){x, pads, val}, 3, NULL, 0));
    ut_decompose_ok(f);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    float in[12], out[18], want[18];
    for (int n = 1; n <= 6; n++) {
        ut_fill(in, 2 * n, 0.9f, -0.3f);
        for (int r = 0; r < 2; r++)
            for (int c = 0; c < n + 3; c++)
                want[r * (n + 3) + c] = c >= 1 && c <= n ? in[r * n + c - 1] : 5.0f;
        assert_int_equal(spy_session_set_input_shape(s, 0, 2, (int64_t[]){2, n}), SPY_OK);
        const void *ins[1] = {in};
        void *outs[1] = {out};
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        expect_out_shape(s, 2, (int64_t[]){2, n + 3});
        ut_expect_close(out, want, 2 * (n + 3), 0);
    }
    spy_session_free(s);
    spy_model_free(m);
}

/* ArgMax over a symbolic axis (a QA head's start position), x f32[2, 1..8], the values
 * all negative so that a zero padding would win: the first maximum of the actual
 * positions at every size. */
static void test_argmax_every_size(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 2, (int64_t[]){2, 8}, 1, 1, "seq");
    IrAttr at[2] = {ir_attr_int("axis", 1), ir_attr_int("keepdims", 0)};
    ir_add_output(f->g, ut_onnx_op(f->g, "ArgMax", 13, &x, 1, at, 2));
    ut_decompose_ok(f);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    float in[16];
    int64_t out[2];
    for (int n = 1; n <= 8; n++) {
        for (int i = 0; i < 2 * n; i++)
            in[i] = -1.0f - (float)((i * 7 + 3) % 5);    /* each row's maximum -1 */
        assert_int_equal(spy_session_set_input_shape(s, 0, 2, (int64_t[]){2, n}), SPY_OK);
        const void *ins[1] = {in};
        void *outs[1] = {out};
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        for (int r = 0; r < 2; r++) {
            int64_t want = 0;
            for (int c = 1; c < n; c++)
                want = in[r * n + c] > in[r * n + want] ? c : want;
            assert_int_equal(out[r], want);
        }
    }
    spy_session_free(s);
    spy_model_free(m);
}

/* x.sum(1) / x.shape[1] over x f32[2, 1..8] (a mean written by hand): the folded
 * Shape's extent, cast to float, becomes the actual length (it was the bound's, 8). */
static ValId len_as_float(UtFx *f, ValId x)
{
    ValId shp = ut_onnx_op(f->g, "Shape", 15, &x, 1, NULL, 0);
    ValId one = ut_const(f->g, IR_DT_I64, 0, NULL, (int64_t[]){1});
    ValId len = ut_onnx_op(f->g, "Gather", 13, (ValId[]){shp, one}, 2, NULL, 0);
    IrAttr to = ir_attr_int("to", 1);                     /* FLOAT */
    return ut_onnx_op(f->g, "Cast", 13, &len, 1, &to, 1);
}

static void test_shape_as_value_every_size(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 2, (int64_t[]){2, 8}, 1, 1, "seq");
    ValId ax = ut_const(f->g, IR_DT_I64, 1, (int64_t[]){1}, (int64_t[]){1});
    IrAttr kd = ir_attr_int("keepdims", 0);
    ValId sum = ut_onnx_op(f->g, "ReduceSum", 13, (ValId[]){x, ax}, 2, &kd, 1);
    ir_add_output(f->g, ut_onnx_op(f->g, "Div", 13, (ValId[]){sum, len_as_float(f, x)}, 2,
                                   NULL, 0));
    ut_decompose_ok(f);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    float in[16], out[2], want[2];
    for (int n = 1; n <= 8; n++) {
        ut_fill(in, 2 * n, 0.7f, 0.2f);
        for (int r = 0; r < 2; r++) {
            double acc = 0;
            for (int c = 0; c < n; c++)
                acc += in[r * n + c];
            want[r] = (float)(acc / n);
        }
        assert_int_equal(spy_session_set_input_shape(s, 0, 2, (int64_t[]){2, n}), SPY_OK);
        const void *ins[1] = {in};
        void *outs[1] = {out};
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        ut_expect_close(out, want, 2, 1e-5);
    }
    spy_session_free(s);
    spy_model_free(m);
}

/* x * (x.shape[1] - 1): a value computed from the folded extent, which the actual size
 * cannot replace: refused rather than the bound's at every size. */
static void test_shape_arith_refused(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 2, (int64_t[]){2, 8}, 1, 1, "seq");
    ValId one = ut_const(f->g, IR_DT_F32, 0, NULL, (float[]){1});
    ValId lm1 = ut_onnx_op(f->g, "Sub", 13, (ValId[]){len_as_float(f, x), one}, 2, NULL, 0);
    ir_add_output(f->g, ut_onnx_op(f->g, "Mul", 13, (ValId[]){x, lm1}, 2, NULL, 0));
    ut_decompose_ok(f);
    expect_refused(f, "computed from the extent of the bounded dynamic dimension 'seq'");
}

/* e = Expand(x.sum(1, keepdim), [2, x.shape[1]]) and e.sum(1) over x f32[2, 1..8]: the
 * axis broadcast to the folded extent is the symbol's, so e comes back [2, n] and its
 * sum counts n copies (it was [2, 8] and 8 copies at every size). */
static void test_expand_to_shape_every_size(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 2, (int64_t[]){2, 8}, 1, 1, "seq");
    ValId ax = ut_const(f->g, IR_DT_I64, 1, (int64_t[]){1}, (int64_t[]){1});
    ValId two = ut_const(f->g, IR_DT_I64, 1, (int64_t[]){1}, (int64_t[]){2});
    IrAttr kd = ir_attr_int("keepdims", 1), cax = ir_attr_int("axis", 0);
    ValId m = ut_onnx_op(f->g, "ReduceSum", 13, (ValId[]){x, ax}, 2, &kd, 1);
    ValId shp = ut_onnx_op(f->g, "Shape", 15, &x, 1, NULL, 0);
    ValId len = ut_onnx_op(f->g, "Gather", 13, (ValId[]){shp, ax}, 2, NULL, 0);
    ValId tgt = ut_onnx_op(f->g, "Concat", 13, (ValId[]){two, len}, 2, &cax, 1);
    ValId e = ut_onnx_op(f->g, "Expand", 13, (ValId[]){m, tgt}, 2, NULL, 0);
    IrAttr kd0 = ir_attr_int("keepdims", 0);
    ir_add_output(f->g, ut_onnx_op(f->g, "ReduceSum", 13, (ValId[]){e, ax}, 2, &kd0, 1));
    ir_add_output(f->g, e);
    ut_decompose_ok(f);
    spy_model *md;
    spy_session *s;
    open_fx(f, &md, &s);
    float in[16], out[2], big[16], want[2];
    for (int n = 1; n <= 8; n++) {
        ut_fill(in, 2 * n, 0.7f, 0.2f);
        for (int r = 0; r < 2; r++) {
            float acc = 0;
            for (int c = 0; c < n; c++)
                acc += in[r * n + c];
            want[r] = acc * (float)n;
        }
        assert_int_equal(spy_session_set_input_shape(s, 0, 2, (int64_t[]){2, n}), SPY_OK);
        const void *ins[1] = {in};
        void *outs[2] = {out, big};
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        ut_expect_close(out, want, 2, 1e-4);
        int rank = -1;
        int64_t dims[SPY_MAX_RANK];
        assert_int_equal(spy_session_output_shape(s, 1, &rank, dims), SPY_OK);
        assert_int_equal(rank, 2);
        assert_int_equal(dims[1], n);
    }
    spy_session_free(s);
    spy_model_free(md);
}

/* Hardmax over a symbolic axis compares the index with constant positions of the
 * bound's extent, so its output axis would not follow the size: refused. */
static void test_hardmax_refused(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 2, (int64_t[]){2, 8}, 1, 1, "seq");
    IrAttr at = ir_attr_int("axis", 1);
    ir_add_output(f->g, ut_onnx_op(f->g, "Hardmax", 13, &x, 1, &at, 1));
    ut_decompose_ok(f);
    expect_refused(f, "an arg-reduction along the bounded dynamic dimension 'seq'");
}

/* Attention scores softmax(q k^T * 0.17) with q f32[4,2,seq,32], k f32[4,2,32,seq],
 * seq in 2..40 (a dynamic BERT's first layer): a core works on several items, and
 * each item's padding mask (positions < seq) is written in place over its loaded
 * position tile; the next item must load all of that tile again (cg_cache_invalidate),
 * or it computes on overwritten positions (seq 34..40 went wrong). */
static void test_attention_every_size(void **state)
{
    enum { B = 4, H = 2, S = 40, D = 32 };
    UtFx *f = *state;
    ValId q = sym_input(f->g, "q", 4, (int64_t[]){B, H, S, D}, 2, 2, "seq");
    ValId k = sym_input(f->g, "k", 4, (int64_t[]){B, H, D, S}, 3, 2, "seq");
    ValId sc = ut_const(f->g, IR_DT_F32, 0, NULL, (float[]){0.17f});
    ValId mm = ut_onnx_op(f->g, "MatMul", 13, (ValId[]){q, k}, 2, NULL, 0);
    ValId x = ut_onnx_op(f->g, "Mul", 13, (ValId[]){mm, sc}, 2, NULL, 0);
    spy_model *m;
    spy_session *s;
    softmax_open(f, x, &m, &s);
    static float qv[B * H * S * D], kv[B * H * D * S], out[B * H * S * S], want[B * H * S * S];
    for (int n = 34; n <= S; n += 2) {
        ut_fill(qv, B * H * n * D, 0.3f, -0.1f);
        ut_fill(kv, B * H * D * n, 0.2f, 0.05f);
        for (int bh = 0; bh < B * H; bh++)
            for (int i = 0; i < n; i++) {
                double sc_row[S], mx = -INFINITY, sum = 0;
                for (int j = 0; j < n; j++) {
                    double acc = 0;
                    for (int d = 0; d < D; d++)
                        acc += (double)qv[(bh * n + i) * D + d] * kv[(bh * D + d) * n + j];
                    sc_row[j] = (double)(float)acc * 0.17;
                    mx = fmax(mx, sc_row[j]);
                }
                for (int j = 0; j < n; j++)
                    sum += exp(sc_row[j] - mx);
                for (int j = 0; j < n; j++)
                    want[(bh * n + i) * n + j] = (float)(exp(sc_row[j] - mx) / sum);
            }
        assert_int_equal(spy_session_set_input_shape(s, 0, 4, (int64_t[]){B, H, n, D}), SPY_OK);
        assert_int_equal(spy_session_set_input_shape(s, 1, 4, (int64_t[]){B, H, D, n}), SPY_OK);
        const void *ins[2] = {qv, kv};
        void *outs[1] = {out};
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        expect_out_shape(s, 4, (int64_t[]){B, H, n, n});
        ut_expect_close(out, want, B * H * n * n, 1e-4);
    }
    spy_session_free(s);
    spy_model_free(m);
}

/* RoBERTa-style embeddings over ids i64[1, seq], seq in 1..128, with a position table
 * of 80 rows: pos = cumsum(ids != 1) * (ids != 1) + 1 keeps counting through the
 * padding (the runtime zeroes it, and 0 is not the pad id 1), up to 129 at the bound,
 * where the GATHER's range check faulted at every size (its rows are never observed);
 * the padding's indices must select a valid row. Out = word[ids] + posemb[pos]. Real
 * data keeps the check: an id past the word table is reported. */
enum { PE_V = 50, PE_P = 80, PE_D = 4, PE_S = 128 };

/* The C reference of the embeddings of ids (n of them) into want [n, PE_D]. */
static void pos_emb_want(const int64_t *ids, int n, const float *word, const float *pos,
                         float *want)
{
    int64_t cnt = 0;
    for (int i = 0; i < n; i++) {
        int64_t m = ids[i] != 1, p = (cnt += m) * m + 1;
        for (int c = 0; c < PE_D; c++)
            want[i * PE_D + c] = word[ids[i] * PE_D + c] + pos[p * PE_D + c];
    }
}

static void test_position_ids_every_size(void **state)
{
    UtFx *f = *state;
    static float word[PE_V * PE_D], pos[PE_P * PE_D], out[PE_S * PE_D], want[PE_S * PE_D];
    ut_fill(word, PE_V * PE_D, 0.7f, -0.2f);
    ut_fill(pos, PE_P * PE_D, 0.4f, 0.1f);
    ValId ids = ut_input(f->g, "ids", IR_DT_I64, 2, (int64_t[]){1, PE_S});
    ir_sym_add(f->g, ids, 1, 1, PE_S, "seq");
    ValId one = ut_const(f->g, IR_DT_I64, 0, NULL, (int64_t[]){1});
    ValId ax = ut_const(f->g, IR_DT_I64, 0, NULL, (int64_t[]){1});
    ValId eq = ut_onnx_op(f->g, "Equal", 13, (ValId[]){ids, one}, 2, NULL, 0);
    ValId ne = ut_onnx_op(f->g, "Not", 1, &eq, 1, NULL, 0);
    IrAttr to = ir_attr_int("to", 7);
    ValId mk = ut_onnx_op(f->g, "Cast", 13, &ne, 1, &to, 1);
    ValId cs = ut_onnx_op(f->g, "CumSum", 14, (ValId[]){mk, ax}, 2, NULL, 0);
    ValId inc = ut_onnx_op(f->g, "Mul", 13, (ValId[]){cs, mk}, 2, NULL, 0);
    ValId pid = ut_onnx_op(f->g, "Add", 13, (ValId[]){inc, one}, 2, NULL, 0);
    ValId wt = ut_const(f->g, IR_DT_F32, 2, (int64_t[]){PE_V, PE_D}, word);
    ValId pt = ut_const(f->g, IR_DT_F32, 2, (int64_t[]){PE_P, PE_D}, pos);
    ValId we = ut_onnx_op(f->g, "Gather", 13, (ValId[]){wt, ids}, 2, NULL, 0);
    ValId pe = ut_onnx_op(f->g, "Gather", 13, (ValId[]){pt, pid}, 2, NULL, 0);
    ir_add_output(f->g, ut_onnx_op(f->g, "Add", 13, (ValId[]){we, pe}, 2, NULL, 0));
    ut_decompose_ok(f);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    int64_t idv[PE_S];
    const void *ins[1] = {idv};
    void *outs[1] = {out};
    for (int n = 1; n <= PE_P - 2; n += 11) {
        for (int i = 0; i < n; i++)
            idv[i] = i + 1 == n && n > 2 ? 1 : 2 + (i * 7) % (PE_V - 2);  /* a trailing pad */
        pos_emb_want(idv, n, word, pos, want);
        assert_int_equal(spy_session_set_input_shape(s, 0, 2, (int64_t[]){1, n}), SPY_OK);
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        expect_out_shape(s, 3, (int64_t[]){1, n, PE_D});
        ut_expect_close(out, want, (int64_t)n * PE_D, 1e-6);
    }
    idv[3] = PE_V + 10;                        /* a real id past the word table */
    assert_int_equal(spy_session_run(s, ins, outs), SPY_E_RUNTIME);
    assert_non_null(strstr(spy_session_error(s), "index 60 out of range"));
    spy_session_free(s);
    spy_model_free(m);
}

/* A reverse scan along a symbolic axis would read the padding: refused, naming the
 * dimension. */
static void test_reverse_scan_refused(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 2, (int64_t[]){2, 8}, 1, 1, "seq");
    ValId ax = ut_const(f->g, IR_DT_I64, 0, NULL, (int64_t[]){1});
    IrAttr rev = ir_attr_int("reverse", 1);
    ir_add_output(f->g, ut_onnx_op(f->g, "CumSum", 14, (ValId[]){x, ax}, 2, &rev, 1));
    ut_decompose_ok(f);
    expect_refused(f, "along the bounded dynamic dimension 'seq'");
}

/* f's graph (one output, of x f32[2, seq], seq in 1..8) compiled and run at every
 * seq n: its output must be x[:, n - 1], of rank r with dims od. */
static void expect_last_every_size(UtFx *f, int r, const int64_t *od)
{
    ut_decompose_ok(f);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    float in[16], out[2];
    for (int n = 1; n <= 8; n++) {
        ut_fill(in, 2 * n, 0.7f, 0.2f);
        assert_int_equal(spy_session_set_input_shape(s, 0, 2, (int64_t[]){2, n}), SPY_OK);
        const void *ins[1] = {in};
        void *outs[1] = {out};
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        expect_out_shape(s, r, od);
        ut_expect_close(out, (float[]){in[n - 1], in[2 * n - 1]}, 2, 0);
    }
    spy_session_free(s);
    spy_model_free(m);
}

/* Gather(x, -1, axis 1) over x f32[2, seq] (a recurrence's last step): the index
 * counts from the actual length. */
static void test_gather_last_every_size(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 2, (int64_t[]){2, 8}, 1, 1, "seq");
    ValId idx = ut_const(f->g, IR_DT_I64, 0, NULL, (int64_t[]){-1});
    IrAttr ax = ir_attr_int("axis", 1);
    ir_add_output(f->g, ut_onnx_op(f->g, "Gather", 13, (ValId[]){x, idx}, 2, &ax, 1));
    expect_last_every_size(f, 1, (int64_t[]){2});
}

/* x[:, -1:] of x f32[2, seq] (Slice from -1 to the end): likewise, the axis kept as 1. */
static void test_slice_last_every_size(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 2, (int64_t[]){2, 8}, 1, 1, "seq");
    ValId st = ut_const(f->g, IR_DT_I64, 1, (int64_t[]){1}, (int64_t[]){-1});
    ValId en = ut_const(f->g, IR_DT_I64, 1, (int64_t[]){1}, (int64_t[]){INT64_MAX});
    ValId ax = ut_const(f->g, IR_DT_I64, 1, (int64_t[]){1}, (int64_t[]){1});
    ir_add_output(f->g, ut_onnx_op(f->g, "Slice", 13, (ValId[]){x, st, en, ax}, 4, NULL, 0));
    expect_last_every_size(f, 2, (int64_t[]){2, 1});
}

/* Slice x[:, 0:2] of x f32[2, seq]: with seq in 3..8 it reads below the least length
 * and is exact at every size; with seq in 1..8 it would read padding and is refused. */
static void slice_first_two(UtFx *f, int64_t lo)
{
    ValId x = sym_input(f->g, "x", 2, (int64_t[]){2, 8}, 1, lo, "seq");
    ValId st = ut_const(f->g, IR_DT_I64, 1, (int64_t[]){1}, (int64_t[]){0});
    ValId en = ut_const(f->g, IR_DT_I64, 1, (int64_t[]){1}, (int64_t[]){2});
    ValId ax = ut_const(f->g, IR_DT_I64, 1, (int64_t[]){1}, (int64_t[]){1});
    ir_add_output(f->g, ut_onnx_op(f->g, "Slice", 13, (ValId[]){x, st, en, ax}, 4, NULL, 0));
    ut_decompose_ok(f);
}

static void test_slice_below_min(void **state)
{
    UtFx *f = *state;
    slice_first_two(f, 3);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    float in[16], out[4];
    for (int n = 3; n <= 8; n++) {
        ut_fill(in, 2 * n, 0.5f, -0.1f);
        assert_int_equal(spy_session_set_input_shape(s, 0, 2, (int64_t[]){2, n}), SPY_OK);
        const void *ins[1] = {in};
        void *outs[1] = {out};
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        expect_out_shape(s, 2, (int64_t[]){2, 2});
        ut_expect_close(out, (float[]){in[0], in[1], in[n], in[n + 1]}, 4, 0);
    }
    spy_session_free(s);
    spy_model_free(m);
}

static void test_slice_past_min_refused(void **state)
{
    UtFx *f = *state;
    slice_first_two(f, 1);
    expect_refused(f, "a slice along the bounded dynamic dimension 'seq'");
}

/* Concat(x, tok) on the sequence axis of x f32[2, seq, 4], seq in 1..8, with x's
 * padding between its valid positions and tok's: an axis of two pieces, compacted at
 * the output to x's actual rows, then tok (the other order, a prepended token, is a
 * derived size: tests/models-dyn/cls_norm_seq). */
static void test_concat_appended_every_size(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 3, (int64_t[]){2, 8, 4}, 1, 1, "seq");
    ValId tok = ut_input(f->g, "tok", IR_DT_F32, 3, (int64_t[]){2, 1, 4});
    IrAttr ax = ir_attr_int("axis", 1);
    ir_add_output(f->g, ut_onnx_op(f->g, "Concat", 13, (ValId[]){x, tok}, 2, &ax, 1));
    ut_decompose_ok(f);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    float in[64], t[8], out[72], want[72];
    ut_fill(t, 8, 7.0f, 0.5f);
    for (int n = 1; n <= 8; n++) {
        ut_fill(in, 2 * n * 4, 0.9f, -0.3f);
        for (int b = 0; b < 2; b++)
            for (int r = 0; r <= n; r++)
                for (int c = 0; c < 4; c++)
                    want[(b * (n + 1) + r) * 4 + c] = r < n ? in[(b * n + r) * 4 + c]
                                                            : t[b * 4 + c];
        assert_int_equal(spy_session_set_input_shape(s, 0, 3, (int64_t[]){2, n, 4}), SPY_OK);
        const void *ins[2] = {in, t};
        void *outs[1] = {out};
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        expect_out_shape(s, 3, (int64_t[]){2, n + 1, 4});
        ut_expect_close(out, want, 2 * (n + 1) * 4, 0);
    }
    spy_session_free(s);
    spy_model_free(m);
}

/* x f32[1, 2, 3, w] (w in 1..5) flattened to [1, 2, 3 * 5] (w the inner factor: its
 * valid positions are no prefix), concatenated with the flattened x + 1 along that
 * axis: two pieces of two factors each (a detector's flattened feature maps). The
 * output is compacted to [1, 2, 6 w]: x's actual elements, then x + 1's. */
static ValId flat_pieces(UtFx *f)
{
    ValId x = sym_input(f->g, "x", 4, (int64_t[]){1, 2, 3, 5}, 3, 1, "w");
    ValId shape = ut_const(f->g, IR_DT_I64, 1, (int64_t[]){3}, (int64_t[]){1, 2, 15});
    ValId one = ut_const(f->g, IR_DT_F32, 0, NULL, (float[]){1});
    ValId x1 = ut_onnx_op(f->g, "Add", 14, (ValId[]){x, one}, 2, NULL, 0);
    ValId a = ut_onnx_op(f->g, "Reshape", 14, (ValId[]){x, shape}, 2, NULL, 0);
    ValId b = ut_onnx_op(f->g, "Reshape", 14, (ValId[]){x1, shape}, 2, NULL, 0);
    IrAttr ax = ir_attr_int("axis", 2);
    return ut_onnx_op(f->g, "Concat", 13, (ValId[]){a, b}, 2, &ax, 1);
}

static void test_concat_pieces_every_size(void **state)
{
    UtFx *f = *state;
    ir_add_output(f->g, flat_pieces(f));
    ut_decompose_ok(f);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    float in[30], out[60], want[60];
    for (int w = 1; w <= 5; w++) {
        int n = 6 * w;
        ut_fill(in, 6 * w, 0.25f, 0.5f);
        for (int c = 0; c < 2; c++)
            for (int k = 0; k < 2; k++)
                for (int i = 0; i < 3 * w; i++)
                    want[c * n + k * 3 * w + i] = in[c * 3 * w + i] + (float)k;
        assert_int_equal(spy_session_set_input_shape(s, 0, 4, (int64_t[]){1, 2, 3, w}), SPY_OK);
        const void *ins[1] = {in};
        void *outs[1] = {out};
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        expect_out_shape(s, 3, (int64_t[]){1, 2, n});
        ut_expect_close(out, want, 2 * n, 0);
    }
    spy_session_free(s);
    spy_model_free(m);
}

/* A sum over that concatenated axis: its valid positions are no prefix, so no mask by
 * the actual size makes it exact; refused by name. */
static void test_concat_pieces_reduce_refused(void **state)
{
    UtFx *f = *state;
    ValId axes = ut_const(f->g, IR_DT_I64, 1, (int64_t[]){1}, (int64_t[]){2});
    ir_add_output(f->g, ut_onnx_op(f->g, "ReduceSum", 13, (ValId[]){flat_pieces(f), axes}, 2,
                                   NULL, 0));
    ut_decompose_ok(f);
    expect_refused(f, "a reduction over a concatenated axis along the bounded dynamic "
                      "dimension 'w'");
}

/* Resize of x f32[1, 2, h, 5] (h in 2..16) to constant sizes [1, 2, 32, 5]: sizes are
 * often the input's Shape folded at the bound, which a smaller input would not resize
 * by the same factor, so only scales are taken along a symbolic axis; this is refused. */
static void test_resize_sizes_refused(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 4, (int64_t[]){1, 2, 16, 5}, 2, 2, "h");
    ValId sz = ut_const(f->g, IR_DT_I64, 1, (int64_t[]){4}, (int64_t[]){1, 2, 32, 5});
    IrAttr a[3] = {ir_attr_str(f->g, "mode", "nearest"),
                   ir_attr_str(f->g, "coordinate_transformation_mode", "asymmetric"),
                   ir_attr_str(f->g, "nearest_mode", "floor")};
    ir_add_output(f->g, ut_onnx_op(f->g, "Resize", 18, (ValId[]){x, IR_NONE, IR_NONE, sz}, 4,
                                   a, 3));
    ut_decompose_ok(f);
    expect_refused(f, "a gather along the bounded dynamic dimension 'h'");
}

/* A U-Net's skip connection in miniature: x f32[1, 1, h, 2] (h in 4..16) plus itself
 * max-pooled by 2 along h and upsampled back by 2 (Resize by scales): the sum joins h
 * and 2 * floor(h / 2), which agree at even h only. The bundle takes h = 16, 14, .., 4
 * (DIMREFS step 2), each matching a C reference, and refuses odd h, naming the step. */
static void test_joined_sizes_every_step(void **state)
{
    UtFx *f = *state;
    ValId x = sym_input(f->g, "x", 4, (int64_t[]){1, 1, 16, 2}, 2, 4, "h");
    IrAttr pa[2] = {ir_attr_ints(f->g, "kernel_shape", (int64_t[]){2, 1}, 2),
                    ir_attr_ints(f->g, "strides", (int64_t[]){2, 1}, 2)};
    ValId p = ut_onnx_op(f->g, "MaxPool", 13, &x, 1, pa, 2);
    ValId sc = ut_const(f->g, IR_DT_F32, 1, (int64_t[]){4}, (float[]){1, 1, 2, 1});
    IrAttr ra[2] = {ir_attr_str(f->g, "mode", "nearest"),
                    ir_attr_str(f->g, "coordinate_transformation_mode", "asymmetric")};
    ValId u = ut_onnx_op(f->g, "Resize", 18, (ValId[]){p, IR_NONE, sc}, 3, ra, 2);
    ir_add_output(f->g, ut_onnx_op(f->g, "Add", 14, (ValId[]){x, u}, 2, NULL, 0));
    ut_decompose_ok(f);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    float in[32], out[32], want[32];
    for (int h = 4; h <= 16; h++) {
        ut_fill(in, 2 * h, 0.7f, -0.3f);
        if (!run_even(s, in, out, h, 2))
            continue;
        for (int i = 0; i < h; i++)
            for (int j = 0; j < 2; j++)
                want[i * 2 + j] = in[i * 2 + j] + fmaxf(in[(i & ~1) * 2 + j],
                                                        in[((i & ~1) + 1) * 2 + j]);
        expect_out_shape(s, 4, (int64_t[]){1, 1, h, 2});
        ut_expect_close(out, want, 2 * h, 1e-6);
    }
    spy_session_free(s);
    spy_model_free(m);
}

/* SYMLEN only means something with symbolic dimensions (pass_symdim resolves it): in
 * a static graph (a text IR file may hold one) the pipeline refuses it. */
static void test_symlen_static_refused(void **state)
{
    UtFx *f = *state;
    ValId x = ut_input(f->g, "x", IR_DT_F32, 2, (int64_t[]){2, 3});
    IrAttr ax = ir_attr_int("axis", 1);
    NodeId n = ir_add_node(f->g, IR_OP_SYMLEN, &x, 1, &ax, 1, NULL);
    ir_add_output(f->g, f->g->nodes[n].out[0]);
    expect_refused(f, "op symlen");
}

/* A fused QKV projection y = x w (x f32[2, seq, 8], seq in 1..8, y [2, seq, 24]) read
 * by three slices: out = (q k^T) v. The product by v contracts seq, so v's padding
 * must be zero; the SELECT that does it is applied to y for all three slices (pass
 * symdim, symdim_source.c), so that it joins the projection's epilogue: no kernel may
 * select without a matrix product. Small integers keep every sum exact: the results
 * must equal the C reference's bit for bit at every size. */
enum { QK_B = 2, QK_S = 8, QK_D = 8 };

/* The C reference of out [QK_B, n, QK_D] for x [QK_B, n, QK_D] and w [QK_D, 3 QK_D]. */
static void qkv_want(const float *x, const float *w, int n, float *want)
{
    float y[QK_B * QK_S * 3 * QK_D], sc[QK_S * QK_S];
    for (int r = 0; r < QK_B * n; r++)
        for (int j = 0; j < 3 * QK_D; j++) {
            float acc = 0;
            for (int k = 0; k < QK_D; k++)
                acc += x[r * QK_D + k] * w[k * 3 * QK_D + j];
            y[r * 3 * QK_D + j] = acc;
        }
    for (int b = 0; b < QK_B; b++) {
        const float *yb = y + b * n * 3 * QK_D;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                float acc = 0;
                for (int d = 0; d < QK_D; d++)
                    acc += yb[i * 3 * QK_D + d] * yb[j * 3 * QK_D + QK_D + d];
                sc[i * n + j] = acc;
            }
        for (int i = 0; i < n; i++)
            for (int d = 0; d < QK_D; d++) {
                float acc = 0;
                for (int j = 0; j < n; j++)
                    acc += sc[i * n + j] * yb[j * 3 * QK_D + 2 * QK_D + d];
                want[(b * n + i) * QK_D + d] = acc;
            }
    }
}

/* Slice [lo, lo + QK_D) of the last axis of y. */
static ValId qkv_part(IrGraph *g, ValId y, int64_t lo)
{
    ValId st = ut_const(g, IR_DT_I64, 1, (int64_t[]){1}, (int64_t[]){lo});
    ValId en = ut_const(g, IR_DT_I64, 1, (int64_t[]){1}, (int64_t[]){lo + QK_D});
    ValId ax = ut_const(g, IR_DT_I64, 1, (int64_t[]){1}, (int64_t[]){2});
    return ut_onnx_op(g, "Slice", 13, (ValId[]){y, st, en, ax}, 4, NULL, 0);
}

static void test_shared_source_masked(void **state)
{
    UtFx *f = *state;
    static float w[QK_D * 3 * QK_D], x[QK_B * QK_S * QK_D], out[QK_B * QK_S * QK_D],
        want[QK_B * QK_S * QK_D];
    for (int i = 0; i < QK_D * 3 * QK_D; i++)
        w[i] = (float)((i * 7 + 3) % 3 - 1);
    ValId xv = sym_input(f->g, "x", 3, (int64_t[]){QK_B, QK_S, QK_D}, 1, 1, "seq");
    ValId wv = ut_const(f->g, IR_DT_F32, 2, (int64_t[]){QK_D, 3 * QK_D}, w);
    ValId y = ut_onnx_op(f->g, "MatMul", 13, (ValId[]){xv, wv}, 2, NULL, 0);
    IrAttr perm = ir_attr_ints(f->g, "perm", (int64_t[]){0, 2, 1}, 3);
    ValId kt = ut_onnx_op(f->g, "Transpose", 13, (ValId[]){qkv_part(f->g, y, QK_D)}, 1,
                          &perm, 1);
    ValId sc = ut_onnx_op(f->g, "MatMul", 13, (ValId[]){qkv_part(f->g, y, 0), kt}, 2, NULL, 0);
    ir_add_output(f->g, ut_onnx_op(f->g, "MatMul", 13,
                                   (ValId[]){sc, qkv_part(f->g, y, 2 * QK_D)}, 2, NULL, 0));
    ut_decompose_ok(f);
    spy_model *m;
    spy_session *s;
    open_fx(f, &m, &s);
    for (int i = 0; i < spy_model_num_kernels(m); i++) {
        spy_kernel_profile p;
        assert_int_equal(spy_model_kernel_profile(m, i, &p), SPY_OK);
        if (strstr(p.name, "select") && !strstr(p.name, "matmul"))
            fail_msg("kernel %s selects on its own", p.name);
    }
    for (int n = QK_S; n >= 1; n -= 3) {
        for (int i = 0; i < QK_B * n * QK_D; i++)
            x[i] = (float)((i * 5 + n) % 3 - 1);
        qkv_want(x, w, n, want);
        assert_int_equal(spy_session_set_input_shape(s, 0, 3, (int64_t[]){QK_B, n, QK_D}),
                         SPY_OK);
        const void *ins[1] = {x};
        void *outs[1] = {out};
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        expect_out_shape(s, 3, (int64_t[]){QK_B, n, QK_D});
        assert_memory_equal(out, want, (size_t)QK_B * n * QK_D * sizeof *out);
    }
    spy_session_free(s);
    spy_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_softmax_every_size, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_mean_and_matmul, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_pool_every_size, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_avgpool_excluding_pad_every_size, ut_setup,
                                        ut_teardown),
        cmocka_unit_test_setup_teardown(test_window_past_min_refused, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_same_stride_refused, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_ceil_pool_refused, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_ceil_maxpool_refused, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_cumsum_every_size, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_pad_output_every_size, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_argmax_every_size, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_hardmax_refused, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_shape_as_value_every_size, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_shape_arith_refused, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_expand_to_shape_every_size, ut_setup,
                                        ut_teardown),
        cmocka_unit_test_setup_teardown(test_reverse_scan_refused, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_attention_every_size, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_position_ids_every_size, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_shared_source_masked, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_gather_last_every_size, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_slice_below_min, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_slice_last_every_size, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_slice_past_min_refused, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_symlen_static_refused, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_concat_appended_every_size, ut_setup,
                                        ut_teardown),
        cmocka_unit_test_setup_teardown(test_concat_pieces_every_size, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_concat_pieces_reduce_refused, ut_setup,
                                        ut_teardown),
        cmocka_unit_test_setup_teardown(test_resize_sizes_refused, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_joined_sizes_every_step, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_ceil_pool_covering_every_step, ut_setup,
                                        ut_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
