/* dequant.c: pass_dequant, one dequantization of 8-bit data per consumer.
 *
 * A quantized model dequantizes an 8-bit activation (int8/uint8 data: a CAST to a
 * float type, then the zero point subtracted and the scale multiplied in, constants
 * of one element) and often feeds the result to several consumers (the three
 * projections after a layer norm, gelu's two uses of its input). The fuser puts a
 * value with several uses at the end of its producer's kernel, which would then store
 * the float values (4 or 2 bytes an element) instead of the 8-bit data. This pass
 * gives every consumer after the first its own copy of the chain, so that each copy
 * fuses into its consumer's kernel and the 8-bit value is what crosses DRAM. It runs
 * after simplify (whose CSE would merge the copies again) and before fuse. The chain
 * is cheap pointwise work; nothing changes numerically.
 */
#include "pass.h"

#define DQ_CHAIN_MAX 6                     /* most nodes of one dequantization chain */

/* Whether node n continues a dequantization chain from its input *in: a float CAST,
 * or an add/sub/mul/div by a one-element constant; *start: n is the chain's first
 * node, a CAST of 8-bit integers to a float type. */
static bool dq_step(IrGraph *g, const IrNode *n, ValId *in, bool *start)
{
    if (n->dead || n->nout != 1 || !ir_dtype_is_float(ir_vtype(g, n->out[0])->dtype))
        return false;
    if (n->op == IR_OP_CAST && n->nin == 1) {
        IrDType t = ir_vtype(g, n->in[0])->dtype;
        *in = n->in[0];
        *start = t == IR_DT_I8 || t == IR_DT_U8;
        return *start || ir_dtype_is_float(t);
    }
    if (n->op != IR_OP_BINARY || n->nin != 2)
        return false;
    int64_t fn = ir_attr_get_int(n, "fn", -1);
    if (fn != IR_BIN_ADD && fn != IR_BIN_SUB && fn != IR_BIN_MUL && fn != IR_BIN_DIV)
        return false;
    int c = ir_is_const(g, n->in[1]) ? 1 : ir_is_const(g, n->in[0]) ? 0 : -1;
    if (c < 0 || ir_type_numel(ir_vtype(g, n->in[c])) != 1)
        return false;
    *in = n->in[1 - c];
    *start = false;
    return true;
}

/* The dequantization chain ending at value v: its nodes, first to last, in chain[];
 * their number, 0 if v is not such a value. Values inside the chain have one use. */
static int dq_chain(IrGraph *g, const uint32_t *uses, ValId v, NodeId *chain)
{
    NodeId tmp[DQ_CHAIN_MAX];
    int n = 0;
    for (ValId cur = v; n < DQ_CHAIN_MAX;) {
        const IrValue *val = ir_val(g, cur);
        if (val->kind != IR_VAL_ACT || val->def == IR_NONE || (cur != v && uses[cur] != 1))
            return 0;
        ValId in;
        bool start;
        if (!dq_step(g, &g->nodes[val->def], &in, &start))
            return 0;
        tmp[n++] = val->def;
        if (start) {
            for (int i = 0; i < n; i++)
                chain[i] = tmp[n - 1 - i];
            return n;
        }
        cur = in;
    }
    return 0;
}

/* A copy of the chain `nodes` (old node list) added to the graph; its last value. */
static ValId copy_chain(IrGraph *g, const IrNode *old, const NodeId *nodes, int n)
{
    ValId prev = IR_NONE;
    for (int i = 0; i < n; i++) {
        const IrNode *o = &old[nodes[i]];
        ValId in[2] = {o->in[0], o->nin > 1 ? o->in[1] : IR_NONE};
        if (i > 0)
            for (int k = 0; k < o->nin; k++)
                in[k] = in[k] == old[nodes[i - 1]].out[0] ? prev : in[k];
        NodeId id = ir_add_node(g, o->op, in, o->nin, o->attrs, o->nattrs, &o->origin);
        prev = g->nodes[id].out[0];
    }
    return prev;
}

bool pass_dequant(IrGraph *g, const PassOptions *opt)
{
    (void)opt;
    uint32_t nvals = g->nvals;
    uint32_t *uses = ir_use_counts(g);
    uint8_t *len = ir_scratch(g, nvals ? nvals : 1);
    NodeId *chains = ir_scratch(g, (size_t)(nvals ? nvals : 1) * DQ_CHAIN_MAX * sizeof *chains);
    bool any = false;
    for (ValId v = 0; v < nvals; v++) {
        len[v] = uses[v] > 1 ? (uint8_t)dq_chain(g, uses, v, chains + (size_t)v * DQ_CHAIN_MAX) : 0;
        any |= len[v] > 0;
    }
    if (!any)
        return true;
    bool fold = g->fold_consts;
    g->fold_consts = false;
    uint8_t *taken = ir_scratch(g, nvals ? nvals : 1);
    for (ValId v = 0; v < nvals; v++)
        taken[v] = 0;
    for (uint32_t i = 0; i < g->noutputs; i++)
        taken[g->outputs[i]] = 1;          /* a graph output keeps the original */
    uint32_t nold;
    IrNode *old = ir_rewrite_begin(g, &nold);
    for (uint32_t i = 0; i < nold && !ir_failed(g); i++) {
        IrNode *n = &old[i];
        for (int k = 0; k < n->nin && !n->dead; k++) {
            ValId v = n->in[k];
            if (v == IR_NONE || v >= nvals || !len[v])
                continue;
            if (!taken[v])
                taken[v] = 1;
            else
                n->in[k] = copy_chain(g, old, chains + (size_t)v * DQ_CHAIN_MAX, len[v]);
        }
        ir_readd_node(g, n);
    }
    g->fold_consts = fold;
    return !ir_failed(g);
}
