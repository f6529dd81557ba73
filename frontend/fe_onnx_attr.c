/* fe_onnx_attr.c: ONNX AttributeProto -> IrAttr, ref_attr_name resolution inside
 * function bodies, and Constant nodes (which become constant values directly). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "fe_onnx.h"

typedef Onnx__AttributeProto Attr;

/* One bit per value field of an AttributeProto. */
enum {
    K_F = 1 << 0, K_I = 1 << 1, K_S = 1 << 2, K_T = 1 << 3, K_G = 1 << 4, K_FS = 1 << 5,
    K_IS = 1 << 6, K_SS = 1 << 7, K_TS = 1 << 8, K_GS = 1 << 9, K_SP = 1 << 10,
    K_SPS = 1 << 11, K_TP = 1 << 12, K_TPS = 1 << 13
};

/* AttributeProto type codes in bit order, and their names. */
static const int kind_codes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
static const unsigned kind_bits[] = {K_F, K_I, K_S, K_T, K_G, K_FS, K_IS, K_SS, K_TS, K_GS,
                                     K_SP, K_SPS, K_TP, K_TPS};
static const char *const kind_names[] = {
    "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS", "STRINGS", "TENSORS",
    "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
#define NKINDS (int)(sizeof kind_codes / sizeof kind_codes[0])

/* The value fields a carries. */
static unsigned fields_of(const Attr *a)
{
    return (a->has_f ? K_F : 0) | (a->has_i ? K_I : 0) | (a->has_s ? K_S : 0) |
           (a->t ? K_T : 0) | (a->g ? K_G : 0) | (a->n_floats ? K_FS : 0) |
           (a->n_ints ? K_IS : 0) | (a->n_strings ? K_SS : 0) | (a->n_tensors ? K_TS : 0) |
           (a->n_graphs ? K_GS : 0) | (a->sparse_tensor ? K_SP : 0) |
           (a->n_sparse_tensors ? K_SPS : 0) | (a->tp ? K_TP : 0) |
           (a->n_type_protos ? K_TPS : 0);
}

/* Index in kind_codes of an AttributeProto type code, or -1. */
static int kind_of_code(int code)
{
    for (int k = 0; k < NKINDS; k++)
        if (kind_codes[k] == code)
            return k;
    return -1;
}

/* Index in kind_bits of a single field bit, or -1. */
static int kind_of_bit(unsigned bit)
{
    for (int k = 0; k < NKINDS; k++)
        if (kind_bits[k] == bit)
            return k;
    return -1;
}

/* The checked kind of attribute a (declared type, or the one field it carries when
 * the type is missing); -1 with an error reported when wrong. */
static int attr_kind(FeScope *s, const char *name, const Attr *a, const IrOrigin *o)
{
    unsigned mask = fields_of(a);
    int code = a->has_type ? (int)a->type : 0;
    int k;
    if (code == 0) {
        k = (mask && !(mask & (mask - 1))) ? kind_of_bit(mask) : -1;
        if (k < 0)
            ir_error(s->g, o, "attribute '%s' has no type", name);
        return k;
    }
    k = kind_of_code(code);
    if (k < 0) {
        ir_error(s->g, o, "attribute '%s' has unknown type code %d", name, code);
        return -1;
    }
    unsigned other = mask & ~kind_bits[k];
    if (other) {
        int ko = kind_of_bit(other & -other);
        ir_error(s->g, o, "attribute '%s' is declared %s but carries a %s value", name,
                 kind_names[k], kind_names[ko]);
        return -1;
    }
    return k;
}

/* Arena copy of a protobuf bytes field as a NUL-terminated string. */
static const char *bytes_str(IrGraph *g, ProtobufCBinaryData b)
{
    char *p = ir_alloc(g, b.len + 1);
    if (b.len)
        memcpy(p, b.data, b.len);
    return p;
}

/* Decode a TENSOR value into a constant of s->g named after base; IR_NONE on error. */
static ValId tensor_const(FeScope *s, const Onnx__TensorProto *tp, const char *what,
                          const char *base, const IrOrigin *o)
{
    FeOnnx *cx = s->cx;
    FeTensor *t = &cx->tmp;
    char err[768];
    if (!fe_tensor_from_proto(tp, &cx->data, t, err, sizeof err)) {
        ir_error(s->g, o, "%s: %s", what, err);
        return IR_NONE;
    }
    return fe_tensor_const(s->g, base, t);
}

/* Text of a TYPE_PROTO value ("optional(sequence(tensor(f32)))") at buf + k; returns
 * the new length (the buffer is size n, always NUL-terminated). */
static size_t type_text(const Onnx__TypeProto *t, char *buf, size_t k, size_t n, int depth)
{
    const Onnx__TypeProto *e = NULL;
    const char *kind = "?";
    if (k >= n)
        return k;
    if (t && depth < 8) {
        switch (t->value_case) {
        case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
            return k + (size_t)snprintf(buf + k, n - k, "tensor(%s)",
                                        t->tensor_type && t->tensor_type->has_elem_type
                                            ? ir_dtype_name(fe_onnx_dtype(
                                                  t->tensor_type->elem_type))
                                            : "?");
        case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
            kind = "sequence";
            e = t->sequence_type ? t->sequence_type->elem_type : NULL;
            break;
        case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
            kind = "optional";
            e = t->optional_type ? t->optional_type->elem_type : NULL;
            break;
        default:
            break;
        }
    }
    if (!e)
        return k + (size_t)snprintf(buf + k, n - k, "%s", kind);
    k += (size_t)snprintf(buf + k, n - k, "%s(", kind);
    k = type_text(e, buf, k, n, depth + 1);
    return k < n ? k + (size_t)snprintf(buf + k, n - k, ")") : k;
}

/* Convert attribute a (named name) into *out; false with an error reported. */
static bool conv_attr(FeScope *s, const char *name, const Attr *a, const IrOrigin *o,
                      IrAttr *out)
{
    IrGraph *g = s->g;
    int k = attr_kind(s, name, a, o);
    if (k < 0)
        return false;
    const char *nm = ir_strdup(g, name);
    *out = (IrAttr){.name = nm, .tensor = IR_NONE};
    switch (kind_bits[k]) {
    case K_F: *out = ir_attr_float(nm, a->f); return true;
    case K_I: *out = ir_attr_int(nm, a->i); return true;
    case K_S: *out = ir_attr_str(g, nm, bytes_str(g, a->s)); return true;
    case K_IS:
    case K_FS:
    case K_SS:
        if (a->n_ints > INT_MAX || a->n_floats > INT_MAX || a->n_strings > INT_MAX) {
            ir_error(g, o, "attribute '%s' has too many values", name);
            return false;
        }
        if (kind_bits[k] == K_IS) {
            *out = ir_attr_ints(g, nm, a->ints, (int)a->n_ints);
        } else if (kind_bits[k] == K_FS) {
            double *d = ir_alloc(g, (a->n_floats + 1) * sizeof *d);
            for (size_t i = 0; i < a->n_floats; i++)
                d[i] = a->floats[i];
            *out = ir_attr_floats(g, nm, d, (int)a->n_floats);
        } else {
            const char **ss = ir_alloc(g, (a->n_strings + 1) * sizeof *ss);
            for (size_t i = 0; i < a->n_strings; i++)
                ss[i] = bytes_str(g, a->strings[i]);
            out->kind = IR_ATTR_STRINGS;
            out->strings = ss;
            out->n = (uint32_t)a->n_strings;
        }
        return true;
    case K_T: {
        char base[600], what[300];
        snprintf(base, sizeof base, "%.300s_%.200s", o->name, name);
        snprintf(what, sizeof what, "attribute '%.200s'", name);
        if (!a->t) {
            ir_error(g, o, "attribute '%s' (TENSOR) has no value", name);
            return false;
        }
        ValId v = tensor_const(s, a->t, what, fe_fresh(s, base), o);
        out->kind = IR_ATTR_TENSOR;
        out->tensor = v;
        return v != IR_NONE;
    }
    case K_G:
        if (!a->g) {
            ir_error(g, o, "attribute '%s' (GRAPH) has no value", name);
            return false;
        }
        out->kind = IR_ATTR_GRAPH;
        out->graph = fe_subgraph(s, a->g, o);
        return out->graph != NULL;
    case K_TP: {                       /* a type (Optional's 'type'): kept as text */
        char buf[256];
        type_text(a->tp, buf, 0, sizeof buf, 0);
        *out = ir_attr_str(g, nm, buf);
        return true;
    }
    default:
        ir_error(g, o, "attribute '%s' of type %s is not supported", name, kind_names[k]);
        return false;
    }
}

/* Find attribute name in a list of protos (by their own names), or NULL. */
static const Attr *find_default(Attr *const *list, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (list[i]->name && !strcmp(list[i]->name, name))
            return list[i];
    return NULL;
}

/* The value a function-body attribute that says ref_attr_name=ref takes: the call's
 * attribute of that name, else the function's default, else none (NULL). */
static const Attr *resolve_ref(const FeCall *c, const char *ref)
{
    for (uint32_t i = 0; i < c->nattrs; i++)
        if (!strcmp(c->attr_names[i], ref))
            return c->attrs[i];
    return find_default(c->defaults, c->ndefaults, ref);
}

/* Node attributes with references resolved: names[i] / protos[i]; count or -1. */
int fe_resolve_attrs(FeScope *s, const Onnx__NodeProto *n, const IrOrigin *o,
                     const char ***names, const Onnx__AttributeProto ***protos)
{
    IrGraph *g = s->g;
    const char **nm = ir_alloc(g, (n->n_attribute + 1) * sizeof *nm);
    const Attr **pr = ir_alloc(g, (n->n_attribute + 1) * sizeof *pr);
    int k = 0;
    bool ok = true;
    FeMap seen;                            /* duplicate check; a map only for many */
    fe_map_init(&seen, g);
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Attr *a = n->attribute[i];
        const char *name = a->name ? a->name : "";
        bool dup = false;
        if (n->n_attribute > 16) {
            dup = fe_map_get(&seen, name, NULL);
            fe_map_put(&seen, name, 0);
        } else {
            for (size_t j = 0; j < i; j++)
                dup |= n->attribute[j]->name && !strcmp(n->attribute[j]->name, name);
        }
        if (!name[0] || dup) {
            ir_error(g, o, name[0] ? "attribute '%s' is given twice" : "attribute%s without "
                     "a name", name);
            ok = false;
            continue;
        }
        if (a->ref_attr_name && a->ref_attr_name[0]) {
            if (!s->call) {
                ir_error(g, o, "attribute '%s' refers to '%s' outside a function body", name,
                         a->ref_attr_name);
                ok = false;
                continue;
            }
            a = resolve_ref(s->call, a->ref_attr_name);
            if (!a)
                continue;                  /* not given at the call: attribute omitted */
        }
        nm[k] = name;
        pr[k++] = a;
    }
    *names = nm;
    *protos = pr;
    return ok ? k : -1;
}

/* All attributes of node n as IrAttr (arena). */
bool fe_attrs(FeScope *s, const Onnx__NodeProto *n, const IrOrigin *o, IrAttr **out,
              int *nout)
{
    const char **names;
    const Attr **protos;
    int k = fe_resolve_attrs(s, n, o, &names, &protos);
    *out = NULL;
    *nout = 0;
    if (k < 0)
        return false;
    IrAttr *at = ir_alloc(s->g, ((size_t)k + 1) * sizeof *at);
    bool ok = true;
    int m = 0;
    for (int i = 0; i < k; i++) {
        if (conv_attr(s, names[i], protos[i], o, &at[m]))
            m++;
        else
            ok = false;
    }
    *out = at;
    *nout = m;
    return ok;
}

/* The value of a Constant node's single attribute as a constant of s->g. */
static ValId constant_value(FeScope *s, const char *name, const Attr *a, const IrOrigin *o)
{
    int k = attr_kind(s, name, a, o);
    if (k < 0)
        return IR_NONE;
    unsigned bit = kind_bits[k];
    IrType ty = {.dtype = IR_DT_F32, .rank = 0};
    if (!strcmp(name, "value") && bit == K_T && a->t)
        return tensor_const(s, a->t, "attribute 'value'", "c", o);
    if (!strcmp(name, "value_float") && bit == K_F) {
        float f = a->f;
        return ir_add_const(s->g, "c", &ty, &f);
    }
    if (!strcmp(name, "value_floats") && bit == K_FS) {
        ty.rank = 1;
        ty.dims[0] = (int64_t)a->n_floats;
        return ir_add_const(s->g, "c", &ty, a->floats);
    }
    ty.dtype = IR_DT_I64;
    if (!strcmp(name, "value_int") && bit == K_I)
        return ir_add_const(s->g, "c", &ty, &a->i);
    if (!strcmp(name, "value_ints") && bit == K_IS) {
        ty.rank = 1;
        ty.dims[0] = (int64_t)a->n_ints;
        return ir_add_const(s->g, "c", &ty, a->ints);
    }
    if (!strcmp(name, "value_string") || !strcmp(name, "value_strings") ||
        !strcmp(name, "sparse_value"))
        ir_error(s->g, o, "Constant attribute '%s' (string or sparse) is not supported", name);
    else
        ir_error(s->g, o, "Constant attribute '%s' of type %s is not a valid constant value",
                 name, kind_names[k]);
    return IR_NONE;
}

/* A Constant node: exactly one value attribute, no inputs, one output. */
void fe_constant(FeScope *s, const Onnx__NodeProto *n, const IrOrigin *o)
{
    const char **names;
    const Attr **protos;
    const char *out = n->n_output == 1 ? n->output[0] : "";
    ValId v = IR_NONE;
    int k = fe_resolve_attrs(s, n, o, &names, &protos);
    if (n->n_input != 0 || n->n_output != 1)
        ir_error(s->g, o, "Constant takes no inputs and has one output (has %zu and %zu)",
                 n->n_input, n->n_output);
    else if (k >= 0 && k != 1)
        ir_error(s->g, o, "Constant needs exactly one value attribute (has %d)", k);
    else if (k == 1)
        v = constant_value(s, names[0], protos[0], o);
    for (size_t j = 0; j < n->n_output; j++) {
        const char *nm = n->output[j];
        if (fe_check_new(s, nm, o))
            fe_define(s, nm, nm == out ? v : IR_NONE);
    }
}
