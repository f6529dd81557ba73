/* symdim_out.c: graph outputs of pass_symdim with several symbolic axes, some of them
 * of sizes derived by windows or upsamplings (a feature map [N, C, h', w'] of an image
 * of symbolic height and width).
 *
 * The runtime gives an output its actual extent along the axes of input symbols from
 * the inputs' shapes, and along one derived axis from a count the device computes
 * (rt_dyn.c, one such axis an output); two derived axes, or a derived one beside
 * another symbolic axis, take the other form it has: the output computed as the
 * row-major prefix of its actual shape, with that shape in an int32 vector (SPY_TF_SHAPED,
 * as Reshape to a runtime shape makes). Here the box the device computed is compacted
 * into that prefix by one GATHER over the flattened value: element i of the prefix
 * lies at box position sum_k x_k * stride_k, x the digits of i in the actual dims
 * (innermost first: x_k = q mod a_k, q = q div a_k), every dim at least 1. Positions
 * past the prefix gather something in the box (clamped): the runtime ignores them.
 */
#include "symdim.h"

/* An i32 constant [m] holding 0 .. m-1. */
static ValId iota(IrGraph *g, int64_t m)
{
    IrType t = {.dtype = IR_DT_I32, .rank = 1, .dims = {m}};
    int32_t *p = ir_scratch(g, (size_t)m * sizeof *p);
    for (int64_t i = 0; i < m; i++)
        p[i] = (int32_t)i;
    return ir_add_const(g, ir_fresh_name(g, "sym_iota"), &t, p);
}

ValId pass_symdim_compact_output(Sd *d, ValId v, const SdVal *s, const IrOrigin *og)
{
    IrGraph *g = d->g;
    const IrType *t = ir_vtype(g, v);
    int r = t->rank;
    int64_t m = 1, flat[1], cap[IR_MAX_RANK];
    for (int a = 0; a < r; a++)
        m *= t->dims[a];
    if (m <= 0 || m > INT32_MAX)
        return IR_NONE;
    ValId cnt[IR_MAX_RANK], q = iota(g, m), idx = IR_NONE;
    IrType st = {.dtype = IR_DT_I32, .rank = 1, .dims = {1}};
    int64_t stride = 1;
    for (int a = r - 1; a >= 0; a--) {        /* digits of i, innermost first */
        bool sym = false;
        for (int f = 0; f < s->ax[a].n; f++)
            sym |= s->ax[a].sym[f] >= 0;
        cnt[a] = pass_symdim_extent(d, sym ? &s->ax[a] : NULL, t->dims[a], og);
        ValId x = r == 1 ? q : ir_binary(g, IR_BIN_MOD, q, cnt[a], og);
        int32_t sv = (int32_t)stride;
        ValId part = stride == 1 ? x
                                 : ir_binary(g, IR_BIN_MUL, x,
                                             ir_add_const(g, ir_fresh_name(g, "sym_stride"),
                                                          &st, &sv), og);
        idx = idx == IR_NONE ? part : ir_binary(g, IR_BIN_ADD, idx, part, og);
        if (a > 0)
            q = ir_binary(g, IR_BIN_DIV, q, cnt[a], og);
        stride *= t->dims[a];
    }
    int32_t last = (int32_t)(m - 1);
    idx = ir_binary(g, IR_BIN_MIN, idx, ir_add_const(g, ir_fresh_name(g, "sym_last"), &st, &last),
                    og);
    flat[0] = m;
    ValId src = ir_reshape(g, v, flat, 1, og);
    IrAttr ax = ir_attr_int("axis", 0);
    ValId in[2] = {src, idx};
    NodeId gn = ir_add_node(g, IR_OP_GATHER, in, 2, &ax, 1, og);
    for (int a = 0; a < r; a++)
        cap[a] = a == 0 ? m : 1;
    ValId y = ir_reshape(g, g->nodes[gn].out[0], cap, r, og);
    ValId dims = cnt[0];
    if (r > 1) {
        IrAttr cx = ir_attr_int("axis", 0);
        NodeId cn = ir_add_node(g, IR_OP_CONCAT, cnt, r, &cx, 1, og);
        dims = g->nodes[cn].out[0];
    }
    const char *name = g->vals[v].name;
    ir_set_name(g, v, ir_fresh_name(g, name));
    ir_set_name(g, y, name);
    ir_dyn_add_shape(g, y, dims);
    return y;
}
