/* test_ir.c: unit tests of the IR library (ir/): dtypes, builders, shape inference of
 * every core op, the reference evaluator, folding, rewriting, verifier, text round trip,
 * diagnostics and out-of-memory handling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "fe.h"
#include "ir.h"
#include "pass.h"
#include "unit_util.h"

/* ---- helpers ---- */

#define NI(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define T(dt, ...) ut_type(dt, NI(__VA_ARGS__), (int64_t[]){__VA_ARGS__})
#define T0(dt) ut_type(dt, 0, NULL)

static ValId input(IrGraph *g, IrType t) { return ir_add_input(g, "x", &t); }

static const IrOrigin O = {"n1", "Test", NULL};

/* Add a core node with attributes and return its first output. */
static ValId node(IrGraph *g, IrOp op, const ValId *in, int nin, const IrAttr *a, int na)
{
    NodeId id = ir_add_node(g, op, in, nin, a, na, &O);
    return ir_node(g, id)->out[0];
}

/* Node with a single input. */
static ValId node1(IrGraph *g, IrOp op, ValId x, const IrAttr *a, int na)
{
    return node(g, op, &x, 1, a, na);
}

/* Assert v has type t. */
static void check_type(IrGraph *g, ValId v, IrType t)
{
    const IrType *got = ir_vtype(g, v);
    assert_int_equal(got->dtype, t.dtype);
    assert_int_equal(got->rank, t.rank);
    for (int i = 0; i < t.rank; i++)
        assert_int_equal(got->dims[i], t.dims[i]);
}

/* Assert the graph failed with a message containing frag (and the node prefix). */
static void check_error(UtFx *f, const char *frag)
{
    assert_true(ir_failed(f->g));
    assert_true(f->d.nmsgs > 0);
    const char *m = f->d.msgs[f->d.nmsgs - 1];
    if (!strstr(m, frag) || !strstr(m, "test.onnx: node 'n1' (Test): "))
        fail_msg("message '%s' lacks '%s'", m, frag);
}

/* Reset the diagnostics between sub-cases. */
static void clear(UtFx *f)
{
    ir_diag_free(&f->d);
    f->d.nerrors = 0;
}

static ValId cf32(IrGraph *g, IrType t, const float *v) { return ir_add_const(g, "c", &t, v); }
static ValId ci64(IrGraph *g, IrType t, const int64_t *v) { return ir_add_const(g, "c", &t, v); }

/* Data of value v, which must be a folded constant. */
static const void *folded(IrGraph *g, ValId v)
{
    assert_int_equal(ir_val(g, v)->kind, IR_VAL_CONST);
    assert_non_null(ir_val(g, v)->data);
    return ir_val(g, v)->data;
}

static void check_f32s(IrGraph *g, ValId v, const float *want, int n)
{
    const float *got = folded(g, v);
    for (int i = 0; i < n; i++)
        if (!(fabsf(got[i] - want[i]) <= 1e-5f * (1 + fabsf(want[i]))) &&
            !(isnan(got[i]) && isnan(want[i])))
            fail_msg("element %d: got %.9g, want %.9g", i, got[i], want[i]);
}

static void check_i64s(IrGraph *g, ValId v, const int64_t *want, int n)
{
    const int64_t *got = folded(g, v);
    for (int i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("element %d: got %lld, want %lld", i, (long long)got[i], (long long)want[i]);
}

#define A_INTS(g, name, ...) ir_attr_ints(g, name, (int64_t[]){__VA_ARGS__}, NI(__VA_ARGS__))

/* ---- dtypes and tables ---- */

static void test_dtypes(void **state)
{
    (void)state;
    assert_int_equal(ir_dtype_size(IR_DT_F32), 4);
    assert_int_equal(ir_dtype_size(IR_DT_BF16), 2);
    assert_int_equal(ir_dtype_size(IR_DT_STRING), 0);
    assert_string_equal(ir_dtype_name(IR_DT_I64), "i64");
    assert_int_equal(ir_dtype_from_name("u16"), IR_DT_U16);
    assert_int_equal(ir_dtype_from_name("nope"), IR_DT_UNDEF);
    assert_true(ir_dtype_is_float(IR_DT_F16));
    assert_false(ir_dtype_is_int(IR_DT_BOOL));
    assert_true(ir_dtype_is_int(IR_DT_U64));
    assert_int_equal(ir_op_from_name("conv"), IR_OP_CONV);
    assert_int_equal(ir_op_from_name("Conv"), IR_OP_COUNT);
    assert_string_equal(ir_op_info[IR_OP_CONCAT].name, "concat");
    assert_int_equal(ir_op_info[IR_OP_CONCAT].max_in, -1);
    assert_string_equal(ir_unfn_name(IR_UN_RELU), "relu");
    assert_int_equal(ir_binfn_from_name("atan2"), IR_BIN_ATAN2);
    assert_int_equal(ir_redfn_from_name("prod"), IR_RED_PROD);
    assert_int_equal(ir_unfn_from_name("bogus"), -1);
    IrType big = T(IR_DT_F32, INT64_MAX / 2, 4);
    assert_int_equal(ir_type_numel(&big), -1);
    assert_true(ir_type_bytes(&big) == SIZE_MAX);
    IrType s = T0(IR_DT_F64);
    assert_int_equal(ir_type_numel(&s), 1);
    assert_int_equal(ir_type_bytes(&s), 8);
}

/* ---- shape inference ---- */

static void test_infer_elementwise(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    ValId a = input(g, T(IR_DT_F32, 2, 1, 4)), b = input(g, T(IR_DT_F32, 3, 1));
    check_type(g, ir_binary(g, IR_BIN_ADD, a, b, &O), T(IR_DT_F32, 2, 3, 4));
    check_type(g, ir_binary(g, IR_BIN_LT, a, b, &O), T(IR_DT_BOOL, 2, 3, 4));
    check_type(g, ir_unary(g, IR_UN_EXP, a, &O), T(IR_DT_F32, 2, 1, 4));
    check_type(g, ir_unary(g, IR_UN_ISNAN, a, &O), T(IR_DT_BOOL, 2, 1, 4));
    ValId c = input(g, T(IR_DT_BOOL, 4));
    check_type(g, ir_select(g, c, a, b, &O), T(IR_DT_F32, 2, 3, 4));
    check_type(g, ir_cast(g, a, IR_DT_I8, &O), T(IR_DT_I8, 2, 1, 4));
    ValId i = input(g, T(IR_DT_I32, 4));
    check_type(g, ir_binary(g, IR_BIN_AND, i, i, &O), T(IR_DT_I32, 4));
    check_type(g, ir_binary(g, IR_BIN_OR, c, c, &O), T(IR_DT_BOOL, 4));
    check_type(g, ir_unary(g, IR_UN_NOT, c, &O), T(IR_DT_BOOL, 4));
    assert_false(ir_failed(g));

    ValId d = input(g, T(IR_DT_F32, 3, 5));
    IrAttr fn = ir_attr_int("fn", IR_BIN_ADD);
    node(g, IR_OP_BINARY, (ValId[]){a, d}, 2, &fn, 1);
    check_error(f, "cannot be broadcast");
    clear(f);
    node(g, IR_OP_BINARY, (ValId[]){a, i}, 2, &fn, 1);
    check_error(f, "different dtypes");
    clear(f);
    IrAttr ex = ir_attr_int("fn", IR_UN_EXP);
    ValId out = node1(g, IR_OP_UNARY, i, &ex, 1);
    check_error(f, "not defined for i32");
    assert_int_equal(ir_vtype(g, out)->dtype, IR_DT_UNDEF);
    clear(f);
    IrAttr badfn = ir_attr_int("fn", 999);
    node1(g, IR_OP_UNARY, a, &badfn, 1);
    check_error(f, "out of range");
    clear(f);
    node(g, IR_OP_SELECT, (ValId[]){a, a, a}, 3, NULL, 0);
    check_error(f, "condition must be bool");
    clear(f);
    IrAttr to = ir_attr_int("to", IR_DT_STRING);
    node1(g, IR_OP_CAST, a, &to, 1);
    check_error(f, "cannot cast");
    clear(f);
    IrAttr sfn = ir_attr_int("fn", IR_BIN_SHL);
    node(g, IR_OP_BINARY, (ValId[]){a, a}, 2, &sfn, 1);
    check_error(f, "shl is not defined for f32");
}

static void test_infer_reduce(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    ValId x = input(g, T(IR_DT_F32, 2, 3, 4));
    check_type(g, ir_reduce(g, IR_RED_SUM, x, (int64_t[]){-1, 0}, 2, true, &O),
               T(IR_DT_F32, 1, 3, 1));
    check_type(g, ir_reduce(g, IR_RED_MAX, x, (int64_t[]){1}, 1, false, &O),
               T(IR_DT_F32, 2, 4));
    IrAttr all[2] = {ir_attr_int("fn", IR_RED_SUM), ir_attr_int("keepdims", 0)};
    check_type(g, node1(g, IR_OP_REDUCE, x, all, 2), T0(IR_DT_F32));
    IrAttr arg[3] = {ir_attr_int("fn", IR_RED_MAX), ir_attr_int("axis", 1),
                     ir_attr_int("keepdims", 0)};
    check_type(g, node1(g, IR_OP_ARGREDUCE, x, arg, 3), T(IR_DT_I64, 2, 4));
    IrAttr cs[1] = {ir_attr_int("axis", 2)};
    check_type(g, node1(g, IR_OP_CUMSUM, x, cs, 1), T(IR_DT_F32, 2, 3, 4));
    ValId img = input(g, T(IR_DT_F32, 1, 2, 9, 10));
    IrAttr w[4] = {ir_attr_int("fn", IR_RED_MAX), A_INTS(g, "kernel", 3, 2),
                   A_INTS(g, "strides", 2, 2), A_INTS(g, "dilations", 2, 1)};
    check_type(g, node1(g, IR_OP_WINDOW, img, w, 4), T(IR_DT_F32, 1, 2, 3, 5));
    assert_false(ir_failed(g));

    IrAttr bad[2] = {ir_attr_int("fn", IR_RED_SUM), A_INTS(g, "axes", 3)};
    node1(g, IR_OP_REDUCE, x, bad, 2);
    check_error(f, "axis 3 is out of range");
    clear(f);
    IrAttr uns[2] = {ir_attr_int("fn", IR_RED_SUM), A_INTS(g, "axes", 1, 0)};
    node1(g, IR_OP_REDUCE, x, uns, 2);
    check_error(f, "sorted");
    clear(f);
    IrAttr argb[2] = {ir_attr_int("fn", IR_RED_SUM), ir_attr_int("axis", 0)};
    node1(g, IR_OP_ARGREDUCE, x, argb, 2);
    check_error(f, "max or min");
    clear(f);
    IrAttr wb[2] = {ir_attr_int("fn", IR_RED_MAX), A_INTS(g, "kernel", 11, 1)};
    node1(g, IR_OP_WINDOW, img, wb, 2);
    check_error(f, "larger than the input");
    clear(f);
    IrAttr ws[3] = {ir_attr_int("fn", IR_RED_MAX), A_INTS(g, "kernel", 1, 1),
                    A_INTS(g, "strides", 0, 1)};
    node1(g, IR_OP_WINDOW, img, ws, 3);
    check_error(f, "must all be >= 1");
    clear(f);
    IrAttr csb[1] = {ir_attr_int("axis", 3)};
    node1(g, IR_OP_CUMSUM, x, csb, 1);
    check_error(f, "'axis' = 3 is out of range");
    clear(f);
    IrAttr kind[2] = {ir_attr_int("fn", IR_RED_SUM), ir_attr_float("axes", 1.0)};
    node1(g, IR_OP_REDUCE, x, kind, 2);
    check_error(f, "must be a list of ints");
}

static void test_infer_contract(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    ValId a = input(g, T(IR_DT_F32, 2, 1, 5, 3)), b = input(g, T(IR_DT_F32, 4, 3, 7));
    check_type(g, ir_matmul(g, a, b, &O), T(IR_DT_F32, 2, 4, 5, 7));
    ValId x = input(g, T(IR_DT_F32, 1, 4, 10, 12));
    IrType wt = T(IR_DT_F32, 6, 2, 3, 3);
    ValId w = ir_add_const(g, "w", &wt, NULL);
    IrAttr ca[3] = {A_INTS(g, "strides", 2, 1), A_INTS(g, "dilations", 1, 2),
                    ir_attr_int("group", 2)};
    check_type(g, node(g, IR_OP_CONV, (ValId[]){x, w}, 2, ca, 3), T(IR_DT_F32, 1, 6, 4, 8));
    assert_false(ir_failed(g));

    ValId v = input(g, T(IR_DT_F32, 3));
    ir_matmul(g, v, b, &O);
    check_error(f, "rank >= 2");
    clear(f);
    ValId c = input(g, T(IR_DT_F32, 4, 4, 7));
    ir_matmul(g, a, c, &O);
    check_error(f, "inner dimensions differ");
    clear(f);
    IrAttr g1 = ir_attr_int("group", 1);
    node(g, IR_OP_CONV, (ValId[]){x, w}, 2, &g1, 1);
    check_error(f, "input channels 4 do not match");
    clear(f);
    IrAttr g0 = ir_attr_int("group", 0);
    node(g, IR_OP_CONV, (ValId[]){x, w}, 2, &g0, 1);
    check_error(f, "out of range");
    clear(f);
    IrType bigk = T(IR_DT_F32, 6, 2, 11, 3);
    ValId wk = ir_add_const(g, "wk", &bigk, NULL);
    IrAttr g2 = ir_attr_int("group", 2);
    node(g, IR_OP_CONV, (ValId[]){x, wk}, 2, &g2, 1);
    check_error(f, "larger than the input");
    clear(f);
    IrAttr st[2] = {ir_attr_int("group", 2), A_INTS(g, "strides", 1)};
    node(g, IR_OP_CONV, (ValId[]){x, w}, 2, st, 2);
    check_error(f, "'strides' has 1 entries, expected 2");
}

static void test_infer_movement(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    ValId x = input(g, T(IR_DT_F32, 2, 3, 4));
    check_type(g, ir_reshape(g, x, (int64_t[]){6, 4}, 2, &O), T(IR_DT_F32, 6, 4));
    check_type(g, ir_transpose(g, x, (int64_t[]){2, 0, 1}, &O), T(IR_DT_F32, 4, 2, 3));
    IrAttr sl[3] = {A_INTS(g, "starts", 1, 2, 3), A_INTS(g, "steps", 1, -1, -2),
                    A_INTS(g, "sizes", 1, 3, 2)};
    check_type(g, node1(g, IR_OP_SLICE, x, sl, 3), T(IR_DT_F32, 1, 3, 2));
    IrAttr pd[3] = {A_INTS(g, "pads", 0, 1, -1, 0, 2, 0), A_INTS(g, "interior", 0, 1, 0),
                    ir_attr_float("value", 1.5)};
    check_type(g, node1(g, IR_OP_PAD, x, pd, 3), T(IR_DT_F32, 2, 8, 3));
    ValId y = input(g, T(IR_DT_F32, 2, 5, 4));
    IrAttr ax = ir_attr_int("axis", 1);
    check_type(g, node(g, IR_OP_CONCAT, (ValId[]){x, y, x}, 3, &ax, 1), T(IR_DT_F32, 2, 11, 4));
    ValId idx = input(g, T(IR_DT_I64, 5, 6));
    check_type(g, node(g, IR_OP_GATHER, (ValId[]){x, idx}, 2, &ax, 1),
               T(IR_DT_F32, 2, 5, 6, 4));
    ValId e = input(g, T(IR_DT_F32, 3, 1));
    check_type(g, ir_expand(g, e, (int64_t[]){2, 3, 5}, 3, &O), T(IR_DT_F32, 2, 3, 5));
    assert_false(ir_failed(g));

    ir_reshape(g, x, (int64_t[]){5, 5}, 2, &O);
    check_error(f, "cannot reshape");
    clear(f);
    ir_reshape(g, x, (int64_t[]){-1, 4}, 2, &O);
    check_error(f, "must be resolved");
    clear(f);
    ir_transpose(g, x, (int64_t[]){0, 0, 1}, &O);
    check_error(f, "not a permutation");
    clear(f);
    IrAttr sb[3] = {A_INTS(g, "starts", 0, 0, 3), A_INTS(g, "steps", 1, 1, 1),
                    A_INTS(g, "sizes", 2, 3, 2)};
    node1(g, IR_OP_SLICE, x, sb, 3);
    check_error(f, "leaves the input extent");
    clear(f);
    IrAttr s0[3] = {A_INTS(g, "starts", 0, 0, 0), A_INTS(g, "steps", 1, 0, 1),
                    A_INTS(g, "sizes", 2, 3, 4)};
    node1(g, IR_OP_SLICE, x, s0, 3);
    check_error(f, "step on axis 1 is zero");
    clear(f);
    IrAttr s2[2] = {A_INTS(g, "starts", 0, 0, 0), A_INTS(g, "steps", 1, 1, 1)};
    node1(g, IR_OP_SLICE, x, s2, 2);
    check_error(f, "missing attribute 'sizes'");
    clear(f);
    IrAttr pb[1] = {A_INTS(g, "pads", 0, -5, 0, 0, 0, 0)};
    node1(g, IR_OP_PAD, x, pb, 1);
    check_error(f, "invalid size");
    clear(f);
    ValId z = input(g, T(IR_DT_F32, 3, 5, 4));
    node(g, IR_OP_CONCAT, (ValId[]){x, z}, 2, &ax, 1);
    check_error(f, "does not match");
    clear(f);
    ValId fi = input(g, T(IR_DT_F32, 2));
    node(g, IR_OP_GATHER, (ValId[]){x, fi}, 2, &ax, 1);
    check_error(f, "indices must be i32 or i64");
    clear(f);
    ir_expand(g, e, (int64_t[]){2, 4, 5}, 3, &O);
    check_error(f, "does not broadcast");
    clear(f);
    ir_expand(g, x, (int64_t[]){3, 4}, 2, &O);
    check_error(f, "cannot expand");
}

/* Errors caused by an untyped input are reported once, not at every consumer. */
static void test_infer_no_cascade(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    ValId x = input(g, T(IR_DT_F32, 2, 3));
    ValId bad = ir_reshape(g, x, (int64_t[]){7}, 1, &O);
    assert_int_equal(f->d.nerrors, 1);
    ValId r = ir_unary(g, IR_UN_RELU, bad, &O);
    assert_int_equal(f->d.nerrors, 1);
    assert_int_equal(ir_vtype(g, r)->dtype, IR_DT_UNDEF);
}

/* ---- evaluation (through folding on build) ---- */

static void test_eval_unary(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    g->fold_consts = true;
    ValId r = cf32(g, T(IR_DT_F32, 6), (float[]){0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 2.6f});
    check_f32s(g, ir_unary(g, IR_UN_ROUND, r, &O), (float[]){0, 2, 2, -0.0f, -2, 3}, 6);
    ValId x = cf32(g, T(IR_DT_F32, 4), (float[]){-2, 0, 1, 3});
    check_f32s(g, ir_unary(g, IR_UN_RELU, x, &O), (float[]){0, 0, 1, 3}, 4);
    check_f32s(g, ir_unary(g, IR_UN_EXP, x, &O),
               (float[]){expf(-2), 1, expf(1), expf(3)}, 4);
    check_f32s(g, ir_unary(g, IR_UN_SIGMOID, x, &O),
               (float[]){1 / (1 + expf(2)), 0.5f, 1 / (1 + expf(-1)), 1 / (1 + expf(-3))}, 4);
    check_f32s(g, ir_unary(g, IR_UN_SIGN, x, &O), (float[]){-1, 0, 1, 1}, 4);
    check_f32s(g, ir_unary(g, IR_UN_SOFTPLUS, x, &O),
               (float[]){log1pf(expf(-2)), logf(2), log1pf(expf(1)), log1pf(expf(3))}, 4);
    check_f32s(g, ir_unary(g, IR_UN_RSQRT, cf32(g, T(IR_DT_F32, 1), (float[]){4}), &O),
               (float[]){0.5f}, 1);
    int32_t iv[3] = {-5, 0, INT32_MIN};
    IrType it = T(IR_DT_I32, 3);
    ValId i = ir_add_const(g, "i", &it, iv);
    const int32_t *neg = folded(g, ir_unary(g, IR_UN_NEG, i, &O));
    assert_int_equal(neg[0], 5);
    assert_int_equal(neg[2], INT32_MIN);
    const int32_t *ab = folded(g, ir_unary(g, IR_UN_ABS, i, &O));
    assert_int_equal(ab[0], 5);
    const int32_t *nt = folded(g, ir_unary(g, IR_UN_NOT, i, &O));
    assert_int_equal(nt[1], -1);
    const uint8_t *nan = folded(g, ir_unary(g, IR_UN_ISNAN,
                                            cf32(g, T(IR_DT_F32, 2), (float[]){NAN, 1}), &O));
    assert_int_equal(nan[0], 1);
    assert_int_equal(nan[1], 0);
    assert_false(ir_failed(g));
}

static void test_eval_binary(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    g->fold_consts = true;
    ValId a = ci64(g, T(IR_DT_I64, 4), (int64_t[]){-7, 7, -7, 7});
    ValId b = ci64(g, T(IR_DT_I64, 4), (int64_t[]){2, -3, 3, -2});
    check_i64s(g, ir_binary(g, IR_BIN_DIV, a, b, &O), (int64_t[]){-3, -2, -2, -3}, 4);
    check_i64s(g, ir_binary(g, IR_BIN_MOD, a, b, &O), (int64_t[]){1, -2, 2, -1}, 4);
    check_i64s(g, ir_binary(g, IR_BIN_FMOD, a, b, &O), (int64_t[]){-1, 1, -1, 1}, 4);
    ValId p = ci64(g, T(IR_DT_I64, 3), (int64_t[]){3, 2, -2});
    ValId q = ci64(g, T(IR_DT_I64, 3), (int64_t[]){4, -1, 3});
    check_i64s(g, ir_binary(g, IR_BIN_POW, p, q, &O), (int64_t[]){81, 0, -8}, 3);
    const uint8_t *lt = folded(g, ir_binary(g, IR_BIN_LT, a, b, &O));
    assert_memory_equal(lt, ((uint8_t[]){1, 0, 1, 0}), 4);

    ValId fa = cf32(g, T(IR_DT_F32, 2, 1), (float[]){-7.5f, 1});
    ValId fb = cf32(g, T(IR_DT_F32, 2), (float[]){2, 10});
    check_f32s(g, ir_binary(g, IR_BIN_ADD, fa, fb, &O), (float[]){-5.5f, 2.5f, 3, 11}, 4);
    check_f32s(g, ir_binary(g, IR_BIN_MOD, fa, fb, &O), (float[]){0.5f, 2.5f, 1, 1}, 4);
    check_f32s(g, ir_binary(g, IR_BIN_FMOD, fa, fb, &O), (float[]){-1.5f, -7.5f, 1, 1}, 4);
    check_f32s(g, ir_binary(g, IR_BIN_MAX, fa, cf32(g, T0(IR_DT_F32), (float[]){NAN}), &O),
               (float[]){NAN, NAN}, 2);

    uint8_t uv[2] = {1, 200}, sv[2] = {3, 1};
    IrType ut = T(IR_DT_U8, 2);
    ValId u = ir_add_const(g, "u", &ut, uv), s = ir_add_const(g, "s", &ut, sv);
    const uint8_t *shl = folded(g, ir_binary(g, IR_BIN_SHL, u, s, &O));
    assert_int_equal(shl[0], 8);
    assert_int_equal(shl[1], 144);
    const uint8_t *shr = folded(g, ir_binary(g, IR_BIN_SHR, u, s, &O));
    assert_int_equal(shr[1], 100);
    const uint8_t *ugt = folded(g, ir_binary(g, IR_BIN_GT, u, s, &O));
    assert_int_equal(ugt[1], 1);                      /* 200 > 1 unsigned */

    /* integer division by zero is left for the device (not folded) */
    ValId z = ci64(g, T(IR_DT_I64, 1), (int64_t[]){0});
    ValId dz = ir_binary(g, IR_BIN_DIV, a, z, &O);
    assert_int_equal(ir_val(g, dz)->kind, IR_VAL_ACT);
    assert_false(ir_node(g, ir_val(g, dz)->def)->dead);

    ValId c = ir_add_const(g, "c", &(IrType){IR_DT_BOOL, 1, {2}}, (uint8_t[]){1, 0});
    check_f32s(g, ir_select(g, c, cf32(g, T(IR_DT_F32, 2, 1), (float[]){1, 2}),
                            cf32(g, T0(IR_DT_F32), (float[]){9}), &O),
               (float[]){1, 9, 2, 9}, 4);
    assert_false(ir_failed(g));
}

static void test_eval_cast(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    g->fold_consts = true;
    ValId x = cf32(g, T(IR_DT_F32, 3), (float[]){-1.7f, 2.9f, 0.1f});
    const int32_t *i = folded(g, ir_cast(g, x, IR_DT_I32, &O));
    assert_int_equal(i[0], -1);
    assert_int_equal(i[1], 2);
    const uint8_t *b = folded(g, ir_cast(g, cf32(g, T(IR_DT_F32, 3), (float[]){0, 0.1f, NAN}),
                                         IR_DT_BOOL, &O));
    assert_memory_equal(b, ((uint8_t[]){0, 1, 1}), 3);
    check_f32s(g, ir_cast(g, ci64(g, T(IR_DT_I64, 1), (int64_t[]){16777217}), IR_DT_F32, &O),
               (float[]){16777216.0f}, 1);
    ValId h = ir_cast(g, cf32(g, T(IR_DT_F32, 2), (float[]){1.0f / 3, 65504}), IR_DT_F16, &O);
    check_f32s(g, ir_cast(g, h, IR_DT_F32, &O), (float[]){0.333251953125f, 65504}, 2);
    ValId bf = ir_cast(g, cf32(g, T(IR_DT_F32, 1), (float[]){1.00390625f}), IR_DT_BF16, &O);
    check_f32s(g, ir_cast(g, bf, IR_DT_F32, &O), (float[]){1.0f}, 1);   /* ties to even */
    const int8_t *w = folded(g, ir_cast(g, ci64(g, T(IR_DT_I64, 1), (int64_t[]){300}),
                                        IR_DT_I8, &O));
    assert_int_equal(w[0], 44);
    assert_false(ir_failed(g));
}

static void test_eval_reduce(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    g->fold_consts = true;
    ValId x = cf32(g, T(IR_DT_F32, 2, 3), (float[]){1, 2, 3, 4, 5, 6});
    ValId s = ir_reduce(g, IR_RED_SUM, x, (int64_t[]){1}, 1, true, &O);
    check_type(g, s, T(IR_DT_F32, 2, 1));
    check_f32s(g, s, (float[]){6, 15}, 2);
    check_f32s(g, ir_reduce(g, IR_RED_PROD, x, (int64_t[]){0}, 1, false, &O),
               (float[]){4, 10, 18}, 3);
    check_f32s(g, ir_reduce(g, IR_RED_MIN, x, (int64_t[]){0, 1}, 2, false, &O), (float[]){1}, 1);
    ValId n = cf32(g, T(IR_DT_F32, 3), (float[]){1, NAN, 3});
    check_f32s(g, ir_reduce(g, IR_RED_MAX, n, (int64_t[]){0}, 1, false, &O), (float[]){NAN}, 1);
    ValId i = ci64(g, T(IR_DT_I64, 3), (int64_t[]){-5, 7, 1});
    check_i64s(g, ir_reduce(g, IR_RED_SUM, i, (int64_t[]){0}, 1, false, &O), (int64_t[]){3}, 1);
    check_i64s(g, ir_reduce(g, IR_RED_MAX, i, (int64_t[]){0}, 1, false, &O), (int64_t[]){7}, 1);

    ValId a = cf32(g, T(IR_DT_F32, 2, 3), (float[]){1, 5, 5, 7, 2, 7});
    IrAttr am[3] = {ir_attr_int("fn", IR_RED_MAX), ir_attr_int("axis", 1),
                    ir_attr_int("keepdims", 0)};
    check_i64s(g, node1(g, IR_OP_ARGREDUCE, a, am, 3), (int64_t[]){1, 0}, 2);
    IrAttr al[4] = {am[0], am[1], am[2], ir_attr_int("select_last", 1)};
    check_i64s(g, node1(g, IR_OP_ARGREDUCE, a, al, 4), (int64_t[]){2, 2}, 2);
    IrAttr an[3] = {ir_attr_int("fn", IR_RED_MIN), am[1], am[2]};
    check_i64s(g, node1(g, IR_OP_ARGREDUCE, a, an, 3), (int64_t[]){0, 1}, 2);

    ValId c = cf32(g, T(IR_DT_F32, 4), (float[]){1, 2, 3, 4});
    IrAttr c0[1] = {ir_attr_int("axis", 0)};
    check_f32s(g, node1(g, IR_OP_CUMSUM, c, c0, 1), (float[]){1, 3, 6, 10}, 4);
    IrAttr c1[2] = {c0[0], ir_attr_int("exclusive", 1)};
    check_f32s(g, node1(g, IR_OP_CUMSUM, c, c1, 2), (float[]){0, 1, 3, 6}, 4);
    IrAttr c2[2] = {c0[0], ir_attr_int("reverse", 1)};
    check_f32s(g, node1(g, IR_OP_CUMSUM, c, c2, 2), (float[]){10, 9, 7, 4}, 4);
    IrAttr c3[3] = {c0[0], c1[1], c2[1]};
    check_f32s(g, node1(g, IR_OP_CUMSUM, c, c3, 3), (float[]){9, 7, 4, 0}, 4);
    assert_false(ir_failed(g));
}

static void test_eval_window_contract(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    g->fold_consts = true;
    float img[16];
    for (int i = 0; i < 16; i++)
        img[i] = (float)i;
    ValId x = cf32(g, T(IR_DT_F32, 1, 1, 4, 4), img);
    IrAttr mp[3] = {ir_attr_int("fn", IR_RED_MAX), A_INTS(g, "kernel", 2, 2),
                    A_INTS(g, "strides", 2, 2)};
    check_f32s(g, node1(g, IR_OP_WINDOW, x, mp, 3), (float[]){5, 7, 13, 15}, 4);
    ValId v = cf32(g, T(IR_DT_F32, 5), (float[]){1, 2, 3, 4, 5});
    IrAttr sp[3] = {ir_attr_int("fn", IR_RED_SUM), A_INTS(g, "kernel", 2),
                    A_INTS(g, "dilations", 2)};
    check_f32s(g, node1(g, IR_OP_WINDOW, v, sp, 3), (float[]){4, 6, 8}, 3);

    float av[12];
    for (int i = 0; i < 12; i++)
        av[i] = (float)(i + 1);
    ValId a = cf32(g, T(IR_DT_F32, 2, 2, 3), av);
    ValId b = cf32(g, T(IR_DT_F32, 3, 2), (float[]){1, 0, 0, 1, 1, 1});
    check_f32s(g, ir_matmul(g, a, b, &O), (float[]){4, 5, 10, 11, 16, 17, 22, 23}, 8);
    ValId ia = ci64(g, T(IR_DT_I64, 1, 2), (int64_t[]){3, -4});
    ValId ib = ci64(g, T(IR_DT_I64, 2, 1), (int64_t[]){5, 6});
    check_i64s(g, ir_matmul(g, ia, ib, &O), (int64_t[]){-9}, 1);

    ValId cx = cf32(g, T(IR_DT_F32, 1, 1, 3, 3), (float[]){1, 2, 3, 4, 5, 6, 7, 8, 9});
    ValId cw = cf32(g, T(IR_DT_F32, 1, 1, 2, 2), (float[]){1, 0, 0, 1});
    IrAttr g1 = ir_attr_int("group", 1);
    check_f32s(g, node(g, IR_OP_CONV, (ValId[]){cx, cw}, 2, &g1, 1), (float[]){6, 8, 12, 14}, 4);
    IrAttr sd[2] = {A_INTS(g, "strides", 2, 2), A_INTS(g, "dilations", 2, 2)};
    check_f32s(g, node(g, IR_OP_CONV, (ValId[]){cx, cw}, 2, sd, 2), (float[]){10}, 1);
    ValId gx = cf32(g, T(IR_DT_F32, 1, 2, 1, 1), (float[]){2, 3});
    ValId gw = cf32(g, T(IR_DT_F32, 2, 1, 1, 1), (float[]){10, 100});
    IrAttr g2 = ir_attr_int("group", 2);
    check_f32s(g, node(g, IR_OP_CONV, (ValId[]){gx, gw}, 2, &g2, 1), (float[]){20, 300}, 2);
    assert_false(ir_failed(g));
}

static void test_eval_movement(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    g->fold_consts = true;
    ValId x = cf32(g, T(IR_DT_F32, 2, 3), (float[]){1, 2, 3, 4, 5, 6});
    check_f32s(g, ir_transpose(g, x, (int64_t[]){1, 0}, &O), (float[]){1, 4, 2, 5, 3, 6}, 6);
    check_f32s(g, ir_reshape(g, x, (int64_t[]){3, 2}, 2, &O), (float[]){1, 2, 3, 4, 5, 6}, 6);
    ValId r = cf32(g, T(IR_DT_F32, 5), (float[]){0, 1, 2, 3, 4});
    IrAttr sl[3] = {A_INTS(g, "starts", 4), A_INTS(g, "steps", -2), A_INTS(g, "sizes", 3)};
    check_f32s(g, node1(g, IR_OP_SLICE, r, sl, 3), (float[]){4, 2, 0}, 3);
    ValId p = cf32(g, T(IR_DT_F32, 3), (float[]){1, 2, 3});
    IrAttr pd[3] = {A_INTS(g, "pads", 1, -1), A_INTS(g, "interior", 1),
                    ir_attr_float("value", 9)};
    check_f32s(g, node1(g, IR_OP_PAD, p, pd, 3), (float[]){9, 1, 9, 2, 9}, 5);
    ValId c1 = cf32(g, T(IR_DT_F32, 2, 1), (float[]){1, 2});
    ValId c2 = cf32(g, T(IR_DT_F32, 2, 2), (float[]){3, 4, 5, 6});
    IrAttr ax1 = ir_attr_int("axis", 1), ax0 = ir_attr_int("axis", 0);
    check_f32s(g, node(g, IR_OP_CONCAT, (ValId[]){c1, c2}, 2, &ax1, 1),
               (float[]){1, 3, 4, 2, 5, 6}, 6);
    int32_t idx[2] = {-1, 0};
    IrType it = T(IR_DT_I32, 2);
    ValId i = ir_add_const(g, "idx", &it, idx);
    ValId d = cf32(g, T(IR_DT_F32, 3, 2), (float[]){1, 2, 3, 4, 5, 6});
    check_f32s(g, node(g, IR_OP_GATHER, (ValId[]){d, i}, 2, &ax0, 1), (float[]){5, 6, 1, 2}, 4);
    ValId bad = ci64(g, T0(IR_DT_I64), (int64_t[]){3});
    ValId gb = node(g, IR_OP_GATHER, (ValId[]){d, bad}, 2, &ax0, 1);
    check_type(g, gb, T(IR_DT_F32, 2));
    assert_int_equal(ir_val(g, gb)->kind, IR_VAL_ACT);   /* out of range: left alone */
    ValId e = cf32(g, T(IR_DT_F32, 3, 1), (float[]){1, 2, 3});
    check_f32s(g, ir_expand(g, e, (int64_t[]){3, 2}, 2, &O), (float[]){1, 1, 2, 2, 3, 3}, 6);
    assert_false(ir_failed(g));
}

/* Folding respects the budget and the flag; folded nodes are dead. */
static void test_fold_budget(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    ValId x = cf32(g, T(IR_DT_F32, 4), (float[]){1, 2, 3, 4});
    ValId y = ir_unary(g, IR_UN_NEG, x, &O);
    assert_int_equal(ir_val(g, y)->kind, IR_VAL_ACT);   /* folding off */
    g->fold_consts = true;
    g->fold_budget = 8;
    ValId z = ir_unary(g, IR_UN_NEG, x, &O);
    assert_int_equal(ir_val(g, z)->kind, IR_VAL_ACT);   /* 16 bytes > budget */
    g->fold_budget = 16;
    ValId w = ir_unary(g, IR_UN_NEG, x, &O);
    check_f32s(g, w, (float[]){-1, -2, -3, -4}, 4);
    assert_int_equal(ir_val(g, w)->def, IR_NONE);
    assert_true(ir_node(g, g->nnodes - 1)->dead);
    ValId in = input(g, T(IR_DT_F32, 4));
    ValId m = ir_binary(g, IR_BIN_MUL, in, w, &O);     /* not all constant */
    assert_int_equal(ir_val(g, m)->kind, IR_VAL_ACT);
}

/* A TRANSPOSE of a constant folds only up to IR_FOLD_TRANSPOSE_MAX bytes: a larger
 * one stays a view of the constant, which is then stored once. */
static void test_fold_large_transpose(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    g->fold_consts = true;
    int64_t perm[2] = {1, 0};
    IrAttr a = ir_attr_ints(g, "perm", perm, 2);
    int64_t rows = (int64_t)(IR_FOLD_TRANSPOSE_MAX / 4 / 64);
    for (int big = 0; big < 2; big++) {
        IrType t = T(IR_DT_F32, rows + big, 64);      /* at the limit, then past it */
        ValId c = ir_add_const(g, "w", &t, NULL);
        ValId r = ir_node(g, ir_add_node(g, IR_OP_TRANSPOSE, &c, 1, &a, 1, &O))->out[0];
        assert_int_equal(ir_val(g, r)->kind, big ? IR_VAL_ACT : IR_VAL_CONST);
    }
}

/* pass_fold folds a large TRANSPOSE of a constant that nothing else reads (the dense
 * transposed copy replaces it: a classifier weight read as W^T), and keeps the view
 * when the constant has another reader (a tied embedding and LM head). */
static void test_fold_pass_sole_transpose(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int64_t perm[2] = {1, 0}, rows = (int64_t)(IR_FOLD_TRANSPOSE_MAX / 4 / 64) + 1;
    IrAttr a = ir_attr_ints(g, "perm", perm, 2);
    IrType t = T(IR_DT_F32, rows, 64);
    float *w = malloc((size_t)rows * 64 * sizeof *w);
    assert_non_null(w);
    for (int64_t i = 0; i < rows * 64; i++)
        w[i] = (float)i;
    ValId x = input(g, T(IR_DT_F32, rows, 64)), r[2];
    for (int tied = 0; tied < 2; tied++) {
        ValId c = ir_add_const(g, "w", &t, w);
        r[tied] = ir_node(g, ir_add_node(g, IR_OP_TRANSPOSE, &c, 1, &a, 1, &O))->out[0];
        ir_add_output(g, r[tied]);
        if (tied)                                       /* a second reader of c */
            ir_add_output(g, ir_binary(g, IR_BIN_ADD, x, c, &O));
    }
    PassOptions po = {.opt_level = 0};
    assert_true(pass_fold(g, &po));
    assert_int_equal(ir_val(g, r[0])->kind, IR_VAL_CONST);
    assert_int_equal(ir_val(g, r[1])->kind, IR_VAL_ACT);
    const float *d = ir_val(g, r[0])->data;
    assert_true(d[1] == w[64] && d[rows] == w[1] && d[rows * 64 - 1] == w[rows * 64 - 1]);
    free(w);
}

/* pass_fold folds with the same function and budget as ir_add_node: a new graph has
 * the default budget, and the pass keeps what does not fit g->fold_budget. */
static void test_fold_pass_budget(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    assert_true(g->fold_budget == IR_FOLD_BUDGET_DEFAULT);
    ValId x = cf32(g, T(IR_DT_F32, 4), (float[]){1, 2, 3, 4});
    ValId y = ir_unary(g, IR_UN_NEG, x, &O);            /* folding off while building */
    ir_add_output(g, y);
    PassOptions po = {.opt_level = 0};
    g->fold_budget = 8;
    assert_true(pass_fold(g, &po));
    assert_int_equal(ir_val(g, y)->kind, IR_VAL_ACT);   /* 16 bytes > budget */
    assert_int_equal(g->nnodes, 1);
    g->fold_budget = 16;
    assert_true(pass_fold(g, &po));
    check_f32s(g, y, (float[]){-1, -2, -3, -4}, 4);
    assert_int_equal(g->nnodes, 0);
}

/* ---- scratch arena ---- */

typedef struct {
    size_t scratch_max;                    /* largest g->scratch.bytes seen after a pass */
    size_t bytes_after_first;              /* g->arena_bytes after the first pass */
    int npasses;
} ScratchSeen;

/* Pipeline observer: what the scratch arena holds after each pass. */
static void scratch_hook(IrGraph *g, int index, bool done, void *ctx)
{
    ScratchSeen *s = ctx;
    (void)index;
    if (!done)
        return;
    if (s->npasses++ == 0)
        s->bytes_after_first = g->arena_bytes;
    s->scratch_max = g->scratch.bytes > s->scratch_max ? g->scratch.bytes : s->scratch_max;
}

/* The pipeline driver releases the scratch arena after every pass: what was there
 * before the first pass is gone after it, and no pass leaves any behind. */
static void test_scratch_released(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    ValId x = input(g, T(IR_DT_F32, 4, 64));
    ir_add_output(g, ir_unary(g, IR_UN_NEG, x, &O));
    assert_non_null(ir_scratch(g, (size_t)1 << 20));
    size_t with = g->arena_bytes;
    assert_true(g->scratch.bytes >= (size_t)1 << 20);
    SpyTarget t;
    fe_default_target(&t);
    ScratchSeen seen = {0};
    PassOptions po = {.opt_level = 2, .target = &t, .verify = true, .hook = scratch_hook,
                      .hook_ctx = &seen};
    assert_true(pass_run_pipeline(g, &po));
    assert_int_equal(seen.npasses, pass_pipeline_len);
    assert_int_equal(seen.scratch_max, 0);
    assert_true(seen.bytes_after_first + ((size_t)1 << 20) <= with);
    assert_int_equal(g->scratch.bytes, 0);
    assert_true(g->arena_bytes == g->arena.bytes);
}

/* A pass's temporaries (use counts, marks, maps) go to the scratch arena: on a long
 * chain with nothing to remove or fold, pass_dce and pass_bnfold leave the graph's
 * arena as it was. */
static void test_pass_temporaries_in_scratch(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    ValId x = input(g, T(IR_DT_F32, 8));
    for (int i = 0; i < 20000; i++)             /* per-value arrays past one arena block */
        x = ir_unary(g, IR_UN_NEG, x, &O);
    ir_add_output(g, x);
    PassOptions po = {.opt_level = 2};
    size_t graph = g->arena.bytes;
    assert_true(pass_dce(g, &po));
    assert_true(pass_bnfold(g, &po));
    assert_int_equal(g->nnodes, 20000);
    assert_true(g->arena.bytes == graph);
    assert_true(g->scratch.bytes > 0);
    ir_scratch_reset(g);
    assert_int_equal(g->scratch.bytes, 0);
    assert_true(g->arena_bytes == g->arena.bytes);
}

/* An ints attribute made by ir_attr_ints_ref (as the builders ir_reshape, ir_transpose,
 * ir_reduce and ir_expand make theirs) refers to the caller's array, which need not
 * outlive the call: ir_add_node copies it into the graph's arena. */
static void test_attr_ref_copied(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    ValId x = input(g, T(IR_DT_F32, 2, 3));
    int64_t shape[2] = {3, 2}, perm[2] = {1, 0};
    ValId r = ir_reshape(g, x, shape, 2, &O);
    IrAttr a = ir_attr_ints_ref("perm", perm, 2);
    assert_true(a.ints == perm);
    ValId t = ir_node(g, ir_add_node(g, IR_OP_TRANSPOSE, &r, 1, &a, 1, &O))->out[0];
    shape[0] = perm[0] = 7;
    const int64_t *got;
    assert_int_equal(ir_attr_get_ints(ir_node(g, ir_val(g, r)->def), "shape", &got), 2);
    assert_true(got != shape && got[0] == 3 && got[1] == 2);
    assert_int_equal(ir_attr_get_ints(ir_node(g, ir_val(g, t)->def), "perm", &got), 2);
    assert_true(got != perm && got[0] == 1 && got[1] == 0);
}

/* ---- text form ---- */

static const char *const ROUNDTRIP =
    "graph \"net\" {\n"
    "  input %x: f32[1,3,8,8]\n"
    "  input %\"odd name:0\": i64[2]\n"
    "  const %w: f32[4,3,3,3]\n"
    "  const %s: i64[2] = [2, -3]\n"
    "  const %h: f32[3] = [0.5, -1.0, 1e+10]\n"
    "  %y: f32[1,4,6,6] = conv(%x, %w) {strides=[1,1], dilations=[1,1], group=1} # 'Conv_0' (Conv)\n"
    "  %r: f32[1,4,6,6] = unary(%y) {fn=relu} # 'r\\'q' (Relu)\n"
    "  %c: f16[1,4,6,6] = cast(%r) {to=f16}\n"
    "  %m: i64[2] = binary(%s, %\"odd name:0\") {fn=mul}\n"
    "  %p: f32[1,4,8,6] = pad(%r) {pads=[0,0,1,0,0,0,1,0], interior=[0,0,0,0], value=0.25}\n"
    "  %t: f32[2], %u: undef[] = foreign \"com.x::TopK\"@11(%h, _) {k=2, f=1.5, s=\"a\\\"b\", "
    "l=[1.5,2.0], e=f[], z=s[], v=%s, names=[\"p\",\"q\"]} # '' (TopK)\n"
    "  () = foreign \"::Print\"@13(%t)\n"
    "  output %p\n"
    "  output %m\n"
    "}\n";

static void test_print_parse_roundtrip(void **state)
{
    UtFx *f = *state;
    IrGraph *g = ir_parse(ROUNDTRIP, &f->d);
    if (!g)
        fail_msg("parse failed: %s", f->d.nmsgs ? f->d.msgs[0] : "?");
    char *out = ut_print_str(g);
    assert_string_equal(out, ROUNDTRIP);
    assert_true(ir_verify(g, "parse"));
    IrGraph *g2 = ir_parse(out, &f->d);
    assert_non_null(g2);
    char *out2 = ut_print_str(g2);
    assert_string_equal(out, out2);
    const IrNode *conv = ir_node(g, 0);
    assert_string_equal(conv->origin.name, "Conv_0");
    assert_string_equal(ir_node(g, 1)->origin.name, "r'q");
    const IrNode *tk = ir_node(g, 5);
    assert_string_equal(tk->foreign.domain, "com.x");
    assert_string_equal(tk->foreign.op_type, "TopK");
    assert_int_equal(tk->foreign.opset, 11);
    assert_int_equal(tk->in[1], IR_NONE);
    assert_int_equal(ir_attr_find(tk, "v")->kind, IR_ATTR_TENSOR);
    const int64_t *sd = ir_val(g, ir_find_value(g, "s"))->data;
    assert_int_equal(sd[1], -3);
    free(out);
    free(out2);
    ir_graph_free(g);
    ir_graph_free(g2);
}

static void test_parse_errors(void **state)
{
    UtFx *f = *state;
    static const struct { const char *text, *msg; } cases[] = {
        {"graph \"a\" {\n  output %nope\n}\n", "line 2: unknown value %nope"},
        {"graph \"a\" {\n  input %x: f32[2]\n  input %x: f32[2]\n}\n", "line 3: value %x is defined twice"},
        {"graph \"a\" {\n  input %x: f99[2]\n}\n", "expected a dtype"},
        {"graph \"a\" {\n  input %x: f32[2]\n  %y: f32[3] = unary(%x) {fn=relu}\n}\n",
         "declared with another type"},
        {"graph \"a\" {\n  input %x: f32[2]\n  %y: f32[2] = frob(%x)\n}\n", "unknown op 'frob'"},
        {"graph \"a\" {\n  const %c: i64[2] = [1]\n}\n", "has 1 elements, expected 2"},
        {"graph \"a\" {\n  input %x: f32[2]\n", "missing '}'"},
        {"graph \"a\" {\n  input %x: f32[2]\n  %y: f32[2] = unary(%x) {fn=bogus}\n}\n",
         "unknown value 'bogus'"},
        {"graph \"a\" {\n  input %x: f32[2]\n  %y: f32[2] = unary(%x, %x) {fn=relu}\n}\n",
         "takes 1..1 inputs"},
        {"graph \"a\" {\n  input %x: f32[2]\n  %y: f32[2] = unary(%x) {fn=exp}\n}\n x", "after the end"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ir_diag_free(&f->d);
        f->d.nerrors = 0;
        IrGraph *g = ir_parse(cases[i].text, &f->d);
        assert_null(g);
        assert_true(f->d.nmsgs > 0);
        if (!strstr(f->d.msgs[0], cases[i].msg) || strncmp(f->d.msgs[0], "test.onnx: ", 11))
            fail_msg("case %zu: '%s' lacks '%s'", i, f->d.msgs[0], cases[i].msg);
    }
}

/* ---- rewriting, verifier, names ---- */

static void test_rewrite_compact(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    ValId x = input(g, T(IR_DT_F32, 4));
    ValId a = ir_unary(g, IR_UN_NEG, x, &O);
    ValId b = ir_unary(g, IR_UN_NEG, a, &O);
    ValId c = ir_unary(g, IR_UN_RELU, b, &O);
    ir_add_output(g, c);
    const char *cname = ir_val(g, c)->name;
    /* neg(neg(x)) -> x */
    uint32_t n;
    IrNode *old = ir_rewrite_begin(g, &n);
    assert_int_equal(n, 3);
    assert_int_equal(g->nnodes, 0);
    for (uint32_t i = 0; i < n; i++) {
        if (i == 1) {
            ir_replace_uses(g, b, x);
            continue;
        }
        if (i == 0)
            continue;
        ir_readd_node(g, &old[i]);
    }
    assert_int_equal(g->nnodes, 1);
    assert_int_equal(ir_node(g, 0)->in[0], x);
    assert_int_equal(ir_val(g, c)->def, 0);
    assert_true(ir_verify(g, "test"));
    uint32_t *uses = ir_use_counts(g);
    assert_int_equal(uses[x], 1);
    assert_int_equal(uses[c], 1);
    assert_int_equal(uses[a], 0);
    /* replacing a graph output keeps its name on the replacement */
    ValId d = ir_unary(g, IR_UN_ABS, x, &O);
    ir_replace_uses(g, c, d);
    assert_int_equal(g->outputs[0], d);
    assert_string_equal(ir_val(g, d)->name, cname);
    assert_string_not_equal(ir_val(g, c)->name, cname);
    ir_node(g, 0)->dead = true;
    ir_compact(g);
    assert_int_equal(g->nnodes, 1);
    assert_int_equal(ir_val(g, d)->def, 0);
    assert_int_equal(ir_val(g, c)->def, IR_NONE);
    assert_true(ir_verify(g, "test"));
    assert_false(ir_failed(g));
}

static void test_verify_detects(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    ValId x = input(g, T(IR_DT_F32, 4));
    ValId a = ir_unary(g, IR_UN_NEG, x, &O);
    ValId b = ir_unary(g, IR_UN_EXP, a, &O);
    ir_add_output(g, b);
    assert_true(ir_verify(g, "ok"));
    /* use before definition */
    IrNode tmp = g->nodes[0];
    g->nodes[0] = g->nodes[1];
    g->nodes[1] = tmp;
    assert_false(ir_verify(g, "swap"));
    assert_non_null(strstr(f->d.msgs[0], "internal error after pass swap"));
    g->nodes[1] = g->nodes[0];
    g->nodes[0] = tmp;
    clear(f);
    /* stale type */
    ir_val(g, b)->type.dims[0] = 5;
    assert_false(ir_verify(g, "stale"));
    assert_non_null(strstr(f->d.msgs[0], "stale type"));
    ir_val(g, b)->type.dims[0] = 4;
    clear(f);
    /* output never produced */
    ir_node(g, 1)->dead = true;
    assert_false(ir_verify(g, "dead"));
    assert_non_null(strstr(f->d.msgs[f->d.nmsgs - 1], "never produced"));
    ir_node(g, 1)->dead = false;
    clear(f);
    /* broken def link */
    ir_val(g, a)->def_slot = 3;
    assert_false(ir_verify(g, "link"));
    ir_val(g, a)->def_slot = 0;
    clear(f);
    assert_true(ir_verify(g, "fixed"));
}

static void test_names(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    IrType t = T(IR_DT_F32, 1);
    ValId a = ir_add_input(g, "a", &t);
    ValId a2 = ir_add_input(g, "a", &t);
    assert_string_equal(ir_val(g, a)->name, "a");
    assert_string_not_equal(ir_val(g, a2)->name, "a");
    assert_int_equal(ir_find_value(g, "a"), a);
    const char *fresh = ir_fresh_name(g, "a");
    assert_int_equal(ir_find_value(g, fresh), IR_NONE);
    ir_set_name(g, a, "b");
    assert_int_equal(ir_find_value(g, "a"), IR_NONE);
    assert_int_equal(ir_find_value(g, "b"), a);
    for (int i = 0; i < 2000; i++)
        ir_unary(g, IR_UN_NEG, a, &O);
    for (ValId v = 0; v < g->nvals; v++)
        assert_int_equal(ir_find_value(g, ir_val(g, v)->name), v);
    assert_true(ir_verify(g, "names"));
}

static void test_diag_and_attrs(void **state)
{
    UtFx *f = *state;
    IrOrigin o = {"", "Add", NULL};
    ir_error(f->g, &o, "bad %d", 7);
    assert_string_equal(f->d.msgs[0], "test.onnx: node (Add): bad 7");
    ir_diag_warn(&f->d, "careful");
    assert_string_equal(f->d.msgs[1], "test.onnx: warning: careful");
    assert_int_equal(f->d.nerrors, 1);
    assert_int_equal(f->d.nwarnings, 1);
    f->d.max_errors = 3;
    for (int i = 0; i < 10; i++)
        ir_diag_error(&f->d, "e%d", i);
    assert_int_equal(f->d.nerrors, 11);
    assert_int_equal(f->d.nmsgs, 5);             /* 3 errors, 1 warning, "too many" */
    IrGraph *g = f->g;
    ValId x = input(g, T(IR_DT_F32, 2, 2));
    IrAttr at[3] = {ir_attr_int("fn", IR_RED_SUM), A_INTS(g, "axes", 1),
                    ir_attr_float("alpha", 0.5)};
    NodeId id = ir_add_node(g, IR_OP_REDUCE, &x, 1, at, 3, &O);
    const IrNode *n = ir_node(g, id);
    assert_int_equal(ir_attr_get_int(n, "fn", -1), IR_RED_SUM);
    assert_int_equal(ir_attr_get_int(n, "missing", 42), 42);
    assert_true(ir_attr_get_float(n, "alpha", 0) == 0.5);
    const int64_t *axes;
    assert_int_equal(ir_attr_get_ints(n, "axes", &axes), 1);
    assert_int_equal(axes[0], 1);
    assert_int_equal(ir_attr_get_ints(n, "alpha", &axes), -1);
}

/* Running out of the arena limit jumps to g->oom. */
static void test_oom(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    jmp_buf jb;
    volatile int hit = 0;
    g->oom = &jb;
    g->arena_limit = g->arena_bytes + (1u << 20);
    if (setjmp(jb) == 0) {
        IrType t = T(IR_DT_F32, 1 << 20);
        ir_add_const(g, "big", &t, NULL);
    } else {
        hit = 1;
    }
    assert_int_equal(hit, 1);
    g->oom = NULL;
}

/* Build a small graph with the arena limited to limit bytes; true if it completed
 * (false if it ran out and jumped to g->oom). The graph is freed either way. */
static int build_under_limit(size_t limit)
{
    IrDiag d;
    ir_diag_init(&d, "m.onnx");
    IrGraph *volatile g = ir_graph_new(&d);
    jmp_buf jb;
    volatile int ok = 0;
    g->oom = &jb;
    g->arena_limit = limit;
    if (setjmp(jb) == 0) {
        IrType t = T(IR_DT_F32, 32, 1024);
        ValId x = ir_add_input(g, "x", &t);
        for (int i = 0; i < 8; i++) {
            ValId c = ir_add_const(g, "w", &t, NULL);
            x = ir_binary(g, IR_BIN_ADD, x, c, &O);
        }
        ir_add_output(g, x);
        ok = ir_verify(g, "oom");
    }
    ir_graph_free(g);
    ir_diag_free(&d);
    return ok;
}

/* Every arena limit up to the size the graph needs: clean jump out or completion. */
static void test_oom_every_limit(void **state)
{
    (void)state;
    int completed = 0;
    for (size_t limit = 64 << 10; limit <= (4u << 20) && !completed; limit += 64 << 10)
        completed = build_under_limit(limit);
    assert_true(completed);
}

/* Every row of ops.def is consistent: hooks present, unique names, properties that
 * agree with the class (the back end relies on them). */
static void test_op_table(void **state)
{
    (void)state;
    for (int i = 0; i < IR_OP_COUNT; i++) {
        const IrOpInfo *o = &ir_op_info[i];
        assert_non_null(o->infer);
        assert_non_null(o->eval);
        assert_non_null(o->verify);
        assert_non_null(o->ident);
        assert_non_null(o->work);
        assert_non_null(o->label);
        /* a label names the fn (%s) exactly when the op has one, and nothing else */
        const char *pct = strchr(o->label, '%');
        assert_true((pct != NULL) == (o->fn != IR_FNK_NONE));
        assert_true(!pct || (pct[1] == 's' && !strchr(pct + 1, '%')));
        assert_int_equal(ir_op_from_name(o->name), i);
        assert_true((o->cls == IR_CLS_FOREIGN) == (i == IR_OP_FOREIGN));
        assert_true((o->vec != IR_VEC_NONE) == (o->cls == IR_CLS_ELEM));
        if (o->flags & IR_OPF_VIEW)
            assert_int_equal(o->cls, IR_CLS_MOVE);
        if (o->cls == IR_CLS_ELEM)
            assert_true(o->flags & IR_OPF_POINTWISE);
        if (o->fn != IR_FNK_NONE)
            assert_true(o->cls == IR_CLS_ELEM || o->cls == IR_CLS_REDUCE);
        if (i != IR_OP_FOREIGN)
            assert_true(o->min_in >= 1 && o->nout == 1 && !(o->flags & IR_OPF_OPT_IN));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_op_table),
        cmocka_unit_test_setup_teardown(test_infer_elementwise, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_infer_reduce, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_infer_contract, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_infer_movement, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_infer_no_cascade, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_eval_unary, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_eval_binary, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_eval_cast, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_eval_reduce, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_eval_window_contract, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_eval_movement, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_fold_budget, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_fold_pass_sole_transpose, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_fold_pass_budget, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_fold_large_transpose, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_scratch_released, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_pass_temporaries_in_scratch, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_attr_ref_copied, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_print_parse_roundtrip, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_parse_errors, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_rewrite_compact, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_verify_detects, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_names, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_diag_and_attrs, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_oom, ut_setup, ut_teardown),
        cmocka_unit_test(test_oom_every_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
