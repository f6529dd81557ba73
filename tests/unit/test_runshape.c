/* test_runshape.c: unit tests of shapes decided by input values at run time
 * (passes/decompose/onnx/onnx_runshape.c, onnx_runslice.c, onnx_runresize.c; outputs
 * SPY_TF_SHAPED or DYNAMIC): Reshape, Squeeze, Unsqueeze, reductions, Slice, Pad,
 * Resize, TopK and Range whose target shape, axes, bounds, pads, scales, k or limits
 * are graph inputs, and Trilu / CumSum whose k / axis are. Each graph is compiled once,
 * then run with several values of the shape-deciding input; the actual output shape and
 * data are compared with C references, and invalid values must fail the run with a
 * message naming the output.
 * A use of such a result that needs its shape when compiling must be refused with the
 * message that names the input and suggests --bind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ir.h"
#include "passes/pass.h"
#include "sbin.h"
#include "spyrt.h"
#include "unit_util.h"

/* A compiled graph with two inputs (data, shape-deciding vector) and one output. */
typedef struct {
    spy_model *m;
    spy_session *s;
    float out[256];
    int64_t extra[3][256];                 /* outputs after the first */
} Rs;

/* Compile the graph of fixture f (its output: y) and open a session. */
static void rs_open(UtFx *f, ValId y, Rs *r)
{
    ir_add_output(f->g, y);
    size_t len = 0;
    uint8_t *buf = ut_compile(f->g, &len);
    assert_non_null(buf);
    ut_open(buf, len, &r->m, &r->s);
}

static void rs_close(Rs *r)
{
    spy_session_free(r->s);
    spy_model_free(r->m);
}

/* Run with data x and the shape-deciding input v (its bytes); on success check the
 * output's actual shape (rank, dims) and return its element count; on failure return -1
 * and check that the error names the output (or the input). */
static int64_t rs_run(Rs *r, const float *x, const void *v, int rank, const int64_t *dims)
{
    spy_tensor_info info;
    assert_int_equal(spy_model_output_info(r->m, 0, &info), SPY_OK);
    assert_true(info.nbytes <= sizeof r->out);
    memset(r->out, 0x5a, sizeof r->out);
    const void *in[2] = {x, v};
    void *out[4] = {r->out, r->extra[0], r->extra[1], r->extra[2]};
    assert_true(spy_model_num_outputs(r->m) <= 4);
    if (spy_session_run(r->s, in, out) != SPY_OK) {
        const char *e = spy_session_error(r->s);   /* names the output, or the input
                                                        whose value the device cannot hold */
        if (!strstr(e, "output 'y'") && !strstr(e, "input 'v'"))
            fail_msg("error without the output or input name: %s", e);
        return -1;
    }
    int got = -1;
    int64_t d[SPY_MAX_RANK], n = 1;
    assert_int_equal(spy_session_output_shape(r->s, 0, &got, d), SPY_OK);
    assert_int_equal(got, rank);
    for (int i = 0; i < rank; i++) {
        if (d[i] != dims[i])
            fail_msg("dim %d: got %lld, want %lld", i, (long long)d[i], (long long)dims[i]);
        n *= d[i];
    }
    int64_t cap = 1;
    for (int i = 0; i < info.rank; i++)
        cap *= info.dims[i];
    size_t es = cap > 0 ? info.nbytes / (size_t)cap : 4;
    for (size_t i = (size_t)n * es; i < info.nbytes; i++)  /* zeroed after the prefix */
        if (((const uint8_t *)r->out)[i] != 0)
            fail_msg("byte %zu of %zu after %lld elements is not zeroed", i, info.nbytes, (long long)n);
    return n;
}

/* Edits of a SHAPED tensor entry that the loader refuses. */
static void shaped_bad_dims(SpyTensorDesc *t) { t->dims[0] /= 2, t->dims[1] *= 2; }
static void shaped_two_kinds(SpyTensorDesc *t) { t->flags |= SPY_TF_DYNAMIC; }
static void shaped_far_dims(SpyTensorDesc *t) { t->count_off = 1u << 30; }

/* Graph: y = OP(x f32[xdims], v i64[nv]) with attributes a; the output named y. */
static ValId rs_graph(UtFx *f, const char *op, int xr, const int64_t *xd, int64_t nv,
                      const IrAttr *a, int na)
{
    ValId in[2] = {ut_input(f->g, "x", IR_DT_F32, xr, xd),
                   ut_input(f->g, "v", IR_DT_I64, 1, &nv)};
    ValId y = ut_onnx_op(f->g, op, 20, in, 2, a, na);
    ir_set_name(f->g, y, "y");
    return y;
}

/* Reshape to runtime targets with 0 and -1; an impossible target fails the run. */
static void test_reshape(void **state)
{
    UtFx *f = *state;
    float x[24];
    ut_fill(x, 24, 1.0f, 0.5f);
    Rs r;
    rs_open(f, rs_graph(f, "Reshape", 3, (int64_t[]){2, 3, 4}, 3, NULL, 0), &r);
    assert_int_equal(spy_model_output_dynamic_axis(r.m, 0), SPY_DYN_SHAPE);
    assert_int_equal(rs_run(&r, x, (int64_t[]){4, 0, -1}, 3, (int64_t[]){4, 3, 2}), 24);
    ut_expect_close(r.out, x, 24, 0);
    assert_int_equal(rs_run(&r, x, (int64_t[]){-1, 6, 0}, 3, (int64_t[]){1, 6, 4}), 24);
    ut_expect_close(r.out, x, 24, 0);
    assert_int_equal(rs_run(&r, x, (int64_t[]){5, -1, 1}, 0, NULL), -1);   /* 24 % 5 */
    assert_int_equal(rs_run(&r, x, (int64_t[]){2, 2, 2}, 0, NULL), -1);    /* 8 != 24 */
    assert_int_equal(rs_run(&r, x, (int64_t[]){-1, -1, 24}, 0, NULL), -1); /* two -1 */
    assert_int_equal(rs_run(&r, x, (int64_t[]){24, 1LL << 32, 0}, 0, NULL), -1);
    rs_close(&r);
}

/* Squeeze and Unsqueeze over runtime axes (negative ones too). */
static void test_squeeze_unsqueeze(void **state)
{
    UtFx *f = *state;
    float x[6];
    ut_fill(x, 6, 1.0f, 0.0f);
    Rs r;
    rs_open(f, rs_graph(f, "Squeeze", 4, (int64_t[]){1, 3, 1, 2}, 1, NULL, 0), &r);
    assert_int_equal(rs_run(&r, x, (int64_t[]){0}, 3, (int64_t[]){3, 1, 2}), 6);
    ut_expect_close(r.out, x, 6, 0);
    assert_int_equal(rs_run(&r, x, (int64_t[]){-2}, 3, (int64_t[]){1, 3, 2}), 6);
    assert_int_equal(rs_run(&r, x, (int64_t[]){1}, 0, NULL), -1);          /* size 3 */
    rs_close(&r);

    UtFx *f2 = ut_fx_new();
    rs_open(f2, rs_graph(f2, "Unsqueeze", 2, (int64_t[]){2, 3}, 2, NULL, 0), &r);
    assert_int_equal(rs_run(&r, x, (int64_t[]){0, 3}, 4, (int64_t[]){1, 2, 3, 1}), 6);
    ut_expect_close(r.out, x, 6, 0);
    assert_int_equal(rs_run(&r, x, (int64_t[]){-1, 1}, 4, (int64_t[]){2, 1, 3, 1}), 6);
    assert_int_equal(rs_run(&r, x, (int64_t[]){1, 1}, 0, NULL), -1);       /* repeated */
    rs_close(&r);
    ut_fx_free(f2);
}

/* ReduceSum over one runtime axis of x f32[2,3,4], without keepdims. */
static void test_reduce(void **state)
{
    UtFx *f = *state;
    float x[24], want[12];
    ut_fill(x, 24, 1.0f, 0.25f);
    Rs r;
    IrAttr a = ir_attr_int("keepdims", 0);
    rs_open(f, rs_graph(f, "ReduceSum", 3, (int64_t[]){2, 3, 4}, 1, &a, 1), &r);
    for (int ax = -3; ax < 3; ax++) {
        int p = ax < 0 ? ax + 3 : ax, k = 0;
        int64_t d3[3] = {2, 3, 4}, od[2];
        for (int i = 0; i < 3; i++)
            if (i != p)
                od[k++] = d3[i];
        memset(want, 0, sizeof want);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int l = 0; l < 4; l++) {
                    int o = p == 0 ? j * 4 + l : p == 1 ? i * 4 + l : i * 3 + j;
                    want[o] += x[(i * 3 + j) * 4 + l];
                }
        assert_int_equal(rs_run(&r, x, (int64_t[]){ax}, 2, od), od[0] * od[1]);
        ut_expect_close(r.out, want, od[0] * od[1], 1e-5);
    }
    assert_int_equal(rs_run(&r, x, (int64_t[]){3}, 0, NULL), -1);          /* out of range */
    rs_close(&r);
}

/* Trilu with a runtime k and CumSum over a runtime axis of x f32[3,4]. */
static void test_trilu_cumsum(void **state)
{
    UtFx *f = *state;
    float x[12], want[12];
    ut_fill(x, 12, 1.0f, 0.5f);
    Rs r;
    rs_open(f, rs_graph(f, "Trilu", 2, (int64_t[]){3, 4}, 1, NULL, 0), &r);
    for (int64_t k = -3; k <= 4; k++) {
        for (int i = 0; i < 12; i++)
            want[i] = i % 4 - i / 4 >= k ? x[i] : 0;
        assert_int_equal(rs_run(&r, x, &k, 2, (int64_t[]){3, 4}), 12);
        ut_expect_close(r.out, want, 12, 0);
    }
    rs_close(&r);

    UtFx *f2 = ut_fx_new();
    rs_open(f2, rs_graph(f2, "CumSum", 2, (int64_t[]){3, 4}, 1, NULL, 0), &r);
    for (int64_t ax = -2; ax < 2; ax++) {
        for (int i = 0; i < 12; i++) {
            bool rows = ax == 0 || ax == -2;
            want[i] = x[i] + (rows ? (i >= 4 ? want[i - 4] : 0) : (i % 4 ? want[i - 1] : 0));
        }
        assert_int_equal(rs_run(&r, x, &ax, 2, (int64_t[]){3, 4}), 12);
        ut_expect_close(r.out, want, 12, 1e-5);
    }
    rs_close(&r);
    ut_fx_free(f2);
}

/* Slice with runtime starts/ends/axes/steps of x f32[4,5] (negative steps too), and
 * Pad with runtime pads up to the declared output f32[6,9]: edge mode. */
static void test_slice_pad(void **state)
{
    UtFx *f = *state;
    float x[20], want[54];
    ut_fill(x, 20, 1.0f, 0.5f);
    ValId in[5] = {ut_input(f->g, "x", IR_DT_F32, 2, (int64_t[]){4, 5})};
    const char *nm[4] = {"starts", "ends", "axes", "steps"};
    for (int i = 1; i < 5; i++)
        in[i] = ut_input(f->g, nm[i - 1], IR_DT_I64, 1, (int64_t[]){2});
    ValId y = ut_onnx_op(f->g, "Slice", 13, in, 5, NULL, 0);
    ir_set_name(f->g, y, "y");
    ir_add_output(f->g, y);
    size_t len = 0;
    Rs r;
    uint8_t *buf = ut_compile(f->g, &len);
    if (!buf)
        ut_dump_diag(&f->d);
    assert_non_null(buf);
    ut_open(buf, len, &r.m, &r.s);
    /* rows 3, 1 (step -2), columns 1..4 */
    const void *args[5] = {x, (int64_t[]){-1, 1}, (int64_t[]){0, 100}, (int64_t[]){0, -1},
                           (int64_t[]){-2, 1}};
    void *out[1] = {r.out};
    assert_int_equal(spy_session_run(r.s, args, out), SPY_OK);
    int rank;
    int64_t d[SPY_MAX_RANK];
    assert_int_equal(spy_session_output_shape(r.s, 0, &rank, d), SPY_OK);
    assert_true(rank == 2 && d[0] == 2 && d[1] == 4);
    for (int i = 0; i < 8; i++)
        want[i] = x[(3 - 2 * (i / 4)) * 5 + 1 + i % 4];
    ut_expect_close(r.out, want, 8, 0);
    rs_close(&r);

    UtFx *f2 = ut_fx_new();
    IrAttr mode = ir_attr_str(f2->g, "mode", "edge");
    y = rs_graph(f2, "Pad", 2, (int64_t[]){4, 5}, 4, &mode, 1);
    f2->g->vals[y].type = ut_type(IR_DT_F32, 2, (int64_t[]){6, 9});   /* as declared */
    rs_open(f2, y, &r);
    assert_int_equal(rs_run(&r, x, (int64_t[]){1, 2, 1, 0}, 2, (int64_t[]){6, 7}), 42);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 7; j++) {
            int si = i - 1 < 0 ? 0 : i - 1 > 3 ? 3 : i - 1, sj = j - 2 < 0 ? 0 : j - 2;
            want[i * 7 + j] = x[si * 5 + sj];
        }
    ut_expect_close(r.out, want, 42, 0);
    assert_int_equal(rs_run(&r, x, (int64_t[]){2, 2, 2, 2}, 0, NULL), -1);  /* 8 x 9 > 54 */
    rs_close(&r);
    ut_fx_free(f2);
}

/* TopK with a runtime k, Range with runtime limits: a runtime extent along one axis,
 * checked against the bound (the axis, and the declared length). */
static void test_topk_range(void **state)
{
    UtFx *f = *state;
    float x[12];
    ut_fill(x, 12, 1.0f, 0.0f);
    ValId in[2] = {ut_input(f->g, "x", IR_DT_F32, 2, (int64_t[]){3, 4}),
                   ut_input(f->g, "v", IR_DT_I64, 1, (int64_t[]){1})};
    NodeId n = ut_onnx_node(f->g, "TopK", 11, in, 2, 2, NULL, 0);
    ValId vals = f->g->nodes[n].out[0], idx = f->g->nodes[n].out[1];
    ir_set_name(f->g, vals, "y");
    ir_add_output(f->g, vals);
    ir_add_output(f->g, idx);
    size_t len = 0;
    uint8_t *buf = ut_compile(f->g, &len);
    Rs r;
    ut_open(buf, len, &r.m, &r.s);
    for (int64_t k = 0; k <= 4; k++) {
        assert_int_equal(rs_run(&r, x, &k, 2, (int64_t[]){3, k}), 3 * k);
        for (int i = 0; i < 3; i++)
            for (int j = 1; j < k; j++)
                assert_true(r.out[i * k + j - 1] >= r.out[i * k + j]);
    }
    assert_int_equal(rs_run(&r, x, (int64_t[]){5}, 0, NULL), -1);         /* k > 4 */
    rs_close(&r);

    UtFx *f2 = ut_fx_new();
    ValId ri[3] = {ut_input(f2->g, "x", IR_DT_F32, 0, NULL), ut_input(f2->g, "v", IR_DT_F32, 0, NULL),
                   ut_const(f2->g, IR_DT_F32, 0, NULL, (float[]){0.5f})};
    ValId y = ut_onnx_op(f2->g, "Range", 11, ri, 3, NULL, 0);
    ir_set_name(f2->g, y, "y");
    f2->g->vals[y].type = ut_type(IR_DT_F32, 1, (int64_t[]){8});
    rs_open(f2, y, &r);
    float want[8];
    for (int i = 0; i < 8; i++)
        want[i] = 1.0f + 0.5f * (float)i;
    const float lim[3] = {3.25f, 1.0f, 6.0f};    /* 5 (ceil), 0, 10 > 8 */
    const int64_t n1[3] = {5, 0, -1};
    for (int t = 0; t < 3; t++) {
        int64_t got = rs_run(&r, (float[]){1.0f}, &lim[t], 1, &n1[t]);
        assert_int_equal(got, n1[t]);
        if (got > 0)
            ut_expect_close(r.out, want, got, 1e-6);
    }
    rs_close(&r);
    ut_fx_free(f2);
}

/* Resize (nearest, asymmetric, floor) of x f32[1,1,2,2] by runtime scales, bounded by
 * the declared output f32[1,1,4,6]. */
static void test_resize(void **state)
{
    UtFx *f = *state;
    float x[4] = {1, 2, 3, 4}, want[24];
    ValId in[3] = {ut_input(f->g, "x", IR_DT_F32, 4, (int64_t[]){1, 1, 2, 2}),
                   ut_const(f->g, IR_DT_F32, 1, (int64_t[]){0}, NULL),
                   ut_input(f->g, "v", IR_DT_F32, 1, (int64_t[]){4})};
    IrAttr a[3] = {ir_attr_str(f->g, "mode", "nearest"),
                   ir_attr_str(f->g, "coordinate_transformation_mode", "asymmetric"),
                   ir_attr_str(f->g, "nearest_mode", "floor")};
    ValId y = ut_onnx_op(f->g, "Resize", 13, in, 3, a, 3);
    ir_set_name(f->g, y, "y");
    f->g->vals[y].type = ut_type(IR_DT_F32, 4, (int64_t[]){1, 1, 4, 6});
    ir_add_output(f->g, y);
    size_t len = 0;
    uint8_t *buf = ut_compile(f->g, &len);
    Rs r;
    ut_open(buf, len, &r.m, &r.s);
    const float sc[2][4] = {{1, 1, 2, 3}, {1, 1, 1, 1.5f}};
    const int64_t od[2][4] = {{1, 1, 4, 6}, {1, 1, 2, 3}};
    for (int t = 0; t < 2; t++) {
        int64_t h = od[t][2], w = od[t][3];
        assert_int_equal(rs_run(&r, x, sc[t], 4, od[t]), h * w);
        for (int i = 0; i < h; i++)
            for (int j = 0; j < w; j++)
                want[i * w + j] = x[(int)(i / sc[t][2]) * 2 + (int)(j / sc[t][3])];
        ut_expect_close(r.out, want, h * w, 0);
    }
    assert_int_equal(rs_run(&r, x, (float[]){1, 1, 3, 3}, 0, NULL), -1);  /* 36 > 24 */
    rs_close(&r);
}

/* AffineGrid of theta f32[1,2,3] for a runtime size, bounded by the declared output
 * f32[1,4,5,2]; a size above the bound fails the run. */
static void test_affine_grid(void **state)
{
    UtFx *f = *state;
    float th[6] = {0.5f, -0.25f, 0.1f, 0.3f, 1.5f, -0.2f}, want[40];
    ValId y = rs_graph(f, "AffineGrid", 3, (int64_t[]){1, 2, 3}, 4, NULL, 0);
    f->g->vals[y].type = ut_type(IR_DT_F32, 4, (int64_t[]){1, 4, 5, 2});
    Rs r;
    rs_open(f, y, &r);
    for (int H = 1; H <= 4; H += 3)
        for (int W = 2; W <= 5; W += 3) {
            for (int i = 0; i < H; i++)
                for (int j = 0; j < W; j++)
                    for (int k = 0; k < 2; k++) {
                        float gx = -1.0f + (2.0f * (float)j + 1.0f) / (float)W;
                        float gy = -1.0f + (2.0f * (float)i + 1.0f) / (float)H;
                        want[(i * W + j) * 2 + k] = th[k * 3] * gx + th[k * 3 + 1] * gy + th[k * 3 + 2];
                    }
            assert_int_equal(rs_run(&r, th, (int64_t[]){1, 1, H, W}, 4, (int64_t[]){1, H, W, 2}),
                             H * W * 2);
            ut_expect_close(r.out, want, H * W * 2, 1e-5);
        }
    assert_int_equal(rs_run(&r, th, (int64_t[]){1, 1, 5, 5}, 0, NULL), -1);  /* 50 > 40 */
    rs_close(&r);
}

/* The loader's rules for SPY_TF_SHAPED tensor entries, on a compiled Reshape bundle. */
static void test_shaped_verifier(void **state)
{
    UtFx *f = *state;
    ValId y = rs_graph(f, "Reshape", 2, (int64_t[]){2, 3}, 2, NULL, 0);
    ir_add_output(f->g, y);
    size_t len = 0;
    uint8_t *buf = ut_compile(f->g, &len), *c = malloc(len);
    assert_non_null(buf);
    const SpyHeader *h = (const SpyHeader *)buf;
    const SpySection *sec = (const SpySection *)(buf + sizeof *h);
    uint64_t at = 0;
    for (uint32_t i = 0; i < h->nsections; i++)
        if (sec[i].id == SPY_SEC_TENSORS)
            for (uint64_t k = 0; k < sec[i].size / sizeof(SpyTensorDesc); k++) {
                const SpyTensorDesc *t = (const SpyTensorDesc *)(buf + sec[i].offset) + k;
                if (t->flags & SPY_TF_SHAPED)
                    at = sec[i].offset + k * sizeof *t;
            }
    assert_int_not_equal(at, 0);
    struct {
        void (*edit)(SpyTensorDesc *t);
        const char *why;
    } cases[3] = {
        {shaped_bad_dims, "dims are not [numel, 1, ...]"},
        {shaped_two_kinds, "more than one of dynamic, shaped and hidden"},
        {shaped_far_dims, "outside segment"},
    };
    for (int i = 0; i < 3; i++) {
        memcpy(c, buf, len);
        cases[i].edit((SpyTensorDesc *)(c + at));
        ut_fix_crcs(c);
        ut_expect_refused(c, len, cases[i].why);
    }
    free(c);
    free(buf);
}

/* A runtime shape that folded to a constant becomes a static output: pass_dynamic
 * replaces the capacity view by the prefix in that shape. */
static void test_shape_folds(void **state)
{
    UtFx *f = *state;
    ValId x = ut_input(f->g, "x", IR_DT_F32, 1, (int64_t[]){6});
    ValId v = ir_reshape(f->g, x, (int64_t[]){6, 1}, 2, NULL);
    ir_add_output(f->g, v);
    ir_dyn_add_shape(f->g, v, ut_const(f->g, IR_DT_I32, 1, (int64_t[]){2}, (int32_t[]){2, 2}));
    PassOptions po = f->opt;
    assert_true(pass_dynamic(f->g, &po));
    assert_int_equal(f->g->ndyn, 0);
    ut_expect_shape(f->g, 0, 2, (int64_t[]){2, 2});
    float in[6] = {1, 2, 3, 4, 5, 6};
    const void *ins[1] = {in};
    ut_expect_close(ut_run_graph(f->g, ins, 0), in, 4, 0);
}

/* A runtime-shaped result that a later op needs the shape of, or that meets an operand
 * of its capacity view's size, is refused, naming the graph input and --bind; a
 * pointwise op with a scalar operand is accepted. */
static void test_refused_use(void **state)
{
    UtFx *f = *state;
    ValId y = rs_graph(f, "Reshape", 2, (int64_t[]){2, 3}, 2, NULL, 0);
    ValId z = ut_onnx_op(f->g, "Softmax", 13, &y, 1, NULL, 0);
    ir_add_output(f->g, z);
    PassOptions po = f->opt;
    assert_false(pass_run_pipeline(f->g, &po));
    assert_true(ut_has_msg(&f->d, "dynamic shape input 'v' (a graph input: specialise it "
                                  "with --bind)"));

    UtFx *f3 = ut_fx_new();                 /* an operand of the capacity view's size */
    y = rs_graph(f3, "Reshape", 2, (int64_t[]){2, 3}, 2, NULL, 0);
    float b[6] = {0};
    ValId cb = ut_const(f3->g, IR_DT_F32, 2, (int64_t[]){2, 3}, b);
    ir_add_output(f3->g, ut_onnx_op(f3->g, "Add", 13, (ValId[]){y, cb}, 2, NULL, 0));
    po = f3->opt;
    assert_false(pass_run_pipeline(f3->g, &po));
    assert_true(ut_has_msg(&f3->d, "dynamic shape input 'v' (a graph input: specialise it "
                                   "with --bind)"));
    ut_fx_free(f3);

    UtFx *f2 = ut_fx_new();
    float x[6];
    ut_fill(x, 6, 1.0f, 0.0f);
    y = rs_graph(f2, "Reshape", 2, (int64_t[]){2, 3}, 2, NULL, 0);
    ir_set_name(f2->g, y, "r");
    ValId two = ut_const(f2->g, IR_DT_F32, 0, NULL, (float[]){2.0f});
    z = ut_onnx_op(f2->g, "Mul", 13, (ValId[]){y, two}, 2, NULL, 0);
    ir_set_name(f2->g, z, "y");
    Rs r;
    rs_open(f2, z, &r);
    assert_int_equal(rs_run(&r, x, (int64_t[]){3, -1}, 2, (int64_t[]){3, 2}), 6);
    for (int i = 0; i < 6; i++)
        assert_true(r.out[i] == 2 * x[i]);
    rs_close(&r);
    ut_fx_free(f2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reshape, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_squeeze_unsqueeze, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_reduce, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_trilu_cumsum, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_slice_pad, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_topk_range, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_resize, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_affine_grid, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_shaped_verifier, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_shape_folds, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_refused_use, ut_setup, ut_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
