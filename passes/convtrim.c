/* convtrim.c: pass_convtrim, convolution taps that read nothing but zero padding.
 *
 * A CONV over a PAD of zeros computes, through a kernel tap that reads padding at
 * every output position, only products by zero. Along each spatial axis the taps that
 * do so form a prefix and a suffix of the kernel (a tap's reads move by the dilation
 * from one tap to the next): those are dropped, the constant weights sliced to the
 * taps left and the pads cut by the dilation times the taps dropped, which keeps the
 * output's extent (H + pad_lo + pad_hi - (K - 1) * dil - 1) / stride + 1. A pad left
 * all zero is no PAD at all.
 *
 * DeepLabV3's atrous pyramid has 3 x 3 convolutions of dilation 12, 24 and 36 (pads the
 * same) over the backbone's feature map; at 32 x 32 (512 x 512 images) the outer taps of
 * the dilation 36 one read only padding, and it is a 1 x 1 convolution: no padded patch
 * of 104 x 104 per channel loaded for every output row (9 million instructions, and
 * most of the model's modelled time, for that kernel).
 *
 * With bounded symbolic spatial axes the tests are made at the bounds, which the graph
 * is typed at: a leading tap whose reads lie before the input at the largest output
 * does at every smaller one, and a trailing tap whose first read lies past the bound
 * reads padding (or the zeros past the actual size) at every size. A PAD whose pads were
 * computed from the extents (attribute "bound") is left as it is, and so are
 * convolutions of integers (their zero point corrections count every tap).
 */
#include <stdio.h>
#include <string.h>

#include "pass.h"

/* Taps to drop from the front (*lo) and back (*hi) of a kernel axis of k taps,
 * dilation d, stride s, over an input of n elements padded by plo, phi into out
 * positions; at least one tap stays, and no pad goes negative. */
static bool axis_trim(int64_t n, int64_t out, int64_t k, int64_t s, int64_t d, int64_t plo,
                      int64_t phi, int64_t *lo, int64_t *hi)
{
    int64_t a = 0, b = 0;
    while (a < k - 1 && (a + 1) * d <= plo && (out - 1) * s + a * d < plo)
        a++;                                      /* its last read is before the input */
    while (a + b < k - 1 && (b + 1) * d <= phi && (k - 1 - b) * d - plo >= n)
        b++;                                      /* its first read is past the input */
    *lo = a;
    *hi = b;
    return a > 0 || b > 0;
}

/* Whether x's type is a float one (the convolutions this pass trims). */
static bool is_float(IrDType t)
{
    return t == IR_DT_F32 || t == IR_DT_F16 || t == IR_DT_BF16;
}

/* The PAD of zeros (of node list old) that n, a CONV, reads as its input, or NULL. */
static const IrNode *zero_pad(IrGraph *g, const IrNode *old, const IrNode *n)
{
    const IrValue *x = ir_val(g, n->in[0]);
    if (x->kind != IR_VAL_ACT || x->def == IR_NONE)
        return NULL;
    const IrNode *p = &old[x->def];
    if (p->op != IR_OP_PAD || ir_attr_get_float(p, "value", 1.0) != 0.0 ||
        ir_attr_get_int(p, "bound", 0) != 0)
        return NULL;
    const int64_t *interior;
    int ni = ir_attr_get_ints(p, "interior", &interior);
    for (int i = 0; i < ni; i++)
        if (interior[i] != 0)
            return NULL;                          /* an upsampling: every tap reads */
    return p;
}

/* The constant weights w with the kernel taps [lo[j], dims - hi[j]) of each spatial axis
 * j (axes 2..). */
static ValId sliced_weights(IrGraph *g, ValId w, const int64_t *lo, const int64_t *hi)
{
    const IrType *t = ir_vtype(g, w);
    IrType nt = *t;
    for (int a = 2; a < t->rank; a++)
        nt.dims[a] = t->dims[a] - lo[a - 2] - hi[a - 2];
    size_t es = ir_dtype_size(t->dtype);
    int64_t numel = ir_type_numel(&nt);
    uint8_t *d = ir_scratch(g, es * (size_t)(numel + 1));
    const uint8_t *src = ir_val(g, w)->data;
    for (int64_t i = 0; i < numel; i++) {
        int64_t rem = i, at = 0, stride = 1;
        for (int a = t->rank - 1; a >= 0; a--) {   /* i's coordinates, moved by lo */
            int64_t c = rem % nt.dims[a] + (a >= 2 ? lo[a - 2] : 0);
            rem /= nt.dims[a];
            at += c * stride;
            stride *= t->dims[a];
        }
        memcpy(d + (size_t)i * es, src + (size_t)at * es, es);
    }
    char name[256];
    snprintf(name, sizeof name, "%s_trimmed", ir_val(g, w)->name);
    return ir_add_const(g, name, &nt, d);
}

/* Re-adds CONV n (old list) over pad p without its dead taps (lo, hi per spatial
 * axis): a PAD of the pads left, when any is, then the CONV with the sliced weights. */
static void emit_trimmed(IrGraph *g, const IrNode *n, const IrNode *p, const int64_t *lo,
                         const int64_t *hi)
{
    const int64_t *pads, *dil;
    int r = ir_vtype(g, p->in[0])->rank, nd = ir_attr_get_ints(n, "dilations", &dil);
    ir_attr_get_ints(p, "pads", &pads);
    int64_t np[2 * IR_MAX_RANK];
    bool any = false;
    for (int a = 0; a < 2 * r; a++) {
        int sp = a % r - 2;
        np[a] = pads[a] - (sp < 0 ? 0 : (a < r ? lo[sp] : hi[sp]) * (sp < nd ? dil[sp] : 1));
        any |= np[a] != 0;
    }
    ValId x = p->in[0];
    if (any) {
        int64_t zi[IR_MAX_RANK] = {0};
        IrAttr a[3] = {ir_attr_ints_ref("pads", np, 2 * r), ir_attr_ints_ref("interior", zi, r),
                       ir_attr_float("value", 0.0)};
        NodeId pn = ir_add_node(g, IR_OP_PAD, &x, 1, a, 3, &p->origin);
        x = ir_node(g, pn)->out[0];
    }
    IrNode c = *n;
    c.in = ir_alloc(g, sizeof(ValId) * (size_t)n->nin);
    memcpy(c.in, n->in, sizeof(ValId) * (size_t)n->nin);
    c.in[0] = x;
    c.in[1] = sliced_weights(g, n->in[1], lo, hi);
    ir_readd_node(g, &c);
}

/* The taps of CONV n (old list) over zero pad p to drop, per spatial axis; false when
 * none. */
static bool conv_trim(IrGraph *g, const IrNode *n, const IrNode *p, int64_t *lo, int64_t *hi)
{
    const IrType *x = ir_vtype(g, p->in[0]), *w = ir_vtype(g, n->in[1]),
                 *o = ir_vtype(g, n->out[0]);
    const int64_t *pads, *st, *dil;
    int nsp = x->rank - 2;
    if (nsp < 1 || ir_attr_get_ints(p, "pads", &pads) != 2 * x->rank ||
        ir_attr_get_ints(n, "strides", &st) != nsp ||
        ir_attr_get_ints(n, "dilations", &dil) != nsp || w->rank != x->rank)
        return false;
    bool any = false;
    for (int j = 0; j < nsp; j++)
        any |= axis_trim(x->dims[2 + j], o->dims[2 + j], w->dims[2 + j], st[j], dil[j],
                         pads[2 + j], pads[2 + j + x->rank], &lo[j], &hi[j]);
    return any;
}

bool pass_convtrim(IrGraph *g, const PassOptions *opt)
{
    (void)opt;
    uint32_t nn = g->nnodes;
    NodeId *pad = ir_scratch(g, sizeof *pad * (nn + 1));  /* per CONV trimmed: its PAD */
    int64_t (*cut)[2][IR_MAX_RANK] = ir_scratch(g, sizeof *cut * (nn + 1));
    bool any = false;
    for (uint32_t i = 0; i < nn; i++) {
        const IrNode *n = &g->nodes[i];
        pad[i] = IR_NONE;
        if (n->dead || n->op != IR_OP_CONV || !ir_is_const(g, n->in[1]) ||
            !is_float(ir_vtype(g, n->in[0])->dtype))
            continue;
        const IrNode *p = zero_pad(g, g->nodes, n);
        if (p && conv_trim(g, n, p, cut[i][0], cut[i][1]))
            pad[i] = ir_val(g, n->in[0])->def, any = true;
    }
    if (!any)
        return !ir_failed(g);
    uint32_t n = 0;
    IrNode *old = ir_rewrite_begin(g, &n);
    for (uint32_t i = 0; i < n; i++) {
        if (old[i].dead)
            continue;
        if (pad[i] != IR_NONE)
            emit_trimmed(g, &old[i], &old[pad[i]], cut[i][0], cut[i][1]);
        else
            ir_readd_node(g, &old[i]);
    }
    return !ir_failed(g);
}
