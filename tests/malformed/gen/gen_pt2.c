/* gen_pt2.c: torch.export archives (.pt2): zip entries that escape, repeat, use
 * unsupported compression, lie about sizes or CRCs; pickled weights; weights whose
 * size or dtype disagrees with their metadata; JSON nested absurdly deep, duplicate
 * keys, undefined values, unknown operators and schema versions. The archives are
 * assembled here byte by byte (stored entries), so each lie is exact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

#define MAX_ENT 16
typedef struct {
    const char *name;
    Buf data;
    uint16_t method;    /* 0 = stored; others only claimed */
    int crc_delta;      /* added to the true CRC */
    int64_t size_delta; /* added to both recorded sizes */
} ZEnt;

typedef struct {
    ZEnt e[MAX_ENT];
    int n;
} Zip;

static void le16(Buf *b, uint16_t v)
{
    buf_put(b, &v, 2);
}
static void le32(Buf *b, uint32_t v)
{
    buf_put(b, &v, 4);
}

/* Add (or replace, when name exists and !dup) an entry with text or bytes. */
static void zadd(Zip *z, const char *name, const void *p, size_t n, bool dup)
{
    for (int i = 0; i < z->n && !dup; i++)
        if (!strcmp(z->e[i].name, name)) {
            buf_free(&z->e[i].data);
            buf_put(&z->e[i].data, p, n);
            return;
        }
    ZEnt *e = &z->e[z->n++];
    memset(e, 0, sizeof *e);
    e->name = name;
    buf_put(&e->data, p, n);
}

static void zadd_text(Zip *z, const char *name, const char *s)
{
    zadd(z, name, s, strlen(s), false);
}

static ZEnt *zfind(Zip *z, const char *name)
{
    for (int i = 0; i < z->n; i++)
        if (!strcmp(z->e[i].name, name))
            return &z->e[i];
    return NULL;
}

static void zfree(Zip *z)
{
    for (int i = 0; i < z->n; i++)
        buf_free(&z->e[i].data);
    z->n = 0;
}

/* Serialise: local headers + data, central directory, end record. */
static Buf zwrite(const Zip *z)
{
    Buf b = {0}, cd = {0};
    for (int i = 0; i < z->n; i++) {
        const ZEnt *e = &z->e[i];
        uint32_t crc = gen_crc32(0, e->data.p, e->data.n) + (uint32_t)e->crc_delta;
        uint32_t size = (uint32_t)((int64_t)e->data.n + e->size_delta);
        uint16_t nl = (uint16_t)strlen(e->name);
        uint32_t off = (uint32_t)b.n;
        le32(&b, 0x04034b50), le16(&b, 20), le16(&b, 0), le16(&b, e->method);
        le16(&b, 0), le16(&b, 0x21), le32(&b, crc), le32(&b, size), le32(&b, size);
        le16(&b, nl), le16(&b, 0);
        buf_put(&b, e->name, nl);
        buf_put(&b, e->data.p, e->data.n);
        le32(&cd, 0x02014b50), le16(&cd, 20), le16(&cd, 20), le16(&cd, 0);
        le16(&cd, e->method), le16(&cd, 0), le16(&cd, 0x21), le32(&cd, crc);
        le32(&cd, size), le32(&cd, size), le16(&cd, nl), le16(&cd, 0), le16(&cd, 0);
        le16(&cd, 0), le16(&cd, 0), le32(&cd, 0), le32(&cd, off);
        buf_put(&cd, e->name, nl);
    }
    uint32_t cdoff = (uint32_t)b.n;
    buf_put(&b, cd.p, cd.n);
    le32(&b, 0x06054b50), le16(&b, 0), le16(&b, 0), le16(&b, (uint16_t)z->n);
    le16(&b, (uint16_t)z->n), le32(&b, (uint32_t)cd.n), le32(&b, cdoff), le16(&b, 0);
    buf_free(&cd);
    return b;
}

/* tensor_meta JSON for a float tensor of the given sizes (dtype 7 = float32). */
static const char *meta(int dtype, const char *sizes, const char *strides)
{
    return fmt("{\"dtype\": %d, \"sizes\": [%s], \"requires_grad\": false, "
               "\"device\": {\"type\": \"cpu\", \"index\": null}, \"strides\": [%s], "
               "\"storage_offset\": {\"as_int\": 0}, \"layout\": 7}",
               dtype, sizes, strides);
}

#define SZ2 "{\"as_int\": 3}, {\"as_int\": 4}"
#define ST2 "{\"as_int\": 4}, {\"as_int\": 1}"
#define SZ1 "{\"as_int\": 3}"
#define ST1 "{\"as_int\": 1}"
#define SZX "{\"as_int\": 2}, {\"as_int\": 4}"
#define SZY "{\"as_int\": 2}, {\"as_int\": 3}"
#define ST3 "{\"as_int\": 3}, {\"as_int\": 1}"

/* One node: target applied to named tensor arguments (name=tensor pairs). */
static const char *node(const char *target, const char *args, const char *out)
{
    return fmt("{\"target\": \"%s\", \"inputs\": [%s], \"outputs\": [{\"as_tensor\": "
               "{\"name\": \"%s\"}}], \"metadata\": {}, \"name\": \"%s\"}",
               target, args, out, out);
}

static const char *targ(const char *name, const char *tensor)
{
    return fmt("{\"name\": \"%s\", \"arg\": {\"as_tensor\": {\"name\": \"%s\"}}, \"kind\": 1}",
               name, tensor);
}

typedef struct {
    const char *nodes;        /* JSON list body */
    const char *out;          /* output tensor */
    const char *extra_values; /* more tensor_values entries (with leading comma) */
    const char *schema;       /* schema_version object */
    const char *extra_top;    /* more top-level members (with leading comma) */
    int wdtype;               /* dtype of the weight in tensor_values */
} Prog;

/* model.json of x[2,4] -> linear(w[3,4], b[3]) -> ... as described by p (malloc'd). */
static char *program(const Prog *p)
{
    static const char *const f =
        "{\"graph_module\": {\"graph\": {"
        "\"inputs\": [{\"as_tensor\": {\"name\": \"p_w\"}}, {\"as_tensor\": {\"name\": "
        "\"p_b\"}}, {\"as_tensor\": {\"name\": \"x\"}}], "
        "\"outputs\": [{\"as_tensor\": {\"name\": \"%s\"}}], \"nodes\": [%s], "
        "\"tensor_values\": {\"p_w\": %s, \"p_b\": %s, \"x\": %s, \"lin\": %s, "
        "\"y\": %s%s}, \"sym_int_values\": {}, \"sym_bool_values\": {}, "
        "\"is_single_tensor_return\": false, \"custom_obj_values\": {}, "
        "\"sym_float_values\": {}}, "
        "\"signature\": {\"input_specs\": ["
        "{\"parameter\": {\"arg\": {\"name\": \"p_w\"}, \"parameter_name\": \"w\"}}, "
        "{\"parameter\": {\"arg\": {\"name\": \"p_b\"}, \"parameter_name\": \"b\"}}, "
        "{\"user_input\": {\"arg\": {\"as_tensor\": {\"name\": \"x\"}}}}], "
        "\"output_specs\": [{\"user_output\": {\"arg\": {\"as_tensor\": {\"name\": "
        "\"%s\"}}}}]}, \"module_call_graph\": [], \"metadata\": {}}, "
        "\"opset_version\": {\"aten\": 10}, \"range_constraints\": {}, "
        "\"schema_version\": %s, \"verifiers\": [], \"torch_version\": \"2.5.0\"%s}";
    char m[5][512];
    snprintf(m[0], sizeof m[0], "%s", meta(p->wdtype, SZ2, ST2));
    snprintf(m[1], sizeof m[1], "%s", meta(7, SZ1, ST1));
    snprintf(m[2], sizeof m[2], "%s", meta(7, SZX, ST2));
    snprintf(m[3], sizeof m[3], "%s", meta(7, SZY, ST3));
    snprintf(m[4], sizeof m[4], "%s", meta(7, SZY, ST3));
    int n = snprintf(NULL, 0, f, p->out, p->nodes, m[0], m[1], m[2], m[3], m[4], p->extra_values,
                     p->out, p->schema, p->extra_top);
    char *s = malloc((size_t)n + 1);
    snprintf(s, (size_t)n + 1, f, p->out, p->nodes, m[0], m[1], m[2], m[3], m[4], p->extra_values,
             p->out, p->schema, p->extra_top);
    return s;
}

static Prog default_prog(void)
{
    static char nodes[2048];
    snprintf(nodes, sizeof nodes, "%s, %s",
             node("torch.ops.aten.linear.default",
                  fmt("%s, %s, %s", targ("input", "x"), targ("weight", "p_w"), targ("bias", "p_b")),
                  "lin"),
             node("torch.ops.aten.relu.default", targ("self", "lin"), "y"));
    return (Prog){nodes, "y", "", "{\"major\": 8, \"minor\": 17}", "", 7};
}

/* weights config: w -> weight_0, b -> weight_1. */
static const char *weights_config(bool pickle, int wdtype)
{
    static char s[2048];
    snprintf(s, sizeof s,
             "{\"config\": {\"w\": {\"path_name\": \"weight_0\", \"is_param\": true, "
             "\"use_pickle\": %s, \"tensor_meta\": %s}, \"b\": {\"path_name\": \"weight_1\", "
             "\"is_param\": true, \"use_pickle\": false, \"tensor_meta\": %s}}}",
             pickle ? "true" : "false", meta(wdtype, SZ2, ST2), meta(7, SZ1, ST1));
    return s;
}

/* The reference archive, with program text prog (NULL: the default one). */
static void base_zip(Zip *z, const char *prog)
{
    memset(z, 0, sizeof *z);
    zadd_text(z, "m/archive_format", "pt2");
    zadd_text(z, "m/byteorder", "little");
    zadd_text(z, "m/.data/version", "6\n");
    Prog p = default_prog();
    char *json = program(&p);
    zadd_text(z, "m/models/model.json", prog ? prog : json);
    free(json);
    zadd_text(z, "m/data/weights/model_weights_config.json", weights_config(false, 7));
    zadd_text(z, "m/data/constants/model_constants_config.json", "{\"config\": {}}");
    float w[12], b[3] = {0.5f, -0.5f, 0.25f};
    for (int i = 0; i < 12; i++)
        w[i] = 0.1f * (float)(i - 6);
    zadd(z, "m/data/weights/weight_0", w, sizeof w, false);
    zadd(z, "m/data/weights/weight_1", b, sizeof b, false);
}

static void put(const char *name, Zip *z, const char *frag)
{
    Buf b = zwrite(z);
    gen_case(fmt("pt2/%s.pt2", name), b.p, b.n, "spyrec", 2, frag, NULL);
    buf_free(&b);
    zfree(z);
}

static void put_prog(const char *name, const Prog *p, const char *frag)
{
    Zip z;
    char *json = program(p);
    base_zip(&z, json);
    free(json);
    put(name, &z, frag);
}

static void zip_level(void)
{
    Zip z;
    base_zip(&z, NULL);
    Buf ok = zwrite(&z);
    gen_file("pt2/valid_base.pt2", ok.p, ok.n);
    zfree(&z);
    Buf cut = {0};
    buf_put(&cut, ok.p, ok.n / 2);
    gen_case("pt2/truncated.pt2", cut.p, cut.n, "spyrec", 2, "not a valid zip archive", NULL);
    buf_free(&cut);
    cut = (Buf){0};
    buf_put(&cut, ok.p, ok.n - 5);
    gen_case("pt2/truncated_end.pt2", cut.p, cut.n, "spyrec", 2, "not a valid zip archive", NULL);
    buf_free(&cut);
    buf_free(&ok);
    base_zip(&z, NULL);
    zadd_text(&z, "../evil", "x");
    put("entry_dotdot", &z, "zip entry '../evil': '..' component in entry name");
    base_zip(&z, NULL);
    zadd_text(&z, "m/data/../../evil", "x");
    put("entry_inner_dotdot", &z, "zip entry 'm/data/../../evil': '..' component");
    base_zip(&z, NULL);
    zadd_text(&z, "/etc/evil", "x");
    put("entry_absolute", &z, "zip entry '/etc/evil': absolute entry name");
    base_zip(&z, NULL);
    zadd_text(&z, "m\\evil", "x");
    put("entry_backslash", &z, "backslash in entry name");
    base_zip(&z, NULL);
    zadd(&z, "m/byteorder", "big", 3, true);
    put("entry_duplicate", &z, "more than once");
    base_zip(&z, NULL);
    zfind(&z, "m/data/weights/weight_0")->method = 12;
    put("method_bzip2", &z, "compression method 12 is not supported");
    base_zip(&z, NULL);
    zfind(&z, "m/models/model.json")->method = 99;
    put("method_aes", &z, "not a valid zip archive");
    base_zip(&z, NULL);
    zfind(&z, "m/data/weights/weight_0")->crc_delta = 1;
    put("bad_crc_weight", &z, "zip entry 'm/data/weights/weight_0'");
    base_zip(&z, NULL);
    zfind(&z, "m/models/model.json")->crc_delta = 0x100;
    put("bad_crc_json", &z, "zip entry 'm/models/model.json'");
    base_zip(&z, NULL);
    zfind(&z, "m/data/weights/weight_1")->size_delta = 4;
    put("size_lies_longer", &z, "not a valid zip archive");
    base_zip(&z, NULL);
    zfind(&z, "m/data/weights/weight_0")->size_delta = -8;
    put("size_lies_shorter", &z, "tensor 'w': payload 'm/data/weights/weight_0' has 40 bytes");
    gen_case("pt2/empty.pt2", "", 0, "spyrec", 2, "the file is empty", NULL);
    gen_case("pt2/not_a_zip.pt2", "PK\x03\x04garbage", 12, "spyrec", 2, "not a valid zip archive",
             NULL);
}

static void archive_level(void)
{
    Zip z;
    base_zip(&z, NULL);
    zfind(&z, "m/models/model.json")->name = "m/models/other.txt";
    put("no_program", &z, "no ROOT/models/NAME.json entry");
    base_zip(&z, NULL);
    zadd_text(&z, "m/byteorder", "big");
    put("byteorder_big", &z, "m/byteorder is 'big'");
    base_zip(&z, NULL);
    zadd_text(&z, "m/data/weights/model_weights_config.json", weights_config(true, 7));
    put("pickled_weight", &z, "tensor 'w' is stored as a Python pickle");
    base_zip(&z, NULL);
    zadd(&z, "m/data/weights/weight_0", "\0\0\0\0\0\0\0\0\0\0\0", 11, false);
    put("weight_short", &z, "tensor 'w': payload 'm/data/weights/weight_0' has 11 bytes");
    base_zip(&z, NULL);
    zadd_text(&z, "m/data/weights/model_weights_config.json", weights_config(false, 99));
    put("weight_dtype_99", &z, "tensor 'w' (m/data/weights/weight_0): unsupported dtype");
    base_zip(&z, NULL);
    zadd_text(&z, "m/data/weights/model_weights_config.json", weights_config(false, 8));
    put("weight_dtype_mismatch", &z, "tensor 'w': payload metadata says f64[3, 4]");
    base_zip(&z, NULL);
    z.e[6].name = "m/data/weights/weight_9";
    put("weight_missing", &z, "tensor 'w': payload entry 'm/data/weights/weight_0' is missing");
}

static void json_level(void)
{
    Prog p = default_prog();
    p.schema = "{\"major\": 99, \"minor\": 0}";
    put_prog("schema_99", &p, "export schema version 99.0 is not supported");
    p = default_prog();
    p.schema = "{\"minor\": 3}";
    put_prog("schema_missing", &p, "no schema_version");
    p = default_prog();
    char *body = malloc(40100);
    strcpy(body, ", \"deep\": ");
    size_t at = strlen(body);
    memset(body + at, '[', 20000);
    memset(body + at + 20000, ']', 20000);
    body[at + 40000] = 0;
    p.extra_top = body;
    put_prog("json_nested_20000", &p, "JSON nested deeper than 64 levels");
    free(body);
    p = default_prog();
    p.extra_top = ", \"schema_version\": {\"major\": 8, \"minor\": 17}";
    put_prog("json_duplicate_key", &p, "invalid JSON");
    p = default_prog();
    p.extra_top = ", \"x\": NaN";
    put_prog("json_nan", &p, "invalid JSON");
    p = default_prog();
    p.extra_top = ", \"x\": undefined";
    put_prog("json_undefined", &p, "invalid JSON");
    p = default_prog();
    p.extra_top = ", \"x\": \"a\\u0000b\"";
    put_prog("json_nul_in_string", &p, "m/models/model.json");
    p = default_prog();
    p.extra_top = ", \"x\": \"\xff\xfe\"";
    put_prog("json_bad_utf8", &p, "invalid JSON");
    {
        Zip z;
        base_zip(&z, NULL);
        ZEnt *e = zfind(&z, "m/models/model.json");
        e->data.n -= 10;
        put("json_truncated", &z, "invalid JSON");
    }
    p = default_prog();
    static char nodes[4096];
    snprintf(nodes, sizeof nodes, "%s, %s, %s",
             node("torch.ops.aten.frobnicate.default", targ("self", "x"), "f1"),
             node("torch.ops.aten.quux.Tensor", targ("self", "f1"), "lin"),
             node("torch.ops.aten.relu.default", targ("self", "lin"), "y"));
    p.nodes = nodes;
    p.extra_values = fmt(", \"f1\": %s", meta(7, SZX, ST2));
    put_prog("unknown_aten_ops", &p, "unsupported operator aten.quux.Tensor");
    p = default_prog();
    char *longname = malloc(50001);
    memset(longname, 'a', 50000);
    longname[50000] = 0;
    char *nodes2 = malloc(60000);
    snprintf(nodes2, 60000,
             "{\"target\": \"torch.ops.aten.%s.default\", \"inputs\": [%s], "
             "\"outputs\": [{\"as_tensor\": {\"name\": \"y\"}}], \"metadata\": {}, "
             "\"name\": \"y\"}",
             longname, targ("self", "x"));
    p.nodes = nodes2;
    put_prog("huge_op_name", &p, "node 'y' (aten.aaaa");
    free(nodes2);
    free(longname);
    p = default_prog();
    p.nodes = node("torch.ops.aten.relu.default", targ("self", "nowhere"), "y");
    put_prog("undefined_tensor", &p, "'nowhere'");
    p = default_prog();
    p.wdtype = 99;
    put_prog("tensor_value_dtype_99", &p, "tensor 'p_w': unsupported dtype");
    p = default_prog();
    p.out = "ghost";
    put_prog("output_undefined", &p, "ghost");
}

void gen_pt2(void)
{
    zip_level();
    archive_level();
    json_level();
}
