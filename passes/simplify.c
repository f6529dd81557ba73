/* simplify.c: pass_simplify, algebraic and data-movement cleanups on core ops.
 *
 *  - identities: a node whose op's ident hook (ops.def, ir/ir_ident.c) says it passes
 *    an input through unchanged: reshape/expand/slice to the same shape, identity
 *    transposes, casts to the same dtype, zero pads, one-input concats, x*1, x+0, ...;
 *  - chains: reshape(reshape(x)) -> reshape(x), transpose(transpose(x)) -> one
 *    transpose with the composed permutation;
 *  - CSE: a node identical to an earlier one (op, inputs, attributes) reuses it;

 *  - a pointwise node reading a reshape that only regroups leading dims (adds unit
 *    dims, or splits [b * s, n] into [b, s, n]) computes on the reshape's input, the
 *    reshape moving to its result (sink_reshape);
 *  - row selections (a SLICE of one axis, a GATHER of constant evenly spaced indices)
 *    pushed above the row-wise ops and contractions that compute only for them, so
 *    only the selected rows are computed (pass_rowsel, rowsel.c);
 *  - rotary embeddings x * C + concat(-x2, x1) * S computed per half of the last axis,
 *    or as x * C + (x @ R) * S with a signed permutation R where half rows are not
 *    whole sticks, without the NEG and CONCAT kernels (pass_rotary, rotary.c);
 *  - grouped-query attention's repeats of K and V (copy kernels) replaced by products
 *    and row-wise ops on the head axis split into [groups, repeats] (pass_gqa, gqa.c);
 *  - matrix products of one activation by constant weights of one depth (attention's
 *    Q, K, V projections) merged into one product (pass_siblings, siblings.c);
 *  - products by a 2-d B of an A with few rows per batch item computed on A viewed as
 *    2-d (pass_flatmm, flatmm.c).
 * Values that are graph outputs are never replaced, so output names stay. Nodes left
 * without users are removed by pass_dce.
 */
#include <stdlib.h>
#include <string.h>

#include "pass.h"

typedef struct {
    ValId *remap;                          /* value -> replacement */
    bool *is_out;                          /* value is a graph output */
    uint32_t nvals;                        /* entries of remap / is_out */
    NodeId *tab;                           /* CSE hash table over new nodes */
    uint32_t cap;                          /* power of two */
    uint32_t *uses;                        /* old value -> uses by old nodes and outputs */
    uint8_t *epi;                          /* new value made by sink_reshape: 1 used
                                              once (its chain goes on), 2 more; 0 other */
    uint32_t nvals2;                       /* entries of epi */
} Simp;

/* Value that node n (one output) is equivalent to (its op's ident hook), or IR_NONE. */
static ValId identity_of(IrGraph *g, const IrNode *n)
{
    return n->nout == 1 ? ir_op_info[n->op].ident(g, n) : IR_NONE;
}

/* Producer (in the new list) of value v when it is a live core node of op `op`. */
static IrNode *producer(IrGraph *g, ValId v, IrOp op)
{
    IrValue *val = ir_val(g, v);
    if (val->kind != IR_VAL_ACT || val->def == IR_NONE || val->def >= g->nnodes)
        return NULL;
    IrNode *p = &g->nodes[val->def];
    return (!p->dead && p->op == op) ? p : NULL;
}

/* Fold reshape(reshape(x)) and transpose(transpose(x)) into one node: edits n (a
 * detached node, arena memory) in place. */
static void merge_chain(IrGraph *g, IrNode *n)
{
    if (n->op == IR_OP_RESHAPE) {
        IrNode *p = producer(g, n->in[0], IR_OP_RESHAPE);
        if (p)
            n->in[0] = p->in[0];
    } else if (n->op == IR_OP_TRANSPOSE) {
        IrNode *p = producer(g, n->in[0], IR_OP_TRANSPOSE);
        const int64_t *po, *pi;
        int k = ir_attr_get_ints(n, "perm", &po);
        if (!p || ir_attr_get_ints(p, "perm", &pi) != k || k > IR_MAX_RANK)
            return;
        int64_t comp[IR_MAX_RANK];
        for (int i = 0; i < k; i++)
            comp[i] = pi[po[i]];
        IrAttr *attrs = ir_alloc(g, sizeof(IrAttr) * n->nattrs);
        for (int i = 0; i < n->nattrs; i++)
            attrs[i] = strcmp(n->attrs[i].name, "perm") == 0 ? ir_attr_ints(g, "perm", comp, k)
                                                            : n->attrs[i];
        n->attrs = attrs;
        n->in[0] = p->in[0];
    }
}

/* Leading dims that the RESHAPE producing v (if any) regroups: its input *src and v
 * share their trailing dims from some axis on (at least the last one), and the dims
 * before differ only in how they are grouped (v's [2, 6, 128] of a [12, 128], or
 * [1, 5, 128] of a [5, 128]). Returns the count of v's leading dims, 0 when v is not
 * such a reshape. */
static int regroup_prefix(IrGraph *g, ValId v, ValId *src)
{
    IrNode *p = v == IR_NONE ? NULL : producer(g, v, IR_OP_RESHAPE);
    if (!p)
        return 0;
    const IrType *x = ir_vtype(g, p->in[0]), *o = ir_vtype(g, v);
    int sfx = 0;                           /* shared trailing dims */
    while (sfx < x->rank && sfx < o->rank &&
           x->dims[x->rank - 1 - sfx] == o->dims[o->rank - 1 - sfx])
        sfx++;
    if (sfx == 0 || sfx == o->rank)
        return 0;
    *src = p->in[0];
    return o->rank - sfx;
}

/* Whether v (in the new list) may start or continue a sunk epilogue: a contraction's
 * result, a pointwise function of one, or a single-use value sink_reshape made
 * (a value used twice, such as a residual stream read by a norm, ends the chain, so a
 * norm's nodes keep their shape and stay one row group). */
static bool epi_source(IrGraph *g, const Simp *s, ValId v)
{
    NodeId p = ir_val(g, v)->def;
    if (p == IR_NONE || p >= g->nnodes)
        return false;
    const IrNode *nd = &g->nodes[p];
    if (v < s->nvals2 && s->epi[v])
        return s->epi[v] == 1;
    if (ir_op_info[nd->op].cls == IR_CLS_CONTRACT)
        return true;
    for (int k = 0; k < nd->nin && ir_op_info[nd->op].cls == IR_CLS_ELEM; k++) {
        NodeId q = nd->in[k] == IR_NONE ? IR_NONE : ir_val(g, nd->in[k])->def;
        if (q != IR_NONE && q < g->nnodes && ir_op_info[g->nodes[q].op].cls == IR_CLS_CONTRACT)
            return true;
    }
    return false;
}

/* Whether a and b have the same dims. */
static bool same_dims(const IrType *a, const IrType *b)
{
    return a->rank == b->rank && !memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank);
}

/* Input v of a pointwise node of shape o (d leading dims regrouped) as an operand of
 * the same node computed on shape x: a value of shape o through the reshape that made
 * it from x, or viewed as x when it is stored whole (no view of its own to compose);
 * a value broadcast over o's leading dims without them. IR_NONE when neither. */
static ValId regrouped_operand(IrGraph *g, ValId v, const IrType *o, int d, const IrType *x,
                               const IrOrigin *og)
{
    IrType t = *ir_vtype(g, v);
    ValId src;
    if (same_dims(&t, o)) {
        if (regroup_prefix(g, v, &src) == d && same_dims(ir_vtype(g, src), x))
            return src;
        NodeId p = ir_val(g, v)->def;
        IrOp op = p == IR_NONE ? IR_OP_FOREIGN : g->nodes[p].op;
        if (op == IR_OP_RESHAPE || op == IR_OP_TRANSPOSE || op == IR_OP_SLICE ||
            op == IR_OP_EXPAND || op == IR_OP_GATHER)
            return IR_NONE;
        return ir_reshape(g, v, x->dims, x->rank, og);
    }
    int e = t.rank - (o->rank - d);        /* its dims over o's leading dims */
    for (int i = 0; i < e; i++)
        if (t.dims[i] != 1)
            return IR_NONE;
    return e > 0 ? ir_reshape(g, v, t.dims + e, t.rank - e, og) : v;
}

/* Pointwise node n reading a reshape that regroups its leading dims (regroup_prefix)
 * into n's shape: the same op on the reshape's input (the other inputs viewed alike,
 * regrouped_operand), then the reshape of its result, which is returned (IR_NONE: n
 * is not such a node). A matrix product flattened to 2-d and viewed back (gpt2's
 * Conv1D: addmm, view to [batch, seq, n]) thus reaches its pointwise epilogue (bias,
 * GELU, residual add) without a view between them, and fuse makes them one kernel.
 * The values computed are the same. */
static ValId sink_reshape(IrGraph *g, Simp *s, const IrNode *n)
{
    ValId in[8], src = IR_NONE;
    int d = 0;
    if (ir_op_info[n->op].cls != IR_CLS_ELEM || n->nout != 1 || n->nin > 8)
        return IR_NONE;
    IrType o = *ir_vtype(g, n->out[0]);            /* copies: adding nodes moves types */
    for (int k = 0; k < n->nin && !d; k++) {
        ValId v;
        int dk = regroup_prefix(g, n->in[k], &v);
        if (dk && epi_source(g, s, v) && same_dims(ir_vtype(g, n->in[k]), &o)) {
            d = dk;
            src = v;
        }
    }
    if (!d)
        return IR_NONE;
    IrType x = *ir_vtype(g, src);
    for (int k = 0; k < n->nin; k++) {
        in[k] = n->in[k];
        if (n->in[k] != IR_NONE &&
            (in[k] = regrouped_operand(g, n->in[k], &o, d, &x, &n->origin)) == IR_NONE)
            return IR_NONE;
    }
    NodeId m = ir_add_node(g, n->op, in, n->nin, n->attrs, n->nattrs, &n->origin);
    ValId r = ir_node(g, m)->out[0];
    if (r < s->nvals2)
        s->epi[r] = n->out[0] < s->nvals && s->uses[n->out[0]] == 1 ? 1 : 2;
    return ir_reshape(g, r, o.dims, o.rank, &n->origin);
}

/* Hash of a node's op, inputs and attributes. */
static uint32_t node_hash(const IrNode *n)
{
    uint32_t h = 2166136261u ^ (uint32_t)n->op;
    for (int i = 0; i < n->nin; i++)
        h = (h ^ n->in[i]) * 16777619u;
    for (int i = 0; i < n->nattrs; i++) {
        const IrAttr *a = &n->attrs[i];
        h = (h ^ (uint32_t)a->kind) * 16777619u;
        h = (h ^ (uint32_t)a->i) * 16777619u;
        for (uint32_t k = 0; a->kind == IR_ATTR_INTS && k < a->n; k++)
            h = (h ^ (uint32_t)a->ints[k]) * 16777619u;
    }
    return h;
}

/* Whether two attributes are equal. */
static bool attr_eq(const IrAttr *a, const IrAttr *b)
{
    if (a->kind != b->kind || strcmp(a->name, b->name) != 0)
        return false;
    switch (a->kind) {
    case IR_ATTR_INT: return a->i == b->i;
    case IR_ATTR_FLOAT: return a->f == b->f || (a->f != a->f && b->f != b->f);
    case IR_ATTR_STRING: return strcmp(a->s ? a->s : "", b->s ? b->s : "") == 0;
    case IR_ATTR_INTS: return a->n == b->n && (a->n == 0 || memcmp(a->ints, b->ints, a->n * sizeof(int64_t)) == 0);
    case IR_ATTR_FLOATS: return a->n == b->n && (a->n == 0 || memcmp(a->floats, b->floats, a->n * sizeof(double)) == 0);
    case IR_ATTR_TENSOR: return a->tensor == b->tensor;
    default: return false;
    }
}

/* Whether nodes a and b compute the same thing. */
static bool node_eq(const IrNode *a, const IrNode *b)
{
    if (a->op != b->op || a->nin != b->nin || a->nout != b->nout || a->nattrs != b->nattrs)
        return false;
    for (int i = 0; i < a->nin; i++)
        if (a->in[i] != b->in[i])
            return false;
    for (int i = 0; i < a->nattrs; i++)
        if (!attr_eq(&a->attrs[i], &b->attrs[i]))
            return false;
    return true;
}

/* Enter node id into the CSE table t of cap slots, unless an equal node is there: that
 * earlier node is the one lookups find, so a pinned duplicate (a graph output equal to
 * an earlier node) adds nothing, and many of them would make one long probe chain. */
static void cse_put(IrGraph *g, NodeId *t, uint32_t cap, NodeId id)
{
    const IrNode *n = &g->nodes[id];
    uint32_t h = node_hash(n) & (cap - 1);
    for (; t[h] != IR_NONE; h = (h + 1) & (cap - 1))
        if (node_eq(&g->nodes[t[h]], n))
            return;
    t[h] = id;
}

/* Grow the CSE table when it is half full (rehashing the live new nodes). */
static void cse_reserve(IrGraph *g, Simp *s)
{
    if ((g->nnodes + 1) * 2 < s->cap)
        return;
    uint32_t cap = s->cap ? s->cap * 2 : 1024;
    while (cap < (g->nnodes + 1) * 2)
        cap *= 2;
    NodeId *t = ir_scratch(g, sizeof(NodeId) * cap);
    for (uint32_t i = 0; i < cap; i++)
        t[i] = IR_NONE;
    for (NodeId id = 0; id < g->nnodes; id++) {
        if (g->nodes[id].dead || g->nodes[id].op == IR_OP_FOREIGN)
            continue;
        cse_put(g, t, cap, id);
    }
    s->tab = t;
    s->cap = cap;
}

/* An earlier new node equal to n, or IR_NONE. */
static NodeId cse_find(IrGraph *g, Simp *s, const IrNode *n)
{
    for (uint32_t h = node_hash(n) & (s->cap - 1); s->tab[h] != IR_NONE; h = (h + 1) & (s->cap - 1))
        if (node_eq(&g->nodes[s->tab[h]], n))
            return s->tab[h];
    return IR_NONE;
}


/* Whether any output of n is a graph output. */
static bool has_graph_output(const Simp *s, const IrNode *n)
{
    for (int i = 0; i < n->nout; i++)
        if (s->is_out[n->out[i]])
            return true;
    return false;
}

/* Simplify and re-add one detached node. */
static void simplify_node(IrGraph *g, Simp *s, IrNode *n)
{
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] != IR_NONE && n->in[k] < s->nvals)
            n->in[k] = s->remap[n->in[k]];
    if (n->op == IR_OP_FOREIGN) {
        ir_readd_node(g, n);
        return;
    }
    merge_chain(g, n);
    bool pinned = has_graph_output(s, n);
    ValId sunk = pinned ? IR_NONE : sink_reshape(g, s, n);
    if (sunk != IR_NONE) {
        s->remap[n->out[0]] = sunk;
        return;
    }
    ValId id = pinned ? IR_NONE : identity_of(g, n);
    if (id != IR_NONE) {
        s->remap[n->out[0]] = id;
        return;
    }
    cse_reserve(g, s);
    NodeId m = pinned ? IR_NONE : cse_find(g, s, n);
    if (m != IR_NONE) {
        for (int i = 0; i < n->nout; i++)
            s->remap[n->out[i]] = g->nodes[m].out[i];
        return;
    }
    cse_put(g, s->tab, s->cap, ir_readd_node(g, n));
}

/* One sweep of the rewrites above over the whole graph. Its tables live in the scratch
 * arena (released after the pass; an out of memory longjmps to g->oom and leaks
 * nothing). */
static void simplify_sweep(IrGraph *g)
{
    Simp s = {.nvals = g->nvals};
    s.remap = ir_scratch(g, sizeof(ValId) * (g->nvals + 1));
    s.is_out = ir_scratch(g, sizeof(bool) * (g->nvals + 1));
    for (uint32_t v = 0; v < g->nvals; v++)
        s.remap[v] = v;
    s.uses = ir_scratch(g, sizeof(uint32_t) * (g->nvals + 1));
    s.nvals2 = 2 * g->nvals + 64;           /* the rewrite adds at most a few values per node */
    s.epi = ir_scratch(g, s.nvals2);
    memset(s.uses, 0, sizeof(uint32_t) * (g->nvals + 1));
    memset(s.epi, 0, s.nvals2);
    for (uint32_t i = 0; i < g->noutputs; i++) {
        s.is_out[g->outputs[i]] = true;
        s.uses[g->outputs[i]]++;
    }
    for (uint32_t i = 0; i < g->nnodes; i++)
        for (int k = 0; k < g->nodes[i].nin && !g->nodes[i].dead; k++)
            if (g->nodes[i].in[k] != IR_NONE && g->nodes[i].in[k] < g->nvals)
                s.uses[g->nodes[i].in[k]]++;
    uint32_t n = 0;
    IrNode *old = ir_rewrite_begin(g, &n);
    for (uint32_t i = 0; i < n; i++)
        if (!old[i].dead)
            simplify_node(g, &s, &old[i]);
}

/* The pass: a sweep, the pattern rewrites, and another sweep after pass_flatmm, so that
 * the pointwise epilogues of the products it flattened move before their views back
 * (sink_reshape) and fuse with them. */
bool pass_simplify(IrGraph *g, const PassOptions *opt)
{
    simplify_sweep(g);
    if (!ir_failed(g))
        pass_rowsel(g);
    if (!ir_failed(g))
        pass_rotary(g, opt);
    if (!ir_failed(g))
        pass_gqa(g);
    if (!ir_failed(g))
        pass_siblings(g, opt);
    if (!ir_failed(g) && pass_flatmm(g) && !ir_failed(g))
        simplify_sweep(g);
    return !ir_failed(g);
}
