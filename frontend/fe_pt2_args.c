/* fe_pt2_args.c: the arguments of one serialized FX node -> IR inputs and attributes.
 *
 * Tensor arguments become node inputs (with their schema names in the "_in_names"
 * attribute); every other argument becomes an attribute named after its schema
 * argument (the mapping is described in fe_pt2_priv.h).
 */
#include <stdio.h>
#include <string.h>

#include "frontend/fe_pt2_graph.h"

/* Look a tensor name up in the scope; IR_NONE (after reporting) if unknown. */
ValId fe_pt2_lookup(FePt2Build *b, FePt2Scope *s, const char *name, const IrOrigin *o)
{
    json_t *v = name ? json_object_get(s->names, name) : NULL;
    if (!json_is_integer(v)) {
        ir_error(b->g, o, "refers to tensor '%s', which is not defined before this node",
                 name ? name : "(unnamed)");
        return IR_NONE;
    }
    return (ValId)json_integer_value(v);
}

/* Bind a tensor name to a value in the scope. */
void fe_pt2_bind(FePt2Scope *s, const char *name, ValId v)
{
    json_object_set_new(s->names, name, json_integer((json_int_t)v));
}

/* A SymInt argument ({"as_int": N} or {"as_name": "s0"} resolved through the graph's
 * sym_int_values when that records a concrete value). */
static bool sym_int(FePt2Scope *s, json_t *a, int64_t *out)
{
    json_t *x = NULL;
    const char *tag = fe_pt2_tag(a, &x);
    if (tag && strcmp(tag, "as_int") == 0 && json_is_integer(x)) {
        *out = (int64_t)json_integer_value(x);
        return true;
    }
    if (tag && strcmp(tag, "as_name") == 0 && json_is_string(x)) {
        json_t *sv = json_object_get(fe_pt2_obj(s->graph, "sym_int_values"),
                                     json_string_value(x));
        return sv && fe_pt2_symint(sv, s->syms, out);
    }
    return false;
}

/* Append one input (and its schema name). */
static bool add_input(FePt2Build *b, FePt2Args *a, const char *argname, ValId v)
{
    if (a->nin >= FE_PT2_MAX_NODE_INPUTS)
        return false;
    a->in[a->nin] = v;
    a->in_names[a->nin] = argname;
    a->nin++;
    return true;
}

/* Whether torch recorded tensor name as a strided view (strides or storage offset of
 * something other than a dense tensor). Unreadable metadata counts as dense: the
 * node's type check reports it. */
static bool is_strided(FePt2Scope *s, const char *name)
{
    json_t *meta = name ? fe_pt2_obj(s->tensor_values, name) : NULL;
    IrType t;
    int64_t strides[IR_MAX_RANK] = {0}, off = 0;
    char err[128];
    return meta && fe_pt2_tensor_meta(meta, s->syms, &t, strides, &off, err, sizeof err) &&
           !fe_pt2_is_dense(&t, strides, off);
}

/* Tensor-valued arguments: as_tensor, as_tensors, as_optional_tensor(s). Returns 1 if
 * handled, 0 if the tag is not a tensor kind, -1 on error (reported). */
static int tensor_arg(FePt2Build *b, FePt2Scope *s, FePt2Args *a, const char *argname,
                      const char *tag, json_t *val, const IrOrigin *o)
{
    bool list = strcmp(tag, "as_tensors") == 0 || strcmp(tag, "as_optional_tensors") == 0;
    if (!list && strcmp(tag, "as_tensor") != 0 && strcmp(tag, "as_optional_tensor") != 0)
        return 0;
    size_t n = list ? json_array_size(val) : 1;
    if (list && !json_is_array(val)) {
        ir_error(b->g, o, "argument '%s': %s is not a list", argname, tag);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *e = list ? json_array_get(val, i) : val;
        json_t *inner = NULL;
        const char *itag = NULL;
        if (strcmp(tag, "as_optional_tensors") == 0 || strcmp(tag, "as_optional_tensor") == 0)
            itag = fe_pt2_tag(e, &inner);
        ValId v = IR_NONE;
        if (itag && strcmp(itag, "as_none") == 0) {
            v = IR_NONE;
        } else {
            if (itag)
                e = strcmp(itag, "as_tensor") == 0 ? inner : NULL;
            v = fe_pt2_lookup(b, s, fe_pt2_str(e, "name"), o);
            if (v == IR_NONE)
                return -1;
        }
        if (!add_input(b, a, argname, v)) {
            ir_error(b->g, o, "more than %d tensor arguments", FE_PT2_MAX_NODE_INPUTS);
            return -1;
        }
        a->in_strided[a->nin - 1] = v != IR_NONE && is_strided(s, fe_pt2_str(e, "name"));
    }
    return 1;
}

/* A list attribute of ints (as_ints, as_bools, as_sym_ints). */
static bool int_list(FePt2Build *b, FePt2Scope *s, const char *tag, json_t *val, IrAttr *at)
{
    if (!json_is_array(val))
        return false;
    size_t n = json_array_size(val);
    int64_t *v = ir_alloc(b->g, (n + 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(val, i);
        if (strcmp(tag, "as_ints") == 0 && json_is_integer(e))
            v[i] = (int64_t)json_integer_value(e);
        else if (strcmp(tag, "as_bools") == 0 && json_is_boolean(e))
            v[i] = json_is_true(e);
        else if (strcmp(tag, "as_sym_ints") != 0 || !sym_int(s, e, &v[i]))
            return false;
    }
    at->kind = IR_ATTR_INTS;
    at->ints = v;
    at->n = (uint32_t)n;
    return true;
}

/* A list attribute of floats or strings. */
static bool other_list(FePt2Build *b, const char *tag, json_t *val, IrAttr *at)
{
    if (!json_is_array(val))
        return false;
    size_t n = json_array_size(val);
    if (strcmp(tag, "as_floats") == 0) {
        double *v = ir_alloc(b->g, (n + 1) * sizeof *v);
        for (size_t i = 0; i < n; i++)
            if (!fe_pt2_float(json_array_get(val, i), &v[i]))
                return false;
        at->kind = IR_ATTR_FLOATS;
        at->floats = v;
    } else {
        const char **v = ir_alloc(b->g, (n + 1) * sizeof *v);
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(val, i);
            if (!json_is_string(e))
                return false;
            v[i] = ir_strdup(b->g, json_string_value(e));
        }
        at->kind = IR_ATTR_STRINGS;
        at->strings = v;
    }
    at->n = (uint32_t)n;
    return true;
}

/* Device {"type": "cuda", "index": 0} -> "cuda:0". */
static bool device_str(FePt2Build *b, json_t *val, IrAttr *at)
{
    const char *type = fe_pt2_str(val, "type");
    if (!type)
        return false;
    json_t *idx = json_object_get(val, "index");
    char buf[128];
    if (json_is_integer(idx))
        snprintf(buf, sizeof buf, "%.100s:%lld", type, (long long)json_integer_value(idx));
    else
        snprintf(buf, sizeof buf, "%.100s", type);
    at->kind = IR_ATTR_STRING;
    at->s = ir_strdup(b->g, buf);
    return true;
}

/* Scalar attributes; false if the value does not have the tag's type. */
static bool scalar_attr(FePt2Build *b, FePt2Scope *s, const char *tag, json_t *val,
                        IrAttr *at, const IrOrigin *o, bool *reported)
{
    json_t *x = NULL;
    at->kind = IR_ATTR_INT;
    if (strcmp(tag, "as_int") == 0 || strcmp(tag, "as_layout") == 0 ||
        strcmp(tag, "as_memory_format") == 0) {
        at->i = (int64_t)json_integer_value(val);
        return json_is_integer(val);
    }
    if (strcmp(tag, "as_bool") == 0) {
        at->i = json_is_true(val);
        return json_is_boolean(val);
    }
    if (strcmp(tag, "as_sym_int") == 0)
        return sym_int(s, val, &at->i);
    if (strcmp(tag, "as_sym_bool") == 0) {
        const char *t = fe_pt2_tag(val, &x);
        at->i = json_is_true(x);
        return t && strcmp(t, "as_bool") == 0 && json_is_boolean(x);
    }
    if (strcmp(tag, "as_scalar_type") == 0) {
        if (!json_is_integer(val))
            return false;
        at->i = fe_pt2_dtype((int64_t)json_integer_value(val));
        if (at->i == IR_DT_UNDEF) {
            ir_error(b->g, o, "argument '%s': unsupported dtype %s", at->name,
                     fe_pt2_dtype_name((int64_t)json_integer_value(val)));
            *reported = true;
        }
        return at->i != IR_DT_UNDEF;
    }
    at->kind = IR_ATTR_FLOAT;
    if (strcmp(tag, "as_float") == 0)
        return fe_pt2_float(val, &at->f);
    if (strcmp(tag, "as_sym_float") == 0) {
        const char *t = fe_pt2_tag(val, &x);
        return t && strcmp(t, "as_float") == 0 && fe_pt2_float(x, &at->f);
    }
    at->kind = IR_ATTR_STRING;
    if (strcmp(tag, "as_string") == 0) {
        at->s = json_is_string(val) ? ir_strdup(b->g, json_string_value(val)) : NULL;
        return at->s != NULL;
    }
    if (strcmp(tag, "as_device") == 0)
        return device_str(b, val, at);
    return false;
}

/* True if tag is one of the NULL-terminated list. */
static bool tag_in(const char *tag, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(tag, *list) == 0)
            return true;
    return false;
}

/* Non-tensor argument -> attribute. Returns false after reporting. */
static bool attr_arg(FePt2Build *b, FePt2Scope *s, FePt2Args *a, const char *argname,
                     const char *tag, json_t *val, const IrOrigin *o)
{
    static const char *const int_lists[] = {"as_ints", "as_bools", "as_sym_ints", NULL};
    static const char *const lists[] = {"as_floats", "as_strings", NULL};
    static const char *const scalars[] = {
        "as_int", "as_layout", "as_memory_format", "as_bool", "as_sym_int", "as_sym_bool",
        "as_scalar_type", "as_float", "as_sym_float", "as_string", "as_device", NULL};
    if (strcmp(tag, "as_none") == 0 || strcmp(tag, "as_graph") == 0)
        return true; /* None = absent; subgraphs of ops not inlined are dropped */
    IrAttr at;
    memset(&at, 0, sizeof at);
    at.name = argname;
    at.tensor = IR_NONE;
    bool ok, reported = false;
    if (tag_in(tag, int_lists)) {
        ok = int_list(b, s, tag, val, &at);
    } else if (tag_in(tag, lists)) {
        ok = other_list(b, tag, val, &at);
    } else if (tag_in(tag, scalars)) {
        ok = scalar_attr(b, s, tag, val, &at, o, &reported);
    } else {
        ir_error(b->g, o, "argument '%s' has kind '%s', which is not supported", argname, tag);
        return false;
    }
    if (!ok) {
        if (!reported)
            ir_error(b->g, o, "argument '%s': malformed or symbolic %s value", argname, tag);
        return false;
    }
    a->attrs[a->nattrs++] = at;
    return true;
}

/* The _in_strided attribute, when an input was recorded as a strided view (handlers
 * whose result depends on the storage layout, as_strided, refuse those). */
static void add_strided(FePt2Build *b, FePt2Args *a)
{
    bool any = false;
    for (int i = 0; i < a->nin; i++)
        any |= a->in_strided[i] != 0;
    if (!any)
        return;
    IrAttr at;
    memset(&at, 0, sizeof at);
    at.name = FE_PT2_IN_STRIDED;
    at.kind = IR_ATTR_INTS;
    at.tensor = IR_NONE;
    int64_t *v = ir_alloc(b->g, (size_t)(a->nin + 1) * sizeof *v);
    memcpy(v, a->in_strided, (size_t)a->nin * sizeof *v);
    at.ints = v;
    at.n = (uint32_t)a->nin;
    a->attrs[a->nattrs++] = at;
}

/* Convert every named argument of a node (see the file comment). */
bool fe_pt2_args(FePt2Build *b, FePt2Scope *s, json_t *inputs, const IrOrigin *o,
                 FePt2Args *a)
{
    memset(a, 0, sizeof *a);
    size_t n = json_array_size(inputs);
    if (!json_is_array(inputs) || n > FE_PT2_MAX_NODE_ATTRS - 1) {
        ir_error(b->g, o, "'inputs' is not a list of at most %d arguments",
                 FE_PT2_MAX_NODE_ATTRS - 1);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *na = json_array_get(inputs, i), *val = NULL;
        const char *argname = fe_pt2_str(na, "name");
        const char *tag = fe_pt2_tag(fe_pt2_obj(na, "arg"), &val);
        if (!argname || !tag) {
            ir_error(b->g, o, "argument %zu is malformed", i);
            return false;
        }
        argname = ir_strdup(b->g, argname);
        int t = tensor_arg(b, s, a, argname, tag, val, o);
        if (t < 0 || (t == 0 && !attr_arg(b, s, a, argname, tag, val, o)))
            return false;
    }
    IrAttr names;
    memset(&names, 0, sizeof names);
    names.name = FE_PT2_IN_NAMES;
    names.kind = IR_ATTR_STRINGS;
    names.tensor = IR_NONE;
    const char **copy = ir_alloc(b->g, (a->nin + 1) * sizeof *copy);
    memcpy(copy, a->in_names, a->nin * sizeof *copy);
    names.strings = copy;
    names.n = (uint32_t)a->nin;
    a->attrs[a->nattrs++] = names;
    add_strided(b, a);
    return true;
}
