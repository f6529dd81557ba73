/* plan_geom.c: the iteration-space geometry of a kernel (plan.h IrGeom), derived
 * from its anchor node: grid and inner extents, kept and reduced dims, convolution
 * and pooling windows, and the patch form of small convolutions.
 */
#include <string.h>

#include "plan.h"
#include "../devtype.h"
#include "isa.h"

/* Copy an ints attribute of cnt entries into out, defaulting to dflt. */
static void ints_attr(const IrNode *n, const char *name, int cnt, int64_t dflt, int64_t *out)
{
    const int64_t *v = NULL;
    int got = ir_attr_get_ints(n, name, &v);
    for (int i = 0; i < cnt; i++)
        out[i] = got == cnt ? v[i] : dflt;
}

/* Geometry of a REDUCE-kind anchor: kept (grid) and reduced (inner) dims. */
static void geom_reduce(IrGraph *g, const IrNode *a, IrGeom *geo)
{
    const IrType *x = ir_vtype(g, a->in[0]), *o = ir_vtype(g, a->out[0]);
    bool red[IR_MAX_RANK] = {false};
    if (a->op == IR_OP_WINDOW) {
        const int64_t *kern;
        geo->nsp = ir_attr_get_ints(a, "kernel", &kern);
        int lead = x->rank - geo->nsp;
        for (int i = 0; i < geo->nsp; i++)
            geo->taps[i] = kern[i];
        ints_attr(a, "strides", geo->nsp, 1, geo->wstride);
        ints_attr(a, "dilations", geo->nsp, 1, geo->wdil);
        for (int d = 0; d < x->rank; d++) {
            geo->kept[geo->ngrid] = d < lead ? d : -1;
            geo->gext[geo->ngrid++] = o->dims[d];
        }
        for (int i = 0; i < geo->nsp; i++) {
            geo->red[geo->ninner] = lead + i;
            geo->iext[geo->ninner++] = geo->taps[i];
        }
        return;
    }
    if (a->op == IR_OP_REDUCE) {
        const int64_t *axes;
        int nax = ir_attr_get_ints(a, "axes", &axes);
        for (int i = 0; i < (nax < 0 ? x->rank : nax); i++)
            red[nax < 0 ? i : axes[i]] = true;
    } else {
        red[ir_attr_get_int(a, "axis", 0)] = true;
    }
    for (int d = 0; d < x->rank; d++) {
        if (red[d]) {
            geo->red[geo->ninner] = d;
            geo->iext[geo->ninner++] = x->dims[d];
        } else {
            geo->kept[geo->ngrid] = d;
            geo->gext[geo->ngrid++] = x->dims[d];
        }
    }
}

/* Geometry of a CONV anchor: grid [N, G, Mg, O...], inner [Cg], taps. */
static void geom_conv(IrGraph *g, const IrNode *a, IrGeom *geo)
{
    const IrType *w = ir_vtype(g, a->in[1]), *o = ir_vtype(g, a->out[0]);
    geo->nsp = o->rank - 2;
    geo->groups = ir_attr_get_int(a, "group", 1);
    geo->mg = w->dims[0] / geo->groups;
    geo->cg = w->dims[1];
    ints_attr(a, "strides", geo->nsp, 1, geo->wstride);
    ints_attr(a, "dilations", geo->nsp, 1, geo->wdil);
    geo->gext[0] = o->dims[0];
    geo->gext[1] = geo->groups;
    geo->gext[2] = geo->mg;
    for (int i = 0; i < geo->nsp; i++) {
        geo->gext[3 + i] = o->dims[2 + i];
        geo->taps[i] = w->dims[2 + i];
    }
    geo->ngrid = 3 + geo->nsp;
    geo->ninner = 1;
    geo->iext[0] = geo->cg;
}

/* Patch form of a CONV kernel (plan.h IrGeom.patch): a fused PAD (in k->pro) and the
 * canonical 2-d extents, strides, dilations and pads. */
static void geom_patch(IrGraph *g, const IrKernel *k, IrGeom *geo)
{
    const IrNode *a = ir_node(g, k->anchor);
    const IrNode *pad = k->npro == 1 ? ir_node(g, k->pro[0]) : NULL;
    geo->x = pad ? pad->in[0] : a->in[0];
    const IrType *x = ir_vtype(g, geo->x), *o = ir_vtype(g, a->out[0]);
    const int64_t *pads = NULL;
    if (pad) {
        IR_ASSERT(ir_attr_get_ints(pad, "pads", &pads) == 2 * x->rank);
        geo->pad_value = ir_attr_get_float(pad, "value", 0.0);
    }
    int64_t taps = 1;
    for (int i = 0; i < 2; i++) {
        bool real = geo->nsp == 2 || i == 0;    /* 1-d: canonical dim 1 is a unit */
        int xd = 2 + (geo->nsp == 2 ? i : 0);
        geo->in_ext[i] = real ? x->dims[xd] : 1;
        geo->pad_lo[i] = real && pads ? pads[xd] : 0;
        geo->pad_hi[i] = real && pads ? pads[xd + x->rank] : 0;
        geo->k2[i] = real ? geo->taps[i] : 1;
        geo->s2[i] = real ? geo->wstride[i] : 1;
        geo->d2[i] = real ? geo->wdil[i] : 1;
        geo->out2[i] = real ? o->dims[xd] : 1;
        taps *= geo->k2[i];
    }
    geo->patch = geo->nsp <= 2 && (taps > 1 || pad || geo->s2[0] > 1 || geo->s2[1] > 1);
    int dt = pass_dev_dtype(x->dtype);
    geo->dw = geo->patch && geo->groups > 1 && geo->mg == 1 && geo->cg == 1 &&
              (dt == ISA_DT_F32 || dt == ISA_DT_DLF16) &&
              pass_dev_dtype(ir_vtype(g, a->in[1])->dtype) == dt;
}

const IrNode *plan_window_pad(IrGraph *g, const IrKernel *k)
{
    if (k->kind != IR_KK_REDUCE || k->npro != 1 || k->anchor == IR_NONE ||
        ir_node(g, k->anchor)->op != IR_OP_WINDOW)
        return NULL;
    const IrNode *p = ir_node(g, k->pro[0]);
    return p->op == IR_OP_PAD ? p : NULL;
}

/* Fill geo for kernel k. */
void plan_geom(IrGraph *g, const IrKernel *k, IrGeom *geo)
{
    memset(geo, 0, sizeof *geo);
    const IrNode *a = k->anchor != IR_NONE ? ir_node(g, k->anchor) : NULL;
    const IrType *t = ir_vtype(g, k->out);
    if (k->kind == IR_KK_REDUCE) {
        geom_reduce(g, a, geo);
        return;
    }
    if (k->kind == IR_KK_CONTRACT && a->op == IR_OP_CONV) {
        geom_conv(g, a, geo);
        geom_patch(g, k, geo);
        return;
    }
    if (k->kind == IR_KK_CONTRACT) {           /* matmul: C dims, inner K */
        const IrType *at = ir_vtype(g, a->in[0]);
        t = ir_vtype(g, a->out[0]);
        geo->ninner = 1;
        geo->iext[0] = at->dims[at->rank - 1];
    } else if (a && (a->op == IR_OP_RESHAPE ||
                     (a->op == IR_OP_SCATTER && ir_vtype(g, a->in[0])->dims[0] > 0))) {
        t = ir_vtype(g, a->in[0]);             /* materialised reshape, scatter: input dims
                                                  (a scatter of nothing: output dims) */
    } else if (k->kind == IR_KK_ELEM) {
        t = ir_vtype(g, k->ref);
    }
    geo->ngrid = t->rank;
    for (int d = 0; d < t->rank; d++)
        geo->gext[d] = t->dims[d];
}

int plan_access_space(IrGraph *g, const IrKernel *k, int64_t *ext)
{
    int n = 0;
    for (int d = 0; d < k->grid.rank; d++)
        ext[n++] = k->grid.ext[d];
    for (int d = 0; d < k->inner.rank && n < IR_ITER_MAX; d++)
        ext[n++] = k->inner.ext[d];
    if (k->kind != IR_KK_CONTRACT || ir_node(g, k->anchor)->op != IR_OP_CONV)
        return n;
    IrGeom geo;
    plan_geom(g, k, &geo);
    for (int i = 0; i < geo.nsp && n < IR_ITER_MAX; i++)
        ext[n++] = geo.taps[i];
    return n;
}

int64_t plan_patch_band(const IrGeom *geo, int64_t on)
{
    return (on - 1) * geo->s2[0] + 1;
}

/* Banded when a band is shorter than the dilation: DeepLabV3's pyramid (dilation 12 to
 * 36 over a 64-row map split into items of a few rows) would otherwise load 73 rows a
 * channel for 3 that its taps read. */
bool plan_patch_banded(const IrGeom *geo, int64_t on)
{
    return geo->k2[0] > 1 && plan_patch_band(geo, on) < geo->d2[0];
}

int64_t plan_patch_span(const IrGeom *geo, int64_t on)
{
    return plan_patch_band(geo, on) + (geo->k2[0] - 1) * geo->d2[0];
}

int64_t plan_patch_rows(const IrGeom *geo, int64_t on)
{
    return plan_patch_banded(geo, on) ? geo->k2[0] * plan_patch_band(geo, on)
                                      : plan_patch_span(geo, on);
}

/* Depthwise form: patch row and accumulator pitch of an item (plan.h). */
int64_t plan_dw_patch(const IrGeom *geo, int64_t on, int64_t *pitch, int64_t *ww)
{
    int64_t rin = plan_patch_span(geo, on);
    int64_t wp = geo->in_ext[1] + geo->pad_lo[1] + geo->pad_hi[1];
    *ww = (wp + geo->s2[1] - 1) / geo->s2[1] * geo->s2[1];
    *pitch = *ww / geo->s2[1];
    return ((rin + geo->s2[0] - 1) / geo->s2[0] + (geo->s2[0] > 1)) * geo->s2[0] * *ww;
}

bool plan_dw_form(const IrKernel *k, const IrGeom *geo)
{
    return geo->dw && k->grid.rank > 1 && k->grid.chunk[1] >= 2;
}

unsigned plan_half_b(IrGraph *g, const IrKernel *k)
{
    const IrNode *n = ir_node(g, k->anchor);
    if (n->op != IR_OP_MATMUL)
        return 0;
    IrDType a = ir_vtype(g, n->in[0])->dtype, b = ir_vtype(g, n->in[1])->dtype;
    return a == IR_DT_F32 && (b == IR_DT_F16 || b == IR_DT_BF16) ? 2 : 0;
}

/* Row pitch (elements) of a convolution's weight tile of kk columns. */
int64_t plan_conv_lda(int64_t kk, unsigned es)
{
    return kk > 0 && kk * (int64_t)es % 4096 == 0 ? kk + 64 / (int64_t)es : kk;
}
