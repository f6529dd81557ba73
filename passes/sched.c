/* sched.c: helpers shared by the back-end passes and the code generator: the IrSched
 * state, strided views (composition of view ops), work grids and the
 * assignment of work items to cores.
 */
#include <inttypes.h>
#include <string.h>

#include "isa.h"
#include "kernel.h"

/* Allocate (or re-allocate when the graph grew) the back-end state of g. */
IrSched *pass_sched(IrGraph *g)
{
    IrSched *s = g->sched;
    if (s && s->nvals == g->nvals && s->nnodes == g->nnodes)
        return s;
    s = ir_alloc(g, sizeof *s);
    s->nvals = g->nvals;
    s->nnodes = g->nnodes;
    s->vnode = ir_alloc(g, g->nnodes + 1);
    s->virt = ir_alloc(g, g->nvals + 1);
    s->claim = ir_alloc(g, (g->nvals + 1) * sizeof *s->claim);
    s->view = ir_alloc(g, (g->nvals + 1) * sizeof *s->view);
    s->seg = ir_alloc(g, (g->nvals + 1) * sizeof *s->seg);
    for (ValId v = 0; v < g->nvals; v++) {
        s->claim[v] = -1;
        s->view[v].root = v;
        s->seg[v] = UINT32_MAX;
    }
    g->sched = s;
    return s;
}

/* Element count of t (product of dims; rank 0 = 1). */
int64_t pass_numel(const IrType *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

/* Row-major element strides of t. */
void pass_dense_strides(const IrType *t, int64_t *stride)
{
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        stride[i] = s;
        s *= t->dims[i] > 0 ? t->dims[i] : 1;
    }
}

/* Bytes the storage of root value v takes on the device in its layout. */
uint64_t pass_storage_bytes(IrGraph *g, ValId v, const SpyTarget *t)
{
    const IrValue *val = ir_val(g, v);
    uint64_t es = (uint64_t)pass_dev_esize(val->type.dtype);
    int64_t n = pass_numel(&val->type);
    if (val->layout == IR_LAYOUT_STICKED && val->type.rank >= 1 && n > 0) {
        int r = val->type.rank;
        uint64_t se = t->stick_bytes / es, last = (uint64_t)val->type.dims[r - 1];
        uint64_t padded = (last + se - 1) / se * se;
        return (uint64_t)(n / val->type.dims[r - 1]) * padded * es;
    }
    return (uint64_t)n * es;
}

/* Reshape of a strided view (the rule of torch's view()): new strides exist when every
 * group of merged/split dims is contiguous in the old view. */
static bool reshape_strides(const IrType *it, const int64_t *ost, const IrType *ot,
                            int64_t *nst)
{
    if (pass_numel(it) == 0) {
        pass_dense_strides(ot, nst);
        return true;
    }
    if (it->rank == 0) {
        for (int i = 0; i < ot->rank; i++)
            nst[i] = 0;
        return true;
    }
    int vd = ot->rank - 1;
    int64_t base = ost[it->rank - 1], tn = 1, vn = 1;
    for (int td = it->rank - 1; td >= 0; td--) {
        tn *= it->dims[td];
        if (td == 0 || (it->dims[td - 1] != 1 && ost[td - 1] != tn * base)) {
            while (vd >= 0 && (vn < tn || ot->dims[vd] == 1)) {
                nst[vd] = vn * base;
                vn *= ot->dims[vd];
                vd--;
            }
            if (vn != tn)
                return false;
            if (td > 0) {
                base = ost[td - 1];
                tn = 1;
                vn = 1;
            }
        }
    }
    return vd == -1;
}

/* First index and step when the indices of GATHER node n are a constant arithmetic
 * progression inside the table (negative ones wrapped): then the gather is a strided
 * view of its data. False otherwise. */
bool pass_gather_view(IrGraph *g, const IrNode *n, int64_t *first, int64_t *step)
{
    if (n->op != IR_OP_GATHER || !ir_is_const(g, n->in[1]))
        return false;
    const IrValue *iv = ir_val(g, n->in[1]);
    int64_t bound = ir_vtype(g, n->in[0])->dims[ir_attr_get_int(n, "axis", 0)];
    int64_t cnt = pass_numel(&iv->type), prev = 0;
    if (cnt == 0)
        return false;
    for (int64_t i = 0; i < cnt; i++) {
        int64_t x = iv->type.dtype == IR_DT_I64 ? ((const int64_t *)iv->data)[i]
                                                : ((const int32_t *)iv->data)[i];
        x = x < 0 ? x + bound : x;
        if (x < 0 || x >= bound)
            return false;
        if (i == 0)
            *first = x;
        else if (i == 1)
            *step = x - prev;
        else if (x - prev != *step)
            return false;
        prev = x;
    }
    if (cnt == 1)
        *step = 0;
    return true;
}

/* Compose view node n onto the view of its input. */
bool pass_view_apply(IrGraph *g, const IrNode *n, const IrView *in, IrView *out)
{
    const IrType *it = ir_vtype(g, n->in[0]), *ot = ir_vtype(g, n->out[0]);
    const int64_t *a = NULL, *b = NULL;
    IrView r = {.root = in->root, .off = in->off};
    switch (n->op) {
    case IR_OP_TRANSPOSE:
        IR_ASSERT(ir_attr_get_ints(n, "perm", &a) == ot->rank);
        for (int i = 0; i < ot->rank; i++)
            r.stride[i] = in->stride[a[i]];
        break;
    case IR_OP_SLICE:
        IR_ASSERT(ir_attr_get_ints(n, "starts", &a) == it->rank);
        IR_ASSERT(ir_attr_get_ints(n, "steps", &b) == it->rank);
        for (int i = 0; i < it->rank; i++) {
            if (pass_numel(ot) > 0)
                r.off += a[i] * in->stride[i];
            r.stride[i] = in->stride[i] * b[i];
        }
        break;
    case IR_OP_EXPAND:
        for (int i = 0; i < ot->rank; i++) {
            int ia = i - (ot->rank - it->rank);
            r.stride[i] = ia < 0 || it->dims[ia] != ot->dims[i] ? 0 : in->stride[ia];
        }
        break;
    case IR_OP_RESHAPE:
        if (!reshape_strides(it, in->stride, ot, r.stride))
            return false;
        break;
    case IR_OP_BITCAST:                        /* same shape, same device element size */
        memcpy(r.stride, in->stride, sizeof r.stride);
        break;
    case IR_OP_GATHER: {                       /* constant arithmetic indices */
        int64_t first, step, ax = ir_attr_get_int(n, "axis", 0);
        const IrType *xt = ir_vtype(g, n->in[1]);
        if (!pass_gather_view(g, n, &first, &step))
            return false;
        r.off += first * in->stride[ax];
        int o = 0;
        for (int i = 0; i < ax; i++)
            r.stride[o++] = in->stride[i];
        for (int j = 0; j < xt->rank; j++) {
            int64_t inner = 1;
            for (int q = j + 1; q < xt->rank; q++)
                inner *= xt->dims[q];
            r.stride[o++] = step * inner * in->stride[ax];
        }
        for (int i = (int)ax + 1; i < it->rank; i++)
            r.stride[o++] = in->stride[i];
        break;
    }
    default:
        IR_ASSERT(!"not a view op");
    }
    *out = r;
    return true;
}

/* Views of the inputs of in-place CONCAT nodes (IrSched.vnode set): each input is
 * the slice of the concat's output at its offset along the axis. Nodes are visited
 * last to first so that a concat feeding another one sees its final view. */
void pass_concat_views(IrGraph *g)
{
    IrSched *s = g->sched;
    for (NodeId n = g->nnodes; n-- > 0;) {
        const IrNode *nd = &g->nodes[n];
        if (nd->dead || !s->vnode[n] || nd->op != IR_OP_CONCAT)
            continue;
        int ax = (int)ir_attr_get_int(nd, "axis", 0);
        const IrView *o = &s->view[nd->out[0]];
        int64_t pos = 0;
        for (int i = 0; i < nd->nin; i++) {
            ValId v = nd->in[i];
            s->view[v] = *o;
            s->view[v].off += pos * o->stride[ax];
            s->virt[v] = 1;
            pos += ir_vtype(g, v)->dims[ax];
        }
    }
}

/* True if view vw of v covers its whole row-major root, densely, from offset 0. */
bool pass_view_dense(IrGraph *g, ValId v, const IrView *vw)
{
    const IrType *t = ir_vtype(g, v);
    const IrValue *root = ir_val(g, vw->root);
    int64_t st[IR_MAX_RANK];
    if (vw->off != 0 || root->layout != IR_LAYOUT_ROWMAJOR ||
        pass_numel(t) != pass_numel(&root->type))
        return false;
    pass_dense_strides(t, st);
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] > 1 && vw->stride[i] != st[i])
            return false;
    return true;
}

/* Number of work items of a grid (0 when any extent is 0). */
int64_t pass_grid_items(const IrGrid *gr)
{
    int64_t n = 1;
    for (int d = 0; d < gr->rank; d++) {
        IR_ASSERT(gr->chunk[d] >= 1);
        n *= (gr->ext[d] + gr->chunk[d] - 1) / gr->chunk[d];
    }
    return n;
}

/* Decode item number `item` into its box (start, len per dim). */
void pass_grid_item(const IrGrid *gr, uint64_t item, int64_t *start, int64_t *len)
{
    for (int d = gr->rank - 1; d >= 0; d--) {
        int64_t nc = (gr->ext[d] + gr->chunk[d] - 1) / gr->chunk[d];
        int64_t c = (int64_t)(item % (uint64_t)nc);
        item /= (uint64_t)nc;
        start[d] = c * gr->chunk[d];
        len[d] = gr->ext[d] - start[d] < gr->chunk[d] ? gr->ext[d] - start[d] : gr->chunk[d];
    }
}

/* Last dim whose chunk is smaller than its extent; -1 if every chunk is whole. */
int pass_grid_split(const IrGrid *gr)
{
    for (int d = gr->rank - 1; d >= 0; d--)
        if (gr->chunk[d] < gr->ext[d])
            return d;
    return -1;
}

/* Give each core a contiguous, balanced range of the kernel's work items (cores
 * 0, 1, ... first when there are fewer items than cores). */
void pass_assign_cores(IrGraph *g, IrKernel *k, uint32_t cores)
{
    k->nitems = (uint64_t)pass_grid_items(&k->grid);
    if (!k->core_first || k->ncores != cores)
        k->core_first = ir_alloc(g, (cores + 1) * sizeof *k->core_first);
    k->ncores = cores;
    if (k->kind == IR_KK_MOVE && ir_node(g, k->anchor)->op == IR_OP_SCATTER) {
        for (uint32_t c = 0; c <= cores; c++)   /* one core: it zero-fills, then scatters */
            k->core_first[c] = c ? k->nitems : 0;
        return;
    }
    uint64_t q = k->nitems / cores, r = k->nitems % cores;
    for (uint32_t c = 0; c <= cores; c++)               /* the first r cores get q + 1 */
        k->core_first[c] = c * q + (c < r ? c : r);
}

/* Name of a kernel kind for reports. */
const char *pass_kernel_kind_name(IrKernelKind k)
{
    static const char *const names[] = {"elem", "contract", "reduce", "move", "copy"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

/* "[a/b, c/d]" extents over chunks of a grid. */
static void print_grid(FILE *f, const IrGrid *gr)
{
    fputc('[', f);
    for (int d = 0; d < gr->rank; d++)
        fprintf(f, "%s%" PRId64 "/%" PRId64, d ? "," : "", gr->ext[d], gr->chunk[d]);
    fputc(']', f);
}

/* One line per tile-program value: where it comes from, class, LX buffer. */
static void print_tp(IrGraph *g, FILE *f, const char *what, const IrTileProg *tp)
{
    static const char *const src[] = {"load", "node", "seed", "const"};
    static const char *const cls[] = {"scalar", "row", "col", "full"};
    if (tp->nd == 0 && tp->nvals == 0)
        return;
    fprintf(f, "    %s: %u steps, rows over", what, tp->nsteps);
    for (int i = 0; i < tp->nrow; i++)
        fprintf(f, " d%d", tp->order[i]);
    fprintf(f, ", cols over");
    for (int i = tp->nrow; i < tp->nd; i++)
        fprintf(f, " d%d", tp->order[i]);
    fprintf(f, ", lx [0x%x, 0x%x)%s\n", tp->lx_lo, tp->lx_hi, tp->store ? ", stores" : "");
    for (uint32_t i = 0; i < tp->nvals; i++) {
        const IrTileVal *tv = &tp->vals[i];
        fprintf(f, "      %-5s %-6s %-24s", src[tv->src], cls[tv->cls], ir_val(g, tv->v)->name);
        if (tv->lx != UINT32_MAX)
            fprintf(f, " lx[0x%05x] %u bytes", tv->lx, tv->bytes);
        else
            fprintf(f, " imm 0x%08x", tv->imm);
        fputc('\n', f);
    }
}

/* Print every kernel's plan: kind, members, work items per core, tiles and LX. */
void pass_print_kernels(IrGraph *g, FILE *f)
{
    IrSched *s = g->sched;
    fprintf(f, "# %u kernels\n", g->nkernels);
    for (uint32_t i = 0; i < g->nkernels; i++) {
        const IrKernel *k = &g->kernels[i];
        fprintf(f, "kernel %u %s (%s): out %s", i, k->name, pass_kernel_kind_name(k->kind),
                ir_val(g, k->out)->name);
        fprintf(f, ", flops %" PRIu64 ", min dram %" PRIu64 " bytes\n", k->flops,
                k->min_dram_bytes);
        if (!k->core_first)
            continue;
        fprintf(f, "    grid ");
        print_grid(f, &k->grid);
        fprintf(f, " = %" PRIu64 " items", k->nitems);
        uint64_t lo = UINT64_MAX, hi = 0;
        uint32_t busy = 0;
        for (uint32_t c = 0; c < k->ncores; c++) {
            uint64_t n = k->core_first[c + 1] - k->core_first[c];
            lo = n < lo ? n : lo;
            hi = n > hi ? n : hi;
            busy += n > 0;
        }
        fprintf(f, ", %u busy cores, %" PRIu64 "..%" PRIu64 " items each", busy,
                lo == UINT64_MAX ? 0 : lo, hi);
        if (k->inner.rank) {
            fprintf(f, ", inner ");
            print_grid(f, &k->inner);
        }
        fprintf(f, ", lx %u bytes\n", k->lx_bytes);
        for (int b = 0; b < IR_KBUF_MAX; b++)
            if (k->buf_bytes[b])
                fprintf(f, "    buf%d lx[0x%05x] %u bytes\n", b, k->buf[b], k->buf_bytes[b]);
        print_tp(g, f, k->kind == IR_KK_REDUCE ? "prologue" : "body", &k->tp[0]);
        print_tp(g, f, "epilogue", &k->tp[1]);
    }
    if (s && s->arena_bytes + s->seg0_bytes)
        fprintf(f, "# dram: constants %" PRIu64 " bytes, arena %" PRIu64 " bytes\n",
                s->seg0_bytes, s->arena_bytes);
}

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

/* Patch form of a CONV kernel (kernel.h IrGeom.patch): a fused PAD (in k->pro) and the
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
        const IrAttr *va = ir_attr_find(pad, "value");
        geo->pad_value = !va ? 0.0 : va->kind == IR_ATTR_INT ? (double)va->i : va->f;
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
    geo->patch = geo->nsp <= 2 && (taps > 1 || pad);
}

/* Fill geo for kernel k. */
void pass_geom(IrGraph *g, const IrKernel *k, IrGeom *geo)
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
