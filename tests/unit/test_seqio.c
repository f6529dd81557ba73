/* test_seqio.c: unit tests of sequences and optionals at a model's edges: reading
 * SequenceProto / OptionalProto files (frontend/fe_tensorfile.c: fe_seq_read), graph
 * inputs of sequence and optional types specialised to a structure
 * (frontend/fe_onnx_seqin.c), graph outputs that are sequences (passes/decompose/onnx/onnx_sequence.c:
 * one output per element, "NAME[i]"), and a whole compile and run of such a model on
 * the emulator. Files are hand-encoded protobuf bytes written to a temporary folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cg.h"
#include "fe.h"
#include "pass.h"
#include "spyrt.h"

/* ---- protobuf bytes by hand ---- */

typedef struct {
    uint8_t b[4096];
    size_t n;
} Buf;

static void put_varint(Buf *o, uint64_t v)
{
    do {
        assert_true(o->n < sizeof o->b);
        o->b[o->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void put_tag(Buf *o, unsigned field, unsigned wire) { put_varint(o, field << 3 | wire); }

static void put_bytes(Buf *o, unsigned field, const void *p, size_t n)
{
    put_tag(o, field, 2);
    put_varint(o, n);
    assert_true(o->n + n <= sizeof o->b);
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

static void put_msg(Buf *o, unsigned field, const Buf *m) { put_bytes(o, field, m->b, m->n); }
static void put_str(Buf *o, unsigned field, const char *s) { put_bytes(o, field, s, strlen(s)); }

static void put_int(Buf *o, unsigned field, uint64_t v)
{
    put_tag(o, field, 0);
    put_varint(o, v);
}

/* A TensorProto: f32 of shape dims with values 0, 1, 2, ... plus base. */
static Buf tensor_f32(int rank, const int64_t *dims, float base)
{
    Buf t = {.n = 0};
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        put_int(&t, 1, (uint64_t)dims[i]);
        n *= dims[i];
    }
    put_int(&t, 2, IR_DT_F32);
    float v[64];
    assert_true(n <= 64);
    for (int64_t i = 0; i < n; i++)
        v[i] = base + (float)i;
    put_bytes(&t, 9, v, (size_t)n * sizeof *v);
    return t;
}

/* A SequenceProto / OptionalProto header: name and elem_type. */
static Buf container(const char *name, int elem_type)
{
    Buf s = {.n = 0};
    if (name)
        put_str(&s, 1, name);
    put_int(&s, 2, (uint64_t)elem_type);
    return s;
}

static bool read_buf(const Buf *b, FeSeq *s, char *err, size_t n)
{
    return fe_seq_read_mem("t.pb", b->b, b->n, s, err, n);
}

/* ---- reading SequenceProto / OptionalProto ---- */

static void test_read_sequence(void **state)
{
    (void)state;
    int64_t d2[] = {2}, d23[] = {2, 3};
    Buf s = container("seq", 1), t0 = tensor_f32(1, d2, 10), t1 = tensor_f32(2, d23, 0);
    put_msg(&s, 3, &t0);
    put_msg(&s, 3, &t1);
    FeSeq q;
    char err[512];
    assert_true(read_buf(&s, &q, err, sizeof err));
    assert_string_equal(q.name, "seq");
    assert_false(q.none);
    assert_int_equal(q.n, 2);
    assert_int_equal(q.elem, IR_DT_F32);
    assert_int_equal(q.items[0].rank, 1);
    assert_int_equal(q.items[0].dims[0], 2);
    assert_int_equal(q.items[1].rank, 2);
    assert_int_equal(q.items[1].dims[1], 3);
    assert_true(((float *)q.items[0].data)[1] == 11.0f);
    assert_true(((float *)q.items[1].data)[5] == 5.0f);
    fe_seq_free(&q);

    Buf e = container("empty", 1);        /* an empty sequence */
    assert_true(read_buf(&e, &q, err, sizeof err));
    assert_false(q.none);
    assert_int_equal(q.n, 0);
    fe_seq_free(&q);
}

static void test_read_optional(void **state)
{
    (void)state;
    FeSeq q;
    char err[512];
    Buf none = container("opt", 0);      /* no value */
    assert_true(read_buf(&none, &q, err, sizeof err));
    assert_true(q.none);
    assert_int_equal(q.n, 0);
    fe_seq_free(&q);

    int64_t d4[] = {4};
    Buf one = container("opt", 1), t = tensor_f32(1, d4, 1);
    put_msg(&one, 3, &t);                /* an optional tensor */
    assert_true(read_buf(&one, &q, err, sizeof err));
    assert_false(q.none);
    assert_int_equal(q.n, 1);
    assert_int_equal(q.items[0].dims[0], 4);
    fe_seq_free(&q);

    Buf inner = container(NULL, 1), outer = container("os", 3);
    put_msg(&inner, 3, &t);
    put_msg(&inner, 3, &t);
    put_msg(&outer, 5, &inner);          /* an optional sequence of two tensors */
    assert_true(read_buf(&outer, &q, err, sizeof err));
    assert_false(q.none);
    assert_int_equal(q.n, 2);
    assert_string_equal(q.name, "os");
    fe_seq_free(&q);

    Buf einner = container(NULL, 1), eouter = container("os", 3);
    put_msg(&eouter, 5, &einner);        /* holding an empty sequence: not none */
    assert_true(read_buf(&eouter, &q, err, sizeof err));
    assert_false(q.none);
    assert_int_equal(q.n, 0);
    fe_seq_free(&q);
}

/* fe_seq_read_mem fails on b and the message contains want. */
static void refused(const Buf *b, const char *want)
{
    FeSeq q;
    char err[512] = "";
    if (read_buf(b, &q, err, sizeof err))
        fail_msg("accepted, expected '%s'", want);
    if (!strstr(err, want))
        fail_msg("message '%s' lacks '%s'", err, want);
    assert_null(q.items);
}

static void test_read_refusals(void **state)
{
    (void)state;
    int64_t d2[] = {2}, d3[] = {3};
    Buf t = tensor_f32(1, d2, 0);
    put_str(&t, 8, "x");
    refused(&t, "not a SequenceProto or OptionalProto");          /* a TensorProto */

    Buf inner = container(NULL, 1), two = container("ss", 3);
    put_msg(&two, 5, &inner);
    put_msg(&two, 5, &inner);
    refused(&two, "unsupported");                                  /* sequence of sequences */

    Buf mism = container("m", 1);
    put_msg(&mism, 5, &inner);
    refused(&mism, "does not match");                              /* elem_type vs field */

    Buf map = container("m", 4);
    put_msg(&map, 6, &inner);
    refused(&map, "unsupported");

    Buf trunc = container("s", 1), t2 = tensor_f32(1, d3, 0);
    put_msg(&trunc, 3, &t2);
    trunc.n -= 3;
    refused(&trunc, "offset");

    Buf i64 = {.n = 0};                                            /* mixed dtypes */
    put_int(&i64, 1, 1);
    put_int(&i64, 2, IR_DT_I64);
    int64_t v = 7;
    put_bytes(&i64, 9, &v, sizeof v);
    Buf mix = container("mix", 1), f = tensor_f32(1, (int64_t[]){1}, 0);
    put_msg(&mix, 3, &f);
    put_msg(&mix, 3, &i64);
    refused(&mix, "element 1 is i64");

    Buf bad = {.n = 0};                                            /* raw size mismatch */
    put_int(&bad, 1, 5);
    put_int(&bad, 2, IR_DT_F32);
    put_bytes(&bad, 9, "abcd", 4);
    Buf sb = container("b", 1);
    put_msg(&sb, 3, &bad);
    refused(&sb, "element 0");

    Buf ctl = {.n = 0};                                            /* name not text */
    put_bytes(&ctl, 1, "\x01\x02", 2);
    put_int(&ctl, 2, 1);
    refused(&ctl, "not text");
}

/* ---- models with sequence / optional inputs and outputs ---- */

static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    strcpy(tmpdir, "/tmp/test_seqio_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A TypeProto.Tensor of f32 with rank dims, each dynamic ("N") when dims[i] < 0. */
static Buf tensor_type(int rank, const int64_t *dims)
{
    Buf shape = {.n = 0}, tt = {.n = 0};
    for (int i = 0; i < rank; i++) {
        Buf dim = {.n = 0};
        if (dims[i] < 0)
            put_str(&dim, 2, "N");
        else
            put_int(&dim, 1, (uint64_t)dims[i]);
        put_msg(&shape, 1, &dim);
    }
    put_int(&tt, 1, IR_DT_F32);
    put_msg(&tt, 2, &shape);
    Buf tp = {.n = 0};
    put_msg(&tp, 1, &tt);               /* TypeProto.tensor_type */
    return tp;
}

/* TypeProto of kind "seq" (sequence_type = 4), "opt" (optional_type = 9) around e. */
static Buf wrap_type(unsigned field, const Buf *e)
{
    Buf inner = {.n = 0}, tp = {.n = 0};
    put_msg(&inner, 1, e);              /* elem_type */
    put_msg(&tp, field, &inner);
    return tp;
}

static Buf value_info(const char *name, const Buf *type)
{
    Buf vi = {.n = 0};
    put_str(&vi, 1, name);
    put_msg(&vi, 2, type);
    return vi;
}

/* A NodeProto op(inputs) -> outputs with an optional int attribute. */
static Buf node(const char *op, const char *const *in, int nin, const char *const *out, int nout,
                const char *attr, int64_t aval)
{
    Buf n = {.n = 0};
    for (int i = 0; i < nin; i++)
        put_str(&n, 1, in[i]);
    for (int i = 0; i < nout; i++)
        put_str(&n, 2, out[i]);
    put_str(&n, 4, op);
    if (attr) {
        Buf a = {.n = 0};
        put_str(&a, 1, attr);
        put_int(&a, 20, 2);             /* AttributeType INT */
        put_int(&a, 3, (uint64_t)aval);
        put_msg(&n, 5, &a);
    }
    return n;
}

/* Write a ModelProto (opset 17) of graph g to the temporary folder; returns its path. */
static const char *write_model(const Buf *g, const char *file)
{
    static char path[128];
    Buf m = {.n = 0}, ops = {.n = 0};
    put_int(&m, 1, 8);                  /* ir_version */
    put_str(&ops, 1, "");
    put_int(&ops, 2, 17);
    put_msg(&m, 8, &ops);
    put_msg(&m, 7, g);
    snprintf(path, sizeof path, "%s/%s", tmpdir, file);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(m.b, 1, m.n, f), m.n);
    fclose(f);
    return path;
}

/* Graph: x: sequence(f32[N]) -> y = ConcatFromSequence(x, axis 0); z = SequenceErase(x)
 * (drops the last element), a sequence output. */
static const char *seq_model(void)
{
    int64_t dyn[] = {-1};
    Buf g = {.n = 0}, et = tensor_type(1, dyn), st = wrap_type(4, &et);
    const char *x[] = {"x"}, *y[] = {"y"}, *z[] = {"z"};
    Buf n1 = node("ConcatFromSequence", x, 1, y, 1, "axis", 0);
    Buf n2 = node("SequenceErase", x, 1, z, 1, NULL, 0);
    put_msg(&g, 1, &n1);
    put_msg(&g, 1, &n2);
    put_str(&g, 2, "g");
    Buf xi = value_info("x", &st), yt = tensor_type(1, dyn), yi = value_info("y", &yt);
    Buf zi = value_info("z", &st);
    put_msg(&g, 11, &xi);
    put_msg(&g, 12, &yi);
    put_msg(&g, 12, &zi);
    return write_model(&g, "seq.onnx");
}

/* A structure of n f32 elements of lengths lens (FeSeq; freed by the caller). */
static FeSeq structure(int n, const int64_t *lens)
{
    FeSeq s = {.name = strdup(""), .n = n, .elem = IR_DT_UNDEF};
    s.items = calloc((size_t)n + 1, sizeof *s.items);
    for (int i = 0; i < n; i++) {
        s.items[i].rank = 1;
        s.items[i].dims[0] = lens[i];
    }
    return s;
}

/* Load path with spec (or none); NULL on failure with the messages in d. */
static IrGraph *load(const char *path, const FeInputSpec *sp, IrDiag *d)
{
    ir_diag_init(d, path);
    FeOptions o = {.specs = sp, .nspecs = sp ? 1 : 0};
    return fe_load_onnx(path, d, &o);
}

/* Whether some message of d contains s. */
static bool diag_has(const IrDiag *d, const char *s)
{
    for (int i = 0; i < d->nmsgs; i++)
        if (strstr(d->msgs[i], s))
            return true;
    return false;
}

static void test_input_needs_structure(void **state)
{
    (void)state;
    IrDiag d;
    IrGraph *g = load(seq_model(), NULL, &d);
    assert_null(g);
    assert_true(diag_has(&d, "sequence input 'x' has no fixed structure"));
    assert_true(diag_has(&d, "--input-seq x=FILE"));
    ir_diag_free(&d);

    int64_t bad[] = {2};                /* element rank 2 for a rank-1 element type */
    FeSeq s = structure(1, bad);
    s.items[0].rank = 2;
    FeInputSpec sp = {.name = "x", .rank = -1, .seq = &s};
    g = load(seq_model(), &sp, &d);
    assert_null(g);
    assert_true(diag_has(&d, "does not match the declared element shape"));
    ir_diag_free(&d);
    s.items[0].rank = 1;
    s.items[0].dtype = IR_DT_I64;       /* a file of another dtype */
    g = load(seq_model(), &sp, &d);
    assert_null(g);
    assert_true(diag_has(&d, "element 0 is i64"));
    ir_diag_free(&d);
    fe_seq_free(&s);
}

/* Compile g (already imported) through the pipeline into a bundle. */
static uint8_t *compile(IrGraph *g, size_t *len)
{
    SpyTarget t;
    fe_default_target(&t);
    PassOptions po = {.opt_level = 2, .target = &t, .verify = true};
    if (!pass_run_pipeline(g, &po)) {
        ir_diag_print(g->diag, stderr);
        fail_msg("pipeline failed");
    }
    CgOptions co = {.target = &t, .meta = "compiler=test\n"};
    uint8_t *buf = NULL;
    assert_true(cg_emit_bundle(g, &co, &buf, len));
    return buf;
}

static void test_sequence_in_and_out(void **state)
{
    (void)state;
    int64_t lens[] = {2, 3, 1};
    FeSeq s = structure(3, lens);
    FeInputSpec sp = {.name = "x", .rank = -1, .seq = &s};
    IrDiag d;
    IrGraph *g = load(seq_model(), &sp, &d);
    if (!g)
        ir_diag_print(&d, stderr);
    assert_non_null(g);
    assert_int_equal(g->ninputs, 3);
    for (uint32_t i = 0; i < 3; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "x[%u]", i);
        assert_string_equal(g->vals[g->inputs[i]].name, nm);
        assert_int_equal(g->vals[g->inputs[i]].type.dims[0], lens[i]);
    }
    size_t len;
    uint8_t *buf = compile(g, &len);
    spy_model *m = NULL;
    char err[256];
    assert_int_equal(spy_model_load_memory(buf, len, &m, err, sizeof err), SPY_OK);
    assert_int_equal(spy_model_num_outputs(m), 3);   /* y, z[0], z[1] */
    const char *want[] = {"y", "z[0]", "z[1]"};
    int64_t wlen[] = {6, 2, 3};
    for (int k = 0; k < 3; k++) {
        spy_tensor_info info;
        assert_int_equal(spy_model_output_info(m, k, &info), SPY_OK);
        assert_string_equal(info.name, want[k]);
        assert_int_equal(info.dims[0], wlen[k]);
    }
    float x0[] = {1, 2}, x1[] = {3, 4, 5}, x2[] = {6}, y[6], z0[2], z1[3];
    const void *in[] = {x0, x1, x2};
    void *out[] = {y, z0, z1};
    spy_session *ss = NULL;
    spy_session_options so = {.num_threads = 2};
    assert_int_equal(spy_session_create(m, &so, &ss), SPY_OK);
    assert_int_equal(spy_session_run(ss, in, out), SPY_OK);
    for (int i = 0; i < 6; i++)
        assert_true(y[i] == (float)(i + 1));
    assert_memory_equal(z0, x0, sizeof z0);
    assert_memory_equal(z1, x1, sizeof z1);
    spy_session_free(ss);
    spy_model_free(m);
    free(buf);
    ir_graph_free(g);
    ir_diag_free(&d);
    fe_seq_free(&s);
}

/* Graph: o: optional(f32[4]) -> h = OptionalHasElement(o); v = Identity(o). */
static const char *opt_model(void)
{
    int64_t d4[] = {4};
    Buf g = {.n = 0}, et = tensor_type(1, d4), ot = wrap_type(9, &et);
    const char *o[] = {"o"}, *h[] = {"h"}, *v[] = {"v"};
    Buf n1 = node("OptionalHasElement", o, 1, h, 1, NULL, 0);
    Buf n2 = node("Identity", o, 1, v, 1, NULL, 0);
    put_msg(&g, 1, &n1);
    put_msg(&g, 1, &n2);
    put_str(&g, 2, "g");
    Buf oi = value_info("o", &ot), hi = {.n = 0}, vi = value_info("v", &ot);
    put_str(&hi, 1, "h");
    put_msg(&g, 11, &oi);
    put_msg(&g, 12, &hi);
    put_msg(&g, 12, &vi);
    return write_model(&g, "opt.onnx");
}

static void test_optional_input(void **state)
{
    (void)state;
    PassOptions po = {.opt_level = 2};
    IrDiag d;
    FeSeq none = {.name = strdup(""), .none = true};
    FeInputSpec sp = {.name = "o", .rank = -1, .seq = &none};
    IrGraph *g = load(opt_model(), &sp, &d);
    assert_non_null(g);
    assert_int_equal(g->ninputs, 0);
    assert_true(pass_decompose(g, &po));
    assert_int_equal(g->noutputs, 1);   /* h only: an empty optional has no output */
    ValId h = g->outputs[0];
    assert_true(ir_is_const(g, h));
    assert_int_equal(*(const uint8_t *)g->vals[h].data, 0);
    ir_graph_free(g);
    ir_diag_free(&d);
    fe_seq_free(&none);

    int64_t d4[] = {4};
    FeSeq one = structure(1, d4);
    sp.seq = &one;
    g = load(opt_model(), &sp, &d);
    assert_non_null(g);
    assert_int_equal(g->ninputs, 1);
    assert_string_equal(g->vals[g->inputs[0]].name, "o[0]");
    assert_true(pass_decompose(g, &po));
    assert_int_equal(g->noutputs, 2);
    assert_int_equal(*(const uint8_t *)g->vals[g->outputs[0]].data, 1);
    ir_graph_free(g);
    ir_diag_free(&d);
    fe_seq_free(&one);

    int64_t two[] = {4, 4};             /* an optional tensor holds one tensor */
    FeSeq s2 = structure(2, two);
    sp.seq = &s2;
    assert_null(load(opt_model(), &sp, &d));
    assert_true(diag_has(&d, "holds one tensor or none"));
    ir_diag_free(&d);
    fe_seq_free(&s2);
}

/* A GraphProto body "name" of nodes n[0..nn) with outputs outs (untyped). */
static Buf body(const char *name, const Buf *n, int nn, const char *const *outs, int nout)
{
    Buf g = {.n = 0};
    for (int i = 0; i < nn; i++)
        put_msg(&g, 1, &n[i]);
    put_str(&g, 2, name);
    for (int i = 0; i < nout; i++) {
        Buf vi = {.n = 0};
        put_str(&vi, 1, outs[i]);
        put_msg(&g, 12, &vi);
    }
    return g;
}

/* Graph: If(cond) with branches that make sequences of different lengths: the condition
 * decides the structure of the result, so a runtime condition is reported as such (a
 * specialisation, --bind cond=FILE, resolves it). */
static void test_structure_needs_condition(void **state)
{
    (void)state;
    const char *x[] = {"x"}, *t[] = {"t"}, *e[] = {"e"}, *cond[] = {"cond"}, *r[] = {"r"};
    Buf tn = node("SequenceConstruct", x, 1, t, 1, NULL, 0);
    Buf en = node("SequenceConstruct", x, 1, e, 1, NULL, 0);
    Buf en2 = node("SequenceInsert", (const char *[]){"e", "x"}, 2, (const char *[]){"e2"}, 1,
                   NULL, 0);
    Buf tb = body("then", &tn, 1, t, 1), eb = body("else", (Buf[]){en, en2}, 2,
                                                  (const char *[]){"e2"}, 1);
    Buf ifn = node("If", cond, 1, r, 1, NULL, 0), a1 = {.n = 0}, a2 = {.n = 0};
    put_str(&a1, 1, "then_branch");
    put_int(&a1, 20, 5);                /* AttributeType GRAPH */
    put_msg(&a1, 6, &tb);
    put_str(&a2, 1, "else_branch");
    put_int(&a2, 20, 5);
    put_msg(&a2, 6, &eb);
    put_msg(&ifn, 5, &a1);
    put_msg(&ifn, 5, &a2);
    int64_t d2[] = {2};
    Buf g = {.n = 0}, xt = tensor_type(1, d2), bt = {.n = 0}, btt = {.n = 0}, shape = {.n = 0};
    put_int(&btt, 1, IR_DT_BOOL);
    put_msg(&btt, 2, &shape);
    put_msg(&bt, 1, &btt);
    Buf ci = value_info("cond", &bt), xi = value_info("x", &xt), rt = wrap_type(4, &xt);
    Buf ri = value_info("r", &rt);
    put_msg(&g, 1, &ifn);
    put_str(&g, 2, "g");
    put_msg(&g, 11, &ci);
    put_msg(&g, 11, &xi);
    put_msg(&g, 12, &ri);
    IrDiag d;
    const char *path = write_model(&g, "if.onnx");
    int64_t d2s[] = {2};                /* a structure for a tensor input is refused */
    FeSeq s1 = structure(1, d2s);
    assert_null(load(path, &(FeInputSpec){.name = "x", .rank = -1, .seq = &s1}, &d));
    assert_true(diag_has(&d, "input 'x' is not a sequence or an optional"));
    ir_diag_free(&d);
    fe_seq_free(&s1);
    IrGraph *ig = load(path, NULL, &d);
    assert_non_null(ig);
    PassOptions po = {.opt_level = 2};
    assert_false(pass_decompose(ig, &po));
    assert_true(diag_has(&d, "unsupported: dynamic condition input 'cond' (a graph input"));
    ir_graph_free(ig);
    ir_diag_free(&d);
}

static void test_file_read(void **state)
{
    (void)state;
    int64_t d2[] = {2};
    Buf s = container("s", 1), t = tensor_f32(1, d2, 3);
    put_msg(&s, 3, &t);
    char path[128], err[512];
    snprintf(path, sizeof path, "%s/seq.pb", tmpdir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(s.b, 1, s.n, f), s.n);
    fclose(f);
    FeSeq q;
    assert_true(fe_seq_read(path, &q, err, sizeof err));
    assert_int_equal(q.n, 1);
    assert_true(((float *)q.items[0].data)[1] == 4.0f);
    fe_seq_free(&q);
    FeTensor ft;                        /* the TensorProto reader refuses it */
    assert_false(fe_tensor_read(path, &ft, err, sizeof err));
    snprintf(path, sizeof path, "%s/missing.pb", tmpdir);
    assert_false(fe_seq_read(path, &q, err, sizeof err));
    assert_non_null(strstr(err, "missing.pb"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_sequence),
        cmocka_unit_test(test_read_optional),
        cmocka_unit_test(test_read_refusals),
        cmocka_unit_test_setup_teardown(test_file_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_input_needs_structure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sequence_in_and_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_optional_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_structure_needs_condition, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
