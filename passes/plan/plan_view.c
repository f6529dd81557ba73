/* plan_view.c: strided views (plan.h IrView): composition of view nodes, the
 * slices that in-place concats give their inputs, and the one function that
 * computes the views of every value (plan_compute_views), called by pass_fuse while
 * it decides which view nodes are virtual and by pass_layout once layouts are chosen.
 */
#include <string.h>

#include "plan.h"

/* Reshape of a strided view (the rule of torch's view()): new strides exist when every
 * group of merged/split dims is contiguous in the old view. */
static bool reshape_strides(const IrType *it, const int64_t *ost, const IrType *ot,
                            int64_t *nst)
{
    if (plan_numel(it) == 0) {
        plan_dense_strides(ot, nst);
        return true;
    }
    if (it->rank == 0) {
        for (int i = 0; i < ot->rank; i++)
            nst[i] = 0;
        return true;
    }
    int vd = ot->rank - 1;
    int64_t base = ost[it->rank - 1], tn = 1, vn = 1;
    for (int td = it->rank - 1; td >= 0; td--) {
        tn *= it->dims[td];
        if (td == 0 || (it->dims[td - 1] != 1 && ost[td - 1] != tn * base)) {
            while (vd >= 0 && (vn < tn || ot->dims[vd] == 1)) {
                nst[vd] = vn * base;
                vn *= ot->dims[vd];
                vd--;
            }
            if (vn != tn)
                return false;
            if (td > 0) {
                base = ost[td - 1];
                tn = 1;
                vn = 1;
            }
        }
    }
    return vd == -1;
}

bool plan_view_reshape(const IrType *from, const IrView *v, const IrType *to, IrView *out)
{
    *out = *v;
    return reshape_strides(from, v->stride, to, out->stride);
}

/* First index and step when the indices of GATHER node n are a constant arithmetic
 * progression inside the table (negative ones wrapped): then the gather is a strided
 * view of its data. False otherwise. */
bool plan_gather_view(IrGraph *g, const IrNode *n, int64_t *first, int64_t *step)
{
    if (n->op != IR_OP_GATHER || !ir_is_const(g, n->in[1]))
        return false;
    const IrValue *iv = ir_val(g, n->in[1]);
    int64_t bound = ir_vtype(g, n->in[0])->dims[ir_attr_get_int(n, "axis", 0)];
    int64_t cnt = plan_numel(&iv->type), prev = 0;
    if (cnt == 0)
        return false;
    for (int64_t i = 0; i < cnt; i++) {
        int64_t x = iv->type.dtype == IR_DT_I64 ? ((const int64_t *)iv->data)[i]
                                                : ((const int32_t *)iv->data)[i];
        x = x < 0 ? x + bound : x;
        if (x < 0 || x >= bound)
            return false;
        if (i == 0)
            *first = x;
        else if (i == 1)
            *step = x - prev;
        else if (x - prev != *step)
            return false;
        prev = x;
    }
    if (cnt == 1)
        *step = 0;
    return true;
}

/* Whether n is the CAST of a float32 graph input to DLFloat16 (fp16 mode: the
 * conversion at the bundle's edge), which fusion may make a view: the kernels that
 * read it then load the float32 input converting (ISA_F_F32). */
bool plan_edge_cast(IrGraph *g, const IrNode *n)
{
    if (n->op != IR_OP_CAST || n->nin != 1 || ir_vtype(g, n->out[0])->dtype != IR_DT_DLF16)
        return false;
    const IrValue *iv = ir_val(g, n->in[0]);
    return iv->kind == IR_VAL_INPUT && iv->type.dtype == IR_DT_F32;
}

/* Whether every load of graph input v converts float32 to DLFloat16: its one
 * consumer is a virtual edge CAST (plan_edge_cast) and it is no graph output. */
bool plan_edge_f32(IrGraph *g, ValId v)
{
    if (ir_val(g, v)->kind != IR_VAL_INPUT || ir_vtype(g, v)->dtype != IR_DT_F32)
        return false;
    for (uint32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return false;
    int uses = 0;
    bool cast = false;
    for (NodeId n = 0; n < g->nnodes; n++) {
        const IrNode *nd = &g->nodes[n];
        for (int i = 0; i < nd->nin && !nd->dead; i++)
            if (nd->in[i] == v) {
                uses++;
                cast = g->plan->node[n].virt && plan_edge_cast(g, nd);
            }
    }
    return uses == 1 && cast;
}

/* Compose view node n onto the view of its input. */
bool plan_view_apply(IrGraph *g, const IrNode *n, const IrView *in, IrView *out)
{
    const IrType *it = ir_vtype(g, n->in[0]), *ot = ir_vtype(g, n->out[0]);
    const int64_t *a = NULL, *b = NULL;
    IrView r = {.root = in->root, .off = in->off};
    switch (n->op) {
    case IR_OP_TRANSPOSE:
        IR_ASSERT(ir_attr_get_ints(n, "perm", &a) == ot->rank);
        for (int i = 0; i < ot->rank; i++)
            r.stride[i] = in->stride[a[i]];
        break;
    case IR_OP_SLICE:
        IR_ASSERT(ir_attr_get_ints(n, "starts", &a) == it->rank);
        IR_ASSERT(ir_attr_get_ints(n, "steps", &b) == it->rank);
        for (int i = 0; i < it->rank; i++) {
            if (plan_numel(ot) > 0)
                r.off += a[i] * in->stride[i];
            /* an axis of one element keeps its stride: a step as large as the
               axis (possibly huge) never multiplies it */
            r.stride[i] = ot->dims[i] > 1 ? in->stride[i] * b[i] : in->stride[i];
        }
        break;
    case IR_OP_EXPAND:
        for (int i = 0; i < ot->rank; i++) {
            int ia = i - (ot->rank - it->rank);
            r.stride[i] = ia < 0 || it->dims[ia] != ot->dims[i] ? 0 : in->stride[ia];
        }
        break;
    case IR_OP_RESHAPE:
        if (!reshape_strides(it, in->stride, ot, r.stride))
            return false;
        break;
    case IR_OP_BITCAST:                        /* same shape, same device element size */
    case IR_OP_CAST:                           /* a float32 graph input read as DLFloat16
                                                  (plan_edge_f32): the LOADs convert */
        IR_ASSERT(n->op == IR_OP_BITCAST || plan_edge_cast(g, n));
        memcpy(r.stride, in->stride, sizeof r.stride);
        break;
    case IR_OP_GATHER: {                       /* constant arithmetic indices */
        int64_t first, step, ax = ir_attr_get_int(n, "axis", 0);
        const IrType *xt = ir_vtype(g, n->in[1]);
        if (!plan_gather_view(g, n, &first, &step))
            return false;
        r.off += first * in->stride[ax];
        int o = 0;
        for (int i = 0; i < ax; i++)
            r.stride[o++] = in->stride[i];
        for (int j = 0; j < xt->rank; j++) {
            int64_t inner = 1;
            for (int q = j + 1; q < xt->rank; q++)
                inner *= xt->dims[q];
            r.stride[o++] = step * inner * in->stride[ax];
        }
        for (int i = (int)ax + 1; i < it->rank; i++)
            r.stride[o++] = in->stride[i];
        break;
    }
    default:
        IR_ASSERT(!"not a view op");
    }
    *out = r;
    return true;
}

/* Views of the inputs of in-place CONCAT nodes (PlanNode.virt set): each input is
 * the slice of the concat's output at its offset along the axis; and of the input of
 * an in-place TRANSPOSE (PlanNode.inplace): the output's view with the strides put
 * back in the input's order. Nodes are visited last to first so that a concat feeding
 * another one sees its final view. */
static void concat_views(IrGraph *g)
{
    Plan *p = g->plan;
    for (NodeId n = g->nnodes; n-- > 0;) {
        const IrNode *nd = &g->nodes[n];
        if (!nd->dead && p->node[n].virt && p->node[n].inplace) {
            const int64_t *perm = NULL;
            const IrView *o = &p->val[nd->out[0]].view;
            PlanValue *pv = &p->val[nd->in[0]];
            int r = (int)ir_attr_get_ints(nd, "perm", &perm);
            pv->view = *o;
            for (int i = 0; i < r; i++)
                pv->view.stride[perm[i]] = o->stride[i];
            pv->virt = true;
        }
        if (nd->dead || !p->node[n].virt || nd->op != IR_OP_CONCAT)
            continue;
        int ax = (int)ir_attr_get_int(nd, "axis", 0);
        const IrView *o = &p->val[nd->out[0]].view;
        int64_t pos = 0;
        for (int i = 0; i < nd->nin; i++) {
            PlanValue *pv = &p->val[nd->in[i]];
            pv->view = *o;
            pv->view.off += pos * o->stride[ax];
            pv->virt = true;
            pos += ir_vtype(g, nd->in[i])->dims[ax];
        }
    }
}

/* The view of value v's own storage in its layout: row-major, or with STICKED rows
 * padded to whole sticks. */
static void own_view(IrGraph *g, ValId v, const SpyTarget *t, IrView *vw)
{
    const IrType *ty = ir_vtype(g, v);
    memset(vw, 0, sizeof *vw);
    vw->root = v;
    plan_dense_strides(ty, vw->stride);
    if (g->plan->val[v].layout != IR_LAYOUT_STICKED)
        return;
    IR_ASSERT(t);
    int r = ty->rank;
    int64_t se = (int64_t)(t->stick_bytes / ir_dtype_size(ty->dtype));
    int64_t pad = (ty->dims[r - 1] + se - 1) / se * se;
    for (int i = r - 2; i >= 0; i--)
        vw->stride[i] = (i == r - 2 ? pad : vw->stride[i + 1] * ty->dims[i + 1]);
}

bool plan_compute_views(IrGraph *g, const SpyTarget *t)
{
    Plan *p = g->plan;
    bool all = true;
    for (ValId v = 0; v < g->nvals; v++) {
        own_view(g, v, t, &p->val[v].view);
        p->val[v].virt = false;
    }
    for (NodeId n = 0; n < g->nnodes; n++) {
        const IrNode *nd = &g->nodes[n];
        if (nd->dead || !p->node[n].virt || nd->op == IR_OP_CONCAT || p->node[n].inplace)
            continue;
        IrView vw;
        if (!plan_view_apply(g, nd, &p->val[nd->in[0]].view, &vw)) {
            p->node[n].virt = false;           /* not strided: materialised by a kernel */
            all = false;
            continue;
        }
        p->val[nd->out[0]].view = vw;
        p->val[nd->out[0]].virt = true;
    }
    concat_views(g);
    return all;
}

/* True if view vw of v covers its whole row-major root, densely, from offset 0. */
bool plan_view_dense(IrGraph *g, ValId v, const IrView *vw)
{
    const IrType *t = ir_vtype(g, v);
    const IrValue *root = ir_val(g, vw->root);
    int64_t st[IR_MAX_RANK];
    if (vw->off != 0 || g->plan->val[vw->root].layout != IR_LAYOUT_ROWMAJOR ||
        plan_numel(t) != plan_numel(&root->type))
        return false;
    plan_dense_strides(t, st);
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] > 1 && vw->stride[i] != st[i])
            return false;
    return true;
}

