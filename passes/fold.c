/* fold.c: pass_fold, constant folding. Every core node whose inputs are all
 * constants is folded by ir_fold_node (ir/ir_fold.c, evaluated with the reference
 * evaluator), as long as its results fit g->fold_budget. Nodes the evaluator cannot
 * handle are kept for the device. */
#include "pass.h"

/* The pass: fold all-constant core nodes, in topological order (so chains fold). */
bool pass_fold(IrGraph *g, const PassOptions *opt)
{
    (void)opt;
    uint32_t n = 0;
    IrNode *old = ir_rewrite_begin(g, &n);
    for (uint32_t i = 0; i < n; i++) {
        if (old[i].dead || ir_fold_node(g, &old[i]))
            continue;
        ir_readd_node(g, &old[i]);
    }
    return !ir_failed(g);
}
