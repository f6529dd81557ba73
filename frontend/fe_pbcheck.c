/* fe_pbcheck.c: a schema-aware pre-scan of protobuf wire data.
 *
 * protobuf-c unpacks recursively with no depth limit and gives one generic failure
 * for any malformed byte. This scan runs first, over the raw bytes, guided by the
 * generated descriptors: it checks every tag, varint, length and packed array, that
 * each known field uses the wire type of its schema type, bounds the nesting of the
 * recursive messages (GraphProto inside AttributeProto for If/Loop/Scan bodies, and
 * TypeProto inside TypeProto), and estimates how much memory unpacking will take so
 * that a small file of millions of empty repeated messages is refused up front.
 *
 *   message := { tag:varint (field << 3 | wire) payload }*
 *   wire 0: varint   1: 8 bytes   2: varint length + bytes   5: 4 bytes
 *   wire 3/4 (groups) are not used by ONNX and refused; 6/7 do not exist.
 */
#include <stdio.h>
#include <string.h>

#include "fe_internal.h"

typedef struct {
    const uint8_t *buf;
    const FePbLimits *lim;
    size_t est;                     /* estimated bytes protobuf-c would allocate */
    char *err;
    size_t errlen;
} PbScan;

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

bool fe_pb_varint(const uint8_t *b, size_t *off, size_t end, uint64_t *v)
{
    uint64_t r = 0;
    for (int i = 0; i < 10 && *off < end; i++) {
        uint8_t c = b[(*off)++];
        r |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* Decode a varint at *off (< end). false with *off left at the start on error. */
static bool pb_varint(PbScan *s, size_t *off, size_t end, uint64_t *v)
{
    uint64_t r = 0;
    size_t o = *off;
    for (int i = 0; i < 10; i++) {
        if (o >= end) {
            fe_fmt(s->err, s->errlen, "offset %zu: truncated varint", *off);
            return false;
        }
        uint8_t b = s->buf[o++];
        if (i == 9 && b > 1) {
            fe_fmt(s->err, s->errlen, "offset %zu: varint overflows 64 bits", *off);
            return false;
        }
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *off = o;
            *v = r;
            return true;
        }
    }
    fe_fmt(s->err, s->errlen, "offset %zu: invalid varint (more than 10 bytes)", *off);
    return false;
}

/* Wire type a field of this schema type uses when not packed. */
static int wire_of(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        return WT_I32;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return WT_I64;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
        return WT_LEN;
    default:
        return WT_VARINT;
    }
}

/* Count the elements of a packed array payload [off, end), checking its framing. */
static bool pb_packed_count(PbScan *s, int wt, size_t off, size_t end, size_t *count)
{
    size_t n = end - off;
    if (wt == WT_I32 || wt == WT_I64) {
        size_t sz = wt == WT_I32 ? 4 : 8;
        if (n % sz) {
            fe_fmt(s->err, s->errlen, "offset %zu: packed array of %zu bytes is not a "
                   "whole number of %zu-byte elements", off, n, sz);
            return false;
        }
        *count = n / sz;
        return true;
    }
    size_t c = 0, run = 0;
    for (size_t o = off; o < end; o++) {
        if (s->buf[o] & 0x80) {
            if (++run >= 10) {
                fe_fmt(s->err, s->errlen, "offset %zu: invalid varint in packed array", o);
                return false;
            }
        } else {
            run = 0;
            c++;
        }
    }
    if (run) {
        fe_fmt(s->err, s->errlen, "offset %zu: truncated varint at the end of a packed "
               "array", end);
        return false;
    }
    *count = c;
    return true;
}

/* Add n bytes to the memory estimate; false once it passes the limit. */
static bool pb_charge(PbScan *s, size_t at, size_t n)
{
    s->est += n;
    if (s->est < n || s->est > s->lim->max_unpacked_bytes) {
        fe_fmt(s->err, s->errlen, "offset %zu: unpacking would need more than %zu bytes "
               "of memory (absurd repeated-field counts?)", at, s->lim->max_unpacked_bytes);
        return false;
    }
    return true;
}

/* (defined below: message scanning and length-delimited fields recurse) */
static bool pb_message(PbScan *s, const ProtobufCMessageDescriptor *d, size_t off,
                       size_t end, int rdepth, int adepth);

/* True for the message types that may contain themselves. */
static bool pb_recursive(const ProtobufCMessageDescriptor *d)
{
    return d == &onnx__graph_proto__descriptor || d == &onnx__type_proto__descriptor;
}

/* Check one length-delimited field payload [off, end) of known field f. */
static bool pb_len_field(PbScan *s, const ProtobufCFieldDescriptor *f, size_t tag_off,
                         size_t off, size_t end, int rdepth, int adepth)
{
    size_t n = end - off;
    bool rep = f->label == PROTOBUF_C_LABEL_REPEATED;
    if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
        const ProtobufCMessageDescriptor *sub = f->descriptor;
        return pb_charge(s, tag_off, rep ? 8 : 0) &&
               pb_message(s, sub, off, end, rdepth + pb_recursive(sub), adepth + 1);
    }
    if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_BYTES)
        return pb_charge(s, tag_off, n + 1 + (rep ? 16 : 0));
    /* a packed repeated scalar field */
    if (!rep) {
        fe_fmt(s->err, s->errlen, "offset %zu: field '%s' is length-delimited, but its "
               "type is a single number", tag_off, f->name);
        return false;
    }
    size_t count;
    if (!pb_packed_count(s, wire_of(f->type), off, end, &count))
        return false;
    return pb_charge(s, tag_off, count * 8);
}

/* One field as found on the wire. */
typedef struct {
    size_t tag_off;                 /* where its tag starts */
    uint64_t number;
    int wt;                         /* wire type */
    const ProtobufCFieldDescriptor *f; /* NULL for a field the schema does not know */
    size_t payload, pend;           /* its bytes: [payload, pend) */
} PbField;

/* Read the tag at *off and check it against message type d. */
static bool pb_tag(PbScan *s, const ProtobufCMessageDescriptor *d, size_t *off, size_t end,
                   PbField *fl)
{
    uint64_t tag;
    fl->tag_off = *off;
    if (!pb_varint(s, off, end, &tag))
        return false;
    fl->number = tag >> 3;
    fl->wt = (int)(tag & 7);
    if (fl->number == 0 || fl->number > 0x1fffffff) {
        fe_fmt(s->err, s->errlen, "offset %zu: invalid field number %llu", fl->tag_off,
               (unsigned long long)fl->number);
        return false;
    }
    fl->f = protobuf_c_message_descriptor_get_field(d, (unsigned)fl->number);
    if (fl->wt == WT_SGROUP || fl->wt == WT_EGROUP || fl->wt > WT_I32) {
        fe_fmt(s->err, s->errlen, "offset %zu: %s wire type %d in field %llu of %s",
               fl->tag_off, fl->wt > WT_I32 ? "unknown" : "unsupported (group)", fl->wt,
               (unsigned long long)fl->number, d->short_name);
        return false;
    }
    if (fl->f && fl->wt != wire_of(fl->f->type) &&
        !(fl->wt == WT_LEN && fl->f->label == PROTOBUF_C_LABEL_REPEATED)) {
        fe_fmt(s->err, s->errlen, "offset %zu: field '%s' of %s has wire type %d, expected %d",
               fl->tag_off, fl->f->name, d->short_name, fl->wt, wire_of(fl->f->type));
        return false;
    }
    return true;
}

/* Find the payload of the field whose tag was just read; *off moves past it. */
static bool pb_payload(PbScan *s, size_t *off, size_t end, PbField *fl)
{
    uint64_t v;
    fl->payload = *off;
    if (fl->wt == WT_VARINT) {
        if (!pb_varint(s, off, end, &v))
            return false;
    } else if (fl->wt == WT_I64 || fl->wt == WT_I32) {
        size_t sz = fl->wt == WT_I64 ? 8 : 4;
        if (end - *off < sz) {
            fe_fmt(s->err, s->errlen, "offset %zu: truncated %zu-byte field", *off, sz);
            return false;
        }
        *off += sz;
    } else {
        if (!pb_varint(s, off, end, &v))
            return false;
        if (v > end - *off) {
            fe_fmt(s->err, s->errlen, "offset %zu: length %llu runs past the end of its "
                   "message (%zu bytes left)", fl->payload, (unsigned long long)v, end - *off);
            return false;
        }
        fl->payload = *off;
        *off += (size_t)v;
    }
    fl->pend = *off;
    return true;
}

/* protobuf-c merges repeats of a singular message field, copying its arrays each time
 * (quadratic); no ONNX writer repeats one, so a repeat is refused. seen: field
 * numbers below 64 met so far in this message. */
static bool pb_once(PbScan *s, const ProtobufCMessageDescriptor *d, const PbField *fl,
                    uint64_t *seen)
{
    const ProtobufCFieldDescriptor *f = fl->f;
    if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE || f->label == PROTOBUF_C_LABEL_REPEATED ||
        fl->number >= 64)
        return true;
    if (*seen & (1ull << fl->number)) {
        fe_fmt(s->err, s->errlen, "offset %zu: field '%s' of %s appears more than once",
               fl->tag_off, f->name, d->short_name);
        return false;
    }
    *seen |= 1ull << fl->number;
    return true;
}

/* Scan the fields of one message of type d stored in [off, end). */
static bool pb_message(PbScan *s, const ProtobufCMessageDescriptor *d, size_t off,
                       size_t end, int rdepth, int adepth)
{
    if (rdepth > s->lim->max_nesting || adepth > 16 * s->lim->max_nesting + 64) {
        fe_fmt(s->err, s->errlen, "offset %zu: %s nested more than %d deep (nesting limit)",
               off, d->short_name, s->lim->max_nesting);
        return false;
    }
    if (!pb_charge(s, off, d->sizeof_message))
        return false;
    uint64_t seen = 0;
    while (off < end) {
        PbField fl;
        if (!pb_tag(s, d, &off, end, &fl) || !pb_once(s, d, &fl, &seen) ||
            !pb_payload(s, &off, end, &fl))
            return false;
        bool ok;
        if (!fl.f)                         /* unknown field: protobuf-c keeps a copy */
            ok = pb_charge(s, fl.tag_off, 32 + (fl.pend - fl.payload));
        else if (fl.wt == WT_LEN)
            ok = pb_len_field(s, fl.f, fl.tag_off, fl.payload, fl.pend, rdepth, adepth);
        else
            ok = pb_charge(s, fl.tag_off, fl.f->label == PROTOBUF_C_LABEL_REPEATED ? 8 : 0);
        if (!ok)
            return false;
    }
    return true;
}

/* Pre-scan buf as one message of type desc. */
bool fe_pb_check(const uint8_t *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                 const FePbLimits *lim, char *err, size_t errlen)
{
    PbScan s = {.buf = buf, .lim = lim, .err = err, .errlen = errlen};
    return pb_message(&s, desc, 0, len, pb_recursive(desc), 0);
}
