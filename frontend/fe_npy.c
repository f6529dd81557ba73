/* fe_npy.c: NumPy .npy files (format versions 1, 2 and 3; C order only).
 *
 *   "\x93NUMPY" major minor  header_len (u16 LE for v1, u32 LE for v2/v3)
 *   header: a Python dict literal, padded with spaces and ending in '\n':
 *           {'descr': '<f4', 'fortran_order': False, 'shape': (4, 784), }
 *   data:   numel x itemsize bytes, row-major
 *
 * descr is a byte order ('<' little, '>' big - swapped on read, '|' n/a, '=' native)
 * and a kind+size: f2 f4 f8, i1 i2 i4 i8, u1 u2 u4 u8, b1. Structured dtypes and
 * Fortran order are refused. Writes use v1, padding the preamble + header to a
 * multiple of 64 bytes as NumPy does.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_internal.h"

static const uint8_t npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* Descriptor kind+size -> dtype. */
static const struct {
    const char *code;
    IrDType dt;
} npy_types[] = {
    {"f4", IR_DT_F32}, {"f8", IR_DT_F64}, {"f2", IR_DT_F16}, {"i1", IR_DT_I8},
    {"u1", IR_DT_U8},  {"i2", IR_DT_I16}, {"u2", IR_DT_U16}, {"i4", IR_DT_I32},
    {"u4", IR_DT_U32}, {"i8", IR_DT_I64}, {"u8", IR_DT_U64}, {"b1", IR_DT_BOOL},
};

/* True when buf starts with the .npy magic. */
bool fe_npy_is(const uint8_t *buf, size_t len)
{
    return len >= sizeof npy_magic && !memcmp(buf, npy_magic, sizeof npy_magic);
}

/* Cursor over the header text. */
typedef struct {
    const char *start, *p, *end;
    char *err;
    size_t errlen;
    const char *label;
    size_t base;                    /* file offset of the header text */
} Hdr;

/* Report a header syntax problem at the cursor. */
static bool hdr_fail(Hdr *h, const char *what)
{
    fe_fmt(h->err, h->errlen, "%s: offset %zu: .npy header: %s", h->label,
           h->base + (size_t)(h->p - h->start), what);
    return false;
}

/* Skip spaces at the cursor. */
static void skip_ws(Hdr *h)
{
    while (h->p < h->end && isspace((unsigned char)*h->p))
        h->p++;
}

/* Consume character c (after spaces). */
static bool eat(Hdr *h, char c)
{
    skip_ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return true;
    }
    return false;
}

/* A quoted Python string (no escapes needed for the keys/descr we accept). */
static bool hdr_str(Hdr *h, char *out, size_t outlen)
{
    skip_ws(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
        return hdr_fail(h, "expected a quoted string");
    char q = *h->p++;
    size_t n = 0;
    while (h->p < h->end && *h->p != q) {
        if (n + 1 >= outlen)
            return hdr_fail(h, "string too long");
        out[n++] = *h->p++;
    }
    if (h->p >= h->end)
        return hdr_fail(h, "unterminated string");
    h->p++;
    out[n] = 0;
    return true;
}

/* A shape tuple "(a, b, )" into dims. */
static bool hdr_shape(Hdr *h, int64_t *dims, size_t *rank)
{
    if (!eat(h, '('))
        return hdr_fail(h, "shape must be a tuple");
    *rank = 0;
    for (;;) {
        if (eat(h, ')'))
            return true;
        skip_ws(h);
        if (h->p >= h->end || !isdigit((unsigned char)*h->p))
            return hdr_fail(h, "shape entries must be non-negative integers");
        int64_t v = 0;
        while (h->p < h->end && isdigit((unsigned char)*h->p)) {
            int d = *h->p++ - '0';          /* exact: every int64 entry is read (a .pb's */
            if (v > (INT64_MAX - d) / 10)   /* dims go up to INT64_MAX, fe_check_dims) */
                return hdr_fail(h, "shape entry too large");
            v = v * 10 + d;
        }
        if (h->p < h->end && *h->p == 'L')
            h->p++;
        if (*rank >= IR_MAX_RANK)
            return hdr_fail(h, "rank exceeds the supported maximum of 8");
        dims[(*rank)++] = v;
        if (!eat(h, ',')) {
            if (eat(h, ')'))
                return true;
            return hdr_fail(h, "expected ',' or ')' in shape");
        }
    }
}

/* A Python bool literal. */
static bool hdr_bool(Hdr *h, bool *v)
{
    skip_ws(h);
    size_t left = (size_t)(h->end - h->p);
    if (left >= 4 && !memcmp(h->p, "True", 4)) {
        h->p += 4;
        *v = true;
        return true;
    }
    if (left >= 5 && !memcmp(h->p, "False", 5)) {
        h->p += 5;
        *v = false;
        return true;
    }
    return hdr_fail(h, "expected True or False");
}

/* Parse the header dict into descr, fortran flag and shape. */
static bool hdr_parse(Hdr *h, char *descr, size_t dlen, bool *fortran, int64_t *dims,
                      size_t *rank)
{
    bool got_d = false, got_f = false, got_s = false;
    if (!eat(h, '{'))
        return hdr_fail(h, "expected '{'");
    for (;;) {
        if (eat(h, '}'))
            break;
        char key[32];
        if (!hdr_str(h, key, sizeof key) || !eat(h, ':'))
            return h->p < h->end ? hdr_fail(h, "expected ':' after a key") : false;
        skip_ws(h);
        if (!strcmp(key, "descr")) {
            if (h->p < h->end && *h->p == '[')
                return hdr_fail(h, "structured dtypes are not supported");
            got_d = hdr_str(h, descr, dlen);
            if (!got_d)
                return false;
        } else if (!strcmp(key, "fortran_order")) {
            if (!(got_f = hdr_bool(h, fortran)))
                return false;
        } else if (!strcmp(key, "shape")) {
            if (!(got_s = hdr_shape(h, dims, rank)))
                return false;
        } else {
            return hdr_fail(h, "unknown key");
        }
        if (!eat(h, ',')) {
            if (eat(h, '}'))
                break;
            return hdr_fail(h, "expected ',' or '}'");
        }
    }
    if (!got_d || !got_f || !got_s)
        return hdr_fail(h, "needs the keys 'descr', 'fortran_order' and 'shape'");
    return true;
}

/* dtype and byte order of a descr string; false if unsupported. */
static bool descr_dtype(const char *d, IrDType *dt, bool *swap)
{
    if (!d[0] || !strchr("<>|=", d[0]))
        return false;
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++) {
        if (!strcmp(d + 1, npy_types[i].code)) {
            *dt = npy_types[i].dt;
            *swap = d[0] == '>' && ir_dtype_size(*dt) > 1;
            return true;
        }
    }
    return false;
}

/* Reverse the bytes of every es-byte element of buf. */
static void byteswap(uint8_t *buf, size_t nbytes, size_t es)
{
    for (size_t i = 0; i + es <= nbytes; i += es)
        for (size_t a = 0, b = es - 1; a < b; a++, b--) {
            uint8_t t = buf[i + a];
            buf[i + a] = buf[i + b];
            buf[i + b] = t;
        }
}

/* Read the preamble: header text [*hs, *hs + *hl). */
static bool npy_preamble(const char *label, const uint8_t *buf, size_t len, size_t *hs,
                         size_t *hl, char *err, size_t errlen)
{
    if (len < 10) {
        fe_fmt(err, errlen, "%s: offset %zu: truncated .npy preamble", label, len);
        return false;
    }
    int major = buf[6];
    if (major < 1 || major > 3) {
        fe_fmt(err, errlen, "%s: offset 6: unsupported .npy format version %d", label, major);
        return false;
    }
    if (major == 1) {
        *hs = 10;
        *hl = (size_t)buf[8] | (size_t)buf[9] << 8;
    } else {
        if (len < 12) {
            fe_fmt(err, errlen, "%s: offset %zu: truncated .npy preamble", label, len);
            return false;
        }
        *hs = 12;
        *hl = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
              (size_t)buf[11] << 24;
    }
    if (*hl > len - *hs) {
        fe_fmt(err, errlen, "%s: offset 8: .npy header length %zu runs past the end of the "
               "file", label, *hl);
        return false;
    }
    return true;
}

/* Parse a whole .npy image into t (data copied, byte-swapped if big-endian). */
bool fe_npy_read(const char *label, const uint8_t *buf, size_t len, FeTensor *t, char *err,
                 size_t errlen)
{
    size_t hs, hl, rank = 0, nbytes;
    memset(t, 0, sizeof *t);
    if (!fe_npy_is(buf, len)) {
        fe_fmt(err, errlen, "%s: offset 0: not a .npy file (bad magic)", label);
        return false;
    }
    if (!npy_preamble(label, buf, len, &hs, &hl, err, errlen))
        return false;
    const char *text = (const char *)buf + hs;
    Hdr h = {text, text, text + hl, err, errlen, label, hs};
    char descr[32], msg[256];
    bool fortran = false, swap = false;
    int64_t dims[IR_MAX_RANK];
    IrDType dt;
    if (!hdr_parse(&h, descr, sizeof descr, &fortran, dims, &rank))
        return false;
    if (!descr_dtype(descr, &dt, &swap)) {
        fe_fmt(err, errlen, "%s: .npy dtype '%s' is not supported", label, descr);
        return false;
    }
    if (fortran) {
        fe_fmt(err, errlen, "%s: Fortran-order .npy arrays are not supported (save a "
               "C-contiguous array)", label);
        return false;
    }
    if (!fe_check_dims(dims, rank, dt, t->dims, &t->rank, &nbytes, msg, sizeof msg)) {
        fe_fmt(err, errlen, "%s: %s", label, msg);
        return false;
    }
    size_t off = hs + hl;
    if (len - off != nbytes) {
        fe_fmt(err, errlen, "%s: offset %zu: .npy data has %zu bytes, expected %zu from "
               "shape and dtype", label, off, len - off, nbytes);
        return false;
    }
    t->name = strdup("");
    t->data = malloc(nbytes ? nbytes : 1);
    if (!t->name || !t->data) {
        fe_tensor_free(t);
        fe_fmt(err, errlen, "%s: out of memory", label);
        return false;
    }
    memcpy(t->data, buf + off, nbytes);
    if (swap)
        byteswap(t->data, nbytes, ir_dtype_size(dt));
    if (dt == IR_DT_BOOL)
        for (size_t i = 0; i < nbytes; i++)
            ((uint8_t *)t->data)[i] = ((uint8_t *)t->data)[i] != 0;
    t->dtype = dt;
    t->nbytes = nbytes;
    return true;
}

/* NumPy descr of a dtype, or NULL when NumPy has none (bf16). */
static const char *dtype_descr(IrDType dt)
{
    switch (dt) {
    case IR_DT_F32: return "<f4";
    case IR_DT_F64: return "<f8";
    case IR_DT_F16: return "<f2";
    case IR_DT_I8: return "|i1";
    case IR_DT_U8: return "|u1";
    case IR_DT_I16: return "<i2";
    case IR_DT_U16: return "<u2";
    case IR_DT_I32: return "<i4";
    case IR_DT_U32: return "<u4";
    case IR_DT_I64: return "<i8";
    case IR_DT_U64: return "<u8";
    case IR_DT_BOOL: return "|b1";
    default: return NULL;
    }
}

/* Encode t as .npy bytes (malloc'd). The header of at most 8 dims always fits v1. */
bool fe_npy_encode(const FeTensor *t, uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
    const char *d = dtype_descr(t->dtype);
    if (!d) {
        fe_fmt(err, errlen, "dtype %s has no NumPy equivalent (write a .pb instead)",
               ir_dtype_name(t->dtype));
        return false;
    }
    int64_t dims[IR_MAX_RANK];
    int rank;
    size_t nbytes;
    char msg[256];
    if (t->rank < 0 || !fe_check_dims(t->dims, (size_t)t->rank, t->dtype, dims, &rank, &nbytes,
                                      msg, sizeof msg) || nbytes != t->nbytes) {
        fe_fmt(err, errlen, "tensor shape and byte size disagree");
        return false;
    }
    char hdr[512];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", d);
    for (int i = 0; i < rank; i++)
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%lld%s", (long long)dims[i],
                      rank == 1 ? "," : i + 1 < rank ? ", " : "");
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "), }");
    size_t total = ((10 + (size_t)n + 1 + 63) / 64) * 64; /* preamble + header + '\n' */
    size_t hl = total - 10;
    *out = malloc(total + nbytes);
    if (!*out) {
        fe_fmt(err, errlen, "out of memory");
        return false;
    }
    uint8_t *p = *out;
    memcpy(p, npy_magic, 6);
    p[6] = 1;
    p[7] = 0;
    p[8] = (uint8_t)(hl & 0xff);
    p[9] = (uint8_t)(hl >> 8);
    memset(p + 10, ' ', hl);
    memcpy(p + 10, hdr, (size_t)n);
    p[total - 1] = '\n';
    if (nbytes)
        memcpy(p + total, t->data, nbytes);
    *outlen = total + nbytes;
    return true;
}
