/* fe_onnx_graph.c: one ONNX graph body -> IR (initializers, inputs, nodes, outputs),
 * value-name scopes, captures of outer values by subgraphs, and naming. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_onnx.h"

/* A scope over g with fresh maps; parent is the enclosing graph scope (or NULL). */
void fe_scope_init(FeScope *s, FeOnnx *cx, IrGraph *g, FeScope *parent, int depth)
{
    memset(s, 0, sizeof *s);
    s->cx = cx;
    s->g = g;
    s->parent = parent;
    s->depth = depth;
    fe_map_init(&s->vals, g);
    fe_map_init(&s->vinfo, g);
    s->reserved = ir_alloc(g, sizeof *s->reserved);
    fe_map_init(s->reserved, g);
    s->later = s->reserved;
    s->fresh = ir_alloc(g, sizeof *s->fresh);
    s->opset = cx->default_opset;
    if (parent) {
        s->call = parent->call;
        s->opset = parent->opset;
    }
}

/* A unique IR name from base, avoiding names used in g and ONNX names of its body:
 * base itself if free, else base_N with N from the graph's counter. */
const char *fe_fresh(FeScope *s, const char *base)
{
    char buf[512];
    if (!base || !base[0])
        base = "t";
    snprintf(buf, sizeof buf, "%.400s", base);
    while (fe_map_get(s->reserved, buf, NULL) || ir_find_value(s->g, buf) != IR_NONE)
        snprintf(buf, sizeof buf, "%.400s_%u", base, (*s->fresh)++);
    return ir_strdup(s->g, buf);
}

/* Remember a value captured from the enclosing scope by a subgraph of the node
 * being converted. A subgraph captures a value once; sibling subgraphs (then/else)
 * may repeat it: fe_sink_unique removes those repeats. */
static void sink_add(FeScope *s, ValId v)
{
    if (s->nsink == s->capsink) {
        uint32_t cap = s->capsink ? 2 * s->capsink : 8;
        ValId *n = ir_alloc(s->g, cap * sizeof *n);
        if (s->nsink)
            memcpy(n, s->sink, s->nsink * sizeof *n);
        s->sink = n;
        s->capsink = cap;
    }
    s->sink[s->nsink++] = v;
}

/* Order for qsort of value ids. */
static int cmp_val(const void *a, const void *b)
{
    ValId x = *(const ValId *)a, y = *(const ValId *)b;
    return x < y ? -1 : x > y;
}

/* Sort the captured values of the current node by id and drop repeats. */
void fe_sink_unique(FeScope *s)
{
    if (s->nsink < 2)
        return;
    qsort(s->sink, s->nsink, sizeof *s->sink, cmp_val);
    uint32_t n = 1;
    for (uint32_t i = 1; i < s->nsink; i++)
        if (s->sink[i] != s->sink[n - 1])
            s->sink[n++] = s->sink[i];
    s->nsink = n;
}

/* Value named name, searching enclosing graphs; an outer value becomes a new input
 * of this graph (named like the outer value) and is recorded in the parent's sink. */
bool fe_lookup(FeScope *s, const char *name, ValId *v)
{
    uint32_t x;
    if (fe_map_get(&s->vals, name, &x)) {
        *v = x;
        return true;
    }
    ValId pv;
    if (!s->parent || !fe_lookup(s->parent, name, &pv))
        return false;
    if (pv == IR_NONE) {
        fe_map_put(&s->vals, name, IR_NONE);
        *v = IR_NONE;
        return true;
    }
    IrValue *outer = ir_val(s->parent->g, pv);
    ValId nv = ir_add_input(s->g, outer->name, &outer->type);
    sink_add(s->parent, pv);
    fe_map_put(&s->vals, name, nv);
    *v = nv;
    return true;
}

/* Input of a node: "" is an omitted optional input (IR_NONE). */
bool fe_node_input(FeScope *s, const char *name, const IrOrigin *o, ValId *v)
{
    *v = IR_NONE;
    if (!name || !name[0] || fe_lookup(s, name, v))
        return true;
    if (fe_map_get(s->later, name, NULL))
        ir_error(s->g, o, "input '%s' is used before the node that produces it (a cycle, "
                 "or nodes not in topological order)", name);
    else
        ir_error(s->g, o, "input '%s' is not produced by any node, initializer or graph "
                 "input", name);
    return false;
}

/* Duplicate-definition check for name in this scope. */
bool fe_check_new(FeScope *s, const char *name, const IrOrigin *o)
{
    if (!name[0] || !fe_map_get(&s->vals, name, NULL))
        return true;
    if (o)
        ir_error(s->g, o, "output '%s' is already defined (duplicate output name)", name);
    else
        ir_diag_error(s->cx->diag, "'%s' is defined twice (duplicate name)", name);
    return false;
}

/* The shape sh as "D0xD1x..." into buf, a dynamic dimension as <its name> (<?> when
 * unnamed): the template of the --input-shape value that fixes it. */
static void shape_hint(const Onnx__TensorShapeProto *sh, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sh->n_dim && at < len; i++) {
        const Onnx__TensorShapeProto__Dimension *dm = sh->dim[i];
        const char *sep = i ? "x" : "";
        if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            dm->dim_value != -1)
            at += (size_t)snprintf(buf + at, len - at, "%s%lld", sep, (long long)dm->dim_value);
        else
            at += (size_t)snprintf(buf + at, len - at, "%s<%s>", sep,
                                   dm->value_case ==
                                           ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                                           dm->dim_param ? dm->dim_param : "?");
    }
}

/* Is dm a size given in the model? A dim_value of -1 means "unknown", as a dim_param
 * does (other negative values are refused as sizes; 0 is an empty axis). */
static bool dim_static(const Onnx__TensorShapeProto__Dimension *dm)
{
    return dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
           dm->dim_value != -1;
}

/* The --dim bound given for dm's dim_param, or NULL. */
static const FeDimBound *dim_bound(const FeScope *s, const Onnx__TensorShapeProto__Dimension *dm)
{
    if (dm->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM || !dm->dim_param)
        return NULL;
    for (int i = 0; i < s->cx->ndim_bounds; i++)
        if (!strcmp(s->cx->dim_bounds[i].param, dm->dim_param))
            return &s->cx->dim_bounds[i];
    return NULL;
}

/* Report the symbolic dimension ax of what nm (shape sh) that has no bound, naming the
 * flags that give it one or fix it. */
static void refuse_dim(FeScope *s, const Onnx__TensorShapeProto *sh, size_t ax, const char *what,
                       const char *nm)
{
    const Onnx__TensorShapeProto__Dimension *dm = sh->dim[ax];
    bool named = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                 dm->dim_param && dm->dim_param[0];
    char hint[160], dimopt[96] = "";
    shape_hint(sh, hint, sizeof hint);
    if (named)
        snprintf(dimopt, sizeof dimopt, "--dim %s=MAX or ", dm->dim_param);
    ir_diag_error(s->cx->diag, "unsupported: dynamic dimension '%s' (axis %zu) of %s '%s' has no "
                  "bound (give one with %s--input-shape %s=MIN..MAX for that axis, or fix the "
                  "sizes with --input-shape %s=%s)", named ? dm->dim_param : "?", ax, what, nm,
                  dimopt, nm, nm, hint);
}

/* Static type of a value_info. strict: report why it is not fully static (what says
 * whose type it is); otherwise just return false. */
static bool vi_type(FeScope *s, const Onnx__ValueInfoProto *vi, bool strict, const char *what,
                    IrType *t)
{
    IrDiag *d = s->cx->diag;
    const char *nm = vi->name ? vi->name : "";
    const Onnx__TypeProto *tp = vi->type;
    char dn[32], msg[256];
    if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) {
        if (strict)
            ir_diag_error(d, "%s '%s' has no type information", what, nm);
        return false;
    }
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        if (strict)
            ir_diag_error(d, "%s '%s': only tensor types are supported (not sequences, maps, "
                          "optionals or sparse tensors)", what, nm);
        return false;
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    int64_t code = tt->has_elem_type ? tt->elem_type : 0;
    IrDType dt = fe_onnx_dtype(code);
    if (code == 0 || dt == IR_DT_UNDEF || dt == IR_DT_STRING) {
        if (strict && code == 0)
            ir_diag_error(d, "%s '%s' has no element type", what, nm);
        else if (strict)
            ir_diag_error(d, "%s '%s': unsupported dtype %s", what, nm,
                          fe_onnx_dtype_name(code, dn, sizeof dn));
        return false;
    }
    if (!tt->shape) {
        if (strict)
            ir_diag_error(d, "unsupported: %s '%s' has an unknown rank", what, nm);
        return false;
    }
    int64_t dims[IR_MAX_RANK];
    size_t nd = tt->shape->n_dim;
    bool main_input = strict && !strcmp(what, "input");
    for (size_t i = 0; i < nd && i < IR_MAX_RANK; i++) {
        const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[i];
        const FeDimBound *b = main_input ? dim_bound(s, dm) : NULL;
        if (b) {
            dims[i] = b->max;
            continue;
        }
        if (!dim_static(dm)) {
            if (strict)
                refuse_dim(s, tt->shape, i, what, nm);
            return false;
        }
        dims[i] = dm->dim_value;
    }
    t->dtype = dt;
    size_t nbytes;
    if (!fe_check_dims(dims, nd, dt, t->dims, &t->rank, &nbytes, msg, sizeof msg)) {
        if (strict)
            ir_diag_error(d, "%s '%s': %s", what, nm, msg);
        return false;
    }
    return true;
}

/* Rename v to want; a same-node output still holding want as its temporary name is
 * moved out of the way first. */
static void name_value(FeScope *s, ValId v, const char *want)
{
    IrGraph *g = s->g;
    ValId other = ir_find_value(g, want);
    if (other != IR_NONE && other != v && ir_val(g, v)->def != IR_NONE &&
        ir_val(g, other)->def == ir_val(g, v)->def)
        ir_set_name(g, other, fe_fresh(s, "tmp"));
    ir_set_name(g, v, want);
}

/* Index of name among the formal outputs of the function being inlined, or -1 (the
 * first one if listed twice). */
static int formal_output(const FeCall *c, const char *name)
{
    uint32_t j;
    if (c->outidx.n)
        return fe_map_get(&c->outidx, name, &j) ? (int)j : -1;
    for (size_t i = 0; i < c->fn->n_output; i++)
        if (!strcmp(c->fn->output[i], name))
            return (int)i;
    return -1;
}

/* Bind ONNX name to v in s; name it in the IR unless keep_name (a value coming out
 * of an inlined call into a function frame keeps the name it got inside, so that a
 * value passed up through many calls is not renamed at every level). */
static void define(FeScope *s, const char *name, ValId v, bool keep_name)
{
    if (v == IR_NONE) {
        if (name[0])
            fe_map_put(&s->vals, name, IR_NONE);
        return;
    }
    if (!name[0]) {
        ir_set_name(s->g, v, fe_fresh(s, "unused"));
        return;
    }
    const char *want = name;
    FeCall *fr = s->frame;
    if (fr) {
        /* a function-internal name; a formal output is renamed to the caller's name
         * when the call binds it (never a shared temporary: renaming values to and
         * from one name over and over is slow in the IR's name set) */
        int j = formal_output(fr, name);
        if (j >= 0 && fr->outname[j] && fr->bound[j] == IR_NONE)
            fr->bound[j] = v;
        char buf[600];
        snprintf(buf, sizeof buf, "%.300s%.290s", fr->prefix, name);
        want = keep_name ? NULL : fe_fresh(s, buf);
    }
    if (want)
        name_value(s, v, want);
    fe_map_put(&s->vals, name, v);
    uint32_t k;
    IrValue *val = ir_val(s->g, v);
    if (val->kind == IR_VAL_ACT && val->type.dtype == IR_DT_UNDEF &&
        fe_map_get(&s->vinfo, name, &k)) {
        IrType t;
        if (vi_type(s, s->vi[k], false, "value", &t))
            val->type = t;
    }
}

/* Bind ONNX name to v in s and name it in the IR (with the value_info type hint). */
void fe_define(FeScope *s, const char *name, ValId v)
{
    define(s, name, v, false);
}

/* Bind the output of an inlined call (see define). */
void fe_define_call_output(FeScope *s, const char *name, ValId v)
{
    define(s, name, v, true);
}

/* Add a foreign node; bind its outputs; its GRAPH attributes are now owned by g. */
NodeId fe_emit_foreign(FeScope *s, const char *op_type, const char *domain, int64_t opset,
                       const ValId *in, int nin, const char *const *outnames, int nout,
                       const IrAttr *attrs, int nattrs, const IrOrigin *o)
{
    IrForeign f = {op_type, domain, opset};
    NodeId id = ir_add_foreign(s->g, &f, in, nin, nout, attrs, nattrs, o);
    /* g owns the subgraphs only once the node exists (out of memory before: still
     * pending, freed by the import's clean-up) */
    for (int i = 0; i < nattrs; i++)
        if (attrs[i].kind == IR_ATTR_GRAPH)
            fe_onnx_drop_pending(s->cx, attrs[i].graph);
    const ValId *outs = ir_node(s->g, id)->out;
    for (int j = 0; j < nout; j++) {
        const char *nm = outnames[j] ? outnames[j] : "";
        fe_define(s, fe_check_new(s, nm, o) ? nm : "", outs[j]);
    }
    return id;
}

/* Record the names a body defines (for fresh names and "used before" messages) and
 * its value_info type hints. */
static void scan_body(FeScope *s, const Onnx__GraphProto *gp)
{
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t j = 0; j < gp->node[i]->n_output; j++)
            if (gp->node[i]->output[j][0])
                fe_map_put(s->reserved, gp->node[i]->output[j], 0);
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (gp->initializer[i]->name)
            fe_map_put(s->reserved, gp->initializer[i]->name, 0);
    for (size_t i = 0; i < gp->n_input; i++)
        if (gp->input[i]->name)
            fe_map_put(s->reserved, gp->input[i]->name, 0);
    size_t nvi = gp->n_value_info + gp->n_output;
    s->vi = ir_alloc(s->g, (nvi ? nvi : 1) * sizeof *s->vi);
    for (size_t i = 0; i < nvi; i++) {
        Onnx__ValueInfoProto *vi =
            i < gp->n_value_info ? gp->value_info[i] : gp->output[i - gp->n_value_info];
        s->vi[i] = vi;
        if (vi->name && vi->name[0])
            fe_map_put(&s->vinfo, vi->name, (uint32_t)i);
    }
}

/* Initializers become constants (sparse ones are refused). */
static void add_initializers(FeScope *s, const Onnx__GraphProto *gp)
{
    FeOnnx *cx = s->cx;
    char err[768];
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        const char *nm = tp->name ? tp->name : "";
        if (!nm[0]) {
            ir_diag_error(cx->diag, "initializer #%zu has no name", i);
            continue;
        }
        if (!fe_check_new(s, nm, NULL))
            continue;
        FeTensor *t = &cx->tmp;
        if (!fe_tensor_from_proto(tp, &cx->data, t, err, sizeof err)) {
            ir_diag_error(cx->diag, "initializer %s", err);
            fe_define(s, nm, IR_NONE);
            continue;
        }
        fe_define(s, nm, fe_tensor_const(s->g, nm, t));
    }
    for (size_t i = 0; i < gp->n_sparse_initializer; i++) {
        const Onnx__SparseTensorProto *sp = gp->sparse_initializer[i];
        ir_diag_error(cx->diag, "sparse initializer '%s' is not supported",
                      sp->values && sp->values->name ? sp->values->name : "?");
    }
}

/* The specialisation for main-graph input nm, or NULL. */
static const FeInputSpec *find_spec(const FeScope *s, const char *nm)
{
    if (s->depth != 0 || s->call)
        return NULL;
    for (int i = 0; i < s->cx->nspecs; i++)
        if (!strcmp(s->cx->specs[i].name, nm))
            return &s->cx->specs[i];
    return NULL;
}

/* Does a declared dimension (static value, or dynamic) admit the value n? */
static bool dim_admits(const Onnx__TensorShapeProto__Dimension *dm, int64_t n)
{
    return !dim_static(dm) || dm->dim_value == n;
}

/* Record axis ax of input v (declared as dm, NULL when the model gives no shape) as a
 * bounded symbolic dimension [min, max]: one symbol per dim_param name, else per axis.
 * A size bucket's cap on the symbol (FeOptions.sym_caps) lowers max, and the input's
 * size along the axis with it. */
static void add_sym(FeScope *s, ValId v, const Onnx__TensorShapeProto__Dimension *dm, int ax,
                    int64_t min, int64_t max)
{
    char nm[300];
    if (dm && dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
        dm->dim_param && dm->dim_param[0])
        snprintf(nm, sizeof nm, "%s", dm->dim_param);
    else
        snprintf(nm, sizeof nm, "%s[%d]", ir_val(s->g, v)->name, ax);
    int64_t step = 0;
    for (int i = 0; i < s->cx->nsym_caps; i++)
        if (!strcmp(s->cx->sym_caps[i].param, nm) && s->cx->sym_caps[i].max < max &&
            s->cx->sym_caps[i].max >= min) {
            max = s->cx->sym_caps[i].max;
            step = s->cx->sym_caps[i].step;
            ir_val(s->g, v)->type.dims[ax] = max;
        }
    ir_sym_add(s->g, v, ax, min, max, nm);
    s->g->symdims[s->g->nsymdims - 1].step = step;
}

/* Apply a specialisation to input nm: a bound value becomes a constant, a shape fixes
 * the dynamic dimensions. The declared dtype and static dims must agree. Returns false
 * (after reporting) on a mismatch. */
static bool add_specialised(FeScope *s, const Onnx__ValueInfoProto *vi, const FeInputSpec *sp)
{
    IrDiag *d = s->cx->diag;
    const char *nm = vi->name;
    const Onnx__TypeProto *tp = vi->type;
    const Onnx__TypeProto__Tensor *tt =
        tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? tp->tensor_type : NULL;
    if (!tt || !tt->has_elem_type) {
        ir_diag_error(d, "input '%s': cannot specialise an input without a tensor type", nm);
        return false;
    }
    IrType t = {.dtype = fe_onnx_dtype(tt->elem_type)};
    t.rank = sp->value ? sp->value->rank : sp->rank;
    memcpy(t.dims, sp->value ? sp->value->dims : sp->dims, sizeof t.dims);
    if (sp->value && sp->value->dtype != t.dtype) {
        ir_diag_error(d, "input '%s': bound value has dtype %s, the input is %s", nm,
                      ir_dtype_name(sp->value->dtype), ir_dtype_name(t.dtype));
        return false;
    }
    bool ok = !tt->shape || tt->shape->n_dim == (size_t)t.rank;
    for (int i = 0; ok && tt->shape && i < t.rank; i++)
        ok = t.dims[i] >= 0 && dim_admits(tt->shape->dim[i], t.dims[i]);
    if (!ok || t.dtype == IR_DT_UNDEF) {
        ir_diag_error(d, "input '%s': the given shape does not match the declared one", nm);
        return false;
    }
    ValId v = sp->value ? ir_add_const(s->g, nm, &t, sp->value->data)
                        : ir_add_input(s->g, nm, &t);
    for (int i = 0; !sp->value && i < t.rank; i++)
        if (sp->min[i] < t.dims[i])
            add_sym(s, v, tt->shape ? tt->shape->dim[i] : NULL, i, sp->min[i], t.dims[i]);
    fe_define(s, nm, v);
    return true;
}

/* Graph inputs that are not initializers become typed inputs. strict: the main graph
 * (fully static types required); subgraph inputs may stay untyped. */
static void add_inputs(FeScope *s, const Onnx__GraphProto *gp, bool strict)
{
    FeMap seen;
    fe_map_init(&seen, s->g);
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        const char *nm = vi->name ? vi->name : "";
        if (!nm[0]) {
            ir_diag_error(s->cx->diag, "graph input #%zu has no name", i);
            continue;
        }
        if (fe_map_get(&seen, nm, NULL)) {
            ir_diag_error(s->cx->diag, "graph input '%s' is listed twice", nm);
            continue;
        }
        fe_map_put(&seen, nm, 0);
        if (fe_map_get(&s->vals, nm, NULL))
            continue;                      /* an initializer: a constant with a default */
        const FeInputSpec *sp = find_spec(s, nm);
        if (strict && fe_seq_input_type(vi)) {
            if (!fe_seq_input(s, vi, sp))
                fe_define(s, nm, IR_NONE);
            continue;
        }
        if (sp && sp->seq) {
            ir_diag_error(s->cx->diag, "input '%s' is not a sequence or an optional: it cannot "
                          "be given a sequence structure", nm);
            fe_define(s, nm, IR_NONE);
            continue;
        }
        if (sp) {
            if (!add_specialised(s, vi, sp))
                fe_define(s, nm, IR_NONE);
            continue;
        }
        IrType t = {.dtype = IR_DT_UNDEF, .rank = 0};
        if (!vi_type(s, vi, strict, "input", &t)) {
            if (strict) {
                fe_define(s, nm, IR_NONE);
                continue;
            }
            t = (IrType){.dtype = IR_DT_UNDEF, .rank = 0};
        }
        ValId v = ir_add_input(s->g, nm, &t);
        for (int a = 0; strict && t.dtype != IR_DT_UNDEF && a < t.rank; a++) {
            const FeDimBound *b = dim_bound(s, vi->type->tensor_type->shape->dim[a]);
            if (b && b->min < b->max)
                add_sym(s, v, vi->type->tensor_type->shape->dim[a], a, b->min, b->max);
        }
        fe_define(s, nm, v);
    }
}

/* Graph outputs: the values of those names, each once. */
static void add_outputs(FeScope *s, const Onnx__GraphProto *gp)
{
    FeMap seen;
    fe_map_init(&seen, s->g);
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        const char *nm = vi->name ? vi->name : "";
        ValId v;
        if (!nm[0]) {
            ir_diag_error(s->cx->diag, "graph output #%zu has no name", i);
            continue;
        }
        if (fe_map_get(&seen, nm, NULL)) {
            ir_diag_error(s->cx->diag, "graph output '%s' is listed twice", nm);
            continue;
        }
        fe_map_put(&seen, nm, 0);
        if (!fe_lookup(s, nm, &v)) {
            ir_diag_error(s->cx->diag, "graph output '%s' is never produced", nm);
            continue;
        }
        if (v == IR_NONE)
            continue;                      /* its producer failed: already reported */
        IrValue *val = ir_val(s->g, v);
        IrType t;
        if (val->kind == IR_VAL_ACT && val->type.dtype == IR_DT_UNDEF &&
            vi_type(s, vi, false, "output", &t))
            val->type = t;
        ir_add_output(s->g, v);
    }
}

/* Convert a whole graph body into s->g. */
void fe_graph_body(FeScope *s, const Onnx__GraphProto *gp, bool strict)
{
    scan_body(s, gp);
    add_initializers(s, gp);
    add_inputs(s, gp, strict);
    for (size_t i = 0; i < gp->n_node; i++)
        fe_node(s, gp->node[i], i);
    add_outputs(s, gp);
}

/* Build a GRAPH attribute's body as a new IrGraph nested in outer. */
IrGraph *fe_subgraph(FeScope *outer, const Onnx__GraphProto *gp, const IrOrigin *o)
{
    FeOnnx *cx = outer->cx;
    if (outer->depth + 1 > cx->max_nesting) {
        ir_error(outer->g, o, "subgraphs nested more than %d deep", cx->max_nesting);
        return NULL;
    }
    IrGraph *sg = ir_graph_new(cx->diag);
    if (!sg)
        longjmp(cx->oom, 1);
    fe_onnx_keep_pending(cx, sg);
    sg->oom = &cx->oom;
    sg->arena_limit = cx->arena_limit;
    sg->model_path = outer->g->model_path;
    sg->onnx_opset = cx->default_opset;
    FeScope ns;
    fe_scope_init(&ns, cx, sg, outer, outer->depth + 1);
    fe_graph_body(&ns, gp, false);
    return sg;
}
