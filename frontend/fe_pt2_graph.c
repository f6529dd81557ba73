/* fe_pt2_graph.c: the serialized FX graph of an ExportedProgram -> IR.
 *
 * The graph signature says which placeholders are user inputs (IR inputs, in
 * signature order) and which are parameters, buffers or tensor constants (IR
 * constants named by their fully qualified name). Each call node becomes a FOREIGN
 * node (conventions in fe_pt2_priv.h) whose outputs take the node's tensor names and
 * the recorded dtypes and shapes. Higher-order ops that only wrap a subgraph
 * (wrap_with_set_grad_enabled, a disabled wrap_with_autocast) are inlined; others
 * stay foreign nodes for the decomposer to report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/fe_pt2_graph.h"
#include "frontend/fe_pt2_views.h"

#define MAX_NODE_OUTPUTS 4096

static bool convert_graph(FePt2Build *b, FePt2Scope *s);

/* Where a node came from: its name, op and (when recorded) its Python stack or else
 * the innermost module it was called in. Strings live in the graph's arena. */
static IrOrigin node_origin(FePt2Build *b, json_t *node, const char *op_type)
{
    IrOrigin o;
    const char *name = fe_pt2_str(node, "name");
    o.name = ir_strdup(b->g, name ? name : "");
    o.op_type = ir_strdup(b->g, op_type);
    o.stack = NULL;
    json_t *md = fe_pt2_obj(node, "metadata");
    const char *st = fe_pt2_str(md, "stack_trace");
    const char *mod = fe_pt2_str(md, "nn_module_stack");
    if (st) {
        o.stack = ir_strdup(b->g, st);
    } else if (mod) {
        const char *last = strrchr(mod, ';');
        last = last ? last + 1 : mod;
        const char *c1 = strchr(last, ','), *c2 = strrchr(last, ',');
        if (c1 && c2 > c1) {
            char buf[512];
            snprintf(buf, sizeof buf, "in module '%.*s' (%.200s)", (int)(c2 - c1 - 1), c1 + 1,
                     c2 + 1);
            o.stack = ir_strdup(b->g, buf);
        }
    }
    return o;
}

/* The recorded type of tensor name in this graph level. */
static bool value_type(FePt2Build *b, FePt2Scope *s, const char *name, IrType *t,
                       const IrOrigin *o)
{
    json_t *meta = fe_pt2_obj(s->tensor_values, name);
    char err[256];
    if (!meta) {
        ir_error(b->g, o, "tensor '%s' has no entry in tensor_values", name);
        return false;
    }
    if (!fe_pt2_tensor_meta(meta, s->syms, t, NULL, NULL, err, sizeof err)) {
        ir_error(b->g, o, "tensor '%s': %s", name, err);
        return false;
    }
    return true;
}

/* Collect a node's output names (NULL for an as_none slot) into names (may be NULL
 * to count only). Returns the count or -1. */
static int output_names(FePt2Build *b, json_t *outs, const char **names, const IrOrigin *o)
{
    int n = 0;
    for (size_t i = 0; i < json_array_size(outs); i++) {
        json_t *val = NULL;
        const char *tag = fe_pt2_tag(json_array_get(outs, i), &val);
        bool list = tag && strcmp(tag, "as_tensors") == 0;
        size_t k = list ? json_array_size(val) : 1;
        if (!tag || (strcmp(tag, "as_tensor") && strcmp(tag, "as_none") && !list)) {
            ir_error(b->g, o, "output %zu has kind '%s'; only tensor outputs are supported",
                     i, tag ? tag : "(malformed)");
            return -1;
        }
        for (size_t j = 0; j < k; j++) {
            if (n >= MAX_NODE_OUTPUTS) {
                ir_error(b->g, o, "more than %d outputs", MAX_NODE_OUTPUTS);
                return -1;
            }
            const char *nm = NULL;
            if (strcmp(tag, "as_none") != 0) {
                nm = fe_pt2_str(list ? json_array_get(val, j) : val, "name");
                if (!nm) {
                    ir_error(b->g, o, "output %zu has no tensor name", i);
                    return -1;
                }
            }
            if (names)
                names[n] = nm;
            n++;
        }
    }
    return n;
}

/* Strip "torch.ops." and split off the namespace: "torch.ops.aten.relu_.default" gives
 * op_type "aten.relu_.default" and domain "aten". Other targets (Python callables)
 * keep their text and get domain "python". */
static void split_target(FePt2Build *b, const char *target, IrForeign *f)
{
    static const char pfx[] = "torch.ops.";
    f->opset = b->p->aten_opset;
    if (strncmp(target, pfx, sizeof pfx - 1) == 0 && strchr(target + sizeof pfx - 1, '.')) {
        const char *op = target + sizeof pfx - 1;
        f->op_type = ir_strdup(b->g, op);
        char ns[128];
        snprintf(ns, sizeof ns, "%.*s", (int)(strchr(op, '.') - op), op);
        f->domain = ir_strdup(b->g, ns);
    } else {
        f->op_type = ir_strdup(b->g, target);
        f->domain = "python";
    }
}

/* In-place ATen ops ("relu_", "add_"; not dunders like "__and__") mutate their first
 * argument: later uses of that name must see the result. */
static bool is_inplace(const char *op_type)
{
    const char *a = strchr(op_type, '.'), *z = strrchr(op_type, '.');
    if (!a || z <= a + 1)
        return false;
    return z[-1] == '_' && !(z - a > 3 && z[-2] == '_');
}

/* Give the outputs of node id their names and recorded types, and bind the names. */
static bool finish_outputs(FePt2Build *b, FePt2Scope *s, NodeId id, const char **names,
                           int nout, const IrOrigin *o)
{
    for (int k = 0; k < nout; k++) {
        ValId v = ir_node(b->g, id)->out[k];
        if (!names[k])
            continue;
        IrType t;
        if (!value_type(b, s, names[k], &t, o))
            return false;
        ir_val(b->g, v)->type = t;
        ir_set_name(b->g, v, names[k]);
        fe_pt2_bind(s, names[k], v);
    }
    return true;
}

/* One call node -> one FOREIGN node. */
static bool convert_call(FePt2Build *b, FePt2Scope *s, json_t *node, const IrForeign *f,
                         const IrOrigin *o, const char **names, int nout)
{
    FePt2Args *a = b->args;
    NodeId id = ir_add_foreign(b->g, f, a->in, a->nin, nout, a->attrs, a->nattrs, o);
    if (!finish_outputs(b, s, id, names, nout, o))
        return false;
    json_t *first = json_array_get(fe_pt2_arr(node, "inputs"), 0), *val = NULL;
    const char *tag = fe_pt2_tag(fe_pt2_obj(first, "arg"), &val);
    const char *self = tag && strcmp(tag, "as_tensor") == 0 ? fe_pt2_str(val, "name") : NULL;
    if (nout >= 1 && names[0])
        fe_pt2_view_note(s, f, self, names[0], id);
    if (is_inplace(f->op_type) && nout >= 1 && names[0] && self) {
        ValId v = ir_node(b->g, id)->out[0];
        fe_pt2_bind(s, self, v);
        return fe_pt2_view_writeback(b, s, self, v, o);
    }
    return true;
}

/* A new, empty name map for a scope; p->scopes holds it until the loader is done
 * (also when an allocation failure abandons the load). NULL if out of memory. */
static json_t *new_names(FePt2Build *b)
{
    json_t *m = json_object();
    if (m && json_array_append_new(b->p->scopes, m) != 0)
        return NULL;
    return m;
}

/* Whether a higher-order op only wraps its subgraph (and can be inlined). */
static bool inlinable_hop(const IrForeign *f, json_t *node)
{
    if (strcmp(f->op_type, "higher_order.wrap_with_set_grad_enabled") == 0)
        return true;
    if (strcmp(f->op_type, "higher_order.wrap_with_autocast") == 0) {
        /* (device_type, dtype, enabled, cache_enabled, graph, *args): inline only when
         * autocast is disabled, since it would change the dtypes inside. */
        json_t *en = json_array_get(fe_pt2_arr(node, "inputs"), 2), *val = NULL;
        const char *tag = fe_pt2_tag(fe_pt2_obj(en, "arg"), &val);
        return tag && strcmp(tag, "as_bool") == 0 && json_is_false(val);
    }
    return false;
}

/* Inline the subgraph of a wrapping higher-order op: its inputs are bound to the
 * node's tensor operands, the node's outputs to the subgraph's outputs. */
static bool inline_hop(FePt2Build *b, FePt2Scope *s, json_t *node, const IrOrigin *o,
                       const char **names, int nout)
{
    json_t *sub = NULL;
    json_t *ins = fe_pt2_arr(node, "inputs");
    for (size_t i = 0; i < json_array_size(ins) && !sub; i++) {
        json_t *val = NULL;
        const char *tag = fe_pt2_tag(fe_pt2_obj(json_array_get(ins, i), "arg"), &val);
        if (tag && strcmp(tag, "as_graph") == 0)
            sub = fe_pt2_obj(val, "graph");
    }
    if (!sub) {
        ir_error(b->g, o, "higher-order op without a subgraph");
        return false;
    }
    if (s->depth + 1 > FE_PT2_MAX_HOP_DEPTH) {
        ir_error(b->g, o, "subgraphs nested deeper than %d", FE_PT2_MAX_HOP_DEPTH);
        return false;
    }
    int nops = b->args->nin;
    ValId *ops = ir_alloc(b->g, (size_t)(nops + 1) * sizeof *ops);
    memcpy(ops, b->args->in, (size_t)nops * sizeof *ops);
    json_t *sin = fe_pt2_arr(sub, "inputs"), *sout = fe_pt2_arr(sub, "outputs");
    if (!sin || !sout || json_array_size(sin) != (size_t)nops ||
        json_array_size(sout) != (size_t)nout) {
        ir_error(b->g, o, "subgraph has %zu inputs and %zu outputs for %d operands and %d "
                 "results", json_array_size(sin), json_array_size(sout), nops, nout);
        return false;
    }
    FePt2Scope inner = {sub, new_names(b), fe_pt2_obj(sub, "tensor_values"), s->depth + 1,
                        new_names(b), s->syms};
    if (!inner.names || !inner.views) {
        ir_error(b->g, o, "out of memory");
        return false;
    }
    bool ok = true;
    for (int i = 0; i < nops && ok; i++) {
        json_t *val = NULL;
        const char *tag = fe_pt2_tag(json_array_get(sin, (size_t)i), &val);
        const char *nm = tag && strcmp(tag, "as_tensor") == 0 ? fe_pt2_str(val, "name") : NULL;
        if (!nm || ops[i] == IR_NONE) {
            ir_error(b->g, o, "subgraph input %d is not a tensor", i);
            ok = false;
        } else {
            fe_pt2_bind(&inner, nm, ops[i]);
        }
    }
    ok = ok && convert_graph(b, &inner);
    const char **subnames = ir_alloc(b->g, (size_t)(nout + 1) * sizeof *subnames);
    if (ok && output_names(b, sout, subnames, o) != nout) {
        ir_error(b->g, o, "subgraph outputs are not %d tensors", nout);
        ok = false;
    }
    for (int k = 0; k < nout && ok; k++) {
        ValId v = subnames[k] ? fe_pt2_lookup(b, &inner, subnames[k], o) : IR_NONE;
        if (v == IR_NONE && !subnames[k])
            ir_error(b->g, o, "subgraph output %d is not a tensor", k);
        ok = v != IR_NONE;
        if (ok && names[k])
            fe_pt2_bind(s, names[k], v);
    }
    return ok;
}

/* Whether every output of a node is a symbolic scalar (as_sym_int, as_sym_bool,
 * as_sym_float: aten.item, operator.le over them, sym_size of a data-dependent
 * size), and there is one. */
static bool sym_outputs_only(json_t *outs)
{
    size_t n = json_array_size(outs);
    for (size_t i = 0; i < n; i++) {
        json_t *val = NULL;
        const char *tag = fe_pt2_tag(json_array_get(outs, i), &val);
        if (!tag || strncmp(tag, "as_sym_", 7) != 0)
            return false;
    }
    return n > 0;
}

/* torch.export's run-time checks of its symbolic guards: a bundle's shapes are fixed
 * when it is compiled, so they check nothing there (torch.onnx drops them too). */
static bool is_runtime_assert(const char *op_type)
{
    static const char *const ops[] = {"aten._assert_scalar.", "aten.sym_constrain_range.",
                                      "aten.sym_constrain_range_for_size.",
                                      "aten._assert_async.", NULL};
    for (int i = 0; ops[i]; i++)
        if (strncmp(op_type, ops[i], strlen(ops[i])) == 0)
            return true;
    return false;
}

/* Convert one node of the graph. A run-time assert is skipped, and so is a node that
 * only computes symbolic scalars: its values are not bound, so a later node that needs
 * one as an argument is refused there, by name (an assert's condition is the usual
 * reader: an XLM asserting that its lengths fit). */
static bool convert_node(FePt2Build *b, FePt2Scope *s, json_t *node, size_t idx)
{
    const char *target = fe_pt2_str(node, "target");
    if (!target) {
        ir_diag_error(b->p->diag, "%s: node %zu has no target", b->p->json_entry, idx);
        return false;
    }
    IrForeign f;
    split_target(b, target, &f);
    IrOrigin o = node_origin(b, node, f.op_type);
    json_t *outs = fe_pt2_arr(node, "outputs");
    if (is_runtime_assert(f.op_type) || sym_outputs_only(outs))
        return true;
    int nout = output_names(b, outs, NULL, &o);
    if (nout < 0)
        return false;
    const char **names = ir_alloc(b->g, (size_t)(nout + 1) * sizeof *names);
    output_names(b, outs, names, &o);
    if (!fe_pt2_args(b, s, fe_pt2_arr(node, "inputs"), &o, b->args))
        return false;
    if (strcmp(f.domain, "higher_order") == 0 && inlinable_hop(&f, node))
        return inline_hop(b, s, node, &o, names, nout);
    return convert_call(b, s, node, &f, &o, names, nout);
}

/* Convert every node of one graph level, in order. Keeps going after an error in a
 * node so that independent problems are all reported, up to the diag's limit. */
static bool convert_graph(FePt2Build *b, FePt2Scope *s)
{
    json_t *nodes = fe_pt2_arr(s->graph, "nodes");
    if (!nodes || !s->tensor_values) {
        ir_diag_error(b->p->diag, "%s: graph without 'nodes' or 'tensor_values'",
                      b->p->json_entry);
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        if (!convert_node(b, s, json_array_get(nodes, i), i))
            ok = false;
        if (!ok && b->p->diag->nerrors >= 20)
            break;
    }
    return ok;
}

/* One entry of input_specs: a user input or a parameter/buffer/constant. */
/* The symbolic axes of user input v (tensor nm): each one symbol, or a multiple m of
 * one (a bounded symbolic dimension for pass_symdim, named after it, "m*s0" taking every
 * m-th size); another size derived from symbols is refused. */
static bool input_symbols(FePt2Build *b, FePt2Scope *s, const char *nm, ValId v,
                          const IrOrigin *o)
{
    json_t *sizes = fe_pt2_arr(fe_pt2_obj(s->tensor_values, nm), "sizes");
    for (size_t a = 0; a < json_array_size(sizes); a++) {
        json_t *x = NULL;
        const char *tag = fe_pt2_tag(json_array_get(sizes, a), &x), *sym = NULL;
        const char *e = tag && !strcmp(tag, "as_expr") ? fe_pt2_str(x, "expr_str") : NULL;
        int64_t bound;
        if (!e)
            continue;
        int64_t mul = 1;
        if (!fe_pt2_sym_eval(s->syms, e, &bound, &sym, NULL) ||
            (!sym && !fe_pt2_sym_multiple(s->syms, e, &mul, &sym))) {
            ir_error(b->g, o, "unsupported: input '%s' axis %zu has the symbolic size %.160s "
                     "(only a dimension of its own or a multiple of one, such as a Dim or 4 * "
                     "a Dim, is supported)", nm, a, e);
            return false;
        }
        for (int k = 0; k < s->syms->n; k++) {
            const FePt2Sym *y = &s->syms->v[k];
            if (strcmp(y->name, sym) || y->min == y->max)
                continue;                  /* a size fixed (--input-shape): static */
            char name[48];                 /* "4*s39": a symbol of its own, every 4th size */
            snprintf(name, sizeof name, mul > 1 ? "%lld*%s" : "%.0lld%s", (long long)mul, sym);
            ir_sym_add(b->g, v, (int)a, y->min * mul, bound, name);
            b->g->symdims[b->g->nsymdims - 1].step = mul > 1 ? mul : y->step;
        }
    }
    return true;
}

static bool add_placeholder(FePt2Build *b, FePt2Scope *s, json_t *spec, size_t i)
{
    json_t *val = NULL;
    const char *kind = fe_pt2_tag(spec, &val);
    const char *ent = b->p->json_entry;
    static const char *const fqn_key[][2] = {{"parameter", "parameter_name"},
                                              {"buffer", "buffer_name"},
                                              {"tensor_constant", "tensor_constant_name"}};
    IrOrigin o = {"", "placeholder", NULL};
    IrType t;
    if (kind && strcmp(kind, "user_input") == 0) {
        json_t *arg = NULL;
        const char *tag = fe_pt2_tag(fe_pt2_obj(val, "arg"), &arg);
        const char *nm = tag && strcmp(tag, "as_tensor") == 0 ? fe_pt2_str(arg, "name") : NULL;
        if (!nm) {
            ir_diag_error(b->p->diag, "%s: user input %zu is not a tensor (%s)", ent, i,
                          tag ? tag : "malformed");
            return false;
        }
        o.name = nm;
        if (!value_type(b, s, nm, &t, &o))
            return false;
        ValId v = ir_add_input(b->g, nm, &t);
        fe_pt2_bind(s, nm, v);
        return input_symbols(b, s, nm, v, &o);
    }
    for (size_t k = 0; kind && k < 3; k++) {
        if (strcmp(kind, fqn_key[k][0]) != 0)
            continue;
        const char *nm = fe_pt2_str(fe_pt2_obj(val, "arg"), "name");
        const char *fqn = fe_pt2_str(val, fqn_key[k][1]);
        if (!nm || !fqn) {
            ir_diag_error(b->p->diag, "%s: input spec %zu (%s) is malformed", ent, i, kind);
            return false;
        }
        o.name = nm;
        if (!value_type(b, s, nm, &t, &o))
            return false;
        ValId v = fe_pt2_load_tensor(b->p, fqn, &t);
        if (v != IR_NONE)
            fe_pt2_bind(s, nm, v);
        return v != IR_NONE;
    }
    ir_diag_error(b->p->diag, "%s: input spec %zu of kind '%s' is not supported", ent, i,
                  kind ? kind : "(malformed)");
    return false;
}

/* Graph outputs: the user outputs of output_specs, in order. Mutations of buffers or
 * inputs are state updates that inference does not need; they are left out. */
static bool add_outputs(FePt2Build *b, FePt2Scope *s, json_t *specs)
{
    IrOrigin o = {"", "output", NULL};
    int nuser = 0;
    for (size_t i = 0; i < json_array_size(specs); i++) {
        json_t *val = NULL, *arg = NULL;
        const char *kind = fe_pt2_tag(json_array_get(specs, i), &val);
        if (kind && strcmp(kind, "user_output") != 0 && strcmp(kind, "loss_output") != 0) {
            ir_diag_warn(b->p->diag, "%s: output %zu (%s) is ignored", b->p->json_entry, i,
                         kind);
            continue;
        }
        const char *tag = fe_pt2_tag(fe_pt2_obj(val, "arg"), &arg);
        const char *nm = tag && strcmp(tag, "as_tensor") == 0 ? fe_pt2_str(arg, "name") : NULL;
        if (!kind || !nm) {
            ir_diag_error(b->p->diag, "%s: output %zu is not a tensor (%s)", b->p->json_entry,
                          i, tag ? tag : "malformed");
            return false;
        }
        ValId v = fe_pt2_lookup(b, s, nm, &o);
        if (v == IR_NONE)
            return false;
        ir_add_output(b->g, v);
        nuser++;
    }
    if (nuser == 0)
        ir_diag_error(b->p->diag, "%s: the program has no tensor outputs", b->p->json_entry);
    return nuser > 0;
}

/* Convert graph_module (see the file comment). */
bool fe_pt2_build(FePt2 *p, json_t *gm)
{
    json_t *graph = fe_pt2_obj(gm, "graph"), *sig = fe_pt2_obj(gm, "signature");
    json_t *ispecs = fe_pt2_arr(sig, "input_specs"), *ospecs = fe_pt2_arr(sig, "output_specs");
    if (!graph || !ispecs || !ospecs) {
        ir_diag_error(p->diag, "%s: graph_module lacks graph or signature", p->json_entry);
        return false;
    }
    json_t *gin = fe_pt2_arr(graph, "inputs");
    if (!gin || json_array_size(gin) != json_array_size(ispecs)) {
        ir_diag_error(p->diag, "%s: %zu graph inputs but %zu input specs", p->json_entry,
                      json_array_size(gin), json_array_size(ispecs));
        return false;
    }
    FePt2Build b = {p, p->g, malloc(sizeof(FePt2Args))};
    p->scratch[2] = b.args; /* freed by the loader if an allocation fails */
    FePt2Scope s = {graph, new_names(&b), fe_pt2_obj(graph, "tensor_values"), 0,
                    new_names(&b), &p->syms};
    bool ok = b.args && s.names && s.views && s.tensor_values;
    if (!ok)
        ir_diag_error(p->diag, "%s: no tensor_values (or out of memory)", p->json_entry);
    for (size_t i = 0; ok && i < json_array_size(ispecs); i++)
        ok = add_placeholder(&b, &s, json_array_get(ispecs, i), i);
    ok = ok && convert_graph(&b, &s);
    ok = ok && add_outputs(&b, &s, ospecs);
    free(b.args);
    p->scratch[2] = NULL;
    return ok && !ir_failed(p->g);
}
