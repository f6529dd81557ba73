/* test_dtypes.c: unit tests of dtype legalisation: the narrow-type conversions
 * (schemas/dtconv.h, runtime/rt_fpconv.c), constants narrowed for the device
 * (passes/devtype.c), the bundle-edge conversions (runtime/rt_io.c), and whole graphs
 * on float64 / unsigned / float16 / bfloat16 / float8 / int4 data compiled with the
 * full pipeline and run on the emulator against C reference values.
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
#include "passes/decompose/dec.h"
#include "dtconv.h"
#include "frontend/fe.h"
#include "ir.h"
#include "passes/plan/plan.h"
#include "passes/pass.h"
#include "rt_exec.h"
#include "rt_io.h"
#include "spyrt.h"
#include "unit_util.h"

static const IrOrigin O = {"n", "Test", NULL};

/* ---- conversions ------------------------------------------------------------------ */

/* Known float8/float4 encodings, rounding and overflow in both saturation modes. */
static void test_narrow_encode(void **st)
{
    (void)st;
    assert_int_equal(spy_f32_to_narrow(448.0f, SPY_DT_F8E4M3FN, true), 0x7e);
    assert_int_equal(spy_f32_to_narrow(464.0f, SPY_DT_F8E4M3FN, false), 0x7e); /* tie: even */
    assert_int_equal(spy_f32_to_narrow(470.0f, SPY_DT_F8E4M3FN, false), 0x7f); /* NaN */
    assert_int_equal(spy_f32_to_narrow(470.0f, SPY_DT_F8E4M3FN, true), 0x7e);
    assert_int_equal(spy_f32_to_narrow(-INFINITY, SPY_DT_F8E4M3FN, true), 0xfe);
    assert_int_equal(spy_f32_to_narrow(-0.0f, SPY_DT_F8E4M3FN, true), 0x80);
    assert_int_equal(spy_f32_to_narrow(-0.0f, SPY_DT_F8E4M3FNUZ, true), 0x00);
    assert_int_equal(spy_f32_to_narrow(1e6f, SPY_DT_F8E5M2, false), 0x7c);     /* inf */
    assert_int_equal(spy_f32_to_narrow(1e6f, SPY_DT_F8E5M2, true), 0x7b);      /* 57344 */
    assert_int_equal(spy_f32_to_narrow(1e6f, SPY_DT_F8E5M2FNUZ, false), 0x80); /* NaN */
    assert_int_equal(spy_f32_to_narrow(NAN, SPY_DT_F8E5M2FNUZ, true), 0x80);
    assert_int_equal(spy_f32_to_narrow(0.25f, SPY_DT_F4E2M1, true), 0x0);      /* tie: 0 */
    assert_int_equal(spy_f32_to_narrow(-3.5f, SPY_DT_F4E2M1, true), 0xe);      /* -4 */
    assert_int_equal(spy_f32_to_narrow(1e6f, SPY_DT_F4E2M1, false), 0x7);      /* 6 */
    assert_true(spy_narrow_to_f32(0x7e, SPY_DT_F8E4M3FN) == 448.0f);
    assert_true(spy_narrow_to_f32(0x01, SPY_DT_F8E4M3FN) == ldexpf(1, -9));  /* subnormal */
    assert_true(spy_narrow_to_f32(0x7c, SPY_DT_F8E5M2) == INFINITY);
    assert_true(isnan(spy_narrow_to_f32(0x80, SPY_DT_F8E4M3FNUZ)));
    assert_true(spy_narrow_to_f32(0xf, SPY_DT_F4E2M1) == -6.0f);
    assert_int_equal(spy_f32_to_narrow(-1.0f, SPY_DT_F8E8M0, true), 127);     /* 2^0 */
    assert_int_equal(spy_f32_to_narrow(1.5f, SPY_DT_F8E8M0, true), 128);      /* up */
    assert_int_equal(spy_f32_to_narrow(3.0e38f, SPY_DT_F8E8M0, true), 254);
    assert_int_equal(spy_f32_to_narrow(3.0e38f, SPY_DT_F8E8M0, false), 255);  /* NaN */
    assert_true(spy_narrow_to_f32(0, SPY_DT_F8E8M0) == ldexpf(1, -127));
}

/* Every non-NaN code of every narrow float decodes and re-encodes to itself. */
static void test_narrow_roundtrip(void **st)
{
    (void)st;
    const int dts[] = {SPY_DT_F8E4M3FN, SPY_DT_F8E4M3FNUZ, SPY_DT_F8E5M2, SPY_DT_F8E5M2FNUZ,
                       SPY_DT_F4E2M1};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        int n = dts[k] == SPY_DT_F4E2M1 ? 16 : 256;
        for (int v = 0; v < n; v++) {
            float f = spy_narrow_to_f32((uint8_t)v, dts[k]);
            if (isnan(f) || isinf(f))
                continue;
            if (spy_f32_to_narrow(f, dts[k], false) != v)
                fail_msg("dtype %d code 0x%02x -> %g does not come back", dts[k], v, f);
        }
    }
}

/* 4- and 2-bit integers wrap (two's complement), as ONNX casts to them. */
static void test_subbyte_wrap(void **st)
{
    (void)st;
    assert_int_equal(spy_wrap_subbyte(-9, SPY_DT_I4), 7);
    assert_int_equal(spy_wrap_subbyte(8, SPY_DT_I4), -8);
    assert_int_equal(spy_wrap_subbyte(-9, SPY_DT_U4), 7);
    assert_int_equal(spy_wrap_subbyte(3, SPY_DT_I2), -1);
    assert_int_equal(spy_wrap_subbyte(-3, SPY_DT_U2), 1);
}

/* float16 and bfloat16: every code round-trips; ties and subnormals round to even. */
static void test_half_conversions(void **st)
{
    (void)st;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = rt_f16_to_f32((uint16_t)h);
        if (!isnan(f))
            assert_int_equal(rt_f32_to_f16(f), h);
        else
            assert_true((rt_f32_to_f16(f) & 0x7c00) == 0x7c00 && (rt_f32_to_f16(f) & 0x3ff));
        float b = rt_bf16_to_f32((uint16_t)h);
        if (!isnan(b))
            assert_int_equal(rt_f32_to_bf16(b), h);
    }
    /* the row conversion (VEC CAST of a contiguous float16 row) gives the same bits */
    static uint16_t all[65536];
    static float row[65536];
    for (uint32_t h = 0; h < 65536; h++)
        all[h] = (uint16_t)h;
    rt_f16_to_f32_n(row, (const uint8_t *)all, 65536);
    for (uint32_t h = 0; h < 65536; h++) {
        float f = rt_f16_to_f32((uint16_t)h);
        assert_memory_equal(&row[h], &f, 4);
    }
    assert_int_equal(rt_f32_to_f16(1.0f + ldexpf(1, -11)), 0x3c00);          /* tie: even */
    assert_int_equal(rt_f32_to_f16(1.0f + 3 * ldexpf(1, -11)), 0x3c02);      /* tie: even */
    assert_int_equal(rt_f32_to_f16(ldexpf(1, -25)), 0x0000);                 /* tie: 0 */
    assert_int_equal(rt_f32_to_f16(ldexpf(3, -25)), 0x0002);                 /* tie: even */
    assert_int_equal(rt_f32_to_f16(65520.0f), 0x7c00);                       /* overflow */
    assert_int_equal(rt_f32_to_f16(65519.0f), 0x7bff);
    assert_int_equal(rt_f32_to_bf16(1.0f + ldexpf(1, -8)), 0x3f80);          /* tie: even */
}

/* Constants narrowed for the device, with the int32 range check. */
static void test_const_narrowing(void **st)
{
    (void)st;
    double d[2] = {0.1, -3e38};
    float f;
    int64_t x = 0;
    assert_true(pass_dev_elem(IR_DT_F64, d, 1, &f, &x));
    assert_true(f == (float)-3e38);
    uint16_t u16 = 65535;
    int32_t y;
    assert_true(pass_dev_elem(IR_DT_U16, &u16, 0, &y, &x));
    assert_int_equal(y, 65535);
    uint32_t u32[2] = {7, 0x80000000u};
    assert_true(pass_dev_elem(IR_DT_U32, u32, 0, &y, &x));
    assert_int_equal(y, 7);
    assert_false(pass_dev_elem(IR_DT_U32, u32, 1, &y, &x));
    assert_int_equal(x, 2147483648LL);
    uint64_t u64 = UINT64_MAX;
    assert_false(pass_dev_elem(IR_DT_U64, &u64, 0, &y, &x));
    assert_int_equal(pass_dev_dtype(IR_DT_F64), ISA_DT_F32);
    assert_int_equal(pass_dev_dtype(IR_DT_U64), ISA_DT_I32);
    assert_int_equal(pass_dev_esize(IR_DT_I4), 1);
    assert_false(pass_dtype_computable(IR_DT_F8E5M2));
}

/* Bundle-edge conversions: range checks on inputs, widening of outputs. */
static void test_edge(void **st)
{
    (void)st;
    size_t bad = 0;
    int64_t val = 0;
    double d[3] = {1.5, -2.0, 1e300};
    float f[3];
    assert_false(rt_io_narrow(11, ISA_DT_F32, d, f, 3, &bad, &val));
    assert_int_equal(bad, 2);
    char msg[64];
    rt_io_format(11, d, 2, msg, sizeof msg);
    assert_string_equal(msg, "1.0000000000000001e+300");
    double inf = INFINITY;
    assert_true(rt_io_narrow(11, ISA_DT_F32, &inf, f, 1, &bad, &val));
    assert_true(isinf(f[0]));
    uint32_t u[2] = {5, 3000000000u};
    int32_t i32[2];
    assert_false(rt_io_narrow(12, ISA_DT_I32, u, i32, 2, &bad, &val));
    assert_int_equal(bad, 1);
    assert_int_equal(val, 3000000000LL);
    int8_t i4[3] = {-8, 7, 8};
    int8_t dev[3];
    assert_true(rt_io_narrow(SPY_DT_I4, SPY_DT_I4, i4, dev, 2, &bad, &val));
    assert_false(rt_io_narrow(SPY_DT_I4, SPY_DT_I4, i4, dev, 3, &bad, &val));
    assert_int_equal(val, 8);
    int32_t neg = -1;
    uint64_t w;
    rt_io_widen(13, ISA_DT_I32, &neg, &w, 1);
    assert_true(w == UINT64_MAX);                /* two's complement: 0 - 1 wraps */
    uint16_t w16;
    int32_t big = 65537;
    rt_io_widen(4, ISA_DT_I32, &big, &w16, 1);
    assert_int_equal(w16, 1);
}

/* ONNX tensor files pack 4-bit types two per byte (first element in the low nibble);
 * host tensors hold one element per byte. Write, check the packed bytes, read back. */
static void test_packed_files(void **st)
{
    (void)st;
    char dir[256], path[300];
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof dir, "%s/spyrec_dt_XXXXXX", base);
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/i4.pb", dir);
    int8_t v[5] = {-8, 7, -1, 0, 3};
    FeTensor t = {.name = "x", .dtype = IR_DT_I4, .rank = 1, .dims = {5}, .data = v,
                  .nbytes = 5};
    char err[256];
    assert_true(fe_tensor_write(path, &t, 0, err, sizeof err));
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    uint8_t raw[256];
    size_t n = fread(raw, 1, sizeof raw, fp);
    fclose(fp);
    const uint8_t packed[3] = {0x78, 0x0f, 0x03};      /* (7<<4)|8, (0<<4)|f, 3 */
    bool found = false;
    for (size_t i = 0; i + 3 <= n && !found; i++)
        found = raw[i] == 3 && i + 4 <= n && memcmp(raw + i + 1, packed, 3) == 0;
    assert_true(found);                                 /* raw_data: length 3 + bytes */
    FeTensor r;
    assert_true(fe_tensor_read(path, &r, err, sizeof err));
    assert_int_equal(r.dtype, IR_DT_I4);
    assert_int_equal(r.nbytes, 5);
    assert_memory_equal(r.data, v, 5);
    fe_tensor_free(&r);
    remove(path);
    remove(dir);
}

/* ---- whole graphs ----------------------------------------------------------------- */

/* float16: every operator computes in float32 and rounds its result once. */
static void test_f16_graph(void **st)
{
    (void)st;
    enum { N = 300 };
    UtFx f;
    ut_fx_begin(&f);
    uint16_t x[N], y[N], want[N];
    for (int i = 0; i < N; i++) {
        x[i] = rt_f32_to_f16((float)(i - 150) / 37.0f);
        float e = rt_f16_to_f32(rt_f32_to_f16(expf(rt_f16_to_f32(x[i]))));
        float p = rt_f16_to_f32(rt_f32_to_f16(e * rt_f16_to_f32(x[i])));
        want[i] = rt_f32_to_f16(p + 1.0f);
    }
    IrType t = ut_vec(IR_DT_F16, N);
    ValId a = ir_add_input(f.g, "x", &t);
    uint16_t one = rt_f32_to_f16(1.0f);
    IrType st16 = {.dtype = IR_DT_F16, .rank = 0};
    ValId c1 = ir_add_const(f.g, "one", &st16, &one);
    ValId e = ir_unary(f.g, IR_UN_EXP, a, &O);
    ValId p = ir_binary(f.g, IR_BIN_MUL, e, a, &O);
    ir_add_output(f.g, ir_binary(f.g, IR_BIN_ADD, p, c1, &O));
    char err[256];
    const void *in[1] = {x};
    void *out[1] = {y};
    assert_int_equal(ut_compile_run(f.g, in, out, err, sizeof err), SPY_OK);
    for (int i = 0; i < N; i++)
        if (y[i] != want[i])
            fail_msg("element %d: got 0x%04x, want 0x%04x", i, y[i], want[i]);
    ut_fx_end(&f);
}

/* bfloat16 matmul: float32 accumulation, one rounding of each result. */
static void test_bf16_matmul(void **st)
{
    (void)st;
    enum { M = 5, K = 40, N = 7 };
    UtFx f;
    ut_fx_begin(&f);
    uint16_t a[M * K], b[K * N], y[M * N], want[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = rt_f32_to_bf16((float)((i * 7) % 23 - 11) / 8.0f);
    for (int i = 0; i < K * N; i++)
        b[i] = rt_f32_to_bf16((float)((i * 5) % 19 - 9) / 16.0f);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float s = 0;
            for (int k = 0; k < K; k++)
                s += rt_bf16_to_f32(a[m * K + k]) * rt_bf16_to_f32(b[k * N + n]);
            want[m * N + n] = rt_f32_to_bf16(s);  /* exact sums: order does not matter */
        }
    IrType ta = {.dtype = IR_DT_BF16, .rank = 2, .dims = {M, K}};
    IrType tb = {.dtype = IR_DT_BF16, .rank = 2, .dims = {K, N}};
    ValId va = ir_add_input(f.g, "a", &ta);
    ValId vb = ir_add_const(f.g, "b", &tb, b);
    ir_add_output(f.g, ir_matmul(f.g, va, vb, &O));
    char err[256];
    const void *in[1] = {a};
    void *out[1] = {y};
    assert_int_equal(ut_compile_run(f.g, in, out, err, sizeof err), SPY_OK);
    assert_memory_equal(y, want, sizeof want);
    ut_fx_end(&f);
}

/* float64 data computes as float32; constants are narrowed at compile time. */
static void test_f64_graph(void **st)
{
    (void)st;
    UtFx f;
    ut_fx_begin(&f);
    double x[4] = {1.0, -2.5, 1e-3, 3e10}, c[4] = {0.5, 0.25, 1e-3, -1e10}, y[4];
    IrType t = ut_vec(IR_DT_F64, 4);
    ValId a = ir_add_input(f.g, "x", &t);
    ir_add_output(f.g, ir_binary(f.g, IR_BIN_MUL, a, ir_add_const(f.g, "c", &t, c), &O));
    char err[256];
    const void *in[1] = {x};
    void *out[1] = {y};
    assert_int_equal(ut_compile_run(f.g, in, out, err, sizeof err), SPY_OK);
    for (int i = 0; i < 4; i++)
        assert_true(fabs(y[i] - x[i] * c[i]) <= 1e-6 * fabs(x[i] * c[i]));
    ut_fx_end(&f);
}

/* uint32 arithmetic on the device's int32, and the run-time range error. */
static void test_u32_graph(void **st)
{
    (void)st;
    UtFx f;
    ut_fx_begin(&f);
    uint32_t x[3] = {1, 70000, 2147483647u}, c[3] = {3, 2, 0}, y[3];
    IrType t = ut_vec(IR_DT_U32, 3);
    ValId a = ir_add_input(f.g, "x", &t);
    ir_add_output(f.g, ir_binary(f.g, IR_BIN_ADD, a, ir_add_const(f.g, "c", &t, c), &O));
    char err[256];
    const void *in[1] = {x};
    void *out[1] = {y};
    assert_int_equal(ut_compile_run(f.g, in, out, err, sizeof err), SPY_OK);
    assert_int_equal(y[0], 4);
    assert_int_equal(y[1], 70002);
    assert_int_equal(y[2], 2147483647u);
    ut_fx_end(&f);

    ut_fx_begin(&f);
    a = ir_add_input(f.g, "x", &t);
    ir_add_output(f.g, ir_binary(f.g, IR_BIN_ADD, a, ir_add_const(f.g, "c", &t, c), &O));
    x[1] = 3000000000u;
    assert_int_equal(ut_compile_run(f.g, in, out, err, sizeof err), SPY_E_RUNTIME);
    assert_non_null(strstr(err, "input 'x' element 1: value 3000000000 does not fit"));
    ut_fx_end(&f);
}

/* CAST to float8 with and without saturation, from float8, and to int4. */
static void test_narrow_casts(void **st)
{
    (void)st;
    UtFx f;
    ut_fx_begin(&f);
    float x[6] = {1.0f, 470.0f, -1e9f, 0.3f, -7.6f, 9.0f};
    uint8_t sat[6], nosat[6];
    int8_t i4[6];
    float back[6];
    IrType t = ut_vec(IR_DT_F32, 6);
    ValId a = ir_add_input(f.g, "x", &t);
    IrAttr s0[2] = {ir_attr_int("to", IR_DT_F8E4M3FN), ir_attr_int("saturate", 0)};
    NodeId n0 = ir_add_node(f.g, IR_OP_CAST, &a, 1, s0, 2, &O);
    ValId q = ir_cast(f.g, a, IR_DT_F8E5M2, &O);
    ir_add_output(f.g, ir_cast(f.g, a, IR_DT_F8E4M3FN, &O));
    ir_add_output(f.g, ir_node(f.g, n0)->out[0]);
    ir_add_output(f.g, ir_cast(f.g, a, IR_DT_I4, &O));
    ir_add_output(f.g, ir_cast(f.g, q, IR_DT_F32, &O));
    char err[256];
    const void *in[1] = {x};
    void *out[4] = {sat, nosat, i4, back};
    assert_int_equal(ut_compile_run(f.g, in, out, err, sizeof err), SPY_OK);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(sat[i], spy_f32_to_narrow(x[i], SPY_DT_F8E4M3FN, true));
        assert_int_equal(nosat[i], spy_f32_to_narrow(x[i], SPY_DT_F8E4M3FN, false));
        assert_int_equal(i4[i], spy_wrap_subbyte((int32_t)x[i], SPY_DT_I4));
        float r = spy_narrow_to_f32(spy_f32_to_narrow(x[i], SPY_DT_F8E5M2, true),
                                    SPY_DT_F8E5M2);
        assert_true(back[i] == r);
    }
    assert_int_equal(nosat[1], 0x7f);   /* 470 overflows e4m3fn: NaN */
    assert_int_equal(i4[5], -7);        /* 9 wraps */
    ut_fx_end(&f);
}

/* A frontend operator on bfloat16 rounds once: Celu(-0.5) in float32 is -0.4424, which
 * rounds to -0.443359375 (per-core-op rounding would give -0.4453125). */
static void test_group_rounding(void **st)
{
    (void)st;
    UtFx f;
    ut_fx_begin(&f);
    uint16_t x[2] = {rt_f32_to_bf16(-0.5f), rt_f32_to_bf16(3.0f)}, y[2];
    IrType t = ut_vec(IR_DT_BF16, 2);
    ValId a = ir_add_input(f.g, "x", &t);
    IrForeign fo = {"Celu", "", 22};
    IrAttr al = ir_attr_float("alpha", 2.0);
    IrOrigin o = {"celu", "Celu", NULL};
    NodeId n = ir_add_foreign(f.g, &fo, &a, 1, 1, &al, 1, &o);
    ir_val(f.g, ir_node(f.g, n)->out[0])->type = t;
    ir_add_output(f.g, ir_node(f.g, n)->out[0]);
    char err[256];
    const void *in[1] = {x};
    void *out[1] = {y};
    assert_int_equal(ut_compile_run(f.g, in, out, err, sizeof err), SPY_OK);
    assert_true(rt_bf16_to_f32(y[0]) == -0.443359375f);
    assert_true(rt_bf16_to_f32(y[1]) == 3.0f);
    ut_fx_end(&f);
}

/* A lowered operator that concatenates a computed half value with an input: the
 * computed part stays float32 inside the group, so the input is widened too, and the
 * result is rounded once. */
static void test_group_concat(void **st)
{
    (void)st;
    enum { N = 20 };
    UtFx f;
    ut_fx_begin(&f);
    uint16_t a[N], b[N], y[2 * N];
    for (int i = 0; i < N; i++) {
        a[i] = rt_f32_to_f16((float)i / 7.0f - 1.0f);
        b[i] = rt_f32_to_f16((float)i * 3.0f);
    }
    IrType t = ut_vec(IR_DT_F16, N);
    ValId va = ir_add_input(f.g, "a", &t), vb = ir_add_input(f.g, "b", &t);
    uint32_t first = f.g->nnodes;
    ValId first_val = f.g->nvals;
    ValId e = ir_unary(f.g, IR_UN_EXP, va, &O);
    IrAttr ax = ir_attr_int("axis", 0);
    ValId cin[2] = {e, vb};
    NodeId cn = ir_add_node(f.g, IR_OP_CONCAT, cin, 2, &ax, 1, &O);
    ValId out = ir_node(f.g, cn)->out[0];
    pass_halfwiden_group(f.g, first, first_val, &out, 1);
    assert_false(ir_failed(f.g));
    assert_int_equal(ir_vtype(f.g, out)->dtype, IR_DT_F16);
    ir_add_output(f.g, out);
    assert_true(ir_verify(f.g, "test"));
    char err[256];
    const void *in[2] = {a, b};
    void *outs[1] = {y};
    assert_int_equal(ut_compile_run(f.g, in, outs, err, sizeof err), SPY_OK);
    for (int i = 0; i < N; i++) {
        assert_int_equal(y[i], rt_f32_to_f16(expf(rt_f16_to_f32(a[i]))));
        assert_int_equal(y[N + i], b[i]);
    }
    ut_fx_end(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_narrow_encode),   cmocka_unit_test(test_narrow_roundtrip),
        cmocka_unit_test(test_subbyte_wrap),    cmocka_unit_test(test_half_conversions),
        cmocka_unit_test(test_const_narrowing), cmocka_unit_test(test_edge),
        cmocka_unit_test(test_f16_graph),       cmocka_unit_test(test_bf16_matmul),
        cmocka_unit_test(test_f64_graph),       cmocka_unit_test(test_u32_graph),
        cmocka_unit_test(test_narrow_casts),    cmocka_unit_test(test_group_rounding),
        cmocka_unit_test(test_group_concat),    cmocka_unit_test(test_packed_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
