/* test_pool_pad.c: 2-d max pooling with padding compiles to one kernel whose work items
 * load the unpadded input into a patch bordered by the pad value (passes/fuse.c
 * absorb_window_pad, codegen/cg_reduce.c window_pad_item), not a kernel writing the
 * padded copy to DRAM and another reading it back.
 *
 * ONNX MaxPool nodes over inputs below zero (so that padding with anything but -inf
 * would show at the border), with symmetric and one-sided pads, stride 1 and 2,
 * ceil_mode, several planes and odd sizes, and a map large enough that the 32 cores'
 * items include interior ones (no fill) and border ones; and an explicit Pad of 0.5
 * before an unpadded MaxPool whose windows read every padded row and column (else the
 * MaxPool's decomposition crops them with a PAD of its own, and the kernels stay
 * apart), whose value must be the border's. Each bundle must hold a
 * single kernel, and its outputs must equal a direct C computation bit for bit (a max
 * is exact); a max pool with dilation 2 keeps its pad kernel (the patch form takes
 * dilation 1 only) and must still be right.
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
#include "rt_model.h"
#include "spyrt.h"
#include "unit_util.h"

/* A pooling case: input [n, c, h, w], kernel, strides, dilation, pads (top, left,
 * bottom, right), ceil_mode, and an explicit Pad's value (NAN: none, the pads are the
 * MaxPool's own). */
typedef struct {
    int64_t n, c, h, w, kh, kw, sh, sw, dil, pt, pl, pb, pr, ceil;
    float padv;
    uint32_t kernels;        /* kernels the bundle must hold */
} Case;

/* Output extent of one spatial dim (ONNX MaxPool, explicit pads). */
static int64_t out_ext(int64_t in, int64_t k, int64_t s, int64_t d, int64_t lo, int64_t hi,
                       int64_t ceil)
{
    int64_t span = in + lo + hi - (k - 1) * d - 1;
    int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (o - 1) * s >= in + lo)       /* a last window starting in the padding */
        o--;
    return o;
}

/* Deterministic values in [-2, -1): every one below zero. */
static void fill_neg(float *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 2.0f;
    }
}

/* The padded element (r, q) of plane p: the pad value outside the input. */
static float at(const Case *t, const float *x, int64_t p, int64_t r, int64_t q, float pad)
{
    if (r < 0 || r >= t->h || q < 0 || q >= t->w)
        return pad;
    return x[(p * t->h + r) * t->w + q];
}

/* The pooling computed directly into y [n*c, oh, ow]. */
static void reference(const Case *t, const float *x, float *y, int64_t oh, int64_t ow)
{
    float pad = isnan(t->padv) ? -INFINITY : t->padv;
    for (int64_t p = 0; p < t->n * t->c; p++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                float m = -INFINITY;
                for (int64_t a = 0; a < t->kh; a++)
                    for (int64_t b = 0; b < t->kw; b++) {
                        int64_t r = i * t->sh + a * t->dil - t->pt;
                        int64_t q = j * t->sw + b * t->dil - t->pl;
                        bool in = r < t->h + t->pb && q < t->w + t->pr;
                        float v = in ? at(t, x, p, r, q, pad) : -INFINITY;
                        m = v > m ? v : m;
                    }
                y[(p * oh + i) * ow + j] = m;
            }
}

/* The graph of case t: x -> [Pad] -> MaxPool. */
static void build(IrGraph *g, const Case *t)
{
    ValId x = ut_input(g, "x", IR_DT_F32, 4, (const int64_t[]){t->n, t->c, t->h, t->w});
    bool own = isnan(t->padv);
    if (!own) {
        ValId pads = ut_const(g, IR_DT_I64, 1, (const int64_t[]){8},
                              (const int64_t[]){0, 0, t->pt, t->pl, 0, 0, t->pb, t->pr});
        float v = t->padv;
        ValId val = ut_const(g, IR_DT_F32, 0, NULL, &v);
        x = ut_onnx_op(g, "Pad", 18, (const ValId[]){x, pads, val}, 3, NULL, 0);
    }
    IrAttr a[5] = {
        ir_attr_ints(g, "kernel_shape", (const int64_t[]){t->kh, t->kw}, 2),
        ir_attr_ints(g, "strides", (const int64_t[]){t->sh, t->sw}, 2),
        ir_attr_ints(g, "dilations", (const int64_t[]){t->dil, t->dil}, 2),
        ir_attr_ints(g, "pads", own ? (const int64_t[]){t->pt, t->pl, t->pb, t->pr}
                                    : (const int64_t[]){0, 0, 0, 0}, 4),
        ir_attr_int("ceil_mode", own ? t->ceil : 0)};
    ir_add_output(g, ut_onnx_op(g, "MaxPool", 12, &x, 1, a, 5));
}

/* Compiles and runs case t; checks the kernel count and the outputs. */
static void run_case(const Case *t)
{
    UtFx *f = ut_fx_new();
    build(f->g, t);
    bool own = isnan(t->padv);
    int64_t oh = out_ext(t->h, t->kh, t->sh, t->dil, t->pt, t->pb, own ? t->ceil : 0);
    int64_t ow = out_ext(t->w, t->kw, t->sw, t->dil, t->pl, t->pr, own ? t->ceil : 0);
    size_t nx = (size_t)(t->n * t->c * t->h * t->w), ny = (size_t)(t->n * t->c * oh * ow);
    float *x = malloc(nx * 4), *y = malloc(ny * 4), *want = malloc(ny * 4);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(want);
    fill_neg(x, nx, (uint32_t)(t->h * 131 + t->w));
    reference(t, x, want, oh, ow);

    size_t len = 0;
    uint8_t *buf = ut_compile(f->g, &len);
    spy_model *m = NULL;
    char err[256];
    assert_int_equal(spy_model_load_memory(buf, len, &m, err, sizeof err), SPY_OK);
    if (m->nkernels != t->kernels)
        fail_msg("%lldx%lld k%lld s%lld: %u kernels, want %u", (long long)t->h,
                 (long long)t->w, (long long)t->kh, (long long)t->sh, m->nkernels, t->kernels);
    spy_session *s = NULL;
    assert_int_equal(spy_session_create(m, NULL, &s), SPY_OK);
    memset(y, 0, ny * 4);
    assert_int_equal(spy_session_run(s, (const void *[]){x}, (void *[]){y}), SPY_OK);
    for (size_t i = 0; i < ny; i++)
        if (memcmp(&y[i], &want[i], 4) != 0)
            fail_msg("%lldx%lld k%lld s%lld: element %zu is %g, want %g", (long long)t->h,
                     (long long)t->w, (long long)t->kh, (long long)t->sh, i, y[i], want[i]);
    spy_session_free(s);
    spy_model_free(m);
    free(buf);
    free(x);
    free(y);
    free(want);
    ut_fx_free(f);
}

static void test_own_pads(void **state)
{
    (void)state;
    static const Case cases[] = {
        {1, 8, 24, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, NAN, 1},   /* resnet's stem pool */
        {2, 5, 13, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, NAN, 1},   /* stride 1, odd sizes */
        {1, 3, 15, 15, 2, 2, 2, 2, 1, 0, 0, 1, 1, 0, NAN, 1},   /* one-sided pads */
        {1, 3, 10, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, NAN, 1},   /* ceil_mode */
        {1, 4, 64, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, NAN, 1},   /* interior items too */
        {1, 2, 9, 12, 3, 2, 2, 1, 1, 2, 0, 1, 1, 0, NAN, 1},    /* uneven kernel and pads */
        {1, 3, 14, 16, 3, 3, 2, 1, 1, 1, 0, 1, 0, 0, NAN, 1},   /* rows padded alone */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
}

static void test_explicit_pad(void **state)
{
    (void)state;
    static const Case c = {1, 6, 19, 18, 3, 3, 2, 2, 1, 1, 2, 1, 1, 0, 0.5f, 1};
    run_case(&c);
}

static void test_dilated_keeps_pad(void **state)
{
    (void)state;
    static const Case c = {1, 4, 16, 16, 3, 3, 1, 1, 2, 2, 2, 2, 2, 0, NAN, 2};
    run_case(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_pads),
        cmocka_unit_test(test_explicit_pad),
        cmocka_unit_test(test_dilated_keeps_pad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
