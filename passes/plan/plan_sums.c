/* plan_sums.c: the side sums of an int8 product, computed inside its kernel.
 *
 * The zero-point corrections of an int8 product of two activations (onnx_qlinear.c)
 * need the sums of A's rows and of B's columns over the depth; the decomposition makes
 * them int8 products with ones, A x ones[K, 1] and ones[1, K] x B. When such a product
 * reads the very operand of a MATMUL kernel's anchor and only that kernel's epilogue
 * reads its result, pass_fuse makes it a member of the kernel (a prologue node of a
 * matmul CONTRACT kernel); the kernel then computes it on the operand tiles it loads
 * for its product (codegen/cg_contract.c: a MATMUL of each A tile by a column of ones,
 * of a row of ones by each B tile, in LX buffers the tile program reads as seeds), so
 * the sums cost a few matrix-unit passes instead of a kernel that reads the operand
 * from DRAM again.
 */
#include "plan.h"

/* Whether v is a constant whose elements are all 1, of n elements along its axis `ax`
 * (counted from the end: 0 = last) and 1 along every other. */
static bool ones_along(IrGraph *g, ValId v, int ax, int64_t n)
{
    const IrValue *c = ir_val(g, v);
    const IrType *t = &c->type;
    if (c->kind != IR_VAL_CONST || !c->data || t->dtype != IR_DT_I8 || t->rank < 2 ||
        plan_numel(t) != n || t->dims[t->rank - 1 - ax] != n)
        return false;
    for (int64_t i = 0; i < n; i++)
        if (((const int8_t *)c->data)[i] != 1)
            return false;
    return true;
}

/* Whether shape s equals the anchor's result shape a except along axis `ax` from the
 * end, where s has 1. */
static bool shape_but(const IrType *s, const IrType *a, int ax)
{
    if (s->rank != a->rank)
        return false;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] != (i == s->rank - 1 - ax ? 1 : a->dims[i]))
            return false;
    return true;
}

int plan_side_kind(IrGraph *g, NodeId anchor, NodeId p)
{
    const IrNode *a = ir_node(g, anchor), *n = ir_node(g, p);
    if (a->op != IR_OP_MATMUL || n->op != IR_OP_MATMUL || n->nin != 2 || a->nin != 2 ||
        ir_vtype(g, a->in[0])->dtype != IR_DT_I8 || ir_vtype(g, n->out[0])->dtype != IR_DT_I32)
        return 0;
    const IrType *at = ir_vtype(g, a->in[0]), *ot = ir_vtype(g, a->out[0]);
    const IrType *nt = ir_vtype(g, n->out[0]);
    int64_t k = at->dims[at->rank - 1];
    if (n->in[0] == a->in[0] && ones_along(g, n->in[1], 1, k) && shape_but(nt, ot, 0))
        return PLAN_SUM_ROWS;
    if (n->in[1] == a->in[1] && ones_along(g, n->in[0], 0, k) && shape_but(nt, ot, 1))
        return PLAN_SUM_COLS;
    return 0;
}

ValId plan_side_sum(IrGraph *g, const IrKernel *k, int kind)
{
    if (k->kind != IR_KK_CONTRACT || ir_node(g, k->anchor)->op != IR_OP_MATMUL)
        return IR_NONE;
    for (uint32_t i = 0; i < k->npro; i++)
        if (plan_side_kind(g, k->anchor, k->pro[i]) == kind)
            return ir_node(g, k->pro[i])->out[0];
    return IR_NONE;
}
