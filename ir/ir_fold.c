/* ir_fold.c: constant folding of one node, the only place that folds.
 *
 * Used by ir_add_node while g->fold_consts is set (the decomposition folds shape
 * subgraphs as it builds them) and by pass_fold (passes/fold.c) over the whole graph.
 * A node folds when it is a core op, every input is a constant, its results together
 * fit g->fold_budget and the reference evaluator (ir_eval_node) handles it. A large
 * TRANSPOSE stays a view (IR_FOLD_TRANSPOSE_MAX) unless the caller knows the
 * transposed constant has no other reader (ir_fold_transpose_dense). While
 * g->keep_half_weights is set, a large widening CAST of a float16/bfloat16 constant
 * stays a node (ir_fold_keeps_half) for passes/halfweight.c.
 */
#include "ir.h"

#define FOLD_MAX_IN 64                     /* inputs of a node the folder considers */
#define FOLD_MAX_OUT 16                    /* outputs likewise */

bool ir_fold_keeps_half(IrGraph *g, const IrNode *n)
{
    if (!g->keep_half_weights || n->op != IR_OP_CAST || n->nin != 1 || n->dead ||
        !ir_is_const(g, n->in[0]))
        return false;
    IrDType from = ir_vtype(g, n->in[0])->dtype;
    const IrType *to = ir_vtype(g, n->out[0]);
    size_t b = ir_type_bytes(to);
    return (from == IR_DT_F16 || from == IR_DT_BF16) && to->dtype == IR_DT_F32 &&
           b != SIZE_MAX && b > IR_FOLD_HALF_WIDEN_MIN;
}

/* Folds n (see ir_fold_node) when a TRANSPOSE result is at most transpose_max bytes;
 * a CAST that ir_fold_keeps_half only with keep_half false. */
static bool fold(IrGraph *g, IrNode *n, size_t transpose_max, bool keep_half)
{
    if (keep_half && ir_fold_keeps_half(g, n))
        return false;
    const void *in[FOLD_MAX_IN];
    void *out[FOLD_MAX_OUT];
    if (n->op >= IR_OP_FOREIGN || n->nin == 0 || n->nin > FOLD_MAX_IN || n->nout > FOLD_MAX_OUT)
        return false;
    if (n->op == IR_OP_EXPAND && ir_attr_find(n, "ext"))
        return false;                      /* to an extent that may be symbolic */
    for (int i = 0; i < n->nin; i++) {
        if (!ir_is_const(g, n->in[i]))
            return false;
        in[i] = ir_val(g, n->in[i])->data;
    }
    size_t total = 0;
    for (int i = 0; i < n->nout; i++) {
        size_t b = ir_type_bytes(ir_vtype(g, n->out[i]));
        if (b == SIZE_MAX || b > g->fold_budget - total)
            return false;
        total += b;
    }
    if (n->op == IR_OP_TRANSPOSE && total > transpose_max)
        return false;
    if (!ir_eval_node(g, n, in, out))
        return false;
    for (int i = 0; i < n->nout; i++) {
        IrValue *v = ir_val(g, n->out[i]);
        v->kind = IR_VAL_CONST;
        v->data = out[i];
        v->def = IR_NONE;
        v->def_slot = 0;
    }
    ir_ext_fold(g, n);
    n->dead = true;
    return true;
}

/* Constant folding of one node, a large TRANSPOSE kept as a view (see ir.h). */
bool ir_fold_node(IrGraph *g, IrNode *n)
{
    return fold(g, n, IR_FOLD_TRANSPOSE_MAX, true);
}

/* Constant folding of one node, a TRANSPOSE of any size within g->fold_budget: for a
 * constant read only through this TRANSPOSE (see ir.h). */
bool ir_fold_transpose_dense(IrGraph *g, IrNode *n)
{
    return fold(g, n, SIZE_MAX, true);
}

bool ir_fold_half_widen(IrGraph *g, IrNode *n)
{
    return fold(g, n, IR_FOLD_TRANSPOSE_MAX, false);
}
