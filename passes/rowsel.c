/* rowsel.c: pass_simplify's row-selection push (pass_rowsel).
 *
 * A SLICE of one axis, or a GATHER with constant indices that form an arithmetic
 * progression, selects rows of its input. When the input is computed by a chain of
 * row-wise ops used only there, the selection is moved up the chain so that only the
 * selected rows are computed: through pointwise ops (inputs broadcast along the axis
 * are left whole), reductions over other axes (layer / RMS norms), reshapes that keep
 * the axis separable, transposes, and matrix products along a non-contracted axis
 * (A's rows, B's columns, or a batch axis). Each selected row is computed by the same
 * operations on the same operands as before, so its values are unchanged. The old
 * chain is left without users for pass_dce; the selection node becomes a reshape of
 * the pushed result, so graph output names stay.
 */
#include <string.h>

#include "pass.h"

typedef struct {
    int64_t start, step, count;            /* rows start + k*step, 0 <= k < count */
} RowSel;

typedef struct {
    IrGraph *g;
    const uint32_t *uses;                  /* use counts before the rewrite */
    uint32_t nvals;                        /* values that uses / need / ruse cover */
    int *need;                             /* axis a value is selected along; -1 none, -2 several */
    uint32_t *ruse;                        /* uses by nodes recomputed on the rows */
    ValId *nv;                             /* value -> its recomputed value */
    RowSel sel;
    const IrOrigin *origin;                /* origin of the selection node */
} Rs;

/* A SLICE node taking sel along axis ax of v (the other axes whole). */
static ValId rowsel_slice(Rs *r, ValId v, int ax)
{
    const IrType *t = ir_vtype(r->g, v);
    int64_t starts[IR_MAX_RANK], steps[IR_MAX_RANK], sizes[IR_MAX_RANK];
    for (int i = 0; i < t->rank; i++) {
        starts[i] = i == ax ? r->sel.start : 0;
        steps[i] = i == ax ? r->sel.step : 1;
        sizes[i] = i == ax ? r->sel.count : t->dims[i];
    }
    IrAttr at[3] = {ir_attr_ints_ref("starts", starts, t->rank),
                    ir_attr_ints_ref("steps", steps, t->rank),
                    ir_attr_ints_ref("sizes", sizes, t->rank)};
    NodeId id = ir_add_node(r->g, IR_OP_SLICE, &v, 1, at, 3, r->origin);
    return ir_node(r->g, id)->out[0];
}

/* Input axis of reshape node n that output axis ax is (the dims before it hold the
 * same number of elements and it has the same extent), or -1. */
static int rowsel_reshape_axis(IrGraph *g, const IrNode *n, int ax)
{
    const IrType *ti = ir_vtype(g, n->in[0]), *to = ir_vtype(g, n->out[0]);
    int64_t pre = 1;
    for (int i = 0; i < ax; i++)
        pre *= to->dims[i];
    int64_t p = 1;
    for (int i = 0; i < ti->rank; i++) {
        if (p == pre && ti->dims[i] == to->dims[ax])
            return i;
        p *= ti->dims[i];
    }
    return -1;
}

/* The input axis of reduce node n that output axis ax comes from, or -1 when ax is
 * reduced. */
static int rowsel_reduce_axis(const IrNode *n, int rank_in, int ax)
{
    const int64_t *axes;
    int na = ir_attr_get_ints(n, "axes", &axes);
    if (na < 0)
        return -1;                         /* all axes reduced */
    bool keep = ir_attr_get_int(n, "keepdims", 1) != 0;
    for (int i = 0, o = 0; i < rank_in; i++) {
        bool red = false;
        for (int k = 0; k < na; k++)
            red = red || axes[k] == i;
        if (red && !keep)
            continue;
        if (o == ax)
            return red ? -1 : i;
        o++;
    }
    return -1;
}

/* Axis of input k of node n (output selected along axis ax) that the selection
 * applies to: -1 when the input is used whole (broadcast along ax, or the operand
 * of a matrix product that does not carry ax), -2 when n is not row-wise in ax. */
static int rowsel_in_axis(IrGraph *g, const IrNode *n, int k, int ax)
{
    int ro = ir_vtype(g, n->out[0])->rank, ri = ir_vtype(g, n->in[k])->rank;
    const IrOpInfo *oi = &ir_op_info[n->op];
    bool bcast = (oi->cls == IR_CLS_ELEM && (oi->flags & IR_OPF_POINTWISE)) ||
                 (n->op == IR_OP_MATMUL && ax < ro - 2);
    if (n->nout != 1)
        return -2;
    if (bcast) {
        int a = ax - (ro - ri);
        return a < 0 || ir_vtype(g, n->in[k])->dims[a] == 1 ? -1 : a;
    }
    if (n->op == IR_OP_MATMUL) {
        if (ax == ro - 2)
            return k == 0 ? ri - 2 : -1;
        return k == 1 ? ri - 1 : -1;
    }
    if (n->op == IR_OP_REDUCE) {
        int a = rowsel_reduce_axis(n, ri, ax);
        return a < 0 ? -2 : a;
    }
    if (n->op == IR_OP_TRANSPOSE) {
        const int64_t *perm;
        return ir_attr_get_ints(n, "perm", &perm) == ro ? (int)perm[ax] : -2;
    }
    if (n->op == IR_OP_RESHAPE) {
        int a = rowsel_reshape_axis(g, n, ax);
        return a < 0 ? -2 : a;
    }
    return -2;
}

/* Whether node n can be recomputed on the selected rows: its output is an
 * activation below nvals selected along one axis by all of its users, and every
 * input follows that axis row-wise. */
static bool rowsel_in_region(Rs *r, const IrNode *n)
{
    if (n->dead || n->nout != 1 || n->nin > 8 || n->op == IR_OP_FOREIGN)
        return false;
    ValId o = n->out[0];
    if (o >= r->nvals || r->need[o] < 0 || r->ruse[o] != r->uses[o])
        return false;
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] == IR_NONE || rowsel_in_axis(r->g, n, k, r->need[o]) == -2)
            return false;
    return true;
}

/* Mark the inputs of region node n as needed along their selected axes. */
static void rowsel_mark_inputs(Rs *r, const IrNode *n)
{
    for (int k = 0; k < n->nin; k++) {
        ValId v = n->in[k];
        int a = rowsel_in_axis(r->g, n, k, r->need[n->out[0]]);
        if (a < 0 || v >= r->nvals)
            continue;
        r->need[v] = r->need[v] == -1 || r->need[v] == a ? a : -2;
        r->ruse[v]++;
    }
}

/* Value v restricted to the selection along axis a: its recomputed value when it has
 * one, otherwise a SLICE of it (made once per value). */
static ValId rowsel_get(Rs *r, ValId v, int a)
{
    if (v < r->nvals && r->nv[v] != IR_NONE && r->need[v] == a)
        return r->nv[v];
    ValId s = rowsel_slice(r, v, a);
    if (v < r->nvals && r->need[v] == a)
        r->nv[v] = s;                      /* one slice for all its region users */
    return s;
}

/* Recompute region node n on the selected rows (new node, new output value). */
static void rowsel_emit(Rs *r, const IrNode *n)
{
    ValId in[8];
    int ax = r->need[n->out[0]];
    for (int k = 0; k < n->nin; k++) {
        int a = rowsel_in_axis(r->g, n, k, ax);
        in[k] = a < 0 ? n->in[k] : rowsel_get(r, n->in[k], a);
    }
    IrAttr *attrs = ir_scratch(r->g, sizeof(IrAttr) * (n->nattrs + 1));
    memcpy(attrs, n->attrs, sizeof(IrAttr) * n->nattrs);
    if (n->op == IR_OP_RESHAPE) {
        const IrType *to = ir_vtype(r->g, n->out[0]);
        int64_t shape[IR_MAX_RANK];
        memcpy(shape, to->dims, sizeof(int64_t) * to->rank);
        shape[ax] = r->sel.count;
        for (int i = 0; i < n->nattrs; i++)
            if (strcmp(attrs[i].name, "shape") == 0)
                attrs[i] = ir_attr_ints(r->g, "shape", shape, to->rank);
    }
    NodeId id = ir_add_node(r->g, n->op, in, n->nin, attrs, n->nattrs, &n->origin);
    r->nv[n->out[0]] = ir_node(r->g, id)->out[0];
}

/* Recompute on the selection, along axis ax of value x, every re-added node whose
 * results only the selection uses; the value equal to x restricted, or IR_NONE when
 * x's producer cannot be recomputed so (nothing would be saved). */
static ValId rowsel_region(Rs *r, ValId x, int ax)
{
    IrGraph *g = r->g;
    uint32_t nn = g->nnodes;
    bool *in = ir_scratch(g, nn + 1);
    for (uint32_t v = 0; v < r->nvals; v++) {
        r->need[v] = -1;
        r->ruse[v] = 0;
        r->nv[v] = IR_NONE;
    }
    if (x >= r->nvals || ir_val(g, x)->kind != IR_VAL_ACT)
        return IR_NONE;
    r->need[x] = ax;
    r->ruse[x] = 1;
    for (uint32_t i = nn; i-- > 0;) {
        in[i] = rowsel_in_region(r, &g->nodes[i]);
        if (in[i])
            rowsel_mark_inputs(r, &g->nodes[i]);
    }
    if (ir_val(g, x)->def >= nn || !in[ir_val(g, x)->def])
        return IR_NONE;
    for (uint32_t i = 0; i < nn; i++) {
        IrNode c = g->nodes[i];            /* emitting grows g->nodes */
        if (in[i])
            rowsel_emit(r, &c);
    }
    return r->nv[x];
}

/* Constant index k of an integer constant value c (negative indices wrap by dim). */
static int64_t rowsel_index(IrGraph *g, ValId c, int64_t k, int64_t dim)
{
    const IrValue *v = ir_val(g, c);
    int64_t x = v->type.dtype == IR_DT_I32 ? ((const int32_t *)v->data)[k]
                                           : ((const int64_t *)v->data)[k];
    return x < 0 ? x + dim : x;
}

/* The selection node n makes (axis in *ax), or false when it is not one row
 * selection: a SLICE with one cut axis, or a GATHER with constant indices that step
 * evenly through the input. */
static bool rowsel_of(IrGraph *g, const IrNode *n, int *ax, RowSel *sel)
{
    const IrType *t = ir_vtype(g, n->in[0]);
    *ax = -1;
    if (n->op == IR_OP_SLICE) {
        const int64_t *st, *sp, *sz;
        if (ir_attr_get_ints(n, "starts", &st) != t->rank || ir_attr_get_ints(n, "steps", &sp) != t->rank ||
            ir_attr_get_ints(n, "sizes", &sz) != t->rank)
            return false;
        for (int i = 0; i < t->rank; i++) {
            if (st[i] == 0 && sp[i] == 1 && sz[i] == t->dims[i])
                continue;
            if (*ax >= 0)
                return false;
            *ax = i;
            *sel = (RowSel){st[i], sp[i], sz[i]};
        }
        return *ax >= 0;
    }
    if (n->op != IR_OP_GATHER || !ir_is_const(g, n->in[1]))
        return false;
    const IrType *ti = ir_vtype(g, n->in[1]);
    int64_t cnt = ir_type_numel(ti), a = ir_attr_get_int(n, "axis", 0);
    a = a < 0 ? a + t->rank : a;
    if (cnt < 1 || a < 0 || a >= t->rank || (ti->dtype != IR_DT_I32 && ti->dtype != IR_DT_I64))
        return false;
    int64_t d = t->dims[a], i0 = rowsel_index(g, n->in[1], 0, d);
    int64_t step = cnt > 1 ? rowsel_index(g, n->in[1], 1, d) - i0 : 1;
    for (int64_t k = 0; k < cnt; k++) {
        int64_t x = rowsel_index(g, n->in[1], k, d);
        if (x < 0 || x >= d || x != i0 + k * step)
            return false;
    }
    *ax = (int)a;
    *sel = (RowSel){i0, step, cnt};
    return true;
}

/* Re-add node n, first pushing its row selection up when that computes fewer rows:
 * n then becomes a reshape of the pushed result to its own output type. */
static void rowsel_node(Rs *r, IrNode *n)
{
    int ax;
    IrGraph *g = r->g;
    if ((n->op != IR_OP_SLICE && n->op != IR_OP_GATHER) || !rowsel_of(g, n, &ax, &r->sel) ||
        r->sel.count >= ir_vtype(g, n->in[0])->dims[ax]) {
        ir_readd_node(g, n);
        return;
    }
    r->origin = &n->origin;
    ValId v = rowsel_region(r, n->in[0], ax);
    if (v == IR_NONE) {
        ir_readd_node(g, n);
        return;
    }
    pass_readd_reshape(g, n, v);
}

/* Re-add node n (of the list ir_rewrite_begin detached) as a RESHAPE of v to n's
 * output type: n's output value, name and origin stay, computed now as v. */
void pass_readd_reshape(IrGraph *g, const IrNode *n, ValId v)
{
    const IrType *to = ir_vtype(g, n->out[0]);
    IrNode m = *n;
    m.op = IR_OP_RESHAPE;
    m.nin = 1;
    m.in = &v;
    m.nattrs = 1;
    m.attrs = ir_alloc(g, sizeof(IrAttr));
    m.attrs[0] = ir_attr_ints(g, "shape", to->dims, to->rank);
    ir_readd_node(g, &m);
}

/* Push every row selection of g above the row-wise ops that compute its input. */
void pass_rowsel(IrGraph *g)
{
    Rs r = {.g = g, .uses = ir_use_counts(g), .nvals = g->nvals};
    r.need = ir_scratch(g, sizeof(int) * (g->nvals + 1));
    r.ruse = ir_scratch(g, sizeof(uint32_t) * (g->nvals + 1));
    r.nv = ir_scratch(g, sizeof(ValId) * (g->nvals + 1));
    uint32_t n = 0;
    IrNode *old = ir_rewrite_begin(g, &n);
    for (uint32_t i = 0; i < n && !ir_failed(g); i++)
        if (!old[i].dead)
            rowsel_node(&r, &old[i]);
}
