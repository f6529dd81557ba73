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
 * An axis of several factors ([N, C, h * w], a flattened feature map) or a
 * concatenated one (SdAxis.np: a detector's [N, 4 + classes, h8 * w8 + h16 * w16 +
 * h32 * w32]) is compacted the same way, its digit mapped to the position of its
 * element in the box (axis_pos): the output has the actual extent along it, the
 * pieces' actual elements one after the other, as at that size.
 */
#include <string.h>

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

/* An i32 [1] constant v. */
static ValId i32c(IrGraph *g, int64_t v)
{
    IrType st = {.dtype = IR_DT_I32, .rank = 1, .dims = {1}};
    int32_t x = (int32_t)v;
    return ir_add_const(g, ir_fresh_name(g, "sym_c"), &st, &x);
}

/* The actual extent (i32 [1]) of a piece: the product of its factors' actual sizes. */
static ValId piece_extent(Sd *d, const SdPiece *p, const IrOrigin *og)
{
    ValId e = IR_NONE;
    for (int f = 0; f < p->n; f++) {
        ValId c = p->sym[f] >= 0 ? pass_symdim_count(d, p->sym[f], 1, og) : i32c(d->g, p->size[f]);
        e = e == IR_NONE ? c : ir_binary(d->g, IR_BIN_MUL, e, c, og);
    }
    return e;
}

/* Where element j (i32 [m], >= 0) of a piece's actual elements, row-major over its
 * factors' actual sizes, lies in the piece as computed, every factor at its bound:
 * the digits of j, innermost first (the outermost not reduced: past the last element
 * it runs on, and the caller clamps). */
static ValId piece_pos(Sd *d, const SdPiece *p, ValId j, const IrOrigin *og)
{
    IrGraph *g = d->g;
    ValId pos = IR_NONE;
    int64_t mult = 1;
    for (int f = p->n - 1; f >= 0; f--) {
        ValId c = p->sym[f] >= 0 ? pass_symdim_count(d, p->sym[f], 1, og) : i32c(g, p->size[f]);
        ValId dig = f > 0 ? ir_binary(g, IR_BIN_MOD, j, c, og) : j;
        ValId part = mult == 1 ? dig : ir_binary(g, IR_BIN_MUL, dig, i32c(g, mult), og);
        pos = pos == IR_NONE ? part : ir_binary(g, IR_BIN_ADD, pos, part, og);
        if (f > 0)
            j = ir_binary(g, IR_BIN_DIV, j, c, og);
        mult *= p->size[f];
    }
    return pos;
}

/* An output axis as compact_output reads it: its actual extent (i32 [1]) and, for a
 * concatenated one, where each piece starts among the actual elements (start[p], i32
 * [1]; start[0] unused) and in the axis as computed (off[p], the bounds of the pieces
 * before it). */
typedef struct {
    ValId cnt;
    ValId start[SD_MAXP];
    int64_t off[SD_MAXP];
} AxisMap;

/* The map of axis x (NULL: static, of extent ext). */
static void axis_map(Sd *d, const SdAxis *x, int64_t ext, AxisMap *am, const IrOrigin *og)
{
    if (!x || !x->np) {
        am->cnt = pass_symdim_extent(d, x, ext, og);
        return;
    }
    am->cnt = IR_NONE;
    int64_t off = 0;
    for (int p = 0; p < x->np; p++) {
        ValId e = piece_extent(d, &x->pc[p], og);
        am->start[p] = am->cnt;
        am->off[p] = off;
        am->cnt = p ? ir_binary(d->g, IR_BIN_ADD, am->cnt, e, og) : e;
        int64_t b = 1;
        for (int f = 0; f < x->pc[p].n; f++)
            b *= x->pc[p].size[f];
        off += b;
    }
}

/* Where element j (i32 [m]) of axis x's actual elements (map am) lies along the axis
 * as computed: j itself on a static axis or one of one symbolic factor (its data
 * first); on one of several factors, the position of j's digits (piece_pos); on a
 * concatenated axis, that within the piece j falls in (the pieces' actual elements
 * one after the other) plus the piece's offset. */
static ValId axis_pos(Sd *d, const SdAxis *x, const AxisMap *am, ValId j, const IrOrigin *og)
{
    IrGraph *g = d->g;
    if (!x || (!x->np && x->n < 2))
        return j;
    if (!x->np) {
        SdPiece p = {.n = x->n};
        memcpy(p.size, x->size, sizeof p.size);
        memcpy(p.sym, x->sym, sizeof p.sym);
        return piece_pos(d, &p, j, og);
    }
    ValId pos = IR_NONE;
    for (int p = x->np - 1; p >= 0; p--) {
        ValId local = p ? ir_binary(g, IR_BIN_SUB, j, am->start[p], og) : j;
        ValId at = piece_pos(d, &x->pc[p], local, og);
        if (am->off[p])
            at = ir_binary(g, IR_BIN_ADD, at, i32c(g, am->off[p]), og);
        pos = pos == IR_NONE ? at
                             : ir_select(g, ir_binary(g, IR_BIN_LT, j, am->start[p + 1], og),
                                         at, pos, og);
    }
    return pos;
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
    int64_t stride = 1;
    for (int a = r - 1; a >= 0; a--) {        /* digits of i, innermost first */
        const SdAxis *x = s->ax[a].np || s->ax[a].n > 1 ||
                                  (s->ax[a].n == 1 && s->ax[a].sym[0] >= 0)
                              ? &s->ax[a]
                              : NULL;
        AxisMap am;
        axis_map(d, x, t->dims[a], &am, og);
        cnt[a] = am.cnt;
        ValId dig = r == 1 ? q : ir_binary(g, IR_BIN_MOD, q, am.cnt, og);
        ValId pos = axis_pos(d, x, &am, dig, og);
        ValId part = stride == 1 ? pos : ir_binary(g, IR_BIN_MUL, pos, i32c(g, stride), og);
        idx = idx == IR_NONE ? part : ir_binary(g, IR_BIN_ADD, idx, part, og);
        if (a > 0)
            q = ir_binary(g, IR_BIN_DIV, q, cnt[a], og);
        stride *= t->dims[a];
    }
    idx = ir_binary(g, IR_BIN_MIN, idx, i32c(g, m - 1), og);
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
