/* halfweight.c: float16/bfloat16 matrix weights stored once, in their own dtype.
 *
 * halfwiden.c computes float16/bfloat16 arithmetic in float32: a matrix product of a
 * half weight reads a CAST of the weight to float32. Folded, that CAST would store the
 * weight twice as large (a float16 8B-parameter model would need 32 GB of constants).
 * So while the decomposition and pass_fold run, a large widening CAST of a half
 * constant stays a node (ir_fold_keeps_half, g->keep_half_weights), and this pass
 * resolves each one:
 *
 *  - when every reader is a MATMUL taking it as its right operand B with a float32
 *    left operand, those MATMULs read the half constant itself (a float32 x float16 or
 *    bfloat16 MATMUL, ir_infer_matmul); the back end loads each B tile at its own size
 *    and widens it in the scratchpad with one VEC CAST before the MATMUL
 *    (codegen/cg_contract.c). Widening is exact, so the products are those of the
 *    float32 weight, bit for bit;
 *  - otherwise (another reader, a graph output) the CAST is folded as before.
 *
 * A widening CAST of a TRANSPOSE view of a half constant (a tied embedding read
 * transposed by the LM head; neither is folded) is resolved the same way: its MATMULs
 * read the half view, and otherwise it stays the kernel it was.
 *
 * Afterwards g->keep_half_weights is cleared, so later folds behave as before.
 */
#include "pass.h"

/* Whether every reader of v (a CAST's float32 result) is a MATMUL reading it as B
 * (and only as B) with a float32 A, and v is no graph output. */
static bool only_widened_b(IrGraph *g, ValId v)
{
    for (uint32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return false;
    for (NodeId n = 0; n < g->nnodes; n++) {
        const IrNode *nd = &g->nodes[n];
        if (nd->dead)
            continue;
        for (int i = 0; i < nd->nin; i++)
            if (nd->in[i] == v && (nd->op != IR_OP_MATMUL || i != 1 || nd->in[0] == v ||
                                   ir_vtype(g, nd->in[0])->dtype != IR_DT_F32))
                return false;
    }
    return true;
}

/* Whether n widens a float16/bfloat16 TRANSPOSE view of a constant to float32 (a tied
 * embedding read transposed by the LM head: the view is not folded, IR_FOLD_TRANSPOSE_MAX,
 * so neither is the CAST, which would otherwise run as a kernel of its own). */
static bool widens_half_view(IrGraph *g, const IrNode *n)
{
    if (n->dead || n->op != IR_OP_CAST || n->nin != 1)
        return false;
    IrDType from = ir_vtype(g, n->in[0])->dtype;
    const IrValue *x = ir_val(g, n->in[0]);
    if ((from != IR_DT_F16 && from != IR_DT_BF16) || ir_vtype(g, n->out[0])->dtype != IR_DT_F32 ||
        x->def == IR_NONE)
        return false;
    const IrNode *d = ir_node(g, x->def);
    return d->op == IR_OP_TRANSPOSE && ir_is_const(g, d->in[0]);
}

bool pass_halfweight(IrGraph *g, const PassOptions *opt)
{
    (void)opt;
    for (NodeId i = 0; i < g->nnodes && g->keep_half_weights; i++) {
        IrNode *n = &g->nodes[i];
        bool kept = ir_fold_keeps_half(g, n);
        if (!kept && !widens_half_view(g, n))
            continue;
        if (only_widened_b(g, n->out[0])) {
            ir_replace_uses(g, n->out[0], n->in[0]);
            n->dead = true;
        } else if (kept && !ir_fold_half_widen(g, n) && ir_failed(g)) {
            return false;
        }
    }
    g->keep_half_weights = false;
    return !ir_failed(g);
}
