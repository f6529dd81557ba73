/* fold.c: pass_fold, constant folding. Every core node whose inputs are all
 * constants is evaluated with ir_eval_node (the reference evaluator) and its outputs
 * become constants, as long as each result stays within the fold budget. Nodes the
 * evaluator cannot handle are kept for the device. */
#include "pass.h"

#define FOLD_DEFAULT_BUDGET ((size_t)64 << 20)

/* Evaluate node n in place if it is foldable; returns true when it was folded. */
static bool fold_node(IrGraph *g, IrNode *n, size_t budget)
{
    const void *in[64];
    void *out[16];
    if (n->op == IR_OP_FOREIGN || n->nin == 0 || n->nin > 64 || n->nout > 16)
        return false;
    for (int i = 0; i < n->nin; i++) {
        if (!ir_is_const(g, n->in[i]))
            return false;
        in[i] = ir_val(g, n->in[i])->data;
    }
    size_t total = 0;
    for (int i = 0; i < n->nout; i++) {
        size_t b = ir_type_bytes(ir_vtype(g, n->out[i]));
        if (b == SIZE_MAX || b > budget - total)
            return false;
        total += b;
    }
    if (!ir_eval_node(g, n, in, out))
        return false;
    for (int i = 0; i < n->nout; i++) {
        IrValue *v = ir_val(g, n->out[i]);
        v->kind = IR_VAL_CONST;
        v->data = out[i];
        v->def = IR_NONE;
        v->def_slot = 0;
    }
    return true;
}

/* The pass: fold all-constant core nodes, in topological order (so chains fold). */
bool pass_fold(IrGraph *g, const PassOptions *opt)
{
    size_t budget = (opt && opt->fold_budget) ? opt->fold_budget : FOLD_DEFAULT_BUDGET;
    uint32_t n = 0;
    IrNode *old = ir_rewrite_begin(g, &n);
    for (uint32_t i = 0; i < n; i++) {
        if (old[i].dead || fold_node(g, &old[i], budget))
            continue;
        ir_readd_node(g, &old[i]);
    }
    return !ir_failed(g);
}
