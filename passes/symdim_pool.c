/* symdim_pool.c: an average pool that excludes its padding, over a bounded symbolic
 * axis (pass_symdim, passes/symdim.c).
 *
 * The decomposition divides the pool's window sum by the number of taps inside the
 * input at each output position, a constant it computed for the bound's extents
 * (onnx_conv_pool.c avg_scale, tagged IR_EXT_BOUND): at a smaller size the windows at
 * the actual border reach into what is padding there, and the bound's counts would be
 * wrong. Here that constant is replaced by the counts computed on the device: the same
 * window summing a mask of the input's valid positions (1 between the pad before and the
 * actual extent, 0 elsewhere, along every spatial axis), at least 1 (an output position
 * past the actual extent is padding, which nothing reads). Exact at every size: the
 * window sum reads zeros there (prop_pad masks the input), so sum / count is the mean
 * of the taps that lie inside the actual input, as at that size.
 */
#include <string.h>

#include "symdim.h"

/* The f32 mask [1, 1, spatial...] of window input p's valid positions (axes s; its
 * pads lo[a] / hi[a] along spatial axis a): 1 from the pad before to that plus the
 * axis's actual (symbolic) or static extent. */
static ValId valid_mask(Sd *d, ValId p, const SdVal *s, int nk, const int64_t *lo,
                        const int64_t *hi, const IrOrigin *og)
{
    IrGraph *g = d->g;
    const IrType *t = ir_vtype(g, p);
    int r = t->rank;
    ValId m = IR_NONE;
    IrType ct = {.dtype = IR_DT_I32, .rank = 0};
    for (int a = r - nk; a < r; a++) {
        const SdAxis *x = &s->ax[a];
        IrType pt = {.dtype = IR_DT_I32, .rank = r};
        for (int i = 0; i < r; i++)
            pt.dims[i] = i == a ? t->dims[a] : 1;
        int32_t *c = ir_alloc(g, (size_t)t->dims[a] * sizeof *c);
        for (int64_t i = 0; i < t->dims[a]; i++)
            c[i] = (int32_t)i;
        ValId pos = ir_add_const(g, ir_fresh_name(g, "sym_pool_pos"), &pt, c);
        int32_t l = (int32_t)lo[a], e = (int32_t)(t->dims[a] - hi[a]);
        ValId lv = ir_add_const(g, ir_fresh_name(g, "sym_pool_lo"), &ct, &l);
        ValId end = ir_add_const(g, ir_fresh_name(g, "sym_pool_end"), &ct, &e);
        if (x->n == 1 && x->sym[0] >= 0)    /* the actual extent after the pad before */
            end = ir_binary(g, IR_BIN_ADD, pass_symdim_count(d, x->sym[0], 0, og), lv, og);
        ValId in = ir_binary(g, IR_BIN_LT, pos, end, og);
        if (l)
            in = ir_binary(g, IR_BIN_AND, in, ir_binary(g, IR_BIN_GE, pos, lv, og), og);
        m = m == IR_NONE ? in : ir_binary(g, IR_BIN_AND, m, in, og);
    }
    int64_t shape[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        shape[i] = i < r - nk ? 1 : t->dims[i];
    return ir_cast(g, ir_expand(g, m, shape, r, og), IR_DT_F32, og);
}

ValId pass_symdim_pool_counts(Sd *d, const IrNode *n, int ci, const IrOrigin *og)
{
    IrGraph *g = d->g;
    int fn = (int)ir_attr_get_int(n, "fn", -1);
    NodeId wn = n->nin == 2 ? ir_val(g, n->in[1 - ci])->def : IR_NONE;
    const IrNode *w = wn == IR_NONE ? NULL : ir_node(g, wn);
    const int64_t *k;
    int nk = w && w->op == IR_OP_WINDOW ? ir_attr_get_ints(w, "kernel", &k) : 0;
    if ((fn != IR_BIN_MUL && fn != IR_BIN_DIV) || (fn == IR_BIN_DIV && ci != 1) || nk < 1 ||
        ir_attr_get_int(w, "fn", -1) != IR_RED_SUM)
        return IR_NONE;
    const SdVal *s = sd_get(d, w->in[0]);
    const IrType *t = ir_vtype(g, w->in[0]);
    int r = t->rank;
    NodeId pn = ir_val(g, w->in[0])->def;
    const IrNode *pd = pn == IR_NONE ? NULL : ir_node(g, pn);
    const int64_t *pads = NULL;
    int64_t lo[IR_MAX_RANK] = {0}, hi[IR_MAX_RANK] = {0};
    if (pd && pd->op == IR_OP_PAD && ir_attr_get_ints(pd, "pads", &pads) == 2 * r)
        for (int a = 0; a < r; a++)
            lo[a] = pads[a], hi[a] = pads[r + a];
    for (int a = 0; s && a < r; a++)   /* symbolic: only the batch axes or one-factor
                                           spatial ones, padded as the pad says */
        if (pass_symdim_ax_sym(&s->ax[a]) &&
            (a < r - nk ? s->ax[a].plo || s->ax[a].phi
                        : s->ax[a].n != 1 || s->ax[a].plo != lo[a] || s->ax[a].phi != hi[a]))
            return IR_NONE;
    if (!s || d->plan)
        return s ? n->in[ci] : IR_NONE;
    ValId mask = valid_mask(d, w->in[0], s, nk, lo, hi, og);
    NodeId cn = ir_add_node(g, IR_OP_WINDOW, &mask, 1, w->attrs, w->nattrs, og);
    IrType one = {.dtype = IR_DT_F32, .rank = 0};
    float v = 1.0f;
    ValId c1 = ir_add_const(g, ir_fresh_name(g, "sym_pool_one"), &one, &v);
    ValId cnt = ir_binary(g, IR_BIN_MAX, g->nodes[cn].out[0], c1, og);
    return fn == IR_BIN_MUL ? ir_binary(g, IR_BIN_DIV, c1, cnt, og) : cnt;
}
