/* dynamic.c: pass_dynamic, data-dependent extents from the ops that make them to the
 * graph outputs.
 *
 * The decompositions of NonZero, Compress, Unique and NonMaxSuppression leave tensors
 * at their upper-bound shape with a device-computed count of valid rows along one axis
 * (IrDynDim, ir/ir_dyn.c). This pass walks the final graph in order and carries every
 * such extent through the ops that keep "the box [0, count) along the axis holds the
 * result" true: pointwise ops and casts (the other operands broadcast or are read at
 * the same positions), transposes (the axis moves) and reshapes that keep the axis as
 * one dimension with the same elements before it. Any other consumer is refused with a
 * message naming it. At the end the table lists exactly the dynamic graph outputs;
 * hidden count outputs that no output needs any more are dropped (then dead code is
 * removed), and an output whose count folded to a constant becomes a static slice.
 * A value whose whole shape is computed at run time (IR_DYN_SHAPE: Reshape, Squeeze,
 * Unsqueeze, reductions with runtime shape or axes inputs) may only be a graph output,
 * after pointwise ops with single-element operands at most.
 */
#include <stdlib.h>
#include <string.h>

#include "pass.h"

typedef struct {
    int *axis;                             /* per value: data-dependent axis, -1 if none */
    ValId *count;                          /* per value: its count */
} DynMap;

/* Output axis of a reshape from in to out that keeps in's axis ax whole with the same
 * number of elements before it; -1 if there is none. */
static int reshape_axis(const IrType *in, int ax, const IrType *out)
{
    int64_t before = 1, acc = 1;
    for (int i = 0; i < ax; i++)
        before *= in->dims[i];
    for (int j = 0; j < out->rank; j++) {
        if (acc == before && out->dims[j] == in->dims[ax])
            return j;
        acc *= out->dims[j];
    }
    return -1;
}

/* Report node n consuming the data-dependent value v. */
static bool refuse(IrGraph *g, const IrNode *n, ValId v, int ax)
{
    ir_error(g, &n->origin, "unsupported: it uses '%s', whose extent along axis %d is only "
             "known at run time (data-dependent shape); only pointwise ops, casts, "
             "transposes and reshapes may follow such a result", g->vals[v].name, ax);
    return false;
}

/* Pointwise node n: the output is dynamic along the axis its dynamic inputs share. */
static bool through_pointwise(IrGraph *g, DynMap *m, const IrNode *n)
{
    const IrType *ot = ir_vtype(g, n->out[0]);
    int oax = -1;
    ValId cnt = IR_NONE;
    for (int i = 0; i < n->nin; i++) {
        ValId v = n->in[i];
        if (m->axis[v] < 0)
            continue;
        const IrType *t = ir_vtype(g, v);
        int a = m->axis[v] + (ot->rank - t->rank);
        if (t->dims[m->axis[v]] != ot->dims[a] || (oax >= 0 && (a != oax || m->count[v] != cnt)))
            return refuse(g, n, v, m->axis[v]);
        oax = a;
        cnt = m->count[v];
    }
    m->axis[n->out[0]] = oax;
    m->count[n->out[0]] = cnt;
    return true;
}

/* Node n uses dv, whose whole shape is computed at run time: a pointwise op whose other
 * operands are single elements or have the same runtime shape keeps it (the data stays
 * the row-major prefix); any other use is refused, naming the graph input the shape
 * comes from (the message that tells to specialise it with --bind). */
static bool through_shaped(IrGraph *g, DynMap *m, const IrNode *n, ValId dv)
{
    bool ok = (ir_op_info[n->op].flags & IR_OPF_POINTWISE) && n->nout == 1 &&
              ir_vtype(g, n->out[0])->rank == ir_vtype(g, dv)->rank &&
              ir_vtype(g, n->out[0])->dims[0] == ir_vtype(g, dv)->dims[0];
    for (int i = 0; i < n->nin && ok; i++) {
        ValId v = n->in[i];
        ok = v == IR_NONE || ir_type_numel(ir_vtype(g, v)) == 1 ||
             (m->axis[v] == IR_DYN_SHAPE && m->count[v] == m->count[dv] &&
              ir_type_eq(ir_vtype(g, v), ir_vtype(g, dv)));
    }
    if (ok) {
        m->axis[n->out[0]] = IR_DYN_SHAPE;
        m->count[n->out[0]] = m->count[dv];
        return true;
    }
    ValId in = ir_dyn_source_input(g, m->count[dv]);
    ir_error(g, &n->origin, "unsupported: dynamic shape input '%s'%s: it decides the shape "
             "of '%s', which only pointwise ops and graph outputs may use", g->vals[in].name,
             g->vals[in].kind == IR_VAL_INPUT ? " (a graph input: specialise it with --bind)"
                                              : "", g->vals[dv].name);
    return false;
}

/* Carry the extents of node n's inputs to its output, or refuse n. */
static bool carry(IrGraph *g, DynMap *m, const IrNode *n)
{
    ValId dv = IR_NONE;
    for (int i = 0; i < n->nin && dv == IR_NONE; i++)
        if (n->in[i] != IR_NONE && m->axis[n->in[i]] != -1)
            dv = n->in[i];
    if (dv == IR_NONE)
        return true;
    int ax = m->axis[dv], oax = -1;
    if (ax == IR_DYN_SHAPE)
        return through_shaped(g, m, n, dv);
    if (ir_op_info[n->op].flags & IR_OPF_POINTWISE)
        return through_pointwise(g, m, n);
    switch (n->op) {
    case IR_OP_TRANSPOSE: {
        const int64_t *perm;
        int np = ir_attr_get_ints(n, "perm", &perm);
        for (int j = 0; j < np; j++)
            if (perm[j] == ax)
                oax = j;
        break;
    }
    case IR_OP_RESHAPE:
        oax = reshape_axis(ir_vtype(g, dv), ax, ir_vtype(g, n->out[0]));
        break;
    default: break;
    }
    if (oax < 0)
        return refuse(g, n, dv, ax);
    m->axis[n->out[0]] = oax;
    m->count[n->out[0]] = m->count[dv];
    return true;
}

/* Graph output j is dynamic with a constant count: output the valid slice instead. */
static void make_static(IrGraph *g, uint32_t j, int ax, ValId count)
{
    ValId v = g->outputs[j];
    const IrType *t = ir_vtype(g, v);
    int64_t c = *(const int32_t *)ir_val(g, count)->data;
    int64_t starts[IR_MAX_RANK] = {0}, steps[IR_MAX_RANK], sizes[IR_MAX_RANK];
    for (int i = 0; i < t->rank; i++) {
        steps[i] = 1;
        sizes[i] = i == ax ? (c < 0 ? 0 : c > t->dims[i] ? t->dims[i] : c) : t->dims[i];
    }
    IrAttr a[3] = {ir_attr_ints_ref("starts", starts, t->rank),
                   ir_attr_ints_ref("steps", steps, t->rank),
                   ir_attr_ints_ref("sizes", sizes, t->rank)};
    NodeId def = ir_val(g, v)->def;
    IrOrigin o = def != IR_NONE ? ir_node(g, def)->origin : (IrOrigin){"", "", NULL};
    NodeId id = ir_add_node(g, IR_OP_SLICE, &v, 1, a, 3, &o);
    ValId s = ir_node(g, id)->out[0];
    bool shared = false;                   /* v still named by another output */
    for (uint32_t k = 0; k < g->noutputs; k++)
        shared |= k != j && g->outputs[k] == v;
    if (ir_val(g, v)->kind != IR_VAL_INPUT && !shared) {
        const char *vn = g->vals[v].name, *sn = g->vals[s].name;
        ir_set_name(g, v, "");
        ir_set_name(g, s, vn);
        ir_set_name(g, v, sn);
    }
    g->outputs[j] = s;
}

/* Graph output j has a runtime shape that folded to the constant dims: output the
 * prefix of that many elements in that shape instead (the compile checks the bound). */
static void make_static_shape(IrGraph *g, uint32_t j, ValId dims)
{
    ValId v = g->outputs[j];
    const IrType *t = ir_vtype(g, v);
    const int32_t *d = ir_val(g, dims)->data;
    int64_t to[IR_MAX_RANK], n = 1, cap = ir_type_numel(t), flat = cap, zero = 0, one = 1;
    for (int i = 0; i < t->rank; i++)
        n *= (to[i] = d[i] < 0 ? 0 : d[i]);
    if (n > cap) {
        ir_error(g, NULL, "output '%s': computed shape has %lld elements, more than its "
                 "%lld", g->vals[v].name, (long long)n, (long long)cap);
        return;
    }
    NodeId def = ir_val(g, v)->def;
    IrOrigin o = def != IR_NONE ? ir_node(g, def)->origin : (IrOrigin){"", "", NULL};
    ValId f = ir_reshape(g, v, &flat, 1, &o);
    IrAttr a[3] = {ir_attr_ints_ref("starts", &zero, 1), ir_attr_ints_ref("steps", &one, 1),
                   ir_attr_ints_ref("sizes", &n, 1)};
    ValId s = ir_node(g, ir_add_node(g, IR_OP_SLICE, &f, 1, a, 3, &o))->out[0];
    ValId r = ir_reshape(g, s, to, t->rank, &o);
    if (ir_val(g, v)->kind != IR_VAL_INPUT) {   /* the output keeps its name */
        const char *vn = g->vals[v].name, *rn = g->vals[r].name;
        ir_set_name(g, v, "");
        ir_set_name(g, r, vn);
        ir_set_name(g, v, rn);
    }
    g->outputs[j] = r;
}

/* Rebuild the table from the graph outputs; drop hidden outputs no output needs. Returns
 * true when hidden outputs were dropped. */
static bool finish(IrGraph *g, DynMap *m)
{
    uint32_t nvis = g->noutputs - g->nhidden, n = 0;
    IrDynDim *tab = ir_alloc(g, (nvis + 1) * sizeof *tab);
    for (uint32_t j = 0; j < nvis; j++) {
        ValId v = g->outputs[j];
        if (m->axis[v] == -1)
            continue;
        if (ir_is_const(g, m->count[v]) && m->axis[v] == IR_DYN_SHAPE) {
            make_static_shape(g, j, m->count[v]);
            continue;
        }
        if (ir_is_const(g, m->count[v])) {
            make_static(g, j, m->axis[v], m->count[v]);
            continue;
        }
        tab[n++] = (IrDynDim){v, m->axis[v], m->count[v]};
    }
    g->dyn = tab;
    g->ndyn = g->capdyn = n;
    uint32_t k = nvis;
    for (uint32_t j = nvis; j < g->noutputs; j++) {
        bool need = false;
        for (uint32_t i = 0; i < n; i++)
            need |= tab[i].count == g->outputs[j];
        if (need)
            g->outputs[k++] = g->outputs[j];
    }
    bool dropped = k < g->noutputs;
    g->nhidden -= g->noutputs - k;
    g->noutputs = k;
    return dropped;
}

/* The marker ops of a computation unrolled along a symbolic axis (SYMLEN, SYMLIKE)
 * mean nothing without symbolic dimensions (a text IR file may hold them): refused,
 * since only pass_symdim resolves them. */
static bool no_step_markers(IrGraph *g)
{
    for (NodeId i = 0; i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (!n->dead && (n->op == IR_OP_SYMLEN || n->op == IR_OP_SYMLIKE)) {
            ir_error(g, &n->origin, "op %s (value '%s') in a graph without bounded dynamic "
                     "dimensions", ir_op_info[n->op].name, g->vals[n->out[0]].name);
            return false;
        }
    }
    return true;
}

bool pass_dynamic(IrGraph *g, const PassOptions *opt)
{
    if (g->nsymdims ? !pass_symdim(g) : !no_step_markers(g))
        return false;
    if (g->ndyn == 0 && g->nhidden == 0)
        return true;
    DynMap m = {ir_scratch(g, (g->nvals + 1) * sizeof(int)),
                ir_scratch(g, (g->nvals + 1) * sizeof(ValId))};
    for (ValId v = 0; v < g->nvals; v++)
        m.axis[v] = -1;
    for (uint32_t i = 0; i < g->ndyn; i++) {
        m.axis[g->dyn[i].value] = g->dyn[i].axis;
        m.count[g->dyn[i].value] = g->dyn[i].count;
    }
    bool ok = true;
    for (NodeId i = 0; i < g->nnodes && ok; i++)
        if (!g->nodes[i].dead)
            ok = carry(g, &m, &g->nodes[i]);
    bool dropped = ok && finish(g, &m);
    if (ok && dropped)
        return pass_dce(g, opt);
    return ok && !ir_failed(g);
}
