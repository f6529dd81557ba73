/* gqa.c: pass_simplify's grouped-query attention without copies of K and V (pass_gqa).
 *
 * With G key/value heads shared by r query heads each (H = G*r), models repeat K and V
 * to H heads before the products:
 *     Kr = reshape(expand(K1, [.., G, r, N, D]), [.., H, N, D])   (K1: [.., G, 1, N, D])
 *     S = Q @ transpose(Kr) ... P = softmax(S) ... O = P @ Vr
 * The reshape merges a broadcast axis (stride 0) with the head axis, which no strided
 * view expresses, so each repeat is a copy kernel writing r times the bytes it reads,
 * and the products read the copies. Here the products and the row-wise ops between
 * them work on the head axis split into [G, r]: Q is viewed as [.., G, r, M, D], the
 * product reads K1 (its unit axis broadcast by the matrix product), every pointwise op
 * and trailing keepdims reduction between the products takes the same split (operands
 * that broadcast over the heads get a unit axis, those with H heads are viewed split),
 * and the last product's result is viewed back as [.., H, M, D]. The same operations
 * run on the same operands, so the values are unchanged; the copies disappear and the
 * kernels keep their fusion (the row-wise ops stay in the first product's kernel).
 * Applied only when every value on the split path is used on it (but for the last
 * products' results): a path left half way would cut the fusion of the first product
 * with its softmax. Nodes left without users go to pass_dce.
 */
#include <string.h>

#include "pass.h"

typedef struct {
    IrGraph *g;
    ValId *lift;                    /* value -> its split-head value (IR_NONE: none) */
    int32_t *hx;                    /* value -> its head axis (split values) */
    int64_t *grp;                   /* value -> G of its split (r = H / G) */
    uint8_t *term;                  /* value is a last product's result */
    uint32_t nvals;
} Gqa;

/* Producer node of v, or NULL. */
static const IrNode *gq_def(IrGraph *g, ValId v)
{
    const IrValue *val = ir_val(g, v);
    if (val->kind != IR_VAL_ACT || val->def == IR_NONE || val->def >= g->nnodes ||
        g->nodes[val->def].dead)
        return NULL;
    return &g->nodes[val->def];
}

/* If v is reshape(expand(u)) repeating u's unit axis hx+1 r times into the head axis hx
 * of v, returns u and sets *hx, *grp (G); else IR_NONE. */
static ValId gq_repeat(IrGraph *g, ValId v, int *hx, int64_t *grp)
{
    const IrNode *rs = gq_def(g, v), *ex = rs && rs->op == IR_OP_RESHAPE ? gq_def(g, rs->in[0]) : NULL;
    if (!ex || ex->op != IR_OP_EXPAND)
        return IR_NONE;
    const IrType *o = ir_vtype(g, v), *e = ir_vtype(g, ex->out[0]), *u = ir_vtype(g, ex->in[0]);
    if (e->rank != o->rank + 1 || u->rank != e->rank || o->rank < 3)
        return IR_NONE;
    int h = o->rank - 3;                        /* [.., H, N, D] */
    for (int i = 0; i < o->rank; i++) {
        int j = i < h ? i : i + 1;
        if (i != h && (e->dims[j] != o->dims[i] || u->dims[j] != e->dims[j]))
            return IR_NONE;
    }
    if (u->dims[h] != e->dims[h] || u->dims[h + 1] != 1 || e->dims[h + 1] < 2 ||
        e->dims[h] * e->dims[h + 1] != o->dims[h])
        return IR_NONE;
    *hx = h;
    *grp = e->dims[h];
    return ex->in[0];
}

/* The B operand of MATMUL n read without the repeat: u (repeat of B) or
 * transpose(u) (B = transpose of a repeat, the last two axes swapped); IR_NONE if B
 * is neither. With build unset nothing is added (a check). */
static ValId gq_matmul_b(Gqa *q, const IrNode *n, int *hx, int64_t *grp, bool build)
{
    IrGraph *g = q->g;
    ValId b = n->in[1];
    ValId u = gq_repeat(g, b, hx, grp);
    if (u != IR_NONE)
        return u;
    const IrNode *t = gq_def(g, b);
    const int64_t *perm;
    int r = ir_vtype(g, b)->rank;
    if (!t || t->op != IR_OP_TRANSPOSE || ir_attr_get_ints(t, "perm", &perm) != r)
        return IR_NONE;
    for (int i = 0; i < r; i++)
        if (perm[i] != (i == r - 1 ? r - 2 : i == r - 2 ? r - 1 : i))
            return IR_NONE;
    u = gq_repeat(g, t->in[0], hx, grp);
    if (u == IR_NONE || !build)
        return u;
    int64_t p[IR_MAX_RANK];
    for (int i = 0; i <= r; i++)
        p[i] = i == r ? r - 1 : i == r - 1 ? r : i;
    return ir_transpose(g, u, p, &n->origin);
}

/* Operand v of a node on the split path (head axis hx of rank-r values, G groups): its
 * split value, itself when it does not reach the head axis, a view with a unit axis
 * after the head axis when it broadcasts there, or a view splitting its H heads.
 * IR_NONE if none applies. */
static ValId gq_operand(Gqa *q, ValId v, int hx, int r, int64_t G, bool build,
                        const IrOrigin *o)
{
    if (v < q->nvals && q->lift[v] != IR_NONE)
        return q->hx[v] == hx && q->grp[v] == G ? q->lift[v] : IR_NONE;
    const IrType *t = ir_vtype(q->g, v);
    int h = hx - (r - t->rank);                 /* v's axis under the head axis */
    if (t->rank > r)
        return IR_NONE;
    if (h < 0)
        return v;
    int64_t H = t->dims[h], d[IR_MAX_RANK];
    if (H != 1 && H % G != 0)
        return IR_NONE;
    if (!build || t->rank + 1 > IR_MAX_RANK)
        return t->rank + 1 > IR_MAX_RANK ? IR_NONE : v;
    for (int i = 0, j = 0; i < t->rank; i++) {
        d[j++] = i == h && H != 1 ? G : t->dims[i];
        if (i == h)
            d[j++] = H == 1 ? 1 : H / G;
    }
    return ir_reshape(q->g, v, d, t->rank + 1, o);
}

/* Split value of node n's output when n is on the split path (build set: created;
 * else only checked, returning any valid id). */
static ValId gq_node(Gqa *q, const IrNode *n, bool build, int *hx_out, int64_t *g_out,
                     bool *term)
{
    IrGraph *g = q->g;
    int hx = -1, r = ir_vtype(g, n->out[0])->rank;
    int64_t G = 0;
    *term = false;
    if (n->op == IR_OP_MATMUL && n->nin == 2) {
        ValId b = gq_matmul_b(q, n, &hx, &G, false), a = n->in[0];
        bool lifted = a < q->nvals && q->lift[a] != IR_NONE;
        if (b == IR_NONE || ir_vtype(g, a)->rank != r ||
            ir_vtype(g, a)->dims[hx] != ir_vtype(g, n->out[0])->dims[hx])
            return IR_NONE;                     /* A has the H heads (not broadcast) */
        ValId a5 = gq_operand(q, a, hx, r, G, build, &n->origin);
        if (a5 == IR_NONE)
            return IR_NONE;
        *hx_out = hx, *g_out = G, *term = lifted;
        return build ? ir_matmul(g, a5, gq_matmul_b(q, n, &hx, &G, true), &n->origin) : a5;
    }
    for (int i = 0; i < n->nin && hx < 0; i++)         /* the path ends at a last product */
        if (n->in[i] != IR_NONE && n->in[i] < q->nvals && q->lift[n->in[i]] != IR_NONE &&
            !q->term[n->in[i]])
            hx = q->hx[n->in[i]], G = q->grp[n->in[i]];
    if (hx < 0 || n->nout != 1 || n->nin > 4 || ir_vtype(g, n->in[0])->rank != r)
        return IR_NONE;
    IrOpClass c = ir_op_info[n->op].cls;
    const int64_t *ax;
    int nax = n->op == IR_OP_REDUCE ? ir_attr_get_ints(n, "axes", &ax) : 0;
    if (c != IR_CLS_ELEM && !(n->op == IR_OP_REDUCE && nax > 0 &&
                              ir_attr_get_int(n, "keepdims", 1) == 1))
        return IR_NONE;
    if (c == IR_CLS_ELEM && (ir_attr_find(n, "axis") || ir_attr_find(n, "axes")))
        return IR_NONE;                         /* an axis would name the wrong dim */
    for (int i = 0; i < nax; i++)
        if (ax[i] <= hx)                        /* only trailing reductions */
            return IR_NONE;
    ValId in[4];
    for (int i = 0; i < n->nin; i++)
        if ((in[i] = gq_operand(q, n->in[i], hx, r, G, build, &n->origin)) == IR_NONE)
            return IR_NONE;
    *hx_out = hx, *g_out = G;
    if (!build)
        return in[0];
    if (n->op == IR_OP_REDUCE) {
        int64_t a1[IR_MAX_RANK];
        for (int i = 0; i < nax; i++)
            a1[i] = ax[i] + 1;
        return ir_reduce(g, (int)ir_attr_get_int(n, "fn", 0), in[0], a1, nax, true,
                         &n->origin);
    }
    return ir_node(g, ir_add_node(g, n->op, in, n->nin, n->attrs, n->nattrs, &n->origin))->out[0];
}

/* Whether every value on the split path is used only on it (or is a last product's
 * result), and no split value is a graph output: a dry run over the nodes in order. */
static bool gq_closed(Gqa *q)
{
    IrGraph *g = q->g;
    bool any = false;
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        int hx;
        int64_t G;
        bool term;
        if (n->dead)
            continue;
        bool on = gq_node(q, n, false, &hx, &G, &term) != IR_NONE;
        for (int j = 0; j < n->nin; j++) {
            ValId v = n->in[j];
            if (!on && v != IR_NONE && v < q->nvals && q->lift[v] != IR_NONE && !q->term[v])
                return false;               /* a split value used off the path */
        }
        if (on) {
            q->lift[n->out[0]] = n->out[0];     /* marks it split (dry run) */
            q->hx[n->out[0]] = hx;
            q->grp[n->out[0]] = G;
            q->term[n->out[0]] = term;
            any = any || term;
        }
    }
    for (uint32_t o = 0; o < g->noutputs; o++)
        if (q->lift[g->outputs[o]] != IR_NONE && !q->term[g->outputs[o]])
            return false;
    return any;
}

/* Compute grouped-query attention of g on split heads (header). */
void pass_gqa(IrGraph *g)
{
    Gqa q = {.g = g, .nvals = g->nvals};
    q.lift = ir_scratch(g, sizeof(ValId) * (g->nvals + 1));
    q.hx = ir_scratch(g, sizeof(int32_t) * (g->nvals + 1));
    q.grp = ir_scratch(g, sizeof(int64_t) * (g->nvals + 1));
    q.term = ir_scratch(g, g->nvals + 1);
    for (uint32_t v = 0; v < g->nvals; v++)
        q.lift[v] = IR_NONE;
    if (!gq_closed(&q))
        return;
    for (uint32_t v = 0; v < g->nvals; v++)
        q.lift[v] = IR_NONE;
    uint32_t n = 0;
    IrNode *old = ir_rewrite_begin(g, &n);
    for (uint32_t i = 0; i < n && !ir_failed(g); i++) {
        int hx;
        int64_t G;
        bool term;
        if (old[i].dead)
            continue;
        ValId v = gq_node(&q, &old[i], true, &hx, &G, &term);
        if (v == IR_NONE) {
            ir_readd_node(g, &old[i]);
            continue;
        }
        ValId o = old[i].out[0];
        q.lift[o] = v, q.hx[o] = hx, q.grp[o] = G, q.term[o] = term;
        pass_readd_reshape(g, &old[i], v);      /* the old value: a view of the split one */
    }
}
