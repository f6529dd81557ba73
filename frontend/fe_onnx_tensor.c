/* fe_onnx_tensor.c: ONNX TensorProto <-> host tensors (row-major, little-endian).
 *
 * A TensorProto holds its elements in exactly one of: raw_data (little-endian bytes),
 * a typed repeated field (float_data, int32_data - also used for 8/16-bit ints,
 * bool, f16 and bf16 bit patterns -, int64_data, double_data, uint64_data) or an
 * external file named by external_data{location, offset, length} relative to the
 * model's folder. Every size is checked before anything is allocated, so the memory
 * used is bounded by the bytes actually present.
 *
 * The 4- and 2-bit types (int4, uint4, float4e2m1, int2, uint2) are packed in ONNX
 * (raw_data and external data: two / four elements per byte, the first in the low
 * bits; int32_data: one packed byte per entry); host tensors hold one element per
 * byte (integers sign- or zero-extended), so they are unpacked on reading and packed
 * on writing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtconv.h"
#include "fe_internal.h"

/* The IR dtype for an ONNX data type code, UNDEF when the IR has none. */
IrDType fe_onnx_dtype(int64_t code)
{
    switch (code) {
    case IR_DT_F32: case IR_DT_U8: case IR_DT_I8: case IR_DT_U16: case IR_DT_I16:
    case IR_DT_I32: case IR_DT_I64: case IR_DT_STRING: case IR_DT_BOOL: case IR_DT_F16:
    case IR_DT_F64: case IR_DT_U32: case IR_DT_U64: case IR_DT_BF16:
    case IR_DT_F8E4M3FN: case IR_DT_F8E4M3FNUZ: case IR_DT_F8E5M2: case IR_DT_F8E5M2FNUZ:
    case IR_DT_U4: case IR_DT_I4: case IR_DT_F4E2M1: case IR_DT_U2: case IR_DT_I2:
    case IR_DT_F8E8M0:
        return (IrDType)code;
    default:
        return IR_DT_UNDEF;
    }
}

/* ONNX's own name of a data type code, for messages. */
const char *fe_onnx_dtype_name(int64_t code, char *buf, size_t len)
{
    static const char *const names[] = {
        "undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64",
        "string", "bool", "float16", "double", "uint32", "uint64", "complex64",
        "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
        "float8e5m2fnuz", "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2"};
    if (code >= 0 && code < (int64_t)(sizeof names / sizeof names[0]))
        return names[code];
    fe_fmt(buf, len, "code %lld", (long long)code);
    return buf;
}

/* Validate a dims list for dtype dt: rank, signs, overflow of numel and bytes. */
bool fe_check_dims(const int64_t *dims, size_t ndims, IrDType dt, int64_t *out_dims,
                   int *rank, size_t *nbytes, char *err, size_t errlen)
{
    if (ndims > IR_MAX_RANK) {
        fe_fmt(err, errlen, "rank %zu exceeds the supported maximum of %d", ndims,
               IR_MAX_RANK);
        return false;
    }
    bool zero = false;
    for (size_t i = 0; i < ndims; i++) {
        if (dims[i] < 0) {
            fe_fmt(err, errlen, "negative dimension %lld at axis %zu", (long long)dims[i], i);
            return false;
        }
        zero |= dims[i] == 0;
        out_dims[i] = dims[i];
    }
    /* the product of the non-zero dims must fit even when a dim is 0, so that every
     * sub-product of the shape does (ir_type_numel) */
    uint64_t numel = 1;
    for (size_t i = 0; i < ndims; i++) {
        if (dims[i] == 0)
            continue;
        if (numel > (uint64_t)INT64_MAX / (uint64_t)dims[i]) {
            fe_fmt(err, errlen, "dimensions overflow: their product passes 2^63 at axis %zu",
                   i);
            return false;
        }
        numel *= (uint64_t)dims[i];
    }
    if (zero)
        numel = 0;
    size_t es = ir_dtype_size(dt);
    if (es && numel > (uint64_t)SIZE_MAX / es) {
        fe_fmt(err, errlen, "tensor of %llu elements overflows the address space",
               (unsigned long long)numel);
        return false;
    }
    *rank = (int)ndims;
    *nbytes = (size_t)numel * es;
    return true;
}

/* Bits per element of a packed dtype in ONNX files; 0 for the others. */
static int packed_bits(IrDType dt)
{
    return spy_dt_subbyte_int(dt) || dt == IR_DT_F4E2M1 ? spy_dt_bits(dt) : 0;
}

/* Bytes numel elements of dt take in an ONNX file (packed types rounded up). */
static size_t stored_bytes(IrDType dt, size_t numel)
{
    int b = packed_bits(dt);
    return b ? (numel / 8 * (size_t)b) + ((numel % 8) * (size_t)b + 7) / 8
             : numel * ir_dtype_size(dt);
}

/* Unpack numel packed elements of dt from src into one byte each at dst. */
static void unpack_elems(IrDType dt, const uint8_t *src, uint8_t *dst, size_t numel)
{
    unsigned b = (unsigned)packed_bits(dt), mask = (1u << b) - 1;
    for (size_t i = 0; i < numel; i++) {
        size_t bit = i * b;
        int32_t v = (int32_t)((src[bit / 8] >> (bit % 8)) & mask);
        dst[i] = (uint8_t)(dt == IR_DT_F4E2M1 ? v : spy_wrap_subbyte(v, dt));
    }
}

/* Pack numel one-byte elements of dt from src into dst (stored_bytes bytes). */
static void pack_elems(IrDType dt, const uint8_t *src, uint8_t *dst, size_t numel)
{
    unsigned b = (unsigned)packed_bits(dt), mask = (1u << b) - 1;
    memset(dst, 0, stored_bytes(dt, numel));
    for (size_t i = 0; i < numel; i++) {
        size_t bit = i * b;
        dst[bit / 8] |= (uint8_t)((src[i] & mask) << (bit % 8));
    }
}

/* Bool bytes other than 0 and 1 (in raw or external data) become 1, as the .npy
 * reader does, so that every consumer of a bool tensor sees only 0 and 1. */
static void normalise_bool(FeTensor *t)
{
    if (t->dtype == IR_DT_BOOL)
        for (size_t i = 0; i < t->nbytes; i++)
            ((uint8_t *)t->data)[i] = ((uint8_t *)t->data)[i] != 0;
}

/* Store value v (from a typed field) as element i of a dt tensor. */
static void put_elem(void *buf, IrDType dt, size_t i, int64_t v)
{
    switch (dt) {
    case IR_DT_I8: case IR_DT_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case IR_DT_F8E4M3FN: case IR_DT_F8E4M3FNUZ: case IR_DT_F8E5M2: case IR_DT_F8E5M2FNUZ:
    case IR_DT_U4: case IR_DT_I4: case IR_DT_F4E2M1: case IR_DT_U2: case IR_DT_I2:
    case IR_DT_F8E8M0:
        ((uint8_t *)buf)[i] = (uint8_t)v;  /* one element or one packed byte */
        break;
    case IR_DT_BOOL: ((uint8_t *)buf)[i] = v != 0; break;
    case IR_DT_I16: case IR_DT_U16: case IR_DT_F16: case IR_DT_BF16:
        ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case IR_DT_I32: case IR_DT_U32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    default: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    }
}

/* Parse a non-negative decimal integer that must use the whole string. */
static bool parse_u64(const char *s, uint64_t *v)
{
    if (!s || !*s || *s < '0' || *s > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long r = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *v = r;
    return true;
}

/* Lexical check: location is relative and its ".." never climb above the folder. */
static bool location_stays_inside(const char *loc)
{
    if (loc[0] == '/')
        return false;
    int depth = 0;
    for (const char *p = loc; *p;) {
        const char *q = strchr(p, '/');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (--depth < 0)
                return false;
        } else if (n > 0 && !(n == 1 && p[0] == '.')) {
            depth++;
        }
        p += n + (q != NULL);
    }
    return true;
}

/* Resolve location against base_dir; the real path (symlinks followed) must lie
 * inside the real base folder. Returns a malloc'd path or NULL with err set. */
static char *resolve_location(const char *base_dir, const char *loc, char *err, size_t errlen)
{
    if (!location_stays_inside(loc)) {
        fe_fmt(err, errlen, "external data location '%s' escapes the model's folder "
               "(absolute paths and '..' above it are refused)", loc);
        return NULL;
    }
    size_t n = strlen(base_dir) + strlen(loc) + 2;
    char *joined = malloc(n);
    char *rbase = realpath(base_dir, NULL);
    char *rfile = NULL;
    if (joined && rbase) {
        snprintf(joined, n, "%s/%s", base_dir, loc);
        rfile = realpath(joined, NULL);
        if (!rfile)
            fe_fmt(err, errlen, "external data file '%s': %s", loc, strerror(errno));
    } else {
        fe_fmt(err, errlen, "cannot resolve the model folder '%s'", base_dir);
    }
    if (rfile) {
        size_t bl = strlen(rbase);
        bool inside = strncmp(rfile, rbase, bl) == 0 &&
                      (rfile[bl] == '/' || (bl == 1 && rbase[0] == '/'));
        if (!inside) {
            fe_fmt(err, errlen, "external data location '%s' resolves outside the model's "
                   "folder (symbolic link?)", loc);
            free(rfile);
            rfile = NULL;
        }
    }
    free(joined);
    free(rbase);
    return rfile;
}

/* The location, offset and length entries of tp's external_data. */
static bool external_keys(const Onnx__TensorProto *tp, const char **loc, uint64_t *off,
                          uint64_t *len, bool *has_len, char *err, size_t errlen)
{
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        const char *k = e->key ? e->key : "";
        bool ok = true;
        if (!strcmp(k, "location"))
            *loc = e->value;
        else if (!strcmp(k, "offset"))
            ok = parse_u64(e->value, off);
        else if (!strcmp(k, "length"))
            ok = *has_len = parse_u64(e->value, len);
        if (!ok) {
            fe_fmt(err, errlen, "external data %s '%s' is not a non-negative integer", k,
                   e->value ? e->value : "");
            return false;
        }
    }
    if (!*loc || !**loc) {
        fe_fmt(err, errlen, "external data without a 'location'");
        return false;
    }
    return true;
}

/* The mapping in d of the external data file path (a real path, taken over), mapped
 * at its first use; NULL with err set. */
static FeMapped *map_external(FeData *d, char *path, const char *loc, char *err,
                              size_t errlen)
{
    for (uint32_t i = 0; i < d->nmaps; i++)
        if (!strcmp(d->maps[i].path, path)) {
            free(path);
            return &d->maps[i];
        }
    if (d->nmaps == d->capmaps) {
        uint32_t cap = d->capmaps ? 2 * d->capmaps : 4;
        FeMapped *m = realloc(d->maps, cap * sizeof *m);
        if (!m) {
            free(path);
            fe_fmt(err, errlen, "out of memory");
            return NULL;
        }
        d->maps = m;
        d->capmaps = cap;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fe_fmt(err, errlen, "external data file '%s' is not a readable regular file", loc);
        if (fd >= 0)
            close(fd);
        free(path);
        return NULL;
    }
    FeMapped m = {path, NULL, (size_t)st.st_size, 0};
    void *p = m.len ? mmap(NULL, m.len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (p == MAP_FAILED) {
        fe_fmt(err, errlen, "read error in external data file '%s'", loc);
        free(path);
        return NULL;
    }
    m.base = p;
    d->maps[d->nmaps] = m;
    return &d->maps[d->nmaps++];
}

/* Point t at bytes p (n of them) of a mapping when d allows borrowing and they are
 * 16-aligned; returns whether it did. */
static bool borrow_bytes(const FeData *d, const uint8_t *p, size_t n, FeTensor *t)
{
    if (!d->borrow || n == 0 || ((uintptr_t)p & 15) != 0)
        return false;
    t->data = (void *)p;
    t->borrowed = true;
    return true;
}

/* Copies of at least this many bytes (a huge page) go into ir_huge_alloc buffers. */
#define FE_HUGE_MIN ((size_t)2 << 20)

/* t->data: a copy of the n bytes at p, in a huge-page buffer when may_huge, n >=
 * FE_HUGE_MIN and one is to be had, else malloc'd; false when out of memory. may_huge
 * only for bytes used as they are (a tensor to be unpacked replaces its data with
 * free). */
static bool copy_bytes(FeTensor *t, const void *p, size_t n, bool may_huge)
{
    if (may_huge && n >= FE_HUGE_MIN && (t->data = ir_huge_alloc(n)) != NULL)
        t->huge = true;
    else if (!(t->data = malloc(n ? n : 1)))
        return false;
    if (n)
        memcpy(t->data, p, n);
    return true;
}

/* The external bytes of tp (nbytes expected) into t->data: borrowed from the file's
 * mapping when may_borrow and d allow it, else a malloc'd copy made once the file is
 * known to hold them. */
static bool read_external(const Onnx__TensorProto *tp, FeData *d, size_t nbytes,
                          bool may_borrow, FeTensor *t, char *err, size_t errlen)
{
    const char *loc = NULL;
    uint64_t off = 0, len = 0;
    bool has_len = false;
    if (!external_keys(tp, &loc, &off, &len, &has_len, err, errlen))
        return false;
    if (!d->dir) {
        fe_fmt(err, errlen, "external data is not allowed here (no model folder)");
        return false;
    }
    char *path = resolve_location(d->dir, loc, err, errlen);
    FeMapped *m = path ? map_external(d, path, loc, err, errlen) : NULL;
    if (!m)
        return false;
    uint64_t fsize = (uint64_t)m->len;
    if (!has_len)
        len = off <= fsize ? fsize - off : 0;
    if (off > UINT64_MAX - len) {
        fe_fmt(err, errlen, "external data offset %llu + length %llu overflows",
               (unsigned long long)off, (unsigned long long)len);
        return false;
    }
    if (off + len > fsize) {
        fe_fmt(err, errlen, "external data [%llu, +%llu) runs past the end of '%s' (%llu "
               "bytes)", (unsigned long long)off, (unsigned long long)len, loc,
               (unsigned long long)fsize);
        return false;
    }
    if (len != nbytes) {
        fe_fmt(err, errlen, "external data has %llu bytes, expected %zu from shape and dtype",
               (unsigned long long)len, nbytes);
        return false;
    }
    const uint8_t *p = m->base ? m->base + off : NULL;
    if (may_borrow && borrow_bytes(d, p, nbytes, t)) {
        m->refs++;
        return true;
    }
    if (!copy_bytes(t, p, nbytes, may_borrow)) {
        fe_fmt(err, errlen, "out of memory");
        return false;
    }
    return true;
}

/* Release of a malloc'd constant handed to the graph (fe_tensor_const). */
static void free_kept(void *p, size_t n)
{
    (void)n;
    free(p);
}

/* Decoded tensors of at least this many bytes are handed to the graph as they are
 * (malloc'd), not copied into its arena: one copy of the bytes fewer. */
#define FE_KEEP_MIN ((size_t)16 << 10)

ValId fe_tensor_const(IrGraph *g, const char *name, FeTensor *t)
{
    IrType ty = {.dtype = t->dtype, .rank = t->rank};
    memcpy(ty.dims, t->dims, sizeof ty.dims);
    ValId v;
    size_t n = ir_type_bytes(&ty);
    if (t->borrowed) {
        v = ir_add_const_ref(g, name, &ty, t->data);
    } else if (t->huge) {
        void *p = t->data;
        t->data = NULL;                    /* the graph owns it now (even on OOM) */
        t->huge = false;
        ir_graph_keep(g, p, t->nbytes, ir_huge_free);
        v = ir_add_const_ref(g, name, &ty, p);
    } else if (n >= FE_KEEP_MIN && ((uintptr_t)t->data & 15) == 0) {
        void *p = t->data;
        t->data = NULL;                    /* the graph owns it now (even on OOM) */
        ir_graph_keep(g, p, n, free_kept);
        v = ir_add_const_ref(g, name, &ty, p);
    } else {
        v = ir_add_const(g, name, &ty, t->data);
    }
    fe_tensor_free(t);
    return v;
}

void fe_data_finish(FeData *d, IrGraph *g)
{
    while (d->nmaps > 0) {                 /* one by one: ir_graph_keep may longjmp */
        FeMapped m = d->maps[--d->nmaps];
        free(m.path);
        if (m.base && g && m.refs)
            ir_graph_keep_file(g, m.base, m.len, fe_unmap);
        else if (m.base)
            fe_unmap(m.base, m.len);
    }
    free(d->maps);
    d->maps = NULL;
    d->capmaps = 0;
    FeBytes f = d->file;
    memset(&d->file, 0, sizeof d->file);
    if (f.mapped && g && d->file_refs)
        ir_graph_keep_file(g, f.p, f.len, fe_unmap);
    else if (f.p)
        fe_bytes_free(&f);
    d->file_refs = 0;
}

/* Which data field a tensor uses; names for messages. */
enum { F_RAW, F_FLOAT, F_INT32, F_STRING, F_INT64, F_DOUBLE, F_UINT64, F_EXT, F_COUNT };
static const char *const field_names[F_COUNT] = {
    "raw_data", "float_data", "int32_data", "string_data", "int64_data", "double_data",
    "uint64_data", "external data"};

/* Element count of each data field of tp (raw/external count as 1 when present). */
static void field_counts(const Onnx__TensorProto *tp, size_t n[F_COUNT])
{
    n[F_RAW] = tp->has_raw_data;
    n[F_FLOAT] = tp->n_float_data;
    n[F_INT32] = tp->n_int32_data;
    n[F_STRING] = tp->n_string_data;
    n[F_INT64] = tp->n_int64_data;
    n[F_DOUBLE] = tp->n_double_data;
    n[F_UINT64] = tp->n_uint64_data;
    n[F_EXT] = tp->has_data_location &&
               tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

/* Whether typed field f may carry elements of dtype dt. */
static bool field_fits(int f, IrDType dt)
{
    switch (f) {
    case F_FLOAT: return dt == IR_DT_F32;
    case F_INT32:
        return dt == IR_DT_I32 || dt == IR_DT_I16 || dt == IR_DT_I8 || dt == IR_DT_U16 ||
               dt == IR_DT_U8 || dt == IR_DT_BOOL || dt == IR_DT_F16 || dt == IR_DT_BF16 ||
               spy_dt_narrow_float(dt) || spy_dt_subbyte_int(dt);
    case F_INT64: return dt == IR_DT_I64;
    case F_DOUBLE: return dt == IR_DT_F64;
    case F_UINT64: return dt == IR_DT_U32 || dt == IR_DT_U64;
    default: return false;
    }
}

/* Copy a typed field's n elements into buf as dtype dt. */
static void copy_typed(const Onnx__TensorProto *tp, int f, IrDType dt, uint8_t *buf, size_t n)
{
    switch (f) {
    case F_FLOAT: memcpy(buf, tp->float_data, n * 4); break;
    case F_DOUBLE: memcpy(buf, tp->double_data, n * 8); break;
    case F_INT64: memcpy(buf, tp->int64_data, n * 8); break;
    case F_INT32:
        for (size_t i = 0; i < n; i++)
            put_elem(buf, dt, i, tp->int32_data[i]);
        break;
    case F_UINT64:
        for (size_t i = 0; i < n; i++)
            put_elem(buf, dt, i, (int64_t)tp->uint64_data[i]);
        break;
    }
}

/* Check the data fields of tp against its dtype/size (nbytes: raw bytes expected,
 * count: entries a typed field must have); returns the field used (or -1 for an empty
 * tensor with no field) and -2 on error. */
static int pick_field(const Onnx__TensorProto *tp, IrDType dt, size_t numel, size_t nbytes,
                      size_t count, char *err, size_t errlen)
{
    size_t n[F_COUNT];
    field_counts(tp, n);
    int used = -1;
    for (int f = 0; f < F_COUNT; f++) {
        if (!n[f])
            continue;
        if (used >= 0) {
            fe_fmt(err, errlen, "has two data fields at once (%s and %s)", field_names[used],
                   field_names[f]);
            return -2;
        }
        used = f;
    }
    if (tp->n_external_data && used != F_EXT) {
        fe_fmt(err, errlen, "has external_data entries but data_location is not EXTERNAL");
        return -2;
    }
    if (used < 0 && numel > 0) {
        fe_fmt(err, errlen, "has no data for its %zu elements", numel);
        return -2;
    }
    if (used == F_RAW && tp->raw_data.len != nbytes) {
        fe_fmt(err, errlen, "raw_data has %zu bytes, expected %zu from shape and dtype",
               tp->raw_data.len, nbytes);
        return -2;
    }
    if (used >= 0 && used != F_RAW && used != F_EXT) {
        if (!field_fits(used, dt)) {
            fe_fmt(err, errlen, "%s cannot hold %s elements", field_names[used],
                   ir_dtype_name(dt));
            return -2;
        }
        if (n[used] != count) {
            fe_fmt(err, errlen, "%s has %zu elements, expected %zu from the shape",
                   field_names[used], n[used], count);
            return -2;
        }
    }
    return used;
}

/* Replace t->data (numel packed elements) by its unpacked form; false on OOM. */
static bool unpack_tensor(FeTensor *t, size_t numel)
{
    uint8_t *u = malloc(numel ? numel : 1);
    if (!u)
        return false;
    unpack_elems(t->dtype, t->data, u, numel);
    free(t->data);
    t->data = u;
    return true;
}

/* Decode tp into t; errors as "tensor 'name': message". */
bool fe_tensor_from_proto(const Onnx__TensorProto *tp, FeData *src, FeTensor *t, char *err,
                          size_t errlen)
{
    memset(t, 0, sizeof *t);
    const char *name = tp->name ? tp->name : "";
    char msg[512], dn[32];
    t->name = strdup(name);
    if (!t->name)
        goto oom;
    int64_t code = tp->has_data_type ? tp->data_type : 0;
    IrDType dt = fe_onnx_dtype(code);
    if (code == 0) {
        fe_fmt(msg, sizeof msg, "data type is missing (UNDEFINED)");
        goto fail;
    }
    if (dt == IR_DT_UNDEF || dt == IR_DT_STRING) {
        fe_fmt(msg, sizeof msg, "%s tensors are not supported",
               fe_onnx_dtype_name(code, dn, sizeof dn));
        goto fail;
    }
    if (tp->segment) {
        fe_fmt(msg, sizeof msg, "segmented tensors are not supported");
        goto fail;
    }
    t->dtype = dt;
    if (!fe_check_dims(tp->dims, tp->n_dims, dt, t->dims, &t->rank, &t->nbytes, msg,
                       sizeof msg))
        goto fail;
    size_t numel = t->nbytes / ir_dtype_size(dt), stored = stored_bytes(dt, numel);
    bool packed = packed_bits(dt) != 0;
    int f = pick_field(tp, dt, numel, stored, packed ? stored : numel, msg, sizeof msg);
    if (f == -2)
        goto fail;
    bool same = !packed && dt != IR_DT_BOOL;   /* bytes used as they are */
    if (f == F_EXT) {                      /* sizes are checked before allocating */
        if (!read_external(tp, src, stored, same, t, msg, sizeof msg))
            goto fail;
        normalise_bool(t);
        return !packed || unpack_tensor(t, numel);
    }
    const FeBytes *file = &src->file;
    const uint8_t *raw = tp->raw_data.data;
    uintptr_t r = (uintptr_t)raw, base = (uintptr_t)file->p;
    /* raw_data inside the mapped model ([base, base + len]): borrowed, not copied */
    if (f == F_RAW && same && file->mapped && r >= base && r - base <= file->len &&
        t->nbytes <= file->len - (r - base) &&
        borrow_bytes(src, raw, t->nbytes, t)) {
        src->file_refs++;                  /* raw_data in the mapped model (fe_onnx_strip) */
        return true;
    }
    if (f == F_RAW && same) {              /* an unaligned weight: one copy */
        if (!copy_bytes(t, raw, t->nbytes, true))
            goto oom;
        fe_bytes_release(file, raw, t->nbytes);
        return true;
    }
    t->data = malloc(t->nbytes ? t->nbytes : 1);
    if (!t->data)
        goto oom;
    if (f == F_RAW && t->nbytes && packed)
        unpack_elems(dt, tp->raw_data.data, t->data, numel);
    else if (f == F_RAW && t->nbytes) {    /* bool */
        memcpy(t->data, tp->raw_data.data, t->nbytes);
        normalise_bool(t);
        fe_bytes_release(file, raw, t->nbytes);
    }
    else if (f >= 0 && numel) {
        copy_typed(tp, f, dt, t->data, packed ? stored : numel);
        if (packed && !unpack_tensor(t, numel))
            goto oom;
    }
    return true;
oom:
    fe_fmt(msg, sizeof msg, "out of memory");
fail:
    fe_fmt(err, errlen, "tensor '%s': %s", name, msg);
    fe_tensor_free(t);
    return false;
}

/* Pack t as a TensorProto with raw_data; *out is malloc'd. */
bool fe_tensor_to_proto(const FeTensor *t, uint8_t **out, size_t *outlen, char *err,
                        size_t errlen)
{
    Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
    int64_t dims[IR_MAX_RANK];
    int rank;
    size_t nbytes;
    char msg[256];
    if (t->rank < 0 || t->dtype == IR_DT_UNDEF || t->dtype == IR_DT_STRING ||
        ir_dtype_size(t->dtype) == 0) {
        fe_fmt(err, errlen, "cannot write a tensor of dtype %s", ir_dtype_name(t->dtype));
        return false;
    }
    if (!fe_check_dims(t->dims, (size_t)t->rank, t->dtype, dims, &rank, &nbytes, msg,
                       sizeof msg)) {
        fe_fmt(err, errlen, "tensor '%s': %s", t->name ? t->name : "", msg);
        return false;
    }
    if (nbytes != t->nbytes) {
        fe_fmt(err, errlen, "tensor '%s': %zu data bytes, but shape x dtype needs %zu",
               t->name ? t->name : "", t->nbytes, nbytes);
        return false;
    }
    tp.n_dims = (size_t)rank;
    tp.dims = dims;
    tp.has_data_type = 1;
    tp.data_type = (int32_t)t->dtype;
    tp.name = (char *)(t->name && *t->name ? t->name : NULL);
    tp.has_raw_data = 1;
    tp.raw_data.len = t->nbytes;
    tp.raw_data.data = t->data;
    uint8_t *packed = NULL;
    if (packed_bits(t->dtype)) {
        size_t numel = t->nbytes / ir_dtype_size(t->dtype);
        tp.raw_data.len = stored_bytes(t->dtype, numel);
        packed = malloc(tp.raw_data.len ? tp.raw_data.len : 1);
        if (packed)
            pack_elems(t->dtype, t->data, packed, numel);
        tp.raw_data.data = packed;
    }
    size_t n = onnx__tensor_proto__get_packed_size(&tp);
    *out = (packed || !packed_bits(t->dtype)) ? malloc(n ? n : 1) : NULL;
    if (!*out) {
        free(packed);
        fe_fmt(err, errlen, "out of memory");
        return false;
    }
    *outlen = onnx__tensor_proto__pack(&tp, *out);
    free(packed);
    return true;
}
