/* fuse.c: group core-op nodes into kernels (IrKernel).
 *
 *   ELEM      a maximal tree of pointwise nodes whose intermediates have one use; or a
 *             row-resident group (softmax, layer/group/RMS norm): pointwise nodes and
 *             keepdims reductions over the same trailing dims of one shape, every
 *             intermediate consumed inside the group, whole rows kept in LX
 *   CONTRACT  one MATMUL/CONV whose output, used only there, is a leaf of a pointwise
 *             tree of the same shape (the epilogue: bias, relu, residual add, ...; GELU
 *             or swish read it twice, from the tile in LX); a CONV
 *             also absorbs the spatial zero PAD that produces its input; a MATMUL
 *             also anchors a row-resident group over its result that reduces the
 *             last axis (attention: scale, mask, softmax), its N tile whole rows;
 *             a MATMUL takes in the side sums of its int8 operands that only its
 *             epilogue reads (zero-point corrections, plan_sums.c) as prologue members
 *   REDUCE    one REDUCE/ARGREDUCE/WINDOW/CUMSUM with a pointwise prologue tree on its
 *             single-use input and an epilogue tree like a contraction's
 *   MOVE      one PAD, CONCAT, GATHER, or a view op that must be materialised
 *   COPY      a graph output that cannot be written in place (an input, a constant,
 *             a value listed twice, a strided view)
 * View ops (RESHAPE, TRANSPOSE, SLICE, EXPAND, and GATHER with constant indices
 * first + k*step) normally become virtual: no kernel, their consumers read the source
 * through a strided view. They are materialised when they are graph outputs, when a
 * RESHAPE of a strided view is not expressible as strides, or when GATHER needs
 * contiguous table rows. A CONCAT whose inputs are all single-use kernel results is
 * done in place: each producer stores into its slice of the output (no kernel).
 * Every kernel writes exactly one value, produced by its last node, so running kernels
 * in the order of that node keeps the graph's dependencies. Once the groups are known,
 * a requantization whose 8-bit value stays inside one is folded (requant.c). At -O0
 * nothing is fused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusecost.h"
#include "isa.h"
#include "pass.h"
#include "plan/plan.h"
#include "requant.h"
#include "tile.h"

enum { ROLE_NONE = 0, ROLE_PRO, ROLE_ANCHOR, ROLE_EPI };

typedef struct {
    IrKernelKind kind;
    NodeId anchor, root;
    ValId out;
    uint32_t out_index;
    ValId ref;                             /* ELEM: iteration-space value */
    int nred;                              /* ELEM: row-resident reduced dims */
} Group;

#define ROW_MAX_NODES 64                   /* largest row-resident group */

typedef struct {
    IrGraph *g;
    Plan *s;
    bool fuse;                             /* opt_level >= 1 */
    uint32_t *nuse;                        /* uses by live nodes and graph outputs */
    uint8_t *is_out;
    uint8_t *force;                        /* per node: view must be materialised */
    uint32_t *grp;                         /* per node: group index or IR_NONE */
    uint8_t *role;                         /* per node: ROLE_* */
    Group *gs;
    uint32_t ngs, capgs;
    NodeId *stack;
    NodeId *mem;                           /* members of the tree being collected */
    uint32_t nmem;
    uint32_t *ufirst;                      /* consumers of value v: ulist[ufirst[v]..[v+1]) */
    NodeId *ulist;
    uint64_t lx_budget;                    /* 0: no row-resident fusion */
    const SpyTarget *target;               /* the cost model's rates (NULL: none) */
} Fuse;

/* Whether n is a live node (not dead, not a virtual view). */
static bool live(Fuse *f, NodeId n)
{
    return n != IR_NONE && !f->g->nodes[n].dead && !f->s->node[n].virt;
}

/* View ops, and gathers with constant arithmetic indices (slices in disguise). */
static bool is_view_node(IrGraph *g, const IrNode *n)
{
    int64_t a, b;
    return (ir_op_info[n->op].flags & IR_OPF_VIEW) || plan_gather_view(g, n, &a, &b);
}

/* Count uses of every value by live nodes and graph outputs. */
static void count_uses(Fuse *f)
{
    IrGraph *g = f->g;
    memset(f->nuse, 0, g->nvals * sizeof *f->nuse);
    memset(f->is_out, 0, g->nvals);
    for (NodeId n = 0; n < g->nnodes; n++) {
        if (g->nodes[n].dead)
            continue;
        for (int i = 0; i < g->nodes[n].nin; i++)
            if (g->nodes[n].in[i] != IR_NONE)
                f->nuse[g->nodes[n].in[i]]++;
    }
    f->ufirst = ir_scratch(g, (g->nvals + 2) * sizeof *f->ufirst);
    for (ValId v = 0; v < g->nvals; v++)
        f->ufirst[v + 1] = f->ufirst[v] + f->nuse[v];
    f->ulist = ir_scratch(g, (f->ufirst[g->nvals] + 1) * sizeof *f->ulist);
    uint32_t *fill = ir_scratch(g, (g->nvals + 1) * sizeof *fill);
    for (NodeId n = 0; n < g->nnodes; n++) {
        if (g->nodes[n].dead)
            continue;
        for (int i = 0; i < g->nodes[n].nin; i++) {
            ValId v = g->nodes[n].in[i];
            if (v != IR_NONE)
                f->ulist[f->ufirst[v] + fill[v]++] = n;
        }
    }
    for (uint32_t i = 0; i < g->noutputs; i++) {
        f->nuse[g->outputs[i]]++;
        f->is_out[g->outputs[i]] = 1;
    }
}

/* True if the rows of gather table view vw (dims after axis) are contiguous. */
static bool rows_contiguous(const IrType *t, int axis, const IrView *vw)
{
    int64_t want = 1;
    for (int i = t->rank - 1; i > axis; i--)
        if (t->dims[i] == 0)
            return true;         /* rows of no element (own strides count it as 1) */
    for (int i = t->rank - 1; i > axis; i--) {
        if (t->dims[i] != 1 && vw->stride[i] != want)
            return false;
        want *= t->dims[i];
    }
    return true;
}

/* Whether CONCAT node n can be done in place: every input is computed by a kernel
 * (or another in-place concat) for this concat only, so each producer can store
 * straight into its slice of the concat's output. */
static bool concat_in_place(Fuse *f, NodeId n)
{
    IrGraph *g = f->g;
    const IrNode *nd = &g->nodes[n];
    if (!f->fuse || f->force[n])
        return false;
    for (int i = 0; i < nd->nin; i++) {
        ValId v = nd->in[i];
        NodeId p = ir_val(g, v)->def;
        if (p == IR_NONE || g->nodes[p].dead || ir_val(g, v)->kind != IR_VAL_ACT ||
            f->nuse[v] != 1 || f->is_out[v] ||
            (f->s->node[p].virt && g->nodes[p].op != IR_OP_CONCAT))
            return false;
    }
    return true;
}

/* Whether node n is an edge conversion that can be a view (plan_edge_cast): the
 * float32 graph input is read by it alone, and its readers load through cg_dma (no
 * GATHER or SCATTER, no further view), so that their LOADs convert. */
static bool edge_view(Fuse *f, const IrNode *n)
{
    IrGraph *g = f->g;
    if (!f->fuse || !plan_edge_cast(g, n) || f->nuse[n->in[0]] != 1 || f->is_out[n->in[0]])
        return false;
    ValId v = n->out[0];
    for (uint32_t u = f->ufirst[v]; u < f->ufirst[v + 1]; u++) {
        const IrNode *c = &g->nodes[f->ulist[u]];
        if (c->op == IR_OP_GATHER || c->op == IR_OP_SCATTER || is_view_node(g, c))
            return false;
    }
    return true;
}

/* Whether virtual TRANSPOSE node n can be done in place (PlanNode.inplace): its input
 * is a kernel's result read by n alone, the innermost dim stays innermost (the
 * producer's stores keep their runs), and a RESHAPE of n's output had to be
 * materialised because the transposed strides cannot be reshaped. Then the producer
 * stores in the transposed order and the reshape becomes a view: one kernel less. */
static bool transpose_in_place(Fuse *f, NodeId n)
{
    IrGraph *g = f->g;
    const IrNode *nd = &g->nodes[n];
    const int64_t *perm = NULL;
    if (!f->fuse || nd->dead || nd->op != IR_OP_TRANSPOSE || !f->s->node[n].virt)
        return false;
    int r = ir_attr_get_ints(nd, "perm", &perm);
    ValId v = nd->in[0], o = nd->out[0];
    NodeId p = ir_val(g, v)->def;
    if (r < 1 || perm[r - 1] != r - 1 || !live(f, p) || ir_val(g, v)->kind != IR_VAL_ACT ||
        f->nuse[v] != 1 || f->is_out[v])
        return false;
    bool gain = false;
    for (uint32_t u = f->ufirst[o]; u < f->ufirst[o + 1]; u++) {
        NodeId c = f->ulist[u];
        const IrNode *cn = &g->nodes[c];
        gain |= !cn->dead && cn->op == IR_OP_RESHAPE && !f->s->node[c].virt &&
                !f->is_out[cn->out[0]] && !f->force[c];
    }
    return gain;
}

/* Mark the in-place TRANSPOSEs (transpose_in_place) and make the RESHAPEs of their
 * outputs virtual again (plan_compute_views then gives them dense strides). */
static void mark_transposes(Fuse *f)
{
    IrGraph *g = f->g;
    for (NodeId n = 0; n < g->nnodes; n++) {
        if (!transpose_in_place(f, n))
            continue;
        ValId o = g->nodes[n].out[0];
        f->s->node[n].inplace = true;
        for (uint32_t u = f->ufirst[o]; u < f->ufirst[o + 1]; u++) {
            NodeId c = f->ulist[u];
            const IrNode *cn = &g->nodes[c];
            if (!cn->dead && cn->op == IR_OP_RESHAPE && !f->is_out[cn->out[0]] && !f->force[c])
                f->s->node[c].virt = true;
        }
    }
}

/* A materialised RESHAPE (a MOVE kernel iterating its input's dims) stores through the
 * view that an in-place consumer (a CONCAT's slice, a TRANSPOSE's order) gives its
 * result only when that view can be read over the input's dims (tile.c move_accesses);
 * where it cannot, that consumer gets a kernel of its own (force). False if any did. */
static bool check_reshape_stores(Fuse *f)
{
    IrGraph *g = f->g;
    Plan *s = f->s;
    bool ok = true;
    for (NodeId n = 0; n < g->nnodes; n++) {
        const IrNode *nd = &g->nodes[n];
        ValId o = nd->out[0];
        IrView tmp;
        if (nd->dead || nd->op != IR_OP_RESHAPE || s->node[n].virt || !s->val[o].virt ||
            plan_view_reshape(ir_vtype(g, o), &s->val[o].view, ir_vtype(g, nd->in[0]), &tmp))
            continue;
        IR_ASSERT(f->nuse[o] == 1 && f->ufirst[o] < f->ufirst[o + 1]);
        f->force[f->ulist[f->ufirst[o]]] = 1;
        ok = false;
    }
    return ok;
}

/* Decide which view nodes are virtual (and which CONCATs are done in place) and
 * compute the (row-major) views through plan_compute_views. Returns false when a
 * gather forced another view to be materialised (the caller repeats). */
static bool choose_views(Fuse *f)
{
    IrGraph *g = f->g;
    Plan *s = f->s;
    for (NodeId n = 0; n < g->nnodes; n++) {
        IrNode *nd = &g->nodes[n];
        s->node[n].virt = !nd->dead && (is_view_node(g, nd) || edge_view(f, nd)) &&
                          !f->is_out[nd->out[0]] &&
                          !f->force[n] &&
                          (f->fuse || nd->op == IR_OP_RESHAPE || nd->op == IR_OP_BITCAST);
        s->node[n].inplace = false;
    }
    plan_compute_views(g, NULL);           /* unmarks views not expressible as strides */
    mark_transposes(f);
    plan_compute_views(g, NULL);           /* with the in-place transposes */
    for (NodeId n = 0; n < g->nnodes; n++)
        if (!g->nodes[n].dead && g->nodes[n].op == IR_OP_CONCAT && concat_in_place(f, n))
            s->node[n].virt = true;
    plan_compute_views(g, NULL);           /* with the in-place concats' slices */
    bool stable = check_reshape_stores(f);
    for (NodeId n = 0; n < g->nnodes; n++) {
        IrNode *nd = &g->nodes[n];
        if (nd->dead || nd->op != IR_OP_GATHER || s->node[n].virt)
            continue;
        ValId d = nd->in[0];
        int axis = (int)ir_attr_get_int(nd, "axis", 0);
        if (!rows_contiguous(ir_vtype(g, d), axis, &s->val[d].view)) {
            NodeId p = ir_val(g, d)->def;
            IR_ASSERT(p != IR_NONE && s->node[p].virt);
            f->force[p] = 1;
            stable = false;
        }
    }
    return stable;
}

/* Start a new group rooted at node n. */
static uint32_t new_group(Fuse *f, IrKernelKind kind, NodeId anchor, NodeId root, ValId out)
{
    if (f->ngs == f->capgs) {              /* in scratch: an out of memory frees it */
        f->capgs = f->capgs ? 2 * f->capgs : 64;
        Group *ng = ir_scratch(f->g, f->capgs * sizeof *ng);
        if (f->ngs)
            memcpy(ng, f->gs, f->ngs * sizeof *ng);
        f->gs = ng;
    }
    f->gs[f->ngs] = (Group){kind, anchor, root, out, 0, out, 0};
    return f->ngs++;
}

/* Whether types a and b have the same shape (their dtypes may differ: in fp16 mode a
 * softmax's MAX reads DLFloat16, its SUM float32). */
static bool same_shape(const IrType *a, const IrType *b)
{
    return a->rank == b->rank && memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) == 0;
}

/* Whether value v (input of a group member) may pull its producer into the group. */
static bool absorbable(Fuse *f, ValId v)
{
    NodeId p = ir_val(f->g, v)->def;
    return f->fuse && live(f, p) && f->grp[p] == IR_NONE && f->nuse[v] == 1 && !f->is_out[v];
}

/* Add the pointwise tree ending at node start to group gi with role r. */
static void collect_tree(Fuse *f, NodeId start, uint32_t gi, uint8_t r)
{
    IrGraph *g = f->g;
    uint32_t sp = 0;
    f->stack[sp++] = start;
    f->grp[start] = gi;
    while (sp) {
        NodeId n = f->stack[--sp];
        f->role[n] = r;
        f->mem[f->nmem++] = n;
        for (int i = 0; i < g->nodes[n].nin; i++) {
            ValId v = g->nodes[n].in[i];
            NodeId p = ir_val(g, v)->def;
            if (absorbable(f, v) && ir_op_info[g->nodes[p].op].cls == IR_CLS_ELEM) {
                f->grp[p] = gi;
                f->stack[sp++] = p;
            }
        }
    }
}

static bool uses_inside(Fuse *f, ValId v, uint32_t gi);

/* Whether leaf v of group gi may pull its producer, a contraction, into the group as
 * its anchor: v used once, or only by members of gi (GELU's x = x * Phi(x) over a
 * MATMUL's result: the epilogue reads the tile twice, kept in LX). */
static bool anchorable(Fuse *f, ValId v, uint32_t gi)
{
    NodeId p = ir_val(f->g, v)->def;
    if (absorbable(f, v))
        return true;
    return f->fuse && live(f, p) && f->grp[p] == IR_NONE &&
           ir_op_info[f->g->nodes[p].op].cls == IR_CLS_CONTRACT && uses_inside(f, v, gi);
}

/* Among the leaves of group gi (root value rv), the latest contraction or reduction
 * whose output has rv's shape and is used only in the group (a reduction's: once);
 * IR_NONE if none. */
static NodeId find_anchor(Fuse *f, uint32_t gi, ValId rv)
{
    IrGraph *g = f->g;
    const IrType *rt = ir_vtype(g, rv);
    NodeId best = IR_NONE;
    for (uint32_t m = 0; m < f->nmem; m++) {
        NodeId n = f->mem[m];
        for (int i = 0; i < g->nodes[n].nin; i++) {
            ValId v = g->nodes[n].in[i];
            NodeId p = ir_val(g, v)->def;
            if (!anchorable(f, v, gi))
                continue;
            IrOpClass c = ir_op_info[g->nodes[p].op].cls;
            const IrType *t = ir_vtype(g, v);
            bool same = t->rank == rt->rank &&
                        memcmp(t->dims, rt->dims, (size_t)t->rank * sizeof t->dims[0]) == 0;
            if ((c == IR_CLS_CONTRACT || c == IR_CLS_REDUCE) && same &&
                (best == IR_NONE || p > best))
                best = p;
        }
    }
    return best;
}

/* The members of group gi in the tree of pointwise nodes that ends at node n, into
 * f->stack from index sp on; returns the new end. */
static uint32_t subtree(Fuse *f, uint32_t gi, NodeId n, uint32_t sp)
{
    uint32_t top = sp;
    f->stack[top++] = n;
    for (uint32_t i = sp; i < top; i++) {
        const IrNode *nd = &f->g->nodes[f->stack[i]];
        for (int k = 0; k < nd->nin; k++) {
            NodeId p = ir_val(f->g, nd->in[k])->def;
            if (p != IR_NONE && f->grp[p] == gi && f->role[p] == ROLE_EPI)
                f->stack[top++] = p;
        }
    }
    return top;
}

/* Whether the members in f->stack[0, top) read the result of the anchor (*mine) or
 * of another contraction they may absorb (*other; a constant has no def). */
static void tree_reads(Fuse *f, uint32_t top, NodeId anchor, bool *mine, bool *other)
{
    IrGraph *g = f->g;
    *mine = *other = false;
    for (uint32_t i = 0; i < top; i++) {
        const IrNode *s = &g->nodes[f->stack[i]];
        for (int k = 0; k < s->nin; k++) {
            NodeId p = ir_val(g, s->in[k])->def;
            *mine |= anchor != IR_NONE && p == anchor;
            *other |= p != IR_NONE && p != anchor && absorbable(f, s->in[k]) &&
                      ir_op_info[g->nodes[p].op].cls == IR_CLS_CONTRACT;
        }
    }
}

/* Takes the members f->stack[0, top) out of group gi: the walk of group_nodes meets
 * them later and groups them again. */
static void release(Fuse *f, uint32_t top)
{
    for (uint32_t i = 0; i < top; i++) {
        f->grp[f->stack[i]] = IR_NONE;
        f->role[f->stack[i]] = ROLE_NONE;
    }
}

/* A pointwise subtree of convolution group gi's epilogue that does not read the
 * anchor but reads another convolution's result of its own shape (resnet50's
 * projection shortcut: relu(conv_a + bias_a + (conv_b + bias_b))) leaves the group,
 * so that it becomes that contraction's epilogue: the bias then runs on the other
 * kernel's accumulators in registers, and this kernel reads the finished residual
 * instead of a separate pass over it (resnet50's first block: 0.82 -> 0.6 ms). The
 * same operations per element in the same order. Only convolutions: a MATMUL's
 * epilogue may hold the side sums of its int8 operands (absorb_sums), which stay. */
static void release_foreign(Fuse *f, uint32_t gi, NodeId anchor)
{
    IrGraph *g = f->g;
    for (uint32_t m = 0; m < f->nmem; m++) {
        NodeId n = f->mem[m];
        if (n == anchor || n == f->gs[gi].root || f->grp[n] != gi || g->nodes[n].nout != 1)
            continue;
        uint32_t top = subtree(f, gi, n, 0);
        bool mine, other, shaped = false;
        tree_reads(f, top, anchor, &mine, &other);
        for (uint32_t i = 0; i < top && other && !mine; i++) {
            const IrNode *s = &g->nodes[f->stack[i]];
            for (int k = 0; k < s->nin; k++) {
                NodeId p = ir_val(g, s->in[k])->def;
                shaped |= p != IR_NONE && absorbable(f, s->in[k]) && g->nodes[p].op == IR_OP_CONV &&
                          same_shape(ir_vtype(g, s->in[k]), ir_vtype(g, g->nodes[n].out[0]));
            }
        }
        if (shaped)
            release(f, top);
    }
}

/* A member of group gi that narrows the result of another contraction than the
 * group's anchor leaves the group with the pointwise tree that computes it, so that
 * the tree becomes that contraction's epilogue and the contraction stores the narrow
 * values, not its 4-byte accumulator: in fp16 mode a CAST to DLFloat16 of the
 * contraction's output itself; a CAST to an 8-bit integer (a requantization) of a
 * tree over it that does not read the anchor. */
static void release_narrowing(Fuse *f, uint32_t gi, NodeId anchor)
{
    IrGraph *g = f->g;
    for (uint32_t m = 0; m < f->nmem; m++) {
        NodeId n = f->mem[m];
        const IrNode *nd = &g->nodes[n];
        IrDType t = nd->nout == 1 ? ir_vtype(g, nd->out[0])->dtype : IR_DT_UNDEF;
        bool half = t == IR_DT_DLF16;
        if (n == anchor || n == f->gs[gi].root || f->grp[n] != gi || nd->op != IR_OP_CAST ||
            (!half && t != IR_DT_I8 && t != IR_DT_U8))
            continue;
        uint32_t top = half ? 1 : subtree(f, gi, n, 0);
        f->stack[0] = n;
        bool other, mine;
        tree_reads(f, top, anchor, &mine, &other);
        if (other && !mine)
            release(f, top);
    }
}

/* Adds to group gi, as its prologue, the PAD producing v when v is read by that group
 * alone and the pad only widens dims from `first` on (no interior, no crop): the
 * kernel (a convolution, a pooling window) loads the unpadded rows into an LX patch
 * whose border it fills with the pad value. */
static void take_widening_pad(Fuse *f, ValId v, int first, uint32_t gi)
{
    IrGraph *g = f->g;
    NodeId p = ir_val(g, v)->def;
    int r = ir_vtype(g, v)->rank;
    if (!absorbable(f, v) || g->nodes[p].op != IR_OP_PAD)
        return;
    const IrNode *pd = &g->nodes[p];
    const int64_t *pads, *inter;
    if (ir_attr_get_ints(pd, "pads", &pads) != 2 * r)
        return;
    int ni = ir_attr_get_ints(pd, "interior", &inter);
    for (int i = 0; i < r; i++)
        if (pads[i] < 0 || pads[i + r] < 0 || (i < first && (pads[i] || pads[i + r])) ||
            (ni == r && inter[i] != 0))
            return;
    f->grp[p] = gi;
    f->role[p] = ROLE_PRO;
}

/* Whether window node w's strides and dilations let its padded patch be loaded as
 * window_pad_item does: two spatial dims, dilation 1, stride at most the kernel (the
 * patch then fits the window tile's buffer). */
static bool window_pad_geometry(const IrNode *w)
{
    const int64_t *k, *s = NULL, *d = NULL;
    if (ir_attr_get_ints(w, "kernel", &k) != 2)
        return false;
    int ns = ir_attr_get_ints(w, "strides", &s), nd = ir_attr_get_ints(w, "dilations", &d);
    for (int i = 0; i < 2; i++) {
        int64_t si = ns == 2 ? s[i] : 1, di = nd == 2 ? d[i] : 1;
        if (k[i] < 1 || di != 1 || si < 1 || si > k[i])
            return false;
    }
    return true;
}

/* A 2-d MAX / MIN pooling window absorbs the PAD producing its input when the pad only
 * widens the two spatial dims (no interior, no crop) of a graph without symbolic dims:
 * each work item loads its rows of the unpadded input into an LX patch whose border
 * holds the pad value (codegen/cg_reduce.c window_pad_item), instead of a kernel of
 * its own writing the padded copy to DRAM for the pooling to read back (resnet50's
 * max pool: 62.6 us of 2273 modelled). */
static void absorb_window_pad(Fuse *f, NodeId win, uint32_t gi)
{
    ValId v = f->g->nodes[win].in[0];
    int r = ir_vtype(f->g, v)->rank;
    if (!f->g->nsymdims && r >= 3 && window_pad_geometry(&f->g->nodes[win]))
        take_widening_pad(f, v, r - 2, gi);
}

/* Prologue of a reduction anchor: the pointwise tree producing its input. Not for a
 * MAX / MIN pooling window: it loads its input rows as a patch (codegen/cg_reduce.c),
 * which a prologue would have to run on im2col tiles; the tree is better its
 * producer's epilogue (conv, cast, relu, then the pool). */
static void collect_prologue(Fuse *f, NodeId anchor, uint32_t gi)
{
    const IrNode *a = &f->g->nodes[anchor];
    int fn = (int)ir_attr_get_int(a, "fn", 0);
    if (a->op == IR_OP_WINDOW && (fn == IR_RED_MAX || fn == IR_RED_MIN)) {
        absorb_window_pad(f, anchor, gi);
        return;
    }
    ValId v = f->g->nodes[anchor].in[0];
    NodeId p = ir_val(f->g, v)->def;
    if (absorbable(f, v) && ir_op_info[f->g->nodes[p].op].cls == IR_CLS_ELEM)
        collect_tree(f, p, gi, ROLE_PRO);
}

/* Number of trailing axes a keepdims REDUCE reduces (its axes must be exactly the last
 * k dims); 0 if it is not such a reduction. */
static int trailing_reduce(IrGraph *g, const IrNode *n)
{
    if (n->op != IR_OP_REDUCE)
        return 0;
    const IrType *x = ir_vtype(g, n->in[0]), *o = ir_vtype(g, n->out[0]);
    const int64_t *ax;
    int nax = ir_attr_get_ints(n, "axes", &ax);
    if (o->rank != x->rank || x->rank == 0)
        return 0;
    if (nax < 0)
        return x->rank;
    for (int i = 0; i < nax; i++)
        if (ax[i] != x->rank - nax + i)
            return 0;
    return nax;
}

/* True if every consumer of v is in group gi (and v is not a graph output). */
static bool uses_inside(Fuse *f, ValId v, uint32_t gi)
{
    FoldUses u = {f->grp, f->nuse, f->ufirst, f->ulist, f->is_out};
    return fuse_uses_inside(&u, v, gi);
}

/* True if shape t broadcasts into s (right-aligned, dims equal or 1). */
static bool fits_into(const IrType *t, const IrType *s)
{
    if (t->rank > s->rank)
        return false;
    for (int i = 0; i < t->rank; i++) {
        int64_t d = t->dims[i], e = s->dims[i + s->rank - t->rank];
        if (d != e && d != 1)
            return false;
    }
    return true;
}

/* Grow group gi from root: add producers (pointwise nodes and trailing keepdims
 * reductions of floats) all of whose results are consumed inside the group. (Integer
 * sums are the zero-point corrections of an int8 product, over its depth, not over the
 * rows of the group: they stay kernels of their own.) */
static void grow_closure(Fuse *f, NodeId root, uint32_t gi)
{
    IrGraph *g = f->g;
    f->nmem = 0;
    f->grp[root] = gi;
    f->mem[f->nmem++] = root;
    for (bool changed = true; changed && f->nmem < ROW_MAX_NODES;) {
        changed = false;
        for (uint32_t m = 0; m < f->nmem && f->nmem < ROW_MAX_NODES; m++) {
            const IrNode *nd = &g->nodes[f->mem[m]];
            for (int i = 0; i < nd->nin && f->nmem < ROW_MAX_NODES; i++) {
                NodeId p = ir_val(g, nd->in[i])->def;
                if (!live(f, p) || f->grp[p] != IR_NONE || g->nodes[p].nout != 1)
                    continue;
                bool ok = ir_op_info[g->nodes[p].op].cls == IR_CLS_ELEM ||
                          (trailing_reduce(g, &g->nodes[p]) > 0 &&
                           ir_dtype_is_float(ir_vtype(g, g->nodes[p].out[0])->dtype));
                if (ok && uses_inside(f, nd->in[i], gi)) {
                    f->grp[p] = gi;
                    f->mem[f->nmem++] = p;
                    changed = true;
                }
            }
        }
    }
}

/* Order node ids ascending (topological). */
static int cmp_node(const void *a, const void *b)
{
    NodeId x = *(const NodeId *)a, y = *(const NodeId *)b;
    return (x > y) - (x < y);
}

/* Whether one row of the closure in f->mem (the tile program pass_tile would build with
 * a single row) fits half of the scratchpad budget. */
static bool row_fits(Fuse *f, const IrType *s, int k)
{
    IrGraph *g = f->g;
    TileMap m;
    TileSpec sp;
    IrTileProg tp;
    NodeId *steps = ir_scratch(g, (f->nmem + 1) * sizeof *steps);
    memcpy(steps, f->mem, f->nmem * sizeof *steps);
    qsort(steps, f->nmem, sizeof *steps, cmp_node);
    tile_map_identity(&m, s);
    memset(&sp, 0, sizeof sp);
    sp.map = &m;
    sp.nrow = s->rank - k;
    for (int d = 0; d < s->rank; d++) {
        sp.order[d] = d;
        sp.cap[d] = d < s->rank - k ? 1 : s->dims[d];
    }
    sp.steps = steps;
    sp.nsteps = f->nmem;
    sp.seed = sp.xseed[0] = sp.xseed[1] = IR_NONE;
    sp.result = g->nodes[f->mem[0]].out[0];
    sp.store = true;
    bool ok = tile_prog_build(g, &sp, 0, &tp) && tp.lx_hi <= f->lx_budget / 2;
    tile_prog_free(&tp);
    return ok;
}

/* Whether the closure in f->mem is worth a row-resident kernel and valid: it reduces
 * one shape over the same trailing dims, every value broadcasts into that shape, it
 * needs more than a tree (several reductions or a value used twice), and a row of
 * every value fits half of the scratchpad. Sets *ref, *nred. */
static bool rows_valid(Fuse *f, ValId *ref, int *nred)
{
    IrGraph *g = f->g;
    const IrType *s = NULL;
    int nr = 0, k = 0;
    bool multi = false;
    for (uint32_t m = 0; m < f->nmem; m++) {
        const IrNode *nd = &g->nodes[f->mem[m]];
        int kk = trailing_reduce(g, nd);
        if (nd->op == IR_OP_REDUCE) {
            const IrType *x = ir_vtype(g, nd->in[0]);
            if (kk == 0 || (s && (kk != k || !same_shape(x, s))))
                return false;
            s = x;
            k = kk;
            *ref = nd->in[0];
            nr++;
        }
        multi |= m > 0 && f->nuse[nd->out[0]] > 1;
    }
    /* one reduction whose result is not broadcast back: a REDUCE kernel (with its
     * prologue/epilogue trees) does the same and can chunk long rows */
    bool back = false;
    if (s) {
        const IrType *rt = ir_vtype(g, g->nodes[f->mem[0]].out[0]);
        for (int i = s->rank - k; i < s->rank; i++) {
            int j = i - (s->rank - rt->rank);
            back |= j >= 0 && rt->dims[j] > 1;
        }
    }
    if (nr == 0 || (nr < 2 && !multi && !back))
        return false;
    for (uint32_t m = 0; m < f->nmem; m++) {
        const IrNode *nd = &g->nodes[f->mem[m]];
        for (int i = 0; i < nd->nin; i++)
            if (!fits_into(ir_vtype(g, nd->in[i]), s))
                return false;
        if (!fits_into(ir_vtype(g, nd->out[0]), s))
            return false;
    }
    *nred = k;
    return row_fits(f, s, k);
}

/* A MATMUL anchor of group gi (members in f->mem) takes in the side sums of its
 * operands that only the group reads (plan_sums.c): they become prologue members,
 * computed on the operand tiles the kernel loads. */
static void absorb_sums(Fuse *f, NodeId anchor, uint32_t gi)
{
    IrGraph *g = f->g;
    if (!f->fuse || g->nodes[anchor].op != IR_OP_MATMUL)
        return;
    for (uint32_t m = 0; m < f->nmem; m++) {
        const IrNode *nd = &g->nodes[f->mem[m]];
        for (int i = 0; f->grp[f->mem[m]] == gi && i < nd->nin; i++) {
            NodeId p = ir_val(g, nd->in[i])->def;
            if (live(f, p) && f->grp[p] == IR_NONE && uses_inside(f, nd->in[i], gi) &&
                plan_side_kind(g, anchor, p)) {
                f->grp[p] = gi;
                f->role[p] = ROLE_PRO;
            }
        }
    }
}

/* Row-resident group gi (members in f->mem) reducing the last axis only: if one of its
 * leaves is a single-use MATMUL result of exactly the reduced shape, that matmul
 * becomes the anchor of a CONTRACT kernel whose epilogue is the whole group (scores
 * of attention never reach DRAM). Its N tile then spans whole rows, so the matmul's
 * A/B/C tiles at their smallest (one row, depth 1) must fit beside half the budget
 * (row_fits already checked the row program against the other half). */
static void absorb_rows_matmul(Fuse *f, uint32_t gi)
{
    IrGraph *g = f->g;
    Group *gr = &f->gs[gi];
    const IrType *s = ir_vtype(g, gr->ref);
    if (gr->nred != 1 || s->rank < 2 ||
        3 * tile_align(4 * (uint64_t)s->dims[s->rank - 1]) > f->lx_budget / 2)
        return;
    NodeId best = IR_NONE;
    for (uint32_t m = 0; m < f->nmem; m++) {
        const IrNode *nd = &g->nodes[f->mem[m]];
        for (int i = 0; i < nd->nin; i++) {
            ValId v = nd->in[i];
            NodeId p = ir_val(g, v)->def;
            const IrType *t = ir_vtype(g, v);
            if (absorbable(f, v) && g->nodes[p].op == IR_OP_MATMUL && t->rank == s->rank &&
                memcmp(t->dims, s->dims, (size_t)t->rank * sizeof t->dims[0]) == 0 &&
                (best == IR_NONE || p > best))
                best = p;
        }
    }
    if (best == IR_NONE)
        return;
    if (!pass_fusecost_rows_group(g, f->target, best, f->mem, f->nmem, f->grp, gi,
                                  f->gs[gi].out)) {
        release_narrowing(f, gi, IR_NONE);   /* the matmul's kernel stores it narrow */
        return;
    }
    gr->kind = IR_KK_CONTRACT;
    gr->anchor = best;
    f->grp[best] = gi;
    f->role[best] = ROLE_ANCHOR;
    absorb_sums(f, best, gi);
}

/* Try a row-resident ELEM group rooted at node n (softmax, layer norm: reductions
 * over the last dims whose rows stay in LX). False (nothing grouped) if not
 * applicable. */
static bool try_rows(Fuse *f, NodeId n)
{
    if (!f->fuse || !f->lx_budget)
        return false;
    IrNode *nd = &f->g->nodes[n];
    uint32_t gi = new_group(f, IR_KK_ELEM, IR_NONE, n, nd->out[0]);
    grow_closure(f, n, gi);
    ValId ref = IR_NONE;
    int nred = 0;
    if (!rows_valid(f, &ref, &nred)) {
        for (uint32_t m = 0; m < f->nmem; m++)
            f->grp[f->mem[m]] = IR_NONE;
        f->ngs--;
        return false;
    }
    for (uint32_t m = 0; m < f->nmem; m++)
        f->role[f->mem[m]] = ROLE_EPI;
    f->gs[gi].ref = ref;
    f->gs[gi].nred = nred;
    absorb_rows_matmul(f, gi);
    return true;
}

/* A CONV with 1 or 2 spatial dims absorbs the PAD producing its input when the pad
 * only widens spatial dims (no interior, no crop): the kernel loads the unpadded rows
 * into an LX patch whose border is filled with the pad value. */
static void absorb_pad(Fuse *f, NodeId conv, uint32_t gi)
{
    ValId v = f->g->nodes[conv].in[0];
    if (ir_vtype(f->g, v)->rank <= 4)
        take_widening_pad(f, v, 2, gi);
}

/* Grow pointwise group gi (members in f->mem) by the pointwise producers all of whose
 * results are consumed inside it, with their trees (role r): an epilogue that reads a
 * value twice (GELU's x) stays one kernel, its intermediates in LX. */
static void close_tree(Fuse *f, uint32_t gi, uint8_t r)
{
    IrGraph *g = f->g;
    for (bool changed = f->fuse; changed;) {
        changed = false;
        for (uint32_t m = 0; m < f->nmem; m++) {
            const IrNode *nd = &g->nodes[f->mem[m]];
            for (int i = 0; i < nd->nin; i++) {
                NodeId p = nd->in[i] == IR_NONE ? IR_NONE : ir_val(g, nd->in[i])->def;
                if (p == IR_NONE || !live(f, p) || f->grp[p] != IR_NONE ||
                    g->nodes[p].nout != 1 || ir_op_info[g->nodes[p].op].cls != IR_CLS_ELEM ||
                    !uses_inside(f, nd->in[i], gi))
                    continue;
                collect_tree(f, p, gi, r);
                changed = true;
            }
        }
    }
}

/* Group every live node, walking from the graph's end so that trees are maximal. */
static bool group_nodes(Fuse *f)
{
    IrGraph *g = f->g;
    for (NodeId n = g->nnodes; n-- > 0;) {
        IrNode *nd = &g->nodes[n];
        if (!live(f, n) || f->grp[n] != IR_NONE)
            continue;
        IrOpClass c = ir_op_info[nd->op].cls;
        uint32_t gi;
        if ((c == IR_CLS_ELEM || trailing_reduce(g, nd)) && try_rows(f, n))
            continue;
        switch (c) {
        case IR_CLS_ELEM: {
            gi = new_group(f, IR_KK_ELEM, IR_NONE, n, nd->out[0]);
            f->nmem = 0;
            collect_tree(f, n, gi, ROLE_EPI);
            close_tree(f, gi, ROLE_EPI);
            NodeId a = find_anchor(f, gi, nd->out[0]);
            release_narrowing(f, gi, a);
            if (a != IR_NONE && g->nodes[a].op == IR_OP_CONV)
                release_foreign(f, gi, a);
            if (a != IR_NONE) {
                bool red = ir_op_info[g->nodes[a].op].cls == IR_CLS_REDUCE;
                f->gs[gi].kind = red ? IR_KK_REDUCE : IR_KK_CONTRACT;
                f->gs[gi].anchor = a;
                f->grp[a] = gi;
                f->role[a] = ROLE_ANCHOR;
                if (red)
                    collect_prologue(f, a, gi);
                else if (g->nodes[a].op == IR_OP_CONV)
                    absorb_pad(f, a, gi);
                else
                    absorb_sums(f, a, gi);
            }
            break;
        }
        case IR_CLS_CONTRACT:
        case IR_CLS_REDUCE:
        case IR_CLS_MOVE:
            gi = new_group(f, c == IR_CLS_CONTRACT ? IR_KK_CONTRACT
                              : c == IR_CLS_REDUCE ? IR_KK_REDUCE : IR_KK_MOVE,
                           n, n, nd->out[0]);
            f->grp[n] = gi;
            f->role[n] = ROLE_ANCHOR;
            if (c == IR_CLS_REDUCE)
                collect_prologue(f, n, gi);
            else if (nd->op == IR_OP_CONV)
                absorb_pad(f, n, gi);
            break;
        default:
            ir_error(g, &nd->origin, "operator '%s' has no lowering to the device",
                     nd->foreign.op_type ? nd->foreign.op_type : "?");
            return false;
        }
    }
    return true;
}

/* Graph outputs: the root storage of an output becomes its I/O segment when it can;
 * other outputs get a COPY group. */
static void claim_outputs(Fuse *f)
{
    IrGraph *g = f->g;
    Plan *s = f->s;
    for (uint32_t k = 0; k < g->noutputs; k++) {
        ValId v = g->outputs[k];
        ValId r = s->val[v].view.root;
        const IrValue *rv = ir_val(g, r);
        if (rv->kind == IR_VAL_ACT && !s->val[r].virt &&
            plan_view_dense(g, v, &s->val[v].view) && s->val[r].claim < 0) {
            s->val[r].claim = (int32_t)k;
            continue;
        }
        uint32_t gi = new_group(f, IR_KK_COPY, IR_NONE, IR_NONE, v);
        f->gs[gi].out_index = k;
    }
}

typedef struct {
    uint64_t key;
    uint32_t idx;
} GroupKey;

/* Order of groups: by root node, COPY groups last (by output index). */
static int cmp_key(const void *a, const void *b)
{
    const GroupKey *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

/* Distinct bytes a view of v reads (broadcast dims count once), in elements of its
 * root's storage (a float32 input read as DLFloat16 moves 4 bytes an element). */
static uint64_t view_bytes(IrGraph *g, ValId v)
{
    const IrType *t = ir_vtype(g, v);
    const IrView *vw = &g->plan->val[v].view;
    uint64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (vw->stride[i] != 0 || t->dims[i] == 0)
            n *= (uint64_t)t->dims[i];
    return n * (uint64_t)pass_dev_esize(ir_vtype(g, vw->root)->dtype);
}

/* Add v to the kernel's input list unless present. */
static void add_in(IrKernel *k, ValId v, uint32_t cap)
{
    for (uint32_t i = 0; i < k->nins; i++)
        if (k->ins[i] == v)
            return;
    IR_ASSERT(k->nins < cap);
    k->ins[k->nins++] = v;
}

/* Fill kernel k from group gi: members, inputs, name, flops, traffic. */
static void build_kernel(Fuse *f, uint32_t gi, const NodeId *mem, uint32_t nmem,
                         uint32_t idx, IrKernel *k)
{
    IrGraph *g = f->g;
    const Group *gr = &f->gs[gi];
    k->kind = gr->kind;
    k->anchor = gr->anchor;
    k->root = gr->root;
    k->out = gr->out;
    k->out_index = gr->out_index;
    k->ref = gr->ref;
    k->nred = gr->nred;
    for (int i = 0; i < 3; i++)
        k->acc[i].root = IR_NONE;              /* set by pass_tile */
    uint32_t nin = 0;
    for (uint32_t m = 0; m < nmem; m++)
        nin += g->nodes[mem[m]].nin;
    k->pro = ir_alloc(g, (nmem + 1) * sizeof(NodeId));
    k->epi = ir_alloc(g, (nmem + 1) * sizeof(NodeId));
    k->ins = ir_alloc(g, (nin + 1) * sizeof(ValId));
    char name[160], label[32];
    int len = snprintf(name, sizeof name, "k%u", idx), shown = 0;
    for (uint32_t m = 0; m < nmem; m++) {
        NodeId n = mem[m];
        IrNode *nd = &g->nodes[n];
        f->s->node[n].kernel = idx;
        if (f->role[n] == ROLE_PRO)
            k->pro[k->npro++] = n;
        else if (f->role[n] == ROLE_EPI)
            k->epi[k->nepi++] = n;
        k->flops += ir_op_info[nd->op].work(g, nd);
        for (int i = 0; i < nd->nin; i++) {
            NodeId p = ir_val(g, nd->in[i])->def;
            bool ones = f->role[n] == ROLE_PRO && nd->op == IR_OP_MATMUL &&
                        ir_is_const(g, nd->in[i]);     /* a side sum's ones: made in LX */
            if ((p == IR_NONE || f->grp[p] != gi || !live(f, p)) && !ones)
                add_in(k, nd->in[i], nin + 1);
        }
        if (shown++ < 5 && len < (int)sizeof name - 24)
            len += snprintf(name + len, sizeof name - (size_t)len, "_%s",
                            ir_op_label(nd, label, sizeof label));
    }
    if (shown > 5)
        snprintf(name + len, sizeof name - (size_t)len, "_x%d", shown);
    if (k->kind == IR_KK_COPY) {
        snprintf(name, sizeof name, "k%u_copy_out%u", idx, k->out_index);
        add_in(k, k->out, nin + 1);
        k->flops = (uint64_t)plan_numel(ir_vtype(g, k->out));
    }
    k->name = ir_strdup(g, name);
    k->min_dram_bytes = view_bytes(g, k->out);
    for (uint32_t i = 0; i < k->nins; i++) {
        const IrValue *iv = ir_val(g, k->ins[i]);
        if (!(iv->kind == IR_VAL_CONST && plan_numel(&iv->type) == 1))
            k->min_dram_bytes += view_bytes(g, k->ins[i]);
    }
}

/* Allocate the per-node / per-value work arrays (scratch) and a new plan. */
static void fuse_init(Fuse *f, IrGraph *g, const PassOptions *opt)
{
    f->g = g;
    f->s = plan_new(g);
    f->fuse = opt->opt_level >= 1;
    f->lx_budget = opt->target ? opt->target->lx_budget_bytes : 0;
    f->target = opt->target;
    f->nuse = ir_scratch(g, (g->nvals + 1) * sizeof *f->nuse);
    f->is_out = ir_scratch(g, g->nvals + 1);
    f->force = ir_scratch(g, g->nnodes + 1);
    f->grp = ir_scratch(g, (g->nnodes + 1) * sizeof *f->grp);
    f->role = ir_scratch(g, g->nnodes + 1);
    f->stack = ir_scratch(g, (g->nnodes + 1) * sizeof *f->stack);
    f->mem = ir_scratch(g, (g->nnodes + 1) * sizeof *f->mem);
    for (NodeId n = 0; n < g->nnodes; n++)
        f->grp[n] = IR_NONE;
}

bool pass_fuse(IrGraph *g, const PassOptions *opt)
{
    Fuse f = {0};
    fuse_init(&f, g, opt);
    count_uses(&f);
    for (int round = 0; !choose_views(&f); round++)
        IR_ASSERT(round <= (int)g->nnodes);
    if (!group_nodes(&f))
        return false;
    claim_outputs(&f);
    if (f.fuse) {
        FoldUses fu = {f.grp, f.nuse, f.ufirst, f.ulist, f.is_out};
        fuse_fold_requant(g, &fu);
    }
    GroupKey *order = ir_scratch(g, (f.ngs + 1) * sizeof *order);
    for (uint32_t i = 0; i < f.ngs; i++) {
        const Group *gr = &f.gs[i];
        order[i].key = gr->root == IR_NONE ? ((uint64_t)1 << 40) + gr->out_index : gr->root;
        order[i].idx = i;
    }
    qsort(order, f.ngs, sizeof *order, cmp_key);
    f.s->kernels = ir_alloc(g, (f.ngs + 1) * sizeof(IrKernel));
    f.s->nkernels = f.ngs;
    /* members of every group in node order (counting sort) */
    uint32_t *first = ir_scratch(g, (f.ngs + 2) * sizeof *first);
    NodeId *mem = ir_scratch(g, (g->nnodes + 1) * sizeof *mem);
    for (NodeId n = 0; n < g->nnodes; n++)
        if (f.grp[n] != IR_NONE)
            first[f.grp[n] + 1]++;
    for (uint32_t i = 0; i < f.ngs; i++)
        first[i + 1] += first[i];
    uint32_t *fill = ir_scratch(g, (f.ngs + 1) * sizeof *fill);
    for (NodeId n = 0; n < g->nnodes; n++)
        if (f.grp[n] != IR_NONE)
            mem[first[f.grp[n]] + fill[f.grp[n]]++] = n;
    for (uint32_t i = 0; i < f.ngs; i++) {
        uint32_t gi = order[i].idx;
        build_kernel(&f, gi, mem + first[gi], first[gi + 1] - first[gi], i, &f.s->kernels[i]);
    }
    return !ir_failed(g);
}
