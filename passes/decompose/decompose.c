/* decompose.c: pass_decompose, lowering of FOREIGN (frontend) nodes to core ops.
 *
 * Every foreign node is looked up in the dispatch table of its frontend: ONNX
 * domains by (domain, op_type, opset) in onnx/onnx_table.c, domain "aten" (.pt2
 * archives) by op name in aten/aten_table.c; the handlers live beside each table,
 * one file per operator family. Unsupported operators are all reported at once
 * before anything is rewritten: one error per distinct operator, naming the first
 * node that uses it. Nodes are processed in topological order, so a handler always
 * sees typed core values as inputs, and constant folding (g->fold_consts) turns
 * shape subgraphs into constants before the nodes that need them.
 */
#include <stdio.h>
#include <string.h>

#include "dec.h"
#include "passes/pass.h"

/* Domain as used in the tables: "ai.onnx" and NULL mean "". */
static const char *norm_domain(const char *d)
{
    return (!d || strcmp(d, "ai.onnx") == 0) ? "" : d;
}

/* Handler for a foreign node from the table of its frontend, or NULL. Every
 * "aten" node goes through dec_aten, which checks the recorded output types. */
static DecFn dec_lookup(const IrForeign *f)
{
    const char *dom = norm_domain(f->domain);
    if (!f->op_type)
        return NULL;
    if (strcmp(dom, "aten") == 0)
        return f->opset >= 0 && f->opset <= INT32_MAX && dec_aten_find(f->op_type) ? dec_aten
                                                                                   : NULL;
    return dec_onnx_find(dom, f->op_type, f->opset);
}

/* Report "unsupported operator NAME (opset N)" for node n; the domain prefixes the
 * name unless the op type already carries it ("aten.relu.default"). */
static void report_one(IrGraph *g, const IrNode *n)
{
    const char *dom = norm_domain(n->foreign.domain);
    const char *op = n->foreign.op_type ? n->foreign.op_type : "?";
    size_t dl = strlen(dom);
    bool prefixed = dl == 0 || (strncmp(op, dom, dl) == 0 && op[dl] == '.');
    char ver[40] = "";
    if (n->foreign.opset > 0)
        snprintf(ver, sizeof ver, " (opset %lld)", (long long)n->foreign.opset);
    ir_error(g, &n->origin, "unsupported operator %s%s%s%s", prefixed ? "" : dom,
             prefixed ? "" : ".", op, ver);
}

/* Whether a and b are the same operator (domain and op type). */
static bool same_op(const IrNode *a, const IrNode *b)
{
    return strcmp(norm_domain(a->foreign.domain), norm_domain(b->foreign.domain)) == 0 &&
           strcmp(a->foreign.op_type ? a->foreign.op_type : "",
                  b->foreign.op_type ? b->foreign.op_type : "") == 0;
}

/* Operators already reported (the first node of each). */
typedef struct {
    const IrNode *first[256];
    int n;
} Reported;

/* Report the unsupported operators of graph `where` and of the bodies (Loop/Scan
 * subgraphs) of its nodes, each operator once, on g. Returns how many were new. If
 * branches are left to their inlining: a branch that a constant condition rules out
 * may hold operators that are never compiled. */
static int report_in(IrGraph *g, IrGraph *where, Reported *r, int depth)
{
    int nbad = 0;
    for (uint32_t i = 0; i < where->nnodes; i++) {
        const IrNode *n = &where->nodes[i];
        if (n->dead || n->op != IR_OP_FOREIGN)
            continue;
        bool seen = dec_lookup(&n->foreign) != NULL;
        for (int k = 0; k < r->n && !seen; k++)
            seen = same_op(r->first[k], n);
        if (!seen) {
            report_one(g, n);
            nbad++;
            if (r->n < (int)(sizeof r->first / sizeof r->first[0]))
                r->first[r->n++] = n;
        }
        bool branches = n->foreign.op_type && strcmp(n->foreign.op_type, "If") == 0;
        for (int k = 0; k < n->nattrs && depth < 64 && !branches; k++)
            if (n->attrs[k].kind == IR_ATTR_GRAPH && n->attrs[k].graph)
                nbad += report_in(g, n->attrs[k].graph, r, depth + 1);
    }
    return nbad;
}

/* Report every unsupported operator once (also inside subgraphs), naming the first
 * node using it. Returns the number of distinct unsupported operators. */
static int report_unsupported(IrGraph *g)
{
    Reported r = {.n = 0};
    return report_in(g, g, &r, 0);
}

/* Whether any input of n is untyped (an earlier node failed): skip it quietly.
 * Sequences and optionals (compile-time lists in seqs) have no tensor type. */
static bool has_untyped_input(IrGraph *g, const IrNode *n, const DecSeqTab *seqs)
{
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] != IR_NONE && ir_vtype(g, n->in[i])->dtype == IR_DT_UNDEF &&
            !dec_seq_known(seqs, n->in[i]))
            return true;
    return false;
}

typedef struct {
    ValId *remap;                          /* old value -> replacement */
    uint32_t nremap;
    uint32_t *uses;
    uint32_t nuses;
    DecSeqTab *seqs;                       /* sequences and optionals (onnx_sequence.c) */
    DecQdqTab *qdq;                        /* dequantized values (onnx_qdq.c) */
    const char **names0;                   /* value names before the pass (nremap) */
    bool *is_out;                          /* old value is a graph output (nremap); the
                                              outputs change only after the nodes */
    bool stale_warned;                     /* stale_hint has warned */
} DecState;

/* Bind the old output value `old` to the new value `nv` made for it. A value made
 * by this handler takes over the old value's name, so dumps keep the model's names
 * (graph outputs are renamed by fix_outputs). */
static void bind_output(IrGraph *g, DecState *s, ValId old, ValId nv, uint32_t first_new)
{
    s->remap[old] = nv;
    if (nv >= first_new && nv != old && !s->is_out[old]) {
        const char *oname = g->vals[old].name, *nname = g->vals[nv].name;
        ir_set_name(g, old, "");
        ir_set_name(g, nv, oname);
        ir_set_name(g, old, nname);
    }
}

/* "f32[1,2,3]" into buf. */
static const char *type_str(const IrType *t, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "%s[", ir_dtype_name(t->dtype));
    for (int i = 0; i < t->rank && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
    return buf;
}

/* Whether a (declared) and b (computed, data-dependent along axis) agree but there. */
static bool same_but_axis(const IrType *a, const IrType *b, int axis)
{
    if (a->dtype != b->dtype || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (i != axis && a->dims[i] != b->dims[i])
            return false;
    return true;
}

/* Whether declared type a of old, which disagrees with computed type b, is a stale
 * value_info hint to ignore: in a model with bounded symbolic dimensions, an internal
 * value (not a graph output) of the same dtype and rank. Such a model's value_info
 * often keeps the sizes of the export (its inputs made dynamic afterwards by editing
 * their shapes: onnx.tools.update_model_dims leaves value_info as it was), so a static
 * size stands where a symbol's bound is computed; onnxruntime merges those leniently.
 * One warning per graph, naming the first such value. A graph output of the same dtype
 * and rank whose declared sizes disagree (converters such as onnxmltools declare a
 * classifier's label [1] whatever the batch) is taken at its computed shape, with a
 * warning naming it. */
static bool stale_hint(IrGraph *g, DecState *s, const IrNode *n, ValId old, const IrType *a,
                       const IrType *b)
{
    if (old < s->nremap && s->is_out[old] && a->dtype == b->dtype && a->rank == b->rank) {
        char sa[160], sb[160];               /* a graph output's declared sizes: converters */
        ir_diag_warn(g->diag, "output '%s' is declared %s but computes to %s; the computed "
                     "shape is used, as onnxruntime does", g->vals[old].name,
                     type_str(a, sa, sizeof sa), type_str(b, sb, sizeof sb));
        return true;
    }
    if (!g->nsymdims || old >= s->nremap || s->is_out[old] || a->dtype != b->dtype ||
        a->rank != b->rank)
        return false;
    if (!s->stale_warned) {
        char sa[160], sb[160];
        ir_diag_warn(g->diag, "node '%s' (%s): value_info declares '%s' as %s but it computes "
                     "to %s at the bounds of the symbolic dimensions; value_info shapes that "
                     "disagree are ignored (stale sizes of the export)",
                     n->origin.name ? n->origin.name : "", n->foreign.op_type,
                     g->vals[old].name, type_str(a, sa, sizeof sa), type_str(b, sb, sizeof sb));
        s->stale_warned = true;
    }
    return true;
}

/* Check that a decomposition agrees with a type the frontend inferred. A result whose
 * extent along one axis is data-dependent (ir_dyn_add) may differ along that axis; one
 * whose whole shape is computed at run time (ir_dyn_add_shape) keeps only its rank, and
 * so does a result computed from one at the same capacity (recorded with the same dims;
 * pass_dynamic refuses it unless only pointwise ops made it). */
static bool check_type(IrGraph *g, DecState *s, const IrNode *n, ValId old, ValId nv)
{
    const IrType *a = ir_vtype(g, old), *b = ir_vtype(g, nv);
    const IrDynDim *dd = ir_dyn_find(g, nv);
    for (int i = 0; i < n->nin && (!dd || dd->axis != IR_DYN_SHAPE); i++) {
        const IrDynDim *src = n->in[i] != IR_NONE ? ir_dyn_find(g, n->in[i]) : NULL;
        if (!src || src->axis != IR_DYN_SHAPE)
            continue;
        if (dd || b->rank != ir_vtype(g, n->in[i])->rank ||
            ir_type_numel(b) != ir_type_numel(ir_vtype(g, n->in[i])) ||
            (a->dtype != IR_DT_UNDEF && a->rank != b->rank)) {
            dec_dynamic_err(&(DecCtx){.g = g, .n = n, .o = &n->origin},
                            ir_dyn_source_input(g, src->count), "shape");
            return false;
        }
        ir_dyn_add_shape(g, nv, src->count);   /* at the same capacity: pass_dynamic
                                                  checks that only pointwise ops made it */
        return true;
    }
    if (a->dtype == IR_DT_UNDEF || b->dtype == IR_DT_UNDEF || ir_type_eq(a, b) ||
        (dd && dd->axis == IR_DYN_SHAPE && a->dtype == b->dtype && a->rank == b->rank) ||
        (dd && dd->axis >= 0 && same_but_axis(a, b, dd->axis)) || stale_hint(g, s, n, old, a, b))
        return true;
    char sa[160], sb[160];
    ir_error(g, &n->origin, "output '%s' computes to %s but the model declares %s",
             g->vals[old].name, type_str(b, sb, sizeof sb), type_str(a, sa, sizeof sa));
    return false;
}

/* Run the handler of c->n; c->out receives its results. Used for the graph's own
 * nodes and, by onnx/onnx_control.c, for the nodes of inlined subgraphs. */
bool dec_run(DecCtx *c)
{
    IrGraph *g = c->g;
    const IrNode *n = c->n;
    DecFn fn = dec_lookup(&n->foreign);
    if (!fn) {
        report_one(g, n);
        return false;
    }
    if (n->nout > DEC_MAX_OUT) {
        ir_error(g, &n->origin, "too many outputs (%d)", n->nout);
        return false;
    }
    for (int i = 0; i < DEC_MAX_OUT; i++)
        c->out[i] = IR_NONE;
    if (!dec_seq_check_inputs(c))
        return false;
    int nerr = g->diag ? g->diag->nerrors : 0;
    uint32_t first = g->nnodes;
    ValId first_val = g->nvals;
    bool ok = false;
    if (!dec_qdq_move(c, fn, &ok))
        ok = fn(c);
    ok = ok && !(g->diag && g->diag->nerrors > nerr);
    if (ok)
        pass_halfwiden_group(g, first, first_val, c->out, n->nout);
    return ok && !(g->diag && g->diag->nerrors > nerr);
}

/* A node using a value whose whole shape is computed at run time (at its capacity
 * view [numel, 1, ...]) may have other operands of one element only (or that value's
 * shape; CastLike's second input, of which only the dtype is used): anything else
 * would be combined with the capacity view, not the actual shape. Refuses it with the
 * message naming the input the shape comes from. */
static bool shaped_operands_ok(DecCtx *c)
{
    const IrNode *n = c->n;
    const IrDynDim *src = NULL;
    for (int i = 0; i < n->nin && !src; i++) {
        const IrDynDim *d = n->in[i] != IR_NONE ? ir_dyn_find(c->g, n->in[i]) : NULL;
        src = d && d->axis == IR_DYN_SHAPE ? d : NULL;
    }
    bool type_only1 = strcmp(n->foreign.op_type, "CastLike") == 0;  /* reads its dtype */
    for (int i = 0; i < n->nin && src; i++) {
        ValId v = n->in[i];
        const IrDynDim *d = v != IR_NONE ? ir_dyn_find(c->g, v) : NULL;
        if (v == IR_NONE || ir_type_numel(ir_vtype(c->g, v)) == 1 || (i == 1 && type_only1) ||
            (d && d->axis == IR_DYN_SHAPE && d->count == src->count))
            continue;
        dec_dynamic_err(c, ir_dyn_source_input(c->g, src->count), "shape");
        return false;
    }
    return true;
}

/* Decompose one foreign node; false if it failed (errors already reported).
 * in_names: the names its inputs had before the pass (for captured values). */
static bool decompose_node(IrGraph *g, DecState *s, const IrNode *n,
                           const char *const *in_names)
{
    DecCtx c = {.g = g, .n = n, .o = &n->origin, .opset = n->foreign.opset,
                .uses = s->uses, .nuses = s->nuses, .seqs = s->seqs, .outg = g,
                .in_names = in_names, .qdq = s->qdq};
    uint32_t first_new = g->nvals;
    if (!shaped_operands_ok(&c) || !dec_run(&c))
        return false;
    for (int i = 0; i < n->nout; i++) {
        ValId old = n->out[i];
        if (old == IR_NONE)
            continue;
        if (c.out[i] == IR_NONE) {
            if (dec_out_used(&c, i)) {
                ir_error(g, &n->origin, "unsupported: output %d ('%s') of %s", i,
                         g->vals[old].name, n->foreign.op_type);
                return false;
            }
            continue;
        }
        if (!check_type(g, s, n, old, c.out[i]))
            return false;
        bind_output(g, s, old, c.out[i], first_new);
    }
    return true;
}

/* Replacement of value v (ctx: the DecState): itself unless an old value replaced. */
static ValId remapped(void *ctx, ValId v)
{
    const DecState *s = ctx;
    return v < s->nremap ? s->remap[v] : v;
}

/* Point graph outputs at their replacements; ir_replace_outputs gives a replacement
 * the output's name when it is an internal value. */
static void fix_outputs(IrGraph *g, DecState *s)
{
    ir_replace_outputs(g, remapped, s);
}

/* The names the inputs of n had before the pass, when n holds a subgraph (whose
 * captured inputs are named like the values they capture); NULL otherwise. */
static const char *const *input_names(IrGraph *g, const DecState *s, const IrNode *n)
{
    bool sub = false;
    for (int k = 0; k < n->nattrs; k++)
        sub |= n->attrs[k].kind == IR_ATTR_GRAPH;
    if (!sub)
        return NULL;
    const char **nm = ir_scratch(g, ((size_t)n->nin + 1) * sizeof *nm);
    for (int k = 0; k < n->nin; k++)
        nm[k] = n->in[k] == IR_NONE ? "" : n->in[k] < s->nremap ? s->names0[n->in[k]]
                                                                : g->vals[n->in[k]].name;
    return nm;
}

/* Walk the detached node list: re-add core nodes, decompose foreign ones. */
static bool decompose_all(IrGraph *g, DecState *s, IrNode *old, uint32_t nold)
{
    bool ok = true;
    for (uint32_t i = 0; i < nold; i++) {
        IrNode *n = &old[i];
        if (n->dead)
            continue;
        const char *const *in_names = input_names(g, s, n);
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] != IR_NONE && n->in[k] < s->nremap)
                n->in[k] = s->remap[n->in[k]];
        if (has_untyped_input(g, n, s->seqs)) {
            ok = false; /* an earlier node failed and has been reported */
            continue;
        }
        if (n->op != IR_OP_FOREIGN) {
            ir_readd_node(g, n);
            continue;
        }
        if (!decompose_node(g, s, n, in_names))
            ok = false;
    }
    return ok;
}

/* The pass: foreign ops -> core ops. */
bool pass_decompose(IrGraph *g, const PassOptions *opt)
{
    if (report_unsupported(g) > 0)
        return false;
    bool fold = g->fold_consts;
    g->fold_consts = true;
    g->half_native = pass_prec_half(opt->precision);
    g->keep_half_weights = !g->half_native;    /* resolved by pass_halfweight */

    DecState s = {0};
    s.uses = ir_use_counts(g);
    s.nuses = g->nvals;
    s.nremap = g->nvals;
    s.remap = ir_scratch(g, sizeof(ValId) * (s.nremap ? s.nremap : 1));
    s.seqs = dec_seq_new(g);
    s.qdq = dec_qdq_new(g);
    s.names0 = ir_scratch(g, sizeof(char *) * (s.nremap ? s.nremap : 1));
    s.is_out = ir_scratch(g, s.nremap + 1);
    for (uint32_t v = 0; v < s.nremap; v++) {
        s.remap[v] = v;
        s.names0[v] = g->vals[v].name;
    }
    for (uint32_t i = 0; i < g->noutputs; i++)
        s.is_out[g->outputs[i]] = true;

    uint32_t nold = 0;
    IrNode *old = ir_rewrite_begin(g, &nold);
    bool ok = decompose_all(g, &s, old, nold);
    fix_outputs(g, &s);
    ok &= dec_seq_expand_outputs(g, s.seqs);
    g->fold_consts = fold;
    return ok && !ir_failed(g);
}
