/* fe_onnx_strip.c: the weights of a model file kept out of protobuf-c.
 *
 * protobuf-c copies every bytes field it unpacks. The raw_data of the main graph's
 * initializers (the weights: nearly all of a model file without external data) need
 * no copy: the file is mapped, so fe_onnx_strip writes a copy of the ModelProto
 * without those payloads (only the enclosing lengths change) and records where each
 * lies in the file; after unpacking, fe_onnx_strip_attach points each initializer's
 * raw_data into the mapping, and fe_onnx_strip_detach clears them again before the
 * message is freed. The input has passed fe_pb_check; anything unexpected (a graph
 * field given twice, a malformed length) makes fe_onnx_strip decline, and the file
 * is unpacked as it is.
 *
 *   ModelProto   field 7  graph        (rewritten)
 *   GraphProto   field 5  initializer  (each rewritten)
 *   TensorProto  field 9  raw_data     (dropped when at least FE_STRIP_MIN bytes)
 */
#include <stdlib.h>
#include <string.h>

#include "fe_onnx.h"

#define FE_STRIP_MIN 256                   /* smaller payloads are left in place */

enum { F_MODEL_GRAPH = 7, F_GRAPH_INIT = 5, F_TENSOR_RAW = 9 };

/* One field of a message: [start, end) with payload [pay, end) for wire type 2. */
typedef struct {
    uint32_t num;
    int wire;
    size_t start, pay, end;
} Field;

/* The field at *o of a message ending at end; *o moves past it. */
static bool next_field(const uint8_t *b, size_t *o, size_t end, Field *f)
{
    uint64_t tag, n = 0;
    f->start = *o;
    if (!fe_pb_varint(b, o, end, &tag))
        return false;
    f->num = (uint32_t)(tag >> 3);
    f->wire = (int)(tag & 7);
    if (f->wire == 0 || f->wire == 2) {
        if (!fe_pb_varint(b, o, end, &n))
            return false;
        if (f->wire == 0)
            n = 0;                         /* a varint: no payload after it */
    } else if (f->wire == 1 || f->wire == 5) {
        n = f->wire == 1 ? 8 : 4;
    } else {
        return false;
    }
    if (n > end - *o)
        return false;
    f->pay = *o;
    *o += (size_t)n;
    f->end = *o;
    return true;
}

/* Bytes of the varint encoding of v. */
static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Append the varint v at out + *n (out NULL: only count). */
static void put_varint(uint8_t *out, size_t *n, uint64_t v)
{
    do {
        uint8_t c = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (out)
            out[*n] = (uint8_t)(c | (v ? 0x80 : 0));
        (*n)++;
    } while (v);
}

/* Append bytes [a, z) of b (out NULL: only count). */
static void put_bytes(uint8_t *out, size_t *n, const uint8_t *b, size_t a, size_t z)
{
    if (out)
        memcpy(out + *n, b + a, z - a);
    *n += z - a;
}

/* Initializer [a, z) without a large raw_data: appended at out + *n (out NULL: only
 * counted); the payload it drops, if any, is recorded in *span. */
static bool strip_tensor(const uint8_t *b, size_t a, size_t z, uint8_t *out, size_t *n,
                         FeRawSpan *span)
{
    span->len = 0;
    span->off = 0;
    int nraw = 0;
    for (size_t o = a; o < z;) {
        Field f;
        if (!next_field(b, &o, z, &f))
            return false;
        bool raw = f.num == F_TENSOR_RAW && f.wire == 2;
        if (raw && ++nraw > 1)
            return false;                  /* raw_data twice: left to protobuf-c */
        if (raw && f.end - f.pay >= FE_STRIP_MIN) {
            span->off = f.pay;
            span->len = f.end - f.pay;
            continue;
        }
        put_bytes(out, n, b, f.start, f.end);
    }
    return true;
}

/* Add span to st. */
static bool add_span(FeStrip *st, FeRawSpan span)
{
    if (st->n == st->cap) {
        uint32_t cap = st->cap ? 2 * st->cap : 64;
        FeRawSpan *p = realloc(st->spans, cap * sizeof *p);
        if (!p)
            return false;
        st->spans = p;
        st->cap = cap;
    }
    st->spans[st->n++] = span;
    return true;
}

/* GraphProto [a, z) with its initializers stripped, appended at out + *n (out NULL:
 * only counted; st NULL: spans not recorded). */
static bool strip_graph(const uint8_t *b, size_t a, size_t z, uint8_t *out, size_t *n,
                        FeStrip *st)
{
    uint32_t index = 0;
    for (size_t o = a; o < z;) {
        Field f;
        if (!next_field(b, &o, z, &f))
            return false;
        if (f.num != F_GRAPH_INIT || f.wire != 2) {
            put_bytes(out, n, b, f.start, f.end);
            continue;
        }
        size_t len = 0;
        FeRawSpan span;
        if (!strip_tensor(b, f.pay, f.end, NULL, &len, &span))
            return false;
        put_varint(out, n, (uint64_t)F_GRAPH_INIT << 3 | 2);
        put_varint(out, n, len);
        strip_tensor(b, f.pay, f.end, out, n, &span);
        span.index = index++;
        if (st && span.len && !add_span(st, span))
            return false;
    }
    return true;
}

bool fe_onnx_strip(const uint8_t *b, size_t len, uint8_t **out, size_t *outlen, FeStrip *st)
{
    memset(st, 0, sizeof *st);
    *out = NULL;
    Field graph = {0};
    int ngraph = 0;
    for (size_t o = 0; o < len;) {
        Field f;
        if (!next_field(b, &o, len, &f))
            return false;
        if (f.num == F_MODEL_GRAPH) {
            graph = f;
            ngraph++;
        }
    }
    size_t glen = 0;
    if (ngraph != 1 || graph.wire != 2 || !strip_graph(b, graph.pay, graph.end, NULL, &glen, NULL))
        return false;
    size_t total = graph.start + varint_len((uint64_t)F_MODEL_GRAPH << 3 | 2) +
                   varint_len(glen) + glen + (len - graph.end);
    uint8_t *p = malloc(total ? total : 1);
    if (!p)
        return false;
    size_t n = 0;
    put_bytes(p, &n, b, 0, graph.start);
    put_varint(p, &n, (uint64_t)F_MODEL_GRAPH << 3 | 2);
    put_varint(p, &n, glen);
    if (!strip_graph(b, graph.pay, graph.end, p, &n, st)) {
        free(p);
        fe_onnx_strip_free(st);
        return false;
    }
    put_bytes(p, &n, b, graph.end, len);
    IR_ASSERT(n == total);
    *out = p;
    *outlen = n;
    return true;
}

void fe_onnx_strip_attach(const FeStrip *st, Onnx__ModelProto *m, const uint8_t *file)
{
    Onnx__GraphProto *g = m->graph;
    for (uint32_t i = 0; i < st->n; i++) {
        const FeRawSpan *s = &st->spans[i];
        IR_ASSERT(g && s->index < g->n_initializer);
        Onnx__TensorProto *tp = g->initializer[s->index];
        IR_ASSERT(!tp->has_raw_data);
        tp->has_raw_data = 1;
        tp->raw_data.len = s->len;
        tp->raw_data.data = (uint8_t *)file + s->off;
    }
}

void fe_onnx_strip_detach(const FeStrip *st, Onnx__ModelProto *m)
{
    for (uint32_t i = 0; i < st->n && m->graph; i++) {
        Onnx__TensorProto *tp = m->graph->initializer[st->spans[i].index];
        tp->has_raw_data = 0;
        tp->raw_data.len = 0;
        tp->raw_data.data = NULL;
    }
}

void fe_onnx_strip_free(FeStrip *st)
{
    free(st->spans);
    memset(st, 0, sizeof *st);
}
