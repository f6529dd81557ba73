/* siblings.c: pass_simplify's merge of sibling matrix products (pass_siblings).
 *
 * Matrix products of one activation by 2-D float32 constant weights of the same depth
 * (attention's Q, K and V projections), each optionally followed by the add of a 1-D
 * constant bias used by it alone, become one product of the weights side by side (and
 * one add of the biases side by side), read through a SLICE of the last axis per
 * member, which takes over the member's result (and name). One kernel with all cores
 * streams the weights and reads the activation once, where there were one kernel and
 * one read of the activation per member. Every output column is the same dot product
 * over the same depth as before, so the values are unchanged. The int8 and fp8 modes
 * merge (or convert) their products themselves (passes/quant.c, passes/fp8.c), and a
 * --keep-fp32 list names nodes one by one: then nothing is merged.
 */
#include <string.h>

#include "pass.h"

#define SIB_MAX 8                          /* sibling products merged into one */

typedef struct {
    uint32_t mm, add;                      /* old node indices; add UINT32_MAX: none */
    ValId w, b, out;                       /* weight, bias (IR_NONE), member's result */
} Sib;

/* Whether value v is a float32 constant of rank `rank` with its data at hand. */
static bool sib_const(IrGraph *g, ValId v, int rank)
{
    const IrType *t = ir_vtype(g, v);
    return ir_is_const(g, v) && ir_val(g, v)->data && t->dtype == IR_DT_F32 && t->rank == rank;
}

/* Member at old node i when it is a MATMUL of a float32 activation by a [K, N]
 * constant, with its bias add (the single reader of its result, adding an [N]
 * constant) when there is one, and the result is read by view ops alone (a pointwise
 * reader would lose its fusion into the product: an MLP's gate and up projections
 * stay apart); false otherwise. user[v]: old index of a reader of v; cut[v]: v is a
 * graph output or read by a node that is not a view op. */
static bool sib_member(IrGraph *g, const IrNode *old, uint32_t i, const uint32_t *uses,
                       const uint32_t *user, const bool *cut, Sib *s)
{
    const IrNode *n = &old[i];
    if (n->dead || n->op != IR_OP_MATMUL || ir_is_const(g, n->in[0]) ||
        ir_vtype(g, n->in[0])->dtype != IR_DT_F32 || !sib_const(g, n->in[1], 2))
        return false;
    *s = (Sib){i, UINT32_MAX, n->in[1], IR_NONE, n->out[0]};
    ValId y = n->out[0];
    if (uses[y] == 1 && user[y] != UINT32_MAX) {
        const IrNode *a = &old[user[y]];
        int bi = a->nin == 2 && a->in[0] == y ? 1 : 0;
        if (!a->dead && a->op == IR_OP_BINARY && ir_attr_get_int(a, "fn", -1) == IR_BIN_ADD &&
            a->nin == 2 && a->in[1 - bi] == y && sib_const(g, a->in[bi], 1) &&
            ir_vtype(g, a->in[bi])->dims[0] == ir_vtype(g, n->in[1])->dims[1]) {
            s->add = user[y];
            s->b = a->in[bi];
            s->out = a->out[0];
        }
    }
    return !cut[s->out];
}

/* Constant of the members' [K, Ni] weights (rank 2) or [Ni] biases (rank 1) side by
 * side along the last axis, written straight into the new constant's data (one copy
 * of the bytes, not a scratch copy copied again); a member's pages in a mapped model
 * file then leave the resident set (ir_const_drop_pages: it is read no more). */
static ValId sib_concat(IrGraph *g, const Sib *m, int nm, bool bias, const char *name)
{
    int64_t rows = bias ? 1 : ir_vtype(g, m[0].w)->dims[0], n = 0, off = 0;
    for (int i = 0; i < nm; i++)
        n += ir_vtype(g, m[i].w)->dims[1];
    IrType t = {.dtype = IR_DT_F32, .rank = bias ? 1 : 2, .dims = {bias ? n : rows, n}};
    ValId c = ir_add_const(g, ir_fresh_name(g, name), &t, NULL);
    float *d = (float *)(uintptr_t)g->vals[c].data;
    for (int i = 0; i < nm; i++) {
        int64_t ni = ir_vtype(g, m[i].w)->dims[1];
        const float *src = ir_val(g, bias ? m[i].b : m[i].w)->data;
        for (int64_t r = 0; r < rows; r++)
            memcpy(d + r * n + off, src + r * ni, (size_t)ni * sizeof *d);
        ir_const_drop_pages(g, bias ? m[i].b : m[i].w);  /* copied: its file pages */
        off += ni;
    }
    return c;
}

/* Add the merged product of members m[0..nm) and a SLICE of it per member, which takes
 * over the member's result and name. */
static void sib_merge(IrGraph *g, const IrNode *old, const Sib *m, int nm)
{
    const IrNode *f = &old[m[0].mm];
    ValId in[2] = {f->in[0], sib_concat(g, m, nm, false, "merged_weight")};
    ValId y = ir_node(g, ir_add_node(g, IR_OP_MATMUL, in, 2, f->attrs, f->nattrs,
                                     &f->origin))->out[0];
    if (m[0].b != IR_NONE) {
        ValId bi[2] = {y, sib_concat(g, m, nm, true, "merged_bias")};
        IrAttr fn = ir_attr_int("fn", IR_BIN_ADD);
        y = ir_node(g, ir_add_node(g, IR_OP_BINARY, bi, 2, &fn, 1,
                                   &old[m[0].add].origin))->out[0];
    }
    const IrType *yt = ir_vtype(g, y);
    int r = yt->rank;
    int64_t off = 0, starts[IR_MAX_RANK], steps[IR_MAX_RANK], sizes[IR_MAX_RANK];
    for (int i = 0; i < nm; i++) {
        int64_t ni = ir_vtype(g, m[i].w)->dims[1];
        for (int d = 0; d < r; d++) {
            starts[d] = d == r - 1 ? off : 0;
            steps[d] = 1;
            sizes[d] = d == r - 1 ? ni : yt->dims[d];
        }
        IrAttr at[3] = {ir_attr_ints_ref("starts", starts, r),
                        ir_attr_ints_ref("steps", steps, r), ir_attr_ints_ref("sizes", sizes, r)};
        ValId v = ir_node(g, ir_add_node(g, IR_OP_SLICE, &y, 1, at, 3,
                                         &old[m[i].mm].origin))->out[0];
        const char *name = ir_val(g, m[i].out)->name;
        ir_replace_uses(g, m[i].out, v);
        ir_set_name(g, m[i].out, ir_fresh_name(g, "merged"));
        ir_set_name(g, v, name);
        off += ni;
        yt = ir_vtype(g, y);
    }
}

/* The members after the first one, m[0] (old index i), that read the same activation
 * by a weight of the same depth, with a bias exactly when m[0] has one; returns the
 * count of members in m. */
static int sib_group(IrGraph *g, const IrNode *old, uint32_t nold, const uint32_t *uses,
                     const uint32_t *user, const bool *cut, const uint8_t *done, Sib *m)
{
    int nm = 1;
    int64_t k = ir_vtype(g, m[0].w)->dims[0];
    for (uint32_t j = m[0].mm + 1; j < nold && nm < SIB_MAX; j++) {
        Sib s;
        if (done[j] || old[j].op != IR_OP_MATMUL || old[j].in[0] != old[m[0].mm].in[0] ||
            !sib_member(g, old, j, uses, user, cut, &s) || (s.b == IR_NONE) != (m[0].b == IR_NONE) ||
            ir_vtype(g, s.w)->dims[0] != k || (s.add != UINT32_MAX && done[s.add]))
            continue;
        m[nm++] = s;
    }
    return nm;
}

/* Merge the sibling products of g (header). */
void pass_siblings(IrGraph *g, const PassOptions *opt)
{
    if ((opt->precision != PASS_PREC_MODEL && opt->precision != PASS_PREC_FP16) ||
        (opt->keep_fp32 && opt->keep_fp32[0]))
        return;
    uint32_t *uses = ir_use_counts(g), nold = 0;
    uint32_t *user = ir_scratch(g, (g->nvals + 1) * sizeof *user);
    bool *cut = ir_scratch(g, (g->nvals + 1) * sizeof *cut);
    bool *out = ir_scratch(g, (g->nvals + 1) * sizeof *out);
    memset(user, 0xff, (g->nvals + 1) * sizeof *user);
    memset(cut, 0, (g->nvals + 1) * sizeof *cut);
    memset(out, 0, (g->nvals + 1) * sizeof *out);
    for (uint32_t i = 0; i < g->noutputs; i++)
        cut[g->outputs[i]] = out[g->outputs[i]] = true;
    /* cut[v]: v is read by a node that is not a view op, or reaches a graph output
     * through views (out[v]; the member's kernel stores into the output, where a merged
     * product would need a copy kernel: a KV cache); last to first, so that a view's
     * output is final when its node is seen */
    for (uint32_t i = g->nnodes; i-- > 0;) {
        const IrNode *n = &g->nodes[i];
        bool view = (ir_op_info[n->op].flags & IR_OPF_VIEW) && n->nout == 1;
        for (int k = 0; k < n->nin && !n->dead; k++)
            if (n->in[k] < g->nvals) {
                user[n->in[k]] = i;
                out[n->in[k]] |= view && out[n->out[0]];
                cut[n->in[k]] |= !view || out[n->out[0]];
            }
    }
    IrNode *old = ir_rewrite_begin(g, &nold);
    uint8_t *done = ir_scratch(g, nold + 1);
    memset(done, 0, nold + 1);
    for (uint32_t i = 0; i < nold && !ir_failed(g); i++) {
        Sib m[SIB_MAX];
        int nm = 0;
        if (!done[i] && sib_member(g, old, i, uses, user, cut, &m[0]))
            nm = sib_group(g, old, nold, uses, user, cut, done, m);
        if (nm < 2) {
            if (!done[i] && !old[i].dead)
                ir_readd_node(g, &old[i]);
            continue;
        }
        for (int k = 0; k < nm; k++) {
            done[m[k].mm] = 1;
            if (m[k].add != UINT32_MAX)
                done[m[k].add] = 1;
        }
        sib_merge(g, old, m, nm);
    }
}
