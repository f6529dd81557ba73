/* flatmm.c: pass_simplify's flattening of batched products with few rows (pass_flatmm).
 *
 * A product of a constant 2-d B (weights) by an A of rank 3 or more with few rows per
 * batch item (fewer than FLAT_M_MAX, or than FLAT_ROWS when it has that many in all),
 * such as
 * a sequence-first [L, N, E] activation with N the batch (nn.MultiheadAttention's
 * projections in torchvision's ViT), is a batch of L products of N rows, each of which
 * reloads the tiles of B it multiplies: ViT-B/16's [197, 1, 768] x [768, 2304] ran at 2%
 * of its roofline. Computed on A viewed as [L * N, K] instead, it is one product of
 * L * N rows, and its result is viewed back (pass_readd_reshape keeps the old value, so
 * its users and a graph output stay; pass_simplify's next sweep moves its pointwise
 * epilogue before that view). The values are the same.
 *
 * Runs after the row selections (pass_rowsel pushes a gather of rows above a product
 * along the axis this would merge) and the sibling merge. An A made by a view op
 * (TRANSPOSE but one of unit dims, SLICE, EXPAND, GATHER) is flattened through a copy,
 * so only when writing and reading it back costs less than the reloads of B it saves
 * (ViT at batch 2: [2, 197, 768] transposed to [197, 2, 768], 1.2 MB copied against
 * 196 reloads of 7 MB). Graphs with symbolic dims are left alone.
 */
#include "pass.h"

#define FLAT_M_MAX 16                /* rows per batch item below which a product is
                                        flattened: fewer than one tile's */
#define FLAT_ROWS 512                /* rows per batch item below which a product is
                                        flattened when it has this many flat: each of
                                        the 32 cores then takes a tile of 16 rows, not a
                                        sliver of every item (ConvNeXt's [1, 56, 56, 96]
                                        x [96, 384]: 2 rows a core, 56 times) */
#define FLAT_B_MIN (64 << 10)        /* bytes of B from which reloading it per batch
                                        item costs more than the fusion of a small
                                        product's epilogue that the view back may cut
                                        (a rotary x @ R of 8 x 8, an int8 product's row
                                        sums by a vector of ones: left alone) */

/* Whether TRANSPOSE t only moves unit dims (its other dims keep their order): a
 * reshape in effect (ViT's [1, 197, 768] to [197, 1, 768]). */
static bool unit_transpose(IrGraph *g, const IrNode *t)
{
    const int64_t *perm;
    const IrType *x = ir_vtype(g, t->in[0]);
    int n = ir_attr_get_ints(t, "perm", &perm);
    int64_t last = -1;
    for (int i = 0; i < n; i++) {
        if (x->dims[perm[i]] == 1)
            continue;
        if (perm[i] < last)
            return false;
        last = perm[i];
    }
    return n == x->rank;
}

/* Whether v is the result of an op whose result may be a strided view (one a unit
 * transpose makes is not). */
static bool is_view(IrGraph *g, ValId v)
{
    NodeId p = ir_val(g, v)->def;
    if (p == IR_NONE || p >= g->nnodes)
        return false;
    IrOp op = g->nodes[p].op;
    if (op == IR_OP_TRANSPOSE)
        return !unit_transpose(g, &g->nodes[p]);
    return op == IR_OP_SLICE || op == IR_OP_EXPAND || op == IR_OP_GATHER;
}

/* The product n computed on its A flattened to 2-d (its result, [rows, N]); IR_NONE
 * when n is not a product to flatten. */
static ValId flat_product(IrGraph *g, const IrNode *n)
{
    if (n->op != IR_OP_MATMUL || n->nin != 2)
        return IR_NONE;
    IrType a = *ir_vtype(g, n->in[0]);          /* copied: adding nodes moves types */
    const IrType *b = ir_vtype(g, n->in[1]);
    if (b->rank != 2 || !ir_is_const(g, n->in[1]) || ir_type_bytes(b) < FLAT_B_MIN ||
        a.rank < 3)
        return IR_NONE;
    int64_t rows = 1, mi = a.dims[a.rank - 2];
    for (int i = 0; i < a.rank - 1; i++)
        rows *= a.dims[i];
    if (rows < FLAT_M_MAX || (mi >= FLAT_M_MAX && (mi >= FLAT_ROWS || rows < FLAT_ROWS)))
        return IR_NONE;                          /* as few rows flat: nothing to share */
    uint64_t items = (uint64_t)(rows / mi);
    if (is_view(g, n->in[0]) && 2 * ir_type_bytes(&a) >= (items - 1) * ir_type_bytes(b))
        return IR_NONE;                          /* its copy would cost more than B's reloads */
    int64_t ad[2] = {rows, a.dims[a.rank - 1]};
    ValId in[2] = {ir_reshape(g, n->in[0], ad, 2, &n->origin), n->in[1]};
    NodeId m = ir_add_node(g, IR_OP_MATMUL, in, 2, n->attrs, n->nattrs, &n->origin);
    return ir_node(g, m)->out[0];
}

bool pass_flatmm(IrGraph *g)
{
    if (g->nsymdims)
        return false;
    bool any = false;
    for (uint32_t i = 0; i < g->nnodes && !any; i++) {
        const IrNode *n = &g->nodes[i];
        any = !n->dead && n->op == IR_OP_MATMUL && n->nin == 2 &&
              ir_vtype(g, n->in[1])->rank == 2 && ir_vtype(g, n->in[0])->rank >= 3;
    }
    if (!any)
        return false;
    any = false;
    uint32_t n = 0;
    IrNode *old = ir_rewrite_begin(g, &n);
    for (uint32_t i = 0; i < n && !ir_failed(g); i++) {
        if (old[i].dead)
            continue;
        ValId v = flat_product(g, &old[i]);
        if (v == IR_NONE)
            ir_readd_node(g, &old[i]);
        else
            pass_readd_reshape(g, &old[i], v);  /* the old value: a view of the flat one */
        any |= v != IR_NONE;
    }
    return any;
}
