/* unit_util.c: the harness shared by the cmocka unit tests (see unit_util.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "codegen/cg.h"
#include "sbin.h"
#include "frontend/fe.h"
#include "sbin.h"
#include "unit_util.h"

/* ---- fixture ---- */

/* Initialise f in place: an empty graph, diagnostics of "test.onnx", -O2. */
void ut_fx_begin(UtFx *f)
{
    memset(f, 0, sizeof *f);
    ir_diag_init(&f->d, "test.onnx");
    f->g = ir_graph_new(&f->d);
    assert_non_null(f->g);
    f->opt.opt_level = 2;
}

/* Free what ut_fx_begin made (not f itself). */
void ut_fx_end(UtFx *f)
{
    ir_graph_free(f->g);
    ir_diag_free(&f->d);
}

/* A new fixture on the heap; free it with ut_fx_free. */
UtFx *ut_fx_new(void)
{
    UtFx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    ut_fx_begin(f);
    return f;
}

/* Free a fixture from ut_fx_new. */
void ut_fx_free(UtFx *f)
{
    ut_fx_end(f);
    free(f);
}

/* cmocka setup: a fresh fixture in *state. */
int ut_setup(void **state)
{
    *state = ut_fx_new();
    return 0;
}

/* cmocka teardown of ut_setup. */
int ut_teardown(void **state)
{
    ut_fx_free(*state);
    return 0;
}

/* ---- building graphs ---- */

/* Type from dtype, rank and dims. */
IrType ut_type(IrDType dt, int rank, const int64_t *dims)
{
    IrType t = {.dtype = dt, .rank = rank};
    for (int i = 0; i < rank; i++)
        t.dims[i] = dims[i];
    return t;
}

/* Rank-1 type of n elements. */
IrType ut_vec(IrDType dt, int64_t n)
{
    IrType t = {.dtype = dt, .rank = 1, .dims = {n}};
    return t;
}

/* Graph input of the given type, named name or (NULL) "in<K>". */
ValId ut_input(IrGraph *g, const char *name, IrDType dt, int rank, const int64_t *dims)
{
    char auto_name[16];
    if (!name) {
        snprintf(auto_name, sizeof auto_name, "in%u", g->ninputs);
        name = auto_name;
    }
    IrType t = ut_type(dt, rank, dims);
    return ir_add_input(g, name, &t);
}

/* Constant "k" of the given type holding v (copied). */
ValId ut_const(IrGraph *g, IrDType dt, int rank, const int64_t *dims, const void *v)
{
    IrType t = ut_type(dt, rank, dims);
    return ir_add_const(g, "k", &t, v);
}

/* An NCHW convolution of x by w (no bias, stride 1), x first padded by p on both
 * sides of its height and width when p > 0 (an IR PAD, as the frontend makes it). */
ValId ut_conv(IrGraph *g, ValId x, ValId w, int p)
{
    static const IrOrigin o = {"n", "Test", NULL};
    if (p > 0) {
        IrAttr pads = ir_attr_ints(g, "pads", (const int64_t[]){0, 0, p, p, 0, 0, p, p}, 8);
        x = g->nodes[ir_add_node(g, IR_OP_PAD, &x, 1, &pads, 1, &o)].out[0];
    }
    NodeId n = ir_add_node(g, IR_OP_CONV, (const ValId[]){x, w}, 2, NULL, 0, &o);
    return g->nodes[n].out[0];
}

/* Foreign ONNX node (default domain) with nout outputs; node names n0, n1, ... in
 * the order of the calls. Returns the node. */
NodeId ut_onnx_node(IrGraph *g, const char *op, int64_t opset, const ValId *in, int nin,
                    int nout, const IrAttr *a, int na)
{
    static int counter;
    char name[32];
    snprintf(name, sizeof name, "n%d", counter++);
    IrForeign f = {.op_type = op, .domain = "", .opset = opset};
    IrOrigin o = {.name = name, .op_type = op};
    return ir_add_foreign(g, &f, in, nin, nout, a, na, &o);
}

/* Foreign ONNX node with one output; returns the output. */
ValId ut_onnx_op(IrGraph *g, const char *op, int64_t opset, const ValId *in, int nin,
                 const IrAttr *a, int na)
{
    NodeId id = ut_onnx_node(g, op, opset, in, nin, 1, a, na);
    return g->nodes[id].out[0];
}

/* Graph-valued attribute (a subgraph such as a branch or a loop body). */
IrAttr ut_graph_attr(const char *name, IrGraph *sub)
{
    IrAttr a = {.name = name, .kind = IR_ATTR_GRAPH, .graph = sub, .tensor = IR_NONE};
    return a;
}

/* A subgraph input capturing value v of graph outer (named like it). */
ValId ut_capture(IrGraph *sub, IrGraph *outer, ValId v)
{
    return ir_add_input(sub, outer->vals[v].name, ir_vtype(outer, v));
}

/* ---- decomposition and diagnostics ---- */

/* Print the diagnostics (to see why a test failed). */
void ut_dump_diag(const IrDiag *d)
{
    for (int i = 0; i < d->nmsgs; i++)
        fprintf(stderr, "  diag: %s\n", d->msgs[i]);
}

/* Whether some diagnostic contains want; prints them all when none does. */
bool ut_has_msg(const IrDiag *d, const char *want)
{
    for (int i = 0; i < d->nmsgs; i++)
        if (strstr(d->msgs[i], want))
            return true;
    ut_dump_diag(d);
    return false;
}

/* Decompose f's graph; it must succeed and verify. */
void ut_decompose_ok(UtFx *f)
{
    bool ok = pass_decompose(f->g, &f->opt);
    if (!ok)
        ut_dump_diag(&f->d);
    assert_true(ok);
    assert_true(ir_verify(f->g, "decompose"));
}

/* Decomposing f's graph must fail with a message containing want. */
void ut_decompose_fails(UtFx *f, const char *want)
{
    assert_false(pass_decompose(f->g, &f->opt));
    if (!ut_has_msg(&f->d, want))
        fail_msg("no message contains '%s'", want);
}

/* Number of live nodes of core op op. */
int ut_count_op(IrGraph *g, IrOp op)
{
    int n = 0;
    for (uint32_t i = 0; i < g->nnodes; i++)
        n += !g->nodes[i].dead && g->nodes[i].op == op;
    return n;
}

/* ---- evaluation and comparison ---- */

/* Evaluate the decomposed graph with ir_eval_node, node by node (every node must be a
 * core op); inputs[i] is the data of graph input i. Returns the data of graph output
 * k (arena memory). */
const void *ut_run_graph(IrGraph *g, const void *const *inputs, uint32_t k)
{
    const void **vd = calloc(g->nvals, sizeof *vd);
    assert_non_null(vd);
    for (uint32_t i = 0; i < g->ninputs; i++)
        vd[g->inputs[i]] = inputs[i];
    for (ValId v = 0; v < g->nvals; v++)
        if (g->vals[v].kind == IR_VAL_CONST)
            vd[v] = g->vals[v].data;
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead)
            continue;
        assert_int_not_equal(n->op, IR_OP_FOREIGN);
        const void *in[64];
        void *out[8];
        assert_true(n->nin <= 64 && n->nout <= 8);
        for (int j = 0; j < n->nin; j++) {
            in[j] = vd[n->in[j]];
            assert_non_null(in[j]);
        }
        assert_true(ir_eval_node(g, n, in, out));
        for (int j = 0; j < n->nout; j++)
            vd[n->out[j]] = out[j];
    }
    const void *r = vd[g->outputs[k]];
    free(vd);
    assert_non_null(r);
    return r;
}

/* Graph output k has shape dims (of rank rank). */
void ut_expect_shape(IrGraph *g, uint32_t k, int rank, const int64_t *dims)
{
    const IrType *t = ir_vtype(g, g->outputs[k]);
    assert_int_equal(t->rank, rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(t->dims[i], dims[i]);
}

/* got[i] within tol * (1 + |want[i]|) of want[i] for every i (NaN never is). */
void ut_expect_close(const float *got, const float *want, int64_t n, double tol)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - (double)want[i]) <= tol * (1 + fabs((double)want[i])))) {
            fprintf(stderr, "  element %lld: got %.7g want %.7g\n", (long long)i, got[i], want[i]);
            fail();
        }
}

/* got equals want, element by element. */
void ut_expect_i64(const int64_t *got, const int64_t *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            fprintf(stderr, "  element %lld: got %lld want %lld\n", (long long)i,
                    (long long)got[i], (long long)want[i]);
            fail();
        }
}

/* Deterministic test data: a sawtooth of 23 steps times scale, plus off. */
void ut_fill(float *v, int64_t n, float scale, float off)
{
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)(((i * 37 + 11) % 23) - 11) * scale + off;
}

/* The text form of g (ir_print) as a malloc'd string. */
size_t ut_peak_resident(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %zu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb << 10;
}

bool ut_reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    bool ok = f && fputs("5", f) >= 0;
    if (f)
        ok = fclose(f) == 0 && ok;
    return ok;
}

char *ut_print_str(IrGraph *g)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_non_null(m);
    ir_print(g, m);
    fclose(m);
    return buf;
}

/* ---- the whole pipeline and the emulator ---- */

/* Compile g with the whole pipeline for the default target; NULL (diagnostics
 * printed) when compiling fails. */
uint8_t *ut_compile(IrGraph *g, size_t *len)
{
    SpyTarget t;
    fe_default_target(&t);
    return ut_compile_for(g, &t, len);
}

/* Compile g for the default target and load the bundle: the model, which reads the
 * bundle in place (*buf, malloc'ed: freed after the model). */
spy_model *ut_compile_load(IrGraph *g, uint8_t **buf)
{
    size_t len = 0;
    *buf = ut_compile(g, &len);
    assert_non_null(*buf);
    spy_model *m = NULL;
    char err[512];
    assert_int_equal(spy_model_load_memory(*buf, len, &m, err, sizeof err), SPY_OK);
    return m;
}

/* Compile g for target t (-O2, verifiers on) into a bundle (malloc'ed; its size in
 * *len); NULL, with the diagnostics printed, when the pipeline fails. */
uint8_t *ut_compile_for(IrGraph *g, const SpyTarget *tp, size_t *len)
{
    SpyTarget t = *tp;
    PassOptions po = {.opt_level = 2, .target = &t, .verify = true};
    if (!pass_run_pipeline(g, &po)) {
        ir_diag_print(g->diag, stderr);
        return NULL;
    }
    CgOptions co = {.target = &t, .meta = "compiler=test\n"};
    uint8_t *buf = NULL;
    assert_true(cg_emit_bundle(g, &co, &buf, len));
    return buf;
}

/* Recompute the section CRCs and the table CRC of a bundle edited in place (tests of
 * the loader: the edit, not a CRC, must be what it refuses). */
void ut_fix_crcs(uint8_t *buf)
{
    SpyHeader *h = (SpyHeader *)buf;
    SpySection *s = (SpySection *)(buf + sizeof *h);
    for (uint32_t i = 0; i < h->nsections; i++)
        s[i].crc32c = spy_crc32c(0, buf + s[i].offset, s[i].size);
    h->table_crc = 0;
    uint32_t crc = spy_crc32c(0, h, sizeof *h);
    h->table_crc = spy_crc32c(crc, s, h->nsections * sizeof *s);
}

/* Compile g (which must compile) and run it on the emulator (2 threads, LX poisoned)
 * with inputs; outputs into outs. Returns the run status; the session's message goes
 * to err. */
spy_status ut_compile_run(IrGraph *g, const void *const *inputs, void *const *outs, char *err,
                          size_t errlen)
{
    size_t len = 0;
    uint8_t *buf = ut_compile(g, &len);
    assert_non_null(buf);
    spy_model *m = NULL;
    assert_int_equal(spy_model_load_memory(buf, len, &m, err, errlen), SPY_OK);
    spy_session_options so = {.num_threads = 2, .debug_lx_poison = 1};
    spy_session *s = NULL;
    assert_int_equal(spy_session_create(m, &so, &s), SPY_OK);
    spy_status st = spy_session_run(s, inputs, outs);
    snprintf(err, errlen, "%s", spy_session_error(s));
    spy_session_free(s);
    spy_model_free(m);
    free(buf);
    return st;
}

/* Load the bundle buf (freed here) and open a session of 2 threads with LX poisoning;
 * fails the test when the bundle is refused. */
void ut_open(uint8_t *buf, size_t len, spy_model **m, spy_session **s)
{
    char err[512];
    if (spy_model_load_memory(buf, len, m, err, sizeof err) != SPY_OK)
        fail_msg("bundle refused: %s", err);
    free(buf);
    spy_session_options so = {.num_threads = 2, .debug_lx_poison = 1};
    assert_int_equal(spy_session_create(*m, &so, s), SPY_OK);
}

/* Loading bundle buf must fail with a message containing needle. */
void ut_expect_refused(const uint8_t *buf, size_t len, const char *needle)
{
    spy_model *m = NULL;
    char err[512] = "";
    assert_int_not_equal(spy_model_load_memory(buf, len, &m, err, sizeof err), SPY_OK);
    if (!strstr(err, needle))
        fail_msg("message '%s' lacks '%s'", err, needle);
}
