/* test_pt2.c: unit tests of the torch.export (.pt2) frontend and the ATen
 * decompositions.
 *
 * - every ../shared/models/NAME/model.pt2 loads with the inputs and outputs of its
 *   manifest, decomposes to core ops only, and (evaluated node by node with the IR's
 *   reference evaluator) reproduces NAME/test_data_set_0/output_K.pb;
 * - hand-built archives (written by a small stored-zip writer below, into a temporary
 *   folder) check the conversion rules (parameters, in-place ops, inlined
 *   higher-order ops, scalar arguments) and every refusal: "../x" and absolute entry
 *   names, duplicate entries, bad CRCs, lying sizes, unsupported compression, pickled
 *   weights, wrong weight sizes, deep JSON, duplicate keys, unknown schema versions,
 *   unknown dtypes, symbolic shapes, unknown operators (all listed), truncation at
 *   every byte and allocation failures.
 * Run from the repository root.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "frontend/fe.h"
#include "frontend/fe_pt2_priv.h"
#include "passes/pass.h"

#define MODELS "../shared/models"

static char tmpdir[256];

/* ---- a stored-zip writer that can also write broken archives ---- */

typedef struct {
    const char *name;
    const void *data;
    size_t len;
    int method;                            /* claimed compression method (data stored) */
    bool bad_crc;                          /* write a wrong CRC */
    long size_delta;                       /* central directory lies about the size */
} ZEnt;

/* CRC-32 (zip polynomial), bit by bit. */
static uint32_t crc32_of(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= b[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
    }
    return ~c;
}

static void put16(FILE *f, unsigned v) { fputc(v & 255, f), fputc((v >> 8) & 255, f); }
static void put32(FILE *f, uint32_t v) { put16(f, v & 0xffff), put16(f, v >> 16); }

/* One header (local when central is false). */
static void zip_header(FILE *f, const ZEnt *e, uint32_t crc, bool central, uint32_t off)
{
    put32(f, central ? 0x02014b50 : 0x04034b50);
    if (central)
        put16(f, 20);
    put16(f, 20), put16(f, 0), put16(f, (unsigned)e->method), put16(f, 0), put16(f, 0x21);
    put32(f, crc);
    uint32_t usize = (uint32_t)e->len + (central ? (uint32_t)e->size_delta : 0);
    put32(f, (uint32_t)e->len), put32(f, usize);
    put16(f, (unsigned)strlen(e->name)), put16(f, 0);
    if (central) {
        put16(f, 0), put16(f, 0), put16(f, 0), put32(f, 0), put32(f, off);
    }
    fwrite(e->name, 1, strlen(e->name), f);
}

/* Write entries e[0..n) as a zip file at path. */
static void write_zip(const char *path, const ZEnt *e, int n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint32_t *offs = calloc((size_t)n + 1, sizeof *offs), *crcs = calloc((size_t)n + 1, 4);
    assert_non_null(offs);
    assert_non_null(crcs);
    for (int i = 0; i < n; i++) {
        offs[i] = (uint32_t)ftell(f);
        crcs[i] = crc32_of(e[i].data, e[i].len) ^ (e[i].bad_crc ? 0x5a5a5a5au : 0);
        zip_header(f, &e[i], crcs[i], false, 0);
        fwrite(e[i].data, 1, e[i].len, f);
    }
    uint32_t cd = (uint32_t)ftell(f);
    for (int i = 0; i < n; i++)
        zip_header(f, &e[i], crcs[i], true, offs[i]);
    uint32_t cdsize = (uint32_t)ftell(f) - cd;
    put32(f, 0x06054b50), put16(f, 0), put16(f, 0), put16(f, (unsigned)n), put16(f, (unsigned)n);
    put32(f, cdsize), put32(f, cd), put16(f, 0);
    fclose(f);
    free(offs);
    free(crcs);
}

/* ---- a small program: x f32[2,3] user input, parameter w f32[3] ---- */

#define META(dt, sizes, strides)                                                              \
    "{\"dtype\":" dt ",\"sizes\":[" sizes "],\"requires_grad\":false,\"device\":{\"type\":"   \
    "\"cpu\",\"index\":null},\"strides\":[" strides "],\"storage_offset\":{\"as_int\":0},"    \
    "\"layout\":7}"
#define I(n) "{\"as_int\":" #n "}"
#define M23 META("7", I(2) "," I(3), I(3) "," I(1))
#define M3 META("7", I(3), I(1))
#define TARG(arg, t) "{\"name\":\"" arg "\",\"arg\":{\"as_tensor\":{\"name\":\"" t "\"}},\"kind\":1}"
#define OUT(t) "{\"as_tensor\":{\"name\":\"" t "\"}}"
#define IARG(arg, v) ",{\"name\":\"" arg "\",\"arg\":{\"as_int\":" #v \
                          "},\"kind\":1}"
/* (IARG, FARG: an int / float argument after a TARG) */
#define FARG(arg, v) ",{\"name\":\"" arg "\",\"arg\":{\"as_float\":" #v "},\"kind\":1}"
#define NODE(target, name, ins, outs)                                                         \
    "{\"target\":\"" target "\",\"inputs\":[" ins "],\"outputs\":[" outs "],"                 \
    "\"metadata\":{\"stack_trace\":\"File model.py, line 7\"},\"name\":\"" name "\"}"

/* add(x, w) -> relu_ (in place: later uses of "add" see its result) -> mul(add, add). */
#define DEFAULT_NODES                                                                         \
    NODE("torch.ops.aten.add.Tensor", "add", TARG("self", "x") "," TARG("other", "p_w"),      \
         OUT("add")) ","                                                                      \
    NODE("torch.ops.aten.relu_.default", "relu_", TARG("self", "add"), OUT("relu_")) ","      \
    NODE("torch.ops.aten.mul.Tensor", "mul", TARG("self", "add") "," TARG("other", "add"),    \
         OUT("mul"))
#define DEFAULT_VALUES "\"add\":" M23 ",\"relu_\":" M23 ",\"mul\":" M23

/* The serialized program with the given nodes, extra tensor_values, output name and
 * schema major version. Returns malloc'd text. */
static char *program(const char *nodes, const char *values, const char *out, int major)
{
    const char *fmt =
        "{\"graph_module\":{\"graph\":{\"inputs\":[" OUT("p_w") "," OUT("x") "],"
        "\"outputs\":[" OUT("%s") "],\"nodes\":[%s],"
        "\"tensor_values\":{\"p_w\":" M3 ",\"x\":" M23 "%s%s},"
        "\"sym_int_values\":{},\"sym_bool_values\":{},\"is_single_tensor_return\":false,"
        "\"custom_obj_values\":{},\"sym_float_values\":{}},"
        "\"signature\":{\"input_specs\":[{\"parameter\":{\"arg\":{\"name\":\"p_w\"},"
        "\"parameter_name\":\"w\"}},{\"user_input\":{\"arg\":" OUT("x") "}}],"
        "\"output_specs\":[{\"user_output\":{\"arg\":" OUT("%s") "}}]},"
        "\"module_call_graph\":[],\"metadata\":{},\"treespec_namedtuple_fields\":{}},"
        "\"opset_version\":{\"aten\":10},\"range_constraints\":{},"
        "\"schema_version\":{\"major\":%d,\"minor\":17},\"verifiers\":[],"
        "\"torch_version\":\"2.11.0\",\"guards_code\":[]}";
    size_t n = strlen(fmt) + strlen(nodes) + strlen(values) + 2 * strlen(out) + 64;
    char *s = malloc(n);
    assert_non_null(s);
    snprintf(s, n, fmt, out, nodes, *values ? "," : "", values, out, major);
    return s;
}

static const float w_data[3] = {1.0f, 0.5f, -1.0f};

#define WCFG(pickle)                                                                          \
    "{\"config\":{\"w\":{\"path_name\":\"weight_0\",\"is_param\":true,\"use_pickle\":" pickle \
    ",\"tensor_meta\":" M3 "}}}"

/* Entries of a valid archive around program text prog (weights config wcfg, weight
 * bytes of length wlen). Fills e (room for 8) and returns the count. */
static int archive(ZEnt *e, const char *prog, const char *wcfg, size_t wlen)
{
    int n = 0;
    e[n++] = (ZEnt){.name = "model/archive_format", .data = "pt2", .len = 3};
    e[n++] = (ZEnt){.name = "model/byteorder", .data = "little", .len = 6};
    e[n++] = (ZEnt){.name = "model/models/model.json", .data = prog, .len = strlen(prog)};
    e[n++] = (ZEnt){.name = "model/data/weights/model_weights_config.json", .data = wcfg,
                    .len = strlen(wcfg)};
    e[n++] = (ZEnt){.name = "model/data/weights/weight_0", .data = w_data, .len = wlen};
    e[n++] = (ZEnt){.name = "model/data/sample_inputs/model.pt", .data = "\x80\x02}q\x00.",
                    .len = 6};
    return n;
}

/* Path of a test archive in the temporary folder. */
static const char *tmp_path(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
    return buf;
}

/* Whether some message of d contains needle. */
static bool diag_has(const IrDiag *d, const char *needle)
{
    for (int i = 0; i < d->nmsgs; i++)
        if (strstr(d->msgs[i], needle))
            return true;
    return false;
}

static void print_diag(const IrDiag *d)
{
    for (int i = 0; i < d->nmsgs; i++)
        print_message("    %s\n", d->msgs[i]);
}

/* Write the default program (DEFAULT_NODES) and its weights as archive tmp/file. */
static void write_default_archive(const char *file)
{
    ZEnt e[8];
    char *prog = program(DEFAULT_NODES, DEFAULT_VALUES, "mul", 8);
    int n = archive(e, prog, WCFG("false"), sizeof w_data);
    write_zip(tmp_path(file), e, n);
    free(prog);
}

/* Load path and expect failure with a message containing needle (and the file name). */
static void expect_refusal(const char *path, const char *needle)
{
    IrDiag d;
    ir_diag_init(&d, path);
    IrGraph *g = fe_load_pt2(path, &d, NULL);
    if (g || !diag_has(&d, needle)) {
        print_message("expected a refusal containing '%s'; got:\n", needle);
        print_diag(&d);
    }
    assert_null(g);
    assert_true(diag_has(&d, needle));
    assert_true(diag_has(&d, path));
    ir_diag_free(&d);
}

/* Write an archive whose program has the given nodes/values/output and expect a
 * refusal at load time. */
static void refuse_program(const char *nodes, const char *values, const char *out,
                           const char *needle)
{
    ZEnt e[8];
    char *prog = program(nodes, values, out, 8);
    int n = archive(e, prog, WCFG("false"), sizeof w_data);
    write_zip(tmp_path("p.pt2"), e, n);
    expect_refusal(tmp_path("p.pt2"), needle);
    free(prog);
}

/* ---- evaluation of a decomposed graph with the IR's reference evaluator ---- */

/* Evaluate every node; inputs[i] feeds graph input i. Returns the value data array
 * (malloc'd, indexed by ValId) or NULL if a node cannot be evaluated. */
static const void **evaluate(IrGraph *g, const void *const *inputs)
{
    const void **data = calloc(g->nvals + 1, sizeof *data);
    assert_non_null(data);
    for (ValId v = 0; v < g->nvals; v++)
        if (g->vals[v].kind == IR_VAL_CONST)
            data[v] = g->vals[v].data;
    for (uint32_t i = 0; i < g->ninputs; i++)
        data[g->inputs[i]] = inputs[i];
    for (uint32_t i = 0; i < g->nnodes; i++) {
        IrNode *n = &g->nodes[i];
        const void *in[64];
        void *out[8];
        if (n->dead)
            continue;
        assert_true(n->nin <= 64 && n->nout <= 8);
        for (int k = 0; k < n->nin; k++)
            in[k] = n->in[k] == IR_NONE ? NULL : data[n->in[k]];
        if (!ir_eval_node(g, n, in, out)) {
            print_message("cannot evaluate node %u (%s)\n", i, ir_op_info[n->op].name);
            free(data);
            return NULL;
        }
        for (int k = 0; k < n->nout; k++)
            data[n->out[k]] = out[k];
    }
    return data;
}

/* Run pass_decompose; true if it succeeded and left only core ops. */
static bool decompose(IrGraph *g)
{
    jmp_buf oom;
    if (setjmp(oom))
        return false;
    g->oom = &oom;
    PassOptions po = {.opt_level = 1};
    bool ok = pass_decompose(g, &po);
    for (uint32_t i = 0; ok && i < g->nnodes; i++)
        ok = g->nodes[i].dead || g->nodes[i].op != IR_OP_FOREIGN;
    g->oom = NULL;
    return ok;
}

/* Load the archive at path, which must succeed; diagnostics into d (initialised). */
static IrGraph *load_ok(const char *path, IrDiag *d)
{
    ir_diag_init(d, path);
    IrGraph *g = fe_load_pt2(path, d, NULL);
    if (!g)
        print_diag(d);
    assert_non_null(g);
    return g;
}

/* Decompose g, which must succeed (see decompose). */
static void decompose_ok(IrGraph *g)
{
    bool ok = decompose(g);
    if (!ok)
        print_diag(g->diag);
    assert_true(ok);
}

/* ---- the model zoo ---- */

/* dtype name of a manifest ("float32") as an IrDType. */
static IrDType manifest_dtype(const char *s)
{
    static const struct { const char *n; IrDType t; } m[] = {
        {"float32", IR_DT_F32}, {"int64", IR_DT_I64}, {"int32", IR_DT_I32},
        {"bool", IR_DT_BOOL},   {"float16", IR_DT_F16}, {"float64", IR_DT_F64}};
    for (size_t i = 0; s && i < sizeof m / sizeof m[0]; i++)
        if (!strcmp(s, m[i].n))
            return m[i].t;
    return IR_DT_UNDEF;
}

/* The value v has the dtype and shape of manifest entry e. */
static void check_against_manifest(IrGraph *g, ValId v, json_t *e)
{
    const IrType *t = ir_vtype(g, v);
    json_t *shape = json_object_get(e, "shape");
    assert_int_equal(t->dtype, manifest_dtype(json_string_value(json_object_get(e, "dtype"))));
    assert_int_equal((size_t)t->rank, json_array_size(shape));
    for (int i = 0; i < t->rank; i++)
        assert_int_equal(t->dims[i], json_integer_value(json_array_get(shape, (size_t)i)));
}

/* Compare output value v with the golden tensor file path (rtol 1e-3, atol 1e-4). */
static void check_golden(IrGraph *g, ValId v, const void *got, const char *path)
{
    FeTensor ref;
    char err[512];
    assert_true(fe_tensor_read(path, &ref, err, sizeof err));
    const IrType *t = ir_vtype(g, v);
    assert_int_equal(ref.dtype, t->dtype);
    assert_int_equal(ref.nbytes, ir_type_bytes(t));
    int64_t n = ir_type_numel(t), bad = 0;
    for (int64_t i = 0; i < n && t->dtype == IR_DT_F32; i++) {
        double a = ((const float *)got)[i], b = ((const float *)ref.data)[i];
        if (!(fabs(a - b) <= 1e-4 + 1e-3 * fabs(b)))
            bad++;
    }
    if (bad)
        print_message("%s: %lld of %lld values outside tolerance\n", path, (long long)bad,
                      (long long)n);
    assert_int_equal(bad, 0);
    fe_tensor_free(&ref);
}

/* Load, check and evaluate one model of the zoo. */
static void check_zoo_model(const char *dir)
{
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    json_error_t je;
    json_t *man = json_load_file(path, 0, &je);
    assert_non_null(man);
    json_t *mins = json_object_get(man, "inputs"), *mouts = json_object_get(man, "outputs");
    snprintf(path, sizeof path, "%s/model.pt2", dir);
    IrDiag d;
    IrGraph *g = load_ok(path, &d);
    assert_int_equal(g->ninputs, json_array_size(mins));
    assert_int_equal(g->noutputs, json_array_size(mouts));
    for (uint32_t i = 0; i < g->ninputs; i++)
        check_against_manifest(g, g->inputs[i], json_array_get(mins, i));
    for (uint32_t i = 0; i < g->noutputs; i++)
        check_against_manifest(g, g->outputs[i], json_array_get(mouts, i));
    for (uint32_t i = 0; i < g->nnodes; i++) {
        assert_int_equal(g->nodes[i].op, IR_OP_FOREIGN);
        assert_string_equal(g->nodes[i].foreign.domain, "aten");
        assert_true(!strncmp(g->nodes[i].foreign.op_type, "aten.", 5));
    }
    decompose_ok(g);
    FeTensor ins[16];
    const void *inp[16];
    assert_true(g->ninputs <= 16);
    for (uint32_t i = 0; i < g->ninputs; i++) {
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%u.pb", dir, i);
        assert_true(fe_tensor_read(path, &ins[i], err, sizeof err));
        assert_int_equal(ins[i].nbytes, ir_type_bytes(ir_vtype(g, g->inputs[i])));
        inp[i] = ins[i].data;
    }
    const void **data = evaluate(g, inp);
    assert_non_null(data);
    for (uint32_t i = 0; i < g->noutputs; i++) {
        snprintf(path, sizeof path, "%s/test_data_set_0/output_%u.pb", dir, i);
        check_golden(g, g->outputs[i], data[g->outputs[i]], path);
    }
    for (uint32_t i = 0; i < g->ninputs; i++)
        fe_tensor_free(&ins[i]);
    free(data);
    ir_graph_free(g);
    ir_diag_free(&d);
    json_decref(man);
}

/* Every ../shared/models/NAME/model.pt2. */
static void test_zoo(void **state)
{
    (void)state;
    DIR *dir = opendir(MODELS);
    if (!dir) {
        print_message("skipped: %s is not present\n", MODELS);
        skip();
    }
    int count = 0;
    struct dirent *de;
    char names[64][256];
    while ((de = readdir(dir)) && count < 64) {
        char p[600];
        snprintf(p, sizeof p, "%s/%.255s/model.pt2", MODELS, de->d_name);
        if (de->d_name[0] != '.' && access(p, R_OK) == 0)
            snprintf(names[count++], sizeof names[0], "%s", de->d_name);
    }
    closedir(dir);
    for (int i = 0; i < count; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/%.255s", MODELS, names[i]);
        print_message("  %s/model.pt2\n", names[i]);
        check_zoo_model(p);
    }
    if (count == 0) {
        print_message("skipped: no model.pt2 under %s\n", MODELS);
        skip();
    }
}

/* Input names follow the program's placeholders (the forward arguments). */
static void test_zoo_names(void **state)
{
    (void)state;
    const char *path = MODELS "/dlrm_small/model.pt2";
    if (access(path, R_OK) != 0) {
        print_message("skipped: %s is not present\n", path);
        skip();
    }
    IrDiag d;
    IrGraph *g = load_ok(path, &d);
    assert_int_equal(g->ninputs, 2);
    assert_string_equal(ir_val(g, g->inputs[0])->name, "dense");
    assert_string_equal(ir_val(g, g->inputs[1])->name, "sparse");
    ir_graph_free(g);
    ir_diag_free(&d);
}

/* ---- conversion rules on hand-built archives ---- */

/* Load the archive at path (must succeed), decompose it and evaluate it on x. */
static void load_eval(const char *path, const float *x, float *out, int nout)
{
    IrDiag d;
    IrGraph *g = load_ok(path, &d);
    assert_int_equal(g->ninputs, 1);
    assert_string_equal(ir_val(g, g->inputs[0])->name, "x");
    assert_int_equal(g->noutputs, 1);
    decompose_ok(g);
    const void *in[1] = {x};
    const void **data = evaluate(g, in);
    assert_non_null(data);
    memcpy(out, data[g->outputs[0]], (size_t)nout * sizeof *out);
    free(data);
    ir_graph_free(g);
    ir_diag_free(&d);
}

static const float x_data[6] = {-3, -2, -1, 0, 1, 2};

/* Parameters become constants; relu_ rebinds "add"; the result is relu(x + w)^2. */
static void test_basic_program(void **state)
{
    (void)state;
    write_default_archive("ok.pt2");
    IrDiag d;
    IrGraph *g = load_ok(tmp_path("ok.pt2"), &d);
    ValId w = ir_find_value(g, "w");
    assert_int_not_equal(w, IR_NONE);
    assert_true(ir_is_const(g, w));
    assert_memory_equal(ir_val(g, w)->data, w_data, sizeof w_data);
    assert_int_equal(g->nnodes, 3);
    assert_string_equal(g->nodes[0].foreign.op_type, "aten.add.Tensor");
    assert_string_equal(g->nodes[0].origin.name, "add");
    assert_non_null(g->nodes[0].origin.stack);
    assert_int_equal(g->nodes[2].in[0], g->nodes[1].out[0]); /* in-place rebinding */
    ir_graph_free(g);
    ir_diag_free(&d);
    float out[6];
    load_eval(tmp_path("ok.pt2"), x_data, out, 6);
    for (int i = 0; i < 6; i++) {
        float s = x_data[i] + w_data[i % 3], r = s > 0 ? s * s : 0;
        assert_float_equal(out[i], r, 1e-6);
    }
}

/* Scalar arguments: ints, and floats written as "-Infinity". */
static void test_scalar_arguments(void **state)
{
    (void)state;
    const char *nodes =
        NODE("torch.ops.aten.mul.Tensor", "mul", TARG("self", "x")
             ",{\"name\":\"other\",\"arg\":{\"as_float\":2.5},\"kind\":1}", OUT("mul")) ","
        NODE("torch.ops.aten.gt.Scalar", "gt", TARG("self", "x")
             ",{\"name\":\"other\",\"arg\":{\"as_int\":0},\"kind\":1}", OUT("gt")) ","
        NODE("torch.ops.aten.masked_fill.Scalar", "mf", TARG("self", "mul") "," TARG("mask", "gt")
             ",{\"name\":\"value\",\"arg\":{\"as_float\":\"-Infinity\"},\"kind\":1}", OUT("mf"));
    const char *values = "\"mul\":" M23 ",\"gt\":" META("12", I(2) "," I(3), I(3) "," I(1))
                         ",\"mf\":" M23;
    ZEnt e[8];
    char *prog = program(nodes, values, "mf", 8);
    int n = archive(e, prog, WCFG("false"), sizeof w_data);
    write_zip(tmp_path("scalar.pt2"), e, n);
    float out[6];
    load_eval(tmp_path("scalar.pt2"), x_data, out, 6);
    for (int i = 0; i < 6; i++) {
        if (x_data[i] > 0)
            assert_true(isinf(out[i]) && out[i] < 0);
        else
            assert_float_equal(out[i], x_data[i] * 2.5f, 1e-6);
    }
    free(prog);
}

/* wrap_with_set_grad_enabled is inlined: its subgraph (neg) binds to the operands. */
static void test_hop_inlined(void **state)
{
    (void)state;
    const char *nodes =
        "{\"target\":\"torch.ops.higher_order.wrap_with_set_grad_enabled\",\"inputs\":["
        "{\"name\":\"\",\"arg\":{\"as_bool\":false},\"kind\":1},"
        "{\"name\":\"\",\"arg\":{\"as_graph\":{\"name\":\"submod_1\",\"graph\":{"
        "\"inputs\":[" OUT("a") "],\"outputs\":[" OUT("n") "],\"nodes\":["
        NODE("torch.ops.aten.neg.default", "n", TARG("self", "a"), OUT("n"))
        "],\"tensor_values\":{\"a\":" M23 ",\"n\":" M23 "},\"sym_int_values\":{},"
        "\"sym_bool_values\":{},\"is_single_tensor_return\":false}}},\"kind\":1},"
        "{\"name\":\"\",\"arg\":" OUT("x") ",\"kind\":1}],"
        "\"outputs\":[" OUT("h") "],\"metadata\":{},\"name\":\"wrap\"}";
    ZEnt e[8];
    char *prog = program(nodes, "\"h\":" M23, "h", 8);
    int n = archive(e, prog, WCFG("false"), sizeof w_data);
    write_zip(tmp_path("hop.pt2"), e, n);
    float out[6];
    load_eval(tmp_path("hop.pt2"), x_data, out, 6);
    for (int i = 0; i < 6; i++)
        assert_float_equal(out[i], -x_data[i], 0);
    free(prog);
}

/* Archive the program of nodes (extra tensor_values `values`) whose output is "c" as
 * file, and evaluate it on x_data into out[6]. */
static void eval_c(const char *nodes, const char *values, const char *file, float *out)
{
    ZEnt e[8];
    char *prog = program(nodes, values, "c", 8);
    int n = archive(e, prog, WCFG("false"), sizeof w_data);
    write_zip(tmp_path(file), e, n);
    load_eval(tmp_path(file), x_data, out, 6);
    free(prog);
}

/* An in-place op on a view writes into the viewed tensor (torch.export's training IR
 * keeps `c[1, 1:3] = 5` as slice, select, fill_): the output c must see the 5s. */
static void test_inplace_view(void **state)
{
    (void)state;
    const char *nodes =
        NODE("torch.ops.aten.clone.default", "c", TARG("self", "x"), OUT("c")) ","
        NODE("torch.ops.aten.slice.Tensor", "s",
             TARG("self", "c") IARG("dim", 1) IARG("start", 1) IARG("end", 9223372036854775807),
             OUT("s")) ","
        NODE("torch.ops.aten.select.int", "t", TARG("self", "s") IARG("dim", 0) IARG("index", 1),
             OUT("t")) ","
        NODE("torch.ops.aten.fill_.Scalar", "f", TARG("self", "t") FARG("value", 5.0), OUT("f"));
    const char *values = "\"c\":" M23 ",\"s\":" META("7", I(2) "," I(2), I(3) "," I(1))
                         ",\"t\":" META("7", I(2), I(1)) ",\"f\":" META("7", I(2), I(1));
    float out[6];
    eval_c(nodes, values, "view.pt2", out);
    for (int i = 0; i < 6; i++)
        assert_float_equal(out[i], i == 4 || i == 5 ? 5.0f : x_data[i], 0);
}

/* A write through a stepped slice (c[:, ::2] = 5) goes back as a stepped
 * slice_scatter. */
static void test_inplace_stepped(void **state)
{
    (void)state;
    const char *nodes =
        NODE("torch.ops.aten.clone.default", "c", TARG("self", "x"), OUT("c")) ","
        NODE("torch.ops.aten.slice.Tensor", "s",
             TARG("self", "c") IARG("dim", 1) IARG("start", 0) IARG("end", 3) IARG("step", 2),
             OUT("s")) ","
        NODE("torch.ops.aten.fill_.Scalar", "f", TARG("self", "s") FARG("value", 5.0), OUT("f"));
    const char *values = "\"c\":" M23 ",\"s\":" META("7", I(2) "," I(2), I(3) "," I(2))
                         ",\"f\":" META("7", I(2) "," I(2), I(3) "," I(2));
    float out[6];
    eval_c(nodes, values, "step.pt2", out);
    for (int i = 0; i < 6; i++)
        assert_float_equal(out[i], (i % 3 != 1 ? 5.0f : x_data[i]), 0);
}

/* index_put_ with a constant index tensor on axis 1 (c[:, arange(0, 3, 2)] = c[:, 0],
 * values broadcast over the rows): columns 0 and 2 of each row take x[:, 0]'s values
 * in order. */
static void test_index_put(void **state)
{
    (void)state;
    const char *nodes =
        NODE("torch.ops.aten.clone.default", "c", TARG("self", "x"), OUT("c")) ","
        NODE("torch.ops.aten.arange.start_step", "a", "{\"name\":\"start\",\"arg\":{\"as_int\":0},\"kind\":1}" IARG("end", 3)
             IARG("step", 2), OUT("a")) ","
        NODE("torch.ops.aten.select.int", "v", TARG("self", "x") IARG("dim", 1)
             IARG("index", 0), OUT("v")) ","
        NODE("torch.ops.aten.index_put_.default", "p", TARG("self", "c")
             ",{\"name\":\"indices\",\"arg\":{\"as_optional_tensors\":[{\"as_none\":true},"
             "{\"as_tensor\":{\"name\":\"a\"}}]},\"kind\":1}," TARG("values", "v"), OUT("p"));
    const char *values = "\"c\":" M23 ",\"a\":" META("5", I(2), I(1))
                         ",\"v\":" META("7", I(2), I(3)) ",\"p\":" M23;
    float out[6];
    eval_c(nodes, values, "iput.pt2", out);
    const float want[6] = {-3, -2, 0, -3, 1, 0};
    for (int i = 0; i < 6; i++)
        assert_float_equal(out[i], want[i], 0);
}

/* In-place writes through whole views go back through the inverse view: select of a
 * transpose (c[:, 1] = 5), select of a permute (c[:, 2] = 7), then mul_ of a flat view
 * (c.view(6) *= 2); the output c sees all three. */
static void test_inplace_whole_views(void **state)
{
    (void)state;
    const char *nodes =
        NODE("torch.ops.aten.clone.default", "c", TARG("self", "x"), OUT("c")) ","
        NODE("torch.ops.aten.transpose.int", "t", TARG("self", "c") IARG("dim0", 0) IARG("dim1", 1),
             OUT("t")) ","
        NODE("torch.ops.aten.select.int", "s", TARG("self", "t") IARG("dim", 0) IARG("index", 1),
             OUT("s")) ","
        NODE("torch.ops.aten.fill_.Scalar", "f", TARG("self", "s") FARG("value", 5.0), OUT("f")) ","
        NODE("torch.ops.aten.permute.default", "p", TARG("self", "c")
             ",{\"name\":\"dims\",\"arg\":{\"as_ints\":[1,0]},\"kind\":1}", OUT("p")) ","
        NODE("torch.ops.aten.select.int", "q", TARG("self", "p") IARG("dim", 0) IARG("index", 2),
             OUT("q")) ","
        NODE("torch.ops.aten.fill_.Scalar", "g", TARG("self", "q") FARG("value", 7.0), OUT("g")) ","
        NODE("torch.ops.aten.view.default", "v", TARG("self", "c")
             ",{\"name\":\"size\",\"arg\":{\"as_ints\":[6]},\"kind\":1}", OUT("v")) ","
        NODE("torch.ops.aten.mul_.Scalar", "m", TARG("self", "v") FARG("other", 2.0), OUT("m"));
    const char *m32 = META("7", I(3) "," I(2), I(1) "," I(3));
    const char *m2 = META("7", I(2), I(3)), *m6 = META("7", I(6), I(1));
    char values[4096];
    snprintf(values, sizeof values,
             "\"c\":" M23 ",\"t\":%s,\"s\":%s,\"f\":%s,\"p\":%s,\"q\":%s,\"g\":%s,\"v\":%s,"
             "\"m\":%s", m32, m2, m2, m32, m2, m2, m6, m6);
    float out[6];
    eval_c(nodes, values, "wview.pt2", out);
    for (int i = 0; i < 6; i++)
        assert_float_equal(out[i], 2 * (i % 3 == 1 ? 5.0f : i % 3 == 2 ? 7.0f : x_data[i]), 0);
}

/* Archive the program of nodes (extra tensor_values `values`) whose output is `name`
 * as file, and evaluate it on x_data into out[nout]. */
static void eval_named(const char *nodes, const char *values, const char *name,
                       const char *file, float *out, int nout)
{
    ZEnt e[8];
    char *prog = program(nodes, values, name, 8);
    int n = archive(e, prog, WCFG("false"), sizeof w_data);
    write_zip(tmp_path(file), e, n);
    load_eval(tmp_path(file), x_data, out, nout);
    free(prog);
}

#define BARG(arg, v) ",{\"name\":\"" arg "\",\"arg\":{\"as_bool\":" #v "},\"kind\":1}"
#define M22 META("7", I(2) "," I(2), I(2) "," I(1))
#define M22I META("5", I(2) "," I(2), I(2) "," I(1))

/* Indices computed at run time: index_put_ with accumulate at argmin(x, 1) = [0, 0]
 * (both writes add up), and index_copy at argsort(x[0], descending) = [2, 1, 0]. */
static void test_index_put_runtime(void **state)
{
    (void)state;
    const char *put =
        NODE("torch.ops.aten.clone.default", "c", TARG("self", "x"), OUT("c")) ","
        NODE("torch.ops.aten.argmin.default", "a", TARG("self", "x") IARG("dim", 1), OUT("a")) ","
        NODE("torch.ops.aten.select.int", "v", TARG("self", "x") IARG("dim", 1)
             IARG("index", 0), OUT("v")) ","
        NODE("torch.ops.aten.index_put_.default", "p", TARG("self", "c")
             ",{\"name\":\"indices\",\"arg\":{\"as_optional_tensors\":[{\"as_none\":true},"
             "{\"as_tensor\":{\"name\":\"a\"}}]},\"kind\":1}," TARG("values", "v")
             BARG("accumulate", true), OUT("p"));
    const char *values = "\"c\":" M23 ",\"a\":" META("5", I(2), I(1))
                         ",\"v\":" META("7", I(2), I(3)) ",\"p\":" M23;
    float out[6];
    eval_c(put, values, "iput_rt.pt2", out);
    const float want[6] = {-6, -2, -1, -3, 1, 2};
    for (int i = 0; i < 6; i++)
        assert_float_equal(out[i], want[i], 0);
    const char *copy =
        NODE("torch.ops.aten.select.int", "r", TARG("self", "x") IARG("dim", 0)
             IARG("index", 0), OUT("r")) ","
        NODE("torch.ops.aten.argsort.default", "a", TARG("self", "r") IARG("dim", 0)
             BARG("descending", true), OUT("a")) ","
        NODE("torch.ops.aten.index_copy.default", "p", TARG("self", "x") IARG("dim", 1) ","
             TARG("index", "a") "," TARG("source", "x"), OUT("p"));
    const char *cvalues = "\"r\":" M3 ",\"a\":" META("5", I(3), I(1)) ",\"p\":" M23;
    eval_named(copy, cvalues, "p", "icopy_rt.pt2", out, 6);
    const float want_c[6] = {-1, -2, -3, 2, 1, 0};
    for (int i = 0; i < 6; i++)
        assert_float_equal(out[i], want_c[i], 0);
}

/* embedding_bag of weight w viewed [3, 1] = [[1], [0.5], [-1]] at indices [0, 1, 2]
 * (argsort of x[1], known at run time) in bags [0, 2) and [2, 3): offsets computed at
 * run time (argsort(x[1])[:2] * 2) or constant (arange(0, 3, 2)); mode and padding_idx
 * as given (the padding entry counts in no bag). */
static void bag_case(const char *offsets_node, int mode, int pad, const float *want)
{
    static const char *const head =
        NODE("torch.ops.aten.view.default", "w", TARG("self", "p_w")
             ",{\"name\":\"size\",\"arg\":{\"as_ints\":[3,1]},\"kind\":1}", OUT("w")) ","
        NODE("torch.ops.aten.select.int", "r", TARG("self", "x") IARG("dim", 0)
             IARG("index", 1), OUT("r")) ","
        NODE("torch.ops.aten.argsort.default", "a", TARG("self", "r") IARG("dim", 0), OUT("a"));
    static const char *const bag =
        "{\"target\":\"torch.ops.aten.embedding_bag.padding_idx\",\"inputs\":["
        TARG("weight", "w") "," TARG("indices", "a") "," TARG("offsets", "off")
        BARG("scale_grad_by_freq", false) IARG("mode", %d) BARG("sparse", false)
        BARG("include_last_offset", false) "%s],\"outputs\":[" OUT("eb") "," OUT("o2b")
        "," OUT("bs") "," OUT("mi") "],\"metadata\":{},\"name\":\"eb\"}";
    static const char *const values =
        "\"w\":" META("7", I(3) "," I(1), I(1) "," I(1)) ",\"r\":" M3 ",\"a\":"
        META("5", I(3), I(1)) ",\"s\":" META("5", I(2), I(1)) ",\"off\":"
        META("5", I(2), I(1)) ",\"eb\":" META("7", I(2) "," I(1), I(1) "," I(1))
        ",\"o2b\":" META("5", I(3), I(1)) ",\"bs\":" META("5", I(2), I(1))
        ",\"mi\":" META("5", I(2), I(1));
    char pad_arg[128] = "", tail[1024], nodes[8192];
    if (pad >= 0)
        snprintf(pad_arg, sizeof pad_arg,
                 ",{\"name\":\"padding_idx\",\"arg\":{\"as_int\":%d},\"kind\":1}", pad);
    snprintf(tail, sizeof tail, bag, mode, pad_arg);
    snprintf(nodes, sizeof nodes, "%s,%s,%s", head, offsets_node, tail);
    float out[2];
    eval_named(nodes, values, "eb", "bag.pt2", out, 2);
    for (int i = 0; i < 2; i++)
        assert_float_equal(out[i], want[i], 1e-6);
}

/* scatter_reduce amax with include_self=False on int64: a = argsort(x[1]) = [0, 1, 2]
 * gets src (a * -5 = [0, -5, -10], cut to the index's 2 entries) at [0, 1]: position
 * 1 takes -5 (not max(1, -5)), position 2 keeps 2; the targets start from int64's
 * minimum, which a double cannot hold. */
static void test_scatter_reduce_int(void **state)
{
    (void)state;
    const char *nodes =
        NODE("torch.ops.aten.select.int", "r", TARG("self", "x") IARG("dim", 0)
             IARG("index", 1), OUT("r")) ","
        NODE("torch.ops.aten.argsort.default", "a", TARG("self", "r") IARG("dim", 0), OUT("a")) ","
        NODE("torch.ops.aten.slice.Tensor", "i", TARG("self", "a") IARG("dim", 0)
             IARG("start", 0) IARG("end", 2), OUT("i")) ","
        NODE("torch.ops.aten.mul.Tensor", "s", TARG("self", "a") IARG("other", -5), OUT("s")) ","
        NODE("torch.ops.aten.scatter_reduce.two", "sr", TARG("self", "a") IARG("dim", 0) ","
             TARG("index", "i") "," TARG("src", "s")
             ",{\"name\":\"reduce\",\"arg\":{\"as_string\":\"amax\"},\"kind\":1}"
             BARG("include_self", false), OUT("sr")) ","
        NODE("torch.ops.aten.mul.Tensor", "f", TARG("self", "sr") FARG("other", 1.0), OUT("f"));
    const char *values = "\"r\":" M3 ",\"a\":" META("5", I(3), I(1)) ",\"i\":"
                         META("5", I(2), I(1)) ",\"s\":" META("5", I(3), I(1))
                         ",\"sr\":" META("5", I(3), I(1)) ",\"f\":" M3;
    float out[3];
    eval_named(nodes, values, "f", "sred_int.pt2", out, 3);
    const float want[3] = {0, -5, 2};
    for (int i = 0; i < 3; i++)
        assert_float_equal(out[i], want[i], 0);
}

/* Both embedding_bag layouts (membership matrix, constant map), with padding_idx. */
static void test_embedding_bag_forms(void **state)
{
    (void)state;
    const char *rt_off =
        NODE("torch.ops.aten.slice.Tensor", "s", TARG("self", "a") IARG("dim", 0)
             IARG("start", 0) IARG("end", 2), OUT("s")) ","
        NODE("torch.ops.aten.mul.Tensor", "off", TARG("self", "s") IARG("other", 2), OUT("off"));
    const char *const_off =
        NODE("torch.ops.aten.arange.start_step", "off", "{\"name\":\"start\",\"arg\":"
             "{\"as_int\":0},\"kind\":1}" IARG("end", 3) IARG("step", 2), OUT("off"));
    const float sum[2] = {1.5f, -1.0f}, padded[2] = {1.0f, -1.0f};
    bag_case(rt_off, 0, -1, sum);      /* runtime offsets, sum */
    bag_case(rt_off, 1, 1, padded);    /* runtime offsets, mean without index 1 */
    bag_case(rt_off, 2, 1, padded);    /* runtime offsets, max without index 1 */
    bag_case(const_off, 0, -1, sum);   /* constant offsets */
    bag_case(const_off, 1, 1, padded);
    bag_case(const_off, 2, 1, padded);
}

/* topk (k = 2, smallest) and sort (descending) along dim 1: values of each row of
 * x = [[-3, -2, -1], [0, 1, 2]]; the second output (indices) is bound but unused. */
static void test_topk_sort(void **state)
{
    (void)state;
    const char *topk =
        NODE("torch.ops.aten.topk.default", "tk", TARG("self", "x") IARG("k", 2) IARG("dim", 1)
             BARG("largest", false), OUT("v") "," OUT("i"));
    float out[6];
    eval_named(topk, "\"v\":" M22 ",\"i\":" M22I, "v", "topk.pt2", out, 4);
    const float want_k[4] = {-3, -2, 0, 1};
    for (int i = 0; i < 4; i++)
        assert_float_equal(out[i], want_k[i], 0);
    const char *sort =
        NODE("torch.ops.aten.sort.default", "st", TARG("self", "x") IARG("dim", 1)
             BARG("descending", true), OUT("v") "," OUT("i"));
    eval_named(sort, "\"v\":" M23 ",\"i\":" META("5", I(2) "," I(3), I(3) "," I(1)), "v",
               "sort.pt2", out, 6);
    const float want_s[6] = {-1, -2, -3, 2, 1, 0};
    for (int i = 0; i < 6; i++)
        assert_float_equal(out[i], want_s[i], 0);
}

/* upsample_bicubic2d of x viewed [1, 1, 2, 3] to [2, 5], align_corners: output
 * columns 0, 2, 4 are the input columns, 1 and 3 use four taps with weights
 * (-0.09375, 0.59375, 0.59375, -0.09375), the taps outside clamped to the edge. */
static void test_upsample_bicubic(void **state)
{
    (void)state;
    const char *nodes =
        NODE("torch.ops.aten.view.default", "v", TARG("self", "x")
             ",{\"name\":\"size\",\"arg\":{\"as_ints\":[1,1,2,3]},\"kind\":1}", OUT("v")) ","
        NODE("torch.ops.aten.upsample_bicubic2d.vec", "u", TARG("input", "v")
             ",{\"name\":\"output_size\",\"arg\":{\"as_ints\":[2,5]},\"kind\":1}"
             BARG("align_corners", true), OUT("u"));
    const char *values = "\"v\":" META("7", I(1) "," I(1) "," I(2) "," I(3),
                                       I(6) "," I(6) "," I(3) "," I(1))
                         ",\"u\":" META("7", I(1) "," I(1) "," I(2) "," I(5),
                                        I(10) "," I(10) "," I(5) "," I(1));
    float out[10];
    eval_named(nodes, values, "u", "bicubic.pt2", out, 10);
    const float want[10] = {-3, -2.59375f, -2, -1.40625f, -1, 0, 0.40625f, 1, 1.59375f, 2};
    for (int i = 0; i < 10; i++)
        assert_float_equal(out[i], want[i], 1e-5);
}

/* grid_sampler_2d with align_corners on the image x = [[-3, -2, -1], [0, 1, 2]]
 * ([1, 1, 2, 3]) at the grid x * 0.25 viewed [1, 1, 3, 2]: points (gx, gy) =
 * (-0.75, -0.5), (-0.25, 0), (0.25, 0.5), i.e. pixels (0.25, 0.25), (0.75, 0.5),
 * (1.25, 0.75). The image is affine (-3 + ix + 3 iy), so bilinear is exact there;
 * nearest rounds to the pixels (0, 0), (1, 0), (1, 1) (half to even). */
static void sampler_case(int mode, const float *want)
{
    char nodes[4096];
    snprintf(nodes, sizeof nodes, "%s",
             NODE("torch.ops.aten.view.default", "v", TARG("self", "x")
                  ",{\"name\":\"size\",\"arg\":{\"as_ints\":[1,1,2,3]},\"kind\":1}", OUT("v")) ","
             NODE("torch.ops.aten.mul.Tensor", "m", TARG("self", "x") FARG("other", 0.25),
                  OUT("m")) ","
             NODE("torch.ops.aten.view.default", "g", TARG("self", "m")
                  ",{\"name\":\"size\",\"arg\":{\"as_ints\":[1,1,3,2]},\"kind\":1}", OUT("g")));
    size_t o = strlen(nodes);
    snprintf(nodes + o, sizeof nodes - o,
             ",{\"target\":\"torch.ops.aten.grid_sampler_2d.default\",\"inputs\":["
             TARG("input", "v") "," TARG("grid", "g")
             ",{\"name\":\"interpolation_mode\",\"arg\":{\"as_int\":%d},\"kind\":1}"
             IARG("padding_mode", 0) BARG("align_corners", true) "],\"outputs\":[" OUT("s")
             "],\"metadata\":{},\"name\":\"s\"}", mode);
    const char *values = "\"v\":" META("7", I(1) "," I(1) "," I(2) "," I(3),
                                       I(6) "," I(6) "," I(3) "," I(1))
                         ",\"m\":" M23 ",\"g\":" META("7", I(1) "," I(1) "," I(3) "," I(2),
                                                      I(6) "," I(6) "," I(2) "," I(1))
                         ",\"s\":" META("7", I(1) "," I(1) "," I(1) "," I(3),
                                        I(3) "," I(3) "," I(3) "," I(1));
    float out[3];
    eval_named(nodes, values, "s", "grid.pt2", out, 3);
    for (int i = 0; i < 3; i++)
        assert_float_equal(out[i], want[i], 1e-5);
}

static void test_grid_sampler(void **state)
{
    (void)state;
    const float bilinear[3] = {-2, -0.75f, 0.5f}, nearest[3] = {-3, -2, 1};
    sampler_case(0, bilinear);
    sampler_case(1, nearest);
}

/* ---- ATen coverage: tests/unit/pt2 (made by gen_cases.py with PyTorch) ---- */

#define CASES "tests/unit/pt2"

/* Read a whole file into a malloc'd buffer. */
static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Whether got matches want (float types: rtol 1e-3, atol 1e-4, NaN = NaN; others:
 * exact). */
static bool values_match(IrDType t, const void *got, const void *want, int64_t n)
{
    if (t != IR_DT_F32)
        return memcmp(got, want, (size_t)n * ir_dtype_size(t)) == 0;
    for (int64_t i = 0; i < n; i++) {
        float fa, fb; /* want may be unaligned: outputs are packed back to back */
        memcpy(&fa, (const float *)got + i, sizeof fa);
        memcpy(&fb, (const char *)want + (size_t)i * sizeof fb, sizeof fb);
        double a = fa, b = fb;
        if (isnan(a) && isnan(b))
            continue;
        if (a == b)
            continue;
        if (!(fabs(a - b) <= 1e-4 + 1e-3 * fabs(b)))
            return false;
    }
    return true;
}

/* Largest |got - want| over the finite pairs of f32 values (0 for other dtypes). */
static double max_abs_err(IrDType t, const void *got, const void *want, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; t == IR_DT_F32 && i < n; i++) {
        float fa, fb;
        memcpy(&fa, (const float *)got + i, sizeof fa);
        memcpy(&fb, (const char *)want + (size_t)i * sizeof fb, sizeof fb);
        if (isfinite(fa) && isfinite(fb) && fabs((double)fa - fb) > m)
            m = fabs((double)fa - fb);
    }
    return m;
}

/* Load archive NAME(suffix).pt2, evaluate it on NAME.in.bin and compare each output
 * (one ATen case each, named in NAME.cases.txt) with NAME.out.bin. */
static void check_cases(const char *name, const char *suffix)
{
    char path[512];
    size_t inlen, outlen, nameslen;
    snprintf(path, sizeof path, CASES "/%s.in.bin", name);
    uint8_t *in = slurp(path, &inlen);
    snprintf(path, sizeof path, CASES "/%s.out.bin", name);
    uint8_t *out = slurp(path, &outlen);
    snprintf(path, sizeof path, CASES "/%s.cases.txt", name);
    char *names = (char *)slurp(path, &nameslen);
    snprintf(path, sizeof path, CASES "/%s%s.pt2", name, suffix);
    IrDiag d;
    IrGraph *g = load_ok(path, &d);
    decompose_ok(g);
    const void *inputs[8];
    size_t off = 0;
    assert_true(g->ninputs <= 8);
    for (uint32_t i = 0; i < g->ninputs; i++) {
        inputs[i] = in + off;
        off += ir_type_bytes(ir_vtype(g, g->inputs[i]));
    }
    assert_int_equal(off, inlen);
    const void **data = evaluate(g, inputs);
    assert_non_null(data);
    char *save = NULL, *cname = strtok_r(names, "\n", &save);
    int bad = 0;
    double err = 0;
    off = 0;
    for (uint32_t i = 0; i < g->noutputs; i++, cname = strtok_r(NULL, "\n", &save)) {
        const IrType *t = ir_vtype(g, g->outputs[i]);
        size_t nb = ir_type_bytes(t);
        assert_true(off + nb <= outlen);
        err = fmax(err, max_abs_err(t->dtype, data[g->outputs[i]], out + off, ir_type_numel(t)));
        if (!values_match(t->dtype, data[g->outputs[i]], out + off, ir_type_numel(t))) {
            print_message("%s%s: case '%s' (output %u) differs from PyTorch\n", name, suffix,
                          cname ? cname : "?", i);
            bad++;
        }
        off += nb;
    }
    assert_int_equal(off, outlen);
    print_message("%s%s: %u outputs, max abs error %.3g\n", name, suffix, g->noutputs, err);
    assert_int_equal(bad, 0);
    free(data);
    ir_graph_free(g);
    ir_diag_free(&d);
    free(in);
    free(out);
    free(names);
}

/* Every case, as exported (training IR) and after run_decompositions (core ATen). */
static void test_aten_cases(void **state)
{
    (void)state;
    static const char *const cats[] = {
        "act", "img", "seq", "sw_index_copy", "sw_sort", "sw_topk_idx", "sw_grid_bil",
        "sw_bicubic",
        /* the second sweep (SWEEP2 in gen_cases.py) */
        "sw_scatter_src", "sw_scatter_val", "sw_scatter_add", "sw_sred_sum", "sw_sred_prod",
        "sw_sred_mean", "sw_sred_mean_ns", "sw_sred_amax", "sw_sred_amin_ns",
        "sw_scatter_red_add", "sw_index_add", "sw_masked_scatter", "sw_cumprod",
        "sw_logcumsumexp", "sw_meshgrid", "sw_ebag_sum", "sw_ebag_mean", "sw_ebag_max",
        "sw_ebag_2d", "sw_as_strided", "sw_weight_norm0", "sw_weight_norm1", "sw_lstm",
        "sw_gru", "sw_nan_to_num", "sw_bucketize", "sw_bucketize_r32", "sw_searchsorted",
        "sw_erfinv", "sw_isin", "sw_isin_inv",
        /* the third sweep (SWEEP3) */
        "sw_rep_il_int", "sw_rep_il_flat", "sw_rep_il_tensor", "sw_im2col", "sw_im2col_3d",
        "sw_aliases", "sw_item_check", "sw_unfold", "sw_unfold_last"};
    for (size_t i = 0; i < sizeof cats / sizeof cats[0]; i++) {
        check_cases(cats[i], "");
        check_cases(cats[i], "_core");
    }
}

/* ---- refusals ---- */

static void test_missing_and_not_zip(void **state)
{
    (void)state;
    expect_refusal(tmp_path("absent.pt2"), "cannot read");
    FILE *f = fopen(tmp_path("text.pt2"), "wb");
    assert_non_null(f);
    fputs("this is not a zip archive", f);
    fclose(f);
    expect_refusal(tmp_path("text.pt2"), "not a valid zip");
}

/* A valid archive plus one extra entry named name must be refused with needle. */
static void refuse_extra_entry(const char *name, const char *needle)
{
    ZEnt e[9];
    char *prog = program(DEFAULT_NODES, DEFAULT_VALUES, "mul", 8);
    int n = archive(e, prog, WCFG("false"), sizeof w_data);
    e[n++] = (ZEnt){.name = name, .data = "x", .len = 1};
    write_zip(tmp_path("bad.pt2"), e, n);
    expect_refusal(tmp_path("bad.pt2"), needle);
    free(prog);
}

static void test_bad_entry_names(void **state)
{
    (void)state;
    refuse_extra_entry("../x", "'..' component");
    refuse_extra_entry("model/data/../../etc/passwd", "'..' component");
    refuse_extra_entry("/etc/passwd", "absolute entry name");
    refuse_extra_entry("C:/x", "drive letter");
    refuse_extra_entry("model\\x", "backslash");
    refuse_extra_entry("model/byteorder", "appears more than once");
}

/* Entry-level corruption: CRC, sizes, compression method. */
static void test_bad_entries(void **state)
{
    (void)state;
    ZEnt e[8];
    char *prog = program(DEFAULT_NODES, DEFAULT_VALUES, "mul", 8);
    int n = archive(e, prog, WCFG("false"), sizeof w_data);
    e[4].bad_crc = true; /* weight_0 */
    write_zip(tmp_path("crc.pt2"), e, n);
    expect_refusal(tmp_path("crc.pt2"), "weight_0");
    e[4].bad_crc = false;
    e[2].size_delta = 100; /* model.json: the directory claims more bytes */
    write_zip(tmp_path("size.pt2"), e, n);
    IrDiag d;
    ir_diag_init(&d, tmp_path("size.pt2"));
    assert_null(fe_load_pt2(tmp_path("size.pt2"), &d, NULL));
    assert_true(d.nerrors > 0);
    ir_diag_free(&d);
    e[2].size_delta = 0;
    e[3].method = 14; /* LZMA is not accepted */
    write_zip(tmp_path("method.pt2"), e, n);
    expect_refusal(tmp_path("method.pt2"), "compression method 14");
    free(prog);
}

/* Weights: pickled, too short, of another shape, missing. */
static void test_bad_weights(void **state)
{
    (void)state;
    ZEnt e[8];
    char *prog = program(DEFAULT_NODES, DEFAULT_VALUES, "mul", 8);
    int n = archive(e, prog, WCFG("true"), sizeof w_data);
    write_zip(tmp_path("pickle.pt2"), e, n);
    expect_refusal(tmp_path("pickle.pt2"), "pickle");
    n = archive(e, prog, WCFG("false"), 8);
    write_zip(tmp_path("short.pt2"), e, n);
    expect_refusal(tmp_path("short.pt2"), "has 8 bytes but its metadata needs 12");
    const char *other_shape = "{\"config\":{\"w\":{\"path_name\":\"weight_0\",\"is_param\":true,"
                              "\"use_pickle\":false,\"tensor_meta\":" META("7", I(1) "," I(3),
                                                                           I(3) "," I(1)) "}}}";
    n = archive(e, prog, other_shape, sizeof w_data);
    write_zip(tmp_path("shape.pt2"), e, n);
    expect_refusal(tmp_path("shape.pt2"), "payload metadata says f32[1, 3]");
    n = archive(e, prog, "{\"config\":{}}", sizeof w_data);
    write_zip(tmp_path("noweight.pt2"), e, n);
    expect_refusal(tmp_path("noweight.pt2"), "tensor 'w' is not in the archive");
    const char *escape = "{\"config\":{\"w\":{\"path_name\":\"../weight_0\",\"is_param\":true,"
                         "\"use_pickle\":false,\"tensor_meta\":" M3 "}}}";
    n = archive(e, prog, escape, sizeof w_data);
    write_zip(tmp_path("escape.pt2"), e, n);
    expect_refusal(tmp_path("escape.pt2"), "invalid payload path_name");
    free(prog);
}

/* JSON: nesting, duplicate keys, syntax, schema version. */
static void test_bad_json(void **state)
{
    (void)state;
    ZEnt e[8];
    size_t depth = 5000;
    char *deep = malloc(2 * depth + 64);
    assert_non_null(deep);
    size_t k = (size_t)sprintf(deep, "{\"graph_module\":");
    for (size_t i = 0; i < depth; i++)
        deep[k++] = '[';
    for (size_t i = 0; i < depth; i++)
        deep[k++] = ']';
    strcpy(deep + k, "}");
    int n = archive(e, deep, WCFG("false"), sizeof w_data);
    write_zip(tmp_path("deep.pt2"), e, n);
    expect_refusal(tmp_path("deep.pt2"), "nested deeper than 64");
    free(deep);
    const char *dup = "{\"schema_version\":{\"major\":8,\"minor\":1},\"schema_version\":{}}";
    n = archive(e, dup, WCFG("false"), sizeof w_data);
    write_zip(tmp_path("dup.pt2"), e, n);
    expect_refusal(tmp_path("dup.pt2"), "duplicate");
    n = archive(e, "{\"graph_module\": [1, 2,", WCFG("false"), sizeof w_data);
    write_zip(tmp_path("syntax.pt2"), e, n);
    expect_refusal(tmp_path("syntax.pt2"), "invalid JSON");
    char *prog = program(DEFAULT_NODES, DEFAULT_VALUES, "mul", 99);
    n = archive(e, prog, WCFG("false"), sizeof w_data);
    write_zip(tmp_path("version.pt2"), e, n);
    expect_refusal(tmp_path("version.pt2"), "schema version 99.17 is not supported");
    free(prog);
}

/* Graph-level problems: unknown dtypes, symbolic sizes, undefined tensors,
 * unsupported argument kinds, non-tensor outputs. */
static void test_bad_graphs(void **state)
{
    (void)state;
    refuse_program(NODE("torch.ops.aten.neg.default", "neg", TARG("self", "x"), OUT("neg")),
                   "\"neg\":" META("10", I(2) "," I(3), I(3) "," I(1)), "neg",
                   "unsupported dtype complex64");
    refuse_program(NODE("torch.ops.aten.neg.default", "neg", TARG("self", "x"), OUT("neg")),
                   "\"neg\":" META("7", "{\"as_expr\":{\"expr_str\":\"s0\"}}," I(3),
                                   I(3) "," I(1)), "neg", "symbolic");
    refuse_program(NODE("torch.ops.aten.neg.default", "neg", TARG("self", "nowhere"), OUT("neg")),
                   "\"neg\":" M23, "neg", "tensor 'nowhere', which is not defined");
    refuse_program(NODE("torch.ops.aten.neg.default", "neg", TARG("self", "x")
                        ",{\"name\":\"c\",\"arg\":{\"as_complex\":{\"real\":1,\"imag\":0}},"
                        "\"kind\":1}", OUT("neg")),
                   "\"neg\":" M23, "neg", "kind 'as_complex'");
    /* a node of symbolic scalars only is skipped; a node reading one is refused */
    refuse_program(NODE("torch.ops.aten.sym_size.int", "sz", TARG("self", "x"),
                        "{\"as_sym_int\":{\"as_name\":\"sz\"}}")
                   "," NODE("torch.ops.aten.new_zeros.default", "z", TARG("self", "x")
                            ",{\"name\":\"size\",\"arg\":{\"as_sym_ints\":[{\"as_name\":"
                            "\"sz\"}]},\"kind\":1}", OUT("z")),
                   "\"z\":" M3, "z", "symbolic");
    refuse_program(NODE("torch.ops.aten.neg.default", "n", TARG("self", "x"),
                        "{\"as_sym_int\":{\"as_name\":\"n\"}},{\"as_tensor\":{\"name\":\"t\"}}"),
                   "\"t\":" M23, "t", "only tensor outputs");
}

/* Symbolic sizes (dynamic_shapes) evaluated at their bounds, in sympy's srepr form
 * (newer torch) and as str() (older torch): sums, products, floor divisions, powers,
 * Max; a symbol alone and a multiple of one recognised; data-dependent symbols, inexact
 * divisions, overflows, divisions by zero and unknown functions refused. */
static void test_sym_expressions(void **state)
{
    (void)state;
    FePt2Sym v[2] = {{"s0", 1, 10, 0}, {"s1", 2, 7, 0}};
    FePt2Syms sy = {v, 2};
    static const struct {
        const char *e;
        int64_t want;
        const char *bare;
    } ok[] = {
        {"s0", 10, "s0"},
        {"Symbol('s1', positive=True, integer=True)", 7, "s1"},
        {"2*s0 - 1", 19, NULL},
        {"((s0 + 1)//2)", 5, NULL},
        {"FloorDiv(Add(Symbol('s0', integer=True), Integer(-1)), Integer(2))", 4, NULL},
        {"Max(1, s1) + s0 % 4", 9, NULL},
        {"s0**2 - -s1", 107, NULL},
        {"Mul(Integer(4), Symbol('s1', positive=True, integer=True))", 28, NULL},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t got = -1;
        const char *bare = NULL, *why = NULL;
        assert_true(fe_pt2_sym_eval(&sy, ok[i].e, &got, &bare, &why));
        assert_int_equal(got, ok[i].want);
        if (ok[i].bare)
            assert_string_equal(bare, ok[i].bare);
        else
            assert_null(bare);
    }
    int64_t mul = 0, got;
    const char *sym = NULL, *why = NULL;
    assert_true(fe_pt2_sym_multiple(&sy, ok[7].e, &mul, &sym));
    assert_int_equal(mul, 4);
    assert_string_equal(sym, "s1");
    assert_false(fe_pt2_sym_multiple(&sy, ok[2].e, &mul, &sym));
    static const char *const bad[][2] = {{"u0 + 1", "data-dependent"},
                                         {"s0/3", "not exact"},
                                         {"Frobnicate(s0)", "outside integer arithmetic"},
                                         {"2*(s0", "malformed"},
                                         {"s0**40", "overflow"},
                                         {"Mod(s0, Integer(0))", "division by zero"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_false(fe_pt2_sym_eval(&sy, bad[i][0], &got, NULL, &why));
        assert_non_null(strstr(why, bad[i][1]));
    }
}

/* Unknown ATen operators are all reported, before anything is rewritten. */
static void test_unknown_ops(void **state)
{
    (void)state;
    const char *nodes =
        NODE("torch.ops.aten.frobnicate.default", "f", TARG("self", "x"), OUT("f")) ","
        NODE("torch.ops.aten.neg.default", "n", TARG("self", "f"), OUT("n")) ","
        NODE("torch.ops.aten.defrobnicate.Tensor", "g", TARG("self", "n"), OUT("g")) ","
        NODE("torch.ops.aten.frobnicate.default", "f2", TARG("self", "g"), OUT("f2")) ","
        /* not a view op: its "_copy" does not make it neg (index_copy is not index) */
        NODE("torch.ops.aten.neg_copy.default", "h", TARG("self", "f2"), OUT("h"));
    const char *values = "\"f\":" M23 ",\"n\":" M23 ",\"g\":" M23 ",\"f2\":" M23
                         ",\"h\":" M23;
    ZEnt e[8];
    char *prog = program(nodes, values, "h", 8);
    int n = archive(e, prog, WCFG("false"), sizeof w_data);
    write_zip(tmp_path("unknown.pt2"), e, n);
    IrDiag d;
    ir_diag_init(&d, tmp_path("unknown.pt2"));
    IrGraph *g = fe_load_pt2(tmp_path("unknown.pt2"), &d, NULL);
    assert_non_null(g);
    assert_false(decompose(g));
    print_diag(&d);
    assert_true(diag_has(&d, "aten.frobnicate.default"));
    assert_true(diag_has(&d, "aten.defrobnicate.Tensor"));
    assert_false(diag_has(&d, "aten.neg.default"));
    assert_true(diag_has(&d, "aten.neg_copy.default"));
    assert_int_equal(d.nerrors, 3); /* one per distinct operator */
    ir_graph_free(g);
    ir_diag_free(&d);
    free(prog);
}

/* Archive nodes (output `out`) as file, decompose, and check that it is refused
 * with one error naming node `node` and containing `why`. */
static void expect_refused(const char *nodes, const char *values, const char *out,
                           const char *file, const char *node, const char *why)
{
    ZEnt e[8];
    char *prog = program(nodes, values, out, 8);
    int n = archive(e, prog, WCFG("false"), sizeof w_data);
    write_zip(tmp_path(file), e, n);
    IrDiag d;
    ir_diag_init(&d, tmp_path(file));
    IrGraph *g = fe_load_pt2(tmp_path(file), &d, NULL);
    assert_non_null(g);
    assert_false(decompose(g));
    print_diag(&d);
    assert_true(diag_has(&d, node));
    assert_true(diag_has(&d, why));
    ir_graph_free(g);
    ir_diag_free(&d);
    free(prog);
}

#define TLIST(arg, ...) ",{\"name\":\"" arg "\",\"arg\":{\"as_tensors\":[" __VA_ARGS__ "]},\"kind\":1}"
#define TN(t) "{\"name\":\"" t "\"}"

/* Forms of the second sweep's ops that are not supported are refused, naming the
 * node and what is missing. */
static void test_unsupported_forms(void **state)
{
    (void)state;
    /* lstm with proj_size: 3 weights per layer and direction (w_ih, w_hh, w_hr) */
    expect_refused(NODE("torch.ops.aten.lstm.input", "lstm", TARG("input", "x")
                        TLIST("hx") TLIST("params", TN("p_w") "," TN("p_w") "," TN("p_w"))
                        BARG("has_biases", false) IARG("num_layers", 1) FARG("dropout", 0.0)
                        BARG("train", false) BARG("bidirectional", false)
                        BARG("batch_first", false), OUT("y") "," OUT("h") "," OUT("c")),
                   "\"y\":" M23 ",\"h\":" M23 ",\"c\":" M23, "y", "lstm_proj.pt2",
                   "aten.lstm.input", "proj_size");
    /* searchsorted with a sorter */
    expect_refused(NODE("torch.ops.aten.searchsorted.Tensor", "ss", TARG("sorted_sequence", "p_w")
                        "," TARG("self", "x") "," TARG("sorter", "p_w"), OUT("ss")),
                   "\"ss\":" META("5", I(2) "," I(3), I(3) "," I(1)), "ss", "sorter.pt2",
                   "aten.searchsorted.Tensor", "sorter");
    /* as_strided reading past the end of its input (6 elements) */
    expect_refused(NODE("torch.ops.aten.as_strided.default", "as", TARG("self", "x")
                        ",{\"name\":\"size\",\"arg\":{\"as_ints\":[4]},\"kind\":1}"
                        ",{\"name\":\"stride\",\"arg\":{\"as_ints\":[2]},\"kind\":1}",
                        OUT("as")),
                   "\"as\":" META("7", I(4), I(1)), "as", "strided.pt2",
                   "aten.as_strided.default", "reads element 6");
    /* as_strided of a transpose (recorded strides [1, 3]): its storage is x's */
    expect_refused(NODE("torch.ops.aten.t.default", "t", TARG("self", "x"), OUT("t")) ","
                   NODE("torch.ops.aten.as_strided.default", "as", TARG("self", "t")
                        ",{\"name\":\"size\",\"arg\":{\"as_ints\":[2]},\"kind\":1}"
                        ",{\"name\":\"stride\",\"arg\":{\"as_ints\":[1]},\"kind\":1}",
                        OUT("as")),
                   "\"t\":" META("7", I(3) "," I(2), I(1) "," I(3)) ",\"as\":"
                   META("7", I(2), I(1)), "as", "strided_t.pt2", "aten.as_strided.default",
                   "strided view");
}

/* Every truncation of a valid archive is refused cleanly. */
static void test_truncation(void **state)
{
    (void)state;
    write_default_archive("full.pt2");
    FILE *f = fopen(tmp_path("full.pt2"), "rb");
    assert_non_null(f);
    static uint8_t buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_true(len > 100 && len < sizeof buf);
    for (size_t cut = 0; cut < len; cut += 7) {
        f = fopen(tmp_path("cut.pt2"), "wb");
        fwrite(buf, 1, cut, f);
        fclose(f);
        IrDiag d;
        ir_diag_init(&d, tmp_path("cut.pt2"));
        IrGraph *g = fe_load_pt2(tmp_path("cut.pt2"), &d, NULL);
        assert_null(g);
        assert_true(d.nerrors > 0);
        ir_diag_free(&d);
    }
}

/* Allocation failures at every arena budget up to success. */
static void test_alloc_failures(void **state)
{
    (void)state;
    write_default_archive("oom.pt2");
    bool loaded = false;
    for (size_t limit = 1024; limit < (1u << 22) && !loaded; limit += 1024) {
        FeOptions opt = {.arena_limit = limit};
        IrDiag d;
        ir_diag_init(&d, tmp_path("oom.pt2"));
        IrGraph *g = fe_load_pt2(tmp_path("oom.pt2"), &d, &opt);
        if (g) {
            loaded = true;
            assert_int_equal(g->arena_limit, 0);
            assert_null(g->oom);
            ir_graph_free(g);
        } else {
            assert_true(diag_has(&d, "out of memory"));
        }
        ir_diag_free(&d);
    }
    assert_true(loaded);
}

/* ---- setup ---- */

static int make_tmpdir(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/test_pt2_XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    DIR *d = opendir(tmpdir);
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (de->d_name[0] != '.')
            unlink(tmp_path(de->d_name));
    if (d)
        closedir(d);
    rmdir(tmpdir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zoo),
        cmocka_unit_test(test_zoo_names),
        cmocka_unit_test(test_basic_program),
        cmocka_unit_test(test_scalar_arguments),
        cmocka_unit_test(test_hop_inlined),
        cmocka_unit_test(test_inplace_view),
        cmocka_unit_test(test_inplace_whole_views),
        cmocka_unit_test(test_inplace_stepped),
        cmocka_unit_test(test_index_put),
        cmocka_unit_test(test_index_put_runtime),
        cmocka_unit_test(test_embedding_bag_forms),
        cmocka_unit_test(test_scatter_reduce_int),
        cmocka_unit_test(test_topk_sort),
        cmocka_unit_test(test_upsample_bicubic),
        cmocka_unit_test(test_grid_sampler),
        cmocka_unit_test(test_aten_cases),
        cmocka_unit_test(test_missing_and_not_zip),
        cmocka_unit_test(test_bad_entry_names),
        cmocka_unit_test(test_bad_entries),
        cmocka_unit_test(test_bad_weights),
        cmocka_unit_test(test_bad_json),
        cmocka_unit_test(test_bad_graphs),
        cmocka_unit_test(test_sym_expressions),
        cmocka_unit_test(test_unknown_ops),
        cmocka_unit_test(test_unsupported_forms),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
