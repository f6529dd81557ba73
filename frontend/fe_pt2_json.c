/* fe_pt2_json.c: JSON parsing with limits, and the tagged values of the torch.export
 * serialization schema (SymInt, floats written as strings, ScalarType, TensorMeta).
 *
 * jansson has no caller-set nesting limit, so the text is scanned once first and a
 * document nested deeper than the limit is refused before jansson sees it.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "frontend/fe_pt2_priv.h"

/* Find the first place where brackets nest deeper than max_depth; returns its byte
 * offset or -1. Strings (with escapes) are skipped. */
static long too_deep_at(const uint8_t *buf, size_t len, int max_depth)
{
    int depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = buf[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"')
            in_str = true;
        else if (c == '[' || c == '{') {
            if (++depth > max_depth)
                return (long)i;
        } else if ((c == ']' || c == '}') && depth > 0)
            depth--;
    }
    return -1;
}

/* Parse one JSON document (see the header). */
json_t *fe_pt2_json_parse(IrDiag *diag, const char *entry, const uint8_t *buf, size_t len,
                          int max_depth)
{
    if (len > FE_PT2_MAX_JSON_BYTES) {
        ir_diag_error(diag, "%s: JSON document of %zu bytes is larger than the limit of %u",
                      entry, len, FE_PT2_MAX_JSON_BYTES);
        return NULL;
    }
    long deep = too_deep_at(buf, len, max_depth);
    if (deep >= 0) {
        ir_diag_error(diag, "%s: byte offset %ld: JSON nested deeper than %d levels", entry,
                      deep, max_depth);
        return NULL;
    }
    json_error_t err;
    json_t *root = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        ir_diag_error(diag, "%s: line %d column %d (byte offset %d): invalid JSON: %s", entry,
                      err.line, err.column, err.position, err.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        ir_diag_error(diag, "%s: the top-level JSON value is not an object", entry);
        json_decref(root);
        return NULL;
    }
    return root;
}

/* Typed member accessors: NULL when absent or of another type. */
json_t *fe_pt2_obj(json_t *o, const char *key)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_object(v) ? v : NULL;
}

json_t *fe_pt2_arr(json_t *o, const char *key)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_array(v) ? v : NULL;
}

const char *fe_pt2_str(json_t *o, const char *key)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* A tagged union is an object with exactly one member; return its key. */
const char *fe_pt2_tag(json_t *u, json_t **val)
{
    if (!json_is_object(u) || json_object_size(u) != 1)
        return NULL;
    const char *key;
    json_t *v;
    json_object_foreach(u, key, v) {
        *val = v;
        return key;
    }
    return NULL;
}

/* Floats: JSON numbers, or the strings Python's serializer uses for non-finite values. */
bool fe_pt2_float(json_t *v, double *out)
{
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return true;
    }
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    if (!s)
        return false;
    if (strcmp(s, "Infinity") == 0 || strcmp(s, "inf") == 0)
        *out = INFINITY;
    else if (strcmp(s, "-Infinity") == 0 || strcmp(s, "-inf") == 0)
        *out = -INFINITY;
    else if (strcmp(s, "NaN") == 0 || strcmp(s, "nan") == 0)
        *out = NAN;
    else
        return false;
    return true;
}

/* A SymInt {"as_int": N}, or a symbolic one ({"as_expr": {"expr_str": E}}) at the
 * bounds of sy (none: refused). */
bool fe_pt2_symint(json_t *v, const FePt2Syms *sy, int64_t *out)
{
    json_t *x = NULL;
    const char *tag = fe_pt2_tag(v, &x);
    if (sy && tag && !strcmp(tag, "as_expr")) {
        const char *e = fe_pt2_str(x, "expr_str");
        return e && fe_pt2_sym_eval(sy, e, out, NULL, NULL);
    }
    if (!tag || strcmp(tag, "as_int") != 0 || !json_is_integer(x))
        return false;
    *out = (int64_t)json_integer_value(x);
    return true;
}

/* torch ScalarType codes (torch/_export/serde/schema.py) to IR dtypes. */
IrDType fe_pt2_dtype(int64_t code)
{
    switch (code) {
    case 1: return IR_DT_U8;
    case 2: return IR_DT_I8;
    case 3: return IR_DT_I16;
    case 4: return IR_DT_I32;
    case 5: return IR_DT_I64;
    case 6: return IR_DT_F16;
    case 7: return IR_DT_F32;
    case 8: return IR_DT_F64;
    case 12: return IR_DT_BOOL;
    case 13: return IR_DT_BF16;
    case 28: return IR_DT_U16;
    default: return IR_DT_UNDEF;
    }
}

/* Name of a ScalarType code, for messages about unsupported dtypes. */
const char *fe_pt2_dtype_name(int64_t code)
{
    switch (code) {
    case 0: return "unknown";
    case 9: return "complex32";
    case 10: return "complex64";
    case 11: return "complex128";
    case 29: return "float8_e4m3fn";
    case 30: return "float8_e5m2";
    case 31: return "float8_e4m3fnuz";
    case 32: return "float8_e5m2fnuz";
    default: {
        IrDType t = fe_pt2_dtype(code);
        return t == IR_DT_UNDEF ? "unrecognised" : ir_dtype_name(t);
    }
    }
}

/* Parse a list of SymInts (sizes or strides; symbolic ones at the bounds of sy) into v;
 * returns the count or -1. */
static int symint_list(json_t *a, const FePt2Syms *sy, int64_t *v, const char *what, char *err,
                       size_t errlen)
{
    if (!json_is_array(a)) {
        snprintf(err, errlen, "tensor metadata has no '%s' list", what);
        return -1;
    }
    size_t n = json_array_size(a);
    if (n > IR_MAX_RANK) {
        snprintf(err, errlen, "rank %zu is beyond the supported maximum %d", n, IR_MAX_RANK);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (!fe_pt2_symint(json_array_get(a, i), sy, &v[i])) {
            json_t *x = NULL;
            const char *tag = fe_pt2_tag(json_array_get(a, i), &x), *why = NULL;
            const char *e = tag && !strcmp(tag, "as_expr") ? fe_pt2_str(x, "expr_str") : NULL;
            int64_t dummy;
            if (e)
                fe_pt2_sym_eval(sy, e, &dummy, NULL, &why);
            snprintf(err, errlen, "%s[%zu] is %s%s", what, i, e ? "symbolic: " : "malformed",
                     e ? (why ? why : "unsupported") : "");
            if (e)
                snprintf(err + strlen(err), errlen - strlen(err), " (%.160s)", e);
            return -1;
        }
    return (int)n;
}

/* TensorMeta -> IrType (+ strides and storage offset). */
bool fe_pt2_tensor_meta(json_t *meta, const FePt2Syms *sy, IrType *t, int64_t *strides,
                        int64_t *offset, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    json_t *dt = json_is_object(meta) ? json_object_get(meta, "dtype") : NULL;
    if (!json_is_integer(dt)) {
        snprintf(err, errlen, "tensor metadata has no integer 'dtype'");
        return false;
    }
    int64_t code = (int64_t)json_integer_value(dt);
    t->dtype = fe_pt2_dtype(code);
    if (t->dtype == IR_DT_UNDEF) {
        snprintf(err, errlen, "unsupported dtype %s (code %lld)", fe_pt2_dtype_name(code),
                 (long long)code);
        return false;
    }
    json_t *layout = json_object_get(meta, "layout");
    if (layout && (!json_is_integer(layout) || json_integer_value(layout) != 7)) {
        snprintf(err, errlen, "only strided (dense) tensors are supported");
        return false;
    }
    int rank = symint_list(json_object_get(meta, "sizes"), sy, t->dims, "sizes", err, errlen);
    if (rank < 0)
        return false;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        if (t->dims[i] < 0) {
            snprintf(err, errlen, "negative size %lld in dimension %d",
                     (long long)t->dims[i], i);
            return false;
        }
    if (ir_type_numel(t) < 0 || ir_type_bytes(t) == SIZE_MAX) {
        snprintf(err, errlen, "the element count overflows");
        return false;
    }
    if (strides) {
        int64_t tmp[IR_MAX_RANK] = {0};
        int ns = symint_list(json_object_get(meta, "strides"), sy, tmp, "strides", err, errlen);
        if (ns < 0)
            return false;
        if (ns != rank) {
            snprintf(err, errlen, "%d strides for rank %d", ns, rank);
            return false;
        }
        memcpy(strides, tmp, sizeof tmp);
    }
    if (offset) {
        *offset = 0;
        json_t *so = json_object_get(meta, "storage_offset");
        if (so && (!fe_pt2_symint(so, sy, offset) || *offset < 0)) {
            snprintf(err, errlen, "storage_offset is symbolic, negative or malformed");
            return false;
        }
    }
    return true;
}
