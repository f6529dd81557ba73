/* test_debuginfo.c: the bundle's DEBUG section and the runtime's kernel hook: a
 * compiled matmul + relu + reduction keeps the model's name of the product, which a
 * kernel hook reads (on one and on two threads) equal to the product computed here;
 * reading outside the hook, a bundle without the section, and damaged entries (each
 * refused by the loader with a message naming the entry's offset). */
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
#include "passes/pass.h"
#include "sbin.h"
#include "spyrt.h"
#include "unit_util.h"

enum { M = 4, K = 16, N = 8 };

/* Orders two name pointers by strcmp. */
static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* y = ReduceSum(Relu(MatMul(x, w)), axis 1) with the product named "h" (a kernel
 * output: the relu and the sum form the reduction's kernel), compiled with the DEBUG
 * section when debug is set. w is filled here. */
static uint8_t *compile(UtFx *f, bool debug, float *w, size_t *len)
{
    IrGraph *g = f->g;
    int64_t xd[2] = {M, K}, wd[2] = {K, N}, ax[1] = {1};
    ut_fill(w, K * N, 0.25f, -1.0f);
    ValId x = ut_input(g, "x", IR_DT_F32, 2, xd);
    ValId wc = ut_const(g, IR_DT_F32, 2, wd, w);
    ValId mm = ut_onnx_op(g, "MatMul", 13, (ValId[]){x, wc}, 2, NULL, 0);
    ir_set_name(g, mm, "h");
    ValId r = ut_onnx_op(g, "Relu", 13, &mm, 1, NULL, 0);
    ValId axes = ut_const(g, IR_DT_I64, 1, (int64_t[]){1}, ax);
    ValId y = ut_onnx_op(g, "ReduceSum", 13, (ValId[]){r, axes}, 2, NULL, 0);
    ir_set_name(g, y, "y");
    ir_add_output(g, y);
    const char **names = malloc((g->nvals + 1) * sizeof *names);
    uint32_t n = 0;
    for (ValId v = 0; v < g->nvals; v++)
        if (g->vals[v].kind != IR_VAL_CONST)
            names[n++] = g->vals[v].name;
    qsort(names, n, sizeof *names, cmp_name);
    SpyTarget t;
    fe_default_target(&t);
    PassOptions po = {.opt_level = 2, .target = &t, .verify = true};
    assert_true(pass_run_pipeline(g, &po));
    CgOptions co = {.target = &t, .meta = "compiler=test\n", .debug = debug,
                    .model_names = names, .nmodel_names = n};
    uint8_t *buf = NULL;
    assert_true(cg_emit_bundle(g, &co, &buf, len));
    free(names);
    return buf;
}

typedef struct {
    int index;                     /* debug tensor to read */
    float got[M * N];
    int reads, calls;
    spy_status outside;            /* a read in the hook of another kernel */
} Probe;

/* Kernel hook: read the probed tensor in its kernel's hook, try it in the others. */
static void hook(spy_session *s, int pos, int kernel, void *user)
{
    Probe *p = user;
    spy_debug_tensor_info info;
    (void)pos;
    p->calls++;
    assert_int_equal(spy_model_debug_tensor_info(NULL, 0, &info), SPY_E_INVALID_ARG);
    spy_status st = spy_session_read_debug_tensor(s, p->index, p->got, M * N);
    if (st == SPY_OK)
        p->reads++;
    else
        p->outside = st;
    (void)kernel;
}

/* The product read by the hook equals x w, on 1 and on 2 threads. */
static void test_hook_reads_kernel_output(void **state)
{
    UtFx *f = *state;
    float w[K * N], x[M * K], want[M * N], y[M];
    size_t len;
    uint8_t *buf = compile(f, true, w, &len);
    assert_int_equal(((SpyHeader *)buf)->features & SPY_FEAT_DEBUG, SPY_FEAT_DEBUG);
    spy_model *m = NULL;
    char err[512];
    assert_int_equal(spy_model_load_memory(buf, len, &m, err, sizeof err), SPY_OK);
    int nd = spy_model_num_debug_tensors(m), ri = -1;
    for (int i = 0; i < nd; i++) {
        spy_debug_tensor_info info;
        assert_int_equal(spy_model_debug_tensor_info(m, i, &info), SPY_OK);
        if (!strcmp(info.name, "h"))
            ri = i;
    }
    assert_true(ri >= 0);
    ut_fill(x, M * K, 0.5f, -0.3f);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++)
                acc += (double)x[i * K + k] * w[k * N + j];
            want[i * N + j] = (float)acc;
        }
    for (int threads = 1; threads <= 2; threads++) {
        spy_session *s = NULL;
        spy_session_options so = {.num_threads = threads};
        assert_int_equal(spy_session_create(m, &so, &s), SPY_OK);
        Probe p = {.index = ri};
        assert_int_equal(spy_session_set_kernel_hook(s, hook, &p), SPY_OK);
        const void *in[1] = {x};
        void *out[1] = {y};
        assert_int_equal(spy_session_run(s, in, out), SPY_OK);
        assert_int_equal(p.calls, spy_model_schedule(m, NULL, 0));
        assert_int_equal(p.reads, 1);
        assert_int_equal(p.outside, SPY_E_INVALID_ARG);
        ut_expect_close(p.got, want, M * N, 1e-4);
        float again[M * N];                /* after the run: not in a hook */
        assert_int_equal(spy_session_read_debug_tensor(s, ri, again, M * N), SPY_E_INVALID_ARG);
        assert_int_equal(spy_session_set_kernel_hook(s, NULL, NULL), SPY_OK);
        p.calls = 0;
        assert_int_equal(spy_session_run(s, in, out), SPY_OK);
        assert_int_equal(p.calls, 0);
        spy_session_free(s);
    }
    spy_model_free(m);
    free(buf);
}

/* Without the section (spyrec --strip): no feature bit, -1 debug tensors. */
static void test_stripped(void **state)
{
    UtFx *f = *state;
    float w[K * N];
    size_t len;
    uint8_t *buf = compile(f, false, w, &len);
    assert_int_equal(((SpyHeader *)buf)->features & SPY_FEAT_DEBUG, 0);
    spy_model *m = NULL;
    char err[512];
    assert_int_equal(spy_model_load_memory(buf, len, &m, err, sizeof err), SPY_OK);
    assert_int_equal(spy_model_num_debug_tensors(m), -1);
    spy_debug_tensor_info info;
    assert_int_equal(spy_model_debug_tensor_info(m, 0, &info), SPY_E_INVALID_ARG);
    spy_model_free(m);
    free(buf);
}

/* Entry 0 of the DEBUG section of buf. */
static SpyDebugDesc *first_entry(uint8_t *buf)
{
    SpyHeader *h = (SpyHeader *)buf;
    SpySection *s = (SpySection *)(buf + sizeof *h);
    for (uint32_t i = 0; i < h->nsections; i++)
        if (s[i].id == SPY_SEC_DEBUG && s[i].size >= sizeof(SpyDebugDesc))
            return (SpyDebugDesc *)(buf + s[i].offset);
    fail_msg("no DEBUG entry");
    return NULL;
}

/* Load c (CRCs fixed) and expect a refusal whose message has needle and "offset". */
static void expect_refused(uint8_t *c, size_t len, const char *needle)
{
    ut_fix_crcs(c);
    spy_model *m = NULL;
    char err[512] = "";
    assert_int_equal(spy_model_load_memory(c, len, &m, err, sizeof err), SPY_E_BAD_BUNDLE);
    if (!strstr(err, needle) || !strstr(err, "offset"))
        fail_msg("message '%s' lacks '%s' or an offset", err, needle);
}

/* Damaged entries are refused, never run. */
static void test_bad_entries(void **state)
{
    UtFx *f = *state;
    float w[K * N];
    size_t len;
    uint8_t *buf = compile(f, true, w, &len), *c = malloc(len);
    memcpy(c, buf, len);
    first_entry(c)->offset += (uint64_t)1 << 40;
    expect_refused(c, len, "outside segment");
    memcpy(c, buf, len);
    first_entry(c)->seg = 2;               /* the input's segment */
    expect_refused(c, len, "not the arena or an output segment");
    memcpy(c, buf, len);
    first_entry(c)->kernel = 1000;
    expect_refused(c, len, "kernel 1000 out of range");
    memcpy(c, buf, len);
    first_entry(c)->strides[0] = -((int64_t)1 << 50);
    expect_refused(c, len, "strides out of range");
    memcpy(c, buf, len);
    first_entry(c)->dtype = ISA_DT_U4;
    expect_refused(c, len, "dtype");
    memcpy(c, buf, len);
    first_entry(c)->name = 1u << 30;
    expect_refused(c, len, "name offset");
    memcpy(c, buf, len);                   /* the feature bit without the section */
    ((SpyHeader *)c)->features &= ~SPY_FEAT_DEBUG;
    expect_refused(c, len, "feature bit DEBUG");
    free(c);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hook_reads_kernel_output, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_stripped, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_bad_entries, ut_setup, ut_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
