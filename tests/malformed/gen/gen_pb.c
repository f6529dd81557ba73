/* gen_pb.c: a minimal protobuf writer and ONNX message builders for the corpus
 * generator. Hand-written rather than protobuf-c so that cases can break the wire
 * format at will; field numbers follow onnx/onnx.proto. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

/* Append n bytes to b (aborts the generator on out of memory). */
void buf_put(Buf *b, const void *data, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) {
            fprintf(stderr, "gen: out of memory\n");
            exit(1);
        }
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, data, n);
    b->n += n;
}

void buf_free(Buf *b)
{
    free(b->p);
    *b = (Buf){0};
}

/* A deep copy of b. */
Buf buf_copy(const Buf *b)
{
    Buf c = {0};
    buf_put(&c, b->p, b->n);
    return c;
}

/* Base-128 varint. */
void pb_varint(Buf *b, uint64_t v)
{
    uint8_t tmp[10];
    int n = 0;
    do {
        tmp[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            tmp[n] |= 0x80;
        n++;
    } while (v);
    buf_put(b, tmp, (size_t)n);
}

void pb_tag(Buf *b, uint32_t field, int wt)
{
    pb_varint(b, ((uint64_t)field << 3) | (uint64_t)wt);
}

void pb_int(Buf *b, uint32_t field, int64_t v)
{
    pb_tag(b, field, WT_VARINT);
    pb_varint(b, (uint64_t)v);
}

void pb_bytes(Buf *b, uint32_t field, const void *p, size_t n)
{
    pb_tag(b, field, WT_LEN);
    pb_varint(b, n);
    buf_put(b, p, n);
}

void pb_str(Buf *b, uint32_t field, const char *s)
{
    pb_bytes(b, field, s, strlen(s));
}

void pb_float(Buf *b, uint32_t field, float f)
{
    pb_tag(b, field, WT_I32);
    buf_put(b, &f, 4);
}

/* Append sub as a length-delimited field, then free it. */
void pb_msg(Buf *b, uint32_t field, Buf *sub)
{
    pb_bytes(b, field, sub->p, sub->n);
    buf_free(sub);
}

void pb_packed_i64(Buf *b, uint32_t field, const int64_t *v, size_t n)
{
    Buf t = {0};
    for (size_t i = 0; i < n; i++)
        pb_varint(&t, (uint64_t)v[i]);
    pb_msg(b, field, &t);
}

/* TensorProto: dims(1) data_type(2) name(8) raw_data(9). raw may be NULL (no data). */
Buf ox_tensor(const char *name, int dtype, const int64_t *dims, int rank, const void *raw,
              size_t rawlen)
{
    Buf t = {0};
    for (int i = 0; i < rank; i++)
        pb_int(&t, 1, dims[i]);
    pb_int(&t, 2, dtype);
    pb_str(&t, 8, name);
    if (raw)
        pb_bytes(&t, 9, raw, rawlen);
    return t;
}

/* A float tensor whose every element is fill (raw_data). */
Buf ox_tensor_f32(const char *name, const int64_t *dims, int rank, float fill)
{
    size_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    float *d = malloc((n ? n : 1) * sizeof *d);
    for (size_t i = 0; i < n; i++)
        d[i] = fill + 0.01f * (float)(i % 17);
    Buf t = ox_tensor(name, ONNX_FLOAT, dims, rank, d, n * sizeof *d);
    free(d);
    return t;
}

/* ValueInfoProto name(1) type(2){tensor_type(1){elem_type(1) shape(2){dim(1){value(1)}}}}.
 * rank < 0: no shape. */
Buf ox_value(const char *name, int dtype, const int64_t *dims, int rank)
{
    Buf shape = {0}, tt = {0}, ty = {0}, vi = {0};
    for (int i = 0; i < rank; i++) {
        Buf d = {0};
        pb_int(&d, 1, dims[i]);
        pb_msg(&shape, 1, &d);
    }
    if (dtype)
        pb_int(&tt, 1, dtype);
    if (rank >= 0)
        pb_msg(&tt, 2, &shape);
    buf_free(&shape);
    pb_msg(&ty, 1, &tt);
    pb_str(&vi, 1, name);
    pb_msg(&vi, 2, &ty);
    return vi;
}

/* NodeProto input(1) output(2) name(3) op_type(4). */
Buf ox_node(const char *op, const char *name, const char *const *in, const char *const *out)
{
    Buf n = {0};
    for (; in && *in; in++)
        pb_str(&n, 1, *in);
    for (; out && *out; out++)
        pb_str(&n, 2, *out);
    if (name)
        pb_str(&n, 3, name);
    pb_str(&n, 4, op);
    return n;
}

/* AttributeProto name(1) f(2) i(3) s(4) t(5) g(6) ints(8) type(20). */
Buf ox_attr_int(const char *name, int64_t v)
{
    Buf a = {0};
    pb_str(&a, 1, name);
    pb_int(&a, 3, v);
    pb_int(&a, 20, 2);
    return a;
}

Buf ox_attr_ints(const char *name, const int64_t *v, size_t n)
{
    Buf a = {0};
    pb_str(&a, 1, name);
    for (size_t i = 0; i < n; i++)
        pb_int(&a, 8, v[i]);
    pb_int(&a, 20, 7);
    return a;
}

Buf ox_attr_float(const char *name, float f)
{
    Buf a = {0};
    pb_str(&a, 1, name);
    pb_float(&a, 2, f);
    pb_int(&a, 20, 1);
    return a;
}

Buf ox_attr_str(const char *name, const char *s)
{
    Buf a = {0};
    pb_str(&a, 1, name);
    pb_str(&a, 4, s);
    pb_int(&a, 20, 3);
    return a;
}

Buf ox_attr_graph(const char *name, Buf *graph)
{
    Buf a = {0};
    pb_str(&a, 1, name);
    pb_msg(&a, 6, graph);
    pb_int(&a, 20, 5);
    return a;
}

Buf ox_attr_tensor(const char *name, Buf *tensor)
{
    Buf a = {0};
    pb_str(&a, 1, name);
    pb_msg(&a, 5, tensor);
    pb_int(&a, 20, 4);
    return a;
}

/* OperatorSetIdProto domain(1) version(2). */
Buf ox_opset(const char *domain, int64_t version)
{
    Buf o = {0};
    if (domain)
        pb_str(&o, 1, domain);
    pb_int(&o, 2, version);
    return o;
}

/* ModelProto ir_version(1) producer_name(2) graph(7) opset_import(8); the graph is
 * written last so that a cut inside it leaves the earlier fields whole. */
Buf ox_model(int64_t opset, Buf *graph)
{
    Buf m = {0};
    pb_int(&m, 1, 8);
    pb_str(&m, 2, "spyrec-corpus");
    if (opset >= 0) {
        Buf o = ox_opset("", opset);
        pb_msg(&m, 8, &o);
    }
    pb_msg(&m, 7, graph);
    return m;
}

/* ---- graph building shortcuts ---- */

void g_input(Buf *g, const char *name, int dtype, const int64_t *dims, int rank)
{
    Buf v = ox_value(name, dtype, dims, rank);
    pb_msg(g, 11, &v);
}

void g_output(Buf *g, const char *name, int dtype, const int64_t *dims, int rank)
{
    Buf v = ox_value(name, dtype, dims, rank);
    pb_msg(g, 12, &v);
}

void g_init_f32(Buf *g, const char *name, const int64_t *dims, int rank)
{
    Buf t = ox_tensor_f32(name, dims, rank, 0.25f);
    pb_msg(g, 5, &t);
}

/* A 1-D int64 initializer holding vals. */
void g_init_i64(Buf *g, const char *name, const int64_t *vals, int n)
{
    int64_t d = n;
    Buf t = ox_tensor(name, ONNX_INT64, &d, 1, vals, (size_t)n * 8);
    pb_msg(g, 5, &t);
}

void g_node(Buf *g, const char *op, const char *name, const char *const *in, const char *const *out,
            ...)
{
    Buf n = ox_node(op, name, in, out);
    va_list ap;
    va_start(ap, out);
    Buf a;
    for (;;) {
        a = va_arg(ap, Buf);
        if (!a.p)
            break;
        pb_msg(&n, 5, &a);
    }
    va_end(ap);
    pb_msg(g, 1, &n);
}

void g_case(const char *file, Buf *g, int64_t opset, const char *frag)
{
    Buf m = ox_model(opset, g);
    gen_case(file, m.p, m.n, "spyrec", 2, frag, NULL);
    buf_free(&m);
}
