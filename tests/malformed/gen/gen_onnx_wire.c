/* gen_onnx_wire.c: ONNX files broken at the protobuf wire level: truncation, bad
 * varints, unknown and mismatched wire types, lengths past the end, absurd repeated
 * counts, nesting thousands deep. The pre-scan must name the byte offset. */
#include <stdlib.h>
#include <string.h>

#include "gen.h"

#define TOOL "spyrec"

/* The reference graph: x[1,1,8,8] -> Conv(W[2,1,3,3], B[2], pads 1) -> Relu -> y. */
Buf onnx_base_graph(void)
{
    static const int64_t xd[] = {1, 1, 8, 8}, wd[] = {2, 1, 3, 3}, bd[] = {2}, yd[] = {1, 2, 8, 8},
                         ks[] = {3, 3}, pads[] = {1, 1, 1, 1};
    Buf g = {0}, t;
    Buf conv = ox_node("Conv", "conv1", (const char *[]){"x", "W", "B", NULL},
                       (const char *[]){"c", NULL});
    t = ox_attr_ints("kernel_shape", ks, 2);
    pb_msg(&conv, 5, &t);
    t = ox_attr_ints("pads", pads, 4);
    pb_msg(&conv, 5, &t);
    pb_msg(&g, 1, &conv);
    t = ox_node("Relu", "relu1", (const char *[]){"c", NULL}, (const char *[]){"y", NULL});
    pb_msg(&g, 1, &t);
    pb_str(&g, 2, "base");
    t = ox_tensor_f32("W", wd, 4, 0.5f);
    pb_msg(&g, 5, &t);
    t = ox_tensor_f32("B", bd, 1, 0.1f);
    pb_msg(&g, 5, &t);
    t = ox_value("x", ONNX_FLOAT, xd, 4);
    pb_msg(&g, 11, &t);
    t = ox_value("y", ONNX_FLOAT, yd, 4);
    pb_msg(&g, 12, &t);
    return g;
}

Buf onnx_base_model(void)
{
    Buf g = onnx_base_graph();
    return ox_model(13, &g);
}

/* Offset of the graph field (tag 7, wire 2) at the top level of a model, whose
 * other fields the generator writes as short varints/strings. */
static size_t graph_field_offset(const Buf *m)
{
    size_t off = 0;
    while (off < m->n) {
        uint8_t tag = m->p[off];
        if (tag == (7 << 3 | 2))
            return off;
        off++;
        if ((tag & 7) == 0) {
            while (m->p[off] & 0x80)
                off++;
            off++;
        } else {
            uint64_t len = 0;
            int sh = 0;
            while (m->p[off] & 0x80)
                len |= (uint64_t)(m->p[off++] & 0x7f) << sh, sh += 7;
            len |= (uint64_t)m->p[off++] << sh;
            off += len;
        }
    }
    return 0;
}

/* Truncations: an empty file, a cut inside the first varint, and ~30 cuts spread
 * through the graph field (each leaves a length that runs past the end). */
static void truncations(void)
{
    Buf m = onnx_base_model();
    gen_file("onnx/valid_base.onnx", m.p, m.n);
    gen_case("onnx/trunc_0.onnx", m.p, 0, TOOL, 2, "the file is empty", NULL);
    static const uint8_t half_varint[] = {0x08, 0x88};
    gen_case("onnx/trunc_varint.onnx", half_varint, 2, TOOL, 2, "offset 1: truncated varint", NULL);
    size_t g0 = graph_field_offset(&m);
    size_t step = (m.n - g0) / 30;
    for (size_t cut = g0 + 1; cut < m.n; cut += step)
        gen_case(fmt("onnx/trunc_%zu.onnx", cut), m.p, cut, TOOL, 2, "offset", NULL);
    gen_case(fmt("onnx/trunc_%zu.onnx", m.n - 1), m.p, m.n - 1, TOOL, 2, "offset", NULL);
    buf_free(&m);
}

/* A model whose first bytes are replaced by raw wire bytes (then the valid rest). */
static void prefixed(const char *file, const uint8_t *pre, size_t n, const char *frag)
{
    Buf b = {0}, m = onnx_base_model();
    buf_put(&b, pre, n);
    buf_put(&b, m.p, m.n);
    gen_case(file, b.p, b.n, TOOL, 2, frag, NULL);
    buf_free(&b);
    buf_free(&m);
}

/* The reference model with raw bytes spliced into the graph's first node, so that the
 * bad field sits three messages deep (lengths fixed up). */
static void in_node(const char *file, const uint8_t *bad, size_t n, const char *frag)
{
    static const int64_t yd[] = {1, 1, 8, 8};
    Buf node = ox_node("Relu", "relu1", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
    buf_put(&node, bad, n);
    Buf g = {0}, t;
    pb_msg(&g, 1, &node);
    t = ox_value("x", ONNX_FLOAT, yd, 4);
    pb_msg(&g, 11, &t);
    t = ox_value("y", ONNX_FLOAT, yd, 4);
    pb_msg(&g, 12, &t);
    Buf m = ox_model(13, &g);
    gen_case(file, m.p, m.n, TOOL, 2, frag, NULL);
    buf_free(&m);
}

static void varints(void)
{
    static const uint8_t eleven[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    prefixed("onnx/varint_11_bytes.onnx", eleven, sizeof eleven, "offset 1:");
    static const uint8_t over[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0x02};
    prefixed("onnx/varint_overflow.onnx", over, sizeof over, "offset 1: varint overflows");
    static const uint8_t tag10[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                    0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    prefixed("onnx/varint_bad_tag.onnx", tag10, sizeof tag10, "offset 0:");
    static const uint8_t badlen[] = {0x12, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    prefixed("onnx/varint_bad_length.onnx", badlen, sizeof badlen, "offset 1:");
    /* a packed dims array (TensorProto.dims, field 1) with an endless varint */
    Buf t = {0};
    uint8_t endless[16];
    memset(endless, 0x80, sizeof endless);
    pb_bytes(&t, 1, endless, sizeof endless);
    pb_int(&t, 2, ONNX_FLOAT);
    pb_str(&t, 8, "W");
    Buf g = onnx_base_graph();
    pb_msg(&g, 5, &t);
    Buf m = ox_model(13, &g);
    gen_case("onnx/varint_packed_endless.onnx", m.p, m.n, TOOL, 2, "invalid varint in packed array",
             NULL);
    buf_free(&m);
    /* a packed dims array whose last varint is cut */
    t = (Buf){0};
    static const uint8_t cut[] = {0x01, 0x02, 0x83};
    pb_bytes(&t, 1, cut, sizeof cut);
    pb_int(&t, 2, ONNX_FLOAT);
    pb_str(&t, 8, "W");
    g = onnx_base_graph();
    pb_msg(&g, 5, &t);
    m = ox_model(13, &g);
    gen_case("onnx/varint_packed_cut.onnx", m.p, m.n, TOOL, 2, "truncated varint", NULL);
    buf_free(&m);
    static const uint8_t zero_field[] = {0x02, 0x00};
    prefixed("onnx/field_number_zero.onnx", zero_field, sizeof zero_field,
             "offset 0: invalid field number 0");
}

static void wire_types(void)
{
    for (int wt = 3; wt <= 7; wt++) {
        if (wt == 5)
            continue;
        uint8_t top[] = {(uint8_t)(2 << 3 | wt), 0x01, 0x02, 0x03, 0x04};
        prefixed(fmt("onnx/wiretype_%d_top.onnx", wt), top, sizeof top,
                 fmt("offset 0: %s wire type %d", wt >= 6 ? "unknown" : "unsupported (group)", wt));
        uint8_t deep[] = {(uint8_t)(30 << 3 | wt), 0x01};
        in_node(fmt("onnx/wiretype_%d_node.onnx", wt), deep, sizeof deep,
                fmt("wire type %d in field 30 of NodeProto", wt));
    }
    /* known fields with the wrong wire type */
    static const uint8_t graph_varint[] = {0x38, 0x05}; /* graph (7) as a varint */
    prefixed("onnx/wiretype_graph_varint.onnx", graph_varint, sizeof graph_varint,
             "offset 0: field 'graph' of ModelProto has wire type 0, expected 2");
    static const uint8_t irver_fixed[] = {0x0d, 1, 2, 3, 4}; /* ir_version as fixed32 */
    prefixed("onnx/wiretype_irversion_fixed32.onnx", irver_fixed, sizeof irver_fixed,
             "field 'ir_version' of ModelProto has wire type 5");
    static const uint8_t opname_varint[] = {0x20, 0x07}; /* op_type (4) as a varint */
    in_node("onnx/wiretype_optype_varint.onnx", opname_varint, sizeof opname_varint,
            "field 'op_type' of NodeProto has wire type 0");
    static const uint8_t fixed_cut[] = {0xf5, 0x01, 1, 2}; /* unknown field 30, fixed32 */
    gen_case("onnx/fixed32_cut.onnx", fixed_cut, sizeof fixed_cut, TOOL, 2,
             "offset 2: truncated 4-byte field", NULL);
}

static void lengths(void)
{
    Buf m = onnx_base_model();
    /* graph length grown by one: runs past the end of the file */
    size_t g0 = graph_field_offset(&m);
    Buf b = buf_copy(&m);
    b.p[g0 + 1]++;
    gen_case("onnx/length_graph_plus1.onnx", b.p, b.n, TOOL, 2, fmt("offset %zu: length", g0 + 1),
             NULL);
    buf_free(&b);
    buf_free(&m);
    /* a string whose length says 2^40 bytes */
    uint8_t huge[] = {0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 'a', 'b'};
    prefixed("onnx/length_2e40.onnx", huge, sizeof huge, "offset 1: length 1099511627776");
    /* a node field whose length passes the end of its graph but not of the file */
    uint8_t node_len[] = {0x0a, 0x7f, 0x22, 0x01, 'x'};
    in_node("onnx/length_past_parent.onnx", node_len, sizeof node_len,
            "runs past the end of its message");
}

/* Repeated fields with absurd counts, as far as a small file allows. */
static void counts(void)
{
    Buf g = {0};
    for (int i = 0; i < 30000; i++)
        pb_bytes(&g, 1, "", 0); /* 30000 empty nodes */
    Buf m = ox_model(13, &g);
    gen_case("onnx/count_30000_empty_nodes.onnx", m.p, m.n, TOOL, 2,
             "node 'node_0' (?): node has no op_type", NULL);
    buf_free(&m);
    g = (Buf){0};
    int64_t *dims = calloc(40000, sizeof *dims);
    for (int i = 0; i < 40000; i++)
        dims[i] = 1;
    Buf t = {0};
    pb_packed_i64(&t, 1, dims, 40000);
    free(dims);
    pb_int(&t, 2, ONNX_FLOAT);
    pb_str(&t, 8, "W40k");
    pb_msg(&g, 5, &t);
    m = ox_model(13, &g);
    gen_case("onnx/count_40000_dims.onnx", m.p, m.n, TOOL, 2, "tensor 'W40k': rank 40000 exceeds",
             NULL);
    buf_free(&m);
    g = onnx_base_graph();
    for (int i = 0; i < 3000; i++) {
        t = ox_value("x", ONNX_FLOAT, (const int64_t[]){1}, 1);
        pb_msg(&g, 11, &t);
    }
    m = ox_model(13, &g);
    gen_case("onnx/count_3000_same_inputs.onnx", m.p, m.n, TOOL, 2,
             "graph input 'x' is listed twice", NULL);
    buf_free(&m);
}

/* If nodes nested depth deep through then_branch; the innermost graph is empty. */
static Buf nested_if(int depth, const char *attr, const char *op)
{
    Buf g = {0};
    pb_str(&g, 2, "g");
    for (int i = 0; i < depth; i++) {
        Buf n = ox_node(op, NULL, NULL, NULL);
        Buf a = ox_attr_graph(attr, &g);
        pb_msg(&n, 5, &a);
        g = (Buf){0};
        pb_msg(&g, 1, &n);
    }
    return g;
}

/* TypeProto nested depth deep through sequence_type. */
static Buf nested_type(int depth)
{
    Buf t = {0}, tt = {0};
    pb_int(&tt, 1, ONNX_FLOAT);
    pb_msg(&t, 1, &tt);
    for (int i = 0; i < depth; i++) {
        Buf seq = {0}, outer = {0};
        pb_msg(&seq, 1, &t);
        pb_msg(&outer, 4, &seq);
        t = outer;
    }
    return t;
}

static void nesting(void)
{
    static const struct {
        int depth;
        const char *op, *attr;
    } v[] = {{2000, "If", "then_branch"},
             {2000, "Loop", "body"},
             {65, "If", "else_branch"},
             {200, "Scan", "body"}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        Buf g = nested_if(v[i].depth, v[i].attr, v[i].op);
        Buf m = ox_model(13, &g);
        gen_case(fmt("onnx/nest_%s_%d.onnx", v[i].op, v[i].depth), m.p, m.n, TOOL, 2,
                 "GraphProto nested more than 64 deep", NULL);
        buf_free(&m);
    }
    Buf ty = nested_type(8000);
    Buf vi = {0};
    pb_str(&vi, 1, "x");
    pb_msg(&vi, 2, &ty);
    Buf g = {0};
    pb_msg(&g, 11, &vi);
    Buf m = ox_model(13, &g);
    gen_case("onnx/nest_typeproto_8000.onnx", m.p, m.n, TOOL, 2,
             "TypeProto nested more than 64 deep", NULL);
    buf_free(&m);
}

void gen_onnx_wire(void)
{
    truncations();
    varints();
    wire_types();
    lengths();
    counts();
    nesting();
}
