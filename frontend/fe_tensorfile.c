/* fe_tensorfile.c: host tensors from/to files: ONNX TensorProto (.pb, as in the
 * model-zoo test_data_set folders) and NumPy .npy (told apart by the .npy magic). */
#include <stdlib.h>
#include <string.h>

#include "fe_internal.h"

#define FE_TENSOR_MAX_FILE_BYTES ((size_t)4 << 30)

/* Release what a read filled in; t may be partly filled or zeroed. */
void fe_tensor_free(FeTensor *t)
{
    if (!t)
        return;
    free(t->name);
    if (t->huge)
        ir_huge_free(t->data, t->nbytes);
    else if (!t->borrowed)
        free(t->data);
    t->borrowed = t->huge = false;
    t->name = NULL;
    t->data = NULL;
    t->nbytes = 0;
}

/* Decode a TensorProto image; base_dir is for external data (NULL: refused). */
static bool read_pb(const char *label, const uint8_t *buf, size_t len, const char *base_dir,
                    FeTensor *t, char *err, size_t errlen)
{
    char msg[768];
    FePbLimits lim = {FE_DEFAULT_MAX_NESTING, ((size_t)64 << 20) + 16 * len};
    if (!fe_pb_check(buf, len, &onnx__tensor_proto__descriptor, &lim, msg, sizeof msg)) {
        fe_fmt(err, errlen, "%s: %s", label, msg);
        return false;
    }
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
    if (!tp) {
        fe_fmt(err, errlen, "%s: not a valid TensorProto (protobuf decoding failed)", label);
        return false;
    }
    FeData src = {.dir = base_dir};
    bool ok = fe_tensor_from_proto(tp, &src, t, msg, sizeof msg);
    if (!ok)
        fe_fmt(err, errlen, "%s: %s", label, msg);
    fe_data_finish(&src, NULL);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return ok;
}

/* Tensor from bytes in memory: .npy if it has the magic, else a TensorProto. */
static bool read_any(const char *label, const uint8_t *buf, size_t len, const char *base_dir,
                     FeTensor *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (fe_npy_is(buf, len))
        return fe_npy_read(label, buf, len, t, err, errlen);
    size_t ll = strlen(label);
    if (ll >= 4 && !strcmp(label + ll - 4, ".npy")) {
        fe_fmt(err, errlen, "%s: offset 0: not a .npy file (bad magic)", label);
        return false;
    }
    return read_pb(label, buf, len, base_dir, t, err, errlen);
}

/* Read a tensor file; external data of a .pb is resolved next to it. */
bool fe_tensor_read(const char *path, FeTensor *t, char *err, size_t errlen)
{
    char msg[512];
    size_t len;
    memset(t, 0, sizeof *t);
    uint8_t *buf = fe_read_file(path, FE_TENSOR_MAX_FILE_BYTES, &len, msg, sizeof msg);
    if (!buf) {
        fe_fmt(err, errlen, "%s: %s", path, msg);
        return false;
    }
    char *dir = fe_dirname(path);
    bool ok = dir && read_any(path, buf, len, dir, t, err, errlen);
    if (!dir)
        fe_fmt(err, errlen, "%s: out of memory", path);
    free(dir);
    free(buf);
    return ok;
}

/* Read a tensor from memory (no external data: there is no folder). */
bool fe_tensor_read_mem(const char *label, const uint8_t *buf, size_t len, FeTensor *t,
                        char *err, size_t errlen)
{
    return read_any(label ? label : "<memory>", buf, len, NULL, t, err, errlen);
}

/* Write t as TensorProto or .npy through a temporary file + rename. */
bool fe_tensor_write(const char *path, const FeTensor *t, int npy, char *err, size_t errlen)
{
    uint8_t *bytes = NULL;
    size_t n = 0;
    char msg[512];
    bool ok = npy ? fe_npy_encode(t, &bytes, &n, msg, sizeof msg)
                  : fe_tensor_to_proto(t, &bytes, &n, msg, sizeof msg);
    if (!ok) {
        fe_fmt(err, errlen, "%s: %s", path, msg);
        return false;
    }
    ok = fe_write_file_atomic(path, bytes, n, err, errlen);
    free(bytes);
    return ok;
}

/* ---- sequences and optionals ----
 *
 * SequenceProto and OptionalProto (onnx-data.proto) number their fields alike; a
 * sequence repeats fields 3, 5 and 7 where an optional has at most one:
 *
 *   1 name: string      2 elem_type: 0 undefined, 1 tensor, 2 sparse tensor,
 *   3 TensorProto       3 sequence, 4 map, 5 optional
 *   4 SparseTensorProto 5 SequenceProto   6 MapProto   7 OptionalProto
 *
 * The walk is strict (any other field number or wire type is refused): a TensorProto
 * (dims as varints in field 1, name in field 8, raw data in field 9) is not one.
 */

#define SEQ_MAX_ITEMS 65535                /* most tensors one file may hold */

typedef struct {
    const char *label;                     /* the file, for messages */
    const uint8_t *buf;
    const char *base_dir;                  /* external data of elements, or NULL */
    char *err;
    size_t errlen;
} SeqRead;

/* The spans of one container message: its name, elem_type and the payloads of its
 * element fields (3 tensors, 5 sequences). */
typedef struct {
    size_t name_off, name_len;
    bool has_name;
    uint64_t elem_type;
    size_t count[8];                       /* occurrences of fields 1..7 */
} SeqMsg;

/* Walk the fields of the message [off, end); fill m. Element payloads are visited
 * again later through seq_next_field. */
static bool seq_scan(SeqRead *r, size_t off, size_t end, SeqMsg *m)
{
    memset(m, 0, sizeof *m);
    while (off < end) {
        size_t at = off;
        uint64_t tag, v;
        if (!fe_pb_varint(r->buf, &off, end, &tag)) {
            fe_fmt(r->err, r->errlen, "%s: offset %zu: invalid tag", r->label, at);
            return false;
        }
        unsigned field = tag >> 3 <= 7 ? (unsigned)(tag >> 3) : 0, wire = tag & 7;
        if (field < 1 || wire != (field == 2 ? 0u : 2u)) {
            fe_fmt(r->err, r->errlen, "%s: offset %zu: not a SequenceProto or OptionalProto "
                   "(field %llu, wire type %u)", r->label, at, (unsigned long long)(tag >> 3),
                   wire);
            return false;
        }
        if (!fe_pb_varint(r->buf, &off, end, &v) || (wire == 2 && v > end - off)) {
            fe_fmt(r->err, r->errlen, "%s: offset %zu: field %u: %s", r->label, at, field,
                   wire == 2 ? "truncated, or a length past the end" : "invalid varint");
            return false;
        }
        if (field == 2) {
            m->elem_type = v;
        } else {
            if (field == 1) {
                m->name_off = off;
                m->name_len = (size_t)v;
                m->has_name = true;
            }
            off += (size_t)v;
        }
        m->count[field]++;
    }
    return true;
}

/* Whether the name is text without control characters (packed TensorProto dims
 * are small varints, so this tells them apart). */
static bool seq_name_ok(const SeqRead *r, const SeqMsg *m)
{
    for (size_t i = 0; i < m->name_len; i++)
        if (r->buf[m->name_off + i] < 0x20 || r->buf[m->name_off + i] == 0x7f)
            return false;
    return true;
}

/* The next occurrence of field `want` in [*off, end) (already scanned): its payload
 * span. */
static void seq_next_field(const SeqRead *r, size_t *off, size_t end, unsigned want,
                           size_t *poff, size_t *plen)
{
    for (;;) {
        uint64_t tag = 0, v = 0;
        bool ok = fe_pb_varint(r->buf, off, end, &tag) && fe_pb_varint(r->buf, off, end, &v);
        IR_ASSERT(ok);
        if ((tag & 7) == 0)
            continue;                      /* elem_type */
        if ((tag >> 3) == want) {
            *poff = *off;
            *plen = (size_t)v;
            *off += (size_t)v;
            return;
        }
        *off += (size_t)v;
    }
}

/* Append the tensors of the TENSOR elements (field 3) of [off, end) to s. */
static bool seq_tensors(SeqRead *r, size_t off, size_t end, const SeqMsg *m, FeSeq *s)
{
    if (m->count[3] > SEQ_MAX_ITEMS) {
        fe_fmt(r->err, r->errlen, "%s: unsupported: more than %d elements", r->label,
               SEQ_MAX_ITEMS);
        return false;
    }
    s->items = calloc(m->count[3] + 1, sizeof *s->items);
    if (!s->items) {
        fe_fmt(r->err, r->errlen, "%s: out of memory", r->label);
        return false;
    }
    for (size_t i = 0; i < m->count[3]; i++) {
        size_t po, pl;
        char label[600], msg[768];
        seq_next_field(r, &off, end, 3, &po, &pl);
        snprintf(label, sizeof label, "element %zu (offset %zu)", i, po);
        if (!read_pb(label, r->buf + po, pl, r->base_dir, &s->items[i], msg, sizeof msg)) {
            fe_fmt(r->err, r->errlen, "%s: %s", r->label, msg);
            return false;
        }
        s->n++;
        if (i == 0)
            s->elem = s->items[0].dtype;
        if (s->items[i].dtype != s->elem) {
            fe_fmt(r->err, r->errlen, "%s: element %zu is %s, element 0 is %s", r->label, i,
                   ir_dtype_name(s->items[i].dtype), ir_dtype_name(s->elem));
            return false;
        }
    }
    return true;
}

/* Decode the container [off, end) into s; depth 1 is a sequence inside an optional
 * (or a sequence of one sequence), which must hold tensors. */
static bool seq_decode(SeqRead *r, size_t off, size_t end, int depth, FeSeq *s)
{
    SeqMsg m;
    if (!seq_scan(r, off, end, &m))
        return false;
    if (m.has_name && !seq_name_ok(r, &m)) {
        fe_fmt(r->err, r->errlen, "%s: offset %zu: not a SequenceProto or OptionalProto (the "
               "name is not text)", r->label, m.name_off);
        return false;
    }
    static const char *const kinds[] = {"undefined", "tensor", "sparse tensor", "sequence",
                                        "map", "optional"};
    uint64_t et = m.elem_type;
    size_t others = m.count[3] + m.count[4] + m.count[5] + m.count[6] + m.count[7];
    /* elem_type 1 -> field 3, 2 -> 4, 3 -> 5, 4 -> 6, 5 -> 7 */
    bool fits = et == 0 ? others == 0 : et <= 5 && others == m.count[et + 2];
    if (!fits) {
        fe_fmt(r->err, r->errlen, "%s: elem_type %llu (%s) does not match the values the "
               "file holds", r->label, (unsigned long long)et, et <= 5 ? kinds[et] : "unknown");
        return false;
    }
    if (et == 2 || et == 4 || et == 5 || (et == 3 && (depth > 0 || m.count[5] > 1))) {
        fe_fmt(r->err, r->errlen, "%s: unsupported: a %s of %s values (only tensors, or one "
               "sequence of tensors inside an optional)", r->label,
               depth ? "nested sequence" : "sequence or optional",
               et == 3 ? "sequence" : kinds[et]);
        return false;
    }
    if (et == 0 || (et == 3 && m.count[5] == 0)) {
        s->none = true;                    /* an optional without a value */
        return true;
    }
    if (et == 1)
        return seq_tensors(r, off, end, &m, s);
    size_t po, pl;
    seq_next_field(r, &off, end, 5, &po, &pl);
    if (!seq_decode(r, po, po + pl, depth + 1, s))
        return false;
    s->none = false;                       /* an optional holding an empty sequence */
    return true;
}

void fe_seq_free(FeSeq *s)
{
    if (!s)
        return;
    for (int i = 0; s->items && i < s->n; i++)
        fe_tensor_free(&s->items[i]);
    free(s->items);
    free(s->name);
    memset(s, 0, sizeof *s);
}

/* Decode a container image; its top-level name is kept. */
static bool seq_read_any(const char *label, const uint8_t *buf, size_t len,
                         const char *base_dir, FeSeq *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    SeqRead r = {label, buf, base_dir, err, errlen};
    SeqMsg m;
    if (!seq_scan(&r, 0, len, &m) || !seq_decode(&r, 0, len, 0, s)) {
        fe_seq_free(s);
        return false;
    }
    s->name = m.has_name ? strndup((const char *)buf + m.name_off, m.name_len) : strdup("");
    if (!s->name) {
        fe_seq_free(s);
        fe_fmt(err, errlen, "%s: out of memory", label);
        return false;
    }
    return true;
}

bool fe_seq_read_mem(const char *label, const uint8_t *buf, size_t len, FeSeq *s, char *err,
                     size_t errlen)
{
    return seq_read_any(label ? label : "<memory>", buf, len, NULL, s, err, errlen);
}

bool fe_seq_read(const char *path, FeSeq *s, char *err, size_t errlen)
{
    char msg[512];
    size_t len;
    memset(s, 0, sizeof *s);
    uint8_t *buf = fe_read_file(path, FE_TENSOR_MAX_FILE_BYTES, &len, msg, sizeof msg);
    if (!buf) {
        fe_fmt(err, errlen, "%s: %s", path, msg);
        return false;
    }
    char *dir = fe_dirname(path);
    bool ok = dir && seq_read_any(path, buf, len, dir, s, err, errlen);
    if (!dir)
        fe_fmt(err, errlen, "%s: out of memory", path);
    free(dir);
    free(buf);
    return ok;
}
