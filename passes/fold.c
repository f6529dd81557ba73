/* fold.c: pass_fold, constant folding. Every core node whose inputs are all
 * constants is folded by ir_fold_node (ir/ir_fold.c, evaluated with the reference
 * evaluator), as long as its results fit g->fold_budget. Nodes the evaluator cannot
 * handle are kept for the device.
 *
 * A TRANSPOSE of a constant that nothing else reads (a classifier's Gemm weight, W
 * [N, K] read as W^T) folds whatever its size: the dense transposed copy replaces the
 * constant, so the bytes are still stored once, in the layout the MATMUL reads (its
 * column blocks contiguous rows instead of one element per DRAM stick). A constant
 * with other readers (a tied embedding and LM head) keeps the strided view. */
#include "pass.h"

/* True when n is a TRANSPOSE whose input is a constant read by nothing else. */
static bool sole_transpose(IrGraph *g, const IrNode *n, const uint32_t *uses)
{
    return n->op == IR_OP_TRANSPOSE && n->nin == 1 && n->in[0] != IR_NONE &&
           ir_is_const(g, n->in[0]) && uses[n->in[0]] == 1;
}

/* The pass: fold all-constant core nodes, in topological order (so chains fold). */
bool pass_fold(IrGraph *g, const PassOptions *opt)
{
    (void)opt;
    uint32_t n = 0, *uses = ir_use_counts(g);
    IrNode *old = ir_rewrite_begin(g, &n);
    for (uint32_t i = 0; i < n; i++) {
        if (old[i].dead)
            continue;
        if (sole_transpose(g, &old[i], uses) ? ir_fold_transpose_dense(g, &old[i])
                                              : ir_fold_node(g, &old[i]))
            continue;
        ir_readd_node(g, &old[i]);
    }
    return !ir_failed(g);
}
